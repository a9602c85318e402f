"""The committed real-model corpus (tests/fixtures/corpus) matches its manifest, and its models run.

scripts/corpus/make_corpus.py writes the models and corpus.json; models under 10 MB are committed
beside it, larger ones are regenerated into $EDGEDEPLOY_HOME/corpus (checked here only where
present). For every committed model: the file's sha256 and size are the manifest's, onnx.checker
accepts it, and ONNX Runtime runs it on its committed data with the output shapes the manifest
records. verdicts.json (the toolchains' own placements, collected by
scripts/corpus/collect_verdicts.py) must describe exactly the nodes of the models it names.
No torch and no toolchain are needed.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np
import onnx
import pytest

CORPUS = Path(__file__).parent / "fixtures" / "corpus"
MANIFEST = json.loads((CORPUS / "corpus.json").read_text())
MODELS = MANIFEST["models"]
HOME = Path(os.environ.get("EDGEDEPLOY_HOME", Path.home() / ".cache" / "edgedeploy")) / "corpus"
COMMITTED = [m for m in MODELS if m["model"]["where"] == "fixtures"]
REGENERATED = [m for m in MODELS if m["model"]["where"] == "home"]
VERDICTS_PATH = CORPUS / "verdicts.json"


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def located(item: dict) -> Path:
    return (CORPUS if item["where"] == "fixtures" else HOME) / item["file"]


def test_manifest_lists_the_corpus():
    names = [m["name"] for m in MODELS]
    assert len(names) == len(set(names))
    assert len(names) >= 26
    covered = {c for m in MODELS for c in m["covers"]}
    for needed in ("multi-output", "recurrent layer: LSTM", "integer (int64) input", "Resize (bilinear upsampling)"):
        assert needed in covered, needed
    kinds = {i["kind"] for m in MODELS for i in m["inputs"]}
    assert {"image", "audio-mfcc", "audio-logmel", "sequence", "state", "tokens"} <= kinds
    # Every committed file really lies beside the manifest, and nothing else does.
    listed = {item["file"] for m in MODELS for key in ("model", "calib", "eval", "sample") if (item := m.get(key)) and item["where"] == "fixtures"}
    # Folders beside the manifest (skeletons/, agreement/) hold derived data, not corpus files.
    present = {p.name for p in CORPUS.iterdir() if p.is_file()} - {"corpus.json", "verdicts.json"}
    assert listed == present


@pytest.mark.parametrize("entry", COMMITTED, ids=[m["name"] for m in COMMITTED])
def test_committed_model_matches_manifest_and_runs(entry):
    import onnxruntime as ort

    for key in ("model", "calib", "eval", "sample"):
        item = entry.get(key)
        if item and item["where"] == "fixtures":
            path = located(item)
            assert path.stat().st_size == item["size_bytes"], path.name
            assert sha256(path) == item["sha256"], path.name
    path = located(entry["model"])
    assert path.stat().st_size < 10 * 1024 * 1024
    model = onnx.load(str(path))
    onnx.checker.check_model(model)
    data_item = entry["eval"] if entry["eval"]["where"] == "fixtures" else entry["sample"]
    with np.load(located(data_item)) as data:
        feeds = {i["name"]: data[i["name"]][:2] for i in entry["inputs"]}
        if "labels" in data.files:
            assert len(data["labels"]) == data_item["count"]
    for spec in entry["inputs"]:
        assert list(feeds[spec["name"]].shape[1:]) == spec["shape"][1:]
        assert str(feeds[spec["name"]].dtype) == spec["dtype"]
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    assert [o.name for o in session.get_outputs()] == [o["name"] for o in entry["outputs"]]
    count = len(next(iter(feeds.values())))
    for k in range(count):  # the models have a fixed batch of 1
        outputs = session.run(None, {n: a[k : k + 1] for n, a in feeds.items()})
        for out, want in zip(outputs, entry["outputs"]):
            assert list(out.shape) == want["shape"]
            assert np.isfinite(out).all()
    if entry["task_output"] and entry["eval"]["where"] == "fixtures":
        assert entry["task_output"] in [o["name"] for o in entry["outputs"]]


@pytest.mark.parametrize("entry", REGENERATED, ids=[m["name"] for m in REGENERATED])
def test_regenerated_model_matches_manifest(entry):
    path = located(entry["model"])
    if not path.is_file():
        pytest.skip(f"{path.name} is over 10 MB and not committed: `scripts/corpus/make_corpus.py` regenerates it into {HOME}")
    assert path.stat().st_size == entry["model"]["size_bytes"]
    if sha256(path) == entry["model"]["sha256"]:
        return
    # Regenerated on another CPU, a model with BatchNorm differs in its last bits (torch's kernels
    # round per instruction set; docs/corpus.md). Then it must still be the model the manifest
    # names: the committed skeleton's graph exactly, its weights' names, types and shapes, and its
    # small tensors (the ones the skeleton keeps) equal to rounding.
    from onnx import numpy_helper

    skeleton = CORPUS / "skeletons" / entry["model"]["file"]
    assert skeleton.is_file(), f"{path.name} differs from the manifest and has no skeleton to compare with"
    regenerated, reference = onnx.load(str(path)), onnx.load(str(skeleton), load_external_data=False)
    assert [n.SerializeToString() for n in regenerated.graph.node] == [n.SerializeToString() for n in reference.graph.node]
    assert [(i.name, i.type.SerializeToString()) for i in regenerated.graph.input] == [(i.name, i.type.SerializeToString()) for i in reference.graph.input]
    ours = {t.name: t for t in regenerated.graph.initializer}
    assert set(ours) == {t.name for t in reference.graph.initializer}
    for tensor in reference.graph.initializer:
        mine = ours[tensor.name]
        assert (mine.data_type, list(mine.dims)) == (tensor.data_type, list(tensor.dims)), tensor.name
        if tensor.data_location != onnx.TensorProto.EXTERNAL:
            np.testing.assert_allclose(numpy_helper.to_array(mine), numpy_helper.to_array(tensor), rtol=1e-5, atol=1e-6, err_msg=tensor.name)


@pytest.mark.skipif(not VERDICTS_PATH.exists(), reason="verdicts.json not collected yet (scripts/corpus/collect_verdicts.py)")
def test_verdicts_describe_the_corpus_nodes():
    from edgedeploy.model.stats import node_names

    verdicts = json.loads(VERDICTS_PATH.read_text())
    by_name = {m["name"]: m for m in MODELS}
    codes = set(verdicts["codes"])
    assert verdicts["pairs"]
    for key, pair in verdicts["pairs"].items():
        model, chip = key.split("/")
        assert model in verdicts["models"], key
        fixed = pair.get("workaround") or {}
        if fixed.get("placements"):
            assert len(fixed["placements"]) == len(verdicts["models"][model]["nodes"]), key
        if pair["failed"]:
            assert pair["placements"] is None
            continue
        placements = pair["placements"]
        assert len(placements) == len(verdicts["models"][model]["nodes"]), key
        assert set(placements) <= codes, key
        names = {n for n, _ in verdicts["models"][model]["nodes"]}
        assert set(pair["detail"]) <= names, key
    for name, recorded in verdicts["models"].items():
        entry = by_name[name]
        assert recorded["sha256"] == entry["model"]["sha256"]
        if entry["model"]["where"] == "fixtures":
            graph = onnx.load(str(located(entry["model"])), load_external_data=False).graph
            assert [[d, n.op_type] for d, n in zip(node_names(graph), graph.node)] == recorded["nodes"], name
