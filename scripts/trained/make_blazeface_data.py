"""BlazeFace's calibration and evaluation data: seeded crops of photos that ship in installed packages,
each labelled face / no face, and its entry in the trained set's manifest (docs/accuracy.md).

Runs in the corpus environment (PIL, onnxruntime), after nothing else:

    ~/.cache/edgedeploy/envs/corpus/bin/python scripts/trained/make_blazeface_data.py [ENVS_DIR]

ENVS_DIR (default ~/.cache/edgedeploy/envs) is searched for the photos by file name. A face crop is
a square around one hand-marked face (FACES: pixel boxes read off the photos), the face 28-60% of
its side, at a seeded offset, mirrored half the time; a no-face crop is a seeded square of any photo
that touches no marked face (grown by a quarter of its size) and is not flat (pixel standard
deviation at least MIN_STD in [-1, 1] units: a first draw held an 80 px square of Zidane's dark
suit, std 0.10, on which the float model's outputs reach 30,680 where every other crop stays under
600, and that one calibration sample set the quantised ranges: every chip's face-presence AUROC
fell to 0.5). Each crop is resized to 128x128 and
scaled to [-1, 1], NCHW, as MediaPipe feeds the short-range model. 72 of each, shuffled: the first
64 calibrate, the other 80 evaluate (labels [N, 1]: 1 a face).

The task metric is face presence: the highest of the 896 anchors' classificator logits is the
sample's score, and AUROC over the samples (`--metric auroc --metric-output classificators`, which
takes that highest value where an output holds one score per anchor). The float figures (AUROC,
and accuracy at MediaPipe's own 0.5 on the sigmoid) are measured here with ONNX Runtime.

Writes $EDGEDEPLOY_HOME/trained/blazeface_short_range.{onnx,calib.npz,eval.npz} (the model copied
from tests/fixtures/trained) and replaces or adds the model's entry in scripts/trained/manifest.json.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from make_set import HOME, MANIFEST, run, write_case  # noqa: E402  (the trained set's own writer)

ROOT = Path(__file__).resolve().parents[2]
MODEL = ROOT / "tests" / "fixtures" / "trained" / "blazeface_short_range.onnx"
NAME, SIDE, SEED = "blazeface_short_range", 128, 26
PER_LABEL, CALIB_COUNT = 72, 64
MIN_STD = 0.15  # a no-face crop flatter than this is drawn again (the docstring says why)
# Faces marked by hand on each photo (x0, y0, x1, y1 in its pixels); the others show none.
FACES = {
    "grace_hopper.jpg": [(165, 135, 355, 320)],  # matplotlib / scipy / skimage's portrait
    "zidane.jpg": [(895, 95, 1055, 255), (480, 210, 665, 450)],  # ultralytics: two faces, one in profile
    "bus.jpg": [(100, 400, 160, 475), (260, 405, 312, 470)],  # ultralytics: two faces with sunglasses
    "flower.jpg": [],  # scikit-learn
    "china.jpg": [],  # scikit-learn
    "road_300x300.jpg": [],  # rknn-toolkit2's sample
}


def find_photos(envs: Path) -> dict[str, Path]:
    found = {}
    for name in FACES:
        hits = sorted(envs.rglob(name))
        if not hits:
            sys.exit(f"{name} is not under {envs}: it ships in matplotlib, ultralytics, scikit-learn or rknn-toolkit2.")
        found[name] = hits[0]
    return found


def touches(box, faces, grow: float = 0.25) -> bool:
    x0, y0, x1, y1 = box
    for f0, g0, f1, g1 in faces:
        mx, my = grow * (f1 - f0), grow * (g1 - g0)
        if x0 < f1 + mx and f0 - mx < x1 and y0 < g1 + my and g0 - my < y1:
            return True
    return False


def face_box(face, size, rng):
    """A square holding the whole face, the face 28-60% of its side, inside the photo where it can be."""
    f0, g0, f1, g1 = face
    width, height = size
    face_side = max(f1 - f0, g1 - g0)
    side = min(int(face_side / rng.uniform(0.28, 0.60)), width, height)
    x0 = int(rng.uniform(max(0, f1 - side), min(f0, width - side) + 1))
    y0 = int(rng.uniform(max(0, g1 - side), min(g0, height - side) + 1))
    return x0, y0, x0 + side, y0 + side


def empty_box(faces, size, rng):
    """A square of 80 px to the photo's short side that touches no face (drawn again until it does not)."""
    width, height = size
    for _ in range(10_000):
        side = int(rng.uniform(80, min(width, height)))
        x0, y0 = int(rng.integers(0, width - side + 1)), int(rng.integers(0, height - side + 1))
        if not touches((x0, y0, x0 + side, y0 + side), faces):
            return x0, y0, x0 + side, y0 + side
    raise ValueError("no face-free square found")


def crop(image, box, mirror: bool) -> np.ndarray:
    from PIL import Image

    patch = image.crop(box).resize((SIDE, SIDE), Image.BILINEAR)
    if mirror:
        patch = patch.transpose(Image.FLIP_LEFT_RIGHT)
    return (np.asarray(patch, np.float32).transpose(2, 0, 1) / 127.5 - 1.0).astype(np.float32)


def make_samples(photos: dict[str, Path], rng) -> tuple[np.ndarray, np.ndarray, list[dict]]:
    """PER_LABEL face and PER_LABEL no-face crops, shuffled: (x [N, 3, 128, 128], labels [N, 1], what each is)."""
    from PIL import Image

    images = {name: Image.open(path).convert("RGB") for name, path in photos.items()}
    faces = [(name, face) for name, boxes in FACES.items() for face in boxes]
    plan = []
    for i in range(PER_LABEL):
        name, face = faces[i % len(faces)]
        plan.append((name, face_box(face, images[name].size, rng), 1))
    for i in range(PER_LABEL):
        name = list(FACES)[i % len(FACES)]
        box = empty_box(FACES[name], images[name].size, rng)
        while crop(images[name], box, False).std() < MIN_STD:
            box = empty_box(FACES[name], images[name].size, rng)
        plan.append((name, box, 0))
    order = rng.permutation(len(plan))
    mirrors = rng.integers(0, 2, len(plan))
    x = np.stack([crop(images[plan[i][0]], plan[i][1], bool(mirrors[i])) for i in order])
    labels = np.array([[plan[i][2]] for i in order], np.int64)
    return x, labels, [{"photo": plan[i][0], "box": list(plan[i][1]), "mirrored": bool(mirrors[i]), "face": plan[i][2]} for i in order]


def presence(model: Path, x: np.ndarray) -> np.ndarray:
    """Each sample's face score: the highest of the 896 anchors' classificator logits."""
    return run(model, {"input": x})[1].reshape(len(x), -1).max(axis=1)


def main() -> None:
    from sklearn.metrics import roc_auc_score

    envs = Path(sys.argv[1]) if len(sys.argv) > 1 else HOME.parent / "envs"
    rng = np.random.default_rng(SEED)
    photos = find_photos(envs)
    x, labels, _ = make_samples(photos, rng)
    calib, evaluation = x[:CALIB_COUNT], x[CALIB_COUNT:]
    scores = presence(MODEL, evaluation)
    area, accuracy = float(roc_auc_score(labels[CALIB_COUNT:, 0], scores)), float(((scores > 0) == (labels[CALIB_COUNT:, 0] > 0)).mean())
    print(f"{NAME}: float face-presence AUROC {area:.4f}, accuracy at 0.5 {accuracy:.4f} on {len(evaluation)} crops ({int(labels[CALIB_COUNT:].sum())} faces)")
    HOME.mkdir(parents=True, exist_ok=True)
    entry = write_case(NAME, MODEL, {"input": calib}, {"input": evaluation}, labels[CALIB_COUNT:], {
        "source": "mediapipe 0.10.14 (PyPI), face_detection_short_range.tflite as ONNX (tests/fixtures/trained)",
        "data_kind": "real", "data_domain": "crops of photos shipped in PyPI packages, face / no face",
        "task_output": "classificators", "metric": "auroc", "float_metric": area,
        "float_metric_name": f"face-presence AUROC, the highest anchor score per crop (ONNX Runtime; accuracy at MediaPipe's 0.5: {100 * accuracy:.1f}%)",
        "build_options": ["--metric", "auroc", "--metric-output", "classificators"],
        "made_by": "scripts/trained/make_blazeface_data.py",
        "photos": {n: str(p.relative_to(envs)) for n, p in photos.items()}})
    manifest = json.loads(MANIFEST.read_text())
    manifest["models"] = [m for m in manifest["models"] if m["name"] != NAME] + [entry]
    MANIFEST.write_text(json.dumps(manifest, indent=1) + "\n")
    print(f"{NAME}: {HOME}/{NAME}.{{calib,eval}}.npz; manifest {MANIFEST}")


if __name__ == "__main__":
    main()
