"""`edgedeploy measure ARTIFACT... --farm labgrid://...` against a REAL labgrid farm on loopback.

The farm is labgrid's own coordinator and exporter (tests/labgrid_fixture.py) started by each
test, with places made by the real labgrid-client. Behind the places: NetworkServices pointing
at the loopback sshd (tests/ssh_fixture.py: a real sshd, so the "Linux boards" are this machine)
and, for the serial tests, a RawSerialPort on the pty board stand-in (tests/serial_standin.py)
that the exporter serves with the real ser2net over RFC 2217. The artifacts are real generic
onnx-cpu artifacts of the sample; their runners really run, in real processes, over ssh.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import jsonschema  # the test extra installs it with labgrid
import pytest

from edgedeploy.report.schemas import validate
from tests.helpers import copy_artifact, run_cli
from tests.measure_helpers import FAST_SESSION_ARGS, make_artifact, write_inventory

# Short sessions, one thread per runner: the parallel figure compares like with like.
FARM_SESSION_ARGS = [*FAST_SESSION_ARGS, "--threads", "1"]


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    return make_artifact(tmp_path_factory.mktemp("farm-artifacts"), "int8-qdq")


@pytest.fixture
def artifacts(built, tmp_path) -> list[Path]:
    """Two copies (measuring writes into an artifact): two artifacts to spread over two boards."""
    return [copy_artifact(built, tmp_path / f"a{i}") for i in range(2)]


def watch_stderr(proc: subprocess.Popen, marker: str, when_seen) -> tuple[threading.Thread, list[str]]:
    """Read the command's stderr in a thread into the returned list; call `when_seen()` at each line holding `marker`."""
    seen: list[str] = []

    def read():
        for line in proc.stderr:
            seen.append(line)
            if marker in line:
                when_seen()

    reader = threading.Thread(target=read)
    reader.start()
    return reader, seen


def ssh_resource(loopback_sshd) -> dict:
    return {"NetworkService": {"address": "127.0.0.1", "username": loopback_sshd.user, "port": loopback_sshd.port}}


@pytest.fixture
def two_boards(labgrid_farm, loopback_sshd):
    """Places cpu-a and cpu-b, each a NetworkService to the loopback sshd, tagged as CPU boards."""
    labgrid_farm.start({"cpu-a": ssh_resource(loopback_sshd), "cpu-b": ssh_resource(loopback_sshd)})
    labgrid_farm.add_place("cpu-a", "cpu-a", {"board": "cpu"})
    labgrid_farm.add_place("cpu-b", "cpu-b", {"board": "cpu"})
    return labgrid_farm


def farm_inventory(tmp_path: Path, farm, loopback_sshd, **fields) -> Path:
    """A labgrid inventory entry: the coordinator, and how to log in to its SSH boards (the test's key and known_hosts)."""
    entry = {"transport": "labgrid", "coordinator": farm.url, "python": sys.executable, "ssh_options": list(loopback_sshd.ssh_options())}
    entry.update(fields)
    return write_inventory(tmp_path / "devices.json", {"farm": entry})


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("error:")]


def test_two_artifacts_measure_in_parallel_on_two_places(two_boards, loopback_sshd, artifacts, tmp_path, built):
    farm = two_boards
    inventory = farm_inventory(tmp_path, farm, loopback_sshd)
    single = copy_artifact(built, tmp_path / "single")

    started = time.monotonic()
    one = run_cli("measure", str(single), "--device", "farm", "--inventory", str(inventory), "--format", "json", *FARM_SESSION_ARGS)
    one_place_s = time.monotonic() - started
    assert one.returncode == 0, one.stderr

    started = time.monotonic()
    both = run_cli("measure", *map(str, artifacts), "--device", "farm", "--inventory", str(inventory), "--format", "json", *FARM_SESSION_ARGS)
    two_places_s = time.monotonic() - started
    assert both.returncode == 0, both.stderr
    report = json.loads(both.stdout)
    assert report["schema"] == "edgedeploy.farm-measurement/1" and report["partial"] is False and report["error"] is None
    validate(report)  # farm-measurement-1.json, closed: every field the merged report has is described
    runs = report["runs"]
    assert sorted(r["place"] for r in runs) == ["cpu-a", "cpu-b"]  # one place each
    assert [r["artifact"] for r in runs] == [str(a) for a in artifacts]
    # The two places measured at once: each run started before the other ended (the runs' own
    # unix-time windows), which holds however loaded the machine is; one after the other, the
    # windows would not meet. The wall-time ratio is a figure, printed, not asserted.
    (a_start, a_end), (b_start, b_end) = ((r["started_unix"], r["ended_unix"]) for r in runs)
    assert a_start < a_end and b_start < b_end
    assert a_start < b_end and b_start < a_end, f"the runs did not overlap: {runs[0]['place']} {a_start:.2f}-{a_end:.2f}, {runs[1]['place']} {b_start:.2f}-{b_end:.2f}"
    overlap_s = min(a_end, b_end) - max(a_start, b_start)
    print(
        f"\nfarm: one artifact on one place {one_place_s:.1f} s; two artifacts on two places {two_places_s:.1f} s ({two_places_s / one_place_s:.2f}x the one); "
        f"the two runs overlapped {overlap_s:.1f} s of {a_end - a_start:.1f} s and {b_end - b_start:.1f} s"
    )
    for run in runs:
        assert run["status"] == "measured" and run["lock_lost"] is False
        record = json.loads(Path(run["record_file"]).read_text())
        assert record["farm"]["place"] == run["place"] and record["farm"]["exporter"] == "bench1"
        assert record["farm"]["resource"] == f"bench1/{run['place']}/NetworkService/NetworkService"
        assert record["farm"]["address"] == f"{loopback_sshd.user}@127.0.0.1:{loopback_sshd.port}"
        assert record["farm"]["acquired_as"].endswith("/" + os.environ.get("LG_USERNAME", __import__("getpass").getuser()))
        for label in ("before", "after"):
            device = record["latency"][label]["scope"]["device"]
            assert device["place"] == run["place"] and device["board"]["resource"] == record["farm"]["resource"]
            assert device["hostname"]  # the board's own identity, as its runner saw it
            assert len(record["latency"][label]["sessions"]) == 3
        # A ratio only within the board: before and after of the same run.
        assert record["comparison"]["speedup"] > 0
        assert run["comparison_on_this_board"]["speedup"] == record["comparison"]["speedup"]
        folded = json.loads(Path(run["artifact"], "report.json").read_text())["measurements"][run["device"]]
        assert folded["farm"]["place"] == run["place"]
    assert report["across_boards"]["divided"] is False
    assert runs[0]["latency"]["after"]["scope"]["device"]["place"] != runs[1]["latency"]["after"]["scope"]["device"]["place"]
    assert farm.holders() == {"cpu-a": None, "cpu-b": None}  # every place released


def test_the_api_pages_farm_block_runs_on_the_farm_as_the_cli_does(two_boards, loopback_sshd, artifacts, tmp_path, monkeypatch, capfd):
    """docs/api.md's edgedeploy.measure_farm block, run as written on the loopback farm (its
    artifacts, inventory entry and session lengths swapped for the test's): the call the CLI's
    farm path makes (cli/measure_farm.py), printing nothing of its own."""
    import edgedeploy

    page = (Path(__file__).resolve().parent.parent / "docs" / "api.md").read_text()
    block = page.split("tests/test_farm_labgrid.py runs this block")[1].split("```python\n", 1)[1].split("```", 1)[0]
    swaps = {
        '["out/model/rk3588", "out/model/imx93"]': repr([str(a) for a in artifacts]),
        'device="lab"': 'device="farm"',
        "sessions=3": "sessions=3, min_duration_s=0.2, min_iterations=20, warmup=3, eval_count=100, threads=1",
    }
    code = block
    for old, new in swaps.items():
        assert old in code, old
        code = code.replace(old, new)
    monkeypatch.setenv("EDGEDEPLOY_DEVICES", str(farm_inventory(tmp_path, two_boards, loopback_sshd)))
    capfd.readouterr()
    namespace = {"edgedeploy": edgedeploy}
    exec(compile(code, "docs/api.md", "exec"), namespace)
    out, err = capfd.readouterr()
    assert err == ""  # the API prints nothing; the boards' runs report through the result
    lines = out.splitlines()
    assert lines[-1] == "False edgedeploy.farm-measurement/1"
    runs = sorted(line.split() for line in lines[:-1])
    assert [(r[0], r[1], r[3]) for r in runs] == [("cpu-a", "measured", "us"), ("cpu-b", "measured", "us")]
    assert all(float(r[2]) > 0 and Path(r[4]).is_file() and Path(r[4]).parent.parent in artifacts for r in runs)
    assert two_boards.holders() == {"cpu-a": None, "cpu-b": None}
    document = namespace["farm"].to_dict()
    validate(document)  # the API's result is the document farm-measurement-1.json describes
    assert [run["board"]["place"] for run in document["runs"]] == [run["place"] for run in document["runs"]]
    assert all(run["latency"]["after"]["scope"]["device"]["place"] == run["place"] for run in document["runs"])


def test_a_place_held_by_another_user_is_waited_for_then_one_sentence(two_boards, loopback_sshd, artifacts, tmp_path):
    farm = two_boards
    farm.hold("cpu-a", "alice")
    inventory = farm_inventory(tmp_path, farm, loopback_sshd)
    started = time.monotonic()
    proc = run_cli("measure", str(artifacts[0]), "--device", "farm", "--inventory", str(inventory), "--place", "cpu-a", "--place-wait", "3", *FARM_SESSION_ARGS)
    waited = time.monotonic() - started
    assert proc.returncode == 10  # DeviceError (edgedeploy.errors.EXIT_CODES)
    (error,) = error_lines(proc.stderr)
    assert "Traceback" not in proc.stderr and "\n" not in error
    assert "No place for" in error and "within 3 s" in error and "cpu-a is held by" in error and "/alice" in error and "nothing was measured" in error
    assert waited >= 3
    assert not (artifacts[0] / "measurements").exists()  # nothing recorded
    holders = farm.holders()
    assert holders["cpu-a"].endswith("/alice") and holders["cpu-b"] is None  # alice's hold untouched, nothing of ours left


def test_a_place_freed_while_waiting_is_taken(two_boards, loopback_sshd, artifacts, tmp_path):
    farm = two_boards
    farm.hold("cpu-a", "alice")
    inventory = farm_inventory(tmp_path, farm, loopback_sshd, place="cpu-a")
    argv = [sys.executable, "-m", "edgedeploy", "measure", str(artifacts[0]), "--device", "farm", "--inventory", str(inventory), "--format", "json", "--place-wait", "60", *FARM_SESSION_ARGS]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stderr_lines = []
    # Alice releases the place 1.5 s after the measure says it waits (not after a fixed delay
    # from the start: on a busy machine the CLI may take longer than that to get there).
    for line in proc.stderr:
        stderr_lines.append(line)
        if "waiting up to 60 s" in line:
            threading.Timer(1.5, farm.release, args=("cpu-a", "alice")).start()
            break
    stdout, rest = proc.communicate(timeout=600)
    stderr = "".join(stderr_lines) + rest
    assert proc.returncode == 0, stderr
    (run,) = json.loads(stdout)["runs"]
    assert run["place"] == "cpu-a" and run["status"] == "measured" and run["waited_s"] >= 1.0
    assert "waiting up to 60 s" in stderr
    assert farm.holders()["cpu-a"] is None


def test_no_fitting_place_and_no_coordinator_are_one_sentence(two_boards, loopback_sshd, artifacts, tmp_path):
    farm = two_boards
    inventory = farm_inventory(tmp_path, farm, loopback_sshd)
    proc = run_cli("measure", str(artifacts[0]), "--device", "farm", "--inventory", str(inventory), "--place", "esp-*")
    (error,) = error_lines(proc.stderr)
    assert proc.returncode == 10 and "No place on the labgrid farm" in error and "cpu-a (board=cpu; NetworkService)" in error
    closed = f"labgrid://127.0.0.1:{farm.port + 1 if farm.port < 65535 else farm.port - 1}"
    proc = run_cli("measure", str(artifacts[0]), "--farm", closed, *FARM_SESSION_ARGS)
    (error,) = error_lines(proc.stderr)
    assert proc.returncode == 10 and "labgrid coordinator at 127.0.0.1:" in error and "Traceback" not in proc.stderr
    proc = run_cli("measure", str(artifacts[0]), "--farm", "http://example.invalid")
    assert proc.returncode == 2 and "is not a labgrid coordinator" in proc.stderr
    proc = run_cli("measure", *map(str, artifacts), "--device", "local")
    assert proc.returncode == 2 and "on a labgrid farm (--farm)" in proc.stderr
    assert farm.holders() == {"cpu-a": None, "cpu-b": None}


def test_coordinator_killed_mid_run_keeps_partial_results_and_restart_frees_places(two_boards, loopback_sshd, artifacts, tmp_path):
    """Two artifacts, one board at a time: the coordinator is SIGKILLed while the first runs."""
    farm = two_boards
    farm.wait_saved(["cpu-a", "cpu-b"])  # places a farm has had for a while; holds are never saved
    inventory = farm_inventory(tmp_path, farm, loopback_sshd)
    argv = [sys.executable, "-m", "edgedeploy", "measure", *map(str, artifacts), "--device", "farm", "--inventory", str(inventory), "--format", "json", "--parallel", "1", *FARM_SESSION_ARGS]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    reader, seen = watch_stderr(proc, "after session 1/3", farm.kill_coordinator)
    out = proc.stdout.read()
    proc.wait(300)
    reader.join(10)
    stderr = "".join(seen)
    assert proc.returncode == 10, stderr
    (error,) = error_lines(stderr)
    assert "The labgrid coordinator at 127.0.0.1:" in error and "was lost" in error
    assert "1 of 2 artifact(s) have results, kept and marked partial" in error and "1 were not started" in error
    assert "Traceback" not in stderr
    report = json.loads(out)
    validate(report)  # a partial report too: a run marked lock_lost, one not started
    first, second = report["runs"]
    assert report["partial"] is True and report["farm"]["coordinator_lost"] is True
    assert first["status"] == "partial" and first["lock_lost"] is True
    record = json.loads(Path(first["record_file"]).read_text())
    assert record["partial"] is True and record["farm"]["lock_lost"] is True and "no longer reserved" in record["error"]
    assert len(record["latency"]["after"]["sessions"]) == 3  # the run in progress finished; its figures are kept
    assert second["status"] == "not started" and second["record_file"] is None
    assert not (artifacts[1] / "measurements").exists()
    # The coordinator comes back (as its service manager would start it): no place is held.
    farm.restart()
    assert farm.holders() == {"cpu-a": None, "cpu-b": None}


def _sigint_as_from_a_terminal() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_interrupt_stops_the_boards_runs_and_releases_the_places(two_boards, loopback_sshd, artifacts, tmp_path, sig):
    farm = two_boards
    inventory = farm_inventory(tmp_path, farm, loopback_sshd)
    argv = [sys.executable, "-m", "edgedeploy", "measure", *map(str, artifacts), "--device", "farm", "--inventory", str(inventory), *FARM_SESSION_ARGS]
    # The command runs as from a terminal, where Ctrl-C is not ignored. A test suite started in the
    # background (`bash .ci/run &`) has SIGINT ignored, every child inherits that, and Python then
    # installs no KeyboardInterrupt handler: the command rightly went on and exited 0.
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=_sigint_as_from_a_terminal)
    running = threading.Event()
    reader, seen = watch_stderr(proc, "session 1/3", running.set)
    assert running.wait(120), "".join(seen)
    assert set(farm.holders().values()) != {None}  # we hold places now
    proc.send_signal(sig)
    proc.wait(60)
    reader.join(10)
    stderr = "".join(seen)
    assert proc.returncode == 130, stderr
    (error,) = error_lines(stderr)
    assert error.startswith("error: Interrupted: the farm runs were stopped, place(s)") and "released" in error and "Traceback" not in stderr
    assert farm.holders() == {"cpu-a": None, "cpu-b": None}
    # No child measure and no runner on the "boards" outlives the command.
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and loopback_sshd.wait_for_remote_process("runner.py", timeout_s=0.1) is not None:
        time.sleep(0.5)
    assert loopback_sshd.wait_for_remote_process("runner.py", timeout_s=0.1) is None
    children = subprocess.run(["pgrep", "-f", f"edgedeploy measure {artifacts[0]}"], capture_output=True, text=True).stdout.split()
    assert children == []


@pytest.mark.toolchain("espdl")
def test_a_serial_board_and_a_linux_board_in_one_run(labgrid_farm, loopback_sshd, board, built, esp32s3_sample_build, tmp_path):
    """An ESP32-S3 artifact goes to the place tagged chip=esp32s3 (its serial port, served by the
    exporter's ser2net over RFC 2217, read by the serial transport), a generic one to a Linux
    board (NetworkService, ssh transport), both at once; the board is the pty STAND-IN."""
    from tests.labgrid_fixture import require_ser2net
    from tests.serial_standin import BOOT, DONE
    from tests.test_serial_measure_cli import Firmware

    require_ser2net()
    farm = labgrid_farm
    farm.start({"cpu-a": ssh_resource(loopback_sshd), "esp-a": {"RawSerialPort": {"port": board.port, "speed": 115200}}})
    farm.add_place("cpu-a", "cpu-a", {"board": "cpu"})
    farm.add_place("esp-a", "esp-a", {"chip": "esp32s3", "devkit": "esp32_s3_devkitc_1"})
    esp = copy_artifact(esp32s3_sample_build, tmp_path / "esp")
    generic = copy_artifact(built, tmp_path / "generic")
    fw = Firmware(esp)
    board.play([BOOT, fw.start(), fw.result(0, 1480.0), 0.2, fw.result(1, 1510.0), fw.result(2, 1495.0), DONE], settle_s=2.0)
    inventory = farm_inventory(tmp_path, farm, loopback_sshd)
    proc = run_cli("measure", str(esp), str(generic), "--device", "farm", "--inventory", str(inventory), "--format", "json", "--flash", "none", "--timeout", "60", *FARM_SESSION_ARGS)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    serial_run, ssh_run = report["runs"]
    assert (serial_run["place"], serial_run["transport"], serial_run["chip"]) == ("esp-a", "serial", "esp32s3")
    assert (ssh_run["place"], ssh_run["transport"], ssh_run["chip"]) == ("cpu-a", "ssh", None)
    record = json.loads(Path(serial_run["record_file"]).read_text())
    assert record["partial"] is False and len(record["latency"]["after"]["sessions"]) == 3
    assert record["latency"]["after"]["summary"]["median_us"] == 1495.0
    scope_device = record["latency"]["after"]["scope"]["device"]
    assert scope_device["place"] == "esp-a" and scope_device["board"]["serial_path_on_exporter"] == board.port
    assert scope_device["port"].startswith("rfc2217://127.0.0.1:")
    assert record["farm"]["tags"] == {"chip": "esp32s3", "devkit": "esp32_s3_devkitc_1"}
    assert "--sessions" not in " ".join(record.get("settings", {}).keys())  # runner options went to the Linux board only
    assert ssh_run["status"] == "measured" and ssh_run["latency"]["after"]["sessions"] == 3
    assert farm.holders() == {"cpu-a": None, "esp-a": None}


def test_a_board_that_fails_ends_in_one_sentence_and_its_place_is_released(two_boards, loopback_sshd, artifacts, tmp_path):
    """The board's host key is not known: the run on it fails (ssh refuses), the place is still released."""
    farm = two_boards
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    options = [o if not o.startswith("UserKnownHostsFile=") else f"UserKnownHostsFile={empty}" for o in loopback_sshd.ssh_options()]
    inventory = farm_inventory(tmp_path, farm, loopback_sshd, ssh_options=options, place="cpu-b")
    proc = run_cli("measure", str(artifacts[0]), "--device", "farm", "--inventory", str(inventory), "--format", "json", *FARM_SESSION_ARGS)
    assert proc.returncode == 10
    (error,) = error_lines(proc.stderr)
    assert "not in known_hosts" in error and "Traceback" not in proc.stderr
    report = json.loads(proc.stdout)
    validate(report)  # a failed run: no latency, its board's record kept
    (run,) = report["runs"]
    assert run["place"] == "cpu-b" and run["status"] == "failed"
    record = json.loads(Path(run["record_file"]).read_text())  # measure's own record of the failure, with the place
    assert record["partial"] is True and record["latency"]["after"] is None and record["farm"]["place"] == "cpu-b"
    assert farm.holders() == {"cpu-a": None, "cpu-b": None}
