"""The RKNN target's conversion, declared for the core's skeleton (toolkit/pipeline/convert.py).

  build_request  stages the calibration set (rknn-toolkit2's dataset file), the evaluation
                 inputs (for the simulator, which needs the in-memory build and so runs in the
                 same worker) and, with --rknn-analyse, one sample for accuracy_analysis; the input's
                 mean/std are folded into the model (the board feeds raw pixels)
  read_result    the .rknn, the toolkit's own layer table as the verdict (its cycle and memory
                 figures are labelled estimates), the simulator's outputs, and the per-node
                 accuracy_analysis; a simulator or analysis that failed is recorded, the .rknn kept
  explain_failure names the node behind a tensor the toolkit's error quotes
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import numpy as np

from edgedeploy.arrays import read_arrays, write_arrays, write_npy_list
from edgedeploy.artifacts import sha256_file
from edgedeploy.datasets import Dataset, PreprocessSpec, fixed_batch_of, model_input_specs
from edgedeploy.errors import OptionError, ToolchainFailed
from edgedeploy.targets.base import ConvertRequest, ConvertResult, SimulationResult, WorkerResult, given_node_names

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


def model_io(ctx) -> tuple[list, list[str], int, InputNormalisation]:
    """(input specs, output names, batch, the input normalisation) of the model being built."""
    input_specs = model_input_specs(ctx.model)
    batch = fixed_batch_of(input_specs)
    return input_specs, [o.name for o in ctx.model.graph.output], batch, InputNormalisation(input_specs, ctx.data.preprocess)


def build_request(ctx) -> ConvertRequest:
    """The worker's "build" request: settings, the model with its pinned shapes, and the staged data."""
    if ctx.precision not in PRECISIONS:
        raise OptionError(f"RKNN NPUs compute in int8 or fp16, not {ctx.precision}; use --precision int8 or --precision fp16.")
    if ctx.options.analyse and ctx.data.evaluation is None:
        raise OptionError("--rknn-analyse needs evaluation data (--eval) to run accuracy_analysis on.")
    settings = PRECISIONS[ctx.precision]
    input_specs, output_names, batch, norm = model_io(ctx)
    names = [s.name for s in input_specs]
    payload = {
        "mode": "build",
        "chip": ctx.chip.id,
        "quantize": settings["quantize"],
        "quantized_dtype": settings["quantized_dtype"],
        "optimization_level": ctx.options.optimization_level,
        # None: rknn-toolkit2's defaults (quantized_algorithm 'normal', quantized_method 'channel').
        "quantized_algorithm": ctx.options.quantized_algorithm if settings["quantize"] else None,
        "quantized_method": ctx.options.quantized_method if settings["quantize"] else None,
        "float16_layers": float16_layers(ctx.options.float16_nodes, ctx.model.graph, settings["quantize"]),
        "case": {"model": str(ctx.model_path), "inputs": _inputs(input_specs), "mean_values": norm.mean_values, "std_values": norm.std_values},
        "rknn_path": str(ctx.workdir / RKNN_FILE),
        "build_output": str(ctx.workdir / "rknn_build_output.txt"),
        "input_names": names,
        "output_names": output_names,
        "data_formats": ["nchw" if len(s.shape) == 4 else None for s in input_specs],
    }
    payload.update(_stage_data(ctx, norm, names, batch, settings["quantize"]))
    announce = f"convert: rknn-toolkit2 builds {RKNN_FILE} for {ctx.chip.id} ({ctx.precision}) (log: build.log)"
    return ConvertRequest(WORKER, payload, announce=announce, keep={"input_specs": input_specs, "output_names": output_names, "norm": norm})


def float16_nodes(values, graph) -> list[str]:
    """`--rknn-float16-nodes` values -> ONNX node display names (targets.base.given_node_names)."""
    return given_node_names(values, graph, "--rknn-float16-nodes")


def float16_layers(values, graph, quantize: bool) -> list[dict]:
    """`--rknn-float16-nodes` -> per node, the tensors that may name its layer in rknn-toolkit2's
    quantization config, best first: its outputs, then those of the nodes it may be fused into (its
    only consumer, twice over: Conv -> BatchNormalization -> Relu). The worker keeps the first that
    the toolkit's graph has (hybrid quantisation names a layer by its output tensor)."""
    if not values:
        return []
    if not quantize:
        raise OptionError("--rknn-float16-nodes keeps nodes of an int8 build in float16; an fp16 build has every node in float16 already.")
    from edgedeploy.model.stats import node_names

    by_name = dict(zip(node_names(graph), graph.node))
    consumers: dict[str, list] = {}
    for node in graph.node:
        for tensor in node.input:
            consumers.setdefault(tensor, []).append(node)
    layers = []
    for name in float16_nodes(values, graph):
        node, candidates = by_name[name], []
        for _ in range(3):
            candidates += [t for t in node.output if t]
            following = consumers.get(node.output[0], []) if node.output else []
            if len(following) != 1:
                break
            node = following[0]
        layers.append({"node": name, "candidates": candidates})
    return layers


def _inputs(input_specs) -> list[dict]:
    return [{"name": s.name, "shape": list(s.shape), "dtype": s.dtype} for s in input_specs]


def _stage_data(ctx, norm: InputNormalisation, names: list[str], batch: int, quantize: bool) -> dict:
    """The data files of the request: calibration set, simulator inputs, accuracy_analysis inputs."""
    scratch = ctx.work("data")
    staged: dict = {}
    if quantize and ctx.data.calibration is not None:
        staged["dataset"] = str(_write_dataset(ctx.data.calibration, norm, scratch / "calib", names, batch))
    eval_ds = ctx.data.evaluation
    if eval_ds is None:
        return staged
    eval_ds = eval_ds.take((len(eval_ds) // batch) * batch)
    write_arrays(scratch / "eval_inputs.npz", {n: norm.to_board_domain(n, eval_ds.inputs[n]) for n in names}, whole=eval_ds.whole)
    staged.update(eval_inputs=str(scratch / "eval_inputs.npz"), simulator_outputs=str(scratch / "simulator_outputs.npz"), batch=batch)
    first = next(eval_ds.batches(batch), None)  # the first feed, a whole sample of any input held whole
    if ctx.options.analyse and first is not None:
        paths = []
        for j, n in enumerate(names):
            np.save(scratch / f"analysis_i{j}.npy", norm.to_board_domain(n, first[n]))
            paths.append(str(scratch / f"analysis_i{j}.npy"))
        staged.update(analyse=True, analysis_inputs=paths, analysis_dir=str(scratch / "analysis"), analysis_output=str(scratch / "analysis_output.txt"))
    return staged


def read_result(target, ctx, result: WorkerResult) -> ConvertResult:
    """The .rknn with its verdict (the layer table), the simulator's outputs and the analysis section."""
    from edgedeploy.targets.rknn.layer_table import verdict_from_output

    values, keep, work = result.values, result.request.keep, ctx.workdir
    settings = PRECISIONS[ctx.precision]
    version = values.get("toolkit_version") or target.TOOLKIT_VERSION
    ctx.echo(f"convert: {RKNN_FILE} ({values.get('rknn_size_bytes')} bytes, rknn-toolkit2 {version}, {ctx.precision})")
    text = (work / "rknn_build_output.txt").read_text(errors="replace")
    verdict = verdict_from_output(text, ctx.model.graph, settings["quantize"], version)
    simulated = _simulation(values, version, ctx.precision)
    sections = {"accuracy_analysis": _analysis_section(values, work, ctx.model.graph, ctx.echo)} if ctx.options.analyse else {}
    shutil.rmtree(work / "work" / "data", ignore_errors=True)
    shutil.rmtree(work / "hybrid", ignore_errors=True)  # hybrid quantisation's step1 files (worker.py)
    # rknn-toolkit2 leaves its intermediate graphs (check*.onnx) in the worker's folder.
    for leftover in (work / "work").glob("*/check*.onnx"):
        leftover.unlink(missing_ok=True)
    norm = keep["norm"]
    return ConvertResult(
        status="built",
        toolchain=f"rknn-toolkit2 {version}",
        versions={"rknn-toolkit2": version},
        files={"model": RKNN_FILE, "layer_table": "rknn_build_output.txt"},
        verdict=verdict,
        sections=sections,
        details={
            "precision": ctx.precision,
            "quantized_dtype": settings["quantized_dtype"],
            "optimization_level": ctx.options.optimization_level if ctx.options.optimization_level is not None else 3,
            "normalisation": norm.describe(),
            "simulated_samples": values.get("simulated_samples"),
            "float16_nodes": float16_nodes(ctx.options.float16_nodes, ctx.model.graph),
            "float16_layers": values.get("float16_layers"),  # the toolkit's layer each one is, in its config
        },
        manifest=_manifest(ctx, version, keep),
        simulated=simulated,
        workarounds=values.get("workarounds", []),
    )


def _manifest(ctx, version: str, keep: dict) -> dict:
    settings = PRECISIONS[ctx.precision]
    return {
        "toolkit_version": version,
        "target_platform": ctx.chip.id,
        "precision": ctx.precision,
        "quantized_dtype": settings["quantized_dtype"],
        "optimization_level": ctx.options.optimization_level,
        "float16_nodes": float16_nodes(ctx.options.float16_nodes, ctx.model.graph),
        "rknn_file": RKNN_FILE,
        "rknn_sha256": sha256_file(ctx.workdir / RKNN_FILE),
        "inputs": _inputs(keep["input_specs"]),
        "outputs": keep["output_names"],
        "normalisation": keep["norm"].describe(),
    }


def _simulation(values: dict, version: str, precision: str) -> SimulationResult | None:
    """The simulator's outputs (computed in the conversion worker), or its recorded failure."""
    if values.get("simulator_error"):
        return SimulationResult({}, backend=f"RKNN simulator (rknn-toolkit2 {version})", failed=f"the RKNN simulator failed: {values['simulator_error']}")
    if values.get("simulator_outputs"):
        outputs = read_arrays(values["simulator_outputs"])
        return SimulationResult(outputs, backend=f"RKNN simulator (rknn-toolkit2 {version}, init_runtime(target=None)), {precision}, host")
    return None


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
