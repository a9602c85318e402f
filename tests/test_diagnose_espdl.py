"""`edgedeploy diagnose` on ESP-DL (esp-ppq in the espdl environment) and ONNX Runtime's QDQ path.

The corpus's mnist_box_and_class (trained on real MNIST) loses 64 pp of top-1 on the ESP chips;
the diagnosis must name the node and the cause found by hand (docs/corpus.md): the first ReLU's
KL-calibrated range [-1, 0.99] clips its values, set by channel 7's constant output (its bias,
0.87, on the image's flat background). One build with a failing accuracy gate, whose report
carries the diagnosis (one esp-ppq build and one requantisation, about 100 s on 2 cores).
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from edgedeploy.report.schemas import validate
from edgedeploy.report.snr_curve import output_curves
from edgedeploy.report.snr_svg import curve_svg
from tests.helpers import run_cli

CORPUS = Path(__file__).parent / "fixtures" / "corpus"


@pytest.fixture(scope="module")
def box_and_class_diagnosis(tmp_path_factory):
    """`build --fail-on accuracy-drop=1` of the corpus model on esp32s3: the gate fails (exit 7) and the
    build writes the diagnosis into its report (the same analysis as `edgedeploy diagnose`)."""
    root = tmp_path_factory.mktemp("diagnose")
    done = run_cli(
        "build", str(CORPUS / "mnist_box_and_class.onnx"), "--target", "esp32s3", "--calib", str(CORPUS / "mnist_box_and_class.calib.npz"),
        "--eval", str(CORPUS / "mnist_box_and_class.eval.npz"), "--fail-on", "accuracy-drop=1", "-o", str(root / "out"),
    )
    assert done.returncode == 7, done.stderr
    assert "diagnose: esp32s3: esp-ppq" in done.stderr and "likely cause at /features/features.2/Relu" in done.stderr
    report = json.loads((root / "out" / "mnist_box_and_class" / "esp32s3" / "report.json").read_text())
    validate(report)  # report-1.json, and accuracy_diagnosis-1.json for the section
    return report["accuracy_diagnosis"]


@pytest.mark.toolchain("espdl")
def test_box_and_class_root_cause_on_esp32s3(box_and_class_diagnosis):
    esp = next(p for p in box_and_class_diagnosis["paths"] if p["path"] == "esp32s3")
    assert esp["outputs"]["probs"]["snr_db"] < 5  # the collapse the corpus sweep measured (-0.4 dB)
    first = esp["first_sharp_drop"]
    assert first["node"] == "/features/features.2/Relu" and first["accumulated_snr_db"] < 10
    assert esp["worst_isolated"][0]["node"] == "/features/features.2/Relu"
    cause = next(c for c in esp["causes"] if c["node"] == "/features/features.2/Relu")
    assert cause["cause"] == "clipped_range"
    assert "channel 7" in cause["sentence"] and "/features/features.0/Conv's bias" in cause["sentence"]
    relu = next(n for n in esp["nodes"] if n["node"] == "/features/features.2/Relu")
    assert relu["stats"]["quant_hi"] < 1.0 < 5.0 < relu["stats"]["max_abs"]


@pytest.mark.toolchain("espdl")
def test_onnxruntime_minmax_keeps_the_same_model(box_and_class_diagnosis):
    qdq = next(p for p in box_and_class_diagnosis["paths"] if p["path"] == "onnxruntime-qdq")
    assert qdq["outputs"]["probs"]["snr_db"] > 25
    assert qdq["first_sharp_drop"] is None
    # ONNX Runtime folds the ReLU into the Conv's quantised output: the Conv's record absorbs it.
    conv = next(n for n in qdq["nodes"] if n["node"] == "/features/features.0/Conv")
    assert conv["absorbs"] == ["/features/features.2/Relu"]


def test_diagnose_refuses_a_folder_that_is_no_artifact(tmp_path):
    done = run_cli("diagnose", str(tmp_path))
    assert done.returncode == 11
    assert "is not an edgedeploy artifact" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.toolchain("espdl")
def test_the_trained_sample_on_esp32s3(esp32s3_sample_build):
    """The bundled sample (trained on real digits, int8 at about 21 dB on esp32s3): the same mechanism on a
    milder scale, the first ReLU's range clipped by a channel whose bias is its output on the flat background."""
    done = run_cli("diagnose", str(esp32s3_sample_build), "--format", "json")
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    validate(document)  # accuracy_diagnosis-1.json, closed: every field the ESP-DL and QDQ paths write is described
    paths = {p["path"]: p for p in document["paths"]}
    esp, qdq = paths["esp32s3"], paths["onnxruntime-qdq"]
    assert esp["first_sharp_drop"]["node"] == "/features/features.1/Relu"
    assert esp["worst_isolated"][0]["node"] == "/features/features.1/Relu"
    cause = next(c for c in esp["causes"] if c["node"] == "/features/features.1/Relu")
    assert cause["cause"] == "clipped_range" and "/features/features.0/Conv's bias" in cause["sentence"]
    # ONNX Runtime's min-max quantisation of the same model keeps it: the fall is the range's, not int8's.
    assert qdq["outputs"]["logits"]["snr_db"] > esp["outputs"]["logits"]["snr_db"] + 10
    # the report's curve: one point per esp-ppq op, the first fall ringed
    [curve] = output_curves(esp)
    svg = ET.fromstring(curve_svg(curve, esp))
    assert len(svg.findall(".//{http://www.w3.org/2000/svg}circle[@class='node']")) == len(esp["nodes"])
    ringed = {g.get("data-node"): g.get("data-roles") for g in svg.iter("{http://www.w3.org/2000/svg}g") if g.get("class") == "culprit"}
    assert "F" in ringed["/features/features.1/Relu"].split()


@pytest.mark.toolchain("espdl")
def test_brute_force_on_esp32s3_puts_the_diagnosed_node_first(tmp_path):
    """scripts/accuracy/brute_force.py --chip on the bundled sample: esp-ppq quantises it once, keeps
    each op in float alone and quantises each alone; the op the diagnosis ranks first (the first
    ReLU, its range clipped) must be among the three whose float keeping gains most."""
    import importlib.util

    from edgedeploy.sample import sample_calibration_path, sample_eval_path, sample_model_path, sample_preprocess

    spec = importlib.util.spec_from_file_location("brute_force", Path(__file__).parents[1] / "scripts" / "accuracy" / "brute_force.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    model = sample_model_path()
    found = script.on_chip(model, sample_calibration_path(), sample_eval_path(), "esp32s3", None, 64, preprocess=sample_preprocess())
    assert found["diagnosis_top"] == "/features/features.1/Relu"
    assert found["diagnosis_top_rank_by_gain"] <= 3, found["brute_force_top3_by_gain"]
    kept = next(n for n in found["nodes"] if n["node"] == found["diagnosis_top"])
    assert kept["snr_all_but_this_db"] > found["snr_every_node_db"] + 3
    assert len(found["nodes"]) == found["nodes_quantised"] > 3 and found["evaluation_samples"] == 64


def test_brute_force_gives_each_samples_argmax_and_highest_value():
    """The ESP-DL worker's per-sample figures for brute_force.py: top-1 from the argmax, and an AUROC
    from the highest value (a detector's best anchor of [N, 896, 1])."""
    import importlib.util

    import numpy as np

    spec = importlib.util.spec_from_file_location("espdl_worker_diagnose", Path(__file__).parents[1] / "targets" / "espdl" / "worker_diagnose.py")
    worker = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(worker)
    first, second = np.zeros((2, 896, 1), np.float32) - 5, np.zeros((1, 896, 1), np.float32) - 5
    first[0, 300, 0], first[1, 7, 0], second[0, 895, 0] = 2.5, -1.0, 0.25
    argmax, highest = worker._argmax_and_highest([{"classificators": first, "other": first}, {"classificators": second}], "classificators")
    assert argmax == [300, 7, 895] and highest == [2.5, -1.0, 0.25]
