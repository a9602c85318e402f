"""The core (toolkit/) names no vendor or vendor toolchain outside docstrings and help text.

What differs per vendor comes through the target contract (targets/base.py): report sections
(Target.report_sections), the figures gates read (Target.gate_figures), board timings
(Target.board_setup_worst_case_s), serial flashing modes (Target.serial_flash_modes). This test
reads every module of toolkit/ with `ast` and looks at the string literals and identifiers that
are code: a docstring, the text of a `help=` (or `short_help=`, `epilog=`) argument, and a
module-level `*_HELP` string, the help argument of `shared_option` (given by position) are for people and may give a vendor as an example; comments are not
in the tree. Everything else may not contain a name of VENDOR_NAMES.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

CORE = Path(__file__).resolve().parent.parent / "toolkit"

# Vendors, their toolchains and chips' families, as they appear in code (case-insensitive).
VENDOR_NAMES = (
    "espdl", "esp-dl", "esp_dl", "esp-ppq", "esp_ppq", "ppq", "espressif", "esp32", "esp-idf", "esp_idf", "idf",
    "rknn", "rockchip", "rk3588", "rv1106",
    "vela", "eiq", "nxp", "imx", "i.mx", "ethos",
    "tensorrt", "trtexec", "nvidia", "jetson",
    "tidl", "texas instruments",
    "onnx2tf", "hailo",
)  # fmt: skip
PATTERN = re.compile(r"(?<![a-z0-9])(" + "|".join(re.escape(n) for n in VENDOR_NAMES) + r")(?![a-z])", re.IGNORECASE)

# (file under toolkit/, the text that names a vendor): why the core may say it. Each is a name
# of something the core itself uses on the measuring host, never a target's.
ALLOWED = {
    ("measure/backends/__init__.py", "ort-tensorrt"): "ONNX Runtime's own TensorRT execution provider, one of the host runtimes `bench` times",
    ("measure/protocol.py", "nvidia-smi"): "the tool that lists the measuring host's GPUs, for the host description",
}
HELP_KEYWORDS = ("help", "short_help", "epilog")
# Calls that take their help text positionally: the function's name and the argument's index
# (pipeline/build_options.py declares each option as shared_option(flag, help, ...)).
HELP_POSITIONS = {"shared_option": 1}


def _for_people(tree: ast.AST) -> set[int]:
    """ids of the string nodes that are docstrings or help text."""
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                skip.add(id(first.value))
        if isinstance(node, ast.keyword) and node.arg in HELP_KEYWORDS:
            skip.update(id(sub) for sub in ast.walk(node.value))
        position = HELP_POSITIONS.get(getattr(getattr(node, "func", None), "id", None)) if isinstance(node, ast.Call) else None
        if position is not None and len(node.args) > position:
            skip.update(id(sub) for sub in ast.walk(node.args[position]))
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id.endswith("_HELP") for t in node.targets):
            skip.update(id(sub) for sub in ast.walk(node.value))
    return skip


def _code_texts(node: ast.AST) -> list[str]:
    """The strings and identifiers one node contributes as code."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute):
        return [node.attr]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, ast.arg):
        return [node.arg]
    if isinstance(node, ast.keyword) and node.arg:
        return [node.arg]
    if isinstance(node, ast.alias):
        return [node.name, node.asname or ""]
    return []


def vendor_names_in(path: Path) -> list[tuple[int, str, str]]:
    """(line, the name found, the text it is in) for each vendor name in the module's code."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    skip = _for_people(tree)
    found = []
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        for text in _code_texts(node):
            match = PATTERN.search(text)
            if match:
                found.append((getattr(node, "lineno", 0), match.group(1), text))
    return found


def test_the_core_names_no_vendor_outside_docstrings_and_help():
    offenders = []
    for path in sorted(CORE.rglob("*.py")):
        relative = path.relative_to(CORE).as_posix()
        for line, name, text in vendor_names_in(path):
            if not any(relative == file and allowed in text for (file, allowed) in ALLOWED):
                offenders.append(f"toolkit/{relative}:{line}: {name!r} in {text[:80]!r}")
    assert not offenders, "the core names vendors (move it behind the target contract):\n" + "\n".join(offenders)


def test_the_scan_finds_a_vendor_in_code_but_not_in_docstrings_or_help(tmp_path):
    module = tmp_path / "sample.py"
    module.write_text(
        '"""Talks to RKNN boards (a docstring may)."""\n'
        "import click\n"
        "FAIL_HELP = 'imx93:ram=256KiB'\n"
        "size = shared_option('--size', 'as Vela counts it', 'esp-dl')\n"
        "@click.option('--x', help='as Vela reports it')\n"
        "def f(vela_sram):\n"
        "    '''Vela's SRAM.'''\n"
        "    return {'tool': 'esp-ppq'}\n"
    )
    assert [(line, name) for line, name, _ in vendor_names_in(module)] == [(4, "esp-dl"), (6, "vela"), (8, "esp-ppq")]


def test_every_exception_is_still_needed():
    texts = {(path.relative_to(CORE).as_posix(), text) for path in CORE.rglob("*.py") for _, _, text in vendor_names_in(path)}
    for file, allowed in ALLOWED:
        assert any(f == file and allowed in text for f, text in texts), f"{file}: {allowed!r} is no longer there; drop it from ALLOWED"
