"""The core of `edgedeploy diagnose` (edgedeploy.accuracy) on ONNX Runtime's QDQ path, on constructed cases
whose cause is known: the top-ranked node and its cause must be the constructed ones."""

from __future__ import annotations

import math

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from edgedeploy.accuracy import absorbed_nodes, diagnose_path, metrics, qdq, tap_numpy
from edgedeploy.measure.accuracy import fidelity


def _conv_model(path, w1, w2, b1=None):
    """image [1,1,12,12] -> Conv(w1) -> Relu -> Conv(w2) -> Relu -> GlobalAveragePool -> Flatten -> out."""
    inits = [numpy_helper.from_array(w1.astype(np.float32), "w1"), numpy_helper.from_array(w2.astype(np.float32), "w2")]
    inits.append(numpy_helper.from_array((b1 if b1 is not None else np.zeros(w1.shape[0])).astype(np.float32), "b1"))
    nodes = [
        helper.make_node("Conv", ["image", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("Conv", ["r1", "w2"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
        helper.make_node("GlobalAveragePool", ["r2"], ["g"], name="gap"),
        helper.make_node("Flatten", ["g"], ["out"], name="flatten"),
    ]
    graph = helper.make_graph(nodes, "constructed", [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 1, 12, 12])], [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, w2.shape[0]])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


def _feeds(count=24, seed=0, outlier=None):
    rng = np.random.default_rng(seed)
    feeds = [{"image": rng.random((1, 1, 12, 12), dtype=np.float32)} for _ in range(count)]
    if outlier is not None:
        feeds[3]["image"][0, 0, 5, 5] = outlier
    return feeds


def write_outlier_case(folder):
    """The activation-outlier case as files for a build (tests/test_diagnose_eiq.py, _rknn.py): m.onnx
    (the model of test_an_activation_outlier_is_named_with_its_cause), calib.npz (one pixel of one
    sample at 400) and eval.npz (16 samples without the outlier). Returns the three paths."""
    rng = np.random.default_rng(3)
    model = _conv_model(folder / "m.onnx", np.abs(rng.normal(scale=0.5, size=(8, 1, 3, 3))), rng.normal(scale=0.3, size=(8, 8, 3, 3)))
    np.savez(folder / "calib.npz", image=np.concatenate([f["image"] for f in _feeds(outlier=400.0)]))
    np.savez(folder / "eval.npz", image=np.concatenate([f["image"] for f in _feeds(count=16, seed=9)]))
    return model, folder / "calib.npz", folder / "eval.npz"


def _diagnose(path, feeds):
    records, _settings = qdq.diagnose_records(path, feeds)
    model = onnx.load(str(path))
    absorbed_nodes(records, [(n.name, list(n.input), list(n.output)) for n in model.graph.node])
    return diagnose_path({"path": "onnxruntime-qdq"}, records, [o.name for o in model.graph.output], len(feeds))


def test_moments_give_the_same_figures_as_measure_fidelity():
    rng = np.random.default_rng(1)
    ref = rng.normal(size=(3, 50))
    got = ref + rng.normal(scale=0.1, size=ref.shape)
    total = None
    for a, b in zip(ref, got):  # summed batch by batch, as a tap does
        total = tap_numpy.merge_moments(total, tap_numpy.moments(a, b))
    whole = fidelity(ref, got)
    assert metrics.snr_db(total) == pytest.approx(whole["snr_db"])
    assert metrics.cosine(total) == pytest.approx(whole["cosine"])
    assert metrics.fidelity(total)["max_abs_error"] == pytest.approx(whole["max_abs_error"])
    assert metrics.snr_db(tap_numpy.moments(ref, ref)) == math.inf


def test_one_outlier_channel_in_a_weight_is_named_with_its_cause(tmp_path):
    rng = np.random.default_rng(2)
    w2 = rng.normal(scale=0.3, size=(8, 8, 3, 3))
    w2[5] *= 60.0  # one output channel's weights 60x the others: a per-tensor scale leaves the rest a level or two
    path = _conv_model(tmp_path / "m.onnx", rng.normal(scale=0.5, size=(8, 1, 3, 3)), w2)
    result = _diagnose(path, _feeds())
    assert result["worst_isolated"][0]["node"] == "conv2"
    crushed = [c for c in result["causes"] if c["cause"] == "weight_channel_crushed"]
    assert [c["node"] for c in crushed] == ["conv2"]
    assert "channel 5" in crushed[0]["sentence"]
    # ONNX Runtime writes conv2's output under relu2's name: the Relu is absorbed by the Conv.
    assert next(n for n in result["nodes"] if n["node"] == "conv2")["absorbs"] == ["relu2"]


def test_an_activation_outlier_is_named_with_its_cause(tmp_path):
    rng = np.random.default_rng(3)
    w1 = np.abs(rng.normal(scale=0.5, size=(8, 1, 3, 3)))
    path = _conv_model(tmp_path / "m.onnx", w1, rng.normal(scale=0.3, size=(8, 8, 3, 3)))
    result = _diagnose(path, _feeds(outlier=400.0))  # one pixel of one calibration sample
    assert result["first_sharp_drop"]["node"] == "conv1"
    assert result["worst_isolated"][0]["node"] == "conv1"
    outliers = [c for c in result["causes"] if c["cause"] == "outlier_range"]
    assert outliers and outliers[0]["node"] == "conv1"


def test_a_clean_model_has_no_sharp_drop_and_no_cause(tmp_path):
    rng = np.random.default_rng(4)
    path = _conv_model(tmp_path / "m.onnx", rng.normal(scale=0.5, size=(8, 1, 3, 3)), rng.normal(scale=0.3, size=(8, 8, 3, 3)))
    result = _diagnose(path, _feeds())
    assert result["first_sharp_drop"] is None
    assert result["causes"] == []
    assert result["outputs"]["out"]["snr_db"] > 30


def test_a_fall_is_not_measured_from_an_exact_constant_when_the_noisy_input_is_unknown():
    """A Squeeze of a Split's second output: the Split's record is of its first output, so the
    Squeeze's noisy input has no record, and its axes constant is exact. Measured from the
    constant, a 35 dB 'fall' appeared at a node that adds no error (a transformer's attention
    in the trained set; brute force ranked it 53rd of 56)."""
    from edgedeploy.accuracy import localise

    def record(node, tensor, inputs, snr):
        return {"node": node, "tensor": tensor, "inputs": inputs, "fidelity_accumulated": {"snr_db": snr}, "fidelity_isolated": None}

    records = [record("split", "split_out0", ["x"], 44.5), record("axes", "axes_out", [], math.inf),
               record("squeeze_1", "squeeze_1_out", ["split_out1", "axes_out"], 25.1)]
    localise.add_drops(records, graph_inputs={"x"})
    assert records[2]["drop_db"] is None
    assert localise.first_sharp_drop(records) is None
    localise.add_drops(records)  # without the graph's inputs: every unknown input counts as clean, as before
    assert records[2]["drop_db"] == pytest.approx(60 - 25.1)


def test_a_weight_written_as_a_constant_node_is_not_ranked_as_where_int8_goes_wrong():
    """Silero VAD's weights are Constant nodes: each quantised weight 'fell' from clean and the
    first one was ranked first; brute force puts the Conv reading the worst-quantised activation first."""
    from edgedeploy.accuracy import localise

    def record(node, op_type, tensor, inputs, accumulated, isolated):
        return {"node": node, "op_type": op_type, "tensor": tensor, "inputs": inputs,
                "fidelity_accumulated": {"snr_db": accumulated}, "fidelity_isolated": {"snr_db": isolated}}

    records = [record("w0", "Constant", "w0_out", [], 22.8, 22.8),
               record("conv0", "Conv", "conv0_out", ["x", "w0_out"], 35.0, 36.0),
               record("conv3", "Conv", "conv3_out", ["conv0_out"], -1.4, -1.9)]
    localise.add_drops(records, graph_inputs={"x"})
    assert localise.first_sharp_drop(records)["node"] == "conv3"
    worst, _ = localise.worst_isolated(records)
    assert [r["node"] for r in worst] == ["conv3", "conv0"]


def test_a_node_much_worse_alone_than_the_first_fall_is_ranked_before_it():
    """mnist_mobilenet_v3_small's figures on esp32s3: the stem Conv (its range clipped at 4) falls
    from clean to 27.8 dB and is the first sharp fall; the Hardswish Mul after it alone gives 2.1 dB
    (range [-0.5, 0.5] for values up to 6). (Silero VAD's QDQ brute force is the case measured: the
    node far worse alone is the one whose float keeping gains most.) A first fall that is also the
    worst alone, or no more than 10 dB better alone, stays first."""
    from edgedeploy.accuracy import localise

    def record(node, tensor, inputs, accumulated, isolated):
        return {"node": node, "op_type": "Op", "tensor": tensor, "inputs": inputs,
                "fidelity_accumulated": {"snr_db": accumulated}, "fidelity_isolated": {"snr_db": isolated}}

    records = [record("stem", "stem_out", ["x"], 27.8, 27.8), record("hardsigmoid", "hs_out", ["stem_out"], 27.0, 46.8),
               record("mul", "mul_out", ["stem_out", "hs_out"], 2.1, 2.1), record("gemm", "logits", ["mul_out"], 1.5, 19.0)]
    localise.add_drops(records, graph_inputs={"x"})
    first = localise.first_sharp_drop(records)
    worst, _ = localise.worst_isolated(records)
    assert first["node"] == "stem" and [w["node"] for w in worst] == ["mul", "gemm", "stem"]
    assert [r["node"] for r in localise.ranked(first, worst)] == ["mul", "stem", "gemm"]
    records[2]["fidelity_isolated"]["snr_db"] = 20.0  # 7.8 dB worse alone than the stem: the first fall leads
    worst, _ = localise.worst_isolated(records)
    assert [r["node"] for r in localise.ranked(first, worst)] == ["stem", "gemm", "mul"]
    assert [r["node"] for r in localise.ranked(None, worst)] == ["gemm", "mul", "stem"]


def test_the_samples_are_cut_to_what_the_memory_budget_holds_and_the_path_says_so(tmp_path, monkeypatch):
    """Every node's output of every sample is held at once (a 320x320 detector on 64+32 samples grew
    past 23 GB and was killed): the QDQ path takes the samples the budget holds and records how many."""
    from edgedeploy.pipeline.diagnose import _samples_note

    rng = np.random.default_rng(5)
    path = _conv_model(tmp_path / "m.onnx", rng.normal(size=(8, 1, 3, 3)), rng.normal(size=(8, 8, 3, 3)))
    feeds, evaluation = _feeds(count=24), _feeds(count=16, seed=9)
    per_sample = qdq.bytes_per_sample(path, feeds[0])
    assert per_sample > 8 * 12 * 12 * 4  # at least one [1,8,12,12] float tensor
    _records, settings = qdq.diagnose_records(path, feeds, evaluation)
    assert settings["samples"] == {"calibration": 24, "calibration_available": 24, "evaluation": 16, "evaluation_available": 16,
                                   "node_output_bytes_per_sample": per_sample}
    assert _samples_note(settings["samples"]) == ""
    monkeypatch.setattr(qdq, "MEMORY_BUDGET_BYTES", per_sample * 12)  # 6 calibration samples (2 copies), 2 evaluation (5)
    records, settings = qdq.diagnose_records(path, feeds, evaluation)
    assert (settings["samples"]["calibration"], settings["samples"]["evaluation"]) == (6, 2)
    assert records and all(r["accumulated"] is not None for r in records if r["precision"])
    assert "6 of 24 calibration samples and 2 of 16 evaluation samples" in _samples_note(settings["samples"])
