"""The TIDL board runner: ONNX Runtime with TIDLExecutionProvider, the CPU fallback visible, timed with
the measurement protocol; the baseline is ONNX Runtime's CPU provider on the same board.

Here (no TI board, no TI onnxruntime) the generated runner runs END TO END with this machine's
plain onnxruntime: asked for TIDL, it falls back to the CPU and says so on stderr and in its
result line, so the figure can never pass for a TIDL one. What needs a board is marked
@pytest.mark.hardware("TI AM68A/TDA4VM board").
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest

from edgedeploy.artifacts import check_manifest
from edgedeploy.build import BuildOptions, run_build
from edgedeploy.devices import Device
from edgedeploy.errors import ArtifactError
from edgedeploy.measure.accuracy import fidelity
from edgedeploy.measure.protocol import RUN_SCHEMA, parse_result_lines
from edgedeploy.targets import find_chip
from edgedeploy.targets.tidl.build import copy_into

from tidl_models import FIXTURES, conv_erf_conv_model, write_inputs
STANDIN = str(Path(__file__).parent / "tidl_standin_compile.py")

FAST = ["--warmup", "2", "--min-iterations", "5", "--min-duration-s", "0.05"]
SESSIONS = 3  # independent processes, as the measurement protocol asks


@pytest.fixture(autouse=True)
def no_tidl_tools(monkeypatch):
    monkeypatch.delenv("TIDL_TOOLS_PATH", raising=False)


@pytest.fixture(scope="module")
def sample_artifact(tmp_path_factory):
    out = tmp_path_factory.mktemp("tidl_runner")
    saved = os.environ.pop("TIDL_TOOLS_PATH", None)
    try:
        from edgedeploy.sample import sample_model_path

        dest = run_build(sample_model_path(), "am68a", BuildOptions(out_root=out, eval_count=16), echo=lambda line: None)
    finally:
        if saved is not None:
            os.environ["TIDL_TOOLS_PATH"] = saved
    return dest


def _spec(artifact: Path, chip="am68a", device=None):
    target, _ = find_chip(chip)
    return target.runner_spec(artifact, check_manifest(artifact, chip), device)


def _run(folder: Path, command: list[str]) -> subprocess.CompletedProcess:
    argv = [sys.executable if a == "{python}" else a for a in command] + FAST
    return subprocess.run(argv, cwd=folder, capture_output=True, text=True, timeout=300)


def test_runner_spec_has_tidl_run_and_cpu_baseline(sample_artifact):
    spec = _spec(sample_artifact, device=Device(name="board", chip="am68a", transport="ssh", host="am68a-sk"))
    assert spec.command == ["{python}", "run_tidl.py", "--provider", "tidl", "--outputs", "outputs_tidl.npz"]
    assert spec.baseline is not None
    assert spec.baseline.command == ["{python}", "run_tidl.py", "--provider", "cpu", "--outputs", "outputs_cpu.npz"]
    assert spec.baseline.files == spec.files  # same model, same inputs, same board: only the provider differs
    assert set(spec.files) == {"run_tidl.py", "protocol.py", "inputs.npz", "model.onnx"}  # not compiled here: no tidl_artifacts
    assert spec.result_files == ["outputs_tidl.npz"] and spec.baseline.result_files == ["outputs_cpu.npz"]


def test_runner_refuses_a_device_of_another_chip(sample_artifact):
    with pytest.raises(ArtifactError, match="built for am68a.*tda4vm"):
        _spec(sample_artifact, device=Device(name="old-board", chip="tda4vm", transport="ssh", host="j7"))


def test_runner_end_to_end_here_falls_back_visibly(sample_artifact, tmp_path):
    spec = _spec(sample_artifact)
    copy_into(spec.files, tmp_path)
    results = []
    for _ in range(SESSIONS):
        proc = _run(tmp_path, spec.command)
        assert proc.returncode == 0, proc.stderr
        assert "TIDLExecutionProvider is not in this onnxruntime" in proc.stderr
        assert "This figure is a CPU figure, not a TIDL one." in proc.stderr
        parsed = parse_result_lines(proc.stdout)
        assert len(parsed) == 1
        results.append(parsed[0])
    manifest = check_manifest(sample_artifact, "am68a")
    for r in results:
        assert r["schema"] == RUN_SCHEMA
        assert r["requested_provider"] == "tidl" and r["providers"] == ["CPUExecutionProvider"]
        assert "TIDLExecutionProvider is not in this onnxruntime" in r["tidl_fallback"]
        scope = r["scope"]
        assert scope["model_sha256"] == manifest["model"]["sha256"]
        assert scope["precision"] == "fp32" and "CPUExecutionProvider" in scope["backend"]  # never labelled TIDL
        assert scope["input_shapes"] == {"input": [1, 1, 28, 28]} and scope["batch"] == 1
        assert r["iterations"] >= 5 and r["latency_us"]["p50"] > 0 and r["first_inference_us"] > 0
        assert r["output_samples"] == 16
    # The outputs it saved are the model's outputs on the inputs it was given.
    reference = np.load(sample_artifact / "runner" / "reference_outputs.npz")["logits"]
    produced = np.load(tmp_path / "outputs_tidl.npz")["logits"]
    assert produced.shape == reference.shape == (16, 1, 10)
    assert fidelity(reference, produced)["max_abs_error"] < 1e-4


def test_cpu_baseline_end_to_end(sample_artifact, tmp_path):
    spec = _spec(sample_artifact).baseline
    copy_into(spec.files, tmp_path)
    proc = _run(tmp_path, spec.command)
    assert proc.returncode == 0, proc.stderr
    assert "warning" not in proc.stderr
    (result,) = parse_result_lines(proc.stdout)
    assert result["requested_provider"] == "cpu" and result["tidl_fallback"] is None
    assert result["scope"]["precision"] == "fp32"


def test_compiled_artifacts_travel_with_the_runner(tmp_path, monkeypatch):
    """After a compile (here: the stand-in command of test_tidl_build, hand-made artifacts), the runner gets them."""
    model = tmp_path / "model.onnx"
    onnx.save(conv_erf_conv_model(), str(model))
    calib = write_inputs(tmp_path / "calib.npz", (1, 4, 8, 8), 4)
    command = f"{shlex.quote(sys.executable)} {shlex.quote(STANDIN)} {shlex.quote(str(FIXTURES / 'conv_erf_conv'))} {{dir}}"
    dest = run_build(model, "am69a", BuildOptions(out_root=tmp_path / "out", calib=calib, target_options={"tidl_compile_command": command}), echo=lambda line: None)
    spec = _spec(dest, chip="am69a")
    shipped = {k for k in spec.files if k.startswith("tidl_artifacts/")}
    assert shipped == {f"tidl_artifacts/{n}" for n in ("allowedNode.txt", "onnxrtMetaData.txt", "a_tidl_net.bin", "a_tidl_io_1.bin", "y_tidl_net.bin", "y_tidl_io_1.bin")}
    copy_into(spec.files, tmp_path / "run")
    proc = _run(tmp_path / "run", spec.command)  # no TI runtime here: falls back, but runs
    assert proc.returncode == 0 and parse_result_lines(proc.stdout)[0]["tidl_fallback"]


def _ssh(host: str, *argv: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run(["ssh", host, " ".join(shlex.quote(a) for a in argv)], capture_output=True, text=True, timeout=timeout)


@pytest.mark.hardware("TI AM68A/TDA4VM board")
def test_on_a_ti_board_tidl_and_the_cpu_baseline_run(tmp_path):
    """On a TI board (EDGEDEPLOY_TIDL_BOARD=ssh host, EDGEDEPLOY_TIDL_ARTIFACT=a compiled artifact for its SoC):
    the TIDL run uses TIDLExecutionProvider with no fallback, and the CPU baseline runs on the same board."""
    host = os.environ["EDGEDEPLOY_TIDL_BOARD"]
    artifact = Path(os.environ["EDGEDEPLOY_TIDL_ARTIFACT"])
    manifest = check_manifest(artifact)
    spec = _spec(artifact, chip=manifest["target"]["chip"])
    remote = _ssh(host, "mktemp", "-d").stdout.strip()
    for name, local in spec.files.items():
        _ssh(host, "mkdir", "-p", str(Path(remote) / Path(name).parent))
        subprocess.run(["scp", "-q", str(local), f"{host}:{remote}/{name}"], check=True, timeout=600)
    try:
        for run, expect_tidl in ((spec, True), (spec.baseline, False)):
            argv = ["python3" if a == "{python}" else a for a in run.command]
            proc = _ssh(host, "sh", "-c", f"cd {shlex.quote(remote)} && " + " ".join(shlex.quote(a) for a in argv))
            assert proc.returncode == 0, proc.stderr
            (result,) = parse_result_lines(proc.stdout)
            assert ("TIDLExecutionProvider" in result["providers"]) is expect_tidl
            if expect_tidl:
                assert result["tidl_fallback"] is None and result["tidl_subgraphs"] >= 1
                assert result["scope"]["precision"] in ("int8", "int16")
    finally:
        _ssh(host, "rm", "-rf", remote)
