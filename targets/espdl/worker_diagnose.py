"""ESP-DL accuracy taps: esp-ppq's quantised graph against its float self, per op (`edgedeploy diagnose`).

Runs in the espdl environment (never imported by edgedeploy; it must not import edgedeploy).
Quantises the artifact's model as its build did (chip, precision, calibration method, int16
layers), then with esp-ppq's own executor, on the same inputs:

- accumulated: every op quantised, each op's output against the float run (esp-ppq's graph-wise
  analysis, per tensor);
- isolated: only that op quantised (its input and output quantisers, its weights), float inputs
  (esp-ppq's layer-wise analysis, measured at the op's own output instead of the graph's);
- per op: the float output's statistics against the range its quantiser holds (an OVERLAPPED
  quantiser shares the range of the one it is dominated by: a Conv's output is a ReLU's), and
  the weight and bias against their steps.

esp-ppq's op names are the ONNX node names (the core hands it a copy named with edgedeploy's
display names) and its variable names are the ONNX tensor names. Sums and statistics come from
the core's numpy-only tap_numpy.py (request["tap_helpers"]).
"""

import os

BUILD_WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "worker_build.py")
PARAMETRIC = ("Conv", "ConvTranspose", "Gemm", "MatMul")


def _collate(batch):
    if isinstance(batch, (list, tuple)):
        return [b.float() for b in batch]
    return batch.float()


def _forward(executor, quantable, active, batch, names):
    """One forward pass with only the ops in `active` quantised; {tensor name: numpy array}."""
    for op in quantable:
        op.dequantize()
    for op in active:
        op.restore_quantize_state()
    try:
        values = executor.forward(inputs=_collate(batch[0] if len(batch) == 1 else batch), output_names=names)
    finally:
        for op in quantable:
            op.restore_quantize_state()
    return {n: v.detach().cpu().numpy() for n, v in zip(names, values)}


def _range_of(config):
    """(lo, hi, step, bits) of a tensor quantiser, following an OVERLAPPED one to the quantiser it shares."""
    from esp_ppq.core import QuantizationStates

    seen = 0
    while config is not None and config.state == QuantizationStates.OVERLAPPED and seen < 16:
        config, seen = config.dominated_by, seen + 1
    if config is None or config.scale is None or config.state not in (QuantizationStates.ACTIVATED, QuantizationStates.PASSIVE):
        return None
    scale = config.scale.detach().cpu().reshape(-1)
    if scale.numel() != 1:
        return None
    offset = float(config.offset.detach().cpu().reshape(-1)[0]) if config.offset is not None else 0.0
    step = float(scale[0])
    return (config.quant_min - offset) * step, (config.quant_max - offset) * step, step, int(config.num_of_bits)


def _parameters(op, tap):
    """weight_stats and bias_stats of a Conv/Gemm/MatMul, with the steps esp-ppq gave them."""
    found = {}
    if op.type not in PARAMETRIC or len(op.inputs) < 2 or not op.inputs[1].is_parameter or not hasattr(op, "config"):
        return found
    configs = op.config.input_quantization_config
    weight_config = configs[1]
    axis = weight_config.channel_axis if weight_config.channel_axis is not None else (1 if op.type == "ConvTranspose" else 0)
    if op.type == "Gemm" and weight_config.channel_axis is None:
        axis = 0 if op.attributes.get("transB", 0) else 1
    scale = weight_config.scale.detach().cpu().numpy() if weight_config.scale is not None else None
    found["weight"] = tap.weight_stats(op.inputs[1].value.detach().cpu().numpy(), axis, scale, weight_config.num_of_bits)
    if len(op.inputs) > 2 and op.inputs[2].is_parameter and configs[2].scale is not None:
        bias = op.inputs[2].value.detach().cpu().numpy()
        found["bias"] = tap.bias_stats(bias, configs[2].scale.detach().cpu().numpy(), configs[2].num_of_bits)
        found["bias"]["values"] = [float(v) for v in bias.reshape(-1)[:4096]]
    return found


def _record(op, tap, accumulated, isolated, float_calib, float_eval, precision_of):
    from esp_ppq.core import QuantizationStates

    out = op.outputs[0].name
    config = op.config.output_quantization_config[0] if hasattr(op, "config") else None
    # An OVERLAPPED output is not quantised at this op: it shares the quantiser of the op it is
    # fused with (a Conv's output is its ReLU's), whose record carries the range.
    shared = config is not None and config.state == QuantizationStates.OVERLAPPED
    quantiser = None if shared or config is None else _range_of(config)
    lo, hi, step, _bits = quantiser if quantiser else (None, None, None, None)
    record = {
        "node": op.name,
        "op_type": op.type,
        "tensor": out,
        "inputs": [v.name for v in op.inputs if not v.is_parameter],
        "precision": precision_of(op) + (" (output requantised by the next op)" if shared else ""),
        "accumulated": accumulated.get(out),
        "isolated": isolated.get(op.name),
        "stats": tap.tensor_stats(float_calib[out], lo, hi, step),
        "input_steps": [(_range_of(c) or (None, None, None))[2] for c, v in zip(op.config.input_quantization_config, op.inputs) if not v.is_parameter] if hasattr(op, "config") else [],
    }
    if float_eval is not None and quantiser:
        record["stats_eval"] = tap.tensor_stats(float_eval[out], lo, hi, step)
    record.update(_parameters(op, tap))
    return record


def _concat(np, parts):
    return {name: np.concatenate([p[name] for p in parts]) for name in parts[0]} if parts else {}


def _sums(tap, reference_batches, quantised_batches):
    """tap_numpy moments per tensor, summed over batches."""
    sums = {}
    for ref, got in zip(reference_batches, quantised_batches):
        for name in ref:
            if name in got:
                sums[name] = tap.merge_moments(sums.get(name), tap.moments(ref[name], got[name]))
    return sums


def _argmax_and_highest(runs, output):
    """Per sample of `output` over the runs (batches): the index and the value of its largest element."""
    flat = [g[output].reshape(len(g[output]), -1) for g in runs]
    return [int(i) for f in flat for i in f.argmax(axis=1)], [float(v) for f in flat for v in f.max(axis=1)]


def _brute_force(executor, quantable, measured, float_runs, outputs, tap, ctx, batchable):
    """Per quantised op, the graph outputs with that op alone kept in float (every other op quantised)
    and with it alone quantised: moments against the float run, and the first output's argmax and
    highest value per sample (scripts/accuracy/brute_force.py ranks the ops on them: top-1, or the
    AUROC of a score, a detector's best anchor); those of the float and all-quantised runs beside them."""
    import torch

    if batchable and len(measured) > 1:
        # One forward per run: esp-ppq's executor costs about the same per call at batch 2 or 64.
        measured = [[torch.cat([b[i] for b in measured]) for i in range(len(measured[0]))]]
        float_runs = [_forward(executor, quantable, [], measured[0], outputs)]

    every = [_forward(executor, quantable, quantable, b, outputs) for b in measured]
    found = {"ops": []}
    for key, runs in (("float", float_runs), ("every", every)):
        found[key + "_argmax"], found[key + "_values"] = _argmax_and_highest(runs, outputs[0])
    for index, op in enumerate(quantable):
        entry = {"node": op.name, "op_type": op.type}
        for key, active in (("all_but", [o for o in quantable if o is not op]), ("alone", [op])):
            got = [_forward(executor, quantable, active, b, outputs) for b in measured]
            entry[key] = _sums(tap, [{n: f[n] for n in outputs} for f in float_runs], got)
            entry[key + "_argmax"], entry[key + "_values"] = _argmax_and_highest(got, outputs[0])
        found["ops"].append(entry)
        if index % 20 == 19:
            ctx.log(f"brute force: {index + 1} of {len(quantable)} ops")
    return found


def run(request, ctx):
    import numpy as np
    import torch
    from esp_ppq.executor import TorchExecutor
    from esp_ppq.IR import QuantableOperation

    tap = ctx.load_module(request["tap_helpers"], "edgedeploy_tap_numpy")
    build = ctx.load_module(BUILD_WORKER, "espdl_worker_build")
    torch.manual_seed(0)
    names = request["input_names"]
    # Inputs held whole (a recurrent state whose leading axis is no batch axis) go one sample per batch.
    whole = ctx.arrays.read_whole(request["calib"])
    batch = 1 if whole else int(request["batch_size"])
    calib = build._batches(torch, ctx.arrays.read_arrays(request["calib"], names), names, batch, whole, ctx.arrays.take_feed)
    # Quantised on every calibration sample; figures and statistics on at most tap.STAT_SAMPLES of them.
    stat_batches = calib[: max(1, -(-tap.STAT_SAMPLES // batch))]
    measured = build._batches(torch, ctx.arrays.read_arrays(request["eval"], names), names, batch, whole, ctx.arrays.take_feed) if request.get("eval") else stat_batches
    test_tensors = list(calib[0]) if whole else [t[:1] for t in calib[0]]
    ctx.log(f"quantising for {request['chip']} ({request['precision']}, {request['calib_method']} calibration) as the build did")
    graph = build.quantise_copy(build._EspPpq(), request, ctx.workdir, calib, test_tensors, _collate, request["calib_method"], request.get("int16_layers") or [])

    executor = TorchExecutor(graph=graph, device="cpu")
    ops = [op for op in graph.topological_sort() if op.outputs]
    quantable = [op for op in ops if isinstance(op, QuantableOperation)]
    tensors = [op.outputs[0].name for op in ops]
    ctx.log(f"tapping {len(tensors)} tensors, accumulated on {len(measured)} batches")
    float_runs = [_forward(executor, quantable, [], b, tensors) for b in measured]
    accumulated = _sums(tap, float_runs, [_forward(executor, quantable, quantable, b, tensors) for b in measured])
    isolated = {}
    steps = max(1, int(request.get("isolated_batches") or 4))
    ctx.log(f"isolated runs: {len(quantable)} ops alone quantised, on {min(steps, len(measured))} batches")
    for op in quantable:
        out = op.outputs[0].name
        got = [_forward(executor, quantable, [op], b, [out]) for b in measured[:steps]]
        isolated[op.name] = _sums(tap, [{out: f[out]} for f in float_runs[:steps]], got).get(out)
    float_calib = _concat(np, [_forward(executor, quantable, [], b, tensors) for b in stat_batches]) if request.get("eval") else _concat(np, float_runs)
    float_eval = _concat(np, float_runs) if request.get("eval") else None
    precision_of = lambda op: build._precision_of(getattr(op, "platform", None), None) if isinstance(op, QuantableOperation) else "float32"  # noqa: E731
    records = [_record(op, tap, accumulated, isolated, float_calib, float_eval, precision_of) for op in ops]
    outputs = request.get("brute_force_outputs") or []
    brute = _brute_force(executor, quantable, measured, float_runs, outputs, tap, ctx, int(request["batch_size"]) > 1) if outputs else None
    return {"records": records, "graph_outputs": list(graph.outputs.keys()), "brute_force": brute,
            "versions": {d: ctx.package_version(d) for d in ("esp-ppq", "torch")}}
