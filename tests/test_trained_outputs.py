"""Reports claim no box/score split and no task metric that the model does not support, on models
with trained weights (issue 29, part 7): a face detector (BlazeFace, MediaPipe's short-range
model, converted by scripts/trained/blazeface_to_onnx.py; committed) and a text recogniser
(PP-OCRv4 rec from the PyPI wheel rapidocr-onnxruntime 1.4.4; 10.9 MB, not committed: the test
skips, saying so, unless the file is there).

The verification is the build's own (measure/verify.py) on ONNX Runtime's outputs against the
same outputs with a small error added, with labels that a careless check could score."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from edgedeploy.measure.verify import headline_line, model_evidence, verify
from edgedeploy.report.combine import output_holds

FIXTURES = Path(__file__).parent / "fixtures" / "trained"
BLAZEFACE = FIXTURES / "blazeface_short_range.onnx"


def _ppocr_rec() -> Path | None:
    """The PP-OCRv4 recogniser: $EDGEDEPLOY_PPOCR_REC, else the trained set's copy (scripts/trained/make_set.py)."""
    home = Path(os.environ.get("EDGEDEPLOY_HOME", Path.home() / ".cache" / "edgedeploy"))
    for path in (os.environ.get("EDGEDEPLOY_PPOCR_REC"), home / "trained" / "ppocr_rec_v4.onnx"):
        if path and Path(path).is_file():
            return Path(path)
    return None


def _check(model_path: Path, feeds: dict[str, np.ndarray], labels: np.ndarray) -> dict:
    proto = onnx.load(str(model_path))
    session = ort.InferenceSession(str(model_path), providers=["CPUExecutionProvider"])
    count = len(next(iter(feeds.values())))
    runs = [session.run(None, {k: v[i : i + 1] for k, v in feeds.items()}) for i in range(count)]
    names = [o.name for o in session.get_outputs()]
    reference = {name: np.concatenate([r[j] for r in runs]) for j, name in enumerate(names)}
    rng = np.random.default_rng(5)
    candidate = {name: a + 0.01 * np.std(a) * rng.standard_normal(a.shape) for name, a in reference.items()}
    producers, layouts = model_evidence(proto)
    return verify(reference, candidate, labels, "auto", "auto", producers, layouts)


def test_face_detector_no_split_of_its_regressors_and_no_top1():
    x = np.random.default_rng(0).uniform(-1, 1, (6, 3, 128, 128)).astype(np.float32)
    section = _check(BLAZEFACE, {"input": x}, np.array([0, 1, 1, 0, 1, 0]))  # face / no face
    regressors, classificators = section["outputs"]["regressors"], section["outputs"]["classificators"]
    # 16 regressors (4 box + 12 keypoint values): the shape guess called them 4 box coordinates then 12 scores.
    assert "detection" not in regressors and "detection" not in classificators
    assert output_holds(regressors) == "boxes (from its name 'regressors')"
    # No top-1 on the box regression, nor on 896 per-anchor scores; each says why.
    assert section["metric"] == "fidelity" and section["metric_output"] is None and "before" not in section
    assert "box regression" in regressors["metric_not_reported"]
    assert "896 rows of 1 values" in classificators["metric_not_reported"]
    line = headline_line(section)
    assert "scores SNR" not in line and "guessed" not in line


@pytest.mark.skipif(_ppocr_rec() is None, reason="PP-OCRv4 rec is not here: set EDGEDEPLOY_PPOCR_REC to ch_PP-OCRv4_rec_infer.onnx from the wheel rapidocr-onnxruntime==1.4.4 (pip download --no-deps), or make the trained set")
def test_text_recogniser_ctc_output_no_split_and_no_top1():
    x = np.random.default_rng(1).uniform(-1, 1, (4, 3, 48, 320)).astype(np.float32)
    section = _check(_ppocr_rec(), {"x": x}, np.array([3, 7, 120, 5]))
    out = section["outputs"]["softmax_11.tmp_0"]
    assert out["shape"] == [40, 6625]
    # [1, 40, 6625]: the shape guess said "axis 1: 4 box coordinates, then 36 scores"; top-1 was taken over 40 x 6625 values.
    assert "detection" not in out and output_holds(out) is None
    assert section["metric"] == "fidelity" and "before" not in out
    assert out["metric_not_reported"].startswith("its shape [40, 6625] is 40 rows of 6625 values per sample")
    assert "box" not in headline_line(section)


def test_the_text_report_says_what_it_holds_and_why_no_metric():
    """The comparison's rows (report/combine.py) and the text report's lines for the face detector."""
    from edgedeploy.report import fmt
    from edgedeploy.report.combine import _output_rows
    from edgedeploy.report.text import output_metric_lines

    x = np.random.default_rng(0).uniform(-1, 1, (3, 3, 128, 128)).astype(np.float32)
    section = _check(BLAZEFACE, {"input": x}, np.array([0, 1, 1]))
    lines = output_metric_lines({"outputs": _output_rows(section), "metric_output": section["metric_output"]})
    assert "  holds boxes (from its name 'regressors')" in lines
    assert "  no task metric: it holds box regression (its name 'regressors'), not one score per class" in lines
    assert not any("top1" in line or "scores SNR" in line for line in lines)
    # Labels were given: the report does not say "no labels", it says why no output fits them.
    assert fmt.why_fidelity_only(section) == "no output holds one score per class of the labels"
    assert fmt.why_fidelity_only({"metric_output_reason": "no labels: fidelity only"}) == "no labels"


def test_face_presence_auroc_on_the_highest_anchor_when_the_score_output_is_named():
    """--metric auroc --metric-output classificators with one-column face / no-face labels: each
    sample's score is its highest anchor logit (the trained set's BlazeFace case, docs/accuracy.md)."""
    from edgedeploy.measure.accuracy import macro_auroc

    rng = np.random.default_rng(3)
    x = rng.uniform(-1, 1, (8, 3, 128, 128)).astype(np.float32)
    session = ort.InferenceSession(str(BLAZEFACE), providers=["CPUExecutionProvider"])
    runs = [session.run(None, {"input": x[i : i + 1]}) for i in range(len(x))]
    reference = {"regressors": np.concatenate([r[0] for r in runs]), "classificators": np.concatenate([r[1] for r in runs])}
    highest = reference["classificators"].reshape(8, -1).max(axis=1)
    labels = (highest > np.median(highest)).astype(np.int64)[:, None]  # the upper half "faces": AUROC 1 before
    candidate = {k: v.copy() for k, v in reference.items()}
    flat = candidate["classificators"].reshape(8, -1)
    flat -= 50.0 * labels  # every anchor of the faces knocked down
    flat[0, 5] += 100.0  # one anchor of one sample up: its highest, not its first or mean, decides
    producers, layouts = model_evidence(onnx.load(str(BLAZEFACE)))
    section = verify(reference, candidate, labels, "auroc", "classificators", producers, layouts)
    assert section["metric"] == "auroc" and section["before"]["macro_auroc"] == 1.0
    expected = macro_auroc(flat.max(axis=1, keepdims=True), labels)["macro_auroc"]
    assert section["after"]["macro_auroc"] == expected < 1.0
    assert section["delta"] == expected - 1.0
    assert "highest of its 896 per-anchor scores" in section["metric_output_reason"]
    # Not named with --metric-output, or labels of two columns: no metric on 896 anchors.
    assert verify(reference, candidate, labels, "auroc", "auto", producers, layouts)["metric"] == "fidelity"
    two = verify(reference, candidate, np.hstack([labels, labels]), "auroc", "classificators", producers, layouts)
    assert "before" not in two and "896 rows of 1 values" in two["outputs"]["classificators"]["metric_not_reported"]
