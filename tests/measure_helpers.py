"""Shared by the measure and report tests: generic onnx-cpu artifacts of the sample, made once.

The artifacts are real (the sample model pinned, and an int8 QDQ model from ONNX Runtime's own
quantiser); measuring them runs the real generated runner in real processes. Session settings
are short (0.2 s per session) to keep the suite fast; the protocol is the same.
"""

from __future__ import annotations

import json
from pathlib import Path

FAST_SESSION_ARGS = ["--min-duration", "0.2", "--min-iterations", "20", "--warmup", "3", "--eval-count", "100"]


def fast_settings(**overrides):
    from edgedeploy.devices.runners import SessionSettings

    values = dict(sessions=3, warmup=3, min_iterations=20, min_duration_s=0.2, timeout_s=120)
    values.update(overrides)
    return SessionSettings(**values)


def make_artifact(out: Path, variant: str = "int8-qdq") -> Path:
    from edgedeploy.devices.runners import make_onnx_cpu_artifact
    from edgedeploy.sample import sample_model_path

    return make_onnx_cpu_artifact(sample_model_path(), out, variant)


def write_inventory(path: Path, devices: dict) -> Path:
    path.write_text(json.dumps({"devices": devices}))
    return path


def test_rule_set():
    """A rule set MADE FOR THE TESTS (not any real chip's): Conv/Relu/MaxPool/Gemm on the
    "accelerator", everything else falls back; it only gives the report something to draw."""
    from edgedeploy.audit.rules import OpSupport, RuleSet

    return RuleSet(
        target="test",
        chip="test-chip",
        toolchain_version="test rules 0",
        source="tests/measure_helpers.py (made for the tests)",
        accelerator_ops={op: OpSupport(("int8",)) for op in ("Conv", "Relu", "MaxPool", "Gemm")},
        rules=[],
    )


def add_test_audit(artifact: Path) -> dict:
    from edgedeploy.audit.engine import audit_model
    from edgedeploy.model import load_model
    from edgedeploy.report.artifact import update_report_section

    model = load_model(artifact / "model.onnx", {}, require_static=True)
    audit = audit_model(model, test_rule_set(), "int8").to_dict()
    update_report_section(artifact, ("audit",), audit)
    return audit
