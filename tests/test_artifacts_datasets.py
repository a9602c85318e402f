"""Artifact directories (atomic, manifest, --force) and the calibration/evaluation data formats."""

from __future__ import annotations

import json

import numpy as np
import pytest

from edgedeploy.artifacts import ArtifactBuilder, check_manifest, safe_path_component
from edgedeploy.datasets import InputSpec, load_dataset, parse_preprocess
from edgedeploy.errors import ArtifactError, OptionError


def build(dest, content: str, force=False, fail=False):
    with ArtifactBuilder(dest, force=force) as art:
        (art.path / "model.bin").write_text(content)
        (art.path / "sub").mkdir()
        (art.path / "sub" / "log.txt").write_text("log")
        art.manifest_fields["target"] = {"chip": "esp32s3"}
        if fail:
            raise RuntimeError("stage failed")


def test_builds_atomically_with_manifest(tmp_path):
    dest = tmp_path / "out" / "m" / "esp32s3"
    build(dest, "v1")
    manifest = check_manifest(dest, chip_id="esp32s3")
    assert set(manifest["files"]) == {"model.bin", "sub/log.txt"}
    assert not [p for p in dest.parent.iterdir() if p.name.startswith(".")]


def test_existing_artifact_is_never_overwritten_without_force(tmp_path):
    dest = tmp_path / "a"
    build(dest, "v1")
    with pytest.raises(ArtifactError, match="exists already; use --force"):
        build(dest, "v2")
    assert (dest / "model.bin").read_text() == "v1"
    build(dest, "v2", force=True)
    assert (dest / "model.bin").read_text() == "v2"


def test_a_build_that_finishes_second_never_replaces_the_first(tmp_path):
    # Two jobs with the same --out (a sweep started twice, two CI jobs on one runner): both find
    # the destination free when they start; the one that finishes second must not replace the
    # other's artifact, and keeps its own beside it.
    dest = tmp_path / "out" / "m" / "rk3566"
    with pytest.raises(ArtifactError, match="written by another build while this one ran") as caught:
        with ArtifactBuilder(dest) as second:
            (second.path / "model.bin").write_text("second")
            build(dest, "first")
    assert (dest / "model.bin").read_text() == "first"
    check_manifest(dest)
    kept = [p for p in dest.parent.iterdir() if p.name.startswith("rk3566.unplaced-")]
    assert len(kept) == 1 and (kept[0] / "model.bin").read_text() == "second"
    assert str(kept[0]) in str(caught.value)


def test_failed_build_leaves_previous_artifact_intact(tmp_path):
    dest = tmp_path / "a"
    build(dest, "v1")
    with pytest.raises(RuntimeError):
        build(dest, "v2", force=True, fail=True)
    assert (dest / "model.bin").read_text() == "v1"
    check_manifest(dest)
    assert (tmp_path / "a.failed" / "model.bin").read_text() == "v2"  # kept for its logs


def test_force_refuses_to_replace_a_folder_that_is_not_an_artifact(tmp_path):
    dest = tmp_path / "precious"
    dest.mkdir()
    (dest / "thesis.tex").write_text("years of work")
    with pytest.raises(ArtifactError, match="not an edgedeploy artifact"):
        build(dest, "v1", force=True)
    assert (dest / "thesis.tex").exists()


def test_manifest_detects_changed_files_and_wrong_chip(tmp_path):
    dest = tmp_path / "a"
    build(dest, "v1")
    with pytest.raises(ArtifactError, match="built for esp32s3, not esp32p4"):
        check_manifest(dest, chip_id="esp32p4")
    (dest / "model.bin").write_text("tampered")
    with pytest.raises(ArtifactError, match="changed since the build"):
        check_manifest(dest)


def test_safe_path_component_neutralises_model_names():
    assert safe_path_component("../../etc/passwd") == "_.._etc_passwd"
    assert "/" not in safe_path_component("a/b\\c")
    assert safe_path_component("...") == "model"


SPEC = [InputSpec("input", (None, 1, 4, 4), "float32")]


def test_npz_by_input_name_with_labels(tmp_path):
    x = np.random.default_rng(0).random((5, 1, 4, 4)).astype(np.float64)
    np.savez(tmp_path / "d.npz", input=x, labels=np.arange(5))
    ds = load_dataset(tmp_path / "d.npz", SPEC)
    assert len(ds) == 5 and ds.inputs["input"].dtype == np.float32 and list(ds.labels) == [0, 1, 2, 3, 4]
    assert len(load_dataset(tmp_path / "d.npz", SPEC, count=2)) == 2


def test_npz_single_array_any_name(tmp_path):
    np.savez(tmp_path / "d.npz", images=np.zeros((3, 1, 4, 4)))
    assert len(load_dataset(tmp_path / "d.npz", SPEC)) == 3


def test_npz_wrong_shape_is_one_clear_error(tmp_path):
    np.savez(tmp_path / "d.npz", input=np.zeros((3, 3, 4, 4)))
    with pytest.raises(OptionError, match="has 3 at axis 1, but the model expects 1"):
        load_dataset(tmp_path / "d.npz", SPEC)


def test_npz_labels_count_mismatch(tmp_path):
    np.savez(tmp_path / "d.npz", input=np.zeros((3, 1, 4, 4)), labels=np.zeros(2))
    with pytest.raises(OptionError, match="2 labels for 3 samples"):
        load_dataset(tmp_path / "d.npz", SPEC)


def test_folder_of_npy_samples(tmp_path):
    for i in range(4):
        np.save(tmp_path / f"{i:03d}.npy", np.full((1, 4, 4), i, np.float32))
    np.save(tmp_path / "labels.npy", np.array([3, 2, 1, 0]))
    ds = load_dataset(tmp_path, SPEC)
    assert ds.inputs["input"].shape == (4, 1, 4, 4) and ds.inputs["input"][2, 0, 0, 0] == 2
    assert list(ds.labels) == [3, 2, 1, 0]


def test_image_folder_with_preprocessing(tmp_path):
    pil = pytest.importorskip("PIL.Image", reason="image folders need Pillow (edgedeploy[images])")
    for cls, value in (("cat", 255), ("dog", 0)):
        (tmp_path / cls).mkdir()
        pil.new("RGB", (8, 8), (value, value, value)).save(tmp_path / cls / "a.png")
    spec = parse_preprocess("size=4x4,mean=0.5,std=0.5,layout=NCHW,channels=GRAY")
    ds = load_dataset(tmp_path, SPEC, preprocess=spec)
    assert ds.inputs["input"].shape == (2, 1, 4, 4)
    assert np.allclose(ds.inputs["input"][0], 1.0) and np.allclose(ds.inputs["input"][1], -1.0)
    assert list(ds.labels) == [0, 1]


def test_preprocess_spec_errors():
    with pytest.raises(OptionError, match="unknown key"):
        parse_preprocess("colour=red")
    with pytest.raises(OptionError, match="std must not be 0"):
        parse_preprocess("std=0")
    spec = parse_preprocess("size=224x224,scale=1/255,mean=0.485;0.456;0.406,layout=nhwc,channels=bgr")
    assert spec.size == (224, 224) and spec.mean == (0.485, 0.456, 0.406) and spec.layout == "NHWC" and spec.channels == "BGR"


def test_preprocess_json_file(tmp_path):
    (tmp_path / "p.json").write_text(json.dumps({"size": [32, 32], "mean": [0.1, 0.2, 0.3], "layout": "NHWC"}))
    spec = parse_preprocess(str(tmp_path / "p.json"))
    assert spec.size == (32, 32) and spec.mean == (0.1, 0.2, 0.3)


def test_grayscale_model_fed_rgb_images_is_told_channels_gray(tmp_path):
    """The default channels=RGB on a grayscale model: the error says which option fits."""
    pytest.importorskip("PIL")
    from edgedeploy.datasets import load_dataset, model_input_specs, parse_preprocess
    from edgedeploy.errors import OptionError
    from edgedeploy.model import load_model
    from edgedeploy.sample import export_sample

    export_sample(tmp_path)
    model = load_model(tmp_path / "model.onnx", {}, require_static=True)
    specs = model_input_specs(model)
    with pytest.raises(OptionError, match=r"has 3 at axis 1, but the model expects 1 .*add channels=GRAY to --preprocess"):
        load_dataset(tmp_path / "images" / "calib", specs, parse_preprocess("size=28x28"), None)
    with pytest.raises(OptionError, match="mean has 3 values, but channels=GRAY gives 1 channel"):
        load_dataset(tmp_path / "images" / "calib", specs, parse_preprocess("channels=GRAY,mean=0.485;0.456;0.406"), None)
    # With channels=GRAY the PNG digits give exactly the arrays of the .npz (the same 8-bit pixels / 255).
    import numpy as np

    images = load_dataset(tmp_path / "images" / "eval", specs, parse_preprocess("channels=GRAY"), None)
    with np.load(tmp_path / "eval.npz") as data:
        arrays, labels = data["input"], data["labels"]
    order = np.argsort(labels, kind="stable")  # the image folders are one per class, in class order
    assert np.array_equal(images.labels, labels[order])
    assert np.abs(images.inputs["input"] - arrays[order]).max() < 1e-6


HOLD_A_BUILDS_LOCK = """
import sys, time
from pathlib import Path
from edgedeploy.locks import held, lock_beside
with held(lock_beside(Path(sys.argv[1]))):
    print("held", flush=True)
    time.sleep(60)
"""


def test_a_build_removes_what_killed_builds_left_and_nothing_of_a_live_one(tmp_path):
    import subprocess
    import sys

    model = tmp_path / "out" / "m"
    build(model / "a", "v1")
    # Left by builds killed with SIGKILL: work folders, and an old artifact moved aside whose replacement is in place.
    stale = [model / ".a.building-x1", model / ".c.building-y2", model / ".a.replaced-123"]
    maybe_only_copy = model / ".d.replaced-456"  # d is not in place: the user's to look at
    live = model / ".b.building-z3"  # another process builds b now (it holds b's lock)
    for folder in (*stale, maybe_only_copy, live):
        folder.mkdir()
        (folder / "model.bin").write_text("x")
    holder = subprocess.Popen([sys.executable, "-c", HOLD_A_BUILDS_LOCK, str(model / "b")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        lines: list[str] = []
        with ArtifactBuilder(model / "a", force=True, echo=lines.append) as art:
            (art.path / "model.bin").write_text("v2")
    finally:
        holder.kill()
        holder.wait()
    assert [f.name for f in stale if f.exists()] == []
    assert live.exists() and maybe_only_copy.exists()
    assert len(lines) == 1 and all(f.name in lines[0] for f in stale), lines
    assert (model / "a" / "model.bin").read_text() == "v2"
    # The locks this build took are gone (b's holder was killed: its file stays, its lock does not).
    assert sorted(p.name for p in model.glob(".*.edgedeploy.lock")) == [".b.edgedeploy.lock"]
