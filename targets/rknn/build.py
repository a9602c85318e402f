"""`edgedeploy build --target rk3588` (and the other RKNN chips): the RKNN target's build stages.

  audit      the rule table's placement of every node (audit.json)
  convert    rknn-toolkit2 in its environment: int8 (w8a8, calibrated) or fp16 -> model.rknn,
             with the input's mean/std folded into the model (the board feeds raw pixels)
  verdict    the toolkit's own layer table, beside the audit, every disagreement listed
             (toolchain_verdict.json); its cycle and memory figures are labelled estimates
  simulate   accuracy before/after on the host: ONNX Runtime fp32 vs the RKNN simulator, on the
             same evaluation inputs; with --analyse, accuracy_analysis per ONNX node
  codegen    the board runners (Python with rknn-toolkit-lite2, C with rknn_api) and the
             ONNX Runtime baseline runner, with the measurement protocol
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import numpy as np

from edgedeploy.arrays import read_arrays, write_arrays
from edgedeploy.artifacts import atomic_write_json, sha256_file
from edgedeploy.audit.confirm import compare
from edgedeploy.audit.engine import audit_model
from edgedeploy.datasets import Dataset, PreprocessSpec
from edgedeploy.errors import OptionError, ToolchainError
from edgedeploy.measure.accuracy import before_after, choose_metric

WORKER = Path(__file__).with_name("worker.py")
RKNN_FILE = "model.rknn"
# accuracy_analysis runs the float and quantised graphs on this many evaluation samples (one).
ANALYSIS_SAMPLES = 1
# Precisions an RKNN build accepts, and the rknn-toolkit2 settings they map to.
PRECISIONS = {"int8": {"quantize": True, "quantized_dtype": "w8a8"}, "fp16": {"quantize": False, "quantized_dtype": None}}


def _is_sample(model) -> bool:
    from edgedeploy.sample import sample_card

    return model.sha256 == sample_card().get("sha256")


def _sample_preprocess() -> PreprocessSpec:
    from edgedeploy.sample import sample_card

    p = sample_card()["preprocessing"]
    channels = {"grayscale": "GRAY", "gray": "GRAY"}.get(str(p.get("channels", "RGB")).lower(), str(p.get("channels", "RGB")).upper())
    return PreprocessSpec(
        size=tuple(p["size"]) if p.get("size") else None,
        scale=float(p.get("scale", 1 / 255)),
        mean=tuple(float(v) for v in p.get("mean", [0.0])),
        std=tuple(float(v) for v in p.get("std", [1.0])),
        layout=p.get("layout", "NCHW"),
        channels=channels,
    )


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
                width = s.shape[1] if len(s.shape) == 4 else 1
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
    def mean_values(self) -> list[list[float]]:
        return [p["mean"] for p in self.per_input]

    @property
    def std_values(self) -> list[list[float]]:
        return [p["std"] for p in self.per_input]

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


def _check_precision(chip, precision: str) -> None:
    if precision not in PRECISIONS:
        raise OptionError(f"RKNN NPUs compute in int8 or fp16, not {precision}; use --precision int8 or --precision fp16.")
    if precision == "fp16" and "fp16" not in chip.precisions:
        raise OptionError(f"The {chip.name} NPU has no fp16; build it with --precision int8.")


def _write_dataset(ds: Dataset, norm: InputNormalisation, folder: Path, names: list[str], batch: int) -> Path:
    """rknn-toolkit2's dataset file: one line per sample, the absolute .npy path of each input."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = []
    for k, b in enumerate(ds.batches(batch)):
        paths = []
        for j, name in enumerate(names):
            p = folder / f"s{k:05d}_i{j}.npy"
            np.save(p, norm.to_board_domain(name, b[name]))
            paths.append(str(p.resolve()))
        lines.append(" ".join(paths))
    dataset = folder / "dataset.txt"
    dataset.write_text("\n".join(lines) + "\n")
    return dataset


def _reference_outputs(model_path: Path, ds: Dataset, names: list[str], batch: int) -> dict[str, np.ndarray]:
    """ONNX Runtime fp32 on the CPU: the "before" of every accuracy figure."""
    import onnxruntime as ort

    sess = ort.InferenceSession(str(model_path), providers=["CPUExecutionProvider"])
    out_names = [o.name for o in sess.get_outputs()]
    collected: dict[str, list[np.ndarray]] = {n: [] for n in out_names}
    for b in ds.batches(batch):
        for n, v in zip(out_names, sess.run(out_names, {k: b[k] for k in names})):
            collected[n].append(np.asarray(v))
    return {n: np.concatenate(v, axis=0) for n, v in collected.items()}


def build(target, ctx) -> None:
    chip = ctx.chip
    opts = ctx.options.target_options
    precision = ctx.options.precision or "int8"
    _check_precision(chip, precision)
    settings = PRECISIONS[precision]
    work = ctx.workdir
    from edgedeploy.datasets import model_input_specs
    from edgedeploy.sample import sample_calibration_path, sample_eval_path

    input_specs = model_input_specs(ctx.model)
    names = [s.name for s in input_specs]
    batch = int(input_specs[0].shape[0]) if input_specs and input_specs[0].shape else 1
    output_names = [o.name for o in ctx.model.graph.output]

    # --- audit -------------------------------------------------------------------------------
    rules = target.rule_set(chip.id, precision=precision)
    audit = audit_model(ctx.model, rules, precision)
    atomic_write_json(work / "audit.json", audit.to_dict())
    ctx.report["audit"] = {
        "file": "audit.json",
        "chip": chip.id,
        "precision": precision,
        "toolchain_version": rules.toolchain_version,
        "summary": audit.summary(),
        "summary_line": audit.summary_line(),
        "source": rules.source,
    }
    ctx.echo(f"audit: {audit.summary_line()}")

    # --- data ----------------------------------------------------------------------------------
    sample = _is_sample(ctx.model)
    spec = ctx.options.preprocess or (_sample_preprocess() if sample else None)
    norm = InputNormalisation(input_specs, spec)
    calib = ctx.dataset("calib", sample_calibration_path() if sample else None) if settings["quantize"] else None
    if settings["quantize"] and calib is None:
        raise OptionError("An int8 RKNN build needs calibration data: pass --calib (an .npz, a folder of .npy, or of images with --preprocess).")
    eval_ds = ctx.dataset("eval", sample_eval_path() if sample else None)

    tmp = Path(tempfile.mkdtemp(prefix="edgedeploy-rknn-"))
    try:
        request = {
            "mode": "build",
            "chip": chip.id,
            "quantize": settings["quantize"],
            "quantized_dtype": settings["quantized_dtype"],
            "optimization_level": opts.get("optimization_level"),
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
            request["dataset"] = str(_write_dataset(calib, norm, tmp / "calib", names, batch))
            ctx.report["calibration"] = calib.describe()
        if eval_ds is not None:
            usable = (len(eval_ds) // batch) * batch
            eval_ds = eval_ds.take(usable)
            write_arrays(tmp / "eval_inputs.npz", {n: norm.to_board_domain(n, eval_ds.inputs[n]) for n in names})
            request["eval_inputs"] = str(tmp / "eval_inputs.npz")
            request["simulator_outputs"] = str(tmp / "simulator_outputs.npz")
            request["batch"] = batch
        if opts.get("analyse"):
            if eval_ds is None:
                raise OptionError("--analyse needs evaluation data (--eval) to run accuracy_analysis on.")
            paths = []
            for j, n in enumerate(names):
                p = tmp / f"analysis_i{j}.npy"
                np.save(p, norm.to_board_domain(n, eval_ds.inputs[n][:batch]))
                paths.append(str(p))
            request.update(analyse=True, analysis_inputs=paths, analysis_dir=str(tmp / "analysis"), analysis_output=str(tmp / "analysis_output.txt"))

        result = ctx.run_worker(WORKER, request, stage="convert")
        version = result.get("toolkit_version") or target.TOOLKIT_VERSION
        ctx.manifest["rknn"] = {
            "toolkit_version": version,
            "target_platform": chip.id,
            "precision": precision,
            "quantized_dtype": settings["quantized_dtype"],
            "optimization_level": opts.get("optimization_level"),
            "rknn_file": RKNN_FILE,
            "rknn_sha256": sha256_file(work / RKNN_FILE),
            "inputs": [{"name": s.name, "shape": list(s.shape), "dtype": s.dtype} for s in input_specs],
            "outputs": output_names,
            "normalisation": norm.describe(),
        }
        ctx.report["convert"] = {
            "rknn_file": RKNN_FILE,
            "size_bytes": result.get("rknn_size_bytes"),
            "toolkit_version": version,
            "precision": precision,
            "quantized_dtype": settings["quantized_dtype"],
            "optimization_level": opts.get("optimization_level") if opts.get("optimization_level") is not None else 3,
            "normalisation": norm.describe(),
        }
        ctx.echo(f"convert: {RKNN_FILE} ({result.get('rknn_size_bytes')} bytes, rknn-toolkit2 {version}, {precision})")

        # --- the toolkit's own verdict ---------------------------------------------------------
        from edgedeploy.targets.rknn.layer_table import verdict_from_output

        text = (work / "rknn_build_output.txt").read_text(errors="replace")
        verdict = verdict_from_output(text, ctx.model.graph, settings["quantize"], version)
        comparison = compare(audit, verdict)
        atomic_write_json(work / "toolchain_verdict.json", {"verdict": verdict.to_dict(), "comparison": comparison})
        estimates = {k: v for k, v in verdict.estimates.items() if k != "layers"}
        ctx.report["toolchain_verdict"] = {
            "file": "toolchain_verdict.json",
            "toolchain": verdict.toolchain,
            "version": verdict.version,
            "failed": verdict.failed,
            "agreement": comparison["agreement"],
            "compared": comparison["compared"],
            "disagreements": comparison["disagreements"],
            "not_reported": comparison["not_reported"],
            "unmapped_layers": verdict.unmapped,
            "estimates": estimates,
        }
        if comparison["agreement"] is not None:
            ctx.echo(f"verdict: the toolkit agrees with the audit on {comparison['agree']} of {comparison['compared']} nodes" + (f"; {len(comparison['disagreements'])} disagreements (see report)" if comparison["disagreements"] else ""))

        # --- accuracy before / after on the host -------------------------------------------------
        if eval_ds is not None:
            reference = _reference_outputs(ctx.model_path, eval_ds, names, batch)
            simulated = read_arrays(result["simulator_outputs"])
            for n in list(simulated):
                if n in reference and simulated[n].size == reference[n].size:
                    simulated[n] = simulated[n].reshape(reference[n].shape)
            labels = eval_ds.labels
            first = output_names[0]
            metric = choose_metric(ctx.options.metric, reference[first].shape, labels)
            section = before_after(metric, reference, simulated, labels, first)
            section["scope"] = {
                "model_sha256": ctx.model.sha256,
                "input_shapes": {s.name: list(s.shape) for s in input_specs},
                "samples": len(eval_ds),
                "data": eval_ds.source,
                "precision": precision,
                "before": "ONNX Runtime fp32, CPU (host)",
                "after": f"RKNN simulator (rknn-toolkit2 {version}, init_runtime(target=None)), {precision}, host",
                "device": "host",
            }
            ctx.report["accuracy"] = section
            if "before" in section:
                key = "top1" if "top1" in section["before"] else next(iter(section["before"]), None)
                if key:
                    ctx.echo(f"accuracy: {key} {section['before'][key]:.4f} (ONNX Runtime fp32) -> {section['after'][key]:.4f} (RKNN simulator, {precision}) on {len(eval_ds)} samples")
        else:
            ctx.report["accuracy"] = {"skipped": "no evaluation data: pass --eval to measure accuracy before and after"}

        # --- per-layer analysis -------------------------------------------------------------------
        if opts.get("analyse"):
            from edgedeploy.targets.rknn.accuracy_table import parse_error_analysis, per_node_errors

            report_path = result.get("analysis_report")
            if not report_path:
                raise ToolchainError("accuracy_analysis wrote no error_analysis.txt; see the build log.")
            shutil.copyfile(report_path, work / "accuracy_analysis.txt")
            analysis = per_node_errors(parse_error_analysis(Path(report_path).read_text(errors="replace")), ctx.model.graph)
            analysis["file"] = "accuracy_analysis.txt"
            analysis["samples"] = ANALYSIS_SAMPLES
            analysis["note"] = "cosine of the simulator's layer outputs vs the float model's: entire = accumulated from the input, single = this layer alone"
            ctx.report["accuracy_analysis"] = analysis
            worst = analysis.get("worst_single_cosine")
            if worst:
                ctx.echo(f"analyse: lowest single-layer cosine {worst['cosine']:.5f} at {worst['node']}")

        # --- board runners ---------------------------------------------------------------------------
        from edgedeploy.targets.rknn.codegen import generate_runners

        generated = generate_runners(ctx, eval_ds, norm, names, batch)
        ctx.report["codegen"] = generated
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        # rknn-toolkit2 leaves its intermediate graphs (check*.onnx) in the worker's folder.
        for scratch in (work / "work").glob("*/check*.onnx"):
            scratch.unlink(missing_ok=True)
