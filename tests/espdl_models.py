"""Helpers for the ESP-DL tests: a small model with hostile names, and a reader of C string literals."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

# Everything a name can do to generated code: close a C comment, open a string, break the line
# and start a preprocessor directive, form a trigraph (??/ is a backslash), smuggle a backtick,
# a shell substitution, and non-ASCII.
HOSTILE = '*/ "\n#include <evil.h>\n??/ `x` $(rm -rf) \u00e9'


def hostile_names() -> dict:
    return {
        "input": HOSTILE + " in",
        "output": HOSTILE + " out",
        "conv": HOSTILE + " conv",
        "relu": HOSTILE + " relu",
        "flatten": HOSTILE + " flatten",
        "gemm": HOSTILE + " gemm",
    }


def make_hostile_model(folder: Path, file_stem: str = 'evil* "\n#include x ??= \\') -> tuple[Path, Path, dict]:
    """A Conv-ReLU-Flatten-Gemm model on a [1,1,8,8] input whose every name is hostile; with calibration data.

    Returns (model path, calibration .npz path, names).
    """
    names = hostile_names()
    rng = np.random.default_rng(0)
    conv_w = numpy_helper.from_array((rng.standard_normal((4, 1, 3, 3)) * 0.5).astype(np.float32), "conv_w")
    conv_b = numpy_helper.from_array((rng.standard_normal(4) * 0.1).astype(np.float32), "conv_b")
    gemm_w = numpy_helper.from_array((rng.standard_normal((5, 4 * 8 * 8)) * 0.1).astype(np.float32), "gemm_w")
    gemm_b = numpy_helper.from_array((rng.standard_normal(5) * 0.1).astype(np.float32), "gemm_b")
    nodes = [
        helper.make_node("Conv", [names["input"], "conv_w", "conv_b"], ["t_conv"], name=names["conv"], pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
        helper.make_node("Relu", ["t_conv"], ["t_relu"], name=names["relu"]),
        helper.make_node("Flatten", ["t_relu"], ["t_flat"], name=names["flatten"], axis=1),
        helper.make_node("Gemm", ["t_flat", "gemm_w", "gemm_b"], [names["output"]], name=names["gemm"], transB=1),
    ]
    graph = helper.make_graph(
        nodes,
        HOSTILE + " graph",
        [helper.make_tensor_value_info(names["input"], TensorProto.FLOAT, ["batch", 1, 8, 8])],
        [helper.make_tensor_value_info(names["output"], TensorProto.FLOAT, ["batch", 5])],
        [conv_w, conv_b, gemm_w, gemm_b],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="edgedeploy tests")
    model.ir_version = 7
    onnx.checker.check_model(model)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / (file_stem + ".onnx")
    onnx.save(model, str(path))
    calib = folder / "calib.npz"
    np.savez(calib, **{names["input"]: rng.random((64, 1, 8, 8), dtype=np.float32)})
    return path, calib, names


_C_ESCAPE = re.compile(rb'\\([0-7]{1,3}|["\\?abfnrtv\'])')
_SIMPLE = {b'"': b'"', b"\\": b"\\", b"?": b"?", b"'": b"'", b"n": b"\n", b"t": b"\t", b"r": b"\r", b"a": b"\a", b"b": b"\b", b"f": b"\f", b"v": b"\v"}


def decode_c_string_literal(literal: str) -> str:
    """The text a C string literal (as written in a header, quotes included) stands for."""
    assert literal.startswith('"') and literal.endswith('"'), literal
    body = literal[1:-1].encode("ascii")
    assert b"\n" not in body
    i = 0
    while i < len(body):  # an unescaped quote inside would end the literal early
        if body[i : i + 1] == b"\\":
            i += 2
            continue
        assert body[i : i + 1] != b'"', literal
        i += 1

    def repl(m):
        code = m.group(1)
        if code in _SIMPLE:
            return _SIMPLE[code]
        return bytes([int(code, 8)])

    return _C_ESCAPE.sub(repl, body).decode("utf-8")


def header_define(text: str, name: str) -> str:
    """The value of `#define NAME value` in a header's text."""
    m = re.search(rf"^#define {name} (.*)$", text, flags=re.M)
    assert m, f"{name} not defined"
    return m.group(1)
