"""TIDL's limits on Softmax and the normalisations: BatchNormalization, InstanceNormalization, LayerNormalization.

Declared in the order the audit checks them: the limits both releases state, then those of one
release only (releases="11.02" / "11.00").
"""

from __future__ import annotations

from edgedeploy.audit.rules import NodeView, Offence
from edgedeploy.targets.tidl.rules.documents import RULES
from edgedeploy.targets.tidl.rules.helpers import negative_axis, rank_outside


SOFTMAX_AXES = (-2, -1)  # height, width
BATCHNORM_MAX_RANK = 5  # "fewer than 6 variable input dimensions"


@RULES.rule("Softmax", AXES=SOFTMAX_AXES)
def softmax_axis(node, chip):
    """TIDL computes Softmax only along the width or height axis (axis {AXES})."""
    x = node.input(0)
    if x is None or x.rank is None:
        return None
    default = -1 if node.opset >= 13 else 1
    axis = negative_axis(int(node.attr("axis", default)), x.rank)
    if node.opset < 13 and axis != -1:
        # Before opset 13 Softmax flattens the axes from `axis` on: only a last-axis softmax is a width softmax.
        return Offence(axis, "opset < 13 flattens the trailing axes")
    if axis not in SOFTMAX_AXES:
        return Offence(axis)
    return None


@RULES.rule("BatchNormalization")
def batchnorm_inference_mode(node, chip):
    """TIDL runs BatchNormalization in inference mode only (training_mode 0)."""
    if int(node.attr("training_mode", 0)) != 0:
        return Offence(int(node.attr("training_mode")))
    return None


LAYERNORM_AXIS = -1


@RULES.rule("LayerNormalization", AXIS=LAYERNORM_AXIS)
def layernorm_width_axis(node, chip):
    """TIDL normalises LayerNormalization across the width axis only (axis {AXIS})."""
    x = node.input(0)
    if x is None or x.rank is None:
        return None
    axis = negative_axis(int(node.attr("axis", -1)), x.rank)
    if axis != LAYERNORM_AXIS:
        return Offence(axis)
    return None


@RULES.rule("LayerNormalization")
def layernorm_parameter_shape(node, chip):
    """LayerNormalization's scale and bias must be shaped [N] or [1, N]."""
    for i in (1, 2):
        t = node.input(i)
        if t is not None and t.shape is not None and not (len(t.shape) == 1 or (len(t.shape) == 2 and t.shape[0] == 1)):
            return Offence(tuple(t.shape), t.name)
    return None


@RULES.rule("BatchNormalization", releases="11.02", MAX_RANK=BATCHNORM_MAX_RANK)
def batchnorm_rank(node, chip):
    """TIDL's BatchNormalization takes inputs of at most {MAX_RANK} dimensions."""
    return rank_outside(node.input(0), "input rank", at_most=BATCHNORM_MAX_RANK)


def _per_channel_constants(node: NodeView, indices: tuple[int, ...]):
    x = node.input(0)
    channels = x.shape[1] if x is not None and x.shape is not None and len(x.shape) > 1 else None
    for i in indices:
        t = node.input(i)
        if t is None:
            continue
        if not t.is_constant:
            return Offence(t.name, "not a constant")
        if t.shape is not None and (len(t.shape) != 1 or (isinstance(channels, int) and t.shape[0] != channels)):
            return Offence(tuple(t.shape), f"{t.name}; channels {channels}")
    return None


@RULES.rule("BatchNormalization", releases="11.02")
def batchnorm_constant_parameters(node, chip):
    """BatchNormalization's scale, bias, mean and variance must be constant 1-D tensors with one value per channel."""
    return _per_channel_constants(node, (1, 2, 3, 4))


@RULES.rule("InstanceNormalization", releases="11.02")
def instancenorm_parameters(node, chip):
    """InstanceNormalization's scale and bias must be constant 1-D tensors with one value per channel."""
    return _per_channel_constants(node, (1, 2))


INSTANCENORM_MIN_RANK = 3


@RULES.rule("InstanceNormalization", releases="11.02", MIN_RANK=INSTANCENORM_MIN_RANK)
def instancenorm_rank(node, chip):
    """TIDL's InstanceNormalization needs an input of at least {MIN_RANK} dimensions."""
    return rank_outside(node.input(0), "input rank", at_least=INSTANCENORM_MIN_RANK)
