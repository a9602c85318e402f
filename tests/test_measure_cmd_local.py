"""`edgedeploy measure` on the local device: real runners, real processes, real report updates."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from edgedeploy.artifacts import ArtifactBuilder, check_manifest
from edgedeploy.cli import cli
from tests.measure_helpers import FAST_SESSION_ARGS, make_artifact, write_inventory


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    """The int8 artifact of the sample, measured once on `local` through the CLI."""
    out = tmp_path_factory.mktemp("artifacts")
    artifact = make_artifact(out, "int8-qdq")
    result = CliRunner().invoke(cli, ["measure", str(artifact), "--device", "local", "--format", "json", *FAST_SESSION_ARGS])
    assert result.exit_code == 0, result.output
    return artifact, json.loads(result.stdout)


def test_sessions_are_separate_processes_with_per_session_figures(measured):
    _, record = measured
    assert record["partial"] is False and record["error"] is None
    for label in ("before", "after"):
        rec = record["latency"][label]
        assert rec["schema"] == "edgedeploy.latency/1"
        sessions = rec["sessions"]
        assert len(sessions) == 3
        assert len({s["pid"] for s in sessions}) == 3  # three processes, not three loops
        for s in sessions:
            lat = s["latency_us"]
            assert 0 < lat["min"] <= lat["p50"] <= lat["p90"] <= lat["p99"] <= lat["max"]
            assert s["iterations"] >= 20 and s["first_inference_us"] > 0
        summary = rec["summary"]
        medians = sorted(s["latency_us"]["p50"] for s in sessions)
        assert summary["median_us"] == medians[1]
        assert summary["session_median_range_us"] == [medians[0], medians[-1]]
    # The process ids of before and after differ too (alternating sessions, six processes).
    pids = {s["pid"] for label in ("before", "after") for s in record["latency"][label]["sessions"]}
    assert len(pids) == 6


def test_every_figure_has_its_scope(measured):
    _, record = measured
    for label, precision, file in (("before", "fp32", "model.onnx"), ("after", "int8", "model.int8.onnx")):
        scope = record["latency"][label]["scope"]
        assert scope["model"]["sha256"] == record["artifact"]["model"]["sha256"]
        assert scope["input_shapes"] == {"input": [1, 1, 28, 28]} and scope["batch"] == 1
        assert scope["precision"] == precision and scope["backend"] == "ort-cpu"
        assert scope["deployed_model"]["file"] == file
        assert scope["device"]["name"] == "local" and scope["device"]["cpu_cores"] >= 1


def test_before_after_ratio_only_for_same_scope(measured):
    _, record = measured
    comp = record["comparison"]
    before = record["latency"]["before"]["summary"]["median_us"]
    after = record["latency"]["after"]["summary"]["median_us"]
    assert comp["differs_only_in"] == "deployment"
    # The real runners' scopes: the deployed file differs with the precision, which is the one change.
    assert comp["deployment_differs_in"] == ["precision"]
    assert comp["speedup"] == pytest.approx(before / after)
    assert comp["deployment"]["before"]["precision"] == "fp32" and comp["deployment"]["after"]["precision"] == "int8"


def test_on_device_outputs_are_checked_against_the_same_inputs(measured):
    from edgedeploy.measure.accuracy import top_k
    import onnxruntime as ort

    artifact, record = measured
    acc = record["accuracy"]
    assert acc["metric"] == "top1" and acc["samples"] == 100
    # The before figure is what ONNX Runtime gives on the same 100 held-out digits here.
    from edgedeploy.sample import sample_eval_path

    data = np.load(sample_eval_path())
    sess = ort.InferenceSession(str(artifact / "model.onnx"), providers=["CPUExecutionProvider"])
    logits = np.concatenate([sess.run(None, {"input": data["input"][i : i + 1]})[0] for i in range(100)])
    assert acc["before"]["top1"] == pytest.approx(top_k(logits, data["labels"][:100]))
    # The device's fp32 runtime matches this host's reference exactly (same ORT build here).
    assert acc["before_vs_host_reference"]["logits"]["max_abs_error"] == 0
    fid = acc["fidelity"]["logits"]
    assert 0.99 < fid["cosine"] < 1.0 and fid["max_abs_error"] > 0  # int8 is close, not identical


def test_results_folded_into_the_report_and_manifest_still_valid(measured):
    artifact, record = measured
    report = json.loads((artifact / "report.json").read_text())
    folded = report["measurements"]["local"]
    assert folded["file"] == record["file"] and (artifact / record["file"]).is_file()
    assert "samples_us" not in folded["latency"]["after"]["sessions"][0]  # slimmed: histogram instead
    hist = folded["latency"]["after"]["sessions"][0]["histogram_us"]
    assert sum(hist["counts"]) + hist["clipped_below"] + hist["clipped_above"] == record["latency"]["after"]["sessions"][0]["iterations"]
    assert len(hist["edges"]) == len(hist["counts"]) + 1 and hist["edges"] == sorted(hist["edges"])
    full = json.loads((artifact / record["file"]).read_text())
    assert len(full["latency"]["after"]["sessions"][0]["samples_us"]) == full["latency"]["after"]["sessions"][0]["iterations"]
    check_manifest(artifact)  # report.json changed, and its manifest entry with it


def test_text_output_names_scope_and_ratio(tmp_path, measured):
    artifact, _ = measured
    result = CliRunner().invoke(cli, ["measure", str(artifact), "--device", "local", *FAST_SESSION_ARGS, "--no-before"])
    assert result.exit_code == 0, result.output
    assert "scope: model mnist_cnn sha256" in result.stdout and "device local" in result.stdout
    assert "no ratio: before and after were not both measured" in result.stdout


def test_refuses_artifact_for_another_chip(tmp_path):
    dest = tmp_path / "m" / "rk3588"
    with ArtifactBuilder(dest) as art:
        (art.path / "model.onnx").write_bytes(b"not used")
        (art.path / "report.json").write_text("{}")
        art.manifest_fields.update(target={"target": "rknn", "chip": "rk3588"})
    inv = write_inventory(tmp_path / "inv.json", {"s3": {"chip": "esp32s3", "transport": "local"}})
    runner = CliRunner()
    result = runner.invoke(cli, ["measure", str(dest), "--device", "s3", "--inventory", str(inv)])
    assert result.exit_code != 0
    assert "was built for rk3588, not esp32s3" in str(result.exception)
    # `local` is this machine, which runs nothing of an RKNN artifact: it says why, before reading anything else.
    result = runner.invoke(cli, ["measure", str(dest), "--device", "local"])
    assert result.exit_code != 0
    assert "Nothing of this RKNN artifact runs on this machine" in str(result.exception)
    assert "load_rknn" in str(result.exception) and "--device NAME" in str(result.exception)
    # An inventory device without a chip is no board either.
    inv = write_inventory(tmp_path / "inv2.json", {"box": {"transport": "ssh", "host": "box.invalid"}})
    result = runner.invoke(cli, ["measure", str(dest), "--device", "box", "--inventory", str(inv)])
    assert "declares no chip" in str(result.exception)


@pytest.mark.parametrize("chip, why", [("esp32s3", "esp-ppq cannot load a .espdl file"), ("jetson-orin-nano", "runs nowhere else"), ("am68a", "not their time")])
def test_measure_local_says_why_a_chip_artifact_does_not_run_here(tmp_path, chip, why):
    from edgedeploy.targets import find_chip

    target, _ = find_chip(chip)
    dest = tmp_path / "m" / chip
    with ArtifactBuilder(dest) as art:
        (art.path / "report.json").write_text("{}")
        art.manifest_fields.update(target={"target": target.id, "chip": chip})
    result = CliRunner().invoke(cli, ["measure", str(dest), "--device", "local"])
    assert result.exit_code != 0
    message = str(result.exception)
    assert message.startswith(f"Nothing of this {target.name} artifact runs on this machine") and why in message
    if chip == "esp32s3":
        assert "--device esp32s3@PORT" in message


def test_bad_requests_are_one_sentence(tmp_path, measured):
    artifact, _ = measured
    runner = CliRunner()
    r = runner.invoke(cli, ["measure", str(artifact), "--device", "local", "--sessions", "2"])
    assert r.exit_code != 0 and "at least 3 independent sessions" in str(r.exception)
    r = runner.invoke(cli, ["measure", str(tmp_path), "--device", "local"])
    assert "manifest.json is missing" in str(r.exception)
    r = runner.invoke(cli, ["measure", str(artifact), "--device", "nope"])
    assert "Unknown device 'nope'" in str(r.exception)


def test_runner_failure_keeps_the_other_runner(tmp_path, monkeypatch):
    """A device whose Python lacks onnxruntime: the runners say so in one sentence; nothing hangs."""
    artifact = make_artifact(tmp_path / "a", "fp32")
    fake_python = tmp_path / "python-without-ort"
    fake_python.write_text("#!/bin/sh\nexec python3 -S -I \"$@\"\n")  # -S: no site-packages, so no numpy/onnxruntime
    fake_python.chmod(0o755)
    inv = write_inventory(tmp_path / "inv.json", {"bare": {"transport": "local", "python": str(fake_python)}})
    r = CliRunner().invoke(cli, ["measure", str(artifact), "--device", "bare", "--inventory", str(inv), *FAST_SESSION_ARGS])
    assert r.exit_code != 0
    message = str(r.exception)
    assert "needs numpy and onnxruntime on the device" in message and "marked partial" in message
    report = json.loads((artifact / "report.json").read_text())
    assert report["measurements"]["bare"]["partial"] is True


def test_measure_a_real_target_runner_tidl_without_a_board(tmp_path, monkeypatch):
    """The TIDL target's own runner_spec through measure, on this machine declared as an am68a
    (no TI board here: its runner falls back to ONNX Runtime CPU and says so; the figures are
    CPU figures). Checks measure works with a runner of another convention: per-sample inputs,
    outputs keyed by name, scope with model_sha256."""
    from edgedeploy.pipeline.build import BuildOptions, run_build
    from edgedeploy.sample import sample_model_path

    monkeypatch.delenv("TIDL_TOOLS_PATH", raising=False)
    artifact = run_build(sample_model_path(), "am68a", BuildOptions(out_root=tmp_path / "out", eval_count=16), echo=lambda line: None)
    inv = write_inventory(tmp_path / "inv.json", {"ti-here": {"chip": "am68a", "transport": "local"}})
    r = CliRunner().invoke(cli, ["measure", str(artifact), "--device", "ti-here", "--inventory", str(inv), "--format", "json", *FAST_SESSION_ARGS])
    assert r.exit_code == 0, r.output
    record = json.loads(r.stdout)
    after, before = record["latency"]["after"], record["latency"]["before"]
    assert "CPUExecutionProvider" in before["scope"]["backend"]
    assert after["scope"]["model"]["sha256"] == record["artifact"]["model"]["sha256"]
    assert all(s.get("tidl_fallback") for s in after["sessions"])  # the fallback is on record, not hidden
    assert record["comparison"]["speedup"] > 0
    assert record["accuracy"]["metric"] == "fidelity"
    assert record["accuracy"]["before_vs_host_reference"]["logits"]["cosine"] > 0.9999
