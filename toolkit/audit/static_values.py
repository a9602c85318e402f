"""Every value a simplifier computes from constants and static input shapes, whatever the exporter's spelling.

Toolchains fold what is known when the model is compiled: esp-ppq and onnx2tf run onnxsim first,
rknn-toolkit2 folds constants itself. An exporter writes the same static computation many ways
(PyTorch's `chunk` as Shape, Gather, Add, Div, Mul, Slice; a detector's anchor grid as Shape,
Range, Unsqueeze, Expand, Concat; weights as ConstantOfShape; Constant nodes given by
`value_ints` instead of a tensor), and ONNX's shape inference does not see through all of them
(its data propagation knows no Div, Range or ConstantOfShape): one Slice whose ends it cannot
read leaves every shape after it unknown, and every Shape of those tensors then looks like a
run-time operator.

`static_values(model)` does what the simplifier does, in the same loop: compute the value of
every node whose inputs are known (constants, Constant nodes in any spelling, the shapes of
tensors whose shape is static), give the computed tensors to ONNX's shape inference as constants,
and repeat with the shapes it finds, until nothing new is learnt. It returns the values it
computed (small tensors only: shapes, indices, grids) and the shapes it learnt; the audit's node
views use both (engine.node_views). Nothing of the model is changed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import helper, numpy_helper

from edgedeploy.audit.rules import tensor_values
from edgedeploy.interrupts import reraise_if_interrupted

# A computed tensor larger than this is not kept (a simplifier folds it all the same; the audit
# only needs the values of shapes, indices and small grids, and knows it is foldable).
MAX_ELEMENTS = 1 << 16


@dataclass
class StaticValues:
    """What folding from constants and static shapes learns about a model's tensors."""

    values: dict[str, np.ndarray] = field(default_factory=dict)  # tensor -> value (computed or constant)
    shapes: dict[str, tuple] = field(default_factory=dict)  # tensor -> shape learnt beyond the model's own inference
    computed: set[str] = field(default_factory=set)  # the tensors among `values` that nodes compute
    # tensor -> why its value is not known: it is computed from the shape of a tensor whose shape
    # the model leaves open (a dynamic dimension) or that depends on the data. A toolchain that is
    # given those shapes folds it; the audit cannot tell.
    unknown: dict[str, str] = field(default_factory=dict)
    # Every tensor's shape as far as it is known (the model's inference, then what was learnt),
    # read on demand: the node views take their shapes from here.
    all_shapes: dict = field(default_factory=dict)
    constant_nodes: set[str] = field(default_factory=set)  # the outputs of Constant nodes

    def shape_of(self, name: str):
        return self.all_shapes.get(name)


def constant_node_value(node: onnx.NodeProto) -> np.ndarray | None:
    """The value of a Constant node in any of its spellings (value, value_float(s), value_int(s))."""
    for a in node.attribute:
        if a.name == "value" and a.type == onnx.AttributeProto.TENSOR:
            return tensor_values(a.t)
        if a.name == "value_float":
            return np.array(a.f, np.float32)
        if a.name == "value_floats":
            return np.array(list(a.floats), np.float32)
        if a.name == "value_int":
            return np.array(a.i, np.int64)
        if a.name == "value_ints":
            return np.array(list(a.ints), np.int64)
    return None


def _numel(dims) -> int:
    n = 1
    for d in dims:
        n *= int(d)
    return n


def static_values(model, infos: dict | None = None) -> StaticValues:
    """Fold `model` (a LoadedModel) as a simplifier would; see the module's docstring."""
    graph = model.graph
    infos = model.value_infos() if infos is None else infos
    found = StaticValues()
    # Small initializers are read only when a computation needs them (most are weights and
    # normalisation parameters no shape computation reads).
    found.values = _Initializers({t.name: t for t in graph.initializer if _numel(t.dims) <= MAX_ELEMENTS and t.data_location != onnx.TensorProto.EXTERNAL})
    starts_from_shapes = False
    for node in graph.node:
        op = node.op_type
        if op in SHAPE_OPS or (not starts_from_shapes and _from_constants(node, found.values)):
            starts_from_shapes = True
        if op == "Constant" and node.output and node.domain in ("", "ai.onnx"):
            found.constant_nodes.add(node.output[0])
            tensor = next((a.t for a in node.attribute if a.name == "value" and a.type == onnx.AttributeProto.TENSOR), None)
            if tensor is not None:
                if _numel(tensor.dims) <= MAX_ELEMENTS:
                    found.values.protos[node.output[0]] = tensor  # read when needed, as an initializer
            else:
                value = constant_node_value(node)
                if value is not None:
                    found.values[node.output[0]] = value
    shapes = _Shapes(infos, graph.initializer)
    found.all_shapes = shapes
    if not starts_from_shapes:
        return found  # no computation starts from a shape: ONNX's inference knew all there is
    producers = {o: n for n in graph.node for o in n.output if o}
    _evaluate(graph.node, found, shapes, model, producers, _read_from_model_inputs(graph))
    if any(n.op_type in SHAPE_OPS and n.input and not _static(shapes.get(n.input[0])) for n in graph.node):
        _shape_dependent(graph.node, found, shapes, _open_inputs(graph, shapes))
    return found


SHAPE_OPS = ("Shape", "Size")
SEEDS = SHAPE_OPS  # where a computation from static shapes starts


def _from_constants(node, values) -> bool:
    """A node that computes from constants alone also starts a static computation: a tracing
    exporter writes the sizes it saw as Constant nodes and the arithmetic on them as nodes (timm's
    TF-"same" padding: Ceil of a Constant, then Sub, Mul, Clip, Div, Cast, Concat, Reshape, Slice,
    Transpose into a Pad's pads). ONNX's inference computes none of that; a simplifier does, and
    so does rknn-toolkit2's constant folding (the Pad then runs on its NPU)."""
    inputs = [i for i in node.input if i]
    return bool(inputs) and node.op_type in EVALUATED and node.op_type != "Constant" and node.domain in ("", "ai.onnx") and all(i in values for i in inputs)


class _Shapes(dict):
    """Tensor name -> shape (ints, or str/None for open dimensions), read from the model's value
    infos on first use, and the shapes learnt since; and the tensors' element types."""

    def __init__(self, infos: dict, initializers):
        super().__init__()
        self.infos = infos
        self.initializers = initializers
        self.elems: dict[str, int] = {}  # element types learnt (computed values, inferred results)

    def get(self, name, default=None):
        if dict.__contains__(self, name):
            return dict.__getitem__(self, name)
        if self.initializers is not None and not isinstance(self.initializers, dict):
            self.initializers = {t.name: t for t in self.initializers}  # only once a shape is asked for
        t = self.initializers.get(name)
        if t is not None:
            shape = tuple(int(d) for d in t.dims)
            dict.__setitem__(self, name, shape)
            return shape
        vi = self.infos.get(name)
        if vi is None:
            return default
        from edgedeploy.model.shapes import dims_of

        shape = dims_of(vi)
        dict.__setitem__(self, name, shape)
        return shape

    def elem_type(self, name: str) -> int:
        if name in self.elems:
            return self.elems[name]
        t = self.initializers.get(name) if isinstance(self.initializers, dict) else None
        vi = self.infos.get(name)
        if t is not None:
            return t.data_type
        if vi is not None and vi.type.HasField("tensor_type"):
            return vi.type.tensor_type.elem_type
        return 0

    def open_outputs(self, node) -> bool:
        return any(o and not _static(self.get(o)) for o in node.output)

    def infer(self, node, values, model) -> dict[str, tuple]:
        """The static shapes ONNX's shape function of `node` gives its results, from its inputs'
        static shapes and the values known so far; {} when an input's shape is open."""
        types, data = {}, {}
        for name in node.input:
            if not name:
                continue
            shape, elem = self.get(name), self.elem_type(name)
            if not _static(shape) or not elem:
                return {}
            types[name] = helper.make_tensor_type_proto(elem, list(shape))
            if name in values:
                data[name] = numpy_helper.from_array(np.ascontiguousarray(values[name]), name)
        try:
            schema = onnx.defs.get_schema(node.op_type, model.opset, node.domain)
            inferred = onnx.shape_inference.infer_node_outputs(schema, node, types, data, opset_imports=list(model.proto.opset_import), ir_version=max(int(model.proto.ir_version), 4))
        except Exception as exc:  # noqa: BLE001 - a node ONNX cannot infer alone (subgraphs, functions): left open
            reraise_if_interrupted(exc)
            return {}
        learnt = {}
        for name, t in inferred.items():
            if not t.HasField("tensor_type") or not t.tensor_type.HasField("shape"):
                continue
            dims = t.tensor_type.shape.dim
            if all(d.HasField("dim_value") for d in dims):
                shape = tuple(int(d.dim_value) for d in dims)
                dict.__setitem__(self, name, shape)
                self.elems[name] = t.tensor_type.elem_type
                learnt[name] = shape
        return learnt


def _open_inputs(graph, shapes: dict) -> str:
    """The model inputs whose shape is left open, with their open dimensions: "'x' (height, width)"."""
    inits = {t.name for t in graph.initializer}
    found = []
    for vi in graph.input:
        shape = shapes.get(vi.name)
        if vi.name in inits or shape is None or _static(shape):
            continue
        found.append(f"'{vi.name}' ({', '.join(str(d) if d else '?' for d in shape if not isinstance(d, int))})")
    return ", ".join(found)


def _why_unknown(name: str, shape, open_inputs: str) -> str:
    named = [d for d in (shape or ()) if isinstance(d, str) and d and not d.startswith("unk__")]
    if named:
        return f"dimension '{named[0]}' of '{name}' is not fixed in the model"
    if open_inputs:
        return f"the shape of '{name}' follows from the model's open input dimensions: {open_inputs}"
    return f"the shape of '{name}' depends on the data (shape inference cannot determine it)"


def _shape_dependent(nodes, found: StaticValues, shapes: dict, open_inputs: str) -> None:
    """Mark the tensors computed from shapes the model leaves open (StaticValues.unknown)."""
    values, unknown = found.values, found.unknown
    for node in nodes:
        outs = [o for o in node.output if o and o not in values]
        if not outs or node.op_type not in EVALUATED or node.domain not in ("", "ai.onnx"):
            continue
        if node.op_type in ("Shape", "Size"):
            reason = _why_unknown(node.input[0], shapes.get(node.input[0]), open_inputs) if node.input else None
        else:
            inputs = [i for i in node.input if i]
            if not inputs or not all(i in values or i in unknown for i in inputs):
                continue
            reason = next((unknown[i] for i in inputs if i in unknown), None)
        if reason:
            for o in outs:
                unknown[o] = reason


class _Initializers(dict):
    """Tensor name -> value: the small initializers, converted from their TensorProto on first use,
    and the values computed so far."""

    def __init__(self, protos: dict):
        super().__init__()
        self.protos = protos

    def __contains__(self, name) -> bool:
        return dict.__contains__(self, name) or name in self.protos

    def __getitem__(self, name):
        if not dict.__contains__(self, name) and name in self.protos:
            dict.__setitem__(self, name, tensor_values(self.protos[name]))
        return dict.__getitem__(self, name)

    def get(self, name, default=None):
        return self[name] if name in self else default


def _static(shape) -> bool:
    return shape is not None and all(isinstance(d, int) for d in shape)


def _evaluate(nodes, found: StaticValues, shapes: "_Shapes", model, producers: dict, from_inputs: set[str]) -> None:
    """One pass in graph order: learn the shapes of a node's results that inference left open
    (ONNX's shape function of that node, given the values computed so far), then compute the node
    if it starts a static computation (Shape, Size) or reads a value computed so.
    Inputs no such node made (an Unsqueeze of an initializer) are computed on demand.
    `from_inputs` (_read_from_model_inputs): tensors whose values no node here computes."""
    values, computed = found.values, found.computed
    opset = model.opset
    for node in nodes:
        if shapes.open_outputs(node):
            learnt = shapes.infer(node, values, model)
            found.shapes.update(learnt)
        if node.op_type not in SEEDS and not from_inputs.isdisjoint(node.input):
            # It reads a value computed from a model input, which is never known here (a
            # normalisation's Mul of a Conv's result by an Unsqueeze of its scale): every input
            # that could be computed was, at its producer's turn, so trying would change nothing.
            continue
        if node.op_type not in SEEDS and not (computed and any(i in computed for i in node.input)) and not _from_constants(node, values):
            continue
        outs = [o for o in node.output if o]
        if not outs or all(o in values for o in outs) or node.domain not in ("", "ai.onnx"):
            continue
        _run(node, found, shapes, opset, producers, depth=0)


def _read_from_model_inputs(graph) -> set[str]:
    """The tensors whose values depend on a model input's value: the inputs themselves, and the
    results of every node reading one (but Shape and Size, which read only its shape, Constant,
    which reads nothing, and If, whose branch decides). _ins needs the value of every input it is
    given, so no such tensor ever gets a value here."""
    found = {vi.name for vi in graph.input} - {t.name for t in graph.initializer}
    for node in graph.node:
        if node.op_type in SHAPE_OPS or node.op_type in ("Constant", "If"):
            continue
        if not found.isdisjoint(node.input):
            found.update(o for o in node.output if o)
    return found


# How far back an input is computed on demand (initializer -> Unsqueeze -> Cast -> ...).
MAX_BACKFILL_DEPTH = 6


def _run(node, found: StaticValues, shapes: dict, opset: int, producers: dict, depth: int) -> list[str]:
    """Compute `node` (its unknown inputs first, from their producers); the tensors it gave values."""
    values = found.values
    if node.op_type not in SHAPE_OPS:
        for name in node.input:
            producer = producers.get(name)
            if name and name not in values and producer is not None and producer.op_type in EVALUATED and depth < MAX_BACKFILL_DEPTH:
                _run(producer, found, shapes, opset, producers, depth + 1)
    try:
        with np.errstate(all="ignore"):  # a constant's Log of 0 or Cast of inf: computed as the toolchain would
            result = _compute(node, values, shapes, opset)
    except Exception as exc:  # noqa: BLE001 - a form the evaluator does not know: left to the toolchain
        reraise_if_interrupted(exc)
        result = None
    made = []
    for name, value in zip([o for o in node.output if o], result or ()):
        value = np.asarray(value)
        if value.size > MAX_ELEMENTS:
            continue
        values[name] = value
        found.computed.add(name)
        shapes[name] = tuple(int(d) for d in value.shape)
        shapes.elems[name] = helper.np_dtype_to_tensor_dtype(value.dtype)
        made.append(name)
    return made


# ---- the evaluator: numpy versions of the operators exporters write static computations with


def _attr(node, name, default=None):
    for a in node.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)
    return default


def _ins(node, values) -> list | None:
    """The node's input values (None for an absent optional input); None when one is unknown."""
    out = []
    for name in node.input:
        if not name:
            out.append(None)
        elif name in values:
            out.append(values[name])
        else:
            return None
    return out


def _axes_input(node, ins, opset, since):
    """Axes given as an attribute before opset `since`, as input 1 from it on."""
    if opset < since:
        return _attr(node, "axes")
    return None if len(ins) < 2 or ins[1] is None else [int(a) for a in ins[1].reshape(-1)]


def _int_div(a, b):
    if np.issubdtype(np.asarray(a).dtype, np.integer):
        return (np.trunc(np.asarray(a, np.float64) / np.asarray(b, np.float64))).astype(np.asarray(a).dtype)
    return np.divide(a, b).astype(np.result_type(a, b))


ELEMENTWISE = {
    "Add": np.add,
    "Sub": np.subtract,
    "Mul": np.multiply,
    "Div": _int_div,
    "Pow": lambda a, b: np.power(a, b).astype(np.asarray(a).dtype),
    "Mod": np.mod,
    "Equal": np.equal,
    "Less": np.less,
    "Greater": np.greater,
    "LessOrEqual": np.less_equal,
    "GreaterOrEqual": np.greater_equal,
    "And": np.logical_and,
    "Or": np.logical_or,
}
UNARY = {
    "Neg": np.negative,
    "Abs": np.abs,
    "Sqrt": np.sqrt,
    "Floor": np.floor,
    "Ceil": np.ceil,
    "Not": np.logical_not,
    "Sign": np.sign,
    "Reciprocal": np.reciprocal,
    "Identity": lambda a: a,
    "Relu": lambda a: np.maximum(a, 0).astype(a.dtype),
    "Sigmoid": lambda a: (1 / (1 + np.exp(-a))).astype(a.dtype),
    "Exp": np.exp,
    "Log": np.log,
}


# Every operator the evaluator computes (what _compute knows).
EVALUATED = frozenset(ELEMENTWISE) | frozenset(UNARY) | frozenset(
    {"If", "Constant", "Shape", "Size", "Min", "Max", "Sum", "Cast", "Where", "Clip", "Gather", "Concat", "Unsqueeze", "Squeeze", "Slice", "Range", "ConstantOfShape", "Reshape", "Flatten", "Expand", "Tile", "Transpose", "ReduceProd", "ReduceSum", "ReduceMin", "ReduceMax"}
)


def _compute(node, values, shapes, opset) -> list | None:
    op = node.op_type
    if op == "If":
        return _taken_branch(node, values, shapes, opset)
    if op == "Constant":
        v = constant_node_value(node)
        return None if v is None else [v]
    if op in ("Shape", "Size"):
        shape = shapes.get(node.input[0])
        if not _static(shape):
            return None
        if op == "Size":
            return [np.array(_numel(shape), np.int64)]
        start, end = _attr(node, "start", 0), _attr(node, "end", None)
        return [np.array(shape[start:end] if end is not None else shape[start:], np.int64)]
    ins = _ins(node, values)
    if ins is None:
        return None
    return _compute_from_values(node, ins, opset)


class _BranchScope(dict):
    """The values a branch computes, over those of the graph around it (read, never written)."""

    def __init__(self, outer):
        super().__init__()
        self.outer = outer

    def __contains__(self, name) -> bool:
        return dict.__contains__(self, name) or name in self.outer

    def __getitem__(self, name):
        return dict.__getitem__(self, name) if dict.__contains__(self, name) else self.outer[name]

    def get(self, name, default=None):
        return self[name] if name in self else default


def _taken_branch(node, values, shapes, opset) -> list | None:
    """An If whose condition is known: the results of the branch it takes, which a simplifier keeps in
    its place (onnxsim's eliminate_if_with_const_cond) and computes when the branch reads constants only
    (a ViT's position-embedding interpolation switched off by a traced size check); None when the
    condition or a value the branch reads is unknown, or the branch computes what the evaluator does not."""
    cond = values.get(node.input[0]) if node.input and node.input[0] else None
    if cond is None or np.asarray(cond).size != 1:
        return None
    branch = _attr(node, "then_branch" if bool(np.asarray(cond).reshape(-1)[0]) else "else_branch")
    scope = _BranchScope(values)
    for inner in branch.node:
        if inner.op_type not in EVALUATED or inner.op_type == "If" or inner.domain not in ("", "ai.onnx"):
            return None
        result = _compute(inner, scope, shapes, opset)
        if result is None:
            return None
        for name, value in zip([o for o in inner.output if o], result):
            dict.__setitem__(scope, name, np.asarray(value))
    found = [scope.get(o.name) for o in branch.output]
    return None if any(v is None for v in found) else found


def _compute_from_values(node, ins, opset) -> list | None:
    op = node.op_type
    if op in ELEMENTWISE:
        return [ELEMENTWISE[op](ins[0], ins[1])]
    if op in UNARY:
        return [UNARY[op](ins[0])]
    if op in ("Min", "Max", "Sum"):
        fn = {"Min": np.minimum, "Max": np.maximum, "Sum": np.add}[op]
        result = ins[0]
        for v in ins[1:]:
            result = fn(result, v)
        return [result]
    if op == "Cast":
        return [ins[0].astype(helper.tensor_dtype_to_np_dtype(_attr(node, "to")))]
    if op == "Where":
        return [np.where(ins[0], ins[1], ins[2])]
    if op == "Clip":
        lo = _attr(node, "min") if opset < 11 else (ins[1] if len(ins) > 1 else None)
        hi = _attr(node, "max") if opset < 11 else (ins[2] if len(ins) > 2 else None)
        x = ins[0]
        if lo is not None:
            x = np.maximum(x, lo)
        if hi is not None:
            x = np.minimum(x, hi)
        return [x.astype(ins[0].dtype)]
    return _compute_layout(node, ins, opset)


def _compute_layout(node, ins, opset) -> list | None:
    op = node.op_type
    x = ins[0] if ins else None
    if op == "Gather":
        return [np.take(x, ins[1].astype(np.int64), axis=_attr(node, "axis", 0))]
    if op == "Concat":
        return [np.concatenate([np.atleast_1d(v) if v.ndim == 0 else v for v in ins if v is not None], axis=_attr(node, "axis"))]
    if op == "Unsqueeze":
        axes = _axes_input(node, ins, opset, 13)
        rank = x.ndim + len(axes)
        for a in sorted(int(a) % rank for a in axes):
            x = np.expand_dims(x, a)
        return [x]
    if op == "Squeeze":
        axes = _axes_input(node, ins, opset, 13)
        return [np.squeeze(x) if axes is None else np.squeeze(x, axis=tuple(int(a) % x.ndim for a in axes))]
    if op == "Slice":
        return [_slice(node, ins, opset)]
    if op == "Range":
        return [np.arange(ins[0], ins[1], ins[2]).astype(np.result_type(ins[0], ins[1], ins[2]))]
    if op == "ConstantOfShape":
        fill = _attr(node, "value")
        fill = tensor_values(fill).reshape(-1)[0] if fill is not None else np.float32(0)
        shape = [int(d) for d in x.reshape(-1)]
        return [np.full(shape, fill, dtype=np.asarray(fill).dtype)] if _numel(shape) <= MAX_ELEMENTS else None
    if op == "Reshape":
        shape = [int(d) for d in ins[1].reshape(-1)]
        if not _attr(node, "allowzero", 0):
            shape = [x.shape[i] if d == 0 else d for i, d in enumerate(shape)]
        return [x.reshape(shape)]
    if op == "Flatten":
        axis = _attr(node, "axis", 1) % max(x.ndim, 1)
        return [x.reshape(_numel(x.shape[:axis]), -1)]
    if op == "Expand":
        shape = [int(d) for d in ins[1].reshape(-1)]
        target = np.broadcast_shapes(x.shape, tuple(shape))
        return [np.broadcast_to(x, target).copy()] if _numel(target) <= MAX_ELEMENTS else None
    if op == "Tile":
        return [np.tile(x, [int(r) for r in ins[1].reshape(-1)])]
    if op == "Transpose":
        perm = _attr(node, "perm")
        return [np.transpose(x, perm)]
    if op in ("ReduceProd", "ReduceSum", "ReduceMin", "ReduceMax"):
        axes = _axes_input(node, ins, opset, 18 if op != "ReduceSum" else 13)
        fn = {"ReduceProd": np.prod, "ReduceSum": np.sum, "ReduceMin": np.min, "ReduceMax": np.max}[op]
        keep = bool(_attr(node, "keepdims", 1))
        return [np.asarray(fn(x, axis=None if not axes else tuple(int(a) for a in axes), keepdims=keep))]
    return None


def _slice(node, ins, opset):
    x = ins[0]
    if opset < 10:
        starts, ends, axes, steps = _attr(node, "starts"), _attr(node, "ends"), _attr(node, "axes"), None
    else:
        starts, ends = ins[1].reshape(-1), ins[2].reshape(-1)
        axes = ins[3].reshape(-1) if len(ins) > 3 and ins[3] is not None else None
        steps = ins[4].reshape(-1) if len(ins) > 4 and ins[4] is not None else None
    axes = list(range(len(starts))) if axes is None else [int(a) % x.ndim for a in axes]
    index = [slice(None)] * x.ndim
    for i, a in enumerate(axes):
        step = int(steps[i]) if steps is not None else 1
        index[a] = slice(_clamp(int(starts[i])), _clamp(int(ends[i])), step)
    return x[tuple(index)]


def _clamp(i: int) -> int:
    # ONNX writes "to the end" as INT64_MAX / INT64_MIN; Python slices take any int.
    return max(min(i, 1 << 62), -(1 << 62))
