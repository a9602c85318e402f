"""ESP-DL's rule table: small models built here trip each kind of rule, on the chip it applies to."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

from edgedeploy.audit import Placement, audit_model
from edgedeploy.model import load_model
from edgedeploy.targets import find_chip
from tests.helpers import const, make_model, save, tensor

W3 = np.zeros((4, 4, 3, 3), np.float32)


def single(op, inputs, outputs, inits=(), opset=13, ir=None, **attrs):
    """A model of one node named 'n': inputs/outputs are ValueInfos, inits initializers."""
    node = helper.make_node(op, [i.name if hasattr(i, "name") else i for i in inputs], [o.name if o else "" for o in outputs], name="n", **attrs)
    graph_inputs = [i for i in inputs if hasattr(i, "type")]
    model = make_model([node], graph_inputs, [o for o in outputs if o], list(inits), opset=opset)
    if ir is not None:
        model.ir_version = ir
    return model


def x4(name="x", shape=(1, 4, 8, 8), dtype=TensorProto.FLOAT):
    return tensor(name, list(shape), dtype)


# (id, model builder, chip, precision, expected placement, expected rule, expected value)
CASES = [
    ("operator without an ESP-DL module", lambda: single("Sin", [x4()], [x4("y")]), "esp32s3", "int8", Placement.UNSUPPORTED, "operator_unsupported", "Sin"),
    ("Log kept in float at 8 bits", lambda: single("Log", [x4()], [x4("y")]), "esp32p4", "int8", Placement.FLOAT, "operator_float_only", "int8"),
    ("Resize has no int16 kernel", lambda: single("Resize", [x4(), "", "scales"], [tensor("y", 4)], [const("scales", np.array([1, 1, 2, 2], np.float32))], mode="nearest"), "esp32s3", "int16", Placement.UNSUPPORTED, "precision_unsupported", "int16"),
    # ESP-DL merges the axes both operands agree on: broadcasting on alternate axes leaves 5 of them.
    ("Add of 5-D tensors", lambda: single("Add", [x4(shape=(2, 1, 2, 1, 2)), x4("z", (1, 2, 1, 2, 1))], [tensor("y", 5)]), "esp32s3", "int8", Placement.UNSUPPORTED, "at_most_4d", 5),
    ("3-D convolution", lambda: single("Conv", [x4(shape=(1, 4, 4, 4, 4)), "w"], [tensor("y", 5)], [const("w", np.zeros((4, 4, 1, 1, 1), np.float32))]), "esp32s3", "int8", Placement.UNSUPPORTED, "spatial_1d_or_2d", 3),
    # edgedeploy writes a grouped Conv with constant weights as a block-diagonal group-1 Conv (grouped_conv.py).
    ("grouped convolution", lambda: single("Conv", [x4(), "w"], [tensor("y", 4)], [const("w", np.zeros((4, 2, 3, 3), np.float32))], group=2, pads=[1, 1, 1, 1]), "esp32p4", "int8", Placement.ACCELERATOR, "grouped_conv_written_block_diagonal", 2),
    ("depthwise convolution with a channel multiplier", lambda: single("Conv", [x4(), "w"], [tensor("y", 4)], [const("w", np.zeros((8, 1, 3, 3), np.float32))], group=4, pads=[1, 1, 1, 1]), "esp32s3", "int8", Placement.ACCELERATOR, "grouped_conv_written_block_diagonal", 4),
    ("grouped convolution with run-time weights", lambda: single("Conv", [x4(), x4("w", (4, 2, 3, 3))], [tensor("y", 4)], group=2, pads=[1, 1, 1, 1]), "esp32s3", "int8", Placement.UNSUPPORTED, "conv_group_1_or_depthwise", 2),
    ("dilated max pooling", lambda: single("MaxPool", [x4()], [tensor("y", 4)], kernel_shape=[2, 2], dilations=[2, 2]), "esp32s3", "int8", Placement.UNSUPPORTED, "pool_without_dilation", [2, 2]),
    ("pad in wrap mode", lambda: single("Pad", [x4(), "pads"], [tensor("y", 4)], [const("pads", np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64))], opset=19, mode="wrap"), "esp32s3", "int8", Placement.UNSUPPORTED, "pad_not_wrap", "wrap"),
    ("cubic resize", lambda: single("Resize", [x4(), "", "scales"], [tensor("y", 4)], [const("scales", np.array([1, 1, 2, 2], np.float32))], mode="cubic"), "esp32s3", "int8", Placement.UNSUPPORTED, "resize_limits", "cubic"),
    ("Mod with fmod=0", lambda: single("Mod", [x4(), x4("z")], [x4("y")], fmod=0), "esp32s3", "int8", Placement.UNSUPPORTED, "mod_c_style", 0),
    ("Clip bound given at run time", lambda: single("Clip", [x4(), tensor("lo", [])], [x4("y")]), "esp32s3", "int8", Placement.UNSUPPORTED, "parameters_are_constant", "min"),
    ("Conv weights at run time on the P4", lambda: single("Conv", [x4(), x4("w", (4, 4, 3, 3))], [tensor("y", 4)], pads=[1, 1, 1, 1]), "esp32p4", "int8", Placement.UNSUPPORTED, "parameters_are_constant", "W"),
    ("Clip with both bounds skipped", lambda: single("Clip", [x4(), "", ""], [x4("y")]), "esp32s3", "int8", Placement.UNSUPPORTED, "clip_skipped_bounds", "both bounds skipped"),
    ("int8 activations", lambda: single("Add", [x4(dtype=TensorProto.INT8), x4("z", dtype=TensorProto.INT8)], [x4("y", dtype=TensorProto.INT8)], opset=14), "esp32s3", "int8", Placement.UNSUPPORTED, "float32_activations", "int8"),
    ("uint32 input even to a float operator", lambda: single("Pow", [x4(), x4("e", dtype=TensorProto.UINT32)], [x4("y")], opset=15), "esp32s3", "int8", Placement.UNSUPPORTED, "dtypes_esp_ppq_knows", "uint32"),
    ("MaxPool with Indices", lambda: single("MaxPool", [x4()], [tensor("y", 4), tensor("i", 4, TensorProto.INT64)], kernel_shape=[2, 2]), "esp32s3", "int8", Placement.UNSUPPORTED, "maxpool_without_indices", "Indices output"),
    ("empty tensor", lambda: single("Relu", [x4(shape=(0, 3))], [tensor("y", 2)]), "esp32s3", "int8", Placement.UNSUPPORTED, "no_empty_tensors", [0, 3]),
    ("reduction with default keepdims", lambda: single("ReduceMean", [x4(), "axes"], [tensor("y", 4)], [const("axes", np.array([2, 3], np.int64))], opset=18), "esp32s3", "int8", Placement.UNSUPPORTED, "reduce_keepdims_explicit", "keepdims not set"),
    ("pooling pads over half the kernel", lambda: single("AveragePool", [x4()], [tensor("y", 4)], kernel_shape=[3, 3], pads=[2, 2, 2, 2]), "esp32s3", "int8", Placement.UNSUPPORTED, "pool_pads_at_most_half_kernel", 2),
    ("LayerNormalization over a middle axis", lambda: single("LayerNormalization", [x4(shape=(2, 3, 4)), "s"], [tensor("y", 3)], [const("s", np.ones((3, 4), np.float32))], opset=17, axis=1), "esp32s3", "int8", Placement.UNSUPPORTED, "layernorm_last_axis_output_only", 1),
    ("GRU with linear_before_reset 0", lambda: single("GRU", [x4(shape=(2, 1, 3)), "w", "r"], [tensor("y", 4)], [const("w", np.zeros((1, 15, 3), np.float32)), const("r", np.zeros((1, 15, 5), np.float32))], hidden_size=5), "esp32s3", "int8", Placement.UNSUPPORTED, "recurrent_forms", "linear_before_reset 0"),
    ("PRelu slope broadcast over the last axis", lambda: single("PRelu", [x4(shape=(3, 4, 5)), "slope"], [tensor("y", 3)], [const("slope", np.ones((5,), np.float32))]), "esp32s3", "int8", Placement.UNSUPPORTED, "prelu_per_channel_slope", [5]),
    ("dot product MatMul", lambda: single("MatMul", [x4(shape=(3,)), x4("z", (3,))], [tensor("y", 0)]), "esp32s3", "int8", Placement.UNSUPPORTED, "matmul_not_both_1d", [1, 1]),
    ("IR version newer than esp-ppq's onnx", lambda: single("Relu", [x4()], [x4("y")], opset=21, ir=13), "esp32s3", "int8", Placement.UNSUPPORTED, "ir_version_too_new", 13),
]


@pytest.mark.parametrize("builder,chip,precision,placement,rule_name,value", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_each_rule_trips_with_its_value(tmp_path, builder, chip, precision, placement, rule_name, value):
    target, _ = find_chip(chip)
    model = load_model(save(builder(), tmp_path / "m.onnx"))
    node = audit_model(model, target.rule_set(chip), precision).nodes[0]
    assert node.placement is placement
    matching = [v for v in node.violations if v.rule == rule_name]
    assert matching, f"expected {rule_name}, got {[v.rule for v in node.violations]}"
    v = matching[0]
    assert v.value == value and v.node == "n" and v.placement is placement
    assert node.reason  # the user reads a sentence, never a bare flag


def test_conv_weights_at_run_time_are_fine_on_the_s3(tmp_path):
    # esp-ppq quantises the S3's Conv weights per tensor, which works with run-time weights.
    model = single("Conv", [x4(), x4("w", (4, 4, 3, 3))], [tensor("y", 4)], pads=[1, 1, 1, 1])
    target, _ = find_chip("esp32s3")
    node = audit_model(load_model(save(model, tmp_path / "m.onnx")), target.rule_set("esp32s3"), "int8").nodes[0]
    assert node.placement is Placement.ACCELERATOR


def test_good_nodes_stay_on_the_accelerator(tmp_path):
    target, _ = find_chip("esp32p4")
    rules = target.rule_set("esp32p4")
    good = [
        single("Conv", [x4(), "w"], [tensor("y", 4)], [const("w", W3)], pads=[1, 1, 1, 1]),
        single("Conv", [x4(), "w"], [tensor("y", 4)], [const("w", np.zeros((4, 1, 3, 3), np.float32))], group=4, pads=[1, 1, 1, 1]),  # depthwise
        single("Clip", [x4(), "lo", "hi"], [x4("y")], [const("lo", np.array(0, np.float32)), const("hi", np.array(6, np.float32))]),
        single("ReduceMean", [x4(), "axes"], [tensor("y", 4)], [const("axes", np.array([2, 3], np.int64))], opset=18, keepdims=1),
        single("Log", [x4()], [x4("y")]),
        single("Identity", [x4()], [x4("y")]),
        single("Clip", [x4()], [x4("y")]),  # no bounds at all: esp-ppq exports it
    ]
    for i, model in enumerate(good):
        node = audit_model(load_model(save(model, tmp_path / f"g{i}.onnx")), rules, "int16").nodes[0]
        assert node.placement is Placement.ACCELERATOR, (node.op_type, [v.rule for v in node.violations])


def test_rule_set_covers_both_chips_and_rejects_others():
    target, _ = find_chip("esp32s3")
    for chip in ("esp32s3", "esp32p4"):
        rules = target.rule_set(chip)
        assert rules.chip == chip and "3.3.9" in rules.toolchain_version and "operator_support_state.md" in rules.source
        assert rules.fallback_ops == frozenset() and rules.folds_constants
    with pytest.raises(KeyError):
        target.rule_set("esp32")


def test_every_rule_sentence_names_its_limits():
    import edgedeploy.targets.espdl.rules as espdl

    assert "4 dimensions" in espdl.at_most_4d.sentence
    assert "nearest, linear" in espdl.resize_limits.sentence
    for r in espdl.RULES:
        assert "{" not in r.sentence and r.sentence.endswith(".")


def test_esp_dl_counts_the_dimensions_it_merges():
    """ESP-DL 3.3.9's element-wise kernels (dl_base_elemwise.cpp) merge the axes both operands
    agree on, its reductions (dl_module_reduce_base.hpp) neighbouring axes all reduced or all kept,
    and each runs up to 4 merged axes: a 5-D node is refused only when more are left."""
    from edgedeploy.targets.espdl.rules import elementwise_merged_axes, reduction_merged_axes

    assert elementwise_merged_axes([1, 2, 3, 4, 5], [1, 2, 3, 4, 5], [1, 2, 3, 4, 5]) == 1
    assert elementwise_merged_axes([1, 2, 80, 10, 10], [1, 2, 1, 10, 10], [1, 2, 80, 10, 10]) == 3  # YOLO-World's text attention
    assert elementwise_merged_axes([2, 1, 4, 1, 6], [1, 3, 1, 5, 1], [2, 3, 4, 5, 6]) == 5
    assert reduction_merged_axes(5, [-2]) == 3  # Nystromformer's landmarks: [N*h*L, k, d], the middle reduced
    assert reduction_merged_axes(5, [0, 2, 4]) == 5
    assert reduction_merged_axes(5, None) == 1


def test_a_5d_node_whose_dimensions_merge_runs(tmp_path):
    target, _ = find_chip("esp32s3")
    same = single("Add", [x4(shape=(1, 2, 2, 2, 2)), x4("z", (1, 2, 2, 2, 2))], [tensor("y", 5)])
    node = audit_model(load_model(save(same, tmp_path / "m.onnx")), target.rule_set("esp32s3"), "int8").nodes[0]
    assert node.placement is Placement.ACCELERATOR
