"""The bundled sample: a small CNN trained on real MNIST digits, with calibration and held-out splits.

Made by scripts/train_sample.py (fixed seeds) and shipped as package data; every command that
takes a model uses it when the model argument is left out.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

SAMPLE_PACKAGE = "edgedeploy.data.sample"


def sample_dir() -> Path:
    return Path(str(resources.files(SAMPLE_PACKAGE)))


def sample_model_path() -> Path:
    return sample_dir() / "mnist_cnn.onnx"


def sample_calibration_path() -> Path:
    return sample_dir() / "calib.npz"


def sample_eval_path() -> Path:
    return sample_dir() / "eval.npz"


def sample_card() -> dict:
    """The sample's description: data provenance, preprocessing, splits, and its float accuracy."""
    return json.loads((sample_dir() / "sample.json").read_text())


def is_sample(model) -> bool:
    """Whether a LoadedModel is the bundled sample (by content hash): then its splits are the defaults.

    The one place this is decided; every command asks here.
    """
    return getattr(model, "sha256", None) == sample_card().get("sha256")


def sample_preprocess():
    """The sample's image preprocessing as a PreprocessSpec (grayscale 28x28, scale 1/255)."""
    from edgedeploy.datasets import PreprocessSpec

    p = sample_card()["preprocessing"]
    channels = {"grayscale": "GRAY", "gray": "GRAY"}.get(str(p.get("channels", "RGB")).lower(), str(p.get("channels", "RGB")).upper())
    return PreprocessSpec(
        size=tuple(p["size"]) if p.get("size") else None,
        scale=float(p.get("scale", 1 / 255)),
        mean=tuple(float(v) for v in p.get("mean", [0.0])),
        std=tuple(float(v) for v in p.get("std", [1.0])),
        layout=p.get("layout", "NCHW"),
        channels=channels,
    )


# -- the sample as a user's files ---------------------------------------------------------------

EXPORT_MODEL = "model.onnx"
EXPORT_IMAGES = "images"


def export_files(dest: Path) -> list[Path]:
    """What `export_sample(dest)` writes (the top-level entries)."""
    dest = Path(dest)
    return [dest / EXPORT_MODEL, dest / "calib.npz", dest / "eval.npz", dest / EXPORT_IMAGES]


def export_sample(dest: Path) -> dict:
    """Write the sample as files of one's own, to try every command on: model.onnx, calib.npz,
    eval.npz, and the same digits as PNG images in the ImageNet layout (images/calib/<class>/,
    images/eval/<class>/; the folder names are the labels). The caller refuses existing files.

    The images hold the digits' own 8-bit pixels, so `--preprocess "channels=GRAY"` (scale 1/255)
    gives the model exactly the arrays of the .npz files.
    """
    import shutil

    import numpy as np

    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(sample_model_path(), dest / EXPORT_MODEL)
    shutil.copyfile(sample_calibration_path(), dest / "calib.npz")
    shutil.copyfile(sample_eval_path(), dest / "eval.npz")
    counts = {}
    for split, source in (("calib", sample_calibration_path()), ("eval", sample_eval_path())):
        with np.load(source, allow_pickle=False) as data:
            images, labels = data["input"], data["labels"]
        pixels = np.rint(images[:, 0] * 255.0).clip(0, 255).astype(np.uint8)
        for index, (image, label) in enumerate(zip(pixels, labels)):
            folder = dest / EXPORT_IMAGES / split / str(int(label))
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"{index:04d}.png").write_bytes(gray_png(image))
        counts[split] = len(pixels)
    return {"model": str(dest / EXPORT_MODEL), "calib": str(dest / "calib.npz"), "eval": str(dest / "eval.npz"), "images": {k: f"{dest / EXPORT_IMAGES / k} ({n} PNG)" for k, n in counts.items()}}


def gray_png(pixels) -> bytes:
    """An 8-bit grayscale PNG of a 2-D uint8 array (the standard library only: no Pillow needed to write one)."""
    import struct
    import zlib

    height, width = pixels.shape

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    raw = b"".join(b"\x00" + pixels[row].tobytes() for row in range(height))  # filter type 0 per row
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)  # 8-bit, grayscale, no interlace
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")
