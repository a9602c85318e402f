"""Hostile names in every language edgedeploy generates: C, C++, Python, CMake, Makefile, JSON,
Markdown, HTML, and the terminal.

Each name is put on a model's input, output and node (and, where the file system allows, its file
name); the real generators then write their files (the ESP-DL project, the RKNN and TensorRT
runners, the TIDL run script) and `edgedeploy audit` renders every format. Each (name, language)
case checks that the name arrives intact where it is data (decoding the literal gives it back)
and nowhere else: the C and C++ files compile with trigraphs enabled, no preprocessor line or
comment terminator is smuggled in, Markdown tables keep their columns, HTML has no raw markup,
the terminal gets no control characters.
"""

from __future__ import annotations

import ast
import html
import json
import re
import shutil
import subprocess
from functools import lru_cache
from pathlib import Path

import pytest

from tests.espdl_models import decode_c_string_literal, header_define
from tests.hostile import models as m

CATEGORY = "names"
REPO = Path(__file__).resolve().parents[2]
RKNN_INCLUDE = REPO / "tests" / "fixtures" / "rknn" / "standin" / "include"
TRT_INCLUDE = REPO / "tests" / "fixtures" / "tensorrt_stub_include"

NAMES = {
    "comment close and include": '*/ "\n#include <evil.h>\n',
    "trigraph backslash": "??/\nint evil;",
    "trigraph define": "??=define EVIL 1",
    "string break": '"; system("touch PWNED"); "',
    "backslashes": "\\\\x41\\n\\",
    "define injection": "\n#define EDGEDEPLOY_MODEL_SIZE_BYTES 0\n",
    "crlf": "a\r\nb\r",
    "nul": "a\x00b",
    "make shell": "$(shell touch PWNED)",
    "cmake variable": "${CMAKE_COMMAND} $ENV{HOME}",
    "backticks": "`touch PWNED`",
    "jinja": "{{ 7*7 }}{% raw %}",
    "script tag": "<script>alert(1)</script>",
    "markdown link": "[x](javascript:alert(1))",
    "markdown table": "| a | b |\n|---|",
    "ansi escape": "\x1b[2J\x1b[31mRED\x1b[0m",
    "right-to-left override": "\u202egnp.exe",
    "emoji": "\U0001F600 model",
    "combining": "e\u0301\u0301\u0301",
    "line separator": "a\u2028b\u2029c",
    "python triple quotes": "'''\"\"\"",
    "printf format": "%s%n%x%p",
    "leading dash": "-rf /",
    "path traversal": "../../etc/passwd",
    "make and cmake specials": "a#b:c=d;e\\",
    "del and tab": "\x7f\tx",
    "long name (70000 chars)": "n" * 70000,
}

LANGUAGES = ["C header", "C", "C++", "Python", "CMake", "Makefile", "JSON", "Markdown", "HTML", "terminal", "diagnosis"]


def _stem(name: str) -> str:
    """The name as a file stem where the file system allows it (no '/', no NUL, at most 200 bytes)."""
    stem = name.replace("/", "_").replace("\x00", "_").strip() or "_"
    while len(stem.encode()) > 200:
        stem = stem[:-1]
    return stem if stem not in (".", "..") else "_" + stem


@lru_cache(maxsize=None)
def generated(case: str) -> dict:
    """Every generator's output for one hostile name, made once per name."""
    import tempfile

    from edgedeploy.model import load_model
    from edgedeploy.targets import find_chip
    from edgedeploy.targets.espdl.codegen import generate_project
    from edgedeploy.targets.rknn.codegen import render_runner_sources
    from edgedeploy.targets.tensorrt.codegen import write_runners
    from edgedeploy.targets.tidl import convert as tidl_convert

    name = NAMES[case]
    root = Path(tempfile.mkdtemp(prefix="edgedeploy-hostile-names-"))
    model_path = m.write(root / (_stem(name) + ".onnx"), m.relu_model(in_name=name, out_name=name + " out", node_name=name + " node"))
    loaded = load_model(model_path)
    espdl_file = root / "model.espdl"
    espdl_file.write_bytes(b"\0" * 128)
    _, chip = find_chip("esp32s3")
    generate_project(root / "espdl", espdl_file, chip, loaded, "int8", [])
    scope = {"model_sha256": loaded.sha256, "input_shapes": {name: [1, 4]}, "backend": "x", "chip": "rk3588"}
    inputs_meta = [{"name": name, "board_dtype": "float32", "board_layout": None, "board_shape": [1, 4], "bytes_per_inference": 16, "npy_file": "inputs/input0.npy", "bin_file": "inputs/input0.bin"}]
    rknn = render_runner_sources(loaded.sha256, {"toolkit_version": "2.5.0", "rknn_file": "model.rknn"}, inputs_meta, [name + " out"], 1, 1, scope)
    (root / "rknn").mkdir()
    for file_name, text in rknn.items():
        (root / "rknn" / file_name).write_text(text)
    provenance = {"trt_version": name, "compute_capability": name, "gpu_name": name, "dla_core": None}
    write_runners(root / "trt", loaded.sha256, provenance, scope, 1)
    build_info = {"model_sha256": loaded.sha256, "inputs": name, "chip": "am62a"}
    header = {"edgedeploy_version": "0", "model_sha256": loaded.sha256, "chip": "am62a", "soc": "am62a", "tidl_version": "10"}
    (root / "tidl").mkdir()
    (root / "tidl" / "run_tidl.py").write_text(tidl_convert.render("run_tidl.py.j2", build_json=json.dumps(build_info, sort_keys=True), **header))
    return {"name": name, "root": root, "model": model_path, "sha256": loaded.sha256, "build_info": build_info}


def _compile(compiler: str, source: Path, *flags: str) -> subprocess.CompletedProcess:
    return subprocess.run([compiler, "-fsyntax-only", "-trigraphs", "-Wall", "-Werror=format-security", *flags, str(source)], capture_output=True, text=True)


def _distinctive(name: str) -> list[str]:
    """Pieces of the name that must not appear raw in a file where the name is not data: the
    name itself and each of its lines of 6 or more characters."""
    pieces = {name} | {line for line in re.split(r"[\r\n\u2028\u2029]", name) if len(line.strip()) >= 6}
    return sorted(p for p in pieces if len(p) >= 3)


def _code_lines(text: str, comment: str) -> str:
    """The file without its comment lines (a name shown in a comment is inert there)."""
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith(comment))


def check_c_header(gen) -> None:
    header_path = gen["root"] / "espdl" / "main" / "edgedeploy_model.h"
    header = header_path.read_text()
    directives = [line.split()[0] for line in header.splitlines() if line.startswith("#")]
    assert set(directives) <= {"#pragma", "#define"}, directives
    scope = json.loads(decode_c_string_literal(header_define(header, "EDGEDEPLOY_SCOPE_JSON")))
    assert list(scope["input_shapes"]) == [gen["name"]]
    assert decode_c_string_literal(header_define(header, "EDGEDEPLOY_MODEL_NAME")) == gen["model"].stem
    probe = header_path.parent / "probe.c"
    probe.write_text('#include "edgedeploy_model.h"\nconst char *a = EDGEDEPLOY_MODEL_NAME, *b = EDGEDEPLOY_SCOPE_JSON;\nint n = EDGEDEPLOY_INPUT_COUNT;\n')
    result = _compile("gcc", probe, "-x", "c")
    assert result.returncode == 0, result.stderr[-2000:]


def check_c(gen) -> None:
    source = gen["root"] / "rknn" / "rknn_runner.c"
    text = source.read_text()
    literal = re.search(r'OUTPUT_NAMES_JSON = ("(?:[^"\\]|\\.)*");', text).group(1)
    assert json.loads(decode_c_string_literal(literal)) == [gen["name"] + " out"]
    result = _compile("gcc", source, "-I", str(RKNN_INCLUDE))
    assert result.returncode == 0, result.stderr[-2000:]


def check_cpp(gen) -> None:
    source = gen["root"] / "trt" / "trt_runner.cpp"
    text = source.read_text()
    literal = re.search(r'kScopeJson = ("(?:[^"\\]|\\.)*");', text).group(1)
    assert list(json.loads(decode_c_string_literal(literal))["input_shapes"]) == [gen["name"]]
    assert not re.search(r"\?\?[=/'()!<>-]", text), "a trigraph formed"
    result = _compile("g++", source, "-std=c++17", "-I", str(TRT_INCLUDE))
    assert result.returncode == 0, result.stderr[-2000:]


def check_python(gen) -> None:
    for path in [*(gen["root"] / "trt").glob("*.py"), *(gen["root"] / "rknn").glob("*.py")]:
        text = path.read_text()
        ast.parse(text)
        for piece in _distinctive(gen["name"]):
            assert piece not in _code_lines(text, "#"), (path.name, piece)
    script = (gen["root"] / "tidl" / "run_tidl.py").read_text()
    tree = ast.parse(script)
    assign = next(n for n in ast.walk(tree) if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", None) == "BUILD")
    literal = ast.literal_eval(assign.value.args[0])
    assert json.loads(literal) == gen["build_info"]


def check_cmake(gen) -> None:
    for rel in ("CMakeLists.txt", "main/CMakeLists.txt"):
        text = (gen["root"] / "espdl" / rel).read_text()
        for line in text.splitlines():
            if line.lstrip().startswith("#"):
                assert "\r" not in line
        project = re.search(r"^project\((.*)\)$", text, flags=re.M)
        if project:
            assert re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", project.group(1)), project.group(1)
        for piece in _distinctive(gen["name"]):
            assert piece not in _code_lines(text, "#"), (rel, piece)


def check_makefile(gen) -> None:
    for path in (gen["root"] / "rknn" / "Makefile", gen["root"] / "trt" / "Makefile"):
        text = path.read_text()
        for piece in _distinctive(gen["name"]):
            assert piece not in _code_lines(text, "#"), (path.name, piece)
        assert gen["sha256"] in text, "the header names the model's hash"


def _audit(hostile, gen, fmt: str):
    outcome = hostile.run("audit", "--target", "esp32s3", "--target", "rk3588", "--format", fmt, str(gen["model"]))
    assert outcome.code == 0, str(outcome)
    assert "Traceback" not in outcome.stderr
    return outcome


def check_json(hostile, gen) -> None:
    report = json.loads(_audit(hostile, gen, "json").stdout)
    text = json.dumps(report)
    assert json.dumps(gen["name"] + " node")[1:-1] in text, "the node name arrives intact"
    scope = json.loads(decode_c_string_literal(header_define((gen["root"] / "espdl" / "main" / "edgedeploy_model.h").read_text(), "EDGEDEPLOY_SCOPE_JSON")))
    assert list(scope["input_shapes"]) == [gen["name"]]


def _unescaped_pipes(line: str) -> int:
    return len(re.findall(r"(?<!\\)\|", line.replace("\\\\", "")))


def check_markdown(hostile, gen) -> None:
    readme = (gen["root"] / "espdl" / "README.md").read_text()
    spans_removed = re.sub(r"`[^`\n]*`", "", readme)
    for piece in _distinctive(gen["name"]):
        assert piece not in spans_removed, piece
    md = _audit(hostile, gen, "md").stdout
    for block in md.split("\n\n"):
        rows = [line for line in block.splitlines() if line.startswith("|")]
        if rows:
            assert len({_unescaped_pipes(r) for r in rows}) == 1, block[:500]
    assert "<script>" not in md and "](javascript:" not in md


def check_html(hostile, gen) -> None:
    page = _audit(hostile, gen, "html").stdout
    assert "<script>alert" not in page and "\x1b" not in page and "\x00" not in page
    if "<" in gen["name"] or '"' in gen["name"]:
        assert html.escape(gen["name"] + " node", quote=True)[:40] in page or "&lt;" in page or "&quot;" in page


def check_terminal(hostile, gen) -> None:
    outcome = _audit(hostile, gen, "text")
    for stream in (outcome.stdout, outcome.stderr):
        bad = {c for c in stream if (ord(c) < 0x20 and c not in "\n\t") or 0x7F <= ord(c) < 0xA0 or c in "\u2028\u2029\u202e"}
        assert not bad, sorted(map(hex, map(ord, bad)))


def check_diagnosis(gen) -> None:
    """A real diagnosis of the model (ONNX Runtime's QDQ path) in every rendering: the SNR curve's SVG
    parses as XML with the node name as text, and the HTML, Markdown and text carry no markup or
    control character from the name."""
    import xml.etree.ElementTree as ET

    import numpy as np

    from edgedeploy.escape import terminal_safe
    from edgedeploy.report.diagnosis import render_text
    from edgedeploy.report.diagnosis_pages import diagnosis_markdown_page
    from edgedeploy.report.html import render_diagnosis_page
    from edgedeploy.report.snr_curve import output_curves
    from edgedeploy.report.snr_svg import curve_svg
    from tests.test_snr_curve import qdq_diagnosis

    document = qdq_diagnosis(gen["model"], [{gen["name"]: np.random.default_rng(i).normal(size=(1, 4)).astype(np.float32)} for i in range(4)])
    path = document["paths"][0]
    [curve] = output_curves(path)
    svg = ET.fromstring(curve_svg(curve, path))
    points = [c.get("data-node") for c in svg.iter("{http://www.w3.org/2000/svg}circle") if c.get("class") == "node"]
    assert points == [terminal_safe(gen["name"] + " node")]
    page, markdown, text = render_diagnosis_page(document), diagnosis_markdown_page(document), render_text(document)
    assert "<script>alert" not in page and "<script>alert" not in "".join(markdown.split("```")[0::2])
    for out in (page, markdown, text):
        bad = {c for c in out if (ord(c) < 0x20 and c not in "\n\t") or 0x7F <= ord(c) < 0xA0 or c in "\u2028\u2029\u202e"}
        assert not bad, sorted(map(hex, map(ord, bad)))


CHECKS = {
    "C header": check_c_header, "C": check_c, "C++": check_cpp, "Python": check_python, "CMake": check_cmake, "Makefile": check_makefile,
    "JSON": check_json, "Markdown": check_markdown, "HTML": check_html, "terminal": check_terminal, "diagnosis": check_diagnosis,
}


@pytest.mark.skipif(shutil.which("gcc") is None or shutil.which("g++") is None, reason="needs gcc and g++ to compile the generated C and C++")
@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("case", sorted(NAMES), ids=str)
def test_hostile_name(hostile, case, language):
    gen = generated(case)
    check = CHECKS[language]
    try:
        check(hostile, gen) if check.__code__.co_argcount == 2 else check(gen)
    except AssertionError as exc:
        hostile.handled(False, f"{language}: {exc}")
    hostile.handled(True)


@pytest.mark.toolchain("espdl")
@pytest.mark.parametrize("case", ["nul", "long name (70000 chars)"])
def test_names_in_worker_requests(hostile, case):
    """A real ESP-DL build of a model whose input name holds a NUL or is 70,000 characters long:
    the arrays handed to the worker (edgedeploy.arrays, keyed by index) carry it intact."""
    import numpy as np

    name = NAMES[case]
    model = m.write(hostile.tmp / "model.onnx", m.conv_relu_model(in_name=name, out_name="y"))
    calib = hostile.tmp / "calib.npz"
    # The user's file may use any key for a single-input model; the worker's request is edgedeploy.arrays'.
    np.savez(calib, x=np.random.default_rng(0).standard_normal((64, 3, 8, 8)).astype(np.float32))
    hostile.guard(hostile.tmp / "model.onnx", calib)
    outcome = hostile.run("build", "--target", "esp32s3", "--calib", str(calib), "--out", str(hostile.tmp / "out"), str(model))
    hostile.accepted(outcome)
