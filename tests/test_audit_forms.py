"""The audit against the real toolchains on small models of the forms real exporters write (issue 27).

The models are built by tests/forms_models.py; what esp-ppq, rknn-toolkit2 and onnx2tf + Vela
did with each is recorded in tests/fixtures/forms/verdicts.json (scripts/probe_forms.py, run
where the toolchains are installed). Each pair must agree exactly: the same nodes off the
accelerator on both sides, every node the toolchain reports placed the same, and a model the
toolchain refuses predicted as failing to build.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from edgedeploy.audit.confirm import NodeVerdict, ToolchainVerdict, compare
from edgedeploy.audit.engine import audit_model
from edgedeploy.audit.rules import Placement
from edgedeploy.model import load_model
from edgedeploy.pipeline.audit import rules_for
from edgedeploy.targets import find_chip
from tests.forms_models import CASES
from tests.helpers import save

VERDICTS = json.loads((Path(__file__).parent / "fixtures" / "forms" / "verdicts.json").read_text())
CODES = {"A": Placement.ACCELERATOR, "F": Placement.FLOAT, "C": Placement.FALLBACK, "U": Placement.UNSUPPORTED}
BUILDERS = {case.name: case for case in CASES}
PAIRS = [(name, chip) for name, entry in VERDICTS["cases"].items() for chip in entry["chips"]]


def audit(tmp_path: Path, name: str, chip: str):
    loaded = load_model(save(BUILDERS[name].build(), tmp_path / f"{name}.onnx"), require_static=True)
    target, found = find_chip(chip)
    precision = found.precisions[0]
    return audit_model(loaded, rules_for(target, found.id, precision), precision)


def recorded(name: str, chip: str) -> ToolchainVerdict:
    entry = VERDICTS["cases"][name]["chips"][chip]
    observes = entry.get("observes")
    return ToolchainVerdict(
        toolchain=entry["toolchain"],
        version="",
        nodes={node: NodeVerdict(CODES[code]) for node, code in entry["nodes"].items()},
        failed=entry.get("failed"),
        observes=None if observes is None else tuple(Placement(p) for p in observes),
    )


def test_every_recorded_case_has_its_builder():
    assert PAIRS and all(name in BUILDERS for name, _ in PAIRS)


@pytest.mark.parametrize("name,chip", PAIRS)
def test_the_audit_places_each_form_as_the_toolchain_did(tmp_path, name, chip):
    result = audit(tmp_path, name, chip)
    verdict = recorded(name, chip)
    found = compare(result, verdict)
    assert found["disagreements"] == [], f"{name} on {chip}: {found['disagreements']}"
    if verdict.failed is None:
        # The same set of nodes off the accelerator, among those the toolchain reports.
        off = {n.node for n in result.nodes if n.placement is not Placement.ACCELERATOR and n.node in verdict.nodes}
        assert off == {n for n, v in verdict.nodes.items() if v.placement is not Placement.ACCELERATOR}
