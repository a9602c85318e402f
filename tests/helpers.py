"""Small ONNX models built in tests, and a way to run the CLI as a user does."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def save(model: onnx.ModelProto, path: Path) -> Path:
    onnx.save(model, str(path))
    return path


def make_model(nodes, inputs, outputs, initializers=(), opset=13, **kwargs) -> onnx.ModelProto:
    graph = helper.make_graph(list(nodes), "test", list(inputs), list(outputs), initializer=list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], **kwargs)
    model.ir_version = min(model.ir_version, 8)
    return model


def tensor(name: str, shape, dtype=TensorProto.FLOAT):
    """A ValueInfo; `shape` is a list of dims, or an int rank for dims left to shape inference."""
    if isinstance(shape, int):
        shape = [None] * shape
    return helper.make_tensor_value_info(name, dtype, shape)


def const(name: str, array: np.ndarray):
    return numpy_helper.from_array(np.asarray(array), name)


def reshape_by_shape_subgraph(x: str, out: str) -> tuple[list, list]:
    """Reshape(x, Concat(Shape(x)[0], -1)) -> `out` (how exporters write a flatten; the shape
    subgraph is computable at compile time): its nodes (shape, gather, unsqueeze, concat, reshape)
    and initializers."""
    nodes = [
        helper.make_node("Shape", [x], ["shape"], name="shape"),
        helper.make_node("Gather", ["shape", "zero"], ["batch"], name="gather", axis=0),
        helper.make_node("Unsqueeze", ["batch", "axes0"], ["batch1"], name="unsqueeze"),
        helper.make_node("Concat", ["batch1", "minus1"], ["newshape"], name="concat", axis=0),
        helper.make_node("Reshape", [x, "newshape"], [out], name="reshape"),
    ]
    inits = [const("zero", np.array(0, np.int64)), const("axes0", np.array([0], np.int64)), const("minus1", np.array([-1], np.int64))]
    return nodes, inits


def conv_model(n=1, cin=3, h=32, w=32, cout=8, k=3, stride=1, pad=1, group=1, batch_param=None) -> onnx.ModelProto:
    weight = np.random.default_rng(0).standard_normal((cout, cin // group, k, k)).astype(np.float32)
    x = tensor("x", [batch_param or n, cin, h, w])
    y = tensor("y", 4)
    node = helper.make_node("Conv", ["x", "w"], ["y"], name="conv", kernel_shape=[k, k], strides=[stride, stride], pads=[pad] * 4, group=group)
    return make_model([node], [x], [y], [const("w", weight)])


def gemm_model(m=4, k=16, n=10, trans_a=0) -> onnx.ModelProto:
    a_shape = [k, m] if trans_a else [m, k]
    b = np.random.default_rng(1).standard_normal((k, n)).astype(np.float32)
    node = helper.make_node("Gemm", ["a", "b"], ["y"], name="gemm", transA=trans_a)
    return make_model([node], [tensor("a", a_shape)], [tensor("y", 2)], [const("b", b)])


def copy_artifact(artifact: Path, where: Path) -> Path:
    """A copy of `artifact` at where/<model>/<chip> (measuring writes into an artifact); its path."""
    dest = where / artifact.parent.name / artifact.name
    shutil.copytree(artifact, dest)
    return dest


def run_cli(*args: str, env=None, cwd=None, timeout=600) -> subprocess.CompletedProcess:
    """Run `edgedeploy ARGS` in a fresh interpreter, as a user would, capturing stdout and stderr apart."""
    return subprocess.run(
        [sys.executable, "-m", "edgedeploy", *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=timeout
    )
