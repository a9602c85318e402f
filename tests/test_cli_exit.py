"""The audit ends the program without the interpreter's teardown (edgedeploy.cli.skip_teardown):
what it saves is time, so what a user gets must not change: the whole output, the exit status,
the atexit handlers; and a caller running the command in its own process keeps running."""

from __future__ import annotations

import json
import subprocess
import sys
import threading

import pytest

import edgedeploy.cli as cli
from edgedeploy.cli import exit_without_teardown, main

# The program as the console script runs it, with an atexit handler of its own, which leaves a
# marker of whether the interpreter's teardown ran (builtins' objects are freed at its very end).
PROGRAM = """
import atexit, builtins, os, sys
class Marker:
    def __del__(self):
        os.write(2, b"teardown ran\\n")  # sys.stderr is gone by then
def at_exit():
    sys.stderr.write("atexit ran\\n")
    # Made now, after the program froze the collector's objects: freed by the teardown, if any.
    builtins.edgedeploy_test_marker = Marker()
atexit.register(at_exit)
sys.argv = ["edgedeploy", *sys.argv[1:]]
from edgedeploy.__main__ import run
run()
"""


def _program(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", PROGRAM, *args], capture_output=True, text=True, timeout=300)


def test_the_audit_ends_without_the_teardown_and_keeps_its_output_status_and_atexit():
    done = _program("audit", "--format", "json", "--target", "esp32s3,rk3588")
    assert done.returncode == 0, done.stderr
    assert [a["chip"] for a in json.loads(done.stdout)["audits"]] == ["esp32s3", "rk3588"]
    assert "atexit ran" in done.stderr
    assert "teardown ran" not in done.stderr


def test_an_audit_that_trips_fail_on_keeps_its_report_exit_status_and_sentence():
    # The sample's Gemm falls back to the GPU on the Orin NX's DLA: exit 4, after the report.
    done = _program("audit", "--target", "jetson-orin-nx", "--fail-on", "any")
    assert done.returncode == 4, done.stderr
    assert "jetson-orin-nx" in done.stdout
    assert [line for line in done.stderr.splitlines() if line.startswith("error:")] == [
        line for line in done.stderr.splitlines() if line.startswith("error: --fail-on any: nodes leave the accelerator (jetson-orin-nx:")
    ]
    assert "atexit ran" in done.stderr and "teardown ran" not in done.stderr


def test_a_command_error_before_the_audit_s_end_keeps_the_usual_exit():
    done = _program("audit", "--target", "esp32s3", "--input-shape", "0x1")
    assert done.returncode == 2
    assert done.stderr.count("error:") == 1
    assert "teardown ran" in done.stderr


def test_other_commands_keep_the_teardown():
    done = _program("--version")
    assert done.returncode == 0
    assert "teardown ran" in done.stderr and "atexit ran" in done.stderr


def test_a_caller_s_process_runs_on_after_the_audit(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["audit", "--format", "json", "--target", "esp32s3"])
    assert exited.value.code == 0
    assert json.loads(capsys.readouterr().out)["audits"][0]["chip"] == "esp32s3"


def test_the_fast_exit_leaves_the_usual_one_while_another_thread_runs():
    release = threading.Event()
    other = threading.Thread(target=release.wait)
    other.start()
    try:
        assert exit_without_teardown(0) is None  # returned: the caller exits as usual
    finally:
        release.set()
        other.join()
    assert cli._running_as_program is False
