"""`edgedeploy --help` imports nothing heavy, and lists the commands exactly as click would.

Issue 27 asks `edgedeploy --help` to take at most 1.3x `python -c "import click"`; the figures
come from scripts/bench_audit.py (docs/audit.md), not from a timed assert. What makes them is
tested here as behaviour: the modules that cost (onnx, numpy, jinja2, rich, the targets, the
toolchains, any command's module) stay unimported, and the listing that avoids importing the
commands (COMMAND_SUMMARIES) says what the commands' own help says.
"""

from __future__ import annotations

import re
import subprocess
import sys

import click
import pytest

from edgedeploy.cli import COMMAND_SUMMARIES, LazyCommands, all_commands, cli

# Modules `edgedeploy --help` must not import: each costs from tens of milliseconds (rich,
# jinja2, importlib.metadata via the toolchains) to half a second (onnx with numpy).
HEAVY = ("onnx", "numpy", "jinja2", "rich", "importlib.metadata", "edgedeploy.targets", "edgedeploy.toolchains", "edgedeploy.model", "edgedeploy.api", "edgedeploy.pipeline")


def imported_by(*args: str) -> set[str]:
    """Every module `python -X importtime -m edgedeploy ARGS` imported (from the importtime lines on stderr)."""
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "edgedeploy", *args], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    names = set()
    for line in proc.stderr.splitlines():
        found = re.match(r"import time:\s*\d+\s*\|\s*\d+\s*\|\s*(\S+)", line)
        if found:
            names.add(found.group(1))
    assert "click" in names, "the importtime lines were read"
    return names


def heavy_among(names: set[str]) -> set[str]:
    return {n for n in names if any(n == h or n.startswith(h + ".") for h in HEAVY) or re.match(r"edgedeploy\.cli\.\w+_cmd$", n)}


@pytest.mark.parametrize("args", [("--help",), ("-h",), ("--version",)])
def test_top_level_help_imports_nothing_heavy(args):
    assert heavy_among(imported_by(*args)) == set()


def test_a_subcommands_help_still_loads_what_it_shows():
    """`build --help` lists each target's options, so it loads the targets: the saving is the top level's only."""
    names = imported_by("build", "--help")
    assert {"edgedeploy.targets", "edgedeploy.cli.options"} <= names


def test_every_command_has_its_summary_and_it_is_the_commands_own():
    commands = all_commands()
    missing = {name: commands[name].get_short_help_str(10_000) for name in set(commands) - set(COMMAND_SUMMARIES)}
    assert not missing, f"add to edgedeploy.cli.COMMAND_SUMMARIES: {missing}"
    assert set(COMMAND_SUMMARIES) <= set(commands), f"remove from edgedeploy.cli.COMMAND_SUMMARIES: {set(COMMAND_SUMMARIES) - set(commands)}"
    for name, command in commands.items():
        assert not command.hidden and not command.short_help and not command.deprecated, name
        for limit in (20, 45, 60, 80, 10_000):
            assert click.Command(name, help=COMMAND_SUMMARIES[name]).get_short_help_str(limit) == command.get_short_help_str(limit), (name, limit)


@pytest.mark.parametrize("width", [60, 100])
def test_the_listing_is_what_click_would_print(width):
    ctx = click.Context(cli, info_name="edgedeploy", terminal_width=width)
    ours, clicks = click.HelpFormatter(width=width), click.HelpFormatter(width=width)
    cli.format_commands(ctx, ours)
    click.Group.format_commands(cli, ctx, clicks)
    assert ours.getvalue() == clicks.getvalue() and "Commands:" in ours.getvalue()


def test_a_command_missing_from_the_table_is_looked_up(monkeypatch):
    monkeypatch.delitem(COMMAND_SUMMARIES, "audit")
    ctx = click.Context(cli, info_name="edgedeploy")
    formatter = click.HelpFormatter(width=200)
    LazyCommands.format_commands(cli, ctx, formatter)
    assert "Place every node of MODEL on each chip" in formatter.getvalue()


def test_no_arguments_shows_the_help_as_it_is():
    """`edgedeploy` alone: the help on stderr, laid out as `--help` lays it out, and usage's exit status."""
    proc = subprocess.run([sys.executable, "-m", "edgedeploy"], capture_output=True, text=True, timeout=120)
    shown = subprocess.run([sys.executable, "-m", "edgedeploy", "--help"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip() == shown.stdout.strip() and "\nCommands:\n" in proc.stderr


# What the audit does not use and must not import (scripts/bench_audit.py times it on every
# chip): each cost it 1-6 ms; together about 10 ms of its CPU on DenseNet-121 (2026-12-03).
NOT_FOR_THE_AUDIT = (
    "edgedeploy.devices",  # RunnerSpec: edgedeploy.targets.base's __getattr__
    "edgedeploy.toolchains.kinds",  # the worker environments: edgedeploy.toolchains' __getattr__
    "edgedeploy.toolchains.user_python",
    "edgedeploy.pipeline.build_options",  # api.build's keywords: edgedeploy.api's __getattr__
    "edgedeploy.targets.stages",  # the build stages' dataclasses: edgedeploy.targets.base's __getattr__
    "edgedeploy.api_results",  # the other commands' results: edgedeploy.api's __getattr__
    "difflib",
    "traceback",
    "html",
)


def test_the_audit_of_every_chip_imports_none_of_what_only_other_commands_use():
    names = imported_by("audit", "--target", "all", "--format", "json")
    assert {"edgedeploy.audit.engine", "edgedeploy.targets.base", "edgedeploy.toolchains.environments"} <= names
    assert {n for n in names if any(n == m or n.startswith(m + ".") for m in NOT_FOR_THE_AUDIT)} == set()
