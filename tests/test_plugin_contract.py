"""The plug-in contract holds (issue 25): capabilities are checked, a plug-in that fails to import
is listed as broken and stops nothing else, and a third-party target ships its own templates.

Two throwaway packages from tests/fixtures/ are really installed (pip, into a folder of their own
put on PYTHONPATH, so the registry finds them through their entry points as it would any
vendor's): `edgedeploy_zeta`, a target with no audit rules, namespaced options and its own
template; and `edgedeploy_broken`, a target plug-in whose import raises.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import run_cli

FIXTURES = Path(__file__).with_name("fixtures")


@pytest.fixture(scope="module")
def plugin_site(tmp_path_factory):
    """The zeta and broken plug-ins installed into one folder (the site PYTHONPATH points at)."""
    work = tmp_path_factory.mktemp("plugins")
    sources = []
    for name in ("zeta_target", "broken_target"):
        shutil.copytree(FIXTURES / name, work / name)
        sources.append(str(work / name))
    site = work / "site"
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--disable-pip-version-check", "-q", "--no-deps", "--no-build-isolation", "--target", str(site), *sources],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert list(site.glob("edgedeploy_zeta-*.dist-info/entry_points.txt")) and list(site.glob("edgedeploy_broken-*.dist-info/entry_points.txt"))
    return site


def _env(site: Path, **extra: str) -> dict:
    """The plug-ins' site on the path; the Zeta SDK's Python only where a test gives it."""
    env = {key: value for key, value in os.environ.items() if key != "EDGEDEPLOY_ZETA_PYTHON"}
    env.update(PYTHONPATH=str(site), **extra)
    return env


@pytest.fixture(scope="module")
def zeta_python(tmp_path_factory) -> Path:
    """A Python the 'user' installed the Zeta SDK into: a venv (no pip) holding `zeta_sdk` 1.4.0,
    with its distribution metadata, so the user-supplied-Python kind's import and version check
    run for real. The SDK is a stand-in module, like the target."""
    root = tmp_path_factory.mktemp("zeta-python")
    done = subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root / "env")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    python = root / "env" / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], capture_output=True, text=True, check=True).stdout.strip())
    (site / "zeta_sdk").mkdir(parents=True)
    (site / "zeta_sdk" / "__init__.py").write_text('"""A stand-in vendor SDK."""\n__version__ = "1.4.0"\n')
    (site / "zeta_sdk-1.4.0.dist-info").mkdir()
    (site / "zeta_sdk-1.4.0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: zeta-sdk\nVersion: 1.4.0\n")
    return python


def test_a_plugin_that_fails_to_import_is_listed_as_broken_and_stops_nothing(plugin_site):
    env = _env(plugin_site)
    listed = run_cli("targets", "--format", "json", env=env)
    assert listed.returncode == 0, listed.stderr
    data = json.loads(listed.stdout)
    assert [b["name"] for b in data["broken"]] == ["broken"]
    assert "ImportError" in data["broken"][0]["error"] and "broken_sdk_bindings" in data["broken"][0]["error"]
    chips = {row["target"] for row in data["targets"]}
    assert {"esp32s3", "rk3588", "imx93", "zeta-z1"} <= chips  # every other target still listed

    text = run_cli("targets", env=env)
    assert text.returncode == 0, text.stderr
    assert "broken (edgedeploy_broken:TARGET): broken: it could not be imported: ImportError" in text.stdout

    # Another command on a built-in chip runs as usual beside it.
    audited = run_cli("audit", "--target", "esp32s3", "--format", "json", env=env)
    assert audited.returncode == 0, audited.stderr
    assert json.loads(audited.stdout)["audits"][0]["chip"] == "esp32s3"

    # The chip of a broken plug-in is unknown, and the sentence says which plug-in broke.
    unknown = run_cli("build", "--target", "nosuchchip", env=env)
    assert unknown.returncode == 2 and "could not be loaded: broken" in unknown.stderr and "Traceback" not in unknown.stderr


def test_a_target_without_audit_rules_builds_with_no_audit_stage(plugin_site, zeta_python, tmp_path):
    """The extension exercise: a third-party target with a user-supplied-Python SDK, its own
    template, no AUDIT and namespaced options is listed, built and code-generated with no core
    edit, beside a plug-in whose import raises."""
    env = _env(plugin_site, EDGEDEPLOY_ZETA_PYTHON=str(zeta_python))
    listed = run_cli("targets", "--format", "json", env=env)
    assert [b["name"] for b in json.loads(listed.stdout)["broken"]] == ["broken"]  # installed beside it
    row = next(r for r in json.loads(listed.stdout)["targets"] if r["target"] == "zeta-z1")
    assert row["toolchain_installed"] and str(zeta_python) in row["toolchain_status"] and row["capabilities"] == []

    built = run_cli("build", "--target", "zeta-z1", "--zeta-lanes", "3", "--out", str(tmp_path / "out"), "--format", "json", env=env)
    assert built.returncode == 0, built.stderr
    assert built.stderr.count("audit:") == 1 and "audit: skipped: the Zeta NPU target declares no audit rules" in built.stderr
    artifact = Path(json.loads(built.stdout)["builds"][0]["artifact"])
    report = json.loads((artifact / "report.json").read_text())
    assert report["audit"] == {"status": "skipped", "reason": "the Zeta NPU target declares no audit rules"}
    assert not (artifact / "audit.json").exists()
    # The core ran the declared worker in the user's Python: the SDK's version came back from there.
    assert report["convert"]["toolchain"] == "Zeta stand-in (zeta_sdk 1.4.0, copies the model)"
    assert "stand-in conversion: zeta_sdk 1.4.0 imported, no compiler ran" in built.stderr
    assert (artifact / "model.zeta").read_bytes() == (artifact / "model.onnx").read_bytes()
    assert "zeta_sdk 1.4.0 imported from " + str(zeta_python.parent.parent) in (artifact / "build.log").read_text()
    assert report["options"]["target_options"] == {"zeta_lanes": 3}

    # The runner comes from the template in the plug-in's own package, with the option's value in it.
    runner = (artifact / "zeta_runner.py").read_text()
    assert runner.startswith("# Generated by edgedeploy") and "LANES = 3" in runner and "do not edit" in runner
    ran = subprocess.run([sys.executable, str(artifact / "zeta_runner.py")], capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0 and "on 3 lane(s)" in ran.stdout

    audit = run_cli("audit", "--target", "zeta-z1", env=env)
    assert audit.returncode == 2 and "The Zeta NPU target declares no audit rules, so zeta-z1 cannot be audited" in audit.stderr
    fixed = run_cli("fix", "--target", "zeta-z1", env=env)
    assert fixed.returncode == 2 and "declares no audit rules" in fixed.stderr and "Traceback" not in fixed.stderr


def test_the_user_supplied_python_is_checked_before_use(plugin_site, tmp_path):
    env = _env(plugin_site)
    unset = run_cli("targets", "--format", "json", env=env)
    row = next(r for r in json.loads(unset.stdout)["targets"] if r["target"] == "zeta-z1")
    assert not row["toolchain_installed"] and "set $EDGEDEPLOY_ZETA_PYTHON" in row["toolchain_status"]
    missing = run_cli("build", "--target", "zeta-z1", "--out", str(tmp_path / "a"), env=env)
    assert missing.returncode == 9 and "EDGEDEPLOY_ZETA_PYTHON" in missing.stderr and "Traceback" not in missing.stderr

    # A Python without the SDK: one sentence naming the interpreter and the module, exit 9.
    without = run_cli("build", "--target", "zeta-z1", "--out", str(tmp_path / "b"), env=_env(plugin_site, EDGEDEPLOY_ZETA_PYTHON=sys.executable))
    assert without.returncode == 9, without.stderr
    assert f"The Python {sys.executable} (from $EDGEDEPLOY_ZETA_PYTHON) cannot import zeta_sdk" in without.stderr and "Traceback" not in without.stderr


# -- vendor options: one namespace per target ------------------------------------------------


def test_every_target_option_is_in_its_targets_namespace():
    from edgedeploy.targets import all_targets

    for target in all_targets():
        for _, meta in target.options_type.declared():
            assert meta["flag"].startswith(f"--{target.id}-"), (target.id, meta["flag"])


def test_a_flag_outside_the_namespace_breaks_the_contract():
    from dataclasses import dataclass

    from edgedeploy.targets.base import Target, TargetOptions, contract_problems, option

    @dataclass(frozen=True)
    class Loose(TargetOptions):
        speed: int = option("--speed", "Unprefixed.", type=int)

    class Sloppy(Target):
        id, vendor, name, chips, toolchain = "sloppy", "x", "Sloppy", (), None
        options_type = Loose

        def convert(self, ctx):
            return None

        def codegen(self, ctx, converted):
            return {}

    assert contract_problems(Sloppy()) == ["its option --speed is not in its namespace: a target's flags begin with --sloppy-"]


def test_an_old_flag_still_works_for_one_release_with_a_warning():
    done = run_cli("build", "--target", "rk3588", "--optimization-level", "9")
    # Renamed before parsing: click judges the value under the new name; the warning names it.
    assert done.returncode == 2
    assert "warning: --optimization-level is deprecated and will be removed in the next release; use --rknn-optimization-level" in done.stderr
    assert "'--rknn-optimization-level': 9 is not in the range 0<=x<=3" in done.stderr
    help_text = run_cli("build", "--help").stdout
    assert "--rknn-optimization-level" in help_text and "--optimization-level " not in help_text and "--analyse" not in help_text.replace("--rknn-analyse", "")


def test_renaming_deprecated_flags_stops_at_the_double_dash():
    from edgedeploy.cli.build_cmd import renamed_deprecated_flags

    aliases = {"--analyse": "--rknn-analyse", "--trt-version": "--tensorrt-version"}
    assert renamed_deprecated_flags(["--analyse", "--trt-version=8.6", "--", "--analyse"], aliases) == ["--rknn-analyse", "--tensorrt-version=8.6", "--", "--analyse"]


def _fake_target(target_id: str, *flags: str, deprecated: tuple[str, ...] = ()):
    from dataclasses import field, make_dataclass

    from edgedeploy.targets.base import Chip, Target, TargetOptions, option

    fields = [(f"f{i}", bool, option(flag, "A switch.", is_flag=True, deprecated=deprecated if i == 0 else ())) for i, flag in enumerate(flags)]
    options_type = make_dataclass(f"{target_id.title()}Options", fields, bases=(TargetOptions,), frozen=True)
    chip = Chip(id=f"{target_id}-1", name=f"{target_id} 1", accelerator="none", cpu="none", accelerator_clock_mhz=None, cpu_clock_mhz=1)
    attrs = {"id": target_id, "vendor": "x", "name": f"{target_id.title()} NPU", "chips": (chip,), "toolchain": None, "options_type": options_type}
    return type(f"{target_id.title()}Target", (Target,), attrs)()


def test_an_option_clash_disables_only_the_targets_involved():
    import click

    from edgedeploy.cli.build_cmd import VendorOptionsCommand, add_target_options

    alpha = _fake_target("alpha", "--alpha-fast", deprecated=("--fast",))
    beta = _fake_target("beta", "--beta-fast", deprecated=("--fast",))  # the same old spelling as alpha's
    gamma = _fake_target("gamma", "--gamma-fast", deprecated=("--calib",))  # an alias that is a shared option
    delta = _fake_target("delta", "--delta-fast", deprecated=("--dfast",))
    command = add_target_options(VendorOptionsCommand("build", params=[click.Option(["--calib"])]), [alpha, beta, gamma, delta])
    assert set(command.disabled_targets) == {"alpha", "beta", "gamma"}
    assert "its option --fast is also the Beta NPU target's" in command.disabled_targets["alpha"]
    assert "--calib is also a shared option of `edgedeploy build`" in command.disabled_targets["gamma"]
    flags = {opt for p in command.params for opt in p.opts}
    assert "--delta-fast" in flags and not flags & {"--alpha-fast", "--beta-fast", "--gamma-fast"}
    assert command.deprecated_flags == {"--dfast": "--delta-fast"}

    from edgedeploy.cli.build_cmd import refuse_disabled
    from edgedeploy.errors import TargetError

    with pytest.raises(TargetError, match=r"The Alpha NPU target is disabled: .* the other targets are not affected"):
        refuse_disabled(command, [(delta, delta.chips[0]), (alpha, alpha.chips[0])])
    refuse_disabled(command, [(delta, delta.chips[0])])  # an uninvolved target builds
