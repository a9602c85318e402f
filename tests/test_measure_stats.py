"""The harness's statistics, by hand: percentiles, per-session summaries, across-session summaries,
and the rule that only same-scope figures are divided."""

from __future__ import annotations

import math

import pytest

from edgedeploy.measure import protocol
from edgedeploy.pipeline.bench import compare
from edgedeploy.measure.harness import SessionPlan, make_measurement, summarize_sessions
from edgedeploy.measure.schema import ScopeMismatch, make_scope, ratio, scope_differences, validate_measurement

DEVICE = {"hostname": "box", "cpu_model": "Test CPU", "cpu_cores": 4, "accelerators": [], "frequency_governors": ["performance"]}
MODEL = {"name": "m", "sha256": "a" * 64, "format": "onnx"}


def test_percentile_by_hand():
    values = [10.0, 20.0, 30.0, 40.0, 50.0]
    # (n-1) * q: p50 -> index 2 exactly; p90 -> 3.6 -> 40 + 0.6*10; p99 -> 3.96 -> 40 + 0.96*10
    assert protocol.percentile(values, 50) == 30.0
    assert protocol.percentile(values, 90) == pytest.approx(46.0)
    assert protocol.percentile(values, 99) == pytest.approx(49.6)
    assert protocol.percentile(values, 0) == 10.0
    assert protocol.percentile(values, 100) == 50.0
    assert protocol.percentile([7.0], 99) == 7.0
    assert protocol.percentile([], 50) is None


def test_summarize_us_by_hand():
    stats = protocol.summarize_us([4, 1, 3, 2])  # sorted 1 2 3 4
    assert stats["count"] == 4
    assert (stats["min"], stats["max"]) == (1.0, 4.0)
    assert stats["mean"] == 2.5
    assert stats["p50"] == 2.5  # index 1.5
    assert stats["p90"] == pytest.approx(3.7)  # index 2.7
    assert stats["p99"] == pytest.approx(3.97)  # index 2.97
    # sample standard deviation of 1..4: sqrt(5/3)
    assert stats["stdev"] == pytest.approx(math.sqrt(5 / 3))


class FakeClock:
    """A clock that advances by a given cost per read, and by the run's own duration."""

    def __init__(self):
        self.now = 0

    def __call__(self):
        return self.now


def test_time_session_first_call_apart_warmup_and_minimums():
    clock = FakeClock()
    calls = []

    def run_once():
        calls.append(clock.now)
        # the first call is slow (lazy initialisation), later ones take 1 ms
        clock.now += 50_000_000 if len(calls) == 1 else 1_000_000

    timing = protocol.time_session(run_once, warmup=3, min_iterations=5, min_duration_s=0.010, clock=clock)
    assert timing["first_inference_us"] == 50_000.0
    assert timing["warmup"] == 3
    # 1 first + 3 warm-up + timed; min_duration 10 ms at 1 ms each dominates min_iterations 5
    assert timing["iterations"] == 10
    assert len(calls) == 1 + 3 + 10
    assert timing["samples_us"] == [1000.0] * 10


def test_time_session_stops_at_max_iterations():
    clock = FakeClock()

    def run_once():
        clock.now += 1000

    timing = protocol.time_session(run_once, warmup=0, min_iterations=1, min_duration_s=1000.0, max_iterations=7, clock=clock)
    assert timing["iterations"] == 7


def _session(pid, samples, first=500.0, batch=1):
    timing = {"first_inference_us": first, "warmup": 1, "iterations": len(samples), "duration_s": sum(samples) / 1e6, "samples_us": samples}
    return protocol.session_result(timing, {"backend": "x"}, batch=batch, extra={"pid": pid})


def test_summarize_sessions_by_hand():
    sessions = [_session(1, [10, 12, 14], first=900), _session(2, [20, 22, 24], first=700), _session(3, [11, 13, 15], first=800)]
    s = summarize_sessions(sessions)
    assert s["sessions"] == 3
    assert s["session_median_range_us"] == [12.0, 22.0]
    assert s["median_us"] == 13.0  # median of 12, 22, 13
    assert s["session_mean_range_us"] == [12.0, 22.0]
    assert s["min_us"] == 10.0 and s["max_us"] == 24.0
    assert s["spread_percent"] == pytest.approx(100 * (22 - 12) / 12)
    assert s["first_inference_range_us"] == [700.0, 900.0]
    # throughput from each session's mean: 1e6/12, 1e6/22, 1e6/13 -> median 1e6/13
    assert s["throughput_items_per_s"] == pytest.approx(1e6 / 13)


def test_throughput_counts_items_of_a_batch():
    s = summarize_sessions([_session(i, [1000.0] * 3, batch=8) for i in range(3)])
    assert s["throughput_items_per_s"] == pytest.approx(8000.0)


def _measurement(backend, median, **scope_changes):
    fields = dict(model=MODEL, input_shapes={"input": [1, 3, 8, 8]}, batch=1, precision="fp32", backend=backend, threads=4, device=DEVICE)
    fields.update(scope_changes)
    scope = make_scope(**fields)
    sessions = [_session(i, [median] * 3) for i in range(3)]
    backend_info = {"name": backend, "label": backend, "kind": "runtime", "unit": "cpu", "libraries": {}}
    return make_measurement(scope, backend_info, SessionPlan(), sessions, dict(DEVICE))


def test_ratio_only_within_one_varying_field():
    a = _measurement("ort-cpu", 100.0)
    b = _measurement("tflite-cpu", 50.0)
    validate_measurement(a)
    assert ratio(a, b, "backend") == 2.0
    other_precision = _measurement("tflite-cpu", 50.0, precision="fp16")
    assert scope_differences(a["scope"], other_precision["scope"]) == ["precision", "backend"]
    with pytest.raises(ScopeMismatch, match="precision"):
        ratio(a, other_precision, "backend")
    other_model = _measurement("tflite-cpu", 50.0, model=dict(MODEL, sha256="b" * 64))
    with pytest.raises(ScopeMismatch, match="model"):
        ratio(a, other_model, "backend")


def test_never_divides_across_devices():
    a = _measurement("ort-cpu", 100.0)
    elsewhere = _measurement("ort-cpu", 50.0, device=dict(DEVICE, hostname="board"))
    assert scope_differences(a["scope"], elsewhere["scope"]) == ["device"]
    with pytest.raises(ScopeMismatch, match="different devices"):
        ratio(a, elsewhere, "device")
    with pytest.raises(ScopeMismatch, match="device"):
        ratio(a, elsewhere, "backend")


def test_model_identity_is_the_hash_not_the_file_name():
    a = _measurement("ort-cpu", 100.0)
    renamed = _measurement("tflite-cpu", 50.0, model=dict(MODEL, name="renamed"))
    assert ratio(a, renamed, "backend") == 2.0


def test_compare_names_fastest_and_excludes_other_scopes():
    ort = _measurement("ort-cpu", 100.0)
    tfl = _measurement("tflite-cpu", 40.0)
    torch_fp16 = _measurement("torch-eager-cuda", 10.0, precision="fp16")
    sim = _measurement("rknn-sim", 1.0)
    sim["backend"]["kind"] = "simulator"
    # simulators are never ranked; results whose scope differs from the fastest's in more than
    # the backend are listed as excluded, with the field that differs
    result = compare([ort, tfl, sim])
    assert result["fastest"] == "tflite-cpu"
    assert [(e["backend"], e["ratio_to_fastest"]) for e in result["entries"]] == [("tflite-cpu", 1.0), ("ort-cpu", 2.5)]
    assert result["excluded"] == [{"backend": "rknn-sim", "reason": "a simulator or estimate, not a runtime of this device"}]
    mixed = compare([ort, tfl, torch_fp16])
    assert mixed["fastest"] == "torch-eager-cuda"
    assert {e["backend"] for e in mixed["excluded"]} == {"ort-cpu", "tflite-cpu"}
    assert all("precision" in e["reason"] for e in mixed["excluded"])


def test_ranges_overlap_flag():
    a = _measurement("ort-cpu", 100.0)
    b = _measurement("tflite-cpu", 99.0)
    a["summary"]["session_median_range_us"] = [95.0, 105.0]
    b["summary"]["session_median_range_us"] = [90.0, 101.0]
    result = compare([a, b])
    entry = next(e for e in result["entries"] if e["backend"] == "ort-cpu")
    assert entry["ranges_overlap_fastest"] is True


def test_plan_needs_three_sessions():
    from edgedeploy.errors import OptionError

    with pytest.raises(OptionError, match="at least 3"):
        SessionPlan(sessions=2).check()
