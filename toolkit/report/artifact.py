"""Reading artifacts for reports, and folding later results (measurements) into report.json.

report.json is listed in the artifact's manifest with its sha256. When `edgedeploy measure`
adds a section, the report is rewritten atomically and its manifest entry refreshed, under a
lock, so the manifest keeps guarding every build output and two measurements of the same
artifact never lose each other's sections.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edgedeploy.artifacts import MANIFEST_NAME, atomic_write_json, check_manifest, now_iso, read_manifest, sha256_file
from edgedeploy.reproducible import normalise_json_entry
from edgedeploy.errors import ArtifactError
from edgedeploy.locks import LOCK_NAME, held
from edgedeploy.report.schema import load_report_file

REPORT_NAME = "report.json"


@dataclass
class LoadedArtifact:
    path: Path
    report: dict
    manifest: dict | None
    # False when read with --no-verify: its files were not checked against the manifest.
    verified: bool = True


def load_artifact(path: Path, verify: bool = True) -> LoadedArtifact:
    """An artifact folder (or its report.json) with its validated report and its manifest.

    With `verify` the manifest's hashes are checked first (check_manifest, as measure does): a
    changed, missing or added file, or no manifest at all, is an ArtifactError naming it.
    """
    path = Path(path)
    is_file = path.is_file() and path.name.endswith(".json")
    if not is_file and not path.is_dir():
        raise ArtifactError(f"{path} is neither an artifact folder nor a report.json.")
    folder = path.parent if is_file else path
    manifest = check_manifest(folder) if verify else _manifest_or_none(folder)
    report = load_report_file(path if is_file else path / REPORT_NAME)
    return LoadedArtifact(folder, report, manifest, verify)


def _manifest_or_none(folder: Path) -> dict | None:
    if not (folder / MANIFEST_NAME).exists():
        return None
    return read_manifest(folder)


def artifact_lock(artifact: Path):
    """An exclusive lock on the artifact for a read-modify-write of its report (edgedeploy.locks)."""
    return held(Path(artifact) / LOCK_NAME)


def update_report_section(artifact: Path, keys: tuple[str, ...], value: Any) -> dict:
    """Set report[keys[0]][keys[1]]... = value, atomically; refresh the manifest's entry for the report."""
    artifact = Path(artifact)
    with artifact_lock(artifact):
        report = load_report_file(artifact / REPORT_NAME)
        node = report
        for key in keys[:-1]:
            child = node.get(key)
            if not isinstance(child, dict):
                child = {}
                node[key] = child
            node = child
        node[keys[-1]] = value
        report["updated_at"] = now_iso()
        atomic_write_json(artifact / REPORT_NAME, report)
        if (artifact / MANIFEST_NAME).exists():
            manifest = read_manifest(artifact)
            files = manifest.setdefault("files", {})
            # The entry keeps what the build declared of it (varies, time_fields), its hashes renewed.
            entry = files.setdefault(REPORT_NAME, {})
            entry.update(sha256=sha256_file(artifact / REPORT_NAME), size_bytes=(artifact / REPORT_NAME).stat().st_size)
            if "time_fields" in entry:
                normalise_json_entry(artifact / REPORT_NAME, entry)
            manifest["report_updated_at"] = report["updated_at"]
            if isinstance(manifest.get("varies"), dict):
                manifest["varies"]["report_updated_at"] = "time"
            atomic_write_json(artifact / MANIFEST_NAME, manifest)
    return report
