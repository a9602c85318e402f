"""Reading rknn-toolkit2's accuracy_analysis report (error_analysis.txt) per ONNX node.

accuracy_analysis runs one input through the float model ("golden") and the quantised simulator
and writes, per layer output tensor, the cosine similarity and Euclidean distance of the two:
`entire` (errors accumulated from the input on) and `single` (this layer alone, fed the golden
input). Rows name output tensors, which descend from ONNX tensor names (with suffixes such as
`_mm`, `-rs`, `_int8`); a row without figures was fused with the next one.

Pure Python: the core imports it.
"""

from __future__ import annotations

import re

import onnx

from edgedeploy.model.stats import node_names

_ROW = re.compile(
    r"^\[(?P<op>[^\]]+)\]\s+(?P<tensor>\S+)"
    r"(?:\s+(?P<ecos>-?[\d.]+|nan|inf)\s*\|\s*(?P<eeuc>-?[\d.]+(?:e[-+]?\d+)?|nan|inf)"
    r"\s+(?P<scos>-?[\d.]+|nan|inf)\s*\|\s*(?P<seuc>-?[\d.]+(?:e[-+]?\d+)?|nan|inf))?\s*$"
)


def _number(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        return float(text)
    except ValueError:
        return None


def parse_error_analysis(text: str) -> list[dict]:
    """Rows of error_analysis.txt: op, tensor, entire/single cosine and Euclidean distance (None when fused)."""
    rows = []
    for line in text.splitlines():
        m = _ROW.match(line.strip())
        if m is None:
            continue
        rows.append(
            {
                "op_type": m["op"],
                "tensor": m["tensor"],
                "entire_cosine": _number(m["ecos"]),
                "entire_euclidean": _number(m["eeuc"]),
                "single_cosine": _number(m["scos"]),
                "single_euclidean": _number(m["seuc"]),
            }
        )
    return rows


def _producer_index(graph: onnx.GraphProto) -> tuple[dict[str, str], set[str]]:
    producer = {}
    for disp, node in zip(node_names(graph), graph.node):
        for out in node.output:
            if out:
                producer[out] = disp
    return producer, {i.name for i in graph.input}


def conv_inputs(graph: onnx.GraphProto) -> dict[str, str]:
    """Tensor -> the Conv that alone reads it (display name): whose decomposition the toolkit names after that input."""
    readers: dict[str, list[tuple[str, onnx.NodeProto]]] = {}
    for disp, node in zip(node_names(graph), graph.node):
        for tensor in node.input[:1]:
            readers.setdefault(tensor, []).append((disp, node))
    return {t: r[0][0] for t, r in readers.items() if len(r) == 1 and r[0][1].op_type == "Conv"}


def _node_for_tensor(tensor: str, producer: dict[str, str], inputs: set[str], convs: dict[str, str] | None = None) -> str | None:
    """The ONNX node whose output the toolkit's tensor descends from (longest known prefix).

    rknn-toolkit2 2.5.0 splits a Conv with a long kernel (silero_vad_16k's STFT, 256 taps) into
    slices of its input, convolutions of each and Adds, and names those layers after the Conv's
    INPUT ('<input>_slice#3_rs_conv_conv', '<input>_slice_conv_add-rs'): such a name (a slice or a
    conv after the prefix) belongs to the Conv that reads the prefix (`convs`, conv_inputs), not to
    the node that wrote it (the Unsqueeze before the STFT, where the diagnosis put the STFT's error)."""
    if tensor in producer:
        return producer[tensor]
    for cut in range(len(tensor) - 1, 0, -1):
        if tensor[cut] in "#_-" and tensor[:cut] in (convs or {}) and ("_slice" in tensor[cut:] or "_conv" in tensor[cut:]):
            return convs[tensor[:cut]]
        if tensor[cut] in "#_-" and tensor[:cut] in producer:
            return producer[tensor[:cut]]
        if tensor[cut] in "#_-" and tensor[:cut] in inputs:
            return None
    return None


def per_node_errors(rows: list[dict], graph: onnx.GraphProto) -> dict:
    """The analysis keyed by ONNX node name: the figures of the last toolkit row each node became.

    Returns {"nodes": {node: {...figures, "tensor", "op_type"}}, "unmapped": [rows of model
    inputs and conversions], "fused": [tensors whose row had no figures]}.
    """
    producer, inputs = _producer_index(graph)
    convs = conv_inputs(graph)
    nodes: dict[str, dict] = {}
    unmapped = []
    fused = []
    pending: list[str] = []  # nodes whose row had no figures: fused with the next row's layer
    figures = ("entire_cosine", "entire_euclidean", "single_cosine", "single_euclidean")
    for row in rows:
        node = _node_for_tensor(row["tensor"], producer, inputs, convs)
        if row["entire_cosine"] is None:
            fused.append(row["tensor"])
            if node is not None:
                pending.append(node)
            continue
        if node is None:
            unmapped.append(row)
            pending = []
            continue
        nodes[node] = {"tensor": row["tensor"], "op_type": row["op_type"], **{k: row[k] for k in figures}}
        for earlier in pending:
            if earlier not in nodes:
                nodes[earlier] = {"tensor": row["tensor"], "op_type": row["op_type"], "fused_with": node, **{k: row[k] for k in figures}}
        pending = []
    single = [(v["single_cosine"], k) for k, v in nodes.items() if v["single_cosine"] is not None]
    worst = min(single) if single else None
    return {
        "nodes": nodes,
        "unmapped": unmapped,
        "fused": fused,
        "worst_single_cosine": {"node": worst[1], "cosine": worst[0]} if worst else None,
    }
