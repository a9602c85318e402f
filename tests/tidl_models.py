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
