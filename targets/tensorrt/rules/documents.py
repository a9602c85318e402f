"""The TensorRT releases the rules follow, the Jetson chips and their DLA cores, and the registry every rule joins.

RULES: each rule in dla.py and gpu.py joins it as it is declared, with the TensorRT releases (rule
tables) and units it applies to: the GPU rules apply wherever the GPU runs layers (the GPU table,
and the GPU fallback of a DLA table), the DLA rules only where the DLA is the accelerator.
"""

from __future__ import annotations

from edgedeploy.audit.registry import RuleRegistry
from edgedeploy.errors import OptionError

DEFAULT_TRT_VERSION = "10.x"

# rule_set() name -> the operator document it uses.
TRT_DOCUMENT = {"8.5": "8.5", "8.6": "8.6", "10.x": "10.1", "10.15": "10.15"}
TRT_VERSION_LABEL = {
    "8.5": "TensorRT 8.5 (JetPack 5.1.x)",
    "8.6": "TensorRT 8.6 (JetPack 6.0)",
    "10.x": "TensorRT 10.x (JetPack 6.1/6.2 ship 10.3; table of 10.1)",
    "10.15": "TensorRT 10.15",
}

# Chips with DLA cores, and how many (NVIDIA/Deep-Learning-Accelerator-SW FAQ: all Jetson AGX Orin
# and Orin NX boards have DLA; the Orin Nano has none).
DLA_CORES = {"jetson-orin-nano": 0, "jetson-orin-nx": 2, "jetson-agx-orin": 2}

# DLA ops marked "Native (as of TensorRT 8.6.12)" in the DLA operator README: 8.6.12 is a DRIVE OS
# release; Jetson's 8.6 is 8.6.2 (JetPack 6.0), so these count only from TensorRT 10.
DLA_FIRST_VERSION_WITH_LATE_OPS = "10.x"

RULES = RuleRegistry(
    "tensorrt",
    chips=tuple(DLA_CORES),
    releases=tuple(TRT_DOCUMENT),
    units={chip: ("dla", "gpu") if cores else ("gpu",) for chip, cores in DLA_CORES.items()},
)
TRT_8 = ("8.5", "8.6")
TRT_10 = ("10.x", "10.15")


def normalize_trt_version(value: str | None) -> str:
    """'8.6.2.3' -> '8.6', '10.3.0' -> '10.x', '10.16' -> '10.15', 'auto'/None -> the default."""
    if value is None or str(value).strip().lower() in ("", "auto"):
        return DEFAULT_TRT_VERSION
    text = str(value).strip().lower().lstrip("v")
    if text in TRT_DOCUMENT:
        return text
    parts = text.split(".")
    try:
        major = int(parts[0])
        minor = int(parts[1]) if len(parts) > 1 and parts[1] not in ("x", "") else None
    except ValueError:
        raise OptionError(f"TensorRT version '{value}' is not a version; use one of {', '.join(TRT_DOCUMENT)}.") from None
    if major == 8 and minor in (5, 6):
        return f"8.{minor}"
    if major == 10:
        return "10.15" if minor is not None and minor >= 15 else "10.x"
    raise OptionError(
        f"TensorRT {value} has no rule table here (tables: {', '.join(TRT_DOCUMENT)}; Jetson Orin ships 8.5, 8.6 or 10.x)."
    )


def version_at_least(version: str, floor: str) -> bool:
    order = ["8.5", "8.6", "10.x", "10.15"]
    return order.index(version) >= order.index(floor)
