"""Shared test set-up: markers for tests that need a toolchain environment or hardware.

- `@pytest.mark.toolchain("espdl")`: runs only where `edgedeploy toolchain install espdl` has
  been done (CI installs every managed toolchain); otherwise skipped, saying which is missing.
- `@pytest.mark.hardware("ESP32-S3 dev kit on a serial port")`: needs a physical device this
  suite cannot provide; always skipped with that reason unless EDGEDEPLOY_HARDWARE lists it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# The loopback sshd fixtures (`loopback_sshd`, `loopback_ssh_device`), the serial board stand-in
# (`board`) and a real labgrid coordinator and exporter on loopback (`labgrid_farm`) for every module.
pytest_plugins = ("tests.ssh_fixture", "tests.serial_standin", "tests.labgrid_fixture")


def pytest_collection_modifyitems(config, items):
    from edgedeploy.targets import find_toolchain

    available_hw = {h.strip() for h in os.environ.get("EDGEDEPLOY_HARDWARE", "").split(",") if h.strip()}
    status_cache: dict[str, object] = {}
    for item in items:
        for mark in item.iter_markers("toolchain"):
            name = mark.args[0]
            if name not in status_cache:
                status_cache[name] = find_toolchain(name).status()
            st = status_cache[name]
            if not st.installed:
                item.add_marker(pytest.mark.skip(reason=f"needs the {name} toolchain environment: {st.detail}"))
        for mark in item.iter_markers("hardware"):
            kind = mark.args[0]
            if kind not in available_hw:
                item.add_marker(pytest.mark.skip(reason=f"needs hardware: {kind} (set EDGEDEPLOY_HARDWARE={kind!r} where it is attached)"))


@pytest.fixture(scope="session")
def esp32s3_sample_build(tmp_path_factory) -> Path:
    """A real esp32s3 build of the sample (esp-ppq in the espdl environment), made once per run.

    Shared by every module that needs one: copy it (tests.helpers.copy_artifact) before writing into it.
    """
    from tests.helpers import run_cli

    out = tmp_path_factory.mktemp("esp32s3-sample")
    proc = run_cli("build", "--target", "esp32s3", "--out", str(out), timeout=900)
    assert proc.returncode == 0, proc.stderr
    return out / "mnist_cnn" / "esp32s3"


@pytest.fixture
def sample_model_path() -> Path:
    from edgedeploy.sample import sample_model_path

    return sample_model_path()
