"""Devices: the inventory and the transports that reach them (see base.py for the contract).

    from edgedeploy.devices import load_inventory, open_transport
    device = load_inventory(path_or_None).get("rock5b")   # or find_device("esp32s3@/dev/ttyUSB0")
    transport = open_transport(device)        # LocalTransport or SshTransport
    workdir = transport.make_workdir()
    transport.put(Path("runner.py"), "runner.py")
    result = transport.run(["python3", "runner.py"], workdir, timeout_s=600)
    transport.get("result.json", Path("out/result.json"))
    transport.cleanup(workdir)
"""

from edgedeploy.devices.base import CommandResult, Device, DeviceConnectionLost, Transport
from edgedeploy.devices.inventory import Inventory, load_inventory, local_device
from edgedeploy.errors import DeviceError, UnknownDevice


def find_device(name: str, inventory_path=None, known_chips=None) -> Device:
    """The inventory's device of that name; else a serial board given as CHIP@PORT (esp32s3@/dev/ttyUSB0).

    An inventory name always wins, so a device named like a spec is still the inventory's.
    `known_chips` (the registry's chip ids) refuses entries and specs naming an unknown chip.
    """
    from edgedeploy.devices.serial import serial_device_from_spec

    inventory = load_inventory(inventory_path, known_chips)
    if name in inventory.devices:
        return inventory.devices[name]
    device = serial_device_from_spec(name, known_chips=known_chips)
    if device is not None:
        return device
    try:
        return inventory.get(name)
    except UnknownDevice as exc:
        raise UnknownDevice(f"{str(exc).rstrip('.')}; or give a board on a serial port as CHIP@PORT (e.g. esp32s3@/dev/ttyUSB0).") from None


def open_transport(device: Device) -> Transport:
    """The transport for a device's `transport` setting (serial devices have their own module)."""
    if device.transport == "local":
        from edgedeploy.devices.local import LocalTransport

        return LocalTransport(device)
    if device.transport == "ssh":
        from edgedeploy.devices.ssh import SshTransport

        return SshTransport(device)
    if device.transport == "serial":
        raise DeviceError(
            f"Device '{device.name}' is a serial device: it runs firmware its target flashes (Target.measure_serial), not copied runners."
        )
    if device.transport == "labgrid":
        raise DeviceError(
            f"Device '{device.name}' is a labgrid farm: its boards are the places it lends, one per artifact (`edgedeploy measure ARTIFACT... --device {device.name}`)."
        )
    raise DeviceError(f"Device '{device.name}' has an unknown transport {device.transport!r}.")


__all__ = [
    "CommandResult",
    "Device",
    "DeviceConnectionLost",
    "Inventory",
    "Transport",
    "find_device",
    "load_inventory",
    "local_device",
    "open_transport",
]
