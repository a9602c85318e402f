"""ONNX Runtime's QDQ quantisation as a diagnosis path: the toolchain-neutral baseline beside every target.

ONNX Runtime is the core's own reference runtime, so this path needs no toolchain environment.
`quantize_static` inserts QuantizeLinear/DequantizeLinear pairs around the user's nodes (names
kept), calibrated on the same inputs as the targets; then, per node of the user's model:

- accumulated: the QDQ model's value of the node's output (after its DequantizeLinear, where it
  has one) against the float model's, every node quantised;
- isolated: the QDQ model cut from the node's float inputs (through their Q/DQ pair) to its
  quantised output (onnx.utils.Extractor), fed the float model's values: that node alone.

The Q/DQ structure is the name mapping: a DequantizeLinear fed by a QuantizeLinear of tensor X
is X quantised; one fed by an initializer is a weight or bias of the node it feeds.
"""

from __future__ import annotations

import logging
import tempfile
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

from edgedeploy.accuracy import tap_numpy
from edgedeploy.interrupts import reraise_if_interrupted

INTEGER_RANGES = {onnx.TensorProto.INT8: (-128, 127), onnx.TensorProto.UINT8: (0, 255), onnx.TensorProto.INT16: (-32768, 32767), onnx.TensorProto.UINT16: (0, 65535)}
# What ONNX Runtime quantises with when nothing else is asked: its defaults (MinMax, uint8
# activations, int8 weights, per tensor); the path reports them.
DEFAULT_SETTINGS = {"calibration": "MinMax", "activation_type": "QUInt8", "weight_type": "QInt8", "per_channel": False}


class _Reader:
    """quantize_static's CalibrationDataReader over a list of feeds (duck-typed: get_next / rewind)."""

    def __init__(self, feeds: list[dict]):
        self.feeds, self.position = feeds, 0

    def get_next(self):
        if self.position >= len(self.feeds):
            return None
        self.position += 1
        return self.feeds[self.position - 1]

    def rewind(self):
        self.position = 0


def quantise(model_path: Path, feeds: list[dict], out_path: Path, settings: dict | None = None) -> dict:
    """Write the QDQ model of `model_path` calibrated on `feeds`; returns the settings used."""
    chosen = {**DEFAULT_SETTINGS, **(settings or {})}
    # quantize_static advises pre-processing through the root logger on every call; the path
    # quantises the model as given (as the targets do), so the advice is noise on stderr.
    logger = logging.getLogger()
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        _quantize_static(model_path, out_path, feeds, chosen)
    finally:
        logger.setLevel(level)
    return chosen


def _quantize_static(model_path, out_path, feeds, chosen):
    from onnxruntime.quantization import CalibrationMethod, QuantFormat, QuantType, quantize_static

    quantize_static(
        str(model_path),
        str(out_path),
        _Reader(feeds),
        quant_format=QuantFormat.QDQ,
        activation_type=getattr(QuantType, chosen["activation_type"]),
        weight_type=getattr(QuantType, chosen["weight_type"]),
        per_channel=bool(chosen["per_channel"]),
        calibrate_method=getattr(CalibrationMethod, chosen["calibration"]),
    )


def _all_outputs_session(model: onnx.ModelProto, names: list[str]):
    import onnxruntime as ort

    exposed = onnx.ModelProto()
    exposed.CopyFrom(model)
    present = {o.name for o in exposed.graph.output}
    produced = {o for n in exposed.graph.node for o in n.output}
    for name in names:
        if name not in present and name in produced:
            exposed.graph.output.append(onnx.helper.make_empty_tensor_value_info(name))
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL  # the graph as written: no fusion hides a tensor
    return ort.InferenceSession(exposed.SerializeToString(), options, providers=["CPUExecutionProvider"])


def _run_all(model: onnx.ModelProto, names: list[str], feeds: list[dict]) -> dict[str, list[np.ndarray]]:
    """Every named tensor, one array per feed (kept apart: a tensor's first axis need not be the batch)."""
    session = _all_outputs_session(model, names)
    wanted = [o.name for o in session.get_outputs()]
    values: dict[str, list] = {n: [] for n in wanted}
    for feed in feeds:
        for name, value in zip(wanted, session.run(wanted, feed)):
            values[name].append(np.asarray(value))
    return values


def _flat(arrays: list[np.ndarray]) -> np.ndarray:
    return np.concatenate([np.asarray(a).reshape(-1) for a in arrays])


def _sums(reference: list[np.ndarray], candidate: list[np.ndarray]) -> dict:
    """tap_numpy.moments over the feeds, one feed at a time."""
    total = None
    for ref, got in zip(reference, candidate):
        total = tap_numpy.merge_moments(total, tap_numpy.moments(ref, got))
    return total


class QdqStructure:
    """The QDQ model read back: which tensor each DequantizeLinear holds, with its scale and range."""

    def __init__(self, qdq: onnx.ModelProto):
        init = {i.name: i for i in qdq.graph.initializer}
        producers = {o: n for n in qdq.graph.node for o in n.output}
        self.activation: dict[str, dict] = {}  # original tensor -> {"dq": name, "scale", "zero_point", "lo", "hi"}
        self.parameter: dict[str, dict] = {}  # DequantizeLinear output -> {"scale", "axis", "bits"}
        for node in qdq.graph.node:
            if node.op_type != "DequantizeLinear":
                continue
            scale = numpy_helper.to_array(init[node.input[1]]) if node.input[1] in init else None
            zp_init = init.get(node.input[2]) if len(node.input) > 2 else None
            zero = numpy_helper.to_array(zp_init) if zp_init is not None else np.zeros((), np.int8)
            dtype = zp_init.data_type if zp_init is not None else onnx.TensorProto.INT8
            axis = next((a.i for a in node.attribute if a.name == "axis"), 1)
            source = producers.get(node.input[0])
            if node.input[0] in init or source is None:
                bits = 32 if dtype == onnx.TensorProto.INT32 else 8 * np.dtype(onnx.helper.tensor_dtype_to_np_dtype(dtype)).itemsize
                self.parameter[node.output[0]] = {"scale": scale, "axis": axis, "bits": bits}
            elif source.op_type == "QuantizeLinear" and scale is not None and scale.size == 1:
                lo_int, hi_int = INTEGER_RANGES.get(dtype, (-128, 127))
                s, z = float(scale.reshape(-1)[0]), float(np.asarray(zero).reshape(-1)[0])
                self.activation.setdefault(source.input[0], {"dq": node.output[0], "scale": s, "lo": (lo_int - z) * s, "hi": (hi_int - z) * s})


# Each node alone is a model of its own run on this many samples: one session per node, so on a
# model of a few hundred nodes this was most of the path (ppocr_cls_mobile_v2, 177 nodes: minutes).
ISOLATED_SAMPLES = 8

WEIGHT_AXIS = {"Conv": 0, "ConvTranspose": 1, "MatMul": 1}


def _weight_axis(node: onnx.NodeProto) -> int:
    if node.op_type == "Gemm":
        return 0 if any(a.name == "transB" and a.i for a in node.attribute) else 1
    return WEIGHT_AXIS.get(node.op_type, 0)


def _parameter_stats(node, qdq_node, float_init, structure) -> dict:
    """weight_stats / bias_stats of a Conv/Gemm/MatMul's weight and bias, with the steps the QDQ model gave them."""
    found = {}
    if node.op_type not in ("Conv", "ConvTranspose", "Gemm", "MatMul") or len(node.input) < 2 or node.input[1] not in float_init:
        return found
    weight_q = structure.parameter.get(qdq_node.input[1]) if qdq_node is not None and len(qdq_node.input) > 1 else None
    weight = float_init[node.input[1]]
    found["weight"] = tap_numpy.weight_stats(weight, _weight_axis(node), weight_q["scale"] if weight_q else None, weight_q["bits"] if weight_q else 8)
    if len(node.input) > 2 and node.input[2] in float_init and qdq_node is not None and len(qdq_node.input) > 2:
        bias_q = structure.parameter.get(qdq_node.input[2])
        if bias_q is not None:
            found["bias"] = tap_numpy.bias_stats(float_init[node.input[2]], bias_q["scale"], bias_q["bits"])
            found["bias"]["values"] = [float(v) for v in float_init[node.input[2]].reshape(-1)[:4096]]
    return found


def _cut(model: onnx.ModelProto, inputs: list[str], output: str) -> onnx.ModelProto:
    """The nodes of `model` between float tensors `inputs` and `output`, as a model of its own.

    (onnx.utils.Extractor needs value_info for every cut tensor, which the QDQ model lacks.)
    """
    producers = {o: n for n in model.graph.node for o in n.output}
    keep, stack, seen = [], [output], set(inputs)
    while stack:
        name = stack.pop()
        node = producers.get(name)
        if name in seen or node is None:
            continue
        seen.add(name)
        keep.append(node)
        stack.extend(x for x in node.input if x)
    order = {id(n): i for i, n in enumerate(model.graph.node)}
    keep.sort(key=lambda n: order[id(n)])
    graph = onnx.helper.make_graph(
        keep,
        "isolated",
        [onnx.helper.make_tensor_value_info(x, onnx.TensorProto.FLOAT, None) for x in inputs],
        [onnx.helper.make_empty_tensor_value_info(output)],
        initializer=[i for i in model.graph.initializer if any(i.name in n.input for n in keep)],
    )
    return onnx.helper.make_model(graph, opset_imports=model.opset_import, ir_version=model.ir_version)


def _isolated(model, inputs, output, reference, float_values, count) -> tuple[dict | None, list | None]:
    """The node alone quantised: the QDQ model cut from its float inputs to its quantised output;
    its sums and its values (kept for referred.refer_to_outputs, which puts them into the float model)."""
    try:
        sub = _cut(model, inputs, output)
        values = _run_all(sub, [output], [{x: float_values[x][i] for x in inputs} for i in range(count)])
        return _sums(reference, values[output]), values[output]
    except Exception as exc:  # noqa: BLE001 - a node that cannot be cut out and run alone gets no isolated figure, the rest still does
        reraise_if_interrupted(exc)
        return None, None


def records(model_path: Path, feeds: list[dict], qdq_path: Path, eval_feeds: list[dict] | None = None) -> list[dict]:
    """One tap record per computing node of the QDQ model, named by the user's node it keeps the name of.

    ONNX Runtime drops a Relu/Clip after a quantised Conv (the Conv writes the Relu's output
    tensor): that Conv's record is of the Relu's tensor, and the Relu is listed as absorbed.
    """
    model = onnx.load(str(model_path))
    qdq = onnx.load(str(qdq_path))
    structure = QdqStructure(qdq)
    original_of = {a["dq"]: name for name, a in structure.activation.items()}
    float_init = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    float_nodes = {n.name: n for n in model.graph.node if n.name}
    tensors = [o for n in model.graph.node for o in n.output if o]
    # Quantised on every calibration sample (as the build calibrates); the figures and statistics
    # on at most tap_numpy.STAT_SAMPLES of them (each node is also run alone on every one).
    measured = eval_feeds or feeds[: tap_numpy.STAT_SAMPLES]
    float_values = _run_all(model, tensors, measured)
    float_values.update({k: [f[k] for f in measured] for k in measured[0]})
    quantised = _run_all(qdq, tensors + [a["dq"] for a in structure.activation.values()], measured)
    calib_values = _run_all(model, tensors, feeds[: tap_numpy.STAT_SAMPLES]) if eval_feeds else float_values
    out = []
    for node in qdq.graph.node:
        if node.op_type in ("QuantizeLinear", "DequantizeLinear") or node.name not in float_nodes:
            continue
        record = _record(node, float_nodes[node.name], structure, original_of, float_init, float_values, quantised, calib_values)
        if record is None:
            continue
        y, act = node.output[0], structure.activation.get(node.output[0])
        record["isolated"], record["isolated_values"] = _isolated(qdq, record["inputs"], act["dq"] if act else y, float_values[record["tensor"]], float_values, min(len(measured), ISOLATED_SAMPLES))
        if eval_feeds and act:
            record["stats_eval"] = tap_numpy.tensor_stats(_flat(float_values[record["tensor"]]), act["lo"], act["hi"], act["scale"])
        out.append(record)
    return out


def _record(node, float_node, structure, original_of, float_init, float_values, quantised, calib_values) -> dict | None:
    """The record of one QDQ node; its tensor is the user's name (a quantised graph output's Q reads `<name>_QuantizeLinear_Input`)."""
    y = node.output[0]
    act = structure.activation.get(y)
    if y not in float_values:
        y = act["dq"] if act and act["dq"] in float_values else None
        if y is None:
            return None
    got = quantised.get(act["dq"]) if act else quantised.get(y)
    inputs = [original_of.get(x, x) for x in node.input if x and original_of.get(x, x) in float_values]
    record = {
        "node": node.name,
        "op_type": node.op_type,
        "tensor": y,
        "inputs": inputs,
        "precision": ("int8" if node.op_type in quantised_op_types() else "float32") if act else None,
        "accumulated": _sums(float_values[y], got) if got is not None else None,
        "stats": tap_numpy.tensor_stats(_flat(calib_values[y]), act and act["lo"], act and act["hi"], act and act["scale"]),
        "input_steps": [structure.activation.get(x, {}).get("scale") for x in inputs],
    }
    record.update(_parameter_stats(float_node, node, float_init, structure))
    return record


def quantised_op_types() -> set[str]:
    """The operators quantize_static quantises when not told which (its own default, quantize.py:
    QLinearOpsRegistry and QDQRegistry). Another node (a Pow, a Sqrt) stays float: its output is
    quantised only where a quantised node reads it, and keeping it in float changes nothing."""
    from onnxruntime.quantization.registry import QDQRegistry, QLinearOpsRegistry

    return set(QLinearOpsRegistry) | set(QDQRegistry)


# Every node's output of every sample is held at once: ONNX Runtime's MinMax calibration keeps them
# all until it computes the ranges, and the figures compare whole tensors. On a large input that
# exhausts memory (PP-OCR's 320x320 detector grew past 23 GB on 64 calibration and 32 evaluation
# samples and was killed), so the path takes as many samples as this budget holds, and says so.
MEMORY_BUDGET_BYTES = 2 << 30
# Copies of a sample's node outputs held per sample: calibration (ONNX Runtime's, then the float
# statistics); evaluation (the float model's, the QDQ model's, its DequantizeLinear outputs, each
# node's isolated output kept for referred.refer_to_outputs, a slack).
CALIBRATION_COPIES, EVALUATION_COPIES = 2, 5


def bytes_per_sample(model_path: Path, feed: dict) -> int:
    """What every node's float output of one sample takes (one run of the float model)."""
    model = onnx.load(str(model_path))
    tensors = [o for n in model.graph.node for o in n.output if o]
    return sum(v[0].nbytes for v in _run_all(model, tensors, [feed]).values())


def affordable(available: int, per_sample: int, copies: int) -> int:
    """How many samples of `per_sample` bytes, held `copies` times, fit MEMORY_BUDGET_BYTES (at least one)."""
    return max(1, min(available, MEMORY_BUDGET_BYTES // max(1, per_sample * copies)))


def diagnose_records(model_path: Path, feeds: list[dict], eval_feeds: list[dict] | None = None, settings: dict | None = None, workdir: Path | None = None) -> tuple[list[dict], dict]:
    """Quantise with ONNX Runtime and tap every node; returns (records, the settings used, with the
    samples used and available under "samples")."""
    per_sample = bytes_per_sample(model_path, feeds[0])
    calibration = feeds[: affordable(len(feeds), per_sample, CALIBRATION_COPIES)]
    evaluation = eval_feeds[: affordable(len(eval_feeds), per_sample, EVALUATION_COPIES)] if eval_feeds else eval_feeds
    with tempfile.TemporaryDirectory(prefix="edgedeploy-qdq-", dir=workdir) as tmp:
        qdq_path = Path(tmp) / "model.qdq.onnx"
        used = quantise(model_path, calibration, qdq_path, settings)
        found = records(model_path, calibration, qdq_path, evaluation)
    used["samples"] = {"calibration": len(calibration), "calibration_available": len(feeds), "evaluation": len(evaluation or []),
                       "evaluation_available": len(eval_feeds or []), "node_output_bytes_per_sample": per_sample}
    return found, used
