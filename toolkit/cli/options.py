"""Options and arguments shared by several commands."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from edgedeploy.cli.paths import AbsolutePath  # noqa: F401 - the commands import it from here

if TYPE_CHECKING:
    from edgedeploy.model import InputShapes


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


def parse_shapes(values: tuple[str, ...]) -> "InputShapes":
    # Imported here: edgedeploy.model imports ONNX, which a command imports only once it runs.
    from edgedeploy.model import parse_input_shape_options

    return parse_input_shape_options(values)


def api_keywords(function, values: dict) -> dict:
    """The command's parsed values that are `function`'s keyword-only parameters, taken out of `values`.

    A command whose options are named as its edgedeploy.api function's keywords forwards them by
    name, so a new option is added to the API and its click option, never to a third list here
    (build's are both made from one declaration, pipeline/build_options.py's BuildOptions).
    """
    import inspect

    names = [name for name, p in inspect.signature(function).parameters.items() if p.kind is p.KEYWORD_ONLY]
    return {name: values.pop(name) for name in names if name in values}
