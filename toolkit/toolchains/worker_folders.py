"""Folders as tar archives, for the SSH kind of worker environment. Standard library only.

The core packs a folder the worker's request names (a calibration folder of .npy files, a
templates folder) and unpacks the results that come back with these functions; on the remote
machine the same file runs as a script under the toolchain's Python (`unpack` after staging,
`back` after the worker), so both sides share one implementation.

An archive holds regular files and folders only. A symbolic link to a file is stored as the
file it points to; a link to a folder is left out (it could loop, or reach outside). Unpacking
refuses a member that is not a relative path inside the destination, or not a file or folder.
The `back` step packs, of a folder that was staged, only what the worker wrote or changed (a
modification time at or after the marker written when staging ended), and of an output path
the worker created as a folder, everything.
"""

import json
import os
import sys
import tarfile


def pack(folder, archive, newer_than_ns=None):
    """Write the files under `folder` into the tar `archive`; only those modified at or after
    `newer_than_ns` when it is given. Returns how many files it holds."""
    count = 0
    with tarfile.open(archive, "w") as tar:
        for root, dirs, files in os.walk(folder):
            dirs.sort()
            for name in sorted(dirs):
                path = os.path.join(root, name)
                if not os.path.islink(path) and newer_than_ns is None:
                    tar.add(path, arcname=os.path.relpath(path, folder), recursive=False)
            for name in sorted(files):
                path = os.path.join(root, name)
                if not os.path.isfile(path) or (newer_than_ns is not None and os.stat(path).st_mtime_ns < newer_than_ns):
                    continue
                info = tar.gettarinfo(os.path.realpath(path), arcname=os.path.relpath(path, folder))
                with open(path, "rb") as fh:
                    tar.addfile(info, fh)
                count += 1
    return count


def _inside(dest, name):
    """The member's path under dest, or None when the name leaves it."""
    if not name or os.path.isabs(name) or ".." in name.replace("\\", "/").split("/"):
        return None
    target = os.path.realpath(os.path.join(dest, name))
    root = os.path.realpath(dest)
    return target if target == root or target.startswith(root + os.sep) else None


def unpack(archive, dest):
    """Extract the tar `archive` into the folder `dest` (made if needed), file by file, each file
    written whole before it replaces one of the same name, with the archived modification time.
    ValueError for a member that is not a file or folder inside dest."""
    os.makedirs(dest, exist_ok=True)
    with tarfile.open(archive, "r") as tar:
        for member in tar:
            target = _inside(dest, member.name)
            if target is None or not (member.isfile() or member.isdir()):
                raise ValueError(f"the archive member {member.name!r} is not a file or folder inside {dest}")
            if member.isdir():
                os.makedirs(target, exist_ok=True)
                continue
            os.makedirs(os.path.dirname(target), exist_ok=True)
            partial = f"{target}.{os.getpid()}.part"
            source = tar.extractfile(member)
            with open(partial, "wb") as fh:
                while True:
                    chunk = source.read(1 << 20)
                    if not chunk:
                        break
                    fh.write(chunk)
            os.chmod(partial, member.mode & 0o755 | 0o600)
            os.utime(partial, (member.mtime, member.mtime))
            os.replace(partial, target)


def unpack_all(spec_path, marker):
    """The `unpack` step: every {"archive", "dest"} of the spec, then the marker file (its time
    is when staging ended)."""
    with open(spec_path, encoding="utf-8") as fh:
        for entry in json.load(fh):
            unpack(entry["archive"], entry["dest"])
    with open(marker, "w") as fh:
        fh.write("staged\n")


def pack_back(spec_path, marker):
    """The `back` step: for every {"path", "archive", "staged"} of the spec, pack what comes back
    and say what the path is: "folder" (packed into archive), "file", or "missing". The marker
    exists where folders were staged (the `unpack` step wrote it)."""
    since = os.stat(marker).st_mtime_ns if os.path.exists(marker) else None
    kinds = {}
    with open(spec_path, encoding="utf-8") as fh:
        for entry in json.load(fh):
            path = entry["path"]
            if os.path.isdir(path):
                pack(path, entry["archive"], since if entry["staged"] and since is not None else None)
                kinds[path] = "folder"
            else:
                kinds[path] = "file" if os.path.isfile(path) else "missing"
    return kinds


def main(argv):
    if len(argv) == 4 and argv[1] == "unpack":
        unpack_all(argv[2], argv[3])
        return 0
    if len(argv) == 4 and argv[1] == "back":
        print(json.dumps(pack_back(argv[2], argv[3])))
        return 0
    print("usage: worker_folders.py unpack|back SPEC.json MARKER", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
