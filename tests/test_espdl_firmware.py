"""The firmware harness compiled on the host against a STAND-IN for ESP-IDF and esp-dl.

We cannot build Xtensa/RISC-V firmware here (no ESP-IDF). What we can check: the generated
edgedeploy_model.h and the hand-written harness are valid C++ together (also for a model whose
names are hostile), both model locations compile, and the lines the harness prints are what
the host's serial reader and measure/protocol.py parse, with the model's names intact. The
stand-in (tests/espdl_host_stub, see its README) implements the few ESP-IDF/esp-dl functions the
harness calls trivially on the host; the figures it produces mean nothing about a board.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
from pathlib import Path

import pytest

from edgedeploy.devices.serial import SerialConsole, read_sessions
from edgedeploy.measure.protocol import parse_result_lines
from edgedeploy.model import load_model
from edgedeploy.targets.espdl import TARGET
from edgedeploy.targets.espdl import codegen
from tests.espdl_models import make_hostile_model

STUB = Path(__file__).parent / "espdl_host_stub"
CXX = shutil.which("g++") or shutil.which("c++")
pytestmark = pytest.mark.skipif(CXX is None, reason="needs a host C++ compiler (g++) to compile the harness against the stand-in")


@pytest.fixture(scope="module")
def hostile_model(tmp_path_factory):
    path, _, names = make_hostile_model(tmp_path_factory.mktemp("model"))
    return load_model(path, {}, require_static=True), names


def build_harness(tmp_path: Path, model, chip_id: str, model_bytes: int) -> Path:
    espdl = tmp_path / "model.espdl"
    espdl.write_bytes(b"EDL2" + bytes(model_bytes - 4))
    project = tmp_path / "firmware"
    codegen.generate_project(project, espdl, TARGET.chip(chip_id), model, "int8", [])
    binary = tmp_path / "harness"
    cmd = [CXX, "-std=c++17", "-O1", "-Wall", "-Wextra", "-Werror", "-Wno-unused-parameter", "-I", str(project / "main"), "-I", str(STUB), str(project / "main" / "app_main.cpp"), str(STUB / "stub_runtime.cpp"), "-o", str(binary)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr
    return binary


@pytest.fixture(scope="module")
def s3_rodata(tmp_path_factory, hostile_model):
    return build_harness(tmp_path_factory.mktemp("s3"), hostile_model[0], "esp32s3", 4096)


@pytest.fixture(scope="module")
def p4_partition(tmp_path_factory, hostile_model):
    return build_harness(tmp_path_factory.mktemp("p4"), hostile_model[0], "esp32p4", codegen.EMBED_MAX_BYTES + 1)


def run_harness(binary: Path, model, **env) -> subprocess.CompletedProcess:
    environ = dict(os.environ, STAND_IN_MODEL_SHA256=model.sha256, **env)
    # stdin closed: the harness's evaluation loop then finds nothing to read and the stand-in ends.
    return subprocess.run([str(binary)], capture_output=True, timeout=60, env=environ, stdin=subprocess.DEVNULL)


def test_harness_prints_protocol_lines_that_survive_the_serial_reader(s3_rodata, hostile_model):
    model, names = hostile_model
    proc = run_harness(s3_rodata, model)
    assert proc.returncode == 0, proc.stderr
    assert b"model from rodata, magic EDL2" in proc.stderr

    # Play what the harness printed through a real pty, as a board's console would carry it.
    master, slave = os.openpty()
    port = os.ttyname(slave)
    try:
        with SerialConsole(port) as console:
            def board():
                import termios
                import time

                while termios.tcgetattr(slave)[3] & termios.ICANON:
                    time.sleep(0.01)
                time.sleep(0.2)
                os.write(master, b"ESP-ROM:esp32s3-20210327\r\nrst:0x1 (POWERON),boot:0x8 (SPI_FAST_FLASH_BOOT)\r\n")
                os.write(master, proc.stdout.replace(b"\n", b"\r\n"))

            player = threading.Thread(target=board, daemon=True)
            player.start()
            run = read_sessions(console, timeout_s=20)
            player.join(5)
    finally:
        os.close(master)
        os.close(slave)
    assert run.error is None, run.error
    assert run.complete and len(run.results) == codegen.SESSIONS_PER_BOOT
    for index, result in enumerate(run.results):
        assert result["schema"] == "edgedeploy.run/1" and result["session"] == index
        latency = result["latency_us"]
        assert set(latency) >= {"min", "mean", "p50", "p90", "p99", "max", "count"}
        assert latency["min"] <= latency["p50"] <= latency["p90"] <= latency["p99"] <= latency["max"]
        assert latency["count"] == result["iterations"] >= codegen.MIN_ITERATIONS
        assert result["warmup"] == codegen.WARMUP_RUNS
        assert result["outputs_match"] is True and result["test_status"] == "ESP_OK"
        assert result["free_heap_bytes"] > 0 and result["heap"]["free_psram_bytes"] > 0
        scope = result["scope"]
        # The hostile input name went through Jinja2, a C literal, the compiler and printf intact.
        assert scope["input_shapes"] == {names["input"]: [1, 1, 8, 8]}
        assert scope["model_sha256"] == scope["espdl_model_sha256"] == model.sha256
        assert scope["chip"] == "esp32s3" and scope["cpu_freq_mhz"] == 240 and scope["precision"] == "int8"
    # The generic protocol parser reads the same lines from the raw output.
    assert len(parse_result_lines(proc.stdout.decode())) == codegen.SESSIONS_PER_BOOT


def test_a_failed_on_board_check_is_reported(p4_partition, hostile_model):
    model, _ = hostile_model
    proc = run_harness(p4_partition, model, STAND_IN_TEST_FAILS="1")
    results = parse_result_lines(proc.stdout.decode())
    assert results and all(r["outputs_match"] is False and r["test_status"] == "ESP_FAIL" for r in results)
    assert results[0]["scope"]["chip"] == "esp32p4"


def test_the_partition_variant_compiles_and_loads_by_label(p4_partition, hostile_model):
    model, _ = hostile_model
    proc = run_harness(p4_partition, model)
    assert proc.returncode == 0
    assert b"model from partition model, param_copy 1" in proc.stderr
    assert parse_result_lines(proc.stdout.decode())[0]["scope"]["model_location"] == "flash_partition"
