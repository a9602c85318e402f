"""JSON Schema (draft 2020-12) files of every JSON document edgedeploy writes, shipped as package data.

    edgedeploy.report/1                  report-1.json        an artifact's report.json
    edgedeploy.manifest/1                manifest-1.json      an artifact's manifest.json
    edgedeploy.audit/1                   audit-1.json         audit.json (every node of one chip)
    edgedeploy.audit/2                   audit-2.json         each chip of `audit --format json`
    edgedeploy.audit-report/2            audit-report-2.json  `audit --format json`
    edgedeploy.audit-report/1            audit-report-1.json  `audit --format json` before 2 (every node of every chip)
    edgedeploy.pipeline.build-result/1   build-result-1.json  `build --format json`
    edgedeploy.gates/1                   gates-1.json         the --fail-on results of build and measure
    edgedeploy.measurement/1             measurement-1.json   `measure` records
    edgedeploy.farm-measurement/1        farm-measurement-1.json  `measure A B ... --farm` (edgedeploy.measure_farm)
    edgedeploy.latency/1                 latency-1.json       one backend/runner on one device
    edgedeploy.run/1                     run-1.json           one session's result line of a runner
    edgedeploy.bench/1                   bench-1.json         `bench --format json`
    edgedeploy.comparison/1              comparison-1.json    `report --format json`
    edgedeploy.fix/1                     fix-1.json           `fix` reports
    edgedeploy.estimate-report/1         estimate-report-1.json  `estimate --format json`
    edgedeploy.estimate/1                estimate-1.json      one chip's latency estimate (also in audit and build reports)
    edgedeploy.inspect/1, .targets/1, .devices/1, .toolchains/1, .doctor/1   the listing commands

Each file's `$id` is https://edgedeploy.invalid/schemas/<file> (an identifier, not a location:
the .invalid domain never resolves); the files refer to each other by those ids. `validate`
needs the `jsonschema` package (the test extra has it); the core does not depend on it.
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from pathlib import Path

BASE_URI = "https://edgedeploy.invalid/schemas/"


def schema_file_name(schema_id: str) -> str:
    """'edgedeploy.report/1' -> 'report-1.json'; 'edgedeploy.pipeline.build-result/1' -> 'build-result-1.json'."""
    name, _, version = schema_id.rpartition("/")
    if not name.startswith("edgedeploy.") or not version.isdigit():
        raise KeyError(f"{schema_id!r} is not an edgedeploy schema id")
    short = name.removeprefix("edgedeploy.").removeprefix("pipeline.")
    return f"{short}-{version}.json"


def schema_dir() -> Path:
    return Path(str(resources.files(__name__)))


@lru_cache(maxsize=None)
def all_schemas() -> dict[str, dict]:
    """Every shipped schema by file name."""
    return {p.name: json.loads(p.read_text(encoding="utf-8")) for p in sorted(schema_dir().glob("*.json"))}


def schema_for(schema_id: str) -> dict:
    """The JSON Schema of a document whose `schema` field is `schema_id`; KeyError when none is shipped."""
    name = schema_file_name(schema_id)
    schemas = all_schemas()
    if name not in schemas:
        raise KeyError(f"no JSON Schema is shipped for {schema_id} ({name})")
    return schemas[name]


def validate(document: dict, schema_id: str | None = None) -> None:
    """Validate a document against the schema its `schema` field names (or `schema_id`).

    Raises jsonschema.ValidationError with the path of the first field that does not fit.
    """
    import jsonschema
    from referencing import Registry, Resource

    registry = Registry().with_resources((BASE_URI + name, Resource.from_contents(schema)) for name, schema in all_schemas().items())
    schema = schema_for(schema_id or document["schema"])
    validator_class = jsonschema.validators.validator_for(schema)
    validator = validator_class(schema, registry=registry, format_checker=validator_class.FORMAT_CHECKER)
    error = jsonschema.exceptions.best_match(validator.iter_errors(document))
    if error is not None:
        raise error
