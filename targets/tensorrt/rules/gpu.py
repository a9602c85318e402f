"""TensorRT's GPU rules, per release: what the onnx-tensorrt operator tables state besides operator presence and types.

Every rule here stops the build (UNSUPPORTED: the GPU has no unit below it). Declared in the order
the audit checks them, after the DLA rules.
"""

from __future__ import annotations

from edgedeploy.audit.rules import Offence, OpSupport, Placement
from edgedeploy.targets.tensorrt import op_tables
from edgedeploy.targets.tensorrt.rules.documents import RULES, TRT_8, TRT_10, TRT_DOCUMENT, TRT_VERSION_LABEL
from edgedeploy.targets.tensorrt.rules.helpers import ints


@RULES.rule("AveragePool", "MaxPool", placement=Placement.UNSUPPORTED, POOL_DIMS=(2, 3))
def pooling_must_be_2d_or_3d(node, chip):
    """TensorRT pools over {POOL_DIMS} spatial dimensions only."""
    dims = len(ints(node.attr("kernel_shape")))
    if dims not in (2, 3):
        return Offence(dims, "spatial dimensions of the pooling window")


@RULES.rule("AveragePool", "MaxPool", "LpPool", placement=Placement.UNSUPPORTED, releases=TRT_10)
def pooling_dilations_must_be_one(node, chip):
    """TensorRT 10 pools only with dilations empty or all ones."""
    bad = [d for d in ints(node.attr("dilations")) if d != 1]
    if bad:
        return Offence(ints(node.attr("dilations")))


@RULES.rule("MaxPool", placement=Placement.UNSUPPORTED)
def maxpool_indices_output_unsupported(node, chip):
    """TensorRT does not produce MaxPool's Indices output."""
    if len(node.outputs) > 1 and node.outputs[1].name:
        return Offence(node.outputs[1].name, "Indices output is consumed")


# TensorRT's supported Resize attribute values (onnx-tensorrt operator tables, all versions).
RESIZE_COORD_MODES = ("half_pixel", "pytorch_half_pixel", "tf_half_pixel_for_nn", "asymmetric", "align_corners")
RESIZE_MODES = ("nearest", "linear")
RESIZE_NEAREST_MODES = ("floor", "ceil", "round_prefer_floor", "round_prefer_ceil")


@RULES.rule("Resize", placement=Placement.UNSUPPORTED, MODES=RESIZE_MODES, COORD_MODES=RESIZE_COORD_MODES, NEAREST_MODES=RESIZE_NEAREST_MODES)
def resize_attributes_supported(node, chip):
    """TensorRT resizes with mode {MODES}, coordinate transformation {COORD_MODES} and nearest mode {NEAREST_MODES} only."""
    found = []
    mode = node.attr("mode", "nearest")
    if mode not in RESIZE_MODES:
        found.append(Offence(mode, "mode"))
    coord = node.attr("coordinate_transformation_mode", "half_pixel")
    if coord not in RESIZE_COORD_MODES:
        found.append(Offence(coord, "coordinate_transformation_mode"))
    nearest = node.attr("nearest_mode", "round_prefer_floor")
    if mode == "nearest" and nearest not in RESIZE_NEAREST_MODES:
        found.append(Offence(nearest, "nearest_mode"))
    return found


@RULES.rule("Resize", placement=Placement.UNSUPPORTED, releases=TRT_10)
def resize_no_antialias_keep_stretch(node, chip):
    """TensorRT 10 resizes without antialiasing and with keep_aspect_ratio_policy 'stretch' only."""
    found = []
    if int(node.attr("antialias", 0)) != 0:
        found.append(Offence(node.attr("antialias"), "antialias"))
    policy = node.attr("keep_aspect_ratio_policy", "stretch")
    if policy != "stretch":
        found.append(Offence(policy, "keep_aspect_ratio_policy"))
    return found


@RULES.rule("QuantizeLinear", "DequantizeLinear", placement=Placement.UNSUPPORTED)
def quantize_zero_point_must_be_zero(node, chip):
    """TensorRT quantizes symmetrically: the zero point must be 0."""
    zp = node.input(2)
    if zp is not None and zp.value is not None and bool((zp.value != 0).any()):
        return Offence(zp.value.reshape(-1)[:4].tolist(), "zero point")
    if zp is not None and not zp.is_constant:
        return Offence("run-time zero point", "zero point is not a constant")


@RULES.rule("Dropout", placement=Placement.UNSUPPORTED, releases=TRT_10)
def dropout_training_mode_must_be_false(node, chip):
    """TensorRT 10 needs Dropout's training_mode as an initializer that is False."""
    mode = node.input(2)
    if mode is None:
        return None
    if not mode.is_constant:
        return Offence("run-time training_mode")
    if mode.value is not None and bool(mode.value.any()):
        return Offence(True, "training_mode is True")


@RULES.rule("LSTM", placement=Placement.UNSUPPORTED, releases=TRT_10)
def lstm_input_forget_and_layout_zero(node, chip):
    """TensorRT 10 imports LSTM only with input_forget = 0 and layout = 0."""
    found = []
    for name in ("input_forget", "layout"):
        if int(node.attr(name, 0)) != 0:
            found.append(Offence(node.attr(name), name))
    return found


@RULES.rule("LayerNormalization", placement=Placement.UNSUPPORTED, releases=TRT_10)
def layernorm_only_first_output(node, chip):
    """TensorRT 10 produces only LayerNormalization's first output (Y)."""
    extra = [o.name for o in node.outputs[1:] if o.name]
    if extra:
        return Offence(extra, "Mean / InvStdDev outputs are consumed")


@RULES.rule("GridSample", placement=Placement.UNSUPPORTED, releases=TRT_10, RANK=4)
def gridsample_must_be_4d(node, chip):
    """TensorRT 10 samples only {RANK}-D inputs with GridSample."""
    x = node.input(0)
    if x is not None and x.rank is not None and x.rank != 4:
        return Offence(x.rank, "input rank")


@RULES.rule("ScatterND", placement=Placement.UNSUPPORTED, releases=TRT_10)
def scatternd_no_reduction(node, chip):
    """TensorRT imports ScatterND only without a reduction ('none')."""
    reduction = node.attr("reduction", "none")
    if reduction != "none":
        return Offence(reduction, "reduction")


@RULES.rule("TopK", placement=Placement.UNSUPPORTED, releases=TRT_10, TOPK_K_BELOW=3840)
def topk_sorted_and_k_limit(node, chip):
    """TensorRT 10 needs TopK sorted = 1 and K below {TOPK_K_BELOW}."""
    found = []
    if int(node.attr("sorted", 1)) != 1:
        found.append(Offence(0, "sorted"))
    k = node.input(1)
    if k is not None and k.value is not None and k.value.size and int(k.value.reshape(-1)[0]) >= 3840:
        found.append(Offence(int(k.value.reshape(-1)[0]), "K"))
    return found


@RULES.rule("Constant", placement=Placement.UNSUPPORTED, releases=TRT_10)
def constant_no_sparse_or_string(node, chip):
    """TensorRT does not import Constant's sparse_value, value_string or value_strings attributes."""
    for name in ("sparse_value", "value_string", "value_strings"):
        if node.has_attr(name):
            return Offence(name)


@RULES.rule("Einsum", placement=Placement.UNSUPPORTED, releases=TRT_8)
def einsum_no_ellipsis(node, chip):
    """TensorRT 8.x Einsum supports no ellipsis ('...') in the equation."""
    equation = node.attr("equation", "")
    if "..." in equation:
        return Offence(equation, "ellipsis")


@RULES.rule("InstanceNormalization", placement=Placement.UNSUPPORTED, releases="8.5", RANK_RANGE=(3, 5))
def instancenorm_rank(node, chip):
    """TensorRT 8.5 normalizes instances of rank {RANK_RANGE} only."""
    x = node.input(0)
    if x is not None and x.rank is not None and not (3 <= x.rank <= 5):
        return Offence(x.rank, "input rank")


@RULES.rule("ReverseSequence", placement=Placement.UNSUPPORTED, releases="8.5")
def reversesequence_static_shapes(node, chip):
    """TensorRT 8.5 reverses sequences of static shape only."""
    x = node.input(0)
    if x is not None and not x.is_static:
        return Offence(x.shape, "dynamic input shape")


@RULES.rule("EyeLike", placement=Placement.UNSUPPORTED, releases=TRT_10)
def eyelike_static_input(node, chip):
    """TensorRT 10 needs EyeLike's input with static dimensions."""
    x = node.input(0)
    if x is not None and not x.is_static:
        return Offence(x.shape, "dynamic input shape")


# Inputs the importer needs as build-time constants, per document. op -> ((index, name), ...)
_AXES = ((1, "axes"),)
_REDUCTIONS = ("ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax", "ReduceMean", "ReduceMin", "ReduceProd", "ReduceSum", "ReduceSumSquare")
_SQUEEZE_CUMSUM = {"Squeeze": _AXES, "Unsqueeze": _AXES, "CumSum": ((1, "axis"),)}
CONSTANT_INPUTS = {
    "8.5": {"Slice": ((3, "axes"),), **_SQUEEZE_CUMSUM, "TopK": ((1, "K"),), "InstanceNormalization": ((1, "scale"), (2, "B"))},
    "8.6": {"Slice": ((3, "axes"),), **_SQUEEZE_CUMSUM},
    "10.x": {"Slice": ((3, "axes"),), **_SQUEEZE_CUMSUM, "Pad": ((3, "axes"),), "OneHot": ((1, "depth"),), **dict.fromkeys(_REDUCTIONS, _AXES)},
    "10.15": {**_SQUEEZE_CUMSUM, "OneHot": ((1, "depth"),), "STFT": ((1, "frame_step"), (2, "window")), **dict.fromkeys(_REDUCTIONS, _AXES)},
}


def _constant_inputs_rule(version: str):
    required = CONSTANT_INPUTS[version]

    @RULES.rule(*required, placement=Placement.UNSUPPORTED, releases=version, TRT=TRT_VERSION_LABEL[version].split(" (")[0])
    def input_must_be_build_time_constant(node, chip):
        """{TRT}'s ONNX importer needs this input as a build-time constant (an initializer or Constant); fold it first (polygraphy surgeon sanitize --fold-constants)."""
        for index, name in required.get(node.op_type, ()):
            tensor = node.input(index)
            if tensor is not None and not tensor.is_constant:
                return Offence(name, f"input {index} ('{name}') is computed at run time")

    return input_must_be_build_time_constant


# One per release (its operator list differs), checked after the other GPU rules.
for _release in TRT_DOCUMENT:
    _constant_inputs_rule(_release)


FLOAT_TYPES = ("fp32", "fp16", "bf16")


def gpu_op_support(version: str) -> dict[str, OpSupport]:
    """OpSupport per ONNX op on the GPU for one table.

    Precisions are the build precisions (fp32, fp16, int8) the document lists for the op. An op
    that lacks the requested one still runs on the GPU, in a wider float type, so the missing
    precision means FLOAT, not a fallback. Ops without float types (bool/int only) run whatever
    the build precision is. TensorRT 10 documents INT8 only as a quantized type (Q/DQ or
    calibration): which layers then run in INT8 is the builder's choice, so every float op
    accepts int8 there and the build's layer information tells the truth.
    """
    doc = TRT_DOCUMENT[version]
    restrictions = op_tables.GPU_RESTRICTIONS[doc]
    out = {}
    for op, types in op_tables.GPU_OPS[doc].items():
        floats = [t for t in types if t in FLOAT_TYPES]
        if not floats:
            precisions: tuple[str, ...] = ("any",)
        else:
            precisions = tuple(t for t in ("fp32", "fp16") if t in types)
            if "int8" in types or doc in ("10.1", "10.15"):
                precisions += ("int8",)
        out[op] = OpSupport(precisions=precisions, note=restrictions.get(op, ""), missing_precision=Placement.FLOAT)
    return out
