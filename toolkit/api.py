"""The Python API: what every `edgedeploy` command does, as functions that return typed results.

    import edgedeploy
    audit = edgedeploy.audit("model.onnx", chips=["esp32s3", "rk3588"])
    estimate = edgedeploy.estimate("model.onnx", chips=["rk3566", "rk3588"], budget_ms=30)
    artifact = edgedeploy.build("model.onnx", "esp32s3", calib="calib.npz", eval="eval.npz")
    measurement = edgedeploy.measure(artifact, device="local")
    bench = edgedeploy.bench("model.onnx", backends=["ort-cpu"])
    artifact = edgedeploy.load_artifact("edgedeploy-out/model/esp32s3")

docs/api.md is the guide (tests/test_api_docs.py runs its example session as written). The
command line is a thin shell over these functions: it parses options, calls them, renders the
result and picks the exit status; so a notebook or a CI script gets the same work as the CLI.

The contract of every function here:
- it prints nothing (stdout and stderr stay the caller's): progress goes to the optional
  `progress` callback, one line (a str) at a time; a callback that also has a
  `tool(elapsed_s, last_log_line)` attribute gets the running toolchain's ticks too (the CLI's
  live display has one). edgedeploy's own warnings (EdgedeployWarning) arrive as lines that start
  with "warning: ", and are kept on the result's `warnings`;
- what the user can get wrong raises an error of edgedeploy.errors' one hierarchy
  (EdgedeployError and its subclasses), whose `exit_code` is the CLI's exit status for it and
  whose `str()` is the one sentence the CLI prints;
- a result is a dataclass whose `to_dict()` is the JSON document the CLI writes with
  `--format json` (and the artifact keeps), with the shape of the JSON Schema shipped in the
  package (edgedeploy.report.schemas); its typed fields are the figures most callers read.

Heavy modules (onnx, numpy, the pipelines, the targets) are imported inside the functions, so
`import edgedeploy` stays cheap.
"""

from __future__ import annotations

import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Mapping, Sequence

from edgedeploy import API_NAMES
from edgedeploy.documents import Document as _Document
from edgedeploy.errors import EdgedeployWarning, OptionError

if TYPE_CHECKING:
    from edgedeploy.api_results import Artifact, BenchResult, Estimate, FarmMeasurement, Measurement

# A progress callback: called with one line of text at a time (a str; edgedeploy.progress.StepStarted
# for a line that opens a long step). It may also have `tool(elapsed_s, last_log_line)`.
ProgressCallback = Callable[[str], None]

# The default output folder of build, as the CLI's `--out`.
DEFAULT_OUT = Path("edgedeploy-out")

# The names edgedeploy's package __init__ exports (edgedeploy.API_NAMES, looked up here on first
# use), and the callback type.
__all__ = [*API_NAMES, "ProgressCallback"]


# -- the shared plumbing ------------------------------------------------------------------------


class _Progress:
    """The caller's callback (or nothing), and the warnings forwarded to it."""

    def __init__(self, callback: ProgressCallback | None):
        self.callback = callback
        self.warnings: list[str] = []

    def __call__(self, line: str) -> None:
        if self.callback is not None:
            self.callback(line)

    @property
    def tool(self) -> Callable[[float, str], None] | None:
        """The toolchain ticks' receiver: the callback's own `tool`, when it has one."""
        return getattr(self.callback, "tool", None)

    @contextmanager
    def capturing_warnings(self) -> Iterator["_Progress"]:
        """EdgedeployWarnings become progress lines (and `warnings` entries) instead of stderr output.

        Other libraries' warnings keep whatever handling the caller set up.
        """
        with warnings.catch_warnings():
            warnings.simplefilter("always", EdgedeployWarning)
            previous = warnings.showwarning

            def show(message, category, filename, lineno, file=None, line=None):
                if issubclass(category, EdgedeployWarning):
                    self.warnings.append(str(message))
                    self(f"warning: {message}")
                else:
                    previous(message, category, filename, lineno, file, line)

            warnings.showwarning = show
            yield self


def _model_path(model: str | Path | None, progress: _Progress) -> Path:
    """The model file, absolute; the bundled sample (MNIST CNN) when None, with a line saying so."""
    if model is None:
        from edgedeploy.sample import sample_model_path

        path = sample_model_path()
        progress(f"No model given: using the bundled sample {path.name} (MNIST CNN).")
        return path
    return Path(model).absolute()


def _input_shapes(shapes: Mapping[str, Sequence[int]] | Sequence[str] | None) -> dict:
    """{input name: dims} from a mapping, or from the CLI's NAME=1x3x224x224 strings (as build reads them)."""
    from edgedeploy.model import input_shapes_from

    return input_shapes_from(shapes)


def _optional_path(value: str | Path | None) -> Path | None:
    return Path(value).absolute() if value is not None else None


def _model_result(doc: dict, warnings: Iterable[str] = ()) -> dict:
    """The fields every result about one model has: the model's name and sha256 (from the
    document's `model`), the warnings of the run, and the document itself."""
    return {"model_name": doc["model"]["name"], "model_sha256": doc["model"]["sha256"], "warnings": tuple(warnings), "document": doc}


# -- audit ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ChipAudit(_Document):
    """One chip's audit (schema edgedeploy.audit/2): where every node runs, and what crosses."""

    chip: str
    target: str
    precision: str
    # nodes per placement ("accelerator", "cpu", "float", "unsupported", ...), as the JSON's summary.
    summary: dict = field(repr=False)
    summary_line: str = field(repr=False)
    document: dict = field(repr=False, compare=False)

    @classmethod
    def from_dict(cls, doc: dict) -> ChipAudit:
        return cls(doc["chip"], doc["target"], doc["precision"], dict(doc["summary"]), doc["summary_line"], doc)


@dataclass(frozen=True)
class AuditResult(_Document):
    """The audit of one model on one or more chips (schema edgedeploy.audit-report/2)."""

    model_name: str
    model_sha256: str
    chips: tuple[ChipAudit, ...]
    # Targets (and chips) that have no rules yet: [{"target", "chips", "reason"}].
    no_rules: tuple[dict, ...]
    # The --fail-on outcome: {"level", "failed", "exit_code", "found"}; `failed` False when not asked.
    fail_on: dict
    warnings: tuple[str, ...] = field(compare=False)
    document: dict = field(repr=False, compare=False)

    @property
    def exit_code(self) -> int:
        """What `edgedeploy audit --fail-on` exits with: 0, or 3/4/5 by the worst placement found."""
        return int(self.fail_on.get("exit_code") or 0) if self.fail_on.get("failed") else 0

    def chip(self, chip_id: str) -> ChipAudit:
        """The audit of one chip; KeyError naming the chips audited."""
        for found in self.chips:
            if found.chip == chip_id:
                return found
        raise KeyError(f"{chip_id} was not audited here; these were: {', '.join(c.chip for c in self.chips)}")


def audit(
    model: str | Path | None = None,
    chips: Iterable[str] | str = ("all",),
    *,
    input_shapes: Mapping[str, Sequence[int]] | Sequence[str] | None = None,
    precision: str | None = None,
    fail_on: str | None = None,
    by: str = "op",
    detail: bool = False,
    confirm: bool = False,
    calib: str | Path | None = None,
    processes: int = 1,
    progress: ProgressCallback | None = None,
) -> AuditResult:
    """Place every node of `model` on each chip: on the accelerator, kept in float, falling back, or unsupported.

    `chips`: chip ids (or "all", the default: every chip of every target with rules). `fail_on`
    ("unsupported", "cpu-fallback" or "any") fills `result.fail_on` and `result.exit_code`; it
    does not raise. `detail`: every node of every chip in the document (else, per chip, the
    nodes with something to say). `confirm`: also run the real toolchain where it is installed
    and put its own verdict beside the prediction (`calib`: its calibration inputs, .npz).
    `processes=2` audits in a second, forked process where that is possible (Linux, 2 CPUs);
    the result is the same.
    """
    from edgedeploy.pipeline.audit import audit_chips, resolve_chips

    if fail_on not in (None, "cpu-fallback", "unsupported", "any"):
        raise OptionError(f"fail_on must be one of cpu-fallback, unsupported, any; not {fail_on!r}.")
    if by not in ("op", "node"):
        raise OptionError(f"by must be 'op' or 'node', not {by!r}.")
    wanted = (chips,) if isinstance(chips, str) else tuple(chips)
    with _Progress(progress).capturing_warnings() as echo:
        chosen, no_rules = resolve_chips(wanted)
        path = _model_path(model, echo)
        report = audit_chips(
            path,
            _input_shapes(input_shapes),
            chosen,
            no_rules,
            precision=precision,
            fail_on=fail_on,
            by=by,
            confirm=confirm,
            calib=str(_optional_path(calib)) if calib is not None else None,
            echo=echo,
            detail=detail or confirm,
            processes=processes,
        )
    return AuditResult(
        chips=tuple(ChipAudit.from_dict(doc) for doc in report["audits"]),
        no_rules=tuple(report["no_rules"]),
        fail_on=dict(report["fail_on"]),
        **_model_result(report, echo.warnings),
    )


# -- estimate -----------------------------------------------------------------------------------


def estimate(
    model: str | Path | None = None,
    chips: Iterable[str] | str = ("all",),
    *,
    input_shapes: Mapping[str, Sequence[int]] | Sequence[str] | None = None,
    precision: str | None = None,
    budget_ms: float | None = None,
    artifacts: str | Path | None = DEFAULT_OUT,
    progress: ProgressCallback | None = None,
) -> Estimate:
    """Estimate the latency per inference of `model` on each chip, with a range and the chip's typical error.

    A cost model on the audit's placements, fitted per chip to the vendors' published figures;
    the error is leave-one-model-out over those figures (docs/estimate.md). A chip with too few
    figures gets `latency_ms=None` and the `reason`. No toolchain runs. `budget_ms` marks which
    chips meet it (`meets_budget` in the document, `meeting()`). `artifacts`: the build folder
    whose earlier builds of this model give the toolchain's own estimate beside edgedeploy's
    (Vela's for the i.MX 93), read from their reports; None looks nowhere.
    """
    from edgedeploy.api_results import ChipEstimate, Estimate

    from edgedeploy.pipeline.audit import resolve_chips
    from edgedeploy.pipeline.estimate import estimate_model

    if budget_ms is not None and not budget_ms > 0:
        raise OptionError(f"budget_ms must be a positive number of milliseconds, not {budget_ms!r}.")
    wanted = (chips,) if isinstance(chips, str) else tuple(chips)
    with _Progress(progress).capturing_warnings() as echo:
        chosen, no_rules = resolve_chips(wanted)
        report = estimate_model(_model_path(model, echo), _input_shapes(input_shapes), chosen, precision=precision, budget_ms=budget_ms, artifacts_root=_optional_path(artifacts))
    report["no_rules"] = no_rules + report["no_rules"]
    return Estimate(
        chips=tuple(ChipEstimate.from_dict(doc) for doc in report["estimates"]),
        budget_ms=budget_ms,
        **_model_result(report, echo.warnings),
    )


# -- build and load_artifact --------------------------------------------------------------------


NOT_VERIFIED = "NOT VERIFIED: loaded with verify=False; the artifact's files were not checked against its manifest."


def load_artifact(path: str | Path, verify: bool = True) -> Artifact:
    """The artifact at `path` (a folder `build` wrote), its report and manifest read and checked.

    ArtifactError (exit 11) when it is not an artifact, is damaged, has a file changed, missing
    or added since the build (the manifest's hashes are checked first, as `measure` does), or
    has a report schema this edgedeploy does not read. `verify=False` skips the hashes: the
    Artifact's `warnings` then say it was not verified.
    """
    from edgedeploy.api_results import Artifact

    from edgedeploy.artifacts import check_manifest
    from edgedeploy.report.schema import load_report_file

    folder = Path(path).absolute()
    manifest = check_manifest(folder, None, verify_files=verify)
    report = load_report_file(folder / "report.json")
    convert = report.get("convert") or {}
    return Artifact(
        path=folder,
        chip=report["target"].get("chip") or manifest.get("target", {}).get("chip", ""),
        target=report["target"]["target"],
        status="built" if convert.get("status") == "built" else "generated only",
        accuracy=report.get("accuracy"),
        manifest=manifest,
        **_model_result(report, () if verify else (NOT_VERIFIED,)),
    )


def build(model: str | Path | None, chip: str, *, target_options: Any = None, progress: ProgressCallback | None = None, **options: Any) -> Artifact:
    """Build `model` for one chip: audit, convert with the vendor's toolchain, generate the project, verify.

    The artifact is written atomically to `out`/<model>/<chip>/ and never replaces an existing
    one unless `force`. `calib`/`eval`: .npz, a folder of .npy, or a folder of images (with
    `preprocess`, a spec string like the CLI's --preprocess or a PreprocessSpec); left out for
    the bundled sample, its own splits. `input_shapes`: a mapping, or the CLI's NAME=1x3x224x224
    strings. Any other keyword is an option of the chip's target, by its field name or its
    flag's as a keyword (`edgedeploy build --help` lists them per vendor:
    `--rknn-optimization-level` is `optimization_level=` or `rknn_optimization_level=`);
    `target_options`: that target's options object as a whole instead. A keyword that is
    neither is an OptionError naming it (and the nearest valid one). Raises the failure's
    EdgedeployError (ToolchainMissing, ModelError, ...), whose exit_code is the CLI's.

    The shared keywords (the signature) are `edgedeploy build`'s options, declared once in
    edgedeploy.pipeline.build_options.BuildOptions:
    """
    from edgedeploy.pipeline.build import run_build
    from edgedeploy.pipeline.build_options import BuildOptions
    from edgedeploy.targets import find_chip

    target, chip_info = find_chip(chip)
    shared = BuildOptions.keywords()
    own = {name: value for name, value in options.items() if name not in shared}
    chosen = _target_options(target, target_options, own, shared)
    build_options = BuildOptions.from_keywords({name: value for name, value in options.items() if name in shared}, target_options={target.id: chosen})
    with _Progress(progress).capturing_warnings() as echo:
        dest = run_build(_model_path(model, echo), chip_info.id, build_options, echo=echo, progress=echo.tool)
    built = load_artifact(dest)
    return _with_warnings(built, echo.warnings)


def _shared_build_keywords(function: Callable, options_type=None) -> Callable:
    """`function` (build) with its signature and docstring showing the shared options of
    BuildOptions (or `options_type`) as keywords, with their defaults and help: what
    `help(edgedeploy.build)`, an editor and the CLI (cli.options.api_keywords) read."""
    import inspect

    from edgedeploy.pipeline.build_options import BuildOptions

    shared = (options_type or BuildOptions).keyword_options()
    signature = inspect.signature(function)
    params = list(signature.parameters.values())
    keywords = [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default) for name, default, _ in shared]
    function.__signature__ = signature.replace(parameters=params[:2] + keywords + params[2:])
    function.__doc__ = f"{function.__doc__.rstrip()}\n\n" + "\n".join(f"    {name}: {meta['help']}" for name, _, meta in shared) + "\n"
    return function


# `build` gets its shared keywords (BuildOptions' fields) on first use, not when this module is
# imported: working them out imports edgedeploy.pipeline.build_options and builds its dataclass,
# 2-3 ms that `edgedeploy audit`, which imports this module, never needs (PEP 562).
_build_without_keywords = build
del build


# The results only other functions make, from edgedeploy.api_results on first use.
_RESULT_TYPES = ("ChipEstimate", "Estimate", "Artifact", "Measurement", "FarmMeasurement", "BenchResult")


def __getattr__(name: str):
    if name == "build":
        found = globals()["build"] = _shared_build_keywords(_build_without_keywords)
        return found
    if name in _RESULT_TYPES:
        from edgedeploy import api_results

        return getattr(api_results, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _target_options(target, whole: Any, given: dict, shared: Mapping[str, Any] = ()):
    """The target's options object: `whole` as it is, or one made from the field names given; a
    keyword that is neither the target's nor one of `shared` (build's) is one OptionError sentence."""
    if whole is not None:
        if given:
            raise OptionError("Give the target's options either as target_options= or by name, not both.")
        if not isinstance(whole, target.options_type):
            raise OptionError(f"target_options must be a {target.options_type.__name__} for {target.name}, not {type(whole).__name__}.")
        return whole
    from edgedeploy.pipeline.build_options import unknown_keyword_error

    declared = target.options_type.declared()
    # A field's name, or its flag's spelled as a keyword (--rknn-optimization-level: rknn_optimization_level).
    by_name = {f.name: f.name for f, _ in declared}
    by_name.update({meta["flag"].lstrip("-").replace("-", "_"): f.name for f, meta in declared})
    for name in given:
        if name not in by_name:
            listed = [*shared, *(f.name for f, _ in declared)]
            raise unknown_keyword_error(name, [*shared, *by_name], listed, f"edgedeploy.build or of the {target.name} target")
    return target.options_type.from_values({by_name[name]: value for name, value in given.items()})


def _with_warnings(artifact: Artifact, found: list[str]) -> Artifact:
    import dataclasses

    return dataclasses.replace(artifact, warnings=tuple(found)) if found else artifact


# -- measure ------------------------------------------------------------------------------------


def measure(
    artifact: Artifact | str | Path,
    device: Any = "local",
    *,
    inventory: str | Path | None = None,
    sessions: int = 3,
    warmup: int = 10,
    min_iterations: int = 50,
    min_duration_s: float = 1.0,
    timeout_s: float = 600.0,
    eval: str | Path | None = None,  # noqa: A002 - the CLI's --eval, by its name
    eval_count: int | None = 200,
    threads: int = 0,
    before: bool = True,
    flash: str = "auto",
    firmware_build: str | Path | None = None,
    reset: str = "auto",
    console: ProgressCallback | None = None,
    allow_partial: bool = False,
    progress: ProgressCallback | None = None,
) -> Measurement:
    """Run a built artifact on a device: latency before (the reference ONNX model on ONNX Runtime
    CPU there) and after (the artifact on its runtime), `sessions` (>= 3) separate processes each,
    and both outputs checked on the same inputs.

    `device`: a name of the device inventory (`inventory`, else the default file), `"local"` for
    this machine (host figures, labelled so), a board on a serial port as "CHIP@PORT", or a
    Device object. The record goes into ARTIFACT/measurements/ and ARTIFACT/report.json. When
    the device fails mid-way, the partial record is kept and DeviceError (exit 10) is raised,
    unless `allow_partial` (then `result.partial` is True and `result.error` says why).
    `flash`, `firmware_build`, `reset` and `console` (a callback for the board's console lines)
    apply to boards on a serial port only.
    """
    from edgedeploy.api_results import Artifact, Measurement

    from edgedeploy.devices import find_device
    from edgedeploy.measure.harness import SessionSettings
    from edgedeploy.pipeline.measure import MeasureRequest, run_measure
    from edgedeploy.targets import chip_ids

    folder = artifact.path if isinstance(artifact, Artifact) else Path(artifact).absolute()
    if isinstance(device, str):
        device = find_device(device, _optional_path(inventory), chip_ids())
    settings = SessionSettings(sessions=sessions, warmup=warmup, min_iterations=min_iterations, min_duration_s=min_duration_s, timeout_s=timeout_s)
    request = MeasureRequest(
        folder,
        device,
        settings,
        _optional_path(eval),
        eval_count,
        threads,
        before=before,
        flash=flash,
        firmware_build=_optional_path(firmware_build),
        reset=reset,
        console_echo=console,
    )
    with _Progress(progress).capturing_warnings() as echo:
        record = run_measure(request, echo=echo, raise_on_partial=False)
    measurement = Measurement(
        artifact=folder,
        device=device.name,
        partial=bool(record["partial"]),
        error=record.get("error"),
        latency=record["latency"],
        comparison=record.get("comparison"),
        accuracy=record.get("accuracy"),
        warnings=tuple(echo.warnings),
        document=record,
    )
    if measurement.partial and not allow_partial:
        raise measurement.partial_error()
    return measurement


# -- measure on a labgrid farm ------------------------------------------------------------------


def _farm_address(farm: str | None, device: Any, inventory: str | Path | None):
    """The coordinator's HOST:PORT and the labgrid inventory entry (None with a bare URL)."""
    from edgedeploy.devices import find_device
    from edgedeploy.devices.labgrid import parse_farm_url
    from edgedeploy.targets import chip_ids

    if farm and device is not None:
        raise OptionError("Give either a farm (labgrid://HOST:PORT) or a device of the inventory, not both.")
    if farm:
        return parse_farm_url(farm), None
    if device is None:
        raise OptionError("Give the labgrid farm: farm='labgrid://HOST:PORT', or device=NAME of a labgrid entry of the inventory.")
    if isinstance(device, str):
        device = find_device(device, _optional_path(inventory), chip_ids())
    if device.transport != "labgrid":
        raise OptionError(f"Device '{device.name}' is not a labgrid farm (its transport is {device.transport}); measure it with edgedeploy.measure.")
    return device.coordinator, device


def measure_farm(
    artifacts: Artifact | str | Path | Sequence[Artifact | str | Path],
    farm: str | None = None,
    *,
    device: Any = None,
    inventory: str | Path | None = None,
    place: str | None = None,
    parallel: int = 0,
    place_wait_s: float = 600.0,
    sessions: int | None = None,
    warmup: int | None = None,
    min_iterations: int | None = None,
    min_duration_s: float | None = None,
    timeout_s: float | None = None,
    eval: str | Path | None = None,  # noqa: A002 - the CLI's --eval, by its name
    eval_count: int | None = None,
    threads: int | None = None,
    before: bool = True,
    flash: str | None = None,
    firmware_build: str | Path | None = None,
    reset: str | None = None,
    console: bool = False,
    allow_partial: bool = False,
    progress: ProgressCallback | None = None,
) -> FarmMeasurement:
    """Measure artifacts on the boards of a labgrid farm, `parallel` at once (0: one per artifact):
    per artifact, a place tagged with its chip (chip=NAME; a generic artifact takes a Linux board)
    whose name matches `place` is acquired, measured on as `edgedeploy.measure` would, released.

    The farm is `farm` ("labgrid://HOST:PORT") or `device`, a labgrid entry of the inventory (its
    name, or a Device) that also says how to log in to its boards. A place someone else holds is
    waited for at most `place_wait_s`. The measuring options are measure's; one left None is the
    board run's default (a serial board's firmware has its sessions built in: `flash`,
    `firmware_build`, `reset`, `console` are for those). Each record goes into its artifact (its
    measurements/ and report.json, with the board's identity). When not every artifact was
    measured, DeviceError (exit 10) is raised after keeping what was, unless `allow_partial`
    (then `result.partial` is True and `result.error` says why).
    """
    from edgedeploy.api_results import Artifact, FarmMeasurement

    from edgedeploy.pipeline.farm import FarmRequest, child_arguments, measure_on_farm

    if parallel < 0:
        raise OptionError("parallel must be 0 (one board per artifact) or more.")
    if place_wait_s < 0:
        raise OptionError("place_wait_s must be 0 or more seconds.")
    address, entry = _farm_address(farm, device, inventory)
    if isinstance(artifacts, (str, Path, Artifact)):
        artifacts = [artifacts]
    folders = [a.path if isinstance(a, Artifact) else Path(a).absolute() for a in artifacts]
    given = dict(sessions=sessions, warmup=warmup, min_iterations=min_iterations, min_duration_s=min_duration_s, timeout_s=timeout_s, eval=_optional_path(eval), eval_count=eval_count, threads=threads, before=before)
    ssh_args, serial_args = child_arguments({**given, "flash": flash, "firmware_build": _optional_path(firmware_build), "reset": reset, "console": console})
    request = FarmRequest(
        artifacts=folders,
        address=address,
        place_pattern=place or (entry.place if entry is not None else None),
        parallel=parallel,
        place_wait_s=place_wait_s,
        python=entry.python if entry is not None else "python3",
        ssh_options=tuple(entry.ssh_options) if entry is not None else (),
        allow_commands=entry.allow_commands if entry is not None else False,
        workdir=entry.workdir if entry is not None else None,
        user=entry.user if entry is not None else None,
        ssh_args=ssh_args,
        serial_args=serial_args,
        session_timeout_s=timeout_s if timeout_s is not None else 600.0,
        sessions=sessions if sessions is not None else 3,
    )
    with _Progress(progress).capturing_warnings() as echo:
        report = measure_on_farm(request, echo=echo)
    result = FarmMeasurement(report["farm"]["url"], tuple(report["runs"]), bool(report["partial"]), report["error"], report["wall_s"], tuple(echo.warnings), report)
    if report["error"] and not allow_partial:
        raise result.partial_error()
    return result


# -- bench --------------------------------------------------------------------------------------


def bench(
    model: str | Path | None = None,
    backends: Iterable[str] | str = ("ort-cpu",),
    *,
    input_shapes: Mapping[str, Sequence[int]] | Sequence[str] | None = None,
    batch: int | None = None,
    precision: str = "fp32",
    threads: int | None = None,
    sessions: int = 3,
    warmup: int | None = None,
    min_iterations: int | None = None,
    min_duration_s: float | None = None,
    keep_samples: bool = False,
    torch_python: str | Path | None = None,
    torch_model: str | Path | None = None,
    shared_compile_cache: bool = False,
    timeout_s: float = 900.0,
    progress: ProgressCallback | None = None,
) -> BenchResult:
    """Time `model` on this machine's backends: warm-up, timed iterations, `sessions` (>= 3) separate processes each.

    `backends`: names as `edgedeploy bench --help` lists them ("ort-cpu", "torch-compile-cpu",
    ..., "all" for every one installed here). A backend that cannot run here is in `skipped`,
    one that failed in `failed`, with the reason; neither raises.
    """
    from edgedeploy.api_results import BenchResult

    from edgedeploy.measure import protocol
    from edgedeploy.measure.harness import SessionPlan
    from edgedeploy.pipeline.bench import BenchOptions, run_bench

    plan = SessionPlan(
        sessions=sessions,
        warmup=protocol.DEFAULT_WARMUP if warmup is None else warmup,
        min_iterations=protocol.DEFAULT_MIN_ITERATIONS if min_iterations is None else min_iterations,
        min_duration_s=protocol.DEFAULT_MIN_DURATION_S if min_duration_s is None else min_duration_s,
        keep_samples=keep_samples,
    )
    options = BenchOptions(
        backends=(backends,) if isinstance(backends, str) else tuple(backends),
        input_shapes=_input_shapes(input_shapes),
        batch=batch,
        precision=precision,
        threads=threads,
        plan=plan,
        torch_python=_optional_path(torch_python),
        torch_model=_optional_path(torch_model),
        shared_compile_cache=shared_compile_cache,
        session_timeout_s=timeout_s,
    )
    with _Progress(progress).capturing_warnings() as echo:
        doc = run_bench(_model_path(model, echo), options, echo=echo)
    return BenchResult(
        results=tuple(doc["results"]),
        skipped=tuple(doc["skipped"]),
        failed=tuple(doc["failed"]),
        fastest=(doc.get("comparison") or {}).get("fastest"),
        **_model_result(doc, echo.warnings),
    )
