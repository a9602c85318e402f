"""Progress lines that a live display can do more with: the vocabulary shared by the pipelines and the CLI.

The pipelines report progress through a plain `echo(line)` callable, so a script can pass
`print`. Two things in those lines are more than text, and the CLI's progress display
(edgedeploy.cli.progress) uses them:

- `StepStarted`: a line that opens a long step (a measurement session, a toolchain asked for
  its verdict). A live display ticks its elapsed time; when the step writes a tool's log, the
  line names that log (`log_path`) so the display can show the tool's last line, or every line
  with --verbose.
- `FollowsLog` (toolchains.executor uses it): a progress callback that also wants to be told
  which log file each run of a vendor tool writes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol, runtime_checkable


class StepStarted(str):
    """A progress line that opens a long step; `log_path`, when given, is the log the step's tool writes.

    It is a str, so any echo callable prints it as it is.
    """

    log_path: Path | None

    def __new__(cls, text: str, log_path: Path | str | None = None) -> "StepStarted":
        line = super().__new__(cls, text)
        line.log_path = Path(log_path) if log_path is not None else None
        return line


@runtime_checkable
class FollowsLog(Protocol):
    """A progress callback (elapsed_s, last_log_line) that also follows the log of each tool run."""

    def __call__(self, elapsed_s: float, last_log_line: str) -> None: ...

    def follow_log(self, log_path: Path) -> None: ...
