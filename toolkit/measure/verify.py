"""Verification: a compiled model's outputs against the reference's, on the very same inputs.

One function for every target, build time and device alike. For every output: fidelity
(cosine, SNR, max/mean abs error) and, where labels fit it, the task metric before and after.
The headline task metric is computed on ONE named output, chosen so:
  --metric-output NAME   that output;
  auto                   an output produced by Softmax or Sigmoid (through shape-only ops)
                         whose width fits the labels; else the first output whose width fits;
                         else fidelity only. The report says which output and why.
Detection outputs (rank 3, a channel axis of 4 box coordinates + class scores beside a much
longer anchor axis, as YOLO heads emit) also get the fidelity of their boxes and of their
scores apart: a box error and a score error mean different things.
"""

from __future__ import annotations

import numpy as np

from edgedeploy.errors import OptionError
from edgedeploy.measure.accuracy import choose_metric, fidelity, task_metric

# Ops through which a probability output keeps its meaning (shape only).
SHAPE_ONLY_OPS = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Transpose"}
PROBABILITY_OPS = {"Softmax", "Sigmoid", "LogSoftmax"}
# A detection axis is 4 box coordinates + at least one score, and much shorter than the anchors.
DETECTION_MIN_ANCHORS_RATIO = 4


def output_producers(graph) -> dict[str, str]:
    """Graph output name -> the op that really produced it (looking through shape-only ops)."""
    producer = {}
    for node in graph.node:
        for out in node.output:
            producer[out] = node
    result = {}
    for vi in graph.output:
        node = producer.get(vi.name)
        seen = 0
        while node is not None and node.op_type in SHAPE_ONLY_OPS and node.input and seen < 16:
            node = producer.get(node.input[0])
            seen += 1
        result[vi.name] = node.op_type if node is not None else "graph input or constant"
    return result


def _width(array: np.ndarray, samples: int) -> int:
    return int(np.asarray(array).reshape(samples, -1).shape[1]) if samples else 0


def _fits(metric: str, array: np.ndarray, labels: np.ndarray) -> bool:
    n = len(labels)
    if np.asarray(array).shape[:1] != (n,) and np.asarray(array).size % max(n, 1):
        return False
    width = _width(array, n)
    if metric == "top1":
        return width > int(np.max(labels)) if len(labels) else False
    if metric == "auroc":
        return width == int(np.asarray(labels).reshape(n, -1).shape[1])
    return False


def choose_metric_output(requested: str, metric: str, reference: dict[str, np.ndarray], labels, producers: dict[str, str]) -> tuple[str | None, str]:
    """(output name or None, why) for the headline task metric."""
    names = list(reference)
    if requested not in (None, "", "auto"):
        if requested not in reference:
            raise OptionError(f"--metric-output: the model has no output named {requested!r} (outputs: {', '.join(names)}).")
        return requested, "chosen with --metric-output"
    if metric == "fidelity" or labels is None:
        return None, "no labels: fidelity only"
    fitting = [n for n in names if _fits(metric, reference[n], labels)]
    probability = [n for n in fitting if producers.get(n) in PROBABILITY_OPS]
    if probability:
        return probability[0], f"produced by {producers[probability[0]]} and its width fits the labels"
    if fitting:
        if len(names) == 1:
            return fitting[0], "the model's only output"
        return fitting[0], "the first output whose width fits the labels (no Softmax/Sigmoid output fits)"
    return None, "no output's width fits the labels: fidelity only"


def detection_split(array: np.ndarray) -> tuple[int, int] | None:
    """(channel axis, 4) when `array` [N, A, C] or [N, C, A] looks like boxes + scores; else None."""
    if array.ndim != 3:
        return None
    _, a, b = array.shape
    for axis, channels, anchors in ((2, b, a), (1, a, b)):
        if channels >= 5 and anchors >= DETECTION_MIN_ANCHORS_RATIO * channels:
            return axis, 4
    return None


def _align(reference: np.ndarray, candidate: np.ndarray) -> np.ndarray:
    """The candidate in the reference's shape when only the layout of the same values differs."""
    candidate = np.asarray(candidate)
    if candidate.shape != reference.shape and candidate.size == reference.size:
        return candidate.reshape(reference.shape)
    return candidate


def verify(
    reference: dict[str, np.ndarray],
    candidate: dict[str, np.ndarray],
    labels: np.ndarray | None,
    metric: str = "auto",
    metric_output: str = "auto",
    producers: dict[str, str] | None = None,
) -> dict:
    """The accuracy section: per-output fidelity and task metrics, and the headline on one named output.

    Both sides must hold the same samples in the same order; the first min(N) samples of each
    are compared (a fixed-batch model may drop a short last batch) and `samples` says how many.
    """
    producers = producers or {}
    shared = [n for n in reference if n in candidate]
    missing = [n for n in reference if n not in candidate]
    count = min([len(reference[n]) for n in shared] + [len(candidate[n]) for n in shared]) if shared else 0
    if labels is not None:
        count = min(count, len(labels))
        labels = np.asarray(labels)[:count]
    ref = {n: np.asarray(reference[n])[:count] for n in reference}
    got = {n: _align(ref[n], np.asarray(candidate[n])[:count]) for n in shared}
    chosen_metric = choose_metric(metric, (), labels)
    headline, why = choose_metric_output(metric_output, chosen_metric, ref, labels, producers)
    section: dict = {"metric": chosen_metric if headline else "fidelity", "metric_output": headline, "metric_output_reason": why, "samples": int(count)}
    if chosen_metric != "fidelity" and headline is None and metric != "auto":
        section["metric_requested"] = metric
    per_output: dict[str, dict] = {}
    for name in shared:
        entry: dict = {"producer": producers.get(name), "fidelity": fidelity(ref[name], got[name]), "shape": list(ref[name].shape[1:])}
        if labels is not None and chosen_metric != "fidelity" and _fits(chosen_metric, ref[name], labels):
            entry["before"] = task_metric(chosen_metric, ref[name], labels)
            entry["after"] = task_metric(chosen_metric, got[name], labels)
        split = detection_split(ref[name])
        if split is not None:
            axis, boxes = split
            take = lambda a, idx: np.take(a, idx, axis=axis)  # noqa: E731 - index along the channel axis
            box_idx = np.arange(boxes)
            score_idx = np.arange(boxes, ref[name].shape[axis])
            entry["detection"] = {
                "layout": f"axis {axis}: {boxes} box coordinates, then {ref[name].shape[axis] - boxes} scores (guessed from the shape)",
                "boxes": fidelity(take(ref[name], box_idx), take(got[name], box_idx)),
                "scores": fidelity(take(ref[name], score_idx), take(got[name], score_idx)),
            }
        per_output[name] = entry
    section["outputs"] = per_output
    # The flat per-output fidelity every report renderer reads.
    section["fidelity"] = {name: entry["fidelity"] for name, entry in per_output.items()}
    if missing:
        section["missing_outputs"] = missing
    if headline is not None and headline in per_output and "before" in per_output[headline]:
        before, after = per_output[headline]["before"], per_output[headline]["after"]
        section["before"], section["after"] = before, after
        key = "top1" if chosen_metric == "top1" else "macro_auroc"
        if before.get(key) is not None and after.get(key) is not None:
            if chosen_metric == "top1":
                section["delta_percentage_points"] = (after[key] - before[key]) * 100
            else:
                section["delta"] = after[key] - before[key]
    return section


def headline_line(section: dict) -> str:
    """One line for the terminal: the task metric on its output, and each output's fidelity."""
    parts = []
    if "before" in section:
        for key in ("top1", "macro_auroc"):
            if key in section["before"]:
                delta = section.get("delta_percentage_points")
                parts.append(
                    f"{key} {section['before'][key]:.4f} -> {section['after'][key]:.4f}"
                    + (f" ({delta:+.2f} pp)" if delta is not None else "")
                    + f" on output '{section['metric_output']}'"
                )
    for name, fid in section.get("fidelity", {}).items():
        line = f"{name}: cosine {fid['cosine']:.5f}, SNR {_db(fid['snr_db'])} dB"
        detection = (section.get("outputs", {}).get(name) or {}).get("detection")
        if detection:
            line += f" (boxes SNR {_db(detection['boxes']['snr_db'])} dB, scores SNR {_db(detection['scores']['snr_db'])} dB)"
        parts.append(line)
    return f"{section['metric']} on {section['samples']} samples: " + "; ".join(parts)


def _db(value: float) -> str:
    return "inf" if value == float("inf") else f"{value:.1f}"
