"""Transcribe the ONNX-TensorRT and Orin DLA operator matrices into targets/tensorrt/op_tables.py.

Usage: python scripts/transcribe_tensorrt_ops.py REFERENCE_DIR > targets/tensorrt/op_tables.py

REFERENCE_DIR holds the vendor documents listed in shared/reference/SOURCES.md:
  onnx-tensorrt_operators_TRT8.5.md / _TRT8.6.md / _TRT10.1.md / _TRT10.15.md
  (onnx/onnx-tensorrt docs/operators.md at release/8.5-GA 3b008c46, release/8.6-GA 6ba67d34,
  release/10.1-GA 96e78110, and the TensorRT 10.15 revision), and
  orin-dla_onnx_operators_README.md (NVIDIA/Deep-Learning-Accelerator-SW operators/README.md, ea61780e).
Only facts are kept (operator, Y/N, data types, the restriction text, the DLA support level); the
generated module says where each table came from. Rerun it when a newer document is added.
"""

from __future__ import annotations

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


def main(ref: Path) -> None:
    print('"""Operator tables transcribed from the vendor documents (generated; do not edit by hand).')
    print()
    print("Regenerate with: python scripts/transcribe_tensorrt_ops.py shared/reference/tensorrt > targets/tensorrt/op_tables.py")
    print()
    print("GPU tables (GPU_OPS / GPU_RESTRICTIONS / GPU_UNSUPPORTED / GPU_OPSETS), per TensorRT version:")
    for version, (name, source) in GPU_DOCS.items():
        print(f"  {version}: {source}")
    print(f"DLA table (DLA_OPS): {DLA_DOC[1]}")
    print("All are Apache-2.0 documents; only facts (operator, support, types, restriction) are kept.")
    print('"""')
    print()
    print("# version -> ONNX op -> data types TensorRT runs it in (fp32, fp16, bf16, int8, int32, int64, bool, ...)")
    print("GPU_OPS = {")
    restr_all = {}
    unsup_all = {}
    opsets = {}
    for version, (name, _source) in GPU_DOCS.items():
        supported, restrictions, unsupported = gpu_table(ref / name)
        restr_all[version] = restrictions
        unsup_all[version] = unsupported
        opsets[version] = opset_range(ref / name)
        print(f"    {version!r}: {{")
        for op, types in supported.items():
            print(f"        {op!r}: {types!r},")
        print("    },")
    print("}")
    print()
    print("# version -> ONNX op -> the document's restriction sentence (the rules in rules.py check them)")
    print("GPU_RESTRICTIONS = {")
    for version, restrictions in restr_all.items():
        print(f"    {version!r}: {{")
        for op, text in restrictions.items():
            print(f"        {op!r}: {text!r},")
        print("    },")
    print("}")
    print()
    print("# version -> ONNX ops the document marks N (no importer: the build fails)")
    print("GPU_UNSUPPORTED = {")
    for version, ops in unsup_all.items():
        print(f"    {version!r}: {tuple(ops)!r},")
    print("}")
    print()
    print("# version -> (lowest, highest) ONNX opset the document names; 1 where it names no lower bound")
    print(f"GPU_OPSETS = {opsets!r}")
    print()
    print("# ONNX op -> (support through TensorRT: native | reconstruction | build_time | rfe,")
    print("#             TensorRT version it is native from (None: all), restriction text)")
    print("DLA_OPS = {")
    for op, row in dla_table(ref / DLA_DOC[0]).items():
        print(f"    {op!r}: {row!r},")
    print("}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
