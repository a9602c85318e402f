"""Intake's shortcuts give the model that the plain path gives: shape inference without the large
weights, the checker on the bytes read, the hash computed beside the checks."""

from __future__ import annotations

import hashlib
import warnings

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from edgedeploy.errors import ModelError
from edgedeploy.model import intake, load_model
from edgedeploy.model.intake import with_batch_pinned


def full_inference(proto: onnx.ModelProto) -> onnx.ModelProto:
    """ONNX's strict inference on the whole model, weights and all: what intake must equal."""
    return onnx.shape_inference.infer_shapes(proto, check_type=True, strict_mode=True, data_prop=True)


def serialised(proto: onnx.ModelProto) -> bytes:
    return proto.SerializeToString(deterministic=True)


def conv_model(batch="N") -> onnx.ModelProto:
    """Conv weights far over the stub threshold, a Reshape whose shape is a (small) initializer."""
    rng = np.random.default_rng(0)
    weights = numpy_helper.from_array(rng.standard_normal((64, 32, 3, 3)).astype(np.float32), "w")
    shape = numpy_helper.from_array(np.array([0, -1], np.int64), "shape")
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("Reshape", ["r", "shape"], ["y"], name="flatten"),
    ]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 32, 8, 8])], [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, None])], [weights, shape])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_large_weights_reach_inference_as_stubs_only():
    model = conv_model()
    light, stubbed = intake._without_large_weights(model)
    assert stubbed == 1
    stub = next(t for t in light.graph.initializer if t.name == "w")
    assert stub.data_location == TensorProto.EXTERNAL and not stub.raw_data and list(stub.dims) == [64, 32, 3, 3]
    assert numpy_helper.to_array(next(t for t in light.graph.initializer if t.name == "shape")).tolist() == [0, -1]
    assert light.ByteSize() < model.ByteSize() // 100


def test_loaded_model_equals_inference_of_the_whole_model(tmp_path):
    model = conv_model()
    path = tmp_path / "conv.onnx"
    onnx.save(model, str(path))
    loaded = load_model(path)
    assert serialised(loaded.proto) == serialised(full_inference(model))
    assert loaded.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert loaded.shape("y") == ("N", 64 * 8 * 8)
    # the batch pinned for the audit: inferred again the same way, and the original left alone
    pinned = with_batch_pinned(loaded)
    assert pinned is not None and pinned.proto.graph.input[0].type.tensor_type.shape.dim[0].dim_value == 1
    assert loaded.proto.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "N"


def test_a_static_model_is_not_copied_for_pinning(tmp_path):
    path = tmp_path / "static.onnx"
    onnx.save(conv_model(batch=1), str(path))
    assert with_batch_pinned(load_model(path)) is None


def test_inference_that_needs_a_stubbed_value_falls_back_to_the_whole_model(monkeypatch):
    """Every initializer stubbed: the Reshape's shape is needed, ONNX refuses the stub, the whole model is inferred."""
    monkeypatch.setattr(intake, "SHAPE_INFERENCE_STUB_MIN_ELEMENTS", 0)
    model = conv_model()
    light, stubbed = intake._without_large_weights(model)
    assert stubbed == 2
    with pytest.raises(onnx.shape_inference.InferenceError, match="external"):
        full_inference(light)
    before = serialised(model)
    assert serialised(intake._infer_shapes(intake.Path("conv.onnx"), model)) == serialised(full_inference(model))
    assert serialised(model) == before  # not consumed: the caller's model is untouched


@pytest.fixture(scope="module")
def node_cases():
    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return [c for c in collect_testcases() if c.data_sets]


@pytest.mark.parametrize("op", ["Reshape", "Expand", "Tile", "Slice", "Pad", "Resize", "ConstantOfShape", "Unsqueeze", "Squeeze", "Range", "Split", "TopK", "ReduceSum", "OneHot"])
def test_node_tests_with_every_input_a_stubbed_constant_infer_as_before(monkeypatch, node_cases, op):
    """ONNX's own cases of operators whose shapes depend on input values, every input turned into
    an initializer and every initializer stubbed: the result equals the whole model's inference
    (ONNX never silently infers less from a stub; it fails, and the fallback runs)."""
    monkeypatch.setattr(intake, "SHAPE_INFERENCE_STUB_MIN_ELEMENTS", 0)
    cases = [c for c in node_cases if {n.op_type for n in c.model.graph.node} == {op}]
    assert cases
    for case in cases:
        model = onnx.ModelProto()
        model.CopyFrom(case.model)
        values = case.data_sets[0][0]
        kept = []
        for vi, value in zip(list(model.graph.input), values):
            if isinstance(value, np.ndarray) and value.dtype != object:
                model.graph.initializer.append(numpy_helper.from_array(value, vi.name))
            else:
                kept.append(vi)
        del model.graph.input[:]
        model.graph.input.extend(kept)
        try:
            expected = serialised(full_inference(model))
        except onnx.shape_inference.InferenceError:
            with pytest.raises(ModelError):
                intake._infer_shapes(intake.Path(case.name), model)
            continue
        assert serialised(intake._infer_shapes(intake.Path(case.name), model)) == expected, case.name


def test_a_shape_error_reads_as_before_when_weights_are_stubbed(tmp_path):
    """A model that fails inference fails with ONNX's message on the whole model, whatever the stubs."""
    model = conv_model(batch=1)
    model.graph.output[0].type.tensor_type.elem_type = TensorProto.INT64  # Reshape keeps float: a type clash
    path = tmp_path / "clash.onnx"
    onnx.save(model, str(path))
    with pytest.raises(ModelError, match="shape inference failed") as caught:
        load_model(path)
    with pytest.raises(onnx.shape_inference.InferenceError) as plain:
        full_inference(model)
    assert intake.quoted(plain.value) in str(caught.value)
