"""The serial transport: a microcontroller's console read with pyserial, its result lines collected.

A board has no files or commands to offer, only a stream of text. The firmware edgedeploy
generates (firmware/espdl, for instance) prints, per boot:

    edgedeploy: harness start, ... 3 sessions ...     once, before the first session
    EDGEDEPLOY {json}                                 one line per session (measure/protocol.py)
    edgedeploy: done ...                              after the last session

and everything else (ROM banner, bootloader, library logs) is noise to skip. `read_sessions`
turns that stream into a `SerialRun`, and copes with what real serial lines do:

- garbage bytes (baud-rate changes at boot, line noise): decoded with replacement characters,
  and a result line is only taken when its JSON parses and has the protocol's fields;
- partial lines: bytes are buffered until their newline arrives, however they are split;
- a board reset mid-run (ESP-ROM boot banner, crash lines such as a Guru Meditation): the run
  stops with the reason, and the sessions read before it are kept, marked partial;
- a disconnect (cable pulled, port gone): the same, with the port named;
- silence: a time-out that says what was and was not seen.

`measure_serial(device, ...)` opens the device's port, resets the board through the RTS line
the way esptool does (EN low, then high, with IO0 left high so it boots the app), and reads.
"""

from __future__ import annotations

import collections
import re
import time
from dataclasses import dataclass, field
from typing import Callable

from edgedeploy.devices.board_output import MAX_SESSIONS, check_result, terminal_safe
from edgedeploy.errors import DeviceError
from edgedeploy.interrupts import reraise_if_interrupted
from edgedeploy.measure.protocol import RESULT_PREFIX, parse_result_lines
from edgedeploy.records import record_fields

START_MARKER = "edgedeploy: harness start"
DONE_MARKER = "edgedeploy: done"
DEFAULT_BAUD = 115200
DEFAULT_TIMEOUT_S = 120.0
# A line longer than this without a newline is cut there (a board printing binary junk must
# not grow the buffer forever); result lines are far shorter.
MAX_LINE_BYTES = 64 * 1024
READ_POLL_S = 0.05
RESET_PULSE_S = 0.1
RESET_REASON_WAIT_S = 1.0

# The first line the ROM prints after any reset: "ESP-ROM:esp32s3-20210327" (S3, C3, P4, ...)
# or "ets Jun  8 2016 00:22:57" (the original ESP32).
BOOT_BANNER = re.compile(r"(ESP-ROM:\S+|ets [A-Z][a-z]{2} +\d+ \d{4} \d\d:\d\d:\d\d)")
RESET_REASON = re.compile(r"rst:(0x[0-9a-fA-F]+) \(([^)]*)\)")
# Lines ESP-IDF prints when the app dies, just before the ROM banner of the reset that follows.
CRASH_MARKERS = (
    "Guru Meditation Error",
    "abort() was called",
    "assert failed:",
    "Brownout detector was triggered",
    "***ERROR*** A stack overflow",
    "Task watchdog got triggered",
    "Rebooting...",
)
SESSIONS_IN_START = re.compile(r"(\d+) sessions")
# A board that sends more than this in one run without finishing is flooding the console (a run
# of edgedeploy's harness prints a few kilobytes besides its logs); the reader stops there.
MAX_CONSOLE_BYTES = 8 * 1024 * 1024
# Console lines kept for error messages and the record (the newest ones).
TRANSCRIPT_LINES = 400
# Reasons kept for result lines that were refused (check_result), and the count of all of them.
REJECTED_KEPT = 5


@dataclass
class SerialRun:
    """What one boot's console gave: the result objects, and whether the run finished cleanly."""

    port: str
    results: list[dict] = field(default_factory=list)
    expected_sessions: int | None = None
    # The newest console lines, raw as decoded (escape them with terminal_safe before printing).
    transcript: collections.deque = field(default_factory=lambda: collections.deque(maxlen=TRANSCRIPT_LINES))
    # The artifact's model hash: result lines of another model (or of none) are refused.
    expected_model_sha256: str | None = None
    rejected: list[str] = field(default_factory=list)  # why result lines were refused (the first few)
    rejected_count: int = 0
    other_model_sha256: str | None = None  # the hash a refused line claimed, when it named another model
    boots_seen: int = 0
    started: bool = False
    finished: bool = False
    error: str | None = None
    boot_reason: str | None = None  # the reset reason of the boot the harness ran in
    reset_reason: str | None = None  # of a reset during the run
    crash_line: str | None = None
    resetting: bool = False
    announced_sessions: int | None = None  # a start line's count when it was beyond belief
    bytes_read: int = 0
    wall_s: float = 0.0

    @property
    def complete(self) -> bool:
        return self.error is None and self.expected_sessions is not None and len(self.results) >= self.expected_sessions

    @property
    def partial(self) -> bool:
        """Some sessions were read but the run did not finish: the figures are kept and marked."""
        return bool(self.results) and not self.complete

    def last_line(self) -> str:
        """The last non-empty console line, escaped and cut for a one-line message."""
        for line in reversed(self.transcript):
            if line.strip():
                return terminal_safe(line.strip(), max_chars=160)
        return ""

    def rejected_clause(self) -> str:
        """"; N result line(s) were refused: the first because ..." (empty when none were)."""
        if not self.rejected_count:
            return ""
        return f"; {self.rejected_count} result line(s) were refused as untrustworthy, the first because {self.rejected[0]}"

    def to_dict(self) -> dict:
        return {
            **record_fields(self, "port", "complete", "partial", "error"),
            "sessions_expected": self.expected_sessions,
            "sessions_read": len(self.results),
            "results": self.results,
            "rejected_result_lines": self.rejected_count,
            "rejected_reasons": list(self.rejected),
            **record_fields(self, "boots_seen", "boot_reason", "reset_reason", "crash_line", "bytes_read"),
            "wall_s": round(self.wall_s, 3),
        }


class SerialDisconnected(Exception):
    """The port went away while reading (the board was unplugged or the port closed)."""


class LineSplitter:
    """Bytes in, complete lines out; a partial line waits for the rest of its bytes."""

    def __init__(self, max_line_bytes: int = MAX_LINE_BYTES):
        self._buffer = bytearray()
        self._max = max_line_bytes

    def feed(self, data: bytes) -> list[str]:
        self._buffer.extend(data)
        lines = []
        while True:
            cut = self._buffer.find(b"\n")
            if cut < 0:
                if len(self._buffer) > self._max:
                    cut = self._max
                    raw, self._buffer = bytes(self._buffer[:cut]), self._buffer[cut:]
                    lines.append(_decode(raw))
                    continue
                return lines
            raw, self._buffer = bytes(self._buffer[:cut]), self._buffer[cut + 1 :]
            lines.append(_decode(raw))

    def pending(self) -> str:
        """The partial line still waiting for its newline."""
        return _decode(bytes(self._buffer))


def _decode(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace").rstrip("\r")


class SerialConsole:
    """A board's console on a serial port (pyserial), opened without toggling it into the bootloader."""

    def __init__(self, port: str, baud: int = DEFAULT_BAUD):
        try:
            import serial  # pyserial
        except ImportError as exc:  # pragma: no cover - pyserial is a test and `serial` extra dependency
            reraise_if_interrupted(exc)
            raise DeviceError("Talking to a board over a serial port needs pyserial: pip install 'edgedeploy[serial]'.") from exc
        self._serial_mod = serial
        self.port = port
        if is_port_url(port):
            # A port served over the network (a labgrid exporter's ser2net: rfc2217://HOST:PORT,
            # or socket:// for a raw one): pyserial's URL handlers speak it.
            try:
                ser = serial.serial_for_url(port, do_not_open=True)
            except (serial.SerialException, ValueError) as exc:
                raise DeviceError(f"Cannot use the serial port {port}: {exc}.") from exc
        else:
            ser = serial.Serial()
            ser.port = port
        ser.baudrate = baud
        ser.timeout = READ_POLL_S
        # Opening a port asserts DTR and RTS by default, which on ESP dev kits holds the chip in
        # reset or sends it to the download mode; release both before opening (as esptool does).
        ser.dtr = False
        ser.rts = False
        try:
            ser.open()
        except (serial.SerialException, OSError, ValueError) as exc:
            raise DeviceError(f"Cannot open the serial port {port}: {exc}.") from exc
        self._ser = ser

    def reset(self) -> bool:
        """Reset the board through RTS (wired to EN on ESP dev kits); False if the port has no modem lines."""
        try:
            self._ser.dtr = False  # IO0 high: boot the app, not the ROM download mode
            self._ser.rts = True  # EN low: hold in reset
            time.sleep(RESET_PULSE_S)
            self._ser.rts = False
            self._ser.reset_input_buffer()
        except (OSError, self._serial_mod.SerialException):
            return False
        return True

    def read_chunk(self) -> bytes:
        """What arrived within one poll interval (possibly nothing); SerialDisconnected if the port is gone."""
        try:
            waiting = self._ser.in_waiting
            return self._ser.read(max(1, min(waiting, 4096)))
        except (OSError, self._serial_mod.SerialException) as exc:
            raise SerialDisconnected(str(exc)) from exc

    def write(self, data: bytes) -> None:
        """Send bytes to the board (the evaluation protocol's frames); SerialDisconnected if the port is gone."""
        try:
            self._ser.write(data)
            self._ser.flush()
        except (OSError, self._serial_mod.SerialException) as exc:
            raise SerialDisconnected(str(exc)) from exc

    def close(self) -> None:
        try:
            self._ser.close()
        except (OSError, self._serial_mod.SerialException):
            pass

    def __enter__(self) -> "SerialConsole":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


PORT_URL_SCHEMES = ("rfc2217://", "socket://")


def is_port_url(port: str) -> bool:
    """A serial port reached over the network (pyserial URL), not a device file."""
    return port.lower().startswith(PORT_URL_SCHEMES)


def read_sessions(
    console,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    expected_sessions: int | None = None,
    echo: Callable[[str], None] | None = None,
    clock: Callable[[], float] = time.monotonic,
    expected_model_sha256: str | None = None,
    max_bytes: int = MAX_CONSOLE_BYTES,
) -> SerialRun:
    """Read one boot of the harness from `console` (anything with read_chunk() and .port).

    Sessions count only after the harness's start line, so a run that began before the port was
    opened is never mistaken for a whole one. Returns when `expected_sessions` results (or the
    number the start line announces) are in, when the harness says it is done, or with `error`
    set on a reset, a disconnect, the time-out, or a console flooding past `max_bytes`; the
    results read until then are kept. A result line counts only when check_result accepts it
    (the protocol's fields, types and ranges, and `expected_model_sha256` when given); `echo`
    gets every console line with its control characters escaped.
    """
    reader = _BootReader(SerialRun(port=console.port, expected_sessions=expected_sessions, expected_model_sha256=expected_model_sha256), timeout_s, echo, clock)
    while True:
        ended = reader.out_of_time()
        if ended is not None:
            return ended
        try:
            data = console.read_chunk()
        except SerialDisconnected as exc:
            return reader.disconnected(exc)
        if not data:
            continue
        ended = reader.take(data, max_bytes)
        if ended is not None:
            return ended


class _BootReader:
    """One boot being read (read_sessions): the run so far, the line splitter and the deadlines.

    Each step returns the finished SerialRun when the run ends there, else None.
    """

    def __init__(self, run: SerialRun, timeout_s: float, echo: Callable[[str], None] | None, clock: Callable[[], float]):
        self.run = run
        self.splitter = LineSplitter()
        self.timeout_s = timeout_s
        self.echo = echo
        self.clock = clock
        self.started = clock()
        self.deadline = self.started + timeout_s
        # After a reset, how long to wait for the ROM's reset-reason line (never past the deadline).
        self.grace_deadline = self.deadline

    def finish(self, error: str | None = None) -> SerialRun:
        self.run.error = error
        self.run.wall_s = self.clock() - self.started
        return self.run

    def reset_error(self) -> SerialRun:
        run = self.run
        what = f"reset reason {run.reset_reason}" if run.reset_reason else "no reset reason printed"
        crash = f"; before it: {run.crash_line!r}" if run.crash_line else ""
        return self.finish(
            f"The board on {run.port} reset during the run ({what}{crash}) after {len(run.results)} of "
            f"{run.expected_sessions or '?'} sessions{_kept(run)}."
        )

    def keep_pending(self) -> None:
        """A last line without its newline still goes into the transcript (it is often the crash)."""
        pending = self.splitter.pending()
        if pending:
            self.run.transcript.append(pending)

    def out_of_time(self) -> SerialRun | None:
        """The end of the run when the reset grace or the time-out has passed."""
        if self.run.resetting and (self.clock() >= self.grace_deadline or self.run.reset_reason):
            return self.reset_error()
        if self.clock() >= self.deadline:
            self.keep_pending()
            return self.finish(_timeout_message(self.run, self.timeout_s))
        return None

    def disconnected(self, exc: SerialDisconnected) -> SerialRun:
        run = self.run
        self.keep_pending()
        return self.finish(
            f"The serial port {run.port} disconnected ({exc}) after {len(run.results)} of "
            f"{run.expected_sessions or '?'} sessions{_kept(run)}."
        )

    def take(self, data: bytes, max_bytes: int) -> SerialRun | None:
        """Bytes from the console: counted against `max_bytes`, then taken line by line."""
        run = self.run
        run.bytes_read += len(data)
        if run.bytes_read > max_bytes:
            return self.finish(
                f"The board on {run.port} flooded its console (more than {max_bytes // (1024 * 1024)} MiB without finishing its run) after "
                f"{len(run.results)} of {run.expected_sessions or '?'} sessions{_kept(run)}."
            )
        for line in self.splitter.feed(data):
            ended = self.take_line(line)
            if ended is not None:
                return ended
        return None

    def take_line(self, line: str) -> SerialRun | None:
        run = self.run
        run.transcript.append(line)
        if self.echo is not None:
            self.echo(terminal_safe(line))
        outcome = _take_line(run, line)
        if outcome == "lie":
            return self.finish(
                f"The board on {run.port} announced {run.announced_sessions} sessions, more than a run can have ({MAX_SESSIONS}); "
                "it is not running edgedeploy's harness as built."
            )
        if outcome == "reset" and not run.resetting:
            # The ROM prints the reset reason a line or two after its banner: wait briefly for it.
            run.resetting = True
            self.grace_deadline = min(self.deadline, self.clock() + RESET_REASON_WAIT_S)
        if run.resetting:
            # Nothing after a reset counts; only its reason is awaited.
            return self.reset_error() if run.reset_reason else None
        if outcome == "done" and not run.complete:
            why = run.rejected_clause() or " (a line was corrupted on the way)"
            return self.finish(
                f"The harness on {run.port} finished, but only {len(run.results)} of {run.expected_sessions or '?'} result "
                f"lines could be taken{why}{_kept(run)}."
            )
        return self.finish() if run.complete else None


def _take_line(run: SerialRun, line: str) -> str | None:
    """Update the run with one console line; 'reset' or 'done' when the line ends the run."""
    if BOOT_BANNER.search(line):
        run.boots_seen += 1
        if run.started:
            return "reset"
        return None
    reason = RESET_REASON.search(line)
    if reason:
        text = terminal_safe(f"{reason.group(1)} ({reason.group(2)})", max_chars=120)
        if run.started:
            run.reset_reason = text
            return "reset"
        run.boot_reason = text
        return None
    if any(marker in line for marker in CRASH_MARKERS):
        # The first crash line says why ("Guru Meditation Error: ... (LoadProhibited)"); "Rebooting..." follows it.
        if run.crash_line is None or run.crash_line == "Rebooting...":
            run.crash_line = terminal_safe(line.strip(), max_chars=200)
        return None
    if START_MARKER in line:
        if run.started:
            # A second start without a ROM banner in between: the app restarted (esp_restart()).
            return "reset"
        run.started = True
        run.crash_line = None  # a crash before this boot is not this run's
        announced = SESSIONS_IN_START.search(line)
        if announced and run.expected_sessions is None:
            count = int(announced.group(1)[:12])
            if count > MAX_SESSIONS:
                run.announced_sessions = count
                return "lie"
            run.expected_sessions = count
        return None
    if not run.started:
        return None
    if RESULT_PREFIX in line:
        for obj in parse_result_lines(line):
            take_result(run, obj)
    if DONE_MARKER in line:
        run.finished = True
        return "done"
    return None


def take_result(run: SerialRun, obj) -> bool:
    """Record `obj` as a session of this run if the board's line can be trusted; else note why not."""
    reason = check_result(obj, run.expected_model_sha256)
    if reason is None:
        # Kept as the board sent it (the record's JSON escapes it); printing goes through terminal_safe.
        run.results.append(obj)
        return True
    run.rejected_count += 1
    if len(run.rejected) < REJECTED_KEPT:
        run.rejected.append(reason)
    scope = obj.get("scope") if isinstance(obj, dict) else None
    claimed = scope.get("model_sha256") if isinstance(scope, dict) else None
    if run.other_model_sha256 is None and isinstance(claimed, str) and run.expected_model_sha256 and claimed != run.expected_model_sha256 and "another model" in reason:
        run.other_model_sha256 = terminal_safe(claimed, max_chars=64)
    return False


# What the error sentences of a cut-short run add when results were read before the cut
# (`edgedeploy measure` names the file they are kept in: measuring.partial_error).
KEPT_CLAUSE = "; the results read so far are kept and marked partial"


def _kept(run: SerialRun) -> str:
    return KEPT_CLAUSE if run.results else ""


def _timeout_message(run: SerialRun, timeout_s: float) -> str:
    if run.bytes_read == 0:
        return (
            f"Nothing arrived on {run.port} within {timeout_s:.0f} s: check the port, the baud rate, that the board is "
            "powered and that edgedeploy's firmware is flashed."
        )
    last = run.last_line()
    if not run.started:
        return (
            f"The board on {run.port} printed {run.bytes_read} bytes in {timeout_s:.0f} s but edgedeploy's harness never "
            f"started (is this artifact's firmware flashed?)" + (f"; the last line it printed: '{last}'" if last else "") + "."
        )
    return (
        f"The board on {run.port} sent {len(run.results)} of {run.expected_sessions or '?'} results within "
        f"{timeout_s:.0f} s and then stopped{run.rejected_clause()}{_kept(run)}" + (f"; the last line it printed: '{last}'" if last else "") + "."
    )


def measure_serial(
    port: str,
    baud: int = DEFAULT_BAUD,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    reset: str = "auto",
    expected_sessions: int | None = None,
    echo: Callable[[str], None] | None = None,
    progress: Callable[[str], None] | None = None,
    expected_model_sha256: str | None = None,
) -> SerialRun:
    """Open `port`, reset the board (reset='rts'|'auto'|'none'), and read one boot's sessions.

    With reset='auto' a port without modem lines (some USB adapters, a pseudo-terminal) is not
    an error: the user is asked to press the board's RESET button instead. 'none' just listens
    (for a board that is reset by other means).
    """
    with open_console(port, baud, reset, progress) as console:
        return read_sessions(console, timeout_s=timeout_s, expected_sessions=expected_sessions, echo=echo, expected_model_sha256=expected_model_sha256)


def open_console(port: str, baud: int = DEFAULT_BAUD, reset: str = "auto", progress: Callable[[str], None] | None = None) -> SerialConsole:
    """The board's console, opened and the board reset per `reset` (see measure_serial); the caller closes it."""
    if reset not in ("auto", "rts", "none"):
        raise ValueError(f"reset must be auto, rts or none, not {reset!r}")
    console = SerialConsole(port, baud)
    if reset != "none":
        if not console.reset():
            if reset == "rts":
                console.close()
                raise DeviceError(f"Cannot reset the board through the RTS line of {port}; press its RESET button and use reset 'none'.")
            if progress:
                progress(f"serial: {port} has no RTS line to reset the board; press the board's RESET button now")
    return console


def serial_device_from_spec(spec: str, baud: int = DEFAULT_BAUD, known_chips=None):
    """`CHIP@PORT` (esp32s3@/dev/ttyUSB0, esp32p4@COM5) as an ad-hoc serial Device; None if `spec` is not one.

    For `edgedeploy measure ARTIFACT --device esp32s3@/dev/ttyUSB0` without an inventory entry.
    The chip must be one of `known_chips` (the registry's, from the caller); anything else after the @ that is not a port path is not
    a serial spec (user@host is SSH's business).
    """
    from edgedeploy.devices.base import Device
    from edgedeploy.devices.inventory import CHIP_PATTERN

    chip, sep, port = spec.partition("@")
    if not sep or not port or not CHIP_PATTERN.match(chip.strip().lower()):
        return None
    if known_chips is not None and chip.strip().lower() not in known_chips:
        return None
    if not (port.startswith("/dev/") or re.fullmatch(r"COM\d+", port, flags=re.I) or port.startswith("/")):
        return None
    return Device(name=spec, chip=chip.strip().lower(), transport="serial", serial_port=port, baud=baud)
