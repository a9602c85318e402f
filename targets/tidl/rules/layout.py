"""TIDL's limits on the operators that move data: Concat, Slice, Split, Pad, DepthToSpace, SpaceToDepth, Reshape, Expand, Unsqueeze, Transpose.

Declared in the order the audit checks them: the limits both releases state, then those of one
release only (releases="11.02" / "11.00").
"""

from __future__ import annotations

import numpy as np

from edgedeploy.audit.rules import Offence
from edgedeploy.targets.tidl.rules.documents import RULES
from edgedeploy.targets.tidl.rules.helpers import int_attr_or_input, negative_axis, rank_outside, spatial_of


CONCAT_AXES = (-3, -2, -1)


@RULES.rule("Concat", AXES=CONCAT_AXES)
def concat_axis(node, chip):
    """TIDL concatenates along axis {AXES} (channel, height, width) and never along the batch axis."""
    out = node.output(0)
    if out is None or out.rank is None:
        return None
    axis = int(node.attr("axis", 0))
    negative = negative_axis(axis, out.rank)
    positive = negative + out.rank
    if negative not in CONCAT_AXES or positive == 0:
        return Offence(axis, "batch axis" if positive == 0 else "")
    return None


SLICE_INPUTS = 4  # data, starts, ends, axes
SLICE_CONSTANT_VALUES = 4
SLICE_STEP = 1
BATCH_SIZE = 1


@RULES.rule("Slice", INPUTS=SLICE_INPUTS)
def slice_constant_starts_ends_axes(node, chip):
    """TIDL's Slice needs {INPUTS} inputs: the data plus constant starts, ends and axes."""
    if node.opset < 10:
        return None  # opsets 1-9 give starts/ends/axes as attributes: constants by construction
    present = [node.input(i) for i in range(1, 4)]
    missing = [name for name, t in zip(("starts", "ends", "axes"), present) if t is None]
    if missing:
        return Offence(", ".join(missing), "missing")
    variable = [t.name for t in present if t is not None and not t.is_constant]
    if variable:
        return Offence(", ".join(variable), "not constant")
    return None


@RULES.rule("Slice", STEP=SLICE_STEP)
def slice_unit_steps(node, chip):
    """TIDL slices with step {STEP} only (other strides only inside its patch-merging pattern)."""
    steps = node.input(4) if node.opset >= 10 else None
    if steps is None:
        return None
    if not steps.is_constant or steps.value is None:
        return Offence(steps.name, "steps not constant")
    if np.any(np.asarray(steps.value) != SLICE_STEP):
        return Offence(np.asarray(steps.value).tolist())
    return None


@RULES.rule("Slice", "Split", BATCH=BATCH_SIZE)
def slice_batch_size(node, chip):
    """TIDL slices and splits only tensors with batch size {BATCH}."""
    x = node.input(0)
    if x is not None and x.shape and isinstance(x.shape[0], int) and x.shape[0] != BATCH_SIZE:
        return Offence(x.shape[0], "batch size")
    return None


# TI also requires 4-D inputs here; ONNX's own shape inference already rejects any other rank.
@RULES.rule("DepthToSpace")
def depth_to_space_channels(node, chip):
    """DepthToSpace needs a channel count that is a multiple of blocksize squared."""
    x = node.input(0)
    b = int(node.attr("blocksize", 1))
    if x is not None and x.shape is not None and len(x.shape) == 4 and isinstance(x.shape[1], int) and x.shape[1] % (b * b):
        return Offence(x.shape[1], f"blocksize {b}")
    return None


@RULES.rule("SpaceToDepth")
def space_to_depth_plane(node, chip):
    """SpaceToDepth needs a height and width that are multiples of blocksize."""
    hw = spatial_of(node)
    b = int(node.attr("blocksize", 1))
    if hw is not None and (hw[0] % b or hw[1] % b):
        return Offence(hw, f"blocksize {b}")
    return None


PAD_MAX_RANK = 6
PAD_MODE = "constant"
PAD_VALUE = 0


@RULES.rule("Pad", MAX_RANK=PAD_MAX_RANK)
def pad_rank(node, chip):
    """TIDL pads inputs of at most {MAX_RANK} dimensions."""
    return rank_outside(node.input(0), "input rank", at_most=PAD_MAX_RANK)


@RULES.rule("Pad", MODE=PAD_MODE)
def pad_mode(node, chip):
    """TIDL pads in {MODE} mode only."""
    mode = node.attr("mode", "constant")
    if mode != PAD_MODE:
        return Offence(mode)
    return None


@RULES.rule("Pad")
def pad_spatial_only(node, chip):
    """TIDL pads only the height and width axes (the last two)."""
    x = node.input(0)
    if x is None or x.rank is None:
        return None
    known, pads = int_attr_or_input(node, "pads", 1)
    if not known:
        return Offence(node.input(1).name, "variable pads")
    if pads is None:
        return None
    pads = [int(p) for p in np.asarray(pads).reshape(-1)]
    axes_t = node.input(3) if node.opset >= 18 else None
    if axes_t is not None:
        if axes_t.value is None:
            return Offence(axes_t.name, "variable axes")
        axes = [negative_axis(int(a), x.rank) + x.rank for a in np.asarray(axes_t.value).reshape(-1)]
    else:
        axes = list(range(x.rank))
    half = len(pads) // 2
    padded = sorted({axes[i] for i in range(half) if pads[i] or pads[i + half]})
    outside = [a for a in padded if a < x.rank - 2]
    if outside:
        return Offence(outside, "padded axes")
    return None


@RULES.rule("Reshape")
def reshape_constant_shape(node, chip):
    """TIDL's Reshape needs a constant target shape and allowzero 0."""
    found = []
    shape = node.input(1) if node.opset >= 5 else None
    if shape is not None and not shape.is_constant:
        found.append(Offence(shape.name, "variable shape"))
    if int(node.attr("allowzero", 0)) != 0:
        found.append(Offence(1, "allowzero"))
    return found


UNSQUEEZE_MAX_OUTPUT_RANK = 6


@RULES.rule("Unsqueeze", MAX_RANK=UNSQUEEZE_MAX_OUTPUT_RANK)
def unsqueeze_output_rank(node, chip):
    """TIDL's Unsqueeze produces outputs of at most {MAX_RANK} dimensions."""
    return rank_outside(node.output(0), "output rank", at_most=UNSQUEEZE_MAX_OUTPUT_RANK)


@RULES.rule("Slice", releases="11.02", VALUES=SLICE_CONSTANT_VALUES)
def slice_constant_inputs_shape(node, chip):
    """TIDL's Slice needs its constant inputs to be 1-D with {VALUES} values each."""
    if node.opset < 10:
        return None
    for i in (1, 2, 3):
        t = node.input(i)
        if t is not None and t.is_constant and t.shape is not None and (len(t.shape) != 1 or t.shape[0] != SLICE_CONSTANT_VALUES):
            return Offence(tuple(t.shape), t.name)
    return None


@RULES.rule("Slice", "Split", releases="11.02")
def slice_not_batch_axis(node, chip):
    """TIDL does not slice or split along the batch axis (the batch must pass through whole)."""
    x = node.input(0)
    if x is None or x.rank is None:
        return None
    if node.op_type == "Split":
        axis = negative_axis(int(node.attr("axis", 0)), x.rank) + x.rank
        return Offence(0, "split axis") if axis == 0 else None
    # A Slice may name axis 0 (11.02 wants all four axes given) as long as it keeps the batch whole.
    out = node.output(0)
    if out is not None and out.shape and x.shape and isinstance(out.shape[0], int) and isinstance(x.shape[0], int):
        if out.shape[0] != x.shape[0]:
            return Offence((x.shape[0], out.shape[0]), "batch cut")
    return None


@RULES.rule("Expand", releases="11.02")
def expand_constant_shape(node, chip):
    """TIDL's Expand needs a constant shape input."""
    shape = node.input(1)
    if shape is not None and not shape.is_constant:
        return Offence(shape.name, "variable shape")
    return None


@RULES.rule("Pad", releases="11.02", VALUE=PAD_VALUE)
def pad_zero_value(node, chip):
    """TIDL pads with the value {VALUE} only."""
    known, value = int_attr_or_input(node, "value", 2)
    if not known:
        return Offence(node.input(2).name, "variable constant_value")
    if value is not None and np.any(value != PAD_VALUE):
        return Offence(float(np.asarray(value).reshape(-1)[0]))
    return None


TRANSPOSE_WIDTH_FORBIDDEN_POSITIONS = (0, 1)
TRANSPOSE_CHECK_ABOVE_RANK = 4


@RULES.rule("Transpose", releases="11.02", POSITIONS=TRANSPOSE_WIDTH_FORBIDDEN_POSITIONS, RANK=TRANSPOSE_CHECK_ABOVE_RANK)
def transpose_width_position(node, chip):
    """For inputs of more than {RANK} dimensions, TIDL cannot move the width axis to output position {POSITIONS}."""
    x = node.input(0)
    if x is None or x.rank is None or x.rank <= TRANSPOSE_CHECK_ABOVE_RANK:
        return None
    perm = list(node.attr("perm", list(reversed(range(x.rank)))))
    width = x.rank - 1
    position = perm.index(width) if width in perm else None
    if position in TRANSPOSE_WIDTH_FORBIDDEN_POSITIONS:
        return Offence(position, f"perm {perm}")
    return None
