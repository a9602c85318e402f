"""Errors a user can cause, and the exit codes they map to.

Every exception here carries one sentence meant for the user. The CLI prints that sentence on
stderr and exits non-zero, without a traceback unless `--debug` is given.
"""

from __future__ import annotations


class EdgedeployError(Exception):
    """An error the user can act on. `str(error)` is the one sentence shown to them."""

    exit_code = 1


class ModelError(EdgedeployError):
    """The ONNX model cannot be loaded, is malformed, or is unsafe to open."""


class OptionError(EdgedeployError):
    """A command-line option or its value is wrong."""

    exit_code = 2


class ToolchainError(EdgedeployError):
    """A toolchain environment is missing, broken, or its worker failed."""


class ToolchainMissing(ToolchainError):
    """The toolchain environment a stage needs is not installed."""


class WorkerFailed(ToolchainError):
    """A toolchain worker crashed, timed out, or reported an error."""


class ArtifactError(EdgedeployError):
    """An artifact directory is missing, incomplete, exists already, or does not match."""


class DeviceError(EdgedeployError):
    """A device is unknown, unreachable, or failed during a run."""


class TargetError(EdgedeployError):
    """A registered target package is broken (it cannot be loaded or breaks the target contract)."""


class NotAvailableYet(EdgedeployError):
    """A command or option that exists in the interface but is not implemented yet."""

    exit_code = 2


class EdgedeployWarning(UserWarning):
    """Something the user should know that does not stop the command (the CLI prints `warning: ...`).

    Raised with `warnings.warn(EdgedeployWarning(sentence))` at the boundary that notices it
    (intake, the dataset loader), so every command shows it without passing a callback down.
    """
