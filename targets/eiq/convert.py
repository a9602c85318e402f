"""The NXP eIQ target's conversion for `edgedeploy build` (i.MX 93 and i.MX 8M Plus), declared
for the core's skeleton (toolkit/pipeline/convert.py), and its host simulation.

  convert    build_request / read_result / explain_failure, the eiq worker: onnx2tf -> model_float32.tflite; full-int8 -> model_int8.tflite,
             calibrated on the calibration split in the converted model's layout (NHWC);
             i.MX 93: Vela -> model_int8_vela.tflite + vela/ (printout, summary CSV), whose CPU
             operators are the toolchain's verdict; i.MX 8M Plus: the int8 model's operators
             against the VX delegate's list
  simulate   a second worker call: the int8 TFLite (the "after") and the float32 TFLite (what
             the conversion alone changed) in the TFLite CPU interpreter, on the evaluation
             inputs; an interpreter that refuses the model is retried without XNNPACK and, if
             it still cannot run, reported — the conversion is kept either way
  (codegen, runner/ with the generated Python runner, is in runner.py)
Report sections: conversion, vela (i.MX 93; every figure Vela's estimate), vx_delegate (i.MX 8M Plus).
"""

from __future__ import annotations

import re
from pathlib import Path


from edgedeploy.arrays import read_arrays, write_arrays
from edgedeploy.artifacts import atomic_write_json
from edgedeploy.errors import ToolchainFailed
from edgedeploy.model import named_copy
from edgedeploy.targets.eiq.confirm import tokens_for
from edgedeploy.targets.eiq.workarounds import SOFTMAX_2D, softmax_in_2d
from edgedeploy.targets.base import ConvertRequest, ConvertResult, SimulationResult, WorkerResult, given_node_names
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


def _save_inputs(dataset, folder: Path, tag: str) -> str:
    """The dataset's inputs in the workers' one array format (edgedeploy.arrays)."""
    folder.mkdir(parents=True, exist_ok=True)
    return str(write_arrays(folder / f"{tag}.npz", dataset.inputs, whole=dataset.whole))


def tokenised_model(proto, dest: Path) -> tuple[dict[str, str], list[str | None], list[dict]]:
    """Write the copy of the model onnx2tf gets (node names as tokens, the workarounds applied) at
    `dest`; return token -> display name, the producers of the graph outputs, the workarounds."""
    import onnx

    tokens, token_names, producers = tokens_for(proto.graph)
    dest.parent.mkdir(parents=True, exist_ok=True)
    copy = named_copy(proto, tokens)
    workarounds = []
    rewritten, added = softmax_in_2d(copy, token_names)
    if rewritten:
        # What onnx2tf reports of the added Flatten/Reshape is placed on the node they came from.
        token_names = {**token_names, **added}
        workarounds.append({**SOFTMAX_2D, "nodes": rewritten})
    onnx.save(copy, str(dest))
    return token_names, producers, workarounds


def build_request(ctx) -> ConvertRequest:
    """The worker's "build" request: a copy of the model with tokens for node names, the calibration data."""
    from edgedeploy.targets.eiq import VELA_IMX93

    work = ctx.work("convert")
    named = work / "named" / "model.onnx"
    token_names, producers, workarounds = tokenised_model(ctx.model.proto, named)
    # Data in the ONNX layout; the worker transposes it to the converted model's layout (NHWC).
    payload = {"action": "build", "out_dir": str(ctx.workdir), "calib": _save_inputs(ctx.data.calibration, work / "data", "calib"), "model": str(named)}
    mix = mixed_precision(ctx.options, ctx.model.graph, token_names, producers)
    if mix:
        payload["mix"] = mix
    if ctx.chip.id == "imx93":
        payload["vela"] = dict(VELA_IMX93)
    announce = f"convert: onnx2tf converts to float32 and full-int8 TFLite{' and Vela compiles for the Ethos-U65' if ctx.chip.id == 'imx93' else ''} (log: build.log)"
    return ConvertRequest(WORKER, payload, announce=announce, keep={"token_names": token_names, "producers": producers, "workarounds": workarounds})


def float_node_names(values, graph) -> list[str]:
    """`--eiq-float-nodes` values -> ONNX node display names (targets.base.given_node_names)."""
    return given_node_names(values, graph, "--eiq-float-nodes")


def mixed_precision(options, graph, token_names: dict[str, str], producers: list[str | None] = ()) -> dict | None:
    """The worker's `mix`: 16x8 activations, or per node kept in float the tokens onnx2tf knows it
    by, and which graph outputs (by position) those nodes write: the converter renames an output's
    tensor (StatefulPartitionedCall:0), so only its position finds the operator that writes it."""
    if options.activations == "int16":
        return {"activations": "int16"}
    names = float_node_names(options.float_nodes, graph)
    if not names:
        return None
    outputs = {str(i): node for i, node in enumerate(producers) if node in names}
    return {"float_nodes": {name: [token for token, owner in token_names.items() if owner == name] for name in names}, "output_writers": outputs}


def explain_failure(ctx, request: ConvertRequest, failure: ToolchainFailed) -> ToolchainFailed:
    """onnx2tf's failure with the user's node names for its tokens, and the documented remedy."""
    return with_user_names(failure, request.keep["token_names"])


def read_result(ctx, result: WorkerResult) -> ConvertResult:
    """The TFLite models, the conversion section, and the verdict: Vela's (i.MX 93) or the VX delegate list's."""
    values, keep = result.values, result.request.keep
    conversion = {
        "converter": f"onnx2tf {values['versions'].get('onnx2tf')} + tensorflow-cpu {values['versions'].get('tensorflow-cpu')}",
        "float32_tflite": "model_float32.tflite",
        "int8_tflite": "model_int8.tflite",
        "int8_settings": _int8_settings(values.get("mixed"), keep["token_names"]),
        "calibration": {**ctx.data.calibration.describe(), "layout_given_to_converter": {k: ("channels-last (NHWC)" if v["perm"] else "as in the ONNX model") for k, v in values["input_layouts"].items()}},
        "input_layouts": values["input_layouts"],
        "int8_operators": _op_histogram(values["int8_ops"]),
        "seconds": values["seconds"],
        "wall_seconds": result.seconds,
    }
    ctx.echo(f"convert: model_float32.tflite ({_size(ctx.workdir / 'model_float32.tflite')}), model_int8.tflite ({_size(ctx.workdir / 'model_int8.tflite')})")
    # Which Keras layers (TFLite tensor names) each ONNX node became, and the TFLite I/O: what
    # `edgedeploy diagnose` maps the int8 model's tensors back to the user's nodes with.
    atomic_write_json(ctx.workdir / TFLITE_MAP, {
        "layers_by_node": _layers_by_node(values["layers"], keep["token_names"]),
        "output_producers": keep["producers"],
        **{k: values[k] for k in ("onnx_inputs", "onnx_outputs", "input_layouts")},
    })
    sections = {"conversion": conversion}
    files = {"model": "model_int8.tflite", "float32_model": "model_float32.tflite"}
    if ctx.chip.id == "imx93":
        verdict, sections["vela"] = _vela(ctx, values, keep)
        files["npu_model"] = "model_int8_vela.tflite"
    else:
        verdict, sections["vx_delegate"] = _vx_delegate(values, keep)
    return ConvertResult(
        status="built",
        toolchain=conversion["converter"] + (f", Vela {values['versions'].get('ethos-u-vela')}" if ctx.chip.id == "imx93" else ""),
        versions=values["versions"],
        files=files,
        verdict=verdict,
        sections=sections,
        details={"tflite_io": {k: values[k] for k in TFLITE_IO_KEYS}},
        manifest={"worker_versions": values["versions"], "models": files, "activations": ctx.options.activations or "int8", "float_nodes": float_node_names(ctx.options.float_nodes, ctx.model.graph)},
        workarounds=keep["workarounds"],
    )


def _int8_settings(mixed: dict | None, token_names: dict[str, str]) -> str:
    """What the quantiser was asked for, in one line (mixed precision from `build --recover` or its flags)."""
    if mixed and mixed.get("activations") == "int16":
        return "16x8: EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8, int16 activations, int8 per-channel weights, int16 input and output (onnx2tf's full_integer_quant_with_int16_act settings)"
    base = "full integer: Optimize.DEFAULT, TFLITE_BUILTINS_INT8, per-channel weights, int8 input and output (onnx2tf -oiqt's full_integer_quant settings)"
    if mixed and mixed.get("float_nodes"):
        nodes = list(mixed["float_nodes"])
        return base + f"; kept in float (the converter's denylisted_nodes, {len(mixed.get('denylisted_tensors') or [])} operators): " + ", ".join(nodes)
    return base


def _vela(ctx, values: dict, keep: dict):
    """(the verdict, the vela section) of the i.MX 93: Vela's CPU operators and its estimates; a failed compile is a ToolchainFailed."""
    from edgedeploy.targets.eiq import VELA_IMX93, vela_version
    from edgedeploy.targets.eiq.vela import parse_summary_csv, parse_vela_stdout, verdict_from_entry

    vela = values["vela"]
    verdict = verdict_from_entry(values, keep["token_names"], keep["producers"], toolchain="onnx2tf+vela", version=vela_version())
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
    return verdict, section


def _vx_delegate(values: dict, keep: dict):
    """(the verdict, the vx_delegate section) of the i.MX 8M Plus: the int8 model's operators against the delegate's list."""
    from edgedeploy.targets.eiq.rules import VX_DELEGATE_OPS, VX_DELEGATE_RELEASE
    from edgedeploy.targets.eiq.vela import vx_verdict

    verdict = vx_verdict(values, keep["token_names"], keep["producers"], VX_DELEGATE_OPS, version=f"VX delegate op list {VX_DELEGATE_RELEASE}")
    ops = values["int8_ops"]["ops"]
    return verdict, {
        "source": f"nxp-imx/tflite-vx-delegate-imx op_status.md ({VX_DELEGATE_RELEASE})",
        "note": "The delegate decides at load time on the board; this checks the int8 model's operators against its list.",
        "operators": [{"op": op["op"], "in_delegate_list": op["op"] in VX_DELEGATE_OPS, "tensor": op["outputs"][0]["name"] if op["outputs"] else ""} for op in ops],
        "in_list": sum(op["op"] in VX_DELEGATE_OPS for op in ops),
        "not_in_list": sorted({op["op"] for op in ops if op["op"] not in VX_DELEGATE_OPS}),
    }


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
    int8 = read_arrays(result["eval_outputs"]["int8"])
    extra = {}
    if "float32" in result["eval_outputs"]:
        extra[FLOAT32_TFLITE] = read_arrays(result["eval_outputs"]["float32"])
    import shutil

    shutil.rmtree(work, ignore_errors=True)
    notes = result["notes"] + [f"float32 TFLite: {e}" for k, e in result["errors"].items() if k == "float32"]
    return SimulationResult(int8, backend, extra=extra, notes=notes, unquantised=FLOAT32_TFLITE if extra else None)


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
