"""The estimator's calibration data: the vendors' published device latencies and the manifest of
the models rebuilt here (toolkit/estimate/data/), and the page rendered from them.

Checks the table's schema and provenance, that every row used for fitting is unambiguous and
names a model rebuilt faithfully, that no figure enters the fit twice (RK3566/RK3568 share one
Rockchip measurement), and that docs/estimate-figures.md is what the data renders.
"""

from __future__ import annotations

import csv
import importlib.util
import json
import math
import re
from collections import Counter
from pathlib import Path

import pytest

from edgedeploy.targets import chip_ids

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "toolkit" / "estimate" / "data"
COLUMNS = ["chip", "model_key", "model_name_as_published", "latency_ms", "published_value", "published_unit",
           "input_shape", "precision", "batch", "npu_cores", "accelerator", "scope", "runtime_and_version",
           "toolchain_version", "source", "source_version", "usable", "note"]
SCOPES = {"inference_only", "end_to_end", "unknown"}
PRECISIONS = {"int8", "int16", "fp16", "fp32", "int8+int16"}


def _rows() -> list[dict]:
    with open(DATA / "published_figures.csv", newline="") as f:
        reader = csv.DictReader(f)
        assert reader.fieldnames == COLUMNS
        return list(reader)


ROWS = _rows()
USABLE = [r for r in ROWS if r["usable"] == "yes"]
MANIFEST = json.loads((DATA / "models_manifest.json").read_text())["models"]


def _id(r: dict) -> str:
    return f"{r['chip']}:{r['model_key'] or r['model_name_as_published']}:{r['precision']}:{r['npu_cores']}"


def test_every_row_names_a_known_chip_its_source_and_whether_it_is_used():
    known = set(chip_ids())
    for r in ROWS:
        assert r["chip"] in known, _id(r)
        assert r["usable"] in ("yes", "no"), _id(r)
        assert r["scope"] in SCOPES, _id(r)
        assert r["source"].startswith("https://"), _id(r)
        assert r["source_version"].strip(), _id(r)
        assert r["runtime_and_version"].strip() and r["toolchain_version"].strip(), _id(r)
        if r["usable"] == "no":
            assert r["note"].strip(), f"{_id(r)} is left out without a reason"


@pytest.mark.parametrize("row", USABLE, ids=_id)
def test_a_usable_row_is_one_unambiguous_inference_of_a_rebuilt_model(row):
    assert row["scope"] == "inference_only"
    assert row["batch"] == "1"
    assert row["precision"] in PRECISIONS
    assert int(row["npu_cores"]) >= 1
    latency = float(row["latency_ms"])
    assert latency > 0
    value = float(re.match(r"[\d.]+", row["published_value"]).group())
    if row["published_unit"] == "FPS":
        assert math.isclose(latency, 1000.0 / value, rel_tol=1e-3)
    else:
        assert row["published_unit"].startswith("ms")
        assert math.isclose(latency, value, rel_tol=1e-9)
    entry = MANIFEST.get(row["model_key"])
    assert entry is not None, f"{row['model_key']} is not in models_manifest.json"
    assert entry["faithful"] is True and entry.get("file"), entry.get("fidelity_note")


def test_no_figure_enters_the_fit_twice():
    keys = Counter((r["chip"], r["model_key"], r["precision"], r["npu_cores"], r["accelerator"]) for r in USABLE)
    assert [k for k, n in keys.items() if n > 1] == []


def test_rk3568_repeats_the_shared_rk3566_column_and_is_never_fitted():
    rk3566 = {(r["model_name_as_published"], r["precision"]): r["published_value"] for r in ROWS if r["chip"] == "rk3566"}
    rk3568 = [r for r in ROWS if r["chip"] == "rk3568"]
    assert rk3568, "the RK3566/RK3568 column should be present for both chips"
    for r in rk3568:
        assert r["usable"] == "no" and "same measurement" in r["note"]
        assert rk3566[(r["model_name_as_published"], r["precision"])] == r["published_value"]


def test_four_chips_have_at_least_fifteen_usable_figures():
    per_chip = Counter(r["chip"] for r in USABLE)
    assert sum(n >= 15 for n in per_chip.values()) >= 4, per_chip


def test_manifest_entries_pin_their_file_and_say_how_they_were_built():
    for key, entry in MANIFEST.items():
        if not entry.get("file"):
            assert entry["faithful"] is False and entry.get("fidelity_note"), key
            continue
        assert re.fullmatch(r"[0-9a-f]{64}", entry["sha256"]), key
        assert entry["file"] == f"{key}.onnx"
        assert entry["inputs"] and isinstance(entry["opset"], int), key
        assert entry["built_by"] and entry["definition"].startswith("https://"), key
        if not entry["faithful"]:
            assert entry["fidelity_note"], key


def test_the_figures_page_is_rendered_from_the_data():
    spec = importlib.util.spec_from_file_location("render_figures_doc", ROOT / "scripts" / "estimate" / "render_figures_doc.py")
    render = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(render)
    expected = render.render(*render.load())
    assert (ROOT / "docs" / "estimate-figures.md").read_text() == expected, "run scripts/estimate/render_figures_doc.py"


SIZED = {k: e for k, e in MANIFEST.items() if e.get("published_size") and e.get("parameters")}


@pytest.mark.parametrize("key", sorted(SIZED))
def test_a_rebuilt_model_has_the_size_its_authors_publish(key):
    """Parameters within 8% (BatchNormalization is folded here, counted in Keras' totals) and
    FLOPs = 2 x MACs within 10% (counting conventions differ) of the published figures."""
    entry = SIZED[key]
    size = entry["published_size"]
    assert entry["parameters"] / 1e6 == pytest.approx(size["params_millions"], rel=0.08)
    if size.get("gflops"):
        assert 2 * entry["macs"]["known_total"] / 1e9 == pytest.approx(size["gflops"], rel=0.10)


def test_the_size_check_covers_two_thirds_of_the_fitted_models():
    fitted = {r["model_key"] for r in USABLE}
    assert len(fitted & set(SIZED)) >= 2 / 3 * len(fitted), sorted(fitted - set(SIZED))


def test_the_transcriber_keeps_a_row_it_cannot_fit_and_says_why():
    spec = importlib.util.spec_from_file_location("transcribe_published", ROOT / "scripts" / "estimate" / "transcribe_published.py")
    transcriber = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(transcriber)
    table = [{"model_key": key, "usable": "yes", "note": "as published"} for key in ("built", "approximate", "failed", "absent")]
    table.append({"model_key": "built", "usable": "no", "note": "ambiguous scope"})
    models = {"built": {"file": "built.onnx", "faithful": True}, "approximate": {"file": "a.onnx", "faithful": False, "fidelity_note": "head differs"},
              "failed": {"file": None, "faithful": False, "fidelity_note": "build failed: X"}}
    transcriber.gate_on_manifest(table, models)
    assert [r["usable"] for r in table] == ["yes", "no", "no", "no", "no"]
    assert table[1]["note"].startswith("rebuilt only approximately (head differs)")
    assert table[2]["note"].startswith("not rebuilt here (build failed: X)")
    assert table[3]["note"].startswith("not rebuilt here (no faithful rebuild")
    assert table[4]["note"] == "ambiguous scope" and table[0]["note"] == "as published"
