"""`edgedeploy measure ARTIFACT... --farm labgrid://HOST:PORT` (or --device NAME of a labgrid inventory entry).

The CLI side of edgedeploy.measure_farm (the Python API, which runs pipeline/farm.py): which of
measure's options the user gave (those go to the boards' runs), the merged report on stdout (JSON
with --format json), and the one sentence when something was not measured.
"""

from __future__ import annotations

from pathlib import Path

import click
from click.core import ParameterSource

from edgedeploy.cli.output import echo_text, emit_json, info, table
from edgedeploy.errors import OptionError

# measure's options (the CLI's parameter names) that go to the boards' runs when given, by
# their edgedeploy.measure_farm keyword; pipeline/farm.py turns them into the child's flags.
FARM_OPTIONS = {
    "sessions": "sessions",
    "warmup": "warmup",
    "min_iterations": "min_iterations",
    "min_duration_s": "min_duration_s",
    "eval_path": "eval",
    "eval_count": "eval_count",
    "threads": "threads",
    "timeout_s": "timeout_s",
    "flash": "flash",
    "firmware_build": "firmware_build",
    "reset": "reset",
    "console": "console",
}


def _given(ctx: click.Context, name: str) -> bool:
    return ctx.get_parameter_source(name) in (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT)


def run_farm_measure(ctx: click.Context, artifacts: tuple[Path, ...], device, farm: str | None, place: str | None, parallel: int, place_wait_s: float, output_format: str) -> None:
    """The farm run through the Python API (edgedeploy.measure_farm), the merged report printed,
    and the exit status: 10 when not every artifact was measured."""
    from edgedeploy import api

    # The API checks these too, by its keywords; the command says them by its flags.
    if farm and device is not None:
        raise OptionError("Give either --farm or --device, not both.")
    if parallel < 0:
        raise OptionError("--parallel must be 0 (one board per artifact) or more.")
    if place_wait_s < 0:
        raise OptionError("--place-wait must be 0 or more seconds.")
    options = {keyword: ctx.params[name] for name, keyword in FARM_OPTIONS.items() if _given(ctx, name)}
    measured = api.measure_farm(
        list(artifacts),
        farm,
        device=device,
        place=place,
        parallel=parallel,
        place_wait_s=place_wait_s,
        before=not ctx.params["skip_before"],
        allow_partial=True,  # printed first, then the exit status says it failed
        progress=info,
        **options,
    )
    report = measured.document
    if output_format == "json":
        emit_json(report)
    else:
        echo_text(render_farm_report(report))
    if measured.error:
        # What was gathered is printed and kept; the exit status still says not everything was measured.
        raise measured.partial_error()


def _us(value) -> str:
    return "" if value is None else (f"{value / 1000:.2f} ms" if value >= 1000 else f"{value:.1f} us")


def render_farm_report(report: dict) -> str:
    rows = []
    for run in report["runs"]:
        after = (run.get("latency") or {}).get("after") or {}
        before = (run.get("latency") or {}).get("before") or {}
        comparison = run.get("comparison_on_this_board") or {}
        speedup = comparison.get("speedup")
        rng = after.get("session_median_range_us")
        rows.append(
            [
                run["place"] or "-",
                Path(run["artifact"]).name if run["artifact"] else "",
                run["chip"] or "generic",
                run["status"] + (" (lock lost)" if run.get("lock_lost") else ""),
                _us(after.get("median_us")) + (f" [{_us(rng[0])}-{_us(rng[1])}]" if rng else ""),
                _us(before.get("median_us")),
                f"{speedup:.2f}x" if speedup else "",
                f"{run['wall_s']:.1f} s" if run.get("wall_s") is not None else "",
            ]
        )
    farm = report["farm"]
    lines = [
        f"labgrid farm {farm['url']} (as {farm['acquired_as']}): {len(report['runs'])} run(s), at most {farm['parallel']} at once, {report['wall_s']:.1f} s",
        table(["place", "artifact", "chip", "status", "after median [session range]", "before median", "speedup (same board)", "wall"], rows),
        f"Across boards: {report['across_boards']['why']}.",
    ]
    for run in report["runs"]:
        if run.get("record_file"):
            lines.append(f"  {run['place']}: {run['record_file']}")
        if run.get("error"):
            lines.append(f"  {run['place'] or run['artifact']}: {run['error']}")
    if report["partial"]:
        lines.append("PARTIAL: " + (report["error"] or "not every artifact was measured"))
    return "\n".join(lines)
