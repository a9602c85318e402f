"""What the NXP eIQ rules are transcribed from, and the registry every eIQ rule joins.

The releases and documents (the list in rules/__init__.py says what each is for), the NPUs'
TFLite operator lists, and RULES: each rule in conversion.py and npu.py joins it as it is
declared, with the chips (and, on the i.MX 93, the Vela release) it applies to.
"""

from __future__ import annotations

from edgedeploy.audit.registry import RuleRegistry

ONNX2TF_VERSION = "1.29.24"
ONNXSIM_VERSION = "0.4.36"  # the onnxsim of the eiq environment, which onnx2tf runs first
TENSORFLOW_VERSION = "2.19.0"
VELA_VERSION = "5.2.0"
NXP_VELA_VERSION = "3.10.0"
VX_DELEGATE_RELEASE = "lf-6.6.3_1.0.0"
CHIPS = ("imx93", "imx8mp")

SOURCE_CONVERTER = f"onnx2tf {ONNX2TF_VERSION} README 'Supported layers' + conversions measured with tensorflow-cpu {TENSORFLOW_VERSION}"
SOURCE_VELA = f"Vela {VELA_VERSION} `vela --supported-ops-report` (Ethos-U55 and Ethos-U65 TFLite)"
SOURCE_NXP_VELA = f"nxp-imx/ethos-u-vela {NXP_VELA_VERSION} SUPPORTED_OPS.md (BSP lf-6.6.3_1.0.0, file 8cb3c360)"
SOURCE_VX = f"nxp-imx/tflite-vx-delegate-imx op_status.md ({VX_DELEGATE_RELEASE}, file 10085b37)"

# ----------------------------------------------------------------------------------------------
# The NPUs' TFLite operator lists (transcribed).

# Vela 5.2.0, "Ethos-U55 and Ethos-U65 TFLite Summary Table".
VELA_5_2_OPS = frozenset(
    """ABS ADD ARG_MAX AVERAGE_POOL_2D BATCH_MATMUL CONCATENATION CONV_2D DEPTHWISE_CONV_2D ELU EXP
    EXPAND_DIMS FULLY_CONNECTED GELU HARD_SWISH LEAKY_RELU LOG LOGISTIC MAXIMUM MAX_POOL_2D MEAN
    MINIMUM MIRROR_PAD MUL NEG PACK PAD PADV2 PRELU QUANTIZE REDUCE_MAX REDUCE_MIN RELU RELU6
    RELU_0_TO_1 RELU_N1_TO_1 RESHAPE RESIZE_BILINEAR RESIZE_NEAREST_NEIGHBOR REVERSE_V2 RSQRT SLICE
    SOFTMAX SPLIT SPLIT_V SQUARED_DIFFERENCE SQUEEZE STRIDED_SLICE SUB SUM TANH TILE TRANSPOSE
    TRANSPOSE_CONV UNIDIRECTIONAL_SEQUENCE_LSTM UNPACK""".split()
)

# NXP's Vela 3.10.0 (lf-6.6.3_1.0.0), "TFLite Summary Table".
VELA_3_10_OPS = frozenset(
    """ABS ADD ARG_MAX AVERAGE_POOL_2D CONCATENATION CONV_2D DEPTHWISE_CONV_2D EXP EXPAND_DIMS
    FULLY_CONNECTED HARD_SWISH LEAKY_RELU LOGISTIC MAXIMUM MAX_POOL_2D MEAN MINIMUM MUL PACK PAD PRELU
    QUANTIZE RELU RELU6 RELU_N1_TO_1 RESHAPE RESIZE_BILINEAR RESIZE_NEAREST_NEIGHBOR RSQRT SHAPE SLICE
    SOFTMAX SPLIT SPLIT_V SQUARED_DIFFERENCE SQUEEZE STRIDED_SLICE SUB TANH TRANSPOSE TRANSPOSE_CONV
    UNIDIRECTIONAL_SEQUENCE_LSTM UNPACK""".split()
)

# VX delegate op_status.md, rows marked "yes" (its CamelCase names as TFLite builtin names).
VX_DELEGATE_OPS = frozenset(
    """ADD AVERAGE_POOL_2D CONCATENATION CONV_2D DEPTHWISE_CONV_2D DEPTH_TO_SPACE DEQUANTIZE
    EMBEDDING_LOOKUP FLOOR FULLY_CONNECTED HASHTABLE_LOOKUP L2_NORMALIZATION
    LOCAL_RESPONSE_NORMALIZATION LOGISTIC MAX_POOL_2D MUL RELU RELU_N1_TO_1 RELU6 RESHAPE
    RESIZE_BILINEAR RNN SOFTMAX SPACE_TO_DEPTH TANH PAD UNIDIRECTIONAL_SEQUENCE_RNN GATHER
    BATCH_TO_SPACE_ND SPACE_TO_BATCH_ND TRANSPOSE MEAN SUB DIV SQUEEZE UNIDIRECTIONAL_SEQUENCE_LSTM
    STRIDED_SLICE BIDIRECTIONAL_SEQUENCE_RNN EXP SPLIT BIDIRECTIONAL_SEQUENCE_LSTM PRELU MAXIMUM
    ARG_MAX MINIMUM LESS NEG GREATER GREATER_EQUAL LESS_EQUAL SELECT SLICE SIN TRANSPOSE_CONV
    EXPAND_DIMS EQUAL NOT_EQUAL LOG SUM SQRT RSQRT SHAPE POW ARG_MIN REDUCE_PROD REDUCE_MAX PACK
    LOGICAL_OR ONE_HOT LOGICAL_AND LOGICAL_NOT UNPACK REDUCE_MIN FLOOR_DIV REDUCE_ANY SQUARE
    RESIZE_NEAREST_NEIGHBOR LEAKY_RELU ABS SPLIT_V REVERSE_V2 ADD_N GATHER_ND COS ELU QUANTIZE
    HARD_SWISH SELECT_V2 BATCH_MATMUL CONV_3D""".split()
)

# The tables a chip's NPU follows, by release: on the i.MX 93 Vela 5.2.0 (the Vela this tool runs;
# the default) or NXP's Vela 3.10.0 (option vela="3.10"); on the i.MX 8M Plus the VX delegate's list.
# Release -> (the NPU's TFLite operators, the compiler the rules' sentences name).
NPU_TABLES = {
    "imx93": {
        "5.2": (VELA_5_2_OPS, f"Vela {VELA_VERSION}"),
        "3.10": (VELA_3_10_OPS, f"Vela {NXP_VELA_VERSION} (NXP)"),
    },
    "imx8mp": {
        VX_DELEGATE_RELEASE: (VX_DELEGATE_OPS, f"the VX delegate ({VX_DELEGATE_RELEASE})"),
    },
}
DEFAULT_RELEASE = {"imx93": "5.2", "imx8mp": VX_DELEGATE_RELEASE}

RULES = RuleRegistry("eiq", chips=CHIPS, releases={chip: tuple(tables) for chip, tables in NPU_TABLES.items()})
