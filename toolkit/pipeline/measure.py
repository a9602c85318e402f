"""`edgedeploy measure ARTIFACT --device NAME`: before and after, on the device, same inputs.

1. The artifact's manifest is checked (files intact; built for the device's chip).
2. The "after" runner comes from the target (`Target.runner_spec`) or, for a generic ONNX
   artifact, the built-in onnx-cpu runner; the "before" runner is the target's baseline or, by
   default, the reference ONNX model on ONNX Runtime CPU on the same device.
3. Both are copied to one fresh work folder on the device and run for >= 3 sessions each, each
   session a separate process, alternating after/before so that drift on the device (heat,
   other load) falls on both alike. The first session's outputs are fetched for the output check.
4. The sessions are combined into `edgedeploy.latency/1` records (harness.make_measurement:
   per-session statistics and the range across sessions); before and after are divided only
   when their scopes agree in everything but ONE part of the deployment (same model, inputs,
   batch and device; backend, precision or threads changed: schema.ratio_refusal, the rule
   `bench` uses too); outputs are compared with the host's ONNX Runtime reference on the very
   same inputs.
5. The full record goes to ARTIFACT/measurements/<time>-<device>.json (atomically); its summary
   is folded into ARTIFACT/report.json under measurements.<device>.

A board on a serial port (device.transport == "serial") has no files or commands: the target
flashes and reads it (Target.measure_serial) and its sessions become the "after" record, stored
the same way (run_serial_measure).

If the device fails mid-way (dropped connection, time-out, a crashing runner), the sessions
gathered so far are still written, marked `"partial": true` with the error, and the command
ends with one sentence saying so.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from edgedeploy import __version__
from edgedeploy.artifacts import atomic_write_json, check_manifest, now_iso, safe_path_component
from edgedeploy.devices.base import Device, DeviceConnectionLost
from edgedeploy.devices.inventory import describe
from edgedeploy.devices.runners import (
    INPUTS_REMOTE_NAME,
    ONNX_CPU_RUNNER,
    onnx_cpu_runner_spec,
    write_inputs_npz,
)
from edgedeploy.errors import ArtifactError, DeviceError
from edgedeploy.interrupts import reraise_if_interrupted
from edgedeploy.measure.harness import SessionSettings, make_measurement
from edgedeploy.measure.reference import ReferenceRunner
from edgedeploy.measure.verify import declared_detection, model_evidence, verify
from edgedeploy.progress import StepStarted
from edgedeploy.targets import find_chip
from edgedeploy.targets.base import Capability
from edgedeploy.measure.schema import SCOPE_FIELDS, ratio_refusal, scope_differences

MEASUREMENT_SCHEMA = "edgedeploy.measurement/1"
LABELS = ("after", "before")
# What describes the deployment of a before/after pair; a ratio is given only when ONE of
# ONE_DEPLOYMENT_CHANGE differs (an fp32 baseline on one runtime against an fp16 engine on
# another differs in two things, and gets both figures side by side instead).
DEPLOYMENT_FIELDS = ("backend", "precision", "threads", "deployed_model")
ONE_DEPLOYMENT_CHANGE = ("backend", "precision", "threads")
# Scope fields that follow from the deployment (the file run, the runtime's version and unit).
RUNTIME_DESCRIPTORS = ("deployed_model", "backend_version", "unit", "figures", "backend_reported")
# A device in a measure scope: the inventory's name and the machine its runner saw (the CPU
# runners do not list accelerators, so they are not part of the identity here).
MEASURE_DEVICE_IDENTITY = ("name", "hostname", "cpu_model", "cpu_cores")
DEFAULT_EVAL_COUNT = 200


@dataclass
class RunnerRun:
    """The sessions of one runner (after or before) on the device."""

    label: str
    spec: object  # RunnerSpec
    sessions: list[dict] = field(default_factory=list)
    fetched: dict[str, Path] = field(default_factory=dict)  # result files of the first session
    error: str | None = None


@dataclass
class MeasureRequest:
    artifact: Path
    device: Device
    settings: SessionSettings = field(default_factory=SessionSettings)
    eval_path: Path | None = None
    eval_count: int | None = DEFAULT_EVAL_COUNT
    threads: int = 0
    before: bool = True
    # Serial boards only (Target.measure_serial): how to flash, where the user's binaries are,
    # how to reset the board, and where its console lines go (None: nowhere).
    flash: str = "auto"
    firmware_build: Path | None = None
    reset: str = "auto"
    console_echo: Callable[[str], None] | None = None


def run_measure(request: MeasureRequest, echo: Callable[[str], None] = lambda line: None, raise_on_partial: bool = True) -> dict:
    """Measure an artifact on a device; returns the measurement record (also written to the artifact).

    When the device failed mid-way the partial record is written first; then DeviceError is
    raised (or, with raise_on_partial=False, the record is returned with "partial": true and
    `partial_error(record)` gives the sentence).
    """
    from edgedeploy.devices import open_transport

    artifact = Path(request.artifact)
    device = request.device
    settings = request.settings.check()
    if device.transport == "serial":
        return run_serial_measure(request, echo, raise_on_partial)
    manifest = check_artifact_for_device(artifact, device)
    report = _read_report(artifact)
    started_at = now_iso()
    with tempfile.TemporaryDirectory(prefix="edgedeploy-measure-") as tmp:
        stage = Path(tmp)
        runs, inputs_note = _runner_specs(artifact, manifest, report, device, request, stage)
        echo(f"measure: {artifact} on device '{device.name}' ({device.transport}); {settings.sessions} sessions each of: {', '.join(runs)}")
        if is_host_run(manifest, device):
            echo(f"measure: a {manifest['target']['chip']} artifact on this host: {', '.join(f'{k} = {v.backend}' for k, v in runs.items())}; host figures, not the {manifest['target']['chip']}'s latency")
        transport = open_transport(device)
        try:
            results, fatal, run_folder = run_sessions(transport, device, runs, settings.sessions, stage / "fetched", echo)
        finally:
            try:
                transport.close()
            except Exception:  # noqa: BLE001 - closing a dead connection must not hide the real error
                pass
        record = build_record(artifact, manifest, report, device, settings, results, fatal, inputs_note, started_at, stage)
        # Where the runs happened on the device, and whether it was removed (not when the device was lost).
        record["device"]["run_folder"] = run_folder
    return store_record(artifact, device, record, started_at, echo, raise_on_partial)


def store_record(artifact: Path, device: Device, record: dict, started_at: str, echo: Callable[[str], None], raise_on_partial: bool) -> dict:
    """Write the record to ARTIFACT/measurements/ and its summary into report.json; raise if partial (when asked)."""
    from edgedeploy.report.artifact import update_report_section

    name = f"{started_at.replace(':', '').replace('-', '')[:15]}-{safe_path_component(device.name)}.json"
    path = artifact / "measurements" / name
    record["file"] = f"measurements/{name}"
    atomic_write_json(path, record)
    update_report_section(artifact, ("measurements", device.name), summarize_for_report(record))
    echo(f"measure: wrote {path} and updated {artifact / 'report.json'}")
    if record["partial"] and raise_on_partial:
        raise partial_error(record, artifact)
    return record


def partial_error(record: dict, artifact: Path) -> DeviceError:
    from edgedeploy.devices.serial import KEPT_CLAUSE

    kept = sum(len(r["sessions"]) for r in record["latency"].values() if r)
    message = record.get("error") or "Fewer sessions than requested completed."
    if KEPT_CLAUSE in message:
        # The serial reader's sentence says already that the results are kept: say where.
        return DeviceError(message.replace(KEPT_CLAUSE, f"; the {kept} session(s) read so far are kept in {Path(artifact) / record['file']}, marked partial", 1))
    return DeviceError(f"{message.rstrip('.')}. The {kept} session(s) gathered so far are kept in {Path(artifact) / record['file']}, marked partial.")


def check_artifact_for_device(artifact: Path, device: Device) -> dict:
    """The manifest, after refusing an artifact built for another chip than the device's."""
    manifest = check_manifest(artifact, None)
    built_for = (manifest.get("target") or {}).get("chip")
    if built_for is None and device.transport == "serial":
        raise ArtifactError(
            f"{artifact} is not built for a chip, and the board on {device.serial_port} runs only firmware built for it; "
            f"build with --target {device.chip or 'CHIP'} and measure that artifact."
        )
    if built_for is None:
        if (manifest.get("runner") or {}).get("kind") != ONNX_CPU_RUNNER:
            raise ArtifactError(f"{artifact} names no chip and no runner; it cannot be measured on a device.")
        return manifest
    if is_host_run(manifest, device):
        # This machine runs what it can of the artifact (Target.host_runner_spec), as host figures.
        target, chip = find_chip(built_for)
        if not target.has(Capability.HOST):
            where = f"--device {chip.id}@PORT for a board on a serial port, or " if target.has(Capability.SERIAL) else ""
            raise DeviceError(
                f"Nothing of this {target.name} artifact runs on this machine: {target.host_unavailable}. "
                f"Measure it on the {chip.id} itself: {where}--device NAME of an inventory entry (`edgedeploy devices`)."
            )
        return manifest
    if device.chip is None:
        raise ArtifactError(
            f"{artifact} was built for {built_for}, but device '{device.name}' declares no chip; "
            f"measure it on a device whose inventory entry says chip = \"{built_for}\"."
        )
    return check_manifest(artifact, device.chip, verify_files=False)


def is_host_run(manifest: dict, device: Device) -> bool:
    """A chip's artifact measured on this machine (`--device local`): host figures, never the chip's."""
    return bool((manifest.get("target") or {}).get("chip")) and device.transport == "local" and device.chip is None


def host_note(chip: str, backend_label: str) -> str:
    """The label every host figure carries: where it ran, on what, and what it is not."""
    return f"host figures: {backend_label} on this machine, not the {chip}'s latency"


def _read_report(artifact: Path) -> dict:
    from edgedeploy.report.schema import load_report_file

    return load_report_file(artifact / "report.json")


# -- serial boards ------------------------------------------------------------------------------


def run_serial_measure(request: MeasureRequest, echo: Callable[[str], None], raise_on_partial: bool) -> dict:
    """A board on a serial port: the target flashes and reads it (Target.measure_serial); the record is stored as for runners.

    A board runs no ONNX Runtime baseline, so there is only an "after"; its figures are never
    divided by the host's (another device). When the board gave no session at all, nothing is
    written and the board's error is raised.
    """
    artifact = Path(request.artifact)
    device = request.device
    manifest = check_artifact_for_device(artifact, device)
    report = _read_report(artifact)
    target, _chip = find_chip(manifest["target"]["chip"])
    if not target.has(Capability.SERIAL):
        raise DeviceError(f"{target.name} artifacts are not run on boards over a serial port; give device '{device.name}' an ssh or local transport.")
    started_at = now_iso()
    echo(f"measure: {artifact} on the board '{device.name}' (serial {device.serial_port}, {device.baud} baud); flash: {request.flash}")
    section = target.measure_serial(
        artifact,
        manifest,
        device,
        flash=request.flash,
        firmware_build=request.firmware_build,
        timeout_s=request.settings.timeout_s,
        reset=request.reset,
        echo=echo,
        console_echo=request.console_echo,
        # The user's data streamed to the board (issue 19): only when given, other boards' firmware has no such loop.
        **({"eval_path": request.eval_path, "eval_count": request.eval_count} if request.eval_path else {}),
    )
    if not section.get("sessions"):
        raise DeviceError(section.get("error") or f"The board on {device.serial_port} gave no result line.")
    for index, session in enumerate(section["sessions"]):
        lat = session["latency_us"]
        echo(
            f"  after session {index + 1}/{section.get('sessions_expected') or '?'} on the board: median {lat['p50']:.1f} us, "
            f"p90 {lat['p90']:.1f} us over {session['iterations']} iterations; outputs match: {session.get('outputs_match')}"
        )
    record = serial_record(artifact, manifest, report, device, request, section, started_at)
    return store_record(artifact, device, record, started_at, echo, raise_on_partial)


def serial_record(artifact: Path, manifest: dict, report: dict, device: Device, request: MeasureRequest, section: dict, started_at: str) -> dict:
    """The `edgedeploy.measurement/1` record of a board run: its sessions as an "after" latency record."""
    model_info = report.get("model") or {}
    scope = dict(section.get("scope") or {})
    # The firmware records the model by its hash: give it the report's model block (the hash
    # stays the firmware's own, so firmware of another model could never pass as this one).
    scope["model"] = {"name": model_info.get("name"), "sha256": scope.pop("model_sha256", None) or model_info.get("sha256"), "format": "onnx"}
    scope.setdefault("input_shapes", model_info.get("input_shapes"))
    scope["device"] = {"name": device.name, "chip": device.chip, "transport": "serial", "port": scope.pop("port", device.serial_port), "dev_kit": scope.pop("dev_kit", None)}
    sessions = []
    for index, result in enumerate(section["sessions"]):
        # Numbered from 1 like every measure session; the firmware's own index is kept beside.
        sessions.append(dict(result, session=index + 1, firmware_session_index=result.get("session")))
    protocol_info = dict(section.get("protocol") or {})
    protocol_info["session_kind"] = section.get("session_kind") or "sessions of one boot"
    backend = {
        "name": scope.get("backend"),
        "label": section.get("backend_label") or f"{scope.get('backend')} firmware",
        "kind": "runtime",
        "unit": scope.get("unit", "board"),
        "libraries": {k: v for k, v in (scope.get("firmware") or {}).items() if k.endswith("_version") and v},
        "detail": {"flashing": section.get("flashing"), "session_kind": protocol_info["session_kind"]},
    }
    environment = {
        "chip": device.chip,
        "port": device.serial_port,
        "baud": device.baud,
        "boot_reason": section.get("boot_reason"),
        "heap": (section["sessions"][0].get("heap") if section["sessions"] else None),
    }
    latency = make_measurement(scope, backend, protocol_info, sessions, environment)
    latency["partial"] = bool(section.get("partial")) or not section.get("complete")
    return {
        **record_header(artifact, manifest, report, device, started_at),
        "settings": {
            "transport": "serial",
            "flash": request.flash,
            "firmware_build": str(request.firmware_build) if request.firmware_build else None,
            "reset": request.reset,
            "timeout_s": request.settings.timeout_s,
            "note": "sessions, warm-up and iterations are fixed in the firmware when it is built (latency.after.protocol)",
        },
        "inputs": {"source": section.get("inputs") or scope.get("inputs"), "scope": scope.get("inputs"), "evaluation": section.get("evaluation_inputs")},
        # A stream of the user's data that stopped short leaves the record partial too.
        "partial": latency["partial"] or bool((section.get("evaluation") or {}).get("error")),
        "error": section.get("error"),
        "runner_errors": {},
        "latency": {"after": latency},
        "comparison": {
            "speedup": None,
            "ratio": None,
            "refused": (
                "the board runs no baseline (ONNX Runtime does not run on a microcontroller), and figures from different devices "
                "are never divided; the build's accuracy before/after is in the report"
            ),
        },
        "accuracy": section.get("accuracy"),
        "accuracy_error": section.get("accuracy_error"),
        "evaluation": section.get("evaluation"),
        "output_check": {
            "outputs_match": section.get("outputs_match"),
            "per_session": [s.get("outputs_match") for s in section["sessions"]],
            "scope": section.get("inputs"),
        },
        "board": {k: v for k, v in section.items() if k not in ("sessions", "scope", "protocol", "accuracy", "evaluation", "evaluation_inputs")},
    }


# -- choosing runners and inputs ---------------------------------------------------------------


def _runner_specs(artifact: Path, manifest: dict, report: dict, device: Device, request: MeasureRequest, stage: Path):
    model_info = report["model"]
    inputs_file, inputs_note = None, None
    runner = manifest.get("runner") or {}
    if runner.get("kind") == ONNX_CPU_RUNNER:
        inputs_file, inputs_note = choose_inputs(artifact, report, request, stage)
        after = onnx_cpu_runner_spec(
            stage / "after", artifact / runner["model"], inputs_file, model_info, runner.get("precision", "fp32"), request.settings, threads=request.threads, label="ONNX Runtime CPU (artifact)"
        )
        baseline = None
    elif is_host_run(manifest, device) and find_chip(manifest["target"]["chip"])[0].has(Capability.HOST):
        # (check_artifact_for_device refuses a host run of a target without HOST, with its reason.)
        target, _chip = find_chip(manifest["target"]["chip"])
        after = target.host_runner_spec(artifact, manifest, request.settings, stage / "host")
        baseline = after.baseline
        if INPUTS_REMOTE_NAME in after.files:
            inputs_file = Path(after.files[INPUTS_REMOTE_NAME])
            inputs_note = {"source": f"the artifact's runner ({inputs_file.name})"}
    else:
        target, _chip = find_chip(manifest["target"]["chip"])
        if not target.has(Capability.RUNNER):
            if target.has(Capability.SERIAL):
                raise DeviceError(
                    f"{target.name} artifacts run as firmware on an {manifest.get('target', {}).get('chip', 'the chip')} over a serial port, not as a "
                    f"runner on device '{device.name}' ({device.transport}); give a serial device (chip@/dev/ttyUSB0 or an inventory entry "
                    "with transport = \"serial\")."
                )
            raise DeviceError(f"{target.name} artifacts have no runner for devices.")
        after = target.runner_spec(artifact, manifest, device)
        baseline = after.baseline
        if INPUTS_REMOTE_NAME in after.files:
            inputs_file = Path(after.files[INPUTS_REMOTE_NAME])
            inputs_note = {"source": f"the artifact's runner ({inputs_file.name})"}
    runs = {"after": after}
    if request.before:
        if baseline is None:
            if device.transport not in ("local", "ssh"):
                raise DeviceError(f"Device '{device.name}' ({device.transport}) cannot run the ONNX Runtime baseline; use --no-before.")
            if inputs_file is None:
                inputs_file, inputs_note = choose_inputs(artifact, report, request, stage)
            baseline = onnx_cpu_runner_spec(
                stage / "before", artifact / "model.onnx", inputs_file, model_info, "fp32", request.settings, threads=request.threads, label="ONNX Runtime CPU (reference model)"
            )
        runs["before"] = baseline
    return runs, (inputs_note or {"source": "the runner's own inputs"})


def choose_inputs(artifact: Path, report: dict, request: MeasureRequest, stage: Path) -> tuple[Path, dict]:
    """The inputs both runners get: --eval, else the build's eval data, else the sample's, else seeded random."""
    from edgedeploy.datasets import load_dataset, model_input_specs
    from edgedeploy.model import load_model
    from edgedeploy.sample import is_sample, sample_card, sample_eval_path

    model = load_model(artifact / "model.onnx", {}, require_static=True)
    specs = model_input_specs(model)
    candidates = []
    if request.eval_path:
        candidates.append((Path(request.eval_path), "--eval"))
    build_eval = (report.get("options") or {}).get("eval")
    if build_eval and Path(build_eval).exists():
        candidates.append((Path(build_eval), "the build's --eval data"))
    if is_sample(model) or report["model"].get("sha256") == sample_card().get("sha256"):
        candidates.append((sample_eval_path(), "the bundled sample's held-out split"))
    path = stage / INPUTS_REMOTE_NAME
    if candidates:
        source, why = candidates[0]
        data = load_dataset(source, specs, None, request.eval_count)
        write_inputs_npz(path, data.inputs, data.labels)
        note = dict(data.describe(), chosen_because=why)
    else:
        rng = np.random.default_rng(0)
        count = request.eval_count or DEFAULT_EVAL_COUNT
        arrays = {}
        for spec in specs:
            shape = (count, *[d or 1 for d in spec.shape[1:]])
            dtype = np.dtype(spec.dtype)
            arrays[spec.name] = rng.integers(0, 10, size=shape).astype(dtype) if dtype.kind in "iu" else rng.random(shape, dtype=np.float64).astype(dtype)
        write_inputs_npz(path, arrays, None)
        note = {
            "source": "random inputs (seed 0, uniform [0, 1)): no evaluation data was given, so only output fidelity is checked",
            "count": count,
            "inputs": {k: {"shape": list(v.shape), "dtype": str(v.dtype)} for k, v in arrays.items()},
            "labels": None,
        }
    return path, note


# -- running the sessions ------------------------------------------------------------------------


def run_sessions(transport, device: Device, specs: dict, sessions: int, fetch_dir: Path, echo: Callable[[str], None]) -> tuple[dict[str, RunnerRun], str | None, dict]:
    """Copy every runner once, then run them in turn, one session (one process) at a time.

    Returns the runs, the fatal error (a transport failure that stopped everything) or None, and
    the work folder used on the device ({"path", "removed"}).
    A runner that fails on its own (exit status, an error result) stops only that runner.
    """
    from edgedeploy.measure import protocol

    runs = {label: RunnerRun(label, spec) for label, spec in specs.items()}
    fatal: str | None = None
    connection_lost = False
    workdir = None
    try:
        workdir = transport.make_workdir()
        for label, spec in specs.items():
            for remote, local in spec.files.items():
                transport.put(Path(local), f"{label}/{remote}")
        for index in range(sessions):
            for label, run in runs.items():
                if run.error:
                    continue
                spec = run.spec
                echo(StepStarted(f"  {label}: running session {index + 1} of {sessions}"))
                python = spec.python or device.python
                argv = [python if a == "{python}" else a for a in spec.command]
                result = transport.run(argv, f"{workdir}/{label}", spec.timeout_s)
                parsed = [r for r in protocol.parse_result_lines(result.stdout) if r.get("schema") == protocol.RUN_SCHEMA]
                if not parsed or parsed[-1].get("error") or result.returncode != 0 or "latency_us" not in parsed[-1]:
                    run.error = _runner_failure(label, spec, result, parsed)
                    echo(f"  {label}: {run.error}")
                    continue
                session = parsed[-1]
                session["session"] = index + 1
                session["wall_s"] = round(result.wall_s, 3)
                run.sessions.append(session)
                if index == 0:
                    for name in spec.result_files:
                        local = fetch_dir / label / name
                        transport.get(f"{label}/{name}", local)
                        run.fetched[name] = local
                lat = session["latency_us"]
                echo(
                    f"  {label} session {index + 1}/{sessions}: median {lat['p50']:.1f} us, p90 {lat['p90']:.1f} us, "
                    f"p99 {lat['p99']:.1f} us over {session['iterations']} iterations; first {session['first_inference_us']:.0f} us"
                )
    except DeviceConnectionLost as exc:
        fatal, connection_lost = str(exc), True
    except DeviceError as exc:
        fatal = str(exc)
    finally:
        removed = False
        if workdir is not None and not connection_lost:
            try:
                transport.cleanup(workdir)
                removed = True
            except DeviceError:
                pass
    if fatal:
        echo(f"  stopped: {fatal}")
    return runs, fatal, {"path": workdir, "removed": removed}


def _runner_failure(label: str, spec, result, parsed: list[dict]) -> str:
    reported = parsed[-1].get("error") if parsed else None
    if reported:
        return f"the {label} runner ({spec.backend or 'runner'}) failed: {reported}"
    tail = [l for l in result.stderr.strip().splitlines() if l.strip()]
    why = tail[-1].strip() if tail else "no message"
    if result.returncode == 0:
        return f"the {label} runner printed no result line ({why})"
    return f"the {label} runner exited with status {result.returncode}: {why}"


# -- combining ---------------------------------------------------------------------------------


def device_scope(device: Device, environment: dict, runner_device: dict | None = None) -> dict:
    """The device part of a scope: the inventory's name and chip, and the machine the runner saw."""
    runner_device = runner_device if isinstance(runner_device, dict) else {}
    return {
        "name": device.name,
        "chip": device.chip,
        "hostname": environment.get("hostname") or runner_device.get("hostname") or runner_device.get("host"),
        "cpu_model": environment.get("cpu_model"),
        "cpu_cores": environment.get("cpu_cores"),
        "accelerators": environment.get("accelerators", []),
    }


def latency_record(run: RunnerRun, device: Device, settings: SessionSettings, model_info: dict | None = None) -> dict | None:
    if not run.sessions:
        return None
    first = run.sessions[0]
    environment = dict(first.get("environment") or {})
    scope = dict(first.get("scope") or {})
    if not isinstance(scope.get("model"), dict) and model_info:
        # Runners that record only the hash (`model_sha256`) get the model block of the report;
        # the hash stays the runner's own, so a mismatch still shows (and refuses a ratio).
        scope["model"] = {"name": model_info.get("name"), "sha256": scope.pop("model_sha256", None) or model_info.get("sha256"), "format": "onnx"}
    scope["device"] = device_scope(device, environment, scope.get("device"))
    spec = run.spec
    backend = {
        "name": scope.get("backend") or spec.backend,
        "label": (first.get("backend_label") or scope.get("backend") or spec.backend),
        "kind": "runtime",
        "unit": scope.get("unit", "cpu" if (scope.get("backend") or "").endswith("cpu") else "accelerator"),
        "libraries": environment.get("libraries", {}),
        "detail": {"runner": first.get("runner"), "deployed_model": scope.get("deployed_model")},
    }
    record = make_measurement(scope, backend, settings, run.sessions, environment)
    record["partial"] = len(run.sessions) < settings.sessions
    return record


def compare_before_after(before: dict | None, after: dict | None) -> dict:
    """The before/after latency ratio, only when the two differ in one thing of the deployment.

    Same model (hash), same input shapes and batch, same device, and of the deployment
    (backend, precision, threads) only one changed: then `speedup` = before's median of session
    medians / after's. Otherwise no ratio: `refused` says why, and both figures are still given
    side by side with their deployments (schema.ratio_refusal is the rule, as for `bench`).
    """
    if not before or not after:
        return {"speedup": None, "ratio": None, "refused": "before and after were not both measured"}
    sb, sa = before["scope"], after["scope"]
    fields = comparable_fields(sb, sa)
    deployment = {
        label: {k: rec["scope"].get(k) for k in DEPLOYMENT_FIELDS} | {"backend_label": rec["backend"]["label"]}
        for label, rec in (("before", before), ("after", after))
    }
    b, a = before["summary"], after["summary"]
    figures = {"basis": "median of session medians", "before_median_us": b["median_us"], "after_median_us": a["median_us"], "deployment": deployment}
    refusal = ratio_refusal(sb, sa, ONE_DEPLOYMENT_CHANGE, fields, MEASURE_DEVICE_IDENTITY, "one part of the deployment: backend, precision or threads")
    differing = scope_differences(sb, sa, fields, MEASURE_DEVICE_IDENTITY)
    if refusal:
        return {"speedup": None, "ratio": None, "refused": refusal, "differs_in": differing} | figures
    shared_keys = [k for k in sorted(set(sb) | set(sa)) if k not in DEPLOYMENT_FIELDS and k not in RUNTIME_DESCRIPTORS]
    ranges_overlap = not (b["session_median_range_us"][1] < a["session_median_range_us"][0] or a["session_median_range_us"][1] < b["session_median_range_us"][0])
    return figures | {
        "differs_only_in": "deployment",
        "deployment_differs_in": differing,
        "scope": {k: sb.get(k) for k in shared_keys},
        "speedup": b["median_us"] / a["median_us"] if a["median_us"] > 0 else None,
        "ratio": "before / after",
        "session_ranges_overlap": ranges_overlap,
    }


def comparable_fields(sb: dict, sa: dict) -> tuple[str, ...]:
    """The scope fields a before/after pair is compared on.

    The core scope fields always (a field one runner did not record counts as different), and
    any other field both runners recorded; what describes only the deployed file or the
    runtime's own version (RUNTIME_DESCRIPTORS), or was recorded by one runner alone (a GPU
    name, a library version), is shown with its figure but decides nothing.
    """
    core = [f for f in SCOPE_FIELDS if f != "threads"]
    shared = sorted((set(sb) & set(sa)) - set(core) - set(RUNTIME_DESCRIPTORS))
    return tuple(core + shared)


def _outputs(run: RunnerRun) -> dict[str, np.ndarray] | None:
    """The first session's outputs: the runner's first .npz result file.

    Keys `output0`, `output1`, ... are mapped to the session's `output_names` (the built-in
    runner's convention); other keys are taken as the output names themselves.
    """
    files = [run.fetched[name] for name in run.spec.result_files if name.endswith(".npz") and name in run.fetched]
    if not files or not run.sessions:
        return None
    names = run.sessions[0].get("output_names") or []
    with np.load(files[0], allow_pickle=False) as archive:
        keys = list(archive.files)
        if names and all(f"output{i}" in keys for i in range(len(names))):
            return {names[i]: archive[f"output{i}"] for i in range(len(names))}
        return {key: archive[key] for key in keys}


def host_reference_outputs(model_path: Path, inputs_path: Path, count: int) -> tuple[dict[str, np.ndarray], str]:
    """The reference: the artifact's ONNX model on this machine's ONNX Runtime CPU, on the same inputs.

    Inputs are either one array per input with the samples along the batch axis (the dataset
    .npz format), or one entry per batch each with its own batch axis (rank + 1) as some
    targets' runners store them; either way the reference runner sees samples along axis 0.
    """
    import onnx

    proto = onnx.load(str(model_path))
    runner = ReferenceRunner(proto)
    ranks = {vi.name: len(vi.type.tensor_type.shape.dim) for vi in proto.graph.input}
    with np.load(inputs_path, allow_pickle=False) as archive:
        data = {n: archive[n] for n in runner.input_names}
    framed = any(a.ndim == ranks.get(n, a.ndim) + 1 for n, a in data.items())
    frames = min(count, len(next(iter(data.values()))))
    if framed:
        data = {n: a[:frames].reshape((-1,) + a.shape[2:]) for n, a in data.items()}
    else:
        data = {n: a[:count] for n, a in data.items()}
    result = runner.run(data)
    outputs = result.outputs
    if framed:
        outputs = {k: v.reshape((frames, -1) + v.shape[1:]) for k, v in outputs.items()}
    return outputs, f"{result.runtime} on this host"


def accuracy_section(artifact: Path, runs: dict[str, RunnerRun], inputs_path: Path | None, device: Device) -> dict | None:
    """Task metric before/after and output fidelity, all on the same inputs; None without outputs."""
    from edgedeploy.measure import accuracy

    after = _outputs(runs["after"]) if "after" in runs else None
    if after is None or inputs_path is None or not inputs_path.exists():
        return None
    before = _outputs(runs["before"]) if "before" in runs else None
    count = len(next(iter(after.values())))
    host_ref, host_label = host_reference_outputs(artifact / "model.onnx", inputs_path, count)
    with np.load(inputs_path, allow_pickle=False) as archive:
        labels = archive["labels"][:count] if "labels" in archive.files else None
    reference = before if before is not None else host_ref
    import onnx

    section = verify(reference, after, labels, "auto", "auto", *model_evidence(onnx.load(str(artifact / "model.onnx")), declared_detection(artifact)))
    section["scope"] = {
        "samples": count,
        "device": device.name,
        "before": "the before runner's outputs on the device" if before is not None else f"host reference ({host_label})",
        "after": "the after runner's outputs on the device",
    }
    # The device's baseline against this host's ONNX Runtime: a check of the device's runtime.
    if before is not None:
        section["before_vs_host_reference"] = {n: accuracy.fidelity(host_ref[n], before[n]) for n in host_ref if n in before}
        section["scope"]["host_reference"] = host_label
    section["after_vs_host_reference"] = {n: accuracy.fidelity(host_ref[n], after[n]) for n in host_ref if n in after}
    return section


def build_record(artifact, manifest, report, device, settings, runs, fatal, inputs_note, started_at, stage) -> dict:
    latency = {label: latency_record(run, device, settings, report.get("model")) for label, run in runs.items()}
    errors = {label: run.error for label, run in runs.items() if run.error}
    partial = bool(fatal) or any(rec is None or rec["partial"] for rec in latency.values())
    error = fatal
    if error is None and errors:
        error = "; ".join(f"{v[0].upper()}{v[1:]}" for v in errors.values()) + "."
    host = None
    if is_host_run(manifest, device):
        chip = manifest["target"]["chip"]
        labels = {label: (rec["backend"]["label"] if rec else run.spec.backend) for (label, rec), run in zip(latency.items(), runs.values())}
        host = {
            "chip": chip,
            "device": "this host (the local device), not the chip",
            "backends": labels,
            "note": host_note(chip, labels.get("after") or "the host runtime"),
        }
        for (label, rec), run in zip(latency.items(), runs.values()):
            if not rec:
                continue
            named = run.spec.backend
            if named and rec["scope"].get("backend") != named and rec["scope"].get("backend") in ("cpu", None, ""):
                # A board runner calls its CPU path "cpu"; on this host the spec knows which runtime that is.
                rec["scope"]["backend_reported"] = rec["scope"].get("backend")
                rec["scope"]["backend"] = rec["backend"]["name"] = named
                runtime = (rec["sessions"][0].get("runtime") if rec["sessions"] else None) or rec["backend"]["label"]
                rec["backend"]["label"] = f"{named} ({runtime})"
                labels[label] = rec["backend"]["label"]
            # In the scope itself, so no rendering of the figure can lose it.
            rec["scope"]["figures"] = host_note(chip, rec["backend"]["label"])
        host["backends"] = labels
        host["note"] = host_note(chip, labels.get("after") or "the host runtime")
    accuracy = None
    accuracy_error = None
    try:
        accuracy = accuracy_section(artifact, runs, stage / INPUTS_REMOTE_NAME if (stage / INPUTS_REMOTE_NAME).exists() else _spec_inputs(runs), device)
    except Exception as exc:  # noqa: BLE001 - the check is secondary: the latency record must still be written
        reraise_if_interrupted(exc)
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        accuracy_error = f"the output check could not be computed: {detail}"
    return {
        **record_header(artifact, manifest, report, device, started_at),
        "settings": settings.protocol(),
        "inputs": inputs_note,
        "partial": partial,
        "error": error,
        "runner_errors": errors,
        **({"host_run": host} if host else {}),
        "latency": latency,
        "comparison": compare_before_after(latency.get("before"), latency.get("after")),
        "accuracy": accuracy,
        "accuracy_error": accuracy_error,
    }


def record_header(artifact: Path, manifest: dict, report: dict, device: Device, started_at: str) -> dict:
    """The fields every measurement record begins with, whatever the transport."""
    return {
        "schema": MEASUREMENT_SCHEMA,
        "edgedeploy_version": __version__,
        "created_at": started_at,
        "artifact": {"path": str(artifact), "target": manifest.get("target"), "model": report.get("model"), "runner": manifest.get("runner")},
        "device": describe(device),
    }


def _spec_inputs(runs: dict[str, RunnerRun]) -> Path | None:
    for run in runs.values():
        local = getattr(run.spec, "files", {}).get(INPUTS_REMOTE_NAME)
        if local:
            return Path(local)
    return None


HISTOGRAM_BINS = 30


def summarize_for_report(record: dict) -> dict:
    """The record for report.json: per-session samples replaced by a histogram (the file keeps them)."""
    slim = json.loads(json.dumps(record, default=str))
    for rec in (slim.get("latency") or {}).values():
        if not rec:
            continue
        for session in rec["sessions"]:
            samples = session.pop("samples_us", None)
            if samples:
                session["histogram_us"] = histogram(samples)
            # Identical in every session and kept once in the record (rec["scope"], rec["environment"]).
            for repeated in ("scope", "environment", "output_names", "schema"):
                session.pop(repeated, None)
    return slim


def histogram(samples: list[float], bins: int = HISTOGRAM_BINS) -> dict:
    """Counts between the 0.5th and 99.5th percentile (the rest counted apart as clipped).

    The bins are equal on a log scale when that range spans more than 8x (a long tail of slow
    iterations would otherwise put nearly everything into the first bin), else equal-width.
    """
    values = np.asarray(samples, dtype=np.float64)
    lo, hi = (float(v) for v in np.percentile(values, [0.5, 99.5]))
    if hi <= lo:
        hi = lo + max(abs(lo) * 1e-3, 1e-3)
    log = lo > 0 and hi / lo > 8
    edges = np.geomspace(lo, hi, bins + 1) if log else np.linspace(lo, hi, bins + 1)
    inside = values[(values >= lo) & (values <= hi)]
    counts, _ = np.histogram(inside, bins=edges)
    return {
        "edges": [float(e) for e in edges],
        "counts": [int(c) for c in counts],
        "spacing": "log" if log else "linear",
        "clipped_below": int((values < lo).sum()),
        "clipped_above": int((values > hi).sum()),
    }
