"""The project file, `edgedeploy.toml`: what a CI job builds, with which data, gated how.

    model = "model.onnx"
    targets = ["rk3588", "imx93"]

    [data]
    calib = "data/calib.npz"
    eval = "data/eval.npz"
    preprocess = "size=224x224,mean=0.485;0.456;0.406,std=0.229;0.224;0.225"

    [gates]
    accuracy-drop = 0.5
    snr = 25

    [gates.imx93]            # gates of one chip
    ram = "256KiB"

    [options.espdl]          # a target's own options, by target id, named as in `build --help`
    int16-layers = "auto"

    [measure]
    device = "rock5b"

`edgedeploy build` and `edgedeploy measure` read `edgedeploy.toml` from the current folder (or
`--project FILE`); a flag given on the command line wins over the file. Paths in the file are
relative to the file's folder, not to where the command runs. Every mistake is one sentence that
names the file and the field.

This module reads and checks the file's shape and paths; the CLI checks each value with the
option's own type (the same choices and ranges as on the command line).
"""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edgedeploy.errors import ConfigError
from edgedeploy.toml_support import toml_module

PROJECT_FILE = "edgedeploy.toml"

def _keys(kinds: dict[str, str], **renamed: str) -> dict[str, tuple[str, str]]:
    """key -> (the command parameter it sets, kind). A key is written as its flag is (kebab-case);
    its parameter is the same name in snake_case unless `renamed` gives another (by the key in
    snake_case)."""
    out = {}
    for key, kind in kinds.items():
        snake = key.replace("-", "_")
        out[key] = (renamed.get(snake, snake), kind)
    return out


# The `build` parameters the top level of the file sets; snake_case keys are accepted too.
BUILD_KEYS = _keys(
    {
        "model": "path", "targets": "strings", "out": "path", "force": "bool", "precision": "string", "input-shape": "strings",
        "metric": "string", "metric-output": "string", "detection": "strings", "fix": "bool", "allow-approx": "bool", "device": "string",
        "timeout": "number", "fail-fast": "bool", "allow-generated": "bool",
    },
    input_shape="input_shapes",
    timeout="timeout_s",
)
DATA_KEYS = _keys({"calib": "path", "eval": "path", "calib-count": "integer", "eval-count": "integer", "preprocess": "preprocess"})
MEASURE_KEYS = _keys(
    {
        "device": "string", "inventory": "path", "sessions": "integer", "warmup": "integer", "min-iterations": "integer",
        "min-duration": "number", "eval": "path", "eval-count": "integer", "threads": "integer", "timeout": "number",
    },
    device="device_name",
    min_duration="min_duration_s",
    eval="eval_path",
    timeout="timeout_s",
)
PREPROCESS_KEYS = ("size", "scale", "mean", "std", "layout", "channels")
TABLES = ("data", "gates", "options", "measure", "toolchains")
# [toolchains.<name>]: where a toolchain's worker runs instead of edgedeploy's managed venv
# (edgedeploy.toolchains.kinds): one of python, command, ssh (with remote-python).
TOOLCHAIN_KEYS = ("python", "command", "ssh", "remote-python")


@dataclass
class Project:
    """A checked project file. `build` and `measure` map command parameters to values (paths
    absolute); `gates` are `[CHIP:]KEY=VALUE` texts; `target_options` maps a target id to
    {flag name without dashes: value}."""

    path: Path
    build: dict[str, Any] = field(default_factory=dict)
    measure: dict[str, Any] = field(default_factory=dict)
    gates: list[str] = field(default_factory=list)
    target_options: dict[str, dict[str, Any]] = field(default_factory=dict)
    toolchains: dict[str, dict[str, Any]] = field(default_factory=dict)
    # where each value came from, for messages: parameter -> "edgedeploy.toml: [data] calib"
    fields: dict[str, str] = field(default_factory=dict)

    def where(self, parameter: str) -> str:
        return self.fields.get(parameter, str(self.path))


def find_project(explicit: Path | None = None, cwd: Path | None = None) -> Path | None:
    """`--project FILE` (which must exist), else ./edgedeploy.toml when there is one, else None."""
    if explicit is not None:
        path = Path(explicit)
        if not path.is_file():
            raise ConfigError(f"The project file {path} does not exist.")
        return path.absolute()
    candidate = Path(cwd or os.getcwd()) / PROJECT_FILE
    return candidate if candidate.is_file() else None


def load_project(path: Path) -> Project:
    """Read and check a project file; ConfigError with one sentence naming the file and the field."""
    path = Path(path).absolute()
    name = path.name
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"The project file {path} cannot be read ({exc}).") from exc
    toml = toml_module()
    if toml is None:
        raise ConfigError(f"Reading {path.name} needs Python 3.11 or the tomli package (pip install tomli).")
    try:
        data = toml.loads(text)
    except toml.TOMLDecodeError as exc:
        raise ConfigError(f"{name} is not valid TOML ({exc}).") from exc
    project = Project(path)
    base = path.parent
    top = {k: v for k, v in data.items() if k not in TABLES}
    _fill(project, project.build, top, BUILD_KEYS, base, f"{name}:", extra_known=TABLES)
    data_table = _table(data, "data", name)
    _fill(project, project.build, data_table, DATA_KEYS, base, f"{name}: [data]")
    measure_table = _table(data, "measure", name)
    _fill(project, project.measure, measure_table, MEASURE_KEYS, base, f"{name}: [measure]")
    project.gates = _gates(_table(data, "gates", name), name)
    for target_id, options in _table(data, "options", name).items():
        if not isinstance(options, dict):
            raise ConfigError(f"{name}: [options] {target_id} must be a table of that target's options ([options.{target_id}]).")
        project.target_options[str(target_id)] = {_key(k): v for k, v in options.items()}
    project.toolchains = _toolchains(_table(data, "toolchains", name), name)
    return project


def toolchain_tables(path: Path) -> dict[str, dict[str, Any]]:
    """The checked [toolchains.<name>] tables of a project file, by toolchain name."""
    return load_project(path).toolchains


def _toolchains(table: dict, filename: str) -> dict[str, dict[str, Any]]:
    out = {}
    for name, entry in table.items():
        where = f"{filename}: [toolchains.{name}]"
        if not isinstance(entry, dict):
            raise ConfigError(f"{where} must be a table (python = ..., command = [...] or ssh = ...).")
        entry = {_key(k): v for k, v in entry.items()}
        for key in entry:
            if key not in TOOLCHAIN_KEYS:
                raise _unknown(where, key, TOOLCHAIN_KEYS)
        if sum(key in entry for key in ("python", "command", "ssh")) != 1:
            raise ConfigError(f"{where} needs exactly one of python, command or ssh.")
        out[str(name)] = entry
    return out


def _key(key: str) -> str:
    return str(key).strip().lower().replace("_", "-")


def _table(data: dict, name: str, filename: str) -> dict:
    value = data.get(name, {})
    if not isinstance(value, dict):
        raise ConfigError(f"{filename}: {name} must be a table ([{name}]), not a {type(value).__name__}.")
    return value


def _unknown(filename_where: str, key: str, known) -> ConfigError:
    close = difflib.get_close_matches(key, list(known), n=1)
    hint = f" Did you mean {close[0]}?" if close else ""
    return ConfigError(f"{filename_where} unknown field '{key}'.{hint} Known: {', '.join(known)}.")


def _fill(project: Project, into: dict, table: dict, keys: dict, base: Path, where: str, extra_known=()) -> None:
    for raw_key, value in table.items():
        key = _key(raw_key)
        if key == "target" and "targets" in keys:
            key = "targets"  # one chip, written as target = "rk3588"
        if key not in keys:
            raise _unknown(where, key, [*keys, *extra_known])
        parameter, kind = keys[key]
        field_where = f"{where} {key}"
        into[parameter] = _check(value, kind, base, field_where)
        project.fields[parameter] = field_where


def _check(value: Any, kind: str, base: Path, where: str) -> Any:
    if kind == "path":
        if not isinstance(value, str) or not value.strip():
            raise ConfigError(f"{where}: must be a path (a string), not {value!r}.")
        path = Path(os.path.expanduser(value))
        return path if path.is_absolute() else Path(os.path.abspath(base / path))
    if kind == "string":
        if not isinstance(value, str) or not value.strip():
            raise ConfigError(f"{where}: must be a non-empty string, not {value!r}.")
        return value
    if kind == "strings":
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not value or not all(isinstance(v, str) and v.strip() for v in value):
            raise ConfigError(f"{where}: must be a string or a list of strings, not {value!r}.")
        return tuple(value)
    if kind == "bool":
        if not isinstance(value, bool):
            raise ConfigError(f"{where}: must be true or false, not {value!r}.")
        return value
    if kind == "integer":
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{where}: must be a whole number, not {value!r}.")
        return value
    if kind == "number":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{where}: must be a number, not {value!r}.")
        return float(value)
    if kind == "preprocess":
        return _preprocess(value, base, where)
    raise AssertionError(kind)


def _preprocess(value: Any, base: Path, where: str) -> str:
    """The spec as `--preprocess` takes it: a string stays; a table becomes key=value pairs; a .json path is made absolute."""
    if isinstance(value, str):
        if value.strip().endswith(".json") and "=" not in value:
            return str(_check(value, "path", base, where))
        return value
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: must be a spec string (\"size=224x224,channels=RGB\") or a table of {', '.join(PREPROCESS_KEYS)}.")
    parts = []
    for raw_key, item in value.items():
        key = _key(raw_key)
        if key not in PREPROCESS_KEYS:
            raise _unknown(f"{where}:", key, PREPROCESS_KEYS)
        if key == "size" and isinstance(item, list):
            item = "x".join(str(v) for v in item)
        elif isinstance(item, list):
            item = ";".join(str(v) for v in item)
        parts.append(f"{key}={item}")
    return ",".join(parts)


def _gates(table: dict, filename: str) -> list[str]:
    """[gates] key = value, and [gates.CHIP] tables, as `[CHIP:]key=value` texts (checked by edgedeploy.gates)."""
    gates = []
    for raw_key, value in table.items():
        if isinstance(value, dict):
            for key, item in value.items():
                gates.append(f"{raw_key}:{_key(key)}={_scalar(item, f'{filename}: [gates.{raw_key}] {key}')}")
        else:
            gates.append(f"{_key(raw_key)}={_scalar(value, f'{filename}: [gates] {raw_key}')}")
    return gates


def _scalar(value: Any, where: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ConfigError(f"{where}: must be a number or a string such as \"256KiB\" or \"2.5ms\", not {value!r}.")
    return str(value)
