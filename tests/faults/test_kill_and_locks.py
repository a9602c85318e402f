"""Faults between processes: the CLI killed with SIGKILL during a conversion, and two processes
after the same thing (one artifact destination, one toolchain environment).

- kill -9 of a real esp32s3 build while esp-ppq converts: within a few seconds no process of the
  build is left (no worker, nothing in the worker's process group), nothing is written into the
  abandoned `.building-*` folder any more, and the next build into the same folder removes it,
  says so in one line and succeeds.
- kill -9 of a process running a worker that started a child of its own (a compiler's stand-in):
  the child dies too (the worker's whole process group).
- two builds into the same OUT/<model>/<chip>: the second waits for the first (a line naming its
  pid), then is refused in one sentence, since the artifact exists; nothing partial is left and
  the artifact passes its manifest.
- two installs of one toolchain with --force at once: the second waits for the first instead of
  deleting the environment the first is building, and both end well. The toolchain is a stand-in
  (a VenvToolchain with no packages: a real venv, pip and the import check, in a temporary
  EDGEDEPLOY_HOME, never ~/.cache/edgedeploy), run through the same `install` the CLI calls.
- `toolchain install --no-wait` and `toolchain doctor` while another process holds an
  environment's lock (this test process, standing in for a running install): refused in one
  sentence naming that process, and "being installed" (not BROKEN), the environment untouched.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from edgedeploy.artifacts import check_manifest
from edgedeploy.locks import held
from edgedeploy.targets import find_toolchain

pytestmark = pytest.mark.slow

EXIT_TOOLCHAIN, EXIT_ARTIFACT = 9, 11


def _cli_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "edgedeploy", *args]


def _stat_of(pid: int) -> tuple[str, int, int] | None:
    """(state, ppid, process group) of a process, None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()
    return fields[0], int(fields[1]), int(fields[2])


def _live_pids() -> list[int]:
    """Every process that runs (zombies, which run nothing and hold nothing open, left out)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            st = _stat_of(int(entry))
            if st is not None and st[0] != "Z":
                found.append(int(entry))
    return found


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _wait_for(predicate, timeout_s: float, what: str):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = predicate()
        if found:
            return found
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout_s:.0f} s waiting for {what}")


def _tree_state(folder: Path) -> dict:
    return {str(p): (p.stat().st_size, p.stat().st_mtime_ns) for p in folder.rglob("*") if p.is_file()}


def _leftovers(folder: Path) -> list[str]:
    """What a build must never leave beside its artifact."""
    return sorted(p.name for p in folder.iterdir() if ".building-" in p.name or ".unplaced-" in p.name or p.name.endswith((".failed", ".lock")))


def _reap(proc: subprocess.Popen) -> None:
    """A process the test started is never left running, whatever happened in the test."""
    if proc.poll() is None:
        proc.kill()
        proc.wait()


def _left_after(survivors, seconds: float = 5.0) -> list[int]:
    """The pids `survivors()` still finds after `seconds`; each is then killed, whatever the verdict."""
    deadline = time.monotonic() + seconds
    while survivors() and time.monotonic() < deadline:
        time.sleep(0.1)
    left = survivors()
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    return left


@pytest.mark.toolchain("espdl")
def test_kill_9_during_conversion_leaves_no_process_and_the_next_build_cleans_up(tmp_path):
    out = tmp_path / "out"
    log = (tmp_path / "cli.log").open("wb")
    cli = subprocess.Popen(_cli_argv("build", "--target", "esp32s3", "--out", str(out)), stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        # The conversion's worker: a child of the CLI running worker_main, once esp-ppq is at work.
        def converting():
            if b"convert:" not in (tmp_path / "cli.log").read_bytes():
                return None
            return [pid for pid in _live_pids() if _stat_of(pid) and _stat_of(pid)[1] == cli.pid and "worker_main.py" in _cmdline(pid)]

        worker = _wait_for(converting, 120, "the conversion's worker to start")[0]
        group = _stat_of(worker)[2]
        time.sleep(1.0)  # let it write into the folder
        cli.send_signal(signal.SIGKILL)
        cli.wait(10)
    finally:
        _reap(cli)
        log.close()

    def survivors():
        return [pid for pid in _live_pids() if (_stat_of(pid) or ("", 0, 0))[2] == group or "worker_main.py" in _cmdline(pid) and str(out) in _cmdline(pid)]

    left = _left_after(survivors)
    assert not left, [(pid, _cmdline(pid)[:200]) for pid in left]

    model_dir = out / "mnist_cnn"
    stale = [p for p in model_dir.iterdir() if p.name.startswith(".esp32s3.building-")]
    assert len(stale) == 1, sorted(p.name for p in model_dir.iterdir())
    before = _tree_state(stale[0])
    time.sleep(1.0)
    assert _tree_state(stale[0]) == before, "something still writes into the abandoned folder"

    again = subprocess.run(_cli_argv("build", "--target", "esp32s3", "--out", str(out)), capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr[-2000:]
    said = [line for line in again.stderr.splitlines() if stale[0].name in line]
    assert len(said) == 1 and said[0].startswith("build: removed ") and "stopped" in said[0], again.stderr[-2000:]
    assert _leftovers(model_dir) == []
    check_manifest(model_dir / "esp32s3")


CHILD_STARTING_WORKER = """
import subprocess, time
def run(request, ctx):
    # A stand-in for a toolchain that runs a compiler of its own.
    child = subprocess.Popen(["sleep", "300"])
    with open(request["pids"], "w") as fh:
        fh.write(f"{child.pid}\\n")
    time.sleep(300)
    return {}
"""

PARENT_RUNNING_THE_WORKER = """
import sys
from pathlib import Path
from edgedeploy.toolchains.executor import Executor
from edgedeploy.toolchains.kinds import PythonInterpreter
tmp = Path(sys.argv[1])
Executor(tmp / "worker.log", 600).run_worker(PythonInterpreter(Path(sys.executable)), tmp / "worker.py", {"pids": str(tmp / "pids")}, tmp / "work")
"""


def test_kill_9_of_the_parent_kills_the_workers_own_children_too(tmp_path):
    """The worker's compiler (here `sleep`) dies with it: the parent-death signal alone would kill
    only the worker, so this shows the guard killing the worker's whole process group."""
    (tmp_path / "worker.py").write_text(CHILD_STARTING_WORKER)
    (tmp_path / "parent.py").write_text(PARENT_RUNNING_THE_WORKER)
    parent = subprocess.Popen([sys.executable, str(tmp_path / "parent.py"), str(tmp_path)], start_new_session=True)
    try:
        _wait_for(lambda: (tmp_path / "pids").is_file() and (tmp_path / "pids").read_text().endswith("\n"), 60, "the worker's child to start")
        child = int((tmp_path / "pids").read_text())
        worker = _stat_of(child)[1]
        parent.send_signal(signal.SIGKILL)
        parent.wait(10)
    finally:
        _reap(parent)
    left = _left_after(lambda: [pid for pid in (child, worker) if pid in _live_pids()])
    assert not left, [(pid, _cmdline(pid)) for pid in left]


@pytest.mark.toolchain("espdl")
def test_two_builds_into_one_destination_one_waits_then_is_refused(tmp_path):
    out = tmp_path / "out"
    first_log = tmp_path / "first.log"
    with first_log.open("wb") as log:
        first = subprocess.Popen(_cli_argv("build", "--target", "esp32s3", "--out", str(out)), stdout=log, stderr=subprocess.STDOUT)
    try:
        # The first holds the destination once it names its work folder.
        _wait_for(lambda: b"build: mnist_cnn for" in first_log.read_bytes(), 120, "the first build to start")
        second = subprocess.run(_cli_argv("build", "--target", "esp32s3", "--out", str(out)), capture_output=True, text=True, timeout=300)
        first.wait(300)
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    assert first.returncode == 0, first_log.read_text()[-2000:]
    assert second.returncode == EXIT_ARTIFACT, second.stderr[-2000:]
    waiting = [line for line in second.stderr.splitlines() if line.startswith("build: waiting for ")]
    assert len(waiting) == 1 and f"pid {first.pid} (" in waiting[0] and "build" in waiting[0], second.stderr[-2000:]
    errors = [line for line in second.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "exists already" in errors[0] and "Traceback" not in second.stderr, second.stderr[-2000:]
    dest = out / "mnist_cnn" / "esp32s3"
    check_manifest(dest)
    assert _leftovers(dest.parent) == []


STAND_IN_INSTALL = """
import sys
from pathlib import Path
from edgedeploy.toolchains.environments import RequirementStep, VenvToolchain

# A stand-in for a managed toolchain: no packages, so only the venv, pip and the import check run.
req = Path(sys.argv[2])
tc = VenvToolchain(name="standin", description="stand-in", steps=(RequirementStep(req),), import_modules=("json",), distributions=("pip",))
tc.install(Path(sys.argv[1]), force=True, echo=lambda line: print(line, flush=True))
"""


def test_two_installs_with_force_at_once_never_delete_each_others_environment(tmp_path):
    home, req = tmp_path / "home", tmp_path / "standin.txt"
    req.write_text("# no packages: the venv and the import check only\n")
    script = tmp_path / "install.py"
    script.write_text(STAND_IN_INSTALL)
    argv = [sys.executable, str(script), str(home), str(req)]
    first_log = tmp_path / "first.log"
    with first_log.open("wb") as log:
        first = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
    try:
        # Start the second while the first creates the environment (the window where it was deleted).
        _wait_for(lambda: b"[1/3] standin: creating" in first_log.read_bytes(), 60, "the first install to start")
        second = subprocess.run(argv, capture_output=True, text=True, timeout=300)
        first.wait(300)
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    first_out = first_log.read_text()
    assert first.returncode == 0 and "standin: installed in" in first_out, first_out[-2000:]
    assert second.returncode == 0 and "standin: installed in" in second.stdout, (second.stdout + second.stderr)[-2000:]
    assert f"standin: waiting for pid {first.pid} (" in second.stdout, second.stdout[-2000:]
    # The second rebuilt only after the first had finished.
    assert second.stdout.index("waiting for") < second.stdout.index("removing the previous environment")
    assert (home / "envs" / "standin" / "edgedeploy-toolchain.json").is_file()
    assert not list((home / "locks").iterdir())


def test_install_no_wait_and_doctor_name_the_process_that_holds_the_environment(tmp_path):
    home = tmp_path / "home"
    tc = find_toolchain("espdl")
    env = tc.env_dir(home)
    env.mkdir(parents=True)
    marker = env / "being-installed"
    marker.write_text("by the process that holds the lock")
    environ = dict(os.environ, EDGEDEPLOY_HOME=str(home))
    # This test process stands in for a running `toolchain install espdl`.
    with held(tc.lock_path(home)):
        refused = subprocess.run(_cli_argv("toolchain", "install", "espdl", "--force", "--no-wait"), capture_output=True, text=True, env=environ, timeout=120)
        doctor = subprocess.run(_cli_argv("toolchain", "doctor", "espdl"), capture_output=True, text=True, env=environ, timeout=120)
    assert refused.returncode == EXIT_TOOLCHAIN, refused.stderr[-2000:]
    errors = [line for line in refused.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and f"in use by pid {os.getpid()} (" in errors[0] and "Traceback" not in refused.stderr, refused.stderr
    assert marker.read_text() == "by the process that holds the lock"
    assert doctor.returncode == 0, doctor.stderr[-2000:]
    assert f"being installed by pid {os.getpid()} (" in doctor.stdout and "BROKEN" not in doctor.stdout, doctor.stdout
