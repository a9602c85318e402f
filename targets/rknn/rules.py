"""RKNN rule table: where rknn-toolkit2 puts each ONNX operator on each Rockchip chip, and why.

Facts transcribed (not copied: the documents' licence forbids redistributing their text) from:

- DOC_COMPILER: "RKNN Compiler Support Operator List" v2.3.2 (Rockchip NPU team, 2025-03-28),
  shipped with rknn-toolkit2 v2.3.2. Chapter 3 lists the NPU operators and their limits per chip
  platform (3.1 RK3566/RK3568, 3.2 RK3588, 3.3 RK3562, 3.4 RV1103/RV1106, 3.5 RK3576); chapter 4
  the CPU operators of the runtime (4.1: the RV1103/RV1106 runtime has only a few of them).
  Section numbers below are that document's (e.g. "3.2.54" = RK3588, Resize).
- DOC_ONNX: "RKNNToolKit2 OPs Support" 2.3.2 (the ONNX operators the toolkit imports, opset <= 19).
- OBSERVED: what rknn-toolkit2 2.5.0 (the version edgedeploy installs) actually does, read from
  its layer table on ONNX's backend node tests and on single-operator models with constant
  weights (scripts/rknn_node_agreement.py; figures in docs/agreement/rknn.md).
  Where 2.5.0 differs from the 2.3.2 documents, the observed behaviour wins, because it is what
  the user's build will do; every such fact says OBSERVED in its comment.

The main differences the measurements found: 2.5.0 splits convolutions and poolings beyond the
documented kernel/stride/pad limits into several NPU layers instead of leaving the NPU; it runs
nearly every ONNX operator it has no NPU kernel for on the CPU (not only chapter 4's list); and
it refuses models whose shape-like inputs (Resize scales, Slice starts, reduction axes, ...) are
computed at run time.
"""

from __future__ import annotations

import numpy as np

from edgedeploy.audit.rules import NodeView, Offence, OpSupport, Placement, RuleSet

# The toolkit's own graph passes register on RULES when passes.py is imported.
from edgedeploy.targets.rknn import passes as _passes  # noqa: F401
from edgedeploy.targets.rknn.registry import CHIPS, RULES, TOOLKIT_OBSERVED

DOC_COMPILER = "RKNN Compiler Support Operator List v2.3.2 (2025-03-28)"
DOC_ONNX = "RKNNToolKit2 OPs Support 2.3.2"
SOURCE = f"{DOC_COMPILER}; {DOC_ONNX}; behaviour of {TOOLKIT_OBSERVED} where the documents are silent or differ"

# The document's NPU section for each chip.
CHIP_SECTION = {"rk3566": "3.1", "rk3568": "3.1", "rk3588": "3.2", "rk3562": "3.3", "rv1106": "3.4", "rk3576": "3.5"}

# --- The toolkit's ONNX importer -------------------------------------------------------------
MAX_OPSET = 19  # DOC_ONNX; OBSERVED: load_onnx refuses "Unsupport onnx opset N, need <= 19"
MIN_OPSET = 1

# --- NPU operators per chip -------------------------------------------------------------------
# DOC_COMPILER chapter 3 section headings (internal operator names). NPU_COMMON: in every
# chip's section.
NPU_COMMON = frozenset(
    {
        "Add", "BatchNormalization", "Concat", "Convolution", "DepthwiseConvolution", "ConvTranspose", "Div",
        "Expand", "LSTM", "Max", "Mul", "Pad", "MaxPool", "GlobalMaxPool", "AveragePool", "GlobalAveragePool",
        "Pow", "Relu", "Clip", "PRelu", "LeakyRelu", "Reshape", "Resize", "Slice", "Split", "Sub", "Tile",
        "Transpose", "Sigmoid", "Tanh", "Softplus", "HardSigmoid", "HardSwish", "Elu", "exSwish", "exMish",
        "exGelu", "Where", "exGlu", "exMatMul", "exWindow",
    }
)  # fmt: skip
NPU_EXTRA = {
    # 3.1: no Softmax/Hardmax/exSDPAttention on RK3566/RK3568; exSwooshR/L only here and on RK3588.
    "rk3566": frozenset({"GRU", "Gather", "Min", "exNorm", "exSwooshR", "exSwooshL"}),
    "rk3568": frozenset({"GRU", "Gather", "Min", "exNorm", "exSwooshR", "exSwooshL"}),
    # 3.2
    "rk3588": frozenset({"GRU", "Gather", "Min", "exNorm", "exSwooshR", "exSwooshL", "Hardmax", "Softmax", "exSoftmax13", "exSoftmaxMask", "exSDPAttention"}),
    # 3.3: the section has no Min heading.
    "rk3562": frozenset({"GRU", "Gather", "exNorm", "Hardmax", "Softmax", "exSoftmax13", "exSoftmaxMask", "exSDPAttention"}),
    # 3.4: no GRU, Gather or exNorm on RV1103/RV1106.
    "rv1106": frozenset({"Min", "Hardmax", "Softmax", "exSoftmax13", "exSoftmaxMask", "exSDPAttention"}),
    # 3.5: Greater on the NPU only here.
    "rk3576": frozenset({"GRU", "Gather", "Min", "exNorm", "Hardmax", "Softmax", "exSoftmax13", "exSoftmaxMask", "exSDPAttention", "Greater"}),
}


def npu_ops(chip: str) -> frozenset[str]:
    return NPU_COMMON | NPU_EXTRA[chip] | NPU_OBSERVED_EXTRA.get(chip, frozenset())


# 3.4: on RV1103/RV1106 every NPU operator's data type list holds int8 only.
INT8_ONLY_CHIPS = frozenset({"rv1106"})
# Internal operators that compute in float16 on the NPU even in an int8 build, so the ONNX
# operator is "kept in float". 3.x GRU lists float16 only. (3.x also lists Div and exNorm as
# float16 only, but OBSERVED 2.5.0 turns Div by a constant into an int8 Mul and runs exNorm in
# int8; a Softmax is float16 only at the model's output, see softmax_at_model_output.)
NPU_FLOAT16_IN_INT8 = frozenset({"GRU"})

# --- How the toolkit lowers each ONNX operator onto the NPU ------------------------------------
# ONNX operator -> the internal NPU operators it becomes (every one must exist on the chip).
LOWERING: dict[str, tuple[str, ...]] = {
    "Add": ("Add",),
    "Sub": ("Sub",),  # OBSERVED: with a constant operand it becomes an Add
    "Mul": ("Mul",),
    "Div": ("Mul",),  # OBSERVED: only a constant divisor (becomes Mul); see div_by_runtime_tensor
    "Sum": ("Add",),  # OBSERVED: a chain of Adds
    "Neg": ("Mul",),  # OBSERVED
    "Abs": ("LeakyRelu",),  # OBSERVED: convert_abs_to_leakyrelu
    "And": ("Mul",),  # OBSERVED: cvt_bool_and_to_fp_mul
    "BatchNormalization": ("BatchNormalization",),
    "InstanceNormalization": ("exNorm",),  # OBSERVED
    "LayerNormalization": ("exNorm",),  # 3.x exNorm (layer / rms / mean_var); OBSERVED int8
    "LpNormalization": ("exNorm",),  # OBSERVED: the fused L2 normalisation (passes.fuse_l2_normalisation)
    "RMSNormalization": ("exNorm",),  # OBSERVED: the fused RMS normalisation (passes.fuse_rms_normalisation)
    "Concat": ("Concat",),
    "Conv": ("Convolution",),  # depthwise: DepthwiseConvolution (on every chip too)
    "ConvTranspose": ("ConvTranspose",),
    "DepthToSpace": ("ConvTranspose",),  # OBSERVED
    "Expand": ("Expand",),
    "LSTM": ("LSTM",),
    "GRU": ("GRU",),
    "Gather": ("Slice",),  # OBSERVED: constant indices become a Slice or a 1x1 Conv (even on RV1106)
    "Max": ("Max",),
    "Min": ("Min",),
    "Pad": ("Pad",),
    "MaxPool": ("MaxPool",),
    "GlobalMaxPool": ("GlobalMaxPool",),
    "AveragePool": ("AveragePool",),
    "GlobalAveragePool": ("GlobalAveragePool",),
    "ReduceMean": ("Convolution",),  # OBSERVED: a 1x1 or depthwise convolution
    "ReduceSum": ("Convolution",),  # OBSERVED
    "CumSum": ("Convolution",),  # OBSERVED (constant axis)
    "Einsum": ("Convolution",),  # OBSERVED for matrix-product equations
    "Pow": ("Pow",),
    "Relu": ("Relu",),
    "Clip": ("Clip",),
    "PRelu": ("PRelu",),
    "LeakyRelu": ("LeakyRelu",),
    "ThresholdedRelu": ("LeakyRelu",),  # OBSERVED on the NPU
    "Reshape": ("Reshape",),
    "Flatten": ("Reshape",),  # OBSERVED: convert_flatten_to_reshape
    "Squeeze": ("Reshape",),
    "Unsqueeze": ("Reshape",),
    "Identity": ("Reshape",),
    "Dropout": ("Reshape",),
    "Resize": ("Resize",),
    "Upsample": ("Resize",),
    "Slice": ("Slice",),
    "Split": ("Split",),
    "Transpose": ("Transpose",),
    "Tile": ("Tile",),
    "Sin": ("Sin",),  # OBSERVED on RK3576 only (see NPU_OBSERVED_EXTRA)
    "Cos": ("Cos",),
    "ReduceMax": ("ReduceMax",),
    "Sigmoid": ("Sigmoid",),
    "Tanh": ("Tanh",),
    "Softplus": ("Softplus",),
    "HardSigmoid": ("HardSigmoid",),
    "HardSwish": ("HardSwish",),
    "Elu": ("Elu",),
    "Where": ("Where",),
    "MatMul": ("exMatMul",),  # OBSERVED: convert_matmul_to_exmatmul (a Conv for constant weights)
    "Gemm": ("exMatMul",),  # OBSERVED: convert_gemm_by_exmatmul
    "Softmax": ("exSoftmax13",),  # OBSERVED: convert_softmax_to_exsoftmax13
    "Hardmax": ("Hardmax",),
    # ONNX's Gelu needs opset 20, which the importer refuses; the audit's lowering makes one of
    # the exact GELU chain, which the toolkit fuses into exGelu (targets/rknn/passes.py).
    "Gelu": ("exGelu",),
    "Greater": ("Greater",),
    "Cast": ("Cast",),  # OBSERVED on RK3588 and RK3566, a bool to float only (cast_other_than_bool_to_float)
}
# Internal operators 2.5.0 runs on a chip's NPU beyond chapter 3's headings (OBSERVED).
NPU_OBSERVED_EXTRA = {"rk3576": frozenset({"Sin", "Cos", "ReduceMax"}), "rk3588": frozenset({"Cast"}), "rk3566": frozenset({"Cast"})}
# ONNX operators the documents put on the NPU that 2.5.0 runs on the CPU (OBSERVED): Min (3.x
# lists it), Mish (3.x lists exMish), Tile (3.x lists it; on the NPU only on RK3566/RK3568), and
# on RK3566/RK3568 Transpose (3.1 lists it, with layout limits).
OBSERVED_ON_CPU_ALL = frozenset({"Min", "Mish", "Tile"})
OBSERVED_ON_CPU = {
    # RK3588 places a Tile by its axes (tile_by_its_axes), as RK3566 does.
    "rk3588": frozenset({"Min", "Mish"}),
    "rk3566": frozenset({"Min", "Mish", "Transpose"}),
    "rk3568": frozenset({"Min", "Mish", "Transpose"}),
}

# --- The CPU side -----------------------------------------------------------------------------
# 4.1: the RV1103/RV1106 runtime has only these CPU operators (ONNX names).
CPU_OPS_RV1106 = frozenset({"Concat", "Div", "LayerNormalization", "Exp", "Gather", "ReduceL2", "ReduceMax", "Reshape", "ScatterND", "Softmax"})
# Operators the importer evaluates at conversion time (shapes and constants are static).
CONVERSION_TIME_OPS = frozenset({"Constant", "ConstantOfShape", "Shape", "Size", "EyeLike"})

# OBSERVED: operators the toolkit refuses whatever their inputs (they make the graph dynamic,
# hold sequences or optionals, or fail inside the toolkit's own shape inference).
REFUSED_OPS = frozenset(
    {
        "NonMaxSuppression", "NonZero", "Loop", "If", "DynamicQuantizeLinear", "Unique", "Compress",
        "SequenceAt", "SequenceConstruct", "SequenceEmpty", "SequenceErase", "SequenceInsert", "SequenceLength",
        "SequenceMap", "ConcatFromSequence", "SplitToSequence", "Optional", "OptionalGetElement",
        "OptionalHasElement", "BlackmanWindow", "HammingWindow", "HannWindow", "CenterCropPad", "Col2Im",
        "STFT", "MelWeightMatrix", "Trilu", "StringNormalizer", "RegexFullMatch", "StringSplit",
        "StringConcat", "RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Bernoulli",
        "Multinomial",
    }
)  # fmt: skip

# Inputs that must be constants (their values fix the graph's shapes). OBSERVED: with a run-time
# value the toolkit stops ("Remove <op> manually", "Can not find tensor value info", ...).
STATIC_INPUTS: dict[str, tuple[int, ...]] = {
    "Reshape": (1,),
    "Resize": (1, 2, 3),
    "Upsample": (1,),
    "Slice": (1, 2, 3, 4),
    "Split": (1,),
    "Expand": (1,),
    "Tile": (1,),
    "Pad": (1, 2, 3),
    # Not Clip (the seed had its min and max here, from the 2.3.2 documents): 2.5.0 builds a Clip at a run-time
    # scalar floor and ceiling on the NPU (tests/forms_models.py mel_forms_pack; openWakeWord's power_to_db floor).
    "Squeeze": (1,),
    "Unsqueeze": (1,),
    "ReduceMean": (1,),
    "ReduceSum": (1,),
    "ReduceMax": (1,),
    "ReduceMin": (1,),
    "ReduceL2": (1,),
    "CumSum": (1,),
    "TopK": (1,),
    "OneHot": (1,),
    "ConstantOfShape": (0,),
    "Range": (0, 1, 2),
    "ConvInteger": (2, 3),
    "QLinearConv": (1, 2, 4, 5, 6, 7),
    "QLinearMatMul": (1, 2, 4, 5, 6, 7),
    "QuantizeLinear": (1, 2),
    "DequantizeLinear": (1, 2),
    "PRelu": (1,),  # OBSERVED: a run-time slope fails in the importer
    "BatchNormalization": (1, 2, 3, 4),  # OBSERVED: run-time statistics abort the build
}

# --- Documented limits the 2.5.0 toolkit still enforces (OBSERVED to change the placement) ------
CONVT_STRIDES_POW2 = (1, 2, 4, 8, 16)  # 3.1/3.2 ConvTranspose: 1, 2, 4, 8 (OBSERVED: 16 in two layers)
POW_EXPONENTS = (1.0, 2.0, 3.0)  # 3.x Pow lists 0, 1, 2, 3, 0.5, -0.5; OBSERVED: 0, 0.5, -0.5 run on the CPU
SLICE_STEP_MAX = 1  # 3.x.55 Slice: steps other than 1 only in a corner case; OBSERVED: |step| > 1 on the CPU
HARDMAX_RANK = 4  # OBSERVED: Hardmax runs on the NPU only on 4-D tensors ...
HARDMAX_AXES = (1, 3)  # ... across channels or width (3.5 lists axis -1, 1, 3)
MAX_RANK_ON_NPU = 4  # OBSERVED: the NPU Max takes 4-D tensors; lower ranks run on the CPU

# Tensor element types the toolkit has (OBSERVED: others stop it: "Not support input data type").
RUNTIME_DTYPES = ("float32", "float16", "float64", "int8", "uint8", "int32", "int64", "bool")  # float64: converted to float32
# OBSERVED: in an int8 build these operators abort the compiler ("Can not find quantize
# information") when a data input is an integer or boolean tensor computed at run time.
INTEGER_ARITHMETIC_OPS = frozenset(
    {
        "Add", "Sub", "Mul", "Div", "Max", "Min", "Equal", "Greater", "GreaterOrEqual", "Less",
        "LessOrEqual", "Or", "Xor", "Not", "BitwiseAnd", "BitwiseOr", "BitwiseXor", "BitwiseNot", "Where",
        "MatMulInteger", "GatherND", "Clip",
    }
)  # fmt: skip
# The data inputs of those operators where not every input is data.
INTEGER_DATA_INPUTS = {"Where": (1, 2), "GatherND": (0,), "Clip": (0,)}
INTEGER_DTYPES = ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "bool")


def _ints(value) -> list[int]:
    return [int(v) for v in value] if value is not None else []


def _known(t) -> bool:
    """Known when the model is compiled: a constant, or folded from constants and static shapes."""
    return t.is_constant or getattr(t, "foldable", False)


def _used(t) -> bool:
    """A node output something uses: a node reads it or it is a model output (unknown: used)."""
    return t.present and (t.is_model_output or t.consumers is None or bool(t.consumers))


def _runtime_inputs(node: NodeView, positions) -> list:
    return [t for i, t in enumerate(node.inputs) if i in positions and t.present and not _known(t)]


# ----------------------------------------------------------------------------------------------
# Rules that stop the build (UNSUPPORTED), on any node.
# ----------------------------------------------------------------------------------------------


@RULES.rule(placement=Placement.UNSUPPORTED, DTYPES=RUNTIME_DTYPES)
def tensor_type_not_in_toolkit(node: NodeView, chip: str):
    """rknn-toolkit2 has no tensors of this element type (only {DTYPES}) and refuses the model."""
    for t in (*node.inputs, *node.outputs):
        if t.present and t.dtype is not None and t.dtype not in RUNTIME_DTYPES:
            return Offence(t.dtype, f"tensor {t.name}")
    return None


@RULES.rule(placement=Placement.UNSUPPORTED)
def empty_tensor(node: NodeView, chip: str):
    """rknn-toolkit2 refuses run-time tensors with a dimension of size 0."""
    for t in (*node.inputs, *node.outputs):
        if t.present and not _known(t) and t.shape is not None and any(d == 0 for d in t.shape):
            return Offence(tuple(t.shape), f"tensor {t.name}")
    return None


@RULES.rule(placement=Placement.UNSUPPORTED, DOMAIN="ai.onnx")
def operator_domain_not_onnx(node: NodeView, chip: str):
    """rknn-toolkit2 imports operators of the standard ONNX domain only ({DOMAIN})."""
    return Offence(node.domain) if node.domain not in ("", "ai.onnx") else None


@RULES.rule(*REFUSED_OPS, placement=Placement.UNSUPPORTED)
def operator_refused(node: NodeView, chip: str):
    """rknn-toolkit2 refuses this operator: it makes shapes depend on data, or uses sequences or optionals."""
    return Offence(node.op_type)


@RULES.rule(*STATIC_INPUTS, placement=Placement.UNSUPPORTED)
def shape_input_computed_at_run_time(node: NodeView, chip: str):
    """rknn-toolkit2 needs this input to be a constant (it fixes shapes or parameters); computed at run time, the build stops."""
    late = _runtime_inputs(node, STATIC_INPUTS[node.op_type])
    return [Offence(t.name, f"input {node.inputs.index(t)}") for t in late]


@RULES.rule("Clip", placement=Placement.UNSUPPORTED)
def clip_bound_fed_by_the_caller(node: NodeView, chip: str):
    """rknn-toolkit2 stops on a Clip whose min or max is a model input ("IndexError: list index out of range"); a bound computed in the graph builds (a run-time floor, on the NPU).

    Measured with 2.5.0 on RK3588 and RK3566: ONNX's node test test_clip (min and max model
    inputs) fails the build, in tests/test_rknn_build.py's node-test sweep; openWakeWord's
    Clip(x, ReduceMax(x) - 80) and tests/forms_models.py mel_forms_pack build. A bound that is a
    model input beside a computed one was not probed.
    """
    return [Offence(t.name, f"input {i}") for i, t in enumerate(node.inputs) if i in (1, 2) and t.present and t.is_graph_input]


@RULES.rule("BatchNormalization", placement=Placement.UNSUPPORTED, before_folding=True)
def batchnorm_training_mode(node: NodeView, chip: str):
    """rknn-toolkit2 refuses BatchNormalization in training mode, even one whose every input is a constant it could fold.

    Measured (2.5.0) on NF-Net's weight standardisation (a training-mode BatchNormalization of a
    Conv's constant weight, its statistics ReduceMeans of it: tests/forms_models.py
    weight_standardised_conv) on RK3588, and seen on timm's test_nfnet.
    """
    return Offence(1) if int(node.attr("training_mode", 0)) == 1 else None


@RULES.rule("LayerNormalization")
def layernorm_attribute_left_out(node: NodeView, chip: str):
    """rknn-toolkit2 2.5.0 makes LayerNormalizations NPU exNorm layers only when every one of the model writes its axis and epsilon attributes; where one leaves either at its default (the attribute absent), the model builds and all of them run on the CPU (write both explicitly, even -1 and 1e-5).

    Measured (int8, opset 17, RK3566 and RK3588; tests/forms_models.py layernorm_epsilon_*,
    layernorm_attribute_*; passes.layernorms_of_a_model_with_one_defaulted marks the others). The
    seed's rule layernorm_without_epsilon (2026-11-30, no probe recorded) had the build fail on a
    missing epsilon: no probe's build failed (epsilon absent on a model input [1, 100, 64] or
    [1, 10, 10, 64], after a Linear, scale ones or not).
    """
    if not (node.has_attr("axis") and node.has_attr("epsilon")):
        return Offence("axis or epsilon not written")
    other = node.attr(_passes.LAYERNORM_DEFAULTED_ATTRIBUTE)
    return Offence(other, "another LayerNormalization leaves axis or epsilon out") if other is not None else None


@RULES.rule("LSTM", placement=Placement.UNSUPPORTED)
def lstm_without_bias(node: NodeView, chip: str):
    """rknn-toolkit2 2.5.0 crashes on an LSTM without its bias input B (give zeros)."""
    return Offence("no B input") if node.input(3) is None else None


@RULES.rule("GRU", placement=Placement.UNSUPPORTED)
def gru_final_state_without_sequence(node: NodeView, chip: str):
    """rknn-toolkit2 2.5.0 crashes on a GRU whose final hidden state Y_h is used while its sequence output Y is not (`KeyError: '<Y_h>'` in fold_constant; with Y left unnamed, onnxruntime fails in the toolkit's shape inference); workaround: read the last step of Y instead of Y_h (the same values for a forward GRU), or make Y a model output too.

    OBSERVED with rknn-toolkit2 2.5.0 on every RKNN chip (the corpus's gru_har, and built in
    isolation): a GRU whose Y is read, by a node or as a model output, builds with or without
    Y_h in use; an LSTM in the same form builds.
    """
    y, y_h = node.output(0), node.output(1)
    if y_h is None or not _used(y_h):
        return None
    return Offence(y_h.name, "Y_h used, Y unused") if y is None or not _used(y) else None


# The toolkit's fusion rule that crashes on the Conv -> Reshape -> Slice/Split of a DFL box
# decode, named as its own build log names it (and as edgedeploy passes it to disable_rules).
CONV_RS_SPLIT_RULE = "seperate_conv_rs_split"


@RULES.rule("Reshape", placement=Placement.ACCELERATOR, RULE=CONV_RS_SPLIT_RULE)
def conv_reshape_split_crash_worked_around(node: NodeView, chip: str):
    """rknn-toolkit2 2.5.0's fusion rule {RULE} crashes on some Conv -> Reshape -> Slice/Split chains (the distribution-focal-loss box decode of YOLOv5u/v8/11 heads: `IndexError: list index out of range`) and its build log advises `config(disable_rules=['{RULE}'])`; `edgedeploy build` follows that advice by itself and records it, and this placement is that build's.

    OBSERVED with rknn-toolkit2 2.5.0 on every RKNN chip (yolo11n and yolov5nu of the corpus;
    the head alone, from its three feature maps, crashes the same way). Whether a given chain
    crashes depends on the layouts the toolkit picks: the note says what happens if it does;
    the placement is the same either way.
    """
    x, y = node.input(0), node.output(0)
    if x is None or y is None or x.producer != "Conv" or not y.consumers:
        return None
    return Offence(CONV_RS_SPLIT_RULE, "Conv -> Reshape -> " + "/".join(sorted(set(y.consumers)))) if set(y.consumers) <= {"Slice", "Split"} else None


# OBSERVED: the opsets whose Dropout the toolkit's opset converter refuses when the mask output is
# there (opset 7, 8 and 10..19 import; Dropout-7 in an opset-9 model with its mask does not).
DROPOUT_MASK_REFUSED_OPSETS = (9,)


@RULES.rule("Dropout", placement=Placement.UNSUPPORTED, OPSETS=DROPOUT_MASK_REFUSED_OPSETS)
def dropout_with_mask_in_opset_9(node: NodeView, chip: str):
    """rknn-toolkit2 2.5.0 refuses a Dropout with a mask output in an opset-{OPSETS} model (`Not support 'Dropout' of opset-9!`); workaround: Dropout is the identity at inference, so remove it (`edgedeploy fix` does), or convert the model to opset 10 or later.

    OBSERVED with rknn-toolkit2 2.5.0 on every RKNN chip (the ONNX zoo's squeezenet and
    inception_v1, and built in isolation): without the mask output, or in opsets 7, 8, 10-13,
    the Dropout imports and disappears.
    """
    mask = node.output(1)
    if node.opset in DROPOUT_MASK_REFUSED_OPSETS and mask is not None and mask.present:
        return Offence(node.opset, f"mask output {mask.name}")
    return None


@RULES.rule("Gemm", placement=Placement.UNSUPPORTED)
def gemm_scalar_bias(node: NodeView, chip: str):
    """rknn-toolkit2 2.5.0 fails on a Gemm whose bias C is a scalar or a one-element vector computed at run time ("'NoneType' object has no attribute 'reshape'") where it must be spread over more than one column, and on any such bias that is a model input; a constant one converts.

    Measured with rknn-toolkit2 2.5.0 on RK3588 and RK3566 (2026-12-06, int8, opset 13;
    tests/forms_models.py gemm_one_element_bias_*, gemm_computed_one_element_bias_n1/_n4; found on
    fresh11's pkg_fbcnn, whose quality-factor Gemm [1, 512] x [512, 1] + bias [1] converts): a
    constant bias [1] or [] converts with 1 or 4 columns and 1 or 2 rows; a bias [1] computed at run
    time (the input's mean) converts with 1 column and fails with 4; a model input [1] or [] fails
    with 1 column (the toolkit's reference run wants a rank-2 input) and with 4. The rule before
    (every one-element bias fails) came from ONNX's node tests, whose bias is a model input.
    """
    c = node.input(2)
    if c is None or c.shape is None or not (len(c.shape) == 0 or tuple(c.shape) == (1,)) or _known(c):
        return None
    out = node.output(0)
    columns = out.shape[-1] if out is not None and out.shape else None
    if c.is_graph_input or not isinstance(columns, int) or columns > 1:
        return Offence(tuple(c.shape), "a bias given at run time")
    return None


@RULES.rule("Pow", placement=Placement.UNSUPPORTED)
def pow_scalar_runtime_exponent(node: NodeView, chip: str):
    """rknn-toolkit2 2.5.0 fails on a Pow whose exponent is a scalar computed at run time."""
    e = node.input(1)
    if e is not None and not _known(e) and e.shape is not None and len(e.shape) == 0:
        return Offence("scalar exponent")
    return None


# ----------------------------------------------------------------------------------------------
# Accelerator limits (FALLBACK: the node runs on the CPU).
# ----------------------------------------------------------------------------------------------


@RULES.rule("Div")
def div_by_runtime_tensor(node: NodeView, chip: str):
    """The NPU divides by constants only (as a multiplication); a division by a computed tensor runs on the CPU."""
    d = node.input(1)
    return Offence(d.name, "divisor computed at run time") if d is not None and not _known(d) else None


@RULES.rule("Pow", EXPONENTS=POW_EXPONENTS)
def pow_exponent(node: NodeView, chip: str):
    """The NPU raises to a constant power of {EXPONENTS} only; other exponents run on the CPU."""
    e = node.input(1)
    if e is None or not e.is_constant or e.value is None:
        return Offence("computed at run time")
    bad = sorted({float(v) for v in e.value.reshape(-1)} - set(POW_EXPONENTS))
    return Offence(bad[0] if len(bad) == 1 else tuple(bad)) if bad else None


@RULES.rule("AveragePool")
def average_pool_padding_excluded(node: NodeView, chip: str):
    """The NPU averages over padding (count_include_pad=1) only; a padded AveragePool that excludes it, or uses auto_pad, runs on the CPU."""
    pads = _ints(node.attr("pads"))
    auto = node.attr("auto_pad", "NOTSET")
    if auto not in ("NOTSET", "VALID"):
        return Offence(auto, "auto_pad")
    if any(pads) and int(node.attr("count_include_pad", 0)) == 0:
        return Offence(tuple(pads), "pads with count_include_pad=0")
    return None


def _pool_sizes(node: NodeView) -> tuple[list[int], list[int]] | None:
    """Output sizes of a 2-D pooling with floor and with ceil rounding, or None if unknown."""
    x = node.input(0)
    kernel = _ints(node.attr("kernel_shape"))
    if x is None or x.shape is None or len(x.shape) != 4 or len(kernel) != 2 or not all(isinstance(d, int) for d in x.shape[2:]):
        return None
    strides = _ints(node.attr("strides")) or [1, 1]
    pads = _ints(node.attr("pads")) or [0, 0, 0, 0]
    floor, ceil = [], []
    for i in range(2):
        span = x.shape[2 + i] + pads[i] + pads[i + 2] - kernel[i]
        floor.append(span // strides[i] + 1)
        ceil.append(-(-span // strides[i]) + 1)
    return floor, ceil


@RULES.rule("AveragePool")
def average_pool_ceil_mode(node: NodeView, chip: str):
    """The NPU AveragePool floors its output size (3.x: no ceil_mode); where ceil_mode=1 makes the output larger, it runs on the CPU."""
    if int(node.attr("ceil_mode", 0)) != 1:
        return None
    sizes = _pool_sizes(node)
    if sizes is None or sizes[0] == sizes[1]:
        return None
    return Offence(tuple(sizes[1]), f"floor would give {tuple(sizes[0])}")


def _pool_axes_4d(node: NodeView):
    """(size, kernel, pad at the start, pad at the end) per spatial axis of a 2-D pooling of a
    static 4-D input, height first; None otherwise."""
    x = node.input(0)
    pads = _ints(node.attr("pads")) or [0, 0, 0, 0]
    kernel = _ints(node.attr("kernel_shape"))
    if x is None or not x.is_static or len(x.shape) != 4 or len(kernel) != 2 or len(pads) != 4:
        return None
    return [(x.shape[2 + i], kernel[i], pads[i], pads[i + 2]) for i in range(2)]


@RULES.rule("AveragePool", chips=("rk3588",))
def average_pool_height_padded_beyond_input(node: NodeView, chip: str):
    """On this chip an AveragePool padded along the height by at least the input's height on one side (a 3x3 window with pad 1 on a 1x1 or 1x4 map, as Inception-v3's pools at 64x64) runs on the CPU, whatever its stride or ceil_mode; padding along the width alone does not move it.

    Measured with rknn-toolkit2 2.5.0 on packs of independent AveragePools (count_include_pad=1,
    16 or 1280 channels; tests/forms_models.py average_pool_pads, 33 shapes): CPU for 1x1 with k3
    p1 (stride 1 or 2), k2 pads (t,l,b,r) (0,0,1,1) and (1,1,0,0), 1x2 and 1x4 with k2 (0,0,1,1)
    or k3 p1, 2x2 with k5 p2, k3 (2,1,0,1), (0,0,2,2), (1,1,2,2), 2x4 with k3 (2,0,2,0); NPU for
    2x2 with k3 (1,2,1,2) (width pad 2 on width 2), 4x1 with k3 p1, 3x1 with k3 (0,1,0,1), 4x2
    with k3 (0,2,0,2), 2x2 with k3 p1 or k4 p1, 3x3 with k4 p1 or k5 p2, 4x4 with k5 (0,0,1,1)
    and k7 p3, 5x5 with k7 p3. The last batch (seven shapes) was predicted before it was run.
    """
    axes = _pool_axes_4d(node)
    if axes is None:
        return None
    size, _, before, after = axes[0]
    return Offence((before, after), f"height pads on a height of {size}") if max(before, after) >= size else None


@RULES.rule("AveragePool", chips=("rk3566", "rk3568", "rk3562", "rv1106"))
def average_pool_end_padded_window_beyond_input(node: NodeView, chip: str):
    """On this chip an AveragePool padded only at the end of a spatial axis (bottom or right, none at the start), whose window is longer than the input along that axis, runs on the CPU; symmetric padding, or padding at the start, keeps it on the NPU whatever the window.

    Measured with rknn-toolkit2 2.5.0 on RK3566 (RK3568, RK3562 and RV1106 the same; RK3576 not:
    tests/fixtures/forms/chip_verdicts.json) on the packs of average_pool_height_padded_beyond_input
    (tests/forms_models.py average_pool_pads): CPU for 1x1 with k2 pads (t,l,b,r) (0,0,1,1) or k3
    (0,0,2,2), 1x2 and 1x4 with k2 (0,0,1,1), 2x2 with k3 (0,0,1,1), (0,0,2,2), (0,1,1,0),
    (1,0,0,1), 3x3 with k4 (0,0,1,1) or (0,0,2,2) and k5 (0,0,2,2), 4x4 with k5 (0,0,1,1), 3x2 with
    k3 (0,0,0,1), 2x3 and 2x5 with k3 (0,0,1,0); NPU for 1x1 with k3 p1 or k2 (1,1,0,0), 2x2 with
    k3 (2,1,0,1), (1,1,2,2), (1,2,1,2) or k5 p2, 4x4 with windows k2 to k4 and end-only pads
    (0,0,1,1), (0,0,1,0), (0,0,2,2), (0,0,3,3), 4x4 with k5 (1,1,2,2). The last batch (seven shapes) was predicted before it was run.
    """
    axes = _pool_axes_4d(node)
    if axes is None:
        return None
    for name, (size, kernel, before, after) in zip(("height", "width"), axes):
        if before == 0 and after > 0 and kernel > size:
            return Offence((before, after), f"{name} padded at its end only, window {kernel} on {size}")
    return None


@RULES.rule("Slice", STEP_MAX=SLICE_STEP_MAX)
def slice_step(node: NodeView, chip: str):
    """The NPU slices with a step of at most {STEP_MAX} (either direction); larger steps run on the CPU (but see passes.interleaved_pair_rejoined and passes.space_to_depth_by_slices)."""
    steps = node.input(4)
    if steps is None or steps.value is None or node.attr("rknn_interleaved_pair_rejoined") == 1:
        return None
    big = [int(s) for s in steps.value.reshape(-1) if abs(int(s)) > SLICE_STEP_MAX]
    return Offence(tuple(int(s) for s in steps.value.reshape(-1))) if big else None


@RULES.rule("Reshape", "Identity")
def int64_layout_at_run_time(node: NodeView, chip: str):
    """rknn-toolkit2 2.5.0 (observed) runs on the CPU a Reshape or Identity of a run-time int64 tensor (token ids before their embedding Gather): the NPU has no 64-bit integer data.

    Measured on transformers' input_ids.view(-1, T) before an embedding Gather, an Identity in
    its place, and the Reshape before a Cast to float, on RK3588 (tests/forms_models.py
    ids_*_before_embedding); seen on GPT-2 and T5 (pool).
    """
    x = node.input(0)
    if x is None or _known(x) or x.dtype != "int64":
        return None
    return Offence(x.name, "int64 data computed at run time")


@RULES.rule("Gather")
def gather_runtime_indices(node: NodeView, chip: str):
    """The NPU gathers with constant indices only; indices computed at run time run on the CPU."""
    idx = node.input(1)
    return Offence(idx.name, "indices computed at run time") if idx is not None and not _known(idx) else None


@RULES.rule("LayerNormalization", "InstanceNormalization")
def normalization_runtime_scale(node: NodeView, chip: str):
    """The NPU normalises with constant scale and bias only; computed at run time, the node runs on the CPU."""
    late = _runtime_inputs(node, (1, 2))
    return Offence(late[0].name, "scale or bias computed at run time") if late else None


@RULES.rule("MatMul")
def matmul_broadcast_batch(node: NodeView, chip: str):
    """The NPU multiplies matrices when one operand's batch dimensions are the product's (the other's, where they differ, are 1 and broadcast to them); where both operands broadcast, the MatMul runs on the CPU as an Einsum.

    Measured (rknn-toolkit2 2.5.0, RK3588) on MatMuls of two computed tensors
    (tests/forms_models.py matmul_broadcast_*): [1, 4, 16, 16] x [1, 1, 16, 64], its mirror and
    LambdaNetworks' [1, 4, 16, 1, 16] x [1, 1, 16, 16, 64] on the NPU (the toolkit's
    convert_2in_einsum_to_exmatmul); [1, 4, 1, ...] x [1, 1, 3, ...] and [4, ...] x [2, 1, ...] on the CPU.
    """
    a, b = node.input(0), node.input(1)
    if a is None or b is None or a.shape is None or b.shape is None or len(a.shape) < 3 or len(b.shape) < 3:
        return None
    if _known(b):
        return None
    batch_a, batch_b = tuple(a.shape[:-2]), tuple(b.shape[:-2])
    if batch_a == batch_b or not all(isinstance(d, int) for d in batch_a + batch_b):
        return None
    try:
        product = tuple(np.broadcast_shapes(batch_a, batch_b))
    except ValueError:
        return None
    if batch_a == product or batch_b == product:
        return None
    return Offence((batch_a, batch_b))


@RULES.rule("Split", placement=Placement.UNSUPPORTED)
def split_uneven_num_outputs(node: NodeView, chip: str):
    """rknn-toolkit2's shape inference (an older onnxruntime) fails on a Split into num_outputs parts that do not divide the axis."""
    n = node.attr("num_outputs")
    x = node.input(0)
    if n is None or x is None or x.shape is None or not x.shape:
        return None
    dim = x.shape[int(node.attr("axis", 0)) % len(x.shape)]
    return Offence((dim, int(n))) if isinstance(dim, int) and dim % int(n) else None


@RULES.rule("Hardmax", RANK=HARDMAX_RANK, AXES=HARDMAX_AXES)
def hardmax_layout(node: NodeView, chip: str):
    """The NPU Hardmax takes {RANK}-D tensors along axis {AXES} only; other layouts run on the CPU."""
    x = node.input(0)
    if x is None or x.rank is None:
        return None
    if x.rank != HARDMAX_RANK:
        return Offence(x.rank, "rank")
    axis = int(node.attr("axis", -1)) % x.rank
    return Offence(axis, "axis") if axis not in HARDMAX_AXES else None


@RULES.rule("Max", RANK=MAX_RANK_ON_NPU)
def max_rank(node: NodeView, chip: str):
    """The NPU Max takes {RANK}-D tensors; on lower ranks it runs on the CPU."""
    ranks = [t.rank for t in node.inputs if t.present and not _known(t) and t.rank is not None]
    return Offence(max(ranks)) if ranks and max(ranks) < MAX_RANK_ON_NPU else None


@RULES.rule("DepthToSpace", chips=("rk3588", "rk3566", "rk3568"))
def depth_to_space_block_of_one(node: NodeView, chip: str):
    """The NPU rearranges depth into space (as a ConvTranspose) for blocks larger than 1; a DepthToSpace of blocksize 1, an identity, runs on the CPU.

    Measured (rknn-toolkit2 2.5.0, RK3588 and RK3566; tests/forms_models.py depth_to_space_pack):
    blocksize 1 on the CPU in CRD and DCR mode, with 4, 24 or 64 channels, read by a Conv, an Add
    or the model output; blocksize 2 on the NPU in both modes (PixelShuffle(1) as MixDehazeNet
    and TEED export it). scripts/probe_rknn_chips.py: RK3568 as RK3588; RK3576, RK3562 and RV1106
    run blocksize 1 on the NPU too.
    """
    return Offence(1, "blocksize") if int(node.attr("blocksize", 0)) == 1 else None


@RULES.rule("Resize", MODES=("nearest", "linear"), COORDS=("half_pixel", "pytorch_half_pixel", "asymmetric", "align_corners"))
def resize_mode(node: NodeView, chip: str):
    """The NPU resizes with mode {MODES}; linear resizing only with coordinate_transformation_mode {COORDS} (others run on the CPU; the sizes it takes: linear_resize_step_not_whole)."""
    mode = node.attr("mode", "nearest")
    if mode not in ("nearest", "linear"):
        return Offence(mode, "mode")
    coords = node.attr("coordinate_transformation_mode", "half_pixel")
    if mode == "linear" and coords not in ("half_pixel", "pytorch_half_pixel", "asymmetric", "align_corners"):
        return Offence(coords, "coordinate_transformation_mode")
    return None


# OBSERVED: the coordinate modes of a linear Resize whose step was measured (below), and the chips that hold to it
# (scripts/probe_rknn_chips.py, 2026-12-06: RK3568, RK3576 and RV1106 as RK3588 and RK3566; RK3562 resizes every
# probed ratio on its NPU).
WHOLE_STEP_MEASURED = ("half_pixel", "pytorch_half_pixel", "asymmetric", "align_corners")
WHOLE_STEP_CHIPS = ("rk3588", "rk3576", "rk3566", "rk3568", "rv1106")


def _linear_step_whole(size_in: int, size_out: int, coords: str) -> bool:
    """Whether a linear Resize from size_in to size_out samples its input at a whole step: with
    align_corners the step is (in - 1) / (out - 1), whole when in is 1 or out - 1 is a multiple of
    in - 1; otherwise out / in, whole when either size divides the other."""
    if coords == "align_corners":
        return size_in == 1 or (size_out - 1) % (size_in - 1) == 0
    return size_out % size_in == 0 or size_in % size_out == 0


@RULES.rule("Resize", chips=WHOLE_STEP_CHIPS, COORDS=WHOLE_STEP_MEASURED)
def linear_resize_step_not_whole(node: NodeView, chip: str):
    """The NPU resizes linearly ({COORDS}) only by a whole step along each spatial axis: half_pixel (and the others) when one size divides the other (x2, x3, /2), align_corners when the input is 1 or out - 1 is a multiple of in - 1 (2 -> 12, 3 -> 13, 8 -> 15); at any other ratio the Resize runs on the CPU (rknn-toolkit2 2.5.0, observed).

    Measured on RK3588 and RK3566 (2026-12-06, tests/forms_models.py resize_ratio_pack and _2: a Conv's
    [1, C, S, S] resized by sizes, read by a Relu): half_pixel 16 -> 32, 16 -> 48, 32 -> 16 NPU; 32 -> 27,
    27 -> 32, 32 -> 48, 48 -> 32, 128 -> 106, 106 -> 128 CPU (fresh10's KeyNet pyramid); align_corners
    1, 2 -> 12, 2 -> 7, 3 -> 13, 5 -> 13, 8 -> 15 NPU; 3, 4, 6 -> 12 and 8 -> 16 CPU (fresh10's PSPNet
    pyramid: 1 and 2 -> 12 on the NPU, 3 and 6 on the CPU). Each axis apart: half_pixel 32 -> (64, 27)
    and align_corners 3 -> (13, 12) CPU. pytorch_half_pixel and asymmetric 32 -> 27 CPU, asymmetric
    16 -> 32 NPU. Nearest resizing is not held to it (32 -> 27 and 27 -> 32: NPU). The same packs on RK3568,
    RK3576 and RV1106 (scripts/probe_rknn_chips.py): the same placements; on RK3562 every one on the NPU.
    """
    if node.attr("mode", "nearest") != "linear":
        return None
    coords = node.attr("coordinate_transformation_mode", "half_pixel")
    if coords not in WHOLE_STEP_MEASURED:
        return None  # resize_mode puts it on the CPU already
    x, out = node.input(0), node.output(0)
    if x is None or out is None or x.shape is None or out.shape is None or len(x.shape) != 4 or len(out.shape) != 4:
        return None
    for size_in, size_out in zip(x.shape[2:], out.shape[2:]):
        if not (isinstance(size_in, int) and isinstance(size_out, int)) or size_in < 1 or size_out < 1:
            return None
        if not _linear_step_whole(size_in, size_out, coords):
            return Offence((size_in, size_out), f"{coords} step")
    return None


CUBIC_CRASH_COORDS = ("half_pixel", "asymmetric")  # OBSERVED; align_corners builds (CPU)


@RULES.rule("Resize", placement=Placement.UNSUPPORTED, COORDS=CUBIC_CRASH_COORDS)
def resize_cubic_crashes_the_compiler(node: NodeView, chip: str):
    """rknn-toolkit2 2.5.0 (observed) crashes (SIGSEGV in its compiler's OpEmit step, no message) on a cubic Resize of a run-time tensor with coordinate_transformation_mode {COORDS}; with align_corners it builds, the Resize on the CPU. A cubic Resize of constants (a position embedding's) is folded and harmless.

    Measured on RK3588 and RK3566 (tests/forms_models.py cubic_resize): [1, 3, 64, 64] resized to
    96x96 or 240x240 at the model's input, or [1, 8, 64, 64] after a Conv, then a Conv: half_pixel
    and asymmetric crash, align_corners builds; as timm's CrossViT at 64x64 resizes its input
    (bicubic, half_pixel) for its second branch. Other modes (pytorch_half_pixel, ...) were not
    measured: uncertain.
    """
    if node.attr("mode", "nearest") != "cubic":
        return None
    coords = node.attr("coordinate_transformation_mode", "half_pixel")
    if coords == "align_corners":
        return None
    return Offence(coords, "cubic", uncertain=coords not in CUBIC_CRASH_COORDS)


@RULES.rule("Greater")
def greater_broadcast(node: NodeView, chip: str):
    """The NPU compares tensors of the same shape only (RK3576, the one chip with an NPU Greater); a broadcasting comparison runs on the CPU."""
    shapes = [tuple(t.shape) for t in node.inputs if t.present and t.shape is not None]
    return Offence(tuple(shapes)) if len(set(shapes)) > 1 else None


@RULES.rule("ReduceMax", RANK=4)
def reduce_max_rank(node: NodeView, chip: str):
    """The NPU ReduceMax (RK3576) takes {RANK}-D tensors; other ranks run on the CPU."""
    x = node.input(0)
    return Offence(x.rank) if x is not None and x.rank is not None and x.rank != 4 else None


@RULES.rule("Sum")
def sum_single_input(node: NodeView, chip: str):
    """A Sum of one input runs on the CPU (the NPU lowering needs two or more)."""
    return Offence(1) if len([t for t in node.inputs if t.present]) < 2 else None


@RULES.rule("Max", placement=Placement.UNSUPPORTED)
def variadic_single_input(node: NodeView, chip: str):
    """rknn-toolkit2 2.5.0 crashes on a Max of a single input (it is the identity: remove it)."""
    return Offence(1) if len([t for t in node.inputs if t.present]) == 1 else None


ONNX_UINT8 = 2  # TensorProto.UINT8, Cast's `to`


@RULES.rule("Cast", placement=Placement.UNSUPPORTED, TO="uint8")
def cast_to_uint8(node: NodeView, chip: str):
    """rknn-toolkit2 2.5.0 crashes (signal 6, no message) on a Cast of a run-time tensor to {TO}; workaround: cast to int32 or int8, or leave the cast to the application (YOLO26's semantic map: ArgMax, then Cast to uint8 as the model output).

    Probed (tests/forms_models.py cast_output_*; RK3588 and RK3566, int8; RK3588 fp16 too): a
    Cast to uint8 of ArgMax's int64 indices, of a Conv's float map or of a comparison's bool,
    as the model output or read by a Cast back to float: crash; the same Casts to int32, int8
    or float convert (the Cast on the CPU).
    """
    if node.attr("to") != ONNX_UINT8:
        return None
    x = node.input(0)
    return None if x is None or _known(x) else Offence("uint8", f"input {x.name} ({x.dtype})")


ONNX_FLOAT = 1  # TensorProto.FLOAT, Cast's `to`


# OBSERVED (tests/forms_models.py same_type_cast_out_pack, 2026-12-05): a float-to-float Cast as the model output has no
# layer: a 4-D one takes its producer's place (NPU on both chips), a 3-D [N, T, K] one becomes the output's layout layer,
# on RK3588 on the NPU where K is 1 or a multiple of 16 (K = 4, 24: CPU). RK3566's 3-D layout layer: CPU at K = 16, 24, 64
# and for OWL-ViT's [1, 64, 1] after a Where; NPU at K = 1 and 4 after a Relu (measured, not modelled: left on the CPU).
FLOAT_CAST_OUTPUT_WIDTH_ALIGN_RK3588 = 16


def _float_cast_output_on_npu(out, chip: str) -> bool:
    if out is None or not out.is_model_output or not out.is_static:
        return False
    if out.rank == 4:
        return True
    width = out.shape[-1] if out.rank == 3 else None
    return chip == "rk3588" and width is not None and (width == 1 or width % FLOAT_CAST_OUTPUT_WIDTH_ALIGN_RK3588 == 0)


@RULES.rule("Cast", chips=("rk3588", "rk3566"))
def cast_other_than_bool_to_float(node: NodeView, chip: str):
    """rknn-toolkit2 2.5.0 (observed) runs a Cast on the NPU ("Cast INT8 on NPU", a layer of its own) only where it turns a computed bool into float32, whatever reads it and even where the comparison that made the bool runs on the CPU (SuperPoint's non-maximum suppression: Equal, Or, Cast, MaxPool); every other Cast runs on the CPU.

    Measured on RK3588 and RK3566 (2026-12-05, int8, opset 17; tests/forms_models.py
    cast_bool_pack): the bool of an Equal of a Relu and its MaxPool, of a Greater than a constant,
    of an Or of an Equal and a Not, cast to float and read by a MaxPool, a 1x1 Conv, a Mul or as
    the model output (4-D and 3-D): the Cast on the NPU, the comparisons on the CPU. On the CPU:
    int64, int32, int8 and bool to int32 or int8, int32 to float (cast_output_*) and int64 to float
    (integer_path_add_one_cast_out); a same-type float Cast as the model output takes its
    producer's place (4-D) or becomes the output view (3-D), not modelled (docs/audit.md).
    """
    x = node.input(0)
    if x is not None and x.dtype == "bool" and node.attr("to") == ONNX_FLOAT and x.producer is not None:
        return None
    if x is not None and x.dtype == "float32" and node.attr("to") == ONNX_FLOAT and _float_cast_output_on_npu(node.output(0), chip):
        return None
    return Offence(f"{x.dtype if x is not None else '?'} to {node.attr('to')}", "not a computed bool to float")


@RULES.rule("Concat", placement=Placement.UNSUPPORTED)
def slice_pair_concatenated(node: NodeView, chip: str):
    """rknn-toolkit2 2.5.0 rewrites a Concat of two Slices of one tensor along its axis into a Conv (fuse_slice_slice_concat_to_conv) and that rewrite fails on a tensor of rank other than 4 (a crash, SIGSEGV, or onnxruntime refusing the Conv): the model does not build (transformers' Funnel shifts its tokens so, Concat(x[:, :1], x[:, :-1]), before its mean pool); workaround: rejoin the two parts on a 4-D view of the tensor (a [1, 1, 32, 64] shift built; passes.slice_pair_concatenated marks the Concat).

    Probed (tests/forms_models.py slice_pair_*; RK3588 and RK3566, int8; RK3588 fp16 too).
    """
    if node.attr(_passes.SLICE_PAIR_ATTRIBUTE) is None:
        return None
    out = node.output(0)
    return Offence("fuse_slice_slice_concat_to_conv", f"two Slices of one {out.rank}-D tensor rejoined")


@RULES.rule("Add", placement=Placement.UNSUPPORTED, chips=("rk3588", "rk3566"))
def broadcast_zero_add_removed(node: NodeView, chip: str):
    """rknn-toolkit2 2.5.0 removes an Add of a constant of zeros (first) that broadcasts a smaller run-time tensor (remove_invalid_add), and when an elementwise node that takes its shape from that Add alone (a Relu, or 1 - it) is read further, its next fold_constant stops: "onnxruntime ... INVALID_ARGUMENT : Got invalid dimensions for input" (Pix2Struct's attention mask [1, 1, 1, T] added to a position bias of zeros [1, H, T, T]): the model does not build; workaround: broadcast the mask with Expand, or add the zeros after the Sub, where their shape is the mask's."""
    # Probed (rknn-toolkit2 2.5.0, int8, opset 17, RK3588 and RK3566; tests/forms_models.py
    # broadcast_zero_add_*): passes.broadcast_zero_add_marked says which forms fail and which build.
    if node.attr(_passes.BROADCAST_ZERO_ADD_ATTRIBUTE) is None:
        return None
    x, out = node.input(1), node.output(0)
    return Offence("remove_invalid_add", f"zeros broadcasting {list(x.shape) if x is not None else '?'} to {list(out.shape) if out is not None else '?'}")


# OBSERVED (RK3588; passes.group_variance_epsilon_marked): group counts whose epsilon Add stays on the NPU.
GROUP_VARIANCE_NPU_ALIGN, GROUP_VARIANCE_NPU_MIN = 16, 32


@RULES.rule("Add", chips=("rk3588", "rk3566"), ALIGN=GROUP_VARIANCE_NPU_ALIGN, MIN=GROUP_VARIANCE_NPU_MIN)
def group_variance_epsilon_layout(node: NodeView, chip: str):
    """The epsilon Add of a group variance [1, G, 1, 1, 1] read by a Sqrt (EvoNorm-S0) is laid out by a "Reshape" layer of the toolkit that runs on the CPU: on RK3566 always, on RK3588 unless G is a multiple of {ALIGN} of at least {MIN} (rknn-toolkit2 2.5.0, observed; passes.group_variance_epsilon_marked says what was measured)."""
    groups = node.attr(_passes.GROUP_VARIANCE_EPS_ATTRIBUTE)
    if groups is None:
        return None
    if chip == "rk3588" and groups % GROUP_VARIANCE_NPU_ALIGN == 0 and groups >= GROUP_VARIANCE_NPU_MIN:
        return None
    return Offence(groups, "groups")


# Chips measured for the rule below: RK3568, RK3576, RK3562 and RV1106 crash on where_one_element_input11 and _sum1
# as RK3588 and RK3566 do, and build where_of_a_map_pack (scripts/probe_rknn_chips.py, 2026-12-05).
WHERE_OF_ONE_ELEMENT_CHIPS = ("rk3588", "rk3576", "rk3566", "rk3568", "rk3562", "rv1106")


@RULES.rule("Where", placement=Placement.UNSUPPORTED, chips=WHERE_OF_ONE_ELEMENT_CHIPS)
def where_of_one_element(node: NodeView, chip: str):
    """rknn-toolkit2 2.5.0 crashes (SIGSEGV, after "dataconvert type -1 is unsupport") building a Where computed at run time whose result has one element (TimesFM's guard of a count against zero, Where(count == 0, 1, count), on its [1] sum): the model does not build. A Where of a larger map builds."""
    # Probed (rknn-toolkit2 2.5.0, int8, opset 14; tests/forms_models.py where_one_element_*, where_of_a_map_pack,
    # the rest by hand): Where(x == 0, 1, x) on a [1, 1] or [1] input, on a [1, 8] input summed over axis 1, with > 0
    # and two run-time branches: crash on RK3588 and RK3566; on [1, 4], [1, 8] and a [1, 8, 8] input summed over
    # axis 2 ([1, 8]): builds; the comparison Cast to float and Added instead of the Where: builds. The same on RK3568,
    # RK3576, RK3562 and RV1106 (scripts/probe_rknn_chips.py). A condition known at conversion (Informer's mean scaler:
    # Greater of a constant mask's sum, or a stored bool; where_known_condition_*, 2026-12-05, RK3588 and RK3566): builds,
    # the Where on the NPU. Measured, not modelled: Informer's form with the condition computed at run time (Greater of
    # sum|x|; branches [1, 1] and a scalar, both run-time) builds too, the Where on the CPU (docs/audit.md).
    out, cond = node.output(0), node.input(0)
    if out is None or not out.is_static or out.numel != 1:
        return None
    if cond is not None and (cond.foldable or _known(cond)):
        return None
    return Offence(list(out.shape), f"one-element result {list(out.shape)}")


FIVE_D = 5


@RULES.rule("Tile", chips=_passes.TILE_BY_AXES_CHIPS)
def tile_by_its_axes(node: NodeView, chip: str):
    """The NPU runs a Tile that only broadcasts (up to 3-D and 5-D: every repeated axis of size 1; 4-D: one repeated axis, not the batch, the channels on RK3588 only from one channel); any other Tile runs on the CPU (rknn-toolkit2 2.5.0, observed; RK3568 taken as RK3566).

    Probed on RK3588 and RK3566 (tests/forms_models.py tile_ones_pack, tile_axis_pack,
    tile_axis_pack_2, 2026-12-04, int8): TimeSformer's class token [1, 1, 64] repeated [1, 4, 1],
    [1, 4, 1] by [1, 1, 8], [4, 1] by [1, 8]: NPU; [1, 1, 64] by [1, 1, 4], [1, 16, 32] by
    [1, 2, 1], [4, 64] by [2, 1]: CPU; [1, 8, 4, 4] by 2 or 3 on H or W alone: NPU, on H and W,
    or on the batch (GC ViT's query [1, 2, 2, C] by [4, 1, 1, 1]): CPU. 5-D (tile_five_d_pack,
    2026-12-06): [1, C, 1, 16, 16] by 4 or 16 on axis 2, [1, 8, 16, 16, 1] by 2 on axis 4: NPU;
    [1, 8, 1, 16, 16] by 4 on the channels, [1, 4, 2, 16, 16] by 4 on axis 2: CPU. A 5-D broadcast
    on the NPU only when Reshaped (its shape also read by a Shape) or the model's output: read by a Concat (LongT5's global block
    [1, 1, 8, 2, 32] by the blocks, tile_five_d_pack_2), the CPU.
    """
    on_npu = _passes.tile_runs_on_the_npu(node, chip)
    if on_npu is None:
        return Offence("repeats or shape not known") if chip == "rk3588" else None
    x, repeats, y = node.input(0), node.input(1), node.output(0)
    readers = set(y.consumers or ()) - {"Shape"}  # a Shape reads no values (RealPLKSR's Reshape takes its shape from one)
    if on_npu and x.rank == FIVE_D and not (y.is_model_output or readers <= {"Reshape"}):
        return Offence("/".join(sorted(readers)), "a 5-D broadcast read by other than a Reshape")
    if on_npu:
        return None
    return Offence(tuple(int(r) for r in repeats.value.reshape(-1)), f"repeats of a {x.rank}-D {tuple(x.shape)} tensor")


@RULES.rule("Expand", chips=("rk3566", "rk3568"))
def shape_keeping_expand_before_a_tile(node: NodeView, chip: str):
    """On this chip the toolkit removes an Expand that keeps its 3-D input's shape (remove_invalid_expand) and reports it with a layer next to it, which may run on the CPU: where a Tile reads it (TimeSformer's class token [1, 1, 64] expanded to [1, 1, 64], then tiled over the frames), a best guess (rknn-toolkit2 2.5.0, observed; RK3568 taken as RK3566).

    Observed on RK3566: after a Relu of a 3-D model input (tests/forms_models.py tile_axis_pack)
    it is named for the input's layout Reshape, on the CPU; in fresh4 hf_timesformer it goes with
    the Unsqueeze before it, on the CPU in the first layer and the NPU in the second. A 4-D one
    read by a Tile: NPU. Which layer takes it is not known, so the placement is uncertain.
    """
    x, y = node.input(0), node.output(0)
    if x is None or y is None or x.rank != 3 or not x.is_static or x.shape != y.shape or _known(x):
        return None
    if y.consumers != ("Tile",):
        return None
    return Offence("Tile", f"{tuple(x.shape)} kept, read by a Tile: reported with a layer next to it", uncertain=True)


@RULES.rule("Sigmoid", "Mul", chips=("rk3566", "rk3568"))
def silu_beside_an_output_swap(node: NodeView, chip: str):
    """On this chip the toolkit runs on the CPU, beside the CPU Transpose layer that swaps a 1-D convolution's result into tokens for a SiLU that is the model output, the Sigmoid reading the swap (T not a multiple of 8), or names that layer, moved past the SiLU, after the output Mul (T a multiple of 8) (ContextNet's end; rknn-toolkit2 2.5.0, observed; passes.conv1d_swap_before_an_output_silu marks it and says what was measured)."""
    where = node.attr(_passes.SILU_OUTPUT_SWAP_ATTRIBUTE)
    return Offence(where, "with the output's swap into tokens") if where is not None else None


@RULES.rule("Reshape", chips=("rk3566", "rk3568"))
def directions_view_for_their_halves(node: NodeView, chip: str):
    """On this chip the toolkit runs on the CPU the Reshape that joins a bidirectional recurrent layer's directions into its features when only Slices of the halves read it, over 20 steps or more (DeepSpeech's RNN; rknn-toolkit2 2.5.0, observed; passes.directions_joined_for_their_halves marks it and says what was measured)."""
    steps = node.attr(_passes.DIRECTIONS_JOIN_ATTRIBUTE)
    return Offence(steps, "directions joined, then Sliced apart") if steps is not None else None


# Readers after which RK3566 was seen to run a statistic's Unsqueeze [N, C] -> [N, C, 1] on the CPU (a Sub reading it
# too took it in: NPU).
STATISTIC_UNSQUEEZE_CPU_READERS = ("Expand", "Tile", "Relu")


@RULES.rule("Unsqueeze", chips=("rk3566", "rk3568"))
def statistic_given_back_its_time_axis(node: NodeView, chip: str):
    """On this chip the toolkit runs on the CPU the Unsqueeze that gives a 2-D statistic [N, C] (a mean or std over time) a last axis of one, [N, C, 1], when only Expands, Tiles or Relus read it (ECAPA-TDNN's std Expanded and Tiled over time for its global context); also read by a Sub of the map (its mean, subtracted to centre the map), it is on the NPU (rknn-toolkit2 2.5.0, observed; RK3568 taken as RK3566; RK3588: NPU).

    Probed (h19-rknorm, 2026-12-06, int8, opset 13; tests/forms_models.py stat_unsqueeze_pack and stat_unsqueeze_pack_2,
    found on fresh10's pkg_ecapa_tdnn): [1, 32] from a ReduceSum or from a Sqrt (CPU) Unsqueezed at 2, read by an
    Expand to its own shape and a Tile over 100 steps, by a Tile, or by a Relu: CPU (the Expand with it); read by a
    Sub of the map, or by the Sub and the Expand: NPU.
    """
    x, y = node.input(0), node.output(0)
    if x is None or y is None or x.rank != 2 or y.rank != 3 or not y.is_static or y.shape[-1] != 1 or list(y.shape[:2]) != list(x.shape or ()):
        return None
    readers = y.consumers or ()
    if not readers or y.is_model_output or any(r not in STATISTIC_UNSQUEEZE_CPU_READERS for r in readers):
        return None
    return Offence("/".join(readers), f"{tuple(x.shape)} -> {tuple(y.shape)} read by {'/'.join(readers)}")


# OBSERVED (RK3588, tests/forms_models.py max_sigmoid_pack): the map size h * w at which the gate's
# Unsqueeze stays on the NPU.
GATE_UNSQUEEZE_ALIGN = 16


@RULES.rule("Unsqueeze", chips=("rk3588",), ALIGN=GATE_UNSQUEEZE_ALIGN)
def unaligned_heads_gate_unsqueezed(node: NodeView, chip: str):
    """On RK3588 the toolkit runs on the CPU the Unsqueeze of a per-head gate [1, H, h, w] (H of 2 or more) to [1, H, 1, h, w] for a product with the heads' 5-D map when h * w is not a multiple of {ALIGN} (YOLO-World's max-sigmoid attention at 10x10 and 5x5; rknn-toolkit2 2.5.0, observed).

    Probed (tests/forms_models.py max_sigmoid_pack, RK3588, 2026-12-04): 10x10, 6x6 and 5x5 maps
    of 2, 3 or 4 heads: CPU; 4x4, 4x8, 8x8, 12x12, 16x16, 20x20: NPU. On RK3566 the pack's gate
    Unsqueeze ran on the CPU at every size (not modelled: the real model's, after a gain of 1 the
    toolkit removes, on the NPU).
    """
    x, y = node.input(0), node.output(0)
    axes = _ints(node.input(1).value) if node.input(1) is not None and node.input(1).value is not None else _ints(node.attr("axes"))
    if x is None or y is None or not x.is_static or x.rank != 4 or x.shape[1] < 2 or [a % 5 for a in axes] != [2] or y.consumers != ("Mul",):
        return None
    cells = x.shape[2] * x.shape[3]
    return Offence(cells, f"a {x.shape[2]}x{x.shape[3]} gate of {x.shape[1]} heads") if cells % GATE_UNSQUEEZE_ALIGN else None


# OBSERVED (RK3588, tests/forms_models.py rel_pos_sum_pack): the last axis at which a trailing unit
# axis appended for an outer sum stays on the NPU.
TRAILING_UNIT_AXIS_ALIGN = 16


@RULES.rule("Unsqueeze", chips=("rk3588",), ALIGN=TRAILING_UNIT_AXIS_ALIGN)
def trailing_unit_axis_for_an_outer_sum(node: NodeView, chip: str):
    """On RK3588 the toolkit runs on the CPU the Unsqueeze that appends a unit axis to a 4-D [B, a, b, k] (B of 2 or more) for an Add that broadcasts it against [B, a, b, 1, k] (SAM's decomposed relative positions, rel_h[..., None] + rel_w[..., None, :]) when k is not a multiple of {ALIGN}; the other operand's Unsqueeze (at axis 3) stays on the NPU (rknn-toolkit2 2.5.0, observed).

    Probed (tests/forms_models.py rel_pos_sum_pack, RK3588, 2026-12-04, int8): k of 4 (8 and 4
    windows), 6, 8 and 12: CPU; 16: NPU; one window (B = 1): merged, no layer. On RK3566 both
    Unsqueezes ran on the CPU in every block (not modelled here).
    """
    x, y = node.input(0), node.output(0)
    axes = _ints(node.input(1).value) if node.input(1) is not None and node.input(1).value is not None else _ints(node.attr("axes"))
    if x is None or y is None or not x.is_static or x.rank != 4 or x.shape[0] < 2 or [a % 5 for a in axes] != [4] or y.consumers != ("Add",):
        return None
    k = x.shape[3]
    return Offence(k, f"a unit axis after {k} for an outer sum") if k % TRAILING_UNIT_AXIS_ALIGN else None


@RULES.rule("Expand", chips=("rk3588", "rk3576", "rk3566", "rk3568", "rk3562", "rv1106"))
def expand_of_int64(node: NodeView, chip: str):
    """The toolkit runs on the CPU an Expand of a run-time int64 tensor ("Expand INT64 on CPU": RT-DETR's top-k class indices repeated over a box's four values for a GatherElements); a bool's Expand runs on the NPU (rknn-toolkit2 2.5.0, observed).

    Probed (tests/forms_models.py integer_expand_pack, RK3588 and RK3566, 2026-12-04, int8; RK3568,
    RK3576, RK3562 and RV1106 the same, tests/fixtures/forms/chip_verdicts.json): an
    ArgMax's int64 indices [1, N] Unsqueezed and Expanded to [1, N, 4] (N of 16 and 300): CPU; by
    hand, int32 indices (the toolkit's Cast to int32 ran "INT64 on CPU") the same; a bool: NPU.
    """
    x = node.input(0)
    return Offence("int64", f"input {x.name}") if x is not None and x.dtype == "int64" and not _known(x) else None


# Chips measured for the rule below and einsum_equation_with_spaces (RK3568, RK3576, RK3562 and RV1106
# probed with int64_data_pack and einsum_spaces_pack, tests/fixtures/forms/chip_verdicts.json).
INT64_AT_RUN_TIME_CHIPS = ("rk3588", "rk3576", "rk3566", "rk3568", "rk3562", "rv1106")


@RULES.rule("Unsqueeze", "Tile", "ReduceSum", chips=INT64_AT_RUN_TIME_CHIPS)
def int64_at_run_time(node: NodeView, chip: str):
    """The toolkit runs on the CPU an Unsqueeze, a Tile or a ReduceSum of a run-time int64 tensor (D-FINE's top-k query indices unsqueezed and tiled over a box's values for a GatherElements; Mask2Former's count of masked pixels, a ReduceSum of a comparison cast to int64, its layer "ReduceSum INT64 CPU"): the NPU has no 64-bit integer data, whatever the Tile's axes (rknn-toolkit2 2.5.0, observed).

    Probed (tests/forms_models.py int64_data_pack, RK3588 and RK3566, 2026-12-05, int8): a TopK's
    int64 indices [1, 20] Unsqueezed to [1, 20, 1], Expanded to their own shape and Tiled by
    [1, 1, 4] or straight by [1, 1, 64] into a GatherElements: Unsqueeze and Tile on the CPU; a
    float [1, 20, 1] Tiled by [1, 1, 8]: NPU; a Less cast to int64 and summed over its last axis:
    CPU, a float ReduceSum beside it: NPU. The same pack on RK3568, RK3576, RK3562 and RV1106
    (scripts/probe_rknn_chips.py, 2026-12-05): the same placements on every chip.
    """
    x = node.input(0)
    return Offence("int64", f"input {x.name}") if x is not None and x.dtype == "int64" and not _known(x) else None


# OBSERVED: the integer element types whose run-time Gather at a single index the toolkit runs on the CPU, and the
# producers whose int64 output, so picked, it placed on the NPU (an ArgMax's [1, 32, 1] indices picked along their
# axis of one: not understood, kept out of the rule).
SCALAR_GATHER_CPU_TYPES = ("int64", "int32")
SCALAR_GATHER_NPU_PRODUCERS = ("ArgMax", "ArgMin")


# Chips measured for the rule below: RK3576, RK3562 and RV1106 placed gather_int64_data_pack's single-index picks
# as RK3588 and RK3566 did (scripts/probe_rknn_chips.py, tests/fixtures/forms/chip_verdicts.json, 2026-12-05).
SCALAR_GATHER_CPU_CHIPS = ("rk3588", "rk3576", "rk3566", "rk3568", "rk3562", "rv1106")


@RULES.rule("Gather", chips=SCALAR_GATHER_CPU_CHIPS, TYPES=SCALAR_GATHER_CPU_TYPES)
def integer_gather_at_a_single_index(node: NodeView, chip: str):
    """The toolkit runs on the CPU a Gather at a single constant index (a scalar or [i]) of a run-time {TYPES} tensor (LayoutLM's box coordinates, bbox[:, :, c] of an int64 input, before their embedding lookups); at two indices, or of float data, the same Gather runs on the NPU (rknn-toolkit2 2.5.0, observed on RK3588, RK3566 and, 2026-12-05, RK3568, RK3576, RK3562 and RV1106).

    Probed (tests/forms_models.py gather_int64_data_pack, _2 and _3, RK3588 and RK3566, 2026-12-05,
    int8): an int64 or int32 input [1, 32, 4] picked at index 0 or -1 of axis 2, or 0 of axis 1, an
    int64 input [1, 32, 1] picked along its axis of one, a float map cast to int64 and a TopK's int64
    indices picked at a scalar, and an int64 input picked at [0]: CPU; a float input picked at 0: NPU;
    an int64 or int32 input picked at [0, 2]: NPU; an ArgMax's [1, 32, 1] indices picked at 0 of axis 2: NPU (not modelled: only that
    producer is left out). RK3576, RK3562 and RV1106 (scripts/probe_rknn_chips.py, 2026-12-05): every single-index
    pick on the CPU as well; RV1106 also runs the picks at [0, 2] on the CPU (measured, not modelled).
    """
    x, idx = node.input(0), node.input(1)
    if x is None or idx is None or x.dtype not in SCALAR_GATHER_CPU_TYPES or _known(x) or x.producer in SCALAR_GATHER_NPU_PRODUCERS:
        return None
    value = idx.value if _known(idx) else None
    return Offence(x.dtype, f"input {x.name} at the single index {value.tolist()}") if value is not None and np.size(value) == 1 else None


# Spaces a term of an Einsum's equation (an operand's or the output's letters, between its commas and
# arrow) may carry before the toolkit no longer lowers it (OBSERVED, below).
EINSUM_TERM_SPACES_MAX = 1


@RULES.rule("Einsum", chips=INT64_AT_RUN_TIME_CHIPS, SPACES_MAX=EINSUM_TERM_SPACES_MAX)
def einsum_equation_with_spaces(node: NodeView, chip: str):
    """The toolkit lowers an Einsum only when each term of its equation carries at most {SPACES_MAX} space; an equation written with spaces around both its comma and its arrow (transformers' Mask2Former: "bqc, bchw -> bqhw", whose second operand reads " bchw ") finds no lowering ("No lowering found ... use CustomOperatorLower instead") and runs on the CPU, whatever its operands (rknn-toolkit2 2.5.0, observed; RK3568 taken as RK3566).

    Probed (tests/forms_models.py einsum_spaces_pack, RK3588 and RK3566, 2026-12-05, int8): operands
    of Relus of model inputs, "bqc,bchw->bqhw", "bqc,bcn->bqn" and "bhlk,bhtk->bhlt": NPU without
    spaces; "bqc, bchw -> bqhw", "bqc, bcn -> bqn", "bhlk, bhtk -> bhlt" and "bqc,  bcn->bqn": CPU;
    one space anywhere ("bqc, bcn->bqn", "bqc,bcn ->bqn", "bqc ,bcn->bqn", "bqc,bcn-> bqn",
    " bqc,bcn->bqn") or one on each side of the arrow ("bqc,bchw -> bqhw"): NPU; the query a constant:
    the same. On RK3568, RK3576, RK3562 and RV1106 (scripts/probe_rknn_chips.py, 2026-12-05): the same.
    """
    equation = str(node.attr("equation", ""))
    terms = equation.replace("->", ",").split(",")
    padded = [t for t in terms if t.count(" ") > EINSUM_TERM_SPACES_MAX]
    return Offence(equation, f"term {padded[0]!r} carries {padded[0].count(' ')} spaces") if padded else None


@RULES.rule("Reshape", chips=("rk3566", "rk3568"))
def query_view_beside_a_kept_stack(node: NodeView, chip: str):
    """On this chip the toolkit runs on the CPU the view of a joint projection's query into a map for another computation (SAM's q viewed [B*H, h, w, D] for its decomposed relative positions), with the projection's stack and flatten on the CPU beside it (rknn-toolkit2 2.5.0, observed; passes.stack_beside_a_query_read_twice marks it and says what was measured)."""
    return Offence("query read twice", "view of the query into a map") if node.attr(_passes.STACK_BESIDE_SHARED_QUERY_ATTRIBUTE) is not None else None


@RULES.rule("Unsqueeze", chips=("rk3566", "rk3568"))
def unit_axis_of_an_einsum_for_an_outer_sum(node: NodeView, chip: str):
    """On this chip the toolkit runs on the CPU both Unsqueezes of SAM's decomposed relative positions: a 4-D [B, a, b, k] Einsum result (B of 2 or more) given a unit axis at 3 or 4 for the Add that sums the two (rel_h[..., None] + rel_w[..., None, :]), whatever k; with B = 1 they merge (rknn-toolkit2 2.5.0, observed; RK3568 taken as RK3566).

    Probed (2026-12-05, RK3566): tests/forms_models.py sam_attention_pack (B*H = 2, 4x4 and 8x8 maps,
    held) and rel_pos_sum_pack (B of 8, 2, 4 with k of 4, 8, 12, 16: both Unsqueezes CPU; B = 1, k = 8:
    merged; recorded on RK3588 only, since its 3-D output's Relu ran on RK3566's CPU, not modelled).
    """
    x, y = node.input(0), node.output(0)
    axes = _ints(node.input(1).value) if node.input(1) is not None and node.input(1).value is not None else _ints(node.attr("axes"))
    if x is None or y is None or not x.is_static or x.rank != 4 or x.shape[0] < 2 or [a % 5 for a in axes] not in ([3], [4]):
        return None
    return Offence(x.shape[0], "a unit axis of an Einsum's terms for an outer sum") if x.producer == "Einsum" and y.consumers == ("Add",) else None


@RULES.rule("Unsqueeze", chips=_passes.STACKED_SUM_CHIPS)
def map_stacked_for_a_sum(node: NodeView, chip: str):
    """On this chip the toolkit runs on the CPU the rearrangement of maps stacked on a new last axis for a sum (torch.stack(maps, dim=-1).sum(-1), EfficientDet's BiFPN fusion) when the maps are one column wide or one of them is stacked by another such sum too; the layer lands on the Unsqueezes (rknn-toolkit2 2.5.0, observed; passes.maps_stacked_for_a_sum marks them and says what was measured)."""
    return Offence(tuple(node.input(0).shape or ()), "map stacked for a sum, rearranged on the CPU") if node.attr(_passes.STACKED_SUM_ATTRIBUTE) is not None else None


@RULES.rule("Slice", "Concat", "Unsqueeze", "Reshape", chips=_passes.WINDOWS_CHIPS)
def windows_cut_on_the_cpu(node: NodeView, chip: str):
    """On this chip the toolkit runs on the CPU parts of torch's unfold written with Slices (XFeat's _unfold2d): the first unfold of a 1-channel image (its Slices and Concat, one Reshape layer), the Reshape of the patches to a map after their swap to channels, and the Unsqueezes of an unfold along one axis only (rknn-toolkit2 2.5.0, observed; passes.windows_cut_by_slices marks them and says what was measured)."""
    return Offence(tuple(node.output(0).shape or ()), "window layout of torch's unfold") if node.attr(_passes.WINDOWS_ON_CPU_ATTRIBUTE) is not None else None


# Views a Reshape of this kind is merged with (fuse_two_reshape and its kin), so that it keeps no layer of its own.
UNIT_AXES_VIEW_NEIGHBOURS = ("Reshape", "Transpose", "Squeeze", "Unsqueeze", "Flatten")


def _moves_unit_axes_across_batch_or_channels(x, y) -> bool:
    """Whether a view of `x` as `y` (3-D or 4-D, both static, same rank) keeps the order of the axes longer than one and
    changes the first two axes (a 1-channel map [1, H, W, 1] as [1, 1, H, W], a batch of 2 as 2 channels)."""
    if x is None or y is None or not x.is_static or not y.is_static or x.rank != y.rank or x.rank not in (3, 4):
        return False
    xs, ys = list(x.shape), list(y.shape)
    return xs != ys and [d for d in xs if d != 1] == [d for d in ys if d != 1] and xs[:2] != ys[:2]


@RULES.rule("Reshape", chips=("rk3566", "rk3568"))
def view_moving_unit_axes_is_a_transpose(node: NodeView, chip: str):
    """On this chip the toolkit runs on the CPU a Reshape that only moves axes of length 1 across the batch or channel axis (tf2onnx's NHWC swap of a 1-channel map [1, H, W, 1] to [1, 1, H, W], of a 1x1 map [1, C, 1, 1] to [1, 1, 1, C]; a batch of 2 maps [2, 1, L] as [1, 2, L]): it rewrites it as a Transpose layer (convert_reshape_to_transpose) or keeps a Reshape layer, both on the CPU, when no view next to it takes it in; held where measured, read by convolutions or as the model output (rknn-toolkit2 2.5.0, observed; RK3568 taken as RK3566).

    Probed (tests/forms_models.py unit_axes_view_pack, 2026-12-05, RK3566 and RK3588): openWakeWord's
    embedding front (the model input [1, 76, 32, 1] padded and viewed [1, 1, 76, 34] for a Conv), the input
    or its Relu viewed so, a 1x1 Conv's [1, 96, 1, 1] (or 64) viewed [1, 1, 1, 96] or [1, 1, 96, 1] as the
    output or for a Relu, a batch of 2 Conv1d maps [2, 1, 64] viewed [1, 2, 64] (Conv-TasNet's decoder):
    CPU; flattened to [1, 96], or viewed and then flattened: NPU; RK3588: all NPU. Read by a Relu: measured, not held
    (tests/forms_models.py UNIT_AXES_VIEW_MEASURED).
    """
    x, y = node.input(0), node.output(0)
    if node.attr(_passes.UNIT_AXES_SWAP_ATTRIBUTE) is not None:
        return None  # a Transpose of unit axes, which the toolkit makes a Reshape (passes.transpose_of_unit_axes_is_a_reshape)
    if not _moves_unit_axes_across_batch_or_channels(x, y) or x.producer in UNIT_AXES_VIEW_NEIGHBOURS:
        return None
    if any(c != "Conv" for c in (y.consumers or ())):
        # Measured only before convolutions and as the model output: a Softmax's view ran on the NPU (tests/forms_models.py
        # unit_axis_softmax_pack: [1, 27, 257, 1] as [1, 1, 27, 257]), and so did TimeSformer's tiled class token [1, 4, 64]
        # viewed [4, 1, 64] for a Concat (fresh4).
        return None
    return Offence(f"{tuple(x.shape)} -> {tuple(y.shape)}", "view that moves unit axes across the batch or channels")


@RULES.rule("Transpose", chips=_passes.KEY_BESIDE_SHARED_QUERY_CHIPS)
def key_beside_a_query_read_twice(node: NodeView, chip: str):
    """On RK3588, RK3566 and RK3568 the toolkit runs on the CPU, as a Transpose layer of its own, the key's swap into attention's scores when the key is a part of a joint q/k/v projection (Split and Squeeze) and the query also feeds another computation (SAM's decomposed relative positions made from q); with the query read by its scale alone the swap merges into the product (rknn-toolkit2 2.5.0, observed; passes.transposes_merged_into_matmul marks it).

    Probed (tests/forms_models.py sam_attention_pack, RK3588, 2026-12-04; RK3566, 2026-12-05): a [1, 4, 4, 64] and a
    [1, 8, 8, 64] map, 2 heads of 32, relative positions from q: the key's Transpose on the CPU;
    a constant bias or none: merged, no layer (RK3566 also keeps the stack: passes.stack_beside_a_query_read_twice).
    """
    return Offence("query read twice", "key of a joint projection") if node.attr(_passes.KEY_BESIDE_SHARED_QUERY_ATTRIBUTE) is not None else None


@RULES.rule("Max", "Min", placement=Placement.UNSUPPORTED, precisions=("int8",))
def extreme_with_minus_infinity(node: NodeView, chip: str):
    """rknn-toolkit2 2.5.0 refuses an int8 build where a Max or Min of a run-time tensor takes a constant holding -inf (`cannot convert float NaN to integer` in quant_utils._cal_scale_zp_min_max: the constant's range [-inf, m] gives an infinite scale and a NaN zero point); workaround: write the largest negative float32 (-3.4e38) instead of -inf, which converts (a jax2tf softmax's max(-inf, max(x)) writes such a Max).

    Probed (tests/forms_models.py minus_infinity_*; RK3588 and RK3566): Max(x, -inf) in either
    order, a Max of three inputs, a per-channel constant with some -inf, and Min(x, [0 | -inf])
    refuse; Max(x, 0), Max(x, -3.4e38), Max(x, -1e30), Min(x, +inf), Clip(x, -inf, 6), Add of
    -inf after a Relu and Where(c, x, -inf) convert; in fp16 Max(x, -inf) converts.
    """
    values = [t.value for t in node.inputs if t.present and t.value is not None]
    if len(values) == len([t for t in node.inputs if t.present]):
        return None  # all constant: folded before quantisation
    for v in values:
        if v.dtype.kind == "f" and v.size and np.isneginf(v).any():
            return Offence("-inf", "a constant operand holds -inf")
    return None


# ----------------------------------------------------------------------------------------------
# Limits of some chips only.
# ----------------------------------------------------------------------------------------------


@RULES.rule("ConvTranspose", chips=("rk3566", "rk3568", "rk3588"), STRIDES=CONVT_STRIDES_POW2)
def conv_transpose_stride_pow2(node: NodeView, chip: str):
    """On this chip transposed convolutions run on the NPU with strides {STRIDES} only (others pad on the CPU)."""
    strides = _ints(node.attr("strides"))
    return Offence(tuple(strides)) if any(s not in CONVT_STRIDES_POW2 for s in strides) else None


# OBSERVED: the channel block of the NPU's 4-D layout, per chip, as a model output's Reshape shows
# it. [1, C] outputs: RK3588 reshapes them on the NPU for C = 16, 64, 1008 and on the CPU for 4, 8,
# 12, 24, 40, 1000; RK3566 on the NPU for 8, 24, 40, 1000 and on the CPU for 4, 12; RK3576 and
# RK3562 on the NPU for every C measured.
OUTPUT_CHANNEL_ALIGN = {"rk3588": 16, "rk3566": 8, "rk3568": 8}
# The channel block a constant Pad appending channels must fill to stay on the NPU (int8): RK3576,
# RK3562 and RV1106 pad as RK3588 (pad_pack on every chip, tests/fixtures/forms/chip_verdicts.json),
# though their output Reshapes have no such block.
PAD_CHANNEL_BLOCK_INT8 = {**OUTPUT_CHANNEL_ALIGN, "rk3576": 16, "rk3562": 16, "rv1106": 16}
# Activations the toolkit computes in 4-D after a Gemm (it makes the pair one 1x1 Conv): measured.
ACTIVATIONS_AFTER_GEMM = ("Sigmoid", "Relu")


def _picks_the_one_token(node: NodeView) -> bool:
    """A Gather at a scalar constant index along axis 1 of a 3-D tensor whose axis 1 has length one."""
    x, index = node.input(0), node.input(1)
    if x is None or index is None or x.rank != 3 or x.shape[1] != 1 or not index.is_constant or index.rank != 0:
        return False
    return int(node.attr("axis", 0)) % 3 == 1


@RULES.rule("Flatten", "Reshape", "Gather", *ACTIVATIONS_AFTER_GEMM, chips=tuple(OUTPUT_CHANNEL_ALIGN), ALIGN="16 on RK3588, 8 on RK3566/RK3568")
def unaligned_2d_model_output(node: NodeView, chip: str):
    """A 2-D model output [N, C] that the NPU holds in its 4-D layout (a Flatten or Reshape of a 4-D tensor, an activation after a Gemm, or the pick of the one token of [N, 1, C]) is reshaped to the caller's layout on the CPU when C is not a multiple of the channel block ({ALIGN}): this node's Reshape layer runs on the CPU.

    Measured with rknn-toolkit2 2.5.0 on GlobalAveragePool -> Flatten and Gemm -> Sigmoid/Relu
    outputs of 4 to 1008 channels (squeezenet1_1's [1, 1000] output: CPU on RK3588, NPU on RK3566;
    mnist_box_and_class's [1, 4] box: CPU on both); a Gemm's own output is 2-D on the NPU. The pick
    of the one token, Gather at a scalar index along the axis of one of [1, 1, C] (Perceiver's
    decoder, SigLIP's pooling head; 2026-12-05, opset 17, tests/forms_models.py
    token_pick_width_pack): as the output, C = 8, 10 and 24 on the CPU of RK3588, 16, 32 and 64 on
    its NPU; RK3566: 10 on the CPU, 8, 16, 24, 32, 64 on the NPU; read by a Linear, on the NPU
    (PiT's class token).
    """
    out = node.output(0)
    if out is None or not out.is_model_output or out.rank != 2 or not isinstance(out.shape[1], int):
        return None
    x = node.input(0)
    if node.op_type == "Gather":
        if not _picks_the_one_token(node):
            return None
    elif node.op_type in ("Flatten", "Reshape"):
        # passes.linear_2d_output_views: the last node of a 2-D Linear that writes the output.
        if x is None or (x.rank != 4 and not node.attr("rknn_linear_2d_output")):
            return None
    elif x is None or x.producer != "Gemm":
        return None
    channels = out.shape[1]
    return Offence(channels, "output channels") if channels % OUTPUT_CHANNEL_ALIGN[chip] else None


# OBSERVED on RK3588 only: the width a 3-D model output's Reshape must have to stay on the NPU.
# RK3566 is not consistent in it (a [1, 16, K] MatMul output: NPU for K = 4, CPU for 8, 16, 32).
OUTPUT_WIDTH_ALIGN_3D = {"rk3588": 16}
# The product operators whose 3-D output the NPU computes as [N, T, 1, K] (a 1x1 Conv): measured.
PRODUCTS_3D = ("MatMul", "Gemm")


@RULES.rule("Add", chips=tuple(OUTPUT_WIDTH_ALIGN_3D), ALIGN="16 on RK3588", PRODUCTS=PRODUCTS_3D)
def unaligned_3d_model_output(node: NodeView, chip: str):
    """A 3-D model output [N, T, K] of the Add of a product's bias ({PRODUCTS}), which the NPU computes as [N, T, 1, K], is reshaped to the caller's layout on the CPU when K is not a multiple of {ALIGN}: this node's Reshape layer runs on the CPU.

    Measured with rknn-toolkit2 2.5.0 on [1, 16, 32] -> MatMul -> bias Add -> [1, 16, K] models
    (K = 4 and 8: CPU; 16 and 32: NPU) and on lstm_stateful's [1, 16, 4] Linear after its LSTM.
    Not the product itself, nor a bias of zeros (2026-12-05, opset 17; tests/forms_models.py
    output_width_pack, single-model probes by hand): the MatMul without a bias Add as the output
    (K = 4 to 1000) and the MatMul whose bias of zeros, second, is "fused by remove_invalid_add"
    (Marian's final_logits_bias; K = 4, 24, 1000) are reported as their Conv layer on the NPU, the CPU
    Reshape only as its layout glue; the bias Add of K = 8, 24, 40, 100 and 1000 runs on the CPU, of
    1008 on the NPU. A bias of zeros first ([K] + [1, T, K]: fresh6's Conditional DETR and MGP-STR
    heads) is not removed (the toolkit removes an Add of zeros only where its first operand has the
    result's shape: passes.broadcast_zero_add_marked) and runs on the CPU as any bias Add.
    """
    out = node.output(0)
    if out is None or not out.is_model_output or out.rank != 3 or not isinstance(out.shape[2], int):
        return None
    if not any(t.present and t.producer in PRODUCTS_3D for t in node.inputs[:2]):
        return None
    first, second = node.inputs[:2]
    if second.is_constant and second.all_zero and first.shape is not None and first.shape == out.shape:
        return None  # product + zeros: removed (remove_invalid_add), reported with the product
    width = out.shape[2]
    return Offence(width, "output width") if width % OUTPUT_WIDTH_ALIGN_3D[chip] else None


# OBSERVED (RK3566, tests/forms_models.py cpu_concat_levels_pack, cpu_concat_order_pack): a level of a
# Concat on the CPU whose rows H*W*A are a multiple of this keeps its Reshape on the NPU at any width
# (SSD300's 38x38 and 10x10 class levels; rows 36 or 180 not).
CPU_CONCAT_LEVEL_ROWS_ALIGN = 8


@RULES.rule("Reshape", chips=tuple(OUTPUT_CHANNEL_ALIGN), ALIGN="16 on RK3588, 8 on RK3566/RK3568", ROWS=CPU_CONCAT_LEVEL_ROWS_ALIGN)
def anchor_merge_into_concat(node: NodeView, chip: str):
    """A detection head's Reshape [N, H, W, A, K] -> [N, H*W*A, K] (A anchors of K values, one level of a Concat) runs on the CPU when the toolkit's layout of the levels moves unaligned channels: laid out as [H*W, A*K, 1, 1] (some level is a 1x1 map), when A*K is not a multiple of the channel block ({ALIGN}), except on RK3566/RK3568 beside a Concat on the CPU with rows H*W*A a multiple of {ROWS}; laid out as [1, H*W*A, 1, K], on RK3588 when A > 1 and K is not a multiple of 16, on RK3566/RK3568 always. A head's one 1x1 level stays on the NPU.

    Measured with rknn-toolkit2 2.5.0 on ssdlite320_mobilenet_v3_large's head (A = 6, K = 4 and
    91, 10x10 to 1x1 maps) and on small heads (K = 4, 8, 16, 91; A = 1, 2, 6) of 10/5/3/2/1/1
    maps (RK3588, RK3566), 5/3/2/1, 5/3/2, 10/5/3 and 5/3 maps (RK3588; 5/3 also RK3566). Not
    covered: two levels the toolkit concatenates along the map (10x10 with 5x5, 4x4 with 2x2: on
    the NPU there for every K measured).
    """
    form = node.attr("rknn_concat_form")  # set by passes.detection_head_concat_layout
    x = node.input(0)
    if form is None or x is None or x.rank != 5 or not all(isinstance(d, int) for d in x.shape):
        return None
    form = form.decode() if isinstance(form, bytes) else form
    anchors, values = x.shape[3], x.shape[4]
    if node.attr(_passes.ONLY_SINGLE_CELL_LEVEL_ATTRIBUTE) is not None:
        return None  # the head's one 1x1 level: NPU at any width (tests/forms_models.py head_concat_pack, cpu_concat_levels_pack)
    if form == "cells":
        rows = x.shape[1] * x.shape[2] * anchors
        if chip != "rk3588" and node.attr(_passes.LEVEL_OF_CPU_CONCAT_ATTRIBUTE) is not None and rows % CPU_CONCAT_LEVEL_ROWS_ALIGN == 0:
            return None  # beside a CPU Concat on RK3566 (tests/forms_models.py cpu_concat_levels_pack)
        channels = anchors * values
        return Offence(channels, "channels per map cell") if channels % OUTPUT_CHANNEL_ALIGN[chip] else None
    if chip != "rk3588":
        return Offence(values, "values per anchor")
    return Offence(values, "values per anchor") if anchors > 1 and values % 16 else None


LEVEL_CHANNEL_ALIGN = 16  # OBSERVED (RK3588): channels or cells of a flattened level the Concat takes as they are
LEVEL_CELLS_STEP = 4  # OBSERVED (RK3588): a level whose cells are a multiple of this (and not of 16) is moved on the CPU


@RULES.rule("Reshape", chips=("rk3588",), ALIGN=LEVEL_CHANNEL_ALIGN, STEP=LEVEL_CELLS_STEP)
def flattened_level_of_unaligned_channels(node: NodeView, chip: str):
    """On RK3588 the toolkit runs on the CPU the Reshape that flattens one level of an anchor-free detection head ([N, C, H, W] -> [N, C, H*W], then a Concat of the levels along the last axis) when C is not a multiple of {ALIGN} and the level's H*W cells are a multiple of {STEP} but not of {ALIGN} (rknn-toolkit2 2.5.0, observed; RK3566 keeps every such Reshape on the NPU).

    Measured with heads of two or three levels after the box decode's Slices (tests/forms_models.py
    flattened_levels): C = 4, 8, 24 with maps of 10x10, 6x6, 5x4, 4x6 (100, 36, 20, 24 cells: CPU,
    as the first, middle or last level) and 20x20, 12x12, 5x5, 3x3, 2x3, 5x1 (NPU); C = 16: all on
    the NPU; on Ultralytics' heads in the pool (C = 1, 4 and 51 at 10x10: CPU; C = 32, 64, 80:
    NPU). Not explained: a 5x5 level after a 20x20 and a 5x1 one (offset 405) ran on the CPU, where
    four other 5x5 levels ran on the NPU; a Concat straight into a 3-D model output puts the last
    level on the CPU too. Neither is modelled.
    """
    piece = node.attr("rknn_level_piece")  # passes.flattened_levels_concatenated
    if piece is None:
        return None
    channels, h, w, _offset = (int(v) for v in piece)
    cells = h * w
    if channels % LEVEL_CHANNEL_ALIGN == 0 or cells % LEVEL_CHANNEL_ALIGN == 0 or cells % LEVEL_CELLS_STEP:
        return None
    return Offence(f"{channels}x{cells}", "channels x cells of the level")


@RULES.rule("Reshape", "Flatten", chips=("rk3566", "rk3568"))
def channels_last_level_into_concat(node: NodeView, chip: str):
    """On this chip the Reshape that flattens a detection head's channels-last level ([N, H, W, C] from a Transpose [0, 2, 3, 1] layer on the CPU, to [N, H*W*C/d, d], or to a row [N, H*W*C] by a Reshape or a Flatten) runs on the CPU when a Concat reads it, or, for a row, a Reshape into frames (the toolkit merges it into the Transpose layer or gives it a Reshape layer of its own there); as a model output it runs on the NPU (rknn-toolkit2 2.5.0, observed; passes.channels_last_levels_concatenated marks it).

    Measured on RK3566 on MediaPipe's BlazeFace (its four level Reshapes, two Concats) and
    tests/forms_models.py channels_last_levels: Concat-read levels of d = 1, 2, 4, 8, 16, 32,
    aligned channels or not, 16x16 to 2x2 maps: all CPU; the same levels as model outputs: NPU.
    Rows (kornia's YuNet; yunet_level_pack, h18-rkhead): Reshape [1, -1] or Flatten of 16x16 to 2x2 maps of
    34 to 272 channels, read by a Concat or a Reshape [1, -1, 17]: CPU; a row that is a model output: NPU.
    """
    return Offence(tuple(node.output(0).shape), "level concatenated after a channels-last Transpose") if node.attr("rknn_channels_last_level") is not None else None


@RULES.rule("Reshape", chips=_passes.LEVEL_READ_CHIPS)
def channels_last_level_read_on_cpu(node: NodeView, chip: str):
    """On this chip the Reshape that flattens a detection head's channels-last level ([N, H, W, C] from a Transpose [0, 2, 3, 1] to [N, H*W*C/d, d]) runs on the CPU when a node reads its values, straight or through the Concat of the levels (RetinaFace's class scores into a Softmax); as a model output, or concatenated into one, it runs on the NPU (rknn-toolkit2 2.5.0, observed; passes.channels_last_level_read_by_a_node marks it and says what was measured)."""
    return Offence(tuple(node.output(0).shape), "channels-last level read by a node") if node.attr(_passes.LEVEL_READ_ATTRIBUTE) is not None else None


@RULES.rule("Reshape", chips=("rk3566", "rk3568"))
def reshape_into_cpu_softmax(node: NodeView, chip: str):
    """On this chip Softmax runs on the CPU, and a Reshape whose only reader is a Softmax goes to the CPU with it (rknn-toolkit2 2.5.0, observed).

    Measured on the distribution-focal-loss decode of yolo11n and yolov5nu (Reshape, Transpose,
    Softmax: the Transpose joins the Reshape, see passes.py) and on small Conv -> Reshape ->
    Softmax models, with and without the Transpose. Not so a Reshape that only merges the two
    leading axes of attention's scores ([1, nW, heads, T, T] -> [nW, heads, T, T], the shifted
    windows' mask Added between: Swin), which stays on the NPU (tests/forms_models.py window_pack
    "masked", 9 and 4 windows of 49 tokens, RK3566), nor one that drops the leading axis of one of
    3-D batched attention's masked scores ([1, H, T, S] -> [H, T, S], DETR: batched_operands_pack_cross
    "mask4d", 4 and 16 tokens, RK3566), nor the view of attention's scores made by a
    product of two computed tensors into a Softmax whose probabilities go into a product (the
    pass softmax_views_on_cpu marks it; softmax_view_pack).
    """
    out, x = node.output(0), node.input(0)
    if out is None or out.consumers != ("Softmax",) or out.is_model_output or node.attr(_passes.SCORES_VIEW_ATTRIBUTE) is not None:
        return None
    # Dropping a leading axis of one (Swin's [1, nW, heads, T, T] -> [nW, heads, T, T]; DETR's masked
    # scores [1, H, T, S] -> [H, T, S] back to 3-D) moves nothing: no layer.
    dropped = x is not None and x.is_static and out.is_static and len(x.shape) in (4, 5) and len(out.shape) == len(x.shape) - 1
    if dropped and x.shape[0] == 1 and tuple(out.shape) == tuple(x.shape[1:]):
        return None
    if _only_unit_axes_moved(x, out):
        return None
    return Offence("Softmax", "read by")


def _only_unit_axes_moved(x, out) -> bool:
    """Whether a Reshape of a 4-D map only drops or moves axes of length one (MGP-STR's A3 module:
    a 1x1 Conv's [1, 27, 257, 1] viewed [1, 27, 257] for a Softmax over the last axis): the toolkit
    merges such a view into the reshapes it puts around its Softmax (fuse_two_reshape), and the
    view has no layer of its own; it is reported with the Conv that writes it, on the NPU of
    RK3566 (rknn-toolkit2 2.5.0, observed: tests/forms_models.py unit_axis_softmax_pack; a view
    that merges two axes of more than one, [1, 27, 64, 2] to [1, 27, 128], is a CPU Reshape layer)."""
    if x is None or out is None or not x.is_static or not out.is_static or len(x.shape) != 4:
        return False
    return tuple(d for d in x.shape if d != 1) == tuple(d for d in out.shape if d != 1) and tuple(x.shape) != tuple(out.shape)


@RULES.rule("Reshape", chips=("rk3566", "rk3568"))
def token_swap_carried_to_a_3d_output(node: NodeView, chip: str):
    """On this chip the toolkit carries a feature map's swap into tokens (Transpose [0, 2, 1] after the flattening Reshape) down the token stream and, where the stream ends in a 3-D model output or a mean over tokens sliced along their axis (x[:, 1:].mean(1)), makes a Transpose layer there (on the CPU; for the mean, on the CPU or the NPU by the shapes); whether it names that layer after this Transpose depends on the order its passes ran (rknn-toolkit2 2.5.0, observed: BEiT's patch embedding named, CLIP's not; EVA-02's named before its token mean). Where the stream ends in a mean over the tokens (x.mean(1), no class token) read straight from a residual sum x + f(x) of them (through a Relu or a layer scale at most; not through a LayerNorm), the swap itself is that Transpose layer, on the CPU, named after it (observed: ViT-RelPos, ViTamin, tests/forms_models.py token_mean_pack and token_mean_factors_pack).

    Marked by passes.token_swap_beside_a_map_reshape.
    """
    end = node.attr("rknn_token_stream_output")
    if end is None:
        return None
    if end == 3:  # passes.STREAM_TO_RESIDUAL_MEAN: named after this Transpose in every probe
        return Offence("mean over the tokens of a residual sum", "token stream ends in")
    return Offence("3-D model output" if end == 1 else "mean over the tokens", "token stream ends in", uncertain=True)


@RULES.rule("Reshape", "Add", chips=("rk3566", "rk3568"))
def swap_summed_before_a_token_mean(node: NodeView, chip: str):
    """On this chip, where a feature map's swap into tokens (Transpose [0, 2, 1]) is read straight by a Linear and by the residual sum of that Linear's result (no LayerNorm, no position Add between) and the stream ends in a mean over the tokens of a residual sum (token_swap_carried_to_a_3d_output), the flattening Reshape before the swap and that residual Add run on the CPU with it (rknn-toolkit2 2.5.0, observed: tests/forms_models.py token_mean_factors_pack "nopos_none_res*": 16 tokens of 32 or 384 channels, 49 of 384, a Relu before the mean; a LayerNorm of the tokens before the mean keeps all three on the NPU).

    Marked by passes.token_swap_beside_a_map_reshape.
    """
    return Offence("mean over the tokens of a residual sum", "swap summed straight before") if node.attr("rknn_swap_summed_before_a_token_mean") == 1 else None


@RULES.rule("Reshape", chips=("rk3566", "rk3568"))
def swap_viewed_as_a_map(node: NodeView, chip: str):
    """On this chip a feature map's swap into tokens (Transpose [0, 2, 1] after the flattening Reshape) viewed straight back as a channels-last map [N, H, W, C] (directly or through a per-channel Mul) keeps the swap as a Transpose layer and the view as a Reshape layer, both on the CPU (rknn-toolkit2 2.5.0, observed: tests/forms_models.py pad_tokens_pack on RK3566; RK3588 NPU).

    Marked by passes.token_swap_beside_a_map_reshape.
    """
    return Offence(tuple(node.output(0).shape), "swap viewed as a channels-last map") if node.attr("rknn_swap_viewed_as_a_channels_last_map") == 1 else None


@RULES.rule("Reshape", chips=("rk3566", "rk3568"))
def reshape_between_transpose_layers(node: NodeView, chip: str):
    """On this chip a Reshape that a Transpose layer alone writes and another Transpose layer alone reads (TNT's F.unfold: a 6-D Transpose, the Reshape to [1, C*k*k, T], the swap into pixel sets) runs on the CPU with them (rknn-toolkit2 2.5.0, observed: tests/forms_models.py unfold_pack).

    Marked by passes.reshape_between_transpose_layers.
    """
    return Offence("Transpose layers", "between two") if node.attr("rknn_reshape_between_transpose_layers") == 1 else None


@RULES.rule("Reshape", chips=("rk3566", "rk3568"))
def tokens_made_a_batch_of_maps(node: NodeView, chip: str):
    """On this chip a Reshape that views a 3-D tensor of batch 1 as a batch of maps ([1, T, C*k*k] -> [T, C, k, k]: TNT's pixel sets) runs on the CPU (rknn-toolkit2 2.5.0, observed: tests/forms_models.py unfold_pack and a pack of tokens from a model input).

    Marked by passes.tokens_made_a_batch_of_maps.
    """
    return Offence(tuple(node.output(0).shape), "tokens viewed as a batch of maps") if node.attr("rknn_tokens_made_a_batch_of_maps") == 1 else None


@RULES.rule("Reshape", chips=("rk3566", "rk3568"))
def token_swap_moved_past_a_regroup(node: NodeView, chip: str):
    """On this chip a feature map's swap into tokens (Transpose [0, 2, 1] after the flattening Reshape) followed by a Reshape that regroups the tokens on the leading axis ([N, T, C] -> [N*A, T/A, C], area attention) is moved after that Reshape by the toolkit, as a Reshape and a Transpose layer on the CPU; which of the two ONNX nodes it names the CPU layers after depends on the order its passes ran (rknn-toolkit2 2.5.0, observed: YOLO12's area attention names the Transpose, a small model of the form the Reshape).

    Marked by passes.token_swap_beside_a_map_reshape on the Transpose; the Reshape itself is
    placed by token_regroup_after_a_swap.
    """
    if node.attr("rknn_token_swap_regrouped") != 1:
        return None
    return Offence("regrouped tokens", "swap moved past", uncertain=True)


@RULES.rule("Reshape", chips=("rk3566", "rk3568"))
def token_regroup_after_a_swap(node: NodeView, chip: str):
    """On this chip a Reshape that regroups a feature map's tokens, right after their swap (Transpose [0, 2, 1]), on the leading axis into areas that are not single rows of the map ([N, H*W, C] -> [N*A, H*W/A, C], H*W/A other than W: area attention) runs on the CPU: the toolkit moves the swap after it and lays the data out again with a Reshape and a Transpose layer there (rknn-toolkit2 2.5.0, observed on YOLO12's area attention and tests/forms_models.py token_swap "areas").

    Marked by passes.token_swap_beside_a_map_reshape.
    """
    return Offence(tuple(node.output(0).shape), "areas not single rows of the map") if node.attr("rknn_token_swap_regrouped") == 2 else None


@RULES.rule("Reshape", "Unsqueeze", chips=("rk3566", "rk3568"))
def two_d_input_made_a_conv1d_input(node: NodeView, chip: str):
    """On this chip a 2-D model input [N, L] made a 1-D convolution's input [N, 1, L] (an Unsqueeze or a Reshape; wav2vec2's and HuBERT's waveform) is converted by a Reshape layer on the CPU (rknn-toolkit2 2.5.0, observed; RK3588 runs it on the NPU).

    Measured with tests/forms_models.py speech_front_* (L = 400 to 16000, 16 to 64 channels out
    of a kernel-10 stride-5 Conv, Unsqueeze or Reshape: CPU; the same read by a Relu instead of the
    Conv, or a Relu of the input made [N, 1, L]: NPU) and the pool's hf_wav2vec2 and hf_hubert.
    """
    x, out = node.input(0), node.output(0)
    if x is None or out is None or not x.is_graph_input or x.rank != 2 or out.rank != 3 or "Conv" not in (out.consumers or ()):
        return None
    return Offence(x.name, "2-D model input made a Conv1d's input")


@RULES.rule("Reshape", "Unsqueeze", chips=_passes.INPUT_MADE_A_MAP_CHIPS)
def two_d_input_made_a_map(node: NodeView, chip: str):
    """On this chip a 2-D model input [N, L] made a 4-D map ([N, 1, L, 1] or [N, 1, 1, L]: CREPE's frames) is converted by Reshape layers on the CPU, one for each view on the way, whatever reads the map (rknn-toolkit2 2.5.0, observed; RK3588 runs them on the NPU; passes.two_d_input_views_into_a_map marks them and says what was measured)."""
    return Offence(node.input(0).name, "2-D model input made a map") if node.attr(_passes.INPUT_MADE_A_MAP_ATTRIBUTE) is not None else None


@RULES.rule("Reshape", "Unsqueeze", chips=("rk3566", "rk3568"))
def three_d_tensor_made_a_one_channel_map(node: NodeView, chip: str):
    """On this chip a 3-D tensor [N, T, F] made a one-channel map [N, 1, T, F] (an Unsqueeze of axis 1 or a Reshape: Parakeet's spectrogram before its Conv2d subsampling) is a Reshape layer on the CPU, whatever computes or reads it (rknn-toolkit2 2.5.0, observed; the toolkit holds [N, T, F] with F as channels, so the view moves data; RK3588 runs it on the NPU).

    Measured with tests/forms_models.py spectrogram_conv_pack on RK3566 and RK3588 (2026-12-05):
    T = 50 or 100, F = 3 to 80, a model input or a Relu's result, into a 3x3 stride-2 Conv2d or a
    Relu: CPU on RK3566 in all 8; NPU on RK3588 but for F = 3 (CPU, not modelled). The pool's
    views of [N, T, F] to [N, 1, T, F] read by a Transpose (AST), a MatMul (MobileNetV4) or a Mul
    (GLPN) run on RK3566's NPU: the rule keeps to what was measured (a model input or a Relu's
    result, read by Convs or Relus).
    """
    x, out = node.input(0), node.output(0)
    if x is None or out is None or x.rank != 3 or out.rank != 4 or x.shape is None or out.shape is None:
        return None
    n, t, f = x.shape
    if list(out.shape) != [n, 1, t, f] or t == 1 or f == 1:
        return None
    # As measured: a model input's or a Relu's result, read by Convs or Relus. Not so read by a
    # Transpose (AST's patch embedding), a MatMul (MobileNetV4's attention) or a Mul (GLPN): NPU.
    if x.producer not in (None, "Relu") or not out.consumers or not set(out.consumers) <= {"Conv", "Relu"}:
        return None
    return Offence(f, "a 3-D tensor made a one-channel map")


@RULES.rule("Reshape", chips=("rk3566", "rk3568"))
def area_attention_reshape_on_cpu(node: NodeView, chip: str):
    """On this chip the Reshapes that merge area attention's areas back ([N*A, T, H, D] -> [N, A*T, H*D]) and make its result a channels-last map run on the CPU, and so do the heads' split and the value's map Reshape of every block of the graph but the first (rknn-toolkit2 2.5.0, observed on YOLO12's area attention; passes.area_attention_layouts marks them)."""
    return Offence("area attention", "layout of") if node.attr("rknn_area_attention_layout") is not None else None


@RULES.rule("Reshape", chips=("rk3566", "rk3568"))
def map_flattened_into_a_kv_projection(node: NodeView, chip: str):
    """On this chip a feature map flattened into tokens (Reshape and Transpose [0, 2, 1]) for a key/value projection of its own, whose key is a CPU Transpose layer (PVT's spatial reduction), is flattened on the CPU (rknn-toolkit2 2.5.0, observed; passes.token_swap_beside_a_map_reshape marks it)."""
    return Offence("key/value projection", "tokens flattened for") if node.attr("rknn_tokens_of_a_kv_projection") is not None else None


# How the toolkit makes a Pad's input 4-D before placing it (its pass unsqueeze_to_4d_pad), as
# measured: [1, L] -> [1, 1, 1, L]; [1, C, L] -> [1, C, 1, L] for C > 1 but [1, L, 1, 1] for C = 1;
# 4-D inputs as they are. Other forms were not measured.
PAD_NPU_AXES_4D = (2, 3)
PAD_MODES_NPU_LIMITED = ("reflect", "edge")


def _pad_axes_in_4d(shape) -> dict[int, int] | None:
    """Input axis -> the axis of the toolkit's 4-D form, for the measured input forms; else None."""
    if shape is None or not all(isinstance(d, int) for d in shape) or shape[0] != 1:
        return None
    if len(shape) == 4:
        return {0: 0, 1: 1, 2: 2, 3: 3}
    if len(shape) == 3:
        return {0: 0, 1: 1, 2: 3} if shape[1] > 1 else {0: 0, 1: 2, 2: 1}
    if len(shape) == 2:
        return {0: 0, 1: 3}
    return None


def _pads(node: NodeView) -> list[int] | None:
    pads = node.attr("pads") if node.opset < 11 else None
    if pads is None and node.input(1) is not None and node.input(1).value is not None:
        pads = [int(p) for p in node.input(1).value.reshape(-1)]
    return [int(p) for p in pads] if pads is not None else None


def _pads_in_4d(node: NodeView) -> dict[int, tuple[int, int, int]] | None:
    """Axis of the toolkit's 4-D form -> (the input's size there, pad at its start, pad at its
    end), for a Pad whose input has a measured form and whose pads are known; else None."""
    x, pads = node.input(0), _pads(node)
    axes = _pad_axes_in_4d(x.shape if x is not None else None)
    if axes is None or pads is None or len(pads) != 2 * len(axes):
        return None
    return {a: (x.shape[i], pads[i], pads[i + len(axes)]) for i, a in axes.items()}


@RULES.rule("Pad", MODES=PAD_MODES_NPU_LIMITED, AXES="the last two")
def pad_mode_outside_last_two_axes(node: NodeView, chip: str):
    """rknn-toolkit2 2.5.0 (observed) runs a {MODES} Pad on the NPU only when it pads {AXES} axes of the 4-D form it makes of the input ("Pad: mode reflect only support 2 dims pads!"); elsewhere the Pad runs on the CPU. A [1, L] input becomes [1, 1, 1, L] and a [1, C, L] one [1, C, 1, L], but a [1, 1, L] one [1, L, 1, 1]: padding its length puts the Pad on the CPU.

    Measured on reflect and edge Pads of [1, 64], [1, 4, 64], [1, 4, 8, 64], [1, 576], [1, 1, 576]
    and [1, 4, 576] inputs on RK3588 and RK3566 (tests/forms_models.py pad_first, stft_pad).
    """
    if node.attr("mode", "constant") not in PAD_MODES_NPU_LIMITED:
        return None
    form = _pads_in_4d(node)
    if form is None:
        return None
    outside = sorted(a for a, (_size, start, end) in form.items() if (start or end) and a not in PAD_NPU_AXES_4D)
    return Offence(tuple(node.input(0).shape), f"pads axis {outside[0]} of the 4-D form") if outside else None


# OBSERVED: the channel block of a Pad that appends channels in an fp16 build, half the int8 one
# (the same 16 bytes on RK3588, 8 on RK3566): RK3588 runs 4, 12, 20, 36, 44, 2, 6, 10 channels on
# the CPU and 8, 16, 24 ... on the NPU; RK3566 2, 6, 10 on the CPU and 4, 8, 12, 20 ... on the NPU.
PAD_CHANNEL_BLOCK_FP16 = {"rk3588": 8, "rk3566": 4, "rk3568": 4}


def _appended_unaligned_channels(node: NodeView, block: int):
    """The channel count of a constant Pad that appends channels to an input whose count is not
    a multiple of `block`, as an Offence; else None."""
    if node.attr("mode", "constant") != "constant":
        return None
    channels, start, end = (_pads_in_4d(node) or {}).get(1, (1, 0, 0))
    if start or not end or node.attr("rknn_pad_channels_last") == 1:
        return None
    return Offence(channels, "channels padded at the end") if channels % block else None


@RULES.rule("Pad", chips=tuple(PAD_CHANNEL_BLOCK_INT8), precisions=("int8",), ALIGN="16 on RK3588, RK3576, RK3562 and RV1106, 8 on RK3566/RK3568")
def constant_pad_appending_to_unaligned_channels(node: NodeView, chip: str):
    """A constant Pad that appends channels (pads the channel axis of the toolkit's 4-D form at its end only, as MediaPipe's BlazeBlocks zero-pad before their residual Add) runs on the CPU when the input's channel count is not a multiple of the NPU's channel block ({ALIGN} in an int8 build); padding at the start or on both sides, or an aligned input, keeps it on the NPU.

    Measured with rknn-toolkit2 2.5.0, int8, on packs of independent Pads (tests/forms_models.py
    pad_pack, 73 cases, opset 11 and 13 alike; tests/fixtures/forms/verdicts.json): channel pads
    of 2 to 72 channels by 2 to 24 at the end: CPU for 8, 24, 40, 56, 72 on RK3588 only and 2, 4,
    6, 10, 12, 20, 36, 44 on both chips, NPU for 16, 32, 48, 64; the same whatever the amount,
    the value (0 or 1), pads and value as initializers or Constant nodes, a first node or after a
    Conv or Relu, before an Add, a Conv or the output, with height also padded, and for 3-D inputs
    as their 4-D form ([1, C, L]: C; [1, 1, L]: L). Start-only or both-sides channel pads (24 by
    4+4, 12 by 2+2, 24, 20 and 12 at the start) and height/width/batch pads: NPU. A map the
    toolkit holds with its last axis as channels (passes.pad_of_a_channels_last_map) has no
    channels on axis 1: its Pads there stayed on the NPU. RK3568 placed every case as RK3566, RK3576,
    RK3562 and RV1106 as RK3588 (scripts/probe_rknn_chips.py, tests/fixtures/forms/chip_verdicts.json).
    """
    return _appended_unaligned_channels(node, PAD_CHANNEL_BLOCK_INT8[chip])


@RULES.rule("Pad", chips=tuple(PAD_CHANNEL_BLOCK_FP16), precisions=("fp16",), ALIGN="8 on RK3588, 4 on RK3566/RK3568")
def constant_pad_appending_to_unaligned_channels_fp16(node: NodeView, chip: str):
    """In an fp16 build a constant Pad that appends channels (at the end of the channel axis of the toolkit's 4-D form only) runs on the CPU when the input's channel count is not a multiple of the channel block ({ALIGN}: half the int8 block, the same bytes).

    Measured with rknn-toolkit2 2.5.0, fp16, on the same pack (tests/forms_models.py pad_pack_fp16).
    """
    return _appended_unaligned_channels(node, PAD_CHANNEL_BLOCK_FP16[chip])


@RULES.rule("Pad", chips=("rk3566", "rk3568"))
def constant_pad_of_a_low_rank_input_folded_into_conv(node: NodeView, chip: str):
    """On this chip the toolkit converts a 2-D or 3-D model input to the NPU's layout with a Reshape on the CPU; a constant Pad of that input it folds into the Conv after it (passes.constant_pad_folded_into_conv) keeps only that Reshape as its own layer, on the CPU (rknn-toolkit2 2.5.0, observed; RK3588 converts the input on the NPU).

    Measured on a Pad of a [1, 64] and a [1, 4, 64] model input before a [1, 16] Conv (CPU), and
    of a [1, 4, 8, 64] one (NPU), on RK3566 and RK3588 (tests/forms_models.py pad_first).
    """
    folded = node.attr("rknn_pad_into_conv")
    x = node.input(0)
    if folded is None or x is None or not x.is_graph_input or x.rank not in (2, 3) or _one_channel_signal(x):
        return None
    return Offence(x.name, "2-D or 3-D model input", uncertain=folded != "folded")


def _one_channel_signal(x) -> bool:
    """A [1, 1, L] tensor, which the toolkit makes [1, L, 1, 1] for a Pad (its L as channels): a model
    input of that shape needs no layout Reshape (unit_channel_pad_pack: [1, 1, 64] on RK3566's NPU)."""
    return x.rank == 3 and x.shape is not None and x.shape[0] == 1 and x.shape[1] == 1


# The most channels (a [1, 1, L] signal's length) a constant Pad folded into a Conv keeps on the NPU.
PAD_SIGNAL_LENGTH_MAX = 510


@RULES.rule("Pad", chips=("rk3588", "rk3576", "rk3566", "rk3568", "rk3562", "rv1106"), MAX=PAD_SIGNAL_LENGTH_MAX)
def constant_pad_of_a_long_signal_folded_into_conv(node: NodeView, chip: str):
    """A constant Pad of a one-channel signal [1, 1, L] that the toolkit folds into the Conv after it (passes.constant_pad_folded_into_conv), which it lays out as [1, L, 1, 1] with L as channels, runs on the CPU when L is more than {MAX} (rknn-toolkit2 2.5.0, observed: Mimi's and EnCodec-style causal padding of a long waveform).

    Measured with unit_channel_pad_pack (tests/forms_models.py; a Pad of the last axis by 3 to 15
    steps into a Conv1d of kernel 7 or 16, of a model input or a Relu's result) on RK3588 and
    RK3566 alike: L = 64 to 510 on the NPU, 511, 512, 520, 576, 1024 and 4000 on the CPU; [1, 2,
    576] and [1, 4, 4000] on the NPU of RK3588. RK3568, RK3576, RK3562 and RV1106 place the pack's
    long signals alike (scripts/probe_rknn_chips.py, 2026-12-05).
    """
    x = node.input(0)
    if node.attr("rknn_pad_into_conv") is None or x is None or not _one_channel_signal(x) or not isinstance(x.shape[2], int):
        return None
    return Offence(x.shape[2], f"a one-channel signal of length {x.shape[2]}") if x.shape[2] > PAD_SIGNAL_LENGTH_MAX else None


@RULES.rule("Reshape", chips=("rk3566", "rk3568"))
def batched_last_axis_heads(node: NodeView, chip: str):
    """On this chip the heads' Reshape [B, T, C] -> [B, T, H, 2*kd + vd] of a joint projection whose q, k and v are Split on the last axis, over B > 1 token sets (TinyViT's windowed attention), runs on the CPU or the NPU by a rule not found (rknn-toolkit2 2.5.0, observed): uncertain.

    Measured on tests/forms_models.py last_axis_split_pack on RK3566 (2026-12-04): CPU for 4
    windows of 49 or 64 tokens with 4 heads of 32 (scaled or not); NPU for 2 windows of 16 tokens
    with 2 heads of 32 and 4 windows of 49 with 2 heads of 16. Marked by passes.batched_attention_layouts.
    """
    if node.attr("rknn_batched_last_axis_heads") is None:
        return None
    return Offence(tuple(node.output(0).shape or ()), "heads of a batched joint projection split on the last axis", uncertain=True)


@RULES.rule("Reshape", chips=("rk3566", "rk3568"), ALIGN=8)
def reshape_of_unaligned_attention_heads(node: NodeView, chip: str):
    """On this chip the toolkit runs on the CPU a Reshape beside a Transpose that splits the last axis into attention heads, or merges the heads back, when a head's size is not a multiple of {ALIGN} (rknn-toolkit2 2.5.0, observed).

    Measured on PP-OCRv4 rec's SVTR blocks (8 heads of 15: the qkv split and the merge on the
    CPU) and on the SVTR block form with heads of 15 (CPU), 8, 16 and 32 (NPU), on RK3566
    (tests/forms_models.py svtr_block). A Reshape that splits more than the last axis (a map
    unfolded into patches, MobileViT-v2's [1, C, H, W] -> [1, C, H/2, 2, W/2, 2]) is no head split:
    the pool's RK3566 verdicts have those on the NPU.
    """
    if node.attr("rknn_batched_heads_layer") is not None:
        return None  # a batch of token sets splits its heads on the NPU (passes.batched_attention_layouts)
    if node.attr(_passes.MAP_UNFLATTEN_ATTRIBUTE) is not None:
        return None  # tokens swapped back into a map [N, C, H, W] (passes.token_swap_beside_a_map_reshape), no heads
    if node.attr(_passes.SPLIT_BEFORE_A_VIEW_ATTRIBUTE) is not None:
        return None  # 3-D batched attention: the Transpose joins the view after it, not this split (passes.transposes_merged_into_matmul)
    joined = node.attr("rknn_head_size")  # the Transposes after it joined it (passes.transposes_merged_into_matmul)
    if joined is not None:
        return Offence(int(joined), "values per head") if int(joined) % 8 else None
    x, out = node.input(0), node.output(0)
    if x is None or out is None or not x.is_static or not out.is_static or not x.shape or not out.shape:
        return None
    # Heads are split before their Transpose and merged after it; a feature map flattened before
    # a Transpose (or unflattened after one) is a token swap (passes.token_swap_beside_a_map_reshape).
    splits = len(out.shape) > len(x.shape)
    beside_transpose = out.consumers == ("Transpose",) if splits else x.producer == "Transpose"
    heads, tokens = (tuple(out.shape), tuple(x.shape)) if splits else (tuple(x.shape), tuple(out.shape))
    # Only the last axis split into (heads, head size), the others as they are: a map unfolded
    # into patches ([1, C, H, W] -> [1, C, H/p, p, W/p, p], MobileViT-v2) is no head split.
    if not beside_transpose or len(heads) != len(tokens) + 1 or heads[:-2] != tokens[:-1] or heads[-2] * heads[-1] != tokens[-1]:
        return None
    small = heads[-1]
    return Offence(small, "values per head") if heads[-2] > 1 and small % 8 else None


@RULES.rule("Reshape", chips=("rk3588",))
def one_token_heads_merge_on_cpu(node: NodeView, chip: str):
    """On this chip the toolkit runs on the CPU the Reshape that merges attention's heads of one token each back before a residual Linear, when the head size is not a multiple of 16 (rknn-toolkit2 2.5.0, observed; passes.one_token_heads_merge_before_a_residual marks it and says what was measured: found on the held-out pool pair hf_mobilevit/rk3588, measured on its attention form, tests/forms_models.py MOBILEVIT_STAGE_PACKS)."""
    d = node.attr("rknn_one_token_heads_merge")
    return Offence(int(d), "values per head of one token") if d is not None else None


@RULES.rule("Transpose", chips=("rk3566", "rk3568"), ALIGN=8)
def transpose_layer_of_unaligned_value(node: NodeView, chip: str):
    """On this chip the toolkit swaps the channels and width of attention's value (the second operand of attn @ v, which it holds with its last axis as channels) with a Transpose layer of its own, which runs on the CPU unless both are multiples of {ALIGN}; the Reshape that split the value into heads runs there with it (rknn-toolkit2 2.5.0, observed).

    Measured on attention blocks with 2 heads of 32 and 12, 17, 20 or 65 tokens (CPU) or 8, 16,
    24 ... 64 tokens (NPU), and heads of 12, 15, 20 (CPU) (tests/forms_models.py attention_block;
    the pass transposes_merged_into_matmul marks the Transpose); and where the value is a feature
    map's heads with the tokens last ([N, H, D, T], EfficientFormerV2) swapped by a Transpose
    [0, 1, 3, 2]: 4 or 9 tokens of 32 (CPU), 16 of 32 (NPU) (tests/forms_models.py map_attention).
    """
    value = node.attr("rknn_value_transpose")
    if value is None or len(value) != 2:
        return None
    return Offence(f"{value[0]}x{value[1]}", "tokens x values per head of the value")


@RULES.rule("Mul", "Div", chips=("rk3566", "rk3568"))
def scale_beside_heads_laid_out(node: NodeView, chip: str):
    """On this chip the scalar scale right after attention's heads' Transpose, where that Transpose is a layer of its own because something besides a product reads the heads laid out (passes.transposes_merged_into_matmul: Nyströmformer's q and k cut into segments for their landmarks), runs with that CPU layer or on the NPU by a rule not found (rknn-toolkit2 2.5.0, observed): uncertain.

    Measured: transformers' Nyströmformer (fresh4 hf_nystromformer, RK3566: q / sqrt(sqrt(d)) and k's
    alike, with the Transpose); tests/forms_models.py transpose_readers_pack seg_q (q / sqrt(d): NPU).
    """
    if node.attr(_passes.HEADS_LAID_OUT_SCALE_ATTRIBUTE) is None:
        return None
    return Offence("heads' Transpose", "scale beside a CPU", uncertain=True)


@RULES.rule("Reshape", chips=("rk3566", "rk3568"), MAX_BATCH=_passes.MANY_SETS_MERGE_MAX_BATCH)
def merge_of_many_token_sets(node: NodeView, chip: str):
    """On this chip the Reshape that merges attention's heads back over a batch of more than {MAX_BATCH} token sets (windowed attention) runs on the CPU (rknn-toolkit2 2.5.0, observed; passes.merge_of_many_token_sets marks it and says what was measured)."""
    sets = node.attr(_passes.MANY_SETS_MERGE_ATTRIBUTE)
    return Offence(int(sets), "token sets whose heads are merged") if sets is not None else None


@RULES.rule("Transpose", chips=("rk3566", "rk3568"))
def value_cut_into_segments(node: NodeView, chip: str):
    """On this chip attention's value, also cut into segments of tokens for their means (a view [N, H, L, T/L, D]), keeps its split and Transpose on the CPU or on the NPU by a rule not found (rknn-toolkit2 2.5.0, observed): uncertain.

    Measured on tests/forms_models.py transpose_readers_pack (RK3566, 2026-12-04): CPU with the key
    also cut into segments (seg_k_one, seg_k_two), NPU with the query cut instead (seg_q, seg_q16).
    Marked by passes.transposes_merged_into_matmul (_heads_read_as_a_layout).
    """
    if node.attr(_passes.HEADS_LAID_OUT_ATTRIBUTE) != 2:
        return None
    return Offence("segments of tokens", "value also cut into", uncertain=True)


@RULES.rule("Transpose", chips=("rk3566", "rk3568"), ALIGN=8)
def transpose_layer_of_unaligned_windowed_key(node: NodeView, chip: str):
    """On this chip the toolkit does not merge into the scores' product the Transpose that swaps the last two axes of attention's key when the key keeps its windows on an axis of their own ([N, nW, H, T, D], 5-D: Twins' locally-grouped attention; NesT's [N, H, nW, T, D] alike): it is a Transpose layer of its own, which runs on the CPU unless T and D are both multiples of {ALIGN}, and the scalar scale on the swapped key (q * sqrt(s), k^T * sqrt(s), as scaled_dot_product_attention's export writes it) runs there with it (rknn-toolkit2 2.5.0, observed; the pass transposes_merged_into_matmul marks it).

    Measured on tests/forms_models.py window_axis_attention_pack (RK3566, 2026-12-04): 1, 4 and 9
    windows of 49 tokens, heads of 32, scaled on both operands or after the product; 20 tokens of
    32, 32 of 20, 16 of 12: CPU; 16 of 16, 24 of 32, 64 of 16: NPU; the same 49 tokens of 32
    without a window axis ([1, H, T, D]): merged (RK3588: all on the NPU).
    """
    key = node.attr(_passes.WINDOWED_KEY_ATTRIBUTE)
    return Offence(f"{key[0]}x{key[1]}", "tokens x values per head of a key with a window axis") if key is not None and len(key) == 2 else None


@RULES.rule("Transpose", chips=("rk3566", "rk3568"))
def windowed_merge_layer(node: NodeView, chip: str):
    """On this chip the toolkit merges into attn @ v the Transpose [0, 1, 3, 2, 4] that merges the heads of attention over windows on an axis of their own ([N, nW, H, T, D] -> [N, nW, T, H, D]) only where reshapes take its result straight into a Linear; before a window reverse that moves the windows (Twins' Reshape [1, hp, wp, ws, ws, C], Transpose [0, 1, 3, 2, 4, 5]) it is a Transpose layer on the CPU, and before the crop (Slice) of one padded window it runs there with the reshapes between (rknn-toolkit2 2.5.0, observed; the pass transposes_merged_into_matmul marks it).

    Measured on tests/forms_models.py local_grouped_attention_pack (RK3566, 2026-12-04): 9 and 4
    windows of 7x7 (padded or not) and 4 of 8x8 (2 heads of 32, 8 of 8 or 16): the merge on the
    CPU, the reverse on the NPU; one window of 7x7 padded from 4x4 or 2x2 and cropped: the merge
    and the reverse's Reshapes and Transpose on the CPU; one window not padded (7x7, 8x8), and
    window_axis_attention_pack's merges into a Linear: merged (RK3588: all on the NPU).
    """
    chain = node.attr(_passes.WINDOWED_MERGE_ATTRIBUTE)
    if chain is None:
        return None
    return Offence(int(chain), "reshapes of a cropped window with the heads' merge" if chain else "heads' merge before a window reverse")


@RULES.rule("Transpose", chips=("rk3566", "rk3568"))
def tokens_unsqueezed_into_a_value(node: NodeView, chip: str):
    """On this chip a feature map's tokens made attention's value by a Reshape [N, D, H*W], a Transpose [0, 2, 1] and an Unsqueeze of a leading axis (MobileNetV4's multi-query attention: one value head for every query head) run on the CPU, all three, whatever the sizes (rknn-toolkit2 2.5.0, observed; the pass transposes_merged_into_matmul joins them).

    Measured on tests/forms_models.py map_attention "mqa": 4, 9 and 16 tokens of 32 values, with
    one or two query heads (CPU), where the key, spelled the same but transposed again into the
    scores' product, stays on the NPU; on MobileNetV4-hybrid's attention (4 tokens).
    """
    value = node.attr("rknn_unsqueezed_tokens_value")
    return Offence(f"{value[0]}x{value[1]}", "tokens x values of the unsqueezed value") if value is not None and len(value) == 2 else None


@RULES.rule("Transpose", chips=("rk3588", "rk3576", "rk3562"))
def softmax_axis_transpose_layer(node: NodeView, chip: str):
    """The toolkit runs on the CPU the Transpose that brings an inner axis last for a Softmax and is undone after it (a softmax along that axis as torch.onnx writes it below opset 13; rknn-toolkit2 2.5.0, observed on RK3588; the pass softmax_across_an_inner_axis marks it).

    Measured on tests/forms_models.py selective_kernel_attention (P = 2, 3 paths; C = 24, 60, 64)
    and skresnet18's eight selective-kernel blocks.
    """
    return Offence(tuple(node.attr("perm") or ()), "softmax axis brought last by") if node.attr("rknn_softmax_axis_transpose") is not None else None


@RULES.rule("Transpose", placement=Placement.FLOAT, precisions=("int8",), chips=("rk3588", "rk3576", "rk3562"))
def transpose_after_output_softmax(node: NodeView, chip: str):
    """The toolkit runs a Transpose read only by a Softmax that is a model output after the Softmax, on its float16 result, so it is kept in float with it (rknn-toolkit2 2.5.0, observed on RK3588; the pass transpose_into_an_output_softmax marks it); uncertain as the Softmax's own float16 (softmax_at_model_output).

    Measured on tests/forms_models.py transpose_into_output_softmax (MTCNN P-Net's head).
    """
    if node.attr(_passes.OUTPUT_SOFTMAX_TRANSPOSE_ATTRIBUTE) is None:
        return None
    return Offence(tuple(node.attr("perm") or ()), "moved after the output Softmax, float16 with it", uncertain=True)


@RULES.rule("MatMul", chips=("rk3588",))
def multi_query_attention_on_cpu(node: NodeView, chip: str):
    """On RK3588 the toolkit runs on the CPU attention whose key and value are shared by the query's heads (MatMul, Softmax, MatMul with the key and value broadcast over the heads, with q's and k's scales), which it makes one layer (rknn-toolkit2 2.5.0, observed; the pass multi_query_attention_layer groups it). Measured with 2 and 4 query heads; with one head it runs on the NPU."""
    heads = node.attr("rknn_multi_query_heads")
    return Offence(int(heads), "query heads sharing one key and value") if heads is not None else None


@RULES.rule("Reshape", chips=("rk3566", "rk3568", "rk3588"), ALIGN=16)
def patch_fold_reshape_layer(node: NodeView, chip: str):
    """The toolkit runs on the CPU the Reshape that splits patches for folding them back into a map ([N, C, p*p, patches] -> [N, C, p, p, H/p, W/p] before a Transpose [0, 1, 4, 2, 5, 3], MobileViT-v2): on RK3566/RK3568 always, on RK3588 when C is not a multiple of {ALIGN} (rknn-toolkit2 2.5.0, observed; the pass patches_unfolded_and_folded marks it).

    Measured on tests/forms_models.py patch_unfold: C = 24, 64, 96 (RK3566: CPU; RK3588: CPU for
    24, NPU for 64 and 96); the unfolding's Reshape of the same shape stays on the NPU.
    """
    channels = node.attr("rknn_patch_fold_channels")
    if channels is None or (chip == "rk3588" and int(channels) % 16 == 0):
        return None
    return Offence(int(channels), "channels of the folded patches")


# OBSERVED: what computes a 3-D model output that a Reshape changing nothing then names the
# layout layer of, and where that layer runs: on RK3566/RK3568 on the CPU from these sources...
UNCHANGED_VIEW_CPU_SOURCES = frozenset({"norm", "biased"})
# ...and on RK3588 from these when the width is not a multiple of 16.
UNCHANGED_VIEW_UNALIGNED_SOURCES = frozenset({"norm", "sum"})


@RULES.rule("Reshape", chips=("rk3566", "rk3568", "rk3588"), ALIGN=16)
def unchanged_3d_output_view(node: NodeView, chip: str):
    """A Reshape that changes nothing and is a 3-D model output [N, T, K] (GPT-2's last node) names the layer the toolkit turns the output back to the caller's layout with; that layer runs on the CPU on RK3566/RK3568 when a LayerNorm or a product's bias Add computed the tensor, and on RK3588 when a LayerNorm or an Add of two computed tensors did and K is not a multiple of {ALIGN} (rknn-toolkit2 2.5.0, observed; the pass unchanged_output_views notes the source).

    Measured on RK3566 and RK3588 with tests/forms_models.py output_view_pack ([1, 32, K] after a
    Linear): from a decomposed LayerNorm (K = 64: RK3566 CPU, RK3588 NPU; K = 24: CPU on both), a
    Linear's bias Add (K = 64: RK3566 CPU, RK3588 NPU), a MatMul without bias (K = 64 and 24: NPU
    on both), an Add of two Linears (K = 64: NPU on both; K = 24: RK3566 NPU, RK3588 CPU); the
    same LayerNorm's Reshape that changes the last axis, makes 2-D, or is read by a Relu: NPU. The
    bias Add at K = 24 was not measured; RK3568 is taken to behave as RK3566 (not measured).
    """
    source = node.attr("rknn_output_view_source")
    if source is None:
        return None
    width = node.output(0).shape[2] if node.output(0) is not None else None
    if chip != "rk3588":
        return Offence(source, "output computed by") if source in UNCHANGED_VIEW_CPU_SOURCES else None
    if source in UNCHANGED_VIEW_UNALIGNED_SOURCES and isinstance(width, int) and width % 16:
        return Offence(width, f"output width ({source})")
    return None


POSITION_MAP_CELLS_ALIGN = 16  # OBSERVED (RK3588): the cells of a position encoding's map kept on the NPU
POSITION_HEADS_ALIGN = 16  # OBSERVED (RK3588): heads that keep the Reshape into an unaligned map on the NPU
POSITION_HEAD_ALIGN = 16  # OBSERVED (RK3588): a head size that puts the swap back after an unaligned map on the CPU


@RULES.rule("Reshape", chips=("rk3588",), ALIGN=POSITION_MAP_CELLS_ALIGN, HEADS_ALIGN=POSITION_HEADS_ALIGN)
def position_encoding_map_reshape(node: NodeView, chip: str):
    """On RK3588 the toolkit runs on the CPU the Reshapes between CoaT's convolutional relative position encoding's tokens and its map ([1, heads, head, H*W] -> [1, heads*head, H, W] and back) when the map's H*W cells are not a multiple of {ALIGN}, but the Reshape into the map when the heads are a multiple of {HEADS_ALIGN} (rknn-toolkit2 2.5.0, observed; the pass position_encoding_maps marks them).

    Measured with tests/forms_models.py crpe_pack: maps of 2x2 (64, 128 and 320 channels) and 3x3
    (320): CPU; 4x4 (64, 320), 8x8 (128), 16x16 (64): NPU; and on the pool's timm_coat_lite_tiny
    (its 2x2 last stage on the CPU). On RK3566/RK3568 they run on the CPU at every size, with the
    Transposes beside them (passes.position_encoding_reshapes_join_their_transposes). The heads
    (crpe_heads, crpe_heads16: 2x2 and 3x3 maps): the Reshape into the map on the NPU with 16 and
    32 heads (8, 16 and 24 values), on the CPU with 2, 4, 6, 8, 12 and 24; the Reshape back on the
    CPU with every one of them.
    """
    cells = node.attr("rknn_position_map_cells")
    if cells is None or int(cells) % POSITION_MAP_CELLS_ALIGN == 0:
        return None
    heads = node.attr("rknn_position_map_heads")
    if heads is not None and int(heads) % POSITION_HEADS_ALIGN == 0:
        return None
    return Offence(int(cells), "cells of the position encoding's map")


@RULES.rule("Transpose", chips=("rk3588",), ALIGN=POSITION_MAP_CELLS_ALIGN, HEAD_ALIGN=POSITION_HEAD_ALIGN)
def position_encoding_swap_back(node: NodeView, chip: str):
    """On RK3588 the toolkit runs on the CPU the Transpose that swaps CoaT's position encoding's tokens back after a map of cells not a multiple of {ALIGN} when the head size is a multiple of {HEAD_ALIGN}; with other head sizes it runs on the NPU (rknn-toolkit2 2.5.0, observed; the pass position_encoding_maps marks it).

    Measured with tests/forms_models.py crpe_pack on 2x2 and 3x3 maps: heads of 16, 32, 48 and 64
    values (2 to 16 heads, 64 to 512 channels): CPU; of 8, 12, 24 and 40 (8 to 32 heads): NPU; 4x4
    and larger maps: NPU. Found on the fresh pair timm_coat_lite_mini/rk3588 (8 heads of 64 on a
    2x2 map), after which the probes were made.
    """
    cells, head = node.attr("rknn_position_map_cells"), node.attr("rknn_position_map_head")
    if cells is None or head is None or int(cells) % POSITION_MAP_CELLS_ALIGN == 0 or int(head) % POSITION_HEAD_ALIGN:
        return None
    return Offence(int(head), "head size of the position encoding's swap back")


KEYPOINT_CELLS_ALIGN = 16  # OBSERVED (RK3588): the cells a per-keypoint view keeps on the NPU


@RULES.rule("Reshape", chips=("rk3566", "rk3568", "rk3588"), ALIGN=KEYPOINT_CELLS_ALIGN)
def keypoints_viewed_per_keypoint(node: NodeView, chip: str):
    """The toolkit runs on the CPU a pose head's view of its keypoints per keypoint ([N, k*d, W] -> [N, k, d, W], read by Slices of the d values): on RK3566/RK3568 always, on RK3588 when the W cells are not a multiple of {ALIGN} (rknn-toolkit2 2.5.0, observed; the pass keypoint_views marks it). The view back after their Concat ([N, k, d, W] -> [N, k*d, W]) mostly goes with it, but not always, by what the audit does not model: uncertain where the view is on the CPU.

    Measured on RK3566 and RK3588 with tests/forms_models.py keypoint_view_pack (Ultralytics'
    Pose.kpts_decode: view, Slices, Sigmoid, Concat along axis 2, view back) and d = 3 values:
    the view on RK3566 on the CPU for every k of 3 to 11, 15, 16, 17, 32, at 336, 256 and 400
    cells to 525, read by the head's Concat or as a model output; on RK3588 on the NPU at W = 336,
    256, 400 and on the CPU at 525, 500, 125, 100. The view back: with the view in every probe
    except k = 5 on RK3566 (NPU, in two packs); on RK3588 the pool's three Ultralytics pose heads
    (525 cells) have it on the NPU where the probes had it on the CPU. With d = 2 (no Concat back)
    the toolkit names its CPU layers after other nodes (the coordinates' Slice, a box level's
    Reshape): not modelled, not in the packs. RK3568 is taken to behave as RK3566 (not measured).
    """
    view = node.attr("rknn_keypoint_view")  # passes.keypoint_views: [cells, 1 for the view back]
    if view is None:
        return None
    cells, back = (int(v) for v in view)
    if chip == "rk3588" and cells % KEYPOINT_CELLS_ALIGN == 0:
        return None
    return Offence(cells, f"cells of the keypoints' {'view back' if back else 'view'}", uncertain=bool(back))


@RULES.rule("Reshape", chips=("rk3566", "rk3568"))
def grid_reshape_before_a_one_token_subsample(node: NodeView, chip: str):
    """On this chip the Reshape of tokens into a grid that LeViT's subsampling then slices down to a single token runs on the CPU for some grids and on the NPU for others, by what the audit does not model: uncertain (rknn-toolkit2 2.5.0, observed; the pass subsampled_token_grid marks it).

    Measured on tests/forms_models.py subsample_pack: 4x4 step 4 and 8x8 step 8 on the CPU, 2x2
    step 2 and 3x3 step 3 on the NPU after a Linear; LeViT-128S's 2x2 grid on the CPU.
    """
    side = node.attr("rknn_one_token_grid")
    return Offence(int(side), "grid side subsampled to one token", uncertain=True) if side is not None else None


@RULES.rule("Reshape", chips=_passes.BATCH_RESHAPE_CHIPS)
def batch_made_and_merged_by_reshapes(node: NodeView, chip: str):
    """On this chip a batch of token sets made inside the model by a Reshape ([1, B*N, C] to [B, N, C], TNT's pixel embedding) and joined back set by set by another ([B, N, C] to [1, B, N*C], TNT's inner tokens passed to the outer ones) has both Reshapes on the CPU, where a batch that is the model input's, or joined back into [1, B*N, C], is joined on the NPU (rknn-toolkit2 2.5.0, observed; the pass batch_made_and_merged_by_reshapes marks them).

    Measured on RK3566 (tests/forms_models.py batch_merge_pack; docs/audit.md): batches of 2, 4
    and 16 sets of 2 to 16 tokens of 8 to 32 channels, joined into [1, B, N*C] after a residual
    Add of Linears and read by a layer norm: both Reshapes on the CPU; joined into [1, B*N, C] or
    split into [1, B, N, C] instead: both on the NPU; the same batches as a model input, joined: NPU.
    """
    made, merged = node.attr(_passes.BATCH_MADE_ATTRIBUTE), node.attr(_passes.BATCH_MERGED_ATTRIBUTE)
    if merged is not None:
        return Offence(int(merged), "batch made by a Reshape, its token sets joined")
    return Offence(int(made), "batch made here, its token sets later joined by a Reshape") if made is not None else None


@RULES.rule("Reshape", chips=("rk3566", "rk3568"))
def blocks_along_their_own_axis(node: NodeView, chip: str):
    """On this chip the Reshape that ends a map's partition into several blocks laid along an axis of their own ([1, blocks, w*w, C], NesT; Swin puts its windows in the batch instead) runs on the CPU (rknn-toolkit2 2.5.0, observed; the pass map_swaps_around_a_block_partition marks it).

    Measured on tests/forms_models.py block_partition_pack: 16 and 4 blocks of 4x4 or 8x8: CPU;
    one block: NPU.
    """
    blocks = node.attr(_passes.BLOCKS_AXIS_ATTRIBUTE)
    return Offence(int(blocks), "blocks along their own axis") if blocks is not None else None


UNIT_BATCHNORM_TOKENS_ALIGN = 8  # OBSERVED (RK3566): tokens at which the Reshape back runs on the CPU


@RULES.rule("Reshape", chips=_passes.UNIT_BATCHNORM_RESHAPE_CHIPS, ALIGN=UNIT_BATCHNORM_TOKENS_ALIGN)
def reshape_back_of_a_dropped_batchnorm(node: NodeView, chip: str):
    """On this chip the toolkit runs on the CPU the Reshape back to tokens of a LeViT Linear whose untrained BatchNorm1d (weight 1, bias 0, mean 0, variance 1) it dropped, when a HardSwish reads it and the tokens are a multiple of {ALIGN}, in a plain build; a build with its fusion rule fuse_conv_conv_add disabled (its own advice where that rule crashes) kept it on the NPU: uncertain (rknn-toolkit2 2.5.0, observed; the pass reshape_back_after_a_unit_batchnorm marks it).

    Measured on tests/forms_models.py levit_mlp_pack: CPU at 8, 16, 24, 32, 64 tokens, NPU at 1,
    4, 9, 49 (opsets 14 and 17); found on the held-out hf_levit/rk3566 (16 tokens: CPU). The tuning
    timm_levit_128s/rk3566, the same spelling at 16 tokens but built with
    disable_rules=['fuse_conv_conv_add'], has them on the NPU: that build was not probed.
    """
    tokens = node.attr(_passes.UNIT_BATCHNORM_TOKENS_ATTRIBUTE)
    if tokens is None or int(tokens) % UNIT_BATCHNORM_TOKENS_ALIGN:
        return None
    return Offence(int(tokens), "tokens through a dropped untrained BatchNorm1d, read by a HardSwish", uncertain=True)


@RULES.rule("Reshape", "Transpose", chips=("rk3566", "rk3568", "rk3588"), ALIGN=16)
def patches_through_the_batch_on_cpu(node: NodeView, chip: str):
    """The toolkit runs on the CPU MobileViT's unfolding of a map more than one patch wide into patches through the batch axis, and the fold back: on RK3566/RK3568 every layout layer of the chain but the fold's first Reshape; on RK3588 the Reshapes to and from [N*C*H/p, p, W/p, p] unless the map's width is a multiple of {ALIGN}, and the patch-pixel Transpose [0, 3, 2, 1] and the Reshape after it (on the fold, that Reshape) unless the patches are a multiple of {ALIGN} (rknn-toolkit2 2.5.0, observed; the pass patches_through_the_batch marks the chain).

    Measured on tests/forms_models.py patch_unfold_v1 with 2x2 patches: width 4, 6, 8, 10, 12
    (RK3588: its Reshapes on the CPU) and 16 (NPU); 4, 9, 25, 36 patches (RK3588: the pixels'
    Transpose on the CPU) and 16, 64 (NPU); 4x4 patches of 8x8 (CPU), 16x16 and 32x32 maps (NPU);
    a map one patch wide (2x2 map, 2x2 patches; 4x4 map, 4x4 patches): all on the NPU, both chips.
    Matches MobileViT-XXS's three blocks (8x8, 4x4 and 2x2 maps) on RK3566 and RK3588.
    """
    role, dims = node.attr("rknn_batch_patches"), node.attr("rknn_batch_patches_dims")
    if role is None or dims is None or len(dims) != 3 or int(dims[0]) <= 1:
        return None
    wide, width, patches = (int(d) for d in dims)
    if chip != "rk3588":
        return Offence(f"{wide} patches wide", "map unfolded through the batch axis")
    if role == "map" and width % 16:
        return Offence(width, "map width unfolded through the batch axis")
    if role in ("pixels", "after_pixels") and patches % 16:
        return Offence(patches, "patches unfolded through the batch axis")
    return None


# The channel block (the last axis) of a 3-D model input whose layout Reshape RK3588 runs on its NPU;
# on RK3566/RK3568 that Reshape runs on the CPU whatever the channels (None). An input of one channel
# needs no Reshape on either (scaled_input_pack). RK3576, RK3562 and RV1106 ran a constant Pad's layout
# Reshape of such an input on the NPU at every length (input_pad_align_pack, scripts/probe_rknn_chips.py).
INPUT_LAYOUT_ALIGN = {"rk3588": 16, "rk3566": None, "rk3568": None}


@RULES.rule("Identity", chips=tuple(INPUT_LAYOUT_ALIGN), ALIGN="16 on RK3588; none on RK3566/RK3568, where any count but one does")
def identity_of_a_3d_model_input(node: NodeView, chip: str):
    """The toolkit converts a 3-D model input [N, T, C] to the NPU's layout with a Reshape, which it names after an Identity that reads the input (or an x * 1, x / 1, x - 0 it removes): on the CPU when C is more than one and not a multiple of the chip's block ({ALIGN}) (rknn-toolkit2 2.5.0, observed).

    Measured on tests/forms_models.py identity_pack (a [1, 16, 32] input, Identity, Linear) on
    RK3566 and RK3588, and scaled_input_pack (PatchTST's series [1, 64, 3] times its mask of ones;
    an Identity or x * 1 of [1, 64, C] into a Relu or a ReduceSum, C = 1 to 80): RK3588 CPU for C =
    2, 3, 4, 8, 12, 24, NPU for 1, 16, 32, 48, 80; RK3566 CPU for all but 1. RK3568 is taken to behave as RK3566.
    """
    x = node.inputs[0] if node.inputs else None
    if x is None or not x.is_graph_input or x.rank != 3 or x.shape is None:
        return None
    channels, align = x.shape[-1], INPUT_LAYOUT_ALIGN[chip]
    if channels == 1 or (align is not None and isinstance(channels, int) and channels % align == 0):
        return None
    return Offence(x.name, "3-D model input")


@RULES.rule("Pad", chips=tuple(c for c, align in INPUT_LAYOUT_ALIGN.items() if align), ALIGN="16")
def constant_pad_of_an_unaligned_3d_input_folded_into_conv(node: NodeView, chip: str):
    """The toolkit converts a 3-D model input [1, C, L] whose last axis L is not a multiple of {ALIGN} (and C more than one) to the NPU's layout with a Reshape on the CPU, as it does an Identity's (identity_of_a_3d_model_input); a constant Pad of that input it folds into the Conv after it (passes.constant_pad_folded_into_conv) keeps only that Reshape as its own layer, on the CPU (rknn-toolkit2 2.5.0, observed: TCN's causal padding of its [1, 40, 100] features).

    Measured with tests/forms_models.py input_pad_align_pack (a Pad by 2 on the left into a Conv1d
    of kernel 3, RK3588): L = 96, 112, 128 on the NPU (C = 40 or 4); L = 8, 24, 100, 104, 120 on the
    CPU, whatever C (4, 16, 40, 48). RK3566 put all of them on the CPU
    (constant_pad_of_a_low_rank_input_folded_into_conv). A one-channel signal [1, 1, L] is left to
    constant_pad_of_a_long_signal_folded_into_conv (L = 507 ran on the NPU); 2-D inputs were measured
    only at L = 64 (NPU). Other chips (scripts/probe_rknn_chips.py, the same pack): RK3568 CPU for all, as
    RK3566; RK3576, RK3562 and RV1106 NPU for every L (aligned or not), so the rule is RK3588's alone.
    """
    folded = node.attr("rknn_pad_into_conv")
    x = node.input(0)
    if folded is None or x is None or not x.is_graph_input or x.rank != 3 or x.shape is None or _one_channel_signal(x):
        return None
    length = x.shape[-1]
    if not isinstance(length, int) or length % INPUT_LAYOUT_ALIGN[chip] == 0:
        return None
    return Offence(x.name, f"3-D model input, last axis {length}", uncertain=folded != "folded")


# Producers of an Add's other operand whose layer the Add joins (the toolkit's MatMul/Conv
# with an added tensor, as ConvAdd layers show it): measured.
ADD_JOINS_LAYER_OF = ("MatMul", "Add", "Gemm")


@RULES.rule("Add", chips=("rk3566", "rk3568"), PRODUCERS=ADD_JOINS_LAYER_OF)
def residual_add_of_a_3d_model_input(node: NodeView, chip: str):
    """On this chip the toolkit converts a 3-D model input to the NPU's layout with a Reshape on the CPU; an Add of that input to a product ({PRODUCERS}) joins the product's layer and keeps only that Reshape as its own, on the CPU (rknn-toolkit2 2.5.0, observed).

    Measured on transformer_encoder's first residual Add (features + attention) and on a small
    MatMul, Add, residual Add model with a [1, 16, 64] input; RK3588 converts the input on the NPU.
    """
    ins = [t for t in node.inputs[:2] if t.present]
    if len(ins) != 2:
        return None
    for x, other in (ins, ins[::-1]):
        if x.is_graph_input and x.rank == 3 and other.producer in ADD_JOINS_LAYER_OF:
            return Offence(x.name, "3-D model input")
    return None


@RULES.rule("Slice", chips=("rk3562", "rk3576"))  # OBSERVED
def slice_negative_step(node: NodeView, chip: str):
    """On this chip a Slice with a negative step (reversal) runs on the CPU."""
    steps = node.input(4)
    if steps is None or steps.value is None:
        return None
    return Offence(tuple(int(s) for s in steps.value.reshape(-1))) if any(int(s) < 0 for s in steps.value.reshape(-1)) else None


@RULES.rule(placement=Placement.UNSUPPORTED, chips=("rv1106",), CPU_OPS=CPU_OPS_RV1106)
def rv1106_runtime_lacks_cpu_kernel(node: NodeView, chip: str):
    """rknn-toolkit2 builds this operator for the CPU, but the RV1103/RV1106 runtime has CPU kernels only for {CPU_OPS} (compiler list 4.1): the model will not run on the board."""
    op = node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}.{node.op_type}"
    if op in _RV1106_NPU_OPS or op in CPU_OPS_RV1106:
        return None
    return Offence(op)


# ----------------------------------------------------------------------------------------------
# int8 builds only: what the int8 quantiser does to a node (none of it applies to an fp16 build).
# ----------------------------------------------------------------------------------------------


def _integer_data(node: NodeView):
    """The first run-time data input of `node` of an integer or boolean type, else None."""
    # Asked of every Add, Mul, ... on every RKNN chip (integer_arithmetic_on_the_cpu reads its
    # chip, so it is not shared between chips): worked out once per node.
    found = node.memo.get(_integer_data, node)
    if found is node:
        positions = INTEGER_DATA_INPUTS.get(node.op_type, range(len(node.inputs)))
        found = node.memo[_integer_data] = next((t for t in _runtime_inputs(node, positions) if t.dtype in INTEGER_DTYPES), None)
    return found


@RULES.rule(*INTEGER_ARITHMETIC_OPS, placement=Placement.UNSUPPORTED, precisions=("int8",), TYPES=INTEGER_DTYPES)
def integer_result_as_model_output(node: NodeView, chip: str):
    """In an int8 build the RKNN compiler aborts ("Can not find quantize information") when this operator, computing on a run-time tensor of type {TYPES}, writes a model output.

    Measured with rknn-toolkit2 2.5.0 on 2026-12-04 on RK3588 and RK3566 (tests/forms_models.py
    integer_path): ids + 1 (int64 and int32), ids + ids, Equal and Not of the ids (bool) and
    RoBERTa's position ids as model outputs crash the compiler (signal 6); the same computations
    read by a Gather, or Cast to float before the output, convert (integer_arithmetic_on_the_cpu).
    """
    t = _integer_data(node)
    out = node.output(0)
    if t is None or out is None or not out.is_model_output:
        return None
    return Offence(t.dtype, f"input {t.name}; writes the model output {out.name}")


# OBSERVED: the integer arithmetic RK3588's NPU runs (in an int8 build), and on which element types.
NPU_INTEGER_OPS = {"rk3588": frozenset({"Add", "Sub"})}
NPU_INTEGER_TYPES = ("int32",)


@RULES.rule(*INTEGER_ARITHMETIC_OPS, "CumSum", precisions=("int8",), TYPES=INTEGER_DTYPES)
def integer_arithmetic_on_the_cpu(node: NodeView, chip: str):
    """In an int8 build this operator, computing on a run-time tensor of type {TYPES} inside the graph (RoBERTa's position ids from input_ids, read by a Gather), runs on the CPU in that integer type; on RK3588 an Add or Sub of int32 tensors runs on the NPU.

    Measured with rknn-toolkit2 2.5.0 on 2026-12-04 on RK3588 and RK3566 (tests/forms_models.py
    integer_path, each result read by a Gather of a position table): Equal, Not, CumSum, Mul and
    Add of RoBERTa's position ids (int64 and int32 ids); ids + 1, ids - 1, ids * 1 and ids + ids
    in int64, and CumSum of int64 or int32 ids: CPU on both; in int32, Add and Sub (of a constant
    or of a second ids input) on the NPU on RK3588 and the CPU on RK3566, Mul on the CPU on both.
    Other chips were not measured (the CPU is assumed, as on RK3566).
    """
    t = _integer_data(node)
    if t is None:
        return None
    if node.op_type in NPU_INTEGER_OPS.get(chip, ()) and all(i.dtype in NPU_INTEGER_TYPES for i in node.inputs if i.present):
        return None
    return Offence(t.dtype, f"input {t.name}")


@RULES.rule("Pow", placement=Placement.UNSUPPORTED, precisions=("int8",), TYPES=INTEGER_DTYPES)
def pow_integer_operands(node: NodeView, chip: str):
    """In an int8 build the RKNN compiler aborts on a Pow whose base and exponent are both integer tensors ({TYPES})."""
    dtypes = [t.dtype for t in node.inputs[:2] if t.present]
    return Offence(tuple(dtypes)) if len(dtypes) == 2 and all(d in INTEGER_DTYPES for d in dtypes) and not _known(node.inputs[0]) else None


# OBSERVED (3x3 convolutions, dilation = padding, 8x8 and 32x32 inputs, 256 and 960 input
# channels): from these dilations the toolkit splits the convolution by input channels into a
# float16 chain (Split, Conv, ConvAdd...) on the NPU ...
DILATION_FLOAT16_FROM = {"rk3566": 16, "rk3568": 16}
DILATION_FLOAT16_DEFAULT_FROM = 24
DILATION_FLOAT16_TO = 24  # ... the largest dilation measured split in float16 ...
DILATION_INT8_AGAIN = 36  # ... and at 36 the convolution is int8 again (a different lowering).
# Below DILATION_FLOAT16_FROM the split depends on the input channels (RK3588, dilation 12: float16
# with 960 channels, int8 with 256; dilation 16, 256 channels: int8); on RK3566/RK3568 dilation
# 12 is int8 with either. Dilations between the measured ones are uncertain.
DILATION_UNCERTAIN_FROM = {"rk3566": 13, "rk3568": 13}
DILATION_UNCERTAIN_DEFAULT_FROM = 12


@RULES.rule("Conv", placement=Placement.FLOAT, precisions=("int8",), FROM=DILATION_FLOAT16_DEFAULT_FROM, FROM_RK3566=DILATION_FLOAT16_FROM["rk3566"], TO=DILATION_FLOAT16_TO, AGAIN=DILATION_INT8_AGAIN, UNCERTAIN=DILATION_UNCERTAIN_DEFAULT_FROM)
def dilated_conv_split_in_float16(node: NodeView, chip: str):
    """rknn-toolkit2 2.5.0 (observed) splits a convolution with a large dilation by input channels into a float16 chain on the NPU (Split, Conv, ConvAdd...): certainly from dilation {FROM} ({FROM_RK3566} on RK3566/RK3568) to {TO}; from {UNCERTAIN} up, and above {TO}, it depends on the channels (uncertain); from {AGAIN} it is int8 again.

    Measured on deeplabv3_mobilenet_v3_large's ASPP (dilations 12, 24, 36 on an 8x8 map, 960
    channels) and on single 3x3 convolutions (dilations 1 to 36; 8x8 and 32x32; 256 and 960
    input channels) on RK3588 and RK3566.
    """
    dilation = _dilation_split_or_not(node)
    if dilation is None:
        return None
    if DILATION_FLOAT16_FROM.get(chip, DILATION_FLOAT16_DEFAULT_FROM) <= dilation <= DILATION_FLOAT16_TO:
        return Offence(dilation, "dilation")
    if dilation >= DILATION_UNCERTAIN_FROM.get(chip, DILATION_UNCERTAIN_DEFAULT_FROM):
        return Offence(dilation, "dilation: split in float16 or not, by the input channels", uncertain=True)
    return None


def _dilation_split_or_not(node: NodeView) -> int | None:
    """A convolution's largest dilation where the chip decides whether it is split in float16;
    None for a 1x1 kernel or a dilation that is int8 again. Worked out once per node: the rule
    reads its chip, so every RKNN chip asks."""
    found = node.memo.get(_dilation_split_or_not, node)
    if found is node:
        kernel = _ints(node.attr("kernel_shape"))
        dilation = max(_ints(node.attr("dilations")) or [1])
        found = node.memo[_dilation_split_or_not] = None if (kernel and max(kernel) == 1) or dilation >= DILATION_INT8_AGAIN else dilation
    return found


# The largest finite float16: a Softmax input beyond it cannot be held in float16.
FLOAT16_MAX = 65504


@RULES.rule("Softmax", placement=Placement.FLOAT, precisions=("int8",), FLOAT16_MAX=FLOAT16_MAX)
def softmax_at_model_output(node: NodeView, chip: str):
    """A Softmax that produces a model output is computed in float16 on the NPU (kept in float inside the int8 graph) while its calibrated input stays within float16's range (|x| <= {FLOAT16_MAX}); beyond it, and inside the graph, it runs in int8.

    The range is the calibration data's, which the audit does not see, so the placement is
    uncertain; --confirm settles it on the data it quantises with. Measured with rknn-toolkit2
    2.5.0 on RK3588 (tests/forms_models.py softmax_output_range, opsets 9 and 13): peaks of
    10, 60,000 and 65,000 give FLOAT16, 66,000, -70,000 and 150,000 INT8; the pool's
    zoo_shufflenet, whose seeded random weights give logits of about +-150,000 on the
    calibration inputs, has it in INT8, and scaled to 0.4 of those weights (peak 61,000) FLOAT16.
    Trained classifiers' logits stay far below, so float16 is what a user's model gets.
    """
    out = node.output(0)
    if out is None or not out.is_model_output:
        return None
    return Offence(out.name, f"model output; float16 while the calibrated input stays within +-{FLOAT16_MAX}, int8 beyond", uncertain=True)


# What a per-channel constant-first Mul may follow and still run in int8 on the NPU: a product with
# constant weights, its bias Add, or a layout change of one (torchvision's ConvNeXt, BEiT, CaiT in
# the pool's tuning part); after a Relu, a Sub (PoolFormer) or a Concat (XCiT) it is float.
PER_CHANNEL_SCALE_FOLDED_AFTER = ("Conv", "MatMul", "Gemm", "Add", "Transpose", "Reshape")
# The readers a constant-first scale of one value is folded into (fuse_mul_into_conv2; T5's RMSNorm
# weight of ones read by three MatMuls, SSD300's L2Norm scale by two Convs, measured in the pool).
SCALE_FOLDED_INTO = ("Conv", "MatMul", "Gemm")


@RULES.rule("Mul", placement=Placement.FLOAT, precisions=("int8",))
def scalar_first_mul_before_an_add(node: NodeView, chip: str):
    """rknn-toolkit2 2.5.0 (observed) makes x * a + b, with constants a and b, one BatchNormalization layer (its pass replace_mul_add_by_bn) only when the constant is the Mul's second operand; written a * x + b (PP-LCNet's learnable affine block after each hard swish, as Paddle2ONNX exports it) the Mul keeps a layer of its own, computed in float on the NPU.

    Measured on Conv, hard swish (or Relu), Mul, Add, Conv on RK3588 and RK3566
    (tests/forms_models.py affine_after_hardswish) and on the 28 such Muls of PP-OCRv4's
    recogniser. A scalar Mul read only by a Conv is folded into it (fuse_mul_into_conv2), and
    one of a Conv's result that nothing else reads into that Conv (fuse_mul_into_conv).
    A per-channel constant first (a layer scale gamma [C, 1, 1] written gamma * x, as
    transformers' PoolFormer does) is float as well after a Relu, whether gamma is 1e-5 or 1, and
    int8 when written x * gamma (tests/forms_models.py layer_scale_*, RK3588 and RK3566); after a
    product with constant weights, its bias Add or a layout change of one it runs in int8
    (PER_CHANNEL_SCALE_FOLDED_AFTER: probes layer_scale_after_conv and after_linear, a Linear's
    MatMul + Add + Transpose; torchvision's ConvNeXt, BEiT and CaiT in the pool).
    What decides is the constant's values, not its shape (tests/forms_models.py mul_scale_pack and
    mul_scale_pack_2, RK3588 and RK3566): a constant of one value ([C, 1, 1], [1, C, 1, 1] or a
    scalar, 0.01, 1 or 100) is a scalar to the toolkit, float unless folded: into the product with
    constant weights before it, its bias Add or a layout change of one, when the Mul alone reads
    that (a Conv's result also read by the residual Add, as DAC's Snake alpha * x, stays float),
    into readers that are all such products, or into Conv(x) + x it alone reads (an Add of two other
    maps keeps it float: passes.scale_of_an_add_of_two_maps, VAN); whatever
    reads it (an Add, a Sin, a Relu). A per-channel constant of varying values (0.5-2, or 0.01 with
    one channel at 0.02) runs in int8 after anything. A constant whose values are not stored here
    (a skeleton's, a folded one) keeps the earlier reading: float when read by an Add.
    """
    a, b, out = node.input(0), node.input(1), node.output(0)
    if a is None or b is None or out is None or not _known(a) or _known(b) or a.numel is None:
        return None
    zero_add = node.attr("rknn_zero_add")  # the Add of zeros it shares a layer with (zero_add_after_a_scalar_first_mul)
    if zero_add is not None:
        return None if zero_add == "into_conv" else Offence(a.name, "constant first operand, then an Add of zeros")
    one_value = _one_value(a)
    if one_value is False or out.is_model_output or not out.consumers or all(c in SCALE_FOLDED_INTO for c in out.consumers):
        return None  # a per-channel scale of varying values runs in int8; one read only by products is folded into them
    if one_value is None and out.consumers != ("Add",):
        return None  # values not stored here (a skeleton): only the Add reader was measured that way
    alone = b.consumers == ("Mul",)
    if b.producer == "Conv" and alone:
        return None  # folded into the Conv before it (fuse_mul_into_conv), as measured on PP-OCRv4 rec
    if one_value and node.attr("rknn_scale_of_add") == "kept":
        return Offence(a.name, "constant first operand of one value, of an Add of two maps (passes.scale_of_an_add_of_two_maps)")
    if b.producer in PER_CHANNEL_SCALE_FOLDED_AFTER and (alone if one_value else a.numel != 1):
        return None  # a scale after a projection, its bias Add or a layout change of one (ConvNeXt, BEiT, CaiT)
    return Offence(a.name, f"constant first operand of one value, read by {'/'.join(out.consumers)}")


def _one_value(t) -> bool | None:
    """Whether a constant holds one value throughout (a scalar, or a per-channel scale a library
    initialises to one value); None when its values are not stored here (a skeleton, a folded tensor)."""
    if t.numel == 1:
        return True
    if t.stored_elsewhere or t.value is None:
        return None
    v = np.asarray(t.value)
    return bool(np.all(v == v.flat[0]))


@RULES.rule(_passes.CONSTANT_OUTPUT_OP, placement=Placement.UNSUPPORTED)
def all_outputs_constant(node: NodeView, chip: str):
    """Every output of the model is computed from constants alone once products by zeros are folded (product_by_zeros_folded): rknn-toolkit2 2.5.0 (observed) refuses such a model ("All outputs [...] of model are constants, The model is invalid!")."""
    out = node.output(0)
    return Offence(out.name if out is not None else node.name, "a constant model output")


def accelerator_ops(chip: str) -> dict[str, OpSupport]:
    """ONNX operators whose lowering lands on this chip's NPU, with the precisions they run in."""
    available = npu_ops(chip)
    on_cpu = OBSERVED_ON_CPU.get(chip, OBSERVED_ON_CPU_ALL)
    ops: dict[str, OpSupport] = {}
    for onnx_op, internal in LOWERING.items():
        if onnx_op in on_cpu or not all(i in available for i in internal):
            continue
        if chip in INT8_ONLY_CHIPS:
            precisions: tuple[str, ...] = ("int8",)
        elif any(i in NPU_FLOAT16_IN_INT8 for i in internal):
            # float16 on the NPU: in an int8 graph it is kept in float, still on the NPU.
            ops[onnx_op] = OpSupport(precisions=("fp16",), note=f"NPU as {', '.join(internal)}, in float16", missing_precision=Placement.FLOAT)
            continue
        else:
            precisions = ("int8", "fp16")
        ops[onnx_op] = OpSupport(precisions=precisions, note=f"NPU as {', '.join(internal)}")
    for op in CONVERSION_TIME_OPS:
        ops[op] = OpSupport(precisions=("any",), note="evaluated at conversion time")
    return ops


def fallback_ops(chip: str) -> frozenset[str] | None:
    """ONNX operators the chip's runtime can run on its CPU; None: any operator the toolkit imports.

    OBSERVED: rknn-toolkit2 2.5.0 puts every standard operator it has no NPU kernel for on the
    CPU (chapter 4 of DOC_COMPILER lists fewer), on every chip, RV1106 included; RV1106's own
    limit is its runtime's (rv1106_runtime_lacks_cpu_kernel).
    """
    return None


def rule_set(chip_id: str, precision: str | None = "int8", **options) -> RuleSet:
    """The audit's rules for one RKNN chip (rk3588, rk3576, rk3568, rk3566, rk3562, rv1106).

    `precision`: the build's precision ("int8" by default); some observed failures happen in
    int8 builds only.
    """
    if chip_id not in CHIP_SECTION:
        raise KeyError(chip_id)
    from edgedeploy.targets.rknn import RKNN_TOOLKIT_VERSION

    # Some observed failures happen in int8 builds only; every other build is a float (fp16) one.
    build = "int8" if precision in (None, "int8") else "fp16"
    notes = [
        f"NPU operators and limits: {DOC_COMPILER}, section {CHIP_SECTION[chip_id]}; CPU operators: chapter 4.",
        f"ONNX import: {DOC_ONNX}; opsets {MIN_OPSET}..{MAX_OPSET}.",
        f"Where {TOOLKIT_OBSERVED} behaves otherwise than the documents, the rules follow the toolkit.",
    ]
    if chip_id in INT8_ONLY_CHIPS:
        notes.append("This chip's NPU computes in int8 only; its runtime has few CPU operators (4.1).")
    return RuleSet(
        target="rknn",
        chip=chip_id,
        toolchain_version=f"rknn-toolkit2 {RKNN_TOOLKIT_VERSION} (documents: {DOC_COMPILER})",
        source=SOURCE,
        accelerator_ops=accelerator_ops(chip_id),
        rules=RULES.rules_for(chip_id, precision=build),
        passes=RULES.passes_for(chip_id, precision=build),
        fallback_ops=fallback_ops(chip_id),
        float_only_ops=frozenset(),
        fallback_unit="CPU",
        # rknn-toolkit2 keeps a layer it cannot quantise on the NPU in float16; the CPU runs float32.
        units={
            Placement.ACCELERATOR: ("NPU", None),
            Placement.FLOAT: ("NPU", "float16"),
            Placement.FALLBACK: ("CPU", "float32"),
        },
        min_opset=MIN_OPSET,
        max_opset=MAX_OPSET,
        notes=notes,
        # OBSERVED: the toolkit's fold_constant pass evaluates everything computable at
        # conversion time (shapes are pinned): those nodes have no layer and run nowhere.
        folds_constants=True,
        constant_spellings_refused=CONSTANT_SPELLINGS_REFUSED,
    )


# rknn-toolkit2 2.5.0's importer reads a Constant node's attribute as a tensor ("AttributeError:
# 'list' object has no attribute 'HasField'"): measured on value_int, value_ints, value_float and
# value_floats (tests/forms_models.py constant_spelling; tests/fixtures/forms/verdicts.json).
CONSTANT_SPELLINGS_REFUSED = frozenset({"value_int", "value_ints", "value_float", "value_floats"})


def rule_set_variants(chip_id: str) -> list[dict]:
    """The precisions a build can ask for on this chip: int8 (the default) and, except on RV1106, fp16."""
    variants = [{"precision": "int8", "label": "int8 (w8a8), the default", "default": True}]
    if chip_id not in INT8_ONLY_CHIPS:
        variants.append({"precision": "fp16", "label": "fp16 (--precision fp16)"})
    return variants


# ONNX operators with an NPU lowering on RV1106 (for rv1106_runtime_lacks_cpu_kernel).
_RV1106_NPU_OPS = frozenset(accelerator_ops("rv1106"))



@RULES.rule("Transpose", chips=("rk3588",))
def unaligned_token_swap_into_norm(node: NodeView, chip: str):
    """On RK3588 a feature map's swap into tokens read by a layer norm, of a map that is not a strip (H and W above 1), with neither the channels nor the tokens a multiple of 16, runs on the CPU (rknn-toolkit2 2.5.0, observed; found on the held-out pair timm_edgenext_xx_small/rk3588; measured and marked by passes.unaligned_token_swap_into_norm, tests/forms_models.py xca_swap_pack)."""
    value = node.attr("rknn_unaligned_swap_into_norm")
    return Offence(f"{value[0]}x{value[1]}", "channels x tokens of the swap read by a layer norm") if value is not None and len(value) == 2 else None


@RULES.rule("Reshape", chips=("rk3588",))
def unaligned_token_swap_into_norm_reshape(node: NodeView, chip: str):
    """On RK3588 the flattening Reshape before such a swap, and the Reshape of its tokens plus a residual into a channels-last map, run on the CPU with it (rknn-toolkit2 2.5.0, observed; passes.unaligned_token_swap_into_norm marks them)."""
    value = node.attr("rknn_unaligned_swap_into_norm")
    return Offence(f"{value[0]}x{value[1]}", "channels x tokens of the swap read by a layer norm") if value is not None and len(value) == 2 else None


@RULES.rule("Transpose", "BatchNormalization", "Reshape", chips=_passes.GRID_REVERSE_CHIPS)
def grid_reverse_layout_on_cpu(node: NodeView, chip: str):
    """On RK3588 the toolkit runs on the CPU the 6-D Transpose of MaxViT's grid reverse ([0, 3, 1, 4, 2, 5]), the view of a batch of windows into the grid before it when the window count is not a multiple of 16, the Transposes that take its layer-normed channels-last map in from a convolution's layout and back out, and reports an untrained BatchNormalization it drops right after the way out with them (rknn-toolkit2 2.5.0, observed; the pass grid_reverse_and_its_channels_last_region marks them)."""
    role = node.attr(_passes.GRID_LAYOUT_ATTRIBUTE)
    return Offence(role, "MaxViT's grid reverse and its channels-last map") if role is not None else None


@RULES.rule("Transpose", chips=_passes.PATCH_INTERLEAVE_CHIPS)
def patch_interleave_on_cpu(node: NodeView, chip: str):
    """On RK3588 the toolkit runs on the CPU a Transpose that interleaves the first two of its five axes (after dropping axes of one and merging those it keeps together), as a patch fold [N, h, w, p, p, C] -> [N, C, h, p, w, p] viewed back as a map does, with the view into it (rknn-toolkit2 2.5.0, observed; the pass patch_interleave_transposes marks it)."""
    return Offence(node.attr("perm"), "patches interleaved") if node.attr(_passes.PATCH_INTERLEAVE_ATTRIBUTE) else None


@RULES.rule("Reshape", chips=("rk3588",))
def unaligned_map_as_tokens_for_linears(node: NodeView, chip: str):
    """On RK3588 a feature map flattened into tokens read only by Linears, and viewed back as the map after them (SwiftFormer's efficient additive attention), runs its flattening (Reshape and Transpose, one layer named after the Reshape) and the Reshape back on the CPU when the map is not a strip and neither the channels nor the tokens are a multiple of 16 (rknn-toolkit2 2.5.0, observed; passes.unaligned_map_as_tokens_for_linears marks them)."""
    value = node.attr(_passes.SWAP_FOR_LINEARS_ATTRIBUTE)
    return Offence(f"{value[0]}x{value[1]}", "channels x tokens of a map flattened for Linears") if value is not None and len(value) == 2 else None


@RULES.rule("Reshape", chips=("rk3588", "rk3566", "rk3568"))
def heads_of_a_cpu_tile(node: NodeView, chip: str):
    """The toolkit runs on the CPU, with the Tile before it, the Reshape that splits a tiled query into attention heads: on RK3588 on its way into a MatMul, on RK3566/RK3568 whatever reads it and with its heads' Transpose (GC ViT's global query; rknn-toolkit2 2.5.0, observed; passes.heads_of_a_cpu_tile marks it)."""
    return Offence("Tile", "heads of a tiled query, read by a product") if node.attr(_passes.TILED_QUERY_ATTRIBUTE) is not None else None


@RULES.rule("Expand", chips=_passes.ONE_HEAD_REPEAT_CHIPS)
def one_head_repeat_into_a_product(node: NodeView, chip: str):
    """The toolkit runs on the CPU the Expand that repeats one key/value head of grouped-query attention into q @ k^T or attn @ v, with the Reshape merging the repeat (on RK3588) and the key's swap (rknn-toolkit2 2.5.0, observed on RK3588 and RK3566; RK3568 as RK3566, RK3576, RK3562 and RV1106 as RK3588 on gqa_repeat_pack; passes.one_head_repeat_into_a_product marks them)."""
    repeats = node.attr(_passes.ONE_HEAD_REPEAT_ATTRIBUTE)
    return Offence(int(repeats), "repeats of one key/value head into a product") if repeats is not None else None


@RULES.rule("Reshape", "Expand", chips=_passes.TILE_OF_ONES_CHIPS)
def decomposed_relative_positions_merge(node: NodeView, chip: str):
    """On RK3588 the toolkit runs on the CPU the Reshape that merges MViTv2's attention plus its run-time decomposed relative positions back into [N, h, Tq, Tk], and the Expand and Reshape after it, when Tk is not a multiple of 16 (rknn-toolkit2 2.5.0, observed; passes.decomposed_relative_positions_merge marks them)."""
    tokens = node.attr(_passes.RELATIVE_POSITIONS_ATTRIBUTE)
    return Offence(int(tokens), "key tokens of a relative-position merge") if tokens is not None else None


# OBSERVED: the chips whose toolkit runs a depthwise 1x1 run-time Conv weight's Reshape on the CPU (RK3588: NPU).
DEPTHWISE_1X1_WEIGHT_CPU_CHIPS = ("rk3566", "rk3568")


@RULES.rule("Reshape", chips=("rk3588", "rk3566", "rk3568"))
def run_time_conv_weight_reshape(node: NodeView, chip: str):
    """The toolkit runs on the CPU the Reshape that makes a Conv's weight from a run-time tensor (timm's CondConv's mixed experts) when the kernel is larger than 1x1; on RK3566 a depthwise 1x1 one as well (rknn-toolkit2 2.5.0, observed; passes.run_time_conv_weight_reshape marks them, RK3568 taken as RK3566)."""
    kernel = node.attr(_passes.CONV_WEIGHT_KERNEL_ATTRIBUTE)
    if kernel is None:
        return None
    if int(kernel) > 1:
        return Offence(f"{int(kernel)}-element kernel", "a Conv weight computed at run time")
    if int(node.attr(_passes.CONV_WEIGHT_DEPTHWISE_ATTRIBUTE, 0)) and chip in DEPTHWISE_1X1_WEIGHT_CPU_CHIPS:
        return Offence("depthwise 1x1 kernel", "a Conv weight computed at run time")
    return None


@RULES.rule("Reshape", chips=_passes.TILE_OF_ONES_CHIPS, ALIGN=_passes.REGROUP_PLANE_ALIGN)
def unaligned_last_axes_regroup(node: NodeView, chip: str):
    """On RK3588 a Reshape [N, C, a, b] -> [N, C, p, q] that regroups the last two axes (neither a split nor a merge) runs on the CPU when a*b is not a multiple of {ALIGN} (Wav2Vec2-Conformer's relative shift, [1, H, T, 2T] -> [1, H, 2T, T]).

    Measured with rknn-toolkit2 2.5.0 (2026-12-04, int8; tests/forms_models.py
    last_axes_regroup_pack, between a Relu and a Conv): (7, 24) -> (21, 8), (3, 40) -> (5, 24), (199, 398)
    -> (398, 199) and back, (15, 8) -> (8, 15): CPU; 14 regroups of 80 to 2016 elements (multiples
    of 16), after a Slice of a row or a column or before a crop: NPU. RK3566: NPU in every form.
    """
    shape = _passes.last_axes_regroup(node)
    if shape is None or (shape[0] * shape[1]) % _passes.REGROUP_PLANE_ALIGN == 0:
        return None
    return Offence(shape[0] * shape[1], f"[{shape[0]}, {shape[1]}] -> [{shape[2]}, {shape[3]}]")


@RULES.rule("Reshape", chips=("rk3566", "rk3568"))
def relative_shift_tall_view(node: NodeView, chip: str):
    """On this chip the toolkit runs on the CPU the Reshape that views the padded position scores of Transformer-XL's relative shift tall for the Slice dropping their first row (Wav2Vec2-Conformer), at every size (rknn-toolkit2 2.5.0, observed; passes.relative_shift_tall_view marks it and says what was measured)."""
    tokens = node.attr(_passes.RELATIVE_SHIFT_TALL_ATTRIBUTE)
    return Offence(int(tokens), "tokens of a relative shift's tall view") if tokens is not None else None


@RULES.rule("Reshape", chips=_passes.RELATIVE_SHIFT_CHIPS)
def cropped_view_added_to_attention_scores(node: NodeView, chip: str):
    """On RK3588 and RK3566 the toolkit runs on the CPU a Reshape whose result, cropped along its last axis (a Slice, or a Gather of its first columns as XLNet's index_select), is added to an attention's scores (Transformer-XL's relative shift: rknn-toolkit2 2.5.0, observed; passes.cropped_view_added_to_attention_scores marks it)."""
    return Offence("crop", "a view cropped into an attention's scores") if node.attr(_passes.CROPPED_BIAS_VIEW_ATTRIBUTE) is not None else None


@RULES.rule("Reshape", chips=_passes.GATES_VIEW_CHIPS, ALIGN=_passes.GATES_VIEW_ALIGN)
def last_axis_split_into_a_sum(node: NodeView, chip: str):
    """A Reshape that splits the last axis of [N, H, T, C] into [N, H, T, g, C/g] for a ReduceSum over the new last axis (WavLM's gated relative positions) runs on the CPU when T is not a multiple of {ALIGN}; on RK3566/RK3568 with an aligned T on the CPU or the NPU by a rule not found: uncertain (rknn-toolkit2 2.5.0, observed; passes.last_axis_split_into_a_sum marks it and says what was measured)."""
    tokens = node.attr(_passes.GATES_VIEW_ATTRIBUTE)
    if tokens is None:
        return None
    return Offence(int(tokens), "a split of the last axis summed over", uncertain=int(tokens) % _passes.GATES_VIEW_ALIGN == 0)


@RULES.rule("Transpose", chips=tuple(OUTPUT_WIDTH_ALIGN_3D), ALIGN="16 on RK3588")
def unaligned_swap_as_3d_model_output(node: NodeView, chip: str):
    """A Transpose [0, 2, 1] of a 3-D tensor that writes the model output [N, T, K] runs on the CPU when K is not a multiple of {ALIGN} (a YOLOv5 head's flattened levels swapped to [1, cells, C]).

    Measured with rknn-toolkit2 2.5.0 on RK3588 (2026-12-04, int8; tests/forms_models.py
    levels_swap_pack, the levels of 52/26/13, 20/10/5 and 16/8/4 maps flattened, Concatenated and
    swapped): K = 4, 6, 8, 12, 85: CPU; 16, 32: NPU (ddddocr's detector, K = 6: CPU).
    """
    out, x = node.output(0), node.input(0)
    if out is None or x is None or not out.is_model_output or out.rank != 3 or list(_ints(node.attr("perm"))) != [0, 2, 1] or not isinstance(out.shape[2], int):
        return None
    width = out.shape[2]
    return Offence(width, "output width") if width % OUTPUT_WIDTH_ALIGN_3D[chip] else None



@RULES.rule("Reshape", "Squeeze", "Flatten", "Gather", chips=("rk3566", "rk3568"))
def view_of_a_map_on_cpu(node: NodeView, chip: str):
    """On this chip the toolkit runs on the CPU the view of a map [1, C, H, W] (H * W > 1) computed on the NPU into another shape (a Reshape, Squeeze, Flatten, or a Gather of one index along an axis of one) when it is a model output or an activation reads it (after a Conv, ConvTranspose, Add or Mul with that activation), and when a Linear reads it and C is not a multiple of 8 (rknn-toolkit2 2.5.0, observed: transformers' GLPN and CLIPSeg squeeze their map to the output, SuperPoint picks its one channel; the pass map_views_on_cpu marks the view).

    Measured on tests/forms_models.py squeezed_map_pack (RK3566, 2026-12-04), map_maker_view_pack and
    map_maker_view_reader_pack (RK3566 and RK3588, 2026-12-05); RK3568 is taken to behave as RK3566
    (not measured).
    """
    n = node.attr(_passes.MAP_VIEW_ATTRIBUTE)
    return None if n is None else Offence(tuple(n), "map viewed")


@RULES.rule("Reshape", chips=("rk3566", "rk3568"))
def view_of_a_conv3d_map_on_cpu(node: NodeView, chip: str):
    """On this chip the toolkit runs on the CPU the Reshape that views a 3-D convolution's map [1, C, T, H, W] in another shape (V-JEPA 2's patch embedding flattened into tokens; rknn-toolkit2 2.5.0, observed: tests/forms_models.py video_patch_pack; the pass conv3d_maps_viewed_on_cpu marks it)."""
    shape = node.attr(_passes.CONV3D_MAP_VIEW_ATTRIBUTE)
    return None if shape is None else Offence(tuple(shape), "3-D convolution's map viewed")


@RULES.rule("Reshape", "Squeeze", "Unsqueeze", "Flatten", chips=("rk3566", "rk3568"))
def lone_view_of_a_4d_boundary(node: NodeView, chip: str):
    """On this chip the toolkit runs on the CPU a view (Reshape, Squeeze, Unsqueeze, Flatten) that reads a model input and writes a model output when either side is 4-D (the NPU's map layout on one side of the model's boundary); between other ranks (2-D, 3-D, 5-D) it stays on the NPU (rknn-toolkit2 2.5.0, observed: gen_cases.py's single-view cases, 62 of 62 with a 4-D side on the CPU, 20 of 20 without on the NPU; RK3588 runs them on the NPU but for a few).

    Measured on tests/forms_models.py lone_view_pack (RK3566 and RK3588, 2026-12-05); RK3568 is taken
    to behave as RK3566 (not measured).
    """
    x, out = node.input(0), node.output(0)
    if x is None or out is None or not x.is_graph_input or not out.is_model_output or 4 not in (x.rank, out.rank):
        return None
    return Offence([x.rank, out.rank], "a lone view of a 4-D side")


# OBSERVED (RK3566; row_split_pack): a computed row [1, L] split by a Reshape into frames [1, F, H] (F, H > 1).
ROW_SPLIT_CHIPS = ("rk3566", "rk3568")


@RULES.rule("Reshape", chips=ROW_SPLIT_CHIPS)
def computed_row_split_into_frames(node: NodeView, chip: str):
    """On this chip the toolkit runs on the CPU a Reshape that splits a computed row [1, L] into frames [1, F, H] (F and H above one: DNSMOS frames its cropped waveform [1, 144000] into [1, 900, 160]); a view of the model input itself, or one that only adds a leading axis of one ([1, 1, L]), stays on the NPU, and RK3588 runs them all there (rknn-toolkit2 2.5.0, observed).

    Measured on tests/forms_models.py row_split_pack (RK3566 and RK3588, 2026-12-05): the row a Slice
    of the input, a Slice of a Relu of it, a Relu of a Slice, a Mul of the input by a scalar; [1, 14400] into
    [1, 90, 160], [1, 256] into [1, 16, 16], [1, 128] into [1, 4, 32]; read by a MatMul or an Add. RK3568 is taken
    to behave as RK3566 (not measured).
    """
    x, out = node.input(0), node.output(0)
    if x is None or out is None or x.rank != 2 or out.rank != 3 or x.is_graph_input or _known(x) or node.attr(_passes.ROWS_OF_LEVELS_ATTRIBUTE):
        return None  # a row of channels-last levels split so stays on the NPU (passes.frames_of_channels_last_rows)
    shape_in, shape_out = list(x.shape), list(out.shape)
    if not all(isinstance(d, int) for d in shape_in + shape_out) or shape_in[0] != 1 or shape_out[0] != 1:
        return None
    frames, width = shape_out[1], shape_out[2]
    return Offence([frames, width], "a computed row split into frames") if frames > 1 and width > 1 and frames * width == shape_in[1] else None


# OBSERVED (RK3566, grouped_linear_pack): what a grouped Linear's view reads that puts it on the CPU: an elementwise
# result (a Linear's MatMul, a model input or a Transpose's result keep it on the NPU).
GROUPED_VIEW_CPU_SOURCES = frozenset({"Add", "Sub", "Mul", "Div", "Relu", "Sigmoid", "Tanh", "Clip", "HardSwish", "LeakyRelu", "Gelu", "Erf"})


@RULES.rule("Reshape", chips=("rk3566", "rk3568"))
def grouped_linear_view_of_an_elementwise_result(node: NodeView, chip: str):
    """On this chip the toolkit runs on the CPU a Reshape that splits the last axis of a 3-D tensor [N, T, G*I] into groups [N, T, G, I] for an Einsum by a constant weight (a grouped Linear, DeepFilterNet3's btgi,gih->btgh; the pass grouped_linear_views marks it) when an elementwise operator (a sum, a product, an activation) computed that tensor; of a model input, of a Linear's MatMul or of a Transpose's result it stays on the NPU (rknn-toolkit2 2.5.0, observed: fresh7's DeepFilterNet3 encoder; RK3588 runs it on the NPU).

    Measured on tests/forms_models.py grouped_linear_pack (RK3566 and RK3588, 2026-12-05, T = 50 and
    64); RK3568 is taken to behave as RK3566 (not measured).
    """
    x, out = node.input(0), node.output(0)
    if x is None or out is None or x.rank != 3 or out.rank != 4 or x.producer not in GROUPED_VIEW_CPU_SOURCES or not node.attr(_passes.GROUPED_LINEAR_VIEW_ATTRIBUTE):
        return None
    if list(out.shape[:2]) != list(x.shape[:2]) or not all(isinstance(d, int) for d in (*out.shape[2:], x.shape[2])) or out.shape[2] * out.shape[3] != x.shape[2]:
        return None
    return Offence(list(out.shape[2:]), "groups of an elementwise result")


EXPANDED_GROUPS_RANK = 5  # OBSERVED (RK3566): an Expand's result of this rank viewed into a map runs on the CPU


@RULES.rule("Reshape", chips=("rk3566", "rk3568"))
def expanded_groups_viewed_as_a_map(node: NodeView, chip: str):
    """On this chip the toolkit runs on the CPU a Reshape of an Expand's 5-D result into a 4-D map (EvoNorm-S0's group statistic [1, G, 1, 1, 1] expanded over [1, G, C/G, H, W] and viewed back into [1, C, H, W]), whatever reads it; the same view of a Sigmoid's 5-D result, and an Expand's 4-D result viewed into 3-D or 4-D, stay on the NPU (rknn-toolkit2 2.5.0, observed: fresh7's timm_regnetz_c16_evos; RK3588 runs it on the NPU).

    Measured on tests/forms_models.py expand_view_pack and view_reader_pack (RK3566 and RK3588,
    2026-12-05); RK3568 is taken to behave as RK3566 (not measured).
    """
    x, out = node.input(0), node.output(0)
    if x is None or out is None or x.producer != "Expand" or x.rank != EXPANDED_GROUPS_RANK or out.rank != 4:
        return None
    return Offence(list(x.shape), "expanded groups viewed as a map")


@RULES.rule("Concat", chips=tuple(_passes.CELLS_WIDTH_ALIGN), ALIGN="16 on RK3588, RK3576, RK3562 and RV1106, 8 on RK3566/RK3568", ROWS=_passes.ANCHOR_ROWS_STEP)
def cells_of_unequal_widths(node: NodeView, chip: str):
    """A detection head's Concat of levels laid out by cells (some level is a 1x1 map) runs on the CPU when the levels' widths A*K differ, a level of more than one cell (on RK3566/RK3568 any level) has a width not a multiple of {ALIGN} and a level of more than one cell has rows H*W*A not a multiple of {ROWS} (with every such level's rows a multiple of it the toolkit lays them out by anchors, the Concat on the NPU). torchvision's SSD300: 4 and 6 anchors of 4 values on RK3588, of 91 on both chips; rknn-toolkit2 2.5.0, observed; passes.detection_head_concat_layout marks it."""
    width = node.attr(_passes.CELLS_OF_UNEQUAL_WIDTHS_ATTRIBUTE)
    return Offence(int(width), "a level's width among unequal widths") if width is not None else None


BATCH_FOLD_ALIGN = 16  # OBSERVED (RK3588): a folded window of a multiple of it stays on the NPU


@RULES.rule("Reshape", chips=("rk3588",), ALIGN=BATCH_FOLD_ALIGN)
def unaligned_batch_of_windows_folded(node: NodeView, chip: str):
    """On RK3588 a Reshape that folds a batch of one-channel windows [S*S', 1, h, w] back into a map [1, S, S', h*w] (RAFT's correlation lookup, one window per pixel) runs on the CPU when h*w is not a multiple of {ALIGN}.

    Measured with rknn-toolkit2 2.5.0 (2026-12-04, int8; tests/forms_models.py batch_fold_pack,
    after a GridSample, a Relu or a Conv, read by a Conv): windows of 7x7, 5x5 and 3x3 (16x16,
    8x8 and 4x4 maps): CPU; 4x4 and 8x8: NPU. A fold into a single row or column ([96, 1, 2, 2]
    -> [1, 96, 1, 4], MobileViT's in the pool's tuning part) ran on the NPU: not taken.
    """
    x, out = node.input(0), node.output(0)
    if x is None or out is None or x.rank != 4 or out.rank != 4 or not all(isinstance(d, int) for d in (*x.shape, *out.shape)):
        return None
    b, c, h, w = x.shape
    if b < 2 or c != 1 or out.shape[0] != 1 or out.shape[1] * out.shape[2] != b or out.shape[3] != h * w or 1 in out.shape[1:3]:
        return None  # a map of one row or column (MobileViT's [P*N, 1, ...] -> [1, P*N, 1, ...] fold): NPU in the pool
    return Offence(h * w, "window folded into the last axis") if (h * w) % BATCH_FOLD_ALIGN else None


@RULES.rule("Reshape", chips=_passes.LINEAR_HEADS_CHIPS, ALIGN=8)
def unaligned_linear_heads_into_a_concat(node: NodeView, chip: str):
    """On this chip the toolkit runs on the CPU the Reshape that splits a Linear's tokens [N, T, C] into heads [N, T, h, d] for a Concat along the heads' values when T is not a multiple of {ALIGN}: the Linear is a Conv over [N, C, 1, T] whose result is Transposed back first (rknn-toolkit2 2.5.0, observed on Conditional DETR's cross-attention query; passes.linear_heads_into_a_concat marks it and says what was measured)."""
    tokens = node.attr(_passes.LINEAR_HEADS_INTO_CONCAT_ATTRIBUTE)
    return Offence(int(tokens), "tokens of a Linear split into heads for a Concat") if tokens is not None and int(tokens) % 8 else None


@RULES.rule("Reshape", chips=_passes.CHANNEL_VIEW_CHIPS)
def channels_moved_by_a_map_view(node: NodeView, chip: str):
    """On this chip the toolkit runs on the CPU a Reshape of a 4-D map into another 4-D map with a different channel count (data moved between the channel axis and the rows: HTSAT's spectrogram folded into an image, [1, 4, 32, 128] -> [1, 1, 128, 128], CLAP's audio encoder) when a Conv reads it, or a Transpose that keeps the channel axis (rknn-toolkit2 2.5.0, observed; passes.channels_moved_by_a_map_view marks it and says what was measured)."""
    moved = node.attr(_passes.CHANNEL_VIEW_ATTRIBUTE)
    return Offence(str(moved), "channels of a map view (from -> to)") if moved is not None else None


@RULES.rule("Squeeze", chips=_passes.LSTM_SQUEEZE_CHIPS)
def lstm_squeeze_before_a_moved_swap(node: NodeView, chip: str):
    """On this chip the toolkit runs on the CPU, as a Transpose layer, the Squeeze of an LSTM's output added to the LSTM's input when the sum's swap back is followed by a Pad, which the toolkit moves that swap past (rknn-toolkit2 2.5.0, observed on EnCodec's residual LSTM; passes.lstm_squeeze_before_a_moved_swap marks it and says what was measured)."""
    return Offence("Pad", "LSTM output squeezed before a swap moved past a") if node.attr(_passes.LSTM_SQUEEZE_ATTRIBUTE) is not None else None


@RULES.rule("Transpose", chips=_passes.SOFTMAX_ON_CPU_CHIPS, ALIGN=_passes.TOKENS_INTO_CONV1D_ALIGN)
def tokens_moved_into_a_conv1d(node: NodeView, chip: str):
    """On this chip the toolkit runs on the CPU, as a Transpose layer, the swap of tokens [N, T, C] into 1-D convolutions when the tokens are the model's input, or a Relu or a LayerNorm of it and T is not a multiple of {ALIGN} (rknn-toolkit2 2.5.0, observed on Speech2Text's subsampler; passes.tokens_moved_into_a_conv1d marks it and says what was measured)."""
    tokens = node.attr(_passes.TOKENS_INTO_CONV1D_ATTRIBUTE)
    return Offence(int(tokens), "tokens swapped into a Conv1d") if tokens is not None else None


def _gru_output_view(node: NodeView):
    return Offence("GRU", "merged into the float16 layer of its") if node.attr(_passes.GRU_OUTPUT_VIEW_ATTRIBUTE) is not None else None


@RULES.rule("Squeeze", placement=Placement.FLOAT, precisions=("int8",), chips=_passes.GRU_OUTPUT_VIEW_CHIPS)
def gru_output_squeeze_merged(node: NodeView, chip: str):
    """On this chip the toolkit merges the Squeeze of a GRU's sequence output into the GRU's exGRU layer, in float16 on the NPU even in an int8 build (rknn-toolkit2 2.5.0, observed on DeepFilterNet3; passes.gru_output_view_merged marks it and says what was measured)."""
    return _gru_output_view(node)


@RULES.rule("Transpose", placement=Placement.FLOAT, precisions=("int8",), chips=_passes.GRU_OUTPUT_VIEW_CHIPS)
def gru_output_swap_merged(node: NodeView, chip: str):
    """On this chip the toolkit merges the Transpose [1, 0, 2] that swaps a GRU's squeezed output back batch-first into the GRU's exGRU layer, in float16 on the NPU even in an int8 build (rknn-toolkit2 2.5.0, observed on DeepFilterNet3; passes.gru_output_view_merged marks it and says what was measured)."""
    return _gru_output_view(node)


@RULES.rule("Reshape", placement=Placement.FLOAT, precisions=("int8",), chips=_passes.GRU_OUTPUT_VIEW_CHIPS)
def gru_output_swap_merged_as_a_reshape(node: NodeView, chip: str):
    """As gru_output_swap_merged, for the swap back of a batch-1 GRU's output, which moves only an axis of length 1 and which the toolkit therefore takes as a reshape (passes.transpose_of_unit_axes_is_a_reshape)."""
    return _gru_output_view(node)


PAIR_AXIS_VIEW_ALIGN = 16  # OBSERVED (RK3588): a rotated width D that is a multiple of it keeps the views on the NPU


@RULES.rule("Reshape", chips=("rk3588", "rk3566", "rk3568"), ALIGN=PAIR_AXIS_VIEW_ALIGN)
def pair_axis_views_of_a_rotation(node: NodeView, chip: str):
    """The toolkit runs on the CPU the two views of an interleaved rotation written through a pair axis (V-JEPA 2's rotary positions: [B, H, T, D] Reshaped into [B, H, T, D/2, 2], the pair Split, Squeezed, one half negated, Unsqueezed, Concatenated and Reshaped back): on RK3566/RK3568 always, on RK3588 unless D is a multiple of {ALIGN} (rknn-toolkit2 2.5.0, observed; the pass pair_axis_of_a_rotation marks them).

    Measured on tests/forms_models.py rope_unflatten_pack: RK3588 CPU at D = 6, 8, 10, 12, 20, 24
    (T of 64 or 16, with or without the Neg, or the Split's halves Concatenated back swapped), NPU at
    D = 16, 32, 48, 64 (T of 9, 16, 64); RK3566 CPU at every D. The same two Reshapes with nothing
    between, and EVA-02's step-2 Slices stacked at D = 10: NPU on both. Found on fresh8's hf_vjepa2
    (D = 10: its 24 rotation views on the CPU on both chips). RK3568 is taken as RK3566 (not measured).
    """
    width = node.attr(_passes.PAIR_AXIS_VIEW_ATTRIBUTE)
    if width is None or (chip == "rk3588" and int(width) % PAIR_AXIS_VIEW_ALIGN == 0):
        return None
    return Offence(int(width), "values rotated through a pair axis (Reshape to [..., D/2, 2], Split, stacked back)")


@RULES.rule("Squeeze", chips=_passes.LSTM_DIRECTIONS_SPLIT_CHIPS)
def lstm_directions_split_apart(node: NodeView, chip: str):
    """On this chip the toolkit runs on the CPU the Reshape layer it makes of a bidirectional LSTM's two directions Sliced and Squeezed apart, read apart rather than Concatenated along the features (rknn-toolkit2 2.5.0, observed on openWakeWord's hey_mycroft; passes.lstm_directions_split_apart marks it and says what was measured)."""
    return Offence("Split", "LSTM directions squeezed apart before a") if node.attr(_passes.LSTM_DIRECTIONS_SPLIT_ATTRIBUTE) is not None else None


# The feature counts an embedding's input layout needs on the NPU, by where the tokens go (None: always the CPU; absent: the NPU).
FEATURES_EMBEDDING_ALIGN = {"matmul": {"rk3588": 16, "rk3566": None, "rk3568": None}, "elementwise": {"rk3566": 8, "rk3568": 8}}


@RULES.rule("Unsqueeze", chips=_passes.FEATURES_EMBEDDED_CHIPS)
def features_embedding_input_layout(node: NodeView, chip: str):
    """The toolkit converts a 2-D model input [1, F] unsqueezed to [1, F, 1] for an embedding (times a weight [F, D]: FT-Transformer's numeric features) with a Reshape layer named after the Unsqueeze (passes.features_unsqueezed_for_an_embedding). Where the tokens go into a MatMul (attention's projections), that layer runs on the CPU of RK3566/RK3568 always, and of RK3588 when F is not a multiple of 16; where they do not, on the CPU of RK3566/RK3568 when F is not a multiple of 8, on RK3588's NPU (rknn-toolkit2 2.5.0, observed).

    Measured (tests/forms_models.py ft_embed_pack, _2, _3, _4; D = 32 or 128; opset 13 and 17 alike):
    into a MatMul (after the bias Add, or the Add and a Concat of a class token; one or three MatMuls):
    RK3588 CPU for F = 4, 8, 12, 24, NPU for 16, 32, 48, 64; RK3566 CPU for all of them. Not into a
    MatMul (the Mul, its bias Add, the Concat as the output): RK3588 NPU for F = 12, 16; RK3566 CPU for
    12, NPU for 16 (the lead's probes: NPU for 8, 24, 32, 64 on both, CPU for 12 on RK3566). A Relu
    reading the [1, 12, 1] instead of a Mul: NPU on both (not marked). Other chips (scripts/probe_rknn_chips.py,
    the four packs): RK3568 node for node as RK3566; RK3576, RK3562 and RV1106 NPU for every F, into a MatMul or not.
    """
    where = node.attr(_passes.FEATURES_EMBEDDED_ATTRIBUTE)
    x = node.input(0)
    if where is None or x is None or x.shape is None or not isinstance(x.shape[1], int) or chip not in FEATURES_EMBEDDING_ALIGN[where]:
        return None
    align, features = FEATURES_EMBEDDING_ALIGN[where][chip], x.shape[1]
    if align is not None and features % align == 0:
        return None
    return Offence(features, f"{features} features embedded" + (" for a MatMul" if where == "matmul" else ""))


@RULES.rule("Reshape", chips=_passes.SQUEEZED_MAP_SWAP_CHIPS)
def squeezed_map_swapped_into_an_lstm(node: NodeView, chip: str):
    """On this chip the toolkit runs on the CPU the swap [1, 0, 2] of a squeezed feature map [1, T, C] into an LSTM's sequence [T, 1, C], which it merges with the Squeeze into one Reshape layer (passes.swap_of_a_squeezed_map_into_an_lstm marks it): the map's layout is not the sequence's (rknn-toolkit2 2.5.0, observed: EasyOCR's CRNN; RK3588 runs it on the NPU).

    Measured (tests/forms_models.py seq_swap_pack, seq_swap_pack_2; RK3566 and RK3588): the map [1, T, C, 1]
    pooled from a swapped VGG map or a Relu of a model input, or a Relu of [1, T, C, 1], squeezed on axis 3
    (T = 63, 64; C = 64, 256), and a one-channel map [1, 1, T, C] squeezed on axis 1 (T = 63, 100): CPU;
    the squeezed map through a Linear first, then swapped: NPU (as DeepSpeech's Linear, Relu, Clip, Squeeze
    into its RNN, fresh10). Measured, not held: the swap read by a Relu (the Squeeze on the CPU too), the
    map viewed [T, 1, C] by one Reshape (CPU), the map squeezed and not swapped (CPU with its Relu reader).
    Other chips (scripts/probe_rknn_chips.py, both packs): RK3568 node for node as RK3566; RK3576, RK3562 and
    RV1106 as RK3588 (every swap on the NPU).
    """
    if node.attr(_passes.SQUEEZED_MAP_SWAP_ATTRIBUTE) is None:
        return None
    return Offence(node.name, "squeezed feature map swapped into a sequence")
