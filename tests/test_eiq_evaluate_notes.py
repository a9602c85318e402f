"""The imx93 (eIQ) host check's notes say only what was tried (issue 29, part 7): the retry without
XNNPACK is named only when it was made, with how it ended, and a TFLite without a signature says
that instead (no kernel can help, so it is not retried). run_tflite is replaced by stand-ins: the
logic under test is targets/eiq/worker.py's run_with_fallback, which runs in the eIQ environment."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

WORKER = Path(__file__).resolve().parent.parent / "targets" / "eiq" / "worker.py"


@pytest.fixture()
def worker():
    spec = importlib.util.spec_from_file_location("eiq_worker_under_test", WORKER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


REQUEST = {"onnx_inputs": [], "input_layouts": {}, "onnx_outputs": []}


def test_no_signature_is_said_and_not_retried(worker, monkeypatch):
    calls = []

    def run(path, inputs, layouts, data, outputs, default_delegates=True):
        calls.append(default_delegates)
        raise worker.NoSignature("it has no 'serving_default' signature (signatures: none), so its inputs cannot be fed by name; not retried without XNNPACK, which cannot help")

    monkeypatch.setattr(worker, "run_tflite", run)
    outs, note, error = worker.run_with_fallback("m.tflite", REQUEST, {}, "float32")
    assert calls == [True] and outs is None and note is None
    assert "no 'serving_default' signature" in error and "retried with the builtin kernels" not in error


def test_a_delegate_failure_is_retried_and_the_note_says_it_ran(worker, monkeypatch):
    def run(path, inputs, layouts, data, outputs, default_delegates=True):
        if default_delegates:
            raise RuntimeError("Node number 3 (TfLiteXNNPackDelegate) failed to prepare.")
        return {"y": [1]}

    monkeypatch.setattr(worker, "run_tflite", run)
    outs, note, error = worker.run_with_fallback("m.tflite", REQUEST, {}, "float32")
    assert outs == {"y": [1]} and error is None
    assert note == "the float32 model failed with the interpreter's default XNNPACK delegate (RuntimeError: Node number 3 (TfLiteXNNPackDelegate) failed to prepare.); the builtin kernels alone ran it"


def test_when_both_fail_no_note_claims_a_working_retry(worker, monkeypatch):
    def run(path, inputs, layouts, data, outputs, default_delegates=True):
        raise RuntimeError("delegate refused" if default_delegates else "builtin kernel refused")

    monkeypatch.setattr(worker, "run_tflite", run)
    outs, note, error = worker.run_with_fallback("m.tflite", REQUEST, {}, "int8")
    assert outs is None and note is None
    assert error == "RuntimeError: builtin kernel refused (with the builtin kernels only; with the default XNNPACK delegate: RuntimeError: delegate refused)"
