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

    def not_available(self, what: str) -> NotAvailableYet:
        return NotAvailableYet(f"{what} is not available yet for the {self.name} target.")
