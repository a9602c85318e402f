"""TIDL limits whose values changed between the releases: one rule per release, built from the per-release tables.

Declared last, so that they are checked after the per-operator rules.
"""

from __future__ import annotations

from edgedeploy.audit.rules import NodeView, Offence
from edgedeploy.targets.tidl.rules.documents import ONLY_FUSED_OPS, OPS_MAX_4_DIMS, OPS_MAX_6_DIMS, RULES, TIDL_VERSIONS
from edgedeploy.targets.tidl.rules.helpers import kernel_of, max_variable_non_singleton, negative_axis, rank_outside, strides_of


MAX_VARIABLE_DIMS_SMALL = 4
MAX_VARIABLE_DIMS_LARGE = 6


def _dims_rule(release: str, limit: int, ops: frozenset[str]):
    def check(node, chip):
        """TIDL accepts at most {MAX_DIMS} non-singleton dimensions in this operator's variable inputs."""
        n = max_variable_non_singleton(node)
        if n is not None and n > limit:
            return Offence(n, f"non-singleton dims: {n}")
        return None

    check.__name__ = f"variable_input_dims_max_{limit}"
    return RULES.rule(*sorted(ops), releases=release, MAX_DIMS=limit)(check)


def _fused_only_rule(release: str):
    @RULES.rule(*sorted(ONLY_FUSED_OPS[release]), releases=release)
    def only_inside_fused_pattern(node, chip):
        """TIDL runs this operator only inside a pattern it fuses (GELU around Erf, LayerNorm around ReduceMean); on its own it stays on the Arm cores. The audit checks nodes one at a time and does not recognise the fused patterns."""
        return Offence(node.op_type, "not supported as an individual operator")

    return only_inside_fused_pattern


# Depthwise (fully grouped) convolutions TIDL runs: (kernel height, kernel width, stride).
DEPTHWISE_KERNELS = {
    "11.02": frozenset({(1, 3, 1), (3, 3, 1), (3, 3, 2), (5, 5, 1), (5, 5, 2), (7, 7, 1), (7, 7, 2)}),
    # 11.00 lists "5x5s2" twice and no 5x5s1 or 1x3s1.
    "11.00": frozenset({(3, 3, 1), (3, 3, 2), (5, 5, 2), (7, 7, 1), (7, 7, 2)}),
}


def _is_depthwise(node: NodeView) -> bool:
    group = int(node.attr("group", 1))
    x = node.input(0)
    if group <= 1 or x is None or x.shape is None or len(x.shape) < 2:
        return False
    return x.shape[1] == group


def _depthwise_rule(release: str):
    allowed = DEPTHWISE_KERNELS[release]
    shown = sorted(f"{h}x{w}s{s}" for h, w, s in allowed)

    @RULES.rule("Conv", releases=release, KERNELS=shown)
    def depthwise_conv_kernels(node, chip):
        """TIDL runs depthwise (fully grouped) convolutions only with these kernel/stride pairs: {KERNELS}."""
        if not _is_depthwise(node):
            return None
        kernel = kernel_of(node)
        if kernel is None or len(kernel) != 2:
            return None
        strides = strides_of(node, 2)
        key = (kernel[0], kernel[1], strides[0])
        if strides[0] != strides[1] or key not in allowed:
            return Offence(f"{kernel[0]}x{kernel[1]}s{strides[0]}")
        return None

    return depthwise_conv_kernels


DECONV_KERNELS = {
    "11.02": ((4, 4), (3, 3), (2, 2)),
    "11.00": ((4, 4), (2, 2)),
}
DECONV_STRIDE = (2, 2)


def _deconv_rule(release: str):
    kernels = DECONV_KERNELS[release]

    @RULES.rule("ConvTranspose", releases=release, KERNELS=[f"{h}x{w}" for h, w in kernels], STRIDE="x".join(map(str, DECONV_STRIDE)))
    def deconv_kernel_and_stride(node, chip):
        """TIDL runs ConvTranspose only with {KERNELS} kernels and a {STRIDE} stride; a Resize is cheaper where it fits."""
        kernel = kernel_of(node)
        strides = strides_of(node, 2)
        if kernel is None:
            return None
        if tuple(kernel) not in kernels or tuple(strides) != DECONV_STRIDE:
            return Offence(f"{'x'.join(map(str, kernel))}s{'x'.join(map(str, strides))}")
        return None

    return deconv_kernel_and_stride


SLICE_VARIABLE_RANK = {"11.02": (4,), "11.00": (1, 2, 3, 4)}


def _slice_rank_rule(release: str):
    ranks = SLICE_VARIABLE_RANK[release]

    @RULES.rule("Slice", "Split", releases=release, RANKS=ranks)
    def slice_input_rank(node, chip):
        """TIDL slices and splits variable inputs of rank {RANKS} only."""
        return rank_outside(node.input(0), "input rank", allowed=ranks)

    return slice_input_rank


TOPK_AXES = {"11.02": (-2, -1), "11.00": (-2,)}


def _topk_rule(release: str):
    axes = TOPK_AXES[release]

    @RULES.rule("TopK", releases=release, AXES=axes)
    def topk_axis_and_k(node, chip):
        """TIDL's TopK needs sorted 1, a constant K and axis {AXES} (height, width)."""
        found = []
        if int(node.attr("sorted", 1)) != 1:
            found.append(Offence(0, "sorted"))
        k = node.input(1) if node.opset >= 10 else None
        if k is not None and not k.is_constant:
            found.append(Offence(k.name, "variable K"))
        x = node.input(0)
        if x is not None and x.rank is not None:
            axis = negative_axis(int(node.attr("axis", -1)), x.rank)
            if axis not in axes:
                found.append(Offence(axis, "axis"))
        return found

    return topk_axis_and_k


# One instance of each per release, in the order the audit checks them: built per release because
# the operator lists differ; the limit values are TI's.
for _release in TIDL_VERSIONS:
    _dims_rule(_release, MAX_VARIABLE_DIMS_SMALL, OPS_MAX_4_DIMS[_release])
    _dims_rule(_release, MAX_VARIABLE_DIMS_LARGE, OPS_MAX_6_DIMS[_release])
    _fused_only_rule(_release)
    _depthwise_rule(_release)
    _deconv_rule(_release)
    _slice_rank_rule(_release)
    _topk_rule(_release)
