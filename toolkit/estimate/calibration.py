"""From the published-figures table and the committed features to the fit's Figures, and from
the fit to data/params.json (scripts/estimate/fit.py drives it; the tests call it on small tables).

A row of the table is used when it is marked usable, is for batch 1 in int8, has a latency, and
its model has features; rows of one model on one chip column are merged into their median.
"""

from __future__ import annotations

import csv
import re
from collections import Counter
from pathlib import Path
from statistics import median

import numpy as np

from edgedeploy.estimate.costmodel import as_vector, prior_coefficients
from edgedeploy.estimate.features import FEATURES
from edgedeploy.estimate.fit import DEFAULT_PULL, MIN_FIGURES, RANGE_QUANTILES, Figure, fit_all, loo_summary, worst_misses

FITTED_PRECISION = "int8"


def chips_named(text: str) -> list[str]:
    """'RK3566/RK3568' -> ['rk3566', 'rk3568']: the chips one published column stands for."""
    return [c for c in re.split(r"[/,+&;]|\s+and\s+|\s+", text.strip().lower()) if c]


def column_of(chips: list[str], shared: dict[str, str]) -> str:
    """The chip whose parameters a figure for `chips` calibrates: the first named, or the chip it shares a column with."""
    first = chips[0]
    return shared.get(first, first)


def is_usable(row: dict) -> tuple[bool, str]:
    """Whether a row enters the fit, and why not."""
    if str(row.get("usable", "")).strip().lower() not in ("yes", "true", "1", "y"):
        return False, "marked not usable"
    precision = str(row.get("precision", "")).strip().lower()
    if not (precision.startswith("int8") or precision in ("i8", "w8a8", "a8w8", "uint8", "u8")):
        return False, f"precision {precision or '?'} (the fit uses {FITTED_PRECISION})"
    batch = str(row.get("batch", "1")).strip() or "1"
    if batch not in ("1", "1.0"):
        return False, f"batch {batch}"
    try:
        value = float(row.get("latency_ms") or "nan")
    except ValueError:
        return False, "no latency"
    if not value > 0:
        return False, "no latency"
    return True, ""


def read_table(path: Path) -> list[dict]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def figures_from(rows: list[dict], features: dict, priors: dict) -> tuple[list[Figure], Counter, dict[str, Counter]]:
    """The Figures of the usable rows that have features; the reasons rows were left out; per column, the scopes of its figures."""
    shared = priors.get("shared_columns", {})
    left_out: Counter = Counter()
    merged: dict[tuple[str, str], list[float]] = {}
    scopes: dict[str, Counter] = {}
    models = features.get("models", {})
    for row in rows:
        usable, why = is_usable(row)
        if not usable:
            left_out[why] += 1
            continue
        column = column_of(chips_named(row["chip"]), shared)
        key = row["model_key"].strip()
        if column not in priors["chips"]:
            left_out[f"chip {row['chip']} has no priors"] += 1
            continue
        if key not in models or column not in models[key]["chips"]:
            left_out["model not rebuilt here (no features)"] += 1
            continue
        merged.setdefault((column, key), []).append(float(row["latency_ms"]))
        scope = ", ".join(x for x in (row.get("scope", "").strip(), (f"{row['npu_cores'].strip()} NPU core(s)" if row.get("npu_cores", "").strip() else "")) if x)
        scopes.setdefault(column, Counter())[scope] += 1
    figures = []
    for (column, key), values in sorted(merged.items()):
        prior = as_vector(prior_coefficients(priors["chips"][column]))
        figures.append(Figure(key, column, float(median(values)), as_vector(models[key]["chips"][column]), prior))
    return figures, left_out, scopes


def params_from(figures: list[Figure], priors: dict, scopes: dict[str, Counter], pull: float = DEFAULT_PULL, min_figures: int = MIN_FIGURES, provenance: dict | None = None) -> dict:
    """The content of data/params.json: per chip its coefficients and leave-one-out error, or why it has none."""
    families = {chip: spec["family"] for chip, spec in priors["chips"].items() if chip not in priors.get("shared_columns", {})}
    fits = {f.column: f for f in fit_all(figures, families, pull, min_figures)}
    chips = {}
    for chip in sorted(priors["chips"]):
        column = priors.get("shared_columns", {}).get(chip, chip)
        fit = fits.get(column)
        entry = {"column": column, "family": priors["chips"][chip]["family"], "figures": fit.figures if fit else 0, "precision": FITTED_PRECISION}
        if fit is None or fit.coefficients is None:
            entry["coefficients"] = None
            entry["reason"] = fit.reason if fit else "no published figures"
        else:
            prior = prior_coefficients(priors["chips"][column])
            entry["coefficients"] = {k: float(v) for k, v in zip(FEATURES, fit.coefficients)}
            entry["prior_coefficients"] = prior
            entry["loo"] = fit.loo
            entry["leave_architecture_out"] = fit.architecture_out
            entry["worst_misses"] = fit.misses
            entry["coefficients_from"] = "fit"
            on_prior = prior_predictions([f for f in figures if f.column == column])
            if loo_summary(on_prior)["mdape"] < fit.loo["mdape"]:
                # The data sheet alone predicts this chip's figures better than the fit does when
                # each is left out: keep the data sheet, and state its (out-of-sample) error.
                entry["coefficients"] = dict(prior)
                entry["coefficients_from"] = "data sheet (its error on the published figures is lower than the fit's leave-one-out error)"
                entry["loo"] = loo_summary(on_prior)
                entry["leave_architecture_out"] = {}  # nothing is fitted, so nothing to leave out
                entry["worst_misses"] = worst_misses(on_prior)
            entry["scope"] = scopes.get(column, Counter()).most_common(1)[0][0] if scopes.get(column) else ""
            published = [f.latency_ms for f in figures if f.column == column]
            entry["published_ms_range"] = [min(published), max(published)]
        chips[chip] = entry
    return {
        "schema": "edgedeploy.estimate-params/1",
        "features": list(FEATURES),
        "pull": pull,
        "min_figures": min_figures,
        "range_quantiles": list(RANGE_QUANTILES),
        "fitted": provenance or {},
        "chips": chips,
    }


def loo_table(params: dict) -> list[list]:
    """Rows chip, column, figures, MdAPE, within 25%, range factors, MdAPE leaving out whole architectures (or the reason)."""
    rows = []
    for chip, e in params["chips"].items():
        if e["coefficients"] is None:
            rows.append([chip, e["column"], e["figures"], "-", "-", "-", "-", e["reason"]])
            continue
        loo = e["loo"]
        arch = e.get("leave_architecture_out") or {}
        harsher = f"{100 * arch['mdape']:.1f}%" if arch else "-"
        rows.append([chip, e["column"], e["figures"], f"{100 * loo['mdape']:.1f}%", f"{100 * loo['within_25']:.0f}%", f"x{loo['ratio_low']:.2f}-x{loo['ratio_high']:.2f}", harsher, ""])
    return rows


def prior_predictions(figures: list[Figure]) -> list[dict]:
    """Each figure predicted by its chip's data-sheet coefficients alone (no fit: every one out of sample)."""
    return [{"model_key": f.model_key, "published_ms": f.latency_ms, "predicted_ms": float(f.features @ f.prior)} for f in figures]


def prior_only_error(figures: list[Figure]) -> dict[str, float]:
    """Per column, the MdAPE of the priors alone (no fit): what the fit adds."""
    out: dict[str, list[float]] = {}
    for f in figures:
        predicted = float(f.features @ f.prior)
        out.setdefault(f.column, []).append(abs(predicted - f.latency_ms) / f.latency_ms)
    return {c: float(np.median(v)) for c, v in out.items()}
