"""Architectures for scripts/estimate/models.py that no library builds as the vendors measured
them: YOLO heads as deployed (raw convolutions, no decoding), pre-activation ResNet-50 v2, the
Keras ResNet-50 stride placement, EfficientNet-Lite0, CLIP's encoders and a few detectors.

Each is written here from the architecture its paper or reference repository publishes; only the
shapes and operators matter (weights are random), so the docstrings say what was followed.
"""

from __future__ import annotations

import math

import torch
from torch import nn
import torch.nn.functional as F


# --- YOLO heads as the vendors deploy them ----------------------------------------------------


def _run_to_head(layers, save, x):
    """Ultralytics' layer loop (BaseModel._predict_once) up to the head; returns the head inputs."""
    y = []
    for m in layers[:-1]:
        if m.f != -1:
            x = y[m.f] if isinstance(m.f, int) else [x if j == -1 else y[j] for j in m.f]
        x = m(x)
        y.append(x if m.i in save else None)
    head = layers[-1]
    return [x if j == -1 else y[j] for j in head.f]


class RawYoloHead(nn.Module):
    """An Ultralytics detection/segment/pose/OBB model whose outputs are the head convolutions'
    own outputs per scale (box, class [, mask coefficients | keypoints | angle], [prototypes]).
    One-to-one heads (YOLOv10, YOLO26) are used where the model has them, as at inference."""

    def __init__(self, model):
        super().__init__()
        self.layers = model.model
        self.save = set(model.save)
        head = model.model[-1]
        self.box = getattr(head, "one2one_cv2", None) or head.cv2
        self.cls = getattr(head, "one2one_cv3", None) or head.cv3
        self.extra = getattr(head, "one2one_cv4", None) or getattr(head, "cv4", None)
        self.proto = getattr(head, "proto", None)

    def forward(self, x):
        feats = _run_to_head(self.layers, self.save, x)
        outs = []
        for i, f in enumerate(feats):
            outs += [self.box[i](f), self.cls[i](f)]
            if self.extra is not None:
                outs.append(self.extra[i](f))
        if self.proto is not None:
            outs.append(self.proto(feats[0]))
        return tuple(outs)


class YoloV5AnchorHead(nn.Module):
    """YOLOv5 v6.x: the backbone and neck of Ultralytics' yolov5 yaml with the original anchor
    head, a 1x1 convolution per scale to 3 anchors x (5 + 80 classes [+ 32 masks]) channels and
    its sigmoid, the box decoding left out (airockchip/yolov5 exports it so: rknn_model_zoo's
    yolov5.py post-processing decodes the model's [1,255,80,80] outputs without a sigmoid). The -seg variant adds YOLOv5's Proto: 3x3 conv to
    npr = 256 x width channels, nearest 2x upsample, 3x3 conv, 1x1 conv to 32 prototypes."""

    def __init__(self, model, seg: bool = False, width: float = 1.0):
        super().__init__()
        from ultralytics.nn.modules import Conv

        self.layers = model.model
        self.save = set(model.save)
        head = model.model[-1]
        chans = [seq[0].conv.in_channels for seq in head.cv2]
        per_anchor = 5 + 80 + (32 if seg else 0)
        self.convs = nn.ModuleList(nn.Conv2d(c, 3 * per_anchor, 1) for c in chans)
        self.proto = None
        if seg:
            npr = int(math.ceil(256 * width / 8) * 8)
            self.proto = nn.Sequential(Conv(chans[0], npr, 3), nn.Upsample(scale_factor=2, mode="nearest"), Conv(npr, npr, 3), Conv(npr, 32, 1))

    def forward(self, x):
        feats = _run_to_head(self.layers, self.save, x)
        outs = [torch.sigmoid(conv(f)) for conv, f in zip(self.convs, feats)]
        if self.proto is not None:
            outs.append(self.proto(feats[0]))
        return tuple(outs)


# --- classifiers ---------------------------------------------------------------------------------


def resnet50_keras():
    """Keras ResNet50 (v1): the stride of a downsampling bottleneck is on its first 1x1
    convolution, where torchvision's ResNet-50 (v1.5) has it on the 3x3."""
    import torchvision

    model = torchvision.models.resnet50(weights=None)
    for stage in (model.layer2, model.layer3, model.layer4):
        block = stage[0]
        block.conv1.stride, block.conv2.stride = (2, 2), (1, 1)
    return model


class _BottleneckV2(nn.Module):
    """Gluon BottleneckV2: BN-ReLU before each of 1x1, 3x3 (strided), 1x1; the projection
    shortcut takes the first pre-activation."""

    def __init__(self, c_in, c_out, stride):
        super().__init__()
        mid = c_out // 4
        self.bn1, self.conv1 = nn.BatchNorm2d(c_in), nn.Conv2d(c_in, mid, 1, bias=False)
        self.bn2, self.conv2 = nn.BatchNorm2d(mid), nn.Conv2d(mid, mid, 3, stride, 1, bias=False)
        self.bn3, self.conv3 = nn.BatchNorm2d(mid), nn.Conv2d(mid, c_out, 1, bias=False)
        self.down = nn.Conv2d(c_in, c_out, 1, stride, bias=False) if stride != 1 or c_in != c_out else None

    def forward(self, x):
        act = F.relu(self.bn1(x))
        shortcut = x if self.down is None else self.down(act)
        y = self.conv1(act)
        y = self.conv2(F.relu(self.bn2(y)))
        y = self.conv3(F.relu(self.bn3(y)))
        return y + shortcut


class ResNet50V2(nn.Module):
    """Pre-activation ResNet-50 (He et al. 2016, "Identity Mappings"), in MXNet Gluon's layout,
    which the ONNX model zoo's resnet50-v2-7 was converted from: an input BatchNorm, 7x7/2 stem,
    BN-ReLU, 3x3/2 max pool, stages of 3/4/6/3 bottlenecks, final BN-ReLU, pool, dense 1000."""

    def __init__(self, classes: int = 1000):
        super().__init__()
        self.data_bn = nn.BatchNorm2d(3, affine=False)
        self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(3, 2, 1))
        blocks, c_in = [], 64
        for repeats, c_out, stride in ((3, 256, 1), (4, 512, 2), (6, 1024, 2), (3, 2048, 2)):
            for r in range(repeats):
                blocks.append(_BottleneckV2(c_in, c_out, stride if r == 0 else 1))
                c_in = c_out
        self.blocks = nn.Sequential(*blocks)
        self.final_bn = nn.BatchNorm2d(2048)
        self.fc = nn.Linear(2048, classes)

    def forward(self, x):
        x = self.blocks(self.stem(self.data_bn(x)))
        x = F.adaptive_avg_pool2d(F.relu(self.final_bn(x)), 1)
        return self.fc(torch.flatten(x, 1))


def efficientnet_lite0():
    """EfficientNet-Lite0 (tensorflow/tpu efficientnet/lite): EfficientNet-B0's blocks without
    squeeze-and-excitation and with ReLU6 in place of swish; stem and head widths as B0's."""
    import torchvision
    from torchvision.ops.misc import SqueezeExcitation

    model = torchvision.models.efficientnet_b0(weights=None)

    def strip(module):
        for name, child in module.named_children():
            if isinstance(child, SqueezeExcitation):
                setattr(module, name, nn.Identity())
            elif isinstance(child, nn.SiLU):
                setattr(module, name, nn.ReLU6())
            else:
                strip(child)

    strip(model)
    return model


# --- CLIP (openai/CLIP clip/model.py): ViT-B/32 image tower and the text tower ---------------------


class _QuickGELU(nn.Module):
    def forward(self, x):
        return x * torch.sigmoid(1.702 * x)


class _ClipBlock(nn.Module):
    """CLIP's ResidualAttentionBlock: pre-LayerNorm attention and a 4x MLP with quickGELU."""

    def __init__(self, width, heads, causal_len=0):
        super().__init__()
        self.heads = heads
        self.ln_1, self.ln_2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.qkv, self.out = nn.Linear(width, 3 * width), nn.Linear(width, width)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), _QuickGELU(), nn.Linear(4 * width, width))
        mask = torch.full((causal_len, causal_len), float("-inf")).triu(1) if causal_len else None
        self.register_buffer("mask", mask, persistent=False)

    def forward(self, x):
        b, t, d = x.shape
        h = self.heads
        q, k, v = self.qkv(self.ln_1(x)).reshape(b, t, 3, h, d // h).permute(2, 0, 3, 1, 4)
        scores = q @ k.transpose(-2, -1) / math.sqrt(d // h)
        if self.mask is not None:
            scores = scores + self.mask
        x = x + self.out((torch.softmax(scores, dim=-1) @ v).transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(self.ln_2(x))


class ClipImage(nn.Module):
    """CLIP ViT-B/32 image encoder: 32x32 patch convolution (no bias) to width 768, class token,
    positional embedding, ln_pre, 12 blocks of 12 heads, ln_post on the class token, 768->512."""

    def __init__(self, size=224, patch=32, width=768, layers=12, heads=12, dim=512):
        super().__init__()
        tokens = (size // patch) ** 2 + 1
        self.conv1 = nn.Conv2d(3, width, patch, patch, bias=False)
        self.cls = nn.Parameter(torch.randn(1, 1, width) * 0.02)
        self.pos = nn.Parameter(torch.randn(1, tokens, width) * 0.01)
        self.ln_pre, self.ln_post = nn.LayerNorm(width), nn.LayerNorm(width)
        self.blocks = nn.Sequential(*[_ClipBlock(width, heads) for _ in range(layers)])
        self.proj = nn.Linear(width, dim, bias=False)

    def forward(self, x):
        x = self.conv1(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1) + self.pos
        x = self.blocks(self.ln_pre(x))
        return self.proj(self.ln_post(x[:, 0]))


class ClipText(nn.Module):
    """CLIP text encoder (ViT-B/32 model): token embedding 49408x512, positional embedding, 12
    causal blocks of 8 heads, ln_final, the end-of-text feature projected 512->512."""

    def __init__(self, length=20, vocab=49408, width=512, layers=12, heads=8):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.pos = nn.Parameter(torch.randn(1, length, width) * 0.01)
        self.blocks = nn.Sequential(*[_ClipBlock(width, heads, causal_len=length) for _ in range(layers)])
        self.ln_final = nn.LayerNorm(width)
        self.proj = nn.Linear(width, width, bias=False)

    def forward(self, tokens):
        x = self.blocks(self.embed(tokens) + self.pos)
        return self.proj(self.ln_final(x)[:, -1])


# --- small models of NXP's and Espressif's zoos ----------------------------------------------------


class DeepfaceEmotion(nn.Module):
    """serengil/deepface's facial-expression model on 48x48 grey faces (Keras Sequential, 'valid'
    padding): conv 64 5x5, max pool 5/2, conv 64 3x3 x2, avg pool 3/2, conv 128 3x3 x2, avg pool
    3/2, flatten (128), dense 1024 x2, dense 7 with softmax; ReLU throughout."""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 64, 5), nn.ReLU(), nn.MaxPool2d(5, 2),
            nn.Conv2d(64, 64, 3), nn.ReLU(), nn.Conv2d(64, 64, 3), nn.ReLU(), nn.AvgPool2d(3, 2),
            nn.Conv2d(64, 128, 3), nn.ReLU(), nn.Conv2d(128, 128, 3), nn.ReLU(), nn.AvgPool2d(3, 2),
        )
        self.classifier = nn.Sequential(nn.Linear(128, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 7))

    def forward(self, x):
        return torch.softmax(self.classifier(torch.flatten(self.features(x), 1)), dim=1)


def _conv_bn(c_in, c_out, k=3, s=1, groups=1, act=nn.ReLU):
    layers = [nn.Conv2d(c_in, c_out, k, s, k // 2, groups=groups, bias=False), nn.BatchNorm2d(c_out)]
    return nn.Sequential(*layers, act()) if act else nn.Sequential(*layers)


def _dw_sep(c_in, c_out, s=1, act=nn.ReLU):
    """Depthwise 3x3 + BN + act, pointwise 1x1 + BN + act (MobileNetV1's unit)."""
    return nn.Sequential(_conv_bn(c_in, c_in, 3, s, groups=c_in, act=act), _conv_bn(c_in, c_out, 1, act=act))


class UltraFaceSlim(nn.Module):
    """Linzaer Ultra-Light-Fast-Generic-Face-Detector-1MB, version-slim at 320x240: a MobileNetV1-
    like body of depthwise-separable units (16..256 channels), four detection levels (strides 8,
    16, 32, 64) with separable regression and classification headers (3/2/2/3 priors), softmax
    on the scores. The prior-box decoding of the published ONNX is left out (elementwise)."""

    def __init__(self):
        super().__init__()
        self.body = nn.ModuleList([
            nn.Sequential(_conv_bn(3, 16, 3, 2), _dw_sep(16, 32), _dw_sep(32, 32, 2), _dw_sep(32, 32), _dw_sep(32, 64, 2),
                          _dw_sep(64, 64), _dw_sep(64, 64), _dw_sep(64, 64)),
            nn.Sequential(_dw_sep(64, 128, 2), _dw_sep(128, 128), _dw_sep(128, 128)),
            nn.Sequential(_dw_sep(128, 256, 2), _dw_sep(256, 256)),
            nn.Sequential(nn.Conv2d(256, 64, 1), nn.ReLU(), nn.Conv2d(64, 64, 3, 2, 1, groups=64), nn.ReLU(), nn.Conv2d(64, 256, 1), nn.ReLU()),
        ])
        chans, priors = (64, 128, 256, 256), (3, 2, 2, 3)

        def head(c, out, last):
            if last:
                return nn.Conv2d(c, out, 3, 1, 1)
            return nn.Sequential(nn.Conv2d(c, c, 3, 1, 1, groups=c), nn.ReLU(), nn.Conv2d(c, out, 1))

        self.reg = nn.ModuleList(head(c, p * 4, i == 3) for i, (c, p) in enumerate(zip(chans, priors)))
        self.cls = nn.ModuleList(head(c, p * 2, i == 3) for i, (c, p) in enumerate(zip(chans, priors)))

    def forward(self, x):
        scores, boxes = [], []
        for stage, reg, cls in zip(self.body, self.reg, self.cls):
            x = stage(x)
            boxes.append(reg(x).permute(0, 2, 3, 1).reshape(1, -1, 4))
            scores.append(cls(x).permute(0, 2, 3, 1).reshape(1, -1, 2))
        return torch.softmax(torch.cat(scores, 1), dim=2), torch.cat(boxes, 1)


def _leaky(c_in, c_out, k=3, s=1):
    return nn.Sequential(nn.Conv2d(c_in, c_out, k, s, k // 2, bias=False), nn.BatchNorm2d(c_out), nn.LeakyReLU(0.1))


class _TinyCsp(nn.Module):
    """yolov4-tiny.cfg's CSP block: 3x3 conv, route the second half of its channels through two
    3x3 convs, concat, 1x1 conv, concat with the first conv's output, 2x2 max pool."""

    def __init__(self, c):
        super().__init__()
        self.conv, self.a, self.b, self.mix = _leaky(c, c), _leaky(c // 2, c // 2), _leaky(c // 2, c // 2), _leaky(c, c, 1)
        self.pool = nn.MaxPool2d(2, 2)

    def forward(self, x):
        x = self.conv(x)
        a = self.a(x[:, x.shape[1] // 2:])
        mixed = self.mix(torch.cat([self.b(a), a], 1))
        return self.pool(torch.cat([x, mixed], 1)), mixed


class YoloV4Tiny(nn.Module):
    """AlexeyAB darknet yolov4-tiny.cfg at 416x416 (leaky ReLU 0.1): two stride-2 3x3 convs,
    three CSP blocks (64, 128, 256), 3x3 conv 512, 1x1 256, 3x3 512, 1x1 255 (13x13 head); 1x1
    128, 2x upsample, concat with the last CSP block's 1x1 output, 3x3 256, 1x1 255 (26x26 head).
    The yolo layers' decoding is left out."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(_leaky(3, 32, 3, 2), _leaky(32, 64, 3, 2))
        self.csp = nn.ModuleList([_TinyCsp(64), _TinyCsp(128), _TinyCsp(256)])
        self.conv5, self.neck = _leaky(512, 512), _leaky(512, 256, 1)
        self.head13 = nn.Sequential(_leaky(256, 512), nn.Conv2d(512, 255, 1))
        self.lateral = _leaky(256, 128, 1)
        self.head26 = nn.Sequential(_leaky(384, 256), nn.Conv2d(256, 255, 1))

    def forward(self, x):
        x = self.stem(x)
        for block in self.csp:
            x, route = block(x)
        p5 = self.neck(self.conv5(x))
        up = F.interpolate(self.lateral(p5), scale_factor=2.0, mode="nearest")
        return self.head13(p5), self.head26(torch.cat([up, route], 1))


# --- Rockchip's model zoo: RetinaFace and LPRNet ------------------------------------------------


def _cb(c_in, c_out, k=3, s=1, leaky=0.0, act=True):
    layers = [nn.Conv2d(c_in, c_out, k, s, k // 2, bias=False), nn.BatchNorm2d(c_out)]
    if act:
        layers.append(nn.LeakyReLU(leaky) if leaky else nn.ReLU())
    return nn.Sequential(*layers)


class _Ssh(nn.Module):
    """RetinaFace's context module: 3x3 (out/2) || 5x5 as two 3x3 (out/4) || 7x7 as three (out/4)."""

    def __init__(self, c_in, c_out, leaky):
        super().__init__()
        self.c3 = _cb(c_in, c_out // 2, act=False)
        self.c5_1, self.c5_2 = _cb(c_in, c_out // 4, leaky=leaky), _cb(c_out // 4, c_out // 4, act=False)
        self.c7_2, self.c7_3 = _cb(c_out // 4, c_out // 4, leaky=leaky), _cb(c_out // 4, c_out // 4, act=False)

    def forward(self, x):
        a = self.c5_1(x)
        b = self.c7_2(a)
        return F.relu(torch.cat([self.c3(x), self.c5_2(a), self.c7_3(b)], 1))


class RetinaFace(nn.Module):
    """biubug6/Pytorch_Retinaface at 320x320: a backbone's stride-8/16/32 features, an FPN (1x1
    lateral, nearest upsample + add, 3x3 merge), an SSH context module per level, and per level
    1x1 heads for 2 anchors (classes 2, boxes 4, landmarks 10), concatenated; softmax on the
    classes. mobilenet0.25: MobileNetV1 x0.25 with leaky ReLU 0.1, FPN width 64; resnet50:
    torchvision ResNet-50 layers 2-4, FPN width 256 (ReLU)."""

    def __init__(self, backbone: str):
        super().__init__()
        if backbone == "mobilenet0.25":
            lk = 0.1

            def dw(a, b, s=1):  # Pytorch_Retinaface's conv_dw: depthwise 3x3 and pointwise 1x1, BN, leaky ReLU 0.1
                return nn.Sequential(nn.Conv2d(a, a, 3, s, 1, groups=a, bias=False), nn.BatchNorm2d(a), nn.LeakyReLU(lk), _cb(a, b, 1, 1, lk))

            self.stages = nn.ModuleList([
                nn.Sequential(_cb(3, 8, 3, 2, lk), dw(8, 16), dw(16, 32, 2), dw(32, 32), dw(32, 64, 2), dw(64, 64)),
                nn.Sequential(dw(64, 128, 2), *[dw(128, 128) for _ in range(5)]),
                nn.Sequential(dw(128, 256, 2), dw(256, 256)),
            ])
            chans, width = (64, 128, 256), 64
        else:
            import torchvision

            r = torchvision.models.resnet50(weights=None)
            self.stages = nn.ModuleList([nn.Sequential(r.conv1, r.bn1, r.relu, r.maxpool, r.layer1, r.layer2), r.layer3, r.layer4])
            chans, width = (512, 1024, 2048), 256
        leaky = 0.1 if width <= 64 else 0.0
        self.lateral = nn.ModuleList(_cb(c, width, 1, 1, leaky) for c in chans)
        self.merge = nn.ModuleList(_cb(width, width, 3, 1, leaky) for _ in range(2))
        self.ssh = nn.ModuleList(_Ssh(width, width, leaky) for _ in range(3))
        self.cls = nn.ModuleList(nn.Conv2d(width, 2 * 2, 1) for _ in range(3))
        self.box = nn.ModuleList(nn.Conv2d(width, 2 * 4, 1) for _ in range(3))
        self.ldm = nn.ModuleList(nn.Conv2d(width, 2 * 10, 1) for _ in range(3))

    def forward(self, x):
        feats = []
        for stage in self.stages:
            x = stage(x)
            feats.append(x)
        p = [lat(f) for lat, f in zip(self.lateral, feats)]
        p[1] = self.merge[1](p[1] + F.interpolate(p[2], size=p[1].shape[-2:], mode="nearest"))
        p[0] = self.merge[0](p[0] + F.interpolate(p[1], size=p[0].shape[-2:], mode="nearest"))
        p = [ssh(f) for ssh, f in zip(self.ssh, p)]

        def flat(heads, n):
            return torch.cat([h(f).permute(0, 2, 3, 1).reshape(1, -1, n) for h, f in zip(heads, p)], 1)

        return flat(self.box, 4), torch.softmax(flat(self.cls, 2), dim=-1), flat(self.ldm, 10)


class _LprBlock(nn.Module):
    def __init__(self, c_in, c_out):
        super().__init__()
        m = c_out // 4
        self.body = nn.Sequential(nn.Conv2d(c_in, m, 1), nn.ReLU(), nn.Conv2d(m, m, (3, 1), padding=(1, 0)), nn.ReLU(),
                                  nn.Conv2d(m, m, (1, 3), padding=(0, 1)), nn.ReLU(), nn.Conv2d(m, c_out, 1))

    def forward(self, x):
        return self.body(x)


class LPRNet(nn.Module):
    """sirius-ai/LPRNet_Pytorch on 24x94 plates, 68 classes: small basic blocks (1x1, 3x1, 1x3, 1x1)
    with BN-ReLU, max pools over (channel, h, w) of kernel (1,3,3) and strides (1,1,1), (2,1,2),
    (4,1,2), a 1x4 conv to 256 and a 13x1 conv to the classes; four intermediate maps average-
    pooled to the final size, each divided by its mean square, concatenated, 1x1 conv, mean over H."""

    def __init__(self, classes: int = 68):
        super().__init__()
        self.backbone = nn.ModuleList([
            nn.Conv2d(3, 64, 3), nn.BatchNorm2d(64), nn.ReLU(),  # 2
            nn.MaxPool3d((1, 3, 3), (1, 1, 1)), _LprBlock(64, 128), nn.BatchNorm2d(128), nn.ReLU(),  # 6
            nn.MaxPool3d((1, 3, 3), (2, 1, 2)), _LprBlock(64, 256), nn.BatchNorm2d(256), nn.ReLU(),
            _LprBlock(256, 256), nn.BatchNorm2d(256), nn.ReLU(),  # 13
            nn.MaxPool3d((1, 3, 3), (4, 1, 2)), nn.Dropout(0.5), nn.Conv2d(64, 256, (1, 4)), nn.BatchNorm2d(256), nn.ReLU(),
            nn.Dropout(0.5), nn.Conv2d(256, classes, (13, 1)), nn.BatchNorm2d(classes), nn.ReLU(),  # 22
        ])
        self.container = nn.Conv2d(64 + 128 + 256 + classes, classes, 1)

    def forward(self, x):
        kept = []
        for i, layer in enumerate(self.backbone):
            x = layer(x.unsqueeze(1)).squeeze(1) if isinstance(layer, nn.MaxPool3d) else layer(x)
            if i in (2, 6, 13, 22):
                kept.append(x)
        ctx = []
        for i, f in enumerate(kept):
            if i < 2:
                f = F.avg_pool2d(f, 5, 5)
            elif i == 2:
                f = F.avg_pool2d(f, (4, 10), (4, 2))
            ctx.append(f / torch.mean(f * f))
        return torch.mean(self.container(torch.cat(ctx, 1)), dim=2)


class _MfnBottleneck(nn.Module):
    def __init__(self, c_in, c_out, s, t):
        super().__init__()
        m = c_in * t
        self.residual = s == 1 and c_in == c_out
        self.body = nn.Sequential(_conv_bn(c_in, m, 1, act=nn.PReLU), _conv_bn(m, m, 3, s, groups=m, act=nn.PReLU), _conv_bn(m, c_out, 1, act=None))

    def forward(self, x):
        return x + self.body(x) if self.residual else self.body(x)


class MobileFaceNet(nn.Module):
    """MobileFaceNet (Chen et al. 2018, table 1) on 112x112: 3x3/2 conv 64, depthwise 3x3 64,
    bottlenecks (t, c, n, s) = (2,64,5,2) (4,128,1,2) (2,128,6,1) (4,128,1,2) (2,128,2,1), 1x1 512,
    linear global depthwise 7x7, linear 1x1 to the embedding; PReLU. With a 512-d embedding
    (as InsightFace trains it) it has 1.2 M parameters, as Espressif's README states for mfn."""

    def __init__(self, embedding: int = 512):
        super().__init__()
        layers = [_conv_bn(3, 64, 3, 2, act=nn.PReLU), _conv_bn(64, 64, 3, 1, groups=64, act=nn.PReLU)]
        c = 64
        for t, c_out, n, s in ((2, 64, 5, 2), (4, 128, 1, 2), (2, 128, 6, 1), (4, 128, 1, 2), (2, 128, 2, 1)):
            for i in range(n):
                layers.append(_MfnBottleneck(c, c_out, s if i == 0 else 1, t))
                c = c_out
        gdc = nn.Sequential(nn.Conv2d(512, 512, 7, groups=512, bias=False), nn.BatchNorm2d(512))  # 'valid': 7x7 -> 1x1
        layers += [_conv_bn(c, 512, 1, act=nn.PReLU), gdc]
        self.features = nn.Sequential(*layers)
        self.embed = nn.Sequential(nn.Conv2d(512, embedding, 1, bias=False), nn.BatchNorm2d(embedding))

    def forward(self, x):
        return torch.flatten(self.embed(self.features(x)), 1)


# --- YOLOX and YOLOv7-tiny (Rockchip's model zoo) ---------------------------------------------------


def _silu_conv(c_in, c_out, k=1, s=1):
    """YOLOX BaseConv: conv without bias, BN, SiLU."""
    return nn.Sequential(nn.Conv2d(c_in, c_out, k, s, k // 2, bias=False), nn.BatchNorm2d(c_out), nn.SiLU())


class _XBottleneck(nn.Module):
    def __init__(self, c_in, c_out, shortcut):
        super().__init__()
        self.conv1, self.conv2 = _silu_conv(c_in, c_out, 1), _silu_conv(c_out, c_out, 3)
        self.add = shortcut and c_in == c_out

    def forward(self, x):
        y = self.conv2(self.conv1(x))
        return x + y if self.add else y


class _XCsp(nn.Module):
    """YOLOX CSPLayer: two 1x1 branches of out/2, n bottlenecks on one, concat, 1x1."""

    def __init__(self, c_in, c_out, n, shortcut=True):
        super().__init__()
        h = int(c_out * 0.5)
        self.conv1, self.conv2, self.conv3 = _silu_conv(c_in, h), _silu_conv(c_in, h), _silu_conv(2 * h, c_out)
        self.m = nn.Sequential(*[_XBottleneck(h, h, shortcut) for _ in range(n)])

    def forward(self, x):
        return self.conv3(torch.cat([self.m(self.conv1(x)), self.conv2(x)], 1))


class _XSpp(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv1, self.conv2 = _silu_conv(c, c // 2), _silu_conv(c // 2 * 4, c)
        self.pools = nn.ModuleList(nn.MaxPool2d(k, 1, k // 2) for k in (5, 9, 13))

    def forward(self, x):
        x = self.conv1(x)
        return self.conv2(torch.cat([x] + [p(x) for p in self.pools], 1))


class YoloX(nn.Module):
    """Megvii YOLOX (yolox/models: darknet.py CSPDarknet, yolo_pafpn.py, yolo_head.py) at 640x640:
    Focus stem (space-to-depth + 3x3), CSP stages of 3/9/9/3 x depth bottlenecks, SPP (5, 9, 13) in
    the last stage, PAFPN, and a decoupled head per level (1x1 stem to 256 x width, two 3x3 convs
    each for classes and boxes, 1x1 predictions). Outputs per level cat(box, sigmoid(obj),
    sigmoid(cls)) with the grid decoding left out, as the deploy export keeps it outside."""

    def __init__(self, depth: float, width: float, classes: int = 80):
        super().__init__()
        b, d = int(64 * width), max(round(3 * depth), 1)
        self.stem = _silu_conv(12, b, 3)
        self.dark2 = nn.Sequential(_silu_conv(b, 2 * b, 3, 2), _XCsp(2 * b, 2 * b, d))
        self.dark3 = nn.Sequential(_silu_conv(2 * b, 4 * b, 3, 2), _XCsp(4 * b, 4 * b, 3 * d))
        self.dark4 = nn.Sequential(_silu_conv(4 * b, 8 * b, 3, 2), _XCsp(8 * b, 8 * b, 3 * d))
        self.dark5 = nn.Sequential(_silu_conv(8 * b, 16 * b, 3, 2), _XSpp(16 * b), _XCsp(16 * b, 16 * b, d, shortcut=False))
        c3, c4, c5 = int(256 * width), int(512 * width), int(1024 * width)
        n = round(3 * depth)
        self.lateral0, self.c3_p4 = _silu_conv(c5, c4), _XCsp(2 * c4, c4, n, False)
        self.reduce1, self.c3_p3 = _silu_conv(c4, c3), _XCsp(2 * c3, c3, n, False)
        self.bu2, self.c3_n3 = _silu_conv(c3, c3, 3, 2), _XCsp(2 * c3, c4, n, False)
        self.bu1, self.c3_n4 = _silu_conv(c4, c4, 3, 2), _XCsp(2 * c4, c5, n, False)
        hw = int(256 * width)
        self.heads = nn.ModuleList()
        for c in (c3, c4, c5):
            self.heads.append(nn.ModuleDict({
                "stem": _silu_conv(c, hw), "cls": nn.Sequential(_silu_conv(hw, hw, 3), _silu_conv(hw, hw, 3)),
                "reg": nn.Sequential(_silu_conv(hw, hw, 3), _silu_conv(hw, hw, 3)),
                "cls_pred": nn.Conv2d(hw, classes, 1), "reg_pred": nn.Conv2d(hw, 4, 1), "obj_pred": nn.Conv2d(hw, 1, 1)}))

    def forward(self, x):
        x = torch.cat([x[..., ::2, ::2], x[..., 1::2, ::2], x[..., ::2, 1::2], x[..., 1::2, 1::2]], 1)  # Focus
        x2 = self.dark3(self.dark2(self.stem(x)))
        x1 = self.dark4(x2)
        x0 = self.dark5(x1)
        up = lambda t: F.interpolate(t, scale_factor=2.0, mode="nearest")
        fpn0 = self.lateral0(x0)
        f0 = self.c3_p4(torch.cat([up(fpn0), x1], 1))
        fpn1 = self.reduce1(f0)
        pan2 = self.c3_p3(torch.cat([up(fpn1), x2], 1))
        pan1 = self.c3_n3(torch.cat([self.bu2(pan2), fpn1], 1))
        pan0 = self.c3_n4(torch.cat([self.bu1(pan1), fpn0], 1))
        outs = []
        for head, f in zip(self.heads, (pan2, pan1, pan0)):
            f = head["stem"](f)
            c, r = head["cls"](f), head["reg"](f)
            outs.append(torch.cat([head["reg_pred"](r), torch.sigmoid(head["obj_pred"](r)), torch.sigmoid(head["cls_pred"](c))], 1))
        return tuple(outs)


class _ElanTiny(nn.Module):
    """yolov7-tiny's ELAN block: two 1x1 branches of h, two 3x3 convs on the second, concat of
    the four, 1x1 to out (leaky ReLU 0.1 throughout)."""

    def __init__(self, c_in, h, c_out):
        super().__init__()
        self.a, self.b, self.c, self.d = _leaky(c_in, h, 1), _leaky(c_in, h, 1), _leaky(h, h), _leaky(h, h)
        self.out = _leaky(4 * h, c_out, 1)

    def forward(self, x):
        b = self.b(x)
        c = self.c(b)
        return self.out(torch.cat([self.d(c), c, b, self.a(x)], 1))


class YoloV7Tiny(nn.Module):
    """WongKinYiu yolov7 cfg/deploy/yolov7-tiny.yaml at 640x640: ELAN-tiny backbone (64/128/256/
    512), SPPCSPC-tiny (max pools 5, 9, 13), a top-down and bottom-up ELAN-tiny neck, 3x3 convs to
    128/256/512 and the 1x1 detection convolutions (3 x 85 channels per level), raw."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(_leaky(3, 32, 3, 2), _leaky(32, 64, 3, 2), _ElanTiny(64, 32, 64))
        self.p3 = nn.Sequential(nn.MaxPool2d(2, 2), _ElanTiny(64, 64, 128))
        self.p4 = nn.Sequential(nn.MaxPool2d(2, 2), _ElanTiny(128, 128, 256))
        self.p5 = nn.Sequential(nn.MaxPool2d(2, 2), _ElanTiny(256, 256, 512))
        self.spp_a, self.spp_b = _leaky(512, 256, 1), _leaky(512, 256, 1)
        self.spp_pools = nn.ModuleList(nn.MaxPool2d(k, 1, k // 2) for k in (5, 9, 13))
        self.spp_mix, self.spp_out = _leaky(1024, 256, 1), _leaky(512, 256, 1)
        self.td4_a, self.td4_lat, self.td4 = _leaky(256, 128, 1), _leaky(256, 128, 1), _ElanTiny(256, 64, 128)
        self.td3_a, self.td3_lat, self.td3 = _leaky(128, 64, 1), _leaky(128, 64, 1), _ElanTiny(128, 32, 64)
        self.bu4_down, self.bu4 = _leaky(64, 128, 3, 2), _ElanTiny(256, 64, 128)
        self.bu5_down, self.bu5 = _leaky(128, 256, 3, 2), _ElanTiny(512, 128, 256)
        self.outs = nn.ModuleList([_leaky(64, 128), _leaky(128, 256), _leaky(256, 512)])
        self.detect = nn.ModuleList(nn.Conv2d(c, 255, 1) for c in (128, 256, 512))

    def forward(self, x):
        up = lambda t: F.interpolate(t, scale_factor=2.0, mode="nearest")
        c3 = self.p3(self.stem(x))
        c4 = self.p4(c3)
        c5 = self.p5(c4)
        a = self.spp_a(c5)
        spp = self.spp_mix(torch.cat([p(a) for p in reversed(self.spp_pools)] + [a], 1))
        p5 = self.spp_out(torch.cat([spp, self.spp_b(c5)], 1))
        p4 = self.td4(torch.cat([up(self.td4_a(p5)), self.td4_lat(c4)], 1))
        p3 = self.td3(torch.cat([up(self.td3_a(p4)), self.td3_lat(c3)], 1))
        n4 = self.bu4(torch.cat([self.bu4_down(p3), p4], 1))
        n5 = self.bu5(torch.cat([self.bu5_down(n4), p5], 1))
        return tuple(det(conv(f)) for det, conv, f in zip(self.detect, self.outs, (p3, n4, n5)))


class WHENet(nn.Module):
    """WHENet (Zhou & Gregson 2020, Ascend-Research/HeadPoseEstimation-WHENet): EfficientNet-B0
    without its top on 224x224, global average pool, and three dense heads of yaw (120 bins),
    pitch and roll (66 bins each); torchvision's EfficientNet-B0 stands for Keras' here."""

    def __init__(self):
        super().__init__()
        import torchvision

        self.features = torchvision.models.efficientnet_b0(weights=None).features
        self.yaw, self.pitch, self.roll = nn.Linear(1280, 120), nn.Linear(1280, 66), nn.Linear(1280, 66)

    def forward(self, x):
        f = torch.flatten(F.adaptive_avg_pool2d(self.features(x), 1), 1)
        return self.yaw(f), self.pitch(f), self.roll(f)


def _relu6_conv(c_in, c_out, k=1, s=1, groups=1):
    return nn.Sequential(nn.Conv2d(c_in, c_out, k, s, k // 2, groups=groups, bias=False), nn.BatchNorm2d(c_out), nn.ReLU6())


class SsdLiteMobileNetV2(nn.Module):
    """TF1 detection zoo ssdlite_mobilenet_v2_coco at 300x300 (object_detection's
    ssd_mobilenet_v2_feature_extractor, use_depthwise): MobileNetV2's layer_15 expansion output
    (576 channels, 19x19) and layer_19 (1280, 10x10), four extra layers (1x1 to d/2, depthwise
    3x3/2, 1x1 to d for d = 512, 256, 256, 128), and per map a depthwise-separable box predictor
    (3, then 6 anchors; 4 box and 91 class channels). Outputs 1917 boxes and 1917 x 91 scores,
    undecoded, as NXP's model (decoding and NMS outside)."""

    def __init__(self):
        super().__init__()
        import torchvision

        f = torchvision.models.mobilenet_v2(weights=None).features
        self.to_layer15 = f[:14]
        self.expand15 = f[14].conv[0]  # the 1x1 expansion of block 15: 96 -> 576 channels at 19x19
        self.rest15 = nn.Sequential(*list(f[14].conv.children())[1:])
        self.to_layer19 = f[15:]
        extras, c = [], 1280
        for d in (512, 256, 256, 128):
            extras.append(nn.Sequential(_relu6_conv(c, d // 2), _relu6_conv(d // 2, d // 2, 3, 2, groups=d // 2), _relu6_conv(d // 2, d)))
            c = d
        self.extras = nn.ModuleList(extras)
        chans, anchors = (576, 1280, 512, 256, 256, 128), (3, 6, 6, 6, 6, 6)

        def head(ch, out):
            return nn.Sequential(_relu6_conv(ch, ch, 3, groups=ch), nn.Conv2d(ch, out, 1))

        self.box = nn.ModuleList(head(ch, a * 4) for ch, a in zip(chans, anchors))
        self.cls = nn.ModuleList(head(ch, a * 91) for ch, a in zip(chans, anchors))

    def forward(self, x):
        x = self.to_layer15(x)
        e15 = self.expand15(x)
        x = self.to_layer19(self.rest15(e15))
        maps = [e15, x]
        for extra in self.extras:
            x = extra(x)
            maps.append(x)
        boxes = torch.cat([b(m).permute(0, 2, 3, 1).reshape(1, -1, 4) for b, m in zip(self.box, maps)], 1)
        scores = torch.cat([c(m).permute(0, 2, 3, 1).reshape(1, -1, 91) for c, m in zip(self.cls, maps)], 1)
        return boxes, torch.sigmoid(scores)


class _SqueezeExcite(nn.Module):
    def __init__(self, c, reduced):
        super().__init__()
        self.reduce, self.expand = nn.Conv2d(c, reduced, 1), nn.Conv2d(reduced, c, 1)

    def forward(self, x):
        return x * torch.sigmoid(self.expand(F.relu(self.reduce(F.adaptive_avg_pool2d(x, 1)))))


class _MnasBlock(nn.Module):
    """MBConv: 1x1 expansion (t > 1), k x k depthwise, squeeze-excite on a quarter of the input
    filters where the block has one, linear 1x1 projection; residual when shapes allow."""

    def __init__(self, c_in, c_out, k, s, t, se):
        super().__init__()
        m = c_in * t
        layers = ([_conv_bn(c_in, m, 1)] if t != 1 else []) + [_conv_bn(m, m, k, s, groups=m)]
        if se:
            layers.append(_SqueezeExcite(m, max(1, int(c_in * 0.25))))
        layers.append(_conv_bn(m, c_out, 1, act=None))
        self.body = nn.Sequential(*layers)
        self.residual = s == 1 and c_in == c_out

    def forward(self, x):
        return x + self.body(x) if self.residual else self.body(x)


def _round_filters(filters, multiplier, divisor=8):
    """tensorflow/tpu mnasnet_model.round_filters."""
    new = max(divisor, int(filters * multiplier + divisor / 2) // divisor * divisor)
    return int(new + divisor if new < 0.9 * filters * multiplier else new)


class MnasNetA1(nn.Module):
    """MnasNet-A1 (Tan et al. 2019, fig. 7; tensorflow/tpu models/official/mnasnet) with depth
    multiplier 0.75 on 224x224: 3x3/2 stem, SepConv 16, MBConv6 k3 x2 (24), MBConv3 k5 SE x3 (40),
    MBConv6 k3 x4 (80), MBConv6 k3 SE x2 (112), MBConv6 k5 SE x3 (160), MBConv6 k3 (320), 1x1
    conv 1280 (not scaled), pool, dense 1000; ReLU. 2.91 M parameters and 447 MFLOPs, as NXP states."""

    BLOCKS = ((1, 3, 1, 16, 1, False), (6, 3, 2, 24, 2, False), (3, 5, 2, 40, 3, True), (6, 3, 2, 80, 4, False),
              (6, 3, 1, 112, 2, True), (6, 5, 2, 160, 3, True), (6, 3, 1, 320, 1, False))

    def __init__(self, multiplier: float = 0.75):
        super().__init__()
        c = _round_filters(32, multiplier)
        layers = [_conv_bn(3, c, 3, 2)]
        for t, k, s, c_out, n, se in self.BLOCKS:
            c_out = _round_filters(c_out, multiplier)
            for i in range(n):
                layers.append(_MnasBlock(c, c_out, k, s if i == 0 else 1, t, se))
                c = c_out
        self.features = nn.Sequential(*layers, _conv_bn(c, 1280, 1))
        self.fc = nn.Linear(1280, 1000)

    def forward(self, x):
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(self.features(x), 1), 1))


class NanoDetM05Coarse(nn.Module):
    """NanoDet-m-0.5x (RangiLyu/nanodet config nanodet-m-0.5x.yml) at 320x320 as NXP ships it,
    with only the coarsest output (stride 32) kept: ShuffleNetV2 0.5x stages 2-4 (48/96/192) with
    leaky ReLU, PAN without convolutions in the fusion (1x1 lateral convs to 96, bilinear 2x up
    and 0.5x down with adds), and the stride-32 head: two depthwise-separable 3x3 convs of 96
    with BN and leaky ReLU, a 1x1 conv to 80 scores + 32 box distribution values (undecoded)."""

    def __init__(self):
        super().__init__()
        import torchvision

        net = torchvision.models.shufflenet_v2_x0_5(weights=None)

        def leaky(module):
            for name, child in module.named_children():
                setattr(module, name, nn.LeakyReLU(0.1)) if isinstance(child, nn.ReLU) else leaky(child)

        leaky(net)
        self.stem, self.stages = nn.Sequential(net.conv1, net.maxpool), nn.ModuleList([net.stage2, net.stage3, net.stage4])
        self.laterals = nn.ModuleList(nn.Conv2d(c, 96, 1) for c in (48, 96, 192))
        dw = lambda: nn.Sequential(_conv_bn(96, 96, 3, groups=96, act=lambda: nn.LeakyReLU(0.1)), _conv_bn(96, 96, 1, act=lambda: nn.LeakyReLU(0.1)))
        self.head = nn.Sequential(dw(), dw(), nn.Conv2d(96, 80 + 32, 1))

    def forward(self, x):
        feats, x = [], self.stem(x)
        for stage in self.stages:
            x = stage(x)
            feats.append(x)
        lat = [conv(f) for conv, f in zip(self.laterals, feats)]
        resize = lambda t, s: F.interpolate(t, scale_factor=s, mode="bilinear", align_corners=False)
        lat[1] = lat[1] + resize(lat[2], 2.0)
        lat[0] = lat[0] + resize(lat[1], 2.0)
        p4 = lat[1] + resize(lat[0], 0.5)
        p5 = lat[2] + resize(p4, 0.5)
        out = self.head(p5)
        return torch.sigmoid(out[:, :80]), out[:, 80:]


def _bc(c_in, c_out, k, s=1, p=0):
    """Inception's BasicConv2d: conv without bias, BN, ReLU (k may be a (h, w) pair)."""
    return nn.Sequential(nn.Conv2d(c_in, c_out, k, s, p, bias=False), nn.BatchNorm2d(c_out), nn.ReLU())


class _ResBlock(nn.Module):
    """An Inception-ResNet block: parallel branches, concat, linear 1x1 up to the input width,
    scaled residual add, ReLU (none on the very last block)."""

    def __init__(self, branches, mixed, c, scale, relu=True):
        super().__init__()
        self.branches, self.up, self.scale, self.relu = nn.ModuleList(branches), nn.Conv2d(mixed, c, 1), scale, relu

    def forward(self, x):
        y = x + self.scale * self.up(torch.cat([b(x) for b in self.branches], 1))
        return F.relu(y) if self.relu else y


class _Parallel(nn.Module):
    def __init__(self, *branches):
        super().__init__()
        self.branches = nn.ModuleList(branches)

    def forward(self, x):
        return torch.cat([b(x) for b in self.branches], 1)


class InceptionResNetV1(nn.Module):
    """Inception-ResNet-v1 (Szegedy et al. 2016) as FaceNet uses it (davidsandberg/facenet,
    deepface's Facenet512) on 160x160: stem to 256 channels, 5 x Block35 (scale 0.17), reduction A
    (896), 10 x Block17 (0.10), reduction B (1792), 5 x Block8 (0.20) + a last Block8 without ReLU,
    global pool, a 1792->512 bottleneck with BN."""

    def __init__(self, embedding: int = 512):
        super().__init__()
        b35 = lambda: _ResBlock([_bc(256, 32, 1), nn.Sequential(_bc(256, 32, 1), _bc(32, 32, 3, p=1)),
                                 nn.Sequential(_bc(256, 32, 1), _bc(32, 32, 3, p=1), _bc(32, 32, 3, p=1))], 96, 256, 0.17)
        b17 = lambda: _ResBlock([_bc(896, 128, 1), nn.Sequential(_bc(896, 128, 1), _bc(128, 128, (1, 7), p=(0, 3)), _bc(128, 128, (7, 1), p=(3, 0)))],
                                256, 896, 0.10)
        b8 = lambda relu=True: _ResBlock([_bc(1792, 192, 1), nn.Sequential(_bc(1792, 192, 1), _bc(192, 192, (1, 3), p=(0, 1)), _bc(192, 192, (3, 1), p=(1, 0)))],
                                         384, 1792, 0.20, relu)
        self.features = nn.Sequential(
            _bc(3, 32, 3, 2), _bc(32, 32, 3), _bc(32, 64, 3, p=1), nn.MaxPool2d(3, 2), _bc(64, 80, 1), _bc(80, 192, 3), _bc(192, 256, 3, 2),
            *[b35() for _ in range(5)],
            _Parallel(_bc(256, 384, 3, 2), nn.Sequential(_bc(256, 192, 1), _bc(192, 192, 3, p=1), _bc(192, 256, 3, 2)), nn.MaxPool2d(3, 2)),
            *[b17() for _ in range(10)],
            _Parallel(nn.Sequential(_bc(896, 256, 1), _bc(256, 384, 3, 2)), nn.Sequential(_bc(896, 256, 1), _bc(256, 256, 3, 2)),
                      nn.Sequential(_bc(896, 256, 1), _bc(256, 256, 3, p=1), _bc(256, 256, 3, 2)), nn.MaxPool2d(3, 2)),
            *[b8() for _ in range(5)], b8(relu=False),
        )
        self.bottleneck = nn.Sequential(nn.Linear(1792, embedding, bias=False), nn.BatchNorm1d(embedding))

    def forward(self, x):
        return self.bottleneck(torch.flatten(F.adaptive_avg_pool2d(self.features(x), 1), 1))


class _CausalTcnBlock(nn.Module):
    """A TCN residual block: two dilated causal 1-D convs with BN and ELU, 1x1 shortcut where widths differ."""

    def __init__(self, c_in, c_out, k, dilation):
        super().__init__()
        self.pad = (k - 1) * dilation
        self.c1, self.b1 = nn.Conv1d(c_in, c_out, k, dilation=dilation), nn.BatchNorm1d(c_out)
        self.c2, self.b2 = nn.Conv1d(c_out, c_out, k, dilation=dilation), nn.BatchNorm1d(c_out)
        self.shortcut = nn.Conv1d(c_in, c_out, 1) if c_in != c_out else None

    def forward(self, x):
        y = F.elu(self.b1(self.c1(F.pad(x, (self.pad, 0)))))
        y = F.elu(self.b2(self.c2(F.pad(y, (self.pad, 0)))))
        return F.elu(y + (x if self.shortcut is None else self.shortcut(x)))


class EEGTCNet(nn.Module):
    """EEG-TCNet (Ingolfsson et al. 2020, iis-eth-zurich/eeg-tcnet) on 22 channels x 1125 samples:
    EEGNet (F1 = 8 temporal 1x32 filters, depthwise 22x1 spatial x2, ELU, avg pool 8, separable
    1x16 to 16, ELU, avg pool 8; Keras 'same' padding) and a TCN of two blocks (12 filters,
    kernel 4, dilations 1 and 2), dense 4 on the last step. 4,096 parameters, as NXP states."""

    def __init__(self, chans=22, classes=4):
        super().__init__()
        self.temporal = nn.Sequential(nn.ZeroPad2d((15, 16, 0, 0)), nn.Conv2d(1, 8, (1, 32), bias=False), nn.BatchNorm2d(8))
        self.spatial = nn.Sequential(nn.Conv2d(8, 16, (chans, 1), groups=8, bias=False), nn.BatchNorm2d(16), nn.ELU(), nn.AvgPool2d((1, 8)))
        self.separable = nn.Sequential(nn.ZeroPad2d((7, 8, 0, 0)), nn.Conv2d(16, 16, (1, 16), groups=16, bias=False), nn.Conv2d(16, 16, 1, bias=False),
                                       nn.BatchNorm2d(16), nn.ELU(), nn.AvgPool2d((1, 8)))
        self.tcn = nn.Sequential(_CausalTcnBlock(16, 12, 4, 1), _CausalTcnBlock(12, 12, 4, 2))
        self.fc = nn.Linear(12, classes)

    def forward(self, x):
        x = self.separable(self.spatial(self.temporal(x)))
        x = self.tcn(x.squeeze(2))
        return torch.softmax(self.fc(x[:, :, -1]), dim=1)


# --- YOLOv6 3.0 n/s (meituan/YOLOv6 configs/yolov6n.py, yolov6s.py), deploy form ---------------


def _simconv(c_in, c_out, k=1, s=1, act=nn.ReLU):
    """YOLOv6 SimConv (ConvBNSiLU with act=nn.SiLU): conv without bias, BN, activation."""
    return nn.Sequential(nn.Conv2d(c_in, c_out, k, s, k // 2, bias=False), nn.BatchNorm2d(c_out), act())


def _repvgg(c_in, c_out, s=1):
    """A RepVGGBlock after reparameterisation (deploy): one 3x3 conv with bias, ReLU."""
    return nn.Sequential(nn.Conv2d(c_in, c_out, 3, s, 1), nn.ReLU())


def _repblock(c_in, c_out, n):
    return nn.Sequential(_repvgg(c_in, c_out), *[_repvgg(c_out, c_out) for _ in range(n - 1)])


class _CspSppf(nn.Module):
    """YOLOv6 SimCSPSPPF: a 1x1 shortcut branch and a 1x1-3x3-1x1 branch through three chained
    5x5 max pools, concat, 1x1-3x3, concat with the shortcut, 1x1."""

    def __init__(self, c_in, c_out):
        super().__init__()
        c = int(c_out * 0.5)
        self.cv1, self.cv2, self.cv3, self.cv4 = _simconv(c_in, c), _simconv(c_in, c), _simconv(c, c, 3), _simconv(c, c)
        self.cv5, self.cv6, self.cv7 = _simconv(4 * c, c), _simconv(c, c, 3), _simconv(2 * c, c_out)
        self.pool = nn.MaxPool2d(5, 1, 2)

    def forward(self, x):
        x1 = self.cv4(self.cv3(self.cv1(x)))
        y1 = self.pool(x1)
        y2 = self.pool(y1)
        return self.cv7(torch.cat([self.cv2(x), self.cv6(self.cv5(torch.cat([x1, y1, y2, self.pool(y2)], 1)))], 1))


class _BiFusion(nn.Module):
    """YOLOv6 BiFusion: the coarser map up by a 2x2 transposed conv, the same-level map by 1x1,
    the finer map by 1x1 then 3x3/2, concat, 1x1."""

    def __init__(self, c_same, c_fine, c_out):
        super().__init__()
        self.cv1, self.cv2, self.cv3 = _simconv(c_same, c_out), _simconv(c_fine, c_out), _simconv(3 * c_out, c_out)
        self.up, self.down = nn.ConvTranspose2d(c_out, c_out, 2, 2), _simconv(c_out, c_out, 3, 2)

    def forward(self, coarse, same, fine):
        return self.cv3(torch.cat([self.up(coarse), self.cv1(same), self.down(self.cv2(fine))], 1))


class YoloV6(nn.Module):
    """YOLOv6 3.0 -n/-s at 640x640 in deploy form: EfficientRep backbone (RepVGG blocks, repeats
    1/6/12/18/6 x depth, SimCSPSPPF), RepBiFPAN neck using P2 (BiFusion, RepBlocks of 12 x depth),
    EffiDeHead per level (1x1 stem, 3x3 cls and reg convs with SiLU, 80 + 4 outputs, reg_max 0),
    left raw. Checked: 4.65 M / 11.3 GFLOPs (n) and 18.5 M / 45.0 GFLOPs (s), as published."""

    def __init__(self, depth: float, width: float):
        super().__init__()
        div8 = lambda c: int(math.ceil(c * width / 8) * 8)
        b = [div8(c) for c in (64, 128, 256, 512, 1024)]
        n = [div8(c) for c in (256, 128, 128, 256, 256, 512)]
        reps = [max(round(r * depth), 1) for r in (6, 12, 18, 6)]
        neck = max(round(12 * depth), 1)
        self.stem = _repvgg(3, b[0], 2)
        self.stages = nn.ModuleList([nn.Sequential(_repvgg(b[i], b[i + 1], 2), _repblock(b[i + 1], b[i + 1], reps[i])) for i in range(4)])
        self.stages[3].append(_CspSppf(b[4], b[4]))
        self.reduce0, self.bif0, self.rep_p4 = _simconv(b[4], n[0]), _BiFusion(b[3], b[2], n[0]), _repblock(n[0], n[0], neck)
        self.reduce1, self.bif1, self.rep_p3 = _simconv(n[0], n[1]), _BiFusion(b[2], b[1], n[1]), _repblock(n[1], n[1], neck)
        self.down2, self.rep_n3 = _simconv(n[1], n[2], 3, 2), _repblock(n[1] + n[2], n[3], neck)
        self.down1, self.rep_n4 = _simconv(n[3], n[4], 3, 2), _repblock(n[0] + n[4], n[5], neck)
        self.heads = nn.ModuleList(nn.ModuleDict({
            "stem": _simconv(c, c, act=nn.SiLU), "cls": _simconv(c, c, 3, act=nn.SiLU), "reg": _simconv(c, c, 3, act=nn.SiLU),
            "cls_pred": nn.Conv2d(c, 80, 1), "reg_pred": nn.Conv2d(c, 4, 1)}) for c in (n[1], n[3], n[5]))

    def forward(self, x):
        p2 = self.stages[0](self.stem(x))
        p3 = self.stages[1](p2)
        p4 = self.stages[2](p3)
        p5 = self.stages[3](p4)
        f0 = self.reduce0(p5)
        f1 = self.reduce1(self.rep_p4(self.bif0(f0, p4, p3)))
        pan2 = self.rep_p3(self.bif1(f1, p3, p2))
        pan1 = self.rep_n3(torch.cat([self.down2(pan2), f1], 1))
        pan0 = self.rep_n4(torch.cat([self.down1(pan1), f0], 1))
        outs = []
        for head, f in zip(self.heads, (pan2, pan1, pan0)):
            f = head["stem"](f)
            outs += [head["reg_pred"](head["reg"](f)), torch.sigmoid(head["cls_pred"](head["cls"](f)))]
        return tuple(outs)


def extra_builds(Build, image) -> list:
    """The hand-written detectors and small models, with where their architecture is published."""
    return [
        Build("deepface_emotion_48", DeepfaceEmotion, image(48, c=1), "hand-written deepface facial-expression CNN",
              "https://github.com/serengil/deepface/blob/master/deepface/models/demography/Emotion.py"),
        Build("ultraface_slim_240x320", UltraFaceSlim, image(240, 320), "hand-written Ultra-Light-Fast face detector, version-slim, 320x240",
              "https://github.com/Linzaer/Ultra-Light-Fast-Generic-Face-Detector-1MB/blob/master/vision/nn/mb_tiny.py",
              fidelity_note="prior-box decoding left out (elementwise, after the last convolutions)"),
        Build("yolov4_tiny_416", YoloV4Tiny, image(416), "hand-written darknet yolov4-tiny.cfg",
              "https://github.com/AlexeyAB/darknet/blob/master/cfg/yolov4-tiny.cfg",
              fidelity_note="yolo-layer decoding left out"),
        Build("retinaface_mobilenet025_320", lambda: RetinaFace("mobilenet0.25"), image(320), "hand-written RetinaFace, MobileNetV1 x0.25 backbone",
              "https://github.com/biubug6/Pytorch_Retinaface/blob/master/models/retinaface.py"),
        Build("retinaface_resnet50_320", lambda: RetinaFace("resnet50"), image(320), "hand-written RetinaFace, torchvision ResNet-50 backbone",
              "https://github.com/biubug6/Pytorch_Retinaface/blob/master/models/retinaface.py"),
        Build("lprnet_24x94", LPRNet, image(24, 94), "hand-written LPRNet (68 classes)",
              "https://github.com/sirius-ai/LPRNet_Pytorch/blob/master/model/LPRNet.py",
              fidelity_note="the 3-D max pools are exported as MaxPool on an unsqueezed 5-D tensor"),
        Build("yolox_s_640", lambda: YoloX(0.33, 0.50), image(640), "hand-written YOLOX-s (depth 0.33, width 0.50)",
              "https://github.com/Megvii-BaseDetection/YOLOX/tree/main/yolox/models",
              fidelity_note="grid decoding left out, as Rockchip's export (airockchip/YOLOX) keeps it outside the model"),
        Build("yolox_m_640", lambda: YoloX(0.67, 0.75), image(640), "hand-written YOLOX-m (depth 0.67, width 0.75)",
              "https://github.com/Megvii-BaseDetection/YOLOX/tree/main/yolox/models",
              fidelity_note="grid decoding left out, as Rockchip's export (airockchip/YOLOX) keeps it outside the model"),
        Build("yolov6n_640", lambda: YoloV6(0.33, 0.25), image(640), "hand-written YOLOv6 3.0 -n, deploy form (RepVGG blocks fused)",
              "https://github.com/meituan/YOLOv6/blob/main/configs/yolov6n.py", fidelity_note="box decoding left out"),
        Build("yolov6s_640", lambda: YoloV6(0.33, 0.50), image(640), "hand-written YOLOv6 3.0 -s, deploy form (RepVGG blocks fused)",
              "https://github.com/meituan/YOLOv6/blob/main/configs/yolov6s.py", fidelity_note="box decoding left out"),
        Build("yolov7_tiny_640", YoloV7Tiny, image(640), "hand-written yolov7-tiny (deploy yaml)",
              "https://github.com/WongKinYiu/yolov7/blob/main/cfg/deploy/yolov7-tiny.yaml"),
        Build("ssdlite_mobilenet_v2_300", SsdLiteMobileNetV2, image(300), "hand-written TF1 SSDLite MobileNetV2 (torchvision MobileNetV2 body)",
              "https://github.com/tensorflow/models/blob/master/research/object_detection/models/ssd_mobilenet_v2_feature_extractor.py",
              fidelity_note="box decoding and NMS outside the model, as in NXP's"),
        Build("mnasnet_a1_075_224", MnasNetA1, image(224), "hand-written MnasNet-A1, depth multiplier 0.75",
              "https://github.com/tensorflow/tpu/tree/master/models/official/mnasnet"),
        Build("nanodet_m_050_320", NanoDetM05Coarse, image(320), "hand-written NanoDet-m-0.5x with NXP's coarsest-stride-only head",
              "https://github.com/RangiLyu/nanodet/blob/main/config/legacy_v0.x_configs/nanodet-m-0.5x.yml",
              fidelity_note="NXP's README says only the stride-32 output is kept; the box distribution is left undecoded as in NXP's"),
        Build("facenet512_160", InceptionResNetV1, image(160), "hand-written Inception-ResNet-v1 with a 512-d embedding (FaceNet512)",
              "https://github.com/serengil/deepface/blob/master/deepface/models/facial_recognition/Facenet.py"),
        Build("eegtcnet_22x1125", EEGTCNet, [("eeg", [1, 1, 22, 1125], "float32")], "hand-written EEG-TCNet",
              "https://github.com/iis-eth-zurich/eeg-tcnet"),
        Build("whenet_224", WHENet, image(224), "hand-written WHENet head-pose net on torchvision's EfficientNet-B0",
              "https://github.com/Ascend-Research/HeadPoseEstimation-WHENet"),
        Build("mobilefacenet_112", MobileFaceNet, image(112), "hand-written MobileFaceNet, 512-d embedding",
              "https://arxiv.org/abs/1804.07573"),
    ]
