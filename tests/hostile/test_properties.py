"""Property tests (hypothesis): the dataset loader, intake, the worker arrays and every escaping function.

Each property is the contract of a boundary: for ANY input the loader returns a Dataset or
raises OptionError with one sentence (never another exception, never unpickles); intake returns
a LoadedModel or raises ModelError; escaped text decodes back to itself and cannot break out of
its literal, comment, identifier, code span or terminal line.
"""

from __future__ import annotations

import ast
import io
import json
import re
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from edgedeploy import escape
from tests.espdl_models import decode_c_string_literal
from tests.hostile import models as m
from tests.hostile.harness import is_one_sentence

CATEGORY = "properties"
FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

# Any Unicode text a protobuf string can hold (no lone surrogates: UTF-8 has none).
TEXT = st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=200)


def _tmp(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("prop")


# -- the dataset loader --------------------------------------------------------------------

SPEC = None


def _spec():
    from edgedeploy.datasets import InputSpec

    return [InputSpec("x", (1, 4), "float32")]


def _load(path: Path):
    from edgedeploy.datasets import load_dataset
    from edgedeploy.errors import OptionError

    try:
        ds = load_dataset(path, _spec())
    except OptionError as exc:
        assert is_one_sentence(str(exc)), str(exc)
        return None
    return ds


@FAST
@given(data=st.binary(max_size=4096), suffix=st.sampled_from([".npz", ".npy"]))
def test_loader_any_bytes(tmp_path_factory, data, suffix):
    path = _tmp(tmp_path_factory) / ("d" + suffix)
    path.write_bytes(data)
    _load(path)


@FAST
@given(arrays=st.dictionaries(st.sampled_from(["x", "labels", "y", "other"]), hnp.arrays(
    dtype=st.one_of(hnp.floating_dtypes(), hnp.integer_dtypes(), hnp.boolean_dtypes(), hnp.complex_number_dtypes(), hnp.unicode_string_dtypes(max_len=3), hnp.datetime64_dtypes()),
    shape=hnp.array_shapes(min_dims=0, max_dims=3, max_side=5)), min_size=0, max_size=3))
def test_loader_any_arrays(tmp_path_factory, arrays):
    path = _tmp(tmp_path_factory) / "d.npz"
    np.savez(path, **arrays)
    ds = _load(path)
    if ds is not None:
        x = ds.inputs["x"]
        assert x.dtype == np.float32 and x.shape[1:] == (4,) and np.isfinite(x).all()


@FAST
@given(data=st.data())
def test_loader_mutated_npz(tmp_path_factory, data):
    good = io.BytesIO()
    np.savez_compressed(good, x=np.arange(32, dtype=np.float32).reshape(8, 4), labels=np.arange(8))
    raw = bytearray(good.getvalue())
    for _ in range(data.draw(st.integers(1, 8))):
        at = data.draw(st.integers(0, len(raw) - 1))
        raw[at] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(raw)))
    path = _tmp(tmp_path_factory) / "d.npz"
    path.write_bytes(bytes(raw[:cut]))
    _load(path)


@FAST
@given(shape=st.lists(st.integers(0, 2**40), min_size=0, max_size=4), descr=st.sampled_from(["<f4", "<f8", "|O", "<U4", "|b1", ">i8", "<c8", "|V8"]), extra=st.binary(max_size=64))
def test_loader_lying_headers(tmp_path_factory, shape, descr, extra):
    path = _tmp(tmp_path_factory) / "d.npz"
    path.write_bytes(m.zip_bytes({"x.npy": m.npy_header_only(shape, dtype=descr, extra=extra)}))
    _load(path)


# -- intake --------------------------------------------------------------------------------

@FAST
@given(data=st.data())
def test_intake_mutated_model(tmp_path_factory, data):
    from edgedeploy.errors import ModelError
    from edgedeploy.model import load_model

    raw = bytearray(m.conv_relu_model().SerializeToString())
    for _ in range(data.draw(st.integers(1, 6))):
        at = data.draw(st.integers(0, len(raw) - 1))
        raw[at] = data.draw(st.integers(0, 255))
    path = _tmp(tmp_path_factory) / "m.onnx"
    path.write_bytes(bytes(raw[: data.draw(st.integers(1, len(raw)))]))
    try:
        model = load_model(path)
    except ModelError as exc:
        assert is_one_sentence(str(exc)), str(exc)
        return
    json.dumps([vi.name for vi in model.graph_inputs()])  # everything that came through is text


@FAST
@given(name=TEXT.filter(bool))
def test_intake_any_names(tmp_path_factory, name):
    """Any text as a tensor and node name: intake accepts it, and the names survive as text."""
    from edgedeploy.errors import ModelError
    from edgedeploy.model import load_model

    path = m.write(_tmp(tmp_path_factory) / "m.onnx", m.relu_model(in_name=name, out_name=name + "_o", node_name=name))
    try:
        model = load_model(path)
    except ModelError as exc:
        assert is_one_sentence(str(exc)), str(exc)
        return
    assert model.graph_inputs()[0].name == name


# -- the worker arrays ---------------------------------------------------------------------

@FAST
@given(names=st.lists(st.one_of(TEXT, st.just("a\x00b"), st.just("n" * 70000)), min_size=1, max_size=4, unique=True))
def test_worker_arrays_keep_any_name(tmp_path_factory, names):
    from edgedeploy.arrays import read_arrays, write_arrays

    arrays = {n: np.full((2, 3), i, np.float32) for i, n in enumerate(names)}
    path = write_arrays(_tmp(tmp_path_factory) / "a.npz", arrays)
    back = read_arrays(path)
    assert list(back) == names and all(np.array_equal(back[n], arrays[n]) for n in names)


# -- escaping, per language ----------------------------------------------------------------

@FAST
@given(text=TEXT)
def test_c_string(text):
    literal = escape.c_string(text)
    assert literal.isascii() and "\n" not in literal and "??" not in literal
    assert decode_c_string_literal(literal) == text


@FAST
@given(text=TEXT)
@example(text="\\x41")  # a backslash then "x41": found by hypothesis in CI, where the check read it as a hex escape
def test_c_string_body_in_a_template(text):
    body = escape.c_string_body(text)
    assert decode_c_string_literal('"' + body + '"') == text
    # A hex escape is a backslash that is not itself escaped, then x: an escaped backslash
    # followed by the letter x (from a name holding a backslash and then x) is two plain characters.
    assert not re.search(r"(?<!\\)(?:\\\\)*\\x", body), "hex escapes swallow the digits after them"


@FAST
@given(text=TEXT)
def test_comment_text(text):
    out = escape.comment_text(text)
    assert out.isascii() and "\n" not in out and "\r" not in out and "*/" not in out and "??" not in out
    assert "\\" not in out.replace("\\x", "")


@FAST
@given(text=TEXT)
def test_identifier(text):
    assert re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,47}", escape.identifier(text))


@FAST
@given(text=TEXT)
def test_python_string(text):
    literal = escape.python_string(text)
    assert literal.isascii() and "\n" not in literal
    assert ast.literal_eval(literal) == text


@FAST
@given(text=TEXT)
def test_json_c_string(text):
    assert json.loads(decode_c_string_literal(escape.json_c_string({"name": text}))) == {"name": text}


@FAST
@given(text=TEXT)
def test_markdown_code(text):
    span = escape.markdown_code(text)
    assert span.count("`") == 2 and span.isascii() and "\n" not in span
    assert json.loads(span[1:-1].replace("\\u0060", "`")) == text


@FAST
@given(text=TEXT)
def test_markdown_cell(text):
    cell = escape.markdown_cell(text)
    assert "\n" not in cell and not re.search(r"(?<!\\)[|`<>\[\]]", cell.replace("\\\\", ""))


@FAST
@given(text=TEXT)
def test_html_text(text):
    out = escape.html_text(text)
    assert "<" not in out and ">" not in out and '"' not in out


@FAST
@given(text=TEXT)
def test_terminal_safe(text):
    out = escape.terminal_text(text)
    assert not any((ord(c) < 0x20 and c not in "\n\t") or 0x7F <= ord(c) < 0xA0 for c in out)
    assert out.count("\n") == text.count("\n")


@FAST
@given(text=TEXT)
def test_templates_never_render_names_as_templates(text):
    """A name holding Jinja syntax stays text: the generators pass names as values, never as template source."""
    from edgedeploy.targets.tensorrt.codegen import cpp_string

    assert decode_c_string_literal('"' + cpp_string("{{ " + text + " }}") + '"') == "{{ " + text + " }}"
