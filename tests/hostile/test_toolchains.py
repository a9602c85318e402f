"""Toolchain failures seen through the CLI: a missing or broken environment, a toolchain that fails.

The executor (toolkit/toolchains/executor.py) owns worker failures: one sentence with the
toolchain's own final error line and the log's path, and a result file checked for shape before
it is used. Here the CLI behaviour is asserted: never exit 70, a clean one-sentence error, no
process left behind, nothing lost.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import numpy as np
import pytest

from tests.hostile import models as m
from tests.hostile.harness import INTERNAL_EXIT

CATEGORY = "toolchain failures"


def _model_and_calib(tmp: Path, samples: int = 64) -> tuple[Path, Path]:
    model = m.write(tmp / "model.onnx", m.conv_relu_model())
    calib = tmp / "calib.npz"
    np.savez(calib, x=np.random.default_rng(0).standard_normal((samples, 3, 8, 8)).astype(np.float32))
    return model, calib


@pytest.mark.parametrize("chip", ["esp32s3", "rk3588", "imx93", "imx8mp"])
def test_missing_toolchain_environment(hostile, chip):
    """EDGEDEPLOY_HOME is an empty folder: the build stops with one sentence naming the install command."""
    model, calib = _model_and_calib(hostile.tmp)
    (hostile.tmp / "home").mkdir()
    hostile.guard(hostile.tmp)
    outcome = hostile.run("build", "--target", chip, "--calib", str(calib), "--out", str(hostile.tmp / "out"), str(model), env={"EDGEDEPLOY_HOME": str(hostile.tmp / "home")})
    hostile.refused(outcome, "toolchain install")
    assert not (hostile.tmp / "out" / "model" / chip).exists()


def test_toolchain_home_is_a_file(hostile):
    model, calib = _model_and_calib(hostile.tmp)
    (hostile.tmp / "home").write_text("not a folder")
    hostile.guard(hostile.tmp)
    outcome = hostile.run("build", "--target", "esp32s3", "--calib", str(calib), "--out", str(hostile.tmp / "out"), str(model), env={"EDGEDEPLOY_HOME": str(hostile.tmp / "home")})
    hostile.refused(outcome)


@pytest.mark.parametrize("name", ["nope", "../espdl", "espdl;rm -rf /", ""])
def test_unknown_toolchain_name(hostile, name):
    hostile.refused(hostile.run("toolchain", "install", name, env={"EDGEDEPLOY_HOME": str(hostile.tmp / "home")}))


def _broken_env(home: Path, script: str) -> None:
    """A toolchain environment whose stamp says installed but whose python is `script` (a stand-in for a broken env)."""
    real = Path(os.path.expanduser("~/.cache/edgedeploy/envs/espdl/edgedeploy-toolchain.json"))
    if not real.is_file():
        pytest.skip("needs the espdl toolchain's stamp to fake a broken copy of it")
    env = home / "envs" / "espdl"
    (env / "bin").mkdir(parents=True)
    shutil.copyfile(real, env / "edgedeploy-toolchain.json")
    python = env / "bin" / "python"
    python.write_text("#!/bin/sh\n" + script + "\n")
    python.chmod(python.stat().st_mode | stat.S_IEXEC)


BROKEN = {
    "python exits 3": "echo 'Fatal Python error: init_fs_encoding' >&2; exit 3",
    "python prints garbage and exits 0": "head -c 2000 /dev/urandom; exit 0",
    "python writes a result that is not JSON": 'echo "{not json" > "$4"; exit 0',
    "python writes a JSON list as result": 'echo "[1, 2]" > "$4"; exit 0',
    "python is killed by a signal": "kill -SEGV $$",
}


@pytest.mark.parametrize("case", sorted(BROKEN), ids=str)
def test_broken_toolchain_environment(hostile, case):
    """A toolchain environment that is broken in a way the status check cannot see: never exit 70, nothing lost."""
    model, calib = _model_and_calib(hostile.tmp)
    from tests.hostile.test_filesystem import fake_artifact

    earlier = fake_artifact(hostile.tmp / "out" / "model" / "esp32s3")
    _broken_env(hostile.tmp / "home", BROKEN[case])
    hostile.guard(hostile.tmp / "out" / "model" / "esp32s3", hostile.tmp / "model.onnx", hostile.tmp / "calib.npz")
    outcome = hostile.run("build", "--force", "--target", "esp32s3", "--calib", str(calib), "--out", str(hostile.tmp / "out"), str(model), env={"EDGEDEPLOY_HOME": str(hostile.tmp / "home")})
    assert outcome.code not in (0, INTERNAL_EXIT), str(outcome)
    assert "Traceback" not in outcome.stderr.split("last lines of")[0], str(outcome)
    assert (earlier / "manifest.json").is_file()
    hostile.refused(outcome)


@pytest.mark.toolchain("espdl")
def test_too_little_calibration_keeps_the_earlier_artifact(hostile):
    """One calibration sample, fewer than esp-ppq's minimum of steps: refused with one sentence
    (before or by the toolchain), and the earlier artifact survives a --force build that fails."""
    model, calib = _model_and_calib(hostile.tmp, samples=1)
    from tests.hostile.test_filesystem import fake_artifact

    earlier = fake_artifact(hostile.tmp / "out" / "model" / "esp32s3")
    hostile.guard(earlier, hostile.tmp / "model.onnx", hostile.tmp / "calib.npz")
    outcome = hostile.run("build", "--force", "--target", "esp32s3", "--calib", str(calib), "--out", str(hostile.tmp / "out"), str(model))
    assert outcome.code not in (0, INTERNAL_EXIT), str(outcome)
    assert (earlier / "manifest.json").is_file()
    hostile.refused(outcome, "calibration")
