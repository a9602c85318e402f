"""Inputs whose leading axis is not a batch axis (a GRU/LSTM state [layers * directions, batch,
hidden], a scalar): the data contract of edgedeploy.datasets and every feed cut from it.

The model is built here (onnx.helper): a bidirectional GRU whose initial state h0 is [2, 1, 16]
beside an input x [1, 8], the shapes of upstream Silero VAD's state [2, 1, 128] beside its
input [1, 576]. ONNX Runtime runs it, so a state misread as 2 samples of [1, 1, 16] fails or
gives other numbers."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from edgedeploy.arrays import read_whole, take_feed, write_arrays
from edgedeploy.datasets import InputSpec, fixed_batch_of, leading_axis_is_batch, load_dataset, model_input_specs
from edgedeploy.errors import OptionError

HIDDEN, FEATURES = 16, 8
SPECS = [InputSpec("x", (1, FEATURES), "float32"), InputSpec("h0", (2, 1, HIDDEN), "float32")]


def _gru_model(path):
    """x [1, 8] and h0 [2, 1, 16] -> y [1, 32] (both directions' last state) and hn [2, 1, 16]."""
    rng = np.random.default_rng(0)
    weights = {
        "W": rng.normal(0, 0.3, (2, 3 * HIDDEN, FEATURES)).astype(np.float32),
        "R": rng.normal(0, 0.3, (2, 3 * HIDDEN, HIDDEN)).astype(np.float32),
        "B": rng.normal(0, 0.1, (2, 6 * HIDDEN)).astype(np.float32),
    }
    nodes = [
        helper.make_node("Unsqueeze", ["x", "axis0"], ["seq"]),  # [seq 1, batch 1, 8]
        helper.make_node("GRU", ["seq", "W", "R", "B", "", "h0"], ["", "hn"], hidden_size=HIDDEN, direction="bidirectional"),
        helper.make_node("Transpose", ["hn"], ["batch_first"], perm=[1, 0, 2]),
        helper.make_node("Reshape", ["batch_first", "flat"], ["y"]),
    ]
    inits = [helper.make_tensor(k, TensorProto.FLOAT, v.shape, v.ravel()) for k, v in weights.items()]
    inits += [helper.make_tensor("axis0", TensorProto.INT64, [1], [0]), helper.make_tensor("flat", TensorProto.INT64, [2], [1, 2 * HIDDEN])]
    graph = helper.make_graph(
        nodes, "gru_state",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, FEATURES]), helper.make_tensor_value_info("h0", TensorProto.FLOAT, [2, 1, HIDDEN])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2 * HIDDEN]), helper.make_tensor_value_info("hn", TensorProto.FLOAT, [2, 1, HIDDEN])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def _npz(tmp_path, **arrays):
    path = tmp_path / "data.npz"
    np.savez(path, **arrays)
    return path


def _data(n, seed=1):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, FEATURES)).astype(np.float32), rng.normal(size=(n, 2, 1, HIDDEN)).astype(np.float32)


def test_the_batch_axis_is_the_leading_one_only_where_the_inputs_agree_on_it():
    assert leading_axis_is_batch(SPECS[0], SPECS) is True
    assert leading_axis_is_batch(SPECS[1], SPECS) is False  # 2 beside the other input's 1
    fixed = [InputSpec("a", (4, 3), "float32"), InputSpec("b", (4, 5), "float32")]
    assert all(leading_axis_is_batch(s, fixed) for s in fixed)  # a fixed batch of 4 shared by all
    assert fixed_batch_of(fixed) == 4 and fixed_batch_of(SPECS) == 1
    assert leading_axis_is_batch(InputSpec("sr", (), "int64"), SPECS) is False  # a scalar has no axis


def test_n_whole_states_stacked_are_n_samples_fed_whole(tmp_path):
    x, h0 = _data(5)
    ds = load_dataset(_npz(tmp_path, x=x, h0=h0), SPECS)
    assert len(ds) == 5 and ds.whole == frozenset({"h0"})
    feed = ds.feed(3, 4)
    assert feed["x"].shape == (1, FEATURES) and feed["h0"].shape == (2, 1, HIDDEN)
    np.testing.assert_array_equal(feed["h0"], h0[3])
    # Whatever batch a caller asks for, whole samples go one per feed, all of them.
    assert [f["h0"].shape for f in ds.batches(4)] == [(2, 1, HIDDEN)] * 5
    assert ds.take(2).whole == ds.whole and len(ds.take(2)) == 2
    assert ds.describe()["inputs"]["h0"]["samples"].startswith("whole")


def test_one_whole_sample_of_exactly_the_inputs_shape_is_one_sample(tmp_path):
    x, h0 = _data(1)
    ds = load_dataset(_npz(tmp_path, x=x[0], h0=h0[0]), SPECS)
    assert len(ds) == 1
    np.testing.assert_array_equal(ds.feed(0, 1)["h0"], h0[0])


@pytest.mark.parametrize("shape", [(4, 1, HIDDEN), (5, 2, HIDDEN), (5, 2, 1, HIDDEN + 1), (2, 1, 1, 1, HIDDEN)])
def test_a_state_in_neither_form_is_one_sentence_naming_the_input_shape_and_both_forms(tmp_path, shape):
    x, _ = _data(shape[0])
    with pytest.raises(OptionError) as caught:
        load_dataset(_npz(tmp_path, x=x, h0=np.zeros(shape, np.float32)), SPECS)
    message = str(caught.value)
    assert "input 'h0'" in message and str(list(shape)) in message
    assert f"give one sample as [2, 1, {HIDDEN}] or N samples stacked as [N, 2, 1, {HIDDEN}]" in message
    assert "not a batch axis" in message and message.count(". ") == 0  # one sentence


def test_a_batch_first_input_takes_samples_one_sample_or_whole_feeds_stacked(tmp_path):
    x, h0 = _data(3)
    rows = load_dataset(_npz(tmp_path, x=x, h0=h0), SPECS)
    stacked = load_dataset(_npz(tmp_path, x=x[:, None], h0=h0), SPECS)  # [N, 1, 8]: N whole feeds
    np.testing.assert_array_equal(rows.inputs["x"], stacked.inputs["x"])
    with pytest.raises(OptionError, match=r"give samples along axis 0 as \[N, 8\], or N whole inputs stacked as \[N, 1, 8\]"):
        load_dataset(_npz(tmp_path, x=np.zeros((3, 2, FEATURES), np.float32), h0=h0), SPECS)


def test_a_fixed_batch_model_still_reads_samples_on_axis_0(tmp_path):
    spec = [InputSpec("x", (4, 3), "float32")]
    ds = load_dataset(_npz(tmp_path, x=np.arange(24, dtype=np.float32).reshape(8, 3)), spec)
    assert len(ds) == 8 and not ds.whole
    assert [b["x"].shape for b in ds.batches(4)] == [(4, 3), (4, 3)]


def test_a_scalar_input_takes_one_value_per_sample(tmp_path):
    specs = [InputSpec("x", (1, FEATURES), "float32"), InputSpec("sr", (), "int64")]
    ds = load_dataset(_npz(tmp_path, x=np.zeros((3, FEATURES), np.float32), sr=np.full(3, 16000)), specs)
    assert ds.whole == frozenset({"sr"}) and ds.feed(2, 3)["sr"].shape == () and int(ds.feed(2, 3)["sr"]) == 16000
    one = load_dataset(_npz(tmp_path, x=np.zeros(FEATURES, np.float32), sr=np.array(8000)), specs)
    assert len(one) == 1
    with pytest.raises(OptionError, match=r"input 'sr' .* it is a scalar; give one sample as a scalar or N samples stacked as \[N\]"):
        load_dataset(_npz(tmp_path, x=np.zeros((3, FEATURES), np.float32), sr=np.zeros((3, 1))), specs)


def test_the_worker_array_file_carries_which_inputs_are_whole_and_feeds_refuse_to_batch_them(tmp_path):
    x, h0 = _data(3)
    path = write_arrays(tmp_path / "a.npz", {"x": x, "h0": h0}, whole={"h0"})
    assert read_whole(path) == {"h0"}
    assert read_whole(write_arrays(tmp_path / "b.npz", {"x": x})) == set()
    assert take_feed({"x": x, "h0": h0}, 1, 2, {"h0"})["h0"].shape == (2, 1, HIDDEN)
    with pytest.raises(ValueError, match="one sample at a time"):
        take_feed({"x": x, "h0": h0}, 0, 2, {"h0"})


def test_the_reference_runs_a_real_gru_on_whole_states_as_onnx_runtime_does_sample_by_sample(tmp_path):
    import onnxruntime as ort

    from edgedeploy.measure.reference import ReferenceRunner
    from edgedeploy.model import load_model

    path = _gru_model(tmp_path / "gru.onnx")
    specs = model_input_specs(load_model(path))
    assert [s.shape for s in specs] == [(1, FEATURES), (2, 1, HIDDEN)]
    x, h0 = _data(6)
    ds = load_dataset(_npz(tmp_path, x=x, h0=h0), specs)
    runner = ReferenceRunner(path)
    assert runner.accepts_batches(ds.inputs) is False
    got = runner.run(ds.inputs).outputs
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    want = [session.run(None, {"x": x[i : i + 1], "h0": h0[i]}) for i in range(6)]
    np.testing.assert_allclose(got["y"], np.concatenate([w[0] for w in want]), rtol=1e-5, atol=1e-6)
    # Outputs join on their axis 0, as every simulator's do: the states of sample i are rows 2i, 2i+1.
    np.testing.assert_allclose(got["hn"], np.concatenate([w[1] for w in want]), rtol=1e-5, atol=1e-6)


def _load(relative: str, name: str):
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location(name, Path(__file__).resolve().parent.parent / relative)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_tflite_calibration_gives_each_state_whole_in_its_channels_last_layout():
    import edgedeploy.arrays as arrays

    worker = _load("targets/eiq/worker.py", "eiq_worker_whole")
    x, h0 = _data(3)
    calib = worker.Arrays({"x": x, "h0": h0})
    calib.whole, calib.take_feed = frozenset({"h0"}), arrays.take_feed
    inputs = [{"name": "x", "shape": [1, FEATURES]}, {"name": "h0", "shape": [2, 1, HIDDEN]}]
    # onnx2tf lays a 3-D input out channels-last: [2, 1, 16] -> [2, 16, 1]; its batch dim reads 2.
    layouts = {"x": {"key": "x", "perm": None, "tf_dtype": "float32", "tf_shape": [1, FEATURES]},
               "h0": {"key": "h0", "perm": [0, 2, 1], "tf_dtype": "float32", "tf_shape": [2, HIDDEN, 1]}}
    samples = list(worker.calibration_batches(inputs, layouts, calib))
    assert len(samples) == 3
    np.testing.assert_array_equal(samples[2]["h0"], h0[2].transpose(0, 2, 1))
    np.testing.assert_array_equal(samples[2]["x"], x[2:3])


def test_esp_ppq_calibration_batches_are_whole_states_whatever_the_batch_asked():
    from types import SimpleNamespace

    import edgedeploy.arrays as arrays

    torch = SimpleNamespace(from_numpy=np.asarray)  # the worker's one use of torch here; the core has none

    worker = _load("targets/espdl/worker_build.py", "espdl_worker_whole")
    x, h0 = _data(5)
    batches = worker._batches(torch, {"x": x, "h0": h0}, ["x", "h0"], 4, {"h0"}, arrays.take_feed)
    assert len(batches) == 5 and [tuple(t.shape) for t in batches[1]] == [(1, FEATURES), (2, 1, HIDDEN)]
    assert [tuple(t.shape) for t in worker._batches(torch, {"x": x}, ["x"], 2)[0]] == [(2, FEATURES)]


def test_the_rknn_board_input_of_a_whole_rank_4_state_is_not_laid_out_as_an_image():
    from edgedeploy.datasets import InputSpec
    from edgedeploy.targets.rknn.codegen import _board_array
    from edgedeploy.targets.rknn.convert import InputNormalisation

    specs = [InputSpec("x", (1, FEATURES), "float32"), InputSpec("c0", (2, 1, 4, HIDDEN), "float32")]
    norm = InputNormalisation(specs, None)
    states = np.zeros((3, 2, 1, 4, HIDDEN), np.float32)
    board, _, layout = _board_array(norm, "c0", states, whole=True)
    assert board.shape == (3, 2, 4, HIDDEN, 1) and layout == "nhwc"  # each [2, 1, 4, 16] sample to NHWC, N kept
    board, _, layout = _board_array(norm, "x", np.zeros((3, FEATURES), np.float32))
    assert board.shape == (3, FEATURES) and layout is None


def test_a_state_output_joined_per_sample_is_compared_over_every_sample():
    from edgedeploy.measure.verify import verify

    rng, n = np.random.default_rng(0), 6
    reference = {"p": rng.random((n, 1)).astype(np.float32), "hn": rng.normal(size=(2 * n, 1, HIDDEN)).astype(np.float32)}
    candidate = {k: v.copy() for k, v in reference.items()}
    candidate["hn"][-2:] *= -1  # only the last sample's state differs: its rows 2n-2, 2n-1
    section = verify(reference, candidate, None, "fidelity")
    fidelity = section["outputs"]["hn"]["fidelity"]
    assert section["samples"] == n and fidelity["elements"] == 2 * n * HIDDEN
    assert fidelity["cosine"] < 0.9  # the first n rows alone (half the samples) would compare equal


def test_a_compiled_output_of_another_size_is_said_not_compared():
    from edgedeploy.measure.verify import headline_line, verify

    rng, n = np.random.default_rng(0), 4
    reference = {"p": rng.random((n, 1)), "state_out": rng.random((2 * n, HIDDEN))}
    candidate = {"p": reference["p"].copy(), "state_out": rng.random((n, 2))}  # onnx2tf's [1, 2] for a [2, 16] state
    section = verify(reference, candidate, None, "fidelity")
    assert list(section["outputs"]) == ["p"] and section["outputs"]["p"]["fidelity"]["cosine"] > 0.999
    assert section["mismatched_outputs"]["state_out"] == f"the compiled model gives [{n}, 2] where the model gives [{2 * n}, {HIDDEN}]"
    assert "state_out: not compared (the compiled model gives" in headline_line(section)
