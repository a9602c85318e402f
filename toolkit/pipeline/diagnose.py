"""`edgedeploy diagnose ARTIFACT`: where int8 breaks the artifact's model, and why, on every path this host simulates.

Paths: the artifact's own target when it declares Capability.DIAGNOSE (its toolchain requantises
the model as the build did and taps every node), and ONNX Runtime's QDQ quantisation of the same
model on the same calibration data, as a toolchain-neutral baseline. Each path's records go
through edgedeploy.accuracy once (figures, localisation, causes). `build` calls `diagnose_artifact`
too when an accuracy gate fails.
"""

from __future__ import annotations

import json
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import onnx

from edgedeploy.accuracy import SCHEMA, absorbed_nodes, diagnose_path
from edgedeploy.accuracy import qdq, referred
from edgedeploy.datasets import Dataset, PreprocessSpec, load_dataset, model_input_specs
from edgedeploy.errors import ArtifactError, EdgedeployError, OptionError
from edgedeploy.interrupts import reraise_if_interrupted
from edgedeploy.model import load_model
from edgedeploy.sample import is_sample, sample_calibration_path, sample_card, sample_preprocess
from edgedeploy.targets import find_chip
from edgedeploy.targets.base import Capability, TapRequest
from edgedeploy.toolchains.executor import Executor

TAP_HELPERS = Path(__file__).resolve().parent.parent / "accuracy" / "tap_numpy.py"
# Evaluation samples the diagnosis uses by default: the taps keep every tensor of these in memory
# and run each node alone on them. Calibration: as many as the build used (its manifest), since
# the diagnosis requantises as the build did.
DEFAULT_EVAL_SAMPLES = 32
WORKER_TIMEOUT_S = 1800.0


@dataclass
class DiagnoseOptions:
    calib: Path | None = None  # default: the data the build calibrated on (its manifest)
    eval: Path | None = None  # the figures are on these inputs when given, else on the calibration data
    calib_count: int | None = None  # default: the build's --calib-count (all samples when it had none)
    eval_count: int = DEFAULT_EVAL_SAMPLES
    qdq: bool = True  # ONNX Runtime's QDQ path beside the target's
    verify: bool = True  # check the artifact's files against its manifest first (--no-verify: False)
    worker_timeout_s: float = WORKER_TIMEOUT_S


def read_manifest(artifact: Path, verify: bool = True) -> dict:
    """The manifest, after checking every file against it (check_manifest, as measure does) unless not `verify`."""
    from edgedeploy.artifacts import check_manifest

    if not (Path(artifact) / "manifest.json").is_file() or not (Path(artifact) / "model.onnx").is_file():
        raise ArtifactError(f"{artifact} is not an edgedeploy artifact (no manifest.json and model.onnx); give a folder `edgedeploy build` wrote.")
    return check_manifest(artifact, None, verify_files=verify)


def _preprocess(recorded) -> PreprocessSpec | None:
    if not recorded:
        return None
    size = recorded.get("size")
    return PreprocessSpec(
        size=tuple(size) if size else None,
        scale=recorded.get("scale", 1 / 255.0),
        mean=tuple(recorded.get("mean") or (0.0,)),
        std=tuple(recorded.get("std") or (1.0,)),
        layout=recorded.get("layout", "NCHW"),
        channels=recorded.get("channels", "RGB"),
    )


def _build_data(artifact: Path) -> dict:
    """The data section of the artifact's report: where the build's calibration came from, and its preprocessing."""
    try:
        return json.loads((Path(artifact) / "report.json").read_text()).get("data") or {}
    except (OSError, ValueError):
        return {}


def resolve_data(model, artifact: Path, manifest: dict, options: DiagnoseOptions) -> tuple[Dataset, Dataset | None]:
    """The calibration data of the build (or --calib) and, with --eval, the evaluation data."""
    built, data = manifest.get("options") or {}, _build_data(artifact)
    sample = is_sample(model) or (manifest.get("model") or {}).get("sha256") == sample_card().get("sha256")
    preprocess = _preprocess(built.get("preprocess") or data.get("preprocess")) or (sample_preprocess() if sample else None)
    specs = model_input_specs(model)
    recorded = built.get("calib") or (data.get("calibration") or {}).get("source")
    calib = options.calib or (Path(recorded) if recorded else None) or (sample_calibration_path() if sample else None)
    if calib is None or not Path(calib).exists():
        where = f" ({calib} is gone)" if calib else ""
        raise OptionError(f"The diagnosis requantises the model and needs the calibration data the build used{where}: pass --calib DATA.")
    calibration = load_dataset(calib, specs, preprocess, options.calib_count or built.get("calib_count"))
    evaluation = None
    if options.eval is not None:
        evaluation = load_dataset(options.eval, specs, preprocess, options.eval_count)
    return calibration, evaluation


def _feeds(dataset: Dataset | None) -> list[dict] | None:
    if dataset is None:
        return None
    return [dataset.feed(i, i + 1) for i in range(len(dataset))]


def _finish(name: str, meta: dict, records: list[dict], named: onnx.ModelProto, samples: int,
            calibration: Dataset | None = None, evaluation: Dataset | None = None, reader_rounds_input: bool = True,
            repair_keeps_inputs_rounded: bool = False) -> dict:
    """One path's diagnosis; `named` is the model with edgedeploy's display names (the taps' node names).

    With the data, each node's own error is also referred to the model's outputs (referred.py): the
    figures' inputs are the evaluation data when given, else the calibration data, as the taps'. The
    two flags are the path's declarations (TapResult): which tensors a node is charged with, and
    whether the referred figures can lead the ranking."""
    # A fused group reads activations; its weights (initializers, or Constant nodes' outputs: silero_vad_16k's
    # inlined branches) are no upstream, else the group's fall is unknown (localise.upstream_snr).
    weights = {i.name for i in named.graph.initializer} | {o for n in named.graph.node if n.op_type == "Constant" for o in n.output}
    absorbed_nodes(records, [(n.name, [x for x in n.input if x and x not in weights], list(n.output)) for n in named.graph.node])
    refer = None
    if calibration is not None:
        calib_feeds = _feeds(calibration)
        figure_feeds = _feeds(evaluation) if evaluation is not None else calib_feeds
        refer = lambda found: referred.refer_to_outputs(found, named, figure_feeds, calib_feeds, reader_rounds_input=reader_rounds_input)  # noqa: E731
    return diagnose_path({"path": name, **meta}, records, [o.name for o in named.graph.output], samples,
                         graph_inputs=[i.name for i in named.graph.input], refer=refer, referred_lead=not repair_keeps_inputs_rounded)


def _target_path(target, chip, manifest, artifact, named, calibration, evaluation, work, options, echo) -> dict:
    executor = Executor(work / "diagnose.log", options.worker_timeout_s, None)
    request = TapRequest(
        artifact=artifact,
        model_path=artifact / "model.onnx",
        chip=chip,
        precision=(manifest.get("options") or {}).get("precision") or chip.precisions[0],
        manifest=manifest,
        calibration=calibration,
        evaluation=evaluation,
        workdir=work / target.id,
        executor=executor,
        tap_helpers=TAP_HELPERS,
        echo=echo,
        batchable=_batchable(named, calibration),
    )
    started = time.monotonic()
    tapped = target.accuracy_taps(request)
    meta = {"target": target.id, "chip": chip.id, "toolchain": tapped.toolchain, "method": tapped.method, "notes": tapped.notes, "seconds": round(time.monotonic() - started, 1)}
    return finish_tapped(chip.id, meta, tapped, named, calibration, evaluation)


def finish_tapped(name: str, meta: dict, tapped, named: onnx.ModelProto, calibration: Dataset, evaluation: Dataset | None) -> dict:
    """One target path's diagnosis from its TapResult, with what the target declares of its tensors."""
    return _finish(name, meta, tapped.records, named, len(calibration), calibration, evaluation,
                   reader_rounds_input=tapped.reader_rounds_input, repair_keeps_inputs_rounded=tapped.repair_keeps_inputs_rounded)


def _batchable(named: onnx.ModelProto, calibration: Dataset) -> bool:
    """Whether the toolchain may calibrate in batches: ONNX Runtime's probe, as the build decides it."""
    from edgedeploy.measure.reference import ReferenceRunner

    try:
        return bool(ReferenceRunner(named).accepts_batches(calibration.inputs))
    except Exception as exc:  # noqa: BLE001 - a model the probe cannot run is calibrated one sample at a time
        reraise_if_interrupted(exc)
        return False


def _qdq_path(named_path: Path, named, calibration, evaluation, work: Path) -> dict:
    started = time.monotonic()
    records, settings = qdq.diagnose_records(named_path, _feeds(calibration), _feeds(evaluation), workdir=work)
    meta = {
        "toolchain": "onnxruntime quantize_static",
        "method": f"ONNX Runtime's QDQ quantisation ({settings['calibration']}, activations {settings['activation_type']}, weights {settings['weight_type']}, "
        f"{'per channel' if settings['per_channel'] else 'per tensor'}); accumulated: the QDQ model; isolated: the node and its Q/DQ pairs alone on float inputs"
        + _samples_note(settings["samples"]),
        "settings": settings,
        "seconds": round(time.monotonic() - started, 1),
    }
    # The QDQ format quantises a quantised node's inputs (their Q/DQ pairs), and its referred figures are
    # its own isolated runs, inputs quantised: readers round their inputs; no repair runs on this path.
    return _finish("onnxruntime-qdq", meta, records, named, len(calibration), calibration, evaluation,
                   reader_rounds_input=True, repair_keeps_inputs_rounded=False)


def _samples_note(samples: dict) -> str:
    """Said only when the memory budget cut the samples: which figures rest on fewer inputs."""
    cut = [f"{samples[k]} of {samples[k + '_available']} {k} samples" for k in ("calibration", "evaluation") if samples[k] < samples[k + "_available"]]
    if not cut:
        return ""
    return (f"; on {' and '.join(cut)}: every node's output takes {samples['node_output_bytes_per_sample'] / 2**20:.0f} MB a sample, "
            f"and the path holds them all within {qdq.MEMORY_BUDGET_BYTES / 2**30:.0f} GB")


def _run_path(name: str, run: Callable[[], dict], paths: list, skipped: list, echo) -> Exception | None:
    """One path into `paths`; a path that fails goes to `skipped` with its sentence, so the other still
    runs (the exception is returned, raised by the caller only when no path is left)."""
    try:
        paths.append(run())
        return None
    except Exception as exc:  # noqa: BLE001 - see the docstring; an unexpected one is named a bug
        reraise_if_interrupted(exc)
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        if not isinstance(exc, EdgedeployError):
            reason = f"internal error: {type(exc).__name__}: {reason} (a bug in edgedeploy's diagnosis)"
        skipped.append({"path": name, "reason": reason})
        echo(f"diagnose: {name}: {reason}")
        return exc


def diagnose_artifact(artifact: Path, options: DiagnoseOptions, echo: Callable[[str], None]) -> dict:
    """The `accuracy_diagnosis` document of one artifact (schema edgedeploy.accuracy_diagnosis/1)."""
    from edgedeploy.model import named_copy
    from edgedeploy.model.stats import node_names

    artifact = Path(artifact).absolute()
    manifest = read_manifest(artifact, options.verify)
    if not options.verify:
        echo("diagnose: NOT VERIFIED: --no-verify: the artifact's files were not checked against its manifest")
    chip_id = (manifest.get("target") or {}).get("chip")
    if not isinstance(chip_id, str):
        raise ArtifactError(f"{artifact}/manifest.json names no chip; it is not an artifact of `edgedeploy build`.")
    try:
        target, chip = find_chip(chip_id)
    except (KeyError, EdgedeployError):
        raise ArtifactError(f"{artifact} was built for {chip_id!r}, a chip no installed target has.") from None
    model = load_model(artifact / "model.onnx", require_static=True)
    calibration, evaluation = resolve_data(model, artifact, manifest, options)
    named = named_copy(model.proto, node_names(model.graph))
    paths, skipped, failed = [], [], None
    with tempfile.TemporaryDirectory(prefix="edgedeploy-diagnose-") as tmp:
        work = Path(tmp)
        named_path = work / "model_named.onnx"
        onnx.save(named, str(named_path))
        if target.has(Capability.DIAGNOSE):
            failed = _run_path(chip.id, lambda: _target_path(target, chip, manifest, artifact, named, calibration, evaluation, work, options, echo), paths, skipped, echo)
        else:
            skipped.append({"path": chip.id, "reason": f"the {target.name} target has no accuracy taps (its toolchain does not simulate on this host, or the taps are not written yet)"})
        if options.qdq:
            echo("diagnose: ONNX Runtime quantises the same model (QDQ) and taps every node")
            failed = _run_path("onnxruntime-qdq", lambda: _qdq_path(named_path, named, calibration, evaluation, work), paths, skipped, echo) or failed
    if failed is not None and not paths:
        raise failed
    return {
        "schema": SCHEMA,
        "artifact": str(artifact),
        "model": {"name": (manifest.get("model") or {}).get("name") or model.name, "sha256": model.sha256},
        "chip": chip.id,
        "data": {"calibration": calibration.describe(), "evaluation": evaluation.describe() if evaluation is not None else None, "figures_on": "evaluation" if evaluation is not None else "calibration"},
        "paths": paths,
        "skipped": skipped,
        "verified": options.verify,
    }


# The gates whose failure the diagnosis explains: the accuracy figures of the quantised model.
ACCURACY_GATES = ("accuracy-drop", "snr", "cosine")


def diagnose_failed_accuracy_gates(artifact: Path, gate_results: list, evaluation: Path | None, echo: Callable[[str], None]) -> dict | None:
    """`build`'s diagnosis stage: when an accuracy gate of this artifact failed, the same analysis as
    `edgedeploy diagnose`, written into its report.json (`accuracy_diagnosis`) and summarised on `echo`.

    A diagnosis that cannot run changes nothing of the build's outcome: its reason is recorded.
    """
    from edgedeploy.report.diagnosis import render_path
    from edgedeploy.report.artifact import update_report_section

    failed = [r for r in gate_results if not r.passed and r.gate.kind.key in ACCURACY_GATES and r.value is not None]
    if not failed:
        return None
    echo(f"diagnose: {', '.join(r.gate.given or r.gate.kind.key for r in failed)} failed; looking for where int8 breaks the model")
    try:
        document = diagnose_artifact(artifact, DiagnoseOptions(eval=evaluation), echo)
    except Exception as exc:  # noqa: BLE001 - the build is done and judged: a diagnosis failure is recorded, never raised
        reraise_if_interrupted(exc)
        reason = str(exc).splitlines()[0] if str(exc) else ""
        document = {"schema": SCHEMA, "error": reason if isinstance(exc, EdgedeployError) else f"internal error: {type(exc).__name__}: {reason} (a bug in edgedeploy's diagnosis)"}
        echo(f"diagnose: could not run: {document['error']}")
    else:
        for path in document["paths"]:
            for line in render_path(path, nodes=False).splitlines():
                echo(f"diagnose: {line.strip()}")
    update_report_section(artifact, ("accuracy_diagnosis",), document)
    return document
