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

    # Linux limits: one name at most 255 bytes, a whole path 4096. Longer ones make every system
    # call fail with ENAMETOOLONG, so they are refused here, once, with the option's name.
    NAME_MAX_BYTES = 255
    PATH_MAX_BYTES = 4096

    def convert(self, value, param, ctx):
        self._check_length(os.fspath(value) if not isinstance(value, str) else value, param, ctx)
        converted = super().convert(value, param, ctx)
        if converted is None or str(converted) == "-":
            return converted
        absolute = os.path.abspath(os.fspath(converted))
        self._check_length(absolute, param, ctx)
        return self.coerce_path_result(absolute)

    def _check_length(self, path: str, param, ctx) -> None:
        if len(os.fsencode(path)) > self.PATH_MAX_BYTES:
            self.fail(f"the path is longer than the {self.PATH_MAX_BYTES} bytes a path may have", param, ctx)
        for part in path.split(os.sep):
            if len(os.fsencode(part)) > self.NAME_MAX_BYTES:
                self.fail(f"the name {part[:24]}... is longer than the {self.NAME_MAX_BYTES} bytes a file name may have", param, ctx)
