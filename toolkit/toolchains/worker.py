"""The core side of the worker protocol: run vendor code in a toolchain's environment.

The core writes request.json, starts `<env python> worker_main.py WORKER request.json
result.json` with the toolchain's stdout and stderr going to a log file, and reads result.json.
The run itself belongs to the executor (executor.Executor.worker): one time-out, the worker's
process group killed and reaped on any exit, and one sentence on failure with the toolchain's
own final error line and the log's path. `run_worker` is the plain function form of it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from edgedeploy.toolchains.executor import WORKER_MAIN, Executor, Progress

if TYPE_CHECKING:
    from edgedeploy.toolchains.environments import VenvToolchain

PROBE_WORKER = Path(__file__).with_name("probe_worker.py")

__all__ = ["WORKER_MAIN", "PROBE_WORKER", "run_worker", "run_probe"]


def run_worker(
    python: Path,
    worker_file: Path,
    request: dict,
    workdir: Path,
    log_path: Path,
    timeout_s: float,
    label: str,
    progress: Progress | None = None,
) -> dict:
    """Run `worker_file`'s run(request, ctx) with interpreter `python`; return its result dict.

    `label` names the toolchain in errors. Callers that run several tools for one stage hold an
    Executor instead (edgedeploy.toolchains.executor).
    """
    return Executor(log_path, timeout_s, progress).worker_with_python(Path(python), worker_file, request, workdir, label)


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
