"""`edgedeploy bench`: time one model on every backend of this machine, and name the fastest.

For each backend asked for: decide whether it can run here (and say why not), then run its
sessions (harness.run_sessions, each a separate process with the backend's interpreter) and
make an `edgedeploy.latency/1` measurement. The comparison divides medians of session medians,
and only between measurements whose scopes differ in the backend alone (schema.ratio).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from edgedeploy import __version__
from edgedeploy.errors import EdgedeployError, ModelError, OptionError, ToolchainError
from edgedeploy.measure import backends as B
from edgedeploy.measure import protocol
from edgedeploy.measure.harness import SessionPlan, make_measurement, run_sessions
from edgedeploy.measure.schema import BENCH_SCHEMA, ScopeMismatch, make_scope, ratio, scope_differences
from edgedeploy.records import record_fields
from edgedeploy.targets import all_targets
from edgedeploy.targets.base import Capability

PRECISIONS = ("fp32", "fp16")
ONNX_FLOAT_PRECISION = {"float": "fp32", "float32": "fp32", "float16": "fp16", "double": "fp64", "bfloat16": "bf16"}
DEFAULT_SESSION_TIMEOUT_S = 900.0
TORCH_PYTHON_ENV = "EDGEDEPLOY_TORCH_PYTHON"


@dataclass
class BenchOptions:
    backends: tuple[str, ...] = ("ort-cpu",)
    input_shapes: dict = field(default_factory=dict)
    batch: int | None = None
    precision: str = "fp32"
    threads: int | None = None
    plan: SessionPlan = field(default_factory=SessionPlan)
    torch_python: Path | None = None
    torch_model: Path | None = None  # a .pt2 of the same model for the torch backends
    shared_compile_cache: bool = False
    workdir: Path | None = None
    session_timeout_s: float = DEFAULT_SESSION_TIMEOUT_S
    seed: int = 0

    def to_dict(self) -> dict:
        return {
            "backends": list(self.backends),
            "input_shapes": {k: list(v) for k, v in self.input_shapes.items()},
            **record_fields(self, "batch", "precision", "threads"),
            "protocol": self.plan.to_dict(),
            "torch_python": str(self.torch_python) if self.torch_python else None,
            "torch_model": str(self.torch_model) if self.torch_model else None,
            "shared_compile_cache": self.shared_compile_cache,
        }


@dataclass
class ModelUnderTest:
    """The model as the backends see it: format, pinned file, inputs (static shapes), batch."""

    name: str
    sha256: str
    format: str  # onnx | pt2
    path: Path  # the user's file
    run_path: Path  # what the sessions load (the pinned ONNX copy, or the .pt2 itself)
    inputs: list[dict]  # {"name", "shape", "dtype"}
    precision: str  # the arithmetic the model's own tensors use (fp32 for a float32 ONNX model)
    torch_program: dict | None = None  # a verified .pt2 of the same function for the torch backends

    @property
    def batch(self) -> int:
        shape = self.inputs[0]["shape"] if self.inputs else []
        return int(shape[0]) if shape else 1

    @property
    def input_shapes(self) -> dict:
        return {i["name"]: list(i["shape"]) for i in self.inputs}

    def describe(self) -> dict:
        described = {"name": self.name, "sha256": self.sha256, "format": self.format, "path": str(self.path)}
        if self.torch_program:
            described["torch_program"] = self.torch_program
        return described

    def torch_source(self) -> dict:
        """What the torch backends load: the verified .pt2 if one was given, else this model itself."""
        if self.torch_program:
            return {"kind": "pt2", "path": self.torch_program["path"]}
        return {"kind": self.format, "path": str(self.run_path)}


class BenchRun:
    """One `edgedeploy bench` invocation: its options, work folder, and what it found out."""

    def __init__(self, options: BenchOptions, workdir: Path, echo: Callable[[str], None]):
        self.options = options
        self.workdir = workdir
        self.echo = echo
        self.device = protocol.describe_host(include_accelerators=True)
        self.threads = options.threads or protocol.usable_cores()
        self._torch_probe: dict | None = None
        self._torch_probe_error: str | None = None

    # -- interpreters -------------------------------------------------------------------
    def torch_python(self) -> tuple[Path | None, str | None]:
        """The interpreter for torch backends, or None and why there is none."""
        given = self.options.torch_python or (Path(os.environ[TORCH_PYTHON_ENV]) if os.environ.get(TORCH_PYTHON_ENV) else None)
        if given is not None:
            if not Path(given).exists():
                return None, f"the torch interpreter {given} does not exist"
            return Path(given), None
        status = B.TORCH_TOOLCHAIN.status()
        if not status.installed:
            return None, f"the torch toolchain is {status.detail} (or name an interpreter with torch via --torch-python)"
        return B.TORCH_TOOLCHAIN.python(), None

    def torch_probe(self) -> tuple[dict | None, str | None]:
        if self._torch_probe is None and self._torch_probe_error is None:
            python, why = self.torch_python()
            if python is None:
                self._torch_probe_error = why
            else:
                self.echo("bench: probing the torch environment (torch, onnx2torch, CUDA)")
                try:
                    from edgedeploy.toolchains.executor import Executor

                    self._torch_probe = Executor(self.workdir / "torch-probe.log", 300).run_worker(python, B.TORCH_WORKER, {"action": "probe"}, self.workdir / "torch-probe", label="torch")
                except ToolchainError as exc:
                    self._torch_probe_error = f"the torch environment does not work: {_first_line(str(exc))}"
        return self._torch_probe, self._torch_probe_error

    # -- decisions ----------------------------------------------------------------------
    def skip_reason(self, backend: B.Backend, model: ModelUnderTest) -> str | None:
        """Why `backend` cannot run this model here, or None when it can."""
        want = self.options.precision
        if backend.not_timed is not None:
            return backend.not_timed
        if backend.family == "ort":
            import onnxruntime as ort

            provider = backend.options["provider"]
            available = ort.get_available_providers()
            if provider not in available:
                return f"this onnxruntime {ort.__version__} build has no {provider} (it has {', '.join(available)})"
            if provider in B.ORT_NOT_LOCAL:
                return f"{provider}: {B.ORT_NOT_LOCAL[provider]}"
            if model.format != "onnx":
                return "ONNX Runtime needs an ONNX model, and MODEL is a .pt2"
            if model.precision != want:
                return f"ONNX Runtime runs the model in its own precision ({model.precision}); for {want}, give a {want} ONNX model"
            return None
        if backend.toolchain is not None:
            if model.format != "onnx":
                return f"{backend.label} converts an ONNX model, and MODEL is a .pt2"
            if want not in backend.precisions:
                return f"{backend.name} times {' and '.join(backend.precisions)} only; {want} is not measured there"
            status = backend.toolchain.status()
            if not status.installed:
                return f"the {backend.toolchain.name} toolchain is {status.detail}"
            return None
        if backend.family == "torch":
            probe, why = self.torch_probe()
            if probe is None:
                return why
            if model.format == "onnx" and not model.torch_program and probe.get("onnx2torch_error"):
                return f"onnx2torch does not import in the torch environment: {probe['onnx2torch_error']}"
            if backend.unit == "cuda" and not probe.get("cuda_available"):
                return f"torch {probe.get('torch')} reports no CUDA device (torch.cuda.is_available() is False)"
            if want == "fp16" and backend.unit == "cpu":
                return "fp16 is measured on CUDA only: on a CPU, torch runs most fp16 kernels through slow fallbacks, which says nothing about fp16 hardware"
            return None
        return f"unknown backend family {backend.family}"

    # -- running ------------------------------------------------------------------------
    def measure(self, backend: B.Backend, model: ModelUnderTest) -> dict:
        precision = self.options.precision
        scope = make_scope(
            {"name": model.name, "sha256": model.sha256, "format": model.format},
            model.input_shapes,
            model.batch,
            precision,
            backend.name,
            self.threads,
            self.device,
        )
        work = self.workdir / backend.name
        base = {"scope": scope, "batch": model.batch, "threads": self.threads, "seed": self.options.seed}
        timeout = self.options.session_timeout_s
        plan = self.options.plan
        if backend.family == "ort":
            python = Path(sys.executable)
            request = dict(base, model_path=str(model.run_path), provider=backend.options["provider"], inputs=model.inputs)
            sessions = run_sessions(python, B.ORT_WORKER, request, plan, work, backend.name, timeout, self.echo)
        elif backend.family == "torch":
            python, _ = self.torch_python()
            request = dict(
                base,
                action="session",
                source=model.torch_source(),
                device=backend.options["device"],
                mode=backend.options["mode"],
                precision=precision,
                inputs=model.inputs,
                private_compile_cache=not self.options.shared_compile_cache,
                compile_cache_dir=str(self.workdir / "torch-compile-cache"),
            )
            sessions = run_sessions(python, B.TORCH_WORKER, request, plan, work, backend.name, timeout, self.echo)
        elif backend.toolchain is not None:
            from edgedeploy.toolchains.executor import Executor

            python = backend.toolchain.require()
            self.echo(f"  {backend.name}: converting the model in the {backend.toolchain.name} environment")
            converted = Executor(work / "convert.log", timeout).run_worker(python, backend.worker, {"action": "convert", "model_path": str(model.run_path)}, work / "convert", label=backend.toolchain.name)
            request = dict(base, action="session", **converted)
            sessions = run_sessions(python, backend.worker, request, plan, work, backend.name, timeout, self.echo)
        else:  # pragma: no cover - skip_reason stops these first
            raise EdgedeployError(f"{backend.name} cannot be timed")
        first = sessions[0]
        backend_info = dict(backend.describe(), libraries=first.get("libraries", {}), detail=first.get("detail", {}))
        environment = dict(self.device, threads=self.threads, libraries=first.get("libraries", {}))
        return make_measurement(scope, backend_info, plan, sessions, environment)


def declared_backends() -> list[B.Backend]:
    """The backends the registered targets declare (Capability.BENCH)."""
    return [backend for target in all_targets() if target.has(Capability.BENCH) for backend in target.bench_backends()]


def _first_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[0] if lines else text


def resolve_backends(requested: tuple[str, ...]) -> list[B.Backend]:
    """The Backend objects for --backend values (names, comma lists, `all`); OptionError on an unknown name."""
    import onnxruntime as ort

    providers = ort.get_available_providers()
    declared = declared_backends()
    catalogue = B.catalogue(providers, declared)
    by_name = {b.name: b for b in catalogue}
    for name, unit in B.ORT_PROVIDER_NAMES.values():
        if name not in by_name:
            provider = next(p for p, (n, _) in B.ORT_PROVIDER_NAMES.items() if n == name)
            by_name[name] = B.Backend(name, "ONNX Runtime " + provider.replace("ExecutionProvider", ""), "ort", unit, options={"provider": provider})
    names: list[str] = []
    for value in requested:
        for part in value.split(","):
            part = part.strip().lower()
            if part:
                names.append(part)
    if not names:
        raise OptionError("Name at least one backend with --backend (or `all`).")
    if "all" in names:
        return catalogue
    chosen = []
    for name in names:
        if name not in by_name:
            raise OptionError(f"Unknown backend '{name}'. Known backends: {', '.join(B.known_names(providers, declared))}, or all.")
        if by_name[name] not in chosen:
            chosen.append(by_name[name])
    return chosen


def load_model_under_test(path: Path, options: BenchOptions, run: BenchRun) -> ModelUnderTest:
    """Load the ONNX model (pinned to static shapes, at --batch) or describe the .pt2; one clear error if it is bad."""
    if path.suffix.lower() == ".pt2":
        return _load_pt2(path, options, run)
    from edgedeploy.model import load_model
    from edgedeploy.model.shapes import dims_of
    from edgedeploy.model.stats import dtype_name

    import onnx

    raw = load_model(path)
    pins = dict(options.input_shapes)
    if "" in pins:
        real = raw.graph_inputs()
        if len(real) != 1:
            raise OptionError("--input-shape without NAME= only works for a model with one input.")
        pins[real[0].name] = pins.pop("")
    if options.batch is not None:
        for vi in raw.graph_inputs():
            dims = list(dims_of(vi) or ())
            if not dims:
                continue
            if vi.name in pins:
                if pins[vi.name][0] != options.batch:
                    raise OptionError(f"--batch {options.batch} contradicts --input-shape {vi.name}={'x'.join(map(str, pins[vi.name]))}.")
                continue
            if isinstance(dims[0], int) and dims[0] != options.batch:
                raise OptionError(f"{path.name}: input '{vi.name}' has a fixed batch of {dims[0]}; --batch {options.batch} cannot change it.")
            if not isinstance(dims[0], int):
                if any(not isinstance(d, int) for d in dims[1:]):
                    raise OptionError(f"{path.name}: input '{vi.name}' has other dynamic dimensions too; pin its whole shape with --input-shape.")
                pins[vi.name] = (options.batch, *dims[1:])
    loaded = load_model(path, pins, require_static=True)
    for name, dims in loaded.auto_pinned.items():
        run.echo(f"bench: input '{name}' has a dynamic batch dimension; timing {'x'.join(map(str, dims))} (choose another with --batch)")
    inputs = []
    for vi in loaded.graph_inputs():
        inputs.append({"name": vi.name, "shape": [int(d) for d in dims_of(vi)], "dtype": _numpy_dtype(dtype_name(vi.type.tensor_type.elem_type))})
    run_path = run.workdir / "model.onnx"
    onnx.save(loaded.proto, str(run_path))
    return ModelUnderTest(loaded.name, loaded.sha256, "onnx", loaded.path, run_path, inputs, _onnx_precision(loaded.proto))


def _numpy_dtype(onnx_name: str) -> str:
    return {"float": "float32", "double": "float64", "float16": "float16", "bool": "bool"}.get(onnx_name, onnx_name)


def _onnx_precision(proto) -> str:
    """fp32 / fp16 / ...: the float type most of the model's weights are stored in (fp32 if none)."""
    from collections import Counter

    from edgedeploy.model.stats import dtype_name

    counts: Counter = Counter()
    for tensor in proto.graph.initializer:
        name = dtype_name(tensor.data_type)
        if name.startswith(("float", "bfloat")):
            counts[name] += 1
    if not counts:
        return "fp32"
    return ONNX_FLOAT_PRECISION.get(counts.most_common(1)[0][0], counts.most_common(1)[0][0])


def _load_pt2(path: Path, options: BenchOptions, run: BenchRun) -> ModelUnderTest:
    import hashlib

    if not path.is_file():
        raise ModelError(f"Model file not found: {path}.")
    if not zipfile.is_zipfile(path):
        raise ModelError(f"{path.name} is not a torch.export archive: a .pt2 file is a zip archive written by torch.export.save.")
    with zipfile.ZipFile(path) as archive:
        names = archive.namelist()
    if not any(n.endswith("archive_format") or "serialized_exported_program" in n or "/models/" in n for n in names):
        raise ModelError(f"{path.name} is a zip archive but not one written by torch.export.save (no exported program inside).")
    python, why = run.torch_python()
    if python is None:
        raise ToolchainError(f"A .pt2 model runs only on the torch backends, and {why}.")
    from edgedeploy.toolchains.executor import Executor

    try:
        described = Executor(run.workdir / "pt2.log", 300).run_worker(python, B.TORCH_WORKER, {"action": "describe_pt2", "path": str(path.resolve())}, run.workdir / "pt2", label="torch")
    except ToolchainError as exc:
        raise ModelError(f"{path.name} could not be loaded with torch.export.load: {_first_line(str(exc)).split(': ', 1)[-1]}") from None
    run._torch_probe = described.get("probe")
    inputs = described["inputs"]
    shapes = dict(options.input_shapes)
    if "" in shapes and len(inputs) == 1:
        shapes[inputs[0]["name"]] = shapes.pop("")
    for spec in inputs:
        if spec["name"] in shapes:
            spec["shape"] = list(shapes.pop(spec["name"]))
        elif options.batch is not None and spec["shape"]:
            spec["shape"][0] = options.batch
    if shapes:
        raise OptionError(f"--input-shape names {', '.join(shapes)}, which {path.name} does not have (inputs: {', '.join(i['name'] for i in inputs)}).")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    floats = {i["dtype"] for i in inputs if i["dtype"].startswith(("float", "bfloat"))}
    precision = "fp16" if floats == {"float16"} else "fp32"
    return ModelUnderTest(path.stem, digest, "pt2", path.resolve(), path.resolve(), inputs, precision)


# A .pt2 given for the torch backends must compute what the ONNX model computes: largest output
# difference allowed on the check input, relative to the largest reference output magnitude.
TORCH_PROGRAM_RTOL = 1e-3


def verify_torch_program(model: ModelUnderTest, pt2: Path, run: BenchRun) -> dict:
    """Check that `pt2` gives the ONNX model's outputs on one seeded input; return its description.

    Both run in fp32 on the CPU (ONNX Runtime for the ONNX model, torch for the program), so
    the torch backends may time the program as the same model, with the same scope.
    """
    import hashlib

    import numpy as np

    from edgedeploy.measure.reference import ReferenceRunner

    if model.format != "onnx":
        raise OptionError("--torch-model goes with an ONNX MODEL (the .pt2 stands in for it on the torch backends).")
    program = _load_pt2(pt2, BenchOptions(batch=None), run)
    ours = {i["name"]: i["shape"] for i in model.inputs}
    theirs = [i["shape"] for i in program.inputs]
    if sorted(map(tuple, ours.values())) != sorted(map(tuple, theirs)):
        raise OptionError(f"{pt2.name} takes inputs of shape {theirs}, the ONNX model {list(ours.values())} at this batch; export the .pt2 at the benchmark's shape.")
    rng = np.random.default_rng(run.options.seed)
    feeds = {i["name"]: rng.random(i["shape"], dtype=np.float32).astype(i["dtype"]) for i in model.inputs}
    work = run.workdir / "torch-model-check"
    work.mkdir(parents=True, exist_ok=True)
    np.savez(work / "inputs.npz", *[feeds[i["name"]] for i in model.inputs])
    reference = list(ReferenceRunner(model.run_path).run(feeds).outputs.values())
    from edgedeploy.toolchains.executor import Executor

    python, _ = run.torch_python()
    request = {"action": "outputs", "path": str(pt2.resolve()), "inputs_npz": str(work / "inputs.npz"), "out_npz": str(work / "outputs.npz")}
    got = Executor(work / "check.log", 600).run_worker(python, B.TORCH_WORKER, request, work, label="torch")
    with np.load(got["out_npz"]) as archive:
        outputs = [archive[f"arr_{k}"] for k in range(len(archive.files))]
    if len(outputs) != len(reference):
        raise OptionError(f"{pt2.name} returns {len(outputs)} outputs, the ONNX model {len(reference)}: they are not the same model.")
    worst = 0.0
    for ref, out in zip(reference, outputs):
        if ref.shape != out.shape:
            raise OptionError(f"{pt2.name} returns shape {list(out.shape)} where the ONNX model returns {list(ref.shape)}: they are not the same model.")
        scale = max(1.0, float(np.max(np.abs(ref))))
        worst = max(worst, float(np.max(np.abs(ref.astype(np.float64) - out))) / scale)
    if worst > TORCH_PROGRAM_RTOL:
        raise OptionError(f"{pt2.name} does not compute what {model.path.name} computes: outputs differ by {worst:.3g} (relative), more than {TORCH_PROGRAM_RTOL:g}.")
    run.echo(f"bench: {pt2.name} matches the ONNX model on a seeded input (max relative difference {worst:.2g}); the torch backends time it")
    return {"path": str(pt2.resolve()), "sha256": hashlib.sha256(pt2.read_bytes()).hexdigest(), "max_relative_difference": worst, "checked_with": "one seeded uniform [0,1) input, fp32, CPU"}


def compare(results: list[dict]) -> dict:
    """The fastest runtime backend and every other one's ratio to it, same scope except the backend."""
    comparison: dict = {
        "basis": "median of session medians",
        "differs_only_in": "backend",
        "scope": None,
        "fastest": None,
        "entries": [],
        "excluded": [],
    }
    runtimes = []
    for m in results:
        if m["backend"]["kind"] != "runtime":
            comparison["excluded"].append({"backend": m["scope"]["backend"], "reason": "a simulator or estimate, not a runtime of this device"})
        else:
            runtimes.append(m)
    if not runtimes:
        return comparison
    fastest = min(runtimes, key=lambda m: m["summary"]["median_us"])
    comparison["fastest"] = fastest["scope"]["backend"]
    comparison["scope"] = {k: v for k, v in fastest["scope"].items() if k != "backend"}
    low, high = fastest["summary"]["session_median_range_us"]
    for m in runtimes:
        try:
            r = ratio(m, fastest, "backend")
        except ScopeMismatch:
            diffs = [d for d in scope_differences(m["scope"], fastest["scope"]) if d != "backend"]
            comparison["excluded"].append({"backend": m["scope"]["backend"], "reason": f"its scope differs from the fastest's in {', '.join(diffs)}, not only the backend"})
            continue
        m_low, m_high = m["summary"]["session_median_range_us"]
        comparison["entries"].append(
            {
                "backend": m["scope"]["backend"],
                "median_us": m["summary"]["median_us"],
                "session_median_range_us": [m_low, m_high],
                "ratio_to_fastest": r,
                # Overlapping session ranges: the order of these two is within the noise.
                "ranges_overlap_fastest": m is not fastest and m_low <= high and low <= m_high,
            }
        )
    comparison["entries"].sort(key=lambda e: e["ratio_to_fastest"])
    return comparison


def run_bench(model_path: Path, options: BenchOptions, echo: Callable[[str], None] = lambda line: None) -> dict:
    """Run the benchmark and return the `edgedeploy.bench/1` document."""
    options.plan.check()
    if options.precision not in PRECISIONS:
        raise OptionError(f"--precision must be one of {', '.join(PRECISIONS)}, not {options.precision}.")
    if options.threads is not None and options.threads < 1:
        raise OptionError("--threads must be at least 1.")
    backends = resolve_backends(options.backends)
    with tempfile.TemporaryDirectory(prefix="edgedeploy-bench-") as tmp:
        workdir = Path(options.workdir) if options.workdir else Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        run = BenchRun(options, workdir, echo)
        model = load_model_under_test(Path(model_path), options, run)
        if options.torch_model is not None:
            model.torch_program = verify_torch_program(model, Path(options.torch_model), run)
        echo(
            f"bench: {model.name} (sha256 {model.sha256[:12]}, {model.format}) "
            + ", ".join(f"{i['name']}={'x'.join(map(str, i['shape']))}" for i in model.inputs)
            + f", {options.precision}, {run.threads} threads on {run.device['cpu_model']}"
        )
        results, skipped, failed = [], [], []
        for backend in backends:
            why = run.skip_reason(backend, model)
            if why:
                echo(f"bench: skipping {backend.name}: {why}")
                skipped.append({"backend": backend.name, "label": backend.label, "kind": backend.kind, "reason": why})
                continue
            echo(f"bench: {backend.name} ({backend.label}): {options.plan.sessions} sessions")
            started = time.monotonic()
            try:
                results.append(run.measure(backend, model))
            except EdgedeployError as exc:
                echo(f"bench: {backend.name} failed: {_first_line(str(exc))}")
                failed.append({"backend": backend.name, "label": backend.label, "error": str(exc)})
                continue
            echo(f"bench: {backend.name} done in {time.monotonic() - started:.1f} s")
    return {
        "schema": BENCH_SCHEMA,
        "edgedeploy_version": __version__,
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "model": model.describe(),
        "request": options.to_dict(),
        "device": run.device,
        "results": results,
        "skipped": skipped,
        "failed": failed,
        "comparison": compare(results),
    }
