"""`edgedeploy report DIR...`: render artifact reports, or combine several into one comparison."""

from __future__ import annotations

from pathlib import Path

import click

from edgedeploy.cli.options import AbsolutePath
from edgedeploy.cli.output import info, output_options, resolve_output, to_json

from edgedeploy.cli.output import terminal_width

REPORT_FORMATS = ("text", "md", "html", "json")


@click.command("report")
@click.argument("dirs", nargs=-1, required=True, type=AbsolutePath(exists=True, path_type=Path))
@click.option("--no-verify", is_flag=True, help="Read the artifacts without checking their files against the manifest (the output says so).")
@output_options(REPORT_FORMATS, "the comparison", aliases=("--output",))
def report_command(dirs: tuple[Path, ...], no_verify: bool, output_format: str | None, out_path: Path | None, force: bool) -> None:
    """Render the reports of one or more artifacts (or folders of artifacts) as one comparison.

    The JSON reports are the source; text, Markdown and a self-contained HTML page (inline SVG
    plots: latency per session, accuracy before/after, the audit matrix) are rendered from them.
    Figures from different devices are shown side by side and never divided.
    """
    from edgedeploy.errors import ArtifactError
    from edgedeploy.report.artifact import load_artifact
    from edgedeploy.pipeline.report import combine_reports
    from edgedeploy.report.combine import artifact_paths

    output = resolve_output(out_path, output_format, force, REPORT_FORMATS, "edgedeploy report")
    paths = artifact_paths(list(dirs))
    if not paths:
        raise ArtifactError("No artifact reports found in " + ", ".join(map(str, dirs)) + ".")
    comp = combine_reports([load_artifact(p, verify=not no_verify) for p in paths])
    if no_verify:
        info(f"report: NOT VERIFIED: --no-verify: the files of {len(paths)} artifact(s) were not checked against their manifests")
    if output.format == "json":
        text = to_json(comp)
    elif output.format == "md":
        from edgedeploy.report.markdown import render_markdown

        text = render_markdown(comp) + "\n"
    elif output.format == "html":
        from edgedeploy.report.html import render_html

        text = render_html(comp)
    else:
        from edgedeploy.report.text import render_comparison

        # Fit the terminal on stdout (COLUMNS); a file keeps the full width.
        text = render_comparison(comp, width=None if output.path is not None else terminal_width()) + "\n"
    if output.path is not None:
        info(f"report: {len(paths)} artifact(s)")
    output.write(text)


COMMANDS = [report_command]
