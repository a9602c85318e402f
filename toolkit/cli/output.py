"""Printing data: JSON on stdout for machines, aligned tables for people; messages on stderr."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import click

from edgedeploy import interrupts
from edgedeploy.escape import terminal_safe, terminal_text
from edgedeploy.report.fmt import table  # noqa: F401 - the CLI prints the same tables as the reports

FORMAT_CHOICES = ("text", "json")


def format_option(choices: Sequence[str] = FORMAT_CHOICES):
    """The `--format` option every data-printing command takes."""
    return click.option(
        "--format",
        "output_format",
        type=click.Choice(list(choices)),
        default=choices[0],
        show_default=True,
        help="Output format; json is pure JSON on stdout, nothing else.",
    )


def emit_json(data: Any) -> None:
    click.echo(to_json(data), nl=False)


def _json_default(value: Any):
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    return str(value)


def echo_text(text: str = "", nl: bool = True) -> None:
    """Data for a person on stdout: every line terminal-safe, since model names and paths end up in it."""
    click.echo(terminal_text(text), nl=nl)


def info(message: str) -> None:
    """A progress or log line: always stderr, so stdout stays data (control characters escaped).

    Through the command's progress display when one is running (edgedeploy.cli.progress);
    with -q/--quiet only warnings and errors are shown.
    """
    from edgedeploy.cli.progress import active_reporter, current_settings, is_warning_or_error

    interrupts.check()  # no further step's line after a signal (edgedeploy.interrupts.check)
    reporter = active_reporter()
    if reporter is not None:
        reporter(message)
    elif not current_settings().quiet or is_warning_or_error(str(message)):
        click.echo(terminal_safe(message), err=True)


def human_count(n: int | None) -> str:
    """1234567 -> '1.23M'."""
    if n is None:
        return "?"
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(n) >= scale:
            return f"{n / scale:.2f}{unit}"
    return str(n)


def human_bytes(n: int | None) -> str:
    if n is None:
        return "?"
    for unit, scale in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if abs(n) >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def stdout_is_terminal() -> bool:
    return sys.stdout.isatty()


def terminal_width() -> int | None:
    """The columns text on stdout should fit: $COLUMNS when set, else the terminal's; None when stdout is no terminal.

    A table printed into a pipe or a file keeps its full width (a script reads it whole);
    COLUMNS=80 makes any run fit 80 columns.
    """
    import os
    import shutil

    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) >= 20:
        return int(columns)
    if stdout_is_terminal():
        return max(shutil.get_terminal_size().columns, 20)
    return None


# -- the output convention of every command that writes a file ------------------------------
#
#   -o/--out FILE   write there instead of stdout, atomically; an existing FILE only with --force
#   --format F      the format; without it, FILE's extension decides (.json .md .html .txt),
#                   and stdout gets text
#
# One helper for every command (audit, report, bench, measure, fix's report), so that the rules
# are the same everywhere and are checked before the work starts: a bench of five minutes must
# not end in "exists already".

EXTENSION_FORMATS = {".json": "json", ".md": "md", ".markdown": "md", ".html": "html", ".htm": "html", ".txt": "text", ".text": "text"}
FORMAT_EXTENSIONS = {"json": ".json", "md": ".md", "html": ".html", "text": ".txt"}


def output_options(formats: Sequence[str], what: str = "the output", aliases: Sequence[str] = ()):
    """`--format`, `-o/--out FILE` and `--force` for a command that prints `what` or writes it to a file.

    The command receives `output_format` (None when not given: see `resolve_output`), `out_path`
    (an absolute Path or None) and `force`. `aliases`: older spellings of -o kept working
    (`--output` of audit and report).
    """
    from edgedeploy.cli.paths import AbsolutePath

    extensions = ", ".join(FORMAT_EXTENSIONS[f] for f in formats)

    def decorate(func):
        func = click.option("--force", is_flag=True, help="Overwrite -o FILE if it exists.")(func)
        func = click.option(
            "--out",
            "-o",
            *aliases,
            "out_path",
            type=AbsolutePath(dir_okay=False, path_type=Path),
            metavar="FILE",
            help=f"Write {what} to FILE (atomically) instead of stdout; the format follows its extension ({extensions}) unless --format is given. An existing FILE needs --force.",
        )(func)
        func = click.option(
            "--format",
            "output_format",
            type=click.Choice(list(formats)),
            default=None,
            help=f"Output format [default: {formats[0]} on stdout; with -o, from the file's extension]; json is pure JSON, nothing else.",
        )(func)
        return func

    return decorate


@dataclass(frozen=True)
class Output:
    """Where a command's data goes (stdout or a file) and in which format; `write` delivers it."""

    path: Path | None
    format: str
    force: bool = False

    def write(self, text: str) -> None:
        if self.path is None:
            if self.format == "json":
                click.echo(text, nl=not text.endswith("\n"))
            else:
                echo_text(text, nl=not text.endswith("\n"))  # model names reach it: terminal-safe
            return
        from edgedeploy.artifacts import atomic_write_text

        refuse_existing(self.path, self.force)  # checked again: the work may have taken minutes
        atomic_write_text(self.path, text if text.endswith("\n") else text + "\n")
        info(f"wrote {self.path} ({self.format})")


def resolve_output(out_path: Path | None, output_format: str | None, force: bool, formats: Sequence[str], command: str) -> Output:
    """The Output for these options, with every refusal made before any work: an unknown
    extension, a format this command does not write, an existing file without --force."""
    from edgedeploy.errors import OptionError

    if out_path is None:
        return Output(None, output_format or formats[0], force)
    if out_path.is_dir():
        raise OptionError(f"-o {out_path} is a folder; give a file name (e.g. {out_path / ('result' + FORMAT_EXTENSIONS[formats[0]])}).")
    fmt = output_format
    if fmt is None:
        fmt = EXTENSION_FORMATS.get(out_path.suffix.lower())
        if fmt is None:
            known = ", ".join(FORMAT_EXTENSIONS[f] for f in formats)
            raise OptionError(f"Cannot tell the format of {out_path.name} from its extension: `{command}` writes {known}; name the file so, or give --format.")
        if fmt not in formats:
            raise OptionError(f"`{command}` writes {' or '.join(formats)}, not {fmt} ({out_path.name}); give a {' or '.join(FORMAT_EXTENSIONS[f] for f in formats)} file or --format.")
    refuse_existing(out_path, force)
    return Output(out_path, fmt, force)


def refuse_existing(path: Path, force: bool) -> None:
    """The one refusal of every command that writes a file: it exists and --force was not given."""
    from edgedeploy.errors import ArtifactError

    if path.exists() and not force:
        raise ArtifactError(f"{path} exists already; use --force to overwrite it.")


# Levels of a JSON document written indented (two spaces each); a value deeper down is written on
# one line. A reader sees the structure and one line per node, group or row, and json's C encoder
# writes those lines: its pure-Python indenting encoder (any `indent`) took 0.05 s of a 17-chip
# audit of a 900-node model, the C encoder 0.01 s, and the file is half the size.
JSON_INDENT_LEVELS = 4


def to_json(data: Any, levels: int = JSON_INDENT_LEVELS) -> str:
    """The JSON text of `data`, as emit_json prints it: the same values as json.dumps(data) (the
    same defaults for numpy values, sets and tuples), indented down to `levels` levels."""
    parts: list[str] = []
    _write_json(data, levels, 0, parts)
    parts.append("\n")
    return "".join(parts)


# json.dumps(value, default=_json_default), made once: json.dumps makes a new encoder whenever
# `default` is given, which was a third of to_json's time (4 of 10 ms on a 17-chip audit).
_ENCODER = json.JSONEncoder(default=_json_default)
# And its C encoder itself, made once: JSONEncoder.encode makes one per call (2,000 calls for a
# 17-chip audit, 8 of its 14 ms). The same arguments as encode() gives it, but no circular-reference
# check (markers None): a report is a tree.
_C_ENCODE = json.encoder.c_make_encoder(
    None, _json_default, json.encoder.encode_basestring_ascii, None, _ENCODER.key_separator, _ENCODER.item_separator, False, False, True
) if json.encoder.c_make_encoder is not None else None


def _encoded(value: Any) -> str:
    """json.dumps(value, default=_json_default), the same text."""
    if _C_ENCODE is None or isinstance(value, str):
        return _ENCODER.encode(value)
    return "".join(_C_ENCODE(value, 0))


def _write_json(value: Any, levels: int, depth: int, parts: list[str]) -> None:
    if not isinstance(value, (dict, list, str, int, float, bool, type(None))):
        value = _json_default(value)
    if depth >= levels or not isinstance(value, (dict, list)) or not value:
        parts.append(_encoded(value))
        return
    inner = "\n" + "  " * (depth + 1)
    if isinstance(value, dict):
        parts.append("{")
        for i, (key, item) in enumerate(value.items()):
            parts.append(("," if i else "") + inner + _json_key(key) + ": ")
            _write_json(item, levels, depth + 1, parts)
        parts.append("\n" + "  " * depth + "}")
    else:
        parts.append("[")
        for i, item in enumerate(value):
            parts.append(("," if i else "") + inner)
            _write_json(item, levels, depth + 1, parts)
        parts.append("\n" + "  " * depth + "]")


def _json_key(key: Any) -> str:
    """A dict key as json.dumps writes it (numbers, booleans and None become their JSON text, as a string)."""
    if not isinstance(key, str):
        key = json.dumps(key) if isinstance(key, (bool, int, float, type(None))) else _json_default(key)
    return json.dumps(key)
