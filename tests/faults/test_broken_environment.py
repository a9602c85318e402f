"""Faults: a toolchain environment broken on purpose, and what `edgedeploy toolchain doctor` says.

The environments are real (`python -m venv` in a temporary EDGEDEPLOY_HOME, never the user's
~/.cache/edgedeploy) with stub packages standing in for the toolchain: each of the toolchain's
modules is a package that imports, each recorded distribution has a dist-info at its pinned
version (read from the toolchain's own requirement files), and the stamp is the one `install`
writes. Then one thing is broken: the interpreter deleted, a source file truncated, a version
that is not the pinned one. Doctor must exit 9 (a toolchain error), print one line for the
environment with the command that repairs it and a log that exists, and no traceback; an
environment that was never installed is not broken (exit 0).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from edgedeploy.errors import ToolchainError
from edgedeploy.targets import all_toolchains, find_toolchain
from tests.helpers import run_cli

# Two managed toolchains with small import lists: enough to show that every broken one is named.
NAMES = ("espdl", "torch")


def pins_of(tc) -> dict[str, str]:
    """name==version lines of the toolchain's requirement files, read here independently of the code under test."""
    pins = {}
    for step in tc.steps:
        for line in step.requirements_file.read_text().splitlines():
            m = re.match(r"^\s*([A-Za-z0-9_.\-]+)\s*==\s*([^\s;#]+)", line)
            if m:
                pins[re.sub(r"[-_.]+", "-", m.group(1)).lower()] = m.group(2)
    return pins


def site_packages(env: Path) -> Path:
    return next((env / "lib").glob("python*/site-packages"))


def write_dist(site: Path, dist: str, version: str) -> None:
    info = site / f"{dist.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")


def fake_environment(home: Path, name: str) -> Path:
    """A working stand-in for toolchain `name` under home/envs/name; its site-packages."""
    tc = find_toolchain(name)
    env = tc.env_dir(home)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True)
    site = site_packages(env)
    for module in tc.import_modules:
        package = site.joinpath(*module.split("."))
        package.mkdir(parents=True)
        (package / "__init__.py").write_text(f'"""Stand-in for {module}."""\n\nVERSION = "stand-in"\n\n\ndef answer():\n    return 42\n')
    pins = pins_of(tc)
    versions = {dist: pins[re.sub(r"[-_.]+", "-", dist).lower()] for dist in tc.distributions}
    for dist, version in versions.items():
        write_dist(site, dist, version)
    stamp = {"name": name, "spec_hash": tc.spec_hash(), "versions": versions, "python": "stand-in"}
    (env / "edgedeploy-toolchain.json").write_text(json.dumps(stamp))
    return site


def doctor(home: Path, *names: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, EDGEDEPLOY_HOME=str(home))
    return run_cli("toolchain", "doctor", *names, env=env, timeout=300)


def line_of(result: subprocess.CompletedProcess, name: str) -> str:
    lines = [line for line in result.stdout.splitlines() if line.split()[:1] == [name]]
    assert len(lines) == 1, result.stdout
    return lines[0]


def assert_broken(result: subprocess.CompletedProcess, name: str, fragment: str) -> str:
    """Exit 9, one BROKEN line with the repair command, a log that exists, no traceback; the line."""
    assert result.returncode == ToolchainError.exit_code, (result.returncode, result.stdout, result.stderr)
    line = line_of(result, name)
    assert "BROKEN" in line and fragment in line and ".;" not in line, line
    assert line.endswith(f"repair: edgedeploy toolchain install {name} --force"), line
    log = Path(re.search(r"\(full log: ([^)]+)\)", line).group(1))
    assert log.is_file() and "BROKEN: " in log.read_text()
    assert "Traceback" not in result.stdout + result.stderr
    assert f"`edgedeploy toolchain install {name} --force`" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    return line


@pytest.fixture
def home(tmp_path) -> Path:
    return tmp_path / "edgedeploy-home"


def test_a_working_stand_in_is_ok_so_the_faults_below_are_what_breaks_it(home):
    fake_environment(home, "espdl")
    result = doctor(home, "espdl")
    assert result.returncode == 0, result.stdout + result.stderr
    assert re.match(r"espdl\s+ok\s", line_of(result, "espdl"))
    pin = pins_of(find_toolchain("espdl"))["esp-ppq"]
    assert f"esp-ppq {pin}" in result.stdout


def test_nothing_installed_is_not_broken(home):
    result = doctor(home)
    assert result.returncode == 0, result.stdout + result.stderr
    for tc in all_toolchains():
        if tc.managed:
            assert "not installed" in line_of(result, tc.name)
    assert "BROKEN" not in result.stdout and not list(home.glob("envs/*-doctor.log"))


def test_the_interpreter_deleted(home):
    fake_environment(home, "espdl")
    python = find_toolchain("espdl").python(home)
    python.unlink()
    assert_broken(doctor(home, "espdl"), "espdl", f"its interpreter {python} is missing")


def test_a_truncated_source_file(home):
    site = fake_environment(home, "espdl")
    source = site / "esp_ppq" / "__init__.py"
    text = source.read_text()
    source.write_text(text[: text.index("return")])  # cut inside the function: a SyntaxError on import
    line = assert_broken(doctor(home, "espdl"), "espdl", "The espdl toolchain failed")
    log = Path(re.search(r"\(full log: ([^)]+)\)", line).group(1))
    assert "SyntaxError" in line or "IndentationError" in line, line
    assert "Traceback" in log.read_text()  # the traceback is kept in the log, not printed


def test_a_version_that_is_not_the_pinned_one(home):
    site = fake_environment(home, "espdl")
    pin = pins_of(find_toolchain("espdl"))["esp-ppq"]
    next(site.glob("esp_ppq-*.dist-info")).rename(site / "esp_ppq-0.0.1.dist-info")
    (site / "esp_ppq-0.0.1.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: esp-ppq\nVersion: 0.0.1\n")
    assert_broken(doctor(home, "espdl"), "espdl", f"esp-ppq 0.0.1 installed, {pin} pinned")


def test_an_interrupted_install(home):
    fake_environment(home, "espdl")
    (find_toolchain("espdl").env_dir(home) / "edgedeploy-toolchain.json").unlink()
    assert_broken(doctor(home, "espdl"), "espdl", "incomplete install")


def test_every_broken_environment_is_named_and_the_working_ones_still_pass(home):
    for name in NAMES:
        fake_environment(home, name)
    for name in NAMES:
        find_toolchain(name).python(home).unlink()
    result = doctor(home)
    for name in NAMES:
        assert_broken(result, name, "is missing")
    assert "not installed" in line_of(result, "rknn")


def test_an_interpreter_that_does_not_run(home):
    """The interpreter is there but cannot run Python (replaced by a program that fails): the check runs it, not just looks."""
    fake_environment(home, "espdl")
    python = find_toolchain("espdl").python(home)
    python.unlink()  # a link to the base interpreter: replace the link, never touch what it points to
    python.write_text("#!/bin/sh\necho 'cannot execute: corrupt interpreter' >&2\nexit 3\n")
    python.chmod(0o755)
    line = assert_broken(doctor(home, "espdl"), "espdl", "exited with status 3")
    assert "cannot execute: corrupt interpreter" in line
