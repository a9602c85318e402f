"""Hostile file-system states: outputs in the way, links, damaged or forged artifacts.

Nothing that exists before a case may be lost or changed (the fixture checks every file's
hash), and no `.building-` or `.replaced-` folder may be left behind. Two cases run a real
ESP-DL build (~10 s each) because only a finished build swaps an artifact into place.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from tests.hostile import models as m

CATEGORY = "file system"


def fake_artifact(folder: Path, chip: str = "esp32s3") -> Path:
    """A minimal artifact (manifest + report) as a build leaves it, for the cases that never build."""
    from edgedeploy.artifacts import MANIFEST_SCHEMA, file_table

    folder.mkdir(parents=True)
    (folder / "report.json").write_text(json.dumps({"schema": "edgedeploy.report/1", "target": {"chip": chip}}))
    (folder / "model.onnx").write_bytes(m.relu_model().SerializeToString())
    manifest = {"schema": MANIFEST_SCHEMA, "target": {"chip": chip}, "files": file_table(folder)}
    (folder / "manifest.json").write_text(json.dumps(manifest))
    return folder


# -- the artifact builder (API: the cases that need no toolchain run) ----------------------

def _builder_case(hostile, setup, force=True, fail=False):
    from edgedeploy.artifacts import ArtifactBuilder

    dest = hostile.tmp / "out" / "model" / "esp32s3"
    setup(hostile.tmp, dest)
    hostile.guard(hostile.tmp)
    error = None
    try:
        with ArtifactBuilder(dest, force) as art:
            (art.path / "model.onnx").write_bytes(b"new")
            if fail:
                raise RuntimeError("a stage failed")
    except Exception as exc:  # noqa: BLE001 - classified by the verdict
        error = exc
    return dest, error


BUILDER_REFUSALS = {
    "artifact exists, no --force": (lambda tmp, d: fake_artifact(d), False, "exists already"),
    "plain folder in the way": (lambda tmp, d: (d.mkdir(parents=True), (d / "notes.txt").write_text("mine")), True, "not an edgedeploy artifact"),
    "file in the way": (lambda tmp, d: (d.parent.mkdir(parents=True), d.write_text("mine")), True, "not an edgedeploy artifact"),
    "link to a file": (lambda tmp, d: ((tmp / "f.txt").write_text("mine"), d.parent.mkdir(parents=True), d.symlink_to(tmp / "f.txt")), True, "not an edgedeploy artifact"),
    "dangling link": (lambda tmp, d: (d.parent.mkdir(parents=True), d.symlink_to(tmp / "gone")), True, "does not exist"),
    "link to a plain folder": (lambda tmp, d: ((tmp / "docs").mkdir(), (tmp / "docs" / "a.txt").write_text("mine"), d.parent.mkdir(parents=True), d.symlink_to(tmp / "docs")), True, "not an edgedeploy artifact"),
    "parent is a file": (lambda tmp, d: ((tmp / "out").mkdir(), (tmp / "out" / "model").write_text("mine")), True, "Cannot create"),
    "manifest is a folder": (lambda tmp, d: (d.mkdir(parents=True), (d / "manifest.json").mkdir()), True, "not an edgedeploy artifact"),
}


@pytest.mark.parametrize("case", sorted(BUILDER_REFUSALS), ids=str)
def test_builder_refuses(hostile, case):
    from edgedeploy.errors import ArtifactError

    setup, force, fragment = BUILDER_REFUSALS[case]
    _, error = _builder_case(hostile, setup, force)
    hostile.refused_in_api(error, ArtifactError, fragment)


def test_force_over_a_symlinked_artifact_keeps_the_link(hostile):
    """--force over out/model/esp32s3 -> elsewhere: the artifact is replaced where the link points, no stale link."""
    def setup(tmp, dest):
        fake_artifact(tmp / "elsewhere" / "esp32s3")
        dest.parent.mkdir(parents=True)
        dest.symlink_to(tmp / "elsewhere" / "esp32s3")

    from edgedeploy.artifacts import ArtifactBuilder

    dest = hostile.tmp / "out" / "model" / "esp32s3"
    setup(hostile.tmp, dest)
    with ArtifactBuilder(dest, force=True) as art:
        (art.path / "model.onnx").write_bytes(b"new")
    ok = dest.is_symlink() and (dest / "model.onnx").read_bytes() == b"new" and (dest / "manifest.json").is_file()
    stale = [p.name for folder in (dest.parent, (hostile.tmp / "elsewhere")) for p in folder.iterdir() if ".replaced-" in p.name or ".building-" in p.name]
    hostile.handled(ok and not stale, f"link kept: {dest.is_symlink()}, stale: {stale}")


def test_failed_build_keeps_the_earlier_artifact(hostile):
    def setup(tmp, dest):
        fake_artifact(dest)

    dest, error = _builder_case(hostile, setup, force=True, fail=True)
    kept = (dest / "manifest.json").is_file() and (dest.parent / "esp32s3.failed" / "model.onnx").read_bytes() == b"new"
    hostile.handled(isinstance(error, RuntimeError) and kept, f"error {error!r}, kept {kept}")


def test_failed_build_with_a_file_named_like_the_failed_folder(hostile):
    """A file sits where `<chip>.failed` goes: the failure is still reported as itself and the file survives."""
    def setup(tmp, dest):
        fake_artifact(dest)
        (dest.parent / "esp32s3.failed").write_text("mine")

    dest, error = _builder_case(hostile, setup, force=True, fail=True)
    hostile.handled(isinstance(error, RuntimeError) and str(error) == "a stage failed", repr(error))


# -- through the CLI -----------------------------------------------------------------------

CLI_CASES = {
    "build --out is a file": (lambda tmp: (tmp / "out").write_text("mine"), ["build", "--target", "esp32s3", "--out", "{tmp}/out", "{model}"], ""),
    "build --out below a file": (lambda tmp: (tmp / "out").write_text("mine"), ["build", "--target", "esp32s3", "--out", "{tmp}/out/deeper", "{model}"], "Cannot create"),
    "build over an artifact without --force": (lambda tmp: fake_artifact(tmp / "out" / "model" / "esp32s3"), ["build", "--target", "esp32s3", "--out", "{tmp}/out", "{model}"], "exists already"),
    "build --force over a plain folder": (lambda tmp: ((tmp / "out" / "model" / "esp32s3").mkdir(parents=True), (tmp / "out" / "model" / "esp32s3" / "a.c").write_text("mine")), ["build", "--force", "--target", "esp32s3", "--out", "{tmp}/out", "{model}"], "not an edgedeploy artifact"),
    "build --force over a dangling link": (lambda tmp: ((tmp / "out" / "model").mkdir(parents=True), (tmp / "out" / "model" / "esp32s3").symlink_to(tmp / "gone")), ["build", "--force", "--target", "esp32s3", "--out", "{tmp}/out", "{model}"], "does not exist"),
    "build --out name too long": (lambda tmp: None, ["build", "--target", "esp32s3", "--out", "{tmp}/" + "o" * 300, "{model}"], ""),
    "inspect a model name too long": (lambda tmp: None, ["inspect", "{tmp}/" + "m" * 300 + ".onnx"], ""),
    "fix --out exists": (lambda tmp: (tmp / "fixed.onnx").write_text("mine"), ["fix", "--target", "esp32s3", "--out", "{tmp}/fixed.onnx", "{model}"], "exists already"),
    "fix --out is a folder": (lambda tmp: (tmp / "fixed.onnx").mkdir(), ["fix", "--force", "--target", "esp32s3", "--out", "{tmp}/fixed.onnx", "{model}"], ""),
    "fix --out below a file": (lambda tmp: (tmp / "f").write_text("mine"), ["fix", "--target", "esp32s3", "--out", "{tmp}/f/fixed.onnx", "{model}"], "Cannot write"),
    "fix report path is a folder": (lambda tmp: (tmp / "fixed.fix.json").mkdir(), ["fix", "--force", "--target", "esp32s3", "--out", "{tmp}/fixed.onnx", "{model}"], ""),
    "audit --output is a folder": (lambda tmp: (tmp / "audit.json").mkdir(), ["audit", "--target", "esp32s3", "--output", "{tmp}/audit.json", "{model}"], ""),
}


@pytest.mark.parametrize("case", sorted(CLI_CASES), ids=str)
def test_cli_outputs(hostile, case):
    setup, args, fragment = CLI_CASES[case]
    model = m.write(hostile.tmp / "model.onnx", m.relu_model())
    setup(hostile.tmp)
    hostile.guard(hostile.tmp)
    argv = [a.format(tmp=hostile.tmp, model=model) for a in args]
    hostile.refused(hostile.run(*argv), fragment)


# -- damaged and forged artifacts ----------------------------------------------------------

def _damage(kind: str):
    def build(tmp: Path) -> Path:
        art = fake_artifact(tmp / "art")
        manifest = json.loads((art / "manifest.json").read_text())
        if kind == "manifest not JSON":
            (art / "manifest.json").write_text("{not json")
        elif kind == "manifest not UTF-8":
            (art / "manifest.json").write_bytes(b'{"schema": "\xff"}')
        elif kind == "manifest a list":
            (art / "manifest.json").write_text("[1, 2]")
        elif kind == "manifest wrong schema":
            (art / "manifest.json").write_text(json.dumps({**manifest, "schema": "other/9"}))
        elif kind == "manifest lists an absolute path":
            manifest["files"]["/etc/passwd"] = {"sha256": "0" * 64}
            (art / "manifest.json").write_text(json.dumps(manifest))
        elif kind == "manifest lists a dot-dot path":
            manifest["files"]["../../secret"] = {"sha256": "0" * 64}
            (art / "manifest.json").write_text(json.dumps(manifest))
        elif kind == "manifest file table a list":
            manifest["files"] = ["model.onnx"]
            (art / "manifest.json").write_text(json.dumps(manifest))
        elif kind == "manifest entry without hash":
            manifest["files"]["model.onnx"] = {"size_bytes": 3}
            (art / "manifest.json").write_text(json.dumps(manifest))
        elif kind == "manifest target a string":
            manifest["target"] = "esp32s3"
            (art / "manifest.json").write_text(json.dumps(manifest))
        elif kind == "report not JSON":
            (art / "report.json").write_text("{oops")
        elif kind == "report a list":
            (art / "report.json").write_text("[]")
        elif kind == "report not UTF-8":
            (art / "report.json").write_bytes(b"\xff\xfe\x00")
        elif kind == "report missing":
            (art / "report.json").unlink()
        elif kind == "report is a folder":
            (art / "report.json").unlink()
            (art / "report.json").mkdir()
        elif kind == "artifact is a file":
            shutil.rmtree(art)
            art.write_text("not a folder")
        else:
            raise ValueError(kind)
        return art

    return build


DAMAGE = [
    "manifest not JSON", "manifest not UTF-8", "manifest a list", "manifest wrong schema", "manifest lists an absolute path",
    "manifest lists a dot-dot path", "manifest file table a list", "manifest entry without hash", "manifest target a string",
    "report not JSON", "report a list", "report not UTF-8", "report missing", "report is a folder", "artifact is a file",
]


@pytest.mark.parametrize("kind", DAMAGE)
def test_report_of_a_damaged_artifact(hostile, kind):
    art = _damage(kind)(hostile.tmp)
    hostile.guard(hostile.tmp)
    hostile.refused(hostile.run("report", str(art)))


@pytest.mark.parametrize("kind", ["manifest lists an absolute path", "manifest lists a dot-dot path", "manifest a list", "manifest target a string"])
def test_measure_of_a_forged_artifact(hostile, kind):
    art = _damage(kind)(hostile.tmp)
    hostile.guard(hostile.tmp)
    hostile.refused(hostile.run("measure", str(art), "--device", "local"))


# -- real builds: the swap itself ----------------------------------------------------------

def _calib(tmp: Path) -> Path:
    path = tmp / "calib.npz"
    np.savez(path, x=np.random.default_rng(0).standard_normal((64, 3, 8, 8)).astype(np.float32))
    return path


@pytest.mark.toolchain("espdl")
def test_build_force_over_a_symlinked_artifact(hostile):
    model = m.write(hostile.tmp / "model.onnx", m.conv_relu_model())
    calib = _calib(hostile.tmp)
    real = fake_artifact(hostile.tmp / "disk" / "esp32s3")
    link = hostile.tmp / "out" / "model" / "esp32s3"
    link.parent.mkdir(parents=True)
    link.symlink_to(real)
    hostile.guard(hostile.tmp / "model.onnx", hostile.tmp / "calib.npz")
    outcome = hostile.run("build", "--force", "--target", "esp32s3", "--calib", str(calib), "--out", str(hostile.tmp / "out"), str(model))
    hostile.accepted(outcome)
    assert link.is_symlink() and link.resolve() == real.resolve()
    assert json.loads((real / "manifest.json").read_text())["model"]["sha256"]
    stale = [p.name for folder in (link.parent, real.parent) for p in folder.iterdir() if ".replaced-" in p.name]
    assert not stale, stale
