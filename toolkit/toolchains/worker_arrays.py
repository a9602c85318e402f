"""The one array format between the core and every toolchain worker. numpy and the standard library only.

This file ships beside worker_main.py and is loaded by path in the toolchain environments
(which do not have edgedeploy installed): a worker reaches it as `ctx.arrays`; the core
imports it through edgedeploy.arrays. One implementation on both sides, so the format cannot
drift.

A model's tensor names are untrusted: as .npz keys they break (a NUL ends the key early, more
than 65,535 bytes do not fit a zip entry's name field). So array i is stored under `t<i>` and
the names, JSON-encoded, as the uint8 array `names_json`; extra arrays (labels) keep fixed,
safe keys.

Samples of an input whose leading axis is not a batch axis (a recurrent state [layers, batch,
hidden]) are held whole, stacked on a new leading axis ([N, *the input's shape]); the file
names such inputs in the uint8 array `whole_json`, and `take_feed` is the one way, core and
workers alike, to cut feeds out of the arrays (edgedeploy.datasets documents the contract).

Some toolchains read a list of .npy files instead (rknn-toolkit2's dataset file: one line per
sample, the absolute .npy path of each input, space-separated): `write_npy_list` writes it.
"""

import io
import json
import os

import numpy as np

NAMES_KEY = "names_json"
INDEX_KEY = "t{}"
WHOLE_KEY = "whole_json"


def _atomic_write(path, data):
    path = os.fspath(path)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "wb") as fh:
        fh.write(data)
    os.replace(tmp, path)


def _json_bytes(value):
    return np.frombuffer(json.dumps(value, ensure_ascii=True).encode("ascii"), dtype=np.uint8)


def write_arrays(path, arrays, extra=None, whole=()):
    """Write `arrays` (by tensor name) to `path` atomically, keyed by index with a name table; returns path.

    `whole`: the names among them held as whole samples ([N, *input shape], see `take_feed`).
    """
    names = list(arrays)
    payload = {INDEX_KEY.format(i): np.ascontiguousarray(arrays[name]) for i, name in enumerate(names)}
    payload[NAMES_KEY] = _json_bytes(names)
    if whole:
        payload[WHOLE_KEY] = _json_bytes(sorted(n for n in whole if n in arrays))
    for key, value in (extra or {}).items():
        if key in payload or not key.isidentifier():
            raise ValueError(f"extra array key {key!r} clashes or is not a plain identifier")
        payload[key] = value
    buf = io.BytesIO()
    np.savez(buf, **payload)
    _atomic_write(path, buf.getvalue())
    return path


def read_arrays(path, names=None):
    """The arrays of a `write_arrays` file by tensor name (extras left out); only `names`, in that order, when given."""
    with np.load(path, allow_pickle=False) as archive:
        table = json.loads(bytes(archive[NAMES_KEY]).decode("ascii"))
        by_name = {name: np.asarray(archive[INDEX_KEY.format(i)]) for i, name in enumerate(table)}
    return by_name if names is None else {name: by_name[name] for name in names}


def read_whole(path):
    """The names a `write_arrays` file holds as whole samples (an empty set for batch-first data only)."""
    with np.load(path, allow_pickle=False) as archive:
        return set(json.loads(bytes(archive[WHOLE_KEY]).decode("ascii"))) if WHOLE_KEY in archive.files else set()


def leading_axis_is_batch(shape, shapes):
    """Whether axis 0 of an input of `shape` (ints, None where dynamic) is its batch axis, given
    the `shapes` of all the model's inputs: yes for a leading 1 or dynamic dimension, and for a
    fixed one every input shares (a fixed batch); no for a scalar, and for a fixed leading
    dimension other than 1 the other inputs do not share (a recurrent state [2, 1, 128] beside
    an input [1, 576] carries its batch on axis 1)."""
    if not shape:
        return False
    if shape[0] is None or shape[0] == 1:
        return True
    return {s[0] for s in shapes if s} == {shape[0]}


def held_whole(arrays, ranks):
    """The names of `arrays` that hold whole samples stacked on a new leading axis: one axis more
    than the model's input of that name (`ranks`: input name -> rank)."""
    return {name for name, array in arrays.items() if name in ranks and np.ndim(array) == ranks[name] + 1}


def take_feed(arrays, start, stop, whole=()):
    """Samples start..stop-1 of every input, shaped as the model takes them.

    A batch-first input (axis 0 the model's batch axis) gives its rows start..stop. An input in
    `whole` (samples stacked on a new leading axis because the model's own leading axis is not a
    batch axis, e.g. a GRU state [layers, batch, hidden]) gives sample `start` as it is: such
    samples go in one at a time, so stop - start must be 1 when `whole` names any of `arrays`.
    """
    held_whole = [name for name in arrays if name in whole]
    if held_whole and stop - start != 1:
        raise ValueError(f"input {held_whole[0]!r} holds whole samples (its leading axis is not a batch axis): it is fed one sample at a time, not {stop - start}")
    return {name: (array[start] if name in whole else array[start:stop]) for name, array in arrays.items()}


def write_npy_list(folder, samples, list_name="dataset.txt"):
    """One .npy per input of each sample and a list file naming them, one line per sample.

    `samples` yields, per sample, the list of its input arrays in the model's input order.
    Returns the list file's absolute path; an empty `samples` writes an empty list.
    """
    folder = os.path.abspath(os.fspath(folder))
    os.makedirs(folder, exist_ok=True)
    lines = []
    for k, arrays in enumerate(samples):
        paths = []
        for j, array in enumerate(arrays):
            path = os.path.join(folder, f"s{k:05d}_i{j}.npy")
            np.save(path, array)
            paths.append(path)
        lines.append(" ".join(paths))
    list_path = os.path.join(folder, list_name)
    with open(list_path, "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")
    return list_path
