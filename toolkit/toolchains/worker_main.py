"""Entry point of a toolchain worker subprocess. Standard library only.

Runs inside a toolchain's own virtual environment, started by the core as

    <env python> worker_main.py WORKER_FILE REQUEST_JSON RESULT_JSON

It loads WORKER_FILE (a module with `run(request: dict, ctx: WorkerContext) -> dict`), calls it,
and writes {"ok": true, "result": ...} or {"ok": false, "error": ..., "error_type": ...} to
RESULT_JSON atomically. Stdout and stderr of this process (the toolchain's banners, tables and
tracebacks) go wherever the core pointed them: the build log. This file must not import
edgedeploy: the toolchain environment does not have it installed.
"""

import importlib.metadata
import importlib.util
import json
import os
import re
import signal
import stat
import sys
import time
import traceback

# Set by the core's process.ManagedProcess: the fd of the read end of a pipe only the core holds open.
LIFELINE_ENV = "EDGEDEPLOY_LIFELINE_FD"


class WorkerContext:
    """What a worker gets besides its request: where to work, and a way to log progress."""

    def __init__(self, workdir: str, result_path: str):
        self.workdir = workdir
        self.result_path = result_path
        self.started = time.monotonic()
        self._arrays = None

    def log(self, message: str) -> None:
        """A progress line in the build log, prefixed so the core can pick it out."""
        print(f"[edgedeploy-worker +{time.monotonic() - self.started:.1f}s] {message}", flush=True)

    def capture_fd_output(self, path: str):
        """Context manager: copy what C code writes to fd 1 and 2 into `path` as well as the log.

        Some toolchains print results (RKNN's layer table) from C code straight to the file
        descriptors, past Python's sys.stdout; this catches them.
        """
        return _FdCapture(path)

    def dispatch(self, request: dict, handlers: dict, key: str = "action"):
        """Call the handler that request[key] names, for a worker whose `run` serves several actions."""
        name = request.get(key)
        handler = handlers.get(name) if isinstance(name, str) else None
        if handler is None:
            raise ValueError(f"unknown {key} {name!r}")
        return handler(request, self)

    @staticmethod
    def package_version(dist: str):
        """The installed version of distribution `dist` in this environment, or None when it is not installed."""
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            return None

    @property
    def arrays(self):
        """The one array format (worker_arrays.py, shipped beside this file): read_arrays, write_arrays, write_npy_list."""
        if self._arrays is None:
            self._arrays = load_module_from_path("edgedeploy_worker_arrays", os.path.join(os.path.dirname(os.path.abspath(__file__)), "worker_arrays.py"))
        return self._arrays

    @staticmethod
    def load_module(path: str, name: str = "edgedeploy_protocol"):
        """The module in the file at `path`, loaded by path (workers cannot import edgedeploy)."""
        return load_module_from_path(name, path)


class _FdCapture:
    def __init__(self, path: str):
        self.path = path

    def __enter__(self):
        sys.stdout.flush()
        sys.stderr.flush()
        self._saved = (os.dup(1), os.dup(2))
        self._file = open(self.path, "wb")
        os.dup2(self._file.fileno(), 1)
        os.dup2(self._file.fileno(), 2)
        return self

    def __exit__(self, *exc):
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(self._saved[0], 1)
        os.dup2(self._saved[1], 2)
        for fd in self._saved:
            os.close(fd)
        self._file.close()
        # Keep the build log complete: append what was captured.
        with open(self.path, "rb") as fh:
            data = fh.read()
        os.write(1, data)
        return False


def load_module_from_path(name: str, path: str):
    """Execute the Python file at `path` as a fresh module called `name` and return it."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _write_result(path: str, payload: dict) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(payload, fh)
    os.replace(tmp, path)


# A worker that cannot write its result (a full disk, `ulimit -f`) says why in its exit status:
# OS_ERROR_EXIT_BASE + errno. The result file is in the worker's folder, so the core knows which
# file system refused it; the log, on the same disk, may have lost the traceback too.
OS_ERROR_EXIT_BASE = 100


def _os_error_fields(exc: BaseException) -> dict:
    """The errno and file of an OSError, so the core can say what the file system refused."""
    if not isinstance(exc, OSError) or not isinstance(exc.errno, int):
        return {}
    fields = {"errno": exc.errno}
    if exc.filename is not None:
        fields["filename"] = os.fsdecode(exc.filename)
    return fields


# What a worker's failure_context(exc) may say about a failure, beside the exception's last line:
# the toolchain's node it failed on, that node's operator type, and where in the toolchain.
CONTEXT_KEYS = ("node", "op_type", "where", "error", "error_type")


def _failure_context(module, exc) -> dict:
    """The worker module's own reading of its toolchain's failure (optional `failure_context(exc) -> dict`).

    Only the worker knows its toolchain's objects (esp-ppq's Operation, onnx2tf's graph_node),
    so it names the node; a failure_context that fails itself is ignored (the plain message stays).
    """
    reader = getattr(module, "failure_context", None)
    if reader is None:
        return {}
    try:
        found = reader(exc) or {}
    except Exception:  # noqa: BLE001 - the original failure is what the user must see
        traceback.print_exc()
        return {}
    return {k: str(v)[:500] for k, v in found.items() if k in CONTEXT_KEYS and v}


# A bullet that gives an argument's value: "• name='x'", "- shape=(1, 3)".
_ARGUMENT_BULLET = re.compile(r"^(\u2022|-|\*)\s*\w+=")


def exception_message(text: str) -> str:
    """An exception's own message as one line: its lines joined, less a closing listing of the
    failing call's arguments (a line ending in ':' and the bullet lines after it), which gives
    the values the call got, never what went wrong. Its last line alone can be such a bullet."""
    lines = [line.strip() for line in text.strip().splitlines()]
    end = len(lines)
    while end and (not lines[end - 1] or _ARGUMENT_BULLET.match(lines[end - 1])):
        end -= 1
    if any(lines[end:]) and end and lines[end - 1].endswith(":"):
        end -= 1  # the listing's heading ("Call arguments received by ...:")
    kept = [line for line in lines[:end] if line] or [line for line in lines if line]
    return " ".join(kept)


def guard_process_group():
    """Start the guard that kills this worker's whole process group when the core dies; its pid, or None.

    The core gave this process the read end of a pipe whose write end only the core holds: the
    kernel closes it when the core dies, kill -9 included, and the guard, blocked reading it,
    then kills the group (the worker, the compilers and helpers it started, the guard itself).
    The guard is a process, not a thread of the worker: the kernel's parent-death SIGKILL
    reaches the worker right after the pipe closes, before a thread of it could act, and a
    toolchain's C code holding the GIL could stall a thread too. Only a group that is its
    session's own (how the core starts workers) is guarded, so a stray variable kills nothing else.
    """
    value = os.environ.pop(LIFELINE_ENV, "")  # the worker's own children are not guarded by it
    if not value.isdigit() or os.getpgrp() != os.getsid(0):
        return None
    fd = int(value)
    try:
        if not stat.S_ISFIFO(os.fstat(fd).st_mode):
            return None
    except OSError:
        return None
    pid = os.fork()  # before any vendor code: one thread, nothing but the standard library loaded
    if pid == 0:
        # Only the pipe's end means the core is gone; a Ctrl-C sent to the group is the worker's business.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            while os.read(fd, 64):  # nothing is ever written: read returns b"" at end of file
                pass
        except OSError:
            os._exit(0)
        os.killpg(0, signal.SIGKILL)
        os._exit(0)
    os.close(fd)
    return pid


_GUARD = None  # this worker's guard's pid


def stop_guard(pid) -> None:
    """End the guard of a worker that finished (and reap it, so no zombie is left)."""
    if pid:
        try:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except OSError:
            pass


def main(argv: list) -> int:
    if len(argv) != 4:
        print("usage: worker_main.py WORKER_FILE REQUEST_JSON RESULT_JSON", file=sys.stderr)
        return 2
    global _GUARD
    _GUARD = guard_process_group()
    try:
        return _run(argv)
    finally:
        stop_guard(_GUARD)


def _run(argv: list) -> int:
    worker_file, request_path, result_path = argv[1:4]
    # Python put this file's folder first on sys.path; nothing of ours may shadow a vendor package.
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if p and os.path.abspath(p) != here]
    ctx = WorkerContext(os.path.dirname(os.path.abspath(request_path)), result_path)
    module = None
    try:
        with open(request_path, encoding="utf-8") as fh:
            request = json.load(fh)
        module = load_module_from_path("edgedeploy_toolchain_worker", worker_file)
        ctx.log(f"worker {os.path.basename(worker_file)} started (python {sys.version.split()[0]})")
        result = module.run(request, ctx)
        payload = {"ok": True, "result": result}
    except BaseException as exc:  # noqa: BLE001 - everything must become a result the core can read
        traceback.print_exc()
        sys.stdout.flush()
        payload = {"ok": False, "error_type": type(exc).__name__, "error": exception_message(str(exc)) or type(exc).__name__}
        payload.update(_failure_context(module, exc))
        payload.update(_os_error_fields(exc))
    try:
        ctx.log("worker finished")
        sys.stdout.flush()
        _write_result(result_path, payload)
    except OSError as exc:
        if not isinstance(exc.errno, int) or exc.errno >= 256 - OS_ERROR_EXIT_BASE:
            raise
        # os._exit: a normal exit would flush stdout into the same full disk and exit 120 instead.
        stop_guard(_GUARD)
        os._exit(OS_ERROR_EXIT_BASE + exc.errno)
    return 0 if payload["ok"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
