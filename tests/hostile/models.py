"""Small models and hostile files for the hostile suite, built in code (seeded, nothing fetched)."""

from __future__ import annotations

import gzip
import io
import os
import zipfile
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper

from tests.helpers import const, make_model, save, tensor


def relu_model(in_name: str = "x", out_name: str = "y", node_name: str = "relu", shape=(1, 4), opset: int = 13) -> onnx.ModelProto:
    node = helper.make_node("Relu", [in_name], [out_name], name=node_name)
    return make_model([node], [tensor(in_name, list(shape))], [tensor(out_name, list(shape))], opset=opset)


def conv_relu_model(in_name: str = "x", out_name: str = "y", node_name: str = "conv", batch=1) -> onnx.ModelProto:
    """A 1x3x8x8 Conv -> Relu model: small enough for every target, convertible by the real toolchains."""
    weight = np.random.default_rng(0).standard_normal((4, 3, 3, 3)).astype(np.float32)
    conv = helper.make_node("Conv", [in_name, "w"], ["c"], name=node_name, kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    relu = helper.make_node("Relu", ["c"], [out_name], name=node_name + "_relu")
    return make_model([conv, relu], [tensor(in_name, [batch, 3, 8, 8])], [tensor(out_name, [batch, 4, 8, 8])], [const("w", weight)])


def write(path: Path, model: onnx.ModelProto) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    return save(model, path)


def with_raw_replacement(model: onnx.ModelProto, marker: bytes, replacement: bytes) -> bytes:
    """The serialised model with one marker string's bytes replaced (same length keeps the protobuf valid)."""
    data = model.SerializeToString()
    assert marker in data and len(marker) == len(replacement), marker
    return data.replace(marker, replacement)


def non_utf8_model(where: str) -> bytes:
    """A model with the invalid UTF-8 bytes \\xff\\xfe in one string field (`where`)."""
    marker = b"MARKMARK"
    bad = b"MA\xff\xfeMARK"
    if where == "node name":
        model = relu_model(node_name="MARKMARK")
    elif where == "input name":
        model = relu_model(in_name="MARKMARK")
    elif where == "output name":
        model = relu_model(out_name="MARKMARK")
    elif where == "graph name":
        model = relu_model()
        model.graph.name = "MARKMARK"
    elif where == "op type":
        model = relu_model()
        model.graph.node[0].op_type = "MARKMARK"
    elif where == "initializer name":
        w = const("MARKMARK", np.ones((4, 4), np.float32))
        node = helper.make_node("MatMul", ["x", "MARKMARK"], ["y"], name="mm")
        model = make_model([node], [tensor("x", [1, 4])], [tensor("y", [1, 4])], [w])
    elif where == "value_info name":
        a = helper.make_node("Relu", ["x"], ["MARKMARK"], name="a")
        b = helper.make_node("Relu", ["MARKMARK"], ["y"], name="b")
        model = make_model([a, b], [tensor("x", [1, 4])], [tensor("y", [1, 4])])
        model.graph.value_info.append(tensor("MARKMARK", [1, 4]))
    elif where == "doc string":
        model = relu_model()
        model.graph.node[0].doc_string = "MARKMARK"
    elif where == "producer name":
        model = relu_model()
        model.producer_name = "MARKMARK"
    elif where == "metadata":
        model = relu_model()
        entry = model.metadata_props.add()
        entry.key, entry.value = "MARKMARK", "v"
    elif where == "attribute name":
        model = relu_model()
        model.graph.node[0].attribute.append(helper.make_attribute("MARKMARK", 1))
    elif where == "subgraph node name":
        then_graph = helper.make_graph([helper.make_node("Relu", ["x"], ["t"], name="MARKMARK")], "then", [], [tensor("t", [1, 4])])
        else_graph = helper.make_graph([helper.make_node("Neg", ["x"], ["e"], name="neg")], "else", [], [tensor("e", [1, 4])])
        cond = const("cond", np.array(True))
        node = helper.make_node("If", ["cond"], ["y"], name="if", then_branch=then_graph, else_branch=else_graph)
        model = make_model([node], [tensor("x", [1, 4])], [tensor("y", [1, 4])], [cond])
    else:
        raise ValueError(where)
    return with_raw_replacement(model, marker, bad)


def external_model(folder: Path, location: str, offset: str = "0", length: str = "64", dims=(4, 4)) -> Path:
    # The tensor is described, not made: a 2 GiB case's array took 11 s to build and convert.
    weight = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=list(dims))
    weight.data_location = TensorProto.EXTERNAL
    for key, value in (("location", location), ("offset", offset), ("length", length)):
        if value is None:
            continue
        entry = weight.external_data.add()
        entry.key, entry.value = key, value
    node = helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")
    model = make_model([node], [tensor("x", [1, dims[0]])], [tensor("y", [1, dims[1]])], [weight])
    return write(folder / "m.onnx", model)


def custom_domain_model(domain: str, op: str, opset_version: int = 1) -> onnx.ModelProto:
    node = helper.make_node(op, ["x"], ["y"], name="custom", domain=domain)
    graph = helper.make_graph([node], "g", [tensor("x", [1, 4])], [tensor("y", [1, 4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid(domain, opset_version)])
    model.ir_version = 8
    return model


def zip_bytes(members: dict[str, bytes], compression=zipfile.ZIP_DEFLATED) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buf.getvalue()


def npy_bytes(array: np.ndarray, allow_pickle: bool = False) -> bytes:
    buf = io.BytesIO()
    np.save(buf, array, allow_pickle=allow_pickle)
    return buf.getvalue()


def npy_header_only(shape, dtype="<f4", fortran=False, extra: bytes = b"") -> bytes:
    """An .npy file whose header claims `shape` but carries only `extra` bytes of data."""
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": dtype, "fortran_order": fortran, "shape": tuple(shape)})
    return buf.getvalue() + extra


def gz(data: bytes) -> bytes:
    return gzip.compress(data)


def png_claiming(width: int, height: int) -> bytes:
    """A PNG whose header claims width x height pixels but whose data is tiny (a decompression bomb's shape)."""
    import struct
    import zlib

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    # One compressed row of zeros; the decoder would need width*height bytes to finish.
    idat = zlib.compress(b"\0" * (width + 1))
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")


def png_image(width: int = 8, height: int = 8, mode: str = "L") -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.new(mode, (width, height), 128).save(buf, format="PNG")
    return buf.getvalue()


def mkfifo(path: Path) -> Path:
    os.mkfifo(path)
    return path
