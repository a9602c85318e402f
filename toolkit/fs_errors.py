"""What the file system refuses, as one sentence for the user: the path, why, and what to do.

A full disk, a file-size limit (`ulimit -f`), a path too long, a file where a folder should be,
a symbolic-link loop, no permission or a read-only file system are the user's environment, not
a bug: the CLI turns such an OSError into the error of its class here (one translation point,
edgedeploy.cli.main; ArtifactBuilder does the same for a build, naming the artifact). The
class follows the path: under EDGEDEPLOY_HOME it is a toolchain environment (exit 9), anywhere
else an output or artifact (exit 11). `check_home` refuses an unusable EDGEDEPLOY_HOME before
anything is read from it or written into it.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from edgedeploy.errors import ArtifactError, EdgedeployError, ToolchainError

# errno -> (why, what to do; {option} names the setting that chooses the folder). Only what a user can fix in their environment; any other OSError
# stays an internal error (a bug, with its traceback under --debug).
_SPACE = "free space there, or choose a folder on another disk{option}"
FILE_SYSTEM_ERRNOS: dict[int, tuple[str, str]] = {
    errno.ENOSPC: ("no space is left on the device", _SPACE),
    errno.EDQUOT: ("the disk quota is exceeded", _SPACE),
    errno.EFBIG: (
        "a file grew past the file-size limit (`ulimit -f`) or the largest file the file system holds",
        "raise the limit (`ulimit -f unlimited`), or choose a folder on another file system{option}",
    ),
    errno.ENAMETOOLONG: (
        "the path or one of its names is too long",
        "choose a shorter path{option} (names up to 255 bytes, whole paths up to 4095)",
    ),
    errno.ENOTDIR: ("a part of the path is a file, not a folder", "remove or rename that file, or choose another path{option}"),
    errno.ELOOP: ("the path runs into a loop of symbolic links", "fix the link, or choose another path{option}"),
    errno.EACCES: ("permission is denied", "choose a folder you can write{option}, or change its permissions"),
    errno.EPERM: ("the operation is not permitted", "choose a folder you own{option}, or change its permissions"),
    errno.EROFS: ("the file system is read-only", "choose a folder on a writable file system{option}"),
}

# A 4000-character path in a sentence hides the sentence: its head and tail say which it is.
_PATH_SHOWN = 160


def short_path(path: object) -> str:
    text = os.fsdecode(path) if isinstance(path, (bytes, os.PathLike)) else str(path)
    if len(text) <= _PATH_SHOWN:
        return text
    half = _PATH_SHOWN // 2
    return f"{text[:half]}...{text[-half:]} ({len(text)} characters)"


def is_file_system_error(exc: BaseException) -> bool:
    return isinstance(exc, OSError) and exc.errno in FILE_SYSTEM_ERRNOS


def describe(exc: OSError, path: object = None, lead: str = "Cannot use", option: str = "") -> str:
    """The sentence for a file-system error: `path` (else the error's own file) and the remedy."""
    why, remedy = FILE_SYSTEM_ERRNOS[exc.errno]
    remedy = remedy.format(option=f" ({option})" if option else "")
    named = path if path is not None else exc.filename
    if named is None:
        # Some writers (a library's file.write) raise without a file name; the caller that
        # knows the path passes it (ArtifactBuilder names the artifact).
        return f"{lead} a file: {why}; {remedy}."
    return f"{lead} {short_path(named)}: {why}; {remedy}."


def file_system_error(exc: BaseException, path: object = None, lead: str = "Cannot use", home: Path | None = None, option: str = "") -> EdgedeployError | None:
    """The user's error for an OSError of the file system (None for any other exception); a path
    under `home` (EDGEDEPLOY_HOME, given by the caller) is a toolchain environment's. `option`:
    the command-line option that chose the path, where the caller knows it."""
    if not is_file_system_error(exc):
        return None
    named = path if path is not None else getattr(exc, "filename", None)
    if named is not None and home is not None and _is_under(named, home):
        return ToolchainError(describe(exc, path, lead, option="EDGEDEPLOY_HOME"))
    return ArtifactError(describe(exc, path, lead, option=option))


def _is_under(path: object, home: Path) -> bool:
    try:
        return Path(os.path.abspath(os.fsdecode(path))).is_relative_to(os.path.abspath(home))
    except (TypeError, ValueError):
        return False


def check_home(home: Path) -> None:
    """Refuse an EDGEDEPLOY_HOME that cannot hold the toolchain environments: a file, a link
    loop, a path through a file. A home that does not exist yet is fine (install makes it)."""
    try:
        info = os.stat(home)
    except FileNotFoundError:
        return
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.ENAMETOOLONG, errno.EACCES):
            why, remedy = FILE_SYSTEM_ERRNOS[exc.errno]
            remedy = remedy.format(option=" for EDGEDEPLOY_HOME")
            raise ToolchainError(f"EDGEDEPLOY_HOME {short_path(home)} cannot be used: {why}; {remedy}.") from None
        raise
    if not stat.S_ISDIR(info.st_mode):
        raise ToolchainError(
            f"EDGEDEPLOY_HOME {short_path(home)} is a file, not a folder; point EDGEDEPLOY_HOME at a folder (or unset it), or move the file away."
        )


def check_home_writable(home: Path) -> None:
    """Refuse, before an install starts, a home (or the folder it would be made in) this user cannot write."""
    check_home(home)
    existing = Path(home)
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ToolchainError(
            f"EDGEDEPLOY_HOME {short_path(home)} is not writable here ({short_path(existing)} refuses writing); point EDGEDEPLOY_HOME at a folder you can write."
        )
