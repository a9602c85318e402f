"""Child processes that never outlive the command that started them.

Every vendor tool, worker and remote command edgedeploy starts goes through `ManagedProcess`:
the child gets a session (and so a process group) of its own, so that a toolchain's own
children (onnx2tf shelling out to onnxsim, a compile script's helpers) are one group; and on
ANY way out of the `with` block — the command finished, a time-out, an exception, Ctrl-C, a
SIGTERM or SIGHUP (edgedeploy.interrupts turns all three into Interrupted) — the whole group is sent
SIGTERM, then SIGKILL after a grace period, and reaped before the block is left. A worker can
therefore never go on writing into an artifact folder after the build has given up on it.

A process group of its own also means the terminal's Ctrl-C does not reach the child
directly; the parent receives it and kills the group here, once, in order.

A parent killed outright (kill -9, the OOM killer) runs no cleanup, so the child is tied to its
parent's life in two ways that need no cleanup code: the kernel sends it SIGKILL when the parent
dies (prctl PR_SET_PDEATHSIG, Linux; it fires when the *thread* that started the child ends,
which the `with` block makes outlive the child), and it inherits the read end of a pipe whose
write end only the parent holds (the lifeline, its fd in EDGEDEPLOY_LIFELINE_FD): the kernel
closes it when the parent dies, and a worker's guard (worker_main.py) then kills the worker's
whole group, its compilers and helpers included.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, Callable, Sequence

from edgedeploy import interrupts

# How long a group gets between SIGTERM and SIGKILL: enough for a toolchain to flush its log.
TERMINATE_GRACE_S = 5.0
# How often a waiting parent looks at the child (and calls the progress callback).
POLL_INTERVAL_S = 0.5


# The environment variable that gives a child the fd of its lifeline's read end (worker_main.py reads it).
LIFELINE_ENV = "EDGEDEPLOY_LIFELINE_FD"
_PR_SET_PDEATHSIG = 1


def _load_prctl():
    """libc's prctl, looked up once here: the child calls it between fork and exec, where
    nothing that might need a lock (a dlopen) may run."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


_PRCTL = _load_prctl()


def _die_with_parent(parent_pid: int):
    """The child's preexec step: SIGKILL when its parent dies, and at once if that already happened."""
    kill = int(signal.SIGKILL)

    def preexec() -> None:
        _PRCTL(_PR_SET_PDEATHSIG, kill, 0, 0, 0)
        if os.getppid() != parent_pid:
            os.kill(os.getpid(), kill)

    return preexec


class ProcessTimedOut(Exception):
    """The child ran past its time-out; its group has been killed and reaped."""

    def __init__(self, timeout_s: float):
        super().__init__(f"timed out after {timeout_s:.0f} s")
        self.timeout_s = timeout_s


class ManagedProcess:
    """`with ManagedProcess(argv, ...) as proc: rc = proc.wait(timeout_s)`; the group dies with the block.

    Keyword arguments are those of subprocess.Popen (stdout, stderr, stdin, cwd, env, text, ...);
    `start_new_session` is always on.
    """

    def __init__(self, argv: Sequence[str], **popen_kwargs):
        self.argv = [str(a) for a in argv]
        popen_kwargs.setdefault("stdin", subprocess.DEVNULL)
        popen_kwargs["start_new_session"] = True
        self.popen_kwargs = popen_kwargs
        self.proc: subprocess.Popen | None = None
        self._lifeline: int | None = None

    def __enter__(self) -> "ManagedProcess":
        # Both ends are non-inheritable: only this child gets the read end (pass_fds), and no
        # other child ever holds the write end, so it closes exactly when this process dies.
        read_end, self._lifeline = os.pipe()
        kwargs = dict(self.popen_kwargs)
        kwargs["env"] = {**(os.environ if kwargs.get("env") is None else kwargs["env"]), LIFELINE_ENV: str(read_end)}
        kwargs["pass_fds"] = (*kwargs.get("pass_fds", ()), read_end)
        if _PRCTL is not None:
            kwargs["preexec_fn"] = _die_with_parent(os.getpid())
        try:
            self.proc = subprocess.Popen(self.argv, **kwargs)
        except BaseException:
            self._close_lifeline()
            raise
        finally:
            os.close(read_end)
        return self

    def _close_lifeline(self) -> None:
        if self._lifeline is not None:
            os.close(self._lifeline)
            self._lifeline = None

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def wait(self, timeout_s: float | None, on_tick: Callable[[float], None] | None = None) -> int:
        """The exit status; ProcessTimedOut (group killed) past `timeout_s`.

        `on_tick(elapsed_s)` is called about every POLL_INTERVAL_S while the child runs (for
        progress lines); an exception it raises ends the wait and kills the group.
        """
        assert self.proc is not None
        started = time.monotonic()
        while True:
            elapsed = time.monotonic() - started
            remaining = None if timeout_s is None else timeout_s - elapsed
            if remaining is not None and remaining <= 0:
                self.kill_group()
                raise ProcessTimedOut(timeout_s)
            step = POLL_INTERVAL_S if remaining is None else min(POLL_INTERVAL_S, remaining)
            try:
                return self.proc.wait(timeout=step if on_tick is not None or remaining is not None else None)
            except subprocess.TimeoutExpired:
                if on_tick is not None:
                    on_tick(time.monotonic() - started)

    def communicate(self, timeout_s: float | None) -> tuple:
        """(stdout, stderr) of a child started with pipes; ProcessTimedOut (group killed) past `timeout_s`."""
        assert self.proc is not None
        try:
            return self.proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.kill_group()
            raise ProcessTimedOut(timeout_s or 0) from None

    def signal_group(self, sig: int) -> None:
        """Send `sig` to the child's whole group, without waiting (the caller drains its pipes)."""
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, sig)
            except (ProcessLookupError, PermissionError):
                pass

    def kill_group(self) -> None:
        """SIGTERM to the child's whole group, SIGKILL after the grace period, then reap the child.

        A signal to this process meanwhile (Ctrl-C pressed during the grace period) waits for
        the end: cut short, the group would get SIGTERM but never its SIGKILL.
        """
        with interrupts.deferred():
            self._kill_group()

    def _kill_group(self) -> None:
        proc = self.proc
        if proc is None:
            return
        for sig, grace in ((signal.SIGTERM, TERMINATE_GRACE_S), (signal.SIGKILL, None)):
            try:
                os.killpg(proc.pid, sig)
            except (ProcessLookupError, PermissionError):
                break
            try:
                proc.wait(timeout=grace)
                # The leader is gone; members of its group may still run: make sure of them too.
                _kill_rest_of_group(proc.pid)
                break
            except subprocess.TimeoutExpired:
                continue
        try:
            proc.wait(timeout=TERMINATE_GRACE_S)
        except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL cannot be ignored
            pass
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                try:
                    stream.close()
                except OSError:
                    pass

    def __exit__(self, exc_type, exc, tb) -> bool:
        proc = self.proc
        try:
            if proc is not None:
                if proc.poll() is None or exc_type is not None:
                    self.kill_group()
                else:
                    # The leader exited on its own; children it left in the group must not linger.
                    _kill_rest_of_group(proc.pid)
        finally:
            self._close_lifeline()
        return False


def _kill_rest_of_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def last_line(path: Path, max_bytes: int = 8192) -> str:
    """The last non-empty line of a (growing) log file, for progress lines; '' when there is none."""
    try:
        with Path(path).open("rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - max_bytes))
            tail = fh.read().decode("utf-8", errors="replace")
    except OSError:
        return ""
    lines = [line.strip() for line in tail.splitlines() if line.strip()]
    return lines[-1] if lines else ""


def open_log(path: Path) -> IO[bytes]:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return path.open("ab")
