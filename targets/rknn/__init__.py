"""RKNN: Rockchip's NPU toolchain (rknn-toolkit2) for the RK35xx and RV110x chips.

Conversion and the simulator run in the `rknn` toolchain environment; on the board the model
runs with rknn-toolkit-lite2 (Python) or the rknn_api C library.
"""

from pathlib import Path

import click

from edgedeploy.targets.base import Chip, Target
from edgedeploy.toolchains import RequirementStep, VenvToolchain

_REQ = Path(__file__).parent / "requirements"

RKNN_TOOLKIT_VERSION = "2.5.0"
# The operator documents in shared/reference/rknn describe this release.
RKNN_DOC_VERSION = "2.3.2"

TOOLCHAIN = VenvToolchain(
    name="rknn",
    description="rknn-toolkit2: conversion to .rknn, the simulator and accuracy analysis",
    steps=(RequirementStep(_REQ / "rknn-deps.txt"), RequirementStep(_REQ / "rknn-toolkit.txt", no_deps=True)),
    import_modules=("rknn.api",),
    distributions=("rknn-toolkit2", "torch", "onnx", "onnxruntime", "numpy"),
)

_VERSION = f"rknn-toolkit2 {RKNN_TOOLKIT_VERSION} (rules: RKNN docs {RKNN_DOC_VERSION})"


def _chip(id, name, tops, cpu, cpu_mhz, precisions=("int8", "fp16"), memory=None, notes=""):
    return Chip(
        id=id,
        name=name,
        accelerator=f"RKNPU ({tops} TOPS int8)",
        cpu=cpu,
        accelerator_clock_mhz=None,
        cpu_clock_mhz=cpu_mhz,
        memory=memory or {},
        precisions=precisions,
        toolchain_version=_VERSION,
        notes=notes,
    )


class RknnTarget(Target):
    id = "rknn"
    vendor = "Rockchip"
    name = "RKNN"
    toolchain = TOOLCHAIN
    TOOLKIT_VERSION = RKNN_TOOLKIT_VERSION
    stages = ("convert", "simulate", "codegen", "runner")
    build_options = (
        click.Option(
            ["--optimization-level", "optimization_level"],
            type=click.IntRange(0, 3),
            default=None,
            help="RKNN: rknn-toolkit2's optimization_level (0-3; default 3, all optimisations).",
        ),
        click.Option(
            ["--analyse", "analyse"],
            is_flag=True,
            default=False,
            help="Run the toolchain's per-layer accuracy analysis and map it to ONNX node names (RKNN: accuracy_analysis).",
        ),
    )
    chips = (
        _chip("rk3588", "RK3588", 6, "4x Cortex-A76 + 4x Cortex-A55", 2400, notes="3 NPU cores"),
        _chip("rk3576", "RK3576", 6, "4x Cortex-A72 + 4x Cortex-A53", 2200, notes="2 NPU cores"),
        _chip("rk3568", "RK3568", 1, "4x Cortex-A55", 2000),
        _chip("rk3566", "RK3566", 1, "4x Cortex-A55", 1800),
        _chip("rk3562", "RK3562", 1, "4x Cortex-A53", 2000),
        _chip(
            "rv1106",
            "RV1106",
            0.5,
            "1x Cortex-A7",
            1200,
            precisions=("int8",),
            memory={"dram_bytes": 256 * 1024 * 1024},
            notes="int8 only; RV1106G3 has 256 MB of in-package DRAM",
        ),
    )


    def build(self, ctx) -> None:
        from edgedeploy.targets.rknn.build import build

        build(self, ctx)

    def toolchain_verdict(self, model_path: Path, chip_id: str, workdir: Path, log_path: Path, **options):
        return self.toolchain_verdicts([model_path], chip_id, workdir, log_path, **options)[0]

    def toolchain_verdicts(self, model_paths: list[Path], chip_id: str, workdir: Path, log_path: Path, **options) -> list:
        from edgedeploy.targets.rknn.verdict import toolchain_verdicts

        return toolchain_verdicts(self, list(model_paths), chip_id, workdir, log_path, **options)

    def runner_spec(self, artifact: Path, manifest: dict, device):
        from edgedeploy.targets.rknn.runner import runner_spec

        return runner_spec(self, Path(artifact), manifest, device)


TARGET = RknnTarget()
