"""The JSON Schema files shipped in the package hold for REAL outputs of every command.

Each document below is made by the real command (a build of the sample with the real RKNN
toolchain, a TIDL build that only generates its project, the audit, a measurement on the local
device, a bench session on ONNX Runtime CPU, fix, inspect, the listings), then validated against
the schema its `schema` field names. The schemas are also checked the other way: each is a valid
draft 2020-12 schema, each is exercised by some real document here, and a wrong document fails.
"""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

jsonschema = pytest.importorskip("jsonschema", reason="the test extra installs jsonschema: pip install -e '.[test]'")

from edgedeploy.report.schemas import all_schemas, schema_file_name, validate  # noqa: E402
from tests.helpers import run_cli  # noqa: E402
from tests.measure_helpers import FAST_SESSION_ARGS, make_artifact  # noqa: E402

QUICK_BENCH = ["--min-iterations", "20", "--min-duration", "0.1", "--warmup", "2"]
VALIDATED: set[str] = set()  # schema files some real document was validated against


def check(document: dict) -> dict:
    """Validate against the schema of the document's `schema` field, and every document nested in it."""
    validate(document)
    VALIDATED.add(schema_file_name(document["schema"]))
    for nested in _nested(document):
        VALIDATED.add(schema_file_name(nested))
    return document


def _nested(value):
    if isinstance(value, dict):
        schema = value.get("schema")
        if isinstance(schema, str) and schema.startswith("edgedeploy."):
            try:
                schema_file_name(schema)
                if schema_file_name(schema) in all_schemas():
                    yield schema
            except KeyError:
                pass
        for item in value.values():
            yield from _nested(item)
    elif isinstance(value, list):
        for item in value:
            yield from _nested(item)


def cli_json(*args, cwd=None) -> dict:
    done = run_cli(*args, cwd=cwd)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def test_every_schema_is_a_valid_draft_2020_12_schema():
    from jsonschema import Draft202012Validator

    schemas = all_schemas()
    assert len(schemas) >= 17
    for name, schema in schemas.items():
        Draft202012Validator.check_schema(schema)
        assert schema["$id"].endswith("/" + name)


@pytest.mark.slow
@pytest.mark.toolchain("rknn")
def test_a_real_rknn_build_its_report_manifest_and_audit(tmp_path):
    result = cli_json("build", "--target", "rk3588", "--out", str(tmp_path), "--calib-count", "32", "--eval-count", "100", "--fail-on", "accuracy-drop=5", "--fail-on", "snr=10", "--format", "json")
    check(result)
    [entry] = result["builds"]
    assert entry["status"] == "built" and entry["gates"]["passed"], entry.get("gates")
    artifact = Path(entry["artifact"])
    for name in ("report.json", "manifest.json", "audit.json"):
        check(json.loads((artifact / name).read_text()))
    # The diagnosis of the same artifact (rknn-toolkit2's accuracy_analysis and ONNX Runtime's QDQ path).
    diagnosis = check(cli_json("diagnose", str(artifact), "--format", "json"))
    assert {p["path"] for p in diagnosis["paths"]} == {"rk3588", "onnxruntime-qdq"}
    diagnosis["paths"][0]["causes"] = [{"node": "x", "cause": "bad luck", "sentence": "?"}]
    with pytest.raises(jsonschema.ValidationError):
        validate(diagnosis)
    # A wrong document fails: the schema is not a rubber stamp.
    report = json.loads((artifact / "report.json").read_text())
    report["convert"]["status"] = "compiled"
    with pytest.raises(jsonschema.ValidationError):
        validate(report)
    del report["model"]["sha256"]
    with pytest.raises(jsonschema.ValidationError):
        validate(report)


def test_a_generated_only_build_with_a_gate_that_cannot_be_checked(tmp_path):
    done = run_cli("build", "--target", "am62a", "--out", str(tmp_path), "--allow-generated", "--fail-on", "accuracy-drop=1", "--recover", "--format", "json")
    assert done.returncode == 7, done.stderr[-2000:]
    result = check(json.loads(done.stdout))
    [entry] = result["builds"]
    assert entry["status"] == "generated only" and entry["gates"]["passed"] is False
    [gate] = entry["gates"]["results"]
    assert gate["value"] is None and "not compiled here" in gate["reason"]
    check(json.loads((Path(entry["artifact"]) / "manifest.json").read_text()))
    # --recover: nothing can be tried on a figure that is missing, and the report says so (recovery-1.json).
    recovery = json.loads((Path(entry["artifact"]) / "report.json").read_text())["recovery"]
    assert check(recovery)["met"] is False and [a["id"] for a in recovery["attempts"]] == ["a0"]
    assert "cannot be checked" in recovery["sentence"]


def test_audit_report_and_comparison(tmp_path):
    check(cli_json("audit", "--target", "all", "--format", "json"))
    out = tmp_path / "audit.json"
    assert run_cli("audit", "--target", "esp32s3", "-o", str(out)).returncode == 0
    check(json.loads(out.read_text()))


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    """The sample's int8 QDQ artifact measured on the local device through the CLI, with gates."""
    artifact = make_artifact(tmp_path_factory.mktemp("artifacts"), "int8-qdq")
    out = tmp_path_factory.mktemp("records") / "measurement.json"
    done = run_cli("measure", str(artifact), "--device", "local", *FAST_SESSION_ARGS, "--fail-on", "p50=10s", "--fail-on", "cosine=0.5", "-o", str(out))
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout == ""  # -o: the record goes to the file instead of stdout
    return artifact, json.loads(out.read_text())


def test_measurement_record_on_the_local_device(measured):
    artifact, record = measured
    check(record)
    assert record["gates"]["passed"] and {g["key"] for g in record["gates"]["results"]} == {"p50", "cosine"}
    [kept] = sorted((artifact / "measurements").glob("*.json"))
    check(json.loads(kept.read_text()))  # every sample kept
    report = check(json.loads((artifact / "report.json").read_text()))  # histograms folded in
    assert "local" in report["measurements"]
    comparison = cli_json("report", str(artifact), "--format", "json")
    check(comparison)


def test_bench_ort_cpu(tmp_path):
    out = tmp_path / "bench.json"
    done = run_cli("bench", "--backend", "ort-cpu", *QUICK_BENCH, "-o", str(out))
    assert done.returncode == 0, done.stderr[-2000:]
    doc = check(json.loads(out.read_text()))
    assert doc["results"][0]["schema"] == "edgedeploy.latency/1"
    # Each session of a latency record is a runner's run line (edgedeploy.run/1).
    for session in doc["results"][0]["sessions"]:
        check(session)


def test_fix_inspect_and_the_listings(tmp_path):
    fixed = tmp_path / "fixed.onnx"
    check(cli_json("fix", "--target", "esp32s3", "-o", str(fixed), "--format", "json"))
    check(json.loads(fixed.with_suffix(".fix.json").read_text()))
    check(cli_json("inspect", "--format", "json"))
    check(cli_json("estimate", "--target", "all", "--budget-ms", "10", "--format", "json"))
    check(cli_json("targets", "--format", "json"))
    check(cli_json("devices", "list", "--format", "json"))
    check(cli_json("toolchain", "list", "--format", "json"))
    check(cli_json("toolchain", "doctor", "tidl", "--format", "json"))


def test_a_broken_farm_measurement_fails_its_schema():
    """farm-measurement-1.json is not a rubber stamp: a valid report (pipeline.farm's own, of a
    run whose coordinator was lost before any place was taken) breaks it when a field is wrong,
    missing or one the schema does not describe. Real farm runs (labgrid's own coordinator and
    exporter, boards over ssh) are validated in tests/test_farm_labgrid.py."""
    import copy

    from edgedeploy.pipeline.farm import FarmJob, FarmRequest, FarmRun

    run = FarmRun(FarmRequest(artifacts=[], address="127.0.0.1:20408"), echo=lambda line: None)
    run.stage.rmdir()  # made for child runs; none is started here
    run.jobs = [FarmJob(index=0, artifact=Path("/nowhere/model/rk3588"), chip="rk3588", transport="ssh", status="not started", error="not started: the coordinator was lost")]
    run.lost_error = "the labgrid coordinator at 127.0.0.1:20408 was lost"
    report = run.report()
    check(report)
    assert report["partial"] is True and report["runs"][0]["board"] is None
    breakages = {
        "an undescribed field": lambda r: r["runs"][0].update(place_temperature_c=41.5),
        "an undescribed farm field": lambda r: r["farm"].update(exporters=2),
        "a status no run ends with": lambda r: r["runs"][0].update(status="running"),
        "a required field missing": lambda r: r["runs"][0].pop("record_file"),
        "boards divided": lambda r: r["across_boards"].update(divided=True),
        "a latency label that is not before/after": lambda r: r["runs"][0]["latency"].update(during={}),
        "a wrong type": lambda r: r.update(partial="yes"),
    }
    for what, breaking in breakages.items():
        broken = copy.deepcopy(report)
        breaking(broken)
        with pytest.raises(jsonschema.ValidationError):
            validate(broken)
            pytest.fail(f"{what} passed the schema")


def test_every_shipped_schema_was_exercised_by_a_real_document():
    """Runs last in this module: a schema no real output reaches would be a schema of nothing."""
    if len(VALIDATED) < 3:
        pytest.skip("the tests that produce the documents did not run in this session (run the whole module)")
    unused = set(all_schemas()) - VALIDATED - {"common-1.json"}
    # build-result/report/manifest/audit come from the RKNN build where rknn is installed, else from the TIDL build.
    assert not unused, f"schemas no real document was validated against: {sorted(unused)}"


def test_the_schemas_ship_in_the_wheel(tmp_path):
    """setup.py's package data carries them: build the wheel and look inside."""
    root = Path(__file__).resolve().parent.parent
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--disable-pip-version-check", "-q", "--no-deps", "--no-build-isolation", "-w", str(tmp_path), str(root)],
        capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    [wheel] = tmp_path.glob("edgedeploy-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for schema in all_schemas():
        assert f"edgedeploy/report/schemas/{schema}" in names
    assert "edgedeploy/audit/unseen_agreement.json" in names, "the audit's measured error on unseen models ships too"
