"""Assemble the trained set: models with trained weights and their real or realistic data.

Runs in the corpus environment after prepare_data.py (and train.py for the models trained here):

    python scripts/trained/make_set.py DATA.npz WEIGHTS_DIR WHEELS_DIR [--only silero_vad_16k]

WEIGHTS_DIR holds train.py's exported ONNX models; WHEELS_DIR the unpacked PyPI wheels whose
models ship trained (rapidocr-onnxruntime 1.4.4, silero-vad 6.2.3: `pip download --no-deps` then
unzip). Writes $EDGEDEPLOY_HOME/trained/<name>.{onnx,calib.npz,eval.npz} and
scripts/trained/manifest.json in the corpus manifest's shape, so scripts/corpus/sweep.py builds
the set with `--manifest scripts/trained/manifest.json`. Each model's float task metric on its
evaluation data is measured here with ONNX Runtime and recorded. `--only` remakes one model that
draws nothing from the seeded stream (its manifest entry replaced, the others kept); WEIGHTS_DIR
is then not read.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort

HOME = Path(os.environ.get("EDGEDEPLOY_HOME", Path.home() / ".cache" / "edgedeploy")) / "trained"
MANIFEST = Path(__file__).with_name("manifest.json")
CALIB_COUNT = 128
SEED = 7


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def file_entry(path: Path, **extra) -> dict:
    return {"file": path.name, "where": "trained", "sha256": sha256(path), "size_bytes": path.stat().st_size, **extra}


def run(model: Path, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    """The float model on every sample, one at a time (some shipped models take batch 1 only)."""
    session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    count = len(next(iter(feeds.values())))
    rows = [session.run(None, {k: v[i:i + 1] for k, v in feeds.items()}) for i in range(count)]
    return [np.concatenate([r[j] for r in rows]) for j in range(len(rows[0]))]


def write_case(name: str, source: Path, calib: dict, evaluation: dict, labels, card: dict) -> dict:
    model = HOME / f"{name}.onnx"
    calib_path, eval_path = HOME / f"{name}.calib.npz", HOME / f"{name}.eval.npz"
    # Written aside and renamed: a sweep may be building from the previous files meanwhile.
    shutil.copyfile(source, model.with_suffix(".part"))
    with open(calib_path.with_suffix(".part"), "wb") as handle:
        np.savez_compressed(handle, **calib)
    with open(eval_path.with_suffix(".part"), "wb") as handle:
        np.savez_compressed(handle, **evaluation, **({} if labels is None else {"labels": labels}))
    for path in (model, calib_path, eval_path):
        path.with_suffix(".part").replace(path)
    proto = onnx.load(str(model), load_external_data=False)
    count = len(next(iter(evaluation.values())))
    model_file = file_entry(model)
    if source.name.endswith(".tmp.onnx"):
        source.unlink()  # a model made here on the way (silero's batch-first state)
    return {"name": name, **card, "opset": max(o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")),
            "nodes": len(proto.graph.node), "model": model_file,
            "calib": file_entry(calib_path, count=len(next(iter(calib.values())))),
            "eval": file_entry(eval_path, count=count, labels="real labels" if labels is not None else "none: fidelity only")}


def top1(model: Path, x: np.ndarray, y: np.ndarray) -> float:
    return float((run(model, {"input": x})[0].argmax(1) == y).mean())


def grey(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float32)[:, None] / 255
    return np.pad(x, ((0, 0), (0, 0), (2, 2), (2, 2))) if x.shape[-1] == 28 else x


def balanced(labels: np.ndarray, per_class: int, rng) -> np.ndarray:
    return np.sort(np.concatenate([rng.permutation(np.flatnonzero(labels == c))[:per_class] for c in np.unique(labels)]))


def trained_here(data, weights: Path, cards: dict, rng) -> list[dict]:
    out = []
    for name, card in cards.items():
        prefix = card["data"]
        to_input = (lambda a: a.astype(np.float32)) if prefix == "speech" else grey
        x_train, x_eval, y_eval = data[f"{prefix}_train_x"], data[f"{prefix}_eval_x"], data[f"{prefix}_eval_y"]
        keep = balanced(y_eval, 30 if prefix == "glyph" else 40, rng)
        calib = to_input(x_train[rng.permutation(len(x_train))[:CALIB_COUNT]])
        model = weights / f"{name}.onnx"
        accuracy = top1(model, to_input(x_eval[keep]), y_eval[keep])
        out.append(write_case(name, model, {"input": calib}, {"input": to_input(x_eval[keep])}, y_eval[keep], {
            "source": "trained here by scripts/trained/train.py", "data_kind": "real" if prefix == "mnist" else "realistic",
            "data_domain": prefix, "task_output": "logits", "metric": "top1", "float_metric": accuracy,
            "training": card, "build_options": []}))
        print(f"{name}: float top-1 {accuracy:.4f} on {len(keep)} held-out samples", flush=True)
    return out


def ocr_normalise(lines: np.ndarray, width: int) -> np.ndarray:
    """PaddleOCR's recogniser/classifier input: 3 channels, height 48, (x/255 - 0.5) / 0.5."""
    from PIL import Image

    resized = np.stack([np.asarray(Image.fromarray(a).resize((width, 48), Image.BILINEAR)) for a in lines])
    x = (resized.astype(np.float32) / 255 - 0.5) / 0.5
    return np.repeat(x[:, None], 3, axis=1)


def ctc_text(probs: np.ndarray, characters: list[str]) -> str:
    best, out, last = probs.argmax(-1), [], 0
    for index in best:
        if index != last and index != 0:
            out.append(characters[index] if index < len(characters) else "")
        last = index
    return "".join(out)


def ppocr(data, wheels: Path, rng) -> list[dict]:
    folder = next(wheels.rglob("rapidocr_onnxruntime/models"))
    lines, texts = data["line_x"], data["line_text"]
    calib_idx, eval_idx = np.arange(0, CALIB_COUNT), np.arange(200, 400)
    common = {"source": "rapidocr-onnxruntime 1.4.4 (PyPI), PaddleOCR's trained weights", "data_kind": "realistic", "data_domain": "rendered text"}
    flipped = lines[:, ::-1, ::-1]
    turn = rng.permutation(len(lines)) % 2  # half the lines upside down
    cls_x = ocr_normalise(np.where(turn[:, None, None] == 1, flipped, lines), 192)
    cls_model = folder / "ch_ppocr_mobile_v2.0_cls_infer.onnx"
    cls_top1 = top1_x(cls_model, cls_x[eval_idx], turn[eval_idx])
    rec_model = folder / "ch_PP-OCRv4_rec_infer.onnx"
    rec_x = ocr_normalise(lines, 320)
    characters = ["blank"] + onnx.load(str(rec_model)).metadata_props[0].value.splitlines() + [" "]
    read = run(rec_model, {"x": rec_x[eval_idx]})[0]
    exact = float(np.mean([ctc_text(p, characters) == t for p, t in zip(read, texts[eval_idx])]))
    print(f"ppocr_cls: float top-1 {cls_top1:.4f}; ppocr_rec: float exact-match {exact:.4f}", flush=True)
    return [
        write_case("ppocr_cls_mobile_v2", cls_model, {"x": cls_x[calib_idx]}, {"x": cls_x[eval_idx]}, turn[eval_idx], {
            **common, "task_output": "save_infer_model/scale_0.tmp_1", "metric": "top1", "float_metric": cls_top1,
            "build_options": ["--input-shape", "x=1x3x48x192"], "labels_are": "0 upright, 1 turned 180 degrees"}),
        write_case("ppocr_rec_v4", rec_model, {"x": rec_x[calib_idx]}, {"x": rec_x[eval_idx][:64]}, None, {
            **common, "task_output": "softmax_11.tmp_0", "metric": "fidelity", "float_metric": exact,
            "float_metric_name": "CTC exact match of the rendered strings (ONNX Runtime, 200 lines)",
            "build_options": ["--input-shape", "x=1x3x48x320"]}),
        ppocr_det(folder, data, common),
    ]


def top1_x(model: Path, x: np.ndarray, y: np.ndarray) -> float:
    return float((run(model, {"x": x})[0].argmax(1) == y).mean())


def ppocr_det(folder: Path, data, common: dict) -> dict:
    mean, std = np.array([0.485, 0.456, 0.406], np.float32), np.array([0.229, 0.224, 0.225], np.float32)
    pages = data["page_x"].astype(np.float32)[:, None] / 255
    x = ((np.repeat(pages, 3, axis=1) - mean[:, None, None]) / std[:, None, None]).astype(np.float32)
    model = folder / "ch_PP-OCRv4_det_infer.onnx"
    found = run(model, {"x": x[64:96]})[0][:, 0] > 0.3
    truth = data["page_mask"][64:96] > 0
    f1 = float(2 * (found & truth).sum() / (found.sum() + truth.sum()))
    print(f"ppocr_det: float text-pixel F1 {f1:.4f}", flush=True)
    return write_case("ppocr_det_v4", model, {"x": x[:64]}, {"x": x[64:96]}, None, {
        **common, "task_output": "sigmoid_0.tmp_0", "metric": "fidelity", "float_metric": f1,
        "float_metric_name": "text-pixel F1 of the probability map > 0.3 against the rendered text boxes (32 pages)",
        "build_options": ["--input-shape", "x=1x3x320x320"]})


def vad_samples(model: Path, clips: np.ndarray, spans: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each clip run through the float model chunk by chunk (512 new samples and 64 of context,
    the state carried), so every sample is a chunk with the state the model really had there;
    a chunk is speech when it overlaps the synthesised voice."""
    session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    chunks, states, labels = [], [], []
    for clip, (first, last) in zip(clips, spans):
        state, padded = np.zeros((2, 1, 128), np.float32), np.concatenate([np.zeros(64, np.float32), clip])
        for start in range(0, len(clip) - 511, 512):
            chunk = padded[start:start + 576][None]
            chunks.append(chunk[0]), states.append(state[:, 0]), labels.append(int(start <= last and start + 512 > first))
            state = session.run(None, {"input": chunk, "state": state})[1]
    return np.stack(chunks), np.stack(states, axis=1), np.array(labels, np.int64)[:, None]


def batch_first_state(model: Path, out: Path) -> Path:
    """The shipped model with its state input taken batch-first ([1, 2, 128]) through one
    Transpose: its own state is [2, 1, 128], batch on the second axis, and data files (edgedeploy's
    and every toolchain's calibration) stack samples on the first. Weights and nodes unchanged."""
    proto = onnx.load(str(model))
    state = next(i for i in proto.graph.input if i.name == "state")
    state.name = "state_batch_first"
    dims = state.type.tensor_type.shape.dim
    dims[0].dim_value, dims[1].dim_value = 1, 2
    proto.graph.node.insert(0, onnx.helper.make_node("Transpose", ["state_batch_first"], ["state"], perm=[1, 0, 2], name="state_to_model_layout"))
    onnx.save(proto, str(out))
    return out


def silero(data, wheels: Path) -> dict:
    shipped = next(wheels.rglob("silero_vad_openvino_16k.onnx"))
    calib_x, calib_s, _ = vad_samples(shipped, data["speech_train_audio"][::90][:4], data["speech_train_span"][::90][:4])
    eval_x, eval_s, labels = vad_samples(shipped, data["speech_eval_audio"][::30][:12], data["speech_eval_span"][::30][:12])
    model = batch_first_state(shipped, HOME / "silero_batch_first.tmp.onnx")
    feeds = {"input": eval_x, "state_batch_first": np.moveaxis(eval_s, 1, 0)}
    probs = run(model, feeds)[0]
    accuracy = float(((probs[:, 0] > 0.5) == labels[:, 0]).mean())
    print(f"silero_vad: float chunk accuracy {accuracy:.4f} on {len(labels)} chunks ({labels.mean():.2f} speech)", flush=True)
    return write_case("silero_vad_16k", model, {"input": calib_x, "state_batch_first": np.moveaxis(calib_s, 1, 0)}, feeds, labels, {
        "source": "silero-vad 6.2.3 (PyPI), silero_vad_openvino_16k.onnx, its state input taken batch-first by one added Transpose", "data_kind": "realistic",
        "data_domain": "speech synthesised by espeak-ng in noise", "task_output": "output", "metric": "auroc",
        "float_metric": accuracy, "float_metric_name": "chunk accuracy at 0.5 (ONNX Runtime)",
        "build_options": ["--metric", "auroc"],
        **({"speech_engine": str(data["speech_engine"])} if "speech_engine" in data else {})})


# The models whose files draw nothing from make_set's seeded stream, so that one can be remade
# alone (e.g. after new speech data) and come out as the whole run would make it.
REMADE_ALONE = {"silero_vad_16k": silero}


def remake_alone(names: list[str], data, wheels: Path) -> None:
    """Remake only these models' files and their manifest entries; the other entries are kept."""
    unknown = [n for n in names if n not in REMADE_ALONE]
    if unknown:
        sys.exit(f"make_set: --only takes {', '.join(REMADE_ALONE)} (models that draw nothing from the seeded stream), not {', '.join(unknown)}")
    manifest = json.loads(MANIFEST.read_text())
    for name in names:
        entry, old = REMADE_ALONE[name](data, wheels), next((m for m in manifest["models"] if m["name"] == name), {})
        # A file that comes out different keeps its earlier sha256 beside the new one: figures
        # measured on the earlier files (docs/accuracy.md) stay traceable to them.
        earlier = {part: old[part]["sha256"] for part in ("model", "calib", "eval") if part in old and old[part]["sha256"] != entry[part]["sha256"]}
        earlier.update(old.get("earlier_sha256", {}))
        entry.update({"earlier_sha256": earlier} if earlier else {})
        manifest["models"] = [entry if m["name"] == name else m for m in manifest["models"]]
    MANIFEST.write_text(json.dumps(manifest, indent=1) + "\n")
    print(f"{len(names)} model(s) remade; manifest {MANIFEST}")


def main() -> None:
    args = sys.argv[1:]
    only = args[args.index("--only") + 1].split(",") if "--only" in args[:-1] else []
    args = [a for i, a in enumerate(args) if a != "--only" and (i == 0 or args[i - 1] != "--only")]
    if len(args) != 3:
        sys.exit(__doc__)
    data, weights, wheels = np.load(args[0]), Path(args[1]), Path(args[2])
    HOME.mkdir(parents=True, exist_ok=True)
    if only:
        return remake_alone(only, data, wheels)
    rng = np.random.default_rng(SEED)
    cards = json.loads((weights / "cards.json").read_text()) if (weights / "cards.json").exists() else {}
    models = trained_here(data, weights, cards, rng) + ppocr(data, wheels, rng) + [silero(data, wheels)]
    about = ("Models with trained weights and real or realistic inputs, for judging what int8 does to "
             "accuracy (docs/accuracy.md). Made by scripts/trained/{prepare_data,train,make_set}.py.")
    MANIFEST.write_text(json.dumps({"about": about, "models": models}, indent=1) + "\n")
    print(f"{len(models)} models; manifest {MANIFEST}")


if __name__ == "__main__":
    main()
