"""rknn-toolkit2's own verdict for `audit --confirm` and sweeps: build, read the layer table.

One worker process builds many models (the toolkit is imported once; each model builds in a
forked child, so a toolkit crash costs that model only). Each model is pinned by edgedeploy's
intake first, so the toolkit sees static shapes, and the verdict is keyed by the same node
names as the audit.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import onnx

from edgedeploy.audit.confirm import ToolchainVerdict
from edgedeploy.errors import EdgedeployError
from edgedeploy.toolchains.executor import Executor

WORKER = Path(__file__).with_name("worker.py")
# Random calibration samples per model when the caller gives no data (placement does not
# depend on the values; quantisation needs some).
RANDOM_CALIBRATION_SAMPLES = 2
VERDICT_TIMEOUT_PER_MODEL_S = 300


def _input_specs(model) -> list[dict]:
    from edgedeploy.datasets import model_input_specs

    return [{"name": s.name, "shape": [int(d) for d in s.shape], "dtype": s.dtype} for s in model_input_specs(model)]


# Calibration samples taken from the caller's data for a verdict build.
VERDICT_CALIBRATION_SAMPLES = 8


def _rknn_dataset(model, data: Path, folder: Path) -> Path:
    """edgedeploy data -> rknn-toolkit2's dataset file (absolute .npy paths, one line per sample)."""
    from edgedeploy.arrays import write_npy_list
    from edgedeploy.datasets import fixed_batch_of, load_dataset, model_input_specs

    specs = model_input_specs(model)
    ds = load_dataset(data, specs, None, None)
    batch = fixed_batch_of(specs)
    samples = [[b[s.name] for s in specs] for k, b in zip(range(VERDICT_CALIBRATION_SAMPLES), ds.batches(batch))]
    if not samples:
        raise EdgedeployError(f"{data} has fewer samples than one batch")
    return Path(write_npy_list(folder, samples))


def toolchain_verdicts(
    target,
    model_paths: list[Path],
    chip_id: str,
    workdir: Path,
    log_path: Path,
    precision: str = "int8",
    optimization_level: int | None = None,
    datasets: list[Path | None] | None = None,
    inputs=None,
    input_shapes: dict | None = None,
    resume: bool = False,
    **_options,
) -> list[ToolchainVerdict]:
    """Build every model for `chip_id` in one worker and return the toolkit's verdicts, in order.

    Calibration data for int8 builds, per model: `inputs` (edgedeploy data: an .npz keyed by
    input name, a .npy folder, ...; one path for all models or a list with one per model) or
    `datasets` (rknn-toolkit2 dataset files); else random data. A model the intake or the
    toolkit refuses gets a verdict with `failed` set; it does not stop the batch. `resume`:
    reuse the toolkit output already in `workdir` for the same model (long sweeps).
    """
    from edgedeploy.targets.rknn.layer_table import verdict_from_output

    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    version = target.toolchain.status().versions.get("rknn-toolkit2") or target.TOOLKIT_VERSION
    quantize = precision in (None, "int8")
    if precision not in (None, "int8", "fp16"):
        raise ValueError(f"RKNN verdicts are for int8 or fp16 builds, not {precision}")
    verdicts: list[ToolchainVerdict | None] = [None] * len(model_paths)
    graphs: dict[int, onnx.GraphProto] = {}
    cases = []
    for i, path in enumerate(model_paths):
        data = inputs[i] if isinstance(inputs, (list, tuple)) and i < len(inputs) else (inputs if not isinstance(inputs, (list, tuple)) else None)
        dataset = datasets[i] if datasets and i < len(datasets) else None
        case, verdicts[i], graph = _verdict_case(i, Path(path), workdir, version, input_shapes, data, dataset, f"{chip_id} {precision} {optimization_level}")
        if case is not None:
            graphs[i] = graph
            cases.append(case)
    statuses = _reusable_statuses(cases) if resume else {}
    todo = [c for c in cases if c["index"] not in statuses]
    if todo:
        request = {
            "mode": "verdict",
            "chip": chip_id,
            "quantize": quantize,
            "optimization_level": optimization_level,
            "random_samples": RANDOM_CALIBRATION_SAMPLES,
            "case_timeout_s": VERDICT_TIMEOUT_PER_MODEL_S,
            "cases": todo,
        }
        executor = Executor(log_path, 60 + VERDICT_TIMEOUT_PER_MODEL_S * len(todo))
        result = executor.run_worker(target.toolchain, WORKER, request, workdir / "worker")
        version = result.get("toolkit_version") or version
        for case, status in zip(todo, result["cases"]):
            statuses[case["index"]] = status
    for case in cases:
        i = case["index"]
        try:
            text = Path(case["output"]).read_text(errors="replace")
        except OSError:
            text = ""
        verdicts[i] = verdict_from_output(text, graphs[i], quantize, version, statuses[i].get("error"))
    return [v for v in verdicts if v is not None]


def _verdict_case(i: int, path: Path, workdir: Path, version: str, input_shapes, data, dataset, settings: str):
    """(the worker's case for model i, None, its graph), or (None, a failed verdict, None) when the intake refuses it.

    Calibration: edgedeploy `data` made into a dataset file, else a given rknn-toolkit2
    `dataset` file, else (neither, or data that does not fit the model) random data.
    """
    from edgedeploy.model import load_model

    try:
        model = load_model(path, input_shapes or None, require_static=True)
    except EdgedeployError as exc:
        return None, ToolchainVerdict(toolchain="rknn-toolkit2", version=version, failed=f"edgedeploy intake: {exc}"), None
    pinned = workdir / f"case{i}.onnx"
    onnx.save(model.proto, str(pinned))
    case = {"index": i, "model": str(pinned), "inputs": _input_specs(model), "output": str(workdir / f"case{i}.txt")}
    if data:
        try:
            case["dataset"] = str(_rknn_dataset(model, Path(data), workdir / f"case{i}.data"))
        except EdgedeployError:
            pass  # data that does not fit the model: random data, as without any
    elif dataset:
        case["dataset"] = str(Path(dataset).resolve())
    # What a resumed sweep checks before reusing an earlier build of case i: the same model
    # (content), chip, precision and calibration data.
    case["key"] = hashlib.sha256(f"{model.sha256} {settings} {case.get('dataset')}".encode()).hexdigest()
    return case, None, model.graph


def _reusable_statuses(cases: list[dict]) -> dict[int, dict]:
    """The statuses of cases whose earlier build (same key) left its toolkit output in the work folder."""
    statuses = {}
    for case in cases:
        done = Path(case["output"] + ".status.json")
        if done.is_file() and Path(case["output"]).is_file():
            previous = json.loads(done.read_text())
            if previous.get("key") == case["key"]:
                statuses[case["index"]] = previous
    return statuses
