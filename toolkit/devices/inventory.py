"""The device inventory: a TOML or JSON file naming the devices `edgedeploy measure` can reach.

Where it is read from, first match wins:
  1. `--inventory PATH` on the command line
  2. the environment variable EDGEDEPLOY_DEVICES
  3. `<config dir>/edgedeploy/devices.toml` (or `devices.json`), where <config dir> is
     $XDG_CONFIG_HOME or ~/.config

A missing default file is not an error (the inventory is then just the built-in `local`); a
file named explicitly (option or variable) must exist.

TOML form (JSON is the same structure: {"devices": {"NAME": {...}}}):

    [devices.rock5b]
    chip = "rk3588"            # a chip id from `edgedeploy targets`; leave out for a generic CPU host
    transport = "ssh"          # ssh | local | serial
    host = "rock5b.lan"        # host name or an alias from ~/.ssh/config
    user = "debian"            # optional: ssh config / current user otherwise
    port = 22                  # optional
    python = "/usr/bin/python3"  # the board's interpreter for Python runners
    workdir = "/tmp/edgedeploy"  # optional: runs go to fresh folders below it
    ssh_options = ["IdentityFile=~/.ssh/rock5b"]   # optional extra `ssh -o` options
    allow_commands = false     # true lets ssh_options run local commands (ProxyCommand, KnownHostsCommand,
                               # LocalCommand, PermitLocalCommand, Match exec); refused otherwise

    [devices.farm]             # a labgrid farm: `measure --device farm` acquires its places (docs/farm.md)
    transport = "labgrid"
    coordinator = "labgrid://farm.lan:20408"
    place = "rock5b-*"         # optional: only places whose name matches
    python = "python3"         # optional, for the SSH boards; so are user, ssh_options and workdir

The name `local` always exists: this machine, this Python, no chip (runs generic runners only);
an inventory entry named `local` replaces it.
"""

from __future__ import annotations

import json
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from edgedeploy.devices.base import Device
from edgedeploy.errors import DeviceError, InventoryError, UnknownDevice
from edgedeploy.toml_support import toml_module

INVENTORY_ENV = "EDGEDEPLOY_DEVICES"
TRANSPORTS = ("local", "ssh", "serial", "labgrid")
LOCAL_NAME = "local"
# Keys an inventory entry may have; anything else is a typo the user should hear about.
ENTRY_KEYS = ("chip", "transport", "host", "user", "port", "serial_port", "baud", "python", "workdir", "ssh_options", "allow_commands", "description", "coordinator", "place")
# Serial speeds pyserial and USB-UART bridges use run from 50 to a few Mbit/s.
MAX_BAUD = 20_000_000
NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def default_inventory_path() -> Path:
    """<config dir>/edgedeploy/devices.toml, or devices.json if only that one exists."""
    base = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "edgedeploy"
    toml_path = base / "devices.toml"
    json_path = base / "devices.json"
    if not toml_path.exists() and json_path.exists():
        return json_path
    return toml_path


def local_device() -> Device:
    """The built-in `local` device: this machine and the Python running edgedeploy."""
    return Device(name=LOCAL_NAME, chip=None, transport="local", python=sys.executable)  # type: ignore[arg-type]


@dataclass
class Inventory:
    path: Path | None  # None: no file (only the built-in local device)
    devices: dict[str, Device]

    def get(self, name: str) -> Device:
        if name in self.devices:
            return self.devices[name]
        known = ", ".join(sorted(self.devices))
        where = f"in {self.path}" if self.path else f"(no inventory file; create {default_inventory_path()} or pass --inventory)"
        raise UnknownDevice(f"Unknown device '{name}' {where}; known devices: {known}.")


def resolve_inventory_path(explicit: Path | str | None) -> tuple[Path, bool]:
    """(path, named_explicitly): the option, else the environment variable, else the default."""
    if explicit:
        return Path(explicit).expanduser(), True
    env = os.environ.get(INVENTORY_ENV)
    if env:
        return Path(env).expanduser(), True
    return default_inventory_path(), False


def load_inventory(explicit: Path | str | None = None, known_chips=None) -> Inventory:
    """The inventory (the local machine always included); with `known_chips`, unknown chips are refused."""
    inventory = _load_inventory(explicit)
    return check_chips(inventory, known_chips) if known_chips is not None else inventory


def _load_inventory(explicit: Path | str | None) -> Inventory:
    path, named = resolve_inventory_path(explicit)
    devices = {LOCAL_NAME: local_device()}
    if not path.exists():
        if named:
            raise InventoryError(f"The device inventory {path} does not exist.")
        return Inventory(None, devices)
    data = _read(path)
    entries = data.get("devices")
    if not isinstance(entries, dict):
        raise InventoryError(f"{path}: expected a [devices.NAME] table (JSON: an object under \"devices\").")
    for name, entry in entries.items():
        devices[name] = parse_entry(path, str(name), entry)
    return Inventory(path, devices)


def _read(path: Path) -> dict:
    """The file as a dict; the inventory is the user's own, but a broken one still gets one sentence."""
    if not path.is_file():
        raise InventoryError(f"The device inventory {path} is not a file.")
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InventoryError(f"{path} is not UTF-8 text (byte {exc.start} is not); save the inventory as UTF-8.") from exc
    except OSError as exc:
        raise InventoryError(f"The device inventory {path} cannot be read ({exc.strerror or exc}).") from exc
    if path.suffix.lower() == ".json":
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise InventoryError(f"{path} is not valid JSON ({exc}).") from exc
    else:
        toml = toml_module()
        if toml is None:
            raise InventoryError("Reading a TOML inventory needs Python 3.11 or the tomli package; or write it as devices.json.")
        try:
            data = toml.loads(text)
        except toml.TOMLDecodeError as exc:
            raise InventoryError(f"{path} is not valid TOML ({exc}).") from exc
    if not isinstance(data, dict):
        raise InventoryError(f"{path}: the inventory must be a table of devices.")
    return data


def parse_entry(path: Path, name: str, entry: object) -> Device:
    """One inventory entry as a Device, with every field checked (one sentence per mistake)."""
    where = f"{path}: device '{name}'"
    if not NAME_PATTERN.match(name):
        raise InventoryError(f"{path}: {name[:70]!r} is not a usable device name (up to 64 letters, digits, '_', '.', '-').")
    if not isinstance(entry, dict):
        raise InventoryError(f"{where} must be a table of settings.")
    unknown = sorted(set(entry) - set(ENTRY_KEYS))
    if unknown:
        raise InventoryError(f"{where} has unknown setting(s) {', '.join(unknown)}; known: {', '.join(ENTRY_KEYS)}.")
    transport = entry.get("transport", "ssh" if entry.get("host") else None)
    if not isinstance(transport, str) or transport not in TRANSPORTS:
        raise InventoryError(f"{where}: transport must be one of {', '.join(TRANSPORTS)}, not {transport!r}.")
    chip = entry.get("chip")
    if chip is not None:
        chip = _check_chip(where, chip)
    port = entry.get("port")
    if port is not None and (not isinstance(port, int) or isinstance(port, bool) or not 0 < port < 65536):
        raise InventoryError(f"{where}: port must be a number from 1 to 65535, not {_shown(port)}.")
    ssh_options = entry.get("ssh_options", [])
    if not isinstance(ssh_options, list) or not all(isinstance(o, str) for o in ssh_options):
        raise InventoryError(f"{where}: ssh_options must be a list of strings like \"IdentityFile=~/.ssh/key\".")
    for key in ("host", "user", "python", "workdir", "serial_port"):
        value = entry.get(key)
        if value is not None and (not isinstance(value, str) or not value or "\x00" in value):
            raise InventoryError(f"{where}: {key} must be a non-empty string, not {_shown(value)}.")
    description = entry.get("description")
    if description is not None and not isinstance(description, str):
        raise InventoryError(f"{where}: description must be a string, not {_shown(description)}.")
    baud = entry.get("baud", 115200)
    if not isinstance(baud, int) or isinstance(baud, bool) or not 0 < baud <= MAX_BAUD:
        raise InventoryError(f"{where}: baud must be a whole number of bits per second from 1 to {MAX_BAUD}, not {_shown(baud)}.")
    allow_commands = entry.get("allow_commands", False)
    if not isinstance(allow_commands, bool):
        raise InventoryError(f"{where}: allow_commands must be true or false, not {_shown(allow_commands)}.")
    if transport == "ssh" and not entry.get("host"):
        raise InventoryError(f"{where}: an ssh device needs a host.")
    if transport == "serial" and not entry.get("serial_port"):
        raise InventoryError(f"{where}: a serial device needs a serial_port (e.g. /dev/ttyUSB0).")
    coordinator = None
    if transport == "labgrid":
        coordinator = _check_labgrid_entry(where, entry)
    elif "coordinator" in entry or "place" in entry:
        raise InventoryError(f"{where}: coordinator and place belong to labgrid entries (transport = \"labgrid\").")
    device = Device(
        name=name,
        chip=chip,  # type: ignore[arg-type]
        transport=transport,
        host=entry.get("host"),
        user=entry.get("user"),
        port=port,
        serial_port=entry.get("serial_port"),
        baud=baud,
        python=entry.get("python") or (sys.executable if transport == "local" else "python3"),
        workdir=entry.get("workdir"),
        ssh_options=tuple(ssh_options),
        allow_commands=allow_commands,
        coordinator=coordinator,
        place=entry.get("place"),
    )
    if transport == "ssh":
        from edgedeploy.devices.ssh import check_ssh_settings

        check_ssh_settings(device, where)
    if transport == "labgrid":
        # Its user and ssh_options go to the farm's SSH boards: the same rules, checked now.
        from dataclasses import replace

        from edgedeploy.devices.ssh import check_ssh_settings

        check_ssh_settings(replace(device, transport="ssh", host="labgrid-place"), where)
    return device


def _check_labgrid_entry(where: str, entry: dict) -> str:
    """A labgrid entry's coordinator as "HOST:PORT" (the farm's boards come from its places)."""
    from edgedeploy.devices.labgrid import parse_farm_url

    coordinator = entry.get("coordinator")
    if not isinstance(coordinator, str) or not coordinator:
        raise InventoryError(f"{where}: a labgrid entry needs coordinator = \"labgrid://HOST:PORT\".")
    place = entry.get("place")
    if place is not None and (not isinstance(place, str) or not place):
        raise InventoryError(f"{where}: place must be a non-empty place name or pattern.")
    if entry.get("chip") is not None:
        raise InventoryError(f"{where}: a labgrid entry names no chip; the places' chip tags say which boards it has.")
    try:
        return parse_farm_url(coordinator)
    except DeviceError as exc:
        raise InventoryError(f"{where}: {exc}") from None


def _shown(value: object) -> str:
    """A wrong value as the user wrote it, short and on one line."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


CHIP_PATTERN = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")


def _check_chip(where: str, chip: object) -> str:
    """The chip's form; whether it is a known chip is checked by `check_chips` (the device layer knows no targets)."""
    if not isinstance(chip, str) or not CHIP_PATTERN.match(chip.strip().lower()):
        raise InventoryError(f"{where}: chip must be a chip id as `edgedeploy targets` lists them, not {_shown(chip)} (leave chip out for a generic CPU host).")
    return chip.strip().lower()


def check_chips(inventory: "Inventory", known_chips) -> "Inventory":
    """Refuse an entry whose chip is not one of `known_chips` (the registry's chip ids, from the caller)."""
    known = list(known_chips)
    for name, device in inventory.devices.items():
        if device.chip is not None and device.chip not in known:
            raise InventoryError(f"{inventory.path}: device '{name}': unknown chip {device.chip!r}; known chips: {', '.join(known)} (leave chip out for a generic CPU host).")
    return inventory


def describe(device: Device) -> dict:
    """A device as JSON-able data (for `edgedeploy devices` and the scope of measurements)."""
    address = None
    if device.transport == "ssh":
        address = (f"{device.user}@" if device.user else "") + str(device.host) + (f":{device.port}" if device.port else "")
    elif device.transport == "serial":
        address = device.serial_port
    elif device.transport == "labgrid":
        address = f"labgrid://{device.coordinator}" + (f" (places {device.place})" if device.place else "")
    return {
        "name": device.name,
        "chip": device.chip,
        "transport": device.transport,
        "address": address,
        "python": device.python,
        "workdir": device.workdir,
    }
