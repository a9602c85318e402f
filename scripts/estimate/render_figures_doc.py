"""Render docs/estimate-figures.md from the calibration data: the vendors' published device
latencies (toolkit/estimate/data/published_figures.csv) and the models rebuilt here
(toolkit/estimate/data/models_manifest.json).

    python scripts/estimate/render_figures_doc.py          # writes docs/estimate-figures.md
    python scripts/estimate/render_figures_doc.py --check  # exit 1 when the page is stale

tests/test_published_figures.py checks that the committed page is what this script renders.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "toolkit" / "estimate" / "data"
CSV_PATH = DATA / "published_figures.csv"
MANIFEST_PATH = DATA / "models_manifest.json"
DOC_PATH = ROOT / "docs" / "estimate-figures.md"

CHIP_ORDER = ["rk3588", "rk3576", "rk3566", "rk3568", "rk3562", "rv1106", "imx8mp", "imx93", "esp32s3", "esp32p4",
              "jetson-agx-orin", "jetson-orin-nx", "jetson-orin-nano", "tda4vm", "am62a", "am68a", "am69a"]


def load(csv_path: Path = CSV_PATH, manifest_path: Path = MANIFEST_PATH) -> tuple[list[dict], dict]:
    with open(csv_path, newline="") as f:
        rows = list(csv.DictReader(f))
    manifest = json.loads(Path(manifest_path).read_text()).get("models", {})
    return rows, manifest


def _chip_key(chip: str) -> tuple:
    return (CHIP_ORDER.index(chip) if chip in CHIP_ORDER else len(CHIP_ORDER), chip)


def _cell(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _gmacs(entry: dict | None) -> str:
    macs = (entry or {}).get("macs") or {}
    total = macs.get("known_total")
    if total is None:
        return "?"
    return f"{total / 1e9:.3g}" + ("" if macs.get("complete", True) else " (partial)")


def _reason(note: str) -> str:
    """The first clause of a left-out row's note: why it is not in the fit."""
    return note.split(";")[0].strip() or "(no reason given)"


def summary_table(rows: list[dict]) -> list[str]:
    per_chip = defaultdict(Counter)
    for r in rows:
        per_chip[r["chip"]]["rows"] += 1
        per_chip[r["chip"]]["usable"] += r["usable"] == "yes"
    models = defaultdict(set)
    sources = defaultdict(set)
    for r in rows:
        if r["usable"] == "yes":
            models[r["chip"]].add(r["model_key"])
        sources[r["chip"]].add(r["source_version"].split(" (")[0])
    out = ["| chip | usable figures | rows published | distinct models in the fit | source versions |", "|---|---:|---:|---:|---|"]
    for chip in sorted(per_chip, key=_chip_key):
        c = per_chip[chip]
        out.append(f"| {chip} | {c['usable']} | {c['rows']} | {len(models[chip])} | {_cell(', '.join(sorted(sources[chip])))} |")
    return out


def usable_tables(rows: list[dict], manifest: dict) -> list[str]:
    out = []
    by_chip = defaultdict(list)
    for r in rows:
        if r["usable"] == "yes":
            by_chip[r["chip"]].append(r)
    for chip in sorted(by_chip, key=_chip_key):
        chip_rows = sorted(by_chip[chip], key=lambda r: float(r["latency_ms"]))
        runtimes = sorted({r["runtime_and_version"] for r in chip_rows})
        toolchains = sorted({r["toolchain_version"] for r in chip_rows})
        scopes = sorted({r["scope"] for r in chip_rows})
        out += ["", f"### {chip}: {len(chip_rows)} figures", "",
                f"Runtime{'s' if len(runtimes) > 1 else ''}: {_cell('; '.join(runtimes))}. "
                f"Toolchain/BSP: {_cell('; '.join(toolchains))}. Scope: {', '.join(scopes)}.", "",
                "| model_key | as published | input | precision | cores | published | unit | latency ms | GMACs (rebuilt) |",
                "|---|---|---|---|---:|---|---|---:|---:|"]
        for r in chip_rows:
            out.append(f"| {r['model_key']} | [{_cell(r['model_name_as_published'])}]({r['source']}) | {_cell(r['input_shape'])} | {r['precision']} "
                       f"| {r['npu_cores']} | {_cell(r['published_value'])} | {_cell(r['published_unit'])} | {float(r['latency_ms']):.3f} "
                       f"| {_gmacs(manifest.get(r['model_key']))} |")
    return out


def left_out_tables(rows: list[dict]) -> list[str]:
    reasons = Counter((r["chip"], _reason(r["note"])) for r in rows if r["usable"] != "yes")
    out = ["| chip | rows | why they are left out of the fit |", "|---|---:|---|"]
    for (chip, reason), n in sorted(reasons.items(), key=lambda kv: (_chip_key(kv[0][0]), -kv[1])):
        out.append(f"| {chip} | {n} | {_cell(reason)} |")
    return out


def manifest_table(manifest: dict, rows: list[dict]) -> list[str]:
    used = Counter(r["model_key"] for r in rows if r["usable"] == "yes")
    out = ["| model_key | input | nodes | GMACs | params M (published) | faithful | figures | built from |",
           "|---|---|---:|---:|---|---|---:|---|"]
    for key, e in sorted(manifest.items()):
        shapes = "; ".join(f"{n} {s}" for n, s in (e.get("inputs") or {}).items())
        faithful = ("yes" if e.get("faithful") else "no") + (f": {_cell(e['fidelity_note'])}" if e.get("fidelity_note") else "")
        how = _cell(e.get("built_by", "")) + (f" ([definition]({e['definition']}))" if e.get("definition") else "")
        size = e.get("published_size") or {}
        params = f"{e['parameters'] / 1e6:.3g}" if e.get("parameters") else "?"
        params += f" ({size['params_millions']:g})" if size else ""
        out.append(f"| {key} | {_cell(shapes)} | {e.get('nodes', '?')} | {_gmacs(e)} | {params} | {faithful} | {used.get(key, 0)} | {how} |")
    return out


def render(rows: list[dict], manifest: dict) -> str:
    usable = sum(r["usable"] == "yes" for r in rows)
    lines = [
        "<!-- Generated by scripts/estimate/render_figures_doc.py from toolkit/estimate/data/published_figures.csv",
        "     and models_manifest.json. Do not edit: change the data, then re-run the script. -->",
        "# Published device latencies: the estimator's calibration data",
        "",
        f"The vendors' own measured latencies, {len(rows)} rows of which {usable} are usable for fitting the per-chip cost",
        "models of `edgedeploy estimate` (docs/estimate.md). Every row carries its source (URL at a pinned commit), the",
        "runtime and toolchain the vendor names, the input size, precision, batch, the NPU cores used and what the figure",
        "includes. A row is usable only when the figure is unambiguous (one model inference, one configuration) and its",
        "model was rebuilt here from its public definition at the published input size (the table at the end); every",
        "other row stays in the CSV with the reason, so nothing the vendors published is silently dropped.",
        "",
        "Conventions: FPS is converted to `latency_ms = 1000 / FPS` (the published value and unit are kept beside it).",
        "Rockchip publishes one column for RK3566 and RK3568: the figures are one measurement, fitted on rk3566 only; the",
        "rk3568 rows repeat it, marked as not independent. Rockchip's RV1109, RV1126 and RK1808 columns are not transcribed",
        "(no edgedeploy target), nor are Espressif's motion_detect (not a neural network) and speaker_verification (its",
        "table names no chip). Where one vendor lists the same architecture twice (other weights, QAT, another dataset),",
        "the first row is fitted and the repeats are kept as left out. NVIDIA's figures are MLPerf Inference v3.1",
        "SingleStream results (loadgen query latency, so end to end); TI publishes per-SoC device figures in its web",
        "Model Analyzer rather than in a table with a version, and the model zoo's report CSVs carry host-emulation",
        "times, so only a few application-note figures are listed. Neither vendor gives enough rebuildable, inference-only",
        "figures per chip to fit.",
        "",
        "## Figures per chip",
        "",
        *summary_table(rows),
        "",
        "## The usable figures",
        *usable_tables(rows, manifest),
        "",
        "## Rows left out of the fit, and why",
        "",
        *left_out_tables(rows),
        "",
        "## The models rebuilt here",
        "",
        "Built by `scripts/estimate/models.py` in the corpus environment (random weights: only the architecture matters",
        "for latency), folded with ONNX Runtime's basic level (constant folding, BatchNormalization into the Conv before",
        "it), MACs and nodes from `edgedeploy inspect`. The files are not committed; `sha256` in the manifest pins them.",
        "",
        *manifest_table(manifest, rows),
        "",
        "## Regenerating",
        "",
        "<!-- docs-test: shown: needs git clones of the vendors' repositories and the corpus environment -->",
        "```",
        "~/.cache/edgedeploy/envs/corpus/bin/python scripts/estimate/models.py",
        "python scripts/estimate/transcribe_published.py --rockchip DIR --espressif DIR --nxp DIR",
        "python scripts/estimate/render_figures_doc.py",
        "```",
        "",
    ]
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 when docs/estimate-figures.md is not what the data renders")
    args = ap.parse_args()
    text = render(*load())
    if args.check:
        stale = not DOC_PATH.exists() or DOC_PATH.read_text() != text
        print("docs/estimate-figures.md is stale: run scripts/estimate/render_figures_doc.py" if stale else "docs/estimate-figures.md is current")
        return int(stale)
    tmp = DOC_PATH.with_suffix(".tmp")
    tmp.write_text(text)
    tmp.replace(DOC_PATH)
    print(f"wrote {DOC_PATH.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
