"""Accuracy metrics: task metrics against labels, and fidelity of one output against another.

Task metrics compare model outputs with labels (top-1, top-k, macro-AUROC); fidelity compares a
compiled model's outputs with the reference's (cosine similarity, SNR in dB, max abs error).
verify.py applies them per output, on the very same inputs before and after.
"""

from __future__ import annotations

import math

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
