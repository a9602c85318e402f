"""A real OpenSSH server on loopback, started by the test suite, for testing the ssh transport.

Fixtures (registered for the whole suite in conftest.py):
- `loopback_sshd` (one per test session): a LoopbackSshd running `/usr/sbin/sshd -D` on a free
  127.0.0.1 port as the current user, with a host key and a client key generated for the test,
  and a known_hosts file holding exactly that host key. Key login only (root included: the
  test config says `PermitRootLogin prohibit-password`); no passwords.
- `loopback_ssh_device`: an edgedeploy Device reaching that server (`ssh_options` point the
  client at the test's key and known_hosts; host keys are still verified strictly), whose
  `python` is the interpreter running the tests (so the "board" has numpy and onnxruntime).

Both skip, saying why, when /usr/sbin/sshd (Debian: openssh-server) or the OpenSSH client tools
are absent. Nothing here touches ~/.ssh or the system's sshd configuration; the only system
change is creating sshd's privilege-separation folder /run/sshd when running as root without it.

`LoopbackSshd.drop_connections()` kills every process the server spawned (the per-connection
sshd processes and what they run): to the client this is a board that lost its network or
power mid-run.
"""

from __future__ import annotations

import getpass
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

SSHD = "/usr/sbin/sshd"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _keygen(path: Path, comment: str) -> str:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)], check=True)
    return path.with_suffix(".pub").read_text().strip()


def _children_of(pid: int) -> list[int]:
    """Every descendant of pid (from /proc), deepest last."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # pid (comm) state ppid ...; comm may hold spaces and parentheses.
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        parents.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return ""


class LoopbackSshd:
    """One sshd on 127.0.0.1 with keys made for the test; `device()` gives a Device for it."""

    def __init__(self, root: Path):
        self.root = root
        self.port = 0
        self.user = getpass.getuser()
        self.host_key = root / "host_ed25519"
        self.client_key = root / "client_ed25519"
        self.known_hosts = root / "known_hosts"
        self.config = root / "sshd_config"
        self.log = root / "sshd.log"
        self.host_public_key = ""
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        self.host_public_key = _keygen(self.host_key, "edgedeploy-test-host")
        client_public = _keygen(self.client_key, "edgedeploy-test-client")
        authorized = self.root / "authorized_keys"
        authorized.write_text(client_public + "\n")
        authorized.chmod(0o600)
        if os.geteuid() == 0 and not Path("/run/sshd").is_dir():
            Path("/run/sshd").mkdir(mode=0o755, parents=True, exist_ok=True)
        for attempt in range(3):
            self.port = _free_port()
            self._write_config()
            check = subprocess.run([SSHD, "-t", "-f", str(self.config)], capture_output=True, text=True)
            if check.returncode != 0:
                raise RuntimeError(f"sshd rejected the test configuration: {check.stderr.strip()}")
            with self.log.open("ab") as log:
                self.process = subprocess.Popen([SSHD, "-D", "-e", "-f", str(self.config)], stdout=log, stderr=log, start_new_session=True)
            if self._wait_ready():
                break
            self.stop()
        else:
            raise RuntimeError(f"sshd did not start on loopback; its log:\n{self.log.read_text()[-2000:]}")
        self.known_hosts.write_text(f"[127.0.0.1]:{self.port} {self.host_public_key}\n")

    def _write_config(self) -> None:
        self.config.write_text(
            "\n".join(
                [
                    f"Port {self.port}",
                    "ListenAddress 127.0.0.1",
                    f"HostKey {self.host_key}",
                    f"PidFile {self.root / 'sshd.pid'}",
                    f"AuthorizedKeysFile {self.root / 'authorized_keys'}",
                    "PubkeyAuthentication yes",
                    "PasswordAuthentication no",
                    "KbdInteractiveAuthentication no",
                    # Root may log in with the test's key only (CI runs as root).
                    "PermitRootLogin prohibit-password",
                    f"AllowUsers {self.user}",
                    "UsePAM no",
                    # The key files live in a pytest temporary folder, not in a home directory.
                    "StrictModes no",
                    "LogLevel VERBOSE",
                    "",
                ]
            )
        )

    def _wait_ready(self, timeout_s: float = 10.0) -> bool:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                return False
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as sock:
                    if sock.recv(64).startswith(b"SSH-2.0"):
                        return True
            except OSError:
                time.sleep(0.05)
        return False

    def ssh_options(self, known_hosts: Path | None = None) -> tuple[str, ...]:
        return (
            f"UserKnownHostsFile={known_hosts or self.known_hosts}",
            "GlobalKnownHostsFile=/dev/null",
            f"IdentityFile={self.client_key}",
            "IdentitiesOnly=yes",
            "IdentityAgent=none",
        )

    def device(self, name: str = "loopback", known_hosts: Path | None = None, **fields):
        from edgedeploy.devices import Device

        values = dict(
            name=name,
            chip=None,
            transport="ssh",
            host="127.0.0.1",
            user=self.user,
            port=self.port,
            python=sys.executable,
            ssh_options=self.ssh_options(known_hosts),
        )
        values.update(fields)
        return Device(**values)

    def inventory_entry(self, **fields) -> dict:
        """The device as an inventory entry (for tests of the inventory and the CLI)."""
        entry = {"transport": "ssh", "host": "127.0.0.1", "user": self.user, "port": self.port, "python": sys.executable, "ssh_options": list(self.ssh_options())}
        entry.update(fields)
        return entry

    def session_processes(self) -> list[int]:
        return _children_of(self.process.pid) if self.process else []

    def wait_for_remote_process(self, needle: str, timeout_s: float = 30.0) -> int | None:
        """The pid of a process the server runs whose command line contains `needle`."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for pid in self.session_processes():
                if needle in _cmdline(pid):
                    return pid
            time.sleep(0.02)
        return None

    def drop_connections(self) -> int:
        """Kill every process the server spawned (sessions and what runs in them); the listener stays."""
        victims = self.session_processes()
        for pid in victims:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        return len(victims)

    def stop(self) -> None:
        if self.process is None:
            return
        self.drop_connections()
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None


def require_openssh() -> None:
    if not Path(SSHD).exists():
        pytest.skip(f"needs {SSHD} (Debian package openssh-server) to run a real sshd on loopback")
    for tool in ("ssh", "ssh-keygen"):
        if shutil.which(tool) is None:
            pytest.skip(f"needs the OpenSSH client tool {tool} (Debian package openssh-client)")


@pytest.fixture(scope="session")
def loopback_sshd(tmp_path_factory):
    require_openssh()
    server = LoopbackSshd(tmp_path_factory.mktemp("sshd"))
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def loopback_ssh_device(loopback_sshd):
    return loopback_sshd.device()
