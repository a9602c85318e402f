"""The rewrite library: small passes that keep a model's function within a stated tolerance.

Each pass is a function `(model) -> list[Change]` that edits the model in place and reports
what it replaced. `REWRITES` describes them: whether the pass is exact (same function up to
float rounding) or an approximation (only applied with --allow-approx, its error shown), and
the tolerance `edgedeploy fix` checks its outputs against before keeping it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
import onnx
from onnx import helper, numpy_helper

from edgedeploy.fix.graph import Change, GraphIndex, cleanup, make_node, node_label, opset_of
from edgedeploy.interrupts import reraise_if_interrupted

SQRT2 = math.sqrt(2.0)
# Float constants in exported graphs are rounded to float32; patterns match within this.
CONST_RTOL = 1e-5


def _close(value: float | None, target: float) -> bool:
    return value is not None and abs(value - target) <= CONST_RTOL * max(1.0, abs(target))


@dataclass(frozen=True)
class Rewrite:
    """A pass and how far it may move the model's outputs.

    `max_abs_error` is the largest output change `fix` accepts from this pass on the evaluation
    data (exact passes only move outputs by float rounding). `min_opset`: the opset the result
    needs (the pass upgrades the model's opset when it is lower).
    """

    name: str
    apply: Callable[[onnx.ModelProto], list[Change]]
    exact: bool
    max_abs_error: float
    summary: str
    min_opset: int = 0


def _expand_each(model: onnx.ModelProto, op_type: str, rewrite: str, build) -> list[Change]:
    """Replace every `op_type` node by the nodes `build(ix, node, base)` returns (same output).

    The shared loop of the passes that rewrite one operator into an equivalent subgraph.
    """
    changes = []
    ix = GraphIndex(model)
    for node in list(model.graph.node):
        if node.op_type != op_type:
            continue
        new = build(ix, node, node.name or op_type.lower())
        changes.append(Change(rewrite, [node_label(node)], [n.name for n in new]))
        ix.replace([node], new)
    cleanup(model)
    return changes


def _attrs(node: onnx.NodeProto) -> dict:
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


# --------------------------------------------------------------------------------------------
# GELU


def _match_erf_gelu(ix: GraphIndex, erf: onnx.NodeProto):
    """Match 0.5 * x * (1 + erf(x / sqrt(2))) around an Erf node, as PyTorch and TF export it.

    Returns (x, output tensor, nodes) or None.
    """
    scale = ix.producer.get(erf.input[0])
    if scale is None:
        return None
    if scale.op_type == "Div" and _close(ix.scalar(scale.input[1]), SQRT2):
        x = scale.input[0]
    elif scale.op_type == "Mul":
        x = None
        for a, b in ((0, 1), (1, 0)):
            if _close(ix.scalar(scale.input[b]), 1 / SQRT2):
                x = scale.input[a]
        if x is None:
            return None
    else:
        return None
    add = ix.single_consumer(erf.output[0])
    if add is None or add.op_type != "Add" or not _close(ix.scalar(ix.other_input(add, erf.output[0]) or ""), 1.0):
        return None
    mul = ix.single_consumer(add.output[0])
    if mul is None or mul.op_type != "Mul":
        return None
    partner = ix.other_input(mul, add.output[0])
    if partner == x:
        # 0.5 applied after: Mul(Mul(x, 1 + erf), 0.5)
        half = ix.single_consumer(mul.output[0])
        if half is None or half.op_type != "Mul" or not _close(ix.scalar(ix.other_input(half, mul.output[0]) or ""), 0.5):
            return None
        return x, half.output[0], [scale, erf, add, mul, half]
    # 0.5 applied first: Mul(Mul(x, 0.5), 1 + erf)
    half = ix.producer.get(partner or "")
    if half is None or half.op_type != "Mul":
        return None
    if ix.other_input(half, x) is None or not _close(ix.scalar(ix.other_input(half, x)), 0.5):
        return None
    if len(ix.consumers.get(half.output[0], [])) != 1:
        return None
    return x, mul.output[0], [scale, erf, add, half, mul]


def _tanh_gelu_nodes(ix: GraphIndex, x: str, out: str, base: str) -> list[onnx.NodeProto]:
    """0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))"""
    c = ix.add_initializer(base + "_c", np.array(0.044715, np.float32))
    k = ix.add_initializer(base + "_k", np.array(math.sqrt(2 / math.pi), np.float32))
    one = ix.add_initializer(base + "_one", np.array(1.0, np.float32))
    half = ix.add_initializer(base + "_half", np.array(0.5, np.float32))
    t = [ix.fresh(base + "_t") for _ in range(8)]
    return [
        make_node(ix, "Mul", [x, x], [t[0]], base),
        make_node(ix, "Mul", [t[0], x], [t[1]], base),
        make_node(ix, "Mul", [t[1], c], [t[2]], base),
        make_node(ix, "Add", [x, t[2]], [t[3]], base),
        make_node(ix, "Mul", [t[3], k], [t[4]], base),
        make_node(ix, "Tanh", [t[4]], [t[5]], base),
        make_node(ix, "Add", [t[5], one], [t[6]], base),
        make_node(ix, "Mul", [x, half], [t[7]], base),
        make_node(ix, "Mul", [t[7], t[6]], [out], base),
    ]


def _upgrade_opset(model: onnx.ModelProto, version: int) -> None:
    """Move the model to `version` of the default domain with ONNX's version converter."""
    if opset_of(model) >= version:
        return
    from onnx import version_converter

    converted = version_converter.convert_version(model, version)
    model.CopyFrom(converted)


def _with_opset(model: onnx.ModelProto, version: int, rewrite: Callable[[onnx.ModelProto], list[Change]]) -> list[Change]:
    """Apply a rewrite that introduces an operator of opset `version`.

    The version converter cannot move a graph that already holds the new operator, so the
    pattern is looked for on a copy first, and only a model with a match is upgraded (all of
    it: ONNX models have one opset per domain) before the rewrite runs for real.
    """
    if opset_of(model) >= version:
        return rewrite(model)
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    if not rewrite(probe):
        return []
    _upgrade_opset(model, version)
    return rewrite(model)


def erf_gelu_to_gelu(model: onnx.ModelProto) -> list[Change]:
    """Replace the Erf-based GELU pattern with ONNX's Gelu operator (exact; opset 20)."""
    return _with_opset(
        model, 20, lambda m: _rewrite_erf_gelu(m, lambda ix, x, out, base: [make_node(ix, "Gelu", [x], [out], base)], "erf_gelu_to_gelu")
    )


def erf_gelu_to_tanh(model: onnx.ModelProto) -> list[Change]:
    """Replace the Erf-based GELU pattern with the tanh approximation (Mul/Add/Tanh only)."""
    return _rewrite_erf_gelu(model, _tanh_gelu_nodes, "erf_gelu_to_tanh")


def _rewrite_erf_gelu(model, build, name) -> list[Change]:
    changes = []
    ix = GraphIndex(model)
    for index, node in enumerate(list(model.graph.node)):
        if node.op_type != "Erf":
            continue
        match = _match_erf_gelu(ix, node)
        if match is None:
            continue
        x, out, old = match
        new = build(ix, x, out, node.name or "gelu")
        changes.append(Change(name, [node_label(n) for n in old], [n.name for n in new]))
        ix.replace(old, new)
    cleanup(model)
    return changes


def gelu_to_tanh(model: onnx.ModelProto) -> list[Change]:
    """Replace ONNX Gelu operators with the tanh approximation (Mul/Add/Tanh only)."""
    return _expand_each(model, "Gelu", "gelu_to_tanh", lambda ix, node, base: _tanh_gelu_nodes(ix, node.input[0], node.output[0], base))


# --------------------------------------------------------------------------------------------
# HardSigmoid, HardSwish, SiLU, Mish


def hardswish_decompose(model: onnx.ModelProto) -> list[Change]:
    """HardSwish(x) -> x * HardSigmoid(x; alpha=1/6, beta=0.5) (exact)."""

    def build(ix, node, base):
        t = ix.fresh(base)
        return [
            make_node(ix, "HardSigmoid", [node.input[0]], [t], base, alpha=1 / 6, beta=0.5),
            make_node(ix, "Mul", [node.input[0], t], [node.output[0]], base),
        ]

    return _expand_each(model, "HardSwish", "hardswish_decompose", build)


def _match_hardsigmoid_chain(ix: GraphIndex, x: str, start: onnx.NodeProto):
    """Match Clip(x + 3, 0, 6) / 6 (or * 1/6) starting at the Add; returns (out, nodes) or None."""
    add = start
    if add.op_type != "Add" or not _close(ix.scalar(ix.other_input(add, x) or ""), 3.0):
        return None
    clip = ix.single_consumer(add.output[0])
    if clip is None or clip.op_type not in ("Clip", "Relu6"):
        return None
    if clip.op_type == "Clip":
        lo = ix.scalar(clip.input[1]) if len(clip.input) > 1 and clip.input[1] else None
        hi = ix.scalar(clip.input[2]) if len(clip.input) > 2 and clip.input[2] else None
        attrs = _attrs(clip)
        lo = attrs.get("min", lo)
        hi = attrs.get("max", hi)
        if not (_close(lo, 0.0) and _close(hi, 6.0)):
            return None
    scale = ix.single_consumer(clip.output[0])
    if scale is None:
        return None
    if scale.op_type == "Div" and _close(ix.scalar(scale.input[1]), 6.0):
        return scale.output[0], [add, clip, scale]
    if scale.op_type == "Mul" and _close(ix.scalar(ix.other_input(scale, clip.output[0]) or ""), 1 / 6):
        return scale.output[0], [add, clip, scale]
    return None


def hardsigmoid_fuse(model: onnx.ModelProto) -> list[Change]:
    """Clip(x + 3, 0, 6) / 6 -> HardSigmoid(x; 1/6, 0.5), and x * that -> HardSwish(x) (exact)."""
    changes = []
    ix = GraphIndex(model)
    for node in ix.live_nodes("Add"):
        for x in node.input:
            match = _match_hardsigmoid_chain(ix, x, node)
            if match is None:
                continue
            out, old = match
            mul = ix.single_consumer(out)
            base = node.name or "hardsigmoid"
            if mul is not None and mul.op_type == "Mul" and ix.other_input(mul, out) == x:
                new = [make_node(ix, "HardSwish", [x], [mul.output[0]], base)]
                changes.append(Change("hardsigmoid_fuse", [node_label(n) for n in old + [mul]], [new[0].name], "HardSwish"))
                ix.replace(old + [mul], new)
            else:
                new = [make_node(ix, "HardSigmoid", [x], [out], base, alpha=1 / 6, beta=0.5)]
                changes.append(Change("hardsigmoid_fuse", [node_label(n) for n in old], [new[0].name], "HardSigmoid"))
                ix.replace(old, new)
            break
    cleanup(model)
    return changes


def hardsigmoid_decompose(model: onnx.ModelProto) -> list[Change]:
    """HardSigmoid(x; a, b) -> Clip(a*x + b, 0, 1) (exact)."""

    def build(ix, node, base):
        attrs = _attrs(node)
        a = ix.add_initializer(base + "_alpha", np.array(attrs.get("alpha", 0.2), np.float32))
        b = ix.add_initializer(base + "_beta", np.array(attrs.get("beta", 0.5), np.float32))
        lo = ix.add_initializer(base + "_lo", np.array(0.0, np.float32))
        hi = ix.add_initializer(base + "_hi", np.array(1.0, np.float32))
        t1, t2 = ix.fresh(base), ix.fresh(base)
        return [
            make_node(ix, "Mul", [node.input[0], a], [t1], base),
            make_node(ix, "Add", [t1, b], [t2], base),
            make_node(ix, "Clip", [t2, lo, hi], [node.output[0]], base),
        ]

    return _expand_each(model, "HardSigmoid", "hardsigmoid_decompose", build)


def silu_to_swish(model: onnx.ModelProto) -> list[Change]:
    """x * Sigmoid(x) -> Swish(x) (exact; opset 24)."""
    return _with_opset(model, 24, _silu_to_swish)


def _silu_to_swish(model: onnx.ModelProto) -> list[Change]:
    changes = []
    ix = GraphIndex(model)
    for node, mul in ix.chains("Sigmoid", "Mul"):
        if ix.other_input(mul, node.output[0]) != node.input[0]:
            continue
        new = [make_node(ix, "Swish", [node.input[0]], [mul.output[0]], node.name or "swish")]
        changes.append(Change("silu_to_swish", [node_label(node), node_label(mul)], [new[0].name]))
        ix.replace([node, mul], new)
    cleanup(model)
    return changes


def swish_decompose(model: onnx.ModelProto) -> list[Change]:
    """Swish(x; alpha) -> x * Sigmoid(alpha * x) (exact)."""

    def build(ix, node, base):
        alpha = _attrs(node).get("alpha", 1.0)
        x = node.input[0]
        new = []
        scaled = x
        if alpha != 1.0:
            k = ix.add_initializer(base + "_alpha", np.array(alpha, np.float32))
            scaled = ix.fresh(base)
            new.append(make_node(ix, "Mul", [x, k], [scaled], base))
        s = ix.fresh(base)
        return new + [make_node(ix, "Sigmoid", [scaled], [s], base), make_node(ix, "Mul", [x, s], [node.output[0]], base)]

    return _expand_each(model, "Swish", "swish_decompose", build)


def mish_decompose(model: onnx.ModelProto) -> list[Change]:
    """Mish(x) -> x * Tanh(Log(1 + Exp(x))) (exact: softplus written with Exp, Add, Log)."""

    def build(ix, node, base):
        one = ix.add_initializer(base + "_one", np.array(1.0, np.float32))
        t = [ix.fresh(base) for _ in range(4)]
        x = node.input[0]
        return [
            make_node(ix, "Exp", [x], [t[0]], base),
            make_node(ix, "Add", [t[0], one], [t[1]], base),
            make_node(ix, "Log", [t[1]], [t[2]], base),
            make_node(ix, "Tanh", [t[2]], [t[3]], base),
            make_node(ix, "Mul", [x, t[3]], [node.output[0]], base),
        ]

    return _expand_each(model, "Mish", "mish_decompose", build)


def mish_to_softplus_tanh(model: onnx.ModelProto) -> list[Change]:
    """Mish(x) -> x * Tanh(Softplus(x)) (exact), for accelerators that run Softplus and Tanh."""

    def build(ix, node, base):
        t = [ix.fresh(base) for _ in range(2)]
        x = node.input[0]
        return [
            make_node(ix, "Softplus", [x], [t[0]], base),
            make_node(ix, "Tanh", [t[0]], [t[1]], base),
            make_node(ix, "Mul", [x, t[1]], [node.output[0]], base),
        ]

    return _expand_each(model, "Mish", "mish_to_softplus_tanh", build)


# --------------------------------------------------------------------------------------------
# LayerNormalization


def layernorm_decompose(model: onnx.ModelProto) -> list[Change]:
    """LayerNormalization -> ReduceMean/Sub/Mul/ReduceMean/Add/Sqrt/Div/Mul/Add (exact)."""
    changes = []
    ix = GraphIndex(model)
    opset = opset_of(model)
    for node in list(model.graph.node):
        if node.op_type != "LayerNormalization" or len(node.output) > 1 and any(node.output[1:]):
            continue  # the optional Mean/InvStdDev outputs are used: leave it
        attrs = _attrs(node)
        axis = attrs.get("axis", -1)
        eps = attrs.get("epsilon", 1e-5)
        base = node.name or "layernorm"
        x = node.input[0]
        rank = _rank(model, x)
        if rank is None:
            continue
        axes = list(range(axis % rank, rank))
        t = [ix.fresh(base) for _ in range(7)]
        eps_name = ix.add_initializer(base + "_eps", np.array(eps, np.float32))
        new = [
            _reduce_mean(ix, x, t[0], axes, opset, base),
            make_node(ix, "Sub", [x, t[0]], [t[1]], base),
            make_node(ix, "Mul", [t[1], t[1]], [t[2]], base),
            _reduce_mean(ix, t[2], t[3], axes, opset, base),
            make_node(ix, "Add", [t[3], eps_name], [t[4]], base),
            make_node(ix, "Sqrt", [t[4]], [t[5]], base),
            make_node(ix, "Div", [t[1], t[5]], [t[6]], base),
        ]
        scaled = t[6]
        if len(node.input) > 1 and node.input[1]:
            out = node.output[0] if not (len(node.input) > 2 and node.input[2]) else ix.fresh(base)
            new.append(make_node(ix, "Mul", [scaled, node.input[1]], [out], base))
            scaled = out
        if len(node.input) > 2 and node.input[2]:
            new.append(make_node(ix, "Add", [scaled, node.input[2]], [node.output[0]], base))
        if new[-1].output[0] != node.output[0]:
            new.append(make_node(ix, "Identity", [scaled], [node.output[0]], base))
        changes.append(Change("layernorm_decompose", [node_label(node)], [n.name for n in new]))
        ix.replace([node], new)
    cleanup(model)
    return changes


def _reduce_mean(ix: GraphIndex, x: str, out: str, axes: list[int], opset: int, base: str) -> onnx.NodeProto:
    if opset >= 18:
        axes_name = ix.add_initializer(base + "_axes", np.array(axes, np.int64))
        return make_node(ix, "ReduceMean", [x, axes_name], [out], base, keepdims=1)
    return make_node(ix, "ReduceMean", [x], [out], base, axes=axes, keepdims=1)


def _rank(model: onnx.ModelProto, name: str) -> int | None:
    for vi in list(model.graph.input) + list(model.graph.value_info) + list(model.graph.output):
        if vi.name == name and vi.type.tensor_type.HasField("shape"):
            return len(vi.type.tensor_type.shape.dim)
    inferred = onnx.shape_inference.infer_shapes(model)
    for vi in list(inferred.graph.input) + list(inferred.graph.value_info):
        if vi.name == name and vi.type.tensor_type.HasField("shape"):
            return len(vi.type.tensor_type.shape.dim)
    return None


def _reduce_axes(ix: GraphIndex, node: onnx.NodeProto) -> list[int] | None:
    attrs = _attrs(node)
    if "axes" in attrs:
        return list(attrs["axes"])
    if len(node.input) > 1 and node.input[1]:
        value = ix.const(node.input[1])
        return None if value is None else [int(v) for v in value.reshape(-1)]
    return None


def layernorm_fuse(model: onnx.ModelProto) -> list[Change]:
    """The decomposed layer norm (mean, centre, variance, eps, sqrt, divide, scale, shift) ->
    LayerNormalization (exact; opset 17)."""
    return _with_opset(model, 17, _layernorm_fuse)


def _layernorm_fuse(model: onnx.ModelProto) -> list[Change]:
    changes = []
    ix = GraphIndex(model)
    for mean in ix.live_nodes("ReduceMean"):
        x = mean.input[0]
        axes = _reduce_axes(ix, mean)
        rank = _rank(model, x)
        if axes is None or rank is None:
            continue
        axes = sorted(a % rank for a in axes)
        if axes != list(range(axes[0], rank)):
            continue
        subs = [n for n in ix.consumers.get(mean.output[0], []) if n.op_type == "Sub" and n.input[0] == x]
        if len(subs) != 1 or len(ix.consumers[mean.output[0]]) != 1:
            continue
        sub = subs[0]
        users = ix.consumers.get(sub.output[0], [])
        sq = next((n for n in users if (n.op_type == "Mul" and n.input[0] == n.input[1] == sub.output[0]) or (n.op_type == "Pow" and _close(ix.scalar(n.input[1]), 2.0))), None)
        div = next((n for n in users if n.op_type == "Div" and n.input[0] == sub.output[0]), None)
        if sq is None or div is None or len(users) != 2:
            continue
        var = ix.single_consumer(sq.output[0])
        if var is None or var.op_type != "ReduceMean" or sorted(a % rank for a in (_reduce_axes(ix, var) or [-99])) != axes:
            continue
        add_eps = ix.single_consumer(var.output[0])
        if add_eps is None or add_eps.op_type != "Add":
            continue
        eps = ix.scalar(ix.other_input(add_eps, var.output[0]) or "")
        sqrt = ix.single_consumer(add_eps.output[0])
        if eps is None or sqrt is None or sqrt.op_type != "Sqrt" or div.input[1] != sqrt.output[0]:
            continue
        old = [mean, sub, sq, var, add_eps, sqrt, div]
        out = div.output[0]
        scale_name = bias_name = None
        nxt = ix.single_consumer(out)
        if nxt is not None and nxt.op_type == "Mul":
            scale_name = ix.other_input(nxt, out)
            scale = ix.const(scale_name or "")
            if scale is not None:
                old.append(nxt)
                out = nxt.output[0]
                nxt = ix.single_consumer(out)
                if nxt is not None and nxt.op_type == "Add" and ix.const(ix.other_input(nxt, out) or "") is not None:
                    bias_name = ix.other_input(nxt, out)
                    old.append(nxt)
                    out = nxt.output[0]
            else:
                scale_name = None
        base = mean.name or "layernorm"
        inner = _inner_shape(model, x, axes[0])
        if inner is None:
            continue
        if scale_name is None:
            scale_name = ix.add_initializer(base + "_scale", np.ones(inner, np.float32))
        else:
            scale_name = ix.add_initializer(base + "_scale", np.broadcast_to(ix.const(scale_name), inner).astype(np.float32))
        inputs = [x, scale_name]
        if bias_name is not None:
            inputs.append(ix.add_initializer(base + "_bias", np.broadcast_to(ix.const(bias_name), inner).astype(np.float32)))
        new = [make_node(ix, "LayerNormalization", inputs, [out], base, axis=axes[0], epsilon=float(eps))]
        changes.append(Change("layernorm_fuse", [node_label(n) for n in old], [new[0].name]))
        ix.replace(old, new)
    cleanup(model)
    return changes


def _inner_shape(model: onnx.ModelProto, name: str, axis: int) -> tuple[int, ...] | None:
    inferred = onnx.shape_inference.infer_shapes(model)
    for vi in list(inferred.graph.input) + list(inferred.graph.value_info):
        if vi.name == name:
            dims = [d.dim_value if d.HasField("dim_value") else None for d in vi.type.tensor_type.shape.dim]
            inner = dims[axis:]
            return tuple(inner) if all(d for d in inner) else None  # type: ignore[misc]
    return None


# --------------------------------------------------------------------------------------------
# Folding


def fold_batchnorm(model: onnx.ModelProto) -> list[Change]:
    """Conv -> BatchNormalization, or Gemm -> BatchNormalization: fold the normalisation into the
    weights and bias (exact up to float rounding)."""
    changes = []
    ix = GraphIndex(model)
    for bn in list(model.graph.node):
        if bn.op_type != "BatchNormalization" or len([o for o in bn.output if o]) > 1:
            continue
        prev = ix.producer.get(bn.input[0])
        if prev is None or prev.op_type not in ("Conv", "Gemm") or ix.single_consumer(prev.output[0]) is not bn:
            continue
        values = [ix.const(n) for n in bn.input[1:5]]
        w = ix.const(prev.input[1])
        if any(v is None for v in values) or w is None:
            continue
        gamma, beta, mean, var = (v.astype(np.float64) for v in values)  # type: ignore[union-attr]
        eps = next((helper.get_attribute_value(a) for a in bn.attribute if a.name == "epsilon"), 1e-5)
        factor = gamma / np.sqrt(var + eps)
        bias = ix.const(prev.input[2]) if len(prev.input) > 2 and prev.input[2] else None
        if prev.op_type == "Conv":
            new_w = w.astype(np.float64) * factor.reshape(-1, *([1] * (w.ndim - 1)))
        else:
            attrs = _attrs(prev)
            if attrs.get("alpha", 1.0) != 1.0 or attrs.get("beta", 1.0) != 1.0:
                continue
            new_w = w.astype(np.float64) * (factor[:, None] if attrs.get("transB", 0) else factor[None, :])
            if bias is not None and bias.shape != factor.shape:
                continue
        base_bias = np.zeros_like(factor) if bias is None else bias.astype(np.float64)
        new_b = (base_bias - mean) * factor + beta
        w_name = ix.add_initializer((prev.name or "conv") + "_w_bn", new_w.astype(w.dtype))
        b_name = ix.add_initializer((prev.name or "conv") + "_b_bn", new_b.astype(w.dtype))
        fused = onnx.NodeProto()
        fused.CopyFrom(prev)
        del fused.input[:]
        fused.input.extend([prev.input[0], w_name, b_name])
        fused.output[0] = bn.output[0]
        changes.append(Change("fold_batchnorm", [node_label(prev), node_label(bn)], [fused.name or prev.op_type]))
        ix.replace([prev, bn], [fused])
    cleanup(model)
    return changes


def fold_pad_into_conv(model: onnx.ModelProto) -> list[Change]:
    """A constant zero Pad on the spatial axes before a Conv -> the Conv's own pads (exact)."""
    changes = []
    ix = GraphIndex(model)
    for pad, conv in ix.chains("Pad", "Conv"):
        if conv.input[0] != pad.output[0]:
            continue
        attrs = _attrs(pad)
        mode = attrs.get("mode", b"constant")
        mode = mode.decode() if isinstance(mode, bytes) else mode
        if mode != "constant":
            continue
        pads = attrs.get("pads") if "pads" in attrs else (ix.const(pad.input[1]) if len(pad.input) > 1 else None)
        value = attrs.get("value", 0.0) if "value" in attrs else (ix.scalar(pad.input[2]) if len(pad.input) > 2 and pad.input[2] else 0.0)
        if pads is None or value != 0.0 or (len(pad.input) > 3 and pad.input[3]):
            continue
        pads = [int(p) for p in np.asarray(pads).reshape(-1)]
        rank = len(pads) // 2
        begin, end = pads[:rank], pads[rank:]
        if any(begin[:2]) or any(end[:2]) or any(p < 0 for p in pads):
            continue
        conv_attrs = _attrs(conv)
        auto_pad = conv_attrs.get("auto_pad", b"NOTSET")
        if (auto_pad.decode() if isinstance(auto_pad, bytes) else auto_pad) not in ("NOTSET", ""):
            continue
        spatial = rank - 2
        old_pads = list(conv_attrs.get("pads", [0] * (2 * spatial)))
        new_pads = [old_pads[i] + begin[2 + i] for i in range(spatial)] + [old_pads[spatial + i] + end[2 + i] for i in range(spatial)]
        fused = onnx.NodeProto()
        fused.CopyFrom(conv)
        fused.input[0] = pad.input[0]
        for a in list(fused.attribute):
            if a.name == "pads":
                fused.attribute.remove(a)
        fused.attribute.append(helper.make_attribute("pads", new_pads))
        changes.append(Change("fold_pad_into_conv", [node_label(pad), node_label(conv)], [fused.name or "Conv"]))
        ix.replace([pad, conv], [fused])
    cleanup(model)
    return changes


# Operators whose value depends on more than their inputs: never folded.
NONDETERMINISTIC = {"RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike", "Multinomial", "Bernoulli", "Dropout"}
# Folding must not turn a small expression into a huge constant.
FOLD_MAX_ELEMENTS = 1 << 20


def _static_shapes(value_infos) -> dict[str, list[int]]:
    """name -> dims for each value info whose every dimension is known (a later one wins)."""
    shapes = {}
    for vi in value_infos:
        dims = vi.type.tensor_type.shape.dim if vi.type.tensor_type.HasField("shape") else None
        if dims is not None and all(d.HasField("dim_value") for d in dims):
            shapes[vi.name] = [d.dim_value for d in dims]
    return shapes


def fold_constants(model: onnx.ModelProto) -> list[Change]:
    """Evaluate nodes whose inputs are all constants, and Shape nodes of static tensors (the
    shape-only subgraphs exporters leave), replacing them with initializers (exact)."""
    from onnx.reference import ReferenceEvaluator

    changes = []
    inferred = onnx.shape_inference.infer_shapes(model, data_prop=True)
    static = _static_shapes([*inferred.graph.input, *inferred.graph.value_info, *inferred.graph.output])
    ix = GraphIndex(model)
    known: dict[str, np.ndarray] = {name: numpy_helper.to_array(t) for name, t in ix.initializers.items()}
    graph_inputs = {i.name for i in model.graph.input} - set(known)
    for node in list(model.graph.node):
        if node.op_type in NONDETERMINISTIC or node.domain not in ("", "ai.onnx") or any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS) for a in node.attribute):
            continue
        value = None
        if node.op_type == "Shape" and node.input[0] in static and node.input[0] not in known:
            attrs = _attrs(node)
            dims = static[node.input[0]]
            start, end = attrs.get("start", 0), attrs.get("end", len(dims))
            value = np.array(dims[start:end], dtype=np.int64)
        elif node.op_type == "Constant" or all((not i) or i in known for i in node.input):
            if any(i in graph_inputs for i in node.input):
                continue
            try:
                inputs = [known[i] for i in node.input if i]
                sub = helper.make_graph(
                    [node],
                    "fold",
                    [helper.make_tensor_value_info(f"in{k}", helper.np_dtype_to_tensor_dtype(v.dtype), v.shape) for k, v in enumerate(inputs)],
                    [helper.make_tensor_value_info(o, onnx.TensorProto.UNDEFINED, None) for o in node.output if o],
                )
                renamed = onnx.NodeProto()
                renamed.CopyFrom(node)
                position = 0
                for k, name in enumerate(node.input):
                    if name:
                        renamed.input[k] = f"in{position}"
                        position += 1
                sub = helper.make_graph([renamed], "fold", sub.input, sub.output)
                result = ReferenceEvaluator(helper.make_model(sub, opset_imports=model.opset_import)).run(None, {f"in{k}": v for k, v in enumerate(inputs)})
            except Exception as exc:  # noqa: BLE001 - an op the reference cannot run is simply not folded
                reraise_if_interrupted(exc)
                continue
            if any(np.asarray(r).size > FOLD_MAX_ELEMENTS for r in result):
                continue
            for o, r in zip([o for o in node.output if o], result):
                known[o] = np.asarray(r)
            if node.op_type != "Constant":
                changes.append(Change("fold_constants", [node_label(node)], []))
            continue
        if value is not None:
            known[node.output[0]] = value
            changes.append(Change("fold_constants", [node_label(node)], [], "shape of a static tensor"))
    folded_outputs = {o for n in model.graph.node for o in n.output if o in known and o not in ix.initializers}
    if not folded_outputs:
        return []
    kept = [n for n in model.graph.node if not all((o in known) for o in n.output if o)]
    del model.graph.node[:]
    model.graph.node.extend(kept)
    used = {i for n in model.graph.node for i in n.input} | {o.name for o in model.graph.output}
    existing = {t.name for t in model.graph.initializer}
    for name in sorted(folded_outputs & used):
        if name not in existing:
            model.graph.initializer.append(numpy_helper.from_array(known[name], name))
    cleanup(model)
    return [c for c in changes if c.replaced]


_LAYOUT_OPS = ("Reshape", "Flatten", "Squeeze", "Unsqueeze")


def collapse_reshape_chains(model: onnx.ModelProto) -> list[Change]:
    """Chains of Reshape/Flatten/Squeeze/Unsqueeze -> one Reshape to the final static shape, and
    Transpose followed by Transpose -> one Transpose (or none when they cancel) (exact)."""
    changes = []
    inferred = onnx.shape_inference.infer_shapes(model)
    shapes = _static_shapes([*inferred.graph.value_info, *inferred.graph.output, *inferred.graph.input])
    ix = GraphIndex(model)
    for node in list(model.graph.node):
        if node not in ix.graph.node:
            continue
        if node.op_type in _LAYOUT_OPS:
            prev = ix.producer.get(node.input[0])
            if prev is not None and prev.op_type in _LAYOUT_OPS:
                continue  # start from the head of the chain
            chain = [node]
            while True:
                nxt = ix.single_consumer(chain[-1].output[0])
                if nxt is None or nxt.op_type not in _LAYOUT_OPS or nxt.input[0] != chain[-1].output[0]:
                    break
                chain.append(nxt)
            final = chain[-1].output[0]
            if len(chain) < 2 or final not in shapes:
                continue
            shape_name = ix.add_initializer((node.name or "reshape") + "_shape", np.array(shapes[final], np.int64))
            new = [make_node(ix, "Reshape", [node.input[0], shape_name], [final], node.name or "reshape")]
            changes.append(Change("collapse_reshape_chains", [node_label(n) for n in chain], [new[0].name]))
            ix.replace(chain, new)
        elif node.op_type == "Transpose":
            nxt = ix.single_consumer(node.output[0])
            if nxt is None or nxt.op_type != "Transpose":
                continue
            p1 = next((list(helper.get_attribute_value(a)) for a in node.attribute if a.name == "perm"), None)
            p2 = next((list(helper.get_attribute_value(a)) for a in nxt.attribute if a.name == "perm"), None)
            if p1 is None or p2 is None or len(p1) != len(p2):
                continue
            perm = [p1[i] for i in p2]
            if perm == list(range(len(perm))):
                new = [make_node(ix, "Identity", [node.input[0]], [nxt.output[0]], node.name or "transpose")]
            else:
                new = [make_node(ix, "Transpose", [node.input[0]], [nxt.output[0]], node.name or "transpose", perm=perm)]
            changes.append(Change("collapse_reshape_chains", [node_label(node), node_label(nxt)], [new[0].name]))
            ix.replace([node, nxt], new)
    _remove_identities(model)
    cleanup(model)
    return changes


def _remove_identities(model: onnx.ModelProto) -> None:
    """Bypass Identity nodes; one that feeds a graph output hands its name to its producer."""
    outputs = {o.name for o in model.graph.output}
    graph_inputs = {i.name for i in model.graph.input} | {t.name for t in model.graph.initializer}
    readers: dict[str, int] = {}
    for node in model.graph.node:
        for i in node.input:
            readers[i] = readers.get(i, 0) + 1
    producers = {o: n for n in model.graph.node for o in n.output}
    rename = {}
    kept = []
    for node in model.graph.node:
        if node.op_type != "Identity":
            kept.append(node)
        elif node.output[0] not in outputs:
            rename[node.output[0]] = rename.get(node.input[0], node.input[0])
        elif node.input[0] in producers and node.input[0] not in graph_inputs | outputs and readers.get(node.input[0]) == 1:
            producer = producers[node.input[0]]
            producer.output[list(producer.output).index(node.input[0])] = node.output[0]
        else:
            kept.append(node)
    for node in kept:
        for k, name in enumerate(node.input):
            if name in rename:
                node.input[k] = rename[name]
    del model.graph.node[:]
    model.graph.node.extend(kept)


def remove_dropout(model: onnx.ModelProto) -> list[Change]:
    """Bypass Dropout nodes: at inference a Dropout is the identity (exact). Only those whose
    mask output nothing uses, and whose training_mode is absent or a constant false."""
    changes = []
    ix = GraphIndex(model)
    outputs = {o.name for o in model.graph.output}
    read = {i for n in model.graph.node for i in n.input}
    for node in list(model.graph.node):
        if node.op_type != "Dropout" or node.domain not in ("", "ai.onnx"):
            continue
        mask = node.output[1] if len(node.output) > 1 else ""
        if mask and (mask in outputs or mask in read):
            continue
        training = node.input[2] if len(node.input) > 2 else ""
        if training and (training not in ix.initializers or bool(numpy_helper.to_array(ix.initializers[training]).reshape(-1)[0])):
            continue
        if _attrs(node).get("is_test", 1) == 0:  # opset < 7: a training-mode Dropout
            continue
        identity = make_node(ix, "Identity", [node.input[0]], [node.output[0]], node.name or "dropout")
        changes.append(Change("remove_dropout", [node_label(node)], []))
        ix.replace([node], [identity])
    if changes:
        _remove_identities(model)
        cleanup(model)
    return changes


def convert_opset(version: int) -> Callable[[onnx.ModelProto], list[Change]]:
    """A pass that moves the model to another opset with ONNX's version converter."""

    def apply(model: onnx.ModelProto) -> list[Change]:
        before = opset_of(model)
        if before == version:
            return []
        from onnx import version_converter

        model.CopyFrom(version_converter.convert_version(model, version))
        return [Change(f"convert_opset_{version}", [], [], f"opset {before} -> {version}")]

    apply.__doc__ = f"Convert the model to opset {version} (ONNX's version converter)."
    return apply


REWRITES: tuple[Rewrite, ...] = (
    Rewrite("fold_constants", fold_constants, True, 1e-6, "fold constant expressions and shape-only subgraphs"),
    Rewrite("fold_batchnorm", fold_batchnorm, True, 1e-4, "fold BatchNormalization into the preceding Conv/Gemm"),
    Rewrite("fold_pad_into_conv", fold_pad_into_conv, True, 1e-6, "fold a constant zero Pad into the following Conv"),
    Rewrite("remove_dropout", remove_dropout, True, 0.0, "remove inference-time Dropout (the identity at inference)"),
    Rewrite("collapse_reshape_chains", collapse_reshape_chains, True, 0.0, "collapse Reshape/Flatten/Squeeze/Unsqueeze chains and Transpose pairs"),
    Rewrite("erf_gelu_to_gelu", erf_gelu_to_gelu, True, 1e-5, "Erf-based GELU -> Gelu operator (opset 20)", min_opset=20),
    Rewrite("erf_gelu_to_tanh", erf_gelu_to_tanh, False, 1e-3, "Erf-based GELU -> tanh approximation"),
    Rewrite("gelu_to_tanh", gelu_to_tanh, False, 1e-3, "Gelu operator -> tanh approximation"),
    Rewrite("hardswish_decompose", hardswish_decompose, True, 1e-6, "HardSwish -> x * HardSigmoid(x)"),
    Rewrite("hardsigmoid_fuse", hardsigmoid_fuse, True, 1e-6, "Clip(x+3,0,6)/6 -> HardSigmoid (and x * it -> HardSwish)"),
    Rewrite("hardsigmoid_decompose", hardsigmoid_decompose, True, 1e-6, "HardSigmoid -> Clip(alpha*x + beta, 0, 1)"),
    Rewrite("silu_to_swish", silu_to_swish, True, 1e-6, "x * Sigmoid(x) -> Swish (opset 24)", min_opset=24),
    Rewrite("swish_decompose", swish_decompose, True, 1e-6, "Swish -> x * Sigmoid(alpha x)"),
    Rewrite("mish_to_softplus_tanh", mish_to_softplus_tanh, True, 1e-5, "Mish -> x * Tanh(Softplus(x))"),
    Rewrite("mish_decompose", mish_decompose, True, 1e-5, "Mish -> x * Tanh(Log(1 + Exp(x)))"),
    Rewrite("layernorm_decompose", layernorm_decompose, True, 1e-4, "LayerNormalization -> its decomposed form"),
    Rewrite("layernorm_fuse", layernorm_fuse, True, 1e-4, "decomposed layer norm -> LayerNormalization (opset 17)", min_opset=17),
)


def find_rewrite(name: str) -> Rewrite:
    for r in REWRITES:
        if r.name == name:
            return r
    raise KeyError(name)
