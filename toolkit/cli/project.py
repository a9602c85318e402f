"""`--project FILE` / `--no-project`: the project file (edgedeploy.toml) as defaults of a command.

A value from the file is used only where the command line left the option at its default; it
is checked with the option's own click type (the same choices, ranges and existence checks as
on the command line), and a bad one is one sentence naming the file and the field.
"""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path

import click
from click.core import ParameterSource

from edgedeploy.cli.options import AbsolutePath
from edgedeploy.errors import ConfigError


def project_options(func):
    func = click.option("--no-project", is_flag=True, help="Ignore ./edgedeploy.toml.")(func)
    func = click.option(
        "--project",
        "project_path",
        type=AbsolutePath(dir_okay=False, path_type=Path),
        metavar="FILE",
        help="The project file (default: ./edgedeploy.toml when there is one): model, targets, data, gates, target options; flags on the command line win over it.",
    )(func)
    return func


def load_for_command(project_path: Path | None, no_project: bool):
    """The Project to apply, or None."""
    from edgedeploy.cli.output import info
    from edgedeploy.project import find_project, load_project

    if no_project:
        return None
    path = find_project(project_path)
    if path is None:
        return None
    project = load_project(path)
    info(f"project: {path}")
    return project


def given_on_command_line(ctx: click.Context, name: str) -> bool:
    return ctx.get_parameter_source(name) in (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT, ParameterSource.PROMPT)


def convert(ctx: click.Context, param: click.Parameter, value, where: str):
    """A project value through the option's click type; ConfigError naming the field when it does not fit."""
    try:
        if getattr(param, "multiple", False) or getattr(param, "nargs", 1) == -1:
            values = value if isinstance(value, (list, tuple)) else (value,)
            return tuple(param.type.convert(v, param, ctx) for v in values)
        if getattr(param, "is_flag", False):
            if not isinstance(value, bool):
                raise ConfigError(f"{where}: must be true or false, not {value!r}.")
            return value
        return param.type.convert(value, param, ctx)
    except click.BadParameter as exc:
        raise ConfigError(f"{where}: {exc.message.rstrip('.')}.") from None


def apply(ctx: click.Context, values: dict, settings: dict, project) -> dict:
    """`values` (the command's parameters) with the project's `settings` filled in where the command line gave nothing."""
    params = {p.name: p for p in ctx.command.params}
    for name, value in settings.items():
        if name not in params:
            raise AssertionError(f"project key for unknown parameter {name}")
        if given_on_command_line(ctx, name):
            continue
        values[name] = convert(ctx, params[name], str(value) if isinstance(value, Path) else value, project.where(name))
    return values


def vendor_values(ctx: click.Context, values: dict, project) -> dict:
    """The project's [options.<target>] tables as the build command's vendor parameters (`<target>__<field>`)."""
    from edgedeploy.targets import all_targets

    targets = {t.id: t for t in all_targets()}
    params = {p.name: p for p in ctx.command.params}
    name = project.path.name
    for target_id, options in project.target_options.items():
        target = targets.get(target_id)
        if target is None:
            raise ConfigError(f"{name}: [options.{target_id}]: unknown target '{target_id}'; targets with options: {', '.join(t.id for t in targets.values())}.")
        # A key is the option's name (int16-layers) or its flag without dashes (espdl-int16-layers).
        declared = {meta["flag"].lstrip("-"): field for field, meta in target.options_type.declared()}
        declared.update({field.name.replace("_", "-"): field for field, _ in target.options_type.declared()})
        for key, value in options.items():
            field = declared.get(key)
            where = f"{name}: [options.{target_id}] {key}"
            if field is None:
                known = sorted(field.name.replace("_", "-") for field, _ in target.options_type.declared())
                raise ConfigError(f"{where}: unknown option of the {target.name} target; its options: {', '.join(known) or 'none'}.")
            parameter = f"{target.id}__{field.name}"
            if parameter not in params or given_on_command_line(ctx, parameter):
                continue  # (not a parameter: the target is disabled, and building its chips says so)
            values[parameter] = convert(ctx, params[parameter], value, where)
    return values


@contextmanager
def naming_the_field(project, parameter: str):
    """An OptionError about a value that came from the project file names the file and the field."""
    from edgedeploy.errors import OptionError

    try:
        yield
    except OptionError as exc:
        if project is None or parameter not in project.fields or isinstance(exc, ConfigError):
            raise
        raise ConfigError(f"{project.where(parameter)}: {exc}") from None


def command_gates(fail_on, command: str, project, **options) -> list:
    """The --fail-on gates of `command` (build or measure), with the project file's [gates] merged in.

    `options` go to parse_gates for the command line's gates (build's allow_estimate).
    """
    from edgedeploy.gates import gates_of_command, merge_gates, parse_gates
    from edgedeploy.targets import find_chip

    chip_id = lambda name: find_chip(name)[1].id  # noqa: E731 - a gate's CHIP: prefix, aliases allowed
    gates = parse_gates(fail_on, command, chip_id, **options)
    if project is not None:
        gates = merge_gates(parse_gates(gates_of_command(project.gates, command), command, chip_id, where=f"{project.path.name}: [gates]"), gates)
    return gates
