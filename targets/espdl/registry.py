"""The ESP-DL rule registry and the toolchain versions its rules and graph passes cite.

rules.py (placement rules) and passes.py (esp-ppq's graph passes) both join RULES as they are
declared; this module holds what both need, so neither imports the other's registry.
"""

from __future__ import annotations

from edgedeploy.audit.registry import RuleRegistry

ESP_DL_VERSION = "3.3.9"
ESP_PPQ_VERSION = "1.3.12"
# The ONNX simplifier esp-ppq 1.3.12 runs first (pinned in the espdl environment).
ONNXSIM_VERSION = "0.7.3"
CHIPS = ("esp32s3", "esp32p4")
# Every rule and pass joins this registry as it is declared; the table is the same for both chips.
RULES = RuleRegistry("espdl", chips=CHIPS)

# The op types the ESP-DL runtime can build a module for: `dl::module::ModuleCreator::register_dl_modules`
# in esp-dl/dl/module/include/dl_module_creator.hpp, esp-dl component 3.3.9 (espressif/esp-dl at 12c0616d,
# 2026-07-30), transcribed in full (71 names; "Gelu" is built by the LUT module). The model loader
# (esp-dl/dl/model/src/dl_model_base.cpp) builds one module per exported node by its op type and stops on a
# type not here ("Do not support <op>, please implement and register it first."): such an .espdl does not
# load on the chip, whatever esp-ppq's .info says. esp-ppq 1.3.12 exports element-wise Max, Erf, Expand,
# Where, Cast ... all the same (docs/audit.md, "ESP-DL's module registry in the truth").
ESP_DL_RUNTIME_MODULES = frozenset((
    "Add", "AveragePool", "Clip", "Concat", "Conv", "DepthToSpace", "DequantizeLinear", "Div", "Elu", "Equal", "Exp",
    "Flatten", "GRU", "Gather", "Gelu", "Gemm", "GlobalAveragePool", "Greater", "GreaterOrEqual", "HardSigmoid",
    "HardSwish", "Identity", "InsertZeros", "LSTM", "LUT", "LayerNormalization", "LeakyRelu", "Less", "LessOrEqual",
    "Log", "LogSoftmax", "LpNormalization", "MatMul", "MaxPool", "Mod", "Mul", "Neg", "PRelu", "Pad", "Pow",
    "QuantizeLinear", "RMSNormalization", "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax",
    "ReduceMean", "ReduceMin", "ReduceProd", "ReduceSum", "ReduceSumSquare", "Relu", "RequantizeLinear", "Reshape",
    "Resize", "ReverseSequence", "ScatterND", "Sigmoid", "Slice", "Softmax", "SpaceToDepth", "Split", "Sqrt",
    "Squeeze", "StreamingCache", "Sub", "Swish", "Tanh", "Transpose", "Unsqueeze",
))
