"""bench's terminal output without running a backend: one unit per column, ratios within the
session noise never as the headline. The measurements are built with the real harness and
comparison code from made-up session results, so every rule is checked on the objects bench
really prints. (bench's progress lines: tests/test_cli_progress.py.)"""

from __future__ import annotations

from edgedeploy.cli.bench_cmd import headline, in_unit, render_text, unit_for
from edgedeploy.pipeline.bench import compare
from edgedeploy.measure.harness import make_measurement
from edgedeploy.measure.schema import BENCH_SCHEMA, make_scope, validate_bench

DEVICE = {"hostname": "box", "cpu_model": "Test CPU", "cpu_cores": 4, "cpu_cores_usable": 4, "frequency_governors": [],
          "machine": "x86_64", "os": "Linux", "python": "3.11", "accelerators": ["Test GPU"]}
PROTOCOL = {"sessions": 3, "warmup": 10, "min_iterations": 50, "min_duration_s": 1.0, "max_iterations": 100000}


def session(pid, median, first, worst=None):
    worst = worst or median * 2
    lat = {"count": 100, "min": median * 0.9, "mean": median * 1.1, "p50": median, "p90": median * 1.2, "p99": median * 1.5, "max": worst, "stdev": 1.0}
    return {"pid": pid, "first_inference_us": first, "warmup": 10, "iterations": 100, "duration_s": 1.0, "latency_us": lat,
            "batch": 1, "throughput_items_per_s": 1e6 / lat["mean"]}


def measurement(backend, medians, firsts, worst=None):
    scope = make_scope({"name": "net", "sha256": "ab" * 32, "format": "onnx"}, {"x": [1, 3, 8, 8]}, 1, "fp32", backend, 1, DEVICE)
    sessions = [session(100 + i, m, f, worst) for i, (m, f) in enumerate(zip(medians, firsts))]
    info = {"name": backend, "label": backend, "family": "x", "unit": "cpu", "kind": "runtime", "libraries": {}, "detail": {}}
    return make_measurement(scope, info, PROTOCOL, sessions, dict(DEVICE, threads=1, libraries={}))


def bench_doc(results):
    doc = {"schema": BENCH_SCHEMA, "edgedeploy_version": "0", "created_at": "now", "model": {"name": "net", "sha256": "ab" * 32, "format": "onnx", "path": "/x"},
           "request": {"protocol": PROTOCOL}, "device": DEVICE, "results": results, "skipped": [], "failed": [], "comparison": compare(results)}
    validate_bench(doc)
    return doc


def test_unit_for_keeps_a_column_under_ten_thousand_of_its_unit():
    assert unit_for([17.0, 9999.0]) == ("us", 1.0)
    assert unit_for([17.0, 10000.0]) == ("ms", 1e3)
    assert unit_for([46_600_000.0]) == ("s", 1e6)
    assert unit_for([None, 5.0]) == ("us", 1.0)
    assert in_unit(1869.0, ("us", 1.0)) == "1869" and in_unit(601_000.0, ("ms", 1e3)) == "601" and in_unit(7_000_000.0, ("s", 1e6)) == "7.00"


def test_every_column_has_one_unit_named_in_its_header():
    # A 30 s first inference (a torch.compile session) beside 1.9 ms latencies: the old table
    # printed "31772ms" under a header that said microseconds.
    fast = measurement("a", [1865.0, 2020.0, 1869.0], [31_772_000.0, 7_334_000.0, 6_975_000.0], worst=40_000.0)
    text = render_text(bench_doc([fast]))
    header = next(line for line in text.splitlines() if line.strip().startswith("SESSION"))
    assert "MEDIAN (us)" in header and "FIRST (s)" in header and "MAX (ms)" in header
    rows = [line.split() for line in text.splitlines() if line.strip().startswith(("1 ", "2 ", "3 "))]
    assert len(rows) == 3
    for cells in rows:  # numbers only: no unit glued to a cell
        for cell in cells:
            float(cell)
    assert rows[0][4] == "1865" and rows[0][9] == "31.8" and rows[0][8] == "40.0"
    assert "first inference 6.97-31.8 s" in text and "median 1869 us" in text


def test_a_ratio_within_session_noise_is_said_so_and_is_not_the_headline():
    fastest = measurement("ort-cpu", [327.0, 342.0, 441.0], [1200.0] * 3)
    overlapping = measurement("torch-graph", [438.0, 563.0, 574.0], [1.6e6] * 3)
    clearly_slower = measurement("torch-eager", [1512.0, 1548.0, 2141.0], [0.3e6] * 3)
    doc = bench_doc([fastest, overlapping, clearly_slower])
    text = render_text(doc)
    line = next(x for x in text.splitlines() if x.startswith("fastest:"))
    assert line.startswith("fastest: no clear winner") and "ort-cpu and torch-graph are within session noise" in line
    assert "faster than torch-graph" not in line and "4.53x faster than torch-eager" in line
    row = next(x for x in text.splitlines() if x.strip().startswith("torch-graph") and "within session noise" in x)
    assert "1.65" not in row  # the ratio of the medians is not printed for a tie
    # without the overlap the ratio is the finding
    apart = measurement("torch-graph", [600.0, 610.0, 620.0], [1.6e6] * 3)
    cmp = bench_doc([fastest, apart])["comparison"]
    assert headline(cmp, dict(cmp["scope"], backend="*")).startswith("fastest: ort-cpu for net") and "1.78x faster than torch-graph" in headline(cmp, dict(cmp["scope"], backend="*"))
