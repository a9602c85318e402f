"""`edgedeploy build` for NXP eIQ (i.MX 93 and i.MX 8M Plus).

Stages, all writing into the artifact folder (ctx.workdir):
  audit      the chip's rule table (targets/eiq/rules.py) on the pinned model
  convert    the eiq worker: onnx2tf -> model_float32.tflite; full-int8 -> model_int8.tflite,
             calibrated on the calibration split in the converted model's layout (NHWC);
             i.MX 93: Vela -> model_int8_vela.tflite + vela/ (printout, summary CSV)
  verify     host accuracy before/after on the held-out split: ONNX Runtime fp32 (before)
             against the int8 TFLite in the TFLite CPU interpreter (after), task metric and
             fidelity; the float32 TFLite's fidelity shows what the conversion alone changed
  codegen    runner/: the generated Python runner, protocol.py, runner.json
Report sections: audit, conversion, vela (i.MX 93; every figure Vela's estimate),
vx_delegate (i.MX 8M Plus: the int8 model's operators against the delegate's list),
toolchain_verdict + comparison (prediction vs what the toolchain did), accuracy, runner.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import numpy as np

from edgedeploy.artifacts import sha256_file
from edgedeploy.errors import OptionError

WORKER = Path(__file__).with_name("worker.py")
# Evaluation samples copied into the artifact for on-board output checks (kept small: boards).
RUNNER_SAMPLE_COUNT = 100


def _is_sample(ctx) -> bool:
    """Whether the model is the bundled sample (then its calibration and held-out splits are the defaults)."""
    from edgedeploy.sample import sample_model_path

    try:
        return ctx.model.sha256 == sha256_file(sample_model_path())
    except OSError:
        return False


def _datasets(ctx):
    from edgedeploy.sample import sample_calibration_path, sample_eval_path

    sample = _is_sample(ctx)
    calib = ctx.dataset("calib", sample_calibration_path() if sample else None)
    if calib is None:
        raise OptionError(
            f"Full-int8 conversion for {ctx.chip.id} needs calibration data: pass --calib (an .npz keyed by input name, a folder of .npy files, or images with --preprocess)."
        )
    evaluation = ctx.dataset("eval", sample_eval_path() if sample else None)
    return calib, evaluation


def _save_inputs(dataset, folder: Path, tag: str) -> dict[str, str]:
    folder.mkdir(parents=True, exist_ok=True)
    files = {}
    for i, (name, array) in enumerate(dataset.inputs.items()):
        path = folder / f"{tag}_input{i}.npy"
        np.save(path, np.ascontiguousarray(array))
        files[name] = str(path)
    return files


def _reference_outputs(model_path: Path, dataset, batch: int) -> dict[str, np.ndarray]:
    """ONNX Runtime fp32 on every sample (the "before")."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    collected: dict[str, list] = {n: [] for n in names}
    for feed in dataset.batches(batch):
        for name, value in zip(names, session.run(names, feed)):
            collected[name].append(value)
    return {n: np.concatenate(v) for n, v in collected.items()}


def _batch_of(ctx) -> int:
    first = ctx.model.graph_inputs()[0]
    dims = first.type.tensor_type.shape.dim
    return int(dims[0].dim_value) if dims and dims[0].dim_value > 0 else 1


def build(target, ctx) -> None:
    from edgedeploy.audit.confirm import compare
    from edgedeploy.audit.engine import audit_model
    from edgedeploy.measure.accuracy import before_after, choose_metric
    from edgedeploy.targets.eiq import VELA_IMX93, vela_version
    from edgedeploy.targets.eiq.confirm import named_copy
    from edgedeploy.targets.eiq.vela import parse_summary_csv, parse_vela_stdout, verdict_from_entry, vx_verdict

    chip = ctx.chip.id
    if ctx.options.precision not in (None, "int8"):
        raise OptionError(f"{ctx.chip.name} builds are full-int8 TFLite (the NPU's precision); --precision {ctx.options.precision} is not available.")
    work = ctx.workdir / "work"

    # Audit: the prediction from the rule table.
    rules = target.rule_set(chip)
    audit = audit_model(ctx.model, rules, "int8")
    ctx.report["audit"] = audit.to_dict()
    ctx.echo(f"audit: {audit.summary_line()}")

    # Data: calibration (required) and evaluation (optional) splits, in the ONNX layout; the
    # worker transposes them to the converted model's layout (NHWC).
    calib, evaluation = _datasets(ctx)
    data_dir = work / "data"
    request = {
        "action": "build",
        "out_dir": str(ctx.workdir),
        "calib": _save_inputs(calib, data_dir, "calib"),
    }
    tokens, producers = named_copy(ctx.model_path, work / "named" / "model.onnx")
    request["model"] = str(work / "named" / "model.onnx")
    if chip == "imx93":
        request["vela"] = dict(VELA_IMX93)
    if evaluation is not None:
        request["eval"] = _save_inputs(evaluation, data_dir, "eval")
        request["eval_out_dir"] = str(work / "eval_outputs")
    started = time.monotonic()
    result = ctx.run_worker(WORKER, request, "convert")
    ctx.manifest.setdefault("toolchain", {})["worker_versions"] = result["versions"]
    conversion = {
        "converter": f"onnx2tf {result['versions'].get('onnx2tf')} + tensorflow-cpu {result['versions'].get('tensorflow-cpu')}",
        "float32_tflite": "model_float32.tflite",
        "int8_tflite": "model_int8.tflite",
        "int8_settings": "full integer: Optimize.DEFAULT, TFLITE_BUILTINS_INT8, per-channel weights, int8 input and output (onnx2tf -oiqt's full_integer_quant settings)",
        "calibration": {**calib.describe(), "layout_given_to_converter": {k: ("channels-last (NHWC)" if v["perm"] else "as in the ONNX model") for k, v in result["input_layouts"].items()}},
        "input_layouts": result["input_layouts"],
        "int8_operators": _op_histogram(result["int8_ops"]),
        "seconds": result["seconds"],
        "wall_seconds": round(time.monotonic() - started, 2),
    }
    ctx.report["conversion"] = conversion
    ctx.echo(f"convert: model_float32.tflite ({_size(ctx.workdir / 'model_float32.tflite')}), model_int8.tflite ({_size(ctx.workdir / 'model_int8.tflite')})")

    # What the toolchain did, per ONNX node, beside the prediction.
    if chip == "imx93":
        vela = result["vela"]
        verdict = verdict_from_entry(result, tokens, producers, toolchain="onnx2tf+vela", version=vela_version())
        printout = parse_vela_stdout(vela.get("stdout") or "")
        section = {
            "command": "vela " + " ".join(_relative_args(vela["args"], ctx.workdir)),
            "configuration": dict(VELA_IMX93),
            "returncode": vela["returncode"],
            "compiled_model": "model_int8_vela.tflite" if vela.get("vela_tflite") else None,
            "cpu_operators": [{"vela_op": o.kind, "tensor": o.tensor, "shape": o.shape, "reasons": printout.reasons.get(o.tensor, [])} for o in printout.cpu_ops],
            "npu_operator_count": printout.npu_operator_count,
            "cpu_operator_count": printout.cpu_operator_count,
        }
        if vela.get("summary_csv"):
            section["estimates"] = parse_summary_csv(vela["summary_csv"])
            est = section["estimates"]
            ctx.echo(
                f"vela: {printout.npu_operator_count} NPU / {printout.cpu_operator_count} CPU operators; "
                f"estimated {est['estimated_inference_time_us']:.1f} us per inference ({est['estimated_cycles_total']} cycles at "
                f"{est['core_clock_hz'] / 1e6:.0f} MHz), SRAM {est['sram_used_bytes']} B, DRAM {est['dram_used_bytes']} B (Vela's estimates)"
            )
        if vela["returncode"] or not vela.get("vela_tflite"):
            raise OptionError(f"Vela could not compile the model for the i.MX 93: {verdict.failed or 'see vela/vela_stdout.txt'}.")
        ctx.report["vela"] = section
    else:
        from edgedeploy.targets.eiq.rules import VX_DELEGATE_OPS, VX_DELEGATE_RELEASE

        verdict = vx_verdict(result, tokens, producers, VX_DELEGATE_OPS, version=f"VX delegate op list {VX_DELEGATE_RELEASE}")
        ops = result["int8_ops"]["ops"]
        ctx.report["vx_delegate"] = {
            "source": f"nxp-imx/tflite-vx-delegate-imx op_status.md ({VX_DELEGATE_RELEASE})",
            "note": "The delegate decides at load time on the board; this checks the int8 model's operators against its list.",
            "operators": [{"op": op["op"], "in_delegate_list": op["op"] in VX_DELEGATE_OPS, "tensor": op["outputs"][0]["name"] if op["outputs"] else ""} for op in ops],
            "in_list": sum(op["op"] in VX_DELEGATE_OPS for op in ops),
            "not_in_list": sorted({op["op"] for op in ops if op["op"] not in VX_DELEGATE_OPS}),
        }
    ctx.report["toolchain_verdict"] = verdict.to_dict()
    ctx.report["comparison"] = compare(audit, verdict)
    cmp = ctx.report["comparison"]
    if cmp.get("agreement") is not None:
        ctx.echo(f"confirm: the rules and {verdict.toolchain} agree on {cmp['agree']} of {cmp['compared']} nodes")

    # Accuracy before (ONNX Runtime fp32) and after (int8 TFLite, CPU interpreter), same inputs.
    if evaluation is not None and result.get("eval_outputs"):
        reference = _reference_outputs(ctx.model_path, evaluation, _batch_of(ctx))
        int8 = {name: np.load(path) for name, path in result["eval_outputs"]["int8"].items()}
        float32 = {name: np.load(path) for name, path in result["eval_outputs"]["float32"].items()}
        count = min(len(next(iter(int8.values()))), len(next(iter(reference.values()))))
        reference = {k: v[:count] for k, v in reference.items()}
        int8 = {k: v[:count] for k, v in int8.items()}
        float32 = {k: v[:count] for k, v in float32.items()}
        labels = evaluation.labels[:count] if evaluation.labels is not None else None
        first = ctx.model.graph_outputs()[0].name
        metric = choose_metric(ctx.options.metric, reference[first].shape, labels)
        section = before_after(metric, reference, int8, labels, first)
        section["before_backend"] = "onnxruntime CPU, fp32"
        section["after_backend"] = f"TFLite CPU interpreter (ai-edge-litert {result['versions'].get('ai-edge-litert')}), model_int8.tflite"
        section["data"] = evaluation.describe()
        section["float32_tflite_fidelity"] = {n: v for n, v in before_after("fidelity", reference, float32, None, first)["fidelity"].items()}
        section["scope"] = {"model_sha256": ctx.model.sha256, "device": "host", "batch": _batch_of(ctx)}
        ctx.report["accuracy"] = section
        ctx.echo(_accuracy_line(section))
        host = ctx.workdir / "host"
        host.mkdir(exist_ok=True)
        for i, name in enumerate(reference):
            np.save(host / f"reference_fp32_output{i}.npy", reference[name])
            np.save(host / f"tflite_int8_output{i}.npy", int8[name])
    else:
        ctx.report["accuracy"] = {"skipped": "no evaluation data (pass --eval)"}

    # The generated runner.
    from edgedeploy.targets.eiq.runner import generate_runner

    ctx.report["runner"] = generate_runner(ctx, result, evaluation, RUNNER_SAMPLE_COUNT)
    ctx.echo(f"codegen: runner/runner.py ({ctx.report['runner']['delegate']})")
    shutil.rmtree(work, ignore_errors=True)


def _op_histogram(ops: dict) -> dict[str, int]:
    counts: dict[str, int] = {}
    for op in ops["ops"]:
        counts[op["op"]] = counts.get(op["op"], 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def _relative_args(args: list[str], root: Path) -> list[str]:
    out = []
    for a in args:
        try:
            out.append(str(Path(a).relative_to(root)))
        except ValueError:
            out.append(a)
    return out


def _size(path: Path) -> str:
    return f"{path.stat().st_size / 1024:.1f} KiB"


def _accuracy_line(section: dict) -> str:
    parts = []
    if "before" in section and "top1" in section["before"]:
        parts.append(f"top-1 {section['before']['top1']:.3f} (ONNX Runtime fp32) -> {section['after']['top1']:.3f} (int8 TFLite)")
    fid = next(iter(section.get("fidelity", {}).values()), None)
    if fid:
        parts.append(f"cosine {fid['cosine']:.4f}, SNR {fid['snr_db']:.1f} dB")
    return f"verify: {'; '.join(parts)} on {section['samples']} held-out samples"
