"""Fitting the cost model to published device figures, and its leave-one-model-out error.

The model (edgedeploy.estimate.costmodel): latency_ms = sum_j c_j * x_j over the FEATURES x of a
chip's audit of a model, each c_j a time per unit (ms per GMAC of dense convolution, ms per
accelerator layer, ...). Each chip starts from a prior p (its data sheet: peak MACs, bandwidth,
the overheads of its runtime; data/priors.json) and the fit finds scales s_j >= 0, c_j = s_j * p_j:

    minimise  sum_i (x_i . c / y_i - 1)^2  +  lam * sum_j (s_j - m t_j)^2,   s >= 0, m >= 0

- the first term is the squared relative error on each published figure y_i (so a 2 ms and a
  200 ms model count alike, as the percentage error reported afterwards does);
- the second pulls each scale towards a target t times a level m fitted freely (the chip's own
  overall speed): t is 1 (the data sheet) for a family fitted as a whole, the family's scales
  for one chip. So the figures set the chip's level; the pull keeps the proportions between its
  coefficients near its family's (or its data sheet's) unless the figures say otherwise. The
  fallback unit's and the transitions' terms and the fixed overhead (ANCHORED) are pulled towards
  t itself, not m t: the published models run on the accelerator, so their figures say nothing of
  the CPU. With 15-40 figures per chip and 11 coefficients, most
  coefficients are barely constrained by the figures (published models rarely fall back to the
  CPU, so cpu_* and transitions stay at their priors); the pull keeps them physical.

Non-negative least squares (Lawson-Hanson, below: numpy only, no scipy in the core) solves it
exactly: the penalty is sqrt(lam) * (s_j - m t_j) appended as extra rows.

Leave-one-model-out: for each model with a figure on the chip, every figure of that model (on
every chip of the family) is taken out, the family and the chip are fitted on the rest, and the
left-out figure is predicted. Its absolute percentage errors give the median (MdAPE) and the
share within 25%; the ratios actual/predicted give the range printed with every estimate.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from edgedeploy.estimate.features import FEATURES

# Terms of the fallback unit, the transitions and the fixed per-inference overhead: pulled towards
# their targets themselves, not towards the chip's fitted level (fit_scales). The published models
# never fall back, and a runtime's call overhead does not shrink because its NPU is faster.
ANCHORED = frozenset({"cpu_gmac", "cpu_melem", "transitions", "cross_mbytes", "fixed"})

# The pull towards the target scales, relative to one figure's squared relative error. The fit
# script tries each of PULL_GRID and keeps the one with the lowest median over chips of their
# leave-one-out MdAPE (one pull for every chip, never chosen per chip); params.json records it
# and the whole sweep. DEFAULT_PULL is for callers that fit without choosing (tests).
PULL_GRID = (0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0)
DEFAULT_PULL = 0.3
# Fewer figures than this on a chip: no estimate (its leave-one-out error would say too little).
MIN_FIGURES = 8
# The range printed with an estimate: these quantiles of the leave-one-out ratios actual/predicted.
RANGE_QUANTILES = (0.1, 0.9)


def nnls(a: np.ndarray, b: np.ndarray, max_iter: int | None = None) -> np.ndarray:
    """argmin ||a x - b|| subject to x >= 0 (Lawson and Hanson's active-set method)."""
    m, n = a.shape
    x = np.zeros(n)
    passive = np.zeros(n, dtype=bool)
    w = a.T @ (b - a @ x)
    max_iter = max_iter or 3 * n
    tol = 1e-10 * max(1.0, float(np.abs(a).max(initial=0.0))) * max(m, n)
    for _ in range(max_iter):
        if passive.all() or w[~passive].max(initial=-np.inf) <= tol:
            break
        j = int(np.argmax(np.where(passive, -np.inf, w)))
        passive[j] = True
        while True:
            z = np.zeros(n)
            z[passive] = np.linalg.lstsq(a[:, passive], b, rcond=None)[0]
            if (z[passive] > 0).all():
                x = z
                break
            # Step back to the boundary: the passive coefficient that reaches zero first leaves.
            negative = passive & (z <= 0)
            alpha = np.min(x[negative] / np.maximum(x[negative] - z[negative], 1e-300))
            x = x + alpha * (z - x)
            passive &= x > 1e-12
            x[~passive] = 0.0
            if not passive.any():
                break
        w = a.T @ (b - a @ x)
    return x


def fit_scales(rows: np.ndarray, latency_ms: np.ndarray, target: np.ndarray, pull: float = DEFAULT_PULL) -> np.ndarray:
    """The scales s >= 0 (see the module's docstring). `rows`: x_ij * p_j (features times the
    chip's prior coefficients), one row per figure; `latency_ms`: the figures; `target`: t.

    The pull is towards m * t, with the level m >= 0 fitted freely: a chip uniformly twice as
    slow as its data sheet costs nothing; only a coefficient out of line with the others does.
    The unknowns are (s, m); each penalty row is sqrt(pull) * (s_j - m * t_j) = 0.
    """
    n = len(target)
    a = np.hstack([rows / latency_ms[:, None], np.zeros((len(latency_ms), 1))])
    b = np.ones(len(latency_ms))
    root = np.sqrt(pull)
    penalty = np.hstack([root * np.eye(n), -root * target[:, None]])
    penalty_b = np.zeros(n)
    # The fallback unit's terms are anchored to t itself: the CPU is not faster because the NPU is,
    # and the published models barely exercise them, so the level fitted on the NPU must not move them.
    anchored = np.array([k in ANCHORED for k in FEATURES])
    penalty[anchored, n] = 0.0
    penalty_b[anchored] = root * target[anchored]
    solution = nnls(np.vstack([a, penalty]), np.concatenate([b, penalty_b]))
    return solution[:n]


@dataclass
class Figure:
    """One usable published figure: a model on a chip column, with the features of that chip's audit."""

    model_key: str
    column: str  # the chip (or chips sharing one measurement) the figure was published for
    latency_ms: float
    features: np.ndarray  # the FEATURES of the column's audit of the model
    prior: np.ndarray  # the column's prior coefficients, ms per unit of each feature


@dataclass
class ColumnFit:
    column: str
    family: str
    coefficients: np.ndarray | None
    figures: int
    loo: dict = field(default_factory=dict)
    # The same, leaving out every model of one architecture at once (a harsher check: the
    # published models are mostly sizes of a few architectures).
    architecture_out: dict = field(default_factory=dict)
    misses: list[dict] = field(default_factory=list)
    reason: str = ""


def _family_scales(figures: list[Figure], pull: float) -> np.ndarray:
    """Scales fitted to every figure of a family at once, pulled towards the data sheets (1)."""
    n = len(figures[0].prior)
    rows = np.array([f.features * f.prior for f in figures])
    y = np.array([f.latency_ms for f in figures])
    return fit_scales(rows, y, np.ones(n), pull)


def fit_column(figures: list[Figure], family_scales: np.ndarray, pull: float) -> np.ndarray:
    """The column's coefficients (ms per unit of each feature), pulled towards its family's scales."""
    rows = np.array([f.features * f.prior for f in figures])
    y = np.array([f.latency_ms for f in figures])
    return fit_scales(rows, y, family_scales, pull) * figures[0].prior


def fit_family(figures: list[Figure], pull: float = DEFAULT_PULL, min_figures: int = MIN_FIGURES) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The family's scales and each column's coefficients (columns with at least `min_figures`)."""
    family = _family_scales(figures, pull)
    by_column: dict[str, list[Figure]] = {}
    for f in figures:
        by_column.setdefault(f.column, []).append(f)
    return family, {c: fit_column(fs, family, pull) for c, fs in by_column.items() if len(fs) >= min_figures}


def leave_one_model_out(figures: list[Figure], pull: float = DEFAULT_PULL, min_figures: int = MIN_FIGURES, group_of: Callable[[str], str] | None = None) -> dict[str, list[dict]]:
    """Per column, for each of its figures: the prediction of a fit without that model anywhere in the family.

    `group_of`: model key -> the group left out together (default: the model itself); with
    architecture_of, every size and task of one architecture is left out at once.
    """
    group_of = group_of or (lambda key: key)
    out: dict[str, list[dict]] = {}
    for group in sorted({group_of(f.model_key) for f in figures}):
        kept = [f for f in figures if group_of(f.model_key) != group]
        held = [f for f in figures if group_of(f.model_key) == group]
        if not kept:
            continue
        _, columns = fit_family(kept, pull, min_figures - 1)
        for f in held:
            coefficients = columns.get(f.column)
            if coefficients is None:
                continue
            predicted = float(f.features @ coefficients)
            out.setdefault(f.column, []).append({"model_key": f.model_key, "published_ms": f.latency_ms, "predicted_ms": predicted})
    return out


def architecture_of(model_key: str) -> str:
    """'yolov8n_seg_640' -> 'yolov8', 'yolo11m_640' -> 'yolo11', 'mobilenet_v2_224' -> 'mobilenet':
    the first word of the key without its size letter."""
    first = model_key.split("_")[0]
    return re.sub(r"(\d)[nsmlxt]$", r"\1", first)


def loo_summary(predictions: list[dict]) -> dict:
    """MdAPE, the share within 25%, and the quantiles of actual/predicted of leave-one-out predictions."""
    actual = np.array([p["published_ms"] for p in predictions])
    predicted = np.maximum(np.array([p["predicted_ms"] for p in predictions]), 1e-9)
    ape = np.abs(predicted - actual) / actual
    ratios = actual / predicted
    low, high = np.quantile(ratios, RANGE_QUANTILES)
    # The range always holds the estimate itself, even where the held-out figures lean one way.
    low, high = min(low, 1.0), max(high, 1.0)
    return {
        "figures": len(predictions),
        "mdape": float(np.median(ape)),
        "within_25": float(np.mean(ape <= 0.25)),
        "ratio_low": float(low),
        "ratio_high": float(high),
    }


def worst_misses(predictions: list[dict], count: int = 3) -> list[dict]:
    """The `count` leave-one-out predictions furthest off, in relative terms."""
    def off(p: dict) -> float:
        return abs(p["predicted_ms"] - p["published_ms"]) / p["published_ms"]

    return [dict(p, ape=off(p)) for p in sorted(predictions, key=off, reverse=True)[:count]]


def fit_all(figures: list[Figure], families: dict[str, str], pull: float = DEFAULT_PULL, min_figures: int = MIN_FIGURES) -> list[ColumnFit]:
    """Every column's fit and leave-one-model-out error; `families`: column -> family name."""
    results = []
    for family in sorted(set(families.values())):
        members = [f for f in figures if families.get(f.column) == family]
        counts: dict[str, int] = {}
        for f in members:
            counts[f.column] = counts.get(f.column, 0) + 1
        _, coefficients = fit_family(members, pull, min_figures) if members else (None, {})
        loo = leave_one_model_out(members, pull, min_figures) if members else {}
        by_architecture = leave_one_model_out(members, pull, min_figures, architecture_of) if members else {}
        for column in sorted(c for c, fam in families.items() if fam == family):
            n = counts.get(column, 0)
            if n < min_figures:
                have = f"only {n} usable published figure{'s' if n != 1 else ''}" if n else "no usable published figures"
                results.append(ColumnFit(column, family, None, n, reason=f"{have} for this chip (an estimate needs at least {min_figures})"))
                continue
            predictions = loo.get(column, [])
            held_out = by_architecture.get(column)
            results.append(
                ColumnFit(column, family, coefficients[column], n, loo=loo_summary(predictions), architecture_out=loo_summary(held_out) if held_out else {}, misses=worst_misses(predictions))
            )
    return results
