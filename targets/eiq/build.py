"""The NXP eIQ target's own stages of `edgedeploy build` (i.MX 93 and i.MX 8M Plus).

  convert    the eiq worker: onnx2tf -> model_float32.tflite; full-int8 -> model_int8.tflite,
             calibrated on the calibration split in the converted model's layout (NHWC);
             i.MX 93: Vela -> model_int8_vela.tflite + vela/ (printout, summary CSV), whose CPU
             operators are the toolchain's verdict; i.MX 8M Plus: the int8 model's operators
             against the VX delegate's list
  simulate   a second worker call: the int8 TFLite (the "after") and the float32 TFLite (what
             the conversion alone changed) in the TFLite CPU interpreter, on the evaluation
             inputs; an interpreter that refuses the model is retried without XNNPACK and, if
             it still cannot run, reported — the conversion is kept either way
  codegen    runner/: the generated Python runner, protocol.py, runner.json
Report sections: conversion, vela (i.MX 93; every figure Vela's estimate), vx_delegate (i.MX 8M Plus).
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import numpy as np

from edgedeploy.artifacts import atomic_write_json
from edgedeploy.errors import ToolchainFailed
from edgedeploy.model import named_copy
from edgedeploy.targets.eiq.confirm import tokens_for
from edgedeploy.targets.eiq.workarounds import SOFTMAX_2D, softmax_in_2d
from edgedeploy.targets.base import ConvertResult, SimulationResult
from edgedeploy.toolchains.executor import final_error_line

WORKER = Path(__file__).with_name("worker.py")
# Evaluation samples copied into the artifact for on-board output checks (kept small: boards).
RUNNER_SAMPLE_COUNT = 100
# The fidelity line of the float32 TFLite model: what onnx2tf's conversion alone changed.
FLOAT32_TFLITE = "float32 TFLite (the conversion alone)"
# What the runner and the simulation need to know of the converted model's inputs and outputs.
TFLITE_IO_KEYS = ("onnx_inputs", "onnx_outputs", "input_layouts", "int8_ops")
TFLITE_MAP = "tflite_layers.json"


def _layers_by_node(layers: dict[str, list[str]], token_names: dict[str, str]) -> dict[str, list[str]]:
    """onnx2tf's layers per node token -> per display name (several tokens name one node where a workaround split it)."""
    found: dict[str, list[str]] = {}
    for token, names in layers.items():
        found.setdefault(token_names.get(token, token), []).extend(names)
    return found


def _save_inputs(dataset, folder: Path, tag: str) -> dict[str, str]:
    folder.mkdir(parents=True, exist_ok=True)
    files = {}
    for i, (name, array) in enumerate(dataset.inputs.items()):
        path = folder / f"{tag}_input{i}.npy"
        np.save(path, np.ascontiguousarray(array))
        files[name] = str(path)
    return files


def convert(target, ctx) -> ConvertResult:
    """onnx2tf (float32 + full-int8 TFLite), Vela for the i.MX 93; the toolchain's verdict."""
    import onnx

    from edgedeploy.targets.eiq import VELA_IMX93, vela_version
    from edgedeploy.targets.eiq.vela import parse_summary_csv, parse_vela_stdout, verdict_from_entry, vx_verdict

    chip = ctx.chip.id
    work = ctx.work("convert")
    calib = ctx.data.calibration
    tokens, token_names, producers = tokens_for(ctx.model.graph)
    named = work / "named" / "model.onnx"
    named.parent.mkdir(parents=True, exist_ok=True)
    copy = named_copy(ctx.model.proto, tokens)
    workarounds = []
    rewritten, added = softmax_in_2d(copy, token_names)
    if rewritten:
        # What onnx2tf reports of the added Flatten/Reshape is placed on the node they came from.
        token_names = {**token_names, **added}
        workarounds.append({**SOFTMAX_2D, "nodes": rewritten})
    onnx.save(copy, str(named))
    # Data in the ONNX layout; the worker transposes it to the converted model's layout (NHWC).
    request = {"action": "build", "out_dir": str(ctx.workdir), "calib": _save_inputs(calib, work / "data", "calib"), "model": str(named)}
    if chip == "imx93":
        request["vela"] = dict(VELA_IMX93)
    ctx.echo(f"convert: onnx2tf converts to float32 and full-int8 TFLite{' and Vela compiles for the Ethos-U65' if chip == 'imx93' else ''} (log: build.log)")
    started = time.monotonic()
    try:
        result = ctx.executor.run_worker(target.toolchain, WORKER, request, work)
    except ToolchainFailed as exc:
        raise with_user_names(exc, token_names) from exc
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
    ctx.echo(f"convert: model_float32.tflite ({_size(ctx.workdir / 'model_float32.tflite')}), model_int8.tflite ({_size(ctx.workdir / 'model_int8.tflite')})")
    # Which Keras layers (TFLite tensor names) each ONNX node became, and the TFLite I/O: what
    # `edgedeploy diagnose` maps the int8 model's tensors back to the user's nodes with.
    atomic_write_json(ctx.workdir / TFLITE_MAP, {
        "layers_by_node": _layers_by_node(result["layers"], token_names),
        "output_producers": producers,
        **{k: result[k] for k in ("onnx_inputs", "onnx_outputs", "input_layouts")},
    })
    sections = {"conversion": conversion}
    files = {"model": "model_int8.tflite", "float32_model": "model_float32.tflite"}
    if chip == "imx93":
        vela = result["vela"]
        verdict = verdict_from_entry(result, token_names, producers, toolchain="onnx2tf+vela", version=vela_version())
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
            own = final_error_line(vela.get("stdout") or "") or verdict.failed
            raise ToolchainFailed("Vela could not compile the model for the i.MX 93", toolchain="vela", final_line=own, log_path=str(ctx.workdir / "vela" / "vela_stdout.txt"))
        sections["vela"] = section
        files["npu_model"] = "model_int8_vela.tflite"
    else:
        from edgedeploy.targets.eiq.rules import VX_DELEGATE_OPS, VX_DELEGATE_RELEASE

        verdict = vx_verdict(result, token_names, producers, VX_DELEGATE_OPS, version=f"VX delegate op list {VX_DELEGATE_RELEASE}")
        ops = result["int8_ops"]["ops"]
        sections["vx_delegate"] = {
            "source": f"nxp-imx/tflite-vx-delegate-imx op_status.md ({VX_DELEGATE_RELEASE})",
            "note": "The delegate decides at load time on the board; this checks the int8 model's operators against its list.",
            "operators": [{"op": op["op"], "in_delegate_list": op["op"] in VX_DELEGATE_OPS, "tensor": op["outputs"][0]["name"] if op["outputs"] else ""} for op in ops],
            "in_list": sum(op["op"] in VX_DELEGATE_OPS for op in ops),
            "not_in_list": sorted({op["op"] for op in ops if op["op"] not in VX_DELEGATE_OPS}),
        }
    return ConvertResult(
        status="built",
        toolchain=conversion["converter"] + (f", Vela {result['versions'].get('ethos-u-vela')}" if chip == "imx93" else ""),
        versions=result["versions"],
        files=files,
        verdict=verdict,
        sections=sections,
        details={"tflite_io": {k: result[k] for k in TFLITE_IO_KEYS}},
        manifest={"worker_versions": result["versions"], "models": files},
        workarounds=workarounds,
    )


def simulate(target, ctx, converted: ConvertResult, evaluation) -> SimulationResult:
    """The int8 (and float32) TFLite models in the TFLite CPU interpreter on the evaluation inputs."""
    work = ctx.work("simulate")
    io = converted.details["tflite_io"]
    request = {
        "action": "evaluate",
        "eval": _save_inputs(evaluation, work / "data", "eval"),
        "eval_out_dir": str(work / "outputs"),
        "float32_tflite": str(ctx.workdir / "model_float32.tflite"),
        "int8_tflite": str(ctx.workdir / "model_int8.tflite"),
        **{k: io[k] for k in ("onnx_inputs", "onnx_outputs", "input_layouts")},
    }
    result = ctx.executor.run_worker(target.toolchain, WORKER, request, work)
    backend = f"TFLite CPU interpreter (ai-edge-litert {result['versions'].get('ai-edge-litert')}), model_int8.tflite"
    if "int8" not in result["eval_outputs"]:
        return SimulationResult({}, backend, notes=result["notes"], failed=f"the TFLite interpreter could not run model_int8.tflite: {result['errors'].get('int8')}")
    int8 = {name: np.load(path) for name, path in result["eval_outputs"]["int8"].items()}
    extra = {}
    if "float32" in result["eval_outputs"]:
        extra[FLOAT32_TFLITE] = {name: np.load(path) for name, path in result["eval_outputs"]["float32"].items()}
    import shutil

    shutil.rmtree(work, ignore_errors=True)
    notes = result["notes"] + [f"float32 TFLite: {e}" for k, e in result["errors"].items() if k == "float32"]
    return SimulationResult(int8, backend, extra=extra, notes=notes, unquantised=FLOAT32_TFLITE if extra else None)


def codegen(ctx, converted: ConvertResult) -> dict:
    """runner/: the generated Python runner for the board, with the models and sample inputs."""
    import shutil

    from edgedeploy.targets.eiq.runner import generate_runner

    section = generate_runner(ctx, converted.details["tflite_io"], ctx.data.evaluation, RUNNER_SAMPLE_COUNT, converted.simulated)
    ctx.echo(f"codegen: runner/runner.py ({section['delegate']})")
    shutil.rmtree(ctx.workdir / "work", ignore_errors=True)
    return section


# onnx2tf failures whose cause and remedy are known: (what the message contains, the advice).
KNOWN_REMEDIES = (
    (
        "FlexErf",
        " Erf (an exact GELU exported below opset 20) has no TFLite builtin; `edgedeploy build --fix` rewrites it to the "
        "opset-20 Gelu, which onnx2tf converts to TFLite's GELU builtin (see docs/eiq.md).",
    ),
)


# A node's token, or the token of a node a workaround added for it (targets/eiq/workarounds.py).
_TOKEN = re.compile(r"\bedn\d+(?:_(?:2d|nd|shape))?\b")


def with_node_names(message: str, token_names: dict[str, str]) -> str:
    """onnx2tf saw the nodes under tokens (edn<index>); the user knows them by their names."""
    return _TOKEN.sub(lambda m: token_names.get(m.group(0), m.group(0)), message)


def with_user_names(exc: ToolchainFailed, token_names: dict[str, str]) -> ToolchainFailed:
    """The failure with the user's node names for onnx2tf's tokens, and the documented remedy as a hint."""
    renamed = {f: with_node_names(getattr(exc, f), token_names) for f in ("node", "final_line", "source_location") if getattr(exc, f)}
    named = exc.replace(**renamed)
    remedy = known_remedy(" ".join(filter(None, (named.final_line, named.source_location))))
    return named.replace(hints=named.hints + (remedy,)) if remedy else named


def known_remedy(message: str) -> str:
    """The documented remedy for an onnx2tf failure, as a sentence to append, or ''."""
    return next((advice for marker, advice in KNOWN_REMEDIES if marker in message), "")


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
