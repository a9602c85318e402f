"""Devices and transports: the contract between `edgedeploy measure` (or a remote build) and a device.

A `Device` comes from the inventory file (name, chip, transport, address, user, port, remote
python, work dir). A `Transport` moves files and runs commands on it:
  local   this machine (the same runner, run here)
  ssh     the system OpenSSH client, so the user's ssh config, keys and known_hosts apply;
          host keys are verified, never trusted silently; every remote argument is quoted
  serial  microcontrollers over a serial port (pyserial): no files or commands, only a stream
Implementations live next to this file (local.py, ssh.py, serial.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from edgedeploy.errors import DeviceError


@dataclass(frozen=True)
class Device:
    """One entry of the device inventory."""

    name: str
    chip: str  # a chip id from `edgedeploy targets`
    transport: str  # "local" | "ssh" | "serial" | "labgrid"
    host: str | None = None  # ssh: host name or ssh-config alias
    user: str | None = None
    port: int | None = None  # ssh port
    serial_port: str | None = None  # serial: /dev/ttyUSB0
    baud: int = 115200
    python: str = "python3"  # the device's interpreter for Python runners
    workdir: str | None = None  # remote folder for runs; a fresh temporary one when None
    ssh_options: tuple[str, ...] = field(default_factory=tuple)  # extra `-o` options (e.g. a test's known_hosts)
    allow_commands: bool = False  # ssh_options may run local commands (ProxyCommand, ...): the entry says so
    # labgrid: a farm whose places lend the boards (pipeline/farm.py); the place pattern is optional.
    coordinator: str | None = None  # "HOST:PORT" of the labgrid coordinator
    place: str | None = None


@dataclass
class RunnerSpec:
    """What `edgedeploy measure` copies to a device and runs there, for one session.

    `files`: remote name (relative to the device's work folder) -> local file (the generated
    runner, measure/protocol.py, the compiled model, test inputs). `command`: argv run in the
    work folder; the literal "{python}" is replaced by the device's interpreter. The runner
    prints one `EDGEDEPLOY {json}` result line (measure/protocol.py) and may write
    `result_files` (e.g. outputs as .npy) that are fetched back. `baseline` is the matching
    "before" run on the same device (e.g. ONNX Runtime CPU on the board), or None.
    A target's runner_spec returns one (edgedeploy.targets.base re-exports it).
    """

    files: dict[str, Path]
    command: list[str]
    result_files: list[str] = field(default_factory=list)
    timeout_s: float = 600.0
    backend: str = ""
    baseline: "RunnerSpec | None" = None
    # The interpreter "{python}" stands for, when not the device's own: a host run of a chip
    # artifact uses the toolchain environment that has the interpreter (TFLite in `eiq`).
    python: str | None = None


@dataclass
class CommandResult:
    returncode: int | None  # None: the command did not finish (connection lost, timed out)
    stdout: str
    stderr: str
    wall_s: float


class DeviceConnectionLost(DeviceError):
    """The connection to the device dropped while a command ran on it.

    `partial` holds what the command had printed before the drop (a CommandResult with
    returncode None), so a caller can keep the results gathered so far and mark them partial.
    """

    def __init__(self, message: str, partial: "CommandResult | None" = None):
        super().__init__(message)
        self.partial = partial


class Transport(Protocol):
    """What every non-serial transport offers. Errors raise edgedeploy.errors.DeviceError."""

    device: Device

    def make_workdir(self) -> str:
        """Create and return a fresh working folder on the device."""

    def put(self, local: Path, remote: str) -> None:
        """Copy a local file to a path on the device (relative paths are inside the work folder)."""

    def get(self, remote: str, local: Path) -> None:
        """Copy a file from the device to a local path."""

    def run(self, argv: list[str], cwd: str, timeout_s: float) -> CommandResult:
        """Run argv (each argument quoted for the remote shell) in cwd on the device."""

    def cleanup(self, workdir: str) -> None:
        """Remove the working folder from the device."""

    def close(self) -> None:
        """Release the connection (ssh: the shared master connection); the transport is done."""
