"""One executor for every vendor tool edgedeploy runs.

Three kinds of run, one behaviour:
  worker    vendor Python code through the stdlib-only worker protocol of worker_main.py
            (request and result as JSON files), in any environment kind of toolchains/kinds.py
            (the managed venv, a user's Python, an external command, a Python over SSH): ONE
            path, `Executor.run_worker`, whatever the kind;
  command   an external program (TI's compile script under TIDL_TOOLS_PATH, a user's
            container command);
  remote    a command on a device over its transport (trtexec on a Jetson over SSH).
For all three: the same time-out (the build's --timeout), the same process lifecycle
(process.ManagedProcess: the child's whole process group is killed and reaped on time-out,
error, Ctrl-C or SIGTERM, before the call returns), the same progress callback (elapsed time
and the tool's last log line, for live progress), and the same failure: a ToolchainFailed whose fields
(toolchain, node, op type, source location, final line, log path) make one sentence. A traceback never reaches the user;
it stays in the log.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Mapping, Sequence

from edgedeploy import interrupts
from edgedeploy.errors import ToolchainFailed, ToolchainMissing
from edgedeploy.progress import FollowsLog
from edgedeploy.toolchains.kinds import WORKER_MAIN, PythonInterpreter, WorkerEnvironment, worker_environment
from edgedeploy.toolchains.process import ManagedProcess, ProcessTimedOut, last_line, open_log
from edgedeploy.toolchains.worker_main import OS_ERROR_EXIT_BASE, exception_message

if TYPE_CHECKING:
    from edgedeploy.devices.base import CommandResult, Transport

__all__ = ["WORKER_MAIN", "CommandOutcome", "Executor", "Progress", "final_error_line", "worker_environment"]
# Lines the worker protocol itself writes into the log; never a tool's "own" message.
_PROTOCOL_LINE = re.compile(r"^(\[edgedeploy-worker [^\]]*\]|\$ )")
# What a tool's error line looks like: a Python exception line, or a line that says error/failed.
_ERROR_LINE = re.compile(r"^([A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt|Failure)\b|.*\b(error|Error|ERROR|failed|FAILED|Fatal|FATAL|Assert)\b)")
# TensorFlow's and absl's info and warning lines (`W0000 00:00:... file.cc:368] Ignored ...`): never a tool's last word.
_GLOG_NOTE = re.compile(r"^[IW]\d{4} \d\d:\d\d:\d\d")
# Progress callback: (elapsed seconds, the tool's last log line).
Progress = Callable[[float, str], None]


def final_error_line(log_text: str) -> str | None:
    """The tool's own last word in a log: the message of its last traceback's exception, else its
    final error line, else its last line (None if silent)."""
    kept = [line.rstrip() for line in log_text.splitlines() if not _PROTOCOL_LINE.match(line.strip()) and not _GLOG_NOTE.match(line.strip())]
    message = _traceback_message(kept)
    if message:
        return _one_line(message)
    lines = [line.strip() for line in kept if line.strip()]
    if not lines:
        return None
    for line in reversed(lines):
        if _ERROR_LINE.match(line):
            return _one_line(line)
    return _one_line(lines[-1])


# The exception line that ends a Python traceback: "ValueError: ...", "pkg.mod.Failed", unindented.
_EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(:\s|:?$)")
# A message of more lines than this is taken to be a traceback followed by other output.
_MESSAGE_LINES = 12
# Lines that end one traceback's message: the next traceback of a chain.
_CHAIN_LINE = re.compile(r"^(Traceback \(most recent call last\):|During handling of the above exception|The above exception was the direct cause)")


def _traceback_message(lines: list[str]) -> str | None:
    """The exception's message of the last traceback in `lines`, with the lines it spans: the first
    unindented line after the frames (a frame's code may itself look like an error: it is indented)."""
    starts = [i for i, line in enumerate(lines) if line.startswith("Traceback (most recent call last):")]
    if not starts:
        return None
    at = next((i for i in range(starts[-1] + 1, len(lines)) if lines[i].strip() and not lines[i][0].isspace()), None)
    if at is None or not _EXCEPTION_LINE.match(lines[at]):
        return None
    end = next((i for i in range(at + 1, len(lines)) if _CHAIN_LINE.match(lines[i])), len(lines))
    block = lines[at:end]
    if sum(1 for line in block if line.strip()) > _MESSAGE_LINES:
        return None  # the tool went on logging after the traceback: it was not its last word
    return exception_message("\n".join(block))


def raise_file_system_error(number: object, filename: object) -> None:
    """Raise the OSError a worker met in the file system (a full disk, `ulimit -f`, a read-only
    folder...), so the caller says it as it says its own (fs_errors: the path and what to do)
    instead of as a toolchain failure; nothing for any other errno."""
    from edgedeploy.fs_errors import FILE_SYSTEM_ERRNOS

    if isinstance(number, int) and not isinstance(number, bool) and number in FILE_SYSTEM_ERRNOS:
        raise OSError(number, os.strerror(number), os.fspath(filename) if isinstance(filename, (str, Path)) else None)


def errno_of_exit(returncode: int) -> int | None:
    """The errno a worker that could not write its result file gave as its exit status (worker_main)."""
    return returncode - OS_ERROR_EXIT_BASE if returncode > OS_ERROR_EXIT_BASE else None


_PROGRESS_LINE = re.compile(r"^\[edgedeploy-worker [^\]]*\] (.+)$")


def last_progress(log_text: str) -> str | None:
    """The stage a worker last announced (its ctx.log lines), for a worker that died without a result."""
    for line in reversed(log_text.splitlines()):
        m = _PROGRESS_LINE.match(line.strip())
        if m and not m.group(1).startswith(("worker ", "worker finished")):
            return _one_line(m.group(1), 160)
    return None


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

    def run_worker(self, environment, worker_file: Path, request: dict, workdir: Path, label: str | None = None) -> dict:
        """Run `worker_file`'s run(request, ctx) in `environment`; its result dict. The one worker path.

        `environment` is a toolchains.kinds.WorkerEnvironment (managed venv, user Python,
        external command, SSH), a VenvToolchain (its managed venv) or an interpreter's path.
        Any failure is a ToolchainFailed (or ToolchainMissing when the environment is not usable).
        """
        # No new worker once a signal arrived, even if something on the way swallowed it.
        interrupts.check()
        env = as_environment(environment)
        label = label or getattr(getattr(env, "toolchain", None), "name", None) or env.kind
        # The environment is held while the worker runs: `toolchain install --force` waits.
        with env.in_use(on_wait=lambda who: self._tell(f"waiting for {who}, which is installing the {label} toolchain")):
            return self._run_worker_in(env, worker_file, request, workdir, label)

    def _run_worker_in(self, env: WorkerEnvironment, worker_file: Path, request: dict, workdir: Path, label: str) -> dict:
        env.check(self)
        # The worker runs with cwd=workdir: every path it gets must be absolute.
        workdir, worker_file = Path(workdir).absolute(), Path(worker_file).absolute()
        workdir.mkdir(parents=True, exist_ok=True)
        request_path, result_path = workdir / "request.json", workdir / "result.json"
        result_path.unlink(missing_ok=True)
        request_path.write_text(json.dumps(request, indent=2))
        if env.remote:
            from edgedeploy.toolchains.remote import run_remote_worker

            outcome = run_remote_worker(self, env, worker_file, request, workdir, label)
        else:
            cmd = env.argv(WORKER_MAIN, worker_file, request_path, result_path)
            outcome = self._run_logged(cmd, cwd=workdir, env=env.process_env(), label=f"the {label} worker", missing=f"the {label} toolchain environment ({env.describe()})", toolchain=label)
        return self._read_result(outcome, result_path, label)

    def _tell(self, line: str) -> None:
        """A line for the user while nothing runs yet (the progress line, else stderr)."""
        if self.progress is not None:
            self.progress(0.0, line)
        else:
            print(line, file=sys.stderr)

    def _read_result(self, outcome: "CommandOutcome", result_path: Path, label: str) -> dict:
        """The worker's result dict, checked for shape; a ToolchainFailed with its fields otherwise."""
        line = outcome.error_line
        # The result file could not be written: its folder's file system is the one that refused.
        raise_file_system_error(errno_of_exit(outcome.returncode), result_path)
        if not result_path.exists():
            stage = last_progress(outcome.log_text)
            during = f" while {stage}" if stage else ""
            if outcome.returncode < 0:
                # A native crash inside the toolchain (a segfault in TensorFlow, an abort in C++).
                how = f"crashed ({_signal_name(-outcome.returncode)}) in the toolchain's native code{during}"
                raise self.failed(f"The {label} worker {how}, without a result" + ("; its last log line was" if line else ""), label, line)
            raise self.failed(f"The {label} worker exited with status {outcome.returncode} without a result", label, line)
        try:
            payload = json.loads(result_path.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError, OSError):
            raise self.failed(f"The {label} worker wrote an unreadable result", label, line) from None
        # The result is the toolchain environment's word: checked for shape before it is used.
        if not isinstance(payload, dict) or not isinstance(payload.get("ok"), bool) or (payload["ok"] and not isinstance(payload.get("result"), dict)):
            raise self.failed(f"The {label} worker wrote a result of the wrong shape (not an object with ok and result)", label, line)
        if not payload.get("ok"):
            raise_file_system_error(payload.get("errno"), payload.get("filename"))
            own = f"{payload.get('error_type')}: {payload.get('error')}" if payload.get("error_type") else payload.get("error")
            node = payload.get("node") if isinstance(payload.get("node"), str) and payload.get("node") else None
            raise ToolchainFailed(
                f"The {label} toolchain failed",
                toolchain=label,
                node=_one_line(node, 160) if node else None,
                op_type=_one_line(str(payload["op_type"]), 40) if node and payload.get("op_type") else None,
                source_location=_one_line(str(payload["where"]), 160) if payload.get("where") else None,
                final_line=_one_line(str(own)) if own else line,
                log_path=str(self.log_path),
            )
        return payload["result"]

    def log_offset(self) -> int:
        """Where the log ends now; `outcome_since` reads what a run appended after it."""
        return _size(self.log_path)

    def outcome_since(self, returncode: int, offset: int, started: float) -> "CommandOutcome":
        return CommandOutcome(returncode, _log_since(self.log_path, offset), round(time.monotonic() - started, 2))

    def child(self, log_path: Path, timeout_s: float) -> "Executor":
        """An executor for a side run (an environment check) with a log and time-out of its own."""
        return Executor(log_path, timeout_s, None)

    def command(self, argv: Sequence[str], cwd: Path, label: str, env: Mapping[str, str] | None = None, log_path: Path | None = None) -> CommandOutcome:
        """Run an external program with its output into the log; the outcome (a non-zero exit is the caller's to judge)."""
        return self._run_logged(list(argv), cwd=Path(cwd), env=dict(env if env is not None else os.environ), label=label, log_path=log_path, missing=argv[0], toolchain=label)

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
            raise self.failed(f"{label} did not finish within {self.timeout_s:.0f} s and was stopped", label, final_error_line(result.stdout + "\n" + result.stderr))
        if self.progress is not None:
            self.progress(time.monotonic() - started, f"{label}: exit {result.returncode}")
        return result

    def failure(self, what: str, outcome: CommandOutcome | None = None, toolchain: str = "") -> ToolchainFailed:
        """The error for a run the caller judged failed (e.g. a non-zero exit), with the tool's own last line."""
        return self.failed(what, toolchain, outcome.error_line if outcome else None)

    def failed(self, headline: str, toolchain: str, final_line: str | None, log_path: Path | None = None) -> ToolchainFailed:
        """A ToolchainFailed for this executor's log (or `log_path`)."""
        return ToolchainFailed(headline, toolchain=toolchain, final_line=final_line, log_path=str(log_path or self.log_path))

    # -- shared ---------------------------------------------------------------------------

    def _run_logged(self, argv: list[str], cwd: Path, env: dict, label: str, missing: str, log_path: Path | None = None, toolchain: str = "") -> CommandOutcome:
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
                        raise self.failed(f"{label[0].upper()}{label[1:]} timed out after {self.timeout_s:.0f} s and was stopped", toolchain or label, final_error_line(text), log_path) from None
            except FileNotFoundError as exc:
                raise ToolchainMissing(f"Cannot start {missing}: {exc.strerror} ({argv[0]}).") from exc
            except PermissionError as exc:
                raise ToolchainMissing(f"Cannot start {missing}: {exc.strerror} ({argv[0]}).") from exc
        return CommandOutcome(rc, _log_since(log_path, offset), round(time.monotonic() - started, 2))



def as_environment(environment) -> WorkerEnvironment:
    """A WorkerEnvironment for what callers hand the executor: a kind, a VenvToolchain, or an interpreter path."""
    if isinstance(environment, WorkerEnvironment):
        return environment
    if isinstance(environment, (str, Path)):
        return PythonInterpreter(Path(environment))
    if hasattr(environment, "worker_environment"):  # a Toolchain: the environment it runs in
        return environment.worker_environment()
    raise TypeError(f"not a worker environment: {environment!r}")

