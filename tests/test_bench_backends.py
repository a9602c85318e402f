"""The optional backends with their real environments: PyTorch (eager, from ONNX via onnx2torch and
from a torch.export .pt2) in the `torch` environment, and TFLite in the `eiq` environment."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.test_bench_cli import QUICK, _one_clear_error, edgedeploy

EXPORT_SCRIPT = '''
import sys, torch
class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.fc = torch.nn.Linear(8, 4)
    def forward(self, x):
        return self.fc(torch.relu(self.conv(x)).mean(dim=(2, 3)))
program = torch.export.export(Net().eval(), (torch.rand(2, 3, 16, 16),))
torch.export.save(program, sys.argv[1])
'''


@pytest.mark.toolchain("torch")
def test_torch_eager_on_the_sample_through_onnx2torch():
    # torch-eager-cuda too: on a machine without CUDA it must be skipped with the reason (and,
    # being asked for by name, end in one error after the results)
    r = edgedeploy("bench", "--backend", "ort-cpu,torch-eager-cpu,torch-eager-cuda", "--format", "json", *QUICK)
    doc = json.loads(r.stdout)
    if doc["device"]["accelerators"]:  # a GPU machine with a CUDA build of torch: it must run
        assert r.returncode == 0, r.stderr
        assert any(m["scope"]["backend"] == "torch-eager-cuda" for m in doc["results"])
    else:
        _one_clear_error(r, "did not run: torch-eager-cuda")
        [skip] = doc["skipped"]
        assert skip["backend"] == "torch-eager-cuda" and "torch.cuda.is_available() is False" in skip["reason"]
    by_backend = {m["scope"]["backend"]: m for m in doc["results"]}
    torch_m = by_backend["torch-eager-cpu"]
    assert torch_m["backend"]["libraries"]["torch"].startswith("2.13")
    assert torch_m["backend"]["detail"]["mode"] == "eager" and torch_m["backend"]["detail"]["source"] == "onnx"
    assert len({s["pid"] for s in torch_m["sessions"]}) == 3
    # both ran on the same scope but the backend, so both are ranked
    assert {e["backend"] for e in doc["comparison"]["entries"]} == {"ort-cpu", "torch-eager-cpu"}


@pytest.mark.toolchain("torch")
def test_torch_eager_from_a_pt2_export(tmp_path):
    from edgedeploy.measure.backends import TORCH_TOOLCHAIN

    pt2 = tmp_path / "net.pt2"
    subprocess.run([str(TORCH_TOOLCHAIN.python()), "-c", EXPORT_SCRIPT, str(pt2)], check=True, timeout=300)
    # ONNX-only backends asked for by name: the result still comes (on stdout), then one error
    r = edgedeploy("bench", str(pt2), "--backend", "ort-cpu,tflite-cpu,torch-eager-cpu", "--format", "json", *QUICK)
    doc = json.loads(r.stdout)
    _one_clear_error(r, "did not run: ort-cpu, tflite-cpu")
    assert doc["model"]["format"] == "pt2"
    skipped = {s["backend"]: s["reason"] for s in doc["skipped"]}
    assert "needs an ONNX model" in skipped["ort-cpu"] and ".pt2" in skipped["tflite-cpu"]
    eager = next(m for m in doc["results"] if m["scope"]["backend"] == "torch-eager-cpu")
    assert eager["scope"]["input_shapes"] == {"x": [2, 3, 16, 16]} and eager["scope"]["batch"] == 2
    assert eager["backend"]["detail"]["source"] == "pt2"


@pytest.mark.toolchain("torch")
def test_a_corrupt_pt2_archive_is_one_clear_error(tmp_path):
    import zipfile

    bad = tmp_path / "bad.pt2"
    with zipfile.ZipFile(bad, "w") as z:
        z.writestr("bad/archive_format", "pt2")
        z.writestr("bad/models/model.json", "{not json")
    _one_clear_error(edgedeploy("bench", str(bad), "--backend", "torch-eager-cpu", *QUICK), "could not be loaded with torch.export.load")


@pytest.mark.toolchain("eiq")
def test_tflite_through_onnx2tf():
    r = edgedeploy("bench", "--backend", "tflite-cpu", "--format", "json", *QUICK)
    assert r.returncode == 0, r.stderr
    [m] = json.loads(r.stdout)["results"]
    assert m["scope"]["backend"] == "tflite-cpu" and m["scope"]["input_shapes"] == {"input": [1, 1, 28, 28]}
    assert m["backend"]["libraries"]["ai-edge-litert"] and m["backend"]["libraries"]["onnx2tf"]
    assert m["summary"]["median_us"] > 0


@pytest.mark.hardware("CUDA GPU")
def test_cuda_sessions_are_tuned_and_a_captured_graph_beats_eager_launches(tmp_path):
    # Where it runs: EDGEDEPLOY_HARDWARE='CUDA GPU' and EDGEDEPLOY_TORCH_PYTHON naming a CUDA build of torch.
    # What a tuned hand-written loop sets must be set and recorded (cudnn.benchmark), and the
    # hand-capture backends must run: on a small network, replaying one CUDA graph is faster
    # than launching every kernel from Python (docs/benchmarks.md, run 2: 7.7x on cnn_bilstm).
    import os

    python = os.environ["EDGEDEPLOY_TORCH_PYTHON"]
    pt2 = tmp_path / "net.pt2"
    subprocess.run([python, "-c", EXPORT_SCRIPT, str(pt2)], check=True, timeout=300)
    r = edgedeploy("bench", str(pt2), "--backend", "torch-eager-cuda,torch-eager-capture-cuda,torch-compile-capture-cuda", "--format", "json", *QUICK, timeout=1800)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    by = {m["scope"]["backend"]: m for m in doc["results"]}
    for m in by.values():
        assert m["backend"]["detail"]["cudnn_benchmark"] is True and m["backend"]["detail"]["device"] == "cuda"
    assert by["torch-eager-capture-cuda"]["backend"]["detail"]["mode"] == "eager-capture"
    assert by["torch-eager-capture-cuda"]["summary"]["median_us"] < by["torch-eager-cuda"]["summary"]["median_us"]
