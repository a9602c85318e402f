"""TIDL's limits on activations and element-wise operators: PRelu, Add/Sub/Mul/Div/Max/Min/Sum, Clip, Pow, (De)QuantizeLinear.

Declared in the order the audit checks them: the limits both releases state, then those of one
release only (releases="11.02" / "11.00").
"""

from __future__ import annotations

import numpy as np

from edgedeploy.audit.rules import Offence
from edgedeploy.targets.tidl.rules.documents import RULES
from edgedeploy.targets.tidl.rules.helpers import non_default_attr, non_singleton, variable_inputs


@RULES.rule("PRelu")
def prelu_constant_slope(node, chip):
    """TIDL's PRelu needs a constant slope."""
    slope = node.input(1)
    if slope is not None and not slope.is_constant:
        return Offence(slope.name, "variable slope")
    return None


ELTWISE_OPS = ("Add", "Sub", "Mul", "Div", "Max", "Min", "Sum")
ELTWISE_INPUTS = 2
VECTOR_AXES = (-3, -1)  # channel (of N, C, H, W) or width


@RULES.rule(*ELTWISE_OPS, INPUTS=ELTWISE_INPUTS)
def eltwise_two_inputs(node, chip):
    """TIDL's element-wise layer takes exactly {INPUTS} inputs."""
    n = sum(1 for t in node.inputs if t.present)
    if n != ELTWISE_INPUTS:
        return Offence(n, "inputs")
    return None


@RULES.rule(*ELTWISE_OPS, AXES=VECTOR_AXES)
def eltwise_vector_axis(node, chip):
    """A constant 1-D vector operand must lie along the channel or the width axis (axis {AXES} of the output)."""
    out = node.output(0)
    if out is None or out.rank is None:
        return None
    for t in node.inputs:
        if not (t.present and t.is_constant and t.shape is not None):
            continue
        aligned = (1,) * (out.rank - len(t.shape)) + tuple(t.shape)
        axes = [i - out.rank for i, d in enumerate(aligned) if d != 1]
        if len(axes) == 1 and axes[0] not in VECTOR_AXES:
            return Offence(axes[0], f"constant {t.name} shape {tuple(t.shape)}")
    return None


@RULES.rule("Clip")
def clip_range(node, chip):
    """TIDL's Clip needs a lower bound <= 0 and an upper bound > 0, both constant."""
    found = []
    if node.opset < 11:
        low, high = node.attr("min", -np.inf), node.attr("max", np.inf)
    else:
        bounds = []
        for i in (1, 2):
            t = node.input(i)
            if t is None:
                bounds.append(-np.inf if i == 1 else np.inf)
            elif not t.is_constant or t.value is None:
                found.append(Offence(t.name, "variable bound"))
                bounds.append(None)
            else:
                bounds.append(float(np.asarray(t.value).reshape(-1)[0]))
        low, high = bounds
    if low is not None and low > 0:
        found.append(Offence(float(low), "min > 0"))
    if high is not None and high <= 0:
        found.append(Offence(float(high), "max <= 0"))
    return found


QDQ_AXIS = 1


@RULES.rule("QuantizeLinear", "DequantizeLinear", AXIS=QDQ_AXIS)
def qdq_default_axis(node, chip):
    """TIDL reads QuantizeLinear/DequantizeLinear only with the default axis {AXIS}."""
    return non_default_attr(node, "axis", QDQ_AXIS)


@RULES.rule("PRelu", releases="11.02")
def prelu_slope_per_channel(node, chip):
    """TIDL's PRelu slope must be a single value or one value per channel (broadcast along the channel axis)."""
    x, slope = node.input(0), node.input(1)
    if x is None or slope is None or x.shape is None or slope.shape is None or x.rank is None or x.rank < 2:
        return None
    aligned = (1,) * (x.rank - len(slope.shape)) + tuple(slope.shape)
    for axis, d in enumerate(aligned):
        if d != 1 and not (axis == 1 and d == x.shape[1]):
            return Offence(tuple(slope.shape), f"input {tuple(x.shape)}")
    return None


POW_EXPONENT_SIZE = 1


@RULES.rule("Pow", releases="11.02", SIZE=POW_EXPONENT_SIZE)
def pow_scalar_exponent(node, chip):
    """TIDL's Pow needs an exponent of {SIZE} element."""
    exponent = node.input(1)
    if exponent is not None and exponent.is_constant and exponent.numel is not None and exponent.numel != POW_EXPONENT_SIZE:
        return Offence(exponent.numel, "exponent elements")
    return None


@RULES.rule("Pow", releases="11.02", SIZE=POW_EXPONENT_SIZE)
def pow_constant_exponent(node, chip):
    """TIDL's Pow needs a constant exponent."""
    exponent = node.input(1)
    if exponent is not None and not exponent.is_constant:
        return Offence(exponent.name, "variable exponent")
    return None


@RULES.rule("Sub", releases="11.00")
def sub_both_variable(node, chip):
    """TIDL's Sub does not take two variable inputs; one operand must be a constant."""
    if len(variable_inputs(node)) >= 2:
        return Offence(len(variable_inputs(node)), "variable inputs")
    return None


@RULES.rule("Sub", releases="11.00")
def sub_constant_is_vector(node, chip):
    """TIDL's Sub accepts a constant that is a single number or a 1-D vector (at most one dimension above 1)."""
    for t in node.inputs:
        if t.present and t.is_constant and t.shape is not None and non_singleton(t.shape) > 1:
            return Offence(tuple(t.shape), f"constant {t.name}")
    return None


@RULES.rule("Add", "Mul", releases="11.00")
def add_mul_no_batch_broadcast(node, chip):
    """TIDL's Add and Mul broadcast along every axis except the batch axis."""
    shapes = [t.shape for t in variable_inputs(node) if t.is_static]
    if len(shapes) == 2 and len(shapes[0]) == len(shapes[1]) and shapes[0] and shapes[0][0] != shapes[1][0]:
        return Offence((shapes[0][0], shapes[1][0]), "batch sizes")
    return None
