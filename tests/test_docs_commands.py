"""Every command line of the README and of the docs' quick starts, run verbatim through bash.

The documents are this test's source, so they cannot drift from what the commands do. A code
block is marked in the Markdown with an HTML comment just before it:

    <!-- docs-test: run -->                     every line runs, in order, through `bash -c`
    <!-- docs-test: run; setup: COMMAND -->     the same, after COMMAND (through bash, once per document)
    <!-- docs-test: file NAME -->               the block is written to NAME, for the lines after it
    <!-- docs-test: shown: REASON -->           not run (a synopsis, a GPU machine's script), and why

All blocks of one document share one fresh, empty working folder, entered by a relative path
(the way a user types the commands in a folder of their own), with the default options and the
installed toolchains; `edgedeploy` is found on PATH as after `. .venv/bin/activate`. Inside a
`run` block a line is shown instead of run only for a reason this test checks itself:
- it has a `[placeholder]` in square brackets, to be filled in with one's own file;
- it names a board: `--device NAME` that is not in the device inventory (an empty one here), or
  `CHIP@PORT` whose serial port does not exist;
- it builds (or `--confirm`s) for a chip whose toolchain is not installed here (TI's tools,
  TensorRT on a Jetson; CI installs every managed one, so espdl, rknn and eiq lines run there).
Each such line is its own skipped test with that reason; a block with a command and no marker
fails the suite.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
MARKER = re.compile(r"^\s*<!--\s*docs-test:\s*(.*?)\s*-->\s*$")
COMMAND_START = re.compile(r"^(edgedeploy(\s|$)|bash\s|python3?\s|\.\s|source\s|cd\s|pip\s|\.venv/)")
PLACEHOLDER = re.compile(r"\[[^\]\s][^\]]*\]")
LINE_TIMEOUT_S = 600


@dataclass
class Block:
    document: Path
    line: int  # 1-based line of the block's first line
    text: list[str]
    marker: str | None  # the text after "docs-test:", None when unmarked
    lang: str = ""  # a fenced block's info string (toml, json, ...)

    @property
    def kind(self) -> str | None:
        if self.marker is None:
            return None
        return re.split(r"[\s;:]", self.marker, maxsplit=1)[0]


@dataclass
class Command:
    document: Path
    line: int
    text: str  # verbatim, continuation lines joined as bash joins them

    @property
    def id(self) -> str:
        return f"{self.document.relative_to(ROOT)}:{self.line}"


@dataclass
class Step:
    """What the test does for one document, in order: write a file, run a command, or show one."""

    action: str  # "file", "run", "show"
    command: Command | None = None
    name: str | None = None
    content: str | None = None
    reason: str | None = None
    setup: bool = False  # a block's `setup:` command, run before its lines


def blocks_of(document: Path) -> list[Block]:
    """Fenced and indented code blocks, each with the docs-test marker right above it (if any)."""
    lines = document.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    pending: str | None = None
    pending_line = 0
    i = 0
    while i < len(lines):
        line = lines[i]
        marker = MARKER.match(line)
        if marker:
            if pending is not None:
                raise AssertionError(f"{document.name}:{pending_line}: a docs-test marker with no code block after it")
            pending, pending_line = marker.group(1), i + 1
            i += 1
            continue
        fence = re.match(r"^(```|~~~)", line)
        previous_blank = i == 0 or not lines[i - 1].strip() or MARKER.match(lines[i - 1])
        if fence:
            end = next((j for j in range(i + 1, len(lines)) if lines[j].startswith(fence.group(1))), len(lines))
            blocks.append(Block(document, i + 2, lines[i + 1 : end], pending, line[3:].strip().lower()))
            pending = None
            i = end + 1
            continue
        if line.startswith("    ") and line.strip() and previous_blank and not _in_list(lines, i):
            j = i
            while j < len(lines) and (lines[j].startswith("    ") or not lines[j].strip()):
                j += 1
            body = [l[4:] for l in lines[i:j]]
            while body and not body[-1].strip():
                body.pop()
            blocks.append(Block(document, i + 1, body, pending))
            pending = None
            i = j
            continue
        if line.strip() and pending is not None:
            raise AssertionError(f"{document.name}:{pending_line}: the docs-test marker must be right above its code block")
        i += 1
    if pending is not None:
        raise AssertionError(f"{document.name}:{pending_line}: a docs-test marker with no code block after it")
    return blocks


def _in_list(lines: list[str], i: int) -> bool:
    """An indented paragraph that continues a list item is not a code block."""
    for j in range(i - 1, -1, -1):
        text = lines[j]
        if not text.strip():
            continue
        if re.match(r"^\s{0,3}([-*+]|\d+\.)\s", text) or (text.startswith("   ") and not text.startswith("    ")):
            return True
        return text.startswith("    ") and _in_list(lines, j)
    return False


def commands_of(block: Block) -> list[Command]:
    """The block's command lines: comments and blank lines left out, `\\` continuations joined."""
    commands, current, start = [], "", 0
    for offset, raw in enumerate(block.text):
        stripped = raw.strip()
        if not current and (not stripped or stripped.startswith("#")):
            continue
        if not current:
            start = block.line + offset
        if stripped.endswith("\\"):
            current += stripped[:-1] + " "
            continue
        current += stripped
        commands.append(Command(block.document, start, current))
        current = ""
    return commands


DATA_LANGUAGES = {"toml", "json", "ini", "yaml", "yml", "text", "csv", "c", "cpp", "python"}


def has_command(block: Block) -> bool:
    if block.lang in DATA_LANGUAGES:
        return False  # a file's content, not a shell session
    return any(COMMAND_START.match(line.strip()) for line in block.text)


def steps_of(document: Path) -> list[Step]:
    steps: list[Step] = []
    for block in blocks_of(document):
        kind = block.kind
        if kind is None:
            continue
        if kind == "file":
            name = block.marker.split(None, 1)[1].strip()
            steps.append(Step("file", name=name, content="\n".join(block.text) + "\n"))
        elif kind == "run":
            setup = re.search(r"setup:\s*(.+)$", block.marker)
            if setup and not any(s.setup and s.command.text == setup.group(1).strip() for s in steps):
                # once per document: its blocks share one folder
                steps.append(Step("run", Command(document, block.line, setup.group(1).strip()), setup=True))
            for command in commands_of(block):
                reason = why_not_run(command.text)
                steps.append(Step("show", command, reason=reason) if reason else Step("run", command))
        elif kind == "shown":
            # One step for the whole block: a synopsis or a file's content is not a list of commands.
            reason = block.marker.partition(":")[2].strip()
            steps.append(Step("show", Command(document, block.line, "\n".join(block.text)), reason=f"shown, not run: {reason}" if reason else None))
        else:
            raise AssertionError(f"{document.name}:{block.line}: unknown docs-test marker '{block.marker}' (run, file, shown)")
    return steps


def why_not_run(line: str) -> str | None:
    """Why a line of a `run` block is only shown, from facts of this machine; None: it runs."""
    from edgedeploy.targets import find_chip

    code = line.split(" #", 1)[0]
    placeholder = PLACEHOLDER.search(code)
    if placeholder:
        return f"illustrative: {placeholder.group(0)} is a placeholder for a file of your own"
    args = shlex.split(code)
    device = _option(args, "--device")
    if device and device != "local":
        chip, at, port = device.partition("@")
        if at and port.startswith("/"):
            if not Path(port).exists():
                return f"needs a board on the serial port {port}, which this machine does not have"
        elif device not in _inventory_devices():
            return f"needs the board '{device}', which is not in this machine's device inventory"
    if len(args) > 1 and args[0] == "edgedeploy" and (args[1] == "build" or "--confirm" in args):
        for value in _options(args, "--target"):
            if value == "all":
                continue
            target, _ = find_chip(value)
            status = target.toolchain.status()
            if not status.installed:
                return f"needs the {target.toolchain.name} toolchain for {value}: {status.detail}"
    return None


def _option(args: list[str], flag: str) -> str | None:
    values = _options(args, flag)
    return values[-1] if values else None


def _options(args: list[str], flag: str) -> list[str]:
    found = []
    for i, arg in enumerate(args):
        if arg == flag and i + 1 < len(args):
            found.append(args[i + 1])
        elif arg.startswith(flag + "="):
            found.append(arg.split("=", 1)[1])
    return found


def _inventory_devices() -> set[str]:
    """The devices of the inventory the commands see: an empty one (only the built-in `local`)."""
    import tempfile

    from edgedeploy.devices.inventory import load_inventory

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "devices.toml"
        path.write_text("[devices]\n")
        return set(load_inventory(path).devices)


def shell_env(home_inventory: Path) -> dict:
    """The environment of a user who ran `. .venv/bin/activate`: edgedeploy first on PATH."""
    env = dict(os.environ)
    bindir = str(Path(sys.executable).parent)
    env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
    env["VIRTUAL_ENV"] = str(Path(sys.executable).parent.parent)
    env["EDGEDEPLOY_DEVICES"] = str(home_inventory)  # no boards here: an empty inventory
    env.pop("EDGEDEPLOY_DEBUG", None)
    return env


DOCUMENTS_WITH_STEPS = [d for d in DOCUMENTS if any(s.action == "run" and not s.setup for s in steps_of(d))]
SHOWN = [(d, s) for d in DOCUMENTS for s in steps_of(d) if s.action == "show"]


def test_every_block_with_a_command_is_marked():
    unmarked = [f"{b.document.relative_to(ROOT)}:{b.line}: {b.text[0].strip()}" for d in DOCUMENTS for b in blocks_of(d) if b.marker is None and has_command(b)]
    assert not unmarked, "code blocks with commands but no <!-- docs-test: run|shown: ... --> marker:\n" + "\n".join(unmarked)


def test_the_readme_is_run_and_covers_the_tour():
    steps = steps_of(ROOT / "README.md")
    run = [s.command.text for s in steps if s.action == "run"]
    assert len(run) >= 12, run
    for needed in ("edgedeploy sample -o .", "edgedeploy build", "edgedeploy audit", "edgedeploy report", "edgedeploy bench"):
        assert any(line.startswith(needed) for line in run), needed
    # The tour's image build is quoted: bash must not cut the spec at ';'.
    assert any("--preprocess \"" in line for line in run)


def test_the_set_up_commands_of_the_readme_stay_true():
    """`bash scripts/demo.sh` and `bash scripts/test.sh` set up a machine, so the suite does not run
    them; it checks they parse and do what the README says they do."""
    readme = (ROOT / "README.md").read_text()
    for script in ("scripts/demo.sh", "scripts/test.sh"):
        assert f"    bash {script}" in readme
        assert subprocess.run(["bash", "-n", str(ROOT / script)], capture_output=True).returncode == 0
    demo = (ROOT / "scripts/demo.sh").read_text()
    assert "bash scripts/setup.sh espdl" in demo  # the ESP-DL toolchain environment
    assert re.search(r"^exec \.venv/bin/edgedeploy build --target esp32s3 \"\$@\"$", demo, re.M)  # the sample for the ESP32-S3
    test = (ROOT / "scripts/test.sh").read_text()
    assert "bash scripts/setup.sh all" in test and "-m pytest" in test  # every managed toolchain, then the suite


@pytest.mark.parametrize("document, step", [pytest.param(d, s, id=s.command.id) for d, s in SHOWN])
def test_illustrative_lines_are_shown_for_a_stated_reason(document, step):
    assert step.reason, f"{step.command.id}: a line shown without a reason"
    if step.reason.startswith("illustrative:"):
        assert PLACEHOLDER.search(step.command.text)
    pytest.skip(f"{step.command.id}: {step.reason}")


@pytest.mark.parametrize("document, step", [pytest.param(d, s, id=s.command.id) for d, s in SHOWN if not s.reason.startswith("shown, not run")])
def test_a_shown_line_is_still_one_command_for_bash(document, step):
    """Not run, but copied: no unquoted ; | & < > that would make bash run something else."""
    lexer = shlex.shlex(step.command.text.split(" #", 1)[0], posix=True, punctuation_chars=";&|<>")
    lexer.whitespace_split = True
    operators = [token for token in lexer if token and set(token) <= set(";&|<>")]
    assert not operators, f"{step.command.id}: bash would split this line at {operators}: quote the value"


@pytest.mark.slow
@pytest.mark.parametrize("document", DOCUMENTS_WITH_STEPS, ids=[str(d.relative_to(ROOT)) for d in DOCUMENTS_WITH_STEPS])
def test_document_commands_run_verbatim(document, tmp_path):
    inventory = tmp_path / "devices.toml"
    inventory.write_text("[devices]\n")
    work = tmp_path / "project"
    work.mkdir()
    env = shell_env(inventory)
    ran = 0
    for step in steps_of(document):
        if step.action == "file":
            (work / step.name).write_text(step.content)
            continue
        if step.action == "show":
            continue
        command = step.command
        lexer = shlex.shlex(command.text.split(" #", 1)[0], posix=True, punctuation_chars=";&|<>")
        lexer.whitespace_split = True
        operators = [t for t in lexer if t and set(t) <= set(";&|<>")]
        assert not operators, f"{command.id}: bash would split `{command.text}` at {operators}: quote the value"
        # Relative paths in the line (model.onnx, the default --out edgedeploy-out) are the folder's.
        done = subprocess.run(["bash", "-c", command.text], cwd=work, env=env | {"PWD": str(work)}, capture_output=True, text=True, timeout=LINE_TIMEOUT_S)
        assert done.returncode == 0, f"{command.id}: `{command.text}` exited {done.returncode}\n--- stdout\n{done.stdout[-2000:]}\n--- stderr\n{done.stderr[-4000:]}"
        assert "Traceback" not in done.stderr, f"{command.id}: `{command.text}` printed a traceback:\n{done.stderr[-4000:]}"
        ran += 1
    assert ran, f"{document.name}: nothing ran"
