"""Locks between edgedeploy processes: one toolchain environment, one artifact destination at a time.

A lock is flock(2) on a file. The kernel drops it when its holder dies, kill -9 included, so a
lock is never stale and nothing has to be cleaned up by hand. The lock of a folder lives beside
it (`.NAME.edgedeploy.lock`), since the folder itself is replaced (an artifact renamed into
place, an environment rebuilt by `--force`). An exclusive holder removes its lock file when it
lets go; whoever then gets a lock on the removed file sees that it is not the file at the path
any more and starts again, so two processes never both believe they hold it.

Who holds a lock is read from the kernel's own table (/proc/locks: the holder's pid, whose
command line /proc gives), so a message can say which process to wait for.
"""

from __future__ import annotations

import fcntl
import os
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

# The one lock file name: inside an artifact (a report update) and, with the folder's name in
# front, beside a folder (`.esp32s3.edgedeploy.lock`, `.espdl.edgedeploy.lock`).
LOCK_NAME = ".edgedeploy.lock"


# Locks this process holds, by path: a nested `held` on the same file in one process (a build
# inside a build's block, a worker run inside a build) passes through, since flock would make a
# process wait for itself.
_HELD: dict[str, int] = {}
_HELD_GUARD = threading.Lock()


class LockBusy(Exception):
    """Another process holds the lock and the caller would not wait; `holders` says who."""

    def __init__(self, holders: str):
        super().__init__(holders)
        self.holders = holders


def lock_beside(folder: Path) -> Path:
    """The lock file of `folder`: beside it, so that it outlives the folder's replacement."""
    folder = Path(folder)
    return folder.with_name(f".{folder.name}{LOCK_NAME}")


@contextmanager
def held(path: Path, shared: bool = False, wait: bool = True, on_wait: Callable[[str], None] | None = None, optional: bool = False) -> Iterator[None]:
    """Hold the lock on `path` for the block: shared (several readers) or exclusive.

    When another process holds it: `on_wait(holders)` is called once (a line for the user) and
    the call waits, or, without `wait`, LockBusy(holders) is raised at once. An `optional` lock
    whose file cannot be made (a read-only EDGEDEPLOY_HOME shared by an administrator, where no
    install can happen either) is done without.
    """
    key = os.path.abspath(path)
    with _HELD_GUARD:
        mine = key in _HELD
        if mine:
            _HELD[key] += 1
    if mine:
        try:
            yield
        finally:
            with _HELD_GUARD:
                _HELD[key] -= 1
        return
    try:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        fd = _acquire(Path(path), fcntl.LOCK_SH if shared else fcntl.LOCK_EX, wait, on_wait)
    except OSError:
        if not optional:
            raise
        yield
        return
    with _HELD_GUARD:
        _HELD[key] = 1
    try:
        yield
    finally:
        with _HELD_GUARD:
            del _HELD[key]
        _release(Path(path), fd)


def _acquire(path: Path, mode: int, wait: bool, on_wait: Callable[[str], None] | None) -> int:
    told = False
    while True:
        fd = os.open(path, os.O_CREAT | os.O_RDWR | os.O_CLOEXEC, 0o644)
        try:
            try:
                fcntl.flock(fd, mode | fcntl.LOCK_NB)
            except BlockingIOError:
                who = holders(path, fd)
                if not wait:
                    raise LockBusy(who) from None
                if on_wait is not None and not told:
                    on_wait(who)
                    told = True
                fcntl.flock(fd, mode)
            if _is_file_at(fd, path):
                return fd
        except BaseException:
            os.close(fd)
            raise
        # The previous holder removed the file as it let go: lock the one at the path now.
        os.close(fd)


def _is_file_at(fd: int, path: Path) -> bool:
    try:
        at_path = os.stat(path)
    except FileNotFoundError:
        return False
    mine = os.fstat(fd)
    return (mine.st_dev, mine.st_ino) == (at_path.st_dev, at_path.st_ino)


def _release(path: Path, fd: int) -> None:
    try:
        # Only a sole holder may remove the file (a shared lock may have company): try for an
        # exclusive lock without waiting; whoever waits on the removed file starts again.
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        if _is_file_at(fd, path):
            path.unlink(missing_ok=True)
    except OSError:
        pass  # another holder, or the folder is gone: the file stays, the lock goes with the fd
    finally:
        os.close(fd)


def holders(path: Path, fd: int | None = None) -> str:
    """Who holds the lock on `path`, as 'pid 123 (edgedeploy toolchain install espdl --force)';
    several holders joined with 'and'; 'another process' when the kernel does not say."""
    try:
        st = os.fstat(fd) if fd is not None else os.stat(path)
        with open("/proc/locks", encoding="ascii", errors="replace") as fh:
            table = fh.read().splitlines()
    except OSError:
        return "another process"
    key = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    pids = []
    for line in table:
        fields = line.split()
        # "1: FLOCK  ADVISORY  WRITE 1234 00:2a:5678 0 EOF"; a waiter's line has "->" after the number.
        if len(fields) >= 6 and fields[1] == "FLOCK" and fields[5] == key and fields[4].isdigit() and int(fields[4]) != os.getpid():
            pids.append(int(fields[4]))
    named = [f"pid {pid} ({command_of(pid)})" for pid in dict.fromkeys(pids)]
    return " and ".join(named) if named else "another process"


def command_of(pid: int) -> str:
    """A process's command line, short: programs by their file name, at most 160 characters."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return "command unknown"
    argv = [a.decode("utf-8", "replace") for a in raw.split(b"\0") if a]
    if len(argv) > 1 and os.path.basename(argv[0]).startswith("python") and os.path.basename(argv[1]) == "edgedeploy":
        argv = argv[1:]  # the console script run by its interpreter
    if argv:
        argv[0] = os.path.basename(argv[0])
    text = " ".join(argv) or "command unknown"
    return text if len(text) <= 160 else text[:157] + "..."
