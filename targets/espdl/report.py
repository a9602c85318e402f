"""What an ESP-DL artifact adds to `edgedeploy report`: esp-ppq's worst-quantised layers, as data.

The build's `quantization` section (or quantization.json beside it) holds esp-ppq's per-layer
error, graph-wise (the error accumulated up to a layer) and layer-wise (the layer alone); the
report shows the WORST_LAYERS layers of lowest SNR of each, in one section the core renders
(edgedeploy.report.sections).
"""

from __future__ import annotations

import json
from pathlib import Path

from edgedeploy.report.sections import Column, Fact, Section, Table

WORST_LAYERS = 5
KINDS = (("graphwise", "graph-wise"), ("layerwise", "layer-wise"))
LAYER_COLUMNS = (Column("Layer", kind="name"), Column("Op"), Column("Precision"), Column("SNR", unit="dB", kind="number"))


def report_sections(report: dict, artifact: Path) -> list[Section]:
    section = report.get("quantization")
    if not isinstance(section, dict):
        return []
    layers = section.get("layers")
    if not isinstance(layers, list):
        layers = _quantization_file(artifact).get("layers") or []
    tables = tuple(table for kind, words in KINDS if (table := _worst_layers(layers, kind, words)) is not None)
    if not tables:
        return []
    facts = (Fact("graph outputs' SNR", section.get("output_snr_db"), "dB"),) if _is_number(section.get("output_snr_db")) else ()
    notes = (section["metric"],) if isinstance(section.get("metric"), str) and section["metric"].strip() else ()
    return [Section("esp-ppq's quantisation error", facts=facts, tables=tables, notes=notes, source="esp-ppq's error analysis on the calibration data")]


def _worst_layers(layers: list, kind: str, words: str) -> Table | None:
    """The WORST_LAYERS layers of lowest `kind` SNR, or None when no layer has that figure."""
    key = f"{kind}_snr_db"
    scored = [layer for layer in layers if isinstance(layer, dict) and _is_number(layer.get(key))]
    if not scored:
        return None
    worst = sorted(scored, key=lambda layer: layer[key])[:WORST_LAYERS]
    rows = tuple((layer.get("onnx_node") or layer.get("esp_ppq_op"), layer.get("op_type"), layer.get("precision"), float(layer[key])) for layer in worst)
    return Table(f"lowest {words} SNR: {len(worst)} of {len(scored)} quantised layers", LAYER_COLUMNS, rows, name="worst-layers")


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _quantization_file(artifact: Path) -> dict:
    try:
        data = json.loads((Path(artifact) / "quantization.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
