"""Hostile model files: every one is refused with one sentence (or, where legitimate, handled).

The cases are generated from the tables below: file-level garbage, structural lies, non-UTF-8
strings in every kind of string field, opsets and domains, external data that points elsewhere.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from onnx import helper

from tests.helpers import conv_model, const, make_model, tensor
from tests.hostile import models as m

CATEGORY = "model intake"


def sample_bytes() -> bytes:
    from edgedeploy.sample import sample_model_path

    return sample_model_path().read_bytes()


# -- files that are not ONNX models --------------------------------------------------------

def _bytes_case(data_fn):
    def build(tmp: Path) -> Path:
        path = tmp / "model.onnx"
        path.write_bytes(data_fn())
        return path

    return build


FILE_CASES = {
    "missing": (lambda tmp: tmp / "nope.onnx", "not found"),
    "directory": (lambda tmp: (tmp / "d.onnx").mkdir() or tmp / "d.onnx", "not a file"),
    "empty": (_bytes_case(lambda: b""), "empty"),
    "one byte": (_bytes_case(lambda: b"\x08"), "not a valid ONNX model"),
    "text": (_bytes_case(lambda: b"this is not a model\n" * 40), "not a valid ONNX model"),
    "json": (_bytes_case(lambda: b'{"graph": {"node": []}}'), "not a valid ONNX model"),
    "gzip of a model": (_bytes_case(lambda: m.gz(sample_bytes())), "not a valid ONNX model"),
    "zip file": (_bytes_case(lambda: m.zip_bytes({"model.onnx": sample_bytes()})), "not a valid ONNX model"),
    "npz file": (_bytes_case(lambda: m.zip_bytes({"x.npy": m.npy_bytes(np.zeros(3))})), "not a valid ONNX model"),
    "png file": (_bytes_case(lambda: m.png_claiming(4, 4)), "not a valid ONNX model"),
    "all 0xff": (_bytes_case(lambda: b"\xff" * 4096), "not a valid ONNX model"),
    "all zeros": (_bytes_case(lambda: b"\0" * 4096), "not a valid ONNX model"),
    "fifo": (lambda tmp: m.mkfifo(tmp / "pipe.onnx"), "not a file"),
    "character device": (lambda tmp: (tmp / "zero.onnx").symlink_to("/dev/zero") or tmp / "zero.onnx", "not a file"),
    "symlink loop": (lambda tmp: (tmp / "loop.onnx").symlink_to(tmp / "loop.onnx") or tmp / "loop.onnx", "onnx"),
    "dangling symlink": (lambda tmp: (tmp / "gone.onnx").symlink_to(tmp / "nowhere.onnx") or tmp / "gone.onnx", "not found"),
}
for _seed in range(6):
    FILE_CASES[f"random bytes seed {_seed}"] = (_bytes_case(lambda s=_seed: np.random.default_rng(s).bytes(64 << s)), "not a valid ONNX model")
for _frac in (0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99):
    FILE_CASES[f"truncated at {_frac:.0%}"] = (_bytes_case(lambda f=_frac: sample_bytes()[: int(len(sample_bytes()) * f)]), "onnx model")
for _offset in (0, 1, 7, 100, 1000):
    FILE_CASES[f"byte flipped at {_offset}"] = (
        _bytes_case(lambda o=_offset: (lambda d: d[:o] + bytes([d[o] ^ 0xFF]) + d[o + 1 :])(sample_bytes())),
        "",
    )


@pytest.mark.parametrize("case", sorted(FILE_CASES), ids=str)
def test_not_a_model(hostile, case):
    build, fragment = FILE_CASES[case]
    path = build(hostile.tmp)
    hostile.guard(hostile.tmp)
    outcome = hostile.run("inspect", str(path))
    if case.startswith("byte flipped") and outcome.code == 0:
        # A flipped byte can land in a weight value: the model is still valid.
        hostile.accepted(outcome)
        return
    hostile.refused(outcome, fragment)


# -- structural lies -----------------------------------------------------------------------

def _absurd_initializer():
    w = const("w", np.ones((4, 4), np.float32))
    del w.dims[:]
    w.dims.extend([2**31 - 1, 2**31 - 1])
    node = helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")
    return make_model([node], [tensor("x", [1, 4])], [tensor("y", [1, 4])], [w])


def _short_raw_data():
    w = const("w", np.ones((4, 4), np.float32))
    w.raw_data = w.raw_data[:10]
    node = helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")
    return make_model([node], [tensor("x", [1, 4])], [tensor("y", [1, 4])], [w])


def _cycle():
    a = helper.make_node("Add", ["x", "b"], ["a"], name="a")
    b = helper.make_node("Relu", ["a"], ["b"], name="b")
    return make_model([a, b], [tensor("x", [1, 4])], [tensor("b", [1, 4])])


def _undefined_input():
    return make_model([helper.make_node("Add", ["x", "ghost"], ["y"], name="a")], [tensor("x", [1, 4])], [tensor("y", [1, 4])])


def _duplicate_output():
    a = helper.make_node("Relu", ["x"], ["y"], name="a")
    b = helper.make_node("Neg", ["x"], ["y"], name="b")
    return make_model([a, b], [tensor("x", [1, 4])], [tensor("y", [1, 4])])


def _ir(version):
    model = m.relu_model()
    model.ir_version = version
    return model


def _opset(version):
    return m.relu_model(opset=version)


def _no_opset():
    model = m.relu_model()
    del model.opset_import[:]
    return model


def _wrong_elem_type():
    model = m.relu_model()
    model.graph.input[0].type.tensor_type.elem_type = 999
    return model


def _negative_dim():
    model = m.relu_model()
    model.graph.input[0].type.tensor_type.shape.dim[1].dim_value = -5
    return model


def _conv_mismatch():
    model = conv_model(cin=3)
    model.graph.input[0].type.tensor_type.shape.dim[1].dim_value = 5
    return model


def _bad_attribute():
    node = helper.make_node("Conv", ["x", "w"], ["y"], name="conv", kernel_shape=[3, 3], strides=[0, 0])
    w = const("w", np.ones((2, 3, 3, 3), np.float32))
    return make_model([node], [tensor("x", [1, 3, 8, 8])], [tensor("y", 4)], [w])


def _huge_rank():
    return make_model([helper.make_node("Relu", ["x"], ["y"], name="r")], [tensor("x", [1] * 1000)], [tensor("y", 1000)])


STRUCTURE_CASES = {
    "empty graph": (lambda: helper.make_model(helper.make_graph([], "g", [tensor("x", [1])], [tensor("x", [1])])), "graph is empty"),
    "no outputs": (lambda: make_model([helper.make_node("Relu", ["x"], ["y"], name="r")], [tensor("x", [1, 4])], []), "no outputs"),
    "unknown operator": (lambda: make_model([helper.make_node("NoSuchOp", ["x"], ["y"], name="n")], [tensor("x", [1, 4])], [tensor("y", [1, 4])]), "NoSuchOp"),
    "unknown domain": (lambda: m.custom_domain_model("com.example.evil", "Frob"), "com.example.evil"),
    "unknown com.microsoft operator": (lambda: m.custom_domain_model("com.microsoft", "NoSuchMicrosoftOp"), "NoSuchMicrosoftOp"),
    "opset 99": (lambda: _opset(99), "opset 99"),
    "opset 0": (lambda: _opset(0), "opset"),
    "no opset import": (_no_opset, ""),
    "ir version 0": (lambda: _ir(0), "ir version"),
    "ir version 999": (lambda: _ir(999), ""),
    "negative ir version": (lambda: _ir(-3), "ir version"),
    "absurd input dimension": (lambda: make_model([helper.make_node("Relu", ["x"], ["y"], name="r")], [tensor("x", [1, 2**40])], [tensor("y", 2)]), "absurd dimension"),
    "negative input dimension": (_negative_dim, ""),
    "absurd element count": (lambda: make_model([helper.make_node("Relu", ["x"], ["y"], name="r")], [tensor("x", [65536, 65536, 16])], [tensor("y", 3)]), "elements"),
    "absurd initializer": (_absurd_initializer, ""),
    "initializer data shorter than its dims": (_short_raw_data, ""),
    "cycle": (_cycle, ""),
    "undefined input": (_undefined_input, "ghost"),
    "two nodes write one tensor": (_duplicate_output, ""),
    "unknown element type": (_wrong_elem_type, ""),
    "conv channels inconsistent": (_conv_mismatch, "inconsistent"),
    "conv stride 0": (_bad_attribute, ""),
}


@pytest.mark.parametrize("case", sorted(STRUCTURE_CASES), ids=str)
@pytest.mark.parametrize("command", ["inspect", "audit"])
def test_structural_lie(hostile, case, command):
    build, fragment = STRUCTURE_CASES[case]
    path = m.write(hostile.tmp / "model.onnx", build())
    hostile.guard(hostile.tmp)
    args = ["inspect", str(path)] if command == "inspect" else ["audit", "--target", "esp32s3", "--target", "rk3588", str(path)]
    hostile.refused(hostile.run(*args), fragment)


def test_rank_1000_input_is_handled(hostile):
    """Odd but valid: a rank-1000 tensor is ONNX; intake and the audit must not choke on it."""
    path = m.write(hostile.tmp / "model.onnx", _huge_rank())
    hostile.accepted(hostile.run("audit", "--target", "esp32s3", str(path)))


def test_known_com_microsoft_operator_warns(hostile):
    """An operator only ONNX Runtime knows (com.microsoft FusedGemm) loads with a warning, not silently."""
    model = m.custom_domain_model("com.microsoft", "FusedGemm")
    model.graph.node[0].input.append("x")
    path = m.write(hostile.tmp / "ms.onnx", model)
    outcome = hostile.run("inspect", str(path))
    hostile.accepted(outcome, "warning:", "com.microsoft", "FusedGemm")


# -- non-UTF-8 strings ---------------------------------------------------------------------

NON_UTF8_WHERE = [
    "node name", "input name", "output name", "graph name", "op type", "initializer name", "value_info name",
    "doc string", "producer name", "metadata", "attribute name", "subgraph node name",
]


@pytest.mark.parametrize("where", NON_UTF8_WHERE)
@pytest.mark.parametrize("command", ["inspect", "audit"])
def test_non_utf8_string(hostile, where, command):
    path = hostile.tmp / "m.onnx"
    path.write_bytes(m.non_utf8_model(where))
    hostile.guard(hostile.tmp)
    args = ["inspect", "--format", "json", str(path)] if command == "inspect" else ["audit", "--target", "esp32s3", str(path)]
    hostile.refused(hostile.run(*args), "UTF-8")


# -- external data -------------------------------------------------------------------------

def _ext(location, offset="0", length="64", make=None, dims=(4, 4)):
    def build(tmp: Path) -> Path:
        folder = tmp / "model"
        folder.mkdir()
        if make:
            make(tmp, folder)
        return m.external_model(folder, location, offset, length, dims)

    return build


def _sparse(size):
    def make(tmp, folder):
        with open(folder / "w.bin", "wb") as fh:
            fh.truncate(size)

    return make


EXTERNAL_CASES = {
    "absolute path": (_ext("/etc/passwd"), "absolute path"),
    "dot-dot": (_ext("../secret.bin", make=lambda tmp, f: (tmp / "secret.bin").write_bytes(b"\0" * 64)), "outside the model's folder"),
    "deep dot-dot": (_ext("a/../../../../../../etc/passwd"), "outside"),
    "backslash dot-dot": (_ext("..\\secret.bin"), ""),
    "windows drive": (_ext("C:\\Windows\\win.ini"), "absolute"),
    "link outside": (_ext("w.bin", make=lambda tmp, f: ((tmp / "s.bin").write_bytes(b"\0" * 64), (f / "w.bin").symlink_to(tmp / "s.bin"))), "link outside"),
    "missing file": (_ext("w.bin"), "missing"),
    "file is a directory": (_ext("w.bin", make=lambda tmp, f: (f / "w.bin").mkdir()), ""),
    "file is a fifo": (_ext("w.bin", make=lambda tmp, f: m.mkfifo(f / "w.bin")), ""),
    "truncated file": (_ext("w.bin", make=lambda tmp, f: (f / "w.bin").write_bytes(b"\0" * 10)), "truncated"),
    "negative offset": (_ext("w.bin", offset="-8", make=_sparse(64)), ""),
    "offset not a number": (_ext("w.bin", offset="eight", make=_sparse(64)), "malformed"),
    "length not a number": (_ext("w.bin", length="0x40", make=_sparse(64)), "malformed"),
    "length past the end": (_ext("w.bin", length="65", make=_sparse(64)), "truncated"),
    "length shorter than the tensor": (_ext("w.bin", length="8", make=_sparse(64)), ""),
    "empty location": (_ext("", make=_sparse(64)), "names no file"),
    "NUL in location": (_ext("w.bin\x00.txt", make=_sparse(64)), "NUL"),
    "over 2 GiB of external data": (_ext("w.bin", length=str(2**31), make=_sparse(2**31), dims=(2**15, 2**14)), "2 GiB"),
}


@pytest.mark.parametrize("case", sorted(EXTERNAL_CASES), ids=str)
def test_external_data(hostile, case):
    build, fragment = EXTERNAL_CASES[case]
    path = build(hostile.tmp)
    hostile.guard(hostile.tmp)
    hostile.refused(hostile.run("inspect", str(path)), fragment)
