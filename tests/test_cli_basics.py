"""The command line as a whole: version, help everywhere, the target registry, no vendor SDK in the core."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import click
import pytest

from edgedeploy import __version__
from edgedeploy.cli import all_commands
from tests.helpers import run_cli

REPO = Path(__file__).resolve().parents[1]
# Top-level import names of the vendor SDKs and heavy frameworks that only toolchain
# environments may import.
VENDOR_MODULES = {"esp_ppq", "ppq", "rknn", "rknnlite", "tensorflow", "tf_keras", "onnx2tf", "ethosu", "tflite_runtime", "ai_edge_litert", "tensorrt", "pycuda", "torch", "onnx2torch"}

EXPECTED_CHIPS = {
    "jetson-orin-nano", "jetson-orin-nx", "jetson-agx-orin",
    "esp32s3", "esp32p4",
    "rk3588", "rk3576", "rk3568", "rk3566", "rk3562", "rv1106",
    "imx8mp", "imx93",
    "tda4vm", "am62a", "am68a", "am69a",
}


def test_version():
    result = run_cli("--version")
    assert result.returncode == 0 and __version__ in result.stdout


def _all_command_paths(commands: dict[str, click.Command], prefix=()):
    for name, command in commands.items():
        yield prefix + (name,)
        if isinstance(command, click.Group):
            ctx = click.Context(command)
            yield from _all_command_paths({n: command.get_command(ctx, n) for n in command.list_commands(ctx)}, prefix + (name,))


@pytest.mark.parametrize("path", sorted(_all_command_paths(all_commands())), ids=lambda p: " ".join(p))
def test_help_on_every_command(path):
    result = run_cli(*path, "--help")
    assert result.returncode == 0, result.stderr
    assert "Usage: edgedeploy " + " ".join(path) in result.stdout


def test_targets_lists_every_vendor_and_chip():
    result = run_cli("targets", "--format", "json")
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)["targets"]
    assert {r["target"] for r in rows} == EXPECTED_CHIPS
    assert {r["vendor"] for r in rows} == {"NVIDIA", "Espressif", "Rockchip", "NXP", "Texas Instruments"}
    for r in rows:
        assert r["accelerator"] and r["toolchain"] and isinstance(r["toolchain_installed"], bool)
    text = run_cli("targets").stdout
    for chip in EXPECTED_CHIPS:
        assert chip in text


def test_listing_targets_imports_no_vendor_sdk():
    code = (
        "import sys, json; from edgedeploy.cli.targets_cmd import targets_data; targets_data();"
        "from edgedeploy.cli import cli;"
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    loaded = set(json.loads(out))
    assert not (loaded & VENDOR_MODULES), loaded & VENDOR_MODULES


def _imported_top_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found


def test_core_and_target_packages_never_import_a_vendor_sdk():
    """Only worker files (run inside a toolchain's own environment) and generated templates may."""
    offenders = {}
    for folder in ("toolkit", "targets"):
        for path in (REPO / folder).rglob("*.py"):
            if path.name.startswith("worker") or "templates" in path.parts:
                continue
            bad = _imported_top_modules(path) & VENDOR_MODULES
            if bad:
                offenders[str(path.relative_to(REPO))] = sorted(bad)
    assert not offenders, offenders


def test_unknown_command_is_a_usage_error():
    result = run_cli("frobnicate")
    assert result.returncode == 2 and "No such command" in result.stderr


def test_pending_commands_say_not_available():
    from edgedeploy.cli import pending

    commands = all_commands()
    for command in pending.COMMANDS:
        if commands.get(command.name) is command:
            result = run_cli(command.name)
            assert result.returncode == 2
            assert "not available yet" in result.stderr and "Traceback" not in result.stderr


def test_unknown_target_lists_the_known_ones():
    result = run_cli("build", "--target", "esp32c3")
    assert result.returncode == 2
    assert "Unknown target 'esp32c3'" in result.stderr and "esp32s3" in result.stderr


def test_each_command_module_provides_the_command_it_is_named_after():
    """The root group finds a command by its module's name (`audit` in audit_cmd) without importing the others."""
    import importlib
    import pkgutil

    import edgedeploy.cli as package

    modules = [m.name for m in pkgutil.iter_modules(package.__path__) if m.name.endswith("_cmd")]
    assert modules
    for module in modules:
        names = [c.name for c in importlib.import_module(f"edgedeploy.cli.{module}").COMMANDS]
        assert names == [module.removesuffix("_cmd")], module


def test_root_help_lists_every_command():
    result = run_cli("--help")
    assert result.returncode == 0
    listed = {line.split()[0] for line in result.stdout.split("Commands:")[1].splitlines() if line.strip()}
    assert listed == set(all_commands()) and {"audit", "build", "measure", "report", "targets"} <= listed


def test_a_command_imports_only_its_own_module():
    """`edgedeploy audit` loads the audit command, not build's pipeline or fix's engine (startup time counts)."""
    code = (
        "import sys, json\n"
        "from edgedeploy.cli import main\n"
        "try:\n    main(['audit', '--help'])\nexcept SystemExit:\n    pass\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('edgedeploy'))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    loaded = set(json.loads(out.splitlines()[-1]))
    assert {m for m in loaded if m.endswith("_cmd")} == {"edgedeploy.cli.audit_cmd"}
    assert not loaded & {"edgedeploy.fix.engine", "edgedeploy.pipeline.build", "edgedeploy.measure.reference"}
