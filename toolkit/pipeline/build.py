"""`edgedeploy build`: the pipeline, run once per chip, every shared stage owned here.

    intake     load, check, shape-infer, pin dynamic dims, hash            (edgedeploy.model)
    fix        optional: `edgedeploy fix` rewrites for this chip           (edgedeploy.fix)
    audit      the chip's rules predict every node's placement             (edgedeploy.audit)
    data       calibration / evaluation resolved once; the sample decided once; the toolchain's
               calibration minimum checked before it runs                  (edgedeploy.datasets)
    convert    the target's declared request run by the core's skeleton: build_request,
               Executor.run_worker in the toolchain's environment kind, read_result
               (or the target's own convert for tools that are not a worker) (pipeline/convert.py)
    verdict    the toolchain's own placement beside the prediction         (edgedeploy.audit.confirm)
    verify     target.simulate(...) against the ONNX Runtime reference, the same inputs, one
               verification for every target                               (edgedeploy.measure.verify)
    codegen    target.codegen(ctx, converted)                              (the target)
    report     one shape per section, report.json + manifest.json, atomically (edgedeploy.artifacts)

A target declares only its conversion, simulate (where a host simulator exists) and codegen.
One failure policy (after_conversion): a check that fails after a good conversion (the
verdict, a host interpreter that refuses the model) never throws the artifact away: the
failure is recorded in the report, the build goes on, and the gates decide the exit code.
"""

from __future__ import annotations

import functools
import json
import re
import time
from contextlib import nullcontext
from pathlib import Path
from typing import Callable

import onnx

from edgedeploy import __version__
from edgedeploy.artifacts import ArtifactBuilder, artifact_dir, atomic_write_json
from edgedeploy.audit.confirm import compare
from edgedeploy.audit.engine import audit_model
from edgedeploy.datasets import Dataset, load_dataset, model_input_specs
from edgedeploy.errors import EdgedeployError, OptionError, ToolchainFailed
from edgedeploy.interrupts import reraise_if_interrupted
from edgedeploy.measure.reference import ReferenceError, ReferenceRunner, default_cache_dir
from edgedeploy.measure.output_roles import parse_detection
from edgedeploy.measure.verify import headline_line, model_evidence, verify
from edgedeploy.model import LoadedModel, load_model
from edgedeploy.pipeline.convert import run_conversion, toolchain_environment
from edgedeploy.reproducible import CORE, declare, forget_work_folder
from edgedeploy.sample import is_sample, sample_calibration_path, sample_eval_path, sample_preprocess
from edgedeploy.targets import find_chip
from edgedeploy.targets.base import BuildContext, BuildData, Capability, ConvertResult, SimulationResult, TargetOptions
from edgedeploy.toolchains.executor import Executor, Progress

from edgedeploy.report.schema import REPORT_SCHEMA  # noqa: E402,F401 - one definition, in the report schema
from edgedeploy.pipeline.build_options import BuildOptions  # noqa: E402 - declared apart: `build --help` reads it without onnx


def run_build(model_path: Path, chip_id: str, options: BuildOptions, echo: Callable[[str], None], progress: Progress | None = None) -> Path:
    """Build one artifact for one chip; return its directory."""
    target, chip = find_chip(chip_id)
    started = time.monotonic()
    target_options = options.options_for(target)
    target_options.validate(chip)
    precision = _precision(target, chip, options.precision)
    model, fix_report = _intake(Path(model_path).absolute(), target, chip, precision, options, echo)
    environment = toolchain_environment(target, chip.id)

    dest = artifact_dir(options.out_root, model.name, chip.id)
    # The toolchain's environment is held for the whole build (an install --force waits for it).
    held_env = environment.in_use(on_wait=lambda who: echo(f"build: waiting for {who}, which is installing the {target.toolchain.name} toolchain")) if environment is not None else nullcontext()
    with held_env, ArtifactBuilder(dest, options.force, echo=echo) as art:
        work = art.path.absolute()
        pinned_path = work / "model.onnx"
        onnx.save(model.proto, str(pinned_path))
        report = _report_header(model, target, chip, precision, options)
        if fix_report is not None:
            # The artifact's model.onnx is the rewritten one; the report keeps where it came from.
            report["model"]["source_sha256"] = fix_report["model"]["sha256"]
            report["fix"] = fix_report
        echo(f"build: {model.name} for {chip.name} ({target.name}), {precision}, in {work}")

        # -- audit --------------------------------------------------------------------------
        prediction, report["audit"] = _audit_stage(work, model, target, chip, precision, target_options, echo)
        report["estimate"] = _estimate_section(model, prediction, target, echo)

        # -- data ---------------------------------------------------------------------------
        reference = ReferenceRunner(model.proto, cache_dir=default_cache_dir())
        data = resolve_data(model, target, chip, precision, options, reference)
        report["data"] = _data_section(data)
        for note in data.notes:
            echo(f"data: {note}")

        # -- convert (the core's skeleton: pipeline/convert.py) -------------------------------
        ctx = BuildContext(
            model=model,
            model_path=pinned_path,
            target=target,
            chip=chip,
            precision=precision,
            options=target_options,
            workdir=work,
            final_dir=dest.absolute(),
            data=data,
            audit=prediction,
            executor=Executor(work / "build.log", options.worker_timeout_s, progress),
            reference=reference,
            echo=echo,
            device=options.device,
            environment=environment,
        )
        converted, prediction = _convert_stage(ctx, report, prediction)

        # -- the checks after a good conversion: recorded, never fatal (after_conversion) --------
        report["toolchain_verdict"] = after_conversion("verdict", echo, _verdict_section, work, prediction, converted, echo)
        _add_toolchain_estimate(report, target)
        report["accuracy"] = after_conversion("verify", echo, _verify, ctx, converted, reference, options, echo)

        # -- codegen ----------------------------------------------------------------------------
        report["codegen"] = target.codegen(ctx, converted)
        # The target's own figures that --fail-on gates read (flash, ram), with where they come from.
        report["figures"] = {key: {"value": value, "source": source} for key, (value, source) in target.gate_figures(report).items()}
        _write_report_and_manifest(art, work, report, target, converted, started)
        # The work folder is renamed into place: no file keeps a path into it, and the manifest
        # says what differs from one build to the next (edgedeploy.reproducible).
        forget_work_folder(work)
        art.describe = functools.partial(declare, variation=CORE.merged(target.variation))
    echo(f"build: wrote {dest} in {time.monotonic() - started:.1f} s")
    return dest


def _intake(model_path: Path, target, chip, precision: str, options: BuildOptions, echo):
    """(the loaded, checked model with its shapes pinned, the fix report or None): intake, and `--fix` for this chip."""
    model = load_model(model_path, options.input_shapes, require_static=True)
    parse_detection(options.detection, model.graph)  # a wrong --detection is refused before any work
    for name, dims in model.auto_pinned.items():
        echo(f"intake: input '{name}' has a dynamic batch dimension; building for {'x'.join(map(str, dims))} (pin another with --input-shape)")
    if not options.fix:
        return model, None
    return _fix_for_chip(model, target, chip, precision, options, echo)


def _convert_stage(ctx: BuildContext, report: dict, prediction):
    """(the conversion's result, the prediction it is compared with): the convert section and the
    target's sections in the report; the audit again with the toolchain's own rule table when it has one."""
    started = time.monotonic()
    try:
        converted = run_conversion(ctx)
    except ToolchainFailed as exc:
        named = exc if prediction is None else _with_what_the_audit_foresaw(exc, prediction)
        if named is exc:
            raise  # `raise exc from exc` would make the error its own cause: a chain that loops
        raise named from exc
    seconds = round(time.monotonic() - started, 2)
    if converted.rules is not None:
        # The toolchain actually used has a rule table of its own (a device's TensorRT release).
        prediction = audit_model(ctx.model, converted.rules, ctx.precision)
        report["audit"] = _audit_section(ctx.workdir, prediction, converted.rules, ctx.echo)
        report["estimate"] = _estimate_section(ctx.model, prediction, ctx.target, ctx.echo)
    report["convert"] = _convert_section(converted, ctx.workdir, seconds)
    report.update(converted.sections)
    for workaround in converted.workarounds:
        ctx.echo(f"convert: applied the documented workaround {workaround['name']}: {workaround['why']}")
    return converted, prediction


def _write_report_and_manifest(art, work: Path, report: dict, target, converted: ConvertResult, started: float) -> None:
    """report.json, and the manifest's fields (the builder writes the manifest when the block ends)."""
    art.manifest_fields.update(
        model=report["model"],
        target=report["target"],
        options=report["options"],
        toolchain={"name": target.toolchain.name, "versions": {**target.toolchain.status().versions, **converted.versions}},
    )
    if converted.manifest:
        art.manifest_fields[target.id] = converted.manifest
    report["build_seconds"] = round(time.monotonic() - started, 2)
    atomic_write_json(work / "report.json", report)


def _precision(target, chip, requested: str | None) -> str:
    """The precision to build: the user's, checked against the chip, else the chip's first."""
    if requested is None:
        return chip.precisions[0]
    if requested not in chip.precisions:
        raise OptionError(f"{target.name} on {chip.name} builds {' or '.join(chip.precisions)}, not {requested}; use --precision {chip.precisions[0]}.")
    return requested


def _report_header(model: LoadedModel, target, chip, precision: str, options: BuildOptions) -> dict:
    shared = options.to_dict(target)
    shared["precision"] = precision  # what was built (the option's default is "the chip's")
    return {
        "schema": REPORT_SCHEMA,
        "edgedeploy_version": __version__,
        "model": {
            "name": model.name,
            "source": str(model.path),
            "sha256": model.sha256,
            "input_shapes": {vi.name: [d.dim_value for d in vi.type.tensor_type.shape.dim] for vi in model.graph_inputs()},
            "outputs": [vi.name for vi in model.graph_outputs()],
        },
        "target": {"target": target.id, "chip": chip.id, "chip_name": chip.name, "vendor": target.vendor, "accelerator": chip.accelerator},
        "options": shared,
    }


# -- data ----------------------------------------------------------------------------------


def resolve_data(model: LoadedModel, target, chip, precision: str, options: BuildOptions, reference: ReferenceRunner) -> BuildData:
    """Calibration and evaluation data, once: the user's, else the bundled sample's (for the sample only)."""
    sample = is_sample(model)
    preprocess = options.preprocess or (sample_preprocess() if sample else None)
    specs = model_input_specs(model)
    notes: list[str] = []

    def load(path: Path | None, default: Path | None, count: int | None) -> Dataset | None:
        chosen = path or default
        return None if chosen is None else load_dataset(chosen, specs, preprocess, count, allow_nonfinite=options.allow_nonfinite)

    need = target.calibration_need(chip, precision)
    calibration = None
    if need.required:
        calibration = load(options.calib, sample_calibration_path() if sample else None, options.calib_count)
        if calibration is None:
            raise OptionError(
                f"{precision} for {chip.id} needs calibration data ({need.why}): pass --calib DATA "
                "(an .npz keyed by input name, a folder of .npy files, or images with --preprocess)."
            )
        if len(calibration) < need.minimum_samples:
            raise OptionError(
                f"The calibration data has {len(calibration)} samples, but {target.toolchain.name} needs at least "
                f"{need.minimum_samples} for {chip.id} ({need.why}); give more with --calib (or a larger --calib-count)."
            )
    elif options.calib is not None:
        notes.append(f"{precision} on {chip.id} is not calibrated: --calib is not used")
    evaluation = load(options.eval, sample_eval_path() if sample else None, options.eval_count)
    if evaluation is None:
        notes.append("no --eval data: accuracy before/after is not measured")
    probe = evaluation if evaluation is not None else calibration
    batchable = reference.accepts_batches(probe.inputs) if probe is not None else False
    return BuildData(calibration, evaluation, preprocess, sample, batchable, notes)


def _data_section(data: BuildData) -> dict:
    return {
        "calibration": data.calibration.describe() if data.calibration is not None else None,
        "evaluation": data.evaluation.describe() if data.evaluation is not None else None,
        "preprocess": data.preprocess.to_dict() if data.preprocess else None,
        "bundled_sample": data.is_sample,
        "batched": data.batchable,
        "notes": data.notes,
    }


# -- audit and verdict ---------------------------------------------------------------------


def _audit_stage(work: Path, model: LoadedModel, target, chip, precision: str, target_options: TargetOptions, echo):
    """(the rules' prediction, the report's audit section); (None, skipped) for a target that
    declares no audit rules (no Capability.AUDIT): the build goes on without a prediction."""
    if not target.has(Capability.AUDIT):
        reason = f"the {target.name} target declares no audit rules"
        echo(f"audit: skipped: {reason}")
        return None, {"status": "skipped", "reason": reason}
    rules = target.rule_set(chip.id, precision, target_options)
    prediction = audit_model(model, rules, precision)
    return prediction, _audit_section(work, prediction, rules, echo)


def _audit_section(work: Path, prediction, rules, echo) -> dict:
    """audit.json holds every node; the report keeps the summary, one shape for every target."""
    atomic_write_json(work / "audit.json", prediction.to_dict())
    echo(f"audit: {prediction.summary_line()}")
    unsupported = [n.node for n in prediction.nodes if n.placement.value == "unsupported"]
    if unsupported:
        # A prediction: the toolchain, which runs next, is the judge; the report keeps both.
        echo(f"audit: the rules predict {len(unsupported)} node(s) the toolchain cannot run ({', '.join(unsupported[:3])}{' ...' if len(unsupported) > 3 else ''}); converting anyway to let it decide")
    return {
        "file": "audit.json",
        "chip": prediction.chip,
        "precision": prediction.precision,
        "toolchain_version": prediction.toolchain_version,
        "source": prediction.source,
        "fallback_unit": prediction.fallback_unit,
        "notes": list(rules.notes),
        "summary": prediction.summary(),
        "summary_line": prediction.summary_line(),
        "predicted_unsupported": unsupported,
    }


def _estimate_section(model: LoadedModel, prediction, target, echo) -> dict:
    """edgedeploy's latency estimate for this chip (edgedeploy.estimate): cheap, no toolchain."""
    from edgedeploy.estimate import ChipEstimate
    from edgedeploy.pipeline.estimate import estimate_audits

    if prediction is None:  # a target without audit rules: no placements to estimate from
        return ChipEstimate(chip="", latency_ms=None, reason="the target declares no audit rules, and the estimate builds on the audit's placements").to_dict()
    found = estimate_audits(model, [prediction], {prediction.chip: target})[0]
    echo(f"estimate: {found.sentence()} (an estimate, not a measurement)")
    return found.to_dict()


def _add_toolchain_estimate(report: dict, target) -> None:
    """The toolchain's own time estimate (Vela's), where the conversion made one, beside edgedeploy's."""
    from edgedeploy.estimate import toolchain_estimate_entry

    section = report.get("estimate")
    if section is not None:
        chip = report["target"]["chip"]
        entry = toolchain_estimate_entry(target, chip, (report.get("toolchain_verdict") or {}).get("estimates"), "this build")
        if entry is not None and entry["latency_ms"] is None:
            entry["not_run"] = f"{entry['name']} gave no time estimate in this build"
        section["toolchain_estimate"] = entry


def _with_what_the_audit_foresaw(exc: ToolchainFailed, prediction) -> ToolchainFailed:
    """A toolchain that fails where the rules predicted it would: the failure also names the node
    and gives the rule's sentence, which carries the known workaround (the toolchain's own message
    seldom names the node, and never the way around it). Only the flagged node the failure is at:
    a failure elsewhere (a calibration range, a file) was not foreseen, and saying so would mislead."""
    flagged = (n for n in prediction.nodes if n.placement.value == "unsupported" and n.reason)
    foreseen = next((n for n in flagged if failure_is_at(exc, n.node, n.op_type)), None)
    if foreseen is None:
        return exc
    return exc.replace(hints=exc.hints + (f"The audit foresaw this at node '{foreseen.node}' ({foreseen.op_type}): {foreseen.reason}",))


def failure_is_at(exc: ToolchainFailed, node: str, op_type: str) -> bool:
    """Whether a toolchain failure is at this node: the node the toolchain named, else the operator
    type it named, else the node's name or its operator type quoted in the toolchain's own words."""
    if exc.node:
        return exc.node == node
    if exc.op_type:
        return exc.op_type == op_type
    said = " ".join(filter(None, (exc.final_line, exc.source_location)))
    # A whole name: 'Conv' is not in '/stem/Conv_1' nor 'ConvTranspose', 'Add' not in 'Address'.
    return any(re.search(rf"(?<![\w/.]){re.escape(name)}(?![\w/.])", said) for name in (node, op_type) if name)


def after_conversion(stage: str, echo, check: Callable[..., dict], *args) -> dict:
    """The one failure policy for a check after a good conversion (verdict, simulator, analysis).

    The artifact is already converted: a check that fails is recorded as its report section
    ({"status": "failed", "reason": the error's sentence}) and never discards the artifact;
    the gates (--fail-on) decide what a missing figure means for the exit code.
    """
    try:
        return check(*args)
    except EdgedeployError as exc:
        reraise_if_interrupted(exc)
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        echo(f"{stage}: the check could not run ({reason}); the artifact is kept")
        return {"status": "failed", "reason": reason}


def _verdict_section(work: Path, prediction, converted: ConvertResult, echo) -> dict:
    verdict = converted.verdict
    if verdict is None or prediction is None:
        if verdict is not None:
            reason = "there is no audit to compare the toolchain's placement with"
        elif converted.status == "generated":
            reason = "the project was generated, not compiled"
        else:
            reason = "this toolchain reports no per-node placement"
        return {"status": "none", "reason": reason}
    comparison = compare(prediction, verdict)
    atomic_write_json(work / "toolchain_verdict.json", {"verdict": verdict.to_dict(), "comparison": comparison})
    if comparison.get("agreement") is not None:
        line = f"verdict: {verdict.toolchain} and the rules agree on {comparison['agree']} of {comparison['compared']} nodes"
        if comparison["disagreements"]:
            line += f"; {len(comparison['disagreements'])} disagreement(s), listed in the report"
        echo(line)
    return {
        "status": "compared",
        "file": "toolchain_verdict.json",
        "toolchain": verdict.toolchain,
        "version": verdict.version,
        "failed": verdict.failed,
        "agreement": comparison.get("agreement"),
        "agree": comparison.get("agree"),
        "compared": comparison.get("compared"),
        "disagreements": comparison.get("disagreements", []),
        "not_reported": comparison.get("not_reported", []),
        "unverifiable": comparison.get("unverifiable", []),
        "unmapped_layers": list(verdict.unmapped),
        "estimates": {k: v for k, v in verdict.estimates.items() if k != "layers"},
    }


def _convert_section(converted: ConvertResult, work: Path, seconds: float) -> dict:
    sizes = {}
    for role, rel in converted.files.items():
        path = work / rel
        if path.is_file():
            sizes[role] = path.stat().st_size
    return {
        "status": converted.status,
        "toolchain": converted.toolchain,
        "versions": converted.versions,
        "files": converted.files,
        "size_bytes": sizes,
        "seconds": seconds,
        "workarounds": converted.workarounds,
        "notes": converted.notes,
        "reason": converted.reason,
        "details": converted.details,
    }


# -- verify --------------------------------------------------------------------------------


def _verify(ctx: BuildContext, converted: ConvertResult, reference: ReferenceRunner, options: BuildOptions, echo) -> dict:
    """Accuracy before (ONNX Runtime fp32) and after (the target's host simulation), same inputs."""
    evaluation = ctx.data.evaluation
    if evaluation is None:
        return {"status": "skipped", "reason": "no evaluation data (pass --eval DATA)"}
    if converted.status != "built":
        return {"status": "skipped", "reason": "the model was not compiled here, so there is nothing to run on the host"}
    if not ctx.target.has(Capability.SIMULATE):
        return {"status": "skipped", "reason": f"{ctx.target.name} has no host simulator; measure on the device (`edgedeploy measure`)"}
    echo(f"verify: running the compiled model on this host ({ctx.target.name}'s simulator or interpreter) on {len(evaluation)} evaluation samples")
    try:
        simulated = ctx.target.simulate(ctx, converted, evaluation)
    except EdgedeployError as exc:
        reraise_if_interrupted(exc)
        simulated = SimulationResult({}, backend="(not run)", failed=str(exc).splitlines()[0])
    if simulated is None or simulated.failed:
        reason = simulated.failed if simulated is not None else "the simulation gave no outputs"
        echo(f"verify: the host check could not run ({reason}); the artifact is kept")
        return {"status": "failed", "reason": reason, "backend": simulated.backend if simulated else None}
    # Codegen may ship the expected outputs of the compiled model with its runners.
    converted.simulated = simulated
    try:
        before = reference.run(evaluation.inputs)
    except ReferenceError as exc:
        echo(f"verify: the ONNX Runtime reference could not run ({exc}); the artifact is kept")
        return {"status": "failed", "reason": f"the reference could not run: {exc}"}
    producers, layouts = model_evidence(ctx.model.proto, options.detection)
    section = verify(before.outputs, simulated.outputs, evaluation.labels, options.metric, options.metric_output, producers, layouts)
    section["status"] = "done"
    section["before_backend"] = before.runtime
    section["after_backend"] = simulated.backend
    section["reference"] = before.describe()
    section["data"] = evaluation.describe()
    section["notes"] = list(simulated.notes)
    for label, outputs in simulated.extra.items():
        section.setdefault("extra_fidelity", {})[label] = verify(before.outputs, outputs, None, "fidelity", "auto", producers)["fidelity"]
    for warning in conversion_changed_function(section, simulated.unquantised):
        section.setdefault("warnings", []).append(warning)
        echo(f"verify: warning: {warning}")
    section["scope"] = {
        "model_sha256": ctx.model.sha256,
        "input_shapes": {name: list(array.shape[1:]) for name, array in evaluation.inputs.items()},
        "samples": section["samples"],
        "precision_before": "fp32",
        "precision_after": ctx.precision,
        "chip": ctx.chip.id,
        "device": "host",
        "differs_in": "the compiled model and its runtime (the inputs are the same)",
    }
    atomic_write_json(ctx.workdir / "accuracy.json", section)
    echo(f"verify: {headline_line(section)} ({section['metric_output_reason']})" if section.get("metric_output") else f"verify: {headline_line(section)}")
    return section


# Below this cosine between the unquantised conversion's output and ONNX Runtime's, the converter
# has changed the function, not its precision (a float conversion of a correct graph gives
# 0.9999+; quantisation is not involved yet).
CONVERSION_ALONE_MIN_COSINE = 0.99


def conversion_changed_function(section: dict, unquantised: str | None) -> list[str]:
    """A warning per output where the target's unquantised conversion (SimulationResult.unquantised)
    already disagrees with the ONNX model: then the accuracy change is the converter's, and no
    calibration or precision option will win it back."""
    fidelity = (section.get("extra_fidelity") or {}).get(unquantised) if unquantised else None
    warnings = []
    for output, f in (fidelity or {}).items():
        cosine = f.get("cosine")
        if cosine is not None and cosine < CONVERSION_ALONE_MIN_COSINE:
            warnings.append(
                f"the {unquantised} already differs from the ONNX model on output '{output}' (cosine {cosine:.4f}, "
                f"SNR {f.get('snr_db', float('nan')):.1f} dB) before any quantisation: the converter changed what the model "
                "computes, so calibration or precision options will not recover the accuracy"
            )
    return warnings


# -- fix -------------------------------------------------------------------------------------


def _fix_for_chip(model: LoadedModel, target, chip, precision: str, options: BuildOptions, echo):
    """`edgedeploy fix` for one chip before converting: (the rewritten model, the fix report)."""
    from edgedeploy.fix.engine import DEFAULT_EVAL_COUNT, evaluation_feeds, fix_model

    if not target.has(Capability.AUDIT):
        raise OptionError(f"--fix judges rewrites by the audit's rules, and the {target.name} target declares none; build {chip.id} without --fix.")
    feeds, source = evaluation_feeds(model, options.eval, options.eval_count or DEFAULT_EVAL_COUNT, model.path, allow_nonfinite=options.allow_nonfinite)
    result = fix_model(model, {chip.id: target.rule_set(chip.id, precision, options.options_for(target))}, feeds, source, allow_approx=options.allow_approx, echo=echo, precisions={chip.id: precision})
    applied = [a.rewrite for a in result.attempts if a.applied]
    echo(f"fix: {', '.join(applied) if applied else 'no rewrite improved the placements'} for {chip.id}")
    return result.fixed, result.to_dict()


def load_report(artifact: Path) -> dict:
    return json.loads((Path(artifact) / "report.json").read_text())
