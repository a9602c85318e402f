"""Per-tensor sums and statistics a tap collects: numpy only, shared by the core and the workers.

A toolchain worker cannot import edgedeploy (its environment does not have it), so it loads this
file by path (`ctx.load_module(request["tap_helpers"], ...)`) and returns what these functions
return; the core turns the sums into metrics (edgedeploy.accuracy.metrics) and the statistics
into causes (edgedeploy.accuracy.causes). Keeping the sums here, and the metrics in the core,
is what makes every toolchain's figures mean the same thing.

Nothing here may import anything but numpy and the standard library.
"""

import math

import numpy as np

# The figures and statistics of a path are taken on at most this many calibration samples (when no
# evaluation data are given): taps keep every tensor of them in memory and run each node alone on
# them; quantisation itself uses every calibration sample the build used.
STAT_SAMPLES = 64
# Quantiles of |x| are taken over at most this many values (a deterministic stride through the
# tensor): p99.99 needs about 10^4 values to mean anything and 10^6 keeps a big feature map cheap.
MAX_STAT_VALUES = 1_000_000
# A value that makes up at least this share of a tensor is reported as its mode (a spike in the
# histogram: a channel's constant output, a ReLU's zeros, padding).
MODE_MIN_SHARE = 0.05


def moments(reference, candidate):
    """The sums the fidelity metrics need, for one batch of one tensor (merge them over batches)."""
    ref = np.asarray(reference, dtype=np.float64).reshape(-1)
    got = np.asarray(candidate, dtype=np.float64).reshape(-1)
    if ref.shape != got.shape:
        raise ValueError(f"tensors differ in size: {ref.size} vs {got.size}")
    err = got - ref
    return {
        "count": int(ref.size),
        "dot": float(np.dot(ref, got)),
        "ref_sq": float(np.dot(ref, ref)),
        "got_sq": float(np.dot(got, got)),
        "err_sq": float(np.dot(err, err)),
        "max_abs_error": float(np.max(np.abs(err))) if err.size else 0.0,
    }


def merge_moments(a, b):
    """Sums of two batches as one; None stands for no batch yet."""
    if a is None:
        return dict(b)
    if b is None:
        return dict(a)
    merged = {k: a[k] + b[k] for k in ("count", "dot", "ref_sq", "got_sq", "err_sq")}
    merged["max_abs_error"] = max(a["max_abs_error"], b["max_abs_error"])
    return merged


def _sample(values):
    flat = np.asarray(values, dtype=np.float64).reshape(-1)
    if flat.size > MAX_STAT_VALUES:
        flat = flat[:: int(math.ceil(flat.size / MAX_STAT_VALUES))]
    return flat


def channel_mode(values, channel_axis=1):
    """The channel (axis 1 of an [N, C, ...] tensor) most taken up by one non-zero value: a
    constant output, as a channel's bias gives where the input is flat (an image's background)."""
    array = np.asarray(values)
    if array.ndim < 3:
        return None
    best = None
    for channel in range(array.shape[channel_axis]):
        flat = _sample(np.take(array, channel, axis=channel_axis))
        found, counts = np.unique(flat, return_counts=True)
        top = int(np.argmax(counts))
        share = float(counts[top] / flat.size)
        if found[top] != 0 and share >= MODE_MIN_SHARE and (best is None or share * abs(found[top]) > best["share"] * abs(best["value"])):
            best = {"channel": channel, "value": float(found[top]), "share": share}
    return best


def tensor_stats(values, quant_lo=None, quant_hi=None, step=None):
    """Statistics of a float tensor (all calibration samples together) and of its quantised range.

    quant_lo/quant_hi: the smallest and largest value the quantised tensor can hold (scale times
    the integer range, offset included); step: the scale. Without them only the float figures.
    For an [N, C, ...] tensor, `channel_mode` too.
    """
    flat = _sample(values)
    if flat.size == 0:
        return {"count": 0}
    absolute = np.abs(flat)
    stats = {
        "count": int(np.asarray(values).size),
        "min": float(flat.min()),
        "max": float(flat.max()),
        "max_abs": float(absolute.max()),
        "p99_abs": float(np.percentile(absolute, 99.0)),
        "p999_abs": float(np.percentile(absolute, 99.9)),
        "p9999_abs": float(np.percentile(absolute, 99.99)),
        "sampled": int(flat.size),
        "mean_abs": float(absolute.mean()),
    }
    values_found, counts = np.unique(flat, return_counts=True)
    top = int(np.argmax(counts))
    share = float(counts[top] / flat.size)
    if share >= MODE_MIN_SHARE:
        stats["mode"] = {"value": float(values_found[top]), "share": share}
    by_channel = channel_mode(values)
    if by_channel is not None:
        stats["channel_mode"] = by_channel
    if quant_lo is not None and quant_hi is not None:
        stats["quant_lo"] = float(quant_lo)
        stats["quant_hi"] = float(quant_hi)
        # Within half a step of the range's ends a value rounds to the end anyway: not clipped.
        margin = 0.5 * float(step) if step else 1e-6 * max(abs(quant_lo), abs(quant_hi))
        stats["clipped_fraction"] = float(np.mean((flat < quant_lo - margin) | (flat > quant_hi + margin)))
        if step:
            levels = np.unique(np.round(np.clip(flat, quant_lo, quant_hi) / float(step)))
            stats["step"] = float(step)
            stats["levels_used"] = int(levels.size)
            stats["levels"] = int(round((quant_hi - quant_lo) / float(step))) + 1
    return stats


def weight_stats(weight, channel_axis=0, scale=None, bits=8):
    """Per-output-channel |w| maxima of a weight and how its quantisation step treats them.

    scale: one number (per-tensor) or one per channel. The levels of a channel are how many
    integer steps its largest weight spans: a channel whose largest weight is under a few steps
    is quantised to almost nothing.
    """
    w = np.asarray(weight, dtype=np.float64)
    if w.ndim == 0:
        w = w.reshape(1)
    moved = np.moveaxis(w, channel_axis, 0).reshape(w.shape[channel_axis], -1)
    channel_max = np.abs(moved).max(axis=1)
    stats = {"channels": int(moved.shape[0]), "channel_absmax": [float(v) for v in channel_max], "bits": int(bits)}
    if scale is not None:
        s = np.asarray(scale, dtype=np.float64).reshape(-1)
        stats["per_channel"] = bool(s.size > 1)
        stats["scale"] = [float(v) for v in s] if s.size > 1 else float(s[0])
        stats["channel_levels"] = [float(v) for v in channel_max / np.where(s > 0, s, np.inf)]
    return stats


def bias_stats(bias, scale, bits):
    """A bias in units of its quantisation step, against the integer range of `bits` bits."""
    b = np.asarray(bias, dtype=np.float64).reshape(-1)
    s = np.asarray(scale, dtype=np.float64).reshape(-1)
    units = np.abs(b) / np.where(s > 0, s, np.inf)
    limit = 2 ** (int(bits) - 1) - 1
    return {
        "bits": int(bits),
        "limit": int(limit),
        "max_abs": float(np.abs(b).max()) if b.size else 0.0,
        "max_units": float(units.max()) if units.size else 0.0,
        "over_limit": [int(i) for i in np.nonzero(units > limit)[0]],
    }
