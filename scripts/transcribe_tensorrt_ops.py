"""Transcribe the ONNX-TensorRT and Orin DLA operator matrices into targets/tensorrt/op_tables.json.

Usage: python scripts/transcribe_tensorrt_ops.py REFERENCE_DIR > targets/tensorrt/op_tables.json

(targets/tensorrt/op_tables.py reads the JSON and says what each table holds.)

REFERENCE_DIR holds the vendor documents listed in shared/reference/SOURCES.md:
  onnx-tensorrt_operators_TRT8.5.md / _TRT8.6.md / _TRT10.1.md / _TRT10.15.md
  (onnx/onnx-tensorrt docs/operators.md at release/8.5-GA 3b008c46, release/8.6-GA 6ba67d34,
  release/10.1-GA 96e78110, and the TensorRT 10.15 revision), and
  orin-dla_onnx_operators_README.md (NVIDIA/Deep-Learning-Accelerator-SW operators/README.md, ea61780e).
Only facts are kept (operator, Y/N, data types, the restriction text, the DLA support level); the
generated module says where each table came from. Rerun it when a newer document is added.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

GPU_DOCS = {
    "8.5": ("onnx-tensorrt_operators_TRT8.5.md", "onnx/onnx-tensorrt docs/operators.md, tag release/8.5-GA (3b008c46)"),
    "8.6": ("onnx-tensorrt_operators_TRT8.6.md", "onnx/onnx-tensorrt docs/operators.md, tag release/8.6-GA (6ba67d34)"),
    "10.1": ("onnx-tensorrt_operators_TRT10.1.md", "onnx/onnx-tensorrt docs/operators.md, tag release/10.1-GA (96e78110)"),
    "10.15": ("onnx-tensorrt_operators_TRT10.15.md", "onnx/onnx-tensorrt docs/operators.md, TensorRT 10.15 revision"),
}
DLA_DOC = ("orin-dla_onnx_operators_README.md", "NVIDIA/Deep-Learning-Accelerator-SW operators/README.md (ea61780e), Orin DLA 3.12-3.14, TensorRT 8.5.2-8.6.12")

# The documents' type names -> edgedeploy's precision / dtype words. "INF64" is a typo for INT64
# in the 10.1 document (ConstantOfShape).
TYPE_WORDS = {
    "FP32": "fp32", "FP16": "fp16", "BF16": "bf16", "INT8": "int8", "INT32": "int32", "INT64": "int64",
    "INF64": "int64", "BOOL": "bool", "UINT8": "uint8", "FP8": "fp8", "FP4": "fp4", "INT4": "int4",
}


def table_rows(text: str):
    for line in text.splitlines():
        if not line.startswith("| ") or line.startswith("| Operator") or line.startswith("| **"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 2 or set(cells[0]) <= set("-"):
            continue
        yield cells


def gpu_table(path: Path) -> tuple[dict, dict, list]:
    supported: dict[str, tuple] = {}
    restrictions: dict[str, str] = {}
    unsupported: list[str] = []
    for cells in table_rows(path.read_text()):
        op, flag = cells[0], cells[1]
        if flag == "N":
            unsupported.append(op)
            continue
        if flag != "Y":
            continue
        types = []
        for word in (cells[2] if len(cells) > 2 else "").split(","):
            word = word.strip()
            if word in TYPE_WORDS and TYPE_WORDS[word] not in types:
                types.append(TYPE_WORDS[word])
        supported[op] = tuple(types)
        text = " ".join(cells[3:]).strip() if len(cells) > 3 else ""
        text = re.sub(r"<br\s*/?>", " ", text).replace("`", "").strip()
        if text:
            restrictions[op] = " ".join(text.split())
    return supported, restrictions, sorted(unsupported)


def opset_range(path: Path) -> tuple[int, int]:
    text = path.read_text()
    m = re.search(r"range of opset (\d+) to opset (\d+)", text)
    if m:
        return int(m.group(1)), int(m.group(2))
    m = re.search(r"up to Opset (\d+)", text)
    return 1, int(m.group(1))


def dla_table(path: Path) -> dict:
    """op -> (support through TensorRT, 'as of' TensorRT version or None, restriction text)."""
    out: dict[str, tuple] = {}
    for cells in table_rows(path.read_text()):
        if len(cells) < 3 or cells[0] in out:
            continue  # the document repeats Div and GlobalMaxPool with the same content
        op, trt = cells[0], cells[1]
        as_of = re.search(r"as of TensorRT ([\d.]+)", trt)
        if trt.startswith("Native"):
            level = "native"
        elif trt.startswith("Reconstruction"):
            level = "reconstruction"
        elif trt.startswith("Can be inferred at build time"):
            level = "build_time"
        else:
            level = "rfe"  # "See RFE": not exposed through TensorRT
        note = " ".join(cells[3:]).strip() if len(cells) > 3 else ""
        note = re.sub(r"\[([^\]]+)\]\([^)]*\)", r"\1", note).replace("**", "").strip()
        out[op] = (level, as_of.group(1) if as_of else None, " ".join(note.split()))
    return out


def tables(ref: Path) -> dict:
    """Every table, keyed as targets/tensorrt/op_tables.py exposes them."""
    gpu_ops, restrictions, unsupported, opsets = {}, {}, {}, {}
    for version, (name, _source) in GPU_DOCS.items():
        gpu_ops[version], restrictions[version], unsupported[version] = gpu_table(ref / name)
        opsets[version] = list(opset_range(ref / name))
    return {
        "sources": {**{f"GPU {version}": source for version, (_name, source) in GPU_DOCS.items()}, "DLA": DLA_DOC[1]},
        "GPU_OPS": gpu_ops,
        "GPU_RESTRICTIONS": restrictions,
        "GPU_UNSUPPORTED": unsupported,
        "GPU_OPSETS": opsets,
        "DLA_OPS": dla_table(ref / DLA_DOC[0]),
    }


def to_json(value, indent: int = 0) -> str:
    """JSON with one operator per line (the tables' leaves stay on one line), so a diff shows the rows that changed."""
    if isinstance(value, dict) and any(isinstance(v, dict) for v in value.values()) or indent == 0:
        pad = "  " * (indent + 1)
        items = [f"{pad}{json.dumps(k)}: {to_json(v, indent + 1)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + "  " * indent + "}"
    if isinstance(value, dict):
        pad = "  " * (indent + 1)
        items = [f"{pad}{json.dumps(k)}: {json.dumps(v, ensure_ascii=False)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + "  " * indent + "}" if items else "{}"
    return json.dumps(value, ensure_ascii=False)


def main(ref: Path) -> None:
    print(to_json(tables(ref)))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
