"""Each node's own error referred to the model's outputs: its quantised output put into the float model.

A node's isolated figure is measured at its own output, which does not say how much of that error
reaches the model's outputs: a Sqrt or a Div downstream magnifies an error in small values
(d sqrt(x) = dx / (2 sqrt x)), a saturating or averaging layer attenuates it. Here, per node, its
quantised output replaces its float output in the float model (ONNX Runtime, the rest of the graph
in float) and the model's outputs are compared with the float ones: what that node alone quantised
costs at the outputs, which is what a brute force quantising that node alone measures.

What is injected, per node, in order of faithfulness:

- the path's own isolated tensor (`isolated_values` on the record: ONNX Runtime's QDQ path keeps
  the node run alone on float inputs through its Q/DQ pairs, weights and inputs quantised too);
- else the node in float on its inputs fake-quantised, its output fake-quantised: each tensor over
  the quantised range the path's tap reports (`stats` quant_lo, quant_hi, step: ESP-DL, eIQ), else
  to 8 bits over the float tensor's min/max on the calibration inputs, zero included (the tap
  reports no range: rknn-toolkit2's accuracy_analysis; its default `normal` quantisation is min/max,
  asymmetric); a Conv's weight with the steps the path reports (ESP-DL; none reported by
  rknn-toolkit2, whose weights are then left in float). Its inputs are quantised where the path
  declares that a reader rounds its input (`reader_rounds_input`, TapResult): there the tensor
  between two nodes is int8 whichever of them is int8 (rknn-toolkit2's exDataConvert layers,
  TFLite's QUANTIZE; BlazeFace's tensor between Conv_76 and Conv_77 on rk3588 and imx93,
  docs/accuracy.md), so its reader carries its error as its writer does. Where a tensor is rounded
  by its writer's quantiser alone (esp-ppq), a node alone int8 reads its inputs in float: only
  its output (and weight) is quantised, and the tensor's error is its writer's.

Written once here for every path (the core's analysis stage); no toolchain is run.
"""

from __future__ import annotations

import math
import time

import numpy as np
import onnx

from edgedeploy.accuracy import tap_numpy
from edgedeploy.interrupts import reraise_if_interrupted

# Each node is one float run of the whole model per sample: on at most this many samples...
REFERRED_SAMPLES = 8
# ... and within this many seconds for the whole path (the nodes most likely to matter first: the
# worst alone, then the largest falls); the nodes not reached get no referred figure.
REFERRED_BUDGET_S = 120.0
# Calibration samples the min/max fallback range is taken on.
RANGE_SAMPLES = 32
FLOAT_SUFFIX = "__edgedeploy_float"


def _session(model: onnx.ModelProto):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 3  # the renamed float tensor has no reader: ONNX Runtime warns
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


def _injectable(model: onnx.ModelProto, tensor: str, dtype) -> onnx.ModelProto:
    """`model` with `tensor` read from a graph input of that name (its producer writes it elsewhere)."""
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    for node in copy.graph.node:
        for i, name in enumerate(node.output):
            if name == tensor:
                node.output[i] = tensor + FLOAT_SUFFIX
    copy.graph.input.append(onnx.helper.make_tensor_value_info(tensor, onnx.helper.np_dtype_to_tensor_dtype(np.dtype(dtype)), None))
    for value_info in list(copy.graph.value_info):
        if value_info.name == tensor:
            copy.graph.value_info.remove(value_info)
    return copy


def _exposed_session(model: onnx.ModelProto, tensors: list[str]):
    """A session of the float model whose outputs are its graph outputs and these tensors (a copy with
    them added as outputs), and the names of its outputs in order."""
    exposed = onnx.ModelProto()
    exposed.CopyFrom(model)
    outputs = {o.name for o in model.graph.output}
    for name in tensors:
        if name not in outputs:
            outputs.add(name)
            exposed.graph.output.append(onnx.helper.make_empty_tensor_value_info(name))
    session = _session(exposed)
    return session, [o.name for o in session.get_outputs()]


def _float_runs(model: onnx.ModelProto, tensors: list[str], feeds: list[dict]) -> tuple[list[list[np.ndarray]], dict[str, list[np.ndarray]]]:
    """The float model's outputs, and the wanted tensors, per feed."""
    outputs = [o.name for o in model.graph.output]
    session, names = _exposed_session(model, tensors)
    found: dict[str, list] = {n: [] for n in tensors}
    results = []
    for feed in feeds:
        values = dict(zip(names, session.run(names, feed)))
        results.append([values[o] for o in outputs])
        for name in tensors:
            found[name].append(values[name])
    return results, found


def calibration_ranges(model: onnx.ModelProto, tensors: list[str], feeds: list[dict]) -> dict[str, tuple[float, float]]:
    """Each float tensor's (min, max) over the calibration feeds (integer tensors, shapes and indices, are
    not quantised), reduced feed by feed: every node's output of 32 samples of a large model would not fit."""
    session, names = _exposed_session(model, tensors)
    wanted = [name for name in names if name in set(tensors)]
    found: dict[str, tuple[float, float] | None] = {}
    for feed in feeds[:RANGE_SAMPLES]:
        for name, value in zip(wanted, session.run(wanted, feed)):
            value = np.asarray(value)
            if not np.issubdtype(value.dtype, np.floating) or value.size == 0 or found.get(name, 0) is None:
                found[name] = None
                continue
            lo, hi = float(value.min()), float(value.max())
            seen = found.get(name)
            found[name] = (min(lo, seen[0]), max(hi, seen[1])) if seen else (lo, hi)
    return {name: pair for name, pair in found.items() if pair is not None}


def minmax_range(lo: float, hi: float, bits: int = 8) -> tuple[float, float, float]:
    """An asymmetric `bits`-bit range over [lo, hi] with zero in it: (lo, hi, step)."""
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    step = (hi - lo) / (2**bits - 1)
    return lo, hi, step


def _priority(record: dict) -> tuple:
    """The nodes most likely to matter first: the worst alone, then the largest accumulated fall."""
    iso = (record.get("fidelity_isolated") or {}).get("snr_db")
    iso = iso if isinstance(iso, (int, float)) and math.isfinite(iso) else math.inf
    return (iso, -(record.get("drop_db") or 0.0))


def refer_to_outputs(records: list[dict], model: onnx.ModelProto, feeds: list[dict], calib_feeds: list[dict] | None,
                     skip_ops=frozenset({"Constant"}), budget_s: float = REFERRED_BUDGET_S, reader_rounds_input: bool = True) -> dict:
    """Set `referred` (per graph output, tap_numpy.moments) and `referred_injected` (what was
    injected) on the records it can; returns a summary for the path's method sentence.

    `feeds`: the inputs the path's figures are on (its isolated values are of their first ones);
    `calib_feeds`: for the min/max fallback range. Records are expected with their fidelity and
    drop already computed (diagnosis.diagnose_path does it first). `reader_rounds_input`: the
    path's declaration (TapResult): whether a node is charged with its inputs' rounding.
    """
    started = time.monotonic()
    try:
        return {**_refer(records, model, list(feeds[:REFERRED_SAMPLES]), calib_feeds, skip_ops, budget_s, started, reader_rounds_input),
                "reader_rounds_input": reader_rounds_input}
    except Exception as exc:  # noqa: BLE001 - the referred figures are an addition: without them the path ranks as before
        reraise_if_interrupted(exc)
        for record in records:
            record.pop("referred", None)
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return {"nodes": 0, "not_reached": 0, "samples": 0, "injected": [], "seconds": round(time.monotonic() - started, 1),
                "reader_rounds_input": reader_rounds_input, "error": f"{type(exc).__name__}: {reason}"[:300]}


def _refer(records, model, feeds, calib_feeds, skip_ops, budget_s, started, reader_rounds_input) -> dict:
    outputs = [o.name for o in model.graph.output]
    produced = {o for n in model.graph.node for o in n.output if o}
    by_tensor = {r["tensor"]: r for r in records if r.get("tensor")}
    path_ranges = {t: _path_range(r) for t, r in by_tensor.items() if _path_range(r)}
    candidates = [r for r in records if r.get("tensor") in produced and r.get("op_type") not in skip_ops and not _on_its_inputs_grid(r, path_ranges)]
    candidates.sort(key=_priority)
    reference, _ = _float_runs(model, [], feeds)
    fake_quantised = [r for r in candidates if not r.get("isolated_values")]
    wanted = {x for r in fake_quantised for x in [r["tensor"], *(_charged_inputs(r, reader_rounds_input))] if x not in path_ranges}
    graph_tensors = produced | ({i.name for i in model.graph.input} - {i.name for i in model.graph.initializer})
    ranges = {t: minmax_range(*v) for t, v in calibration_ranges(model, sorted(wanted & graph_tensors), calib_feeds or feeds).items()} if wanted else {}
    ranges.update(path_ranges)
    done, kinds, left = 0, set(), 0
    for record in candidates:
        if time.monotonic() - started > budget_s:
            left += 1
            continue
        try:
            figures, kind = _referred(record, model, feeds, reference, outputs, ranges, reader_rounds_input)
        except Exception as exc:  # noqa: BLE001 - a node whose tensor cannot be fed gets no referred figure, the rest still does
            reraise_if_interrupted(exc)
            continue
        if figures is None:
            continue
        record["referred"], record["referred_injected"] = figures, kind
        kinds.add(kind)
        done += 1
    return {"nodes": done, "not_reached": left, "samples": len(feeds), "injected": sorted(kinds), "seconds": round(time.monotonic() - started, 1)}


# Ops whose output values are some of their input values, moved or selected (a zero Pad's zero is on
# every grid that holds zero). Quantised on their input's grid, they add no error of their own.
VALUE_MOVING_OPS = frozenset({
    "MaxPool", "GlobalMaxPool", "ReduceMax", "ReduceMin", "Reshape", "Transpose", "Flatten", "Squeeze", "Unsqueeze",
    "Slice", "Gather", "Split", "Identity", "DepthToSpace", "SpaceToDepth", "Tile", "Expand", "Pad", "Concat",
})


def _on_its_inputs_grid(record: dict, path_ranges: dict) -> bool:
    """Whether the node only moves or selects values, the path reports a grid for each of its activation
    inputs, and for its output the same grid or none of its own (a toolchain gives such a passive op its
    writer's steps: esp-ppq reports no range for the MaxPool after the stem ReLU). Its output error is then its writer's: fake-quantising its inputs here would charge it
    with its writer's error, and the brute force shows that keeping it in float, or it alone int8, changes
    nothing (mnist_shufflenet_v2_x0_5 on esp32s3: the MaxPool 23rd kept in float and 112th alone while the
    ReLU writing its input is 1st both ways). Such a node gets no referred figure; its writer carries it."""
    own = path_ranges.get(record.get("tensor"))
    inputs = [path_ranges.get(name) for name in record.get("inputs") or []]
    if record.get("op_type") not in VALUE_MOVING_OPS or not inputs or None in inputs:
        return False
    return own is None or all(np.allclose(own, grid, rtol=1e-5, atol=0.0) for grid in inputs)


def _path_range(record: dict) -> tuple[float, float, float] | None:
    stats = record.get("stats") or {}
    if stats.get("quant_lo") is None or stats.get("quant_hi") is None or not stats.get("step"):
        return None
    return float(stats["quant_lo"]), float(stats["quant_hi"]), float(stats["step"])


# What `referred_injected` says, per source of the injected tensor.
INJECTED_ISOLATED = "the path's isolated tensor"
INJECTED_FAKE = "inputs and output fake-quantised"


def _charged_inputs(record: dict, reader_rounds_input: bool) -> list[str]:
    """The activation inputs whose rounding the node is charged with: all of them where the path's readers
    round their inputs, none where a tensor's rounding is its writer's."""
    return list(dict.fromkeys(record.get("inputs") or [])) if reader_rounds_input else []


def _referred(record: dict, model, feeds, reference, outputs, ranges, reader_rounds_input: bool) -> tuple[dict | None, str]:
    own = record.get("isolated_values")
    if own:
        return _run_injected(model, record["tensor"], own, feeds[: len(own)], reference, outputs), INJECTED_ISOLATED
    if record["tensor"] not in ranges:
        return None, ""
    quantised = _fake_quantised_node(model, record, ranges, _charged_inputs(record, reader_rounds_input))
    session = _session(quantised)
    sums: dict[str, dict | None] = {o: None for o in outputs}
    for index, feed in enumerate(feeds):
        for k, got in enumerate(session.run(outputs, feed)):
            sums[outputs[k]] = tap_numpy.merge_moments(sums[outputs[k]], tap_numpy.moments(reference[index][k], got))
    return sums, INJECTED_FAKE


def _fake_quant_nodes(source: str, target: str, lo: float, hi: float, step: float, prefix: str) -> tuple[list, list]:
    """Nodes computing target = lo + clip(round((source - lo) / step), 0, levels - 1) * step (float ops only,
    any number of levels), and their constants."""
    levels = int(round((hi - lo) / step)) + 1 if step > 0 else 1
    consts = {f"{prefix}_lo": lo, f"{prefix}_step": step if step > 0 else 1.0, f"{prefix}_zero": 0.0, f"{prefix}_top": float(levels - 1)}
    inits = [onnx.numpy_helper.from_array(np.array(v, np.float32), k) for k, v in consts.items()]
    h = onnx.helper
    nodes = [
        h.make_node("Sub", [source, f"{prefix}_lo"], [f"{prefix}_a"]),
        h.make_node("Div", [f"{prefix}_a", f"{prefix}_step"], [f"{prefix}_b"]),
        h.make_node("Round", [f"{prefix}_b"], [f"{prefix}_c"]),
        h.make_node("Max", [f"{prefix}_c", f"{prefix}_zero"], [f"{prefix}_d"]),
        h.make_node("Min", [f"{prefix}_d", f"{prefix}_top"], [f"{prefix}_e"]),
        h.make_node("Mul", [f"{prefix}_e", f"{prefix}_step"], [f"{prefix}_f"]),
        h.make_node("Add", [f"{prefix}_f", f"{prefix}_lo"], [target]),
    ]
    return nodes, inits


def _fake_quantised_node(model: onnx.ModelProto, record: dict, ranges: dict, charged_inputs: list[str]) -> onnx.ModelProto:
    """`model` with the record's node (with what it absorbed) reading `charged_inputs` through a fake
    quantisation and its output tensor fake-quantised; every other node in float."""
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    group = {record["node"], *(record.get("absorbs") or [])}
    tensor = record["tensor"]
    in_nodes, out_nodes, added_inits = [], [], []
    for k, name in enumerate(x for x in charged_inputs if x in ranges):
        quantised = f"{name}__edgedeploy_q{k}"
        nodes, inits = _fake_quant_nodes(name, quantised, *ranges[name], prefix=f"edgedeploy_fq_in{k}")
        in_nodes += nodes
        added_inits += inits
        for node in copy.graph.node:
            if node.name in group:
                for i, x in enumerate(node.input):
                    if x == name:
                        node.input[i] = quantised
    added_inits += _quantised_weight(copy, record)
    raw = tensor + FLOAT_SUFFIX
    for node in copy.graph.node:
        for i, name in enumerate(node.output):
            if name == tensor:
                node.output[i] = raw
    nodes, inits = _fake_quant_nodes(raw, tensor, *ranges[tensor], prefix="edgedeploy_fq_out")
    out_nodes += nodes
    added_inits += inits
    first_reader = next(node for node in copy.graph.node if node.name in group)
    writer = next(node for node in copy.graph.node if raw in node.output)
    ordered = []
    for node in copy.graph.node:
        if node is first_reader:
            ordered += in_nodes
        ordered.append(node)
        if node is writer:
            ordered += out_nodes
    del copy.graph.node[:]
    copy.graph.node.extend(ordered)
    copy.graph.initializer.extend(added_inits)
    return copy


def _quantised_weight(model: onnx.ModelProto, record: dict) -> list:
    """The Conv's weight quantised with the steps the path reports (`weight` stats: one scale per tensor or
    per output channel, symmetric, `bits` wide), as a new initializer its node reads; none where the path
    reports no scale (rknn-toolkit2) or the node is no Conv."""
    stats = record.get("weight") or {}
    node = next((n for n in model.graph.node if n.name == record["node"]), None)
    if stats.get("scale") is None or node is None or node.op_type != "Conv" or len(node.input) < 2:
        return []
    source = next((i for i in model.graph.initializer if i.name == node.input[1]), None)
    if source is None:
        return []
    weight = onnx.numpy_helper.to_array(source).astype(np.float64)
    scale = np.asarray(stats["scale"], dtype=np.float64).reshape(-1)
    if scale.size not in (1, weight.shape[0]) or not np.all(scale > 0):
        return []
    scale = scale.reshape((-1,) + (1,) * (weight.ndim - 1)) if scale.size > 1 else scale.reshape(())
    top = 2 ** (int(stats.get("bits") or 8) - 1)
    quantised = np.clip(np.round(weight / scale), -top, top - 1) * scale
    name = f"{source.name}__edgedeploy_q"
    node.input[1] = name
    return [onnx.numpy_helper.from_array(quantised.astype(onnx.helper.tensor_dtype_to_np_dtype(source.data_type)), name)]


def _run_injected(model, tensor, injected, feeds, reference, outputs) -> dict:
    """Per graph output, the moments of the float model with `tensor` replaced by `injected`."""
    sums: dict[str, dict | None] = {o: None for o in outputs}
    if tensor in outputs:
        session = None
    else:
        session = _session(_injectable(model, tensor, np.asarray(injected[0]).dtype))
    for index, (feed, value) in enumerate(zip(feeds, injected)):
        if session is None:
            got = [value if o == tensor else reference[index][k] for k, o in enumerate(outputs)]
        else:
            got = session.run(outputs, {**feed, tensor: value})
        for k, name in enumerate(outputs):
            sums[name] = tap_numpy.merge_moments(sums[name], tap_numpy.moments(reference[index][k], got[k]))
    return sums
