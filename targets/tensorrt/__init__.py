"""TensorRT for NVIDIA Jetson Orin: engines are built where TensorRT is (on the Jetson over SSH,
or here when trtexec or the tensorrt module is present), because an engine only runs on the GPU
and TensorRT version it was built with.
"""

import importlib.util
import os
import shutil
from pathlib import Path

import click

from edgedeploy.targets.base import Chip, RunnerSpec, Target
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


# `edgedeploy build` options only this target reads (their values arrive in ctx.options.target_options).
BUILD_OPTIONS = (
    click.Option(["--trtexec"], metavar="PATH", help=f"TensorRT: trtexec on the build device (default {JETPACK_TRTEXEC}, or $EDGEDEPLOY_TRTEXEC)."),
    click.Option(["--dla-core"], metavar="auto|none|N", help="TensorRT: DLA core for Orin NX / AGX Orin, with GPU fallback (auto: core 0 where the chip has a DLA; none: GPU only)."),
    click.Option(["--workspace-mib"], type=click.IntRange(min=1), help="TensorRT: builder workspace in MiB (trtexec --memPoolSize=workspace:N)."),
    click.Option(["--builder-optimization-level"], type=click.IntRange(0, 5), help="TensorRT 8.6+: builder optimisation level 0-5 (trtexec --builderOptimizationLevel)."),
    click.Option(["--trt-version"], type=click.Choice(["auto", "8.5", "8.6", "10.x", "10.15"]), help="TensorRT: rule table for the audit (auto: the device's TensorRT version)."),
    click.Option(["--trt-rebuild"], is_flag=True, help="TensorRT: build again even if the cache holds this build."),
)


class TensorRtTarget(Target):
    id = "tensorrt"
    vendor = "NVIDIA"
    name = "TensorRT"
    toolchain = TOOLCHAIN
    stages = ("convert", "codegen", "runner")
    build_options = BUILD_OPTIONS
    chips = (
        _orin("jetson-orin-nano", "Jetson Orin Nano", "Ampere GPU, 1024 CUDA cores", 0, 625, "6x Cortex-A78AE", 1500, 8),
        _orin("jetson-orin-nx", "Jetson Orin NX", "Ampere GPU, 1024 CUDA cores", 2, 918, "8x Cortex-A78AE", 2000, 16),
        _orin("jetson-agx-orin", "Jetson AGX Orin", "Ampere GPU, 2048 CUDA cores", 2, 1300, "12x Cortex-A78AE", 2200, 64),
    )


    def rule_set_variants(self, chip_id: str) -> list[dict]:
        """The (trt_version, dla) variants `rule_set` takes on this chip, default first (see rules.py)."""
        return self.module("rules").rule_set_variants(chip_id)

    def build(self, ctx) -> None:
        self.module("flow").build_engine(ctx)

    def runner_spec(self, artifact: Path, manifest: dict, device) -> RunnerSpec:
        return self.module("flow").runner_spec(artifact, manifest, device)

    def toolchain_verdict(self, model_path: Path, chip_id: str, workdir: Path, log_path: Path, **options):
        return self.module("flow").toolchain_verdict(model_path, chip_id, workdir, log_path, **options)


TARGET = TensorRtTarget()
