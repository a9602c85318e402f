"""A tiny trained transformer for the eIQ case of tests/test_recover.py: scikit-learn's real 8x8
handwritten digits (1797 images, shipped inside the package: nothing downloaded), each image's 8 rows
as 8 tokens, one encoder block (the trained set's EncoderBlock, scripts/trained/train.py) of width 32,
mean-pooled, trained for seconds on the CPU, seeded.

Writes digits_transformer.onnx (opset 17: LayerNormalization as one node), .calib.npz (64 training
images) and .eval.npz (the 180 held-out images with their labels) into the folder given.

    ~/.cache/edgedeploy/envs/corpus/bin/python scripts/trained/make_digits_transformer.py tests/fixtures/trained
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import torch
from sklearn.datasets import load_digits
from torch import nn

sys.path.insert(0, str(Path(__file__).parent))
from train import EncoderBlock, export  # noqa: E402 - the trained set's block and exporter

HELD_OUT = 180
CALIBRATION = 64


class RowTransformer(nn.Module):
    def __init__(self, dim: int = 32, classes: int = 10):
        super().__init__()
        self.embed = nn.Linear(8, dim)
        self.pos = nn.Parameter(torch.zeros(1, 8, dim))
        self.block = EncoderBlock(dim, 2)
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        rows = x.reshape(x.shape[0], 8, 8)  # the image's rows as tokens
        return self.head(self.block(self.embed(rows) + self.pos).mean(dim=1))


def main(out: Path) -> None:
    torch.manual_seed(0)
    torch.set_num_threads(1)  # a model this small gains nothing from threads, and a shared machine loses
    digits = load_digits()
    # One-channel images (N, 1, 8, 8), as the trained set's MNIST models take them: onnx2tf lays a
    # 3-D input out channels-last, which a (N, 8, 8) row sequence is not.
    x = (digits.images / 16.0).astype(np.float32)[:, None]
    y = digits.target.astype(np.int64)
    order = np.random.default_rng(0).permutation(len(x))
    train, held = order[HELD_OUT:], order[:HELD_OUT]
    model = RowTransformer()
    optimiser = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=1e-4)
    xt, yt = torch.from_numpy(x[train]), torch.from_numpy(y[train])
    for epoch in range(60):
        model.train()
        for batch in torch.randperm(len(xt)).split(64):
            optimiser.zero_grad()
            nn.functional.cross_entropy(model(xt[batch]), yt[batch]).backward()
            optimiser.step()
        if epoch % 10 == 9:
            print(f"epoch {epoch + 1}", flush=True)
    model.eval()
    with torch.no_grad():
        accuracy = float((model(torch.from_numpy(x[held])).argmax(1).numpy() == y[held]).mean())
    print(f"held-out top-1 (torch): {accuracy:.4f}")
    out.mkdir(parents=True, exist_ok=True)
    export(model, torch.from_numpy(x[:1]), out / "digits_transformer.onnx", 17)
    np.savez(out / "digits_transformer.calib.npz", input=x[train[:CALIBRATION]])
    np.savez(out / "digits_transformer.eval.npz", input=x[held], labels=y[held])


if __name__ == "__main__":
    main(Path(sys.argv[1]))
