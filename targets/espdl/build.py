"""`edgedeploy build --target esp32s3|esp32p4`: the host side of the ESP-DL build.

Stages, in order (each fills a section of the report):
  audit     the target's rules, when targets/espdl/rules.py exists ("no rules yet" otherwise)
  convert   worker_build.py in the espdl environment: esp-ppq quantises, analyses the error,
            simulates the quantised model on the evaluation inputs and exports the .espdl
  verify    ONNX Runtime fp32 (before) against esp-ppq's quantised simulation (after), on the
            same evaluation inputs: the task metric and output fidelity side by side
  codegen   the ESP-IDF project (codegen.py)

The mixed-precision policy (`--int16-layers auto`) is documented in docs/espdl.md.
"""

from __future__ import annotations

import math
import re
import shutil
import time
from pathlib import Path

import numpy as np
import onnx

from edgedeploy import __version__
from edgedeploy.arrays import read_arrays, write_arrays
from edgedeploy.artifacts import atomic_write_json
from edgedeploy.errors import OptionError
from edgedeploy.model.stats import node_names

WORKER = Path(__file__).with_name("worker_build.py")
ESPDL_NAME = "model.espdl"

# `--int16-layers auto`: keep moving layers to int16 until the graph outputs' signal-to-noise
# ratio (quantised vs float, on the calibration data) reaches this. 30 dB is an output noise
# amplitude of about 3% of the signal's RMS, where top-1 / top-k changes are rare; plain int8
# gives 20-30 dB on small CNNs (21.5 dB on the sample). Override with `auto=DB`.
INT16_AUTO_SNR_DB = 30.0
# ... but give up after this fraction of the computing layers (each step moves one layer plus
# the layers producing its input): beyond that, `--precision int16` is the honest choice.
INT16_AUTO_MAX_STEP_FRACTION = 0.25

# Calibration and evaluation go through esp-ppq's simulator in batches when the model accepts
# a batch axis (probed with ONNX Runtime); models that hard-code batch 1 run one sample at a time.
CALIB_BATCH = 32
EVAL_BATCH = 250


def snr_db(noise_to_signal: float | None) -> float | None:
    """esp-ppq's noise:signal power ratio as a signal-to-noise ratio in dB (inf for no noise)."""
    if noise_to_signal is None:
        return None
    if noise_to_signal <= 0:
        return math.inf
    return -10.0 * math.log10(noise_to_signal)


def parse_int16_layers(values, names: list[str]):
    """`--int16-layers` values -> None, ("auto", snr_db) or a list of ONNX node display names.

    Each value is `auto`, `auto=DB`, or node names separated by commas (a value that is itself a
    node name is taken whole, so names containing commas work). Unknown names are an error.
    """
    if not values:
        return None
    if isinstance(values, str):
        values = (values,)
    if len(values) == 1 and values[0].strip().lower().startswith("auto"):
        text = values[0].strip()
        key, sep, number = text.partition("=")
        if key.lower() != "auto":
            raise OptionError(f"--int16-layers: '{text}' is not 'auto', 'auto=DB' or node names.")
        if not sep:
            return ("auto", INT16_AUTO_SNR_DB)
        try:
            target = float(number)
        except ValueError:
            raise OptionError(f"--int16-layers: '{number}' in '{text}' is not a number of dB.") from None
        if not 0 < target < 200:
            raise OptionError(f"--int16-layers: the SNR target must be between 0 and 200 dB, not {number}.")
        return ("auto", target)
    known = set(names)
    chosen: list[str] = []
    for value in values:
        parts = [value] if value in known else [p.strip() for p in value.split(",") if p.strip()]
        for part in parts:
            if part.lower().startswith("auto"):
                raise OptionError("--int16-layers: 'auto' cannot be combined with node names.")
            if part not in known:
                close = [n for n in names if part.lower() in n.lower()][:5] or names[:5]
                raise OptionError(f"--int16-layers: the model has no node named {part!r} (nodes include: {', '.join(close)}).")
            if part not in chosen:
                chosen.append(part)
    return chosen


def build(ctx) -> None:
    """The ESP-DL build stages into ctx.workdir (see module docstring)."""
    from edgedeploy.targets.espdl import codegen

    started = time.monotonic()
    options = ctx.options
    precision = options.precision or "int8"
    if precision not in ctx.chip.precisions:
        raise OptionError(f"ESP-DL on {ctx.chip.name} runs {' or '.join(ctx.chip.precisions)}, not {precision}; use --precision int8 or int16.")
    display_names = node_names(ctx.model.graph)
    int16 = parse_int16_layers(options.target_options.get("int16_layers"), display_names)
    if int16 is not None and precision != "int8":
        raise OptionError("--int16-layers mixes int16 layers into an int8 model; leave it out with --precision int16.")

    # Record the precision actually built (the option's default is None: "the target's").
    for options_record in (ctx.report.get("options"), ctx.manifest.get("options")):
        if isinstance(options_record, dict):
            options_record["precision"] = precision
    ctx.report["audit"] = run_audit(ctx, precision)

    calib, evaluation, notes = load_data(ctx)
    work = ctx.workdir.resolve() / "work" / "convert"
    work.mkdir(parents=True, exist_ok=True)
    input_names = [vi.name for vi in ctx.model.graph_inputs()]
    batchable = accepts_batches(ctx.model.proto, calib.inputs)
    calib_path = work / "calib.npz"
    # Keyed by index with a name table (edgedeploy.arrays): tensor names are not safe .npz keys.
    write_arrays(calib_path, calib.inputs)
    eval_path = None
    if evaluation is not None:
        eval_path = work / "eval.npz"
        write_arrays(eval_path, evaluation.inputs)
    test_source = evaluation if evaluation is not None else calib
    test_path = work / "test_input.npz"
    write_arrays(test_path, {k: v[:1] for k, v in test_source.inputs.items()})
    named_path = work / "model_named.onnx"
    save_with_display_names(ctx.model.proto, display_names, named_path)

    request = {
        "model": str(named_path),
        "chip": ctx.chip.id,
        "precision": precision,
        "input_names": input_names,
        "batch_size": CALIB_BATCH if batchable else 1,
        "eval_batch_size": EVAL_BATCH if batchable else 1,
        "calib": str(calib_path),
        "eval": str(eval_path) if eval_path else None,
        "test_input": str(test_path),
        "out_dir": str(ctx.workdir.resolve()),
        "espdl_name": ESPDL_NAME,
        "int16_layers": "auto" if isinstance(int16, tuple) else int16,
        "metadata": {"edgedeploy_version": __version__, "edgedeploy_model_sha256": ctx.model.sha256, "edgedeploy_chip": ctx.chip.id},
    }
    if isinstance(int16, tuple):
        computing = sum(1 for n in ctx.model.graph.node if n.op_type in ("Conv", "ConvTranspose", "Gemm", "MatMul"))
        request["auto_threshold"] = 10 ** (-int16[1] / 10.0)
        request["auto_max_steps"] = max(1, math.ceil(computing * INT16_AUTO_MAX_STEP_FRACTION))
    result = ctx.run_worker(WORKER, request, "convert")
    if result.get("user_error"):
        raise OptionError(result["user_error"] + ".")

    quant = quantisation_report(result, display_names, precision, int16)
    if result.get("info"):
        quant["espdl_ops"] = espdl_info_ops(Path(result["info"]))
        quant["espdl_float_ops"] = [op for op in quant["espdl_ops"] if op["quant_type"] == "F32"]
    atomic_write_json(ctx.workdir / "quantization.json", quant)
    ctx.report["quantization"] = {k: v for k, v in quant.items() if k != "layers"}
    ctx.echo(
        f"convert: {precision}{' + int16 layers' if quant['int16_layers'] else ''} for {ctx.chip.id}; graph outputs "
        f"SNR {_fmt_db(quant['output_snr_db'])} (quantised vs float, calibration data); "
        f"{len(quant.get('espdl_float_ops', quant['float_ops']))} ops left in float"
    )

    accuracy = None
    if evaluation is not None and result.get("eval_outputs"):
        accuracy = verify(ctx, evaluation, Path(result["eval_outputs"]), batchable, notes)
        ctx.report["accuracy"] = accuracy
        atomic_write_json(ctx.workdir / "accuracy.json", accuracy)
        _echo_accuracy(ctx, accuracy)
    else:
        ctx.report["accuracy"] = {"status": "skipped", "reason": "no evaluation data (pass --eval DATA)"}

    espdl = ctx.workdir / ESPDL_NAME
    project = codegen.generate_project(
        ctx.workdir / "firmware",
        espdl_path=espdl,
        chip=ctx.chip,
        model=ctx.model,
        precision=precision,
        int16_layers=quant["int16_layers"],
    )
    ctx.report["firmware"] = project
    ctx.report["convert"] = {
        "toolchain": "esp-ppq",
        "versions": result.get("versions"),
        "platform": result.get("platform"),
        "espdl": ESPDL_NAME,
        "espdl_size_bytes": espdl.stat().st_size,
        "calibration": calib.describe(),
        "evaluation": evaluation.describe() if evaluation is not None else None,
        "batched_simulation": batchable,
        "test_input": {"source": test_source.source, "index": 0},
        "worker_timings_s": result.get("timings_s"),
        "notes": notes,
    }
    ctx.manifest["espdl"] = {"file": ESPDL_NAME, "esp_dl_version": project["esp_dl_version"], "platform": result.get("platform"), "precision": precision}
    _cleanup_work(work)
    ctx.echo(f"espdl: {ESPDL_NAME} {espdl.stat().st_size} bytes; firmware project in firmware/ ({project['model_location']}); stages took {time.monotonic() - started:.1f} s")


def run_audit(ctx, precision: str) -> dict:
    """The audit section from targets/espdl/rules.py through the generic Target.rule_set, if the rules exist yet."""
    try:
        rules = ctx.target.rule_set(ctx.chip.id)
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.endswith("espdl.rules"):
            return {"status": "no rules yet"}
        raise
    from edgedeploy.audit.engine import audit_model

    result = audit_model(ctx.model, rules, precision)
    data = result.to_dict()
    atomic_write_json(ctx.workdir / "audit.json", data)
    ctx.echo(f"audit: {result.summary_line()}")
    section = {"status": "done", "file": "audit.json", "summary": result.summary(), "summary_line": result.summary_line()}
    unsupported = [n.node for n in result.nodes if n.placement.value == "unsupported"]
    if unsupported:
        # A prediction: esp-ppq, which runs next, is the judge; the report keeps both.
        ctx.echo(f"audit: the rules predict {len(unsupported)} node(s) ESP-DL cannot run ({', '.join(unsupported[:3])}); converting anyway to let esp-ppq decide")
        section["predicted_unsupported"] = unsupported
    return section


def load_data(ctx):
    """Calibration and evaluation datasets; the sample's splits by default, but only for the sample itself."""
    from edgedeploy.sample import sample_calibration_path, sample_card, sample_eval_path

    is_sample = ctx.model.sha256 == sample_card().get("sha256")
    notes: list[str] = []
    if ctx.options.calib is None and not is_sample:
        raise OptionError("Quantising this model needs calibration data: pass --calib DATA (an .npz, a folder of .npy files, or images with --preprocess).")
    calib = ctx.dataset("calib", sample_calibration_path() if is_sample else None)
    evaluation = ctx.dataset("eval", sample_eval_path() if is_sample else None)
    if evaluation is None:
        notes.append("no --eval data: accuracy before/after was not measured")
    return calib, evaluation, notes


def save_with_display_names(proto: onnx.ModelProto, names: list[str], path: Path) -> None:
    """Save a copy whose nodes carry edgedeploy's unique display names, so esp-ppq's op names map back to ONNX nodes."""
    copy = onnx.ModelProto()
    copy.CopyFrom(proto)
    for node, name in zip(copy.graph.node, names):
        node.name = name
    onnx.save(copy, str(path))


def _batch_free_copy(proto: onnx.ModelProto) -> onnx.ModelProto:
    copy = onnx.ModelProto()
    copy.CopyFrom(proto)
    for vi in list(copy.graph.input) + list(copy.graph.output):
        dims = vi.type.tensor_type.shape.dim
        if len(dims):
            dims[0].dim_param = "edgedeploy_batch"
    del copy.graph.value_info[:]
    return copy


def accepts_batches(proto: onnx.ModelProto, inputs: dict[str, np.ndarray]) -> bool:
    """Whether the model computes each sample of a batch of 2 exactly as alone (a Reshape to [1, -1] does not)."""
    import onnxruntime as ort

    try:
        session = ort.InferenceSession(_batch_free_copy(proto).SerializeToString(), providers=["CPUExecutionProvider"])
        two = session.run(None, {k: v[:2] for k, v in inputs.items()})
        one = session.run(None, {k: v[:1] for k, v in inputs.items()})
    except Exception:  # noqa: BLE001 - any failure means: run one sample at a time
        return False
    if min(len(v) for v in inputs.values()) < 2:
        return False
    return all(a.shape[0] == 2 and np.allclose(a[:1], b, rtol=1e-4, atol=1e-5) for a, b in zip(two, one))


def reference_outputs(proto: onnx.ModelProto, inputs: dict[str, np.ndarray], batchable: bool) -> dict[str, np.ndarray]:
    """ONNX Runtime fp32 on the CPU: the "before" of accuracy before/after."""
    import onnxruntime as ort

    model = _batch_free_copy(proto) if batchable else proto
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    count = len(next(iter(inputs.values())))
    step = EVAL_BATCH if batchable else 1
    parts: dict[str, list] = {n: [] for n in names}
    for start in range(0, count, step):
        got = session.run(None, {k: v[start : start + step] for k, v in inputs.items()})
        for n, value in zip(names, got):
            parts[n].append(value)
    return {n: np.concatenate(v, axis=0) for n, v in parts.items()}


def verify(ctx, evaluation, quantised_path: Path, batchable: bool, notes: list[str]) -> dict:
    """Accuracy before (ONNX Runtime fp32) and after (esp-ppq's quantised simulation) on the same inputs."""
    from edgedeploy.measure.accuracy import before_after, choose_metric

    reference = reference_outputs(ctx.model.proto, evaluation.inputs, batchable)
    quantised = read_arrays(quantised_path)
    first = next(iter(reference))
    metric = choose_metric(ctx.options.metric, reference[first].shape, evaluation.labels)
    section = before_after(metric, reference, quantised, evaluation.labels, first)
    section["before_backend"] = f"onnxruntime {_ort_version()} CPU, fp32"
    section["after_backend"] = "esp-ppq quantised simulation (CPU, torch)"
    section["data"] = evaluation.describe()
    section["scope"] = {
        "model_sha256": ctx.model.sha256,
        "input_shapes": {k: list(v.shape[1:]) for k, v in evaluation.inputs.items()},
        "precision_before": "fp32",
        "precision_after": ctx.options.precision or "int8",
        "chip": ctx.chip.id,
    }
    return section


def quantisation_report(result: dict, display_names: list[str], precision: str, int16) -> dict:
    """esp-ppq's error analysis mapped to ONNX node names, in graph order."""
    known = set(display_names)
    graphwise = result.get("graphwise") or {}
    layerwise = result.get("layerwise") or {}
    in_ppq = {op["name"] for op in result.get("ops", [])}
    layers = []
    for op in result.get("ops", []):
        name = op["name"]
        layers.append(
            {
                "onnx_node": name if name in known else None,
                "esp_ppq_op": name,
                "op_type": op["op_type"],
                "precision": op["precision"],
                "computing": op["computing"],
                "graphwise_noise_to_signal": graphwise.get(name),
                "graphwise_snr_db": snr_db(graphwise.get(name)),
                "layerwise_noise_to_signal": layerwise.get(name),
                "layerwise_snr_db": snr_db(layerwise.get(name)),
            }
        )
    auto = None
    if isinstance(int16, tuple):
        auto = {
            "target_snr_db": int16[1],
            "int8_output_snr_db": snr_db(result.get("output_error_int8_baseline")),
            "reached": (snr_db(result.get("output_error")) or 0) >= int16[1],
            "steps": [
                {**step, "output_snr_db": snr_db(step.get("output_error"))} for step in result.get("auto_steps", [])
            ],
        }
    return {
        "schema": "edgedeploy.espdl-quantization/1",
        "metric": "esp-ppq noise:signal power ratio (lower is better); snr_db = -10*log10(ratio). Graph-wise: error accumulated up to the layer's output with every layer quantised; layer-wise: error at the graph outputs with only that layer quantised. Measured on the calibration data.",
        "precision": precision,
        "platform": result.get("platform"),
        "output_noise_to_signal": result.get("output_error"),
        "output_snr_db": snr_db(result.get("output_error")),
        "int16_layers": [n for n in result.get("int16_layers", [])],
        "int16_auto": auto,
        "float_ops": [layer["onnx_node"] or layer["esp_ppq_op"] for layer in layers if layer["precision"] == "float32"],
        "added_by_toolchain": [layer["esp_ppq_op"] for layer in layers if layer["onnx_node"] is None],
        "not_in_quantised_graph": [n for n in display_names if n not in in_ppq],
        "layers": layers,
    }


_INFO_OP = re.compile(r"^\s*(?P<outputs>%.*?) = (?P<op>[A-Za-z_][\w.]*)\[(?P<attrs>.*)\]\(")
_INFO_QUANT = re.compile(r"quant_type = '(?P<qt>[A-Z0-9]+)'")


def espdl_info_ops(info_path: Path) -> list[dict]:
    """The exported graph's ops and their quant_type (S8, S16, F32, ...) from esp-ppq's .info text file.

    This is what the board runs (after esp-ppq's fusions and layout transposes); an F32 op is
    one esp-ppq could not quantise and left in float without saying so.
    """
    ops = []
    for line in info_path.read_text(errors="replace").splitlines():
        m = _INFO_OP.match(line)
        if not m:
            continue
        q = _INFO_QUANT.search(m.group("attrs"))
        ops.append({"op_type": m.group("op"), "outputs": [o.strip().lstrip("%") for o in m.group("outputs").split(",")], "quant_type": q.group("qt") if q else None})
    return ops


def _ort_version() -> str:
    import onnxruntime

    return onnxruntime.__version__


def _fmt_db(value) -> str:
    if value is None:
        return "n/a"
    if math.isinf(value):
        return "inf dB"
    return f"{value:.1f} dB"


def _echo_accuracy(ctx, acc: dict) -> None:
    parts = []
    if "before" in acc and "after" in acc:
        for key in ("top1", "macro_auroc"):
            if key in acc["before"]:
                parts.append(f"{key} {acc['before'][key]:.4f} -> {acc['after'][key]:.4f}")
        if "delta_percentage_points" in acc:
            parts.append(f"({acc['delta_percentage_points']:+.2f} pp)")
    for name, fid in acc.get("fidelity", {}).items():
        parts.append(f"{name}: cosine {fid['cosine']:.5f}, SNR {_fmt_db(fid['snr_db'])}, max abs err {fid['max_abs_error']:.4g}")
    ctx.echo(f"verify: {acc['metric']} on {acc['samples']} samples: " + "; ".join(parts))


def _cleanup_work(work: Path) -> None:
    """Drop the scratch copies of data and models from the artifact; keep the request, result and outputs."""
    for name in ("calib.npz", "eval.npz", "model_named.onnx", "scratch.onnx"):
        (work / name).unlink(missing_ok=True)
    for extra in work.glob("unused.*"):
        extra.unlink(missing_ok=True)
    if not any(work.iterdir()):
        shutil.rmtree(work, ignore_errors=True)
