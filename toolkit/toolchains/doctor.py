"""`edgedeploy toolchain doctor`: check each managed environment the way a build will use it.

An environment is checked in the order a build depends on it: its install finished (the stamp),
its interpreter runs, the toolchain's modules import, and the installed versions are the pinned
ones. Any failure makes it BROKEN, with the one command that rebuilds it and a log that is kept
(`<home>/envs/<name>-doctor.log`, rewritten by each check). An environment that was never
installed is not broken: it is listed as not installed and does not fail the command.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from edgedeploy.errors import ToolchainError
from edgedeploy.locks import LockBusy, held
from edgedeploy.toolchains.environments import DOCTOR_TIMEOUT_S, Toolchain, VenvToolchain


def doctor_entry(tc: Toolchain, home: Path | None = None) -> dict:
    """One toolchain's doctor record: ok True (works), False (broken) or None (not installed, or not ours)."""
    st = tc.status(home)
    entry = {"name": tc.name, "installed": st.installed, "status": st.detail, "ok": None, "versions": {}, "python": None, "repair": None, "log": None}
    if not isinstance(tc, VenvToolchain):
        entry["ok"] = st.installed or None
        return entry
    env = tc.env_dir(home)
    if tc.read_stamp(home) is None and not env.exists():
        return entry  # never installed: listed, not broken
    try:
        # Not while it is being installed: half an environment is not a broken one.
        with held(tc.lock_path(home), shared=True, wait=False, optional=True):
            return _checked_entry(tc, home, entry)
    except LockBusy as busy:
        entry.update(status=f"being installed by {busy.holders}; run doctor again when it has finished")
        return entry


def _checked_entry(tc: VenvToolchain, home: Path | None, entry: dict) -> dict:
    env = tc.env_dir(home)
    log = _start_log(tc, home)
    entry.update(log=str(log), repair=tc.repair_command())
    problem = _check(tc, home, entry, log)
    if problem is None:
        entry.update(ok=True, status=f"installed in {env}")
    else:
        entry.update(ok=False, installed=False, status=problem, error=problem)
        with log.open("a") as out:
            out.write(f"BROKEN: {problem}\nrepair: {tc.repair_command()}\n")
    return entry


def _check(tc: VenvToolchain, home: Path | None, entry: dict, log: Path) -> str | None:
    """What is wrong with the environment, as one sentence that names the log; None when it works."""
    from edgedeploy.toolchains.worker import run_probe

    found = tc.install_problem(home)
    if found is not None:
        return f"{found[1]} (full log: {log})"
    # The probe's request and result are scratch; its output goes to the kept log.
    with tempfile.TemporaryDirectory(prefix=f"edgedeploy-doctor-{tc.name}-") as tmp:
        try:
            probe = run_probe(tc, home, workdir=Path(tmp), log_path=log, timeout_s=DOCTOR_TIMEOUT_S)
        except ToolchainError as exc:
            sentence = " ".join(str(exc).split()).rstrip(".")
            return sentence if str(log) in sentence else f"{sentence} (full log: {log})"
    entry.update(versions=probe["versions"], python=probe["python"], imported=list(probe["imported"]))
    wrong = tc.version_mismatches(probe["versions"])
    if wrong:
        with log.open("a") as out:
            out.write("versions that are not the pinned ones:\n" + "".join(f"    {w}\n" for w in wrong))
        return f"not the pinned versions: {'; '.join(wrong)} (full log: {log})"
    return None


def _start_log(tc: VenvToolchain, home: Path | None) -> Path:
    """A fresh log for this check: in the home beside the install log, else (a read-only home) a kept temporary file."""
    header = f"edgedeploy toolchain doctor {tc.name}, {time.strftime('%Y-%m-%dT%H:%M:%S%z')}\n"
    log = tc.doctor_log(home)
    try:
        log.write_text(header)
    except OSError:
        # The check must still run and say what it found; its log is then kept outside the home.
        fd, name = tempfile.mkstemp(prefix=f"edgedeploy-doctor-{tc.name}-", suffix=".log")
        with open(fd, "w") as out:
            out.write(header)
        log = Path(name)
    return log
