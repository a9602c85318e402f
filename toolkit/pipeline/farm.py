"""`edgedeploy measure ARTIFACT... --farm labgrid://HOST:PORT`: many artifacts on the boards of a labgrid farm, N at once.

For every artifact, a place of the farm whose tags match the artifact's chip (`chip=esp32s3`;
a generic ONNX artifact takes any place with a NetworkService, i.e. a Linux board) and whose
name matches `--place` is acquired, used, and released:

1. The artifacts are checked first (manifest intact, a chip the farm has, a place for each);
   a mistake there ends the command before any place is touched.
2. Places are acquired as they become free, one per artifact, at most `parallel` at once. A
   place someone else holds (or has reserved) is waited for, at most `place_wait_s`; then that
   artifact ends with one sentence saying who holds what.
3. Each artifact is measured by `edgedeploy measure` itself, in a child process of its own,
   against a one-entry inventory that describes the acquired place's board: its NetworkService
   through the ssh transport (a Linux board), or its serial port through the serial transport
   (rfc2217://, for a microcontroller whose target flashes and reads firmware). A child process
   per board gives real parallelism and a clean stop: on Ctrl-C, SIGTERM or a time-out its
   process group is interrupted, then killed, and reaped before the place is released.
4. Every place this command acquired is released in a `finally`, whatever happened; only our own
   holds are released (never anyone else's). A command killed with SIGKILL cannot release
   anything: `labgrid-client -p PLACE release` (or a coordinator restart) frees it.
5. Each record (ARTIFACT/measurements/...json, and report.json) gets the board's identity: the
   place, the exporter, the resource and its address, the place's tags, under `farm` and in the
   latency scopes' `device`. The merged report lists every run per board; figures of different
   boards are never divided (each record's ratio, if any, is its before/after on one board).

If the coordinator is lost mid-run, the runs in progress finish (their boards still answer;
an exporter that went down with the coordinator ends its serial runs, which keep what they read),
but their records are marked partial (`farm.lock_lost`: the place was no longer reserved for
them); no further place is acquired, the artifacts not yet started are reported as such, and
the command ends with one sentence. The coordinator forgets every hold when it restarts; where
it is back within RECONNECT_S, this command releases its places itself.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from edgedeploy import __version__, interrupts
from edgedeploy.artifacts import atomic_write_json, check_manifest, now_iso
from edgedeploy.devices.board_output import terminal_safe
from edgedeploy.devices.labgrid import (
    NETWORK_SERIAL_PORT,
    NETWORK_SERVICE,
    FarmClient,
    FarmConnectionLost,
    FarmUnavailable,
    PlaceBusy,
    PlaceInfo,
    board_access,
    board_identity,
    farm_url,
    place_matches_pattern,
)
from edgedeploy.errors import ArtifactError, DeviceError, EdgedeployError
from edgedeploy.interrupts import Interrupted

FARM_SCHEMA = "edgedeploy.farm-measurement/1"
DEFAULT_PLACE_WAIT_S = 600.0
POLL_S = 0.2
# After SIGINT, a child `edgedeploy measure` gets this long to clean up the board's work folder
# and end its ssh connection before its process group is killed.
INTERRUPT_GRACE_S = 15.0
# How long to try to get back to a lost coordinator to release our places.
RECONNECT_S = 10.0
# What one child measure may take beyond its own time-outs before it is stopped.
CHILD_MARGIN_S = 300.0


class FarmInterrupted(EdgedeployError):
    """Ctrl-C or SIGTERM during a farm run: children stopped, places released."""

    exit_code = 130


@dataclass
class FarmRequest:
    """What the CLI asks of the farm."""

    artifacts: list[Path]
    address: str  # the coordinator, "HOST:PORT"
    place_pattern: str | None = None
    parallel: int = 0  # 0: one per artifact
    place_wait_s: float = DEFAULT_PLACE_WAIT_S
    # How the boards of SSH places are used: their interpreter, extra ssh options, work folder,
    # and the login when the NetworkService names none (or to override it).
    python: str = "python3"
    ssh_options: tuple[str, ...] = ()
    allow_commands: bool = False  # the inventory entry allows ssh_options that run commands
    workdir: str | None = None
    user: str | None = None
    # `edgedeploy measure` options for the children, by transport (what the user gave).
    ssh_args: list[str] = field(default_factory=list)
    serial_args: list[str] = field(default_factory=list)
    session_timeout_s: float = 600.0
    sessions: int = 3


# measure's options as the child `edgedeploy measure` of each board takes them, by transport
# (edgedeploy.measure_farm's keyword: the child's flag). A serial board's firmware has the
# sessions built in; it takes the user's data only when given some (--eval-count alone is for
# the runners).
SSH_CHILD_OPTIONS = {
    "sessions": "--sessions",
    "warmup": "--warmup",
    "min_iterations": "--min-iterations",
    "min_duration_s": "--min-duration",
    "eval": "--eval",
    "eval_count": "--eval-count",
    "threads": "--threads",
    "before": "--no-before",
    "timeout_s": "--timeout",
}
SERIAL_CHILD_OPTIONS = {"flash": "--flash", "firmware_build": "--firmware-build", "reset": "--reset", "console": "--console", "timeout_s": "--timeout"}
SERIAL_EVAL_OPTIONS = ("eval", "eval_count")


def child_arguments(options: dict) -> tuple[list[str], list[str]]:
    """The child measure's arguments for SSH boards and for serial boards, from the options the
    caller gave (a None value, or `before` left True, is not given: the child uses its default)."""

    def argv(mapping: dict[str, str]) -> list[str]:
        out: list[str] = []
        for name, flag in mapping.items():
            value = options.get(name)
            if name == "before":
                out += [flag] if value is False else []
            elif isinstance(value, bool):
                out += [flag] if value else []
            elif value is not None:
                out += [flag, str(value)]
        return out

    serial = dict(SERIAL_CHILD_OPTIONS)
    if options.get("eval") is not None:
        serial.update({name: SSH_CHILD_OPTIONS[name] for name in SERIAL_EVAL_OPTIONS})
    return argv(SSH_CHILD_OPTIONS), argv(serial)


@dataclass
class FarmJob:
    index: int
    artifact: Path
    chip: str | None
    transport: str  # "ssh" | "serial"
    setup_s: float = 0.0  # the board's worst-case preparation before it measures (Target.board_setup_worst_case_s)
    candidates: list[str] = field(default_factory=list)
    status: str = "waiting"  # waiting | running | measured | partial | failed | waited out | not started | interrupted | timed out
    place: str | None = None
    place_info: PlaceInfo | None = None
    device_name: str | None = None
    error: str | None = None
    record: dict | None = None
    record_file: Path | None = None
    lock_lost: bool = False
    wait_started: float | None = None
    waited_s: float = 0.0
    started: float | None = None
    wall_s: float | None = None
    # The child measure's window in unix time (from its start to its exit): two runs measured in
    # parallel have overlapping windows, whatever else loads the machine.
    started_unix: float | None = None
    ended_unix: float | None = None
    process: subprocess.Popen | None = None
    thread: threading.Thread | None = None
    done: threading.Event = field(default_factory=threading.Event)
    stop_reason: str | None = None

    @property
    def label(self) -> str:
        return f"{self.artifact.parent.name}/{self.artifact.name}"


def board_transport(chip: str | None) -> tuple[str, float]:
    """(transport, worst-case board preparation in seconds) for a chip: serial for a chip whose
    target flashes and reads board firmware (Capability.SERIAL), with the target's own build and
    flash time limits (Target.board_setup_worst_case_s); else ssh, with none."""
    if chip is None:
        return "ssh", 0.0
    from edgedeploy.targets import find_chip
    from edgedeploy.targets.base import Capability

    target, _ = find_chip(chip)
    if target.has(Capability.SERIAL):
        return "serial", float(target.board_setup_worst_case_s)
    return "ssh", 0.0


def plan_jobs(artifacts: list[Path]) -> list[FarmJob]:
    jobs = []
    seen = set()
    for index, artifact in enumerate(artifacts):
        artifact = Path(artifact)
        key = artifact.resolve()
        if key in seen:
            raise ArtifactError(f"{artifact} is given twice; each artifact is measured once per run.")
        seen.add(key)
        manifest = check_manifest(artifact, None)
        chip = (manifest.get("target") or {}).get("chip")
        if chip is None and (manifest.get("runner") or {}).get("kind") != "onnx-cpu":
            raise ArtifactError(f"{artifact} names no chip and no runner; it cannot be measured on a farm board.")
        transport, setup_s = board_transport(chip)
        jobs.append(FarmJob(index=index, artifact=artifact, chip=chip, transport=transport, setup_s=setup_s))
    return jobs


def place_fits(job: FarmJob, place: PlaceInfo, pattern: str | None) -> bool:
    if not place_matches_pattern(place.name, place.aliases, pattern):
        return False
    needed = NETWORK_SERIAL_PORT if job.transport == "serial" else NETWORK_SERVICE
    if place.resource(needed) is None:
        return False
    if job.chip is None:
        return True  # a generic ONNX artifact runs on any Linux board's CPU
    return place.chip == job.chip


def no_place_sentence(job: FarmJob, places: dict[str, PlaceInfo], request: FarmRequest) -> str:
    what = f"chip={job.chip}" if job.chip else "a NetworkService (a Linux board)"
    needs = "a serial port" if job.transport == "serial" else "a NetworkService"
    pattern = f" and the pattern {request.place_pattern!r}" if request.place_pattern else ""
    listed = "; ".join(
        f"{p.name} ({p.describe_tags()}; {', '.join(sorted({r.cls for r in p.resources})) or 'no resources'})" for p in sorted(places.values(), key=lambda p: p.name)
    ) or "none"
    chip_part = f" tagged chip={job.chip} with {needs}" if job.chip else f" with {what}"
    return f"No place on the labgrid farm at {request.address} fits {job.artifact}: it needs a place{chip_part}{pattern}; the places are: {listed}."


def device_entry(job: FarmJob, place: PlaceInfo, request: FarmRequest) -> dict:
    """The one-entry inventory that describes an acquired place's board to `edgedeploy measure`."""
    access = board_access(place, job.transport)
    entry: dict = {"transport": job.transport}
    if job.chip:
        entry["chip"] = job.chip
    if job.transport == "ssh":
        entry.update(host=access["host"], port=access["port"], python=request.python, ssh_options=list(request.ssh_options))
        if request.allow_commands:
            entry["allow_commands"] = True
        user = request.user or access.get("user")
        if user:
            entry["user"] = user
        if request.workdir:
            entry["workdir"] = request.workdir
    else:
        entry.update(serial_port=access["serial_port"], baud=access["baud"])
    return entry


def device_name_for(place: str, index: int, taken: set[str]) -> str:
    cleaned = "".join(c if (c.isalnum() or c in "-_.") else "_" for c in place).strip("._-")[:50] or "place"
    name = f"labgrid.{cleaned}"
    if name in taken:
        name = f"{name}.{index}"
    taken.add(name)
    return name


def child_deadline_s(job: FarmJob, request: FarmRequest) -> float:
    if job.transport == "serial":
        return job.setup_s + request.session_timeout_s + CHILD_MARGIN_S
    return (2 * request.sessions + 2) * request.session_timeout_s + CHILD_MARGIN_S


class FarmRun:
    """One `measure --farm` run: the jobs, the coordinator client, the children; see the module docstring."""

    def __init__(self, request: FarmRequest, echo: Callable[[str], None]):
        self.request = request
        self.echo = echo
        self.jobs: list[FarmJob] = []
        self.client: FarmClient | None = None
        self.held: set[str] = set()  # places this run acquired and has not released
        self.lost_at: float | None = None
        self.lost_error: str | None = None
        self.started_at = now_iso()
        self.t0 = time.monotonic()
        self.stage = Path(tempfile.mkdtemp(prefix="edgedeploy-farm-"))
        self._names: set[str] = set()
        self._lock = threading.Lock()

    # -- the run -------------------------------------------------------------------------------

    def run(self) -> dict:
        request = self.request
        self.jobs = plan_jobs(request.artifacts)
        previous_term = _install_sigterm()
        interrupted = False
        try:
            self.client = FarmClient(request.address)
            self.echo(f"farm: connected to the labgrid coordinator at {request.address} as {self.client.identity}")
            places = self.client.places()
            for job in self.jobs:
                job.candidates = sorted(name for name, place in places.items() if place_fits(job, place, request.place_pattern))
                if not job.candidates:
                    raise DeviceError(no_place_sentence(job, places, request))
            parallel = request.parallel or len(self.jobs)
            self.echo(
                f"farm: {len(self.jobs)} artifact(s), at most {parallel} at once; "
                + "; ".join(f"{job.label} ({job.chip or 'generic'}, {job.transport}) on one of {', '.join(job.candidates)}" for job in self.jobs)
            )
            self._schedule(parallel)
        except (KeyboardInterrupt, Interrupted):
            interrupted = True
        finally:
            # Run to its end, whatever signal comes meanwhile (its progress lines included).
            with interrupts.deferred():
                self._clean_up(interrupted, previous_term)
        if interrupted:
            raise FarmInterrupted(self._interrupted_sentence())
        return self.report()

    def _clean_up(self, interrupted: bool, previous_term) -> None:
        try:
            # Children first (a board is never left running for a released place), then the places.
            self._stop_children("interrupted" if interrupted else "stopped")
            self._release_all()
        finally:
            if self.client is not None:
                self.client.close()
            _restore_sigterm(previous_term)
            shutil.rmtree(self.stage, ignore_errors=True)

    def _schedule(self, parallel: int) -> None:
        request = self.request
        while True:
            finished = [job for job in self.jobs if job.status == "running" and job.done.is_set()]
            for job in finished:
                self._finish(job)
            if self.lost_at is None and self.client.lost:
                self._coordinator_lost()
            waiting = [job for job in self.jobs if job.status == "waiting"]
            running = [job for job in self.jobs if job.status == "running"]
            if not waiting and not running:
                return
            if self.lost_at is not None:
                for job in waiting:
                    job.status = "not started"
                    job.error = f"not started: {self.lost_error}"
                if not running:
                    return
                self._check_deadlines(running)
                time.sleep(POLL_S)
                continue
            self._check_deadlines(running)
            if waiting and len(running) < parallel:
                try:
                    places = self.client.places()
                except FarmConnectionLost:
                    continue
                for job in waiting:
                    if len([j for j in self.jobs if j.status == "running"]) >= parallel:
                        break
                    self._try_start(job, places)
            time.sleep(POLL_S)

    def _try_start(self, job: FarmJob, places: dict[str, PlaceInfo]) -> None:
        ours = {j.place for j in self.jobs if j.status == "running" and j.place}
        free = [name for name in job.candidates if name in places and not places[name].acquired and not places[name].reservation and name not in ours]
        now = time.monotonic()
        for name in free:
            # Counted as ours before the request: an interrupt right after it still releases it.
            self.held.add(name)
            try:
                info = self.client.acquire(name)
            except PlaceBusy:
                self.held.discard(name)
                continue  # taken between our look and our request: try the next
            except FarmConnectionLost:
                return
            if job.wait_started is not None:
                job.waited_s += now - job.wait_started
                job.wait_started = None
            self._start_child(job, info)
            return
        held_by_us = any(name in ours for name in job.candidates)
        if held_by_us:
            # Waiting for one of our own runs is not waiting for someone else: no time-out.
            if job.wait_started is not None:
                job.waited_s += now - job.wait_started
                job.wait_started = None
            return
        if job.wait_started is None:
            job.wait_started = now
            holders = ", ".join(f"{n} by {places[n].acquired or 'a reservation'}" for n in job.candidates if n in places)
            self.echo(f"farm: {job.label}: every fitting place is held ({holders}); waiting up to {self.request.place_wait_s:.0f} s")
        elif now - job.wait_started >= self.request.place_wait_s:
            job.waited_s += now - job.wait_started
            job.wait_started = None
            job.status = "waited out"
            holders = ", ".join(f"{n} is held by {places[n].acquired}" if places.get(n) and places[n].acquired else f"{n} is reserved for someone else" for n in job.candidates)
            job.error = (
                f"no place for {job.artifact} became free on the labgrid farm at {self.request.address} within {self.request.place_wait_s:.0f} s "
                f"({holders}); nothing was measured on it"
            )
            self.echo(f"farm: {job.label}: {job.error}")

    def _start_child(self, job: FarmJob, info: PlaceInfo) -> None:
        request = self.request
        job.place = info.name
        job.place_info = info
        job.device_name = device_name_for(info.name, job.index, self._names)
        try:
            entry = device_entry(job, info, request)
        except DeviceError as exc:
            job.status = "failed"
            job.error = str(exc).rstrip(".")
            self._release(info.name)
            return
        inventory = self.stage / f"inventory-{job.index}.json"
        inventory.write_text(json.dumps({"devices": {job.device_name: entry}}))
        extra = request.serial_args if job.transport == "serial" else request.ssh_args
        argv = [sys.executable, "-m", "edgedeploy", "measure", str(job.artifact), "--device", job.device_name, "--inventory", str(inventory), "--format", "json", *extra]
        where = entry.get("serial_port") or f"{entry.get('user') + '@' if entry.get('user') else ''}{entry.get('host')}:{entry.get('port')}"
        self.echo(f"farm: {job.label}: acquired place {info.name} ({info.describe_tags()}); measuring over {job.transport} at {where}")
        job.status = "running"
        job.started = time.monotonic()
        job.started_unix = time.time()
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        env.pop("EDGEDEPLOY_DEVICES", None)
        job.process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=env, start_new_session=True)
        job.thread = threading.Thread(target=self._watch_child, args=(job,), name=f"farm {info.name}", daemon=True)
        job.thread.start()

    def _watch_child(self, job: FarmJob) -> None:
        """Forward the child's progress (escaped, prefixed with the place), keep its record and its error sentence."""
        proc = job.process
        chunks: list[bytes] = []
        reader = threading.Thread(target=lambda: chunks.append(proc.stdout.read()), daemon=True)
        reader.start()
        last_error = None
        for raw in proc.stderr:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            if line.startswith("error: "):
                last_error = line[len("error: ") :]
            self.echo(f"  [{job.place}] {terminal_safe(line)}")
        proc.wait()
        job.ended_unix = time.time()
        reader.join()
        out = b"".join(chunks).decode("utf-8", "replace")
        try:
            job.record = json.loads(out) if out.strip() else None
        except ValueError:
            job.record = None
        if not isinstance(job.record, dict):
            job.record = None
        if proc.returncode != 0 and job.stop_reason is None:
            job.error = last_error or f"edgedeploy measure ended with status {proc.returncode}"
        elif job.stop_reason is not None:
            job.error = job.stop_reason
        job.done.set()

    def _finish(self, job: FarmJob) -> None:
        job.thread.join(5)
        job.wall_s = round(time.monotonic() - job.started, 2)
        if self.lost_at is not None and job.started <= self.lost_at + 1e-9:
            job.lock_lost = True
        if job.record is not None:
            sessions = sum(len(rec.get("sessions") or []) for rec in (job.record.get("latency") or {}).values() if isinstance(rec, dict))
            if sessions == 0:
                job.status = "failed"  # the board gave nothing (its record says why)
            else:
                job.status = "partial" if (job.record.get("partial") or job.lock_lost or job.error) else "measured"
            self._annotate(job)
        elif job.stop_reason:
            job.status = "interrupted" if "interrupt" in job.stop_reason else "timed out"
        else:
            job.status = "failed"
        self._release(job.place)
        note = f"{job.status} in {job.wall_s:.1f} s" + (f": {job.error.rstrip('.')}" if job.error else "")
        self.echo(f"farm: {job.label} on {job.place}: {note}; place released")

    def _annotate(self, job: FarmJob) -> None:
        """The board's identity into the record (and report.json), written again atomically."""
        from edgedeploy.pipeline.measure import summarize_for_report
        from edgedeploy.report.artifact import update_report_section

        record = job.record
        identity = board_identity(job.place_info, job.transport)
        farm = {
            "url": farm_url(self.request.address),
            "coordinator": self.request.address,
            "acquired_as": self.client.identity if self.client else None,
            "waited_s": round(job.waited_s, 2),
            "lock_lost": job.lock_lost,
            **identity,
        }
        record["farm"] = farm
        if isinstance(record.get("device"), dict):
            record["device"]["place"] = job.place
        for rec in (record.get("latency") or {}).values():
            if isinstance(rec, dict) and isinstance(rec.get("scope"), dict):
                device = rec["scope"].get("device")
                if isinstance(device, dict):
                    device["place"] = job.place
                    device["board"] = {k: identity.get(k) for k in ("exporter", "resource", "address", "serial_path_on_exporter") if identity.get(k)}
        if job.lock_lost:
            record["partial"] = True
            why = (
                f"the labgrid coordinator at {self.request.address} was lost while this run held place {job.place}, "
                "so the board was no longer reserved for it"
            )
            record["error"] = f"{record['error'].rstrip('.')}; {why}." if record.get("error") else f"{why[0].upper()}{why[1:]}."
        rel = record.get("file")
        if isinstance(rel, str) and rel.startswith("measurements/") and "/" not in rel[len("measurements/") :]:
            path = job.artifact / rel
            atomic_write_json(path, record)
            update_report_section(job.artifact, ("measurements", job.device_name), summarize_for_report(record))
            job.record_file = path

    def _check_deadlines(self, running: list[FarmJob]) -> None:
        now = time.monotonic()
        for job in running:
            if job.done.is_set() or job.stop_reason:
                continue
            limit = child_deadline_s(job, self.request)
            if now - job.started > limit:
                job.stop_reason = f"the run on place {job.place} took longer than {limit:.0f} s and was stopped"
                self.echo(f"farm: {job.label}: {job.stop_reason}")
                _stop_process(job.process)

    def _coordinator_lost(self) -> None:
        self.lost_at = time.monotonic()
        why = ""
        tail = [line for line in self.client.log_tail() if line.startswith("error:")]
        if tail:
            why = f" ({tail[-1].split(': ', 1)[1]})"
        self.lost_error = f"the labgrid coordinator at {self.request.address} was lost{why}"
        running = [job.place for job in self.jobs if job.status == "running"]
        self.echo(
            f"farm: {self.lost_error}; no further place is acquired"
            + (f"; the runs on {', '.join(running)} finish and are marked partial" if running else "")
        )

    # -- stopping and releasing ----------------------------------------------------------------

    def _stop_children(self, why: str) -> None:
        running = [job for job in self.jobs if job.process is not None and job.process.poll() is None]
        for job in running:
            job.stop_reason = job.stop_reason or f"{why} while running on place {job.place}"
            _signal_group(job.process, signal.SIGINT)
        deadline = time.monotonic() + INTERRUPT_GRACE_S
        for job in running:
            try:
                job.process.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                _signal_group(job.process, signal.SIGKILL)
                job.process.wait()
            # Whatever the group left behind (its ssh helpers share it) goes with it.
            _signal_group(job.process, signal.SIGKILL)
        for job in running:
            if job.thread is not None:
                job.thread.join(10)
            if job.status == "running":
                job.wall_s = round(time.monotonic() - job.started, 2)
                job.status = "interrupted" if why == "interrupted" else "failed"
                job.error = job.stop_reason

    def _release(self, name: str | None) -> None:
        if not name or name not in self.held:
            return
        if self.client is not None and self.client.release(name):
            self.held.discard(name)

    def _release_all(self) -> None:
        for name in sorted(self.held):
            self._release(name)
        if not self.held or self.client is None:
            return
        # The coordinator was lost: try to get back to it, to release what it may still hold for us.
        deadline = time.monotonic() + RECONNECT_S
        while self.held and time.monotonic() < deadline:
            try:
                client = FarmClient(self.request.address, connect_timeout_s=3)
            except FarmUnavailable:
                time.sleep(1)
                continue
            try:
                places = client.places()
                for name in sorted(self.held):
                    if places.get(name) is None or places[name].acquired != client.identity or client.release(name):
                        self.held.discard(name)
            finally:
                client.close()
        if self.held:
            self.echo(
                f"farm: could not release {', '.join(sorted(self.held))} (the coordinator did not come back within {RECONNECT_S:.0f} s); "
                "it forgets every hold when it restarts, or run `labgrid-client -p PLACE release`"
            )

    def _interrupted_sentence(self) -> str:
        places = sorted({job.place for job in self.jobs if job.place} - self.held)
        kept = [job for job in self.jobs if job.record_file is not None]
        released = f"place(s) {', '.join(places)} released" if places else "no place had been acquired"
        if self.held:
            released += f", {', '.join(sorted(self.held))} could not be released (`labgrid-client -p PLACE release`)"
        keep = f"; the results of {len(kept)} finished run(s) are kept" if kept else "; nothing was recorded for the runs stopped"
        return f"Interrupted: the farm runs were stopped, {released}{keep}."

    # -- the merged report ---------------------------------------------------------------------

    def report(self) -> dict:
        runs = [run_summary(job) for job in self.jobs]
        bad = [job for job in self.jobs if job.status != "measured"]
        error = None
        if self.lost_error:
            measured = [job for job in self.jobs if job.record_file is not None]
            not_started = [job for job in self.jobs if job.status == "not started"]
            error = (
                f"{self.lost_error[0].upper()}{self.lost_error[1:]} during the run: {len(measured)} of {len(self.jobs)} artifact(s) have results, "
                f"kept and marked partial where the run was in progress"
                + (f", and {len(not_started)} were not started" if not_started else "")
                + "."
            )
        elif bad:
            first = bad[0]
            what = (first.error or first.status).rstrip(".")
            if len(self.jobs) == 1:
                error = f"{what[0].upper()}{what[1:]}."
            else:
                more = f" (and {len(bad) - 1} more; see the report)" if len(bad) > 1 else ""
                error = f"{len(self.jobs) - len(bad)} of {len(self.jobs)} artifacts were measured on the labgrid farm at {self.request.address}; {first.label}: {what}{more}."
        return {
            "schema": FARM_SCHEMA,
            "edgedeploy_version": __version__,
            "created_at": self.started_at,
            "farm": {
                "url": farm_url(self.request.address),
                "coordinator": self.request.address,
                "acquired_as": self.client.identity if self.client else None,
                "place_pattern": self.request.place_pattern,
                "parallel": self.request.parallel or len(self.jobs),
                "place_wait_s": self.request.place_wait_s,
                "coordinator_lost": self.lost_error is not None,
            },
            "wall_s": round(time.monotonic() - self.t0, 2),
            "partial": bool(bad) or self.lost_error is not None,
            "error": error,
            "runs": runs,
            "across_boards": {
                "divided": False,
                "why": "figures measured on different boards are never divided; each run's ratio, if any, is its before/after on its own board",
            },
        }


def run_summary(job: FarmJob) -> dict:
    """One run of the merged report: where (place and board), what, and its figures' summaries."""
    record = job.record or {}
    latency = {}
    for label, rec in (record.get("latency") or {}).items():
        if isinstance(rec, dict):
            summary = rec.get("summary") or {}
            latency[label] = {
                "median_us": summary.get("median_us"),
                "session_median_range_us": summary.get("session_median_range_us"),
                "sessions": summary.get("sessions"),
                "backend": (rec.get("backend") or {}).get("label"),
                "scope": rec.get("scope"),
                "partial": rec.get("partial"),
            }
    accuracy = record.get("accuracy")
    return {
        "artifact": str(job.artifact),
        "chip": job.chip,
        "transport": job.transport,
        "place": job.place,
        "device": job.device_name,
        "board": (record.get("farm") if record else (board_identity(job.place_info, job.transport) if job.place_info else None)),
        "status": job.status,
        "partial": job.status != "measured",
        "lock_lost": job.lock_lost,
        "error": job.error,
        "waited_s": round(job.waited_s, 2),
        "wall_s": job.wall_s,
        "started_unix": round(job.started_unix, 3) if job.started_unix is not None else None,
        "ended_unix": round(job.ended_unix, 3) if job.ended_unix is not None else None,
        "record_file": str(job.record_file) if job.record_file else None,
        "latency": latency,
        "comparison_on_this_board": record.get("comparison"),
        "accuracy": ({k: accuracy.get(k) for k in ("metric", "samples", "before", "after", "delta", "scope") if k in accuracy} if isinstance(accuracy, dict) else None),
    }


def _signal_group(proc: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _stop_process(proc: subprocess.Popen | None) -> None:
    """SIGINT to a child's group (it cleans up), SIGKILL after the grace period, in a helper thread."""
    if proc is None:
        return

    def stop():
        _signal_group(proc, signal.SIGINT)
        try:
            proc.wait(INTERRUPT_GRACE_S)
        except subprocess.TimeoutExpired:
            pass
        _signal_group(proc, signal.SIGKILL)

    threading.Thread(target=stop, daemon=True).start()


class _Terminated(KeyboardInterrupt):
    """SIGTERM, turned into the same clean stop as Ctrl-C."""


def _install_sigterm():
    if threading.current_thread() is not threading.main_thread():
        return None

    def on_term(signum, frame):
        raise _Terminated()

    return signal.signal(signal.SIGTERM, on_term)


def _restore_sigterm(previous) -> None:
    if previous is not None and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, previous)


def measure_on_farm(request: FarmRequest, echo: Callable[[str], None]) -> dict:
    """Run a farm measurement; returns the merged report (its `error` is the sentence when something was not measured)."""
    return FarmRun(request, echo).run()
