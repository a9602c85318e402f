"""`edgedeploy diagnose ARTIFACT`: where int8 breaks the model, per node, and the likely cause."""

from __future__ import annotations

from pathlib import Path

import click

from edgedeploy.cli.options import AbsolutePath
from edgedeploy.cli.output import info, output_options, resolve_output, to_json

DIAGNOSE_FORMATS = ("text", "md", "html", "json")


@click.command("diagnose")
@click.argument("artifact", type=AbsolutePath(exists=True, file_okay=False, path_type=Path))
@click.option("--calib", type=AbsolutePath(exists=True, path_type=Path), default=None, help="Calibration data [default: what the build calibrated on, from its manifest].")
@click.option("--eval", "eval_path", type=AbsolutePath(exists=True, path_type=Path), default=None, help="Compute the figures on these inputs (ranges still come from the calibration data).")
@click.option("--calib-count", type=click.IntRange(min=1), default=None, help="Calibration samples used [default: as many as the build used].")
@click.option("--eval-count", type=click.IntRange(min=1), default=32, show_default=True, help="Evaluation samples used.")
@click.option("--no-qdq", is_flag=True, help="Leave out ONNX Runtime's QDQ quantisation (the toolchain-neutral path beside the target's).")
@click.option("--summary", is_flag=True, help="Text: leave out the table of every node.")
@click.option("--no-verify", is_flag=True, help="Skip checking the artifact's files against its manifest (the output says so).")
@output_options(DIAGNOSE_FORMATS, "the diagnosis")
def diagnose_command(artifact, calib, eval_path, calib_count, eval_count, no_qdq, summary, no_verify, output_format, out_path, force) -> None:
    """Where int8 breaks ARTIFACT's model, node by node, and why.

    For the artifact's target (when its toolchain simulates on this host) and for ONNX Runtime's
    QDQ quantisation: per node of the model, the quantised tensor against the float one on the
    same inputs, accumulated (everything up to it quantised) and isolated (that node alone
    quantised, on float inputs): SNR, cosine, max abs error. Then the first node where the
    accumulated SNR falls sharply, the worst nodes alone, and the likely cause where the data
    show it. The artifact is not changed.
    """
    from edgedeploy.report.diagnosis import render_text
    from edgedeploy.report.diagnosis_pages import diagnosis_markdown_page
    from edgedeploy.report.html import render_diagnosis_page
    from edgedeploy.pipeline.diagnose import DiagnoseOptions, diagnose_artifact

    output = resolve_output(out_path, output_format, force, DIAGNOSE_FORMATS, "edgedeploy diagnose")
    options = DiagnoseOptions(calib=calib, eval=eval_path, calib_count=calib_count, eval_count=eval_count, qdq=not no_qdq, verify=not no_verify)
    document = diagnose_artifact(artifact, options, info)
    renderers = {"json": to_json, "md": diagnosis_markdown_page, "html": render_diagnosis_page}
    output.write(renderers.get(output.format, lambda doc: render_text(doc, nodes=not summary))(document))


COMMANDS = [diagnose_command]
