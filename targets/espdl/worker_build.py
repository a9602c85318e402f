"""ESP-DL conversion worker: quantise an ONNX model with esp-ppq and export the .espdl.

Runs inside the `espdl` toolchain environment (never imported by edgedeploy itself; it must not
import edgedeploy). The core sends a request (see `run`), this worker:

1. copies the model to a scratch file, because `espdl_quantize_onnx` overwrites its input with
   the simplified model;
2. quantises it for the chip (int8, int16, or int8 with some layers in int16), calibrating on
   the core's calibration arrays with the activation calibration asked for (esp-ppq's
   calib_algorithm; for `--espdl-calib-method auto`, KL and, if the graph outputs' error is over the
   core's threshold, minmax too, keeping the one with less error);
3. measures the quantisation error: graph-wise (error accumulated up to each layer's output) and
   layer-wise (error at the graph outputs when only that layer is quantised), both as esp-ppq's
   noise:signal power ratio, plus the error at the graph outputs;
4. for `--espdl-int16-layers auto`, moves the layers with the worst layer-wise error to int16, one at a
   time, until the graph-output error is under the threshold the core sends;
5. runs esp-ppq's quantised simulation on the evaluation inputs (for accuracy before/after);
6. exports the .espdl (with a test input and the expected outputs embedded) last, so the export
   cannot disturb the graph that the analysis and the simulation used.

Everything esp-ppq prints goes to the build log (the worker's stdout); progress lines go through
ctx.log.
"""

import os
import shutil
import time
import traceback

INFO_EXPORT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "worker_info_export.py")


def layerwise_error(graph, batches, collate):
    """esp-ppq's layer-wise error (layerwise_error_analyse, method 'snr'): for each computing op,
    the noise:signal power ratio at the graph outputs with only that op quantised.

    The same figures as esp-ppq's function (tests/test_espdl_layerwise.py compares them), with
    half its forward passes: esp-ppq runs the float graph again before every quantised run, once
    per op and batch, though the float outputs of a batch never change; here they are computed
    once per batch. On a model of a few hundred layers this analysis was most of the build.
    """
    from esp_ppq.executor import TorchExecutor
    from esp_ppq.IR import QuantableOperation
    from esp_ppq.quantization.analyse.util import MeasureRecorder

    outputs = list(graph.outputs)
    quantable = [op for op in graph.operations.values() if isinstance(op, QuantableOperation)]
    computing = [op for op in quantable if op.is_computing_op]
    if not computing:
        return {}
    executor = TorchExecutor(graph=graph, device="cpu")
    for op in quantable:
        op.dequantize()
    try:
        inputs = [collate(batch) for batch in batches]
        reference = [executor.forward(inputs=x, output_names=outputs) for x in inputs]
        results = {}
        for op in computing:
            recorder = MeasureRecorder(measurement="snr")
            op.restore_quantize_state()
            try:
                for x, float_outputs in zip(inputs, reference):
                    for real, quantised in zip(float_outputs, executor.forward(inputs=x, output_names=outputs)):
                        recorder.update(y_pred=quantised, y_real=real)
            finally:
                op.dequantize()
            results[op.name] = recorder.measure
    finally:
        for op in quantable:
            op.restore_quantize_state()
    return results


class _EspPpq:
    """The esp-ppq names this worker uses, imported once (importing esp_ppq takes seconds)."""

    def __init__(self):
        from esp_ppq.api import espdl_quantize_onnx, get_target_platform
        from esp_ppq.api.espdl_interface import generate_test_value
        from esp_ppq.api.setting import QuantizationSettingFactory
        from esp_ppq.core import TargetPlatform
        from esp_ppq.executor import TorchExecutor
        from esp_ppq.IR import QuantableOperation
        from esp_ppq.quantization.analyse import graphwise_error_analyse
        import esp_ppq.lib as PFL
        from esp_ppq.core import TensorQuantizationConfig

        # esp-ppq numbers its quantisation configs from the clock (a seed of int(time.time()) at
        # import) and model.json lists those numbers: a fixed seed makes two builds write the same file.
        if isinstance(getattr(TensorQuantizationConfig, "_hash_seed", None), int):
            TensorQuantizationConfig._hash_seed = 1

        self.espdl_quantize_onnx, self.get_target_platform = espdl_quantize_onnx, get_target_platform
        self.generate_test_value, self.QuantizationSettingFactory = generate_test_value, QuantizationSettingFactory
        self.TargetPlatform, self.TorchExecutor, self.QuantableOperation = TargetPlatform, TorchExecutor, QuantableOperation
        self.graphwise_error_analyse, self.PFL = graphwise_error_analyse, PFL


class _Conversion:
    """One conversion's settings, data and esp-ppq calls; `run` says in which order they happen."""

    def __init__(self, request, ctx, ppq, torch, np):
        self.request, self.ctx, self.ppq, self.torch, self.np = request, ctx, ppq, torch, np
        self.chip = request["chip"]
        self.precision = request["precision"]
        self.bits = 16 if self.precision == "int16" else 8
        self.input_names = request["input_names"]
        self.batch_size = int(request.get("batch_size") or 1)
        self.analysis_steps = int(request.get("analysis_steps", 4))
        self.eval_batch_size = int(request.get("eval_batch_size") or self.batch_size)
        self.requested_method = request.get("calib_method") or "kl"
        self.method = "kl" if self.requested_method == "auto" else self.requested_method
        self.timings, self.notes = {}, []
        self.calib = ctx.arrays.read_arrays(request["calib"], self.input_names)
        # Inputs held whole (a recurrent state whose leading axis is no batch axis): one sample per step.
        self.whole = ctx.arrays.read_whole(request["calib"])
        self.calib_batches = _batches(torch, self.calib, self.input_names, self.batch_size, self.whole, ctx.arrays.take_feed)
        if not self.calib_batches:
            raise ValueError("no calibration batch could be formed")
        test_inputs = ctx.arrays.take_feed(ctx.arrays.read_arrays(request["test_input"], self.input_names), 0, 1, ctx.arrays.read_whole(request["test_input"]))
        self.test_tensors = [torch.from_numpy(np.ascontiguousarray(test_inputs[n])) for n in self.input_names]

    def timed(self, key, started):
        self.timings[key] = round(time.monotonic() - started, 2)

    def collate(self, batch):
        torch = self.torch
        if isinstance(batch, (list, tuple)):
            return [b.to(torch.float32) if b.dtype != torch.bool else b for b in batch]
        return batch.to(torch.float32)

    def quantise(self, int16_layers, calib_method=None):
        """Quantise a fresh copy of the model; int16_layers: ppq op names dispatched to int16;
        calib_method: esp-ppq's calib_algorithm for the activations (default: the one chosen)."""
        return quantise_copy(self.ppq, self.request, self.ctx.workdir, self.calib_batches, self.test_tensors, self.collate, calib_method or self.method, int16_layers)

    def analysis_loader(self):
        single = len(self.input_names) == 1
        return [b[0] if single else b for b in self.calib_batches[: self.analysis_steps + 1]]

    def graphwise(self, graph):
        """esp-ppq's graph-wise error analysis on the analysis batches."""
        loader = self.analysis_loader()
        return self.ppq.graphwise_error_analyse(graph=graph, running_device="cpu", collate_fn=self.collate, dataloader=loader, steps=self.analysis_steps, verbose=False) or {}

    def output_error(self, graph):
        """Noise:signal power ratio at the graph outputs (worst output), quantised vs float, on calibration data."""
        executor = self.ppq.TorchExecutor(graph=graph, device="cpu")
        quantable = [op for op in graph.operations.values() if isinstance(op, self.ppq.QuantableOperation)]
        noise = {}
        signal = {}
        for batch in self.analysis_loader():
            for op in quantable:
                op.dequantize()
            ref = executor.forward(inputs=self.collate(batch))
            for op in quantable:
                op.restore_quantize_state()
            got = executor.forward(inputs=self.collate(batch))
            for i, (r, g) in enumerate(zip(ref, got)):
                r64 = r.detach().double()
                g64 = g.detach().double()
                noise[i] = noise.get(i, 0.0) + float(((g64 - r64) ** 2).sum())
                signal[i] = signal.get(i, 0.0) + float((r64**2).sum())
        ratios = [noise[i] / signal[i] if signal[i] > 0 else (0.0 if noise[i] == 0 else float("inf")) for i in noise]
        return max(ratios) if ratios else 0.0

    def quantise_first(self):
        """The first quantisation; once more one sample per step when batched calibration fails."""
        t0 = time.monotonic()
        try:
            graph = self.quantise([])
        except Exception as exc:  # noqa: BLE001 - retried once; a second failure is raised as it is
            if self.batch_size == 1:
                raise
            # esp-ppq's simplifier folds the model's shape computations at the deployment shape
            # (batch 1): a Resize whose sizes or a Reshape whose target come from Shape ops then
            # cannot run batched in its executor (measured: lraspp_mobilenet_v3_large's Resize
            # asserts), although ONNX Runtime runs the model batched. One sample per step works.
            message = (str(exc).strip().splitlines() or [""])[-1]
            self.ctx.log(f"batched calibration failed ({type(exc).__name__}: {message}); calibrating again one sample per step")
            self.notes.append(
                f"calibration in batches of {self.batch_size} failed in esp-ppq ({type(exc).__name__}: {message}): its simplifier "
                "folds the model's shape computations for batch 1, so calibration and simulation ran one sample per step"
            )
            self.batch_size, self.eval_batch_size = 1, 1
            self.calib_batches = _batches(self.torch, self.calib, self.input_names, 1, self.whole, self.ctx.arrays.take_feed)
            graph = self.quantise([])
        self.timed("quantise_s", t0)
        return graph

    def choose_calibration(self, graph):
        """--espdl-calib-method auto: KL (esp-ppq's default) unless the outputs' error is over the
        threshold; then minmax too, keeping the one with less output error on the calibration data."""
        calibration = {"requested": self.requested_method, "method": self.method, "tried": []}
        if self.requested_method != "auto":
            return graph, calibration
        kl_error = self.output_error(graph)
        calibration["tried"].append({"method": "kl", "output_error": kl_error})
        if kl_error > float(self.request["calib_auto_threshold"]):
            self.ctx.log(f"calibration: kl leaves an output noise:signal ratio of {kl_error:.3g}; trying minmax")
            t0 = time.monotonic()
            candidate = self.quantise([], "minmax")
            minmax_error = self.output_error(candidate)
            calibration["tried"].append({"method": "minmax", "output_error": minmax_error})
            self.timed("quantise_minmax_s", t0)
            if minmax_error < kl_error:
                graph, self.method = candidate, "minmax"
                calibration["method"] = self.method
        return graph, calibration

    def named_int16(self, graph, requested):
        """(graph with the user's --espdl-int16-layers in int16, the int16 op names), or (None, the user's error)."""
        op_names = [op.name for op in graph.operations.values()]
        missing = [n for n in requested if n not in op_names]
        if missing:
            return None, (
                f"--espdl-int16-layers names {', '.join(repr(m) for m in missing[:5])}, which esp-ppq's graph does not have "
                f"(folded or removed by the simplifier); layers it has: {', '.join(_computing_names(graph, self.ppq.QuantableOperation)[:8])}"
            )
        int16_layers = _with_activations(graph, requested)
        t0 = time.monotonic()
        graph = self.quantise(int16_layers)
        self.timed("quantise_mixed_s", t0)
        return graph, int16_layers

    def auto_int16(self, graph, base_error):
        """--espdl-int16-layers auto: move the layer adding the most error (and its producers) to
        int16, one at a time, until the outputs' error is under the threshold or the steps run out.
        Returns (graph, int16 layers, the steps, the last graph-wise analysis or None)."""
        QuantableOperation = self.ppq.QuantableOperation
        threshold, max_steps = float(self.request["auto_threshold"]), int(self.request["auto_max_steps"])
        current_error, int16_layers, graphwise = base_error, [], None
        auto_steps = [{"int16_layers": [], "output_error": current_error}]
        t0 = time.monotonic()
        while current_error > threshold and len(auto_steps) <= max_steps:
            graphwise = self.graphwise(graph)
            added = _error_added(graph, graphwise, QuantableOperation)
            candidates = [(err, name) for name, err in added.items() if name not in int16_layers]
            if not candidates:
                break
            worst_added, worst = max(candidates)
            candidate_layers = _move_to_int16(graph, int16_layers, worst, QuantableOperation)
            self.ctx.log(f"auto int16: {worst} adds the most error ({worst_added:.3g}); trying {len(candidate_layers)} ops in int16")
            candidate = self.quantise(candidate_layers)
            err = self.output_error(candidate)
            auto_steps.append({"worst_layer": worst, "error_added": worst_added, "int16_layers": list(candidate_layers), "output_error": err})
            graph, current_error, int16_layers, graphwise = candidate, err, candidate_layers, None
        self.timed("auto_int16_s", t0)
        return graph, int16_layers, auto_steps, graphwise

    def op_table(self, graph):
        """Every op of the quantised graph: its type, platform and precision."""
        ops = []
        for op in graph.operations.values():
            platform = getattr(op, "platform", None)
            ops.append(
                {
                    "name": op.name,
                    "op_type": op.type,
                    "platform": platform.name if platform is not None else None,
                    "quantised": isinstance(op, self.ppq.QuantableOperation),
                    "precision": _precision_of(platform, self.ppq.TargetPlatform),
                    "computing": bool(getattr(op, "is_computing_op", False)),
                }
            )
        return ops

    def simulate(self, graph):
        """esp-ppq's quantised simulation on the evaluation inputs (the "after" of accuracy before/after); the outputs' file."""
        np, torch, ctx, names = self.np, self.torch, self.ctx, self.input_names
        ctx.log("running esp-ppq's quantised simulation on the evaluation inputs")
        t0 = time.monotonic()
        data = ctx.arrays.read_arrays(self.request["eval"], names)
        whole = ctx.arrays.read_whole(self.request["eval"])
        executor = self.ppq.TorchExecutor(graph=graph, device="cpu")
        outputs = {name: [] for name in graph.outputs}
        count = len(data[names[0]])
        step = 1 if whole else max(1, self.eval_batch_size)
        for start in range(0, count, step):
            taken = ctx.arrays.take_feed(data, start, min(start + step, count), whole)
            feed = [torch.from_numpy(np.ascontiguousarray(taken[n])).to(torch.float32) for n in names]
            got = executor.forward(inputs=feed[0] if len(feed) == 1 else feed)
            for name, value in zip(graph.outputs, got):
                outputs[name].append(value.detach().cpu().numpy().astype(np.float32))
        eval_path = os.path.join(ctx.workdir, "quantised_outputs.npz")
        ctx.arrays.write_arrays(eval_path, {name: np.concatenate(parts, axis=0) for name, parts in outputs.items()})
        self.timed("simulate_s", t0)
        return eval_path

    def export(self, graph, out_dir):
        """The .espdl, with the test input and the simulation's expected outputs embedded: (path, platform, expected outputs)."""
        ppq, ctx = self.ppq, self.ctx
        ctx.log("exporting the .espdl with the test input and expected outputs embedded")
        t0 = time.monotonic()
        espdl_path = os.path.join(out_dir, self.request.get("espdl_name", "model.espdl"))
        tests = self.test_tensors
        values_for_test = ppq.generate_test_value(graph, "cpu", tests if len(tests) > 1 else tests[0])
        platform = ppq.get_target_platform(self.chip, self.bits)
        # model.info without the weights' values: printing them was most of a real model's build (worker_info_export.py).
        with ctx.load_module(INFO_EXPORT, "espdl_info_export").info_without_weight_values():
            ppq.PFL.Exporter(platform=platform).export(
                file_path=espdl_path,
                graph=graph,
                values_for_test=values_for_test,
                export_config=True,
                metadata_props={str(k): str(v) for k, v in (self.request.get("metadata") or {}).items()},
            )
        self.timed("export_s", t0)
        expected = {name: value.detach().cpu().numpy().astype("float32").tolist() for name, value in values_for_test["outputs"].items()}
        return espdl_path, platform, expected


def run(request, ctx):
    """The conversion, in the order of the module docstring; esp-ppq's results for the core."""
    import numpy as np
    import torch

    started = time.monotonic()
    ctx.log("importing esp_ppq")
    ppq = _EspPpq()
    import_s = round(time.monotonic() - started, 2)
    torch.manual_seed(0)
    out_dir = request["out_dir"]
    os.makedirs(out_dir, exist_ok=True)
    job = _Conversion(request, ctx, ppq, torch, np)
    job.timings["import_s"] = import_s
    requested = request.get("int16_layers")
    ctx.log(f"quantising for {job.chip} ({job.precision}{', mixed int16' if requested else ''}), calibration {len(job.calib_batches)} batches of {job.batch_size}")
    graph = job.quantise_first()
    graph, calibration = job.choose_calibration(graph)
    int16_layers, auto_steps = [], []
    if isinstance(requested, list):
        graph, int16_layers = job.named_int16(graph, requested)
        if graph is None:
            return {"user_error": int16_layers}
    ctx.log("measuring layer-wise and graph-wise quantisation error")
    t0 = time.monotonic()
    layerwise = layerwise_error(graph, job.analysis_loader(), job.collate)
    job.timed("layerwise_s", t0)
    base_error = job.output_error(graph)
    graphwise = None
    if requested == "auto" and job.precision == "int8":
        graph, int16_layers, auto_steps, graphwise = job.auto_int16(graph, base_error)
        if int16_layers:
            layerwise = layerwise_error(graph, job.analysis_loader(), job.collate)
    t0 = time.monotonic()
    if graphwise is None:
        graphwise = job.graphwise(graph)
    # The graph changed since base_error only if auto moved layers to int16.
    final_error = auto_steps[-1]["output_error"] if len(auto_steps) > 1 else base_error
    job.timed("graphwise_s", t0)
    ops = job.op_table(graph)
    eval_result = job.simulate(graph) if request.get("eval") else None
    # Export last, so that it cannot disturb the graph the analysis and the simulation used.
    espdl_path, platform, expected = job.export(graph, out_dir)
    base = os.path.splitext(espdl_path)[0]
    job.timings["total_s"] = round(time.monotonic() - started, 2)
    return {
        "espdl": espdl_path,
        "info": base + ".info" if os.path.exists(base + ".info") else None,
        "config": base + ".json" if os.path.exists(base + ".json") else None,
        "platform": platform.name,
        "bits": job.bits,
        "graph_inputs": list(graph.inputs.keys()),
        "graph_outputs": list(graph.outputs.keys()),
        "ops": ops,
        "graphwise": {k: _num(v) for k, v in graphwise.items()},
        "layerwise": {k: _num(v) for k, v in layerwise.items()},
        "output_error": final_error,
        "output_error_int8_baseline": base_error if requested == "auto" else None,
        "int16_layers": list(int16_layers),
        "auto_steps": auto_steps,
        "test_expected_outputs": expected,
        "eval_outputs": eval_result,
        "timings_s": job.timings,
        "calibration_batch": job.batch_size,
        "calibration_steps": len(job.calib_batches),
        "eval_batch_size": job.eval_batch_size,
        "notes": job.notes,
        "calibration": calibration,
        "versions": {d: ctx.package_version(d) for d in ("esp-ppq", "torch", "onnx", "onnxsim", "numpy")},
    }


def quantise_copy(ppq, request, workdir, batches, test_tensors, collate, calib_method, int16_layers):
    """esp-ppq's quantised graph of a fresh copy of request["model"] (esp-ppq overwrites its input
    ONNX) for request's chip and precision: `calib_method` is esp-ppq's calib_algorithm for the
    activations, `int16_layers` ppq op names dispatched to int16. The build's settings, in one
    place: worker_diagnose.py requantises the artifact's model through it, as the build did."""
    bits = 16 if request["precision"] == "int16" else 8
    scratch = os.path.join(workdir, "scratch.onnx")
    shutil.copyfile(request["model"], scratch)
    setting = ppq.QuantizationSettingFactory.espdl_setting(num_of_bits=bits)
    setting.quantize_activation_setting.calib_algorithm = calib_method
    # esp-ppq's own passes, off by default (--espdl-equalization, --espdl-bias-correction).
    setting.equalization = bool(request.get("equalization"))
    setting.bias_correct = bool(request.get("bias_correction"))
    for name in int16_layers:
        setting.dispatching_table.append(name, ppq.get_target_platform(request["chip"], 16))
        # esp-ppq's own int16 setting calibrates with minmax; the int8 default (KL) clips
        # outliers, an error that int16 alone would not remove.
        setting.quantize_activation_setting.calib_algorithm_per_layer[name] = "minmax"
        setting.quantize_parameter_setting.calib_algorithm_per_layer[name] = "minmax"
    single = len(request["input_names"]) == 1
    input_shapes = [list(t.shape) for t in test_tensors]
    return ppq.espdl_quantize_onnx(
        onnx_import_file=scratch,
        espdl_export_file=os.path.join(workdir, "unused.espdl"),
        calib_dataloader=[b[0] if single else b for b in batches],
        calib_steps=len(batches),
        input_shape=input_shapes[0] if single else input_shapes,
        inputs=test_tensors,
        target=request["chip"],
        num_of_bits=bits,
        collate_fn=collate,
        setting=setting,
        device="cpu",
        error_report=False,
        skip_export=True,
    )


def _batches(torch, arrays, names, batch_size, whole=(), take_feed=None):
    """Consecutive batches (lists of tensors, one per input); the last short batch is dropped.
    With inputs held `whole`, one sample per batch, cut by `take_feed` (ctx.arrays.take_feed)."""
    count = len(arrays[names[0]])
    size = 1 if whole else max(1, min(batch_size, count))
    batches = []
    for start in range(0, count - size + 1, size):
        feed = take_feed(arrays, start, start + size, whole) if whole else {n: arrays[n][start : start + size] for n in names}
        batches.append([torch.from_numpy(feed[n].copy()) for n in names])
    return batches


def _num(value):
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _computing_names(graph, quantable_cls):
    return [op.name for op in graph.operations.values() if isinstance(op, quantable_cls) and op.is_computing_op]


def _upstream_computing(op, quantable_cls):
    """The computing ops whose outputs reach `op`'s activation inputs through non-computing ops only, and those ops."""
    producers, between = [], []
    stack = [var.source_op for var in op.inputs if not var.is_parameter and var.source_op is not None]
    seen = set()
    while stack:
        cur = stack.pop()
        if cur.name in seen:
            continue
        seen.add(cur.name)
        if getattr(cur, "is_computing_op", False):
            producers.append(cur)
        else:
            between.append(cur)
            stack.extend(var.source_op for var in cur.inputs if not var.is_parameter and var.source_op is not None)
    return producers, between


def _error_added(graph, graphwise, quantable_cls):
    """Per computing layer: graph-wise error at its output minus the worst graph-wise error at the layers feeding it.

    This is the error a layer adds in the fully quantised graph: its weights, its output and the
    quantisation of the activation it reads. (esp-ppq's layer-wise analysis quantises one layer
    at a time and misses an activation whose producer and consumer are both needed to see it.)
    """
    added = {}
    for name, err in graphwise.items():
        op = graph.operations.get(name)
        if op is None or err is None:
            continue
        producers, _ = _upstream_computing(op, quantable_cls)
        before = max((graphwise.get(p.name) or 0.0 for p in producers), default=0.0)
        added[name] = max(0.0, float(err) - float(before))
    return added


def _move_to_int16(graph, already, name, quantable_cls):
    """`already` plus layer `name`, the layers producing its input and the non-computing ops between them, each with its output chain."""
    op = graph.operations[name]
    producers, between = _upstream_computing(op, quantable_cls)
    names = list(already) + [name] + [p.name for p in producers] + [b.name for b in between if isinstance(b, quantable_cls)]
    return _with_activations(graph, names)


def _with_activations(graph, names):
    """The layers plus the chain of non-computing ops (activation, pooling, reshape) that follows each one.

    A layer moved to int16 alone would hand an int16 output to an int8 ReLU or pooling, which
    requantises it to int8 at once; moving the chain up to the next computing layer keeps the
    higher precision until the next layer reads it (esp-dl's mixed-precision example moves Conv
    and its Clip together for the same reason). Only single-consumer chains are followed.
    """
    if graph is None:
        return list(names)
    chosen = list(dict.fromkeys(names))
    for name in list(chosen):
        op = graph.operations.get(name)
        while op is not None and len(op.outputs) == 1:
            consumers = op.outputs[0].dest_ops
            if len(consumers) != 1:
                break
            nxt = consumers[0]
            if getattr(nxt, "is_computing_op", False) or nxt.name in chosen:
                break
            chosen.append(nxt.name)
            op = nxt
    return chosen


def _precision_of(platform, TargetPlatform):
    if platform is None:
        return "float32"
    name = platform.name
    if name == "FP32" or not name.startswith("ESPDL"):
        return "float32"
    if "W8A16" in name:
        return "w8a16"
    if "INT16" in name:
        return "int16"
    if "INT8" in name:
        return "int8"
    return name.lower()


def failure_context(exc):
    """The esp-ppq operation a failure happened on, and where in esp-ppq (worker_main's hook).

    esp-ppq's passes and executor hold the operation they work on in a local (`op`,
    `operation`): the innermost one on the traceback is the node the user must look at. Its
    name is the ONNX node's display name (the core hands esp-ppq a copy named so).
    """
    try:
        from esp_ppq.IR import Operation
    except Exception:  # noqa: BLE001 - esp-ppq itself may be what failed to import
        return {}
    frames = [frame for frame, _line in traceback.walk_tb(exc.__traceback__)]
    found = {}
    for frame in reversed(frames):
        for name in ("op", "operation"):
            value = frame.f_locals.get(name)
            if isinstance(value, Operation):
                found.update(node=value.name, op_type=value.type)
                break
        if found:
            break
    inner = next((f for f in reversed(frames) if "esp_ppq" in f.f_code.co_filename.replace("\\", "/").split("/")), None)
    if inner is not None:
        parts = inner.f_code.co_filename.replace("\\", "/").split("/")
        found["where"] = f"esp-ppq's {inner.f_code.co_name}, {'/'.join(parts[parts.index('esp_ppq') + 1:])}:{inner.f_lineno}"
    return found


if __name__ == "__main__":  # pragma: no cover - run only through worker_main
    raise SystemExit("run through edgedeploy's worker_main.py")
