"""`edgedeploy diagnose` on eIQ (the artifact's float32 and int8 TFLite models in the eiq environment), on a
constructed case whose cause is known: one pixel of one calibration sample at 400 stretches the first
layer's range, so the evaluation data (no outlier) lose nearly everything there.

TFLite fuses Conv+Relu into one operator: the diagnosis must name the ReLU with the Conv absorbed as the
first sharp fall, and, since TFLite's tensors carry their scales, the outlier-dominated range as the cause.
One onnx2tf build (about 40 s) and one diagnosis (seconds).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from edgedeploy.report.schemas import validate
from tests.helpers import run_cli
from tests.test_accuracy_diagnosis import write_outlier_case


@pytest.fixture(scope="module")
def outlier_diagnosis(tmp_path_factory):
    root = tmp_path_factory.mktemp("eiq-diagnose")
    model, calib, evaluation = write_outlier_case(root)
    built = run_cli("build", str(model), "--target", "imx8mp", "--calib", str(calib), "--eval", str(evaluation), "-o", str(root / "out"))
    assert built.returncode == 0, built.stderr
    done = run_cli("diagnose", str(root / "out" / "m" / "imx8mp"), "--eval", str(evaluation), "--no-qdq", "--format", "json")
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    validate(document)  # the eIQ path against accuracy_diagnosis-1.json (closed: every field described)
    return root / "out" / "m" / "imx8mp", document


@pytest.mark.toolchain("eiq")
def test_eiq_names_the_fused_first_layer_and_the_outlier(outlier_diagnosis):
    (eiq,) = outlier_diagnosis[1]["paths"]
    assert eiq["path"] == "imx8mp"
    first = eiq["first_sharp_drop"]
    assert first["node"] == "relu1" and first["accumulated_snr_db"] < 10
    relu1 = next(n for n in eiq["nodes"] if n["node"] == "relu1")
    assert relu1["absorbs"] == ["conv1"] and relu1["isolated"] is None
    assert any(c["node"] == "relu1" and c["cause"] in ("outlier_range", "calibration_unrepresentative") for c in eiq["causes"])
    # no isolated figures: the SNR curve labels the ranked nodes as the largest falls
    from edgedeploy.report.snr_curve import text_chart

    assert "F first sharp fall + 1 largest fall: relu1" in text_chart(eiq)[3]


@pytest.mark.toolchain("eiq")
def test_a_target_path_that_cannot_run_leaves_the_other(outlier_diagnosis, tmp_path):
    """An artifact from before tflite_layers.json: the eIQ path is skipped with its reason, ONNX Runtime's still runs."""
    old = tmp_path / "imx8mp"
    shutil.copytree(outlier_diagnosis[0], old)
    (old / "tflite_layers.json").unlink()
    # An artifact from before it never listed it: its manifest, as then, so the artifact is intact.
    manifest = json.loads((old / "manifest.json").read_text())
    del manifest["files"]["tflite_layers.json"]
    (old / "manifest.json").write_text(json.dumps(manifest))
    done = run_cli("diagnose", str(old), "--format", "json")
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert [p["path"] for p in document["paths"]] == ["onnxruntime-qdq"]
    assert document["skipped"][0]["path"] == "imx8mp" and "build it again" in document["skipped"][0]["reason"]
    refused = run_cli("diagnose", str(old), "--no-qdq")
    assert refused.returncode == 11 and "build it again" in refused.stderr and "Traceback" not in refused.stderr


@pytest.mark.toolchain("eiq")
def test_brute_force_on_eiq_keeps_each_node_in_float_through_the_converter(outlier_diagnosis, tmp_path):
    """scripts/accuracy/brute_force.py --chip on this artifact: the TFLite converter calibrates once,
    then quantises with each node's operators denylisted (kept in float) and with every other
    operator denylisted (that node alone quantised); the outputs against ONNX Runtime's float model."""
    import importlib.util
    from pathlib import Path

    import numpy as np

    spec = importlib.util.spec_from_file_location("brute_force", Path(__file__).parents[1] / "scripts" / "accuracy" / "brute_force.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    artifact, root = outlier_diagnosis[0], outlier_diagnosis[0].parents[2]
    with np.load(root / "eval.npz") as data:  # the script scores a task metric: labels of no meaning here
        np.savez(tmp_path / "eval.npz", image=data["image"], labels=np.zeros(len(data["image"]), dtype=np.int64))
    found = script.on_chip(artifact / "model.onnx", root / "calib.npz", tmp_path / "eval.npz", "imx8mp", None, None, artifact=artifact)
    by_node = {n["node"]: n for n in found["nodes"]}
    # TFLite fuses Conv+Relu into one operator: both nodes own it, so both have its figures.
    assert {"conv1", "relu1", "conv2", "relu2"} <= set(by_node) and found["nodes_measured"] == "every node"
    assert by_node["conv1"]["snr_all_but_this_db"] == by_node["relu1"]["snr_all_but_this_db"]
    assert by_node["conv1"]["snr_this_alone_db"] == by_node["relu1"]["snr_this_alone_db"]
    # Its own calibration gives back the build's int8 model (the diagnosis's output figure, there
    # against the float32 TFLite model rather than ONNX Runtime).
    (eiq,) = outlier_diagnosis[1]["paths"]
    built = next(n for n in eiq["nodes"] if n["tensor"] == "out")["accumulated"]["snr_db"]
    assert abs(found["snr_every_node_db"] - built) < 1, (found["snr_every_node_db"], built)
    # The outlier stretched the int8 *input* (400 in one pixel): every variant keeps the model's
    # int8 input, so no node kept in float recovers it; a node alone quantised loses no more.
    assert all(abs(n["snr_all_but_this_db"] - found["snr_every_node_db"]) < 1 for n in by_node.values())
    assert all(n["snr_this_alone_db"] >= found["snr_every_node_db"] - 0.1 for n in by_node.values())


@pytest.mark.toolchain("eiq")
def test_the_statistics_hold_the_samples_the_budget_allows_and_the_figures_use_every_one(outlier_diagnosis, monkeypatch):
    """The worker held every tensor's float values of every calibration and evaluation sample until the end
    (PP-OCRv4's recogniser grew past 21 GB and was killed inside build --recover): it keeps only the samples
    its budget holds for the statistics, says so in the method, and sums the figures over every sample."""
    from edgedeploy.pipeline.diagnose import DiagnoseOptions, diagnose_artifact
    from edgedeploy.targets.eiq import diagnose as eiq_diagnose

    artifact, document = outlier_diagnosis
    monkeypatch.setattr(eiq_diagnose, "STATS_BUDGET_BYTES", 1, raising=False)  # less than one sample: the first of each kept
    cut = diagnose_artifact(artifact, DiagnoseOptions(eval=artifact.parents[2] / "eval.npz", qdq=False), lambda line: None)
    (eiq,), (full,) = cut["paths"], document["paths"]
    assert "statistics on 1 of 24 calibration samples and 1 of 16 evaluation samples" in eiq["method"]
    assert "statistics on" not in full["method"]
    figures = {n["node"]: n["accumulated"] for n in full["nodes"]}
    assert figures and {n["node"]: n["accumulated"] for n in eiq["nodes"]} == figures


def test_a_fused_operand_named_after_its_op_still_finds_the_int8_tensor():
    """The float32 converter names a fused Add's constant `.../Add/y`, the int8 one `Const_281`
    (PP-OCRv4's stem and first depthwise block): both are the same layers, so the int8 tensor must
    find its float counterpart, or the block's fall is never measured."""
    import importlib.util

    from edgedeploy.targets import eiq

    spec = importlib.util.spec_from_file_location("eiq_worker_diagnose", Path(eiq.__file__).with_name("worker_diagnose.py"))
    worker = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(worker)
    float_name = "model_62/tf.math.add/Add;model_62/tf.nn.convolution/convolution;model_62/tf.math.add/Add/y"
    int8_name = "model_62/tf.math.add/Add;model_62/tf.nn.convolution/convolution;Const_281"
    assert worker._layer_key(float_name) == worker._layer_key(int8_name)
    # Different layers stay apart.
    assert worker._layer_key("model_62/tf.math.add_1/Add;Const_3") != worker._layer_key(int8_name)
