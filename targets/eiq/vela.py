"""Reading what Vela and the TFLite converter said, and tracing it back to ONNX nodes. Pure Python.

The eiq worker returns raw facts: Vela's printout (`--show-cpu-operations`), its summary CSV,
the operator list of the int8 .tflite (type, input and output tensors), and for every ONNX node
the Keras layers onnx2tf created for it. This module turns them into an
edgedeploy.audit.confirm.ToolchainVerdict keyed by ONNX node name.

How a TFLite operator is traced back to ONNX nodes (and where that stops):
  * onnx2tf builds a Keras model; TFLite names an operator's output tensor `model/<layer>/<op>`,
    joining the names with ';' when the converter fused several TF ops (Conv + bias + ReLU).
    The worker records which layers each ONNX node created, so every layer name in a tensor
    name leads to its ONNX node; a fused operator belongs to all of the nodes it absorbed.
  * The model's output tensors are renamed `PartitionedCall:N` by the converter; they are
    traced through the signature (output_0, output_1, ... follow the ONNX outputs' order) to the
    ONNX node producing that output.
  * QUANTIZE/DEQUANTIZE operators the quantiser inserts (`tfl.quantize`, `tfl.dequantize`)
    belong to the node whose float operator they wrap (traced through the tensors).
  * Limits: an ONNX node that onnxsim folded away or that the converter fused into a node
    producing a graph output leaves no name behind; it is "not reported". Operators whose
    tensor names carry no layer (constants the converter made up) stay in `unmapped`.
Placement of a node from its operators (the worst one decides; Q/DQ helpers only when the node
has nothing else): a Flex (TF Select) operator -> UNSUPPORTED (the board's TFLite runtime has
no Flex delegate); an operator computing in float32 -> FLOAT (no int8 kernel: kept in float,
on the CPU); an operator in Vela's CPU list -> FALLBACK; otherwise -> ACCELERATOR.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass, field

from edgedeploy.audit.confirm import NodeVerdict, ToolchainVerdict
from edgedeploy.audit.rules import Placement, worst

# `model/<layer>/<op>`; Keras names a second model `model_1`, and so on.
_LAYER_RE = re.compile(r"(?:^|;)model(?:_\d+)?/([^/;]+)/")
_CPU_NPU_LINE = re.compile(r"^\s*(CPU|NPU):\s+(\S+)\s+=\s+(.*?)\s+\(outputs \[([^\]]*)\]\)\s*$")
_WARNING_HEAD = re.compile(r"^Warning \(supported operators\) operator:\s*(\S+),\s*ofm:\s*'(.*)'\s*$")
_COUNT_LINE = re.compile(r"^(CPU|NPU) operators\s*=\s*(\d+)\s*\(([\d.]+)%\)")
_FIELD_LINE = re.compile(r"^(Accelerator configuration|System configuration|Memory mode|Accelerator clock|Total SRAM used|Total DRAM used|Neural network macs)\s+(.*?)\s*$")
HELPER_OPS = ("QUANTIZE", "DEQUANTIZE")
FLOAT_DTYPES = ("float32", "float16", "float64")
FLEX_PREFIX = "CUSTOM:Flex"


@dataclass
class VelaOp:
    unit: str  # "CPU" or "NPU"
    kind: str  # Vela's own operator name (Conv2D, Passthrough, ...)
    tensor: str  # the output tensor's name
    shape: list[int]


@dataclass
class VelaPrintout:
    """What `vela --show-cpu-operations` printed."""

    cpu_ops: list[VelaOp] = field(default_factory=list)
    npu_ops: list[VelaOp] = field(default_factory=list)
    reasons: dict[str, list[str]] = field(default_factory=dict)  # ofm tensor name -> Vela's reasons
    warned_ops: dict[str, str] = field(default_factory=dict)  # ofm tensor name -> TFLite operator
    cpu_operator_count: int | None = None
    npu_operator_count: int | None = None
    fields: dict[str, str] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)

    @property
    def cpu_tensors(self) -> set[str]:
        return {op.tensor for op in self.cpu_ops}


def parse_vela_stdout(text: str) -> VelaPrintout:
    """Parse Vela's printout: the CPU/NPU operator lists, the reasons, the summary fields."""
    out = VelaPrintout()
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i].rstrip()
        head = _WARNING_HEAD.match(line)
        if head:
            op, ofm = head.groups()
            out.warned_ops[ofm] = op
            reasons = out.reasons.setdefault(ofm, [])
            i += 1
            while i < len(lines) and lines[i].strip() and not _WARNING_HEAD.match(lines[i]):
                text_line = lines[i].strip()
                reasons.append(text_line[len("Reason:"):].strip() if text_line.startswith("Reason:") else text_line)
                i += 1
            continue
        m = _CPU_NPU_LINE.match(line)
        if m:
            unit, kind, tensor, shape = m.groups()
            dims = [int(d) for d in shape.replace(" ", "").split(",") if d.lstrip("-").isdigit()]
            (out.cpu_ops if unit == "CPU" else out.npu_ops).append(VelaOp(unit, kind, tensor, dims))
        elif _COUNT_LINE.match(line.strip()):
            unit, count, _ = _COUNT_LINE.match(line.strip()).groups()
            if unit == "CPU":
                out.cpu_operator_count = int(count)
            else:
                out.npu_operator_count = int(count)
        elif _FIELD_LINE.match(line):
            key, value = _FIELD_LINE.match(line).groups()
            out.fields[key] = value
        elif line.startswith("Error") or "Traceback (most recent call last)" in line:
            out.errors.append(line.strip())
        i += 1
    return out


# Columns of Vela's summary CSV that the report shows, with the unit conversion to our names.
KIB = 1024


def parse_summary_csv(text: str) -> dict:
    """The figures of Vela's `<model>_summary_<system>.csv`, in edgedeploy's units.

    All of them are Vela's estimates from its performance model, not measurements.
    """
    rows = list(csv.DictReader(io.StringIO(text)))
    if not rows:
        raise ValueError("Vela's summary CSV has no data row")
    row = rows[0]

    def num(key, cast=float):
        value = row.get(key)
        if value in (None, ""):
            return None
        try:
            return cast(float(value))
        except ValueError:
            return None

    time_s = num("inference_time")
    clock = num("core_clock")
    return {
        "is_estimate": True,
        "source": "Vela summary CSV (performance model estimate, not a measurement)",
        "accelerator_configuration": row.get("accelerator_configuration"),
        "system_config": row.get("system_config"),
        "memory_mode": row.get("memory_mode"),
        "core_clock_hz": clock,
        "arena_cache_size_bytes": int(num("arena_cache_size") * KIB) if num("arena_cache_size") is not None else None,
        "batch_size": num("batch_size", int),
        "estimated_cycles_total": num("cycles_total", int),
        "estimated_cycles_npu": num("cycles_npu", int),
        "estimated_cycles_sram_access": num("cycles_sram_access", int),
        "estimated_cycles_dram_access": num("cycles_dram_access", int),
        "estimated_inference_time_us": time_s * 1e6 if time_s is not None else None,
        "estimated_inferences_per_second": num("inferences_per_second"),
        "sram_used_bytes": round(num("sram_memory_used") * KIB) if num("sram_memory_used") is not None else None,
        "dram_used_bytes": round(num("dram_memory_used") * KIB) if num("dram_memory_used") is not None else None,
        "weights_original_bytes": num("total_original_weights", int),
        "weights_npu_encoded_bytes": num("total_npu_encoded_weights", int),
        "sram_total_bytes_per_inference": num("sram_total_bytes", int),
        "dram_total_bytes_per_inference": num("dram_total_bytes", int),
        "nn_macs": num("nn_macs", int),
        "weights_storage_area": row.get("weights_storage_area"),
        "feature_map_storage_area": row.get("feature_map_storage_area"),
    }


def layer_names(tensor_name: str) -> list[str]:
    """The Keras layer names inside a TFLite tensor name (several when the converter fused ops)."""
    return _LAYER_RE.findall(tensor_name)


def _is_float_op(op: dict) -> bool:
    if op["op"] in HELPER_OPS:
        return False
    tensors = [t for t in op["inputs"] if not t.get("constant")] + op["outputs"]
    return any(t["dtype"] in FLOAT_DTYPES for t in tensors)


def _owners_of_tensor(name: str, layer_owner: dict[str, str], output_owner: dict[str, str], output_layer_owner: dict[str, str]) -> set[str]:
    found: set[str] = set()
    for part in name.split(";"):
        m = re.match(r"model(?:_\d+)?/(.*)$", part)
        if m:
            path = m.group(1)
            layer = path.split("/", 1)[0]
            if layer in layer_owner:
                found.add(layer_owner[layer])
                continue
            # onnx2tf names the layer producing a graph output after that output (which may hold '/').
            for out_name, owner in output_layer_owner.items():
                if path == out_name or path.startswith(out_name + "/"):
                    found.add(owner)
                    break
    if not found:
        # The converter names the model's outputs PartitionedCall:N (StatefulPartitionedCall:N), and
        # when the quantiser appends a QUANTIZE after the last operator, that operator's tensor
        # keeps the name with a digit appended (PartitionedCall:01).
        for tensor, owner in sorted(output_owner.items(), key=lambda kv: -len(kv[0])):
            if name == tensor or (name.startswith(tensor) and name[len(tensor):].isdigit()):
                found.add(owner)
                break
    return found


def trace_ops(ops: dict, layers_by_node: dict[str, list[str]], output_producers: list[str | None], output_names: list[str] | None = None) -> tuple[dict[int, set[str]], list[int]]:
    """For every TFLite operator, the ONNX nodes it came from; and the operators that trace to none.

    `ops`: the worker's operator list of a .tflite (ops, signatures); `layers_by_node`: ONNX node
    name -> Keras layer names; `output_producers`: for each ONNX graph output in order, the node
    producing it; `output_names`: the ONNX graph outputs' names, in the same order.
    """
    layer_owner = {layer: node for node, layers in layers_by_node.items() for layer in layers}
    output_layer_owner: dict[str, str] = {}
    for out_name, producer in zip(output_names or [], output_producers):
        if producer is not None:
            for variant in (out_name, out_name.replace(":", "__"), re.sub("^/", "wa/", out_name.replace(":", "__"))):
                output_layer_owner[variant] = producer
    output_tensor_owner: dict[str, str] = {}
    for sig in ops.get("signatures", [])[:1]:
        keys = sorted(sig["outputs"], key=lambda k: (len(k), k))
        for key, producer in zip(keys, output_producers):
            if producer is not None:
                output_tensor_owner[sig["outputs"][key]] = producer
    if not output_tensor_owner and len(ops.get("outputs", [])) == len(output_producers):
        for tensor, producer in zip(ops["outputs"], output_producers):
            if producer is not None:
                output_tensor_owner[tensor["name"]] = producer
    owners: dict[int, set[str]] = {}
    for op in ops["ops"]:
        nodes: set[str] = set()
        for tensor in op["outputs"]:
            nodes |= _owners_of_tensor(tensor["name"], layer_owner, output_tensor_owner, output_layer_owner)
        owners[op["index"]] = nodes
    # Quantiser helpers belong to the operator they wrap: DEQUANTIZE feeds it, QUANTIZE follows it.
    producer_of = {t["name"]: op["index"] for op in ops["ops"] for t in op["outputs"]}
    consumers_of: dict[str, list[int]] = {}
    for op in ops["ops"]:
        for t in op["inputs"]:
            consumers_of.setdefault(t["name"], []).append(op["index"])
    for _ in range(4):  # chains of helpers are short
        changed = False
        for op in ops["ops"]:
            if owners[op["index"]] or op["op"] not in HELPER_OPS:
                continue
            found: set[str] = set()
            if op["op"] == "DEQUANTIZE":
                for t in op["outputs"]:
                    for c in consumers_of.get(t["name"], []):
                        found |= owners[c]
            if not found:
                for t in op["inputs"]:
                    if t["name"] in producer_of:
                        found |= owners[producer_of[t["name"]]]
            if not found:
                for t in op["outputs"]:
                    for c in consumers_of.get(t["name"], []):
                        found |= owners[c]
            if found:
                owners[op["index"]] = found
                changed = True
        if not changed:
            break
    unmapped = [i for i, nodes in owners.items() if not nodes]
    return owners, unmapped


def leading_owners(op: dict, owners: set[str], layer_owner: dict[str, str]) -> set[str]:
    """The nodes an operator computes the result of: the layer named first in its output tensor's
    name (TFLite writes a fused operator's location as its own op's name, then those it absorbed);
    all its owners where that first name is no layer's (a model output's PartitionedCall:N)."""
    lead = set()
    for tensor in op["outputs"]:
        first = tensor["name"].split(";", 1)[0]
        lead |= {layer_owner[layer] for layer in _LAYER_RE.findall(first) if layer in layer_owner}
    return lead or set(owners)


def op_placement(op: dict, cpu_tensors: set[str], npu_text: str = "on the NPU", cpu_text: str = "on the CPU") -> tuple[Placement, str]:
    """Where one TFLite operator runs: Flex -> UNSUPPORTED, float -> FLOAT, Vela's CPU list -> FALLBACK."""
    if op["op"].startswith(FLEX_PREFIX):
        return Placement.UNSUPPORTED, f"{op['op'][len('CUSTOM:'):]} needs TensorFlow's Flex delegate, which the board's TFLite runtime lacks"
    if op["op"].startswith("CUSTOM:"):
        return Placement.UNSUPPORTED, f"custom operator {op['op'][len('CUSTOM:'):]} has no kernel in the board's TFLite runtime"
    on_cpu = any(t["name"] in cpu_tensors for t in op["outputs"])
    if _is_float_op(op):
        return Placement.FLOAT, f"{op['op']} computes in float (no int8 kernel){', ' + cpu_text if on_cpu else ''}"
    if on_cpu:
        return Placement.FALLBACK, f"{op['op']} {cpu_text}"
    return Placement.ACCELERATOR, f"{op['op']} {npu_text}"


def verdict_from_entry(entry: dict, token_names: dict[str, str], output_producers: list[str | None], toolchain: str, version: str) -> ToolchainVerdict:
    """Vela's verdict (i.MX 93) from one worker entry (a `verdicts` line or a build result).

    `token_names`: the node tokens the worker saw (edn<i>) -> display names;
    `output_producers`: per ONNX graph output, the display name of the node producing it.
    """
    verdict = ToolchainVerdict(toolchain=toolchain, version=version)
    if entry.get("failed"):
        verdict.failed = entry["failed"]
        return verdict
    vela = entry.get("vela") or {}
    printout = parse_vela_stdout(vela.get("stdout") or "")
    if vela.get("returncode") or not vela.get("summary_csv"):
        lines = [ln for ln in (vela.get("stdout") or "").splitlines() if ln.strip()]
        verdict.failed = f"Vela: {(printout.errors or lines[-1:] or ['no output'])[-1]}"
        return verdict
    verdict.estimates = parse_summary_csv(vela["summary_csv"])
    verdict.estimates["cpu_operators"] = printout.cpu_operator_count
    verdict.estimates["npu_operators"] = printout.npu_operator_count
    _place_nodes(verdict, entry, token_names, output_producers, printout.cpu_tensors, printout.reasons, "on the NPU", "on the CPU")
    return verdict


def vx_verdict(entry: dict, token_names: dict[str, str], output_producers: list[str | None], vx_ops, version: str) -> ToolchainVerdict:
    """The i.MX 8M Plus check: the converted int8 model's operators against the VX delegate's list.

    Not a compiler's verdict like Vela's (the delegate decides on the board at load time): it
    says what the real converter produced and whether the delegate lists each of those
    operators; an operator outside the list runs on the CPU.
    """
    verdict = ToolchainVerdict(toolchain="onnx2tf+vx-list", version=version)
    if entry.get("failed"):
        verdict.failed = entry["failed"]
        return verdict
    cpu = {t["name"] for op in entry["int8_ops"]["ops"] if op["op"] not in vx_ops for t in op["outputs"]}
    _place_nodes(verdict, entry, token_names, output_producers, cpu, {}, "in the VX delegate's list", "not in the VX delegate's list: CPU")
    return verdict


def _place_nodes(verdict: ToolchainVerdict, entry: dict, token_names, output_producers, cpu_tensors: set[str], reasons: dict, npu_text: str, cpu_text: str) -> None:
    layers_by_node: dict[str, list] = {}
    for tok, layers in entry.get("layers", {}).items():  # several tokens name one node where a workaround split it
        layers_by_node.setdefault(token_names.get(tok, tok), []).extend(layers)
    ops = entry["int8_ops"]
    owners, unmapped = trace_ops(ops, layers_by_node, output_producers, [o["name"] for o in entry.get("onnx_outputs", [])])
    layer_owner = {layer: node for node, layers in layers_by_node.items() for layer in layers}
    by_node: dict[str, list[tuple[Placement, str, bool, bool]]] = {}
    placed = {}
    leading: set[str] = set()
    for op in ops["ops"]:
        placement, detail = op_placement(op, cpu_tensors, npu_text, cpu_text)
        why = [r for t in op["outputs"] for r in reasons.get(t["name"], [])]
        if why and placement is not Placement.ACCELERATOR:
            detail += f" (Vela: {'; '.join(why[:2])})"
        placed[op["index"]] = (placement, detail)
        helper = op["op"] in HELPER_OPS
        leads = leading_owners(op, owners[op["index"]], layer_owner)
        if not helper:
            leading |= leads
        # Sorted: a set of names iterates in another order in every process (hash randomisation),
        # and the verdict's node order is written to toolchain_verdict.json.
        for node in sorted(owners[op["index"]]):
            by_node.setdefault(node, []).append((placement, detail, helper, node in leads))
    for node, found in by_node.items():
        # A node with an operator of its own is placed by its own operators: its name inside
        # another's fused name is a no-op part of it (a Squeeze) moved past (DNSMOS's SQRT).
        own = [f for f in found if not f[2] and f[3]] if node in leading else []
        main = own or [f for f in found if not f[2]] or found
        decided = worst(p for p, _, _, _ in main)
        details = [d for p, d, _, _ in main if p == decided]
        verdict.nodes[node] = NodeVerdict(decided, "; ".join(dict.fromkeys(details)))
    for index in unmapped:
        op = ops["ops"][index]
        placement, detail = placed[index]
        names = ", ".join(t["name"] for t in op["outputs"])
        verdict.unmapped.append(f"{op['op']} -> {names}: {placement.value} ({detail})")
