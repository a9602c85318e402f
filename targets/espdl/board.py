"""Running an ESP-DL artifact on a board: build and flash its firmware, read the results over serial.

`measure_on_board(artifact, manifest, device, ...)` is what `edgedeploy measure` calls for a
serial device of this target (`TARGET.measure_serial`). Flashing, by `flash`:

  auto      idf.py where ESP-IDF is installed (IDF_PATH set or idf.py on PATH); otherwise the
            binaries in `firmware_build` when given; otherwise nothing is flashed and the board
            is assumed to run this artifact's firmware (checked: every result line carries the
            model hash the firmware was built for)
  idf       build with idf.py (in a copy of the project, so the artifact stays as built) and flash
  prebuilt  flash `firmware_build` (an ESP-IDF build folder with flasher_args.json) with esptool
  none      flash nothing

We cannot compile Xtensa/RISC-V firmware on edgedeploy's own machines; this module drives the
user's ESP-IDF and is tested here only up to the commands it would run.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from edgedeploy.errors import ArtifactError, DeviceError, ToolchainMissing

IDF_BUILD_TIMEOUT_S = 1800
FLASH_TIMEOUT_S = 600
FLASH_BAUD = 460800


@dataclass(frozen=True)
class IdfInstall:
    """How to run idf.py here: the command prefix, and where ESP-IDF is."""

    command: tuple[str, ...]
    idf_path: str | None

    def describe(self) -> str:
        return " ".join(self.command) + (f" (IDF_PATH={self.idf_path})" if self.idf_path else "")


def find_idf(environ: dict | None = None, which: Callable[[str], str | None] = shutil.which) -> IdfInstall | None:
    """ESP-IDF as the user installed it: idf.py on PATH (after export.sh), or $IDF_PATH/tools/idf.py with its Python."""
    env = os.environ if environ is None else environ
    idf_path = env.get("IDF_PATH")
    on_path = which("idf.py")
    if on_path:
        return IdfInstall((on_path,), idf_path)
    if idf_path and Path(idf_path, "tools", "idf.py").is_file():
        # export.sh records the Python environment ESP-IDF installed for itself.
        python = env.get("IDF_PYTHON_ENV_PATH")
        interpreter = str(Path(python, "bin", "python")) if python else sys.executable
        return IdfInstall((interpreter, str(Path(idf_path, "tools", "idf.py"))), idf_path)
    return None


def find_esptool(which: Callable[[str], str | None] = shutil.which) -> tuple[str, ...] | None:
    """esptool as a command (esptool.py / esptool) or as a module of this Python."""
    for name in ("esptool.py", "esptool"):
        found = which(name)
        if found:
            return (found,)
    import importlib.util

    if importlib.util.find_spec("esptool") is not None:
        return (sys.executable, "-m", "esptool")
    return None


def idf_commands(idf: IdfInstall, project: Path, build_dir: Path, chip: str, port: str) -> list[list[str]]:
    """The idf.py runs that build and flash a generated project (set-target only for a fresh build folder)."""
    base = [*idf.command, "-C", str(project), "-B", str(build_dir)]
    commands = []
    if not (project / "sdkconfig").exists():
        commands.append([*base, "set-target", chip])
    commands.append([*base, "build"])
    commands.append([*base, "-p", port, "-b", str(FLASH_BAUD), "flash"])
    return commands


def prebuilt_flash_command(esptool: tuple[str, ...], build_dir: Path, chip: str, port: str) -> list[str]:
    """esptool writing what an ESP-IDF build folder lists in flash_args (offsets and files)."""
    if not (build_dir / "flash_args").is_file():
        raise DeviceError(f"{build_dir} is not an ESP-IDF build folder (no flash_args); run `idf.py build` in the artifact's firmware/ first.")
    return [*esptool, "--chip", chip, "-p", port, "-b", str(FLASH_BAUD), "--before", "default_reset", "--after", "hard_reset", "write_flash", "@flash_args"]


def check_prebuilt_matches(build_dir: Path, artifact: Path) -> None:
    """Refuse binaries built from another model: the build's copy of model.espdl must be the artifact's."""
    project_desc = build_dir / "project_description.json"
    if not project_desc.is_file():
        raise DeviceError(f"{build_dir} has no project_description.json; it does not look like an ESP-IDF build folder.")
    desc = json.loads(project_desc.read_text())
    project_dir = Path(desc.get("project_path", ""))
    built_model = project_dir / "main" / "model.espdl"
    ours = Path(artifact) / "model.espdl"
    if built_model.is_file() and _sha256(built_model) != _sha256(ours):
        raise DeviceError(f"The firmware in {build_dir} was built with another model.espdl than {artifact}'s; rebuild it from {artifact}/firmware.")


def _sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _run_logged(cmd: list[str], log_path: Path, timeout_s: float, cwd: Path | None, what: str, echo) -> None:
    echo(f"board: {what}: {' '.join(cmd)}")
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("ab") as log:
        log.write(f"$ {' '.join(cmd)}\n".encode())
        log.flush()
        try:
            proc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=cwd, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            raise DeviceError(f"{what} did not finish within {timeout_s:.0f} s; see {log_path}.") from None
        except OSError as exc:
            raise DeviceError(f"{what} could not start ({exc}).") from exc
    if proc.returncode != 0:
        tail = "\n".join("    " + line for line in log_path.read_text(errors="replace").splitlines()[-15:])
        raise DeviceError(f"{what} failed (exit {proc.returncode}); last lines of {log_path}:\n{tail}")


def build_and_flash_with_idf(artifact: Path, manifest: dict, port: str, idf: IdfInstall, work_root: Path, echo) -> dict:
    """Build the artifact's firmware with idf.py in a copy (keyed by the model hash) and flash it."""
    chip = manifest["target"]["chip"]
    key = manifest["model"]["sha256"][:16] + "-" + chip
    project = work_root / key
    source = Path(artifact) / "firmware"
    if project.exists():
        # Keep sdkconfig and the build folder (incremental builds); refresh the generated sources.
        for src in source.rglob("*"):
            if src.is_file():
                dest = project / src.relative_to(source)
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(src, dest)
    else:
        shutil.copytree(source, project)
    build_dir = project / "build"
    log_path = work_root / f"{key}.idf.log"
    started = time.monotonic()
    for cmd in idf_commands(idf, project, build_dir, chip, port):
        _run_logged(cmd, log_path, IDF_BUILD_TIMEOUT_S, None, f"idf.py {cmd[-1]}", echo)
    return {"flashed_with": "idf.py", "idf": idf.describe(), "project_copy": str(project), "log": str(log_path), "seconds": round(time.monotonic() - started, 1)}


def flash_prebuilt(artifact: Path, manifest: dict, port: str, build_dir: Path, esptool, echo) -> dict:
    chip = manifest["target"]["chip"]
    check_prebuilt_matches(build_dir, artifact)
    cmd = prebuilt_flash_command(esptool, build_dir, chip, port)
    log_path = build_dir / "edgedeploy-flash.log"
    started = time.monotonic()
    _run_logged(cmd, log_path, FLASH_TIMEOUT_S, build_dir, "esptool write_flash", echo)
    return {"flashed_with": "esptool", "build_dir": str(build_dir), "log": str(log_path), "seconds": round(time.monotonic() - started, 1)}


def measure_on_board(
    artifact,
    manifest: dict,
    device,
    *,
    flash: str = "auto",
    firmware_build: Path | None = None,
    timeout_s: float = 180.0,
    reset: str = "auto",
    work_root: Path | None = None,
    echo: Callable[[str], None] = lambda line: print(line, file=sys.stderr),
    console_echo: Callable[[str], None] | None = None,
    eval_path: Path | None = None,
    eval_count: int | None = None,
) -> dict:
    """Flash (per `flash`), reset the board, read one boot's sessions, and return the device section.

    `device` is an edgedeploy.devices.Device with transport 'serial' (serial_port, baud). The
    result: per-session figures as the firmware printed them (latency_us min/mean/p50/p90/p99/max,
    iterations, outputs_match, heap), the range across sessions, `outputs_match` over all
    sessions, `complete`/`partial`/`error` (a reset, disconnect or time-out keeps what was read),
    and the scope (model hash, chip, precision, device, CPU clock). Raises DeviceError only when
    nothing can be measured (wrong chip, no port, flashing failed).

    With `eval_path` (the user's evaluation data), the board then runs those samples too: they are
    streamed to the firmware's evaluation loop over the same console (devices/serial_eval.py) and
    its outputs compared with ONNX Runtime's on this host, as the build's verification does:
    the section gets `accuracy` (task metric and per-output fidelity) and `evaluation` (the stream).
    """
    from edgedeploy.devices.serial import measure_serial, open_console, read_sessions

    artifact = Path(artifact)
    chip = manifest.get("target", {}).get("chip")
    if device.chip != chip:
        raise ArtifactError(f"{artifact} was built for {chip}, but device {device.name} is a {device.chip}; rebuild with --target {device.chip}.")
    if not device.serial_port:
        raise DeviceError(f"Device {device.name} has no serial port; give one as {chip}@/dev/ttyUSB0.")
    if flash not in ("auto", "idf", "prebuilt", "none"):
        raise ValueError(f"flash must be auto, idf, prebuilt or none, not {flash!r}")
    work_root = Path(work_root) if work_root else artifact.parent / f".{artifact.name}.idf"

    idf = find_idf() if flash in ("auto", "idf") else None
    if flash == "idf" and idf is None:
        raise ToolchainMissing("Building ESP-IDF firmware needs ESP-IDF 5.3 or later: install it and run `. $IDF_PATH/export.sh` (or set IDF_PATH).")
    if flash == "prebuilt" and firmware_build is None:
        raise DeviceError("Flashing prebuilt firmware needs the ESP-IDF build folder (the one holding flash_args).")
    if idf is not None:
        flashing = build_and_flash_with_idf(artifact, manifest, device.serial_port, idf, work_root, echo)
    elif firmware_build is not None and flash in ("auto", "prebuilt"):
        esptool = find_esptool()
        if esptool is None:
            raise ToolchainMissing("Flashing prebuilt firmware needs esptool: pip install esptool (or flash it with idf.py flash and use flash 'none').")
        flashing = flash_prebuilt(artifact, manifest, device.serial_port, Path(firmware_build), esptool, echo)
    else:
        flashing = {"flashed_with": None, "note": "not flashed by edgedeploy (no ESP-IDF found); the board's firmware is checked against the model hash"}
        echo("board: ESP-IDF not found and no prebuilt firmware given: reading the board as flashed")

    echo(f"board: resetting {device.name} on {device.serial_port} and reading its console (up to {timeout_s:.0f} s)")
    # The board's lines are untrusted: only those naming this artifact's model are its figures.
    expected_sha = (manifest.get("model") or {}).get("sha256")
    if eval_path is None:
        run = measure_serial(device.serial_port, baud=device.baud, timeout_s=timeout_s, reset=reset, echo=console_echo, progress=echo, expected_model_sha256=expected_sha)
        return device_section(run, manifest, device, flashing, artifact)
    with open_console(device.serial_port, device.baud, reset, progress=echo) as console:
        run = read_sessions(console, timeout_s=timeout_s, echo=console_echo, expected_model_sha256=expected_sha)
        section = device_section(run, manifest, device, flashing, artifact)
        if not section["sessions"] or run.error:
            section["accuracy_error"] = "the evaluation on the board did not run: its timed sessions did not finish"
            return section
        evaluate_on_board(console, section, artifact, manifest, Path(eval_path), eval_count, echo, console_echo)
    return section


def _onnx_name(board_name: str) -> str:
    """A tensor name as the firmware's JSON writer escapes it (every byte >= 0x80 as \\u00XX) back in UTF-8."""
    try:
        return board_name.encode("latin-1").decode("utf-8")
    except (UnicodeEncodeError, UnicodeDecodeError):
        return board_name


def _layout(board_shape: list, onnx_shape: tuple, what: str) -> tuple | None:
    """The transpose from the ONNX layout to the board's: None for none, (0, 2, 3, 1) for NCHW -> NHWC."""
    onnx_shape = tuple(int(d) for d in onnx_shape)
    board_shape = tuple(int(d) for d in board_shape)
    if board_shape == onnx_shape:
        return None
    if len(onnx_shape) == 4 and board_shape == (onnx_shape[0], onnx_shape[2], onnx_shape[3], onnx_shape[1]):
        return (0, 2, 3, 1)
    raise DeviceError(f"The board's {what} has shape {list(board_shape)}, which is not the model's {list(onnx_shape)} in any layout ESP-DL uses; it runs another model.")


def _match(board_items: list, onnx_names: list[str], what: str) -> list[tuple[dict, str]]:
    """Pair the board's tensors with the model's: by name, else in order when the counts agree."""
    if not isinstance(board_items, list) or not all(isinstance(item, dict) and isinstance(item.get("name"), str) and isinstance(item.get("shape"), list) for item in board_items):
        raise DeviceError(f"The board's evaluation loop announced malformed {what}s.")
    if len(board_items) != len(onnx_names):
        raise DeviceError(f"The board's model has {len(board_items)} {what}(s), the artifact's {len(onnx_names)}; it runs another model.")
    by_name = {_onnx_name(item["name"]): item for item in board_items}
    if set(by_name) == set(onnx_names):
        return [(by_name[name], name) for name in onnx_names]
    return list(zip(board_items, onnx_names))


def _io_plan(ready: dict, specs, reference_outputs: dict):
    """(input name and layout, per input; output name, board shape and layout, per output) from the
    board's ready line, matched to the model's inputs and outputs (DeviceError when they differ)."""
    inputs = _match(ready.get("inputs"), [spec.name for spec in specs], "input")
    outputs = _match(ready.get("outputs"), list(reference_outputs), "output")
    input_layouts = [(name, _layout(item["shape"], next(s.shape for s in specs if s.name == name), f"input {name}")) for item, name in inputs]
    output_plan = []
    for item, name in outputs:
        per_sample = (1, *reference_outputs[name].shape[1:])
        output_plan.append((name, [int(d) for d in item["shape"]], _layout(item["shape"], per_sample, f"output {name}")))
    return input_layouts, output_plan


def _board_outputs(payloads: list[bytes], output_plan) -> dict:
    """The board's output bytes of every sample as arrays in the model's layout, by output name."""
    import numpy as np

    board_outputs: dict[str, list] = {name: [] for name, _, _ in output_plan}
    for payload in payloads:
        offset = 0
        for name, shape, layout in output_plan:
            count = int(np.prod(shape))
            value = np.frombuffer(payload, dtype="<f4", count=count, offset=offset).reshape(shape)
            offset += count * 4
            if layout:
                value = value.transpose(np.argsort(layout))
            board_outputs[name].append(value)
    return {name: np.concatenate(values).astype(np.float32) for name, values in board_outputs.items()}


def evaluate_on_board(console, section: dict, artifact: Path, manifest: dict, eval_path: Path, eval_count: int | None, echo, console_echo) -> None:
    """Stream the user's evaluation samples to the board and put accuracy and fidelity into `section`."""
    import numpy as np

    from edgedeploy.artifacts import atomic_write_bytes, now_iso
    from edgedeploy.datasets import load_dataset, model_input_specs
    from edgedeploy.devices.serial_eval import stream_samples, wait_for_ready
    from edgedeploy.measure.reference import ReferenceError, ReferenceRunner
    from edgedeploy.measure.verify import declared_detection, model_evidence, verify
    from edgedeploy.model import load_model

    model_path = Path(artifact) / "model.onnx"
    model = load_model(model_path, {}, require_static=True)
    specs = model_input_specs(model)
    data = load_dataset(eval_path, specs, None, eval_count)
    try:
        reference = ReferenceRunner(model_path).run(data.inputs)
    except ReferenceError as exc:
        section["accuracy_error"] = f"the ONNX Runtime reference could not run: {exc}"
        return
    section["evaluation_inputs"] = data.describe()
    echo(f"board: evaluating {reference.samples} samples of {eval_path} on the board (the host reference: {reference.runtime})")
    ready, reader, problem = wait_for_ready(console, echo=console_echo)
    if problem:
        section["accuracy_error"] = problem
        section["evaluation"] = {"error": problem, "samples_done": 0, "samples_requested": reference.samples}
        return
    try:
        input_layouts, output_plan = _io_plan(ready, specs, reference.outputs)
    except DeviceError as exc:
        section["accuracy_error"] = str(exc)
        section["evaluation"] = {"error": str(exc), "samples_done": 0, "samples_requested": reference.samples}
        return
    payloads = []
    for index in range(reference.samples):
        parts = []
        feed = data.feed(index, index + 1)  # an input held whole (a recurrent state): its one sample
        for name, layout in input_layouts:
            x = np.asarray(feed[name], dtype=np.float32)
            parts.append(np.ascontiguousarray(x.transpose(layout) if layout else x).astype("<f4").tobytes())
        payloads.append(b"".join(parts))
    output_bytes = sum(int(np.prod(shape)) * 4 for _, shape, _ in output_plan)
    stream = stream_samples(console, payloads, output_bytes, echo=console_echo, progress=echo, ready=ready, reader=reader)
    summary = stream.summary()
    section["evaluation"] = summary
    done = len(stream.outputs)
    if stream.error:
        section["error"] = section.get("error") or stream.error
    if not done:
        section["accuracy_error"] = stream.error or "the board returned no output"
        return
    board_outputs = _board_outputs(stream.outputs, output_plan)
    ref_outputs = {name: values[:done] for name, values in reference.outputs.items()}
    labels = data.labels[:done] if data.labels is not None else None
    # The build's own verification (measure/verify.py), with the board in the simulator's place.
    result = verify(ref_outputs, board_outputs, labels, "auto", "auto", *model_evidence(model.proto, declared_detection(artifact)))
    result["reference"] = reference.describe()
    result["scope"] = {
        "samples": done,
        "samples_requested": reference.samples,
        "partial": done < reference.samples,
        "before": f"host reference ({reference.runtime})",
        "after": f"the board's outputs: ESP-DL firmware on the {section.get('chip')} (device {section.get('device')}), inputs streamed over serial",
        "inputs": data.describe(),
    }
    section["accuracy"] = result
    stamp = now_iso().replace(":", "").replace("-", "")[:15]
    rel = f"measurements/{stamp}-board-outputs.npz"
    import io

    buffer = io.BytesIO()
    np.savez(buffer, **board_outputs)
    atomic_write_bytes(Path(artifact) / rel, buffer.getvalue())
    section["evaluation"]["outputs_file"] = rel


# The timing protocol the generated firmware was built with (templates/espdl/main/edgedeploy_model.h.j2).
PROTOCOL_DEFINES = {
    "sessions": "EDGEDEPLOY_SESSIONS",
    "warmup": "EDGEDEPLOY_WARMUP_RUNS",
    "min_iterations": "EDGEDEPLOY_MIN_ITERATIONS",
    "min_duration_us": "EDGEDEPLOY_MIN_DURATION_US",
    "max_iterations": "EDGEDEPLOY_MAX_ITERATIONS",
}
MODEL_HEADER = Path("firmware") / "main" / "edgedeploy_model.h"
INPUTS_SCOPE = "on-device, embedded test input"


def firmware_protocol(artifact: Path) -> dict:
    """Warm-up, iterations and sessions per boot, as #defined in the artifact's generated firmware header."""
    header = Path(artifact) / MODEL_HEADER
    text = header.read_text(encoding="utf-8") if header.is_file() else ""
    found = {}
    for key, name in PROTOCOL_DEFINES.items():
        match = re.search(rf"^#define {name} (\d+)\s*$", text, flags=re.M)
        if match:
            found[key] = int(match.group(1))
    protocol = {k: v for k, v in found.items() if k != "min_duration_us"}
    if "min_duration_us" in found:
        protocol["min_duration_s"] = found["min_duration_us"] / 1e6
    protocol["source"] = str(MODEL_HEADER) if found else "not found in the artifact"
    return protocol


def device_section(run, manifest: dict, device, flashing: dict, artifact: Path | None = None) -> dict:
    """The report section for one board run: figures per session, their range, the checks, the scope."""
    expected_sha = manifest.get("model", {}).get("sha256")
    sessions = []
    wrong_model = []
    for result in run.results:
        scope = result.get("scope", {})
        for key in ("model_sha256", "espdl_model_sha256"):
            if scope.get(key) and scope[key] != expected_sha:
                wrong_model.append(scope[key])
        sessions.append(result)
    error = run.error
    other = wrong_model[0] if wrong_model else (getattr(run, "other_model_sha256", None) if not sessions else None)
    if other:
        error = (
            f"The board runs firmware for another model (sha256 {other[:16]}...), not this artifact's "
            f"({(expected_sha or '')[:16]}...); flash this artifact's firmware."
        )
        sessions = []
    ranges = {}
    for stat in ("min", "mean", "p50", "p90", "p99", "max"):
        values = [s["latency_us"].get(stat) for s in sessions if isinstance(s.get("latency_us"), dict) and s["latency_us"].get(stat) is not None]
        if values:
            ranges[stat] = [min(values), max(values)]
    # The scope the firmware printed (generated at build time, plus what only the board knows),
    # named the way every latency scope is: the firmware's `device` is the dev kit it was made for.
    firmware_scope = dict(sessions[0].get("scope", {})) if sessions else {}
    scope = dict(firmware_scope)
    scope["dev_kit"] = scope.pop("device", None)
    scope.update({"device": device.name, "port": device.serial_port, "inputs": INPUTS_SCOPE})
    if firmware_scope.get("esp_dl_version"):
        scope["backend_version"] = firmware_scope["esp_dl_version"]
    scope["firmware"] = {
        "esp_dl_version": firmware_scope.get("esp_dl_version"),  # the idf_component.yml pin; dependencies.lock has the exact one
        "idf_version": firmware_scope.get("idf_version"),  # what the running firmware was built with
        "cpu_freq_mhz": firmware_scope.get("cpu_freq_mhz"),
        "flashed_with": flashing.get("flashed_with"),
        "edgedeploy_version": firmware_scope.get("edgedeploy_version"),
    }
    chip = manifest.get("target", {}).get("chip")
    complete = run.complete and not other
    return {
        "schema": "edgedeploy.serial-run/1",
        "device": device.name,
        "chip": chip,
        "transport": "serial",
        "flashing": flashing,
        "scope": scope,
        "backend_label": f"ESP-DL firmware on the {chip} ({scope.get('precision') or '?'})",
        "inputs": "the test input embedded in the .espdl, checked on the board against esp-ppq's expected outputs (dl::Model::test())",
        "protocol": firmware_protocol(artifact) if artifact is not None else {"source": "not given"},
        "sessions": sessions,
        "sessions_read": len(sessions),
        "sessions_expected": run.expected_sessions,
        "session_kind": "one boot, a freshly loaded dl::Model per session",
        "latency_us_range_across_sessions": ranges,
        "outputs_match": (all(bool(s.get("outputs_match")) for s in sessions) if sessions else None),
        "complete": complete,
        "partial": bool(sessions) and not complete,
        "error": error,
        "boot_reason": run.boot_reason,
        "reset_reason": run.reset_reason,
        "crash_line": run.crash_line,
        "console_tail": list(run.transcript)[-20:],
        "rejected_result_lines": getattr(run, "rejected_count", 0),
        "rejected_reasons": list(getattr(run, "rejected", [])),
        "console_wall_s": round(run.wall_s, 2),
    }
