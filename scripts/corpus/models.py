"""The corpus models: hand-written architectures (MLPerf Tiny references, sequence models, a
transformer encoder, a two-output and an integer-input classifier) and wrappers around library
ones (torchvision, Ultralytics). Imported only by make_corpus.py, inside the corpus environment.

Every architecture here is rebuilt from its published definition; nothing is downloaded.
"""

from __future__ import annotations

import math

import torch
from torch import nn
import torch.nn.functional as F


# --- MLPerf Tiny reference architectures (mlcommons/tiny, benchmark/training/*) -----------------


class ResNet8(nn.Module):
    """MLPerf Tiny image classification: ResNet-8 for CIFAR-10 (32x32x3, three residual stacks of
    16/32/64 filters, 1x1 projection shortcuts where the stride is 2, average pool, dense 10,
    softmax), as in the reference's keras_model.py `resnet_v1_eembc`."""

    def __init__(self, classes: int = 10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU())
        self.stacks = nn.ModuleList()
        c_in = 16
        for c_out, stride in ((16, 1), (32, 2), (64, 2)):
            self.stacks.append(_ResBlock(c_in, c_out, stride))
            c_in = c_out
        self.fc = nn.Linear(64, classes)

    def forward(self, x):
        x = self.stem(x)
        for block in self.stacks:
            x = block(x)
        x = F.avg_pool2d(x, x.shape[-1])  # the reference's AveragePooling2D(pool_size=8)
        return torch.softmax(self.fc(torch.flatten(x, 1)), dim=1)


class _ResBlock(nn.Module):
    def __init__(self, c_in, c_out, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride=stride, padding=1)
        self.bn1 = nn.BatchNorm2d(c_out)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(c_out)
        self.shortcut = nn.Conv2d(c_in, c_out, 1, stride=stride) if stride != 1 or c_in != c_out else None

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        s = x if self.shortcut is None else self.shortcut(x)
        return F.relu(y + s)


class DsCnnKws(nn.Module):
    """MLPerf Tiny keyword spotting: DS-CNN (small) on 49 MFCC frames x 10 coefficients: a 10x4/2
    convolution of 64 filters, four depthwise-separable blocks (3x3 depthwise + 1x1 pointwise, BN
    and ReLU after each), average pool, dense 12 with softmax (reference kws/keras_model.py)."""

    def __init__(self, classes: int = 12, filters: int = 64):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv2d(1, filters, (10, 4), stride=2, padding=(4, 1)), nn.BatchNorm2d(filters), nn.ReLU())
        blocks = []
        for _ in range(4):
            blocks += [
                nn.Conv2d(filters, filters, 3, padding=1, groups=filters), nn.BatchNorm2d(filters), nn.ReLU(),
                nn.Conv2d(filters, filters, 1), nn.BatchNorm2d(filters), nn.ReLU(),
            ]
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(filters, classes)

    def forward(self, x):
        x = self.blocks(self.conv(x))
        x = F.adaptive_avg_pool2d(x, 1)
        return torch.softmax(self.fc(torch.flatten(x, 1)), dim=1)


class MobileNetV1Vww(nn.Module):
    """MLPerf Tiny visual wake words: MobileNetV1 with width multiplier 0.25 on 96x96x3, two
    classes with softmax (reference vww/vww_model.py, `mobilenet_v1` alpha 0.25)."""

    # (output channels at width 1.0, stride) of the 13 depthwise-separable blocks
    BLOCKS = ((64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2)) + ((512, 1),) * 5 + ((1024, 2), (1024, 1))

    def __init__(self, alpha: float = 0.25, classes: int = 2):
        super().__init__()
        c = int(32 * alpha)
        layers = [nn.Conv2d(3, c, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(c), nn.ReLU()]
        for width, stride in self.BLOCKS:
            out = int(width * alpha)
            layers += [
                nn.Conv2d(c, c, 3, stride=stride, padding=1, groups=c, bias=False), nn.BatchNorm2d(c), nn.ReLU(),
                nn.Conv2d(c, out, 1, bias=False), nn.BatchNorm2d(out), nn.ReLU(),
            ]
            c = out
        self.features = nn.Sequential(*layers)
        self.fc = nn.Linear(c, classes)

    def forward(self, x):
        x = F.adaptive_avg_pool2d(self.features(x), 1)
        return torch.softmax(self.fc(torch.flatten(x, 1)), dim=1)


class AnomalyAutoencoder(nn.Module):
    """MLPerf Tiny anomaly detection: the dense autoencoder on 640 floats (5 frames x 128 log-mel
    bins): 640-128-128-128-128-8-128-128-128-128-640, BN and ReLU after every hidden dense layer
    (reference anomaly_detection/keras_model.py)."""

    def __init__(self, width: int = 640):
        super().__init__()
        sizes = [width, 128, 128, 128, 128, 8, 128, 128, 128, 128]
        layers = []
        for a, b in zip(sizes, sizes[1:]):
            layers += [nn.Linear(a, b), nn.BatchNorm1d(b), nn.ReLU()]
        layers.append(nn.Linear(128, width))
        self.net = nn.Sequential(*layers)

    def forward(self, x):
        return self.net(x)


# --- sequence and attention models -------------------------------------------------------------


class EncoderBlock(nn.Module):
    """One post-norm transformer encoder layer from torch.nn parts: multi-head self-attention
    (Linear q/k/v, scaled dot product, softmax), LayerNorm, feed-forward with exact GELU."""

    def __init__(self, dim: int, heads: int, ff: int):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.norm1 = nn.LayerNorm(dim)
        self.ff = nn.Sequential(nn.Linear(dim, ff), nn.GELU(approximate="none"), nn.Linear(ff, dim))
        self.norm2 = nn.LayerNorm(dim)

    def forward(self, x):
        b, t, d = x.shape
        h = self.heads
        q, k, v = self.qkv(x).reshape(b, t, 3, h, d // h).permute(2, 0, 3, 1, 4)
        attn = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(d // h), dim=-1)
        y = (attn @ v).transpose(1, 2).reshape(b, t, d)
        x = self.norm1(x + self.proj(y))
        return self.norm2(x + self.ff(x))


class TransformerClassifier(nn.Module):
    """A small transformer encoder over a sequence of feature vectors: two encoder blocks, mean
    pooling over time, a linear classifier."""

    def __init__(self, dim: int = 64, heads: int = 4, ff: int = 128, layers: int = 2, classes: int = 10):
        super().__init__()
        self.blocks = nn.Sequential(*[EncoderBlock(dim, heads, ff) for _ in range(layers)])
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        return self.head(self.blocks(x).mean(dim=1))


class GruClassifier(nn.Module):
    """A GRU over sensor frames (zero initial state, as most exports have it), the last hidden
    state into a linear classifier: activity recognition on 9 inertial channels."""

    def __init__(self, features: int = 9, hidden: int = 32, classes: int = 6):
        super().__init__()
        self.gru = nn.GRU(features, hidden, batch_first=True)
        self.fc = nn.Linear(hidden, classes)

    def forward(self, x):
        _, h = self.gru(x)
        return self.fc(h[-1])


class StatefulLstm(nn.Module):
    """A streaming LSTM with its state as explicit inputs and outputs (h0, c0 -> hn, cn), the way
    a keyword spotter or a sensor model runs chunk by chunk on a device; a per-step linear head."""

    def __init__(self, features: int = 8, hidden: int = 32, out: int = 4):
        super().__init__()
        self.lstm = nn.LSTM(features, hidden, batch_first=True)
        self.fc = nn.Linear(hidden, out)

    def forward(self, x, h0, c0):
        y, (hn, cn) = self.lstm(x, (h0, c0))
        return self.fc(y), hn, cn


class TwoOutputMnist(nn.Module):
    """A digit detector with two outputs: the digit's bounding box [x0, y0, x1, y1] (regression,
    FIRST output) and the class probabilities (softmax, SECOND output), the layout of the
    two-output models in issue 15."""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
        )
        self.box = nn.Sequential(nn.Flatten(), nn.Linear(32 * 7 * 7, 32), nn.ReLU(), nn.Linear(32, 4), nn.Sigmoid())
        self.cls = nn.Linear(32, 10)

    def forward(self, x):
        f = self.features(x)
        probs = torch.softmax(self.cls(F.adaptive_avg_pool2d(f, 1).flatten(1)), dim=1)
        return self.box(f), probs


class TokenClassifier(nn.Module):
    """Integer input: the 64 pixels of an 8x8 digit as token ids (intensity 0..16) into an
    Embedding (a Gather in ONNX) with a learned position embedding, then an MLP classifier."""

    def __init__(self, vocab: int = 17, length: int = 64, dim: int = 16, classes: int = 10):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.position = nn.Parameter(torch.zeros(1, length, dim))
        self.mlp = nn.Sequential(nn.Flatten(), nn.Linear(length * dim, 64), nn.ReLU(), nn.Linear(64, classes))

    def forward(self, tokens):
        return self.mlp(self.embed(tokens) + self.position)


# --- wrappers around torchvision models whose forward returns dicts or lists -------------------


class DictOutput(nn.Module):
    """A segmentation model's `out` tensor (torchvision returns an OrderedDict)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x)["out"]


class SsdHead(nn.Module):
    """SSDlite's backbone and head without the anchor generator and the data-dependent
    post-processing (score threshold, NMS): raw box regressions and class logits per anchor."""

    def __init__(self, ssd):
        super().__init__()
        self.backbone = ssd.backbone
        self.head = ssd.head

    def forward(self, x):
        features = list(self.backbone(x).values())
        out = self.head(features)
        return out["bbox_regression"], out["cls_logits"]
