"""Ctrl-C, SIGTERM or an error during a real build: the toolchain worker dies with the command.

The worker runs in a process group of its own (so its own children are one group), which also
means the terminal's Ctrl-C reaches only the CLI; the CLI must kill and reap the group before
it exits. These tests interrupt a real esp-ppq build at several points and check that no
process of the build survives, that nothing is written into the output folder afterwards, and
that the failed attempt is kept as `<chip>.failed` with no `.building-*` folder left.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.toolchain("espdl"), pytest.mark.slow]


def _processes_mentioning(text: str) -> list[int]:
    """PIDs of live (non-zombie) processes whose command line contains `text`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if text in cmdline and state != "Z":
            found.append(int(entry.name))
    return found


def _snapshot(folder: Path) -> dict[str, tuple[int, float]]:
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime) for p in folder.rglob("*") if p.is_file()}


def _wait_for_worker(out: Path, deadline_s: float) -> bool:
    """Wait until the build's esp-ppq worker runs (its request.json sits in the work folder)."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if list(out.rglob("work/convert/request.json")):
            return True
        time.sleep(0.1)
    return False


def _wait_for_quantising(out: Path, deadline_s: float) -> bool:
    """Wait until the worker has imported esp-ppq and started quantising (its progress line is in
    the build log, which the CLI streams as the worker prints). A fixed delay after the worker
    starts is not "deeper into the worker" on a quiet machine: the whole MNIST build ends 1.8 s
    after the worker starts there, so a 3 s sleep signalled a finished command."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        for log in out.rglob(".*building-*/build.log"):
            if "quantising for" in log.read_text(errors="replace"):
                return True
        time.sleep(0.02)
    return False


@pytest.mark.parametrize(
    "sig, when",
    [
        (signal.SIGINT, "early"),  # during intake/audit, before the worker starts
        (signal.SIGINT, "worker"),  # while esp-ppq quantises
        (signal.SIGINT, "quantising"),  # deeper into the worker: esp-ppq imported and running
        (signal.SIGTERM, "worker"),  # a CI job cancelled
    ],
)
def test_an_interrupted_build_leaves_no_process_and_writes_nothing_afterwards(tmp_path, sig, when):
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [sys.executable, "-m", "edgedeploy", "build", "--target", "esp32s3", "--out", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # like a shell's job: the signal goes to the CLI, as Ctrl-C does
        # A shell running pytest in the background ignores SIGINT, and children inherit that;
        # a user's terminal does not: restore the default, as an interactive shell would.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        if when == "early":
            time.sleep(1.0)
        else:
            assert _wait_for_worker(out, 120), "the esp-ppq worker never started"
            if when == "quantising":
                assert _wait_for_quantising(out, 120), "the esp-ppq worker never started quantising"
        proc.send_signal(sig)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode != 0
    assert "Traceback" not in stderr, stderr[-2000:]
    assert "internal error" not in stderr
    survivors = _processes_mentioning(str(out))
    assert survivors == [], f"processes of the build outlived it: {survivors}"
    if out.exists():
        before = _snapshot(out)
        time.sleep(3.0)
        assert _snapshot(out) == before, "something wrote into the output folder after the command ended"
        leftovers = [p.name for p in out.rglob(".*building-*")]
        assert leftovers == [], leftovers
        if when != "early":
            assert (out / "mnist_cnn" / "esp32s3.failed" / "build.log").is_file()
    assert not (out / "mnist_cnn" / "esp32s3").exists()


def test_a_failing_worker_names_the_kept_failed_folder(tmp_path):
    """A toolchain failure's sentence names the log in `<chip>.failed`, the folder that exists."""
    import numpy as np
    from onnx import TensorProto, helper

    from tests.helpers import run_cli

    # A model esp-ppq cannot quantise with too little calibration variety: a Conv whose
    # calibration batch has a NaN-free but constant zero input gives esp-ppq nothing to
    # calibrate; use a real refusal instead: an opset esp-ppq's exporter rejects is not
    # reliable, so the worker is made to fail by an unreadable calibration file it is given.
    node = helper.make_node("Relu", ["x"], ["y"])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])], [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    path = tmp_path / "relu.onnx"
    path.write_bytes(model.SerializeToString())
    np.savez(tmp_path / "calib.npz", x=np.zeros((16, 4), dtype=np.float32))
    done = run_cli("build", str(path), "--target", "esp32s3", "--calib", str(tmp_path / "calib.npz"), "--out", str(tmp_path / "out"))
    if done.returncode == 0:
        pytest.skip("esp-ppq converted the one-Relu model; nothing failed to name a folder for")
    assert "building-" not in done.stderr
    if "full log:" in done.stderr:
        named = done.stderr.split("full log: ", 1)[1].split(")")[0]
        assert Path(named).exists(), named
