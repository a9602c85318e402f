"""esp-ppq's own verdict on models: which layers it quantises and which it keeps in float.

Runs inside the `espdl` toolchain environment (started by the core through worker_main.py; it
must not import edgedeploy). For each model of the request it quantises a temporary copy with
esp-ppq's `espdl_quantize_onnx` (which overwrites its input with the simplified model, hence the
copy), exports the `.espdl` with its `.info` file, and reads every exported layer's `quant_type`
from the `.info` file: S8 / S16 / W8A16 are quantised layers, F32 layers are kept in float. The
layers come back with their input and output tensor names; the core maps them onto the ONNX
nodes of the original model (tensor names survive esp-ppq's simplification and fusion).

Request:
  {"chip": "esp32s3", "quant_type": "w8a8", "calib_steps": 8, "case_timeout_s": 120,
   "progress_path": ".../progress.jsonl",
   "cases": [{"id": "0", "model": "/abs/model.onnx", "inputs": "/abs/inputs.npz" | null}]}
`inputs` is an .npz whose keys are graph input names (or arr_0.. in graph-input order), each
holding one sample (batch 1) or a batch of samples along axis 0 when `"batched": true`.
Without inputs, random data of each input's shape and type calibrates the model.

Result: {"esp_ppq_version": ..., "cases": {id: {"ok": true, "layers": [...], "initializers": [...]}
                                            | {"ok": false, "error": "...", "stage": "..."}}}
Each case's result is also appended to progress_path as one JSON line the moment it is known,
so that a crash in native code loses only the case that crashed.
"""

import contextlib
import gc
import io
import json
import os
import re
import shutil
import signal
import tempfile
import time
import traceback

# The .info file is written without the weights' values (most of esp-ppq's export time; worker_info_export.py).
INFO_EXPORT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "worker_info_export.py")

# One node line of the .info file: "  %y1, %y2 = OpType[attr = v, ...](%x1, %x2)".
_NODE_LINE = re.compile(r"^\s+(?P<outs>%.*?) = (?P<op>[A-Za-z_][\w.]*)(?P<attrs>\[.*\])?\((?P<ins>.*)\)\s*$")
_QUANT_TYPE = re.compile(r"quant_type = '(?P<q>[A-Z0-9]+)'")
_INIT_LINE = re.compile(r"^\s+%(?P<name>[^\[]+)\[")


# esp-ppq asserts "Insufficient Calibration Detected" below this many calibration steps.
MIN_CALIB_STEPS = 8


class CaseTimeout(Exception):
    pass


def _split_names(text):
    return [t.strip()[1:] for t in re.split(r",\s*(?=%)", text) if t.strip().startswith("%")]


def parse_info(text):
    """Layers (op type, quant type, input and output tensors) and initializer names of a .info file."""
    layers = []
    initializers = []
    section = None
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("graph ") and stripped.endswith("("):
            section = "inputs"
            continue
        if stripped.endswith("initializers (") or stripped == "initializers (":
            section = "initializers"
            continue
        if stripped.endswith("{"):
            section = "body"
            continue
        if stripped.startswith("return") or stripped == "}":
            if section == "body":
                break
            continue
        if section == "initializers":
            m = _INIT_LINE.match(line)
            if m:
                initializers.append(m.group("name"))
        elif section == "body":
            m = _NODE_LINE.match(line)
            if not m:
                continue
            q = _QUANT_TYPE.search(m.group("attrs") or "")
            layers.append(
                {
                    "op_type": m.group("op"),
                    "quant_type": q.group("q") if q else None,
                    "outputs": _split_names(m.group("outs")),
                    "inputs": _split_names(m.group("ins")),
                }
            )
    return layers, initializers


def _graph_inputs(model):
    inits = {t.name for t in model.graph.initializer}
    return [vi for vi in model.graph.input if vi.name not in inits]


def _input_samples(model, inputs_path, batched, steps, rng):
    """A list of calibration samples; each sample is a list of arrays in graph-input order."""
    import numpy as np
    from onnx import helper

    graph_inputs = _graph_inputs(model)
    if inputs_path:
        with np.load(inputs_path, allow_pickle=False) as data:
            keys = list(data.keys())
            arrays = []
            for i, vi in enumerate(graph_inputs):
                if vi.name in data:
                    arrays.append(data[vi.name])
                elif f"arr_{i}" in data:
                    arrays.append(data[f"arr_{i}"])
                else:
                    raise ValueError(f"calibration data has no array for input '{vi.name}' (it has {', '.join(keys)})")
        if batched:
            count = min(len(a) for a in arrays)
            given = [[a[j : j + 1] for a in arrays] for j in range(min(count, steps))]
        else:
            given = [arrays]
        # esp-ppq refuses fewer than MIN_CALIB_STEPS steps; repeat the given samples to reach it.
        return [given[j % len(given)] for j in range(max(steps, MIN_CALIB_STEPS))]
    samples = []
    for _ in range(max(steps, MIN_CALIB_STEPS)):
        sample = []
        for vi in graph_inputs:
            tt = vi.type.tensor_type
            shape = [d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else 1 for d in tt.shape.dim]
            dtype = np.dtype(helper.tensor_dtype_to_np_dtype(tt.elem_type))
            if dtype == np.bool_:
                sample.append(rng.random(shape) < 0.5)
            elif np.issubdtype(dtype, np.floating):
                sample.append(rng.standard_normal(shape).astype(dtype))
            else:
                # Integer inputs are usually indices or shapes: zeros are valid for most of them.
                sample.append(np.zeros(shape, dtype=dtype))
        samples.append(sample)
    return samples


def _to_torch(sample):
    import numpy as np
    import torch

    # The data keeps the dtype the model declares: what a user would calibrate with.
    return [torch.from_numpy(np.ascontiguousarray(a)) for a in sample]


def _keep_dtypes(batch):
    """esp-ppq's default collate casts every input to float32, which breaks index and bool inputs."""
    return batch


def _with_timeout(seconds, func):
    def on_alarm(signum, frame):
        raise CaseTimeout(f"esp-ppq took longer than {seconds} s on this model")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(int(seconds))
    try:
        return func()
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _last_line(exc):
    lines = [line for line in str(exc).strip().splitlines() if line.strip()]
    return f"{type(exc).__name__}: {lines[-1] if lines else ''}".strip().rstrip(":")


def _first_line(exc):
    """The exception's message, and the root cause's where esp-ppq wraps one ("Op Execution Error")."""
    text = _last_line(exc)
    root = exc
    while root.__cause__ is not None or (root.__context__ is not None and not root.__suppress_context__):
        root = root.__cause__ or root.__context__
    if root is not exc:
        text += f" (cause: {_last_line(root)[:200]})"
    return text


def verdict_for(case, request, workroot, rng, ctx):
    import onnx
    from esp_ppq.api import espdl_quantize_onnx

    info_without_weight_values = ctx.load_module(INFO_EXPORT, "espdl_info_export").info_without_weight_values

    steps = int(request.get("calib_steps", 8))
    chip = request["chip"]
    quant_type = request.get("quant_type", "w8a8")
    folder = tempfile.mkdtemp(prefix=f"case{case['id']}-", dir=workroot)
    try:
        stage = "load"
        model_copy = os.path.join(folder, "model.onnx")
        shutil.copyfile(case["model"], model_copy)  # espdl_quantize_onnx overwrites its input
        model = onnx.load(model_copy)
        stage = "calibration data"
        samples = _input_samples(model, case.get("inputs"), case.get("batched", False), steps, rng)
        torch_samples = [_to_torch(s) for s in samples]
        shapes = [list(t.shape) for t in torch_samples[0]]
        export = os.path.join(folder, "model.espdl")
        stage = "quantise and export"
        sink = io.StringIO()

        def quantise():
            # esp-ppq prints its progress tables to stdout; they stay in the log, not in our result.
            with contextlib.redirect_stdout(sink), info_without_weight_values():
                espdl_quantize_onnx(
                    onnx_import_file=model_copy,
                    espdl_export_file=export,
                    calib_dataloader=torch_samples,
                    calib_steps=len(torch_samples),
                    input_shape=shapes,
                    inputs=torch_samples[0],
                    target=chip,
                    quant_type=quant_type,
                    collate_fn=_keep_dtypes,
                    device="cpu",
                    error_report=False,
                    export_config=True,
                )

        _with_timeout(request.get("case_timeout_s", 120), quantise)
        info_path = os.path.join(folder, "model.info")
        if not os.path.exists(info_path):
            return {"ok": False, "stage": "export", "error": "esp-ppq wrote no .info file"}
        with open(info_path, encoding="utf-8", errors="replace") as fh:
            layers, initializers = parse_info(fh.read())
        return {"ok": True, "layers": layers, "initializers": initializers}
    except CaseTimeout as exc:
        return {"ok": False, "stage": stage, "error": str(exc)}
    except Exception as exc:  # noqa: BLE001 - any failure is esp-ppq refusing this model
        traceback.print_exc()
        return {"ok": False, "stage": stage, "error": _first_line(exc)}
    finally:
        _reset_esp_ppq_state()
        shutil.rmtree(folder, ignore_errors=True)


def _reset_esp_ppq_state():
    """esp-ppq keeps export state in singletons; a model that failed half-way must not leak into the next."""
    try:
        from esp_ppq.parser.espdl.export_patterns import ExporterPatternInfo

        ExporterPatternInfo().reset()
    except Exception:  # noqa: BLE001
        pass


def run(request, ctx):
    import importlib.metadata

    import numpy as np

    with contextlib.redirect_stdout(io.StringIO()):
        import esp_ppq  # noqa: F401 - prints a banner on import
        from esp_ppq.api import espdl_quantize_onnx  # noqa: F401 - the heavy imports, once

    # esp-ppq calls gc.collect() several times per model; with torch loaded each call walks a
    # few hundred thousand objects. Freezing what the imports created keeps those calls short
    # (about 4x faster per model) without changing what esp-ppq computes.
    gc.freeze()

    rng = np.random.default_rng(int(request.get("seed", 0)))
    workroot = tempfile.mkdtemp(prefix="espdl-verdict-", dir=ctx.workdir)
    progress_path = request.get("progress_path")
    if progress_path:
        # Tells the core the environment works: a crash after this line is a model's fault.
        with open(progress_path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"event": "started"}) + "\n")
    results = {}
    for case in request["cases"]:
        started = time.monotonic()
        ctx.log(f"case {case['id']}: {os.path.basename(os.path.dirname(case['model']))}/{os.path.basename(case['model'])}")
        result = verdict_for(case, request, workroot, rng, ctx)
        result["seconds"] = round(time.monotonic() - started, 3)
        results[case["id"]] = result
        if progress_path:
            with open(progress_path, "a", encoding="utf-8") as fh:
                fh.write(json.dumps({"id": case["id"], **result}) + "\n")
    shutil.rmtree(workroot, ignore_errors=True)
    return {"esp_ppq_version": importlib.metadata.version("esp-ppq"), "cases": results}
