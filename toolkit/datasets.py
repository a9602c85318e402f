"""Calibration and evaluation data: .npz, a folder of .npy files, or a folder of images.

Every stage that feeds a model real inputs (quantiser calibration, before/after accuracy,
benchmarks) loads them through `load_dataset`, so the formats and their rules are the same
everywhere:

- `.npz`: arrays keyed by the model's input names. For a single-input model, one array under
  any name is accepted. Labels, if any, are under `labels` (or `label`, `y`, `targets`).
- a folder of `.npy` files (single-input models): each file one sample, or a batch whose
  leading dimension is the batch; files in name order; labels from `labels.npy` if present.
- a folder of images (single-input models) with a preprocessing spec: .png/.jpg/.jpeg/.bmp,
  in name order; when the images sit in sub-folders, the sub-folder names are the classes
  (sorted, index = label), the ImageNet layout. Decoding needs Pillow (`edgedeploy[images]`).

How an array is read as samples (the data contract, docs/cli.md "Data for --calib and --eval"):
an input whose axis 0 is its batch axis (the pinned leading dimension is 1, or the fixed batch
every input shares) is batch-first: an array of the input's rank holds samples along axis 0, one
of rank one less is a single sample, and one of rank one more is N whole feeds stacked. An input
whose leading axis is NOT a batch axis (a fixed leading dimension the other inputs do not share,
such as a GRU/LSTM state [layers * directions, batch, hidden], or a scalar) is read whole: an
array of exactly the input's shape is one sample, one of rank one more is N samples stacked on a
new leading axis, and anything else is refused with one sentence naming the input, the shape and
the two forms it takes. Such inputs are held as [N, *the input's shape] (`Dataset.whole`) and fed
one sample at a time; nothing ever slices them on the model's own leading axis.

A preprocessing spec (`--preprocess`) is `key=value` pairs separated by `,` or a JSON file:
size=HxW, scale (default 1/255), mean and std (one value or one per channel, `;`-separated),
layout=NCHW|NHWC, channels=RGB|BGR|GRAY. Pixel values become ((pixel * scale) - mean) / std.

Data files are untrusted input, and this module is their one gate: .npy headers are read and
checked (numeric dtype, no Python objects, the claimed size present in the file and under
MAX_DATA_BYTES) before anything is allocated; nothing is ever unpickled; image dimensions are
checked before decoding; NaN, infinities and complex numbers are refused unless the caller
passes `allow_nonfinite` (then they pass with an EdgedeployWarning).
"""

from __future__ import annotations

import json
import math
import struct
import warnings
import zipfile
import zlib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import BinaryIO, Iterator

import numpy as np

from edgedeploy.errors import EdgedeployWarning, ModelError, OptionError
from edgedeploy.interrupts import reraise_if_interrupted
from edgedeploy.records import record_fields
from edgedeploy.toolchains.worker_arrays import leading_axis_is_batch as axis_0_is_batch
from edgedeploy.toolchains.worker_arrays import take_feed

LABEL_KEYS = ("labels", "label", "y", "targets")
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp")
# All arrays of one dataset together: calibration and evaluation sets of edge models are a few
# hundred samples of at most a few MiB; 2 GiB leaves room and keeps a lying header from
# exhausting the machine.
MAX_DATA_BYTES = 2**31
# One image: 8192 x 8192 pixels is far beyond any edge model's input (Pillow's own bomb limit is 89 Mpx).
MAX_IMAGE_PIXELS = 8192 * 8192
# .npy headers are a few hundred bytes; numpy itself refuses more than 10000 by default.
MAX_NPY_HEADER_BYTES = 10000
# dtype kinds that are data: bool, signed and unsigned integers, floats, complex (refused unless allowed).
NUMERIC_KINDS = "biufc"
_KIND_WORDS = {"U": "text strings", "S": "byte strings", "V": "raw or structured records", "M": "dates", "m": "time spans", "O": "Python objects"}


@dataclass(frozen=True)
class PreprocessSpec:
    size: tuple[int, int] | None = None  # (height, width); None: keep the image's size
    scale: float = 1 / 255.0
    mean: tuple[float, ...] = (0.0,)
    std: tuple[float, ...] = (1.0,)
    layout: str = "NCHW"
    channels: str = "RGB"

    def to_dict(self) -> dict:
        return {
            "size": list(self.size) if self.size else None,
            "scale": self.scale,
            "mean": list(self.mean),
            "std": list(self.std),
            **record_fields(self, "layout", "channels"),
        }


def parse_preprocess(text: str | None) -> PreprocessSpec | None:
    """`size=224x224,mean=0.485;0.456;0.406,std=0.229;0.224;0.225,layout=NCHW,channels=RGB` or a JSON file."""
    if not text:
        return None
    path = Path(text)
    if path.suffix == ".json" and path.is_file():
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except ValueError as exc:
            raise OptionError(f"--preprocess {path}: not valid UTF-8 JSON ({exc}).") from exc
        if not isinstance(data, dict):
            raise OptionError(f"--preprocess {path}: the JSON must be an object of settings (size, scale, mean, std, layout, channels).")
        items = {k: (";".join(map(str, v)) if isinstance(v, list) and k != "size" else ("x".join(map(str, v)) if k == "size" and isinstance(v, list) else str(v))) for k, v in data.items()}
    else:
        items = {}
        for part in text.split(","):
            if not part.strip():
                continue
            key, sep, value = part.partition("=")
            if not sep:
                raise OptionError(f"--preprocess: '{part}' is not key=value (keys: size, scale, mean, std, layout, channels).")
            items[key.strip().lower()] = value.strip()
    spec = PreprocessSpec()
    try:
        for key, value in items.items():
            if key == "size":
                parts = value.lower().split("x")
                if len(parts) != 2:
                    raise OptionError(f"--preprocess: size must be HxW like 224x224, not {value!r}.")
                h, w = (int(v) for v in parts)
                if h <= 0 or w <= 0 or h * w > MAX_IMAGE_PIXELS:
                    raise OptionError(f"--preprocess: size {value} must be positive and at most {MAX_IMAGE_PIXELS} pixels.")
                spec = replace(spec, size=(h, w))
            elif key == "scale":
                num, _, den = value.partition("/")
                if den and float(den) == 0:
                    raise OptionError("--preprocess: scale divides by 0.")
                scale = float(num) / float(den) if den else float(num)
                if not math.isfinite(scale):
                    raise OptionError(f"--preprocess: scale must be a finite number, not {value}.")
                spec = replace(spec, scale=scale)
            elif key in ("mean", "std"):
                values = tuple(float(v) for v in value.replace(" ", "").split(";") if v)
                if not values or not all(math.isfinite(v) for v in values):
                    raise OptionError(f"--preprocess: {key} must be finite numbers separated by ';', not {value!r}.")
                if key == "std" and any(v == 0 for v in values):
                    raise OptionError("--preprocess: std must not be 0.")
                spec = replace(spec, **{key: values})
            elif key == "layout":
                if value.upper() not in ("NCHW", "NHWC"):
                    raise OptionError(f"--preprocess: layout must be NCHW or NHWC, not {value}.")
                spec = replace(spec, layout=value.upper())
            elif key in ("channels", "channel_order"):
                if value.upper() not in ("RGB", "BGR", "GRAY"):
                    raise OptionError(f"--preprocess: channels must be RGB, BGR or GRAY, not {value}.")
                spec = replace(spec, channels=value.upper())
            else:
                raise OptionError(f"--preprocess: unknown key '{key}' (keys: size, scale, mean, std, layout, channels).")
    except ValueError as exc:
        raise OptionError(f"--preprocess: a value is not a number ({exc}).") from exc
    return spec


@dataclass
class Dataset:
    """Inputs by model input name, each [N, ...], and optional labels [N, ...].

    A batch-first input is held [N, *its shape after the batch axis]; an input in `whole` (its
    leading axis is not a batch axis) is held [N, *its whole shape] and fed one sample at a time.
    """

    inputs: dict[str, np.ndarray]
    labels: np.ndarray | None
    source: str
    preprocess: PreprocessSpec | None = None
    notes: list[str] = field(default_factory=list)
    whole: frozenset = frozenset()

    def __len__(self) -> int:
        return len(next(iter(self.inputs.values())))

    def take(self, count: int | None) -> "Dataset":
        if count is None or count >= len(self):
            return self
        return Dataset(
            {k: v[:count] for k, v in self.inputs.items()},
            None if self.labels is None else self.labels[:count],
            self.source,
            self.preprocess,
            self.notes + [f"first {count} of {len(self)} samples"],
            self.whole,
        )

    def feed(self, start: int, stop: int) -> dict[str, np.ndarray]:
        """Samples start..stop-1 as the model takes them (a whole input: sample `start` alone)."""
        return take_feed(self.inputs, start, stop, self.whole)

    def batches(self, batch_size: int) -> Iterator[dict[str, np.ndarray]]:
        """Consecutive batches; the last one is dropped if short (models with a fixed batch need that).

        With inputs held whole, one sample per feed whatever `batch_size` asks: their samples do
        not stack on the model's leading axis."""
        size = 1 if self.whole else batch_size
        for start in range(0, len(self) - size + 1, size):
            yield self.feed(start, start + size)

    def describe(self) -> dict:
        return {
            "source": self.source,
            "count": len(self),
            "inputs": {k: {"shape": list(v.shape), "dtype": str(v.dtype), **({"samples": "whole, stacked on axis 0"} if k in self.whole else {})} for k, v in self.inputs.items()},
            "labels": None if self.labels is None else {"shape": list(self.labels.shape), "dtype": str(self.labels.dtype)},
            "preprocess": self.preprocess.to_dict() if self.preprocess else None,
            "notes": self.notes,
        }


@dataclass(frozen=True)
class InputSpec:
    """What the model expects of one input: name, per-sample shape (after the batch axis) and dtype."""

    name: str
    shape: tuple  # full shape including the batch axis; ints or None for dynamic
    dtype: str
    rank_known: bool = True  # False: the model gives no shape, so () is no scalar and nothing is checked


def model_input_specs(model) -> list[InputSpec]:
    """InputSpecs for a LoadedModel's real inputs."""
    from edgedeploy.model.shapes import dims_of
    from edgedeploy.model.stats import dtype_name

    specs = []
    for vi in model.graph_inputs():
        if not vi.type.HasField("tensor_type"):
            kind = vi.type.WhichOneof("value") or "untyped"
            raise ModelError(
                f"{model.path.name}: input '{vi.name}' is a {kind.replace('_type', '')} value, not a tensor; "
                f"edgedeploy feeds models tensors only."
            )
        dims = dims_of(vi)
        specs.append(InputSpec(vi.name, tuple(d if isinstance(d, int) else None for d in dims or ()), dtype_name(vi.type.tensor_type.elem_type), dims is not None))
    return specs


def load_dataset(
    path: str | Path,
    inputs: list[InputSpec],
    preprocess: PreprocessSpec | None = None,
    count: int | None = None,
    allow_nonfinite: bool = False,
) -> Dataset:
    """Load data for a model with `inputs`; OptionError with one sentence when it does not fit.

    `allow_nonfinite` lets NaN, infinities and complex numbers through (complex as its real
    part), each with an EdgedeployWarning; by default they are refused.
    """
    path = Path(path)
    if count is not None and count <= 0:
        raise OptionError("The sample count must be positive.")
    if not path.exists():
        raise OptionError(f"Data not found: {path}.")
    budget = _Budget(str(path))
    if path.is_file() and path.suffix == ".npz":
        ds = _load_npz(path, inputs, budget)
    elif path.is_file() and path.suffix == ".npy":
        ds = _from_arrays(str(path), inputs, [read_npy_file(path, budget)], None)
    elif path.is_dir():
        npys = sorted(p for p in path.glob("*.npy") if p.name != "labels.npy")
        images = sorted(p for p in path.rglob("*") if p.suffix.lower() in IMAGE_SUFFIXES and p.is_file())
        if npys:
            labels = read_npy_file(path / "labels.npy", budget) if (path / "labels.npy").exists() else None
            ds = _from_arrays(str(path), inputs, [read_npy_file(p, budget) for p in npys], labels)
        elif images:
            ds = _load_images(path, images, inputs, preprocess or PreprocessSpec(), budget)
        else:
            raise OptionError(f"{path} holds no .npy files and no images ({', '.join(IMAGE_SUFFIXES)}).")
    else:
        raise OptionError(f"{path}: data must be an .npz file, a .npy file, or a folder of .npy files or images.")
    if count is not None:
        ds = ds.take(count)
    _check_values(ds, inputs, allow_nonfinite)
    return ds


class _Budget:
    """The bytes one dataset may still allocate; every array is charged before it is read."""

    def __init__(self, source: str, limit: int = MAX_DATA_BYTES):
        self.source = source
        self.left = limit
        self.limit = limit

    def charge(self, what: str, nbytes: int) -> None:
        if nbytes > self.left:
            raise OptionError(
                f"{what} would take {nbytes} bytes, and {self.source} may hold at most {self.limit} bytes of data in all; "
                f"use fewer samples."
            )
        self.left -= nbytes


def read_npy_file(path: Path, budget: "_Budget | None" = None) -> np.ndarray:
    """One .npy file, read through `read_npy` (header checked first, never unpickled)."""
    if not path.is_file():
        raise OptionError(f"{path} is not a file; an .npy array was expected there.")
    budget = budget or _Budget(str(path))
    with path.open("rb") as fh:
        return read_npy(fh, str(path), path.stat().st_size, budget)


def read_npy(fh: BinaryIO, what: str, size_bytes: int, budget: "_Budget") -> np.ndarray:
    """An array from an .npy stream of `size_bytes`: the header is validated before any allocation.

    Refused with one sentence: not .npy, a malformed header, Python objects (pickled data is
    never loaded), non-numeric dtypes, a claimed size larger than the bytes present (truncated,
    or a header lying to make us allocate), or more than the dataset's budget.
    """
    try:
        version = np.lib.format.read_magic(fh)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(fh, max_header_size=MAX_NPY_HEADER_BYTES)
        elif version in ((2, 0), (3, 0)):
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(fh, max_header_size=MAX_NPY_HEADER_BYTES)
        else:
            raise ValueError(f"unknown .npy format version {version}")
    except (ValueError, EOFError, SyntaxError, TypeError, struct.error) as exc:
        raise OptionError(f"{what} is not a readable .npy array (its header is missing or malformed).") from exc
    if dtype.hasobject or dtype.kind not in NUMERIC_KINDS or dtype.fields is not None or dtype.subdtype is not None:
        words = "Python objects (pickled data, which edgedeploy never loads)" if dtype.hasobject else _KIND_WORDS.get(dtype.kind, f"values of type {dtype}")
        raise OptionError(f"{what} holds {words}, not numbers.")
    if any(d < 0 for d in shape):
        raise OptionError(f"{what} has a negative dimension in its header.")
    if math.prod(max(d, 1) for d in shape) * dtype.itemsize > MAX_DATA_BYTES:
        # Checked with empty axes counted as 1: numpy cannot even describe such a shape.
        raise OptionError(f"{what} claims a shape of {'x'.join(map(str, shape))}, beyond the {MAX_DATA_BYTES} bytes a dataset may hold.")
    count = math.prod(shape)
    nbytes = count * dtype.itemsize
    present = size_bytes - fh.tell()
    if nbytes > present:
        raise OptionError(f"{what} claims {nbytes} bytes of data ({'x'.join(map(str, shape)) or 'scalar'} {dtype}) but holds only {max(present, 0)}; it is truncated or corrupt.")
    budget.charge(what, nbytes)
    array = np.empty(count, dtype=dtype)
    view = memoryview(array).cast("B") if nbytes else memoryview(b"")
    filled = 0
    while filled < nbytes:
        got = fh.readinto(view[filled:])
        if not got:
            raise OptionError(f"{what} ended after {filled} of its {nbytes} bytes; it is truncated.")
        filled += got
    return array.reshape(shape, order="F" if fortran else "C")


def _check_values(ds: Dataset, inputs: list[InputSpec], allow_nonfinite: bool) -> None:
    """NaN, infinities and complex numbers: refused, or with `allow_nonfinite` kept with a warning."""
    hint = "pass --allow-nonfinite to use them anyway"
    for spec in inputs:
        array = ds.inputs.get(spec.name)
        if array is None:
            continue
        if array.dtype.kind == "c" and np.dtype(spec.dtype).kind != "c":
            sentence = f"{ds.source}: input '{spec.name}' holds complex numbers, but the model takes {spec.dtype}"
            if not allow_nonfinite:
                raise OptionError(f"{sentence}; {hint} (only the real part is fed).")
            warnings.warn(EdgedeployWarning(f"{sentence}; feeding only the real part (--allow-nonfinite)."), stacklevel=3)
            array = ds.inputs[spec.name] = array.real.astype(np.dtype(spec.dtype))
        _check_finite(ds, f"input '{spec.name}'", array, allow_nonfinite, hint)
    if ds.labels is not None:
        _check_finite(ds, "the labels", ds.labels, allow_nonfinite, hint)


def _check_finite(ds: Dataset, what: str, array: np.ndarray, allow: bool, hint: str) -> None:
    if array.dtype.kind not in "fc":
        return
    bad = ~np.isfinite(array)
    if bad.any():
        count = int(bad.sum())
        first = int(np.argwhere(bad.reshape(len(array), -1) if array.ndim else bad.reshape(1, 1))[0][0])
        sentence = f"{ds.source}: {what} holds {count} NaN or infinite value(s), the first in sample {first}"
        if not allow:
            raise OptionError(f"{sentence}; {hint}.")
        warnings.warn(EdgedeployWarning(f"{sentence}; using them as given (--allow-nonfinite)."), stacklevel=3)


def leading_axis_is_batch(spec: InputSpec, specs: list[InputSpec]) -> bool:
    """Whether axis 0 of this input is its batch axis, along which samples may be cut (the rule:
    worker_arrays.leading_axis_is_batch, shared with scripts that run without edgedeploy)."""
    if not spec.rank_known:
        return True
    return axis_0_is_batch(spec.shape, [s.shape for s in specs if s.rank_known])


def fixed_batch_of(specs: list[InputSpec]) -> int:
    """The batch size the model's batch-first inputs fix (1 when dynamic, or no input has a batch
    axis); inputs whose leading axis is not a batch axis (a recurrent state) do not count."""
    leads = {s.shape[0] for s in specs if leading_axis_is_batch(s, specs) and s.shape and s.shape[0] is not None}
    return leads.pop() if len(leads) == 1 else 1


def _shape_text(dims) -> str:
    return "x".join("?" if d is None else str(d) for d in dims) or "a scalar"


def _form(dims) -> str:
    """A shape as the user writes it: [N, 2, 1, 128]."""
    return "[" + ", ".join("?" if d is None else str(d) for d in dims) + "]"


def _fits(have: tuple, want: tuple) -> bool:
    return len(have) == len(want) and all(w is None or h == w for h, w in zip(have, want))


def _fit_whole(source: str, spec: InputSpec, array: np.ndarray, specs: list[InputSpec]) -> np.ndarray:
    """An input read whole: one sample of exactly its shape, or N stacked on a new leading axis."""
    want = spec.shape
    if _fits(array.shape, want):
        return array[None]
    if array.ndim == len(want) + 1 and _fits(array.shape[1:], want):
        return array
    why = "it is a scalar" if not want else (
        f"its leading axis ({want[0]}) is not a batch axis: the other inputs lead with "
        f"{', '.join(sorted({_shape_text(s.shape[:1]) for s in specs if s.shape and s is not spec}))}"
    )
    one = _form(want) if want else "a scalar"
    raise OptionError(
        f"{source}: data for input '{spec.name}' has shape {list(array.shape)}, but the model's input is {_shape_text(want)} "
        f"and {why}; give one sample as {one} or N samples stacked as {_form(['N', *want])}."
    )


def _check_array(source: str, spec: InputSpec, array: np.ndarray, specs: list[InputSpec], preprocess: PreprocessSpec | None = None) -> tuple[np.ndarray, bool]:
    """Fit an array to the input: (the array as the Dataset holds it, whether it is held whole).

    A batch-first input: a single sample gets a batch axis, N whole feeds stacked on a new
    leading axis are joined on the batch axis, dims are checked. An input whose leading axis is
    not a batch axis: see `_fit_whole`. The dtype is cast to the input's.
    `preprocess` is given for decoded images: a mismatch on the channel axis then says which
    `channels=` would fit (a grayscale model fed the default RGB, or the other way round).
    """
    whole = not leading_axis_is_batch(spec, specs)
    if whole:
        array = _fit_whole(source, spec, array, specs)
    else:
        array = _fit_batch_first(source, spec, array, preprocess)
    if array.dtype.kind not in NUMERIC_KINDS:
        raise OptionError(f"{source}: input '{spec.name}' holds {_KIND_WORDS.get(array.dtype.kind, str(array.dtype))}, not numbers.")
    try:
        target = np.dtype(spec.dtype)
    except TypeError as exc:
        raise OptionError(f"{source}: the model's input '{spec.name}' is of type {spec.dtype}, which edgedeploy cannot feed from data files.") from exc
    if array.dtype.kind == "c" and target.kind != "c":
        # Left complex: _check_values refuses it, or with allow_nonfinite feeds the real part.
        return array, whole
    return array.astype(target, copy=False), whole


def _fit_batch_first(source: str, spec: InputSpec, array: np.ndarray, preprocess: PreprocessSpec | None) -> np.ndarray:
    want = spec.shape
    if not spec.rank_known:
        return array
    if array.ndim == len(want) - 1:
        array = array[None]
    elif array.ndim == len(want) + 1 and _fits(array.shape[1:], want):
        # N whole feeds stacked: their rows follow one another on the batch axis.
        array = array.reshape((-1, *array.shape[2:]))
    if array.ndim != len(want):
        raise OptionError(
            f"{source}: data for input '{spec.name}' has shape {list(array.shape)}, but the model expects rank {len(want)} "
            f"({_shape_text(want)}): give samples along axis 0 as {_form(['N', *want[1:]])}, or N whole inputs stacked as {_form(['N', *want])}."
        )
    for axis, (have, need) in enumerate(zip(array.shape[1:], want[1:]), start=1):
        if need is not None and have != need:
            raise OptionError(
                f"{source}: data for input '{spec.name}' has {have} at axis {axis}, but the model expects {need} "
                f"({_shape_text(want)}){_channel_hint(preprocess, axis, len(want), have, need)}."
            )
    return array


def _channel_hint(preprocess: PreprocessSpec | None, axis: int, rank: int, have: int, need: int) -> str:
    """For images: the `--preprocess channels=` that gives the model the channel count it expects."""
    if preprocess is None or rank != 4:
        return ""
    channel_axis = 1 if preprocess.layout == "NCHW" else 3
    if axis != channel_axis:
        other = "NHWC" if preprocess.layout == "NCHW" else "NCHW"
        return f"; if that is the channel axis, the model is {other}: add layout={other} to --preprocess"
    if need == 1 and have == 3:
        return f"; the images were read as {preprocess.channels} (3 channels) and the model takes one: add channels=GRAY to --preprocess"
    if need == 3 and have == 1:
        return "; the images were read as GRAY and the model takes 3 channels: use channels=RGB (or BGR) in --preprocess"
    return ""


# What reading a zip member can raise on corrupt or hostile archives (CRC and size mismatches,
# broken deflate streams, encryption, compression methods Python lacks).
_ZIP_ERRORS = (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError, OSError)


def _load_npz(path: Path, inputs: list[InputSpec], budget: _Budget) -> Dataset:
    """An .npz archive read member by member through `read_npy`, never through np.load's pickle fallback."""
    try:
        archive = zipfile.ZipFile(path)
    except _ZIP_ERRORS as exc:
        raise OptionError(f"{path} is not an .npz archive (not a zip file, or truncated).") from exc
    with archive:
        members = {}
        for info in archive.infolist():
            if info.is_dir():
                continue
            if not info.filename.endswith(".npy"):
                raise OptionError(f"{path} holds {info.filename[:80]!r}, which is not an .npy array; an .npz holds only arrays.")
            members[info.filename[: -len(".npy")]] = info

        def read(key: str) -> np.ndarray:
            info = members[key]
            what = f"{path} array '{key[:80]}'"
            try:
                with archive.open(info) as fh:
                    return read_npy(fh, what, info.file_size, budget)
            except _ZIP_ERRORS as exc:
                detail = " ".join(str(exc).split())[:120] or type(exc).__name__
                raise OptionError(f"{what} cannot be read: the archive is corrupt or encrypted ({detail}).") from exc

        keys = list(members)
        label_key = next((k for k in LABEL_KEYS if k in keys), None)
        labels = read(label_key) if label_key else None
        data_keys = [k for k in keys if k != label_key]
        fitted = {}
        if all(spec.name in data_keys for spec in inputs):
            for spec in inputs:
                fitted[spec.name] = _check_array(str(path), spec, read(spec.name), inputs)
        elif len(inputs) == 1 and len(data_keys) == 1:
            fitted[inputs[0].name] = _check_array(str(path), inputs[0], read(data_keys[0]), inputs)
        else:
            shown = ", ".join(repr(k[:40]) for k in data_keys[:10]) or "(none)"
            raise OptionError(
                f"{path} has arrays {shown}; the model's inputs are "
                f"{', '.join(repr(s.name[:40]) for s in inputs)}. Name the arrays after the inputs."
            )
    return _finish(str(path), {k: a for k, (a, _) in fitted.items()}, labels, {k for k, (_, whole) in fitted.items() if whole})


def _from_arrays(source: str, inputs: list[InputSpec], arrays: list[np.ndarray], labels) -> Dataset:
    if len(inputs) != 1:
        raise OptionError(f"{source}: .npy data only works for single-input models; use an .npz keyed by input name.")
    spec = inputs[0]
    checked = [_check_array(source, spec, a, inputs) for a in arrays]
    fitted, whole = [a for a, _ in checked], {spec.name} if checked[0][1] else set()
    sample_shapes = sorted({tuple(a.shape[1:]) for a in fitted})
    if len(sample_shapes) > 1:
        raise OptionError(f"{source}: the .npy files hold samples of different shapes ({', '.join('x'.join(map(str, s)) or 'scalar' for s in sample_shapes[:3])}).")
    if len({a.dtype for a in fitted}) > 1:
        fitted = [a.astype(np.result_type(*fitted)) for a in fitted]
    return _finish(source, {spec.name: np.concatenate(fitted, axis=0) if len(fitted) > 1 else fitted[0]}, labels, whole)


def _finish(source: str, arrays: dict[str, np.ndarray], labels, whole: set[str] | frozenset = frozenset()) -> Dataset:
    counts = {len(a) for a in arrays.values()}
    if len(counts) != 1:
        raise OptionError(f"{source}: the inputs hold different numbers of samples ({sorted(counts)}).")
    n = counts.pop()
    if n == 0:
        raise OptionError(f"{source} holds no samples.")
    if labels is not None:
        if labels.dtype.kind not in "biuf":
            raise OptionError(f"{source}: the labels hold {_KIND_WORDS.get(labels.dtype.kind, str(labels.dtype))}; labels must be numbers (class indices or targets).")
        if labels.ndim == 0:
            raise OptionError(f"{source}: the labels are a single number; give one label per sample.")
        if len(labels) != n:
            raise OptionError(f"{source}: {len(labels)} labels for {n} samples.")
    return Dataset(arrays, labels, source, whole=frozenset(whole))


def _load_images(root: Path, images: list[Path], inputs: list[InputSpec], spec: PreprocessSpec, budget: _Budget) -> Dataset:
    if len(inputs) != 1:
        raise OptionError(f"{root}: image folders only work for single-input models.")
    try:
        from PIL import Image
    except ImportError as exc:
        reraise_if_interrupted(exc)
        raise OptionError("Reading images needs Pillow: pip install 'edgedeploy[images]'.") from exc
    model_in = inputs[0]
    size = spec.size
    if size is None and len(model_in.shape) == 4:
        hw = model_in.shape[2:4] if spec.layout == "NCHW" else model_in.shape[1:3]
        if all(isinstance(d, int) for d in hw):
            size = (int(hw[0]), int(hw[1]))
    classes = sorted({p.parent.relative_to(root).as_posix() for p in images} - {"."})
    labels = np.array([classes.index(p.parent.relative_to(root).as_posix()) for p in images], dtype=np.int64) if classes else None
    mode = "L" if spec.channels == "GRAY" else "RGB"
    channels = 1 if mode == "L" else 3
    for key in ("mean", "std"):
        values = getattr(spec, key)
        if len(values) not in (1, channels):
            # Broadcasting three means onto one gray channel would silently make three channels.
            raise OptionError(
                f"--preprocess: {key} has {len(values)} values, but channels={spec.channels} gives {channels} channel(s); "
                f"give one value, or one per channel."
            )
    # What Pillow and the decoders raise on files that lie about being images.
    decode_errors = (OSError, ValueError, EOFError, SyntaxError, struct.error, zlib.error, Image.DecompressionBombError)
    samples = []
    for p in images:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error", Image.DecompressionBombWarning)
                with Image.open(p) as img:
                    # The header's size is checked before a single pixel is decoded.
                    width, height = img.size
                    if width <= 0 or height <= 0 or width * height > MAX_IMAGE_PIXELS:
                        raise OptionError(f"{p} claims {width}x{height} pixels; images may have at most {MAX_IMAGE_PIXELS} (a decompression bomb?).")
                    out_h, out_w = size if size is not None else (height, width)
                    budget.charge(f"{p} (decoded)", out_h * out_w * channels * 4)
                    img = img.convert(mode)
                    if size is not None:
                        img = img.resize((size[1], size[0]), Image.BILINEAR)
                    arr = np.asarray(img, dtype=np.float32)
        except (*decode_errors, Image.DecompressionBombWarning) as exc:
            raise OptionError(f"{p} could not be decoded as an image ({type(exc).__name__}).") from exc
        if arr.ndim == 2:
            arr = arr[..., None]
        if spec.channels == "BGR":
            arr = arr[..., ::-1]
        mean = np.asarray(spec.mean, dtype=np.float32)
        std = np.asarray(spec.std, dtype=np.float32)
        if mean.size not in (1, arr.shape[-1]) or std.size not in (1, arr.shape[-1]):
            raise OptionError(f"--preprocess: mean and std need one value or one per channel ({arr.shape[-1]}), not {mean.size} and {std.size}.")
        arr = (arr * spec.scale - mean) / std
        if spec.layout == "NCHW":
            arr = arr.transpose(2, 0, 1)
        samples.append(arr)
    if len({a.shape for a in samples}) > 1:
        raise OptionError(f"{root}: the images have different sizes; give --preprocess size=HxW to resize them to one.")
    batch = np.stack(samples)
    fitted, whole = _check_array(str(root), model_in, batch, inputs, spec)
    ds = _finish(str(root), {model_in.name: fitted}, labels, {model_in.name} if whole else set())
    ds.preprocess = spec
    if classes:
        ds.notes.append("classes: " + ", ".join(classes))
    return ds
