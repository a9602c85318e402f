"""`edgedeploy targets`: every vendor and chip, the accelerator, the toolchain, and whether it is here."""

from __future__ import annotations

import click

from edgedeploy.cli.output import echo_text, emit_json, format_option, table


def targets_data() -> list[dict]:
    from edgedeploy.targets import all_targets

    rows = []
    for target in all_targets():
        status = target.toolchain.status()
        for chip in target.chips:
            rows.append(
                {
                    "target": chip.id,
                    "chip": chip.name,
                    "vendor": target.vendor,
                    "toolchain_family": target.name,
                    "accelerator": chip.accelerator,
                    "cpu": chip.cpu,
                    "precisions": list(chip.precisions),
                    "fallback_unit": chip.fallback_unit,
                    "toolchain": target.toolchain.name,
                    "toolchain_managed": target.toolchain.managed,
                    "toolchain_installed": status.installed,
                    "toolchain_status": status.detail,
                    "rules_version": chip.toolchain_version,
                    "capabilities": sorted(c.value for c in target.capabilities),
                }
            )
    return rows


@click.command("targets")
@format_option()
def targets_command(output_format: str) -> None:
    """List every target chip with its accelerator, toolchain, and whether that toolchain is installed here.

    A target plug-in that could not be loaded is listed as broken, with its error; the others
    work as usual.
    """
    from edgedeploy.targets import broken_targets

    rows = targets_data()
    broken = [b.to_dict() for b in broken_targets()]
    if output_format == "json":
        emit_json({"schema": "edgedeploy.targets/1", "targets": rows, "broken": broken})
        return
    echo_text(
        table(
            ["TARGET", "CHIP", "VENDOR", "ACCELERATOR", "TOOLCHAIN", "INSTALLED"],
            [
                [r["target"], r["chip"], r["vendor"], r["accelerator"], r["toolchain"], "yes" if r["toolchain_installed"] else "no"]
                for r in rows
            ],
        )
    )
    echo_text("")
    seen = set()
    for r in rows:
        if r["toolchain"] not in seen:
            seen.add(r["toolchain"])
            echo_text(f"{r['toolchain']}: {r['toolchain_status']}")
    if broken:
        echo_text("")
        echo_text(f"Broken target plug-ins ({len(broken)}, not loaded; the targets above are not affected):")
        for b in broken:
            echo_text(f"  {b['name']} ({b['entry_point']}): broken: {b['error']}")


COMMANDS = [targets_command]
