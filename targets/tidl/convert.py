"""The TIDL target's conversion and its other stages for `edgedeploy build --target tda4vm|am62a|am68a|am69a`: the
compile configuration and script (with the audit's fallbacks as deny list), the compilation
itself where TI's tools are reachable (through the executor), its verdict, TI's host emulation
(simulate) and the board runner (codegen).

Artifact layout (below OUT/<model>/<chip>/):
  model.onnx                  the pinned model (run_build)
  tidl/compile_tidl.py        generated compile script (TI's ONNX Runtime compile path)
  tidl/compile_config.json    its configuration: TI's option names and values, the deny list
  tidl/calibration.npz        calibration frames, [frames, batch, ...] per input (keyed by index, with a
                              name table: edgedeploy.arrays; the compile script reads it so)
  tidl/eval_inputs.npz        evaluation frames for TI's host emulation (when eval data exists)
  tidl/model_tidl.onnx        the model TIDL compiles: the pinned model, node names made safe
                              for TI's deny list where needed (tidl/ alone is the compile project)
  tidl/artifacts/             what TIDL writes (allowedNode.txt, subgraph_*_tidl_net.bin, tempDir/...)
  tidl/compile.log            the compile's own output
  runner/run_tidl.py          the board runner; runner/protocol.py, runner/inputs.npz,
  runner/reference_outputs.npz  ONNX Runtime float32 outputs of the same inputs on this host

The compilation runs (1) through --tidl-compile-command (the user's TI container, a template
with {script}, {dir}, {config}, {soc}), else (2) with --tidl-python (default: $TIDL_PYTHON, else
python3) when TIDL_TOOLS_PATH names a folder; otherwise the build stops after generating and
prints the one command that compiles.
"""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path

import jinja2
import numpy as np
import onnx

from edgedeploy import __version__
from edgedeploy.arrays import read_arrays, write_arrays
from edgedeploy.artifacts import atomic_write_json, atomic_write_text
from edgedeploy.audit.rules import Placement
from edgedeploy.errors import NotAvailableYet, OptionError, ToolchainError, ToolchainMissing
from edgedeploy.model import named_copy, node_names
from edgedeploy.targets.base import ConvertResult, SimulationResult
from edgedeploy.targets.tidl import artifact_parser
from edgedeploy.targets.tidl.compile_config import (
    DEFAULT_ACCURACY_LEVEL,
    DEFAULT_CALIBRATION_FRAMES,
    DEFAULT_CALIBRATION_ITERATIONS,
    DEFAULT_MAX_NUM_SUBGRAPHS,
    TI_SOC,
    CompileSettings,
    compile_config,
    deny_list_from_audit,
    tensor_bits,
)
from edgedeploy.targets.tidl.rules import DEFAULT_TIDL_VERSION

TIDL_DIR = "tidl"
RUNNER_DIR = "runner"
COMPILE_SCRIPT = "compile_tidl.py"
COMPILE_CONFIG = "compile_config.json"
COMPILE_LOG = "compile.log"
COMPILE_RESULT = "compile_result.json"
CALIBRATION_FILE = "calibration.npz"
EVAL_INPUTS_FILE = "eval_inputs.npz"
EMULATION_OUTPUTS = "emulation_outputs.npz"
ARTIFACTS_FOLDER = "artifacts"
TIDL_MODEL_FILE = "model_tidl.onnx"
RUNNER_SCRIPT = "run_tidl.py"
RUNNER_INPUTS = "inputs.npz"
REFERENCE_OUTPUTS = "reference_outputs.npz"
PROTOCOL_FILE = "protocol.py"
# Exit codes of the generated compile script (see the template).
EXIT_NO_TIDL_RUNTIME = 3
EXIT_BAD_ENVIRONMENT = 4
EXIT_NO_ARTIFACTS = 5


def _templates() -> jinja2.Environment:
    from edgedeploy.targets.tidl import TARGET

    folder = TARGET.templates_dir
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(folder)),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
    )


def render(template: str, **values) -> str:
    return _templates().get_template(template).render(**values)


def protocol_source() -> str:
    """measure/protocol.py verbatim (stdlib only), copied next to the runner."""
    from edgedeploy.measure import protocol

    return Path(protocol.__file__).read_text()


def _input_batch(model) -> int:
    vi = model.graph_inputs()[0]
    dims = vi.type.tensor_type.shape.dim
    return int(dims[0].dim_value) if dims and dims[0].dim_value > 0 else 1


def _frames(dataset, batch: int, count: int) -> dict[str, np.ndarray]:
    """The first `count` frames of `batch` samples: {input: [count, batch, ...]}."""
    return {name: np.ascontiguousarray(values[: count * batch].reshape((count, batch) + values.shape[1:])) for name, values in dataset.inputs.items()}


def _settings(options) -> CompileSettings:
    return CompileSettings(
        tensor_bits=tensor_bits(None),
        calibration_frames=int(options.tidl_calibration_frames or DEFAULT_CALIBRATION_FRAMES),
        calibration_iterations=int(options.tidl_calibration_iterations or DEFAULT_CALIBRATION_ITERATIONS),
        max_num_subgraphs=int(options.tidl_max_subgraphs or DEFAULT_MAX_NUM_SUBGRAPHS),
        accuracy_level=int(options.tidl_accuracy_level if options.tidl_accuracy_level is not None else DEFAULT_ACCURACY_LEVEL),
    )


def compile_plan(options) -> dict:
    """How the compile will run: 'command' (user template), 'local' (TIDL_TOOLS_PATH), or 'generate'."""
    command = options.tidl_compile_command
    if command:
        return {"how": "command", "template": command}
    tools = os.environ.get("TIDL_TOOLS_PATH")
    if tools and Path(tools).is_dir():
        python = options.tidl_python or os.environ.get("TIDL_PYTHON") or "python3"
        return {"how": "local", "python": python, "tidl_tools_path": tools}
    return {"how": "generate", "reason": "TIDL_TOOLS_PATH is not set" if not tools else f"TIDL_TOOLS_PATH={tools} is not a folder"}


def manual_command(tidl_dir: Path, soc: str) -> str:
    """The one command that compiles the generated project where TI's tools are."""
    return (
        f"cd {shlex.quote(str(tidl_dir))} && SOC={soc} TIDL_TOOLS_PATH=<edgeai-tidl-tools>/tools/{soc.upper()}/tidl_tools "
        f"python3 {COMPILE_SCRIPT}"
    )


def convert(target, ctx) -> ConvertResult:
    """The TIDL compile project in tidl/, compiled where TI's tools are reachable (module docstring).

    TI's tools are an external command (a compile script in TI's Python or container), not an
    edgedeploy worker: this target converts itself (build_request is None) through the executor.
    """
    soc = TI_SOC[ctx.chip.id]
    settings, version = _settings_for(ctx)
    tidl_dir = ctx.workdir / TIDL_DIR
    tidl_dir.mkdir()
    deny, model_for_tidl = _model_for_tidl(ctx, tidl_dir)
    eval_frames = _stage_frames(ctx, tidl_dir, settings)
    config = _write_compile_project(ctx, tidl_dir, settings, deny, eval_frames, version)
    section = _tidl_section(soc, version, settings, config, eval_frames)
    precision = "int16" if settings.tensor_bits == 16 else "int8"
    manifest = {"soc": soc, "tidl_version": version, "tensor_bits": settings.tensor_bits, "model": TIDL_MODEL_FILE, "precision": precision}
    files = {"project": TIDL_DIR, "compile_script": f"{TIDL_DIR}/{COMPILE_SCRIPT}", "model": f"{TIDL_DIR}/{TIDL_MODEL_FILE}"}
    # Compile where TI's tools are reachable; otherwise say how.
    plan = compile_plan(ctx.options)
    if plan["how"] == "generate":
        command = manual_command(ctx.final_dir / TIDL_DIR, soc)
        ctx.echo(f"convert: TI's tools are not here ({plan['reason']}); generated the compile project. Compile with:\n    {command}")
        manifest["compiled"] = False
        return ConvertResult(
            status="generated",
            toolchain=f"TIDL {version} (not run here)",
            files=files,
            sections={"tidl": section},
            details={"command": command},
            manifest=manifest,
            reason=f"TI's tools are not here ({plan['reason']}); compile with: {command}",
        )
    result = run_compile(ctx.executor, tidl_dir, plan, soc, ctx.echo)
    verdict, compiled = _compiled_verdict(ctx, tidl_dir, model_for_tidl, version, deny, section, result)
    manifest["compiled"] = True
    return ConvertResult(
        status="built",
        toolchain=f"TIDL {version}",
        versions={"tidl": version},
        files={**files, "artifacts": f"{TIDL_DIR}/{ARTIFACTS_FOLDER}"},
        verdict=verdict,
        sections={"tidl": section, "tidl_layers": artifact_parser.layer_table(compiled)},
        details={"how": plan["how"], "seconds": result["seconds"], "artifacts": compiled.summary()},
        manifest=manifest,
    )


def _settings_for(ctx) -> tuple[CompileSettings, str]:
    """TIDL's compile settings from the options and precision (checked), and the TIDL release."""
    settings = _settings(ctx.options)
    settings.tensor_bits = tensor_bits(ctx.precision)
    settings.check()
    return settings, str(ctx.options.tidl_version or DEFAULT_TIDL_VERSION)


def _model_for_tidl(ctx, tidl_dir: Path):
    """(the deny list, the model TIDL compiles), the model saved as tidl/model_tidl.onnx.

    Deny list: the audited fallbacks stay on the Arm cores whatever TIDL's importer thinks. The
    model TIDL compiles lives inside tidl/, so that folder alone is the compile project a TI
    container needs; it is the pinned model, with unsafe node names renamed if any.
    """
    deny = None if ctx.options.tidl_no_deny else deny_list_from_audit(ctx.audit, ctx.model.proto)
    if deny is not None and deny.nodes:
        ctx.echo(f"convert: deny list keeps {len(deny.nodes)} node(s) on the Arm cores: {', '.join(d.node for d in deny.nodes[:5])}{' ...' if len(deny.nodes) > 5 else ''}")
    if deny is not None and deny.renamed:
        # Only the unsafe names change; a nameless node stays nameless (TIDL knows it by its output).
        model_for_tidl = named_copy(ctx.model.proto, [deny.renamed.get(display, node.name) for display, node in zip(node_names(ctx.model.graph), ctx.model.graph.node)])
    else:
        model_for_tidl = ctx.model.proto
    onnx.save(model_for_tidl, str(tidl_dir / TIDL_MODEL_FILE))
    return deny, model_for_tidl


def _stage_frames(ctx, tidl_dir: Path, settings: CompileSettings) -> int:
    """Calibration frames for TIDL, evaluation frames for emulation (edgedeploy.arrays); the evaluation frames' count."""
    batch = _input_batch(ctx.model)
    calib = ctx.data.calibration
    if calib.whole:
        # Its frames are [frames, batch, ...] throughout (calibration, emulation, runner): refused
        # rather than cut on the state's own leading axis.
        raise NotAvailableYet(
            f"Input(s) {', '.join(repr(n) for n in sorted(calib.whole))} take whole samples (their leading axis is not a batch axis); "
            f"the TIDL target does not feed such inputs yet (docs/cli.md, 'Data for --calib and --eval')."
        )
    available = len(calib) // batch
    if available < 1:
        raise OptionError(f"The calibration data has {len(calib)} samples, fewer than one batch of {batch}.")
    if settings.calibration_frames > available:
        ctx.echo(f"convert: only {available} calibration frames available; using {available} instead of {settings.calibration_frames}")
        settings.calibration_frames = available
    write_arrays(tidl_dir / CALIBRATION_FILE, _frames(calib, batch, settings.calibration_frames))
    eval_frames = _eval_frames(ctx, batch)
    if eval_frames:
        write_arrays(tidl_dir / EVAL_INPUTS_FILE, _frames(ctx.data.evaluation, batch, eval_frames))
    return eval_frames


def _write_compile_project(ctx, tidl_dir: Path, settings: CompileSettings, deny, eval_frames: int, version: str) -> dict:
    """tidl/compile_config.json and the generated tidl/compile_tidl.py; the configuration."""
    soc = TI_SOC[ctx.chip.id]
    config = compile_config(
        chip=ctx.chip.id,
        model_file=TIDL_MODEL_FILE,
        calibration_file=CALIBRATION_FILE,
        eval_file=EVAL_INPUTS_FILE if eval_frames else None,
        artifacts_folder=ARTIFACTS_FOLDER,
        settings=settings,
        deny=deny,
        model_sha256=ctx.model.sha256,
        edgedeploy_version=__version__,
        tidl_version=version,
    )
    atomic_write_json(tidl_dir / COMPILE_CONFIG, config)
    header = _header(ctx, soc, version)
    atomic_write_text(tidl_dir / COMPILE_SCRIPT, render("compile_tidl.py.j2", script_name=COMPILE_SCRIPT, config_name=COMPILE_CONFIG, **header))
    (tidl_dir / COMPILE_SCRIPT).chmod(0o755)
    return config


def _tidl_section(soc: str, version: str, settings: CompileSettings, config: dict, eval_frames: int) -> dict:
    return {
        "soc": soc,
        "tidl_version": version,
        "tensor_bits": settings.tensor_bits,
        "calibration_frames": settings.calibration_frames,
        "calibration_iterations": settings.calibration_iterations,
        "max_num_subgraphs": settings.max_num_subgraphs,
        "accuracy_level": settings.accuracy_level,
        "provider_options": config["provider_options"],
        "deny_list": config["denied_nodes"],
        "renamed_nodes": config["renamed_nodes"],
        "model_compiled": TIDL_MODEL_FILE,
        "eval_frames": eval_frames,
        "graph_optimization_level": config["graph_optimization_level"],
    }


def _compiled_verdict(ctx, tidl_dir: Path, model_for_tidl, version: str, deny, section: dict, result: dict):
    """(TIDL's verdict under the user's node names, what it compiled); denied nodes it offloaded anyway are recorded."""
    verdict, compiled = read_verdict(tidl_dir, model_for_tidl, version, log_text=result["log_text"])
    # TIDL compiled the copy with safe names; report under the names the audit (and the user) use.
    for original, safe in (deny.renamed.items() if deny is not None else ()):
        if safe in verdict.nodes:
            verdict.nodes[original] = verdict.nodes.pop(safe)
    leaked = [d.node for d in (deny.nodes if deny else []) if verdict.nodes.get(d.node) and verdict.nodes[d.node].placement is Placement.ACCELERATOR]
    if leaked:
        section["deny_list_ignored"] = leaked
        ctx.echo(f"convert: warning: TIDL offloaded denied node(s) anyway: {', '.join(leaked)}")
    ctx.echo(f"convert: TIDL made {len(compiled.subgraphs)} subgraph(s), {sum(len(s) for s in compiled.subgraphs)} of {len(model_for_tidl.graph.node)} nodes on the C7x/MMA")
    return verdict, compiled


def _eval_frames(ctx, batch: int) -> int:
    """How many evaluation frames TI's (slow) host emulation runs: at most --tidl-emulation-frames."""
    evaluation = ctx.data.evaluation
    if evaluation is None:
        return 0
    return min(len(evaluation) // batch, int(ctx.options.tidl_emulation_frames))


def _header(ctx, soc: str, version: str) -> dict:
    return {"edgedeploy_version": __version__, "model_sha256": ctx.model.sha256, "chip": ctx.chip.id, "soc": soc, "tidl_version": version}


def simulate(ctx, converted: ConvertResult, evaluation) -> SimulationResult:
    """TI's host emulation of the compiled model (bit-true to the C7x/MMA per TI), run by the compile."""
    emulated = ctx.workdir / TIDL_DIR / EMULATION_OUTPUTS
    backend = "TI host emulation of the compiled TIDL model (bit-true to the C7x/MMA per TI), this host"
    if not emulated.is_file():
        return SimulationResult({}, backend, failed="the TIDL compile wrote no emulation outputs (see tidl/compile.log)")
    # [frames, batch, ...] -> samples along axis 0, like the reference.
    outputs = {k: v.reshape((-1,) + v.shape[2:]) for k, v in read_arrays(emulated).items()}
    return SimulationResult(outputs, backend)


def codegen(ctx, converted: ConvertResult) -> dict:
    """runner/: the board runner (ONNX Runtime + TIDL provider), its inputs and expected outputs."""
    runner_dir = ctx.workdir / RUNNER_DIR
    runner_dir.mkdir()
    batch = _input_batch(ctx.model)
    section = converted.sections["tidl"]
    # The runner times real inputs: the emulated evaluation frames, else the first calibration frame.
    frames_source = ctx.data.evaluation if section["eval_frames"] else ctx.data.calibration
    frames = _frames(frames_source, batch, section["eval_frames"] or 1)
    np.savez(runner_dir / RUNNER_INPUTS, **frames)
    flat = {k: v.reshape((-1,) + v.shape[2:]) for k, v in frames.items()}
    reference = ctx.reference.run(flat).outputs
    np.savez(runner_dir / REFERENCE_OUTPUTS, **{k: v.reshape((-1, batch) + v.shape[1:]) for k, v in reference.items()})
    build_info = {
        "model_sha256": ctx.model.sha256,
        "chip": ctx.chip.id,
        "precision": converted.manifest["precision"],
        "model": "model.onnx",
        "artifacts": "tidl_artifacts",
        "inputs": RUNNER_INPUTS,
        "graph_optimization_level": section["graph_optimization_level"],
    }
    header = _header(ctx, section["soc"], section["tidl_version"])
    atomic_write_text(runner_dir / RUNNER_SCRIPT, render("run_tidl.py.j2", build_json=json.dumps(build_info, sort_keys=True), **header))
    (runner_dir / RUNNER_SCRIPT).chmod(0o755)
    atomic_write_text(runner_dir / PROTOCOL_FILE, protocol_source())
    return {"kind": "board runner", "folder": RUNNER_DIR, "files": sorted(p.relative_to(ctx.workdir).as_posix() for p in runner_dir.iterdir())}


def run_compile(executor, tidl_dir: Path, plan: dict, soc: str, echo) -> dict:
    """Run the generated script through the executor, its output into tidl/compile.log; one sentence on failure."""
    env = dict(os.environ)
    env.setdefault("SOC", soc)
    script = tidl_dir / COMPILE_SCRIPT
    if plan["how"] == "command":
        values = {"script": script, "dir": tidl_dir, "config": tidl_dir / COMPILE_CONFIG, "soc": soc}
        try:
            command = plan["template"].format(**{k: shlex.quote(str(v)) for k, v in values.items()})
        except (KeyError, IndexError, ValueError) as exc:
            raise OptionError(
                f"--tidl-compile-command: unknown placeholder {exc}; use {{script}}, {{dir}}, {{config}} and {{soc}}."
            ) from exc
        argv = ["/bin/sh", "-c", command]
        shown = command
    else:
        tools = plan["tidl_tools_path"]
        # What TI's setup_env.sh adds, in case the user did not source it.
        extra = [tools, str(Path(tools) / "osrt_deps")]
        env["LD_LIBRARY_PATH"] = os.pathsep.join([p for p in [env.get("LD_LIBRARY_PATH", "")] + extra if p])
        argv = [plan["python"], str(script)]
        shown = " ".join(shlex.quote(a) for a in argv)
    echo(f"convert: compiling with TIDL: {shown} (log: {TIDL_DIR}/{COMPILE_LOG})")
    try:
        outcome = executor.command(argv, cwd=tidl_dir, label="the TIDL compile", env=env, log_path=tidl_dir / COMPILE_LOG)
    except ToolchainMissing as exc:
        raise ToolchainMissing(f"Cannot start the TIDL compile ({argv[0]}); set --tidl-python or TIDL_PYTHON to the Python that has TI's onnxruntime.") from exc
    log_text = outcome.log_text
    if outcome.returncode != 0:
        error_line = next((line[len("error: "):] for line in reversed(log_text.splitlines()) if line.startswith("error: ")), None)
        if outcome.returncode == EXIT_NO_TIDL_RUNTIME:
            raise ToolchainMissing(f"TI's onnxruntime with the TIDL providers is not usable here: {error_line or 'see the log'}")
        if outcome.returncode == EXIT_BAD_ENVIRONMENT and error_line:
            raise ToolchainError(f"The TIDL environment is not set up for {soc}: {error_line}")
        raise ToolchainError(f"The TIDL compile failed (exit {outcome.returncode}): {error_line or outcome.error_line or 'no message'} (full log: {TIDL_DIR}/{COMPILE_LOG}).")
    echo(f"convert: TIDL compile done in {outcome.seconds:.1f} s")
    return {"seconds": outcome.seconds, "log_text": log_text}


def read_verdict(tidl_dir: Path, model: onnx.ModelProto, version: str, log_text: str | None = None):
    """Parse tidl/artifacts (after a compile, by edgedeploy or by hand) into a ToolchainVerdict."""
    if log_text is None and (tidl_dir / COMPILE_LOG).is_file():
        log_text = (tidl_dir / COMPILE_LOG).read_text(errors="replace")
    compiled = artifact_parser.read_compiled_artifacts(tidl_dir / ARTIFACTS_FOLDER, log_text)
    return artifact_parser.verdict_from_artifacts(compiled, model, version), compiled


def runner_files(artifact: Path) -> dict[str, Path]:
    """Remote name -> local file for one board session: the runner, the model TIDL compiled, its artifacts."""
    artifact = Path(artifact)
    runner = artifact / RUNNER_DIR
    tidl = artifact / TIDL_DIR
    model = tidl / TIDL_MODEL_FILE
    files = {
        RUNNER_SCRIPT: runner / RUNNER_SCRIPT,
        PROTOCOL_FILE: runner / PROTOCOL_FILE,
        RUNNER_INPUTS: runner / RUNNER_INPUTS,
        "model.onnx": model,
    }
    compiled = tidl / ARTIFACTS_FOLDER
    if compiled.is_dir():
        # Inference needs the network/IO binaries, allowedNode.txt and onnxrtMetaData.txt; tempDir
        # (calibration data, visualisations) stays on the host.
        for path in sorted(compiled.iterdir()):
            if path.is_file():
                files[f"tidl_artifacts/{path.name}"] = path
    return files
