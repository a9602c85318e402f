"""Grouped Convs ESP-DL cannot run, written as one group-1 Conv with block-diagonal weights.

ESP-DL's Conv module (esp-dl dl/module/include/dl_module_conv.hpp, forward_args_impl and
get_output_shape) runs every Conv whose group is not 1 with its depthwise kernel: one filter and
one output channel per input channel. A grouped Conv in between (ShuffleNet v1, RegNet, ResNeXt,
DLA-X, FastViT) or a depthwise Conv with a channel multiplier therefore does not compute what the
model says on the chip, although esp-ppq exports it as an int8 layer without a word (probed with
esp-ppq 1.3.12, tests/forms_models.py GROUPED_CONV_FORMS).

`edgedeploy build` rewrites each such Conv, in the copy it hands esp-ppq, as ONE group-1 Conv of
the same name and bias whose weight [O, I, k...] is zero outside each group's block: output
channel o of group j = o // (O / g) reads only input channels j*I/g .. (j+1)*I/g - 1, with the
group's own filter there (a depthwise Conv with multiplier m is the case I/g = 1: output o reads
input o // m). It is exact in float, keeps each output channel's weight range (so its per-channel
or per-tensor int8 scale), and keeps the node's name (the audit, --confirm and diagnose map onto
it unchanged). Its cost: g times the Conv's MACs and g times its weights. The other exact form,
Split + g Convs + Concat, keeps the MACs but adds g + 2 nodes, g quantised outputs and a Concat
requantisation; the block-diagonal Conv was chosen for the one-to-one node mapping and for
leaving the quantisation of the layer as it was.

The audit (rules.py `grouped_conv_written_block_diagonal`) places these Convs as this rewrite
makes them, with the same predicate and cost (`needs_block_diagonal`, `block_diagonal_cost`).
"""

from __future__ import annotations

import math

import onnx
from onnx import numpy_helper

SOURCE = "esp-dl dl/module/include/dl_module_conv.hpp (forward_args_impl, get_output_shape); operator_support_state.md: groups only support 1 or input_channels"


def needs_block_diagonal(group: int, in_channels: int | None, out_channels: int | None) -> bool:
    """Whether ESP-DL would run this Conv wrongly: group other than 1 and not a plain depthwise
    Conv (group = input channels = output channels). Unknown channels count as not depthwise."""
    if group == 1:
        return False
    return not (in_channels is not None and group == in_channels and out_channels in (in_channels, None))


def block_diagonal_cost(group: int, weight_shape) -> dict:
    """What writing the Conv as a group-1 Conv costs: MACs times `group`, and the added weights
    (zeros outside the blocks), in values; bytes are these at 1 (int8) or 2 (int16) bytes a weight."""
    count = math.prod(int(d) for d in weight_shape)
    return {"macs_factor": group, "weights_before": count, "weights_after": count * group, "added_weights": count * (group - 1)}


def block_diagonal(weight, group: int):
    """[O, I/g, k...] grouped weights -> [O, I, k...] group-1 weights, zero outside each group's block."""
    import numpy as np

    out_channels, per_group = weight.shape[0], weight.shape[1]
    full = np.zeros((out_channels, per_group * group, *weight.shape[2:]), dtype=weight.dtype)
    per_out = out_channels // group
    for j in range(group):
        full[j * per_out:(j + 1) * per_out, j * per_group:(j + 1) * per_group] = weight[j * per_out:(j + 1) * per_out]
    return full


def rewrite_grouped_convs(proto: onnx.ModelProto) -> list[dict]:
    """Rewrite, in place, every Conv of `proto` ESP-DL cannot run as a block-diagonal group-1 Conv;
    one record per rewritten node (name, group, channels, cost). A Conv whose weights are not
    computable from constants cannot be rewritten and is left (the audit calls it unsupported)."""
    graph = proto.graph
    convs = [n for n in graph.node if n.op_type == "Conv" and _group(n) != 1]
    if not convs:
        return []
    values = _ConstantWeights(proto)
    done = []
    for node in convs:
        weight = values.get(node.input[1]) if len(node.input) > 1 else None
        if weight is None or weight.ndim < 3:
            continue
        group, out_channels, in_channels = _group(node), weight.shape[0], weight.shape[1] * _group(node)
        if not needs_block_diagonal(group, in_channels, out_channels):
            continue
        name = _fresh_name(graph, f"{node.input[1]}__block_diagonal_{len(done)}")
        full = numpy_helper.from_array(block_diagonal(weight, group), name)
        graph.initializer.append(full)
        if proto.ir_version < 4:  # before IR 4 every initializer is also a graph input
            graph.input.append(onnx.helper.make_tensor_value_info(name, full.data_type, list(full.dims)))
        old, node.input[1] = node.input[1], name
        _drop_if_unread(graph, old)
        for attribute in node.attribute:
            if attribute.name == "group":
                attribute.i = 1
        done.append({"node": node.name, "group": group, "input_channels": in_channels, "output_channels": out_channels, **block_diagonal_cost(group, weight.shape)})
    return done


def workaround_record(rewritten: list[dict]) -> list[dict]:
    """The build report's workaround entry for the rewritten Convs (none: nothing to say)."""
    if not rewritten:
        return []
    return [
        {
            "name": f"{len(rewritten)} grouped Conv(s) written as group-1 Convs with block-diagonal weights",
            "why": "ESP-DL runs only group 1 or depthwise Convs (any other group runs its depthwise kernel, computing something else); the block-diagonal Conv is exact in float",
            "source": SOURCE,
            "nodes": [r["node"] for r in rewritten[:20]],
            "per_node": [
                f"{r['node']}: group-{r['group']} Conv ({r['input_channels']} -> {r['output_channels']} channels) as a group-1 Conv: "
                f"{r['macs_factor']}x its MACs, +{r['added_weights']} weights (+{r['added_weights']} bytes at int8)"
                for r in rewritten
            ],
        }
    ]


def _drop_if_unread(graph: onnx.GraphProto, name: str) -> None:
    """Remove the grouped weights' initializer (and its graph-input entry, IR < 4) once nothing reads it."""
    if any(name in n.input for n in graph.node) or any(o.name == name for o in graph.output):
        return
    for field in (graph.initializer, graph.input):
        for i in [i for i, t in enumerate(field) if t.name == name][::-1]:
            del field[i]


def _group(node: onnx.NodeProto) -> int:
    return next((int(a.i) for a in node.attribute if a.name == "group"), 1)


def _fresh_name(graph: onnx.GraphProto, base: str) -> str:
    taken = {i.name for i in graph.initializer} | {o for n in graph.node for o in n.output} | {i.name for i in graph.input}
    name, k = base, 0
    while name in taken:
        k += 1
        name = f"{base}_{k}"
    return name


class _ConstantWeights:
    """A tensor's value when it follows from constants alone: an initializer, a Constant, or what
    a constant subgraph (the onnx zoo's ConstantOfShape weights) computes, evaluated with ONNX's
    reference evaluator on that subgraph only."""

    def __init__(self, proto: onnx.ModelProto):
        self.proto = proto
        self.initializers = {i.name: i for i in proto.graph.initializer}
        self.producers = {o: n for n in proto.graph.node for o in n.output}
        initialised = set(self.initializers)
        self.runtime_inputs = {i.name for i in proto.graph.input if i.name not in initialised}

    def get(self, name: str):
        if name in self.initializers:
            return numpy_helper.to_array(self.initializers[name])
        nodes = self._constant_ancestors(name)
        if nodes is None:
            return None
        from onnx.reference import ReferenceEvaluator

        sub = onnx.helper.make_graph(nodes, "weights", [], [onnx.helper.make_empty_tensor_value_info(name)], list(self._used_initializers(nodes)))
        model = onnx.helper.make_model(sub, opset_imports=list(self.proto.opset_import), ir_version=max(self.proto.ir_version, 4))
        return ReferenceEvaluator(model).run(None, {})[0]

    def _constant_ancestors(self, name: str) -> list | None:
        """The nodes computing `name` from initializers alone, in graph order; None if a run-time input feeds it."""
        seen, stack, found = set(), [name], {}
        while stack:
            tensor = stack.pop()
            if tensor in seen or tensor in self.initializers or not tensor:
                continue
            seen.add(tensor)
            node = self.producers.get(tensor)
            if node is None or tensor in self.runtime_inputs:
                return None
            found[id(node)] = node
            stack.extend(node.input)
        order = {id(n): i for i, n in enumerate(self.proto.graph.node)}
        return sorted(found.values(), key=lambda n: order[id(n)])

    def _used_initializers(self, nodes):
        used = {t for n in nodes for t in n.input}
        return (self.initializers[t] for t in used if t in self.initializers)
