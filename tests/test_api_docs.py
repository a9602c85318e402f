"""docs/api.md's example session, run as written: the page cannot drift from what the API does.

The session's Python block (marked `<!-- docs-test: file api_session.py -->`) runs in this
process, in a fresh folder where the page's shell block (`edgedeploy sample -o .`) ran first.
What it prints must be the page's output block line for line, and nothing else may reach stdout
or stderr (file-descriptor level: a toolchain worker's or ONNX Runtime's output would show).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "api.md"
SESSION_MARKER = "<!-- docs-test: file api_session.py -->"
OUTPUT_MARKER = "<!-- api-session-output -->"


def fenced_block_after(marker: str) -> str:
    """The fenced code block right after the line `marker` in docs/api.md."""
    lines = PAGE.read_text(encoding="utf-8").splitlines()
    start = lines.index(marker) + 1
    assert lines[start].startswith("```"), f"docs/api.md: a fenced block must follow {marker}"
    end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("```"))
    return "\n".join(lines[start + 1 : end]) + "\n"


def shell_lines_before_session() -> list[str]:
    """The commands of the `docs-test: run` block that prepares the session's folder."""
    text = PAGE.read_text(encoding="utf-8")
    before = text[: text.index(SESSION_MARKER)]
    block = before[before.rindex("<!-- docs-test: run -->") :].splitlines()[1:]
    return [line.strip() for line in block if line.startswith("    ") and line.strip()]


def test_the_page_has_the_session_and_its_output():
    session = fenced_block_after(SESSION_MARKER)
    assert "edgedeploy.build(" in session and "edgedeploy.audit(" in session
    assert fenced_block_after(OUTPUT_MARKER).strip()
    assert shell_lines_before_session() == ["edgedeploy sample -o ."]


@pytest.mark.toolchain("espdl")
@pytest.mark.slow
def test_the_api_session_runs_as_written_and_prints_only_its_own_output(tmp_path, monkeypatch, capfd):
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    for line in shell_lines_before_session():
        subprocess.run(line, shell=True, cwd=tmp_path, env=env, check=True, capture_output=True)
    monkeypatch.chdir(tmp_path)
    printed: list[str] = []

    def print_(*values, sep=" ", end="\n", file=None):
        assert file is None, "the session prints to stdout only"
        printed.append(sep.join(str(v) for v in values))

    capfd.readouterr()
    code = compile(fenced_block_after(SESSION_MARKER), str(PAGE), "exec")
    exec(code, {"__name__": "__main__", "print": print_})  # noqa: S102 - the documented session, verbatim
    assert capfd.readouterr() == ("", ""), "the API wrote to stdout or stderr itself"
    expected = fenced_block_after(OUTPUT_MARKER).strip().splitlines()
    assert printed == expected
