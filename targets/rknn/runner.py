"""What `edgedeploy measure` runs on an RKNN board for an artifact (targets/base.py RunnerSpec).

A device with a Python interpreter gets runner/rknn_runner.py (rknn-toolkit-lite2); a device
whose inventory entry sets `python: none` gets the C runner, compiled on the board with its
Makefile. The baseline ("before") is edgedeploy's built-in onnx-cpu runner: the artifact's
model.onnx on ONNX Runtime on the same board's CPU, on the same samples (runner/inputs.npz,
which is also what the host's reference runs on), with the same scope keys.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from edgedeploy.errors import ArtifactError
from edgedeploy.targets.base import RunnerSpec

RUNNER_DIR = "runner"
RUNNER_TIMEOUT_S = 600.0
NO_PYTHON = ("", "none", "no", "false")


def _runner_meta(artifact: Path) -> dict:
    path = artifact / RUNNER_DIR / "runner.json"
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ArtifactError(f"{artifact} has no usable {RUNNER_DIR}/runner.json ({exc}); rebuild it with `edgedeploy build`.") from exc


def _baseline(artifact: Path, manifest: dict, meta: dict) -> RunnerSpec:
    from edgedeploy.devices.runners import SessionSettings, onnx_cpu_runner_spec

    stage = Path(tempfile.mkdtemp(prefix="edgedeploy-rknn-baseline-"))
    model_info = {"name": manifest["model"].get("name"), "sha256": manifest["model"]["sha256"], "input_shapes": meta["scope"]["input_shapes"]}
    spec = onnx_cpu_runner_spec(stage, artifact / "model.onnx", artifact / RUNNER_DIR / meta["inputs_npz"], model_info, "fp32", SessionSettings(), label="ONNX Runtime CPU (the float model on the board)")
    spec.timeout_s = RUNNER_TIMEOUT_S
    return spec


def runner_spec(target, artifact: Path, manifest: dict, device) -> RunnerSpec:
    from edgedeploy.devices.runners import INPUTS_REMOTE_NAME

    built_for = manifest.get("target", {}).get("chip")
    if device.chip != built_for:
        raise ArtifactError(f"{artifact} was built for {built_for}, but device {device.name} is a {device.chip}; rebuild with --target {device.chip}.")
    if "rknn" not in manifest:
        raise ArtifactError(f"{artifact} is not an RKNN artifact (its manifest has no rknn section).")
    meta = _runner_meta(artifact)
    runner = artifact / RUNNER_DIR
    common = {
        "runner.json": runner / "runner.json",
        meta["rknn_file"]: artifact / meta["rknn_file"],
        # The samples in the ONNX model's domain: measure runs the host reference on these.
        INPUTS_REMOTE_NAME: runner / meta["inputs_npz"],
    }
    if str(device.python or "").strip().lower() in NO_PYTHON:
        n_outputs = len(meta["outputs"])
        return RunnerSpec(
            files={
                "rknn_runner.c": runner / "rknn_runner.c",
                "Makefile": runner / "Makefile",
                **common,
                **{i["bin_file"]: runner / i["bin_file"] for i in meta["inputs"]},
            },
            command=["sh", "-c", "make -s rknn_runner && ./rknn_runner"],
            result_files=[f"output{j}.bin" for j in range(n_outputs)],
            timeout_s=RUNNER_TIMEOUT_S,
            backend="rknn-api-c-npu",
            baseline=None,  # a board without Python has no ONNX Runtime either
        )
    return RunnerSpec(
        files={
            "rknn_runner.py": runner / "rknn_runner.py",
            "protocol.py": runner / "protocol.py",
            **common,
            **{f: runner / f for f in meta["input_files"]},
        },
        command=["{python}", "rknn_runner.py"],
        result_files=["outputs.npz"],
        timeout_s=RUNNER_TIMEOUT_S,
        backend="rknn-lite2-npu",
        baseline=_baseline(artifact, manifest, meta),
    )
