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
