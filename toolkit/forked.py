"""One function run in a forked copy of this process, its result brought back through a pipe.

For work that splits in two independent halves on a machine with two cores or more (the audit
places the chips of different toolchains in two processes, which take the toolchains in turns
(Turns): edgedeploy.pipeline.audit). A fork
needs no pickling of the inputs (the child has a copy-on-write copy of everything) and no new
interpreter, so it pays off on work of a tenth of a second; threads would not, because the work
is Python code holding the GIL.

The rules that make this safe to use:
- only where `available()`: Linux (fork without exec is unsafe on macOS), two usable CPUs;
- the child never returns into the caller's code: whatever happens it ends in os._exit, without
  running atexit handlers or flushing stdio buffers it inherited;
- the parent always reaps the child: `result()` waits for it, and `close()` (also on an
  exception in the parent, through the context manager) kills and reaps one still running, so
  no worker outlives the command;
- a child that fails (an exception, a signal, a result that does not unpickle) gives None, and
  the caller computes the half itself: the user sees the same result, or the same error, as
  without the fork.
"""

from __future__ import annotations

import os
import pickle
import signal
import sys
from typing import Any, Callable

from edgedeploy.interrupts import reraise_if_interrupted

# The child's exit status when its function raised (its result is not written).
CHILD_FAILED = 70


def available() -> bool:
    """Whether a forked second process can run here beside this one: Linux, two CPUs usable."""
    if not sys.platform.startswith("linux") or not hasattr(os, "fork"):
        return False
    try:
        return len(os.sched_getaffinity(0)) >= 2
    except OSError:
        return False


def idle_cpu(loadavg: str = "/proc/loadavg", own_tasks: str = "/proc/self/task") -> bool:
    """Whether a CPU is free right now for a second process: fewer tasks ready to run on the
    machine (this one included; /proc/loadavg's fourth field), not counting this process's other
    threads, than CPUs this process may use.

    On a machine whose cores are all taken by other jobs a forked half gains no wall time (it
    waits for a core like the parent) and costs CPU time (the fork, and the copy-on-write of every
    page either process touches: 0.05-0.1 s of CPU for the audit of a 900-node model), so the
    caller does the work in one process. This process's own threads are not other jobs: numpy's
    OpenBLAS starts a worker thread at import that spins, ready to run, for a tenth of a second
    or so, and counted as one it kept the audit of DenseNet-121 in one process on an idle 2-CPU
    machine (0.76 s against 0.63 s with the fork, session 17). Where the count cannot be read, a
    CPU is taken to be free.
    """
    try:
        with open(loadavg) as f:
            running = int(f.read().split()[3].split("/")[0])
        others = running - own_running_threads(own_tasks)
        return others + 1 < len(os.sched_getaffinity(0))
    except (OSError, ValueError, IndexError):
        return True


def own_running_threads(own_tasks: str = "/proc/self/task") -> int:
    """How many threads of this process are ready to run (state R in /proc/self/task/*/stat); at
    least 1, the caller. A thread that ends while it is read is not counted."""
    count = 0
    for task in os.listdir(own_tasks):
        try:
            with open(os.path.join(own_tasks, task, "stat")) as f:
                # The state follows the command name, which is in parentheses and may hold spaces.
                count += f.read().rsplit(")", 1)[1].split()[0] == "R"
        except (OSError, IndexError):
            continue
    return max(count, 1)


class ForkedCall:
    """`function()` running in a forked child from construction on; `result()` is its value, or
    None when the child failed. Use as a context manager, so the child is reaped in every case."""

    def __init__(self, function: Callable[[], Any]):
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child
            os.close(read_end)
            _run_child(function, write_end)  # never returns
        os.close(write_end)
        self._pid: int | None = pid
        self._read_end: int | None = read_end
        self.exit_status: int | None = None

    def __enter__(self) -> "ForkedCall":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def result(self) -> Any:
        """The child's return value once it has ended, or None if it failed (the reason is in exit_status)."""
        if self._read_end is None:
            return None
        chunks = []
        try:
            while True:
                chunk = os.read(self._read_end, 1 << 20)
                if not chunk:
                    break
                chunks.append(chunk)
        finally:
            self._close_pipe()
        self._reap(kill=False)
        if self.exit_status != 0:
            return None
        try:
            return pickle.loads(b"".join(chunks))
        except Exception as exc:  # noqa: BLE001 - a truncated or garbled result is a failed child
            reraise_if_interrupted(exc)
            return None

    def close(self) -> None:
        """Kill the child if it still runs, and reap it."""
        self._close_pipe()
        self._reap(kill=True)

    def _close_pipe(self) -> None:
        if self._read_end is not None:
            os.close(self._read_end)
            self._read_end = None

    def _reap(self, kill: bool) -> None:
        if self._pid is None:
            return
        if kill:
            try:
                os.kill(self._pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        while True:
            try:
                _, status = os.waitpid(self._pid, 0)
                break
            except InterruptedError:
                continue
            except ChildProcessError:  # reaped elsewhere (a SIGCHLD handler): nothing to report
                status = -1
                break
        self._pid = None
        self.exit_status = os.waitstatus_to_exitcode(status) if status != -1 else -1


class Turns:
    """Items 0..count-1 shared out between this process and a child forked after it: each take()
    gives the next item nobody has taken, from the front or from the back, until the two ends
    meet, so each item goes to exactly one caller. For parts of work of unequal size that is not
    known beforehand, ordered heaviest first: the parent takes from the front, the child from the
    back, and whichever is free takes the next.

    The two ends are two bytes of an anonymous in-memory file (memfd) both processes share; a
    POSIX record lock on it (fcntl.lockf, owned per process) makes each take() whole, and the
    kernel releases it if its holder dies, so a killed child never leaves the parent waiting.
    """

    def __init__(self, count: int):
        if not 0 <= count <= 255:
            raise ValueError(f"Turns shares out 0 to 255 items, not {count}")
        self._fd: int | None = os.memfd_create("edgedeploy-turns", os.MFD_CLOEXEC)
        os.pwrite(self._fd, bytes((0, count)), 0)

    def take(self, from_back: bool = False) -> int | None:
        """The next item from the front (or the back), or None when every item is taken."""
        import fcntl

        fcntl.lockf(self._fd, fcntl.LOCK_EX)
        try:
            front, back = os.pread(self._fd, 2, 0)
            if front >= back:
                return None
            item = back - 1 if from_back else front
            os.pwrite(self._fd, bytes((front, back - 1) if from_back else (front + 1, back)), 0)
            return item
        finally:
            fcntl.lockf(self._fd, fcntl.LOCK_UN)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _run_child(function: Callable[[], Any], write_end: int) -> None:
    """In the child: run the function, write its pickled result, and end the process there."""
    status = CHILD_FAILED
    try:
        data = pickle.dumps(function(), protocol=pickle.HIGHEST_PROTOCOL)
        view = memoryview(data)
        while view:
            view = view[os.write(write_end, view):]
        status = 0
    except BaseException:  # noqa: BLE001 - the parent redoes the work and reports any error itself
        status = CHILD_FAILED
    finally:
        os._exit(status)
