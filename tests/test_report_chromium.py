"""The HTML report rendered by a real headless Chromium: tables and plots are in the live DOM.

Skipped (with the reason) where Debian's `chromium` is not installed.
"""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from edgedeploy.report.artifact import load_artifact
from edgedeploy.report.combine import combine
from edgedeploy.report.html import render_html
from tests.measure_helpers import add_test_audit, fast_settings, make_artifact

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def chromium_binary() -> str:
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    pytest.skip("needs Debian's chromium (apt-get install chromium) to render the HTML report headless")


def run_chromium(tmp_path, *args: str) -> subprocess.CompletedProcess:
    profile = tmp_path / "chromium-profile"
    return subprocess.run(
        [chromium_binary(), *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_chromium_renders_tables_and_plots(tmp_path):
    from edgedeploy.devices import local_device
    from edgedeploy.pipeline.measure import MeasureRequest, run_measure

    art = make_artifact(tmp_path / "out", "int8-qdq")
    add_test_audit(art)
    run_measure(MeasureRequest(art, local_device(), fast_settings(), eval_count=40))
    page = tmp_path / "report.html"
    page.write_text(render_html(combine([load_artifact(art)])))

    dom = run_chromium(tmp_path, "--dump-dom", page.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    html = dom.stdout
    # Chromium parsed the page into the DOM: every table and plot survived as elements.
    for table in ("artifacts", "audit-nodes", "accuracy", "latency"):
        assert re.search(rf'<table class="{table}">', html), table
    assert len(re.findall(r'<tr>', html)) >= 1 + 13 + 1 + 2  # artifacts, nodes, accuracy, latency rows
    for plot in ("latency-plot", "accuracy-plot", "audit-matrix"):
        assert re.search(rf'<svg[^>]*class="plot {plot}"', html), plot
    assert len(re.findall(r'<rect class="hist"', html)) >= 3 * 2  # bars for every session of before and after
    assert len(re.findall(r'<rect class="cell ', html)) == 5  # 5 op types x 1 chip
    assert len(re.findall(r'<rect class="bar (before|after)"', html)) == 2

    shot = tmp_path / "report.png"
    result = run_chromium(tmp_path, f"--screenshot={shot}", "--window-size=1200,2400", page.as_uri())
    assert result.returncode == 0 and shot.exists()
    png = shot.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 20000  # a drawn page, not a blank one
