"""`audit --confirm` for NXP eIQ: the real converter and Vela's own verdict, per ONNX node.

For each model: a copy whose nodes are renamed to tokens (edn<index>) goes to the eiq worker, so
that onnx2tf's layers can be traced back to exactly one node whatever the original names were;
the worker converts it (onnx2tf, full-int8 quantisation) and compiles it with Vela for the
i.MX 93; edgedeploy.targets.eiq.vela turns the result into a ToolchainVerdict keyed by the
display names of edgedeploy.model.stats.node_names.

Many models go through one worker process (TensorFlow starts once). Each model's result is one
line of results.jsonl, written as soon as it is known; if the worker dies (a crash in native
code), the model it was on is recorded as failed and a new worker continues with the rest.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx

from edgedeploy.audit.confirm import ToolchainVerdict
from edgedeploy.errors import OptionError, WorkerFailed
from edgedeploy.arrays import held_whole, write_arrays
from edgedeploy.model.stats import node_names
from edgedeploy.toolchains.executor import Executor

WORKER = Path(__file__).with_name("worker.py")
PER_MODEL_TIMEOUT_S = 300.0
# A worker that dies this many times in a row on the same batch is not restarted again.
MAX_RESTARTS = 50


def tokens_for(graph) -> tuple[list[str], dict[str, str], list[str | None]]:
    """The node names onnx2tf gets (edn<index>: its layer names carry them), token -> display
    name, and the display name of the node producing each graph output."""
    display = node_names(graph)
    tokens = [f"edn{index}" for index in range(len(display))]
    producer = {out: display[i] for i, node in enumerate(graph.node) for out in node.output if out}
    return tokens, dict(zip(tokens, display)), [producer.get(o.name) for o in graph.output]


def named_copy(model_path: Path, dest: Path) -> tuple[dict[str, str], list[str | None]]:
    """Write `model_path` with node names replaced by tokens; return token -> display name, and output producers."""
    from edgedeploy.model import named_copy as renamed

    model = onnx.load(str(model_path))
    tokens, token_names, producers = tokens_for(model.graph)
    dest.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(renamed(model, tokens), str(dest))
    return token_names, producers


def calibration_files(calib: Path | dict | None, dest_dir: Path, model: Path | None = None) -> str | None:
    """Calibration inputs for one model in the workers' one array format (edgedeploy.arrays), from an .npz (keys = input names) or a dict of arrays."""
    if calib is None:
        return None
    if isinstance(calib, (str, Path)):
        with np.load(str(calib), allow_pickle=False) as archive:
            arrays = {k: archive[k] for k in archive.files}
    else:
        arrays = dict(calib)
    dest_dir.mkdir(parents=True, exist_ok=True)
    # Strings and objects: TFLite has no such inputs, the converter refuses them itself.
    numeric = {name: np.asarray(array) for name, array in arrays.items() if np.asarray(array).dtype.kind in "biuf"}
    return str(write_arrays(dest_dir / "calib.npz", numeric, whole=_held_whole(numeric, model))) if numeric else None


def _held_whole(arrays: dict, model: Path | None) -> set[str]:
    """The inputs whose arrays have one axis more than the model's input: whole samples stacked
    (edgedeploy.datasets), fed one at a time by the worker."""
    if model is None:
        return set()
    graph = onnx.load(str(model), load_external_data=False).graph
    ranks = {i.name: len(i.type.tensor_type.shape.dim) for i in graph.input}
    return held_whole(arrays, ranks)


def run_verdicts(target, model_paths: list[Path], chip_id: str, workdir: Path, log_path: Path, calibration=None, per_model_timeout_s: float = PER_MODEL_TIMEOUT_S, keep_files: bool = False) -> list[ToolchainVerdict]:
    """Toolchain verdicts for many models through one (restartable) eiq worker.

    `calibration`: None (fixed-seed generated inputs), or per model an .npz / {input: array}
    (a list aligned with model_paths, or a dict keyed by model path).
    """
    from edgedeploy.targets.eiq import VELA_IMX93, vela_version

    if chip_id != "imx93":
        raise OptionError(
            f"No host toolchain reports placements for {chip_id}: the i.MX 8M Plus VX delegate decides them on the board at run time; "
            "`audit --confirm` is available for imx93 (Vela)."
        )
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    items = []
    names: list[tuple[dict[str, str], list[str | None]]] = []
    for index, path in enumerate(model_paths):
        case_dir = workdir / f"in{index}"
        tokens, producers = named_copy(Path(path), case_dir / "model.onnx")
        names.append((tokens, producers))
        calib = None
        if isinstance(calibration, dict):
            calib = calibration.get(str(path)) or calibration.get(Path(path))
        elif isinstance(calibration, (list, tuple)):
            calib = calibration[index]
        items.append({"index": index, "model": str(case_dir / "model.onnx"), "calib": calibration_files(calib, case_dir, case_dir / "model.onnx")})
    results_path = workdir / "results.jsonl"
    results_path.unlink(missing_ok=True)
    entries: dict[int, dict] = {}
    pending = list(items)
    restarts = 0
    while pending:
        request = {
            "action": "verdicts",
            "models": pending,
            "results_path": str(results_path),
            "vela": dict(VELA_IMX93),
            "per_model_timeout_s": per_model_timeout_s,
            "keep_files": keep_files,
        }
        try:
            Executor(log_path, per_model_timeout_s * len(pending) + 120).run_worker(target.toolchain, WORKER, request, workdir / "worker")
            crashed = None
        except WorkerFailed as exc:
            crashed = str(exc).splitlines()[0]
        for line in results_path.read_text().splitlines() if results_path.exists() else []:
            entry = json.loads(line)
            entries[entry["index"]] = entry
        pending = [item for item in pending if item["index"] not in entries]
        if crashed and pending:
            # The first model without a result is the one the worker died on.
            entries[pending[0]["index"]] = {"index": pending[0]["index"], "failed": f"worker crashed: {crashed}"}
            pending = pending[1:]
            restarts += 1
            if restarts > MAX_RESTARTS:
                for item in pending:
                    entries[item["index"]] = {"index": item["index"], "failed": "not run: the worker kept crashing"}
                pending = []
    version = vela_version()
    verdicts = []
    for index, _ in enumerate(model_paths):
        tokens, producers = names[index]
        verdicts.append(_verdict(entries[index], tokens, producers, version))
    return verdicts


def _verdict(entry: dict, tokens: dict[str, str], producers: list[str | None], version: str) -> ToolchainVerdict:
    from edgedeploy.targets.eiq.vela import verdict_from_entry

    return verdict_from_entry(entry, tokens, producers, toolchain="onnx2tf+vela", version=version)
