"""`edgedeploy build --target tda4vm|am62a|am68a|am69a`: audit, TIDL compile configuration and script,
the compilation itself where TI's tools are reachable, its verdict, and the board runner.

Artifact layout (below OUT/<model>/<chip>/):
  model.onnx                  the pinned model (run_build)
  tidl/compile_tidl.py        generated compile script (TI's ONNX Runtime compile path)
  tidl/compile_config.json    its configuration: TI's option names and values, the deny list
  tidl/calibration.npz        calibration frames, one [batch, ...] array per frame and input
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
import signal
import subprocess
import time
from importlib import resources
from pathlib import Path

import jinja2
import numpy as np
import onnx

from edgedeploy import __version__
from edgedeploy.artifacts import artifact_dir, atomic_write_json, atomic_write_text
from edgedeploy.audit import audit_model
from edgedeploy.audit.confirm import compare
from edgedeploy.audit.rules import Placement
from edgedeploy.errors import OptionError, ToolchainError, ToolchainMissing
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
    tidl_model,
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
# TI's host emulation is slow; the emulated accuracy uses at most this many evaluation frames
# unless --eval-count asks for more.
DEFAULT_EVAL_FRAMES = 200
# Exit codes of the generated compile script (see the template).
EXIT_NO_TIDL_RUNTIME = 3
EXIT_BAD_ENVIRONMENT = 4
EXIT_NO_ARTIFACTS = 5
LOG_TAIL_LINES = 12


def _templates() -> jinja2.Environment:
    folder = Path(str(resources.files("edgedeploy.templates"))) / "tidl"
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


def _sample_default(ctx, which: str) -> Path | None:
    """The bundled sample's calib/eval split, when the model is the bundled sample."""
    from edgedeploy.sample import sample_calibration_path, sample_eval_path, sample_model_path

    if Path(ctx.model.path).resolve() != sample_model_path().resolve():
        return None
    return sample_calibration_path() if which == "calib" else sample_eval_path()


def _settings(ctx) -> tuple[CompileSettings, dict]:
    opts = ctx.options.target_options
    settings = CompileSettings(
        tensor_bits=tensor_bits(ctx.options.precision),
        calibration_frames=int(opts.get("tidl_calibration_frames") or DEFAULT_CALIBRATION_FRAMES),
        calibration_iterations=int(opts.get("tidl_calibration_iterations") or DEFAULT_CALIBRATION_ITERATIONS),
        max_num_subgraphs=int(opts.get("tidl_max_subgraphs") or DEFAULT_MAX_NUM_SUBGRAPHS),
        accuracy_level=int(opts.get("tidl_accuracy_level", DEFAULT_ACCURACY_LEVEL)),
    )
    settings.check()
    return settings, opts


def compile_plan(ctx_options: dict) -> dict:
    """How the compile will run: 'command' (user template), 'local' (TIDL_TOOLS_PATH), or 'generate'."""
    command = ctx_options.get("tidl_compile_command")
    if command:
        return {"how": "command", "template": command}
    tools = os.environ.get("TIDL_TOOLS_PATH")
    if tools and Path(tools).is_dir():
        python = ctx_options.get("tidl_python") or os.environ.get("TIDL_PYTHON") or "python3"
        return {"how": "local", "python": python, "tidl_tools_path": tools}
    return {"how": "generate", "reason": "TIDL_TOOLS_PATH is not set" if not tools else f"TIDL_TOOLS_PATH={tools} is not a folder"}


def manual_command(tidl_dir: Path, soc: str) -> str:
    """The one command that compiles the generated project where TI's tools are."""
    return (
        f"cd {shlex.quote(str(tidl_dir))} && SOC={soc} TIDL_TOOLS_PATH=<edgeai-tidl-tools>/tools/{soc.upper()}/tidl_tools "
        f"python3 {COMPILE_SCRIPT}"
    )


def build(target, ctx) -> None:
    chip = ctx.chip.id
    soc = TI_SOC[chip]
    settings, opts = _settings(ctx)
    precision = "int16" if settings.tensor_bits == 16 else "int8"
    version = str(opts.get("tidl_version") or DEFAULT_TIDL_VERSION)
    work = ctx.workdir
    tidl_dir = work / TIDL_DIR
    runner_dir = work / RUNNER_DIR
    tidl_dir.mkdir()
    runner_dir.mkdir()

    # 1. Audit: where the rules put every node.
    audit = audit_model(ctx.model, target.rule_set(chip, tidl_version=version), precision)
    ctx.echo(f"audit: {audit.summary_line()}")
    ctx.report["audit"] = audit.to_dict()

    # 2. Deny list: the audited fallbacks stay on the Arm cores whatever TIDL's importer thinks.
    deny = None if opts.get("tidl_no_deny") else deny_list_from_audit(audit, ctx.model.proto)
    if deny is not None and deny.nodes:
        ctx.echo(f"convert: deny list keeps {len(deny.nodes)} node(s) on the Arm cores: {', '.join(d.node for d in deny.nodes[:5])}{' ...' if len(deny.nodes) > 5 else ''}")
    # The model TIDL compiles lives inside tidl/, so that folder alone is the compile project a
    # TI container needs; it is the pinned model, with unsafe node names renamed if any.
    renamed_model = tidl_model(ctx.model.proto, deny) if deny is not None else None
    model_for_tidl = renamed_model if renamed_model is not None else ctx.model.proto
    model_file_rel = TIDL_MODEL_FILE
    onnx.save(model_for_tidl, str(tidl_dir / TIDL_MODEL_FILE))

    # 3. Data: calibration frames for TIDL, evaluation frames for emulation and the runner.
    batch = _input_batch(ctx.model)
    calib = ctx.dataset("calib", _sample_default(ctx, "calib"))
    if calib is None:
        raise OptionError("TIDL calibrates on real inputs: give --calib DATA (an .npz, .npy folder or image folder with --preprocess).")
    available = len(calib) // batch
    if available < 1:
        raise OptionError(f"The calibration data has {len(calib)} samples, fewer than one batch of {batch}.")
    if settings.calibration_frames > available:
        ctx.echo(f"convert: only {available} calibration frames available; using {available} instead of {settings.calibration_frames}")
        settings.calibration_frames = available
    np.savez(tidl_dir / CALIBRATION_FILE, **_frames(calib, batch, settings.calibration_frames))

    evaluation = ctx.dataset("eval", _sample_default(ctx, "eval"))
    eval_frames = 0
    labels = None
    if evaluation is not None:
        eval_frames = len(evaluation) // batch
        if ctx.options.eval_count is None:
            eval_frames = min(eval_frames, DEFAULT_EVAL_FRAMES)
    if eval_frames:
        frames = _frames(evaluation, batch, eval_frames)
        np.savez(tidl_dir / EVAL_INPUTS_FILE, **frames)
        np.savez(runner_dir / RUNNER_INPUTS, **frames)
        if evaluation.labels is not None:
            labels = evaluation.labels[: eval_frames * batch]
    else:
        # The runner still needs one input to time: the first calibration frame.
        np.savez(runner_dir / RUNNER_INPUTS, **_frames(calib, batch, 1))
    reference = _reference_outputs(ctx.model_path, runner_dir / RUNNER_INPUTS)
    np.savez(runner_dir / REFERENCE_OUTPUTS, **reference)

    # 4. The compile configuration and script.
    config = compile_config(
        chip=chip,
        model_file=model_file_rel,
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
    header = {"edgedeploy_version": __version__, "model_sha256": ctx.model.sha256, "chip": chip, "soc": soc, "tidl_version": version}
    atomic_write_text(tidl_dir / COMPILE_SCRIPT, render("compile_tidl.py.j2", script_name=COMPILE_SCRIPT, config_name=COMPILE_CONFIG, **header))
    (tidl_dir / COMPILE_SCRIPT).chmod(0o755)

    # 5. The board runner.
    build_info = {
        "model_sha256": ctx.model.sha256,
        "chip": chip,
        "precision": precision,
        "model": "model.onnx",
        "artifacts": "tidl_artifacts",
        "inputs": RUNNER_INPUTS,
        "graph_optimization_level": config["graph_optimization_level"],
    }
    atomic_write_text(runner_dir / RUNNER_SCRIPT, render("run_tidl.py.j2", build_json=json.dumps(build_info, sort_keys=True), **header))
    (runner_dir / RUNNER_SCRIPT).chmod(0o755)
    atomic_write_text(runner_dir / PROTOCOL_FILE, protocol_source())

    section = {
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
        "model_compiled": model_file_rel,
        "eval_frames": eval_frames,
    }
    ctx.report["tidl"] = section
    ctx.manifest["tidl"] = {"soc": soc, "tidl_version": version, "tensor_bits": settings.tensor_bits, "model": model_file_rel}

    # 6. Compile where TI's tools are reachable; otherwise say how.
    plan = compile_plan(opts)
    if plan["how"] == "generate":
        final = artifact_dir(Path(ctx.options.out_root).resolve(), ctx.model.name, chip) / TIDL_DIR
        command = manual_command(final, soc)
        ctx.echo(f"convert: TI's tools are not here ({plan['reason']}); generated the compile project. Compile with:\n    {command}")
        ctx.report["convert"] = {"status": "generated", "reason": plan["reason"], "command": command}
        ctx.manifest["tidl"]["compiled"] = False
        return
    result = run_compile(tidl_dir, plan, soc, ctx.options.worker_timeout_s, ctx.echo)
    verdict, compiled = read_verdict(tidl_dir, model_for_tidl, version, log_text=result["log_text"])
    # TIDL compiled the copy with safe names; report under the names the audit (and the user) use.
    for original, safe in (deny.renamed.items() if deny is not None else ()):
        if safe in verdict.nodes:
            verdict.nodes[original] = verdict.nodes.pop(safe)
    ctx.manifest["tidl"]["compiled"] = True
    ctx.report["convert"] = {
        "status": "compiled",
        "how": plan["how"],
        "seconds": result["seconds"],
        "artifacts": compiled.summary(),
    }
    ctx.report["toolchain_verdict"] = verdict.to_dict()
    ctx.report["tidl_layers"] = artifact_parser.layer_table(compiled)
    agreement = compare(audit, verdict)
    ctx.report["agreement"] = agreement
    leaked = [d.node for d in (deny.nodes if deny else []) if verdict.nodes.get(d.node) and verdict.nodes[d.node].placement is Placement.ACCELERATOR]
    if leaked:
        ctx.report["tidl"]["deny_list_ignored"] = leaked
        ctx.echo(f"convert: warning: TIDL offloaded denied node(s) anyway: {', '.join(leaked)}")
    ctx.echo(
        f"convert: TIDL made {len(compiled.subgraphs)} subgraph(s), {sum(len(s) for s in compiled.subgraphs)} of "
        f"{len(model_for_tidl.graph.node)} nodes on the C7x/MMA; audit agreement {agreement['agree']}/{agreement['compared']}"
    )
    emulated = tidl_dir / EMULATION_OUTPUTS
    if emulated.is_file() and eval_frames:
        ctx.report["accuracy"] = _emulated_accuracy(ctx, reference, emulated, labels)


def _reference_outputs(model_path: Path, inputs_file: Path) -> dict[str, np.ndarray]:
    """ONNX Runtime float32 (CPU) outputs on every frame: the 'before' of the accuracy comparison."""
    import onnxruntime as ort

    session = ort.InferenceSession(str(model_path), providers=["CPUExecutionProvider"])
    data = np.load(inputs_file)
    names = [i.name for i in session.get_inputs()]
    outs = [o.name for o in session.get_outputs()]
    collected: dict[str, list] = {o: [] for o in outs}
    for index in range(len(data[names[0]])):
        for name, value in zip(outs, session.run(None, {n: data[n][index] for n in names})):
            collected[name].append(value)
    return {k: np.stack(v) for k, v in collected.items()}


def _emulated_accuracy(ctx, reference: dict, emulated_file: Path, labels) -> dict:
    from edgedeploy.measure.accuracy import before_after, choose_metric

    candidate = dict(np.load(emulated_file))
    first = next(iter(reference))
    metric = choose_metric(ctx.options.metric, reference[first].shape, labels)
    section = before_after(metric, reference, candidate, labels, first)
    section["scope"] = {
        "before": "ONNX Runtime float32, CPU, this host",
        "after": "TI host emulation of the compiled TIDL model (bit-true to the C7x/MMA per TI), this host",
        "differs_in": "the compiled TIDL model vs the float model",
    }
    return section


def run_compile(tidl_dir: Path, plan: dict, soc: str, timeout_s: float, echo) -> dict:
    """Run the generated script, its output into tidl/compile.log; ToolchainError with the log's tail on failure."""
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
    log_path = tidl_dir / COMPILE_LOG
    started = time.monotonic()
    with log_path.open("w") as log:
        log.write(f"$ {shown}\n")
        log.flush()
        try:
            proc = subprocess.Popen(argv, cwd=tidl_dir, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        except OSError as exc:
            raise ToolchainMissing(f"Cannot start the TIDL compile ({argv[0]}: {exc.strerror}); set --tidl-python or TIDL_PYTHON to the Python that has TI's onnxruntime.") from exc
        try:
            rc = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            raise ToolchainError(f"The TIDL compile did not finish within {timeout_s:.0f} s (raise --timeout); see {TIDL_DIR}/{COMPILE_LOG}.")
    seconds = time.monotonic() - started
    log_text = log_path.read_text(errors="replace")
    if rc != 0:
        tail = "\n".join("    " + line for line in log_text.strip().splitlines()[-LOG_TAIL_LINES:])
        error_line = next((line[len("error: "):] for line in reversed(log_text.splitlines()) if line.startswith("error: ")), None)
        if rc == EXIT_NO_TIDL_RUNTIME:
            raise ToolchainMissing(f"TI's onnxruntime with the TIDL providers is not usable here: {error_line or 'see the log'}")
        if rc == EXIT_BAD_ENVIRONMENT and error_line:
            raise ToolchainError(f"The TIDL environment is not set up for {soc}: {error_line}")
        raise ToolchainError(f"The TIDL compile failed (exit {rc}); see {TIDL_DIR}/{COMPILE_LOG}. Last lines:\n{tail}")
    echo(f"convert: TIDL compile done in {seconds:.1f} s")
    return {"seconds": round(seconds, 2), "log_text": log_text}


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
