"""One executor for every vendor tool edgedeploy runs.

Three kinds of run, one behaviour:
  worker    vendor Python code in a pinned toolchain environment (espdl, rknn, eiq): the
            stdlib-only worker protocol of worker_main.py, request and result as JSON files;
  command   an external program (TI's compile script under TIDL_TOOLS_PATH, a user's
            container command);
  remote    a command on a device over its transport (trtexec on a Jetson over SSH).
For all three: the same time-out (the build's --timeout), the same process lifecycle
(process.ManagedProcess: the child's whole process group is killed and reaped on time-out,
error, Ctrl-C or SIGTERM, before the call returns), the same progress callback (elapsed time
and the tool's last log line, for live progress), and the same failure: one sentence with the
tool's own final error line and the path of the full log. A traceback never reaches the user;
it stays in the log.
"""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Mapping, Sequence

from edgedeploy.errors import ToolchainMissing, WorkerFailed
from edgedeploy.progress import FollowsLog
from edgedeploy.toolchains.process import ManagedProcess, ProcessTimedOut, last_line, open_log

if TYPE_CHECKING:
    from edgedeploy.devices.base import CommandResult, Transport
    from edgedeploy.toolchains.environments import VenvToolchain

WORKER_MAIN = Path(__file__).with_name("worker_main.py")
# Lines the worker protocol itself writes into the log; never a tool's "own" message.
_PROTOCOL_LINE = re.compile(r"^(\[edgedeploy-worker [^\]]*\]|\$ )")
# What a tool's error line looks like: a Python exception line, or a line that says error/failed.
_ERROR_LINE = re.compile(r"^([A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt|Failure)\b|.*\b(error|Error|ERROR|failed|FAILED|Fatal|FATAL|Assert)\b)")
# Progress callback: (elapsed seconds, the tool's last log line).
Progress = Callable[[float, str], None]


def final_error_line(log_text: str) -> str | None:
    """The tool's own last word in a log: its final error line, else its last line (None if silent)."""
    lines = [line.strip() for line in log_text.splitlines() if line.strip() and not _PROTOCOL_LINE.match(line.strip())]
    if not lines:
        return None
    for line in reversed(lines):
        if _ERROR_LINE.match(line):
            return _one_line(line)
    return _one_line(lines[-1])


def _signal_name(number: int) -> str:
    import signal

    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _one_line(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _log_since(log_path: Path, offset: int) -> str:
    try:
        with Path(log_path).open("rb") as fh:
            fh.seek(offset)
            return fh.read().decode("utf-8", errors="replace")
    except OSError:
        return ""


def _size(path: Path) -> int:
    try:
        return Path(path).stat().st_size
    except OSError:
        return 0


@dataclass
class CommandOutcome:
    """How an external command ended: its exit status, what it wrote into the log, how long it took."""

    returncode: int
    log_text: str
    seconds: float

    @property
    def error_line(self) -> str | None:
        return final_error_line(self.log_text)


class Executor:
    """Runs vendor tools for one stage of work, all with one time-out, one log and one progress callback.

    `log_path` is where every tool's stdout and stderr go (appended); `timeout_s` applies to
    each run; `progress(elapsed_s, last_log_line)` is called about twice a second while a run
    goes on (the CLI shows it as a live line). A progress object that is also `FollowsLog` is
    told the log of each run first (the CLI's --verbose prints every line of it).
    """

    def __init__(self, log_path: Path, timeout_s: float, progress: Progress | None = None):
        self.log_path = Path(log_path).absolute()
        self.timeout_s = float(timeout_s)
        self.progress = progress

    # -- the three kinds --------------------------------------------------------------------

    def worker(self, toolchain: "VenvToolchain", worker_file: Path, request: dict, workdir: Path, label: str | None = None) -> dict:
        """Run `worker_file`'s run(request, ctx) in the toolchain's pinned environment; its result dict."""
        return self.worker_with_python(toolchain.require(), worker_file, request, workdir, label or toolchain.name)

    def worker_with_python(self, python: Path, worker_file: Path, request: dict, workdir: Path, label: str) -> dict:
        """The worker protocol with a given interpreter (an environment being installed, a user's torch)."""
        # The worker runs with cwd=workdir: every path it gets must be absolute.
        workdir, worker_file = Path(workdir).absolute(), Path(worker_file).absolute()
        workdir.mkdir(parents=True, exist_ok=True)
        request_path = workdir / "request.json"
        result_path = workdir / "result.json"
        result_path.unlink(missing_ok=True)
        request_path.write_text(json.dumps(request, indent=2))
        cmd = [str(python), str(WORKER_MAIN), str(worker_file), str(request_path), str(result_path)]
        outcome = self._run_logged(cmd, cwd=workdir, env=worker_environment(Path(python)), label=f"the {label} worker", missing=f"the {label} toolchain environment")
        if not result_path.exists():
            if outcome.returncode < 0:
                # A native crash inside the toolchain (a segfault in TensorFlow, an abort in C++).
                how = f"crashed ({_signal_name(-outcome.returncode)}) in the toolchain's native code"
                raise WorkerFailed(self._sentence(f"The {label} worker {how} without a result; its last log line was", outcome.error_line))
            raise WorkerFailed(self._sentence(f"The {label} worker exited with status {outcome.returncode} without a result", outcome.error_line))
        try:
            payload = json.loads(result_path.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError, OSError):
            raise WorkerFailed(self._sentence(f"The {label} worker wrote an unreadable result", outcome.error_line)) from None
        # The result is the toolchain environment's word: checked for shape before it is used.
        if not isinstance(payload, dict) or not isinstance(payload.get("ok"), bool) or (payload["ok"] and not isinstance(payload.get("result"), dict)):
            raise WorkerFailed(self._sentence(f"The {label} worker wrote a result of the wrong shape (not an object with ok and result)", outcome.error_line))
        if not payload.get("ok"):
            own = f"{payload.get('error_type')}: {payload.get('error')}" if payload.get("error_type") else payload.get("error")
            raise WorkerFailed(self._sentence(f"The {label} toolchain failed", _one_line(str(own)) if own else outcome.error_line))
        return payload["result"]

    def command(self, argv: Sequence[str], cwd: Path, label: str, env: Mapping[str, str] | None = None, log_path: Path | None = None) -> CommandOutcome:
        """Run an external program with its output into the log; the outcome (a non-zero exit is the caller's to judge)."""
        return self._run_logged(list(argv), cwd=Path(cwd), env=dict(env if env is not None else os.environ), label=label, log_path=log_path, missing=argv[0])

    def remote(self, transport: "Transport", argv: Sequence[str], cwd: str, label: str) -> "CommandResult":
        """Run argv on the transport's device (its ssh client is a ManagedProcess too), output appended to the log."""
        started = time.monotonic()
        with open_log(self.log_path) as log:
            log.write(f"$ [{getattr(transport.device, 'name', 'device')}] {' '.join(argv)}\n".encode())
        if isinstance(self.progress, FollowsLog):
            self.progress.follow_log(self.log_path)
        if self.progress is not None:
            self.progress(0.0, f"{label} on {getattr(transport.device, 'name', 'the device')}")
        result = transport.run(list(argv), cwd, self.timeout_s)
        with open_log(self.log_path) as log:
            log.write((result.stdout or "").encode(errors="replace"))
            if result.stderr:
                log.write(result.stderr.encode(errors="replace"))
        if result.returncode is None:
            raise WorkerFailed(self._sentence(f"{label} did not finish within {self.timeout_s:.0f} s and was stopped", final_error_line(result.stdout + "\n" + result.stderr)))
        if self.progress is not None:
            self.progress(time.monotonic() - started, f"{label}: exit {result.returncode}")
        return result

    def failure(self, what: str, outcome: CommandOutcome | None = None) -> WorkerFailed:
        """The one-sentence error for a run the caller judged failed (e.g. a non-zero exit)."""
        return WorkerFailed(self._sentence(what, outcome.error_line if outcome else None))

    # -- shared ---------------------------------------------------------------------------

    def _run_logged(self, argv: list[str], cwd: Path, env: dict, label: str, missing: str, log_path: Path | None = None) -> CommandOutcome:
        log_path = Path(log_path).absolute() if log_path else self.log_path
        offset = _size(log_path)
        started = time.monotonic()
        with open_log(log_path) as log:
            log.write(f"$ {' '.join(argv)}\n".encode())
            log.flush()
            tick = None
            if isinstance(self.progress, FollowsLog):
                self.progress.follow_log(log_path)
            if self.progress is not None:
                progress = self.progress
                tick = lambda elapsed: progress(elapsed, last_line(log_path))  # noqa: E731 - a one-line adapter
            try:
                with ManagedProcess(argv, stdout=log, stderr=log, cwd=cwd, env=env) as proc:
                    try:
                        rc = proc.wait(self.timeout_s, on_tick=tick)
                    except ProcessTimedOut:
                        log.flush()
                        text = _log_since(log_path, offset)
                        raise WorkerFailed(self._sentence(f"{label[0].upper()}{label[1:]} timed out after {self.timeout_s:.0f} s and was stopped", final_error_line(text), log_path)) from None
            except FileNotFoundError as exc:
                raise ToolchainMissing(f"Cannot start {missing}: {exc.strerror} ({argv[0]}).") from exc
            except PermissionError as exc:
                raise ToolchainMissing(f"Cannot start {missing}: {exc.strerror} ({argv[0]}).") from exc
        return CommandOutcome(rc, _log_since(log_path, offset), round(time.monotonic() - started, 2))

    def _sentence(self, what: str, own_line: str | None, log_path: Path | None = None) -> str:
        said = f": {own_line.rstrip('.')}" if own_line else ""
        return f"{what}{said} (full log: {log_path or self.log_path})."


def worker_environment(python: Path) -> dict[str, str]:
    """The environment a worker runs in: the toolchain's venv, nothing of edgedeploy's own."""
    env = dict(os.environ)
    for var in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP"):
        env.pop(var, None)
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONNOUSERSITE"] = "1"
    env["EDGEDEPLOY_WORKER"] = "1"
    # Toolchains iterate over sets and dicts of names when they lay out their files (esp-ppq's
    # initializer order): a fixed hash seed makes the same input give the same bytes.
    env.setdefault("PYTHONHASHSEED", "0")
    # Some toolchains shell out to executables of their own environment (onnx2tf runs onnxsim).
    env["PATH"] = str(python.parent) + os.pathsep + env.get("PATH", "")
    env["VIRTUAL_ENV"] = str(python.parent.parent)
    return env

