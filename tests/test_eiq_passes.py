"""The eIQ lowering step (targets/eiq/rules/passes.py) and the rules it feeds, on small models
shaped like the corpus cases they were measured on (scripts/corpus/agreement.py has the real
models; these need no toolchain)."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper

from edgedeploy.audit.engine import audit_model
from edgedeploy.audit.rules import Placement
from edgedeploy.model import load_model
from edgedeploy.targets.eiq.rules import rule_set
from tests.helpers import const, make_model, save, tensor

P = Placement


def audit(model: onnx.ModelProto, tmp_path, chip="imx93"):
    result = audit_model(load_model(save(model, tmp_path / "m.onnx"), {}, require_static=True), rule_set(chip), "int8")
    return {n.node: n for n in result.nodes}


def channel_split(ir_version=8, extra_constant=None) -> onnx.ModelProto:
    """shufflenet's channel split as torch exports it: the Slice end is C // 2, computed from Shape."""
    nodes = [
        helper.make_node("Shape", ["x"], ["s"], name="shape"),
        helper.make_node("Gather", ["s", "one"], ["c"], name="gather", axis=0),
        helper.make_node("Div", ["c", "two"], ["half"], name="div"),
        helper.make_node("Unsqueeze", ["half", "zero1"], ["end"], name="unsqueeze"),
        helper.make_node("Slice", ["x", "zero1", "end", "one1"], ["y"], name="slice"),
    ]
    inits = [const("one", np.array(1, np.int64)), const("two", np.array(2, np.int64)), const("zero1", np.array([0], np.int64)), const("one1", np.array([1], np.int64))]
    if extra_constant is not None:
        nodes.insert(0, extra_constant)
    model = make_model(nodes, [tensor("x", [1, 8, 4, 4])], [tensor("y", 4)], inits)
    model.ir_version = ir_version
    return model


def test_onnxsim_computes_a_slice_end_from_the_static_shape(tmp_path):
    nodes = audit(channel_split(), tmp_path)
    assert nodes["slice"].placement is P.ACCELERATOR
    assert {nodes[n].placement for n in ("shape", "gather", "div", "unsqueeze")} == {P.ACCELERATOR}  # folded


def test_when_onnxsim_refuses_the_model_the_end_stays_computed(tmp_path):
    # IR version 11: onnxsim 0.4.36's checker stops; a Constant given by value_ints: its optimizer stops.
    assert audit(channel_split(ir_version=11), tmp_path)["slice"].placement is P.FALLBACK
    odd = helper.make_node("Constant", [], ["unused"], name="ints", value_ints=[1, 2])
    nodes = audit(channel_split(extra_constant=odd), tmp_path)
    assert nodes["slice"].placement is P.FALLBACK and "run time" in nodes["slice"].reason
