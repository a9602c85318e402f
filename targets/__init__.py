"""The registry of targets.

Adding a vendor: create a package here whose __init__ defines `TARGET` (a `base.Target`), add
its folder under templates/, and add its package name to TARGET_PACKAGES. Listing the registry
imports only these packages, which never import a vendor SDK.
"""

from __future__ import annotations

import importlib

from edgedeploy.errors import OptionError

# Package names under edgedeploy.targets, in the order `edgedeploy targets` lists them.
TARGET_PACKAGES = ("espdl", "rknn", "eiq", "tensorrt", "tidl")


def all_targets() -> tuple:
    """Every registered target, in registry order (importlib caches the packages, so this is cheap)."""
    return tuple(importlib.import_module(f"{__name__}.{pkg}").TARGET for pkg in TARGET_PACKAGES)


def chip_ids() -> list[str]:
    return [chip.id for target in all_targets() for chip in target.chips]


def find_chip(chip_id: str):
    """(target, chip) for a --target value (case-insensitive); OptionError listing the valid ones otherwise."""
    wanted = chip_id.strip().lower()
    for target in all_targets():
        for chip in target.chips:
            if chip.id == wanted:
                return target, chip
    raise OptionError(f"Unknown target '{chip_id}'. Known targets: {', '.join(chip_ids())}.")


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
    raise OptionError(f"Unknown toolchain '{name}'. Known toolchains: {', '.join(t.name for t in all_toolchains())}.")
