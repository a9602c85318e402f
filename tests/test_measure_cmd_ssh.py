"""`edgedeploy measure` over ssh to the loopback sshd (tests/ssh_fixture.py): copy, run, fetch,
clean up; and a device that drops the connection mid-run."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from edgedeploy.cli import cli
from edgedeploy.pipeline.measure import MeasureRequest, run_measure
from edgedeploy.errors import DeviceError
from tests.measure_helpers import FAST_SESSION_ARGS, fast_settings, make_artifact, write_inventory


@pytest.fixture(scope="module")
def artifact(tmp_path_factory):
    return make_artifact(tmp_path_factory.mktemp("ssh-artifacts"), "int8-qdq")


def test_measure_over_ssh(loopback_sshd, artifact, tmp_path):
    inv = write_inventory(tmp_path / "devices.json", {"loop": loopback_sshd.inventory_entry()})
    result = CliRunner().invoke(cli, ["measure", str(artifact), "--device", "loop", "--inventory", str(inv), "--format", "json", *FAST_SESSION_ARGS])
    assert result.exit_code == 0, result.output
    record = json.loads(result.stdout)
    assert record["device"]["transport"] == "ssh" and record["device"]["address"].endswith(f"127.0.0.1:{loopback_sshd.port}")
    for label in ("before", "after"):
        assert len({s["pid"] for s in record["latency"][label]["sessions"]}) == 3
    assert record["comparison"]["speedup"] > 0
    assert record["accuracy"]["samples"] == 100 and record["accuracy"]["before_vs_host_reference"]["logits"]["max_abs_error"] == 0
    folder = record["device"]["run_folder"]
    assert folder["removed"] is True and folder["path"].startswith("/") and not Path(folder["path"]).exists()
    report = json.loads((artifact / "report.json").read_text())
    assert report["measurements"]["loop"]["partial"] is False


def test_connection_dropped_mid_run_keeps_partial_results(loopback_sshd, artifact):
    """After the first session, the "board" loses its connection (every sshd process of the
    session is killed while the next runner runs): one clear error, the first session kept."""
    device = loopback_sshd.device(name="flaky")
    first_session_done = threading.Event()
    dropped = []

    def echo(line: str) -> None:
        if "session 1/3" in line:
            first_session_done.set()

    def drop_during_next_runner():
        if not first_session_done.wait(120):
            return
        if loopback_sshd.wait_for_remote_process("runner.py", timeout_s=60) is not None:
            dropped.append(loopback_sshd.drop_connections())

    killer = threading.Thread(target=drop_during_next_runner)
    killer.start()
    try:
        with pytest.raises(DeviceError) as info:
            run_measure(MeasureRequest(artifact, device, fast_settings(), eval_count=50), echo=echo)
    finally:
        first_session_done.set()
        killer.join()
    assert dropped and dropped[0] > 0
    message = str(info.value)
    assert "connection to device 'flaky'" in message and "dropped while running" in message
    assert "marked partial" in message and "\n" not in message
    report = json.loads((artifact / "report.json").read_text())
    folded = report["measurements"]["flaky"]
    assert folded["partial"] is True and "dropped" in folded["error"]
    kept = json.loads((artifact / folded["file"]).read_text())
    assert kept["partial"] is True
    assert len(kept["latency"]["after"]["sessions"]) == 1  # the session gathered before the drop
    assert kept["latency"]["after"]["partial"] is True
    assert kept["latency"]["before"] is None
    assert kept["comparison"]["speedup"] is None and "not both measured" in kept["comparison"]["refused"]
    # A lost device keeps its folder (nobody could remove it); here the "device" is this machine.
    folder = kept["device"]["run_folder"]
    assert folder["removed"] is False and Path(folder["path"]).is_dir()
    import shutil

    shutil.rmtree(folder["path"])


def test_unknown_host_key_refused_by_measure(loopback_sshd, artifact, tmp_path):
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    entry = loopback_sshd.inventory_entry(ssh_options=[o if not o.startswith("UserKnownHostsFile=") else f"UserKnownHostsFile={empty}" for o in loopback_sshd.ssh_options()])
    inv = write_inventory(tmp_path / "devices.json", {"stranger": entry})
    result = CliRunner().invoke(cli, ["measure", str(artifact), "--device", "stranger", "--inventory", str(inv), *FAST_SESSION_ARGS])
    assert result.exit_code != 0
    assert "not in known_hosts" in str(result.exception)
