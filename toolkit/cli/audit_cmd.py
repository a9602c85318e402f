"""`edgedeploy audit`: which operators leave the accelerator on each chip, why, and what it costs."""

from __future__ import annotations

import gc
from contextlib import contextmanager

import click

from edgedeploy.cli.options import AbsolutePath, input_shape_option, model_argument
from edgedeploy.cli.output import info, output_options, resolve_output, terminal_width, to_json
from edgedeploy.errors import EdgedeployError

AUDIT_FORMATS = ("text", "json", "md", "html")
FAIL_ON_HELP = (
    "Exit non-zero when nodes leave the accelerator, for CI: 'unsupported' fails on unsupported nodes, "
    "'cpu-fallback' also on nodes that fall back to the CPU (GPU for DLA), 'any' also on nodes kept in float. "
    "Exit codes by the worst placement found: 3 kept in float, 4 fallback, 5 unsupported (every exit code: docs/cli.md)."
)


@click.command("audit")
@model_argument
@click.option("--target", "targets", multiple=True, metavar="CHIP|all", help="Chip to audit for (repeatable), or 'all' (the default): every chip of every target with rules.")
@input_shape_option
@output_options(AUDIT_FORMATS, "the report", aliases=("--output",))
@click.option("--precision", help="Precision to place nodes in (int8, int16, fp16, ...); default: each chip's first.")
@click.option("--fail-on", type=click.Choice(["cpu-fallback", "unsupported", "any"]), help=FAIL_ON_HELP)
@click.option("--by", type=click.Choice(["op", "node"]), default="op", show_default=True, help="Rows of the cross-chip matrix: operators or nodes.")
@click.option("--per-node", is_flag=True, help="List every node with its placement (text format).")
@click.option("--detail", is_flag=True, help="JSON: list every node of every chip (by default a chip lists the nodes off the accelerator or with a violation, and names the rest by partition).")
@click.option("--confirm", is_flag=True, help="Also run the real toolchain where it is installed and show its own verdict beside the prediction, with every disagreement.")
@click.option("--calib", type=AbsolutePath(exists=True, dir_okay=False, path_type=str), help="With --confirm: calibration inputs (.npz keyed by input name); random data otherwise.")
def audit_command(model, targets, input_shapes, output_format, out_path, force, precision, fail_on, by, per_node, detail, confirm, calib) -> None:
    """Place every node of MODEL on each chip: on the accelerator, kept in float, falling back, or unsupported.

    MODEL defaults to the bundled MNIST sample. Prints the nodes grouped by reason and a summary
    line per chip (nodes on the accelerator, accelerator<->fallback transitions and the bytes that
    cross them per inference); with several chips, the operator x chip matrix.
    """
    from edgedeploy import api, readahead

    if model is not None:
        readahead.start(model)  # read while ONNX and numpy are imported (a sixth of a second)
    # The per-node table and the toolchain comparison show every node, so they need them all.
    detail = detail or per_node or confirm
    output = resolve_output(out_path, output_format, force, AUDIT_FORMATS, "edgedeploy audit")
    with collector_paused():
        # --confirm runs toolchains for up to a minute per chip: their progress needs the live
        # display. Without it nothing runs long, and the display (rich, a ticking thread) would
        # cost a tenth of the audit's time.
        reporter = None
        if confirm:
            from edgedeploy.cli.progress import Reporter

            reporter = Reporter.for_command()
        result = api.audit(
            model, targets, input_shapes=input_shapes, precision=precision, fail_on=fail_on, by=by, detail=detail,
            confirm=confirm, calib=calib, processes=audit_processes(), progress=reporter or info,
        )
        if reporter is not None:
            reporter.close()
        # The document as made (no copy): the renderers only read it.
        report = result.document
        if output.format == "json":
            text = to_json(report)
        else:
            from edgedeploy.audit import render

            if output.format == "md":
                text = render.render_markdown(report)
            elif output.format == "html":
                text = render.render_html(report)
            else:
                # Fit the terminal (wrapping the chip matrix) on stdout; a file keeps the full width.
                text = render.render_text(report, per_node=per_node, width=None if output.path else terminal_width())
    output.write(text)
    # What the audit made is only freed by the process's end: skip freeing it object by object.
    from edgedeploy.cli import skip_teardown

    skip_teardown()
    outcome = report["fail_on"]
    if outcome["failed"]:
        found = "; ".join(f"{chip}: " + ", ".join(f"{n} {p}" for p, n in counts.items()) for chip, counts in outcome["found"].items())
        raise FailOnTripped(f"--fail-on {outcome['level']}: nodes leave the accelerator ({found}).", outcome["exit_code"])


# Set to 1 to audit every chip in this one process (for measuring, or debugging the rules), to 2
# to fork the second process even when every CPU is busy.
PROCESSES_VARIABLE = "EDGEDEPLOY_AUDIT_PROCESSES"


def audit_processes() -> int:
    """2 when the program runs where a second process can share the work (edgedeploy.forked:
    Linux, two CPUs usable) and a CPU is free for it now (forked.idle_cpu); else 1.
    EDGEDEPLOY_AUDIT_PROCESSES=1 keeps one process, =2 takes two wherever forking is available.

    Only the program itself forks: a test or script calling the command in its own process
    (main(argv)) audits in that process.
    """
    import os

    from edgedeploy import forked
    from edgedeploy.cli import running_as_program

    wanted = os.environ.get(PROCESSES_VARIABLE, "").strip()
    if wanted == "1" or not (running_as_program() and forked.available()):
        return 1
    return 2 if wanted == "2" or forked.idle_cpu() else 1


@contextmanager
def collector_paused():
    """Python's cyclic garbage collector paused while the audit runs.

    The audit makes a few hundred thousand small objects (node views, placements, report dicts)
    that all live until the report is printed and form no cycles worth collecting; the collector
    would rescan them, and everything imported, about 130 times on a 900-node model on 17 chips
    (some 30 ms of a run that should take about one second). Reference counting still frees
    everything as usual.

    Pausing does not empty the youngest generation: every object made meanwhile is in it, so the
    first allocation after `gc.enable()` would scan them all (and then the older generations),
    0.04-0.05 s of CPU on that model, for a process about to print and exit. The program itself
    therefore freezes them first (gc.freeze: moved out of the collector's sight, at no cost); a
    caller running commands in its own long-lived process keeps its collector's view of them.
    """
    from edgedeploy.cli import running_as_program

    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            if running_as_program():
                gc.freeze()
            gc.enable()


class FailOnTripped(EdgedeployError):
    """The report was printed, and --fail-on found what it was asked to fail on: exit 3, 4 or 5."""

    def __init__(self, message: str, exit_code: int):
        super().__init__(message)
        self.exit_code = exit_code


COMMANDS = [audit_command]
