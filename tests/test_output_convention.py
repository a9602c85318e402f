"""One output convention for every command that writes: -o/--out FILE, the format from the
extension unless --format, an existing file replaced only with --force, stdout left empty.
Also: artifact folders get the mode a plain mkdir would (0777 minus the umask)."""

from __future__ import annotations

import json
import os
import stat

import pytest

from tests.helpers import run_cli
from tests.measure_helpers import FAST_SESSION_ARGS, make_artifact


def _looks_like(text: str, fmt: str) -> bool:
    if fmt == "json":
        json.loads(text)
        return True
    if fmt == "html":
        return text.lstrip().lower().startswith("<!doctype html")
    if fmt == "md":
        return text.lstrip().startswith("#") and "|---" in text.replace(" ", "")
    return not text.lstrip().startswith(("{", "#", "<"))


@pytest.mark.parametrize("name, fmt", [("a.json", "json"), ("a.md", "md"), ("a.html", "html"), ("a.txt", "text")])
def test_audit_takes_the_format_from_the_extension(tmp_path, name, fmt):
    out = tmp_path / name
    done = run_cli("audit", "--target", "esp32s3", "--target", "imx93", "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert done.stdout == "" and f"wrote {out} ({fmt})" in done.stderr
    assert _looks_like(out.read_text(), fmt), out.read_text()[:300]


def test_format_wins_over_the_extension_and_force_replaces(tmp_path):
    out = tmp_path / "audit.md"
    assert run_cli("audit", "--target", "esp32s3", "-o", str(out)).returncode == 0
    first = out.read_text()
    refused = run_cli("audit", "--target", "esp32s3", "-o", str(out), "--format", "html")
    assert refused.returncode == 11 and "--force" in refused.stderr and out.read_text() == first
    done = run_cli("audit", "--target", "esp32s3", "-o", str(out), "--format", "html", "--force")
    assert done.returncode == 0 and _looks_like(out.read_text(), "html")


@pytest.fixture(scope="module")
def artifact(tmp_path_factory):
    return make_artifact(tmp_path_factory.mktemp("artifacts"), "int8-qdq")


def test_report_and_measure_write_files_alike(artifact, tmp_path):
    for name, fmt in (("r.html", "html"), ("r.md", "md"), ("r.json", "json")):
        done = run_cli("report", str(artifact), "-o", str(tmp_path / name))
        assert done.returncode == 0 and done.stdout == "", done.stderr
        assert _looks_like((tmp_path / name).read_text(), fmt)
    again = run_cli("report", str(artifact), "-o", str(tmp_path / "r.html"))
    assert again.returncode == 11 and "exists already" in again.stderr
    text = tmp_path / "m.txt"
    done = run_cli("measure", str(artifact), "--device", "local", *FAST_SESSION_ARGS, "-o", str(text))
    assert done.returncode == 0 and done.stdout == "", done.stderr[-2000:]
    assert "after" in text.read_text() and not text.read_text().lstrip().startswith("{")
    # The check happens before the (long) work: nothing ran for an existing file.
    refused = run_cli("measure", str(artifact), "--device", "local", *FAST_SESSION_ARGS, "-o", str(text))
    assert refused.returncode == 11 and "measure:" not in refused.stderr


def test_bench_writes_text_or_json_by_extension(tmp_path):
    quick = ["--min-iterations", "20", "--min-duration", "0.1", "--warmup", "2"]
    done = run_cli("bench", *quick, "-o", str(tmp_path / "b.txt"))
    assert done.returncode == 0 and done.stdout == "", done.stderr[-2000:]
    assert "across sessions" in (tmp_path / "b.txt").read_text()


def test_artifact_folders_get_the_umask_mode_not_0700(tmp_path):
    from edgedeploy.artifacts import ArtifactBuilder

    before = os.umask(0o022)
    try:
        with ArtifactBuilder(tmp_path / "m" / "chip") as art:
            (art.path / "x.txt").write_text("x")
        os.umask(0o002)
        with ArtifactBuilder(tmp_path / "m" / "other") as art:
            (art.path / "x.txt").write_text("x")
    finally:
        os.umask(before)
    assert stat.S_IMODE((tmp_path / "m" / "chip").stat().st_mode) == 0o755
    assert stat.S_IMODE((tmp_path / "m" / "other").stat().st_mode) == 0o775
    assert stat.S_IMODE((tmp_path / "m" / "chip" / "manifest.json").stat().st_mode) == 0o644
