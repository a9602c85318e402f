"""The `fix` engine's decisions, with small rule sets written here as data (the real vendor
tables are exercised by the CLI tests once their targets have rules)."""

from __future__ import annotations

import numpy as np
import pytest

from edgedeploy.audit.rules import OpSupport, RuleSet
from edgedeploy.fix.engine import fix_model
from edgedeploy.model.intake import from_proto
from tests.test_fix_passes import erf_gelu_model


def rules(*ops: str) -> RuleSet:
    return RuleSet("test", "chip", "1", "test table", {op: OpSupport(("int8",)) for op in ops}, [])


@pytest.fixture
def gelu_model(tmp_path):
    return from_proto(erf_gelu_model(), tmp_path / "gelu.onnx")


def feeds():
    rng = np.random.default_rng(0)
    return [{"x": rng.standard_normal((8, 1, 28, 28)).astype(np.float32) * 3} for _ in range(2)]


def test_exact_gelu_rewrite_moves_erf_onto_the_accelerator(gelu_model):
    table = rules("Gelu", "Mul", "Add", "Div", "Tanh")
    result = fix_model(gelu_model, {"chip": table}, feeds(), "random")
    report = result.to_dict()
    assert [a["rewrite"] for a in report["applied"]] == ["erf_gelu_to_gelu"]
    assert report["chips"]["chip"]["before"]["fallback"] == 1  # the Erf
    assert report["chips"]["chip"]["after"]["fallback"] == 0
    assert report["fidelity"]["per_output"]["y"]["max_abs_error"] < 1e-5


def test_approximation_needs_allow_approx(gelu_model):
    # No Gelu operator anywhere on this chip (the CPU fallback knows Erf but not Gelu).
    table = rules("Mul", "Add", "Div", "Tanh")
    table.fallback_ops = frozenset({"Erf"})
    plain = fix_model(gelu_model, {"chip": table}, feeds(), "random").to_dict()
    assert plain["applied"] == []
    reasons = {a["rewrite"]: a["reason"] for a in plain["not_applied"]}
    assert "only with --allow-approx" in reasons["erf_gelu_to_tanh"]
    approx = fix_model(gelu_model, {"chip": table}, feeds(), "random", allow_approx=True).to_dict()
    assert [a["rewrite"] for a in approx["applied"]] == ["erf_gelu_to_tanh"]
    error = approx["fidelity"]["per_output"]["y"]["max_abs_error"]
    assert 0 < error < 1e-3 and approx["applied"][0]["exact"] is False


def test_rewrite_worse_on_another_chip_is_refused(gelu_model):
    # chip a runs Gelu but not Erf; chip b runs Erf but has no Gelu: the rewrite helps a, hurts b.
    a = rules("Gelu", "Mul", "Add", "Div")
    b = RuleSet("test", "b", "1", "t", {op: OpSupport() for op in ("Erf", "Mul", "Add", "Div")}, [])
    report = fix_model(gelu_model, {"a": a, "b": b}, feeds(), "random").to_dict()
    assert report["applied"] == []
    assert any(x["rewrite"] == "erf_gelu_to_gelu" and "worse on b" in x["reason"] for x in report["not_applied"])


def test_nothing_to_do_leaves_model_unchanged(gelu_model):
    table = rules("Erf", "Mul", "Add", "Div")
    result = fix_model(gelu_model, {"chip": table}, feeds(), "random")
    assert result.to_dict()["applied"] == []
    assert result.fixed is gelu_model
