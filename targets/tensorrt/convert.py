"""The TensorRT target's conversion and other stages: convert (the engine on the device, its placement and provenance),
codegen (the runners), the runner for `edgedeploy measure`, and `audit --confirm`. See build.py
for the build's steps."""

from __future__ import annotations

import hashlib
import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from edgedeploy.artifacts import atomic_write_json, check_manifest
from edgedeploy.errors import ArtifactError, DeviceError, ToolchainFailed
from edgedeploy.model import named_copy
from edgedeploy.targets.base import ConvertResult, RunnerSpec
from edgedeploy.toolchains.executor import Executor
from edgedeploy.targets.tensorrt import build as b
from edgedeploy.targets.tensorrt.codegen import ORT_RUNNER_FILES, PY_RUNNER_FILES, RUNNER_DIR, write_runners
from edgedeploy.targets.tensorrt.device import Provenance, check_device_chip
from edgedeploy.targets.tensorrt.trtexec_output import parse_layer_info, parse_profile_json, parse_trtexec_log
from edgedeploy.targets.tensorrt.verdict import build_failure, toolchain_verdict as verdict_from_build

INPUTS_FILE = "inputs.npz"


def _probe(transport, plan, device):
    """The device's fingerprint (board, TensorRT, JetPack), probed in a scratch folder removed afterwards."""
    scratch = transport.make_workdir()
    try:
        return b.probe_device(transport, scratch, plan, device.name)
    finally:
        transport.cleanup(scratch)


def _batch_of(model) -> int:
    first = model.graph_inputs()[0]
    dims = first.type.tensor_type.shape.dim
    return int(dims[0].dim_value) if dims and dims[0].dim_value > 0 else 1


def _input_shapes(model) -> dict:
    return {vi.name: [d.dim_value for d in vi.type.tensor_type.shape.dim] for vi in model.graph_inputs()}


@dataclass
class _Built:
    """What the build on the device gave: where, for which device, from the cache or not."""

    device: object
    fingerprint: object
    ruleset: object
    key: str
    from_cache: bool
    wall_s: float


def convert(ctx) -> ConvertResult:
    """The TensorRT build (build.py's module docstring lists the steps).

    TensorRT runs where it is installed (trtexec on the Jetson over SSH): not an edgedeploy
    worker, so this target converts itself (build_request is None) through the executor's
    `remote` (one time-out, the remote process group stopped, the log kept).
    """
    plan = b.plan_from_options(ctx.chip.id, ctx.precision, ctx.options.to_dict(), ctx.executor.timeout_s)
    engine_dir = ctx.workdir / b.ENGINE_DIR
    engine_dir.mkdir(parents=True, exist_ok=True)
    proto = named_copy(ctx.model.proto)
    model_bytes = proto.SerializeToString()
    model_sha = b.sha256_bytes(model_bytes)
    built = _build_on_device(ctx, plan, model_bytes, model_sha, engine_dir)
    device, fingerprint = built.device, built.fingerprint
    log, layers, profile = _read_engine(engine_dir, device.name)
    if not built.from_cache:
        meta = {"model_sha256": model_sha, "plan": plan.cache_fields(), "device": fingerprint.to_dict(), "built_on": device.name}
        b.cache_store(built.key, engine_dir, [p.name for p in engine_dir.iterdir() if p.is_file()], meta)
    verdict = verdict_from_build(proto.graph, log, layers, dla=plan.dla_core is not None, trt_version=fingerprint.trt_version)
    provenance = Provenance(
        trt_version=log.trt_version or fingerprint.trt_version,
        gpu_name=log.device_name,
        compute_capability=log.compute_capability,
        l4t=fingerprint.l4t,
        jetpack=fingerprint.jetpack,
        board=fingerprint.board,
        dla_core=plan.dla_core,
        precision=plan.precision,
    )
    scope = _scope(ctx, plan, device.name)
    _write_engine_info(ctx, engine_dir, provenance, fingerprint, scope, model_sha, built.key)
    return ConvertResult(
        status="built",
        toolchain=f"TensorRT {provenance.trt_version or '?'}",
        versions={"tensorrt": provenance.trt_version},
        files={"model": f"{b.ENGINE_DIR}/{b.ENGINE_FILE}", "log": f"{b.ENGINE_DIR}/{b.LOG_FILE}"},
        verdict=verdict,
        rules=built.ruleset,
        sections={"tensorrt": _tensorrt_section(built, provenance, scope, log, layers, profile)},
        details={"plan": b.plan_to_dict(plan), "scope": scope},
        manifest={
            "provenance": provenance.to_dict(),
            "fingerprint": fingerprint.to_dict(),
            "plan": b.plan_to_dict(plan),
            "trtexec_argv": b.trtexec_argv(plan, fingerprint.trt_version),
            "cache_key": built.key,
            "from_cache": built.from_cache,
            "built_on": device.name,
        },
    )


def _build_on_device(ctx, plan, model_bytes: bytes, model_sha: str, engine_dir: Path) -> _Built:
    """Probe the device, pick its rule table, and build the engine there (or take it from the cache)."""
    from edgedeploy.targets.tensorrt.rules import normalize_trt_version

    device, transport = b.open_build_device(ctx.device, ctx.chip.id, plan)
    try:
        fingerprint = _probe(transport, plan, device)
        check_device_chip(fingerprint, ctx.chip.id, device.name)
        ctx.echo(
            f"tensorrt: '{device.name}' is {fingerprint.board or 'a machine'} with TensorRT {fingerprint.trt_version or '?'}"
            + (f", JetPack {fingerprint.jetpack}" if fingerprint.jetpack else "")
            + (f", L4T {fingerprint.l4t}" if fingerprint.l4t else "")
        )
        # The rule table of the device's TensorRT (or the one asked for), for the core's audit.
        rules_version = plan.rules_version or normalize_trt_version(fingerprint.trt_version)
        ruleset = ctx.target.module("rules").rule_set(ctx.chip.id, trt_version=rules_version, dla=plan.dla_core is not None)
        calib = b.calibration_arrays(ctx) if plan.precision == "int8" else None
        key = b.cache_key(model_sha, plan, fingerprint.digest(), _calibration_sha(calib))
        cached = None if plan.rebuild else b.cache_lookup(key)
        if cached is not None:
            ctx.echo(f"tensorrt: reusing the engine built earlier for this model, options and device (cache {key[:12]})")
            for path in cached.iterdir():
                if path.name != "cache_entry.json":
                    shutil.copyfile(path, engine_dir / path.name)
            return _Built(device, fingerprint, ruleset, key, True, 0.0)
        result = b.run_remote_build(ctx.executor, transport, device.name, plan, model_bytes, calib, fingerprint.trt_version, engine_dir, ctx.echo)
        return _Built(device, fingerprint, ruleset, key, False, result.wall_s)
    finally:
        close = getattr(transport, "close", None)
        if close is not None:
            close()


def _calibration_sha(calib: dict | None) -> str | None:
    """The calibration data's digest (a part of the engine cache's key)."""
    if calib is None:
        return None
    digest = hashlib.sha256()
    for name in sorted(calib):
        digest.update(name.encode())
        digest.update(calib[name].tobytes())
    return digest.hexdigest()


def _read_engine(engine_dir: Path, device_name: str):
    """(trtexec's log, its layer table, its profile); a build that failed is a ToolchainFailed with trtexec's reason."""
    log = parse_trtexec_log((engine_dir / b.LOG_FILE).read_text(errors="replace"))
    failure = build_failure(log) or (None if (engine_dir / b.ENGINE_FILE).is_file() else "trtexec wrote no engine")
    if failure is not None:
        raise ToolchainFailed(f"TensorRT could not build the engine on '{device_name}'", toolchain="tensorrt", final_line=failure, log_path=f"{b.ENGINE_DIR}/{b.LOG_FILE} in the failed artifact")
    layers = parse_layer_info((engine_dir / b.LAYERS_FILE).read_text()) if (engine_dir / b.LAYERS_FILE).is_file() else None
    profile = parse_profile_json((engine_dir / b.PROFILE_FILE).read_text()) if (engine_dir / b.PROFILE_FILE).is_file() else None
    return log, layers, profile


def _scope(ctx, plan, device_name: str) -> dict:
    """What the engine's figures are figures of (the measurement scope)."""
    return {
        "model_sha256": ctx.model.sha256,
        "input_shapes": _input_shapes(ctx.model),
        "batch": _batch_of(ctx.model),
        "precision": plan.precision,
        "backend": "tensorrt" + (f"-dla{plan.dla_core}" if plan.dla_core is not None else "-gpu"),
        "chip": ctx.chip.id,
        "device": device_name,
    }


def _write_engine_info(ctx, engine_dir: Path, provenance, fingerprint, scope: dict, model_sha: str, key: str) -> None:
    """engine/engine_info.json: the engine's provenance, the device's fingerprint and the scope."""
    info = {
        "schema": "edgedeploy.tensorrt-engine/1",
        "provenance": provenance.to_dict(),
        "fingerprint": fingerprint.to_dict(),
        "scope": scope,
        "batch": scope["batch"],
        "engine_sha256": b.sha256_bytes((engine_dir / b.ENGINE_FILE).read_bytes()),
        "onnx_sha256_sent": model_sha,
        "cache_key": key,
    }
    atomic_write_json(engine_dir / b.INFO_FILE, info)
    ctx.echo(
        f"tensorrt: engine {b.ENGINE_DIR}/{b.ENGINE_FILE} for TensorRT {provenance.trt_version} on {provenance.gpu_name or '?'} "
        f"(compute {provenance.compute_capability or '?'})"
    )


def _tensorrt_section(built: _Built, provenance, scope: dict, log, layers, profile) -> dict:
    device_name = built.device.name
    return {
        "built_on": device_name,
        "from_cache": built.from_cache,
        "build_wall_s": round(built.wall_s, 2),
        "provenance": provenance.to_dict(),
        # trtexec's own timing of the engine on the device right after the build: one process,
        # its own warm-up and duration. Figures of the measurement protocol come from `measure`.
        "trtexec_performance": {
            "note": f"trtexec's own timing on '{device_name}' after the build (one session; not edgedeploy's measurement protocol)",
            "scope": scope,
            **{k: v for k, v in log.to_dict().items() if k in ("throughput_qps", "summary_us", "total_host_walltime_s", "total_gpu_compute_s", "warmup_queries", "timed_queries")},
        },
        "layer_profile": profile.to_dict() if profile else None,
        "engine_layers": len(layers) if layers is not None else None,
    }


def codegen(ctx, converted: ConvertResult) -> dict:
    """The Python and C++ runners for the Jetson, with evaluation inputs (runner/)."""
    batch = _batch_of(ctx.model)
    _write_inputs(ctx)
    write_runners(ctx.workdir / RUNNER_DIR, ctx.model.sha256, converted.manifest["provenance"], converted.details["scope"], batch)
    return {"kind": "runners", "folder": RUNNER_DIR, "files": sorted(p.relative_to(ctx.workdir).as_posix() for p in (ctx.workdir / RUNNER_DIR).rglob("*") if p.is_file())}


# How many evaluation samples travel with the artifact for the runners (--inputs inputs.npz).
RUNNER_INPUT_SAMPLES = 64


def _write_inputs(ctx) -> None:
    """The first evaluation samples as inputs.npz (the runners run real data, not zeros)."""
    import numpy as np

    data = ctx.data.evaluation
    if data is None:
        return
    data = data.take(RUNNER_INPUT_SAMPLES)
    arrays = {name: np.ascontiguousarray(arr) for name, arr in data.inputs.items()}
    np.savez(ctx.workdir / INPUTS_FILE, **arrays)


def runner_spec(artifact: Path, manifest: dict, device) -> RunnerSpec:
    """The Python runner on the Jetson, with the ONNX Runtime run of the same model as the baseline."""
    artifact = Path(artifact)
    chip = getattr(device, "chip", None)
    check_manifest(artifact, chip_id=chip) if chip else check_manifest(artifact)
    info_path = artifact / b.ENGINE_DIR / b.INFO_FILE
    if not info_path.is_file():
        raise ArtifactError(f"{artifact} has no {b.ENGINE_DIR}/{b.INFO_FILE}; it is not a TensorRT build.")
    runner_dir = artifact / RUNNER_DIR
    files = {name: runner_dir / name for name in PY_RUNNER_FILES}
    files["model.engine"] = artifact / b.ENGINE_DIR / b.ENGINE_FILE
    files["engine_info.json"] = info_path
    command = ["{python}", "trt_runner.py", "--engine", "model.engine", "--info", "engine_info.json"]
    inputs = artifact / INPUTS_FILE
    if inputs.is_file():
        files[INPUTS_FILE] = inputs
        command += ["--inputs", INPUTS_FILE]
    info = json.loads(info_path.read_text())
    backend = info.get("scope", {}).get("backend", "tensorrt")
    baseline_files = {name: runner_dir / name for name in ORT_RUNNER_FILES}
    baseline_files["model.onnx"] = artifact / "model.onnx"
    baseline_files["engine_info.json"] = info_path
    baseline_cmd = ["{python}", "ort_runner.py", "--model", "model.onnx", "--info", "engine_info.json"]
    if inputs.is_file():
        baseline_files[INPUTS_FILE] = inputs
        baseline_cmd += ["--inputs", INPUTS_FILE]
    baseline = RunnerSpec(files=baseline_files, command=baseline_cmd, backend="onnxruntime (CUDA if available, else CPU)")
    return RunnerSpec(files=files, command=command, backend=backend, baseline=baseline)


def toolchain_verdict(model_path: Path, chip_id: str, workdir: Path, log_path: Path, **options):
    """`audit --confirm` for TensorRT: build the model on the device (or here) and read TensorRT's placement.

    options: device (inventory name), dla (bool), precision, trtexec; without a device this needs
    trtexec on this machine.
    """
    from edgedeploy.model import load_model

    model = load_model(model_path, {}, require_static=True)
    target_options = {"trtexec": options.get("trtexec"), "dla_core": "auto" if options.get("dla", True) else "none"}
    plan = b.plan_from_options(chip_id, options.get("precision") or "fp16", target_options, float(options.get("timeout_s", 1800)))
    device, transport = b.open_build_device(options.get("device"), chip_id, plan)
    proto = named_copy(model.proto)
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        fingerprint = _probe(transport, plan, device)
        check_device_chip(fingerprint, chip_id, device.name)
        calib = None
        if plan.precision == "int8":
            raise DeviceError("audit --confirm builds fp16 engines for TensorRT; int8 placement needs calibration data: use `edgedeploy build --precision int8`.")
        executor = Executor(Path(log_path), plan.timeout_s)
        b.run_remote_build(executor, transport, device.name, plan, proto.SerializeToString(), calib, fingerprint.trt_version, workdir, lambda m: None)
    finally:
        close = getattr(transport, "close", None)
        if close is not None:
            close()
    log_text = (workdir / b.LOG_FILE).read_text(errors="replace")
    layers = parse_layer_info((workdir / b.LAYERS_FILE).read_text()) if (workdir / b.LAYERS_FILE).is_file() else None
    return verdict_from_build(proto.graph, parse_trtexec_log(log_text), layers, dla=plan.dla_core is not None, trt_version=fingerprint.trt_version)
