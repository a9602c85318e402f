"""esp-ppq's own graph passes, as the audit's lowering step for the ESP32-S3 and ESP32-P4.

esp-ppq 1.3.12 rewrites a model before it quantises anything: `espdl_quantize_onnx` first runs
onnxsim 0.7.3 (its pinned simplifier) and then esp-ppq's `format_graph` (esp_ppq/api/interface.py:
FUSE_BN, REPLACE_BATCHNORM_TO_CONV, ...). Each pass below models one of those rewrites; its
docstring is the sentence a user reads, and every one was measured with esp-ppq 1.3.12 on small
models built for the purpose (the form each pass takes, and the forms it leaves alone, are
listed in tests/test_audit_passes_espdl.py). They run in the order esp-ppq applies them; what
they leave is placed by the rules in rules.py (which imports this module to register them).
"""

from __future__ import annotations

import numpy as np

from edgedeploy.audit.rules import TensorView
from edgedeploy.targets.espdl.registry import ESP_PPQ_VERSION, ONNXSIM_VERSION, RULES

# ---- onnxsim (run by espdl_quantize_onnx before anything else)

# esp-ppq turns a BatchNormalization it cannot fold into a 2-D 1x1 Conv (replace_batchnorm_to_conv,
# default dimension 2): on 2-D and 3-D inputs torch's conv2d then refuses it (measured).
BN_AS_CONV_RANK = 4
# From opset 12 on, Dropout takes its training mode as an input.
DROPOUT_TRAINING_MODE_OPSET = 12


@RULES.graph_pass("Dropout", ONNXSIM=ONNXSIM_VERSION, VERSION=ESP_PPQ_VERSION, OPSET=DROPOUT_TRAINING_MODE_OPSET)
def simplifier_removes_inference_dropout(graph, chip):
    """esp-ppq {VERSION}'s simplifier (onnxsim {ONNXSIM}) removes a Dropout that is an identity at inference: from opset {OPSET} on, one without a training_mode input and with a constant (or no) ratio; before opset {OPSET}, one whose ratio is 0; in both cases only when its mask output is unused and it does not pass a model input straight to a model output."""
    for node in [n for n in graph.nodes if n.op_type == "Dropout"]:
        if dropout_removed_by_simplifier(graph, node):
            graph.eliminate(node)


def dropout_removed_by_simplifier(graph, node) -> bool:
    """The forms of Dropout onnxsim removes (each measured with esp-ppq 1.3.12 and its onnxsim 0.7.3)."""
    x, y = node.input(0), node.output(0)
    if x is None or y is None or (x.is_graph_input and y.is_model_output):
        return False  # nothing would be left to produce the model output
    mask = node.output(1)
    if mask is not None and mask.present and (mask.is_model_output or graph.consumers(mask.name)):
        return False
    if node.opset >= DROPOUT_TRAINING_MODE_OPSET:
        ratio = node.input(1)
        # Even a constant false training_mode keeps it (measured), as does a ratio fed at run time.
        return node.input(2) is None and (ratio is None or ratio.is_constant or ratio.foldable)
    return float(node.attr("ratio", 0.5)) == 0.0


def cast_to_its_own_type(cast) -> bool:
    """A Cast whose `to` is the element type its input already has (torch's `.float()` of a float tensor)."""
    from onnx import helper

    x, to = cast.input(0), cast.attr("to")
    return x is not None and x.dtype is not None and to is not None and str(helper.tensor_dtype_to_np_dtype(int(to))) == x.dtype


@RULES.graph_pass("Cast", ONNXSIM=ONNXSIM_VERSION, VERSION=ESP_PPQ_VERSION)
def simplifier_removes_cast_to_its_own_type(graph, chip):
    """esp-ppq {VERSION}'s simplifier (onnxsim {ONNXSIM}, its optimizer's eliminate_nop_cast) removes a Cast to the element type its input already has (torch's `.float()` of a float tensor: the RMSNorms and attention probabilities of Gemma 3, LFM2 and Moonshine); the node reading it then reads the input itself, and the Cast is reported with that node's layer, in its precision; read by several nodes it runs nowhere.

    Measured with esp-ppq 1.3.12 (tests/forms_models.py nop_cast_folded_shape_pack, opset 14,
    2026-12-05): a float Cast of a Relu's result read by a Relu, a Sqrt (F32), a Relu and a
    Sigmoid, or a second such Cast and a MatMul, or as the model's output: no layer of its own
    (as the output, the Relu's S8 layer takes the output's name); ESP-DL has no Cast module, so
    the audit called them unsupported.
    """
    # Readers first, so that a chain of Casts folds into the node after the last one.
    for cast in reversed([n for n in graph.nodes if n.op_type == "Cast"]):
        x, y = cast.input(0), cast.output(0)
        if y is None or not cast_to_its_own_type(cast):
            continue
        producer = graph.producer(x.name) if y.is_model_output else None
        if producer is not None and len(producer.outputs) == 1 and graph.only_consumer(x.name) is cast:
            # The model's output: its producer's layer takes the output's name (measured).
            graph.fuse([producer, cast], producer.op_type, leader=producer, domain=producer.domain, inputs=list(producer.inputs), outputs=list(cast.outputs))
        elif not y.is_model_output and graph.only_consumer(y.name) is not None:
            _fold_into_its_reader(graph, cast, x)
        else:
            graph.eliminate(cast)


# Operators through which an all-zero tensor stays all-zero whatever their other inputs (shapes,
# axes, repeats, indices): enough to see PyTorch's zero initial state, Expand(Constant(zeros), shape),
# and one layer's state taken from a stacked zero state (Slice or Gather of ConstantOfShape, PLCMOS).
ZERO_PRESERVING = ("Expand", "Reshape", "Unsqueeze", "Squeeze", "Tile", "Transpose", "Flatten", "Cast", "Identity", "Slice", "Gather")
RECURRENT_OPS = ("GRU", "LSTM", "RNN")
INITIAL_STATE_INPUTS = {"GRU": (5,), "RNN": (5,), "LSTM": (5, 6)}  # initial_h (and initial_c)


@RULES.graph_pass(*RECURRENT_OPS, ONNXSIM=ONNXSIM_VERSION, VERSION=ESP_PPQ_VERSION)
def simplifier_drops_zero_initial_states(graph, chip):
    """esp-ppq {VERSION}'s simplifier (onnxsim {ONNXSIM}) drops a recurrent layer's initial state when it is all zeros (ONNX's default), as PyTorch exports it when no state is passed; the layer then has no initial-state input."""
    for node in [n for n in graph.nodes if n.op_type in RECURRENT_OPS]:
        inputs = list(node.inputs)
        dropped = [i for i in INITIAL_STATE_INPUTS[node.op_type] if i < len(inputs) and inputs[i].present and is_all_zero(graph, inputs[i])]
        if not dropped:
            continue
        for i in dropped:
            inputs[i] = TensorView("", None, None, False)
        while inputs and not inputs[-1].present:
            inputs.pop()  # ONNX leaves trailing optional inputs out
        graph.fuse([node], node.op_type, inputs=inputs, outputs=list(node.outputs))


def is_all_zero(graph, tensor: TensorView, depth: int = 8) -> bool:
    """Whether `tensor` is known to be all zeros when the model is compiled (a constant, or one
    passed through shape-only operators or a Concat of zeros; ConstantOfShape without a value or with 0)."""
    if tensor.is_constant:
        value = tensor.value
        return value is not None and value.size > 0 and not value.any()
    if not tensor.foldable or depth == 0:
        return False
    producer = graph.producer(tensor.name)
    if producer is None:
        return False
    if producer.op_type == "ConstantOfShape":
        fill = producer.attr("value")
        return fill is None or not fill.any()
    if producer.op_type in ZERO_PRESERVING and producer.inputs:
        return is_all_zero(graph, producer.inputs[0], depth - 1)
    if producer.op_type == "Concat":  # zeros joined to zeros: tf2onnx's zero state, one block per direction
        return bool(producer.inputs) and all(is_all_zero(graph, t, depth - 1) for t in producer.inputs)
    return False


# Arithmetic by a constant that changes nothing: operator -> (the unit, whether the constant may be the first operand).
NOP_UNITS = {"Mul": (1.0, True), "Add": (0.0, True), "Sub": (0.0, False), "Div": (1.0, False), "Pow": (1.0, False)}
# Constants larger than this are not read (a unit constant is a scalar or a per-channel vector).
MAX_UNIT_ELEMENTS = 1 << 16


def _unit_constant(t, unit: float) -> bool:
    if t is None or not (t.is_constant or t.foldable) or t.stored_elsewhere or (t.numel or 0) > MAX_UNIT_ELEMENTS:
        return False
    value = t.value
    return value is not None and value.size > 0 and value.dtype.kind == "f" and bool(np.all(value == unit))


def arithmetic_nop_data(node):
    """The data input of Mul/Add (either operand) or Sub/Div/Pow (second) by a constant of ones (zeros for Add, Sub) that leaves its shape as it is, else None."""
    unit, either = NOP_UNITS[node.op_type]
    if len(node.inputs) != 2 or node.output(0) is None:
        return None
    a, b = node.inputs[0], node.inputs[1]
    for data, constant in ((a, b), (b, a)) if either else ((a, b),):
        if _unit_constant(constant, unit) and not _unit_constant(data, unit):
            y = node.output(0)
            if data.is_static and y.is_static and tuple(data.shape) == tuple(y.shape):
                return data
    return None


@RULES.graph_pass(*NOP_UNITS, ONNXSIM=ONNXSIM_VERSION, VERSION=ESP_PPQ_VERSION)
def simplifier_removes_arithmetic_by_a_unit(graph, chip):
    """esp-ppq {VERSION}'s simplifier (onnxsim {ONNXSIM}, its optimizer's eliminate_nop_with_unit) removes a Mul by ones or an Add of zeros (either operand), and a Sub of zeros, a Div or a Pow by ones (as second operand), when the constant does not widen the result's shape; the node reading it then reads the data itself, and the removed node is reported with that node's layer, in its precision (DAC's Snake: alpha * x with alpha ones before a Sin, float with the Sin).

    Measured with esp-ppq 1.3.12 (tests/forms_models.py unit_arithmetic_pack; onnxsim 0.7.3 on
    the same forms removes them, a Mul by 0.5, a Sub of zeros as first operand and a Mul by ones
    that widens [1, 8, 16] to [1, 1, 8, 16] stay): before a Sin the node is "fused into Sin F32";
    before a Relu, an Add or a Conv into their S8 layers.
    """
    for node in [n for n in graph.nodes if n.op_type in NOP_UNITS]:
        data = arithmetic_nop_data(node)
        y = node.output(0)
        if data is None or y.is_model_output:
            continue
        _fold_into_its_reader(graph, node, data)


def _fold_into_its_reader(graph, node, data) -> None:
    """Fold `node`, which leaves `data` as it is, into the node that alone reads its result: that
    reader reads `data` instead and is reported for both (how esp-ppq's export names the removed
    node: with its reader's layer). Nothing happens when more than one node reads it."""
    y = node.output(0)
    reader = graph.only_consumer(y.name)
    if reader is None:
        return
    inputs = [data if t.name == y.name else t for t in reader.inputs]
    graph.fuse([node, reader], reader.op_type, leader=reader, inputs=inputs, outputs=list(reader.outputs))


# ---- esp-ppq's format_graph (esp_ppq/api/interface.py; esp_ppq/IR/morph.py)

BN_FOLD_TARGETS = ("Conv", "Gemm", "ConvTranspose")
BN_PARAMETERS = (1, 2, 3, 4)  # scale, B, mean, var


def batchnorm_parameters_constant(bn) -> bool:
    """esp-ppq takes a BatchNormalization's scale, bias, mean and variance as its four parameters."""
    return all(bn.input(i) is not None and (bn.input(i).is_constant or bn.input(i).foldable) for i in BN_PARAMETERS)


def batchnorm_single_output(bn) -> bool:
    return not any(o.present for o in bn.outputs[1:])


def fold_target(graph, bn):
    """The Conv, Gemm or ConvTranspose whose only reader is `bn` and whose weights are constants, else None."""
    x = bn.input(0)
    producer = graph.producer(x.name) if x is not None else None
    if producer is None or producer.op_type not in BN_FOLD_TARGETS or graph.only_consumer(x.name) is not bn:
        return None
    weights = producer.input(1)
    if weights is None or not (weights.is_constant or weights.foldable):
        return None
    return producer


@RULES.graph_pass("BatchNormalization", VERSION=ESP_PPQ_VERSION, TARGETS=BN_FOLD_TARGETS)
def fold_batchnorm_into_preceding_layer(graph, chip):
    """esp-ppq {VERSION} folds a BatchNormalization into the layer before it by scaling that layer's weights and bias, when the layer is one of {TARGETS}, feeds nothing else and has constant weights: the pair runs as one integer layer."""
    for bn in [n for n in graph.nodes if n.op_type == "BatchNormalization"]:
        if not batchnorm_parameters_constant(bn):
            continue
        target = fold_target(graph, bn)
        if target is not None:
            graph.absorb(bn, into=target)


@RULES.graph_pass("BatchNormalization", VERSION=ESP_PPQ_VERSION, RANK=BN_AS_CONV_RANK)
def batchnorm_as_depthwise_conv(graph, chip):
    """esp-ppq {VERSION} turns a BatchNormalization it cannot fold into a preceding layer into a 1x1 depthwise Conv (one weight and bias per channel) on {RANK}-D inputs: it runs as an integer Conv."""
    for bn in [n for n in graph.nodes if n.op_type == "BatchNormalization"]:
        x = bn.input(0)
        if not (batchnorm_parameters_constant(bn) and batchnorm_single_output(bn)) or x is None or x.rank != BN_AS_CONV_RANK:
            continue
        producer = graph.producer(x.name)
        if producer is not None and producer.op_type in BN_FOLD_TARGETS and graph.only_consumer(x.name) is bn:
            continue  # esp-ppq folds it into that layer, and fails to when the weights are not constants (rules.py)
        channels = x.shape[1]
        if not isinstance(channels, int):
            continue
        attributes = {"kernel_shape": [1, 1], "strides": [1, 1], "dilations": [1, 1], "pads": [0, 0, 0, 0], "group": channels}
        graph.fuse([bn], "Conv", attributes=attributes, inputs=[x, bn.input(1), bn.input(2)], outputs=[bn.outputs[0]])


# ---- esp-ppq's format_graph: GraphMerger.fuse_lp_normalization (FORMATTER_FUSE_LP_NORMALIZATION, on by default)


def _reduced_axes(node) -> list[int] | None:
    """A ReduceL2's axes: its attribute, or (opset 18) its constant second input; None when not known."""
    axes = node.attr("axes")
    if axes is None and len(node.inputs) > 1 and node.inputs[1].present:
        value = node.inputs[1].value if (node.inputs[1].is_constant or node.inputs[1].foldable) else None
        axes = None if value is None else [int(a) for a in value.reshape(-1)]
    return None if axes is None else [int(a) for a in axes]


@RULES.graph_pass("ReduceL2", VERSION=ESP_PPQ_VERSION)
def fuse_lp_normalisation(graph, chip):
    """esp-ppq {VERSION} fuses F.normalize as torch.onnx writes it, x / Expand(Clip(ReduceL2(x) over one axis), shape), into one LpNormalization layer (its GraphMerger.fuse_lp_normalization, run by format_graph): ReduceL2, Clip, Expand and Div, each read only by the next and the Div reading x itself. The norm over several axes, or a chain without the Clip or the Expand, is left as it is (and ESP-DL has no Expand operator).

    Measured with esp-ppq 1.3.12 (tests/forms_models.py lp_norm_pack, opset 17: F.normalize over
    the last axis of [1, 4, 64] and over axis 1 of [1, 4, 1], SwiftFormer's three: one
    LpNormalization S8 layer each; ReduceL2, Clip and Div without an Expand: three layers) and
    fresh2's timm_swiftformer_xs (its nine Expands fused, esp-ppq 1.3.12).
    """
    for l2 in [n for n in graph.nodes if n.op_type == "ReduceL2"]:
        x, axes = l2.input(0), _reduced_axes(l2)
        if x is None or x.is_constant or axes is None or len(axes) != 1:
            continue
        clip = graph.only_consumer(l2.outputs[0].name)
        expand = graph.only_consumer(clip.outputs[0].name) if clip is not None and clip.op_type == "Clip" else None
        div = graph.only_consumer(expand.outputs[0].name) if expand is not None and expand.op_type == "Expand" else None
        if div is None or div.op_type != "Div" or [t.name for t in div.inputs[:2]] != [x.name, expand.outputs[0].name]:
            continue
        graph.fuse([l2, clip, expand, div], "LpNormalization", leader=div, attributes={"axis": axes[0], "p": 2}, inputs=[x], outputs=[div.outputs[0]])


@RULES.graph_pass("Reshape", ONNXSIM=ONNXSIM_VERSION, VERSION=ESP_PPQ_VERSION)
def simplifier_removes_identity_reshape(graph, chip):
    """esp-ppq {VERSION}'s simplifier (onnxsim {ONNXSIM}) removes a Reshape whose result has the shape of its input (GroupNorm(C) as torch.onnx writes it, Reshape [0, C, -1] of a [N, C, L] map); the node that reads it then reads the input itself, and the Reshape is reported with that node's layer, in its precision.

    Measured with esp-ppq 1.3.12 (tests/forms_models.py identity_reshape_pack, SEW's feature
    extractor): before an InstanceNormalization of [1, 32, 99] and [1, 16, 40] the Reshape is
    "fused into InstanceNormalization F32"; before a Conv and a Sigmoid it is fused into their S8
    layers; a Reshape that changes the shape (GroupNorm(4), GroupNorm(1) of a map) is an S8
    Reshape layer of its own.
    """
    for reshape in [n for n in graph.nodes if n.op_type == "Reshape"]:
        x, y = reshape.input(0), reshape.output(0)
        if x is None or y is None or not x.is_static or not y.is_static or tuple(x.shape) != tuple(y.shape) or y.is_model_output:
            continue
        _fold_into_its_reader(graph, reshape, x)


# ---- esp-ppq's calibration of a mask holding float32's lowest value (transformers' causal mask)

FLOAT32_LOWEST = float(np.finfo(np.float32).min)
# Masks are [1, 1, T, T] at most; larger constants (weights) are not read.
MAX_MASK_ELEMENTS = 1 << 20
# How far back the constants a mask is computed from are looked for (Where, Expand, Slice, ...).
MASK_DEPTH = 12
FLOAT_MIN_MASK_ATTRIBUTE = "espdl_add_of_a_float_min_mask"
# Its values: the mask's own value is known to hold the lowest value, or only a constant it is computed from is.
MASK_HOLDS, MASK_MAY_HOLD = 1, 2


def _known_small_value(t):
    if t is None or not (t.is_constant or t.foldable) or t.stored_elsewhere or (t.numel or 0) > MAX_MASK_ELEMENTS:
        return None
    return t.value


def holds_float_min(graph, t, depth: int = MASK_DEPTH, seen: set | None = None) -> bool:
    """`t` is known when the model is compiled and holds float32's lowest value, or is computed from a constant that does."""
    seen = set() if seen is None else seen
    if t is None or not (t.is_constant or t.foldable) or t.name in seen:
        return False
    seen.add(t.name)
    value = _known_small_value(t)
    if value is not None and value.size and value.dtype.kind == "f":
        return float(value.min()) <= FLOAT32_LOWEST
    node = graph.producer(t.name)
    if node is None or depth == 0:
        return False
    inputs = [i for i in node.inputs if i.present]
    condition = _known_small_value(node.inputs[0]) if node.op_type == "Where" and node.inputs else None
    if condition is not None and condition.size:
        inputs = ([node.inputs[1]] if condition.any() else []) + ([node.inputs[2]] if not condition.all() else [])
    return any(holds_float_min(graph, i, depth - 1, seen) for i in inputs)


def _scalar_constant(t) -> bool:
    return t is not None and (t.is_constant or t.foldable) and t.numel == 1


def _scores_from_a_matmul(graph, t) -> bool:
    """`t` is a MatMul's result, through Reshapes and Muls or Divs by a constant scalar only."""
    node = graph.producer(t.name) if t is not None and t.name else None
    while node is not None and (node.op_type == "Reshape" or (node.op_type in ("Mul", "Div") and len(node.inputs) == 2 and _scalar_constant(node.inputs[1]))):
        node = graph.producer(node.inputs[0].name)
    return node is not None and node.op_type == "MatMul"


def _softmax_into_a_matmul(graph, add) -> bool:
    """`add`'s result is read by a Softmax alone, whose result a MatMul alone reads as its first operand (through Reshapes)."""
    softmax = graph.only_consumer(add.outputs[0].name) if add.outputs else None
    if softmax is None or softmax.op_type != "Softmax":
        return False
    out = softmax.outputs[0]
    reader = graph.only_consumer(out.name)
    while reader is not None and reader.op_type == "Reshape":
        out = reader.outputs[0]
        reader = graph.only_consumer(out.name)
    return reader is not None and reader.op_type == "MatMul" and reader.inputs[0].name == out.name


@RULES.graph_pass("Add", VERSION=ESP_PPQ_VERSION)
def float_min_mask_outside_a_fused_attention(graph, chip):
    """esp-ppq {VERSION} fuses attention written MatMul, a scale by a constant, an Add of a mask, Softmax and MatMul (Reshapes between allowed) into one Attention layer; the Add of a mask holding float32's lowest value (transformers' causal mask, torch.finfo(float32).min) anywhere else is calibrated on its own, and its histogram over a range beyond float32 stops the build: the pass marks the Add for the rule calibration_of_a_float_min_mask.

    Measured with esp-ppq 1.3.12 on ESP32-S3 (2026-12-05, opset 13/14, probe models of
    q @ k^T * scale + mask, Softmax, @ v with an upper-triangular mask): fused (one Attention
    S8 layer) and converted with the lowest value, also with two Reshapes before the mask; with
    an ALiBi-like bias Added before the mask (BLOOM's baddbmm) not fused, and with the lowest
    value it stops (an Add of -1e9 converts); a mask Added to x @ W (constant W, tests/forms_models.py
    softmax_mask_imx_float_min's form): stops with the lowest value, converts with -3e38, -1e38,
    -1e35 or -1e9. Gemma 3's and LFM2's masks (fresh5) are fused; BLOOM's (fresh3) is not. What
    decides is the mask's value at run time: where the audit cannot compute it (a Where whose
    condition it does not evaluate), the lowest value only among the constants it is computed from,
    the rule is uncertain (DETR's padding mask, fresh4: all zeros at run time, esp-ppq calibrated it).
    """
    for add in [n for n in graph.nodes if n.op_type == "Add" and len(n.inputs) == 2]:
        masks = [i for i, t in enumerate(add.inputs) if holds_float_min(graph, t)]
        if len(masks) != 1:
            continue
        scores = add.inputs[1 - masks[0]]
        if _scores_from_a_matmul(graph, scores) and _softmax_into_a_matmul(graph, add):
            continue  # one Attention layer: the mask's Add is not calibrated on its own
        value = _known_small_value(add.inputs[masks[0]])
        graph.fuse([add], "Add", attributes={FLOAT_MIN_MASK_ATTRIBUTE: MASK_HOLDS if value is not None else MASK_MAY_HOLD})


# ---- esp-ppq's Attention layer, which ESP-DL's runtime has no module for

# esp-ppq's admission limits for a fused Attention (esp_ppq/executor/op/torch/espdl_attention.py,
# ESPDL_ATTENTION_DEFAULT_MAX_HEAD_DIM and _MAX_KV_TOKENS, unless its environment raises them).
ATTENTION_MAX_HEAD_DIM = 64
ATTENTION_MAX_KV_TOKENS = 2048
ATTENTION_LAYER_ATTRIBUTE = "espdl_fused_into_an_attention_layer"


# The Transposes esp-ppq's matcher takes as k's: a swap of the last two axes, or [B, N, H, D] (or
# [N, H, D]) straight to [B, H, D, N] (it rewrites the latter to [B, H, N, D]).
K_TRANSPOSES_OF_A_LAYOUT = ([0, 2, 3, 1], [1, 2, 0])


def _transposes_k(node) -> bool:
    perm = list(node.attr("perm", []) or []) if node.op_type == "Transpose" else []
    swap = list(range(len(perm) - 2)) + [len(perm) - 1, len(perm) - 2]
    return len(perm) in (3, 4) and (perm == swap or perm in K_TRANSPOSES_OF_A_LAYOUT)


def _run_time(t) -> bool:
    return t is not None and not (t.is_constant or t.foldable)


def _before_reshapes_that_cancel(graph, t):
    """The tensor a chain of Reshapes (each read by the next alone) that ends in `t`'s own shape starts from, else `t`: onnxsim makes such a chain one Reshape to the same shape and removes it."""
    node, start = graph.producer(t.name), t
    while node is not None and node.op_type == "Reshape" and node.inputs[0].is_static:
        start = node.inputs[0]
        node = graph.producer(start.name) if graph.only_consumer(start.name) is not None else None
    return start if start is not t and t.is_static and tuple(start.shape) == tuple(t.shape) else t


def _producer_read_alone(graph, t, op_types: tuple):
    """The node of `op_types` that writes `t` (through Reshapes that cancel) for one reader alone, or None."""
    t = _before_reshapes_that_cancel(graph, t)
    node = graph.producer(t.name)
    if node is None or node.op_type not in op_types or graph.only_consumer(t.name) is None:
        return None
    return node


def _attention_scores_matmul(graph, softmax):
    """The MatMul of q and a transposed k that `softmax` reads through one Add (a mask) and one Mul or Div by a constant scalar (a scale), each optional, each read by the next alone; or None."""
    node = _producer_read_alone(graph, softmax.inputs[0], ("Add", "Mul", "Div", "MatMul")) if softmax.inputs else None
    if node is not None and node.op_type == "Add" and len(node.inputs) == 2:
        node = next((p for p in (_producer_read_alone(graph, t, ("Mul", "Div", "MatMul")) for t in node.inputs) if p is not None), None)
    if node is not None and node.op_type in ("Mul", "Div") and len(node.inputs) == 2 and _scalar_constant(node.inputs[1]):
        node = _producer_read_alone(graph, node.inputs[0], ("MatMul",))
    if node is None or node.op_type != "MatMul" or len(node.inputs) != 2 or not all(_run_time(t) for t in node.inputs):
        return None
    k_t = graph.producer(node.inputs[1].name)
    return node if k_t is not None and _transposes_k(k_t) else None


def _heads_split_without_a_transpose(graph, t) -> bool:
    """`t` comes straight from a Reshape of [B, N, H * D] to [B, N, H, D] (heads split, not moved before the tokens)."""
    reshape = graph.producer(t.name)
    if reshape is None or reshape.op_type != "Reshape" or not (reshape.inputs[0].is_static and t.is_static):
        return False
    x, y = reshape.inputs[0].shape, t.shape
    return len(x) == 3 and len(y) == 4 and y[1] > 1 and y[2] > 1 and x[:2] == y[:2] and x[2] == y[2] * y[3]


def _within_the_attention_limits(q, scores) -> bool:
    """q [B, H, L, D] or [H, L, D] and the scores [.., L, Lk]: a head size and a key count esp-ppq keeps as one Attention layer."""
    if not (q.is_static and scores.is_static) or q.rank not in (3, 4) or scores.rank != q.rank:
        return False
    return 1 <= q.shape[-1] <= ATTENTION_MAX_HEAD_DIM and 1 <= scores.shape[-1] <= ATTENTION_MAX_KV_TOKENS and q.shape[-3] == scores.shape[-3]


@RULES.graph_pass("Softmax", VERSION=ESP_PPQ_VERSION, MAX_HEAD_DIM=ATTENTION_MAX_HEAD_DIM, MAX_KV_TOKENS=ATTENTION_MAX_KV_TOKENS)
def attention_fused_into_one_layer(graph, chip):
    """esp-ppq {VERSION} fuses attention written q @ k^T (k^T a Transpose of k's last two axes, or of [B, N, H, D] to [B, H, D, N]), an optional Mul or Div by a constant, an optional Add of a mask, Softmax over the last axis and @ v into one Attention layer, and keeps it when q, k and v are 3-D or 4-D with a head size of at most {MAX_HEAD_DIM} and at most {MAX_KV_TOKENS} keys (its ESPDL attention fusion and legalize passes; larger ones it expands back to MatMul and Softmax): the pass marks the Softmax for the rule attention_layer_without_a_runtime_module.

    Measured with esp-ppq 1.3.12 on ESP32-S3 (tests/forms_models.py attention_layer_esp cases, and
    the masked_attention_esp cases read again through the runtime's registry). Not modelled: the
    other spellings esp-ppq's matcher takes (k^T already [B, H, D, L] without a Transpose, the
    dynamo head merge Reshape-Transpose-Reshape, q and k each prescaled). q or v read straight from a
    [B, N, H * D] -> [B, N, H, D] Reshape it leaves unfused, as the pass does.
    """
    for softmax in [n for n in graph.nodes if n.op_type == "Softmax"]:
        out = softmax.output(0)
        axis = int(softmax.attr("axis", -1 if softmax.opset >= 13 else 1))
        if out is None or out.rank is None or axis not in (-1, out.rank - 1):
            continue
        reader = graph.only_consumer(out.name)
        if reader is None or reader.op_type != "MatMul" or reader.inputs[0].name != out.name or not _run_time(reader.input(1)):
            continue
        scores = _attention_scores_matmul(graph, softmax)
        if scores is None or not _within_the_attention_limits(scores.inputs[0], scores.outputs[0]):
            continue
        if any(_heads_split_without_a_transpose(graph, t) for t in (scores.inputs[0], reader.inputs[1])):
            continue  # esp-ppq leaves it MatMul and Softmax
        graph.fuse([softmax], "Softmax", attributes={"axis": axis, ATTENTION_LAYER_ATTRIBUTE: 1})
