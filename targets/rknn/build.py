"""The RKNN target's own stages of `edgedeploy build --target rk3588` (and the other RKNN chips).

  convert    rknn-toolkit2 in its environment: int8 (w8a8, calibrated) or fp16 -> model.rknn,
             with the input's mean/std folded into the model (the board feeds raw pixels); the
             toolkit's own layer table is the verdict (its cycle and memory figures are
             labelled estimates); the RKNN simulator runs the evaluation inputs in the same
             worker, because it needs the in-memory build; with --rknn-analyse, accuracy_analysis
             per ONNX node
  simulate   hands on those simulator outputs (the core compares them with the reference)
  codegen    the board runners (Python with rknn-toolkit-lite2, C with rknn_api) and the
             ONNX Runtime baseline runner, with the measurement protocol
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import numpy as np

from edgedeploy.arrays import read_arrays, write_arrays, write_npy_list
from edgedeploy.artifacts import sha256_file
from edgedeploy.datasets import Dataset, PreprocessSpec, model_input_specs
from edgedeploy.errors import OptionError, ToolchainFailed
from edgedeploy.targets.base import ConvertResult, SimulationResult

WORKER = Path(__file__).with_name("worker.py")
RKNN_FILE = "model.rknn"
# accuracy_analysis runs the float and quantised graphs on this many evaluation samples (one).
ANALYSIS_SAMPLES = 1
# Precisions an RKNN build accepts, and the rknn-toolkit2 settings they map to.
PRECISIONS = {"int8": {"quantize": True, "quantized_dtype": "w8a8"}, "fp16": {"quantize": False, "quantized_dtype": None}}


class InputNormalisation:
    """How the model's input domain maps to the pixels the board feeds, per rknn-toolkit2 config.

    The preprocessing spec says model_input = (pixel * scale - mean) / std. rknn-toolkit2 folds
    (pixel - mean_values) / std_values into the model, so mean_values = mean / scale and
    std_values = std / scale, and the model on the board takes raw pixels. Without a spec (or
    for inputs that are not images) the values pass unchanged (mean 0, std 1).
    """

    def __init__(self, input_specs, spec: PreprocessSpec | None):
        self.spec = spec
        self.per_input = []
        for s in input_specs:
            channels = s.shape[1] if len(s.shape) == 4 and spec is not None and spec.layout == "NCHW" else None
            if len(s.shape) == 4 and spec is not None and spec.layout == "NHWC":
                channels = s.shape[3]
            if channels is None or spec is None:
                # Identity for inputs that are not images; its length is the channel count the
                # toolkit checks (axis 1 of an NCHW input, else the last axis).
                width = s.shape[1] if len(s.shape) == 4 else (s.shape[-1] if s.shape else 1)
                self.per_input.append({"name": s.name, "mean": [0.0] * max(1, int(width or 1)), "std": [1.0] * max(1, int(width or 1)), "scale": 1.0, "model_mean": None, "model_std": None})
                continue
            mean = _per_channel(spec.mean, channels, "mean")
            std = _per_channel(spec.std, channels, "std")
            self.per_input.append(
                {
                    "name": s.name,
                    "mean": [m / spec.scale for m in mean],
                    "std": [d / spec.scale for d in std],
                    "scale": spec.scale,
                    "model_mean": mean,
                    "model_std": std,
                }
            )

    @property
    def folds_anything(self) -> bool:
        return any(p["model_mean"] is not None for p in self.per_input)

    @property
    def mean_values(self) -> list[list[float]] | None:
        """rknn-toolkit2's config(mean_values=...), or None when nothing is folded.

        rknn-toolkit2 2.5.0 checks each list's length against the input's channels and refuses
        a 1-element list for a non-image input ("len of mean_values ... expect N"); with nothing
        to fold, the option is left out entirely.
        """
        return [p["mean"] for p in self.per_input] if self.folds_anything else None

    @property
    def std_values(self) -> list[list[float]] | None:
        return [p["std"] for p in self.per_input] if self.folds_anything else None

    def to_board_domain(self, name: str, x: np.ndarray) -> np.ndarray:
        """Model-domain data -> what the RKNN model takes (pixels when a spec applies)."""
        p = next(p for p in self.per_input if p["name"] == name)
        if p["model_mean"] is None:
            return x
        shape = (1, -1, 1, 1) if x.ndim == 4 and self.spec.layout == "NCHW" else (1, 1, 1, -1)
        mean = np.asarray(p["model_mean"], dtype=np.float32).reshape(shape)
        std = np.asarray(p["model_std"], dtype=np.float32).reshape(shape)
        return ((x * std + mean) / p["scale"]).astype(np.float32)

    def describe(self) -> dict:
        return {
            "mean_values": self.mean_values,
            "std_values": self.std_values,
            "channel_order": self.spec.channels if self.spec else None,
            "preprocess": self.spec.to_dict() if self.spec else None,
            "board_input": "raw pixels (mean/std folded into the model)" if self.spec else "model-domain values",
        }


def _per_channel(values: tuple[float, ...], channels: int, what: str) -> list[float]:
    if len(values) == 1:
        return [float(values[0])] * channels
    if len(values) != channels:
        raise OptionError(f"--preprocess gives {len(values)} {what} values, but the model's input has {channels} channels.")
    return [float(v) for v in values]


def _write_dataset(ds: Dataset, norm: InputNormalisation, folder: Path, names: list[str], batch: int) -> Path:
    """rknn-toolkit2's dataset file: one line per sample, the absolute .npy path of each input (edgedeploy.arrays)."""
    return Path(write_npy_list(folder, ([norm.to_board_domain(name, b[name]) for name in names] for b in ds.batches(batch))))


def convert(target, ctx) -> ConvertResult:
    """rknn-toolkit2 in its environment: the .rknn, its layer table (the verdict) and the simulator's outputs."""
    chip, opts, precision = ctx.chip, ctx.options, ctx.precision
    settings = PRECISIONS[precision]
    work = ctx.workdir
    input_specs = model_input_specs(ctx.model)
    names = [s.name for s in input_specs]
    batch = int(input_specs[0].shape[0]) if input_specs and input_specs[0].shape else 1
    output_names = [o.name for o in ctx.model.graph.output]
    norm = InputNormalisation(input_specs, ctx.data.preprocess)
    calib = ctx.data.calibration if settings["quantize"] else None
    eval_ds = ctx.data.evaluation
    scratch = ctx.work("data")
    request = {
        "mode": "build",
        "chip": chip.id,
        "quantize": settings["quantize"],
        "quantized_dtype": settings["quantized_dtype"],
        "optimization_level": opts.optimization_level,
        "case": {
            "model": str(ctx.model_path),
            "inputs": [{"name": s.name, "shape": list(s.shape), "dtype": s.dtype} for s in input_specs],
            "mean_values": norm.mean_values,
            "std_values": norm.std_values,
        },
        "rknn_path": str(work / RKNN_FILE),
        "build_output": str(work / "rknn_build_output.txt"),
        "input_names": names,
        "output_names": output_names,
        "data_formats": ["nchw" if len(s.shape) == 4 else None for s in input_specs],
    }
    if calib is not None:
        request["dataset"] = str(_write_dataset(calib, norm, scratch / "calib", names, batch))
    if eval_ds is not None:
        usable = (len(eval_ds) // batch) * batch
        eval_ds = eval_ds.take(usable)
        write_arrays(scratch / "eval_inputs.npz", {n: norm.to_board_domain(n, eval_ds.inputs[n]) for n in names})
        request["eval_inputs"] = str(scratch / "eval_inputs.npz")
        request["simulator_outputs"] = str(scratch / "simulator_outputs.npz")
        request["batch"] = batch
    if opts.analyse:
        if eval_ds is None:
            raise OptionError("--rknn-analyse needs evaluation data (--eval) to run accuracy_analysis on.")
        paths = []
        for j, n in enumerate(names):
            path = scratch / f"analysis_i{j}.npy"
            np.save(path, norm.to_board_domain(n, eval_ds.inputs[n][:batch]))
            paths.append(str(path))
        request.update(analyse=True, analysis_inputs=paths, analysis_dir=str(scratch / "analysis"), analysis_output=str(scratch / "analysis_output.txt"))

    ctx.echo(f"convert: rknn-toolkit2 builds {RKNN_FILE} for {chip.id} ({precision}) (log: build.log)")
    try:
        result = ctx.executor.run_worker(target.toolchain, WORKER, request, ctx.work("convert"))
    except ToolchainFailed as exc:
        named = with_failing_node(exc, ctx.model.graph)
        if named is exc:
            raise
        raise named from exc
    version = result.get("toolkit_version") or target.TOOLKIT_VERSION
    ctx.echo(f"convert: {RKNN_FILE} ({result.get('rknn_size_bytes')} bytes, rknn-toolkit2 {version}, {precision})")

    # The toolkit's own verdict: its layer table.
    from edgedeploy.targets.rknn.layer_table import verdict_from_output

    text = (work / "rknn_build_output.txt").read_text(errors="replace")
    verdict = verdict_from_output(text, ctx.model.graph, settings["quantize"], version)

    simulated = None
    if result.get("simulator_error"):
        simulated = SimulationResult({}, backend=f"RKNN simulator (rknn-toolkit2 {version})", failed=f"the RKNN simulator failed: {result['simulator_error']}")
    elif result.get("simulator_outputs"):
        outputs = read_arrays(result["simulator_outputs"])
        simulated = SimulationResult(outputs, backend=f"RKNN simulator (rknn-toolkit2 {version}, init_runtime(target=None)), {precision}, host")

    sections = {}
    if opts.analyse:
        sections["accuracy_analysis"] = _analysis_section(result, work, ctx.model.graph, ctx.echo)
    shutil.rmtree(work / "work" / "data", ignore_errors=True)
    # rknn-toolkit2 leaves its intermediate graphs (check*.onnx) in the worker's folder.
    for leftover in (work / "work").glob("*/check*.onnx"):
        leftover.unlink(missing_ok=True)
    manifest = {
        "toolkit_version": version,
        "target_platform": chip.id,
        "precision": precision,
        "quantized_dtype": settings["quantized_dtype"],
        "optimization_level": opts.optimization_level,
        "rknn_file": RKNN_FILE,
        "rknn_sha256": sha256_file(work / RKNN_FILE),
        "inputs": [{"name": s.name, "shape": list(s.shape), "dtype": s.dtype} for s in input_specs],
        "outputs": output_names,
        "normalisation": norm.describe(),
    }
    return ConvertResult(
        status="built",
        toolchain=f"rknn-toolkit2 {version}",
        versions={"rknn-toolkit2": version},
        files={"model": RKNN_FILE, "layer_table": "rknn_build_output.txt"},
        verdict=verdict,
        sections=sections,
        details={
            "precision": precision,
            "quantized_dtype": settings["quantized_dtype"],
            "optimization_level": opts.optimization_level if opts.optimization_level is not None else 3,
            "normalisation": norm.describe(),
            "simulated_samples": result.get("simulated_samples"),
        },
        manifest=manifest,
        simulated=simulated,
        workarounds=result.get("workarounds", []),
    )


def _analysis_section(result: dict, work: Path, graph, echo) -> dict:
    """accuracy_analysis's per-layer cosines mapped to ONNX node names.

    A check after a good conversion: when it failed or wrote nothing, the section records why
    ({"status": "failed"}) and the .rknn is kept (the core's one failure policy).
    """
    from edgedeploy.targets.rknn.accuracy_table import parse_error_analysis, per_node_errors

    report_path = result.get("analysis_report")
    if result.get("analysis_error") or not report_path:
        reason = f"accuracy_analysis failed: {result['analysis_error']}" if result.get("analysis_error") else "accuracy_analysis wrote no error_analysis.txt"
        echo(f"analyse: {reason}; the artifact is kept (see build.log)")
        return {"status": "failed", "reason": reason}
    shutil.copyfile(report_path, work / "accuracy_analysis.txt")
    analysis = per_node_errors(parse_error_analysis(Path(report_path).read_text(errors="replace")), graph)
    analysis["status"] = "done"
    analysis["file"] = "accuracy_analysis.txt"
    analysis["samples"] = ANALYSIS_SAMPLES
    analysis["note"] = "cosine of the simulator's layer outputs vs the float model's: entire = accumulated from the input, single = this layer alone"
    worst = analysis.get("worst_single_cosine")
    if worst:
        echo(f"analyse: lowest single-layer cosine {worst['cosine']:.5f} at {worst['node']}")
    return analysis


def with_failing_node(exc: ToolchainFailed, graph) -> ToolchainFailed:
    """Name the node behind a tensor the toolkit's error quotes (`KeyError: '/gru/GRU_output_1'`).

    rknn-toolkit2 names tensors, not nodes, in its errors; the node producing the tensor is
    what the user can look up in the model. A failure that names a node already is returned as is.
    """
    if exc.node or not exc.final_line:
        return exc
    from edgedeploy.model.stats import node_names

    display = node_names(graph)
    producers = {out: (display[i], node.op_type) for i, node in enumerate(graph.node) for out in node.output if out}
    for quoted in re.findall(r"'([^']+)'", exc.final_line):
        if quoted in producers:
            name, op_type = producers[quoted]
            return exc.replace(node=name, op_type=op_type)
    return exc


def codegen(ctx, converted: ConvertResult) -> dict:
    """The board runners (runner/), with the measurement protocol and the baseline's inputs."""
    from edgedeploy.targets.rknn.codegen import generate_runners

    input_specs = model_input_specs(ctx.model)
    names = [s.name for s in input_specs]
    batch = int(input_specs[0].shape[0]) if input_specs and input_specs[0].shape else 1
    norm = InputNormalisation(input_specs, ctx.data.preprocess)
    return generate_runners(ctx, converted.manifest, ctx.data.evaluation, norm, names, batch)
