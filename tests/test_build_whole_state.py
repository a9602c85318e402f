"""`edgedeploy build` of a model with a recurrent state [2, 1, 16] (its leading axis the layers, its
batch on axis 1, as GRU/LSTM h0 and Silero VAD's state [2, 1, 128]) through each real toolchain
that is installed, the state given as [N, 2, 1, 16] (edgedeploy.datasets, docs/cli.md "Data for
--calib and --eval").

The model is built here: two tanh recurrent cells written out (Gather of the layer, Concat, MatMul, Add),
fixed-seed weights; the data is each sample with the state the float model really had there
(chunks of one stream run in order). What is checked is the feeding: every toolchain gets whole
states (before, rknn-toolkit2 refused "(1, 1, 16) ... expect [2, 1, 16]"), and the compiled
model's outputs match ONNX Runtime's over every sample's state."""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from tests.helpers import run_cli

FEATURES, HIDDEN, SAMPLES = 8, 16, 24


def _model(path):
    """x [1, 8], state [2, 1, 16] -> p [1, 1], state_out [2, 1, 16]: cell i takes Concat(its input,
    state[i]) through one MatMul and a constant bias (esp-ppq 1.3.12 refuses a MatMul whose Add
    partner is another MatMul's result: 'Bias Varaible ... must be a constant')."""
    rng = np.random.default_rng(0)
    weights = {
        "W0": rng.normal(0, 0.3, (FEATURES + HIDDEN, HIDDEN)), "B0": rng.normal(0, 0.1, (HIDDEN,)),
        "W1": rng.normal(0, 0.3, (2 * HIDDEN, HIDDEN)), "B1": rng.normal(0, 0.1, (HIDDEN,)),
        "O": rng.normal(0, 0.5, (HIDDEN, 1)),
    }
    inits = [helper.make_tensor(k, TensorProto.FLOAT, v.shape, v.astype(np.float32).ravel()) for k, v in weights.items()]
    inits += [helper.make_tensor(f"layer{i}", TensorProto.INT64, [], [i]) for i in (0, 1)]
    inits += [helper.make_tensor("axis0", TensorProto.INT64, [1], [0])]
    make = helper.make_node
    nodes = [make("Gather", ["state", "layer0"], ["h0"], axis=0), make("Gather", ["state", "layer1"], ["h1"], axis=0)]  # [1, 16] each
    for i, source in ((0, "x"), (1, "n0")):
        nodes += [make("Concat", [source, f"h{i}"], [f"c{i}"], axis=1), make("MatMul", [f"c{i}", f"W{i}"], [f"m{i}"]),
                  make("Add", [f"m{i}", f"B{i}"], [f"s{i}"]), make("Tanh", [f"s{i}"], [f"n{i}"])]
    nodes += [make("MatMul", ["n1", "O"], ["logit"]), make("Sigmoid", ["logit"], ["p"]),
              make("Unsqueeze", ["n0", "axis0"], ["u0"]), make("Unsqueeze", ["n1", "axis0"], ["u1"]), make("Concat", ["u0", "u1"], ["state_out"], axis=0)]
    graph = helper.make_graph(
        nodes, "two_cells",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, FEATURES]), helper.make_tensor_value_info("state", TensorProto.FLOAT, [2, 1, HIDDEN])],
        [helper.make_tensor_value_info("p", TensorProto.FLOAT, [1, 1]), helper.make_tensor_value_info("state_out", TensorProto.FLOAT, [2, 1, HIDDEN])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 7
    onnx.save(model, str(path))
    return path


def _stream(path, count, seed):
    """`count` chunks of one stream run in order: each with the state the model had before it."""
    import onnxruntime as ort

    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(seed)
    xs = rng.normal(size=(count, FEATURES)).astype(np.float32)
    state, states = np.zeros((2, 1, HIDDEN), np.float32), []
    for x in xs:
        states.append(state)
        state = session.run(None, {"x": x[None], "state": state})[1]
    return xs, np.stack(states)


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    folder = tmp_path_factory.mktemp("whole-state")
    model = _model(folder / "two_cells.onnx")
    for name, seed in (("calib", 1), ("eval", 2)):
        x, states = _stream(model, SAMPLES, seed)
        np.savez(folder / f"{name}.npz", x=x, state=states)  # state [N, 2, 1, 16]
    return folder, model


@pytest.mark.parametrize("chip", [
    pytest.param("rk3588", marks=pytest.mark.toolchain("rknn")),
    pytest.param("esp32s3", marks=pytest.mark.toolchain("espdl")),
])
def test_a_model_with_a_recurrent_state_builds_with_its_states_fed_whole(case, chip):
    folder, model = case
    proc = run_cli("build", str(model), "--target", chip, "--calib", str(folder / "calib.npz"), "--eval", str(folder / "eval.npz"),
                   "--metric", "fidelity", "--out", str(folder / "out"), "--force", "--format", "json", timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads((folder / "out" / "two_cells" / chip / "report.json").read_text())
    data = report["data"]["calibration"]["inputs"]["state"]
    assert data["shape"] == [SAMPLES, 2, 1, HIDDEN] and data["samples"].startswith("whole")
    accuracy = report["accuracy"]
    assert accuracy["status"] == "done" and accuracy["samples"] == SAMPLES
    state = accuracy["outputs"]["state_out"]["fidelity"]
    assert state["elements"] == SAMPLES * 2 * HIDDEN  # every sample's whole state compared
    assert state["cosine"] > 0.98, state  # int8 of a tanh state: a misfed state gives noise
    assert accuracy["outputs"]["p"]["fidelity"]["cosine"] > 0.98


def test_a_state_given_in_neither_form_stops_the_command_with_one_sentence(case):
    folder, model = case
    with np.load(folder / "calib.npz") as data:
        np.savez(folder / "bad.npz", x=data["x"], state=data["state"][:, 0])  # [N, 1, 16]: the batch axis, not the layers
    # `fix` reads --eval through the same loader as build, and needs no toolchain.
    proc = run_cli("fix", str(model), "--target", "esp32s3", "--eval", str(folder / "bad.npz"), "-o", str(folder / "fixed.onnx"), timeout=300)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert f"data for input 'state' has shape [{SAMPLES}, 1, {HIDDEN}]" in proc.stderr
    assert f"give one sample as [2, 1, {HIDDEN}] or N samples stacked as [N, 2, 1, {HIDDEN}]." in proc.stderr
    assert "Traceback" not in proc.stderr


def test_fix_evaluates_rewrites_on_whole_states(case):
    folder, model = case
    proc = run_cli("fix", str(model), "--target", "esp32s3", "--eval", str(folder / "eval.npz"), "-o", str(folder / "fixed.onnx"), timeout=300)
    # Before, the states were joined on their own axis 0 ([2N, 1, 16]) and the reference refused
    # them ("the model's inputs have different fixed batch sizes [1, 2]", exit 8).
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "error:" not in proc.stderr
