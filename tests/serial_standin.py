"""A STAND-IN FOR THE BOARD on the far end of a real pseudo-terminal, for the serial tests.

pytest plugin (tests/conftest.py): the `board` fixture gives a BoardStandIn whose `port` is the
pty's slave end, which the real host code (pyserial, the line splitter, the session reader,
`edgedeploy measure`) opens by name. The stand-in writes, with pauses, what an ESP32 running
edgedeploy's harness prints on its console (ROM banner, bootloader and esp-dl logs, the harness's
start line, result lines, the done line), plus what real serial lines add: garbage bytes, lines
split across writes, a reset mid-run, a disconnect. There is no board here: tests using it prove
the host side, not the firmware.
"""

from __future__ import annotations

import json
import os
import termios
import threading
import time

import pytest

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
        self._stopping = False

    def play(self, script, settle_s: float = 0.2):
        """`settle_s`: how long after the host opened the port the "board" starts talking. A port
        reached over the network (a labgrid exporter's ser2net, RFC 2217) is opened on the far end
        as soon as the host connects, and pyserial drops what arrives before its negotiation is
        done, so such tests give the host more time, as a real board's reset would."""

        def run():
            self.wait_until_opened(settle_s=settle_s)
            for step in script:
                if step == "close":
                    self.close()
                    return
                if isinstance(step, (int, float)):
                    time.sleep(step)
                    continue
                if self.closed or self._stopping:
                    return  # the test is over: a board that was unplugged
                try:
                    os.write(self.master, step)
                except OSError:
                    if self.closed or self._stopping:
                        return  # closed between the check and the write
                    raise

        self._thread = threading.Thread(target=run, daemon=True)
        self._thread.start()

    def wait_until_opened(self, timeout_s: float = 10.0, settle_s: float = 0.2):
        """Like a board, the stand-in talks into the void until the host opens the port: pyserial
        switches the line to raw mode and then flushes what was waiting, so start after that."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and not self._stopping:
            if not termios.tcgetattr(self._slave)[3] & termios.ICANON:
                break
            time.sleep(0.01)
        time.sleep(settle_s)

    def close(self):
        if not self.closed:
            self.closed = True
            os.close(self.master)

    def finish(self):
        self._stopping = True
        if self._thread is not None:
            # A script still playing (a flooding board) may be blocked writing into a full pty
            # that nobody reads any more: drain the other end, so the write returns and the
            # thread sees it is to stop, instead of waiting out the join's time-out.
            os.set_blocking(self._slave, False)
            deadline = time.monotonic() + 10
            while self._thread.is_alive() and time.monotonic() < deadline:
                try:
                    os.read(self._slave, 1 << 16)
                except OSError:  # nothing waiting (BlockingIOError), or the port is gone
                    pass
                self._thread.join(timeout=0.02)
        self.close()
        os.close(self._slave)


@pytest.fixture
def board():
    stand_in = BoardStandIn()
    yield stand_in
    stand_in.finish()
