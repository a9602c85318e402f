"""Printing data: JSON on stdout for machines, aligned tables for people; messages on stderr."""

from __future__ import annotations

import json
import sys
from typing import Any, Iterable, Sequence

import click

from edgedeploy.escape import terminal_safe, terminal_text

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
    click.echo(json.dumps(data, indent=2, default=_json_default))


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
    """A progress or log line: always stderr, so stdout stays data (control characters escaped)."""
    click.echo(terminal_safe(message), err=True)


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]], right_align: Sequence[int] = ()) -> str:
    """A plain aligned text table; cells are terminal-safe (a name's control characters are shown escaped)."""
    rows = [["" if c is None else terminal_safe(str(c)) for c in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))

    def line(cells):
        out = []
        for i, cell in enumerate(cells):
            out.append(cell.rjust(widths[i]) if i in right_align else cell.ljust(widths[i]))
        return "  ".join(out).rstrip()

    sep = "  ".join("-" * w for w in widths)
    return "\n".join([line(headers), sep] + [line(r) for r in rows])


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
