"""`TARGET.measure_serial` (targets/espdl/board.py): flashing decisions and the device section.

The board is again a STAND-IN on the far end of a real pty (the `board` fixture of
tests/serial_standin.py): it prints what edgedeploy's harness prints. Flashing is tested up to the commands it would run, because
this machine has neither ESP-IDF nor a board; the test that needs both is marked `hardware`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from edgedeploy.devices import Device
from edgedeploy.errors import ArtifactError, DeviceError, ToolchainMissing
from edgedeploy.targets.espdl import TARGET
from edgedeploy.targets.espdl import board as espdl_board
from tests.serial_standin import BOOT, DONE, START, result_line

SHA = "20e5b308"


def manifest(chip="esp32s3", sha=SHA):
    return {"model": {"sha256": sha}, "target": {"chip": chip}}


def device(port, chip="esp32s3"):
    return Device(name="bench-s3", chip=chip, transport="serial", serial_port=port)


def line_for(session, sha=SHA, mean=1500.0):
    raw = json.loads(result_line(session, mean)[len(b"EDGEDEPLOY ") :])
    raw["scope"].update(model_sha256=sha, espdl_model_sha256=sha)
    return b"EDGEDEPLOY " + json.dumps(raw).encode() + b"\r\n"


def test_measure_on_board_reads_the_stand_in_and_summarises(tmp_path, board):
    board.play([BOOT, START, line_for(0, mean=1500.0), line_for(1, mean=1520.0), line_for(2, mean=1490.0), DONE])
    messages = []
    section = TARGET.measure_serial(tmp_path / "artifact", manifest(), device(board.port), flash="none", timeout_s=10, echo=messages.append)
    assert section["complete"] and not section["partial"] and section["error"] is None
    assert section["sessions_read"] == section["sessions_expected"] == 3
    assert section["latency_us_range_across_sessions"]["mean"] == [1490.0, 1520.0]
    assert section["outputs_match"] is True
    assert section["scope"]["model_sha256"] == SHA and section["scope"]["device"] == "bench-s3"
    assert section["flashing"]["flashed_with"] is None
    assert any("RESET" in m for m in messages)  # a pty has no RTS line


def test_firmware_of_another_model_is_refused(tmp_path, board):
    board.play([BOOT, START, line_for(0, sha="ffff0000"), line_for(1, sha="ffff0000"), line_for(2, sha="ffff0000"), DONE])
    section = TARGET.measure_serial(tmp_path / "a", manifest(), device(board.port), flash="none", timeout_s=10, echo=lambda m: None)
    assert section["sessions"] == [] and not section["complete"]
    assert "another model" in section["error"]


def test_a_reset_mid_run_keeps_the_partial_figures(tmp_path, board):
    board.play([BOOT, START, line_for(0), b"Brownout detector was triggered\r\n", BOOT])
    section = TARGET.measure_serial(tmp_path / "a", manifest(), device(board.port), flash="none", timeout_s=10, echo=lambda m: None)
    assert section["partial"] and section["sessions_read"] == 1
    assert "reset during the run" in section["error"] and "Brownout" in section["error"]
    assert section["reset_reason"] == "0x1 (POWERON)"


def test_wrong_chip_or_missing_port(tmp_path):
    with pytest.raises(ArtifactError, match="built for esp32s3"):
        TARGET.measure_serial(tmp_path, manifest(), device("/dev/null", chip="esp32p4"), flash="none")
    with pytest.raises(DeviceError, match="no serial port"):
        TARGET.measure_serial(tmp_path, manifest(), Device(name="x", chip="esp32s3", transport="serial"), flash="none")


def test_find_idf_from_path_or_idf_path(tmp_path):
    assert espdl_board.find_idf({}, which=lambda name: None) is None
    found = espdl_board.find_idf({"IDF_PATH": "/opt/esp-idf"}, which=lambda name: "/opt/esp-idf/tools/idf.py" if name == "idf.py" else None)
    assert found.command == ("/opt/esp-idf/tools/idf.py",)
    idf = tmp_path / "esp-idf"
    (idf / "tools").mkdir(parents=True)
    (idf / "tools" / "idf.py").write_text("")
    found = espdl_board.find_idf({"IDF_PATH": str(idf), "IDF_PYTHON_ENV_PATH": "/envs/idf5.4"}, which=lambda name: None)
    assert found.command == ("/envs/idf5.4/bin/python", str(idf / "tools" / "idf.py"))


def test_idf_commands_set_target_once_then_build_and_flash(tmp_path):
    idf = espdl_board.IdfInstall(("idf.py",), None)
    cmds = espdl_board.idf_commands(idf, tmp_path, tmp_path / "build", "esp32p4", "/dev/ttyUSB0")
    assert [c[-1] for c in cmds] == ["esp32p4", "build", "flash"]
    assert cmds[0][-2] == "set-target" and cmds[2][cmds[2].index("-p") + 1] == "/dev/ttyUSB0"
    (tmp_path / "sdkconfig").write_text("")
    assert [c[-1] for c in espdl_board.idf_commands(idf, tmp_path, tmp_path / "build", "esp32p4", "/dev/ttyUSB0")] == ["build", "flash"]


def test_idf_required_but_missing_is_one_clear_error(tmp_path, monkeypatch):
    monkeypatch.setattr(espdl_board, "find_idf", lambda: None)
    with pytest.raises(ToolchainMissing, match="ESP-IDF"):
        TARGET.measure_serial(tmp_path, manifest(), device("/dev/null"), flash="idf")


def test_prebuilt_firmware_must_come_from_this_artifact(tmp_path):
    artifact = tmp_path / "artifact"
    (artifact / "firmware" / "main").mkdir(parents=True)
    (artifact / "model.espdl").write_bytes(b"EDL2 ours")
    build_dir = tmp_path / "build"
    build_dir.mkdir()
    project = tmp_path / "user-project"
    (project / "main").mkdir(parents=True)
    (project / "main" / "model.espdl").write_bytes(b"EDL2 another model")
    (build_dir / "project_description.json").write_text(json.dumps({"project_path": str(project)}))
    with pytest.raises(DeviceError, match="built with another model.espdl"):
        espdl_board.check_prebuilt_matches(build_dir, artifact)
    (project / "main" / "model.espdl").write_bytes(b"EDL2 ours")
    espdl_board.check_prebuilt_matches(build_dir, artifact)
    with pytest.raises(DeviceError, match="no flash_args"):
        espdl_board.prebuilt_flash_command(("esptool.py",), build_dir, "esp32s3", "/dev/ttyUSB0")
    (build_dir / "flash_args").write_text("0x0 bootloader/bootloader.bin\n")
    cmd = espdl_board.prebuilt_flash_command(("esptool.py",), build_dir, "esp32s3", "/dev/ttyUSB0")
    assert cmd[-2:] == ["write_flash", "@flash_args"] and cmd[cmd.index("--chip") + 1] == "esp32s3"


@pytest.mark.hardware("ESP32-S3 dev kit on a serial port")
def test_real_board_end_to_end(tmp_path):
    """On a real ESP32-S3-DevKitC-1 with ESP-IDF installed: build the sample, flash, measure.

    Set EDGEDEPLOY_HARDWARE='ESP32-S3 dev kit on a serial port' and EDGEDEPLOY_ESP32S3_PORT.
    """
    from edgedeploy.artifacts import read_manifest

    port = os.environ["EDGEDEPLOY_ESP32S3_PORT"]
    proc = subprocess.run([sys.executable, "-m", "edgedeploy", "build", "--target", "esp32s3", "--out", str(tmp_path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    artifact = tmp_path / "mnist_cnn" / "esp32s3"
    section = TARGET.measure_serial(artifact, read_manifest(artifact), device(port), flash="idf", timeout_s=300)
    assert section["complete"] and section["outputs_match"] is True
    assert section["sessions_read"] == 3


def test_espdl_runs_as_firmware_over_serial_not_as_a_runner(tmp_path):
    """ESP-DL declares serial measurement and no runner; measure says so for a non-serial device."""
    from edgedeploy.devices import local_device
    from edgedeploy.pipeline.measure import MeasureRequest, _runner_specs
    from edgedeploy.targets.base import Capability

    assert Capability.SERIAL in TARGET.capabilities and Capability.RUNNER not in TARGET.capabilities
    with pytest.raises(DeviceError, match="run as firmware"):
        _runner_specs(tmp_path, manifest(), {"model": {}}, local_device(), MeasureRequest(tmp_path, local_device()), tmp_path)
