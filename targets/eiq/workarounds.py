"""Rewrites the eIQ build applies to the copy of the model it gives onnx2tf, where onnx2tf is known
to convert a node into something that computes another function.

Each is exact (the rewritten graph computes what the original does, by the ONNX specification),
is recorded in the report's `convert.workarounds` and printed by the build, and leaves the
user's model as it was.
"""

from __future__ import annotations

import onnx
from onnx import helper, numpy_helper

import numpy as np

# Before opset 13, Softmax, LogSoftmax and Hardmax coerce their input to 2-D at `axis`
# ([d0*..*d(axis-1), d(axis)*..*d(n-1)]) and normalise over the whole second part; from opset 13
# they normalise over `axis` alone.
COERCING_OPS = ("Softmax", "LogSoftmax", "Hardmax")
COERCION_ENDS_AT_OPSET = 13
# Reshape takes its shape as an input from opset 5.
RESHAPE_INPUT_SINCE = 5

SOFTMAX_2D = {
    "name": "Softmax in its 2-D form (Flatten -> Softmax -> Reshape)",
    "why": (
        "onnx2tf 1.29.24 converts an opset<13 Softmax/LogSoftmax/Hardmax on a rank-3+ tensor into one that normalises "
        "over a single axis instead of over the flattened trailing axes; on a classifier head's [N, classes, 1, 1] it "
        "picks a length-1 axis (measured: the ONNX zoo SqueezeNet's Softmax came out as all ones, top-1 -100 pp). The same "
        "node on the 2-D tensor Flatten gives it converts correctly (SqueezeNet: +0.00 pp, cosine 0.9993), so the copy "
        "given to onnx2tf has Flatten -> the node -> Reshape, the function the ONNX specification defines"
    ),
    "source": "measured with onnx2tf 1.29.24 (docs/eiq.md)",
}


def _default_opset(model: onnx.ModelProto) -> int:
    return next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 1)


def _static_shapes(graph: onnx.GraphProto) -> dict[str, list[int | None]]:
    shapes: dict[str, list[int | None]] = {}
    for vi in list(graph.input) + list(graph.value_info) + list(graph.output):
        if vi.type.HasField("tensor_type") and vi.type.tensor_type.HasField("shape"):
            shapes[vi.name] = [d.dim_value if d.HasField("dim_value") else None for d in vi.type.tensor_type.shape.dim]
    return shapes


def softmax_in_2d(model: onnx.ModelProto, display_of: dict[str, str]) -> tuple[list[str], dict[str, str]]:
    """Give every opset<13 Softmax/LogSoftmax/Hardmax on a rank-3+ input whose axis is not the last,
    and whose trailing axes have one longer than 1 (a classifier head's [N, classes, 1, 1]), its
    2-D form, in place. `display_of`: node name -> the name the user knows it by.

    Returns the display names of the nodes rewritten, and node name -> display name of the nodes
    added (so what the toolchain reports of them is placed on the original node).
    """
    opset = _default_opset(model)
    if opset >= COERCION_ENDS_AT_OPSET or opset < RESHAPE_INPUT_SINCE:
        return [], {}
    graph = model.graph
    shapes = _static_shapes(graph)
    taken = {n.name for n in graph.node} | {t for n in graph.node for t in list(n.input) + list(n.output)} | {i.name for i in graph.initializer}

    def fresh(base: str) -> str:
        name, k = base, 1
        while name in taken:
            name, k = f"{base}_{k}", k + 1
        taken.add(name)
        return name

    rewritten, added = [], {}
    nodes = []
    for node in graph.node:
        shape = shapes.get(node.input[0]) if node.input else None
        if node.op_type not in COERCING_OPS or node.domain not in ("", "ai.onnx") or shape is None or len(shape) < 3:
            nodes.append(node)
            continue
        rank = len(shape)
        axis = next((a.i for a in node.attribute if a.name == "axis"), 1)
        axis = axis + rank if axis < 0 else axis
        trailing = shape[axis:]
        if axis >= rank - 1 or any(d is None for d in trailing) or sum(d > 1 for d in trailing) > 1:
            # One trailing axis: both readings are the same function, converted correctly. Several
            # trailing axes longer than 1: onnx2tf flattens them in its channels-last order and its
            # Reshape back does not undo that (measured), so the 2-D form would be wrong too; the
            # build's verification reports such a node's output (its float32 TFLite differs).
            nodes.append(node)
            continue
        source, out = node.input[0], node.output[0]
        flat, normalised = fresh(f"{out}_2d_in"), fresh(f"{out}_2d")
        names = {"flatten": fresh(f"{node.name}_2d"), "reshape": fresh(f"{node.name}_nd")}
        nodes.append(helper.make_node("Flatten", [source], [flat], name=names["flatten"], axis=axis))
        nodes.append(helper.make_node(node.op_type, [flat], [normalised], name=node.name, axis=1))
        target_shape = fresh(f"{out}_shape")
        names["shape"] = fresh(f"{node.name}_shape")
        if all(d is not None for d in shape):
            # A Constant node, not an initializer: IR < 4 models must list initializers as inputs.
            value = numpy_helper.from_array(np.array(shape, dtype=np.int64), target_shape)
            nodes.append(helper.make_node("Constant", [], [target_shape], name=names["shape"], value=value))
        else:
            nodes.append(helper.make_node("Shape", [source], [target_shape], name=names["shape"]))
        nodes.append(helper.make_node("Reshape", [normalised, target_shape], [out], name=names["reshape"]))
        display = display_of.get(node.name, node.name)
        rewritten.append(display)
        added.update({n: display for n in names.values()})
    if rewritten:
        del graph.node[:]
        graph.node.extend(nodes)
    return rewritten, added
