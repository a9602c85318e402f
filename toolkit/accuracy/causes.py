"""The likely cause of a node's quantisation error, in one sentence, where a tap's statistics show it.

Each rule looks at one node record (its float tensor's statistics against the quantised range,
its weight and bias against their steps, the steps of the inputs meeting at it) and returns the
sentence a user reads, or None. A rule says only what the data show; the limits are named
constants. The rules run on the nodes the localisation picks (first sharp fall, worst alone).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

# A quantised range that leaves out this share of a tensor's values clips it.
CLIPPED_MIN_FRACTION = 0.001
# A single value making up this share of a tensor is a spike a histogram calibration can fit its
# range to (KL keeps the mass; a flat background's constant output is such a mass).
SPIKE_MIN_SHARE = 0.2
# The range is "set by outliers" when the largest |x| is this many times the 99.99th percentile...
OUTLIER_RATIO = 4.0
# ... of at least this many values; of fewer, the 99.99th percentile is itself set by a handful of
# values (a pixel spread by a 3x3 convolution is 9 per channel), so the 99.9th stands in.
OUTLIER_MIN_VALUES = 100_000
# A per-tensor weight scale is "crushed by one channel" when the largest channel's |w| max is this
# many times the median channel's...
WEIGHT_CHANNEL_RATIO = 8.0
# ... and a channel whose largest weight spans fewer steps than this is quantised to almost nothing.
WEIGHT_FEW_LEVELS = 8.0
# Inputs of an Add/Concat whose quantisation steps differ by this factor lose the finer one's detail.
UNEQUAL_STEP_RATIO = 4.0
MERGING_OPS = ("Add", "Sum", "Concat", "Sub", "Mul")
PROBABILITY_OPS = ("Softmax", "Sigmoid", "LogSoftmax", "HardSigmoid")
# A probability output using under this share of its quantisation levels wastes them.
LEVELS_USED_MIN_SHARE = 0.3
# Fewer calibration samples than this rarely cover an activation's range.
MIN_CALIBRATION_SAMPLES = 16
# The evaluation data clip this many times more often than the calibration data did, and at
# least this share of values (a min-max range always holds its own calibration data, so a few
# evaluation values past it are expected).
UNREPRESENTATIVE_RATIO = 10.0
UNREPRESENTATIVE_MIN_FRACTION = 0.01


@dataclass
class CauseContext:
    by_tensor: dict = field(default_factory=dict)  # tensor name -> the record producing it
    by_node: dict = field(default_factory=dict)  # node name -> record
    calibration_samples: int | None = None


def _fmt(value: float) -> str:
    return f"{value:.4g}"


def _spike(record: dict, context: CauseContext) -> str:
    """The part of a clipping sentence that names a dominant constant value, with the bias that makes it."""
    stats = record.get("stats") or {}
    mode = stats.get("channel_mode") or stats.get("mode")
    if not mode or mode.get("share", 0) < SPIKE_MIN_SHARE or mode.get("value") == 0:
        return ""
    where = f" of channel {mode['channel']}" if "channel" in mode else " of the tensor"
    text = f"; {mode['share']:.0%}{where} is the single value {_fmt(mode['value'])}, a spike the calibration histogram is dominated by"
    bias_node = _bias_source(record, context, mode)
    if bias_node:
        text += f" (it equals {bias_node}'s bias for that channel: its output where the input is flat)"
    return text


def _bias_source(record: dict, context: CauseContext, mode: dict) -> str | None:
    """The node (this one or the nearest producer) whose bias for the spike's channel equals the spike."""
    channel = mode.get("channel")
    seen = 0
    current = record
    while current is not None and seen < 4:
        values = (current.get("bias") or {}).get("values")
        if channel is not None and values and channel < len(values) and abs(values[channel] - mode["value"]) <= 1e-4 * max(1.0, abs(mode["value"])):
            return current["node"]
        inputs = current.get("inputs") or []
        current = context.by_tensor.get(inputs[0]) if inputs else None
        seen += 1
    return None


def clipped_range(record: dict, context: CauseContext) -> str | None:
    """The quantised range clips the tensor: calibration chose a range narrower than the values it saw."""
    stats = record.get("stats") or {}
    clipped = stats.get("clipped_fraction")
    if clipped is None or clipped < CLIPPED_MIN_FRACTION:
        return None
    return (
        f"saturated: the quantised range of {record['tensor']} is [{_fmt(stats['quant_lo'])}, {_fmt(stats['quant_hi'])}], "
        f"which clips {clipped:.1%} of its values (float max {_fmt(stats['max_abs'])}, 99.99th percentile {_fmt(stats['p9999_abs'])})"
        + _spike(record, context)
    )


def outlier_range(record: dict, context: CauseContext) -> str | None:
    """A few outliers set the range, so the step is coarse for the bulk of the values."""
    stats = record.get("stats") or {}
    many = (stats.get("sampled") or 0) >= OUTLIER_MIN_VALUES
    quantile, label = (stats.get("p9999_abs"), "99.99") if many else (stats.get("p999_abs"), "99.9")
    top = stats.get("max_abs")
    if not quantile or not top or top / quantile < OUTLIER_RATIO or (stats.get("clipped_fraction") or 0) >= CLIPPED_MIN_FRACTION:
        return None
    step = stats.get("step")
    bulk = f", so {label}% of the values fall on {int(quantile / step) + 1} of its levels" if step else ""
    return f"activation range dominated by outliers: {record['tensor']} reaches {_fmt(top)}, {top / quantile:.0f}x its {label}th percentile ({_fmt(quantile)}){bulk}"


def weight_channel_crushed(record: dict, context: CauseContext) -> str | None:
    """One channel's large weights set a per-tensor scale that leaves the other channels few levels."""
    weight = record.get("weight") or {}
    maxima, levels = weight.get("channel_absmax"), weight.get("channel_levels")
    if weight.get("per_channel") or not maxima or not levels or len(maxima) < 2:
        return None
    median = statistics.median(maxima)
    worst = max(range(len(maxima)), key=lambda i: maxima[i])
    if median <= 0 or maxima[worst] / median < WEIGHT_CHANNEL_RATIO:
        return None
    few = sum(1 for v in levels if v < WEIGHT_FEW_LEVELS)
    return (
        f"per-tensor weight scale crushed by one channel: {record['node']}'s channel {worst} reaches |w| {_fmt(maxima[worst])}, "
        f"{maxima[worst] / median:.0f}x the median channel's {_fmt(median)}, so {few} of {len(maxima)} channels span fewer than {WEIGHT_FEW_LEVELS:.0f} steps"
    )


def bias_out_of_range(record: dict, context: CauseContext) -> str | None:
    """The bias does not fit the integer type the kernel adds it in."""
    bias = record.get("bias") or {}
    over = bias.get("over_limit")
    if not over:
        return None
    return (
        f"bias outside its type's range: {record['node']}'s bias needs {_fmt(bias['max_units'])} steps of its scale, "
        f"the {bias['bits']}-bit bias holds {bias['limit']} (channels {', '.join(str(c) for c in over[:5])})"
    )


def unequal_scales(record: dict, context: CauseContext) -> str | None:
    """Inputs with very different quantisation steps meet at an Add or Concat."""
    steps = [s for s in (record.get("input_steps") or []) if s]
    if record.get("op_type") not in MERGING_OPS or len(steps) < 2 or max(steps) / min(steps) < UNEQUAL_STEP_RATIO:
        return None
    return f"unequal scales meet at {record['op_type']}: its inputs' quantisation steps are {', '.join(_fmt(s) for s in steps)} ({max(steps) / min(steps):.0f}x apart)"


def probability_range_unused(record: dict, context: CauseContext) -> str | None:
    """A Softmax/Sigmoid output is quantised over a range it does not use."""
    stats = record.get("stats") or {}
    used, levels = stats.get("levels_used"), stats.get("levels")
    if record.get("op_type") not in PROBABILITY_OPS or not used or not levels or used / levels >= LEVELS_USED_MIN_SHARE:
        return None
    return (
        f"{record['op_type']} output quantised over a range it does not use: [{_fmt(stats['quant_lo'])}, {_fmt(stats['quant_hi'])}] "
        f"for values in [{_fmt(stats['min'])}, {_fmt(stats['max'])}], {used} of {levels} levels used"
    )


def calibration_unrepresentative(record: dict, context: CauseContext) -> str | None:
    """Too few calibration samples, or evaluation data that leave the calibrated range far more often."""
    stats, other = record.get("stats") or {}, record.get("stats_eval") or {}
    calib_clip, eval_clip = stats.get("clipped_fraction"), other.get("clipped_fraction")
    if calib_clip is not None and eval_clip is not None and eval_clip >= UNREPRESENTATIVE_MIN_FRACTION and eval_clip >= UNREPRESENTATIVE_RATIO * max(calib_clip, 1e-6):
        return f"unrepresentative calibration samples: the evaluation data leave {record['tensor']}'s range {eval_clip:.1%} of the time, the calibration data {calib_clip:.2%}"
    samples = context.calibration_samples
    if samples is not None and samples < MIN_CALIBRATION_SAMPLES and (calib_clip or eval_clip):
        return f"too few calibration samples: {samples} (fewer than {MIN_CALIBRATION_SAMPLES} rarely cover an activation's range)"
    return None


RULES = (clipped_range, outlier_range, weight_channel_crushed, bias_out_of_range, unequal_scales, probability_range_unused, calibration_unrepresentative)


def causes_of(record: dict, context: CauseContext) -> list[dict]:
    """Every rule's sentence for one node (its own tensor, weight and bias; its producer's bias for a spike)."""
    found = []
    for rule in RULES:
        sentence = rule(record, context)
        if sentence:
            found.append({"node": record["node"], "tensor": record.get("tensor"), "cause": rule.__name__, "sentence": sentence})
    return found
