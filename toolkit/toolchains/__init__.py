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

# Every target package imports this one for its toolchain object; the environment kinds and the
# user's-Python toolchain are only needed to run a worker, so they are imported on first use
# (PEP 562): 2-3 ms less for commands that run none (the audit, scripts/bench_audit.py).
_LAZY = {
    "ExternalCommand": "kinds",
    "ManagedVenv": "kinds",
    "RemoteSsh": "kinds",
    "UserPython": "kinds",
    "WorkerEnvironment": "kinds",
    "configured_environment": "kinds",
    "UserPythonToolchain": "user_python",
}


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"{__name__}.{module}"), name)

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
