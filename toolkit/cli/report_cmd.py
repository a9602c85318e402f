"""`edgedeploy report DIR...`: render artifact reports, or combine several into one comparison."""

from __future__ import annotations

from pathlib import Path

import click

from edgedeploy.cli.options import AbsolutePath

from edgedeploy.cli.output import echo_text, format_option, info


@click.command("report")
@click.argument("dirs", nargs=-1, required=True, type=AbsolutePath(exists=True, path_type=Path))
@format_option(("text", "md", "html", "json"))
@click.option("--output", "-o", "output", type=AbsolutePath(dir_okay=False, path_type=Path), default=None, help="Write to this file (atomically) instead of stdout.")
def report_command(dirs: tuple[Path, ...], output_format: str, output: Path | None) -> None:
    """Render the reports of one or more artifacts (or folders of artifacts) as one comparison.

    The JSON reports are the source; text, Markdown and a self-contained HTML page (inline SVG
    plots: latency per session, accuracy before/after, the audit matrix) are rendered from them.
    Figures from different devices are shown side by side and never divided.
    """
    from edgedeploy.artifacts import atomic_write_text
    from edgedeploy.errors import ArtifactError
    from edgedeploy.report.artifact import load_artifact
    from edgedeploy.report.combine import artifact_paths, combine

    paths = artifact_paths(list(dirs))
    if not paths:
        raise ArtifactError("No artifact reports found in " + ", ".join(map(str, dirs)) + ".")
    comp = combine([load_artifact(p) for p in paths])
    if output_format == "json":
        import json

        text = json.dumps(comp, indent=2, default=str) + "\n"
    elif output_format == "md":
        from edgedeploy.report.markdown import render_markdown

        text = render_markdown(comp) + "\n"
    elif output_format == "html":
        from edgedeploy.report.html import render_html

        text = render_html(comp)
    else:
        from edgedeploy.report.text import render_comparison

        text = render_comparison(comp) + "\n"
    if output is not None:
        atomic_write_text(output, text)
        info(f"report: wrote {output} ({output_format}, {len(paths)} artifact(s))")
    else:
        echo_text(text, nl=False)


COMMANDS = [report_command]
