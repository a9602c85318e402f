"""Tracing a toolchain's layers back to the ONNX nodes they came from, by tensor names.

Toolchains simplify, fuse and rename before they report anything: esp-ppq fuses Conv+Relu into
one layer that outputs the Relu's tensor, and inserts layout transposes of its own. Tensor
names survive far better than node names, so a layer is matched to the node that produced one
of its output tensors; a node whose outputs vanished and whose every consumer went into the
same layer was fused into that layer. Layers that match no node (inserted by the toolchain)
are returned apart, so nothing the toolchain said is dropped silently.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import onnx

from edgedeploy.model.stats import node_names


@dataclass
class ToolchainLayer:
    """One layer as a toolchain reports it: its tensors, and whatever it said about the layer."""

    op_type: str
    inputs: list[str]
    outputs: list[str]
    name: str = ""
    info: dict = field(default_factory=dict)


@dataclass
class LayerMapping:
    """node display name -> (layer index, how it was matched: "output" | "name" | "fused")."""

    nodes: dict[str, tuple[int, str]]
    unmapped_layers: list[int]
    folded_nodes: list[str]  # outputs became constants of the compiled model: computed at compile time


def map_layers(graph: onnx.GraphProto, layers: list[ToolchainLayer], constants: set[str] | frozenset[str] = frozenset()) -> LayerMapping:
    """Match each node of `graph` (by its edgedeploy display name) to the toolchain layer that runs it.

    `constants`: tensor names the compiled model holds as constants (initializers); a node whose
    outputs are among them was folded at compile time and runs nowhere.
    """
    names = node_names(graph)
    by_output: dict[str, int] = {}
    by_name: dict[str, int] = {}
    for index, layer in enumerate(layers):
        for t in layer.outputs:
            by_output.setdefault(t, index)
        if layer.name:
            by_name.setdefault(layer.name, index)
    consumers: dict[str, list[int]] = {}
    for i, node in enumerate(graph.node):
        for t in node.input:
            if t:
                consumers.setdefault(t, []).append(i)
    graph_outputs = {o.name for o in graph.output}

    assigned: dict[int, tuple[int, str]] = {}
    folded: list[int] = []
    # Consumers come later in topological order, so walking backwards sees them first.
    for i in range(len(graph.node) - 1, -1, -1):
        node = graph.node[i]
        outputs = [o for o in node.output if o]
        direct = next((by_output[o] for o in outputs if o in by_output), None)
        if direct is not None:
            assigned[i] = (direct, "output")
            continue
        if node.name and node.name in by_name:
            assigned[i] = (by_name[node.name], "name")
            continue
        if outputs and all(o in constants for o in outputs):
            folded.append(i)
            continue
        users = [c for o in outputs for c in consumers.get(o, [])]
        if users and not any(o in graph_outputs for o in outputs) and all(c in assigned for c in users):
            targets = {assigned[c][0] for c in users}
            if len(targets) == 1:
                assigned[i] = (targets.pop(), "fused")
    used = {layer for layer, _ in assigned.values()}
    return LayerMapping(
        nodes={names[i]: assigned[i] for i in sorted(assigned)},
        unmapped_layers=[i for i in range(len(layers)) if i not in used],
        folded_nodes=[names[i] for i in sorted(folded)],
    )
