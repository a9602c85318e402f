"""Verification: a compiled model's outputs against the reference's, on the very same inputs.

One function for every target, build time and device alike. For every output: fidelity
(cosine, SNR, max/mean abs error) and, where labels fit it, the task metric before and after.
The headline task metric is computed on ONE named output, chosen so:
  --metric-output NAME   that output;
  auto                   an output produced by Softmax or Sigmoid (through shape-only ops)
                         whose width fits the labels; else the first output whose width fits;
                         else fidelity only. The report says which output and why.
An output's task metric is computed only where the output fits it: one row of class scores per
sample ([N, C], [N, 1, C] or a 1x1 NCHW head [N, C, 1, 1]) with at least the labels' classes, and
no evidence that it holds boxes or keypoints; otherwise the entry says in one line why not (a CTC
sequence [N, T, C] or a box regression gets no top-1). One exception, for an output named with
--metric-output only: AUROC on one-column labels over an output of one score per anchor
([N, A, 1], a detector's classificators) scores each sample by its highest anchor (face presence).
Outputs split into boxes and scores (and keypoints) get the fidelity of each part apart, but
only where the model or the user says what the channels are (measure/output_roles.py: a
--detection declaration, a Concat of a box branch and a score branch, the output's name); the
report says from what evidence. Without it, the output is compared as a whole.
"""

from __future__ import annotations

import numpy as np

from edgedeploy.errors import OptionError
from edgedeploy.measure.accuracy import choose_metric, fidelity, task_metric

# Ops through which a probability output keeps its meaning (shape only): one list with the roles'.
from edgedeploy.measure.output_roles import PROBABILITY_OPS, ROLE_TEXT, SHAPE_ONLY_OPS, output_layouts, parse_detection


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


def model_evidence(model, detection=()) -> tuple[dict[str, str], dict[str, dict]]:
    """(producers, layouts) of a model for verify(): the op behind each output, and what each
    output holds where the user (--detection) or the graph says so."""
    return output_producers(model.graph), output_layouts(model, parse_detection(detection, model.graph))


def declared_detection(artifact) -> list[str]:
    """The --detection declarations an artifact was built with (its report.json), [] if none or unreadable."""
    import json
    from pathlib import Path

    try:
        options = json.loads((Path(artifact) / "report.json").read_text()).get("options") or {}
    except (OSError, ValueError, AttributeError):
        return []
    return [str(v) for v in options.get("detection") or [] if isinstance(v, str)]


def class_count(per_sample: tuple) -> int | None:
    """The number of class scores in one sample's output when it is one row of them, else None:
    [C], [1, .., 1, C], or [C, 1, 1] (an NCHW head pooled to 1x1)."""
    if not per_sample:
        return None
    if all(d == 1 for d in per_sample[:-1]):
        return int(per_sample[-1])
    if len(per_sample) == 3 and tuple(per_sample[1:]) == (1, 1):
        return int(per_sample[0])
    return None


def layout_text(layout: dict) -> str:
    """'boxes 0-3, scores 4-83 on axis 1' or 'box regression', for a report line."""
    if "parts" in layout:
        return ", ".join(f"{p['role']} {p['start']}-{p['stop'] - 1}" for p in layout["parts"]) + f" on axis {layout['axis']}"
    return ROLE_TEXT.get(layout["role"], layout["role"])


def metric_misfit(metric: str, array: np.ndarray, labels: np.ndarray, layout: dict | None = None) -> str | None:
    """None when `metric` fits this output; else one line saying why it is not computed on it."""
    if layout is not None and ("parts" in layout or layout.get("role") not in (None, "scores")):
        return f"it holds {layout_text(layout)} ({layout['evidence']}), not one score per class"
    array, labels = np.asarray(array), np.asarray(labels)
    n = len(labels)
    if not n or array.shape[:1] != (n,):
        return "its samples do not line up with the labels"
    per_sample = tuple(array.shape[1:])
    classes = class_count(per_sample)
    if classes is None:
        rows = int(np.prod(per_sample[:-1])) if per_sample else 0
        return f"its shape {list(per_sample)} is {rows} rows of {per_sample[-1] if per_sample else 0} values per sample (a sequence, a map or per-anchor values), not one row of class scores"
    if metric == "top1":
        needed = int(np.max(labels)) + 1
        if classes < max(needed, 2):
            return f"its {classes} value(s) per sample cannot score the labels' {needed} classes"
        return None
    if metric == "auroc":
        columns = int(labels.reshape(n, -1).shape[1])
        return None if classes == columns else f"its {classes} values per sample do not match the labels' {columns} columns"
    return f"no task metric {metric!r}"


def choose_metric_output(requested: str, metric: str, reference: dict[str, np.ndarray], labels, producers: dict[str, str], layouts: dict | None = None) -> tuple[str | None, str]:
    """(output name or None, why) for the headline task metric."""
    names = list(reference)
    layouts = layouts or {}
    if requested not in (None, "", "auto"):
        if requested not in reference:
            raise OptionError(f"--metric-output: the model has no output named {requested!r} (outputs: {', '.join(names)}).")
        return requested, "chosen with --metric-output"
    if metric == "fidelity" or labels is None:
        return None, "no labels: fidelity only"
    fitting = [n for n in names if metric_misfit(metric, reference[n], labels, layouts.get(n)) is None]
    probability = [n for n in fitting if producers.get(n) in PROBABILITY_OPS]
    if probability:
        return probability[0], f"produced by {producers[probability[0]]} and one score per class of the labels"
    if fitting:
        if len(names) == 1:
            return fitting[0], "the model's only output"
        return fitting[0], "the first output with one score per class of the labels (no Softmax/Sigmoid output fits)"
    return None, "no output holds one score per class of the labels: fidelity only"


def split_fidelity(layout: dict, reference: np.ndarray, candidate: np.ndarray) -> dict | None:
    """Each part's fidelity of an output split by evidence, or None when the split does not fit
    the output's real shape (the evidence came from the graph's shapes, the arrays are what ran)."""
    axis = layout["axis"]
    if reference.ndim <= axis or layout["parts"][-1]["stop"] > reference.shape[axis]:
        return None
    parts = {}
    for part in layout["parts"]:
        index = np.arange(part["start"], part["stop"])
        key = part["role"] if part["role"] not in parts else f"{part['role']} {part['start']}-{part['stop'] - 1}"
        parts[key] = fidelity(np.take(reference, index, axis=axis), np.take(candidate, index, axis=axis))
    return {"layout": layout_text(layout), "evidence": layout["evidence"], "parts": parts}


def _align(reference: np.ndarray, candidate: np.ndarray) -> np.ndarray:
    """The candidate in the reference's shape when only the layout of the same values differs."""
    candidate = np.asarray(candidate)
    if candidate.shape != reference.shape and candidate.size == reference.size:
        return candidate.reshape(reference.shape)
    return candidate


def highest_per_sample(metric: str, array: np.ndarray, labels) -> np.ndarray | None:
    """One score per sample, [N, 1], for AUROC on one-column labels (is there one in this sample)
    from an output of one score per anchor ([N, A, 1], A > 1: a detector's classificators): each
    sample's highest score, as a detector's own threshold on its best anchor decides. None where
    the output or the labels are not of that kind. Only for an output named with --metric-output."""
    array, labels = np.asarray(array), np.asarray(labels)
    n = len(labels)
    if metric != "auroc" or not n or array.ndim != 3 or array.shape[0] != n or array.shape[2] != 1 or array.shape[1] < 2:
        return None
    if labels.reshape(n, -1).shape[1] != 1:
        return None
    return array.reshape(n, -1).max(axis=1, keepdims=True)


def _output_entry(name: str, ref: np.ndarray, got: np.ndarray, labels, chosen_metric: str, producers: dict, layout: dict | None, requested: bool) -> dict:
    """One output's fidelity, its task metric where it fits (else why not), and its parts or role."""
    entry: dict = {"producer": producers.get(name), "fidelity": fidelity(ref, got), "shape": list(ref.shape[1:])}
    highest = highest_per_sample(chosen_metric, ref, labels) if requested and labels is not None else None
    if highest is not None:
        entry["before"] = task_metric(chosen_metric, highest, labels)
        entry["after"] = task_metric(chosen_metric, highest_per_sample(chosen_metric, got, labels), labels)
        entry["metric_on"] = f"each sample's highest of its {ref.shape[1]} per-anchor scores"
    elif labels is not None and chosen_metric != "fidelity":
        # An output named with --metric-output is the user's evidence of what it holds: only its shape is checked.
        why_not = metric_misfit(chosen_metric, ref, labels, None if requested else layout)
        if why_not is None:
            entry["before"] = task_metric(chosen_metric, ref, labels)
            entry["after"] = task_metric(chosen_metric, got, labels)
        else:
            entry["metric_not_reported"] = why_not
    if layout is not None and "parts" in layout:
        split = split_fidelity(layout, ref, got)
        if split is not None:
            entry["detection"] = split
        else:
            entry["detection_not_used"] = f"{layout_text(layout)} ({layout['evidence']}) does not fit the output's shape {list(ref.shape[1:])}"
    elif layout is not None:
        entry["role"] = {"role": layout["role"], "evidence": layout["evidence"]}
    return entry


def _per_sample(reference: dict, candidate: dict, shared: list[str]) -> tuple[dict, dict]:
    """Outputs whose leading axis is not a batch axis, one sample per row: run one sample at a time
    (a model with a recurrent state, edgedeploy.datasets), every runtime joins each sample's output
    on axis 0, so a state output [2, 1, 128] of N samples arrives as [2N, 1, 128] beside [N, 1] for
    an output with a batch axis. Such an output (k times the fewest rows, the same rows on both
    sides) is regrouped [N, k, ...], so the first min(N) samples compared are whole samples."""
    lengths = [len(np.asarray(reference[n])) for n in shared if np.ndim(reference[n])]
    fewest = min(lengths) if lengths else 0
    ref, got = dict(reference), dict(candidate)
    for n in shared:
        a, b = np.asarray(reference[n]), np.asarray(candidate[n])
        if fewest and a.ndim and a.shape == b.shape and len(a) > fewest and len(a) % fewest == 0:
            ref[n], got[n] = a.reshape(fewest, -1, *a.shape[1:]), b.reshape(fewest, -1, *b.shape[1:])
    return ref, got


def verify(
    reference: dict[str, np.ndarray],
    candidate: dict[str, np.ndarray],
    labels: np.ndarray | None,
    metric: str = "auto",
    metric_output: str = "auto",
    producers: dict[str, str] | None = None,
    layouts: dict[str, dict] | None = None,
) -> dict:
    """The accuracy section: per-output fidelity and task metrics, and the headline on one named output.

    Both sides must hold the same samples in the same order; the first min(N) samples of each
    are compared (a fixed-batch model may drop a short last batch) and `samples` says how many.
    `layouts` (measure/output_roles.output_layouts): what each output holds, from evidence.
    """
    producers, layouts = producers or {}, layouts or {}
    shared = [n for n in reference if n in candidate]
    missing = [n for n in reference if n not in candidate]
    reference, candidate = _per_sample(reference, candidate, shared)
    count = min([len(reference[n]) for n in shared] + [len(candidate[n]) for n in shared]) if shared else 0
    if labels is not None:
        count = min(count, len(labels))
        labels = np.asarray(labels)[:count]
    ref = {n: np.asarray(reference[n])[:count] for n in reference}
    got = {n: _align(ref[n], np.asarray(candidate[n])[:count]) for n in shared}
    # A compiled output of another size than the model's (a converter that changed its shape) is
    # said, not compared: fidelity over different values would be meaningless.
    mismatched = {n: f"the compiled model gives {list(np.shape(candidate[n]))} where the model gives {list(np.shape(reference[n]))}" for n in shared if got[n].size != ref[n].size}
    shared = [n for n in shared if n not in mismatched]
    chosen_metric = choose_metric(metric, (), labels)
    headline, why = choose_metric_output(metric_output, chosen_metric, ref, labels, producers, layouts)
    section: dict = {"metric": chosen_metric if headline else "fidelity", "metric_output": headline, "metric_output_reason": why, "samples": int(count)}
    if chosen_metric != "fidelity" and headline is None and metric != "auto":
        section["metric_requested"] = metric
    requested = metric_output not in (None, "", "auto")
    per_output = {name: _output_entry(name, ref[name], got[name], labels, chosen_metric, producers, layouts.get(name), requested and name == headline) for name in shared}
    section["outputs"] = per_output
    if headline in per_output and per_output[headline].get("metric_on"):
        section["metric_output_reason"] += f"; scored on {per_output[headline]['metric_on']}"
    # The flat per-output fidelity every report renderer reads.
    section["fidelity"] = {name: entry["fidelity"] for name, entry in per_output.items()}
    if missing:
        section["missing_outputs"] = missing
    if mismatched:
        section["mismatched_outputs"] = mismatched
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
            each = ", ".join(f"{role} SNR {_db(part['snr_db'])} dB" for role, part in detection["parts"].items())
            line += f" ({each}; split from {detection['evidence']})"
        parts.append(line)
    parts += [f"{name}: not compared ({why})" for name, why in section.get("mismatched_outputs", {}).items()]
    return f"{section['metric']} on {section['samples']} samples: " + "; ".join(parts)


def _db(value: float) -> str:
    return "inf" if value == float("inf") else f"{value:.1f}"
