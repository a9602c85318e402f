"""Small ONNX models for the eIQ tests: real-model forms (constant weights and parameters) that
trip the rules of targets/eiq/rules.py, built here with onnx.helper (no files)."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

RNG = np.random.default_rng(0)


def _w(name, *shape, scale=0.3):
    return numpy_helper.from_array((RNG.standard_normal(shape) * scale).astype(np.float32), name)


def _c(name, values, dtype=np.int64):
    return numpy_helper.from_array(np.asarray(values, dtype=dtype), name)


def _model(nodes, inputs, outputs, inits, opset=13):
    """A checked model whose output shapes come from ONNX shape inference."""
    names = [name for name, _ in outputs]
    graph = helper.make_graph(nodes, "g", inputs, [], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    known = {vi.name: vi for vi in inferred.graph.value_info}
    model.graph.output.extend(known[name] for name in names)
    onnx.checker.check_model(model, full_check=True)
    return model


def _in(name, *shape, dtype=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, dtype, list(shape))


def _out(name, dtype=TensorProto.FLOAT):
    return (name, dtype)  # type and shape come from shape inference


def cnn_block() -> onnx.ModelProto:
    """Conv-BN-ReLU, pooling, depthwise conv with ReLU6 (Clip), head: everything on the NPU."""
    n = helper.make_node
    nodes = [
        n("Conv", ["x", "w1", "b1"], ["c1"], name="conv", pads=[1, 1, 1, 1]),
        n("BatchNormalization", ["c1", "s", "bb", "m", "v"], ["bn"], name="bn"),
        n("Relu", ["bn"], ["r1"], name="relu"),
        n("MaxPool", ["r1"], ["p1"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
        n("Conv", ["p1", "wd"], ["dw"], name="depthwise", group=8, pads=[1, 1, 1, 1]),
        n("Clip", ["dw", "lo", "hi"], ["r6"], name="relu6"),
        n("GlobalAveragePool", ["r6"], ["gap"], name="gap"),
        n("Flatten", ["gap"], ["f"], name="flatten"),
        n("Gemm", ["f", "wf", "bf"], ["logits"], name="fc", transB=1),
        n("Softmax", ["logits"], ["y"], name="softmax", axis=1),
    ]
    inits = [
        _w("w1", 8, 3, 3, 3), _w("b1", 8), _w("s", 8), _w("bb", 8), _w("m", 8), numpy_helper.from_array(np.ones(8, np.float32), "v"),
        _w("wd", 8, 1, 3, 3), numpy_helper.from_array(np.float32(0), "lo"), numpy_helper.from_array(np.float32(6), "hi"),
        _w("wf", 10, 8), _w("bf", 10),
    ]
    return _model(nodes, [_in("x", 1, 3, 16, 16)], [_out("y")], inits)


def float_island() -> onnx.ModelProto:
    """Conv, then Sin (no int8 kernel: float on the CPU), then Conv and LogSoftmax (CPU on the i.MX 93)."""
    n = helper.make_node
    nodes = [
        n("Conv", ["x", "w1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        n("Sin", ["c1"], ["s"], name="sin"),
        n("Conv", ["s", "w2"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
        n("LogSoftmax", ["c2"], ["y"], name="logsoftmax", axis=1),
    ]
    return _model(nodes, [_in("x", 1, 3, 8, 8)], [_out("y")], [_w("w1", 4, 3, 3, 3), _w("w2", 4, 4, 3, 3)])


def decoder_block() -> onnx.ModelProto:
    """Resize 2x (NPU), a 3x resize (CPU: not a power of two), Pad, Concat, SiLU."""
    n = helper.make_node
    nodes = [
        n("Resize", ["x", "", "s2"], ["up2"], name="resize2x", mode="nearest"),
        n("Resize", ["x", "", "s3"], ["up3"], name="resize3x", mode="nearest"),
        n("Conv", ["up3", "w3"], ["c3"], name="conv3"),
        n("Concat", ["up2", "c3"], ["cat"], name="concat", axis=1),
        n("Pad", ["cat", "pads"], ["padded"], name="pad", mode="constant"),
        n("Sigmoid", ["padded"], ["sig"], name="sigmoid"),
        n("Mul", ["padded", "sig"], ["y"], name="silu_mul"),
    ]
    inits = [
        numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "s2"),
        numpy_helper.from_array(np.array([1, 1, 3, 3], np.float32), "s3"),
        _w("w3", 4, 4, 7, 7, scale=0.05),
        _c("pads", [0, 0, 1, 1, 0, 0, 1, 1]),
    ]
    return _model(nodes, [_in("x", 1, 4, 6, 6)], [_out("y")], inits)


def argmax_head() -> onnx.ModelProto:
    """ArgMax over channels (the NPU's depth axis) and over width (CPU), as int64 outputs."""
    n = helper.make_node
    nodes = [
        n("Conv", ["x", "w"], ["c"], name="conv"),
        n("ArgMax", ["c"], ["am_c"], name="argmax_channels", axis=1, keepdims=1),
        n("ArgMax", ["c"], ["am_w"], name="argmax_width", axis=3, keepdims=1),
    ]
    return _model(nodes, [_in("x", 1, 3, 8, 8)], [_out("am_c", TensorProto.INT64), _out("am_w", TensorProto.INT64)], [_w("w", 6, 3, 1, 1)])


def boolean_output() -> onnx.ModelProto:
    """A boolean model output: Vela 5.2.0 stops with an error."""
    n = helper.make_node
    nodes = [n("Relu", ["x"], ["r"], name="relu"), n("Greater", ["r", "t"], ["y"], name="greater")]
    return _model(nodes, [_in("x", 1, 8, 8, 4)], [_out("y", TensorProto.BOOL)], [numpy_helper.from_array(np.array([0.5], np.float32), "t")])


def dynamic_conv_weight() -> onnx.ModelProto:
    """Conv whose weights are a model input: onnx2tf cannot convert it."""
    n = helper.make_node
    return _model([n("Conv", ["x", "w"], ["y"], name="conv")], [_in("x", 1, 3, 8, 8), _in("w", 4, 3, 3, 3)], [_out("y")], [])


def unconvertible() -> onnx.ModelProto:
    """Erf needs TensorFlow's Flex delegate: the int8 conversion fails."""
    n = helper.make_node
    nodes = [n("Conv", ["x", "w"], ["c"], name="conv"), n("Erf", ["c"], ["y"], name="erf")]
    return _model(nodes, [_in("x", 1, 3, 8, 8)], [_out("y")], [_w("w", 4, 3, 1, 1)])


MODELS = {
    "cnn_block": cnn_block,
    "float_island": float_island,
    "decoder_block": decoder_block,
    "argmax_head": argmax_head,
    "boolean_output": boolean_output,
    "dynamic_conv_weight": dynamic_conv_weight,
    "unconvertible": unconvertible,
}
