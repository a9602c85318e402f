"""The ESP-DL worker's layer-wise error analysis gives exactly esp-ppq's figures.

targets/espdl/worker_build.py computes the float outputs once per batch instead of esp-ppq's once
per op and batch (half the forward passes, most of a large model's build). This runs both in the
real espdl environment on the quantised bundled sample and on a corpus model with residual
branches, and compares every op's noise:signal ratio for equality.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

from edgedeploy.sample import sample_calibration_path, sample_model_path

pytestmark = pytest.mark.toolchain("espdl")

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "fixtures" / "corpus"

SCRIPT = r"""
import json, os, shutil, sys, tempfile
import numpy as np, torch
sys.path.insert(0, sys.argv[1])
from worker_build import layerwise_error
from esp_ppq.api import espdl_quantize_onnx
from esp_ppq.quantization.analyse.layerwise import layerwise_error_analyse

model, calib, shape = sys.argv[2], np.load(sys.argv[3]), json.loads(sys.argv[4])
name = [k for k in calib.files if k != "labels"][0]
batches = [torch.from_numpy(np.ascontiguousarray(calib[name][i:i + 4])) for i in range(0, 20, 4)]
work = tempfile.mkdtemp()
scratch = os.path.join(work, "m.onnx")
shutil.copyfile(model, scratch)
torch.manual_seed(0)
graph = espdl_quantize_onnx(onnx_import_file=scratch, espdl_export_file=os.path.join(work, "m.espdl"),
    calib_dataloader=batches, calib_steps=len(batches), input_shape=shape, inputs=[batches[0][:1]],
    target="esp32s3", num_of_bits=8, collate_fn=lambda b: b.to(torch.float32), device="cpu",
    error_report=False, skip_export=True)
collate = lambda b: b.to(torch.float32)
theirs = layerwise_error_analyse(graph=graph, running_device="cpu", collate_fn=collate, dataloader=batches, steps=len(batches) - 1, verbose=False)
ours = layerwise_error(graph, batches, collate)
print("RESULT " + json.dumps({"theirs": theirs, "ours": ours}))
"""


def espdl_python() -> Path:
    from edgedeploy.targets.espdl import TOOLCHAIN

    return TOOLCHAIN.python()


@pytest.mark.parametrize(
    "model, calib",
    [
        (sample_model_path(), sample_calibration_path()),
        (CORPUS / "mlperf_tiny_resnet8.onnx", CORPUS / "mlperf_tiny_resnet8.calib.npz"),
    ],
    ids=["mnist-sample", "resnet8"],
)
def test_layerwise_error_equals_esp_ppqs(model, calib, tmp_path):
    with np.load(calib) as data:
        name = [k for k in data.files if k != "labels"][0]
        shape = [1, *data[name].shape[1:]]
    done = subprocess.run(
        [str(espdl_python()), "-c", SCRIPT, str(ROOT / "targets" / "espdl"), str(model), str(calib), json.dumps(shape)],
        capture_output=True, text=True, timeout=600, cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    line = next(l for l in done.stdout.splitlines() if l.startswith("RESULT "))
    result = json.loads(line[len("RESULT "):])
    theirs, ours = result["theirs"], result["ours"]
    assert len(ours) >= 3, "every computing op is measured"
    assert ours == theirs
