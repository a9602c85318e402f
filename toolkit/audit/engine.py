"""Placing every node of a model on one chip, and what the placement costs per inference.

`audit_model(model, ruleset)` turns a LoadedModel into an `AuditResult`: a placement and the
violations behind it for every node, the partitions (connected groups of nodes on the same
unit), the accelerator<->fallback transitions per inference and the bytes that cross them.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import onnx
from onnx import helper

from edgedeploy.audit.lowering import ELIMINATED, FOLDED, GraphIndex, LoweringResult, LoweringSteps, lower
from edgedeploy.audit.rules import NodeView, Offence, Placement, Rule, RuleSet, TensorView, worst
from edgedeploy.audit.static_values import static_values
from edgedeploy.model.intake import LoadedModel
from edgedeploy.model.shapes import dims_of
from edgedeploy.model.stats import dtype_name, node_names

AUDIT_SCHEMA = "edgedeploy.audit/1"


# Built-in rules every rule set gets: operator coverage, precision, opset. Their consequences
# depend on the rule set, so the engine applies them itself; they exist to carry the sentences
# users read (and the placement each stands for).


def _engine_applied(node, chip):
    return None


def _builtin(name: str, placement: Placement, sentence: str) -> Rule:
    return Rule(name=name, ops=frozenset(), placement=placement, constants={}, check=_engine_applied, template=sentence)


operator_not_on_accelerator = _builtin("operator_not_on_accelerator", Placement.FALLBACK, "The accelerator has no kernel for this operator; it runs on the fallback unit.")
operator_unsupported = _builtin("operator_unsupported", Placement.UNSUPPORTED, "Neither the accelerator nor the fallback unit of this toolchain implements this operator.")
operator_float_only = _builtin("operator_float_only", Placement.FLOAT, "The toolchain cannot quantise this operator; it is kept in float inside the quantised graph.")
precision_not_on_accelerator = _builtin("precision_not_on_accelerator", Placement.FALLBACK, "The accelerator runs this operator, but not in the requested precision.")
precision_unsupported = _builtin("precision_unsupported", Placement.UNSUPPORTED, "This operator is not implemented in the requested precision, and there is no fallback unit to run it.")
shape_not_known = _builtin(
    "shape_not_known",
    Placement.FALLBACK,
    "The toolchain computes this when it compiles the model if the shapes it follows from are fixed by then; the model leaves them open, so the audit cannot tell, and this placement is its guess for shapes left open. Fix them with --input-shape, or run --confirm.",
)
folded_at_compile_time = _builtin("folded_at_compile_time", Placement.ACCELERATOR, "Every input is known when the model is compiled: the toolchain folds this node into a constant, so it runs nowhere.")
FOLDED_AT_COMPILE_TIME = folded_at_compile_time.name
opset_out_of_range = _builtin("opset_out_of_range", Placement.UNSUPPORTED, "The toolchain's ONNX importer does not accept this model's opset.")
constant_spelling_refused = _builtin(
    "constant_spelling_refused", Placement.UNSUPPORTED, "The toolchain's importer reads a Constant node's value only from a `value` tensor; given in this attribute it crashes, and the build stops."
)
ir_version_too_new = _builtin("ir_version_too_new", Placement.UNSUPPORTED, "The toolchain's ONNX package is older than this model's IR version and refuses to load it.")

BUILTIN_RULES = (
    operator_not_on_accelerator,
    operator_unsupported,
    operator_float_only,
    precision_not_on_accelerator,
    precision_unsupported,
    opset_out_of_range,
    ir_version_too_new,
    constant_spelling_refused,
    shape_not_known,
    folded_at_compile_time,
)


@dataclass(slots=True)  # made per node and chip: slots make them smaller and quicker to build
class Violation:
    node: str
    op_type: str
    rule: str
    message: str
    placement: Placement
    value: Any
    detail: str = ""
    uncertain: bool = False

    def to_dict(self) -> dict:
        return {
            "node": self.node,
            "op_type": self.op_type,
            "rule": self.rule,
            "message": self.message,
            "placement": self.placement.value,
            "value": _jsonable(self.value),
            "detail": self.detail,
            **({"uncertain": True} if self.uncertain else {}),
        }


@dataclass(slots=True)  # made per node and chip: slots make them smaller and quicker to build
class NodePlacement:
    node: str
    op_type: str
    index: int
    placement: Placement
    violations: list[Violation] = field(default_factory=list)
    # What the toolchain's graph passes did to the node (edgedeploy.audit.lowering): "fused"
    # (into `fused_into`, the node its group became), "folded" or "eliminated"; None: untouched.
    lowered: str | None = None
    lowered_by: str | None = None
    fused_into: str | None = None
    # Runs nowhere: computed when the model is compiled, or removed by the toolchain. Worked out
    # once, when made: partitions, reports and estimates ask it of every node of every chip
    # (36,000 times for DenseNet-121 on 17 chips, 15 ms as a property), and nothing changes a
    # placement after it is made.
    folded: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        folded = self.lowered in (FOLDED, ELIMINATED)
        if not folded:
            for v in self.violations:  # a loop: quicker than any() over a generator, per placement made
                if v.rule == FOLDED_AT_COMPILE_TIME:
                    folded = True
                    break
        self.folded = folded

    @property
    def uncertain(self) -> str | None:
        """Why the placement is only the audit's best guess (a decisive violation it cannot be sure of), else None."""
        if not self.violations:  # most nodes: asked for every node of every chip
            return None
        decisive = [v for v in self.violations if v.placement == self.placement]
        if decisive and all(v.uncertain for v in decisive):
            return decisive[0].message
        return None

    @property
    def reason(self) -> str:
        """The sentence of the decisive violation; '' on the accelerator (unless folded at compile time)."""
        if not self.violations:
            return ""
        decisive = [v for v in self.violations if v.placement == self.placement]
        return decisive[0].message if decisive else ""

    def to_dict(self) -> dict:
        uncertain = self.uncertain
        return {
            "node": self.node,
            "op_type": self.op_type,
            "index": self.index,
            "placement": self.placement.value,
            "reason": self.reason,
            "violations": [v.to_dict() for v in self.violations],
            **({"lowered": self.lowered, "lowered_by": self.lowered_by, "fused_into": self.fused_into} if self.lowered else {}),
            **({"uncertain": uncertain} if uncertain else {}),
        }


@dataclass
class Crossing:
    """One tensor that moves between the accelerator and the fallback unit on every inference."""

    tensor: str
    producer: str
    consumer: str
    direction: str  # "to_fallback" or "to_accelerator"
    size_bytes: int | None


@dataclass
class AuditResult:
    target: str
    chip: str
    toolchain_version: str
    source: str
    model_sha256: str
    precision: str
    fallback_unit: str
    nodes: list[NodePlacement]
    partitions: list[dict]
    crossings: list[Crossing]
    # placement value -> [unit, precision]: what each placement means on this chip, in its words.
    units: dict = field(default_factory=dict)

    def count(self, placement: Placement) -> int:
        return sum(1 for n in self.nodes if n.placement == placement)

    def counts(self) -> Counter:
        """Nodes per placement, in one pass."""
        return Counter(n.placement for n in self.nodes)

    @property
    def transitions(self) -> int:
        return len(self.crossings)

    @property
    def crossing_bytes(self) -> int:
        return sum(c.size_bytes or 0 for c in self.crossings)

    @property
    def crossing_bytes_known(self) -> bool:
        return all(c.size_bytes is not None for c in self.crossings)

    def summary(self) -> dict:
        counts = self.counts()
        return {
            "nodes": len(self.nodes),
            "on_accelerator": counts[Placement.ACCELERATOR],
            "float": counts[Placement.FLOAT],
            "fallback": counts[Placement.FALLBACK],
            "unsupported": counts[Placement.UNSUPPORTED],
            "uncertain": sum(1 for n in self.nodes if n.violations and n.uncertain),
            "partitions": len(self.partitions),
            "transitions_per_inference": self.transitions,
            "crossing_bytes_per_inference": self.crossing_bytes,
            "crossing_bytes_complete": self.crossing_bytes_known,
        }

    def unit_words(self, placement: Placement) -> str:
        """Where a placement runs on this chip, with its precision: "NPU, int8", "CPU (Cortex-A55), float32"."""
        unit, precision = self.units.get(placement.value, (None, None))
        if unit is None:
            return {Placement.ACCELERATOR: "the accelerator", Placement.FALLBACK: f"the {self.fallback_unit}"}.get(placement, placement.value)
        return f"{unit}, {precision}" if precision else unit

    def summary_line(self, summary: dict | None = None) -> str:
        """The one-line summary; `summary`: self.summary(), when the caller has it already."""
        s = summary or self.summary()
        extra = []
        if s["float"]:
            extra.append(f"{s['float']} kept in float" + (f" ({self.unit_words(Placement.FLOAT)})" if self.units else ""))
        if s["fallback"]:
            extra.append(f"{s['fallback']} on the {self.fallback_unit}" + (f" ({self.units[Placement.FALLBACK.value][1]})" if self.units and self.units[Placement.FALLBACK.value][1] else ""))
        if s["unsupported"]:
            extra.append(f"{s['unsupported']} unsupported")
        if s["uncertain"]:
            extra.append(f"{s['uncertain']} uncertain")
        more = f" ({', '.join(extra)})" if extra else ""
        where = f"the accelerator ({self.unit_words(Placement.ACCELERATOR)})" if self.units else "the accelerator"
        bytes_text = f"{s['crossing_bytes_per_inference']} bytes" + ("" if s["crossing_bytes_complete"] else " (at least; some shapes unknown)")
        return (
            f"{self.chip}: {s['on_accelerator']} of {s['nodes']} nodes on {where}{more}; "
            f"{s['transitions_per_inference']} transitions, {bytes_text} crossing per inference"
        )

    def to_dict(self) -> dict:
        return {
            "schema": AUDIT_SCHEMA,
            "target": self.target,
            "chip": self.chip,
            "toolchain_version": self.toolchain_version,
            "source": self.source,
            "model_sha256": self.model_sha256,
            "precision": self.precision,
            "fallback_unit": self.fallback_unit,
            "summary": self.summary(),
            "units": self.units,
            "nodes": [n.to_dict() for n in self.nodes],
            "partitions": self.partitions,
            "crossings": [c.__dict__ for c in self.crossings],
        }


def _jsonable(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating,)):
        return float(value)
    if isinstance(value, (tuple, list)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted(_jsonable(v) for v in value)
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, Placement):
        return value.value
    return value


# Tensors whose values rules may need are small; a large constant (weights) is never copied.
CONSTANT_VALUE_MAX_ELEMENTS = 1 << 16


def _constant_node_tensors(graph) -> dict[str, onnx.TensorProto]:
    """The tensors Constant nodes give by their `value` attribute, by output name."""
    constants: dict[str, onnx.TensorProto] = {}
    for node in graph.node:
        if node.op_type == "Constant" and node.output:
            for a in node.attribute:
                if a.name == "value" and a.type == onnx.AttributeProto.TENSOR:
                    constants[node.output[0]] = a.t
    return constants


class _TensorViewMaker:
    """Makes a tensor's TensorView from what the graph, shape inference and the static analysis know of it."""

    def __init__(self, model: LoadedModel):
        graph = model.graph
        self.infos = model.value_infos()
        self.initializers = {t.name: t for t in graph.initializer}
        self.constants = _constant_node_tensors(graph)
        # What a simplifier computes from constants and static shapes (edgedeploy.audit.static_values):
        # values of shape computations and the shapes ONNX's own inference could not see through.
        self.static = static_values(model, self.infos)
        self.model_outputs = {o.name for o in graph.output}
        self.graph_inputs = {vi.name for vi in graph.input} - set(self.initializers)
        self._dtype_names: dict[int, str] = {}

    def dtype_of(self, elem: int) -> str:
        # numpy's dtype naming is slow; a model has a handful of element types.
        if elem not in self._dtype_names:
            self._dtype_names[elem] = dtype_name(elem)
        return self._dtype_names[elem]

    def view(self, name: str, is_foldable: bool, producer: str | None, consumers: tuple[str, ...]) -> TensorView:
        if not name:
            return TensorView("", None, None, False, foldable=is_foldable, producer=producer)
        tensor = self.initializers.get(name) or self.constants.get(name)
        if tensor is not None:
            return self._stored_constant(name, tensor, is_foldable, producer, consumers)
        value = self.static.values.get(name)
        if value is not None and name in self.static.constant_nodes:
            # A Constant node given by value_ints, value_float, ...: a constant like any other.
            dtype = self.dtype_of(helper.np_dtype_to_tensor_dtype(value.dtype))
            return TensorView(name, tuple(value.shape), dtype, True, _value=value, is_model_output=name in self.model_outputs, foldable=is_foldable, producer=producer, consumers=consumers)
        where = dict(is_graph_input=name in self.graph_inputs, is_model_output=name in self.model_outputs, foldable=is_foldable, producer=producer, consumers=consumers)
        vi = self.infos.get(name)
        if vi is None:
            return self._uninferred(name, value, where)
        elem = vi.type.tensor_type.elem_type if vi.type.HasField("tensor_type") else 0
        return TensorView(
            name,
            self.static.shape_of(name),
            self.dtype_of(elem) if elem else None,
            False,
            # An If's results computed from its known condition's branch keep their value (a
            # simplifier may replace the If by that branch; toolchains that do not keep the If).
            _value=value if is_foldable or producer == "If" else None,
            shape_unknown=self.static.unknown.get(name),
            **where,
        )

    def _stored_constant(self, name: str, tensor, is_foldable: bool, producer: str | None, consumers: tuple[str, ...]) -> TensorView:
        """An initializer or a Constant node's tensor."""
        n = 1
        for d in tensor.dims:
            n *= int(d)
        # Large constants (weights) never get a value: rules only need small ones (axes, shapes).
        small = n <= CONSTANT_VALUE_MAX_ELEMENTS
        return TensorView(
            name, tuple(int(d) for d in tensor.dims), self.dtype_of(tensor.data_type), True, _tensor=tensor if small else None, is_model_output=name in self.model_outputs, foldable=is_foldable, producer=producer, consumers=consumers,
            _stored=None if small else tensor,
        )

    def _uninferred(self, name: str, value, where: dict) -> TensorView:
        """A tensor ONNX's shape inference says nothing of: what the static analysis learnt, if anything."""
        learnt = self.static.shapes.get(name)
        if value is not None or learnt is not None:
            shape = tuple(value.shape) if value is not None else learnt
            dtype = self.dtype_of(helper.np_dtype_to_tensor_dtype(value.dtype)) if value is not None else None
            return TensorView(name, shape, dtype, False, _value=value, **where)
        return TensorView(name, None, None, False, shape_unknown=self.static.unknown.get(name), **where)


def node_views(model: LoadedModel) -> list[NodeView]:
    """A NodeView per node of the main graph, in the graph's (topological) order."""
    graph = model.graph
    maker = _TensorViewMaker(model)
    opset = model.opset
    ir_version = int(model.proto.ir_version)
    views = []
    foldable: set[str] = set(maker.initializers)
    # A graph output must still be produced by the compiled model, so its node is never folded away.
    graph_outputs = {o.name for o in graph.output}
    # One view per tensor, made when first seen: a producer comes before its consumers, so a
    # tensor's foldability is known by then.
    cache: dict[str, TensorView] = {}

    producer_of: dict[str, str] = {}
    consumers_of: dict[str, list[str]] = {}
    for node in graph.node:
        for name in node.input:
            consumers_of.setdefault(name, []).append(node.op_type)

    def get(name: str) -> TensorView:
        found = cache.get(name)
        if found is None:
            found = cache[name] = maker.view(name, name in foldable, producer_of.get(name), tuple(consumers_of.get(name, ())))
        return found

    for index, (name, node) in enumerate(zip(node_names(graph), graph.node)):
        inputs = tuple(get(i) for i in node.input)
        if not graph_outputs.intersection(node.output) and _computable_at_compile_time(node, inputs, foldable):
            foldable.update(o for o in node.output if o)
        producer_of.update((o, node.op_type) for o in node.output if o)
        outputs = tuple(get(o) for o in node.output)
        views.append(NodeView(name=name, op_type=node.op_type, domain=node.domain, index=index, opset=opset, inputs=inputs, outputs=outputs, proto=node, ir_version=ir_version))
    return views


# Operators whose output depends on more than their inputs: never folded.
NOT_FOLDABLE = {"RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike", "Multinomial", "Bernoulli", "Dropout"}
# Operators that read only the shape of their input.
SHAPE_READERS = {"Shape", "Size"}


def _computable_at_compile_time(node: onnx.NodeProto, inputs: tuple[TensorView, ...], foldable: set[str]) -> bool:
    if node.domain not in ("", "ai.onnx") or node.op_type in NOT_FOLDABLE:
        return False
    if any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS) for a in node.attribute):
        return False
    if node.op_type in SHAPE_READERS:
        return bool(inputs) and (inputs[0].name in foldable or inputs[0].is_static)
    present = [t for t in inputs if t.present]
    if not present:
        return node.op_type == "Constant"
    return all(t.name in foldable for t in present)


class ChipIndependent:
    """What the audits of one model on several chips share, computed once.

    - `views`: node_views(model), the original nodes;
    - `edges`: every tensor a node reads from another node, as (consumer, producer, the
      producer's view of the tensor), in node order then input order: partitions and crossings
      are derived from these and the placements;
    - per lowering (what one set of graph passes makes of the model, `lowered`): the nodes the
      rules place. Chips share a lowering only when its result is bound to be identical: the
      same passes, in the same order, none of which reads its chip argument (else the chip is
      part of the key).
    - per node view (`memo`, a ViewMemo): the offences of every rule that does not read its chip
      argument (`Rule.reads_chip`) on every view it was evaluated on, and the placements chips
      with the same verdict share. A rule object that several chips' rule sets share (the six
      RKNN chips share most of theirs) gives the same offences on the same node view, so it is
      evaluated once per view, not once per chip, nor once per lowering: the nodes no pass
      touched are the same view in every lowering. A fused or absorbed node is a new view,
      different per toolchain, so its offences are its own; lowerings that fused it alike
      (the same passes changed their graph the same way, lowering.LoweringSteps) share it.
    - partitions and crossings per distinct layout (`layout`).
    """

    def __init__(self, model: LoadedModel, views: list[NodeView] | None = None):
        self.views = node_views(model) if views is None else views
        producer: dict[str, int] = {}
        for i, v in enumerate(self.views):
            for o in v.outputs:
                if o.name:
                    producer[o.name] = i
        self.producer = producer
        self.edges = _edges(self.views, producer)
        # (where each node runs, precision) -> (partitions, crossings)
        self._layouts: dict[tuple[bytes, str | None], tuple[list[dict], list[Crossing]]] = {}
        # lowering key (LoweredViews.key_of) -> what the passes made of the model
        self._lowerings: dict[tuple, LoweredViews] = {}
        self.memo = ViewMemo()
        self._graph_index: GraphIndex | None = None  # the views' tensor index, for every lowering
        self._steps = LoweringSteps()  # what each pass did on the way to every lowering so far

    def lowered(self, rules: RuleSet) -> LoweredViews:
        """What the graph passes of `rules` make of the model: computed once per distinct lowering."""
        key = LoweredViews.key_of(rules)
        found = self._lowerings.get(key)
        if found is None:
            if rules.passes and self._graph_index is None:
                self._graph_index = GraphIndex(self.views)
            found = self._lowerings[key] = LoweredViews(lower(self.views, rules.passes, rules.chip, self._graph_index, self._steps), self.views, list(rules.passes), self.memo)
        return found

    def layout(self, placed: list[NodePlacement], precision: str | None) -> tuple[list[dict], list[Crossing]]:
        """The partitions and crossings of one chip's placements.

        They depend only on which nodes run on the accelerator, on the fallback unit, nowhere
        (folded), or nowhere but pass their input on (eliminated: a wire), and on the precision
        (the bytes that cross): chips that agree on those share one computation (and the same
        lists, which nothing changes afterwards).
        """
        codes = bytes(
            (RUNS_AS_WIRE if p.lowered == ELIMINATED else RUNS_NOWHERE) if p.folded else RUNS_ON_ACCELERATOR if p.placement is Placement.ACCELERATOR else RUNS_ON_FALLBACK for p in placed
        )
        key = (codes, precision)
        found = self._layouts.get(key)
        if found is None:
            edges = self.edges if RUNS_AS_WIRE not in codes else _edges(self.views, _producers_through_wires(self.views, self.producer, codes))
            found = self._layouts[key] = _partitions_and_crossings(self.views, edges, codes, precision)
        return found


class ViewMemo:
    """What the audits of one model on several chips work out once per node view, whichever
    lowering the view is in (a node no graph pass touched is the same view in all of them): the
    offences of chip-independent rules, whether the node is computable at compile time, and the
    placements that chips with the same verdict on its operator share. Keyed by the view's
    identity: every view placed stays alive with its lowering (ChipIndependent keeps them all)."""

    def __init__(self):
        # id(rule) -> (the rule, kept alive while its id is a key; id(node view) -> its offences).
        self.offences: dict[int, tuple[Rule, dict[int, list[Offence]]]] = {}
        self.computable: dict[int, bool] = {}  # id(node view) -> computable_at_compile_time
        # (OperatorVerdict.shared_key or FOLDED, id(node view)) -> the node's placement, for the
        # chips whose verdict on its operator is the same: nothing changes a placement afterwards.
        self.placements: dict[tuple, NodePlacement] = {}
        # What makes two chips' verdicts on an operator alike -> a number, their shared_key: a
        # placement is looked up for every node of every chip, and a number hashes at once where
        # that tuple (the operator, the engine's own violations, every rule checked) is hashed
        # whole each time (CPython keeps no tuple's hash).
        self.verdict_numbers: dict[tuple, int] = {}


class LoweredViews:
    """One lowering of a model (the graph passes of a toolchain, edgedeploy.audit.lowering) and
    what the chips that share it have computed on it; `memo`: what is shared per node view with
    the model's other lowerings (ViewMemo)."""

    def __init__(self, result: LoweringResult | None, original: list[NodeView], passes: list, memo: ViewMemo | None = None):
        self.result = result
        self.views = original if result is None else result.views
        self._passes = passes  # kept alive while their ids are part of the key
        memo = ViewMemo() if memo is None else memo
        self._offences = memo.offences
        self._computable = memo.computable
        self.placements = memo.placements
        self._verdict_numbers = memo.verdict_numbers
        # (the placements of this lowering's nodes, by identity; precision) -> (every original
        # node's placement, partitions, crossings): chips that placed every node alike share them.
        self.finished: dict[tuple, tuple[list[NodePlacement], list[NodePlacement], list[dict], list[Crossing]]] = {}

    def computable(self, node: NodeView) -> bool:
        """computable_at_compile_time(node), worked out once per node view."""
        found = self._computable.get(id(node))
        if found is None:
            found = self._computable[id(node)] = computable_at_compile_time(node)
        return found

    @staticmethod
    def key_of(rules: RuleSet) -> tuple:
        """Equal for two rule sets only when their lowering of a model is bound to be identical."""
        passes = tuple(rules.passes)
        key = tuple(id(p) for p in passes)
        for p in passes:
            if p.reads_chip:
                key += ((id(p), rules.chip if p.chip_key is None else p.chip_key(rules.chip)),)
        return key

    def verdict_number(self, alike: tuple) -> int:
        """The number standing for the verdicts described by `alike` (OperatorVerdict.shared_key)."""
        return self._verdict_numbers.setdefault(alike, len(self._verdict_numbers))

    def remembered(self, rule: Rule) -> dict[int, list[Offence]] | None:
        """Where the offences of `rule` are kept by id(node view), or None for a rule that reads its
        chip (evaluated on every chip)."""
        if rule.reads_chip:
            return None
        entry = self._offences.get(id(rule))
        if entry is None:
            entry = self._offences[id(rule)] = (rule, {})
        return entry[1]


def _edges(views: list[NodeView], producer: dict[str, int]) -> list[tuple[int, int, TensorView]]:
    """(consumer, producer, the producer's view of the tensor) for every tensor a node reads from another."""
    edges: list[tuple[int, int, TensorView]] = []
    for i, v in enumerate(views):
        for t in v.inputs:
            j = producer.get(t.name) if t.name else None
            if j is not None:
                produced = next((o for o in views[j].outputs if o.name == t.name), t)
                edges.append((i, j, produced))
    return edges


def _producers_through_wires(views: list[NodeView], producer: dict[str, int], codes: bytes) -> dict[str, int]:
    """Tensor -> producing node, where a node the toolchain eliminated is a wire: what it passes on
    comes from its own producer (in node order, so a chain of eliminated nodes resolves)."""
    by_output = dict(producer)
    for i, v in enumerate(views):
        if codes[i] == RUNS_AS_WIRE:
            source = next((by_output[t.name] for t in v.inputs if t.name in by_output), None)
            for o in v.outputs:
                if o.name:
                    if source is None:
                        by_output.pop(o.name, None)
                    else:
                        by_output[o.name] = source
    return by_output


def _checked_before_folding(node: NodeView, rules: RuleSet, checked: list[Rule] | None = None) -> NodePlacement | None:
    """The placement of a node the toolchain would fold, where a rule it checks before folding
    (Rule.before_folding) holds on it: a refusal as it reads the model; else None.
    `checked`: those rules of `rules` (rules_checked_before_folding), when the caller has them."""
    found, placement = [], Placement.ACCELERATOR
    for r in rules_checked_before_folding(rules) if checked is None else checked:
        if not r.applies_to(node.op_type):
            continue
        for offence in r.evaluate(node, rules.chip):
            found.append(Violation(node.name, node.op_type, r.name, r.sentence, r.placement, offence.value, offence.detail, offence.uncertain))
            if r.placement.severity > placement.severity:
                placement = r.placement
    return NodePlacement(node.name, node.op_type, node.index, placement, found) if found else None


def rules_checked_before_folding(rules: RuleSet) -> list[Rule]:
    """The rules of `rules` the toolchain checks before it folds constants, in order (one in the
    whole code base, eIQ's: a chip's own list, made once, spares every foldable node of every
    chip a walk through all its rules)."""
    return [r for r in rules.rules if r.before_folding]


def place_node(node: NodeView, rules: RuleSet, precision: str | None, rules_by_op: dict | None = None, shared: LoweredViews | None = None, before_folding: list[Rule] | None = None) -> NodePlacement:
    """Decide where one node runs, with every violation that led there.

    `rules_by_op`: a cache, shared across the nodes of a model on one chip, of what depends only
    on the operator (OperatorVerdict).
    `shared`: the lowering `node` belongs to, with what the audits of this model on other chips
    sharing it have computed already (ChipIndependent).
    `before_folding`: rules_checked_before_folding(rules), when the caller places many nodes.
    """
    name, op_type, index = node.name, node.op_type, node.index
    # The memos of `shared` are per node view (ViewMemo): its identity is the key.
    view = id(node)
    op = op_type if node.domain in ("", "ai.onnx") else f"{node.domain}.{op_type}"
    if rules.constant_spellings_refused and op_type == "Constant":
        spelling = next((a.name for a in node.proto.attribute if a.name in rules.constant_spellings_refused), None)
        if spelling is not None:
            refused = Violation(name, op_type, constant_spelling_refused.name, constant_spelling_refused.sentence, Placement.UNSUPPORTED, spelling)
            return NodePlacement(name, op_type, index, Placement.UNSUPPORTED, [refused])
    if rules.folds_constants and (shared.computable(node) if shared is not None else computable_at_compile_time(node)):
        refused = _checked_before_folding(node, rules, before_folding)
        if refused is not None:
            return refused
        found = shared.placements.get((FOLDED, view)) if shared is not None else None
        if found is None:
            folded = Violation(name, op_type, folded_at_compile_time.name, folded_at_compile_time.sentence, Placement.ACCELERATOR, op)
            found = NodePlacement(name, op_type, index, Placement.ACCELERATOR, [folded])
            if shared is not None:
                shared.placements[(FOLDED, view)] = found
        return found
    if rules_by_op is None:
        rules_by_op = {}
    key = (op, node.opset, node.ir_version)
    verdict = rules_by_op.get(key)
    if verdict is None:
        verdict = rules_by_op[key] = OperatorVerdict.of(op, node.opset, node.ir_version, rules, precision, shared)
    # Another chip with the same verdict on the operator has placed this node view already (in
    # this lowering or another that left the node alone): the placement is the same (its rules'
    # offences are remembered per view).
    memo = (verdict.shared_key, view) if shared is not None and verdict.shared_key is not None else None
    if memo is not None:
        found = shared.placements.get(memo)
        if found is not None:
            return found
    found = [Violation(name, op_type, r.name, r.sentence, placement, value, detail) for r, placement, value, detail in verdict.builtin]
    placement = verdict.placement
    chip = rules.chip
    for r, remembered in verdict.rules:
        if remembered is None:
            offences = r.evaluate(node, chip)
        else:
            offences = remembered.get(view)
            if offences is None:
                offences = remembered[view] = r.evaluate(node, chip)
        if offences:
            for offence in offences:
                found.append(Violation(name, op_type, r.name, r.sentence, r.placement, offence.value, offence.detail, offence.uncertain))
            if r.placement.severity > placement.severity:
                placement = r.placement
    # A rule that stops the build on this operator says why in the toolchain's own words (its
    # crash or refusal): that sentence, not the generic "no unit implements it", is the reason.
    if found and found[0].rule == operator_unsupported.name and any(v.placement is Placement.UNSUPPORTED for v in found[1:]):
        found.append(found.pop(0))
    placed = NodePlacement(name, op_type, index, placement, found)
    if placement is not Placement.ACCELERATOR:
        placed = _uncertain_when_shape_unknown(node, placed)
    if memo is not None:
        shared.placements[memo] = placed
    return placed


def _uncertain_when_shape_unknown(node: NodeView, placed: NodePlacement) -> NodePlacement:
    """A node off the accelerator that reads or makes a value computed from shapes the model
    leaves open is placed uncertain: given those shapes, the toolchain may compute it when it
    compiles the model (TensorView.shape_unknown says which shape, and why it is open)."""
    reason = next((t.shape_unknown for t in (*node.outputs, *node.inputs) if t.shape_unknown), None)
    if reason is None:
        return placed
    note = Violation(placed.node, placed.op_type, shape_not_known.name, shape_not_known.sentence, placed.placement, reason, reason, uncertain=True)
    others = [replace(v, uncertain=True) if v.placement == placed.placement else v for v in placed.violations]
    return NodePlacement(placed.node, placed.op_type, placed.index, placed.placement, [note, *others])


@dataclass
class OperatorVerdict:
    """What one chip's rule set says about an operator before looking at the node: the engine's
    own violations (opset, IR version, operator and precision coverage) with the placement they
    give, and the rules to check on each node, with where `shared` remembers their offences."""

    builtin: list[tuple[Rule, Placement, Any, str]]
    placement: Placement
    rules: list[tuple[Rule, dict | None]]
    # Equal for two chips' verdicts that place every node of the operator alike (the same
    # violations of the engine's own, the same rules, none reading its chip; a number,
    # LoweredViews.verdict_number); None otherwise.
    shared_key: int | None = None

    @classmethod
    def of(cls, op: str, opset: int, ir_version: int, rules: RuleSet, precision: str | None, shared: LoweredViews | None) -> "OperatorVerdict":
        found: list[tuple[Rule, Placement, Any, str]] = []

        def add(r: Rule, placement: Placement, value: Any, detail: str = "") -> None:
            found.append((r, placement, value, detail))

        if not (rules.min_opset <= opset <= rules.max_opset):
            add(opset_out_of_range, Placement.UNSUPPORTED, opset, f"accepted: {rules.min_opset}..{rules.max_opset}")
        if rules.max_ir_version is not None and ir_version > rules.max_ir_version:
            add(ir_version_too_new, Placement.UNSUPPORTED, ir_version, f"accepted: up to {rules.max_ir_version}")
        support = rules.accelerator_ops.get(op)
        if support is None:
            if op in rules.float_only_ops:
                add(operator_float_only, Placement.FLOAT, op)
            elif rules.fallback_ops is None or op in rules.fallback_ops:
                add(operator_not_on_accelerator, Placement.FALLBACK, op)
            else:
                add(operator_unsupported, Placement.UNSUPPORTED, op)
        else:
            if precision and precision not in support.precisions and "any" not in support.precisions:
                if support.precisions == ("float",):
                    add(operator_float_only, Placement.FLOAT, op, "float only")
                elif support.missing_precision is Placement.FLOAT:
                    add(operator_float_only, Placement.FLOAT, precision, f"runs in: {', '.join(support.precisions)}")
                elif support.missing_precision is Placement.UNSUPPORTED:
                    add(precision_unsupported, Placement.UNSUPPORTED, precision, f"runs in: {', '.join(support.precisions)}")
                else:
                    add(precision_not_on_accelerator, Placement.FALLBACK, precision, f"supported: {', '.join(support.precisions)}")
        # Accelerator limits matter only for nodes the accelerator would run; a rule whose
        # violation stops the build (UNSUPPORTED) matters wherever the node would run.
        checked = [r for r in rules.rules if r.applies_to(op) and (support is not None or r.placement is Placement.UNSUPPORTED)]
        remembered = [(r, shared.remembered(r) if shared is not None else None) for r in checked]
        shared_key = None
        if shared is not None and all(where is not None for _, where in remembered):
            shared_key = shared.verdict_number((op, tuple((id(r), p, str(value), detail) for r, p, value, detail in found), tuple(id(r) for r in checked)))
        return cls(
            builtin=found,
            placement=worst(p for _, p, _, _ in found),
            rules=remembered,
            shared_key=shared_key,
        )


def computable_at_compile_time(node: NodeView) -> bool:
    """Every output of the node can be computed when the model is compiled (a folding toolchain folds it)."""
    return bool(node.outputs) and all(o.foldable for o in node.outputs if o.present)


def _placements_of_original_nodes(views: list[NodeView], lowering: LoweringResult, lowered_placements: list[NodePlacement]) -> list[NodePlacement]:
    """Every original node's placement: its own, or that of what the passes made of it."""
    # A fused node carries its group leader's name, so every lowered node is found by name.
    by_name = {p.node: p for p in lowered_placements}
    placed = []
    for v in views:
        done = lowering.lowered.get(v.name)
        if done is None:
            placed.append(by_name[v.name])
            continue
        by = done.by
        if done.how in (FOLDED, ELIMINATED):
            note = Violation(v.name, v.op_type, by.name, by.sentence, Placement.ACCELERATOR, done.how)
            placed.append(NodePlacement(v.name, v.op_type, v.index, Placement.ACCELERATOR, [note], lowered=done.how, lowered_by=by.name))
            continue
        group = by_name[done.group]
        members = lowering.groups.get(done.group, [])
        copied = [replace(x, node=v.name, op_type=v.op_type) for x in group.violations]
        # Last, so that the group's own decisive reason (if it is off the accelerator) stays the reason;
        # a group placed only as a best guess leaves its members a best guess too.
        copied.append(Violation(v.name, v.op_type, by.name, by.sentence, group.placement, group.op_type, f"fused into {group.op_type} '{done.group}' with {len(members) - 1} other node(s)", group.uncertain is not None))
        placed.append(NodePlacement(v.name, v.op_type, v.index, group.placement, copied, lowered="fused", lowered_by=by.name, fused_into=done.group))
    return placed


# Where a node runs, for partitions and crossings (ChipIndependent.layout): on a unit, nowhere
# (folded at compile time), or nowhere but as a wire (eliminated: its input passes through).
RUNS_ON_ACCELERATOR, RUNS_ON_FALLBACK, RUNS_NOWHERE, RUNS_AS_WIRE = 0, 1, 2, 3
UNIT_NAMES = {RUNS_ON_ACCELERATOR: "accelerator", RUNS_ON_FALLBACK: "fallback"}


def _partitions_and_crossings(views: list[NodeView], edges: list[tuple[int, int, TensorView]], codes: bytes, precision: str | None) -> tuple[list[dict], list[Crossing]]:
    """Partitions: connected components of nodes on the same unit, linked by tensors; crossings:
    the tensors that pass between the units, one per tensor and receiving unit.

    `codes[i]`: where node i runs (RUNS_ON_ACCELERATOR, ...). Nodes folded at compile time or
    eliminated run nowhere: they join no partition and nothing crosses from them (`edges` run
    through an eliminated node to its producer).
    """
    parent = list(range(len(views)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    crossings: list[Crossing] = []
    seen_crossing: set[tuple[str, int]] = set()
    for i, j, produced in edges:
        unit_i, unit_j = codes[i], codes[j]
        if unit_i >= RUNS_NOWHERE or unit_j >= RUNS_NOWHERE:
            continue
        if unit_i == unit_j:
            parent[find(i)] = find(j)
        else:
            # One crossing per tensor and receiving unit: consumers on the same side share a copy.
            key = (produced.name, unit_i)
            if key in seen_crossing:
                continue
            seen_crossing.add(key)
            crossings.append(
                Crossing(
                    tensor=produced.name,
                    producer=views[j].name,
                    consumer=views[i].name,
                    direction="to_accelerator" if unit_i == RUNS_ON_ACCELERATOR else "to_fallback",
                    size_bytes=_tensor_bytes(produced, precision),
                )
            )
    groups: dict[int, list[int]] = {}
    for i, code in enumerate(codes):
        if code < RUNS_NOWHERE:
            groups.setdefault(find(i), []).append(i)
    partitions = [
        {"index": index, "unit": UNIT_NAMES[codes[members[0]]], "nodes": [views[m].name for m in members]}
        for index, members in enumerate(sorted(groups.values(), key=lambda m: m[0]))
    ]
    return partitions, crossings


# Bytes per element of a float tensor as it crosses, by the precision the graph is compiled in:
# a quantised graph hands int8/int16 data (plus its scale) to the fallback unit, not float32.
PRECISION_ELEMENT_BYTES = {"int8": 1, "int16": 2, "fp16": 2, "float16": 2, "fp32": 4, "float32": 4}


def _tensor_bytes(view: TensorView | None, precision: str | None) -> int | None:
    if view is None or view.numel is None or view.dtype is None:
        return None
    if view.dtype.startswith("float") and precision in PRECISION_ELEMENT_BYTES:
        return view.numel * PRECISION_ELEMENT_BYTES[precision]
    try:
        return view.numel * np.dtype(view.dtype).itemsize
    except TypeError:
        return None


def audit_model(model: LoadedModel, rules: RuleSet, precision: str | None = None, views: list[NodeView] | None = None, shared: ChipIndependent | None = None) -> AuditResult:
    """Place every node of `model` on the chip `rules` describes, and derive partitions and crossings.

    `views`: node_views(model), when the caller audits one model on many chips and builds them once;
    `shared`: a ChipIndependent of the model, when it audits many chips (views, edges and the
    verdicts of chip-independent rules computed once for all of them).
    """
    if shared is None:
        shared = ChipIndependent(model, views)
    rules_by_op: dict = {}
    # The lowering step: the toolchain's own graph passes (computed once for the chips that share
    # them), then the rules on what they leave.
    lowered = shared.lowered(rules)
    before_folding = rules_checked_before_folding(rules)
    placed = [place_node(v, rules, precision, rules_by_op, lowered, before_folding) for v in lowered.views]
    finished_key = (tuple(map(id, placed)), precision)
    finished = lowered.finished.get(finished_key)
    if finished is None:
        of_lowered = placed
        if lowered.result is not None:
            placed = _placements_of_original_nodes(shared.views, lowered.result, placed)
        partitions, crossings = shared.layout(placed, precision)
        # The entry keeps the placements its key names alive, so their ids stay theirs.
        lowered.finished[finished_key] = (of_lowered, placed, partitions, crossings)
    else:
        _, placed, partitions, crossings = finished
    return AuditResult(
        target=rules.target,
        chip=rules.chip,
        toolchain_version=rules.toolchain_version,
        source=rules.source,
        model_sha256=model.sha256,
        precision=precision or "",
        fallback_unit=rules.fallback_unit,
        nodes=placed,
        partitions=partitions,
        crossings=crossings,
        # Only what the rule set declares: a table without units says "accelerator" and "fallback".
        units={p.value: list(rules.unit_of(p, precision)) for p in Placement} if rules.units else {},
    )
