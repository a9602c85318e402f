"""TensorRT for NVIDIA Jetson Orin: engines are built where TensorRT is (on the Jetson over SSH,
or here when trtexec or the tensorrt module is present), because an engine only runs on the GPU
and TensorRT version it was built with.
"""

import importlib.util
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from edgedeploy.errors import OptionError
from edgedeploy.targets.base import CalibrationNeed, Capability, Chip, Target, TargetOptions, option
from edgedeploy.toolchains import ExternalToolchain, ToolchainStatus

if TYPE_CHECKING:
    from edgedeploy.devices.base import RunnerSpec

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


@dataclass(frozen=True)
class TensorRtOptions(TargetOptions):
    trtexec: str | None = option("--tensorrt-trtexec", f"trtexec on the build device (default {JETPACK_TRTEXEC}, or $EDGEDEPLOY_TRTEXEC).", metavar="PATH", deprecated=("--trtexec",))
    dla_core: str | None = option("--tensorrt-dla-core", "DLA core for Orin NX / AGX Orin, with GPU fallback (auto: core 0 where the chip has a DLA; none: GPU only).", metavar="auto|none|N", deprecated=("--dla-core",))
    workspace_mib: int | None = option("--tensorrt-workspace-mib", "Builder workspace in MiB (trtexec --memPoolSize=workspace:N).", type=int, minimum=1, deprecated=("--workspace-mib",))
    builder_optimization_level: int | None = option("--tensorrt-builder-optimization-level", "TensorRT 8.6+: builder optimisation level 0-5 (trtexec --builderOptimizationLevel).", type=int, minimum=0, maximum=5, deprecated=("--builder-optimization-level",))
    trt_version: str | None = option("--tensorrt-version", "Rule table for the audit (auto: the device's TensorRT version).", choices=("auto", "8.5", "8.6", "10.x", "10.15"), deprecated=("--trt-version",))
    trt_rebuild: bool = option("--tensorrt-rebuild", "Build again even if the cache holds this build.", is_flag=True, deprecated=("--trt-rebuild",))

    def validate(self, chip) -> None:
        value = (self.dla_core or "auto").lower()
        if value not in ("auto", "none") and not value.isdigit():
            raise OptionError(f"--tensorrt-dla-core takes auto, none or a core number, not '{self.dla_core}'.")


class TensorRtTarget(Target):
    id = "tensorrt"
    vendor = "NVIDIA"
    name = "TensorRT"
    toolchain = TOOLCHAIN
    listing_order = 40
    capabilities = frozenset({Capability.AUDIT, Capability.RUNNER, Capability.VERDICT})
    host_unavailable = "a TensorRT engine is built on the Jetson for its own GPU and TensorRT release and runs nowhere else"
    options_type = TensorRtOptions
    chips = (
        _orin("jetson-orin-nano", "Jetson Orin Nano", "Ampere GPU, 1024 CUDA cores", 0, 625, "6x Cortex-A78AE", 1500, 8),
        _orin("jetson-orin-nx", "Jetson Orin NX", "Ampere GPU, 1024 CUDA cores", 2, 918, "8x Cortex-A78AE", 2000, 16),
        _orin("jetson-agx-orin", "Jetson AGX Orin", "Ampere GPU, 2048 CUDA cores", 2, 1300, "12x Cortex-A78AE", 2200, 64),
    )


    def rule_set_variants(self, chip_id: str) -> list[dict]:
        """The (trt_version, dla) variants `rule_set` takes on this chip, default first (see rules.py)."""
        return self.module("rules").rule_set_variants(chip_id)

    def rule_set_arguments(self, chip_id, precision, options) -> dict:
        """The TensorRT release asked for, and GPU-only when the build will not use the DLA."""
        args: dict = {}
        if options is not None and options.trt_version and options.trt_version != "auto":
            args["trt_version"] = options.trt_version
        if (options is not None and (options.dla_core or "").lower() == "none") or precision == "fp32":
            args["dla"] = False  # the DLA runs fp16 and int8 only
        return args

    def calibration_need(self, chip, precision) -> CalibrationNeed:
        if precision == "int8":
            return CalibrationNeed(True, 1, "TensorRT's entropy calibrator runs on real inputs")
        return CalibrationNeed(False)

    def convert(self, ctx):
        """The engine, built where TensorRT is (the Jetson over SSH, or here), with its placement (convert.py)."""
        return self.module("convert").convert(ctx)

    def codegen(self, ctx, converted):
        return self.module("convert").codegen(ctx, converted)

    def report_sections(self, report, artifact) -> list:
        """The engine build and trtexec's own timing of it (report.py)."""
        from edgedeploy.targets.tensorrt.report import report_sections

        return report_sections(report, artifact)

    def runner_spec(self, artifact: Path, manifest: dict, device) -> "RunnerSpec":
        return self.module("convert").runner_spec(artifact, manifest, device)

    def toolchain_verdicts(self, model_paths, chip_id, workdir, log_path, *, precision=None, inputs=None, **options) -> list:
        """TensorRT's placement, building each model on the device (options: device, dla, trtexec)."""
        converter = self.module("convert")
        return [converter.toolchain_verdict(p, chip_id, (Path(workdir) if len(model_paths) == 1 else Path(workdir) / f"case{i}"), log_path, precision=precision, **options) for i, p in enumerate(model_paths)]


TARGET = TensorRtTarget()
