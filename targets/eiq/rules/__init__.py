"""NXP eIQ rule tables: the i.MX 93 (Ethos-U65 through Vela) and the i.MX 8M Plus (VX delegate).

An ONNX model reaches these NPUs as a TFLite flatbuffer: onnx2tf turns each ONNX node into
TensorFlow operations, the TFLite converter lowers them to TFLite builtin operators and
quantises them to int8, and then
  * i.MX 93: Vela compiles the operators the Ethos-U65 supports into one NPU operator and leaves
    the rest for TFLite's CPU kernels on the Cortex-A55;
  * i.MX 8M Plus: the VX delegate takes the operators it supports at load time on the board;
    the rest run on the Cortex-A53 CPU.
So every rule below is about one of three things, each with its source:

1. Which TFLite operators onnx2tf makes of an ONNX node (ONNX_TO_TFLITE), and which ONNX forms
   it cannot convert at all. onnx2tf 1.29.24's "Supported layers" list (its README, shipped as
   the package METADATA) names the ONNX operators it implements; which TFLite operators come
   out, and which forms fail, was measured with onnx2tf 1.29.24 + tensorflow-cpu 2.19.0 on
   ONNX's backend node tests (scripts/eiq_node_agreement.py) and is marked "(measured)".
2. Which TFLite operators the int8 quantiser cannot quantise (TFLITE_FLOAT_ONLY): TF 2.19's
   converter keeps them in float32 between DEQUANTIZE/QUANTIZE (measured).
3. What the NPU takes:
   * i.MX 93, default: Vela 5.2.0, `vela --supported-ops-report` ("Ethos-U55 and Ethos-U65
     TFLite" tables) -- the Vela this tool runs. Option vela="3.10": NXP's fork of Vela 3.10.0
     in the BSP lf-6.6.3_1.0.0 (nxp-imx/ethos-u-vela SUPPORTED_OPS.md, file 8cb3c360), the
     compiler of the eIQ release for that BSP.
   * i.MX 8M Plus: the VX delegate's operator status (nxp-imx/tflite-vx-delegate-imx
     op_status.md, branch lf-6.6.3_1.0.0, file 10085b37), "yes" rows.
   Copies of these documents: shared/reference/nxp-eiq (see SOURCES.md there).

Placements: ACCELERATOR = on the NPU; FLOAT = kept in float32 (no int8 kernel; on the i.MX 93
that is the CPU); FALLBACK = TFLite's int8 CPU kernel on the Cortex-A; UNSUPPORTED = onnx2tf or
the int8 converter fails, or the operator would need TensorFlow's Flex delegate, which the
boards' TFLite runtime does not have.

The package: documents.py (releases, sources, the NPUs' operator lists, and RULES, the registry
every rule joins), passes.py (what onnx2tf does to the graph before it converts the nodes: the
lowering step that runs before the rules), onnx2tf.py (what onnx2tf makes of a node),
conversion.py (1. and 2.: rules on both chips), npu.py (3.: where the TFLite operators run). A chip's RuleSet takes the rules that
apply to it from RULES, in the order they are declared: the conversion rules, then the NPU's.
"""

from __future__ import annotations

import importlib

from edgedeploy.audit.rules import OpSupport, Placement, RuleSet
from edgedeploy.targets.eiq.rules.documents import (
    CHIPS,
    DEFAULT_RELEASE,
    NPU_TABLES,
    NXP_VELA_VERSION,
    ONNX2TF_VERSION,
    RULES,
    SOURCE_CONVERTER,
    SOURCE_NXP_VELA,
    SOURCE_VELA,
    SOURCE_VX,
    VELA_3_10_OPS,
    VELA_5_2_OPS,
    VELA_VERSION,
    VX_DELEGATE_OPS,
    VX_DELEGATE_RELEASE,
)
from edgedeploy.targets.eiq.rules.onnx2tf import TFLITE_FLOAT_ONLY, convertible_ops, tf_axis, tflite_ops

__all__ = ["RULES", "rule_set", "rule_set_variants", "tf_axis", "VELA_3_10_OPS", "VELA_5_2_OPS", "VX_DELEGATE_OPS", "VX_DELEGATE_RELEASE"]

# The rule modules, in the order the audit checks their rules: importing one registers its rules.
SECTIONS = ("passes", "conversion", "npu")
for _section in SECTIONS:
    importlib.import_module(f"{__name__}.{_section}")


def _notes(chip_id: str) -> list[str]:
    notes = [
        "onnx2tf converts NCHW models to NHWC: axes in rules are the converted (channels-last) axes.",
        "Layout TRANSPOSE/RESHAPE operators onnx2tf inserts run where the node they belong to runs.",
        "Rules marked measured come from converting ONNX's backend node tests with onnx2tf 1.29.24 and tensorflow-cpu 2.19.0 (scripts/eiq_node_agreement.py).",
    ]
    if chip_id == "imx93":
        notes.append("Vela 5.2.0 is run with Arm's Ethos_U65_High_End / Dedicated_Sram_384KB configuration, the values of NXP's i.MX 93 default (see targets/eiq/__init__.py).")
    else:
        notes.append("The VX delegate decides on the board at load time; its operator list has no per-operator limits, so only the list is checked.")
    return notes


def rule_set(chip_id: str, **options) -> RuleSet:
    """The RuleSet of one chip. Options: vela="5.2" (default) or "3.10" (NXP's BSP Vela), i.MX 93 only."""
    if chip_id not in CHIPS:
        raise KeyError(chip_id)
    release = "3.10" if chip_id == "imx93" and options.get("vela") == "3.10" else DEFAULT_RELEASE[chip_id]
    npu_ops, compiler = NPU_TABLES[chip_id][release]
    # Every operator onnx2tf converts is listed (its rules run for every node); where its usual
    # TFLite operators run on this chip is in the note, and in fallback_ops / float_only_ops for
    # the supported-operator page (the engine looks at accelerator_ops first).
    accelerator: dict[str, OpSupport] = {}
    cpu_only, float_only = set(), set()
    for op in sorted(convertible_ops()):
        tfl = tflite_ops(op)
        if not tfl:
            accelerator[op] = OpSupport(("int8",), "no TFLite operator (folded away or removed)")
            continue
        floats = [t for t in tfl if t in TFLITE_FLOAT_ONLY]
        cpu = [t for t in tfl if t not in npu_ops and t not in TFLITE_FLOAT_ONLY]
        where = []
        if cpu:
            where.append(f"{', '.join(cpu)} on the CPU")
            cpu_only.add(op)
        if floats:
            where.append(f"{', '.join(floats)} in float on float data")
            float_only.add(op)
        accelerator[op] = OpSupport(("int8",), f"{chip_id}: TFLite {', '.join(tfl)}" + (f" ({'; '.join(where)})" if where else " (NPU)"))
    if chip_id == "imx93":
        source = f"{SOURCE_NXP_VELA if release == '3.10' else SOURCE_VELA}; {SOURCE_CONVERTER}"
        version = f"onnx2tf {ONNX2TF_VERSION}; {compiler}"
        unit = "CPU (Cortex-A55)"
    else:
        source = f"{SOURCE_VX}; {SOURCE_CONVERTER}"
        version = f"onnx2tf {ONNX2TF_VERSION}; VX delegate {VX_DELEGATE_RELEASE}"
        unit = "CPU (Cortex-A53)"
    return RuleSet(
        target="eiq",
        chip=chip_id,
        toolchain_version=version,
        source=source,
        accelerator_ops=accelerator,
        rules=RULES.rules_for(chip_id, release=release),
        passes=RULES.passes_for(chip_id, release=release),
        fallback_ops=frozenset(cpu_only),
        float_only_ops=frozenset(float_only),
        fallback_unit=unit,
        # A full-int8 TFLite model: an operator the NPU does not take runs on the CPU's TFLite
        # kernels, still in int8; one onnx2tf cannot quantise stays float32 on the CPU.
        units={
            Placement.ACCELERATOR: ("NPU (Ethos-U65)" if chip_id == "imx93" else "NPU (VIP8000, VX delegate)", None),
            Placement.FLOAT: (unit, "float32"),
            Placement.FALLBACK: (unit, None),
        },
        min_opset=7,
        max_opset=99,
        # onnx2tf runs onnxsim first, which folds everything computable at compile time.
        folds_constants=True,
        constant_spellings_refused=CONSTANT_SPELLINGS_REFUSED,
        notes=_notes(chip_id),
    )


# onnxsim leaves a Constant node given by value_ints, value_float, ... as it is (passes.py), and
# onnx2tf 1.29.24 then reads its value as a tensor ("AttributeError: 'list' object has no
# attribute 'shape'"): measured on value_int, value_ints, value_float and value_floats
# (tests/forms_models.py constant_spelling; tests/fixtures/forms/verdicts.json).
CONSTANT_SPELLINGS_REFUSED = frozenset({"value_int", "value_ints", "value_float", "value_floats"})


def rule_set_variants(chip_id: str) -> list[dict]:
    """The tables `rule_set` offers for a chip: on the i.MX 93 Vela 5.2.0 (the default) and NXP's Vela 3.10.0."""
    if chip_id != "imx93":
        return [{"label": f"VX delegate {VX_DELEGATE_RELEASE}, the default", "default": True}]
    return [
        {"vela": "5.2", "label": f"Vela {VELA_VERSION}, the default", "default": True},
        {"vela": "3.10", "label": f"NXP's Vela {NXP_VELA_VERSION} (BSP lf-6.6.3_1.0.0; vela=\"3.10\")"},
    ]
