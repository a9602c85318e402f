"""The host side of the evaluation protocol: the user's samples streamed to a board over its console, its outputs back.

The board's side, and the protocol itself, is firmware/espdl/main/edgedeploy_eval.hpp (one
ASCII line per frame, base64 payloads, a CRC-32 of every part, both ways):

    host  -> board   @ED1 BEGIN <count> <start>
                     @ED1 S <seq> <part> <parts> <crc32> <base64>
                     @ED1 END
    board -> host    EDGEDEPLOY-EVAL {"event": "ready" | "begin" | "ack" | "output" | "nak" | "end", ...}

`stream_samples(console, payloads, ...)` sends sample after sample, one part at a time, each
part answered before the next is sent (so a board busy with an inference never loses bytes),
and copes with what a serial line and a board do:

- a reply that does not come, a `nak`, or an output part whose CRC-32 does not match: the part
  is sent again (the board answers a repeated part, or the last part of the sample it has just
  answered, from what it has, so nothing runs twice), at most MAX_RETRIES times per part;
- a reset of the board (its ROM banner, or a new `ready`): the stream resumes after the board's
  next `ready` with BEGIN at the first sample that has no output yet, at most MAX_RESETS times;
- a disconnect, silence, or a board that keeps refusing: the stream stops with one sentence,
  and the outputs received so far are kept (`EvalStream.partial`).

Everything the board sends is untrusted: only well-formed `output` parts of the expected sample,
with matching CRC-32 and a total of exactly `output_bytes`, become outputs.
"""

from __future__ import annotations

import base64
import binascii
import json
import time
import zlib
from dataclasses import dataclass, field
from typing import Any, Callable

from edgedeploy.devices.board_output import terminal_safe
from edgedeploy.devices.serial import BOOT_BANNER, LineSplitter, SerialDisconnected
from edgedeploy.records import record_fields

EVAL_PREFIX = "EDGEDEPLOY-EVAL "
FRAME_PREFIX = "@ED1"
PROTOCOL_VERSION = 1
DEFAULT_PART_BYTES = 2048
REPLY_TIMEOUT_S = 10.0
READY_TIMEOUT_S = 120.0  # after a reset the board runs its timed sessions again before `ready`
MAX_RETRIES = 5
MAX_RESETS = 3


@dataclass
class EvalStream:
    """What a stream gave: one output payload per sample done (in order), and how it went."""

    port: str
    samples: int
    outputs: list[bytes] = field(default_factory=list)
    ready: dict | None = None  # the board's last `ready` (its inputs, outputs, protocol)
    retries: int = 0
    resets: int = 0
    naks: dict = field(default_factory=dict)  # reason -> count
    inference_us: list[float] = field(default_factory=list)
    error: str | None = None
    wall_s: float = 0.0
    bytes_sent: int = 0

    @property
    def complete(self) -> bool:
        return self.error is None and len(self.outputs) == self.samples

    @property
    def partial(self) -> bool:
        return bool(self.outputs) and not self.complete

    def summary(self) -> dict:
        return {
            "protocol": PROTOCOL_VERSION,
            "samples_requested": self.samples,
            "samples_done": len(self.outputs),
            **record_fields(self, "complete", "partial", "error", "retries", "resets"),
            "naks": dict(self.naks),
            "bytes_sent": self.bytes_sent,
            "wall_s": round(self.wall_s, 2),
            "board_inference_us": _stats(self.inference_us),
        }


def _stats(values: list[float]) -> dict | None:
    if not values:
        return None
    ordered = sorted(values)
    return {"count": len(ordered), "min": ordered[0], "median": ordered[len(ordered) // 2], "max": ordered[-1]}


def frame_lines(seq: int, payload: bytes, part_bytes: int) -> list[bytes]:
    """The `S` frames of one sample: its payload cut into parts, each with its CRC-32 and base64."""
    parts = max(1, -(-len(payload) // part_bytes))
    lines = []
    for part in range(parts):
        chunk = payload[part * part_bytes : (part + 1) * part_bytes]
        crc = zlib.crc32(chunk) & 0xFFFFFFFF
        lines.append(f"{FRAME_PREFIX} S {seq} {part} {parts} {crc:08x} {base64.b64encode(chunk).decode('ascii')}\n".encode("ascii"))
    return lines


class _Reader:
    """Console lines in order, with the EDGEDEPLOY-EVAL replies parsed; a ROM banner counts as a reset."""

    def __init__(self, console, clock, echo):
        self.console = console
        self.clock = clock
        self.echo = echo
        self.splitter = LineSplitter()
        self.pending: list[str] = []

    def next_event(self, deadline: float) -> dict | None:
        """The next reply (a dict with "event"), {"event": "reset"} for a boot banner, or None at the deadline."""
        while True:
            while self.pending:
                line = self.pending.pop(0)
                if self.echo is not None:
                    self.echo(terminal_safe(line))
                if BOOT_BANNER.search(line):
                    return {"event": "reset", "line": terminal_safe(line.strip(), max_chars=120)}
                at = line.find(EVAL_PREFIX)
                if at < 0:
                    continue
                try:
                    obj = json.loads(line[at + len(EVAL_PREFIX) :])
                except (ValueError, RecursionError):
                    return {"event": "garbled"}
                if isinstance(obj, dict) and isinstance(obj.get("event"), str):
                    return obj
                return {"event": "garbled"}
            if self.clock() >= deadline:
                return None
            data = self.console.read_chunk()  # SerialDisconnected propagates
            if data:
                self.pending.extend(self.splitter.feed(data))


def wait_for_ready(console, timeout_s: float = READY_TIMEOUT_S, echo: Callable[[str], None] | None = None, clock: Callable[[], float] = time.monotonic):
    """(ready, reader, error): the board's `ready` reply (its inputs and outputs), read after its timed sessions."""
    reader = _Reader(console, clock, echo)
    deadline = clock() + timeout_s
    try:
        while True:
            event = reader.next_event(deadline)
            if event is None:
                return None, reader, (
                    f"The board on {console.port} did not announce its evaluation loop (ready) within {timeout_s:.0f} s; "
                    "is this artifact's firmware (with the evaluation protocol) flashed?"
                )
            if event["event"] == "ready":
                return event, reader, None
    except SerialDisconnected as exc:
        return None, reader, f"The serial port {console.port} disconnected ({terminal_safe(str(exc), max_chars=120)}) before the evaluation."


def _int(value) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def stream_samples(
    console,
    payloads: list[bytes],
    output_bytes: int,
    *,
    echo: Callable[[str], None] | None = None,
    progress: Callable[[str], None] | None = None,
    reply_timeout_s: float = REPLY_TIMEOUT_S,
    ready_timeout_s: float = READY_TIMEOUT_S,
    clock: Callable[[], float] = time.monotonic,
    ready: dict | None = None,
    reader: "_Reader | None" = None,
) -> EvalStream:
    """Send every payload (the inputs of one sample each) and collect the board's output payloads.

    `console` has read_chunk(), write(bytes) and .port. `ready` (and the `reader` it came from)
    is the board's `ready` reply if the caller has read it already with wait_for_ready; otherwise
    it is waited for. Returns an EvalStream; never raises for what the board does (its `error`
    says what stopped the stream).
    """
    streamer = _Streamer(console, payloads, output_bytes, reader or _Reader(console, clock, echo), clock, progress, reply_timeout_s, ready_timeout_s)
    try:
        return streamer.run(ready)
    except SerialDisconnected as exc:
        stream = streamer.stream
        return streamer.finish(
            f"The serial port {console.port} disconnected ({terminal_safe(str(exc), max_chars=120)}) during the evaluation, "
            f"after {len(stream.outputs)} of {len(payloads)} samples{streamer.kept()}."
        )


@dataclass
class _Streamer:
    """One evaluation stream (stream_samples): the samples to send, the board's replies, the stream so far."""

    console: Any
    payloads: list[bytes]
    output_bytes: int
    reader: _Reader
    clock: Callable[[], float]
    progress: Callable[[str], None] | None
    reply_timeout_s: float
    ready_timeout_s: float
    stream: EvalStream = field(init=False)
    started: float = field(init=False)

    def __post_init__(self):
        self.stream = EvalStream(port=self.console.port, samples=len(self.payloads))
        self.started = self.clock()

    def finish(self, error: str | None = None) -> EvalStream:
        self.stream.error = error
        self.stream.wall_s = self.clock() - self.started
        return self.stream

    def send(self, data: bytes) -> None:
        self.console.write(data)
        self.stream.bytes_sent += len(data)

    def kept(self) -> str:
        return f"; the outputs of the {len(self.stream.outputs)} sample(s) done are kept and marked partial" if self.stream.outputs else ""

    def run(self, ready: dict | None) -> EvalStream:
        """Every sample in order; after a reset the board is awaited and the stream resumes where it stopped."""
        stream = self.stream
        if ready is None:
            problem = self.await_ready()
        else:
            stream.ready = ready
            problem = self.check_ready(ready)
        if problem:
            return self.finish(problem)
        part_bytes = min(DEFAULT_PART_BYTES, _int(stream.ready.get("max_part_bytes")) or DEFAULT_PART_BYTES)
        need_begin = True
        seq = 0
        while seq < len(self.payloads):
            if need_begin:
                outcome = self.begin(seq)
                if outcome == "reset":
                    problem = self.after_reset()
                    if problem:
                        return self.finish(problem)
                    continue
                if outcome:
                    return self.finish(outcome + self.kept() + ".")
                need_begin = False
            frames = frame_lines(seq, self.payloads[seq], part_bytes)
            result = _send_sample(stream, self.reader, self.send, frames, seq, self.output_bytes, self.reply_timeout_s, self.clock)
            if result == "reset":
                if self.progress:
                    self.progress(f"eval: the board on {self.console.port} reset at sample {seq}; resuming there after it is ready again")
                problem = self.after_reset()
                if problem:
                    return self.finish(problem)
                need_begin = True
                continue
            if isinstance(result, str):
                return self.finish(result + self.kept() + ".")
            stream.outputs.append(result)
            if self.progress and (seq + 1) % 50 == 0:
                self.progress(f"eval: {seq + 1} of {len(self.payloads)} samples done on the board")
            seq += 1
        self.send(f"{FRAME_PREFIX} END\n".encode("ascii"))
        return self.finish()

    def after_reset(self) -> str | None:
        """The board reset: counted, then awaited until ready again; the sentence that ends the stream, if it does."""
        stream = self.stream
        stream.resets += 1
        if stream.resets > MAX_RESETS:
            return f"The board on {self.console.port} reset {stream.resets} times during the evaluation, after {len(stream.outputs)} of {len(self.payloads)} samples{self.kept()}."
        problem = self.await_ready()
        return problem.rstrip(".") + self.kept() + "." if problem else None

    def await_ready(self) -> str | None:
        deadline = self.clock() + self.ready_timeout_s
        while True:
            event = self.reader.next_event(deadline)
            if event is None:
                return f"The board on {self.console.port} did not announce its evaluation loop (ready) within {self.ready_timeout_s:.0f} s; is this artifact's firmware (edgedeploy {PROTOCOL_VERSION} protocol) flashed?"
            if event["event"] == "ready":
                self.stream.ready = event
                return self.check_ready(event)

    def check_ready(self, event: dict) -> str | None:
        """The ready reply must speak this protocol and announce this model's output size."""
        port = self.console.port
        if event.get("protocol") != PROTOCOL_VERSION:
            return f"The board on {port} speaks evaluation protocol {terminal_safe(repr(event.get('protocol')))}, not {PROTOCOL_VERSION}; rebuild and flash this artifact's firmware."
        if _int(event.get("output_bytes")) != self.output_bytes:
            return f"The board on {port} announces {terminal_safe(repr(event.get('output_bytes')))} output bytes per sample, but the model's outputs are {self.output_bytes}; it runs another model."
        return None

    def begin(self, start: int) -> str | None:
        """BEGIN at sample `start`: None when acknowledged, "reset" when the board rebooted, else the error clause."""
        self.send(f"{FRAME_PREFIX} BEGIN {len(self.payloads)} {start}\n".encode("ascii"))
        deadline = self.clock() + self.reply_timeout_s
        while True:
            event = self.reader.next_event(deadline)
            if event is None:
                return f"The board on {self.console.port} did not answer BEGIN within {self.reply_timeout_s:.0f} s"
            if event["event"] == "begin" and _int(event.get("next")) == start:
                return None
            if event["event"] in ("reset", "ready"):
                return "reset"


def _send_sample(stream: EvalStream, reader: _Reader, send, frames: list[bytes], seq: int, output_bytes: int, reply_timeout_s: float, clock):
    """One sample: its parts, each answered; then its output parts. bytes, "reset", or an error clause."""
    port = stream.port
    part = 0
    retries_here = 0
    while part < len(frames):
        send(frames[part])
        last = part == len(frames) - 1
        deadline = clock() + reply_timeout_s
        outputs: dict[int, bytes] = {}
        expected_parts: int | None = None
        inference_us = None
        retry_reason = None
        while True:
            event = reader.next_event(deadline)
            if event is None:
                retry_reason = "timeout"
                break
            kind = event["event"]
            if kind in ("reset", "ready"):
                return "reset"
            if kind == "garbled":
                retry_reason = "garbled reply"
                break
            if kind == "nak":
                reason = terminal_safe(str(event.get("reason")), max_chars=40)
                stream.naks[reason] = stream.naks.get(reason, 0) + 1
                if reason in ("inference", "length") and retries_here >= 1:
                    detail = terminal_safe(str(event.get("detail")), max_chars=120)
                    return f"The board on {port} refused sample {seq} ({reason}: {detail})"
                retry_reason = f"nak {reason}"
                break
            if kind == "ack" and not last and _int(event.get("seq")) == seq and _int(event.get("part")) == part:
                break
            if kind == "output" and last and _int(event.get("seq")) == seq:
                data = _output_part(event)
                if data is None:
                    retry_reason = "output checksum"
                    stream.naks["output checksum"] = stream.naks.get("output checksum", 0) + 1
                    break
                index, parts, chunk = data
                if expected_parts is None:
                    expected_parts = parts
                if parts != expected_parts:
                    retry_reason = "output parts"
                    break
                outputs[index] = chunk
                if isinstance(event.get("inference_us"), (int, float)) and not isinstance(event.get("inference_us"), bool):
                    inference_us = float(event["inference_us"])
                if len(outputs) == expected_parts:
                    payload = b"".join(outputs[i] for i in range(expected_parts))
                    if len(payload) != output_bytes:
                        return f"The board on {port} sent {len(payload)} output bytes for sample {seq}, not the model's {output_bytes}"
                    if inference_us is not None:
                        stream.inference_us.append(inference_us)
                    return payload
                deadline = clock() + reply_timeout_s
                continue
            # Anything else (a stale ack or output of an earlier try) is skipped.
        if retry_reason is None:  # the part was acknowledged: the next one
            part += 1
            retries_here = 0
            continue
        retries_here += 1
        stream.retries += 1
        if retries_here > MAX_RETRIES:
            return f"The board on {port} did not take sample {seq} (part {part}) after {MAX_RETRIES} retries (last: {retry_reason})"
        # The same part again: the board answers a repeated part (or the last part of the sample it
        # just answered) from what it has.
    return f"The board on {port} ended sample {seq} without its outputs"


def _output_part(event: dict) -> tuple[int, int, bytes] | None:
    index, parts, size = _int(event.get("part")), _int(event.get("parts")), _int(event.get("bytes"))
    data, crc = event.get("data"), event.get("crc32")
    if index is None or parts is None or not 0 <= index < parts or not isinstance(data, str) or not isinstance(crc, str):
        return None
    try:
        chunk = base64.b64decode(data.encode("ascii"), validate=True)
        expected = int(crc, 16)
    except (ValueError, binascii.Error, UnicodeEncodeError):
        return None
    if (zlib.crc32(chunk) & 0xFFFFFFFF) != expected or (size is not None and size != len(chunk)):
        return None
    return index, parts, chunk
