"""`edgedeploy diagnose` on RKNN (rknn-toolkit2's accuracy_analysis in the rknn environment), on a
constructed case whose cause is known: one pixel of one calibration sample at 400 stretches the
first layer's range, so the evaluation data (no outlier) lose nearly everything there.

rknn-toolkit2 fuses the Conv into its ReLU (the ReLU's row carries the figures): the diagnosis must
name that ReLU, with the Conv absorbed, as the first sharp fall and the worst node alone; ONNX
Runtime's QDQ path names the Conv (it writes the ReLU's tensor) and the outlier-dominated range.
One build whose `--fail-on snr=20` fails, so that it diagnoses the artifact itself (about 35 s);
`edgedeploy report` shows the diagnosis.
"""

from __future__ import annotations

import json

import pytest

from edgedeploy.report.schemas import validate
from tests.helpers import run_cli
from tests.test_accuracy_diagnosis import write_outlier_case


@pytest.fixture(scope="module")
def outlier_diagnosis(tmp_path_factory):
    root = tmp_path_factory.mktemp("rknn-diagnose")
    model, calib, evaluation = write_outlier_case(root)
    built = run_cli("build", str(model), "--target", "rk3588", "--calib", str(calib), "--eval", str(evaluation), "--fail-on", "snr=20", "-o", str(root / "out"))
    assert built.returncode == 7, built.stderr  # the gate fails: the build diagnoses the artifact itself
    artifact = root / "out" / "m" / "rk3588"
    shown = run_cli("report", str(artifact))
    assert shown.returncode == 0 and "Accuracy diagnosis of A1" in shown.stdout and "first sharp fall: relu1" in shown.stdout, shown.stdout
    assert "F first sharp fall + 1 worst alone: relu1" in shown.stdout  # the SNR curve's text chart names it
    report = json.loads((artifact / "report.json").read_text())
    validate(report)  # the RKNN path against accuracy_diagnosis-1.json (closed: every field described)
    return report["accuracy_diagnosis"]


@pytest.mark.toolchain("rknn")
def test_rknn_names_the_fused_first_layer(outlier_diagnosis):
    rknn = next(p for p in outlier_diagnosis["paths"] if p["path"] == "rk3588")
    assert rknn["first_sharp_drop"]["node"] == "relu1"
    assert rknn["worst_isolated"][0]["node"] == "relu1"
    relu1 = next(n for n in rknn["nodes"] if n["node"] == "relu1")
    assert relu1["absorbs"] == ["conv1"] and relu1["isolated"]["snr_db"] < 10
    assert rknn["outputs"]["out"]["snr_db"] < 15


@pytest.mark.toolchain("rknn")
def test_onnxruntime_path_agrees_and_names_the_outlier(outlier_diagnosis):
    qdq = next(p for p in outlier_diagnosis["paths"] if p["path"] == "onnxruntime-qdq")
    assert qdq["first_sharp_drop"]["node"] == "conv1"
    assert any(c["node"] == "conv1" and c["cause"] == "outlier_range" for c in qdq["causes"])


def test_brute_force_scores_each_sample_by_its_highest_value():
    """A per-anchor output (BlazeFace's 896 classificators) is scored by its best anchor, as build's
    --metric-output and ESP-DL's brute force score it; not by its first value."""
    import numpy as np

    from edgedeploy.targets.brute_force import per_sample

    found = per_sample(np.array([[0.1, 3.0, -1.0], [2.0, 0.5, 0.0]]), "alone")
    assert found == {"alone_argmax": [1, 0], "alone_values": [3.0, 2.0]}
