"""NXP eIQ: ONNX -> int8 TFLite (onnx2tf), then Vela for the i.MX 93's Ethos-U65, or the VX
delegate for the i.MX 8M Plus NPU. Conversion runs in the `eiq` toolchain environment.
"""

from pathlib import Path

from edgedeploy.targets.base import Chip, Target
from edgedeploy.toolchains import RequirementStep, VenvToolchain

_REQ = Path(__file__).parent / "requirements"

ONNX2TF_VERSION = "1.29.24"
VELA_VERSION = "5.2.0"

TOOLCHAIN = VenvToolchain(
    name="eiq",
    description="onnx2tf + TensorFlow Lite (ai-edge-litert) + Arm Vela for NXP i.MX",
    steps=(RequirementStep(_REQ / "eiq-deps.txt"), RequirementStep(_REQ / "eiq-converter.txt", no_deps=True)),
    import_modules=("onnx2tf", "ethosu.vela", "ai_edge_litert.interpreter"),
    distributions=("onnx2tf", "tensorflow-cpu", "ethos-u-vela", "ai-edge-litert", "onnx", "numpy"),
)


class EiqTarget(Target):
    id = "eiq"
    vendor = "NXP"
    name = "NXP eIQ"
    toolchain = TOOLCHAIN
    chips = (
        Chip(
            id="imx8mp",
            name="i.MX 8M Plus",
            accelerator="VeriSilicon VIP8000 NPU (2.3 TOPS), TFLite VX delegate",
            cpu="4x Cortex-A53",
            accelerator_clock_mhz=1000,
            cpu_clock_mhz=1800,
            precisions=("int8",),
            toolchain_version=f"onnx2tf {ONNX2TF_VERSION}; VX delegate op list lf-6.6.3_1.0.0",
        ),
        Chip(
            id="imx93",
            name="i.MX 93",
            accelerator="Arm Ethos-U65-256 NPU (0.5 TOPS)",
            cpu="2x Cortex-A55",
            accelerator_clock_mhz=1000,
            cpu_clock_mhz=1700,
            memory={"npu_sram_bytes": 384 * 1024},
            precisions=("int8",),
            toolchain_version=f"onnx2tf {ONNX2TF_VERSION}; Vela {VELA_VERSION}",
        ),
    )


TARGET = EiqTarget()
