"""The TensorRT build flow: planning, the remote build over a real loopback sshd, cache, provenance,
generated runners.

No Jetson is attached to our machines. Where a test needs trtexec on the "device", a STAND-IN
script plays it: it stands in for hardware we do not have. It records the arguments it got and
writes placeholder files where trtexec would write the engine and its exports, and prints the
few log lines the orchestration reads. Tests that use it assert on the orchestration only (what
was copied, which arguments trtexec got, what came back, that parsing and provenance are wired
through, that the cache skips a rebuild) and never on performance figures. What needs the real
board is at the end, marked `hardware("Jetson Orin")`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from edgedeploy.errors import OptionError
from edgedeploy.targets.tensorrt import build as b
from edgedeploy.targets.tensorrt.codegen import write_runners
from edgedeploy.targets.tensorrt.device import (
    DeviceFingerprint,
    check_device_chip,
    engine_mismatch,
    parse_l4t,
    parse_probe,
)

STUB_INCLUDE = Path(__file__).parent / "fixtures" / "tensorrt_stub_include"

# The stand-in for trtexec (see the module docstring). It reads the ONNX it was given so the
# layer names it writes are the model's node names, as trtexec's would be.
STAND_IN = r'''#!{python}
# STAND-IN for NVIDIA trtexec: there is no Jetson here. Records its arguments, writes placeholder
# outputs where trtexec writes them; nothing it prints is a measurement.
import json, sys
argv = sys.argv[1:]
with open({record!r}, "a") as fh:
    fh.write(json.dumps(argv) + "\n")
print("&&&& RUNNING TensorRT.trtexec [TensorRT v100300] # trtexec " + " ".join(argv))
if argv == ["--help"]:
    sys.exit(0)
opts = dict(a[2:].split("=", 1) for a in argv if a.startswith("--") and "=" in a)
import onnx
model = onnx.load(opts["onnx"])
names = [n.name for n in model.graph.node]
open(opts["saveEngine"], "wb").write(b"stand-in engine bytes, not a TensorRT plan")
json.dump({{"Layers": [" + ".join(names[:2])] + names[2:], "Bindings": []}}, open(opts["exportLayerInfo"], "w"))
json.dump([{{"count": 1}}] + [{{"name": n, "timeMs": 0, "averageMs": 0, "percentage": 0}} for n in names], open(opts["exportProfile"], "w"))
json.dump([], open(opts["exportTimes"], "w"))
print("[I] Selected Device: stand-in (no GPU)")
print("[I] Compute Capability: 0.0")
print("[I] TensorRT version: 10.3.0")
if "useDLACore" in opts:
    flatten = [n.name for n in model.graph.node if n.op_type == "Flatten"][0]
    print("[W] [TRT] Layer '%s' (SHUFFLE): Unsupported on DLA. Switching this layer's device type to GPU." % flatten)
print("&&&& PASSED TensorRT.trtexec [TensorRT v100300] # trtexec " + " ".join(argv))
'''


def _stand_in(tmp_path: Path) -> tuple[Path, Path]:
    record = tmp_path / "trtexec_calls.jsonl"
    script = tmp_path / "stand_in_trtexec"
    script.write_text(STAND_IN.format(python=sys.executable, record=str(record)))
    script.chmod(0o755)
    return script, record


# --- planning -------------------------------------------------------------------------------

def test_plan_defaults_per_chip():
    nx = b.plan_from_options("jetson-orin-nx", None, {}, 600)
    assert nx.precision == "fp16" and nx.dla_core == 0
    nano = b.plan_from_options("jetson-orin-nano", None, {}, 600)
    assert nano.dla_core is None
    gpu = b.plan_from_options("jetson-agx-orin", "fp32", {}, 600)
    assert gpu.dla_core is None  # the DLA has no fp32: auto means GPU


@pytest.mark.parametrize(
    "chip, precision, opts, message",
    [
        ("jetson-orin-nano", "fp16", {"dla_core": "0"}, "no DLA"),
        ("jetson-orin-nx", "fp16", {"dla_core": "2"}, "cores 0..1"),
        ("jetson-orin-nx", "fp32", {"dla_core": "1"}, "fp16 and int8 only"),
        ("jetson-orin-nx", "int16", {}, "not int16"),
        ("jetson-orin-nx", "fp16", {"dla_core": "one"}, "core number"),
    ],
)
def test_plan_refuses_impossible_options(chip, precision, opts, message):
    with pytest.raises(OptionError, match=message):
        b.plan_from_options(chip, precision, opts, 600)


def test_trtexec_command_lines():
    plan = b.plan_from_options("jetson-agx-orin", "int8", {"dla_core": "1", "workspace_mib": 2048, "builder_optimization_level": 4}, 600)
    argv = b.trtexec_argv(plan, "8.6.2")
    assert argv[0] == b.JETPACK_TRTEXEC
    for flag in ("--int8", "--fp16", "--calib=calib.cache", "--useDLACore=1", "--allowGPUFallback", "--memPoolSize=workspace:2048",
                 "--builderOptimizationLevel=4", "--profilingVerbosity=detailed", "--exportLayerInfo=layers.json", "--exportProfile=profile.json"):
        assert flag in argv
    with pytest.raises(OptionError, match="8.6 or newer"):
        b.trtexec_argv(plan, "8.5.2")
    gpu = b.plan_from_options("jetson-orin-nano", "fp32", {}, 600)
    gpu_argv = b.trtexec_argv(gpu, "10.3.0")
    assert not any(a.startswith(("--fp16", "--int8", "--useDLACore")) for a in gpu_argv)
    assert b.calibrate_argv(plan)[:2] == ["{python}", "trt_calibrate.py"] and "--dla-core" in b.calibrate_argv(plan)


# --- device facts and provenance ----------------------------------------------------------

def test_probe_parsing_and_fingerprint():
    text = (
        "== tegra\n# R36 (release), REVISION: 4.3, GCID: 38968081, BOARD: generic, EABI: aarch64, DATE: Wed Jan  8 01:49:37 UTC 2025\n"
        "== model\nNVIDIA Jetson Orin NX Engineering Reference Developer Kit\n"
        "== jetpack\n== trtexec\n&&&& RUNNING TensorRT.trtexec [TensorRT v100300] # /usr/src/tensorrt/bin/trtexec --help\n"
        "== python-tensorrt\n10.3.0\n== arch\naarch64\n== end\n"
    )
    fp = parse_probe(text, "/usr/src/tensorrt/bin/trtexec")
    assert (fp.l4t, fp.trt_version, fp.arch) == ("36.4.3", "10.3.0", "aarch64")
    assert fp.jetpack == "6.2 (from L4T 36.4.3)"
    check_device_chip(fp, "jetson-orin-nx", "nx")
    from edgedeploy.errors import DeviceError

    with pytest.raises(DeviceError, match="not a jetson-agx-orin"):
        check_device_chip(fp, "jetson-agx-orin", "nx")
    other = DeviceFingerprint(fp.l4t, fp.jetpack, "8.6.2", fp.board, fp.arch, fp.trtexec)
    assert other.digest() != fp.digest()
    missing = parse_probe("== trtexec\nmissing: /opt/trtexec\n== end\n", "/opt/trtexec")
    assert missing.trtexec is None
    assert parse_l4t("# R35 (release), REVISION: 4.1, GCID: 33958178") == "35.4.1"


def test_engine_provenance_guard():
    built = {"trt_version": "8.6.2", "compute_capability": "8.7", "gpu_name": "Orin"}
    assert engine_mismatch(built, {"trt_version": "8.6.2.3", "compute_capability": "8.7", "gpu_name": "Orin"}) is None
    msg = engine_mismatch(built, {"trt_version": "10.3.0", "compute_capability": "8.7", "gpu_name": "Orin"})
    assert msg.startswith("This engine was built for TensorRT 8.6.2, but this device has 10.3.0")
    assert "compute capability 8.7" in engine_mismatch(built, {"trt_version": "8.6.2", "compute_capability": "8.9", "gpu_name": "Orin"})


# --- generated code ---------------------------------------------------------------------------

def _generated(tmp_path: Path) -> dict[str, Path]:
    hostile_scope = {"input_shapes": {'in"pu\\t\n': [1, 3]}, "model_sha256": "ab" * 32, "precision": "fp16"}
    prov = {"trt_version": "8.6.2", "compute_capability": "8.7", "gpu_name": 'Orin"; system("x', "dla_core": 0}
    return write_runners(tmp_path / "runner", "ab" * 32, prov, hostile_scope, 1)


def test_generated_python_compiles_and_has_header(tmp_path):
    files = _generated(tmp_path)
    for name in ("trt_runner.py", "cudart.py", "ort_runner.py"):
        text = files[name].read_text()
        assert text.startswith("# Generated by edgedeploy") and "ab" * 32 in text.splitlines()[0] and "Do not edit" in text
        compile(text, name, "exec")


def test_generated_runner_refuses_a_foreign_engine(tmp_path):
    """The guard in the generated Python runner (the part that runs before TensorRT is touched)."""
    files = _generated(tmp_path)
    namespace: dict = {}
    sys.path.insert(0, str(files["trt_runner.py"].parent))
    try:
        exec(compile(files["trt_runner.py"].read_text(), "trt_runner.py", "exec"), namespace)
    finally:
        sys.path.pop(0)
    guard = namespace["engine_mismatch"]
    built = {"trt_version": "8.6.2", "compute_capability": "8.7", "gpu_name": "Orin"}
    assert guard(built, dict(built, trt_version="8.6.2.3")) is None
    assert "TensorRT 8.6.2" in guard(built, dict(built, trt_version="10.3.0"))
    assert namespace["EXIT_MISMATCH"] == 3


def test_generated_cpp_passes_syntax_check(tmp_path):
    files = _generated(tmp_path)
    text = files["trt_runner.cpp"].read_text()
    assert text.startswith("// Generated by edgedeploy")
    assert 'system("x' not in text  # provenance strings are reduced to safe characters
    # The real headers where installed (JetPack: /usr/include/aarch64-linux-gnu); our minimal
    # declarations otherwise (tests/fixtures/tensorrt_stub_include, written for this check).
    includes = []
    real = os.environ.get("TENSORRT_INCLUDE") or next((str(p.parent) for p in Path("/usr/include").glob("*/NvInfer.h")), None)
    includes.append(real or str(STUB_INCLUDE))
    cuda = "/usr/local/cuda/include"
    includes.append(cuda if Path(cuda, "cuda_runtime_api.h").is_file() and real else str(STUB_INCLUDE))
    gxx = subprocess.run(["g++", "--version"], capture_output=True)
    if gxx.returncode != 0:
        pytest.skip("g++ is not installed")
    args = ["g++", "-std=c++17", "-fsyntax-only", "-Wall"] + [f"-I{i}" for i in includes] + [str(files["trt_runner.cpp"])]
    result = subprocess.run(args, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


# --- the remote build over a real sshd, trtexec played by the stand-in -------------------------

@pytest.fixture
def jetson_inventory(loopback_sshd, tmp_path, monkeypatch):
    inventory = {"devices": {"fake-orin-nx": loopback_sshd.inventory_entry(chip="jetson-orin-nx")}}
    path = tmp_path / "devices.json"
    path.write_text(json.dumps(inventory))
    monkeypatch.setenv("EDGEDEPLOY_DEVICES", str(path))
    monkeypatch.setenv("EDGEDEPLOY_HOME", str(tmp_path / "home"))
    return path


class _Run:
    def __init__(self, proc):
        self.exit_code = proc.returncode
        self.output = proc.stdout + proc.stderr


def _build(tmp_path, trtexec, *extra, force=False):
    from tests.helpers import run_cli

    args = ["build", "--target", "jetson-orin-nx", "--device", "fake-orin-nx", "--tensorrt-trtexec", str(trtexec), "--out", str(tmp_path / "out"), "--format", "json", *extra]
    if force:
        args.append("--force")
    return _Run(run_cli(*args))


def test_remote_build_orchestration_over_loopback_ssh(jetson_inventory, tmp_path):
    trtexec, record = _stand_in(tmp_path)
    result = _build(tmp_path, trtexec)
    assert result.exit_code == 0, result.output
    calls = [json.loads(line) for line in record.read_text().splitlines()]
    assert calls[0] == ["--help"]  # the probe
    build_args = calls[1]
    assert "--onnx=model.onnx" in build_args and "--fp16" in build_args
    assert "--useDLACore=0" in build_args and "--allowGPUFallback" in build_args  # Orin NX: DLA by default
    art = tmp_path / "out" / "mnist_cnn" / "jetson-orin-nx"
    for name in ("engine/model.engine", "engine/trtexec.log", "engine/layers.json", "engine/profile.json", "engine/engine_info.json",
                 "runner/trt_runner.py", "runner/cudart.py", "runner/protocol.py", "runner/ort_runner.py", "runner/trt_runner.cpp", "runner/Makefile"):
        assert (art / name).is_file(), name
    assert (art / "engine/model.engine").read_bytes().startswith(b"stand-in engine")
    manifest = json.loads((art / "manifest.json").read_text())
    prov = manifest["tensorrt"]["provenance"]
    assert prov["trt_version"] == "10.3.0" and prov["dla_core"] == 0 and prov["precision"] == "fp16"
    assert manifest["tensorrt"]["from_cache"] is False
    report = json.loads((art / "report.json").read_text())
    # The stand-in's switch message went through the parser and the verdict: orchestration, not truth.
    placement = json.loads((art / "toolchain_verdict.json").read_text())["verdict"]["nodes"]
    assert placement["/classifier/classifier.0/Flatten"]["placement"] == "fallback"
    assert placement["/features/features.0/Conv"]["placement"] == "accelerator"
    assert report["toolchain_verdict"]["compared"] == 13 and report["toolchain_verdict"]["toolchain"] == "tensorrt"
    assert report["audit"]["fallback_unit"] == "GPU"

    # Same model, options and device: the cache answers and trtexec is not run again.
    again = _build(tmp_path, trtexec, force=True)
    assert again.exit_code == 0, again.output
    calls_after = record.read_text().splitlines()
    assert len(calls_after) == len(calls) + 1  # only the probe ran
    assert json.loads((art / "manifest.json").read_text())["tensorrt"]["from_cache"] is True

    # --tensorrt-rebuild builds again; GPU only with --tensorrt-dla-core none.
    rebuilt = _build(tmp_path, trtexec, "--tensorrt-rebuild", "--tensorrt-dla-core", "none", force=True)
    assert rebuilt.exit_code == 0, rebuilt.output
    last = json.loads(record.read_text().splitlines()[-1])
    assert not any(a.startswith("--useDLACore") for a in last)


def test_runner_spec_for_measure(jetson_inventory, tmp_path):
    trtexec, _record = _stand_in(tmp_path)
    assert _build(tmp_path, trtexec).exit_code == 0
    from edgedeploy.devices import load_inventory
    from edgedeploy.targets import find_chip

    art = tmp_path / "out" / "mnist_cnn" / "jetson-orin-nx"
    target, _chip = find_chip("jetson-orin-nx")
    device = load_inventory(None).get("fake-orin-nx")
    spec = target.runner_spec(art, json.loads((art / "manifest.json").read_text()), device)
    assert spec.command[:2] == ["{python}", "trt_runner.py"]
    assert set(spec.files) >= {"trt_runner.py", "cudart.py", "protocol.py", "model.engine", "engine_info.json"}
    assert spec.backend == "tensorrt-dla0"
    assert spec.baseline is not None and spec.baseline.command[1] == "ort_runner.py" and "model.onnx" in spec.baseline.files
    from dataclasses import replace

    from edgedeploy.errors import ArtifactError

    with pytest.raises(ArtifactError, match="built for jetson-orin-nx"):
        target.runner_spec(art, {}, replace(device, chip="jetson-agx-orin"))


def test_local_build_when_trtexec_is_here(tmp_path, monkeypatch):
    """No --device: the build runs on this machine through the local transport (stand-in trtexec)."""
    from tests.helpers import run_cli

    trtexec, record = _stand_in(tmp_path)
    monkeypatch.setenv("EDGEDEPLOY_HOME", str(tmp_path / "home"))
    proc = run_cli("build", "--target", "jetson-orin-nano", "--tensorrt-trtexec", str(trtexec), "--out", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr
    art = tmp_path / "out" / "mnist_cnn" / "jetson-orin-nano"
    assert json.loads((art / "manifest.json").read_text())["tensorrt"]["built_on"] == "local"
    build_args = json.loads(record.read_text().splitlines()[-1])
    assert not any(a.startswith("--useDLACore") for a in build_args)  # the Orin Nano has no DLA
    import numpy as np

    with np.load(art / "inputs.npz") as data:  # real evaluation samples travel with the runners
        assert data["input"].shape == (64, 1, 28, 28)


def test_device_without_trtexec_is_one_sentence(jetson_inventory, tmp_path):
    result = _build(tmp_path, tmp_path / "no-such-trtexec")
    assert result.exit_code != 0
    assert "has no trtexec at" in result.output and "Traceback" not in result.output


def test_no_device_and_no_local_tensorrt(tmp_path, monkeypatch):
    from tests.helpers import run_cli

    monkeypatch.delenv("EDGEDEPLOY_TRTEXEC", raising=False)
    result = _Run(run_cli("build", "--target", "jetson-orin-nano", "--tensorrt-trtexec", str(tmp_path / "none"), "--out", str(tmp_path / "o")))
    assert result.exit_code != 0 and "pass --device NAME" in result.output


# --- what only a Jetson can check ------------------------------------------------------------

JETSON = os.environ.get("EDGEDEPLOY_JETSON_DEVICE", "jetson")


@pytest.mark.hardware("Jetson Orin")
def test_real_build_on_a_jetson(tmp_path):
    """Needs a Jetson Orin in the device inventory named $EDGEDEPLOY_JETSON_DEVICE (default 'jetson')
    with JetPack's trtexec: builds the sample with DLA (where the chip has one), checks the engine
    is a TensorRT plan, the provenance names an Orin GPU (compute capability 8.7), and the
    placement came from TensorRT's own log."""
    from edgedeploy.devices import load_inventory
    from tests.helpers import run_cli

    device = load_inventory(None).get(JETSON)
    result = _Run(run_cli("build", "--target", device.chip, "--device", JETSON, "--out", str(tmp_path / "out"), "--tensorrt-rebuild"))
    assert result.exit_code == 0, result.output
    art = tmp_path / "out" / "mnist_cnn" / device.chip
    manifest = json.loads((art / "manifest.json").read_text())
    assert manifest["tensorrt"]["provenance"]["compute_capability"] == "8.7"
    assert (art / "engine" / "model.engine").stat().st_size > 1000


@pytest.mark.hardware("Jetson Orin")
def test_real_int8_calibration_and_runners_on_a_jetson(tmp_path):
    """int8 calibration with trt_calibrate.py on the board, then the Python runner (one session)
    and the C++ runner built with its Makefile; both print one EDGEDEPLOY line."""
    from edgedeploy.devices import load_inventory, open_transport
    from edgedeploy.measure.protocol import parse_result_lines
    from tests.helpers import run_cli

    device = load_inventory(None).get(JETSON)
    result = _Run(run_cli("build", "--target", device.chip, "--device", JETSON, "--precision", "int8", "--out", str(tmp_path / "out"), "--tensorrt-rebuild"))
    assert result.exit_code == 0, result.output
    art = tmp_path / "out" / "mnist_cnn" / device.chip
    from edgedeploy.targets import find_chip

    target, _ = find_chip(device.chip)
    spec = target.runner_spec(art, json.loads((art / "manifest.json").read_text()), device)
    transport = open_transport(device)
    work = transport.make_workdir()
    try:
        for remote, local in spec.files.items():
            transport.put(local, remote)
        run = transport.run([device.python if a == "{python}" else a for a in spec.command], work, 600)
        assert run.returncode == 0, run.stderr
        (line,) = parse_result_lines(run.stdout)
        assert line["scope"]["precision"] == "int8" and line["latency_us"]["count"] >= 50
    finally:
        transport.cleanup(work)
