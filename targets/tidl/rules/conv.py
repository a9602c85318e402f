"""TIDL's limits on convolutions: Conv, ConvTranspose and DeformConv.

Declared in the order the audit checks them: the limits both releases state, then those of one
release only (releases="11.02" / "11.00").
"""

from __future__ import annotations

from edgedeploy.audit.rules import NodeView, Offence
from edgedeploy.targets.tidl.rules.documents import AM62A_FAMILY, RULES
from edgedeploy.targets.tidl.rules.helpers import kernel_of, non_default_attr, non_default_dilations, pads_of, spatial_of, strides_of, variable_inputs


MAX_VARIABLE_INPUTS = 1


@RULES.rule("Conv", "ConvTranspose", MAX_VARIABLE_INPUTS=MAX_VARIABLE_INPUTS)
def single_variable_input(node, chip):
    """TIDL accepts at most {MAX_VARIABLE_INPUTS} variable (non-constant) input here; weights and bias must be constants."""
    n = len(variable_inputs(node))
    if n > MAX_VARIABLE_INPUTS:
        return Offence(n, "variable inputs")
    return None


CONV_AM62A_UNSUPPORTED_KERNEL = (3, 3)
CONV_AM62A_UNSUPPORTED_STRIDE = 3
CONV_STRIDE2_MAX_KERNEL = 7
CONV_STRIDE4_KERNEL = (11, 11)


@RULES.rule("Conv", "ConvTranspose")
def kernel_shape_matches_weights(node, chip):
    """The kernel_shape attribute must equal the weight tensor's spatial dimensions."""
    ks = node.attr("kernel_shape")
    w = node.input(1)
    if ks and w is not None and w.shape is not None and len(w.shape) >= 3:
        if tuple(int(k) for k in ks) != tuple(w.shape[2:]):
            return Offence(tuple(ks), f"weight dims {tuple(w.shape[2:])}")
    return None


@RULES.rule("Conv")
def conv_equal_strides(node, chip):
    """TIDL needs the same stride along height and width."""
    strides = node.attr("strides")
    if strides and len(strides) == 2 and strides[0] != strides[1]:
        return Offence(tuple(strides))
    return None


@RULES.rule("Conv", chips=AM62A_FAMILY, KERNEL=CONV_AM62A_UNSUPPORTED_KERNEL, STRIDE=CONV_AM62A_UNSUPPORTED_STRIDE)
def conv_3x3_stride_3_on_am62a(node, chip):
    """On AM62A a convolution with a {KERNEL} kernel and stride {STRIDE} does not run on the accelerator."""
    kernel = kernel_of(node)
    if kernel == CONV_AM62A_UNSUPPORTED_KERNEL and CONV_AM62A_UNSUPPORTED_STRIDE in strides_of(node, 2):
        return Offence((kernel, strides_of(node, 2)))
    return None


@RULES.rule("Conv", MAX_KERNEL=CONV_STRIDE2_MAX_KERNEL)
def conv_stride_2_kernel_limit(node, chip):
    """With stride 2, TIDL runs convolution kernels up to {MAX_KERNEL} wide and high."""
    kernel = kernel_of(node)
    if kernel and 2 in strides_of(node, len(kernel)) and max(kernel) > CONV_STRIDE2_MAX_KERNEL:
        return Offence(kernel, "stride 2")
    return None


@RULES.rule("Conv", KERNEL=CONV_STRIDE4_KERNEL)
def conv_stride_4_kernel(node, chip):
    """TIDL runs stride 4 only for a {KERNEL} convolution kernel."""
    kernel = kernel_of(node)
    if kernel and 4 in strides_of(node, len(kernel)) and kernel != CONV_STRIDE4_KERNEL:
        return Offence(kernel, "stride 4")
    return None


@RULES.rule("Conv", chips=AM62A_FAMILY)
def conv_padding_wider_than_input_on_am62a(node, chip):
    """On AM62A a convolution whose padding exceeds the input width does not run on the accelerator."""
    pads, hw = pads_of(node), spatial_of(node)
    if pads is None or hw is None:
        return None
    width = hw[1]
    if max(pads) > width:
        return Offence(max(pads), f"input width {width}")
    return None


DEFORMCONV_KERNEL = (3, 3)
DEFORMCONV_STRIDE = (1, 1)


@RULES.rule("DeformConv", KERNEL="x".join(map(str, DEFORMCONV_KERNEL)), STRIDE="x".join(map(str, DEFORMCONV_STRIDE)))
def deformconv_kernel(node, chip):
    """TIDL's DeformConv supports a {KERNEL} kernel with stride {STRIDE} only."""
    kernel = kernel_of(node)
    strides = strides_of(node, 2)
    if kernel is not None and (tuple(kernel) != DEFORMCONV_KERNEL or tuple(strides) != DEFORMCONV_STRIDE):
        return Offence(f"{'x'.join(map(str, kernel))}s{'x'.join(map(str, strides))}")
    return None


def _input_narrower_than_padding(node: NodeView):
    pads, hw = pads_of(node), spatial_of(node)
    if pads is None or hw is None or len(pads) != 4:
        return None
    width = hw[1]
    widest = max(pads[1], pads[3])  # pads = (top, left, bottom, right)
    if width < widest:
        return Offence(width, f"left/right padding {pads[1]}/{pads[3]}")
    return None


@RULES.rule("Conv", releases="11.02", chips=AM62A_FAMILY)
def conv_input_narrower_than_padding_on_am62a(node, chip):
    """On AM62A a convolution whose input is narrower than its left or right padding does not run on the accelerator."""
    return _input_narrower_than_padding(node)


@RULES.rule("ConvTranspose", releases="11.02")
def deconv_default_dilations(node, chip):
    """TIDL's ConvTranspose supports only the default dilations of 1."""
    return non_default_dilations(node)


@RULES.rule("Conv", releases="11.00")
def conv_input_narrower_than_padding(node, chip):
    """TIDL does not run a convolution whose input is narrower than its left or right padding."""
    return _input_narrower_than_padding(node)


@RULES.rule("ConvTranspose", releases="11.00")
def deconv_group(node, chip):
    """TIDL's ConvTranspose supports only group 1."""
    return non_default_attr(node, "group", 1)
