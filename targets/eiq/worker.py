"""The eiq toolchain worker: ONNX -> TFLite (onnx2tf), full-int8 quantisation, Vela, TFLite runs.

Runs inside the `eiq` environment (onnx2tf 1.29.24, tensorflow-cpu 2.19, ethos-u-vela 5.2.0,
ai-edge-litert), started by edgedeploy's worker protocol (toolkit/toolchains/worker_main.py).
It must not import edgedeploy. It returns raw facts (operator lists, tensor names, Vela's own
printout and summary CSV); the parsing into placements happens on the core side, in
edgedeploy.targets.eiq.vela, which is pure Python and tested on captured outputs.

Actions (request["action"]):
  build     convert one model to float32 and full-int8 TFLite, run Vela when asked
  evaluate  run both TFLite models on evaluation inputs with the CPU interpreter (XNNPACK, and
            the builtin kernels alone when XNNPACK refuses the model)
  verdicts  convert many models and run Vela on each (audit --confirm and sweeps): one process,
            so TensorFlow's start-up is paid once; one JSON line per model in results.jsonl

The traps of onnx2tf that this worker handles (see shared/toolchains.md):
  * onnx2tf overwrites its input file (onnxsim and its op-name generator write back): it gets a copy.
  * for 4-D, 3-channel inputs it downloads calibration_image_sample_data_20x128x128x3_float32.npy
    into the working directory, even without quantisation: a local file of that name stops it.
  * it shells out to the `onnxsim` executable: the core puts this environment's bin/ on PATH.
  * it lays 3-D..5-D inputs out channels-last (NCHW -> NHWC): calibration and evaluation data are
    transposed to the layout of the converted model's signature, and outputs transposed back.
  * on an error it calls sys.exit(1): SystemExit is caught per model.
"""

import contextlib
import importlib
import json
import os
import pkgutil
import re
import shutil
import signal
import time
import traceback

import numpy as np

# onnx2tf prints coloured progress; the log stays readable without the escape codes.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "-1")

ONNX2TF_SAMPLE_FILE = "calibration_image_sample_data_20x128x128x3_float32.npy"
# The number of calibration samples the converter sees at most (TFLite's own default is 100).
MAX_CALIBRATION_SAMPLES = 200
# Prefix of the node names given to onnx2tf, so that its layers can be traced back per node.
NODE_TOKEN = "edn"

_STATE = {}  # per-process cache: the onnx2tf hook, installed once (the worker is one process)

# onnx2tf operators whose conversion depends on whether onnx2tf itself writes the full-integer
# model (its `output_integer_quantized_tflite` flag, -oiqt). In onnx2tf 1.29.24 only MaxPool: the
# explicit pad layer it adds for a padding TensorFlow's SAME cannot express is filled with the
# dtype's minimum in float, but with 0.0 for an int8 model (onnx2tf issue 444). The minimum
# (-3.4e38) enters the int8 calibration range: the quantiser gives the pooled tensor a scale of
# about 1e36 (measured on resnet18: every activation of the first block quantises to one value)
# and Vela 5.2.0 leaves the neighbouring operators on the CPU ("Quantization scale of any tensor
# must be positive"). edgedeploy quantises in a step of its own (quantize_full_int8), so it sets
# the flag for these operators itself when it builds int8, as `onnx2tf -oiqt` does.
INT8_AWARE_OPS = frozenset({"MaxPool"})


# --------------------------------------------------------------------------------------------
# Entry point


def run(request, ctx):
    action = request.get("action")
    if action == "build":
        return build(request, ctx)
    if action == "evaluate":
        return evaluate(request, ctx)
    if action == "verdicts":
        return verdicts(request, ctx)
    raise ValueError(f"unknown action {action!r}")


# --------------------------------------------------------------------------------------------
# Tracing onnx2tf layers back to ONNX nodes


class LayerRecorder:
    """Records, for every ONNX node onnx2tf converts, the Keras layers it created.

    onnx2tf builds a Keras functional model; TFLite tensor names are `model/<layer>/<op>`
    (joined with ';' when the converter fuses ops). Each onnx2tf.ops.<Op>.make_node is wrapped:
    after it ran, the Keras history is walked back from the node's outputs to its inputs, and
    every layer met on the way belongs to this node (a layer already claimed by an earlier node
    stops the walk). The node names onnx2tf sees are tokens (edn<index>) set by the core.
    """

    def __init__(self):
        self.layers = {}
        self.claimed = set()

    def reset(self):
        self.layers = {}
        self.claimed = set()

    def record(self, graph_node, tf_layers_dict):
        stop = set()
        for tensor in graph_node.inputs:
            tf_node = tf_layers_dict.get(getattr(tensor, "name", None), {}).get("tf_node")
            if tf_node is not None:
                stop.add(id(tf_node))
        todo = []
        for tensor in graph_node.outputs:
            tf_node = tf_layers_dict.get(getattr(tensor, "name", None), {}).get("tf_node")
            if tf_node is not None:
                todo.append(tf_node)
        found = []
        seen = set()
        while todo:
            t = todo.pop()
            if id(t) in stop or id(t) in seen:
                continue
            seen.add(id(t))
            history = getattr(t, "_keras_history", None)
            if history is None:
                continue
            layer = history.layer
            if layer.name in self.claimed or type(layer).__name__ == "InputLayer":
                continue
            self.claimed.add(layer.name)
            found.append(layer.name)
            try:
                todo.extend(layer._inbound_nodes[history.node_index].keras_inputs)
            except (AttributeError, IndexError):
                pass
        self.layers.setdefault(graph_node.name, []).extend(found)


def install_hook():
    if "recorder" in _STATE:
        return _STATE["recorder"]
    import onnx2tf.ops

    recorder = LayerRecorder()
    for info in pkgutil.iter_modules(onnx2tf.ops.__path__):
        module = importlib.import_module(f"onnx2tf.ops.{info.name}")
        original = getattr(module, "make_node", None)
        if original is None:
            continue

        def wrapped(*args, _original=original, _op=info.name, **kwargs):
            if _op in INT8_AWARE_OPS and _STATE.get("int8"):
                # onnx2tf's own full-integer output (-oiqt) converts these ops in an int8-aware
                # form; edgedeploy quantises separately, so it asks for the same form here.
                kwargs["output_integer_quantized_tflite"] = True
            result = _original(*args, **kwargs)
            graph_node = kwargs.get("graph_node")
            tf_layers_dict = kwargs.get("tf_layers_dict")
            if graph_node is not None and tf_layers_dict is not None:
                try:
                    recorder.record(graph_node, tf_layers_dict)
                except Exception:  # noqa: BLE001 - tracing must never break a conversion
                    traceback.print_exc()
            return result

        module.make_node = wrapped
    # onnx2tf reports its reasons through its logging helpers before sys.exit(1): keep the last.
    import onnx2tf.onnx2tf as main_module

    original_error = main_module.error

    def error(*args, **kwargs):
        _STATE["last_error"] = " ".join(str(a) for a in args)
        # onnx2tf names the node it failed on in one of its error lines: `onnx_op_name: edn12`.
        if _STATE["last_error"].strip().startswith("onnx_op_name:"):
            _STATE["failed_node"] = _STATE["last_error"].split(":", 1)[1].strip()
        return original_error(*args, **kwargs)

    main_module.error = error
    _STATE["recorder"] = recorder
    return recorder


# --------------------------------------------------------------------------------------------
# Reading TFLite flatbuffers (with Vela's bundled schema: no kernels are resolved, so models with
# Flex or ethos-u custom operators read as well)


def tflite_ops(path):
    """Subgraph 0 of a .tflite: operators (type, input/output tensors), inputs, outputs, signatures."""
    from ethosu.vela.tflite.BuiltinOperator import BuiltinOperator
    from ethosu.vela.tflite.Model import Model
    from ethosu.vela.tflite.TensorType import TensorType

    builtin_names = {v: k for k, v in vars(BuiltinOperator).items() if not k.startswith("_")}
    type_names = {v: k for k, v in vars(TensorType).items() if not k.startswith("_")}
    with open(path, "rb") as fh:
        buf = fh.read()
    model = Model.GetRootAsModel(buf, 0)
    codes = []
    for i in range(model.OperatorCodesLength()):
        oc = model.OperatorCodes(i)
        code = max(oc.BuiltinCode(), oc.DeprecatedBuiltinCode())
        name = builtin_names.get(code, f"BUILTIN_{code}")
        if name == "CUSTOM":
            name = "CUSTOM:" + (oc.CustomCode() or b"").decode("utf-8", "replace")
        codes.append(name)
    sg = model.Subgraphs(0)

    def tensor(i):
        t = sg.Tensors(int(i))
        q = t.Quantization()
        scale = None
        zero_point = None
        if q is not None and q.ScaleLength() == 1:
            scale = float(q.Scale(0))
            zero_point = int(q.ZeroPoint(0)) if q.ZeroPointLength() else 0
        return {
            "name": (t.Name() or b"").decode("utf-8", "replace"),
            "dtype": type_names.get(t.Type(), str(t.Type())).lower(),
            "shape": [int(d) for d in t.ShapeAsNumpy()] if t.ShapeLength() else [],
            "constant": bool(t.Buffer() and model.Buffers(t.Buffer()).DataLength()),
            "scale": scale,
            "zero_point": zero_point,
        }

    ops = []
    for i in range(sg.OperatorsLength()):
        op = sg.Operators(i)
        ins = [tensor(j) for j in (op.InputsAsNumpy() if op.InputsLength() else []) if j >= 0]
        outs = [tensor(j) for j in (op.OutputsAsNumpy() if op.OutputsLength() else []) if j >= 0]
        ops.append({"index": i, "op": codes[op.OpcodeIndex()], "inputs": ins, "outputs": outs})
    signatures = []
    for i in range(model.SignatureDefsLength()):
        sd = model.SignatureDefs(i)
        signatures.append(
            {
                "key": (sd.SignatureKey() or b"").decode(),
                "inputs": {(sd.Inputs(j).Name() or b"").decode(): tensor(sd.Inputs(j).TensorIndex())["name"] for j in range(sd.InputsLength())},
                "outputs": {(sd.Outputs(j).Name() or b"").decode(): tensor(sd.Outputs(j).TensorIndex())["name"] for j in range(sd.OutputsLength())},
            }
        )
    return {
        "ops": ops,
        "inputs": [tensor(j) for j in sg.InputsAsNumpy()] if sg.InputsLength() else [],
        "outputs": [tensor(j) for j in sg.OutputsAsNumpy()] if sg.OutputsLength() else [],
        "signatures": signatures,
    }


# --------------------------------------------------------------------------------------------
# Layouts


def channels_last_perm(rank):
    return [0] + list(range(2, rank)) + [1]


def layout_perm(onnx_shape, tf_shape):
    """The permutation taking ONNX-layout data to the converted model's layout, or None (same layout).

    onnx2tf lays rank 3..5 tensors out channels-last. Unknown dims (None, -1) match anything;
    when the dims alone cannot tell (all equal), onnx2tf's default (channels-last) is assumed.
    """
    rank = len(onnx_shape)
    if rank < 3 or tf_shape is None or len(tf_shape) != rank:
        return None

    def same(a, b):
        return all(x is None or y is None or x < 0 or y < 0 or x == y for x, y in zip(a, b))

    perm = channels_last_perm(rank)
    permuted = [onnx_shape[p] for p in perm]
    if same(tf_shape, permuted):
        return perm
    return None


def inverse_perm(perm):
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    return inv


# --------------------------------------------------------------------------------------------
# Conversion


def onnx_io(model_path):
    import onnx

    model = onnx.load(model_path, load_external_data=False)
    inits = {t.name for t in model.graph.initializer}

    def spec(vi):
        dims = [d.dim_value if d.HasField("dim_value") else None for d in vi.type.tensor_type.shape.dim]
        return {"name": vi.name, "shape": dims, "elem_type": vi.type.tensor_type.elem_type}

    return [spec(v) for v in model.graph.input if v.name not in inits], [spec(v) for v in model.graph.output]


def write_onnx2tf_sample(workdir, calib_arrays):
    """The file onnx2tf would download: 20 float32 NHWC images 128x128x3 in [0, 1].

    Made from the calibration data when it has 3 channels (resized by nearest neighbour and
    rescaled into [0, 1]), else from a fixed-seed uniform draw. onnx2tf only uses it to check
    its own conversion on sample inputs.
    """
    path = os.path.join(workdir, ONNX2TF_SAMPLE_FILE)
    if os.path.exists(path):
        return path
    images = None
    for arr in calib_arrays:
        if arr is not None and arr.ndim == 4 and arr.dtype.kind == "f" and 3 in (arr.shape[1], arr.shape[3]):
            nhwc = arr if arr.shape[3] == 3 else arr.transpose(0, 2, 3, 1)
            rows = np.linspace(0, nhwc.shape[1] - 1, 128).astype(int)
            cols = np.linspace(0, nhwc.shape[2] - 1, 128).astype(int)
            picked = nhwc[:20][:, rows][:, :, cols].astype(np.float32)
            lo, hi = float(picked.min()), float(picked.max())
            picked = (picked - lo) / (hi - lo) if hi > lo else np.zeros_like(picked)
            if len(picked) < 20:
                picked = np.concatenate([picked] * (20 // len(picked) + 1))[:20]
            images = picked
            break
    if images is None:
        images = np.random.default_rng(0).uniform(size=(20, 128, 128, 3)).astype(np.float32)
    np.save(path, images)
    return path


def signature_inputs(saved_model_dir):
    """serving_default's inputs: key -> (shape, dtype name), via TensorFlow."""
    import tensorflow as tf

    loaded = tf.saved_model.load(saved_model_dir)
    fn = loaded.signatures["serving_default"]
    _, kwargs = fn.structured_input_signature
    return {k: ([d if d is not None else -1 for d in v.shape.as_list()], v.dtype.name) for k, v in kwargs.items()}


def match_signature_key(onnx_name, keys, position, count):
    if onnx_name in keys:
        return onnx_name
    sanitized = re.sub("^/", "wa/", onnx_name.replace(":", "__"))
    if sanitized in keys:
        return sanitized
    squash = lambda s: re.sub(r"[^0-9a-zA-Z]", "", s).lower()  # noqa: E731
    for key in keys:
        if squash(key) == squash(onnx_name) or squash(key) == squash(sanitized):
            return key
    if count == 1 and len(keys) == 1:
        return next(iter(keys))
    ordered = sorted(keys, key=lambda k: (len(k), k))  # output_2 before output_10
    return ordered[position] if position < len(ordered) else None


def tflite_key(onnx_name, saved_model_key, tflite_keys, position, count):
    """The TFLite signature's name for an input: the saved model's key, the ONNX name, or the best match."""
    for candidate in (saved_model_key, onnx_name):
        if candidate in tflite_keys:
            return candidate
    return match_signature_key(onnx_name, set(tflite_keys), position, count)


def convert(onnx_path, outdir, calib, ctx, precision="int8", quantize=True, mix=None):
    """onnx2tf -> saved_model + float32 .tflite, then the full-int8 .tflite.

    `calib`: ONNX input name -> array in the ONNX layout (N first). Returns a dict with the
    paths, the layer map, the layouts, and the TFLite operator lists.
    """
    import onnx2tf

    recorder = install_hook()
    recorder.reset()
    _STATE.pop("last_error", None)
    _STATE.pop("failed_node", None)
    _STATE["int8"] = bool(quantize)
    os.makedirs(outdir, exist_ok=True)
    work_onnx = os.path.join(outdir, "model_for_onnx2tf.onnx")
    shutil.copyfile(onnx_path, work_onnx)
    write_onnx2tf_sample(os.getcwd(), list(calib.values()) if calib else [])
    tf_dir = os.path.join(outdir, "saved_model")
    started = time.monotonic()
    try:
        onnx2tf.convert(
            input_onnx_file_path=work_onnx,
            output_folder_path=tf_dir,
            output_signaturedefs=True,
            non_verbose=True,
            verbosity="error",
        )
    except SystemExit as exc:
        raise RuntimeError(f"onnx2tf: {_STATE.get('last_error') or 'conversion failed'}") from exc
    finally:
        with contextlib.suppress(Exception):
            import tf_keras

            tf_keras.backend.clear_session()
    convert_s = time.monotonic() - started
    stem = os.path.splitext(os.path.basename(work_onnx))[0]
    float_path = os.path.join(tf_dir, f"{stem}_float32.tflite")
    if not os.path.exists(float_path):
        raise RuntimeError(f"onnx2tf: no float32 TFLite was written ({_STATE.get('last_error') or 'see the log'})")
    inputs, outputs = onnx_io(work_onnx)
    sig = signature_inputs(tf_dir)
    keys = set(sig)
    layouts = {}
    for pos, spec in enumerate(inputs):
        key = match_signature_key(spec["name"], keys, pos, len(inputs))
        tf_shape = sig[key][0] if key else None
        perm = layout_perm(spec["shape"], tf_shape)
        layouts[spec["name"]] = {"key": key, "tf_shape": tf_shape, "tf_dtype": sig[key][1] if key else None, "perm": perm}
    result = {
        "float32_tflite": float_path,
        "layers": dict(recorder.layers),
        "onnx_inputs": inputs,
        "onnx_outputs": outputs,
        "input_layouts": layouts,
        "convert_s": round(convert_s, 3),
        "float32_ops": tflite_ops(float_path),
    }
    if quantize:
        started = time.monotonic()
        int8_path = os.path.join(outdir, "model_int8.tflite")
        flex = sorted({op["op"][len("CUSTOM:"):] for op in result["float32_ops"]["ops"] if op["op"].startswith("CUSTOM:Flex")})
        if flex:
            # The calibrator is a TFLite interpreter without the Flex delegate: quantising fails,
            # and the board's TFLite runtime could not run these operators either.
            raise RuntimeError(f"full-int8 quantisation impossible: the converted model needs TensorFlow Select (Flex) operators {', '.join(flex)}")
        ctx.log(f"TFLite converter: quantising the saved model to full int8 ({min(len(v) for v in calib.values()) if calib else 0} calibration samples)")
        result["mixed"] = quantize_full_int8(tf_dir, int8_path, inputs, layouts, calib, mix=mix, layers=recorder.layers)
        result["int8_tflite"] = int8_path
        result["int8_ops"] = tflite_ops(int8_path)
        result["quantize_s"] = round(time.monotonic() - started, 3)
    return result


def calibration_batches(inputs, layouts, calib):
    """Per sample: {signature key: array in the converted layout}, one batch of the model's size each.

    An input `calib` holds whole (Arrays.whole: a recurrent state whose leading axis is no batch
    axis) gives one whole sample per step; every other input gives the rows of its leading axis.
    """
    whole = getattr(calib, "whole", frozenset())
    source, rows = {}, {}
    for spec in inputs:
        lay = layouts[spec["name"]]
        arr = calib.get(spec["name"]) if calib else None
        source[spec["name"]] = generated_input(spec, lay) if arr is None else arr
        want = lay["tf_shape"][0] if lay["tf_shape"] else -1
        rows[spec["name"]] = 1 if spec["name"] in whole else (want if want and want > 0 else 1)
    count = min(len(a) for a in source.values()) if source else 0
    n = min((max(1, count // r) for r in rows.values()), default=0)
    n = max(1, min(n, MAX_CALIBRATION_SAMPLES))
    for i in range(n):
        sample = {}
        for spec in inputs:
            name, lay = spec["name"], layouts[spec["name"]]
            arr, b = source[name], rows[name]
            part = calib.feed(i, i + 1)[name] if name in whole else arr[i * b:(i + 1) * b]
            if name not in whole and len(part) < b:
                part = arr[:b]
            if lay["perm"]:
                part = part.transpose(lay["perm"])
            dtype = np.dtype(lay["tf_dtype"]) if lay["tf_dtype"] else part.dtype
            sample[lay["key"]] = part.astype(dtype, copy=False)
        yield sample


def generated_input(spec, layout):
    """Calibration data for a model given none: fixed-seed draws in a range valid for most operators."""
    import onnx

    shape = [d if d else 1 for d in spec["shape"]]
    rng = np.random.default_rng(0)
    np_dtype = onnx.helper.tensor_dtype_to_np_dtype(spec["elem_type"])
    reps = 8
    if np.issubdtype(np_dtype, np.floating):
        return rng.uniform(0.0, 1.0, size=[reps * shape[0]] + shape[1:]).astype(np_dtype)
    if np_dtype == np.bool_:
        return rng.integers(0, 2, size=[reps * shape[0]] + shape[1:]).astype(np.bool_)
    return np.zeros([reps * shape[0]] + shape[1:], dtype=np_dtype)


def quantize_full_int8(tf_dir, out_path, inputs, layouts, calib, mix=None, layers=None):
    """Full-integer TFLite from onnx2tf's saved_model; returns what mixed precision did (None without).

    The converter settings are those of onnx2tf 1.29.24's `-oiqt` full-integer output
    (onnx2tf.py: Optimize.DEFAULT, TFLITE_BUILTINS_INT8 + SELECT_TF_OPS, per-channel weights,
    int8 input and output). It is called directly rather than through `-oiqt` because onnx2tf
    casts every calibration input to float32 (so models with integer inputs cannot be
    calibrated) and computes three other variants we do not use.

    `mix` (build --recover's mixed precision): {"activations": "int16"} is TFLite's 16x8 mode (int16
    activations, int8 weights: onnx2tf's `full_integer_quant_with_int16_act` settings, in and out
    int16); {"float_nodes": {ONNX node: its tokens}} keeps the operators of those ONNX nodes in float, through
    the converter's own two steps (calibrate, then mlir_quantize with denylisted_nodes, what
    QuantizationDebugger does).
    """
    import tensorflow as tf

    mix = mix or {}
    converter = _int8_converter(tf, tf_dir, inputs, layouts, calib)
    if mix.get("activations") == "int16":
        converter.target_spec.supported_ops = [tf.lite.OpsSet.EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8]
        converter.inference_input_type = tf.int16
        converter.inference_output_type = tf.int16
        model, done = converter.convert(), {"activations": "int16"}
    elif mix.get("float_nodes"):
        model, done = _with_float_nodes(tf, converter, out_path, mix, layers or {})
    else:
        model, done = converter.convert(), None
    with open(out_path, "wb") as fh:
        fh.write(model)
    return done


def _int8_converter(tf, tf_dir, inputs, layouts, calib):
    names = {layouts[spec["name"]]["key"]: spec["name"] for spec in inputs}

    def representative():
        # The calibrator looks inputs up by the TFLite signature's names, which keep the ONNX
        # name ("gpu_0/data_0") where the saved model's key was sanitised ("gpu_0_data_0"):
        # each sample carries both (the calibrator ignores names it does not ask for).
        for sample in calibration_batches(inputs, layouts, calib):
            feed = {}
            for key, value in sample.items():
                tensor = tf.convert_to_tensor(value)
                feed[key] = tensor
                feed.setdefault(names.get(key, key), tensor)
            yield feed

    converter = tf.lite.TFLiteConverter.from_saved_model(tf_dir)
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8, tf.lite.OpsSet.SELECT_TF_OPS]
    converter._experimental_disable_per_channel = False
    converter.representative_dataset = representative
    converter.inference_input_type = tf.int8
    converter.inference_output_type = tf.int8
    return converter


def _with_float_nodes(tf, converter, out_path, mix, layers):
    """The calibrated float model, then mlir_quantize with the operators of these nodes denylisted
    (their output tensors: `model/<layer>/...` names of the Keras layers onnx2tf made for them, and
    the graph outputs they write, found by position)."""
    nodes = mix["float_nodes"]
    calibrated, ops = calibrated_model(converter, out_path)
    denied, found = node_tensors(ops, nodes, layers, mix.get("output_writers") or {})
    missing = [name for name in nodes if name not in found]
    if missing:
        raise RuntimeError("float nodes: the TFLite model has no operator of node(s) %s (fused into a neighbour or folded by onnx2tf)" % ", ".join(missing))
    return quantize_except(tf, calibrated, denied), {"float_nodes": list(nodes), "denylisted_tensors": denied}


def calibrated_model(converter, out_path):
    """The converter's first step alone (calibrate, no quantisation): the model and its operators."""
    converter._experimental_calibrate_only = True
    calibrated = converter.convert()
    calibrated_path = out_path + ".calibrated.tflite"
    with open(calibrated_path, "wb") as fh:
        fh.write(calibrated)
    try:
        return calibrated, tflite_ops(calibrated_path)
    finally:
        os.remove(calibrated_path)


def node_tensors(ops, nodes, layers, output_writers=None):
    """The output tensors of the operators that {ONNX node: its tokens} became (through `layers`,
    token -> Keras layers; `output_writers`: graph output position -> the node writing it), and the
    nodes that own at least one."""
    wanted = {layer: name for name, tokens in nodes.items() for token in tokens for layer in layers.get(token, [])}
    graph_outputs = [t["name"] for t in ops.get("outputs") or []]
    by_output = {graph_outputs[int(i)]: node for i, node in (output_writers or {}).items() if int(i) < len(graph_outputs)}
    denied, found = [], set()
    for op in ops["ops"]:
        for tensor in op["outputs"]:
            owners = {wanted[m.group(1)] for part in tensor["name"].split(";") for m in [re.match(r"model(?:_\d+)?/([^/]+)", part)] if m and m.group(1) in wanted}
            owners |= {by_output[tensor["name"]]} if tensor["name"] in by_output else set()
            if owners:
                denied.append(tensor["name"])
                found |= owners
    return denied, found


def quantize_except(tf, calibrated, denied):
    """The converter's second step: full int8 (per-channel weights, int8 in and out) except the operators writing `denied`."""
    from tensorflow.lite.python import convert as tf_convert

    return tf_convert.mlir_quantize(calibrated, disable_per_channel=False, input_data_type=tf.int8, output_data_type=tf.int8, denylisted_nodes=denied)


# --------------------------------------------------------------------------------------------
# Vela


def run_vela(tflite_path, outdir, vela, ctx):
    """Compile with Vela in-process; return its printout, the summary CSV and the output model."""
    from ethosu.vela import vela as vela_main

    os.makedirs(outdir, exist_ok=True)
    args = [
        tflite_path,
        "--accelerator-config", vela["accelerator_config"],
        "--config", vela["config"],
        "--system-config", vela["system_config"],
        "--memory-mode", vela["memory_mode"],
        "--output-dir", outdir,
        "--show-cpu-operations",
    ]
    stdout_path = os.path.join(outdir, "vela_stdout.txt")
    started = time.monotonic()
    with ctx.capture_fd_output(stdout_path):
        try:
            rc = vela_main.main(args)
        except SystemExit as exc:
            rc = exc.code if isinstance(exc.code, int) else 1
        except Exception:  # noqa: BLE001 - Vela's failure is a verdict, kept with its text
            traceback.print_exc()
            rc = 1
    with open(stdout_path, encoding="utf-8", errors="replace") as fh:
        text = fh.read()
    stem = os.path.splitext(os.path.basename(tflite_path))[0]
    summary = [f for f in os.listdir(outdir) if f.startswith(stem + "_summary_") and f.endswith(".csv")]
    csv_text = None
    if summary:
        with open(os.path.join(outdir, summary[0]), encoding="utf-8") as fh:
            csv_text = fh.read()
    out_tflite = os.path.join(outdir, stem + "_vela.tflite")
    result = {
        "returncode": rc or 0,
        "stdout": text,
        "stdout_path": stdout_path,
        "summary_csv": csv_text,
        "summary_csv_path": os.path.join(outdir, summary[0]) if summary else None,
        "vela_tflite": out_tflite if os.path.exists(out_tflite) else None,
        "args": args,
        "seconds": round(time.monotonic() - started, 3),
    }
    if result["vela_tflite"]:
        result["vela_ops"] = tflite_ops(out_tflite)
    return result


# --------------------------------------------------------------------------------------------
# Running TFLite on the host (CPU interpreter)


class NoSignature(ValueError):
    """A .tflite without the signature its inputs are fed by: retrying without XNNPACK cannot help."""


def run_tflite(path, inputs, layouts, data, outputs_onnx, default_delegates=True):
    """Run a .tflite on every sample of `data` (ONNX layout); return outputs per ONNX output (ONNX layout).

    Integer inputs are quantised with the model's own scale and zero point, integer outputs
    dequantised, so the results compare with the float reference directly. With
    default_delegates=False the interpreter runs its builtin kernels without XNNPACK.
    """
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    if default_delegates:
        interpreter = Interpreter(model_path=path, num_threads=1)
    else:
        interpreter = Interpreter(model_path=path, num_threads=1, experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
    signatures = interpreter.get_signature_list()
    if "serving_default" not in signatures:
        # No kernel or delegate can help here: the model has no entry point to feed by name.
        raise NoSignature(f"it has no 'serving_default' signature (signatures: {', '.join(signatures) or 'none'}), so its inputs cannot be fed by name; not retried without XNNPACK, which cannot help")
    runner = interpreter.get_signature_runner("serving_default")
    details_in = runner.get_input_details()
    details_out = runner.get_output_details()
    count = min(len(a) for a in data.values())
    whole = getattr(data, "whole", frozenset())
    batched = [lay for name, lay in layouts.items() if name not in whole]
    first = batched[0] if batched else {"tf_shape": None}
    # Inputs held whole (Arrays.whole) go in one sample at a time.
    batch = 1 if whole else (first["tf_shape"][0] if first["tf_shape"] and first["tf_shape"][0] > 0 else 1)
    collected = {k: [] for k in details_out}
    keys = {spec["name"]: tflite_key(spec["name"], layouts[spec["name"]]["key"], list(details_in), pos, len(inputs)) for pos, spec in enumerate(inputs)}
    for start in range(0, count - count % batch, batch):
        feed = {}
        taken = data.feed(start, start + batch) if whole else data
        for spec in inputs:
            lay = layouts[spec["name"]]
            arr = taken[spec["name"]] if whole else data[spec["name"]][start:start + batch]
            if lay["perm"]:
                arr = arr.transpose(lay["perm"])
            det = details_in[keys[spec["name"]]]
            scale, zero = det["quantization"]
            if np.issubdtype(det["dtype"], np.integer) and scale and arr.dtype.kind == "f":
                info = np.iinfo(det["dtype"])
                arr = np.clip(np.round(arr / scale + zero), info.min, info.max)
            feed[keys[spec["name"]]] = arr.astype(det["dtype"])
        result = runner(**feed)
        for key, value in result.items():
            det = details_out[key]
            scale, zero = det["quantization"]
            value = np.asarray(value)
            if np.issubdtype(value.dtype, np.integer) and scale:
                value = (value.astype(np.float32) - zero) * scale
            collected[key].append(value)
    # The int8 model's signature names its outputs output_0, output_1, ... in ONNX order; the
    # float32 model's can carry the ONNX names (the corpus's SSDlite head: bbox_regression,
    # cls_logits, whose sorted order is not the ONNX order), so outputs are matched as inputs
    # are: by name, then by position.
    keys = [match_signature_key(spec["name"], set(collected), pos, len(outputs_onnx)) for pos, spec in enumerate(outputs_onnx)]
    outputs = {}
    for spec, key in zip(outputs_onnx, keys):
        if key is None:
            continue
        value = np.concatenate(collected[key]) if collected[key] else np.zeros((0,))
        want = spec["shape"]
        if value.ndim >= 3 and len(want) == value.ndim and list(value.shape[1:]) != list(want[1:]):
            value = value.transpose(inverse_perm(channels_last_perm(value.ndim)))
        outputs[spec["name"]] = value
    return outputs


# --------------------------------------------------------------------------------------------
# Actions


class Arrays(dict):
    """Arrays by input name, and `whole`: the inputs held as whole samples ([N, *input shape]; a
    recurrent state whose leading axis is no batch axis), fed one at a time through `feed`."""

    whole = frozenset()

    def feed(self, start, stop):
        return self.take_feed(self, start, stop, self.whole)


def load_arrays(ctx, path):
    """The arrays of a request's .npz (the one array format, ctx.arrays), by input name; none without one."""
    arrays = Arrays(ctx.arrays.read_arrays(path) if path else {})
    arrays.whole = frozenset(ctx.arrays.read_whole(path)) if path else frozenset()
    arrays.take_feed = ctx.arrays.take_feed
    return arrays


def versions():
    from importlib.metadata import version

    found = {}
    for dist in ("onnx2tf", "tensorflow-cpu", "ethos-u-vela", "ai-edge-litert", "onnx"):
        try:
            found[dist] = version(dist)
        except Exception:  # noqa: BLE001
            found[dist] = None
    return found


def build(request, ctx):
    out = request["out_dir"]
    os.makedirs(out, exist_ok=True)
    os.chdir(ctx.workdir)
    calib = load_arrays(ctx, request.get("calib"))
    ctx.log(f"onnx2tf: converting {os.path.basename(request['model'])} (calibration: {', '.join(f'{k} {list(v.shape)}' for k, v in calib.items())})")
    conv = convert(request["model"], os.path.join(ctx.workdir, "onnx2tf"), calib, ctx, mix=request.get("mix"))
    float_dest = os.path.join(out, "model_float32.tflite")
    int8_dest = os.path.join(out, "model_int8.tflite")
    shutil.copyfile(conv["float32_tflite"], float_dest)
    shutil.copyfile(conv["int8_tflite"], int8_dest)
    result = {
        "versions": versions(),
        "float32_tflite": float_dest,
        "int8_tflite": int8_dest,
        "layers": conv["layers"],
        "onnx_inputs": conv["onnx_inputs"],
        "onnx_outputs": conv["onnx_outputs"],
        "input_layouts": conv["input_layouts"],
        "float32_ops": conv["float32_ops"],
        "int8_ops": conv["int8_ops"],
        "seconds": {"onnx2tf": conv["convert_s"], "quantize": conv["quantize_s"]},
        "mixed": conv.get("mixed"),
    }
    if request.get("vela"):
        ctx.log("vela: compiling for " + request["vela"]["accelerator_config"])
        vela = run_vela(int8_dest, os.path.join(out, "vela"), request["vela"], ctx)
        if vela["vela_tflite"]:
            dest = os.path.join(out, "model_int8_vela.tflite")
            shutil.move(vela["vela_tflite"], dest)
            vela["vela_tflite"] = dest
        result["vela"] = vela
        result["seconds"]["vela"] = vela["seconds"]
    return result


def evaluate(request, ctx):
    """Run the float32 and int8 TFLite models on the evaluation inputs with the CPU interpreter.

    A check after the conversion: when the interpreter's default XNNPACK delegate refuses a
    model ("failed to prepare"), the run is retried with the builtin kernels alone and says so
    (run_with_fallback); a model neither can run is reported per model, never raised, so the
    conversion is kept.
    """
    evaluation = load_arrays(ctx, request["eval"])
    started = time.monotonic()
    eval_dir = request["eval_out_dir"]
    os.makedirs(eval_dir, exist_ok=True)
    written, notes, errors = {}, [], {}
    for tag, path in (("float32", request["float32_tflite"]), ("int8", request["int8_tflite"])):
        ctx.log(f"tflite: running the {tag} model on {min(len(a) for a in evaluation.values())} evaluation samples (CPU interpreter)")
        outs, note, error = run_with_fallback(path, request, evaluation, tag)
        notes += [note] if note else []
        if error:
            errors[tag] = error
        if outs is None:
            continue
        written[tag] = ctx.arrays.write_arrays(os.path.join(eval_dir, f"{tag}_outputs.npz"), outs)
    return {"eval_outputs": written, "notes": notes, "errors": errors, "seconds": round(time.monotonic() - started, 3), "versions": versions()}


def run_with_fallback(path, request, evaluation, tag):
    """(outputs or None, note or None, error or None) of one TFLite model on the evaluation inputs.

    With the interpreter's default XNNPACK delegate first; when that fails for a reason the
    builtin kernels could get round, retried without it. The note says only what was tried and
    how it ended; a model without a signature is not retried (no kernel can help) and says so.
    """
    try:
        return run_tflite(path, request["onnx_inputs"], request["input_layouts"], evaluation, request["onnx_outputs"], True), None, None
    except NoSignature as exc:
        return None, None, str(exc)
    except Exception as exc:  # noqa: BLE001 - the interpreter's refusal is reported, not raised
        traceback.print_exc()
        first = failure_message(exc)
    try:
        outs = run_tflite(path, request["onnx_inputs"], request["input_layouts"], evaluation, request["onnx_outputs"], False)
    except Exception as exc:  # noqa: BLE001 - as above
        traceback.print_exc()
        return None, None, f"{failure_message(exc)} (with the builtin kernels only; with the default XNNPACK delegate: {first})"
    return outs, f"the {tag} model failed with the interpreter's default XNNPACK delegate ({first}); the builtin kernels alone ran it", None


def failure_context(exc):
    """The ONNX node onnx2tf failed on (its token, edn<index>: the core maps it back to the node's
    name) and where in the toolchain (worker_main's hook)."""
    frames = [frame for frame, _line in traceback.walk_tb(exc.__traceback__)]
    found = {}
    # onnx2tf's make_node(graph_node=...) is the conversion of one ONNX node.
    for frame in reversed(frames):
        node = frame.f_locals.get("graph_node")
        if isinstance(getattr(node, "name", None), str) and isinstance(getattr(node, "op", None), str):
            found.update(node=node.name, op_type=node.op)
            break
    if not found and _STATE.get("failed_node"):
        found["node"] = _STATE["failed_node"]
    vendor = [f for f in frames if "site-packages" in f.f_code.co_filename.replace("\\", "/").split("/")]
    if vendor:
        where = [_frame_place(vendor[-1])]
        onnx2tf_frames = [f for f in vendor if "/onnx2tf/" in f.f_code.co_filename.replace("\\", "/")]
        if onnx2tf_frames and onnx2tf_frames[-1] is not vendor[-1]:
            where.append("from " + _frame_place(onnx2tf_frames[-1]))
        found["where"] = ", ".join(where)
    return found


def _frame_place(frame):
    parts = frame.f_code.co_filename.replace("\\", "/").split("/")
    rel = parts[parts.index("site-packages") + 1 :]
    return f"{rel[0]}'s {frame.f_code.co_name} ({'/'.join(rel[1:])}:{frame.f_lineno})"


_MLIR_ERROR = re.compile(r"error: ((?:'[^']+' op|[A-Za-z]).*?)(?:\n|$)")


def failure_message(exc):
    """One line saying why a conversion failed: the converter's own `error:` line when it has one."""
    text = str(exc)
    for found in _MLIR_ERROR.findall(text):
        if "failed while converting" not in found:
            return f"{type(exc).__name__}: {found.strip()}"
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return f"{type(exc).__name__}: {lines[-1] if lines else ''}".strip()


def verdicts(request, ctx):
    """Convert and compile many models; one JSON line per model in results.jsonl, resumable."""
    os.chdir(ctx.workdir)
    results_path = request["results_path"]
    per_model_s = float(request.get("per_model_timeout_s", 300))
    done = 0

    def on_alarm(signum, frame):
        raise TimeoutError(f"no verdict after {per_model_s:.0f} s")

    signal.signal(signal.SIGALRM, on_alarm)
    for item in request["models"]:
        started = time.monotonic()
        entry = {"index": item["index"], "model": item["model"]}
        ctx.log(f"verdict {item['index']}: {os.path.basename(item['model'])}")
        signal.alarm(int(per_model_s))
        try:
            case_dir = os.path.join(ctx.workdir, f"case{item['index']}")
            os.makedirs(case_dir, exist_ok=True)
            calib = load_arrays(ctx, item.get("calib"))
            conv = convert(item["model"], case_dir, calib, ctx)
            entry.update(
                layers=conv["layers"],
                onnx_inputs=conv["onnx_inputs"],
                onnx_outputs=conv["onnx_outputs"],
                int8_ops=conv["int8_ops"],
                float32_ops=conv["float32_ops"],
            )
            if request.get("vela"):
                entry["vela"] = run_vela(conv["int8_tflite"], os.path.join(case_dir, "vela"), request["vela"], ctx)
            entry["failed"] = None
        except BaseException as exc:  # noqa: BLE001 - one model's failure is that model's verdict
            if isinstance(exc, KeyboardInterrupt):
                raise
            traceback.print_exc()
            entry["failed"] = failure_message(exc)
        finally:
            signal.alarm(0)
        entry["seconds"] = round(time.monotonic() - started, 3)
        if not request.get("keep_files"):
            shutil.rmtree(os.path.join(ctx.workdir, f"case{item['index']}"), ignore_errors=True)
        with open(results_path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(entry) + "\n")
        done += 1
    return {"done": done, "versions": versions()}
