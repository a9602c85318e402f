"""Builds run from a user's own folder with the default (relative) `--out`.

Workers run in folders of their own, so every path the CLI takes is made absolute at the
boundary; these tests run the real toolchains from a relative working directory, the way a
new user types the command, which the absolute temp paths of the other tests never exercise.
"""

from __future__ import annotations

import json

import pytest

from tests.helpers import run_cli


@pytest.mark.slow
@pytest.mark.parametrize(
    "chip, toolchain",
    [pytest.param("rk3588", "rknn", marks=pytest.mark.toolchain("rknn")), pytest.param("imx93", "eiq", marks=pytest.mark.toolchain("eiq"))],
)
def test_build_with_the_default_relative_out_from_a_users_folder(tmp_path, chip, toolchain):
    project = tmp_path / "project"
    project.mkdir()
    done = run_cli("build", "--target", chip, "--format", "json", cwd=project)
    assert done.returncode == 0, done.stderr[-3000:]
    artifact = project / "edgedeploy-out" / "mnist_cnn" / chip
    assert (artifact / "manifest.json").is_file()
    assert json.loads(done.stdout)["builds"][0]["artifact"] == str(artifact)
    # Nothing of the build landed outside the project folder's edgedeploy-out/.
    assert sorted(p.name for p in project.iterdir()) == ["edgedeploy-out"]


def test_cli_paths_become_absolute_without_resolving_symlinks(tmp_path, monkeypatch):
    import click

    from edgedeploy.cli.options import AbsolutePath

    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    monkeypatch.chdir(tmp_path)
    from pathlib import Path

    converted = AbsolutePath(path_type=Path).convert("link/../link/x.npz", None, click.Context(click.Command("t")))
    assert converted == tmp_path / "link" / "x.npz"
