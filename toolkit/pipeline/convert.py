"""The conversion skeleton: the core converts, a target declares what differs.

    request   target.build_request(ctx) -> ConvertRequest: the worker file, its JSON request
              (data staged with edgedeploy.arrays, the one array format of core and workers)
    run       ctx.executor.run_worker(environment, ...): the one worker path, in the environment
              kind the user chose for the toolchain (toolchains.kinds: managed venv, user Python,
              external command, SSH), with one time-out, process-group kill and log tail
    failure   a ToolchainFailed (fields, not a sentence); target.explain_failure may fill in a
              field it knows better (the node behind a tensor the toolchain's error quotes)
    result    target.read_result(ctx, WorkerResult) -> ConvertResult

A target whose tools are not a Python worker (TI's compile script, trtexec on a device) returns
None from build_request and runs them in its own convert(ctx), through the same executor.
"""

from __future__ import annotations

import time

from edgedeploy.errors import ToolchainFailed, ToolchainMissing
from edgedeploy.targets.base import BuildContext, ConvertResult, WorkerResult
from edgedeploy.toolchains.kinds import ManagedVenv, WorkerEnvironment, configured_environment


def toolchain_environment(target, chip_id: str, inventory_path=None) -> WorkerEnvironment | None:
    """Where the target's toolchain worker runs: the kind the user configured, else its managed
    venv; None for a toolchain the user installs that has no worker environment configured."""

    def open_device(name: str):
        from edgedeploy.devices import find_device, open_transport

        return open_transport(find_device(name, inventory_path))

    environment = configured_environment(target.toolchain, target.id, open_device=open_device, required=False)
    if isinstance(environment, ManagedVenv) and not target.toolchain.status().installed:
        raise ToolchainMissing(f"Building for {chip_id} needs the {target.toolchain.name} toolchain, which is {target.toolchain.status().detail}.")
    return environment


def run_conversion(ctx: BuildContext) -> ConvertResult:
    """Convert ctx.model_path for ctx.chip: the target's declared request, run by the core."""
    target = ctx.target
    request = target.build_request(ctx)
    if request is None:
        return target.convert(ctx)
    if request.announce:
        ctx.echo(request.announce)
    if ctx.environment is None:
        configured_environment(target.toolchain, target.id)  # raises the sentence that says how to configure one
    started = time.monotonic()
    try:
        values = ctx.executor.run_worker(ctx.environment, request.worker, request.payload, ctx.work(request.stage), label=target.toolchain.name)
    except ToolchainFailed as exc:
        explained = target.explain_failure(ctx, request, exc)
        if explained is exc:
            raise
        raise explained from exc
    return target.read_result(ctx, WorkerResult(request, values, round(time.monotonic() - started, 2)))
