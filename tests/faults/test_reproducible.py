"""Reproducible artifacts (issue 29, part 6): two builds of the sample for the same chip give
manifests that are equal apart from what they declare varies (edgedeploy.reproducible), and no
file of an artifact keeps a path into the `.building-*` work folder it was made in.

Before: esp32s3 differed in build.log, model.json (esp-ppq numbers its configs from the clock),
report.json, work/convert/request.json and result.json; rk3588 also in model.rknn (rknn-toolkit2
writes uninitialised memory), the runner files that embed its sha256 and rknn_build_output.txt.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from edgedeploy.reproducible import TIME, TOOLCHAIN, differences
from tests.helpers import copy_artifact, run_cli

CHIPS = [pytest.param("esp32s3", marks=pytest.mark.toolchain("espdl")), pytest.param("rk3588", marks=pytest.mark.toolchain("rknn"))]


@pytest.fixture(scope="module")
def two_builds(request, tmp_path_factory) -> tuple[Path, Path]:
    """Two artifacts of the sample for one chip, built into different --out folders."""
    chip = request.param
    folders = []
    for run in range(2):
        if chip == "esp32s3" and run == 0:
            folders.append(request.getfixturevalue("esp32s3_sample_build"))  # the suite's shared build
            continue
        out = tmp_path_factory.mktemp(f"{chip}-build{run}")
        done = run_cli("build", "--target", chip, "--out", str(out), timeout=900)
        assert done.returncode == 0, done.stderr[-3000:]
        folders.append(out / "mnist_cnn" / chip)
    return folders[0], folders[1]


def _manifest(artifact: Path) -> dict:
    return json.loads((artifact / "manifest.json").read_text())


@pytest.mark.parametrize("two_builds", CHIPS, indirect=True)
def test_two_builds_have_equal_manifests_apart_from_what_varies(two_builds):
    first, second = map(_manifest, two_builds)
    assert differences(first, second) == []
    # Every file whose bytes differ is one the manifest declares, and the declarations agree.
    for name, entry in first["files"].items():
        if entry["sha256"] != second["files"][name]["sha256"]:
            assert entry.get("varies"), f"{name} differs between the builds but is not declared to vary"
    assert first["varies"]["created_at"] == TIME
    assert first["files"]["build.log"]["varies"] == TIME
    assert "model.json" not in first["files"] or "varies" not in first["files"]["model.json"]


@pytest.mark.parametrize("two_builds", CHIPS, indirect=True)
def test_no_file_keeps_a_path_into_the_work_folder(two_builds):
    for artifact in two_builds:
        holding = [p.relative_to(artifact).as_posix() for p in artifact.rglob("*") if p.is_file() and b".building-" in p.read_bytes()]
        assert holding == []


@pytest.mark.parametrize("two_builds", CHIPS[:1], indirect=True)
def test_a_difference_that_is_not_declared_is_found(two_builds):
    """The comparison is not blind: a time field may differ, a result may not."""
    first = _manifest(two_builds[0])
    later = copy.deepcopy(first)
    later["created_at"] = "2000-01-01T00:00:00+00:00"
    assert differences(first, later) == []
    later["files"]["model.espdl"]["sha256"] = "0" * 64
    later["files"]["report.json"]["sha256_normalised"] = "1" * 64
    assert [line.split(":")[0] for line in differences(first, later)] == ["files.model.espdl", "files.report.json"]


@pytest.mark.parametrize("two_builds", CHIPS[1:], indirect=True)
def test_the_rknn_file_is_declared_not_reproducible_and_still_verified(two_builds, tmp_path):
    first, second = map(_manifest, two_builds)
    rknn = first["files"]["model.rknn"]
    assert rknn["varies"] == TOOLCHAIN and "uninitialised memory" in rknn["note"]
    # The files that embed its sha256 are compared with it zeroed, and so is the manifest's field.
    for name in ("runner/runner.json", "runner/rknn_runner.c"):
        assert first["files"][name]["varies"] == "model.rknn"
        assert first["files"][name]["sha256_normalised"] == second["files"][name]["sha256_normalised"]
    assert first["varies"]["rknn.rknn_sha256"] == "model.rknn"
    # The real bytes are what every reader checks: a changed .rknn is refused.
    art = copy_artifact(two_builds[0], tmp_path)
    data = bytearray((art / "model.rknn").read_bytes())
    data[-1] ^= 1
    (art / "model.rknn").write_bytes(bytes(data))
    done = run_cli("report", str(art))
    assert done.returncode == 11 and "model.rknn changed since the build" in done.stderr


@pytest.mark.parametrize("two_builds", CHIPS[:1], indirect=True)
def test_a_report_section_added_later_keeps_the_entry_s_declarations(two_builds, tmp_path):
    """`measure` adds its section to report.json and renews its manifest entry: the entry keeps what
    the build declared (varies, time_fields) with a normalised hash of the new report, and the
    manifest declares report_updated_at as time."""
    from edgedeploy.artifacts import check_manifest
    from edgedeploy.report.artifact import update_report_section

    art = copy_artifact(two_builds[0], tmp_path)
    before = _manifest(art)["files"]["report.json"]
    update_report_section(art, ("measurements", "bench"), {"p50_ms": 1.0})
    manifest = _manifest(art)
    after = manifest["files"]["report.json"]
    assert after["varies"] == TIME and after["time_fields"] == before["time_fields"]
    assert after["sha256_normalised"] != before["sha256_normalised"]  # the new section is compared
    assert manifest["varies"]["report_updated_at"] == TIME
    check_manifest(art, None)  # still verifies
