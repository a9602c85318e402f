"""eIQ accuracy taps: the artifact's float32 and full-int8 TFLite models, every intermediate tensor (`edgedeploy diagnose`).

Runs in the eiq environment (never imported by edgedeploy; it must not import edgedeploy). Both
models come from the same onnx2tf SavedModel, so a tensor of the int8 model and the float32
model's tensor of the same name (or of the same fused layers, constants aside) hold the same value: the TFLite interpreter keeps every
intermediate tensor (experimental_preserve_all_tensors, builtin kernels: XNNPACK would hide
them), the int8 ones are dequantised with their own scale and zero point, and per tensor this
returns the sums of float vs int8 over the samples (tap_numpy.moments, accumulated: the whole
int8 model up to it) and the float values' statistics against the int8 tensor's range. The
statistics need the values themselves, held until the end: only as many samples as the request's
stats_budget_bytes holds are kept for them (the sums run over every sample). TFLite
has no run with one operator alone quantised, so there is no isolated figure. The operators'
list (for the core's mapping to ONNX nodes, targets/eiq/vela.py trace_ops) comes from worker.py.
"""

import os

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "worker.py")


def _interpreter(path):
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    interpreter = Interpreter(model_path=path, num_threads=1, experimental_preserve_all_tensors=True, experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
    interpreter.allocate_tensors()
    return interpreter


def _feed(np, interpreter, base, request, data, index):
    """Set one sample (ONNX layout) on the interpreter's inputs, transposed and quantised as they need."""
    details = interpreter.get_input_details()
    for position, spec in enumerate(request["onnx_inputs"]):
        layout = request["input_layouts"][spec["name"]]
        # An input held whole (a recurrent state, load_arrays' Arrays.whole): its one sample.
        arr = data.feed(index, index + 1)[spec["name"]] if data.whole else data[spec["name"]][index : index + 1]
        if layout["perm"]:
            arr = arr.transpose(layout["perm"])
        names = [d["name"] for d in details]
        key = base.tflite_key(spec["name"], layout["key"], names, position, len(request["onnx_inputs"]))
        detail = details[names.index(key)] if key in names else details[position]
        scale, zero = detail["quantization"]
        if np.issubdtype(detail["dtype"], np.integer) and scale:
            info = np.iinfo(detail["dtype"])
            arr = np.clip(np.round(arr / scale + zero), info.min, info.max)
        interpreter.set_tensor(detail["index"], arr.astype(detail["dtype"]))


def _tensors(np, interpreter, names):
    """Every named tensor's value after invoke, dequantised when it is an integer tensor with a scale."""
    values = {}
    for detail in interpreter.get_tensor_details():
        if detail["name"] not in names:
            continue
        try:
            value = np.asarray(interpreter.get_tensor(detail["index"]))
        except ValueError:  # a tensor the interpreter did not keep
            continue
        scale, zero = detail["quantization"]
        if np.issubdtype(value.dtype, np.integer) and scale:
            value = (value.astype(np.float64) - zero) * scale
        values[detail["name"]] = value.astype(np.float64)
    return values


def _layer_key(name):
    """A fused tensor's name without the constants' parts: the two converters name the same fused
    tensor `model/conv;model/add;Const_143` and `model/conv;model/add;Const_13`, or in another order.
    The float converter may name a fused operand after its op (`model/add/Add/y` beside
    `model/add/Add`, where the int8 one writes `Const_281`): a part under another part is dropped
    too (PP-OCRv4's fused depthwise Conv, Mul and Add had no counterpart without it)."""
    layers = {p for p in name.split(";") if p.startswith("model")}
    parts = frozenset(p for p in layers if not any(p.startswith(q + "/") for q in layers))
    return parts or name


def _counterparts(float_model, int8_model):
    """int8 tensor name -> the float32 model's tensor holding the same value: the same name, else
    the same layers (constants aside), else, for the model's outputs, the same position."""
    float_names = [d["name"] for d in float_model.get_tensor_details()]
    by_key = {}
    for name in float_names:
        by_key.setdefault(_layer_key(name), []).append(name)
    found = {}
    for detail in int8_model.get_tensor_details():
        name = detail["name"]
        if name in float_names:
            found[name] = name
        elif len(by_key.get(_layer_key(name), [])) == 1:
            found[name] = by_key[_layer_key(name)][0]
    for mine, theirs in zip(int8_model.get_output_details(), float_model.get_output_details()):
        found.setdefault(mine["name"], theirs["name"])
    return found


def _ranges(np, interpreter):
    """name -> (lo, hi, step) of every int8/int16 tensor with one scale."""
    found = {}
    for detail in interpreter.get_tensor_details():
        scale, zero = detail["quantization"]
        if scale and np.issubdtype(detail["dtype"], np.integer) and detail["dtype"] in (np.int8, np.int16, np.uint8):
            info = np.iinfo(detail["dtype"])
            found[detail["name"]] = ((info.min - zero) * scale, (info.max - zero) * scale, scale)
    return found


class _Held:
    """The float values one phase keeps for the statistics, within its share of the memory budget:
    whole samples, the first always (the moments go on over every sample, held or not)."""

    def __init__(self, budget):
        self.budget, self.bytes, self.last, self.samples = budget, 0, 0, 0

    def room(self):
        return self.samples == 0 or self.bytes + self.last <= self.budget

    def add(self, store, name, value, np):
        kept = value.reshape(-1).astype(np.float32)  # the float model's own precision: half of float64
        store.setdefault(name, []).append(kept)
        return kept.nbytes

    def done(self, sample_bytes):
        self.bytes, self.last, self.samples = self.bytes + sample_bytes, sample_bytes, self.samples + 1


def run(request, ctx):
    import numpy as np

    tap = ctx.load_module(request["tap_helpers"], "edgedeploy_tap_numpy")
    base = ctx.load_module(WORKER, "eiq_worker")
    ops = base.tflite_ops(request["int8_tflite"])
    wanted = {t["name"] for op in ops["ops"] for t in op["outputs"]}
    data = base.load_arrays(ctx, request["data"])
    calib = base.load_arrays(ctx, request["calib"])
    float_model, int8_model = _interpreter(request["float32_tflite"]), _interpreter(request["int8_tflite"])
    ranges = _ranges(np, int8_model)
    twin = {k: v for k, v in _counterparts(float_model, int8_model).items() if k in wanted}
    sums, float_values, calib_values = {}, {}, {}
    # Half the budget each for the evaluation and the calibration samples' values.
    held_eval, held_calib = _Held(request["stats_budget_bytes"] // 2), _Held(request["stats_budget_bytes"] // 2)
    count = min(len(a) for a in data.values())
    ctx.log("tapping %d int8 tensors on %d samples" % (len(wanted), count))
    for index in range(count):
        for model in (float_model, int8_model):
            _feed(np, model, base, request, data, index)
            model.invoke()
        ref, got = _tensors(np, float_model, set(twin.values())), _tensors(np, int8_model, wanted)
        ref = {mine: ref[theirs] for mine, theirs in twin.items() if theirs in ref}
        keep, sample_bytes = held_eval.room(), 0
        for name, value in got.items():
            if name in ref and ref[name].size == value.size:
                sums[name] = tap.merge_moments(sums.get(name), tap.moments(ref[name], value))
                sample_bytes += held_eval.add(float_values, name, ref[name], np) if keep else 0
        if keep:
            held_eval.done(sample_bytes)
    available = min(len(a) for a in calib.values())
    for index in range(available):
        if not held_calib.room():
            break
        _feed(np, float_model, base, request, calib, index)
        float_model.invoke()
        values = _tensors(np, float_model, set(twin.values()))
        held_calib.done(sum(held_calib.add(calib_values, mine, values[theirs], np) for mine, theirs in twin.items() if theirs in values))
    tensors = {}
    for name in sums:
        lo_hi_step = ranges.get(name)
        stats_on = calib_values.get(name) or float_values[name]
        tensors[name] = {
            "accumulated": sums[name],
            "stats": tap.tensor_stats(np.concatenate(stats_on), *lo_hi_step) if lo_hi_step else tap.tensor_stats(np.concatenate(stats_on)),
            "stats_eval": tap.tensor_stats(np.concatenate(float_values[name]), *lo_hi_step) if lo_hi_step and request.get("has_eval") else None,
        }
    samples = {"evaluation": count, "evaluation_held": held_eval.samples, "calibration_available": available, "calibration_held": held_calib.samples,
               "bytes_per_sample": held_eval.last or held_calib.last}
    return {"ops": ops, "tensors": tensors, "versions": base.versions(), "samples": samples}
