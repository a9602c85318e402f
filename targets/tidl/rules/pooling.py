"""TIDL's limits on pooling: AveragePool, GlobalAveragePool and MaxPool.

Declared in the order the audit checks them: the limits both releases state, then those of one
release only (releases="11.02" / "11.00").
"""

from __future__ import annotations

from edgedeploy.audit.rules import Offence
from edgedeploy.targets.tidl.rules.documents import RULES
from edgedeploy.targets.tidl.rules.helpers import non_default_attr, non_default_dilations, rank_outside, strides_of


GLOBAL_POOL_MAX_PLANE = 1024
GLOBAL_POOL_RANKS = (3, 4)  # 1-D and 2-D pooling over an N, C, (H,) W tensor
POOL_KERNELS = (1, 2, 3)
POOL_STRIDES = (1, 2)
POOL_EXCLUDED = ((2, 2), 1)  # 2x2 kernel with stride 1 is the documented exception


@RULES.rule("AveragePool", "GlobalAveragePool", "MaxPool")
def pool_variable_input(node, chip):
    """TIDL pools only a variable (computed) tensor, not a constant."""
    x = node.input(0)
    if x is not None and x.is_constant:
        return Offence(x.name, "constant input")
    return None


@RULES.rule("AveragePool", "MaxPool", KERNELS=POOL_KERNELS, STRIDES=POOL_STRIDES)
def pool_kernel_and_stride(node, chip):
    """TIDL pools with square kernels of {KERNELS} and equal strides of {STRIDES}, except a 2x2 kernel with stride 1."""
    kernel = tuple(int(k) for k in node.attr("kernel_shape", []))
    strides = strides_of(node, len(kernel))
    if len(kernel) != 2:
        return Offence(kernel, "not a 2-D kernel")
    square = kernel[0] == kernel[1] and kernel[0] in POOL_KERNELS
    equal_strides = strides[0] == strides[1] and strides[0] in POOL_STRIDES
    if not (square and equal_strides) or (kernel, strides[0]) == POOL_EXCLUDED:
        return Offence(f"{kernel[0]}x{kernel[1]}s{strides[0]}" + ("" if strides[0] == strides[1] else f"x{strides[1]}"))
    return None


@RULES.rule("MaxPool", "AveragePool")
def pool_default_dilations(node, chip):
    """TIDL pools only with the default dilations of 1."""
    return non_default_dilations(node)


@RULES.rule("GlobalAveragePool", releases="11.02", MAX_PLANE=GLOBAL_POOL_MAX_PLANE)
def global_average_pool_plane(node, chip):
    """TIDL's GlobalAveragePool handles planes (height x width) of at most {MAX_PLANE} elements; TI's model optimizer can rewrite larger ones as MatMul."""
    x = node.input(0)
    if x is None or x.shape is None or len(x.shape) < 3:
        return None
    plane = 1
    for d in x.shape[2:]:
        if not isinstance(d, int):
            return None
        plane *= d
    if plane > GLOBAL_POOL_MAX_PLANE:
        return Offence(plane, "height x width")
    return None


@RULES.rule("GlobalAveragePool", releases="11.02", RANKS=GLOBAL_POOL_RANKS)
def global_average_pool_rank(node, chip):
    """TIDL's GlobalAveragePool is 1-D or 2-D only: input rank {RANKS}."""
    return rank_outside(node.input(0), "input rank", allowed=GLOBAL_POOL_RANKS)


@RULES.rule("MaxPool", releases="11.02")
def max_pool_single_output(node, chip):
    """TIDL's MaxPool produces one output; the optional Indices output is not supported."""
    if len(node.outputs) > 1 and node.outputs[1].name:
        return Offence(len(node.outputs), "outputs")
    return None


@RULES.rule("MaxPool", releases="11.00")
def max_pool_storage_order(node, chip):
    """TIDL's MaxPool supports only the default storage_order 0."""
    return non_default_attr(node, "storage_order", 0)
