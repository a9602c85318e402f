"""eIQ rules about where the TFLite operators run: on the NPU, or on the Cortex-A CPU.

i.MX 93: what Vela compiles for the Ethos-U65 (its operator list and constraints); i.MX 8M Plus:
the VX delegate's operator list (it states no per-operator limits). Declared in the order the
audit checks them, after the conversion rules.
"""

from __future__ import annotations

from edgedeploy.audit.rules import NodeView, Offence, Placement
from edgedeploy.targets.eiq.rules.documents import NPU_TABLES, RULES, TENSORFLOW_VERSION, VELA_VERSION
from edgedeploy.targets.eiq.rules.passes import CONV3D_TOKENS_INTO_A_CONCAT_ATTRIBUTE, FLOAT_MIN_MASK_ATTRIBUTE, MEAN_IN_ONNX_ORDER_ATTRIBUTE, PADDED_INPUT_BESIDE_A_CONCAT_ATTRIBUTE, STRIDED_PADDING_ATTRIBUTE, transpose_conv_size_refused, transpose_conv_stride_refused
from edgedeploy.targets.eiq.rules.onnx2tf import float_only_ops, has_float_data, input_rank, node_tflite_ops, static_shape, tf_axis, tf_shape

IMX93 = ("imx93",)
VELA = f"Vela {VELA_VERSION}"


@RULES.rule(placement=Placement.UNSUPPORTED, chips=IMX93, COMPILER=VELA)
def boolean_model_boundary(node, chip):
    """{COMPILER} stops with an error ("Non-passthrough operation ... could not run on NPU") when a model input or output is boolean."""
    for t in list(node.inputs) + list(node.outputs):
        if t.present and t.dtype == "bool" and (t.is_graph_input or t.is_model_output):
            return Offence("bool", f"{t.name} is a boolean model {'input' if t.is_graph_input else 'output'}")
    return None


@RULES.rule(placement=Placement.FALLBACK, chips=IMX93, COMPILER=VELA)
def scalar_feature_map(node, chip):
    """{COMPILER} leaves operators that produce or read scalar (shapeless) feature maps on the CPU ("Tensors must have constant shape")."""
    # E.g. DynamicQuantizeLinear's run-time scale and zero point (measured: Vela leaves it on the CPU).
    if float_only_ops(node):
        return None  # it computes in float on the CPU: no_int8_kernel says so
    for t in node.outputs:
        if t.present and t.rank == 0:
            return Offence(0, f"{t.name} is a scalar")
    # A scalar it reads at run time is one too (measured: a Mul or an Add of a map and the scalar
    # of a ReduceMax over every axis, or of a Reciprocal of it, on the CPU, "Operation has shapeless
    # tensor"; Nystromformer's pseudo-inverse scale); a constant scalar is fine.
    for t in node.inputs:
        if t.present and t.rank == 0 and not (t.is_constant or t.foldable):
            return Offence(0, f"{t.name} is a scalar computed at run time")
    return None


def _not_on_npu_rule(chip_id: str, release: str, npu_ops: frozenset[str], compiler: str):
    # One rule per NPU table: its sentence names the compiler the table comes from.
    @RULES.rule(placement=Placement.FALLBACK, chips=(chip_id,), releases=(release,), COMPILER=compiler)
    def tflite_operator_not_on_npu(node, chip):
        """onnx2tf lowers this node to a TFLite operator {COMPILER} does not place on the NPU; it runs on the CPU with TFLite's int8 kernel."""
        float_only = set(float_only_ops(node))
        missing = [t for t in node_tflite_ops(node) if t not in npu_ops and t not in float_only]
        if missing:
            return Offence(missing[0], "TFLite " + ", ".join(missing))
        return None

    return tflite_operator_not_on_npu


for _chip, _tables in NPU_TABLES.items():
    for _release, (_npu_ops, _compiler) in _tables.items():
        _not_on_npu_rule(_chip, _release, _npu_ops, _compiler)


@RULES.rule(placement=Placement.FLOAT, QUANTISER=f"TensorFlow {TENSORFLOW_VERSION}'s int8 quantiser")
def no_int8_kernel(node, chip):
    """{QUANTISER} has no int8 kernel for the TFLite operator of this node; it stays in float32 between DEQUANTIZE and QUANTIZE (on the i.MX 93: on the CPU)."""
    found = float_only_ops(node)
    if found:
        return Offence(found[0], "TFLite " + ", ".join(found))
    return None


# A Clip with a min only is TFLite MAXIMUM, which the quantiser keeps in float when it reads one of
# these nodes' float results (their last operator is SQRT, float only); a Relu there is int8.
FLOAT_RESULT_PRODUCERS = ("Sqrt", "ReduceL2")


def _min_only_clip(node: NodeView) -> bool:
    if node.opset < 11:
        return node.has_attr("min") and not node.has_attr("max")
    return node.input(1) is not None and node.input(2) is None


@RULES.rule("Clip", placement=Placement.FLOAT, QUANTISER=f"TensorFlow {TENSORFLOW_VERSION}'s int8 quantiser", PRODUCERS=", ".join(FLOAT_RESULT_PRODUCERS))
def maximum_of_a_float_result(node, chip):
    """A Clip with a lower bound only becomes TFLite MAXIMUM; reading the float result of a {PRODUCERS} (its SQRT), {QUANTISER} keeps it in float too (F.normalize's clamp of the norm), whatever reads it."""
    # Measured with onnx2tf 1.29.24 and Vela 5.2.0 (tests/forms_models.py l2_norm_imx_pack): the
    # Clip after ReduceL2 or Sqrt is float before a Div, a Mul of the input and a Conv alike; a Relu
    # in its place is int8 on the NPU.
    data = node.input(0)
    if data is not None and data.producer in FLOAT_RESULT_PRODUCERS and has_float_data(node) and _min_only_clip(node):
        return Offence(data.producer, f"MAXIMUM of the float result of a {data.producer}")
    return None


# A Concat joining one of these nodes' float results (SIN, COS: no int8 kernel) the quantiser keeps
# in float as well (a sinusoidal time or position embedding's Concat of Sin and Cos).
FLOAT_RESULTS_A_CONCAT_KEEPS = ("Sin", "Cos")


@RULES.rule("Concat", placement=Placement.FLOAT, QUANTISER=f"TensorFlow {TENSORFLOW_VERSION}'s int8 quantiser", PRODUCERS=", ".join(FLOAT_RESULTS_A_CONCAT_KEEPS))
def concat_of_a_float_result(node, chip):
    """A Concat that joins the float result of a {PRODUCERS} (no int8 kernel) is kept in float by {QUANTISER} too, whichever input it is and whatever the others are (on the i.MX 93: on the CPU)."""
    # Measured with onnx2tf 1.29.24 and Vela 5.2.0 (tests/forms_models.py float_concat_imx_pack, DDPM
    # UNet's time projection): Concat of Sin and Cos, of Sin and a Relu, of a Relu and Sin: float; of
    # two Relus: int8 on the NPU. Other float-only producers (Sqrt, Div, ...) were not measured.
    if not has_float_data(node):
        return None
    for data in node.inputs:
        if data.present and data.producer in FLOAT_RESULTS_A_CONCAT_KEEPS:
            return Offence(data.producer, f"CONCATENATION of the float result of a {data.producer}")
    return None


@RULES.rule("Reshape", placement=Placement.FLOAT, QUANTISER=f"TensorFlow {TENSORFLOW_VERSION}'s int8 quantiser")
def float_tokens_of_a_conv3d_into_a_concat(node, chip):
    """This Reshape turns a 3-D Conv's float result (CONV_3D) into tokens a Concat reads; {QUANTISER} leaves its layout TRANSPOSE in float (measured: passes.conv3d_tokens_into_a_concat), on the CPU of the i.MX 93."""
    if node.attr(CONV3D_TOKENS_INTO_A_CONCAT_ATTRIBUTE):
        return Offence("TRANSPOSE", "layout TRANSPOSE of a CONV_3D result read by a Concat")
    return None


@RULES.rule("Conv", placement=Placement.FLOAT, QUANTISER=f"TensorFlow {TENSORFLOW_VERSION}'s int8 quantiser")
def padded_input_shared_with_a_concat(node, chip):
    """This Conv pads a model input that a Concat also reads; {QUANTISER} leaves its PAD, CONV_2D and fused Relu in float or quantises them by the order it visits the tensors (their names), which the audit does not model: uncertain (float as a guess; --confirm settles it)."""
    if node.attr(PADDED_INPUT_BESIDE_A_CONCAT_ATTRIBUTE):
        return Offence(node.input(0).name if node.input(0) is not None else "", "padded model input also joined by a Concat", uncertain=True)
    return None


# Vela 5.2.0's generic constraints: feature maps must be INT8/UINT8/INT16/INT32/INT64 ("bool" is
# not one), 64-bit feature maps are not supported (except ARG_MAX), and most operators add "32-bit
# feature-maps are not supported". Operators of the U55/U65 table without that specific line:
VELA_32BIT_OK = frozenset({"ADD", "SUB", "MUL", "NEG", "RESHAPE", "SQUEEZE", "EXPAND_DIMS", "SUM", "TRANSPOSE", "BATCH_MATMUL", "FULLY_CONNECTED", "ARG_MAX", "MIRROR_PAD"})
OUTPUT_INDEX_OPS = ("ArgMax", "ArgMin", "Shape", "Size")


@RULES.rule(placement=Placement.FALLBACK, chips=IMX93, COMPILER=VELA)
def integer_feature_map(node, chip):
    """This node computes on raw integer or boolean data (not quantised activations): {COMPILER} needs quantisation parameters and no 64-bit or boolean feature maps, and takes 32-bit ones only for a few operators; the node stays on the CPU."""
    if float_only_ops(node):
        return None  # it computes in float on the CPU: no_int8_kernel says so

    ops = node_tflite_ops(node)
    if node.op_type == "Reshape" and not ops:
        return None  # a Reshape to its own shape is no operator (measured, id_reshape_imx_pack): nothing runs
    data = [node.input(0)] if node.input(0) is not None and not node.input(0).is_constant else []
    if node.op_type not in OUTPUT_INDEX_OPS:
        data += [t for t in node.outputs if t.present]
    for t in data:
        if t.dtype in ("bool", "int64", "uint64", "int8", "uint8", "int16", "uint16", "uint32"):
            return Offence(t.dtype, f"{t.name} is {t.dtype}")
        if t.dtype == "int32" and any(o not in VELA_32BIT_OK for o in ops):
            return Offence(t.dtype, f"{t.name} is {t.dtype}")
    return None


def _product(dims) -> int:
    total = 1
    for d in dims:
        total *= d
    return total


def _argmax_on_depth(node: NodeView) -> bool | None:
    rank = input_rank(node)
    if rank is None:
        return None
    return tf_axis(int(node.attr("axis", 0)), rank) == rank - 1


@RULES.rule("ArgMax", placement=Placement.FALLBACK, chips=IMX93, MAX_DEPTH=127)
def argmax_not_on_depth(node, chip):
    """Vela runs ARG_MAX only along the depth (channels-last) axis, with a depth of at most {MAX_DEPTH}."""
    on_depth = _argmax_on_depth(node)
    if on_depth is None:
        return None
    if not on_depth:
        return Offence(int(node.attr("axis", 0)), "reduction not along the channels-last axis")
    shape = static_shape(node)
    if shape is not None and tf_shape(shape)[-1] > 127:
        return Offence(tf_shape(shape)[-1], "depth above 127")
    return None


@RULES.rule("ArgMax", "Hardmax", placement=Placement.UNSUPPORTED, chips=IMX93, releases=("5.2",), COMPILER=VELA)
def argmax_on_depth_stops_vela(node, chip):
    """{COMPILER} stops with an error (KeyError '0') on an ARG_MAX along the depth (channels-last) axis, the one form it would place on the NPU (measured); Hardmax is lowered to such an ARG_MAX."""
    if node.op_type == "Hardmax" or _argmax_on_depth(node):
        return Offence(int(node.attr("axis", -1 if node.op_type == "Hardmax" else 0)), "ARG_MAX along the depth axis")
    return None


@RULES.rule("MaxPool", "AveragePool", placement=Placement.FALLBACK, chips=IMX93, MAX_KERNEL_H=256, MAX_KERNEL_PRODUCT=65536, MAX_STRIDE=3, MAX_PADDED_KERNEL=8)
def pool_limits(node, chip):
    """Vela's pooling limits: kernel height at most {MAX_KERNEL_H} and kernel area at most {MAX_KERNEL_PRODUCT}; strides above {MAX_STRIDE} only with VALID padding; average pooling with SAME padding only with kernels up to {MAX_PADDED_KERNEL}x{MAX_PADDED_KERNEL}."""
    # A MaxPool padding TensorFlow's SAME cannot express (symmetric pads on an even size,
    # SAME_LOWER, the extra end padding of ceil_mode) is not limited here: onnx2tf 1.29.24 writes
    # it as PAD + MAX_POOL_2D (VALID), and with the int8-aware pad value edgedeploy's build asks
    # for (targets/eiq/worker.py, INT8_AWARE_OPS) Vela 5.2.0 places both on the NPU (measured on
    # Conv-Relu-MaxPool-Conv models, 3x3/2 with pads 1 and with ceil_mode, opsets 9 and 13).
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
    return None


# Vela 5.2.0 (its regor MEAN check, "Reduced axis is too large") runs a MEAN only when each reduced
# axis is at most 4096 long, each on its own, not their product (measured with onnx2tf 1.29.24:
# tests/forms_models.py wide_norm_imx_pack, InstanceNormalization of [1, 8, 4096] and [1, 8, 1, 4096]
# and of [1, 8, 64, 80] on the NPU, of [1, 8, 4104], [1, 8, 1, 4104] and [1, 8, 4104, 1] and
# GroupNorm(4)'s of [1, 4, 8192] on the CPU; a ReduceMean over H and W of [1, 8, 1, 4096] on the
# NPU, of [1, 8, 1, 4104] on the CPU). GlobalAveragePool was not measured.
MEAN_MAX_REDUCED_AXIS = 4096


@RULES.rule("ReduceMean", "GlobalAveragePool", "RMSNormalization", "InstanceNormalization", placement=Placement.FALLBACK, chips=IMX93, MAX_REDUCED_AXIS=MEAN_MAX_REDUCED_AXIS)
def mean_limits(node, chip):
    """Vela runs MEAN (also the one of an InstanceNormalization's tf.nn.moments) only with a batch of 1 on a 4-D input, with no reduced axis above {MAX_REDUCED_AXIS}, and reduces over the depth (channels-last) axis only when height, width or depth is 1."""
    # Depth is the last axis of the tensor the MEAN reads: channels-last as a rule, but the ONNX
    # order after an Add of run-time tensors (passes.mean_after_an_add_in_onnx_order).
    shape = static_shape(node)
    if shape is None or len(shape) < 3:
        return None
    # Vela reads the batch of a 4-D MEAN input; a rank-3 tensor it sees as [1, N, H, C] (measured:
    # tests/forms_models.py batched_norm_pack, a ReduceMean and an InstanceNormalization of
    # [2, 16, 32] on the NPU, of [2, 16, 8, 8] and [3, 8, 8, 8] on the CPU).
    if len(shape) == 4 and shape[0] != 1:
        return Offence(shape[0], "batch above 1")
    # Of a 5-D input Vela reads the batch as the product of the axes before the last three: in
    # channels-last order N and ONNX's axis 2, in ONNX's own order (after some layout changes
    # onnx2tf keeps it) N and the channels (measured: tests/forms_models.py mean_rank5_imx_pack,
    # [1, 1, 8, 4, 32] and [1, 2, 8, 4, 32] over axis 3 or 4: "Batch > 1", CPU).
    if len(shape) >= 5:
        batch = max(_product(tf_shape(shape)[: len(shape) - 3]), _product(shape[: len(shape) - 3]))
        if batch != 1:
            return Offence(batch, "batch above 1 (the axes before the last three)")
    if node.op_type == "InstanceNormalization":
        # tf.nn.moments over the spatial axes (a rank-3 [N, C, L]'s L: GroupNorm's C/G*H*W): no depth reduction.
        return _reduced_axis_too_large(shape[2:])
    if node.op_type == "RMSNormalization":
        rank = len(shape)
        tf_axes = {tf_axis(a, rank) for a in range(int(node.attr("axis", -1)) % rank, rank)}
        tf = tf_shape(shape)
        if rank - 1 in tf_axes and all(d > 1 for d in tf[1:]):
            return Offence(sorted(tf_axes), "depth reduction with H, W and C above 1")
    if node.op_type == "ReduceMean":
        axes = node.attr("axes")
        if axes is None and node.input(1) is not None and node.input(1).value is not None:
            axes = [int(a) for a in node.input(1).value.reshape(-1)]
        rank = len(shape)
        # After an Add onnx2tf hands the MEAN the ONNX order (passes.mean_after_an_add_in_onnx_order).
        onnx_order = bool(node.attr(MEAN_IN_ONNX_ORDER_ATTRIBUTE))
        tf_axes = {int(a) % rank if onnx_order else tf_axis(int(a), rank) for a in (axes if axes is not None else range(rank))}
        tf = list(shape) if onnx_order else tf_shape(shape)
        if rank - 1 in tf_axes and all(d > 1 for d in tf[1:]):
            return Offence(sorted(tf_axes), "depth reduction with H, W and C above 1")
        return _reduced_axis_too_large([tf[a] for a in sorted(tf_axes) if a > 0])
    return None


def _reduced_axis_too_large(reduced_sizes):
    longest = max(reduced_sizes, default=0)
    if longest > MEAN_MAX_REDUCED_AXIS:
        return Offence(longest, f"a reduced axis of {longest}, above {MEAN_MAX_REDUCED_AXIS}")
    return None


@RULES.rule("Softmax", "LogSoftmax", placement=Placement.FALLBACK, chips=IMX93, MAX_HW=65536)
def softmax_limits(node, chip):
    """Vela runs SOFTMAX when the product of the input's height and width is below {MAX_HW}."""
    shape = static_shape(node)
    if shape is None:
        return None
    tf = tf_shape(shape)
    hw = 1
    for d in tf[1:-1]:
        hw *= d
    if hw >= 65536:
        return Offence(hw, "H*W")
    return None


# How onnx2tf 1.29.24 builds a resize (its Resize.py): up to opset 17, coordinate_transformation_mode
# align_corners, asymmetric and half_pixel go to TensorFlow's v1 resize with those flags; every
# other mode (and Upsample, and opset 18+) to tf.image.resize, whose bilinear form uses half-pixel
# centres. Vela's RESIZE_BILINEAR with half-pixel centres takes only a 2x upscale.
V1_RESIZE_MAX_OPSET = 17


def _resize_form(node: NodeView) -> tuple[bool, bool, bool]:
    """(bilinear, align_corners, half_pixel_centers) of the TFLite resize onnx2tf makes of the node."""
    mode = node.attr("mode", "nearest")
    bilinear = mode in ("linear", "bilinear")
    ctm = node.attr("coordinate_transformation_mode", "half_pixel") if node.op_type == "Resize" else None
    v1 = ctm in ("align_corners", "asymmetric", "half_pixel") and node.opset <= V1_RESIZE_MAX_OPSET
    align = v1 and ctm == "align_corners"
    half_pixel = bilinear and not (v1 and ctm in ("align_corners", "asymmetric"))
    return bilinear, align, half_pixel


@RULES.rule("Resize", "Upsample", placement=Placement.FALLBACK, chips=IMX93, COMPILER=VELA, FACTORS=(2, 4, 8), HALF_PIXEL_FACTOR=2)
def resize_scale_factor(node, chip):
    """{COMPILER} runs RESIZE_* when the input is 1x1 or keeps its size, or the height and width scale by the same factor, one of {FACTORS} ((out - 1) / (in - 1) with align_corners); a bilinear resize with half-pixel centres (onnx2tf's form of half_pixel, pytorch_half_pixel and most other modes) only by {HALF_PIXEL_FACTOR}; where the factors differ, the output height or width must be 1 with no scaling in that dimension."""
    shape = static_shape(node)
    out = node.output(0)
    if shape is None or out is None or not out.is_static or len(shape) != 4:
        return None
    ih, iw = shape[2], shape[3]
    oh, ow = out.shape[2], out.shape[3]
    if ih == iw == 1 or tuple(shape) == tuple(out.shape):
        return None
    bilinear, align, half_pixel = _resize_form(node)

    def factor(o: int, i: int) -> float:
        return (o - 1) / (i - 1) if align and i != 1 else o / i

    fh, fw = factor(oh, ih), factor(ow, iw)
    scaled = fh
    if fh != fw:
        if not ((oh == 1 and fh == 1) or (ow == 1 and fw == 1)):
            return Offence((fh, fw), "height and width scale differently")
        scaled = fw if fh == 1 else fh  # the one dimension that scales still needs a supported factor
    if half_pixel and scaled != 2:
        return Offence(scaled, "bilinear with half-pixel centres, not 2x")
    if scaled not in (2, 4, 8):
        return Offence(scaled, "scale factor")
    return None


@RULES.rule("Transpose", placement=Placement.FALLBACK, chips=IMX93, COMPILER=VELA, MAX_AXES_PRODUCT=65536)
def transpose_shape_limits(node, chip):
    """{COMPILER} runs an int8 TRANSPOSE whose permutation moves more than the last three axes (or moves them with a leading axis above 1) only when every product of rank - 2 of its axes is at most {MAX_AXES_PRODUCT} (its TRANSPOSE constraints; measured: a ShuffleNet channel shuffle 1x4x28x56x56 with permutation 0,2,1,3,4 stays on the CPU, "has shape out of range")."""
    # The set of axis products does not depend on the axis order, so the ONNX layout gives the
    # same answer as the channels-last one onnx2tf hands to Vela. 32-bit data has its own limits
    # (integer_feature_map and Vela's 32-bit lines); this is the int8/int16 activation case.
    shape = static_shape(node)
    data = node.input(0)
    if shape is None or data is None or data.dtype not in ("float32", "float16", "float64") or len(shape) < 4:
        return None
    rank = len(shape)
    perm = list(node.attr("perm", []) or reversed(range(rank)))
    if perm == list(range(rank)):
        return None
    lead = rank - 3
    if perm[:lead] == list(range(lead)) and all(d == 1 for d in shape[:lead]):
        return None  # a permutation of H, W, C alone: each at most 2^16, far beyond these models
    largest = sorted(shape, reverse=True)[: rank - 2]
    product = 1
    for d in largest:
        product *= d
    if product > 65536:
        return Offence(product, f"{'x'.join(map(str, largest))} = {product} elements across {rank - 2} axes")
    return None


@RULES.rule("Conv", placement=Placement.UNSUPPORTED, chips=IMX93, COMPILER=VELA, MAX_STRIDE=3)
def strided_conv_after_a_pad(node, chip):
    """{COMPILER} stops ("Non-passthrough operation (Conv2D) could not run on NPU") on a CONV_2D strided by more than {MAX_STRIDE} whose padding onnx2tf writes as a PAD of its own: a 1-D Conv's always, a 2-D Conv's when the pads are not TensorFlow's SAME for its size."""
    if node.attr(STRIDED_PADDING_ATTRIBUTE) == "pad":
        return Offence(list(node.attr("strides")), "stride above 3 after a PAD")
    return None


@RULES.rule("InstanceNormalization", placement=Placement.UNSUPPORTED, chips=IMX93, COMPILER=VELA)
def instance_norm_of_a_slice(node, chip):
    """{COMPILER} stops ("Non-passthrough operation (Mul) could not run on NPU") on an InstanceNormalization that reads a Slice directly (MODNet's IBNorm: half the channels instance-normalised): onnx2tf's MEAN and SQUARED_DIFFERENCE then read the STRIDED_SLICE itself, and the 32-bit steps Vela lowers SQUARED_DIFFERENCE into cannot run on the NPU. Workaround: an element-wise step (a Relu) between the Slice and the normalisation, or normalise the whole map."""
    # Measured with onnx2tf 1.29.24 and Vela 5.2.0 (tests/forms_models.py ibnorm_imx_*): channels 0-7
    # or 8-15 of 16 Sliced into it, with or without affine parameters, beside a BatchNormalization of
    # the other half or alone: stops; with a Relu between, or of all 16 (or 8) channels: converts.
    # Only channel Slices were measured.
    data = node.input(0)
    if data is not None and data.producer == "Slice":
        return Offence("Slice", f"'{data.name}' is a Slice's result")
    return None


@RULES.rule("Conv", placement=Placement.FALLBACK, chips=IMX93, COMPILER=VELA, MAX_STRIDE=3)
def strided_conv_same_padding(node, chip):
    """{COMPILER} runs a CONV_2D strided by more than {MAX_STRIDE} only with VALID padding (its CONV_2D constraints): a 2-D Conv whose pads are TensorFlow's SAME for its size becomes such a CONV_2D (a Relu after it fused in) and runs on the CPU."""
    if node.attr(STRIDED_PADDING_ATTRIBUTE) == "same":
        return Offence(list(node.attr("strides")), "stride above 3 with SAME padding")
    return None


@RULES.rule("ConvTranspose", placement=Placement.FALLBACK, chips=IMX93, COMPILER=VELA)
def transpose_conv_strides(node, chip):
    """{COMPILER} runs TRANSPOSE_CONV with strides (height x width) 1x1 or 2x2, or 2 along one axis when the input and the kernel are 1 wide across the other (a 1-D ConvTranspose, which onnx2tf makes 2-D of height 1, by 1 or 2); other strides run on the CPU."""
    # Measured with onnx2tf 1.29.24 and Vela 5.2.0 (tests/forms_models.py transpose_conv_imx_*;
    # SpeechT5's HiFi-GAN upsampler, 1-D 8/4 pads 2): 1-D strides 1 and 2 and 2-D 1x1, 2x2 and 1x2
    # of height 1 on the NPU; 1-D strides 4 and 8, 2-D 4x4 and 1x4 on the CPU ("stride out of range").
    refused = transpose_conv_stride_refused(node)
    if refused is not None:
        return Offence(list(refused), f"strides {refused[0]}x{refused[1]} (height x width)")
    return None


@RULES.rule("ConvTranspose", placement=Placement.FALLBACK, chips=IMX93, COMPILER=VELA)
def transpose_conv_output_size(node, chip):
    """{COMPILER} runs a VALID TRANSPOSE_CONV only when its output is the input times the stride plus the kernel's excess over the stride; onnx2tf writes each ConvTranspose as a VALID TRANSPOSE_CONV of the full output with output_padding added (cropping the pads after it), so an output_padding with a kernel at least the stride (Attention U-Net's 3x3/2, output_padding 1), or a kernel narrower than the stride not made up by output_padding, runs on the CPU ("Unsupported IFM/OFM shapes")."""
    # Measured with onnx2tf 1.29.24 and Vela 5.2.0 (tests/forms_models.py transpose_conv_imx_output_padding):
    # 3x3/2 pads 1 output_padding 1 (128 -> 64 channels at 16x16, 16 -> 8 at 8x8), output_padding 1 on
    # one axis, 4x4/2 and 2x2/2 output_padding 1, 1x1/2 without, 1-D 3/2 output_padding 1: on the CPU;
    # 3x3/2 and 1-D 3/2 without output_padding, 1x1/2 output_padding 1: on the NPU.
    refused = transpose_conv_size_refused(node)
    if refused is None:
        return None
    axis, kernel, stride, extra = refused[0]
    return Offence(refused, f"kernel {kernel}, stride {stride}, output_padding {extra} on spatial axis {axis}: a VALID output Vela refuses")


@RULES.rule("Softmax", placement=Placement.UNSUPPORTED, chips=IMX93, COMPILER=VELA)
def softmax_scale_overflow(node, chip):
    """{COMPILER} stops on a SOFTMAX whose input scale divided by its output scale is not a float32 ("Does not have valid TFLite Semantics ... (IFM Scale / OFM Scale)=inf"): its input is scores plus a mask holding float32's lowest value (passes.softmax_of_a_float_min_mask)."""
    if node.attr(FLOAT_MIN_MASK_ATTRIBUTE):
        return Offence("inf", "input range beyond float32's largest value")
    return None
