"""Where a toolchain worker runs: the environment kinds behind the executor's one worker path.

Every kind runs the same protocol (worker_main.py WORKER request.json result.json, with
worker_arrays.py beside it) under the executor's one time-out, one process-group kill and one
log tail; a kind only says how the interpreter is started:

  managed   the venv edgedeploy installed from pinned requirements (`toolchain install`)
  python    a Python the user installed the vendor SDK into themselves (most vendor SDKs arrive
            so): `EDGEDEPLOY_<TARGET>_PYTHON`, or `python = ...` under `[toolchains.<name>]` in
            ./edgedeploy.toml; checked once for the SDK's import and version before use
  command   an external command that stands for the interpreter (a container, a wrapper
            script): `command = [...]` under `[toolchains.<name>]`; it gets worker_main.py's
            arguments appended
  ssh       a Python on another machine reached over SSH (devices.ssh's transport): the
            protocol's files and the request's input files and folders are copied there, its
            output files and folders (and what it wrote into the request's folders) copied back
"""

from __future__ import annotations

import os
import re
import shlex
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from edgedeploy.errors import ConfigError, ToolchainMissing
from edgedeploy.interrupts import reraise_if_interrupted

if TYPE_CHECKING:
    from edgedeploy.devices.base import Transport

HERE = Path(__file__).parent
WORKER_MAIN = HERE / "worker_main.py"
# What ships with every worker, whatever the kind: the entry point and the one array helper.
PROTOCOL_FILES = (WORKER_MAIN, HERE / "worker_arrays.py")
PROBE_WORKER = HERE / "probe_worker.py"
# How long the check of a user-supplied Python may take (importing torch-based SDKs is slow).
CHECK_TIMEOUT_S = 300.0


def worker_environment(python: Path | None) -> dict[str, str]:
    """The process environment of a local worker: the toolchain's interpreter, nothing of edgedeploy's own."""
    env = dict(os.environ)
    for var in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP"):
        env.pop(var, None)
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONNOUSERSITE"] = "1"
    env["EDGEDEPLOY_WORKER"] = "1"
    # Toolchains iterate over sets and dicts of names when they lay out their files (esp-ppq's
    # initializer order): a fixed hash seed makes the same input give the same bytes.
    env.setdefault("PYTHONHASHSEED", "0")
    if python is not None:
        # Some toolchains shell out to executables of their own environment (onnx2tf runs onnxsim).
        env["PATH"] = str(python.parent) + os.pathsep + env.get("PATH", "")
        env["VIRTUAL_ENV"] = str(python.parent.parent)
    return env


class WorkerEnvironment:
    """One place a worker can run. Local kinds give an argv; the remote kind gives a transport."""

    kind: str = "?"
    remote: bool = False

    def check(self, executor) -> None:
        """Raise ToolchainMissing (one sentence) when this environment cannot run the worker."""

    def in_use(self, on_wait: Callable[[str], None] | None = None):
        """Hold the environment for the block, so that it is not rebuilt under a running worker
        (the managed venv's lock; other kinds are the user's to manage: nothing)."""
        return nullcontext()

    def argv(self, worker_main: Path, worker_file: Path, request: Path, result: Path) -> list[str]:
        raise NotImplementedError

    def process_env(self) -> dict[str, str]:
        return worker_environment(None)

    def describe(self) -> str:
        return self.kind


@dataclass
class PythonInterpreter(WorkerEnvironment):
    """A given interpreter, used as is (an environment being installed, the bench's torch)."""

    python: Path
    kind: str = "python"

    def argv(self, worker_main, worker_file, request, result) -> list[str]:
        return [str(self.python), str(worker_main), str(worker_file), str(request), str(result)]

    def process_env(self) -> dict[str, str]:
        return worker_environment(Path(self.python))

    def describe(self) -> str:
        return f"python {self.python}"


@dataclass
class ManagedVenv(PythonInterpreter):
    """The venv edgedeploy installs for a toolchain; ToolchainMissing with the fix when it is not usable."""

    python: Path = Path()
    toolchain: Any = None  # the VenvToolchain
    home: Path | None = None
    kind: str = "managed"

    def check(self, executor) -> None:
        self.python = self.toolchain.require(self.home)

    def in_use(self, on_wait: Callable[[str], None] | None = None):
        return self.toolchain.in_use(self.home, on_wait=on_wait)

    def describe(self) -> str:
        return f"managed venv {self.python.parent.parent}"


@dataclass
class UserPython(PythonInterpreter):
    """A Python the user installed the SDK into; checked once (import, version) before it is used."""

    modules: tuple[str, ...] = ()
    requirement: tuple[str, str] | None = None  # (distribution, minimum version)
    source: str = ""  # where the path came from, for messages
    kind: str = "python"
    checked: dict | None = field(default=None, repr=False)

    def check(self, executor) -> None:
        if self.checked is not None:
            return
        where = f" (from {self.source})" if self.source else ""
        if not Path(self.python).is_file() or not os.access(self.python, os.X_OK):
            raise ToolchainMissing(f"The Python {self.python}{where} does not exist or cannot be run.")
        request = {"modules": list(self.modules), "distributions": [self.requirement[0]] if self.requirement else []}
        probe = executor.child(Path(executor.log_path).with_name("toolchain-check.log"), CHECK_TIMEOUT_S)
        try:
            found = probe.run_worker(PythonInterpreter(self.python), PROBE_WORKER, request, probe.log_path.parent / "work" / "toolchain-check", label="toolchain check")
        except ToolchainMissing:
            raise
        except Exception as exc:  # noqa: BLE001 - any failure of the check is one sentence about the interpreter
            reraise_if_interrupted(exc)
            said = str(getattr(exc, "final_line", None) or exc).rstrip(".")
            raise ToolchainMissing(f"The Python {self.python}{where} cannot import {', '.join(self.modules) or 'the worker protocol'}: {said} (full log: {probe.log_path}).") from None
        self._check_version(found.get("versions", {}), where)
        self.checked = found

    def _check_version(self, versions: dict, where: str) -> None:
        if not self.requirement:
            return
        dist, minimum = self.requirement
        have = versions.get(dist)
        if have is None:
            raise ToolchainMissing(f"The Python {self.python}{where} has no {dist} installed (needs {minimum} or newer).")
        if _version_key(have) < _version_key(minimum):
            raise ToolchainMissing(f"The Python {self.python}{where} has {dist} {have}, but {minimum} or newer is needed.")

    def describe(self) -> str:
        return f"user Python {self.python}"


@dataclass
class ExternalCommand(WorkerEnvironment):
    """A command standing for the interpreter (a container run, a wrapper script); it gets worker_main's arguments."""

    command: tuple[str, ...] = ()
    source: str = ""
    kind: str = "command"

    def argv(self, worker_main, worker_file, request, result) -> list[str]:
        return [*self.command, str(worker_main), str(worker_file), str(request), str(result)]

    def process_env(self) -> dict[str, str]:
        return worker_environment(None)

    def describe(self) -> str:
        return f"command {' '.join(self.command)}"


@dataclass
class RemoteSsh(WorkerEnvironment):
    """A Python on another machine: `transport_factory()` opens the transport (devices.ssh.SshTransport)."""

    transport_factory: Callable[[], "Transport"] = None  # type: ignore[assignment]
    python: str = "python3"
    name: str = "remote"
    kind: str = "ssh"
    remote: bool = True

    def describe(self) -> str:
        return f"ssh {self.name} ({self.python})"


def _version_key(text: str) -> tuple:
    return tuple(int(part) for part in re.findall(r"\d+", str(text))[:4])


# -- choosing the kind -----------------------------------------------------------------------


def configured_environment(toolchain, target_id: str | None = None, project_file: Path | None = None, open_device: Callable[[str], "Transport"] | None = None, required: bool = True) -> WorkerEnvironment | None:
    """The environment a target's toolchain runs in: the user's choice, else the managed venv.

    Looked up in this order: `EDGEDEPLOY_<TARGET>_PYTHON` (the target id upper-cased), then
    `[toolchains.<toolchain name>]` in ./edgedeploy.toml (or `project_file`), then the managed
    venv of a toolchain edgedeploy installs. `open_device(name)` opens an inventory device's
    transport for the ssh kind (the layers above know the inventory; this module does not).
    A toolchain the user installs, with nothing configured: ToolchainMissing, or None when not `required`.
    """
    modules = tuple(getattr(toolchain, "import_modules", ()) or ())
    requirement = getattr(toolchain, "minimum_version", None)
    var = f"EDGEDEPLOY_{re.sub(r'[^A-Za-z0-9]', '_', target_id or toolchain.name).upper()}_PYTHON"
    if os.environ.get(var):
        return UserPython(Path(os.environ[var]).expanduser().absolute(), modules=modules, requirement=requirement, source=f"${var}")
    table, where = _project_table(toolchain.name, project_file)
    if table:
        return _from_table(table, where, modules, requirement, open_device)
    if getattr(toolchain, "managed", False):
        return toolchain.worker_environment()
    if not required:
        return None
    raise ToolchainMissing(f"The {toolchain.name} toolchain is not installed by edgedeploy: set {var}, or `python = ...` under [toolchains.{toolchain.name}] in edgedeploy.toml.")


def _project_table(name: str, project_file: Path | None) -> tuple[dict, str]:
    from edgedeploy.project import PROJECT_FILE, toolchain_tables

    path = Path(project_file) if project_file else Path.cwd() / PROJECT_FILE
    if not path.is_file():
        return {}, ""
    return toolchain_tables(path).get(name, {}), f"{path.name}: [toolchains.{name}]"


def _from_table(table: dict[str, Any], where: str, modules, requirement, open_device) -> WorkerEnvironment:
    base = Path(where.split(":")[0]).parent
    if "python" in table:
        path = Path(str(table["python"])).expanduser()
        return UserPython(path if path.is_absolute() else (base / path).absolute(), modules=modules, requirement=requirement, source=f"{where} python")
    if "command" in table:
        command = table["command"]
        argv = shlex.split(command) if isinstance(command, str) else [str(a) for a in command]
        if not argv:
            raise ConfigError(f"{where} command is empty.")
        return ExternalCommand(tuple(argv), source=f"{where} command")
    if "ssh" in table:
        if open_device is None:
            raise ConfigError(f"{where} ssh: this command cannot reach devices.")
        name = str(table["ssh"])
        return RemoteSsh(lambda: open_device(name), python=str(table.get("remote-python", "python3")), name=name)
    raise ConfigError(f"{where} needs one of python, command or ssh.")
