#!/usr/bin/env python3
"""Skeletons of the corpus models too large to commit: the graph and shapes, without the weights.

    .venv/bin/python scripts/corpus/make_skeletons.py

For every corpus model regenerated into $EDGEDEPLOY_HOME/corpus (over 10 MB, so not committed),
writes tests/fixtures/corpus/skeletons/<name>.onnx: the same graph, every initializer with more
than SMALL_ELEMENTS elements turned into an external-data reference whose file is not written.
The audit reads only the shapes of such tensors, and the values of small ones (axes, shapes,
scales), so CI can compare the audit with the committed toolchain verdicts on every corpus model
(scripts/corpus/agreement.py, tests/test_corpus_agreement.py) without the 1 GB of weights.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import onnx
from onnx import TensorProto

from edgedeploy.audit.rules import stored_all_zero

ROOT = Path(__file__).resolve().parents[2]
MANIFEST = ROOT / "tests" / "fixtures" / "corpus" / "corpus.json"
OUT = ROOT / "tests" / "fixtures" / "corpus" / "skeletons"
# Tensors the audit's rules may read (the engine's CONSTANT_VALUE_MAX_ELEMENTS is far larger,
# but only small integer and scalar tensors are ever looked at: axes, shapes, pads, scales).
SMALL_ELEMENTS = 1024


def strip(model: onnx.ModelProto, name: str) -> int:
    """Replace large initializers' data by an external reference to a file that does not exist; the bytes saved."""
    saved = 0
    for tensor in model.graph.initializer:
        n = 1
        for d in tensor.dims:
            n *= int(d)
        # A tensor of zeros (negative zeros too) is kept: toolchains fold a product by zeros (a
        # classifier a library initialises to zero, a Conv with a zero-initialised BatchNorm folded
        # in), and git stores its bytes compressed to almost nothing.
        if n <= SMALL_ELEMENTS:
            continue
        if stored_all_zero(tensor):
            if tensor.raw_data:
                tensor.raw_data = bytes(len(tensor.raw_data))  # -0.0 as 0.0: the same zeros, compressed to nothing
            continue
        saved += len(tensor.raw_data) or n * 4
        for field in ("raw_data", "float_data", "int32_data", "int64_data", "double_data", "uint64_data", "string_data"):
            tensor.ClearField(field)
        tensor.data_location = TensorProto.EXTERNAL
        del tensor.external_data[:]
        entry = tensor.external_data.add()
        entry.key, entry.value = "location", f"{name}.weights-not-committed"
    return saved


def main() -> int:
    home = Path(os.environ.get("EDGEDEPLOY_HOME", Path.home() / ".cache" / "edgedeploy"))
    manifest = json.loads(MANIFEST.read_text())
    OUT.mkdir(parents=True, exist_ok=True)
    for item in manifest["models"]:
        if item["model"]["where"] == "fixtures":
            continue
        source = home / "corpus" / item["model"]["file"]
        if not source.is_file():
            print(f"{item['name']}: not regenerated here ({source}); run scripts/corpus/make_corpus.py", file=sys.stderr)
            continue
        model = onnx.load(str(source))
        saved = strip(model, item["name"])
        dest = OUT / f"{item['name']}.onnx"
        dest.write_bytes(model.SerializeToString())
        print(f"{item['name']}: {dest.stat().st_size / 1024:.0f} KiB skeleton ({saved / 1e6:.1f} MB of weights left out)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
