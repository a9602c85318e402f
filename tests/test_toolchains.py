"""Toolchain environments and the worker protocol.

The protocol tests use this interpreter as the "environment" (the protocol does not care which
Python runs the worker); the round trip through a real toolchain environment needs espdl.
"""

from __future__ import annotations

import json
import os
import re
import sys
import textwrap
import time
from pathlib import Path

import pytest

from edgedeploy.errors import ToolchainError, ToolchainMissing, WorkerFailed
from edgedeploy.toolchains import RequirementStep, VenvToolchain
from edgedeploy.toolchains.executor import Executor
from tests.helpers import run_cli


def run_worker(python: Path, worker: Path, request: dict, workdir: Path, log_path: Path, timeout_s: float, label: str) -> dict:
    """The executor's one worker path with an interpreter's path as the environment."""
    return Executor(log_path, timeout_s).run_worker(python, worker, request, workdir, label=label)


def write_worker(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "worker_test.py"
    path.write_text(textwrap.dedent(body))
    return path


def run_source_worker(tmp_path: Path, body: str, request: dict | None = None, timeout_s: float = 60, label: str = "test") -> dict:
    """Run the worker whose source is `body` with this interpreter; its log is tmp_path/log.txt."""
    worker = write_worker(tmp_path, body)
    return run_worker(Path(sys.executable), worker, request or {}, tmp_path / "w", tmp_path / "log.txt", timeout_s=timeout_s, label=label)


def test_worker_round_trip_with_this_interpreter(tmp_path):
    result = run_source_worker(
        tmp_path,
        """
        import sys
        def run(request, ctx):
            print("noise on stdout that must not reach the caller")
            ctx.log("working")
            return {"doubled": [2 * v for v in request["values"]], "argv0": sys.argv[0]}
        """,
        {"values": [1, 2, 3]},
    )
    assert result["doubled"] == [2, 4, 6]
    text = (tmp_path / "log.txt").read_text()
    assert "noise on stdout" in text and "working" in text


def test_worker_exception_becomes_one_sentence_with_the_toolchains_error_and_the_log_path(tmp_path):
    with pytest.raises(WorkerFailed) as info:
        run_source_worker(
            tmp_path,
            """
            def run(request, ctx):
                print("about to fail")
                raise ValueError("the model has an op we cannot quantise")
            """,
            label="espdl",
        )
    message = str(info.value)
    assert "ValueError: the model has an op we cannot quantise" in message
    assert str(tmp_path / "log.txt") in message  # where the full log (with the traceback) is
    assert "\n" not in message and "Traceback" not in message  # one sentence, the traceback stays in the log
    assert "Traceback" in (tmp_path / "log.txt").read_text()


def test_a_workers_failure_context_names_the_node_and_where_in_the_toolchain(tmp_path):
    """A worker module may read its toolchain's failure (failure_context): the sentence names the node first."""
    worker = write_worker(
        tmp_path,
        """
        class Operation:
            def __init__(self, name, type):
                self.name, self.type = name, type
        def align(op):
            return [][5]
        def run(request, ctx):
            align(Operation("/gru/GRU", "GRU"))
        def failure_context(exc):
            tb = exc.__traceback__
            while tb.tb_next is not None:
                tb = tb.tb_next
            op = tb.tb_frame.f_locals["op"]
            return {"node": op.name, "op_type": op.type, "where": "the toolchain's " + tb.tb_frame.f_code.co_name, "ignored": "x"}
        """,
    )
    with pytest.raises(WorkerFailed) as info:
        run_worker(Path(sys.executable), worker, {}, tmp_path / "w", tmp_path / "log.txt", timeout_s=60, label="espdl")
    message = str(info.value)
    assert message.startswith("The espdl toolchain failed at node '/gru/GRU' (GRU): IndexError: list index out of range (in the toolchain's align)")
    assert "\n" not in message and "ignored" not in message


def test_a_failure_context_that_fails_itself_leaves_the_plain_sentence(tmp_path):
    worker = write_worker(
        tmp_path,
        """
        def run(request, ctx):
            raise KeyError("tensor_7")
        def failure_context(exc):
            raise RuntimeError("the reader is broken")
        """,
    )
    with pytest.raises(WorkerFailed) as info:
        run_worker(Path(sys.executable), worker, {}, tmp_path / "w", tmp_path / "log.txt", timeout_s=60, label="rknn")
    assert str(info.value).startswith("The rknn toolchain failed: KeyError: 'tensor_7' (full log:")


def test_a_native_crash_names_the_stage_the_worker_announced_last(tmp_path):
    worker = write_worker(
        tmp_path,
        """
        import os, signal
        def run(request, ctx):
            ctx.log("onnx2tf: converting model.onnx")
            ctx.log("TFLite converter: quantising to full int8")
            print("W0000 00:00:1796129104.413443 5941 tf_tfl_flatbuffer_helpers.cc:368] Ignored drop_control_dependency.", flush=True)
            os.kill(os.getpid(), signal.SIGSEGV)
        """,
    )
    with pytest.raises(WorkerFailed) as info:
        run_worker(Path(sys.executable), worker, {}, tmp_path / "w", tmp_path / "log.txt", timeout_s=60, label="eiq")
    message = str(info.value)
    assert "crashed (SIGSEGV) in the toolchain's native code while TFLite converter: quantising to full int8, without a result" in message
    assert "drop_control_dependency" not in message  # TensorFlow's warning is not the toolchain's last word


@pytest.mark.parametrize(
    "last_words,ending,timeout_s,verdict",
    [
        ("segfault imminent", "os._exit(139)", 60, "exited with status 139 without a result"),
        ("hanging", "time.sleep(60)", 2, "timed out after 2 s"),
    ],
    ids=["crash-without-result", "timeout-is-stopped"],
)
def test_a_worker_that_dies_or_hangs_fails_in_one_sentence_with_its_last_line(tmp_path, last_words, ending, timeout_s, verdict):
    body = f"import os, time\ndef run(request, ctx):\n    print({last_words!r}, flush=True)\n    {ending}\n"
    with pytest.raises(WorkerFailed) as info:
        run_source_worker(tmp_path, body, timeout_s=timeout_s)
    message = str(info.value)
    assert verdict in message and last_words in message  # what happened, and the worker's last line
    assert "\n" not in message


def test_worker_does_not_see_pythonpath(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", "/somewhere/else")
    result = run_source_worker(
        tmp_path,
        """
        import os
        def run(request, ctx):
            return {"pythonpath": os.environ.get("PYTHONPATH")}
        """,
        label="x",
    )
    assert result["pythonpath"] is None


WORKER_USING_THE_CONTEXT_HELPERS = """
    def double(request, ctx):
        return {"doubled": 2 * request["value"], "pip": ctx.package_version("pip"), "absent": ctx.package_version("no-such-distribution-xyz")}
    def load(request, ctx):
        return {"answer": ctx.load_module(request["path"]).ANSWER}
    def run(request, ctx):
        return ctx.dispatch(request, {"double": double, "load": load}, key="mode")
    """


def test_worker_context_dispatches_by_the_request_key_and_reads_versions(tmp_path):
    import importlib.metadata

    result = run_source_worker(tmp_path, WORKER_USING_THE_CONTEXT_HELPERS, {"mode": "double", "value": 21})
    assert result == {"doubled": 42, "pip": importlib.metadata.version("pip"), "absent": None}
    (tmp_path / "helper_module.py").write_text("ANSWER = 42\n")
    assert run_source_worker(tmp_path, WORKER_USING_THE_CONTEXT_HELPERS, {"mode": "load", "path": str(tmp_path / "helper_module.py")}) == {"answer": 42}


@pytest.mark.parametrize("mode", ["nope", None, ["double"]])
def test_worker_context_refuses_an_unknown_action_in_one_sentence(tmp_path, mode):
    with pytest.raises(WorkerFailed, match=f"ValueError: unknown mode {re.escape(repr(mode))}"):
        run_source_worker(tmp_path, WORKER_USING_THE_CONTEXT_HELPERS, {"mode": mode})


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
    result = Executor(log, 300).run_worker(tc, worker, {"values": [0.5, 1.5, 2.0]}, tmp_path / "w")
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
        Executor(log, 60, progress).run_worker(Path(sys.executable), worker, {}, tmp_path / "w", "test")
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


# The message of an exception whose text ends in a listing of the failing call's arguments
# (shaped like the message of a layer that fails inside a TensorFlow conversion).
LAYER_MESSAGE = (
    'Exception encountered when calling layer "tf.reshape" (type TFOpLambda).\n\n'
    "Dimensions must be equal, but are 3 and 4.\n\n"
    'Call arguments received by layer "tf.reshape" (type TFOpLambda):\n'
    "  \u2022 tensor=tf.Tensor(shape=(1, 3), dtype=float32)\n"
    "  \u2022 shape=[1, 4]\n"
    "  \u2022 name='no error here'\n"
)


def test_a_worker_failure_quotes_the_exceptions_message_not_its_argument_listing(tmp_path):
    """The sentence once quoted "ValueError: \u2022 name='...'" (the message's last line) as the reason."""
    with pytest.raises(WorkerFailed) as info:
        run_source_worker(tmp_path, f"def run(request, ctx):\n    raise ValueError({LAYER_MESSAGE!r})\n", label="eiq")
    assert info.value.final_line == 'ValueError: Exception encountered when calling layer "tf.reshape" (type TFOpLambda). Dimensions must be equal, but are 3 and 4.'
    assert "name=" not in str(info.value) and "\u2022" not in str(info.value)


def test_final_error_line_is_the_last_tracebacks_message_with_its_continuation_lines():
    from edgedeploy.toolchains.executor import final_error_line

    frames = 'Traceback (most recent call last):\n  File "/env/site-packages/conv/run.py", line 88, in convert\n    raise error\n'
    # A frame's code ("raise error") looks like an error line; the exception's name does not.
    log = f"$ python worker.py\nloading\n{frames}conv.errors.UnsupportedOp: no kernel for\n  GridSample with mode 'bicubic'\n[edgedeploy-worker +2.0s] worker finished\n"
    assert final_error_line(log) == "conv.errors.UnsupportedOp: no kernel for GridSample with mode 'bicubic'"
    # A message that spans lines and ends in an argument listing: the message, not the listing's last line.
    log = f"{frames}ValueError: {LAYER_MESSAGE}"
    assert final_error_line(log) == 'ValueError: Exception encountered when calling layer "tf.reshape" (type TFOpLambda). Dimensions must be equal, but are 3 and 4.'
    # Of a chain, the last exception (the one the process died of).
    chained = f"{frames}KeyError: 'x'\n\nDuring handling of the above exception, another exception occurred:\n\n{frames}RuntimeError: the range of 'x' is infinite\n"
    assert final_error_line(chained) == "RuntimeError: the range of 'x' is infinite"
    # A traceback the tool logged and went past is not its last word: its final error line is.
    went_on = f"{frames}KeyError: 'x'\n" + "".join(f"step {i}\n" for i in range(20)) + "build failed: the graph has no outputs\n"
    assert final_error_line(went_on) == "build failed: the graph has no outputs"
