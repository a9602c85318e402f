"""Reading a form case's recorded toolchain verdict and auditing the case against it: shared by
tests/test_audit_forms.py (verdicts.json), tests/test_audit_rknn_chips.py and
scripts/probe_rknn_chips.py (chip_verdicts.json, the same structure)."""

from __future__ import annotations

from pathlib import Path

from edgedeploy.audit.confirm import NodeVerdict, ToolchainVerdict, compare
from edgedeploy.audit.engine import audit_model
from edgedeploy.audit.rules import Placement
from edgedeploy.model import load_model
from edgedeploy.pipeline.audit import rules_for
from edgedeploy.targets import find_chip
from tests.helpers import save

# The one-letter placement codes the verdict files use.
CODES = {"A": Placement.ACCELERATOR, "F": Placement.FLOAT, "C": Placement.FALLBACK, "U": Placement.UNSUPPORTED}


def audit_case(case, chip: str, folder: Path):
    """The audit of the form `case` on `chip`, at the case's precision (else the chip's first)."""
    loaded = load_model(save(case.build(), folder / f"{case.name}.onnx"), require_static=True)
    target, found = find_chip(chip)
    precision = case.precision or found.precisions[0]
    return audit_model(loaded, rules_for(target, found.id, precision), precision)


def recorded_verdict(entry: dict) -> ToolchainVerdict:
    """One chip's entry of a case in a verdict file, as the audit's comparison reads a verdict."""
    observes = entry.get("observes")
    return ToolchainVerdict(
        toolchain=entry["toolchain"],
        version="",
        nodes={node: NodeVerdict(CODES[code]) for node, code in entry["nodes"].items()},
        failed=entry.get("failed"),
        observes=None if observes is None else tuple(Placement(p) for p in observes),
    )


def certain_disagreements(result, verdict: ToolchainVerdict) -> tuple[list[dict], dict, set[str]]:
    """The nodes the audit places otherwise than `verdict`, leaving out those it marks uncertain
    (what --confirm settles, counted apart as the pool's score does); with the whole comparison
    and the uncertain nodes."""
    found = compare(result, verdict)
    uncertain = {n.node for n in result.nodes if n.uncertain}
    return [d for d in found["disagreements"] if d["node"] not in uncertain], found, uncertain
