"""Hostile calibration and evaluation data: every file is refused with one sentence, nothing unpickled.

Cases go through `edgedeploy fix --eval DATA` (the cheapest command that loads a dataset) and a
subset through `edgedeploy build --calib DATA`, which must refuse the data before any toolchain
worker starts.
"""

from __future__ import annotations

import io
import pickle
import zipfile
from pathlib import Path

import numpy as np
import pytest

from tests.hostile import models as m

CATEGORY = "datasets"

GOOD = np.random.default_rng(0).standard_normal((8, 4)).astype(np.float32)


def npz(**arrays) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def _file(name: str, data_fn):
    def build(tmp: Path) -> Path:
        path = tmp / name
        path.write_bytes(data_fn())
        return path

    return build


def _folder(files: dict):
    def build(tmp: Path) -> Path:
        folder = tmp / "data"
        folder.mkdir()
        for name, data_fn in files.items():
            target = folder / name
            target.parent.mkdir(parents=True, exist_ok=True)
            if data_fn is None:
                target.mkdir()
            else:
                target.write_bytes(data_fn())
        return folder

    return build


class Evil:
    def __reduce__(self):
        # Unpickling this would write a file: the case checks it never appears.
        return (Path.write_text, (Path("PWNED"), "unpickled"))


def _pickled_npy() -> bytes:
    return m.npy_bytes(np.array([Evil(), 1.0], dtype=object), allow_pickle=True)


def _truncated(fraction):
    return lambda: npz(x=GOOD, labels=np.arange(8))[: int(len(npz(x=GOOD, labels=np.arange(8))) * fraction)]


def _with(array_fn):
    return lambda: npz(x=array_fn())


def _nan():
    a = GOOD.copy()
    a[3, 1] = np.nan
    return a


def _inf(sign):
    a = GOOD.copy()
    a[5, 0] = sign * np.inf
    return a


def _member_claims(shape, extra=b""):
    return lambda: m.zip_bytes({"x.npy": m.npy_header_only(shape, extra=extra)})


def _pickle_member():
    return m.zip_bytes({"x.npy": _pickled_npy()})


def _raw_pickle():
    return pickle.dumps({"x": GOOD})


def _encrypted_flag():
    data = bytearray(npz(x=GOOD))
    # Set the "encrypted" bit in the local and central headers: zipfile then wants a password.
    for sig in (b"PK\x03\x04", b"PK\x01\x02"):
        at = data.find(sig)
        flag_at = at + (6 if sig == b"PK\x03\x04" else 8)
        data[flag_at] |= 1
    return bytes(data)


def _bad_crc():
    data = bytearray(m.zip_bytes({"x.npy": m.npy_bytes(GOOD)}, zipfile.ZIP_STORED))
    data[200] ^= 0xFF  # a data byte: the CRC no longer matches
    return bytes(data)


def _corrupt_deflate():
    data = bytearray(m.zip_bytes({"x.npy": m.npy_bytes(GOOD)}, zipfile.ZIP_DEFLATED))
    for i in range(60, 90):
        data[i] ^= 0x5A
    return bytes(data)


NPZ_CASES = {
    "pickled object member": (_file("d.npz", _pickle_member), "Python objects"),
    "raw pickle named .npz": (_file("d.npz", _raw_pickle), "not an .npz archive"),
    "random bytes .npz seed 0": (_file("d.npz", lambda: np.random.default_rng(0).bytes(3000)), "not an .npz archive"),
    "random bytes .npz seed 1": (_file("d.npz", lambda: np.random.default_rng(1).bytes(100)), "not an .npz archive"),
    "zip magic then noise": (_file("d.npz", lambda: b"PK\x03\x04" + np.random.default_rng(2).bytes(500)), "not an .npz archive"),
    "empty .npz file": (_file("d.npz", lambda: b""), "not an .npz archive"),
    "truncated .npz 10%": (_file("d.npz", _truncated(0.1)), ""),
    "truncated .npz 50%": (_file("d.npz", _truncated(0.5)), ""),
    "truncated .npz 90%": (_file("d.npz", _truncated(0.9)), ""),
    "truncated .npz 99%": (_file("d.npz", _truncated(0.99)), ""),
    "member header claims 2^40 rows": (_file("d.npz", _member_claims((2**40, 4))), "claims"),
    "member header claims 2^62 elements": (_file("d.npz", _member_claims((2**31, 2**31))), "claims"),
    "member header negative dim": (_file("d.npz", lambda: m.zip_bytes({"x.npy": m.npy_bytes(GOOD)[:10].replace(b"", b"") + b"{'descr': '<f4', 'fortran_order': False, 'shape': (-1, 4), }".ljust(118) + b"\n"})), ""),
    "member header not a dict": (_file("d.npz", lambda: m.zip_bytes({"x.npy": b"\x93NUMPY\x01\x00\x10\x00" + b"[1, 2, 3]".ljust(15) + b"\n"})), "header"),
    "member with bad magic": (_file("d.npz", lambda: m.zip_bytes({"x.npy": b"\x93NUMPZ" + b"\0" * 120})), "header"),
    "member is not .npy": (_file("d.npz", lambda: m.zip_bytes({"x.txt": b"hello"})), "not an .npy array"),
    "member with bad CRC": (_file("d.npz", _bad_crc), "corrupt"),
    "member with corrupt deflate stream": (_file("d.npz", _corrupt_deflate), ""),
    "encrypted member": (_file("d.npz", _encrypted_flag), ""),
    "no arrays": (_file("d.npz", lambda: m.zip_bytes({})), ""),
    "wrong key with two arrays": (_file("d.npz", lambda: npz(a=GOOD, b=GOOD)), "Name the arrays"),
    "string array": (_file("d.npz", _with(lambda: np.array([["a", "b", "c", "d"]] * 8))), "text strings"),
    "bytes array": (_file("d.npz", _with(lambda: np.array([[b"a", b"b", b"c", b"d"]] * 8))), "byte strings"),
    "structured array": (_file("d.npz", _with(lambda: np.zeros((8, 4), dtype=[("a", "<f4"), ("b", "<i4")]))), ""),
    "datetime array": (_file("d.npz", _with(lambda: np.zeros((8, 4), dtype="datetime64[s]"))), "dates"),
    "timedelta array": (_file("d.npz", _with(lambda: np.zeros((8, 4), dtype="timedelta64[s]"))), "time spans"),
    "void array": (_file("d.npz", _with(lambda: np.zeros((8, 4), dtype="V4"))), ""),
    "NaN": (_file("d.npz", _with(_nan)), "NaN or infinite"),
    "+Inf": (_file("d.npz", _with(lambda: _inf(1))), "NaN or infinite"),
    "-Inf": (_file("d.npz", _with(lambda: _inf(-1))), "NaN or infinite"),
    "all NaN float64": (_file("d.npz", _with(lambda: np.full((8, 4), np.nan))), "NaN or infinite"),
    "float16 overflow to Inf": (_file("d.npz", _with(lambda: np.full((8, 4), 70000, np.float32).astype(np.float16))), "NaN or infinite"),
    "complex": (_file("d.npz", _with(lambda: GOOD + 1j)), "complex"),
    "complex NaN": (_file("d.npz", _with(lambda: GOOD + complex(0, np.nan))), ""),
    "NaN label": (_file("d.npz", lambda: npz(x=GOOD, labels=np.array([0, 1, np.nan, 3, 4, 5, 6, 7]))), "NaN or infinite"),
    "string labels": (_file("d.npz", lambda: npz(x=GOOD, labels=np.array(list("abcdefgh")))), "labels"),
    "scalar label": (_file("d.npz", lambda: npz(x=GOOD, labels=np.array(3))), "labels"),
    "too few labels": (_file("d.npz", lambda: npz(x=GOOD, labels=np.arange(3))), "labels for"),
    "zero samples": (_file("d.npz", _with(lambda: np.zeros((0, 4), np.float32))), "no samples"),
    "scalar data": (_file("d.npz", _with(lambda: np.array(1.0, np.float32))), "rank"),
    "wrong rank": (_file("d.npz", _with(lambda: np.zeros((8, 2, 2), np.float32))), "rank"),
    "wrong width": (_file("d.npz", _with(lambda: np.zeros((8, 5), np.float32))), "axis 1"),
    "pickled .npy": (_file("d.npy", _pickled_npy), "Python objects"),
    "random bytes .npy": (_file("d.npy", lambda: np.random.default_rng(3).bytes(1000)), "not a readable .npy"),
    "text .npy": (_file("d.npy", lambda: b"1,2,3,4\n" * 8), "not a readable .npy"),
    "empty .npy": (_file("d.npy", lambda: b""), "not a readable .npy"),
    ".npy header claims 2^40 rows": (_file("d.npy", lambda: m.npy_header_only((2**40, 4))), "claims"),
    ".npy header claims more than present": (_file("d.npy", lambda: m.npy_header_only((8, 4), extra=b"\0" * 100)), "truncated"),
    ".npy header oversized": (_file("d.npy", lambda: b"\x93NUMPY\x02\x00" + (200000).to_bytes(4, "little") + b"{" * 200000), "header"),
    ".npy format version 9": (_file("d.npy", lambda: b"\x93NUMPY\x09\x00" + b"\0" * 200), "header"),
    ".npy fortran order": (None, None),  # placeholder replaced below (accepted)
    "folder: .npy that is a directory": (_folder({"a.npy": None}), "not a file"),
    "folder: different shapes": (_folder({"a.npy": lambda: m.npy_bytes(GOOD), "b.npy": lambda: m.npy_bytes(np.zeros((2, 5), np.float32))}), "axis 1"),
    "folder: pickled labels.npy": (_folder({"a.npy": lambda: m.npy_bytes(GOOD), "labels.npy": _pickled_npy}), "Python objects"),
    "folder: truncated member": (_folder({"a.npy": lambda: m.npy_bytes(GOOD)[:-7]}), "truncated"),
    "folder: nothing usable": (_folder({"notes.txt": lambda: b"hi"}), "no .npy files"),
    "wrong suffix": (_file("d.csv", lambda: b"1,2,3,4\n"), "must be an .npz"),
}
del NPZ_CASES[".npy fortran order"]


def refuses_the_data(hostile, model, build, fragment, command, data_option, out):
    """`edgedeploy COMMAND --target esp32s3 DATA_OPTION <the case's data> --out OUT` on `model`
    refuses the data in one sentence holding `fragment` (and loses nothing: hostile.guard)."""
    model_path = m.write(hostile.tmp / "model.onnx", model)
    data = build(hostile.tmp)
    hostile.guard(hostile.tmp)
    outcome = hostile.run(command, "--target", "esp32s3", data_option, str(data), "--out", str(hostile.tmp / out), str(model_path))
    hostile.refused(outcome, fragment)


@pytest.mark.parametrize("case", sorted(NPZ_CASES), ids=str)
def test_array_data(hostile, case):
    build, fragment = NPZ_CASES[case]
    refuses_the_data(hostile, m.relu_model(), build, fragment, "fix", "--eval", "fixed.onnx")
    assert not (hostile.tmp / "PWNED").exists(), "pickled data was unpickled"
    assert not (hostile.tmp / "fixed.onnx").exists()


BUILD_CASES = ["pickled object member", "truncated .npz 50%", "member header claims 2^40 rows", "NaN", "complex", "string array", "random bytes .npy"]


@pytest.mark.parametrize("case", BUILD_CASES)
def test_array_data_in_build(hostile, case):
    """build refuses bad --calib data before a toolchain worker runs, and keeps an existing artifact."""
    build, fragment = NPZ_CASES[case]
    refuses_the_data(hostile, m.relu_model(), build, fragment, "build", "--calib", "out")
    assert not (hostile.tmp / "out" / "model" / "esp32s3").exists()


@pytest.mark.parametrize("case", ["NaN", "+Inf", "complex"])
def test_allow_nonfinite_overrides_with_a_warning(hostile, case):
    build, _ = NPZ_CASES[case]
    model = m.write(hostile.tmp / "model.onnx", m.relu_model())
    data = build(hostile.tmp)
    outcome = hostile.run("fix", "--target", "esp32s3", "--eval", str(data), "--allow-nonfinite", "--out", str(hostile.tmp / "fixed.onnx"), str(model))
    hostile.accepted(outcome, "warning:", "--allow-nonfinite")


def test_fortran_order_and_big_endian_are_data(hostile):
    """Legitimate layouts numpy writes (Fortran order, big-endian) load like any other."""
    model = m.write(hostile.tmp / "model.onnx", m.relu_model())
    (hostile.tmp / "d.npz").write_bytes(npz(x=np.asfortranarray(GOOD).astype(">f4")))
    hostile.accepted(hostile.run("fix", "--target", "esp32s3", "--eval", str(hostile.tmp / "d.npz"), "--out", str(hostile.tmp / "f.onnx"), str(model)))


# -- images --------------------------------------------------------------------------------

def _images(files: dict):
    def build(tmp: Path) -> Path:
        folder = tmp / "images"
        for name, data_fn in files.items():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_bytes(data_fn())
        return folder

    return build


def _rgb(w=8, h=8):
    return lambda: m.png_image(w, h, "RGB")


IMAGE_CASES = {
    "decompression bomb 100000x100000": (_images({"a.png": lambda: m.png_claiming(100000, 100000)}), ""),
    "bomb under Pillow's limit": (_images({"a.png": lambda: m.png_claiming(9000, 9000)}), "decompression bomb"),
    "truncated png": (_images({"a.png": lambda: _rgb()()[:40]}), "could not be decoded"),
    "text named .png": (_images({"a.png": lambda: b"not an image at all"}), "could not be decoded"),
    "random bytes .jpg": (_images({"a.jpg": lambda: np.random.default_rng(4).bytes(2000)}), "could not be decoded"),
    "jpeg magic then noise": (_images({"a.jpg": lambda: b"\xff\xd8\xff\xe0" + np.random.default_rng(5).bytes(500)}), "could not be decoded"),
    "bmp header only": (_images({"a.bmp": lambda: b"BM" + b"\0" * 50}), "could not be decoded"),
    "png header claims 0x0": (_images({"a.png": lambda: m.png_claiming(0, 0)}), ""),
    "different sizes without --preprocess size": (None, None),
    "one good one broken": (_images({"a.png": _rgb(), "b.png": lambda: b"\x89PNG\r\n\x1a\n broken"}), "could not be decoded"),
}
del IMAGE_CASES["different sizes without --preprocess size"]


@pytest.mark.parametrize("case", sorted(IMAGE_CASES), ids=str)
def test_image_data(hostile, case):
    build, fragment = IMAGE_CASES[case]
    refuses_the_data(hostile, m.conv_relu_model(), build, fragment, "fix", "--eval", "fixed.onnx")


def test_images_of_different_sizes_need_a_size(hostile):
    """Images of two sizes for an input whose size is dynamic: refused, naming the option (checked in the API:
    every command needs static shapes before it loads data, so the CLI never reaches this state)."""
    from edgedeploy.datasets import InputSpec, OptionError, load_dataset

    data = _images({"a.png": _rgb(8, 8), "b.png": _rgb(16, 8)})(hostile.tmp)
    error = None
    try:
        load_dataset(data, [InputSpec("x", (None, 3, None, None), "float32")])
    except Exception as exc:  # noqa: BLE001 - the verdict classifies it
        error = exc
    hostile.refused_in_api(error, OptionError, "different sizes", "size=HxW")


PREPROCESS_CASES = {
    "scale divides by zero": ("scale=1/0", "divides by 0"),
    "scale not a number": ("scale=abc", "not a number"),
    "scale infinite": ("scale=inf", "finite"),
    "mean NaN": ("mean=nan", "finite"),
    "std zero": ("std=0", "std must not be 0"),
    "std infinite": ("std=inf;1;1", "finite"),
    "size without x": ("size=224", "HxW"),
    "size zero": ("size=0x0", "positive"),
    "size negative": ("size=-8x8", "positive"),
    "size absurd": ("size=100000x100000", "at most"),
    "size three parts": ("size=8x8x8", "HxW"),
    "unknown key": ("colour=red", "unknown key"),
    "no equals": ("224x224", "not key=value"),
    "layout bogus": ("layout=CHWN", "NCHW or NHWC"),
    "channels bogus": ("channels=CMYK", "RGB, BGR or GRAY"),
    "mean per channel mismatch": ("mean=0.1;0.2,size=8x8", "one per channel"),
}


@pytest.mark.parametrize("case", sorted(PREPROCESS_CASES), ids=str)
def test_preprocess_spec(hostile, case):
    spec, fragment = PREPROCESS_CASES[case]
    model = m.write(hostile.tmp / "model.onnx", m.conv_relu_model())
    data = _images({"a.png": _rgb(), "b.png": _rgb()})(hostile.tmp)
    outcome = hostile.run("build", "--target", "esp32s3", "--calib", str(data), "--preprocess", spec, "--out", str(hostile.tmp / "out"), str(model))
    hostile.refused(outcome, fragment)


PREPROCESS_JSON_CASES = {
    "json list": (b"[1, 2, 3]", "object of settings"),
    "json not utf-8": (b'{"scale": "\xff\xfe"}', "UTF-8 JSON"),
    "json broken": (b'{"scale": ', "JSON"),
    "json size as dict": (b'{"size": {"h": 8}}', ""),
    "json scale null": (b'{"scale": null}', ""),
}


@pytest.mark.parametrize("case", sorted(PREPROCESS_JSON_CASES), ids=str)
def test_preprocess_json(hostile, case):
    text, fragment = PREPROCESS_JSON_CASES[case]
    model = m.write(hostile.tmp / "model.onnx", m.conv_relu_model())
    data = _images({"a.png": _rgb()})(hostile.tmp)
    (hostile.tmp / "pre.json").write_bytes(text)
    outcome = hostile.run("build", "--target", "esp32s3", "--calib", str(data), "--preprocess", str(hostile.tmp / "pre.json"), "--out", str(hostile.tmp / "out"), str(model))
    hostile.refused(outcome, fragment)


# -- fix's own evaluation inputs -----------------------------------------------------------

def _fix_model(kind: str):
    from onnx import TensorProto, helper

    from tests.helpers import make_model, tensor

    if kind == "zero dimension":
        return m.relu_model(shape=(1, 0))
    if kind == "sequence input":
        seq = helper.make_tensor_sequence_value_info("s", TensorProto.FLOAT, None)
        node = helper.make_node("SequenceLength", ["s"], ["n"], name="len")
        return make_model([node], [seq], [tensor("n", [], TensorProto.INT64)], opset=13)
    if kind == "string input":
        node = helper.make_node("Identity", ["x"], ["y"], name="id")
        return make_model([node], [tensor("x", [1, 4], TensorProto.STRING)], [tensor("y", [1, 4], TensorProto.STRING)])
    if kind == "huge input":
        return m.relu_model(shape=(1, 3, 8192, 8192))
    if kind == "bfloat16 input":
        node = helper.make_node("Identity", ["x"], ["y"], name="id")
        return make_model([node], [tensor("x", [1, 4], TensorProto.BFLOAT16)], [tensor("y", [1, 4], TensorProto.BFLOAT16)])
    raise ValueError(kind)


@pytest.mark.parametrize("kind", ["zero dimension", "sequence input", "string input", "huge input", "bfloat16 input"])
def test_fix_evaluation_inputs(hostile, kind):
    model = m.write(hostile.tmp / "model.onnx", _fix_model(kind))
    hostile.guard(hostile.tmp)
    outcome = hostile.run("fix", "--target", "esp32s3", "--out", str(hostile.tmp / "fixed.onnx"), str(model))
    hostile.refused(outcome)
