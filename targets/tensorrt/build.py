"""`edgedeploy build --target jetson-*`: build the engine where TensorRT is, bring it back with its logs.

Steps (TensorRtTarget.build calls `build_engine(ctx)`):
1. plan: precision (fp16 by default; int8 with calibration; fp32), DLA core (0 on chips with a
   DLA unless --tensorrt-dla-core none; --allowGPUFallback always with it), workspace, builder
   optimisation level, trtexec path (--tensorrt-trtexec, default JetPack's /usr/src/tensorrt/bin/trtexec).
2. where: --device NAME (a Jetson from the device inventory, reached through its transport), or
   this machine when trtexec is here. The device is probed (L4T/JetPack, TensorRT, board) and a
   board of another chip is refused.
3. audit: the rule table of the device's TensorRT version (or --tensorrt-version) predicts placements.
4. cache: (model hash, options, device fingerprint) -> a finished build under
   $EDGEDEPLOY_HOME/cache/tensorrt/; a hit skips the build (--tensorrt-rebuild forces it).
5. build on the device: copy the model (every node named, so TensorRT's layer names are the
   report's node names); for int8 copy the calibration data and run trt_calibrate.py there
   (TensorRT's entropy calibrator) to get a calibration cache; run trtexec with the layer
   information, the per-layer profile and its timing exported; fetch engine, log and exports.
6. parse: trtexec's log and layer information become TensorRT's own placement, shown beside the
   prediction (edgedeploy.audit.confirm.compare); its performance summary goes into the report,
   labelled as trtexec's figures on that device (the measurement protocol is `edgedeploy measure`).
7. provenance: engine_info.json and the manifest record TensorRT version, JetPack/L4T, board,
   GPU name and compute capability; the runners refuse an engine built for another.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from edgedeploy.errors import DeviceError, OptionError, ToolchainFailed, ToolchainMissing
from edgedeploy.records import record_fields

JETPACK_TRTEXEC = "/usr/src/tensorrt/bin/trtexec"
PRECISIONS = ("fp16", "int8", "fp32")
DEFAULT_PRECISION = "fp16"
ENGINE_DIR = "engine"
# Files a build brings back (and the cache keeps), in the artifact's engine/ folder.
ENGINE_FILE = "model.engine"
LOG_FILE = "trtexec.log"
LAYERS_FILE = "layers.json"
PROFILE_FILE = "profile.json"
TIMES_FILE = "times.json"
CALIB_CACHE_FILE = "calib.cache"
CALIB_LOG_FILE = "calibrate.log"
INFO_FILE = "engine_info.json"
FETCHED = (ENGINE_FILE, LAYERS_FILE, PROFILE_FILE, TIMES_FILE)
# Bumped when the build recipe changes, so older cache entries are not reused.
RECIPE_VERSION = 1


@dataclass(frozen=True)
class TrtBuildPlan:
    precision: str
    dla_core: int | None
    workspace_mib: int | None
    builder_optimization_level: int | None
    trtexec: str
    rules_version: str | None  # None: take the device's TensorRT version
    rebuild: bool
    timeout_s: float

    def cache_fields(self) -> dict:
        """What changes the engine (the trtexec path and the time-out do not)."""
        return {
            **record_fields(self, "precision", "dla_core", "workspace_mib", "builder_optimization_level"),
            "recipe": RECIPE_VERSION,
        }


def plan_from_options(chip_id: str, precision: str | None, target_options: dict, timeout_s: float) -> TrtBuildPlan:
    from edgedeploy.targets.tensorrt.rules import DLA_CORES, normalize_trt_version

    precision = precision or DEFAULT_PRECISION
    if precision not in PRECISIONS:
        raise OptionError(f"TensorRT builds fp16, int8 or fp32 engines, not {precision}.")
    cores = DLA_CORES.get(chip_id, 0)
    dla = str(target_options.get("dla_core") or "auto").lower()
    if dla == "auto":
        dla_core = 0 if cores and precision != "fp32" else None
    elif dla == "none":
        dla_core = None
    else:
        if not dla.isdigit():
            raise OptionError(f"--tensorrt-dla-core takes auto, none or a core number, not '{dla}'.")
        dla_core = int(dla)
        if cores == 0:
            raise OptionError(f"The {chip_id} has no DLA; leave out --tensorrt-dla-core (or use --tensorrt-dla-core none).")
        if dla_core >= cores:
            raise OptionError(f"The {chip_id} has DLA cores 0..{cores - 1}; --tensorrt-dla-core {dla_core} does not exist.")
        if precision == "fp32":
            raise OptionError("The DLA runs fp16 and int8 only; use --precision fp16 or int8 with --tensorrt-dla-core, or --tensorrt-dla-core none.")
    level = target_options.get("builder_optimization_level")
    if level is not None and not 0 <= int(level) <= 5:
        raise OptionError("--tensorrt-builder-optimization-level takes 0 to 5.")
    workspace = target_options.get("workspace_mib")
    if workspace is not None and int(workspace) < 1:
        raise OptionError("--tensorrt-workspace-mib must be at least 1.")
    version = target_options.get("trt_version")
    return TrtBuildPlan(
        precision=precision,
        dla_core=dla_core,
        workspace_mib=int(workspace) if workspace is not None else None,
        builder_optimization_level=int(level) if level is not None else None,
        trtexec=str(target_options.get("trtexec") or os.environ.get("EDGEDEPLOY_TRTEXEC") or JETPACK_TRTEXEC),
        rules_version=normalize_trt_version(version) if version and str(version).lower() != "auto" else None,
        rebuild=bool(target_options.get("trt_rebuild")),
        timeout_s=float(timeout_s),
    )


def trtexec_argv(plan: TrtBuildPlan, trt_version: str | None) -> list[str]:
    """The trtexec command line of a build (run in the device's work folder)."""
    argv = [
        plan.trtexec,
        "--onnx=model.onnx",
        f"--saveEngine={ENGINE_FILE}",
        # Layer information with the ONNX node names of every fused layer, and the per-layer
        # profile in a separate run so profiling does not disturb the timing summary.
        "--profilingVerbosity=detailed",
        f"--exportLayerInfo={LAYERS_FILE}",
        f"--exportProfile={PROFILE_FILE}",
        f"--exportTimes={TIMES_FILE}",
        "--separateProfileRun",
        # The builder prints DLA/GPU placement (and why a layer left the DLA) at verbose level.
        "--verbose",
    ]
    if plan.precision == "fp16":
        argv.append("--fp16")
    elif plan.precision == "int8":
        # Layers without an int8 kernel (or without a scale) then run in fp16, not fp32.
        argv += ["--int8", "--fp16", f"--calib={CALIB_CACHE_FILE}"]
    if plan.dla_core is not None:
        argv += [f"--useDLACore={plan.dla_core}", "--allowGPUFallback"]
    if plan.workspace_mib is not None:
        # --memPoolSize takes MiB without a suffix from TensorRT 8.4 on (--workspace is gone in 10).
        argv.append(f"--memPoolSize=workspace:{plan.workspace_mib}")
    if plan.builder_optimization_level is not None:
        major_minor = _major_minor(trt_version)
        if major_minor is not None and major_minor < (8, 6):
            raise OptionError(f"--tensorrt-builder-optimization-level needs TensorRT 8.6 or newer; the device has {trt_version}.")
        argv.append(f"--builderOptimizationLevel={plan.builder_optimization_level}")
    return argv


def calibrate_argv(plan: TrtBuildPlan) -> list[str]:
    argv = ["{python}", "trt_calibrate.py", "--onnx", "model.onnx", "--data", "calib.npz", "--cache", CALIB_CACHE_FILE]
    if plan.dla_core is not None:
        argv += ["--dla-core", str(plan.dla_core)]
    return argv


def _major_minor(version: str | None) -> tuple[int, int] | None:
    if not version:
        return None
    try:
        parts = [int(p) for p in str(version).split(".")[:2]]
    except ValueError:
        return None
    return (parts[0], parts[1] if len(parts) > 1 else 0)


# --- the model sent to TensorRT ----------------------------------------------------------------

def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# --- the build cache ---------------------------------------------------------------------------

def cache_root() -> Path:
    from edgedeploy.toolchains import edgedeploy_home

    return edgedeploy_home() / "cache" / "tensorrt"


def cache_key(model_sha256: str, plan: TrtBuildPlan, fingerprint_digest: str, calib_sha256: str | None) -> str:
    fields = {"model": model_sha256, "options": plan.cache_fields(), "device": fingerprint_digest, "calibration": calib_sha256}
    return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()


def cache_lookup(key: str) -> Path | None:
    entry = cache_root() / key
    if (entry / ENGINE_FILE).is_file() and (entry / LOG_FILE).is_file() and (entry / "cache_entry.json").is_file():
        return entry
    return None


def cache_store(key: str, source: Path, files: list[str], meta: dict) -> None:
    """Copy a finished build into the cache atomically (a half-written entry is never visible)."""
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{key[:12]}.", dir=root))
    try:
        for name in files:
            if (source / name).is_file():
                shutil.copyfile(source / name, tmp / name)
        (tmp / "cache_entry.json").write_text(json.dumps(meta, indent=2) + "\n")
        final = root / key
        if final.exists():
            shutil.rmtree(final)
        tmp.rename(final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


# --- where the build runs ----------------------------------------------------------------------

def open_build_device(device_name: str | None, chip_id: str, plan: TrtBuildPlan):
    """(device, transport) for the build: the named inventory device, or this machine when trtexec is here."""
    from edgedeploy.devices import load_inventory, local_device, open_transport
    from edgedeploy.targets import chip_ids

    if device_name:
        device = load_inventory(None, chip_ids()).get(device_name)
        if device.chip and device.chip != chip_id:
            raise DeviceError(f"Device '{device.name}' is a {device.chip} in the inventory, not a {chip_id}; build with --target {device.chip} or pick another device.")
        if device.transport == "serial":
            raise DeviceError(f"Device '{device.name}' is a serial device; TensorRT builds need a Jetson reached over ssh (or this machine).")
        return device, open_transport(device)
    if shutil.which(plan.trtexec) or Path(plan.trtexec).is_file():
        device = local_device()
        return device, open_transport(device)
    raise ToolchainMissing(
        f"TensorRT is not on this machine (no {plan.trtexec}); pass --device NAME, a Jetson from your device inventory, to build there."
    )


def probe_device(transport, workdir: str, plan: TrtBuildPlan, device_name: str):
    from edgedeploy.targets.tensorrt.device import PROBE_SCRIPT, parse_probe

    result = transport.run(["sh", "-c", PROBE_SCRIPT, "sh", plan.trtexec], workdir, 60)
    fingerprint = parse_probe(result.stdout, plan.trtexec)
    if fingerprint.trtexec is None:
        raise ToolchainMissing(
            f"Device '{device_name}' has no trtexec at {plan.trtexec} (JetPack installs it there with the tensorrt package); pass --tensorrt-trtexec PATH."
        )
    return fingerprint


@dataclass
class RemoteBuildResult:
    files: dict[str, Path]  # name -> local path (in the engine folder)
    log_text: str
    calibrate_log: str | None
    returncode: int | None
    wall_s: float
    from_cache: bool = False


def run_remote_build(
    executor,
    transport,
    device_name: str,
    plan: TrtBuildPlan,
    model_bytes: bytes,
    calib: dict[str, np.ndarray] | None,
    trt_version: str | None,
    dest: Path,
    echo,
) -> RemoteBuildResult:
    """Copy the model (and calibration data) to the device, build there (through `executor`: its
    time-out, log and progress), fetch what came out into `dest`."""
    from edgedeploy.targets.tensorrt.codegen import write_device_scripts

    dest.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="edgedeploy-trt-") as scratch:
        scratch_dir = Path(scratch)
        (scratch_dir / "model.onnx").write_bytes(model_bytes)
        workdir = transport.make_workdir()
        try:
            transport.put(scratch_dir / "model.onnx", "model.onnx")
            calibrate_log = None
            if plan.precision == "int8":
                if calib is None:
                    raise OptionError("An int8 build needs calibration data (--calib).")
                np.savez(scratch_dir / "calib.npz", **calib)
                transport.put(scratch_dir / "calib.npz", "calib.npz")
                for name, path in write_device_scripts(scratch_dir).items():
                    transport.put(path, name)
                python = getattr(transport.device, "python", "python3") or "python3"
                argv = [python if a == "{python}" else a for a in calibrate_argv(plan)]
                echo(f"tensorrt: calibrating int8 on '{device_name}' ({len(next(iter(calib.values())))} samples)")
                res = executor.remote(transport, argv, workdir, f"int8 calibration on '{device_name}'")
                calibrate_log = res.stdout + res.stderr
                (dest / CALIB_LOG_FILE).write_text(calibrate_log)
                if res.returncode != 0:
                    raise ToolchainFailed(f"int8 calibration failed on '{device_name}'", toolchain="tensorrt", final_line=_tail(calibrate_log))
                transport.get(CALIB_CACHE_FILE, dest / CALIB_CACHE_FILE)
            argv = trtexec_argv(plan, trt_version)
            echo(f"tensorrt: building on '{device_name}': {' '.join(argv[1:])}")
            res = executor.remote(transport, argv, workdir, f"trtexec on '{device_name}'")
            log_text = res.stdout + ("\n" + res.stderr if res.stderr else "")
            (dest / LOG_FILE).write_text(log_text)
            files = {LOG_FILE: dest / LOG_FILE}
            if plan.precision == "int8":
                files[CALIB_CACHE_FILE] = dest / CALIB_CACHE_FILE
                files[CALIB_LOG_FILE] = dest / CALIB_LOG_FILE
            if res.returncode == 0:
                for name in FETCHED:
                    try:
                        transport.get(name, dest / name)
                        files[name] = dest / name
                    except DeviceError:
                        if name == ENGINE_FILE:
                            raise
            return RemoteBuildResult(files, log_text, calibrate_log, res.returncode, time.monotonic() - started)
        finally:
            transport.cleanup(workdir)


def _tail(text: str, lines: int = 6) -> str:
    kept = [line for line in text.strip().splitlines() if line.strip()][-lines:]
    return " | ".join(kept) if kept else "(no output)"


def calibration_arrays(ctx) -> dict[str, np.ndarray]:
    """The calibration inputs as float32 arrays by input name (resolved by the core)."""
    whole = ctx.data.calibration.whole
    if whole:
        # The device's calibrator cuts batches on axis 0 (trt_calibrate.py): refused rather than misfed.
        from edgedeploy.errors import NotAvailableYet

        raise NotAvailableYet(
            f"Input(s) {', '.join(repr(n) for n in sorted(whole))} take whole samples (their leading axis is not a batch axis); "
            f"TensorRT int8 calibration does not feed such inputs yet (docs/cli.md, 'Data for --calib and --eval')."
        )
    return {name: np.ascontiguousarray(arr, dtype=np.float32) for name, arr in ctx.data.calibration.inputs.items()}


def plan_to_dict(plan: TrtBuildPlan) -> dict:
    return asdict(plan)
