"""NXP eIQ rule tables: the i.MX 93 (Ethos-U65 through Vela) and the i.MX 8M Plus (VX delegate).

An ONNX model reaches these NPUs as a TFLite flatbuffer: onnx2tf turns each ONNX node into
TensorFlow operations, the TFLite converter lowers them to TFLite builtin operators and
quantises them to int8, and then
  * i.MX 93: Vela compiles the operators the Ethos-U65 supports into one NPU operator and leaves
    the rest for TFLite's CPU kernels on the Cortex-A55;
  * i.MX 8M Plus: the VX delegate takes the operators it supports at load time on the board;
    the rest run on the Cortex-A53 CPU.
So every rule below is about one of three things, each with its source:

1. Which TFLite operators onnx2tf makes of an ONNX node (ONNX_TO_TFLITE), and which ONNX forms
   it cannot convert at all. onnx2tf 1.29.24's "Supported layers" list (its README, shipped as
   the package METADATA) names the ONNX operators it implements; which TFLite operators come
   out, and which forms fail, was measured with onnx2tf 1.29.24 + tensorflow-cpu 2.19.0 on
   ONNX's backend node tests (scripts/eiq_node_agreement.py) and is marked "(measured)".
2. Which TFLite operators the int8 quantiser cannot quantise (TFLITE_FLOAT_ONLY): TF 2.19's
   converter keeps them in float32 between DEQUANTIZE/QUANTIZE (measured).
3. What the NPU takes:
   * i.MX 93, default: Vela 5.2.0, `vela --supported-ops-report` ("Ethos-U55 and Ethos-U65
     TFLite" tables) -- the Vela this tool runs. Option vela="3.10": NXP's fork of Vela 3.10.0
     in the BSP lf-6.6.3_1.0.0 (nxp-imx/ethos-u-vela SUPPORTED_OPS.md, file 8cb3c360), the
     compiler of the eIQ release for that BSP.
   * i.MX 8M Plus: the VX delegate's operator status (nxp-imx/tflite-vx-delegate-imx
     op_status.md, branch lf-6.6.3_1.0.0, file 10085b37), "yes" rows.
   Copies of these documents: shared/reference/nxp-eiq (see SOURCES.md there).

Placements: ACCELERATOR = on the NPU; FLOAT = kept in float32 (no int8 kernel; on the i.MX 93
that is the CPU); FALLBACK = TFLite's int8 CPU kernel on the Cortex-A; UNSUPPORTED = onnx2tf or
the int8 converter fails, or the operator would need TensorFlow's Flex delegate, which the
boards' TFLite runtime does not have.
"""

from __future__ import annotations

from edgedeploy.audit.rules import NodeView, Offence, OpSupport, Placement, RuleSet, rule

ONNX2TF_VERSION = "1.29.24"
TENSORFLOW_VERSION = "2.19.0"
VELA_VERSION = "5.2.0"
NXP_VELA_VERSION = "3.10.0"
VX_DELEGATE_RELEASE = "lf-6.6.3_1.0.0"
CHIPS = ("imx93", "imx8mp")

SOURCE_CONVERTER = f"onnx2tf {ONNX2TF_VERSION} README 'Supported layers' + conversions measured with tensorflow-cpu {TENSORFLOW_VERSION}"
SOURCE_VELA = f"Vela {VELA_VERSION} `vela --supported-ops-report` (Ethos-U55 and Ethos-U65 TFLite)"
SOURCE_NXP_VELA = f"nxp-imx/ethos-u-vela {NXP_VELA_VERSION} SUPPORTED_OPS.md (BSP lf-6.6.3_1.0.0, file 8cb3c360)"
SOURCE_VX = f"nxp-imx/tflite-vx-delegate-imx op_status.md ({VX_DELEGATE_RELEASE}, file 10085b37)"

# ----------------------------------------------------------------------------------------------
# The NPUs' TFLite operator lists (transcribed).

# Vela 5.2.0, "Ethos-U55 and Ethos-U65 TFLite Summary Table".
VELA_5_2_OPS = frozenset(
    """ABS ADD ARG_MAX AVERAGE_POOL_2D BATCH_MATMUL CONCATENATION CONV_2D DEPTHWISE_CONV_2D ELU EXP
    EXPAND_DIMS FULLY_CONNECTED GELU HARD_SWISH LEAKY_RELU LOG LOGISTIC MAXIMUM MAX_POOL_2D MEAN
    MINIMUM MIRROR_PAD MUL NEG PACK PAD PADV2 PRELU QUANTIZE REDUCE_MAX REDUCE_MIN RELU RELU6
    RELU_0_TO_1 RELU_N1_TO_1 RESHAPE RESIZE_BILINEAR RESIZE_NEAREST_NEIGHBOR REVERSE_V2 RSQRT SLICE
    SOFTMAX SPLIT SPLIT_V SQUARED_DIFFERENCE SQUEEZE STRIDED_SLICE SUB SUM TANH TILE TRANSPOSE
    TRANSPOSE_CONV UNIDIRECTIONAL_SEQUENCE_LSTM UNPACK""".split()
)
# NXP's Vela 3.10.0 (lf-6.6.3_1.0.0), "TFLite Summary Table".
VELA_3_10_OPS = frozenset(
    """ABS ADD ARG_MAX AVERAGE_POOL_2D CONCATENATION CONV_2D DEPTHWISE_CONV_2D EXP EXPAND_DIMS
    FULLY_CONNECTED HARD_SWISH LEAKY_RELU LOGISTIC MAXIMUM MAX_POOL_2D MEAN MINIMUM MUL PACK PAD PRELU
    QUANTIZE RELU RELU6 RELU_N1_TO_1 RESHAPE RESIZE_BILINEAR RESIZE_NEAREST_NEIGHBOR RSQRT SHAPE SLICE
    SOFTMAX SPLIT SPLIT_V SQUARED_DIFFERENCE SQUEEZE STRIDED_SLICE SUB TANH TRANSPOSE TRANSPOSE_CONV
    UNIDIRECTIONAL_SEQUENCE_LSTM UNPACK""".split()
)
# VX delegate op_status.md, rows marked "yes" (its CamelCase names as TFLite builtin names).
VX_DELEGATE_OPS = frozenset(
    """ADD AVERAGE_POOL_2D CONCATENATION CONV_2D DEPTHWISE_CONV_2D DEPTH_TO_SPACE DEQUANTIZE
    EMBEDDING_LOOKUP FLOOR FULLY_CONNECTED HASHTABLE_LOOKUP L2_NORMALIZATION
    LOCAL_RESPONSE_NORMALIZATION LOGISTIC MAX_POOL_2D MUL RELU RELU_N1_TO_1 RELU6 RESHAPE
    RESIZE_BILINEAR RNN SOFTMAX SPACE_TO_DEPTH TANH PAD UNIDIRECTIONAL_SEQUENCE_RNN GATHER
    BATCH_TO_SPACE_ND SPACE_TO_BATCH_ND TRANSPOSE MEAN SUB DIV SQUEEZE UNIDIRECTIONAL_SEQUENCE_LSTM
    STRIDED_SLICE BIDIRECTIONAL_SEQUENCE_RNN EXP SPLIT BIDIRECTIONAL_SEQUENCE_LSTM PRELU MAXIMUM
    ARG_MAX MINIMUM LESS NEG GREATER GREATER_EQUAL LESS_EQUAL SELECT SLICE SIN TRANSPOSE_CONV
    EXPAND_DIMS EQUAL NOT_EQUAL LOG SUM SQRT RSQRT SHAPE POW ARG_MIN REDUCE_PROD REDUCE_MAX PACK
    LOGICAL_OR ONE_HOT LOGICAL_AND LOGICAL_NOT UNPACK REDUCE_MIN FLOOR_DIV REDUCE_ANY SQUARE
    RESIZE_NEAREST_NEIGHBOR LEAKY_RELU ABS SPLIT_V REVERSE_V2 ADD_N GATHER_ND COS ELU QUANTIZE
    HARD_SWISH SELECT_V2 BATCH_MATMUL CONV_3D""".split()
)

# ----------------------------------------------------------------------------------------------
# What onnx2tf makes of each ONNX operator (int8 TFLite), and what the int8 quantiser keeps in float.

# TFLite operators TF 2.19's full-int8 quantiser leaves in float32 (DEQUANTIZE -> op -> QUANTIZE)
# (measured on the node tests: their inputs and outputs stay float32 in the int8 model).
TFLITE_FLOAT_ONLY = frozenset(
    """SIN COS CEIL FLOOR DIV NEG POW ROUND SIGN SQRT SQUARE LOCAL_RESPONSE_NORMALIZATION ADD_N
    FLOOR_DIV LOG_SOFTMAX""".split()
)

# ONNX operator -> the TFLite builtins onnx2tf's conversion of the usual form produces (measured;
# layout TRANSPOSE/RESHAPE operators onnx2tf adds around some nodes are left out: they run where
# the node runs). An operator missing here is one onnx2tf cannot turn into TFLite builtins.
ONNX_TO_TFLITE: dict[str, tuple[str, ...]] = {
    "Abs": ("ABS",),
    "Add": ("ADD",),
    "And": ("LOGICAL_AND",),
    "ArgMax": ("ARG_MAX",),
    "ArgMin": ("ARG_MIN",),
    "AveragePool": ("AVERAGE_POOL_2D",),
    "BatchNormalization": ("MUL", "ADD"),
    "Cast": ("CAST",),
    "Ceil": ("CEIL",),
    "Celu": ("RELU", "MUL", "EXP", "SUB", "MINIMUM", "ADD"),
    "Clip": ("RELU_N1_TO_1", "MINIMUM", "MAXIMUM"),
    "Concat": ("CONCATENATION",),
    "ConstantOfShape": ("FILL",),
    "Conv": ("CONV_2D", "DEPTHWISE_CONV_2D"),
    "ConvTranspose": ("TRANSPOSE_CONV",),
    "Cos": ("COS",),
    "CumSum": ("CUMSUM",),
    "DepthToSpace": ("RESHAPE", "TRANSPOSE"),
    "Div": ("DIV",),
    "Elu": ("GREATER_EQUAL", "LESS", "EXP", "SELECT_V2"),
    "Equal": ("EQUAL",),
    "Exp": ("EXP",),
    "Expand": ("BROADCAST_TO",),
    "Flatten": ("RESHAPE",),
    "Floor": ("FLOOR",),
    "Gather": ("GATHER",),
    "GatherElements": ("GATHER_ND",),
    "GatherND": ("GATHER_ND",),
    "Gelu": ("GELU",),
    "Gemm": ("FULLY_CONNECTED",),
    "GlobalAveragePool": ("MEAN",),
    "GlobalMaxPool": ("REDUCE_MAX",),
    "Greater": ("GREATER",),
    "GreaterOrEqual": ("GREATER_EQUAL",),
    "HardSigmoid": ("MUL", "ADD", "RELU_0_TO_1"),
    "HardSwish": ("HARD_SWISH",),
    "Identity": (),
    "Dropout": (),
    "LeakyRelu": ("LEAKY_RELU",),
    "Less": ("LESS",),
    "LessOrEqual": ("LESS_EQUAL",),
    "Log": ("LOG",),
    "LogSoftmax": ("LOG_SOFTMAX",),
    "LRN": ("LOCAL_RESPONSE_NORMALIZATION",),
    "MatMul": ("BATCH_MATMUL",),
    "Max": ("MAXIMUM",),
    "MaxPool": ("MAX_POOL_2D",),
    "Mean": ("PACK", "MEAN"),
    "Min": ("MINIMUM",),
    "Mish": ("EXP", "ADD", "LOG", "TANH", "MUL"),
    "Mod": ("FLOOR_MOD",),
    "Mul": ("MUL",),
    "Neg": ("NEG",),
    "Not": ("LOGICAL_NOT",),
    "Or": ("LOGICAL_OR",),
    "Pad": ("PAD",),
    "Pow": ("POW",),
    "PRelu": ("PRELU",),
    "Reciprocal": ("DIV",),
    "ReduceMax": ("REDUCE_MAX",),
    "ReduceMean": ("MEAN",),
    "ReduceMin": ("REDUCE_MIN",),
    "ReduceProd": ("REDUCE_PROD",),
    "ReduceSum": ("SUM",),
    "Relu": ("RELU",),
    "Reshape": ("RESHAPE",),
    "Resize": ("RESIZE_NEAREST_NEIGHBOR",),
    "ReverseSequence": ("REVERSE_SEQUENCE",),
    "Round": ("ROUND",),
    "Selu": ("GREATER", "EXP", "SELECT_V2"),
    "Shrink": ("GREATER", "LESS", "SELECT_V2"),
    "Sigmoid": ("LOGISTIC",),
    "Sign": ("SIGN",),
    "Sin": ("SIN",),
    "Slice": ("STRIDED_SLICE",),
    "Softmax": ("SOFTMAX",),
    "Softplus": ("EXP", "ADD", "LOG"),
    "SpaceToDepth": ("SPACE_TO_DEPTH",),
    "Split": ("SPLIT",),
    "Sqrt": ("SQRT",),
    "Squeeze": ("RESHAPE",),
    "Sub": ("SUB",),
    "Sum": ("ADD_N",),
    "Tanh": ("TANH",),
    "ThresholdedRelu": ("SIGN",),
    "Tile": ("TILE",),
    "Transpose": ("TRANSPOSE",),
    "Trilu": ("SELECT",),
    "Unsqueeze": ("RESHAPE",),
    "Upsample": ("RESIZE_NEAREST_NEIGHBOR",),
    "Where": ("SELECT_V2",),
    "Xor": ("NOT_EQUAL",),
}


def tflite_ops(op_type: str) -> tuple[str, ...]:
    return ONNX_TO_TFLITE.get(op_type, ())


def convertible_ops() -> frozenset[str]:
    return frozenset(ONNX_TO_TFLITE)


# ----------------------------------------------------------------------------------------------
# Layout: onnx2tf lays rank 3..5 tensors out channels-last, so ONNX axis 1 becomes the last axis.


def tf_axis(axis: int, rank: int) -> int:
    """The axis of the converted (channels-last) tensor that ONNX axis `axis` becomes."""
    axis = axis % rank if rank else 0
    if rank < 3:
        return axis
    if axis == 0:
        return 0
    if axis == 1:
        return rank - 1
    return axis - 1


def _rank(node: NodeView, i: int = 0) -> int | None:
    t = node.input(i)
    return t.rank if t is not None else None


def _shape(node: NodeView, i: int = 0):
    t = node.input(i)
    return t.shape if t is not None and t.is_static else None


def _tf_shape(shape) -> tuple:
    """A static ONNX-layout shape in the converted (channels-last) layout."""
    rank = len(shape)
    if rank < 3:
        return tuple(shape)
    return (shape[0], *shape[2:], shape[1])


# ----------------------------------------------------------------------------------------------
# Rules about the conversion (both chips): forms onnx2tf or the int8 converter refuses.

# Inputs onnx2tf reads as Python values at conversion time (measured: with them as graph inputs,
# onnx2tf 1.29.24 stops with an error): operator -> input indices.
CONSTANT_INPUTS = {
    "Conv": (1,),
    "ConvTranspose": (1,),
    "Pad": (1, 2, 3),
    "Squeeze": (1,),
    "Unsqueeze": (1,),
    "Split": (1,),
    "ReduceMax": (1,),
    "ReduceMean": (1,),
    "ReduceMin": (1,),
    "ReduceProd": (1,),
    "ReduceSum": (1,),
    "CumSum": (1,),
    "Clip": (1, 2),
    "Reshape": (1,),
    "Tile": (1,),
    "Expand": (1,),
    "Resize": (1, 2, 3),
    "Upsample": (1,),
    "ConstantOfShape": (0,),
}


@rule(*CONSTANT_INPUTS, placement=Placement.UNSUPPORTED, CONVERTER=f"onnx2tf {ONNX2TF_VERSION}")
def parameter_input_not_constant(node, chip):
    """{CONVERTER} reads this input (weights, axes, pads, shape, repeats, scales) while converting; it must be a constant initializer, not computed at run time."""
    bad = [node.inputs[i].name for i in CONSTANT_INPUTS[node.op_type] if node.input(i) is not None and not node.input(i).is_constant]
    if bad:
        return Offence(bad, "non-constant: " + ", ".join(bad))
    return None


# Element types the TFLite converter cannot take as model inputs (measured: float64 inputs fail in
# onnx2tf, bfloat16 becomes quint16, which the converter rejects; strings have no TFLite kernel).
UNCONVERTIBLE_DTYPES = frozenset({"float64", "bfloat16", "object", "string", "complex64", "complex128", "float8e4m3fn", "float8e5m2"})


@rule(placement=Placement.UNSUPPORTED, DTYPES=sorted(UNCONVERTIBLE_DTYPES))
def unconvertible_element_type(node, chip):
    """The converter has no TFLite tensor type for {DTYPES} data."""
    found = sorted({t.dtype for t in list(node.inputs) + list(node.outputs) if t.present and t.dtype in UNCONVERTIBLE_DTYPES})
    if found:
        return Offence(found[0], "tensor of type " + ", ".join(found))
    return None


# ----------------------------------------------------------------------------------------------
# Rules for the i.MX 93 (Vela): whether the TFLite operators go to the Ethos-U65.


def _vela_ops(options) -> frozenset[str]:
    return VELA_3_10_OPS if options.get("vela") == "3.10" else VELA_5_2_OPS


def make_not_on_npu_rule(npu_ops: frozenset[str], compiler: str):
    # One rule per chip/compiler: its sentence names the compiler its table comes from.
    @rule(placement=Placement.FALLBACK, COMPILER=compiler)
    def tflite_operator_not_on_npu(node, chip):
        """onnx2tf lowers this node to a TFLite operator {COMPILER} does not place on the NPU; it runs on the CPU with TFLite's int8 kernel."""
        missing = [t for t in tflite_ops(node.op_type) if t not in npu_ops and t not in TFLITE_FLOAT_ONLY]
        if missing:
            return Offence(missing[0], "TFLite " + ", ".join(missing))
        return None

    return tflite_operator_not_on_npu


@rule(placement=Placement.FLOAT, QUANTISER=f"TensorFlow {TENSORFLOW_VERSION}'s int8 quantiser")
def no_int8_kernel(node, chip):
    """{QUANTISER} has no int8 kernel for the TFLite operator of this node; it stays in float32 between DEQUANTIZE and QUANTIZE (on the i.MX 93: on the CPU)."""
    found = [t for t in tflite_ops(node.op_type) if t in TFLITE_FLOAT_ONLY]
    if found:
        return Offence(found[0], "TFLite " + ", ".join(found))
    return None


# Vela's generic constraint: feature maps must be quantised 8/16-bit; int32 and 64-bit integer
# tensors (indices, counters, masks) are "32-bit/64-bit feature-maps", which it leaves to the CPU.
INTEGER_DTYPES = frozenset({"int32", "int64", "uint32", "uint64", "int16", "uint16", "bool", "uint8", "int8"})


@rule(placement=Placement.FALLBACK, COMPILER=f"Vela {VELA_VERSION}")
def integer_feature_map(node, chip):
    """This node computes on integer or boolean tensors that are not quantised activations; {COMPILER} takes only quantised 8/16-bit feature maps to the NPU and leaves the node on the CPU."""
    for t in node.inputs:
        if t.present and not t.is_constant and t.dtype in INTEGER_DTYPES:
            return Offence(t.dtype, f"input {t.name} is {t.dtype}")
    for t in node.outputs:
        if t.present and t.dtype in INTEGER_DTYPES and node.op_type not in ("ArgMax",):
            return Offence(t.dtype, f"output {t.name} is {t.dtype}")
    return None


@rule("ArgMax", placement=Placement.FALLBACK, MAX_DEPTH=127)
def argmax_not_on_depth(node, chip):
    """Vela runs ARG_MAX only along the depth (channels-last) axis, with a depth of at most {MAX_DEPTH}."""
    rank = _rank(node)
    shape = _shape(node)
    if rank is None:
        return None
    axis = tf_axis(int(node.attr("axis", 0)), rank)
    if axis != rank - 1:
        return Offence(int(node.attr("axis", 0)), "reduction not along the channels-last axis")
    if shape is not None and _tf_shape(shape)[-1] > 127:
        return Offence(_tf_shape(shape)[-1], "depth above 127")
    return None


@rule("MaxPool", "AveragePool", placement=Placement.FALLBACK, MAX_KERNEL_H=256, MAX_KERNEL_PRODUCT=65536, MAX_STRIDE=3, MAX_PADDED_KERNEL=8)
def pool_limits(node, chip):
    """Vela's pooling limits: kernel height at most {MAX_KERNEL_H} and kernel area at most {MAX_KERNEL_PRODUCT}; strides above {MAX_STRIDE} only with VALID padding; average pooling with SAME padding only with kernels up to {MAX_PADDED_KERNEL}x{MAX_PADDED_KERNEL}."""
    kernel = list(node.attr("kernel_shape", []) or [])
    strides = list(node.attr("strides", []) or [1] * len(kernel))
    pads = list(node.attr("pads", []) or [0] * (2 * len(kernel)))
    auto_pad = node.attr("auto_pad", "NOTSET")
    if len(kernel) > 2:
        return Offence(len(kernel), "3-D pooling")
    kh = kernel[0] if kernel else 1
    kw = kernel[1] if len(kernel) > 1 else 1
    padded = any(pads) or auto_pad in ("SAME_UPPER", "SAME_LOWER")
    if kh > 256 or kh * kw > 65536:
        return Offence(kernel, "kernel too large")
    if any(s > 3 for s in strides) and padded:
        return Offence(strides, "stride above 3 with padding")
    if node.op_type == "AveragePool" and padded and (kh > 8 or kw > 8):
        return Offence(kernel, "padded average pool kernel above 8")
    if node.attr("ceil_mode", 0):
        return Offence("ceil_mode", "ceil_mode=1")
    dil = list(node.attr("dilations", []) or [])
    if any(d != 1 for d in dil):
        return Offence(dil, "dilated pooling")
    return None


@rule("Softmax", "LogSoftmax", placement=Placement.FALLBACK, MAX_HW=65536)
def softmax_limits(node, chip):
    """Vela runs SOFTMAX when the product of the input's height and width is below {MAX_HW}."""
    shape = _shape(node)
    if shape is None:
        return None
    tf = _tf_shape(shape)
    hw = 1
    for d in tf[1:-1]:
        hw *= d
    if hw >= 65536:
        return Offence(hw, "H*W")
    return None


RULE_COMMON = (parameter_input_not_constant, unconvertible_element_type)


def _notes(chip_id: str, options) -> list[str]:
    notes = [
        "onnx2tf converts NCHW models to NHWC: axes in rules are the converted (channels-last) axes.",
        "Layout TRANSPOSE/RESHAPE operators onnx2tf inserts run where the node they belong to runs.",
    ]
    if chip_id == "imx93":
        notes.append("Vela 5.2.0 is run with Arm's Ethos_U65_High_End / Dedicated_Sram_384KB configuration, the values of NXP's i.MX 93 default (see targets/eiq/__init__.py).")
    else:
        notes.append("The VX delegate decides on the board at load time; its operator list has no per-operator limits, so only the list is checked.")
    return notes


def rule_set(chip_id: str, **options) -> RuleSet:
    """The RuleSet of one chip. Options: vela="5.2" (default) or "3.10" (NXP's BSP Vela), i.MX 93 only."""
    if chip_id not in CHIPS:
        raise KeyError(chip_id)
    ops = convertible_ops()
    accelerator = {op: OpSupport(("int8",), "→ " + ", ".join(tflite_ops(op)) if tflite_ops(op) else "no TFLite operator (folded away)") for op in sorted(ops)}
    if chip_id == "imx93":
        npu_ops = _vela_ops(options)
        compiler = f"Vela {NXP_VELA_VERSION} (NXP)" if options.get("vela") == "3.10" else f"Vela {VELA_VERSION}"
        rules = [*RULE_COMMON, make_not_on_npu_rule(npu_ops, compiler), no_int8_kernel, integer_feature_map, argmax_not_on_depth, pool_limits, softmax_limits]
        source = f"{SOURCE_NXP_VELA if options.get('vela') == '3.10' else SOURCE_VELA}; {SOURCE_CONVERTER}"
        version = f"onnx2tf {ONNX2TF_VERSION}; {compiler}"
        unit = "CPU (Cortex-A55)"
    else:
        rules = [*RULE_COMMON, make_not_on_npu_rule(VX_DELEGATE_OPS, f"the VX delegate ({VX_DELEGATE_RELEASE})"), no_int8_kernel]
        source = f"{SOURCE_VX}; {SOURCE_CONVERTER}"
        version = f"onnx2tf {ONNX2TF_VERSION}; VX delegate {VX_DELEGATE_RELEASE}"
        unit = "CPU (Cortex-A53)"
    return RuleSet(
        target="eiq",
        chip=chip_id,
        toolchain_version=version,
        source=source,
        accelerator_ops=accelerator,
        rules=rules,
        fallback_ops=frozenset(),
        float_only_ops=frozenset(),
        fallback_unit=unit,
        min_opset=7,
        max_opset=23,
        notes=_notes(chip_id, options),
    )
