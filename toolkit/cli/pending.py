"""Commands that exist in the interface but whose issues have not landed yet.

Each says plainly that it is not available yet and exits with status 2. A placeholder is only
registered while no `*_cmd` module provides a real command of that name.
"""

from __future__ import annotations

import click

from edgedeploy.errors import NotAvailableYet

# name -> what the command will do (shown in --help).
PENDING = {
    "audit": "Audit which operators fall back from the accelerator, per target",
    "measure": "Run a built artifact on a device and measure latency and accuracy",
    "bench": "Benchmark the model on this machine's backends",
    "report": "Render and combine reports",
}


def _pending_command(name: str, summary: str) -> click.Command:
    @click.command(name, context_settings={"ignore_unknown_options": True, "allow_extra_args": True}, help=f"(not available yet) {summary}.")
    @click.pass_context
    def command(ctx):
        raise NotAvailableYet(f"`edgedeploy {name}` is not available yet in edgedeploy (planned: {summary.lower()}).")

    return command


COMMANDS = [_pending_command(name, summary) for name, summary in PENDING.items()]
