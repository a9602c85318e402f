"""Interrupt a real `edgedeploy` command a set delay after a given stderr line, as an operator would.

`interrupt(argv, out, sig, after=..., delay_s=...)` starts `python -m edgedeploy ARGV` in a
session of its own (a shell job), reads its stderr line by line with the time of each line, and
sends `sig` `delay_s` seconds after the first line that starts with `after` (after the start of
the process when `after` is None). SIGINT goes to the command's whole process group, as the
terminal's Ctrl-C does; SIGTERM and SIGHUP go to the command's process only, as `kill PID` and
a closed terminal's hang-up do. The result says what the command did after the signal: its exit
status, the stderr lines written after it, and which processes of the command outlived it.

Run as a script for a sweep by hand (N tries of one point), e.g.:

    python tests/faults/signal_harness.py --target esp32s3 --signal INT --after build: --delay 0.05 --tries 10
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

# Signals a terminal's Ctrl-C sends to the foreground process group; the others go to one pid.
GROUP_SIGNALS = (signal.SIGINT,)
# `after=HANDLERS`: the moment the command catches SIGTERM (its handlers are installed, per
# /proc/PID/status), its first instant of edgedeploy code, before any stderr line.
HANDLERS = "<handlers installed>"
# The second signal's delay after the first: inside the cleanup the first one started.
AGAIN_AFTER_S = 0.05


@dataclass
class Interrupted:
    """What an interrupted command did."""

    returncode: int
    signalled: bool  # the trigger line came (or no trigger was asked for) and the signal was sent
    lines_before: list[str]
    lines_after: list[str]  # stderr lines written after the signal was sent
    stdout: str
    seconds_to_exit: float | None  # from the signal to the command's end
    survivors: list[str] = field(default_factory=list)  # "pid cmdline" of processes that outlived it

    @property
    def stderr(self) -> str:
        return "\n".join(self.lines_before + self.lines_after)


def interrupt(
    argv: list[str], out: Path, sig: int, after: str | None, delay_s: float, again: int | None = None, timeout_s: float = 240, env: dict | None = None
) -> Interrupted:
    """Run `python -m edgedeploy ARGV` and interrupt it; see the module's docstring. `again`: a
    second signal AGAIN_AFTER_S after the first (Ctrl-C pressed twice, SIGTERM during cleanup)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "edgedeploy", *argv],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,  # a shell job of its own: the signal goes to the command, not to pytest
        # A shell running pytest in the background ignores SIGINT, and children inherit that;
        # a user's terminal does not: restore the default, as an interactive shell would.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    lines: list[tuple[float, str]] = []
    seen = threading.Event()
    stdout: list[str] = []

    def read_stderr() -> None:
        for line in proc.stderr:
            lines.append((time.monotonic(), line.rstrip("\n")))
            if after is not None and line.startswith(after):
                seen.set()

    readers = [threading.Thread(target=read_stderr, daemon=True), threading.Thread(target=lambda: stdout.append(proc.stdout.read()), daemon=True)]
    for reader in readers:
        reader.start()
    sent_at = None
    try:
        if after is None or (_wait_for_handlers(proc, timeout_s) if after == HANDLERS else _wait_for(seen, proc, timeout_s)):
            time.sleep(delay_s)
            sent_at = time.monotonic()
            _send(proc, sig)
            if again is not None:
                time.sleep(AGAIN_AFTER_S)
                _send(proc, again)
        proc.wait(timeout=timeout_s)
        ended_at = time.monotonic()
        for reader in readers:
            reader.join(timeout=10)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    cut = len(lines) if sent_at is None else sum(1 for t, _ in lines if t < sent_at)
    return Interrupted(
        returncode=proc.returncode,
        signalled=sent_at is not None,
        lines_before=[text for _, text in lines[:cut]],
        lines_after=[text for _, text in lines[cut:]],
        stdout="".join(stdout),
        seconds_to_exit=None if sent_at is None else ended_at - sent_at,
        survivors=surviving_processes(proc.pid, str(out)),
    )


def _wait_for(seen: threading.Event, proc: subprocess.Popen, timeout_s: float) -> bool:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if seen.wait(0.005):
            return True
        if proc.poll() is not None:
            return seen.is_set()
    return False


def _wait_for_handlers(proc: subprocess.Popen, timeout_s: float) -> bool:
    """Wait until the process catches SIGTERM (bit 15 of SigCgt in /proc/PID/status)."""
    end = time.monotonic() + timeout_s
    while time.monotonic() < end and proc.poll() is None:
        try:
            status = Path(f"/proc/{proc.pid}/status").read_text()
        except OSError:
            return False
        caught = int(next(line.split()[1] for line in status.splitlines() if line.startswith("SigCgt:")), 16)
        if caught & (1 << (signal.SIGTERM - 1)):
            return True
        time.sleep(0.001)
    return False


def _send(proc: subprocess.Popen, sig: int) -> None:
    try:
        if sig in GROUP_SIGNALS:
            os.killpg(proc.pid, sig)
        else:
            proc.send_signal(sig)
    except ProcessLookupError:
        pass


def surviving_processes(pgid: int, text: str) -> list[str]:
    """Live processes of process group `pgid`, or whose command line names `text` (a build's
    workers run in sessions of their own and name the build's folder), this process excepted."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        state, group = fields[0], int(fields[2])
        if state != "Z" and (group == pgid or text in cmdline):
            found.append(f"{entry.name} {cmdline[:200]}")
    return found


TRACEBACK = re.compile(r"^Traceback|^\s+File \"|Error:|^internal error", re.MULTILINE)


def _main() -> None:
    import argparse
    import collections
    import shutil
    import tempfile

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--target", default="esp32s3")
    parser.add_argument("--signal", default="INT", choices=["INT", "TERM", "HUP"])
    parser.add_argument("--after", default=None, help=f"the stderr line's start; none: the process's start; {HANDLERS!r}: once it catches SIGTERM")
    parser.add_argument("--delay", type=float, default=0.0)
    parser.add_argument("--tries", type=int, default=5)
    args = parser.parse_args()
    sig = getattr(signal, f"SIG{args.signal}")
    seen = collections.Counter()
    for attempt in range(args.tries):
        folder = Path(tempfile.mkdtemp(prefix="signal-harness-"))
        out = folder / "out"
        result = interrupt(["build", "--target", args.target, "--out", str(out)], out, sig, args.after, args.delay)
        left = sorted(str(p.relative_to(out)) for p in out.rglob("*")) if out.exists() else []
        last = result.lines_after[-1] if result.lines_after else ""
        print(
            f"try {attempt + 1}: exit {result.returncode} in {result.seconds_to_exit or 0:.2f} s; "
            f"{len(result.lines_after)} line(s) after the signal, last {last!r}; "
            f"traceback {bool(TRACEBACK.search(chr(10).join(result.lines_after)))}; left {left[:4]}; survivors {result.survivors}",
            flush=True,
        )
        seen[result.returncode] += 1
        shutil.rmtree(folder, ignore_errors=True)
    print("exit statuses:", dict(seen))


if __name__ == "__main__":
    _main()
