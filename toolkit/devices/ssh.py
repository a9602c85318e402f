"""The `ssh` transport: the system OpenSSH client, so the user's ssh config, keys and known_hosts apply.

Safety rules, each enforced here:
- Host keys are verified, never trusted silently: every call passes
  `StrictHostKeyChecking=yes` (first on the command line, so neither ~/.ssh/config nor the
  inventory's ssh_options can weaken it; ssh uses the first value it sees). An unknown or
  changed host key is refused with one sentence saying how to verify and add it.
- `BatchMode=yes`: ssh never stops to ask for a password or a passphrase; a key must work.
- Every remote argument is quoted with shlex.quote for the device's POSIX shell; local argv
  lists never go through a shell. File names of any kind (spaces, quotes, `$()`, `;`, a leading
  `-`, newlines) arrive unchanged.
- Files travel as byte streams through ssh (`cat`), not through scp/sftp: that needs no sftp
  server on the board (Dropbear images often lack one), and no second quoting convention.
  A copy is written to a temporary name and renamed, then its size is checked.
- A connection that drops while a command runs raises DeviceConnectionLost carrying what the
  command printed until then, so callers keep the results gathered so far.
- One authenticated connection is shared by all the calls of a transport (OpenSSH connection
  multiplexing, a control socket in a private temporary folder): a measurement makes a few dozen
  ssh calls, and a key exchange costs 0.3-1 s on a small board. `close()` ends it; if it cannot
  be set up, every call simply connects on its own.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import shutil
import subprocess
import tempfile
import time
import weakref
from pathlib import Path, PurePosixPath

from edgedeploy.devices.base import CommandResult, Device, DeviceConnectionLost
from edgedeploy.errors import DeviceError, InventoryError
from edgedeploy.toolchains.process import ManagedProcess

# Always passed first (ssh keeps the first value it obtains for an option).
FORCED_OPTIONS = ("BatchMode=yes", "StrictHostKeyChecking=yes", "RequestTTY=no")
# Defaults the user may override through ssh_options (given before these) or ~/.ssh/config...
# except that ssh gives command-line options precedence over the config file, so these are
# only defaults relative to ssh_options. They make a silent network drop surface in ~15 s.
DEFAULT_OPTIONS = ("ConnectTimeout=15", "ServerAliveInterval=5", "ServerAliveCountMax=3")
# Options an inventory may not set: they would undo the rules above.
FORBIDDEN_OPTIONS = {"stricthostkeychecking", "batchmode", "requesttty"}
# Options that make ssh run a local command or load code (ssh_config(5)): allowed only where the
# inventory entry says `allow_commands = true`, so a copied inventory cannot run anything silently.
COMMAND_OPTIONS = {"proxycommand", "knownhostscommand", "localcommand", "permitlocalcommand", "match", "pkcs11provider", "securitykeyprovider"}
OPTION_PATTERN = re.compile(r"^([A-Za-z][A-Za-z0-9]*)\s*[= ]\s*\S")
WORKDIR_PREFIX = "edgedeploy."
# The last line the remote wrapper writes to stderr: how the command itself exited. Its absence
# after ssh's own exit status 255 means the connection, not the command, ended the run.
EXIT_MARKER = "edgedeploy-exit-status"
PID_FILE = ".edgedeploy-run.pid"


def check_ssh_settings(device: Device, where: str | None = None) -> None:
    """Refuse host, user and option values that ssh could read as options, or that weaken it.

    `where` names the device in messages (the inventory passes its file and entry).
    """
    where = where or f"device '{device.name}'"
    host = device.host or ""
    if not host or host.startswith("-") or any(c.isspace() or ord(c) < 32 for c in host) or "@" in host:
        raise InventoryError(f"{where}: host {host!r} is not a host name or ssh alias (put the user in `user`).")
    user = device.user
    if user is not None and (not user or user.startswith("-") or any(c.isspace() or ord(c) < 32 or c in "@:" for c in user)):
        raise InventoryError(f"{where}: user {user!r} is not a valid login name.")
    for option in device.ssh_options:
        match = OPTION_PATTERN.match(option)
        if not match or any(ord(c) < 32 or ord(c) == 127 for c in option):
            raise InventoryError(f"{where}: ssh option {option!r} is not of the form Key=Value on one line.")
        key = match.group(1).lower()
        if key in FORBIDDEN_OPTIONS:
            raise InventoryError(
                f"{where}: ssh option {match.group(1)} may not be set; edgedeploy always verifies host keys and never prompts."
            )
        if key in COMMAND_OPTIONS and not device.allow_commands:
            raise InventoryError(
                f"{where}: ssh option {match.group(1)} runs a local command; add allow_commands = true to the entry if you mean it."
            )


def quote_remote_path(path: str) -> str:
    """A remote path for the device's shell: quoted, with a leading `~/` kept as $HOME."""
    if path == "~":
        return '"$HOME"'
    if path.startswith("~/"):
        return '"$HOME"/' + shlex.quote(path[2:])
    return shlex.quote(path)


class SshTransport:
    """Moves files and runs commands on a device over the system `ssh` client."""

    def __init__(self, device: Device, ssh_binary: str = "ssh", multiplex: bool = True):
        check_ssh_settings(device)
        self.device = device
        self.ssh_binary = ssh_binary
        self.multiplex = multiplex
        self.workdir: str | None = None
        self._control_dir: str | None = None
        self._finalizer: weakref.finalize | None = None

    def __enter__(self) -> "SshTransport":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- the ssh command line -------------------------------------------------------------

    def _options(self, extra: tuple[str, ...] = ()) -> list[str]:
        argv = []
        for option in FORCED_OPTIONS + extra + tuple(self.device.ssh_options) + DEFAULT_OPTIONS:
            argv += ["-o", option]
        if self.device.port:
            argv += ["-p", str(self.device.port)]
        if self.device.user:
            argv += ["-l", self.device.user]
        return argv

    def _control_path(self) -> str | None:
        return f"{self._control_dir}/cm" if self._control_dir else None

    def ssh_argv(self, remote_command: str) -> list[str]:
        control = self._control_path()
        extra = ("ControlMaster=no", f"ControlPath={control}") if control else ("ControlMaster=no", "ControlPath=none")
        # `--` ends ssh's options; the host was checked not to start with '-' as well.
        return [self.ssh_binary, *self._options(extra), "--", str(self.device.host), remote_command]

    def connect(self) -> None:
        """Authenticate once and keep the connection for the following calls (multiplexing).

        The master runs in the background (`-f -N`) with its output in a file, not a pipe:
        a pipe would stay open in the background process and stall the caller.
        """
        if self._control_dir is not None or not self.multiplex:
            return
        control_dir = tempfile.mkdtemp(prefix="edgedeploy-ssh-")
        argv = [
            self.ssh_binary,
            *self._options(("ControlMaster=yes", f"ControlPath={control_dir}/cm", "ControlPersist=60")),
            "-N",
            "-f",
            "--",
            str(self.device.host),
        ]
        with tempfile.TemporaryFile() as errors:
            try:
                proc = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=errors, timeout=120)
            except FileNotFoundError as exc:
                shutil.rmtree(control_dir, ignore_errors=True)
                raise DeviceError(f"The OpenSSH client ({self.ssh_binary}) is not installed; install openssh-client to reach device '{self.device.name}'.") from exc
            except subprocess.TimeoutExpired as exc:
                shutil.rmtree(control_dir, ignore_errors=True)
                raise DeviceError(f"Device '{self.device.name}' ({self.address}) did not answer within 120 s.") from exc
            errors.seek(0)
            stderr = errors.read().decode("utf-8", "replace")
        if proc.returncode != 0:
            shutil.rmtree(control_dir, ignore_errors=True)
            raise self._connection_error(stderr, during="")
        self._control_dir = control_dir
        # Ends the master and removes its folder on close(), or when a caller forgets to close.
        self._finalizer = weakref.finalize(self, _end_master, self.ssh_binary, control_dir, str(self.device.host))

    def close(self) -> None:
        """End the shared connection (the device's work folders are removed by cleanup())."""
        if self._finalizer is not None:
            self._finalizer()
            self._finalizer = None
        self._control_dir = None

    @property
    def address(self) -> str:
        return (f"{self.device.user}@" if self.device.user else "") + str(self.device.host) + (f":{self.device.port}" if self.device.port else "")

    def _ssh(self, remote_command: str, stdin=subprocess.DEVNULL, timeout_s: float = 120.0, text: bool = True) -> subprocess.CompletedProcess:
        """One ssh call; errors of ssh itself (exit status 255) become one clear DeviceError."""
        try:
            proc = subprocess.run(
                self.ssh_argv(remote_command), stdin=stdin, capture_output=True, timeout=timeout_s, text=text, **({"errors": "replace"} if text else {})
            )
        except FileNotFoundError as exc:
            raise DeviceError(f"The OpenSSH client ({self.ssh_binary}) is not installed; install openssh-client to reach device '{self.device.name}'.") from exc
        except subprocess.TimeoutExpired as exc:
            raise DeviceError(f"Device '{self.device.name}' ({self.address}) did not answer within {timeout_s:.0f} s.") from exc
        if proc.returncode == 255:
            stderr = proc.stderr if text else proc.stderr.decode("utf-8", "replace")
            raise self._connection_error(stderr, during="")
        return proc

    def _connection_error(self, stderr: str, during: str, partial: CommandResult | None = None) -> DeviceError:
        """The one sentence for an ssh failure, from what ssh printed."""
        name, addr = self.device.name, self.address
        port = f" -p {self.device.port}" if self.device.port else ""
        login = f"{self.device.user}@" if self.device.user else ""
        if "REMOTE HOST IDENTIFICATION HAS CHANGED" in stderr or "Host key for" in stderr and "has changed" in stderr:
            return DeviceError(
                f"The host key of device '{name}' ({addr}) has CHANGED since it was recorded in known_hosts; "
                "refusing to connect (if the board was re-imaged, verify the new key and update known_hosts)."
            )
        if "Host key verification failed" in stderr or re.search(r"No \S+ host key is known", stderr):
            return DeviceError(
                f"The host key of device '{name}' ({addr}) is not in known_hosts, so edgedeploy will not trust it; "
                f"verify it by connecting once with `ssh{port} {login}{self.device.host}` and accepting it, then retry."
            )
        if "Permission denied" in stderr:
            return DeviceError(f"Device '{name}' ({addr}) refused the ssh login; set up key authentication (edgedeploy never prompts for a password).")
        if "Could not resolve hostname" in stderr:
            return DeviceError(f"Device '{name}': the host name {self.device.host} does not resolve.")
        connect = re.search(r"connect to host \S+ port \d+: (.*)", stderr)
        if connect:
            return DeviceError(f"Device '{name}' ({addr}) cannot be reached: {connect.group(1).strip()}; is it on and running sshd?")
        last = _last_line(stderr)
        if during:
            return DeviceConnectionLost(
                f"The connection to device '{name}' ({addr}) dropped while {during}" + (f" ({last})" if last else "") + ".",
                partial,
            )
        return DeviceError(f"ssh to device '{name}' ({addr}) failed" + (f": {last}" if last else "") + ".")

    # -- the Transport contract ------------------------------------------------------------

    def _resolve(self, remote: str) -> str:
        path = PurePosixPath(remote)
        if path.is_absolute() or remote.startswith("~"):
            return remote
        if self.workdir is None:
            raise DeviceError(f"Device '{self.device.name}': no work folder yet for the relative path {remote!r}.")
        if ".." in path.parts:
            raise DeviceError(f"Device '{self.device.name}': {remote!r} leaves the work folder.")
        return f"{self.workdir}/{path.as_posix()}"

    def make_workdir(self) -> str:
        self.connect()
        if self.device.workdir:
            base = self.device.workdir.rstrip("/") or "/"
            script = f"mkdir -p -- {quote_remote_path(base)} && mktemp -d {quote_remote_path(base + '/' + WORKDIR_PREFIX)}XXXXXX"
        else:
            script = f'mktemp -d "${{TMPDIR:-/tmp}}/{WORKDIR_PREFIX}XXXXXX"'
        proc = self._ssh(script)
        path = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else ""
        if proc.returncode != 0 or not path.startswith("/"):
            raise DeviceError(f"Device '{self.device.name}': could not create a work folder ({_last_line(proc.stderr) or 'mktemp failed'}).")
        self.workdir = path
        return path

    def put(self, local: Path, remote: str) -> None:
        dest = self._resolve(remote)
        size = Path(local).stat().st_size
        parent = str(PurePosixPath(dest).parent)
        partial = dest + ".part"
        script = (
            f"mkdir -p -- {quote_remote_path(parent)} && cat > {quote_remote_path(partial)} && "
            f"mv -f -- {quote_remote_path(partial)} {quote_remote_path(dest)} && wc -c < {quote_remote_path(dest)}"
        )
        with open(local, "rb") as fh:
            try:
                proc = self._ssh(script, stdin=fh, timeout_s=max(120.0, size / 1e6))
            except DeviceConnectionLost:
                raise
            except DeviceError as exc:
                raise DeviceError(f"Copying {Path(local).name} to device '{self.device.name}' failed: {exc}") from exc
        copied = proc.stdout.strip()
        if proc.returncode != 0 or not copied.isdigit() or int(copied) != size:
            raise DeviceError(
                f"Copying {Path(local).name} to device '{self.device.name}' failed "
                f"({_last_line(proc.stderr) or f'{copied or 0} of {size} bytes arrived'})."
            )

    def get(self, remote: str, local: Path) -> None:
        source = self._resolve(remote)
        q = quote_remote_path(source)
        proc = self._ssh(f"test -f {q} && cat -- {q}", text=False, timeout_s=600.0)
        if proc.returncode != 0:
            raise DeviceError(f"Device '{self.device.name}': {remote} was not written by the run.")
        local = Path(local)
        local.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{local.name}.", dir=local.parent)
        with os.fdopen(fd, "wb") as fh:
            fh.write(proc.stdout)
        os.replace(tmp, local)

    def run(self, argv: list[str], cwd: str, timeout_s: float) -> CommandResult:
        """Run argv in cwd on the device; the remote shell sees every argument quoted."""
        if not argv:
            raise DeviceError("Nothing to run.")
        cwd_q = quote_remote_path(self._resolve(cwd))
        command = " ".join(shlex.quote(a) for a in argv)
        # The wrapper: record its pid (so a time-out can stop the run), run the command, and
        # report the command's own exit status as the last stderr line.
        script = (
            f"cd -- {cwd_q} || exit 97\n"
            f"echo $$ > {PID_FILE}\n"
            f"{command}\n"
            "rc=$?\n"
            f"printf '\\n{EXIT_MARKER} %s\\n' \"$rc\" >&2\n"
            "exit $rc"
        )
        started = time.monotonic()
        timed_out = False
        try:
            with ManagedProcess(self.ssh_argv(script), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace") as managed:
                proc = managed.proc
                try:
                    out, err = proc.communicate(timeout=timeout_s)
                except subprocess.TimeoutExpired:
                    timed_out = True
                    managed.signal_group(signal.SIGKILL)
                    # Stop the command on the device first: a multiplexed session's pipes are held by
                    # the shared connection until the remote command ends.
                    self._stop_remote(cwd)
                    try:
                        out, err = proc.communicate(timeout=15)
                    except subprocess.TimeoutExpired:
                        managed.kill_group()
                        out, err = "", ""
                except BaseException:
                    # Ctrl-C, SIGTERM, an error: the remote command must not run on either.
                    self._stop_remote(cwd)
                    raise
        except FileNotFoundError as exc:
            raise DeviceError(f"The OpenSSH client ({self.ssh_binary}) is not installed; install openssh-client to reach device '{self.device.name}'.") from exc
        wall_s = time.monotonic() - started
        err, status = _split_exit_marker(err)
        if timed_out:
            raise DeviceError(f"Device '{self.device.name}': {PurePosixPath(argv[0]).name} did not finish within {timeout_s:.0f} s and was stopped.")
        if status is None:
            # The wrapper never finished: ssh could not connect, or the connection dropped.
            partial = CommandResult(None, out, err, wall_s)
            if proc.returncode == 255:
                raise self._connection_error(err, during="running " + " ".join(PurePosixPath(a).name for a in argv[:2]), partial=partial)
            raise DeviceError(
                f"Device '{self.device.name}': the run ended without an exit status (ssh exit {proc.returncode}; {_last_line(err) or 'no message'})."
            )
        if status == 97:
            raise DeviceError(f"Device '{self.device.name}': the work folder {cwd} does not exist.")
        return CommandResult(status, out, err, wall_s)

    def _stop_remote(self, cwd: str) -> None:
        """Best effort after a time-out: signal the wrapper's process group on the device."""
        pid_file = quote_remote_path(self._resolve(cwd) + "/" + PID_FILE)
        try:
            self._ssh(f'p=$(cat {pid_file} 2>/dev/null) && [ -n "$p" ] && (kill -TERM -- "-$p" 2>/dev/null || kill -TERM "$p")', timeout_s=30.0)
        except DeviceError:
            pass

    def cleanup(self, workdir: str) -> None:
        # Only ever remove a folder this transport created (mktemp's edgedeploy.XXXXXX).
        if not PurePosixPath(workdir).name.startswith(WORKDIR_PREFIX):
            raise DeviceError(f"Refusing to remove {workdir!r} on device '{self.device.name}': edgedeploy did not create it.")
        self._ssh(f"rm -rf -- {quote_remote_path(workdir)}")
        if self.workdir == workdir:
            self.workdir = None


def _end_master(ssh_binary: str, control_dir: str, host: str) -> None:
    control = f"{control_dir}/cm"
    if os.path.exists(control):
        try:
            subprocess.run([ssh_binary, "-o", f"ControlPath={control}", "-O", "exit", "--", host], stdin=subprocess.DEVNULL, capture_output=True, timeout=30)
        except (OSError, subprocess.SubprocessError):
            pass
    shutil.rmtree(control_dir, ignore_errors=True)


def _split_exit_marker(stderr: str) -> tuple[str, int | None]:
    lines = stderr.rstrip("\n").split("\n")
    if lines and lines[-1].startswith(EXIT_MARKER + " "):
        try:
            status = int(lines[-1].split()[1])
        except (IndexError, ValueError):
            return stderr, None
        body = "\n".join(lines[:-1])
        return (body[:-1] if body.endswith("\n") else body) + ("\n" if body else ""), status
    return stderr, None


def _last_line(text: str) -> str:
    lines = [l.strip() for l in (text or "").splitlines() if l.strip()]
    return lines[-1] if lines else ""
