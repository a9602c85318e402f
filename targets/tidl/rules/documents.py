"""What the TIDL rules are transcribed from, and the registry every TIDL rule joins.

The releases and their documents, TI's SoC families, the operators each release maps to a TIDL
layer, and RULES: each rule in the section modules joins it as it is declared, with the SoCs and
releases it applies to (see rules/__init__.py).
"""

from __future__ import annotations

from edgedeploy.audit.registry import RuleRegistry

TARGET_ID = "tidl"
CHIPS = ("tda4vm", "am62a", "am68a", "am69a")
TIDL_VERSIONS = ("11.02", "11.00")
DEFAULT_TIDL_VERSION = "11.02"

SOURCES = {
    "11.02": "TI edgeai-tidl-tools docs/operators.md, release 11.02 (238cb8b0), ONNX table; validated with ONNX 1.14 / ONNX Runtime 1.15 (opset 19)",
    "11.00": "TI edgeai-tidl-tools docs/supported_ops_rts_versions.md, tag 11_00_06_00 (d64aaabb), ONNX operator mapping and device feature table",
}

# SoCs for which TI writes "not supported in AM62A and AM67A" (we ship am62a of that pair).
AM62A_FAMILY = frozenset({"am62a"})

# TI's TDA4VM (J721E, AM68PA) limits.
TDA4VM_FAMILY = frozenset({"tda4vm"})

PRECISIONS = ("int8", "int16")  # TIDL tensor_bits 8 and 16 (32 is host emulation only)

RULES = RuleRegistry(TARGET_ID, chips=CHIPS, releases=TIDL_VERSIONS)

# --- operators TIDL maps to a TIDL layer, per release -------------------------------------------
# Both documents, ONNX table.
_COMMON_OPS = (
    "Conv", "AveragePool", "GlobalAveragePool", "MaxPool", "Relu", "PRelu",
    "Sum", "Add", "Mul", "Div", "Sub", "Max", "Gemm", "MatMul", "Softmax", "BatchNormalization",
    "ConvTranspose", "Concat", "Slice", "Split", "Flatten", "Dropout", "ArgMax", "Upsample", "Resize",
    "DepthToSpace", "Sigmoid", "Pad", "ReduceMin", "ReduceMax", "ScatterND", "ScatterElements",
    "Squeeze", "Tanh", "HardSigmoid", "Elu", "Reshape", "Gather", "Transpose", "LayerNormalization",
    "GridSample", "TopK", "DeformConv", "Clip", "LeakyRelu", "Erf", "Identity", "DequantizeLinear",
    "QuantizeLinear", "Sqrt", "ReduceMean", "Pow", "Cast", "Asin", "Asinh", "HardSwish", "Mish", "Log",
    "Unsqueeze", "Abs", "Floor", "Exp", "Sin", "InstanceNormalization", "SpaceToDepth", "Acos", "Atan",
    "Sinh", "Neg", "Cos", "Cosh", "Tan",
)  # fmt: skip

# 11.02 adds Min to the eltwise row, ArgMin to the arg row, ReduceSum (row 39) and Expand (row 61).
ACCELERATOR_OPS = {
    "11.00": frozenset(_COMMON_OPS),
    "11.02": frozenset(_COMMON_OPS + ("Min", "ArgMin", "ReduceSum", "Expand")),
}

# Operators TI lists as "not supported as an individual operator" (only inside a fused pattern).
ONLY_FUSED_OPS = {
    "11.00": frozenset({"Dropout", "Erf", "Identity", "ReduceMean"}),
    "11.02": frozenset({"Dropout", "Erf", "Identity"}),
}

# "Number of non-singleton variable input dimensions must be <= N", per operator and release.
_OPS_MAX_4_COMMON = ("Conv", "AveragePool", "GlobalAveragePool", "MaxPool", "Gemm", "MatMul", "ConvTranspose", "ArgMax", "Upsample", "Resize", "ScatterND", "ScatterElements")
OPS_MAX_4_DIMS = {
    "11.00": frozenset(_OPS_MAX_4_COMMON),
    "11.02": frozenset(_OPS_MAX_4_COMMON + ("ArgMin", "ReduceMin", "ReduceMax")),
}
_OPS_MAX_6_COMMON = (
    "Relu", "PRelu", "Sum", "Add", "Mul", "Div", "Sub", "Softmax", "Concat", "Flatten", "Sigmoid",
    "Squeeze", "Tanh", "HardSigmoid", "Elu", "Reshape", "Transpose", "LayerNormalization", "Clip",
    "LeakyRelu", "Sqrt", "Pow", "Asin", "Asinh", "HardSwish", "Mish", "Log", "Abs", "Floor", "Exp", "Sin",
    "InstanceNormalization", "Acos", "Atan", "Sinh", "Neg", "Cos", "Cosh", "Tan",
)  # fmt: skip
OPS_MAX_6_DIMS = {
    # 11.00 also bounds BatchNormalization this way; 11.02 bounds its rank instead (below).
    "11.00": frozenset(_OPS_MAX_6_COMMON + ("BatchNormalization",)),
    "11.02": frozenset(_OPS_MAX_6_COMMON + ("Max", "Expand")),
}
