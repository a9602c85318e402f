"""TIDL's limits on the operators that select and reduce: ArgMax/ArgMin, ReduceMin/ReduceMax, Gather, ScatterElements/ScatterND.

Declared in the order the audit checks them: the limits both releases state, then those of one
release only (releases="11.02" / "11.00").
"""

from __future__ import annotations

import numpy as np

from edgedeploy.audit.rules import NodeView, Offence
from edgedeploy.targets.tidl.rules.documents import RULES
from edgedeploy.targets.tidl.rules.helpers import negative_axis, rank_outside


ARG_AXIS = -3


@RULES.rule("ArgMax", "ArgMin", AXIS=ARG_AXIS)
def arg_axis_and_flags(node, chip):
    """TIDL's ArgMax/ArgMin reduce only along axis {AXIS} (the channel axis), with keepdims 1 and select_last_index 0."""
    x = node.input(0)
    if x is None or x.rank is None:
        return None
    axis = negative_axis(int(node.attr("axis", 0)), x.rank)
    found = []
    if axis != ARG_AXIS:
        found.append(Offence(axis, "axis"))
    if int(node.attr("keepdims", 1)) != 1:
        found.append(Offence(0, "keepdims"))
    if int(node.attr("select_last_index", 0)) != 0:
        found.append(Offence(1, "select_last_index"))
    return found


REDUCE_AXIS = -2  # height


def _reduce_axes(node: NodeView, rank: int):
    if node.has_attr("axes"):
        return [int(a) for a in node.attr("axes")]
    t = node.input(1) if node.opset >= 18 else None
    if t is None:
        return None  # all axes
    if t.value is None:
        return "variable"
    return [int(a) for a in np.asarray(t.value).reshape(-1)]


@RULES.rule("ReduceMin", "ReduceMax", AXIS=REDUCE_AXIS)
def reduce_height_axis(node, chip):
    """TIDL's ReduceMin/ReduceMax reduce along the height axis only (axis {AXIS}), with keepdims 1."""
    x = node.input(0)
    if x is None or x.rank is None:
        return None
    found = []
    axes = _reduce_axes(node, x.rank)
    if axes is None:
        found.append(Offence("all", "axes"))
    elif axes == "variable":
        found.append(Offence("variable", "axes"))
    elif [negative_axis(a, x.rank) for a in axes] != [REDUCE_AXIS]:
        found.append(Offence([negative_axis(a, x.rank) for a in axes], "axes"))
    if int(node.attr("keepdims", 1)) != 1:
        found.append(Offence(0, "keepdims"))
    return found


SCATTER_MAX_UPDATE_CHANNELS = 1
SCATTER_AXIS = -1  # width


@RULES.rule("ScatterElements", "ScatterND")
def scatter_reduction(node, chip):
    """TIDL's ScatterElements supports reduction none only, and its ScatterND every reduction but mul."""
    reduction = node.attr("reduction", "none")
    if (node.op_type == "ScatterElements" and reduction != "none") or (node.op_type == "ScatterND" and reduction == "mul"):
        return Offence(reduction)
    return None


@RULES.rule("ScatterElements", "ScatterND", MAX_CHANNELS=SCATTER_MAX_UPDATE_CHANNELS)
def scatter_update_channels(node, chip):
    """TIDL scatters update tensors of at most {MAX_CHANNELS} channel."""
    updates = node.input(2)
    if updates is not None and updates.shape is not None and len(updates.shape) >= 3:
        channels = updates.shape[-3]
        if isinstance(channels, int) and channels > SCATTER_MAX_UPDATE_CHANNELS:
            return Offence(channels, "update channels")
    return None


@RULES.rule("ScatterElements", AXIS=SCATTER_AXIS)
def scatter_width_axis(node, chip):
    """TIDL's ScatterElements scatters along the width axis only (axis {AXIS})."""
    data = node.input(0)
    if data is None or data.rank is None:
        return None
    axis = negative_axis(int(node.attr("axis", 0)), data.rank)
    if axis != SCATTER_AXIS:
        return Offence(axis)
    return None


@RULES.rule("ScatterElements", "ScatterND")
def scatter_zero_data(node, chip):
    """TIDL scatters only into a constant all-zero data tensor."""
    data = node.input(0)
    if data is None:
        return None
    if not data.is_constant:
        return Offence(data.name, "variable data")
    if data.value is not None and np.any(data.value != 0):
        return Offence(data.name, "non-zero data")
    return None


GATHER_MIN_DATA_RANK = 2
GATHER_MAX_OUTPUT_RANK = 6
GATHER_INDICES_RANK = 1


@RULES.rule("Gather", MIN_RANK=GATHER_MIN_DATA_RANK, INDICES_RANK=GATHER_INDICES_RANK)
def gather_shapes(node, chip):
    """TIDL gathers from variable data of at least {MIN_RANK} dimensions whose axes before the gather axis are 1, with {INDICES_RANK}-D indices."""
    data, indices = node.input(0), node.input(1)
    found = []
    if data is not None and data.is_constant:
        found.append(Offence(data.name, "constant data"))
    if data is not None and data.rank is not None:
        if data.rank < GATHER_MIN_DATA_RANK:
            found.append(Offence(data.rank, "data rank"))
        else:
            axis = negative_axis(int(node.attr("axis", 0)), data.rank) + data.rank
            outer = tuple(data.shape[:axis])
            if any(d != 1 for d in outer):
                found.append(Offence(outer, "dims before the gather axis"))
    if indices is not None and indices.rank is not None and indices.rank != GATHER_INDICES_RANK:
        found.append(Offence(indices.rank, "indices rank"))
    return found


@RULES.rule("ScatterND", releases="11.02")
def scatter_nd_index_depth(node, chip):
    """ScatterND's indices may address at most rank-1 leading axes (last index dimension <= output rank - 1)."""
    data, indices = node.input(0), node.input(1)
    if data is None or indices is None or data.rank is None or not indices.shape:
        return None
    depth = indices.shape[-1]
    if isinstance(depth, int) and depth > data.rank - 1:
        return Offence(depth, f"output rank {data.rank}")
    return None


@RULES.rule("Gather", releases="11.02", MAX_RANK=GATHER_MAX_OUTPUT_RANK)
def gather_output_rank(node, chip):
    """TIDL's Gather produces outputs of at most {MAX_RANK} dimensions."""
    return rank_outside(node.output(0), "output rank", at_most=GATHER_MAX_OUTPUT_RANK)
