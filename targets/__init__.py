"""The registry of targets, filled from the `edgedeploy.targets` entry-point group.

Every target registers the same way, the five built-in ones included (pyproject.toml):

    [project.entry-points."edgedeploy.targets"]
    espdl = "edgedeploy.targets.espdl:TARGET"

so a third-party vendor package plugs in by declaring its own entry point, with no change to
edgedeploy. Loading a target imports only its package, which never imports a vendor SDK, so
the registry can always be listed. Each target is checked against the contract
(base.contract_problems); one that fails it is refused with one sentence.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from importlib import metadata

from edgedeploy.errors import TargetError, UnknownName

ENTRY_POINT_GROUP = "edgedeploy.targets"


@dataclass(frozen=True)
class Registry:
    """The targets found, in listing order, and their chips by id and alias."""

    targets: tuple
    chips: dict  # chip id or alias (lower case) -> (target, chip)

    def find_chip(self, chip_id: str):
        wanted = chip_id.strip().lower()
        found = self.chips.get(wanted) or self.chips.get(wanted.replace("_", "-")) or self.chips.get(wanted.replace("-", ""))
        if found is not None:
            return found
        ids = [c.id for t in self.targets for c in t.chips]
        close = difflib.get_close_matches(wanted, list(self.chips), n=3, cutoff=0.6)
        hint = f" Did you mean {' or '.join(dict.fromkeys(self.chips[c][1].id for c in close))}?" if close else ""
        raise UnknownName(f"Unknown target '{chip_id}'.{hint} Known targets: {', '.join(ids)}.")


def _load_registry() -> Registry:
    targets = []
    seen_ids: dict[str, str] = {}
    for entry in sorted(metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        try:
            target = entry.load()
        except Exception as exc:  # noqa: BLE001 - a broken plug-in must not take the others down
            raise TargetError(f"The target '{entry.name}' ({entry.value}) could not be loaded: {type(exc).__name__}: {exc}.") from exc
        from edgedeploy.targets.base import contract_problems

        problems = contract_problems(target)
        if problems:
            raise TargetError(f"The target '{entry.name}' ({entry.value}) breaks the target contract: {'; '.join(problems)}.")
        if target.id in seen_ids:
            if seen_ids[target.id] == entry.value:
                continue  # the same target registered twice (an editable and a plain install)
            raise TargetError(f"Two targets are named '{target.id}': {seen_ids[target.id]} and {entry.value}.")
        seen_ids[target.id] = entry.value
        targets.append(target)
    if not targets:
        raise TargetError(f"No targets are registered (entry-point group {ENTRY_POINT_GROUP}); is edgedeploy installed (pip install -e .)?")
    targets.sort(key=lambda t: (t.listing_order, t.id))
    chips: dict = {}
    for target in targets:
        for chip in target.chips:
            for spelling in (chip.id, *chip.aliases):
                key = spelling.lower()
                if key in chips and chips[key][1].id != chip.id:
                    raise TargetError(f"The chip name '{spelling}' is claimed by two targets ({chips[key][0].id} and {target.id}).")
                chips[key] = (target, chip)
    return Registry(tuple(targets), chips)


_REGISTRY: list[Registry] = []


def registry() -> Registry:
    """The registry, loaded once per process (entry points do not change while we run)."""
    if not _REGISTRY:
        _REGISTRY.append(_load_registry())
    return _REGISTRY[0]


def all_targets() -> tuple:
    """Every registered target, in listing order."""
    return registry().targets


def chip_ids() -> list[str]:
    return [chip.id for target in all_targets() for chip in target.chips]


def find_chip(chip_id: str):
    """(target, chip) for a --target value or alias (case-insensitive); UnknownName (exit 2) with a did-you-mean otherwise."""
    return registry().find_chip(chip_id)


def all_toolchains() -> list:
    """Each toolchain once, in registry order (several targets may share one), then the
    environments measurement needs that no target owns (`torch`, for `edgedeploy bench`)."""
    from edgedeploy.measure.backends import TOOLCHAINS as MEASURE_TOOLCHAINS

    seen: dict[str, object] = {}
    for target in all_targets():
        seen.setdefault(target.toolchain.name, target.toolchain)
    for toolchain in MEASURE_TOOLCHAINS:
        seen.setdefault(toolchain.name, toolchain)
    return list(seen.values())


def find_toolchain(name: str):
    for tc in all_toolchains():
        if tc.name == name:
            return tc
    raise UnknownName(f"Unknown toolchain '{name}'. Known toolchains: {', '.join(t.name for t in all_toolchains())}.")
