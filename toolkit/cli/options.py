"""Options and arguments shared by several commands."""

from __future__ import annotations

from pathlib import Path

import os

import click

from edgedeploy.model import InputShapes, parse_input_shape_options


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


def input_shape_option(func):
    """`--input-shape NAME=1x3x224x224`, repeatable; pins dynamic dimensions."""
    return click.option(
        "--input-shape",
        "input_shapes",
        multiple=True,
        metavar="NAME=DxDx...",
        help="Pin an input's dynamic dimensions, e.g. input=1x3x224x224 (repeat per input; NAME= may be left out for a single-input model).",
    )(func)


def model_argument(func):
    """MODEL, optional: the bundled sample when left out."""
    return click.argument("model", required=False, type=AbsolutePath(dir_okay=True, path_type=Path))(func)


def resolve_model(model: Path | None) -> Path:
    from edgedeploy.cli.output import info
    from edgedeploy.sample import sample_model_path

    if model is None:
        path = sample_model_path()
        info(f"No model given: using the bundled sample {path.name} (MNIST CNN).")
        return path
    return model


def parse_shapes(values: tuple[str, ...]) -> InputShapes:
    return parse_input_shape_options(values)
