"""The brute force's second form (scripts/accuracy/brute_force.py --with-producers): each node kept in
float together with the nodes producing its data inputs. On blazeface_short_range/rk3588 the tensor
between Conv_76 and Conv_77 stays int8 unless both are float16, so Conv_77 alone gained nothing
(docs/accuracy.md, brute force)."""
import onnx
from onnx import helper, numpy_helper
import numpy as np


def _graph():
    """x -> conv_a -> relu (fused by the toolkit: no layer of its own) -> conv_b -> add(conv_b, conv_a) -> y."""
    weight = numpy_helper.from_array(np.ones((1, 1, 1, 1), np.float32), "w")
    nodes = [helper.make_node("Conv", ["x", "w"], ["a"], name="conv_a"), helper.make_node("Relu", ["a"], ["r"], name="relu"),
             helper.make_node("Conv", ["r", "w"], ["b"], name="conv_b"), helper.make_node("Add", ["b", "a"], ["y"], name="add")]
    return helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 1, 4, 4])],
                             [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)], initializer=[weight])


def test_a_node_is_kept_float_with_the_producers_of_its_data_inputs():
    from edgedeploy.targets.brute_force import with_producers

    members = {"conv_a": ["a"], "relu": [], "conv_b": ["b", "b-rs"], "add": ["y"]}
    found = with_producers(members, _graph())
    # the weight initialiser is no producer; the fused Relu stands for the Conv that computes its input
    assert found["conv_a"] == ["a"]
    assert found["conv_b"] == ["b", "b-rs", "a"]
    assert found["add"] == ["y", "b", "b-rs", "a"]


def test_rknn_groups_with_producers_hold_the_producers_layers_even_when_only_one_node_is_measured():
    from edgedeploy.targets.rknn.diagnose import _measured_groups

    layers = ["a", "b", "y", "x_int8", "y_int8"]
    assert _measured_groups(layers, _graph(), ["conv_b"], False) == [{"node": "conv_b", "layers": ["b"]}]
    assert _measured_groups(layers, _graph(), ["conv_b"], True) == [{"node": "conv_b", "layers": ["b", "a"]}]


def test_eiq_tokens_with_producers_hold_the_producers_tokens():
    from edgedeploy.targets.eiq.diagnose import _measured_tokens

    tokens = {"t0": "conv_a", "t1": "conv_b", "t2": "add"}
    assert _measured_tokens(tokens, _graph(), ["conv_b"], False) == {"conv_b": ["t1"]}
    assert _measured_tokens(tokens, _graph(), ["conv_b"], True) == {"conv_b": ["t1", "t0"]}


def _quantised_readers(tmp_path, kept: list[str]) -> dict:
    """The QDQ model ONNX Runtime makes with `kept` left out of quantisation: per node, whether each of
    its run-time inputs comes from a DequantizeLinear (a rounded tensor)."""
    from onnxruntime.quantization import CalibrationMethod, QuantFormat, QuantType, quantize_static

    class Reader:
        def __init__(self):
            self.feeds = iter([{"x": np.random.default_rng(i).standard_normal((1, 1, 4, 4)).astype(np.float32)} for i in range(4)])

        def get_next(self):
            return next(self.feeds, None)

    source, out = tmp_path / "m.onnx", tmp_path / "q.onnx"
    onnx.save(helper.make_model(_graph(), opset_imports=[helper.make_opsetid("", 13)]), source)
    quantize_static(str(source), str(out), Reader(), quant_format=QuantFormat.QDQ, activation_type=QuantType.QUInt8,
                    weight_type=QuantType.QInt8, per_channel=False, calibrate_method=CalibrationMethod.MinMax, nodes_to_exclude=kept)
    graph = onnx.load(str(out)).graph
    writer = {o: n.op_type for n in graph.node for o in n.output}
    return {n.name: [writer.get(i) == "DequantizeLinear" for i in n.input[:1]] for n in graph.node if n.name in {"conv_a", "relu", "conv_b", "add"}}


def test_on_the_qdq_path_a_node_reads_float_only_with_its_writers_left_out_too(tmp_path):
    """ONNX Runtime's QDQ format rounds a tensor once for all its readers: conv_b left out alone still
    reads relu's rounded output; left out with its writer (brute_force.py --with-producers, no --chip),
    it reads float."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location("brute_force", Path(__file__).parents[1] / "scripts" / "accuracy" / "brute_force.py")
    brute = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(brute)
    alone = _quantised_readers(tmp_path, ["conv_b"])
    assert alone["conv_b"] == [True], alone
    kept = brute.kept_float(helper.make_model(_graph()), producers=True)["conv_b"]
    assert kept == ["conv_b", "relu"]
    assert _quantised_readers(tmp_path, kept)["conv_b"] == [False]
