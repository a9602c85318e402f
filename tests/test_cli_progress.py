"""Progress on stderr (edgedeploy.cli.progress): a live line on a terminal, plain lines elsewhere, -q/-v, NO_COLOR.

The reporter is driven with a fake clock and explicit ticks where the timing matters, and with a
real executor running a real child process where the log-following matters.
"""

from __future__ import annotations

import io
import re
import sys

import pytest

from edgedeploy.cli.progress import OutputSettings, Reporter, clean_tool_line
from edgedeploy.progress import StepStarted
from tests.helpers import run_cli

ESCAPE = re.compile(r"\x1b\[")
COLOUR = re.compile(r"\x1b\[[0-9;]*m")


class FakeClock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_off_a_terminal_plain_lines_only_and_one_still_running_line_per_interval(tmp_path):
    out, clock = io.StringIO(), FakeClock()  # a StringIO is no terminal
    log = tmp_path / "tool.log"
    log.write_text("old line, before the step\n")
    with Reporter(stream=out, clock=clock, settings=OutputSettings()) as reporter:
        reporter._stop.set()  # ticks come from the test, not the thread
        assert reporter.live is False
        reporter(StepStarted("convert: the vendor tool runs (log: tool.log)", log_path=log))
        with log.open("a") as fh:
            fh.write("\x1b[32mstep 1 of 3\x1b[0m\nstep 2 of 3\n")
        for _ in range(40):  # 40 ticks over 20 s
            clock.now += 0.5
            reporter.tick()
        reporter("convert: done")
    lines = out.getvalue().splitlines()
    assert lines[0] == "convert: the vendor tool runs (log: tool.log)"
    assert lines[-1] == "convert: done"
    running = [line for line in lines if "still running" in line]
    # 20 s of a step, at most one such line per PLAIN_EVERY_S (10 s): the tool's last line, cleaned.
    assert running == ["  ... convert still running after 10 s: step 2 of 3", "  ... convert still running after 20 s: step 2 of 3"]
    assert not ESCAPE.search(out.getvalue())  # no colour, no cursor codes in a CI log
    assert "old line" not in out.getvalue()  # only what the step wrote


def test_a_short_step_gets_no_extra_line(tmp_path):
    out, clock = io.StringIO(), FakeClock()
    with Reporter(stream=out, clock=clock, settings=OutputSettings()) as reporter:
        reporter._stop.set()
        reporter("audit: 13 of 13 nodes")
        clock.now += 1.5
        reporter.tick()
        reporter("verify: done")
    assert out.getvalue().splitlines() == ["audit: 13 of 13 nodes", "verify: done"]


def test_on_a_terminal_a_live_line_with_elapsed_time_and_the_tools_last_line(tmp_path, monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    out, clock = io.StringIO(), FakeClock()
    reporter = Reporter(stream=out, live=True, clock=clock, settings=OutputSettings(), width=120)
    with reporter:
        reporter._stop.set()
        reporter(StepStarted("  after session 2/3: running"))
        reporter.tool(3.0, "[edgedeploy-worker +3.0s] quantising\rCalibration 12%\rCalibration 50%")
        clock.now += 1.0
        reporter.tick()
        assert "after session" not in out.getvalue().split("running\n", 1)[1]  # under LIVE_AFTER_S: no live line yet
        clock.now += 37.0
        reporter.tick()
        shown = out.getvalue()
        assert "after session 2/3 38 s  Calibration 50%" in shown
        reporter("  after session 2/3: median 1.2 ms")
    text = out.getvalue()
    assert ESCAPE.search(text)  # a live display: cursor codes
    assert not COLOUR.search(text)  # but NO_COLOR: no colour (nor bold or dim)
    # The live line is erased (rich's transient display: erase-line) before the step's next line.
    before, after = text.split("  after session 2/3: median 1.2 ms")
    assert before.endswith("\x1b[2K")
    assert "38 s" not in after  # and not drawn again once the step is over


def test_colour_on_a_terminal_without_no_color(monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    out, clock = io.StringIO(), FakeClock()
    with Reporter(stream=out, live=True, clock=clock, settings=OutputSettings(), width=120) as reporter:
        reporter._stop.set()
        reporter("convert: running")
        clock.now += 5
        reporter.tick()
    assert COLOUR.search(out.getvalue())


def test_quiet_shows_only_warnings_and_errors_and_no_live_line():
    out, clock = io.StringIO(), FakeClock()
    with Reporter(stream=out, live=True, clock=clock, settings=OutputSettings(quiet=True)) as reporter:
        reporter("build: mnist for esp32s3")
        reporter("warning: --espdl-int16-layers apply to ESP-DL targets only")
        clock.now += 30
        reporter.tick()
    assert out.getvalue().strip() == "warning: --espdl-int16-layers apply to ESP-DL targets only"


def test_verbose_prints_every_line_a_real_tool_writes(tmp_path):
    from edgedeploy.toolchains.executor import Executor

    script = "import sys, time\nfor i in range(6):\n    print(f'tool line {i}', flush=True)\n    time.sleep(0.15)\nsys.stdout.write('no newline at the end')\n"
    out = io.StringIO()
    with Reporter(stream=out, settings=OutputSettings(verbose=True)) as reporter:
        reporter("convert: running the tool")
        outcome = Executor(tmp_path / "build.log", 60, reporter.tool).command([sys.executable, "-c", script], tmp_path, "the tool")
    assert outcome.returncode == 0
    printed = [line for line in out.getvalue().splitlines() if line.startswith("  | ")]
    assert printed == [f"  | tool line {i}" for i in range(6)] + ["  | no newline at the end"]


def test_bench_lines_carry_the_time_since_the_start():
    out, clock = io.StringIO(), FakeClock()
    with Reporter(stream=out, clock=clock, settings=OutputSettings(), stamp=True) as reporter:
        reporter._stop.set()
        reporter("bench: a: 3 sessions")
        clock.now += 12.5
        reporter(StepStarted("  a session 1/3: running"))
    assert out.getvalue().splitlines() == ["[    0.0 s] bench: a: 3 sessions", "[   12.5 s]   a session 1/3: running"]


@pytest.mark.parametrize(
    "raw, shown",
    [
        ("[edgedeploy-worker +3.1s] quantising for esp32s3", "quantising for esp32s3"),
        ("Calibration:   0%|\rCalibration:  50%|\r", "Calibration:  50%|"),
        ("\x1b[1;32mINFO:\x1b[0m done", "INFO: done"),
    ],
)
def test_tool_lines_are_cleaned_for_one_terminal_line(raw, shown):
    assert clean_tool_line(raw) == shown


def test_quiet_and_verbose_on_the_root_command_and_after_the_subcommand():
    loud = run_cli("audit", "--target", "esp32s3")
    assert loud.returncode == 0 and "No model given" in loud.stderr
    for args in (("-q", "audit", "--target", "esp32s3"), ("audit", "--target", "esp32s3", "--quiet")):
        quiet = run_cli(*args)
        assert quiet.returncode == 0, quiet.stderr
        assert quiet.stderr == ""  # only the result
        assert quiet.stdout == loud.stdout
    both = run_cli("-q", "-v", "audit")
    assert both.returncode == 2 and "contradict" in both.stderr
