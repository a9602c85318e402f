"""Figures about a model: node names, operator histogram, parameters and multiply-accumulates.

MACs count one multiply plus one add as one operation, the convention of most model zoos. They
are computed from the shapes that intake inferred; a node whose shapes are still dynamic gets
None, never a guess.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import helper, numpy_helper

from edgedeploy.interrupts import reraise_if_interrupted
from edgedeploy.model.intake import LoadedModel
from edgedeploy.model.shapes import Shape, numel


def node_names(graph: onnx.GraphProto) -> list[str]:
    """A unique, stable display name per node: its own name, or `<OpType>_<index>` when it has none.

    Exporters often leave names empty or repeat them; every report and rule refers to nodes by
    these names, so they must be unique.
    """
    names: list[str] = []
    seen: set[str] = set()
    for index, node in enumerate(graph.node):
        name = node.name or f"{node.op_type}_{index}"
        if name in seen:
            name = f"{name}#{index}"
        seen.add(name)
        names.append(name)
    return names


def named_copy(proto: onnx.ModelProto, names: list[str] | None = None) -> onnx.ModelProto:
    """A copy of the model whose node i is named names[i] (default: the unique display names).

    Toolchains name their layers after the ONNX nodes (TensorRT, esp-ppq) or need names of a
    form they accept (TIDL's deny list, onnx2tf's tokens); a copy with names we chose is how
    their output maps back onto the report's node names. The one way a model is re-saved
    renamed; the caller's model is never changed.
    """
    copy = onnx.ModelProto()
    copy.CopyFrom(proto)
    chosen = names if names is not None else node_names(copy.graph)
    if len(chosen) != len(copy.graph.node):
        raise ValueError(f"named_copy: {len(chosen)} names for {len(copy.graph.node)} nodes")
    for node, name in zip(copy.graph.node, chosen):
        node.name = name
    return copy


def dtype_name(elem_type: int) -> str:
    """ONNX element type as a short lower-case name (float32, int8, ...)."""
    try:
        return str(np.dtype(helper.tensor_dtype_to_np_dtype(elem_type)))
    except Exception as exc:  # noqa: BLE001 - types numpy has no dtype for (bfloat16, float8, ...)
        reraise_if_interrupted(exc)
        return onnx.TensorProto.DataType.Name(elem_type).lower()


def op_histogram(graph: onnx.GraphProto) -> dict[str, int]:
    """Count of nodes per operator type (domain-qualified outside the default domain), most frequent first."""
    counts = Counter(
        node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}.{node.op_type}" for node in graph.node
    )
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


@dataclass
class ParameterStats:
    count: int
    size_bytes: int


def parameter_stats(graph: onnx.GraphProto) -> ParameterStats:
    """Elements and bytes of all initializers and Constant-node tensors (the model's weights)."""
    count = 0
    size = 0
    tensors = list(graph.initializer)
    for node in graph.node:
        if node.op_type == "Constant":
            tensors += [a.t for a in node.attribute if a.type == onnx.AttributeProto.TENSOR]
    for t in tensors:
        n = 1
        for d in t.dims:
            n *= d
        count += n
        try:
            itemsize = np.dtype(helper.tensor_dtype_to_np_dtype(t.data_type)).itemsize
        except Exception as exc:  # noqa: BLE001
            reraise_if_interrupted(exc)
            itemsize = len(t.raw_data) // max(n, 1) if t.raw_data else 4
        size += n * itemsize
    return ParameterStats(count=count, size_bytes=size)


def _attr(node: onnx.NodeProto, name: str, default):
    for a in node.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)
    return default


def node_macs(model: LoadedModel, node: onnx.NodeProto) -> int | None:
    """Multiply-accumulates of one node for one inference, or None when unknown or not counted.

    Conv:          numel(Y) * Cin/group * prod(kernel)        (W is [Cout, Cin/group, k...])
    ConvTranspose: numel(X) * Cout/group * prod(kernel)       (W is [Cin, Cout/group, k...])
    Gemm, MatMul:  numel(Y) * K
    LSTM/GRU/RNN:  seq_len * batch * (numel(W) + numel(R))    (all gates, all directions)
    """
    op = node.op_type
    if op in ("Conv", "ConvInteger", "QLinearConv"):
        w_index = 3 if op == "QLinearConv" else 1
        y = _known(model.shape(node.output[0]))
        w = _known(model.shape(node.input[w_index]))
        if y is None or w is None:
            return None
        return numel(y) * numel(w[1:])  # type: ignore[operator]
    if op == "ConvTranspose":
        x = _known(model.shape(node.input[0]))
        w = _known(model.shape(node.input[1]))
        if x is None or w is None:
            return None
        return numel(x) * numel(w[1:])  # type: ignore[operator]
    if op in ("Gemm",):
        a = _known(model.shape(node.input[0]))
        y = _known(model.shape(node.output[0]))
        if a is None or y is None or len(a) != 2:
            return None
        k = a[0] if _attr(node, "transA", 0) else a[1]
        return numel(y) * int(k)  # type: ignore[operator]
    if op in ("MatMul", "MatMulInteger", "QLinearMatMul"):
        a = _known(model.shape(node.input[0]))
        y = _known(model.shape(node.output[0]))
        if a is None or y is None or not a:
            return None
        return numel(y) * int(a[-1])  # type: ignore[operator]
    if op in ("LSTM", "GRU", "RNN"):
        x = _known(model.shape(node.input[0]))
        w = _known(model.shape(node.input[1]))
        r = _known(model.shape(node.input[2]))
        if x is None or w is None or r is None or len(x) != 3:
            return None
        seq, batch = (x[1], x[0]) if _attr(node, "layout", 0) == 1 else (x[0], x[1])
        return int(seq) * int(batch) * (numel(w) + numel(r))  # type: ignore[operator]
    return None


# Operators whose MACs node_macs knows how to count.
MAC_OPS = ("Conv", "ConvInteger", "QLinearConv", "ConvTranspose", "Gemm", "MatMul", "MatMulInteger", "QLinearMatMul", "LSTM", "GRU", "RNN")


def _known(shape: Shape | None) -> Shape | None:
    """The shape if every dimension is a number, else None."""
    if shape is None or not all(isinstance(d, int) for d in shape):
        return None
    return shape


def constant_value(model: LoadedModel, name: str) -> np.ndarray | None:
    """The value of a tensor when it is a constant (initializer or Constant node output), else None."""
    for t in model.graph.initializer:
        if t.name == name:
            return numpy_helper.to_array(t)
    for node in model.graph.node:
        if node.op_type == "Constant" and node.output and node.output[0] == name:
            for a in node.attribute:
                if a.name == "value":
                    return numpy_helper.to_array(a.t)
    return None
