"""Accuracy and fidelity against hand-computed cases, AUROC against a brute-force pair count,
and the ONNX Runtime fp32 reference (`evaluate`) on the bundled sample."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from edgedeploy.measure.accuracy import before_after, choose_metric, evaluate, fidelity, macro_auroc, top_k


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


def test_before_after_same_inputs():
    labels = np.array([0, 1, 1, 0])
    ref = {"logits": np.array([[2.0, 1.0], [0.0, 3.0], [0.0, 1.0], [5.0, 0.0]])}
    cand = {"logits": np.array([[2.0, 1.0], [0.0, 3.0], [1.0, 0.0], [5.0, 0.0]])}  # sample 2 flips
    section = before_after("top1", ref, cand, labels, "logits")
    assert section["before"]["top1"] == 1.0 and section["after"]["top1"] == 0.75
    assert section["delta_percentage_points"] == pytest.approx(-25.0)
    assert section["samples"] == 4
    assert section["fidelity"]["logits"]["max_abs_error"] == 1.0


def _sample_dataset():
    from edgedeploy.datasets import load_dataset, model_input_specs
    from edgedeploy.model import load_model
    from edgedeploy.sample import sample_eval_path, sample_model_path

    return load_dataset(sample_eval_path(), model_input_specs(load_model(sample_model_path())))


def test_evaluate_reference_on_the_sample(sample_model_path):
    ds = _sample_dataset()
    ev = evaluate(sample_model_path, ds, batch_size=64)
    assert ev.samples == 1000 and ev.outputs["logits"].shape == (1000, 10)
    assert ev.batch_size == 64 and ev.notes == []
    assert ev.metrics()["top1"] == pytest.approx(0.970)  # the sample card's float accuracy
    # batching must not change the outputs: batch of 1000 vs 64 (remainder 40 included)
    whole = evaluate(sample_model_path, ds, batch_size=1000)
    np.testing.assert_allclose(whole.outputs["logits"], ev.outputs["logits"], rtol=1e-5, atol=1e-5)


def test_evaluate_fixed_batch_drops_the_short_tail(sample_model_path, tmp_path):
    from edgedeploy.model import load_model
    import onnx

    pinned = load_model(sample_model_path, {"input": (8, 1, 28, 28)})
    path = tmp_path / "fixed8.onnx"
    onnx.save(pinned.proto, str(path))
    ds = _sample_dataset().take(20)
    ev = evaluate(path, ds, batch_size=5)
    assert ev.batch_size == 8 and ev.samples == 16 and len(ev.labels) == 16
    assert any("dropped" in note for note in ev.notes) and any("fixed at 8" in note for note in ev.notes)
