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

from edgedeploy.audit.rules import NodeView, Offence, OpSupport, Placement, RuleSet, rule

ESP_DL_VERSION = "3.3.9"
ESP_PPQ_VERSION = "1.3.12"
SOURCE = (
    f"espressif/esp-dl operator_support_state.md (rev bd5f0990, 2026-06-17; esp-dl component {ESP_DL_VERSION}); "
    f"esp-ppq {ESP_PPQ_VERSION} behaviour measured with scripts/sweep_node_tests.py"
)
CHIPS = ("esp32s3", "esp32p4")

INT = ("int8", "int16")
ALL = ("int8", "int16", "float")

# operator -> precisions of ESP-DL's kernels (the table's int8 / int16 / float32 columns).
OPERATORS: dict[str, OpSupport] = {
    "Add": OpSupport(ALL, "up to 4-D"),
    "AveragePool": OpSupport(ALL, "1-D/2-D, no dilation"),
    "Clip": OpSupport(ALL),
    "Concat": OpSupport(ALL),
    "Conv": OpSupport(INT, "1-D/2-D; group 1 or depthwise"),
    "ConvTranspose": OpSupport(INT, "run as InsertZeros + Conv"),
    "DepthToSpace": OpSupport(ALL),
    "Div": OpSupport(ALL, "up to 4-D"),
    "Elu": OpSupport(ALL),
    "Equal": OpSupport(INT),
    "Exp": OpSupport(ALL),
    "Flatten": OpSupport(ALL),
    "Gather": OpSupport(ALL),
    "Gemm": OpSupport(INT),
    "GlobalAveragePool": OpSupport(ALL, "1-D/2-D"),
    "Greater": OpSupport(INT),
    "GreaterOrEqual": OpSupport(INT),
    "GRU": OpSupport(ALL),
    "HardSigmoid": OpSupport(ALL),
    "HardSwish": OpSupport(ALL),
    "LayerNormalization": OpSupport(ALL, "normalises over the given axis, with scale and bias"),
    "LeakyRelu": OpSupport(ALL),
    "Less": OpSupport(INT),
    "LessOrEqual": OpSupport(INT),
    "Log": OpSupport(ALL),
    "LogSoftmax": OpSupport(ALL, "output is float32"),
    "LpNormalization": OpSupport(ALL),
    "LSTM": OpSupport(ALL),
    "MatMul": OpSupport(INT, "up to 4-D"),
    "MaxPool": OpSupport(INT, "1-D/2-D, no dilation"),
    "Mod": OpSupport(ALL, "up to 4-D, broadcasting, fmod=1"),
    "Mul": OpSupport(ALL, "up to 4-D"),
    "Neg": OpSupport(ALL),
    "Pad": OpSupport(ALL, "no wrap mode"),
    "Pow": OpSupport(ALL, "up to 4-D, broadcasting"),
    "PRelu": OpSupport(ALL),
    "ReduceL1": OpSupport(ALL, "up to 4-D"),
    "ReduceL2": OpSupport(ALL, "up to 4-D"),
    "ReduceLogSum": OpSupport(ALL, "up to 4-D"),
    "ReduceLogSumExp": OpSupport(ALL, "up to 4-D"),
    "ReduceMax": OpSupport(ALL, "up to 4-D"),
    "ReduceMean": OpSupport(ALL, "up to 4-D"),
    "ReduceMin": OpSupport(ALL, "up to 4-D"),
    "ReduceProd": OpSupport(ALL, "up to 4-D"),
    "ReduceSum": OpSupport(ALL, "up to 4-D"),
    "ReduceSumSquare": OpSupport(ALL, "up to 4-D"),
    "Relu": OpSupport(ALL),
    "Reshape": OpSupport(ALL),
    "Resize": OpSupport(("int8",), "1-D/2-D nearest/linear, no roi, no antialias"),
    "ReverseSequence": OpSupport(INT),
    "RMSNormalization": OpSupport(ALL, "normalises over the given axis, with a scale"),
    "ScatterND": OpSupport(ALL, "reduction none/add/mul/max/min"),
    "Sigmoid": OpSupport(ALL),
    "Slice": OpSupport(ALL),
    "Softmax": OpSupport(ALL, "output is float32"),
    "SpaceToDepth": OpSupport(ALL),
    "Split": OpSupport(ALL),
    "Sqrt": OpSupport(ALL),
    "Squeeze": OpSupport(ALL),
    "Sub": OpSupport(ALL, "up to 4-D"),
    "Swish": OpSupport(ALL),
    "Tanh": OpSupport(ALL),
    "Transpose": OpSupport(ALL),
    "Unsqueeze": OpSupport(ALL),
}

# Nodes esp-ppq's ONNX simplifier (onnxsim) removes before anything reaches the chip: a Constant
# becomes an initializer, an Identity is bypassed. They cost nothing on the device.
REMOVED_BY_SIMPLIFIER = {
    "Constant": OpSupport(("any",), "folded into an initializer by esp-ppq's simplifier"),
    "Identity": OpSupport(("any",), "removed by esp-ppq's simplifier"),
}

MAX_RANK = 4
RANK_LIMITED_OPS = (
    "Add", "Sub", "Mul", "Div", "MatMul", "Mod", "Pow",
    "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax",
    "ReduceMean", "ReduceMin", "ReduceProd", "ReduceSum", "ReduceSumSquare",
)  # fmt: skip
SPATIAL_OPS = ("Conv", "ConvTranspose", "AveragePool", "MaxPool", "GlobalAveragePool")


def _ranks(node: NodeView) -> list[int]:
    return [t.rank for t in node.inputs + node.outputs if t.present and t.rank is not None]


@rule(*RANK_LIMITED_OPS, placement=Placement.UNSUPPORTED, MAX_RANK=MAX_RANK, VERSION=ESP_DL_VERSION)
def at_most_4d(node: NodeView, chip: str):
    """ESP-DL {VERSION} runs this operator on tensors of at most {MAX_RANK} dimensions."""
    ranks = _ranks(node)
    if ranks and max(ranks) > MAX_RANK:
        return Offence(max(ranks), f"rank {max(ranks)}")
    return None


SPATIAL_RANKS = (3, 4)  # N, C plus one or two spatial dimensions


@rule(*SPATIAL_OPS, placement=Placement.UNSUPPORTED, SPATIAL="1-D and 2-D", VERSION=ESP_DL_VERSION)
def spatial_1d_or_2d(node: NodeView, chip: str):
    """ESP-DL {VERSION} implements only {SPATIAL} forms of this operator."""
    x = node.input(0)
    if x is not None and x.rank is not None and x.rank not in SPATIAL_RANKS:
        return Offence(x.rank - 2, f"{x.rank - 2}-D input (rank {x.rank})")
    return None


@rule("Conv", placement=Placement.UNSUPPORTED, ALLOWED="1 or the number of input channels (depthwise)")
def conv_group_1_or_depthwise(node: NodeView, chip: str):
    """ESP-DL's Conv takes group = {ALLOWED}; grouped convolutions in between are not implemented."""
    group = int(node.attr("group", 1))
    if group == 1:
        return None
    x = node.input(0)
    channels = x.shape[1] if x is not None and x.shape is not None and len(x.shape) > 1 else None
    if isinstance(channels, int) and group == channels:
        return None
    return Offence(group, f"group {group}, input channels {channels if channels is not None else 'unknown'}")


@rule("AveragePool", "MaxPool", placement=Placement.UNSUPPORTED, VERSION=ESP_DL_VERSION)
def pool_without_dilation(node: NodeView, chip: str):
    """ESP-DL {VERSION} pools without dilation; a dilation other than 1 is not implemented."""
    dilations = node.attr("dilations")
    if dilations and any(int(d) != 1 for d in dilations):
        return Offence(list(dilations))
    return None


@rule("Pad", placement=Placement.UNSUPPORTED, MODE="wrap")
def pad_not_wrap(node: NodeView, chip: str):
    """ESP-DL's Pad has no {MODE} mode."""
    mode = node.attr("mode", "constant")
    if mode == "wrap":
        return Offence(mode)
    return None


RESIZE_MODES = ("nearest", "linear")


@rule("Resize", placement=Placement.UNSUPPORTED, MODES=RESIZE_MODES, MAX_RANK=MAX_RANK)
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


@rule("Mod", placement=Placement.UNSUPPORTED, FMOD=1)
def mod_c_style(node: NodeView, chip: str):
    """ESP-DL's Mod computes the C-style remainder (fmod={FMOD}); the integer-only fmod=0 form is not implemented."""
    fmod = int(node.attr("fmod", 0))
    if fmod != 1:
        return Offence(fmod, f"fmod={fmod}")
    return None


SCATTER_REDUCTIONS = ("none", "add", "mul", "max", "min")


@rule("ScatterND", placement=Placement.UNSUPPORTED, REDUCTIONS=SCATTER_REDUCTIONS)
def scatternd_reduction(node: NodeView, chip: str):
    """ESP-DL's ScatterND supports the reductions {REDUCTIONS}."""
    reduction = node.attr("reduction", "none")
    if reduction not in SCATTER_REDUCTIONS:
        return Offence(reduction)
    return None


RULES = [
    at_most_4d,
    spatial_1d_or_2d,
    conv_group_1_or_depthwise,
    pool_without_dilation,
    pad_not_wrap,
    resize_limits,
    mod_c_style,
    scatternd_reduction,
]


def rule_set(chip_id: str, **options) -> RuleSet:
    """The ESP-DL rules for `chip_id` (esp32s3 or esp32p4); the table is the same for both chips."""
    if chip_id not in CHIPS:
        raise KeyError(chip_id)
    if options:
        raise TypeError(f"ESP-DL rules take no options (got {', '.join(sorted(options))})")
    return RuleSet(
        target="espdl",
        chip=chip_id,
        toolchain_version=f"esp-dl {ESP_DL_VERSION} / esp-ppq {ESP_PPQ_VERSION}",
        source=SOURCE,
        accelerator_ops={**OPERATORS, **REMOVED_BY_SIMPLIFIER},
        rules=list(RULES),
        # ESP-DL has no fallback unit: an operator without an ESP-DL module cannot be loaded.
        fallback_ops=frozenset(),
        fallback_unit="CPU (float32 kernels)",
        notes=[
            "ESP-DL has no CPU fallback: an operator it does not implement makes the model fail to load.",
            "FLOAT: esp-ppq leaves the operator in float32 and ESP-DL runs its float kernel, with (de)quantisation around it.",
            "ESP32-S3 rounds half up (PIE V1), ESP32-P4 half to even (PIE V2); the operator table is the same.",
        ],
    )
