"""The core side of the worker protocol: run vendor code in a toolchain's environment.

The core writes request.json, starts `worker_main.py WORKER request.json result.json` in the
environment of the toolchain's kind (toolchains/kinds.py) with the toolchain's stdout and
stderr going to a log file, and reads result.json. The run itself has one path,
executor.Executor.run_worker: one time-out, the worker's process group killed and reaped on
any exit, and a ToolchainFailed with the toolchain's own final error line and the log's path.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from edgedeploy.toolchains.executor import Executor
from edgedeploy.toolchains.kinds import PROBE_WORKER, WORKER_MAIN, PythonInterpreter

if TYPE_CHECKING:
    from edgedeploy.toolchains.environments import VenvToolchain

__all__ = ["WORKER_MAIN", "PROBE_WORKER", "run_probe"]


def run_probe(toolchain: "VenvToolchain", home: Path | None, workdir: Path, timeout_s: float = 300, log_path: Path | None = None) -> dict:
    """Import the toolchain's modules in its environment and return the versions it reports.

    Runs on an environment whose stamp is not written yet: install verifies with it. The log is
    workdir/probe.log unless `log_path` puts it where it outlives the workdir (doctor's).
    """
    request = {"modules": list(toolchain.import_modules), "distributions": list(toolchain.distributions)}
    return Executor(log_path or workdir / "probe.log", timeout_s).run_worker(PythonInterpreter(toolchain.python(home)), PROBE_WORKER, request, workdir, label=toolchain.name)
