"""What an ESP-DL artifact adds to `edgedeploy report`: esp-ppq's worst-quantised layers.

The build's `quantization` section (or quantization.json beside it) holds esp-ppq's per-layer
error, graph-wise (the error accumulated up to a layer) and layer-wise (the layer alone); the
comparison shows the WORST_LAYERS layers of lowest SNR of each (edgedeploy.report.combine's
`quantization` entries).
"""

from __future__ import annotations

import json
from pathlib import Path

WORST_LAYERS = 5


def report_contribution(report: dict, artifact: Path) -> dict:
    section = report.get("quantization")
    if not isinstance(section, dict):
        return {}
    layers = section.get("layers")
    if not isinstance(layers, list):
        layers = _quantization_file(artifact).get("layers") or []
    entries = []
    for kind in ("graphwise", "layerwise"):
        scored = [
            {"layer": layer.get("onnx_node") or layer.get("esp_ppq_op"), "op_type": layer.get("op_type"), "precision": layer.get("precision"), "snr_db": layer[f"{kind}_snr_db"]}
            for layer in layers
            if isinstance(layer, dict) and isinstance(layer.get(f"{kind}_snr_db"), (int, float))
        ]
        if scored:
            entries.append(
                {
                    "kind": kind,
                    "output_snr_db": section.get("output_snr_db"),
                    "worst": sorted(scored, key=lambda x: x["snr_db"])[:WORST_LAYERS],
                    "layers": len(scored),
                    "metric": section.get("metric"),
                    "tool": "esp-ppq",
                }
            )
    return {"quantization": entries}


def _quantization_file(artifact: Path) -> dict:
    try:
        data = json.loads((Path(artifact) / "quantization.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
