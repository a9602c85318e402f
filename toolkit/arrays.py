"""Arrays handed to toolchain workers: one .npz, keyed by index, with the tensor names in a table.

A model's tensor names are untrusted: as .npz keys they break (a NUL ends the key early, more
than 65,535 bytes do not fit a zip entry's name field). So every request writer stores array i
under `t<i>` and the names, JSON-encoded, as the uint8 array `names_json`; readers map them
back. Workers (which cannot import edgedeploy) read the same format with the few lines of
`read_arrays`' body; extra arrays (labels) keep fixed, safe keys.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np

NAMES_KEY = "names_json"
INDEX_KEY = "t{}"


def write_arrays(path: Path, arrays: dict[str, np.ndarray], extra: dict[str, np.ndarray] | None = None) -> Path:
    """Write `arrays` (by tensor name) to `path` atomically, keyed by index with a name table."""
    from edgedeploy.artifacts import atomic_write_bytes

    names = list(arrays)
    payload = {INDEX_KEY.format(i): np.ascontiguousarray(arrays[name]) for i, name in enumerate(names)}
    payload[NAMES_KEY] = np.frombuffer(json.dumps(names, ensure_ascii=True).encode("ascii"), dtype=np.uint8)
    for key, value in (extra or {}).items():
        if key in payload or not key.isidentifier():
            raise ValueError(f"extra array key {key!r} clashes or is not a plain identifier")
        payload[key] = value
    buf = io.BytesIO()
    np.savez(buf, **payload)
    atomic_write_bytes(Path(path), buf.getvalue())
    return Path(path)


def read_arrays(path: Path) -> dict[str, np.ndarray]:
    """The arrays of a `write_arrays` file, by tensor name (extras left out)."""
    with np.load(path, allow_pickle=False) as archive:
        names = json.loads(bytes(archive[NAMES_KEY]).decode("ascii"))
        return {name: np.asarray(archive[INDEX_KEY.format(i)]) for i, name in enumerate(names)}
