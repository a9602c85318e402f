"""The RKNN layer-table parser and verdict, on tables captured from real rknn-toolkit2 2.5.0 runs."""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest

from edgedeploy.audit.rules import Placement
from edgedeploy.sample import sample_model_path
from edgedeploy.targets.rknn.layer_table import ESTIMATE_LABEL, parse_layer_table, parse_memory_kb, parse_rewrites, verdict_from_output

FIXTURES = Path(__file__).parent / "fixtures" / "rknn"


def text(name: str) -> str:
    return (FIXTURES / name).read_text()


def graph(name: str) -> onnx.GraphProto:
    return onnx.load(str(FIXTURES / name)).graph


def test_parses_every_row_of_the_sample_table():
    layers = parse_layer_table(text("mnist_cnn.rk3588.int8.txt"))
    assert [l.id for l in layers] == list(range(11))
    conv = layers[1]
    assert (conv.op_type, conv.dtype, conv.target) == ("ConvRelu", "INT8", "NPU")
    assert (conv.cycles_ddr, conv.cycles_npu, conv.cycles_total) == (623, 7056, 7056)
    assert conv.name == "/features/features.0/Conv"
    assert conv.input_shapes == "(1,1,28,28),(8,1,3,3),(8)"
    assert [l.target for l in layers if l.op_type == "Reshape"] == ["CPU"]


def test_rk3576_table_has_a_sparsity_column():
    layers = parse_layer_table(text("mnist_cnn.rk3576.int8.txt"))
    assert len(layers) == 11
    assert {l.op_type for l in layers} >= {"ConvRelu", "MaxPool", "Conv", "OutputOperator"}
    assert any(l.sparse_ratio is not None for l in layers)
    assert all(l.full_name for l in layers)


def test_unnamed_layers_do_not_end_the_table():
    # The toolkit adds unnamed input-normalisation convolutions; rows after them must still parse.
    layers = parse_layer_table(text("test_and4d.rk3588.int8.txt"))
    assert [l.op_type for l in layers] == ["InputOperator", "InputOperator", "Conv", "Cast", "Conv", "Cast", "Mul", "Cast", "OutputOperator"]
    assert layers[2].full_name == ""


def test_sample_verdict_matches_the_table_and_traces_fused_nodes():
    v = verdict_from_output(text("mnist_cnn.rk3588.int8.txt"), onnx.load(str(sample_model_path())).graph, True, "2.5.0")
    assert v.failed is None
    assert v.nodes["/features/features.0/Conv"].placement is Placement.ACCELERATOR
    # Relu was fused into the convolution (ConvRelu): no layer of its own, placed with its producer.
    relu = v.nodes["/features/features.1/Relu"]
    assert relu.placement is Placement.ACCELERATOR and "fused" in relu.detail and "/features/features.0/Conv" in relu.detail
    # The Gemm became a 1x1 convolution on the NPU; its output reshape on the CPU is layout glue.
    gemm = v.nodes["/classifier/classifier.3/Gemm"]
    assert gemm.placement is Placement.ACCELERATOR and "Reshape on CPU" in gemm.detail
    assert len(v.nodes) == 13
    assert v.estimates["label"] == ESTIMATE_LABEL and "estimate" in v.estimates["label"]
    assert v.estimates["cycles_total_estimate"] == sum(l.cycles_total for l in parse_layer_table(text("mnist_cnn.rk3588.int8.txt")))
    assert v.estimates["weight_memory_kb_estimate"] == pytest.approx(30.0625)


def test_float16_layer_on_the_npu_is_kept_in_float_in_an_int8_build():
    g = graph("test_softmax_axis_0.onnx")
    on_3588 = verdict_from_output(text("test_softmax_axis_0.rk3588.int8.txt"), g, True, "2.5.0")
    assert on_3588.nodes["Softmax_0"].placement is Placement.FLOAT
    assert "exSoftmax13 FLOAT16 on NPU" in on_3588.nodes["Softmax_0"].detail
    # RK3566 has no NPU softmax: the same model's softmax runs on the CPU.
    on_3566 = verdict_from_output(text("test_softmax_axis_0.rk3566.int8.txt"), g, True, "2.5.0")
    assert on_3566.nodes["Softmax_0"].placement is Placement.FALLBACK


def test_rewrites_trace_renamed_layers_back_to_the_onnx_node():
    rewrites = parse_rewrites(text("test_and4d.rk3588.int8.txt"))
    assert rewrites[0].pass_name == "cvt_bool_and_to_fp_mul"
    assert rewrites[0].removed == ("and",)
    v = verdict_from_output(text("test_and4d.rk3588.int8.txt"), graph("test_and4d.onnx"), True, "2.5.0")
    node = v.nodes["And_0"]
    # Mul on the NPU is the computation; the casts around it are type glue.
    assert node.placement is Placement.ACCELERATOR and "Mul INT8 on NPU" in node.detail
    assert any("unnamed" in u for u in v.unmapped)


def test_matmul_glue_on_the_cpu_does_not_move_the_node():
    v = verdict_from_output(text("test_matmul_2d.rk3568.int8.txt"), graph("test_matmul_2d.onnx"), True, "2.5.0")
    assert v.nodes["MatMul_0"].placement is Placement.ACCELERATOR
    assert "exMatMul INT8 on NPU" in v.nodes["MatMul_0"].detail


def test_refused_and_crashed_builds_are_whole_model_failures():
    refused = verdict_from_output(text("test_sin.rk3588.int8.txt"), graph("test_sin.onnx"), True, "2.5.0", error="ValueError: Unsupport onnx opset 22, need <= 19!")
    assert refused.failed and "opset 22" in refused.failed and not refused.nodes
    crashed = verdict_from_output(text("test_add_int8.rk3588.int8.txt"), graph("test_add_int8.onnx"), True, "2.5.0", error="the toolkit crashed (signal 6)")
    assert crashed.failed == "the toolkit crashed (signal 6)"
    # A build that printed no table is a failure even without an error message.
    assert verdict_from_output("no table here", graph("test_sin.onnx"), True, "2.5.0").failed


def test_fp16_build_has_no_float_placements():
    v = verdict_from_output(text("mnist_cnn.rk3588.fp16.txt"), onnx.load(str(sample_model_path())).graph, False, "2.5.0")
    assert {n.placement for n in v.nodes.values()} == {Placement.ACCELERATOR}
    assert all("FLOAT16" in l.dtype for l in parse_layer_table(text("mnist_cnn.rk3588.fp16.txt")) if l.target == "NPU" and l.op_type not in ("InputOperator",))


def test_memory_totals():
    assert parse_memory_kb(text("mnist_cnn.rk3588.int8.txt")) == {"internal_memory_kb": 28.4375, "weight_memory_kb": 30.0625}


def test_a_residual_add_fused_into_a_convadd_layer_runs_on_it_and_cancelled_pairs_run_nowhere():
    # rv1106: the channels-last layer norm is a CPU exNorm; the residual Add has no layer of its own
    # but is part of the NPU `ConvAdd` layer named after conv_b; bypass_two_transpose deletes the
    # Transpose pair around the norm, bypass_two_reshape the Flatten before the Gemm.
    v = verdict_from_output(text("residual_ln.rv1106.int8.txt"), graph("residual_ln.onnx"), True, "2.5.0")
    assert v.nodes["ln_mean"].placement is Placement.FALLBACK
    assert v.nodes["residual"].placement is Placement.ACCELERATOR
    assert "ConvAdd" in v.nodes["residual"].detail and "conv_b" in v.nodes["residual"].detail
    # Not the CPU exNorm next to them: they were deleted, so the toolkit reports nothing for them.
    for deleted in ("to_last", "to_first", "flatten"):
        assert deleted not in v.nodes
    assert v.nodes["fc"].placement is Placement.ACCELERATOR


def test_nodes_needed_only_by_a_folded_product_by_zeros_are_not_reported():
    # rk3566: fold_constant removes branch_last (a 1x1 Conv by zeros); attn_mul, read only by it,
    # gets no layer. Both run nowhere: neither takes the placement of a neighbour (attn_mul's
    # nearest placed one is the CPU softmax), as a node fused into a layer would.
    v = verdict_from_output(text("zero_branch_shared.rk3566.int8.txt"), graph("zero_branch_shared.onnx"), True, "2.5.0")
    assert "branch_last" not in v.nodes and "attn_mul" not in v.nodes
    assert v.nodes["attn_softmax"].placement is Placement.FALLBACK
    assert v.nodes["branch_conv"].placement is Placement.ACCELERATOR
    # The Add of zeros the toolkit removed (remove_invalid_add) is a wire between placed nodes.
    assert v.nodes["residual_add"].placement is Placement.ACCELERATOR
