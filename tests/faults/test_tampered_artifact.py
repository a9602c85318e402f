"""A tampered artifact, refused by every reader: `report`, `measure`, `diagnose` and the Python
API's `load_artifact` check the manifest's hashes first (the one check_manifest) and refuse a
changed, missing or added file with one sentence naming it (exit 11), writing nothing; with
`--no-verify` / `verify=False` they read it and say plainly that it was not verified.

The artifacts are real: the sample quantised by ONNX Runtime (tests/measure_helpers.make_artifact,
seconds) for every reader but diagnose, and the sample built for esp32s3 (the shared
esp32s3_sample_build, esp-ppq) for the case the issue found: report.json's top-1 0.967 edited
to 0.995.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import copy_artifact, run_cli
from tests.measure_helpers import FAST_SESSION_ARGS, make_artifact

EXIT_ARTIFACT = 11


def _edit_report(art: Path) -> str:
    report = json.loads((art / "report.json").read_text())
    report["model"]["name"] = "forged_name"
    (art / "report.json").write_text(json.dumps(report))
    return "report.json"


def _change_model(art: Path) -> str:
    (art / "model.onnx").write_bytes((art / "model.onnx").read_bytes() + b"\0")
    return "model.onnx"


def _remove_deployed(art: Path) -> str:
    (art / "model.int8.onnx").unlink()
    return "model.int8.onnx"


def _add_file(art: Path) -> str:
    (art / "extra.onnx").write_bytes(b"not built here")
    return "extra.onnx"


TAMPERS = {"edited report": _edit_report, "changed model": _change_model, "missing file": _remove_deployed, "added file": _add_file}
SAYS = {"edited report": "changed since the build", "changed model": "changed since the build", "missing file": "missing", "added file": "not in the manifest"}


@pytest.fixture(scope="module")
def cpu_artifact(tmp_path_factory) -> Path:
    return make_artifact(tmp_path_factory.mktemp("cpu-artifact"))


def _snapshot(folder: Path) -> dict:
    """Every file under `folder` (the artifact's parent: its siblings too) with its sha256."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*")) if p.is_file()}


def _assert_refused(done, name: str, says: str) -> None:
    assert done.returncode == EXIT_ARTIFACT, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, done.stderr
    assert f": {name} " in errors[0] and says in errors[0], errors[0]
    # One sentence: it ends at its only full stop (paths here hold no ". ").
    assert errors[0].rstrip().endswith(".") and ". " not in errors[0], errors[0]
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr
    assert done.stdout == ""


# The API as a script would use it: the ArtifactError's sentence on stderr, its exit_code (the CLI's).
API_READER = """import sys, edgedeploy
from edgedeploy.errors import ArtifactError
try:
    edgedeploy.load_artifact(sys.argv[1])
except ArtifactError as exc:
    sys.exit(print(f"error: {exc}", file=sys.stderr) or exc.exit_code)
"""


def _readers(art: Path, out_file: Path) -> dict:
    return {
        "report": ["report", str(art), "--format", "json", "-o", str(out_file)],
        "measure": ["measure", str(art), "--device", "local", *FAST_SESSION_ARGS],
        "diagnose": ["diagnose", str(art), "--format", "json", "-o", str(out_file)],
        "api": ["-c", API_READER, str(art)],
    }


def _run_reader(reader: str, args: list[str]):
    if reader != "api":
        return run_cli(*args)
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("tamper", list(TAMPERS))
@pytest.mark.parametrize("reader", ["report", "measure", "diagnose", "api"])
def test_every_reader_refuses_a_tampered_artifact(cpu_artifact, tmp_path, reader, tamper):
    art = copy_artifact(cpu_artifact, tmp_path / "out")
    name = TAMPERS[tamper](art)
    before = _snapshot(tmp_path)
    out_file = tmp_path / "result.json"
    _assert_refused(_run_reader(reader, _readers(art, out_file)[reader]), name, SAYS[tamper])
    assert _snapshot(tmp_path) == before, "a refused read wrote or changed a file"
    assert not out_file.exists() and not (art / "measurements").exists()


def test_no_manifest_is_refused_by_report(cpu_artifact, tmp_path):
    art = copy_artifact(cpu_artifact, tmp_path / "out")
    (art / "manifest.json").unlink()
    done = run_cli("report", str(art))
    assert done.returncode == EXIT_ARTIFACT and "manifest.json is missing" in done.stderr and "Traceback" not in done.stderr
    assert "NOT VERIFIED" in run_cli("report", "--no-verify", str(art)).stdout


def test_measurements_are_an_allowed_addition(cpu_artifact, tmp_path):
    """What measure writes into an artifact (records, the report's new section) keeps it readable."""
    art = copy_artifact(cpu_artifact, tmp_path / "out")
    measured = run_cli("measure", str(art), "--device", "local", *FAST_SESSION_ARGS)
    assert measured.returncode == 0, measured.stderr
    assert list((art / "measurements").glob("*.json"))
    done = run_cli("report", str(art), "--format", "json")
    assert done.returncode == 0, done.stderr
    assert "NOT VERIFIED" not in done.stdout + done.stderr


def test_bytecode_of_a_runner_run_in_place_is_an_allowed_addition_and_nothing_beside_it(cpu_artifact, tmp_path):
    """A local device runs the artifact's runner in place, and Python caches its bytecode in
    __pycache__ (seen in CI: a second measure of such an artifact was refused); a source file added
    beside it is still refused."""
    art = copy_artifact(cpu_artifact, tmp_path / "out")
    cache = art / "runner" / "__pycache__"
    cache.mkdir(parents=True, exist_ok=True)
    (cache / "protocol.cpython-311.pyc").write_bytes(b"bytecode")
    done = run_cli("report", str(art), "--format", "json")
    assert done.returncode == 0, done.stderr
    (art / "runner" / "extra.py").write_text("print('not built here')\n")
    _assert_refused(run_cli("report", str(art), "--format", "json"), "runner/extra.py", "not in the manifest")


def test_no_verify_reads_the_edit_and_says_so(cpu_artifact, tmp_path):
    art = copy_artifact(cpu_artifact, tmp_path / "out")
    _edit_report(art)
    done = run_cli("report", "--no-verify", str(art), "--format", "json")
    assert done.returncode == 0, done.stderr
    comp = json.loads(done.stdout)
    assert comp["notes"][0].startswith("NOT VERIFIED: A1") and "--no-verify" in comp["notes"][0]
    assert "forged_name" in done.stdout and "NOT VERIFIED" in done.stderr
    text = run_cli("report", "--no-verify", str(art)).stdout
    # At the top, before the first table, not only among the closing notes (the line may wrap).
    assert "NOT VERIFIED: A1" in text.split("\nArtifacts")[0], text[:400]
    import edgedeploy

    loaded = edgedeploy.load_artifact(art, verify=False)
    assert loaded.model_name == "forged_name" and any("NOT VERIFIED" in w for w in loaded.warnings)
    assert edgedeploy.load_artifact(cpu_artifact).warnings == ()


@pytest.mark.toolchain("espdl")
def test_the_issues_case_top1_edited_on_an_esp32s3_build(esp32s3_sample_build, tmp_path):
    """report.json's top-1 0.967 changed by hand to 0.995: refused by report and diagnose; read with --no-verify, said so."""
    art = copy_artifact(esp32s3_sample_build, tmp_path / "out")
    report = json.loads((art / "report.json").read_text())
    after = report["accuracy"]["outputs"]["logits"]["after"]
    forged = round(after["top1"] + 0.028, 3)
    after["top1"] = forged
    (art / "report.json").write_text(json.dumps(report))
    before = _snapshot(tmp_path)
    for reader in ("report", "diagnose", "api"):
        _assert_refused(_run_reader(reader, _readers(art, tmp_path / "result.json")[reader]), "report.json", "changed since the build")
    assert _snapshot(tmp_path) == before
    shown = run_cli("report", "--no-verify", str(art), "--format", "json")
    assert shown.returncode == 0, shown.stderr
    comp = json.loads(shown.stdout)
    assert comp["reports"]["A1"]["accuracy"]["outputs"]["logits"]["after"]["top1"] == forged
    assert comp["notes"][0].startswith("NOT VERIFIED: A1")
    diagnosed = run_cli("diagnose", "--no-verify", str(art), "--no-qdq", "--calib-count", "8", "--eval-count", "8", "--summary")
    assert diagnosed.returncode == 0, diagnosed.stderr
    assert diagnosed.stdout.startswith("NOT VERIFIED") and "NOT VERIFIED" in diagnosed.stderr
    page = run_cli("diagnose", "--no-verify", str(art), "--no-qdq", "--calib-count", "8", "--eval-count", "8", "--format", "md")
    assert page.returncode == 0 and "NOT VERIFIED: read with --no-verify" in page.stdout.split("\n## ")[0]
