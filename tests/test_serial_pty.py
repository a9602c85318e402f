"""The serial transport over a real pseudo-terminal pair.

The host side is the real code (pyserial opening the pty's slave end by name, the line
splitter, the session reader). The other end of the pty is a STAND-IN FOR THE BOARD: a thread
that writes, with pauses, what an ESP32 running edgedeploy's harness prints on its console
(ROM banner, bootloader and esp-dl logs, the harness's start line, result lines, the done line),
plus what real serial lines add: garbage bytes, lines split across writes, a reset mid-run, a
disconnect. We have no board here; these tests prove the host side, not the firmware.
"""

from __future__ import annotations

import time

import pytest

from edgedeploy.devices.serial import LineSplitter, SerialConsole, measure_serial, read_sessions
from edgedeploy.errors import DeviceError
from edgedeploy.measure.protocol import parse_result_lines
from tests.serial_standin import BOOT, DONE, PANIC, START, result_line

# The `board` fixture (a BoardStandIn) comes from tests/serial_standin.py.


def test_line_splitter_joins_partial_lines_and_survives_garbage():
    splitter = LineSplitter(max_line_bytes=64)
    assert splitter.feed(b"EDGEDEPLOY {\"a\":") == []
    assert splitter.pending() == 'EDGEDEPLOY {"a":'
    assert splitter.feed(b"1}\r\nnext") == ['EDGEDEPLOY {"a":1}']
    lines = splitter.feed(b"\xff\xfe\x00junk\n")
    assert lines == ["next\ufffd\ufffd\x00junk"]
    # A runaway line without a newline is cut, not buffered forever.
    assert len(splitter.feed(b"x" * 200)) == 3


def test_reads_every_session_through_garbage_and_split_lines(board):
    line1, line2, line3 = result_line(0, 1200.0), result_line(1, 1210.0), result_line(2, 1190.0)
    board.play(
        [
            0.1,
            b"\x00\xff\xfe\x1b[0;32m\x8f\x8f garbage at the wrong baud\r\n",
            BOOT,
            b"I (400) dl::Model: model:main_graph, version:0\r\n",
            START,
            line1[:17],  # a result line split across three writes
            0.05,
            line1[17:60],
            0.05,
            line1[60:],
            b"W (900) noise: EDGEDEPLOY {\"schema\": \"edgedeploy.run/1\", broken\r\n",  # a corrupted line
            line2.replace(b"\r\n", b"\n"),
            b"\xff\xff" + line3,  # garbage before the prefix on the same line
            DONE,
        ]
    )
    with SerialConsole(board.port) as console:
        run = read_sessions(console, timeout_s=10)
    assert run.error is None, run.error
    assert run.complete and not run.partial
    assert [r["session"] for r in run.results] == [0, 1, 2]
    assert [r["latency_us"]["mean"] for r in run.results] == [1200.0, 1210.0, 1190.0]
    assert run.expected_sessions == 3  # announced by the harness's start line
    assert run.boots_seen == 1 and run.boot_reason == "0x1 (POWERON)"
    assert any("\ufffd" in line for line in run.transcript)  # the garbage was read, decoded, skipped
    # What parse_result_lines (the generic protocol) makes of the transcript: the same three objects.
    assert [r["session"] for r in parse_result_lines("\n".join(run.transcript))] == [0, 1, 2]


def test_results_before_the_harness_starts_are_not_counted(board):
    # Lines from a run that began before the port was opened (no start line seen) must not count.
    board.play([result_line(2), BOOT, START, result_line(0), result_line(1), result_line(2), DONE])
    with SerialConsole(board.port) as console:
        run = read_sessions(console, timeout_s=10)
    assert run.complete
    assert [r["session"] for r in run.results] == [0, 1, 2]


def test_board_reset_mid_run_keeps_the_sessions_read_and_says_why(board):
    board.play([BOOT, START, result_line(0), 0.1, PANIC, BOOT[BOOT.index(b"SPIWP"):], START])
    with SerialConsole(board.port) as console:
        started = time.monotonic()
        run = read_sessions(console, timeout_s=10)
        elapsed = time.monotonic() - started
    assert not run.complete and run.partial
    assert len(run.results) == 1
    assert "reset during the run" in run.error
    assert "RTC_SW_CPU_RST" in run.error and "Guru Meditation" in run.error
    assert "1 of 3" in run.error
    assert elapsed < 5  # detected at once, not by the time-out


def test_disconnect_mid_run_is_one_clear_error_with_partial_results(board):
    board.play([BOOT, START, result_line(0), result_line(1)[:40], 0.2, "close"])
    with SerialConsole(board.port) as console:
        started = time.monotonic()
        run = read_sessions(console, timeout_s=10)
        elapsed = time.monotonic() - started
    assert run.partial and len(run.results) == 1
    assert "disconnected" in run.error and board.port in run.error
    assert run.transcript[-1].startswith("EDGEDEPLOY {")  # the half line that was in flight is kept
    assert elapsed < 5


def test_silence_after_start_times_out_cleanly(board):
    board.play([BOOT, START, result_line(0)])
    with SerialConsole(board.port) as console:
        started = time.monotonic()
        run = read_sessions(console, timeout_s=1.0)
        elapsed = time.monotonic() - started
    assert 0.9 <= elapsed < 3
    assert run.partial and "1 of 3" in run.error and "stopped" in run.error


def test_nothing_received_says_what_to_check(board):
    with SerialConsole(board.port) as console:
        run = read_sessions(console, timeout_s=0.5)
    assert run.results == [] and not run.partial
    assert "Nothing arrived" in run.error and "baud" in run.error


def test_a_board_without_the_harness_is_named(board):
    board.play([BOOT, b"I (500) app: hello world\r\n"])
    with SerialConsole(board.port) as console:
        run = read_sessions(console, timeout_s=0.8)
    assert "never started" in run.error


def test_done_with_a_lost_result_line_is_partial(board):
    board.play([BOOT, START, result_line(0), result_line(1)[:-30] + b"\r\n", result_line(2), DONE])
    with SerialConsole(board.port) as console:
        run = read_sessions(console, timeout_s=10)
    assert len(run.results) == 2 and run.partial
    assert "corrupted" in run.error


def test_measure_serial_on_a_port_without_modem_lines_asks_for_the_reset_button(board):
    # A pty has no RTS line: with reset='auto' the user is asked to press RESET, and reading goes on.
    board.play([0.3, BOOT, START, result_line(0), result_line(1), result_line(2), DONE])
    messages = []
    run = measure_serial(board.port, timeout_s=10, reset="auto", progress=messages.append)
    assert run.complete
    assert any("RESET" in m for m in messages)
    with pytest.raises(DeviceError, match="RTS"):
        measure_serial(board.port, timeout_s=1, reset="rts")


def test_opening_a_missing_port_is_a_device_error(tmp_path):
    with pytest.raises(DeviceError, match="Cannot open the serial port"):
        SerialConsole(str(tmp_path / "ttyUSB9"))


def test_chip_at_port_specs():
    from edgedeploy.devices.serial import serial_device_from_spec

    dev = serial_device_from_spec("esp32s3@/dev/ttyUSB0")
    assert (dev.chip, dev.transport, dev.serial_port, dev.baud) == ("esp32s3", "serial", "/dev/ttyUSB0", 115200)
    assert serial_device_from_spec("ESP32P4@COM5").serial_port == "COM5"
    assert serial_device_from_spec("pi@raspberrypi") is None  # an ssh user@host
    assert serial_device_from_spec("esp32s3") is None
    from edgedeploy.targets import chip_ids

    assert serial_device_from_spec("nosuchchip@/dev/ttyUSB0", known_chips=chip_ids()) is None
