"""The audit's second process (edgedeploy.forked): the program runs ONNX's checker, and places the
chips of different toolchains, in a forked copy of itself. What that changes for speed must not
change what a user reads, lose an error, or leave a process behind.

These tests fork the pytest process itself (as the program forks itself); they need Linux.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import onnx
import pytest
from onnx import TensorProto, helper

from edgedeploy import forked
from edgedeploy.cli.output import to_json
from edgedeploy.errors import ModelError
from edgedeploy.model import load_model
from edgedeploy.pipeline import audit as audit_pipeline
from edgedeploy.pipeline.audit import audit_chips, resolve_chips, toolchain_groups

CORPUS = Path(__file__).parent / "fixtures" / "corpus"
# Real models of the corpus, small enough for a test: two outputs, recurrent state, int64 tokens,
# attention, a detection-style CNN; each audited on every chip.
MODELS = ["mnist_box_and_class", "lstm_stateful", "digits_token_classifier", "transformer_encoder", "mlperf_tiny_mobilenet_v1_vww"]

# Where the program would not fork (not Linux, one CPU), there is no second process to test.
needs_fork = pytest.mark.skipif(not forked.available(), reason="a forked second process needs Linux and two usable CPUs")


def _no_children_left() -> bool:
    try:
        os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        return True
    return False


def _report_text(path: Path, processes: int, **options) -> str:
    chips, no_rules = resolve_chips(options.pop("targets", ("all",)))
    return to_json(audit_chips(path, {}, chips, list(no_rules), processes=processes, **options))


# --- edgedeploy.forked -------------------------------------------------------------------------


@needs_fork
def test_a_forked_call_brings_back_its_value_and_is_reaped():
    parent = os.getpid()
    with forked.ForkedCall(lambda: {"pid": os.getpid(), "data": list(range(100_000))}) as child:
        value = child.result()
    assert value["pid"] != parent and value["data"] == list(range(100_000))  # more than a pipe's buffer
    assert child.exit_status == 0
    assert _no_children_left()


@needs_fork
def test_a_child_that_raises_or_dies_gives_none_and_is_reaped():
    def raises():
        raise RuntimeError("a bug in the child")

    with forked.ForkedCall(raises) as child:
        assert child.result() is None
    assert child.exit_status == forked.CHILD_FAILED

    with forked.ForkedCall(lambda: os.kill(os.getpid(), 9)) as child:
        assert child.result() is None
    assert child.exit_status == -9
    assert _no_children_left()


@needs_fork
def test_closing_a_call_kills_a_child_that_still_runs():
    started = time.monotonic()
    with forked.ForkedCall(lambda: time.sleep(60)) as child:
        pass  # the caller failed before it asked for the result
    assert time.monotonic() - started < 10
    assert child.exit_status == -9 and _no_children_left()


def test_a_second_process_is_only_offered_on_linux_with_two_cpus(monkeypatch):
    monkeypatch.setattr(sys, "platform", "darwin")
    assert not forked.available()
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0})
    assert not forked.available()
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    assert forked.available()


# --- the audit in two processes ----------------------------------------------------------------


@needs_fork
@pytest.mark.parametrize("name", MODELS)
def test_two_processes_write_the_very_same_report_as_one(name):
    path = CORPUS / f"{name}.onnx"
    assert _report_text(path, processes=2) == _report_text(path, processes=1)
    assert _no_children_left()


@needs_fork
def test_the_same_report_with_every_node_by_node_and_on_a_chosen_list_of_chips():
    path = CORPUS / "mlperf_tiny_resnet8.onnx"
    assert _report_text(path, 2, detail=True, by="node") == _report_text(path, 1, detail=True, by="node")
    # One toolchain only: nothing to split, one process.
    chips, _ = resolve_chips(("rk3588,rk3566",))
    assert toolchain_groups(chips) is None
    two = ("esp32s3,rk3588,imx93",)
    assert _report_text(path, 2, targets=two, fail_on="cpu-fallback") == _report_text(path, 1, targets=two, fail_on="cpu-fallback")


def test_the_groups_keep_each_toolchain_together_and_cover_every_chip():
    chips, _ = resolve_chips(("all",))
    groups = toolchain_groups(chips)
    assert sorted(i for group in groups for i in group) == list(range(len(chips)))
    assert [len({chips[i].target.id for i in group}) for group in groups] == [1] * len(groups)
    assert len(groups) == len(_by_target(chips))
    assert [len(group) for group in groups] == sorted((len(group) for group in groups), reverse=True)


@needs_fork
def test_turns_give_each_item_to_one_process_the_parent_from_the_front_the_child_from_the_back():
    turns = forked.Turns(7)
    try:
        first = turns.take()
        with forked.ForkedCall(lambda: [turns.take(from_back=True) for _ in range(3)]) as child:
            theirs = child.result()
        rest = []
        while (item := turns.take()) is not None:
            rest.append(item)
    finally:
        turns.close()
    assert first == 0 and theirs == [6, 5, 4] and rest == [1, 2, 3]
    assert _no_children_left()


@needs_fork
def test_without_an_in_memory_file_for_the_turns_the_audit_runs_in_one_process(monkeypatch):
    path = CORPUS / "gru_har.onnx"
    expected = _report_text(path, processes=1)

    def no_memfd(*args):
        raise OSError(38, "Function not implemented")

    monkeypatch.setattr(os, "memfd_create", no_memfd)
    assert _report_text(path, processes=2) == expected
    assert _no_children_left()


def _by_target(chips):
    found: dict[str, list] = {}
    for c in chips:
        found.setdefault(c.target.id, []).append(c)
    return found


@needs_fork
def test_a_failing_child_changes_nothing_the_parent_audits_its_half_itself(monkeypatch):
    """A bug that kills the child (here: every chip audit in the child raises) costs time, not the report."""
    path = CORPUS / "gru_har.onnx"
    expected = _report_text(path, processes=1)
    parent = os.getpid()
    original = audit_pipeline.audit_one

    def fails_in_the_child(*args, **kwargs):
        if os.getpid() != parent:
            raise RuntimeError("a bug that only shows in the child")
        return original(*args, **kwargs)

    monkeypatch.setattr(audit_pipeline, "audit_one", fails_in_the_child)
    assert _report_text(path, processes=2) == expected
    assert _no_children_left()


@needs_fork
def test_an_error_in_the_parent_s_half_reaches_the_user_and_the_child_is_reaped(monkeypatch):
    path = CORPUS / "gru_har.onnx"
    parent = os.getpid()
    original = audit_pipeline.audit_one

    def fails_in_the_parent(model, shared, choice, *args):
        if os.getpid() == parent:  # whichever toolchain this process takes first
            raise RuntimeError("a rule bug")
        return original(model, shared, choice, *args)

    monkeypatch.setattr(audit_pipeline, "audit_one", fails_in_the_parent)
    with pytest.raises(RuntimeError, match="a rule bug"):
        _report_text(path, processes=2)
    assert _no_children_left()


# --- ONNX's checker in the second process -------------------------------------------------------


@needs_fork
@pytest.mark.parametrize("child_fails", [False, True])
def test_node_costs_worked_out_beside_the_views_are_those_worked_out_here(monkeypatch, child_fails):
    """The latency estimates' node costs come from a forked child while the views are made; from
    a child that fails they are worked out here: the same estimates either way, no child left."""
    from edgedeploy.audit.engine import audit_model
    from edgedeploy.estimate import node_costs

    model = load_model(CORPUS / "mlperf_tiny_mobilenet_v1_vww.onnx")
    assert audit_pipeline._node_costs_in_child(model).result() == node_costs(model)
    if child_fails:
        monkeypatch.setattr(audit_pipeline, "_node_costs_in_child", lambda m: forked.ForkedCall(lambda: 1 / 0))
    shared, estimator = audit_pipeline.shared_by_every_chip(model, fork=True)
    alone, estimator_alone = audit_pipeline.shared_by_every_chip(model, fork=False)
    chips, _ = resolve_chips(("rk3588", "imx93"))
    for choice in chips:
        precision = audit_pipeline.chip_precision(choice.chip, None, False)[0]
        rules = audit_pipeline.rules_for(choice.target, choice.chip.id, precision)
        forked_estimate = estimator(audit_model(model, rules, precision, shared=shared), choice.target)
        assert forked_estimate == estimator_alone(audit_model(model, rules, precision, shared=alone), choice.target)
        assert forked_estimate  # an estimate was made, not an empty entry
    assert _no_children_left()


def _fails_the_checker(tmp_path: Path) -> Path:
    """A model ONNX's checker refuses (a node input no one produces) that the earlier checks let through."""
    node = helper.make_node("Relu", ["missing"], ["y"], name="relu")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])], [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    path = tmp_path / "bad.onnx"
    path.write_bytes(model.SerializeToString())
    return path


@needs_fork
def test_the_checker_in_a_second_process_refuses_with_the_same_sentence(tmp_path):
    path = _fails_the_checker(tmp_path)
    with pytest.raises(ModelError) as in_thread:
        load_model(path)
    with pytest.raises(ModelError) as in_child:
        load_model(path, second_process=True)
    assert str(in_child.value) == str(in_thread.value) and "fails ONNX's model checker" in str(in_thread.value)
    good = load_model(CORPUS / "lstm_stateful.onnx", second_process=True)
    assert good.sha256 == load_model(CORPUS / "lstm_stateful.onnx").sha256
    assert onnx.shape_inference.infer_shapes(good.proto) is not None
    assert _no_children_left()


@needs_fork
def test_a_checker_child_that_dies_is_replaced_by_the_checker_here(tmp_path, monkeypatch):
    import edgedeploy.model.intake as intake

    parent = os.getpid()
    original = intake._checker_verdict

    def dies_in_the_child(*args):
        if os.getpid() != parent:
            os._exit(3)
        return original(*args)

    monkeypatch.setattr(intake, "_checker_verdict", dies_in_the_child)
    with pytest.raises(ModelError, match="fails ONNX's model checker"):
        load_model(_fails_the_checker(tmp_path), second_process=True)
    assert _no_children_left()


# --- the program ---------------------------------------------------------------------------------


@needs_fork
def test_the_program_uses_two_processes_and_prints_what_one_prints(tmp_path):
    """As a user runs it: the console script forks (unless EDGEDEPLOY_AUDIT_PROCESSES=1, or every
    CPU is busy; =2 forks all the same); a caller of main(argv) in its own process does not."""
    from edgedeploy.cli import audit_cmd

    path = CORPUS / "transformer_encoder.onnx"
    command = [sys.executable, "-m", "edgedeploy", "audit", str(path), "--target", "all", "--format", "json"]
    env = {k: v for k, v in os.environ.items() if k != audit_cmd.PROCESSES_VARIABLE}
    two = subprocess.run(command, capture_output=True, text=True, env={**env, audit_cmd.PROCESSES_VARIABLE: "2"}, cwd=tmp_path, timeout=300)
    one = subprocess.run(command, capture_output=True, text=True, env={**env, audit_cmd.PROCESSES_VARIABLE: "1"}, cwd=tmp_path, timeout=300)
    assert two.returncode == one.returncode == 0, two.stderr + one.stderr
    assert two.stdout == one.stdout and json.loads(two.stdout)["audits"]
    code = "from edgedeploy.cli import audit_cmd\nprint(audit_cmd.audit_processes())"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env).stdout.strip() == "1"
    as_program = "import sys\nfrom edgedeploy import cli\nfrom edgedeploy.cli import audit_cmd\nsys.argv = ['edgedeploy', '--version']\ntry:\n    cli.main()\nexcept SystemExit:\n    pass\nprint(audit_cmd.audit_processes())"
    forced = subprocess.run([sys.executable, "-c", as_program], capture_output=True, text=True, check=True, env={**env, audit_cmd.PROCESSES_VARIABLE: "2"})
    assert forced.stdout.strip().endswith("2")
    # Without the variable: two where a CPU is free, one where all are busy (the machine decides).
    unset = subprocess.run([sys.executable, "-c", as_program], capture_output=True, text=True, check=True, env=env)
    assert unset.stdout.strip()[-1] in "12"
    off = subprocess.run([sys.executable, "-c", as_program], capture_output=True, text=True, check=True, env={**env, audit_cmd.PROCESSES_VARIABLE: "1"})
    assert off.stdout.strip().endswith("1")


def _fake_tasks(tmp_path, states: str):
    """A stand-in for /proc/self/task: one thread per letter of `states` (R: ready to run)."""
    tasks = tmp_path / "task"
    for i, state in enumerate(states):
        (tasks / str(100 + i)).mkdir(parents=True)
        (tasks / str(100 + i) / "stat").write_text(f"{100 + i} (python3 (x)) {state} 1 2 3\n")
    return str(tasks)


@needs_fork
@pytest.mark.parametrize(
    "loadavg, own, idle",
    [
        ("0.50 0.40 0.30 1/312 4242\n", "R", True),
        ("19.10 18.00 17.00 4096/5120 4242\n", "R", False),
        ("garbled\n", "R", True),
        # This process's spinning OpenBLAS thread is no other job: a CPU is still free.
        ("1.00 0.40 0.30 2/312 4242\n", "RR", True),
        # Another job ready to run besides this one, and this process's sleeping threads.
        ("1.00 0.40 0.30 2/312 4242\n", "RSS", len(os.sched_getaffinity(0)) > 2),
    ],
)
def test_a_second_process_only_where_a_cpu_is_free(tmp_path, loadavg, own, idle):
    """/proc/loadavg's runnable count (this process included, its other ready threads not) against
    the usable CPUs (two or more here): with every CPU busy a fork would only add CPU time; an
    unreadable count does not stop the fork."""
    fake = tmp_path / "loadavg"
    fake.write_text(loadavg)
    assert forked.idle_cpu(str(fake), _fake_tasks(tmp_path, own)) is idle
    assert forked.idle_cpu(str(tmp_path / "missing")) is True


@needs_fork
def test_own_ready_threads_are_counted_from_proc():
    """A thread of this process busy outside the GIL (hashing) is ready to run, as numpy's OpenBLAS
    worker is after import: it is seen in /proc/self/task, so idle_cpu does not take it for another job."""
    import hashlib
    import threading

    data = b"x" * (64 << 20)
    stop = threading.Event()

    def busy():
        while not stop.is_set():
            hashlib.sha256(data).digest()

    worker = threading.Thread(target=busy, daemon=True)
    worker.start()
    try:
        seen = max(forked.own_running_threads() for _ in range(200))
    finally:
        stop.set()
        worker.join()
    assert seen >= 2
    assert forked.own_running_threads() >= 1
