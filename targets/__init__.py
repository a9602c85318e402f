"""The registry of targets, filled from the `edgedeploy.targets` entry-point group.

Every target registers the same way, the five built-in ones included (pyproject.toml):

    [project.entry-points."edgedeploy.targets"]
    espdl = "edgedeploy.targets.espdl:TARGET"

so a third-party vendor package plugs in by declaring its own entry point, with no change to
edgedeploy. Loading a target imports only its package, which never imports a vendor SDK, so
the registry can always be listed. Each target is checked against the contract
(base.contract_problems). A plug-in that fails to import, or breaks the contract, is set aside as
broken (BrokenTarget, with its error): `edgedeploy targets` lists it, and every other target and
command works as before.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import metadata

from edgedeploy.errors import TargetError, UnknownName
from edgedeploy.interrupts import reraise_if_interrupted

ENTRY_POINT_GROUP = "edgedeploy.targets"


@dataclass(frozen=True)
class BrokenTarget:
    """A registered plug-in that could not be used: listed by `edgedeploy targets`, never fatal."""

    name: str  # the entry point's name
    entry_point: str  # what it points at ("package.module:OBJECT")
    error: str  # why, one sentence

    def to_dict(self) -> dict:
        return {"name": self.name, "entry_point": self.entry_point, "error": self.error}


@dataclass(frozen=True)
class Registry:
    """The targets found, in listing order, their chips by id and alias, and the plug-ins that broke."""

    targets: tuple
    chips: dict  # chip id or alias (lower case) -> (target, chip)
    broken: tuple = ()  # BrokenTarget, one per plug-in that failed to load or breaks the contract

    def find_chip(self, chip_id: str):
        wanted = chip_id.strip().lower()
        found = self.chips.get(wanted) or self.chips.get(wanted.replace("_", "-")) or self.chips.get(wanted.replace("-", ""))
        if found is not None:
            return found
        import difflib  # only for the did-you-mean: not imported by every command

        ids = [c.id for t in self.targets for c in t.chips]
        close = difflib.get_close_matches(wanted, list(self.chips), n=3, cutoff=0.6)
        hint = f" Did you mean {' or '.join(dict.fromkeys(self.chips[c][1].id for c in close))}?" if close else ""
        broken = f" ({len(self.broken)} target plug-in(s) could not be loaded: {', '.join(b.name for b in self.broken)}; see `edgedeploy targets`.)" if self.broken else ""
        raise UnknownName(f"Unknown target '{chip_id}'.{hint} Known targets: {', '.join(ids) or 'none'}.{broken}")


def _load_entry(entry) -> tuple[object | None, str | None]:
    """(the target object, None), or (None, why it cannot be used)."""
    from edgedeploy.targets.base import contract_problems

    try:
        target = entry.load()
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - a broken plug-in must not take the others down
        reraise_if_interrupted(exc)
        return None, f"it could not be imported: {type(exc).__name__}: {exc}"
    problems = contract_problems(target)
    if problems:
        return None, f"it breaks the target contract: {'; '.join(problems)}"
    return target, None


def _load_registry() -> Registry:
    targets = []
    broken = []
    seen_ids: dict[str, str] = {}
    entries = sorted(metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name)
    if not entries:
        raise TargetError(f"No targets are registered (entry-point group {ENTRY_POINT_GROUP}); is edgedeploy installed (pip install -e .)?")
    for entry in entries:
        target, error = _load_entry(entry)
        if target is not None and target.id in seen_ids:
            if seen_ids[target.id] == entry.value:
                continue  # the same target registered twice (an editable and a plain install)
            target, error = None, f"another plug-in ({seen_ids[target.id]}) already registers a target named '{target.id}'"
        if target is None:
            broken.append(BrokenTarget(entry.name, entry.value, error))
            continue
        seen_ids[target.id] = entry.value
        targets.append(target)
    targets.sort(key=lambda t: (t.listing_order, t.id))
    chips: dict = {}
    for target in list(targets):
        spellings = {spelling.lower(): chip for chip in target.chips for spelling in (chip.id, *chip.aliases)}
        taken = [key for key, chip in spellings.items() if key in chips and chips[key][1].id != chip.id]
        if taken:
            # The target listed later gives way; the one before keeps working.
            targets.remove(target)
            broken.append(BrokenTarget(target.id, seen_ids[target.id], f"the chip name '{taken[0]}' is already claimed by the {chips[taken[0]][0].id} target"))
            continue
        chips.update({key: (target, chip) for key, chip in spellings.items()})
    return Registry(tuple(targets), chips, tuple(broken))


_REGISTRY: list[Registry] = []


def registry() -> Registry:
    """The registry, loaded once per process (entry points do not change while we run)."""
    if not _REGISTRY:
        _REGISTRY.append(_load_registry())
    return _REGISTRY[0]


def broken_targets() -> tuple:
    """The registered plug-ins that could not be used (BrokenTarget), for `edgedeploy targets`."""
    return registry().broken


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
