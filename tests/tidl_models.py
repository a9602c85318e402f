"""Small ONNX models for the TIDL tests, built with onnx.helper (shared by several test files)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from edgedeploy.model import load_model

_NP_TO_ONNX = {np.dtype("float32"): TensorProto.FLOAT, np.dtype("int64"): TensorProto.INT64, np.dtype("int8"): TensorProto.INT8}


def f32(*shape, value=None, seed=0):
    if value is not None:
        return np.full(shape, value, dtype=np.float32)
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def i64(*values):
    return np.asarray(values, dtype=np.int64)


def make_model(
    nodes: list[onnx.NodeProto],
    inputs: dict[str, tuple],
    inits: dict[str, np.ndarray] | None = None,
    outputs: list[str] | None = None,
    opset: int = 17,
    input_types: dict[str, int] | None = None,
    output_shapes: dict[str, tuple] | None = None,
) -> onnx.ModelProto:
    """A model of `nodes`; graph inputs float32 unless `input_types` says otherwise; outputs shape-inferred."""
    inits = inits or {}
    input_types = input_types or {}
    outputs = outputs or [nodes[-1].output[0]]
    graph = helper.make_graph(
        nodes,
        "tidl_case",
        [helper.make_tensor_value_info(n, input_types.get(n, TensorProto.FLOAT), list(s)) for n, s in inputs.items()],
        [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None) for o in outputs],
        initializer=[numpy_helper.from_array(v, n) for n, v in inits.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    # Let ONNX fill the output types, so the checker is satisfied before intake runs.
    inferred = onnx.shape_inference.infer_shapes(model)
    del model.graph.output[:]
    model.graph.output.extend(inferred.graph.output)
    # Where ONNX cannot infer an output (training-mode BatchNormalization, ...), the case states it.
    for out in model.graph.output:
        if output_shapes and out.name in output_shapes:
            out.CopyFrom(helper.make_tensor_value_info(out.name, TensorProto.FLOAT, list(output_shapes[out.name])))
    return model


def save_and_load(model: onnx.ModelProto, folder: Path, name: str = "case"):
    path = Path(folder) / f"{name}.onnx"
    onnx.save(model, str(path))
    return load_model(path, require_static=True)


def conv(name="conv", x="x", w="w", b=None, out="y", **attrs):
    inputs = [x, w] + ([b] if b else [])
    return helper.make_node("Conv", inputs, [out], name=name, **attrs)


def node(op, inputs, outputs=("y",), name=None, domain="", **attrs):
    return helper.make_node(op, list(inputs), list(outputs), name=name or op.lower(), domain=domain, **attrs)


FIXTURES = Path(__file__).parent / "fixtures" / "tidl"


def conv_relu_pool_model() -> onnx.ModelProto:
    """The model of fixtures/tidl/conv_relu_pool: Conv conv1 -> Relu relu1 -> MaxPool pool1."""
    return make_model(
        [
            conv("conv1", "x", "w", "bias", out="a", pads=[1, 1, 1, 1]),
            node("Relu", ["a"], outputs=("b",), name="relu1"),
            node("MaxPool", ["b"], outputs=("y",), name="pool1", kernel_shape=[2, 2], strides=[2, 2]),
        ],
        {"x": (1, 3, 8, 8)},
        {"w": f32(4, 3, 3, 3, seed=1), "bias": f32(4, seed=2)},
    )


def conv_erf_conv_model() -> onnx.ModelProto:
    """The model of fixtures/tidl/conv_erf_conv: Conv c1 -> Erf erf -> Conv without a name (output y)."""
    return make_model(
        [
            conv("c1", "x", "w1", out="a"),
            node("Erf", ["a"], outputs=("b",), name="erf"),
            helper.make_node("Conv", ["b", "w2"], ["y"]),
        ],
        {"x": (1, 4, 8, 8)},
        {"w1": f32(4, 4, 1, 1, seed=3), "w2": f32(4, 4, 1, 1, seed=4)},
    )


def write_inputs(path: Path, shape: tuple, count: int, seed: int = 0, labels: bool = False) -> Path:
    """An .npz of `count` float32 samples for input `x` (the layout --calib/--eval read)."""
    rng = np.random.default_rng(seed)
    arrays = {"x": rng.random((count,) + tuple(shape[1:]), dtype=np.float32)}
    if labels:
        arrays["labels"] = rng.integers(0, 4, size=count)
    np.savez(path, **arrays)
    return path
