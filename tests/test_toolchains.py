"""Toolchain environments and the worker protocol.

The protocol tests use this interpreter as the "environment" (the protocol does not care which
Python runs the worker); the round trip through a real toolchain environment needs espdl.
"""

from __future__ import annotations

import json
import os
import sys
import textwrap
import time
from pathlib import Path

import pytest

from edgedeploy.errors import ToolchainError, ToolchainMissing, WorkerFailed
from edgedeploy.toolchains import RequirementStep, VenvToolchain
from edgedeploy.toolchains.worker import run_worker
from tests.helpers import run_cli


def write_worker(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "worker_test.py"
    path.write_text(textwrap.dedent(body))
    return path


def test_worker_round_trip_with_this_interpreter(tmp_path):
    worker = write_worker(
        tmp_path,
        """
        import sys
        def run(request, ctx):
            print("noise on stdout that must not reach the caller")
            ctx.log("working")
            return {"doubled": [2 * v for v in request["values"]], "argv0": sys.argv[0]}
        """,
    )
    log = tmp_path / "build.log"
    result = run_worker(Path(sys.executable), worker, {"values": [1, 2, 3]}, tmp_path / "w", log, timeout_s=60, label="test")
    assert result["doubled"] == [2, 4, 6]
    text = log.read_text()
    assert "noise on stdout" in text and "working" in text


def test_worker_exception_becomes_one_sentence_with_the_toolchains_error_and_the_log_path(tmp_path):
    worker = write_worker(
        tmp_path,
        """
        def run(request, ctx):
            print("about to fail")
            raise ValueError("the model has an op we cannot quantise")
        """,
    )
    with pytest.raises(WorkerFailed) as info:
        run_worker(Path(sys.executable), worker, {}, tmp_path / "w", tmp_path / "log.txt", timeout_s=60, label="espdl")
    message = str(info.value)
    assert "ValueError: the model has an op we cannot quantise" in message
    assert str(tmp_path / "log.txt") in message  # where the full log (with the traceback) is
    assert "\n" not in message and "Traceback" not in message  # one sentence, the traceback stays in the log
    assert "Traceback" in (tmp_path / "log.txt").read_text()


def test_worker_crash_without_result(tmp_path):
    worker = write_worker(
        tmp_path,
        """
        import os
        def run(request, ctx):
            print("segfault imminent", flush=True)
            os._exit(139)
        """,
    )
    with pytest.raises(WorkerFailed) as info:
        run_worker(Path(sys.executable), worker, {}, tmp_path / "w", tmp_path / "log.txt", timeout_s=60, label="rknn")
    assert "exited with status 139 without a result" in str(info.value)
    assert "segfault imminent" in str(info.value)  # the worker's last line
    assert "\n" not in str(info.value)


def test_worker_timeout_is_stopped(tmp_path):
    worker = write_worker(
        tmp_path,
        """
        import time
        def run(request, ctx):
            print("hanging", flush=True)
            time.sleep(60)
        """,
    )
    with pytest.raises(WorkerFailed) as info:
        run_worker(Path(sys.executable), worker, {}, tmp_path / "w", tmp_path / "log.txt", timeout_s=2, label="eiq")
    assert "timed out after 2 s" in str(info.value) and "hanging" in str(info.value)


def test_worker_does_not_see_pythonpath(tmp_path, monkeypatch):
    worker = write_worker(
        tmp_path,
        """
        import os
        def run(request, ctx):
            return {"pythonpath": os.environ.get("PYTHONPATH")}
        """,
    )
    monkeypatch.setenv("PYTHONPATH", "/somewhere/else")
    result = run_worker(Path(sys.executable), worker, {}, tmp_path / "w", tmp_path / "log.txt", timeout_s=60, label="x")
    assert result["pythonpath"] is None


def _tiny_toolchain(tmp_path: Path, requirement: str) -> VenvToolchain:
    req = tmp_path / "tiny.txt"
    req.write_text(requirement + "\n")
    return VenvToolchain(name="tiny", description="test", steps=(RequirementStep(req),), import_modules=("json",), distributions=("pip",))


def test_missing_toolchain_is_a_clear_error(tmp_path):
    tc = _tiny_toolchain(tmp_path, "# nothing")
    with pytest.raises(ToolchainMissing, match="not installed; run `edgedeploy toolchain install tiny`"):
        tc.require(tmp_path / "home")


def test_install_is_idempotent_and_force_rebuilds(tmp_path):
    tc = _tiny_toolchain(tmp_path, "# no packages: only the venv and the import check")
    home = tmp_path / "home"
    lines: list[str] = []
    status = tc.install(home, echo=lines.append)
    assert status.installed and status.versions["pip"]
    stamp = json.loads((home / "envs" / "tiny" / "edgedeploy-toolchain.json").read_text())
    assert stamp["spec_hash"] == tc.spec_hash()
    assert any(line.startswith("[1/3]") for line in lines)
    lines.clear()
    tc.install(home, echo=lines.append)
    assert lines == [f"tiny: already installed ({home / 'envs' / 'tiny'}); nothing to do (use --force to rebuild)."]
    marker = home / "envs" / "tiny" / "marker"
    marker.write_text("x")
    tc.install(home, force=True, echo=lines.append)
    assert not marker.exists()


def test_changed_pins_mark_environment_outdated(tmp_path):
    tc = _tiny_toolchain(tmp_path, "# v1")
    home = tmp_path / "home"
    tc.install(home, echo=lambda _: None)
    (tmp_path / "tiny.txt").write_text("# v2\n")
    status = tc.status(home)
    assert not status.installed and "outdated" in status.detail


def test_failing_pip_step_quotes_the_output(tmp_path, monkeypatch):
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", "")
    tc = _tiny_toolchain(tmp_path, "edgedeploy-no-such-package-xyz==1.0")
    home = tmp_path / "home"
    with pytest.raises(ToolchainError) as info:
        tc.install(home, echo=lambda _: None)
    assert "failed" in str(info.value) and "edgedeploy-no-such-package-xyz" in str(info.value)
    assert not tc.status(home).installed and "incomplete" in tc.status(home).detail


def test_toolchain_list_json():
    result = run_cli("toolchain", "list", "--format", "json")
    assert result.returncode == 0, result.stderr
    names = [t["name"] for t in json.loads(result.stdout)["toolchains"]]
    assert {"espdl", "rknn", "eiq", "tensorrt", "tidl"} <= set(names)


def test_install_refuses_user_managed_toolchain():
    result = run_cli("toolchain", "install", "tensorrt")
    assert result.returncode == 2 and "installed by you, not by edgedeploy" in result.stderr


def test_install_unknown_toolchain():
    result = run_cli("toolchain", "install", "openvino")
    assert result.returncode == 2 and "Unknown toolchain 'openvino'" in result.stderr


@pytest.mark.toolchain("espdl")
def test_round_trip_through_the_espdl_environment(tmp_path):
    """A real request through a worker in the espdl environment: esp-ppq imports, numpy computes."""
    from edgedeploy.targets import find_toolchain

    tc = find_toolchain("espdl")
    worker = write_worker(
        tmp_path,
        """
        import sys
        def run(request, ctx):
            import numpy as np
            import esp_ppq  # prints a banner to stdout: it must land in the log
            total = float(np.asarray(request["values"], dtype=np.float32).sum())
            return {"sum": total, "python": sys.executable, "esp_ppq": esp_ppq.__file__}
        """,
    )
    log = tmp_path / "build.log"
    result = tc.run_worker(worker, {"values": [0.5, 1.5, 2.0]}, workdir=tmp_path / "w", log_path=log, timeout_s=300)
    assert result["sum"] == 4.0
    assert Path(result["python"]).parent == tc.python().parent
    assert "envs/espdl" in result["esp_ppq"]
    assert "edgedeploy-worker" in log.read_text()


@pytest.mark.toolchain("espdl")
def test_doctor_reports_espdl_versions():
    result = run_cli("toolchain", "doctor", "espdl", "--format", "json")
    assert result.returncode == 0, result.stderr
    entry = json.loads(result.stdout)["toolchains"][0]
    assert entry["ok"] is True
    assert entry["versions"]["esp-ppq"] == "1.3.12"
    assert "esp_ppq" in entry["imported"]


@pytest.mark.toolchain("espdl")
def test_install_when_installed_does_nothing():
    result = run_cli("toolchain", "install", "espdl")
    assert result.returncode == 0 and "already installed" in result.stderr


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is dead for our purposes; /proc says which.
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def test_an_exception_in_the_caller_kills_the_workers_whole_process_group(tmp_path):
    """Ctrl-C (or any exception) while a worker runs: the worker and what it started die with the call."""
    from edgedeploy.toolchains.executor import Executor

    worker = write_worker(
        tmp_path,
        """
        import subprocess, sys, time
        def run(request, ctx):
            child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
            print("pids", child.pid, flush=True)
            time.sleep(120)
        """,
    )
    log = tmp_path / "log.txt"
    seen: dict = {}

    def progress(elapsed, line):
        if line.startswith("pids"):
            seen["child"] = int(line.split()[1])
            raise KeyboardInterrupt  # what Ctrl-C does in the CLI while it waits

    with pytest.raises(KeyboardInterrupt):
        Executor(log, 60, progress).worker_with_python(Path(sys.executable), worker, {}, tmp_path / "w", "test")
    assert "child" in seen, log.read_text()
    # The group got SIGTERM then SIGKILL before the call returned; a signal is delivered
    # asynchronously, so allow the kernel a moment to finish the grandchild off.
    deadline = time.monotonic() + 3.0
    while _alive(seen["child"]) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(seen["child"]), "the worker's own child outlived the interrupted call"


def test_final_error_line_skips_the_protocol_and_prefers_the_error():
    from edgedeploy.toolchains.executor import final_error_line

    log = "$ python worker.py\nloading\nTraceback (most recent call last):\n  File x\nIndexError: list index out of range\n[edgedeploy-worker +1.0s] worker finished\n"
    assert final_error_line(log) == "IndexError: list index out of range"
    assert final_error_line("$ cmd\n") is None
