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

# TFLite operators TF 2.19's full-int8 quantiser leaves in float32 when they compute on float data
# (DEQUANTIZE -> op -> QUANTIZE around them) (measured on the node tests: their tensors stay
# float32 in the int8 model). On integer data they compute in integers (FLOOR_MOD, CAST).
TFLITE_FLOAT_ONLY = frozenset(
    """SIN COS CEIL FLOOR DIV NEG POW ROUND SIGN SQRT SQUARE LOCAL_RESPONSE_NORMALIZATION ADD_N
    FLOOR_DIV FLOOR_MOD CAST ELU""".split()
)

# ONNX operator -> the TFLite builtins onnx2tf 1.29.24 produces for it in the int8 model
# (measured; the layout TRANSPOSE/RESHAPE operators onnx2tf adds around some nodes are left out:
# they run where the node runs). Where the lowering depends on attributes, a rule below says so
# (Elu, DepthToSpace). An ONNX operator missing here is one onnx2tf cannot turn into TFLite
# builtins (it has no converter for it, or it needs TensorFlow ops that are neither TFLite
# builtins nor Flex-free: Acos, Asin, Atan, Cosh, Erf, Softsign, Det, BitShift, TopK, ...).
ONNX_TO_TFLITE: dict[str, tuple[str, ...]] = {
    "Abs": ("ABS",),
    "Add": ("ADD",),
    "And": ("LOGICAL_AND",),
    "ArgMax": ("ARG_MAX",),
    "ArgMin": ("ARG_MIN",),
    "AveragePool": ("AVERAGE_POOL_2D",),
    "BatchNormalization": ("MUL", "ADD"),
    "BitShift": ("RIGHT_SHIFT",),
    "BitwiseXor": ("BITWISE_XOR",),
    "Cast": ("CAST",),
    "Ceil": ("CEIL",),
    "Celu": ("RELU", "MUL", "EXP", "SUB", "MINIMUM", "ADD"),
    "CenterCropPad": ("SLICE", "PADV2", "SCATTER_ND", "SELECT_V2"),
    "Clip": ("RELU_N1_TO_1", "MINIMUM", "MAXIMUM"),
    "Col2Im": ("ONE_HOT", "RANGE", "TRANSPOSE_CONV"),
    "Concat": ("CONCATENATION",),
    "Constant": (),
    "ConstantOfShape": ("FILL",),
    "Conv": ("CONV_2D", "DEPTHWISE_CONV_2D"),
    "ConvTranspose": ("TRANSPOSE_CONV",),
    "Cos": ("COS",),
    "CumSum": ("CUMSUM",),
    "DepthToSpace": ("RESHAPE", "TRANSPOSE"),
    "DequantizeLinear": ("CAST", "SUB", "MUL"),
    "Div": ("DIV",),
    "Dropout": (),
    "DynamicQuantizeLinear": ("REDUCE_MAX", "REDUCE_MIN", "MINIMUM", "RELU", "MUL", "ADD", "SUB"),
    "Elu": ("ELU",),
    "Equal": ("EQUAL",),
    "Exp": ("EXP",),
    "Expand": ("MUL",),
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
    "GridSample": ("GATHER", "SELECT_V2"),
    "HardSigmoid": ("MUL", "ADD", "RELU_0_TO_1"),
    "Hardmax": ("ARG_MAX", "ONE_HOT"),
    "HardSwish": ("HARD_SWISH",),
    "Identity": (),
    "LeakyRelu": ("LEAKY_RELU",),
    "Less": ("LESS",),
    "LessOrEqual": ("LESS_EQUAL",),
    "Log": ("LOG",),
    "LogSoftmax": ("LOG_SOFTMAX",),
    "LpNormalization": ("ABS", "SUM", "DIV"),
    "LpPool": ("POW", "AVERAGE_POOL_2D"),
    "LRN": ("LOCAL_RESPONSE_NORMALIZATION",),
    "MatMul": ("BATCH_MATMUL",),
    "Max": ("MAXIMUM",),
    "MaxPool": ("MAX_POOL_2D",),
    "MaxUnpool": ("SCATTER_ND",),
    "Mean": ("PACK", "MEAN"),
    "Min": ("MINIMUM",),
    "Mish": ("EXP", "ADD", "LOG", "TANH", "MUL"),
    "Mod": ("FLOOR_MOD",),
    "Mul": ("MUL",),
    "Neg": ("NEG",),
    "NegativeLogLikelihoodLoss": ("ONE_HOT", "MUL", "SUM"),
    "Not": ("LOGICAL_NOT",),
    "Or": ("LOGICAL_OR",),
    "Pad": ("PAD",),
    "Pow": ("POW",),
    "PRelu": ("PRELU",),
    "QLinearMatMul": ("BATCH_MATMUL", "RESHAPE"),
    "QuantizeLinear": ("DIV", "ROUND", "CAST"),
    "Reciprocal": ("DIV",),
    "ReduceLogSum": ("SUM", "LOG"),
    "ReduceMax": ("REDUCE_MAX",),
    "ReduceMean": ("MEAN",),
    "ReduceMin": ("REDUCE_MIN",),
    "ReduceProd": ("REDUCE_PROD",),
    "ReduceSum": ("SUM",),
    "Relu": ("RELU",),
    "Reshape": ("RESHAPE",),
    "Resize": ("RESIZE_NEAREST_NEIGHBOR", "RESIZE_BILINEAR"),
    "ReverseSequence": ("REVERSE_SEQUENCE",),
    "RMSNormalization": ("SQUARE", "MEAN", "RSQRT", "MUL"),
    "Round": ("ROUND",),
    "Scatter": ("SCATTER_ND",),
    "ScatterElements": ("SCATTER_ND",),
    "ScatterND": ("SCATTER_ND",),
    "Selu": ("GREATER", "EXP", "SELECT_V2"),
    "Shape": ("SHAPE",),
    "Shrink": ("GREATER", "LESS", "SELECT_V2"),
    "Sigmoid": ("LOGISTIC",),
    "Sign": ("SIGN",),
    "Sin": ("SIN",),
    "Size": (),
    "Slice": ("STRIDED_SLICE",),
    "Softmax": ("SOFTMAX",),
    "SoftmaxCrossEntropyLoss": ("LOG_SOFTMAX", "ONE_HOT", "MUL", "SUM"),
    "Softplus": ("EXP", "ADD", "LOG"),
    "SpaceToDepth": ("SPACE_TO_DEPTH",),
    "Split": ("SPLIT",),
    "Sqrt": ("SQRT",),
    "Squeeze": ("RESHAPE",),
    "Sub": ("SUB",),
    "Sum": ("ADD_N",),
    "Tanh": ("TANH",),
    "TensorScatter": ("GATHER", "SCATTER_ND"),
    "ThresholdedRelu": ("SIGN", "MUL"),
    "Tile": ("TILE",),
    "Transpose": ("TRANSPOSE",),
    "Trilu": ("SELECT_V2", "ZEROS_LIKE"),
    "Unsqueeze": ("RESHAPE",),
    "Upsample": ("RESIZE_NEAREST_NEIGHBOR",),
    "Where": ("SELECT_V2",),
    "Xor": ("NOT_EQUAL",),
}


def lowering(node: NodeView) -> tuple[str, ...]:
    """The TFLite operators onnx2tf makes of this node (the attribute-dependent forms included)."""
    op = node.op_type
    if op == "Elu" and float(node.attr("alpha", 1.0)) != 1.0:
        # Measured: alpha 1 becomes TFLite ELU; any other alpha a decomposition with comparisons.
        return ("GREATER_EQUAL", "LESS", "EXP", "SELECT_V2")
    if op == "Div" and node.input(1) is not None and node.input(1).is_constant and _has_float_data(node):
        return ("MUL",)  # measured: float x / c becomes x * (1/c); integer division goes through float
    if op == "Div" and _pattern(node, "Exp", "ReduceSum") and _reduced_on_last_tf_axis(node):
        return ("SOFTMAX",)  # measured: exp(x) / sum(exp(x)) over the channels-last axis is fused into SOFTMAX
    if op == "Sub" and _pattern(node, "Sub", "Log") and _reduced_on_last_tf_axis(node):
        return ("LOG_SOFTMAX",)  # measured: (x - max) - log(sum(exp(x - max))) likewise becomes LOG_SOFTMAX
    if op == "Div" and node.input(1) is not None and node.input(1).producer == "Sqrt" and _has_float_data(node):
        return ("RSQRT", "MUL")  # measured: the converter rewrites x / sqrt(v) as x * rsqrt(v) (LayerNorm)
    if op == "Pow" and _constant_value(node, 1) == 2.0:
        return ("MUL",)  # measured: x ** 2 becomes x * x
    if op == "LpNormalization" and int(node.attr("p", 2)) == 2:
        return ("MUL", "SUM", "RSQRT")  # measured: x * rsqrt(sum(x*x))
    if op == "LpPool" and any(d != 1 for d in (node.attr("dilations", []) or [])):
        # Measured: dilated windows go through SPACE_TO_BATCH_ND / BATCH_TO_SPACE_ND.
        return ("POW", "SPACE_TO_BATCH_ND", "AVERAGE_POOL_2D", "BATCH_TO_SPACE_ND")
    if op == "DepthToSpace" and node.attr("mode", "DCR") == "DCR":
        # Measured: DCR becomes TFLite DEPTH_TO_SPACE; CRD a RESHAPE/TRANSPOSE sequence.
        return ("DEPTH_TO_SPACE",)
    return ONNX_TO_TFLITE.get(op, ())


def _pattern(node: NodeView, first: str, second: str) -> bool:
    a, b = node.input(0), node.input(1)
    return a is not None and b is not None and a.producer == first and b.producer == second


def _reduced_on_last_tf_axis(node: NodeView) -> bool:
    """Whether input 1 is input 0 reduced (kept dims) over exactly the axis that is last after the NHWC conversion."""
    a, b = node.input(0), node.input(1)
    if a is None or b is None or not a.is_static or not b.is_static or len(a.shape) != len(b.shape):
        return False
    reduced = [i for i, (x, y) in enumerate(zip(a.shape, b.shape)) if y == 1 and x > 1]
    return len(reduced) == 1 and tf_axis(reduced[0], len(a.shape)) == len(a.shape) - 1


def _constant_value(node: NodeView, i: int) -> float | None:
    t = node.input(i)
    if t is None or not t.is_constant or t.value is None or t.value.size != 1:
        return None
    try:
        return float(t.value.reshape(-1)[0])
    except (TypeError, ValueError):
        return None


def tflite_ops(op_type: str) -> tuple[str, ...]:
    return ONNX_TO_TFLITE.get(op_type, ())


def convertible_ops() -> frozenset[str]:
    return frozenset(ONNX_TO_TFLITE)


# Float types; the converter widens the 2/4-bit integers and float8 inputs through float, too (measured on Cast).
FLOAT_DTYPES = frozenset({"float32", "float16", "float64", "int2", "uint2", "float8_e4m3fn", "float8_e5m2"})


def _has_float_data(node: NodeView) -> bool:
    tensors = [t for t in node.inputs if t.present and not t.is_constant] + [t for t in node.outputs if t.present]
    return any(t.dtype in FLOAT_DTYPES for t in tensors)


# onnx2tf computes these in float even on integer inputs (CAST to float, then the float kernel).
ALWAYS_FLOAT = frozenset({"Div", "Reciprocal"})


def _float_only(node: NodeView) -> list[str]:
    """The node's TFLite operators the quantiser keeps in float (only when it computes on float data)."""
    if not _has_float_data(node) and not (node.op_type in ALWAYS_FLOAT and "DIV" in lowering(node)):
        return []
    return [t for t in lowering(node) if t in TFLITE_FLOAT_ONLY]


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
# Rules about the conversion (both chips): forms onnx2tf or the int8 converter refuses (measured).

CONVERTER = f"onnx2tf {ONNX2TF_VERSION}"

# Inputs onnx2tf reads as Python values at conversion time: given as model inputs, onnx2tf 1.29.24
# stops with an error (measured; computed from constants in the graph, it evaluates them).
# Operator -> input indices.
CONSTANT_INPUTS = {
    "Conv": (1,),
    "ConvTranspose": (1,),
    "Pad": (1, 2, 3),
    "Squeeze": (1,),
    "Unsqueeze": (1,),
    "Split": (1,),
    "CumSum": (1,),
    "Clip": (1, 2),
    "Trilu": (1,),
    "Dropout": (1, 2),
}
# Reduction axes must be constants in the model: computed axes fail too (measured).
REDUCTIONS = ("ReduceMax", "ReduceMean", "ReduceMin", "ReduceProd", "ReduceSum", "ReduceLogSum", "ReduceL1", "ReduceL2", "ReduceSumSquare", "ReduceLogSumExp")


@rule(*CONSTANT_INPUTS, placement=Placement.UNSUPPORTED, CONVERTER=CONVERTER)
def parameter_input_not_constant(node, chip):
    """{CONVERTER} reads this input (weights, axes, pads, bounds, scales, split sizes) while converting; it cannot be a model input."""
    if node.op_type == "Pad" and node.attr("mode", "constant") == "reflect":
        return None  # measured: reflect padding takes run-time pads (on the CPU)
    bad = [node.inputs[i].name for i in CONSTANT_INPUTS[node.op_type] if _given(node, i) and node.input(i).is_graph_input]
    if bad:
        return Offence(bad, "model input: " + ", ".join(bad))
    return None


@rule(*REDUCTIONS, placement=Placement.UNSUPPORTED, CONVERTER=CONVERTER)
def reduction_axes_not_constant(node, chip):
    """{CONVERTER} needs a reduction's axes input to be a constant of the model (given as a model input or computed, the conversion fails)."""
    t = node.input(1)
    if _given(node, 1) and not t.is_constant:
        return Offence(t.name, "axes not constant")
    return None


def _given(node: NodeView, i: int) -> bool:
    """Input i is given and not empty (an empty axes tensor means "all axes", like no input)."""
    t = node.input(i)
    return t is not None and not (t.is_static and t.numel == 0)


# Element types the converter has no TFLite tensor type for (measured: bfloat16 becomes quint16,
# which the converter rejects; the float8/float4 types fail in onnx2tf; strings have no int8
# path). Names as edgedeploy.model.stats.dtype_name spells them. The 2-bit integers and two
# float8 types convert as inputs (widened through float), but fail as results.
UNCONVERTIBLE_DTYPES = frozenset(
    {"bfloat16", "object", "complex64", "complex128", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu", "float4_e2m1fn", "int4", "uint4"}
)
UNCONVERTIBLE_RESULT_DTYPES = frozenset({"int2", "uint2", "float8_e4m3fn", "float8_e5m2"})


@rule(placement=Placement.UNSUPPORTED, DTYPES=sorted(UNCONVERTIBLE_DTYPES | UNCONVERTIBLE_RESULT_DTYPES))
def unconvertible_element_type(node, chip):
    """The converter has no TFLite tensor type for {DTYPES} data (int2, uint2, float8_e4m3fn and float8_e5m2 work only as inputs)."""
    found = sorted(
        {t.dtype for t in node.inputs if t.present and t.dtype in UNCONVERTIBLE_DTYPES}
        | {t.dtype for t in node.outputs if t.present and t.dtype in UNCONVERTIBLE_DTYPES | (UNCONVERTIBLE_RESULT_DTYPES if node.op_type != "QuantizeLinear" else set())}
    )
    if found:
        return Offence(found[0], "tensor of type " + ", ".join(found))
    return None


@rule(placement=Placement.UNSUPPORTED, CONVERTER=CONVERTER, MIN_RANK=3, DTYPES=("int16", "uint16"))
def int16_channels_last_transpose(node, chip):
    """{CONVERTER} transposes tensors of rank {MIN_RANK} and more to channels-last; TFLite's TRANSPOSE has no kernel for {DTYPES} data, so the model would need TensorFlow's Flex delegate."""
    if node.op_type in ("BitwiseXor", "Div", "Mul"):
        return None  # measured: these convert without the int16 layout transpose (Div casts to float first)
    for t in node.inputs:
        if t.present and not t.is_constant and t.dtype in ("int16", "uint16") and (t.rank or 0) >= 3:
            return Offence(t.dtype, f"{t.name}: rank {t.rank}")
    return None


# Element types of the data an elementwise operator takes in TensorFlow/TFLite builtins (measured:
# on other raw integer types, or float64, onnx2tf's operator needs TensorFlow's Flex delegate or
# fails). The default covers the operators listed in NARROW_TYPE_OPS; some take more.
BUILTIN_INT_TYPES = frozenset({"int32", "int64", "bool"})
NARROW_TYPES = frozenset({"int8", "uint8", "int16", "uint16", "uint32", "uint64", "float64"})
NARROW_TYPE_OPS = ("Add", "Sub", "Mul", "Div", "Mod", "Max", "Min", "Equal", "Greater", "GreaterOrEqual", "Less", "LessOrEqual", "MaxPool", "Clip", "BitShift", "BitwiseXor")
EXTRA_TYPES = {
    "Mul": {"int16", "uint32"},
    "Mod": {"int8", "int16"},
    "Div": {"int8", "uint8", "int16", "uint16", "float64"},  # through float
    "BitShift": {"int8", "uint8", "int16", "uint16", "uint32"},  # but not int64 (below)
    "BitwiseXor": {"int16"},
}


@rule(*NARROW_TYPE_OPS, placement=Placement.UNSUPPORTED, CONVERTER=CONVERTER, TYPES=sorted(NARROW_TYPES))
def narrow_type_arithmetic(node, chip):
    """On raw {TYPES} data this operator has no TFLite builtin after {CONVERTER} (it would need TensorFlow's Flex delegate, or the conversion fails)."""
    allowed = EXTRA_TYPES.get(node.op_type, set())
    if node.op_type == "BitShift":
        for t in node.inputs:
            if t.present and not t.is_constant and t.dtype == "int64":
                return Offence("int64", f"{t.name} is int64")
    for t in node.inputs:
        if t.present and not t.is_constant and t.dtype in NARROW_TYPES and t.dtype not in allowed:
            return Offence(t.dtype, f"{t.name} is {t.dtype}")
    return None


COMPARISONS = ("Equal", "Greater", "GreaterOrEqual", "Less", "LessOrEqual", "BitwiseXor")


@rule(*COMPARISONS, placement=Placement.UNSUPPORTED, CONVERTER=CONVERTER)
def comparison_with_broadcast(node, chip):
    """{CONVERTER} fails on a comparison (or bitwise XOR) whose two inputs differ in rank (broadcasting)."""
    a, b = node.input(0), node.input(1)
    if a is not None and b is not None and a.rank is not None and b.rank is not None and a.rank != b.rank and not (a.is_constant or b.is_constant):
        return Offence((a.rank, b.rank), "input ranks differ")
    return None


@rule("Clip", placement=Placement.UNSUPPORTED, CONVERTER=CONVERTER, OPSET=11)
def clip_without_bounds(node, chip):
    """{CONVERTER} fails on a Clip (opset {OPSET}+) with neither a min nor a max input."""
    if node.opset >= 11 and node.input(1) is None and node.input(2) is None:
        return Offence("no bounds")
    return None


@rule("MatMul", placement=Placement.UNSUPPORTED, CONVERTER=CONVERTER)
def matmul_with_vector(node, chip):
    """{CONVERTER} fails on a MatMul with a 1-D operand."""
    for i in (0, 1):
        t = node.input(i)
        if t is not None and t.rank == 1:
            return Offence(1, f"{t.name} is 1-D")
    return None


@rule("Pow", placement=Placement.UNSUPPORTED, CONVERTER=CONVERTER)
def pow_scalar_exponent_input(node, chip):
    """{CONVERTER} fails on a Pow whose exponent is a scalar model input."""
    t = node.input(1)
    if t is not None and t.is_graph_input and t.rank == 0:
        return Offence(0, "rank-0 exponent input")
    return None


@rule("Split", placement=Placement.UNSUPPORTED, CONVERTER=CONVERTER)
def split_uneven_num_outputs(node, chip):
    """{CONVERTER} fails on a Split into num_outputs parts that do not divide the axis evenly."""
    parts = node.attr("num_outputs")
    shape = _shape(node)
    if parts and shape is not None:
        size = shape[int(node.attr("axis", 0)) % len(shape)]
        if size % int(parts):
            return Offence((size, int(parts)), "uneven split")
    return None


@rule("ArgMax", "ArgMin", placement=Placement.UNSUPPORTED, CONVERTER=CONVERTER)
def arg_select_last_index(node, chip):
    """{CONVERTER} fails on ArgMax/ArgMin with select_last_index=1."""
    if int(node.attr("select_last_index", 0)):
        return Offence(1, "select_last_index=1")
    return None


@rule("ReduceMean", "ReduceSum", "ReduceL1", "ReduceL2", "ReduceSumSquare", placement=Placement.UNSUPPORTED, CONVERTER=CONVERTER, MIN_RANK=3)
def reduction_of_every_axis_keepdims(node, chip):
    """{CONVERTER} fails on this reduction in its axes-as-input form (ReduceSum from opset 13, the others from 18) when it reduces every axis of a rank-{MIN_RANK}+ input and keeps the dimensions."""
    rank = _rank(node)
    axes_input_form = node.opset >= (13 if node.op_type == "ReduceSum" else 18)
    if axes_input_form and not _given(node, 1) and int(node.attr("keepdims", 1)) and (rank is None or rank >= 3):
        return Offence(node.opset, f"opset {node.opset}, no axes, keepdims, rank {rank}")
    return None


@rule("Resize", placement=Placement.UNSUPPORTED, CONVERTER=CONVERTER)
def resize_forms(node, chip):
    """A cubic Resize (TensorFlow's ResizeBicubic: Flex only), an antialiased one (ScaleAndTranslate: no TFLite builtin) or a tf_crop_and_resize one ({CONVERTER} fails) does not convert."""
    if node.attr("mode", "nearest") == "cubic":
        return Offence("cubic", "mode")
    if int(node.attr("antialias", 0)):
        return Offence("antialias")
    if node.attr("coordinate_transformation_mode", "") == "tf_crop_and_resize":
        return Offence("tf_crop_and_resize", "coordinate_transformation_mode")
    return None


@rule(placement=Placement.UNSUPPORTED, CONVERTER=CONVERTER, MAX_RANK=6)
def rank_above_six(node, chip):
    """TFLite's TRANSPOSE (which {CONVERTER} needs for layout changes) handles at most {MAX_RANK} dimensions; higher ranks need the Flex delegate."""
    for t in list(node.inputs) + list(node.outputs):
        if t.present and not t.is_constant and (t.rank or 0) > 6:
            return Offence(t.rank, f"{t.name} has rank {t.rank}")
    return None


@rule("QLinearMatMul", placement=Placement.UNSUPPORTED, CONVERTER=CONVERTER, MAX_RANK=2)
def qlinearmatmul_rank(node, chip):
    """{CONVERTER} converts QLinearMatMul on operands of rank at most {MAX_RANK}."""
    rank = _rank(node)
    if rank is not None and rank > 2:
        return Offence(rank, "operand rank")
    return None


@rule("Shape", placement=Placement.UNSUPPORTED, CONVERTER=CONVERTER)
def shape_slice(node, chip):
    """{CONVERTER} fails on Shape with start or end."""
    if node.has_attr("start") or node.has_attr("end"):
        return Offence("start/end")
    return None


@rule("MaxPool", placement=Placement.UNSUPPORTED, CONVERTER=CONVERTER)
def maxpool_forms(node, chip):
    """{CONVERTER} has no TFLite builtin for a dilated MaxPool or one that also returns the indices."""
    if any(d != 1 for d in (node.attr("dilations", []) or [])):
        return Offence(list(node.attr("dilations")), "dilations")
    if len([o for o in node.outputs if o.present]) > 1:
        return Offence("Indices", "second output")
    return None


@rule("Pow", placement=Placement.UNSUPPORTED, CONVERTER=CONVERTER)
def pow_types(node, chip):
    """{CONVERTER} fails on a Pow whose base and exponent differ in type, or on an integer base."""
    a, b = node.input(0), node.input(1)
    if a is not None and b is not None and a.dtype and b.dtype and a.dtype != b.dtype:
        return Offence((a.dtype, b.dtype), "mixed types")
    if a is not None and a.dtype and a.dtype not in FLOAT_DTYPES:
        return Offence(a.dtype, "integer base")
    return None


@rule("RMSNormalization", placement=Placement.UNSUPPORTED, CONVERTER=CONVERTER)
def rmsnorm_inner_axis(node, chip):
    """{CONVERTER} converts RMSNormalization on rank-3+ inputs only when it normalises over every axis (axis 0)."""
    rank = _rank(node)
    axis = int(node.attr("axis", -1))
    if rank is not None and rank >= 3 and axis % rank != 0:
        return Offence(axis, f"axis {axis} of a rank-{rank} input")
    return None


@rule("DequantizeLinear", "QuantizeLinear", placement=Placement.UNSUPPORTED, CONVERTER=CONVERTER)
def scalar_scale_input(node, chip):
    """{CONVERTER} fails on (De)QuantizeLinear whose scale is a scalar model input."""
    t = node.input(1)
    if t is not None and t.is_graph_input and t.rank == 0:
        return Offence(0, "rank-0 scale input")
    return None


@rule("ScatterElements", placement=Placement.UNSUPPORTED, CONVERTER=CONVERTER)
def scatter_with_reduction(node, chip):
    """{CONVERTER} fails on ScatterElements with a reduction (add, mul, max, min)."""
    reduction = node.attr("reduction", "none")
    if reduction != "none":
        return Offence(reduction)
    return None


@rule("Col2Im", placement=Placement.UNSUPPORTED, CONVERTER=CONVERTER, MAX_SPATIAL=2)
def col2im_spatial_dims(node, chip):
    """{CONVERTER} converts Col2Im with at most {MAX_SPATIAL} spatial dimensions."""
    t = node.input(1)
    if t is not None and t.is_static and t.numel is not None and t.numel > 2:
        return Offence(t.numel, "image_shape length")
    return None


@rule("NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss", placement=Placement.UNSUPPORTED, CONVERTER=CONVERTER, MAX_RANK=2)
def nllloss_rank(node, chip):
    """{CONVERTER} converts NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss on inputs of rank at most {MAX_RANK} (N, C)."""
    rank = _rank(node)
    if rank is not None and rank > 2:
        return Offence(rank, "input rank")
    return None


@rule("MaxUnpool", placement=Placement.UNSUPPORTED, CONVERTER=CONVERTER)
def maxunpool_output_shape(node, chip):
    """{CONVERTER} fails on MaxUnpool given an output_shape input."""
    if node.input(2) is not None:
        return Offence("output_shape")
    return None


@rule("BitShift", placement=Placement.UNSUPPORTED, CONVERTER=CONVERTER)
def bitshift_left(node, chip):
    """A left BitShift becomes TensorFlow's LeftShift, which has no TFLite builtin (only right shifts convert)."""
    if node.attr("direction", "") == "LEFT":
        return Offence("LEFT")
    return None


@rule("Gemm", placement=Placement.UNSUPPORTED, CONVERTER=CONVERTER)
def gemm_scalar_bias(node, chip):
    """{CONVERTER} fails on a Gemm whose C is a scalar."""
    t = node.input(2)
    if t is not None and t.rank == 0:
        return Offence(0, "scalar C")
    return None


@rule("Constant", placement=Placement.UNSUPPORTED, CONVERTER=CONVERTER)
def constant_model_output(node, chip):
    """{CONVERTER} fails when a model output is a constant (no operator computes it)."""
    out = node.output(0)
    if out is not None and out.is_model_output:
        return Offence(out.name, "constant model output")
    return None


@rule("Col2Im", placement=Placement.UNSUPPORTED, CONVERTER=CONVERTER)
def col2im_pads_strides(node, chip):
    """{CONVERTER}'s Col2Im goes wrong with pads or strides (TFLite's RESHAPE fails at run time)."""
    for name in ("pads", "strides"):
        value = node.attr(name)
        if value and any(v != (1 if name == "strides" else 0) for v in value):
            return Offence(list(value), name)
    return None


@rule("AveragePool", "MaxPool", "LpPool", placement=Placement.UNSUPPORTED, MAX_SPATIAL=2)
def pool_3d(node, chip):
    """Pooling over more than {MAX_SPATIAL} spatial dimensions becomes TensorFlow's AvgPool3D/MaxPool3D, which need the Flex delegate."""
    kernel = node.attr("kernel_shape") or []
    if len(kernel) > 2:
        return Offence(len(kernel), "3-D pooling")
    return None


@rule("GridSample", placement=Placement.UNSUPPORTED, CONVERTER=CONVERTER, MAX_RANK=4)
def gridsample_volumetric(node, chip):
    """{CONVERTER} converts GridSample on inputs of rank at most {MAX_RANK} (not the volumetric form)."""
    rank = _rank(node)
    if rank is not None and rank > 4:
        return Offence(rank, "input rank")
    return None


@rule(placement=Placement.UNSUPPORTED, CONVERTER=CONVERTER)
def non_tensor_model_input(node, chip):
    """{CONVERTER} takes only tensors as model inputs, not sequences or optionals."""
    for t in node.inputs:
        if t.present and t.is_graph_input and t.dtype is None:
            return Offence(t.name, f"{t.name} is not a tensor")
    return None


@rule("DynamicQuantizeLinear", placement=Placement.FALLBACK, CONVERTER=CONVERTER)
def runtime_quantisation(node, chip):
    """DynamicQuantizeLinear computes its scale and zero point at run time: {CONVERTER}'s reductions have shapeless outputs, which run on the CPU."""
    return Offence("scalar outputs")


RUNTIME_SHAPE_INPUTS = {"Slice": (1, 2, 3, 4), "Expand": (1,), "Tile": (1,), "Pad": (1,)}


@rule(*RUNTIME_SHAPE_INPUTS, placement=Placement.FALLBACK, CONVERTER=CONVERTER)
def runtime_shape_parameter(node, chip):
    """The node's starts, ends, shape, repeats or pads are computed at run time: {CONVERTER} keeps the output shape dynamic, and dynamic shapes run on the CPU."""
    bad = [node.inputs[i].name for i in RUNTIME_SHAPE_INPUTS[node.op_type] if node.input(i) is not None and not node.input(i).is_constant]
    if bad:
        return Offence(bad, "run-time: " + ", ".join(bad))
    return None


# ----------------------------------------------------------------------------------------------
# Where the TFLite operators run.


def make_not_on_npu_rule(npu_ops: frozenset[str], compiler: str):
    # One rule per chip/compiler: its sentence names the compiler its table comes from.
    @rule(placement=Placement.FALLBACK, COMPILER=compiler)
    def tflite_operator_not_on_npu(node, chip):
        """onnx2tf lowers this node to a TFLite operator {COMPILER} does not place on the NPU; it runs on the CPU with TFLite's int8 kernel."""
        float_only = set(_float_only(node))
        missing = [t for t in lowering(node) if t not in npu_ops and t not in float_only]
        if missing:
            return Offence(missing[0], "TFLite " + ", ".join(missing))
        return None

    return tflite_operator_not_on_npu


@rule(placement=Placement.FLOAT, QUANTISER=f"TensorFlow {TENSORFLOW_VERSION}'s int8 quantiser")
def no_int8_kernel(node, chip):
    """{QUANTISER} has no int8 kernel for the TFLite operator of this node; it stays in float32 between DEQUANTIZE and QUANTIZE (on the i.MX 93: on the CPU)."""
    found = _float_only(node)
    if found:
        return Offence(found[0], "TFLite " + ", ".join(found))
    return None


# Vela 5.2.0's generic constraints: feature maps must be INT8/UINT8/INT16/INT32/INT64 ("bool" is
# not one), 64-bit feature maps are not supported (except ARG_MAX), and most operators add "32-bit
# feature-maps are not supported". Operators of the U55/U65 table without that specific line:
VELA_32BIT_OK = frozenset({"ADD", "SUB", "MUL", "NEG", "RESHAPE", "SQUEEZE", "EXPAND_DIMS", "SUM", "TRANSPOSE", "BATCH_MATMUL", "FULLY_CONNECTED", "ARG_MAX", "MIRROR_PAD"})
OUTPUT_INDEX_OPS = ("ArgMax", "ArgMin", "Shape", "Size")


@rule(placement=Placement.FALLBACK, COMPILER=f"Vela {VELA_VERSION}")
def integer_feature_map(node, chip):
    """This node computes on raw integer or boolean data (not quantised activations): {COMPILER} needs quantisation parameters and no 64-bit or boolean feature maps, and takes 32-bit ones only for a few operators; the node stays on the CPU."""
    if _float_only(node):
        return None  # it computes in float on the CPU: no_int8_kernel says so

    ops = lowering(node)
    data = [node.input(0)] if node.input(0) is not None and not node.input(0).is_constant else []
    if node.op_type not in OUTPUT_INDEX_OPS:
        data += [t for t in node.outputs if t.present]
    for t in data:
        if t.dtype in ("bool", "int64", "uint64", "int8", "uint8", "int16", "uint16", "uint32"):
            return Offence(t.dtype, f"{t.name} is {t.dtype}")
        if t.dtype == "int32" and any(o not in VELA_32BIT_OK for o in ops):
            return Offence(t.dtype, f"{t.name} is {t.dtype}")
    return None


@rule(placement=Placement.FALLBACK, COMPILER=f"Vela {VELA_VERSION}")
def scalar_feature_map(node, chip):
    """{COMPILER} leaves operators that produce scalar (shapeless) feature maps on the CPU ("Tensors must have constant shape")."""
    if _float_only(node):
        return None  # it computes in float on the CPU: no_int8_kernel says so
    for t in node.outputs:
        if t.present and t.rank == 0:
            return Offence(0, f"{t.name} is a scalar")
    return None


@rule(placement=Placement.UNSUPPORTED, COMPILER=f"Vela {VELA_VERSION}")
def boolean_model_boundary(node, chip):
    """{COMPILER} stops with an error ("Non-passthrough operation ... could not run on NPU") when a model input or output is boolean."""
    for t in list(node.inputs) + list(node.outputs):
        if t.present and t.dtype == "bool" and (t.is_graph_input or t.is_model_output):
            return Offence("bool", f"{t.name} is a boolean model {'input' if t.is_graph_input else 'output'}")
    return None


def _argmax_on_depth(node: NodeView) -> bool | None:
    rank = _rank(node)
    if rank is None:
        return None
    return tf_axis(int(node.attr("axis", 0)), rank) == rank - 1


@rule("ArgMax", placement=Placement.FALLBACK, MAX_DEPTH=127)
def argmax_not_on_depth(node, chip):
    """Vela runs ARG_MAX only along the depth (channels-last) axis, with a depth of at most {MAX_DEPTH}."""
    on_depth = _argmax_on_depth(node)
    if on_depth is None:
        return None
    if not on_depth:
        return Offence(int(node.attr("axis", 0)), "reduction not along the channels-last axis")
    shape = _shape(node)
    if shape is not None and _tf_shape(shape)[-1] > 127:
        return Offence(_tf_shape(shape)[-1], "depth above 127")
    return None


@rule("ArgMax", "Hardmax", placement=Placement.UNSUPPORTED, COMPILER=f"Vela {VELA_VERSION}")
def argmax_on_depth_stops_vela(node, chip):
    """{COMPILER} stops with an error (KeyError '0') on an ARG_MAX along the depth (channels-last) axis, the one form it would place on the NPU (measured); Hardmax is lowered to such an ARG_MAX."""
    if node.op_type == "Hardmax" or _argmax_on_depth(node):
        return Offence(int(node.attr("axis", -1 if node.op_type == "Hardmax" else 0)), "ARG_MAX along the depth axis")
    return None


def _pool_output(size: int, kernel: int, stride: int, pad_begin: int, pad_end: int, ceil: bool) -> int:
    span = size + pad_begin + pad_end - kernel
    out = (-(-span // stride) if ceil else span // stride) + 1
    if ceil and (out - 1) * stride >= size + pad_begin:
        out -= 1  # ONNX: the last window must start inside the input or the left padding
    return out


@rule("MaxPool", "AveragePool", placement=Placement.FALLBACK, MAX_KERNEL_H=256, MAX_KERNEL_PRODUCT=65536, MAX_STRIDE=3, MAX_PADDED_KERNEL=8)
def pool_limits(node, chip):
    """Vela's pooling limits: kernel height at most {MAX_KERNEL_H} and kernel area at most {MAX_KERNEL_PRODUCT}; strides above {MAX_STRIDE} only with VALID padding; average pooling with SAME padding only with kernels up to {MAX_PADDED_KERNEL}x{MAX_PADDED_KERNEL}; a MaxPool whose ceil_mode changes the output size runs on the CPU (measured)."""
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
    dil = list(node.attr("dilations", []) or [])
    if node.op_type == "MaxPool" and any(d != 1 for d in dil):
        return Offence(dil, "dilated max pooling")
    shape = _shape(node)
    if node.op_type == "MaxPool" and shape is not None and len(shape) == len(kernel) + 2:
        # Measured: TFLite's MAX_POOL_2D pads like TensorFlow's SAME (the extra on the end); other
        # paddings (SAME_LOWER, larger explicit pads) leave it on the CPU.
        spatial = shape[2:]
        for i, size in enumerate(spatial):
            k, st = kernel[i], (strides[i] if i < len(strides) else 1)
            total = max((-(-size // st) - 1) * st + k - size, 0)
            same = (total // 2, total - total // 2)
            if auto_pad == "SAME_LOWER" and total % 2:
                return Offence("SAME_LOWER", "padding on the start")
            if auto_pad == "NOTSET" and len(pads) == 2 * len(spatial):
                given = (pads[i], pads[i + len(spatial)])
                if any(given) and given != same:
                    return Offence(pads, "padding TensorFlow's SAME does not produce")
    if node.op_type == "MaxPool" and int(node.attr("ceil_mode", 0)) and shape is not None and auto_pad in ("NOTSET", "VALID"):
        spatial = shape[2:]
        for i, size in enumerate(spatial):
            k = kernel[i] if i < len(kernel) else 1
            st = strides[i] if i < len(strides) else 1
            begin, end = (pads[i], pads[i + len(spatial)]) if len(pads) == 2 * len(spatial) else (0, 0)
            if _pool_output(size, k, st, begin, end, True) != _pool_output(size, k, st, begin, end, False):
                return Offence("ceil_mode", "ceil_mode changes the output size")
    return None


@rule("ReduceMean", "GlobalAveragePool", "RMSNormalization", placement=Placement.FALLBACK)
def mean_limits(node, chip):
    """Vela runs MEAN only with a batch of 1, and reduces over the depth (channels-last) axis only when height, width or depth is 1."""
    shape = _shape(node)
    if shape is None or len(shape) < 3:
        return None
    if shape[0] != 1:
        return Offence(shape[0], "batch above 1")
    if node.op_type == "RMSNormalization":
        rank = len(shape)
        tf_axes = {tf_axis(a, rank) for a in range(int(node.attr("axis", -1)) % rank, rank)}
        tf = _tf_shape(shape)
        if rank - 1 in tf_axes and all(d > 1 for d in tf[1:]):
            return Offence(sorted(tf_axes), "depth reduction with H, W and C above 1")
    if node.op_type == "ReduceMean":
        axes = node.attr("axes")
        if axes is None and node.input(1) is not None and node.input(1).value is not None:
            axes = [int(a) for a in node.input(1).value.reshape(-1)]
        rank = len(shape)
        tf_axes = {tf_axis(int(a), rank) for a in (axes if axes is not None else range(rank))}
        tf = _tf_shape(shape)
        if rank - 1 in tf_axes and all(d > 1 for d in tf[1:]):
            return Offence(sorted(tf_axes), "depth reduction with H, W and C above 1")
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


@rule("Resize", "Upsample", placement=Placement.FALLBACK, FACTORS=(1, 2, 4, 8))
def resize_scale_factor(node, chip):
    """Vela runs RESIZE_* when the height and width scale by the same factor, one of {FACTORS} (or the input is 1x1)."""
    shape = _shape(node)
    out = node.output(0)
    if shape is None or out is None or not out.is_static or len(shape) != 4:
        return None
    ih, iw = shape[2], shape[3]
    oh, ow = out.shape[2], out.shape[3]
    if ih == iw == 1 or (ih, iw) == (oh, ow):
        return None
    if oh % ih or ow % iw or oh // ih != ow // iw or oh // ih not in (1, 2, 4, 8):
        return Offence((oh / ih, ow / iw), "scale factors")
    return None


RULE_CONVERSION = (
    parameter_input_not_constant,
    unconvertible_element_type,
    int16_channels_last_transpose,
    comparison_with_broadcast,
    clip_without_bounds,
    matmul_with_vector,
    pow_scalar_exponent_input,
    split_uneven_num_outputs,
    arg_select_last_index,
    reduction_of_every_axis_keepdims,
    reduction_axes_not_constant,
    resize_forms,
    rank_above_six,
    qlinearmatmul_rank,
    shape_slice,
    maxpool_forms,
    pow_types,
    rmsnorm_inner_axis,
    runtime_shape_parameter,
    scalar_scale_input,
    scatter_with_reduction,
    col2im_spatial_dims,
    nllloss_rank,
    maxunpool_output_shape,
    bitshift_left,
    gemm_scalar_bias,
    constant_model_output,
    col2im_pads_strides,
    pool_3d,
    gridsample_volumetric,
    non_tensor_model_input,
    narrow_type_arithmetic,
)


def _notes(chip_id: str, options) -> list[str]:
    notes = [
        "onnx2tf converts NCHW models to NHWC: axes in rules are the converted (channels-last) axes.",
        "Layout TRANSPOSE/RESHAPE operators onnx2tf inserts run where the node they belong to runs.",
        "Rules marked measured come from converting ONNX's backend node tests with onnx2tf 1.29.24 and tensorflow-cpu 2.19.0 (scripts/eiq_node_agreement.py).",
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
    nxp = chip_id == "imx93" and options.get("vela") == "3.10"
    npu_ops = (VELA_3_10_OPS if nxp else VELA_5_2_OPS) if chip_id == "imx93" else VX_DELEGATE_OPS
    # Every operator onnx2tf converts is listed (its rules run for every node); where its usual
    # TFLite operators run on this chip is in the note, and in fallback_ops / float_only_ops for
    # the supported-operator page (the engine looks at accelerator_ops first).
    accelerator: dict[str, OpSupport] = {}
    cpu_only, float_only = set(), set()
    for op in sorted(convertible_ops()):
        tfl = tflite_ops(op)
        if not tfl:
            accelerator[op] = OpSupport(("int8",), "no TFLite operator (folded away or removed)")
            continue
        floats = [t for t in tfl if t in TFLITE_FLOAT_ONLY]
        cpu = [t for t in tfl if t not in npu_ops and t not in TFLITE_FLOAT_ONLY]
        where = []
        if cpu:
            where.append(f"{', '.join(cpu)} on the CPU")
            cpu_only.add(op)
        if floats:
            where.append(f"{', '.join(floats)} in float on float data")
            float_only.add(op)
        accelerator[op] = OpSupport(("int8",), f"{chip_id}: TFLite {', '.join(tfl)}" + (f" ({'; '.join(where)})" if where else " (NPU)"))
    if chip_id == "imx93":
        compiler = f"Vela {NXP_VELA_VERSION} (NXP)" if nxp else f"Vela {VELA_VERSION}"
        rules = [
            *RULE_CONVERSION,
            boolean_model_boundary,
            scalar_feature_map,
            make_not_on_npu_rule(npu_ops, compiler),
            no_int8_kernel,
            integer_feature_map,
            argmax_not_on_depth,
            *(() if nxp else (argmax_on_depth_stops_vela,)),
            pool_limits,
            mean_limits,
            softmax_limits,
            resize_scale_factor,
        ]
        source = f"{SOURCE_NXP_VELA if nxp else SOURCE_VELA}; {SOURCE_CONVERTER}"
        version = f"onnx2tf {ONNX2TF_VERSION}; {compiler}"
        unit = "CPU (Cortex-A55)"
    else:
        rules = [*RULE_CONVERSION, make_not_on_npu_rule(VX_DELEGATE_OPS, f"the VX delegate ({VX_DELEGATE_RELEASE})"), no_int8_kernel]
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
        fallback_ops=frozenset(cpu_only),
        float_only_ops=frozenset(float_only),
        fallback_unit=unit,
        min_opset=7,
        max_opset=99,
        # onnx2tf runs onnxsim first, which folds everything computable at compile time.
        folds_constants=True,
        notes=_notes(chip_id, options),
    )
