"""How often the RKNN rule table agrees with rknn-toolkit2's own verdict, on ONNX's node tests.

Used by scripts/rknn_node_agreement.py (the full sweep, figures into docs/) and by the tests (a
fixed sample of cases). Each node test's model is built by the real toolkit in int8 with the
test's own inputs as calibration data; every node's predicted placement is compared with the
layer table's, and a model the toolkit refuses agrees when the rules predicted an unsupported
node. Function-body tests (`*_expanded`) are counted apart: their graphs are rewritten by the
toolkit's pattern fusions, which single-operator rules cannot see.
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx

from edgedeploy.audit.confirm import compare
from edgedeploy.audit.engine import audit_model
from edgedeploy.errors import EdgedeployError
from edgedeploy.model import load_model
from edgedeploy.records import record_fields


RUNTIME_LIMIT_RULE = "rv1106_runtime_lacks_cpu_kernel"


@dataclass
class NodeTestCase:
    name: str
    model_path: Path
    dataset_path: Path | None

    @property
    def expanded(self) -> bool:
        return "_expanded" in self.name


def write_node_tests(folder: Path, names: list[str] | None = None) -> list[NodeTestCase]:
    """Write ONNX's backend node tests (model + first data set as .npy + dataset file) to `folder`."""
    from onnx.backend.test.case.node import collect_testcases

    folder.mkdir(parents=True, exist_ok=True)
    wanted = set(names) if names else None
    cases = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        collected = collect_testcases()
    for case in collected:
        if wanted is not None and case.name not in wanted:
            continue
        if not case.data_sets:
            continue
        d = folder / case.name
        d.mkdir(exist_ok=True)
        model_path = d / "model.onnx"
        onnx.save(case.model, str(model_path))
        inits = {t.name for t in case.model.graph.initializer}
        graph_inputs = [i.name for i in case.model.graph.input if i.name not in inits]
        inputs, _ = case.data_sets[0]
        paths = []
        for j, (name, value) in enumerate(zip(graph_inputs, inputs)):
            if not isinstance(value, np.ndarray) or value.dtype.kind in "OUS":
                paths = []
                break
            p = d / f"input{j}.npy"
            np.save(p, value)
            paths.append(str(p.resolve()))
        dataset = None
        if paths and len(paths) == len(graph_inputs):
            dataset = d / "dataset.txt"
            dataset.write_text(" ".join(paths) + "\n")
        cases.append(NodeTestCase(case.name, model_path, dataset))
    return cases


@dataclass
class Tally:
    compared: int = 0
    agree: int = 0
    models: int = 0
    models_failed: int = 0
    skipped: int = 0
    # Nodes the rules call unsupported because of a documented board-runtime limit the toolkit
    # does not check at build time (RV1106's CPU kernels): disagreements only a board can settle.
    runtime_limit: int = 0
    disagreements: list = field(default_factory=list)

    @property
    def rate(self) -> float | None:
        return self.agree / self.compared if self.compared else None

    def to_dict(self) -> dict:
        return {
            **record_fields(self, "compared", "agree", agreement="rate"),
            **record_fields(
                self,
                "models",
                models_the_toolkit_refused="models_failed",
                skipped_by_intake="skipped",
                disagreements_from_board_runtime_limits="runtime_limit",
            ),
            "agreement_without_board_runtime_limits": (self.agree / (self.compared - self.runtime_limit)) if self.compared > self.runtime_limit else None,
            "disagreements": self.disagreements,
        }


def measure(target, chip: str, cases: list[NodeTestCase], workdir: Path, precision: str = "int8", resume: bool = False) -> dict[str, Tally]:
    """Agreement on `cases` for one chip: {"single": Tally, "expanded": Tally}."""
    verdicts = target.toolchain_verdicts(
        [c.model_path for c in cases], chip, workdir, workdir / "toolkit.log", precision=precision, datasets=[c.dataset_path for c in cases], resume=resume
    )
    rules = target.rule_set(chip, precision=precision)
    tallies = {"single": Tally(), "expanded": Tally()}
    for case, verdict in zip(cases, verdicts):
        tally = tallies["expanded" if case.expanded else "single"]
        try:
            model = load_model(case.model_path, require_static=True)
        except EdgedeployError:
            tally.skipped += 1
            continue
        audit = audit_model(model, rules, precision)
        result = compare(audit, verdict)
        runtime_limited = {n.node for n in audit.nodes if any(v.rule == RUNTIME_LIMIT_RULE for v in n.violations)}
        tally.models += 1
        tally.models_failed += 1 if verdict.failed else 0
        tally.compared += result["compared"]
        tally.agree += result["agree"]
        for d in result["disagreements"]:
            tally.runtime_limit += 1 if d["node"] in runtime_limited else 0
            tally.disagreements.append({"case": case.name, **{k: d.get(k) for k in ("node", "op_type", "predicted", "toolchain", "detail")}})
    return tallies


def write_report(path: Path, results: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=2) + "\n")
