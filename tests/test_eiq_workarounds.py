"""The eIQ build's rewrite of opset<13 Softmax heads (targets/eiq/workarounds.py) and the core's
warning when a target's unquantised conversion computes another function.

The ONNX zoo SqueezeNet of the corpus (opset 9, Softmax on [1,1000,1,1]) is the real case:
onnx2tf 1.29.24 made its Softmax all ones (top-1 -100 pp in the corpus sweep); with the rewrite
the i.MX build matches ONNX Runtime. The rewrite itself is checked here against ONNX Runtime,
without a toolchain; one real build checks what onnx2tf makes of it.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from edgedeploy.model import load_model
from edgedeploy.pipeline.build import conversion_changed_function
from edgedeploy.targets.eiq.workarounds import softmax_in_2d

CORPUS = Path(__file__).parent / "fixtures" / "corpus"
SQUEEZENET = CORPUS / "onnx_zoo_squeezenet.onnx"
# One recorded input (the corpus data is regenerated, not committed): calibration and evaluation.
SAMPLE = CORPUS / "onnx_zoo_squeezenet.sample.npz"


def run(proto: onnx.ModelProto, feeds: dict) -> list[np.ndarray]:
    import onnxruntime as ort

    return ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)


def softmax_model(opset: int, shape: list[int], axis: int, op: str = "Softmax") -> onnx.ModelProto:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)
    graph = helper.make_graph([helper.make_node(op, ["x"], ["y"], name="head", axis=axis)], "g", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 7
    return load_model_proto(model)


def load_model_proto(model: onnx.ModelProto) -> onnx.ModelProto:
    return onnx.shape_inference.infer_shapes(model, strict_mode=True)


def test_the_squeezenet_head_gets_its_2d_form_and_computes_the_same():
    model = load_model(SQUEEZENET)
    copy = onnx.ModelProto()
    copy.CopyFrom(model.proto)
    rewritten, added = softmax_in_2d(copy, {"n65": "the head"})
    assert rewritten == ["the head"]
    assert set(added.values()) == {"the head"} and len(added) == 3
    onnx.checker.check_model(copy)  # IR 3: no new initializer that is not an input
    ops = [n.op_type for n in copy.graph.node][-4:]
    assert ops == ["Flatten", "Softmax", "Constant", "Reshape"]
    x = np.random.default_rng(0).uniform(0, 1, (1, 3, 224, 224)).astype(np.float32)
    (before,), (after,) = run(model.proto, {"data_0": x}), run(copy, {"data_0": x})
    assert after.shape == before.shape == (1, 1000, 1, 1)
    np.testing.assert_allclose(after, before, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize(
    "opset, shape, axis, why",
    [
        (13, [1, 16, 1, 1], 1, "opset 13 normalises over the axis alone, which onnx2tf converts"),
        (11, [1, 4, 3, 5], 3, "the last axis: both readings are one function"),
        (11, [1, 16], 1, "a 2-D input is already in the form"),
        (11, [1, 4, 3, 5], 1, "several trailing axes longer than 1: the 2-D form is wrong in onnx2tf too"),
    ],
)
def test_other_softmaxes_are_left_as_they_are(opset, shape, axis, why):
    model = softmax_model(opset, shape, axis)
    before = model.SerializeToString()
    assert softmax_in_2d(model, {}) == ([], {}), why
    assert model.SerializeToString() == before


@pytest.mark.parametrize("op", ["LogSoftmax", "Hardmax"])
def test_logsoftmax_and_hardmax_heads_too(op):
    model = softmax_model(11, [2, 6, 1, 1], -3, op)
    original = onnx.ModelProto()
    original.CopyFrom(model)
    rewritten, _ = softmax_in_2d(model, {})
    assert rewritten == ["head"]
    x = np.random.default_rng(1).normal(size=(2, 6, 1, 1)).astype(np.float32)
    np.testing.assert_allclose(run(model, {"x": x})[0], run(original, {"x": x})[0], rtol=1e-6, atol=1e-7)


def test_a_conversion_that_changed_the_function_is_warned_about():
    section = {"extra_fidelity": {"float32 TFLite": {"probs": {"cosine": 0.067, "snr_db": -36.5}, "box": {"cosine": 0.99999, "snr_db": 60.0}}}}
    (warning,) = conversion_changed_function(section, "float32 TFLite")
    assert "'probs'" in warning and "0.0670" in warning and "before any quantisation" in warning
    assert conversion_changed_function(section, None) == []
    assert conversion_changed_function({}, "float32 TFLite") == []


@pytest.mark.toolchain("eiq")
def test_squeezenet_on_imx8mp_matches_onnx_runtime(tmp_path):
    """The real conversion: the head rewritten, recorded, and the float32 TFLite equal to ONNX Runtime."""
    from edgedeploy.pipeline.build import BuildOptions, run_build

    logs: list[str] = []
    artifact = run_build(SQUEEZENET, "imx8mp", BuildOptions(out_root=tmp_path, calib=str(SAMPLE), eval=str(SAMPLE)), echo=logs.append)
    report = json.loads((artifact / "report.json").read_text())
    (workaround,) = report["convert"]["workarounds"]
    assert workaround["name"].startswith("Softmax in its 2-D form") and workaround["nodes"] == ["n65"]
    accuracy = report["accuracy"]
    conversion_alone = accuracy["extra_fidelity"]["float32 TFLite (the conversion alone)"]["softmaxout_1"]
    assert conversion_alone["cosine"] > 0.9999, conversion_alone
    assert accuracy["fidelity"]["softmaxout_1"]["cosine"] > 0.99, accuracy["fidelity"]
    assert not accuracy.get("warnings"), accuracy.get("warnings")
    assert any("applied the documented workaround Softmax in its 2-D form" in line for line in logs)



def test_tflite_outputs_are_matched_by_name_then_position():
    """The corpus's SSDlite head: the float32 TFLite's signature names its outputs bbox_regression
    and cls_logits (sorted, not the ONNX order), the int8 model's output_0 and output_1 (ONNX
    order); ten outputs or more sort output_2 before output_10."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("eiq_worker_under_test", Path(__file__).parent.parent / "targets" / "eiq" / "worker.py")
    worker = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(worker)
    onnx_order = ["bbox_regression", "cls_logits"]
    named = {"cls_logits", "bbox_regression"}
    assert [worker.match_signature_key(n, named, i, 2) for i, n in enumerate(onnx_order)] == onnx_order
    assert [worker.match_signature_key(n, {"output_0", "output_1"}, i, 2) for i, n in enumerate(onnx_order)] == ["output_0", "output_1"]
    many = {f"output_{i}" for i in range(12)}
    assert worker.match_signature_key("x", many, 2, 12) == "output_2" and worker.match_signature_key("y", many, 10, 12) == "output_10"
