"""What `edgedeploy measure` runs on an RKNN board for an artifact (targets/base.py RunnerSpec).

A device with a Python interpreter gets runner/rknn_runner.py (rknn-toolkit-lite2); a device
whose inventory entry sets `python: none` gets the C runner, compiled on the board with its
Makefile. Either way the baseline is runner/onnx_runner.py, ONNX Runtime on the board's CPU with
the same test inputs (it needs Python and onnxruntime on the board).
"""

from __future__ import annotations

import json
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


def runner_spec(target, artifact: Path, manifest: dict, device) -> RunnerSpec:
    built_for = manifest.get("target", {}).get("chip")
    if device.chip != built_for:
        raise ArtifactError(f"{artifact} was built for {built_for}, but device {device.name} is a {device.chip}; rebuild with --target {device.chip}.")
    if "rknn" not in manifest:
        raise ArtifactError(f"{artifact} is not an RKNN artifact (its manifest has no rknn section).")
    meta = _runner_meta(artifact)
    runner = artifact / RUNNER_DIR
    common = {"runner.json": runner / "runner.json", meta["rknn_file"]: artifact / meta["rknn_file"]}
    baseline = RunnerSpec(
        files={
            "onnx_runner.py": runner / "onnx_runner.py",
            "protocol.py": runner / "protocol.py",
            "runner.json": runner / "runner.json",
            meta["onnx_file"]: artifact / meta["onnx_file"],
            **{f: runner / f for f in meta["onnx_input_files"]},
        },
        command=["{python}", "onnx_runner.py"],
        result_files=["onnx_outputs.npz"],
        timeout_s=RUNNER_TIMEOUT_S,
        backend="onnxruntime CPU (fp32)",
    )
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
            backend="rknn_api C (NPU)",
            baseline=None,  # a board without Python has no ONNX Runtime baseline either
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
        backend="rknn-toolkit-lite2 (NPU)",
        baseline=baseline,
    )
