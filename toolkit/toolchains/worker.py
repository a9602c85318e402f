"""The core side of the worker protocol: run vendor code in a toolchain's environment.

The core writes request.json, starts `<env python> worker_main.py WORKER request.json
result.json` with the toolchain's stdout and stderr going to a log file, and reads result.json.
A non-zero exit, a missing result, an error result or a time-out becomes one WorkerFailed error
that quotes the log's tail.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

from edgedeploy.errors import WorkerFailed

if TYPE_CHECKING:
    from edgedeploy.toolchains.environments import VenvToolchain

WORKER_MAIN = Path(__file__).with_name("worker_main.py")
PROBE_WORKER = Path(__file__).with_name("probe_worker.py")
LOG_TAIL_LINES = 20


def log_tail(log_path: Path, lines: int = LOG_TAIL_LINES) -> str:
    """The last lines of a log, indented, for quoting in an error."""
    try:
        text = log_path.read_text(errors="replace")
    except OSError:
        return "    (no log was written)"
    tail = [line for line in text.splitlines() if line.strip()][-lines:]
    return "\n".join("    " + line for line in tail) or "    (the log is empty)"


def run_worker(
    python: Path,
    worker_file: Path,
    request: dict,
    workdir: Path,
    log_path: Path,
    timeout_s: float,
    label: str,
) -> dict:
    """Run `worker_file`'s run(request, ctx) with interpreter `python`; return its result dict.

    `label` names the toolchain in errors. Callers normally go through VenvToolchain.run_worker,
    which first checks that the environment is installed.
    """
    # The worker runs with cwd=workdir: every path it gets must be absolute.
    workdir, log_path, worker_file = Path(workdir).resolve(), Path(log_path).resolve(), Path(worker_file).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    request_path = workdir / "request.json"
    result_path = workdir / "result.json"
    result_path.unlink(missing_ok=True)
    request_path.write_text(json.dumps(request, indent=2))
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
    cmd = [str(python), str(WORKER_MAIN), str(worker_file), str(request_path), str(result_path)]
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("ab") as log:
        log.write(f"$ {' '.join(cmd)}\n".encode())
        log.flush()
        proc = subprocess.Popen(
            cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=workdir, env=env, start_new_session=True
        )
        try:
            rc = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            raise WorkerFailed(
                f"The {label} worker timed out after {timeout_s:.0f} s and was stopped; "
                f"last lines of {log_path}:\n{log_tail(log_path)}"
            ) from None
    if not result_path.exists():
        how = f"was killed by signal {-rc}" if rc < 0 else f"exited with status {rc}"
        raise WorkerFailed(
            f"The {label} worker {how} without a result; last lines of {log_path}:\n{log_tail(log_path)}"
        )
    payload = json.loads(result_path.read_text())
    if not payload.get("ok"):
        raise WorkerFailed(
            f"The {label} toolchain failed: {payload.get('error_type')}: {payload.get('error')}; "
            f"last lines of {log_path}:\n{log_tail(log_path)}"
        )
    return payload["result"]


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=5)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()


def run_probe(toolchain: "VenvToolchain", home: Path | None, workdir: Path, timeout_s: float = 300) -> dict:
    """Import the toolchain's modules in its environment and return the versions it reports.

    Runs on an environment whose stamp is not written yet: install verifies with it.
    """
    return run_worker(
        toolchain.python(home),
        PROBE_WORKER,
        {"modules": list(toolchain.import_modules), "distributions": list(toolchain.distributions)},
        workdir=workdir,
        log_path=workdir / "probe.log",
        timeout_s=timeout_s,
        label=toolchain.name,
    )
