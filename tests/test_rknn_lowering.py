"""rknn-toolkit2's own graph passes and its crash and refusal forms, as the RKNN audit models them.

Each test builds the small graph form a pass or rule describes (as the corpus models have it)
and checks the placement the toolkit gave it (rknn-toolkit2 2.5.0, read from its layer table;
the real models are in tests/test_corpus_agreement.py).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from edgedeploy.audit.engine import audit_model
from edgedeploy.audit.rules import Placement
from edgedeploy.model import load_model
from edgedeploy.targets.rknn import rules as R
from tests.helpers import const, make_model, save, tensor

CHIPS = ("rk3588", "rk3576", "rk3568", "rk3566", "rk3562", "rv1106")


def place(tmp_path: Path, model: onnx.ModelProto, chip: str, precision: str = "int8") -> dict:
    loaded = load_model(save(model, tmp_path / f"{chip}.onnx"), require_static=True)
    result = audit_model(loaded, R.rule_set(chip, precision=precision), precision)
    return {n.node: n for n in result.nodes}


def ints(name: str, values) -> onnx.TensorProto:
    return const(name, np.array(values, np.int64))


# --- crash and refusal forms -----------------------------------------------------------------


def gru_model(y_used: bool) -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    hidden, features, steps = 8, 4, 5
    inits = [
        const("W", rng.standard_normal((1, 3 * hidden, features)).astype(np.float32)),
        const("R", rng.standard_normal((1, 3 * hidden, hidden)).astype(np.float32)),
        const("B", np.zeros((1, 6 * hidden), np.float32)),
        ints("axes", [0]),
    ]
    nodes = [
        helper.make_node("GRU", ["x", "W", "R", "B"], ["Y", "Y_h"], name="gru", hidden_size=hidden),
        helper.make_node("Squeeze", ["Y_h", "axes"], ["y"], name="squeeze"),
    ]
    outputs = [tensor("y", [1, hidden])] + ([tensor("Y", [steps, 1, 1, hidden])] if y_used else [])
    return make_model(nodes, [tensor("x", [steps, 1, features])], outputs, inits)


@pytest.mark.parametrize("chip", ["rk3588", "rk3566"])
def test_a_gru_read_only_through_its_final_state_stops_the_build(tmp_path, chip):
    gru = place(tmp_path, gru_model(y_used=False), chip)["gru"]
    assert gru.placement is Placement.UNSUPPORTED
    assert "KeyError" in gru.reason and "last step of Y" in gru.reason
    # With Y used too (here a model output), the toolkit builds it.
    assert place(tmp_path, gru_model(y_used=True), chip)["gru"].placement is Placement.FLOAT


def dropout_model(opset: int, mask: bool) -> onnx.ModelProto:
    w = const("w", np.ones((8, 3, 3, 3), np.float32))
    attrs = {"ratio": 0.5} if opset < 12 else {}
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("Dropout", ["c"], ["d", "mask"] if mask else ["d"], name="dropout", **attrs),
        helper.make_node("Relu", ["d"], ["y"], name="relu"),
    ]
    model = make_model(nodes, [tensor("x", [1, 3, 8, 8])], [tensor("y", [1, 8, 8, 8])], [w], opset=opset)
    model.ir_version = 4 if opset <= 9 else 7
    return model


def test_an_opset_9_dropout_with_its_mask_stops_the_build(tmp_path):
    refused = place(tmp_path, dropout_model(9, mask=True), "rk3588")["dropout"]
    assert refused.placement is Placement.UNSUPPORTED and "Not support 'Dropout' of opset-9!" in refused.reason
    assert "edgedeploy fix" in refused.reason
    for opset, mask in ((9, False), (8, True), (10, True), (13, True)):
        assert place(tmp_path, dropout_model(opset, mask), "rk3588")["dropout"].placement is Placement.ACCELERATOR, (opset, mask)


def test_the_dfl_decode_crash_is_noted_with_the_workaround_edgedeploy_applies(tmp_path):
    # Conv -> Reshape -> two Slices: the box decode of YOLOv5u/v8/11 heads.
    inits = [const("w", np.ones((1, 16, 1, 1), np.float32)), ints("shape", [1, 4, 525])]
    inits += [ints("s0", [0]), ints("e0", [2]), ints("s1", [2]), ints("e1", [4]), ints("axis", [1])]
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], name="conv"),
        helper.make_node("Reshape", ["c", "shape"], ["r"], name="reshape"),
        helper.make_node("Slice", ["r", "s0", "e0", "axis"], ["a"], name="slice0"),
        helper.make_node("Slice", ["r", "s1", "e1", "axis"], ["b"], name="slice1"),
        helper.make_node("Sub", ["b", "a"], ["y"], name="sub"),
    ]
    model = make_model(nodes, [tensor("x", [1, 16, 4, 525])], [tensor("y", [1, 2, 525])], inits)
    for chip in CHIPS:
        placed = place(tmp_path, model, chip)
        reshape = placed["reshape"]
        assert reshape.placement is Placement.ACCELERATOR  # the workaround build's placement
        assert "disable_rules=['seperate_conv_rs_split']" in reshape.reason and "edgedeploy build" in reshape.reason
        assert all(placed[n].placement is Placement.ACCELERATOR for n in ("conv", "slice0", "slice1", "sub"))
