"""The ESP-DL target's conversion for `edgedeploy build --target esp32s3|esp32p4`, declared for
the core's skeleton (toolkit/pipeline/convert.py).

  build_request  the named model copy and the staged data for worker_build.py in the espdl
                 environment: esp-ppq quantises, analyses the error, simulates the quantised
                 model on the evaluation inputs (its quantised graph exists only inside that
                 worker, so the simulation happens there) and exports the .espdl
  read_result    the .info file beside the .espdl as esp-ppq's own verdict per layer, the
                 quantisation report, and the simulated outputs (which `simulate` hands on; the
                 core compares them with the ONNX Runtime reference on the same inputs); a
                 .espdl holding an op type ESP-DL's runtime has no module for fails the build

The mixed-precision policy (`--espdl-int16-layers auto`) is documented in docs/espdl.md.
"""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import onnx

from edgedeploy import __version__
from edgedeploy.arrays import read_arrays, write_arrays
from edgedeploy.artifacts import atomic_write_json
from edgedeploy.errors import OptionError, ToolchainFailed
from edgedeploy.model import named_copy
from edgedeploy.model.stats import node_names
from edgedeploy.targets.base import ConvertRequest, ConvertResult, SimulationResult, WorkerResult
from edgedeploy.targets.espdl.grouped_conv import rewrite_grouped_convs, workaround_record
from edgedeploy.targets.espdl.verdict import verdict_from_info
from edgedeploy.targets.espdl.worker_verdict import MIN_CALIB_STEPS as ESPPPQ_MIN_CALIB_STEPS, parse_info

WORKER = Path(__file__).with_name("worker_build.py")
ESPDL_NAME = "model.espdl"

# `--espdl-int16-layers auto`: keep moving layers to int16 until the graph outputs' signal-to-noise
# ratio (quantised vs float, on the calibration data) reaches this. 30 dB is an output noise
# amplitude of about 3% of the signal's RMS, where top-1 / top-k changes are rare; plain int8
# gives 20-30 dB on small CNNs (21.5 dB on the sample). Override with `auto=DB`.
INT16_AUTO_SNR_DB = 30.0
# ... but give up after this fraction of the computing layers (each step moves one layer plus
# the layers producing its input): beyond that, `--precision int16` is the honest choice.
INT16_AUTO_MAX_STEP_FRACTION = 0.25

# `--espdl-calib-method auto`: esp-ppq's default calibration (KL divergence, which clips the long tail
# of each activation's histogram) is kept unless the graph outputs' SNR on the calibration data
# is under this; then minmax (no clipping) is tried too and the one with less output error kept.
# Measured: mnist_box_and_class (a trained two-output CNN) on esp32s3 gives -0.5 dB with KL
# (top-1 0.875 -> 0.234) and 30.8 dB with minmax (top-1 0.859). Above 10 dB the extra
# quantisation is not spent: KL is esp-ppq's choice, and the one every corpus figure used.
CALIB_AUTO_SNR_DB = 10.0
# esp-ppq's name of its default activation calibration.
ESPPPQ_DEFAULT_CALIB = "kl"

# Calibration and evaluation go through esp-ppq's simulator in batches when the model accepts
# a batch axis (the reference's probe); models that hard-code batch 1 run one sample at a time.
# Calibration batches shrink below CALIB_BATCH so that esp-ppq gets its minimum of steps.
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
    """`--espdl-int16-layers` values -> None, ("auto", snr_db) or a list of ONNX node display names.

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
            raise OptionError(f"--espdl-int16-layers: '{text}' is not 'auto', 'auto=DB' or node names.")
        if not sep:
            return ("auto", INT16_AUTO_SNR_DB)
        try:
            target = float(number)
        except ValueError:
            raise OptionError(f"--espdl-int16-layers: '{number}' in '{text}' is not a number of dB.") from None
        if not 0 < target < 200:
            raise OptionError(f"--espdl-int16-layers: the SNR target must be between 0 and 200 dB, not {number}.")
        return ("auto", target)
    known = set(names)
    chosen: list[str] = []
    for value in values:
        parts = [value] if value in known else [p.strip() for p in value.split(",") if p.strip()]
        for part in parts:
            if part.lower().startswith("auto"):
                raise OptionError("--espdl-int16-layers: 'auto' cannot be combined with node names.")
            if part not in known:
                close = [n for n in names if part.lower() in n.lower()][:5] or names[:5]
                raise OptionError(f"--espdl-int16-layers: the model has no node named {part!r} (nodes include: {', '.join(close)}).")
            if part not in chosen:
                chosen.append(part)
    return chosen


def calibration_batch(samples: int, batchable: bool) -> int:
    """Samples per calibration step: as many as fit CALIB_BATCH while esp-ppq still gets its minimum of steps.

    esp-ppq 1.3.12 refuses fewer than ESPPPQ_MIN_CALIB_STEPS calibration steps ("Insufficient
    Calibration Detected"); batching 16 samples by 32 gave it one. A model that hard-codes
    batch 1 runs one sample per step.
    """
    if not batchable:
        return 1
    return max(1, min(CALIB_BATCH, samples // ESPPPQ_MIN_CALIB_STEPS))


def build_request(ctx) -> ConvertRequest:
    """The worker's request: the named model copy, the staged data and the quantisation settings."""
    precision = ctx.precision
    display_names = node_names(ctx.model.graph)
    int16 = parse_int16_layers(ctx.options.int16_layers, display_names)
    if int16 is not None and precision != "int8":
        raise OptionError("--espdl-int16-layers mixes int16 layers into an int8 model; leave it out with --precision int16.")
    work = ctx.work("convert")
    staged, test_source = _stage_data(ctx, work)
    named_path = work / "model_named.onnx"
    for_esp_ppq = named_copy(ctx.model.proto, display_names)
    workarounds = explicit_reduce_keepdims(for_esp_ppq)
    rewrites = workaround_record(rewrite_grouped_convs(for_esp_ppq))
    workarounds += rewrites
    _announce_rewrites(ctx, [line for w in rewrites for line in w["per_node"]])
    onnx.save(for_esp_ppq, str(named_path))
    batch = calibration_batch(len(ctx.data.calibration), ctx.data.batchable)
    payload = {
        "model": str(named_path),
        "chip": ctx.chip.id,
        "precision": precision,
        "input_names": [vi.name for vi in ctx.model.graph_inputs()],
        "batch_size": batch,
        "eval_batch_size": EVAL_BATCH if ctx.data.batchable else 1,
        **staged,
        "out_dir": str(ctx.workdir),
        "espdl_name": ESPDL_NAME,
        "int16_layers": "auto" if isinstance(int16, tuple) else int16,
        "calib_method": ctx.options.calib_method or ESPPPQ_DEFAULT_CALIB,
        "calib_auto_threshold": 10 ** (-CALIB_AUTO_SNR_DB / 10.0),
        "equalization": ctx.options.equalization,
        "bias_correction": ctx.options.bias_correction,
        "metadata": {"edgedeploy_version": __version__, "edgedeploy_model_sha256": ctx.model.sha256, "edgedeploy_chip": ctx.chip.id},
    }
    if isinstance(int16, tuple):
        computing = sum(1 for n in ctx.model.graph.node if n.op_type in ("Conv", "ConvTranspose", "Gemm", "MatMul"))
        payload["auto_threshold"] = 10 ** (-int16[1] / 10.0)
        payload["auto_max_steps"] = max(1, math.ceil(computing * INT16_AUTO_MAX_STEP_FRACTION))
    announce = f"convert: esp-ppq quantises for {ctx.chip.id} ({precision}), {len(ctx.data.calibration) // batch} calibration steps of {batch} (log: build.log)"
    keep = {"display_names": display_names, "int16": int16, "batch": batch, "test_source": test_source, "named_path": named_path, "workarounds": workarounds, "work": work}
    return ConvertRequest(WORKER, payload, announce=announce, keep=keep)


# Rewritten Convs named on the console, one a line; the rest are in report.json (convert.workarounds).
ANNOUNCED_REWRITES = 4


def _announce_rewrites(ctx, lines: list[str]) -> None:
    for line in lines[:ANNOUNCED_REWRITES]:
        ctx.echo(f"convert: {line}")
    if len(lines) > ANNOUNCED_REWRITES:
        ctx.echo(f"convert: ... and {len(lines) - ANNOUNCED_REWRITES} more grouped Conv(s) written as group 1 (each in report.json, convert.workarounds)")


def _stage_data(ctx, work: Path) -> tuple[dict, object]:
    """calib.npz, eval.npz and test_input.npz (edgedeploy.arrays: tensor names are not safe .npz keys)."""
    calib, evaluation = ctx.data.calibration, ctx.data.evaluation
    write_arrays(work / "calib.npz", calib.inputs, whole=calib.whole)
    staged = {"calib": str(work / "calib.npz"), "eval": None, "test_input": str(work / "test_input.npz")}
    if evaluation is not None:
        write_arrays(work / "eval.npz", evaluation.inputs, whole=evaluation.whole)
        staged["eval"] = str(work / "eval.npz")
    test_source = evaluation if evaluation is not None else calib
    write_arrays(work / "test_input.npz", test_source.take(1).inputs, whole=test_source.whole)
    return staged, test_source


def read_result(ctx, result: WorkerResult) -> ConvertResult:
    """The .espdl with esp-ppq's verdict (its .info file), the quantisation report and the simulated outputs."""
    values, keep = result.values, result.request.keep
    if values.get("user_error"):
        raise OptionError(values["user_error"] + ".")
    worker_notes = list(values.get("notes") or [])
    for note in worker_notes:
        ctx.echo(f"convert: note: {note}")
    batch = int(values.get("calibration_batch") or keep["batch"])
    versions = values.get("versions") or {}
    quant = quantisation_report(values, keep["display_names"], ctx.precision, keep["int16"])
    verdict = _verdict(values, quant, keep["named_path"], versions)
    atomic_write_json(ctx.workdir / "quantization.json", quant)
    _announce_quantisation(ctx, quant)
    simulated = None
    if values.get("eval_outputs"):
        simulated = SimulationResult(read_arrays(values["eval_outputs"]), backend="esp-ppq quantised simulation (CPU, torch)")
    _cleanup_work(keep["work"])
    _refuse_what_the_chip_cannot_load(ctx, verdict)
    calibration = quant["calibration"]
    return ConvertResult(
        status="built",
        toolchain=f"esp-ppq {versions.get('esp-ppq', '')}".strip(),
        versions=versions,
        files={"model": ESPDL_NAME},
        verdict=verdict,
        sections={"quantization": {k: v for k, v in quant.items() if k != "layers"}},
        details={
            "platform": values.get("platform"),
            "calibration_steps": int(values.get("calibration_steps") or len(ctx.data.calibration) // batch),
            "calibration_batch": batch,
            "batched_simulation": ctx.data.batchable and int(values.get("eval_batch_size") or 1) > 1,
            "test_input": {"source": keep["test_source"].source, "index": 0},
            "worker_timings_s": values.get("timings_s"),
            "espdl_size_bytes": (ctx.workdir / ESPDL_NAME).stat().st_size,
        },
        manifest={"file": ESPDL_NAME, "platform": values.get("platform"), "precision": ctx.precision, "int16_layers": quant["int16_layers"], "calib_method": calibration["method"]},
        simulated=simulated,
        workarounds=keep["workarounds"],
        notes=worker_notes,
    )


def _verdict(values: dict, quant: dict, named_path: Path, versions: dict):
    """esp-ppq's own placement from the .info file beside the .espdl (None when it wrote none).

    What the board runs, after esp-ppq's fusions and layout transposes; an F32 layer is one
    esp-ppq could not quantise and left in float without saying so.
    """
    if not values.get("info"):
        return None
    layers, _ = parse_info(Path(values["info"]).read_text(errors="replace"))
    quant["espdl_ops"] = [{"op_type": l["op_type"], "outputs": l["outputs"], "quant_type": l.get("quant_type")} for l in layers]
    quant["espdl_float_ops"] = [op for op in quant["espdl_ops"] if op["quant_type"] == "F32"]
    return verdict_from_info(named_path, Path(values["info"]), versions.get("esp-ppq") or "?")


def _refuse_what_the_chip_cannot_load(ctx, verdict) -> None:
    """Fail the build (ToolchainFailed, exit 9; the folder kept as `<chip>.failed`) when the .espdl
    holds an op type ESP-DL's runtime has no module for: esp-ppq exports such a layer all the same,
    and the firmware's loader stops at it ("Do not support <op>"), so the artifact could never run
    (verdict.refused_by_the_runtime, docs/espdl.md "A model the chip cannot load")."""
    if verdict is None or not verdict.failed:
        return
    raise ToolchainFailed(
        f"esp-ppq converted the model, but {ctx.chip.name} cannot load it",
        toolchain="esp-dl",
        final_line=verdict.failed,
        log_path=str(ctx.workdir / "build.log"),
    )


def _announce_quantisation(ctx, quant: dict) -> None:
    """The progress lines about the quantisation: what calibration was kept, the outputs' SNR."""
    calibration = quant["calibration"]
    if len(calibration["tried"]) > 1:
        tried = ", ".join(f"{t['method']} {_fmt_db(t['output_snr_db'])}" for t in calibration["tried"])
        ctx.echo(f"convert: --espdl-calib-method auto: {tried}; kept {calibration['method']}")
    ctx.echo(
        f"convert: {ctx.precision}{' + int16 layers' if quant['int16_layers'] else ''} for {ctx.chip.id}, {calibration['method']} calibration; graph outputs "
        f"SNR {_fmt_db(quant['output_snr_db'])} (quantised vs float, calibration data); "
        f"{len(quant.get('espdl_float_ops', quant['float_ops']))} ops left in float"
    )
    low = quant["output_snr_db"] is not None and quant["output_snr_db"] < CALIB_AUTO_SNR_DB
    if low and calibration["requested"] == ESPPPQ_DEFAULT_CALIB and not ctx.options.calib_method:
        ctx.echo(
            f"convert: note: the outputs' SNR is under {CALIB_AUTO_SNR_DB:.0f} dB with esp-ppq's default (kl) calibration; "
            "--espdl-calib-method auto also tries minmax and keeps the better (docs/espdl.md)"
        )


# Operators whose `keepdims` attribute esp-ppq 1.3.12 reads without ONNX's default (1).
KEEPDIMS_OPS = ("ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare")


def explicit_reduce_keepdims(proto: onnx.ModelProto) -> list[dict]:
    """Write `keepdims=1` (ONNX's default) on every Reduce node that leaves it out; the workaround applied, if any.

    esp-ppq 1.3.12's layout pass reads `op.attributes["keepdims"]` without a default
    (esp_ppq/parser/espdl/layout_patterns.py) and stops with `KeyError: 'keepdims'` on models
    that rely on the default, as PyTorch's LayerNorm-free ReduceMean exports do; the explicit
    default computes the same, so the copy given to esp-ppq carries it.
    """
    changed = []
    for node in proto.graph.node:
        if node.op_type in KEEPDIMS_OPS and not any(a.name == "keepdims" for a in node.attribute):
            node.attribute.append(onnx.helper.make_attribute("keepdims", 1))
            changed.append(node.name)
    if not changed:
        return []
    return [
        {
            "name": f"explicit keepdims=1 on {len(changed)} Reduce node(s)",
            "why": "esp-ppq 1.3.12 reads keepdims without ONNX's default (KeyError: 'keepdims'); the default written out computes the same",
            "source": "esp-ppq 1.3.12, esp_ppq/parser/espdl/layout_patterns.py",
            "nodes": changed[:20],
        }
    ]


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
    calibration = result.get("calibration") or {}
    tried = [{"method": t["method"], "output_snr_db": snr_db(t.get("output_error"))} for t in calibration.get("tried", [])]
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
        # How the activation ranges were set (esp-ppq's calib_algorithm), and with --espdl-calib-method
        # auto what was tried, each with the outputs' SNR in int8 on the calibration data.
        "calibration": {"requested": calibration.get("requested", ESPPPQ_DEFAULT_CALIB), "method": calibration.get("method", ESPPPQ_DEFAULT_CALIB), "tried": tried, "auto_below_snr_db": CALIB_AUTO_SNR_DB if calibration.get("requested") == "auto" else None},
        "float_ops": [layer["onnx_node"] or layer["esp_ppq_op"] for layer in layers if layer["precision"] == "float32"],
        "added_by_toolchain": [layer["esp_ppq_op"] for layer in layers if layer["onnx_node"] is None],
        "not_in_quantised_graph": [n for n in display_names if n not in in_ppq],
        "layers": layers,
    }


def _fmt_db(value) -> str:
    if value is None:
        return "n/a"
    if math.isinf(value):
        return "inf dB"
    return f"{value:.1f} dB"


def _cleanup_work(work: Path) -> None:
    """Drop the scratch copies of data and models from the artifact; keep the request, result and outputs."""
    for name in ("calib.npz", "eval.npz", "model_named.onnx", "scratch.onnx"):
        (work / name).unlink(missing_ok=True)
    for extra in work.glob("unused.*"):
        extra.unlink(missing_ok=True)
    if not any(work.iterdir()):
        shutil.rmtree(work, ignore_errors=True)
