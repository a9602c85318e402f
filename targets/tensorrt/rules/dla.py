"""Orin's DLA rules: where a layer leaves the DLA for the GPU (trtexec --useDLACore=N --allowGPUFallback).

Sources in rules/__init__.py: TensorRT's NvInfer.h DLA notes and NVIDIA's DLA Supported Layers and
Restrictions page. Every rule here is FALLBACK (the layer runs on the GPU) and applies only where
the DLA is the accelerator (units=DLA). Declared in the order the audit checks them, before the GPU rules.
"""

from __future__ import annotations

import math

from edgedeploy.audit.rules import NodeView, Offence, OpSupport, Placement
from edgedeploy.targets.tensorrt import op_tables
from edgedeploy.targets.tensorrt.rules.documents import DLA_FIRST_VERSION_WITH_LATE_OPS, RULES, version_at_least
from edgedeploy.targets.tensorrt.rules.helpers import ints, out_of, spatial_values

DLA = ("dla",)


# General DLA limits (DLA Supported Layers and Restrictions, "General Restrictions").
DLA_MAX_BATCH = 4096
DLA_MAX_DIM = 8192


def _batch_and_chw(shape: tuple) -> tuple[int, list[int]]:
    """DLA's batch is the product of every dimension except the last three (C, H, W)."""
    dims = list(shape)
    head, chw = dims[:-3], dims[-3:]
    return (math.prod(head) if head else 1), chw


@RULES.rule(placement=Placement.FALLBACK, units=DLA)
def dla_static_shapes_only(node, chip):
    """DLA does not support dynamic dimensions; the layer runs on the GPU."""
    for t in list(node.inputs) + list(node.outputs):
        if t.present and not t.is_constant and t.shape is not None and not t.is_static:
            return Offence(t.shape, f"tensor '{t.name}'")


@RULES.rule(placement=Placement.FALLBACK, units=DLA, DLA_MAX_BATCH=DLA_MAX_BATCH, DLA_MAX_DIM=DLA_MAX_DIM)
def dla_batch_and_dimension_limits(node, chip):
    """DLA runs batches up to {DLA_MAX_BATCH} (the product of all dimensions but C, H, W) and non-batch dimensions up to {DLA_MAX_DIM}."""
    for t in node.outputs:
        if not t.present or not t.is_static or not t.shape:
            continue
        batch, chw = _batch_and_chw(t.shape)
        if batch > DLA_MAX_BATCH:
            return Offence(batch, f"batch of '{t.name}'")
        big = [d for d in chw if d > DLA_MAX_DIM]
        if big:
            return Offence(max(big), f"dimension of '{t.name}'")


# Convolution / fully connected (NvInfer.h IConvolutionLayer, DLA notes).
DLA_CONV_KERNEL = (1, 32)
DLA_CONV_STRIDE = (1, 8)
DLA_CONV_DILATION = (1, 32)
DLA_CONV_PADDING = (0, 31)
DLA_MAX_OUTPUT_MAPS = 8192
DLA_MAX_GROUPS = 8192


@RULES.rule("Conv", placement=Placement.FALLBACK, units=DLA, DLA_CONV_KERNEL=DLA_CONV_KERNEL, DLA_CONV_STRIDE=DLA_CONV_STRIDE,
      DLA_CONV_DILATION=DLA_CONV_DILATION, DLA_CONV_PADDING=DLA_CONV_PADDING)
def dla_convolution_limits(node, chip):
    """DLA convolves in 2D only, with kernel sizes in {DLA_CONV_KERNEL}, strides in {DLA_CONV_STRIDE}, dilations in {DLA_CONV_DILATION} and padding in {DLA_CONV_PADDING} and smaller than the kernel."""
    kernel = spatial_values(node, "kernel_shape", 1)
    if len(kernel) != 2:
        return Offence(len(kernel), "spatial dimensions (2D only)")
    found = []
    if out_of(kernel, *DLA_CONV_KERNEL):
        found.append(Offence(kernel, "kernel size"))
    strides = spatial_values(node, "strides", 1)
    if out_of(strides, *DLA_CONV_STRIDE):
        found.append(Offence(strides, "stride"))
    dilations = spatial_values(node, "dilations", 1)
    if out_of(dilations, *DLA_CONV_DILATION):
        found.append(Offence(dilations, "dilation"))
    pads = ints(node.attr("pads")) or [0, 0, 0, 0]
    if out_of(pads, *DLA_CONV_PADDING) or any(p >= kernel[i % 2] for i, p in enumerate(pads)):
        found.append(Offence(pads, "padding"))
    # SAME_* auto_pad is resolved by TensorRT; the padding it makes still has to satisfy the limits above.
    return found


@RULES.rule("Conv", "ConvTranspose", "Gemm", "MatMul", placement=Placement.FALLBACK, units=DLA,
      DLA_MAX_OUTPUT_MAPS=DLA_MAX_OUTPUT_MAPS, DLA_MAX_GROUPS=DLA_MAX_GROUPS)
def dla_output_maps_and_groups(node, chip):
    """DLA produces at most {DLA_MAX_OUTPUT_MAPS} output channels per convolution or fully connected layer, in at most {DLA_MAX_GROUPS} groups."""
    found = []
    w = node.input(1)
    if w is not None and w.shape is not None and w.shape:
        if node.op_type == "Conv":
            maps = w.shape[0]
        elif node.op_type == "ConvTranspose":
            maps = w.shape[1] * int(node.attr("group", 1)) if isinstance(w.shape[1], int) else None
        elif node.op_type == "Gemm":
            maps = w.shape[0] if int(node.attr("transB", 0)) else w.shape[-1]
        else:
            maps = w.shape[-1]
        if isinstance(maps, int) and maps > DLA_MAX_OUTPUT_MAPS:
            found.append(Offence(maps, "output channels"))
    groups = int(node.attr("group", 1))
    if groups > DLA_MAX_GROUPS:
        found.append(Offence(groups, "groups"))
    return found


@RULES.rule("Gemm", "MatMul", placement=Placement.FALLBACK, units=DLA)
def dla_fully_connected_needs_constant_weights(node, chip):
    """DLA runs Gemm/MatMul only as a fully connected layer: the second input must be a constant."""
    w = node.input(1)
    if w is not None and not w.is_constant:
        return Offence("run-time second input")


# Deconvolution (NvInfer.h IDeconvolutionLayer, DLA notes; docs: no grouped/dilated, padding 0).
DLA_DECONV_RANGE = (1, 32)
DLA_DECONV_LONG_SIDES = (64, 96, 128)


def _deconv_ok(values: list[int]) -> bool:
    if all(DLA_DECONV_RANGE[0] <= v <= DLA_DECONV_RANGE[1] for v in values):
        return True
    # One side 64, 96 or 128 and the other 1: [1x64] or [64x1], not [64x64].
    return sorted(values) in ([1, s] for s in DLA_DECONV_LONG_SIDES)


@RULES.rule("ConvTranspose", placement=Placement.FALLBACK, units=DLA, DLA_DECONV_RANGE=DLA_DECONV_RANGE, DLA_DECONV_LONG_SIDES=DLA_DECONV_LONG_SIDES)
def dla_deconvolution_limits(node, chip):
    """DLA deconvolves in 2D only, ungrouped, undilated and without padding, with kernel sizes and strides in {DLA_DECONV_RANGE} (or {DLA_DECONV_LONG_SIDES} on one side and 1 on the other)."""
    kernel = spatial_values(node, "kernel_shape", 1)
    if len(kernel) != 2:
        return Offence(len(kernel), "spatial dimensions (2D only)")
    found = []
    if not _deconv_ok(kernel):
        found.append(Offence(kernel, "kernel size"))
    strides = spatial_values(node, "strides", 1)
    if not _deconv_ok(strides):
        found.append(Offence(strides, "stride"))
    pads = ints(node.attr("pads"))
    if any(pads):
        found.append(Offence(pads, "padding must be 0"))
    if int(node.attr("group", 1)) != 1:
        found.append(Offence(int(node.attr("group")), "groups must be 1"))
    if any(d != 1 for d in ints(node.attr("dilations"))):
        found.append(Offence(ints(node.attr("dilations")), "dilation must be 1"))
    return found


# Pooling (NvInfer.h IPoolingLayer, DLA notes).
DLA_POOL_WINDOW = (1, 8)
DLA_POOL_STRIDE = (1, 16)
DLA_POOL_PADDING = (0, 7)


@RULES.rule("MaxPool", "AveragePool", placement=Placement.FALLBACK, units=DLA, DLA_POOL_WINDOW=DLA_POOL_WINDOW,
      DLA_POOL_STRIDE=DLA_POOL_STRIDE, DLA_POOL_PADDING=DLA_POOL_PADDING)
def dla_pooling_limits(node, chip):
    """DLA pools in 2D only, with windows in {DLA_POOL_WINDOW}, strides in {DLA_POOL_STRIDE} and padding in {DLA_POOL_PADDING}."""
    window = ints(node.attr("kernel_shape"))
    if len(window) != 2:
        return Offence(len(window), "spatial dimensions (2D only)")
    found = []
    if out_of(window, *DLA_POOL_WINDOW):
        found.append(Offence(window, "window size"))
    strides = ints(node.attr("strides")) or [1, 1]
    if out_of(strides, *DLA_POOL_STRIDE):
        found.append(Offence(strides, "stride"))
    pads = ints(node.attr("pads")) or [0, 0, 0, 0]
    if out_of(pads, *DLA_POOL_PADDING):
        found.append(Offence(pads, "padding"))
    return found


@RULES.rule("Concat", placement=Placement.FALLBACK, units=DLA, DLA_CONCAT_MIN_INPUTS=2)
def dla_concat_channel_axis(node, chip):
    """DLA concatenates at least {DLA_CONCAT_MIN_INPUTS} inputs, along the channel axis (the third from last) only."""
    x = node.input(0)
    rank = x.rank if x is not None else None
    found = []
    if len([t for t in node.inputs if t.present]) < 2:
        found.append(Offence(len(node.inputs), "inputs"))
    if rank is not None:
        axis = int(node.attr("axis", 0))
        axis = axis + rank if axis < 0 else axis
        if axis != rank - 3:
            found.append(Offence(axis, f"axis of a rank-{rank} tensor (channel axis is {rank - 3})"))
    return found


@RULES.rule("PRelu", placement=Placement.FALLBACK, units=DLA)
def dla_prelu_constant_slope(node, chip):
    """DLA needs the PRelu slope as a build-time constant."""
    slope = node.input(1)
    if slope is not None and not slope.is_constant:
        return Offence("run-time slope")


DLA_LRN_SIZES = (3, 5, 7, 9)


@RULES.rule("LRN", placement=Placement.FALLBACK, units=DLA, DLA_LRN_SIZES=DLA_LRN_SIZES)
def dla_lrn_window(node, chip):
    """DLA runs LRN with window sizes {DLA_LRN_SIZES} only."""
    size = int(node.attr("size", 0))
    if size not in DLA_LRN_SIZES:
        return Offence(size, "size")


# Softmax (NvInfer.h ISoftMaxLayer, DLA notes).
DLA_SOFTMAX_AXIS_MAX = 8192
DLA_SOFTMAX_AXIS_MAX_WITH_OTHERS = 1024


@RULES.rule("Softmax", placement=Placement.FALLBACK, units=DLA, DLA_SOFTMAX_AXIS_MAX=DLA_SOFTMAX_AXIS_MAX,
      DLA_SOFTMAX_AXIS_MAX_WITH_OTHERS=DLA_SOFTMAX_AXIS_MAX_WITH_OTHERS)
def dla_softmax_limits(node, chip):
    """DLA takes Softmax over a channel or spatial axis only, of at most {DLA_SOFTMAX_AXIS_MAX} elements ({DLA_SOFTMAX_AXIS_MAX_WITH_OTHERS} when another non-batch dimension is larger than 1)."""
    x = node.input(0)
    if x is None or x.shape is None:
        return None
    rank = len(x.shape)
    axis = int(node.attr("axis", -1 if node.opset >= 13 else 1))
    axis = axis + rank if axis < 0 else axis
    if axis < rank - 3:
        return Offence(axis, "batch axis")
    size = x.shape[axis]
    if not isinstance(size, int):
        return None
    others = [d for i, d in enumerate(x.shape) if i >= max(rank - 3, 0) and i != axis]
    limit = DLA_SOFTMAX_AXIS_MAX if all(d == 1 for d in others) else DLA_SOFTMAX_AXIS_MAX_WITH_OTHERS
    if size > limit:
        return Offence(size, f"axis size (limit {limit})")


@RULES.rule("Slice", "Split", placement=Placement.FALLBACK, units=DLA, DLA_SLICE_RANK=4)
def dla_slice_limits(node, chip):
    """DLA slices {DLA_SLICE_RANK}-D tensors only, with constant starts/ends/axes, steps of 1 and never along the first dimension."""
    x = node.input(0)
    found = []
    if x is not None and x.rank is not None and x.rank != 4:
        found.append(Offence(x.rank, "input rank"))
    rank = x.rank if x is not None and x.rank is not None else 4
    if node.op_type == "Split":
        axis = int(node.attr("axis", 0))
        if (axis + rank if axis < 0 else axis) == 0:
            found.append(Offence(0, "split along the first dimension"))
        return found
    for index, name in ((1, "starts"), (2, "ends"), (3, "axes"), (4, "steps")):
        t = node.input(index)
        if t is not None and not t.is_constant:
            found.append(Offence(name, "run-time input"))
    steps = node.input(4)
    if steps is not None and steps.value is not None and bool((steps.value != 1).any()):
        found.append(Offence(steps.value.tolist(), "steps"))
    axes = node.input(3)
    starts, ends = node.input(1), node.input(2)
    if axes is not None and axes.value is not None:
        sliced_axes = [a + rank if a < 0 else a for a in axes.value.reshape(-1).tolist()]
    elif starts is not None and starts.value is not None:
        sliced_axes = list(range(starts.value.size))
    else:
        sliced_axes = []
    if 0 in sliced_axes and x is not None and x.shape:
        # Slicing the full range of dim 0 is not slicing it.
        pos = sliced_axes.index(0)
        full = (
            starts is not None and starts.value is not None and int(starts.value.reshape(-1)[pos]) == 0
            and ends is not None and ends.value is not None
            and isinstance(x.shape[0], int) and int(ends.value.reshape(-1)[pos]) >= x.shape[0]
        )
        if not full:
            found.append(Offence(0, "slice along the first dimension"))
    return found


# Resize on DLA (NvInfer.h IResizeLayer, DLA notes): modes and integer scales.
DLA_RESIZE_NEAREST_SCALE = (1, 32)
DLA_RESIZE_LINEAR_SCALE = (1, 4)
DLA_RESIZE_NEAREST_COMBOS = (("asymmetric", "floor"), ("half_pixel", "round_prefer_floor"), ("half_pixel", "round_prefer_ceil"))


def _resize_scales(node: NodeView) -> list[float] | None:
    index = 1 if node.op_type == "Upsample" else 2
    scales = node.input(index)
    if scales is not None and scales.value is not None and scales.value.size:
        return [float(v) for v in scales.value.reshape(-1)]
    sizes = node.input(3) if node.op_type == "Resize" else None
    x = node.input(0)
    if sizes is not None and sizes.value is not None and x is not None and x.is_static and len(x.shape) == sizes.value.size:
        return [float(o) / float(i) if i else 0.0 for o, i in zip(sizes.value.reshape(-1).tolist(), x.shape)]
    return None


@RULES.rule("Resize", "Upsample", placement=Placement.FALLBACK, units=DLA, DLA_RESIZE_NEAREST_SCALE=DLA_RESIZE_NEAREST_SCALE,
      DLA_RESIZE_LINEAR_SCALE=DLA_RESIZE_LINEAR_SCALE)
def dla_resize_limits(node, chip):
    """DLA resizes 4-D tensors over H and W only, by integer scales in {DLA_RESIZE_NEAREST_SCALE} (nearest: asymmetric+floor or half_pixel+round_prefer_*) or {DLA_RESIZE_LINEAR_SCALE} (linear: half_pixel)."""
    found = []
    mode = node.attr("mode", "nearest")
    coord = node.attr("coordinate_transformation_mode", "half_pixel" if node.op_type == "Resize" else "asymmetric")
    nearest = node.attr("nearest_mode", "round_prefer_floor" if node.op_type == "Resize" else "floor")
    if mode == "nearest":
        if (coord, nearest) not in DLA_RESIZE_NEAREST_COMBOS:
            found.append(Offence(f"{coord}/{nearest}", "coordinate transformation / nearest mode"))
        limits = DLA_RESIZE_NEAREST_SCALE
    elif mode == "linear":
        if coord != "half_pixel":
            found.append(Offence(coord, "coordinate transformation"))
        limits = DLA_RESIZE_LINEAR_SCALE
    else:
        return Offence(mode, "mode")
    scales = _resize_scales(node)
    if scales is None:
        return found + [Offence("run-time scales", "scales must be known at build time")]
    if len(scales) != 4 or scales[0] != 1 or scales[1] != 1:
        found.append(Offence(scales, "scales must be [1, 1, h, w]"))
    elif any(s != int(s) or not (limits[0] <= s <= limits[1]) for s in scales[2:]):
        found.append(Offence(scales[2:], "H/W scales"))
    return found


DLA_COMPARISONS = ("Equal", "Greater", "Less")


def dla_op_support(version: str) -> dict[str, OpSupport]:
    """The ONNX ops Orin's DLA runs through TensorRT `version` (README 'Native' or folded at build time)."""
    out = {}
    for op, (level, as_of, note) in op_tables.DLA_OPS.items():
        if level == "native":
            if as_of is not None and not version_at_least(version, DLA_FIRST_VERSION_WITH_LATE_OPS):
                continue
            # Comparisons run in INT8 only (DLA Supported Layers and Restrictions); everything
            # else in FP16 and INT8 (DLA FAQ: "FP16 and INT8").
            precisions = ("int8",) if op in DLA_COMPARISONS else ("fp16", "int8")
            out[op] = OpSupport(precisions=precisions, note=note)
        elif level == "build_time":
            out[op] = OpSupport(precisions=("any",), note="folded into constants at build time")
    # Upsample (opset < 10) shares Resize's DLA layer (README: "See Resize layer").
    return out


def dla_reconstruction_notes() -> dict[str, str]:
    """Ops the README says can reach the DLA only when rewritten ('Reconstruction'), with the hint."""
    return {op: note for op, (level, _as_of, note) in op_tables.DLA_OPS.items() if level == "reconstruction"}
