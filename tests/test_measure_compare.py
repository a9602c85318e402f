"""Before/after on one device: a ratio only when ONE part of the deployment differs.

The TensorRT target's baseline is the ONNX model on ONNX Runtime in fp32, its "after" an fp16
(or int8) engine: the two differ in backend AND precision, so `measure` must give both figures
with their scopes and refuse the ratio, saying why. The sessions below carry the scopes the
TensorRT runners print (templates/tensorrt/ort_runner.py.j2 and trt_runner.py.j2: the engine's
scope, then the runner's additions); the figures are MADE UP for the test (no Jetson here), and
they go through the same functions `measure` uses (latency_record, compare_before_after, the
terminal view).
"""

from __future__ import annotations

import pytest

from edgedeploy.devices import Device
from edgedeploy.pipeline.measure import RunnerRun, compare_before_after, latency_record
from edgedeploy.devices.runners import SessionSettings
from edgedeploy.targets.base import RunnerSpec

SHA = "ab" * 32
MODEL_INFO = {"name": "mnist_cnn", "sha256": SHA, "input_shapes": {"input": [1, 1, 28, 28]}}
JETSON = Device(name="orin", chip="jetson-agx-orin", transport="ssh", host="orin.lan")
ENVIRONMENT = {"hostname": "orin", "cpu_model": "ARMv8 Processor rev 1 (v8l)", "cpu_cores": 12}
# What targets/tensorrt/convert.py writes into engine_info.json's scope.
ENGINE_SCOPE = {"model_sha256": SHA, "input_shapes": {"input": [1, 1, 28, 28]}, "batch": 1, "precision": "fp16", "backend": "tensorrt-gpu", "chip": "jetson-agx-orin", "device": "orin"}


def sessions(scope: dict, median_us: float) -> list[dict]:
    out = []
    for index, m in enumerate((median_us, median_us * 1.01, median_us * 0.99)):
        out.append(
            {
                "schema": "edgedeploy.run/1",
                "scope": dict(scope),
                "session": index + 1,
                "pid": 1000 + index,
                "first_inference_us": m * 3,
                "iterations": 200,
                "latency_us": {"count": 200, "min": m * 0.9, "mean": m, "p50": m, "p90": m * 1.1, "p99": m * 1.2, "max": m * 1.5},
                "batch": 1,
                "throughput_items_per_s": 1e6 / m,
                "environment": dict(ENVIRONMENT),
            }
        )
    return out


def record(label: str, scope: dict, median_us: float, backend: str) -> dict:
    run = RunnerRun(label, RunnerSpec(files={}, command=[], backend=backend), sessions=sessions(scope, median_us))
    return latency_record(run, JETSON, SessionSettings(), MODEL_INFO)


def ort_baseline(**changes) -> dict:
    # ort_runner.py.j2: the engine's scope, then backend/precision/onnxruntime_version of its own.
    scope = dict(ENGINE_SCOPE, backend="onnxruntime-cuda", precision="fp32", onnxruntime_version="1.20.0")
    scope.update(changes)
    return record("before", scope, 900.0, "onnxruntime (CUDA if available, else CPU)")


def trt_engine(**changes) -> dict:
    # trt_runner.py.j2: the engine's scope plus what it read on the board.
    scope = dict(ENGINE_SCOPE, device_board="NVIDIA Jetson AGX Orin Developer Kit", trt_version_runtime="10.3.0", gpu_name="Orin")
    scope.update(changes)
    return record("after", scope, 300.0, "tensorrt-gpu")


def test_fp32_baseline_against_an_fp16_engine_gets_both_figures_and_no_ratio():
    comparison = compare_before_after(ort_baseline(), trt_engine())
    assert comparison["speedup"] is None and comparison["ratio"] is None
    refused = comparison["refused"]
    assert "backend (onnxruntime-cuda vs tensorrt-gpu)" in refused and "precision (fp32 vs fp16)" in refused
    assert "differ in one thing" in refused
    assert comparison["differs_in"] == ["precision", "backend"]
    # Fields one runner recorded alone (GPU name, library versions) decide nothing.
    assert not any(name in refused for name in ("gpu_name", "onnxruntime_version", "trt_version_runtime", "device_board"))
    # Both figures stand side by side, each with its deployment.
    assert comparison["before_median_us"] == pytest.approx(900.0) and comparison["after_median_us"] == pytest.approx(300.0)
    assert comparison["deployment"]["before"]["precision"] == "fp32" and comparison["deployment"]["after"]["precision"] == "fp16"


def test_one_difference_in_the_deployment_gets_its_ratio():
    # An fp32 engine against the fp32 baseline: only the backend differs.
    comparison = compare_before_after(ort_baseline(), trt_engine(precision="fp32"))
    assert comparison["speedup"] == pytest.approx(3.0)
    assert comparison["differs_only_in"] == "deployment" and comparison["deployment_differs_in"] == ["backend"]
    # The same runtime in another precision: only the precision differs.
    comparison = compare_before_after(ort_baseline(), ort_baseline(precision="int8"))
    assert comparison["deployment_differs_in"] == ["precision"] and comparison["speedup"] == pytest.approx(1.0)


def test_a_core_field_one_runner_left_out_counts_as_different():
    before = ort_baseline()
    after = trt_engine(precision="fp32")
    del after["scope"]["batch"]
    comparison = compare_before_after(before, after)
    assert comparison["speedup"] is None and "batch (1 vs None)" in comparison["refused"]


def test_other_devices_are_never_divided_even_with_one_deployment_change():
    after = trt_engine(precision="fp32")
    after["scope"]["device"] = dict(after["scope"]["device"], name="orin2", hostname="orin2")
    comparison = compare_before_after(ort_baseline(), after)
    assert comparison["speedup"] is None and "never divided" in comparison["refused"]


def test_the_terminal_view_shows_both_scopes_and_the_reason():
    from edgedeploy.report.text import render_measurement

    before, after = ort_baseline(), trt_engine()
    measurement = {
        "artifact": {"path": "OUT/mnist_cnn/jetson-agx-orin"},
        "device": {"name": "orin", "transport": "ssh", "address": "orin.lan"},
        "inputs": {"source": "the artifact's runner (inputs.npz)"},
        "latency": {"before": before, "after": after},
        "comparison": compare_before_after(before, after),
        "partial": False,
    }
    text = render_measurement(measurement)
    assert "\nbefore: onnxruntime-cuda\n" in text and "\nafter: tensorrt-gpu\n" in text
    scopes = [line for line in text.splitlines() if line.strip().startswith("scope:")]
    assert len(scopes) == 2
    assert "fp32; onnxruntime-cuda" in scopes[0] and "fp16; tensorrt-gpu" in scopes[1]
    assert all("model mnist_cnn sha256 abababababab" in s and "device orin" in s for s in scopes)
    assert "before/after: no ratio: the figures differ in precision (fp32 vs fp16) and backend (onnxruntime-cuda vs tensorrt-gpu)" in text
    assert "side by side: before 900.0 us (fp32 on onnxruntime-cuda); after 300.0 us (fp16 on tensorrt-gpu)" in text
    assert "x as fast" not in text
