"""`edgedeploy fix`: rewrite a model so its operators stay on the accelerators of the given chips."""

from __future__ import annotations

from pathlib import Path

import click
import onnx

from edgedeploy.cli.options import AbsolutePath, input_shape_option, model_argument, parse_shapes, resolve_model
from edgedeploy.cli.output import echo_text, emit_json, format_option, info, refuse_existing, table
from edgedeploy.fix.engine import DEFAULT_EVAL_COUNT


@click.command("fix")
@model_argument
@click.option("--target", "targets", multiple=True, metavar="CHIP", help="Target chip to fix for (repeatable; required unless --list).")
@click.option("--out", "-o", "out_path", type=AbsolutePath(dir_okay=False, path_type=Path), metavar="FILE.onnx", help="Where to write the rewritten model (default: <model>.fixed.onnx in the current folder); the JSON report goes beside it as .fix.json. Existing files need --force.")
@click.option("--force", is_flag=True, help="Replace existing output files.")
@click.option("--allow-approx", is_flag=True, help="Also try approximations (e.g. tanh GELU); their error is reported.")
@click.option("--rewrite", "only", multiple=True, metavar="NAME", help="Only try these rewrites (repeatable); see --list.")
@click.option("--eval", "eval_data", type=AbsolutePath(exists=True, path_type=Path), help="Evaluation data for the fidelity check (.npz, .npy folder, images).")
@click.option("--eval-count", type=click.IntRange(min=1), default=DEFAULT_EVAL_COUNT, show_default=True, help="Samples of the evaluation data to use.")
@click.option("--allow-nonfinite", is_flag=True, help="Accept NaN, infinite or complex values in the evaluation data (refused by default); a warning says so.")
@click.option("--confirm", is_flag=True, help="Also run each chip's real toolchain (where installed) on the model before and after, and report its own verdict.")
@click.option("--list", "list_rewrites", is_flag=True, help="List the rewrites and exit (no model or --target needed).")
@input_shape_option
@format_option()
def fix_command(model, targets, out_path, force, allow_approx, only, eval_data, eval_count, allow_nonfinite, confirm, list_rewrites, input_shapes, output_format) -> None:
    """Rewrite MODEL so nodes that fall back or are unsupported on each --target move onto its accelerator.

    A rewrite is kept only if the audit gets better on some target and worse on none, and the
    outputs stay within the rewrite's tolerance on the evaluation data (default: the sample's
    held-out split for the sample, else random inputs). Writes the rewritten model and a JSON
    report: what changed which nodes, placements before and after, fidelity, and the opset when
    a rewrite needed a newer one.
    """
    from edgedeploy.artifacts import atomic_write_bytes, atomic_write_json
    from edgedeploy.cli.progress import Reporter
    from edgedeploy.fix.engine import evaluation_feeds, fix_model
    from edgedeploy.pipeline.fix import confirm_fix
    from edgedeploy.model import load_model

    if list_rewrites:
        return _print_rewrites(output_format)
    _refuse_bad_request(targets, only, out_path)
    rule_sets, precisions = _rule_sets_of(targets)
    model_path = resolve_model(model)
    loaded = load_model(model_path, parse_shapes(input_shapes), require_static=True)
    out_path = out_path or Path.cwd() / f"{loaded.name}.fixed.onnx"
    report_path = out_path.with_suffix(".fix.json")
    for path in (out_path, report_path):
        refuse_existing(path, force)
    feeds, source = evaluation_feeds(loaded, eval_data, eval_count, model_path, allow_nonfinite=allow_nonfinite)
    reporter = Reporter.for_command()  # --confirm runs each chip's toolchain twice
    result = fix_model(loaded, rule_sets, feeds, source, allow_approx=allow_approx, only=list(only) or None, echo=reporter, precisions=precisions)
    report = result.to_dict()
    report["fixed_model"]["path"] = str(out_path)
    if confirm:
        report["confirmed"] = confirm_fix(result, echo=reporter)
    reporter.close()
    fixed_proto = onnx.ModelProto()
    fixed_proto.CopyFrom(result.fixed.proto)
    atomic_write_bytes(out_path, fixed_proto.SerializeToString())
    atomic_write_json(report_path, report)
    if output_format == "json":
        emit_json(report)
        return
    _print_fix_report(report)
    echo_text(f"wrote {out_path} and {report_path}")


def _print_rewrites(output_format: str) -> None:
    """`fix --list`: every rewrite, its exactness, tolerance and the opset it needs."""
    from edgedeploy.fix.passes import REWRITES

    rows = [{"name": r.name, "exact": r.exact, "max_abs_error": r.max_abs_error, "min_opset": r.min_opset or None, "summary": r.summary} for r in REWRITES]
    if output_format == "json":
        emit_json({"rewrites": rows})
    else:
        echo_text(table(["REWRITE", "EXACT", "TOLERANCE", "OPSET", "WHAT"], [[r["name"], "yes" if r["exact"] else "approx", r["max_abs_error"], r["min_opset"] or "-", r["summary"]] for r in rows]))


def _refuse_bad_request(targets, only, out_path: Path | None) -> None:
    """What the user got wrong in the options, before the model is read."""
    from edgedeploy.errors import OptionError, UnknownName
    from edgedeploy.fix.passes import REWRITES

    if not targets:
        raise OptionError("Give the chip(s) to fix for with --target CHIP (see `edgedeploy targets`), or --list for the rewrites.")
    known = {r.name for r in REWRITES}
    for name in only:
        if name not in known:
            raise UnknownName(f"Unknown rewrite '{name}'; see `edgedeploy fix --list`.")
    if out_path is not None and out_path.suffix.lower() != ".onnx":
        raise OptionError(f"-o {out_path.name}: fix writes the rewritten ONNX model; name it .onnx (the report goes beside it as .fix.json).")


def _rule_sets_of(targets) -> tuple[dict, dict]:
    """({chip id: its audit rules}, {chip id: its first precision}): what a rewrite is judged by."""
    from edgedeploy.errors import OptionError
    from edgedeploy.targets import find_chip
    from edgedeploy.targets.base import Capability

    rule_sets = {}
    precisions = {}
    for chip_id in targets:
        target, chip = find_chip(chip_id)
        precisions[chip.id] = chip.precisions[0]
        if not target.has(Capability.AUDIT):
            raise OptionError(f"The {target.name} target declares no audit rules, so `fix` cannot judge rewrites for {chip.id}.")
        rule_sets[chip.id] = target.rule_set(chip.id)
    return rule_sets, precisions


def _print_fix_report(report: dict) -> None:
    """The text view of a fix report: placements before and after, what was applied or not and why, fidelity."""
    for chip, data in report["chips"].items():
        echo_text(f"before  {data['before_line']}")
        echo_text(f"after   {data['after_line']}")
    echo_text("")
    if report["applied"]:
        rows = []
        for a in report["applied"]:
            for c in a["changes"]:
                rows.append([a["rewrite"], "exact" if a["exact"] else "approx", ", ".join(c["replaced"]) or c["note"], f"{a['max_abs_error']:.3g}"])
        echo_text(table(["REWRITE", "KIND", "REPLACED NODES", "MAX ABS ERROR"], rows))
    else:
        echo_text("No rewrite improved the placements.")
    tried = [a for a in report["not_applied"] if a["reason"] != "pattern not found"]
    for a in tried:
        echo_text(f"not applied: {a['rewrite']}: {a['reason']}")
    if report.get("opset_change"):
        change = report["opset_change"]
        echo_text(f"opset raised: {change['from']} -> {change['to']} for {', '.join(change['by']) or 'the rewrites kept'}: {change['note']}")
    echo_text("")
    for chip, c in report.get("confirmed", {}).items():
        if "skipped" in c:
            echo_text(f"toolchain {chip}: not confirmed: {c['skipped']}")
        else:
            echo_text(f"toolchain {chip} ({c['toolchain']}): before {c['before']['line']}; after {c['after']['line']}; rules vs toolchain after: {c['after']['agreement_line']}")
    for name, f in report["fidelity"]["per_output"].items():
        echo_text(f"fidelity {name}: cosine {f['cosine']:.6f}, max abs error {f['max_abs_error']:.3g} on {report['fidelity']['evaluation_data']}")


COMMANDS = [fix_command]
