"""fresh10's RKNN shape-op mechanisms (docs/audit.md "fresh10's shape ops on RKNN"), on the probe forms of
tests/forms_models.py whose rknn-toolkit2 2.5.0 verdicts are in tests/fixtures/forms/verdicts.json."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from onnx import helper

from edgedeploy.audit.engine import audit_model
from edgedeploy.audit.rules import Placement
from edgedeploy.model import load_model
from edgedeploy.targets import find_chip
from tests import forms_models as F
from tests.helpers import const, make_model, save, tensor


def place(tmp_path: Path, model, chip: str) -> dict:
    target, chip_obj = find_chip(chip)
    precision = chip_obj.precisions[0]
    loaded = load_model(save(model, tmp_path / "m.onnx"), require_static=True)
    return {n.node: n for n in audit_model(loaded, target.rule_set(chip, precision), precision).nodes}


def rules_of(placed) -> list[str]:
    return [v.rule for v in placed.violations]


@pytest.mark.parametrize("chip", ["rk3588", "rk3566"])
@pytest.mark.parametrize("spec,on_cpu", [
    (("hp_128_106", 1, 128, 106, "half_pixel"), True), (("hp_27_32", 8, 27, 32, "half_pixel"), True),
    (("hp_16_48", 8, 16, 48, "half_pixel"), False), (("hp_32_16", 8, 32, 16, "half_pixel"), False),
    (("ac_6_12", 8, 6, 12, "align_corners"), True), (("ac_2_12", 8, 2, 12, "align_corners"), False),
    (("ac_1_12", 8, 1, 12, "align_corners"), False), (("ac_5_13", 8, 5, 13, "align_corners"), False),
    (("hp_mixed", 8, 32, (64, 27), "half_pixel"), True), (("nearest_32_27", 8, 32, 27, "asymmetric", "nearest"), False),
])
def test_a_linear_resize_runs_on_the_npu_by_a_whole_step_only(tmp_path, chip, spec, on_cpu):
    placed = place(tmp_path, F._packed(F._resize_ratio_case, (spec,), 1, opset=13), chip)[f"rr_{spec[0]}_resized"]
    assert (placed.placement is Placement.FALLBACK) is on_cpu
    assert ("linear_resize_step_not_whole" in rules_of(placed)) is on_cpu


@pytest.mark.parametrize("spec,on_cpu", [(("s2", 2, "softmax", -1), True), (("sig2", 2, "sigmoid", -1), True), (("c2", 2, "concat", -1), False)])
def test_rk3588_runs_a_channels_last_level_on_the_cpu_where_a_node_reads_it(tmp_path, spec, on_cpu):
    placed = place(tmp_path, F._packed(F._levels_softmax_case, (spec,), 1, opset=13), "rk3588")
    level = placed[f"ls_{spec[0]}_f0"]
    assert (level.placement is Placement.FALLBACK) is on_cpu
    assert placed[f"ls_{spec[0]}_t0"].placement is Placement.ACCELERATOR


def test_a_map_made_tokens_is_no_channels_last_level(tmp_path):
    # one anchor a cell: Perceiver's [1, 15, 15, 64] -> [1, 225, 64] read by a node stays on RK3588's NPU (fresh7)
    nodes = [helper.make_node("Transpose", ["x"], ["t"], name="t", perm=[0, 2, 3, 1]), helper.make_node("Reshape", ["t", "s"], ["f"], name="f"),
             helper.make_node("Relu", ["f"], ["y"], name="y")]
    model = make_model(nodes, [tensor("x", [1, 64, 15, 15])], [tensor("y", [1, 225, 64])], [const("s", np.array([1, 225, 64], np.int64))])
    assert place(tmp_path, model, "rk3588")["f"].placement is Placement.ACCELERATOR


@pytest.mark.parametrize("chip,on_cpu", [("rk3566", True), ("rk3588", False)])
def test_a_2d_input_made_a_map_is_viewed_on_the_rk3566_cpu(tmp_path, chip, on_cpu):
    spec = ("crepe", 256, "two", "pad_conv", "h")
    placed = place(tmp_path, F._packed(F._input_to_map_case, (spec,), 1, used_only=True, opset=13), chip)
    for view in ("im_crepe_u1", "im_crepe_m"):
        assert (placed[view].placement is Placement.FALLBACK) is on_cpu
        assert ("two_d_input_made_a_map" in rules_of(placed[view])) is on_cpu


@pytest.mark.parametrize("chip", ["rk3588", "rk3566"])
def test_a_shape_keeping_reshape_goes_with_its_producer_even_where_others_read_it(tmp_path, chip):
    placed = place(tmp_path, F._packed(F._shared_same_shape_case, (("resize_shared", "resize", True), ("relu_shared", "relu", True)), 1, opset=18), chip)
    assert placed["sss_resize_shared_v"].placement is Placement.FALLBACK and placed["sss_resize_shared_v"].lowered == "fused"
    assert placed["sss_relu_shared_v"].placement is Placement.ACCELERATOR
    assert placed["sss_resize_shared_y2"].placement is Placement.ACCELERATOR  # the Sigmoid beside the view still reads the Resize


@pytest.mark.parametrize("chip", ["rk3588", "rk3566"])
def test_rknn_gives_an_int64_sums_unsqueeze_no_cpu_layer(tmp_path, chip):
    placed = place(tmp_path, F._packed(F._reduced_unsqueeze_case, F.REDUCED_UNSQUEEZE_PACK, 1, used_only=True, opset=13), chip)
    for name in ("ru_int_last_u", "ru_int_first_u"):
        assert placed[name].placement is Placement.ACCELERATOR and placed[name].lowered == "eliminated"
    assert placed["ru_int_last_s"].placement is Placement.FALLBACK  # the int64 ReduceSum itself stays on the CPU


def test_onnxsim_fuses_a_reduction_and_the_unsqueeze_that_puts_its_axis_back(tmp_path):
    placed = place(tmp_path, F._packed(F._reduced_unsqueeze_case, F.REDUCED_UNSQUEEZE_PACK, 1, used_only=True, opset=13), "imx93")
    assert placed["ru_int_last_u"].lowered == "eliminated" and placed["ru_float_last_u"].lowered == "eliminated"
    assert placed["ru_int_first_u"].lowered is None and placed["ru_int_first_u"].placement is not Placement.ACCELERATOR
