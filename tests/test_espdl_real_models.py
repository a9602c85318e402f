"""ESP-DL builds that esp-ppq converts but edgedeploy used to lose: a model whose Resize sizes come
from its own Shape, and a model too big for the dev kit's flash.

ONNX Runtime runs such a model batched (the sizes follow the batch), so the build's probe calls it
batchable; esp-ppq's simplifier folds the Shape at the deployment shape (batch 1) and its executor
then asserts on a batch of 4 (`size[:2] == value.shape[:2]` in Resize_forward). The corpus's
lraspp_mobilenet_v3_large failed this way on both ESP chips, although esp-ppq called directly
(one sample per step) converts it. The worker now calibrates one sample per step when the batched
calibration fails, and the report says so.
"""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

pytestmark = pytest.mark.toolchain("espdl")


def resize_to_shape_model(path):
    """Conv -> Relu -> Resize to (N, C, 32, 32), the sizes read from the tensor's own Shape with
    Constant nodes, as torch.onnx exports torchvision's `F.interpolate(x, size=...)`."""
    rng = np.random.default_rng(0)
    x = helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 3, 16, 16])
    y = helper.make_tensor_value_info("mask", TensorProto.FLOAT, [1, 4, 32, 32])
    inits = [
        numpy_helper.from_array(rng.normal(0, 0.3, (4, 3, 3, 3)).astype(np.float32), "w"),
        numpy_helper.from_array(np.zeros(4, np.float32), "b"),
    ]

    def constant(name, values):
        return helper.make_node("Constant", [], [name], name=name, value=numpy_helper.from_array(np.array(values, np.int64), name))

    nodes = [
        helper.make_node("Conv", ["image", "w", "b"], ["features"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["features"], ["relu"], name="relu"),
        helper.make_node("Shape", ["relu"], ["shape"], name="shape"),
        constant("axes", [0]),
        constant("starts", [0]),
        constant("ends", [2]),
        helper.make_node("Slice", ["shape", "starts", "ends", "axes"], ["batch_channels"], name="slice"),
        constant("hw", [32, 32]),
        helper.make_node("Concat", ["batch_channels", "hw"], ["sizes"], name="sizes", axis=0),
        helper.make_node("Resize", ["relu", "", "", "sizes"], ["mask"], name="upsample", mode="linear"),
    ]
    model = helper.make_model(helper.make_graph(nodes, "segmenter", [x], [y], inits), opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 7
    onnx.checker.check_model(model)
    onnx.save(model, path)
    data = rng.uniform(0, 1, (16, 3, 16, 16)).astype(np.float32)
    np.savez(path.with_suffix(".npz"), image=data)
    return path, path.with_suffix(".npz")


def test_a_model_esp_ppq_cannot_batch_is_calibrated_one_sample_per_step(tmp_path):
    from edgedeploy.pipeline.build import BuildOptions, run_build

    model, data = resize_to_shape_model(tmp_path / "segmenter.onnx")
    logs: list[str] = []
    artifact = run_build(model, "esp32s3", BuildOptions(out_root=tmp_path / "out", calib=str(data), eval=str(data)), echo=logs.append)
    report = json.loads((artifact / "report.json").read_text())
    details = report["convert"]["details"]
    assert details["calibration_batch"] == 1 and details["calibration_steps"] == 16
    assert details["batched_simulation"] is False
    (note,) = [n for n in report["convert"]["notes"] if "one sample per step" in n]
    assert "calibration in batches of" in note
    assert any(line.startswith("convert: note: calibration in batches of") for line in logs)
    assert (artifact / "model.espdl").is_file()
    # The simulation ran on every evaluation sample, one at a time, and matches the float model.
    fidelity = report["accuracy"]["fidelity"]["mask"]
    assert fidelity["elements"] == 16 * 4 * 32 * 32 and fidelity["cosine"] > 0.99, fidelity


def test_a_model_too_big_for_the_dev_kits_flash_keeps_its_artifact(tmp_path, monkeypatch):
    """The corpus's mobilenet_v3_large (5.4 MiB int8) converts for the ESP32-S3 but does not fit the
    8 MiB flash of the dev kit next to a 3 MiB app: the build keeps model.espdl and says why it
    generated no firmware project, instead of throwing the conversion away.

    A real build of the bundled sample, for a dev kit whose flash is given as 3 MiB (a stand-in
    for a model larger than the real kit's flash, which would take minutes to quantise here)."""
    import dataclasses

    from edgedeploy.pipeline.build import BuildOptions, run_build
    from edgedeploy.sample import sample_model_path
    from edgedeploy.targets.espdl import codegen

    small = dataclasses.replace(codegen.DEV_KITS["esp32s3"], flash_bytes=3 * codegen.MIB)
    monkeypatch.setitem(codegen.DEV_KITS, "esp32s3", small)
    logs: list[str] = []
    artifact = run_build(sample_model_path(), "esp32s3", BuildOptions(out_root=tmp_path / "out"), echo=logs.append)
    report = json.loads((artifact / "report.json").read_text())
    assert report["codegen"]["status"] == "skipped"
    assert "does not fit the 3 MiB flash of the ESP32-S3-DevKitC-1" in report["codegen"]["reason"]
    assert (artifact / "model.espdl").is_file() and not (artifact / "firmware").exists()
    assert any(line.startswith("codegen: warning:") and "model.espdl is kept" in line for line in logs)
