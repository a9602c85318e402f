"""A model file read on a thread while the program imports what it needs to parse it.

A command that reads one model (`edgedeploy audit MODEL`) knows its path before it imports ONNX
and numpy, about 0.15 s of byte code on one core; reading a 33 MB file takes another 0.02 s.
The read releases the GIL, so started first it is done by the time the model is parsed
(edgedeploy.model.intake takes the bytes, `take`). Nothing here imports ONNX.

Only bytes are handed over, never a verdict: the intake checks the path (exists, a file, its
size) as it does without a read ahead, and reads it itself when the read here failed or was for
another file, so every error is the intake's own.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

_reads: dict[str, "_Read"] = {}


class _Read:
    def __init__(self, path: str):
        self.data: bytes | None = None
        self.stat: os.stat_result | None = None  # of the file read, as it was opened
        self._thread = threading.Thread(target=self._run, args=(path,), name="edgedeploy-read-ahead", daemon=True)
        self._thread.start()

    def _run(self, path: str) -> None:
        try:
            with open(path, "rb") as f:
                self.stat = os.fstat(f.fileno())
                self.data = f.read()
        except (OSError, MemoryError):
            self.data = None  # the intake reads the file itself and says what is wrong

    def join(self, now: os.stat_result | None = None) -> bytes | None:
        """The bytes, once read; None if the read failed or, given the file's stat `now`, the
        file is no longer the one read (another size, time of change or inode)."""
        self._thread.join()
        if self.data is None or now is None:
            return self.data
        same = (self.stat.st_ino, self.stat.st_size, self.stat.st_mtime_ns) == (now.st_ino, now.st_size, now.st_mtime_ns)
        return self.data if same and len(self.data) == now.st_size else None


def _key(path: str | os.PathLike) -> str:
    return os.path.realpath(path)


def start(path: str | os.PathLike) -> None:
    """Start reading `path` on a thread, if it is a regular file (else nothing is read)."""
    if os.path.isfile(path):
        _reads.setdefault(_key(path), _Read(str(path)))


def take(path: Path, now: os.stat_result | None = None) -> bytes | None:
    """The bytes read ahead for `path` (waiting for the read to end), once; None when none was
    started for it, it failed, or the file changed since (`now`: its stat as the caller checks it)."""
    found = _reads.pop(_key(path), None)
    return None if found is None else found.join(now)
