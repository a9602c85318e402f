"""RKNN's accuracy taps (Capability.DIAGNOSE): rknn-toolkit2 rebuilds the artifact's model as its build did
and runs accuracy_analysis on a few samples (worker_diagnose.py); here its layers become ONNX nodes.

`entire` of accuracy_analysis is the accumulated figure (golden vs simulator dumps, summed over
the samples); `single` (that layer alone on golden inputs) is given by the toolkit as a cosine and
a Euclidean distance only, from which the isolated SNR follows exactly (the golden tensor's norm
over the distance) and the rest of the sums are reconstructed to give that cosine back; its max
abs error is not known. Rows without figures were fused into the next row's layer (`absorbs`).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import onnx

from edgedeploy.datasets import model_input_specs
from edgedeploy.model import load_model
from edgedeploy.model.stats import node_names
from edgedeploy.targets.base import TapRequest, TapResult
from edgedeploy.targets.rknn.accuracy_table import _node_for_tensor, _producer_index, conv_inputs, parse_error_analysis
from edgedeploy.targets.rknn.convert import PRECISIONS, InputNormalisation, _write_dataset

WORKER = Path(__file__).with_name("worker_diagnose.py")
# accuracy_analysis runs one sample per call and dumps every layer (about 1-2 s each on a small
# model): a few samples give stable figures at a bounded cost.
ANALYSIS_SAMPLES = 4
# What the referred step charges a node with (TapResult.reader_rounds_input): hybrid quantisation keeps the
# tensor between an int8 and a float16 layer int8, through an exDataConvert layer the toolkit puts between
# them: an int8 writer's values converted for a float16 reader, a float16 writer's quantised for an int8
# reader (scripts/accuracy/probe_rknn_hybrid.py, rknn-toolkit2 2.5.0; docs/accuracy.md, "Which tensor a
# node is charged with"). Its repair takes a ranked node with the writers of its inputs (repair_knobs'
# float16_nodes, input_producers), so the inputs it is charged with go float16 with it.
READER_ROUNDS_INPUT = True
REPAIR_KEEPS_INPUTS_ROUNDED = False


def _isolated_moments(ref_sq: float, cosine: float | None, euclidean: float | None) -> dict | None:
    """tap_numpy.moments that give back the toolkit's `single` cosine and distance.

    With a = |golden|^2, e2 = distance^2 and x = golden.(q - golden): |q|^2 = a + e2 + 2x and
    golden.q = a + x; x is the root that makes golden.q / (|golden| |q|) the reported cosine.
    """
    if cosine is None or euclidean is None or not (math.isfinite(cosine) and math.isfinite(euclidean)):
        return None
    a, e2, c2 = ref_sq, euclidean**2, min(1.0, cosine**2)
    disc = max(0.0, (a * (1 - c2)) ** 2 - (a * a * (1 - c2) - c2 * a * e2))
    x = -a * (1 - c2) + (math.sqrt(disc) if cosine >= 0 else -math.sqrt(disc))
    return {"count": 0, "dot": a + x, "ref_sq": a, "got_sq": max(0.0, a + e2 + 2 * x), "err_sq": e2, "max_abs_error": None}


def _merge(a: dict | None, b: dict | None) -> dict | None:
    if a is None or b is None:
        return b if a is None else a
    return {k: (a[k] + b[k] if k != "max_abs_error" else None) for k in a}


def _request(target, request: TapRequest, work: Path) -> dict:
    specs = model_input_specs(load_model(request.model_path, require_static=True))
    names = [s.name for s in specs]
    norm = InputNormalisation(specs, request.calibration.preprocess)
    options = (request.manifest.get("options") or {}).get("target_options") or {}
    settings = PRECISIONS[request.precision]
    measured = request.evaluation if request.evaluation is not None else request.calibration
    samples = []
    for k in range(min(ANALYSIS_SAMPLES, len(measured))):
        paths = []
        for j, name in enumerate(names):
            path = work / "samples" / f"s{k}_i{j}.npy"
            path.parent.mkdir(parents=True, exist_ok=True)
            np.save(path, norm.to_board_domain(name, measured.feed(k, k + 1)[name]))
            paths.append(str(path))
        samples.append(paths)
    return {
        "chip": request.chip.id,
        "quantize": settings["quantize"],
        "quantized_dtype": settings["quantized_dtype"],
        "optimization_level": options.get("optimization_level"),
        "case": {"model": str(request.model_path), "inputs": [{"name": s.name, "shape": list(s.shape), "dtype": s.dtype} for s in specs], "mean_values": norm.mean_values, "std_values": norm.std_values},
        "dataset": str(_write_dataset(request.calibration, norm, work / "calib", names, 1)),
        "samples": samples,
        "tap_helpers": str(request.tap_helpers),
    }


def _single_by_layer(reports: list[str], ref_sq: dict) -> dict:
    """Per toolkit layer: the isolated sums over the samples, from each sample's `single` figures."""
    isolated: dict[str, dict | None] = {}
    for index, text in enumerate(reports):
        for row in parse_error_analysis(text):
            norms = ref_sq.get(row["tensor"]) or []
            if row["single_cosine"] is None or index >= len(norms):
                continue
            isolated[row["tensor"]] = _merge(isolated.get(row["tensor"]), _isolated_moments(norms[index], row["single_cosine"], row["single_euclidean"]))
    return isolated


def records_from(result: dict, graph: onnx.GraphProto) -> list[dict]:
    """One record per ONNX node the toolkit's rows map to (in the rows' order); a row without figures
    was fused into a later layer: its node is absorbed by the first later record that reads its output."""
    layers = result["layers"]
    isolated = _single_by_layer(result["reports"], {k: v["ref_sq"] for k, v in layers.items()})
    producer, inputs = _producer_index(graph)
    convs = conv_inputs(graph)
    by_name = dict(zip(node_names(graph), graph.node))
    records: dict[str, dict] = {}
    pending: list[str] = []
    for row in parse_error_analysis(result["reports"][0]) if result["reports"] else []:
        node = _node_for_tensor(row["tensor"], producer, inputs, convs)
        if node is None:
            continue
        if row["entire_cosine"] is None:
            pending.append(node)
            continue
        proto, layer = by_name[node], layers.get(row["tensor"]) or {}
        record = records.pop(node, None) or {
            "node": node, "op_type": proto.op_type, "tensor": proto.output[0], "absorbs": [],
            # activations only: a weight written as a Constant node (silero_vad_16k's inlined
            # branches) has no row, and as an input it left every Conv's fall unknown
            "inputs": [x for x in proto.input if (x in producer and by_name[producer[x]].op_type != "Constant") or x in inputs],
            "precision": "float16" if "float16" in row["tensor"] else "int8",
        }
        record.update(toolkit_tensor=row["tensor"], accumulated=layer.get("accumulated"), isolated=isolated.get(row["tensor"]), stats=layer.get("stats"))
        fused_in = [p for p in pending if p != node and set(by_name[p].output) & set(proto.input)]
        record["absorbs"] += [p for p in fused_in if p not in record["absorbs"]]
        pending = [p for p in pending if p not in fused_in]
        records[node] = record  # re-inserted: a node's last row (its output after conversions) wins, in its place
    return list(records.values())


def _layer_groups(layers: list[str], graph: onnx.GraphProto, wanted: list[str]) -> list[dict]:
    """Per wanted ONNX node, every layer of the toolkit's quantization config that maps to it (as the
    diagnosis maps the toolkit's tensors: a split Conv is many layers); nodes with none are left out."""
    producer, inputs = _producer_index(graph)
    convs = conv_inputs(graph)
    # The model's inputs and the toolkit's int8 conversions at its edges are no operands that
    # custom_quantize_layers accepts ("Invalid operands name 'state_batch_first'").
    edges = inputs | {f"{t}_int8" for t in inputs | {o.name for o in graph.output}}
    owner = {layer: _node_for_tensor(layer, producer, inputs, convs) for layer in layers if layer not in edges}
    groups = [{"node": node, "layers": [layer for layer in owner if owner[layer] == node]} for node in wanted]
    return [g for g in groups if g["layers"]]


def _measured_groups(layers: list[str], graph: onnx.GraphProto, wanted: list[str], producers: bool) -> list[dict]:
    """The brute force's groups of layers, one per wanted node with layers of its own; with `producers`
    (TapRequest.brute_force_with_producers) each also holds the layers of the nodes producing its data
    inputs, even when --only leaves those nodes out of `wanted`."""
    from edgedeploy.targets.brute_force import with_producers

    groups = _layer_groups(layers, graph, wanted)
    if not producers:
        return groups
    members = with_producers({g["node"]: g["layers"] for g in _layer_groups(layers, graph, node_names(graph))}, graph)
    return [{"node": g["node"], "layers": members[g["node"]]} for g in groups]


def _brute_force(target, request: TapRequest, work: Path) -> dict:
    """TapRequest.brute_force_outputs on the simulator (worker_brute_force.py): per ONNX node, the
    outputs with its layers alone kept in float16 and alone in int8 (every other measured node's
    layers float16), against ONNX Runtime's float model on the same evaluation inputs
    (TapResult.brute_force, plus per sample the first output's highest value as `*_values` for a task metric
    that is not an argmax)."""
    from edgedeploy.arrays import write_arrays
    from edgedeploy.targets.brute_force import DEADLINE_S, figures, float_reference

    specs = model_input_specs(load_model(request.model_path, require_static=True))
    names = [s.name for s in specs]
    norm = InputNormalisation(specs, request.calibration.preprocess)
    measured = request.evaluation if request.evaluation is not None else request.calibration
    graph = onnx.load(str(request.model_path)).graph
    outputs = list(request.brute_force_outputs)
    write_arrays(work / "bf_eval.npz", {n: norm.to_board_domain(n, measured.inputs[n]) for n in names}, whole=measured.whole)
    step1 = request.executor.run_worker(target.toolchain, WORKER.with_name("worker_brute_force.py"),
                                        {**_request(target, request, work), "mode": "step1", "hybrid_dir": str(work / "hybrid")}, work / "brute1")
    wanted = list(request.brute_force_nodes or node_names(graph))
    groups = _measured_groups(step1["layers"], graph, wanted, request.brute_force_with_producers)
    payload = {"mode": "variants", "files": step1["files"], "groups": groups, "eval_inputs": str(work / "bf_eval.npz"), "input_names": names,
               "output_names": [o.name for o in graph.output], "deadline_s": DEADLINE_S,
               "data_formats": ["nchw" if len(s.shape) == 4 else None for s in specs]}
    request.echo(f"brute force: rknn-toolkit2 hybrid quantisation, {len(groups)} of {len(wanted)} nodes with layers of their own, two builds each, on {len(measured)} samples")
    result = request.executor.run_worker(target.toolchain, WORKER.with_name("worker_brute_force.py"), payload, work / "brute2")
    reference = float_reference(request.model_path, measured, outputs)
    op_type = {name: node.op_type for name, node in zip(node_names(graph), graph.node)}
    return {**figures(result["variants"], groups, reference, outputs, len(measured), op_type, wanted), "toolkit_version": step1.get("toolkit_version")}


def accuracy_taps(target, request: TapRequest) -> TapResult:
    work = request.workdir
    work.mkdir(parents=True, exist_ok=True)
    payload = _request(target, request, work)
    request.echo(f"diagnose: rknn-toolkit2 builds for {request.chip.id} ({request.precision}) and runs accuracy_analysis on {len(payload['samples'])} samples")
    result = request.executor.run_worker(target.toolchain, WORKER, payload, work)
    model = onnx.load(str(request.model_path))
    notes = [f"rknn-toolkit2's advised workaround applied: {w['name']}" for w in result.get("workarounds") or []]
    notes.append("accuracy_analysis reports no quantisation ranges, so the causes that need them (clipping, unused range) are not looked for on this path; it reports no isolated max abs error either")
    brute = _brute_force(target, request, work) if request.brute_force_outputs else None
    return TapResult(
        brute_force=brute,
        records=records_from(result, model.graph),
        toolchain=f"rknn-toolkit2 {result.get('toolkit_version') or '?'}",
        method=f"rknn-toolkit2's accuracy_analysis on {len(payload['samples'])} samples: accumulated = its `entire` (simulator vs golden dumps); isolated = its `single` (that layer alone on golden inputs)",
        notes=notes,
        reader_rounds_input=READER_ROUNDS_INPUT,
        repair_keeps_inputs_rounded=REPAIR_KEEPS_INPUTS_ROUNDED,
    )
