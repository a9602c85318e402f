"""`edgedeploy measure ARTIFACT --device NAME`: before and after on a device, into the artifact's report."""

from __future__ import annotations

from pathlib import Path

import click

from edgedeploy.cli.devices_cmd import inventory_option
from edgedeploy.cli.output import emit_json, format_option, info


@click.command("measure")
@click.argument("artifact", type=click.Path(file_okay=False, path_type=Path))
@click.option("--device", "device_name", required=True, help="A device of the inventory (`edgedeploy devices`), or `local` for this machine.")
@inventory_option
@click.option("--sessions", type=int, default=3, show_default=True, help="Independent sessions (separate processes) per runner; at least 3.")
@click.option("--warmup", type=int, default=10, show_default=True, help="Untimed runs per session after the first (timed apart) one.")
@click.option("--min-iterations", type=int, default=50, show_default=True, help="Timed runs per session, at least.")
@click.option("--min-duration", "min_duration_s", type=float, default=1.0, show_default=True, help="Seconds of timed runs per session, at least.")
@click.option("--eval", "eval_path", type=click.Path(exists=True, path_type=Path), default=None, help="Inputs (and labels) for the output check: .npz, .npy folder; default: the build's, else the sample's, else seeded random.")
@click.option("--eval-count", type=int, default=200, show_default=True, help="How many of those inputs the device runs.")
@click.option("--threads", type=int, default=0, show_default=True, help="CPU threads for the ONNX Runtime runners (0: ONNX Runtime's default).")
@click.option("--no-before", "skip_before", is_flag=True, help="Skip the baseline (the reference ONNX model on ONNX Runtime CPU on the device).")
@click.option("--timeout", "timeout_s", type=float, default=600.0, show_default=True, help="Seconds one session may take on the device.")
@format_option()
def measure_command(artifact, device_name, inventory, sessions, warmup, min_iterations, min_duration_s, eval_path, eval_count, threads, skip_before, timeout_s, output_format):
    """Run a built artifact on a device: latency before (reference ONNX model on the device's
    ONNX Runtime CPU) and after (the artifact on its runtime), >= 3 sessions each in separate
    processes, and the outputs of both checked on the same inputs. Results go into
    ARTIFACT/measurements/ and ARTIFACT/report.json; a before/after ratio is given only for
    figures of the same device, model, inputs and batch."""
    from edgedeploy.devices import load_inventory
    from edgedeploy.devices.measuring import MeasureRequest, partial_error, run_measure
    from edgedeploy.devices.runners import SessionSettings

    device = load_inventory(inventory).get(device_name)
    settings = SessionSettings(sessions=sessions, warmup=warmup, min_iterations=min_iterations, min_duration_s=min_duration_s, timeout_s=timeout_s)
    request = MeasureRequest(artifact, device, settings, eval_path, eval_count, threads, before=not skip_before)
    record = run_measure(request, echo=info, raise_on_partial=False)
    if output_format == "json":
        emit_json(record)
    else:
        from edgedeploy.report.text import render_measurement

        click.echo(render_measurement(record))
    if record["partial"]:
        # What was gathered is printed and saved; the exit status still says the run failed.
        raise partial_error(record, artifact)


COMMANDS = [measure_command]
