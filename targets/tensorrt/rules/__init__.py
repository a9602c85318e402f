"""TensorRT rule tables: the GPU per TensorRT version, and Orin's DLA with its fallback to the GPU.

Sources (facts transcribed; the documents are Apache-2.0):
- GPU, per TensorRT version: onnx/onnx-tensorrt docs/operators.md at release/8.5-GA (3b008c46),
  release/8.6-GA (6ba67d34), release/10.1-GA (96e78110) and the TensorRT 10.15 revision
  (shared/reference/tensorrt/onnx-tensorrt_operators_TRT*.md), via op_tables.py.
- DLA operators: NVIDIA/Deep-Learning-Accelerator-SW operators/README.md (ea61780e; Orin DLA
  3.12-3.14, TensorRT 8.5.2-8.6.12) and FAQ/README.md (precisions: FP16 and INT8 only).
- DLA layer limits: TensorRT's include/NvInfer.h, the "If executing this layer on DLA" notes,
  identical in v8.6.1 and v10.7.0 (NVIDIA/TensorRT, Apache-2.0), and NVIDIA's "DLA Supported
  Layers and Restrictions" page (docs.nvidia.com/deeplearning/tensorrt/latest/inference-library/
  dla-layer-restrictions.html: batch <= 4096, non-batch dimensions <= 8192, no dynamic
  dimensions, comparisons INT8 only).

Which table a chip gets (`rule_set(chip, trt_version=..., dla=...)`, listed by rule_set_variants()):
- trt_version "8.5" (JetPack 5.1.x), "8.6" (JetPack 6.0), "10.x" (JetPack 6.1/6.2 ship TensorRT
  10.3; the nearest document is 10.1), "10.15" (the newest document). Default "10.x".
- dla=False: every node on the GPU; an operator the importer lacks is UNSUPPORTED (the build fails).
- dla=True (Orin NX, AGX Orin; the Orin Nano has no DLA): the DLA is the accelerator and the GPU
  the fallback unit (trtexec --useDLACore=N --allowGPUFallback).

The package: documents.py (releases, chips, RULES, the registry every rule joins with the releases
and units it applies to), helpers.py, dla.py (the DLA's layer limits), gpu.py (the GPU tables'
restrictions); the operator tables themselves are op_tables.json, transcribed by
scripts/transcribe_tensorrt_ops.py. A chip's RuleSet takes its rules from RULES in the order they
are declared: the DLA's (where the DLA is the accelerator), then the GPU's.
"""

from __future__ import annotations

import importlib

from edgedeploy.audit.rules import Placement, RuleSet
from edgedeploy.errors import OptionError
from edgedeploy.targets.tensorrt import op_tables
from edgedeploy.targets.tensorrt.rules.documents import (
    DEFAULT_TRT_VERSION,
    DLA_CORES,
    RULES,
    TRT_DOCUMENT,
    TRT_VERSION_LABEL,
    normalize_trt_version,
)

__all__ = ["DEFAULT_TRT_VERSION", "DLA_CORES", "RULES", "normalize_trt_version", "rule_set", "rule_set_variants"]

# The rule modules, in the order the audit checks their rules: importing one registers its rules.
SECTIONS = ("dla", "gpu")
for _section in SECTIONS:
    importlib.import_module(f"{__name__}.{_section}")

from edgedeploy.targets.tensorrt.rules.dla import dla_op_support, dla_reconstruction_notes  # noqa: E402  (after the registration above)
from edgedeploy.targets.tensorrt.rules.gpu import gpu_op_support  # noqa: E402


def rule_set_variants(chip_id: str) -> list[dict]:
    """Every (trt_version, dla) variant the audit can ask rule_set() for on this chip, default first.

    Each entry: {"trt_version", "dla", "label", "default"}; pass trt_version and dla back to
    `Target.rule_set(chip_id, trt_version=..., dla=...)`. On chips with DLA the default is the
    DLA with GPU fallback (what `edgedeploy build` does); on the Orin Nano, the GPU.
    """
    has_dla = DLA_CORES.get(chip_id, 0) > 0
    variants = []
    for version in [DEFAULT_TRT_VERSION] + [v for v in TRT_DOCUMENT if v != DEFAULT_TRT_VERSION]:
        for dla in ([True, False] if has_dla else [False]):
            unit = "DLA with GPU fallback" if dla else "GPU"
            variants.append(
                {
                    "trt_version": version,
                    "dla": dla,
                    "label": f"{TRT_VERSION_LABEL[version]}, {unit}",
                    "default": version == DEFAULT_TRT_VERSION and dla == has_dla,
                }
            )
    return variants


def rule_set(chip_id: str, trt_version: str | None = DEFAULT_TRT_VERSION, dla: bool | None = None, **_options) -> RuleSet:
    """The RuleSet for one Jetson chip: GPU for a TensorRT version, or DLA with GPU fallback.

    dla=None picks the chip's default: the DLA where the chip has one (the build's default).
    """
    if chip_id not in DLA_CORES:
        raise OptionError(f"'{chip_id}' is not a Jetson Orin chip; TensorRT rules exist for {', '.join(DLA_CORES)}.")
    version = normalize_trt_version(trt_version)
    doc = TRT_DOCUMENT[version]
    has_dla = DLA_CORES[chip_id] > 0
    if dla is None:
        dla = has_dla
    if dla and not has_dla:
        raise OptionError(f"The {chip_id} has no DLA; audit or build it for the GPU (without --dla).")
    gpu_ops = gpu_op_support(version)
    min_opset, max_opset = op_tables.GPU_OPSETS[doc]
    unit = "dla" if dla else "gpu"
    rules, passes = RULES.rules_for(chip_id, release=version, unit=unit), RULES.passes_for(chip_id, release=version, unit=unit)
    notes = [
        f"GPU table: onnx-tensorrt operators.md for TensorRT {doc}; opsets {min_opset}..{max_opset}.",
        "Custom-domain operators need a TensorRT plugin on the device; without one the build fails.",
    ]
    if doc in ("10.1", "10.15"):
        notes.append("TensorRT 10 documents INT8 only as a quantized type: which layers run in INT8 shows in the build's layer information.")
    source_gpu = f"onnx/onnx-tensorrt docs/operators.md ({TRT_VERSION_LABEL[version]})"
    if not dla:
        return RuleSet(
            target="tensorrt",
            chip=chip_id,
            toolchain_version=TRT_VERSION_LABEL[version],
            source=source_gpu,
            accelerator_ops=gpu_ops,
            rules=rules,
            passes=passes,
            fallback_ops=frozenset(),  # no unit below the GPU: an op it lacks fails the build
            fallback_unit="GPU",
            units={Placement.ACCELERATOR: ("GPU", None), Placement.FLOAT: ("GPU", "float32"), Placement.FALLBACK: ("GPU", None)},
            min_opset=min_opset,
            max_opset=max_opset,
            notes=notes,
        )
    dla_ops = {op: s for op, s in dla_op_support(version).items() if op in gpu_ops}
    notes += [
        "DLA table: NVIDIA/Deep-Learning-Accelerator-SW operators/README.md (Orin, TensorRT 8.5.2-8.6.12); "
        "limits: TensorRT NvInfer.h DLA notes (8.6.1 = 10.7.0) and the DLA Supported Layers and Restrictions page.",
        "Ops marked 'Native (as of TensorRT 8.6.12)' (a DRIVE OS release) count only from TensorRT 10 on Jetson.",
        "DLA runs FP16 and INT8 only: an fp32 build places every layer on the GPU.",
        "Layers falling back to the GPU are not checked against the GPU's own limits in this table.",
    ]
    recon = dla_reconstruction_notes()
    if recon:
        notes.append("Reachable on DLA only when rewritten (README 'Reconstruction'): " + ", ".join(sorted(recon)) + ".")
    return RuleSet(
        target="tensorrt",
        chip=chip_id,
        toolchain_version=f"{TRT_VERSION_LABEL[version]}, DLA (GPU fallback)",
        source=f"{source_gpu}; NVIDIA/Deep-Learning-Accelerator-SW operators/README.md; TensorRT NvInfer.h DLA notes",
        accelerator_ops=dla_ops,
        rules=rules,
        passes=passes,
        fallback_ops=frozenset(gpu_ops),
        fallback_unit="GPU",
        units={Placement.ACCELERATOR: ("DLA", None), Placement.FLOAT: ("GPU", "float32"), Placement.FALLBACK: ("GPU", None)},
        min_opset=min_opset,
        max_opset=max_opset,
        notes=notes,
    )
