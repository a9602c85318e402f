"""One exit code per error class: the table in edgedeploy.errors, the page docs/cli.md, and real commands.

Each command below is run the way a user runs it (a fresh interpreter) and must end with one
sentence on stderr and the code of its class, never a traceback or the internal-error 70.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from edgedeploy import errors
from tests.helpers import run_cli

ROOT = Path(__file__).resolve().parent.parent


def test_every_error_class_takes_its_code_from_the_table():
    codes = set(errors.EXIT_CODES)
    for name in dir(errors):
        cls = getattr(errors, name)
        if isinstance(cls, type) and issubclass(cls, errors.EdgedeployError):
            assert cls.exit_code in codes, f"{name}.exit_code {cls.exit_code} is not in EXIT_CODES"
            assert cls.__name__ in " ".join(who for _, who in errors.EXIT_CODES.values()) or cls.exit_code in (1, 2), name
    # the usage class: unknown names and bad files are usage errors, whatever else they are
    assert errors.UnknownDevice.exit_code == errors.InventoryError.exit_code == errors.UnknownName.exit_code == 2
    assert issubclass(errors.UnknownDevice, errors.DeviceError) and issubclass(errors.InventoryError, errors.DeviceError)


def test_the_docs_table_is_the_table():
    page = (ROOT / "docs" / "cli.md").read_text()
    section = page.split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    rows = {int(m.group(1)): (m.group(2).strip(), m.group(3).strip()) for m in re.finditer(r"^\| (\d+) \| (.+?) \| (.+?) \|$", section, re.M)}
    assert rows == errors.EXIT_CODES


def _clean(result, code: int, *fragments: str) -> None:
    assert result.returncode == code, (result.returncode, result.stderr[-2000:])
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    last = [line for line in result.stderr.splitlines() if line.strip()][-1]
    assert last.startswith("error: "), result.stderr
    for fragment in fragments:
        assert fragment in result.stderr, (fragment, result.stderr)


def test_unknown_names_are_usage_errors_alike(tmp_path):
    # An unknown chip and an unknown device are the same class of mistake: exit 2, with what is known.
    _clean(run_cli("audit", "--target", "esp32-s4"), 2, "Unknown target", "Did you mean esp32s3")
    inventory = tmp_path / "devices.toml"
    inventory.write_text("[devices]\n")
    artifact = tmp_path / "a"
    artifact.mkdir()
    _clean(run_cli("measure", str(artifact), "--device", "rock5b", "--inventory", str(inventory)), 2, "Unknown device 'rock5b'")
    _clean(run_cli("fix", "--target", "esp32s3", "--rewrite", "nope"), 2, "Unknown rewrite")
    _clean(run_cli("toolchain", "install", "openvino"), 2, "Unknown toolchain")


def test_a_chip_alias_is_accepted():
    assert run_cli("audit", "--target", "esp32-s3", "--format", "json").returncode == 0


def test_a_bad_inventory_entry_is_a_usage_error(tmp_path):
    inventory = tmp_path / "devices.toml"
    inventory.write_text('[devices.b]\ntransport = "ssh"\nhots = "x"\n')
    _clean(run_cli("devices", "list", "--inventory", str(inventory)), 2, "unknown setting(s) hots")


def test_model_artifact_and_device_errors_have_their_own_codes(tmp_path):
    _clean(run_cli("inspect", str(tmp_path / "nope.onnx")), errors.ModelError.exit_code, "not found")
    empty = tmp_path / "empty"
    empty.mkdir()
    _clean(run_cli("measure", str(empty), "--device", "local"), errors.ArtifactError.exit_code, "manifest.json")
    inventory = tmp_path / "devices.toml"
    # A device that cannot be reached (nothing listens on port 9 of this machine): a device error.
    inventory.write_text('[devices.gone]\nhost = "127.0.0.1"\nport = 9\npython = "python3"\n')
    result = run_cli("devices", "check", "gone", "--inventory", str(inventory), timeout=120)
    _clean(result, errors.DeviceError.exit_code)


def test_an_existing_output_needs_force(tmp_path):
    out = tmp_path / "audit.json"
    out.write_text("keep me")
    _clean(run_cli("audit", "--target", "esp32s3", "-o", str(out)), errors.ArtifactError.exit_code, "exists already", "--force")
    assert out.read_text() == "keep me"


@pytest.mark.parametrize(
    "args, fragment",
    [
        (("build", "--target", "esp32s3", "--fail-on", "latency=3"), "unknown gate 'latency'"),
        (("build", "--target", "esp32s3", "--fail-on", "p99=3ms"), "a gate of `edgedeploy measure`"),
        (("build", "--target", "esp32s3", "--fail-on", "snr"), "KEY=VALUE"),
        (("audit", "--target", "esp32s3", "-o", "x.pdf"), "Cannot tell the format of x.pdf"),
        (("bench", "-o", "x.html"), "writes text or json, not html"),
        (("fix", "--target", "esp32s3", "-o", "x.json"), "name it .onnx"),
        (("fix",), "--target CHIP"),
    ],
)
def test_usage_mistakes_exit_2_before_any_work(args, fragment, tmp_path):
    _clean(run_cli(*args, cwd=tmp_path), 2, fragment)
    assert list(tmp_path.iterdir()) == []  # refused before anything was written


def _json_build(tmp_path, *targets: str):
    """`build --format json` of a file that is no ONNX model: every chip fails at intake (exit 8)."""
    import importlib.util
    import json

    model = tmp_path / "broken.onnx"
    model.write_bytes(b"not a model")
    args = [a for t in targets for a in ("--target", t)]
    result = run_cli("build", str(model), *args, "--out", str(tmp_path / "out"), "--format", "json")
    document = json.loads(result.stdout)  # the summary is printed, whatever the exit code
    if importlib.util.find_spec("jsonschema"):
        from edgedeploy.report.schemas import validate

        validate(document)
    return result, document


@pytest.mark.parametrize("targets", [("esp32s3",), ("esp32s3", "rk3588")], ids=["one chip", "two chips"])
def test_build_format_json_prints_every_failed_chip_with_its_reason_and_exits_with_its_code(tmp_path, targets):
    """docs/cli.md: one entry per chip with its status and reason; with one --target that failed,
    stdout once had nothing."""
    result, document = _json_build(tmp_path, *targets)
    assert result.returncode == errors.ModelError.exit_code and "Traceback" not in result.stderr
    assert [b["chip"] for b in document["builds"]] == list(targets)
    error = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    for entry in document["builds"]:
        assert entry["status"] == "failed" and entry["exit_code"] == errors.ModelError.exit_code
        assert "broken.onnx" in entry["reason"] and "\n" not in entry["reason"]
        assert len(targets) > 1 or error == [f"error: {entry['reason']}"]  # one chip: the same sentence as without --format json
