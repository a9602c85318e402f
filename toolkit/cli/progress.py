"""Progress on stderr for every long command: log lines, a live line on a terminal, plain lines elsewhere.

One `Reporter` per command run (build, audit --confirm, fix --confirm, measure, bench). It takes
the pipelines' `echo(line)` calls and the executor's progress callback (elapsed seconds and the
tool's last log line), and shows them according to where stderr goes and what the user asked:

- on a terminal: the lines as they come, and below them one live line (rich.live) for a step
  that has run more than LIVE_AFTER_S: what the step is, how long it has run, and the tool's
  last log line; the live line is cleared when the step's next line arrives;
- elsewhere (a CI log, a pipe, a file): plain lines only, no cursor codes; a step that runs
  long gets one "still running" line every PLAIN_EVERY_S, with the tool's last log line;
- `-q/--quiet`: only warnings and errors on stderr (the result still goes to stdout);
- `-v/--verbose`: also every line the toolchain writes into its log, as it is written;
- colour only on a terminal and never when NO_COLOR is set (https://no-color.org).

The settings come from the root command's options (`OutputSettings`, kept in click's context
object); `edgedeploy.cli.output.info` sends its lines through the active reporter.
"""

from __future__ import annotations

import os
import sys
import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Callable

import click

from edgedeploy import interrupts
from edgedeploy.progress import StepStarted

# Escape sequences (colours, cursor moves) and other control characters in a tool's output.
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[@-_]|[\x00-\x08\x0b-\x1f\x7f]")
# The worker protocol's own prefix on its progress lines: "[edgedeploy-worker +3.1s] ".
_WORKER_PREFIX = re.compile(r"^\[edgedeploy-worker \+[\d.]+s\]\s*")
REPORTER_KEY = "edgedeploy.reporter"


@dataclass(frozen=True)
class OutputSettings:
    """What the root command's -q/-v asked for."""

    quiet: bool = False
    verbose: bool = False


def current_settings() -> OutputSettings:
    ctx = click.get_current_context(silent=True)
    if ctx is None:
        return OutputSettings()
    root = ctx.find_root()
    return root.obj if isinstance(root.obj, OutputSettings) else OutputSettings()


def active_reporter() -> "Reporter | None":
    ctx = click.get_current_context(silent=True)
    return None if ctx is None else ctx.find_root().meta.get(REPORTER_KEY)


def is_warning_or_error(line: str) -> bool:
    """The lines --quiet still shows."""
    head = line.lstrip().lower()
    return head.startswith(("warning", "error")) or " warning:" in head[:60]


def clean_tool_line(line: str) -> str:
    """A tool's log line fit for one terminal line: the last carriage-return segment, no escapes."""
    line = line.rstrip("\r\n")
    if "\r" in line:
        segments = [s for s in line.split("\r") if s.strip()]
        line = segments[-1] if segments else ""
    line = _ESCAPES.sub("", line)
    from edgedeploy.escape import terminal_safe

    return terminal_safe(_WORKER_PREFIX.sub("", line.strip()))


def make_console(stream: IO[str] | None = None, live: bool | None = None, width: int | None = None):
    """The rich console progress is written with: stderr, colour only on a terminal without NO_COLOR."""
    from rich.console import Console

    stream = stream if stream is not None else sys.stderr
    terminal = _isatty(stream) if live is None else live
    return Console(
        file=stream,
        force_terminal=terminal,
        no_color=bool(os.environ.get("NO_COLOR")) or not terminal,
        highlight=False,
        markup=False,
        emoji=False,
        soft_wrap=True,
        width=width,
    )


class Reporter:
    """One command's progress: `reporter(line)` is an echo; `reporter.tool` is the executor's progress callback.

    `stamp`: prefix every line with the time since the command started (bench does, as its
    sessions run for minutes). `clock` and `tick()` let tests drive it without a thread.
    """

    LIVE_AFTER_S = 2.0  # a step shorter than this never gets a live line
    PLAIN_EVERY_S = 10.0  # off a terminal: at most one "still running" line per step this often
    TICK_S = 0.25

    def __init__(
        self,
        stream: IO[str] | None = None,
        live: bool | None = None,
        settings: OutputSettings | None = None,
        stamp: bool = False,
        clock: Callable[[], float] = time.monotonic,
        width: int | None = None,
    ):
        self.console = make_console(stream, live, width)
        self.live = self.console.is_terminal
        # NO_COLOR: no colour, and no bold or dim either (no SGR codes at all).
        self.styled = self.live and not self.console.no_color
        self.settings = settings if settings is not None else current_settings()
        self.stamp = stamp
        self.clock = clock
        self.started = clock()
        self.step = ""  # what the running step is (its opening line)
        self.step_started = self.started
        self.last_plain = self.started  # when the last "still running" line was written
        self.tool_line = ""  # the running tool's last log line
        self._log: Path | None = None
        self._log_offset = 0
        self._partial = ""  # an unfinished last line of the followed log
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._live_display = None
        self.tool = ToolProgress(self)

    # -- the context ----------------------------------------------------------------------
    @classmethod
    def for_command(cls, **kwargs) -> "Reporter":
        """A reporter for the running command, closed when the command ends however it ends (or by close())."""
        reporter = cls(**kwargs)
        ctx = click.get_current_context(silent=True)
        if ctx is None:
            return reporter.__enter__()
        return ctx.with_resource(reporter)

    def close(self) -> None:
        """Stop the live line and the ticking (idempotent); later lines are printed plainly."""
        self.__exit__(None, None, None)

    def __enter__(self) -> "Reporter":
        ctx = click.get_current_context(silent=True)
        if ctx is not None:
            ctx.find_root().meta[REPORTER_KEY] = self
        if not self.settings.quiet:
            self._thread = threading.Thread(target=self._run, name="edgedeploy-progress", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        with self._lock:
            self._read_log()
            self._flush_partial()
            self._stop_live()
        ctx = click.get_current_context(silent=True)
        if ctx is not None and ctx.find_root().meta.get(REPORTER_KEY) is self:
            del ctx.find_root().meta[REPORTER_KEY]

    # -- lines ----------------------------------------------------------------------------
    def __call__(self, line: str) -> None:
        """A pipeline's progress line: printed (not with --quiet), and the start of the next step."""
        # A step's line after a signal: the command stops here rather than start the step.
        interrupts.check()
        with self._lock:
            self._read_log()
            now = self.clock()
            # The step is over: its live line is erased before the next line is printed.
            self._stop_live()
            if not self.settings.quiet or is_warning_or_error(str(line)):
                self._print(str(line), now)
            self.step = str(line).strip()
            self.step_started = self.last_plain = now
            self.tool_line = ""
            if isinstance(line, StepStarted) and line.log_path is not None:
                self._follow(line.log_path)
            self._render_live(now)

    def _print(self, text: str, now: float) -> None:
        from rich.text import Text

        from edgedeploy.escape import terminal_text

        prefix = f"[{now - self.started:7.1f} s] " if self.stamp else ""
        # Model and tool text may hold control characters: shown escaped, never interpreted.
        self.console.print(Text(prefix + terminal_text(text)), highlight=False, soft_wrap=True)

    # -- the running tool ----------------------------------------------------------------------
    def _follow(self, log_path: Path) -> None:
        """Show (and with --verbose print) what is written to `log_path` from now on."""
        log_path = Path(log_path)
        if log_path == self._log:
            return
        self._read_log()
        self._flush_partial()
        self._log = log_path
        try:
            self._log_offset = log_path.stat().st_size
        except OSError:
            self._log_offset = 0

    def _read_log(self) -> None:
        if self._log is None:
            return
        try:
            with self._log.open("rb") as fh:
                fh.seek(self._log_offset)
                chunk = fh.read(1 << 20)
        except OSError:
            return
        if not chunk:
            return
        self._log_offset += len(chunk)
        text = self._partial + chunk.decode("utf-8", errors="replace")
        lines = text.split("\n")
        self._partial = lines.pop()
        for raw in lines:
            self._tool_line(raw)
        if self._partial.strip():
            # A line still being written (a progress bar redrawn with \r) is already the tool's last word.
            shown = clean_tool_line(self._partial)
            if shown:
                self.tool_line = shown

    def _flush_partial(self) -> None:
        if self._partial.strip():
            self._tool_line(self._partial)
        self._partial = ""

    def _tool_line(self, raw: str) -> None:
        shown = clean_tool_line(raw)
        if not shown:
            return
        self.tool_line = shown
        if self.settings.verbose:
            self._print(f"  | {shown}", self.clock())

    def tool_progress(self, elapsed_s: float, last_log_line: str) -> None:
        with self._lock:
            if self._log is None and last_log_line:
                self.tool_line = clean_tool_line(last_log_line) or self.tool_line

    # -- time passing -----------------------------------------------------------------------
    def tick(self) -> None:
        """Follow the log and redraw the live line, or write a plain "still running" line when due."""
        with self._lock:
            if self.settings.quiet:
                return
            self._read_log()
            now = self.clock()
            running = now - self.step_started
            if self.live:
                self._render_live(now)
            elif self.step and running >= self.LIVE_AFTER_S and now - self.last_plain >= self.PLAIN_EVERY_S:
                self.last_plain = now
                tool = f": {self.tool_line}" if self.tool_line else ""
                self._print(f"  ... {_step_name(self.step)} still running after {running:.0f} s{tool}", now)

    def _render_live(self, now: float) -> None:
        if not self.live or self.settings.quiet:
            return
        running = now - self.step_started
        if not self.step or running < self.LIVE_AFTER_S:
            if self._live_display is not None:
                from rich.text import Text

                self._live_display.update(Text(""), refresh=True)
            return
        from rich.text import Text

        text = Text(no_wrap=True, overflow="ellipsis")
        if self.stamp:
            text.append(f"[{now - self.started:7.1f} s] ")
        text.append(f"{_step_name(self.step)} ", style="bold" if self.styled else "")
        text.append(f"{running:.0f} s", style="cyan" if self.styled else "")
        if self.tool_line:
            text.append(f"  {self.tool_line}", style="dim" if self.styled else "")
        if self._live_display is None:
            from rich.live import Live

            self._live_display = Live(text, console=self.console, transient=True, auto_refresh=False, redirect_stdout=False, redirect_stderr=False)
            self._live_display.start()
        self._live_display.update(text, refresh=True)

    def _stop_live(self) -> None:
        if self._live_display is not None:
            self._live_display.stop()
            self._live_display = None

    def _run(self) -> None:
        while not self._stop.wait(self.TICK_S):
            try:
                self.tick()
            except Exception:  # noqa: BLE001 - a display hiccup must never end the command
                pass


class ToolProgress:
    """The executor's progress callback (toolchains.executor.Progress) that also follows each run's log."""

    def __init__(self, reporter: Reporter):
        self.reporter = reporter

    def __call__(self, elapsed_s: float, last_log_line: str) -> None:
        self.reporter.tool_progress(elapsed_s, last_log_line)

    def follow_log(self, log_path: Path) -> None:
        with self.reporter._lock:
            self.reporter._follow(log_path)


def _step_name(step: str) -> str:
    """What to call a step in a "still running" line: its stage ("convert: ..." -> "convert"), else its line."""
    head, sep, _ = step.partition(":")
    return head.strip() if sep and len(head) <= 40 else _short(step, 60)


def _short(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _isatty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False
