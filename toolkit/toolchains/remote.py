"""The SSH kind of worker environment: the same protocol, run in a work folder on another machine.

Staging, in a fresh folder on the remote machine (transport.make_workdir): the protocol files
(worker_main.py, worker_arrays.py), the worker file, and every file the request names by an
absolute path that exists here; a path that does not exist yet but whose folder does is an
output, copied back after the run if the worker wrote it. The request (paths rewritten to the
remote ones) runs there through the executor's `remote` (its ssh client a ManagedProcess, the
remote command's process group stopped on time-out); result.json comes back with the remote
paths rewritten to the local ones, and the remote folder is removed.

Folders travel as tar archives (worker_folders.py, the same file on both sides): a folder the
request names (a calibration folder of .npy files, a templates folder) is packed here, copied
and unpacked there; after the run, what the worker wrote or changed in it comes back into the
local folder, and an output path the worker made into a folder comes back whole. A path inside
such a folder in the result is rewritten like the folder's.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from edgedeploy.errors import DeviceError
from edgedeploy.toolchains import worker_folders
from edgedeploy.toolchains.kinds import HERE, PROTOCOL_FILES, RemoteSsh

FOLDER_HELPER = HERE / "worker_folders.py"
FOLDER_STAGE = "folders"  # the archives' and specs' folder in the remote work folder
FOLDER_STEP_TIMEOUT_S = 600.0  # packing or unpacking a folder (a calibration set) on the remote machine


class _Staging:
    """Local <-> remote paths of one run."""

    def __init__(self, remote_dir: str):
        self.remote_dir = remote_dir
        self.inputs: dict[str, str] = {}
        self.outputs: dict[str, str] = {}
        self.folders: dict[str, str] = {}  # existing local folders: copied there, results copied back
        self.helper_sent = False  # worker_folders.py is on the remote machine
        self._local_stage: Path | None = None

    def local_stage(self) -> Path:
        """A private local folder for this run's archives and specs, outside every folder the request names."""
        if self._local_stage is None:
            self._local_stage = Path(tempfile.mkdtemp(prefix="edgedeploy-ssh-folders-"))
        return self._local_stage

    def remove_local_stage(self) -> None:
        if self._local_stage is not None:
            shutil.rmtree(self._local_stage, ignore_errors=True)

    def remote_for(self, local: str) -> str | None:
        path = Path(local)
        if not path.is_absolute():
            return None
        known = self.inputs.get(local) or self.outputs.get(local) or self.folders.get(local)
        if known:
            return known
        if path.is_dir():
            self.folders[local] = f"{self.remote_dir}/in/{len(self.inputs) + len(self.folders)}/{path.name}"
            return self.folders[local]
        if path.is_file():
            self.inputs[local] = f"{self.remote_dir}/in/{len(self.inputs) + len(self.folders)}/{path.name}"
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
        """Remote paths back to local ones, a path inside a copied folder included."""
        if isinstance(value, str):
            for local, remote in {**self.inputs, **self.outputs, **self.folders}.items():
                if value == remote:
                    return local
                if value.startswith(remote + "/") and (local in self.folders or local in self.outputs):
                    return local + value[len(remote):]
            return value
        if isinstance(value, list):
            return [self.to_local(v) for v in value]
        if isinstance(value, dict):
            return {k: self.to_local(v) for k, v in value.items()}
        return value


def run_remote_worker(executor, env: RemoteSsh, worker_file: Path, request: dict, workdir: Path, label: str):
    """Run the worker protocol on env's machine; its CommandOutcome, with workdir/result.json written here."""
    transport = env.transport_factory()
    remote_dir = staging = None
    try:
        remote_dir = transport.make_workdir()
        staging = _Staging(remote_dir)
        remote_request = staging.to_remote(request)
        _stage(transport, staging, remote_dir, worker_file, remote_request, workdir)
        _stage_folders(transport, env, staging)
        offset, started = executor.log_offset(), time.monotonic()
        argv = [env.python, f"{remote_dir}/{PROTOCOL_FILES[0].name}", f"{remote_dir}/worker/{worker_file.name}", f"{remote_dir}/request.json", f"{remote_dir}/result.json"]
        try:
            ran = executor.remote(transport, argv, remote_dir, f"the {label} worker")
        except DeviceError:
            if time.monotonic() - started >= executor.timeout_s:
                line = executor.outcome_since(-1, offset, started).error_line
                raise executor.failed(f"The {label} worker timed out after {executor.timeout_s:.0f} s on {env.name} and was stopped", label, line) from None
            raise
        _fetch(transport, env, staging, workdir)
        return executor.outcome_since(ran.returncode, offset, started)
    finally:
        if staging is not None:
            staging.remove_local_stage()
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


def _helper_run(transport, env: RemoteSsh, staging: _Staging, step: str, spec: list[dict]) -> str:
    """One step of worker_folders.py on the remote machine with its spec; its stdout."""
    remote_dir = staging.remote_dir
    if not staging.helper_sent:
        transport.put(FOLDER_HELPER, f"{remote_dir}/{FOLDER_HELPER.name}")
        staging.helper_sent = True
    local_spec = staging.local_stage() / f"{step}.json"
    local_spec.write_text(json.dumps(spec))
    transport.put(local_spec, f"{remote_dir}/{FOLDER_STAGE}/{step}.json")
    argv = [env.python, f"{remote_dir}/{FOLDER_HELPER.name}", step, f"{remote_dir}/{FOLDER_STAGE}/{step}.json", f"{remote_dir}/{FOLDER_STAGE}/staged"]
    done = transport.run(argv, remote_dir, FOLDER_STEP_TIMEOUT_S)
    if done.returncode != 0:
        last = (done.stderr or done.stdout or "").strip().splitlines()[-1:] or ["no message"]
        raise DeviceError(f"Copying the worker's folders on {env.name} failed ({step}: {last[0][:300]}).")
    return done.stdout


def _stage_folders(transport, env: RemoteSsh, staging: _Staging) -> None:
    """The request's folders, packed here, copied and unpacked there; then the marker that dates the staging."""
    if not staging.folders:
        return
    remote_dir, spec = staging.remote_dir, []
    for i, (local, remote) in enumerate(staging.folders.items()):
        archive = staging.local_stage() / f"up-{i}.tar"
        worker_folders.pack(local, archive)
        transport.put(archive, f"{remote_dir}/{FOLDER_STAGE}/up-{i}.tar")
        archive.unlink()
        spec.append({"archive": f"{remote_dir}/{FOLDER_STAGE}/up-{i}.tar", "dest": remote})
    _helper_run(transport, env, staging, "unpack", spec)


def _fetch_folders(transport, env: RemoteSsh, staging: _Staging, unfetched: dict[str, str]) -> None:
    """What the worker wrote into the request's folders, and the outputs (of `unfetched`, those
    no file came back for) it made as folders, unpacked here."""
    entries = [(local, remote, True) for local, remote in staging.folders.items()] + [(local, remote, False) for local, remote in unfetched.items()]
    if not entries:
        return
    spec = [{"path": remote, "archive": f"{staging.remote_dir}/{FOLDER_STAGE}/back-{i}.tar", "staged": staged} for i, (_, remote, staged) in enumerate(entries)]
    kinds = json.loads(_helper_run(transport, env, staging, "back", spec).strip().splitlines()[-1])
    for i, (local, remote, _) in enumerate(entries):
        if kinds.get(remote) != "folder":
            continue  # an output not written: the worker's result says what it wrote
        archive = staging.local_stage() / f"back-{i}.tar"
        transport.get(spec[i]["archive"], archive)
        try:
            worker_folders.unpack(archive, local)
        except (ValueError, OSError) as exc:
            raise DeviceError(f"The worker's folder {local} could not be copied back from {env.name}: {exc}.") from exc
        archive.unlink()


def _fetch(transport, env: RemoteSsh, staging: _Staging, workdir: Path) -> None:
    """The outputs the worker wrote (files and folders), and its result (remote paths turned back into local ones)."""
    remote_dir = staging.remote_dir
    unfetched = {}
    for local, remote in staging.outputs.items():
        try:
            transport.get(remote, Path(local))
        except DeviceError:
            unfetched[local] = remote  # not a file: a folder, or not written
    _fetch_folders(transport, env, staging, unfetched)
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
