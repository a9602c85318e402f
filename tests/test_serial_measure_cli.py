"""`edgedeploy measure ARTIFACT --device esp32s3@<pty> --flash none`, end to end, over a real pty.

The artifact is a real esp32s3 build of the sample (esp-ppq in the espdl environment); the
command runs in its own process and opens the pseudo-terminal's slave end with pyserial. The
other end of the pty is a STAND-IN FOR THE BOARD (tests/serial_standin.py, the `board` fixture): it
prints what the generated firmware prints (its result lines are built from the scope the
artifact's own firmware header defines, as app_main.cpp does), plus garbage, split lines, a
reset mid-run and a disconnect. We have no board here; this proves the host side of `measure`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from edgedeploy.artifacts import check_manifest, read_manifest
from tests.helpers import copy_artifact, run_cli
from tests.serial_standin import BOOT, DONE, PANIC, result_line

pytestmark = pytest.mark.toolchain("espdl")


@pytest.fixture
def artifact(esp32s3_sample_build, tmp_path) -> Path:
    """A fresh copy per test: measuring writes into the artifact."""
    return copy_artifact(esp32s3_sample_build, tmp_path)


class Firmware:
    """What this artifact's firmware prints (firmware/espdl/main/app_main.cpp), from its generated header."""

    def __init__(self, artifact: Path, sha: str | None = None):
        header = (artifact / "firmware" / "main" / "edgedeploy_model.h").read_text()
        literal = re.search(r'^#define EDGEDEPLOY_SCOPE_JSON (".*")$', header, flags=re.M).group(1)
        self.scope = json.loads(json.loads(literal))  # a C string literal of JSON, JSON-compatible escapes
        self.sha = sha or self.scope["model_sha256"]
        self.sessions = int(re.search(r"^#define EDGEDEPLOY_SESSIONS (\d+)$", header, flags=re.M).group(1))

    def start(self) -> bytes:
        return f"edgedeploy: harness start, model {self.sha}, chip esp32s3, {self.sessions} sessions, boot 1a2b3c4d\r\n".encode()

    def result(self, index: int, median_us: float) -> bytes:
        """The stand-in's result line with this firmware's scope (as runtime_scope() extends it) and heap."""
        line = json.loads(result_line(index, median_us)[len(b"EDGEDEPLOY ") :])
        line["scope"] = dict(self.scope, model_sha256=self.sha, cpu_freq_mhz=240, idf_version="v5.4.1", espdl_model_sha256=self.sha)
        line.update(sessions=self.sessions, heap={"free_internal_bytes": 310_000, "free_psram_bytes": 7_900_000})
        return b"EDGEDEPLOY " + json.dumps(line, separators=(",", ":")).encode() + b"\n"


def measurement_files(artifact: Path) -> list[Path]:
    return sorted((artifact / "measurements").glob("*.json")) if (artifact / "measurements").exists() else []


def test_measure_reads_the_board_and_writes_the_report(artifact, board):
    fw = Firmware(artifact)
    line0 = fw.result(0, 1480.0)
    board.play(
        [
            b"\x00\xff\xfe garbage at the wrong baud\r\n",
            BOOT,
            b"I (400) dl::Model: model:main_graph, version:0\r\n",
            fw.start(),
            line0[:25],  # a result line split across writes
            0.05,
            line0[25:],
            b"W (900) noise: EDGEDEPLOY {\"schema\": \"edgedeploy.run/1\", broken\r\n",  # a corrupted line: skipped
            b"\xff" + fw.result(1, 1510.0),
            fw.result(2, 1495.0),
            DONE,
        ]
    )
    device = f"esp32s3@{board.port}"
    proc = run_cli("measure", str(artifact), "--device", device, "--flash", "none", "--timeout", "30", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    record = json.loads(proc.stdout)
    assert "press the board's RESET button" in proc.stderr  # a pty has no RTS line

    assert record["schema"] == "edgedeploy.measurement/1" and record["partial"] is False and record["error"] is None
    after = record["latency"]["after"]
    assert set(record["latency"]) == {"after"}  # a board runs no ONNX Runtime baseline
    assert [s["session"] for s in after["sessions"]] == [1, 2, 3]
    assert [s["firmware_session_index"] for s in after["sessions"]] == [0, 1, 2]
    summary = after["summary"]
    assert summary["median_us"] == 1495.0 and summary["session_median_range_us"] == [1480.0, 1510.0]
    assert summary["sessions"] == 3 and summary["iterations_per_session"] == [800, 800, 800]

    scope = after["scope"]
    manifest = read_manifest(artifact)
    assert scope["model"]["sha256"] == manifest["model"]["sha256"] == fw.sha
    assert scope["chip"] == "esp32s3" and scope["device"]["chip"] == "esp32s3" and scope["device"]["port"] == board.port
    assert scope["precision"] == "int8" and scope["backend"] == "esp-dl" and scope["batch"] == 1
    assert scope["input_shapes"] == {"input": [1, 1, 28, 28]}
    assert scope["inputs"] == "on-device, embedded test input"
    assert scope["backend_version"] == scope["firmware"]["esp_dl_version"] == fw.scope["esp_dl_version"]
    assert scope["firmware"]["idf_version"] == "v5.4.1" and scope["firmware"]["flashed_with"] is None
    # The protocol is what the artifact's firmware was generated with, read from its header.
    assert after["protocol"]["sessions"] == fw.sessions and after["protocol"]["warmup"] == 10
    assert record["output_check"] == {"outputs_match": True, "per_session": [True, True, True], "scope": record["output_check"]["scope"]}
    assert "never divided" in record["comparison"]["refused"] and record["comparison"]["speedup"] is None
    assert record["settings"]["flash"] == "none" and record["board"]["flashing"]["flashed_with"] is None

    files = measurement_files(artifact)
    assert len(files) == 1 and json.loads(files[0].read_text())["latency"]["after"]["summary"] == summary
    report = json.loads((artifact / "report.json").read_text())
    stored = report["measurements"][device]
    assert stored["file"] == f"measurements/{files[0].name}" and stored["latency"]["after"]["summary"] == summary
    check_manifest(artifact, "esp32s3")  # report.json rewritten, its manifest entry refreshed: still intact


def test_a_reset_mid_run_keeps_the_sessions_read_marked_partial(artifact, board):
    fw = Firmware(artifact)
    board.play([BOOT, fw.start(), fw.result(0, 1500.0), fw.result(1, 1502.0), 0.1, PANIC])
    proc = run_cli("measure", str(artifact), "--device", f"esp32s3@{board.port}", "--flash", "none", "--timeout", "30")
    assert proc.returncode != 0
    errors = [l for l in proc.stderr.splitlines() if l.startswith("error:")]
    assert len(errors) == 1, proc.stderr
    assert "reset during the run" in errors[0] and "RTC_SW_CPU_RST" in errors[0] and "Guru Meditation" in errors[0]
    (path,) = measurement_files(artifact)
    assert f"the 2 session(s) read so far are kept in {path}, marked partial" in errors[0]
    record = json.loads(path.read_text())
    assert record["partial"] is True and len(record["latency"]["after"]["sessions"]) == 2
    assert record["board"]["reset_reason"] == "0xc (RTC_SW_CPU_RST)"
    # The terminal view was still printed, saying PARTIAL, with the figures and their scope.
    assert "PARTIAL:" in proc.stdout and "inputs: on-device, embedded test input" in proc.stdout
    assert json.loads((artifact / "report.json").read_text())["measurements"][f"esp32s3@{board.port}"]["partial"] is True


def test_a_disconnect_through_an_inventory_device_keeps_what_was_read(artifact, board, tmp_path):
    fw = Firmware(artifact)
    inventory = tmp_path / "devices.json"
    inventory.write_text(json.dumps({"devices": {"bench-s3": {"chip": "esp32s3", "transport": "serial", "serial_port": board.port}}}))
    board.play([BOOT, fw.start(), fw.result(0, 1500.0), fw.result(1, 1500.0)[:50], 0.2, "close"])
    proc = run_cli("measure", str(artifact), "--device", "bench-s3", "--inventory", str(inventory), "--flash", "none", "--timeout", "30")
    assert proc.returncode != 0
    (path,) = measurement_files(artifact)
    assert f"The serial port {board.port} disconnected" in proc.stderr and str(path) in proc.stderr
    record = json.loads(path.read_text())
    assert record["partial"] is True and len(record["latency"]["after"]["sessions"]) == 1
    assert record["device"]["name"] == "bench-s3" and "bench-s3" in json.loads((artifact / "report.json").read_text())["measurements"]


@pytest.mark.parametrize(
    "script, messages",
    [
        (lambda fw: [b"\x8f\x8f garbage\r\n", BOOT, b"I (500) app: hello world\r\n"], ("never started",)),
        (lambda fw: [BOOT, fw.start(), 0.3, "close"], ("disconnected", "after 0 of 3 sessions.")),
    ],
    ids=["no-harness", "disconnect-before-any-result"],
)
def test_no_session_read_is_one_error_and_writes_nothing(artifact, board, script, messages):
    report_before = (artifact / "report.json").read_bytes()
    board.play(script(Firmware(artifact)))
    proc = run_cli("measure", str(artifact), "--device", f"esp32s3@{board.port}", "--flash", "none", "--timeout", "3")
    assert proc.returncode != 0
    errors = [l for l in proc.stderr.splitlines() if l.startswith("error:")]
    assert len(errors) == 1 and all(m in errors[0] for m in messages), proc.stderr
    assert "kept" not in proc.stderr and "Traceback" not in proc.stderr
    assert measurement_files(artifact) == [] and (artifact / "report.json").read_bytes() == report_before


def test_firmware_of_another_model_is_refused(artifact, board):
    other = Firmware(artifact, sha="f" * 64)
    board.play([BOOT, other.start(), other.result(0, 900.0), other.result(1, 900.0), other.result(2, 900.0), DONE])
    proc = run_cli("measure", str(artifact), "--device", f"esp32s3@{board.port}", "--flash", "none", "--timeout", "20")
    assert proc.returncode != 0 and "another model" in proc.stderr
    assert measurement_files(artifact) == []


def test_options_that_do_not_apply_and_wrong_chips(artifact):
    from edgedeploy.cli import cli

    proc = run_cli("measure", str(artifact), "--device", "esp32s3@/dev/ttyUSB9", "--warmup", "5", "--threads", "2")
    assert proc.returncode != 0 and proc.stderr.startswith("error: --warmup, --threads do not apply to the board"), proc.stderr
    runner = CliRunner()

    def error_of(*args: str) -> str:
        result = runner.invoke(cli, ["measure", str(artifact), *args])
        assert result.exit_code != 0
        return str(result.exception)

    assert "--flash applies only to boards on a serial port" in error_of("--device", "local", "--flash", "idf")
    assert "built for esp32s3, not esp32p4" in error_of("--device", "esp32p4@/dev/ttyUSB9", "--flash", "none")
    assert "CHIP@PORT" in error_of("--device", "nosuchboard")
    assert "Cannot open the serial port /dev/edgedeploy-no-such-tty" in error_of("--device", "esp32s3@/dev/edgedeploy-no-such-tty", "--flash", "none")
    assert measurement_files(artifact) == []


def test_a_target_without_board_firmware_says_so():
    from edgedeploy.errors import NotAvailableYet
    from edgedeploy.targets import find_chip

    target, _ = find_chip("jetson-agx-orin")
    with pytest.raises(NotAvailableYet, match="Measuring over a serial port is not available"):
        target.measure_serial(Path("artifact"), {}, None)
