"""The SSH kind of worker environment: the same protocol, run in a work folder on another machine.

Staging, in a fresh folder on the remote machine (transport.make_workdir): the protocol files
(worker_main.py, worker_arrays.py), the worker file, and every file the request names by an
absolute path that exists here; a path that does not exist yet but whose folder does is an
output, copied back after the run if the worker wrote it. The request (paths rewritten to the
remote ones) runs there through the executor's `remote` (its ssh client a ManagedProcess, the
remote command's process group stopped on time-out); result.json comes back with the remote
paths rewritten to the local ones, and the remote folder is removed. The kind copies files,
not folders: a request that names an existing folder is refused with one sentence.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from edgedeploy.errors import ConfigError, DeviceError
from edgedeploy.toolchains.kinds import PROTOCOL_FILES, RemoteSsh


class _Staging:
    """Local <-> remote paths of one run."""

    def __init__(self, remote_dir: str):
        self.remote_dir = remote_dir
        self.inputs: dict[str, str] = {}
        self.outputs: dict[str, str] = {}

    def remote_for(self, local: str) -> str | None:
        path = Path(local)
        if not path.is_absolute():
            return None
        if local in self.inputs or local in self.outputs:
            return self.inputs.get(local) or self.outputs[local]
        if path.is_dir():
            raise ConfigError(f"The ssh toolchain kind copies files, not folders, and the worker's request names the folder {local}.")
        if path.is_file():
            self.inputs[local] = f"{self.remote_dir}/in/{len(self.inputs)}/{path.name}"
            return self.inputs[local]
        if path.parent.is_dir():
            self.outputs[local] = f"{self.remote_dir}/out/{len(self.outputs)}/{path.name}"
            return self.outputs[local]
        return None

    def to_remote(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.remote_for(value) or value
        if isinstance(value, list):
            return [self.to_remote(v) for v in value]
        if isinstance(value, dict):
            return {k: self.to_remote(v) for k, v in value.items()}
        return value

    def to_local(self, value: Any) -> Any:
        back = {remote: local for local, remote in {**self.inputs, **self.outputs}.items()}
        if isinstance(value, str):
            return back.get(value, value)
        if isinstance(value, list):
            return [self.to_local(v) for v in value]
        if isinstance(value, dict):
            return {k: self.to_local(v) for k, v in value.items()}
        return value


def run_remote_worker(executor, env: RemoteSsh, worker_file: Path, request: dict, workdir: Path, label: str):
    """Run the worker protocol on env's machine; its CommandOutcome, with workdir/result.json written here."""
    transport = env.transport_factory()
    remote_dir = None
    try:
        remote_dir = transport.make_workdir()
        staging = _Staging(remote_dir)
        remote_request = staging.to_remote(request)
        _stage(transport, staging, remote_dir, worker_file, remote_request, workdir)
        offset, started = executor.log_offset(), time.monotonic()
        argv = [env.python, f"{remote_dir}/{PROTOCOL_FILES[0].name}", f"{remote_dir}/worker/{worker_file.name}", f"{remote_dir}/request.json", f"{remote_dir}/result.json"]
        try:
            ran = executor.remote(transport, argv, remote_dir, f"the {label} worker")
        except DeviceError:
            if time.monotonic() - started >= executor.timeout_s:
                line = executor.outcome_since(-1, offset, started).error_line
                raise executor.failed(f"The {label} worker timed out after {executor.timeout_s:.0f} s on {env.name} and was stopped", label, line) from None
            raise
        _fetch(transport, staging, remote_dir, workdir)
        return executor.outcome_since(ran.returncode, offset, started)
    finally:
        if remote_dir is not None:
            try:
                transport.cleanup(remote_dir)
            except DeviceError:
                pass
        transport.close()


def _stage(transport, staging: _Staging, remote_dir: str, worker_file: Path, remote_request: dict, workdir: Path) -> None:
    for path in PROTOCOL_FILES:
        transport.put(path, f"{remote_dir}/{path.name}")
    transport.put(worker_file, f"{remote_dir}/worker/{worker_file.name}")
    for local, remote in staging.inputs.items():
        transport.put(Path(local), remote)
    folders = sorted({remote.rsplit("/", 1)[0] for remote in staging.outputs.values()})
    if folders:
        made = transport.run(["mkdir", "-p", "--", *folders], remote_dir, 60)
        if made.returncode != 0:
            raise DeviceError(f"Could not create the output folders on the remote machine ({(made.stderr or '').strip()[:200]}).")
    request_copy = workdir / "request.remote.json"
    request_copy.write_text(json.dumps(remote_request, indent=2))
    transport.put(request_copy, f"{remote_dir}/request.json")


def _fetch(transport, staging: _Staging, remote_dir: str, workdir: Path) -> None:
    """The outputs the worker wrote, and its result (remote paths turned back into local ones)."""
    for local, remote in staging.outputs.items():
        try:
            transport.get(remote, Path(local))
        except DeviceError:
            continue  # not written: the worker's result says what it wrote
    fetched = workdir / "result.remote.json"
    try:
        transport.get(f"{remote_dir}/result.json", fetched)
    except DeviceError:
        return  # no result: the executor reports how the worker ended
    try:
        payload = json.loads(fetched.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError):
        fetched.replace(workdir / "result.json")  # unreadable: the executor says so
        return
    (workdir / "result.json").write_text(json.dumps(staging.to_local(payload)))
