"""`edgedeploy toolchain list | install NAME | doctor`: the vendor toolchain environments."""

from __future__ import annotations

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
@click.option("--no-wait", is_flag=True, help="Refuse at once, naming the process, when another install or a build holds the environment.")
def install_command(names: tuple[str, ...], force: bool, no_wait: bool) -> None:
    """Create the virtual environment of toolchain NAME from its pinned requirements (idempotent).

    NAME is one of the managed toolchains (espdl, rknn, eiq, torch) or `all`. pip runs with your own
    configuration (pip.conf, PIP_* variables), so mirrors and wheel folders apply. While another
    install of NAME, or a build using it, runs, this waits for it (saying which process it is);
    `--force` never removes an environment another process is installing or building with.
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
        tc.install(force=force, echo=info, wait=not no_wait)


@toolchain_group.command("doctor")
@click.argument("names", nargs=-1, metavar="[NAME]...")
@format_option()
def doctor_command(names: tuple[str, ...], output_format: str) -> None:
    """Check each installed environment: its interpreter runs, its toolchain imports, its versions are the pinned ones.

    A broken environment gets one line with what is wrong, its log (kept in $EDGEDEPLOY_HOME/envs)
    and the command that repairs it, and the command exits 9 (a toolchain error). Toolchains that
    are not installed are listed, not failed: with nothing broken it exits 0.
    """
    from edgedeploy.errors import ToolchainError
    from edgedeploy.targets import all_toolchains, find_toolchain
    from edgedeploy.toolchains.doctor import doctor_entry

    chosen = [find_toolchain(n) for n in names] if names else all_toolchains()
    results = [doctor_entry(tc) for tc in chosen]
    if output_format == "json":
        emit_json({"schema": "edgedeploy.doctor/1", "toolchains": results})
    else:
        for e in results:
            verdict = {True: "ok", False: "BROKEN"}.get(e["ok"], "ok" if e["installed"] else "not installed")
            repair = f"; repair: {e['repair']}" if e["ok"] is False else ""
            echo_text(f"{e['name']:<9} {verdict:<14} {e['status']}{repair}")
            if e["versions"] and e["ok"]:
                echo_text("          python " + str(e["python"]) + ", " + ", ".join(f"{k} {v}" for k, v in e["versions"].items()))
    broken = [e for e in results if e["ok"] is False]
    if broken:
        # Each line above says what is wrong and how to repair it; stderr gets the one sentence.
        raise ToolchainError(
            f"{len(broken)} toolchain environment{'s are' if len(broken) > 1 else ' is'} broken ({', '.join(e['name'] for e in broken)}): "
            + "; ".join(f"repair {e['name']} with `{e['repair']}`" for e in broken)
            + "."
        )


COMMANDS = [toolchain_group]
