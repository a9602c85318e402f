"""The path type of every command-line path: made absolute once, at the CLI boundary."""

from __future__ import annotations

import os

import click


class AbsolutePath(click.Path):
    """click.Path that hands the command an absolute path (symlinks kept, `..` folded).

    Paths are made absolute here, once, at the CLI boundary: workers run in folders of their
    own and generated code is used from elsewhere, so a relative path would point somewhere
    else by the time it is read. Symlinks are kept (a venv's python is one).
    """

    def convert(self, value, param, ctx):
        converted = super().convert(value, param, ctx)
        if converted is None or str(converted) == "-":
            return converted
        absolute = os.path.abspath(os.fspath(converted))
        return self.coerce_path_result(absolute)
