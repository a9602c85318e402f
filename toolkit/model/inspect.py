"""The report of `edgedeploy inspect`: what a model is, in figures."""

from __future__ import annotations

import onnx

from edgedeploy.model.intake import LoadedModel
from edgedeploy.model.shapes import dims_of, dynamic_axes
from edgedeploy.model.stats import MAC_OPS, dtype_name, node_macs, node_names, op_histogram, parameter_stats

INSPECT_SCHEMA = "edgedeploy.inspect/1"


def _tensor_entry(vi: onnx.ValueInfoProto) -> dict:
    dims = dims_of(vi)
    return {
        "name": vi.name,
        "dtype": dtype_name(vi.type.tensor_type.elem_type) if vi.type.HasField("tensor_type") else "non-tensor",
        "shape": list(dims) if dims is not None else None,
        "dynamic_axes": dynamic_axes(vi),
    }


def inspect_report(model: LoadedModel) -> dict:
    """Everything `inspect` shows, as JSON-ready data.

    When only batch dimensions are dynamic, MACs are counted at batch 1 and say so
    (`macs.assumed_input_shapes`); other dynamic dimensions leave MACs unknown until pinned.
    """
    from edgedeploy.model.intake import with_batch_pinned

    graph = model.graph
    names = node_names(graph)
    per_node = []
    unknown = []
    total = 0
    counted = model
    assumed: dict = {}
    if any(dynamic_axes(vi) for vi in model.graph_inputs()):
        pinned_copy = with_batch_pinned(model)
        if pinned_copy is not None:
            counted = pinned_copy
            assumed = {k: list(v) for k, v in pinned_copy.auto_pinned.items()}
    for name, node in zip(names, counted.graph.node):
        if node.op_type not in MAC_OPS:
            continue
        macs = node_macs(counted, node)
        if macs is None:
            unknown.append(name)
        else:
            total += macs
        per_node.append({"node": name, "op_type": node.op_type, "macs": macs})
    params = parameter_stats(graph)
    return {
        "schema": INSPECT_SCHEMA,
        "model": {
            "path": str(model.path),
            "sha256": model.sha256,
            "size_bytes": model.size_bytes,
            "ir_version": model.proto.ir_version,
            "opsets": {(imp.domain or "ai.onnx"): imp.version for imp in model.proto.opset_import},
            "producer": " ".join(p for p in (model.proto.producer_name, model.proto.producer_version) if p),
        },
        "inputs": [_tensor_entry(vi) for vi in model.graph_inputs()],
        "outputs": [_tensor_entry(vi) for vi in model.graph_outputs()],
        "pinned_input_shapes": {k: list(v) for k, v in {**model.auto_pinned, **model.pinned}.items()},
        "node_count": len(graph.node),
        "op_histogram": op_histogram(graph),
        "parameters": {"count": params.count, "size_bytes": params.size_bytes},
        "macs": {
            "total": total if not unknown else None,
            "known_total": total,
            "complete": not unknown,
            "assumed_input_shapes": assumed,
            "per_node": per_node,
            "unknown_nodes": unknown,
        },
    }
