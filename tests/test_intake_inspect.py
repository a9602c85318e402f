"""Model intake and `edgedeploy inspect`: figures checked against hand calculations."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from edgedeploy.model import load_model, parse_input_shape_options
from edgedeploy.model.inspect import inspect_report
from edgedeploy.model.stats import node_macs, node_names
from tests.helpers import conv_model, const, gemm_model, make_model, run_cli, save, tensor


def test_conv_macs_by_hand(tmp_path):
    # Y is 1x8x16x16 (stride 2, pad 1, 32x32 input); each output element needs Cin*k*k = 3*3*3 MACs.
    path = save(conv_model(cin=3, h=32, w=32, cout=8, k=3, stride=2, pad=1), tmp_path / "conv.onnx")
    report = inspect_report(load_model(path))
    assert report["macs"]["total"] == 8 * 16 * 16 * (3 * 3 * 3) == 55296
    assert report["parameters"]["count"] == 8 * 3 * 3 * 3


def test_grouped_conv_macs_by_hand(tmp_path):
    # Depthwise-ish: 8 groups, Cin=8 -> each output element sees 1 input channel * 3*3.
    path = save(conv_model(cin=8, h=10, w=10, cout=8, k=3, stride=1, pad=1, group=8), tmp_path / "dw.onnx")
    assert inspect_report(load_model(path))["macs"]["total"] == 8 * 10 * 10 * 9


def test_gemm_macs_by_hand(tmp_path):
    # A is 4x16, B 16x10: 4*10 outputs, 16 MACs each = 640; transA reads K from A's first axis.
    assert inspect_report(load_model(save(gemm_model(4, 16, 10), tmp_path / "g.onnx")))["macs"]["total"] == 640
    assert inspect_report(load_model(save(gemm_model(4, 16, 10, trans_a=1), tmp_path / "gt.onnx")))["macs"]["total"] == 640


def test_lstm_and_matmul_macs(tmp_path):
    seq, batch, inp, hidden = 5, 2, 8, 16
    rng = np.random.default_rng(0)
    w = rng.standard_normal((1, 4 * hidden, inp)).astype(np.float32)
    r = rng.standard_normal((1, 4 * hidden, hidden)).astype(np.float32)
    lstm = helper.make_node("LSTM", ["x", "w", "r"], ["y", "yh"], name="lstm", hidden_size=hidden)
    mm_w = rng.standard_normal((hidden, 3)).astype(np.float32)
    mm = helper.make_node("MatMul", ["yh", "m"], ["z"], name="mm")
    model = make_model([lstm, mm], [tensor("x", [seq, batch, inp])], [tensor("z", 3)], [const("w", w), const("r", r), const("m", mm_w)])
    report = inspect_report(load_model(save(model, tmp_path / "lstm.onnx")))
    per = {row["node"]: row["macs"] for row in report["macs"]["per_node"]}
    assert per["lstm"] == seq * batch * 4 * hidden * (inp + hidden)
    assert per["mm"] == 1 * batch * 3 * hidden  # yh is [1, batch, hidden]


@pytest.fixture(scope="module")
def node_test_cases():
    from onnx.backend.test.case.node import collect_testcases

    return {c.name: c for c in collect_testcases(None)}


@pytest.mark.parametrize(
    "case_name",
    ["test_conv_with_strides_padding", "test_convtranspose", "test_gemm_default_matrix_bias", "test_matmul_3d", "test_gru_defaults"],
)
def test_macs_on_onnx_node_tests(tmp_path, node_test_cases, case_name):
    """inspect's MACs on ONNX's own backend node-test models agree with the textbook formula."""
    case = node_test_cases[case_name]
    model = load_model(save(case.model, tmp_path / "m.onnx"))
    node = model.graph.node[0]
    shape = lambda name: [int(d) for d in model.shape(name)]
    if node.op_type == "Conv":
        y, w = shape(node.output[0]), shape(node.input[1])
        expected = int(np.prod(y)) * int(np.prod(w[1:]))
    elif node.op_type == "ConvTranspose":
        x, w = shape(node.input[0]), shape(node.input[1])
        expected = int(np.prod(x)) * int(np.prod(w[1:]))
    elif node.op_type in ("Gemm", "MatMul"):
        a, y = shape(node.input[0]), shape(node.output[0])
        expected = int(np.prod(y)) * a[-1]
    else:  # GRU: seq * batch * (numel W + numel R)
        x, w, r = shape(node.input[0]), shape(node.input[1]), shape(node.input[2])
        expected = x[0] * x[1] * (int(np.prod(w)) + int(np.prod(r)))
    assert node_macs(model, node) == expected > 0


def test_sample_figures_and_hash(sample_model_path):
    model = load_model(sample_model_path)
    report = inspect_report(model)
    assert model.sha256 == hashlib.sha256(sample_model_path.read_bytes()).hexdigest()
    assert report["inputs"][0]["dynamic_axes"] == [0]
    # Worked out by hand for the sample (batch 1): conv1 8x28x28x9, conv2 16x14x14x72,
    # conv3 32x7x7x144, fc 64x288 and 10x64.
    assert report["macs"]["total"] == 56448 + 225792 + 225792 + 18432 + 640
    assert report["macs"]["assumed_input_shapes"] == {"input": [1, 1, 28, 28]}
    assert report["parameters"]["count"] == 25034 < 100_000
    assert report["op_histogram"] == {"Relu": 4, "Conv": 3, "MaxPool": 3, "Gemm": 2, "Flatten": 1}


def test_pinning_changes_macs_and_shapes(sample_model_path):
    model = load_model(sample_model_path, parse_input_shape_options(["input=4x1x28x28"]))
    report = inspect_report(model)
    assert report["inputs"][0]["shape"] == [4, 1, 28, 28]
    assert report["macs"]["total"] == 4 * 527104
    assert model.shape("logits") == (4, 10)


def test_node_names_unique_when_missing_or_repeated():
    nodes = [helper.make_node("Relu", ["a"], ["b"]), helper.make_node("Relu", ["b"], ["c"], name="r"), helper.make_node("Relu", ["c"], ["d"], name="r")]
    graph = helper.make_graph(nodes, "g", [tensor("a", [1])], [tensor("d", [1])])
    names = node_names(graph)
    assert names == ["Relu_0", "r", "r#2"]


def test_inspect_cli_json_is_pure_json(sample_model_path):
    result = run_cli("inspect", str(sample_model_path), "--format", "json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["schema"] == "edgedeploy.inspect/1"
    assert data["model"]["opsets"] == {"ai.onnx": 13}


def test_inspect_defaults_to_sample():
    result = run_cli("inspect")
    assert result.returncode == 0, result.stderr
    assert "527104" in result.stdout
    assert "bundled sample" in result.stderr


def test_dynamic_non_batch_dims_leave_macs_unknown(tmp_path):
    weight = np.zeros((4, 3, 3, 3), np.float32)
    node = helper.make_node("Conv", ["x", "w"], ["y"], name="conv", pads=[1, 1, 1, 1])
    model = make_model([node], [tensor("x", [1, 3, "H", "W"])], [tensor("y", 4)], [const("w", weight)])
    path = save(model, tmp_path / "dyn.onnx")
    report = inspect_report(load_model(path))
    assert report["macs"]["total"] is None and report["macs"]["unknown_nodes"] == ["conv"]
    pinned = inspect_report(load_model(path, parse_input_shape_options(["x=1x3x8x8"])))
    assert pinned["macs"]["total"] == 4 * 8 * 8 * 27
