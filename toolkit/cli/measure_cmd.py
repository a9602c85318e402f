"""`edgedeploy measure ARTIFACT --device NAME`: before and after on a device, into the artifact's report."""

from __future__ import annotations

from pathlib import Path

import click

from edgedeploy.cli.options import AbsolutePath
from edgedeploy.targets import chip_ids
from click.core import ParameterSource

from edgedeploy.cli.devices_cmd import inventory_option
from edgedeploy.cli.output import echo_text, info, output_options, resolve_output, to_json
from edgedeploy.cli.project import project_options
from edgedeploy.errors import GateFailed, OptionError
from edgedeploy.gates import evaluate_measurement
from edgedeploy.gates import summary as gate_summary

MEASURE_FORMATS = ("text", "json")
FAIL_ON_HELP = (
    "A CI gate (repeatable): fail (exit 7) when the after model misses the threshold, or it cannot be checked. "
    "Keys: p50=, p99=DURATION (2.5ms, 800us; the worst session), accuracy-drop=PP, snr=DB, cosine=MIN (on the device's outputs). "
    "CHIP: in front scopes a gate to one chip. See docs/cli.md."
)
# Options that shape the sessions of copied runners; a board's firmware has them built in.
RUNNER_ONLY_OPTIONS = {
    "sessions": "--sessions",
    "warmup": "--warmup",
    "min_iterations": "--min-iterations",
    "min_duration_s": "--min-duration",
    "threads": "--threads",
}
# --eval and --eval-count apply to both: a board on a serial port gets the samples streamed to it.
# Options only a board on a serial port reads.
def serial_flash_modes() -> list[str]:
    """The ways the targets can put firmware on a serial board (Target.serial_flash_modes), each once."""
    from edgedeploy.targets import all_targets

    return list(dict.fromkeys(mode for target in all_targets() for mode in target.serial_flash_modes))


SERIAL_ONLY_OPTIONS = {"flash": "--flash", "firmware_build": "--firmware-build", "reset": "--reset", "console": "--console"}


def _option_group(*options):
    """One decorator for several click options, listed in --help in the order given."""

    def apply(func):
        for option in reversed(options):
            func = option(func)
        return func

    return apply


# A labgrid farm (pipeline/farm.py, cli/measure_farm.py): where the boards come from.
farm_options = _option_group(
    click.option("--farm", "farm_url", default=None, metavar="labgrid://HOST:PORT", help="Measure on the boards of a labgrid farm: per artifact, a place tagged with its chip (chip=NAME) is acquired, used and released."),
    click.option("--place", "place_pattern", default=None, metavar="PATTERN", help="Farm: only places whose name (or alias) contains PATTERN, or matches it as a glob (rock5b-*)."),
    click.option("--parallel", type=int, default=0, show_default=True, help="Farm: boards in use at once (0: one per artifact)."),
    click.option("--place-wait", "place_wait_s", type=float, default=600.0, show_default=True, help="Farm: seconds to wait for a place someone else holds before giving up on that artifact."),
)
# A board on a serial port: how its firmware is flashed and its console read.
serial_board_options = _option_group(
    click.option(
        "--flash",
        type=click.Choice(["auto", *serial_flash_modes(), "none"]),
        default="auto",
        show_default=True,
        help="Serial boards: build and flash with ESP-IDF's idf.py (idf), flash --firmware-build with esptool (prebuilt), flash nothing (none), or auto: idf where ESP-IDF is installed, else prebuilt when given, else none.",
    ),
    click.option("--firmware-build", type=AbsolutePath(exists=True, file_okay=False, path_type=Path), default=None, help="Serial boards: an ESP-IDF build folder of this artifact's firmware that you built (holds flash_args)."),
    click.option("--reset", type=click.Choice(["auto", "rts", "none"]), default="auto", show_default=True, help="Serial boards: reset through the RTS line (rts), ask for the RESET button where there is none (auto), or just listen (none)."),
    click.option("--console", is_flag=True, help="Serial boards: print the board's console lines to stderr as they arrive."),
)


@click.command("measure")
@click.argument("artifacts", nargs=-1, required=True, type=AbsolutePath(file_okay=False, path_type=Path))
@click.option(
    "--device",
    "device_name",
    default=None,
    help="A device of the inventory (`edgedeploy devices`), `local` for this machine, or a board on a serial port as CHIP@PORT (esp32s3@/dev/ttyUSB0); an inventory entry of transport labgrid is a farm (as --farm). Default: [measure] device of the project file.",
)
@farm_options
@inventory_option
@click.option("--sessions", type=int, default=3, show_default=True, help="Independent sessions (separate processes) per runner; at least 3.")
@click.option("--warmup", type=int, default=10, show_default=True, help="Untimed runs per session after the first (timed apart) one.")
@click.option("--min-iterations", type=int, default=50, show_default=True, help="Timed runs per session, at least.")
@click.option("--min-duration", "min_duration_s", type=float, default=1.0, show_default=True, help="Seconds of timed runs per session, at least.")
@click.option("--eval", "eval_path", type=AbsolutePath(exists=True, path_type=Path), default=None, help="Inputs (and labels) for the output check: .npz, .npy folder; default: the build's, else the sample's, else seeded random.")
@click.option("--eval-count", type=int, default=200, show_default=True, help="How many of those inputs the device runs.")
@click.option("--threads", type=int, default=0, show_default=True, help="CPU threads for the ONNX Runtime runners (0: ONNX Runtime's default).")
@click.option("--no-before", "skip_before", is_flag=True, help="Skip the baseline (the reference ONNX model on ONNX Runtime CPU on the device).")
@click.option("--timeout", "timeout_s", type=float, default=600.0, show_default=True, help="Seconds one session may take on the device (serial: the whole boot's run, reset to last result).")
@serial_board_options
@click.option("--fail-on", "fail_on", multiple=True, metavar="[CHIP:]KEY=VALUE", help=FAIL_ON_HELP)
@project_options
@output_options(MEASURE_FORMATS, "the measurement record (it is also kept in ARTIFACT/measurements/)")
@click.pass_context
def measure_command(ctx, **values):
    """Run a built artifact on a device: latency before (reference ONNX model on the device's
    ONNX Runtime CPU) and after (the artifact on its runtime), >= 3 sessions each in separate
    processes, and the outputs of both checked on the same inputs. Results go into
    ARTIFACT/measurements/ and ARTIFACT/report.json; a before/after ratio is given only for
    figures of the same device, model, inputs and batch that differ in one thing.

    A board on a serial port (CHIP@PORT, or an inventory entry with transport "serial") runs the
    artifact's firmware instead: flashed per --flash, reset, and its result lines read from the
    console (sessions of one boot, on the test input embedded in the model).

    With --farm labgrid://HOST:PORT (or a labgrid inventory entry), several artifacts measure on
    the farm's boards in parallel, one place each, into one merged report (docs/farm.md)."""
    from edgedeploy.cli import project as project_file
    from edgedeploy.cli.progress import Reporter
    from edgedeploy.devices import find_device

    project = project_file.load_for_command(values.pop("project_path"), values.pop("no_project"))
    if project is not None:
        values = project_file.apply(ctx, values, project.measure, project)
    gates = project_file.command_gates(values["fail_on"], "measure", project)
    output = resolve_output(values["out_path"], values["output_format"], values["force"], MEASURE_FORMATS, "edgedeploy measure")
    device = find_device(values["device_name"], values["inventory"], chip_ids()) if values["device_name"] else None
    if values["farm_url"] or (device is not None and device.transport == "labgrid"):
        return _measure_on_farm(ctx, values, device, gates, output)
    artifact = _the_one_artifact(ctx, values["artifacts"], device)
    _refuse_options_not_for(device, _given_options(ctx))
    reporter = Reporter.for_command()  # every session runs >= --min-duration, a board's boot longer
    measurement = _measure(artifact, device, values, reporter)
    reporter.close()
    _write_and_judge(measurement, gates, output)


def _measure_on_farm(ctx, values: dict, device, gates, output):
    """Several artifacts on the boards of a labgrid farm (cli/measure_farm.py)."""
    from edgedeploy.cli.measure_farm import run_farm_measure

    if gates or output.path is not None:
        # Not joined yet: the farm's merged report has its own shape (pipeline/farm.py).
        raise OptionError("--fail-on and -o apply to one artifact on one device, not yet to a labgrid farm; each artifact's report.json holds its farm measurement.")
    return run_farm_measure(ctx, values["artifacts"], device, values["farm_url"], values["place_pattern"], values["parallel"], values["place_wait_s"], output.format)


def _the_one_artifact(ctx, artifacts, device) -> Path:
    """The artifact to measure on one device: a farm's options and several artifacts are refused here."""
    for name, flag in (("place_pattern", "--place"), ("parallel", "--parallel"), ("place_wait_s", "--place-wait")):
        if ctx.get_parameter_source(name) == ParameterSource.COMMANDLINE:
            raise OptionError(f"{flag} applies only to a labgrid farm (--farm labgrid://HOST:PORT).")
    if device is None:
        raise OptionError("Give the device to measure on: --device NAME, [measure] device in edgedeploy.toml, or a labgrid farm: --farm labgrid://HOST:PORT.")
    if len(artifacts) != 1:
        raise OptionError(f"{len(artifacts)} artifacts were given for one device; measure them one at a time, or on a labgrid farm (--farm), which runs several at once.")
    return artifacts[0]


def _given_options(ctx) -> set[str]:
    """The runner-only and serial-only options the user set (on the command line or in the environment)."""
    return {name for name in (*RUNNER_ONLY_OPTIONS, *SERIAL_ONLY_OPTIONS) if ctx.get_parameter_source(name) in (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT)}


def _refuse_options_not_for(device, given: set[str]) -> None:
    """A board's firmware has its sessions built in; a copied runner has no firmware to flash."""
    if device.transport == "serial":
        wrong = [RUNNER_ONLY_OPTIONS[name] for name in RUNNER_ONLY_OPTIONS if name in given]
        if wrong:
            raise OptionError(
                f"{', '.join(wrong)} {'does' if len(wrong) == 1 else 'do'} not apply to the board '{device.name}': its firmware has the sessions, warm-up and "
                "iterations built in (your own data goes to it with --eval)."
            )
        if "eval_count" in given and "eval_path" not in given:
            raise OptionError(f"--eval-count applies to the board '{device.name}' only with --eval DATA (the samples streamed to it).")
    else:
        wrong = [SERIAL_ONLY_OPTIONS[name] for name in SERIAL_ONLY_OPTIONS if name in given]
        if wrong:
            raise OptionError(f"{', '.join(wrong)} {'applies' if len(wrong) == 1 else 'apply'} only to boards on a serial port, not to device '{device.name}' ({device.transport}).")


def _measure(artifact: Path, device, values: dict, reporter):
    """edgedeploy.api.measure with the command's options (a partial record is returned, not raised)."""
    from edgedeploy import api

    from edgedeploy.cli.options import api_keywords

    # The session and board options are api.measure's keywords by name; these four are spelled
    # differently on the command line (console: a switch there, a callback in the API).
    options = api_keywords(api.measure, dict(values))
    options.update(
        eval=values["eval_path"],
        before=not values["skip_before"],
        console=(lambda line: info(f"  console: {line}")) if values["console"] else None,
        allow_partial=True,  # printed first, then the exit status says it failed
    )
    return api.measure(artifact, device, **options, progress=reporter)


def _write_and_judge(measurement, gates, output) -> None:
    """Write the record, then exit non-zero for a partial run or a failed gate."""
    record = measurement.document
    results = evaluate_measurement(gates, record) if gates else []
    if gates:
        # The gates are this run's verdict, in the command's output; the artifact keeps the figures.
        record["gates"] = gate_summary(results)
        for result in results:
            info(f"measure: --fail-on {result.reason}")
    if output.format == "json":
        output.write(to_json(record))
    else:
        from edgedeploy.report.text import render_measurement

        output.write(render_measurement(record))
    if measurement.partial:
        # What was gathered is printed and saved; the exit status still says the run failed.
        raise measurement.partial_error()
    failed = [r for r in results if not r.passed]
    if failed:
        raise GateFailed(f"--fail-on: {'; '.join(r.reason for r in failed)}.")


COMMANDS = [measure_command]
