"""fresh11's transformer glue on RKNN (docs/audit.md "fresh11's BROS, DiffLlama ... on RKNN", h20-rkattn): a Concat read
only by a Concat along the same axis has no layer of its own (BROS); DiffLlama's value, one head repeated, cut into
its copies and rejoined, Tiled into attn @ v, and its group norm x / Sqrt(mean(x * x) + eps). On the probe forms of
tests/forms_models.py (nested_concat_*, diff_value_*, rms_divided_*), whose rknn-toolkit2 2.5.0 verdicts are in
tests/fixtures/forms/verdicts.json."""

from __future__ import annotations

import pytest

from edgedeploy.audit.rules import Placement
from tests import forms_models as F
from tests.test_rknn_shape_ops import place


@pytest.mark.parametrize("chip", ["rk3588", "rk3566"])
def test_a_concat_read_only_by_a_concat_on_its_axis_runs_with_its_first_input(tmp_path, chip):
    placed = place(tmp_path, F.nested_concat("nested"), chip)
    for inner in ("inner1", "inner2", "inner3"):
        assert placed[inner].placement is Placement.FALLBACK and placed[inner].lowered == "fused"
        assert placed[inner].fused_into == f"sin{inner[-1]}"
    assert placed["outer"].placement is Placement.ACCELERATOR
    assert placed["cos1"].placement is Placement.FALLBACK  # the Cos the merged Concat also read is still placed


@pytest.mark.parametrize("chip", ["rk3588", "rk3566"])
def test_a_concat_on_another_axis_or_read_twice_keeps_its_layer(tmp_path, chip):
    other_axis = place(tmp_path, F.nested_concat("other_axis"), chip)
    assert all(other_axis[f"inner{i}"].lowered is None and other_axis[f"inner{i}"].placement is Placement.ACCELERATOR for i in range(4))
    read_twice = place(tmp_path, F.nested_concat("read_twice"), chip)
    assert read_twice["inner1"].lowered is None and read_twice["inner1"].placement is Placement.ACCELERATOR
    assert read_twice["inner2"].placement is Placement.FALLBACK and read_twice["inner2"].lowered == "fused"


@pytest.mark.parametrize("chip", ["rk3588", "rk3566"])
def test_a_merged_concat_of_npu_results_stays_on_the_npu(tmp_path, chip):
    placed = place(tmp_path, F.nested_concat("npu_pairs"), chip)
    assert all(placed[f"inner{i}"].placement is Placement.ACCELERATOR for i in (1, 2, 3))


@pytest.mark.parametrize("chip", ["rk3588", "rk3566"])
def test_a_repeated_head_cut_into_its_copies_and_tiled_into_attn_v_runs_on_the_cpu(tmp_path, chip):
    placed = place(tmp_path, F.diff_value("lin"), chip)
    for name in ("v_chunk0", "v_chunk1", "v_concat", "v_same", "v_tile"):
        assert placed[name].placement is Placement.FALLBACK and "one_head_repeat_into_a_product" in [v.rule for v in placed[name].violations]
    assert placed["v_repeat"].lowered == "eliminated"  # the repeat's merge the copies cut: no layer names it
    assert placed["v_expand"].placement is Placement.ACCELERATOR


@pytest.mark.parametrize("chip", ["rk3588", "rk3566"])
def test_the_same_glue_of_a_model_input_head_stays_on_the_npu(tmp_path, chip):
    placed = place(tmp_path, F.diff_value("input4"), chip)
    assert all(placed[name].placement is Placement.ACCELERATOR for name in ("v_chunk0", "v_chunk1", "v_concat", "v_tile"))


@pytest.mark.parametrize("chip", ["rk3588", "rk3566"])
@pytest.mark.parametrize("variant,on_npu", [("last", True), ("channel", True), ("abs", False)])
def test_an_rms_norm_written_as_a_division_by_its_root_is_one_npu_norm(tmp_path, chip, variant, on_npu):
    placed = place(tmp_path, F.rms_divided(variant), chip)
    for name in ("sqrt", "div"):
        assert (placed[name].placement is Placement.ACCELERATOR) is on_npu
