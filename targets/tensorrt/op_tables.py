"""Operator tables transcribed from the vendor documents, read from op_tables.json (generated).

Regenerate the JSON with: python scripts/transcribe_tensorrt_ops.py shared/reference/tensorrt > targets/tensorrt/op_tables.json

GPU tables, per TensorRT version (8.5, 8.6, 10.1, 10.15; the documents are in the JSON's "sources"):
  GPU_OPS           version -> ONNX op -> data types TensorRT runs it in (fp32, fp16, bf16, int8, int32, int64, bool, ...)
  GPU_RESTRICTIONS  version -> ONNX op -> the document's restriction sentence (the rules check them)
  GPU_UNSUPPORTED   version -> ONNX ops the document marks N (no importer: the build fails)
  GPU_OPSETS        version -> (lowest, highest) ONNX opset the document names; 1 where it names no lower bound
DLA table (NVIDIA/Deep-Learning-Accelerator-SW operators/README.md, Orin DLA 3.12-3.14, TensorRT 8.5.2-8.6.12):
  DLA_OPS           ONNX op -> (support through TensorRT: native | reconstruction | build_time | rfe,
                                TensorRT version it is native from (None: all), restriction text)
All are Apache-2.0 documents; only facts (operator, support, types, restriction) are kept. The
tables are data, one operator per line, so they live in JSON rather than in code.
"""

from __future__ import annotations

import json
from pathlib import Path

_TABLES = json.loads((Path(__file__).parent / "op_tables.json").read_text(encoding="utf-8"))

SOURCES: dict[str, str] = _TABLES["sources"]
GPU_OPS: dict[str, dict[str, tuple[str, ...]]] = {v: {op: tuple(types) for op, types in ops.items()} for v, ops in _TABLES["GPU_OPS"].items()}
GPU_RESTRICTIONS: dict[str, dict[str, str]] = _TABLES["GPU_RESTRICTIONS"]
GPU_UNSUPPORTED: dict[str, tuple[str, ...]] = {v: tuple(ops) for v, ops in _TABLES["GPU_UNSUPPORTED"].items()}
GPU_OPSETS: dict[str, tuple[int, int]] = {v: (int(low), int(high)) for v, (low, high) in _TABLES["GPU_OPSETS"].items()}
DLA_OPS: dict[str, tuple[str, str | None, str]] = {op: (level, as_of, note) for op, (level, as_of, note) in _TABLES["DLA_OPS"].items()}
