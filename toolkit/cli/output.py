"""Printing data: JSON on stdout for machines, aligned tables for people; messages on stderr."""

from __future__ import annotations

import json
import sys
from typing import Any, Sequence

import click

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
