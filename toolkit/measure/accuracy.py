"""Accuracy before and after: task metrics and output fidelity on the same inputs.

Task metrics compare model outputs with labels (top-1, top-k, macro-AUROC); fidelity compares a
compiled model's outputs with the reference's (cosine similarity, SNR in dB, max abs error),
per output. Both are computed on the very same inputs, never on different samples.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np


def top_k(logits: np.ndarray, labels: np.ndarray, k: int = 1) -> float:
    """Fraction of samples whose label is among the k highest scores (logits [N, C], labels [N])."""
    labels = np.asarray(labels).reshape(-1)
    if len(labels) == 0:
        raise ValueError("top-k of zero samples is undefined")
    logits = np.asarray(logits).reshape(len(labels), -1)
    if k == 1:
        return float((logits.argmax(axis=1) == labels).mean())
    top = np.argsort(-logits, axis=1)[:, :k]
    return float((top == labels[:, None]).any(axis=1).mean())


def _auroc_binary(scores: np.ndarray, truth: np.ndarray) -> float | None:
    """Area under the ROC curve by the rank statistic (ties get average ranks); None if one class is absent."""
    truth = truth.astype(bool)
    pos = int(truth.sum())
    neg = len(truth) - pos
    if pos == 0 or neg == 0:
        return None
    order = np.argsort(scores, kind="mergesort")
    ranks = np.empty(len(scores), dtype=np.float64)
    sorted_scores = scores[order]
    i = 0
    while i < len(scores):
        j = i
        while j + 1 < len(scores) and sorted_scores[j + 1] == sorted_scores[i]:
            j += 1
        ranks[order[i : j + 1]] = (i + j) / 2.0 + 1
        i = j + 1
    return float((ranks[truth].sum() - pos * (pos + 1) / 2.0) / (pos * neg))


def macro_auroc(scores: np.ndarray, labels: np.ndarray) -> dict:
    """Mean AUROC over classes for multi-label outputs (scores and 0/1 labels [N, C]).

    Classes with only positives or only negatives have no AUROC and are left out of the mean;
    the result says how many were used.
    """
    scores = np.asarray(scores, dtype=np.float64).reshape(len(labels), -1)
    labels = np.asarray(labels).reshape(len(labels), -1)
    if labels.shape != scores.shape:
        raise ValueError(f"labels {labels.shape} and scores {scores.shape} differ in shape")
    per_class = [_auroc_binary(scores[:, c], labels[:, c]) for c in range(scores.shape[1])]
    used = [a for a in per_class if a is not None]
    return {"macro_auroc": float(np.mean(used)) if used else None, "classes_used": len(used), "classes": scores.shape[1], "per_class": per_class}


def fidelity(reference: np.ndarray, candidate: np.ndarray) -> dict:
    """How close a compiled model's output is to the reference's: cosine, SNR (dB), max and mean abs error."""
    ref = np.asarray(reference, dtype=np.float64).reshape(-1)
    got = np.asarray(candidate, dtype=np.float64).reshape(-1)
    if ref.shape != got.shape:
        raise ValueError(f"outputs differ in size: {ref.size} vs {got.size}")
    err = got - ref
    ref_norm = float(np.linalg.norm(ref))
    got_norm = float(np.linalg.norm(got))
    if ref_norm == 0 and got_norm == 0:
        cosine = 1.0
    elif ref_norm == 0 or got_norm == 0:
        cosine = 0.0
    else:
        cosine = float(np.dot(ref, got) / (ref_norm * got_norm))
    noise = float(np.sum(err**2))
    signal = float(np.sum(ref**2))
    snr_db = math.inf if noise == 0 else (10 * math.log10(signal / noise) if signal > 0 else -math.inf)
    return {
        "cosine": cosine,
        "snr_db": snr_db,
        "max_abs_error": float(np.max(np.abs(err))) if err.size else 0.0,
        "mean_abs_error": float(np.mean(np.abs(err))) if err.size else 0.0,
        "elements": int(ref.size),
    }


def choose_metric(requested: str, output_shape: tuple, labels: np.ndarray | None) -> str:
    """`auto`: top-1 for class-index labels, macro-AUROC for multi-hot labels, else fidelity only."""
    if requested != "auto":
        return requested
    if labels is None:
        return "fidelity"
    labels = np.asarray(labels)
    if labels.ndim == 1 and np.issubdtype(labels.dtype, np.integer):
        return "top1"
    if labels.ndim == 2 and set(np.unique(labels).tolist()) <= {0, 1}:
        return "auroc"
    return "fidelity"


def task_metric(metric: str, outputs: np.ndarray, labels: np.ndarray | None) -> dict:
    """The task metric on one model's outputs: {"top1": .., "top5": ..} or macro-AUROC; {} for fidelity."""
    if metric == "fidelity" or labels is None:
        return {}
    if metric == "top1":
        result = {"top1": top_k(outputs, labels, 1)}
        classes = np.asarray(outputs).reshape(len(labels), -1).shape[1]
        if classes > 5:
            result["top5"] = top_k(outputs, labels, 5)
        return result
    if metric == "auroc":
        return macro_auroc(outputs, labels)
    raise ValueError(f"unknown metric {metric}")


def before_after(metric: str, reference_outputs: dict[str, np.ndarray], candidate_outputs: dict[str, np.ndarray], labels: np.ndarray | None, first_output: str) -> dict:
    """The accuracy section of a report: task metric before (reference) and after (candidate), fidelity per output."""
    section: dict = {"metric": metric, "samples": int(len(next(iter(reference_outputs.values()))))}
    if metric != "fidelity" and labels is not None:
        before = task_metric(metric, reference_outputs[first_output], labels)
        after = task_metric(metric, candidate_outputs[first_output], labels)
        section["before"] = before
        section["after"] = after
        key = "top1" if metric == "top1" else "macro_auroc"
        if before.get(key) is not None and after.get(key) is not None:
            section["delta_percentage_points" if metric == "top1" else "delta"] = (after[key] - before[key]) * (100 if metric == "top1" else 1)
    section["fidelity"] = {name: fidelity(reference_outputs[name], candidate_outputs[name]) for name in reference_outputs if name in candidate_outputs}
    return section


# Batch size for models whose batch axis is dynamic: big enough to amortise the call overhead,
# small enough for edge-sized models' activations to stay modest.
DEFAULT_EVAL_BATCH = 32


@dataclass
class Evaluation:
    """A model's outputs on a dataset (in dataset order), the labels of those samples, and notes."""

    outputs: dict[str, np.ndarray]
    labels: np.ndarray | None
    samples: int
    batch_size: int
    output_names: list[str]
    runtime: str
    notes: list[str] = field(default_factory=list)

    def metrics(self, metric: str = "auto") -> dict:
        """The task metric on the first output (see choose_metric): {"metric": ..., "top1": ...}."""
        first = self.outputs[self.output_names[0]]
        chosen = choose_metric(metric, first.shape, self.labels)
        return {"metric": chosen, **task_metric(chosen, first, self.labels)}


def evaluate(model_path, dataset, batch_size: int | None = None, threads: int | None = None) -> Evaluation:
    """The ONNX Runtime fp32 (CPU) reference: run `dataset` through the model in batches.

    This is the "before" of every accuracy comparison: targets call it on the pinned model of
    the artifact and the same evaluation data their compiled model sees. A model with a fixed
    batch axis is fed batches of exactly that size (a short last batch is dropped, and the notes
    say so); a dynamic batch axis takes `batch_size` (default 32) and the remainder as it is.
    """
    import onnxruntime as ort

    options = ort.SessionOptions()
    if threads:
        options.intra_op_num_threads = int(threads)
    session = ort.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])
    model_inputs = session.get_inputs()
    missing = [i.name for i in model_inputs if i.name not in dataset.inputs]
    if missing:
        raise ValueError(f"the dataset has no data for input(s) {', '.join(missing)}")
    fixed = {i.shape[0] for i in model_inputs if i.shape and isinstance(i.shape[0], int)}
    if len(fixed) > 1:
        raise ValueError(f"the model's inputs have different fixed batch sizes {sorted(fixed)}")
    notes: list[str] = []
    n = len(dataset)
    if fixed:
        size = fixed.pop()
        if batch_size is not None and batch_size != size:
            notes.append(f"the model's batch axis is fixed at {size}; batches of {size} were used instead of {batch_size}")
        used = (n // size) * size
        if used == 0:
            raise ValueError(f"the dataset has {n} samples, fewer than the model's fixed batch of {size}")
        if used < n:
            notes.append(f"the last {n - used} samples were dropped: they do not fill a batch of {size}")
    else:
        size = batch_size or DEFAULT_EVAL_BATCH
        used = n
    output_names = [o.name for o in session.get_outputs()]
    chunks: dict[str, list[np.ndarray]] = {name: [] for name in output_names}
    for start in range(0, used, size):
        feeds = {i.name: dataset.inputs[i.name][start : min(start + size, used)] for i in model_inputs}
        for name, value in zip(output_names, session.run(output_names, feeds)):
            chunks[name].append(np.asarray(value))
    outputs = {name: np.concatenate(parts, axis=0) for name, parts in chunks.items()}
    labels = None if dataset.labels is None else np.asarray(dataset.labels)[:used]
    return Evaluation(outputs, labels, used, size, output_names, f"onnxruntime {ort.__version__} CPUExecutionProvider fp32", notes)
