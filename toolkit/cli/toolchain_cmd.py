"""`edgedeploy toolchain list | install NAME | doctor`: the vendor toolchain environments."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from edgedeploy.cli.output import echo_text, emit_json, format_option, info, table


@click.group("toolchain")
def toolchain_group() -> None:
    """Manage the vendor toolchain environments (one virtual environment per toolchain, under $EDGEDEPLOY_HOME)."""


@toolchain_group.command("list")
@format_option()
def list_command(output_format: str) -> None:
    """List the toolchains, whether each is installed here, and where."""
    from edgedeploy.targets import all_targets, all_toolchains
    from edgedeploy.toolchains import edgedeploy_home

    users: dict[str, list[str]] = {}
    for target in all_targets():
        users.setdefault(target.toolchain.name, []).extend(c.id for c in target.chips)
    rows = []
    for tc in all_toolchains():
        st = tc.status()
        rows.append(
            {
                "name": tc.name,
                "description": tc.description,
                "managed": tc.managed,
                "installed": st.installed,
                "status": st.detail,
                "versions": st.versions,
                "targets": users.get(tc.name, ["(bench)"]),
            }
        )
    if output_format == "json":
        emit_json({"schema": "edgedeploy.toolchains/1", "home": str(edgedeploy_home()), "toolchains": rows})
        return
    echo_text(f"EDGEDEPLOY_HOME: {edgedeploy_home()}")
    echo_text(
        table(
            ["TOOLCHAIN", "INSTALLED", "HOW", "TARGETS", "STATUS"],
            [[r["name"], "yes" if r["installed"] else "no", "edgedeploy" if r["managed"] else "user", ", ".join(r["targets"]), r["status"]] for r in rows],
        )
    )


@toolchain_group.command("install")
@click.argument("names", nargs=-1, required=True, metavar="NAME...")
@click.option("--force", is_flag=True, help="Rebuild the environment even if it is up to date.")
def install_command(names: tuple[str, ...], force: bool) -> None:
    """Create the virtual environment of toolchain NAME from its pinned requirements (idempotent).

    NAME is one of the managed toolchains (espdl, rknn, eiq, torch) or `all`. pip runs with your own
    configuration (pip.conf, PIP_* variables), so mirrors and wheel folders apply.
    """
    from edgedeploy.errors import OptionError
    from edgedeploy.targets import all_toolchains, find_toolchain

    if names == ("all",):
        chosen = [tc for tc in all_toolchains() if tc.managed]
    else:
        chosen = [find_toolchain(n) for n in names]
    for tc in chosen:
        if not tc.managed:
            raise OptionError(f"The {tc.name} toolchain is installed by you, not by edgedeploy: {tc.status().detail}.")
    for tc in chosen:
        tc.install(force=force, echo=info)


@toolchain_group.command("doctor")
@click.argument("names", nargs=-1, metavar="[NAME]...")
@format_option()
def doctor_command(names: tuple[str, ...], output_format: str) -> None:
    """Check that each installed environment imports its toolchain, and print the versions.

    Exits 9 (a toolchain error) if an installed environment is broken; toolchains that are not installed are listed, not failed.
    """
    import tempfile

    from edgedeploy.errors import ToolchainError
    from edgedeploy.targets import all_toolchains, find_toolchain
    from edgedeploy.toolchains.worker import run_probe

    chosen = [find_toolchain(n) for n in names] if names else all_toolchains()
    results = []
    broken = False
    for tc in chosen:
        st = tc.status()
        entry = {"name": tc.name, "installed": st.installed, "status": st.detail, "ok": None, "versions": {}, "python": None}
        if tc.managed and st.installed:
            with tempfile.TemporaryDirectory(prefix=f"edgedeploy-doctor-{tc.name}-") as tmp:
                try:
                    probe = run_probe(tc, None, workdir=Path(tmp))
                    entry.update(ok=True, versions=probe["versions"], python=probe["python"], imported=list(probe["imported"]))
                except ToolchainError as exc:
                    entry.update(ok=False, error=str(exc))
                    broken = True
        elif not tc.managed:
            entry["ok"] = st.installed or None
        results.append(entry)
    if output_format == "json":
        emit_json({"schema": "edgedeploy.doctor/1", "toolchains": results})
    else:
        for e in results:
            if e["ok"] is True and e["versions"]:
                verdict = "ok"
            elif e["ok"] is False:
                verdict = "BROKEN"
            elif e["installed"]:
                verdict = "ok"
            else:
                verdict = "not installed"
            echo_text(f"{e['name']:<9} {verdict:<14} {e['status']}")
            if e["versions"]:
                echo_text("          python " + str(e["python"]) + ", " + ", ".join(f"{k} {v}" for k, v in e["versions"].items()))
            if e.get("error"):
                echo_text("          " + e["error"].replace("\n", "\n          "))
    if broken:
        sys.exit(ToolchainError.exit_code)  # printed above; the status says a toolchain is broken


COMMANDS = [toolchain_group]
