"""The local transport: the same contract as ssh, on this machine."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from edgedeploy.devices import local_device, open_transport
from edgedeploy.errors import DeviceError


def test_local_round_trip_and_cleanup(tmp_path):
    t = open_transport(local_device())
    workdir = t.make_workdir()
    src = tmp_path / "in.txt"
    src.write_text("data")
    t.put(src, "nested/$(weird) name.txt")
    result = t.run([sys.executable, "-c", "import os,sys; print(open(sys.argv[1]).read()); sys.exit(4)", "nested/$(weird) name.txt"], workdir, 30)
    assert (result.returncode, result.stdout) == (4, "data\n")
    t.get("nested/$(weird) name.txt", tmp_path / "out.txt")
    assert (tmp_path / "out.txt").read_text() == "data"
    with pytest.raises(DeviceError, match="leaves the work folder"):
        t.put(src, "../escape.txt")
    with pytest.raises(DeviceError, match="was not written"):
        t.get("absent", tmp_path / "x")
    t.cleanup(workdir)
    assert not Path(workdir).exists()


def test_local_time_out(tmp_path):
    t = open_transport(local_device())
    workdir = t.make_workdir()
    with pytest.raises(DeviceError, match="did not finish within 1 s"):
        t.run([sys.executable, "-c", "import time; time.sleep(30)"], workdir, 1)
    t.cleanup(workdir)
