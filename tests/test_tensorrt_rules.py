"""TensorRT GPU and Orin DLA rule tables: small models built to trip each kind of rule."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from edgedeploy.audit import Placement, audit_model
from edgedeploy.errors import OptionError
from edgedeploy.model import load_model
from edgedeploy.targets import find_chip
from edgedeploy.targets.tensorrt import op_tables
from edgedeploy.targets.tensorrt.rules import normalize_trt_version, rule_set, rule_set_variants


def _model(tmp_path, nodes, inputs, outputs, initializers=(), opset=17, name="m"):
    graph = helper.make_graph(nodes, name, inputs, outputs, initializer=list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    path = tmp_path / f"{name}.onnx"
    onnx.save(model, str(path))
    return load_model(path, {}, require_static=True)


def _vi(name, shape, dtype=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, dtype, shape)


def _init(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


def _placements(model, chip="jetson-agx-orin", precision="fp16", **variant):
    result = audit_model(model, rule_set(chip, **variant), precision)
    return {n.node: n for n in result.nodes}, result


def test_sample_on_dla_keeps_everything_but_flatten(sample_model_path):
    model = load_model(sample_model_path, {}, require_static=True)
    nodes, result = _placements(model, "jetson-orin-nx", "fp16", trt_version="8.6", dla=True)
    off = {n for n, p in nodes.items() if p.placement is not Placement.ACCELERATOR}
    # The Orin DLA README lists Flatten as "See RFE" (not exposed through TensorRT).
    assert off == {"/classifier/classifier.0/Flatten"}
    assert nodes["/classifier/classifier.0/Flatten"].placement is Placement.FALLBACK
    assert result.fallback_unit == "GPU"
    assert result.transitions == 2  # DLA -> GPU -> DLA


def test_sample_on_gpu_is_all_accelerator(sample_model_path):
    model = load_model(sample_model_path, {}, require_static=True)
    for version in ("8.5", "8.6", "10.x", "10.15"):
        nodes, result = _placements(model, "jetson-orin-nano", "fp16", trt_version=version, dla=False)
        assert result.count(Placement.ACCELERATOR) == len(nodes), version


def test_fp32_build_puts_every_dla_layer_on_the_gpu(sample_model_path):
    model = load_model(sample_model_path, {}, require_static=True)
    nodes, result = _placements(model, "jetson-agx-orin", "fp32", dla=True)
    assert result.count(Placement.ACCELERATOR) == 0
    conv = nodes["/features/features.0/Conv"]
    assert any(v.rule == "precision_not_on_accelerator" and v.value == "fp32" for v in conv.violations)


def test_orin_nano_has_no_dla():
    with pytest.raises(OptionError, match="no DLA"):
        rule_set("jetson-orin-nano", dla=True)
    assert all(not v["dla"] for v in rule_set_variants("jetson-orin-nano"))
    variants = rule_set_variants("jetson-orin-nx")
    defaults = [v for v in variants if v["default"]]
    assert len(defaults) == 1 and defaults[0]["dla"] is True and defaults[0]["trt_version"] == "10.x"
    assert {(v["trt_version"], v["dla"]) for v in variants} >= {("8.5", True), ("8.6", False), ("10.15", True)}


def test_target_rule_set_passes_variants_through():
    target, _chip = find_chip("jetson-orin-nx")
    rs = target.rule_set("jetson-orin-nx", trt_version="8.5", dla=False)
    assert "8.5" in rs.toolchain_version and "DLA" not in rs.toolchain_version


@pytest.mark.parametrize(
    "given, expected",
    [("8.6.2.3", "8.6"), ("8.5.2", "8.5"), ("10.3.0", "10.x"), ("10.16.2", "10.15"), ("auto", "10.x"), (None, "10.x"), ("v10.1", "10.x")],
)
def test_version_normalisation(given, expected):
    assert normalize_trt_version(given) == expected


def test_unknown_versions_are_refused():
    with pytest.raises(OptionError):
        normalize_trt_version("7.1")
    with pytest.raises(OptionError):
        normalize_trt_version("eleven")


def test_op_tables_differ_where_the_documents_differ():
    # HardSwish: N in 8.5, Y in 8.6 (onnx-tensorrt release/8.5-GA vs release/8.6-GA).
    assert "HardSwish" not in op_tables.GPU_OPS["8.5"] and "HardSwish" in op_tables.GPU_OPS["8.6"]
    # STFT: N in 10.1, Y (FP32 only) in 10.15.
    assert "STFT" in op_tables.GPU_UNSUPPORTED["10.1"] and op_tables.GPU_OPS["10.15"]["STFT"] == ("fp32",)
    assert op_tables.GPU_OPSETS["10.1"] == (9, 20) and op_tables.GPU_OPSETS["8.6"] == (1, 17)


def test_unsupported_gpu_op_fails_the_build(tmp_path):
    model = _model(
        tmp_path,
        [helper.make_node("HardSwish", ["x"], ["y"], name="hs")],
        [_vi("x", [1, 8, 4, 4])],
        [_vi("y", [1, 8, 4, 4])],
    )
    on85, _ = _placements(model, "jetson-orin-nano", trt_version="8.5")
    on86, _ = _placements(model, "jetson-orin-nano", trt_version="8.6")
    assert on85["hs"].placement is Placement.UNSUPPORTED
    assert on86["hs"].placement is Placement.ACCELERATOR


def test_opset_above_the_table_is_unsupported(tmp_path):
    model = _model(
        tmp_path,
        [helper.make_node("Relu", ["x"], ["y"], name="r")],
        [_vi("x", [1, 4])],
        [_vi("y", [1, 4])],
        opset=18,
    )
    nodes, _ = _placements(model, "jetson-orin-nano", trt_version="8.6")
    assert nodes["r"].placement is Placement.UNSUPPORTED
    assert nodes["r"].violations[0].value == 18
    nodes, _ = _placements(model, "jetson-orin-nano", trt_version="10.x")
    assert nodes["r"].placement is Placement.ACCELERATOR


def test_fp32_only_op_runs_in_float_on_an_fp16_gpu_build(tmp_path):
    # TensorRT 8.5's table: ConstantOfShape FP32 only; Conv has FP16 and INT8.
    model = _model(
        tmp_path,
        [helper.make_node("ConstantOfShape", ["shape"], ["y"], name="cos", value=helper.make_tensor("v", TensorProto.FLOAT, [1], [1.0]))],
        [],
        [_vi("y", [2, 3])],
        initializers=[_init("shape", np.array([2, 3], dtype=np.int64))],
    )
    nodes, _ = _placements(model, "jetson-orin-nano", "fp16", trt_version="8.5")
    assert nodes["cos"].placement is Placement.FLOAT


def _conv_model(tmp_path, kernel, stride=1, pads=0, dilation=1, out_channels=8, name="conv"):
    side = (64 + 2 * pads - dilation * (kernel - 1) - 1) // stride + 1
    w = np.zeros((out_channels, 4, kernel, kernel), dtype=np.float32)
    node = helper.make_node(
        "Conv", ["x", "w"], ["y"], name="conv", kernel_shape=[kernel, kernel], strides=[stride, stride],
        pads=[pads] * 4, dilations=[dilation, dilation],
    )
    return _model(tmp_path, [node], [_vi("x", [1, 4, 64, 64])], [_vi("y", [1, out_channels, side, side])], [_init("w", w)], name=name)


def test_dla_convolution_limits(tmp_path):
    ok, _ = _placements(_conv_model(tmp_path, 3, pads=1, name="ok"), dla=True)
    assert ok["conv"].placement is Placement.ACCELERATOR
    big, _ = _placements(_conv_model(tmp_path, 33, name="k33"), dla=True)
    assert big["conv"].placement is Placement.FALLBACK
    assert any(v.rule == "dla_convolution_limits" and v.detail == "kernel size" for v in big["conv"].violations)
    stride, _ = _placements(_conv_model(tmp_path, 3, stride=9, name="s9"), dla=True)
    assert [v.value for v in stride["conv"].violations if v.detail == "stride"] == [[9, 9]]
    pad, _ = _placements(_conv_model(tmp_path, 3, pads=3, name="p3"), dla=True)  # padding must be < kernel
    assert any(v.detail == "padding" for v in pad["conv"].violations)
    maps, _ = _placements(_conv_model(tmp_path, 1, out_channels=8193, name="m"), dla=True)
    assert any(v.rule == "dla_output_maps_and_groups" and v.value == 8193 for v in maps["conv"].violations)
    # The same convolutions all stay on the GPU when DLA is off.
    gpu, _ = _placements(_conv_model(tmp_path, 33, name="k33gpu"), dla=False)
    assert gpu["conv"].placement is Placement.ACCELERATOR


def test_dla_pooling_and_concat_and_gemm(tmp_path):
    nodes = [
        helper.make_node("MaxPool", ["x"], ["p"], name="pool_big", kernel_shape=[9, 9], strides=[1, 1]),
        helper.make_node("MaxPool", ["x"], ["q"], name="pool_ok", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Concat", ["x", "x"], ["c"], name="cat_h", axis=2),
        helper.make_node("Concat", ["x", "x"], ["d"], name="cat_c", axis=1),
        helper.make_node("Flatten", ["q"], ["f"], name="flat"),
        helper.make_node("MatMul", ["f", "f2"], ["mm"], name="mm_runtime"),
    ]
    model = _model(
        tmp_path,
        nodes,
        [_vi("x", [1, 4, 16, 16]), _vi("f2", [256, 256])],
        [_vi("p", [1, 4, 8, 8]), _vi("c", [1, 4, 32, 16]), _vi("d", [1, 8, 16, 16]), _vi("mm", [1, 256])],
    )
    placed, _ = _placements(model, dla=True)
    assert placed["pool_big"].placement is Placement.FALLBACK
    assert placed["pool_ok"].placement is Placement.ACCELERATOR
    assert placed["cat_h"].placement is Placement.FALLBACK
    assert placed["cat_c"].placement is Placement.ACCELERATOR
    assert placed["mm_runtime"].placement is Placement.FALLBACK
    assert any(v.rule == "dla_fully_connected_needs_constant_weights" for v in placed["mm_runtime"].violations)


def test_dla_version_gating_of_late_ops(tmp_path):
    # README: Div "Native (as of TensorRT 8.6.12)": a DRIVE OS release; Jetson 8.6 is 8.6.2.
    model = _model(
        tmp_path,
        [helper.make_node("Div", ["x", "y"], ["z"], name="div")],
        [_vi("x", [1, 4, 8, 8]), _vi("y", [1, 4, 8, 8])],
        [_vi("z", [1, 4, 8, 8])],
    )
    on86, _ = _placements(model, trt_version="8.6", dla=True)
    on10, _ = _placements(model, trt_version="10.x", dla=True)
    assert on86["div"].placement is Placement.FALLBACK
    assert on10["div"].placement is Placement.ACCELERATOR


def test_dla_comparison_is_int8_only(tmp_path):
    model = _model(
        tmp_path,
        [helper.make_node("Equal", ["x", "y"], ["z"], name="eq")],
        [_vi("x", [1, 4, 8, 8]), _vi("y", [1, 4, 8, 8])],
        [_vi("z", [1, 4, 8, 8], TensorProto.BOOL)],
    )
    fp16, _ = _placements(model, precision="fp16", dla=True)
    int8, _ = _placements(model, precision="int8", dla=True)
    assert fp16["eq"].placement is Placement.FALLBACK
    assert int8["eq"].placement is Placement.ACCELERATOR


def test_dla_resize_scales_and_modes(tmp_path):
    def resize(name, scales, **attrs):
        return _model(
            tmp_path,
            [helper.make_node("Resize", ["x", "", "s"], ["y"], name="rs", **attrs)],
            [_vi("x", [1, 4, 8, 8])],
            [_vi("y", [int(a * b) for a, b in zip([1, 4, 8, 8], scales)])],
            [_init("s", np.array(scales, dtype=np.float32))],
            name=name,
        )

    ok, _ = _placements(resize("ok", [1, 1, 2, 2], mode="nearest", coordinate_transformation_mode="asymmetric", nearest_mode="floor"), dla=True)
    assert ok["rs"].placement is Placement.ACCELERATOR
    frac, _ = _placements(resize("frac", [1, 1, 1.5, 1.5], mode="nearest", coordinate_transformation_mode="asymmetric", nearest_mode="floor"), dla=True)
    assert frac["rs"].placement is Placement.FALLBACK
    lin, _ = _placements(resize("lin", [1, 1, 8, 8], mode="linear"), dla=True)  # linear scales limited to 1..4
    assert any(v.detail == "H/W scales" for v in lin["rs"].violations)
    cubic, _ = _placements(resize("cubic", [1, 1, 2, 2], mode="cubic"), dla=False)
    assert cubic["rs"].placement is Placement.UNSUPPORTED


def test_dla_slice_first_dimension_and_rank(tmp_path):
    nodes = [
        helper.make_node("Slice", ["x", "st", "en", "ax"], ["y"], name="slice_c"),
        helper.make_node("Slice", ["x", "st", "en", "ax0"], ["z"], name="slice_n"),
    ]
    model = _model(
        tmp_path,
        nodes,
        [_vi("x", [2, 8, 4, 4])],
        [_vi("y", [2, 1, 4, 4]), _vi("z", [1, 8, 4, 4])],
        [
            _init("st", np.array([0], dtype=np.int64)),
            _init("en", np.array([1], dtype=np.int64)),
            _init("ax", np.array([1], dtype=np.int64)),
            _init("ax0", np.array([0], dtype=np.int64)),
        ],
    )
    placed, _ = _placements(model, dla=True)
    assert placed["slice_c"].placement is Placement.ACCELERATOR
    assert placed["slice_n"].placement is Placement.FALLBACK


def test_gpu_constant_input_rule_is_per_version(tmp_path):
    # 10.x (table of 10.1) needs ReduceMean axes as an initializer; 8.6's table says nothing.
    nodes = [helper.make_node("ReduceMean", ["x", "axes"], ["y"], name="rm")]
    model = _model(tmp_path, nodes, [_vi("x", [1, 4, 8]), _vi("axes", [1], TensorProto.INT64)], [_vi("y", [1, 1, 8])], opset=18)
    on10, _ = _placements(model, "jetson-orin-nano", trt_version="10.x")
    assert on10["rm"].placement is Placement.UNSUPPORTED
    assert on10["rm"].violations[0].rule == "input_must_be_build_time_constant"
    assert on10["rm"].violations[0].value == "axes"


def test_dla_dynamic_shapes_fall_back(tmp_path):
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"], name="r")],
        "dyn",
        [_vi("x", [1, "c", 8, 8])],
        [_vi("y", [1, "c", 8, 8])],
    )
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    proto.ir_version = 8
    path = tmp_path / "dyn.onnx"
    onnx.save(proto, str(path))
    model = load_model(path, {}, require_static=False)
    placed, _ = _placements(model, dla=True)
    assert placed["r"].placement is Placement.FALLBACK
    assert placed["r"].violations[0].rule == "dla_static_shapes_only"


def test_rule_sentences_cite_limits():
    rs = rule_set("jetson-agx-orin", dla=True)
    sentences = {r.name: r.sentence for r in rs.rules}
    assert "1, 32" in sentences["dla_convolution_limits"]
    assert "4096" in sentences["dla_batch_and_dimension_limits"]
    assert "onnx-tensorrt" in rs.source and "Deep-Learning-Accelerator-SW" in rs.source
