"""The Python API's results other than the audit's: estimates, artifacts, measurements, benches.

Part of edgedeploy.api, which exports them (and is where to import them from); kept in a module
of their own so that `edgedeploy audit`, which imports edgedeploy.api, does not make these six
dataclasses (about 3 ms of its run, scripts/bench_audit.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from edgedeploy.documents import Document as _Document


@dataclass(frozen=True)
class ChipEstimate(_Document):
    """One chip's latency estimate (schema edgedeploy.estimate/1): an estimate, never a measurement."""

    chip: str
    # ms per inference; None when the chip has no estimate (`reason` says why).
    latency_ms: float | None
    # (low, high) in ms: the estimate times the 10th-90th percentile of the leave-one-out ratios.
    range_ms: tuple[float, float] | None
    # The chip's leave-one-model-out median absolute percentage error (0.12 = 12%), and its figures.
    loo_mdape: float | None
    figures: int
    fallback_nodes: int
    reason: str
    sentence: str = field(repr=False)
    document: dict = field(repr=False, compare=False)

    @classmethod
    def from_dict(cls, doc: dict) -> ChipEstimate:
        span = tuple(doc["range_ms"]) if doc.get("range_ms") else None
        return cls(doc["chip"], doc["latency_ms"], span, doc["loo_mdape"], doc["figures"], doc["fallback_nodes"], doc["reason"], doc["sentence"], doc)


@dataclass(frozen=True)
class Estimate(_Document):
    """Latency estimates of one model on one or more chips (schema edgedeploy.estimate-report/1)."""

    model_name: str
    model_sha256: str
    chips: tuple[ChipEstimate, ...]
    budget_ms: float | None
    warnings: tuple[str, ...]
    document: dict = field(repr=False, compare=False)

    def chip(self, chip_id: str) -> ChipEstimate:
        """The estimate of one chip; KeyError naming the chips estimated."""
        for found in self.chips:
            if found.chip == chip_id:
                return found
        raise KeyError(f"{chip_id} was not estimated here; these were: {', '.join(c.chip for c in self.chips)}")

    def meeting(self, budget_ms: float | None = None) -> list[str]:
        """The chips whose estimate is at most `budget_ms` (default: the budget asked for)."""
        budget = self.budget_ms if budget_ms is None else budget_ms
        if budget is None:
            raise ValueError("give a budget in ms (or estimate with budget_ms=)")
        return [c.chip for c in self.chips if c.latency_ms is not None and c.latency_ms <= budget]


@dataclass(frozen=True)
class Artifact(_Document):
    """A built artifact directory, OUT/<model>/<chip>/ (its report.json: schema edgedeploy.report/1)."""

    path: Path
    chip: str
    target: str
    model_name: str
    model_sha256: str
    # "built", or "generated only" (a project generated but not compiled here: CLI exit 6).
    status: str
    # The accuracy section (top-1 before/after, fidelity of every output), when it was checked.
    accuracy: dict | None = field(repr=False)
    manifest: dict = field(repr=False, compare=False)
    warnings: tuple[str, ...] = field(default=(), compare=False)
    document: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def report(self) -> dict:
        """The artifact's report.json (a copy), as `to_dict()`."""
        return self.to_dict()

    def verify(self) -> dict:
        """Check every file against the manifest's sha256 (ArtifactError when one changed); the manifest."""
        from edgedeploy.artifacts import check_manifest

        return check_manifest(self.path, self.chip)


@dataclass(frozen=True)
class Measurement(_Document):
    """One artifact measured on one device (schema edgedeploy.measurement/1), also kept in ARTIFACT/measurements/."""

    artifact: Path
    device: str
    # Whether fewer sessions than asked completed (the device failed mid-way); `error` says why.
    partial: bool
    error: str | None
    # {"after": edgedeploy.latency/1, "before": ...}: sessions, their statistics, the range across them.
    latency: dict = field(repr=False)
    # The before/after ratio, when the two scopes differ in one thing; else why not.
    comparison: dict | None = field(repr=False)
    accuracy: dict | None = field(repr=False)
    warnings: tuple[str, ...] = field(default=(), compare=False)
    document: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def file(self) -> Path:
        """Where the record is kept: ARTIFACT/measurements/<time>-<device>.json."""
        return self.artifact / self.document["file"]

    def partial_error(self):
        """The DeviceError (exit 10) a partial measurement stands for, naming where the partial record is kept."""
        from edgedeploy.pipeline.measure import partial_error

        return partial_error(self.document, self.artifact)


@dataclass(frozen=True)
class FarmMeasurement(_Document):
    """Artifacts measured on the boards of a labgrid farm (schema edgedeploy.farm-measurement/1):
    one run per artifact, each on a place of its own; figures of different boards never divided."""

    farm: str  # the coordinator, labgrid://HOST:PORT
    # One per artifact: place, board, status, latency summaries, the record kept in the artifact.
    runs: tuple[dict, ...] = field(repr=False)
    # Whether some artifact was not measured, or only partly; `error` says why, in one sentence.
    partial: bool
    error: str | None
    wall_s: float
    warnings: tuple[str, ...] = field(default=(), compare=False)
    document: dict = field(default_factory=dict, repr=False, compare=False)

    def partial_error(self):
        """The DeviceError (exit 10) a farm run that did not measure everything stands for."""
        from edgedeploy.errors import DeviceError

        return DeviceError(self.error or "Not every artifact was measured on the labgrid farm.")


@dataclass(frozen=True)
class BenchResult(_Document):
    """Latency of a model on this machine's backends (schema edgedeploy.bench/1)."""

    model_name: str
    model_sha256: str
    # One edgedeploy.latency/1 entry per backend timed; `skipped` and `failed` say why others were not.
    results: tuple[dict, ...] = field(repr=False)
    skipped: tuple[dict, ...] = field(repr=False)
    failed: tuple[dict, ...] = field(repr=False)
    # The backend with the lowest median, when any was timed (ratios only between same-scope figures).
    fastest: str | None
    warnings: tuple[str, ...] = field(default=(), compare=False)
    document: dict = field(default_factory=dict, repr=False, compare=False)
