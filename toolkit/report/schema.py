"""The artifact report's schema: its name, version, required fields, and the version check.

The report (ARTIFACT/report.json) is written by edgedeploy.pipeline.build and extended by
`edgedeploy measure`; docs/report-schema.md documents every field. Its `schema` is
`edgedeploy.report/<major>`: a reader accepts its own major version and refuses a newer one with
one sentence (a field added within a major version is ignored by older readers, never renamed).
"""

from __future__ import annotations

import json
from pathlib import Path

from edgedeploy.errors import ArtifactError

REPORT_SCHEMA_NAME = "edgedeploy.report"
REPORT_SCHEMA_VERSION = 1
REPORT_SCHEMA = f"{REPORT_SCHEMA_NAME}/{REPORT_SCHEMA_VERSION}"
COMPARISON_SCHEMA = "edgedeploy.comparison/1"

# Required fields, as (path, type); everything else is optional (sections a target or a later
# stage adds: audit, convert, accuracy, measurements, ...).
REQUIRED_FIELDS = (
    (("schema",), str),
    (("edgedeploy_version",), str),
    (("model",), dict),
    (("model", "name"), str),
    (("model", "sha256"), str),
    (("model", "input_shapes"), dict),
    (("target",), dict),
    (("target", "target"), str),
)
OPTIONAL_SECTIONS = {"audit": dict, "accuracy": dict, "measurements": dict, "convert": dict, "options": dict}


def schema_version(schema: object) -> int | None:
    """1 for "edgedeploy.report/1"; None when it is not a report schema at all."""
    if not isinstance(schema, str) or "/" not in schema:
        return None
    name, _, version = schema.rpartition("/")
    if name != REPORT_SCHEMA_NAME or not version.isdigit():
        return None
    return int(version)


def validate_report(report: object, where: str = "report.json") -> dict:
    """The report, after checking its schema version and required fields; ArtifactError otherwise."""
    if not isinstance(report, dict):
        raise ArtifactError(f"{where} is not a JSON object.")
    version = schema_version(report.get("schema"))
    if version is None:
        raise ArtifactError(f"{where} has schema {report.get('schema')!r}, not {REPORT_SCHEMA_NAME}/<version>; it is not an edgedeploy report.")
    if version > REPORT_SCHEMA_VERSION:
        raise ArtifactError(
            f"{where} uses report schema version {version}, newer than this edgedeploy understands ({REPORT_SCHEMA_VERSION}); upgrade edgedeploy."
        )
    if version < REPORT_SCHEMA_VERSION:
        raise ArtifactError(f"{where} uses report schema version {version}, which this edgedeploy no longer reads; rebuild the artifact.")
    for path, kind in REQUIRED_FIELDS:
        value = report
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        if not isinstance(value, kind):
            raise ArtifactError(f"{where}: the field {'.'.join(path)} is missing or not a {kind.__name__}.")
    for key, kind in OPTIONAL_SECTIONS.items():
        if key in report and report[key] is not None and not isinstance(report[key], kind):
            raise ArtifactError(f"{where}: the section {key} must be a {kind.__name__}.")
    return report


def load_report_file(path: Path) -> dict:
    path = Path(path)
    if not path.is_file():
        raise ArtifactError(f"{path} does not exist; is {path.parent} an edgedeploy artifact?")
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise ArtifactError(f"{path} is not valid JSON ({exc}).") from exc
    return validate_report(report, str(path))
