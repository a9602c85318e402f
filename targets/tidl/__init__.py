"""TI TIDL: Texas Instruments' deep-learning compiler for the C7x DSP + MMA of the Jacinto and
AM6xA processors. Users install edgeai-tidl-tools themselves and point TIDL_TOOLS_PATH at it.
"""

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from edgedeploy.targets.base import Capability, Target, TargetOptions, chip_table, option
from edgedeploy.toolchains import ExternalToolchain, ToolchainStatus

if TYPE_CHECKING:
    from edgedeploy.devices.base import RunnerSpec

# The TIDL release whose operator documents (shared/reference/tidl) the rules follow.
TIDL_VERSION = "11.02"


def detect_tidl() -> ToolchainStatus:
    """Installed when $TIDL_TOOLS_PATH names an existing folder."""
    path = os.environ.get("TIDL_TOOLS_PATH")
    if not path:
        return ToolchainStatus("tidl", False, "not installed: set TIDL_TOOLS_PATH to an edgeai-tidl-tools installation")
    if not Path(path).is_dir():
        return ToolchainStatus("tidl", False, f"TIDL_TOOLS_PATH={path} is not a folder")
    versions = {}
    # TI's tools folder names the SoC and release it is for in versions.txt (docs/debugging.md, 11.02).
    stamp = Path(path) / "versions.txt"
    if stamp.is_file():
        versions["versions.txt"] = " ".join(stamp.read_text(errors="replace").split())[:200]
    return ToolchainStatus("tidl", True, f"TIDL_TOOLS_PATH={path}", versions)


TOOLCHAIN = ExternalToolchain(
    name="tidl",
    description="TI edgeai-tidl-tools (ONNX Runtime + TIDL compilation), installed by the user",
    detect=detect_tidl,
)


@dataclass(frozen=True)
class TidlOptions(TargetOptions):
    tidl_calibration_frames: int | None = option("--tidl-calibration-frames", "Calibration frames (TI's advanced_options:calibration_frames; default 20, capped at the frames --calib holds).", type=int, minimum=1)
    tidl_calibration_iterations: int | None = option("--tidl-calibration-iterations", "Bias-calibration iterations (advanced_options:calibration_iterations; default 50).", type=int, minimum=1)
    tidl_max_subgraphs: int | None = option("--tidl-max-subgraphs", "Most subgraphs offloaded to the C7x/MMA (max_num_subgraphs; default 16).", type=int, minimum=1, maximum=16)
    tidl_accuracy_level: int | None = option("--tidl-accuracy-level", "accuracy_level (default 1, advanced bias calibration).", type=int, choices=("0", "1", "2", "9"))
    tidl_version: str | None = option("--tidl-version", "Release whose operator table the audit and deny list follow (default 11.02).", choices=("11.02", "11.00"))
    tidl_no_deny: bool = option("--tidl-no-deny", "Do not pass the audit's fallbacks as deny_list:layer_name; let TIDL's importer decide alone.", is_flag=True)
    tidl_compile_command: str | None = option("--tidl-compile-command", "Run the compile through this shell command (e.g. your TI container) instead of TIDL_TOOLS_PATH; placeholders {script}, {dir}, {config}, {soc}.", metavar="TEMPLATE")
    tidl_python: str | None = option("--tidl-python", "The Python with TI's onnxruntime, used when TIDL_TOOLS_PATH is set (default: $TIDL_PYTHON, else python3).", metavar="PYTHON")
    tidl_emulation_frames: int = option("--tidl-emulation-frames", "Evaluation frames TI's (slow) host emulation runs for accuracy before/after.", default=200, type=int, minimum=1)


class TidlTarget(Target):
    id = "tidl"
    vendor = "Texas Instruments"
    name = "TI TIDL"
    toolchain = TOOLCHAIN
    listing_order = 50
    capabilities = frozenset({Capability.AUDIT, Capability.SIMULATE, Capability.RUNNER, Capability.VERDICT})
    host_unavailable = (
        "the compiled artifacts run on the C7x DSP and MMA through TI's TIDL execution provider on the board; "
        "TI's x86 emulation of them (edgeai-tidl-tools) reproduces their outputs, not their time"
    )
    options_type = TidlOptions
    chips = chip_table(
        "id name accelerator cpu cpu_clock_mhz",
        ("tda4vm", "TDA4VM", "1x C7x DSP + MMA (8 TOPS)", "2x Cortex-A72", 2000),
        ("am62a", "AM62A", "1x C7x DSP + MMA (2 TOPS)", "4x Cortex-A53", 1400),
        ("am68a", "AM68A", "2x C7x DSP + MMA (8 TOPS)", "2x Cortex-A72", 2000),
        ("am69a", "AM69A", "4x C7x DSP + MMA (32 TOPS)", "8x Cortex-A72", 2000),
        accelerator_clock_mhz=None,
        precisions=("int8", "int16"),
        toolchain_version=f"TIDL {TIDL_VERSION}",
        fallback_unit="Arm CPU (ONNX Runtime)",
    )

    def rule_set_arguments(self, chip_id, precision, options) -> dict:
        return {"tidl_version": options.tidl_version} if options is not None and options.tidl_version else {}

    def rule_set_variants(self, chip_id: str) -> list[dict]:
        """The other rule tables of a chip (the rules package), default first."""
        return self.module("rules").rule_set_variants(chip_id)

    def convert(self, ctx):
        """The TIDL compile project, compiled where TI's tools are (convert.py)."""
        from edgedeploy.targets.tidl import convert as tidl_convert

        return tidl_convert.convert(self, ctx)

    def simulate(self, ctx, converted, evaluation):
        """TI's host emulation of the compiled model, written by the compile."""
        from edgedeploy.targets.tidl import convert as tidl_convert

        return tidl_convert.simulate(ctx, converted, evaluation)

    def codegen(self, ctx, converted):
        from edgedeploy.targets.tidl import convert as tidl_convert

        return tidl_convert.codegen(ctx, converted)

    def toolchain_verdicts(self, model_paths, chip_id, workdir, log_path, *, precision=None, inputs=None, **options) -> list:
        """Compile each model with TIDL (TIDL_TOOLS_PATH or tidl_compile_command) and parse its placement."""
        from edgedeploy.targets.tidl.verdict import compile_and_parse

        return [compile_and_parse(self, Path(p), chip_id, (Path(workdir) if len(model_paths) == 1 else Path(workdir) / f"case{i}"), Path(log_path), **options) for i, p in enumerate(model_paths)]

    def report_sections(self, report, artifact) -> list:
        """The compile settings and the deny list (report.py)."""
        from edgedeploy.targets.tidl.report import report_sections

        return report_sections(report, artifact)

    def runner_spec(self, artifact: Path, manifest: dict, device) -> "RunnerSpec":
        """ONNX Runtime with TIDLExecutionProvider on the board; baseline: ONNX Runtime CPU on the same board."""
        from edgedeploy.devices.base import RunnerSpec
        from edgedeploy.errors import ArtifactError
        from edgedeploy.targets.tidl import convert as tidl_convert

        built_for = manifest.get("target", {}).get("chip")
        if device is not None and getattr(device, "chip", None) and device.chip != built_for:
            raise ArtifactError(f"{artifact} was built for {built_for}, but device {device.name} is a {device.chip}; rebuild with --target {device.chip}.")
        files = tidl_convert.runner_files(Path(artifact))
        missing = [remote for remote, local in files.items() if not local.is_file()]
        if missing:
            raise ArtifactError(f"{artifact} lacks the runner files {', '.join(missing)}; rebuild it.")

        def spec(provider: str, outputs: str, backend: str) -> RunnerSpec:
            return RunnerSpec(
                files=files,
                command=["{python}", tidl_convert.RUNNER_SCRIPT, "--provider", provider, "--outputs", outputs],
                result_files=[outputs],
                backend=backend,
            )

        main = spec("tidl", "outputs_tidl.npz", "onnxruntime TIDLExecutionProvider")
        main.baseline = spec("cpu", "outputs_cpu.npz", "onnxruntime CPUExecutionProvider")
        return main


TARGET = TidlTarget()
