"""The `local` transport: the same runner, run on this machine in a fresh temporary folder."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from edgedeploy.devices.base import CommandResult, Device
from edgedeploy.errors import DeviceError
from edgedeploy.toolchains.process import ManagedProcess, ProcessTimedOut


class LocalTransport:
    """Files are copied into a temporary folder; commands run there as child processes."""

    def __init__(self, device: Device):
        self.device = device
        self.workdir: str | None = None

    def make_workdir(self) -> str:
        base = Path(self.device.workdir).expanduser() if self.device.workdir else None
        if base is not None:
            base.mkdir(parents=True, exist_ok=True)
        self.workdir = tempfile.mkdtemp(prefix="edgedeploy-run-", dir=base)
        return self.workdir

    def _resolve(self, remote: str) -> Path:
        path = Path(remote)
        if path.is_absolute():
            return path
        if self.workdir is None:
            raise DeviceError(f"Device '{self.device.name}': no work folder yet for the relative path {remote!r}.")
        root = Path(self.workdir)
        resolved = (root / path).resolve()
        if root.resolve() not in resolved.parents:
            raise DeviceError(f"Device '{self.device.name}': {remote!r} leaves the work folder.")
        return resolved

    def put(self, local: Path, remote: str) -> None:
        dest = self._resolve(remote)
        dest.parent.mkdir(parents=True, exist_ok=True)
        try:
            shutil.copyfile(local, dest)
        except OSError as exc:
            raise DeviceError(f"Could not copy {local} to {dest}: {exc.strerror or exc}.") from exc

    def get(self, remote: str, local: Path) -> None:
        source = self._resolve(remote)
        if not source.is_file():
            raise DeviceError(f"Device '{self.device.name}': {remote} was not written by the run.")
        Path(local).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, local)

    def run(self, argv: list[str], cwd: str, timeout_s: float) -> CommandResult:
        started = time.monotonic()
        try:
            # A process group of its own, killed with everything it started on a time-out or
            # any other way out (ManagedProcess).
            with ManagedProcess(argv, cwd=self._resolve(cwd), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace") as proc:
                try:
                    out, err = proc.communicate(timeout_s)
                except ProcessTimedOut:
                    raise DeviceError(
                        f"Device '{self.device.name}': {Path(argv[0]).name} did not finish within {timeout_s:.0f} s and was stopped."
                    ) from None
                returncode = proc.proc.returncode
        except OSError as exc:
            raise DeviceError(f"Device '{self.device.name}': could not start {argv[0]}: {exc.strerror or exc}.") from exc
        return CommandResult(returncode, out, err, time.monotonic() - started)

    def __enter__(self) -> "LocalTransport":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Nothing to release for this machine."""

    def cleanup(self, workdir: str) -> None:
        shutil.rmtree(workdir, ignore_errors=True)
        if self.workdir == workdir:
            self.workdir = None
