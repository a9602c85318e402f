"""`measure --eval DATA` on a serial board: the user's samples streamed to the ESP-DL firmware and its outputs compared.

The firmware's real protocol code (firmware/espdl/main/edgedeploy_eval.hpp and app_main.cpp's
evaluation loop) is compiled for this host against the STAND-IN for ESP-IDF and esp-dl
(tests/espdl_host_stub), and runs as the "board" behind a real pseudo-terminal; the host side is
the real serial transport and devices/serial_eval.py. The stand-in's "model" is NOT a network:
it computes a fixed integer function of the quantized inputs (stub_runtime.cpp,
stand_in_function), so the test knows exactly which outputs a correct transport must deliver,
and the metric and fidelity the host must report for them. The serial line between the two is a
test proxy that can corrupt a frame in either direction once and "reset" the board (restart
the harness after a ROM banner), as a real line and board do.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import termios
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from edgedeploy.devices.serial import SerialConsole
from edgedeploy.devices.serial_eval import stream_samples, wait_for_ready
from tests.serial_standin import BOOT

STUB = Path(__file__).parent / "espdl_host_stub"
CXX = shutil.which("g++") or shutil.which("c++")
pytestmark = pytest.mark.skipif(CXX is None, reason="needs a host C++ compiler (g++) to compile the harness against the stand-in")


def compile_harness(project: Path, out: Path) -> Path:
    binary = out / "harness"
    cmd = [CXX, "-std=c++17", "-O1", "-Wall", "-Wextra", "-Werror", "-Wno-unused-parameter", "-I", str(project / "main"), "-I", str(STUB), str(project / "main" / "app_main.cpp"), str(STUB / "stub_runtime.cpp"), "-o", str(binary)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return binary


class HarnessBoard:
    """The compiled harness as a board on the far end of a pty, through a line proxy that can corrupt and reset.

    corrupt_to_board: index (0-based) of the `@ED1 S` frame whose payload gets one character changed, once.
    corrupt_from_board: index of the `output` reply line that gets one character of its data changed, once.
    The board "resets" when the harness exits with status 3 (STAND_IN_RESET_AFTER): the proxy then
    prints a ROM banner and starts the harness again, as the chip would boot again.
    """

    def __init__(self, binary: Path, env: dict, corrupt_to_board: int | None = None, corrupt_from_board: int | None = None, keep_resetting: bool = False):
        self.binary = binary
        self.env = dict(os.environ, **env)
        self.keep_resetting = keep_resetting  # False: the board resets once (STAND_IN_RESET_AFTER), then runs on
        self.master, self.slave = os.openpty()
        self.port = os.ttyname(self.slave)
        self.corrupt_to_board = corrupt_to_board
        self.corrupt_from_board = corrupt_from_board
        self.frames_seen = 0
        self.outputs_seen = 0
        self.boots = 0
        self.proc: subprocess.Popen | None = None
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> "HarnessBoard":
        self.thread.start()
        return self

    def _run(self):
        while termios.tcgetattr(self.slave)[3] & termios.ICANON:
            time.sleep(0.01)
        time.sleep(0.3)
        threading.Thread(target=self._to_board, daemon=True).start()
        while not self.stopped.is_set():
            self.boots += 1
            os.write(self.master, BOOT)
            self.proc = subprocess.Popen([str(self.binary)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=self.env)
            for raw in self.proc.stdout:
                if b'"event":"output"' in raw and self.outputs_seen == self.corrupt_from_board:
                    raw = raw.replace(b'"data":"', b'"data":"A' if b'"data":"B' in raw else b'"data":"B', 1)
                if b'"event":"output"' in raw:
                    self.outputs_seen += 1
                try:
                    os.write(self.master, raw.replace(b"\n", b"\r\n"))
                except OSError:
                    return
            status = self.proc.wait()
            if status != 3:  # 3: the stand-in's reset; anything else ends the board
                return
            if not self.keep_resetting:
                self.env.pop("STAND_IN_RESET_AFTER", None)

    def _to_board(self):
        buffer = b""
        while not self.stopped.is_set():
            try:
                data = os.read(self.master, 65536)
            except OSError:
                return
            buffer += data
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                if line.startswith(b"@ED1 S "):
                    if self.frames_seen == self.corrupt_to_board:
                        head, _, payload = line.rpartition(b" ")
                        line = head + b" " + (b"Q" if payload[:1] != b"Q" else b"R") + payload[1:]
                    self.frames_seen += 1
                proc = self.proc
                try:
                    proc.stdin.write(line + b"\n")
                    proc.stdin.flush()
                except (OSError, ValueError, AttributeError):
                    pass  # the board is resetting: what it was sent is lost, as on a real line

    def stop(self):
        self.stopped.set()
        if self.proc is not None and self.proc.poll() is None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for fd in (self.master, self.slave):
            try:
                os.close(fd)
            except OSError:
                pass


# -- what the stand-in computes, in numpy (stub_runtime.cpp: stand_in_function) -------------------------


def quantize(x: np.ndarray, exponent: int, bits: int = 8) -> np.ndarray:
    lo, hi = (-128, 127) if bits == 8 else (-32768, 32767)
    return np.clip(np.rint(x.astype(np.float32) * np.float32(2.0 ** -exponent)), lo, hi).astype(np.int64)


def stand_in_outputs(inputs_nhwc: list[np.ndarray], in_exponent: int, out_sizes: list[int], out_exponents) -> np.ndarray:
    """The outputs (int8, one exponent per output) the stand-in computes, dequantized to float32, concatenated."""
    q = np.concatenate([quantize(x, in_exponent).ravel() for x in inputs_nhwc])
    n = sum(out_sizes)
    out = np.empty(n, dtype=np.int64)
    for j in range(n):
        picked = [int(v) for v in q[j::n]]
        total, count = sum(picked), len(picked)
        # C++ integer division truncates towards zero.
        out[j] = (abs(total) // count) * (1 if total >= 0 else -1) if count else 0
    exponents = out_exponents if isinstance(out_exponents, (list, tuple)) else [out_exponents]
    scales = np.concatenate([np.full(size, 2.0**e, dtype=np.float32) for size, e in zip(out_sizes, exponents)])
    return (np.clip(out, -128, 127).astype(np.float32) * scales).astype(np.float32)


# -- the protocol against the harness, without the CLI (no toolchain needed) ----------------------------


@pytest.fixture(scope="module")
def generic_harness(tmp_path_factory):
    from edgedeploy.model import load_model
    from edgedeploy.targets.espdl import TARGET, codegen
    from tests.espdl_models import make_hostile_model

    root = tmp_path_factory.mktemp("eval-harness")
    path, _, _ = make_hostile_model(root)
    model = load_model(path, {}, require_static=True)
    espdl = root / "model.espdl"
    espdl.write_bytes(b"EDL2" + bytes(4092))
    project = root / "firmware"
    codegen.generate_project(project, espdl, TARGET.chip("esp32s3"), model, "int8", [])
    return compile_harness(project, root), model.sha256


def open_board(board: HarnessBoard) -> SerialConsole:
    console = SerialConsole(board.port)
    board.start()
    return console


def payloads_for(samples: np.ndarray) -> list[bytes]:
    return [np.ascontiguousarray(s, dtype="<f4").tobytes() for s in samples]


@pytest.mark.parametrize(
    "corrupt_to_board, corrupt_from_board, reset_after",
    [(None, None, None), (2, None, None), (None, 3, None), (None, None, 4), (5, 1, 7)],
    ids=["clean", "frame-to-board-corrupted", "output-from-board-corrupted", "board-resets-mid-stream", "all-of-it"],
)
def test_the_stream_delivers_every_sample_exactly_once(generic_harness, corrupt_to_board, corrupt_from_board, reset_after):
    binary, sha = generic_harness
    rng = np.random.default_rng(0)
    # 3000 bytes per sample: two parts each (2048-byte parts), so part acks are exercised too.
    samples = rng.uniform(-1, 1, size=(12, 1, 25, 30, 1)).astype(np.float32)
    env = {"STAND_IN_MODEL_SHA256": sha, "STAND_IN_INPUTS": "x:1x25x30x1:int8:-7", "STAND_IN_OUTPUTS": "y:1x7:int8:-5;z:1x3:int8:-4"}
    if reset_after:
        env["STAND_IN_RESET_AFTER"] = str(reset_after)
    board = HarnessBoard(binary, env, corrupt_to_board, corrupt_from_board)
    console = open_board(board)
    try:
        ready, reader, problem = wait_for_ready(console, timeout_s=60)
        assert problem is None, problem
        assert [i["name"] for i in ready["inputs"]] == ["x"] and ready["inputs"][0]["shape"] == [1, 25, 30, 1]
        assert [o["name"] for o in ready["outputs"]] == ["y", "z"] and ready["output_bytes"] == 40 and ready["model_sha256"] == sha
        stream = stream_samples(console, payloads_for(samples), 40, ready=ready, reader=reader, reply_timeout_s=5)
    finally:
        console.close()
        board.stop()
    assert stream.error is None and stream.complete, stream.error
    expected = [stand_in_outputs([s], -7, [7, 3], [-5, -4]) for s in samples]
    got = [np.frombuffer(p, dtype="<f4") for p in stream.outputs]
    assert len(got) == len(samples)
    for index, (g, e) in enumerate(zip(got, expected)):
        assert np.array_equal(g, e), f"sample {index}"
    assert stream.resets == (1 if reset_after else 0) and board.boots == (2 if reset_after else 1)
    if corrupt_to_board is not None:
        assert stream.naks.get("checksum") == 1 or stream.naks.get("base64") == 1
    if corrupt_from_board is not None:
        assert stream.naks.get("output checksum") == 1
    assert stream.retries == (corrupt_to_board is not None) + (corrupt_from_board is not None)


def test_a_board_that_stops_answering_keeps_the_outputs_so_far(generic_harness):
    binary, sha = generic_harness
    samples = np.zeros((6, 1, 8, 8, 1), dtype=np.float32)
    # It resets at its second sample of every boot, more often than a stream tolerates (MAX_RESETS).
    board = HarnessBoard(binary, {"STAND_IN_MODEL_SHA256": sha, "STAND_IN_INPUTS": "x:1x8x8x1:int8:-7", "STAND_IN_OUTPUTS": "y:1x2:int8:-3", "STAND_IN_RESET_AFTER": "2"}, keep_resetting=True)
    console = open_board(board)
    try:
        ready, reader, problem = wait_for_ready(console, timeout_s=60)
        assert problem is None
        stream = stream_samples(console, payloads_for(samples), 8, ready=ready, reader=reader, reply_timeout_s=5)
    finally:
        console.close()
        board.stop()
    assert not stream.complete and stream.partial
    assert "reset 4 times during the evaluation" in stream.error and "are kept and marked partial" in stream.error and "\n" not in stream.error
    assert len(stream.outputs) == 4  # each of the 4 boots answers one sample before its reset


# -- `edgedeploy measure --eval` end to end on a real esp32s3 artifact ----------------------------------


@pytest.fixture(scope="module")
def esp_artifact(tmp_path_factory):
    from tests.helpers import run_cli

    out = tmp_path_factory.mktemp("eval-out")
    proc = run_cli("build", "--target", "esp32s3", "--out", str(out), timeout=900)
    assert proc.returncode == 0, proc.stderr
    artifact = out / "mnist_cnn" / "esp32s3"
    return artifact, compile_harness(artifact / "firmware", tmp_path_factory.mktemp("eval-bin"))


@pytest.mark.toolchain("espdl")
@pytest.mark.parametrize("reset_after", [None, 9], ids=["clean", "board-resets-mid-stream"])
def test_measure_eval_reports_the_board_side_metric_and_fidelity(esp_artifact, tmp_path, reset_after):
    from edgedeploy.datasets import load_dataset, model_input_specs
    from edgedeploy.measure.reference import ReferenceRunner
    from edgedeploy.measure.verify import output_producers, verify
    from edgedeploy.model import load_model
    from edgedeploy.sample import sample_eval_path
    from tests.helpers import run_cli

    built, binary = esp_artifact
    artifact = tmp_path / "mnist_cnn" / "esp32s3"
    shutil.copytree(built, artifact)
    sha = json.loads((artifact / "manifest.json").read_text())["model"]["sha256"]
    env = {"STAND_IN_MODEL_SHA256": sha, "STAND_IN_INPUTS": "input:1x28x28x1:int8:-7", "STAND_IN_OUTPUTS": "logits:1x10:int8:-3"}
    if reset_after:
        env["STAND_IN_RESET_AFTER"] = str(reset_after)
    board = HarnessBoard(binary, env, corrupt_to_board=4)
    count = 24
    try:
        board.start()
        proc = run_cli("measure", str(artifact), "--device", f"esp32s3@{board.port}", "--flash", "none", "--timeout", "60", "--eval", str(sample_eval_path()), "--eval-count", str(count), "--format", "json")
    finally:
        board.stop()
    assert proc.returncode == 0, proc.stderr
    record = json.loads(proc.stdout)
    assert record["partial"] is False and len(record["latency"]["after"]["sessions"]) == 3

    # What the board must have answered: the stand-in's function of the very inputs the host sent (NHWC).
    model = load_model(artifact / "model.onnx", {}, require_static=True)
    data = load_dataset(sample_eval_path(), model_input_specs(model), None, count)
    nchw = data.inputs["input"]
    expected = np.stack([stand_in_outputs([nchw[i : i + 1].transpose(0, 2, 3, 1)], -7, [10], -3) for i in range(count)])
    stored = np.load(artifact / record["evaluation"]["outputs_file"])["logits"]
    assert np.array_equal(stored, expected)
    reference = ReferenceRunner(artifact / "model.onnx").run(data.inputs)
    # What the build's verification reports for a candidate with exactly these outputs.
    want = verify(reference.outputs, {"logits": expected}, data.labels, "auto", "auto", output_producers(model.graph))

    got = record["accuracy"]
    assert got["metric"] == "top1" and got["metric_output"] == "logits" and got["samples"] == count and got["scope"]["partial"] is False
    assert got["after"] == want["after"] and got["before"] == want["before"]  # board-side and reference task metric
    assert got["fidelity"]["logits"] == pytest.approx(want["fidelity"]["logits"])
    assert "host reference" in got["scope"]["before"] and "streamed over serial" in got["scope"]["after"]
    evaluation = record["evaluation"]
    assert evaluation["samples_done"] == count and evaluation["complete"] is True and evaluation["naks"].get("checksum") == 1
    assert evaluation["resets"] == (1 if reset_after else 0)
    assert record["inputs"]["evaluation"]["count"] == count
