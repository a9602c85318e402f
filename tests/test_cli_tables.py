"""Text output that fits the terminal, one unit per column, and ratios within the session noise
never printed as the headline (measure's and report's renderings; bench has its own tests)."""

from __future__ import annotations

import os
import re

from edgedeploy.report.fmt import table
from edgedeploy.report.text import comparison_lines, render_measurement
from tests.helpers import run_cli


def _env(**extra):
    env = dict(os.environ)
    env.pop("COLUMNS", None)
    env.update(extra)
    return env


def test_audit_matrix_of_every_chip_fits_80_columns():
    fitted = run_cli("-q", "audit", "--target", "all", env=_env(COLUMNS="80"))
    assert fitted.returncode == 0, fitted.stderr
    lines = fitted.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    headers = [line.split() for line in lines if line.startswith("OPERATOR")]
    assert len(headers) >= 2  # wrapped into blocks of chips, each with the row labels
    chips = [c for h in headers for c in h[2:]]
    assert len(chips) == len(set(chips)) == 17 and {"esp32s3", "rk3588", "imx93", "jetson-orin-nano", "am69a"} <= set(chips)
    assert "(chips 1-" in fitted.stdout
    # Into a pipe with no COLUMNS: the full table, one block, for scripts.
    full = run_cli("-q", "audit", "--target", "all", env=_env())
    assert sum(1 for line in full.stdout.splitlines() if line.startswith("OPERATOR")) == 1
    assert max(len(line) for line in full.stdout.splitlines()) > 80


def test_wide_table_blocks_repeat_the_row_labels():
    text = table(["NAME", "N", *[f"chip{i:02d}" for i in range(12)]], [["Conv", 3, *["acc"] * 12], ["Relu", 4, *["fallback"] * 12]], right_align=(1,), width=60, keep=2, what="chips")
    blocks = text.split("\n\n")
    assert len(blocks) > 1
    for block in blocks:
        rows = block.splitlines()
        assert rows[0].startswith("(chips ") and rows[1].startswith("NAME") and rows[3].startswith("Conv") and rows[4].startswith("Relu")
        assert max(len(r) for r in rows[1:]) <= 60
    assert table(["A", "B"], [["1", "2"]], width=60) == table(["A", "B"], [["1", "2"]])


def _session(p50, p99, maximum, first):
    return {"session": 1, "iterations": 100, "latency_us": {"mean": p50, "p50": p50, "p90": p50, "p99": p99, "min": p50 * 0.9, "max": maximum}, "first_inference_us": first}


def test_measure_table_has_one_unit_per_column():
    rec = {
        "backend": {"label": "ONNX Runtime CPU"},
        "scope": {"model": {"name": "m", "sha256": "ab" * 32}, "input_shapes": {"x": [1, 3]}, "batch": 1, "precision": "fp32", "backend": "ort-cpu", "device": {"name": "local"}},
        "sessions": [_session(75.0, 180.0, 35000.0, 1500.0), _session(80.0, 200.0, 1200.0, 900.0)],
        "summary": {"median_us": 77.5, "session_median_range_us": [75.0, 80.0], "spread_percent": 6.7, "session_p99_range_us": [180.0, 200.0], "first_inference_range_us": [900.0, 1500.0]},
    }
    text = render_measurement({"artifact": {"path": "/a"}, "device": {"name": "local", "transport": "local"}, "latency": {"after": rec}, "comparison": {}})
    header = next(line for line in text.splitlines() if "SESSION" in line)
    assert "MEDIAN (us)" in header and "MAX (ms)" in header and "FIRST (us)" in header
    rows = [line.split() for line in text.splitlines() if re.match(r"^\s+[12]\s+100\s", line)]
    assert rows and all(re.fullmatch(r"[\d.]+", cell) for row in rows for cell in row)  # no unit inside a cell
    assert rows[0][3] == "75.0" and rows[0][7] == "35.0"  # the 35 ms MAX does not turn the 75 us median into 0.07


def test_a_ratio_within_the_session_noise_is_not_the_headline():
    base = {"before_median_us": 100.0, "after_median_us": 95.0, "basis": "median of session medians", "speedup": 100 / 95, "ratio": "before / after", "deployment": {}}
    noisy = comparison_lines(dict(base, session_ranges_overlap=True))[0]
    assert "within session noise" in noisy and "as fast as" not in noisy and "1.05x" not in noisy
    clear = comparison_lines(dict(base, session_ranges_overlap=False))[0]
    assert "after is 1.05x as fast as before" in clear
