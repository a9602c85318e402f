"""A small editable view of an ONNX graph for rewrite passes.

Passes find patterns through `GraphIndex` (who produces and who consumes each tensor, which
tensors are constants), replace nodes in place, and finish with `cleanup()`, which drops
nodes and initializers nothing uses any more and puts the nodes back in topological order.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import helper, numpy_helper


@dataclass
class Change:
    """One application of a pass: the original nodes it replaced and the nodes it created."""

    rewrite: str
    replaced: list[str]
    created: list[str]
    note: str = ""

    def to_dict(self) -> dict:
        return {"rewrite": self.rewrite, "replaced": self.replaced, "created": self.created, "note": self.note}


class GraphIndex:
    """Producers, consumers and constants of a graph; rebuilt after each structural edit."""

    def __init__(self, model: onnx.ModelProto):
        self.model = model
        self.graph = model.graph
        self.refresh()
        self._names = itertools.count()

    def refresh(self) -> None:
        self.producer: dict[str, onnx.NodeProto] = {}
        self.consumers: dict[str, list[onnx.NodeProto]] = {}
        for node in self.graph.node:
            for o in node.output:
                if o:
                    self.producer[o] = node
            for i in dict.fromkeys(node.input):  # a node reading a tensor twice is one consumer
                if i:
                    self.consumers.setdefault(i, []).append(node)
        self.initializers = {t.name: t for t in self.graph.initializer}
        self.outputs = {o.name for o in self.graph.output}

    def live_nodes(self, op_type: str):
        """The graph's `op_type` nodes in order, over a snapshot taken now, skipping any that an
        earlier rewrite of the same pass has removed meanwhile (a pass edits while it iterates)."""
        for node in list(self.graph.node):
            if node.op_type == op_type and node in self.graph.node:
                yield node

    def chains(self, op_type: str, consumer_type: str):
        """(node, consumer) for each live `op_type` node whose first output feeds a single node, of
        `consumer_type` (the pattern most fusions start from)."""
        for node in self.live_nodes(op_type):
            consumer = self.single_consumer(node.output[0])
            if consumer is not None and consumer.op_type == consumer_type:
                yield node, consumer

    def const(self, name: str) -> np.ndarray | None:
        """The value of an initializer or a Constant node's output, else None."""
        if name in self.initializers:
            return numpy_helper.to_array(self.initializers[name])
        node = self.producer.get(name)
        if node is not None and node.op_type == "Constant":
            for a in node.attribute:
                if a.name == "value":
                    return numpy_helper.to_array(a.t)
                if a.name == "value_float":
                    return np.array(a.f, dtype=np.float32)
                if a.name == "value_floats":
                    return np.array(list(a.floats), dtype=np.float32)
                if a.name == "value_int":
                    return np.array(a.i, dtype=np.int64)
                if a.name == "value_ints":
                    return np.array(list(a.ints), dtype=np.int64)
        return None

    def scalar(self, name: str) -> float | None:
        value = self.const(name)
        if value is None or value.size != 1:
            return None
        return float(value.reshape(-1)[0])

    def single_consumer(self, name: str) -> onnx.NodeProto | None:
        """The only node reading `name`, if it is not also a graph output."""
        users = self.consumers.get(name, [])
        if len(users) != 1 or name in self.outputs:
            return None
        return users[0]

    def other_input(self, node: onnx.NodeProto, name: str) -> str | None:
        """For a binary node, the input that is not `name`."""
        if len(node.input) != 2:
            return None
        if node.input[0] == name:
            return node.input[1]
        if node.input[1] == name:
            return node.input[0]
        return None

    def fresh(self, base: str) -> str:
        """A tensor or node name not used anywhere in the graph."""
        used = set(self.producer) | set(self.consumers) | set(self.initializers) | {n.name for n in self.graph.node}
        while True:
            name = f"{base}__edgedeploy{next(self._names)}"
            if name not in used:
                return name

    def add_initializer(self, base: str, value: np.ndarray) -> str:
        name = self.fresh(base)
        self.graph.initializer.append(numpy_helper.from_array(np.asarray(value), name))
        self.initializers[name] = self.graph.initializer[-1]
        return name

    def replace(self, old: list[onnx.NodeProto], new: list[onnx.NodeProto]) -> None:
        """Put `new` where the first of `old` was, and remove `old`.

        Nodes are matched by their outputs, not by object identity: protobuf copies messages
        when the node list is rebuilt, so a pass may hold an older copy of a node.
        """
        nodes = list(self.graph.node)
        keys = {tuple(n.output) for n in old}
        position = min(i for i, n in enumerate(nodes) if tuple(n.output) in keys)
        kept = [n for n in nodes if tuple(n.output) not in keys]
        insert_at = sum(1 for n in nodes[:position] if tuple(n.output) not in keys)
        kept[insert_at:insert_at] = new
        del self.graph.node[:]
        self.graph.node.extend(kept)
        self.refresh()


def node_label(node: onnx.NodeProto, index: int | None = None) -> str:
    return node.name or (f"{node.op_type}_{index}" if index is not None else node.op_type)


def make_node(index: GraphIndex, op: str, inputs: list[str], outputs: list[str], base: str, **attrs) -> onnx.NodeProto:
    return helper.make_node(op, inputs, outputs, name=index.fresh(base), **attrs)


def cleanup(model: onnx.ModelProto) -> None:
    """Remove dead nodes and unused initializers, then sort the nodes topologically."""
    graph = model.graph
    needed = {o.name for o in graph.output}
    live: list[onnx.NodeProto] = []
    for node in reversed(list(graph.node)):
        if any(o in needed for o in node.output):
            live.append(node)
            needed.update(i for i in node.input if i)
    live.reverse()
    available = {i.name for i in graph.input} | {t.name for t in graph.initializer} | {""}
    ordered: list[onnx.NodeProto] = []
    pending = live
    while pending:
        progress = []
        rest = []
        for node in pending:
            (progress if all(i in available for i in node.input) else rest).append(node)
        if not progress:  # a cycle or a missing input: keep the original order rather than lose nodes
            ordered.extend(rest)
            break
        for node in progress:
            available.update(node.output)
        ordered.extend(progress)
        pending = rest
    del graph.node[:]
    graph.node.extend(ordered)
    used = {i for n in graph.node for i in n.input} | {o.name for o in graph.output}
    kept = [t for t in graph.initializer if t.name in used]
    del graph.initializer[:]
    graph.initializer.extend(kept)
    # Value infos of tensors that no longer exist would mislead shape inference.
    produced = {o for n in graph.node for o in n.output} | {i.name for i in graph.input}
    infos = [vi for vi in graph.value_info if vi.name in produced]
    del graph.value_info[:]
    graph.value_info.extend(infos)


def opset_of(model: onnx.ModelProto) -> int:
    for imp in model.opset_import:
        if imp.domain in ("", "ai.onnx"):
            return imp.version
    return 0
