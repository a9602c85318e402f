"""How a hostile case runs the CLI and what it asserts afterwards.

Every case of tests/hostile goes through `Hostile.run` (in-process, through `edgedeploy.cli.main`
exactly as the console script calls it) or `Hostile.run_subprocess` (a fresh interpreter, where
process behaviour matters), then through one of two verdicts:

- `refused(outcome)`: a non-zero exit other than 70 (internal error), no traceback, and exactly
  one `error:` line, the last one on stderr, holding one sentence;
- `accepted(outcome)`: exit 0, no traceback (for hostile input that is legitimate, e.g. a
  hostile name that must come out escaped).

and the checks every case gets for free: nothing that existed before the case was lost or
changed, no temporary build folders were left behind, and no process that the case started
(marked through an environment variable that workers inherit) is still alive.

Each verdict is tallied by category for the figures in docs/reliability.md (printed at the end of
the run; written as JSON where EDGEDEPLOY_HOSTILE_FIGURES names a file).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from edgedeploy.artifacts import sha256_file

# Every process a case starts inherits this variable; one still carrying it afterwards is an orphan.
CASE_MARKER = "EDGEDEPLOY_HOSTILE_CASE"
# Folders an interrupted or failed build might leave next to an artifact.
LEFTOVER_PATTERN = re.compile(r"^\..+\.(building|replaced)-")
INTERNAL_EXIT = 70


@dataclass
class Outcome:
    args: tuple[str, ...]
    code: int
    stdout: str
    stderr: str
    seconds: float

    def __str__(self) -> str:
        return f"edgedeploy {' '.join(a[:80] for a in self.args)}\n-> exit {self.code}\n--- stdout\n{self.stdout[-2000:]}\n--- stderr\n{self.stderr[-4000:]}"

    @property
    def error_lines(self) -> list[str]:
        return [line for line in self.stderr.splitlines() if line.startswith(("error:", "internal error:"))]


@dataclass
class Tally:
    """Verdicts by category: the suite's figures."""

    cases: dict[str, dict[str, int]] = field(default_factory=dict)
    orphans: int = 0

    def add(self, category: str, verdict: str) -> None:
        per = self.cases.setdefault(category, {})
        per[verdict] = per.get(verdict, 0) + 1

    def totals(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for per in self.cases.values():
            for verdict, n in per.items():
                out[verdict] = out.get(verdict, 0) + n
        return out


def classify(outcome: Outcome) -> str:
    """What an outcome is, independent of what the case expected."""
    if outcome.code == INTERNAL_EXIT or "Traceback (most recent call last)" in outcome.stderr or outcome.stderr.count("internal error"):
        return "internal error"
    if outcome.code == 0:
        return "accepted"
    lines = [line for line in outcome.stderr.splitlines() if line.strip()]
    errors = outcome.error_lines
    if len(errors) == 1 and lines and lines[-1] == errors[0] and is_one_sentence(errors[0][len("error:"):].strip()):
        return "clean error"
    return "unclean error"


def is_one_sentence(text: str) -> bool:
    """One line of text that ends like a sentence (a full stop, possibly inside a closing bracket or quote)."""
    if not text or "\n" in text:
        return False
    return text.rstrip("')\"]`").endswith((".", "!", "?"))


BIG_FILE_BYTES = 64 * 2**20


def tree_state(root: Path) -> dict[str, str]:
    """Every entry below root: a file's sha256 (over BIG_FILE_BYTES: its size and nanosecond
    times), a link's target, or 'dir'."""
    state: dict[str, str] = {}
    if not root.exists():
        return state
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            rel = path.relative_to(root).as_posix()
            if path.is_symlink():
                state[rel] = "link:" + os.readlink(path)
            elif path.is_dir():
                state[rel] = "dir"
            elif path.is_file():
                stat = path.stat()
                if stat.st_size > BIG_FILE_BYTES:
                    # Hashing a case's 2 GiB (sparse) file twice took 16 s; any write changes its
                    # modification and change times, which are kept to the nanosecond.
                    state[rel] = f"big:{stat.st_size}:{stat.st_mtime_ns}:{stat.st_ctime_ns}"
                else:
                    state[rel] = sha256_file(path)
            else:
                state[rel] = "special"
    return state


def marked_processes(marker_value: str) -> list[str]:
    """Live processes (other than this one) whose environment carries the case's marker."""
    needle = f"{CASE_MARKER}={marker_value}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as fh:
                if needle in fh.read().split(b"\0"):
                    with open(f"/proc/{entry}/cmdline", "rb") as cmd:
                        command = cmd.read().replace(b"\0", b" ").decode(errors="replace")
                    found.append(f"{entry}: {command[:200]}")
        except OSError:
            continue
    return found


class Hostile:
    """One case's sandbox: a folder, a clean environment, the CLI, the verdicts."""

    def __init__(self, tmp: Path, category: str, case_id: str, tally: Tally, monkeypatch):
        self.tmp = tmp
        self.category = category
        self.case_id = case_id
        self.tally = tally
        self.marker = f"{os.getpid()}-{abs(hash(case_id)) % 10**9}-{time.monotonic_ns()}"
        self.env: dict[str, str | None] = {
            CASE_MARKER: self.marker,
            "XDG_CONFIG_HOME": str(tmp / "config"),  # no user inventory leaks in
            "EDGEDEPLOY_DEVICES": None,
            "EDGEDEPLOY_DEBUG": None,
        }
        self.guarded: list[tuple[Path, dict[str, str]]] = []
        self.verdict_given = False
        monkeypatch.chdir(tmp)

    # -- protecting what exists ----------------------------------------------------------

    def guard(self, *roots: Path) -> None:
        """Remember everything below `roots` now; the case fails if any of it is lost or changed."""
        for root in roots:
            self.guarded.append((Path(root), tree_state(Path(root))))

    def check_nothing_lost(self) -> None:
        for root, before in self.guarded:
            after = tree_state(root)
            lost = sorted(k for k in before if k not in after)
            changed = sorted(k for k in before if k in after and after[k] != before[k])
            assert not lost and not changed, f"{root}: lost {lost[:10]}, changed {changed[:10]}"
        for dirpath, dirnames, filenames in os.walk(self.tmp):
            stray = [n for n in dirnames + filenames if LEFTOVER_PATTERN.match(n)]
            assert not stray, f"left behind in {dirpath}: {stray}"

    def check_no_orphans(self) -> None:
        # A process killed a moment ago may still be on its way out: give it a second.
        deadline = time.monotonic() + 1.0
        alive = marked_processes(self.marker)
        while alive and time.monotonic() < deadline:
            time.sleep(0.05)
            alive = marked_processes(self.marker)
        if alive:
            self.tally.orphans += len(alive)
            # Counted and reported; then ended (by pid: they are this case's own), so none outlives the suite.
            for entry in alive:
                try:
                    os.kill(int(entry.split(":", 1)[0]), 9)
                except OSError:
                    pass
        assert not alive, f"processes outlived the command: {alive}"

    # -- running -------------------------------------------------------------------------

    def run(self, *args: str, env: dict[str, str | None] | None = None) -> Outcome:
        """`edgedeploy ARGS` in this process, through the console script's own entry point."""
        from click.testing import CliRunner

        from edgedeploy.cli import main

        runner = CliRunner()
        started = time.monotonic()
        with runner.isolation(env={**self.env, **(env or {})}) as (out, err, _mixed):
            try:
                main(list(args))
                code = 0
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
        return Outcome(tuple(args), code, out.getvalue().decode("utf-8", "replace"), err.getvalue().decode("utf-8", "replace"), time.monotonic() - started)

    def run_subprocess(self, *args: str, env: dict[str, str | None] | None = None, timeout: float = 300) -> Outcome:
        """`edgedeploy ARGS` in a fresh interpreter (where process behaviour matters)."""
        merged = dict(os.environ)
        for key, value in {**self.env, **(env or {})}.items():
            if value is None:
                merged.pop(key, None)
            else:
                merged[key] = value
        started = time.monotonic()
        proc = subprocess.run([sys.executable, "-m", "edgedeploy", *args], capture_output=True, env=merged, cwd=self.tmp, timeout=timeout)
        return Outcome(tuple(args), proc.returncode, proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace"), time.monotonic() - started)

    # -- verdicts ------------------------------------------------------------------------

    def refused(self, outcome: Outcome, *fragments: str, code: int | None = None) -> str:
        """The input was refused cleanly: non-zero, not 70, one sentence, no traceback; returns the sentence."""
        verdict = classify(outcome)
        self._record(verdict if verdict != "accepted" else "accepted (should be refused)")
        assert verdict == "clean error", f"{verdict}:\n{outcome}"
        if code is not None:
            assert outcome.code == code, f"exit {outcome.code}, expected {code}:\n{outcome}"
        sentence = outcome.error_lines[0][len("error:"):].strip()
        for fragment in fragments:
            assert fragment.lower() in sentence.lower(), f"{fragment!r} not in {sentence!r}"
        return sentence

    def accepted(self, outcome: Outcome, *stderr_fragments: str) -> None:
        """The (hostile but legitimate) input was handled: exit 0, no traceback."""
        verdict = classify(outcome)
        self._record("handled" if verdict == "accepted" else verdict)
        assert verdict == "accepted", f"{verdict}:\n{outcome}"
        for fragment in stderr_fragments:
            assert fragment.lower() in outcome.stderr.lower(), f"{fragment!r} not on stderr:\n{outcome}"

    def handled(self, ok: bool, detail: str = "") -> None:
        """A case checked below the CLI (a generated file, a helper): record and assert its verdict."""
        self._record("handled" if ok else "unsafe output")
        assert ok, detail

    def refused_in_api(self, error: BaseException | None, expected: type, *fragments: str) -> None:
        """A case checked through the Python API: the error must be the user-facing kind with one sentence."""
        from edgedeploy.errors import EdgedeployError

        if error is None:
            self._record("accepted (should be refused)")
            raise AssertionError("no error was raised")
        if not isinstance(error, EdgedeployError):
            self._record("internal error")
            raise AssertionError(f"internal error: {type(error).__name__}: {error}") from error
        text = str(error)
        clean = isinstance(error, expected) and is_one_sentence(text)
        self._record("clean error" if clean else "unclean error")
        assert clean, f"{type(error).__name__}: {text!r}"
        for fragment in fragments:
            assert fragment.lower() in text.lower(), f"{fragment!r} not in {text!r}"

    def _record(self, verdict: str) -> None:
        assert not self.verdict_given, "one verdict per case"
        self.verdict_given = True
        self.tally.add(self.category, verdict)
