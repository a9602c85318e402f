"""`edgedeploy devices`: the device inventory, and a reachability check of one device."""

from __future__ import annotations

import json
from pathlib import Path

import click

from edgedeploy.cli.options import AbsolutePath
from edgedeploy.targets import chip_ids

from edgedeploy.cli.output import echo_text, emit_json, format_option, info, table

# The probe `devices check` runs on the device: standard library only, prints one JSON line.
PROBE = (
    "import json, os, platform, sys\n"
    "print(json.dumps({'python': platform.python_version(), 'machine': platform.machine(), "
    "'system': platform.system(), 'release': platform.release(), 'hostname': platform.node(), "
    "'cpus': os.cpu_count(), 'executable': sys.executable}))\n"
)


def inventory_option(func):
    return click.option(
        "--inventory",
        type=AbsolutePath(dir_okay=False, path_type=Path),
        default=None,
        help="Device inventory file (TOML or JSON); default: $EDGEDEPLOY_DEVICES, else ~/.config/edgedeploy/devices.toml.",
    )(func)


@click.group("devices", invoke_without_command=True)
@click.pass_context
def devices_group(ctx):
    """The devices `edgedeploy measure` can run on (the inventory file), and checking one."""
    if ctx.invoked_subcommand is None:
        ctx.invoke(list_command)


@devices_group.command("list")
@inventory_option
@format_option()
def list_command(inventory: Path | None = None, output_format: str = "text") -> None:
    """List the devices of the inventory (the built-in `local` included)."""
    from edgedeploy.devices.inventory import describe, load_inventory

    inv = load_inventory(inventory, chip_ids())
    rows = [describe(d) for d in inv.devices.values()]
    if output_format == "json":
        emit_json({"schema": "edgedeploy.devices/1", "inventory": str(inv.path) if inv.path else None, "devices": rows})
        return
    info(f"inventory: {inv.path}" if inv.path else "inventory: none (only the built-in local device); see `edgedeploy devices --help`")
    echo_text(table(["NAME", "CHIP", "TRANSPORT", "ADDRESS", "PYTHON"], [[r["name"], r["chip"] or "-", r["transport"], r["address"] or "-", r["python"]] for r in rows]))


@devices_group.command("check")
@click.argument("name")
@inventory_option
@format_option()
def check_command(name: str, inventory: Path | None, output_format: str) -> None:
    """Connect to a device, run its Python once, and say what it is (host keys verified as always)."""
    import tempfile

    from edgedeploy.devices import load_inventory, open_transport
    from edgedeploy.errors import DeviceError

    device = load_inventory(inventory, chip_ids()).get(name)
    transport = open_transport(device)
    try:
        workdir = transport.make_workdir()
        try:
            with tempfile.TemporaryDirectory() as tmp:
                probe = Path(tmp) / "probe.py"
                probe.write_text(PROBE)
                transport.put(probe, "probe.py")
            result = transport.run([device.python, "probe.py"], workdir, timeout_s=60)
        finally:
            transport.cleanup(workdir)
    finally:
        transport.close()
    if result.returncode != 0:
        raise DeviceError(f"Device '{name}' is reachable, but {device.python} failed there: {(result.stderr.strip().splitlines() or ['no message'])[-1]}.")
    facts = json.loads(result.stdout.strip().splitlines()[-1])
    facts.update(name=name, chip=device.chip, transport=device.transport)
    if output_format == "json":
        emit_json(facts)
        return
    echo_text(
        f"{name}: reachable over {device.transport}; {facts['system']} {facts['release']} {facts['machine']}, "
        f"{facts['cpus']} CPUs, Python {facts['python']} ({facts['executable']}), host name {facts['hostname']}"
    )


COMMANDS = [devices_group]
