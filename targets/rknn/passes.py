"""rknn-toolkit2's own graph passes, which run before it places the nodes (the audit's lowering step).

rknn-toolkit2 rewrites an ONNX model in its Python graph optimiser before the C compiler
places the layers: it fuses pattern chains into single NPU operators (the exact GELU into
exGelu, a decomposed layer norm into exNorm), folds and cancels layout operators, and turns
some of them into others. The audit must do the same, or it calls a fused chain "CPU" where the
toolkit runs one NPU layer. Each pass here is one such rewrite, written like a rule: its
docstring is the sentence the user reads, naming the toolkit's own pass as its verbose build
log prints it (`D     replace_torch_gelu: remove node = [...]`), and its limits are named
constants. Measured with rknn-toolkit2 2.5.0 (TOOLKIT_OBSERVED) on the corpus models
(docs/corpus.md; their build logs) and on small models of each form (tests/test_rknn_lowering.py).

The passes run in the order they are declared, on every RKNN chip unless a pass says otherwise;
the rules then place what they leave (targets/rknn/rules.py).
"""

from __future__ import annotations

import numpy as np

from edgedeploy.targets.rknn.rules import RULES, TOOLKIT_OBSERVED

# Float constants of exported graphs are rounded to float32: patterns match within this.
CONSTANT_RTOL = 1e-4


def _scalar(t) -> float | None:
    """The value of a constant one-element tensor, else None."""
    if t is None or not t.present or not t.is_constant:
        return None
    v = t.value
    if v is None or v.size != 1:
        return None
    return float(np.asarray(v, dtype=np.float64).reshape(-1)[0])


def _near(value: float | None, target: float) -> bool:
    return value is not None and abs(value - target) <= CONSTANT_RTOL * max(1.0, abs(target))


def _known(t) -> bool:
    return t is not None and t.present and (t.is_constant or t.foldable)


def _other_input(node, name: str):
    """The input of a two-input node that is not the tensor `name` (None if both or neither are)."""
    names = [t.name for t in node.inputs[:2]]
    if len(names) != 2 or names.count(name) != 1:
        return None
    return node.inputs[1 - names.index(name)]


def _next(graph, node, op_type: str):
    """The one node reading `node`'s output, when it has that op type."""
    out = node.outputs[0] if node.outputs else None
    follower = graph.only_consumer(out.name) if out is not None and out.name else None
    return follower if follower is not None and follower.op_type == op_type else None


# ---------------------------------------------------------------------------------------------
# Pattern fusions.
# ---------------------------------------------------------------------------------------------

SQRT2 = float(np.sqrt(2.0))


def _scaled_by(node, op: str, factor: float):
    """The data input of `node` when it is `op` by a constant `factor` (x * factor or x / factor), else None."""
    if node is None or node.op_type != op or len(node.inputs) != 2:
        return None
    a, b = node.inputs
    if _near(_scalar(b), factor) and not a.is_constant:
        return a
    if op == "Mul" and _near(_scalar(a), factor) and not b.is_constant:
        return b
    return None


def _match_exact_gelu(graph, erf):
    """The nodes of x * 0.5 * (1 + Erf(x / sqrt(2))) around `erf`, in PyTorch's export orders, else None."""
    scale = graph.producer(erf.inputs[0].name)
    x = _scaled_by(scale, "Div", SQRT2) or _scaled_by(scale, "Mul", 1 / SQRT2)
    if x is None:
        return None
    add = _next(graph, erf, "Add")
    if add is None or not _near(_scalar(_other_input(add, erf.outputs[0].name)), 1.0):
        return None
    mul = _next(graph, add, "Mul")
    other = _other_input(mul, add.outputs[0].name) if mul is not None else None
    if other is None:
        return None
    if other.name == x.name:  # (x * (1 + erf)) * 0.5
        half = _next(graph, mul, "Mul")
        return [scale, erf, add, mul, half] if _scaled_by(half, "Mul", 0.5) is not None else None
    if _near(_scalar(other), 0.5):  # ((1 + erf) * 0.5) * x
        last = _next(graph, mul, "Mul")
        rest = _other_input(last, mul.outputs[0].name) if last is not None else None
        return [scale, erf, add, mul, last] if rest is not None and rest.name == x.name else None
    pre = graph.producer(other.name)  # (x * 0.5) * (1 + erf)
    if _scaled_by(pre, "Mul", 0.5) is not None and _scaled_by(pre, "Mul", 0.5).name == x.name:
        return [scale, erf, add, pre, mul]
    return None


@RULES.graph_pass("Erf", OBSERVED=TOOLKIT_OBSERVED)
def fuse_exact_gelu(graph, chip):
    """{OBSERVED} fuses the exact GELU chain x * 0.5 * (1 + Erf(x / sqrt(2))) (Div or Mul, Erf, Add, Mul, Mul, in PyTorch's export orders) into one exGelu NPU layer (its pass replace_torch_gelu), on every RKNN chip.

    Measured on convnext_tiny and the transformer encoders of the corpus: every node of each
    chain is in the layer table's exGelu (or the Conv it is fused into: ConvExGelu), on the NPU.
    """
    for erf in [n for n in graph.nodes if n.op_type == "Erf"]:
        members = _match_exact_gelu(graph, erf)
        if members:
            graph.fuse(members, "Gelu", leader=erf, attributes={})


# A decomposed layer norm's epsilon when the Add's constant is unreadable (a skeleton model).
DEFAULT_EPSILON = 1e-5


def _reduces_last_axis(node) -> bool:
    """A ReduceMean over the last axis only, keeping it (axes attribute, or input 1 from opset 18)."""
    if node.op_type != "ReduceMean" or not node.inputs or node.inputs[0].rank is None:
        return False
    axes = node.attr("axes")
    if axes is None and node.input(1) is not None and node.input(1).value is not None:
        axes = [int(a) for a in node.input(1).value.reshape(-1)]
    rank = node.inputs[0].rank
    return axes is not None and [int(a) % rank for a in axes] == [rank - 1] and int(node.attr("keepdims", 1)) == 1


def _match_layernorm(graph, mean):
    """The nodes of (x - mean(x)) / sqrt(mean((x - mean(x))^2) + eps) [* g] [+ b] from `mean`, and eps; else None."""
    if not _reduces_last_axis(mean):
        return None
    x = mean.inputs[0].name
    readers = graph.consumers(mean.outputs[0].name)
    sub = next((n for n in readers if n.op_type == "Sub" and n.inputs[0].name == x and n.inputs[1].name == mean.outputs[0].name), None)
    if sub is None:
        return None
    d = sub.outputs[0].name
    square = next((n for n in graph.consumers(d) if (n.op_type == "Pow" and n.inputs[0].name == d and _near(_scalar(n.input(1)), 2.0)) or (n.op_type == "Mul" and [t.name for t in n.inputs] == [d, d])), None)
    div = next((n for n in graph.consumers(d) if n.op_type == "Div" and n.inputs[0].name == d), None)
    if square is None or div is None or len(graph.consumers(d)) != 2:
        return None
    var = _next(graph, square, "ReduceMean")
    if var is None or not _reduces_last_axis(var):
        return None
    add_eps = _next(graph, var, "Add")
    if add_eps is None or not _known(_other_input(add_eps, var.outputs[0].name)):
        return None
    sqrt = _next(graph, add_eps, "Sqrt")
    if sqrt is None or div.inputs[1].name != sqrt.outputs[0].name or _next(graph, sqrt, "Div") is not div:
        return None
    members = [mean, sub, square, var, add_eps, sqrt, div]
    last = div
    for op in ("Mul", "Add"):  # the affine part: a constant scale, then a constant shift
        nxt = _next(graph, last, op)
        if nxt is not None and _known(_other_input(nxt, last.outputs[0].name)):
            members.append(nxt)
            last = nxt
    eps = _scalar(_other_input(add_eps, var.outputs[0].name))
    return members, (DEFAULT_EPSILON if eps is None else eps)


@RULES.graph_pass("ReduceMean", OBSERVED=TOOLKIT_OBSERVED)
def fuse_decomposed_layernorm(graph, chip):
    """{OBSERVED} fuses a layer norm written out over the last axis (ReduceMean, Sub, Pow or Mul, ReduceMean, Add, Sqrt, Div, then a constant Mul and Add) into one exNorm layer, as for LayerNormalization (its pass replace_torch_layernorm): on the NPU, and on the CPU on RV1106, whose NPU has no exNorm.

    Measured on convnext_tiny and transformer_encoder of the corpus: each chain's nine nodes are
    one exNorm layer of the layer table.
    """
    for mean in [n for n in graph.nodes if n.op_type == "ReduceMean"]:
        if mean.name not in {n.name for n in graph.nodes}:
            continue  # already part of a group
        found = _match_layernorm(graph, mean)
        if found:
            members, eps = found
            graph.fuse(members, "LayerNormalization", leader=mean, attributes={"axis": -1, "epsilon": eps})
