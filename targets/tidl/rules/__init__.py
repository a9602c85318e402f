"""TIDL's operator table: which ONNX nodes TI's C7x DSP + MMA runs, per SoC, and which stay on Arm.

Transcribed as facts (operator, limit, SoC) from TI's edgeai-tidl-tools documents, copied in
shared/reference/tidl/ (see SOURCES.md there for revisions):

  11.02  docs/operators.md, release 11.02 (commit 238cb8b0; Processor SDK 11.02.00.06)
         "Supported Operators", ONNX table (rows 1-61), validated with ONNX 1.14 / ORT 1.15 (opset 19)
  11.00  docs/supported_ops_rts_versions.md, tag 11_00_06_00 (file d64aaabb, 2025-05-21)
         "Operator Mapping (ONNX)" (rows 1-60), "Support for fused combinations (ONNX)",
         "Feature set comparison across devices"

The sentences are our own words for TI's limits; the numbers and SoC names are TI's. Where the two
releases differ, a rule names the release it belongs to (limits whose values changed are built once
per release, in releases.py), and `rule_set(tidl_version=...)` picks one.

Placement: TIDL compiles through ONNX Runtime. Nodes TIDL does not accept are left to ONNX
Runtime's CPU provider on the Arm Cortex-A cores (TI: "any unsupported operator will execute on
cortex-A Core as part of the corresponding runtime"), so a broken limit means FALLBACK, never
UNSUPPORTED: any operator ONNX Runtime knows still runs.

SoC names in TI's documents: TDA4VM = J721E = AM68PA; AM68A = J721S2; AM69A = J784S4; AM62A.
Limits TI states for "AM62A and AM67A" apply to our am62a; the TDA4VM/AM68PA limits to tda4vm.
Known gaps (stated, not guessed): fused patterns (GELU around Erf, LayerNorm around ReduceMean)
need the graph, which a per-node rule does not see, so those ops are predicted on the Arm cores;
Cast's "only at the network's inputs/outputs" and the QDQ-only and signedness limits of
QuantizeLinear/DequantizeLinear/MatMul are shown as notes, not checked.

The package: documents.py (releases, sources, SoC families, the operator lists, and RULES, the
registry every rule joins with the SoCs and releases it applies to), helpers.py (what the rules
read off a node), one module per family of operators (conv, pooling, elementwise, matmul,
normalization, layout, indexing, resize), and releases.py. A SoC's RuleSet takes the rules that
apply to it from RULES, in the order they are declared.
"""

from __future__ import annotations

import importlib

from edgedeploy.audit.rules import OpSupport, Placement, RuleSet
from edgedeploy.targets.tidl.rules.documents import (
    ACCELERATOR_OPS,
    AM62A_FAMILY,
    CHIPS,
    DEFAULT_TIDL_VERSION,
    PRECISIONS,
    RULES,
    SOURCES,
    TARGET_ID,
    TDA4VM_FAMILY,
    TIDL_VERSIONS,
)

__all__ = ["DEFAULT_TIDL_VERSION", "RULES", "TIDL_VERSIONS", "rule_set", "rule_set_variants"]

# The section modules, in the order the audit checks their rules: importing one registers its rules.
SECTIONS = ("conv", "pooling", "elementwise", "matmul", "normalization", "layout", "indexing", "resize", "releases")
for _section in SECTIONS:
    importlib.import_module(f"{__name__}.{_section}")


# Limits the documents state but a per-node rule cannot check; shown beside the operator.
OP_NOTES = {
    "Cast": "runs on the accelerator only at the network's inputs or outputs (not checked)",
    "QuantizeLinear": "accelerated only in ONNX QDQ models (not checked)",
    "DequantizeLinear": "accelerated only in ONNX QDQ models (not checked)",
    "MatMul": "a signed-input MatMul with an unsigned output is not supported (quantised models; not checked)",
    "Erf": "accelerated inside TIDL's GELU pattern only",
    "ReduceMean": "11.00: accelerated inside TIDL's LayerNorm pattern only",
    "GridSample": "nearest mode rounds differently from ONNX",
}
TDA4VM_NOTES = {
    "MatMul": "on TDA4VM a MatMul mixing signed and unsigned inputs is not supported (quantised models; not checked)",
}

# Limits that depend on the precision: TI lists 16-bit deconvolution as unsupported on AM62A/AM67A.
INT8_ONLY_ON_AM62A = frozenset({"ConvTranspose"})


def _op_support(op: str, chip: str) -> OpSupport:
    precisions = ("int8",) if (chip in AM62A_FAMILY and op in INT8_ONLY_ON_AM62A) else PRECISIONS
    note = (TDA4VM_NOTES.get(op) if chip in TDA4VM_FAMILY else None) or OP_NOTES.get(op, "")
    if op in INT8_ONLY_ON_AM62A and chip in AM62A_FAMILY:
        note = "16-bit deconvolution is not supported on AM62A"
    return OpSupport(precisions=precisions, note=note)


def chip_notes(chip: str, version: str) -> list[str]:
    notes = [
        f"Operators TIDL does not take run on the Arm cores through ONNX Runtime's CPU provider (TIDL {version}).",
        "TI validated this table with ONNX 1.14 / ONNX Runtime 1.15 (opset 19); newer opsets usually work but are not validated.",
        "Fused patterns (GELU around Erf, LayerNorm around ReduceMean, patch merging around strided Slice) are not recognised by the per-node audit.",
    ]
    if version == "11.00" and chip == "tda4vm":
        notes.append("TDA4VM (AM68PA) has no asymmetric per-channel quantisation (quantization_scale_type 4).")
    if version == "11.00" and chip in AM62A_FAMILY:
        notes.append("AM62A has no LUT-accelerated non-linear activations (Sigmoid, HardSigmoid, GELU, Tanh, Softmax, ELU): they run slower on the DSP.")
    return notes


def rule_set(chip_id: str, tidl_version: str = DEFAULT_TIDL_VERSION, **_options) -> RuleSet:
    """The TIDL rule set for one SoC (tda4vm, am62a, am68a, am69a) and TIDL release (11.02 or 11.00).

    Other options (meant for other targets' tables) are ignored.
    """
    if chip_id not in CHIPS:
        raise KeyError(f"TIDL has no rules for chip {chip_id!r}; known: {', '.join(CHIPS)}")
    version = str(tidl_version)
    if version not in TIDL_VERSIONS:
        from edgedeploy.errors import OptionError

        raise OptionError(f"TIDL rules exist for releases {', '.join(TIDL_VERSIONS)}, not {version}.")
    ops = {op: _op_support(op, chip_id) for op in sorted(ACCELERATOR_OPS[version])}
    return RuleSet(
        target=TARGET_ID,
        chip=chip_id,
        toolchain_version=f"TIDL {version}",
        source=SOURCES[version],
        accelerator_ops=ops,
        rules=RULES.rules_for(chip_id, release=version),
        passes=RULES.passes_for(chip_id, release=version),
        fallback_ops=None,  # ONNX Runtime's CPU provider on the Arm cores runs anything TIDL leaves
        fallback_unit="Arm Cortex-A (ONNX Runtime CPU)",
        units={
            Placement.ACCELERATOR: ("C7x DSP + MMA", None),
            Placement.FLOAT: ("Arm Cortex-A (ONNX Runtime CPU)", "float32"),
            Placement.FALLBACK: ("Arm Cortex-A (ONNX Runtime CPU)", "float32"),
        },
        notes=chip_notes(chip_id, version),
    )


def rule_set_variants(chip_id: str) -> list[dict]:
    """The releases `rule_set` has tables for, the default (11.02) first."""
    return [{"tidl_version": v, "label": f"TIDL {v}" + (", the default" if v == DEFAULT_TIDL_VERSION else ""), "default": v == DEFAULT_TIDL_VERSION} for v in TIDL_VERSIONS]
