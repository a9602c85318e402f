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
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest

from edgedeploy.artifacts import check_manifest
from edgedeploy.pipeline.build import BuildOptions, run_build
from edgedeploy.targets.tidl import TidlOptions
from edgedeploy.devices import Device, local_device, open_transport
from edgedeploy.errors import ArtifactError
from edgedeploy.measure.accuracy import fidelity
from edgedeploy.measure.protocol import RUN_SCHEMA, parse_result_lines
from edgedeploy.targets import find_chip

from tests.tidl_models import FIXTURES, conv_erf_conv_model, write_inputs
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


def run_session(device, spec, fetch_to: Path, extra=FAST):
    """One session of a RunnerSpec on a device through its real transport (as `edgedeploy measure` does):
    copy the files, run the command, fetch the result files, remove the work folder."""
    transport = open_transport(device)
    workdir = transport.make_workdir()
    try:
        for remote, local in spec.files.items():
            transport.put(local, remote)
        argv = [device.python if a == "{python}" else a for a in spec.command] + list(extra)
        result = transport.run(argv, workdir, timeout_s=300.0)
        if result.returncode == 0:
            for name in spec.result_files:
                transport.get(name, Path(fetch_to) / name)
        return result
    finally:
        transport.cleanup(workdir)
        transport.close()


def _spec(artifact: Path, chip="am68a", device=None):
    target, _ = find_chip(chip)
    return target.runner_spec(artifact, check_manifest(artifact, chip), device)


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


def _check_fallback_session(proc, manifest) -> dict:
    assert proc.returncode == 0, proc.stderr
    assert "TIDLExecutionProvider is not in this onnxruntime" in proc.stderr
    assert "This figure is a CPU figure, not a TIDL one." in proc.stderr
    (r,) = parse_result_lines(proc.stdout)
    assert r["schema"] == RUN_SCHEMA
    assert r["requested_provider"] == "tidl" and r["providers"] == ["CPUExecutionProvider"]
    assert "TIDLExecutionProvider is not in this onnxruntime" in r["tidl_fallback"]
    scope = r["scope"]
    assert scope["model_sha256"] == manifest["model"]["sha256"]
    assert scope["precision"] == "fp32" and "CPUExecutionProvider" in scope["backend"]  # never labelled TIDL
    assert scope["input_shapes"] == {"input": [1, 1, 28, 28]} and scope["batch"] == 1
    assert r["iterations"] >= 5 and r["latency_us"]["p50"] > 0 and r["first_inference_us"] > 0
    assert r["output_samples"] == 16
    return r


def test_runner_end_to_end_here_falls_back_visibly(sample_artifact, tmp_path):
    """Three sessions (separate processes) through the local transport, with this machine's plain onnxruntime."""
    device = local_device()
    spec = _spec(sample_artifact)
    manifest = check_manifest(sample_artifact, "am68a")
    results = [_check_fallback_session(run_session(device, spec, tmp_path), manifest) for _ in range(SESSIONS)]
    assert len({r["first_inference_us"] for r in results}) == SESSIONS  # three processes, three measurements
    # The outputs it saved are the model's outputs on the inputs it was given.
    reference = np.load(sample_artifact / "runner" / "reference_outputs.npz")["logits"]
    produced = np.load(tmp_path / "outputs_tidl.npz")["logits"]
    assert produced.shape == reference.shape == (16, 1, 10)
    assert fidelity(reference, produced)["max_abs_error"] < 1e-4


def test_runner_over_ssh_on_loopback(sample_artifact, tmp_path, loopback_sshd):
    """The same flow over a real OpenSSH connection (sshd on loopback stands in for the board's)."""
    device = loopback_sshd.device(name="loopback-am68a", chip="am68a")
    spec = _spec(sample_artifact, device=device)
    _check_fallback_session(run_session(device, spec, tmp_path), check_manifest(sample_artifact, "am68a"))
    baseline = run_session(device, spec.baseline, tmp_path)
    (result,) = parse_result_lines(baseline.stdout)
    assert result["requested_provider"] == "cpu" and result["tidl_fallback"] is None
    assert (tmp_path / "outputs_tidl.npz").is_file() and (tmp_path / "outputs_cpu.npz").is_file()


def test_cpu_baseline_end_to_end(sample_artifact, tmp_path):
    proc = run_session(local_device(), _spec(sample_artifact).baseline, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "warning" not in proc.stderr
    (result,) = parse_result_lines(proc.stdout)
    assert result["requested_provider"] == "cpu" and result["tidl_fallback"] is None
    assert result["scope"]["precision"] == "fp32"


def test_compiled_artifacts_travel_with_the_runner(tmp_path):
    """After a compile (here: the stand-in command of test_tidl_build, hand-made artifacts), the runner gets them."""
    model = tmp_path / "model.onnx"
    onnx.save(conv_erf_conv_model(), str(model))
    calib = write_inputs(tmp_path / "calib.npz", (1, 4, 8, 8), 4)
    command = f"{shlex.quote(sys.executable)} {shlex.quote(STANDIN)} {shlex.quote(str(FIXTURES / 'conv_erf_conv'))} {{dir}}"
    dest = run_build(model, "am69a", BuildOptions(out_root=tmp_path / "out", calib=calib, target_options={"tidl": TidlOptions(tidl_compile_command=command)}), echo=lambda line: None)
    spec = _spec(dest, chip="am69a")
    shipped = {k for k in spec.files if k.startswith("tidl_artifacts/")}
    assert shipped == {f"tidl_artifacts/{n}" for n in ("allowedNode.txt", "onnxrtMetaData.txt", "a_tidl_net.bin", "a_tidl_io_1.bin", "y_tidl_net.bin", "y_tidl_io_1.bin")}
    proc = run_session(local_device(), spec, tmp_path)  # no TI runtime here: falls back, but runs
    assert proc.returncode == 0 and parse_result_lines(proc.stdout)[0]["tidl_fallback"]


@pytest.mark.hardware("TI AM68A/TDA4VM board")
def test_on_a_ti_board_tidl_and_the_cpu_baseline_run(tmp_path):
    """On a TI board: EDGEDEPLOY_TIDL_BOARD names its entry in the device inventory, EDGEDEPLOY_TIDL_ARTIFACT a
    compiled artifact for its SoC. The TIDL run uses TIDLExecutionProvider with no fallback; the CPU
    baseline runs on the same board."""
    from edgedeploy.devices import load_inventory

    device = load_inventory().get(os.environ["EDGEDEPLOY_TIDL_BOARD"])
    artifact = Path(os.environ["EDGEDEPLOY_TIDL_ARTIFACT"])
    spec = _spec(artifact, chip=device.chip, device=device)
    for run, expect_tidl in ((spec, True), (spec.baseline, False)):
        proc = run_session(device, run, tmp_path, extra=())
        assert proc.returncode == 0, proc.stderr
        (result,) = parse_result_lines(proc.stdout)
        assert ("TIDLExecutionProvider" in result["providers"]) is expect_tidl
        if expect_tidl:
            assert result["tidl_fallback"] is None and result["tidl_subgraphs"] >= 1
            assert result["scope"]["precision"] in ("int8", "int16")
