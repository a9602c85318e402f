"""What a target is: a vendor toolchain, the chips it compiles for, and the stages it implements.

A target is one package under targets/ (its `TARGET` object, rules, worker and pinned
requirements), one folder under templates/, and one entry in `edgedeploy.targets.TARGET_PACKAGES`.
Nothing in a target package imports a vendor SDK at import time; vendor code lives only in the
package's worker module, which runs inside the toolchain's own environment.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

from edgedeploy.errors import NotAvailableYet
from edgedeploy.toolchains import Toolchain

@dataclass
class RunnerSpec:
    """What `edgedeploy measure` copies to a device and runs there, for one session.

    `files`: remote name (relative to the device's work folder) -> local file (the generated
    runner, measure/protocol.py, the compiled model, test inputs). `command`: argv run in the
    work folder; the literal "{python}" is replaced by the device's interpreter. The runner
    prints one `EDGEDEPLOY {json}` result line (measure/protocol.py) and may write
    `result_files` (e.g. outputs as .npy) that are fetched back. `baseline` is the matching
    "before" run on the same device (e.g. ONNX Runtime CPU on the board), or None.
    """

    files: dict[str, Path]
    command: list[str]
    result_files: list[str] = field(default_factory=list)
    timeout_s: float = 600.0
    backend: str = ""
    baseline: "RunnerSpec | None" = None


# The stages a target can implement, in pipeline order (DESIGN.md, "Data flow").
STAGES = ("convert", "codegen", "simulate", "runner")


@dataclass(frozen=True)
class Chip:
    """One chip a target compiles for, as data.

    `id` is what users type after --target. `toolchain_version` is the toolchain release whose
    documents the rules for this chip were transcribed from.
    """

    id: str
    name: str
    accelerator: str
    cpu: str
    accelerator_clock_mhz: int | None
    cpu_clock_mhz: int
    memory: dict[str, int] = field(default_factory=dict, hash=False)
    precisions: tuple[str, ...] = ("int8",)
    toolchain_version: str = ""
    fallback_unit: str = "CPU"
    notes: str = ""


class Target:
    """Base class of every target; subclasses fill in the class attributes and the stages they have."""

    id: str
    vendor: str
    name: str
    chips: tuple[Chip, ...]
    toolchain: Toolchain
    # The stages this target implements; `edgedeploy targets` shows them.
    stages: tuple[str, ...] = ()
    # Extra `edgedeploy build` options only this target reads (click.Option objects). Their
    # values reach the target as ctx.options.target_options[<param name>]; an option another
    # target declared already (same name) is shared, not repeated.
    build_options: tuple = ()

    @property
    def package(self) -> str:
        """The target's package, e.g. `edgedeploy.targets.espdl` (its class is defined in the package's __init__)."""
        return type(self).__module__

    @property
    def package_dir(self) -> Path:
        module = importlib.import_module(self.package)
        return Path(module.__file__).parent  # type: ignore[arg-type]

    def chip(self, chip_id: str) -> Chip:
        for chip in self.chips:
            if chip.id == chip_id:
                return chip
        raise KeyError(chip_id)

    def module(self, name: str) -> ModuleType:
        """Import one of the target's own modules (rules, build, ...) on demand."""
        return importlib.import_module(f"{self.package}.{name}")

    def rule_set(self, chip_id: str, **options):
        """The audit's RuleSet for one chip, from the target's rules module (targets/<v>/rules.py).

        `options` select variants the documents distinguish (a TensorRT version, DLA or GPU).
        """
        return self.module("rules").rule_set(chip_id, **options)

    def build(self, ctx) -> None:
        """Convert, generate and verify into ctx.workdir (see edgedeploy.build.BuildContext)."""
        raise self.not_available("`edgedeploy build`")

    def toolchain_verdict(self, model_path: Path, chip_id: str, workdir: Path, log_path: Path, **options):
        """Run the real toolchain on the model and return its own placement of each node.

        Returns an edgedeploy.audit.confirm.ToolchainVerdict. Targets whose toolchain reports
        placements implement this; the others say it is not available.
        """
        raise self.not_available("`audit --confirm`")

    def toolchain_verdicts(self, model_paths: list[Path], chip_id: str, workdir: Path, log_path: Path, **options) -> list:
        """Batched form of toolchain_verdict for sweeps: one worker process for many models.

        The default calls toolchain_verdict per model; targets override it to pay the
        toolchain's start-up once.
        """
        return [self.toolchain_verdict(p, chip_id, workdir / f"case{i}", log_path, **options) for i, p in enumerate(model_paths)]

    def runner_spec(self, artifact: Path, manifest: dict, device) -> RunnerSpec:
        """The runner `edgedeploy measure` runs on `device` (an edgedeploy.devices.Device) for this artifact."""
        raise self.not_available("`edgedeploy measure`")

    def measure_serial(self, artifact: Path, manifest: dict, device, **options) -> dict:
        """Run the artifact on a board reached over a serial port (device.transport == "serial").

        What `edgedeploy measure ARTIFACT --device CHIP@PORT` calls instead of runner_spec: a
        microcontroller has no files or commands, so the target flashes its firmware (or trusts
        what is flashed) and reads the result lines the firmware prints. Options (all optional):
        flash ("auto" | the target's own choices | "none"), firmware_build (a folder of binaries
        the user built), timeout_s (the whole console read), reset ("auto" | "rts" | "none"),
        echo (progress lines), console_echo (every console line, or None).

        Returns one board run as a dict:
          sessions            `edgedeploy.run/1` results as the firmware printed them (latency_us
                              with min/mean/p50/p90/p99/max, iterations, first_inference_us, ...)
          sessions_expected   how many the firmware announced
          scope               what the figures are of: model_sha256, input_shapes, batch,
                              precision, backend, backend_version, inputs, firmware, chip, ...
          protocol            warm-up, iterations and sessions the firmware was built with
          complete, partial, error   a reset, disconnect or time-out keeps the sessions read
          outputs_match       the firmware's own output check over all sessions (None: none read)
          flashing            how (or whether) the firmware was flashed
        Raises an EdgedeployError only when nothing can be measured (wrong chip, no port, a
        failed flash). Targets without firmware for boards keep this default.
        """
        raise self.not_available("Measuring over a serial port")

    def not_available(self, what: str) -> NotAvailableYet:
        return NotAvailableYet(f"{what} is not available yet for the {self.name} target.")
