"""No function under targets/ and toolkit/ is longer than 80 lines (issue 25).

A target's conversion is a few declared steps (build_request, read_result, ...) run by the
core's skeleton (toolkit/pipeline/convert.py), the pipelines are stages, and a command parses,
calls edgedeploy.api and renders: a function that grows past a screen is split where its
comments already mark the steps. The test prints the
five longest functions, so the figure is visible in every run.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = (ROOT / "targets", ROOT / "toolkit")
MAX_LINES = 80


def function_lengths() -> list[tuple[int, str]]:
    """(lines, "path:line name") of every function and method, decorators and docstring included."""
    found = []
    for folder in FOLDERS:
        for path in sorted(folder.rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            for node in ast.walk(tree):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    first = min([node.lineno] + [d.lineno for d in node.decorator_list])
                    found.append((node.end_lineno - first + 1, f"{path.relative_to(ROOT)}:{node.lineno} {node.name}"))
    return sorted(found, reverse=True)


def test_no_function_is_longer_than_80_lines():
    lengths = function_lengths()
    print(f"\nthe {min(5, len(lengths))} longest functions under targets/ and toolkit/ (limit {MAX_LINES} lines):")
    for lines, where in lengths[:5]:
        print(f"  {lines:4d}  {where}")
    too_long = [f"{where} ({lines} lines)" for lines, where in lengths if lines > MAX_LINES]
    assert not too_long, f"{len(too_long)} function(s) over {MAX_LINES} lines: " + "; ".join(too_long)
