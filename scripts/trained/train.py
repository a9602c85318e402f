"""Train the trained set's own models on the data prepare_data.py made (docs/accuracy.md).

Architectures from torchvision and small hand-written ones, trained for minutes on real MNIST
digits, rendered characters and synthesised speech; seeded. Runs on a GPU when one is there (the
committed models were trained on an NVIDIA H200 with torch 2.11), else on the CPU (slower).

    python scripts/trained/train.py train DATA.npz OUT_DIR [NAME...]   # weights: OUT_DIR/<name>.pt
    python scripts/trained/train.py export OUT_DIR                     # OUT_DIR/<name>.onnx

`train` writes each model's weights as a float16 state dict (small enough to bring back from a
GPU machine) and OUT_DIR/cards.json (data, epochs, held-out top-1 as torch computed it); `export`
loads them into float32 models and writes ONNX (opset 13, 17 for the transformer; dynamic batch)
with the corpus environment's torch, so every model of the set is exported by one exporter.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
import torchvision
from torch import nn

torch.manual_seed(0)
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def with_grey_stem(model: nn.Module, attr_path: str) -> nn.Module:
    """Swap the first 3-channel convolution for a 1-channel one (grey inputs)."""
    parent, name = model, attr_path.split(".")
    for part in name[:-1]:
        parent = getattr(parent, part) if not part.isdigit() else parent[int(part)]
    old = parent[int(name[-1])] if name[-1].isdigit() else getattr(parent, name[-1])
    new = nn.Conv2d(1, old.out_channels, old.kernel_size, old.stride, old.padding, bias=old.bias is not None)
    if name[-1].isdigit():
        parent[int(name[-1])] = new
    else:
        setattr(parent, name[-1], new)
    return model


class Attention(nn.Module):
    """Multi-head self-attention written out (Reshape/Transpose/MatMul/Softmax in the export)."""

    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.heads, self.qkv, self.proj = heads, nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)

    def forward(self, x):
        n, t, d = x.shape
        q, k, v = self.qkv(x).reshape(n, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        weights = torch.softmax(q @ k.transpose(-1, -2) / (d // self.heads) ** 0.5, dim=-1)
        return self.proj((weights @ v).transpose(1, 2).reshape(n, t, d))


class EncoderBlock(nn.Module):
    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.norm1, self.attn, self.norm2 = nn.LayerNorm(dim), Attention(dim, heads), nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.ReLU(), nn.Linear(2 * dim, dim))

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class PatchTransformer(nn.Module):
    """MNIST as 16 patches of 8x8 (padded to 32x32), two encoder blocks, mean-pooled."""

    def __init__(self, dim: int = 64, classes: int = 10):
        super().__init__()
        self.embed = nn.Linear(64, dim)
        self.pos = nn.Parameter(torch.zeros(1, 16, dim))
        self.blocks = nn.Sequential(EncoderBlock(dim, 4), EncoderBlock(dim, 4))
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        n = x.shape[0]
        patches = x.reshape(n, 4, 8, 4, 8).permute(0, 1, 3, 2, 4).reshape(n, 16, 64)
        return self.head(self.blocks(self.embed(patches) + self.pos).mean(dim=1))


class SpeechLstm(nn.Module):
    """Keyword spotting on 49x40 log-mel frames: standardise, LSTM(64), last step, Linear."""

    def __init__(self, mean: float, std: float, classes: int = 10):
        super().__init__()
        self.register_buffer("mean", torch.tensor(mean))
        self.register_buffer("std", torch.tensor(std))
        self.lstm, self.head = nn.LSTM(40, 64, batch_first=True), nn.Linear(64, classes)

    def forward(self, x):
        out, _ = self.lstm((x - self.mean) / self.std)
        return self.head(out[:, -1])


def image_models() -> dict:
    tv = torchvision.models
    return {
        "mnist_mobilenet_v2": ("mnist", lambda: with_grey_stem(tv.mobilenet_v2(num_classes=10), "features.0.0"), 30, 13),
        "mnist_mobilenet_v3_small": ("mnist", lambda: with_grey_stem(tv.mobilenet_v3_small(num_classes=10), "features.0.0"), 30, 13),
        "mnist_shufflenet_v2_x0_5": ("mnist", lambda: with_grey_stem(tv.shufflenet_v2_x0_5(num_classes=10), "conv1.0"), 30, 13),
        "glyph_resnet18": ("glyph", lambda: with_grey_stem(tv.resnet18(num_classes=36), "conv1"), 25, 13),
        "mnist_transformer": ("mnist", lambda: PatchTransformer(), 40, 17),
    }


def pixels(x: np.ndarray) -> torch.Tensor:
    """uint8 [N, H, W] to float [N, 1, 32, 32] in 0..1, 28x28 digits padded by 2."""
    t = torch.from_numpy(x).float().div(255).unsqueeze(1)
    return F.pad(t, (2, 2, 2, 2)) if t.shape[-1] == 28 else t


def augment(x: torch.Tensor) -> torch.Tensor:
    if x.dim() != 4:
        return x + 0.1 * torch.randn_like(x)
    dx, dy = np.random.randint(-2, 3, 2)
    return torch.roll(x, shifts=(int(dy), int(dx)), dims=(2, 3))


def fit(model: nn.Module, x: torch.Tensor, y: torch.Tensor, epochs: int) -> None:
    model.to(DEVICE).train()
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=1e-4)
    steps = epochs * ((len(x) + 127) // 128)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=4e-3, total_steps=steps)
    for _ in range(epochs):
        order = torch.randperm(len(x))
        for i in range(0, len(x), 128):
            idx = order[i:i + 128]
            loss = F.cross_entropy(model(augment(x[idx]).to(DEVICE)), y[idx].to(DEVICE), label_smoothing=0.05)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()


@torch.no_grad()
def top1(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    model.eval()
    logits = torch.cat([model(x[i:i + 256].to(DEVICE)).cpu() for i in range(0, len(x), 256)])
    return float((logits.argmax(1) == y).float().mean())


def export(model: nn.Module, example: torch.Tensor, path: Path, opset: int) -> None:
    model.cpu().eval()
    args = dict(input_names=["input"], output_names=["logits"], opset_version=opset,
                dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}})
    try:
        torch.onnx.export(model, example, str(path), dynamo=False, **args)
    except TypeError:
        torch.onnx.export(model, example, str(path), **args)


def train_one(name: str, spec, data, out: Path) -> dict:
    dataset, make, epochs, opset = spec
    started = time.time()
    x_train, y_train = data[dataset + "_train"]
    x_eval, y_eval = data[dataset + "_eval"]
    model = make()
    fit(model, x_train, y_train, epochs)
    accuracy = top1(model, x_eval, y_eval)
    torch.save({k: v.half() if v.is_floating_point() else v for k, v in model.state_dict().items()}, out / f"{name}.pt")
    print(f"{name}: held-out top-1 {accuracy:.4f} in {time.time() - started:.0f} s", flush=True)
    return {"data": dataset, "epochs": epochs, "opset": opset, "float_top1_torch": accuracy,
            "parameters": sum(p.numel() for p in model.parameters())}


def load(path: str) -> dict:
    raw = np.load(path)
    data = {}
    for split in ("train", "eval"):
        data[f"mnist_{split}"] = (pixels(raw[f"mnist_{split}_x"]), torch.from_numpy(raw[f"mnist_{split}_y"]))
        data[f"glyph_{split}"] = (pixels(raw[f"glyph_{split}_x"]), torch.from_numpy(raw[f"glyph_{split}_y"]))
        data[f"speech_{split}"] = (torch.from_numpy(raw[f"speech_{split}_x"]), torch.from_numpy(raw[f"speech_{split}_y"]))
    return data


def all_models(speech_mean: float, speech_std: float) -> dict:
    return {**image_models(), "speech_lstm": ("speech", lambda: SpeechLstm(speech_mean, speech_std), 60, 13)}


def train_all(data_path: str, out: Path, only: set[str]) -> None:
    data = load(data_path)
    out.mkdir(parents=True, exist_ok=True)
    feats = data["speech_train"][0]
    models = all_models(float(feats.mean()), float(feats.std()))
    cards = {name: train_one(name, spec, data, out) for name, spec in models.items() if not only or name in only}
    for card in cards.values():
        card["speech_mean_std"] = [float(feats.mean()), float(feats.std())]
    (out / "cards.json").write_text(json.dumps(cards, indent=2) + "\n")


def export_all(out: Path) -> None:
    cards = json.loads((out / "cards.json").read_text())
    for name, card in cards.items():
        dataset, make, _, opset = all_models(*card["speech_mean_std"])[name]
        model = make()
        state = torch.load(out / f"{name}.pt", map_location="cpu")
        model.load_state_dict({k: v.float() if v.is_floating_point() else v for k, v in state.items()})
        example = torch.zeros((1, 49, 40)) if dataset == "speech" else torch.zeros((1, 1, 32, 32))
        export(model, example, out / f"{name}.onnx", opset)
        print(f"{name}: exported", flush=True)


def main() -> None:
    if len(sys.argv) >= 4 and sys.argv[1] == "train":
        train_all(sys.argv[2], Path(sys.argv[3]), set(sys.argv[4:]))
    elif len(sys.argv) == 3 and sys.argv[1] == "export":
        export_all(Path(sys.argv[2]))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
