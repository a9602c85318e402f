"""scripts/trained/make_blazeface_data.py: BlazeFace's face / no-face crops (docs/accuracy.md).
A face crop holds the whole marked face at 28-60% of its side; a no-face crop touches no face;
the samples are the model's input ([N, 3, 128, 128] in [-1, 1]) with balanced [N, 1] labels.
Synthetic photos stand in for the packages' (each pixel's colour says where it came from)."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "trained" / "make_blazeface_data.py"


@pytest.fixture(scope="module")
def script():
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        spec = importlib.util.spec_from_file_location("make_blazeface_data", SCRIPT)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.path.remove(str(SCRIPT.parent))


def test_face_crops_hold_the_face_and_empty_crops_touch_none(script):
    rng = np.random.default_rng(0)
    faces = [(300, 200, 400, 330), (700, 100, 760, 170)]
    for face in faces:
        for _ in range(200):
            x0, y0, x1, y1 = script.face_box(face, (1000, 600), rng)
            assert x1 - x0 == y1 - y0 and 0 <= x0 and 0 <= y0 and x1 <= 1000 and y1 <= 600
            assert x0 <= face[0] and y0 <= face[1] and face[2] <= x1 and face[3] <= y1, (face, (x0, y0, x1, y1))
            assert 0.28 <= max(face[2] - face[0], face[3] - face[1]) / (x1 - x0) <= 0.61
    for _ in range(200):
        box = script.empty_box(faces, (1000, 600), rng)
        assert not script.touches(box, faces) and box[2] - box[0] >= 80
    assert script.touches((395, 320, 500, 500), faces) and not script.touches((500, 400, 600, 500), faces)


def test_samples_are_the_models_input_with_balanced_labels(script, tmp_path, monkeypatch):
    faces = {"a.jpg": [(40, 40, 100, 110)], "b.jpg": []}
    monkeypatch.setattr(script, "FACES", faces)
    monkeypatch.setattr(script, "PER_LABEL", 12)
    photos, rng = {}, np.random.default_rng(2)
    for name, low in (("a.jpg", 0), ("b.jpg", 155)):
        pixels = rng.integers(low, low + 100, (300, 400, 3), dtype=np.uint8)  # textured: flat crops are drawn again
        pixels[:150, :200] = low + 50  # a flat corner, which no crop may be
        if name == "a.jpg":
            pixels[40:110, 40:100] = (255, 0, 0)  # the face: red
        photos[name] = tmp_path / name
        Image.fromarray(pixels).save(photos[name], quality=100)
    x, labels, recipe = script.make_samples(photos, np.random.default_rng(1))
    assert x.shape == (2 * script.PER_LABEL, 3, 128, 128) and x.dtype == np.float32
    assert labels.shape == (2 * script.PER_LABEL, 1) and int(labels.sum()) == script.PER_LABEL
    assert -1.0 <= x.min() and x.max() <= 1.0
    red = (x[:, 0] > 0.5) & (x[:, 1] < -0.5)
    assert all(red[i].any() == bool(labels[i, 0]) for i in range(len(x))), "a face crop shows the face, an empty one none"
    assert [r["face"] for r in recipe] == labels[:, 0].tolist()
    assert x.reshape(len(x), -1).std(axis=1).min() >= script.MIN_STD
    again, _, _ = script.make_samples(photos, np.random.default_rng(1))
    assert np.array_equal(x, again), "seeded"
