"""TIDL's operator table: which ONNX nodes TI's C7x DSP + MMA runs, per SoC, and which stay on Arm.

Transcribed as facts (operator, limit, SoC) from TI's edgeai-tidl-tools documents, copied in
shared/reference/tidl/ (see SOURCES.md there for revisions):

  11.02  docs/operators.md, release 11.02 (commit 238cb8b0; Processor SDK 11.02.00.06)
         "Supported Operators", ONNX table (rows 1-61), validated with ONNX 1.14 / ORT 1.15 (opset 19)
  11.00  docs/supported_ops_rts_versions.md, tag 11_00_06_00 (file d64aaabb, 2025-05-21)
         "Operator Mapping (ONNX)" (rows 1-60), "Support for fused combinations (ONNX)",
         "Feature set comparison across devices"

The sentences below are our own words for TI's limits; the numbers and SoC names are TI's. Where
the two releases differ, `RULES[version]` holds each release's own rules (limits that changed are
built once per release from the per-release constants), and `rule_set(tidl_version=...)` picks one.

Placement: TIDL compiles through ONNX Runtime. Nodes TIDL does not accept are left to ONNX
Runtime's CPU provider on the Arm Cortex-A cores (TI: "any unsupported operator will execute on
cortex-A Core as part of the corresponding runtime"), so a broken limit means FALLBACK, never
UNSUPPORTED: any operator ONNX Runtime knows still runs.

SoC names in TI's documents: TDA4VM = J721E = AM68PA; AM68A = J721S2; AM69A = J784S4; AM62A.
Limits TI states for "AM62A and AM67A" apply to our am62a; the TDA4VM/AM68PA limits to tda4vm.
Known gaps (stated, not guessed): fused patterns (GELU around Erf, LayerNorm around ReduceMean)
need the graph, which a per-node rule does not see, so those ops are predicted on the Arm cores;
Cast's "only at the network's inputs/outputs" and the QDQ-only and signedness limits of
QuantizeLinear/DequantizeLinear/MatMul are shown as notes, not checked.
"""

from __future__ import annotations

import math

import numpy as np

from edgedeploy.audit.rules import NodeView, Offence, OpSupport, RuleSet, TensorView, rule

TARGET_ID = "tidl"
CHIPS = ("tda4vm", "am62a", "am68a", "am69a")
TIDL_VERSIONS = ("11.02", "11.00")
DEFAULT_TIDL_VERSION = "11.02"

SOURCES = {
    "11.02": "TI edgeai-tidl-tools docs/operators.md, release 11.02 (238cb8b0), ONNX table; validated with ONNX 1.14 / ONNX Runtime 1.15 (opset 19)",
    "11.00": "TI edgeai-tidl-tools docs/supported_ops_rts_versions.md, tag 11_00_06_00 (d64aaabb), ONNX operator mapping and device feature table",
}

# SoCs for which TI writes "not supported in AM62A and AM67A" (we ship am62a of that pair).
AM62A_FAMILY = frozenset({"am62a"})
# TI's TDA4VM (J721E, AM68PA) limits.
TDA4VM_FAMILY = frozenset({"tda4vm"})

PRECISIONS = ("int8", "int16")  # TIDL tensor_bits 8 and 16 (32 is host emulation only)

# --- operators TIDL maps to a TIDL layer, per release -------------------------------------------
# Both documents, ONNX table.
_COMMON_OPS = (
    "Conv", "AveragePool", "GlobalAveragePool", "MaxPool", "Relu", "PRelu",
    "Sum", "Add", "Mul", "Div", "Sub", "Max", "Gemm", "MatMul", "Softmax", "BatchNormalization",
    "ConvTranspose", "Concat", "Slice", "Split", "Flatten", "Dropout", "ArgMax", "Upsample", "Resize",
    "DepthToSpace", "Sigmoid", "Pad", "ReduceMin", "ReduceMax", "ScatterND", "ScatterElements",
    "Squeeze", "Tanh", "HardSigmoid", "Elu", "Reshape", "Gather", "Transpose", "LayerNormalization",
    "GridSample", "TopK", "DeformConv", "Clip", "LeakyRelu", "Erf", "Identity", "DequantizeLinear",
    "QuantizeLinear", "Sqrt", "ReduceMean", "Pow", "Cast", "Asin", "Asinh", "HardSwish", "Mish", "Log",
    "Unsqueeze", "Abs", "Floor", "Exp", "Sin", "InstanceNormalization", "SpaceToDepth", "Acos", "Atan",
    "Sinh", "Neg", "Cos", "Cosh", "Tan",
)  # fmt: skip
# 11.02 adds Min to the eltwise row, ArgMin to the arg row, ReduceSum (row 39) and Expand (row 61).
ACCELERATOR_OPS = {
    "11.00": frozenset(_COMMON_OPS),
    "11.02": frozenset(_COMMON_OPS + ("Min", "ArgMin", "ReduceSum", "Expand")),
}

# Operators TI lists as "not supported as an individual operator" (only inside a fused pattern).
ONLY_FUSED_OPS = {
    "11.00": frozenset({"Dropout", "Erf", "Identity", "ReduceMean"}),
    "11.02": frozenset({"Dropout", "Erf", "Identity"}),
}

# "Number of non-singleton variable input dimensions must be <= N", per operator and release.
_OPS_MAX_4_COMMON = ("Conv", "AveragePool", "GlobalAveragePool", "MaxPool", "Gemm", "MatMul", "ConvTranspose", "ArgMax", "Upsample", "Resize", "ScatterND", "ScatterElements")
OPS_MAX_4_DIMS = {
    "11.00": frozenset(_OPS_MAX_4_COMMON),
    "11.02": frozenset(_OPS_MAX_4_COMMON + ("ArgMin", "ReduceMin", "ReduceMax")),
}
_OPS_MAX_6_COMMON = (
    "Relu", "PRelu", "Sum", "Add", "Mul", "Div", "Sub", "Softmax", "Concat", "Flatten", "Sigmoid",
    "Squeeze", "Tanh", "HardSigmoid", "Elu", "Reshape", "Transpose", "LayerNormalization", "Clip",
    "LeakyRelu", "Sqrt", "Pow", "Asin", "Asinh", "HardSwish", "Mish", "Log", "Abs", "Floor", "Exp", "Sin",
    "InstanceNormalization", "Acos", "Atan", "Sinh", "Neg", "Cos", "Cosh", "Tan",
)  # fmt: skip
OPS_MAX_6_DIMS = {
    # 11.00 also bounds BatchNormalization this way; 11.02 bounds its rank instead (below).
    "11.00": frozenset(_OPS_MAX_6_COMMON + ("BatchNormalization",)),
    "11.02": frozenset(_OPS_MAX_6_COMMON + ("Max", "Expand")),
}

MAX_VARIABLE_DIMS_SMALL = 4
MAX_VARIABLE_DIMS_LARGE = 6


# --- helpers --------------------------------------------------------------------------------------


def _variable_inputs(node: NodeView) -> list[TensorView]:
    return [t for t in node.inputs if t.present and not t.is_constant]


def _non_singleton(shape) -> int:
    """Dimensions that are not 1 (an unknown dimension counts, it may be large)."""
    return sum(1 for d in shape if d != 1)


def _max_variable_non_singleton(node: NodeView) -> int | None:
    counts = [_non_singleton(t.shape) for t in _variable_inputs(node) if t.shape is not None]
    return max(counts) if counts else None


def _spatial(node: NodeView) -> tuple[int, ...] | None:
    """Spatial dims (H, W) of input 0 of a 4-D NCHW node, when known."""
    x = node.input(0)
    if x is None or x.shape is None or len(x.shape) != 4 or not all(isinstance(d, int) for d in x.shape[2:]):
        return None
    return tuple(int(d) for d in x.shape[2:])


def _kernel(node: NodeView) -> tuple[int, ...] | None:
    """kernel_shape, else the weight's spatial dims (Conv/ConvTranspose/DeformConv)."""
    ks = node.attr("kernel_shape")
    if ks:
        return tuple(int(k) for k in ks)
    w = node.input(1)
    if w is not None and w.shape is not None and len(w.shape) >= 3 and all(isinstance(d, int) for d in w.shape[2:]):
        return tuple(int(d) for d in w.shape[2:])
    return None


def _strides(node: NodeView, spatial_rank: int) -> tuple[int, ...]:
    s = node.attr("strides")
    return tuple(int(v) for v in s) if s else (1,) * spatial_rank


def _pads(node: NodeView) -> tuple[int, ...] | None:
    """(begin..., end...) padding, resolving auto_pad SAME_* from the static shapes."""
    auto_pad = node.attr("auto_pad", "NOTSET")
    kernel = _kernel(node)
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
    strides = _strides(node, rank)
    dilations = tuple(int(d) for d in node.attr("dilations", [1] * rank))
    begins, ends = [], []
    for size, k, s, d in zip(x.shape[2:], kernel, strides, dilations):
        total = max((math.ceil(size / s) - 1) * s + (k - 1) * d + 1 - size, 0)
        small, large = total // 2, total - total // 2
        begins.append(large if auto_pad == "SAME_LOWER" else small)
        ends.append(small if auto_pad == "SAME_LOWER" else large)
    return tuple(begins + ends)


def _int_attr_or_input(node: NodeView, attr: str, input_index: int):
    """A value given as an attribute (older opsets) or a constant input (newer): (known, value)."""
    if node.has_attr(attr):
        return True, np.asarray(node.attr(attr))
    t = node.input(input_index)
    if t is None:
        return True, None
    if t.is_constant and t.value is not None:
        return True, np.asarray(t.value)
    return False, None


def _negative_axis(axis: int, rank: int) -> int:
    return axis - rank if axis >= 0 else axis


# --- limits shared by many operators ---------------------------------------------------------------


def _make_dims_rule(limit: int, ops: frozenset[str]):
    def check(node, chip):
        """TIDL accepts at most {MAX_DIMS} non-singleton dimensions in this operator's variable inputs."""
        n = _max_variable_non_singleton(node)
        if n is not None and n > limit:
            return Offence(n, f"non-singleton dims: {n}")
        return None

    check.__name__ = f"variable_input_dims_max_{limit}"
    return rule(*sorted(ops), MAX_DIMS=limit)(check)


# Built per release because the operator lists differ; the limit values are TI's.
VARIABLE_DIMS_RULES = {
    version: (
        _make_dims_rule(MAX_VARIABLE_DIMS_SMALL, OPS_MAX_4_DIMS[version]),
        _make_dims_rule(MAX_VARIABLE_DIMS_LARGE, OPS_MAX_6_DIMS[version]),
    )
    for version in TIDL_VERSIONS
}


def _make_fused_only_rule(ops: frozenset[str]):
    def only_inside_fused_pattern(node, chip):
        """TIDL runs this operator only inside a pattern it fuses (GELU around Erf, LayerNorm around ReduceMean); on its own it stays on the Arm cores. The audit checks nodes one at a time and does not recognise the fused patterns."""
        return Offence(node.op_type, "not supported as an individual operator")

    return rule(*sorted(ops))(only_inside_fused_pattern)


FUSED_ONLY_RULES = {version: _make_fused_only_rule(ONLY_FUSED_OPS[version]) for version in TIDL_VERSIONS}


MAX_VARIABLE_INPUTS = 1


@rule("Conv", "ConvTranspose", MAX_VARIABLE_INPUTS=MAX_VARIABLE_INPUTS)
def single_variable_input(node, chip):
    """TIDL accepts at most {MAX_VARIABLE_INPUTS} variable (non-constant) input here; weights and bias must be constants."""
    n = len(_variable_inputs(node))
    if n > MAX_VARIABLE_INPUTS:
        return Offence(n, "variable inputs")
    return None


@rule("Gemm", MAX_VARIABLE_INPUTS=MAX_VARIABLE_INPUTS)
def gemm_single_variable_input(node, chip):
    """TIDL accepts at most {MAX_VARIABLE_INPUTS} variable input in Gemm; B and C must be constants."""
    n = len(_variable_inputs(node))
    if n > MAX_VARIABLE_INPUTS:
        return Offence(n, "variable inputs")
    return None


# --- Conv ---------------------------------------------------------------------------------------

CONV_AM62A_UNSUPPORTED_KERNEL = (3, 3)
CONV_AM62A_UNSUPPORTED_STRIDE = 3
CONV_STRIDE2_MAX_KERNEL = 7
CONV_STRIDE4_KERNEL = (11, 11)
# Depthwise (fully grouped) convolutions TIDL runs: (kernel height, kernel width, stride).
DEPTHWISE_KERNELS = {
    "11.02": frozenset({(1, 3, 1), (3, 3, 1), (3, 3, 2), (5, 5, 1), (5, 5, 2), (7, 7, 1), (7, 7, 2)}),
    # 11.00 lists "5x5s2" twice and no 5x5s1 or 1x3s1.
    "11.00": frozenset({(3, 3, 1), (3, 3, 2), (5, 5, 2), (7, 7, 1), (7, 7, 2)}),
}


@rule("Conv", "ConvTranspose")
def kernel_shape_matches_weights(node, chip):
    """The kernel_shape attribute must equal the weight tensor's spatial dimensions."""
    ks = node.attr("kernel_shape")
    w = node.input(1)
    if ks and w is not None and w.shape is not None and len(w.shape) >= 3:
        if tuple(int(k) for k in ks) != tuple(w.shape[2:]):
            return Offence(tuple(ks), f"weight dims {tuple(w.shape[2:])}")
    return None


@rule("Conv")
def conv_equal_strides(node, chip):
    """TIDL needs the same stride along height and width."""
    strides = node.attr("strides")
    if strides and len(strides) == 2 and strides[0] != strides[1]:
        return Offence(tuple(strides))
    return None


@rule("Conv", KERNEL=CONV_AM62A_UNSUPPORTED_KERNEL, STRIDE=CONV_AM62A_UNSUPPORTED_STRIDE)
def conv_3x3_stride_3_on_am62a(node, chip):
    """On AM62A a convolution with a {KERNEL} kernel and stride {STRIDE} does not run on the accelerator."""
    if chip not in AM62A_FAMILY:
        return None
    kernel = _kernel(node)
    if kernel == CONV_AM62A_UNSUPPORTED_KERNEL and CONV_AM62A_UNSUPPORTED_STRIDE in _strides(node, 2):
        return Offence((kernel, _strides(node, 2)))
    return None


@rule("Conv", MAX_KERNEL=CONV_STRIDE2_MAX_KERNEL)
def conv_stride_2_kernel_limit(node, chip):
    """With stride 2, TIDL runs convolution kernels up to {MAX_KERNEL} wide and high."""
    kernel = _kernel(node)
    if kernel and 2 in _strides(node, len(kernel)) and max(kernel) > CONV_STRIDE2_MAX_KERNEL:
        return Offence(kernel, "stride 2")
    return None


@rule("Conv", KERNEL=CONV_STRIDE4_KERNEL)
def conv_stride_4_kernel(node, chip):
    """TIDL runs stride 4 only for a {KERNEL} convolution kernel."""
    kernel = _kernel(node)
    if kernel and 4 in _strides(node, len(kernel)) and kernel != CONV_STRIDE4_KERNEL:
        return Offence(kernel, "stride 4")
    return None


def _is_depthwise(node: NodeView) -> bool:
    group = int(node.attr("group", 1))
    x = node.input(0)
    if group <= 1 or x is None or x.shape is None or len(x.shape) < 2:
        return False
    return x.shape[1] == group


def _make_depthwise_rule(version: str):
    allowed = DEPTHWISE_KERNELS[version]
    shown = sorted(f"{h}x{w}s{s}" for h, w, s in allowed)

    @rule("Conv", KERNELS=shown)
    def depthwise_conv_kernels(node, chip):
        """TIDL runs depthwise (fully grouped) convolutions only with these kernel/stride pairs: {KERNELS}."""
        if not _is_depthwise(node):
            return None
        kernel = _kernel(node)
        if kernel is None or len(kernel) != 2:
            return None
        strides = _strides(node, 2)
        key = (kernel[0], kernel[1], strides[0])
        if strides[0] != strides[1] or key not in allowed:
            return Offence(f"{kernel[0]}x{kernel[1]}s{strides[0]}")
        return None

    return depthwise_conv_kernels


DEPTHWISE_RULES = {version: _make_depthwise_rule(version) for version in TIDL_VERSIONS}


@rule("Conv")
def conv_padding_wider_than_input_on_am62a(node, chip):
    """On AM62A a convolution whose padding exceeds the input width does not run on the accelerator."""
    if chip not in AM62A_FAMILY:
        return None
    pads, hw = _pads(node), _spatial(node)
    if pads is None or hw is None:
        return None
    width = hw[1]
    if max(pads) > width:
        return Offence(max(pads), f"input width {width}")
    return None


def _input_narrower_than_padding(node: NodeView):
    pads, hw = _pads(node), _spatial(node)
    if pads is None or hw is None or len(pads) != 4:
        return None
    width = hw[1]
    widest = max(pads[1], pads[3])  # pads = (top, left, bottom, right)
    if width < widest:
        return Offence(width, f"left/right padding {pads[1]}/{pads[3]}")
    return None


@rule("Conv")
def conv_input_narrower_than_padding_on_am62a(node, chip):
    """On AM62A a convolution whose input is narrower than its left or right padding does not run on the accelerator."""
    if chip not in AM62A_FAMILY:
        return None
    return _input_narrower_than_padding(node)


@rule("Conv")
def conv_input_narrower_than_padding(node, chip):
    """TIDL does not run a convolution whose input is narrower than its left or right padding."""
    return _input_narrower_than_padding(node)


# --- Pooling ------------------------------------------------------------------------------------

GLOBAL_POOL_MAX_PLANE = 1024
GLOBAL_POOL_RANKS = (3, 4)  # 1-D and 2-D pooling over an N, C, (H,) W tensor
POOL_KERNELS = (1, 2, 3)
POOL_STRIDES = (1, 2)
POOL_EXCLUDED = ((2, 2), 1)  # 2x2 kernel with stride 1 is the documented exception


@rule("AveragePool", "GlobalAveragePool", "MaxPool")
def pool_variable_input(node, chip):
    """TIDL pools only a variable (computed) tensor, not a constant."""
    x = node.input(0)
    if x is not None and x.is_constant:
        return Offence(x.name, "constant input")
    return None


@rule("GlobalAveragePool", MAX_PLANE=GLOBAL_POOL_MAX_PLANE)
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


@rule("GlobalAveragePool", RANKS=GLOBAL_POOL_RANKS)
def global_average_pool_rank(node, chip):
    """TIDL's GlobalAveragePool is 1-D or 2-D only: input rank {RANKS}."""
    x = node.input(0)
    if x is not None and x.rank is not None and x.rank not in GLOBAL_POOL_RANKS:
        return Offence(x.rank, "input rank")
    return None


@rule("AveragePool", "MaxPool", KERNELS=POOL_KERNELS, STRIDES=POOL_STRIDES)
def pool_kernel_and_stride(node, chip):
    """TIDL pools with square kernels of {KERNELS} and equal strides of {STRIDES}, except a 2x2 kernel with stride 1."""
    kernel = tuple(int(k) for k in node.attr("kernel_shape", []))
    strides = _strides(node, len(kernel))
    if len(kernel) != 2:
        return Offence(kernel, "not a 2-D kernel")
    square = kernel[0] == kernel[1] and kernel[0] in POOL_KERNELS
    equal_strides = strides[0] == strides[1] and strides[0] in POOL_STRIDES
    if not (square and equal_strides) or (kernel, strides[0]) == POOL_EXCLUDED:
        return Offence(f"{kernel[0]}x{kernel[1]}s{strides[0]}" + ("" if strides[0] == strides[1] else f"x{strides[1]}"))
    return None


def _non_default_dilations(node: NodeView):
    dilations = node.attr("dilations")
    if dilations and any(int(d) != 1 for d in dilations):
        return Offence(tuple(dilations))
    return None


@rule("MaxPool", "AveragePool")
def pool_default_dilations(node, chip):
    """TIDL pools only with the default dilations of 1."""
    return _non_default_dilations(node)


@rule("ConvTranspose")
def deconv_default_dilations(node, chip):
    """TIDL's ConvTranspose supports only the default dilations of 1."""
    return _non_default_dilations(node)


@rule("MaxPool")
def max_pool_single_output(node, chip):
    """TIDL's MaxPool produces one output; the optional Indices output is not supported."""
    if len(node.outputs) > 1 and node.outputs[1].name:
        return Offence(len(node.outputs), "outputs")
    return None


@rule("MaxPool")
def max_pool_storage_order(node, chip):
    """TIDL's MaxPool supports only the default storage_order 0."""
    order = int(node.attr("storage_order", 0))
    if order != 0:
        return Offence(order)
    return None


# --- Activations and element-wise --------------------------------------------------------------


@rule("PRelu")
def prelu_constant_slope(node, chip):
    """TIDL's PRelu needs a constant slope."""
    slope = node.input(1)
    if slope is not None and not slope.is_constant:
        return Offence(slope.name, "variable slope")
    return None


@rule("PRelu")
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


ELTWISE_OPS = ("Add", "Sub", "Mul", "Div", "Max", "Min", "Sum")
ELTWISE_INPUTS = 2
VECTOR_AXES = (-3, -1)  # channel (of N, C, H, W) or width


@rule(*ELTWISE_OPS, INPUTS=ELTWISE_INPUTS)
def eltwise_two_inputs(node, chip):
    """TIDL's element-wise layer takes exactly {INPUTS} inputs."""
    n = sum(1 for t in node.inputs if t.present)
    if n != ELTWISE_INPUTS:
        return Offence(n, "inputs")
    return None


@rule(*ELTWISE_OPS, AXES=VECTOR_AXES)
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


@rule("Sub")
def sub_both_variable(node, chip):
    """TIDL's Sub does not take two variable inputs; one operand must be a constant."""
    if len(_variable_inputs(node)) >= 2:
        return Offence(len(_variable_inputs(node)), "variable inputs")
    return None


@rule("Sub")
def sub_constant_is_vector(node, chip):
    """TIDL's Sub accepts a constant that is a single number or a 1-D vector (at most one dimension above 1)."""
    for t in node.inputs:
        if t.present and t.is_constant and t.shape is not None and _non_singleton(t.shape) > 1:
            return Offence(tuple(t.shape), f"constant {t.name}")
    return None


@rule("Add", "Mul")
def add_mul_no_batch_broadcast(node, chip):
    """TIDL's Add and Mul broadcast along every axis except the batch axis."""
    shapes = [t.shape for t in _variable_inputs(node) if t.is_static]
    if len(shapes) == 2 and len(shapes[0]) == len(shapes[1]) and shapes[0] and shapes[0][0] != shapes[1][0]:
        return Offence((shapes[0][0], shapes[1][0]), "batch sizes")
    return None


# --- Gemm / MatMul ------------------------------------------------------------------------------

GEMM_TRANS_A = 0
GEMM_ALPHA = 1.0
GEMM_BETA = 1.0
FILTER_MIN_RANK = 2


@rule("Gemm", TRANS_A=GEMM_TRANS_A, ALPHA=GEMM_ALPHA, BETA=GEMM_BETA)
def gemm_parameters(node, chip):
    """TIDL runs Gemm as a fully connected layer only with transA={TRANS_A}, alpha={ALPHA} and beta={BETA}."""
    found = {
        "transA": int(node.attr("transA", 0)),
        "alpha": float(node.attr("alpha", 1.0)),
        "beta": float(node.attr("beta", 1.0)),
    }
    wrong = {k: v for k, v in found.items() if v != {"transA": GEMM_TRANS_A, "alpha": GEMM_ALPHA, "beta": GEMM_BETA}[k]}
    if wrong:
        return Offence(wrong)
    return None


@rule("Gemm")
def gemm_bias_vector(node, chip):
    """Gemm's bias must be a vector [N] or [1, N] whose N is the output width; TI's model optimizer can split other Gemms into MatMul + Add."""
    bias, out = node.input(2), node.output(0)
    if bias is None or bias.shape is None or out is None or out.shape is None:
        return None
    width = out.shape[-1]
    if tuple(bias.shape) not in ((width,), (1, width)):
        return Offence(tuple(bias.shape), f"output width {width}")
    return None


@rule("Gemm", "MatMul", MIN_RANK=FILTER_MIN_RANK)
def inner_product_filter_rank(node, chip):
    """The second (filter) input of a fully connected layer needs at least {MIN_RANK} dimensions."""
    w = node.input(1)
    if w is not None and w.rank is not None and w.rank < FILTER_MIN_RANK:
        return Offence(w.rank, "filter rank")
    return None


# --- Softmax, normalisations --------------------------------------------------------------------

SOFTMAX_AXES = (-2, -1)  # height, width
BATCHNORM_MAX_RANK = 5  # "fewer than 6 variable input dimensions"


@rule("Softmax", AXES=SOFTMAX_AXES)
def softmax_axis(node, chip):
    """TIDL computes Softmax only along the width or height axis (axis {AXES})."""
    x = node.input(0)
    if x is None or x.rank is None:
        return None
    default = -1 if node.opset >= 13 else 1
    axis = _negative_axis(int(node.attr("axis", default)), x.rank)
    if node.opset < 13 and axis != -1:
        # Before opset 13 Softmax flattens the axes from `axis` on: only a last-axis softmax is a width softmax.
        return Offence(axis, "opset < 13 flattens the trailing axes")
    if axis not in SOFTMAX_AXES:
        return Offence(axis)
    return None


@rule("BatchNormalization")
def batchnorm_inference_mode(node, chip):
    """TIDL runs BatchNormalization in inference mode only (training_mode 0)."""
    if int(node.attr("training_mode", 0)) != 0:
        return Offence(int(node.attr("training_mode")))
    return None


@rule("BatchNormalization", MAX_RANK=BATCHNORM_MAX_RANK)
def batchnorm_rank(node, chip):
    """TIDL's BatchNormalization takes inputs of at most {MAX_RANK} dimensions."""
    x = node.input(0)
    if x is not None and x.rank is not None and x.rank > BATCHNORM_MAX_RANK:
        return Offence(x.rank, "input rank")
    return None


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


@rule("BatchNormalization")
def batchnorm_constant_parameters(node, chip):
    """BatchNormalization's scale, bias, mean and variance must be constant 1-D tensors with one value per channel."""
    return _per_channel_constants(node, (1, 2, 3, 4))


INSTANCENORM_MIN_RANK = 3


@rule("InstanceNormalization", MIN_RANK=INSTANCENORM_MIN_RANK)
def instancenorm_rank(node, chip):
    """TIDL's InstanceNormalization needs an input of at least {MIN_RANK} dimensions."""
    x = node.input(0)
    if x is not None and x.rank is not None and x.rank < INSTANCENORM_MIN_RANK:
        return Offence(x.rank, "input rank")
    return None


@rule("InstanceNormalization")
def instancenorm_parameters(node, chip):
    """InstanceNormalization's scale and bias must be constant 1-D tensors with one value per channel."""
    return _per_channel_constants(node, (1, 2))


LAYERNORM_AXIS = -1


@rule("LayerNormalization", AXIS=LAYERNORM_AXIS)
def layernorm_width_axis(node, chip):
    """TIDL normalises LayerNormalization across the width axis only (axis {AXIS})."""
    x = node.input(0)
    if x is None or x.rank is None:
        return None
    axis = _negative_axis(int(node.attr("axis", -1)), x.rank)
    if axis != LAYERNORM_AXIS:
        return Offence(axis)
    return None


@rule("LayerNormalization")
def layernorm_parameter_shape(node, chip):
    """LayerNormalization's scale and bias must be shaped [N] or [1, N]."""
    for i in (1, 2):
        t = node.input(i)
        if t is not None and t.shape is not None and not (len(t.shape) == 1 or (len(t.shape) == 2 and t.shape[0] == 1)):
            return Offence(tuple(t.shape), t.name)
    return None


# --- ConvTranspose --------------------------------------------------------------------------------

DECONV_KERNELS = {
    "11.02": ((4, 4), (3, 3), (2, 2)),
    "11.00": ((4, 4), (2, 2)),
}
DECONV_STRIDE = (2, 2)


def _make_deconv_rule(version: str):
    kernels = DECONV_KERNELS[version]

    @rule("ConvTranspose", KERNELS=[f"{h}x{w}" for h, w in kernels], STRIDE="x".join(map(str, DECONV_STRIDE)))
    def deconv_kernel_and_stride(node, chip):
        """TIDL runs ConvTranspose only with {KERNELS} kernels and a {STRIDE} stride; a Resize is cheaper where it fits."""
        kernel = _kernel(node)
        strides = _strides(node, 2)
        if kernel is None:
            return None
        if tuple(kernel) not in kernels or tuple(strides) != DECONV_STRIDE:
            return Offence(f"{'x'.join(map(str, kernel))}s{'x'.join(map(str, strides))}")
        return None

    return deconv_kernel_and_stride


DECONV_RULES = {version: _make_deconv_rule(version) for version in TIDL_VERSIONS}


@rule("ConvTranspose")
def deconv_group(node, chip):
    """TIDL's ConvTranspose supports only group 1."""
    group = int(node.attr("group", 1))
    if group != 1:
        return Offence(group)
    return None


# --- Concat, Slice, Split -----------------------------------------------------------------------

CONCAT_AXES = (-3, -2, -1)


@rule("Concat", AXES=CONCAT_AXES)
def concat_axis(node, chip):
    """TIDL concatenates along axis {AXES} (channel, height, width) and never along the batch axis."""
    out = node.output(0)
    if out is None or out.rank is None:
        return None
    axis = int(node.attr("axis", 0))
    negative = _negative_axis(axis, out.rank)
    positive = negative + out.rank
    if negative not in CONCAT_AXES or positive == 0:
        return Offence(axis, "batch axis" if positive == 0 else "")
    return None


SLICE_INPUTS = 4  # data, starts, ends, axes
SLICE_VARIABLE_RANK = {"11.02": (4,), "11.00": (1, 2, 3, 4)}
SLICE_CONSTANT_VALUES = 4
SLICE_STEP = 1
BATCH_SIZE = 1


@rule("Slice", INPUTS=SLICE_INPUTS)
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


@rule("Slice", STEP=SLICE_STEP)
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


@rule("Slice", VALUES=SLICE_CONSTANT_VALUES)
def slice_constant_inputs_shape(node, chip):
    """TIDL's Slice needs its constant inputs to be 1-D with {VALUES} values each."""
    if node.opset < 10:
        return None
    for i in (1, 2, 3):
        t = node.input(i)
        if t is not None and t.is_constant and t.shape is not None and (len(t.shape) != 1 or t.shape[0] != SLICE_CONSTANT_VALUES):
            return Offence(tuple(t.shape), t.name)
    return None


def _make_slice_rank_rule(version: str):
    ranks = SLICE_VARIABLE_RANK[version]

    @rule("Slice", "Split", RANKS=ranks)
    def slice_input_rank(node, chip):
        """TIDL slices and splits variable inputs of rank {RANKS} only."""
        x = node.input(0)
        if x is not None and x.rank is not None and x.rank not in ranks:
            return Offence(x.rank, "input rank")
        return None

    return slice_input_rank


SLICE_RANK_RULES = {version: _make_slice_rank_rule(version) for version in TIDL_VERSIONS}


@rule("Slice", "Split", BATCH=BATCH_SIZE)
def slice_batch_size(node, chip):
    """TIDL slices and splits only tensors with batch size {BATCH}."""
    x = node.input(0)
    if x is not None and x.shape and isinstance(x.shape[0], int) and x.shape[0] != BATCH_SIZE:
        return Offence(x.shape[0], "batch size")
    return None


@rule("Slice", "Split")
def slice_not_batch_axis(node, chip):
    """TIDL does not slice or split along the batch axis (the batch must pass through whole)."""
    x = node.input(0)
    if x is None or x.rank is None:
        return None
    if node.op_type == "Split":
        axis = _negative_axis(int(node.attr("axis", 0)), x.rank) + x.rank
        return Offence(0, "split axis") if axis == 0 else None
    # A Slice may name axis 0 (11.02 wants all four axes given) as long as it keeps the batch whole.
    out = node.output(0)
    if out is not None and out.shape and x.shape and isinstance(out.shape[0], int) and isinstance(x.shape[0], int):
        if out.shape[0] != x.shape[0]:
            return Offence((x.shape[0], out.shape[0]), "batch cut")
    return None


# --- ArgMax / ArgMin -----------------------------------------------------------------------------

ARG_AXIS = -3


@rule("ArgMax", "ArgMin", AXIS=ARG_AXIS)
def arg_axis_and_flags(node, chip):
    """TIDL's ArgMax/ArgMin reduce only along axis {AXIS} (the channel axis), with keepdims 1 and select_last_index 0."""
    x = node.input(0)
    if x is None or x.rank is None:
        return None
    axis = _negative_axis(int(node.attr("axis", 0)), x.rank)
    found = []
    if axis != ARG_AXIS:
        found.append(Offence(axis, "axis"))
    if int(node.attr("keepdims", 1)) != 1:
        found.append(Offence(0, "keepdims"))
    if int(node.attr("select_last_index", 0)) != 0:
        found.append(Offence(1, "select_last_index"))
    return found


# --- Resize / Upsample ----------------------------------------------------------------------------

RESIZE_MODES = ("nearest", "linear", "bilinear")
RESIZE_COORDINATE_MODES = ("half_pixel", "pytorch_half_pixel", "asymmetric")
RESIZE_NEAREST_MODE = {"half_pixel": "round_prefer_ceil", "pytorch_half_pixel": "round_prefer_ceil", "asymmetric": "floor"}


def _resize_scales(node: NodeView) -> tuple[float, ...] | None:
    x, out = node.input(0), node.output(0)
    if x is None or out is None or not x.is_static or not out.is_static or len(x.shape) != len(out.shape):
        return None
    if any(d == 0 for d in x.shape):
        return None
    return tuple(o / i for o, i in zip(out.shape, x.shape))


@rule("Resize", "Upsample", MODES=RESIZE_MODES)
def resize_mode(node, chip):
    """TIDL resizes with {MODES} interpolation only."""
    mode = node.attr("mode", "nearest")
    if mode not in RESIZE_MODES:
        return Offence(mode)
    return None


@rule("Resize", "Upsample")
def resize_scales(node, chip):
    """TIDL resizes only height and width, by the same power-of-two factor (1, 2, 4, ...) on both, never shrinking."""
    scales = _resize_scales(node)
    if scales is None or len(scales) < 3:
        return None
    found = []
    if any(s != 1 for s in scales[:-2]):
        found.append(Offence(scales, "scales batch or channel"))
    h, w = scales[-2], scales[-1]
    if h < 1 or w < 1:
        found.append(Offence((h, w), "downscaling"))
    elif h != w:
        found.append(Offence((h, w), "different height and width scales"))
    elif not float(h).is_integer() or int(h) & (int(h) - 1):
        found.append(Offence(h, "not a power of two"))
    return found


@rule("Resize", COORDINATE_MODES=RESIZE_COORDINATE_MODES)
def resize_attributes(node, chip):
    """TIDL's Resize supports coordinate_transformation_mode {COORDINATE_MODES}, antialias 0, exclude_outside 0 and keep_aspect_ratio_policy stretch; nearest mode must round up (round_prefer_ceil) with the half-pixel modes and floor with asymmetric, and linear mode is not supported with asymmetric."""
    mode = node.attr("mode", "nearest")
    ctm = node.attr("coordinate_transformation_mode", "half_pixel")
    found = []
    if ctm not in RESIZE_COORDINATE_MODES:
        found.append(Offence(ctm, "coordinate_transformation_mode"))
    if int(node.attr("antialias", 0)) != 0:
        found.append(Offence(1, "antialias"))
    if int(node.attr("exclude_outside", 0)) != 0:
        found.append(Offence(1, "exclude_outside"))
    if node.attr("keep_aspect_ratio_policy", "stretch") != "stretch":
        found.append(Offence(node.attr("keep_aspect_ratio_policy"), "keep_aspect_ratio_policy"))
    if mode == "nearest" and ctm in RESIZE_NEAREST_MODE:
        nearest = node.attr("nearest_mode", "round_prefer_floor")
        if nearest != RESIZE_NEAREST_MODE[ctm]:
            found.append(Offence(nearest, f"nearest_mode with {ctm}"))
    if mode == "linear" and ctm == "asymmetric":
        found.append(Offence("linear+asymmetric", "mode"))
    if ctm == "pytorch_half_pixel":
        out = node.output(0)
        if out is not None and out.shape is not None and any(isinstance(d, int) and d <= 1 for d in out.shape[-2:]):
            found.append(Offence(tuple(out.shape), "pytorch_half_pixel with an output size of 1"))
    return found


# --- DepthToSpace / SpaceToDepth ----------------------------------------------------------------

# TI also requires 4-D inputs here; ONNX's own shape inference already rejects any other rank.


@rule("DepthToSpace")
def depth_to_space_channels(node, chip):
    """DepthToSpace needs a channel count that is a multiple of blocksize squared."""
    x = node.input(0)
    b = int(node.attr("blocksize", 1))
    if x is not None and x.shape is not None and len(x.shape) == 4 and isinstance(x.shape[1], int) and x.shape[1] % (b * b):
        return Offence(x.shape[1], f"blocksize {b}")
    return None


@rule("SpaceToDepth")
def space_to_depth_plane(node, chip):
    """SpaceToDepth needs a height and width that are multiples of blocksize."""
    hw = _spatial(node)
    b = int(node.attr("blocksize", 1))
    if hw is not None and (hw[0] % b or hw[1] % b):
        return Offence(hw, f"blocksize {b}")
    return None


# --- Pad ------------------------------------------------------------------------------------------

PAD_MAX_RANK = 6
PAD_MODE = "constant"
PAD_VALUE = 0


@rule("Pad", MAX_RANK=PAD_MAX_RANK)
def pad_rank(node, chip):
    """TIDL pads inputs of at most {MAX_RANK} dimensions."""
    x = node.input(0)
    if x is not None and x.rank is not None and x.rank > PAD_MAX_RANK:
        return Offence(x.rank, "input rank")
    return None


@rule("Pad", MODE=PAD_MODE)
def pad_mode(node, chip):
    """TIDL pads in {MODE} mode only."""
    mode = node.attr("mode", "constant")
    if mode != PAD_MODE:
        return Offence(mode)
    return None


@rule("Pad", VALUE=PAD_VALUE)
def pad_zero_value(node, chip):
    """TIDL pads with the value {VALUE} only."""
    known, value = _int_attr_or_input(node, "value", 2)
    if not known:
        return Offence(node.input(2).name, "variable constant_value")
    if value is not None and np.any(value != PAD_VALUE):
        return Offence(float(np.asarray(value).reshape(-1)[0]))
    return None


@rule("Pad")
def pad_spatial_only(node, chip):
    """TIDL pads only the height and width axes (the last two)."""
    x = node.input(0)
    if x is None or x.rank is None:
        return None
    known, pads = _int_attr_or_input(node, "pads", 1)
    if not known:
        return Offence(node.input(1).name, "variable pads")
    if pads is None:
        return None
    pads = [int(p) for p in np.asarray(pads).reshape(-1)]
    axes_t = node.input(3) if node.opset >= 18 else None
    if axes_t is not None:
        if axes_t.value is None:
            return Offence(axes_t.name, "variable axes")
        axes = [_negative_axis(int(a), x.rank) + x.rank for a in np.asarray(axes_t.value).reshape(-1)]
    else:
        axes = list(range(x.rank))
    half = len(pads) // 2
    padded = sorted({axes[i] for i in range(half) if pads[i] or pads[i + half]})
    outside = [a for a in padded if a < x.rank - 2]
    if outside:
        return Offence(outside, "padded axes")
    return None


# --- Reductions -----------------------------------------------------------------------------------

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


@rule("ReduceMin", "ReduceMax", AXIS=REDUCE_AXIS)
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
    elif [_negative_axis(a, x.rank) for a in axes] != [REDUCE_AXIS]:
        found.append(Offence([_negative_axis(a, x.rank) for a in axes], "axes"))
    if int(node.attr("keepdims", 1)) != 1:
        found.append(Offence(0, "keepdims"))
    return found


# --- Scatter --------------------------------------------------------------------------------------

SCATTER_MAX_UPDATE_CHANNELS = 1
SCATTER_AXIS = -1  # width


@rule("ScatterElements", "ScatterND")
def scatter_reduction(node, chip):
    """TIDL's ScatterElements supports reduction none only, and its ScatterND every reduction but mul."""
    reduction = node.attr("reduction", "none")
    if (node.op_type == "ScatterElements" and reduction != "none") or (node.op_type == "ScatterND" and reduction == "mul"):
        return Offence(reduction)
    return None


@rule("ScatterElements", "ScatterND", MAX_CHANNELS=SCATTER_MAX_UPDATE_CHANNELS)
def scatter_update_channels(node, chip):
    """TIDL scatters update tensors of at most {MAX_CHANNELS} channel."""
    updates = node.input(2)
    if updates is not None and updates.shape is not None and len(updates.shape) >= 3:
        channels = updates.shape[-3]
        if isinstance(channels, int) and channels > SCATTER_MAX_UPDATE_CHANNELS:
            return Offence(channels, "update channels")
    return None


@rule("ScatterElements", AXIS=SCATTER_AXIS)
def scatter_width_axis(node, chip):
    """TIDL's ScatterElements scatters along the width axis only (axis {AXIS})."""
    data = node.input(0)
    if data is None or data.rank is None:
        return None
    axis = _negative_axis(int(node.attr("axis", 0)), data.rank)
    if axis != SCATTER_AXIS:
        return Offence(axis)
    return None


@rule("ScatterND")
def scatter_nd_index_depth(node, chip):
    """ScatterND's indices may address at most rank-1 leading axes (last index dimension <= output rank - 1)."""
    data, indices = node.input(0), node.input(1)
    if data is None or indices is None or data.rank is None or not indices.shape:
        return None
    depth = indices.shape[-1]
    if isinstance(depth, int) and depth > data.rank - 1:
        return Offence(depth, f"output rank {data.rank}")
    return None


@rule("ScatterElements", "ScatterND")
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


# --- Shape operators ------------------------------------------------------------------------------


@rule("Reshape")
def reshape_constant_shape(node, chip):
    """TIDL's Reshape needs a constant target shape and allowzero 0."""
    found = []
    shape = node.input(1) if node.opset >= 5 else None
    if shape is not None and not shape.is_constant:
        found.append(Offence(shape.name, "variable shape"))
    if int(node.attr("allowzero", 0)) != 0:
        found.append(Offence(1, "allowzero"))
    return found


@rule("Expand")
def expand_constant_shape(node, chip):
    """TIDL's Expand needs a constant shape input."""
    shape = node.input(1)
    if shape is not None and not shape.is_constant:
        return Offence(shape.name, "variable shape")
    return None


GATHER_MIN_DATA_RANK = 2
GATHER_MAX_OUTPUT_RANK = 6
GATHER_INDICES_RANK = 1


@rule("Gather", MIN_RANK=GATHER_MIN_DATA_RANK, INDICES_RANK=GATHER_INDICES_RANK)
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
            axis = _negative_axis(int(node.attr("axis", 0)), data.rank) + data.rank
            outer = tuple(data.shape[:axis])
            if any(d != 1 for d in outer):
                found.append(Offence(outer, "dims before the gather axis"))
    if indices is not None and indices.rank is not None and indices.rank != GATHER_INDICES_RANK:
        found.append(Offence(indices.rank, "indices rank"))
    return found


@rule("Gather", MAX_RANK=GATHER_MAX_OUTPUT_RANK)
def gather_output_rank(node, chip):
    """TIDL's Gather produces outputs of at most {MAX_RANK} dimensions."""
    out = node.output(0)
    if out is not None and out.rank is not None and out.rank > GATHER_MAX_OUTPUT_RANK:
        return Offence(out.rank, "output rank")
    return None


UNSQUEEZE_MAX_OUTPUT_RANK = 6


@rule("Unsqueeze", MAX_RANK=UNSQUEEZE_MAX_OUTPUT_RANK)
def unsqueeze_output_rank(node, chip):
    """TIDL's Unsqueeze produces outputs of at most {MAX_RANK} dimensions."""
    out = node.output(0)
    if out is not None and out.rank is not None and out.rank > UNSQUEEZE_MAX_OUTPUT_RANK:
        return Offence(out.rank, "output rank")
    return None


TRANSPOSE_WIDTH_FORBIDDEN_POSITIONS = (0, 1)
TRANSPOSE_CHECK_ABOVE_RANK = 4


@rule("Transpose", POSITIONS=TRANSPOSE_WIDTH_FORBIDDEN_POSITIONS, RANK=TRANSPOSE_CHECK_ABOVE_RANK)
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


# --- Remaining single-operator limits --------------------------------------------------------------

GRIDSAMPLE_MODES = ("bilinear", "linear", "nearest")
GRIDSAMPLE_PADDING = "zeros"
GRIDSAMPLE_RANK = 4


@rule("GridSample", MODES=GRIDSAMPLE_MODES, PADDING=GRIDSAMPLE_PADDING)
def gridsample_modes(node, chip):
    """TIDL's GridSample supports {MODES} interpolation, {PADDING} padding and 2-D grids (4-D inputs) only."""
    found = []
    mode = node.attr("mode", "linear" if node.opset >= 20 else "bilinear")
    if mode not in GRIDSAMPLE_MODES:
        found.append(Offence(mode, "mode"))
    padding = node.attr("padding_mode", "zeros")
    if padding != GRIDSAMPLE_PADDING:
        found.append(Offence(padding, "padding_mode"))
    x = node.input(0)
    if x is not None and x.rank is not None and x.rank != GRIDSAMPLE_RANK:
        found.append(Offence(x.rank, "input rank"))
    return found


TOPK_AXES = {"11.02": (-2, -1), "11.00": (-2,)}


def _make_topk_rule(version: str):
    axes = TOPK_AXES[version]

    @rule("TopK", AXES=axes)
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
            axis = _negative_axis(int(node.attr("axis", -1)), x.rank)
            if axis not in axes:
                found.append(Offence(axis, "axis"))
        return found

    return topk_axis_and_k


TOPK_RULES = {version: _make_topk_rule(version) for version in TIDL_VERSIONS}

DEFORMCONV_KERNEL = (3, 3)
DEFORMCONV_STRIDE = (1, 1)


@rule("DeformConv", KERNEL="x".join(map(str, DEFORMCONV_KERNEL)), STRIDE="x".join(map(str, DEFORMCONV_STRIDE)))
def deformconv_kernel(node, chip):
    """TIDL's DeformConv supports a {KERNEL} kernel with stride {STRIDE} only."""
    kernel = _kernel(node)
    strides = _strides(node, 2)
    if kernel is not None and (tuple(kernel) != DEFORMCONV_KERNEL or tuple(strides) != DEFORMCONV_STRIDE):
        return Offence(f"{'x'.join(map(str, kernel))}s{'x'.join(map(str, strides))}")
    return None


@rule("Clip")
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


@rule("QuantizeLinear", "DequantizeLinear", AXIS=QDQ_AXIS)
def qdq_default_axis(node, chip):
    """TIDL reads QuantizeLinear/DequantizeLinear only with the default axis {AXIS}."""
    axis = int(node.attr("axis", QDQ_AXIS))
    if axis != QDQ_AXIS:
        return Offence(axis)
    return None


POW_EXPONENT_SIZE = 1


@rule("Pow", SIZE=POW_EXPONENT_SIZE)
def pow_constant_exponent(node, chip):
    """TIDL's Pow needs a constant exponent."""
    exponent = node.input(1)
    if exponent is not None and not exponent.is_constant:
        return Offence(exponent.name, "variable exponent")
    return None


@rule("Pow", SIZE=POW_EXPONENT_SIZE)
def pow_scalar_exponent(node, chip):
    """TIDL's Pow needs an exponent of {SIZE} element."""
    exponent = node.input(1)
    if exponent is not None and exponent.is_constant and exponent.numel is not None and exponent.numel != POW_EXPONENT_SIZE:
        return Offence(exponent.numel, "exponent elements")
    return None


# --- The rule sets ----------------------------------------------------------------------------------

_RULES_BOTH = [
    single_variable_input,
    kernel_shape_matches_weights,
    conv_equal_strides,
    conv_3x3_stride_3_on_am62a,
    conv_stride_2_kernel_limit,
    conv_stride_4_kernel,
    conv_padding_wider_than_input_on_am62a,
    pool_variable_input,
    pool_kernel_and_stride,
    pool_default_dilations,
    prelu_constant_slope,
    eltwise_two_inputs,
    eltwise_vector_axis,
    gemm_parameters,
    gemm_bias_vector,
    inner_product_filter_rank,
    softmax_axis,
    batchnorm_inference_mode,
    concat_axis,
    slice_constant_starts_ends_axes,
    slice_unit_steps,
    slice_batch_size,
    arg_axis_and_flags,
    resize_mode,
    resize_scales,
    resize_attributes,
    depth_to_space_channels,
    space_to_depth_plane,
    pad_rank,
    pad_mode,
    pad_spatial_only,
    reduce_height_axis,
    scatter_reduction,
    scatter_update_channels,
    scatter_width_axis,
    scatter_zero_data,
    reshape_constant_shape,
    gather_shapes,
    layernorm_width_axis,
    layernorm_parameter_shape,
    gridsample_modes,
    deformconv_kernel,
    clip_range,
    qdq_default_axis,
    unsqueeze_output_rank,
]

RULES = {
    "11.02": _RULES_BOTH
    + [
        gemm_single_variable_input,
        conv_input_narrower_than_padding_on_am62a,
        global_average_pool_plane,
        global_average_pool_rank,
        max_pool_single_output,
        prelu_slope_per_channel,
        batchnorm_rank,
        batchnorm_constant_parameters,
        slice_constant_inputs_shape,
        slice_not_batch_axis,
        scatter_nd_index_depth,
        gather_output_rank,
        instancenorm_parameters,
        expand_constant_shape,
        pow_scalar_exponent,
        pad_zero_value,
        deconv_default_dilations,
        transpose_width_position,
        pow_constant_exponent,
        instancenorm_rank,
    ],
    "11.00": _RULES_BOTH
    + [
        conv_input_narrower_than_padding,
        max_pool_storage_order,
        sub_both_variable,
        sub_constant_is_vector,
        add_mul_no_batch_broadcast,
        deconv_group,
    ],
}
# Version-specific instances of rules whose limits changed between the releases.
for _v in TIDL_VERSIONS:
    RULES[_v] = RULES[_v] + [*VARIABLE_DIMS_RULES[_v], FUSED_ONLY_RULES[_v], DEPTHWISE_RULES[_v], DECONV_RULES[_v], SLICE_RANK_RULES[_v], TOPK_RULES[_v]]

# Limits the documents state but a per-node rule cannot check; shown beside the operator.
OP_NOTES = {
    "Cast": "runs on the accelerator only at the network's inputs or outputs (not checked)",
    "QuantizeLinear": "accelerated only in ONNX QDQ models (not checked)",
    "DequantizeLinear": "accelerated only in ONNX QDQ models (not checked)",
    "MatMul": "a signed-input MatMul with an unsigned output is not supported (quantised models; not checked)",
    "Erf": "accelerated inside TIDL's GELU pattern only",
    "ReduceMean": "11.00: accelerated inside TIDL's LayerNorm pattern only",
    "GridSample": "nearest mode rounds differently from ONNX",
}
TDA4VM_NOTES = {
    "MatMul": "on TDA4VM a MatMul mixing signed and unsigned inputs is not supported (quantised models; not checked)",
}
# Limits that depend on the precision: TI lists 16-bit deconvolution as unsupported on AM62A/AM67A.
INT8_ONLY_ON_AM62A = frozenset({"ConvTranspose"})


def _op_support(op: str, chip: str) -> OpSupport:
    precisions = ("int8",) if (chip in AM62A_FAMILY and op in INT8_ONLY_ON_AM62A) else PRECISIONS
    note = (TDA4VM_NOTES.get(op) if chip in TDA4VM_FAMILY else None) or OP_NOTES.get(op, "")
    if op in INT8_ONLY_ON_AM62A and chip in AM62A_FAMILY:
        note = "16-bit deconvolution is not supported on AM62A"
    return OpSupport(precisions=precisions, note=note)


def chip_notes(chip: str, version: str) -> list[str]:
    notes = [
        f"Operators TIDL does not take run on the Arm cores through ONNX Runtime's CPU provider (TIDL {version}).",
        "TI validated this table with ONNX 1.14 / ONNX Runtime 1.15 (opset 19); newer opsets usually work but are not validated.",
        "Fused patterns (GELU around Erf, LayerNorm around ReduceMean, patch merging around strided Slice) are not recognised by the per-node audit.",
    ]
    if version == "11.00" and chip == "tda4vm":
        notes.append("TDA4VM (AM68PA) has no asymmetric per-channel quantisation (quantization_scale_type 4).")
    if version == "11.00" and chip in AM62A_FAMILY:
        notes.append("AM62A has no LUT-accelerated non-linear activations (Sigmoid, HardSigmoid, GELU, Tanh, Softmax, ELU): they run slower on the DSP.")
    return notes


def rule_set(chip_id: str, tidl_version: str = DEFAULT_TIDL_VERSION, **_options) -> RuleSet:
    """The TIDL rule set for one SoC (tda4vm, am62a, am68a, am69a) and TIDL release (11.02 or 11.00).

    Other options (meant for other targets' tables) are ignored.
    """
    if chip_id not in CHIPS:
        raise KeyError(f"TIDL has no rules for chip {chip_id!r}; known: {', '.join(CHIPS)}")
    version = str(tidl_version)
    if version not in TIDL_VERSIONS:
        from edgedeploy.errors import OptionError

        raise OptionError(f"TIDL rules exist for releases {', '.join(TIDL_VERSIONS)}, not {version}.")
    ops = {op: _op_support(op, chip_id) for op in sorted(ACCELERATOR_OPS[version])}
    return RuleSet(
        target=TARGET_ID,
        chip=chip_id,
        toolchain_version=f"TIDL {version}",
        source=SOURCES[version],
        accelerator_ops=ops,
        rules=list(RULES[version]),
        fallback_ops=None,  # ONNX Runtime's CPU provider on the Arm cores runs anything TIDL leaves
        fallback_unit="Arm Cortex-A (ONNX Runtime CPU)",
        notes=chip_notes(chip_id, version),
    )
