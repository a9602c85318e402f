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
