"""rknn-toolkit2's accuracy_analysis report, mapped to ONNX node names (captured real report)."""

from __future__ import annotations

from pathlib import Path

import onnx

from edgedeploy.sample import sample_model_path
from edgedeploy.targets.rknn.accuracy_table import parse_error_analysis, per_node_errors

FIXTURE = Path(__file__).parent / "fixtures" / "rknn" / "mnist_cnn.rk3588.error_analysis.txt"


def test_rows_and_figures():
    rows = parse_error_analysis(FIXTURE.read_text())
    assert rows[0]["tensor"] == "input" and rows[0]["entire_cosine"] == 1.0
    fused = [r for r in rows if r["entire_cosine"] is None]
    assert [r["op_type"] for r in fused] == ["Conv"] * 4
    assert all(0.99 < r["single_cosine"] <= 1.0 for r in rows if r["single_cosine"] is not None)


def test_maps_to_onnx_nodes_including_fused_convolutions():
    analysis = per_node_errors(parse_error_analysis(FIXTURE.read_text()), onnx.load(str(sample_model_path())).graph)
    nodes = analysis["nodes"]
    assert "/features/features.1/Relu" in nodes and "/features/features.8/MaxPool" in nodes
    # The convolution's row has no figures (fused with its Relu); it gets the Relu's, marked so.
    conv = nodes["/features/features.0/Conv"]
    assert conv["fused_with"] == "/features/features.1/Relu"
    assert conv["single_cosine"] == nodes["/features/features.1/Relu"]["single_cosine"]
    # Suffixed toolkit tensors (logits_mm, ..._output_0-rs) still land on their ONNX node.
    assert "/classifier/classifier.3/Gemm" in nodes and "/classifier/classifier.2/Relu" in nodes
    assert {r["tensor"] for r in analysis["unmapped"]} == {"input", "input_int8"}
    worst = analysis["worst_single_cosine"]
    assert worst["cosine"] == min(v["single_cosine"] for v in nodes.values())


def test_a_conv_the_toolkit_splits_is_named_by_the_conv_not_by_the_node_before_it():
    """rknn-toolkit2 2.5.0 splits silero_vad_16k's STFT Conv (256 taps) into slices of its input,
    convolutions and Adds named after that input ('<Unsqueeze output>_slice#3_rs_conv'): those
    layers are the Conv's. A reshaped copy of the input ('<x>-rs') stays its producer's; a brute
    force keeps every layer of the Conv in float16 together (targets.rknn.diagnose._layer_groups)."""
    from onnx import helper

    from edgedeploy.targets.rknn.accuracy_table import _node_for_tensor, _producer_index, conv_inputs
    from edgedeploy.targets.rknn.diagnose import _layer_groups

    nodes = [helper.make_node("Unsqueeze", ["x", "axes"], ["u"], name="unsq"), helper.make_node("Conv", ["u", "w"], ["c"], name="stft"),
             helper.make_node("Relu", ["c"], ["y"], name="relu")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 1, 512])],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)])
    producer, inputs = _producer_index(graph)
    convs = conv_inputs(graph)
    owner = {t: _node_for_tensor(t, producer, inputs, convs) for t in ("u-rs", "u_slice#3_rs_conv_conv", "u_slice-rs", "u_slice_conv_add_add-rs", "c-rs", "y")}
    assert owner == {"u-rs": "unsq", "u_slice#3_rs_conv_conv": "stft", "u_slice-rs": "stft", "u_slice_conv_add_add-rs": "stft", "c-rs": "stft", "y": "relu"}
    # the model's input and the int8 conversions at its edges are no operands custom_quantize_layers takes
    groups = _layer_groups(list(owner) + ["x", "x_int8", "y_int8"], graph, ["stft", "relu", "unsq"])
    assert [(g["node"], len(g["layers"])) for g in groups] == [("stft", 4), ("relu", 1), ("unsq", 1)]


def test_a_weight_written_as_a_constant_node_is_no_upstream_of_the_fall():
    """silero_vad_16k's inlined branches hold their weights in Constant nodes: read as inputs they
    made every Conv's accumulated fall unknown (no record computes them), so RKNN's diagnosis found
    no first sharp fall; the STFT Conv (absorbing the Unsqueeze before it, whose axes are a Constant
    too) now falls from the Pad's SNR."""
    from onnx import helper

    from edgedeploy.pipeline.diagnose import _finish

    def moments(err_sq):
        return {"count": 4, "dot": 1.0, "ref_sq": 1.0, "got_sq": 1.0, "err_sq": err_sq, "max_abs_error": 0.1}

    nodes = [helper.make_node("Relu", ["x"], ["p"], name="pad"), helper.make_node("Constant", [], ["axes"], name="c_axes", value=helper.make_tensor("a", onnx.TensorProto.INT64, [1], [2])),
             helper.make_node("Unsqueeze", ["p", "axes"], ["u"], name="unsq"), helper.make_node("Constant", [], ["w"], name="c_w", value=helper.make_tensor("w", onnx.TensorProto.FLOAT, [1, 1, 1, 1], [1.0])),
             helper.make_node("Conv", ["u", "w"], ["y"], name="conv")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 1, 8])],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)])
    records = [{"node": "pad", "op_type": "Relu", "tensor": "p", "inputs": ["x"], "accumulated": moments(1e-3), "isolated": moments(1e-3), "absorbs": []},
               {"node": "conv", "op_type": "Conv", "tensor": "y", "inputs": ["u"], "accumulated": moments(0.1), "isolated": moments(0.01), "absorbs": []}]
    found = _finish("rk3588", {"toolchain": "t", "method": "m"}, records, helper.make_model(graph), 4)
    conv = next(r for r in found["nodes"] if r["node"] == "conv")
    assert conv["absorbs"] == ["unsq"] and conv["inputs"] == ["p"]
    assert round(conv["drop_db"], 1) == 20.0 and found["first_sharp_drop"]["node"] == "conv"
