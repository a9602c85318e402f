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

from edgedeploy.audit.confirm import ToolchainVerdict
from edgedeploy.audit.engine import audit_model
from edgedeploy.audit.rules import Placement
from edgedeploy.model import load_model
from edgedeploy.pipeline.audit import rules_for
from edgedeploy.targets import find_chip
from tests.forms_models import BATCHNORM_FORMS, CASES, GROUPED_CONV_FORMS, REWRITTEN_FORMS, yolo_decode_head
from tests.forms_verdicts import audit_case, certain_disagreements, recorded_verdict
from tests.helpers import save

VERDICTS = json.loads((Path(__file__).parent / "fixtures" / "forms" / "verdicts.json").read_text())
BUILDERS = {case.name: case for case in CASES}
PAIRS = [(name, chip) for name, entry in VERDICTS["cases"].items() for chip in entry["chips"]]


def audit(tmp_path: Path, name: str, chip: str):
    return audit_case(BUILDERS[name], chip, tmp_path)


def recorded(name: str, chip: str) -> ToolchainVerdict:
    return recorded_verdict(VERDICTS["cases"][name]["chips"][chip])


def test_every_recorded_case_has_its_builder():
    assert PAIRS and all(name in BUILDERS for name, _ in PAIRS)


@pytest.mark.parametrize("name,chip", PAIRS)
def test_the_audit_places_each_form_as_the_toolchain_did(tmp_path, name, chip):
    result = audit(tmp_path, name, chip)
    verdict = recorded(name, chip)
    # A node the audit places only as a best guess (uncertain, with its reason) is what --confirm
    # settles; it is counted apart, as the pool's score does (scripts/corpus/agreement.py).
    disagreeing, found, uncertain = certain_disagreements(result, verdict)
    assert disagreeing == [], f"{name} on {chip}: {found['disagreements']}"
    if verdict.failed is None:
        # The same set of nodes off the accelerator, among those the toolchain reports and can
        # observe (esp-ppq cannot tell what the ESP-DL runtime lacks: those are unverifiable).
        apart = set(found["unverifiable"]) | uncertain
        off = {n.node for n in result.nodes if n.placement is not Placement.ACCELERATOR and n.node in verdict.nodes and n.node not in apart}
        assert off == {n for n, v in verdict.nodes.items() if v.placement is not Placement.ACCELERATOR and n not in apart}


def test_the_model_zoo_form_is_converted_with_its_grouped_convs_written_as_group_1(tmp_path):
    """esp-ppq converts every node of the zoo's ShuffleNet unit and keeps only Sum in float. ESP-DL's
    Conv runs any group other than 1 with its depthwise kernel (dl_module_conv.hpp), so edgedeploy
    writes the grouped 1x1 Convs as block-diagonal group-1 Convs before esp-ppq (grouped_conv.py):
    the audit places them (and the BatchNormalizations folded into them) on the accelerator, with
    that rewrite as the note; the Sum stays unsupported (ESP-DL has no Sum module)."""
    result = {n.node: n for n in audit(tmp_path, "zoo_shuffle_unit", "esp32s3").nodes}
    grouped = ("n1", "n2", "n11", "n12")  # the grouped 1x1 Convs and the BatchNormalizations folded into them
    for name in grouped:
        assert result[name].placement is Placement.ACCELERATOR, name
        assert "grouped_conv_written_block_diagonal" in [v.rule for v in result[name].violations], name
    assert result["n16"].op_type == "Sum" and result["n16"].placement is Placement.UNSUPPORTED
    others = [n for n in result.values() if n.node not in (*grouped, "n16")]
    assert others and all(n.placement is Placement.ACCELERATOR for n in others)


def test_esp_ppq_converts_every_grouped_conv_and_the_audit_notes_the_ones_edgedeploy_rewrites(tmp_path):
    """Probed with esp-ppq 1.3.12 (scripts/probe_forms.py): every grouped Conv came out as an int8
    layer, whatever its groups, channels per group, kernel, stride, dilation, padding or rank. The
    ESP-DL runtime runs any group other than 1 with its depthwise kernel, so edgedeploy writes each
    Conv that is neither group 1 nor plain depthwise as a block-diagonal group-1 Conv; the audit
    places all on the accelerator and says, for those, the rewrite and its cost (group x MACs)."""
    kinds = set()
    for name, (cin, cout, group, kernel, *_rest, rank) in GROUPED_CONV_FORMS.items():
        toolchain = VERDICTS["cases"][f"conv_{name}"]["chips"]["esp32s3"]
        assert toolchain["failed"] is None and toolchain["nodes"]["conv_grouped"] == "A", name
        node = {n.node: n for n in audit(tmp_path, f"conv_{name}", "esp32s3").nodes}["conv_grouped"]
        as_written = group == 1 or group == cin == cout
        kinds.add(as_written)
        assert node.placement is Placement.ACCELERATOR, name
        notes = [v for v in node.violations if v.rule == "grouped_conv_written_block_diagonal"]
        assert bool(notes) is not as_written, name
        if notes:
            added = cout * (cin // group) * kernel ** (rank - 2) * (group - 1)  # the zeros outside the blocks, 1 byte each at int8
            assert f"{group}x its MACs, +{added} weight bytes" in notes[0].detail, notes[0].detail
    assert kinds == {True, False}


def test_esp_ppq_converts_the_rewritten_forms_to_int8_on_every_node():
    """What edgedeploy hands esp-ppq for each grouped form and for form f's zoo unit (group 4):
    esp-ppq 1.3.12 converts it with every node it reports as an int8 layer but the zoo unit's Sum,
    which it keeps in float as in the model as written (recorded with scripts/probe_forms.py; the
    rewrite's exactness in float is tests/test_espdl_grouped_conv.py)."""
    rewritten = [name for name in VERDICTS["cases"] if name.endswith("_block_diagonal")]
    assert len(rewritten) == len(REWRITTEN_FORMS) + 1
    for name in rewritten:
        toolchain = VERDICTS["cases"][name]["chips"]["esp32s3"]
        assert toolchain["failed"] is None and toolchain["nodes"], name
        ops = {n.name: n.op_type for n in BUILDERS[name].build().graph.node}
        assert {ops[n] for n, code in toolchain["nodes"].items() if code != "A"} <= {"Sum"}, name


def test_batchnorm_is_placed_alike_at_every_opset_as_esp_ppq_did(tmp_path):
    """esp-ppq 1.3.12 folds a BatchNormalization of opset 7, 9 or 15 into the Conv before it
    (grouped or not) and makes a lone one on a 4-D tensor a 1x1 depthwise Conv; a lone one on a
    3-D tensor stops it. The audit places the BatchNormalization as its producer or esp-ppq did:
    the opset plays no part."""
    for name, (opset, after, rank) in BATCHNORM_FORMS.items():
        toolchain = VERDICTS["cases"][name]["chips"]["esp32s3"]
        node = {n.node: n for n in audit(tmp_path, name, "esp32s3").nodes}["bn"]
        if rank == 3 and after == "relu":
            assert toolchain["failed"] and node.placement is Placement.UNSUPPORTED, name
        elif after == "gconv":
            # Folded into a grouped Conv, which edgedeploy writes as a block-diagonal group-1 Conv (see above).
            assert toolchain["nodes"]["bn"] == "A" and node.placement is Placement.ACCELERATOR, name
            assert "grouped_conv_written_block_diagonal" in [v.rule for v in node.violations], name
        else:
            assert toolchain["nodes"]["bn"] == "A" and node.placement is Placement.ACCELERATOR, name
    assert {opset for opset, _, _ in BATCHNORM_FORMS.values()} == {7, 9, 15}


# ---- what the audit cannot know: values that follow from shapes the model leaves open ----------


def test_a_value_computed_from_a_dynamic_dimension_is_uncertain_until_the_shape_is_fixed(tmp_path):
    """With its height and width left open, the decode head's chunk and grid follow from shapes
    the audit cannot know: their placement is uncertain, with the dimension as the reason. Fixed
    (--input-shape), the same model folds them and agrees with esp-ppq (the recorded verdict)."""
    path = save(yolo_decode_head(size="side"), tmp_path / "dynamic.onnx")
    target, chip = find_chip("esp32s3")
    rules = rules_for(target, chip.id, chip.precisions[0])
    result = audit_model(load_model(path), rules, chip.precisions[0])
    placed = {n.node: n for n in result.nodes}
    for name in ("chunk_shape", "chunk_div", "chunk_slice0", "grid_range_x", "stride_div"):
        node = placed[name]
        assert node.placement is not Placement.ACCELERATOR and node.uncertain, name
        assert "--input-shape" in node.uncertain and "side" in node.violations[0].detail
    assert result.summary()["uncertain"] >= 5
    # Nodes that do not depend on the open dimension are as certain as before.
    assert not placed["conv1"].uncertain and placed["conv1"].placement is Placement.ACCELERATOR
    fixed = audit_model(load_model(path, input_shapes={"x": (1, 3, 16, 16)}), rules, chip.precisions[0])
    assert all(n.placement is Placement.ACCELERATOR and not n.uncertain for n in fixed.nodes)


def test_confirm_asks_the_toolchain_about_the_model_with_the_shapes_the_audit_pinned(tmp_path):
    """`--confirm` settles an uncertain placement only if the toolchain sees the shapes the audit
    was given: with --input-shape, it gets a copy of the model with them; without, the user's file."""
    import onnx

    from edgedeploy.pipeline.audit import model_as_audited

    path = save(yolo_decode_head(size="side"), tmp_path / "dynamic.onnx")
    assert model_as_audited(load_model(path), tmp_path / "a") == path
    (tmp_path / "b").mkdir()
    copy = model_as_audited(load_model(path, input_shapes={"x": (1, 3, 16, 16)}), tmp_path / "b")
    assert copy != path and copy.name == path.name
    dims = [d.dim_value for d in onnx.load(copy).graph.input[0].type.tensor_type.shape.dim]
    assert dims == [1, 3, 16, 16]


def test_esp_ppq_verdict_leaves_out_weights_the_simplifier_computes():
    """The zoo form's weights are ConstantOfShape of shape initializers: onnxsim (run by esp-ppq
    first) computes them, so the verdict does not give them the placement of the layer that reads
    them (the model zoo's ShuffleNet had 52 such nodes "fused into Sum F32")."""
    from edgedeploy.targets.espdl.verdict import _computed_from_constants

    graph = BUILDERS["zoo_shuffle_unit"].build().graph
    weights = {n.name for n in graph.node if n.op_type == "ConstantOfShape"}
    assert weights and _computed_from_constants(graph) == weights


def test_esp_ppq_verdict_leaves_out_a_shape_the_simplifier_computes():
    """torch.onnx's Expand target (ConstantOfShape, Mul by -1, Equal, Where: Gemma 3's repeat_kv)
    is computed by onnxsim and exported as a constant esp-ppq names itself (PPQ_Variable_N): the
    verdict leaves those nodes out instead of giving them the Expand's F32 layer (fresh5
    hf_gemma3_text and hf_lfm2 had 18 such nodes "fused into Expand F32")."""
    from edgedeploy.targets.espdl.verdict import _folded_from_constants

    graph = BUILDERS["nop_cast_folded_shape_pack"].build().graph
    folded = _folded_from_constants(graph)
    assert {f"foldshape_{r}_{n}" for r in ("expand", "reshape") for n in ("ones", "neg", "eq", "target")} <= folded
    assert not any(name.startswith("nopcast_") or name.endswith(("_view", "_r", "_y")) for name in folded)
    verdict = recorded("nop_cast_folded_shape_pack", "esp32s3")
    assert "foldshape_expand_view" in verdict.nodes and not any(n in verdict.nodes for n in folded)


ZERO_BRANCH_PAIRS = [(name, chip) for name, chip in PAIRS if name.startswith("zero_residual_branch_")]


@pytest.mark.parametrize("name,chip", ZERO_BRANCH_PAIRS)
def test_a_branch_needed_only_by_a_product_by_zeros_runs_nowhere(tmp_path, name, chip):
    """rknn-toolkit2 folds a Conv (or Mul) by zeros inside the graph and compiles nothing that only
    it needed: those nodes are the ones its verdict leaves out, and the audit says they run nowhere
    (not, say, a Softmax on RK3566's CPU, which the per-node comparison above cannot see)."""
    result = audit(tmp_path, name, chip)
    verdict = recorded(name, chip)
    assert ZERO_BRANCH_PAIRS and verdict.failed is None
    unreported = {n.node for n in result.nodes if n.node not in verdict.nodes}
    assert unreported == {n.node for n in result.nodes if n.folded}
    assert not [n.node for n in result.nodes if n.node in unreported and n.placement is not Placement.ACCELERATOR]


@pytest.mark.parametrize("chip", ["rk3566", "rk3588"])
def test_a_forked_channels_last_norm_keeps_no_transpose_layer(tmp_path, chip):
    """rknn-toolkit2 2.5.0 gives no layer to the Transposes around a channels-last norm whose result
    forks, every branch Transposed back (FocalNet): its verdict leaves them out, and the audit has
    them run nowhere, not on RK3566's CPU (which the per-node comparison above cannot see)."""
    result = audit(tmp_path, "forked_nhwc_norm_pack", chip)
    verdict = recorded("forked_nhwc_norm_pack", chip)
    transposes = [n for n in result.nodes if n.op_type == "Transpose" and n.node not in verdict.nodes]
    assert len(transposes) == 12 and verdict.failed is None
    assert all(n.lowered == "eliminated" and n.placement is Placement.ACCELERATOR for n in transposes)


def test_space_to_depth_by_reshapes_runs_on_rk3566s_npu(tmp_path):
    """Every Transpose on RK3566 is a CPU layer but the block move of a space-to-depth (and depth-to-space)
    written as Reshape, Transpose, Reshape, which rknn-toolkit2 2.5.0 runs on the NPU (TResNet's stem)."""
    result = audit(tmp_path, "space_to_depth_pack", "rk3566")
    moved = [n for n in result.nodes if n.op_type == "Transpose"]
    assert len(moved) == 8 and all(n.placement is Placement.ACCELERATOR and n.lowered_by == "space_to_depth_by_reshapes" for n in moved)


@pytest.mark.parametrize("chip", ["rk3566", "rk3588"])
def test_a_depth_to_space_of_blocksize_one_runs_on_the_cpu(tmp_path, chip):
    """rknn-toolkit2 2.5.0 runs a DepthToSpace of blocksize 1 (PixelShuffle(1), MixDehazeNet, TEED) on
    the CPU in either mode, whatever reads it, and one of blocksize 2 on the NPU."""
    result = audit(tmp_path, "depth_to_space_pack", chip)
    moves = {n.node: n for n in result.nodes if n.op_type == "DepthToSpace"}
    assert len(moves) == 8
    for name, move in moves.items():
        assert (move.placement is Placement.FALLBACK) == ("_b1_" in name), name
        assert (move.placement is Placement.ACCELERATOR) == ("_b2_" in name), name


def test_a_five_d_tile_that_broadcasts_runs_on_rk3588s_npu_when_reshaped(tmp_path):
    """rknn-toolkit2 2.5.0 on RK3588: a 5-D Tile repeating only axes of size 1 runs on the NPU when Reshaped
    (its shape also read by a Shape: RealPLKSR) or the model output, on the CPU when a Concat reads it
    (LongT5); repeating an axis of size 2 or more, on the CPU."""
    tiles = {n.node: n.placement for name in ("tile_five_d_pack", "tile_five_d_pack_2")
             for n in audit(tmp_path, name, "rk3588").nodes if n.op_type == "Tile"}
    on_cpu = {"t5_conv_a1_r4_reshape_t", "t5_conv_size2_a2_r4_reshape_t", "t52_plain_concat_t", "t52_expand_concat_t"}
    assert len(tiles) == 15
    assert {n for n, p in tiles.items() if p is not Placement.ACCELERATOR} == on_cpu
