"""`edgedeploy build`: audit, convert, generate and verify a model for one or more target chips.

The shared options are BuildOptions' fields (pipeline/build_options.py, declared once for this
command and edgedeploy.build); each target's own options come from its options dataclass
(Target.options_type), are parsed once into that dataclass, and are shown in `--help` in a
section per vendor. This command names no vendor option itself.
"""

from __future__ import annotations

import time
from pathlib import Path

import click

from edgedeploy import interrupts
from edgedeploy.cli.options import AbsolutePath, api_keywords, model_argument, parse_shapes, resolve_model
from edgedeploy.cli.output import echo_text, emit_json, format_option, info, table
from edgedeploy.cli.project import project_options
from edgedeploy.errors import EXIT_GATE_FAILED, EXIT_GENERATED_ONLY, EdgedeployError, OptionError, TargetError
from edgedeploy.gates import evaluate_build, failed_build
from edgedeploy.gates import summary as gate_summary

BUILD_RESULT_SCHEMA = "edgedeploy.pipeline.build-result/1"
FAIL_ON_HELP = (
    "A CI gate (repeatable): fail (exit 7) when a chip's figure misses the threshold, or cannot be checked. "
    "Keys: accuracy-drop=PP (top-1 drop in percentage points), snr=DB, cosine=MIN (every output, compiled vs reference), "
    "model-size=, artifact-size=, flash=, ram=BYTES (512KiB, 4MiB); p50=DURATION only with --allow-estimate (judges the estimate). CHIP: in front scopes a gate to one chip (imx93:ram=256KiB). "
    "See docs/cli.md."
)



class VendorOptionsCommand(click.Command):
    """A command whose `--help` lists each target's own options in a section of their own.

    `deprecated_flags` maps a target option's former spelling to its namespaced flag: the
    arguments are renamed before parsing, with a warning. `disabled_targets` maps the id of a
    target whose options clash with another's to the sentence saying so (add_target_options).
    """

    deprecated_flags: dict[str, str]
    disabled_targets: dict[str, str]

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        return super().parse_args(ctx, renamed_deprecated_flags(args, getattr(self, "deprecated_flags", {})))

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        shared, by_target = [], {}
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is None:
                continue
            owner = getattr(param, "edgedeploy_target", None)
            if owner is None:
                shared.append(record)
            else:
                by_target.setdefault(owner, []).append(record)
        if shared:
            with formatter.section("Options"):
                formatter.write_dl(shared)
        for target, records in by_target.items():
            with formatter.section(f"{target.name} options ({', '.join(c.id for c in target.chips)})"):
                formatter.write_dl(records)
        disabled = getattr(self, "disabled_targets", {})
        if disabled:
            with formatter.section("Disabled targets"):
                for reason in disabled.values():
                    formatter.write_text(reason)


def renamed_deprecated_flags(args: list[str], deprecated: dict[str, str]) -> list[str]:
    """The arguments with each deprecated target flag (`--analyse`, `--analyse=...`) renamed to its
    namespaced flag, a warning for each; nothing after `--` is touched."""
    out = list(args)
    end = out.index("--") if "--" in out else len(out)
    for i, arg in enumerate(out[:end]):
        old, eq, value = arg.partition("=")
        new = deprecated.get(old)
        if new is not None:
            info(f"warning: {old} is deprecated and will be removed in the next release; use {new}")
            out[i] = new + eq + value
    return out


def vendor_option_param(target, field_name: str, meta: dict, default) -> click.Option:
    """One target option (a field made with targets.base.option) as a click.Option.

    The click default is None (unset): the dataclass holds the real default, shown in the help.
    """
    kwargs: dict = {"help": meta["help"], "default": None, "show_default": False}
    if meta["is_flag"]:
        kwargs.update(is_flag=True, default=False)
    elif meta["multiple"]:
        kwargs.update(multiple=True, default=())
    elif meta["choices"]:
        kwargs["type"] = click.Choice(list(meta["choices"]))
    elif meta["type"] is int:
        kwargs["type"] = click.IntRange(meta["minimum"], meta["maximum"])
    elif meta["type"] is float:
        kwargs["type"] = click.FloatRange(meta["minimum"], meta["maximum"])
    if meta["metavar"]:
        kwargs["metavar"] = meta["metavar"]
    if default not in (None, (), False):
        kwargs["help"] += f"  [default: {default}]"
    option = click.Option([meta["flag"], f"{target.id}__{field_name}"], **kwargs)
    option.edgedeploy_target = target  # type: ignore[attr-defined] - for the grouped --help
    return option


def shared_click_option(name: str, meta: dict, default):
    """One shared build option (a BuildOptions field made with pipeline.build_options.shared_option)
    as a click option decorator; the parameter is named as edgedeploy.build's keyword, so its
    value is forwarded by that name (api_keywords)."""
    kwargs: dict = {"help": meta["help"], "show_default": meta.get("show_default", False)}
    if meta.get("is_flag"):
        kwargs["is_flag"] = True
    elif meta.get("multiple"):
        kwargs["multiple"] = True
    else:
        kwargs["default"] = default
    if meta.get("choices"):
        kwargs["type"] = click.Choice(list(meta["choices"]))
    elif meta.get("path"):
        kwargs["type"] = AbsolutePath(exists=True, path_type=Path) if meta["path"] == "exists" else AbsolutePath(file_okay=False, path_type=Path)
    elif meta.get("type") in (int, float):
        kwargs["type"] = (click.IntRange if meta["type"] is int else click.FloatRange)(min=meta.get("minimum"))
    if meta.get("metavar"):
        kwargs["metavar"] = meta["metavar"]
    return click.option(meta["flag"], *([meta["short"]] if meta.get("short") else []), name, **kwargs)


def shared_build_options(func, options_type=None):
    """build's shared options, one per field of BuildOptions (or `options_type`): declared once
    (pipeline/build_options.py) for this command and edgedeploy.build alike, in the fields' order."""
    from edgedeploy.pipeline.build_options import BuildOptions

    for name, default, meta in reversed((options_type or BuildOptions).keyword_options()):
        func = shared_click_option(name, meta, default)(func)
    return func


def target_options_from(values: dict, chips_built: list) -> dict:
    """{target id: its options dataclass} from the command's parsed values; a warning for options of targets not built."""
    from edgedeploy.targets import all_targets

    built_ids = {target.id for target, _ in chips_built}
    options = {}
    for target in all_targets():
        given = {}
        for field, meta in target.options_type.declared():
            value = values.get(f"{target.id}__{field.name}")
            if value not in (None, (), False):
                given[field.name] = value
        if given and target.id not in built_ids:
            flags = ", ".join(meta["flag"] for f, meta in target.options_type.declared() if f.name in given)
            info(f"warning: {flags} apply to {target.name} targets only; none is built here, so they are ignored")
        options[target.id] = target.options_type.from_values(given)
    return options


@click.command("build", cls=VendorOptionsCommand)
@model_argument
@click.option("--target", "targets", multiple=True, metavar="CHIP", help="Target chip (repeatable); see `edgedeploy targets`. Default: the project file's targets.")
@shared_build_options
@click.option("--fail-fast", is_flag=True, help="Stop at the first chip that fails (default: build every chip, then summarise).")
@click.option("--allow-generated", is_flag=True, help="Count a project generated but not compiled here (TIDL without TI's tools) as built for the exit status.")
@click.option("--fail-on", "fail_on", multiple=True, metavar="[CHIP:]KEY=VALUE", help=FAIL_ON_HELP)
@click.option("--recover", is_flag=True, help="When the accuracy gates of --fail-on (accuracy-drop, snr, cosine) fail, try the toolchain's own means in order of cost (calibration method, per-channel, equalisation, bias correction, then mixed precision on the nodes the diagnosis ranks first) until they hold; the best attempt that meets them becomes the artifact (docs/accuracy.md).")
@click.option("--allow-estimate", is_flag=True, help="Let --fail-on p50=N judge edgedeploy's latency estimate (docs/estimate.md; the gate's result says it is an estimate); a build measures no latency.")
@project_options
@format_option()
@click.pass_context
def build_command(ctx, **values) -> None:
    """Build MODEL for each --target: audit, convert with the vendor toolchain, generate the project, verify accuracy.

    MODEL defaults to the project file's model, else the bundled MNIST sample. Each artifact is
    written atomically to OUT/<model>/<chip>/ and never overwrites an existing one without
    --force. Every chip is built even when one fails (--fail-fast stops at the first), then one
    summary table. Exit status (docs/cli.md): 0 when every chip was built and passed its gates;
    a failed chip's error class; 7 when a gate failed; 6 when a project was only generated.
    """
    from edgedeploy.cli import project as project_file

    project = project_file.load_for_command(values.pop("project_path"), values.pop("no_project"))
    if project is not None:
        values = project_file.apply(ctx, values, project.build, project)
        values = project_file.vendor_values(ctx, values, project)
    _build(values, project)


def _build(values: dict, project) -> None:
    from edgedeploy.cli import project as project_file
    from edgedeploy.datasets import parse_preprocess
    from edgedeploy.cli.progress import Reporter
    from edgedeploy.pipeline.diagnose import diagnose_failed_accuracy_gates
    from edgedeploy.pipeline.recover import goals_of
    from edgedeploy import api
    from edgedeploy.targets import find_chip

    # The command's own options; each shared one is edgedeploy.api.build's keyword of the same name.
    keys = ("model", "targets", "fail_fast", "allow_generated", "output_format", "fail_on", "allow_estimate", "recover")
    model, targets, fail_fast, allow_generated, output_format, fail_on, allow_estimate, recover = (values.pop(k) for k in keys)
    gates = project_file.command_gates(fail_on, "build", project, allow_estimate=allow_estimate)
    if recover and not goals_of(gates):
        raise OptionError("--recover turns the accuracy gates into goals: give at least one with --fail-on accuracy-drop=PP, snr=DB or cosine=MIN.")
    if not targets:
        raise OptionError("Give the chip(s) to build for with --target CHIP (see `edgedeploy targets`), or list them as targets = [...] in edgedeploy.toml.")
    with project_file.naming_the_field(project, "targets"):
        chips = [find_chip(chip) for chip in targets]  # fail on a typo before any work
    refuse_disabled(click.get_current_context().command, chips)
    with project_file.naming_the_field(project, "preprocess"):
        values["preprocess"] = parse_preprocess(values["preprocess"])
    values["input_shapes"] = parse_shapes(values["input_shapes"])  # a bad one stops the command before any chip
    # What every chip's build shares, forwarded by name; what is left are the targets' own options.
    options = api_keywords(api.build, values)
    out_root, eval_data = options["out"], options["eval"]
    vendor_values = values
    target_options = target_options_from(vendor_values, chips)
    model_path = resolve_model(model)
    reporter = Reporter.for_command()
    results = []
    first_error: EdgedeployError | None = None
    for (target, chip), asked in zip(chips, targets):
        started = time.monotonic()
        try:
            artifact = api.build(model_path, chip.id, **options, target_options=target_options[target.id], progress=reporter)
        except EdgedeployError as exc:
            interrupts.reraise_if_interrupted(exc)  # a signal's failure is not a chip's: no next chip
            first_error = first_error or exc
            results.append(_failed_entry(exc, out_root, model_path, chip.id, started))
            if len(chips) == 1 or fail_fast:
                break  # the error itself is the message (after the JSON summary, with --format json)
            info(f"build: {chip.id} failed: {results[-1]['reason']}")
            continue
        report = artifact.document
        entry = {"chip": chip.id, "status": artifact.status, "artifact": str(artifact.path), "wall_seconds": round(time.monotonic() - started, 2), "report": report}
        if gates:
            judged = evaluate_build(gates, report, artifact.manifest)
            if recover and _missed_goals(judged):
                judged, report = _recover_chip(artifact.path, target, chip, model_path, options, target_options[target.id], gates, eval_data, reporter)
                entry.update(report=report, wall_seconds=round(time.monotonic() - started, 2))
            entry["gates"] = gate_summary(judged)
            if not (recover and (report.get("recovery") or {}).get("met")):
                diagnose_failed_accuracy_gates(artifact.path, judged, eval_data, info)
        results.append(entry)
    reporter.close()
    for entry in results:
        if gates and entry["status"] == "failed":
            entry["gates"] = gate_summary(failed_build(gates, entry["chip"], entry["reason"]))
    stopped = first_error is not None and (len(chips) == 1 or fail_fast)
    if output_format == "json":
        # Always the summary, failed chips included: a script reads stdout, whatever the exit code.
        emit_json({"schema": BUILD_RESULT_SCHEMA, "builds": results})
    elif not stopped:
        _print_summary(results, bool(gates))
    if stopped:
        raise first_error  # one sentence on stderr and the error's own exit code, as without --format json
    _exit_for(results, first_error, allow_generated)


def _failed_entry(exc: EdgedeployError, out_root: Path, model_path: Path, chip_id: str, started: float) -> dict:
    """A failed chip's entry in the summary: the error's sentence, its exit code, the kept `.failed` folder."""
    reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    failed = _failed_folder(out_root, model_path, chip_id)
    return {"chip": chip_id, "status": "failed", "reason": reason, "exit_code": exc.exit_code, "failed_folder": failed, "wall_seconds": round(time.monotonic() - started, 2)}


def _missed_goals(judged) -> bool:
    from edgedeploy.pipeline.recover import GOAL_GATES

    return any(not r.passed and r.gate.kind.key in GOAL_GATES for r in judged)


def _recover_chip(artifact: Path, target, chip, model_path, options: dict, target_options, gates, eval_data, reporter):
    """`--recover` for one chip whose build missed its accuracy goals: (the gates judged on the artifact
    it leaves, its report). Attempts are built with the same shared options, the target's changed."""
    import json

    from edgedeploy import api
    from edgedeploy.pipeline.diagnose import DiagnoseOptions, diagnose_artifact
    from edgedeploy.pipeline.recover import RecoverPlan, attempts_table, recover
    from edgedeploy.report.artifact import update_report_section

    report = json.loads((artifact / "report.json").read_text())
    plan = RecoverPlan(
        target=target,
        chip=chip,
        precision=report["options"]["precision"],
        options=target_options if target_options is not None else target.options_type(),
        gates=gates,
        build=lambda out, opts: api.build(model_path, chip.id, **{**options, "out": out, "force": True}, target_options=opts, progress=reporter).path,
        diagnose=lambda path: diagnose_artifact(path, DiagnoseOptions(eval=eval_data, qdq=False), info),
        echo=info,
    )
    outcome = recover(artifact, plan)
    if outcome.met and outcome.diagnosis is not None:
        # The diagnosis that ranked the nodes (of the failing attempt) gives the report its SNR curve;
        # when the goals are missed, build diagnoses the artifact it leaves instead.
        update_report_section(outcome.artifact, ("accuracy_diagnosis",), outcome.diagnosis)
    report = update_report_section(outcome.artifact, ("recovery",), outcome.section)
    for line in attempts_table(outcome.section).splitlines():
        info(line)
    info(outcome.sentence)
    manifest = json.loads((outcome.artifact / "manifest.json").read_text())
    return evaluate_build(gates, report, manifest), report


def _failed_folder(out_root: Path, model_path: Path, chip_id: str) -> str | None:
    """The kept `<chip>.failed` folder of a failed build, when the build got as far as making one."""
    from edgedeploy.artifacts import artifact_dir
    from edgedeploy.model import load_model

    try:
        name = load_model(model_path).name
    except EdgedeployError:
        return None
    failed = artifact_dir(out_root, name, chip_id)
    failed = failed.with_name(failed.name + ".failed")
    return str(failed) if failed.exists() else None


def _accuracy_delta(report: dict | None) -> str:
    accuracy = (report or {}).get("accuracy") or {}
    if accuracy.get("status") == "failed":
        return "check failed"
    if "delta_percentage_points" in accuracy:
        return f"{accuracy['delta_percentage_points']:+.2f} pp top-1"
    if "delta" in accuracy:
        return f"{accuracy['delta']:+.4f} AUROC"
    fidelity = accuracy.get("fidelity") or {}
    if fidelity:
        worst = min(f["snr_db"] for f in fidelity.values())
        return f"SNR {worst:.1f} dB" if worst != float("inf") else "exact"
    return "-"


def _gates_cell(result: dict) -> str:
    gates = result.get("gates")
    if not gates:
        return "-"
    failed = [g for g in gates["results"] if not g["passed"]]
    if not failed:
        return f"passed ({len(gates['results'])})"
    return "FAILED: " + "; ".join(g["reason"].split(": ", 2)[-1] if g["value"] is not None else g["reason"] for g in failed)


def _print_summary(results: list[dict], with_gates: bool = False) -> None:
    rows = []
    for r in results:
        where = r.get("artifact") or (f"kept: {r['failed_folder']}" if r.get("failed_folder") else "-")
        # The whole sentence was printed when the chip failed (and is in --format json); the table keeps it short.
        reason = r.get("reason") or ""
        status = r["status"] if r["status"] != "failed" else f"failed: {reason if len(reason) <= 70 else reason[:67] + '...'}"
        row = [r["chip"], status, where, _accuracy_delta(r.get("report"))]
        if with_gates:
            row.append(_gates_cell(r))
        rows.append(row + [f"{r['wall_seconds']:.1f}"])
    headers = ["CHIP", "STATUS", "ARTIFACT", "ACCURACY"] + (["GATES"] if with_gates else []) + ["TIME (s)"]
    echo_text(table(headers, rows, right_align=(len(headers) - 1,)))


def _exit_for(results: list[dict], first_error: EdgedeployError | None, allow_generated: bool) -> None:
    """The exit status of a build of several chips: a failed chip's error class first, then a
    failed gate (7), then a project only generated (6), else 0."""
    failed = [r for r in results if r["status"] == "failed"]
    generated = [r for r in results if r["status"] == "generated only"]
    gated = [r for r in results if r.get("gates") and not r["gates"]["passed"] and r["status"] != "failed"]
    if failed:
        info(f"build: {len(failed)} of {len(results)} chip(s) failed ({', '.join(r['chip'] for r in failed)}); see the table above")
        raise SystemExit(failed[0]["exit_code"])
    if gated:
        lines = "; ".join(f"{r['chip']}: " + "; ".join(g["reason"] for g in r["gates"]["results"] if not g["passed"]) for r in gated)
        info(f"build: --fail-on: {lines} (exit {EXIT_GATE_FAILED})")
        raise SystemExit(EXIT_GATE_FAILED)
    if generated and not allow_generated:
        info(
            f"build: {', '.join(r['chip'] for r in generated)}: the project was generated but not compiled here "
            f"(exit {EXIT_GENERATED_ONLY}); pass --allow-generated to accept generated-only builds"
        )
        raise SystemExit(EXIT_GENERATED_ONLY)


def add_target_options(command: click.Command, targets) -> click.Command:
    """Append each target's own options (Target.options_type), grouped per vendor in --help.

    A flag (or deprecated alias) that two targets declare, or that is already a shared option,
    disables only the targets involved: their options are left out and building their chips
    says why (`command.disabled_targets`); every other target keeps working.
    """
    from edgedeploy.cli import ROOT_FLAGS
    from edgedeploy.targets.base import option_flags

    shared = {opt for p in command.params for opt in (*getattr(p, "opts", ()), *getattr(p, "secondary_opts", ()))}
    shared.update(ROOT_FLAGS, ("-h", "--help"))
    owners: dict[str, list] = {}
    for target in targets:
        for flag in option_flags(target.options_type):
            owners.setdefault(flag, []).append(target)
    disabled: dict[str, str] = {}
    for flag, claimants in owners.items():
        if flag not in shared and len(claimants) == 1:
            continue
        for target in claimants:
            others = [f"the {t.name} target's" for t in claimants if t is not target] + (["a shared option of `edgedeploy build`"] if flag in shared else [])
            disabled.setdefault(target.id, f"The {target.name} target is disabled: its option {flag} is also {' and '.join(others)}, so its chips ({', '.join(c.id for c in target.chips)}) cannot be built until one is renamed; the other targets are not affected.")
    deprecated: dict[str, str] = {}
    for target in targets:
        if target.id in disabled:
            continue
        for field, meta in target.options_type.declared():
            command.params.append(vendor_option_param(target, field.name, meta, field.default))
            deprecated.update({alias: meta["flag"] for alias in meta.get("deprecated", ())})
    command.deprecated_flags = deprecated  # type: ignore[attr-defined]
    command.disabled_targets = disabled  # type: ignore[attr-defined]
    return command


def refuse_disabled(command: click.Command, chips: list) -> None:
    """A TargetError for the first chip asked for whose target add_target_options disabled."""
    disabled = getattr(command, "disabled_targets", {})
    for target, _ in chips:
        if target.id in disabled:
            raise TargetError(disabled[target.id])


def _add_target_options(command: click.Command) -> click.Command:
    from edgedeploy.targets import all_targets

    return add_target_options(command, all_targets())


COMMANDS = [_add_target_options(build_command)]
