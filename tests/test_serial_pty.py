"""The serial transport over a real pseudo-terminal pair.

The host side is the real code (pyserial opening the pty's slave end by name, the line
splitter, the session reader). The other end of the pty is a STAND-IN FOR THE BOARD: a thread
that writes, with pauses, what an ESP32 running edgedeploy's harness prints on its console
(ROM banner, bootloader and esp-dl logs, the harness's start line, result lines, the done line),
plus what real serial lines add: garbage bytes, lines split across writes, a reset mid-run, a
disconnect. We have no board here; these tests prove the host side, not the firmware.
"""

from __future__ import annotations

import json
import os
import termios
import threading
import time

import pytest

from edgedeploy.devices.serial import LineSplitter, SerialConsole, measure_serial, read_sessions
from edgedeploy.errors import DeviceError
from edgedeploy.measure.protocol import parse_result_lines

BOOT = (
    b"ESP-ROM:esp32s3-20210327\r\n"
    b"Build:Mar 27 2021\r\n"
    b"rst:0x1 (POWERON),boot:0x8 (SPI_FAST_FLASH_BOOT)\r\n"
    b"SPIWP:0xee\r\nmode:DIO, clock div:1\r\nload:0x3fce3818,len:0x1508\r\nentry 0x403c9880\r\n"
    b"I (27) boot: ESP-IDF v5.4 2nd stage bootloader\r\n"
    b"I (312) main_task: Calling app_main()\r\n"
)
START = b"edgedeploy: harness start, model 20e5b308, chip esp32s3, 3 sessions, boot 1a2b3c4d\r\n"
DONE = b"edgedeploy: done, 3 sessions, boot 1a2b3c4d\r\n"
PANIC = (
    b"Guru Meditation Error: Core  0 panic'ed (LoadProhibited). Exception was unhandled.\r\n"
    b"Rebooting...\r\n"
    b"ESP-ROM:esp32s3-20210327\r\nBuild:Mar 27 2021\r\n"
    b"rst:0xc (RTC_SW_CPU_RST),boot:0x8 (SPI_FAST_FLASH_BOOT)\r\n"
)


def result_line(session: int, mean_us: float = 1234.5) -> bytes:
    """A result line in the harness's format (the same fields app_main.cpp prints)."""
    obj = {
        "schema": "edgedeploy.run/1",
        "scope": {"model_sha256": "20e5b308", "chip": "esp32s3", "precision": "int8", "backend": "esp-dl", "batch": 1, "cpu_freq_mhz": 240},
        "session": session,
        "sessions": 3,
        "boot_id": "1a2b3c4d",
        "first_inference_us": 2000.0,
        "warmup": 10,
        "iterations": 800,
        "duration_s": 1.0,
        "latency_us": {"count": 800, "min": mean_us - 10, "mean": mean_us, "p50": mean_us, "p90": mean_us + 5, "p99": mean_us + 8, "max": mean_us + 20, "stdev": 3.0},
        "batch": 1,
        "throughput_items_per_s": 1e6 / mean_us,
        "outputs_match": True,
        "test_status": "ESP_OK",
        "free_heap_bytes": 8_000_000,
    }
    return b"EDGEDEPLOY " + json.dumps(obj, separators=(",", ":")).encode() + b"\r\n"


class BoardStandIn:
    """Plays a script of (bytes | float pause | 'close') on the master end of a pty, in a thread."""

    def __init__(self):
        self.master, slave = os.openpty()
        self.port = os.ttyname(slave)
        # pyserial opens the slave by name; our own descriptor of it is not needed.
        self._slave = slave
        self._thread: threading.Thread | None = None
        self.closed = False

    def play(self, script):
        def run():
            self.wait_until_opened()
            for step in script:
                if step == "close":
                    self.close()
                    return
                if isinstance(step, (int, float)):
                    time.sleep(step)
                    continue
                os.write(self.master, step)

        self._thread = threading.Thread(target=run, daemon=True)
        self._thread.start()

    def wait_until_opened(self, timeout_s: float = 10.0):
        """Like a board, the stand-in talks into the void until the host opens the port: pyserial
        switches the line to raw mode and then flushes what was waiting, so start after that."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if not termios.tcgetattr(self._slave)[3] & termios.ICANON:
                break
            time.sleep(0.01)
        time.sleep(0.2)

    def close(self):
        if not self.closed:
            self.closed = True
            os.close(self.master)

    def finish(self):
        if self._thread is not None:
            self._thread.join(timeout=10)
        self.close()
        os.close(self._slave)


@pytest.fixture
def board():
    stand_in = BoardStandIn()
    yield stand_in
    stand_in.finish()


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
    assert serial_device_from_spec("nosuchchip@/dev/ttyUSB0") is None
