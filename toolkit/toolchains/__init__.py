"""Toolchain environments: one virtual environment per vendor toolchain, and the worker protocol.

The vendor toolchains cannot share a Python environment (their pins conflict; see
shared/toolchains.md), so each lives in its own venv under `$EDGEDEPLOY_HOME/envs/NAME`,
created from pinned requirement files that the target package ships. The core never imports a
vendor SDK; it starts a worker subprocess in the toolchain's environment kind (kinds.py: the
managed venv, a user-supplied Python, an external command, or a Python over SSH), always
through executor.Executor.run_worker.

Two kinds of toolchain exist:
- `VenvToolchain`: edgedeploy installs it from PyPI (espdl, rknn, eiq).
- `ExternalToolchain`: the user installs it (TensorRT on a Jetson, TI's edgeai-tidl-tools);
  edgedeploy only detects it.
- `UserPythonToolchain`: a vendor SDK the user installed into a Python of their own; its workers
  run there (`EDGEDEPLOY_<NAME>_PYTHON` or [toolchains.<name>] python), checked before use.
"""

from edgedeploy.toolchains.environments import (
    ExternalToolchain,
    RequirementStep,
    Toolchain,
    ToolchainStatus,
    VenvToolchain,
    edgedeploy_home,
)
from edgedeploy.toolchains.kinds import ExternalCommand, ManagedVenv, RemoteSsh, UserPython, WorkerEnvironment, configured_environment
from edgedeploy.toolchains.user_python import UserPythonToolchain

__all__ = [
    "ExternalToolchain",
    "RequirementStep",
    "Toolchain",
    "ToolchainStatus",
    "VenvToolchain",
    "edgedeploy_home",
    "ExternalCommand",
    "ManagedVenv",
    "RemoteSsh",
    "UserPython",
    "UserPythonToolchain",
    "WorkerEnvironment",
    "configured_environment",
]
