"""What TIDL's rules read off a node: its variable inputs, kernel, strides, padding and axes."""

from __future__ import annotations

import math

import numpy as np

from edgedeploy.audit.rules import NodeView, Offence, TensorView


def variable_inputs(node: NodeView) -> list[TensorView]:
    return [t for t in node.inputs if t.present and not t.is_constant]


def non_singleton(shape) -> int:
    """Dimensions that are not 1 (an unknown dimension counts, it may be large)."""
    return sum(1 for d in shape if d != 1)


def max_variable_non_singleton(node: NodeView) -> int | None:
    counts = [non_singleton(t.shape) for t in variable_inputs(node) if t.shape is not None]
    return max(counts) if counts else None


def spatial_of(node: NodeView) -> tuple[int, ...] | None:
    """Spatial dims (H, W) of input 0 of a 4-D NCHW node, when known."""
    x = node.input(0)
    if x is None or x.shape is None or len(x.shape) != 4 or not all(isinstance(d, int) for d in x.shape[2:]):
        return None
    return tuple(int(d) for d in x.shape[2:])


def kernel_of(node: NodeView) -> tuple[int, ...] | None:
    """kernel_shape, else the weight's spatial dims (Conv/ConvTranspose/DeformConv)."""
    ks = node.attr("kernel_shape")
    if ks:
        return tuple(int(k) for k in ks)
    w = node.input(1)
    if w is not None and w.shape is not None and len(w.shape) >= 3 and all(isinstance(d, int) for d in w.shape[2:]):
        return tuple(int(d) for d in w.shape[2:])
    return None


def strides_of(node: NodeView, spatial_rank: int) -> tuple[int, ...]:
    s = node.attr("strides")
    return tuple(int(v) for v in s) if s else (1,) * spatial_rank


def pads_of(node: NodeView) -> tuple[int, ...] | None:
    """(begin..., end...) padding, resolving auto_pad SAME_* from the static shapes."""
    auto_pad = node.attr("auto_pad", "NOTSET")
    kernel = kernel_of(node)
    if kernel is None:
        return None
    rank = len(kernel)
    if auto_pad in ("NOTSET", ""):
        pads = node.attr("pads")
        return tuple(int(p) for p in pads) if pads else (0,) * (2 * rank)
    if auto_pad == "VALID":
        return (0,) * (2 * rank)
    x = node.input(0)
    if x is None or x.shape is None or not all(isinstance(d, int) for d in x.shape[2:]):
        return None
    strides = strides_of(node, rank)
    dilations = tuple(int(d) for d in node.attr("dilations", [1] * rank))
    begins, ends = [], []
    for size, k, s, d in zip(x.shape[2:], kernel, strides, dilations):
        total = max((math.ceil(size / s) - 1) * s + (k - 1) * d + 1 - size, 0)
        small, large = total // 2, total - total // 2
        begins.append(large if auto_pad == "SAME_LOWER" else small)
        ends.append(small if auto_pad == "SAME_LOWER" else large)
    return tuple(begins + ends)


def int_attr_or_input(node: NodeView, attr: str, input_index: int):
    """A value given as an attribute (older opsets) or a constant input (newer): (known, value)."""
    if node.has_attr(attr):
        return True, np.asarray(node.attr(attr))
    t = node.input(input_index)
    if t is None:
        return True, None
    if t.is_constant and t.value is not None:
        return True, np.asarray(t.value)
    return False, None


def negative_axis(axis: int, rank: int) -> int:
    return axis - rank if axis >= 0 else axis


def non_default_attr(node: NodeView, attr: str, default: int) -> Offence | None:
    """An Offence naming an integer attribute's value where it is not `default`, the only value TIDL takes."""
    value = int(node.attr(attr, default))
    if value != default:
        return Offence(value)
    return None


def non_default_dilations(node: NodeView):
    dilations = node.attr("dilations")
    if dilations and any(int(d) != 1 for d in dilations):
        return Offence(tuple(dilations))
    return None


def rank_outside(tensor: TensorView | None, what: str, *, at_least: int = 0, at_most: int | None = None, allowed: tuple[int, ...] | None = None) -> Offence | None:
    """An Offence naming the tensor's rank when it is known and outside the limits (`what`: which rank it is)."""
    if tensor is None or tensor.rank is None:
        return None
    if tensor.rank < at_least or (at_most is not None and tensor.rank > at_most) or (allowed is not None and tensor.rank not in allowed):
        return Offence(tensor.rank, what)
    return None
