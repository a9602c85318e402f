"""ESP-DL's operator table for the ESP32-S3 and ESP32-P4, as audit rules.

Source: espressif/esp-dl `operator_support_state.md` (revision bd5f0990, 2026-06-17), the
operator list of the esp-dl component 3.3.9: which operators ESP-DL implements, in which of
int8 / int16 / float32, and their restrictions. The document gives one table for both chips
(ESP32-S3: PIE V1 instructions, rounding half up; ESP32-P4: PIE V2, rounding half to even).
Where the exporter esp-ppq 1.3.12 behaves differently from the table (it keeps an operator in
float although ESP-DL has an integer kernel, or refuses a form the table does not mention), the
difference was measured with scripts/sweep_node_tests.py against ONNX's node tests and is
written here as a rule of its own, marked "(measured: esp-ppq 1.3.12)".

Placements on ESP-DL: there is no separate accelerator and no CPU fallback. A quantised
operator runs ESP-DL's SIMD (PIE) kernel: ACCELERATOR. An operator esp-ppq leaves in float
runs ESP-DL's float32 kernel inside the quantised graph: FLOAT. An operator ESP-DL has no
module for cannot be loaded by the firmware at all: UNSUPPORTED.
"""

from __future__ import annotations

from edgedeploy.audit.rules import NodeView, Offence, OpSupport, Placement, RuleSet, TensorView

# The graph passes esp-ppq applies before placing register on RULES when passes.py is imported.
from edgedeploy.targets.espdl.grouped_conv import block_diagonal_cost, needs_block_diagonal
from edgedeploy.targets.espdl.passes import ATTENTION_LAYER_ATTRIBUTE, BN_AS_CONV_RANK, DROPOUT_TRAINING_MODE_OPSET, FLOAT_MIN_MASK_ATTRIBUTE, MASK_MAY_HOLD
from edgedeploy.targets.espdl.registry import CHIPS, ESP_DL_VERSION, ESP_PPQ_VERSION, ONNXSIM_VERSION, RULES

SOURCE = (
    f"espressif/esp-dl operator_support_state.md (rev bd5f0990, 2026-06-17; esp-dl component {ESP_DL_VERSION}); "
    f"esp-ppq {ESP_PPQ_VERSION} behaviour measured with scripts/sweep_node_tests.py"
)
INT = ("int8", "int16")
ALL = ("int8", "int16", "float")
# ESP-DL has an int8 kernel, but esp-ppq does not quantise the operator in w8a8 (it is not in its
# quantisable set; at 16 bits its LUT pass can): at int8 the node stays float.
FLOAT_AT_8_BITS = ("int16", "float")



def op(precisions: tuple[str, ...], note: str = "") -> OpSupport:
    """An ESP-DL operator: without a kernel in the audited precision, esp-ppq keeps it in float
    where ESP-DL has a float32 kernel; otherwise nothing can run it (no fallback unit)."""
    return OpSupport(precisions, note, missing_precision=Placement.FLOAT if "float" in precisions else Placement.UNSUPPORTED)


# operator -> precisions of ESP-DL's kernels (the table's int8 / int16 / float32 columns).
OPERATORS: dict[str, OpSupport] = {
    "Add": op(ALL, "up to 4-D"),
    "AveragePool": op(ALL, "1-D/2-D, no dilation"),
    "Clip": op(ALL),
    "Concat": op(ALL),
    "Conv": op(INT, "1-D/2-D; group 1 or depthwise (other groups: written as group 1 by edgedeploy)"),
    "ConvTranspose": op(INT, "run as InsertZeros + Conv"),
    "DepthToSpace": op(ALL),
    "Div": op(ALL, "up to 4-D"),
    "Elu": op(ALL),
    "Equal": op(INT),
    "Exp": op(ALL),
    "Flatten": op(ALL),
    "Gather": op(ALL),
    "Gemm": op(INT),
    "GlobalAveragePool": op(ALL, "1-D/2-D"),
    "Greater": op(INT),
    "GreaterOrEqual": op(INT),
    "GRU": op(ALL),
    "HardSigmoid": op(ALL),
    "HardSwish": op(ALL),
    "LayerNormalization": op(ALL, "normalises over the given axis, with scale and bias"),
    "LeakyRelu": op(ALL),
    "Less": op(INT),
    "LessOrEqual": op(INT),
    "Log": op(FLOAT_AT_8_BITS, "int8 kernel exists, but esp-ppq 1.3.12 keeps it in float at 8 bits (measured)"),
    "LogSoftmax": op(ALL, "output is float32"),
    "LpNormalization": op(ALL),
    "LSTM": op(ALL),
    "MatMul": op(INT, "up to 4-D"),
    "MaxPool": op(INT, "1-D/2-D, no dilation"),
    "Mod": op(ALL, "up to 4-D, broadcasting, fmod=1"),
    "Mul": op(ALL, "up to 4-D"),
    "Neg": op(ALL),
    "Pad": op(ALL, "no wrap mode"),
    "Pow": op(FLOAT_AT_8_BITS, "up to 4-D, broadcasting; esp-ppq 1.3.12 keeps it in float at 8 bits (measured)"),
    "PRelu": op(ALL),
    "ReduceL1": op(ALL, "up to 4-D"),
    "ReduceL2": op(ALL, "up to 4-D"),
    "ReduceLogSum": op(ALL, "up to 4-D"),
    "ReduceLogSumExp": op(ALL, "up to 4-D"),
    "ReduceMax": op(ALL, "up to 4-D"),
    "ReduceMean": op(ALL, "up to 4-D"),
    "ReduceMin": op(ALL, "up to 4-D"),
    "ReduceProd": op(ALL, "up to 4-D"),
    "ReduceSum": op(ALL, "up to 4-D"),
    "ReduceSumSquare": op(ALL, "up to 4-D"),
    "Relu": op(ALL),
    "Reshape": op(ALL),
    "Resize": op(("int8",), "1-D/2-D nearest/linear, no roi, no antialias"),
    "ReverseSequence": op(INT),
    "RMSNormalization": op(ALL, "normalises over the given axis, with a scale"),
    "ScatterND": op(ALL, "reduction none/add/mul/max/min"),
    "Sigmoid": op(ALL),
    "Slice": op(ALL),
    "Softmax": op(ALL, "output is float32"),
    "SpaceToDepth": op(ALL),
    "Split": op(ALL),
    "Sqrt": op(FLOAT_AT_8_BITS, "int8 kernel exists, but esp-ppq 1.3.12 keeps it in float at 8 bits (measured)"),
    "Squeeze": op(ALL),
    "Sub": op(ALL, "up to 4-D"),
    "Swish": op(ALL),
    "Tanh": op(ALL),
    "Transpose": op(ALL),
    "Unsqueeze": op(ALL),
}

# Nodes esp-ppq's ONNX simplifier (onnxsim) removes before anything reaches the chip: an Identity
# is bypassed. It costs nothing on the device.
# (Constant nodes and anything else computable at compile time are folded: RuleSet.folds_constants.)
REMOVED_BY_SIMPLIFIER = {
    "Identity": OpSupport(("any",), "removed by esp-ppq's simplifier"),
}
# Operators esp-ppq rewrites before it places anything (the graph passes in passes.py): they take
# no ESP-DL kernel of their own. A node of these that the passes leave standing is a form esp-ppq
# cannot rewrite, and a rule below says why it fails.
REWRITTEN_BY_ESP_PPQ = {
    "BatchNormalization": OpSupport(("any",), "folded into the Conv/Gemm/ConvTranspose before it, else run as a 1x1 depthwise Conv (4-D inputs)"),
    "Dropout": OpSupport(("any",), "removed by esp-ppq's simplifier where it is an identity at inference"),
}

MAX_RANK = 4
# esp-ppq loads models with the checker of its onnx 1.19.1, which accepts IR versions up to 12
# (measured: every IR 13 and 14 node test is refused).
MAX_IR_VERSION = 12
RANK_LIMITED_OPS = (
    "Add", "Sub", "Mul", "Div", "MatMul", "Mod", "Pow",
    "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax",
    "ReduceMean", "ReduceMin", "ReduceProd", "ReduceSum", "ReduceSumSquare",
)  # fmt: skip
SPATIAL_OPS = ("Conv", "ConvTranspose", "AveragePool", "MaxPool", "GlobalAveragePool")


# ---- What esp-ppq 1.3.12 needs to quantise and export a node (measured on ONNX's node tests
# with scripts/sweep_node_tests.py; without it esp-ppq stops with an error, so the build fails).

# Inputs that are parameters (weights, axes, sizes, bounds): esp-ppq folds them into the
# exported graph and cannot take them at run time.
PARAMETER_INPUTS = {
    "Clip": (1, 2),
    "ConvTranspose": (1, 2),
    "Gemm": (2,),
    "Resize": (1, 2, 3),
    "Slice": (1, 2, 3, 4),
    "Split": (1,),
    **{op: (1,) for op in RANK_LIMITED_OPS if op.startswith("Reduce")},
}
# On the ESP32-P4 esp-ppq quantises Conv and Gemm weights per channel, which needs them as constants.
P4_PARAMETER_INPUTS = {"Conv": (1, 2), "Gemm": (1, 2)}
INPUT_NAMES = {
    "Clip": ("input", "min", "max"),
    "Conv": ("X", "W", "B"),
    "ConvTranspose": ("X", "W", "B"),
    "Gemm": ("A", "B", "C"),
    "Resize": ("X", "roi", "scales", "sizes"),
    "Slice": ("data", "starts", "ends", "axes", "steps"),
    "Split": ("input", "split"),
}


def _input_name(op: str, index: int) -> str:
    names = INPUT_NAMES.get(op, ("data", "axes"))
    return names[index] if index < len(names) else f"input {index}"


@RULES.rule(*sorted(set(PARAMETER_INPUTS) | set(P4_PARAMETER_INPUTS)), placement=Placement.UNSUPPORTED, VERSION=ESP_PPQ_VERSION)
def parameters_are_constant(node: NodeView, chip: str):
    """esp-ppq {VERSION} needs this operator's parameters (weights, bias, axes, bounds, sizes) as constants in the model, not as run-time inputs."""
    indices = PARAMETER_INPUTS.get(node.op_type, ()) + (P4_PARAMETER_INPUTS.get(node.op_type, ()) if chip == "esp32p4" else ())
    found = []
    for i in indices:
        t = node.input(i)
        if t is not None and not (t.is_constant or t.foldable):
            found.append(Offence(_input_name(node.op_type, i), f"input '{t.name}' is computed at run time"))
    return found


@RULES.rule("Clip", placement=Placement.UNSUPPORTED, VERSION=ESP_PPQ_VERSION)
def clip_skipped_bounds(node: NodeView, chip: str):
    """esp-ppq {VERSION} fails on a Clip whose min and max are both skipped inputs (empty names); leave them out instead."""
    if len(node.inputs) > 1 and node.input(1) is None and node.input(2) is None:
        return Offence("both bounds skipped")
    return None


# Inputs that carry indices or shapes rather than data: integers there are expected.
INDEX_INPUTS = {"Gather": (1,), "ScatterND": (1,), "ReverseSequence": (1,), "Slice": (1, 2, 3, 4), "Split": (1,), "Resize": (1, 2, 3), "Reshape": (1,), "Squeeze": (1,), "Unsqueeze": (1,), "Pad": (1, 3), "Expand": (1,)}
INDEX_INPUTS.update({op: (1,) for op in RANK_LIMITED_OPS if op.startswith("Reduce")})
ACTIVATION_DTYPES = ("float32",)
QUANTISED_OPS = tuple(op for op, s in OPERATORS.items() if "int8" in s.precisions)


@RULES.rule(*QUANTISED_OPS, placement=Placement.UNSUPPORTED, DTYPES=ACTIVATION_DTYPES, VERSION=ESP_PPQ_VERSION)
def float32_activations(node: NodeView, chip: str):
    """esp-ppq {VERSION} calibrates and quantises {DTYPES} activations only; an operator fed integer, bool or other float types is refused."""
    skip = INDEX_INPUTS.get(node.op_type, ())
    found = []
    for i, t in enumerate(node.inputs):
        if i in skip or not t.present or t.is_constant or t.foldable or t.dtype is None:
            continue
        if t.dtype not in ACTIVATION_DTYPES:
            found.append(Offence(t.dtype, f"input '{t.name}'"))
    return found


# Element types esp-ppq's executor (PyTorch) has no dtype for; a model feeding them fails to load.
UNKNOWN_TO_ESP_PPQ = ("uint16", "uint32", "uint64", "bfloat16", "string", "object")
NARROW_TYPE_PREFIXES = ("float8", "float4", "int4", "uint4", "int2", "uint2")


@RULES.rule(*OPERATORS, placement=Placement.UNSUPPORTED, DTYPES=UNKNOWN_TO_ESP_PPQ, VERSION=ESP_PPQ_VERSION)
def dtypes_esp_ppq_knows(node: NodeView, chip: str):
    """esp-ppq {VERSION} has no tensor type for {DTYPES} (nor 8-bit float or 4-bit types); such inputs are refused even for float operators."""
    for t in node.inputs:
        dtype = t.dtype
        if dtype is None or dtype == "float32" or t.is_constant or t.foldable:
            continue
        if dtype in UNKNOWN_TO_ESP_PPQ or dtype.startswith(NARROW_TYPE_PREFIXES):
            return Offence(dtype, f"input '{t.name}'")
    return None


@RULES.rule("MaxPool", placement=Placement.UNSUPPORTED)
def maxpool_without_indices(node: NodeView, chip: str):
    """ESP-DL's MaxPool returns the pooled values only; the Indices output is not implemented."""
    if len(node.outputs) > 1 and node.outputs[1].present:
        return Offence("Indices output", node.outputs[1].name)
    return None


@RULES.rule(placement=Placement.UNSUPPORTED, VERSION=ESP_PPQ_VERSION)
def no_empty_tensors(node: NodeView, chip: str):
    """esp-ppq {VERSION} cannot calibrate a tensor with a zero-sized dimension computed at run time (an empty constant, such as the roi of a Resize, is a parameter it does not calibrate)."""
    for tensors in (node.inputs, node.outputs):
        for t in tensors:
            if t.shape and 0 in t.shape and not (t.is_constant or t.foldable):
                return Offence(list(t.shape), f"tensor '{t.name}'")
    return None
# Measured: PP-OCR det's upsampling Resize with its empty roi from a Constant node or an
# initializer converts (tests/forms_models.py fpn_resize).


REDUCE_OPS = tuple(op for op in RANK_LIMITED_OPS if op.startswith("Reduce"))


@RULES.rule(*REDUCE_OPS, placement=Placement.UNSUPPORTED, VERSION=ESP_PPQ_VERSION)
def reduce_keepdims_explicit(node: NodeView, chip: str):
    """esp-ppq {VERSION}'s exporter reads the keepdims attribute of reductions and fails when it is left at its default; set it explicitly."""
    if not node.has_attr("keepdims"):
        return Offence("keepdims not set")
    return None


@RULES.rule("AveragePool", "MaxPool", placement=Placement.UNSUPPORTED, VERSION=ESP_PPQ_VERSION)
def pool_pads_at_most_half_kernel(node: NodeView, chip: str):
    """esp-ppq {VERSION} simulates pooling with PyTorch, which takes pads of at most half the (dilated) kernel."""
    kernel = node.attr("kernel_shape") or []
    dilations = node.attr("dilations") or [1] * len(kernel)
    pads = node.attr("pads") or []
    for axis, k in enumerate(kernel):
        limit = ((int(k) - 1) * int(dilations[axis]) + 1) // 2
        for p in (pads[axis] if axis < len(pads) else 0, pads[axis + len(kernel)] if axis + len(kernel) < len(pads) else 0):
            if int(p) > limit:
                return Offence(int(p), f"pad {p} on axis {axis}, kernel {k}: at most {limit}")
    return None


@RULES.rule("LayerNormalization", placement=Placement.UNSUPPORTED, VERSION=ESP_PPQ_VERSION)
def layernorm_last_axis_output_only(node: NodeView, chip: str):
    """esp-ppq {VERSION} normalises over the last axis only and exports only the normalised output (no Mean or InvStdDev outputs)."""
    found = []
    axis = int(node.attr("axis", -1))
    x = node.input(0)
    if axis != -1 and (x is None or x.rank is None or axis != x.rank - 1):
        found.append(Offence(axis, "axis"))
    extra = [t.name for t in node.outputs[1:] if t.present]
    if extra:
        found.append(Offence("extra outputs", ", ".join(extra)))
    return found


@RULES.rule("GRU", "LSTM", placement=Placement.UNSUPPORTED, VERSION=ESP_PPQ_VERSION)
def recurrent_forms(node: NodeView, chip: str):
    """esp-ppq {VERSION} exports GRU and LSTM with layout 0, in the forward or bidirectional direction, with the Y output, without LSTM peepholes, and GRU only with linear_before_reset = 1 (PyTorch's form)."""
    found = []
    if not (node.outputs and node.outputs[0].present):
        found.append(Offence("no Y output"))
    if int(node.attr("layout", 0)) != 0:
        found.append(Offence("layout 1"))
    if node.attr("direction", "forward") == "reverse":
        found.append(Offence("direction reverse"))
    if node.op_type == "LSTM" and node.input(7) is not None:
        found.append(Offence("peepholes"))
    if node.op_type == "GRU" and int(node.attr("linear_before_reset", 0)) != 1:
        found.append(Offence("linear_before_reset 0"))
    return found


@RULES.rule("PRelu", placement=Placement.UNSUPPORTED)
def prelu_per_channel_slope(node: NodeView, chip: str):
    """ESP-DL's PRelu takes one slope per channel (or a single one); other broadcast shapes are refused."""
    x, slope = node.input(0), node.input(1)
    if x is None or slope is None or slope.numel is None or x.shape is None or len(x.shape) < 2:
        return None
    channels = x.shape[1]
    if slope.numel not in (1, channels):
        return Offence(list(slope.shape), f"{slope.numel} slopes for {channels} channels")
    return None


@RULES.rule("MatMul", placement=Placement.UNSUPPORTED, VERSION=ESP_PPQ_VERSION)
def matmul_not_both_1d(node: NodeView, chip: str):
    """esp-ppq {VERSION} crashes on a MatMul of two 1-D operands (a dot product)."""
    ranks = [t.rank for t in node.inputs if t.present]
    if len(ranks) == 2 and ranks[0] == 1 and ranks[1] == 1:
        return Offence(ranks, "1-D x 1-D")
    return None


@RULES.rule("Identity", placement=Placement.UNSUPPORTED)
def identity_of_tensor(node: NodeView, chip: str):
    """Only an Identity of a tensor is removed; sequences and optionals are not ESP-DL types."""
    x = node.input(0)
    if x is not None and x.dtype is None and x.shape is None and not x.is_constant:
        return Offence("not a tensor", f"input '{x.name}'")
    return None


# ---- ESP-DL's own restrictions (the operator table's notes)


def _ranks(node: NodeView) -> list[int]:
    return [t.rank for t in node.inputs + node.outputs if t.present and t.rank is not None]


# ESP-DL's element-wise modules (dl_module_add/sub/mul/mod/pow.hpp, through
# base::get_elemwise_operation_args in dl_base_elemwise.cpp, v3.3.9) first merge the axes both
# operands agree on, and assert that at most 4 merged axes are left; its reductions
# (dl_module_reduce_base.hpp, forward_template) merge neighbouring axes that are both reduced or
# both kept and run 1 to 4 merged axes. Their "Support up to 4D" is of the merged shape.
MERGING_ELEMENTWISE = ("Add", "Sub", "Mul", "Mod", "Pow")


def elementwise_merged_axes(a: list, b: list, out: list) -> int:
    """How many axes ESP-DL's element-wise kernels are left with: the operands (aligned to the
    output's rank with leading ones) are walked from the first axis; an axis takes in the next ones
    as long as both operands agree on both axes, or one operand is 1 on both; the merged count is
    one more than the first axis that takes in every axis after it."""
    rank = len(out)
    a = [1] * (rank - len(a)) + list(a)
    b = [1] * (rank - len(b)) + list(b)
    out = list(out)
    for i in range(rank):
        j = i + 1
        while j < rank:
            if a[i] == b[i] and a[j] == b[j]:
                a[i], b[i], out[i] = a[i] * a[j], b[i] * b[j], out[i] * out[j]
                a[j] = b[j] = out[j] = 1
            elif a[i] == 1 and a[j] == 1:
                b[i], out[i] = b[i] * b[j], out[i] * out[j]
                b[j] = out[j] = 1
            elif b[i] == 1 and b[j] == 1:
                a[i], out[i] = a[i] * a[j], out[i] * out[j]
                a[j] = out[j] = 1
            else:
                break
            j += 1
        if j == rank:
            return i + 1
    return rank


def reduction_merged_axes(rank: int, axes) -> int:
    """How many axes ESP-DL's reductions are left with: neighbouring axes both reduced or both kept are one."""
    reduced = [i in {int(a) % rank for a in axes} for i in range(rank)] if axes else [True] * rank
    return 1 + sum(1 for x, y in zip(reduced, reduced[1:]) if x != y)


def _reduction_axes(node: NodeView):
    axes = node.attr("axes")
    t = node.input(1)
    if axes is None and t is not None and t.present and (t.is_constant or t.foldable) and t.value is not None:
        axes = [int(a) for a in t.value.reshape(-1)]
    return axes


def _merged_axes(node: NodeView) -> int | None:
    """The merged axes ESP-DL's kernel runs this node with, where it merges them and the shapes are known; else None."""
    if node.op_type in MERGING_ELEMENTWISE:
        x, y, out = node.input(0), node.input(1), node.output(0)
        if all(t is not None and t.is_static for t in (x, y, out)):
            return elementwise_merged_axes(list(x.shape), list(y.shape), list(out.shape))
    elif node.op_type.startswith("Reduce"):
        x = node.input(0)
        axes = _reduction_axes(node)
        if x is not None and x.rank is not None and (axes is not None or not _given_input(node, 1)):
            return reduction_merged_axes(x.rank, axes)
    return None


def _given_input(node: NodeView, i: int) -> bool:
    t = node.input(i)
    return t is not None and t.present


@RULES.rule(*RANK_LIMITED_OPS, placement=Placement.UNSUPPORTED, MAX_RANK=MAX_RANK, VERSION=ESP_DL_VERSION)
def at_most_4d(node: NodeView, chip: str):
    """ESP-DL {VERSION} runs this operator on tensors of at most {MAX_RANK} dimensions; its element-wise operators (Add, Sub, Mul, Mod, Pow) and reductions count the dimensions left once it has merged neighbouring ones (those both operands agree on; those all reduced or all kept)."""
    ranks = _ranks(node)
    if not ranks or max(ranks) <= MAX_RANK:
        return None
    merged = _merged_axes(node)
    if merged is not None:
        if merged > MAX_RANK:
            return Offence(merged, f"rank {max(ranks)}, {merged} dimensions once merged")
        return None
    return Offence(max(ranks), f"rank {max(ranks)}")


SPATIAL_RANKS = (3, 4)  # N, C plus one or two spatial dimensions


@RULES.rule(*SPATIAL_OPS, placement=Placement.UNSUPPORTED, SPATIAL="1-D and 2-D", VERSION=ESP_DL_VERSION)
def spatial_1d_or_2d(node: NodeView, chip: str):
    """ESP-DL {VERSION} implements only {SPATIAL} forms of this operator."""
    x = node.input(0)
    if x is not None and x.rank is not None and x.rank not in SPATIAL_RANKS:
        return Offence(x.rank - 2, f"{x.rank - 2}-D input (rank {x.rank})")
    return None


# ESP-DL's Conv module (esp-dl dl/module/include/dl_module_conv.hpp, forward_args_impl and
# get_output_shape) calls its depthwise kernel for every group other than 1, and gives such a
# Conv as many output channels as input channels; its depthwise kernels take one filter per
# channel (dl_c_dwconv.hpp: hwc1). esp-ppq does not check any of this: it quantises and exports
# every grouped Conv like a depthwise one (export_patterns.py lays out every group > 1 filter as
# depthwise). Probed with esp-ppq 1.3.12 (tests/forms_models.py GROUPED_CONV_FORMS, verdicts in
# tests/fixtures/forms/verdicts.json): groups of 2, 4 and 8 with 2 to 8 channels per group,
# 1x1 and 3x3 kernels, stride 2, dilation 2, no padding, 1-D, and a depthwise Conv with two
# output channels per input channel all come out as int8 layers; so do the corpus's
# onnx_zoo_shufflenet (group 4) and regnet_y_400mf (8 channels per group). `edgedeploy build`
# therefore rewrites each such Conv with constant weights, before esp-ppq sees it, as one group-1
# Conv with block-diagonal weights (grouped_conv.py: exact in float; esp-ppq 1.3.12 converts the
# rewritten forms to int8, docs/audit.md), and the audit places the Conv as that rewrite makes
# it. Only a grouped Conv whose weights are computed at run time cannot be rewritten.


def _grouped_conv(node: NodeView):
    """(group, input channels, output channels) of a Conv ESP-DL would run wrongly as written, else None."""
    group = int(node.attr("group", 1))
    if group == 1:
        return None
    channels = _channels(node.input(0))
    outputs = _channels(node.output(0))
    weight = node.input(1)
    if outputs is None and weight is not None and weight.shape:
        outputs = weight.shape[0] if isinstance(weight.shape[0], int) else None
    return (group, channels, outputs) if needs_block_diagonal(group, channels, outputs) else None


def _constant_weights(node: NodeView) -> bool:
    weight = node.input(1)
    return weight is not None and (weight.is_constant or weight.foldable)


@RULES.rule("Conv", placement=Placement.ACCELERATOR, ALLOWED="1 or depthwise (group = input channels = output channels)", VERSION=ESP_DL_VERSION)
def grouped_conv_written_block_diagonal(node: NodeView, chip: str):
    """ESP-DL {VERSION} runs a Conv only with group {ALLOWED}, and any other group with its depthwise kernel (which computes something else), so edgedeploy writes this Conv, before esp-ppq sees it, as one group-1 Conv with block-diagonal weights (zeros outside each group's block; same name, bias and per-channel weight ranges): exact, at the cost of the group's factor in MACs and weights."""
    found = _grouped_conv(node)
    if found is None or not _constant_weights(node):
        return None
    group, channels, outputs = found
    weight = node.input(1)
    shape = weight.shape if weight is not None and weight.shape and all(isinstance(d, int) for d in weight.shape) else None
    if shape is None:
        return Offence(group, f"group-{group} Conv written as group 1: {group}x its MACs and weights")
    added = block_diagonal_cost(group, shape)["added_weights"]
    return Offence(group, f"group-{group} Conv ({_known(channels)} -> {_known(outputs)} channels) written as group 1: {group}x its MACs, +{added} weight bytes at int8")


@RULES.rule("Conv", placement=Placement.UNSUPPORTED, ALLOWED="1, or the number of input channels with as many output channels (depthwise)", VERSION=ESP_DL_VERSION, PPQ=ESP_PPQ_VERSION)
def conv_group_1_or_depthwise(node: NodeView, chip: str):
    """ESP-DL {VERSION}'s Conv takes group = {ALLOWED}: it runs every other group with its depthwise kernel, one filter and one output channel per input channel, so a grouped convolution in between, or a depthwise one with a channel multiplier, does not compute what the model says, although esp-ppq {PPQ} converts it without a word. edgedeploy rewrites such a Conv as a block-diagonal group-1 Conv only when its weights are constants; these are computed at run time. Workaround: make the weights constants, or split it into one Conv per group on channel slices (Split, Convs, Concat)."""
    found = _grouped_conv(node)
    if found is None or _constant_weights(node):
        return None
    group, channels, outputs = found
    return Offence(group, f"group {group}, input channels {_known(channels)}, output channels {_known(outputs)}, weights computed at run time")


def _channels(t: TensorView | None) -> int | None:
    c = t.shape[1] if t is not None and t.shape is not None and len(t.shape) > 1 else None
    return c if isinstance(c, int) else None


def _known(value) -> str:
    return "unknown" if value is None else str(value)


@RULES.rule("AveragePool", "MaxPool", placement=Placement.UNSUPPORTED, VERSION=ESP_DL_VERSION)
def pool_without_dilation(node: NodeView, chip: str):
    """ESP-DL {VERSION} pools without dilation; a dilation other than 1 is not implemented."""
    dilations = node.attr("dilations")
    if dilations and any(int(d) != 1 for d in dilations):
        return Offence(list(dilations))
    return None


@RULES.rule("Pad", placement=Placement.UNSUPPORTED, MODE="wrap")
def pad_not_wrap(node: NodeView, chip: str):
    """ESP-DL's Pad has no {MODE} mode."""
    mode = node.attr("mode", "constant")
    if mode == "wrap":
        return Offence(mode)
    return None


RESIZE_MODES = ("nearest", "linear")


@RULES.rule("Resize", placement=Placement.UNSUPPORTED, MODES=RESIZE_MODES, MAX_RANK=MAX_RANK)
def resize_limits(node: NodeView, chip: str):
    """ESP-DL's Resize scales 1-D or 2-D inputs of at most {MAX_RANK} dimensions with mode {MODES}, without a region of interest (roi, tf_crop_and_resize) and without antialias."""
    found = []
    mode = node.attr("mode", "nearest")
    if mode not in RESIZE_MODES:
        found.append(Offence(mode, "mode"))
    if int(node.attr("antialias", 0)):
        found.append(Offence("antialias", "antialias=1"))
    if node.attr("coordinate_transformation_mode", "half_pixel") == "tf_crop_and_resize":
        found.append(Offence("roi", "coordinate_transformation_mode tf_crop_and_resize"))
    x = node.input(0)
    if x is not None and x.rank is not None and x.rank > MAX_RANK:
        found.append(Offence(x.rank, f"rank {x.rank}"))
    return found


@RULES.rule("Mod", placement=Placement.UNSUPPORTED, FMOD=1)
def mod_c_style(node: NodeView, chip: str):
    """ESP-DL's Mod computes the C-style remainder (fmod={FMOD}); the integer-only fmod=0 form is not implemented."""
    fmod = int(node.attr("fmod", 0))
    if fmod != 1:
        return Offence(fmod, f"fmod={fmod}")
    return None


# ---- Forms that make esp-ppq 1.3.12 stop (each measured on a model built for it, and seen on the
# real-model corpus, scripts/corpus/agreement.py): the build fails with esp-ppq's own message.
# Nodes of the operators its graph passes rewrite (passes.py) reach these rules only in a form
# the passes could not rewrite.

# BN_AS_CONV_RANK and DROPOUT_TRAINING_MODE_OPSET: see passes.py, where the rewrites they limit live.


@RULES.rule("BatchNormalization", placement=Placement.UNSUPPORTED, VERSION=ESP_PPQ_VERSION, RANK=BN_AS_CONV_RANK)
def batchnorm_esp_ppq_can_rewrite(node: NodeView, chip: str):
    """esp-ppq {VERSION} runs a BatchNormalization only folded into the Conv, Gemm or ConvTranspose before it, or as a 1x1 depthwise Conv on a {RANK}-D input, with constant scale, bias, mean and variance; this one it cannot rewrite and stops ("BatchNorm should have 4 parameters", or "Op Execution Error" in the Conv it made). Workaround: give the statistics as constants, and put the normalisation after a Conv or Gemm or make its input {RANK}-D."""
    runtime = [i for i in range(1, 5) if not (node.input(i) is not None and (node.input(i).is_constant or node.input(i).foldable))]
    if runtime:
        return Offence("run-time statistics", ", ".join(f"input '{node.inputs[i].name}'" if i < len(node.inputs) else f"input {i} missing" for i in runtime))
    x = node.input(0)
    if x is None or x.rank is None:
        return Offence("input rank unknown", "esp-ppq needs a 4-D input for the 1x1 Conv it makes", uncertain=True)
    if x.rank != BN_AS_CONV_RANK:
        return Offence(x.rank, f"{x.rank}-D input, not after a Conv, Gemm or ConvTranspose it could be folded into")
    if producer_is_fold_target(x):
        # The Conv before it takes run-time weights: esp-ppq's BN folding unpacks none
        # ("ValueError: not enough values to unpack", measured).
        return Offence("run-time weights", f"the {x.producer} before it has run-time weights")
    if any(o.present for o in node.outputs[1:]):
        return Offence("training outputs", "running mean / variance outputs on a BatchNormalization esp-ppq turns into a Conv (not measured)", uncertain=True)
    return Offence("not rewritten", "a form esp-ppq's passes were not measured on", uncertain=True)


def producer_is_fold_target(x: TensorView) -> bool:
    return x.producer in ("Conv", "Gemm", "ConvTranspose")


@RULES.rule("Dropout", placement=Placement.UNSUPPORTED, VERSION=ESP_PPQ_VERSION, OPSET=DROPOUT_TRAINING_MODE_OPSET)
def dropout_left_by_simplifier(node: NodeView, chip: str):
    """esp-ppq {VERSION} has no executor for Dropout and stops ("Op Execution Error ... Dropout ... has no backend implementation") on one its simplifier keeps: a training_mode input or a ratio fed at run time (opset {OPSET} on), a ratio other than 0 (older opsets), a mask output in use, or one that passes a model input straight to a model output. Workaround: export the model for inference without the Dropout (or give an opset-{OPSET}+ Dropout no training_mode input), e.g. with onnxsim or `edgedeploy fix`."""
    mask = node.output(1)
    if node.opset >= DROPOUT_TRAINING_MODE_OPSET:
        if node.input(2) is not None:
            return Offence("training_mode input", f"input '{node.input(2).name}'")
        ratio = node.input(1)
        if ratio is not None and not (ratio.is_constant or ratio.foldable):
            return Offence("run-time ratio", f"input '{ratio.name}'")
    elif float(node.attr("ratio", 0.5)) != 0.0:
        return Offence(float(node.attr("ratio", 0.5)), f"ratio {node.attr('ratio', 0.5)} at opset {node.opset}")
    if mask is not None and mask.present:
        return Offence("mask output", f"output '{mask.name}'")
    return Offence("model input to model output", "nothing else would produce the output")


@RULES.rule("Add", placement=Placement.UNSUPPORTED, VERSION=ESP_PPQ_VERSION)
def calibration_of_a_float_min_mask(node: NodeView, chip: str):
    """esp-ppq {VERSION} stops while calibrating an Add of a mask holding float32's lowest value (transformers' causal mask) that it does not fuse into an Attention layer ("torch.histc: range of [0, inf] is not finite", reported as "Op Execution Error" on the Add): the histogram of its result spans more than float32 holds (passes.float_min_mask_outside_a_fused_attention). Workaround: a mask of -1e9, or attention written MatMul, scale, mask, Softmax, MatMul."""
    found = node.attr(FLOAT_MIN_MASK_ATTRIBUTE)
    if not found:
        return None
    if int(found) == MASK_MAY_HOLD:
        return Offence("float32 lowest", "mask computed from float32's lowest value, its values at run time not known here", uncertain=True)
    return Offence("float32 lowest", "mask Added outside an attention esp-ppq fuses")


@RULES.rule("Softmax", placement=Placement.UNSUPPORTED, VERSION=ESP_PPQ_VERSION, ESP_DL=ESP_DL_VERSION)
def attention_layer_without_a_runtime_module(node: NodeView, chip: str):
    """esp-ppq {VERSION} exports attention (q @ k^T, scale, mask, Softmax, @ v) as one Attention layer (passes.attention_fused_into_one_layer), and ESP-DL {ESP_DL}'s runtime registers no Attention module: the .espdl does not load ("Do not support Attention, please implement and register it first."). Workaround: a head size above 64, or a runtime with an Attention module."""
    if not node.attr(ATTENTION_LAYER_ATTRIBUTE):
        return None
    return Offence("Attention layer", "fused by esp-ppq with the MatMuls around it; no module in ESP-DL's runtime")


@RULES.rule("Add", placement=Placement.UNSUPPORTED, VERSION=ESP_PPQ_VERSION, ONNXSIM=ONNXSIM_VERSION)
def run_time_bias_of_a_fused_gemm(node: NodeView, chip: str):
    """esp-ppq {VERSION} stops ("Bias Varaible ... must be a constant", esp_ppq/quantization/optim/parameters.py) on an Add whose first operand is a 2-D MatMul's result that nothing else reads and whose second, computed at run time, has the bias shape [N] or [1 or M, N]: its simplifier (onnxsim {ONNXSIM}, onnx-optimizer's fuse_matmul_add_bias_into_gemm) makes the pair one Gemm with that operand as its bias, which esp-ppq quantises only as a constant. Workaround: keep the MatMul's result 3-D ([1, M, N]), or put first an operand that is not such a MatMul's result."""
    product, other = node.input(0), node.input(1)
    if product is None or other is None or product.producer != "MatMul" or product.consumers != ("Add",) or product.is_model_output:
        return None
    if other.is_constant or other.foldable or not (product.is_static and other.is_static) or product.rank != 2:
        return None
    rows, columns = product.shape
    if tuple(other.shape) not in ((columns,), (1, columns), (rows, columns)):
        return None
    return Offence("run-time bias", f"'{other.name}' made the bias of the Gemm from MatMul '{product.name}'")


# esp-ppq's quantisation alignment ties a recurrent layer's Y_h output (output 1) to its initial
# state (input 5) (esp_ppq/quantization/optim/refine.py, align_to_first_output).
RNN_ALIGNED_OUTPUT = 1
RNN_ALIGNED_INPUT = 5


@RULES.rule("GRU", "LSTM", placement=Placement.UNSUPPORTED, VERSION=ESP_PPQ_VERSION)
def recurrent_state_for_alignment(node: NodeView, chip: str):
    """esp-ppq {VERSION} crashes (IndexError in align_to_first_output, esp_ppq/quantization/optim/refine.py) on a GRU or LSTM without its Y_h output or without an initial state: it aligns Y_h with the initial state, and its simplifier drops an all-zero initial state (PyTorch's default when none is passed). Workaround: keep Y_h among the outputs and feed the initial state as a model input (zeros at run time), as stateful sequence models do."""
    found = []
    y_h = node.output(RNN_ALIGNED_OUTPUT)
    if y_h is None or not y_h.present:
        found.append(Offence("no Y_h output"))
    # Positions count up to the last input given: an LSTM with only initial_c still has input 5.
    last = max((i for i, t in enumerate(node.inputs) if t.present), default=-1)
    if last < RNN_ALIGNED_INPUT:
        found.append(Offence("no initial state", "none given, or an all-zero one the simplifier drops"))
    return found


# ONNX operators (of esp-ppq's onnx 1.19.1) that have no entry in esp-ppq 1.3.12's executor table
# (esp_ppq/executor/op/torch/default.py, DEFAULT_BACKEND_TABLE); Dropout has a rule of its own.
NO_ESP_PPQ_EXECUTOR = (
    "Acos", "Acosh", "AffineGrid", "ArgMin", "Asin", "Asinh", "Atan", "Atanh", "Bernoulli",
    "BitShift", "BitwiseAnd", "BitwiseNot", "BitwiseOr", "BitwiseXor", "BlackmanWindow", "CastLike",
    "Ceil", "Celu", "CenterCropPad", "Col2Im", "Compress", "ConcatFromSequence", "ConvInteger",
    "Cosh", "CumSum", "DFT", "DeformConv", "DequantizeLinear", "Det", "DynamicQuantizeLinear",
    "Einsum", "EyeLike", "GlobalLpPool", "GridSample", "GroupNormalization", "HammingWindow",
    "HannWindow", "Hardmax", "If", "ImageDecoder", "IsInf", "IsNaN", "LRN", "Loop", "LpPool",
    "MatMulInteger", "MaxRoiPool", "MaxUnpool", "Mean", "MeanVarianceNormalization",
    "MelWeightMatrix", "Mish", "Multinomial", "NegativeLogLikelihoodLoss", "Optional",
    "OptionalGetElement", "OptionalHasElement", "Or", "QLinearConv", "QLinearMatMul",
    "QuantizeLinear", "RNN", "RandomNormal", "RandomNormalLike", "RandomUniform",
    "RandomUniformLike", "RegexFullMatch", "RotaryEmbedding", "Round", "STFT", "Scan", "Scatter",
    "Selu", "SequenceAt", "SequenceConstruct", "SequenceEmpty", "SequenceErase", "SequenceInsert",
    "SequenceLength", "SequenceMap", "Shrink", "Sign", "Sinh", "Size", "SoftmaxCrossEntropyLoss",
    "Softsign", "SplitToSequence", "StringConcat", "StringNormalizer", "StringSplit",
    "TensorScatter", "TfIdfVectorizer", "ThresholdedRelu", "Trilu", "Unique", "Upsample", "Xor",
)  # fmt: skip


@RULES.rule(*NO_ESP_PPQ_EXECUTOR, placement=Placement.UNSUPPORTED, VERSION=ESP_PPQ_VERSION)
def esp_ppq_has_no_executor(node: NodeView, chip: str):
    """esp-ppq {VERSION} has no executor for this operator and stops while tracing the model ("Op Execution Error ... has no backend implementation"); ESP-DL has no module for it either. Workaround: express it with operators ESP-DL implements (`edgedeploy fix` knows some rewrites) or remove it before converting."""
    return Offence(node.op_type)


def rule_set(chip_id: str, precision: str | None = None, **_options) -> RuleSet:
    """The ESP-DL rules for `chip_id` (esp32s3 or esp32p4); the table is the same for both chips.

    `precision` needs no variant here (the table lists precisions per operator, and the engine
    applies the one audited); options meant for other targets' tables are ignored.
    """
    if chip_id not in CHIPS:
        raise KeyError(chip_id)
    return RuleSet(
        target="espdl",
        chip=chip_id,
        toolchain_version=f"esp-dl {ESP_DL_VERSION} / esp-ppq {ESP_PPQ_VERSION}",
        source=SOURCE,
        accelerator_ops={**OPERATORS, **REMOVED_BY_SIMPLIFIER, **REWRITTEN_BY_ESP_PPQ},
        rules=RULES.rules_for(chip_id),
        passes=RULES.passes_for(chip_id),
        # ESP-DL has no fallback unit: an operator without an ESP-DL module cannot be loaded.
        fallback_ops=frozenset(),
        # esp-ppq runs onnxsim first: subgraphs computable at compile time become constants.
        folds_constants=True,
        fallback_unit="CPU (float32 kernels)",
        # ESP-DL has no second processor: "float" is ESP-DL's own float32 kernel on the same CPU.
        units={
            Placement.ACCELERATOR: ("ESP-DL integer kernels (SIMD)", None),
            Placement.FLOAT: ("ESP-DL float kernel (CPU, scalar)", "float32"),
            Placement.FALLBACK: ("CPU (float32 kernels)", "float32"),
        },
        max_ir_version=MAX_IR_VERSION,
        notes=[
            "ESP-DL has no CPU fallback: an operator it does not implement makes the model fail to load.",
            "FLOAT: esp-ppq leaves the operator in float32 and ESP-DL runs its float kernel, with (de)quantisation around it.",
            "ESP32-S3 rounds half up (PIE V1), ESP32-P4 half to even (PIE V2); the operator table is the same.",
        ],
    )
