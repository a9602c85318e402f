"""A REAL labgrid farm on loopback for the farm tests: labgrid's own coordinator and exporter processes.

`LabgridFarm(root)` starts `labgrid-coordinator` on a free 127.0.0.1 port (its places.yaml in
root/coordinator) and `labgrid-exporter` with a resource file the test writes: NetworkService
resources pointing at the loopback sshd of tests/ssh_fixture.py, and RawSerialPort resources on
the pseudo-terminals of the board stand-in (tests/serial_standin.py), which the exporter serves
with the real ser2net over RFC 2217. Places are created, matched and tagged with the real
`labgrid-client`, and `hold(place, user)` acquires one as another user would (LG_USERNAME).

Nothing here is a stand-in for labgrid; the boards behind it are the loopback sshd (a Linux
"board" that is this machine) and the pty stand-in (a microcontroller's console).

`kill_coordinator()` SIGKILLs the coordinator (its exporter then exits, as labgrid's does when
it loses the coordinator, status 100), `restart()` starts both again on the same port with the
same places.yaml, as systemd would.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

READY_TIMEOUT_S = 30.0


def labgrid_tool(name: str) -> str:
    """The labgrid console script installed next to the test interpreter (the farm extra)."""
    here = Path(sys.executable).parent / name
    if here.exists():
        return str(here)
    found = shutil.which(name)
    if found is None:
        raise RuntimeError(f"{name} is not installed: pip install 'edgedeploy[farm]' (the test extra includes it)")
    return found


def require_farm_tools() -> None:
    """labgrid comes with the test extra (scripts/setup.sh): its absence is a broken setup, not a skip."""
    try:
        import labgrid  # noqa: F401
    except ImportError as exc:
        raise RuntimeError("labgrid is not installed: run scripts/setup.sh (the test extra includes edgedeploy[farm])") from exc


def require_ser2net() -> None:
    """For places with a serial port: scripts/test.sh installs ser2net (Debian package) like openssh-server."""
    if shutil.which("ser2net") is None and not Path("/usr/sbin/ser2net").exists():
        raise RuntimeError("ser2net is not installed (Debian package ser2net; scripts/test.sh installs it): the exporter serves serial ports with it")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class LabgridFarm:
    def __init__(self, root: Path):
        self.root = Path(root)
        self.port = _free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.url = f"labgrid://{self.address}"
        self.coordinator: subprocess.Popen | None = None
        self.exporter: subprocess.Popen | None = None
        self.resources_file = self.root / "exporter.yaml"
        self.env = dict(os.environ, LG_COORDINATOR=self.address)
        self.env.pop("LG_TOKEN", None)
        self.env.pop("LG_PLACE", None)

    # -- processes -----------------------------------------------------------------------

    def start(self, resources: dict) -> None:
        """Start the coordinator and an exporter publishing `resources` ({group: {cls: params}})."""
        self.write_resources(resources)
        self.start_coordinator()
        self.start_exporter()

    def write_resources(self, resources: dict) -> None:
        import yaml

        self.resources_file.write_text(yaml.safe_dump(resources, sort_keys=True))

    def start_coordinator(self) -> None:
        workdir = self.root / "coordinator"
        workdir.mkdir(exist_ok=True)
        # A fresh log per start: on a restart the old log already says "listening on", and
        # waiting on it would start the exporter before the new coordinator has bound the port.
        log_path = self.root / "coordinator.log"
        if log_path.exists():
            log_path.rename(self.root / f"coordinator.{time.monotonic_ns()}.log")
        log = log_path.open("ab")
        self.coordinator = subprocess.Popen(
            [labgrid_tool("labgrid-coordinator"), "-l", self.address], cwd=workdir, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env=self.env
        )
        self._wait_for(self.root / "coordinator.log", "listening on", self.coordinator)

    def start_exporter(self) -> None:
        log_path = self.root / "exporter.log"
        if log_path.exists():
            log_path.rename(self.root / f"exporter.{time.monotonic_ns()}.log")
        log = log_path.open("ab")
        self.exporter = subprocess.Popen(
            [labgrid_tool("labgrid-exporter"), "-c", self.address, "-n", "bench1", "--hostname", "127.0.0.1", str(self.resources_file)],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=self.env,
        )
        self._wait_for(log_path, "Exporter ready", self.exporter)

    def _wait_for(self, log: Path, needle: str, process: subprocess.Popen) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            text = log.read_text(errors="replace") if log.exists() else ""
            if needle in text:
                return
            if process.poll() is not None:
                break
            time.sleep(0.05)
        raise RuntimeError(f"{log.name}: {needle!r} did not appear; last lines:\n{log.read_text(errors='replace')[-3000:] if log.exists() else ''}")

    def client(self, *args: str, user: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
        env = dict(self.env)
        if user:
            env["LG_USERNAME"] = user
        proc = subprocess.run([labgrid_tool("labgrid-client"), "-x", self.address, *args], capture_output=True, text=True, env=env, timeout=60)
        if check and proc.returncode != 0:
            raise RuntimeError(f"labgrid-client {' '.join(args)} failed: {proc.stdout}{proc.stderr}")
        return proc

    def add_place(self, name: str, group: str, tags: dict | None = None) -> None:
        self.client("-p", name, "create")
        self.client("-p", name, "add-match", f"*/{group}/*")
        if tags:
            self.client("-p", name, "set-tags", *[f"{k}={v}" for k, v in tags.items()])

    def hold(self, place: str, user: str) -> None:
        """Acquire the place as another user would (their labgrid-client, LG_USERNAME)."""
        self.client("-p", place, "acquire", user=user)

    def release(self, place: str, user: str) -> None:
        self.client("-p", place, "release", user=user)

    def holders(self) -> dict[str, str | None]:
        """{place: "host/user" or None}, asked of the coordinator with labgrid's own client."""
        text = self.client("places", "--acquired", check=True).stdout
        held = {line.strip() for line in text.splitlines() if line.strip()}
        result: dict[str, str | None] = {}
        for name in self.place_names():
            result[name] = None
            if name in held:
                show = self.client("-p", name, "show").stdout
                for line in show.splitlines():
                    if line.strip().startswith("acquired:"):
                        result[name] = line.split(":", 1)[1].strip() or None
        return result

    def place_names(self) -> list[str]:
        return [line.strip() for line in self.client("places").stdout.splitlines() if line.strip()]

    def wait_saved(self, names: list[str], timeout_s: float = 40.0) -> None:
        """Until the coordinator has written these places to its places.yaml (it saves every 15 s)."""
        import yaml

        path = self.root / "coordinator" / "places.yaml"
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                saved = yaml.safe_load(path.read_text()) or {}
            except (OSError, yaml.YAMLError):
                saved = {}
            if all(name in saved for name in names):
                return
            time.sleep(0.2)
        raise RuntimeError(f"the coordinator did not save {names} to {path} within {timeout_s:.0f} s")

    def kill_coordinator(self) -> None:
        if self.coordinator is not None and self.coordinator.poll() is None:
            os.killpg(self.coordinator.pid, signal.SIGKILL)
            self.coordinator.wait(10)

    def restart(self) -> None:
        """Coordinator and exporter up again (same port, same places.yaml), as a service manager would restart them."""
        self._stop(self.exporter)
        self.start_coordinator()
        self.start_exporter()

    def _stop(self, process: subprocess.Popen | None) -> None:
        if process is None or process.poll() is not None:
            return
        try:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(10)
        except (subprocess.TimeoutExpired, ProcessLookupError):
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            process.wait(10)

    def stop(self) -> None:
        # The exporter first: its ser2net children end with it.
        self._stop(self.exporter)
        self._stop(self.coordinator)


@pytest.fixture
def labgrid_farm(tmp_path):
    require_farm_tools()
    farm = LabgridFarm(tmp_path / "farm")
    farm.root.mkdir()
    try:
        yield farm
    finally:
        farm.stop()
