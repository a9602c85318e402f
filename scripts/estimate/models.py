"""Rebuild, from their public definitions, the models whose device latencies the vendors publish
(toolkit/estimate/data/published_figures.csv), at the published input size, as ONNX files.

Only the architecture matters for latency: weights are random (seeded), nothing is downloaded.
Writes one ONNX per model_key to ~/.cache/edgedeploy/estimate-models (not committed) and the
committed manifest toolkit/estimate/data/models_manifest.json: file, input shapes, opset, node
count, parameters, MACs (from `edgedeploy inspect`), sha256, how the model was built and whether
the rebuild is faithful to what the vendor measured. A model whose rebuild is not faithful stays
in the manifest with `faithful: false` and its reason, and the transcriber leaves its rows out of
the fit.

Runs in the corpus environment (torch, torchvision, ultralytics):
    ~/.cache/edgedeploy/envs/corpus/bin/python scripts/estimate/models.py [--only KEY,...]
        [--edgedeploy .venv/bin/edgedeploy]
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import onnx
import torch
from torch import nn

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))

import hand_models as H  # noqa: E402  (this folder)

# scripts/corpus last on the path: its models.py shares this file's name (see _load_corpus_models).
sys.path.append(str(ROOT / "scripts" / "corpus"))
from yolo_export import export_yolo  # noqa: E402  (scripts/corpus)


def _load_corpus_models():
    """scripts/corpus/models.py (the MLPerf Tiny references), by path: it shares this file's name."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("corpus_models", ROOT / "scripts" / "corpus" / "models.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


corpus_models = _load_corpus_models()

OUT_DIR = Path(os.environ.get("EDGEDEPLOY_ESTIMATE_MODELS", Path.home() / ".cache" / "edgedeploy" / "estimate-models"))
MANIFEST = ROOT / "toolkit" / "estimate" / "data" / "models_manifest.json"
OPSET = 13  # the opset every toolchain here accepts (scripts/corpus/make_corpus.py)


@dataclass
class Build:
    key: str
    make: object  # () -> nn.Module, or () -> onnx.ModelProto for Ultralytics' own export
    inputs: list  # [(name, shape, dtype)]
    how: str
    definition: str  # where the architecture is published
    faithful: bool = True
    fidelity_note: str = ""
    opset: int = OPSET
    extras: dict = field(default_factory=dict)


def image(h, w=None, c=3):
    return [("images", [1, c, h, w or h], "float32")]


# --- Ultralytics: YOLO families from the package's own yaml ----------------------------------


def _with_default_act(build):
    """Ultralytics' parse_model sets Conv.default_act for the whole process when a yaml names an
    activation (the ReLU YOLOv5): restore it so the next model gets SiLU again."""
    from ultralytics.nn.modules import Conv

    saved = Conv.default_act
    try:
        return build()
    finally:
        Conv.default_act = saved


def ultra_raw(yaml_name: str, task: str = "detect", relu: bool = False):
    """Backbone, neck and the head's convolutions with no box decoding: the form the vendors
    deploy (Rockchip's model zoo and Espressif's yolo11n tutorial move the decode to C code)."""

    def make():
        from ultralytics.nn.tasks import DetectionModel, OBBModel, PoseModel, SegmentationModel, yaml_model_load

        cfg = yaml_model_load(yaml_name)
        if relu:
            cfg["activation"] = "nn.ReLU()"
        cls = {"detect": DetectionModel, "segment": SegmentationModel, "pose": PoseModel, "obb": OBBModel}[task]
        return _with_default_act(lambda: H.RawYoloHead(cls(cfg, verbose=False)))

    return make


def ultra_v5_anchor(yaml_name: str, relu: bool = False, seg: bool = False):
    """YOLOv5 (v6.0+ layout, which Ultralytics' yolov5 yaml keeps for backbone and neck) with
    the original anchor-based head: one 1x1 convolution per scale to 3 x (5 + 80 [+ 32]) channels."""

    def make():
        from ultralytics.nn.tasks import DetectionModel, yaml_model_load

        cfg = yaml_model_load(yaml_name)
        if relu:
            cfg["activation"] = "nn.ReLU()"
        width = cfg["scales"][cfg["scale"]][1]
        return _with_default_act(lambda: H.YoloV5AnchorHead(DetectionModel(cfg, verbose=False), seg=seg, width=width))

    return make


def ultra_export(yaml_name: str, imgsz: int):
    """Ultralytics' own ONNX export (decoding head included), as NXP's model zoo exports yolov8n."""

    def make():
        return export_yolo(yaml_name, imgsz, OPSET)

    return make


ULTRA = "https://github.com/ultralytics/ultralytics/tree/main/ultralytics/cfg/models"
RAW_HOW = "Ultralytics {yaml} built from the package's yaml (random init); head convolutions' outputs taken raw, box decoding left out"
RK_HEAD_NOTE = "Rockchip's export adds a ReduceSum+Clip score-sum per scale (<0.1% of the MACs), not included"


def yolo_builds() -> list[Build]:
    b = []
    for s in "nsm":
        b.append(Build(f"yolov5{s}_640", ultra_v5_anchor(f"yolov5{s}.yaml"), image(640),
                       f"YOLOv5{s} v6-layout backbone/neck from Ultralytics' yolov5{s}.yaml, original anchor head (3 x 85 channels per scale, raw)",
                       "https://github.com/ultralytics/yolov5/blob/master/models/yolov5s.yaml (airockchip/yolov5 export: head convs raw)"))
        b.append(Build(f"yolov5{s}_seg_640", ultra_v5_anchor(f"yolov5{s}.yaml", seg=True), image(640),
                       f"YOLOv5{s}-seg: as yolov5{s}_640 with 3 x 117 channels per scale and the 32-mask prototype branch (nearest upsample)",
                       "https://github.com/ultralytics/yolov5/blob/master/models/segment/yolov5s-seg.yaml"))
    b.append(Build("yolov5s_relu_640", ultra_v5_anchor("yolov5s.yaml", relu=True), image(640),
                   "as yolov5s_640 with ReLU in place of SiLU (Rockchip's yolov5s_relu)", "https://github.com/airockchip/yolov5"))
    for fam, sizes in (("yolov8", "nsm"), ("yolo11", "nsm")):
        for s in sizes:
            b.append(Build(f"{fam}{s}_640", ultra_raw(f"{fam}{s}.yaml"), image(640), RAW_HOW.format(yaml=f"{fam}{s}.yaml"),
                           f"{ULTRA}/{fam[-2:] if fam == 'yolov8' else '11'}", fidelity_note=RK_HEAD_NOTE))
    for s in "nsm":
        b.append(Build(f"yolov8{s}_seg_640", ultra_raw(f"yolov8{s}-seg.yaml", "segment"), image(640),
                       RAW_HOW.format(yaml=f"yolov8{s}-seg.yaml") + "; mask prototype branch included", f"{ULTRA}/v8"))
    b += [
        Build("yolov8n_pose_640", ultra_raw("yolov8n-pose.yaml", "pose"), image(640), RAW_HOW.format(yaml="yolov8n-pose.yaml"), f"{ULTRA}/v8"),
        Build("yolov8n_obb_640", ultra_raw("yolov8n-obb.yaml", "obb"), image(640), RAW_HOW.format(yaml="yolov8n-obb.yaml"), f"{ULTRA}/v8"),
        Build("yolov10n_640", ultra_raw("yolov10n.yaml"), image(640), RAW_HOW.format(yaml="yolov10n.yaml") + " (one-to-one head)", f"{ULTRA}/v10"),
        Build("yolov10s_640", ultra_raw("yolov10s.yaml"), image(640), RAW_HOW.format(yaml="yolov10s.yaml") + " (one-to-one head)", f"{ULTRA}/v10"),
        Build("yolo11n_320", ultra_raw("yolo11n.yaml"), image(320), RAW_HOW.format(yaml="yolo11n.yaml") + " at 320x320", f"{ULTRA}/11"),
        Build("yolo11n_pose_640", ultra_raw("yolo11n-pose.yaml", "pose"), image(640), RAW_HOW.format(yaml="yolo11n-pose.yaml"), f"{ULTRA}/11"),
        Build("yolo11n_seg_640", ultra_raw("yolo11n-seg.yaml", "segment"), image(640), RAW_HOW.format(yaml="yolo11n-seg.yaml"), f"{ULTRA}/11"),
        Build("yolo26n_512", ultra_raw("yolo26n.yaml"), image(512), RAW_HOW.format(yaml="yolo26n.yaml") + " (one-to-one head, reg_max 1) at 512x512", f"{ULTRA}/26",
              fidelity_note="Espressif runs the box/class heads and neck exits in int16, the backbone in int8"),
        Build("yolo26n_640", ultra_raw("yolo26n.yaml"), image(640), RAW_HOW.format(yaml="yolo26n.yaml") + " (one-to-one head, reg_max 1)", f"{ULTRA}/26",
              fidelity_note="Espressif runs the box/class heads and neck exits in int16, the backbone in int8"),
        Build("yolov8n_640_decode", ultra_export("yolov8n.yaml", 640), image(640),
              "Ultralytics' own ONNX export of yolov8n.yaml (decoding head included), as NXP's yolov8n_full_integer_quant.tflite",
              f"{ULTRA}/v8"),
    ]
    return b


# --- torchvision and hand-written classifiers -------------------------------------------------


def tv(name, **kw):
    def make():
        import torchvision

        return getattr(torchvision.models, name)(weights=None, **kw)

    return make


TV = "https://github.com/pytorch/vision/tree/main/torchvision/models"


def classifier_builds() -> list[Build]:
    return [
        Build("mobilenet_v2_224", tv("mobilenet_v2"), image(224), "torchvision mobilenet_v2 (width 1.0)", f"{TV}/mobilenetv2.py"),
        Build("mobilenet_v2_050_128", tv("mobilenet_v2", width_mult=0.5), image(128), "torchvision mobilenet_v2, width_mult 0.5, at 128x128",
              f"{TV}/mobilenetv2.py",
              fidelity_note="1000-class classifier assumed; Espressif's hand-gesture head is smaller (the 1280x1000 dense is 4% of the MACs)"),
        Build("resnet50_v1_keras_224", H.resnet50_keras, image(224),
              "torchvision resnet50 with the stride moved from the 3x3 to the first 1x1 of each downsampling block (Keras ResNet50 v1)",
              "https://github.com/keras-team/keras/blob/master/keras/src/applications/resnet.py"),
        Build("resnet50_v2_224", H.ResNet50V2, image(224), "hand-written pre-activation ResNet-50 v2 (MXNet Gluon resnet50_v2, the ONNX model zoo's resnet50-v2-7)",
              "https://github.com/onnx/models/tree/main/validated/vision/classification/resnet"),
        Build("efficientnet_lite0_224", H.efficientnet_lite0, image(224),
              "torchvision efficientnet_b0 without squeeze-excitation and with ReLU6 for SiLU (EfficientNet-Lite0)",
              "https://github.com/tensorflow/tpu/tree/master/models/official/efficientnet/lite"),
        Build("mobilenet_v1_025_128", lambda: corpus_models.MobileNetV1Vww(alpha=0.25, classes=1001), image(128),
              "MobileNetV1 alpha 0.25, 1001 classes (scripts/corpus/models.py MobileNetV1Vww)",
              "https://github.com/tensorflow/models/blob/master/research/slim/nets/mobilenet_v1.md"),
        Build("mlperf_tiny_vww_mobilenet_v1_025_96", corpus_models.MobileNetV1Vww, image(96), "MLPerf Tiny VWW MobileNetV1 0.25 (scripts/corpus/models.py)",
              "https://github.com/mlcommons/tiny/tree/master/benchmark/training/visual_wake_words"),
        Build("mlperf_tiny_resnet8_32", corpus_models.ResNet8, image(32), "MLPerf Tiny ResNet-8 (scripts/corpus/models.py)",
              "https://github.com/mlcommons/tiny/tree/master/benchmark/training/image_classification"),
        Build("mlperf_tiny_dscnn_kws_49x10", corpus_models.DsCnnKws, [("mfcc", [1, 1, 49, 10], "float32")], "MLPerf Tiny DS-CNN (scripts/corpus/models.py)",
              "https://github.com/mlcommons/tiny/tree/master/benchmark/training/keyword_spotting"),
        Build("mlperf_tiny_autoencoder_640", corpus_models.AnomalyAutoencoder, [("features", [1, 640], "float32")],
              "MLPerf Tiny dense autoencoder (scripts/corpus/models.py)", "https://github.com/mlcommons/tiny/tree/master/benchmark/training/anomaly_detection"),
        Build("clip_vit_b32_image_224", H.ClipImage, image(224), "hand-written CLIP ViT-B/32 image encoder (12 layers, width 768, patch 32, quickGELU, 512-d projection)",
              "https://github.com/openai/CLIP/blob/main/clip/model.py"),
        Build("clip_text_20", H.ClipText, [("tokens", [1, 20], "int64")], "hand-written CLIP text encoder (12 layers, width 512, 8 heads, causal mask) on 20 tokens",
              "https://github.com/openai/CLIP/blob/main/clip/model.py",
              fidelity_note="the end-of-text feature is taken at a fixed position (Rockchip's export cannot know the argmax either)"),
    ]


# Published size of the architectures (parameters in millions, GFLOPs = 2 x GMACs at the listed
# input, where given), from the model's own documentation: the rebuild is checked against them
# (tests/test_published_figures.py) so a "faithful" claim rests on more than a name.
ULTRA_DOCS = "https://docs.ultralytics.com/models/"
NXP_TABLES = "https://github.com/NXP/eiq-model-zoo/tree/58c2b002e9f64f39b8c43e896e00446298544a33/tasks"
YOLOV5_TABLE = "https://github.com/ultralytics/yolov5#pretrained-checkpoints"


def _published_in(source: str, sizes: dict) -> dict:
    """{architecture: (parameters M, GFLOPs, source)} for the sizes one document publishes: its address said once."""
    return {key: (*size, source) for key, size in sizes.items()}


REFERENCES = {
    **_published_in(
        ULTRA_DOCS + "yolov8/",
        {"yolov8n_640": (3.2, 8.7), "yolov8s_640": (11.2, 28.6), "yolov8m_640": (25.9, 78.9), "yolov8n_640_decode": (3.2, 8.7),
         "yolov8n_seg_640": (3.4, 12.6), "yolov8s_seg_640": (11.8, 42.6), "yolov8m_seg_640": (27.3, 110.2),
         "yolov8n_pose_640": (3.3, 9.2)},
    ),
    **_published_in(ULTRA_DOCS + "yolov8/ (FLOPs published at 1024 only)", {"yolov8n_obb_640": (3.1, None)}),
    **_published_in(
        ULTRA_DOCS + "yolo11/",
        {"yolo11n_640": (2.6, 6.5), "yolo11s_640": (9.4, 21.5), "yolo11m_640": (20.1, 68.0), "yolo11n_seg_640": (2.9, 10.4),
         "yolo11n_pose_640": (2.9, 7.6)},
    ),
    **_published_in(ULTRA_DOCS + "yolov10/", {"yolov10n_640": (2.3, 6.7), "yolov10s_640": (7.2, 21.6)}),
    **_published_in(ULTRA_DOCS + "yolo26/", {"yolo26n_640": (2.4, 5.4)}),
    **_published_in(YOLOV5_TABLE, {"yolov5n_640": (1.9, 4.5), "yolov5s_640": (7.2, 16.5), "yolov5m_640": (21.2, 49.0)}),
    **_published_in(YOLOV5_TABLE + " (segmentation)", {"yolov5n_seg_640": (2.0, 7.1), "yolov5s_seg_640": (7.6, 26.4), "yolov5m_seg_640": (22.0, 70.8)}),
    **_published_in("https://github.com/Megvii-BaseDetection/YOLOX#benchmark", {"yolox_s_640": (9.0, 26.8), "yolox_m_640": (25.3, 73.8)}),
    **_published_in("https://github.com/meituan/YOLOv6#benchmark", {"yolov6n_640": (4.7, 11.4), "yolov6s_640": (18.5, 45.3)}),
    **_published_in("https://github.com/WongKinYiu/yolov7#performance", {"yolov7_tiny_640": (6.2, 13.8)}),
    **_published_in(
        "https://github.com/espressif/esp-dl/blob/12c0616de145b704e1149c474b9a1e852e631d67/models/human_face_recognition/README.md",
        {"mobilefacenet_112": (1.2, 0.46)},
    ),
    **_published_in(
        NXP_TABLES + "/vision/classification/README.md",
        {"mobilenet_v2_224": (3.539, 0.608), "efficientnet_lite0_224": (4.7, 0.814), "mobilenet_v1_025_128": (0.47, 0.028),
         "mlperf_tiny_resnet8_32": (0.078, 0.025), "mlperf_tiny_vww_mobilenet_v1_025_96": (0.221, 0.015), "deepface_emotion_48": (1.49, 0.0585)},
    ),
    **_published_in(NXP_TABLES + "/vision/classification/resnet/README.md", {"resnet50_v1_keras_224": (25.6, None)}),
    **_published_in(
        NXP_TABLES + "/vision/object-detection/README.md",
        {"ultraface_slim_240x320": (0.265, 0.168), "yolov4_tiny_416": (6.05, 6.9), "nanodet_m_050_320": (0.204, 0.158)},
    ),
    **_published_in(NXP_TABLES + "/vision/object-detection/ssdlite-mobilenetv2/README.md", {"ssdlite_mobilenet_v2_300": (4.3, 1.5)}),
    **_published_in(NXP_TABLES + "/vision/classification/MNasNet/README.md", {"mnasnet_a1_075_224": (2.9, 0.447)}),
    **_published_in(NXP_TABLES + "/vision/pose-estimation/README.md", {"whenet_224": (4.4, 0.781)}),
    **_published_in(NXP_TABLES + "/vision/face-recognition/README.md", {"facenet512_160": (23.0, 2.84)}),
    **_published_in(NXP_TABLES + "/misc/README.md", {"eegtcnet_22x1125": (0.004096, 0.014)}),
    **_published_in("https://arxiv.org/abs/2103.00020 (section 2.4: a 63M-parameter 12-layer 512-wide text transformer)", {"clip_text_20": (63.0, None)}),
}


def all_builds() -> dict[str, Build]:
    builds = yolo_builds() + classifier_builds() + H.extra_builds(Build, image)
    return {b.key: b for b in builds}


# --- export, inspect, manifest ----------------------------------------------------------------


def fold(model: onnx.ModelProto) -> onnx.ModelProto:
    """ONNX Runtime's basic offline optimisation: folds the Shape/Gather/Slice chains the
    TorchScript exporter leaves for tensor.chunk and x.shape (every input shape is fixed here),
    drops Identity nodes and folds BatchNormalization into the Conv before it, as every vendor
    converter does. Only ONNX-domain operators come out of this level."""
    import onnxruntime as ort

    with tempfile.TemporaryDirectory(prefix="estimate-fold-") as tmp:
        opts = ort.SessionOptions()
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        opts.optimized_model_filepath = str(Path(tmp) / "folded.onnx")
        ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
        folded = onnx.load(opts.optimized_model_filepath)
    foreign = {n.domain for n in folded.graph.node if n.domain not in ("", "ai.onnx")}
    if foreign:
        raise RuntimeError(f"folding produced operators of domain(s) {sorted(foreign)}")
    # ONNX Runtime declares every domain it knows (ai.onnx.training, com.microsoft, ...): keep ONNX's.
    keep = [o for o in folded.opset_import if o.domain in ("", "ai.onnx")]
    del folded.opset_import[:]
    folded.opset_import.extend(keep)
    return folded


def export(build: Build) -> onnx.ModelProto:
    torch.manual_seed(0)
    made = build.make()
    if isinstance(made, onnx.ModelProto):
        return fold(made)
    made.eval()
    args = tuple(torch.zeros(shape, dtype=getattr(torch, dtype)) if dtype != "float32" else torch.rand(shape) for _, shape, dtype in build.inputs)
    buf = io.BytesIO()
    with torch.no_grad():
        torch.onnx.export(made, args, buf, input_names=[n for n, _, _ in build.inputs], opset_version=build.opset,
                          do_constant_folding=True, dynamo=False)
    return fold(onnx.load_from_string(buf.getvalue()))


def inspect(edgedeploy: str | None, path: Path) -> dict:
    if not edgedeploy:
        return {}
    done = subprocess.run([edgedeploy, "inspect", str(path), "--format", "json"], capture_output=True, text=True)
    if done.returncode != 0:
        return {"inspect_error": done.stderr.strip()[-300:]}
    report = json.loads(done.stdout)
    return {"nodes": report.get("node_count"), "op_histogram": report.get("op_histogram"),
            "parameters": report.get("parameters", {}).get("count"), "macs": _mac_totals(report.get("macs"))}


def _mac_totals(macs: dict | None) -> dict | None:
    """The totals of inspect's MACs; the per-node list stays out of the committed manifest (the
    estimator computes its own per-node features from the ONNX files)."""
    if not macs:
        return macs
    return {k: macs[k] for k in ("known_total", "complete") if k in macs}


def build_one(build: Build, edgedeploy: str | None) -> dict:
    t0 = time.time()
    model = export(build)
    path = OUT_DIR / f"{build.key}.onnx"
    tmp = path.with_suffix(".tmp")
    onnx.save(model, tmp)
    tmp.replace(path)
    entry = {
        "file": path.name, "inputs": {n: s for n, s, _ in build.inputs}, "opset": build.opset,
        "sha256": hashlib.sha256(path.read_bytes()).hexdigest(), "built_by": build.how, "definition": build.definition,
        "faithful": build.faithful, "fidelity_note": build.fidelity_note,
    }
    entry.update(inspect(edgedeploy, path))
    print(f"{build.key}: {entry.get('nodes')} nodes, {time.time() - t0:.1f} s", flush=True)
    return entry


def with_published_size(models: dict) -> dict:
    """Every built entry gets its architecture's published size (REFERENCES), also on a partial run."""
    for key, entry in models.items():
        entry.pop("published_size", None)
        entry.pop("build_seconds", None)  # a timing, not a property of the model: it made every run a diff
        if entry.get("macs"):
            entry["macs"] = _mac_totals(entry["macs"])
        if entry.get("file") and key in REFERENCES:
            params_m, gflops, source = REFERENCES[key]
            entry["published_size"] = {"params_millions": params_m, "gflops": gflops, "source": source}
    return models


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="", help="comma-separated model_keys (default: all)")
    ap.add_argument("--edgedeploy", default=str(ROOT / ".venv" / "bin" / "edgedeploy"), help="CLI used for inspect (MACs)")
    args = ap.parse_args()
    builds = all_builds()
    wanted = [k for k in args.only.split(",") if k] or list(builds)
    unknown = [k for k in wanted if k not in builds]
    if unknown:
        print(f"models.py: unknown model_key(s): {', '.join(unknown)}", file=sys.stderr)
        return 2
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    manifest = json.loads(MANIFEST.read_text()) if MANIFEST.exists() else {}
    models = {k: v for k, v in manifest.get("models", {}).items() if v.get("file")}  # drop placeholders
    edgedeploy = args.edgedeploy if Path(args.edgedeploy).exists() else None
    for key in wanted:
        try:
            models[key] = build_one(builds[key], edgedeploy)
        except Exception as exc:  # noqa: BLE001 - one model failing must not lose the others
            models[key] = {"file": None, "faithful": False, "fidelity_note": f"build failed: {type(exc).__name__}: {exc}"[:300]}
            print(f"{key}: FAILED {exc}", file=sys.stderr, flush=True)
    out = {"_about": "model_key -> the model rebuilt by scripts/estimate/models.py from its public definition at the published input size "
                     "(random weights: only the architecture matters for latency). Files are under ~/.cache/edgedeploy/estimate-models, not committed.",
           "generator": {"torch": torch.__version__, "onnx": onnx.__version__, "ultralytics": _ultra_version()},
           "models": dict(sorted(with_published_size(models).items()))}
    tmp = MANIFEST.with_suffix(".tmp")
    tmp.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    tmp.replace(MANIFEST)
    return 0


def _ultra_version() -> str:
    try:
        import ultralytics

        return ultralytics.__version__
    except ImportError:
        return "absent"


if __name__ == "__main__":
    sys.exit(main())
