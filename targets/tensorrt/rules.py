"""TensorRT rule tables: the GPU per TensorRT version, and Orin's DLA with its fallback to the GPU.

Sources (facts transcribed; the documents are Apache-2.0):
- GPU, per TensorRT version: onnx/onnx-tensorrt docs/operators.md at release/8.5-GA (3b008c46),
  release/8.6-GA (6ba67d34), release/10.1-GA (96e78110) and the TensorRT 10.15 revision
  (shared/reference/tensorrt/onnx-tensorrt_operators_TRT*.md), via op_tables.py.
- DLA operators: NVIDIA/Deep-Learning-Accelerator-SW operators/README.md (ea61780e; Orin DLA
  3.12-3.14, TensorRT 8.5.2-8.6.12) and FAQ/README.md (precisions: FP16 and INT8 only).
- DLA layer limits: TensorRT's include/NvInfer.h, the "If executing this layer on DLA" notes,
  identical in v8.6.1 and v10.7.0 (NVIDIA/TensorRT, Apache-2.0), and NVIDIA's "DLA Supported
  Layers and Restrictions" page (docs.nvidia.com/deeplearning/tensorrt/latest/inference-library/
  dla-layer-restrictions.html: batch <= 4096, non-batch dimensions <= 8192, no dynamic
  dimensions, comparisons INT8 only).

Which table a chip gets (`rule_set(chip, trt_version=..., dla=...)`, listed by rule_set_variants()):
- trt_version "8.5" (JetPack 5.1.x), "8.6" (JetPack 6.0), "10.x" (JetPack 6.1/6.2 ship TensorRT
  10.3; the nearest document is 10.1), "10.15" (the newest document). Default "10.x".
- dla=False: every node on the GPU; an operator the importer lacks is UNSUPPORTED (the build fails).
- dla=True (Orin NX, AGX Orin; the Orin Nano has no DLA): the DLA is the accelerator and the GPU
  the fallback unit (trtexec --useDLACore=N --allowGPUFallback).
"""

from __future__ import annotations

import math

from edgedeploy.audit.rules import NodeView, Offence, OpSupport, Placement, RuleSet, rule
from edgedeploy.errors import OptionError
from edgedeploy.targets.tensorrt import op_tables

# --- versions ------------------------------------------------------------------------------

DEFAULT_TRT_VERSION = "10.x"
# rule_set() name -> the operator document it uses.
TRT_DOCUMENT = {"8.5": "8.5", "8.6": "8.6", "10.x": "10.1", "10.15": "10.15"}
TRT_VERSION_LABEL = {
    "8.5": "TensorRT 8.5 (JetPack 5.1.x)",
    "8.6": "TensorRT 8.6 (JetPack 6.0)",
    "10.x": "TensorRT 10.x (JetPack 6.1/6.2 ship 10.3; table of 10.1)",
    "10.15": "TensorRT 10.15",
}
# Chips with DLA cores, and how many (NVIDIA/Deep-Learning-Accelerator-SW FAQ: all Jetson AGX Orin
# and Orin NX boards have DLA; the Orin Nano has none).
DLA_CORES = {"jetson-orin-nano": 0, "jetson-orin-nx": 2, "jetson-agx-orin": 2}
# DLA ops marked "Native (as of TensorRT 8.6.12)" in the DLA operator README: 8.6.12 is a DRIVE OS
# release; Jetson's 8.6 is 8.6.2 (JetPack 6.0), so these count only from TensorRT 10.
DLA_FIRST_VERSION_WITH_LATE_OPS = "10.x"


def normalize_trt_version(value: str | None) -> str:
    """'8.6.2.3' -> '8.6', '10.3.0' -> '10.x', '10.16' -> '10.15', 'auto'/None -> the default."""
    if value is None or str(value).strip().lower() in ("", "auto"):
        return DEFAULT_TRT_VERSION
    text = str(value).strip().lower().lstrip("v")
    if text in TRT_DOCUMENT:
        return text
    parts = text.split(".")
    try:
        major = int(parts[0])
        minor = int(parts[1]) if len(parts) > 1 and parts[1] not in ("x", "") else None
    except ValueError:
        raise OptionError(f"TensorRT version '{value}' is not a version; use one of {', '.join(TRT_DOCUMENT)}.") from None
    if major == 8 and minor in (5, 6):
        return f"8.{minor}"
    if major == 10:
        return "10.15" if minor is not None and minor >= 15 else "10.x"
    raise OptionError(
        f"TensorRT {value} has no rule table here (tables: {', '.join(TRT_DOCUMENT)}; Jetson Orin ships 8.5, 8.6 or 10.x)."
    )


def _version_at_least(version: str, floor: str) -> bool:
    order = ["8.5", "8.6", "10.x", "10.15"]
    return order.index(version) >= order.index(floor)


def rule_set_variants(chip_id: str) -> list[dict]:
    """Every (trt_version, dla) variant the audit can ask rule_set() for on this chip, default first.

    Each entry: {"trt_version", "dla", "label", "default"}; pass trt_version and dla back to
    `Target.rule_set(chip_id, trt_version=..., dla=...)`. On chips with DLA the default is the
    DLA with GPU fallback (what `edgedeploy build` does); on the Orin Nano, the GPU.
    """
    has_dla = DLA_CORES.get(chip_id, 0) > 0
    variants = []
    for version in [DEFAULT_TRT_VERSION] + [v for v in TRT_DOCUMENT if v != DEFAULT_TRT_VERSION]:
        for dla in ([True, False] if has_dla else [False]):
            unit = "DLA with GPU fallback" if dla else "GPU"
            variants.append(
                {
                    "trt_version": version,
                    "dla": dla,
                    "label": f"{TRT_VERSION_LABEL[version]}, {unit}",
                    "default": version == DEFAULT_TRT_VERSION and dla == has_dla,
                }
            )
    return variants


# --- helpers -------------------------------------------------------------------------------

def _ints(value) -> list[int]:
    if value is None:
        return []
    return [int(v) for v in (value.tolist() if hasattr(value, "tolist") else value)]


def _spatial(node: NodeView, attr: str, default: int) -> list[int]:
    """A per-spatial-axis attribute (kernel_shape, strides, dilations), filled with `default`."""
    kernel = _ints(node.attr("kernel_shape"))
    if not kernel:
        w = node.input(1)
        if w is not None and w.shape is not None and len(w.shape) > 2:
            kernel = [d if isinstance(d, int) else 0 for d in w.shape[2:]]
    if attr == "kernel_shape":
        return kernel
    values = _ints(node.attr(attr))
    return values or [default] * len(kernel)


def _out_of(values, low: int, high: int) -> list[int]:
    return [v for v in values if not (low <= v <= high)]


# --- GPU rules (onnx-tensorrt operator tables) ---------------------------------------------

@rule("AveragePool", "MaxPool", placement=Placement.UNSUPPORTED, POOL_DIMS=(2, 3))
def pooling_must_be_2d_or_3d(node, chip):
    """TensorRT pools over {POOL_DIMS} spatial dimensions only."""
    dims = len(_ints(node.attr("kernel_shape")))
    if dims not in (2, 3):
        return Offence(dims, "spatial dimensions of the pooling window")


@rule("AveragePool", "MaxPool", "LpPool", placement=Placement.UNSUPPORTED)
def pooling_dilations_must_be_one(node, chip):
    """TensorRT 10 pools only with dilations empty or all ones."""
    bad = [d for d in _ints(node.attr("dilations")) if d != 1]
    if bad:
        return Offence(_ints(node.attr("dilations")))


@rule("MaxPool", placement=Placement.UNSUPPORTED)
def maxpool_indices_output_unsupported(node, chip):
    """TensorRT does not produce MaxPool's Indices output."""
    if len(node.outputs) > 1 and node.outputs[1].name:
        return Offence(node.outputs[1].name, "Indices output is consumed")


# Inputs the importer needs as build-time constants, per document. op -> ((index, name), ...)
CONSTANT_INPUTS = {
    "8.5": {"Slice": ((3, "axes"),), "Squeeze": ((1, "axes"),), "Unsqueeze": ((1, "axes"),), "CumSum": ((1, "axis"),),
            "TopK": ((1, "K"),), "InstanceNormalization": ((1, "scale"), (2, "B"))},
    "8.6": {"Slice": ((3, "axes"),), "Squeeze": ((1, "axes"),), "Unsqueeze": ((1, "axes"),), "CumSum": ((1, "axis"),)},
    "10.x": {"Slice": ((3, "axes"),), "Squeeze": ((1, "axes"),), "Unsqueeze": ((1, "axes"),), "CumSum": ((1, "axis"),),
             "Pad": ((3, "axes"),), "OneHot": ((1, "depth"),),
             **{op: ((1, "axes"),) for op in ("ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax",
                                               "ReduceMean", "ReduceMin", "ReduceProd", "ReduceSum", "ReduceSumSquare")}},
    "10.15": {"Squeeze": ((1, "axes"),), "Unsqueeze": ((1, "axes"),), "CumSum": ((1, "axis"),), "OneHot": ((1, "depth"),),
              "STFT": ((1, "frame_step"), (2, "window")),
              **{op: ((1, "axes"),) for op in ("ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax",
                                                "ReduceMean", "ReduceMin", "ReduceProd", "ReduceSum", "ReduceSumSquare")}},
}


def _constant_inputs_rule(version: str):
    required = CONSTANT_INPUTS[version]

    @rule(*required, placement=Placement.UNSUPPORTED, TRT=TRT_VERSION_LABEL[version].split(" (")[0])
    def input_must_be_build_time_constant(node, chip):
        """{TRT}'s ONNX importer needs this input as a build-time constant (an initializer or Constant); fold it first (polygraphy surgeon sanitize --fold-constants)."""
        for index, name in required.get(node.op_type, ()):
            tensor = node.input(index)
            if tensor is not None and not tensor.is_constant:
                return Offence(name, f"input {index} ('{name}') is computed at run time")

    return input_must_be_build_time_constant


# TensorRT's supported Resize attribute values (onnx-tensorrt operator tables, all versions).
RESIZE_COORD_MODES = ("half_pixel", "pytorch_half_pixel", "tf_half_pixel_for_nn", "asymmetric", "align_corners")
RESIZE_MODES = ("nearest", "linear")
RESIZE_NEAREST_MODES = ("floor", "ceil", "round_prefer_floor", "round_prefer_ceil")


@rule("Resize", placement=Placement.UNSUPPORTED, MODES=RESIZE_MODES, COORD_MODES=RESIZE_COORD_MODES, NEAREST_MODES=RESIZE_NEAREST_MODES)
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


@rule("Resize", placement=Placement.UNSUPPORTED)
def resize_no_antialias_keep_stretch(node, chip):
    """TensorRT 10 resizes without antialiasing and with keep_aspect_ratio_policy 'stretch' only."""
    found = []
    if int(node.attr("antialias", 0)) != 0:
        found.append(Offence(node.attr("antialias"), "antialias"))
    policy = node.attr("keep_aspect_ratio_policy", "stretch")
    if policy != "stretch":
        found.append(Offence(policy, "keep_aspect_ratio_policy"))
    return found


@rule("QuantizeLinear", "DequantizeLinear", placement=Placement.UNSUPPORTED)
def quantize_zero_point_must_be_zero(node, chip):
    """TensorRT quantizes symmetrically: the zero point must be 0."""
    zp = node.input(2)
    if zp is not None and zp.value is not None and bool((zp.value != 0).any()):
        return Offence(zp.value.reshape(-1)[:4].tolist(), "zero point")
    if zp is not None and not zp.is_constant:
        return Offence("run-time zero point", "zero point is not a constant")


@rule("Dropout", placement=Placement.UNSUPPORTED)
def dropout_training_mode_must_be_false(node, chip):
    """TensorRT 10 needs Dropout's training_mode as an initializer that is False."""
    mode = node.input(2)
    if mode is None:
        return None
    if not mode.is_constant:
        return Offence("run-time training_mode")
    if mode.value is not None and bool(mode.value.any()):
        return Offence(True, "training_mode is True")


@rule("LSTM", placement=Placement.UNSUPPORTED)
def lstm_input_forget_and_layout_zero(node, chip):
    """TensorRT 10 imports LSTM only with input_forget = 0 and layout = 0."""
    found = []
    for name in ("input_forget", "layout"):
        if int(node.attr(name, 0)) != 0:
            found.append(Offence(node.attr(name), name))
    return found


@rule("LayerNormalization", placement=Placement.UNSUPPORTED)
def layernorm_only_first_output(node, chip):
    """TensorRT 10 produces only LayerNormalization's first output (Y)."""
    extra = [o.name for o in node.outputs[1:] if o.name]
    if extra:
        return Offence(extra, "Mean / InvStdDev outputs are consumed")


@rule("GridSample", placement=Placement.UNSUPPORTED, RANK=4)
def gridsample_must_be_4d(node, chip):
    """TensorRT 10 samples only {RANK}-D inputs with GridSample."""
    x = node.input(0)
    if x is not None and x.rank is not None and x.rank != 4:
        return Offence(x.rank, "input rank")


@rule("ScatterND", placement=Placement.UNSUPPORTED)
def scatternd_no_reduction(node, chip):
    """TensorRT imports ScatterND only without a reduction ('none')."""
    reduction = node.attr("reduction", "none")
    if reduction != "none":
        return Offence(reduction, "reduction")


@rule("TopK", placement=Placement.UNSUPPORTED, TOPK_K_BELOW=3840)
def topk_sorted_and_k_limit(node, chip):
    """TensorRT 10 needs TopK sorted = 1 and K below {TOPK_K_BELOW}."""
    found = []
    if int(node.attr("sorted", 1)) != 1:
        found.append(Offence(0, "sorted"))
    k = node.input(1)
    if k is not None and k.value is not None and k.value.size and int(k.value.reshape(-1)[0]) >= 3840:
        found.append(Offence(int(k.value.reshape(-1)[0]), "K"))
    return found


@rule("Constant", placement=Placement.UNSUPPORTED)
def constant_no_sparse_or_string(node, chip):
    """TensorRT does not import Constant's sparse_value, value_string or value_strings attributes."""
    for name in ("sparse_value", "value_string", "value_strings"):
        if node.has_attr(name):
            return Offence(name)


@rule("Einsum", placement=Placement.UNSUPPORTED)
def einsum_no_ellipsis(node, chip):
    """TensorRT 8.x Einsum supports no ellipsis ('...') in the equation."""
    equation = node.attr("equation", "")
    if "..." in equation:
        return Offence(equation, "ellipsis")


@rule("InstanceNormalization", placement=Placement.UNSUPPORTED, RANK_RANGE=(3, 5))
def instancenorm_rank(node, chip):
    """TensorRT 8.5 normalizes instances of rank {RANK_RANGE} only."""
    x = node.input(0)
    if x is not None and x.rank is not None and not (3 <= x.rank <= 5):
        return Offence(x.rank, "input rank")


@rule("ReverseSequence", placement=Placement.UNSUPPORTED)
def reversesequence_static_shapes(node, chip):
    """TensorRT 8.5 reverses sequences of static shape only."""
    x = node.input(0)
    if x is not None and not x.is_static:
        return Offence(x.shape, "dynamic input shape")


@rule("EyeLike", placement=Placement.UNSUPPORTED)
def eyelike_static_input(node, chip):
    """TensorRT 10 needs EyeLike's input with static dimensions."""
    x = node.input(0)
    if x is not None and not x.is_static:
        return Offence(x.shape, "dynamic input shape")


# Which GPU rules each document states (besides operator presence and data types).
GPU_RULES = {
    "8.5": (pooling_must_be_2d_or_3d, maxpool_indices_output_unsupported, resize_attributes_supported,
            quantize_zero_point_must_be_zero, einsum_no_ellipsis, instancenorm_rank, reversesequence_static_shapes),
    "8.6": (pooling_must_be_2d_or_3d, maxpool_indices_output_unsupported, resize_attributes_supported,
            quantize_zero_point_must_be_zero, einsum_no_ellipsis),
    "10.x": (pooling_must_be_2d_or_3d, pooling_dilations_must_be_one, maxpool_indices_output_unsupported,
             resize_attributes_supported, resize_no_antialias_keep_stretch, quantize_zero_point_must_be_zero,
             dropout_training_mode_must_be_false, lstm_input_forget_and_layout_zero, layernorm_only_first_output,
             gridsample_must_be_4d, scatternd_no_reduction, topk_sorted_and_k_limit, constant_no_sparse_or_string,
             eyelike_static_input),
    "10.15": (pooling_must_be_2d_or_3d, pooling_dilations_must_be_one, maxpool_indices_output_unsupported,
              resize_attributes_supported, resize_no_antialias_keep_stretch, quantize_zero_point_must_be_zero,
              dropout_training_mode_must_be_false, lstm_input_forget_and_layout_zero, layernorm_only_first_output,
              gridsample_must_be_4d, scatternd_no_reduction, topk_sorted_and_k_limit, constant_no_sparse_or_string,
              eyelike_static_input),
}

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


# --- DLA rules ------------------------------------------------------------------------------

# General DLA limits (DLA Supported Layers and Restrictions, "General Restrictions").
DLA_MAX_BATCH = 4096
DLA_MAX_DIM = 8192


def _batch_and_chw(shape: tuple) -> tuple[int, list[int]]:
    """DLA's batch is the product of every dimension except the last three (C, H, W)."""
    dims = list(shape)
    head, chw = dims[:-3], dims[-3:]
    return (math.prod(head) if head else 1), chw


@rule(placement=Placement.FALLBACK)
def dla_static_shapes_only(node, chip):
    """DLA does not support dynamic dimensions; the layer runs on the GPU."""
    for t in list(node.inputs) + list(node.outputs):
        if t.present and not t.is_constant and t.shape is not None and not t.is_static:
            return Offence(t.shape, f"tensor '{t.name}'")


@rule(placement=Placement.FALLBACK, DLA_MAX_BATCH=DLA_MAX_BATCH, DLA_MAX_DIM=DLA_MAX_DIM)
def dla_batch_and_dimension_limits(node, chip):
    """DLA runs batches up to {DLA_MAX_BATCH} (the product of all dimensions but C, H, W) and non-batch dimensions up to {DLA_MAX_DIM}."""
    for t in node.outputs:
        if not t.present or not t.is_static or not t.shape:
            continue
        batch, chw = _batch_and_chw(t.shape)
        if batch > DLA_MAX_BATCH:
            return Offence(batch, f"batch of '{t.name}'")
        big = [d for d in chw if d > DLA_MAX_DIM]
        if big:
            return Offence(max(big), f"dimension of '{t.name}'")


# Convolution / fully connected (NvInfer.h IConvolutionLayer, DLA notes).
DLA_CONV_KERNEL = (1, 32)
DLA_CONV_STRIDE = (1, 8)
DLA_CONV_DILATION = (1, 32)
DLA_CONV_PADDING = (0, 31)
DLA_MAX_OUTPUT_MAPS = 8192
DLA_MAX_GROUPS = 8192


@rule("Conv", placement=Placement.FALLBACK, DLA_CONV_KERNEL=DLA_CONV_KERNEL, DLA_CONV_STRIDE=DLA_CONV_STRIDE,
      DLA_CONV_DILATION=DLA_CONV_DILATION, DLA_CONV_PADDING=DLA_CONV_PADDING)
def dla_convolution_limits(node, chip):
    """DLA convolves in 2D only, with kernel sizes in {DLA_CONV_KERNEL}, strides in {DLA_CONV_STRIDE}, dilations in {DLA_CONV_DILATION} and padding in {DLA_CONV_PADDING} and smaller than the kernel."""
    kernel = _spatial(node, "kernel_shape", 1)
    if len(kernel) != 2:
        return Offence(len(kernel), "spatial dimensions (2D only)")
    found = []
    if _out_of(kernel, *DLA_CONV_KERNEL):
        found.append(Offence(kernel, "kernel size"))
    strides = _spatial(node, "strides", 1)
    if _out_of(strides, *DLA_CONV_STRIDE):
        found.append(Offence(strides, "stride"))
    dilations = _spatial(node, "dilations", 1)
    if _out_of(dilations, *DLA_CONV_DILATION):
        found.append(Offence(dilations, "dilation"))
    pads = _ints(node.attr("pads")) or [0, 0, 0, 0]
    if _out_of(pads, *DLA_CONV_PADDING) or any(p >= kernel[i % 2] for i, p in enumerate(pads)):
        found.append(Offence(pads, "padding"))
    if node.attr("auto_pad", "NOTSET") not in ("NOTSET", "VALID"):
        # SAME_* padding is resolved by TensorRT; it still has to satisfy the limits above.
        pass
    return found


@rule("Conv", "ConvTranspose", "Gemm", "MatMul", placement=Placement.FALLBACK,
      DLA_MAX_OUTPUT_MAPS=DLA_MAX_OUTPUT_MAPS, DLA_MAX_GROUPS=DLA_MAX_GROUPS)
def dla_output_maps_and_groups(node, chip):
    """DLA produces at most {DLA_MAX_OUTPUT_MAPS} output channels per convolution or fully connected layer, in at most {DLA_MAX_GROUPS} groups."""
    found = []
    w = node.input(1)
    if w is not None and w.shape is not None and w.shape:
        if node.op_type == "Conv":
            maps = w.shape[0]
        elif node.op_type == "ConvTranspose":
            maps = w.shape[1] * int(node.attr("group", 1)) if isinstance(w.shape[1], int) else None
        elif node.op_type == "Gemm":
            maps = w.shape[0] if int(node.attr("transB", 0)) else w.shape[-1]
        else:
            maps = w.shape[-1]
        if isinstance(maps, int) and maps > DLA_MAX_OUTPUT_MAPS:
            found.append(Offence(maps, "output channels"))
    groups = int(node.attr("group", 1))
    if groups > DLA_MAX_GROUPS:
        found.append(Offence(groups, "groups"))
    return found


@rule("Gemm", "MatMul", placement=Placement.FALLBACK)
def dla_fully_connected_needs_constant_weights(node, chip):
    """DLA runs Gemm/MatMul only as a fully connected layer: the second input must be a constant."""
    w = node.input(1)
    if w is not None and not w.is_constant:
        return Offence("run-time second input")


# Deconvolution (NvInfer.h IDeconvolutionLayer, DLA notes; docs: no grouped/dilated, padding 0).
DLA_DECONV_RANGE = (1, 32)
DLA_DECONV_LONG_SIDES = (64, 96, 128)


def _deconv_ok(values: list[int]) -> bool:
    if all(DLA_DECONV_RANGE[0] <= v <= DLA_DECONV_RANGE[1] for v in values):
        return True
    # One side 64, 96 or 128 and the other 1: [1x64] or [64x1], not [64x64].
    return sorted(values) in ([1, s] for s in DLA_DECONV_LONG_SIDES)


@rule("ConvTranspose", placement=Placement.FALLBACK, DLA_DECONV_RANGE=DLA_DECONV_RANGE, DLA_DECONV_LONG_SIDES=DLA_DECONV_LONG_SIDES)
def dla_deconvolution_limits(node, chip):
    """DLA deconvolves in 2D only, ungrouped, undilated and without padding, with kernel sizes and strides in {DLA_DECONV_RANGE} (or {DLA_DECONV_LONG_SIDES} on one side and 1 on the other)."""
    kernel = _spatial(node, "kernel_shape", 1)
    if len(kernel) != 2:
        return Offence(len(kernel), "spatial dimensions (2D only)")
    found = []
    if not _deconv_ok(kernel):
        found.append(Offence(kernel, "kernel size"))
    strides = _spatial(node, "strides", 1)
    if not _deconv_ok(strides):
        found.append(Offence(strides, "stride"))
    pads = _ints(node.attr("pads"))
    if any(pads):
        found.append(Offence(pads, "padding must be 0"))
    if int(node.attr("group", 1)) != 1:
        found.append(Offence(int(node.attr("group")), "groups must be 1"))
    if any(d != 1 for d in _ints(node.attr("dilations"))):
        found.append(Offence(_ints(node.attr("dilations")), "dilation must be 1"))
    return found


# Pooling (NvInfer.h IPoolingLayer, DLA notes).
DLA_POOL_WINDOW = (1, 8)
DLA_POOL_STRIDE = (1, 16)
DLA_POOL_PADDING = (0, 7)


@rule("MaxPool", "AveragePool", placement=Placement.FALLBACK, DLA_POOL_WINDOW=DLA_POOL_WINDOW,
      DLA_POOL_STRIDE=DLA_POOL_STRIDE, DLA_POOL_PADDING=DLA_POOL_PADDING)
def dla_pooling_limits(node, chip):
    """DLA pools in 2D only, with windows in {DLA_POOL_WINDOW}, strides in {DLA_POOL_STRIDE} and padding in {DLA_POOL_PADDING}."""
    window = _ints(node.attr("kernel_shape"))
    if len(window) != 2:
        return Offence(len(window), "spatial dimensions (2D only)")
    found = []
    if _out_of(window, *DLA_POOL_WINDOW):
        found.append(Offence(window, "window size"))
    strides = _ints(node.attr("strides")) or [1, 1]
    if _out_of(strides, *DLA_POOL_STRIDE):
        found.append(Offence(strides, "stride"))
    pads = _ints(node.attr("pads")) or [0, 0, 0, 0]
    if _out_of(pads, *DLA_POOL_PADDING):
        found.append(Offence(pads, "padding"))
    return found


@rule("Concat", placement=Placement.FALLBACK, DLA_CONCAT_MIN_INPUTS=2)
def dla_concat_channel_axis(node, chip):
    """DLA concatenates at least {DLA_CONCAT_MIN_INPUTS} inputs, along the channel axis (the third from last) only."""
    x = node.input(0)
    rank = x.rank if x is not None else None
    found = []
    if len([t for t in node.inputs if t.present]) < 2:
        found.append(Offence(len(node.inputs), "inputs"))
    if rank is not None:
        axis = int(node.attr("axis", 0))
        axis = axis + rank if axis < 0 else axis
        if axis != rank - 3:
            found.append(Offence(axis, f"axis of a rank-{rank} tensor (channel axis is {rank - 3})"))
    return found


@rule("PRelu", placement=Placement.FALLBACK)
def dla_prelu_constant_slope(node, chip):
    """DLA needs the PRelu slope as a build-time constant."""
    slope = node.input(1)
    if slope is not None and not slope.is_constant:
        return Offence("run-time slope")


DLA_LRN_SIZES = (3, 5, 7, 9)


@rule("LRN", placement=Placement.FALLBACK, DLA_LRN_SIZES=DLA_LRN_SIZES)
def dla_lrn_window(node, chip):
    """DLA runs LRN with window sizes {DLA_LRN_SIZES} only."""
    size = int(node.attr("size", 0))
    if size not in DLA_LRN_SIZES:
        return Offence(size, "size")


# Softmax (NvInfer.h ISoftMaxLayer, DLA notes).
DLA_SOFTMAX_AXIS_MAX = 8192
DLA_SOFTMAX_AXIS_MAX_WITH_OTHERS = 1024


@rule("Softmax", placement=Placement.FALLBACK, DLA_SOFTMAX_AXIS_MAX=DLA_SOFTMAX_AXIS_MAX,
      DLA_SOFTMAX_AXIS_MAX_WITH_OTHERS=DLA_SOFTMAX_AXIS_MAX_WITH_OTHERS)
def dla_softmax_limits(node, chip):
    """DLA takes Softmax over a channel or spatial axis only, of at most {DLA_SOFTMAX_AXIS_MAX} elements ({DLA_SOFTMAX_AXIS_MAX_WITH_OTHERS} when another non-batch dimension is larger than 1)."""
    x = node.input(0)
    if x is None or x.shape is None:
        return None
    rank = len(x.shape)
    axis = int(node.attr("axis", -1 if node.opset >= 13 else 1))
    axis = axis + rank if axis < 0 else axis
    if axis < rank - 3:
        return Offence(axis, "batch axis")
    size = x.shape[axis]
    if not isinstance(size, int):
        return None
    others = [d for i, d in enumerate(x.shape) if i >= max(rank - 3, 0) and i != axis]
    limit = DLA_SOFTMAX_AXIS_MAX if all(d == 1 for d in others) else DLA_SOFTMAX_AXIS_MAX_WITH_OTHERS
    if size > limit:
        return Offence(size, f"axis size (limit {limit})")


@rule("Slice", "Split", placement=Placement.FALLBACK, DLA_SLICE_RANK=4)
def dla_slice_limits(node, chip):
    """DLA slices {DLA_SLICE_RANK}-D tensors only, with constant starts/ends/axes, steps of 1 and never along the first dimension."""
    x = node.input(0)
    found = []
    if x is not None and x.rank is not None and x.rank != 4:
        found.append(Offence(x.rank, "input rank"))
    rank = x.rank if x is not None and x.rank is not None else 4
    if node.op_type == "Split":
        axis = int(node.attr("axis", 0))
        if (axis + rank if axis < 0 else axis) == 0:
            found.append(Offence(0, "split along the first dimension"))
        return found
    for index, name in ((1, "starts"), (2, "ends"), (3, "axes"), (4, "steps")):
        t = node.input(index)
        if t is not None and not t.is_constant:
            found.append(Offence(name, "run-time input"))
    steps = node.input(4)
    if steps is not None and steps.value is not None and bool((steps.value != 1).any()):
        found.append(Offence(steps.value.tolist(), "steps"))
    axes = node.input(3)
    starts, ends = node.input(1), node.input(2)
    if axes is not None and axes.value is not None:
        sliced_axes = [a + rank if a < 0 else a for a in axes.value.reshape(-1).tolist()]
    elif starts is not None and starts.value is not None:
        sliced_axes = list(range(starts.value.size))
    else:
        sliced_axes = []
    if 0 in sliced_axes and x is not None and x.shape:
        # Slicing the full range of dim 0 is not slicing it.
        pos = sliced_axes.index(0)
        full = (
            starts is not None and starts.value is not None and int(starts.value.reshape(-1)[pos]) == 0
            and ends is not None and ends.value is not None
            and isinstance(x.shape[0], int) and int(ends.value.reshape(-1)[pos]) >= x.shape[0]
        )
        if not full:
            found.append(Offence(0, "slice along the first dimension"))
    return found


# Resize on DLA (NvInfer.h IResizeLayer, DLA notes): modes and integer scales.
DLA_RESIZE_NEAREST_SCALE = (1, 32)
DLA_RESIZE_LINEAR_SCALE = (1, 4)
DLA_RESIZE_NEAREST_COMBOS = (("asymmetric", "floor"), ("half_pixel", "round_prefer_floor"), ("half_pixel", "round_prefer_ceil"))


def _resize_scales(node: NodeView) -> list[float] | None:
    index = 1 if node.op_type == "Upsample" else 2
    scales = node.input(index)
    if scales is not None and scales.value is not None and scales.value.size:
        return [float(v) for v in scales.value.reshape(-1)]
    sizes = node.input(3) if node.op_type == "Resize" else None
    x = node.input(0)
    if sizes is not None and sizes.value is not None and x is not None and x.is_static and len(x.shape) == sizes.value.size:
        return [float(o) / float(i) if i else 0.0 for o, i in zip(sizes.value.reshape(-1).tolist(), x.shape)]
    return None


@rule("Resize", "Upsample", placement=Placement.FALLBACK, DLA_RESIZE_NEAREST_SCALE=DLA_RESIZE_NEAREST_SCALE,
      DLA_RESIZE_LINEAR_SCALE=DLA_RESIZE_LINEAR_SCALE)
def dla_resize_limits(node, chip):
    """DLA resizes 4-D tensors over H and W only, by integer scales in {DLA_RESIZE_NEAREST_SCALE} (nearest: asymmetric+floor or half_pixel+round_prefer_*) or {DLA_RESIZE_LINEAR_SCALE} (linear: half_pixel)."""
    found = []
    mode = node.attr("mode", "nearest")
    coord = node.attr("coordinate_transformation_mode", "half_pixel" if node.op_type == "Resize" else "asymmetric")
    nearest = node.attr("nearest_mode", "round_prefer_floor" if node.op_type == "Resize" else "floor")
    if mode == "nearest":
        if (coord, nearest) not in DLA_RESIZE_NEAREST_COMBOS:
            found.append(Offence(f"{coord}/{nearest}", "coordinate transformation / nearest mode"))
        limits = DLA_RESIZE_NEAREST_SCALE
    elif mode == "linear":
        if coord != "half_pixel":
            found.append(Offence(coord, "coordinate transformation"))
        limits = DLA_RESIZE_LINEAR_SCALE
    else:
        return Offence(mode, "mode")
    scales = _resize_scales(node)
    if scales is None:
        return found + [Offence("run-time scales", "scales must be known at build time")]
    if len(scales) != 4 or scales[0] != 1 or scales[1] != 1:
        found.append(Offence(scales, "scales must be [1, 1, h, w]"))
    elif any(s != int(s) or not (limits[0] <= s <= limits[1]) for s in scales[2:]):
        found.append(Offence(scales[2:], "H/W scales"))
    return found


# Operators that map to one DLA layer each, by the README's layer references.
DLA_ACTIVATIONS = ("Relu", "Sigmoid", "Tanh", "Clip", "LeakyRelu")
DLA_COMPARISONS = ("Equal", "Greater", "Less")

DLA_RULES = (
    dla_static_shapes_only,
    dla_batch_and_dimension_limits,
    dla_convolution_limits,
    dla_output_maps_and_groups,
    dla_fully_connected_needs_constant_weights,
    dla_deconvolution_limits,
    dla_pooling_limits,
    dla_concat_channel_axis,
    dla_prelu_constant_slope,
    dla_lrn_window,
    dla_softmax_limits,
    dla_slice_limits,
    dla_resize_limits,
)


def dla_op_support(version: str) -> dict[str, OpSupport]:
    """The ONNX ops Orin's DLA runs through TensorRT `version` (README 'Native' or folded at build time)."""
    out = {}
    for op, (level, as_of, note) in op_tables.DLA_OPS.items():
        if level == "native":
            if as_of is not None and not _version_at_least(version, DLA_FIRST_VERSION_WITH_LATE_OPS):
                continue
            # Comparisons run in INT8 only (DLA Supported Layers and Restrictions); everything
            # else in FP16 and INT8 (DLA FAQ: "FP16 and INT8").
            precisions = ("int8",) if op in DLA_COMPARISONS else ("fp16", "int8")
            out[op] = OpSupport(precisions=precisions, note=note)
        elif level == "build_time":
            out[op] = OpSupport(precisions=("any",), note="folded into constants at build time")
    # Upsample (opset < 10) shares Resize's DLA layer (README: "See Resize layer").
    return out


def dla_reconstruction_notes() -> dict[str, str]:
    """Ops the README says can reach the DLA only when rewritten ('Reconstruction'), with the hint."""
    return {op: note for op, (level, _as_of, note) in op_tables.DLA_OPS.items() if level == "reconstruction"}


# --- the rule sets --------------------------------------------------------------------------

def rule_set(chip_id: str, trt_version: str | None = DEFAULT_TRT_VERSION, dla: bool | None = None, **_options) -> RuleSet:
    """The RuleSet for one Jetson chip: GPU for a TensorRT version, or DLA with GPU fallback.

    dla=None picks the chip's default: the DLA where the chip has one (the build's default).
    """
    if chip_id not in DLA_CORES:
        raise OptionError(f"'{chip_id}' is not a Jetson Orin chip; TensorRT rules exist for {', '.join(DLA_CORES)}.")
    version = normalize_trt_version(trt_version)
    doc = TRT_DOCUMENT[version]
    has_dla = DLA_CORES[chip_id] > 0
    if dla is None:
        dla = has_dla
    if dla and not has_dla:
        raise OptionError(f"The {chip_id} has no DLA; audit or build it for the GPU (without --dla).")
    gpu_ops = gpu_op_support(version)
    min_opset, max_opset = op_tables.GPU_OPSETS[doc]
    gpu_rules = list(GPU_RULES[version]) + [_constant_inputs_rule(version)]
    notes = [
        f"GPU table: onnx-tensorrt operators.md for TensorRT {doc}; opsets {min_opset}..{max_opset}.",
        "Custom-domain operators need a TensorRT plugin on the device; without one the build fails.",
    ]
    if doc in ("10.1", "10.15"):
        notes.append("TensorRT 10 documents INT8 only as a quantized type: which layers run in INT8 shows in the build's layer information.")
    source_gpu = f"onnx/onnx-tensorrt docs/operators.md ({TRT_VERSION_LABEL[version]})"
    if not dla:
        return RuleSet(
            target="tensorrt",
            chip=chip_id,
            toolchain_version=TRT_VERSION_LABEL[version],
            source=source_gpu,
            accelerator_ops=gpu_ops,
            rules=gpu_rules,
            fallback_ops=frozenset(),  # no unit below the GPU: an op it lacks fails the build
            fallback_unit="GPU",
            min_opset=min_opset,
            max_opset=max_opset,
            notes=notes,
        )
    dla_ops = {op: s for op, s in dla_op_support(version).items() if op in gpu_ops}
    notes += [
        "DLA table: NVIDIA/Deep-Learning-Accelerator-SW operators/README.md (Orin, TensorRT 8.5.2-8.6.12); "
        "limits: TensorRT NvInfer.h DLA notes (8.6.1 = 10.7.0) and the DLA Supported Layers and Restrictions page.",
        "Ops marked 'Native (as of TensorRT 8.6.12)' (a DRIVE OS release) count only from TensorRT 10 on Jetson.",
        "DLA runs FP16 and INT8 only: an fp32 build places every layer on the GPU.",
        "Layers falling back to the GPU are not checked against the GPU's own limits in this table.",
    ]
    recon = dla_reconstruction_notes()
    if recon:
        notes.append("Reachable on DLA only when rewritten (README 'Reconstruction'): " + ", ".join(sorted(recon)) + ".")
    return RuleSet(
        target="tensorrt",
        chip=chip_id,
        toolchain_version=f"{TRT_VERSION_LABEL[version]}, DLA (GPU fallback)",
        source=f"{source_gpu}; NVIDIA/Deep-Learning-Accelerator-SW operators/README.md; TensorRT NvInfer.h DLA notes",
        accelerator_ops=dla_ops,
        rules=list(DLA_RULES) + gpu_rules,
        fallback_ops=frozenset(gpu_ops),
        fallback_unit="GPU",
        min_opset=min_opset,
        max_opset=max_opset,
        notes=notes,
    )
