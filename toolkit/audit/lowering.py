"""The lowering step: the toolchain's own graph passes, which run on a model before its rules do.

A toolchain rewrites the graph before it places the nodes (constant folding, BN folding into
Conv, activation and pattern fusions, layout rewrites), so the audit must do the same to agree
with it on real models. A pass is written the way a rule is: a small documented function whose
docstring is the sentence a user reads (citing what was measured, with which toolchain version),
with its limits as named constants, declared in the target's registry with where the toolchain
applies it:

    @RULES.graph_pass("BatchNormalization", VERSION=ESP_PPQ_VERSION)
    def fold_batchnorm_into_conv(graph, chip):
        \"\"\"esp-ppq {VERSION} folds a BatchNormalization that follows a Conv into the Conv's weights.\"\"\"

`RuleSet.passes` lists one rule set's passes in the order they run. `lower` runs them on a
`LoweringGraph`: a pass reads the nodes still standing and records what the toolchain does —
`fuse` several nodes into one (GELU, SiLU, LayerNorm), `absorb` one into its neighbour (a
BatchNormalization into its Conv), `fold` what is computed at compile time (a detector's anchor
grid from the static input shape), `eliminate` what the toolchain removes (a Transpose pair, a
Dropout at inference). The rules then place the lowered graph; every original node gets the
placement of what it became, and its report says which pass did what: placements are always
shown on the original ONNX node names, a fused node listing the names it absorbed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from edgedeploy.audit.rules import computed_once, format_sentence, reads_argument, sentence_template


@dataclass(frozen=True)
class GraphPass:
    """One graph rewrite a toolchain applies before placing the nodes."""

    name: str
    ops: frozenset[str]  # the operators the rewrite starts from; empty: it looks at every node
    constants: dict[str, Any]
    apply: Callable[..., Any]
    template: str
    # For a pass that reads its chip: what of the chip it reads (e.g. an alignment per chip), so
    # chips that agree on it share one lowering. None: the chip itself.
    chip_key: Callable[[str], Any] | None = None

    @computed_once
    def sentence(self) -> str:
        """The docstring with its constants filled in: what users read in reports and docs."""
        return format_sentence(self.template, self.constants)

    @computed_once
    def reads_chip(self) -> bool:
        """Whether the pass reads its chip argument. Passes that do not make the same lowering of a
        model for every chip whose rule set lists them, so an audit of many chips lowers it once
        for those chips (edgedeploy.audit.engine.ChipIndependent.lowered)."""
        return reads_argument(self.apply, 1)


def graph_pass(*ops: str, chip_key: Callable[[str], Any] | None = None, **constants: Any) -> Callable[[Callable[..., Any]], GraphPass]:
    """Declare a graph pass on `ops`; its docstring is the sentence users read, with {NAME} from `constants`.
    `chip_key`: for a pass that reads its chip, what of the chip it reads (GraphPass.chip_key)."""

    def wrap(func: Callable[..., Any]) -> GraphPass:
        declared = GraphPass(func.__name__, frozenset(ops), dict(constants), func, sentence_template(func, "graph pass"), chip_key)
        return declared

    return wrap


# -- running the passes ----------------------------------------------------------------------

FOLDED = "folded"  # computed when the model is compiled: runs nowhere
ELIMINATED = "eliminated"  # removed by the toolchain (a layout no-op, an inference-time identity)


@dataclass
class Lowered:
    """What the passes did to one original node."""

    how: str  # "fused" | FOLDED | ELIMINATED
    by: GraphPass
    group: str | None = None  # fused: the name of the node the group became


@dataclass
class LoweringResult:
    """The graph the rules see after the toolchain's passes, and how every original node got there.

    `views`: the nodes the rules place (originals untouched by the passes, and one node per
    fused group, named after its leader), in topological order. `lowered`: original node name
    -> what happened to it. `groups`: fused node name -> the original nodes it absorbed.
    """

    views: list
    lowered: dict[str, Lowered]
    groups: dict[str, list[str]]


class LoweringGraph:
    """The graph a pass works on: the nodes still standing, and the three things a toolchain does.

    A pass reads `nodes`, `producer(tensor)` and `consumers(tensor)`, and records what the
    toolchain does with `fuse`, `absorb`, `fold` and `eliminate` (and `known_inputs`: values a
    simplifier computes before the converter sees them); it never edits a NodeView in place.
    """

    def __init__(self, views: list, start: "GraphIndex | None" = None):
        """`start`: GraphIndex(views), when the caller lowers the same views several times."""
        start = GraphIndex(views) if start is None else start
        self._order = dict(start.order)
        self._nodes: dict[str, Any] = dict(start.nodes)
        self.lowered: dict[str, Lowered] = {}
        self.groups: dict[str, list[str]] = {}
        self.current: GraphPass | None = None
        self._sorted: list | None = None
        # tensor -> the node writing it / the nodes reading it (once per input slot, in
        # topological order), kept up to date node by node: a pass asks after every change.
        # The reader lists are `start`'s until a node changes: _index and _unindex replace a
        # list, never change it in place.
        self._producer: dict[str, Any] = dict(start.producer)
        self._consumers: dict[str, list] = dict(start.consumers)
        # tensor -> the eliminated node that wrote it: its readers now read what it read.
        self._wires: dict[str, Any] = {}
        # How many times the graph has changed: a pass that leaves it as it was changed nothing
        # (LoweringSteps).
        self.changes = 0

    # What a pass changes, for LoweringSteps: every table a pass reads or writes, by value (the
    # node views in them are never edited in place, and a reader list or group list is replaced,
    # never changed in place).
    _STATE = ("_order", "_nodes", "lowered", "groups", "_sorted", "_producer", "_consumers", "_wires")

    def snapshot(self) -> tuple:
        """The graph as it stands, in copies that later changes to it leave alone."""
        return tuple(dict(t) if isinstance(t, dict) else t for t in (getattr(self, name) for name in self._STATE))

    def restore(self, snapshot: tuple) -> None:
        """Stand where `snapshot` was taken (on this model's views, maybe in another lowering)."""
        for name, table in zip(self._STATE, snapshot):
            setattr(self, name, dict(table) if isinstance(table, dict) else table)
        self.changes += 1

    # -- reading ---------------------------------------------------------------------------
    @property
    def nodes(self) -> list:
        """The nodes still standing (originals and fused nodes), in topological order."""
        if self._sorted is None:
            self._sorted = sorted(self._nodes.values(), key=lambda v: self._order[v.name])
        return list(self._sorted)

    def producer(self, tensor: str):
        return self._producer.get(tensor)

    def consumers(self, tensor: str) -> list:
        return list(self._consumers.get(tensor, ()))

    def only_consumer(self, tensor: str):
        """The one node reading `tensor`, or None when it has several (or none) or is a model output."""
        readers = self._consumers.get(tensor, ())
        producer = self._producer.get(tensor)
        if len(readers) != 1 or (producer is not None and any(o.name == tensor and o.is_model_output for o in producer.outputs)):
            return None
        return readers[0]

    # -- what the toolchain does -------------------------------------------------------------
    def fuse(self, members: list, op_type: str, *, leader=None, attributes: dict | None = None, domain: str = "", inputs: list | None = None, outputs: list | None = None):
        """Replace `members` (connected, in order) by one node of `op_type`, which the rules then place.

        The fused node keeps the leader's name (default: the first member) and, unless
        `attributes` are given, its attributes; its inputs are the members' inputs produced
        outside the group, its outputs those read outside it (or model outputs; a group nothing reads
        keeps its last member's outputs). Where the
        toolchain rewires a node (drops an optional input it finds redundant), `inputs` and
        `outputs` give them in the operator's positions (a dropped input is the empty TensorView).
        """
        import onnx

        from edgedeploy.audit.rules import NodeView

        members = sorted(members, key=lambda v: self._order[v.name])
        leader = leader or members[0]
        inside_outputs = {o.name for m in members for o in m.outputs if o.name}
        if inputs is None:
            inputs, seen = [], set()
            for m in members:
                for t in m.inputs:
                    if t.name not in inside_outputs and t.name not in seen:
                        seen.add(t.name)
                        inputs.append(t)
        names = {m.name for m in members}
        if outputs is None:
            outputs = [
                o
                for m in members
                for o in m.outputs
                if o.name and (o.is_model_output or any(c.name not in names for c in self._consumers.get(o.name, ())))
            ]
            if not outputs:
                # A dead end (nothing reads the group's results) still computes them: rules read its output.
                outputs = [o for o in members[-1].outputs if o.name]
        if attributes is None:
            proto = onnx.NodeProto()
            proto.CopyFrom(leader.proto)
            proto.op_type = op_type
            proto.domain = domain
            del proto.input[:]
            del proto.output[:]
            proto.input.extend(t.name for t in inputs)
            proto.output.extend(o.name for o in outputs)
        else:
            proto = onnx.helper.make_node(op_type, [t.name for t in inputs], [o.name for o in outputs], name=leader.name, domain=domain, **attributes)
        fused = NodeView(
            name=leader.name,
            op_type=op_type,
            domain=domain,
            index=leader.index,
            opset=leader.opset,
            inputs=tuple(inputs),
            outputs=tuple(outputs),
            proto=proto,
            ir_version=leader.ir_version,
        )
        absorbed: list[str] = []
        for m in members:
            self._unindex(self._nodes.pop(m.name))
            absorbed += self.groups.pop(m.name, [m.name])
        for name in absorbed:
            self.lowered[name] = Lowered("fused", self.current, fused.name)
        self.groups[fused.name] = absorbed
        self._nodes[fused.name] = fused
        self._order[fused.name] = self._order[leader.name]
        self._index(fused)
        return fused

    def absorb(self, node, into):
        """`node` disappears into `into` (a BatchNormalization into the Conv before it); `into` keeps its kind."""
        return self.fuse([into, node], into.op_type, leader=into)

    def known_inputs(self, node, names) -> Any:
        """The toolchain knows these inputs of `node` when it compiles (a simplifier computed them
        from constants and static shapes): the rules see them as constants. The node keeps its
        name and kind; returns its new view."""
        from dataclasses import replace

        names = set(names)
        view = replace(node, inputs=tuple(replace(t, is_constant=True) if t.name in names else t for t in node.inputs))
        self._unindex(self._nodes[node.name])
        self._nodes[node.name] = view
        self._index(view)
        return view

    def fold(self, node) -> None:
        """The toolchain computes `node` when it compiles the model: it runs nowhere."""
        self._drop(node, FOLDED)

    def eliminate(self, node) -> None:
        """The toolchain removes `node` (a layout no-op, an identity at inference): it runs nowhere."""
        for o in node.outputs:
            if o.name:
                self._wires[o.name] = node
        self._drop(node, ELIMINATED)

    def fold_what_nothing_reads(self, tensors) -> None:
        """The nodes whose results nothing reads any more once a pass removed their readers (or the
        reading input), and what they alone read, back up the graph: the toolchain's dead-node removal
        drops them, so they run nowhere. `tensors`: the inputs (TensorViews) that lost a reader."""
        stack = [t.name for t in tensors if t.present and t.name]
        while stack:
            tensor = stack.pop()
            node = self.producer(tensor)
            if node is None and self.wire(tensor) is not None and not self.consumers(tensor):
                # A node an earlier pass eliminated passes its input through: what it read is read no more either.
                stack += [t.name for t in self.wire(tensor).inputs if t.present and t.name]
                continue
            if node is None or any(o.is_model_output or (o.name and self.consumers(o.name)) for o in node.outputs):
                continue
            self.fold(node)
            stack += [t.name for t in node.inputs if t.present and t.name]

    def wire(self, tensor: str):
        """The node an earlier pass eliminated that wrote `tensor` (its input passes through), or None."""
        return self._wires.get(tensor) if tensor not in self._producer else None

    def _drop(self, node, how: str) -> None:
        self.changes += 1
        for name in self.groups.pop(node.name, [node.name]):
            self.lowered[name] = Lowered(how, self.current)
        dropped = self._nodes.pop(node.name, None)
        if dropped is not None:
            self._unindex(dropped)

    def _index(self, v) -> None:
        """Add one node to the tensor index (readers stay in topological order)."""
        self._sorted = None
        self.changes += 1
        for o in v.outputs:
            if o.name:
                self._producer[o.name] = v
        for name in {t.name for t in v.inputs if t.name}:
            # A new list: the old one may be another lowering's too (GraphIndex).
            readers = [*self._consumers.get(name, ()), *(v for t in v.inputs if t.name == name)]
            readers.sort(key=lambda r: self._order[r.name])
            self._consumers[name] = readers

    def _unindex(self, v) -> None:
        """Take one node out of the tensor index."""
        self._sorted = None
        self.changes += 1
        for o in v.outputs:
            if o.name and self._producer.get(o.name) is v:
                del self._producer[o.name]
        for name in {t.name for t in v.inputs if t.name}:
            readers = [r for r in self._consumers.get(name, ()) if r is not v]
            if readers:
                self._consumers[name] = readers
            else:
                self._consumers.pop(name, None)


class GraphIndex:
    """The tensor index of a model's node views, made once for all its lowerings: node name ->
    topological position and view, tensor -> the node writing it and the nodes reading it (once
    per input slot, in topological order). A LoweringGraph starts from copies of these tables."""

    def __init__(self, views: list):
        self.order = {v.name: i for i, v in enumerate(views)}
        self.nodes = {v.name: v for v in views}
        self.producer: dict[str, Any] = {}
        self.consumers: dict[str, list] = {}
        # The views come in topological order, so appending keeps every reader list in order
        # (what LoweringGraph._index does, without its sort per node).
        for v in views:
            for o in v.outputs:
                if o.name:
                    self.producer[o.name] = v
            for t in v.inputs:
                if t.name:
                    self.consumers.setdefault(t.name, []).append(v)


class LoweringSteps:
    """What the graph passes did in the lowerings of one model, so that a pass is run once on a
    given graph, whichever lowering gets there.

    Rule sets that do not share a lowering (RKNN's chip families list 46 to 81 passes, some
    reading their chip) still share most of their passes, and on a given model most passes
    change nothing (on DenseNet-121 none of RKNN's does; its four lowerings ran all of them,
    about 15 ms of CPU). A pass is a function of the graph it is given and, if it reads its chip
    (GraphPass.reads_chip), of the chip; so the graph a lowering stands on is named by the passes
    that changed it so far, with the chip of those that read it, starting from the model's own
    views: two lowerings that get to the same name stand on the same graph. For each (graph,
    pass, chip) met, this remembers that the pass changed nothing, or the graph it left (a
    snapshot, which another lowering takes over instead of running the pass: it then places the
    same fused node views, whose placements chips share, edgedeploy.audit.engine.ViewMemo).

    The chip itself, not the pass's chip_key: a chip_key is only compared between rule sets that
    list the same passes (LoweredViews.key_of), and may leave out what of the chip those lists
    already settle. A key that leaves something out is wrong only here: transposes_merged_into_matmul's
    key was once the value-Transpose alignment alone, while the pass also asks whether the chip is
    RK3588, RK3566 or RK3568 (SAM's and ViTMatte's attention Transposes in fresh4 and fresh5 were
    placed with RK3588's lowering on RK3576 with that key; the key now names both).
    """

    ROOT = 0  # the graph of the model's own views, before any pass

    def __init__(self):
        # (graph, id(pass), chip or None) -> (the graph after it, its snapshot or None when unchanged)
        self._after: dict[tuple, tuple[int, tuple | None]] = {}
        self._passes: dict[int, GraphPass] = {}  # keeps every pass whose id is in a key alive
        self._graphs = 0  # names given so far to graphs a pass made

    def run(self, graph: LoweringGraph, passes: list[GraphPass], chip: str) -> None:
        """Run `passes` on `graph` (at ROOT), taking over what another lowering has done already."""
        state, pending = self.ROOT, None  # pending: a snapshot to stand on before the next pass runs
        for p in passes:
            step = (state, id(p), chip if p.reads_chip else None)
            known = self._after.get(step)
            if known is not None:
                state, snapshot = known
                pending = snapshot if snapshot is not None else pending
                continue
            if pending is not None:
                graph.restore(pending)
                pending = None
            before = graph.changes
            graph.current = p
            p.apply(graph, chip)
            self._passes[id(p)] = p
            if graph.changes == before:
                self._after[step] = (state, None)
            else:
                self._graphs += 1
                state = self._graphs  # a new name: no other step has led to this graph
                self._after[step] = (state, graph.snapshot())
        if pending is not None:
            graph.restore(pending)


def lower(views: list, passes: list[GraphPass], chip: str, start: GraphIndex | None = None, steps: LoweringSteps | None = None) -> LoweringResult | None:
    """Run a rule set's graph passes, in order, on the model's node views; None when it has none.
    `start`: GraphIndex(views), and `steps`, what other lowerings of the same views did (LoweringSteps),
    when the caller lowers the same views for several rule sets."""
    if not passes:
        return None
    graph = LoweringGraph(views, start)
    if steps is None:
        for p in passes:
            graph.current = p
            p.apply(graph, chip)
    else:
        steps.run(graph, passes, chip)
    return LoweringResult(graph.nodes, graph.lowered, graph.groups)
