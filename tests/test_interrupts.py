"""A toolchain failure during a real build names the `<chip>.failed` folder it keeps.

Ctrl-C, SIGTERM and SIGHUP at several points of real builds (intake, the ONNX Runtime import,
the conversion, the placement), with the check that no process of the build survives and that
nothing is written into OUT afterwards, are in tests/faults/test_signals.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = [pytest.mark.toolchain("espdl"), pytest.mark.slow]


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
