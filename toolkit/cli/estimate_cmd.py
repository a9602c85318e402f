"""`edgedeploy estimate`: latency per inference on chips you have no board for, with its error."""

from __future__ import annotations

from pathlib import Path

import click

from edgedeploy.cli.options import AbsolutePath, input_shape_option, model_argument, parse_shapes
from edgedeploy.cli.output import output_options, resolve_output, terminal_width, to_json

ESTIMATE_FORMATS = ("text", "json", "md")


@click.command("estimate")
@model_argument
@click.option("--target", "targets", multiple=True, metavar="CHIP|all", help="Chip to estimate for (repeatable), or 'all' (the default): every chip with audit rules.")
@input_shape_option
@click.option("--budget-ms", type=click.FloatRange(min=0, min_open=True), metavar="N", help="Mark which chips meet N ms per inference by the estimate.")
@click.option("--precision", help="Precision to place nodes in; estimates exist only for the precision of the chip's published figures (int8).")
@click.option("--artifacts", type=AbsolutePath(file_okay=False, path_type=Path), default=Path("edgedeploy-out"), show_default=True, metavar="DIR", help="The build folder (build --out) whose builds of this model give the toolchain's own estimate beside edgedeploy's (Vela's for imx93).")
@output_options(ESTIMATE_FORMATS, "the estimates")
def estimate_command(model, targets, input_shapes, budget_ms, precision, artifacts, output_format, out_path, force) -> None:
    """Estimate MODEL's latency per inference on each chip, with a range and the chip's typical error.

    The estimate is a cost model on the audit's placements (MACs and bytes per op class on the
    accelerator, a per-layer overhead, fallback nodes on the CPU, each transition's copy),
    fitted per chip to the vendors' published device figures; the error printed with it is the
    leave-one-model-out error over those figures. A chip with too few figures gets no estimate,
    and says why. No toolchain runs. MODEL defaults to the bundled MNIST sample.
    """
    from edgedeploy.api import estimate
    from edgedeploy.cli.output import info

    output = resolve_output(out_path, output_format, force, ESTIMATE_FORMATS, "edgedeploy estimate")
    report = estimate(model, targets or ("all",), input_shapes=parse_shapes(input_shapes), precision=precision, budget_ms=budget_ms, artifacts=artifacts, progress=info).document
    if output.format == "json":
        text = to_json(report)
    else:
        from edgedeploy.estimate import render

        text = render.render_markdown(report) if output.format == "md" else render.render_text(report, width=None if output.path else terminal_width())
    output.write(text)


COMMANDS = [estimate_command]
