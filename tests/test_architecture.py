"""The architecture holds: the layers (import-linter), and a third-party target plugs in with no core edit."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import run_cli

ROOT = Path(__file__).resolve().parent.parent
THROWAWAY = Path(__file__).with_name("fixtures") / "throwaway_target"


def test_the_layers_hold_under_import_linter():
    """cli > pipelines > targets > core; targets independent; no cycles (pyproject.toml [tool.importlinter])."""
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "lint_imports.py")], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


def test_every_built_in_target_keeps_the_contract():
    from edgedeploy.targets import all_targets
    from edgedeploy.targets.base import contract_problems

    assert [t.id for t in all_targets()][:5] == ["espdl", "rknn", "eiq", "tensorrt", "tidl"]
    assert {t.id: contract_problems(t) for t in all_targets()} == {t.id: [] for t in all_targets()}


def test_a_target_declaring_a_stage_it_lacks_is_refused():
    from edgedeploy.targets.base import Capability, Target, contract_problems

    class Half(Target):
        id, vendor, name, chips, toolchain = "half", "x", "Half", (), None
        capabilities = frozenset({Capability.SIMULATE})

        def convert(self, ctx):
            return None

    problems = contract_problems(Half())
    assert any("does not implement `codegen`" in p for p in problems)
    assert any("declares `simulate` but does not implement `simulate`" in p for p in problems)


@pytest.fixture(scope="module")
def acme_site(tmp_path_factory):
    """The throwaway target package, really installed (pip, from a temp copy) into a folder of its own."""
    work = tmp_path_factory.mktemp("acme")
    source = work / "src"
    shutil.copytree(THROWAWAY, source)
    site = work / "site"
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--disable-pip-version-check", "-q", "--no-deps", "--no-build-isolation", "--target", str(site), str(source)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert list(site.glob("edgedeploy_acme-*.dist-info/entry_points.txt"))
    return site


def _env(site: Path) -> dict:
    return dict(os.environ, PYTHONPATH=str(site))


def test_a_third_party_target_is_listed_audited_and_built_with_no_core_edit(acme_site, tmp_path):
    env = _env(acme_site)
    listed = run_cli("targets", "--format", "json", env=env)
    assert listed.returncode == 0, listed.stderr
    rows = {r["target"]: r for r in json.loads(listed.stdout)["targets"]}
    assert rows["acme-npu1"]["vendor"] == "ACME" and "esp32s3" in rows  # beside the built-in ones

    audited = run_cli("audit", "--target", "acme-npu1", "--format", "json", env=env)
    assert audited.returncode == 0, audited.stderr
    chip = json.loads(audited.stdout)["audits"][0]
    assert chip["chip"] == "acme-npu1"
    # The sample's Gemm/Softmax are not in the stand-in's table: they fall back, the convolutions do not.
    assert chip["summary"]["fallback"] > 0 and chip["summary"]["on_accelerator"] > 0

    help_text = run_cli("build", "--help", env=env).stdout
    assert "ACME NPU options (acme-npu1)" in help_text and "--acme-turbo" in help_text

    built = run_cli("build", "--target", "acme-npu1", "--acme-turbo", "--out", str(tmp_path / "out"), "--format", "json", env=env)
    assert built.returncode == 0, built.stderr
    artifact = Path(json.loads(built.stdout)["builds"][0]["artifact"])
    assert (artifact / "model.acme").is_file() and (artifact / "README.txt").is_file()
    report = json.loads((artifact / "report.json").read_text())
    assert report["convert"]["toolchain"].startswith("ACME stand-in")
    assert report["options"]["target_options"] == {"acme_turbo": True}
    assert report["accuracy"]["status"] == "skipped" and "no host simulator" in report["accuracy"]["reason"]
    assert "stand-in" in built.stderr  # the stand-in says what it is


def test_without_the_plug_in_the_chip_is_unknown():
    done = run_cli("build", "--target", "acme-npu1")
    assert done.returncode == 2 and "Unknown target 'acme-npu1'" in done.stderr
