"""What a model asks of a chip, in the figures the cost model weighs (edgedeploy.estimate.costmodel).

Two steps, so that estimating many chips costs one pass over the model:
- `node_costs(model)`, once per model: per node, its op class, multiply-accumulates, the
  elements it writes, and the elements of its constant inputs (weights);
- `chip_features(costs, audit)`, once per chip: those figures summed by where the chip's audit
  places each node (accelerator or fallback unit; nothing for a node folded or eliminated at
  compile time), plus the audit's transitions and the bytes that cross them.
"""

from __future__ import annotations

from dataclasses import dataclass

import onnx
from onnx import helper

from edgedeploy.model.intake import LoadedModel
from edgedeploy.model.stats import MAC_OPS, node_macs

# Op classes: each has its own effective throughput on an accelerator (a depthwise convolution
# reuses each weight far less than a dense one, so it runs at a fraction of the dense MAC rate).
CONV, DEPTHWISE, MATMUL, ELEMENTWISE, POOL, OTHER = "conv", "depthwise", "matmul", "elementwise", "pool", "other"
OP_CLASSES = (CONV, DEPTHWISE, MATMUL, ELEMENTWISE, POOL, OTHER)

ELEMENTWISE_OPS = frozenset(
    "Add Sub Mul Div Relu LeakyRelu PRelu Clip Sigmoid HardSigmoid HardSwish Tanh Exp Log Sqrt Pow Abs Neg Erf "
    "Max Min Sum Mean Where Equal Greater Less And Or Not Cast BatchNormalization InstanceNormalization "
    "LayerNormalization Elu Selu Softplus Softsign Mish Gelu Reciprocal Floor Ceil Round Sign Sin Cos "
    "QuantizeLinear DequantizeLinear".split()
)
POOL_OPS = frozenset("MaxPool AveragePool GlobalAveragePool GlobalMaxPool LpPool ReduceMean ReduceMax ReduceSum ReduceMin".split())

# The features, in the order of the cost model's coefficients. Units are chosen so that each
# coefficient reads as a time: ms per GMAC, ms per million elements, ms per MB, ms per layer.
FEATURES = (
    "acc_conv_gmac",  # dense and grouped convolutions on the accelerator
    "acc_dw_gmac",  # depthwise convolutions on the accelerator
    "acc_mm_gmac",  # MatMul, Gemm, recurrent cells on the accelerator
    "acc_elem_melem",  # elements written by elementwise, pool and data-movement nodes on the accelerator
    "acc_mbytes",  # weights plus activations written on the accelerator, at the chip's precision
    "acc_layers",  # accelerator layers that run (a fused group counts once): the per-layer overhead
    "cpu_gmac",  # multiply-accumulates of the nodes on the fallback unit (float32)
    "cpu_melem",  # elements written by the nodes on the fallback unit
    "transitions",  # accelerator<->fallback transitions per inference: copy and synchronisation
    "cross_mbytes",  # bytes that cross them
    "fixed",  # 1: the per-inference overhead (job submission, input and output copies)
)

PRECISION_BYTES = {"int4": 0.5, "int8": 1, "int16": 2, "fp16": 2, "float16": 2, "bf16": 2, "fp32": 4, "float32": 4}


@dataclass(slots=True)
class NodeCost:
    op_class: str
    macs: int
    out_elems: int
    weight_elems: int


class _KnownShapes:
    """Every tensor's dims, read once: what node_macs asks of a model (`shape(name)`), from a dict.

    LoadedModel.shape searches the graph on each call; a model of 400 nodes asks it about a
    thousand times, which took 150 ms, more than the audit of one chip."""

    def __init__(self, model: LoadedModel):
        from edgedeploy.model.shapes import dims_of

        self.dims: dict[str, tuple] = {}
        for vi in model.value_infos().values():
            dims = dims_of(vi)
            if dims is not None:
                self.dims[vi.name] = dims
        self.constants: set[str] = set()
        for t in model.graph.initializer:
            self.dims[t.name] = tuple(int(d) for d in t.dims)
            self.constants.add(t.name)
        for node in model.graph.node:
            if node.op_type == "Constant" and node.output:
                self.constants.add(node.output[0])

    def shape(self, name: str):
        return self.dims.get(name)

    def numel(self, name: str) -> int:
        """Elements of a tensor whose shape is known; 0 otherwise (it adds nothing to the sums)."""
        dims = self.dims.get(name)
        if dims is None or not all(isinstance(d, int) for d in dims):
            return 0
        n = 1
        for d in dims:
            n *= d
        return n


def _group(node: onnx.NodeProto) -> int:
    for a in node.attribute:
        if a.name == "group":
            return int(helper.get_attribute_value(a))
    return 1


def op_class(node: onnx.NodeProto, shapes) -> str:
    """The op class of a node; `shapes`: anything with `shape(name)` (a LoadedModel, _KnownShapes)."""
    op = node.op_type
    if op in ("Conv", "ConvInteger", "QLinearConv", "ConvTranspose"):
        group = _group(node)
        if group > 1:
            x = shapes.shape(node.input[0])
            channels = x[1] if x is not None and len(x) > 1 else None
            if isinstance(channels, int) and group == channels:
                return DEPTHWISE
        return CONV
    if op in MAC_OPS:
        return MATMUL
    if op in ELEMENTWISE_OPS:
        return ELEMENTWISE
    if op in POOL_OPS:
        return POOL
    return OTHER


def node_costs(model: LoadedModel) -> list[NodeCost]:
    """Per node of the main graph (in graph order, as the audit's placements): what it computes."""
    shapes = _KnownShapes(model)
    costs = []
    for node in model.graph.node:
        macs = (node_macs(shapes, node) or 0) if node.op_type in MAC_OPS else 0  # type: ignore[arg-type]
        out_elems = sum(shapes.numel(o) for o in node.output if o)
        weight_elems = sum(shapes.numel(i) for i in node.input if i and i in shapes.constants)
        costs.append(NodeCost(op_class(node, shapes), int(macs), int(out_elems), int(weight_elems)))
    return costs


def chip_features(costs: list[NodeCost], audit) -> dict[str, float]:
    """The FEATURES of one chip's audit (an edgedeploy.audit.AuditResult) of the model of `costs`."""
    from edgedeploy.audit.rules import Placement

    f = dict.fromkeys(FEATURES, 0.0)
    element_bytes = PRECISION_BYTES.get(audit.precision or "int8", 1)
    for placed in audit.nodes:
        if placed.folded:
            continue
        cost = costs[placed.index]
        on_accelerator = placed.placement in (Placement.ACCELERATOR, Placement.FLOAT)
        if on_accelerator:
            key = {CONV: "acc_conv_gmac", DEPTHWISE: "acc_dw_gmac", MATMUL: "acc_mm_gmac"}.get(cost.op_class)
            if key:
                f[key] += cost.macs / 1e9
            else:
                f["acc_elem_melem"] += cost.out_elems / 1e6
            f["acc_mbytes"] += (cost.out_elems + cost.weight_elems) * element_bytes / 1e6
            if placed.fused_into is None or placed.fused_into == placed.node:
                f["acc_layers"] += 1
        else:
            f["cpu_gmac"] += cost.macs / 1e9
            f["cpu_melem"] += cost.out_elems / 1e6
    f["transitions"] = float(audit.transitions)
    f["cross_mbytes"] = audit.crossing_bytes / 1e6
    f["fixed"] = 1.0
    return f
