"""Artifact directories: built atomically, described by a manifest, never silently overwritten.

An artifact lives at OUT/<model>/<chip>/. `ArtifactBuilder` works in a temporary sibling folder
and renames it into place only when every stage succeeded, so a failed build leaves an earlier
artifact intact (the failed attempt is kept beside it as `<chip>.failed` for its logs). An
existing artifact is replaced only with `force=True`.

`manifest.json` records the model hash, options, toolchain and edgedeploy versions, the target
chip, and the sha256 of every file; `check_manifest` refuses an artifact whose files changed or
that was built for another chip.
"""

from __future__ import annotations

import datetime as _dt
import errno
import hashlib
import json
import os
import shutil
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path
from typing import Any, Callable

from edgedeploy import __version__, interrupts
from edgedeploy.errors import ArtifactError, ToolchainFailed
from edgedeploy.fs_errors import file_system_error, is_file_system_error
from edgedeploy.locks import LOCK_NAME, LockBusy, held, lock_beside

MANIFEST_NAME = "manifest.json"
MANIFEST_SCHEMA = "edgedeploy.manifest/1"
DEFAULT_OUT = Path("edgedeploy-out")


def safe_path_component(name: str) -> str:
    """A model or chip name as one safe folder name (no separators, no dot-dot, printable)."""
    cleaned = "".join(c if (c.isalnum() or c in "-_.") else "_" for c in name).strip(".")
    return cleaned[:80] or "model"


def artifact_dir(out_root: Path, model_name: str, chip_id: str) -> Path:
    return Path(out_root) / safe_path_component(model_name) / safe_path_component(chip_id)


def current_umask() -> int:
    """The process's umask (reading it means setting it; it is set straight back)."""
    umask = os.umask(0o022)
    os.umask(umask)
    return umask


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write a file so that readers see the old content or the new one, never a part.

    What the file system refuses (a folder in the way, a parent that is a file, no space, no
    permission) is an ArtifactError naming the path: every output goes through here.
    """
    path = Path(path)
    if path.is_dir():
        raise ArtifactError(f"Cannot write {path}: a folder is in the way.")
    fd, tmp = -1, ""
    try:
        with interrupts.deferred():  # the temporary file and its name together (no stray `.NAME.*` file)
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    except OSError as exc:
        raise ArtifactError(f"Cannot write {path}: {exc.strerror or exc} ({exc.filename or path.parent}).") from exc
    except interrupts.Interrupted:
        if tmp:
            os.close(fd)
            Path(tmp).unlink(missing_ok=True)
        raise
    try:
        # mkstemp creates the file 0600; give it the mode a plain open() would (0666 minus umask).
        os.fchmod(fd, 0o666 & ~current_umask())
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise ArtifactError(f"Cannot write {path}: {exc.strerror or exc}.") from exc
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: Path, data: Any) -> None:
    atomic_write_text(path, json.dumps(data, indent=2, default=_json_default) + "\n")


def _json_default(value: Any):
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    if isinstance(value, Path):
        return str(value)
    return str(value)


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def file_table(root: Path) -> dict[str, dict]:
    """sha256 and size of every file below root (the manifest itself excluded), by relative path."""
    table = {}
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        rel = path.relative_to(root).as_posix()
        if rel == MANIFEST_NAME:
            continue
        table[rel] = {"sha256": sha256_file(path), "size_bytes": path.stat().st_size}
    return table


def now_iso() -> str:
    return _dt.datetime.now(_dt.timezone.utc).astimezone().isoformat(timespec="seconds")


class ArtifactBuilder:
    """Context manager that builds `dest` in a temporary folder and renames it into place.

        with ArtifactBuilder(dest, force) as art:
            (art.path / "model.onnx").write_bytes(...)
            art.manifest_fields["model"] = {...}
        # dest now exists with manifest.json; on an exception nothing at dest changed.
    """

    def __init__(self, dest: Path, force: bool = False, echo: Callable[[str], None] | None = None):
        self.dest = Path(dest)
        self.force = force
        self.path: Path = Path()
        self.manifest_fields: dict[str, Any] = {}
        self.echo = echo or (lambda line: print(line, file=sys.stderr))
        self._lock = ExitStack()
        # Called with (the work folder, the manifest) before the manifest is written: the build
        # declares there what varies between builds (edgedeploy.reproducible.declare).
        self.describe: Callable[[Path, dict], None] | None = None

    def __enter__(self) -> "ArtifactBuilder":
        named = self.dest
        if named.is_symlink():
            # A linked artifact (out/m/chip -> /big/disk/chip) is replaced where the link points,
            # so the link stays valid and the swap happens inside one folder (one file system).
            if not named.exists():
                raise ArtifactError(f"{named} is a link to {os.readlink(named)}, which does not exist; remove the link or point it at a folder.")
            self.dest = named.resolve()
        self._made = _first_missing(self.dest.parent)
        try:
            self.dest.parent.mkdir(parents=True, exist_ok=True)
            # One build per destination at a time (a second job with the same --out waits here).
            self._lock.enter_context(held(lock_beside(self.dest), on_wait=self._say_waiting))
            self._check_destination(named)
            _remove_stale_builds(self.dest, self.echo)
            # The folder and the name it is known by come together: a signal in between would
            # leave a `.building-*` folder that nothing of this run removes.
            with interrupts.deferred():
                self.path = Path(tempfile.mkdtemp(prefix=f".{self.dest.name}.building-", dir=self.dest.parent))
                _BUILDING.add(os.path.abspath(self.path))
                self._lock.callback(_BUILDING.discard, os.path.abspath(self.path))
            # mkdtemp makes the folder 0700, and the rename keeps that: give the artifact the mode
            # of a plain mkdir (0777 minus umask), so a CI job's other users and a web server can read it.
            os.chmod(self.path, 0o777 & ~current_umask())
        except OSError as exc:
            self._lock.close()
            if is_file_system_error(exc):
                raise file_system_error(exc, exc.filename or named, lead="Cannot create the artifact folder", option="--out") from exc
            raise ArtifactError(f"Cannot create the artifact folder {named}: {exc.strerror or exc} ({exc.filename or self.dest.parent}).") from exc
        except BaseException:  # Ctrl-C or SIGTERM while the folder is made: no `.building-*` stays
            with interrupts.deferred():
                if self.path != Path():
                    shutil.rmtree(self.path, ignore_errors=True)
                self._lock.close()
                _remove_made(self.dest.parent, self._made)
            raise
        return self

    def _say_waiting(self, holders: str) -> None:
        self.echo(f"build: waiting for {holders}, which is writing the artifact {self.dest}")

    def _check_destination(self, named: Path) -> None:
        if self.dest.exists() and not self.force:
            raise ArtifactError(f"{named} exists already; use --force to replace it (or --out for another folder).")
        if self.dest.exists() and not (self.dest.is_dir() and (self.dest / MANIFEST_NAME).is_file()):
            raise ArtifactError(f"{named} exists and is not an edgedeploy artifact (no {MANIFEST_NAME}); refusing to replace it.")

    def __exit__(self, exc_type, exc, tb) -> bool:
        with self._lock:
            return self._finish(exc_type, exc)

    def _finish(self, exc_type, exc) -> bool:
        if exc_type is not None:
            # Also on Ctrl-C or SIGTERM: a second signal must not cut this short (a `.building-*`
            # folder would be left where the user sees only that the command stopped).
            with interrupts.deferred():
                self._set_aside(exc)
            return False
        try:
            manifest = {
                "schema": MANIFEST_SCHEMA,
                "edgedeploy_version": __version__,
                "created_at": now_iso(),
                **self.manifest_fields,
                "files": file_table(self.path),
            }
            if self.describe is not None:
                self.describe(self.path, manifest)
            atomic_write_json(self.path / MANIFEST_NAME, manifest)
        except BaseException as error:  # a signal while the files are hashed, a full disk: not placed
            with interrupts.deferred():
                self._set_aside(error)
            raise
        # Once the rename starts, the old artifact's and the `.failed` folder's removal runs to
        # its end before a signal is raised.
        with interrupts.deferred():
            self._place()
        return False

    def _set_aside(self, exc: BaseException) -> None:
        """A failed build: its folder removed (a file-system error) or kept as `<chip>.failed`."""
        if is_file_system_error(exc):
            # A full disk, `ulimit -f`, a path too long...: the partial folder holds nothing worth
            # keeping as `.failed` (and on a full disk it holds the space the user needs back).
            shutil.rmtree(self.path, ignore_errors=True)
            self._lock.close()  # its file beside the artifact goes too, so the folders made can go
            _remove_made(self.dest.parent, self._made)
            if exc.filename is not None and not os.path.abspath(os.fsdecode(exc.filename)).startswith(os.path.abspath(self.path)):
                return  # another file (a cache, an input): the CLI names that one
            raise file_system_error(exc, self.dest, lead="Cannot write the artifact", option="--out") from exc
        failed = self.dest.with_name(self.dest.name + ".failed")
        if failed.exists():
            shutil.rmtree(failed, ignore_errors=True)
        try:
            self.path.rename(failed)
        except OSError:
            shutil.rmtree(self.path, ignore_errors=True)
        else:
            _point_at(exc, self.path, failed)

    def _place(self) -> None:
        """Rename the finished folder to the destination (the old artifact moved aside, then removed)."""
        old = None
        if self.dest.exists():
            if not self.force:
                # Another build (a second job with the same --out) placed its artifact while this
                # one ran: never replace it without --force, and keep this one beside it.
                raise self._lost_race()
            old = self.dest.with_name(f".{self.dest.name}.replaced-{os.getpid()}")
            self.dest.rename(old)
        try:
            # rename() onto a non-empty folder fails, so an artifact placed in the last instant is kept too.
            self.path.rename(self.dest)
        except OSError as exc:
            if exc.errno not in (errno.EEXIST, errno.ENOTEMPTY):
                raise
            raise self._lost_race() from None
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
        failed = self.dest.with_name(self.dest.name + ".failed")
        if failed.exists():
            shutil.rmtree(failed, ignore_errors=True)

    def _lost_race(self) -> ArtifactError:
        """The error for a destination another build filled while this one ran; this build is kept."""
        kept = self.dest.with_name(f"{self.dest.name}.unplaced-{os.getpid()}")
        self.path.rename(kept)
        return ArtifactError(f"{self.dest} was written by another build while this one ran; this build is kept in {kept} (use --force to replace, or --out for another folder).")


# The `.building-*` folders of this process's own builds (a build inside another's block): live.
_BUILDING: set[str] = set()


def _remove_stale_builds(dest: Path, echo: Callable[[str], None]) -> None:
    """Remove what builds beside `dest` left when they were killed (or the machine went down), in
    one line: `.NAME.building-*` folders, and `.NAME.replaced-PID` ones (an old artifact moved
    aside) once NAME is in place again. The caller holds dest's lock, so a folder of dest's own
    name is no live build's; another name's is removed only when its lock is free."""
    removed = []
    for folder in sorted([*dest.parent.glob(".*.building-*"), *dest.parent.glob(".*.replaced-*")]):
        replaced = ".replaced-" in folder.name
        name = folder.name[1:].rpartition(".replaced-" if replaced else ".building-")[0]
        if folder.is_symlink() or not folder.is_dir() or not name or os.path.abspath(folder) in _BUILDING:
            continue
        if replaced and not (dest.parent / name / MANIFEST_NAME).is_file():
            continue  # maybe the only copy of that artifact: the user's to look at
        try:
            with held(lock_beside(dest.parent / name), wait=False):
                shutil.rmtree(folder, ignore_errors=True)
        except (LockBusy, OSError):
            continue  # its build is running (or the lock cannot be made): not ours to remove
        removed.append(folder.name)
    if removed:
        echo(f"build: removed {', '.join(removed)} in {dest.parent}: left by {'builds' if len(removed) > 1 else 'a build'} that stopped without cleaning up (killed, or the machine went down)")


def _first_missing(folder: Path) -> Path | None:
    """The outermost folder of `folder`'s path that does not exist yet (None if it exists)."""
    missing = None
    while not folder.exists() and folder != folder.parent:
        missing, folder = folder, folder.parent
    return missing


def _remove_made(folder: Path, made: Path | None) -> None:
    """Remove the empty folders this build made, from `folder` up to `made`, so that a failed
    build leaves nothing in place (OUT/<model>/ made for it included)."""
    if made is None:
        return
    while True:
        try:
            folder.rmdir()
        except OSError:
            return
        if folder == made or folder == folder.parent:
            return
        folder = folder.parent


def _point_at(exc: BaseException | None, old: Path, new: Path) -> None:
    """Make a failed run's log path name the folder that exists: the kept `.failed` one, not the work folder.

    Each error of the chain once: a chain can loop (an error re-raised from its own copy), and
    the walk must end (a broken toolchain environment made the build hang here).
    """
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, ToolchainFailed):
            exc.relocate(old, new)
        exc = exc.__cause__


def read_manifest(artifact: Path) -> dict:
    """The manifest, checked for shape: an object of the right schema whose file table stays inside the artifact."""
    path = Path(artifact) / MANIFEST_NAME
    if not path.is_file():
        raise ArtifactError(f"{artifact} is not an edgedeploy artifact: {MANIFEST_NAME} is missing.")
    try:
        manifest = json.loads(path.read_bytes().decode("utf-8"))
    except (ValueError, OSError) as exc:
        raise ArtifactError(f"{path} is not valid UTF-8 JSON; the artifact is damaged.") from exc
    if not isinstance(manifest, dict):
        raise ArtifactError(f"{path} is not a JSON object; the artifact is damaged.")
    if manifest.get("schema") != MANIFEST_SCHEMA:
        raise ArtifactError(f"{path} has schema {str(manifest.get('schema'))[:60]!r}, expected {MANIFEST_SCHEMA}.")
    files = manifest.get("files", {})
    if not isinstance(files, dict):
        raise ArtifactError(f"{path}: its file table is not an object; the artifact is damaged.")
    for rel, info in files.items():
        parts = Path(rel).parts
        if not rel or Path(rel).is_absolute() or ".." in parts or "\x00" in rel:
            raise ArtifactError(f"{path} lists {rel[:80]!r}, a path outside the artifact; the manifest is damaged or forged.")
        if not isinstance(info, dict) or not isinstance(info.get("sha256"), str):
            raise ArtifactError(f"{path}: the entry for {rel[:80]!r} has no sha256; the artifact is damaged.")
    target = manifest.get("target", {})
    if not isinstance(target, dict):
        raise ArtifactError(f"{path}: its target is not an object; the artifact is damaged.")
    return manifest


def check_manifest(artifact: Path, chip_id: str | None = None, verify_files: bool = True) -> dict:
    """The manifest, after checking the artifact is intact and (if given) built for `chip_id`.

    Every reader (report, measure, diagnose, load_artifact) calls this one function before it
    uses a file of the artifact; `verify_files=False` only checks the manifest's shape and chip.
    """
    manifest = read_manifest(artifact)
    built_for = manifest.get("target", {}).get("chip")
    if chip_id is not None and built_for != chip_id:
        raise ArtifactError(
            f"{artifact} was built for {built_for}, not {chip_id}; rebuild it with --target {chip_id}."
        )
    if verify_files:
        _check_listed_files(Path(artifact), manifest.get("files", {}))
        _check_no_added_files(Path(artifact), manifest.get("files", {}))
    return manifest


def _check_listed_files(artifact: Path, files: dict) -> None:
    for rel, info in files.items():
        path = artifact / rel
        if not path.is_file():
            raise ArtifactError(f"{artifact}: {rel} is listed in the manifest but missing.")
        if sha256_file(path) != info["sha256"]:
            raise ArtifactError(f"{artifact}: {rel} changed since the build (sha256 differs); rebuild the artifact.")


# Files an artifact may hold beyond its manifest's table: what edgedeploy writes into it after the
# build (measurement records, the lock of a report update), what a compiler writes into a `build`
# folder when the generated project is built in place, and the bytecode Python caches in
# `__pycache__` when the artifact's runner is run in place (a local device measures from the
# artifact folder; the sources it is compiled from are listed and checked); nothing a reader takes
# figures from.
UNLISTED_TOP = (MANIFEST_NAME, "measurements", LOCK_NAME)
UNLISTED_FOLDERS = ("build", "__pycache__")


def _check_no_added_files(artifact: Path, files: dict) -> None:
    for path in sorted(artifact.rglob("*")):
        rel = path.relative_to(artifact)
        if path.is_dir() or rel.as_posix() in files:
            continue
        if rel.parts[0] in UNLISTED_TOP or any(folder in rel.parts[:-1] for folder in UNLISTED_FOLDERS):
            continue
        raise ArtifactError(f"{artifact}: {rel.as_posix()} is not in the manifest (added after the build); remove it or rebuild the artifact.")
