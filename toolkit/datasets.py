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

A preprocessing spec (`--preprocess`) is `key=value` pairs separated by `,` or a JSON file:
size=HxW, scale (default 1/255), mean and std (one value or one per channel, `;`-separated),
layout=NCHW|NHWC, channels=RGB|BGR|GRAY. Pixel values become ((pixel * scale) - mean) / std.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Iterator

import numpy as np

from edgedeploy.errors import OptionError

LABEL_KEYS = ("labels", "label", "y", "targets")
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp")


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
            "layout": self.layout,
            "channels": self.channels,
        }


def parse_preprocess(text: str | None) -> PreprocessSpec | None:
    """`size=224x224,mean=0.485;0.456;0.406,std=0.229;0.224;0.225,layout=NCHW,channels=RGB` or a JSON file."""
    if not text:
        return None
    path = Path(text)
    if path.suffix == ".json" and path.is_file():
        try:
            data = json.loads(path.read_text())
        except ValueError as exc:
            raise OptionError(f"--preprocess {path}: not valid JSON ({exc}).") from exc
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
                h, w = (int(v) for v in value.lower().split("x"))
                spec = replace(spec, size=(h, w))
            elif key == "scale":
                num, _, den = value.partition("/")
                spec = replace(spec, scale=float(num) / float(den) if den else float(num))
            elif key in ("mean", "std"):
                values = tuple(float(v) for v in value.replace(" ", "").split(";") if v)
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
    """Inputs by model input name, each [N, ...], and optional labels [N, ...]."""

    inputs: dict[str, np.ndarray]
    labels: np.ndarray | None
    source: str
    preprocess: PreprocessSpec | None = None
    notes: list[str] = field(default_factory=list)

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
        )

    def batches(self, batch_size: int) -> Iterator[dict[str, np.ndarray]]:
        """Consecutive batches; the last one is dropped if short (models with a fixed batch need that)."""
        n = len(self)
        for start in range(0, n - batch_size + 1, batch_size):
            yield {k: v[start : start + batch_size] for k, v in self.inputs.items()}

    def describe(self) -> dict:
        return {
            "source": self.source,
            "count": len(self),
            "inputs": {k: {"shape": list(v.shape), "dtype": str(v.dtype)} for k, v in self.inputs.items()},
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


def model_input_specs(model) -> list[InputSpec]:
    """InputSpecs for a LoadedModel's real inputs."""
    from edgedeploy.model.shapes import dims_of
    from edgedeploy.model.stats import dtype_name

    specs = []
    for vi in model.graph_inputs():
        dims = dims_of(vi) or ()
        specs.append(InputSpec(vi.name, tuple(d if isinstance(d, int) else None for d in dims), dtype_name(vi.type.tensor_type.elem_type)))
    return specs


def load_dataset(path: str | Path, inputs: list[InputSpec], preprocess: PreprocessSpec | None = None, count: int | None = None) -> Dataset:
    """Load data for a model with `inputs`; OptionError with one sentence when it does not fit."""
    path = Path(path)
    if not path.exists():
        raise OptionError(f"Data not found: {path}.")
    if path.is_file() and path.suffix == ".npz":
        ds = _load_npz(path, inputs)
    elif path.is_file() and path.suffix == ".npy":
        ds = _from_arrays(str(path), inputs, [np.load(path, allow_pickle=False)], None)
    elif path.is_dir():
        npys = sorted(p for p in path.glob("*.npy") if p.name != "labels.npy")
        images = sorted(p for p in path.rglob("*") if p.suffix.lower() in IMAGE_SUFFIXES)
        if npys:
            labels = np.load(path / "labels.npy", allow_pickle=False) if (path / "labels.npy").exists() else None
            ds = _from_arrays(str(path), inputs, [np.load(p, allow_pickle=False) for p in npys], labels)
        elif images:
            ds = _load_images(path, images, inputs, preprocess or PreprocessSpec())
        else:
            raise OptionError(f"{path} holds no .npy files and no images ({', '.join(IMAGE_SUFFIXES)}).")
    else:
        raise OptionError(f"{path}: data must be an .npz file, a .npy file, or a folder of .npy files or images.")
    if count is not None:
        if count <= 0:
            raise OptionError("The sample count must be positive.")
        ds = ds.take(count)
    return ds


def _check_array(source: str, spec: InputSpec, array: np.ndarray, preprocess: PreprocessSpec | None = None) -> np.ndarray:
    """Fit an array to the input: add a batch axis to a single sample, check dims, cast the dtype.

    `preprocess` is given for decoded images: a mismatch on the channel axis then says which
    `channels=` would fit (a grayscale model fed the default RGB, or the other way round).
    """
    want = spec.shape
    if want and array.ndim == len(want) - 1:
        array = array[None]
    if want and array.ndim != len(want):
        raise OptionError(
            f"{source}: data for input '{spec.name}' has shape {list(array.shape)}, but the model expects rank {len(want)} "
            f"({'x'.join('?' if d is None else str(d) for d in want)})."
        )
    for axis, (have, need) in enumerate(zip(array.shape[1:], want[1:]), start=1):
        if need is not None and have != need:
            raise OptionError(
                f"{source}: data for input '{spec.name}' has {have} at axis {axis}, but the model expects {need} "
                f"({'x'.join('?' if d is None else str(d) for d in want)}){_channel_hint(preprocess, axis, len(want), have, need)}."
            )
    if array.dtype.kind == "O":
        raise OptionError(f"{source}: input '{spec.name}' holds Python objects, not numbers.")
    try:
        return array.astype(np.dtype(spec.dtype), copy=False)
    except TypeError as exc:
        raise OptionError(f"{source}: cannot convert input '{spec.name}' to {spec.dtype}.") from exc


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


def _load_npz(path: Path, inputs: list[InputSpec]) -> Dataset:
    try:
        archive = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise OptionError(f"{path} is not a readable .npz file ({exc}).") from exc
    with archive:
        keys = list(archive.keys())
        label_key = next((k for k in LABEL_KEYS if k in keys), None)
        labels = archive[label_key] if label_key else None
        data_keys = [k for k in keys if k != label_key]
        arrays = {}
        if all(spec.name in data_keys for spec in inputs):
            for spec in inputs:
                arrays[spec.name] = _check_array(str(path), spec, archive[spec.name])
        elif len(inputs) == 1 and len(data_keys) == 1:
            arrays[inputs[0].name] = _check_array(str(path), inputs[0], archive[data_keys[0]])
        else:
            raise OptionError(
                f"{path} has arrays {', '.join(data_keys) or '(none)'}; the model's inputs are "
                f"{', '.join(s.name for s in inputs)}. Name the arrays after the inputs."
            )
    return _finish(str(path), arrays, labels)


def _from_arrays(source: str, inputs: list[InputSpec], arrays: list[np.ndarray], labels) -> Dataset:
    if len(inputs) != 1:
        raise OptionError(f"{source}: .npy data only works for single-input models; use an .npz keyed by input name.")
    spec = inputs[0]
    fitted = [_check_array(source, spec, a) for a in arrays]
    return _finish(source, {spec.name: np.concatenate(fitted, axis=0)}, labels)


def _finish(source: str, arrays: dict[str, np.ndarray], labels) -> Dataset:
    counts = {len(a) for a in arrays.values()}
    if len(counts) != 1:
        raise OptionError(f"{source}: the inputs hold different numbers of samples ({sorted(counts)}).")
    n = counts.pop()
    if n == 0:
        raise OptionError(f"{source} holds no samples.")
    if labels is not None and len(labels) != n:
        raise OptionError(f"{source}: {len(labels)} labels for {n} samples.")
    return Dataset(arrays, labels, source)


def _load_images(root: Path, images: list[Path], inputs: list[InputSpec], spec: PreprocessSpec) -> Dataset:
    if len(inputs) != 1:
        raise OptionError(f"{root}: image folders only work for single-input models.")
    try:
        from PIL import Image
    except ImportError as exc:
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
    samples = []
    for p in images:
        try:
            with Image.open(p) as img:
                img = img.convert(mode)
                if size is not None:
                    img = img.resize((size[1], size[0]), Image.BILINEAR)
                arr = np.asarray(img, dtype=np.float32)
        except OSError as exc:
            raise OptionError(f"{p} could not be decoded as an image ({exc}).") from exc
        if arr.ndim == 2:
            arr = arr[..., None]
        if spec.channels == "BGR":
            arr = arr[..., ::-1]
        mean = np.asarray(spec.mean, dtype=np.float32)
        std = np.asarray(spec.std, dtype=np.float32)
        arr = (arr * spec.scale - mean) / std
        if spec.layout == "NCHW":
            arr = arr.transpose(2, 0, 1)
        samples.append(arr)
    batch = np.stack(samples)
    ds = _finish(str(root), {model_in.name: _check_array(str(root), model_in, batch, spec)}, labels)
    ds.preprocess = spec
    if classes:
        ds.notes.append("classes: " + ", ".join(classes))
    return ds
