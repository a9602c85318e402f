"""The board runner of the eIQ targets: generated from templates/eiq/runner.py.j2, run by `measure`.

The runner is plain Python for the board (tflite_runtime or ai_edge_litert, numpy): it loads the
NPU's external delegate (i.MX 93: the Ethos-U delegate with Vela's compiled model; i.MX 8M Plus:
the VX delegate with the int8 model), falls back to the CPU with a warning when the delegate
cannot be loaded, and times invocations with measure/protocol.py copied beside it. Everything
that comes from the model (tensor names, shapes) goes into runner.json, never into the code.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np

from edgedeploy import __version__
from edgedeploy.artifacts import atomic_write_json, atomic_write_text
from edgedeploy.errors import ArtifactError

# The NPU delegates of NXP's BSP (i.MX Machine Learning User's Guide, LF 6.6): libraries in /usr/lib.
DELEGATES = {
    "imx93": {
        "name": "Ethos-U delegate",
        "path": "/usr/lib/libethosu_delegate.so",
        "backend": "ethos-u65 (Ethos-U delegate)",
        "options": {},
    },
    "imx8mp": {
        "name": "VX delegate",
        "path": "/usr/lib/libvx_delegate.so",
        "backend": "vip8000 npu (VX delegate)",
        "options": {},
    },
}
RUNNER_DIR = "runner"


def _template_text() -> str:
    from edgedeploy.targets.eiq import TARGET

    return (TARGET.templates_dir / "runner.py.j2").read_text()


def _protocol_source() -> Path:
    import edgedeploy.measure.protocol as protocol

    return Path(protocol.__file__)


def _io_settings(result: dict) -> tuple[list[dict], list[dict]]:
    """Inputs and outputs in the TFLite model's own order, with the ONNX names and layouts."""
    ops = result["int8_ops"]
    sig = ops["signatures"][0] if ops.get("signatures") else {"inputs": {}, "outputs": {}}
    key_of_tensor = {tensor: key for key, tensor in sig["inputs"].items()}
    onnx_by_key = {lay["key"]: name for name, lay in result["input_layouts"].items()}
    onnx_shapes = {spec["name"]: spec["shape"] for spec in result["onnx_inputs"]}
    inputs = []
    for tensor in ops["inputs"]:
        name = onnx_by_key.get(key_of_tensor.get(tensor["name"]), result["onnx_inputs"][len(inputs)]["name"])
        layout = result["input_layouts"][name]
        shape = [d if d else 1 for d in onnx_shapes[name]]
        inputs.append({"name": name, "onnx_shape": shape, "tflite_shape": tensor["shape"], "perm": layout["perm"], "batch": shape[0] if shape else 1})
    out_keys = sorted(sig["outputs"], key=lambda k: (len(k), k))
    onnx_out = {key: spec for key, spec in zip(out_keys, result["onnx_outputs"])}
    key_of_out = {tensor: key for key, tensor in sig["outputs"].items()}
    outputs = []
    for tensor in ops["outputs"]:
        spec = onnx_out.get(key_of_out.get(tensor["name"])) or result["onnx_outputs"][len(outputs)]
        want = [d if d else 1 for d in spec["shape"]]
        have = tensor["shape"]
        inverse = None
        if len(have) >= 3 and len(have) == len(want) and list(have[1:]) != list(want[1:]):
            rank = len(have)
            perm = [0] + list(range(2, rank)) + [1]
            if [want[p] for p in perm][1:] == list(have[1:]):
                inverse = [0, rank - 1] + list(range(1, rank - 1))
        outputs.append({"name": spec["name"], "onnx_shape": want, "tflite_shape": have, "inverse_perm": inverse})
    return inputs, outputs


def generate_runner(ctx, result: dict, evaluation, sample_count: int, simulated=None) -> dict:
    """Write runner/ (runner.py, protocol.py, runner.json, the models, sample inputs); return the report section."""
    from jinja2 import Environment, StrictUndefined

    chip = ctx.chip
    folder = ctx.workdir / RUNNER_DIR
    folder.mkdir(parents=True, exist_ok=True)
    delegate = DELEGATES[chip.id]
    inputs, outputs = _io_settings(result)
    for spec in inputs:
        if evaluation is not None and spec["name"] in evaluation.inputs:
            values = evaluation.inputs[spec["name"]]
            spec["low"] = float(np.min(values))
            spec["high"] = float(np.max(values))
    models = {"int8": "model_int8.tflite", "float32": "model_float32.tflite"}
    if chip.id == "imx93":
        models["int8_npu"] = "model_int8_vela.tflite"
    for file in models.values():
        shutil.copyfile(ctx.workdir / file, folder / file)
    settings = {
        "schema": "edgedeploy.eiq-runner/1",
        "edgedeploy_version": __version__,
        "chip": chip.id,
        "model_name": ctx.model.name,
        "model_sha256": ctx.model.sha256,
        "models": models,
        "delegate": delegate,
        "threads": 2,
        "inputs": inputs,
        "outputs": outputs,
    }
    atomic_write_json(folder / "runner.json", settings)
    env = Environment(undefined=StrictUndefined, keep_trailing_newline=True, autoescape=False)
    code = env.from_string(_template_text()).render(
        edgedeploy_version=__version__,
        model_sha256=ctx.model.sha256,
        chip_id=chip.id,
        chip_name=chip.name,
        accelerator=chip.accelerator,
        delegate_name=delegate["name"],
        delegate_path=delegate["path"],
    )
    compile(code, "runner.py", "exec")  # a template error must fail the build, not the board
    atomic_write_text(folder / "runner.py", code)
    shutil.copyfile(_protocol_source(), folder / "protocol.py")
    sample = None
    if evaluation is not None:
        # The dataset .npz format `edgedeploy measure` shares between the before and the after
        # runner: arrays keyed by model input name, plus `labels`.
        from edgedeploy.devices.runners import INPUTS_REMOTE_NAME, write_inputs_npz

        n = min(sample_count, len(evaluation))
        arrays = {k: np.ascontiguousarray(v[:n]).astype(np.float32) for k, v in evaluation.inputs.items()}
        write_inputs_npz(folder / INPUTS_REMOTE_NAME, arrays, None if evaluation.labels is None else evaluation.labels[:n])
        sample = INPUTS_REMOTE_NAME
        # What the board's outputs should be for those inputs: the host's ONNX Runtime fp32
        # reference, and the int8 model in the host's TFLite interpreter (keyed output0, output1, ...
        # in ONNX output order; runner.json names them).
        reference = ctx.reference.run({k: v[:n] for k, v in evaluation.inputs.items()}).outputs
        np.savez(folder / "expected_fp32.npz", **{f"output{i}": v for i, v in enumerate(reference.values())})
        if simulated is not None and simulated.outputs:
            np.savez(folder / "expected_int8.npz", **{f"output{i}": np.asarray(simulated.outputs[name])[:n] for i, name in enumerate(reference) if name in simulated.outputs})
    return {
        "folder": RUNNER_DIR,
        "entry": f"{RUNNER_DIR}/runner.py",
        "delegate": f"{delegate['name']} {delegate['path']}",
        "models": models,
        "sample_inputs": f"{RUNNER_DIR}/{sample}" if sample else None,
        "commands": {
            "after (int8 on the NPU)": "python3 runner.py",
            "before (float32 on the CPU)": "python3 runner.py --model float32 --delegate none",
        },
    }


def host_runner_spec(target, artifact: Path, manifest: dict, settings):
    """A host run (`measure --device local`): the artifact's TFLite models on this machine's TFLite interpreter, CPU only.

    After: model_int8.tflite; before: model_float32.tflite, both with `--delegate none` (the
    NPU delegates are the board's) in the eiq toolchain environment, whose ai-edge-litert is
    the interpreter. The two differ in precision only, so measure may divide them; neither is
    the NPU's latency (Vela's compiled model needs the Ethos-U, the VX delegate the VIP8000).
    """
    main = runner_spec(target, artifact, manifest, None)
    python = str(target.toolchain.require())
    for spec, model in ((main, "int8"), (main.baseline, "float32")):
        spec.command = [("none" if a == "auto" else a) for a in spec.command]
        spec.command += ["--warmup", str(settings.warmup), "--min-iterations", str(settings.min_iterations), "--min-duration", str(settings.min_duration_s)]
        spec.python = python
        spec.backend = "tflite-cpu"
        spec.timeout_s = settings.timeout_s
    # Vela's compiled model is copied only for the NPU: the CPU run reads the plain int8 model.
    return main


def runner_spec(target, artifact: Path, manifest: dict, device):
    """The RunnerSpec `measure` copies to `device`: int8 with the NPU delegate; baseline float32 on the CPU."""
    from edgedeploy.targets.base import RunnerSpec

    artifact = Path(artifact)
    chip = manifest.get("target", {}).get("chip")
    if device is not None and device.chip is not None and device.chip != chip:
        raise ArtifactError(f"{artifact} was built for {chip}, but device {device.name} is a {device.chip}; rebuild with --target {device.chip}.")
    folder = artifact / RUNNER_DIR
    settings_path = folder / "runner.json"
    if not settings_path.is_file():
        raise ArtifactError(f"{artifact} has no {RUNNER_DIR}/runner.json; rebuild it with this edgedeploy version.")
    settings = json.loads(settings_path.read_text())
    files = {name: folder / name for name in ("runner.py", "protocol.py", "runner.json")}
    for file in settings["models"].values():
        files[file] = folder / file
    sample = "inputs.npz" if (folder / "inputs.npz").is_file() else None
    output_name = "outputs.npz"

    def spec(model: str, delegate: str, backend: str) -> RunnerSpec:
        command = ["{python}", "runner.py", "--model", model, "--delegate", delegate]
        result_files = []
        wanted = {"runner.py", "protocol.py", "runner.json", settings["models"][model]}
        if model == "int8" and settings["models"].get("int8_npu"):
            wanted.add(settings["models"]["int8_npu"])
        run_files = {k: v for k, v in files.items() if k in wanted}
        if sample:
            run_files[sample] = folder / sample
            command += ["--inputs", sample, "--outputs", f"{model}_{output_name}"]
            result_files.append(f"{model}_{output_name}")
        return RunnerSpec(files=run_files, command=command, result_files=result_files, timeout_s=600.0, backend=backend)

    main = spec("int8", "auto", settings["delegate"]["backend"])
    main.baseline = spec("float32", "none", "cpu")
    return main


def codegen(ctx, converted) -> dict:
    """runner/: the generated Python runner for the board, with the models and sample inputs."""
    import shutil

    from edgedeploy.targets.eiq.convert import RUNNER_SAMPLE_COUNT

    section = generate_runner(ctx, converted.details["tflite_io"], ctx.data.evaluation, RUNNER_SAMPLE_COUNT, converted.simulated)
    ctx.echo(f"codegen: runner/runner.py ({section['delegate']})")
    shutil.rmtree(ctx.workdir / "work", ignore_errors=True)
    return section
