"""The built-in `onnx-cpu` runner: an ONNX model on ONNX Runtime's CPU provider, on any device.

It is the "before" of every Linux board (the ONNX model on the board's own CPU runtime, same
inputs as the compiled artifact), and the "after" of generic ONNX artifacts whose deployed form
is itself an ONNX model (`make_onnx_cpu_artifact`, e.g. an int8 QDQ model for ONNX Runtime).
Targets reuse it for their baseline:

    from edgedeploy.devices.runners import SessionSettings, onnx_cpu_runner_spec
    spec.baseline = onnx_cpu_runner_spec(stage_dir, artifact / "model.onnx", inputs_npz, model_info, "fp32", SessionSettings())

The runner is generated from templates/onnx_cpu/runner.py.j2 (header with edgedeploy's version
and the model hash) and reads everything model-specific from runner.json, so no model-supplied
name is ever pasted into code. It prints one `EDGEDEPLOY {json}` line (measure/protocol.py,
copied next to it as edgedeploy_protocol.py) and writes outputs.npz for the output check.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import numpy as np

from edgedeploy import __version__
from edgedeploy.errors import OptionError
from edgedeploy.measure.harness import SessionSettings  # noqa: F401 - re-exported: the settings of a device run

ONNX_CPU_RUNNER = "onnx-cpu"
ONNX_CPU_BACKEND = "ort-cpu"  # the backend name `edgedeploy bench` uses for the same runtime
PROTOCOL_REMOTE_NAME = "edgedeploy_protocol.py"
INPUTS_REMOTE_NAME = "inputs.npz"
OUTPUTS_REMOTE_NAME = "outputs.npz"


def protocol_file() -> Path:
    from edgedeploy.measure import protocol

    return Path(protocol.__file__)


def render_runner(model_sha256: str) -> str:
    import jinja2

    text = (resources.files("edgedeploy.templates") / "onnx_cpu" / "runner.py.j2").read_text(encoding="utf-8")
    env = jinja2.Environment(keep_trailing_newline=True, undefined=jinja2.StrictUndefined, autoescape=False)
    # The hash is checked to be hex: nothing model-controlled reaches the generated text.
    if not all(c in "0123456789abcdef" for c in model_sha256):
        raise ValueError("model_sha256 must be lowercase hex")
    return env.from_string(text).render(edgedeploy_version=__version__, model_sha256=model_sha256)


def model_batch(input_shapes: dict[str, list[int]]) -> int:
    """Items per inference: the leading dimension shared by the (pinned) inputs."""
    firsts = {int(shape[0]) for shape in input_shapes.values() if shape}
    return firsts.pop() if len(firsts) == 1 else 1


def onnx_cpu_runner_spec(
    stage_dir: Path,
    model_file: Path,
    inputs_file: Path,
    model_info: dict,
    precision: str,
    settings: SessionSettings,
    threads: int = 0,
    save_outputs: bool = True,
    label: str = "ONNX Runtime CPU",
):
    """Write the runner and its settings into stage_dir and return the RunnerSpec that runs them.

    `model_info` is the report's model block (name, sha256, input_shapes) of the SOURCE model:
    it is the scope's model for the before and the after alike, so the two stay comparable;
    the file actually run is recorded apart (`deployed_model`).
    """
    from edgedeploy.artifacts import sha256_file
    from edgedeploy.devices.base import RunnerSpec

    stage_dir = Path(stage_dir)
    stage_dir.mkdir(parents=True, exist_ok=True)
    input_shapes = {name: [int(d) for d in dims] for name, dims in model_info["input_shapes"].items()}
    batch = model_batch(input_shapes)
    runner_settings = {
        "model": "model.onnx",
        "inputs": INPUTS_REMOTE_NAME,
        "input_names": list(input_shapes),
        "batch": batch,
        "threads": int(threads),
        "warmup": settings.warmup,
        "min_iterations": settings.min_iterations,
        "min_duration_s": settings.min_duration_s,
        "max_iterations": settings.max_iterations,
        "keep_samples": settings.keep_samples,
        "save_outputs": save_outputs,
        "scope": {
            "model": {"name": model_info.get("name"), "sha256": model_info["sha256"], "format": "onnx"},
            "input_shapes": input_shapes,
            "batch": batch,
            "precision": precision,
            "backend": ONNX_CPU_BACKEND,
            "threads": int(threads),
            "deployed_model": {"file": Path(model_file).name, "sha256": sha256_file(Path(model_file))},
        },
        "backend_label": label,
    }
    (stage_dir / "runner.py").write_text(render_runner(model_info["sha256"]), encoding="utf-8")
    (stage_dir / "runner.json").write_text(json.dumps(runner_settings, indent=2) + "\n", encoding="utf-8")
    return RunnerSpec(
        files={
            "runner.py": stage_dir / "runner.py",
            "runner.json": stage_dir / "runner.json",
            PROTOCOL_REMOTE_NAME: protocol_file(),
            "model.onnx": Path(model_file),
            INPUTS_REMOTE_NAME: Path(inputs_file),
        },
        command=["{python}", "runner.py", "--settings", "runner.json"],
        result_files=[OUTPUTS_REMOTE_NAME] if save_outputs else [],
        timeout_s=settings.timeout_s,
        backend=ONNX_CPU_BACKEND,
    )


def write_inputs_npz(path: Path, inputs: dict[str, np.ndarray], labels: np.ndarray | None) -> None:
    """The inputs file runners read: arrays keyed by model input name (+ `labels`), the dataset .npz format."""
    arrays = dict(inputs)
    if labels is not None and "labels" not in arrays:
        arrays["labels"] = labels
    with open(path, "wb") as fh:
        np.savez(fh, **arrays)


def make_onnx_cpu_artifact(model_path: Path, out_root: Path, variant: str = "int8-qdq", calib: Path | None = None, force: bool = False, echo=lambda line: None) -> Path:
    """A generic ONNX artifact: the pinned reference model plus the deployed model for the onnx-cpu runner.

    variant `fp32`: the deployed model is the reference itself (measure then compares a runtime
    with itself: a check of the measurement, not a speed-up). `int8-qdq`: ONNX Runtime's own
    static quantiser (onnxruntime.quantization, QDQ format, int8) calibrated on `calib` (the
    bundled sample's calibration split when the model is the sample). The manifest names the
    runner, and has no chip: it runs on any device with Python, numpy and onnxruntime.
    """
    import onnx

    from edgedeploy.artifacts import ArtifactBuilder, artifact_dir, atomic_write_json
    from edgedeploy.report.schema import REPORT_SCHEMA
    from edgedeploy.datasets import load_dataset, model_input_specs
    from edgedeploy.model import load_model

    if variant not in ("fp32", "int8-qdq"):
        raise OptionError(f"Unknown onnx-cpu variant {variant!r}; use fp32 or int8-qdq.")
    model = load_model(model_path, {}, require_static=True)
    dest = artifact_dir(out_root, model.name, f"onnx-cpu-{variant}")
    input_shapes = {vi.name: [d.dim_value for d in vi.type.tensor_type.shape.dim] for vi in model.graph_inputs()}
    with ArtifactBuilder(dest, force, echo=echo) as art:
        pinned = art.path / "model.onnx"
        onnx.save(model.proto, str(pinned))
        deployed = pinned
        convert: dict = {"tool": "none (the reference model itself)"}
        if variant == "int8-qdq":
            from edgedeploy.sample import sample_calibration_path
            import onnxruntime
            from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

            calib_path = calib or sample_calibration_path()
            data = load_dataset(calib_path, model_input_specs(model), None, 128)
            batch = model_batch(input_shapes)

            class Reader(CalibrationDataReader):
                def __init__(self):
                    self._batches = iter(list(data.batches(batch)))

                def get_next(self):
                    return next(self._batches, None)

            deployed = art.path / "model.int8.onnx"
            echo(f"convert: quantising {model.name} to int8 (QDQ) with onnxruntime {onnxruntime.__version__} on {len(data)} samples of {calib_path}")
            quantize_static(str(pinned), str(deployed), Reader(), quant_format=QuantFormat.QDQ, activation_type=QuantType.QInt8, weight_type=QuantType.QInt8)
            convert = {"tool": f"onnxruntime.quantization {onnxruntime.__version__}", "format": "QDQ", "precision": "int8", "calibration": {"source": str(calib_path), "count": len(data)}}
        precision = "int8" if variant == "int8-qdq" else "fp32"
        target = {"target": "onnx-cpu", "chip": None, "chip_name": "any CPU with ONNX Runtime", "vendor": "ONNX Runtime", "accelerator": "none (CPU)"}
        model_block = {"name": model.name, "source": str(model.path), "sha256": model.sha256, "input_shapes": input_shapes}
        report = {
            "schema": REPORT_SCHEMA,
            "edgedeploy_version": __version__,
            "model": model_block,
            "target": target,
            "options": {"input_shapes": input_shapes, "precision": precision, "calib": str(calib) if calib else None, "eval": None},
            "convert": convert,
        }
        atomic_write_json(art.path / "report.json", report)
        art.manifest_fields.update(
            model=model_block,
            target=target,
            options=report["options"],
            runner={"kind": ONNX_CPU_RUNNER, "model": deployed.name, "precision": precision},
        )
    echo(f"build: wrote {dest}")
    return dest
