"""scripts/pool/collect.py keeps the eiq worker's own entry beside a cached imx93 verdict and reads
it again with the current reader: the reread must give what the reader gives on that entry, with
the node tokens the worker saw (the model's nodes renamed edn<index> in graph order)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts" / "pool"))

import collect  # noqa: E402

from edgedeploy.targets.eiq.vela import verdict_from_entry  # noqa: E402

FIXTURE = ROOT / "tests" / "fixtures" / "eiq" / "mnist_cnn.verdict.json"
MODEL = ROOT / "toolkit" / "data" / "sample" / "mnist_cnn.onnx"


def test_a_kept_entry_is_read_again_with_the_tokens_the_worker_saw(tmp_path):
    data = json.loads(FIXTURE.read_text())
    entry_file = tmp_path / "imx93-0123.entry.json"
    entry_file.write_text(json.dumps(data["entry"]))
    cache = tmp_path / "imx93-0123.json"
    cache.write_text(json.dumps({"estimates": {"wall_s": 12.5}}))
    again = collect.reread_imx93(entry_file, MODEL, cache)
    direct = verdict_from_entry(data["entry"], data["tokens"], data["output_producers"], toolchain="onnx2tf+vela", version="test")
    assert again.failed is None
    assert {n: (v.placement, v.detail) for n, v in again.nodes.items()} == {n: (v.placement, v.detail) for n, v in direct.nodes.items()}
    assert set(again.nodes) == set(data["tokens"].values())
    assert again.estimates["wall_s"] == 12.5  # the conversion's own time, not the reread's
