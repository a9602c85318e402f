"""ESP-DL's accuracy taps (Capability.DIAGNOSE): esp-ppq requantises the artifact's model as its build
did, and worker_diagnose.py taps every op (accumulated, isolated, ranges) for `edgedeploy diagnose`."""

from __future__ import annotations

from pathlib import Path

import onnx

from edgedeploy.arrays import write_arrays
from edgedeploy.model import named_copy
from edgedeploy.model.stats import node_names
from edgedeploy.targets.base import TapRequest, TapResult
from edgedeploy.targets.espdl.convert import ESPPPQ_DEFAULT_CALIB, calibration_batch, explicit_reduce_keepdims
from edgedeploy.targets.espdl.grouped_conv import rewrite_grouped_convs

WORKER = Path(__file__).with_name("worker_diagnose.py")
# The isolated runs (one per op) use this many calibration batches: the op's own error is stable
# well before the accumulated figures are, and a few hundred ops times every batch was the slow part.
ISOLATED_BATCHES = 4

# What the referred step charges an op with (TapResult.reader_rounds_input): esp-ppq rounds a tensor with
# its writer's output quantiser alone (a reader's input config is OVERLAPPED, "this input is not quantised,
# its quantisation is the parent's": esp_ppq 1.3.12 core/quant.py, QuantizationStates), so its writer kept in
# float leaves it float and an op alone int8 after a float writer reads it in float (mnist_shufflenet_v2_x0_5:
# the stem ReLU 1st kept in float and alone, the MaxPool reading it 23rd / 112th; docs/accuracy.md, "Which
# tensor a node is charged with"). An op is charged with its output's rounding, not its inputs'.
READER_ROUNDS_INPUT = False
REPAIR_KEEPS_INPUTS_ROUNDED = False  # no input rounding is charged, so none is left by the repair


def accuracy_taps(target, request: TapRequest) -> TapResult:
    work = request.workdir
    work.mkdir(parents=True, exist_ok=True)
    model = onnx.load(str(request.model_path))
    display_names = node_names(model.graph)
    named = named_copy(model, display_names)
    explicit_reduce_keepdims(named)
    rewrite_grouped_convs(named)  # as the build did: the taps see the Convs the artifact runs
    onnx.save(named, str(work / "model_named.onnx"))
    write_arrays(work / "calib.npz", request.calibration.inputs, whole=request.calibration.whole)
    if request.evaluation is not None:
        write_arrays(work / "eval.npz", request.evaluation.inputs, whole=request.evaluation.whole)
    built = request.manifest.get("espdl") or {}
    options = (request.manifest.get("options") or {}).get("target_options") or {}
    batchable = request.batchable
    payload = {
        "model": str(work / "model_named.onnx"),
        "chip": request.chip.id,
        "precision": request.precision,
        "input_names": list(request.calibration.inputs),
        "batch_size": calibration_batch(len(request.calibration), batchable),
        "calib": str(work / "calib.npz"),
        "eval": str(work / "eval.npz") if request.evaluation is not None else None,
        "calib_method": built.get("calib_method") or options.get("calib_method") or ESPPPQ_DEFAULT_CALIB,
        "int16_layers": built.get("int16_layers") or [],
        "isolated_batches": ISOLATED_BATCHES,
        "tap_helpers": str(request.tap_helpers),
        "brute_force_outputs": list(request.brute_force_outputs),
    }
    request.echo(f"diagnose: esp-ppq requantises for {request.chip.id} ({request.precision}, {payload['calib_method']} calibration) and taps every op")
    result = request.executor.run_worker(target.toolchain, WORKER, payload, work)
    versions = result.get("versions") or {}
    return TapResult(
        records=result["records"],
        brute_force=result.get("brute_force"),
        toolchain=f"esp-ppq {versions.get('esp-ppq') or '?'}",
        method=(
            f"esp-ppq's quantised simulation ({payload['calib_method']} calibration{', int16 layers ' + ', '.join(payload['int16_layers']) if payload['int16_layers'] else ''}); "
            "accumulated: every op quantised (graph-wise); isolated: that op alone quantised on float inputs (layer-wise, at its own output)"
        ),
        reader_rounds_input=READER_ROUNDS_INPUT,
        repair_keeps_inputs_rounded=REPAIR_KEEPS_INPUTS_ROUNDED,
    )
