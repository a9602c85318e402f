"""Reading what rknn-toolkit2 prints during a verbose build, and turning it into a verdict.

With `RKNN(verbose=True)` the toolkit prints, among much else:

- the Python graph optimiser's rewrites, one per line, e.g.
  `D     convert_gemm_by_exmatmul: remove node = ['fc'], add node = ['fc#1', 'fc_mm_tp', ...]`
- from the C compiler (librknnc), the "Network Layer Information Table": one row per layer of the
  compiled graph with its OpType, DataType, Target (NPU or CPU), shapes, the compiler's cycle
  estimate (DDR/NPU/Total) and RW(KB), and FullName `OpType:layer name`
- `Total Internal Memory Size` and `Total Weight Memory Size`.

Layer names descend from ONNX node names (or, for unnamed nodes, their first output's name)
through the rewrites, with suffixes such as `#2`, `_rs`, `-rs`, `_tp`, `_mm`, `__cvt_...`. This
module follows the rewrites (lineage) and, where a layer's name has none, the longest ONNX node or
tensor name it starts with, so every layer is traced back to the ONNX nodes it came from.

Pure Python (no vendor SDK): the core imports it; the worker only saves the text.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

import onnx

from edgedeploy.audit.confirm import NodeVerdict, ToolchainVerdict
from edgedeploy.audit.rules import Placement
from edgedeploy.model.intake import iter_graphs
from edgedeploy.model.stats import node_names
from edgedeploy.records import record_fields

TOOLCHAIN_NAME = "rknn-toolkit2"
ESTIMATE_LABEL = "rknn-toolkit2 compiler estimates (Cycles and RW(KB) columns of its layer table), not measurements"

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_C_PREFIX = re.compile(r"^[A-Z] RKNN: \[[^\]]*\] ?")
_ROW = re.compile(
    r"^(?P<id>\d+)\s+(?P<op>\S+)\s+(?P<dtype>\S+)\s+(?P<target>[A-Z]+)\s+(?P<inputs>\S+)\s+(?P<output>\S+)\s+"
    r"(?P<ddr>\d+)/(?P<npu>\d+)/(?P<total>\d+)\s+(?:(?P<sparse>\d+(?:\.\d+)?%)\s+)?(?P<rw>\S+)(?:\s+(?P<full>.*?))?\s*$"
)
_REWRITE = re.compile(r"^D\s{3,}(?P<pass>[A-Za-z0-9_]+): remove node = (?P<removed>\[.*?\])(?:, add node = (?P<added>\[.*\]))?\s*$")
_MEMORY = re.compile(r"Total (?P<kind>Internal|Weight) Memory Size: (?P<kb>[0-9.]+)\s*KB")
# The optimiser's constant folding, at the top level and inside fuse_ops: the nodes it computed.
_FOLDED = re.compile(r"^D\s+fold_constant remove nodes = (?P<removed>\[.*\])\s*$")

# Layers the compiler adds to move data between layouts and types. They follow the operator
# they serve wherever the runtime finds convenient (the same Reshape lands on the NPU on one
# chip and on the CPU on another), so an operator's placement is decided by its other layers.
GLUE_OP_TYPES = frozenset({"Reshape", "Transpose", "exDataConvert", "DataConvert", "Cast", "ReshapeTranspose", "TransposeReshape"})
BOUNDARY_OP_TYPES = frozenset({"InputOperator", "OutputOperator"})
FLOAT_DTYPES = frozenset({"FLOAT16", "FLOAT", "FLOAT32", "BFLOAT16"})
# Operators whose output is known at conversion time once input shapes are pinned.
CONVERSION_TIME_OPS = frozenset({"Constant", "Shape", "Size", "ConstantOfShape", "EyeLike"})
# Passes named fuse_<x>_into_<kind> merge a node into a neighbour of that kind (ONNX op types).
FUSION_TARGETS = {
    "conv": frozenset({"Conv", "ConvTranspose", "Gemm", "MatMul"}),
    "matmul": frozenset({"MatMul", "Gemm"}),
    "exmatmul": frozenset({"MatMul", "Gemm"}),
    "gemm": frozenset({"Gemm", "MatMul"}),
}
# Passes that delete a node pair that cancels (Transpose then its inverse, Reshape then its
# inverse) without adding anything in its place: the nodes run nowhere.
CANCELLING_PASS_PREFIX = "bypass_two_"
# The toolkit names a node it converted to another operator `<name>_2<kind>` (Flatten_2rs).
_CONVERTED = re.compile(r"_2[a-z]+$")
# How far (in ONNX nodes) a fused node looks for a neighbour the table placed.
FUSED_SEARCH_DEPTH = 4


@dataclass(frozen=True)
class Layer:
    """One row of the Network Layer Information Table."""

    id: int
    op_type: str
    dtype: str
    target: str
    input_shapes: str
    output_shape: str
    cycles_ddr: int
    cycles_npu: int
    cycles_total: int
    rw_kb: str
    full_name: str
    sparse_ratio: str | None = None

    @property
    def name(self) -> str:
        """The layer name without its `OpType:` prefix (layer names may themselves contain ':')."""
        head, sep, rest = self.full_name.partition(":")
        return rest if sep and head and " " not in head else self.full_name

    def to_dict(self) -> dict:
        return record_fields(
            self, "id", "op_type", "dtype", "target", "input_shapes", "output_shape",
            "cycles_ddr", "cycles_npu", "cycles_total", "rw_kb", "sparse_ratio", "name",
        )


@dataclass(frozen=True)
class Rewrite:
    """One line of the graph optimiser's log: a pass removed some nodes and added others."""

    pass_name: str
    removed: tuple[str, ...]
    added: tuple[str, ...]


def clean_lines(text: str) -> list[str]:
    """The output's lines without colour codes and without the C logger's `D RKNN: [time] ` prefix."""
    return [_C_PREFIX.sub("", _ANSI.sub("", line)).rstrip() for line in text.splitlines()]


def parse_layer_table(text: str) -> list[Layer]:
    """The rows of the last Network Layer Information Table in `text` ([] when there is none)."""
    lines = clean_lines(text)
    starts = [i for i, line in enumerate(lines) if "Network Layer Information Table" in line]
    if not starts:
        return []
    layers: list[Layer] = []
    in_rows = False
    for line in lines[starts[-1] + 1 :]:
        stripped = line.strip()
        if stripped.startswith("ID ") and "OpType" in stripped:
            in_rows = True
            continue
        if not in_rows or set(stripped) <= {"-", "+", " "}:
            if in_rows and layers and set(stripped) <= {"-", "+"} and stripped:
                break  # the closing rule
            continue
        m = _ROW.match(stripped)
        if m is None:
            if layers:
                break
            continue
        layers.append(
            Layer(
                id=int(m["id"]),
                op_type=m["op"],
                dtype=m["dtype"],
                target=m["target"],
                input_shapes=m["inputs"],
                output_shape=m["output"],
                cycles_ddr=int(m["ddr"]),
                cycles_npu=int(m["npu"]),
                cycles_total=int(m["total"]),
                rw_kb=m["rw"],
                full_name=m["full"] or "",
                sparse_ratio=m["sparse"],
            )
        )
    return layers


def parse_rewrites(text: str) -> list[Rewrite]:
    """The optimiser's remove/add lines, in order."""
    rewrites = []
    for line in clean_lines(text):
        m = _REWRITE.match(line)
        if m is None:
            continue
        try:
            removed = tuple(str(x) for x in ast.literal_eval(m["removed"]))
            added = tuple(str(x) for x in ast.literal_eval(m["added"])) if m["added"] else ()
        except (ValueError, SyntaxError):
            continue
        rewrites.append(Rewrite(m["pass"], removed, added))
    return rewrites


def parse_folded(text: str) -> set[str]:
    """The node names the optimiser's fold_constant passes removed (computed at conversion time)."""
    names: set[str] = set()
    for line in clean_lines(text):
        m = _FOLDED.match(line)
        if m is None:
            continue
        try:
            names.update(str(x) for x in ast.literal_eval(m["removed"]))
        except (ValueError, SyntaxError):
            continue
    return names


def parse_memory_kb(text: str) -> dict:
    """`internal_memory_kb` and `weight_memory_kb` from the compiler's totals (absent keys when not printed)."""
    found = {}
    for m in _MEMORY.finditer(_ANSI.sub("", text)):
        found[f"{m['kind'].lower()}_memory_kb"] = float(m["kb"])
    return found


class _NameIndex:
    """Maps toolkit layer names back to the display names of ONNX nodes (model.stats.node_names)."""

    def __init__(self, graph: onnx.GraphProto):
        self.display = node_names(graph)
        self.origins: dict[str, frozenset[str]] = {}
        self.tensor_producer: dict[str, str] = {}
        self.consumers: dict[str, list[int]] = {}
        self.graph = graph
        for disp, node in zip(self.display, graph.node):
            # The toolkit names an unnamed node after its first output.
            key = node.name or (node.output[0] if node.output else disp)
            self.origins.setdefault(key, frozenset())
            self.origins[key] = self.origins[key] | {disp}
            for out in node.output:
                if out:
                    self.tensor_producer[out] = disp
        for index, node in enumerate(graph.node):
            for inp in node.input:
                self.consumers.setdefault(inp, []).append(index)
        self.graph_inputs = {i.name for i in graph.input}
        self.absorbed_by: dict[str, str] = {}
        # The toolkit's own name of each node (as `key` above), to tell a pass deleting the node
        # itself from one deleting glue named after the node's output tensor.
        self.node_keys = {(node.name or (node.output[0] if node.output else disp)): disp for disp, node in zip(self.display, graph.node)}
        # Nodes a cancelling pass deleted, by their own name or a conversion of it (`<name>_2rs`).
        self.cancelled: set[str] = set()

    def guess(self, name: str) -> frozenset[str]:
        """Origins of a name by the longest known node/tensor name it starts with (then '#', '_' or '-')."""
        if name in self.origins:
            return self.origins[name]
        if name in self.tensor_producer:
            return frozenset({self.tensor_producer[name]})
        for cut in range(len(name) - 1, 0, -1):
            if name[cut] not in "#_-":
                continue
            head = name[:cut]
            if head in self.origins:
                return self.origins[head]
            if head in self.tensor_producer:
                return frozenset({self.tensor_producer[head]})
            if head in self.graph_inputs:
                # Layout glue on a model input serves the nodes that read it.
                return frozenset(self.display[j] for j in self.consumers.get(head, []))
        return frozenset()

    def apply(self, rewrites: list[Rewrite]) -> None:
        for rw in rewrites:
            source: frozenset[str] = frozenset()
            for r in rw.removed:
                source = source | self.guess(r)
            for a in rw.added:
                if a in rw.removed:
                    # A pass that re-adds a node under its own name (e.g. swapping two nodes)
                    # keeps that node's identity rather than merging it with the others.
                    self.origins[a] = self.guess(a)
                else:
                    self.origins[a] = source if source else self.guess(a)
            if not rw.added:
                for r in rw.removed:
                    for disp in self.guess(r):
                        self.absorbed_by.setdefault(disp, rw.pass_name)
                    if rw.pass_name.startswith(CANCELLING_PASS_PREFIX):
                        own = _CONVERTED.sub("", r)
                        if own in self.node_keys:
                            self.cancelled.add(self.node_keys[own])


def _describe(layer: Layer) -> str:
    return f"layer {layer.id} {layer.op_type} {layer.dtype} on {layer.target}"


def _placement_of(layers: list[Layer], quantized: bool) -> tuple[Placement, str]:
    """Where an ONNX node runs, from the layers it became, and a short account of why."""
    compute = [l for l in layers if l.op_type not in GLUE_OP_TYPES]
    primary = compute or layers
    on_npu = [l for l in primary if l.target == "NPU"]
    elsewhere = [l for l in primary if l.target != "NPU"]
    parts = "; ".join(_describe(l) for l in primary)
    glue = [l for l in layers if l not in primary]
    if glue:
        parts += "; layout glue: " + ", ".join(f"{l.op_type} on {l.target}" for l in glue)
    if elsewhere:
        return Placement.FALLBACK, ("partly on the CPU: " if on_npu else "") + parts
    if quantized and any(l.dtype in FLOAT_DTYPES for l in on_npu):
        return Placement.FLOAT, parts
    return Placement.ACCELERATOR, parts


def verdict_from_output(
    text: str,
    graph: onnx.GraphProto,
    quantized: bool,
    version: str,
    error: str | None = None,
) -> ToolchainVerdict:
    """The toolkit's own placement of every ONNX node of `graph`, from its verbose build output.

    `quantized`: the build was int8 (then an NPU layer computing in FLOAT16 is "kept in float").
    `error`: the build failed with this message (the verdict is then a failure of the whole model).
    Nodes with no layer of their own were fused into a neighbour by the toolkit and take the
    neighbour's placement; nodes whose inputs are all constants were folded at conversion time.
    """
    verdict = ToolchainVerdict(toolchain=TOOLCHAIN_NAME, version=version)
    layers = parse_layer_table(text)
    if error is not None or not layers:
        verdict.failed = error or "the toolkit printed no layer table"
        return verdict
    index = _NameIndex(graph)
    index.apply(parse_rewrites(text))

    by_node: dict[str, list[Layer]] = {}
    layer_nodes: dict[int, list[str]] = {}
    for layer in layers:
        if layer.op_type in BOUNDARY_OP_TYPES:
            continue
        if not layer.full_name:
            # Layers the compiler adds without a name, e.g. the convolution that applies the
            # input's mean/std on a 4-D model input.
            verdict.unmapped.append(f"(unnamed) layer {layer.id} {layer.op_type} on {layer.target}")
            continue
        origins = sorted(index.origins.get(layer.name) or index.guess(layer.name))
        layer_nodes[layer.id] = origins
        if not origins:
            verdict.unmapped.append(f"{layer.full_name} ({layer.op_type} on {layer.target})")
        for disp in origins:
            by_node.setdefault(disp, []).append(layer)

    for disp, node_layers in by_node.items():
        placement, detail = _placement_of(node_layers, quantized)
        verdict.nodes[disp] = NodeVerdict(placement, detail)

    _place_fused_nodes(verdict, index, by_node, quantized, _unread_nodes(index, by_node, parse_folded(text)))

    memory = parse_memory_kb(text)
    verdict.estimates = {
        "label": ESTIMATE_LABEL,
        "cycles_total_estimate": sum(l.cycles_total for l in layers),
        "cycles_npu_estimate": sum(l.cycles_npu for l in layers),
        "cycles_ddr_estimate": sum(l.cycles_ddr for l in layers),
        **{f"{k}_estimate": v for k, v in memory.items()},
        "layers": [dict(l.to_dict(), onnx_nodes=layer_nodes.get(l.id, [])) for l in layers],
    }
    return verdict


def _nearest_first(start: int, neighbours, expand=lambda j: True, seen: set[int] | None = None):
    """Positions of the nodes around node `start`, nearest first, each once, up to FUSED_SEARCH_DEPTH
    steps away: `neighbours(i)` gives the positions next to node i, and the walk goes on only
    through the nodes `expand` accepts. `seen` (with `start` in it) may be shared by two walks."""
    seen = {start} if seen is None else seen
    frontier = [start]
    for _ in range(FUSED_SEARCH_DEPTH):
        nxt = []
        for i in frontier:
            for j in neighbours(i):
                if j in seen:
                    continue
                seen.add(j)
                yield j
                if expand(j):
                    nxt.append(j)
        frontier = nxt


def _producers(index: _NameIndex, position: dict[str, int]):
    """Node i -> the positions of the nodes that compute its inputs, in input order."""
    return lambda i: [position[index.tensor_producer[x]] for x in index.graph.node[i].input if x in index.tensor_producer]


def _consumers(index: _NameIndex):
    """Node i -> the positions of the nodes that read its outputs."""
    return lambda i: [j for out in index.graph.node[i].output for j in index.consumers.get(out, [])]


def _fused_into_compound_layer(
    start: int, index: _NameIndex, by_node: dict[str, list[Layer]]
) -> tuple[str, Layer] | None:
    """The compound layer (e.g. `ConvAdd`) that computes node `start`, when one of its producers is on it.

    The compiler names a layer that fused operators after all of them: a Conv followed by the
    elementwise Add that reads it becomes one `ConvAdd` layer, named after the Conv only (in
    rknn-toolkit2 2.5.0 on RV1106 the residual Add of ConvNeXt and transformer blocks:
    `Conv:/blocks/blocks.0/ff/ff.2/MatMul#2_ConvAdd`). So a node without a layer of its own whose
    op type is part of a compound layer type, read from a node placed on that layer (through nodes
    without layers, up to FUSED_SEARCH_DEPTH), runs in that layer.
    """
    display, position = index.display, {d: i for i, d in enumerate(index.display)}
    op = index.graph.node[start].op_type
    # The walk goes on through nodes without a layer only: a node on a layer of its own ends that path.
    for j in _nearest_first(start, _producers(index, position), expand=lambda j: display[j] not in by_node):
        for layer in by_node.get(display[j], []):
            if layer.op_type != op and layer.op_type.startswith("Conv") and op in layer.op_type[len("Conv"):]:
                return display[j], layer
    return None


def _unread_nodes(index: _NameIndex, by_node: dict[str, list[Layer]], folded_names: set[str]) -> set[str]:
    """The nodes the toolkit computed at conversion time (its fold_constant log) and those, without a
    layer of their own, whose results only such nodes read: no layer and no model output needs them.

    A Conv whose weights are all zero (a residual branch's last Conv, its zero-initialised
    BatchNorm folded in) is folded to a constant, and the toolkit then compiles nothing of the
    branch that fed it; those nodes run nowhere and have no placement to report.
    """
    graph, display = index.graph, index.display
    unread = {d for name in folded_names for d in index.origins.get(name, ())}
    if not unread:
        return unread
    # Model outputs, and tensors a subgraph (If, Loop) reads from the graph around it: needed.
    needed = {o.name for o in graph.output} | _read_by_subgraphs(graph)
    for i in range(len(graph.node) - 1, -1, -1):  # readers come after their producers
        node, disp = graph.node[i], display[i]
        if disp in by_node or disp in unread or any(o in needed for o in node.output):
            continue
        readers = [display[j] for o in node.output if o for j in index.consumers.get(o, [])]
        if readers and all(r in unread for r in readers):
            unread.add(disp)
    return unread


def _read_by_subgraphs(graph: onnx.GraphProto) -> set[str]:
    """The tensor names the subgraphs of the graph's nodes (If branches, Loop bodies) read."""
    return {x for sub in iter_graphs(graph) if sub is not graph for n in sub.node for x in n.input}


def _place_fused_nodes(
    verdict: ToolchainVerdict, index: _NameIndex, by_node: dict[str, list[Layer]] | None = None, quantized: bool = True, unread: set[str] = frozenset()
) -> None:
    """Give nodes without a layer the placement of the layer that computes them.

    In order: none for the nodes `unread` (folded at conversion time, or needed only by such
    nodes: they run nowhere); a compound layer that names the node's op type
    (`_fused_into_compound_layer`); none, when a cancelling `bypass_two_*` pass deleted the node
    (it runs nowhere, so the toolkit has nothing to report for it); else the nearest placed
    neighbour (producers first).
    """
    by_node = by_node or {}
    display = index.display
    position = {disp: i for i, disp in enumerate(display)}
    folded = _folded_at_conversion(verdict, index) | set(unread)
    for i, disp in enumerate(display):
        if disp in verdict.nodes or disp in folded:
            continue
        compound = _fused_into_compound_layer(i, index, by_node)
        if compound is not None:
            producer, layer = compound
            placement, _ = _placement_of([layer], quantized)
            verdict.nodes[disp] = NodeVerdict(placement, f"fused into {_describe(layer)} with {producer} (no layer of its own)")
            continue
        if disp in index.cancelled:
            continue
        found = _named_fusion_target(verdict, index, position, i, index.absorbed_by[disp]) if disp in index.absorbed_by else None
        found = found or _placed_neighbour(verdict, index, position, i)
        if found is None:
            continue
        other, seen = found
        how = f" by {index.absorbed_by[disp]}" if disp in index.absorbed_by else ""
        verdict.nodes[disp] = NodeVerdict(seen.placement, f"fused{how} (no layer of its own); runs with {other}")


def _folded_at_conversion(verdict: ToolchainVerdict, index: _NameIndex) -> set[str]:
    """The nodes the toolkit evaluates at conversion time.

    Constant folding: with pinned shapes the toolkit evaluates, at conversion time, every node
    whose inputs are constants or shapes. Such nodes never run, so the table says nothing about
    them and they get no verdict (they are "not reported", not guessed).
    """
    graph, display = index.graph, index.display
    constant_tensors = {t.name for t in graph.initializer}
    folded: set[str] = set()
    for i, node in enumerate(graph.node):
        computable = node.op_type in CONVERSION_TIME_OPS or (node.input and all((not x) or x in constant_tensors for x in node.input))
        if computable and display[i] not in verdict.nodes:
            constant_tensors.update(o for o in node.output if o)
            folded.add(display[i])
    return folded


def _is_placed(verdict: ToolchainVerdict, name: str) -> bool:
    return name in verdict.nodes and not verdict.nodes[name].detail.startswith("fused")


def _placed_neighbour(verdict: ToolchainVerdict, index: _NameIndex, position: dict[str, int], start: int) -> tuple[str, NodeVerdict] | None:
    """The nearest node with a layer of its own: producers first, then consumers."""
    display, seen = index.display, {start}
    for walk in (_producers(index, position), _consumers(index)):  # one `seen`: a node is looked at once
        for j in _nearest_first(start, walk, seen=seen):
            if _is_placed(verdict, display[j]):
                return display[j], verdict.nodes[display[j]]
    return None


def _named_fusion_target(verdict: ToolchainVerdict, index: _NameIndex, position: dict[str, int], start: int, pass_name: str) -> tuple[str, NodeVerdict] | None:
    """For passes named fuse_<x>_into_<y>: the nearest placed node of kind <y>, either direction."""
    graph, display = index.graph, index.display
    m = re.search(r"_into_([a-z]+)", pass_name)
    kinds = FUSION_TARGETS.get(m.group(1)) if m else None
    if not kinds:
        return None
    producers, consumers = _producers(index, position), _consumers(index)
    for j in _nearest_first(start, lambda i: producers(i) + consumers(i)):
        if graph.node[j].op_type in kinds and display[j] in verdict.nodes:
            return display[j], verdict.nodes[display[j]]
    return None
