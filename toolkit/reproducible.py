"""What of an artifact differs from one build to the next, declared in its manifest.

Two builds of the same model with the same toolchain and options should give the same files.
Some cannot: a file that records times (a log, a duration), and a file a toolchain writes with
bytes that differ on every build. The manifest says which (edgedeploy.manifest/1):

- `varies` at the top: {manifest field (dotted path): why}, e.g. {"created_at": "time"}.
- in a file's entry, `varies`: `"time"` (the file records times), `"toolchain"` (the toolchain
  writes different bytes on every build: not reproducible) or the name of such a file whose
  sha256 this file embeds. Beside it `sha256_normalised`, the sha256 of the file with what varies
  taken out, and `normalised`, a sentence saying what was taken out; a file without them (a log)
  is not compared at all.

`sha256` always hashes the real bytes: `check_manifest` verifies those (a changed file is still
refused); the normalised hash is only for comparing builds (`comparable`, `differences`).

The work folder a build runs in (`.<chip>.building-*`) is gone once the artifact is placed, so
`forget_work_folder` rewrites the paths into it that text files keep as paths relative to the
artifact.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from edgedeploy.artifacts import atomic_write_bytes

TIME = "time"
TOOLCHAIN = "toolchain"

# The core's own files and fields that carry time; a target adds its own (`Variation`).
CORE_TIME_FILES = ("build.log",)
CORE_TIME_FIELDS = {"report.json": ("convert.seconds", "convert.details.worker_timings_s", "build_seconds")}


@dataclass(frozen=True)
class Variation:
    """What of a target's artifact differs between builds (Target.variation).

    time_files: files that record times as a whole (a toolchain's log);
    time_fields: {JSON file: dotted paths of its fields that carry time};
    not_reproducible: {file: the sentence saying why its bytes differ on every build}.
    """

    time_files: tuple[str, ...] = ()
    time_fields: dict[str, tuple[str, ...]] = field(default_factory=dict)
    not_reproducible: dict[str, str] = field(default_factory=dict)

    def merged(self, other: "Variation") -> "Variation":
        fields = {name: tuple(self.time_fields.get(name, ())) + tuple(other.time_fields.get(name, ())) for name in {*self.time_fields, *other.time_fields}}
        return Variation(self.time_files + other.time_files, fields, {**self.not_reproducible, **other.not_reproducible})


CORE = Variation(CORE_TIME_FILES, CORE_TIME_FIELDS)


def forget_work_folder(root: Path) -> list[str]:
    """Rewrite the absolute paths into `root` (the work folder, soon renamed) that its text files
    hold as paths relative to the artifact; the files it changed. Binary files are left as they are."""
    root = Path(root).absolute()
    plain = str(root)
    escaped = json.dumps(plain)[1:-1]  # as a JSON string holds it (non-ASCII escaped)
    changed = []
    for path in sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink()):
        with path.open("rb") as fh:
            if b"\0" in fh.read(8192):
                continue  # binary (a model, an archive): not read whole, never rewritten
        data = path.read_bytes()
        if plain.encode() not in data and escaped.encode() not in data:
            continue
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            continue
        for form in {plain, escaped}:
            text = text.replace(form + "/", "").replace(form, ".")
        _rewrite(path, text.encode("utf-8"))
        changed.append(path.relative_to(root).as_posix())
    return changed


def _rewrite(path: Path, data: bytes) -> None:
    mode = path.stat().st_mode & 0o7777
    atomic_write_bytes(path, data)
    os.chmod(path, mode)  # as the build made it (a script stays executable)


def declare(root: Path, manifest: dict, variation: Variation) -> None:
    """Mark in `manifest` (its file table filled) what varies between builds, with normalised hashes."""
    files = manifest["files"]
    varies = {"created_at": TIME}
    for name in variation.time_files:
        if name in files:
            files[name].update(varies=TIME, note="records times (clock times, durations, progress); not compared between builds")
    for name, paths in variation.time_fields.items():
        if name in files:
            files[name].update(varies=TIME, time_fields=list(paths))
            normalise_json_entry(Path(root) / name, files[name])
    for name, why in variation.not_reproducible.items():
        if name in files:
            files[name].update(varies=TOOLCHAIN, note=why)
            _declare_embedders(root, manifest, name, varies)
    manifest["varies"] = varies


def normalise_json_entry(path: Path, entry: dict) -> None:
    """Set the normalised hash of a JSON file whose entry lists its time_fields (at the build, and
    again when `measure` rewrites report.json, so its entry keeps its declarations)."""
    try:
        data = _without_fields(json.loads(Path(path).read_text(encoding="utf-8")), entry.get("time_fields", []))
    except (ValueError, UnicodeDecodeError):
        entry.pop("sha256_normalised", None)
        entry["note"] = "not JSON, so its time fields cannot be taken out; not compared between builds"
        return
    entry.update(sha256_normalised=_sha256(_canonical(data)),
                 normalised="the fields listed in time_fields removed, the rest hashed as compact JSON with sorted keys")


def _declare_embedders(root: Path, manifest: dict, source: str, varies: dict) -> None:
    """The files and manifest fields that hold the sha256 of `source` (not reproducible) vary with it;
    a file's normalised hash is taken with that sha256 replaced by zeros."""
    digest = manifest["files"][source]["sha256"]
    for name, entry in manifest["files"].items():
        if name == source or entry.get("varies") in (TIME, TOOLCHAIN):
            continue
        data = (Path(root) / name).read_bytes()
        if digest.encode() in data:
            entry.update(varies=source, sha256_normalised=_sha256(data.replace(digest.encode(), b"0" * 64)),
                         normalised=f"the sha256 of {source} (not reproducible) replaced by 64 zeros")
    for dotted in _paths_holding(manifest, digest):
        if not dotted.startswith("files."):
            varies[dotted] = source


def _paths_holding(node, value: str, prefix: str = "") -> list[str]:
    if isinstance(node, dict):
        return [p for key, child in node.items() for p in _paths_holding(child, value, f"{prefix}{key}.")]
    return [prefix[:-1]] if node == value else []


def _without_fields(data, dotted_paths) -> object:
    for dotted in dotted_paths:
        node, *keys = [data, *dotted.split(".")]
        for key in keys[:-1]:
            node = node.get(key) if isinstance(node, dict) else None
        if isinstance(node, dict):
            node.pop(keys[-1], None)
    return data


def _canonical(data) -> bytes:
    return json.dumps(data, sort_keys=True, separators=(",", ":")).encode("utf-8")


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def comparable(manifest: dict) -> dict:
    """The manifest less what it declares varies: what two builds of the same model must share."""
    kept = json.loads(json.dumps(manifest))  # a copy: the fields are removed in place
    for dotted in kept.get("varies", {}):
        _without_fields(kept, [dotted])
    for name, entry in kept.get("files", {}).items():
        if "varies" in entry:
            kept["files"][name] = {key: entry[key] for key in ("varies", "sha256_normalised", "normalised", "time_fields") if key in entry}
    return kept


def differences(first: dict, second: dict) -> list[str]:
    """One line per field two manifests differ in, beyond what they declare varies ([] when equal)."""
    a, b = comparable(first), comparable(second)
    a_files, b_files = a.get("files", {}), b.get("files", {})
    lines = []
    for name in sorted({*a_files, *b_files}):
        if a_files.get(name) != b_files.get(name):
            lines.append(f"files.{name}: {a_files.get(name)} != {b_files.get(name)}")
    for key in sorted({*a, *b} - {"files"}):
        if a.get(key) != b.get(key):
            lines.append(f"{key}: {json.dumps(a.get(key))[:200]} != {json.dumps(b.get(key))[:200]}")
    return lines
