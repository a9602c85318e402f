"""eIQ's accuracy taps (Capability.DIAGNOSE): the artifact's float32 and int8 TFLite models tapped tensor by
tensor (worker_diagnose.py), mapped to ONNX nodes through the layers each node became (tflite_layers.json,
written by the build) with the same tracing as the Vela verdict (vela.trace_ops).

A TFLite operator that several ONNX nodes went into (Conv+Add+Relu fused) is the record of the
last of them in the graph, which lists the others as absorbed. TFLite offers no run with one
operator alone quantised: there are no isolated figures on this path. (scripts/accuracy/brute_force.py's
brute force, TapRequest.brute_force_outputs, quantises afresh with every other operator
denylisted, worker_brute_force.py: a conversion per node, too slow for a diagnosis.)
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from edgedeploy.arrays import write_arrays
from edgedeploy.errors import ArtifactError
from edgedeploy.model.stats import node_names
from edgedeploy.targets.base import TapRequest, TapResult
from edgedeploy.targets.eiq.convert import TFLITE_MAP
from edgedeploy.targets.eiq.vela import trace_ops

WORKER = Path(__file__).with_name("worker_diagnose.py")
# The float values the worker holds for the statistics (percentiles, clipping), half for the
# evaluation samples, half for the calibration ones: PP-OCRv4's 48x320 recogniser, 355 tensors on
# 128 calibration and 32 evaluation samples all held, grew past 21 GB and was killed inside
# `build --recover`. Only the statistics rest on fewer samples; the figures use every one.
STATS_BUDGET_BYTES = 2 << 30
# What the referred step charges a node with (TapResult.reader_rounds_input): the converter keeps a
# denylisted operator's tensors int8 where its neighbours are int8, a DEQUANTIZE of its int8 writer's
# output before it and a QUANTIZE for its int8 reader after it, and quantises the input of a lone int8
# operator (BlazeFace's Conv_76 or Conv_77 kept in float alone gain nothing, both together 3.1 dB;
# docs/accuracy.md). Its repair (repair_knobs' float_nodes) keeps a ranked node in float without the
# writers of its inputs, which stay int8: the referred figures do not lead its ranking.
READER_ROUNDS_INPUT = True
REPAIR_KEEPS_INPUTS_ROUNDED = True


def _save(dataset, folder: Path, tag: str) -> str:
    """The dataset's inputs in the workers' one array format (edgedeploy.arrays)."""
    folder.mkdir(parents=True, exist_ok=True)
    return str(write_arrays(folder / f"{tag}.npz", dataset.inputs, whole=dataset.whole))


def records_from(result: dict, mapping: dict, graph) -> list[dict]:
    """One record per ONNX node that owns an int8 operator's output tensor, in the order of the operators."""
    owners, _unmapped = trace_ops(result["ops"], mapping["layers_by_node"], mapping["output_producers"], [o["name"] for o in mapping["onnx_outputs"]])
    order = {name: i for i, name in enumerate(node_names(graph))}
    by_name = dict(zip(node_names(graph), graph.node))
    producers = {out: name for name, node in by_name.items() for out in node.output}
    records: dict[str, dict] = {}
    for op in result["ops"]["ops"]:
        # Owners outside the user's graph (nodes onnx2tf's own simplifier named, sng_*) are left out.
        nodes = sorted((n for n in owners.get(op["index"]) or [] if n in by_name), key=lambda n: order[n])
        tensor = op["outputs"][0]["name"] if op["outputs"] else None
        if not nodes or tensor not in result["tensors"]:
            continue
        node = nodes[-1]
        proto, tap = by_name[node], result["tensors"][tensor]
        record = records.pop(node, None) or {"node": node, "op_type": proto.op_type, "tensor": proto.output[0], "absorbs": [], "precision": "int8",
                                            "inputs": [x for x in proto.input if x in producers or x in {i.name for i in graph.input}]}
        record.update(toolkit_tensor=tensor, accumulated=tap["accumulated"], isolated=None, stats=tap["stats"], stats_eval=tap.get("stats_eval"))
        record["absorbs"] += [n for n in nodes[:-1] if n not in record["absorbs"]]
        records[node] = record
    return list(records.values())


def _measured_tokens(token_names: dict, graph, wanted: list[str], producers: bool) -> dict:
    """Per wanted ONNX node, the tokens naming its operators in the tokenised model; with `producers`
    (TapRequest.brute_force_with_producers) also those of the nodes producing its data inputs, so that
    the tensor entering it is float too (the brute force's second form)."""
    from edgedeploy.targets.brute_force import with_producers

    owned = {name: [token for token, owner in token_names.items() if owner == name] for name in node_names(graph)}
    members = with_producers(owned, graph) if producers else owned
    return {name: members[name] for name in wanted}


def _brute_force(target, request: TapRequest, work: Path) -> dict:
    """TapRequest.brute_force_outputs through the TFLite converter (worker_brute_force.py): per ONNX
    node, the outputs with its operators alone kept in float and alone quantised (the converter's
    denylisted_nodes), against ONNX Runtime's float model on the same evaluation inputs."""
    import onnx

    from edgedeploy.targets.brute_force import DEADLINE_S, figures, float_reference
    from edgedeploy.targets.eiq.convert import tokenised_model

    proto = onnx.load(str(request.model_path))
    token_names, _, _ = tokenised_model(proto, work / "brute" / "named" / "model.onnx")
    wanted = list(request.brute_force_nodes or node_names(proto.graph))
    measured = request.evaluation if request.evaluation is not None else request.calibration
    payload = {"model": str(work / "brute" / "named" / "model.onnx"), "calib": _save(request.calibration, work / "brute", "calib"),
               "eval": _save(measured, work / "brute", "eval"), "deadline_s": DEADLINE_S,
               "nodes": _measured_tokens(token_names, proto.graph, wanted, request.brute_force_with_producers)}
    request.echo(f"brute force: the TFLite converter quantises {len(wanted)} nodes two ways each (denylisted operators), on {len(measured)} samples")
    result = request.executor.run_worker(target.toolchain, WORKER.with_name("worker_brute_force.py"), payload, work / "brute")
    outputs = list(request.brute_force_outputs)
    reference = float_reference(request.model_path, measured, outputs)
    op_type = {name: node.op_type for name, node in zip(node_names(proto.graph), proto.graph.node)}
    return {**figures(result["variants"], result["groups"], reference, outputs, len(measured), op_type, wanted), "operators": result["operators"]}


def _held_note(samples: dict) -> str:
    """Said only when the budget cut the samples the statistics (the causes) are taken on."""
    cut = [f"{samples[held]} of {samples[total]} {kind} samples" for kind, held, total in
           (("calibration", "calibration_held", "calibration_available"), ("evaluation", "evaluation_held", "evaluation")) if samples.get(held, 0) < samples.get(total, 0)]
    if not cut:
        return ""
    return (f"; the tensors' statistics on {' and '.join(cut)} (every tensor's values take {samples['bytes_per_sample'] / 2**20:.0f} MB a sample, "
            f"held within {STATS_BUDGET_BYTES / 2**20:.0f} MB); the figures on every sample")


def accuracy_taps(target, request: TapRequest) -> TapResult:
    artifact, work = request.artifact, request.workdir
    map_path = artifact / TFLITE_MAP
    if not map_path.is_file():
        raise ArtifactError(f"{artifact} has no {TFLITE_MAP} (built by an edgedeploy older than the diagnosis); build it again to diagnose it.")
    mapping = json.loads(map_path.read_text())
    measured = request.evaluation if request.evaluation is not None else request.calibration
    payload = {
        "float32_tflite": str(artifact / "model_float32.tflite"),
        "int8_tflite": str(artifact / "model_int8.tflite"),
        "data": _save(measured, work / "data", "measured"),
        "calib": _save(request.calibration, work / "data", "calib"),
        "has_eval": request.evaluation is not None,
        "onnx_inputs": mapping["onnx_inputs"],
        "input_layouts": mapping["input_layouts"],
        "tap_helpers": str(request.tap_helpers),
        "stats_budget_bytes": STATS_BUDGET_BYTES,
    }
    request.echo(f"diagnose: the TFLite interpreter runs the float32 and int8 models and keeps every tensor ({len(measured)} samples)")
    result = request.executor.run_worker(target.toolchain, WORKER, payload, work)
    import onnx

    graph = onnx.load(str(request.model_path)).graph
    versions = result.get("versions") or {}
    return TapResult(
        brute_force=_brute_force(target, request, work) if request.brute_force_outputs else None,
        records=records_from(result, mapping, graph),
        toolchain=f"onnx2tf {versions.get('onnx2tf') or '?'} + TFLite (ai-edge-litert {versions.get('ai-edge-litert') or '?'})",
        method="the int8 TFLite model's tensors (dequantised) against the float32 TFLite model's of the same name (accumulated); TFLite runs no operator alone quantised, so no isolated figures"
        + _held_note(result.get("samples") or {}),
        notes=[],
        reader_rounds_input=READER_ROUNDS_INPUT,
        repair_keeps_inputs_rounded=REPAIR_KEEPS_INPUTS_ROUNDED,
    )
