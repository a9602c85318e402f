"""Build the two models of the backend comparison (docs/benchmarks.md) as ONNX and as torch.export programs.

    python scripts/gpu/make_bench_models.py OUTDIR [--models cnn_bilstm,densenet121]

- cnn_bilstm: a small audio-style classifier under 1M parameters: two Conv+BatchNorm+ReLU+
  MaxPool blocks over a [1, 40, 100] spectrogram, a projection, a bidirectional LSTM, a
  self-attention block with residual connection and LayerNorm, a feed-forward block with
  residual connection and LayerNorm, mean pooling over time, and a classifier. Benchmarked at
  batch 1, fp32: the tiny-model case where framework overhead dominates.
- densenet121: torchvision's DenseNet-121 with random weights (latency does not depend on the
  weights), benchmarked at batch 8 in fp16 (and fp32 on backends without fp16).

Weights are seeded (torch.manual_seed(0)), so the ONNX file and the .pt2 hold the same
function; each ONNX is exported with a dynamic batch axis, each .pt2 at the benchmark shape. Needs torch (and torchvision for
DenseNet-121): run it where those are installed (the GPU machine has both).
"""

from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path

import torch
from torch import nn

OPSET = 17


class CnnBiLstm(nn.Module):
    def __init__(self, mels: int = 40, classes: int = 10, width: int = 128, heads: int = 4) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        )
        self.project = nn.Linear(32 * (mels // 4), width)
        self.lstm = nn.LSTM(width, width // 2, batch_first=True, bidirectional=True)
        self.attention = nn.MultiheadAttention(width, heads, batch_first=True)
        self.norm1 = nn.LayerNorm(width)
        self.ffn = nn.Sequential(nn.Linear(width, 2 * width), nn.GELU(), nn.Linear(2 * width, width))
        self.norm2 = nn.LayerNorm(width)
        self.classifier = nn.Linear(width, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # x: [B, 1, mels, time]
        f = self.features(x)  # [B, 32, mels/4, time/4]
        b, c, m, t = f.shape
        seq = self.project(f.permute(0, 3, 1, 2).reshape(b, t, c * m))
        seq, _ = self.lstm(seq)
        attended, _ = self.attention(seq, seq, seq, need_weights=False)
        seq = self.norm1(seq + attended)
        seq = self.norm2(seq + self.ffn(seq))
        return self.classifier(seq.mean(dim=1))


def build(name: str) -> tuple[nn.Module, tuple[int, ...]]:
    torch.manual_seed(0)
    if name == "cnn_bilstm":
        return CnnBiLstm().eval(), (1, 1, 40, 100)
    if name == "densenet121":
        import torchvision

        return torchvision.models.densenet121(weights=None).eval(), (8, 3, 224, 224)
    raise SystemExit(f"unknown model {name}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("outdir", type=Path)
    parser.add_argument("--models", default="cnn_bilstm,densenet121")
    args = parser.parse_args()
    args.outdir.mkdir(parents=True, exist_ok=True)
    card = {}
    for name in args.models.split(","):
        model, shape = build(name)
        example = torch.randn(*shape)
        onnx_path = args.outdir / f"{name}.onnx"
        torch.onnx.export(
            model, (example,), str(onnx_path), input_names=["input"], output_names=["output"],
            dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}}, opset_version=OPSET, dynamo=False,
        )
        pt2_path = args.outdir / f"{name}.pt2"
        # The program is exported at the benchmark's own shape (torch.export specialises a batch
        # of 1 anyway); the ONNX keeps a dynamic batch for the other backends.
        program = torch.export.export(model, (example,))
        torch.export.save(program, str(pt2_path))
        params = sum(p.numel() for p in model.parameters())
        card[name] = {
            "parameters": params,
            "bench_input_shape": list(shape),
            "onnx": onnx_path.name,
            "onnx_sha256": hashlib.sha256(onnx_path.read_bytes()).hexdigest(),
            "pt2": pt2_path.name,
            "torch": torch.__version__,
        }
        print(f"{name}: {params} parameters -> {onnx_path}, {pt2_path}")
    (args.outdir / "models.json").write_text(json.dumps(card, indent=2) + "\n")


if __name__ == "__main__":
    main()
