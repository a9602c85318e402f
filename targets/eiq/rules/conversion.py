"""eIQ rules about the conversion, on both chips: the forms onnx2tf or the int8 converter refuse.

Measured with onnx2tf 1.29.24 + tensorflow-cpu 2.19.0 on ONNX's backend node tests
(scripts/eiq_node_agreement.py). Each stops the build (UNSUPPORTED), except where a run-time shape
leaves the node on the CPU (runtime_shape_parameter). Declared in the order the audit checks them.
"""

from __future__ import annotations

from edgedeploy.audit.rules import NodeView, Offence, Placement
from edgedeploy.targets.eiq.rules.documents import ONNX2TF_VERSION, RULES
from edgedeploy.targets.eiq.rules.onnx2tf import FLOAT_DTYPES, input_rank, static_shape
from edgedeploy.targets.eiq.rules.passes import RESHAPE_OF_CONSTANTS_ATTRIBUTE, UNSQUEEZED_CHANNEL_ATTRIBUTE, UNSQUEEZED_PRODUCT_ATTRIBUTE


CONVERTER = f"onnx2tf {ONNX2TF_VERSION}"


def _scalar_model_input(node: NodeView, i: int, what: str) -> Offence | None:
    t = node.input(i)
    return Offence(0, what) if t is not None and t.is_graph_input and t.rank == 0 else None


def _input_rank_above(node: NodeView, limit: int, what: str) -> Offence | None:
    rank = input_rank(node)
    return Offence(rank, what) if rank is not None and rank > limit else None


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
    "InstanceNormalization": (1, 2),  # measured: ONNX's instancenorm node tests (scale and B model inputs)
    "LayerNormalization": (1, 2),  # measured: ONNX's layer_normalization node tests (Scale and B model inputs)
}


def _given(node: NodeView, i: int) -> bool:
    """Input i is given and not empty (an empty axes tensor means "all axes", like no input)."""
    t = node.input(i)
    return t is not None and not (t.is_static and t.numel == 0)


@RULES.rule(*CONSTANT_INPUTS, placement=Placement.UNSUPPORTED, CONVERTER=CONVERTER)
def parameter_input_not_constant(node, chip):
    """{CONVERTER} reads this input (weights, axes, pads, bounds, scales, split sizes) while converting; it cannot be a model input."""
    if node.op_type == "Pad" and node.attr("mode", "constant") == "reflect":
        return None  # measured: reflect padding takes run-time pads (on the CPU)
    bad = [node.inputs[i].name for i in CONSTANT_INPUTS[node.op_type] if _given(node, i) and node.input(i).is_graph_input]
    if bad:
        return Offence(bad, "model input: " + ", ".join(bad))
    return None


# Element types the converter has no TFLite tensor type for (measured: bfloat16 becomes quint16,
# which the converter rejects; the float8/float4 types fail in onnx2tf; strings have no int8
# path). Names as edgedeploy.model.stats.dtype_name spells them. The 2-bit integers and two
# float8 types convert as inputs (widened through float), but fail as results.
UNCONVERTIBLE_DTYPES = frozenset(
    {"bfloat16", "object", "complex64", "complex128", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu", "float4_e2m1fn", "int4", "uint4"}
)


UNCONVERTIBLE_RESULT_DTYPES = frozenset({"int2", "uint2", "float8_e4m3fn", "float8_e5m2"})
UNCONVERTIBLE_AS_RESULT = UNCONVERTIBLE_DTYPES | UNCONVERTIBLE_RESULT_DTYPES


@RULES.rule(placement=Placement.UNSUPPORTED, DTYPES=sorted(UNCONVERTIBLE_DTYPES | UNCONVERTIBLE_RESULT_DTYPES))
def unconvertible_element_type(node, chip):
    """The converter has no TFLite tensor type for {DTYPES} data (int2, uint2, float8_e4m3fn and float8_e5m2 work only as inputs)."""
    as_result = UNCONVERTIBLE_AS_RESULT if node.op_type != "QuantizeLinear" else UNCONVERTIBLE_DTYPES
    found = sorted({t.dtype for t in node.inputs if t.present and t.dtype in UNCONVERTIBLE_DTYPES} | {t.dtype for t in node.outputs if t.present and t.dtype in as_result})
    if found:
        return Offence(found[0], "tensor of type " + ", ".join(found))
    return None


@RULES.rule(placement=Placement.UNSUPPORTED, CONVERTER=CONVERTER, MIN_RANK=3, DTYPES=("int16", "uint16"))
def int16_channels_last_transpose(node, chip):
    """{CONVERTER} transposes tensors of rank {MIN_RANK} and more to channels-last; TFLite's TRANSPOSE has no kernel for {DTYPES} data, so the model would need TensorFlow's Flex delegate."""
    if node.op_type in ("BitwiseXor", "Div", "Mul"):
        return None  # measured: these convert without the int16 layout transpose (Div casts to float first)
    for t in node.inputs:
        if t.present and not t.is_constant and t.dtype in ("int16", "uint16") and (t.rank or 0) >= 3:
            return Offence(t.dtype, f"{t.name}: rank {t.rank}")
    return None


COMPARISONS = ("Equal", "Greater", "GreaterOrEqual", "Less", "LessOrEqual", "BitwiseXor")


@RULES.rule(*COMPARISONS, placement=Placement.UNSUPPORTED, CONVERTER=CONVERTER)
def comparison_with_broadcast(node, chip):
    """{CONVERTER} fails on a comparison (or bitwise XOR) whose two inputs differ in rank (broadcasting)."""
    a, b = node.input(0), node.input(1)
    if a is not None and b is not None and a.rank is not None and b.rank is not None and a.rank != b.rank and not (a.is_constant or b.is_constant):
        return Offence((a.rank, b.rank), "input ranks differ")
    return None


@RULES.rule("Clip", placement=Placement.UNSUPPORTED, CONVERTER=CONVERTER, OPSET=11)
def clip_without_bounds(node, chip):
    """{CONVERTER} fails on a Clip (opset {OPSET}+) with neither a min nor a max input."""
    if node.opset >= 11 and node.input(1) is None and node.input(2) is None:
        return Offence("no bounds")
    return None


@RULES.rule("MatMul", placement=Placement.UNSUPPORTED, CONVERTER=CONVERTER)
def matmul_with_vector(node, chip):
    """{CONVERTER} fails on a MatMul with a 1-D operand."""
    for i in (0, 1):
        t = node.input(i)
        if t is not None and t.rank == 1:
            return Offence(1, f"{t.name} is 1-D")
    return None


@RULES.rule("Pow", placement=Placement.UNSUPPORTED, CONVERTER=CONVERTER)
def pow_scalar_exponent_input(node, chip):
    """{CONVERTER} fails on a Pow whose exponent is a scalar model input."""
    return _scalar_model_input(node, 1, "rank-0 exponent input")


@RULES.rule("Split", placement=Placement.UNSUPPORTED, CONVERTER=CONVERTER)
def split_uneven_num_outputs(node, chip):
    """{CONVERTER} fails on a Split into num_outputs parts that do not divide the axis evenly."""
    parts = node.attr("num_outputs")
    shape = static_shape(node)
    if parts and shape is not None:
        size = shape[int(node.attr("axis", 0)) % len(shape)]
        if size % int(parts):
            return Offence((size, int(parts)), "uneven split")
    return None


@RULES.rule("ArgMax", "ArgMin", placement=Placement.UNSUPPORTED, CONVERTER=CONVERTER)
def arg_select_last_index(node, chip):
    """{CONVERTER} fails on ArgMax/ArgMin with select_last_index=1."""
    if int(node.attr("select_last_index", 0)):
        return Offence(1, "select_last_index=1")
    return None


@RULES.rule("ReduceMean", "ReduceSum", "ReduceL1", "ReduceL2", "ReduceSumSquare", placement=Placement.UNSUPPORTED, CONVERTER=CONVERTER, MIN_RANK=3)
def reduction_of_every_axis_keepdims(node, chip):
    """{CONVERTER} fails on this reduction in its axes-as-input form (ReduceSum from opset 13, the others from 18) when it reduces every axis of a rank-{MIN_RANK}+ input and keeps the dimensions."""
    rank = input_rank(node)
    axes_input_form = node.opset >= (13 if node.op_type == "ReduceSum" else 18)
    if axes_input_form and not _given(node, 1) and int(node.attr("keepdims", 1)) and (rank is None or rank >= 3):
        return Offence(node.opset, f"opset {node.opset}, no axes, keepdims, rank {rank}")
    return None


# Reduction axes must be constants in the model: computed axes fail too (measured).
REDUCTIONS = ("ReduceMax", "ReduceMean", "ReduceMin", "ReduceProd", "ReduceSum", "ReduceLogSum", "ReduceL1", "ReduceL2", "ReduceSumSquare", "ReduceLogSumExp")


@RULES.rule(*REDUCTIONS, placement=Placement.UNSUPPORTED, CONVERTER=CONVERTER)
def reduction_axes_not_constant(node, chip):
    """{CONVERTER} needs a reduction's axes input to be a constant of the model (given as a model input or computed, the conversion fails)."""
    t = node.input(1)
    if _given(node, 1) and not t.is_constant:
        return Offence(t.name, "axes not constant")
    return None


@RULES.rule("Resize", placement=Placement.UNSUPPORTED, CONVERTER=CONVERTER)
def resize_forms(node, chip):
    """A cubic Resize (TensorFlow's ResizeBicubic: Flex only), an antialiased one (ScaleAndTranslate: no TFLite builtin) or a tf_crop_and_resize one ({CONVERTER} fails) does not convert."""
    if node.attr("mode", "nearest") == "cubic":
        return Offence("cubic", "mode")
    if int(node.attr("antialias", 0)):
        return Offence("antialias")
    if node.attr("coordinate_transformation_mode", "") == "tf_crop_and_resize":
        return Offence("tf_crop_and_resize", "coordinate_transformation_mode")
    return None


@RULES.rule(placement=Placement.UNSUPPORTED, CONVERTER=CONVERTER, MAX_RANK=6)
def rank_above_six(node, chip):
    """TFLite's TRANSPOSE (which {CONVERTER} needs for layout changes) handles at most {MAX_RANK} dimensions; higher ranks need the Flex delegate."""
    for t in list(node.inputs) + list(node.outputs):
        if t.present and not t.is_constant and (t.rank or 0) > 6:
            return Offence(t.rank, f"{t.name} has rank {t.rank}")
    return None


@RULES.rule("QLinearMatMul", placement=Placement.UNSUPPORTED, CONVERTER=CONVERTER, MAX_RANK=2)
def qlinearmatmul_rank(node, chip):
    """{CONVERTER} converts QLinearMatMul on operands of rank at most {MAX_RANK}."""
    return _input_rank_above(node, 2, "operand rank")


@RULES.rule("Shape", placement=Placement.UNSUPPORTED, CONVERTER=CONVERTER)
def shape_slice(node, chip):
    """{CONVERTER} fails on Shape with start or end."""
    if node.has_attr("start") or node.has_attr("end"):
        return Offence("start/end")
    return None


@RULES.rule("MaxPool", placement=Placement.UNSUPPORTED, CONVERTER=CONVERTER)
def maxpool_forms(node, chip):
    """{CONVERTER} has no TFLite builtin for a dilated MaxPool or one that also returns the indices."""
    if any(d != 1 for d in (node.attr("dilations", []) or [])):
        return Offence(list(node.attr("dilations")), "dilations")
    if len([o for o in node.outputs if o.present]) > 1:
        return Offence("Indices", "second output")
    return None


@RULES.rule("Pow", placement=Placement.UNSUPPORTED, CONVERTER=CONVERTER)
def pow_types(node, chip):
    """{CONVERTER} fails on a Pow whose base and exponent differ in type, or on an integer base."""
    a, b = node.input(0), node.input(1)
    if a is not None and b is not None and a.dtype and b.dtype and a.dtype != b.dtype:
        return Offence((a.dtype, b.dtype), "mixed types")
    if a is not None and a.dtype and a.dtype not in FLOAT_DTYPES:
        return Offence(a.dtype, "integer base")
    return None


@RULES.rule("RMSNormalization", placement=Placement.UNSUPPORTED, CONVERTER=CONVERTER)
def rmsnorm_inner_axis(node, chip):
    """{CONVERTER} converts RMSNormalization on rank-3+ inputs only when it normalises over every axis (axis 0)."""
    rank = input_rank(node)
    axis = int(node.attr("axis", -1))
    if rank is not None and rank >= 3 and axis % rank != 0:
        return Offence(axis, f"axis {axis} of a rank-{rank} input")
    return None


RUNTIME_SHAPE_INPUTS = {"Slice": (1, 2, 3, 4), "Expand": (1,), "Tile": (1,), "Pad": (1,)}


@RULES.rule(*RUNTIME_SHAPE_INPUTS, placement=Placement.FALLBACK, CONVERTER=CONVERTER)
def runtime_shape_parameter(node, chip):
    """The node's starts, ends, shape, repeats or pads are computed at run time: {CONVERTER} keeps the output shape dynamic, and dynamic shapes run on the CPU."""
    bad = [node.inputs[i].name for i in RUNTIME_SHAPE_INPUTS[node.op_type] if node.input(i) is not None and not node.input(i).is_constant]
    if bad:
        return Offence(bad, "run-time: " + ", ".join(bad))
    return None


@RULES.rule("DequantizeLinear", "QuantizeLinear", placement=Placement.UNSUPPORTED, CONVERTER=CONVERTER)
def scalar_scale_input(node, chip):
    """{CONVERTER} fails on (De)QuantizeLinear whose scale is a scalar model input."""
    return _scalar_model_input(node, 1, "rank-0 scale input")


@RULES.rule("ScatterElements", placement=Placement.UNSUPPORTED, CONVERTER=CONVERTER)
def scatter_with_reduction(node, chip):
    """{CONVERTER} fails on ScatterElements with a reduction (add, mul, max, min)."""
    reduction = node.attr("reduction", "none")
    if reduction != "none":
        return Offence(reduction)
    return None


@RULES.rule("Col2Im", placement=Placement.UNSUPPORTED, CONVERTER=CONVERTER, MAX_SPATIAL=2)
def col2im_spatial_dims(node, chip):
    """{CONVERTER} converts Col2Im with at most {MAX_SPATIAL} spatial dimensions."""
    t = node.input(1)
    if t is not None and t.is_static and t.numel is not None and t.numel > 2:
        return Offence(t.numel, "image_shape length")
    return None


@RULES.rule("NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss", placement=Placement.UNSUPPORTED, CONVERTER=CONVERTER, MAX_RANK=2)
def nllloss_rank(node, chip):
    """{CONVERTER} converts NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss on inputs of rank at most {MAX_RANK} (N, C)."""
    return _input_rank_above(node, 2, "input rank")


@RULES.rule("MaxUnpool", placement=Placement.UNSUPPORTED, CONVERTER=CONVERTER)
def maxunpool_output_shape(node, chip):
    """{CONVERTER} fails on MaxUnpool given an output_shape input."""
    if node.input(2) is not None:
        return Offence("output_shape")
    return None


@RULES.rule("BitShift", placement=Placement.UNSUPPORTED, CONVERTER=CONVERTER)
def bitshift_left(node, chip):
    """A left BitShift becomes TensorFlow's LeftShift, which has no TFLite builtin (only right shifts convert)."""
    if node.attr("direction", "") == "LEFT":
        return Offence("LEFT")
    return None


@RULES.rule("Gemm", placement=Placement.UNSUPPORTED, CONVERTER=CONVERTER)
def gemm_scalar_bias(node, chip):
    """{CONVERTER} fails on a Gemm whose C is a scalar."""
    t = node.input(2)
    if t is not None and t.rank == 0:
        return Offence(0, "scalar C")
    return None


@RULES.rule("Constant", placement=Placement.UNSUPPORTED, CONVERTER=CONVERTER)
def constant_model_output(node, chip):
    """{CONVERTER} fails when a model output is a constant (no operator computes it)."""
    out = node.output(0)
    if out is not None and out.is_model_output:
        return Offence(out.name, "constant model output")
    return None


@RULES.rule("Col2Im", placement=Placement.UNSUPPORTED, CONVERTER=CONVERTER)
def col2im_pads_strides(node, chip):
    """{CONVERTER}'s Col2Im goes wrong with pads or strides (TFLite's RESHAPE fails at run time)."""
    for name in ("pads", "strides"):
        value = node.attr(name)
        if value and any(v != (1 if name == "strides" else 0) for v in value):
            return Offence(list(value), name)
    return None


@RULES.rule("AveragePool", "MaxPool", "LpPool", placement=Placement.UNSUPPORTED, MAX_SPATIAL=2)
def pool_3d(node, chip):
    """Pooling over more than {MAX_SPATIAL} spatial dimensions becomes TensorFlow's AvgPool3D/MaxPool3D, which need the Flex delegate."""
    kernel = node.attr("kernel_shape") or []
    if len(kernel) > 2:
        return Offence(len(kernel), "3-D pooling")
    return None


@RULES.rule("GridSample", placement=Placement.UNSUPPORTED, CONVERTER=CONVERTER, MAX_RANK=4)
def gridsample_volumetric(node, chip):
    """{CONVERTER} converts GridSample on inputs of rank at most {MAX_RANK} (not the volumetric form)."""
    return _input_rank_above(node, 4, "input rank")


@RULES.rule(placement=Placement.UNSUPPORTED, CONVERTER=CONVERTER)
def non_tensor_model_input(node, chip):
    """{CONVERTER} takes only tensors as model inputs, not sequences or optionals."""
    for t in node.inputs:
        if t.present and t.is_graph_input and t.dtype is None:
            return Offence(t.name, f"{t.name} is not a tensor")
    return None


# Element types of the data an elementwise operator takes in TensorFlow/TFLite builtins (measured:
# on other raw integer types, or float64, onnx2tf's operator needs TensorFlow's Flex delegate or
# fails). The default covers the operators listed in NARROW_TYPE_OPS; some take more.
NARROW_TYPES = frozenset({"int8", "uint8", "int16", "uint16", "uint32", "uint64", "float64"})


NARROW_TYPE_OPS = ("Add", "Sub", "Mul", "Div", "Mod", "Max", "Min", "Equal", "Greater", "GreaterOrEqual", "Less", "LessOrEqual", "MaxPool", "Clip", "BitShift", "BitwiseXor")


EXTRA_TYPES = {
    "Mul": {"int16", "uint32"},
    "Mod": {"int8", "int16"},
    "Div": {"int8", "uint8", "int16", "uint16", "float64"},  # through float
    "BitShift": {"int8", "uint8", "int16", "uint16", "uint32"},  # but not int64 (below)
    "BitwiseXor": {"int16"},
}


@RULES.rule(*NARROW_TYPE_OPS, placement=Placement.UNSUPPORTED, CONVERTER=CONVERTER, TYPES=sorted(NARROW_TYPES))
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


@RULES.rule("LayerNormalization", placement=Placement.UNSUPPORTED, CONVERTER=CONVERTER)
def layer_norm_over_several_axes(node, chip):
    """{CONVERTER} builds tf_keras' LayerNormalization over one axis, with the scale's shape: a LayerNormalization over more than the last axis (axis other than -1) fails ("has N elements, but got `shape`")."""
    # Measured (tests/forms_models.py layer_norm_imx_pack): axis -1 of [4, 64], [1, 32, 64] and
    # [1, 8, 8, 16] converts (MEAN, SQUARED_DIFFERENCE, ADD, RSQRT, MUL, SUB, all on the NPU);
    # axis 1 of [1, 32, 64] (scale [32, 64]) fails in onnx2tf.
    rank = input_rank(node)
    axis = int(node.attr("axis", -1))
    if rank is not None and rank > 1 and axis % rank != rank - 1:
        return Offence(axis, f"axis {axis} of a rank-{rank} input: {rank - axis % rank} axes")
    return None


# An ellipsis ("...") stands for the same leading axes in every term: it is handled as one label.
ELLIPSIS_LABEL = "*"


def einsum_terms(equation: str) -> tuple[list[str], str] | None:
    """The operands' labels and the output's of an Einsum equation ("bij,bjk->bik"), an ellipsis as
    the one label ELLIPSIS_LABEL; an implicit output ("ij,jk") is made explicit as NumPy does: the
    ellipsis, then the labels used once, in alphabetical order. None where the equation is unreadable."""
    text = equation.decode() if isinstance(equation, bytes) else str(equation)
    text = text.replace(" ", "").replace("...", ELLIPSIS_LABEL)
    if "." in text or text.count("->") > 1:
        return None
    inputs, _, output = text.partition("->")
    operands = inputs.split(",")
    if "->" not in text:
        labels = "".join(operands)
        once = sorted(c for c in set(labels) if labels.count(c) == 1 and c != ELLIPSIS_LABEL)
        output = (ELLIPSIS_LABEL if ELLIPSIS_LABEL in labels else "") + "".join(once)
    return operands, output


def _einsum_unconvertible(equation) -> str | None:
    """Why TensorFlow's converter cannot lower this equation to a matrix product or a permutation, or None."""
    terms = einsum_terms(equation)
    if terms is None:
        return "an equation that cannot be read"
    operands, output = terms
    if len(operands) > 2:
        return f"{len(operands)} operands"
    if any(len(set(t)) != len(t) for t in operands) or len(set(output)) != len(output):
        return "a label repeated within a term (a diagonal)"
    if any(c not in "".join(operands) for c in output):
        return "an output label no operand has"
    for i, term in enumerate(operands):
        others = "".join(operands[:i] + operands[i + 1 :])
        lone = [c for c in term if c not in output and c not in others]
        if lone:
            return f"label {lone[0]} summed out of one operand"
    return None


@RULES.rule("Einsum", placement=Placement.UNSUPPORTED, CONVERTER=CONVERTER)
def einsum_not_a_matrix_product(node, chip):
    """{CONVERTER} writes tf.einsum, which TensorFlow's converter lowers to TFLite builtins only as a matrix product of two operands or a permutation of one (an ellipsis counting as one more shared label, an implicit output made explicit); a diagonal, a label summed out of one operand, more than two operands or float64 data need TensorFlow's Flex delegate (FlexEinsum) or fail."""
    # Measured (tests/forms_models.py einsum_imx_pack; funnel's and CvT's equations): "bind,bjnd->bnij",
    # "bnij,bjnd->bind", "bhlk,bhtk->bhlt", "bhlt,bhtv->bhlv", "ij,jk->ik", "bi,bi->b", with a constant
    # operand "binh,tnh->bnit", "bind,snd->bnis", "bij,jk->bik", and "bij->bji": BATCH_MATMUL,
    # FULLY_CONNECTED or TRANSPOSE on the NPU; "bii->bi" and "bij,bjk->bk": FlexEinsum. ONNX's
    # einsum node tests (float64) all fail. An ellipsis or an implicit output changes nothing (tf.einsum
    # takes both; einsum_imx_ellipsis_*, fresh11's LongT5): "...nd,...ng->...gd", "...qhd,...khd->...hqk",
    # "...hqk,...khd->...qhd" (5-D), "...ij,...jk->...ik" of 2-D operands, "...ij->...ji" and "ij,jk"
    # convert; "...ii->...i" and "...ij,...jk->...k" need FlexEinsum.
    why = _einsum_unconvertible(node.attr("equation", ""))
    if why:
        return Offence(why, why)
    for t in node.inputs:
        if t.present and t.dtype == "float64":
            return Offence("float64", f"{t.name} is float64")
    return None


@RULES.rule("Conv", placement=Placement.UNSUPPORTED, CONVERTER=CONVERTER)
def unsqueezed_channel_into_a_conv(node, chip):
    """{CONVERTER} stops on a Conv reading a 3-D tensor [N, T, F] (T other than F) given its channel axis by an Unsqueeze at axis 1 (a spectrogram made a one-channel image): it holds the 3-D tensor as [N, F, T] and adds the axis there, so the Conv sees F channels ("Depth of output ... is not a multiple of the number of groups"; passes.conv_of_an_unsqueezed_3d_tensor). Workaround: a Reshape to [N, 1, T, F] instead of the Unsqueeze."""
    shape = node.attr(UNSQUEEZED_CHANNEL_ATTRIBUTE)
    if shape is None:
        return None
    return Offence(list(shape), f"Unsqueeze at axis 1 of {list(shape)}")


@RULES.rule("ConvTranspose", placement=Placement.UNSUPPORTED, CONVERTER=CONVERTER)
def transpose_conv_of_a_misbroadcast_product(node, chip):
    """{CONVERTER} stops on a ConvTranspose reading one source (a Gather on axis 0) of a Mul of a tensor Unsqueezed at axis 0 by masks (SepFormer's decoder): it holds the Unsqueezed tensor and the masks in different layouts, the Mul broadcasts them into a wrong shape, and the ConvTranspose refuses it ("Dimensions must be equal"; passes.transpose_conv_of_an_unsqueezed_product). The same path without the Mul converts."""
    if not node.attr(UNSQUEEZED_PRODUCT_ATTRIBUTE):
        return None
    return Offence("Gather of an Unsqueezed product", "input picked out of a Mul of a tensor Unsqueezed at axis 0")


@RULES.rule("Conv", placement=Placement.UNSUPPORTED, CONVERTER=CONVERTER)
def conv_weight_computed_at_run_time(node, chip):
    """{CONVERTER} stops on a Conv whose weight is computed at run time (CondConv's per-input mix of expert weights): it transposes only a constant weight to TensorFlow's [kh, kw, in, out] filter and hands a computed one over in ONNX's [out, in, kh, kw] order ("Depth of output ... is not a multiple of the number of groups"). A weight computed from constants alone is computed by onnxsim first and converts."""
    # Measured with onnx2tf 1.29.24 (tests/forms_models.py condconv_imx_*: a routing Sigmoid, a MatMul of four
    # experts and a Reshape into a pointwise, depthwise 5x5 or 1x1, dense 3x3 or grouped 3x3 Conv of [1, C, 8, 8]:
    # every one fails; the same chain from a constant routing converts). A model input as the weight is
    # parameter_input_not_constant's.
    w = node.input(1)
    if w is None or w.is_constant or w.foldable or w.is_graph_input:
        return None
    return Offence(w.name, f"weight {w.name} computed at run time" + (f" by a {w.producer}" if w.producer else ""))


@RULES.rule("Reshape", placement=Placement.UNSUPPORTED, before_folding=True, CONVERTER=CONVERTER)
def reshape_of_constants_unsimplified(node, chip):
    """{CONVERTER} stops on a Reshape of a rank-3+ tensor computed from constants when onnxsim did not compute it first (onnxsim stopped: passes.simplifier_crash_leaves_constant_reshapes): it computes the tensor itself, as a TensorFlow constant, and its Reshape check builds a Keras model whose output is no layer's ("Output tensors of a Functional model must be the output of a TensorFlow `Layer`")."""
    if not node.attr(RESHAPE_OF_CONSTANTS_ATTRIBUTE):
        return None
    data = node.input(0)
    return Offence(list(data.shape), f"{data.name} computed from constants, not simplified")
