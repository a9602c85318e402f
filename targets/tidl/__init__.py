"""TI TIDL: Texas Instruments' deep-learning compiler for the C7x DSP + MMA of the Jacinto and
AM6xA processors. Users install edgeai-tidl-tools themselves and point TIDL_TOOLS_PATH at it.
"""

import os
from pathlib import Path

from edgedeploy.targets.base import Chip, Target
from edgedeploy.toolchains import ExternalToolchain, ToolchainStatus

# The TIDL release whose operator documents (shared/reference/tidl) the rules follow.
TIDL_VERSION = "11.02"


def detect_tidl() -> ToolchainStatus:
    """Installed when $TIDL_TOOLS_PATH names an existing folder."""
    path = os.environ.get("TIDL_TOOLS_PATH")
    if not path:
        return ToolchainStatus("tidl", False, "not installed: set TIDL_TOOLS_PATH to an edgeai-tidl-tools installation")
    if not Path(path).is_dir():
        return ToolchainStatus("tidl", False, f"TIDL_TOOLS_PATH={path} is not a folder")
    return ToolchainStatus("tidl", True, f"TIDL_TOOLS_PATH={path}")


TOOLCHAIN = ExternalToolchain(
    name="tidl",
    description="TI edgeai-tidl-tools (ONNX Runtime + TIDL compilation), installed by the user",
    detect=detect_tidl,
)


def _soc(id, name, tops, c7x, cpu, cpu_mhz):
    return Chip(
        id=id,
        name=name,
        accelerator=f"{c7x}x C7x DSP + MMA ({tops} TOPS)",
        cpu=cpu,
        accelerator_clock_mhz=None,
        cpu_clock_mhz=cpu_mhz,
        precisions=("int8", "int16"),
        toolchain_version=f"TIDL {TIDL_VERSION}",
        fallback_unit="Arm CPU (ONNX Runtime)",
    )


class TidlTarget(Target):
    id = "tidl"
    vendor = "Texas Instruments"
    name = "TI TIDL"
    toolchain = TOOLCHAIN
    chips = (
        _soc("tda4vm", "TDA4VM", 8, 1, "2x Cortex-A72", 2000),
        _soc("am62a", "AM62A", 2, 1, "4x Cortex-A53", 1400),
        _soc("am68a", "AM68A", 8, 2, "2x Cortex-A72", 2000),
        _soc("am69a", "AM69A", 32, 4, "8x Cortex-A72", 2000),
    )


TARGET = TidlTarget()
