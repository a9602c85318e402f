"""TensorRT for NVIDIA Jetson Orin: engines are built where TensorRT is (on the Jetson over SSH,
or here when trtexec or the tensorrt module is present), because an engine only runs on the GPU
and TensorRT version it was built with.
"""

import importlib.util
import os
import shutil

from edgedeploy.targets.base import Chip, Target
from edgedeploy.toolchains import ExternalToolchain, ToolchainStatus

# Where JetPack installs trtexec.
JETPACK_TRTEXEC = "/usr/src/tensorrt/bin/trtexec"


def detect_tensorrt() -> ToolchainStatus:
    """TensorRT is usable here if trtexec is found or the tensorrt module can be imported (not imported here)."""
    trtexec = os.environ.get("EDGEDEPLOY_TRTEXEC") or shutil.which("trtexec") or (
        JETPACK_TRTEXEC if os.path.exists(JETPACK_TRTEXEC) else None
    )
    if trtexec:
        return ToolchainStatus("tensorrt", True, f"trtexec at {trtexec}")
    if importlib.util.find_spec("tensorrt") is not None:
        return ToolchainStatus("tensorrt", True, "the tensorrt Python module is importable")
    return ToolchainStatus("tensorrt", False, "not on this machine; engines are built on the Jetson over SSH (--device)")


TOOLCHAIN = ExternalToolchain(
    name="tensorrt",
    description="NVIDIA TensorRT (trtexec / Python API), on the Jetson itself",
    detect=detect_tensorrt,
)


def _orin(id, name, gpu, dla_cores, gpu_mhz, cpu, cpu_mhz, memory_gb):
    return Chip(
        id=id,
        name=name,
        accelerator=gpu + (f" + {dla_cores}x NVDLA 2.0" if dla_cores else " (no DLA)"),
        cpu=cpu,
        accelerator_clock_mhz=gpu_mhz,
        cpu_clock_mhz=cpu_mhz,
        memory={"dram_bytes": memory_gb * 1024**3, "dla_cores": dla_cores},
        precisions=("fp16", "int8", "fp32"),
        toolchain_version="TensorRT 8.5 / 8.6 / 10.x (JetPack 5.1 / 6.x)",
        fallback_unit="GPU",
        notes="DLA layers fall back to the GPU" if dla_cores else "GPU only",
    )


class TensorRtTarget(Target):
    id = "tensorrt"
    vendor = "NVIDIA"
    name = "TensorRT"
    toolchain = TOOLCHAIN
    chips = (
        _orin("jetson-orin-nano", "Jetson Orin Nano", "Ampere GPU, 1024 CUDA cores", 0, 625, "6x Cortex-A78AE", 1500, 8),
        _orin("jetson-orin-nx", "Jetson Orin NX", "Ampere GPU, 1024 CUDA cores", 2, 918, "8x Cortex-A78AE", 2000, 16),
        _orin("jetson-agx-orin", "Jetson AGX Orin", "Ampere GPU, 2048 CUDA cores", 2, 1300, "12x Cortex-A78AE", 2200, 64),
    )


TARGET = TensorRtTarget()
