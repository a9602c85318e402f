"""`edgedeploy measure ARTIFACT... --farm labgrid://HOST:PORT` (or --device NAME of a labgrid inventory entry).

The CLI side of pipeline/farm.py: which of measure's options go to the boards' runs, the merged
report on stdout (JSON with --format json), and the one sentence when something was not measured.
"""

from __future__ import annotations

from pathlib import Path

import click
from click.core import ParameterSource

from edgedeploy.cli.output import echo_text, emit_json, info, table
from edgedeploy.errors import DeviceError, OptionError

# measure's options as the child `edgedeploy measure` of each board takes them, by transport.
SSH_PASSTHROUGH = {
    "sessions": "--sessions",
    "warmup": "--warmup",
    "min_iterations": "--min-iterations",
    "min_duration_s": "--min-duration",
    "eval_path": "--eval",
    "eval_count": "--eval-count",
    "threads": "--threads",
    "skip_before": "--no-before",
    "timeout_s": "--timeout",
}
SERIAL_PASSTHROUGH = {
    "flash": "--flash",
    "firmware_build": "--firmware-build",
    "reset": "--reset",
    "console": "--console",
    "timeout_s": "--timeout",
}
# Options that a serial board's run takes too once it streams the user's data (issue 19 item 3).
SERIAL_EVAL_OPTIONS = ("eval_path", "eval_count")


def _given(ctx: click.Context, name: str) -> bool:
    return ctx.get_parameter_source(name) in (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT)


def _args(ctx: click.Context, mapping: dict[str, str]) -> list[str]:
    argv: list[str] = []
    for name, flag in mapping.items():
        if not _given(ctx, name):
            continue
        value = ctx.params[name]
        if isinstance(value, bool):
            if value:
                argv.append(flag)
            continue
        argv += [flag, str(value)]
    return argv


def run_farm_measure(ctx: click.Context, artifacts: tuple[Path, ...], device, farm: str | None, place: str | None, parallel: int, place_wait_s: float, output_format: str) -> None:
    from edgedeploy.pipeline.farm import FarmRequest, measure_on_farm
    from edgedeploy.devices.labgrid import parse_farm_url

    if farm and device is not None:
        raise OptionError("Give either --farm or --device, not both.")
    if parallel < 0:
        raise OptionError("--parallel must be 0 (one board per artifact) or more.")
    if place_wait_s < 0:
        raise OptionError("--place-wait must be 0 or more seconds.")
    serial_passthrough = dict(SERIAL_PASSTHROUGH)
    if _given(ctx, "eval_path"):
        # A serial board runs the user's data only when given some (--eval-count alone is for the runners).
        for name in SERIAL_EVAL_OPTIONS:
            serial_passthrough[name] = SSH_PASSTHROUGH[name]
    request = FarmRequest(
        artifacts=[Path(a) for a in artifacts],
        address=parse_farm_url(farm) if farm else device.coordinator,
        place_pattern=place or (device.place if device is not None else None),
        parallel=parallel,
        place_wait_s=place_wait_s,
        python=(device.python if device is not None else "python3"),
        ssh_options=(tuple(device.ssh_options) if device is not None else ()),
        allow_commands=(device.allow_commands if device is not None else False),
        workdir=(device.workdir if device is not None else None),
        user=(device.user if device is not None else None),
        ssh_args=_args(ctx, SSH_PASSTHROUGH),
        serial_args=_args(ctx, serial_passthrough),
        session_timeout_s=ctx.params["timeout_s"],
        sessions=ctx.params["sessions"],
    )
    report = measure_on_farm(request, echo=info)
    if output_format == "json":
        emit_json(report)
    else:
        echo_text(render_farm_report(report))
    if report["error"]:
        # What was gathered is printed and kept; the exit status still says not everything was measured.
        raise DeviceError(report["error"])


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
