"""Accuracy and fidelity against hand-computed cases, AUROC against a brute-force pair count,
the shared verification (`verify`: every output, the metric on a named output), and the ONNX
Runtime fp32 reference (`ReferenceRunner`) on the bundled sample."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from edgedeploy.measure.accuracy import choose_metric, fidelity, macro_auroc, top_k
from edgedeploy.measure.reference import ReferenceRunner
from edgedeploy.measure.verify import choose_metric_output, output_producers, verify


def test_top1_and_topk_by_hand():
    logits = np.array(
        [
            [0.1, 0.7, 0.2],  # top-1 = 1, order 1 2 0
            [0.5, 0.1, 0.4],  # top-1 = 0, order 0 2 1
            [0.2, 0.3, 0.5],  # top-1 = 2, order 2 1 0
            [0.9, 0.05, 0.05],
        ]
    )
    labels = np.array([1, 2, 0, 0])
    assert top_k(logits, labels, 1) == 0.5  # samples 0 and 3
    assert top_k(logits, labels, 2) == 0.75  # sample 1's label 2 is second; sample 2's label 0 is last
    assert top_k(logits, labels, 3) == 1.0


def test_top_k_of_nothing_is_an_error():
    with pytest.raises(ValueError):
        top_k(np.zeros((0, 3)), np.zeros((0,), dtype=int))


def _auroc_brute_force(scores, truth):
    """P(score of a random positive > score of a random negative), ties counting one half."""
    pos = [s for s, t in zip(scores, truth) if t]
    neg = [s for s, t in zip(scores, truth) if not t]
    wins = sum(1.0 if p > n else 0.5 if p == n else 0.0 for p, n in itertools.product(pos, neg))
    return wins / (len(pos) * len(neg))


def test_auroc_matches_brute_force_pair_count_with_ties():
    rng = np.random.default_rng(7)
    for trial in range(20):
        n, classes = 40, 4
        # rounded scores make ties common, which the rank statistic must average correctly
        scores = np.round(rng.random((n, classes)), 1)
        labels = (rng.random((n, classes)) < 0.4).astype(int)
        result = macro_auroc(scores, labels)
        expected = [_auroc_brute_force(scores[:, c], labels[:, c]) for c in range(classes)]
        assert result["per_class"] == pytest.approx(expected)
        assert result["macro_auroc"] == pytest.approx(float(np.mean(expected)))


def test_auroc_by_hand_and_classes_without_both_kinds_left_out():
    scores = np.array([[0.9, 0.1], [0.8, 0.2], [0.3, 0.3], [0.1, 0.4]])
    labels = np.array([[1, 0], [0, 0], [1, 0], [0, 0]])
    # class 0: positives 0.9, 0.3; negatives 0.8, 0.1 -> pairs (0.9>0.8, 0.9>0.1, 0.3<0.8, 0.3>0.1) = 3/4
    result = macro_auroc(scores, labels)
    assert result["per_class"] == [0.75, None]
    assert result["macro_auroc"] == 0.75
    assert (result["classes_used"], result["classes"]) == (1, 2)


def test_fidelity_by_hand():
    ref = np.array([3.0, 4.0])
    same = fidelity(ref, ref)
    assert same["cosine"] == 1.0 and same["snr_db"] == math.inf and same["max_abs_error"] == 0.0
    got = np.array([3.0, 3.0])  # error [0, -1]: noise 1, signal 25 -> SNR 10*log10(25)
    f = fidelity(ref, got)
    assert f["snr_db"] == pytest.approx(10 * math.log10(25))
    assert f["max_abs_error"] == 1.0 and f["mean_abs_error"] == 0.5
    assert f["cosine"] == pytest.approx((9 + 12) / (5 * math.sqrt(18)))
    assert fidelity(ref, -ref)["cosine"] == pytest.approx(-1.0)
    with pytest.raises(ValueError, match="differ in size"):
        fidelity(ref, np.zeros(3))


def test_choose_metric():
    assert choose_metric("auto", (10, 5), np.array([1, 2, 3])) == "top1"
    assert choose_metric("auto", (10, 5), np.array([[0, 1], [1, 1]])) == "auroc"
    assert choose_metric("auto", (10, 5), None) == "fidelity"
    assert choose_metric("top1", (10, 5), None) == "top1"


def test_verify_same_inputs():
    labels = np.array([0, 1, 1, 0])
    ref = {"logits": np.array([[2.0, 1.0], [0.0, 3.0], [0.0, 1.0], [5.0, 0.0]])}
    cand = {"logits": np.array([[2.0, 1.0], [0.0, 3.0], [1.0, 0.0], [5.0, 0.0]])}  # sample 2 flips
    section = verify(ref, cand, labels, "top1")
    assert section["before"]["top1"] == 1.0 and section["after"]["top1"] == 0.75
    assert section["delta_percentage_points"] == pytest.approx(-25.0)
    assert section["samples"] == 4 and section["metric_output"] == "logits"
    assert section["fidelity"]["logits"]["max_abs_error"] == 1.0


def test_the_metric_goes_on_the_probability_output_not_the_first():
    """A detector-style model: box regression [N, 4] first, softmax probabilities [N, 2] second."""
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 2, size=50)
    probs = np.eye(2)[labels] * 0.8 + 0.1
    boxes = rng.standard_normal((50, 4))
    ref = {"boxes": boxes, "prob": probs}
    cand = {"boxes": boxes + 0.01, "prob": probs}
    producers = {"boxes": "Gemm", "prob": "Softmax"}
    section = verify(ref, cand, labels, "auto", "auto", producers)
    assert section["metric_output"] == "prob" and "Softmax" in section["metric_output_reason"]
    assert section["before"]["top1"] == 1.0 and section["after"]["top1"] == 1.0
    # every output still gets its fidelity, and the box output its own task-metric entry only if it fits
    assert set(section["outputs"]) == {"boxes", "prob"}
    assert section["outputs"]["boxes"]["fidelity"]["max_abs_error"] == pytest.approx(0.01)
    # the user can name the output, and a wrong name is one clear error
    assert verify(ref, cand, labels, "auto", "boxes", producers)["metric_output"] == "boxes"
    from edgedeploy.errors import OptionError

    with pytest.raises(OptionError, match="no output named 'scores'"):
        verify(ref, cand, labels, "auto", "scores", producers)


def test_no_output_fits_the_labels_means_fidelity_only():
    labels = np.array([0, 7, 9])
    ref = {"embedding": np.zeros((3, 4))}
    section = verify(ref, ref, labels)
    assert section["metric"] == "fidelity" and section["metric_output"] is None and "before" not in section
    assert choose_metric_output("auto", "top1", ref, labels, {})[0] is None


def test_detection_outputs_get_box_and_score_fidelity_apart_only_with_evidence():
    rng = np.random.default_rng(1)
    yolo = rng.standard_normal((2, 84, 400))  # [N, 4 + 80 classes, anchors], as YOLO heads emit
    cand = yolo.copy()
    cand[:, :4, :] += 0.5  # only the boxes are off
    # The shape alone is no evidence: the output is compared as a whole.
    plain = verify({"out": yolo}, {"out": cand}, None)["outputs"]["out"]
    assert "detection" not in plain and "guessed" not in str(plain)
    layout = {"axis": 1, "parts": [{"role": "boxes", "start": 0, "stop": 4}, {"role": "scores", "start": 4, "stop": 84}], "evidence": "declared with --detection out:1=boxes:0-3,scores:4-"}
    detection = verify({"out": yolo}, {"out": cand}, None, layouts={"out": layout})["outputs"]["out"]["detection"]
    assert detection["parts"]["scores"]["max_abs_error"] == 0.0
    assert detection["parts"]["boxes"]["max_abs_error"] == pytest.approx(0.5)
    assert detection["evidence"].startswith("declared with --detection")


def test_output_producers_look_through_shape_only_ops():
    from onnx import helper

    from tests.helpers import make_model, tensor

    nodes = [
        helper.make_node("Softmax", ["x"], ["p"], axis=1),
        helper.make_node("Reshape", ["p", "shape"], ["y"]),
        helper.make_node("Relu", ["x"], ["z"]),
    ]
    from tests.helpers import const

    model = make_model(nodes, [tensor("x", [1, 4])], [tensor("y", [1, 4]), tensor("z", [1, 4])], [const("shape", np.array([1, 4], dtype=np.int64))])
    assert output_producers(model.graph) == {"y": "Softmax", "z": "Relu"}


def _sample_dataset():
    from edgedeploy.datasets import load_dataset, model_input_specs
    from edgedeploy.model import load_model
    from edgedeploy.sample import sample_eval_path, sample_model_path

    return load_dataset(sample_eval_path(), model_input_specs(load_model(sample_model_path())))


def test_reference_on_the_sample(sample_model_path):
    from edgedeploy.measure.accuracy import task_metric

    ds = _sample_dataset()
    runner = ReferenceRunner(sample_model_path)
    ref = runner.run(ds.inputs)
    assert ref.samples == 1000 and ref.outputs["logits"].shape == (1000, 10) and ref.notes == []
    assert task_metric("top1", ref.outputs["logits"], ds.labels)["top1"] == pytest.approx(0.970)  # the sample card's float accuracy
    # batching must not change the outputs: one sample at a time vs batches
    one_by_one = np.concatenate([runner.session.run(None, {"input": ds.inputs["input"][i : i + 1]})[0] for i in range(0, 1000, 97)])
    np.testing.assert_allclose(one_by_one, ref.outputs["logits"][::97], rtol=1e-5, atol=1e-5)
    # the same inputs again come from the cache, identical
    assert runner.run(ds.inputs) is ref


def test_reference_fixed_batch_drops_the_short_tail(sample_model_path, tmp_path):
    from edgedeploy.model import load_model

    pinned = load_model(sample_model_path, {"input": (8, 1, 28, 28)})
    ds = _sample_dataset().take(20)
    ref = ReferenceRunner(pinned.proto).run(ds.inputs)
    assert ref.batch_size == 8 and ref.samples == 16 and ref.outputs["logits"].shape == (16, 10)
    assert any("dropped" in note and "fixed batch of 8" in note for note in ref.notes)


def test_reference_disk_cache_round_trip(sample_model_path, tmp_path):
    ds = _sample_dataset().take(10)
    first = ReferenceRunner(sample_model_path, cache_dir=tmp_path).run(ds.inputs)
    again = ReferenceRunner(sample_model_path, cache_dir=tmp_path).run(ds.inputs)
    assert again.from_cache and not first.from_cache
    np.testing.assert_array_equal(first.outputs["logits"], again.outputs["logits"])


def test_a_model_that_fails_on_its_inputs_is_one_sentence(tmp_path):
    """Inputs of the wrong shape: ONNX Runtime's own error, as one sentence, nothing printed in red."""
    from onnx import helper

    from tests.helpers import const, make_model, tensor

    node = helper.make_node("Reshape", ["x", "shape"], ["y"])
    model = make_model([node], [tensor("x", [2, 3])], [tensor("y", [6])], [const("shape", np.array([6], dtype=np.int64))])
    from edgedeploy.measure.reference import ReferenceError

    with pytest.raises(ReferenceError, match="ONNX Runtime could not run the model"):
        ReferenceRunner(model).run({"x": np.zeros((2, 5), dtype=np.float32)})


def test_the_batch_probe_prints_nothing_for_a_fixed_batch_model(tmp_path):
    """A Reshape to [1, -1] before a Gemm fails a batch of two inside ONNX Runtime: the probe says
    "one at a time" quietly; ONNX Runtime's own red error line must not reach the terminal."""
    import subprocess
    import sys

    from onnx import helper

    from tests.helpers import const, make_model, tensor

    nodes = [helper.make_node("Reshape", ["x", "s"], ["r"]), helper.make_node("Gemm", ["r", "w"], ["y"])]
    model = make_model(
        nodes,
        [tensor("x", [1, 2, 4])],
        [tensor("y", [1, 3])],
        [const("s", np.array([1, -1], dtype=np.int64)), const("w", np.ones((8, 3), dtype=np.float32))],
    )
    path = tmp_path / "fixed.onnx"
    path.write_bytes(model.SerializeToString())
    code = (
        "import numpy as np; from edgedeploy.measure.reference import ReferenceRunner;"
        f"r = ReferenceRunner(__import__('pathlib').Path({str(path)!r}));"
        "x = {'x': np.ones((3, 2, 4), dtype=np.float32)};"
        "print(r.accepts_batches(x), r.run(x).outputs['y'].shape)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "(3,", "3)"]
    assert done.stderr == "", done.stderr
