"""The build pipeline: intake -> audit -> convert -> codegen -> verify -> report, per target chip.

`run_build` owns the order and the artifact directory; each target implements its stages in
`Target.build(ctx)` and writes its files into `ctx.workdir`. Everything a stage needs is on the
BuildContext, so a target never reaches into the CLI or global state.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import onnx

from edgedeploy import __version__
from edgedeploy.artifacts import DEFAULT_OUT, ArtifactBuilder, artifact_dir, atomic_write_json
from edgedeploy.datasets import Dataset, PreprocessSpec, load_dataset, model_input_specs
from edgedeploy.errors import ToolchainMissing
from edgedeploy.model import InputShapes, LoadedModel, load_model

REPORT_SCHEMA = "edgedeploy.report/1"


@dataclass
class BuildOptions:
    """What the user asked for; `target_options` holds the options only some targets read."""

    out_root: Path = DEFAULT_OUT
    force: bool = False
    input_shapes: InputShapes = field(default_factory=dict)
    precision: str | None = None
    calib: Path | None = None
    calib_count: int | None = None
    eval: Path | None = None
    eval_count: int | None = None
    allow_nonfinite: bool = False  # let NaN, infinities and complex data through, with a warning
    preprocess: PreprocessSpec | None = None
    metric: str = "auto"
    device: str | None = None
    worker_timeout_s: float = 1800.0
    fix: bool = False  # run `edgedeploy fix` for this chip before converting
    allow_approx: bool = False  # let that fix use approximations (their error is reported)
    target_options: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # Workers run in folders of their own: every path a build hands on must be absolute
        # (the CLI makes them so; this covers callers of the Python API).
        self.out_root = Path(self.out_root).absolute()
        self.calib = Path(self.calib).absolute() if self.calib is not None else None
        self.eval = Path(self.eval).absolute() if self.eval is not None else None

    def to_dict(self) -> dict:
        return {
            "input_shapes": {k: list(v) for k, v in self.input_shapes.items()},
            "precision": self.precision,
            "calib": str(self.calib) if self.calib else None,
            "calib_count": self.calib_count,
            "eval": str(self.eval) if self.eval else None,
            "eval_count": self.eval_count,
            "allow_nonfinite": self.allow_nonfinite,
            "preprocess": self.preprocess.to_dict() if self.preprocess else None,
            "metric": self.metric,
            "device": self.device,
            "fix": self.fix,
            "allow_approx": self.allow_approx,
            **self.target_options,
        }


@dataclass
class BuildContext:
    """Everything a target's build stages get. Files go into `workdir` (the artifact being built)."""

    model: LoadedModel
    model_path: Path  # workdir/model.onnx: the pinned, checked copy every toolchain reads
    target: Any  # edgedeploy.targets.base.Target
    chip: Any  # edgedeploy.targets.base.Chip
    options: BuildOptions
    workdir: Path
    log_path: Path
    echo: Callable[[str], None]
    report: dict
    manifest: dict

    def dataset(self, which: str, default: Path | None) -> Dataset | None:
        """The calibration (`calib`) or evaluation (`eval`) data: the user's, else `default`."""
        path = getattr(self.options, which) or default
        if path is None:
            return None
        count = getattr(self.options, f"{which}_count")
        return load_dataset(path, model_input_specs(self.model), self.options.preprocess, count, allow_nonfinite=self.options.allow_nonfinite)

    def run_worker(self, worker_file: Path, request: dict, stage: str) -> dict:
        """Run a worker of this target's toolchain, its output appended to the build log."""
        self.echo(f"{stage}: running in the {self.target.toolchain.name} environment (log: {self.log_path.name})")
        started = time.monotonic()
        result = self.target.toolchain.run_worker(
            worker_file, request, workdir=self.workdir / "work" / stage, log_path=self.log_path, timeout_s=self.options.worker_timeout_s
        )
        self.echo(f"{stage}: done in {time.monotonic() - started:.1f} s")
        return result


def run_build(model_path: Path, chip_id: str, options: BuildOptions, echo: Callable[[str], None]) -> Path:
    """Build one artifact for one chip; return its directory."""
    from edgedeploy.targets import find_chip

    target, chip = find_chip(chip_id)
    started = time.monotonic()
    model_path = Path(model_path).absolute()
    model = load_model(model_path, options.input_shapes, require_static=True)
    for name, dims in model.auto_pinned.items():
        echo(f"intake: input '{name}' has a dynamic batch dimension; building for {'x'.join(map(str, dims))} (pin another with --input-shape)")
    fix_report = None
    if options.fix:
        model, fix_report = _fix_for_chip(model, Path(model_path), target, chip, options, echo)
    if target.toolchain.managed and not target.toolchain.status().installed:
        raise ToolchainMissing(f"Building for {chip.id} needs the {target.toolchain.name} toolchain, which is {target.toolchain.status().detail}.")
    dest = artifact_dir(options.out_root, model.name, chip.id)
    with ArtifactBuilder(dest, options.force) as art:
        work = art.path
        pinned_path = work / "model.onnx"
        onnx.save(model.proto, str(pinned_path))
        report: dict = {
            "schema": REPORT_SCHEMA,
            "edgedeploy_version": __version__,
            "model": {
                "name": model.name,
                "source": str(model.path),
                "sha256": model.sha256,
                "input_shapes": {vi.name: [d.dim_value for d in vi.type.tensor_type.shape.dim] for vi in model.graph_inputs()},
            },
            "target": {"target": target.id, "chip": chip.id, "chip_name": chip.name, "vendor": target.vendor, "accelerator": chip.accelerator},
            "options": options.to_dict(),
        }
        if fix_report is not None:
            # The artifact's model.onnx is the rewritten one; the report keeps where it came from.
            report["model"]["source_sha256"] = fix_report["model"]["sha256"]
            report["fix"] = fix_report
        art.manifest_fields.update(
            model=report["model"],
            target=report["target"],
            options=options.to_dict(),
            toolchain={"name": target.toolchain.name, "versions": target.toolchain.status().versions},
        )
        ctx = BuildContext(
            model=model,
            model_path=pinned_path,
            target=target,
            chip=chip,
            options=options,
            workdir=work,
            log_path=work / "build.log",
            echo=echo,
            report=report,
            manifest=art.manifest_fields,
        )
        echo(f"build: {model.name} for {chip.name} ({target.name}) in {work}")
        target.build(ctx)
        report["build_seconds"] = round(time.monotonic() - started, 2)
        atomic_write_json(work / "report.json", report)
    echo(f"build: wrote {dest} in {time.monotonic() - started:.1f} s")
    return dest


def _fix_for_chip(model: LoadedModel, model_path: Path, target, chip, options: BuildOptions, echo):
    """`edgedeploy fix` for one chip before converting: (the rewritten model, the fix report)."""
    from edgedeploy.fix.engine import DEFAULT_EVAL_COUNT, evaluation_feeds, fix_model

    feeds, source = evaluation_feeds(model, options.eval, options.eval_count or DEFAULT_EVAL_COUNT, model_path)
    precision = options.precision or chip.precisions[0]
    result = fix_model(model, {chip.id: target.rule_set(chip.id)}, feeds, source, allow_approx=options.allow_approx, echo=echo, precisions={chip.id: precision})
    applied = [a.rewrite for a in result.attempts if a.applied]
    echo(f"fix: {', '.join(applied) if applied else 'no rewrite improved the placements'} for {chip.id}")
    return result.fixed, result.to_dict()


def load_report(artifact: Path) -> dict:
    return json.loads((Path(artifact) / "report.json").read_text())
