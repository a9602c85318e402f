"""The harness runs each session as its own process through the worker protocol, and refuses
results that do not prove it (same PID twice, no protocol result); a crashing session is one
clear error quoting its log."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from edgedeploy.errors import WorkerFailed
from edgedeploy.measure import harness, protocol
from edgedeploy.measure.harness import SessionPlan, run_sessions

PLAN = SessionPlan(sessions=3, warmup=1, min_iterations=5, min_duration_s=0.0)

SLEEP_WORKER = '''
import importlib.util, time
def run(request, ctx):
    spec = importlib.util.spec_from_file_location("p", request["protocol_path"])
    protocol = importlib.util.module_from_spec(spec); spec.loader.exec_module(protocol)
    return protocol.run_session(lambda: time.sleep(0.001), request["settings"], request["scope"])
'''

CRASH_WORKER = '''
def run(request, ctx):
    print("loading the model ...")
    raise RuntimeError("the backend could not load the model")
'''


def test_sessions_are_separate_processes_and_time_what_they_run(tmp_path):
    worker = tmp_path / "sleep_worker.py"
    worker.write_text(SLEEP_WORKER)
    results = run_sessions(Path(sys.executable), worker, {"scope": {"backend": "sleep"}}, PLAN, tmp_path / "work", "sleep", 60)
    assert len(results) == 3
    pids = [r["pid"] for r in results]
    assert len(set(pids)) == 3
    for r in results:
        assert r["schema"] == protocol.RUN_SCHEMA and r["iterations"] >= 5 and r["warmup"] == 1
        assert r["latency_us"]["min"] >= 1000.0  # a 1 ms sleep cannot take less
        assert r["process"]["pid"] == r["pid"]


def test_a_repeated_pid_is_refused(tmp_path, monkeypatch):
    fake = {"schema": protocol.RUN_SCHEMA, "pid": 4242, "latency_us": {"p50": 1.0, "p90": 1.0}, "iterations": 5, "first_inference_us": 1.0}
    from edgedeploy.toolchains.executor import Executor

    monkeypatch.setattr(Executor, "run_worker", lambda *a, **k: dict(fake))
    with pytest.raises(WorkerFailed, match="separate processes"):
        run_sessions(Path(sys.executable), tmp_path / "unused.py", {}, PLAN, tmp_path, "fake", 10)


def test_a_crashing_session_is_one_clear_error_with_the_log(tmp_path):
    worker = tmp_path / "crash_worker.py"
    worker.write_text(CRASH_WORKER)
    with pytest.raises(WorkerFailed) as info:
        run_sessions(Path(sys.executable), worker, {"scope": {}}, PLAN, tmp_path / "work", "crashy", 60)
    message = str(info.value)
    # One sentence: the worker's own error and where the full log is; the log keeps the rest.
    assert "the backend could not load the model" in message and "\n" not in message
    log = Path(message.split("full log: ")[1].rstrip(").").rstrip(")"))
    assert "loading the model" in log.read_text()


def test_protocol_file_is_stdlib_only():
    """Generated runners copy protocol.py onto boards without numpy: it may import the standard library only."""
    import ast

    tree = ast.parse(Path(harness.PROTOCOL_FILE).read_text())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add((node.module or "").split(".")[0])
    assert imported <= set(sys.stdlib_module_names), imported - set(sys.stdlib_module_names)


def test_result_line_round_trip():
    result = {"schema": protocol.RUN_SCHEMA, "latency_us": {"p50": 1.5}}
    text = "noise\n" + protocol.result_line(result) + "\nEDGEDEPLOY {broken\n"
    assert protocol.parse_result_lines(text) == [result]
