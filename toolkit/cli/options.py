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

    def convert(self, value, param, ctx):
        converted = super().convert(value, param, ctx)
        if converted is None or str(converted) == "-":
            return converted
        absolute = os.path.abspath(os.fspath(converted))
        return self.coerce_path_result(absolute)


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
