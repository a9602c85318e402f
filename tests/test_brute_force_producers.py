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
