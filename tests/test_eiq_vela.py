"""Parsing Vela's output and tracing the converter's operators back to ONNX nodes (pure Python).

The fixtures in tests/fixtures/eiq/ are real outputs captured from the eiq worker (onnx2tf
1.29.24, tensorflow-cpu 2.19, Vela 5.2.0 for ethos-u65-256, Ethos_U65_High_End,
Dedicated_Sram_384KB): the bundled MNIST sample, a Conv-Sin-Conv-Softmax model (a float-only
operator between NPU operators), a Conv-Greater-Where-Conv model (CPU operators) and a model
with a boolean output (Vela stops with an error).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from edgedeploy.audit.rules import Placement
from edgedeploy.targets.eiq.vela import layer_names, parse_summary_csv, parse_vela_stdout, trace_ops, verdict_from_entry, vx_verdict

FIXTURES = Path(__file__).parent / "fixtures" / "eiq"


def fixture(name: str) -> dict:
    return json.loads((FIXTURES / f"{name}.verdict.json").read_text())


def verdict(name: str):
    data = fixture(name)
    return verdict_from_entry(data["entry"], data["tokens"], data["output_producers"], toolchain="onnx2tf+vela", version="test")


def test_printout_of_an_all_npu_model():
    out = parse_vela_stdout((FIXTURES / "mnist_cnn.vela_stdout.txt").read_text())
    assert out.cpu_operator_count == 0 and out.cpu_ops == []
    assert out.npu_operator_count == len(out.npu_ops) == 14
    assert out.fields["Accelerator configuration"] == "Ethos_U65_256"
    assert out.fields["System configuration"] == "Ethos_U65_High_End"
    assert out.fields["Memory mode"] == "Dedicated_Sram_384KB"
    kinds = [op.kind for op in out.npu_ops]
    assert kinds.count("Conv2D") == 3 and kinds.count("FullyConnected") == 2
    assert out.npu_ops[-1].tensor == "PartitionedCall:0" and out.npu_ops[-1].shape == [1, 1, 1, 10]


def test_printout_lists_cpu_operators_with_reasons():
    out = parse_vela_stdout((FIXTURES / "conv_sin_softmax.vela_stdout.txt").read_text())
    assert out.cpu_operator_count == 3
    assert {op.tensor for op in out.cpu_ops} == {"tfl.dequantize", "model/tf.math.sin/Sin", "tfl.quantize"}
    assert out.warned_ops["model/tf.math.sin/Sin"] == "SIN"
    assert out.reasons["model/tf.math.sin/Sin"] == ["Unsupported opType"]
    # A reason may run over two lines: the constraint's sentence follows the Reason line.
    assert any("Feature-map dataTypes" in r for r in out.reasons["tfl.quantize"])


def test_summary_csv_figures_are_labelled_estimates():
    est = parse_summary_csv((FIXTURES / "mnist_cnn.summary.csv").read_text())
    assert est["is_estimate"] is True and "estimate" in est["source"]
    assert est["accelerator_configuration"] == "Ethos_U65_256"
    assert est["core_clock_hz"] == 1e9
    assert est["arena_cache_size_bytes"] == 384 * 1024
    # inference_time is in seconds in the CSV; cycles / clock gives the same figure.
    assert est["estimated_inference_time_us"] == pytest.approx(est["estimated_cycles_total"] / est["core_clock_hz"] * 1e6)
    assert est["sram_used_bytes"] > 0 and est["dram_used_bytes"] > 0
    assert est["nn_macs"] == 537664  # the sample's MACs per inference, as Vela counts them


def test_summary_csv_without_rows_is_an_error():
    with pytest.raises(ValueError):
        parse_summary_csv("experiment,network\n")


def test_layer_names_in_fused_tensor_names():
    name = "model_1/tf.nn.relu/Relu;model_1/tf.math.add/Add;model_1/tf.nn.convolution/convolution;Const_101"
    assert layer_names(name) == ["tf.nn.relu", "tf.math.add", "tf.nn.convolution"]
    assert layer_names("PartitionedCall:0") == []
    assert layer_names("tfl.quantize") == []


def test_every_sample_node_traces_to_the_npu():
    v = verdict("mnist_cnn")
    assert v.failed is None and v.unmapped == []
    assert len(v.nodes) == 13
    assert {n.placement for n in v.nodes.values()} == {Placement.ACCELERATOR}
    # ReLU was fused into the convolution: both nodes trace to the same CONV_2D.
    assert "CONV_2D" in v.nodes["/features/features.1/Relu"].detail
    assert v.estimates["estimated_cycles_total"] > 0 and v.estimates["cpu_operators"] == 0


def test_float_only_operator_between_npu_operators():
    v = verdict("conv_sin_softmax")
    assert v.nodes["sin1"].placement is Placement.FLOAT
    assert "SIN" in v.nodes["sin1"].detail and "CPU" in v.nodes["sin1"].detail
    for node in ("conv1", "conv2", "softmax1"):
        assert v.nodes[node].placement is Placement.ACCELERATOR, node
    # The quantiser's DEQUANTIZE/QUANTIZE around SIN belong to the Sin node, not to "unmapped".
    assert v.unmapped == []


def test_cpu_operators_are_fallback_with_vela_reason():
    v = verdict("conv_greater_where")
    assert v.nodes["greater1"].placement is Placement.FALLBACK
    assert v.nodes["where1"].placement is Placement.FALLBACK
    assert "Unsupported opType" in v.nodes["where1"].detail
    assert v.nodes["conv1"].placement is Placement.ACCELERATOR


def test_vela_error_is_a_failed_verdict():
    v = verdict("greater_bool_output")
    assert v.failed is not None and v.failed.startswith("Vela: RuntimeError")
    assert v.nodes == {}


def test_failed_conversion_is_reported_as_such():
    v = verdict_from_entry({"failed": "RuntimeError: onnx2tf: Xyz OP is not yet implemented."}, {}, [], "t", "v")
    assert v.failed.startswith("RuntimeError")


def test_graph_output_operator_traces_through_the_signature():
    data = fixture("conv_sin_softmax")
    entry = data["entry"]
    layers = {data["tokens"][k]: v for k, v in entry["layers"].items()}
    owners, unmapped = trace_ops(entry["int8_ops"], layers, data["output_producers"], [o["name"] for o in entry["onnx_outputs"]])
    last = entry["int8_ops"]["ops"][-1]
    assert last["outputs"][0]["name"] == "PartitionedCall:0"
    assert owners[last["index"]] == {"softmax1"}
    assert unmapped == []


def test_vx_list_check_marks_unlisted_operators_as_cpu():
    data = fixture("conv_greater_where")
    v = vx_verdict(data["entry"], data["tokens"], data["output_producers"], frozenset({"CONV_2D", "GREATER"}), "test")
    assert v.nodes["greater1"].placement is Placement.ACCELERATOR
    assert v.nodes["where1"].placement is Placement.FALLBACK
    assert "not in the VX delegate's list" in v.nodes["where1"].detail


def _op(index, op, inputs, output, dtype="int8"):
    tensor = lambda name, dt: {"name": name, "dtype": dt, "shape": [1, 4], "constant": False}  # noqa: E731
    return {"index": index, "op": op, "inputs": [tensor(n, "float32" if n == "tfl.dequantize" else "int8") for n in inputs], "outputs": [tensor(output, dtype)]}


def test_a_name_inside_another_operators_fused_name_does_not_move_a_node_with_its_own_operator():
    """DNSMOS's power spectrum (fresh8, onnx2tf 1.29.24 + Vela 5.2.0, the int8 .tflite read by hand):
    CONV_2D, MUL and ADD are int8 on the NPU, each named after its own layer; TensorFlow's converter
    writes the conv1d's Squeeze (moved past them), the squares and the Add into the SQRT's fused
    name. The SQRT's float placement belongs to the Sqrt alone; a layer named only inside fused
    names (no operator of its own) still takes the worst of them."""
    conv, sq, add, sqrt, view = "model/tf.nn.conv1d/conv1d", "model/tf.math.multiply/Mul", "model/tf.math.add/Add", "model/tf.math.sqrt/Sqrt", "model/tf.reshape/Reshape"
    ops = [
        _op(0, "CONV_2D", ["serving_default_x:0"], conv),
        _op(1, "MUL", [conv, conv], f"{sq};{conv}/Squeeze"),
        _op(2, "ADD", [f"{sq};{conv}/Squeeze"], f"{add};{conv}/Squeeze;{sq};{view}"),
        _op(3, "DEQUANTIZE", [f"{add};{conv}/Squeeze;{sq};{view}"], "tfl.dequantize", "float32"),
        _op(4, "SQRT", ["tfl.dequantize"], f"{sqrt};{add};{conv}/Squeeze;{sq};{view}", "float32"),
        _op(5, "QUANTIZE", [f"{sqrt};{add};{conv}/Squeeze;{sq};{view}"], "tfl.quantize"),
    ]
    layers = {"edn0": ["tf.nn.conv1d"], "edn1": ["tf.math.multiply"], "edn2": ["tf.math.add"], "edn3": ["tf.math.sqrt"], "edn4": ["tf.reshape"]}
    tokens = {"edn0": "stft", "edn1": "square", "edn2": "add", "edn3": "sqrt", "edn4": "reshape"}
    summary = fixture("conv_sin_softmax")["entry"]["vela"]
    entry = {"layers": layers, "onnx_outputs": [], "int8_ops": {"ops": ops}, "vela": summary, "failed": None}
    v = verdict_from_entry(entry, tokens, [None], toolchain="onnx2tf+vela", version="test")
    assert v.nodes["sqrt"].placement is Placement.FLOAT and "SQRT" in v.nodes["sqrt"].detail
    for node in ("stft", "square", "add"):
        assert v.nodes[node].placement is Placement.ACCELERATOR, (node, v.nodes[node].detail)
    assert v.nodes["reshape"].placement is Placement.FLOAT
