"""Latency per inference on a chip you have no board for: a cost model on the audit's placements,
fitted per chip to the vendors' published device figures, printed with its leave-one-out error.

- `features`: what a model asks of a chip (MACs per op class, bytes, layers, fallback work,
  transitions), from the audit's placements;
- `costmodel`: coefficients per chip (ms per unit of each feature), priors from data sheets;
- `fit`: the fit to published figures and its leave-one-model-out error (scripts/estimate/fit.py
  writes data/params.json with it);
- here: `estimate_chip`, the estimate of one chip's audit, with its range and error.

docs/estimate.md has the method, the figures and the errors.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from edgedeploy.estimate.costmodel import breakdown_ms, grouped_ms
from edgedeploy.estimate.features import FEATURES, chip_features, node_costs

PARAMS_PATH = Path(__file__).resolve().parent / "data" / "params.json"
PARAMS_SCHEMA = "edgedeploy.estimate-params/1"
ESTIMATE_SCHEMA = "edgedeploy.estimate/1"

__all__ = ["ChipEstimate", "FEATURES", "PARAMS_PATH", "chip_features", "estimate_chip", "load_params", "node_costs", "toolchain_estimate_entry"]


# Another params.json to estimate with (a refit not yet committed: scripts/estimate/fit.py --out FILE).
PARAMS_VARIABLE = "EDGEDEPLOY_ESTIMATE_PARAMS"


def load_params(path: Path | None = None) -> dict:
    """The fitted parameters (data/params.json, or the file $EDGEDEPLOY_ESTIMATE_PARAMS names):
    per chip its coefficients and leave-one-out error, or why it has none."""
    import os

    from edgedeploy.errors import OptionError

    if path is None and os.environ.get(PARAMS_VARIABLE):
        path = Path(os.environ[PARAMS_VARIABLE])
    path = path or PARAMS_PATH
    try:
        params = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise OptionError(f"Cannot read the estimate's parameters {path}: {exc}.") from None
    if params.get("schema") != PARAMS_SCHEMA:
        raise OptionError(f"{path} is not an estimate parameters file ({PARAMS_SCHEMA}).")
    return params


@dataclass
class ChipEstimate:
    chip: str
    latency_ms: float | None  # None: no estimate (see `reason`)
    low_ms: float | None = None
    high_ms: float | None = None
    mdape: float | None = None  # leave-one-model-out median absolute percentage error on this chip
    within_25: float | None = None  # share of left-out figures predicted within 25%
    figures: int = 0  # published figures the chip's parameters were fitted to
    fitted_on: str = ""  # the chip whose published figures were used (rk3568 uses the RK3566's)
    scope: str = ""  # what the published figures (so the estimate) include
    precision: str = ""
    reason: str = ""
    fallback_nodes: int = 0
    transitions: int = 0
    breakdown_ms: dict = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    toolchain_estimate: dict | None = None  # {"name", "latency_ms"} or {"name", "not_run": why}

    @property
    def available(self) -> bool:
        return self.latency_ms is not None

    def sentence(self) -> str:
        """'41 ms (range 30-55 ms), typically within 30% on this chip, from 32 published figures'."""
        if self.latency_ms is None:
            return f"no estimate: {self.reason}"
        shared = f" (the {self.fitted_on.upper()}'s)" if self.fitted_on and self.fitted_on != self.chip else ""
        return (
            f"{fmt_ms(self.latency_ms)} (range {fmt_ms(self.low_ms, unit=False)}-{fmt_ms(self.high_ms)}), "
            f"typically within {100 * self.mdape:.0f}% on this chip, from {self.figures} published figures{shared}"
        )

    def to_dict(self) -> dict:
        return {
            "schema": ESTIMATE_SCHEMA,
            "chip": self.chip,
            "is_estimate": True,
            "latency_ms": self.latency_ms,
            "range_ms": [self.low_ms, self.high_ms] if self.latency_ms is not None else None,
            "loo_mdape": self.mdape,
            "loo_within_25": self.within_25,
            "figures": self.figures,
            "fitted_on": self.fitted_on,
            "scope": self.scope,
            "precision": self.precision,
            "reason": self.reason,
            "fallback_nodes": self.fallback_nodes,
            "transitions": self.transitions,
            "breakdown_ms": self.breakdown_ms,
            "notes": self.notes,
            "toolchain_estimate": self.toolchain_estimate,
            "sentence": self.sentence(),
        }


def fmt_ms(value: float | None, unit: bool = True) -> str:
    """A latency with two or three significant figures: 0.42, 4.2, 42, 420."""
    if value is None:
        return "-"
    text = f"{value:.2f}" if value < 1 else f"{value:.1f}" if value < 10 else f"{value:.0f}"
    return text + (" ms" if unit else "")


def estimate_chip(costs, audit, params: dict) -> ChipEstimate:
    """The estimate for one chip's audit (an edgedeploy.audit.AuditResult) of the model of
    `costs` (node_costs(model)); `params`: load_params()."""
    from edgedeploy.audit.rules import Placement

    chip = audit.chip
    counts = audit.counts()
    fallback = counts[Placement.FALLBACK]
    base = {"chip": chip, "fallback_nodes": fallback, "transitions": audit.transitions, "precision": audit.precision}
    entry = params.get("chips", {}).get(chip)
    if entry is None:
        return ChipEstimate(latency_ms=None, reason="no published figures were collected for this chip", **base)
    if entry.get("coefficients") is None:
        return ChipEstimate(latency_ms=None, reason=entry.get("reason", "too few published figures for this chip"), figures=entry.get("figures", 0), **base)
    if counts[Placement.UNSUPPORTED]:
        return ChipEstimate(latency_ms=None, reason=f"{counts[Placement.UNSUPPORTED]} node(s) are unsupported on this chip, so the model does not build", figures=entry["figures"], **base)
    fitted_precision = entry.get("precision", "int8")
    if audit.precision and audit.precision != fitted_precision:
        return ChipEstimate(latency_ms=None, reason=f"the published figures for this chip are {fitted_precision}; none in {audit.precision}", figures=entry["figures"], **base)
    features = chip_features(costs, audit)
    terms = breakdown_ms(entry["coefficients"], features)
    latency = sum(terms.values())
    loo = entry["loo"]
    notes = []
    if fallback or audit.transitions:
        notes.append(
            f"{fallback} node(s) on the {audit.fallback_unit} and {audit.transitions} transition(s): the published models run on the accelerator, "
            f"so these {fmt_ms(grouped_ms(terms)['fallback on the CPU'] + grouped_ms(terms)['transitions'])} come from the chip's priors and are less sure than the stated error"
        )
    notes += outside_published_range(latency, entry)
    if entry.get("coefficients_from", "fit") != "fit":
        notes.append(f"from the chip's data sheet, not a fit: it predicts the {entry['figures']} published figures better than a fit to them does when each is left out")
    return ChipEstimate(
        latency_ms=latency,
        low_ms=latency * loo["ratio_low"],
        high_ms=latency * loo["ratio_high"],
        mdape=loo["mdape"],
        within_25=loo["within_25"],
        figures=entry["figures"],
        fitted_on=entry.get("column", chip),
        scope=entry.get("scope", ""),
        breakdown_ms={k: round(v, 4) for k, v in grouped_ms(terms).items()},
        notes=notes,
        **base,
    )


# How far outside the published figures' span an estimate may fall before it says so.
EXTRAPOLATION_FACTOR = 2.0


def outside_published_range(latency_ms: float, entry: dict) -> list[str]:
    """A note when the estimate lies well outside the latencies of the published models its error was measured on."""
    span = entry.get("published_ms_range")
    if not span or span[0] / EXTRAPOLATION_FACTOR <= latency_ms <= span[1] * EXTRAPOLATION_FACTOR:
        return []
    side = "faster" if latency_ms < span[0] else "slower"
    return [
        f"far {side} than any published model on this chip ({fmt_ms(span[0], unit=False)}-{fmt_ms(span[1])}): the stated error was measured on those, "
        "so this estimate is an extrapolation and may be further off"
    ]


def toolchain_estimate_entry(target, chip_id: str, verdict_estimates: dict | None = None, source: str = "") -> dict | None:
    """The toolchain's own time estimate for the chip, where its target declares one
    (Target.toolchain_latency_estimate): its figure from a build's toolchain verdict when given
    (`source`: which build), else why it is not here."""
    name = getattr(target, "toolchain_latency_estimate", {}).get(chip_id)
    if name is None:
        return None
    micros = (verdict_estimates or {}).get("estimated_inference_time_us")
    if micros is not None:
        where = f", from {source}" if source else ""
        return {"name": name, "latency_ms": micros / 1000.0, "note": f"{name}'s own estimate of the compiled model (the toolchain's performance model, not a measurement{where})"}
    return {"name": name, "latency_ms": None, "not_run": f"{name} runs in `edgedeploy build --target {chip_id}` (its int8 conversion); `estimate` runs no toolchain and found no build of this model"}
