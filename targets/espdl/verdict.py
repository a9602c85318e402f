"""esp-ppq's verdict in the audit's placement vocabulary (the core side of worker_verdict.py).

The worker quantises each model with esp-ppq in the `espdl` environment and returns the
exported layers with their `quant_type` (from the `.info` file). Here every layer is traced back
to the ONNX nodes it came from (edgedeploy.audit.layers) and its quant_type becomes a
placement: S8, S16 and W8A16 layers run ESP-DL's integer (PIE SIMD) kernels: ACCELERATOR; F32
layers are kept in float: FLOAT. A model esp-ppq refuses becomes `verdict.failed` with its reason.

esp-ppq cannot say per node that ESP-DL has no kernel for an operator: it exports such operators
as F32 layers all the same, and the firmware then fails to load the model. The verdict therefore
observes ACCELERATOR and FLOAT only (see ToolchainVerdict.observes). What the user's paths read
(`build`, `audit --confirm`) is the chip's truth: an exported op type ESP-DL's runtime registers no
module for makes the verdict failed (refused_by_the_runtime), esp-ppq's placements kept beside.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Callable, Iterable, Sequence

import onnx

from edgedeploy.audit.confirm import NodeVerdict, ToolchainVerdict
from edgedeploy.audit.layers import ToolchainLayer, map_layers
from edgedeploy.audit.rules import Placement
from edgedeploy.errors import OptionError, WorkerFailed
from edgedeploy.model.stats import node_names
from edgedeploy.toolchains.executor import Executor
from edgedeploy.targets.espdl.passes import BN_FOLD_TARGETS
from edgedeploy.targets.espdl.registry import ESP_DL_RUNTIME_MODULES, ESP_DL_VERSION

WORKER = Path(__file__).with_name("worker_verdict.py")
TOOLCHAIN_NAME = "esp-ppq"
QUANTISED_TYPES = {"S8", "S16", "W8A16"}
# edgedeploy's precision names -> esp-ppq's quant_type.
QUANT_TYPES = {"int8": "w8a8", "int16": "w16a16", "w8a8": "w8a8", "w8a16": "w8a16", "w16a16": "w16a16"}
CALIB_STEPS = 8
# Generous: a large model quantises in tens of seconds on our 2-core machines.
CASE_TIMEOUT_S = 600
# Start-up of the worker (importing torch and esp-ppq) on top of the cases' time.
WORKER_START_S = 120


def placement_of(quant_type: str | None) -> Placement:
    return Placement.ACCELERATOR if quant_type in QUANTISED_TYPES else Placement.FLOAT


def modules_the_runtime_lacks(exported_op_types: Iterable[str]) -> list[str]:
    """The exported op types ESP-DL's runtime registers no module for (registry.ESP_DL_RUNTIME_MODULES).

    One is enough: the firmware's model loader stops at it, so esp-ppq's conversion of the model
    does not load on the chip. The collectors keep these beside esp-ppq's placements (a pair's
    "runtime_lacks"); the truth reads them as a refusal (scripts/corpus/agreement.truth_of)."""
    return sorted(set(exported_op_types) - ESP_DL_RUNTIME_MODULES)


# Nodes named per op type in runtime_refusal's sentence; the rest are counted.
NAMED_NODES = 3


def runtime_refusal(lacks: Sequence[str], nodes: dict[str, list[str]] | None = None) -> str:
    """The refusal the ESP-DL runtime gives an exported model with op types it has no module for;
    `nodes`: op type -> the ONNX nodes exported as such a layer (named in the sentence where known)."""
    named = ", ".join(f"{op}{_nodes_of(nodes.get(op, []) if nodes else [])}" for op in lacks)
    return (f"ESP-DL {ESP_DL_VERSION} registers no module for {named} (dl_module_creator.hpp): the .espdl "
            "esp-ppq exported does not load (the loader: \"Do not support <op>, please implement and register it first.\")")


def _nodes_of(names: list[str]) -> str:
    if not names:
        return ""
    shown = ", ".join(f"'{n}'" for n in names[:NAMED_NODES])
    more = f" and {len(names) - NAMED_NODES} more" if len(names) > NAMED_NODES else ""
    return f" (node{'s' if len(names) > 1 else ''} {shown}{more})"


def refused_by_the_runtime(verdict: ToolchainVerdict, layers: Sequence[ToolchainLayer], mapping) -> ToolchainVerdict:
    """esp-ppq's verdict, failed with runtime_refusal where ESP-DL's runtime has no module for an
    exported layer's op type (the chip's loader stops at it); esp-ppq's placements are kept beside.
    The user's paths (build, audit --confirm) read the chip's truth so; the collectors keep esp-ppq's
    .info alone and record the lack apart ("runtime_lacks")."""
    lacks = modules_the_runtime_lacks(layer.op_type for layer in layers)
    if not lacks:
        return verdict
    nodes: dict[str, list[str]] = {}
    for name, (index, how) in mapping.nodes.items():
        if how != "fused" and layers[index].op_type in lacks:
            nodes.setdefault(layers[index].op_type, []).append(name)
    return dataclasses.replace(verdict, failed=runtime_refusal(lacks, nodes))


def verdict_from_case(model_path: Path, case: dict, version: str, *, the_runtime_loads: bool = False) -> ToolchainVerdict:
    """One model's worker result as a ToolchainVerdict keyed by edgedeploy node names; with
    `the_runtime_loads`, failed where ESP-DL's runtime cannot load what esp-ppq exported."""
    toolchain_version = f"{TOOLCHAIN_NAME} {version}"
    observes = (Placement.ACCELERATOR, Placement.FLOAT)
    if not case.get("ok"):
        reason = case.get("error") or "esp-ppq failed"
        stage = case.get("stage")
        return ToolchainVerdict(TOOLCHAIN_NAME, toolchain_version, failed=f"{reason} (during {stage})" if stage else reason, observes=observes)
    layers = [
        ToolchainLayer(op_type=l["op_type"], inputs=list(l["inputs"]), outputs=list(l["outputs"]), info={"quant_type": l.get("quant_type")})
        for l in case["layers"]
    ]
    graph = onnx.load(str(model_path), load_external_data=False).graph
    mapping = map_layers(graph, layers, constants=set(case.get("initializers", [])))
    _batchnorm_into_its_producer(graph, layers, mapping)
    simplified = _computed_from_constants(graph)
    folded = _folded_from_constants(graph)
    nodes = {}
    for name, (index, how) in mapping.nodes.items():
        if name in simplified or (how == "fused" and name in folded):
            continue  # computed by esp-ppq's simplifier before it converts anything: runs nowhere
        layer = layers[index]
        quant = layer.info.get("quant_type")
        detail = f"{layer.op_type} {quant or '(no quant_type)'}"
        if how == "fused":
            detail = f"fused into {detail}"
        nodes[name] = NodeVerdict(placement_of(quant), detail)
    unmapped = [f"{layers[i].op_type} {layers[i].info.get('quant_type') or ''} -> {', '.join(layers[i].outputs)}".strip() for i in mapping.unmapped_layers]
    verdict = ToolchainVerdict(
        TOOLCHAIN_NAME,
        toolchain_version,
        nodes=nodes,
        unmapped=unmapped,
        estimates={"folded_nodes": mapping.folded_nodes} if mapping.folded_nodes else {},
        observes=observes,
    )
    return refused_by_the_runtime(verdict, layers, mapping) if the_runtime_loads else verdict


def _computed_from_constants(graph: onnx.GraphProto) -> set[str]:
    """The nodes whose every input is a constant of the model or computed from constants only (the
    model zoo's weights written as ConstantOfShape of a shape initializer): onnxsim, which esp-ppq
    runs first, computes them, so their outputs reach esp-ppq as weights. map_layers would give
    such a node to the layer that reads the weight ("fused into Sum F32")."""
    known = {t.name for t in graph.initializer}
    outputs = {o.name for o in graph.output}
    found = set()
    for name, node in zip(node_names(graph), graph.node):
        inputs = [i for i in node.input if i]
        if node.op_type in ("Constant", "ConstantOfShape", "Identity", "Cast", "Reshape", "Unsqueeze", "Squeeze", "Transpose") and all(i in known for i in inputs) and not outputs.intersection(node.output):
            if inputs or node.op_type == "Constant":
                known.update(o for o in node.output if o)
                found.add(name)
    return found


# Operators whose result onnxsim does not compute at compile time although their inputs are known.
NOT_FOLDED = ("RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike", "Multinomial", "Bernoulli")


def _folded_from_constants(graph: onnx.GraphProto) -> set[str]:
    """The nodes of any operator whose every input is a constant of the model or computed from
    constants only (torch.onnx's Expand target: ConstantOfShape, Mul by -1, Equal, Where).
    onnxsim computes them, and esp-ppq exports the result as a constant of a name of its own
    (PPQ_Variable_N), so map_layers cannot see them folded and gives them to the layer that reads
    the constant ("fused into Expand F32"); the verdict leaves out such a node where it was given
    so (a node exported as a layer of its own keeps that layer)."""
    known = {t.name for t in graph.initializer}
    outputs = {o.name for o in graph.output}
    found = set()
    for name, node in zip(node_names(graph), graph.node):
        inputs = [i for i in node.input if i]
        if node.op_type in NOT_FOLDED or outputs.intersection(node.output) or not all(i in known for i in inputs):
            continue
        if inputs or node.op_type in ("Constant", "ConstantOfShape"):
            known.update(o for o in node.output if o)
            found.add(name)
    return found


def _batchnorm_into_its_producer(graph: onnx.GraphProto, layers: list[ToolchainLayer], mapping) -> None:
    """Attribute each BatchNormalization esp-ppq folded to the Conv, Gemm or ConvTranspose layer it was folded into.

    esp-ppq folds the BatchNormalization into the layer before it (that layer's weights and bias
    absorb the scale and shift), so the BatchNormalization's output tensor is gone from the
    exported graph. map_layers then gives such a node to the layer its consumers went into,
    which is right when that layer is the fused one (Conv + BatchNormalization + Relu exported
    as one Conv with its Relu's tensor), but not when the consumer is another layer: in the ONNX
    model zoo's ResNet-50 each BatchNormalization before a Sum (which ESP-DL runs in float)
    came out as "float, fused into Sum F32", although the .info shows the Conv before it as the
    S8 layer whose output the Sum's float glue reads (esp-ppq 1.3.12, 2026-12-02: 20 of its 53
    BatchNormalization nodes). Here a BatchNormalization mapped to a layer other than the one of
    its input's producer, where that producer is a Conv, Gemm or ConvTranspose exported as a
    layer of that type, is given to the producer's layer.
    """
    names = node_names(graph)
    producer = {t: i for i, node in enumerate(graph.node) for t in node.output if t}
    for i, node in enumerate(graph.node):
        if node.op_type != "BatchNormalization" or not node.input:
            continue
        found = mapping.nodes.get(names[i])
        source = producer.get(node.input[0])
        if found is None or found[1] != "fused" or source is None or graph.node[source].op_type not in BN_FOLD_TARGETS:
            continue
        into = mapping.nodes.get(names[source])
        if into is not None and into[0] != found[0] and layers[into[0]].op_type in BN_FOLD_TARGETS:
            mapping.nodes[names[i]] = (into[0], "fused")


def verdict_from_info(model_path: Path, info_path: Path, version: str) -> ToolchainVerdict:
    """esp-ppq's verdict from the .info file a conversion exported beside the .espdl (no worker
    needed), failed where ESP-DL's runtime cannot load the .espdl (refused_by_the_runtime)."""
    from edgedeploy.targets.espdl.worker_verdict import parse_info

    layers, initializers = parse_info(Path(info_path).read_text(errors="replace"))
    return verdict_from_case(Path(model_path), {"ok": True, "layers": layers, "initializers": initializers}, version, the_runtime_loads=True)


def run_verdicts(
    toolchain,
    model_paths: Sequence[Path],
    chip_id: str,
    workdir: Path,
    log_path: Path,
    *,
    inputs: Sequence[Path | None] | Path | None = None,
    precision: str = "int8",
    calib_steps: int = CALIB_STEPS,
    case_timeout_s: float = CASE_TIMEOUT_S,
    seed: int = 0,
    progress: Callable[[int, int], None] | None = None,
    home: Path | None = None,
) -> list[ToolchainVerdict]:
    """esp-ppq's verdict on each model, in one worker process (restarted past a case that crashes it).

    `inputs`: calibration data per model (an .npz of graph-input arrays, one sample, or None for
    random data), or one path for all. `progress(done, total)` is called as cases finish.
    """
    if precision not in QUANT_TYPES:
        raise OptionError(f"esp-ppq quantises to {', '.join(sorted(QUANT_TYPES))}, not '{precision}'.")
    paths = [Path(p).resolve() for p in model_paths]
    if inputs is None or isinstance(inputs, (str, Path)):
        per_model = [inputs] * len(paths)
    else:
        per_model = list(inputs)
    cases = [
        {"id": str(i), "model": str(p), "inputs": str(Path(x).resolve()) if x else None}
        for i, (p, x) in enumerate(zip(paths, per_model))
    ]
    workdir.mkdir(parents=True, exist_ok=True)
    progress_path = workdir / "progress.jsonl"
    results: dict[str, dict] = {}
    version = ""
    pending = cases
    while pending:
        progress_path.unlink(missing_ok=True)
        request = {
            "chip": chip_id,
            "quant_type": QUANT_TYPES[precision],
            "calib_steps": calib_steps,
            "case_timeout_s": case_timeout_s,
            "seed": seed,
            "progress_path": str(progress_path),
            "cases": pending,
        }
        try:
            executor = Executor(log_path, WORKER_START_S + case_timeout_s * len(pending) * 1.5)
            result = executor.run_worker(toolchain.worker_environment(home), WORKER, request, workdir)
            version = result.get("esp_ppq_version", version)
            results.update(result["cases"])
            if progress:
                progress(len(results), len(cases))
            break
        except WorkerFailed as exc:
            # The worker died in native code (or ran out of time): keep what it finished, blame
            # the case it was on, and go on with the rest in a fresh process.
            started_ok, done = _read_progress(progress_path)
            results.update(done)
            remaining = [c for c in pending if c["id"] not in results]
            if not remaining or not started_ok:
                raise
            culprit = remaining[0]
            first_line = str(exc).splitlines()[0]
            results[culprit["id"]] = {"ok": False, "stage": "worker", "error": f"esp-ppq crashed on this model: {first_line}"}
            pending = remaining[1:]
            if progress:
                progress(len(results), len(cases))
    if not version:
        version = _installed_version(toolchain, home)
    return [verdict_from_case(Path(c["model"]), results[c["id"]], version, the_runtime_loads=True) for c in cases]


def _read_progress(path: Path) -> tuple[bool, dict[str, dict]]:
    """(whether the worker got past its imports, the cases it finished) from its progress file."""
    done: dict[str, dict] = {}
    started = False
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return started, done
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue  # a line cut short by the crash
        if entry.get("event") == "started":
            started = True
        elif "id" in entry:
            done[entry.pop("id")] = entry
    return started, done


def _installed_version(toolchain, home: Path | None) -> str:
    status = toolchain.status(home)
    return str(status.versions.get("esp-ppq") or "?")
