"""What onnx2tf makes of an ONNX node: its TFLite operators, which of them stay in float, and the layout.

ONNX_TO_TFLITE and node_tflite_ops() (with the forms that depend on attributes or on the node's
neighbours), TFLITE_FLOAT_ONLY and float_only_ops() (what TensorFlow's int8 quantiser leaves in
float32), and tf_axis() (onnx2tf lays rank 3..5 tensors out channels-last). Measured with onnx2tf
1.29.24 + tensorflow-cpu 2.19.0 (see rules/__init__.py).
"""

from __future__ import annotations

from edgedeploy.audit.rules import NodeView


# TFLite operators TF 2.19's full-int8 quantiser leaves in float32 when they compute on float data
# (DEQUANTIZE -> op -> QUANTIZE around them) (measured on the node tests: their tensors stay
# float32 in the int8 model). On integer data they compute in integers (FLOOR_MOD, CAST).
TFLITE_FLOAT_ONLY = frozenset(
    """SIN COS CEIL FLOOR DIV NEG POW ROUND SIGN SQRT SQUARE LOCAL_RESPONSE_NORMALIZATION ADD_N
    FLOOR_DIV FLOOR_MOD CAST ELU CONV_3D NOT_EQUAL""".split()
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
    # tf.einsum, which TensorFlow's converter lowers to BATCH_MATMUL (with TRANSPOSE and RESHAPE
    # around it; FULLY_CONNECTED for a 2-D constant operand) when the equation is a matrix
    # product; a one-operand permutation is a TRANSPOSE (node_tflite_ops). The equations that
    # convert: conversion.einsum_not_a_matrix_product (measured on tests/forms_models.py einsum_imx_pack).
    "Einsum": ("BATCH_MATMUL",),
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
    # tf.nn.moments, then (x - mean) * rsqrt(variance + epsilon) * scale + bias (measured on
    # tests/forms_models.py instance_norm_op17; scale and bias must be constants, conversion.py).
    "InstanceNormalization": ("MEAN", "SUB", "SQUARED_DIFFERENCE", "MUL", "ADD", "RSQRT"),
    # tf_keras' LayerNormalization over the last axis: tf.nn.moments, then (x - mean) * rsqrt(var +
    # epsilon) * scale + bias (measured on tests/forms_models.py layer_norm_imx_pack; scale and bias
    # must be constants and the axis the last: conversion.py).
    "LayerNormalization": ("MEAN", "SQUARED_DIFFERENCE", "ADD", "RSQRT", "MUL", "SUB"),
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
    # sqrt(reduce_sum(square(x))) (onnx2tf's ReduceL2.py; measured on tests/forms_models.py
    # l2_norm_imx_pack: SQUARE and SQRT in float, on the CPU). Axes given as an input that is not a
    # constant, or all axes with keepdims from opset 18, fail (conversion.py; ONNX's node tests).
    "ReduceL2": ("SQUARE", "SUM", "SQRT"),
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


def node_tflite_ops(node: NodeView) -> tuple[str, ...]:
    """The TFLite operators onnx2tf makes of this node (the attribute-dependent forms included)."""
    op = node.op_type
    if op == "Elu" and float(node.attr("alpha", 1.0)) != 1.0:
        # Measured: alpha 1 becomes TFLite ELU; any other alpha a decomposition with comparisons.
        return ("GREATER_EQUAL", "LESS", "EXP", "SELECT_V2")
    if op == "Div" and node.input(1) is not None and node.input(1).is_constant and has_float_data(node):
        return ("MUL",)  # measured: float x / c becomes x * (1/c); integer division goes through float
    if op == "Div" and _pattern(node, "Exp", "ReduceSum") and _reduced_on_last_tf_axis(node):
        return ("SOFTMAX",)  # measured: exp(x) / sum(exp(x)) over the channels-last axis is fused into SOFTMAX
    if op == "Sub" and _pattern(node, "Sub", "Log") and _reduced_on_last_tf_axis(node):
        return ("LOG_SOFTMAX",)  # measured: (x - max) - log(sum(exp(x - max))) likewise becomes LOG_SOFTMAX
    if op == "Div" and node.input(1) is not None and node.input(1).producer == "Sqrt" and has_float_data(node):
        return ("RSQRT", "MUL")  # measured: the converter rewrites x / sqrt(v) as x * rsqrt(v) (LayerNorm)
    if op == "Equal" and node.attr("onnx2tf_not_equal") is not None:
        return ("NOT_EQUAL",)  # measured: Not(Equal(a, b)) is one NOT_EQUAL (passes.not_of_an_equal)
    if op == "Where" and _uniform_condition(node):
        # measured: a select by a condition known all true (or all false) is folded to the branch it
        # picks when that branch has the output's shape; one broadcast to it stays a SELECT_V2
        # (tests/forms_models.py small_forms_imx_pack, where_known_broadcast_imx_pack)
        return ()
    if op == "Cast" and _cast_to_own_type(node):
        return ()  # measured: no operator (tests/forms_models.py cast_to_same_type: not reported on the i.MX 93)
    if op == "Reshape" and _reshape_to_own_shape(node):
        return ()  # measured: no operator, int64 or float (tests/forms_models.py id_reshape_imx_pack; LongT5's input_ids)
    if op == "Pow" and _constant_value(node, 1) in (2.0, 3.0):
        return ("MUL",)  # measured: x ** 2 becomes x * x, x ** 3 (GELU's tanh form) x * x * x (onnx2tf's Pow.py)
    if op == "Pow" and _constant_value(node, 1) == 0.5:
        return ("SQRT",)  # measured: x ** 0.5 becomes SQRT (float), any other exponent POW (float)
    if op == "Conv" and input_rank(node) == 5:
        # Measured: a 3-D Conv (ViViT's tubelet embedding) is CONV_3D, kept in float (tests/forms_models.py conv3d_imx_pack)
        return ("CONV_3D",)
    if op == "Einsum" and len([t for t in node.inputs if t.present]) == 1:
        return ("TRANSPOSE",)  # measured: a one-operand permutation ("bij->bji")
    if op == "LpNormalization" and int(node.attr("p", 2)) == 2:
        return ("MUL", "SUM", "RSQRT")  # measured: x * rsqrt(sum(x*x))
    if op == "LpPool" and any(d != 1 for d in (node.attr("dilations", []) or [])):
        # Measured: dilated windows go through SPACE_TO_BATCH_ND / BATCH_TO_SPACE_ND.
        return ("POW", "SPACE_TO_BATCH_ND", "AVERAGE_POOL_2D", "BATCH_TO_SPACE_ND")
    if op == "DepthToSpace" and node.attr("mode", "DCR") == "DCR":
        # Measured: DCR becomes TFLite DEPTH_TO_SPACE; CRD a RESHAPE/TRANSPOSE sequence.
        return ("DEPTH_TO_SPACE",)
    return ONNX_TO_TFLITE.get(op, ())


def _uniform_condition(node: NodeView) -> bool:
    """A Where whose condition is known when the model is compiled and the same everywhere (funnel's token-type mask), picking a branch that is not broadcast to the output (a shape not known counts as the output's)."""
    c = node.input(0)
    value = c.value if c is not None and (c.is_constant or c.foldable) and not c.stored_elsewhere else None
    if value is None or value.size == 0 or not (value.all() or not value.any()):
        return False
    picked, out = node.input(1 if value.all() else 2), node.output(0)
    if picked is None or out is None or not (picked.is_static and out.is_static):
        return True
    return tuple(picked.shape) == tuple(out.shape)


def _reshape_to_own_shape(node: NodeView) -> bool:
    x, y = node.input(0), node.output(0)
    return x is not None and y is not None and x.is_static and y.is_static and tuple(x.shape) == tuple(y.shape)


def _cast_to_own_type(node: NodeView) -> bool:
    x, y = node.input(0), node.output(0)
    return x is not None and y is not None and x.dtype is not None and x.dtype == y.dtype


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


def has_float_data(node: NodeView) -> bool:
    tensors = [t for t in node.inputs if t.present and not t.is_constant] + [t for t in node.outputs if t.present]
    return any(t.dtype in FLOAT_DTYPES for t in tensors)


# onnx2tf computes these in float even on integer inputs (CAST to float, then the float kernel).
ALWAYS_FLOAT = frozenset({"Div", "Reciprocal"})


def float_only_ops(node: NodeView) -> list[str]:
    """The node's TFLite operators the quantiser keeps in float (only when it computes on float data)."""
    # Four NPU rules ask, on every i.MX chip: worked out once per node.
    found = node.memo.get(float_only_ops)
    if found is None:
        if not has_float_data(node) and not (node.op_type in ALWAYS_FLOAT and "DIV" in node_tflite_ops(node)):
            found = ()
        else:
            found = tuple(t for t in node_tflite_ops(node) if t in TFLITE_FLOAT_ONLY)
        node.memo[float_only_ops] = found
    return list(found)


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


def input_rank(node: NodeView, i: int = 0) -> int | None:
    t = node.input(i)
    return t.rank if t is not None else None


def static_shape(node: NodeView, i: int = 0):
    t = node.input(i)
    return t.shape if t is not None and t.is_static else None


def tf_shape(shape) -> tuple:
    """A static ONNX-layout shape in the converted (channels-last) layout."""
    rank = len(shape)
    if rank < 3:
        return tuple(shape)
    return (shape[0], *shape[2:], shape[1])
