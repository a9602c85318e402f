"""`edgedeploy bench` end to end on the bundled sample with ONNX Runtime CPU (real sessions in
real subprocesses, small iteration counts), `--backend all` with nothing else installed, and the
bad inputs that must end in one clear error."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from edgedeploy.measure.schema import BENCH_SCHEMA, validate_bench

QUICK = ["--min-iterations", "20", "--min-duration", "0.05", "--warmup", "3"]


def edgedeploy(*args, env_extra=None, timeout=600):
    env = dict(os.environ)
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-m", "edgedeploy", *args], capture_output=True, text=True, env=env, timeout=timeout)


@pytest.fixture
def empty_home(tmp_path):
    """An EDGEDEPLOY_HOME with no toolchain installed: every optional backend must be skipped, saying why."""
    home = tmp_path / "home"
    home.mkdir()
    return {"EDGEDEPLOY_HOME": str(home), "EDGEDEPLOY_TORCH_PYTHON": ""}


def test_bench_sample_ort_cpu_json(tmp_path):
    out = tmp_path / "bench.json"
    r = edgedeploy("bench", "--backend", "ort-cpu", "--format", "json", *QUICK)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)  # stdout is pure JSON
    # -o FILE: the same document goes to the file instead of stdout (JSON from the extension).
    again = edgedeploy("bench", "--backend", "ort-cpu", "--out", str(out), *QUICK)
    assert again.returncode == 0 and again.stdout == "", again.stderr
    assert json.loads(out.read_text())["schema"] == doc["schema"]
    validate_bench(doc)
    assert doc["schema"] == BENCH_SCHEMA
    [m] = doc["results"]
    scope = m["scope"]
    assert scope["backend"] == "ort-cpu" and scope["batch"] == 1 and scope["precision"] == "fp32"
    assert scope["input_shapes"] == {"input": [1, 1, 28, 28]}
    assert len(scope["model"]["sha256"]) == 64 and scope["device"]["cpu_model"]
    # three sessions, each its own process, none of them this test's or the CLI's
    pids = [s["pid"] for s in m["sessions"]]
    assert len(pids) == 3 and len(set(pids)) == 3 and os.getpid() not in pids
    for s in m["sessions"]:
        lat = s["latency_us"]
        assert s["iterations"] >= 20 and lat["count"] == s["iterations"]
        assert 0 < lat["min"] <= lat["p50"] <= lat["p90"] <= lat["p99"] <= lat["max"]
        assert s["first_inference_us"] > 0 and s["threads"] >= 1
    sm = m["summary"]
    medians = sorted(s["latency_us"]["p50"] for s in m["sessions"])
    assert sm["median_us"] == medians[1] and sm["session_median_range_us"] == [medians[0], medians[2]]
    assert m["backend"]["libraries"]["onnxruntime"]
    assert doc["comparison"]["fastest"] == "ort-cpu"
    assert "samples_us" not in m["sessions"][0]  # only with --samples


def test_bench_text_shows_sessions_scope_and_fastest():
    r = edgedeploy("bench", "--backend", "ort-cpu", "--threads", "1", "--sessions", "3", *QUICK)
    assert r.returncode == 0, r.stderr
    text = r.stdout
    assert "SESSION" in text and "MEDIAN" in text and "P99" in text and "FIRST" in text
    assert "scope: mnist_cnn sha256" in text and "batch 1, fp32, 1 threads" in text
    assert "across sessions: median" in text
    assert "fastest: ort-cpu" in text
    assert "differ only in the backend" in text
    # progress on stderr, not in the data: a line per session with the time since bench began,
    # and how long the session took (stderr is a pipe here: plain lines, no live line)
    assert "session 1/3" in r.stderr and "session 1/3" not in text
    assert "\r" not in r.stderr
    import re

    took = [line for line in r.stderr.splitlines() if re.match(r"^\[\s*\d+\.\d s\]\s+ort-cpu session \d/3 \(pid \d+\).*session took \d+\.\d s$", line)]
    assert len(took) == 3, r.stderr
    # one unit per column, named in the header
    assert "MEDIAN (us)" in text and "FIRST (" in text and "times in us" not in text


def test_bench_batch_gives_throughput():
    r = edgedeploy("bench", "--backend", "ort-cpu", "--batch", "4", "--format", "json", "--samples", *QUICK)
    assert r.returncode == 0, r.stderr
    m = json.loads(r.stdout)["results"][0]
    assert m["scope"]["batch"] == 4 and m["scope"]["input_shapes"]["input"][0] == 4
    s = m["sessions"][0]
    assert len(s["samples_us"]) == s["iterations"]
    assert s["throughput_items_per_s"] == pytest.approx(4 * 1e6 / s["latency_us"]["mean"])


def test_backend_all_names_what_it_skipped_and_why(empty_home):
    r = edgedeploy("bench", "--backend", "all", "--format", "json", *QUICK, env_extra=empty_home)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    ran = [m["scope"]["backend"] for m in doc["results"]]
    assert "ort-cpu" in ran
    skipped = {s["backend"]: s["reason"] for s in doc["skipped"]}
    for name in ("torch-eager-cpu", "torch-compile-cpu", "torch-eager-cuda", "torch-compile-cudagraphs-cuda", "torch-eager-capture-cuda", "torch-compile-capture-cuda"):
        assert "torch toolchain is not installed" in skipped[name]
    assert "eiq toolchain" in skipped["tflite-cpu"]
    assert "reports no time" in skipped["rknn-sim"] and "reports no time" in skipped["espdl-sim"]
    assert "estimate" in skipped["vela-estimate"]
    assert doc["comparison"]["fastest"] in ran
    text = edgedeploy("bench", "--backend", "all", *QUICK, env_extra=empty_home)
    assert text.returncode == 0
    assert "skipped:" in text.stdout and "torch-eager-cpu: the torch toolchain is not installed" in text.stdout


def _one_clear_error(r, *phrases):
    assert r.returncode != 0
    assert "Traceback" not in r.stderr
    errors = [line for line in r.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, r.stderr
    for phrase in phrases:
        assert phrase in errors[0], errors[0]


def test_unknown_backend_is_one_clear_error():
    r = edgedeploy("bench", "--backend", "ort-cpu,tensorflow-gpu", *QUICK)
    _one_clear_error(r, "Unknown backend 'tensorflow-gpu'", "ort-cpu", "all")
    assert r.returncode == 2


def test_bad_pt2_is_one_clear_error(tmp_path):
    not_zip = tmp_path / "model.pt2"
    not_zip.write_bytes(b"this is not a torch.export archive")
    _one_clear_error(edgedeploy("bench", str(not_zip), "--backend", "torch-eager-cpu", *QUICK), "not a torch.export archive")
    import zipfile

    other_zip = tmp_path / "other.pt2"
    with zipfile.ZipFile(other_zip, "w") as z:
        z.writestr("readme.txt", "hello")
    _one_clear_error(edgedeploy("bench", str(other_zip), "--backend", "torch-eager-cpu", *QUICK), "not one written by torch.export.save")


def test_explicit_backend_that_cannot_run_fails_with_its_reason(empty_home):
    r = edgedeploy("bench", "--backend", "tflite-cpu", *QUICK, env_extra=empty_home)
    _one_clear_error(r, "No backend could be timed", "tflite-cpu", "eiq toolchain")


def test_out_is_not_overwritten_without_force(tmp_path):
    out = tmp_path / "bench.json"
    out.write_text("keep me")
    r = edgedeploy("bench", "--out", str(out), *QUICK)
    _one_clear_error(r, "exists already", "--force")
    assert out.read_text() == "keep me"


def test_fewer_than_three_sessions_refused():
    r = edgedeploy("bench", "--sessions", "2", *QUICK)
    assert r.returncode == 2 and "--sessions" in r.stderr


def test_fp16_on_an_fp32_onnx_model_skips_ort_with_reason():
    r = edgedeploy("bench", "--backend", "ort-cpu", "--precision", "fp16", *QUICK)
    _one_clear_error(r, "its own precision (fp32)")


def test_batch_contradicting_a_fixed_batch(tmp_path, sample_model_path):
    import onnx

    from edgedeploy.model import load_model

    fixed = tmp_path / "fixed2.onnx"
    onnx.save(load_model(sample_model_path, {"input": (2, 1, 28, 28)}).proto, str(fixed))
    _one_clear_error(edgedeploy("bench", str(fixed), "--batch", "4", *QUICK), "fixed batch of 2")
