"""Errors a user can cause, and the exit codes they map to.

Every exception here carries one sentence meant for the user. The CLI prints that sentence on
stderr and exits with the code of its class, without a traceback unless `--debug` is given.

`EXIT_CODES` is the one table of exit statuses: each error class takes its code from it, the
commands that report an outcome (audit's and build's gates) take theirs from it, and
docs/cli.md prints it (tests/test_exit_codes.py checks that the page and the table agree and
that real commands exit with these codes). A CI job can tell "the model got worse" (3-7) from
"the input was wrong" (2, 8) from "the machine or a tool failed" (9-12).
"""

from __future__ import annotations

# status -> (what it means, who uses it). Codes are never renumbered: CI scripts compare them.
EXIT_CODES: dict[int, tuple[str, str]] = {
    0: ("success", "every command"),
    1: ("the run failed for another reason (a generic edgedeploy error)", "EdgedeployError"),
    2: ("usage: a bad option or value, an unknown chip, device, rewrite or toolchain name, a bad project or inventory file, bad data", "OptionError, UnknownName, ConfigError, NotAvailableYet; Click's usage errors"),
    3: ("audit --fail-on: nodes kept in float (the worst placement found)", "audit"),
    4: ("audit --fail-on: nodes fall back to the CPU (GPU for DLA)", "audit"),
    5: ("audit --fail-on: nodes no unit can run (unsupported)", "audit"),
    6: ("build: a project was generated but not compiled here (the vendor's compiler is not on this machine); --allow-generated accepts it", "build"),
    7: ("a --fail-on gate of build or measure failed (a threshold on accuracy, fidelity, latency or size, or a figure it needs is missing)", "GateFailed"),
    8: ("the model cannot be used: missing, malformed, unsafe, or with shapes that cannot be pinned", "ModelError"),
    9: ("a toolchain is missing, or its worker or command failed; or EDGEDEPLOY_HOME cannot hold the toolchains (a file, a symbolic-link loop, not writable, its disk full)", "ToolchainError, ToolchainMissing, WorkerFailed, ToolchainFailed"),
    10: ("a device is unreachable, failed or lied during a run", "DeviceError"),
    11: ("an artifact or output file is missing, damaged, exists already (no --force) or was built for something else; or the file system refuses it (disk full, `ulimit -f`, a path too long, a file in the way, a link loop, no permission, read-only)", "ArtifactError"),
    12: ("a target cannot be used: no target is registered, or the chip's target is disabled (its options clash with another's)", "TargetError"),
    70: ("internal error: a bug in edgedeploy (rerun with --debug for the traceback)", "any other exception"),
    130: ("interrupted (Ctrl-C, SIGTERM, SIGHUP); every worker was stopped", "every command"),
}

EXIT_OK = 0
EXIT_USAGE = 2
EXIT_AUDIT_FLOAT, EXIT_AUDIT_FALLBACK, EXIT_AUDIT_UNSUPPORTED = 3, 4, 5
EXIT_GENERATED_ONLY = 6
EXIT_GATE_FAILED = 7
EXIT_INTERNAL = 70
EXIT_INTERRUPTED = 130


class EdgedeployError(Exception):
    """An error the user can act on. `str(error)` is the one sentence shown to them."""

    exit_code = 1


class OptionError(EdgedeployError):
    """A command-line option or its value is wrong (data given through an option included)."""

    exit_code = EXIT_USAGE


class UnknownName(OptionError):
    """A name the user gave (chip, device, rewrite, toolchain) is not known; the sentence lists the known ones."""


class ConfigError(OptionError):
    """A project file (edgedeploy.toml) or device inventory has a bad field; the sentence names the file and the field."""


class NotAvailableYet(EdgedeployError):
    """A command or option that exists in the interface but is not implemented yet."""

    exit_code = EXIT_USAGE


class GateFailed(EdgedeployError):
    """A --fail-on threshold of build or measure was not met (the results were written and printed first)."""

    exit_code = EXIT_GATE_FAILED


class ModelError(EdgedeployError):
    """The ONNX model cannot be loaded, is malformed, or is unsafe to open."""

    exit_code = 8


class ToolchainError(EdgedeployError):
    """A toolchain environment is missing, broken, or its worker failed."""

    exit_code = 9


class ToolchainMissing(ToolchainError):
    """The toolchain environment a stage needs is not installed."""


class WorkerFailed(ToolchainError):
    """A toolchain worker crashed, timed out, or reported an error."""


class ToolchainFailed(WorkerFailed):
    """A toolchain run failed: the facts as fields, the user's sentence built from them.

    Code that adds to a failure (a target naming the node behind a tensor, the audit's
    foreseen reason, a known remedy) changes a field with `replace()`; nobody parses or edits
    the sentence. Fields:
      headline         what happened, e.g. "The rknn toolchain failed", "The eiq worker timed out after 60 s"
      toolchain        the toolchain's name (the label of the run)
      node, op_type    the model node the toolchain failed on, where it is known
      source_location  where inside the toolchain (a function, a file:line), where the worker could tell
      final_line       the toolchain's own last error line
      log_path         the full log (with the traceback)
      hints            sentences appended after the log's path (a remedy, what the audit foresaw)
    """

    def __init__(self, headline: str, *, toolchain: str, node: str | None = None, op_type: str | None = None, source_location: str | None = None, final_line: str | None = None, log_path: object = None, hints: tuple[str, ...] = ()):
        self.headline = headline
        self.toolchain = toolchain
        self.node = node
        self.op_type = op_type
        self.source_location = source_location
        self.final_line = final_line
        self.log_path = log_path
        self.hints = tuple(h for h in hints if h and h.strip())
        super().__init__(self.sentence())

    FIELDS = ("headline", "toolchain", "node", "op_type", "source_location", "final_line", "log_path", "hints")

    def sentence(self) -> str:
        at = f" at node '{self.node}'" + (f" ({self.op_type})" if self.op_type else "") if self.node else ""
        own = self.final_line.rstrip(".") if self.final_line else ""
        if own and self.source_location:
            own = f"{own} (in {self.source_location})"
        said = f": {own.rstrip('.')}" if own else ""
        log = f" (full log: {self.log_path})" if self.log_path else ""
        text = f"{self.headline}{at}{said}{log}."
        for hint in self.hints:
            text = f"{text.rstrip()} {hint.strip()}"
        return text

    def __str__(self) -> str:
        return self.sentence()

    def to_dict(self) -> dict:
        """The fields as JSON-ready data (the report's record of a failed conversion)."""
        return {name: (list(v) if isinstance(v, tuple) else (str(v) if name == "log_path" and v is not None else v)) for name in self.FIELDS for v in [getattr(self, name)]}

    def replace(self, **changes) -> "ToolchainFailed":
        """A copy with some fields changed (raise it `from` this one)."""
        fields = {name: getattr(self, name) for name in self.FIELDS}
        fields.update(changes)
        return ToolchainFailed(fields.pop("headline"), **fields)

    def relocate(self, old: object, new: object) -> None:
        """The log moved (a failed artifact kept as `<dest>.failed`): point at where it is now."""
        if self.log_path is not None and str(self.log_path).startswith(str(old)):
            self.log_path = str(new) + str(self.log_path)[len(str(old)) :]
            self.args = (self.sentence(),)


class DeviceError(EdgedeployError):
    """A device is unreachable, or failed during a run."""

    exit_code = 10


class UnknownDevice(UnknownName, DeviceError):
    """A device name that is neither in the inventory nor a CHIP@PORT board: a usage error (2)."""


class InventoryError(ConfigError, DeviceError):
    """The device inventory file is unreadable or has a bad entry: a usage error (2)."""


class ArtifactError(EdgedeployError):
    """An artifact directory is missing, incomplete, exists already, or does not match."""

    exit_code = 11


class TargetError(EdgedeployError):
    """A target cannot be used: none is registered, or the chip's target is disabled (its options
    clash with another target's). A plug-in that fails to load is listed as broken instead."""

    exit_code = 12


class EdgedeployWarning(UserWarning):
    """Something the user should know that does not stop the command (the CLI prints `warning: ...`).

    Raised with `warnings.warn(EdgedeployWarning(sentence))` at the boundary that notices it
    (intake, the dataset loader), so every command shows it without passing a callback down.
    """
