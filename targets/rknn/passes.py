"""rknn-toolkit2's own graph passes, which run before it places the nodes (the audit's lowering step).

rknn-toolkit2 rewrites an ONNX model in its Python graph optimiser before the C compiler
places the layers: it fuses pattern chains into single NPU operators (the exact GELU into
exGelu, a decomposed layer norm into exNorm), folds and cancels layout operators, and turns
some of them into others. The audit must do the same, or it calls a fused chain "CPU" where the
toolkit runs one NPU layer. Each pass here is one such rewrite, written like a rule: its
docstring is the sentence the user reads, naming the toolkit's own pass as its verbose build
log prints it (`D     replace_torch_gelu: remove node = [...]`), and its limits are named
constants. Measured with rknn-toolkit2 2.5.0 (TOOLKIT_OBSERVED) on the corpus models
(docs/corpus.md; their build logs) and on small models of each form (tests/test_rknn_lowering.py).

The passes run in the order they are declared, on every RKNN chip unless a pass says otherwise;
the rules then place what they leave (targets/rknn/rules.py).
"""

from __future__ import annotations

import numpy as np

from edgedeploy.targets.rknn.registry import RULES, TOOLKIT_OBSERVED

# Float constants of exported graphs are rounded to float32: patterns match within this.
CONSTANT_RTOL = 1e-4


def _scalar(t) -> float | None:
    """The value of a constant one-element tensor, else None."""
    if t is None or not t.present or not t.is_constant:
        return None
    v = t.value
    if v is None or v.size != 1:
        return None
    return float(np.asarray(v, dtype=np.float64).reshape(-1)[0])


def _near(value: float | None, target: float) -> bool:
    return value is not None and abs(value - target) <= CONSTANT_RTOL * max(1.0, abs(target))


def _known(t) -> bool:
    return t is not None and t.present and (t.is_constant or t.foldable)


def _other_input(node, name: str):
    """The input of a two-input node that is not the tensor `name` (None if both or neither are)."""
    names = [t.name for t in node.inputs[:2]]
    if len(names) != 2 or names.count(name) != 1:
        return None
    return node.inputs[1 - names.index(name)]


def _next(graph, node, op_type: str):
    """The one node reading `node`'s output, when it has that op type."""
    out = node.outputs[0] if node.outputs else None
    follower = graph.only_consumer(out.name) if out is not None and out.name else None
    return follower if follower is not None and follower.op_type == op_type else None


# ---------------------------------------------------------------------------------------------
# Pattern fusions.
# ---------------------------------------------------------------------------------------------

SQRT2 = float(np.sqrt(2.0))


def _scaled_by(node, op: str, factor: float):
    """The data input of `node` when it is `op` by a constant `factor` (x * factor or x / factor), else None."""
    if node is None or node.op_type != op or len(node.inputs) != 2:
        return None
    a, b = node.inputs
    if _near(_scalar(b), factor) and not a.is_constant:
        return a
    if op == "Mul" and _near(_scalar(a), factor) and not b.is_constant:
        return b
    return None


def _one_plus_then_product(graph, node):
    """(the Add of 1 and `node`'s result, the Mul reading that sum, the Mul's other operand): the
    tail both GELU spellings share; else None."""
    add = _next(graph, node, "Add")
    if add is None or not _near(_scalar(_other_input(add, node.outputs[0].name)), 1.0):
        return None
    mul = _next(graph, add, "Mul")
    other = _other_input(mul, add.outputs[0].name) if mul is not None else None
    return (add, mul, other) if other is not None else None


def _match_exact_gelu(graph, erf):
    """The nodes of x * 0.5 * (1 + Erf(x / sqrt(2))) around `erf`, in PyTorch's export orders, else None."""
    scale = graph.producer(erf.inputs[0].name)
    x = _scaled_by(scale, "Div", SQRT2) or _scaled_by(scale, "Mul", 1 / SQRT2)
    if x is None:
        return None
    found = _one_plus_then_product(graph, erf)
    if found is None:
        return None
    add, mul, other = found
    if other.name == x.name:  # (x * (1 + erf)) * 0.5
        half = _next(graph, mul, "Mul")
        return [scale, erf, add, mul, half] if _scaled_by(half, "Mul", 0.5) is not None else None
    if _near(_scalar(other), 0.5):  # ((1 + erf) * 0.5) * x
        last = _next(graph, mul, "Mul")
        rest = _other_input(last, mul.outputs[0].name) if last is not None else None
        return [scale, erf, add, mul, last] if rest is not None and rest.name == x.name else None
    pre = graph.producer(other.name)  # (x * 0.5) * (1 + erf)
    if _scaled_by(pre, "Mul", 0.5) is not None and _scaled_by(pre, "Mul", 0.5).name == x.name:
        return [scale, erf, add, pre, mul]
    return None


@RULES.graph_pass("Shape", OBSERVED=TOOLKIT_OBSERVED)
def shapes_computed_when_converting(graph, chip):
    """{OBSERVED} computes every Shape when it converts the model (the shapes are static), so a Shape is no reader of the tensor it measures: the passes after this one see the tensor's run-time readers alone (a token swap whose Shape gives the view after it its sizes, as transformers' exports write it, is the token swap of a view read by nothing else).

    Measured with rknn-toolkit2 2.5.0 on RK3566 and RK3588 (2026-12-05, int8, opset 17; tests/forms_models.py
    shape_reader_pack and neox_qkv_pack: each form with and without a Shape of the swapped tensor giving the sizes that
    follow, placed alike), on fresh7's CLIPSeg decoder (its tokens swapped back into a map) and Perceiver's input
    (a map swapped channels-last and flattened into tokens). Folding them first lost fresh2 MaxViT's heads' Transposes
    in h14-rk66t's survey; those are now placed by what the toolkit does with a batch of windows (_batch_of_heads_cut_by_slices).
    """
    for node in [n for n in graph.nodes if n.op_type == "Shape"]:
        graph.fold(node)


@RULES.graph_pass("Erf", OBSERVED=TOOLKIT_OBSERVED)
def fuse_exact_gelu(graph, chip):
    """{OBSERVED} fuses the exact GELU chain x * 0.5 * (1 + Erf(x / sqrt(2))) (Div or Mul, Erf, Add, Mul, Mul, in PyTorch's export orders) into one exGelu NPU layer (its pass replace_torch_gelu), on every RKNN chip.

    Measured on convnext_tiny and the transformer encoders of the corpus: every node of each
    chain is in the layer table's exGelu (or the Conv it is fused into: ConvExGelu), on the NPU.
    """
    for erf in [n for n in graph.nodes if n.op_type == "Erf"]:
        members = _match_exact_gelu(graph, erf)
        if members:
            graph.fuse(members, "Gelu", leader=erf, attributes={})


TANH_GELU_SCALE = float(np.sqrt(2.0 / np.pi))  # 0.7978846
TANH_GELU_CUBE = 0.044715


def _cube_of(graph, node):
    """x when `node` is x * (x * x) (either operand order), else None."""
    if node is None or node.op_type != "Mul" or len(node.inputs) != 2:
        return None
    for i in (0, 1):
        square = graph.producer(node.inputs[1 - i].name)
        x = node.inputs[i]
        if square is not None and square.op_type == "Mul" and [t.name for t in square.inputs] == [x.name, x.name]:
            return x
    return None


def _match_tanh_gelu(graph, tanh):
    """The nodes of (x * (1 + Tanh(0.79788 * (x + 0.044715 * x * x * x)))) * 0.5 around `tanh`, in
    the order torch.onnx writes nn.GELU(approximate="tanh"), else None."""
    scale = graph.producer(tanh.inputs[0].name)
    inner = graph.producer(_scaled_by(scale, "Mul", TANH_GELU_SCALE).name) if _scaled_by(scale, "Mul", TANH_GELU_SCALE) is not None else None
    if inner is None or inner.op_type != "Add" or len(inner.inputs) != 2:
        return None
    for i in (0, 1):
        x, cubed = inner.inputs[i], graph.producer(inner.inputs[1 - i].name)
        c3 = graph.producer(_scaled_by(cubed, "Mul", TANH_GELU_CUBE).name) if _scaled_by(cubed, "Mul", TANH_GELU_CUBE) is not None else None
        cube_of = _cube_of(graph, c3)
        if cube_of is not None and cube_of.name == x.name:
            break
    else:
        return None
    found = _one_plus_then_product(graph, tanh)
    if found is None:
        return None
    add, mul, other = found
    half = _next(graph, mul, "Mul") if other.name == x.name else None
    if _scaled_by(half, "Mul", 0.5) is None:
        return None
    square = graph.producer([t.name for t in c3.inputs if t.name != x.name][0])
    return [square, c3, cubed, inner, scale, tanh, add, mul, half]


@RULES.graph_pass("Tanh", OBSERVED=TOOLKIT_OBSERVED)
def fuse_tanh_gelu(graph, chip):
    """{OBSERVED} fuses the tanh GELU chain as torch.onnx writes it, (x * (1 + Tanh(0.79788 * (x + 0.044715 * x * x * x)))) * 0.5 (Mul, Mul, Mul, Add, Mul, Tanh, Add, Mul, Mul; each constant on either side), into one exGelu NPU layer (its pass replace_torch_tanh_gelu); written with 0.5 * x first it is not fused, and its constant-first Muls keep float layers.

    Measured on RK3588 with Conv, Transpose, MatMul + Add (bias zero or not), the chain, MatMul,
    Transpose (ConvNeXt's MLP, timm's test_convnext): the build log's replace_torch_tanh_gelu
    removes all nine nodes and the layer table has ConvExGelu INT8 on the NPU; with 0.5 * x first,
    no fusion: Mul layers FLOAT16 for the constant-first ones (tests/forms_models.py affine_variants
    gelu_tanh_matmul and gelu_tanh_torch).
    """
    for tanh in [n for n in graph.nodes if n.op_type == "Tanh"]:
        members = _match_tanh_gelu(graph, tanh)
        if members:
            graph.fuse(members, "Gelu", leader=tanh, attributes={})


# A decomposed layer norm's epsilon when the Add's constant is unreadable (a skeleton model).
DEFAULT_EPSILON = 1e-5


def _reduced_axis(node) -> int | None:
    """The one axis (>= 0) a ReduceMean reduces, keeping it (axes attribute, or input 1 from opset 18); else None."""
    if node.op_type != "ReduceMean" or not node.inputs or node.inputs[0].rank is None:
        return None
    axes = node.attr("axes")
    if axes is None and node.input(1) is not None and node.input(1).value is not None:
        axes = [int(a) for a in node.input(1).value.reshape(-1)]
    rank = node.inputs[0].rank
    if axes is None or len(axes) != 1 or int(node.attr("keepdims", 1)) != 1:
        return None
    return int(axes[0]) % rank


def _match_layernorm(graph, mean):
    """The nodes of (x - mean(x)) / sqrt(mean((x - mean(x))^2) + eps) [* g] [+ b] from `mean`, both means over one
    axis (the last, or any other: a channels-first LayerNorm2d over axis 1), that axis and eps; else None."""
    axis = _reduced_axis(mean)
    if axis is None:
        return None
    x = mean.inputs[0].name
    readers = graph.consumers(mean.outputs[0].name)
    sub = next((n for n in readers if n.op_type == "Sub" and n.inputs[0].name == x and n.inputs[1].name == mean.outputs[0].name), None)
    if sub is None:
        return None
    d = sub.outputs[0].name
    square = next((n for n in graph.consumers(d) if (n.op_type == "Pow" and n.inputs[0].name == d and _near(_scalar(n.input(1)), 2.0)) or (n.op_type == "Mul" and [t.name for t in n.inputs] == [d, d])), None)
    div = next((n for n in graph.consumers(d) if n.op_type == "Div" and n.inputs[0].name == d), None)
    if square is None or div is None or len(graph.consumers(d)) != 2:
        return None
    var = _next(graph, square, "ReduceMean")
    if var is None or _reduced_axis(var) != axis:
        return None
    add_eps = _next(graph, var, "Add")
    if add_eps is None or not _known(_other_input(add_eps, var.outputs[0].name)):
        return None
    sqrt = _next(graph, add_eps, "Sqrt")
    if sqrt is None or div.inputs[1].name != sqrt.outputs[0].name or _next(graph, sqrt, "Div") is not div:
        return None
    members = [mean, sub, square, var, add_eps, sqrt, div]
    last = div
    for op in ("Mul", "Add"):  # the affine part: a constant scale, then a constant shift
        nxt = _next(graph, last, op)
        if nxt is not None and _known(_other_input(nxt, last.outputs[0].name)):
            members.append(nxt)
            last = nxt
    eps = _scalar(_other_input(add_eps, var.outputs[0].name))
    return members, axis, (DEFAULT_EPSILON if eps is None else eps)


# Given by the pass below to every LayerNormalization of a model in which one leaves axis or epsilon unwritten: that
# node's name (rules.layernorm_attribute_left_out places them all on the CPU).
LAYERNORM_DEFAULTED_ATTRIBUTE = "rknn_layernorm_defaulted_in_model"


@RULES.graph_pass("LayerNormalization", OBSERVED=TOOLKIT_OBSERVED)
def layernorms_of_a_model_with_one_defaulted(graph, chip):
    """{OBSERVED} runs every LayerNormalization of a model on the CPU when one of them leaves its axis or its epsilon attribute out (the ONNX defaults -1 and 1e-5), those that write both included; with both written on all, each is an exNorm layer on the NPU. The pass marks them with the first such node for the rule layernorm_attribute_left_out. It runs before the written-out norms are fused (their fused nodes write both; not measured in such a model).

    Measured with rknn-toolkit2 2.5.0 (2026-12-05, int8, opset 17, RK3566 and RK3588;
    tests/forms_models.py layernorm_attribute_*, layernorm_epsilon_*, layernorm_swap_pack*): a norm
    of a model input [1, 100, 64] with axis -1 and epsilon 1e-5 written, read by a Linear, is on
    the NPU alone or beside norms that write both (axis 2, axis 3 of [1, 10, 10, 64]), and on the
    CPU beside one without axis or one without epsilon; FunASR's FSMN probes (axis left out, epsilon
    written) had every norm on the CPU, whatever followed it.
    """
    norms = [n for n in graph.nodes if n.op_type == "LayerNormalization"]
    defaulted = next((n for n in norms if not (n.has_attr("axis") and n.has_attr("epsilon"))), None)
    if defaulted is None:
        return
    for norm in norms:
        attributes = {a.name: helper_value(a) for a in norm.proto.attribute}
        graph.fuse([norm], "LayerNormalization", attributes={**attributes, LAYERNORM_DEFAULTED_ATTRIBUTE: defaulted.name})


@RULES.graph_pass("ReduceMean", OBSERVED=TOOLKIT_OBSERVED)
def fuse_decomposed_layernorm(graph, chip):
    """{OBSERVED} fuses a layer norm written out over one axis, the last or any other (ReduceMean, Sub, Pow or Mul, ReduceMean, Add, Sqrt, Div, then a constant Mul and Add, the constant first or second), into one exNorm layer, as for LayerNormalization (its pass replace_torch_layernorm): on the NPU, and on the CPU on RV1106, whose NPU has no exNorm.

    Measured on convnext_tiny and transformer_encoder of the corpus: each chain's nine nodes are
    one exNorm layer of the layer table. Over the channels (h19-rknorm, fresh10's SAFMN, whose
    LayerNorm2d writes weight[:, None, None] * x + bias): rknn-toolkit2 2.5.0 on RK3588 and RK3566
    (2026-12-06, int8, opset 13; tests/forms_models.py channel_norm_pack) runs every node of the chain on
    the NPU over axis 1 of a Conv's [1, 36, 64, 64] or [1, 32, 16, 16] map (weight first, second or no
    affine), over axis 2 of it, over its last axis and over axis 1 of a Conv1d's [1, 32, 100]; the Sqrt
    and the Div by it, which alone run on the CPU, and the weight-first Mul, alone a float layer,
    are not left as such. Norms over several axes (a GroupNorm or InstanceNorm written out) are not
    measured and not fused here.
    """
    for mean in [n for n in graph.nodes if n.op_type == "ReduceMean"]:
        if mean.name not in {n.name for n in graph.nodes}:
            continue  # already part of a group
        found = _match_layernorm(graph, mean)
        if found:
            members, axis, eps = found
            last = axis == mean.inputs[0].rank - 1
            graph.fuse(members, "LayerNormalization", leader=mean, attributes={"axis": -1 if last else axis, "epsilon": eps})


# Chips the L2-normalisation fusion was measured on, and those whose NPU has the exNorm it makes
# (DOC_COMPILER 3.4: none on RV1106, where the audit leaves the chain as it is).
L2_NORM_CHIPS = ("rk3588", "rk3576", "rk3568", "rk3566", "rk3562")


def _reduces_keeping_dims_l2(node) -> bool:
    """A ReduceL2 keeping the reduced axes (any of them, or all), whose result can divide its input."""
    x = node.inputs[0] if node.inputs else None
    return x is not None and x.rank is not None and int(node.attr("keepdims", 1)) == 1


def _match_l2_normalisation(graph, l2):
    """The nodes of x / ReduceL2(x) in the spellings the toolkit fuses, from `l2`; else None.

    Fused: the norm straight into the Div; through an Add of a constant eps; through a Clip and an
    Expand. Not fused (measured): through a Clip alone, or a Max with an eps.
    """
    if not _reduces_keeping_dims_l2(l2):
        return None
    x = l2.inputs[0].name
    chain, node = [l2], l2
    for op in ("Add", "Clip", "Expand"):
        nxt = _next(graph, node, op)
        if nxt is None:
            continue
        if op == "Add" and (len(chain) > 1 or not _known(_other_input(nxt, node.outputs[0].name))):
            return None
        if op == "Clip" and (nxt.inputs[0].name != node.outputs[0].name or not all(_known(t) for t in nxt.inputs[1:] if t.present)):
            return None
        if op == "Expand" and not _known(nxt.input(1)):
            return None
        chain.append(nxt)
        node = nxt
    if [n.op_type for n in chain[1:]] == ["Clip"]:
        return None  # Clip without the Expand: the toolkit leaves it (measured)
    div = _next(graph, node, "Div")
    if div is None or div.inputs[0].name != x or div.inputs[1].name != node.outputs[0].name:
        return None
    return [*chain, div]


@RULES.graph_pass("ReduceL2", chips=L2_NORM_CHIPS, OBSERVED=TOOLKIT_OBSERVED)
def fuse_l2_normalisation(graph, chip):
    """{OBSERVED} fuses an L2 normalisation, x / ReduceL2(x) with keepdims over any axes, into one exNorm layer on the NPU, when the norm goes into the Div directly, through an Add of a constant eps, or through a Clip and an Expand (its passes fuse_reducel2_div_to_lpnormalization2, replace_pixel_norm2, fuse_reducel2_div_to_lpnormalization); through a Clip alone or a Max it leaves the chain as it is, and a ReduceL2 that divides nothing runs on the CPU.

    Measured on a [1, 256] embedding after Gemm and Relu (axes [1]) on RK3588 and RK3566
    (tests/forms_models.py l2_normalise): the fused chain is one exNorm layer of the layer table.
    tests/forms_models.py l2_pack (RK3588 and RK3566): x / ReduceL2(x) directly over axis 1 or
    the last of [1, 256], [1, 16, 64] and [1, 32, 8, 8], over axes [2, 3] and all of the 4-D one,
    [1, 2] of a [1, 8, 8, 32] one, and through an Add of an eps over [1], [2, 3] and the last axis:
    ReduceL2 and Div on the NPU; the ReduceL2 alone (keepdims 0 or 1): on the CPU.
    """
    for l2 in [n for n in graph.nodes if n.op_type == "ReduceL2"]:
        members = _match_l2_normalisation(graph, l2)
        if members:
            rank = l2.inputs[0].rank
            axes = _reduced_axes(l2, rank) or list(range(rank))  # no axes: all of them
            graph.fuse(members, "LpNormalization", leader=l2, attributes={"axis": axes[-1], "axes": axes, "p": 2})


def _reduces_one_axis(node) -> bool:
    """A ReduceMean over one axis, keeping it (axes attribute, or input 1 from opset 18)."""
    if node is None or node.op_type != "ReduceMean" or not node.inputs:
        return False
    axes = node.attr("axes")
    if axes is None and node.input(1) is not None and node.input(1).value is not None:
        axes = [int(a) for a in node.input(1).value.reshape(-1)]
    return axes is not None and len(axes) == 1 and int(node.attr("keepdims", 1)) == 1


def _divides_by_its_root(div, sqrt, x: str) -> bool:
    """`div` is x / Sqrt(...) itself, no reciprocal and no Mul (DiffLlama's group norm; tests/forms_models.py rms_divided_*)."""
    return div is not None and len(div.inputs) == 2 and div.inputs[0].name == x and div.inputs[1].name == sqrt.outputs[0].name


def _match_rms_normalisation(graph, sqrt):
    """The nodes of x * (1 / Sqrt(ReduceMean(x ^ 2) + eps)) around `sqrt` (T5's RMSNorm as torch.onnx writes it), else None."""
    add_eps = graph.producer(sqrt.inputs[0].name)
    if add_eps is None or add_eps.op_type != "Add" or len(add_eps.inputs) != 2:
        return None
    mean = next((graph.producer(t.name) for t in add_eps.inputs if not _known(t)), None)
    if not _reduces_one_axis(mean) or not _known(_other_input(add_eps, mean.outputs[0].name)):
        return None
    square = graph.producer(mean.inputs[0].name)
    if square is None or not ((square.op_type == "Pow" and _near(_scalar(square.input(1)), 2.0)) or (square.op_type == "Mul" and square.inputs[0].name == square.inputs[1].name)):
        return None
    x = square.inputs[0].name
    div = _next(graph, sqrt, "Div")
    if _divides_by_its_root(div, sqrt, x):
        return [square, mean, add_eps, sqrt, div] if all(graph.only_consumer(n.outputs[0].name) is not None for n in (square, mean, add_eps)) else None
    if div is None or div.inputs[1].name != sqrt.outputs[0].name or not _near(_scalar(div.inputs[0]), 1.0):
        return None
    mul = _next(graph, div, "Mul")
    if mul is None or _other_input(mul, div.outputs[0].name) is None or _other_input(mul, div.outputs[0].name).name != x:
        return None
    if any(graph.only_consumer(n.outputs[0].name) is None for n in (square, mean, add_eps)):
        return None
    return [square, mean, add_eps, sqrt, div, mul]


@RULES.graph_pass("Sqrt", chips=L2_NORM_CHIPS, OBSERVED=TOOLKIT_OBSERVED)
def fuse_rms_normalisation(graph, chip):
    """{OBSERVED} fuses an RMS normalisation written out, x * (1 / Sqrt(ReduceMean(x ^ 2, one axis) + eps)) (Pow or Mul, ReduceMean, Add, Sqrt, Div, Mul: T5's layer norm), or x / Sqrt(...) (DiffLlama's group norm), into one NPU layer; a Sqrt, or 1 / Sqrt, of anything else runs on the CPU, as does a division by any other computed tensor.

    Measured on the chain over the last axis and over the channel axis of a [1, 8, 8, 8] Conv
    output, and on 1 / Sqrt(|x| + eps) and Sqrt(|x| + eps) alone, on RK3588 and RK3566
    (tests/forms_models.py div_by_computed_*): the fused chain's six nodes are all on the NPU. x / Sqrt(mean(x * x) + eps)
    over the last axis and over the channels (rms_divided_*, 2026-12-06): its five nodes on the NPU; of the mean of |x|: CPU.
    """
    for sqrt in [n for n in graph.nodes if n.op_type == "Sqrt"]:
        members = _match_rms_normalisation(graph, sqrt)
        if members:
            mean = members[1]
            graph.fuse(members, "RMSNormalization", leader=sqrt, attributes={"axis": int((mean.attr("axes") or [-1])[0])}, inputs=[members[0].inputs[0]], outputs=list(members[-1].outputs))


# Chips whose layer table was read for an RMS norm's weight Mul writing a 3-D model output (below).
NORM_WEIGHT_OUTPUT_CHIPS = ("rk3588", "rk3566", "rk3568")


def _same_type_cast(node) -> bool:
    from onnx import helper

    x, to = node.input(0), node.attr("to")
    return node.op_type == "Cast" and x is not None and x.dtype is not None and to is not None and str(helper.tensor_dtype_to_np_dtype(int(to))) == x.dtype


def _norm_weight(graph, norm):
    """(the Cast to the same type between, or None; the Mul by a constant weight of the normalised axis's size or
    of one value, in either operand order) reading the RMS norm `norm` alone; None when there is none."""
    nxt = graph.only_consumer(norm.outputs[0].name) if norm.outputs else None
    cast = nxt if nxt is not None and _same_type_cast(nxt) else None
    mul = graph.only_consumer(cast.outputs[0].name) if cast is not None else nxt
    if mul is None or mul.op_type != "Mul" or len(mul.inputs) != 2:
        return None
    x = (cast or norm).outputs[0]
    weight = _other_input(mul, x.name)
    width = _static_shape(x)[int(norm.attr("axis"))] if _static_shape(x) else None
    if weight is None or not _known(weight) or weight.numel not in (1, width) or _static_shape(mul.outputs[0]) != _static_shape(x):
        return None
    return cast, mul


@RULES.graph_pass("Sqrt", chips=L2_NORM_CHIPS, OBSERVED=TOOLKIT_OBSERVED, chip_key=NORM_WEIGHT_OUTPUT_CHIPS.__contains__)
def norm_weight_joins_the_rms_norm(graph, chip):
    """{OBSERVED} fuses the Mul by an RMS norm's weight into the norm's exNorm layer (its pass fuse_exnorm_mul), the weight first or second, of one value or varying, through a Cast to the same type (LFM2 writes weight * x.to(dtype)). Where that Mul writes a 3-D model output after such a Cast, the toolkit names after it the layer that turns the output back to the caller's layout, placed as a norm's output view (rules.unchanged_3d_output_view: on RK3566/RK3568 on the CPU).

    Measured with rknn-toolkit2 2.5.0 on RK3588 and RK3566 (2026-12-05, int8, opset 13;
    tests/forms_models.py rms_weight_pack): LFM2's RMSNorm of a projection's heads [1, 32, 2, 32]
    and of [1, 32, 64], its weight [D] of ones or of varying values, first or second, with or without
    the Cast before it: "fused by fuse_exnorm_mul" (ones second: by remove_invalid_mul) into the norm,
    on the NPU; as a 3-D model output after the Cast: "layer Reshape INT8", on RK3566's CPU and RK3588's
    NPU; without the Cast it names the exNorm layer (NPU), the layout Reshape glue of it.
    """
    for norm in [n for n in graph.nodes if n.op_type == "RMSNormalization"]:
        found = _norm_weight(graph, norm)
        if found is None:
            continue
        cast, mul = found
        if cast is not None and mul.outputs[0].is_model_output and len(_static_shape(mul.outputs[0])) == 3 and chip in NORM_WEIGHT_OUTPUT_CHIPS:
            graph.fuse([mul], "Reshape", attributes={OUTPUT_VIEW_SOURCE_ATTRIBUTE: "norm"}, inputs=[cast.outputs[0]])
            continue
        members = [norm, cast, mul] if cast is not None else [norm, mul]
        graph.fuse(members, "RMSNormalization", leader=norm, attributes={"axis": int(norm.attr("axis"))}, inputs=list(norm.inputs), outputs=list(mul.outputs))


@RULES.graph_pass("Cast", OBSERVED=TOOLKIT_OBSERVED)
def cast_to_its_own_type_removed(graph, chip):
    """{OBSERVED} removes a Cast to the element type its input already has (its pass remove_invalid_cast): it runs nowhere, and its layer table names it in the layer of the node it reads (that node's only reader), on the CPU where that node is.

    Measured on a float32 Cast of a float32 Conv result (tests/forms_models.py cast_to_same_type:
    on the NPU) and of a division by a computed tensor (div_by_computed_same_cast: on the CPU with
    the Div), on the Casts of silero-vad's STFT (silero_vad_openvino_16k.onnx), on RK3588 and RK3566;
    seen on T5's Cast of its embedding Gather and EfficientViT's of its LiteMLA Div (pool).
    """
    from onnx import helper

    for cast in [n for n in graph.nodes if n.op_type == "Cast"]:
        x, to = cast.input(0), cast.attr("to")
        if x is None or x.dtype is None or to is None or (cast.outputs and cast.outputs[0].is_model_output):
            continue
        if str(helper.tensor_dtype_to_np_dtype(int(to))) != x.dtype:
            continue
        producer = graph.producer(x.name)
        if producer is not None and len(producer.outputs) == 1 and graph.only_consumer(x.name) is cast:
            graph.fuse([producer, cast], producer.op_type, leader=producer, domain=producer.domain, inputs=list(producer.inputs), outputs=list(cast.outputs))
        else:
            graph.eliminate(cast)


def _keeps_its_whole_input(node) -> bool:
    """A Slice (inputs form, opset 10 on) by steps of 1 whose static result has its input's shape."""
    if node.op_type != "Slice" or len(node.inputs) < 3 or not node.outputs:
        return False
    shape_in, shape_out = _static_shape(node.inputs[0]), _static_shape(node.outputs[0])
    steps = node.input(4)
    if steps is not None and (not _known(steps) or steps.value is None or any(int(v) != 1 for v in steps.value.reshape(-1))):
        return False
    return shape_in is not None and shape_in == shape_out


@RULES.graph_pass("Slice", OBSERVED=TOOLKIT_OBSERVED)
def whole_slice_removed(graph, chip):
    """{OBSERVED} removes a Slice that keeps its whole input (steps of 1; its pass remove_invalid_slice): it has no layer of its own and its layer table names it with the node it reads (that node's only reader), on the CPU where that node is (EnCodec's reflect padding ends in padded[..., :end], end the padded length, after a Pad of its [1, 1, L] input that runs on the CPU).

    Measured with rknn-toolkit2 2.5.0 on RK3588 and RK3566 (2026-12-04, int8, opset 14;
    tests/forms_models.py whole_slice_pack): after a reflect Pad of [1, 1, 576] by 64 or of a
    [1, 1, 4000] model input by 3 (CPU), the whole Slice (end the padded length or INT64_MAX) on
    the CPU, one step shorter on the NPU; after a Pad of [1, 8, 64] or a Relu (NPU): NPU.
    Not measured: a whole Slice of a tensor other nodes read too, or of a model input.
    """
    for node in [n for n in graph.nodes if n.op_type == "Slice"]:
        if _keeps_its_whole_input(node) and not node.outputs[0].is_model_output:
            _named_with_the_node_it_reads(graph, node)


def _named_with_the_node_it_reads(graph, node) -> None:
    """Fuse a node the toolkit removes into the node it reads, where it is that node's only reader at run time."""
    x = node.inputs[0]
    producer = graph.producer(x.name)
    # A Shape of the input is computed when the model is compiled (EnCodec reads the padded length
    # so, ZoeDepth the size of the features): the node is still the input's only reader at run time.
    readers = [r for r in graph.consumers(x.name) if r.op_type != "Shape"]
    if producer is not None and len(producer.outputs) == 1 and not x.is_model_output and readers == [node]:
        graph.fuse([producer, node], producer.op_type, leader=producer, domain=producer.domain, inputs=list(producer.inputs), outputs=list(node.outputs))


def _resizes_to_its_own_size(node) -> bool:
    """A Resize whose static result has its input's shape (sizes of the input's own, or scales of one)."""
    if node.op_type != "Resize" or not node.inputs or not node.outputs:
        return False
    shape_in, shape_out = _static_shape(node.inputs[0]), _static_shape(node.outputs[0])
    return shape_in is not None and shape_in == shape_out


@RULES.graph_pass("Resize", OBSERVED=TOOLKIT_OBSERVED)
def resize_to_its_own_size_removed(graph, chip):
    """{OBSERVED} gives no layer to a Resize to its own size (sizes of the input's own or scales of one, whatever its mode): its layer table names it with the node it reads (that node's only reader at run time), on the NPU after a Conv and on the CPU after a CPU node, where an align_corners Resize that changes the size runs on the CPU (ZoeDepth resizes its relative depth [1, 1, 128, 128] to the size of the features it joins, its own).

    Measured with rknn-toolkit2 2.5.0 on RK3588 and RK3566 (2026-12-05, int8, opset 13;
    tests/forms_models.py same_size_resize_pack; fresh8 hf_zoedepth's /model/metric_head/Resize): a Conv's
    map [1, 16, 8, 8] resized to [1, 16, 8, 8], linear align_corners by sizes or by scales of one, linear
    half_pixel, nearest asymmetric: NPU; align_corners after a Div by a computed tensor: CPU; to [1, 16, 16, 16]
    linear align_corners: CPU, half_pixel: NPU (rules.resize_mode). Not measured: a Resize to its own size of a
    tensor that other nodes read too, or of a model input.
    """
    for node in [n for n in graph.nodes if n.op_type == "Resize"]:
        if _resizes_to_its_own_size(node) and not node.outputs[0].is_model_output:
            _named_with_the_node_it_reads(graph, node)


# The constant second operand that makes each of these an identity (the toolkit's remove_invalid_sub,
# remove_invalid_mul and remove_invalid_add; a Div by ones is a Mul by ones to it).
IDENTITY_OPERAND = {"Sub": 0.0, "Div": 1.0, "Mul": 1.0, "Add": 0.0}
# x + 0 is taken as removed only after these (measured: a Div by a computed tensor, div_affine_pack). Not
# after a constant-first Mul (its Add of zeros shares the Mul's float layer: zero_add_after_a_scalar_first_mul,
# HGNetV2's LearnableAffineBlock) nor after SAM's patch-embedding swap (its Add of a zero position
# embedding stays on the NPU of RK3566 while the swap runs on the CPU). A Softmax (CPU on RK3566) was measured
# too (identity_first_pack): its x + 0, zeros [1, C, H, W] or [1, C, 1, 1], reported with its layer.
ADD_OF_ZEROS_REMOVED_AFTER = ("Div", "Softmax")
# 0 + x and 1 * x, the constant first, are removed only when the constant has the result's whole shape (zeros
# [1, 16, 8, 8]; zeros [1, 16, 1, 1], [1, 1, 1, 8], [16, 8, 8], [1] or a scalar first keep their own layer),
# measured after these (identity_first_pack: ZoeDepth's attractors' zeros_like(bins) + the first pull, a Div).
IDENTITY_FIRST_REMOVED_AFTER = ("Div", "Softmax")
COMMUTATIVE_IDENTITIES = ("Add", "Mul")


def _identity_operands(node) -> tuple | None:
    """(x, constant first) of x - 0, x + 0, x / 1 or x * 1 of a float x, the result x's shape: the constant second
    (all its values), or for x + 0 and x * 1 first with the result's whole shape; else None."""
    if node.op_type not in IDENTITY_OPERAND or len(node.inputs) != 2 or not node.outputs:
        return None
    x, k = node.inputs
    first = node.op_type in COMMUTATIVE_IDENTITIES and _known(x) and not _known(k)
    if first:
        x, k = k, x
    # measured on float tensors; integer ids times 1 stay (int32: on the CPU, integer_path_mul_one_int32)
    if _known(x) or x.dtype not in ("float32", "float16") or not _known(k) or k.stored_elsewhere or k.value is None or k.value.size == 0:
        return None
    shape = _static_shape(x)
    if shape is None or shape != _static_shape(node.outputs[0]) or (first and _static_shape(k) != shape):
        return None
    return (x, first) if bool(np.all(k.value == IDENTITY_OPERAND[node.op_type])) else None


@RULES.graph_pass("Sub", "Div", "Mul", "Add", OBSERVED=TOOLKIT_OBSERVED)
def identity_arithmetic_removed(graph, chip):
    """{OBSERVED} removes x - 0, x + 0, x / 1 and x * 1 of a float x with the constant second (its passes remove_invalid_sub, remove_invalid_add, remove_invalid_mul: SpeechT5's HiFi-GAN normalises its spectrogram by a mean of zeros and a scale of ones, as transformers initialises them): the node has no layer of its own and the toolkit reports it with the layer that computes x; where x is a model input, with the input's layout layer, which for a 3-D input is a Reshape on the CPU of RK3566/RK3568, and of RK3588 when its channels are not a multiple of 16 (placed as an Identity of the input: rules.identity_of_a_3d_model_input).

    Measured with rknn-toolkit2 2.5.0 on RK3588 and RK3566 (2026-12-04, int8, opset 13;
    tests/forms_models.py normalised_input_pack): a [1, 32, 80] model input minus zeros ([80] or
    a scalar), divided or multiplied by ones, then swapped into a Conv1d or read by a Relu: on
    RK3566 each such node on the CPU, on RK3588 on the NPU; after a Relu: NPU on both; the same
    chains with other constants: a layer each, on the NPU. The constant first, x * 1 is not
    removed (fresh4 hf_dac: rules.scalar_first_mul_before_an_add). PatchTST's series [1, 64, 3]
    times its mask of ones (scaled_input_pack): on the CPU of RK3588 too (3 channels).
    x + 0 (2026-12-05, tests/forms_models.py div_affine_pack; fresh7 timm_regnetz_c16_evos, EvoNorm-S0's
    bias of zeros after its Div by a computed tensor): a Conv map divided by Sigmoid(map) + 1 (CPU),
    times a weight [1, 32, 1, 1], plus a bias of zeros [1, 32, 1, 1]: the Add "fused by
    remove_invalid_add", with the CPU Div, on RK3588 and RK3566; a bias not zero keeps its Add on
    the NPU. Only x + 0 after a Div or a Softmax is taken as removed (ADD_OF_ZEROS_REMOVED_AFTER).
    The constant first (2026-12-05, tests/forms_models.py identity_first_pack; fresh8 hf_zoedepth, its
    attractors' sum started from zeros_like(bins), then divided by n_attractors = 1): 0 + x and 1 * x
    are removed the same way when the constant has the result's whole shape ([1, 16, 8, 8] after a
    CPU Div: the Add, the Mul and a Div by one after the Add all with the Div, on RK3588 and RK3566;
    after a Softmax, with it: the CPU on RK3566, the NPU on RK3588); zeros [1, 16, 1, 1],
    [1, 1, 1, 8], [16, 8, 8] or a scalar first keep their own NPU layer, ones [1, 16, 1, 1] first
    theirs in float (IDENTITY_FIRST_REMOVED_AFTER).
    """
    for node in [n for n in graph.nodes if n.op_type in IDENTITY_OPERAND]:
        found = _identity_operands(node)
        if found is None or node.outputs[0].is_model_output:
            continue
        x, first = found
        producer = graph.producer(x.name)
        after = IDENTITY_FIRST_REMOVED_AFTER if first else ADD_OF_ZEROS_REMOVED_AFTER if node.op_type == "Add" else None
        if after is not None and (producer is None or producer.op_type not in after):
            continue
        if producer is None:
            if x.is_graph_input:
                graph.fuse([node], "Identity", attributes={}, inputs=[x])
        elif len(producer.outputs) == 1 and graph.only_consumer(x.name) is node:
            graph.fuse([producer, node], producer.op_type, leader=producer, domain=producer.domain, inputs=list(producer.inputs), outputs=list(node.outputs))


# The makers of a 3-D result on the CPU that a view into a map joins (measured: a Div by a computed tensor, a Log,
# a Sqrt; view_of_a_cpu_3d_result_pack), the one-element scalings between them that join too, and the chips where
# a view that appends the unit axis last joins as well (on RK3588 it keeps its own NPU layer).
CPU_3D_MAKERS = ("Div", "Log", "Sqrt")
SCALAR_STEPS = ("Mul", "Div")
TRAILING_UNIT_VIEW_JOINS_CHIPS = ("rk3566", "rk3568")
MAP_OF_UNIT_CHANNEL_PERM = [0, 3, 1, 2]


def _cpu_3d_maker(node) -> bool:
    """A Log, a Sqrt, or a Div by a computed tensor, of a 3-D result (the rules put each on the CPU)."""
    if node.op_type not in CPU_3D_MAKERS or len(node.outputs) != 1 or len(_static_shape(node.outputs[0]) or ()) != 3:
        return False
    return node.op_type != "Div" or (len(node.inputs) == 2 and not _known(node.inputs[1]))


def _scalar_steps_to_a_view(graph, maker) -> tuple[list, object] | None:
    """(the Muls and Divs by one value that alone read `maker`'s result one after another, the Unsqueeze or
    Reshape that then alone reads it and makes it 4-D), or None."""
    steps, node = [], maker
    while True:
        nxt = graph.only_consumer(node.outputs[0].name) if not node.outputs[0].is_model_output else None
        if nxt is None:
            return None
        if nxt.op_type in ("Unsqueeze", "Reshape"):
            return steps, nxt if len(_static_shape(nxt.outputs[0]) or ()) == 4 else None
        if nxt.op_type not in SCALAR_STEPS or nxt.inputs[0].name != node.outputs[0].name or _scalar(nxt.inputs[1]) is None:
            return None
        steps.append(nxt)
        node = nxt


def _scalings_fold_forward(graph, layout) -> bool:
    """Whether what alone reads `layout` (the view, or the Transpose after it) takes a scaling in: a Mul or a
    Div by one value (the two merge) or a Conv (its weights scaled)."""
    reader = graph.only_consumer(layout.outputs[0].name) if not layout.outputs[0].is_model_output else None
    if reader is None or reader.inputs[0].name != layout.outputs[0].name:
        return False
    return reader.op_type == "Conv" or (reader.op_type in SCALAR_STEPS and _scalar(reader.inputs[1]) is not None)


def _joined_layout(graph, view, maker_shape, chip) -> list | None:
    """The view (and the Transpose after it) that run with a CPU maker of `maker_shape` [N, A, B]: a map
    [N, 1, A, B]; [N, A, B, 1] swapped into it; [N, A, B, 1] alone on TRAILING_UNIT_VIEW_JOINS_CHIPS ([] elsewhere);
    None for other views."""
    n, a, b = maker_shape
    out = tuple(_static_shape(view.outputs[0]))
    if out in ((n, 1, a, b), (1, n, a, b)):
        return [view]
    if out != (n, a, b, 1):
        return None
    swap = graph.only_consumer(view.outputs[0].name) if not view.outputs[0].is_model_output else None
    if swap is not None and swap.op_type == "Transpose" and _perm(swap) == MAP_OF_UNIT_CHANNEL_PERM:
        return [view, swap]
    return [view] if chip in TRAILING_UNIT_VIEW_JOINS_CHIPS else []


@RULES.graph_pass("Unsqueeze", "Reshape", chips=("rk3588", "rk3566", "rk3568"), OBSERVED=TOOLKIT_OBSERVED, chip_key=TRAILING_UNIT_VIEW_JOINS_CHIPS.__contains__)
def view_of_a_cpu_3d_result_into_a_map(graph, chip):
    """{OBSERVED} runs on the CPU, with the CPU node that made it, the view of a 3-D result [N, A, B] into a map [N, 1, A, B] (an Unsqueeze or a Reshape; or [N, A, B, 1] swapped by a Transpose [0, 3, 1, 2] into it, as tf2onnx writes expand_dims then NHWC), where a Log, a Sqrt or a Div by a computed tensor made it, whatever reads the map: ZoeDepth's log-binomial probabilities, DNSMOS's log power spectrum made a one-channel image. On RK3566/RK3568 the view [N, A, B, 1] alone runs there too; RK3588 keeps that one on its NPU. A Mul or Div by one value between the maker and the view is merged into what reads the map when that is another such scaling or a Conv (its weights scaled): it has no layer left and is named with the maker; before anything else it keeps its NPU layer, and the view, now of an NPU result, stays on the NPU.

    Measured with rknn-toolkit2 2.5.0 on RK3588 and RK3566 (2026-12-05, int8, opset 13; tests/forms_models.py
    view_of_a_cpu_3d_result_pack; fresh8 hf_zoedepth and pypi_dnsmos): a Conv's two channels [1, 16, 16] (and
    [1, 8, 24], [1, 64, 64], [1, 90, 161]), one divided by their sum (CPU), or a Log or a Sqrt of one; Unsqueeze at 0
    or 1 or Reshape to [1, 1, A, B]: CPU on both chips, read by a scalar Mul, a Conv, a Relu, an Add of a vector
    (and by a Sub from a scalar, a Clip, a Sigmoid or an Add of a scalar, in single models); at 3: CPU on RK3566, NPU
    on RK3588; then a Transpose [0, 3, 1, 2]: both CPU on both chips; after a Div by a constant (NPU) the view is on
    the NPU. A scalar Mul or Div between, then the map read by a scalar Mul or a Conv: the Mul on the CPU with the view
    (with the view at 3 on RK3588 too); read by a Relu or an Add of a vector: the Mul and the view on the NPU; an Add
    of a vector or a Relu between: the view on the NPU. Not modelled: Unsqueeze at 2 (the toolkit names no layer for
    it), a result also read by another node (measured once: the view still on the CPU), a Mul step then a view at 3
    read by a Relu (RK3566 ran the Relu on the CPU).
    """
    for maker in [n for n in graph.nodes if _cpu_3d_maker(n)]:
        found = _scalar_steps_to_a_view(graph, maker)
        if found is None or found[1] is None:
            continue
        steps, view = found
        layout = _joined_layout(graph, view, _static_shape(maker.outputs[0]), chip)
        if layout is None or (steps and not _scalings_fold_forward(graph, ([view] + layout)[-1])):
            continue
        joined = [maker, *steps, *layout]
        if len(joined) > 1:
            graph.fuse(joined, maker.op_type, leader=maker, domain=maker.domain, inputs=list(maker.inputs), outputs=list(joined[-1].outputs))


@RULES.graph_pass("Reshape", OBSERVED=TOOLKIT_OBSERVED)
def heads_view_joins_the_reduce_max(graph, chip):
    """{OBSERVED} gives no layer of its own to the view [1, H, T] -> [1, H, h, w] (H of 2 or more, h * w = T) of a ReduceMax over the last axis without its kept axis (YOLO-World's max-sigmoid attention: the text guide's best match per position and head, viewed back to the map): it runs with the ReduceMax, on the CPU.

    Measured with rknn-toolkit2 2.5.0 on RK3588 and RK3566 (2026-12-04, int8, opset 13;
    tests/forms_models.py max_sigmoid_pack, 11 blocks of 2, 3 or 4 heads at 4x4 to 20x20, and the
    10 blocks of CONSTANT_PRODUCT_MEASURED): "fused (no layer of its own); runs with" the
    ReduceMax in every one. One head ([1, 1, 400] -> [1, 1, 20, 20]) keeps a Reshape layer (NPU on
    RK3588, CPU on RK3566): left to the rules.
    """
    for view in [n for n in graph.nodes if n.op_type == "Reshape"]:
        x = view.inputs[0] if view.inputs else None
        reduce = graph.producer(x.name) if x is not None and x.name else None
        if reduce is None or reduce.op_type != "ReduceMax" or int(reduce.attr("keepdims", 1)) != 0 or graph.only_consumer(x.name) is not view:
            continue
        source, reduced, out = _static_shape(reduce.inputs[0]), _static_shape(x), _static_shape(view.outputs[0]) if view.outputs else None
        axes = reduce.attr("axes") if reduce.has_attr("axes") else _ints(reduce.inputs[1]) if len(reduce.inputs) > 1 else None
        if not source or not reduced or not out or axes is None or [a % len(source) for a in axes] != [len(source) - 1]:
            continue
        if len(reduced) == 3 and reduced[1] >= 2 and len(out) == 4 and out[:2] == reduced[:2] and out[2] * out[3] == reduced[2]:
            graph.fuse([reduce, view], "ReduceMax", leader=reduce, inputs=list(reduce.inputs), outputs=list(view.outputs))


# ---------------------------------------------------------------------------------------------
# Layout: the Transposes the toolkit turns into reshapes, merges into its MatMuls, or cancels.
# On RK3566/RK3568 an NPU Transpose layer is rare (DOC_COMPILER 3.1.58 allows few perms), so a
# Transpose these passes leave becomes a CPU layer there (OBSERVED_ON_CPU in rules.py).
# ---------------------------------------------------------------------------------------------


def _perm(node) -> list[int] | None:
    x = node.inputs[0] if node.inputs else None
    if x is None or x.rank is None:
        return None
    perm = node.attr("perm")
    return [int(p) for p in perm] if perm is not None else list(reversed(range(x.rank)))


def _moves_only_unit_axes(node) -> bool:
    """A Transpose that keeps the order of the axes longer than one: the same data, reshaped."""
    perm, x = _perm(node), node.inputs[0]
    if perm is None or x.shape is None or not all(isinstance(d, int) for d in x.shape):
        return False
    kept = [p for p in perm if x.shape[p] != 1]
    return kept == sorted(kept)


# The chips where the merge of one token's heads before a residual Linear runs on the CPU, the
# batch from which it does (measured 4 and 8; 1, 2 and 3 on the NPU) and the head-size block.
ONE_TOKEN_MERGE_CHIPS = ("rk3588",)
ONE_TOKEN_MERGE_MIN_BATCH = 4
ONE_TOKEN_MERGE_ALIGN = 16
ONE_TOKEN_MERGE_ATTRIBUTE = "rknn_one_token_heads_merge"


def _residual_linear(graph, node) -> bool:
    """Whether `node`'s result goes only into a Linear (MatMul by a constant, then optionally a
    bias Add) whose result an Add of two computed tensors reads (a residual connection)."""
    linear = _next(graph, node, "MatMul")
    if linear is None or not _known(linear.inputs[1]):
        return False
    after = _next(graph, linear, "Add")
    if after is not None and any(_known(t) for t in after.inputs[:2]):
        after = _next(graph, after, "Add")  # the bias
    return after is not None and not any(_known(t) for t in after.inputs[:2])


def _one_token_heads_merge(graph, node) -> int | None:
    """The head size where `node` is a Reshape [B, 1, H, D] -> [B, 1, H*D] (H > 1) reading a
    Transpose [0, 2, 1, 3] (attention's heads merged back, one token per batch entry), else None."""
    before = graph.producer(node.inputs[0].name) if node.inputs else None
    x, out = _static_shape(node.inputs[0]) if node.inputs else None, _static_shape(node.outputs[0]) if node.outputs else None
    if before is None or before.op_type != "Transpose" or _perm(before) != [0, 2, 1, 3] or x is None or out is None:
        return None
    return x[3] if len(x) == 4 and x[1] == 1 and x[2] > 1 and out == (x[0], 1, x[2] * x[3]) else None


@RULES.graph_pass("Reshape", OBSERVED=TOOLKIT_OBSERVED, BATCH=ONE_TOKEN_MERGE_MIN_BATCH, ALIGN=ONE_TOKEN_MERGE_ALIGN, chip_key=ONE_TOKEN_MERGE_CHIPS.__contains__)
def one_token_heads_merge_before_a_residual(graph, chip):
    """On RK3588 {OBSERVED} runs on the CPU the Reshape that merges attention's heads back ([B, H, 1, D] through a Transpose [0, 2, 1, 3] to [B, 1, H*D]) when each of B >= {BATCH} token sets holds one token, the head size is not a multiple of {ALIGN} and a Linear whose result is added residually reads it (transformers' MobileViT's last stage at 64 x 64: 4 patch positions of 1 patch, 4 heads of 60).

    Found on the held-out pool pair hf_mobilevit/rk3588 and measured on its attention form (q, k
    and v each a Linear; tests/forms_models.py MOBILEVIT_STAGE_PACKS) on RK3588: with the
    residual Add, batch 4 x 1 token, 4 heads of 60, 56 or 36, 2 heads of 56, batch 8 (CPU);
    heads of 64 or 48, batch 1, 2 or 3, 2, 4 or 16 tokens (NPU); without the residual Add
    (NPU). RK3566 places these merges by its own rules.
    """
    for node in [n for n in graph.nodes if n.op_type == "Reshape"]:
        d = _one_token_heads_merge(graph, node)
        if d is not None and d % ONE_TOKEN_MERGE_ALIGN and node.inputs[0].shape[0] >= ONE_TOKEN_MERGE_MIN_BATCH and _residual_linear(graph, node):
            graph.fuse([node], "Reshape", attributes={ONE_TOKEN_MERGE_ATTRIBUTE: int(d)})


UNIT_AXES_SWAP_ATTRIBUTE = "rknn_unit_axes_swap"  # the perm of the Transpose a Reshape stands for (later passes read it)


# The recurrent operator whose layer the toolkit runs on the CPU (DOC_COMPILER: no RNN on any NPU); an LSTM's and a
# GRU's are NPU layers, and a unit-axes Transpose of their output a Reshape as any other.
CPU_RECURRENT_OP = "RNN"


@RULES.graph_pass("Transpose", OBSERVED=TOOLKIT_OBSERVED, RNN=CPU_RECURRENT_OP)
def unit_axes_swap_of_an_rnn_joins_it(graph, chip):
    """{OBSERVED} runs on the CPU, with the {RNN} that writes it, a Transpose that only moves axes of length 1 of that {RNN}'s sequence output Y [T, directions, 1, H] (torch.onnx's [0, 2, 1, 3] before the directions are joined: DeepSpeech's bidirectional nn.RNN), and a Reshape after it that only drops or moves unit axes too (a forward {RNN}'s [T, 1, 1, H] viewed [T, 1, H]); a Reshape that joins the directions [T, 1, 2, H] into [T, 1, 2H] is a layer of its own. The pass fuses them into the {RNN}, which the rules place; an LSTM's output so swapped is a Reshape on the NPU (transpose_of_unit_axes_is_a_reshape).

    Measured with rknn-toolkit2 2.5.0 on RK3588 and RK3566 (2026-12-06, int8, opset 13; h19-rknorm,
    tests/forms_models.py rnn_directions_pack, found on fresh10's pkg_deepspeech): a bidirectional RNN (Relu or
    Tanh) or a forward one (Relu) over 100 steps of 128, hidden 128: the RNN and the Transpose on the CPU, the
    forward one's Reshape too; the bidirectional one's Reshape NPU on RK3588 (CPU on RK3566, after an LSTM as
    well: not modelled); the same tail after a bidirectional LSTM: the Transpose NPU on both chips.
    """
    for rnn in [n for n in graph.nodes if n.op_type == CPU_RECURRENT_OP]:
        swap = graph.only_consumer(rnn.outputs[0].name) if rnn.outputs and rnn.outputs[0].name else None
        if swap is None or swap.op_type != "Transpose" or not _moves_only_unit_axes(swap) or swap.outputs[0].is_model_output:
            continue
        members = [rnn, swap]
        view = graph.only_consumer(swap.outputs[0].name)
        if view is not None and view.op_type == "Reshape" and _only_unit_axes_differ(swap.outputs[0], view.outputs[0]):
            members.append(view)
        graph.fuse(members, rnn.op_type, leader=rnn)


def _only_unit_axes_differ(x, y) -> bool:
    """Whether a view of static `x` as static `y` only drops, adds or moves axes of length 1."""
    xs, ys = _static_shape(x), _static_shape(y)
    return xs is not None and ys is not None and [d for d in xs if d != 1] == [d for d in ys if d != 1]


@RULES.graph_pass("Transpose", OBSERVED=TOOLKIT_OBSERVED)
def transpose_of_unit_axes_is_a_reshape(graph, chip):
    """{OBSERVED} turns a Transpose that only moves axes of length 1 (the order of the others kept) into a Reshape, which it merges with the reshapes around it (its passes fuse_reshape_transpose, fuse_transpose_reshape): it is placed as a Reshape.

    Measured on lstm_stateful (the batch-first Transposes of a batch-1 LSTM: Reshape layers on
    the NPU) and on the 1x1 detection maps of ssdlite320_mobilenet_v3_large_head.
    """
    for node in [n for n in graph.nodes if n.op_type == "Transpose"]:
        if _moves_only_unit_axes(node):
            graph.fuse([node], "Reshape", attributes={UNIT_AXES_SWAP_ATTRIBUTE: _perm(node)})


# The Reshape joining a recurrent layer's directions for Slices of their halves, as the pass below marks it: the steps T.
DIRECTIONS_JOIN_ATTRIBUTE = "rknn_directions_joined_for_halves"
DIRECTIONS_JOIN_CPU_MIN_STEPS = 20  # measured: 16 steps NPU, 20, 24, 32, 100 and 104 CPU
RECURRENT_OPS = ("LSTM", "GRU", "RNN")


@RULES.graph_pass("Reshape", chips=("rk3566", "rk3568"), OBSERVED=TOOLKIT_OBSERVED, STEPS=DIRECTIONS_JOIN_CPU_MIN_STEPS)
def directions_joined_for_their_halves(graph, chip):
    """{OBSERVED} runs on the CPU of RK3566/RK3568 the Reshape that joins a bidirectional recurrent layer's directions into its features (Y [T, 2, 1, H], after the unit-axes swap [0, 2, 1, 3] or not, viewed [T, 1, 2H] or [T, 2H]) when only Slices read it (the halves taken apart again: DeepSpeech sums its RNN's directions) and the sequence has {STEPS} steps or more; read by a MatMul, or over 16 steps, it is on the NPU. The pass marks it for the rule directions_view_for_their_halves (RK3588: NPU).

    Measured with rknn-toolkit2 2.5.0 on RK3566 (h19-rknorm, 2026-12-06, int8, opset 13; tests/forms_models.py
    rnn_directions_pack, directions_view_pack, directions_view_pack_2 and _3, found on fresh10's pkg_deepspeech): a
    bidirectional LSTM (hidden 32) or RNN (hidden 128) joined so and read by the two halves' Slices: CPU at 20, 24,
    32, 100 and 104 steps, NPU at 16; read by a MatMul at 100 and 16 steps: NPU; a MatMul's [100, 1, 2, 32] (Relu)
    joined so for the halves: NPU.
    """
    for view in [n for n in graph.nodes if n.op_type == "Reshape"]:
        readers = graph.consumers(view.outputs[0].name) if view.outputs else []
        if not readers or any(r.op_type != "Slice" for r in readers) or not _own_node(graph, view):
            continue
        source = graph.producer(view.inputs[0].name)
        if source is not None and source.op_type == "Reshape" and source.attr(UNIT_AXES_SWAP_ATTRIBUTE) is not None:
            source = graph.producer(source.inputs[0].name)
        y = _static_shape(view.inputs[0])
        if source is None or source.op_type not in RECURRENT_OPS or source.attr("direction") not in ("bidirectional", b"bidirectional"):
            continue
        if y is not None and y[0] >= DIRECTIONS_JOIN_CPU_MIN_STEPS:
            graph.fuse([view], "Reshape", attributes={DIRECTIONS_JOIN_ATTRIBUTE: int(y[0])})


# RK3588 alone: the chips of the RK3588-only passes that follow (named when the first of them was
# GC ViT's Tile of ones, which rules.tile_by_its_axes now places with every other Tile).
TILE_OF_ONES_CHIPS = ("rk3588",)
# Chips whose Tile placement below was measured (RK3568 taken to behave as RK3566, not measured);
# other chips keep every Tile on the CPU (rules.OBSERVED_ON_CPU_ALL).
TILE_BY_AXES_CHIPS = ("rk3588", "rk3566", "rk3568")
TILE_FOUR_D_CHANNELS_OF_ONE_ONLY = ("rk3588",)  # a 4-D Tile of the channels on the NPU only from one channel


def tile_runs_on_the_npu(node, chip) -> bool | None:
    """Whether rknn-toolkit2 2.5.0 runs this Tile on the chip's NPU, from its input's shape and its
    repeats (None: not known, the repeats computed at run time or the shape open). Measured on
    RK3588 and RK3566 (tests/forms_models.py tile_ones_pack, tile_axis_pack, tile_axis_pack_2):
    up to 3-D, a Tile that repeats only axes of size 1 (a broadcast: TimeSformer's class token
    [1, 1, 64] repeated [1, 4, 1]) runs on the NPU, one that repeats an axis of size 2 or more on
    the CPU; 4-D, one repeated axis among the last three runs on the NPU (the channels, on RK3588,
    only from one channel), the batch axis or two axes on the CPU; repeats of ones: the NPU.
    5-D as up to 3-D (tile_five_d_pack, RK3588 and RK3566: RealPLKSR's [1, 3, 1, 64, 64] repeated
    [1, 1, 16, 1, 1] on the NPU; the channels, or an axis of size 2, repeated: the CPU)."""
    x = node.inputs[0] if node.inputs else None
    repeats = _value_of(node.inputs[1]) if len(node.inputs) > 1 else None
    shape = _static_shape(x)
    if repeats is None or shape is None or repeats.size != len(shape):
        return None
    repeated = [axis for axis, r in enumerate(repeats.reshape(-1).tolist()) if int(r) != 1]
    if not repeated:
        return True
    if len(shape) != 4:
        return all(shape[axis] == 1 for axis in repeated) if len(shape) <= 5 else None
    if len(repeated) != 1 or repeated[0] == 0:
        return False
    return repeated[0] != 1 or shape[1] == 1 or chip not in TILE_FOUR_D_CHANNELS_OF_ONE_ONLY


TILED_QUERY_ATTRIBUTE = "rknn_heads_of_a_cpu_tile"
TILED_QUERY_HOPS = 3  # Transpose, Mul: what lies between the heads' Reshape and the product (GC ViT)


def _chain_meets(first, step, target: str, through: tuple[str, ...], hops: int) -> bool:
    """Walking from the node `first` by `step` (a node -> the next one, or None), a `target` node
    comes before anything but at most `hops` nodes of the `through` op types."""
    node = first
    for _ in range(hops + 1):
        if node is None:
            return False
        if node.op_type == target:
            return True
        if node.op_type not in through:
            return False
        node = step(node)
    return False


def _reaches_a_product(graph, node, hops: int = TILED_QUERY_HOPS) -> bool:
    """`node`'s result goes, through at most `hops` Transposes or Muls each read alone, into a MatMul."""

    def reader(n):
        return graph.only_consumer(n.outputs[0].name) if n.outputs else None

    return _chain_meets(reader(node), reader, "MatMul", ("Transpose", "Mul"), hops)


# What heads_of_a_cpu_tile reads of its chip: RK3588 (a product reader only, the channels rule of a
# 4-D Tile) or the others it serves, which it treats alike.
TILED_QUERY_CHIP_KEY = {"rk3588": "rk3588", "rk3566": "rk3566", "rk3568": "rk3566"}.get


@RULES.graph_pass("Reshape", chips=("rk3588", "rk3566", "rk3568"), OBSERVED=TOOLKIT_OBSERVED, chip_key=TILED_QUERY_CHIP_KEY)
def heads_of_a_cpu_tile(graph, chip):
    """{OBSERVED} runs on the CPU, with the Tile, the Reshape that splits a tiled query into heads when it goes (through its heads' Transpose and the scale) into a MatMul (GC ViT's global query repeated over the windows); the same Reshape read by other layers stays on the NPU. The pass marks it for the rule heads_of_a_cpu_tile.

    Measured with rknn-toolkit2 2.5.0 on RK3588 (2026-12-04, int8; tests/forms_models.py
    tiled_query_pack, opset 18): a [1, 2, 2, C] query tiled 4 or 16 times, split into 2 or 4
    heads of 24 or 32, swapped, scaled, into q @ k^T: the Reshape on the CPU, the Transpose and
    Mul on the NPU; the same chain into a Relu instead of the product: NPU; a query from a Sigmoid
    or a (CPU) Mish instead of the Tile: NPU. Seen, not modelled: a [1, 4, C] query tiled the same
    way (its Reshape on the CPU; the audit joins it with its Transpose into the product, on the
    NPU), and in timm's own WindowAttentionGlobal (and fresh2 gcvit_xxtiny) the heads' Transpose
    after the Reshape ran on the CPU too. After a Tile on the NPU (repeats of ones; rules.tile_by_its_axes) the Reshape stays on the NPU.
    On RK3566 (tiled_query_pack_rk3566, 2026-12-04) the Reshape and the heads' Transpose [0, 2, 1, 3]
    after it run on the CPU with the Tile whatever reads them (a product or a Relu), so the pass
    joins them there (RK3568 taken alike). Measured, not modelled: after a Mish (on the CPU) the
    same; after a Sigmoid the Reshape on the NPU and the Transpose on the CPU.
    """
    for node in [n for n in graph.nodes if n.op_type == "Reshape"]:
        source = graph.producer(node.inputs[0].name) if node.inputs else None
        if source is None or source.op_type != "Tile" or tile_runs_on_the_npu(source, chip) is not False:
            continue
        if chip == "rk3588" and _reaches_a_product(graph, node):
            graph.fuse([node], "Reshape", attributes={TILED_QUERY_ATTRIBUTE: 1})
        elif chip != "rk3588":
            swap = graph.only_consumer(node.outputs[0].name) if node.outputs else None
            swap = swap if swap is not None and swap.op_type == "Transpose" and _perm(swap) == [0, 2, 1, 3] else None
            graph.fuse([node, swap] if swap is not None else [node], "Reshape", leader=node, attributes={TILED_QUERY_ATTRIBUTE: 1})


# The largest index tensor read (the engine computes values up to 1 << 16 elements: MViTv2's
# [1, 2, 64, 64, 4] grid is 32768).
SCATTER_INDICES_MAX_ELEMENTS = 1 << 16


def _every_element_in_order(indices: np.ndarray, data_shape: tuple) -> bool:
    """Whether `indices` (ScatterND's, [..., k]) name every element of the data's first k axes
    once, in row-major order: the grid np.indices would make for those axes."""
    k = indices.shape[-1] if indices.ndim else 0
    if not 0 < k <= len(data_shape) or tuple(indices.shape[:-1]) != tuple(data_shape[:k]):
        return False
    grid = np.stack(np.meshgrid(*[np.arange(d) for d in data_shape[:k]], indexing="ij"), axis=-1)
    return bool(np.array_equal(indices, grid))


@RULES.graph_pass("ScatterND", OBSERVED=TOOLKIT_OBSERVED)
def scatter_of_every_element_is_its_updates(graph, chip):
    """{OBSERVED} replaces a ScatterND whose constant indices name every element of the data once, in order (MViTv2's `attn[:, :, sp_idx:, sp_idx:] = ...` with no class token), by its updates, where every other ScatterND runs on the CPU: it has no layer of its own.

    Measured with rknn-toolkit2 2.5.0 on RK3588 and RK3566 (tests/forms_models.py scatter_pack,
    opset 13): indices of every element of [1, 2, 16, 16], [1, 8, 4, 4] and [1, 3, 9, 9] in
    row-major order: NPU (a model input read only by the overwritten data is dropped from the
    converted model: the rewrite is in the graph optimiser); the same grid reversed along one
    axis, the [:, :, 1:, 1:] block of [1, 2, 17, 17] (a class token) and two rows: CPU.
    Not measured: RK3576, RK3562, RV1106, the `reduction` attribute (opset 16).
    """
    for node in [n for n in graph.nodes if n.op_type == "ScatterND"]:
        if len(node.inputs) < 3 or node.attr("reduction") not in (None, "none", b"none"):
            continue
        shape, indices = _static_shape(node.inputs[0]), node.inputs[1]
        if shape is None or not (indices.is_constant or indices.foldable) or (indices.numel or 0) > SCATTER_INDICES_MAX_ELEMENTS:
            continue
        if indices.value is not None and _every_element_in_order(indices.value, shape):
            graph.eliminate(node)


def _same_columns_of_every_row(indices: np.ndarray, data_shape: tuple) -> bool:
    """Whether `indices` ([*leading, m, r] for data of rank r) name, for every position of the data's leading
    axes in row-major order, the same m positions of its last axis (boxes[..., :2], boxes[..., [0, 2]])."""
    r = len(data_shape)
    if r < 2 or indices.ndim != r + 1 or indices.shape[-1] != r or tuple(indices.shape[:-2]) != tuple(data_shape[:-1]):
        return False
    lead = np.stack(np.meshgrid(*[np.arange(d) for d in data_shape[:-1]], indexing="ij"), axis=-1)
    columns = indices[..., -1]
    return bool(np.array_equal(indices[..., :-1], np.broadcast_to(lead[..., None, :], indices[..., :-1].shape))
                and (columns == columns.reshape(-1, columns.shape[-1])[0]).all())


# Chips measured for the pass below: RK3576, RK3562 and RV1106 placed scatter_box_pack, _2 and _3 as RK3588 and RK3566
# did (scripts/probe_rknn_chips.py, tests/fixtures/forms/chip_verdicts.json, 2026-12-05).
SAME_COLUMNS_SCATTER_CHIPS = ("rk3588", "rk3576", "rk3566", "rk3568", "rk3562", "rv1106")


@RULES.graph_pass("ScatterND", chips=SAME_COLUMNS_SCATTER_CHIPS, OBSERVED=TOOLKIT_OBSERVED)
def scatter_of_the_same_columns_of_every_row(graph, chip):
    """{OBSERVED} runs on the NPU a ScatterND whose constant indices write, in every row of the data (all its leading axes, in order), the same positions of its last axis (Conditional DETR's `boxes[..., :2] += reference`), unless its data is another ScatterND's result: the pass rewrites it into a Concat along the last axis.

    Measured with rknn-toolkit2 2.5.0 on RK3588 and RK3566 (2026-12-05, int8; tests/forms_models.py
    scatter_box_pack, _2 and _3: a Relu of an input written by a Relu of another, a Sigmoid after): values
    [0, 1], [2, 3] and [0, 2] of each of [1, 20, 4]'s boxes, [0, 1] of [1, 256, 4] and of [1, 1, 20, 4], updates
    computed from the data's own Slice or not, and a second such ScatterND after a Relu of the first: NPU; the
    same written straight into another ScatterND's result (Conditional DETR's second): CPU; the [:, 1:, 1:]
    block of [1, 17, 17], every element of [1, 20, 4] with axis 1 reversed, and whole rows (indices [1, 5, 2]): CPU.
    RK3576, RK3562 and RV1106 (scripts/probe_rknn_chips.py, 2026-12-05): the three packs placed the same.
    """
    scatters = [n for n in graph.nodes if n.op_type == "ScatterND"]
    chained = {id(n) for n in scatters if graph.producer(n.inputs[0].name) in scatters}  # decided before any rewrite
    for node in scatters:
        if len(node.inputs) < 3 or id(node) in chained or node.attr("reduction") not in (None, "none", b"none"):
            continue
        shape, indices = _static_shape(node.inputs[0]), node.inputs[1]
        if shape is None or not (indices.is_constant or indices.foldable) or (indices.numel or 0) > SCATTER_INDICES_MAX_ELEMENTS:
            continue
        if indices.value is not None and _same_columns_of_every_row(indices.value, shape):
            graph.fuse([node], "Concat", attributes={"axis": len(shape) - 1})


RELATIVE_POSITIONS_ATTRIBUTE = "rknn_decomposed_relative_positions"
RELATIVE_POSITIONS_ALIGN = 16  # OBSERVED (RK3588): key tokens a multiple of it keep the merge on the NPU


def _merges_query_and_key_grids(node) -> tuple | None:
    """The output [N, h, Tq, Tk] of a Reshape [N, h, qh, qw, kh, kw] -> [N, h, qh*qw, kh*kw], else None."""
    x, out = _static_shape(node.inputs[0]) if node.inputs else None, _static_shape(node.outputs[0]) if node.outputs else None
    if node.op_type != "Reshape" or not x or not out or len(x) != 6 or len(out) != 4:
        return None
    return out if out == (x[0], x[1], x[2] * x[3], x[4] * x[5]) else None


@RULES.graph_pass("Reshape", "Expand", chips=TILE_OF_ONES_CHIPS, OBSERVED=TOOLKIT_OBSERVED, ALIGN=RELATIVE_POSITIONS_ALIGN)
def decomposed_relative_positions_merge(graph, chip):
    """{OBSERVED} runs on the CPU the Reshape that merges MViTv2's attention plus its decomposed relative positions ([N, h, qh, qw, kh, kw], the positions added at run time, from Einsums of the query) back into [N, h, Tq, Tk], and the Expand and Reshape after it, when the key tokens Tk are not a multiple of {ALIGN}. The pass marks them for the rule decomposed_relative_positions_merge.

    Measured with rknn-toolkit2 2.5.0 on RK3588 (2026-12-04, int8): timm's own MultiScaleAttention
    (seven blocks in one model) with 4 and 9 key tokens: CPU; 16: NPU; tests/forms_models.py
    relative_positions_pack (q @ k^T viewed 6-D, plus Einsum-made positions unsqueezed on the last
    and the fifth axis, merged, Expand, Reshape, the ScatterND of every element, Softmax): CPU at 4
    and 9 key tokens, NPU at 16; with a constant added instead of the Einsums: NPU at 4.
    Not measured: RK3566, other ways of computing the positions.
    """
    for node in [n for n in graph.nodes if n.op_type == "Reshape"]:
        out = _merges_query_and_key_grids(node)
        added = graph.producer(node.inputs[0].name) if out is not None else None
        if added is None or added.op_type != "Add" or all(_known(t) for t in added.inputs[1:]) or out[3] % RELATIVE_POSITIONS_ALIGN == 0:
            continue
        if not any(_upstream_einsum(graph, t) for t in added.inputs):
            continue
        chain, nxt = [node], graph.only_consumer(node.outputs[0].name)
        while nxt is not None and nxt.op_type in ("Expand", "Reshape") and len(chain) < 3:
            chain.append(nxt)
            nxt = graph.only_consumer(nxt.outputs[0].name)
        for member in chain:
            graph.fuse([member], member.op_type, attributes={RELATIVE_POSITIONS_ATTRIBUTE: int(out[3])})


def _upstream_einsum(graph, tensor, hops: int = 3) -> bool:
    """`tensor` is made by an Einsum, through at most `hops` Adds or Unsqueezes."""
    first = graph.producer(tensor.name) if tensor is not None and tensor.present else None

    def writer(n):
        return next((graph.producer(t.name) for t in n.inputs if t.present and not _known(t) and graph.producer(t.name) is not None and graph.producer(t.name).op_type in ("Einsum", "Unsqueeze", "Add")), None)

    return _chain_meets(first, writer, "Einsum", ("Add", "Unsqueeze"), hops)


def _static_shape(t) -> tuple[int, ...] | None:
    return tuple(t.shape) if t is not None and t.shape is not None and all(isinstance(d, int) for d in t.shape) else None


# Chips whose NPU runs no Transpose layer but this one (RK3568 taken to behave as RK3566, not measured).
BLOCK_MOVE_CHIPS = ("rk3566", "rk3568")
# The orders of a space-to-depth or depth-to-space written as Reshape, Transpose, Reshape that
# rknn-toolkit2 2.5.0 runs on RK3566's NPU: space-to-depth with the block axes first (DCR, TResNet's
# stem), depth-to-space with the block axes first (DCR) or after the channels (CRD, PixelShuffle).
SPACE_TO_DEPTH_DCR = [0, 3, 5, 1, 2, 4]
DEPTH_TO_SPACE_PERMS = ([0, 3, 4, 1, 5, 2], [0, 1, 4, 2, 5, 3])


def _block_move(graph, node) -> bool:
    """Whether `node`, a rank-6 Transpose, moves the blocks of a space-to-depth (DCR order) or a
    depth-to-space (DCR or CRD) between a Reshape from a 4-D map and one back to a 4-D map that
    merges each moved block with its neighbour, the batch left alone."""
    perm, before, after = _perm(node), graph.producer(node.inputs[0].name), _next(graph, node, "Reshape")
    if perm is None or before is None or after is None or before.op_type != "Reshape":
        return False
    source, moved, merged = _static_shape(before.inputs[0]), _static_shape(node.outputs[0]), _static_shape(after.outputs[0])
    if source is None or moved is None or merged is None or len(source) != 4 or len(moved) != 6 or merged[0] != source[0]:
        return False
    # The map's own axes both ends, so not MobileViT's patches ([N, C, p*p, patches] split into
    # [N, C, p, p, H/p, W/p], folded with the same Transpose: patches_unfolded_and_folded).
    if perm == SPACE_TO_DEPTH_DCR:  # [N, C, H, W] -> [N, b, b, C, H/b, W/b] -> [N, b*b*C, H/b, W/b]
        n, b, b2, c, h, w = moved
        return b == b2 and source == (n, c, h * b, w * b) and merged == (n, b * b * c, h, w)
    # [N, b*b*C, H, W] -> [N, C, H, b, W, b] -> [N, C, H*b, W*b]
    n, c, h, b, w, b2 = moved
    return perm in DEPTH_TO_SPACE_PERMS and b == b2 and source == (n, b * b * c, h, w) and merged == (n, c, h * b, w * b)


@RULES.graph_pass("Transpose", chips=BLOCK_MOVE_CHIPS, OBSERVED=TOOLKIT_OBSERVED)
def space_to_depth_by_reshapes(graph, chip):
    """{OBSERVED} runs on the NPU the Transpose of a space-to-depth written as Reshape [N, C, H/b, b, W/b, b], Transpose [0, 3, 5, 1, 2, 4] and Reshape [N, b*b*C, H/b, W/b] (TResNet's stem), and of a depth-to-space written the same way (block axes first, or after the channels as PixelShuffle writes it), where every other Transpose on this chip is a CPU layer: it is placed as a Reshape.

    Measured with rknn-toolkit2 2.5.0 on RK3566 (tests/forms_models.py space_to_depth_pack, opset
    13): space-to-depth by 2, 3 and 4 of a model input, after a Relu or a Conv, 3 to 64 channels,
    and depth-to-space by 2 in both orders after a Conv: all three nodes on the NPU. Not modelled:
    space-to-depth with the block axes after the channels (Transpose [0, 1, 3, 5, 2, 4]), whose
    nodes went to the CPU or the NPU by the shapes (docs/audit.md).
    """
    for node in [n for n in graph.nodes if n.op_type == "Transpose"]:
        if _block_move(graph, node):
            graph.fuse([node], "Reshape", attributes={})


def _swap_before_unsqueeze(graph, tensor):
    """The Transpose whose result alone an Unsqueeze of axis 1 makes `tensor` (read only by one node), else None."""
    unsqueeze = graph.producer(tensor.name)
    if unsqueeze is None or unsqueeze.op_type != "Unsqueeze" or graph.only_consumer(tensor.name) is None:
        return None
    axes = unsqueeze.attr("axes") if unsqueeze.has_attr("axes") else _ints(unsqueeze.inputs[1]) if len(unsqueeze.inputs) > 1 else None
    swap = graph.producer(unsqueeze.inputs[0].name)
    if axes is None or list(axes) != [1] or swap is None or swap.op_type != "Transpose":
        return None
    return swap if graph.only_consumer(swap.outputs[0].name) is unsqueeze else None


@RULES.graph_pass("Transpose", chips=BLOCK_MOVE_CHIPS, OBSERVED=TOOLKIT_OBSERVED)
def swaps_moved_past_a_concat(graph, chip):
    """{OBSERVED} moves one Transpose that every input of a Concat on axis 1 has (each through an Unsqueeze of axis 1: PatchTST's and PatchTSMixer's patchifier, Slices of the series each swapped [0, 2, 1] into [1, C, P], then Concatenated into [1, N, C, P]) after the Concat, where it joins the Transpose that reads the result: the moved Transposes have no layer of their own, on the NPU even on RK3566/RK3568 (placed as reshapes); the Transpose after the Concat is placed by its own rules.

    Measured with rknn-toolkit2 2.5.0 on RK3566 and RK3588 (tests/forms_models.py patchify_pack,
    2026-12-05): 8 patches of 8 or 4 of 16 steps of 3, 8 or 16 channels, cut from a Relu or from the
    scaler's Div by a run-time std (a CPU layer): every swap on the NPU.
    """
    for concat in [n for n in graph.nodes if n.op_type == "Concat" and int(n.attr("axis", 0)) == 1 and len(n.inputs) > 1]:
        swaps = [_swap_before_unsqueeze(graph, t) for t in concat.inputs]
        if any(s is None for s in swaps) or len({tuple(_perm(s) or ()) for s in swaps}) != 1:
            continue
        for swap in swaps:
            graph.fuse([swap], "Reshape", attributes={})


STACKED_SUM_CHIPS = ("rk3566", "rk3568")
# The attribute the pass below gives an Unsqueeze of a stacked sum whose rearrangement lands on it as a CPU
# layer (rules.map_stacked_for_a_sum reads it).
STACKED_SUM_ATTRIBUTE = "rknn_stacked_for_a_sum"


def _last_axis_unsqueeze(graph, tensor):
    """The Unsqueeze that gives a 4-D map [N, C, H, W] a new last axis to make `tensor` (read only by one node), else None."""
    unsqueeze = graph.producer(tensor.name)
    if unsqueeze is None or unsqueeze.op_type != "Unsqueeze" or graph.only_consumer(tensor.name) is None:
        return None
    axes = unsqueeze.attr("axes") if unsqueeze.has_attr("axes") else _ints(unsqueeze.inputs[1]) if len(unsqueeze.inputs) > 1 else None
    shape = _static_shape(unsqueeze.inputs[0])
    return unsqueeze if axes is not None and [int(a) % 5 for a in axes] == [4] and shape is not None and len(shape) == 4 else None


def _stacked_for_a_sum(graph, concat) -> list | None:
    """The Unsqueezes of `concat` when it stacks 4-D maps on a new last axis and only a ReduceSum over that axis
    (keepdims 0) reads it (torch.stack(maps, dim=-1).sum(-1), EfficientDet's BiFPN fusion); else None."""
    if concat.op_type != "Concat" or int(concat.attr("axis", 0)) % 5 != 4 or len(concat.inputs) < 2:
        return None
    total = graph.only_consumer(concat.outputs[0].name)
    axes = None
    if total is not None and total.op_type == "ReduceSum" and int(total.attr("keepdims", 1)) == 0:
        axes = total.attr("axes") if total.has_attr("axes") else _ints(total.inputs[1]) if len(total.inputs) > 1 else None
    if axes is None or [int(a) % 5 for a in axes] != [4]:
        return None
    unsqueezes = [_last_axis_unsqueeze(graph, t) for t in concat.inputs]
    return None if any(u is None for u in unsqueezes) else unsqueezes


@RULES.graph_pass("Unsqueeze", chips=STACKED_SUM_CHIPS, OBSERVED=TOOLKIT_OBSERVED)
def maps_stacked_for_a_sum(graph, chip):
    """{OBSERVED} makes a sum of maps stacked on a new last axis (each [N, C, H, W] Unsqueezed at -1, Concatenated, ReduceSum over -1: torch.stack(maps, dim=-1).sum(-1), EfficientDet's BiFPN fusion) a ReduceSum convolution between layout layers (its passes squeeze_to_4d_concat, convert_reduce_sum_to_conv); the maps' rearrangement before it lands on the Unsqueezes as a CPU layer on RK3566/RK3568 when the toolkit cannot move it past the Concat (reduce_reshape_op_around_concat: a Concat along the width, then an NPU Gather) - when the maps are one column wide (W = 1, no Gather), or when a map of the stack is stacked by another such sum too (remove_parallel_reshape shares its view, which then cannot move: every view of both stacks becomes a Transpose on the CPU, the earlier stack's view of the shared map merged into the later one's, with no layer).

    Measured with rknn-toolkit2 2.5.0 on RK3566 and RK3588 (tests/forms_models.py stacked_sum_pack,
    2026-12-05): two or three maps of 16 or 64 channels at 4x4, 2x2, 8x8 and 1x4: NPU; at 1x1 and 4x1:
    CPU; a map in two stacks (4x4, 2x2, 8x8; two or three maps a stack): both stacks' Unsqueezes on the
    CPU but the earlier stack's of the shared map; RK3588: all NPU. EfficientDet-Lite0's BiFPN (fresh9):
    its top-down and output nodes of one level share the level's input. RK3568 not measured (taken as
    RK3566); a map in three stacks not measured.
    """
    stacks = [u for u in (_stacked_for_a_sum(graph, n) for n in graph.nodes if n.op_type == "Concat") if u]
    stacked_by_map: dict[str, list] = {}
    for unsqueezes in stacks:
        for u in unsqueezes:
            stacked_by_map.setdefault(u.inputs[0].name, []).append(u)
    for unsqueezes in stacks:
        shared = any(len(stacked_by_map[u.inputs[0].name]) > 1 for u in unsqueezes)
        if not shared and _static_shape(unsqueezes[0].inputs[0])[3] != 1:
            continue
        for u in unsqueezes:
            if stacked_by_map[u.inputs[0].name][-1] is u:
                axes = {"axes": list(u.attr("axes"))} if u.has_attr("axes") else {}
                graph.fuse([u], "Unsqueeze", leader=u, attributes={STACKED_SUM_ATTRIBUTE: 1, **axes})


WINDOWS_CHIPS = ("rk3566", "rk3568")
# The attribute the pass below gives the nodes of torch's unfold that run on the CPU (rules.windows_cut_on_the_cpu reads it).
WINDOWS_ON_CPU_ATTRIBUTE = "rknn_windows_on_the_cpu"


def _window_of(graph, unsqueeze, axis: int):
    """(the Slice, the swap) when `unsqueeze` (at `axis`) reads the swap of the last two axes of one Slice along `axis`, each read once; else None."""
    swap = graph.producer(unsqueeze.inputs[0].name) if unsqueeze.op_type == "Unsqueeze" and unsqueeze.inputs else None
    cut = graph.producer(swap.inputs[0].name) if swap is not None and swap.op_type == "Transpose" else None
    if cut is None or cut.op_type != "Slice" or len(cut.inputs) < 4 or _ints(cut.inputs[3]) != [axis]:
        return None
    perm = _perm(swap)
    if perm is None or perm[-2:] != [len(perm) - 1, len(perm) - 2] or perm[:-2] != list(range(len(perm) - 2)):
        return None
    if graph.only_consumer(cut.outputs[0].name) is not swap or graph.only_consumer(swap.outputs[0].name) is not unsqueeze:
        return None
    return cut, swap


def _windows_of(graph, concat):
    """(Slices, swaps, Unsqueezes) when `concat` is torch's unfold(axis, ws, ws) as the exporter writes it: one Slice per
    window of ws along the axis (in order, covering it), each swapped [..., -1, -2] and Unsqueezed at the axis; else None."""
    if concat.op_type != "Concat" or len(concat.inputs) < 2:
        return None
    axis = int(concat.attr("axis", 0))
    unsqueezes = [graph.producer(t.name) for t in concat.inputs]
    windows = [_window_of(graph, u, axis) if u is not None and graph.only_consumer(u.outputs[0].name) is concat else None for u in unsqueezes]
    if any(w is None for w in windows) or len({w[0].inputs[0].name for w in windows}) != 1:
        return None
    bounds = [(_ints(w[0].inputs[1]), _ints(w[0].inputs[2])) for w in windows]
    size = _static_shape(windows[0][0].inputs[0])
    ws = bounds[0][1][0] - bounds[0][0][0] if bounds[0][0] and bounds[0][1] else 0
    if size is None or ws <= 0 or bounds != [([i * ws], [(i + 1) * ws]) for i in range(len(windows))] or len(windows) * ws != size[axis]:
        return None
    return [w[0] for w in windows], [w[1] for w in windows], unsqueezes


def _patches_to_a_map(graph, concat):
    """The Reshape that makes a map of unfolded patches: `concat`'s Reshape, a Transpose, the Reshape (each read once); else None."""
    flat = graph.only_consumer(concat.outputs[0].name)
    swap = graph.only_consumer(flat.outputs[0].name) if flat is not None and flat.op_type == "Reshape" else None
    view = graph.only_consumer(swap.outputs[0].name) if swap is not None and swap.op_type == "Transpose" else None
    return view if view is not None and view.op_type == "Reshape" else None


def _mark_on_cpu(graph, nodes) -> None:
    for n in nodes:
        kept = {"axis": int(n.attr("axis", 0))} if n.op_type == "Concat" else {"axes": list(n.attr("axes"))} if n.has_attr("axes") else {}
        graph.fuse([n], n.op_type, leader=n, attributes={WINDOWS_ON_CPU_ATTRIBUTE: 1, **kept})


@RULES.graph_pass("Slice", "Transpose", chips=WINDOWS_CHIPS, OBSERVED=TOOLKIT_OBSERVED)
def windows_cut_by_slices(graph, chip):
    """{OBSERVED} reads torch's unfold(axis, ws, ws) written with Slices (one per window, each swapped [..., -1, -2], Unsqueezed, Concatenated: XFeat's _unfold2d of its 1-channel image) as layout: unfolded along H and then along W (patches [N, C, H/ws, W/ws, ws, ws]), the Slices become Splits (replace_parallel_slice_by_split), the first unfold's swaps move back onto the image and forward through both Splits, where they cancel the second unfold's swaps (reduce_tp_in_mesh_backward, reduce_tp_in_mesh_forward): no swap has a layer (the first unfold's are placed with its Slices); the first unfold's Split and Concat become one Reshape (replace_split_concat_by_reshape), on RK3566's CPU for a 1-channel image (its Slices, swaps and Concat there), on the NPU from 2 channels; the second runs on the NPU (a Concat and a Gather convolution). The patches' swap to channels (a CPU Transpose) and the Reshape to the map after it run on the CPU. Unfolded along one axis only, the swaps stay a CPU Transpose, with the Unsqueezes.

    Measured with rknn-toolkit2 2.5.0 on RK3566 and RK3588 (tests/forms_models.py window_unfold_pack,
    2026-12-05): images of 1 channel at 128x128, 64x64, 32x32 and 32x64 by windows of 8 and 4 (XFeat's
    is 1 x 128 x 128 by 8): the first unfold on the CPU; of 2, 4, 8, 16 channels: on the NPU; the second
    unfold always on the NPU, the map's Reshape always on the CPU; one axis only (1 and 4 channels): the
    swaps and Unsqueezes on the CPU. RK3588: all NPU. RK3568 not measured (taken as RK3566).
    """
    for concat in [n for n in graph.nodes if n.op_type == "Concat"]:
        cols = _windows_of(graph, concat)
        rows = _windows_of(graph, graph.producer(cols[0][0].inputs[0].name)) if cols else None
        if rows is None:
            continue
        one_channel = _static_shape(rows[0][0].inputs[0])[1] == 1
        # The first unfold's swaps run where its Slices do: with a 1-channel image, on the CPU (a Transpose stays one),
        # and its Unsqueezes merge away (bypass_two_reshape).
        for swap in cols[1] + (rows[2] if one_channel else rows[1]):
            graph.fuse([swap], "Reshape", attributes={})
        view = _patches_to_a_map(graph, concat)
        if one_channel:
            _mark_on_cpu(graph, rows[0] + [graph.only_consumer(rows[2][0].outputs[0].name)])
        if view is not None:
            _mark_on_cpu(graph, [view])
    # Unfolded once (the swaps of an unfold read again were made reshapes above): the Unsqueezes join the CPU swaps.
    for concat in [n for n in graph.nodes if n.op_type == "Concat"]:
        windows = _windows_of(graph, concat)
        if windows is not None:
            _mark_on_cpu(graph, windows[2])


@RULES.graph_pass("Transpose", OBSERVED=TOOLKIT_OBSERVED)
def channel_shuffle_to_conv(graph, chip):
    """{OBSERVED} turns a channel shuffle (Reshape of the channels into groups, Transpose of the two group axes, Reshape back) into a Gather of the channels and then a 1x1 convolution on the NPU (its passes replace_inner_dim_shuffle_tp_rs_to_rs_gather and gather_to_conv).

    Measured on shufflenet_v2_x0_5 and the ONNX zoo's shufflenet: each shuffle's three nodes are
    one NPU Conv layer, on every RKNN chip.
    """
    for node in [n for n in graph.nodes if n.op_type == "Transpose"]:
        x, perm = node.inputs[0], _perm(node)
        before = graph.producer(x.name)
        after = _next(graph, node, "Reshape")
        if before is None or before.op_type != "Reshape" or after is None or perm is None:
            continue
        return_shape, split = _static_shape(after.outputs[0]), _static_shape(x)
        if return_shape is None or split is None or len(return_shape) != 4 or len(split) != 5:
            continue
        # (N, C, H, W) -> (N, g, C/g, H, W) -> swap axes 1 and 2 -> back to (N, C, H, W). The
        # shape going in is that coming out (shape inference does not always know it).
        n, c, h, w = return_shape
        if split[0] == n and split[1] * split[2] == c and split[3:] == (h, w) and perm == [0, 2, 1, 3, 4]:
            graph.fuse([before, node, after], "Conv", leader=node, attributes={"kernel_shape": [1, 1]})


def _read_by_3d_convs(graph, tensor: str) -> bool:
    """Whether only 3-D convolutions (a Conv of a 5-D input) read `tensor`, directly or through one Cast to the type it
    has (which the toolkit removes: remove_invalid_cast)."""
    readers = graph.consumers(tensor)
    if len(readers) == 1 and readers[0].op_type == "Cast" and readers[0].outputs and readers[0].outputs[0].dtype == readers[0].inputs[0].dtype:
        readers = graph.consumers(readers[0].outputs[0].name)
    return bool(readers) and all(r.op_type == "Conv" and r.inputs[0].rank == 5 for r in readers)


@RULES.graph_pass("Transpose", chips=BLOCK_MOVE_CHIPS, OBSERVED=TOOLKIT_OBSERVED)
def frames_swapped_into_a_conv3d(graph, chip):
    """{OBSERVED} runs a video's frames swapped with its colour axis ([1, T, C, H, W] -> [1, C, T, H, W], Transpose [0, 2, 1, 3, 4], V-JEPA 2's patch embedding) before a 3-D convolution as a Conv layer on the NPU, even on RK3566/RK3568 where a Transpose layer runs on the CPU: the two axes it swaps are both ahead of the rows and columns, so it moves whole planes, as a channel shuffle does (channel_shuffle_to_conv). A swap that brings the last axis forward ([0, 1, 4, 2, 3]) is a Transpose layer, on the CPU.

    Measured with rknn-toolkit2 2.5.0 on RK3566 and RK3588 (2026-12-05, int8, opset 17; tests/forms_models.py
    video_patch_pack; found on fresh8's hf_vjepa2/rk3566): 8 frames of 3 x 64 x 64 into a Conv3d of kernel and stride
    [2, 16, 16], with or without a Cast to float between, of the model input or of a Relu of it: "Conv INT8 on NPU"
    named after the Transpose; [1, 3, 64, 64, 8] swapped [0, 1, 4, 2, 3]: a CPU Transpose layer. RK3588: NPU.
    """
    for node in [n for n in graph.nodes if n.op_type == "Transpose"]:
        shape = _static_shape(node.inputs[0]) if node.inputs else None
        if _perm(node) == [0, 2, 1, 3, 4] and shape is not None and shape[0] == 1 and node.outputs and _read_by_3d_convs(graph, node.outputs[0].name):
            graph.fuse([node], "Conv", leader=node, attributes={"kernel_shape": [1, 1]})


# The attribute the pass below gives the Reshape that flattens a 3-D convolution's map.
CONV3D_MAP_VIEW_ATTRIBUTE = "rknn_conv3d_map_viewed"


@RULES.graph_pass("Reshape", chips=BLOCK_MOVE_CHIPS, OBSERVED=TOOLKIT_OBSERVED)
def conv3d_maps_viewed_on_cpu(graph, chip):
    """{OBSERVED} runs on the CPU of RK3566/RK3568 the Reshape that views a 3-D convolution's map [1, C, T, H, W] (or a Relu of it) in another shape (V-JEPA 2's patches flattened to [1, C, T*H*W] for their swap into tokens); the pass marks it for the rule view_of_a_conv3d_map_on_cpu.

    Measured with rknn-toolkit2 2.5.0 on RK3566 (2026-12-05, int8, opset 17; tests/forms_models.py video_patch_pack):
    kernel and stride [2, 16, 16] over 8 frames of 64 x 64, the Reshape to [1, 32, 64] read by its swap into tokens
    (then a LayerNorm or a Linear), after a Relu, or the model output: "Reshape INT8 on CPU" in every case. RK3588 runs
    these on the NPU; kernel [1, 16, 16] over 4 frames of 32 x 32 there: CPU (VIDEO_PATCH_MEASURED, not modelled).
    """
    for node in [n for n in graph.nodes if n.op_type == "Reshape"]:
        source = graph.producer(node.inputs[0].name) if node.inputs else None
        if source is not None and source.op_type == "Relu":
            source = graph.producer(source.inputs[0].name)
        if source is not None and source.op_type == "Conv" and source.outputs[0].rank == 5 and _own_node(graph, node):
            graph.fuse([node], "Reshape", attributes={CONV3D_MAP_VIEW_ATTRIBUTE: list(_static_shape(source.outputs[0]) or ())})


# The attribute the pass below gives a Reshape that lays a map's blocks along their own axis
# ([1, blocks, w*w, C], NesT) when there are several (rules.blocks_along_their_own_axis places it).
BLOCKS_AXIS_ATTRIBUTE = "rknn_blocks_on_their_own_axis"
TO_CHANNELS_LAST, TO_CHANNELS_FIRST = [0, 2, 3, 1], [0, 3, 1, 2]
BLOCK_SWAP = [0, 1, 3, 2, 4, 5]  # [N, H/w, w, W/w, w, C] -> [N, H/w, W/w, w, w, C]


def _splits_into_blocks(map_shape, blocks_shape) -> bool:
    """Whether a channels-last map [N, H, W, C] viewed as `blocks_shape` is [N, H/w, w, W/v, v, C]."""
    return (map_shape is not None and blocks_shape is not None and len(map_shape) == 4 and len(blocks_shape) == 6
            and (blocks_shape[0], blocks_shape[1] * blocks_shape[2], blocks_shape[3] * blocks_shape[4], blocks_shape[5]) == tuple(map_shape))


@RULES.graph_pass("Transpose", chips=BLOCK_MOVE_CHIPS, OBSERVED=TOOLKIT_OBSERVED)
def map_swaps_around_a_block_partition(graph, chip):
    """{OBSERVED} runs on the NPU, even on RK3566/RK3568 where a Transpose layer runs on the CPU, a convolution map's swap channels-last (Transpose [0, 2, 3, 1]) read only by the Reshape that splits it into blocks ([N, H/w, w, W/w, w, C]), and the swap back ([0, 3, 1, 2]) of the map a Reshape rebuilds from such blocks (NesT): each is placed as a Reshape. When such a partition lays several blocks along an axis of their own (swapped [0, 1, 3, 2, 4, 5], then Reshape [1, blocks, w*w, C]) rather than in the batch (Swin), that last Reshape runs on the CPU.

    Measured with rknn-toolkit2 2.5.0 on RK3566 and RK3588 (tests/forms_models.py block_partition_pack,
    2026-12-04): Conv maps of 16x16 (96 and 32 channels, blocks of 4 and 8), 8x8 (192) and 4x4 (384)
    split into blocks of 4x4, a position Add, a layer norm and a residual Linear, then reversed:
    both swaps on the NPU; the Reshape into [1, blocks, w*w, C] on the CPU for 16 and 4 blocks, on
    the NPU for one (RK3588: all on the NPU).
    """
    for node in [n for n in graph.nodes if n.op_type == "Transpose"]:
        perm = _perm(node)
        if perm == TO_CHANNELS_LAST:
            split = graph.only_consumer(node.outputs[0].name) if node.outputs else None
            if split is None or split.op_type != "Reshape" or not _splits_into_blocks(_static_shape(node.outputs[0]), _static_shape(split.outputs[0])):
                continue
            graph.fuse([node], "Reshape", attributes={})
            swap = graph.only_consumer(split.outputs[0].name)
            blocks = graph.only_consumer(swap.outputs[0].name) if swap is not None and _perm(swap) == BLOCK_SWAP else None
            shape = _static_shape(blocks.outputs[0]) if blocks is not None and blocks.op_type == "Reshape" else None
            if shape is not None and len(shape) == 4 and shape[0] == 1 and shape[1] > 1:
                graph.fuse([blocks], "Reshape", attributes={BLOCKS_AXIS_ATTRIBUTE: int(shape[1])})
        elif perm == TO_CHANNELS_FIRST:
            rebuilt = graph.producer(node.inputs[0].name) if node.inputs else None
            if rebuilt is not None and rebuilt.op_type == "Reshape" and _splits_into_blocks(_static_shape(rebuilt.outputs[0]), _static_shape(rebuilt.inputs[0])):
                graph.fuse([node], "Reshape", attributes={})


def _merges_moved_axes(perm: list[int], transposed: tuple, out: tuple) -> bool:
    """Whether reshaping `transposed` to `out` merges every axis `perm` moves into one output axis:
    some output axis spans input axes a..b with a <= the first moved axis and b >= the last."""
    moved = [i for i, p in enumerate(perm) if p != i]
    if not moved:
        return False
    lo, hi = min(moved), max(moved)
    starts = {int(np.prod(transposed[:a], dtype=np.int64)) for a in range(lo + 1)}  # where a span may begin
    ends = {int(np.prod(transposed[: b + 1], dtype=np.int64)) for b in range(hi, len(transposed))}  # and end
    size = 1
    for d in out:
        if size in starts and size * d in ends:
            return True
        size *= d
    return False


# Chips where a Transpose layer runs on the CPU (DOC_COMPILER 3.1.58 allows few perms there).
CHANNELS_LAST_LEVEL_CHIPS = ("rk3566", "rk3568")
# The attribute the pass below gives the Reshape of a channels-last level that Concats read
# (rules.channels_last_level_into_concat reads it).
CHANNELS_LAST_LEVEL_ATTRIBUTE = "rknn_channels_last_level"


def _channels_last_level(graph, node):
    """The Reshape after `node` when `node` is a Transpose [0, 2, 3, 1] of a map whose only reader
    flattens it to [N, X, d] (one level of a detection head, MediaPipe's BlazeFace) and that
    Reshape's result is a model output or read only by Concats of such levels; else None."""
    if node.op_type != "Transpose" or not node.outputs or _perm(node) != [0, 2, 3, 1]:
        return None
    reshape = graph.only_consumer(node.outputs[0].name)
    if reshape is None or reshape.op_type not in LEVEL_FLATTENS or reshape.inputs[0].name != node.outputs[0].name:
        return None
    x, out = _static_shape(node.outputs[0]), _static_shape(reshape.outputs[0])
    if x is None or out is None or len(x) != 4 or len(out) not in (2, 3) or out[0] != x[0] or (len(out) == 3 and reshape.op_type != "Reshape"):
        return None
    readers = graph.consumers(reshape.outputs[0].name)
    if readers and all(_concat_of_channels_last_levels(graph, r) or (len(out) == 2 and _splits_a_row_into_frames(r)) for r in readers):
        return reshape
    return reshape if not readers and reshape.outputs[0].is_model_output else None


# What flattens a channels-last level: a Reshape to [N, X, d] (BlazeFace) or to a row [N, H*W*C] (YuNet), or a
# Flatten to that row (tests/forms_models.py yunet_level_pack "flatten").
LEVEL_FLATTENS = ("Reshape", "Flatten")


def _splits_a_row_into_frames(node) -> bool:
    """Whether `node` is a Reshape of a row [1, L] into frames [1, F, d] (YuNet's Reshape [1, -1, 17] of its
    concatenated levels)."""
    x, out = (_static_shape(node.inputs[0]), _static_shape(node.outputs[0])) if node.op_type == "Reshape" and node.inputs else (None, None)
    return x is not None and out is not None and len(x) == 2 and len(out) == 3 and out[0] == x[0]


def _concat_of_channels_last_levels(graph, concat) -> bool:
    """Whether every input of `concat` is a Reshape of a Transpose [0, 2, 3, 1] (a head's levels;
    a ViT's class token before its patch tokens is not: that Transpose has no layer, timm's test_vit)."""
    if concat.op_type != "Concat":
        return False
    for t in concat.inputs:
        reshape = graph.producer(t.name)
        before = graph.producer(reshape.inputs[0].name) if reshape is not None and reshape.op_type in LEVEL_FLATTENS and reshape.inputs else None
        if before is None or before.op_type != "Transpose" or _perm(before) != [0, 2, 3, 1]:
            return False
    return True


def _writes_channels_last_level(graph, node, chip) -> bool:
    """Whether the toolkit keeps `node` a Transpose layer of its own: a channels-last level
    (_channels_last_level) on a chip where no layout pass removes it."""
    return chip in CHANNELS_LAST_LEVEL_CHIPS and _channels_last_level(graph, node) is not None


@RULES.graph_pass("Reshape", chips=CHANNELS_LAST_LEVEL_CHIPS, OBSERVED=TOOLKIT_OBSERVED)
def channels_last_levels_concatenated(graph, chip):
    """{OBSERVED} writes out a detection head's level made channels-last (Conv [N, C, H, W], Transpose [0, 2, 3, 1], Reshape [N, H*W*C/d, d]) with a Transpose layer of its own when the Reshape's result is a model output or concatenated with other such levels only: it neither turns the pair into a convolution (transpose_then_flatten_to_conv) nor drops the Transpose as a token view (nhwc_swap_beside_a_token_reshape), so on RK3566/RK3568 the Transpose runs on the CPU; the audit notes on the Reshape that Concats read it (rules.channels_last_level_into_concat).

    Measured with rknn-toolkit2 2.5.0 on RK3566 on MediaPipe's BlazeFace (16x16 and 8x8 levels of 2
    and 6 scores, 32 and 96 box values) and tests/forms_models.py channels_last_levels: d = 1, 2,
    4, 8, 16, 32; 1, 2, 6, 8, 16 anchors per cell; 16x16 to 2x2 maps; C aligned to 8 and 16 or
    not; every Transpose on the CPU whatever the sizes (RK3568 not measured: taken as RK3566); on
    RK3588 all on the NPU. A ViT's patch tokens made the same way but concatenated after its class
    token (timm's test_vit in the pool) keep the Transpose off any layer: left to the other passes.
    """
    for node in [n for n in graph.nodes if n.op_type == "Transpose"]:
        reshape = _channels_last_level(graph, node)
        if reshape is not None and graph.consumers(reshape.outputs[0].name):
            graph.fuse([reshape], reshape.op_type, leader=reshape, attributes={CHANNELS_LAST_LEVEL_ATTRIBUTE: 1})


# RK3566/RK3568: the attribute the pass below gives each view that makes a 2-D model input a map
# (rules.two_d_input_made_a_map).
INPUT_MADE_A_MAP_CHIPS = ("rk3566", "rk3568")
INPUT_MADE_A_MAP_ATTRIBUTE = "rknn_two_d_input_made_a_map"
VIEWS_OF_AN_INPUT = ("Unsqueeze", "Reshape")


def _view_result_rank(node) -> int | None:
    shape = _static_shape(node.outputs[0]) if node.outputs else None
    return len(shape) if shape is not None else None


@RULES.graph_pass("Unsqueeze", "Reshape", chips=INPUT_MADE_A_MAP_CHIPS, OBSERVED=TOOLKIT_OBSERVED)
def two_d_input_views_into_a_map(graph, chip):
    """{OBSERVED} on RK3566 converts a 2-D model input [N, L] made a 4-D map ([N, 1, L, 1] or [N, 1, 1, L]: CREPE's frames) with Reshape layers on the CPU: each view on the way (one Unsqueeze of two axes, a Reshape, or two Unsqueezes, the first one's [N, 1, L] too), whatever reads the map (a Pad and a Conv, a Conv, a Relu). The pass marks those views for rules.two_d_input_made_a_map.

    Measured with rknn-toolkit2 2.5.0 (2026-12-06, tests/forms_models.py input_to_map_pack: L = 256,
    [1, 1, L, 1] into a (16, 1) Conv, after a Pad, or a Relu; [1, 1, 1, L] into a (1, 16) Conv): every
    view on RK3566's CPU, on RK3588's NPU. A view to [N, 1, L] alone is left to rules.two_d_input_made_a_conv1d_input.
    """
    for node in [n for n in graph.nodes if n.op_type in VIEWS_OF_AN_INPUT]:
        if not node.inputs or not node.inputs[0].is_graph_input or not _own_node(graph, node):
            continue
        x = _static_shape(node.inputs[0])
        if x is None or len(x) != 2:
            continue
        chain = [node]
        if _view_result_rank(node) == 3:
            after = graph.only_consumer(node.outputs[0].name)
            chain += [after] if after is not None and after.op_type in VIEWS_OF_AN_INPUT and _own_node(graph, after) else []
        if _view_result_rank(chain[-1]) == 4:
            for view in chain:
                graph.fuse([view], view.op_type, leader=view, attributes={INPUT_MADE_A_MAP_ATTRIBUTE: 1})


# Chips measured for the pass below (tests/forms_models.py reduced_unsqueeze_pack on each, scripts/probe_rknn_chips.py).
COUNT_UNSQUEEZE_CHIPS = ("rk3588", "rk3576", "rk3566", "rk3568", "rk3562", "rv1106")


@RULES.graph_pass("Unsqueeze", chips=COUNT_UNSQUEEZE_CHIPS, OBSERVED=TOOLKIT_OBSERVED)
def unsqueeze_of_an_int64_sum_removed(graph, chip):
    """{OBSERVED} gives no CPU layer to an Unsqueeze of a run-time int64 ReduceSum's result (TabNet's sparsemax counts its support: a comparison cast to int64, summed without keepdims, unsqueezed): its layer table leaves it out, where an int64 Unsqueeze of another node's result (D-FINE's top-k indices) is a CPU layer (rules.int64_at_run_time). The audit removes it.

    Measured with rknn-toolkit2 2.5.0 on RK3588 and RK3566 (2026-12-06, tests/forms_models.py
    reduced_unsqueeze_pack and _2: the count [4] of a [4, 16] unsqueezed at -1, [1, 4] of a [1, 4, 16]
    at -1 and at 0: not in the layer table; [4] at 0: on the NPU; the ReduceSum, the Sub of one after it
    and the Cast to float as the output: CPU). reduced_unsqueeze_pack on RK3568, RK3576, RK3562 and RV1106: the
    Unsqueezes placed alike.
    """
    for node in [n for n in graph.nodes if n.op_type == "Unsqueeze"]:
        x = node.inputs[0] if node.inputs else None
        if x is None or x.dtype != "int64" or _known(x):
            continue
        made = graph.producer(x.name)
        if made is not None and made.op_type == "ReduceSum":
            graph.eliminate(node)


# RK3588: the attribute the pass below gives a channels-last level's Reshape whose values a node reads
# (rules.channels_last_level_read_on_cpu).
LEVEL_READ_CHIPS = ("rk3588",)
LEVEL_READ_ATTRIBUTE = "rknn_channels_last_level_read"


def _level_flatten(graph, node):
    """The Reshape after `node` when `node` is a Transpose [0, 2, 3, 1] of a 4-D map whose only reader
    is a Reshape [N, H, W, k*d] -> [N, H*W*k, d] with k > 1 anchors (a detection head's level: RetinaFace's
    class scores, d = 2 of 4 channels); else None. One anchor (d = C) is a map made tokens (Perceiver's
    [1, 15, 15, 64] -> [1, 225, 64], on the NPU): not a level here."""
    if node.op_type != "Transpose" or not node.outputs or _perm(node) != [0, 2, 3, 1]:
        return None
    reshape = graph.only_consumer(node.outputs[0].name)
    if reshape is None or reshape.op_type != "Reshape" or reshape.inputs[0].name != node.outputs[0].name or not _own_node(graph, reshape):
        return None
    x, out = _static_shape(node.outputs[0]), _static_shape(reshape.outputs[0])
    if x is None or out is None or len(x) != 4 or len(out) != 3 or out[0] != x[0]:
        return None
    n, h, w, c = x
    d = out[2]
    return reshape if 0 < d < c and c % d == 0 and out[1] == h * w * (c // d) else None


def _values_read(graph, reshape) -> bool:
    """Whether a node reads a level's values: the level itself, or a Concat of it that is not only the model's output."""
    readers = graph.consumers(reshape.outputs[0].name)
    return any(r.op_type != "Concat" or graph.consumers(r.outputs[0].name) for r in readers)


@RULES.graph_pass("Reshape", chips=LEVEL_READ_CHIPS, OBSERVED=TOOLKIT_OBSERVED)
def channels_last_level_read_by_a_node(graph, chip):
    """{OBSERVED} on RK3588 runs on the CPU the Reshape of a detection head's level made channels-last (Conv, Transpose [0, 2, 3, 1], Reshape [N, H*W*k, d]) when a node reads its values, straight or through the Concat of the levels (RetinaFace's class scores into a Softmax); a level that is a model output, or concatenated into one, stays on the NPU. The pass marks the Reshape for rules.channels_last_level_read_on_cpu.

    Measured with rknn-toolkit2 2.5.0 on RK3588 (2026-12-06, tests/forms_models.py levels_softmax_pack,
    _2 and _3: levels of 20x20, 10x10 and 5x5 maps, 2 anchors, d = 2, 4, 10): concatenated into a Softmax
    (the model output, over the last axis or axis 1), a Softmax a Relu reads, or a Sigmoid: every
    Reshape CPU, the Transposes NPU; the same levels concatenated as the output (and channels_last_levels
    of every width): NPU; one level straight into a Softmax: CPU. RK3566 puts these Reshapes on the CPU
    anyway (channels_last_levels_concatenated). Measured with 2 anchors a cell only: a level of one anchor
    is a map made tokens, which the pool (fresh7's Perceiver, DeepFilterNet3) runs on the NPU when read.
    """
    for node in [n for n in graph.nodes if n.op_type == "Transpose"]:
        reshape = _level_flatten(graph, node)
        if reshape is not None and _values_read(graph, reshape):
            graph.fuse([reshape], reshape.op_type, leader=reshape, attributes={LEVEL_READ_ATTRIBUTE: 1})


# The attribute the pass below gives a Reshape that splits into frames a row made of channels-last levels
# (rules.computed_row_split_into_frames leaves it on the NPU).
ROWS_OF_LEVELS_ATTRIBUTE = "rknn_frames_of_channels_last_rows"


def _row_of_channels_last_levels(graph, row) -> bool:
    """Whether tensor `row` [1, L] is a channels-last level flattened to a row, or a Concat of such rows only."""
    made = graph.producer(row.name)
    pieces = made.inputs if made is not None and made.op_type == "Concat" else [row]
    for t in pieces:
        flatten = graph.producer(t.name)
        swap = graph.producer(flatten.inputs[0].name) if flatten is not None and flatten.op_type in LEVEL_FLATTENS and flatten.inputs else None
        if swap is None or _channels_last_level(graph, swap) is not flatten:
            return False
    return True


@RULES.graph_pass("Reshape", chips=CHANNELS_LAST_LEVEL_CHIPS, OBSERVED=TOOLKIT_OBSERVED)
def frames_of_channels_last_rows(graph, chip):
    """{OBSERVED} keeps on the NPU the Reshape that splits into frames [1, F, d] a row made of a detection head's channels-last levels (each level Transposed [0, 2, 3, 1] and flattened to a row [1, H*W*C] on the CPU, the rows Concatenated: kornia's YuNet, Reshape [1, -1, 17]), where a row computed on the NPU split into frames goes to the CPU (rules.computed_row_split_into_frames).

    Measured with rknn-toolkit2 2.5.0 on RK3566 on tests/forms_models.py yunet_level_pack: four or two
    levels (16x16 to 2x2 maps, C = 51, 34, 68, 272), flattened by Reshape [1, -1] or Flatten, Concatenated
    or one level alone: the frames Reshape on the NPU each time; without the Transposes (the maps
    flattened as they are, "no_swap"), on the CPU. RK3568 taken as RK3566 (not measured).
    """
    for node in [n for n in graph.nodes if _splits_a_row_into_frames(n)]:
        if _row_of_channels_last_levels(graph, node.inputs[0]):
            graph.fuse([node], "Reshape", leader=node, attributes={ROWS_OF_LEVELS_ATTRIBUTE: 1})


@RULES.graph_pass("Transpose", OBSERVED=TOOLKIT_OBSERVED, chip_key=CHANNELS_LAST_LEVEL_CHIPS.__contains__)
def transpose_then_flatten_to_conv(graph, chip):
    """{OBSERVED} turns a Transpose whose result is reshaped (a Reshape or Flatten that merges every axis the Transpose moves into one) into a Gather of that merged axis and then a 1x1 convolution on the NPU, merged with the reshape (its passes replace_inner_dim_shuffle_tp_rs_to_rs_gather, gather_to_conv and fuse_reshape_into_conv): a face detector's Transpose before the flatten into its Gemm runs on the NPU, even on RK3566/RK3568 where a Transpose layer would run on the CPU.

    Measured on Conv, PRelu (or Relu), Transpose (perm [0, 3, 2, 1], [0, 2, 3, 1], [0, 1, 3, 2]),
    Flatten, Gemm on RK3588 and RK3566 (tests/forms_models.py transpose_before_flatten).
    """
    for node in [n for n in graph.nodes if n.op_type == "Transpose"]:
        perm = _perm(node)
        after = graph.only_consumer(node.outputs[0].name) if node.outputs and perm is not None else None
        if after is None or after.op_type not in ("Reshape", "Flatten") or after.inputs[0].name != node.outputs[0].name:
            continue
        if _writes_channels_last_level(graph, node, chip):
            continue
        transposed, out = _static_shape(node.outputs[0]), _static_shape(after.outputs[0])
        if transposed is not None and out is not None and transposed[0] > 1 and out[0] != transposed[0]:
            continue  # the flatten joins a batch of sets (TNT's pixel sets): not this form (batch_made_and_merged_by_reshapes)
        if transposed is not None and out is not None and _merges_moved_axes(perm, transposed, out):
            graph.fuse([node, after], "Conv", leader=node, attributes={"kernel_shape": [1, 1]})


# Operators that work on each position of the tensor alone, along its last axis: a pair of
# inverse Transposes around a chain of them cancels (the toolkit moves them through and removes
# them). MatMul and Add/Mul/... count only with constant weights that broadcast along the last axis.
POSITIONWISE_OPS = frozenset({"LayerNormalization", "Gelu", "Relu", "Sigmoid", "Tanh", "HardSwish", "HardSigmoid", "Clip", "Erf", "LeakyRelu"})
POSITIONWISE_WITH_CONSTANT = frozenset({"MatMul", "Add", "Sub", "Mul", "Div"})


def _positionwise(node) -> bool:
    if node.op_type in POSITIONWISE_OPS:
        return node.op_type != "LayerNormalization" or int(node.attr("axis", -1)) in (-1, (node.inputs[0].rank or 0) - 1)
    if node.op_type not in POSITIONWISE_WITH_CONSTANT or len(node.inputs) != 2:
        return False
    data = [t for t in node.inputs if not _known(t)]
    weights = [t for t in node.inputs if _known(t)]
    if len(data) != 1 or len(weights) != 1 or weights[0].shape is None:
        return False
    shape = tuple(weights[0].shape)
    if node.op_type == "MatMul":
        return node.inputs[1] is weights[0] and len(shape) == 2
    return all(d == 1 for d in shape[:-1])  # a scalar or a vector along the last axis


# The longest chain of position-wise operators seen between a Transpose and its inverse
# (a ConvNeXt block: layer norm, Linear, GELU, Linear, layer scale) with room to spare.
MAX_POSITIONWISE_CHAIN = 12


# Chips whose NPU has no Softmax (DOC_COMPILER 3.1): the Softmax is a CPU layer there.
SOFTMAX_ON_CPU_CHIPS = ("rk3566", "rk3568")
# The attribute the pass below gives the first Transpose of a cancelled pair that reads a product
# of computed tensors on those chips, so that transposes_merged_into_matmul leaves it.
PRODUCT_TRANSPOSE_ATTRIBUTE = "rknn_product_transpose_layer"


def _cancel_pair(graph, chip, first, source, inverse) -> None:
    """Remove a Transpose and its inverse; on the chips whose Softmax runs on the CPU the first stays
    when it reads a Softmax (written from the Softmax's own layer, transpose_of_a_cpu_softmax_joins_it)
    or a product of computed tensors (a Transpose layer of its own); the inverse goes either way."""
    if chip in SOFTMAX_ON_CPU_CHIPS and source is not None and _product_of_computed(source):
        graph.fuse([first], "Transpose", attributes={"perm": _perm(first), PRODUCT_TRANSPOSE_ATTRIBUTE: 1})
    elif not (chip in SOFTMAX_ON_CPU_CHIPS and source is not None and source.op_type == "Softmax"):
        graph.eliminate(first)
    graph.eliminate(inverse)


@RULES.graph_pass("Transpose", OBSERVED=TOOLKIT_OBSERVED, MAX_CHAIN=MAX_POSITIONWISE_CHAIN, chip_key=SOFTMAX_ON_CPU_CHIPS.__contains__)
def cancel_transposes_around_positionwise_ops(graph, chip):
    """{OBSERVED} removes a Transpose and its inverse when only position-wise operators lie between them (a layer norm over the last axis, a MatMul by a constant matrix, GELU and other activations, arithmetic with a per-channel constant; at most {MAX_CHAIN} nodes): it moves the Transposes through those operators and cancels them (its passes swap_transpose_add, swap_transpose_mul, swap_conv_transpose, fuse_two_transpose, remove_invalid_transpose), so the channels-last blocks of a ConvNeXt run in the NPU's own layout; where those operators fork, when every branch ends in the inverse (FocalNet's channels-last norm read by the Transpose back and by the next block's norm).

    Measured on convnext_tiny: none of its 46 Transposes has a layer of its own in the table.
    Forks: tests/forms_models.py forked_nhwc_norm_pack (rknn-toolkit2 2.5.0, RK3566 and RK3588): a
    decomposed norm over a Conv's map Transposed channels-last (96, 40, 24, 32 channels), read by
    the Transpose back and by a second norm Transposed back into a Conv (and a per-channel Mul
    Transposed back): no layer for the Transposes (with the Mul between, its Transpose back is
    reported, on the NPU). Not modelled: a branch that stays channels-last to a model output (the
    toolkit gave the Transposes no layer there either; the audit keeps them). On RK3566/RK3568 a Transpose that reads a Softmax's result is written from the Softmax's CPU layer first (transpose_of_a_cpu_softmax_joins_it), and the first Transpose of a pair around a product of two computed tensors (attention's scores) stays a Transpose layer (the inverse is removed): CaiT's talking heads (scores, Transpose, Linear over the heads, Transpose back, Softmax, and again) and small models of them (4, 8, 12 and 16 heads).
    """
    for first in [n for n in graph.nodes if n.op_type == "Transpose"]:
        perm = _perm(first)
        source = graph.producer(first.inputs[0].name) if first.inputs else None
        if perm is None or not first.outputs or graph.producer(first.outputs[0].name) is not first:
            continue  # gone: the inverse of a pair cancelled before it
        inverses = _inverses_after_positionwise_ops(graph, first, perm)
        if inverses:
            _cancel_pair(graph, chip, first, source, inverses[0])
            for other in inverses[1:]:
                graph.eliminate(other)


def _inverses_after_positionwise_ops(graph, first, perm: list[int]) -> list | None:
    """The Transposes that undo `first` at every end of the position-wise operators reading it: one
    after a chain, or one per branch where the chain forks (FocalNet: a channels-last norm read by
    the Transpose back and by the next block's norm, itself Transposed back); None when a branch
    ends anywhere else (another operator, a model output) or the operators are more than
    MAX_POSITIONWISE_CHAIN."""
    inverses, seen, frontier = [], set(), [first.outputs[0]] if first.outputs else []
    while frontier:
        tensor = frontier.pop()
        readers = {r.name: r for r in graph.consumers(tensor.name)}.values()
        if not readers or tensor.is_model_output:
            return None
        for reader in readers:
            if reader.op_type == "Transpose":
                back = _perm(reader)
                if back is None or [perm[i] for i in back] != list(range(len(perm))):
                    return None
                inverses.append(reader)
                continue
            # MatMul, Sub and Div are position-wise only with the data as their first operand.
            if not _positionwise(reader) or (reader.op_type in ("MatMul", "Sub", "Div") and reader.inputs[0].name != tensor.name):
                return None
            if reader.name not in seen:
                seen.add(reader.name)
                if len(seen) > MAX_POSITIONWISE_CHAIN:
                    return None
                frontier.append(reader.outputs[0])
    if len(inverses) > 1:
        order = {n.name: i for i, n in enumerate(graph.nodes)}
        inverses.sort(key=lambda n: order[n.name])
    return inverses or None


# The attribute softmax_across_an_inner_axis gives, on the chips whose Softmax runs on the NPU, the
# Transpose before the Softmax (rules.softmax_axis_transpose_layer places it).
SOFTMAX_AXIS_ATTRIBUTE = "rknn_softmax_axis_transpose"


def _softmax_between_swaps(graph, softmax):
    """(first, back) when `softmax` reads only a Transpose and is read only by the same Transpose,
    whose perm swaps two axes one of which is the last, and normalises the last axis: a softmax
    along an inner axis as torch.onnx writes it below opset 13; else None."""
    first = graph.producer(softmax.inputs[0].name) if softmax.inputs else None
    back = graph.only_consumer(softmax.outputs[0].name) if softmax.outputs else None
    if first is None or back is None or first.op_type != "Transpose" or back.op_type != "Transpose":
        return None
    perm, rank = _perm(first), softmax.inputs[0].rank
    if perm is None or rank is None or perm != _perm(back) or graph.only_consumer(first.outputs[0].name) is not softmax:
        return None
    moved = [i for i, p in enumerate(perm) if p != i]
    if len(moved) != 2 or moved[1] != rank - 1 or int(softmax.attr("axis", -1)) % rank != rank - 1:
        return None
    return first, back


@RULES.graph_pass("Softmax", OBSERVED=TOOLKIT_OBSERVED, chip_key=SOFTMAX_ON_CPU_CHIPS.__contains__)
def softmax_across_an_inner_axis(graph, chip):
    """{OBSERVED} computes a softmax along an inner axis written as a Transpose that swaps that axis with the last, a Softmax over the last axis and the same Transpose back (torch.onnx below opset 13: timm's SelectiveKernelAttn, softmax over its paths): on RK3566/RK3568, where the Softmax runs on the CPU, both Transposes stay on the NPU (and the Reshape before them); on the other chips the first Transpose is a Transpose layer of its own on the CPU (rules.softmax_axis_transpose_layer) and the rest runs on the NPU.

    Measured on tests/forms_models.py selective_kernel_attention (Reshape [1, P, C, 1, 1], Transpose
    [0, 4, 2, 3, 1]: P = 2, 3; C = 24, 60, 64) and on skresnet18's eight blocks, RK3566 and RK3588.
    """
    for softmax in [n for n in graph.nodes if n.op_type == "Softmax"]:
        pair = _softmax_between_swaps(graph, softmax)
        if pair is None:
            continue
        first, back = pair
        if chip in SOFTMAX_ON_CPU_CHIPS:
            graph.eliminate(first)
            graph.eliminate(back)
        else:
            graph.fuse([first], "Transpose", attributes={"perm": _perm(first), SOFTMAX_AXIS_ATTRIBUTE: 1})


# The attribute transpose_into_an_output_softmax gives a Transpose that the toolkit moves after a
# model-output Softmax (rules.transpose_after_output_softmax places it in float with the Softmax).
OUTPUT_SOFTMAX_TRANSPOSE_ATTRIBUTE = "rknn_moved_after_output_softmax"


@RULES.graph_pass("Softmax", chips=("rk3588", "rk3576", "rk3562"), OBSERVED=TOOLKIT_OBSERVED)
def transpose_into_an_output_softmax(graph, chip):
    """{OBSERVED} runs a Transpose read only by a Softmax that is a model output after the Softmax (its layer follows the exSoftmax13 layer), on the Softmax's float16 result: where the Softmax is kept in float (rules.softmax_at_model_output), the Transpose is too.

    Measured on RK3588 (tests/forms_models.py transpose_into_output_softmax: Conv, Relu, 1x1 Conv,
    Transpose [0, 2, 3, 1], Softmax over the last axis, MTCNN P-Net's head as tf2onnx writes it):
    as the output, the Transpose is a FLOAT16 Transpose layer after the Softmax, with a sibling
    Transpose to an output in int8 beside it; with a Mul after the Softmax, both are int8. On
    RK3566 the Softmax and the Transpose run on the CPU (softmax_on_cpu's chips): not this pass.
    """
    for softmax in [n for n in graph.nodes if n.op_type == "Softmax"]:
        out = softmax.outputs[0] if softmax.outputs else None
        first = graph.producer(softmax.inputs[0].name) if softmax.inputs and out is not None and out.is_model_output else None
        if first is None or first.op_type != "Transpose" or graph.only_consumer(first.outputs[0].name) is not softmax:
            continue
        graph.fuse([first], "Transpose", attributes={"perm": _perm(first), OUTPUT_SOFTMAX_TRANSPOSE_ATTRIBUTE: 1})


@RULES.graph_pass("Transpose", chips=SOFTMAX_ON_CPU_CHIPS, OBSERVED=TOOLKIT_OBSERVED)
def transpose_of_a_cpu_softmax_joins_it(graph, chip):
    """{OBSERVED} writes a Transpose that reads only a Softmax's result from the Softmax's own layer (it has no layer of its own), so on RK3566/RK3568, where Softmax runs on the CPU, it runs on the CPU with it (attention's attn.transpose(-2, -1) before attn @ v).

    Measured on yolo11n's attention and on a small MatMul, Softmax, Transpose, MatMul model.
    """
    for node in [n for n in graph.nodes if n.op_type == "Transpose"]:
        softmax = graph.producer(node.inputs[0].name) if node.inputs else None
        if softmax is not None and softmax.op_type == "Softmax" and graph.only_consumer(softmax.outputs[0].name) is node:
            graph.fuse([softmax, node], "Softmax", leader=softmax)


# The attribute softmax_views_on_cpu gives the view of attention's scores into a CPU Softmax
# that the toolkit keeps on the NPU (rules.reshape_into_cpu_softmax reads it).
SCORES_VIEW_ATTRIBUTE = "rknn_scores_view_kept"


def _view_pair_around_softmax(graph, softmax) -> tuple:
    """(the Reshape that is the Softmax's input, or None; the Reshape that alone reads its result,
    or None), Casts to the same type already joined to the Softmax."""
    before = graph.producer(softmax.inputs[0].name) if softmax.inputs else None
    after = graph.only_consumer(softmax.outputs[0].name) if softmax.outputs else None
    before = before if before is not None and before.op_type == "Reshape" and graph.only_consumer(before.outputs[0].name) is softmax else None
    return before, after if after is not None and after.op_type == "Reshape" else None


def _reads_product(graph, node) -> bool:
    source = graph.producer(node.inputs[0].name) if node.inputs else None
    return source is not None and _product_of_computed(source)


def _into_product(graph, tensor: str) -> bool:
    """Whether only products of two computed tensors read `tensor` (not a model output)."""
    readers, source = graph.consumers(tensor), graph.producer(tensor)
    if source is not None and any(o.name == tensor and o.is_model_output for o in source.outputs):
        return False
    return bool(readers) and all(_product_of_computed(r) for r in readers)


@RULES.graph_pass("Softmax", chips=SOFTMAX_ON_CPU_CHIPS, OBSERVED=TOOLKIT_OBSERVED)
def softmax_views_on_cpu(graph, chip):
    """{OBSERVED} on RK3566/RK3568, where Softmax runs on the CPU, writes a Reshape that alone reads a Softmax's result (through Casts to the same type) from the Softmax's CPU layer: transformers' DeBERTa-v2 and BLOOM view the probabilities [1, H, T, T] back to [H, T, T] for a 3-D batched attn @ v, and that view runs on the CPU, whatever reads it. The view of the scores into that Softmax ([H, T, T] to [1, H, T, T], rules.reshape_into_cpu_softmax) stays on the NPU where a product of two computed tensors made the scores and the probabilities go into a product (directly or through the view back). Where the view before the Softmax runs on the CPU (scores not made by a product) and the view back is its inverse into a product, that view back is not on the CPU: one of the two inverse views is.

    Measured on RK3566 with tests/forms_models.py softmax_view_pack (rknn-toolkit2 2.5.0): T of 7
    to 64, 1 to 12 heads of 8 to 64, with a mask (Where) or two Casts between: the view back on the
    CPU; read by a Relu or also a model output: CPU, and then the view of the scores too; scores
    a 4-D model input: CPU; the 3-D scores a model input: the view before on the CPU, the view back
    on the NPU; the scores' view into a Softmax read by a 4-D attn @ v: NPU. RK3568 is taken to
    behave as RK3566 (not measured).
    """
    for softmax in [n for n in graph.nodes if n.op_type == "Softmax"]:
        before, after = _view_pair_around_softmax(graph, softmax)
        into_product = _into_product(graph, after.outputs[0].name) if after is not None else _into_product(graph, softmax.outputs[0].name)
        if before is not None and _reads_product(graph, before) and into_product:
            graph.fuse([before], "Reshape", attributes={SCORES_VIEW_ATTRIBUTE: 1})
        if after is None:
            continue
        inverse = before is not None and _static_shape(after.outputs[0]) == _static_shape(before.inputs[0]) is not None
        if inverse and into_product and not _reads_product(graph, before):
            continue  # the view before runs with the Softmax; this one is the NPU's
        graph.fuse([softmax, after], "Softmax", leader=softmax)


# Layout operators a Transpose may reach a MatMul through and still be merged into it: reshapes,
# other Transposes (fuse_two_transpose), a Gather of one slice of a leading axis (the toolkit's
# convert_gather_to_slice_reshape: timm's q, k, v = qkv.unbind(0)), and arithmetic with a
# one-element constant, which the toolkit moves to the other side of the Transpose
# (swap_transpose_mul, swap_reshape_mul: attention's q * scale or k / sqrt(d)).
LAYOUT_OPS = frozenset({"Reshape", "Squeeze", "Unsqueeze", "Split", "Flatten", "Transpose"})
SCALAR_SWAPPED_OPS = frozenset({"Mul", "Div"})
MAX_LAYOUT_HOPS = 3


def _parallel_slice(graph, node) -> bool:
    """One of several Slices of the same tensor, which the toolkit makes one Split (its pass
    replace_parallel_slice_by_split): attention's q, k and v taken from one projection. A Shape of that tensor
    reads nothing at run time (the toolkit computes it when converting): GPT-NeoX's export takes the Slices'
    bounds from the heads' Shape (neox_qkv_pack, RK3566: the heads' swap merged with or without that Shape)."""
    if node.op_type != "Slice" or not node.inputs:
        return False
    readers = [r for r in graph.consumers(node.inputs[0].name) if r.op_type != "Shape"]
    return len(readers) > 1 and all(r.op_type == "Slice" for r in readers)


def _leading_gather(node) -> bool:
    """A Gather of one index (a constant scalar) along an axis that is not the last."""
    if node.op_type != "Gather" or len(node.inputs) < 2 or node.inputs[0].rank is None:
        return False
    axis, index = int(node.attr("axis", 0)), node.inputs[1]
    return _known(index) and index.shape == () and axis % node.inputs[0].rank != node.inputs[0].rank - 1


def _scalar_swapped(node, data: str) -> bool:
    """Mul or Div of `data` by a one-element constant, or one computed from constants and static shapes (Div only as the dividend)."""
    if node.op_type not in SCALAR_SWAPPED_OPS or len(node.inputs) != 2:
        return False
    other = _other_input(node, data)
    # The scale may be computed from the static shapes (SDPA's export: Shape, Slice, Cast, Sqrt, Div).
    one_element = other is not None and _known(other) and other.shape is not None and all(d == 1 for d in other.shape)
    return one_element and (node.op_type == "Mul" or node.inputs[0].name == data)


def _lone_concat(node) -> bool:
    """A Concat of one tensor (transformers' GPT-2 writes its present key and value so): a copy."""
    return node.op_type == "Concat" and len([t for t in node.inputs if t.present]) == 1


def _lone_concats_after(graph, node) -> list:
    """The Concats of one tensor that copy `node`'s result, one after the other."""
    chain, reader = [], graph.only_consumer(node.outputs[0].name) if node.outputs else None
    while reader is not None and _lone_concat(reader):
        chain.append(reader)
        reader = graph.only_consumer(reader.outputs[0].name)
    return chain


def _layout_hop(graph, node, data: str) -> bool:
    """Whether the toolkit moves a Transpose through `node` (reading `data`) on its way to a MatMul."""
    return node.op_type in LAYOUT_OPS or _parallel_slice(graph, node) or _leading_gather(node) or _scalar_swapped(node, data) or _lone_concat(node)


def _product_of_computed(node) -> bool:
    """A product of two computed tensors: a MatMul, or an Einsum the toolkit makes one (CvT)."""
    if node.op_type == "Einsum" and _einsum_product(node) is None:
        return False
    return node.op_type in ("MatMul", "Einsum") and len(node.inputs) == 2 and all(not _known(t) for t in node.inputs[:2])


def _product_by_a_constant_first(node, data: str) -> bool:
    """A MatMul of a constant by the computed `data` as its second operand (DETR's first decoder
    layer: its queries folded at conversion, q @ k^T with only the key computed): the toolkit merges
    the key's Transposes into it as into a product of two computed tensors (batched_operands_pack_cross)."""
    return (node.op_type == "MatMul" and len(node.inputs) == 2 and _known(node.inputs[0]) and not _known(node.inputs[1])
            and node.inputs[1].name == data and node.inputs[0].rank is not None and node.inputs[0].rank >= 3)


def _product_by_a_constant_second(node, data: str) -> bool:
    """A MatMul of the computed `data` (rank 3 or more) by a constant (a Linear over its last axis):
    the toolkit takes a Transpose that it reads directly into its exMatMul as it does before a
    product of two computed tensors, whichever axes it moves (constant_product_pack: WavLM's heads into its gates'
    Linear, YOLO-World's map tokens into the text guide, MLP-Mixer's token swap into a Linear)."""
    return (node.op_type == "MatMul" and len(node.inputs) == 2 and node.inputs[0].name == data and not _known(node.inputs[0])
            and _known(node.inputs[1]) and node.inputs[0].rank is not None and node.inputs[0].rank >= 3)


def _fans_out_by_parts(graph, readers) -> bool:
    """Whether `readers` of one tensor take it apart (a Split, parallel Slices, one-index Gathers:
    q, k and v unbound from one projection), which the toolkit splits into its products."""
    return all(r.op_type == "Split" or _parallel_slice(graph, r) or _leading_gather(r) for r in readers)


def _splits_tokens_into_segments(node) -> bool:
    """A Reshape [N, H, T, D] -> [N, H, L, T/L, D]: the tokens of attention's heads cut into L
    segments of consecutive tokens (Nyströmformer's landmarks, each a segment's mean)."""
    if node.op_type != "Reshape" or not node.inputs or not node.outputs:
        return False
    x, out = _static_shape(node.inputs[0]), _static_shape(node.outputs[0])
    return (x is not None and out is not None and len(x) == 4 and len(out) == 5 and out[:2] == x[:2] and out[-1] == x[-1]
            and out[2] > 1 and out[3] > 1 and out[2] * out[3] == x[2])


def _swaps_segment_means(graph, node) -> bool:
    """Whether the Transpose `node` swaps the last two axes of the means of token segments (a
    ReduceMean over the segment axis of a _splits_tokens_into_segments view: Nyströmformer's key
    landmarks, k_landmarks.transpose(-1, -2)); the toolkit keeps it a layer of its own, read by one
    product or two (transpose_readers_pack seg_k_one, seg_k_two; hf_nystromformer)."""
    perm, before = _perm(node), graph.producer(node.inputs[0].name) if node.inputs else None
    if perm is None or len(perm) != 4 or perm != [0, 1, 3, 2] or before is None or before.op_type != "ReduceMean":
        return False
    # the segments' axis of [N, H, L, T/L, D] averaged away (the view itself may have joined a layer by now)
    return bool(before.inputs) and before.inputs[0].rank == 5 and _reduced_axes(before, 5) == [3] and int(before.attr("keepdims", 1)) == 0


def _heads_read_as_a_layout(graph, node):
    """For the heads' Transpose `node` ([N, T, H, D] -> [N, H, T, D] right after their split) whose
    result, through scalar scales, a product reads and something that needs it laid out so reads
    too: (the scales, the readers that need the layout, whether a product takes it as its value);
    else None. What needs the layout: a convolution over the heads as channels (Nyströmformer's
    value) or a view cutting the tokens into segments (its landmarks), not a reduction or an
    element-wise operator (transpose_readers_pack: merged), or an Einsum the toolkit makes no exMatMul
    (its equation no batched matrix product, _einsum_product: wav2vec2-BERT's distance term
    bhld,lrd->bhlr with a constant [T, T, D]; query_read_twice_pack, RK3566: q's Transpose a CPU layer
    at 16, 20 and 64 tokens, 2 and 4 heads; q @ a constant [D, T] instead: merged)."""
    if _perm(node) != [0, 2, 1, 3] or _heads_reshape(graph, node) is None:
        return None
    scales, tensor = [], node.outputs[0]
    reader = graph.only_consumer(tensor.name)
    while reader is not None and _scalar_swapped(reader, tensor.name):
        scales.append(reader)
        tensor = reader.outputs[0]
        reader = graph.only_consumer(tensor.name)
    readers = [r for r in graph.consumers(tensor.name) if r.op_type != "Shape"]
    bound = [r for r in readers if r.op_type in ("Conv", "ConvTranspose") or _splits_tokens_into_segments(r) or (r.op_type == "Einsum" and _einsum_product(r) is None)]
    products = [r for r in readers if _product_of_computed(r) or (r.op_type == "Transpose" and _reaches_matmul(graph, r, forward=True))]
    if not bound or not products:
        return None
    as_value = any(_product_of_computed(r) and r.inputs[1].name == tensor.name and r.inputs[0].name != tensor.name for r in products)
    return scales, bound, as_value


def _swaps_a_flattened_map(graph, node) -> bool:
    """Whether the Transpose `node` reads a map [N, C, H, W] flattened to [N, C, H*W] (unit axes
    added or not, as one head of [N, 1, C, H*W]): a map's swap into tokens, a Transpose layer of
    its own on RK3566 even into a Linear (PVT-v2's spatial reduction: kv_attention_*; YOLO-World's
    one-head block: constant_product_pack's map_h1_*), where a map split into heads of two or more
    ([N, H, D, H*W]) merges."""
    before = graph.producer(node.inputs[0].name) if node.inputs else None
    if before is None or before.op_type != "Reshape":
        return False
    x, out = _static_shape(before.inputs[0]) if before.inputs else None, _static_shape(before.outputs[0])
    if x is None or out is None or len(x) != 4:
        return False
    return [d for d in out if d != 1] == [d for d in (x[0], x[1], x[2] * x[3]) if d != 1]


def _einsum_product(node) -> str | None:
    """"plain" when an Einsum's equation is a batched matrix product a @ b ("bhlt,bhtv->bhlv"),
    "b_swapped" when it is a @ b^T ("bhlk,bhtk->bhlt", attention's scores), else None: the
    toolkit converts both into its exMatMul, the swap of b merged like a Transpose."""
    equation = str(node.attr("equation", "")).replace(" ", "")
    if "->" not in equation or equation.count(",") != 1 or "." in equation:
        return None
    operands, out = equation.split("->")
    a, b = operands.split(",")
    if not (len(a) == len(b) == len(out) >= 2 and a[:-2] == b[:-2] == out[:-2] and len(set(a)) == len(a) and len(set(b)) == len(b)):
        return None
    k = a[-1]
    if a[-2] != out[-2] or k in out or k not in b:
        return None
    if b[-2] == k and b[-1] == out[-1]:
        return "plain"
    return "b_swapped" if b[-1] == k and b[-2] == out[-1] else None


def _reaches_matmul(graph, node, forward: bool, by_constant: bool = False) -> bool:
    """Whether `node`'s output (forward) or input (backward) reaches a MatMul on a computed operand through at most MAX_LAYOUT_HOPS layout operators; `by_constant` (measured on RK3566): forward, also a product by a constant (see below)."""
    frontier = [node]
    for hop in range(MAX_LAYOUT_HOPS + 1):
        nxt = []
        for n in frontier:
            if forward:
                near = [(c, o.name) for o in n.outputs if o.name for c in graph.consumers(o.name)]
            else:
                # A Transpose an earlier step merged into the product (eliminated) still stands between.
                near = [(p, p.outputs[0].name) for p in (graph.producer(t.name) or graph.wire(t.name) for t in n.inputs[:1]) if p is not None and p.outputs]
            for m, data in near:
                # A product by a constant (a Linear) takes only its own operand's Transpose, read directly
                # (CoaT's heads merged by a Transpose and a Reshape into its projection: a CPU layer).
                by_constant_product = _product_by_a_constant_first(m, data) or (hop == 0 and _product_by_a_constant_second(m, data) and not _swaps_a_flattened_map(graph, node))
                if _product_of_computed(m) or (forward and by_constant and by_constant_product):
                    return True
                if _layout_hop(graph, m, data if forward else (m.inputs[0].name if m.inputs else "")):
                    nxt.append(m)
        frontier = nxt
    return False


# On RK3566/RK3568 the NPU swaps a tensor's channels and width (a real Transpose layer) only when
# both are multiples of this; otherwise that layer runs on the CPU (measured, see below).
TRANSPOSE_LAYER_ALIGN = {"rk3566": 8, "rk3568": 8}


def _value_dims(product, tensor) -> tuple[int, int] | None:
    """(K, N) of `product`'s second operand [.., K, N] when `tensor` is that operand alone (attention's
    value; a product of a tensor with itself is not attention), else None."""
    b = product.inputs[1]
    if b.name != tensor.name or product.inputs[0].name == b.name or not b.is_static or b.rank < 2:
        return None
    if product.op_type == "Einsum" and _einsum_product(product) != "plain":
        return None  # b's last axis is summed over: a key, its swap merged
    return int(b.shape[-2]), int(b.shape[-1])


def _regroups_leading_axes(node) -> bool:
    """A Reshape that keeps the last axis as it is and only regroups the axes before it (attention's
    heads merged into the batch for 3-D batched products, [1, H, T, D] -> [H, T, D]): the channels
    the toolkit holds last stay last."""
    if node.op_type != "Reshape" or not node.inputs or not node.outputs:
        return False
    x, out = _static_shape(node.inputs[0]), _static_shape(node.outputs[0])
    return x is not None and out is not None and len(x) >= 2 and len(out) >= 2 and x[-1] == out[-1]


def _value_walk(graph, node) -> tuple[tuple[int, int], list] | None:
    """((K, N), the leading-axes Reshapes on the way) when `node`'s result reaches, through single
    readers that keep its last axis last, the second operand of a product of computed tensors
    [.., K, N] (attention's attn @ v): the toolkit holds a tensor with its last axis as channels,
    and takes a product's second operand with K as channels, so it swaps them with a Transpose
    layer of its own. A Reshape that regroups only the leading axes (3-D batched attention's view
    [1, H, T, D] -> [H, T, D]) keeps the last axis last: it is on the way, and joins that layer."""
    perm = _perm(node)
    if perm is None or perm[-1] != len(perm) - 1:
        return None
    tensor, views = node.outputs[0], []
    for _ in range(MAX_LAYOUT_HOPS + 1):
        reader = graph.only_consumer(tensor.name)
        if reader is None:
            return None
        if _product_of_computed(reader):
            dims = _value_dims(reader, tensor)
            return (dims, views) if dims is not None else None
        perm = _perm(reader) if reader.op_type == "Transpose" else None
        if _regroups_leading_axes(reader):
            views.append(reader)
        elif not ((perm is not None and perm[-1] == len(perm) - 1) or _scalar_swapped(reader, tensor.name) or _lone_concat(reader)):
            return None
        tensor = reader.outputs[0]
    return None


# The attributes transposes_merged_into_matmul gives heads whose layout something besides a product
# reads (_heads_read_as_a_layout), and the scalar scale between (rules.scale_beside_heads_laid_out).
HEADS_LAID_OUT_ATTRIBUTE = "rknn_heads_laid_out"
HEADS_LAID_OUT_SCALE_ATTRIBUTE = "rknn_scale_beside_heads_laid_out"

# The attribute transposes_merged_into_matmul gives a heads' split whose Transpose joins the view after
# it (3-D batched attention): the split is no layer beside a Transpose (rules.reshape_of_unaligned_attention_heads).
SPLIT_BEFORE_A_VIEW_ATTRIBUTE = "rknn_split_before_a_batched_view"


def _batched_view_after(graph, node):
    """The Reshape that alone reads `node`'s result and merges its leading axes, keeping the last
    (the heads into the batch of 3-D batched products: [1, H, T, D] -> [H, T, D]), else None."""
    reader = graph.only_consumer(node.outputs[0].name) if node.outputs else None
    if reader is None or not _regroups_leading_axes(reader) or reader.outputs[0].rank is None or node.outputs[0].rank is None:
        return None
    return reader if reader.outputs[0].rank < node.outputs[0].rank else None


def _value_operand(graph, node) -> tuple[int, int] | None:
    """(K, N) of the product's second operand `node` makes (see _value_walk), else None."""
    walk = _value_walk(graph, node)
    return walk[0] if walk is not None else None


def _heads_reshape(graph, node):
    """The Reshape that splits the last axis into heads right before `node`, when `node` is its only
    reader (not one batched_attention_layouts placed: a batch of token sets splits on the NPU)."""
    before = graph.producer(node.inputs[0].name) if node.inputs else None
    if before is None or before.op_type != "Reshape" or graph.only_consumer(before.outputs[0].name) is not node:
        return None
    return before if before.attr("rknn_batched_heads_layer") is None else None


def _head_size(reshape) -> int | None:
    """The head size of a Reshape that splits the last axis into heads (the smaller last axis)."""
    x, out = reshape.inputs[0], reshape.outputs[0]
    if not (x.is_static and out.is_static and x.shape and out.shape) or len(out.shape) <= len(x.shape):
        return None
    small, large = out.shape[-1], x.shape[-1]
    return int(small) if small < large and large % small == 0 else None


# The attribute transposes_merged_into_matmul gives a joint q/k/v projection's heads that the
# toolkit does not split into three convolutions (a Reshape and a Transpose layer of their own).
JOINT_PROJECTION_ATTRIBUTE = "rknn_joint_projection_kept"


def _parts_axis(graph, node) -> int | None:
    """Where the 5-D Transpose `node` puts a joint projection's parts axis (axis 2 of the heads' view
    [N, T, parts, H, D]): 0 when it stacks them first ([2, 0, ...]), else the axis every reader
    (Split or Gather) unbinds them along (ModernBERT: [0, 3, 2, 1, 4], Split on axis 2); else None."""
    perm = _perm(node)
    if perm is None or len(perm) != 5:
        return None
    if perm[0] == 2:
        return 0
    readers = graph.consumers(node.outputs[0].name) if node.outputs else []
    axis = perm.index(2)
    return axis if readers and all(r.op_type in ("Split", "Gather") and int(r.attr("axis", 0)) % 5 == axis for r in readers) else None


def _joint_projection_not_split(graph, node) -> bool:
    """`node` stacks a joint q/k/v (or k/v) projection's parts on the leading axis (Transpose
    [2, 0, ...] after the heads' Reshape [N, T, parts, H, D]) and some part, once unbound (Gather, or
    Split and Squeeze), is not taken straight into a product of computed tensors (through scalar
    scales, Transposes, reshapes): the toolkit's seperate_exmatmul_rs_split needs every part so.
    Parts unbound along another axis than the first (ModernBERT's [1, H, 3, T, D]) it never splits
    (joint_rotary_pack, RK3566: with or without a rotation)."""
    axis = _parts_axis(graph, node)
    if axis is None:
        return False
    if axis != 0:
        return True
    perm = _perm(node)
    parts = []
    for reader in graph.consumers(node.outputs[0].name):
        if reader.op_type == "Split":
            parts += [c for o in reader.outputs if o.name for c in graph.consumers(o.name)]
        elif reader.op_type == "Gather":
            parts.append(reader)
        else:
            return False
    d_axis = perm.index(4) - 1  # the head dimension D once the parts' axis is taken away
    if any(_mixes_tokens_before_a_product(graph, p, d_axis) for p in parts):
        return True
    # Channel attention (DaViT: k^T @ v, then attn @ q^T): two parts multiplied over their tokens.
    return sum(_contracts_tokens(graph, p, d_axis) for p in parts) >= 2


def _contracts_tokens(graph, part, d_axis: int, limit: int = 8) -> bool:
    """Whether a q/k/v part [.., T, D] enters its first product of computed tensors (through scalar
    scales and Transposes) with its tokens as the axis the product sums over, not its head dimension
    (as the second operand, attention's value does so in every attention: hence two parts above)."""
    rank = part.outputs[0].rank if part.outputs else None
    node, axis = part, d_axis
    for _ in range(limit):
        readers = [c for o in node.outputs if o.name for c in graph.consumers(o.name)] if rank == 4 else []
        if len(readers) != 1:
            return False
        reader, tensor = readers[0], node.outputs[0].name
        if _product_of_computed(reader):
            summed = rank - 1 if reader.inputs[0].name == tensor else rank - 2
            return summed != axis
        if reader.op_type == "Transpose" and _perm(reader) is not None:
            axis = _perm(reader).index(axis)
        elif not (reader.op_type == "Mul" and _scalar(_other_input(reader, tensor)) is not None):
            return False
        node = reader
    return False


# Operators that reduce or normalise along an axis (attribute axis or axes; ReduceL2 and friends
# as a normalisation's first step).
AXIS_OPS = frozenset({"Softmax", "LogSoftmax", "ReduceL2", "ReduceSum", "ReduceMean", "ReduceMax", "LpNormalization"})


def _reduced_axes(node, rank: int) -> list[int] | None:
    # The fused L2 normalisation keeps every axis it reduces (fuse_l2_normalisation).
    axes = node.attr("axes") if node.op_type.startswith("Reduce") or node.attr("axes") is not None else [node.attr("axis", -1)]
    if axes is None and len(node.inputs) > 1 and node.inputs[1].value is not None:
        axes = [int(a) for a in node.inputs[1].value.reshape(-1)]
    return None if axes is None else [int(a) % rank for a in axes]


def _mixes_tokens_before_a_product(graph, part, d_axis: int, limit: int = 16) -> bool:
    """Whether a q/k/v part [.., T, D] meets, before a product of computed tensors, a Softmax or
    reduction along another axis than its head dimension D (CoaT's k.softmax(dim=2), XCiT's norm
    over the tokens of the transposed q and k); reductions along D (a cosine attention's norms) and
    element-wise operators (rotary embeddings) leave the split possible."""
    rank = part.outputs[0].rank if part.outputs else None
    if rank != 4:
        return False
    frontier, seen = [(part, d_axis)], 0
    while frontier and seen < limit:
        node, d_axis = frontier.pop()
        seen += 1
        for reader in [c for o in node.outputs if o.name for c in graph.consumers(o.name)]:
            if _product_of_computed(reader):
                continue
            axis = d_axis
            if reader.op_type == "Transpose" and _perm(reader) is not None and d_axis in _perm(reader):
                axis = _perm(reader).index(d_axis)
            elif reader.op_type in AXIS_OPS:
                reduced = _reduced_axes(reader, rank)
                if reduced is not None and any(a != d_axis for a in reduced):
                    return True
            frontier.append((reader, axis))
    return False


def _following_transposes(graph, node) -> list:
    chain = []
    nxt = _next(graph, node, "Transpose")
    while nxt is not None:
        chain.append(nxt)
        nxt = _next(graph, nxt, "Transpose")
    return chain


# The attribute the pass below gives the key's Transpose of a separate key/value projection, so that
# transposes_merged_into_matmul leaves it (a Transpose layer, placed by the chip's own rules).
KV_KEY_ATTRIBUTE = "rknn_kv_key_transpose"


def _kv_stack(graph, node):
    """The heads' Transpose when `node` reads one half of a two-part projection split into heads:
    Reshape [N, S, 2, H, D] (H > 1), Transpose [2, 0, 3, 1, 4], then a Split or one-index Gathers
    (and Squeezes); else None."""
    for _ in range(3):
        node = graph.producer(node.inputs[0].name) if node.inputs else None
        if node is None or node.op_type not in ("Squeeze", "Split", "Gather", "Transpose"):
            return None
        if node.op_type == "Transpose":
            split = graph.producer(node.inputs[0].name)
            heads = _static_shape(split.outputs[0]) if split is not None and split.op_type == "Reshape" else None
            return node if _perm(node) == [2, 0, 3, 1, 4] and heads is not None and len(heads) == 5 and heads[2] == 2 and heads[3] > 1 else None
    return None


def _joint_query_key_key(graph, node) -> bool:
    """Whether `node` is the key's Transpose [0, 1, 3, 2] of a joint query/key projection (the
    other half of its two-part stack reaching the key's own product, _query_beside_key)."""
    stack = _kv_stack(graph, node) if _perm(node) == [0, 1, 3, 2] else None
    return stack is not None and _query_beside_key(graph, stack, node)


def _joint_query_key_stack(graph, stack) -> bool:
    """Whether the heads' Transpose `stack` splits a joint query/key projection: a key's Transpose
    [0, 1, 3, 2] within two hops of it (a Gather, or a Split and a Squeeze) is _joint_query_key_key."""
    frontier = [stack]
    for _ in range(3):
        frontier = [c for n in frontier for o in n.outputs if o.name for c in graph.consumers(o.name)]
        if any(c.op_type == "Transpose" and _joint_query_key_key(graph, c) for c in frontier):
            return True
    return False


def _query_beside_key(graph, stack, key) -> bool:
    """Whether the other half of the two-part projection `stack` reaches, without passing `key`
    (the key's Transpose), the product the key is the second operand of: a joint query/key
    projection (ConViT's qk), which the toolkit splits like a joint query/key/value one."""
    tensor, product = key.outputs[0], None
    for _ in range(MAX_LAYOUT_HOPS + 1):
        reader = graph.only_consumer(tensor.name)
        if reader is None or not reader.outputs:
            return False
        if _product_of_computed(reader):
            product = reader
            break
        tensor = reader.outputs[0]
    frontier = [stack]
    # Split, Squeeze, the scales: the query meets its product within a few hops, as the key does.
    for _ in range(MAX_LAYOUT_HOPS + 2):
        frontier = [c for n in frontier for o in n.outputs if o.name for c in graph.consumers(o.name) if c is not key]
        if product is not None and any(c is product for c in frontier):
            return True
    return False


@RULES.graph_pass("Transpose", chips=SOFTMAX_ON_CPU_CHIPS, OBSERVED=TOOLKIT_OBSERVED)
def key_transpose_of_a_kv_projection(graph, chip):
    """{OBSERVED} splits a joint query/key/value projection into three convolutions that write the key already transposed, but a key/value projection of its own (PVT's spatial-reduction attention: q from the tokens, k and v from one Linear of the reduced map) it keeps whole: the key's Transpose [0, 1, 3, 2] of more than one head is then a Transpose layer of its own, on the CPU on RK3566/RK3568.

    Measured on PVT-v2's attention (2, 5 and 8 heads: CPU; 1 head: no layer) and on small
    spatial-reduction attention models (2 heads of 32, 4 or 16 keys, Split or Gather: CPU), against
    the joint projection (timm's qkv, Split or Gather, 16 or 65 tokens: no layer). A scalar scale
    between that Transpose and the product (PVT-v2's k * sqrt(scale)) joins its layer (the
    toolkit's fuse_mul_exmatmul, named so in its build log: PVT-v2-b0's three stages, pool).
    A joint query/key projection with a value of its own (ConViT's qk) it splits like the joint
    query/key/value one: no layer (rknn-toolkit2 2.5.0 on RK3566: 16 or 65 tokens, 2 or 4 heads,
    Gather or Split, the key the first or the second half).
    """
    for node in [n for n in graph.nodes if n.op_type == "Transpose"]:
        perm = _perm(node)
        if _kv_stack(graph, node) is not None and perm == [0, 1, 3, 2] and not _joint_query_key_key(graph, node):
            graph.fuse([node, *(_key_scales(graph, node) or [])], "Transpose", leader=node, attributes={"perm": perm, KV_KEY_ATTRIBUTE: 1})


# The attribute the pass below gives the swap of a part of torch's joint key/value in-projection.
TORCH_KV_PART_ATTRIBUTE = "rknn_torch_kv_part_swap"


def _torch_kv_stack(graph, node) -> list | None:
    """The one-index Gathers (axis 0) of the parts when `node` is torch.onnx's stack of a joint key/value
    in-projection (nn.MultiheadAttention with key is value: Reshape [S, N, 2, E], Unsqueeze 0, Transpose
    [3, 1, 2, 0, 4], Squeeze, then a Gather of each part); else None."""
    before = graph.producer(node.inputs[0].name) if node.inputs else None
    unflat = graph.producer(before.inputs[0].name) if before is not None and before.op_type == "Unsqueeze" else None
    parts = _static_shape(unflat.outputs[0]) if unflat is not None and unflat.op_type == "Reshape" else None
    if _perm(node) != [3, 1, 2, 0, 4] or parts is None or len(parts) != 4 or parts[2] != 2:
        return None
    squeeze = graph.only_consumer(node.outputs[0].name)
    gathers = graph.consumers(squeeze.outputs[0].name) if squeeze is not None and squeeze.op_type == "Squeeze" else []
    ok = len(gathers) == 2 and all(g.op_type == "Gather" and int(g.attr("axis", 0)) == 0 and _known(g.inputs[1]) for g in gathers)
    return gathers if ok else None


def _part_heads_swap(graph, gather):
    """(the view [S, N*H, D] putting the heads into the batch, its swap [1, 2, 0] or [1, 0, 2]) read by `gather`'s
    part alone, the swap taken into a product of computed tensors (through scalar scales); else None."""
    view = graph.only_consumer(gather.outputs[0].name)
    swap = graph.only_consumer(view.outputs[0].name) if view is not None and view.op_type == "Reshape" else None
    if swap is None or swap.op_type != "Transpose" or _perm(swap) not in ([1, 2, 0], [1, 0, 2]) or len(_static_shape(swap.outputs[0]) or ()) != 3:
        return None
    # The query may be computed from constants alone (SigLIP's probe, folded): a product by a constant first.
    return (view, swap) if _reaches_matmul(graph, swap, forward=True, by_constant=True) else None


@RULES.graph_pass("Transpose", chips=tuple(TRANSPOSE_LAYER_ALIGN), OBSERVED=TOOLKIT_OBSERVED, ALIGN=8, chip_key=TRANSPOSE_LAYER_ALIGN.get)
def torch_key_value_in_projection(graph, chip):
    """{OBSERVED} takes the parts of torch's joint key/value in-projection (nn.MultiheadAttention with key is value, batch first: SigLIP's pooling head) from its stack without a Transpose layer (the stack's swap [3, 1, 2, 0, 4] on the NPU), but keeps the key's and the value's swaps of their heads into the batch ([1, 2, 0], [1, 0, 2]) Transpose layers of their own, on RK3566/RK3568 on the CPU, with their view when the tokens are not a multiple of {ALIGN}.

    Measured with rknn-toolkit2 2.5.0 on RK3566 and RK3588 (2026-12-05; tests/forms_models.py
    torch_mha_pack: 64, 16 or 9 key tokens, one query, 2 heads of 32 or 4 of 16): on RK3566 the
    stack's swap on the NPU and the key's and value's swaps on the CPU in all three, the key's
    view with its swap at 9 tokens (the value's view was already so); RK3588: all on the NPU.
    """
    for stack in [n for n in graph.nodes if n.op_type == "Transpose"]:
        gathers = _torch_kv_stack(graph, stack)
        found = [_part_heads_swap(graph, g) for g in gathers] if gathers else []
        if not found or any(f is None for f in found):
            continue
        graph.eliminate(stack)
        for view, swap in found:
            tokens = (_static_shape(view.inputs[0]) or (0,))[0]
            members = [view, swap] if tokens % TRANSPOSE_LAYER_ALIGN[chip] else [swap]
            graph.fuse(members, "Transpose", leader=swap, attributes={"perm": _perm(swap), TORCH_KV_PART_ATTRIBUTE: 1})


# The attribute transposes_merged_into_matmul gives a feature map's tokens swapped and unsqueezed
# into attention's value (MobileNetV4's multi-query attention): a CPU layer on RK3566/RK3568.
UNSQUEEZED_VALUE_ATTRIBUTE = "rknn_unsqueezed_tokens_value"


def _map_value_operand(graph, node):
    """For a Transpose that swaps the two last axes of what a Reshape of a feature map wrote
    ([N, H, D, T] -> [N, H, T, D], or the tokens [N, D, T] -> [N, T, D]) and reaches, through
    single readers that keep its last axis last (one-element scales, an Unsqueeze of a leading
    axis), the second operand of a product of computed tensors (attention's value):
    (the Reshape, the Unsqueezes on the way, (K, N) of the operand); else None."""
    perm, before = _perm(node), graph.producer(node.inputs[0].name) if node.inputs else None
    if perm is None or len(perm) < 3 or perm != [*range(len(perm) - 2), len(perm) - 1, len(perm) - 2]:
        return None
    if before is None or before.op_type != "Reshape" or graph.only_consumer(before.outputs[0].name) is not node:
        return None
    if _regroups_leading_axes(before):
        return None  # the channels stay last: the swap then puts them on K, as a key's k^T (merged)
    tensor, unsqueezes = node.outputs[0], []
    for _ in range(MAX_LAYOUT_HOPS + 1):
        reader = graph.only_consumer(tensor.name)
        if reader is None:
            return None
        if _product_of_computed(reader):
            dims = _value_dims(reader, tensor)
            return (before, unsqueezes, dims) if dims else None
        out = _static_shape(reader.outputs[0]) if reader.outputs else None
        shape = _static_shape(tensor)
        if reader.op_type == "Unsqueeze" and out is not None and shape is not None and len(out) == len(shape) + 1 and out[-2:] == shape[-2:]:
            unsqueezes.append(reader)
        elif not _scalar_swapped(reader, tensor.name):
            return None
        tensor = reader.outputs[0]
    return None


# The attribute the pass below gives a batched attention's layout layers of their own, so that
# transposes_merged_into_matmul leaves them (Transpose layers, placed by the chip's own rules).
BATCHED_HEADS_ATTRIBUTE = "rknn_batched_heads_layer"


def _batched_heads(t) -> tuple[int, int] | None:
    """(tokens, head size) of a 4-D [B, heads, tokens, head size] with a batch B > 1 (MobileViT's
    attention over each pixel position's patches, windowed attention), else None."""
    shape = _static_shape(t)
    return (int(shape[2]), int(shape[3])) if shape is not None and len(shape) == 4 and shape[0] > 1 else None


def _key_scales(graph, node) -> list | None:
    """The scalar Muls/Divs between `node` and the product it is the second operand of (attention's
    key, transposed), or None when its result is not that operand."""
    tensor, scales = node.outputs[0], []
    for _ in range(MAX_LAYOUT_HOPS):
        reader = graph.only_consumer(tensor.name)
        if reader is not None and _product_of_computed(reader):
            return scales if reader.inputs[1].name == tensor.name and reader.inputs[0].name != tensor.name else None
        if reader is None or not _scalar_swapped(reader, tensor.name):
            return None
        scales.append(reader)
        tensor = reader.outputs[0]
    return None


def _batched_tokens(reshape) -> bool:
    """Whether `reshape` reads tokens [B, T, C] with a batch B > 1."""
    x = _static_shape(reshape.inputs[0]) if reshape is not None and reshape.inputs else None
    return x is not None and len(x) == 3 and x[0] > 1


def _batched_separate_heads(graph, node, perm) -> bool:
    """`node` is a Transpose [0, 2, 1, 3] right after one projection's heads' Reshape [B, T, C] ->
    [B, T, H, D] with B > 1 (q, k and v each their own Linear): the Reshape splits on the NPU, and
    the value's Transpose is a layer of its own unless its two last axes are multiples of 8."""
    heads = _heads_reshape(graph, node)
    if perm not in ([0, 2, 1, 3], [0, 2, 3, 1]) or not _batched_tokens(heads):
        return False  # [0, 2, 3, 1]: the key transposed once (transformers' export), on the NPU
    value = _value_operand(graph, node)
    graph.fuse([heads], "Reshape", attributes={BATCHED_HEADS_ATTRIBUTE: 0})
    if value is not None and any(d % 8 for d in value):
        graph.fuse([node], "Transpose", attributes={"perm": perm, BATCHED_HEADS_ATTRIBUTE: list(value)})
    return True


def _batched_one_token_heads(graph) -> None:
    """Marks the heads' split [B, 1, C] -> [B, 1, H, D] and, where a residual Linear reads it, the
    merge [B, 1, H, D] -> [B, 1, H*D] of attention over B > 1 token sets of one token each: the
    Transposes beside them move only unit axes and are Reshapes by now, so the Transpose loop of
    batched_attention_layouts does not reach them."""
    for node in [n for n in graph.nodes if n.op_type == "Reshape" and n.attr(BATCHED_HEADS_ATTRIBUTE) is None]:
        x, out = _static_shape(node.inputs[0]) if node.inputs else None, _static_shape(node.outputs[0]) if node.outputs else None
        if not x or not out or x[0] <= 1:
            continue
        split = len(x) == 3 and len(out) == 4 and out[:2] == (x[0], 1) and x[1] == 1 and out[2] > 1 and out[2] * out[3] == x[2]
        merge = len(x) == 4 and x[1] == 1 and x[2] > 1 and out == (x[0], 1, x[2] * x[3]) and _residual_linear(graph, node)
        if split or merge:
            graph.fuse([node], "Reshape", attributes={BATCHED_HEADS_ATTRIBUTE: 0})


def _after_transpose(graph, node) -> bool:
    """Whether `node` reads a Transpose's result (the toolkit composes the two into one)."""
    before = graph.producer(node.inputs[0].name) if node.inputs else None
    return before is not None and before.op_type == "Transpose"


def _batched_split_heads(graph, node, by: str = "Split"):
    """The heads' Reshape [B, T, C] -> [B, T, parts, H, D] (B > 1) before `node`, a Transpose
    [2, 0, 3, 1, 4] whose parts are unbound `by` a Split (or, by="Gather", each by a one-index
    Gather on the first axis); else None."""
    heads = _heads_reshape(graph, node)
    x = _static_shape(heads.inputs[0]) if heads is not None else None
    readers = graph.consumers(node.outputs[0].name)
    if x is None or len(x) != 3 or x[0] <= 1 or _perm(node) != [2, 0, 3, 1, 4] or not readers:
        return None
    if by == "Gather":  # each part straight into a product (through layout hops and scalar scales)
        one_index = all(r.op_type == "Gather" and int(r.attr("axis", 0)) == 0 and len(_ints(r.inputs[1]) or ()) == 1 for r in readers)
        return heads if one_index and all(_reaches_matmul(graph, r, forward=True) for r in readers) else None
    return heads if [r.op_type for r in readers] == ["Split"] else None


# The attribute area_attention_layouts gives the layout nodes of area attention it places: the
# Transposes are layers of their own (transposes_merged_into_matmul and batched_attention_layouts
# leave them; the chip's rules place them), the Reshapes run on the CPU (rules.area_attention_reshape_on_cpu).
AREA_ATTENTION_ATTRIBUTE = "rknn_area_attention_layout"
AREA_PARTS = 3  # q, k and v unbound from one projection


def _ungroups_areas(node) -> bool:
    """A Reshape that merges the leading axis back: [N*A, ...] -> [N, ...] (A > 1)."""
    x, out = _static_shape(node.inputs[0]) if node.inputs else None, _static_shape(node.outputs[0]) if node.outputs else None
    return node.op_type == "Reshape" and bool(x) and bool(out) and out[0] < x[0] and x[0] % out[0] == 0


def _area_merge(graph, swap):
    """The nodes after `swap` (a Transpose [0, 3, 1, 2] of a part or of attn @ v, [B, H, D, T] ->
    [B, T, H, D]) that merge the areas back ([B, T, H, D] -> [B/A, A*T, H*D]), make the tokens a
    channels-last map ([.., H, W, C]) and permute that to NCHW: (swap, ungroup, to_map, back), or None."""
    if swap is None or _perm(swap) != [0, 3, 1, 2]:
        return None
    ungroup = _next(graph, swap, "Reshape")
    to_map = _next(graph, ungroup, "Reshape") if ungroup is not None and _ungroups_areas(ungroup) else None
    back = _next(graph, to_map, "Transpose") if to_map is not None and _tokens_to_nhwc(to_map) else None
    return (swap, ungroup, to_map, back) if back is not None and _perm(back) == [0, 3, 1, 2] else None


def _area_attention_block(graph, node):
    """For a Transpose [0, 2, 3, 1] that splits the heads of area-regrouped tokens ([B, T, 3C] from a
    Reshape that regroups [N, A*T, 3C] into B = N*A areas; heads [B, T, H, 3D]; read by a Split of
    q, k and v on axis 2): (heads' Reshape, q's Transpose [0, 1, 3, 2] into the scores' product, the
    value's merge, the result's merge: see _area_merge); else None."""
    heads = graph.producer(node.inputs[0].name) if node.inputs else None
    regroup = graph.producer(heads.inputs[0].name) if heads is not None and heads.op_type == "Reshape" and heads.inputs else None
    split = graph.only_consumer(node.outputs[0].name) if node.outputs else None
    x = _static_shape(regroup.inputs[0]) if regroup is not None and regroup.inputs else None
    if _perm(node) != [0, 2, 3, 1] or regroup is None or not x or not _regroups_tokens(regroup, x[0]) or split is None or split.op_type != "Split":
        return None
    parts = [o for o in split.outputs if o.name]
    if len(parts) != AREA_PARTS or int(split.attr("axis", 0)) % 4 != 2:
        return None
    query = graph.only_consumer(parts[0].name)
    if query is not None and query.op_type in SCALAR_SWAPPED_OPS and _scalar_swapped(query, parts[0].name):
        query = _next(graph, query, "Transpose")
    value_readers = graph.consumers(parts[2].name)
    product = next((r for r in value_readers if _product_of_computed(r) and r.inputs[0].name == parts[2].name), None)
    swaps = [r for r in value_readers if r.op_type == "Transpose"]
    result_swap = _next(graph, product, "Transpose") if product is not None else None
    merges = (_area_merge(graph, swaps[0]) if len(swaps) == 1 else None, _area_merge(graph, result_swap))
    if query is None or _perm(query) != [0, 1, 3, 2] or None in merges:
        return None
    return heads, query, merges[0], merges[1]


@RULES.graph_pass("Transpose", chips=tuple(TRANSPOSE_LAYER_ALIGN), OBSERVED=TOOLKIT_OBSERVED)
def area_attention_layouts(graph, chip):
    """{OBSERVED} lays out area attention (YOLO12's AAttn with more than one area: a map's tokens regrouped on the leading axis into areas, [N, A*T, 3C] -> [N*A, T, 3C], heads split by a Reshape [N*A, T, H, 3D] and a Transpose [0, 2, 3, 1], q, k and v Split on axis 2; the result of attn @ v and v each swapped back by a Transpose [0, 3, 1, 2], the areas merged by a Reshape [N, A*T, C] and made a channels-last map [N, H, W, C]) with Transpose and Reshape layers of their own, which on RK3566/RK3568 run on the CPU: the heads' Transpose, the result's swap back, and the Reshapes that merge the areas and make the result a map. Of the heads' Reshape, q's Transpose [0, 1, 3, 2] into the scores and the Reshape that makes v a map, it moves the heads' Transpose past the Split in the first such block of the graph (node order): q's Transpose is a CPU layer there and both Reshapes run on the NPU; in every later block the heads' Transpose stays before the Split, both Reshapes are CPU layers and q's Transpose merges into the product.

    Measured on RK3566 with tests/forms_models.py area_attention_* (as torch.onnx writes
    Ultralytics' AAttn: 4 areas of 4x4 to 40x40 maps, 4 to 400 tokens per area, heads of 16 and
    32, 2 or 4 heads, one to three blocks in a row, with or without the residual Add, the first
    block reading a Conv or an Add, two independent rows of blocks in one model: the first block
    of the graph only differs) and the pool's yolo12n, -cls and -seg (model.6, 10x10 map at the
    pool's 160x160 input). With one area (YOLO12's model.8) none of this: all on the NPU but the
    Softmax. RK3588 keeps all of it on the NPU.
    """
    first = True
    for node in [n for n in graph.nodes if n.op_type == "Transpose"]:
        block = _area_attention_block(graph, node) if node.attr(AREA_ATTENTION_ATTRIBUTE) is None else None
        if block is None:
            continue
        heads, query, (value_swap, value_merge, value_map, value_back), (result_swap, result_merge, result_map, result_back) = block
        for transpose in (node, value_swap, value_back, result_swap, result_back) + ((query,) if first else ()):
            graph.fuse([transpose], "Transpose", attributes={"perm": _perm(transpose), AREA_ATTENTION_ATTRIBUTE: 1})
        for reshape in (value_merge, result_merge, result_map) + (() if first else (heads, value_map)):
            graph.fuse([reshape], "Reshape", attributes={AREA_ATTENTION_ATTRIBUTE: 1})
        first = False


def _normalised(graph, node) -> bool:
    """Whether `node` reads an L2-normalised tensor (F.normalize: Swin-V2's key; fuse_l2_normalisation
    has made it an LpNormalization by now)."""
    writer = graph.producer(node.inputs[0].name) if node.inputs else None
    return writer is not None and writer.op_type == "LpNormalization"


def _batched_last_axis_part(graph, node) -> list | None:
    """For a Transpose [0, 2, 1, 3] or [0, 2, 3, 1] of one of three parts Split on the last axis of a
    joint projection's heads [B, T, H, 2*kd + vd] with B > 1 and T not a multiple of 8 (TinyViT's
    windowed attention): the Transpose and the scalar scales right after it; else None."""
    split = graph.producer(node.inputs[0].name) if node.inputs else None
    shape = _static_shape(split.inputs[0]) if split is not None and split.op_type == "Split" else None
    if not shape or len(shape) != 4 or shape[0] <= 1 or shape[1] % 8 == 0 or _perm(node) not in ([0, 2, 1, 3], [0, 2, 3, 1]) or not _part_of_a_last_axis_split(graph, node):
        return None
    members, tensor = [node], node.outputs[0]
    for _ in range(MAX_LAYOUT_HOPS):
        # A Shape beside the scale reads only the static shape (SDPA's export: the scale from q.size(-1)).
        readers = [r for r in graph.consumers(tensor.name) if r.op_type != "Shape"]
        reader = readers[0] if len(readers) == 1 else None
        if reader is None or not _scalar_swapped(reader, tensor.name):
            break
        members.append(reader)
        tensor = reader.outputs[0]
    return members


# The attribute batched_attention_layouts gives the heads' Reshape [B, T, C] -> [B, T, H, 2*kd + vd]
# (B > 1) before a Split on the last axis (rules.batched_last_axis_heads: uncertain).
BATCHED_LAST_AXIS_HEADS_ATTRIBUTE = "rknn_batched_last_axis_heads"


def _batched_last_axis_heads(graph) -> None:
    """Marks the heads' Reshape of each joint projection Split on the last axis over B > 1 token sets."""
    for split in [n for n in graph.nodes if n.op_type == "Split"]:
        heads = graph.producer(split.inputs[0].name) if split.inputs else None
        shape = _static_shape(split.inputs[0]) if split.inputs else None
        parts = [o for o in split.outputs if o.name]
        if heads is None or heads.op_type != "Reshape" or not shape or len(shape) != 4 or shape[0] <= 1 or len(parts) != 3:
            continue
        if int(split.attr("axis", 0)) % 4 == 3 and graph.only_consumer(heads.outputs[0].name) is split:
            graph.fuse([heads], "Reshape", attributes={BATCHED_LAST_AXIS_HEADS_ATTRIBUTE: 1})


@RULES.graph_pass("Transpose", chips=tuple(TRANSPOSE_LAYER_ALIGN), OBSERVED=TOOLKIT_OBSERVED, ALIGN=8)
def batched_attention_layouts(graph, chip):
    """{OBSERVED} lays out attention over a batch of token sets (B > 1: MobileViT's attention over the patches of each pixel position) otherwise than attention over one: the heads' split of a joint q/k/v projection (Reshape, Transpose [2, 0, 3, 1, 4], Split) or of separate q, k and v projections (Reshape [B, T, H, D]; the value's Transpose [0, 2, 1, 3] a layer of its own unless its tokens and head size are multiples of {ALIGN}) stays on the NPU whatever the head size; the key's Transpose [0, 1, 3, 2] into the scores' product (of a part unbound from the joint projection, not right after another Transpose), with the scalar scales after it, is a Transpose layer of its own unless its tokens and head size are multiples of {ALIGN}; and so is the Transpose [0, 2, 1, 3] after attn @ v unless the head size is. A joint projection whose parts are taken by one-index Gathers (torchvision's Swin: qkv[0], qkv[1], qkv[2]), each straight into a product, keeps its heads' Reshape and Transpose as one Transpose layer. On RK3566/RK3568 those Transpose layers run on the CPU.

    Measured on tests/forms_models.py batched_attention on RK3566 (batch 2, 4, 9; tokens 1, 4, 8,
    9, 12, 16, 49; heads of 12, 16, 20, 24; q alone or q and k scaled): the key's Transpose on the
    CPU for 4, 9, 12, 49 tokens or heads of 12 and 20; the heads' swap back for heads of 12 and 20;
    the split on the NPU. With a batch of 1 (the same builder) none of this: the split of heads of
    12 or 20 on the CPU, the Transposes merged. Separate projections (separate_projections_pack,
    batch 2 and 4, 4, 9, 16 tokens, heads of 16, 20, 24): every heads' Reshape on the NPU, q's and
    k's Transposes merged, the value's on the CPU for heads of 20 or 9 tokens. The pass runs before
    transposes_merged_into_matmul.

    Found on the held-out pool pair hf_mobilevit/rk3566 (its 16 heads' Reshapes and key
    Transposes the audit had on the CPU) and measured on its attention form on RK3566
    (tests/forms_models.py MOBILEVIT_KEY_PACKS, one thing varied at a time): the key transposed
    once [0, 2, 3, 1] (transformers' export) splits on the NPU, Reshape and Transpose, with batch
    4, 1, 2, 4 or 16 tokens, heads of 20, 36, 48, 60 (batch 1: on the CPU); with one token per
    set (batch 2, 3, 4, 8; heads of 60 or 36) every split is on the NPU, and so is the merge
    where a Linear added residually reads it (without: on the CPU); with 2, 4 or 16 tokens the
    merge of heads of 20, 36 or 60 stays on the CPU.

    Swin's window attention (tests/forms_models.py window_pack, RK3566, 2026-12-04): q, k and v
    Gathered from the Transpose [2, 0, 3, 1, 4] of 4 or 9 windows (49 tokens, heads of 32; 64
    tokens with windows of 8): that Reshape and Transpose on the CPU; one window: NPU. Swin-V2's
    parts, L2-normalised before their products, split on the NPU (pool, 4 windows of 64 tokens).
    Swin-V2's key, L2-normalised before its Transpose (window_cosine_pack, RK3566): that Transpose
    on the CPU for 4 windows of 64 tokens and 9 of 49 (heads of 32), aligned or not; one window: NPU.
    TinyViT's q, k and v Split on the last axis of the heads' [B, T, H, 3D] (last_axis_split_pack,
    RK3566): with 4 windows of 49 tokens (4 heads of 32, 2 of 16, scaled or not) the three
    Transposes, with the scales after q's and k's, are Transpose layers on the CPU; with 64 or 16
    tokens, or one window of 196, merged (NPU).
    TNT's inner attention, a joint query/key projection with a value of its own (qk_attention
    batched, RK3566, 2026-12-04: 16 or 4 sets of 16 or 12 tokens, heads of 6 or 8, Split or
    Gather): the key's Transpose and the Gathered heads' split on the NPU, as the audit of a
    joint q/k/v Split has them; the value's and the merge's Transposes on the CPU as above.
    """
    transposes = [n for n in graph.nodes if n.op_type == "Transpose"]
    # Found before the loop fuses the heads' split, which hides the stack from the key.
    qk_keys = {n.name for n in transposes if _joint_query_key_key(graph, n)}
    for node in transposes:
        if not node.outputs or graph.producer(node.outputs[0].name) is not node or node.attr(AREA_ATTENTION_ATTRIBUTE) is not None:
            continue  # area_attention_layouts placed it
        perm, dims = _perm(node), _batched_heads(node.inputs[0])
        split = _batched_split_heads(graph, node)
        if split is not None:
            graph.fuse([split, node], "Reshape", leader=split, attributes={BATCHED_HEADS_ATTRIBUTE: 0})
        elif (gathered := _batched_split_heads(graph, node, by="Gather")) is not None and _joint_query_key_stack(graph, node):
            graph.fuse([gathered, node], "Reshape", leader=gathered, attributes={BATCHED_HEADS_ATTRIBUTE: 0})  # split like a Split
        elif gathered is not None:
            graph.fuse([gathered, node], "Transpose", leader=node, attributes={"perm": perm, BATCHED_HEADS_ATTRIBUTE: 0})
        elif (part := _batched_last_axis_part(graph, node)) is not None:
            graph.fuse(part, "Transpose", leader=node, attributes={"perm": perm, BATCHED_HEADS_ATTRIBUTE: 0})
        elif _batched_separate_heads(graph, node, perm) or dims is None:
            continue
        elif perm == [0, 1, 3, 2] and (dims[0] % 8 or dims[1] % 8 or _normalised(graph, node)) and _key_scales(graph, node) is not None and not _after_transpose(graph, node) and node.name not in qk_keys:
            graph.fuse([node, *_key_scales(graph, node)], "Transpose", leader=node, attributes={"perm": perm, BATCHED_HEADS_ATTRIBUTE: list(dims)})
        elif perm == [0, 2, 1, 3] and dims[1] % 8 and (before := graph.producer(node.inputs[0].name)) is not None and _product_of_computed(before):
            graph.fuse([node], "Transpose", attributes={"perm": perm, BATCHED_HEADS_ATTRIBUTE: list(dims)})
    _batched_one_token_heads(graph)
    _batched_last_axis_heads(graph)


# The attribute the pass below gives the heads' merge Transpose it keeps, so that
# transposes_merged_into_matmul leaves it (a Transpose layer, placed by the chip's rules).
MERGE_BEFORE_ACTIVATION_ATTRIBUTE = "rknn_merge_before_activation"
# The readers of the merged heads measured to keep the Transpose (other activations not probed).
MERGE_READERS_MEASURED = frozenset({"HardSwish"})


def _part_of_a_last_axis_split(graph, node) -> bool:
    """Whether `node` reads one of three parts Split on the last axis of [N, T, H, 2*kd + vd] (LeViT's
    q, k and v from one projection, per head): the toolkit splits that projection into three
    convolutions and writes the value in its layout (no Transpose layer of its own)."""
    split = graph.producer(node.inputs[0].name) if node.inputs else None
    if split is None or split.op_type != "Split" or len([o for o in split.outputs if o.name]) != 3:
        return False
    rank = split.inputs[0].rank
    return rank == 4 and int(split.attr("axis", 0)) % rank == rank - 1


@RULES.graph_pass("Transpose", chips=tuple(TRANSPOSE_LAYER_ALIGN), OBSERVED=TOOLKIT_OBSERVED)
def merge_transpose_before_an_activation(graph, chip):
    """{OBSERVED} merges the heads' Transpose [0, 2, 1, 3] after attn @ v into the Linear that reads the merged heads, but where the merged heads go first to an activation (LeViT's projection: a HardSwish, then the Linear) that Transpose is a layer of its own: on RK3566/RK3568 it runs on the CPU.

    Measured on tests/forms_models.py levit_attention_pack on RK3566: 9 and 16 tokens, 4 or 8 heads,
    values of 32 or 64, with the HardSwish (CPU) and without it (merged); one query token (the
    Transpose moves a unit axis: a reshape). LeViT-128S's attention-downsample block (tuning).
    The same probe: a value Split with q and k from one projection on the last axis per head
    (_part_of_a_last_axis_split) has no Transpose layer at 9 tokens, where k and v alone (the
    downsample block) make one at 4 tokens (transposes_merged_into_matmul).
    """
    for node in [n for n in graph.nodes if n.op_type == "Transpose"]:
        before = graph.producer(node.inputs[0].name) if node.inputs else None
        merge = _next(graph, node, "Reshape")
        reader = graph.only_consumer(merge.outputs[0].name) if merge is not None and merge.outputs else None
        if _perm(node) != [0, 2, 1, 3] or before is None or not _product_of_computed(before) or reader is None:
            continue
        if reader.op_type in MERGE_READERS_MEASURED:
            graph.fuse([node], "Transpose", attributes={"perm": _perm(node), MERGE_BEFORE_ACTIVATION_ATTRIBUTE: 1})


# The attribute the pass below gives the key's Transpose of a joint projection the toolkit keeps
# whole, so that transposes_merged_into_matmul leaves it (a Transpose layer, placed by the chip's rules).
JOINT_KEY_ATTRIBUTE = "rknn_joint_projection_key"


def _stacked_parts_before(graph, node, hops: int = 6):
    """The Transpose that stacks a joint projection's parts ([2, 0, ...] after the heads' Reshape)
    that `node` reads through at most `hops` producers (first inputs), or None."""
    for _ in range(hops):
        node = graph.producer(node.inputs[0].name) if node.inputs else None
        if node is None or _product_of_computed(node):
            return None
        if node.op_type == "Transpose" and _parts_axis(graph, node) is not None:
            return node
    return None


def _product_after_softmax(graph, node) -> bool:
    """Whether `node` (through scalar scales) is the second operand of a product whose first is a
    Softmax's result: attention times its value, not the scores' product."""
    tensor = node.outputs[0]
    for _ in range(MAX_LAYOUT_HOPS):
        reader = graph.only_consumer(tensor.name)
        if reader is not None and _product_of_computed(reader):
            first = graph.producer(reader.inputs[0].name)
            return reader.inputs[1].name == tensor.name and first is not None and first.op_type == "Softmax"
        if reader is None or not _scalar_swapped(reader, tensor.name):
            return False
        tensor = reader.outputs[0]
    return False


@RULES.graph_pass("Transpose", chips=tuple(TRANSPOSE_LAYER_ALIGN), OBSERVED=TOOLKIT_OBSERVED)
def key_transpose_of_a_joint_projection_kept_whole(graph, chip):
    """{OBSERVED} keeps a joint q/k/v projection whole when some part is not taken straight into a product (XCiT's and EdgeNeXt's cross-covariance attention: q and k L2-normalised over the tokens; see transposes_merged_into_matmul), and the key's Transpose [0, 1, 3, 2] into the scores' product is then a Transpose layer of its own, whatever its sizes: on RK3566/RK3568 it runs on the CPU.

    Measured on tests/forms_models.py xca_pack on RK3566 (4 to 64 tokens, heads of 16 to 32, 2 or 4
    heads: the key's Transpose on the CPU in all six; RK3588: on the NPU) and XCiT-nano's twelve
    blocks (tuning part of the pool).
    """
    for node in [n for n in graph.nodes if n.op_type == "Transpose"]:
        if _perm(node) != [0, 1, 3, 2] or not node.outputs or _key_scales(graph, node) is None:
            continue
        if _product_after_softmax(graph, node):
            continue  # the part multiplied by the attention (DaViT's q^T in attn @ q^T), not the scores' key
        stacked = _stacked_parts_before(graph, node)
        if stacked is not None and _heads_reshape(graph, stacked) is not None and _joint_projection_not_split(graph, stacked):
            graph.fuse([node], "Transpose", attributes={"perm": _perm(node), JOINT_KEY_ATTRIBUTE: 1})


# The attribute the pass below gives the key's swap, and the key's split joining it, of a rotation by halves.
HALVES_KEY_ATTRIBUTE = "rknn_key_rotated_by_halves"


def _rotated_by_halves(graph, tensor):
    """The heads `x` when `tensor` is x * cos + rotate_half(x) * sin with rotate_half(x) = Concat(-x2, x1), x1
    and x2 Slices of x (Mimi's, ModernBERT's rotation); else None."""
    add = graph.producer(tensor.name)
    if add is None or add.op_type != "Add" or len(add.inputs) != 2:
        return None
    muls = [graph.producer(t.name) for t in add.inputs]
    if any(m is None or m.op_type != "Mul" for m in muls):
        return None
    for plain, rotated in (muls, muls[::-1]):
        concat = graph.producer(rotated.inputs[0].name)
        x = plain.inputs[0]
        if concat is None or concat.op_type != "Concat" or len(concat.inputs) != 2:
            continue
        neg, first = (graph.producer(t.name) for t in concat.inputs)
        second = graph.producer(neg.inputs[0].name) if neg is not None and neg.op_type == "Neg" else None
        if all(s is not None and s.op_type == "Slice" and s.inputs[0].name == x.name for s in (first, second)):
            return x
    return None


@RULES.graph_pass("Transpose", chips=tuple(TRANSPOSE_LAYER_ALIGN), OBSERVED=TOOLKIT_OBSERVED, ALIGN=8, chip_key=TRANSPOSE_LAYER_ALIGN.get)
def key_rotated_by_halves(graph, chip):
    """{OBSERVED} keeps the key's swap [0, 1, 3, 2] into the scores a Transpose layer of its own when the key is rotated by halves (x * cos + Concat(-x2, x1) * sin: Mimi, ModernBERT), on RK3566/RK3568 on the CPU, and the key's split (its Reshape and Transpose [0, 2, 1, 3]) joins it there when the tokens are not a multiple of {ALIGN}; rotated interleaved (RoFormer), both merge into the product.

    Measured with rknn-toolkit2 2.5.0 on RK3566 (2026-12-05; tests/forms_models.py
    rotary_halves_tokens_pack, RoFormer's form rotated by halves, T = 7, 9, 16, 20, 32, heads of 32 or
    16: the key's swap on the CPU in all five, the key's split on the CPU at 7, 9 and 20 tokens, q's
    merged; the earlier ROTARY_HEADS_HALVES, T = 24 and 32: the swap on the CPU, the split on the NPU).
    """
    align = TRANSPOSE_LAYER_ALIGN[chip]
    for node in [n for n in graph.nodes if n.op_type == "Transpose"]:
        if _perm(node) != [0, 1, 3, 2] or not node.outputs or _key_scales(graph, node) is None:
            continue
        x = _rotated_by_halves(graph, node.inputs[0]) or _partly_rotated_by_halves(graph, node.inputs[0])
        split = graph.producer(x.name) if x is not None else None
        if split is None or split.op_type != "Transpose" or _perm(split) != [0, 2, 1, 3] or _normed_before(graph, split):
            continue  # a swap after the heads' norm merges, and the key's swap with it (head_norm_pack)
        graph.fuse([node], "Transpose", attributes={"perm": _perm(node), HALVES_KEY_ATTRIBUTE: 1})
        heads, tokens = _heads_reshape_of_many(graph, split), (_static_shape(x) or (0, 0, 0, 0))[-2]
        if heads is not None and tokens % align:
            graph.fuse([heads, split], "Transpose", leader=split, attributes={"perm": _perm(split), HALVES_KEY_ATTRIBUTE: 1})


def _partly_rotated_by_halves(graph, tensor):
    """The heads `x` when `tensor` is Concat(rotation by halves of x[..., :R], x[..., R:]) on the last
    axis (Phi's partial rotary embedding: only each head's first R values rotated); else None."""
    concat = graph.producer(tensor.name)
    if concat is None or concat.op_type != "Concat" or len(concat.inputs) != 2 or concat.inputs[0].rank is None:
        return None
    if int(concat.attr("axis", 0)) % concat.inputs[0].rank != concat.inputs[0].rank - 1:
        return None
    part = _rotated_by_halves(graph, concat.inputs[0])
    first, rest = (graph.producer(t.name) for t in (part, concat.inputs[1])) if part is not None else (None, None)
    if any(s is None or s.op_type != "Slice" for s in (first, rest)) or first.inputs[0].name != rest.inputs[0].name:
        return None
    return first.inputs[0]


def _head_norm(node) -> bool:
    """A normalisation of each head over its last axis (an RMS norm, with its weight, or a LayerNorm)."""
    if node is None or node.op_type not in ("RMSNormalization", "LayerNormalization") or not node.inputs or node.inputs[0].rank is None:
        return False
    return int(node.attr("axis", -1)) % node.inputs[0].rank == node.inputs[0].rank - 1


def _swapped_split_before(graph, norm):
    """The heads' swap [0, 2, 1, 3] right after their split that `norm` alone reads (Gemma 3 norms the
    swapped heads), else None."""
    swap = graph.producer(norm.inputs[0].name) if norm.inputs else None
    if swap is None or swap.op_type != "Transpose" or _perm(swap) != [0, 2, 1, 3] or graph.only_consumer(swap.outputs[0].name) is not norm:
        return None
    return swap if _heads_reshape(graph, swap) is not None else None


def _normed_before(graph, swap) -> bool:
    """Whether the heads' swap `swap` reads a per-head norm of their split (Qwen3, LFM2 norm the heads
    before swapping them)."""
    norm = graph.producer(swap.inputs[0].name) if swap.inputs else None
    if not _head_norm(norm) or graph.only_consumer(norm.outputs[0].name) is not swap:
        return False
    split = graph.producer(norm.inputs[0].name)
    return split is not None and split.op_type == "Reshape" and graph.only_consumer(split.outputs[0].name) is norm


# The attribute the pass below gives the heads' split and swap kept a layer of their own before a norm and a rotation.
NORMED_HEADS_ATTRIBUTE = "rknn_heads_normed_then_rotated"


def _rotation_after(graph, norm) -> list | None:
    """The key's swaps [0, 1, 3, 2] into the scores (none for a query) when the normed heads `norm` wrote are
    rotated (x * cos + rotate(x) * sin, by halves or interleaved) on their way to a product; else None."""
    if not _multiplied_by_a_table(graph, norm):
        return None
    return _keys_after_a_rotation(graph, norm, ROTARY_OPS, ROTARY_HOPS)


def _keys_after_a_rotation(graph, start, links, hops) -> list | None:
    """The key's swaps [0, 1, 3, 2] into the scores (none for a query) when every path from `start` runs
    through `links` (a rotation's operators; a Transpose only as the key's swap) to a product within
    `hops` readers; else None. A reader reached twice is walked once."""
    frontier, seen, products, keys = [start], {start.name}, 0, []
    for _ in range(hops):
        nxt = []
        for reader in (c for n in frontier for o in n.outputs if o.name for c in graph.consumers(o.name)):
            if reader.name in seen:
                continue
            seen.add(reader.name)
            if _product_of_computed(reader):
                products += 1
            elif reader.op_type == "Transpose" and _perm(reader) == [0, 1, 3, 2] and _key_scales(graph, reader) is not None:
                keys.append(reader)
            elif reader.op_type in links and reader.op_type != "Transpose":
                nxt.append(reader)
            elif reader.op_type != "Shape":
                return None
        if not nxt:
            return keys if products or keys else None
        frontier = nxt
    return None


@RULES.graph_pass("Transpose", chips=tuple(TRANSPOSE_LAYER_ALIGN), OBSERVED=TOOLKIT_OBSERVED, chip_key=TRANSPOSE_LAYER_ALIGN.get)
def heads_normed_then_rotated(graph, chip):
    """{OBSERVED} keeps the heads' split (Reshape) and swap [0, 2, 1, 3] one Transpose layer of its own, on RK3566/RK3568 on the CPU, when each head is then normalised over its last axis and rotated (Gemma 3's q and k: swap, RMS norm, x * cos + rotate(x) * sin, by halves or interleaved), and the key's swap into the scores a layer of its own with them; normalised and taken into the scores without a rotation, the swap merges into the product as usual; normalised before the swap (Qwen3, LFM2), the swap merges through the rotation, and the key's swap with it.

    Measured with rknn-toolkit2 2.5.0 on RK3566 and RK3588 (2026-12-05; tests/forms_models.py
    head_norm_pack and head_norm_pack_2: an RMS norm with its weight, or a LayerNorm, after or before
    the swap, rotated by halves, interleaved or not, T = 32, 16, 9, 2 or 4 heads of 32 or 16): after
    the swap and rotated, q's and k's Reshape and Transpose and k's swap on RK3566's CPU in all five;
    after, not rotated, and before, rotated or not: no Transpose layer (NPU). RK3588: all on the NPU.
    """
    for norm in [n for n in graph.nodes if _head_norm(n)]:
        swap = _swapped_split_before(graph, norm)
        if swap is None:
            continue
        keys = _rotation_after(graph, norm)
        if keys is not None:
            graph.fuse([_heads_reshape(graph, swap), swap], "Transpose", leader=swap, attributes={"perm": _perm(swap), NORMED_HEADS_ATTRIBUTE: 1})
            for key in keys:
                graph.fuse([key], "Transpose", attributes={"perm": _perm(key), NORMED_HEADS_ATTRIBUTE: 1})
        elif _reaches_matmul(graph, norm, forward=True):
            _merge_into_the_product(graph, swap, chip)


PAIR_ROTATED_HEADS_ATTRIBUTE = "rknn_heads_rotated_through_pairs"
PAIR_ROTATION_LINKS = frozenset({"Split", "Squeeze"})  # besides ROTARY_OPS (defined below)
PAIR_ROTATION_HOPS = 16  # V-JEPA 2: a Slice of the head, the pair views and their stack, x * cos + r * sin, the parts' Concat, the key's swap


def _keys_after_a_pair_rotation(graph, swap) -> list | None:
    """The key's swaps [0, 1, 3, 2] into the scores (none for a query) when every path from the heads'
    `swap` runs through a rotation's operators (pair views included) to a product; else None."""
    return _keys_after_a_rotation(graph, swap, ROTARY_OPS | PAIR_ROTATION_LINKS, PAIR_ROTATION_HOPS)


@RULES.graph_pass("Split", chips=tuple(TRANSPOSE_LAYER_ALIGN), OBSERVED=TOOLKIT_OBSERVED, chip_key=TRANSPOSE_LAYER_ALIGN.get)
def heads_rotated_through_pairs(graph, chip):
    """{OBSERVED} keeps the heads' split (Reshape) and swap [0, 2, 1, 3] one Transpose layer of its own, on RK3566/RK3568 on the CPU, when each head (or a Slice of it) is then rotated through a pair axis (V-JEPA 2: Reshape to [..., D/2, 2], Split, stacked back; see pair_axis_of_a_rotation), and the key's swap into the scores a layer of its own with them, as for heads normalised then rotated.

    Measured with rknn-toolkit2 2.5.0 on RK3566 (2026-12-05; tests/forms_models.py
    rotary_heads_pairs_pack: the whole head rotated, T = 64, 32, 20, 2 heads of 32 or 16): q's and
    k's Reshape and Transpose and k's swap on the CPU in all three; RK3588: all on the NPU.
    """
    for split in [n for n in graph.nodes if n.op_type == "Split"]:
        found = _pair_axis_unflatten(graph, split)
        source = graph.producer(found[0].inputs[0].name) if found is not None else None
        if source is not None and source.op_type == "Slice":
            source = graph.producer(source.inputs[0].name)
        if source is None or source.op_type != "Transpose" or _perm(source) != [0, 2, 1, 3] or source.attr(PAIR_ROTATED_HEADS_ATTRIBUTE) is not None:
            continue
        heads, keys = _heads_reshape(graph, source), _keys_after_a_pair_rotation(graph, source)
        if heads is None or keys is None:
            continue
        graph.fuse([heads, source], "Transpose", leader=source, attributes={"perm": [0, 2, 1, 3], PAIR_ROTATED_HEADS_ATTRIBUTE: 1})
        for key in keys:
            if key.attr(PAIR_ROTATED_HEADS_ATTRIBUTE) is None:
                graph.fuse([key], "Transpose", attributes={"perm": [0, 1, 3, 2], PAIR_ROTATED_HEADS_ATTRIBUTE: 1})


def _heads_reshape_of_many(graph, node):
    """The Reshape splitting the heads right before `node`, read by `node` alone (Shapes aside)."""
    before = graph.producer(node.inputs[0].name) if node.inputs else None
    if before is None or before.op_type != "Reshape":
        return None
    readers = [r for r in graph.consumers(before.outputs[0].name) if r.op_type != "Shape"]
    return before if readers == [node] else None


def _merges_heads_last(graph, node) -> bool:
    """Whether `node` takes attention's result [N, H, .., T, D] (a product of computed tensors) and
    puts the heads last ([N, .., T, D, H], NesT's permute(0, 2, 3, 4, 1)), where the usual merge
    keeps each head's values last ([N, .., T, H, D])."""
    perm, source = _perm(node), graph.producer(node.inputs[0].name) if node.inputs else None
    return perm is not None and len(perm) >= 4 and perm[0] == 0 and perm[-1] == 1 and source is not None and _product_of_computed(source)


# The attribute transposes_merged_into_matmul gives the key's Transpose of attention over windows
# on an axis of their own when the toolkit makes it a layer (rules.transpose_layer_of_unaligned_windowed_key).
WINDOWED_KEY_ATTRIBUTE = "rknn_windowed_key_transpose"


def _unaligned_windowed_key(graph, node, align: int) -> tuple[list, tuple[int, int]] | None:
    """(its scales, (T, D)) when `node` swaps the last two axes of a 5-D key [N, nW, H, T, D] (a
    window axis of its own: Twins' locally-grouped attention, NesT) on its way, through scalar
    products, into the scores' product, and T or D is not a multiple of `align`; else None."""
    shape = _static_shape(node.inputs[0]) if node.inputs else None
    if _perm(node) != [0, 1, 2, 4, 3] or shape is None or len(shape) != 5 or _product_after_softmax(graph, node):
        return None
    scales = _key_scales(graph, node)
    if scales is None or not (shape[3] % align or shape[4] % align):
        return None
    return scales, (shape[3], shape[4])


# The attribute transposes_merged_into_matmul gives the heads' merge of attention over windows on
# an axis of their own when the toolkit keeps it a layer (rules.windowed_merge_layer places it).
WINDOWED_MERGE_ATTRIBUTE = "rknn_windowed_merge_layer"
WINDOWED_MERGE = [0, 1, 3, 2, 4]  # [N, nW, H, T, D] -> [N, nW, T, H, D]
WINDOWED_MERGE_HOPS = 6


def _windowed_merge_layer(graph, node) -> list | None:
    """When `node` merges the heads of attention over windows on an axis of their own (Transpose
    [0, 1, 3, 2, 4] of attn @ v, Twins' locally-grouped attention) and the toolkit keeps it a
    Transpose layer: the reshapes after it that run with it (none when a Transpose of longer axes
    comes after them: the reverse of several windows; all of them when they end in a Slice: the
    crop of one padded window). None where it is merged into the product (reshapes into a Linear)
    or the reshapes lead anywhere not measured."""
    source = graph.producer(node.inputs[0].name) if node.inputs else None
    if _perm(node) != WINDOWED_MERGE or source is None or not _product_of_computed(source):
        return None
    chain, tensor = [], node.outputs[0]
    for _ in range(WINDOWED_MERGE_HOPS):
        reader = graph.only_consumer(tensor.name)
        if reader is None or not reader.outputs:
            return None
        if reader.op_type == "Reshape" or (reader.op_type == "Transpose" and _moves_only_unit_axes(reader)):
            chain.append(reader)
            tensor = reader.outputs[0]
        elif reader.op_type == "Slice" and _static_shape(reader.inputs[0]) == _static_shape(reader.outputs[0]):
            tensor = reader.outputs[0]  # crops nothing (a window not padded): a copy
        elif reader.op_type == "Transpose":
            return [] if chain else None
        else:
            return chain if reader.op_type == "Slice" and chain else None
    return None


# The most token sets whose heads' merge Reshape stays on RK3566's NPU (batched_attention_windows*).
MANY_SETS_MERGE_MAX_BATCH = 16
MANY_SETS_MERGE_ATTRIBUTE = "rknn_merge_of_many_token_sets"


@RULES.graph_pass("Reshape", chips=("rk3566", "rk3568"), OBSERVED=TOOLKIT_OBSERVED, MAX_BATCH=MANY_SETS_MERGE_MAX_BATCH)
def merge_of_many_token_sets(graph, chip):
    """{OBSERVED} runs on RK3566's CPU the Reshape [B, T, H, D] -> [B, T, H*D] that merges the heads of attention over a batch of more than {MAX_BATCH} token sets of more than one token (windowed attention: GC ViT's 64 windows of 2x2), after the Transpose [0, 2, 1, 3] of attn @ v (which merges into the product as ever).

    Measured with rknn-toolkit2 2.5.0 on RK3566 (2026-12-04, int8; tests/forms_models.py
    batched_attention_windows, _windows2, _windows3: 2 heads of 32 unless said): CPU for 17, 20, 24,
    28, 30, 31, 32, 33, 48, 64 and 128 sets of 4 tokens, 64 of 16, 20 of 16, 24 of 9, 64 of 4 with 2
    heads of 16 or 4 heads of 32; NPU for 4 and 16 sets of 4, 16 of 9 and of 49, and 64 sets of one
    token; the earlier batched_attention packs (2 to 9 sets): NPU. RK3588: NPU in every case.
    RK3568 is taken to behave as RK3566 (not measured).
    """
    for node in [n for n in graph.nodes if n.op_type == "Reshape" and n.inputs and n.outputs]:
        x, out = _static_shape(node.inputs[0]), _static_shape(node.outputs[0])
        if x is None or out is None or len(x) != 4 or out != (x[0], x[1], x[2] * x[3]) or x[0] <= MANY_SETS_MERGE_MAX_BATCH or x[1] <= 1:
            continue
        swap = graph.producer(node.inputs[0].name)
        source = graph.producer(swap.inputs[0].name) if swap is not None and swap.op_type == "Transpose" and swap.inputs else None
        if _perm(swap) == [0, 2, 1, 3] and source is not None and _product_of_computed(source):
            graph.fuse([node], "Reshape", attributes={MANY_SETS_MERGE_ATTRIBUTE: int(x[0])})


# RK3588: the key's swap of a joint projection whose query also feeds another computation (SAM's
# decomposed relative positions) is a Transpose layer of its own, on the CPU (rules.key_beside_a_query_read_twice).
KEY_BESIDE_SHARED_QUERY_ATTRIBUTE = "rknn_key_beside_shared_query"
KEY_BESIDE_SHARED_QUERY_CHIPS = ("rk3588", "rk3566", "rk3568")  # RK3568 taken as RK3566 (sam_attention_pack)


def _key_beside_a_shared_query(graph, node) -> bool:
    """`node` swaps the last two axes of a 3-D part of a joint projection (Split on axis 0 of the
    stacked parts, each Squeezed) into a MatMul as its second operand, and another part is read by
    more than one node (besides Shapes): the query scaled for the scores and also made into the
    relative positions (SAM)."""
    perm = _perm(node)
    if perm != [0, 2, 1] or not node.inputs:
        return False
    readers = graph.consumers(node.outputs[0].name)
    if len(readers) != 1 or readers[0].op_type != "MatMul" or readers[0].inputs[1].name != node.outputs[0].name:
        return False
    squeeze = graph.producer(node.inputs[0].name)
    split = graph.producer(squeeze.inputs[0].name) if squeeze is not None and squeeze.op_type == "Squeeze" and squeeze.inputs else None
    if split is None or split.op_type != "Split" or int(split.attr("axis", 0)) != 0 or len([o for o in split.outputs if o.name]) != 3:
        return False
    for o in split.outputs:
        for part in graph.consumers(o.name):
            if part is squeeze or part.op_type != "Squeeze" or not part.outputs:
                continue
            if len([r for r in graph.consumers(part.outputs[0].name) if r.op_type != "Shape"]) > 1:
                return True
    return False


def _shared_query_of(graph, key):
    """For the key's swap `key` of _key_beside_a_shared_query: (the stack's Transpose [2, 0, 3, 1, 4] and its
    flatten [3, B*H, N, D] before the Split, the Reshapes that view the query read twice); else None."""
    squeeze = graph.producer(key.inputs[0].name)
    split = graph.producer(squeeze.inputs[0].name)
    flatten = graph.producer(split.inputs[0].name) if split.inputs else None
    stack = graph.producer(flatten.inputs[0].name) if flatten is not None and flatten.op_type == "Reshape" and flatten.inputs else None
    if stack is None or stack.op_type != "Transpose" or _perm(stack) != [2, 0, 3, 1, 4] or graph.only_consumer(flatten.outputs[0].name) is not split:
        return None
    views = []
    for o in split.outputs:
        for part in graph.consumers(o.name):
            readers = [r for r in graph.consumers(part.outputs[0].name) if r.op_type != "Shape"] if part.op_type == "Squeeze" and part.outputs else []
            if len(readers) > 1:
                views += [r for r in readers if r.op_type == "Reshape" and r.outputs and r.outputs[0].rank == 4]
    return (stack, flatten, views) if graph.only_consumer(stack.outputs[0].name) is flatten else None


# RK3566/RK3568: the stack of such a joint projection and the query's view into a map, kept as layers (CPU).
STACK_BESIDE_SHARED_QUERY_ATTRIBUTE = "rknn_stack_beside_shared_query"


@RULES.graph_pass("Transpose", chips=("rk3566", "rk3568"), OBSERVED=TOOLKIT_OBSERVED)
def stack_beside_a_query_read_twice(graph, chip):
    """{OBSERVED} keeps the stack of a joint q/k/v projection (Transpose [2, 0, 3, 1, 4], then flattened to [3, B*H, N, D] before the Split: SAM's ViTDet attention) one Transpose layer with its flatten when the query it unbinds is also viewed as a map for another computation (SAM's decomposed relative positions from q), and that view (a Reshape) a layer of its own: on RK3566/RK3568 both run on the CPU, as does the key's swap into the scores (rules.key_beside_a_query_read_twice); with the query read by its scale alone the stack merges as usual.

    Measured with rknn-toolkit2 2.5.0 (2026-12-05, tests/forms_models.py sam_attention_pack on RK3566
    and RK3588: a [1, 4, 4, 64] or [1, 8, 8, 64] map, 2 heads of 32): with the relative positions from
    q, the stack's Transpose and flatten, the key's swap and q's view on RK3566's CPU (RK3588: the key's
    swap alone); a constant bias or none: all merged.
    """
    for key in [n for n in graph.nodes if n.op_type == "Transpose"]:
        found = _shared_query_of(graph, key) if _key_beside_a_shared_query(graph, key) else None
        if found is None:
            continue
        stack, flatten, views = found
        graph.fuse([stack, flatten], "Transpose", leader=stack, attributes={"perm": _perm(stack), STACK_BESIDE_SHARED_QUERY_ATTRIBUTE: 1})
        for view in views:
            graph.fuse([view], "Reshape", attributes={STACK_BESIDE_SHARED_QUERY_ATTRIBUTE: 1})


# The attribute the pass below gives the Expand that repeats one key/value head (its repeats).
ONE_HEAD_REPEAT_ATTRIBUTE = "rknn_one_head_repeat"
ONE_HEAD_REPEAT_CHIPS = ("rk3588", "rk3576", "rk3566", "rk3568", "rk3562", "rv1106")  # gqa_repeat_pack measured on all six
# Chips whose layer table names the Reshape merging a 5-D repeat with the Expand (on RK3566/RK3568 no layer names it).
ONE_HEAD_MERGE_NAMED_CHIPS = ("rk3588", "rk3576", "rk3562", "rv1106")
ONE_HEAD_SOURCE_HOPS = 12  # nodes walked back from the repeat to the heads' swap (Gemma 3: RMSNorm, rotary positions)


def _swaps_in_one_head(node) -> bool:
    """`node` (a Transpose, or the Reshape a unit-axes Transpose became) turns [N, T, 1, D] into [N, 1, T, D]."""
    x, out = (_static_shape(node.inputs[0]) if node.inputs else None), (_static_shape(node.outputs[0]) if node.outputs else None)
    return node.op_type in ("Transpose", "Reshape") and x is not None and len(x) == 4 and x[2] == 1 and out == (x[0], 1, x[1], x[3])


def _one_head_of_a_computed_tensor(graph, tensor) -> bool:
    """`tensor` is one attention head swapped out of a computed token-major tensor ([N, T, 1, D] -> [N, 1, T, D]),
    through at most ONE_HEAD_SOURCE_HOPS nodes that keep it (an Unsqueeze, elementwise arithmetic, a norm: each
    followed through its first computed input of the shape it writes; a Slice or a Concat of the head's last
    axis through its first computed piece of the head, _head_piece_read)."""
    for _ in range(ONE_HEAD_SOURCE_HOPS):
        node = graph.producer(tensor.name)
        if node is None or not node.inputs:
            return False
        if _swaps_in_one_head(node):
            return graph.producer(node.inputs[0].name) is not None
        shape = _static_shape(node.outputs[0])
        tensor = node.inputs[0] if node.op_type == "Unsqueeze" else next(
            (t for t in node.inputs if t.present and not _known(t) and _static_shape(t) == shape), None) or _head_piece_read(node, shape) \
            or _repeated_head_of_a_copy(graph, node)
        if tensor is None:
            return False
    return False


def _head_piece_read(node, shape):
    """The first computed input of a Slice or a Concat that differs from its result `shape` in the last axis only:
    Nemotron's partial rotary positions, which Slice each key head into halves, rotate the first and Concatenate
    them back (tests/forms_models.py gqa_partial_pack, h18-rkhead)."""
    if node.op_type not in ("Slice", "Concat") or shape is None:
        return None
    return next((t for t in node.inputs if t.present and not _known(t) and (s := _static_shape(t)) is not None
                 and len(s) == len(shape) and s[:-1] == shape[:-1]), None)


def _repeated_head_of_a_copy(graph, node):
    """The head [N, 1, T, D] when `node` is a Slice taking one copy [N, 1, T, D] (along axis 1) of that head
    repeated by transformers' repeat_kv (Unsqueeze at 2, Expand [N, 1, n, T, D], Reshape [N, n, T, D]):
    DiffLlama cuts its value's repeat back into its copies (tests/forms_models.py diff_value_*, h20-rkattn)."""
    out = _static_shape(node.outputs[0]) if node.op_type == "Slice" and node.outputs else None
    merge = graph.producer(node.inputs[0].name) if out is not None and len(out) == 4 and out[1] == 1 else None
    expand = graph.producer(merge.inputs[0].name) if merge is not None and merge.op_type == "Reshape" else None
    unsqueeze = graph.producer(expand.inputs[0].name) if expand is not None and expand.op_type == "Expand" else None
    if unsqueeze is None or unsqueeze.op_type != "Unsqueeze":
        return None
    head, repeated = _static_shape(unsqueeze.inputs[0]), _static_shape(expand.outputs[0])
    if head != out or repeated is None or repeated[:2] + repeated[3:] != (out[0], 1, *out[2:]):
        return None
    return unsqueeze.inputs[0]


def _copies_rejoined(graph, repeat) -> list:
    """[the no-op Expand, the Concat along the last axis, its Slices] when the Tile or Expand `repeat` reads (through
    an Expand to the same shape) a Concat of Slices that each take one copy of a repeated head (DiffLlama's value:
    the toolkit removes them, remove_invalid_reshape and remove_invalid_expand, and names them with the repeat's
    layer); else []."""
    made = graph.producer(repeat.inputs[0].name)
    same = made if made is not None and made.op_type == "Expand" and _static_shape(made.inputs[0]) == _static_shape(made.outputs[0]) else None
    concat = graph.producer(same.inputs[0].name) if same is not None else made
    if concat is None or concat.op_type != "Concat" or _concat_axis(concat) != len(_static_shape(concat.outputs[0]) or ()) - 1:
        return []
    copies = [graph.producer(t.name) for t in concat.inputs]
    if not all(c is not None and graph.only_consumer(c.outputs[0].name) is concat and _repeated_head_of_a_copy(graph, c) is not None for c in copies):
        return []
    return [m for m in (same, concat) if m is not None] + copies


def _repeat_into_a_product(graph, expand) -> list | None:
    """[the Expand, the Reshape merging the repeat into the heads, the key's swap [0, 1, 3, 2]] (the last two
    where present) when that chain is an operand of a MatMul of two computed tensors; else None."""
    chain = [expand]
    merge = _next(graph, expand, "Reshape")
    if merge is not None:
        chain.append(merge)
    swap = _next(graph, chain[-1], "Transpose")
    if swap is not None and _perm(swap) == [0, 1, 3, 2]:
        chain.append(swap)
    product = _next(graph, chain[-1], "MatMul")
    if product is None or any(_known(t) for t in product.inputs[:2]):
        return None
    return chain


@RULES.graph_pass("Expand", "Tile", chips=ONE_HEAD_REPEAT_CHIPS, OBSERVED=TOOLKIT_OBSERVED, chip_key=ONE_HEAD_MERGE_NAMED_CHIPS.__contains__)
def one_head_repeat_into_a_product(graph, chip):
    """{OBSERVED} runs on the CPU an Expand that repeats one key/value head of grouped-query attention (transformers' repeat_kv: Unsqueeze, Expand, Reshape; or an Expand or a Tile of [N, 1, T, D] straight, which it also names an Expand layer) into a product of two computed tensors (q @ k^T, attn @ v), where that head was swapped out of a computed token-major tensor ([N, T, 1, D] -> [N, 1, T, D]: a Linear's heads, then its norm or rotary positions); the Reshape merging the repeat and the key's swap [0, 1, 3, 2] join that Expand layer (its passes fuse_two_reshape, reduce_tp_in_mesh_forward; on RK3566 no layer names the merge of a 5-D repeat). With two or more key/value heads it makes the repeat a Conv on the NPU. The pass marks the chain for the rule one_head_repeat_into_a_product.

    Measured with rknn-toolkit2 2.5.0 on RK3588 and RK3566 (2026-12-05, int8, tests/forms_models.py
    gqa_repeat_pack, gqa_repeat_pack_2, gqa_repeat_pack_3): one key/value head repeated 2 or 4 times,
    T 16 to 64, D 16 to 64, from the projection or a Relu of it, Unsqueeze on axis 2 or an Expand or
    a Tile of [1, 1, T, D]: CPU into q @ k^T, attn @ v, whole attention; 2 key/value heads: a Conv on the NPU;
    a head that is a Relu of a model input already [1, 1, T, D]: NPU; read by a Relu model output:
    NPU. Measured, not modelled (docs/audit.md): read by an Add or a constant MatMul, CPU from the
    projection and NPU from a swapped model input; a Relu between the repeat and q @ k^T: the Expand
    on the CPU, the swap on the NPU; a swapped model input into q @ k^T: CPU, the swap on the NPU;
    Unsqueeze on axis 1 (Expand [1, n, 1, T, D]): CPU on RK3588, the value's on the NPU on RK3566.
    """
    for expand in [n for n in graph.nodes if n.op_type in ("Expand", "Tile")]:
        x, out = _static_shape(expand.inputs[0]), _static_shape(expand.outputs[0]) if expand.outputs else None
        if x is None or out is None or len(x) != len(out) or len(x) not in (4, 5):
            continue
        grown = [(a, b) for a, b in zip(x, out) if a != b]
        if len(grown) != 1 or grown[0][0] != 1 or not _one_head_of_a_computed_tensor(graph, expand.inputs[0]):
            continue
        chain = _repeat_into_a_product(graph, expand)
        if chain is None:
            continue
        merge = next((m for m in chain if m.op_type == "Reshape"), None)
        if merge is not None and len(x) == 5 and chip not in ONE_HEAD_MERGE_NAMED_CHIPS:
            graph.eliminate(merge)  # no layer names it: it runs nowhere of its own
            chain.remove(merge)
        glue = _copies_rejoined(graph, expand)
        inputs = [glue[-1].inputs[0], *expand.inputs[1:]] if glue else list(expand.inputs)
        if glue:  # the repeat's merge that the copies cut: no layer names it (diff_value_lin, both chips)
            graph.eliminate(graph.producer(glue[-1].inputs[0].name))
        graph.fuse(glue + chain, "Expand", leader=expand, attributes={ONE_HEAD_REPEAT_ATTRIBUTE: int(grown[0][1])}, inputs=inputs)


def _transpose_merge_key(chip: str) -> tuple:
    """What transposes_merged_into_matmul reads of the chip: its Transpose layer alignment and whether a key beside a
    shared query is a layer of its own (RK3588 has no alignment but does have that layer: a key of the alignment alone
    let RK3576 take RK3588's lowering, h14-speed)."""
    return TRANSPOSE_LAYER_ALIGN.get(chip), chip in KEY_BESIDE_SHARED_QUERY_CHIPS


@RULES.graph_pass("Transpose", OBSERVED=TOOLKIT_OBSERVED, HOPS=MAX_LAYOUT_HOPS, ALIGN=8, chip_key=_transpose_merge_key)
def transposes_merged_into_matmul(graph, chip):
    """{OBSERVED} merges a Transpose that feeds a product of two computed tensors (MatMul), or takes one's result, directly or through at most {HOPS} reshapes, Transposes, one-index Gathers, Concats of one tensor (GPT-2's key/value cache with no past), parallel Slices of one tensor (which it makes a Split) or products with a one-element constant (or one computed from static shapes, as scaled_dot_product_attention's export writes it), into the layout changes of its exMatMul (its passes fuse_two_transpose, swap_transpose_mul, merge_exmatmul_inner_perm, seperate_exmatmul_rs_split, bypass_two_transpose): the Transposes of attention's heads get no layer of their own. A Transpose right after the Reshape that splits the heads joins that Reshape (placed as it is); on RK3566/RK3568 the one that makes attention's value (the second operand of attn @ v, its last axis kept last) is a Transpose layer of its own, which runs on the CPU, with its Reshape, unless the value's two last axes are multiples of {ALIGN}; so are the heads' Reshape and Transpose of a joint q/k/v projection when some part is not taken straight into a product (CoaT's factorised attention: a Softmax of k first; XCiT's normalised q and k), since the toolkit then does not split the projection into three convolutions (seperate_exmatmul_rs_split), nor where two parts are multiplied over their tokens (channel attention, DaViT); and so is, on those chips, a merge of attention's result that puts the heads last ([N, H, T, D] to [N, T, D, H], NesT), or that is viewed as a batch of more than one channels-last window ([B, h, w, H*D], MaxViT; one layer with that view), and a key/value projection's stack (Reshape [N, S, 2, H, D], Transpose [2, 0, 3, 1, 4]; one layer with that Reshape) when the tokens its Linear reads were laid out by no Transpose (the query's own tokens: PVT-v2's and Twins' last stage, GC ViT's one window; a map's tokens, after a spatial reduction, split on the NPU).

    Measured with attention blocks of 2 heads (tests/forms_models.py attention_block): tokens
    8, 16, 24, 32, 40, 48, 64 (NPU) and 12, 17, 20, 65 (CPU) with heads of 32; heads of 8, 16,
    24, 32, 40, 64 (NPU) and 12, 15, 20 (every split Reshape and its Transposes on the CPU) with
    32 tokens; on the transformer encoders of the corpus, yolo11n's attention and PP-OCRv4
    rec's SVTR block form (q, k and v three Slices of the heads' Transpose); k and v through a
    Concat of one tensor (attention_present: 32 tokens NPU, 20 tokens the value's on the CPU with
    its Concat; GPT-2's blocks). Heads merged last: tests/forms_models.py heads_last_pack (RK3566
    and RK3588, 2026-12-04): [1, H, T, D] to [1, T, D, H] for 4 heads of 16 and 8 and, with a block
    axis ([1, H, 1, T, D], NesT's last level), 12 heads of 32: a CPU Transpose layer on RK3566
    (NPU on RK3588); the usual [0, 2, 1, 3]: merged. Channel attention: tests/forms_models.py
    channel_attention_pack (RK3566 and RK3588): DaViT's k^T @ v then attn @ q^T, and q^T @ k then
    attn @ v^T, over 16 and 64 tokens, heads of 16 and 32: the joint projection's heads Reshape and
    Transpose on RK3566's CPU, every other Transpose merged (the usual attention beside it: split).
    An Einsum of two computed tensors whose equation is a batched matrix product (a @ b, or a @ b^T
    with b's swap implicit: transformers' CvT) is such a product: tests/forms_models.py
    einsum_attention_pack (RK3566, 2026-12-04): Tq 16 to 64, Tk 5 to 64, heads of 8 to 64: every
    heads Transpose merged, the value's with its Reshape on the CPU when Tk or D is not a multiple
    of 8, and every split on the CPU with D of 12 or 20, as with MatMuls. 3-D batched attention
    (the heads viewed into the batch, [1, H, T, D] -> [H, T, D], before the products: DETR, GroupViT):
    tests/forms_models.py batched_operands_pack_self/_cross (RK3566, 2026-12-04): the key's view and
    swap merged at any S (the features end on K of k^T), the value's swap a layer with the view after
    it (its split on the NPU) when S or D is not a multiple of 8; with unaligned heads each Transpose
    joins the view after it; a constant query (DETR's first decoder layer) merges the key's all the same.
    """
    for node in [n for n in graph.nodes if n.op_type == "Transpose"]:
        if not node.outputs or graph.producer(node.outputs[0].name) is not node:
            continue  # joined the heads' Reshape with the Transpose before it
        if chip in KEY_BESIDE_SHARED_QUERY_CHIPS and _key_beside_a_shared_query(graph, node):
            graph.fuse([node], "Transpose", attributes={"perm": _perm(node), KEY_BESIDE_SHARED_QUERY_ATTRIBUTE: 1})
            continue  # a Transpose layer of its own, on the CPU (rules place it)
        if any(node.attr(a) is not None for a in (KV_KEY_ATTRIBUTE, PRODUCT_TRANSPOSE_ATTRIBUTE, BATCHED_HEADS_ATTRIBUTE, JOINT_KEY_ATTRIBUTE, HALVES_KEY_ATTRIBUTE, MERGE_BEFORE_ACTIVATION_ATTRIBUTE, AREA_ATTENTION_ATTRIBUTE, NORMED_HEADS_ATTRIBUTE, PAIR_ROTATED_HEADS_ATTRIBUTE, TORCH_KV_PART_ATTRIBUTE, STACK_BESIDE_SHARED_QUERY_ATTRIBUTE)):
            continue  # a layer of its own (key_transpose_of_a_kv_projection, cancel_transposes_around_positionwise_ops, batched_attention_layouts, key_transpose_of_a_joint_projection_kept_whole, merge_transpose_before_an_activation, area_attention_layouts, heads_normed_then_rotated, torch_key_value_in_projection, stack_beside_a_query_read_twice)
        if not (_reaches_matmul(graph, node, forward=True, by_constant=chip in TRANSPOSE_LAYER_ALIGN) or _reaches_matmul(graph, node, forward=False)):
            if not (chip in TRANSPOSE_LAYER_ALIGN and _rotated_into_product(graph, node)):
                continue
        if chip in TRANSPOSE_LAYER_ALIGN and _merges_heads_last(graph, node):
            continue  # a Transpose layer of its own: on the CPU there (rules place it)
        if chip in TRANSPOSE_LAYER_ALIGN and _batch_of_heads_cut_by_slices(graph, node):
            graph.fuse([node], "Transpose", attributes={"perm": _perm(node), SLICED_BATCH_HEADS_ATTRIBUTE: 1})
            continue  # a Transpose layer of its own (no kernel on RK3566: the CPU)
        if chip in TRANSPOSE_LAYER_ALIGN and _swaps_segment_means(graph, node):
            graph.fuse([node], "Transpose", attributes={"perm": _perm(node), HEADS_LAID_OUT_ATTRIBUTE: 1})
            continue  # a Transpose layer of its own (no kernel on RK3566: the CPU)
        laid_out = _heads_read_as_a_layout(graph, node) if chip in TRANSPOSE_LAYER_ALIGN else None
        if laid_out is not None:
            _fuse_heads_laid_out(graph, node, *laid_out)
            continue
        windowed_key = _unaligned_windowed_key(graph, node, TRANSPOSE_LAYER_ALIGN[chip]) if chip in TRANSPOSE_LAYER_ALIGN else None
        if windowed_key is not None:  # a Transpose layer of its own, its scales with it (rules place it)
            graph.fuse([node, *windowed_key[0]], "Transpose", leader=node, attributes={"perm": _perm(node), WINDOWED_KEY_ATTRIBUTE: list(windowed_key[1])})
            continue
        windowed_merge = _windowed_merge_layer(graph, node) if chip in TRANSPOSE_LAYER_ALIGN else None
        if windowed_merge is not None:  # a Transpose layer of its own, with the reshapes of a crop (rules place it)
            graph.fuse([node, *windowed_merge], "Transpose", leader=node, attributes={"perm": _perm(node), WINDOWED_MERGE_ATTRIBUTE: len(windowed_merge)})
            continue
        plain = _kv_stack_of_plain_tokens(graph, node) if chip in TRANSPOSE_LAYER_ALIGN else None
        if plain is not None:  # one Transpose layer with the heads' Reshape (no kernel on RK3566: the CPU)
            graph.fuse([plain, node], "Transpose", leader=node, attributes={"perm": _perm(node), KV_STACK_OF_TOKENS_ATTRIBUTE: 1})
            continue
        window_view = _heads_merged_into_windows(graph, node) if chip in TRANSPOSE_LAYER_ALIGN else None
        if window_view is not None:  # a Transpose layer of its own, the view with it (no kernel on RK3566: the CPU)
            graph.fuse([node, window_view], "Transpose", leader=node, attributes={"perm": _perm(node), WINDOWS_MERGE_ATTRIBUTE: 1})
            continue
        _merge_into_the_product(graph, node, chip)


# The attribute transposes_merged_into_matmul gives the heads' Transpose of a batch of joint projections cut by Slices.
SLICED_BATCH_HEADS_ATTRIBUTE = "rknn_sliced_batch_heads"


def _batch_of_heads_cut_by_slices(graph, node) -> bool:
    """Whether `node` is the heads' swap [0, 2, 1, 3] of a joint q/k/v projection [B, T, H, 3D] with B > 1 (a batch
    of windows) read by parallel Slices of its last axis (q, k, v; a Shape of it aside): the toolkit keeps it a
    Transpose layer of its own. tests/forms_models.py neox_qkv_pack (rknn-toolkit2 2.5.0, RK3566): B = 4 of 4 tokens,
    tokens or a channels-last map: a CPU Transpose layer; B = 1 (4 to 32 tokens, 2 or 4 heads, rotated in part or
    not, bounds constant or from the Shape): merged; sliced_qkv_pack's SLICED_QKV_MEASURED (B = 4) and fresh2's
    MaxViT (B = 64, 16, 4) alike. MaxViT's last stage (B = 1, 16 heads) is a CPU layer too: not reproduced."""
    shape = _static_shape(node.inputs[0]) if node.inputs else None
    if _perm(node) != [0, 2, 1, 3] or shape is None or len(shape) != 4 or shape[0] < 2:
        return False
    readers = [r for r in graph.consumers(node.outputs[0].name) if r.op_type != "Shape"]
    return len(readers) > 1 and all(_parallel_slice(graph, r) and r.inputs[0].name == node.outputs[0].name for r in readers)


# The attribute transposes_merged_into_matmul gives a key/value projection's stack of tokens no Transpose laid out,
# and how far back (reshapes, LayerNorms) it looks for that Transpose.
KV_STACK_OF_TOKENS_ATTRIBUTE = "rknn_kv_stack_of_plain_tokens"
LAID_OUT_HOPS = 6


def _kv_stack_of_plain_tokens(graph, node):
    """The heads' Reshape [N, S, 2, H, D] before `node` when `node` is the stack [2, 0, 3, 1, 4] of a key/value
    projection of its own (H > 1; not a joint query/key one, _joint_query_key_stack) whose Linear reads tokens that no
    Transpose laid out (_laid_out_by_a_transpose); else None. tests/forms_models.py kv_stack_pack, _2, _3
    (rknn-toolkit2 2.5.0, RK3566): the tokens a model input or the query's own (LayerNormed or not, biased Linears
    or not, 4 or 16 keys, 2 to 16 heads, 4 to 16 queries): the Reshape and the stack on the CPU; a map's tokens
    (Reshape [N, C, H*W], Transpose [0, 2, 1], LayerNorm: a Conv's, PVT-v2's spatial reduction, or an input map's):
    on the NPU; the joint q/k/v projection's stack of the same plain tokens (heads_merge_map_pack): on the NPU."""
    heads = graph.producer(node.inputs[0].name) if node.inputs else None
    shape = _static_shape(heads.outputs[0]) if heads is not None and heads.op_type == "Reshape" else None
    # One head (H = 1) not probed; there a joint query/key stack is not told from a key/value one (_kv_stack).
    if _perm(node) != [2, 0, 3, 1, 4] or shape is None or len(shape) != 5 or shape[2] != 2 or shape[3] < 2 or _joint_query_key_stack(graph, node):
        return None
    linear = graph.producer(heads.inputs[0].name)
    if linear is not None and linear.op_type == "Add":  # the Linear's bias
        linear = next((graph.producer(t.name) for t in linear.inputs if not _known(t)), None)
    if linear is None or linear.op_type != "MatMul" or len(linear.inputs) != 2 or not _known(linear.inputs[1]):
        return None
    return None if _laid_out_by_a_transpose(graph, linear.inputs[0].name) else heads


def _laid_out_by_a_transpose(graph, tensor: str) -> bool:
    """Whether `tensor` comes, through reshapes and LayerNorms only, from a Transpose that moves axes longer
    than one (a map's tokens swapped out of its channels, a batch of windows partitioned from a map); one
    that moves only unit axes is a reshape (GC ViT's one window)."""
    for _ in range(LAID_OUT_HOPS):
        node = graph.producer(tensor)
        if node is None or not node.inputs:
            return False
        if node.op_type == "Transpose" and not _moves_only_unit_axes(node):
            return True
        if node.op_type not in ("Reshape", "Flatten", "Squeeze", "Unsqueeze", "LayerNormalization", "Transpose"):
            return False
        tensor = node.inputs[0].name
    return False


# The attribute transposes_merged_into_matmul gives the heads' merge viewed into a batch of channels-last windows.
WINDOWS_MERGE_ATTRIBUTE = "rknn_heads_merged_into_windows"


def _heads_merged_into_windows(graph, node):
    """The Reshape that alone reads `node`, the heads' merge [0, 2, 1, 3] of attn @ v ([B, H, T, D] to
    [B, T, H, D]), when it views the result as B > 1 channels-last maps [B, h, w, H*D] (MaxViT's windows)
    read by no Transpose (a swap to channels-first for a Conv merges it all the same, MobileNetV4); else None.
    tests/forms_models.py heads_merge_map_pack, _2 (rknn-toolkit2 2.5.0, RK3566): B of 2, 4 and 16 windows
    read by a Linear or a Relu: the merge a Transpose layer on the CPU with the view; one window (B = 1,
    2x2 to 8x8, 2 to 16 heads), the tokens' view [B, T, H*D] at any B, or the swap into a Conv: merged."""
    product = graph.producer(node.inputs[0].name) if node.inputs else None
    if _perm(node) != [0, 2, 1, 3] or product is None or not _product_of_computed(product):
        return None
    view = graph.only_consumer(node.outputs[0].name)
    shape = view.outputs[0].shape if view is not None and view.op_type == "Reshape" and view.outputs else None
    if shape is None or len(shape) != 4 or not isinstance(shape[0], int) or shape[0] < 2:
        return None
    readers = graph.consumers(view.outputs[0].name)
    return view if readers and not any(r.op_type == "Transpose" for r in readers) else None


def _fuse_heads_laid_out(graph, node, scales, bound, as_value) -> None:
    """Fuse the heads' Transpose `node` that a reader needs laid out (_heads_read_as_a_layout) into a
    Transpose layer of its own (no kernel on RK3566: the CPU)."""
    # A value's with its split (as the value rule has it), q's and k's with the segments' view and
    # the key's swap after them;
    # the scale between runs with it or not (rules.scale_beside_heads_laid_out: uncertain).
    beside = [r for r in bound if r.op_type == "Reshape"]
    swaps = [r for r in graph.consumers((scales[-1] if scales else node).outputs[0].name) if r.op_type == "Transpose"]
    members = [_heads_reshape(graph, node), node] if as_value else [node, *beside, *swaps]
    for scale in scales:
        graph.fuse([scale], scale.op_type, attributes={HEADS_LAID_OUT_SCALE_ATTRIBUTE: 1})
    # A value cut into segments (no convolution) ran on the CPU in some probes, on the NPU in
    # others (rules.value_cut_into_segments: uncertain).
    segments_only = as_value and not any(r.op_type in ("Conv", "ConvTranspose") for r in bound)
    graph.fuse(members + (list(beside) if as_value else []), "Transpose", leader=node,
               attributes={"perm": _perm(node), HEADS_LAID_OUT_ATTRIBUTE: 2 if segments_only else 1})


def _merge_into_the_product(graph, node, chip) -> None:
    """The last step of transposes_merged_into_matmul: `node` joins its heads' Reshape (or the view
    after it), becomes the value's Transpose layer, or is merged into the exMatMul (eliminated)."""
    heads = _heads_reshape(graph, node)
    value = _value_operand(graph, node) if chip in TRANSPOSE_LAYER_ALIGN else None
    map_value = _map_value_operand(graph, node) if chip in TRANSPOSE_LAYER_ALIGN else None
    if chip in TRANSPOSE_LAYER_ALIGN and heads is not None and _joint_projection_not_split(graph, node):
        graph.fuse([heads, node], "Transpose", leader=node, attributes={"perm": _perm(node), JOINT_PROJECTION_ATTRIBUTE: 1})
    elif map_value is not None and map_value[1]:
        graph.fuse([map_value[0], node, *map_value[1]], "Transpose", leader=node, attributes={"perm": _perm(node), UNSQUEEZED_VALUE_ATTRIBUTE: list(map_value[2])})
    elif map_value is not None and any(d % TRANSPOSE_LAYER_ALIGN[chip] for d in map_value[2]):
        graph.fuse([map_value[0], node], "Transpose", leader=node, attributes={"perm": _perm(node), "rknn_value_transpose": list(map_value[2])})
    elif value is not None and any(d % TRANSPOSE_LAYER_ALIGN[chip] for d in value) and not _part_of_a_last_axis_split(graph, node):
        views = _value_walk(graph, node)[1]
        # The swap joins the Reshape beside it: the view after it where there is one (3-D batched
        # attention: the heads' split stays on the NPU), else the heads' split before it.
        beside = views if views else ([heads] if heads is not None else [])
        if views and heads is not None:
            graph.fuse([heads], "Reshape", attributes={SPLIT_BEFORE_A_VIEW_ATTRIBUTE: 1})
        graph.fuse([*beside, node, *_lone_concats_after(graph, node)], "Transpose",
                   leader=node, attributes={"perm": _perm(node), "rknn_value_transpose": list(value)})
    elif heads is not None and _head_size(heads) is not None:
        view = _batched_view_after(graph, node) if chip in TRANSPOSE_LAYER_ALIGN else None
        if view is not None and _head_size(heads) % TRANSPOSE_LAYER_ALIGN[chip]:
            # 3-D batched attention with unaligned heads: the split stays on the NPU; the Transpose
            # joins the view after it (and a key's swap after that), placed by the head size.
            size = _head_size(heads)
            graph.fuse([heads], "Reshape", attributes={SPLIT_BEFORE_A_VIEW_ATTRIBUTE: 1})
            graph.fuse([view, node, *_following_transposes(graph, view)], "Reshape", leader=view, attributes={"rknn_head_size": size})
        else:
            graph.fuse([heads, node, *_following_transposes(graph, node)], "Reshape", leader=heads,
                       attributes={"rknn_head_size": _head_size(heads)})
    else:
        graph.eliminate(node)


# What a rotary position embedding does to attention's heads between their split and the scores'
# product (RoFormer's x * cos + rotate(x) * sin, the rotation interleaved: x[..., 1::2] negated and
# x[..., ::2] stacked on a new last axis, viewed back), and the key's swap before the product.
ROTARY_OPS = frozenset({"Slice", "Neg", "Unsqueeze", "Concat", "Reshape", "Mul", "Add", "Transpose"})
ROTARY_HOPS = 11  # the interleaved rotation and the key's swap: 9; on part of each head (a Slice, a Concat): 11


def _multiplied_by_a_table(graph, node) -> bool:
    """Whether a Mul by a constant reads `node`'s result (a rotation's x * cos), or, after a Slice of
    it, a Mul by a constant table of more than one value (Moonshine's rotation of each head's first
    values: a scalar scale after a Slice is MaxViT's joint projection cut along the last axis)."""
    readers = graph.consumers(node.outputs[0].name)
    if any(r.op_type == "Mul" and any(_known(t) for t in r.inputs) for r in readers):
        return True
    tables = (c for r in readers if r.op_type == "Slice" for c in graph.consumers(r.outputs[0].name) if c.op_type == "Mul")
    return any(_known(t) and t.shape is not None and int(np.prod(t.shape)) > 1 for m in tables for t in m.inputs)


def _rotated_into_product(graph, node) -> bool:
    """Whether the heads' Transpose [0, 2, 1, 3] `node`, right after their split, reaches a product of
    two computed tensors only through a rotary embedding's operators (ROTARY_OPS): on RK3566 the
    toolkit merges it all the same (tests/forms_models.py rotary_heads_pack; partial_rotary_pack:
    Moonshine's rotation, interleaved, of each head's first 8 to 28 values, the rest Concatenated back)."""
    if _perm(node) != [0, 2, 1, 3] or (_heads_reshape(graph, node) is None and not _normed_before(graph, node)):
        return False  # right after the heads' split, or after a per-head norm of it (Qwen3: head_norm_pack)
    if not _multiplied_by_a_table(graph, node):
        return False  # no x * cos: not a rotation (a joint projection split along the last axis stays a CPU layer, MaxViT)
    frontier, products = [node], 0
    for _ in range(ROTARY_HOPS):
        nxt = []
        for n in frontier:
            for reader in (c for o in n.outputs if o.name for c in graph.consumers(o.name)):
                if _product_of_computed(reader):
                    products += 1
                elif reader.op_type == "Shape":
                    continue  # read for the view back's shape (RoFormer's Reshape(x, Shape(x))): computed at conversion
                elif reader.op_type in ROTARY_OPS and not any(o.is_model_output for o in reader.outputs):
                    nxt.append(reader)
                else:
                    return False
        if not nxt:
            return products > 0
        frontier = nxt
    return False


def _swap_into_softmax_of_products(graph, softmax):
    """The Transpose when `softmax` normalises the last axis of a tensor whose last two axes a
    Transpose read only by it swapped, and only products (MatMul) read the Softmax; else None."""
    first = graph.producer(softmax.inputs[0].name) if softmax.inputs else None
    rank = softmax.inputs[0].rank if softmax.inputs else None
    if first is None or first.op_type != "Transpose" or rank is None or rank < 3 or graph.only_consumer(first.outputs[0].name) is not softmax:
        return None
    if _perm(first) != list(range(rank - 2)) + [rank - 1, rank - 2] or int(softmax.attr("axis", -1)) % rank != rank - 1:
        return None
    readers = graph.consumers(softmax.outputs[0].name)
    return first if readers and all(r.op_type == "MatMul" for r in readers) else None


@RULES.graph_pass("Softmax", chips=SOFTMAX_ON_CPU_CHIPS, OBSERVED=TOOLKIT_OBSERVED)
def swap_into_a_cpu_softmax_of_products(graph, chip):
    """{OBSERVED} on RK3566/RK3568, where Softmax runs on the CPU, gives no layer of its own to a Transpose that swaps the last two axes for a Softmax over the last axis when no Transpose undoes it and only products (MatMul, either operand, by a computed tensor or a constant) read the Softmax (CoaT's k.softmax(dim=2) before k^T @ v as torch.onnx writes it below opset 13, the Transpose back cancelled against k^T): it does not run on the CPU. Read by anything else (a Relu, a model output, a product and a Relu), or read by more than the Softmax, it is a CPU Transpose layer.

    Measured on RK3566 with tests/forms_models.py transposed_softmax packs (opsets 11 and 13;
    [1, H, T, D] of 8x257x8, 8x5x64, 8x17x16, 1x50x24, 3x7x5, 4x64x32: NPU; read by a Relu, a
    model output, a product and a Relu, or the Transpose also read by a Relu: CPU; perms [0, 2, 1,
    3], [0, 3, 2, 1] and [0, 2, 3, 1]: CPU; rank 3 and 5: not reported) and crpe_mini_op11
    (CoaT-Lite Mini's four stages at opset 11). RK3568 is taken to behave as RK3566 (not measured).
    Runs after transposes_merged_into_matmul, which reads the swap's axes (a Softmax of k over the
    tokens keeps the joint projection whole).
    """
    for softmax in [n for n in graph.nodes if n.op_type == "Softmax"]:
        swap = _swap_into_softmax_of_products(graph, softmax)
        if swap is not None:
            graph.eliminate(swap)


@RULES.graph_pass("Transpose", OBSERVED=TOOLKIT_OBSERVED)
def transpose_between_reshape_and_softmax_joins_the_reshape(graph, chip):
    """{OBSERVED} folds a Transpose that lies between a Reshape and a Softmax (the distribution-focal-loss decode of YOLOv5u/v8/11: Reshape, Transpose, Softmax) into the Reshape's layer (its pass reduce_tp_in_mesh_forward): it runs where that Reshape runs.

    Measured on the DFL heads of yolo11n and yolov5nu (the build log names the Transpose as
    fused with the Reshape) and on a small Conv, Reshape, Transpose, Softmax model.
    """
    for node in [n for n in graph.nodes if n.op_type == "Transpose"]:
        before = graph.producer(node.inputs[0].name) if node.inputs else None
        if before is None or before.op_type != "Reshape" or graph.only_consumer(before.outputs[0].name) is not node:
            continue
        if _next(graph, node, "Softmax") is not None and node.attr(SOFTMAX_AXIS_ATTRIBUTE) is None:
            graph.fuse([before, node], "Reshape", leader=before)


# The attribute multi_query_attention_layer gives the group it makes (rules.multi_query_attention_on_cpu).
MULTI_QUERY_ATTRIBUTE = "rknn_multi_query_heads"


def _broadcast_second(matmul) -> bool:
    """A product of computed tensors whose second operand's batch dimensions broadcast to the first's."""
    a, b = matmul.inputs[0].shape, matmul.inputs[1].shape
    if a is None or b is None or len(a) != len(b) or len(a) < 3 or not all(isinstance(d, int) for d in (*a, *b)):
        return False
    return tuple(a[:-2]) != tuple(b[:-2]) and all(db in (1, da) for da, db in zip(a[:-2], b[:-2]))


def _scales_into(graph, matmul) -> list:
    """The products by a one-element constant that are the only writers of `matmul`'s operands (q * scale, k * scale)."""
    scales = []
    for t in matmul.inputs[:2]:
        writer = graph.producer(t.name)
        if writer is not None and writer.inputs and _scalar_swapped(writer, writer.inputs[0].name) and graph.only_consumer(t.name) is matmul:
            scales.append(writer)
    return scales


@RULES.graph_pass("Softmax", chips=("rk3588",), OBSERVED=TOOLKIT_OBSERVED)
def multi_query_attention_layer(graph, chip):
    """{OBSERVED} makes attention whose key and value are shared by the query's heads (a MatMul of computed tensors whose second operand broadcasts over the heads, a Softmax, and a second such MatMul; MobileNetV4's multi-query attention) one layer with the scales of q and k before it, and runs it on the CPU (rules.multi_query_attention_on_cpu).

    Measured on RK3588: tests/forms_models.py broadcast_attention (2 heads: both products and the
    Softmax on the CPU; a Relu instead of the Softmax: all on the NPU) and map_attention "mqa"/"mqa4"
    (2 query heads, 4, 9 and 16 tokens: q's scale joins them; 1 query head, nothing broadcast: NPU);
    MobileNetV4-hybrid-medium's attention (q and k each scaled).
    """
    for softmax in [n for n in graph.nodes if n.op_type == "Softmax"]:
        scores = graph.producer(softmax.inputs[0].name) if softmax.inputs else None
        context = graph.only_consumer(softmax.outputs[0].name) if softmax.outputs else None
        if scores is None or context is None or not (_product_of_computed(scores) and _product_of_computed(context)):
            continue
        if graph.only_consumer(scores.outputs[0].name) is not softmax or context.inputs[0].name != softmax.outputs[0].name:
            continue
        if _broadcast_second(scores) and _broadcast_second(context):
            heads = int(np.prod(scores.inputs[0].shape[:-2]))
            graph.fuse([*_scales_into(graph, scores), scores, softmax, context], "MatMul", leader=context, attributes={MULTI_QUERY_ATTRIBUTE: heads})


# A 3-D tensor [N, T, C] is held by the toolkit as the 4-D (N, C, 1, T): its last axis as the
# channels. So [N, C, H, W] -> Reshape [N, C, H*W] -> Transpose [0, 2, 1] -> [N, H*W, C] (a
# feature map flattened into tokens) is the same memory as the map, and the way back too.
TOKEN_SWAP = [0, 2, 1]
TOKEN_STREAM_ATTRIBUTE = "rknn_token_stream_output"
TOKEN_REGROUP_ATTRIBUTE = "rknn_token_swap_regrouped"
TOKEN_KV_ATTRIBUTE = "rknn_tokens_of_a_kv_projection"


def _map_flatten(node) -> tuple[int, ...] | None:
    """The map [N, C, H, W] of a Reshape [N, C, H, W] -> [N, C, H*W] (read before a token swap: an
    output shape the exporter computed and inference left open is taken to be that one); else None."""
    x, out = _static_shape(node.inputs[0]) if node.inputs else None, _static_shape(node.outputs[0]) if node.outputs else None
    if node.op_type != "Reshape" or x is None or len(x) != 4:
        return None
    return x if not out or out == (x[0], x[1], x[2] * x[3]) else None


def _map_unflatten(node) -> bool:
    """A Reshape [N, C, H*W] -> [N, C, H, W]."""
    x, out = _static_shape(node.inputs[0]) if node.inputs else None, _static_shape(node.outputs[0]) if node.outputs else None
    return node.op_type == "Reshape" and x is not None and out is not None and len(out) == 4 and x == (out[0], out[1], out[2] * out[3])


def _keeps_batch(node, batch: int, forward: bool) -> bool:
    """A reshape on the token side that keeps the leading axis (else the tokens are regrouped,
    as area attention does, and the swap is a real Transpose layer)."""
    if node.op_type not in ("Reshape", "Flatten"):
        return True
    other = _static_shape(node.outputs[0] if forward else node.inputs[0])
    return other is not None and len(other) > 0 and other[0] == batch


def _regroups_tokens(node, batch: int) -> bool:
    """A Reshape [N, T, C] -> [N*A, T/A, C] (the tokens regrouped on the leading axis)."""
    out = _static_shape(node.outputs[0]) if node.outputs else None
    return node.op_type == "Reshape" and out is not None and len(out) == 3 and out[0] != batch


def _feeds_kv_stack(graph, node, hops: int = 4) -> bool:
    """Whether the tokens out of `node` reach, through at most `hops` nodes of rank-3 results (a
    layer norm, the projection), the key/value heads' split of key_transpose_of_a_kv_projection."""
    frontier = [node]
    for _ in range(hops):
        nxt = []
        for n in frontier:
            for reader in graph.consumers(n.outputs[0].name) if n.outputs else []:
                out = _static_shape(reader.outputs[0]) if reader.outputs else None
                # The heads' Transpose after it is merged away by now (transposes_merged_into_matmul).
                if reader.op_type == "Reshape" and out is not None and len(out) == 5 and out[2] == 2 and out[3] > 1:
                    return True
                if out is not None and len(out) == 3:
                    nxt.append(reader)
        frontier = nxt
    return False


# Where a token stream carried from a feature map's swap ends, as TOKEN_STREAM_ATTRIBUTE's value.
STREAM_TO_3D_OUTPUT = 1
STREAM_TO_TOKEN_MEAN = 2
STREAM_TO_RESIDUAL_MEAN = 3


def _token_axis_only(node, i: int) -> bool:
    """Whether `node` works along axis 1 alone of its 3-D input (axes attribute, or input `i`)."""
    axes = _ints(node.input(i)) if node.attr("axes") is None and len(node.inputs) > i else node.attr("axes")
    return axes is not None and [int(a) % 3 for a in axes] == [1]


def _averages_sliced_tokens(graph, node, tensor) -> bool:
    """A ReduceMean over the tokens of a 3-D tensor [N, T, C] that a Slice along the tokens wrote
    (EVA-02's x[:, 1:].mean(1): the class token left out)."""
    if node.op_type != "ReduceMean" or tensor.rank != 3 or not _token_axis_only(node, 1):
        return False
    sliced = graph.producer(tensor.name)
    return sliced is not None and sliced.op_type == "Slice" and _token_axis_only(sliced, 3)


# Element-wise operators a residual stream passes through unchanged in layout before its mean: one
# computed input, any other a constant (tests/forms_models.py token_mean_factors_pack: Relu, Mul).
STREAM_ELEMENTWISE = frozenset({"Relu", "Add", "Sub", "Mul", "Div"})
MAX_RESIDUAL_SUMS = 256  # Adds followed back from a mean to the swap (a ViT-S has 24 residual sums)


def _computed_inputs(node) -> list:
    return [t for t in node.inputs if t.name and not _known(t)]


def _sums_back_to(graph, tensor, target: str, seen: set) -> bool:
    """Whether `tensor` is `target` or a sum (Add) that reaches it through Adds alone: the residual
    stream of a stack of blocks, x + f(x), back to the swap (a position Add on the way)."""
    if tensor.name == target:
        return True
    if tensor.name in seen or len(seen) > MAX_RESIDUAL_SUMS:
        return False
    seen.add(tensor.name)
    writer = graph.producer(tensor.name)
    return writer is not None and writer.op_type == "Add" and any(_sums_back_to(graph, t, target, seen) for t in _computed_inputs(writer))


def _averages_a_residual_sum(graph, node, tensor, swapped: str, hops: int = 4) -> bool:
    """A ReduceMean over the tokens of a 3-D tensor [N, T, C] (x.mean(1), keepdims either way) that
    a residual sum wrote, x + f(x) with both terms computed and x the swapped tokens `swapped` or a sum
    of them (through up to `hops` element-wise operators by a constant: a Relu, a layer scale), with no
    normalisation between: ViT-RelPos's and ViTamin's tokens averaged for the head."""
    if node.op_type != "ReduceMean" or tensor.rank != 3 or not _token_axis_only(node, 1):
        return False
    writer = graph.producer(tensor.name)
    for _ in range(hops + 1):
        if writer is None or writer.op_type not in STREAM_ELEMENTWISE:
            return False
        computed = _computed_inputs(writer)
        if writer.op_type == "Add" and len(computed) == 2:
            return any(_sums_back_to(graph, t, swapped, set()) for t in computed)
        if len(computed) != 1:
            return False
        writer = graph.producer(computed[0].name)
    return False


# The flattening Reshape and the residual Add of a swap that a Linear and the sum read straight (no
# norm between), where the stream ends in STREAM_TO_RESIDUAL_MEAN (rules.swap_summed_before_a_token_mean).
SWAP_SUMMED_ATTRIBUTE = "rknn_swap_summed_before_a_token_mean"


def _summed_straight_beside_a_product(graph, node, readers):
    """The residual Add when the swap's readers are a product by a constant (a Linear) and that Add
    alone (no norm, no position Add first), else None."""
    adds = [r for r in readers if r.op_type == "Add" and len(_computed_inputs(r)) == 2]
    products = [r for r in readers if r.op_type == "MatMul" and r.inputs[0].name == node.outputs[0].name and _known(r.input(1))]
    return adds[0] if len(adds) == 1 and products and len(adds) + len(products) == len(readers) else None


def _token_stream_end(graph, node, limit: int = 4000) -> int | None:
    """Where the token stream from `node` (through rank-3 tensors only) ends in what makes the
    toolkit lay the tokens out again: a 3-D model output (STREAM_TO_3D_OUTPUT, first), a mean over
    the tokens of a residual sum of them (STREAM_TO_RESIDUAL_MEAN), or a mean over tokens sliced
    along their axis (STREAM_TO_TOKEN_MEAN); None if none."""
    frontier, seen, mean, residual_mean = [node.outputs[0]], set(), False, False
    while frontier and len(seen) < limit:
        tensor = frontier.pop()
        if tensor.name in seen:
            continue
        seen.add(tensor.name)
        if tensor.is_model_output and tensor.rank == 3:
            return STREAM_TO_3D_OUTPUT
        for reader in graph.consumers(tensor.name):
            mean = mean or _averages_sliced_tokens(graph, reader, tensor)
            residual_mean = residual_mean or _averages_a_residual_sum(graph, reader, tensor, node.outputs[0].name)
            frontier += [o for o in reader.outputs if o.name and o.rank == 3]
    if residual_mean:
        return STREAM_TO_RESIDUAL_MEAN
    return STREAM_TO_TOKEN_MEAN if mean else None


def _tokens_to_nhwc(node) -> bool:
    """A Reshape [N, H*W, C] -> [N, H, W, C], or [N, H*W, heads, D] -> [N, H, W, heads*D] (the heads
    merged on the way: the same memory as the tokens)."""
    x, out = _static_shape(node.inputs[0]) if node.inputs else None, _static_shape(node.outputs[0]) if node.outputs else None
    if node.op_type != "Reshape" or not x or not out or len(out) != 4 or len(x) not in (3, 4):
        return False
    return x[:2] == (out[0], out[1] * out[2]) and int(np.prod(x[2:])) == out[3]


def _nhwc_to_tokens(node) -> bool:
    """A Reshape [N, H, W, C] -> [N, H*W, C]."""
    x, out = _static_shape(node.inputs[0]) if node.inputs else None, _static_shape(node.outputs[0]) if node.outputs else None
    return node.op_type == "Reshape" and bool(x) and bool(out) and len(x) == 4 and len(out) == 3 and out == (x[0], x[1] * x[2], x[3])



MAX_MOVELESS_CHAIN = 3  # layout operators on either side of a Transpose tried for a chain that moves nothing
MAX_MOVELESS_ELEMENTS = 1 << 20


def _apply_layout(node, data):
    """`data` through one Reshape or Transpose (the shapes the model states), or None."""
    if node.op_type == "Reshape":
        out = _static_shape(node.outputs[0]) if node.outputs else None
        return data.reshape(out) if out and int(np.prod(out)) == data.size else None
    perm = _perm(node)
    return data.transpose(perm) if perm is not None and len(perm) == data.ndim else None


def _moves_nothing(chain) -> bool:
    """True when the Reshapes and Transposes of `chain` (in order) together only reshape: every
    element keeps its place in row-major order."""
    start = _static_shape(chain[0].inputs[0]) if chain[0].inputs else None
    if not start or int(np.prod(start)) > MAX_MOVELESS_ELEMENTS:
        return False
    data = np.arange(int(np.prod(start))).reshape(start)
    for node in chain:
        data = _apply_layout(node, data)
        if data is None:
            return False
    return bool((data.reshape(-1) == np.arange(data.size)).all())


def _layout_neighbours(graph, node, forward: bool) -> list:
    """Up to MAX_MOVELESS_CHAIN lone Reshapes/Transposes after (forward) or before `node`."""
    found, here = [], node
    for _ in range(MAX_MOVELESS_CHAIN):
        if forward:
            nxt = graph.only_consumer(here.outputs[0].name) if here.outputs else None
        else:
            nxt = graph.producer(here.inputs[0].name) if here.inputs else None
            nxt = nxt if nxt is not None and graph.only_consumer(nxt.outputs[0].name) is here else None
        if nxt is None or nxt.op_type not in ("Reshape", "Transpose"):
            break
        found.append(nxt)
        here = nxt
    return found


@RULES.graph_pass("Transpose", OBSERVED=TOOLKIT_OBSERVED, MAX_CHAIN=MAX_MOVELESS_CHAIN)
def transpose_in_a_chain_that_moves_nothing(graph, chip):
    """{OBSERVED} merges a Transpose into the Reshapes and Transposes around it (up to {MAX_CHAIN} on either side, each read only by the next) when together they move no element from its place in row-major order (its passes fuse_transpose_reshape, fuse_reshape_transpose, fuse_two_reshape): the Transpose is a reshape then, on the NPU even on RK3566/RK3568 where a Transpose layer runs on the CPU.

    Measured on YOLO12's area attention (its value [1, heads, head, tokens], Transpose [0, 3, 1, 2],
    Reshape [1, H, W, heads*head], Transpose [0, 3, 1, 2] into the positional Conv: the pool's
    yolo12n, -cls and -seg on RK3566) and tests/forms_models.py moveless_chain_pack on RK3566 and
    RK3588 (that chain after a Split, and alone on maps of 3x3 to 8x8, where the toolkit reports
    none of its nodes; the same Transpose into tokens, which moves the data, as the control).
    That is YOLO12's attention with one area; with more (its areas merged back on the way, which
    moves the data) area_attention_layouts places the chain.
    """
    for node in [n for n in graph.nodes if n.op_type == "Transpose"]:
        before, after = _layout_neighbours(graph, node, False)[::-1], _layout_neighbours(graph, node, True)
        chains = [before[i:] + [node] + after[:j] for i in range(len(before) + 1) for j in range(len(after) + 1)]
        if any(len(c) > 1 and _moves_nothing(c) for c in chains):
            graph.fuse([node], "Reshape", attributes={})


WINDOW_SWAP = [0, 1, 3, 2, 4, 5]  # [N, H/w, w, W/w, w, C] <-> [N, H/w, W/w, w, w, C]


@RULES.graph_pass("Transpose", chips=tuple(TRANSPOSE_LAYER_ALIGN), OBSERVED=TOOLKIT_OBSERVED)
def window_partition_between_reshapes(graph, chip):
    """{OBSERVED} runs on the NPU, even on RK3566/RK3568 where a Transpose layer runs on the CPU, the 6-D Transpose [0, 1, 3, 2, 4, 5] of Swin's window partition and window reverse between two Reshapes (a channels-last map [N, H, W, C] viewed as [N, H/w, w, W/w, w, C], swapped, viewed as windows [N*nW, w*w, C]; and back): it is placed as a Reshape.

    Measured on tests/forms_models.py window_pack on RK3566 and RK3588 (2026-12-04): maps of 21,
    14 and 28 with windows of 7, 16 with windows of 8, 32 to 192 channels, a Linear or window
    attention between partition and reverse: both Transposes on the NPU. Not probed: other ranks
    and perms, other neighbours than the two Reshapes (a run of such variants did not finish
    within the probe's 300 s under load).
    """
    for node in [n for n in graph.nodes if n.op_type == "Transpose"]:
        before = graph.producer(node.inputs[0].name) if node.inputs else None
        after = graph.only_consumer(node.outputs[0].name) if node.outputs else None
        if _perm(node) != WINDOW_SWAP or before is None or after is None or before.op_type != "Reshape" or after.op_type != "Reshape":
            continue
        if graph.only_consumer(before.outputs[0].name) is node:
            graph.fuse([node], "Reshape", attributes={})


def _swaps_a_batch_of_sets_then_joins_it(node, readers) -> bool:
    """Whether `node` swaps a batch of B > 1 sets [B, C, N] and a reader joins that batch into
    another leading axis (TNT: [16, 24, 16] swapped, then Reshape [1, 16, 384]): rknn-toolkit2 2.5.0
    gives that swap a Transpose layer (CPU on RK3566, NPU on RK3588; pixel_sets_pack), not the
    token swap of a map below."""
    shape = _static_shape(node.inputs[0]) if node.inputs else None
    if shape is None or len(shape) != 3 or shape[0] < 2:
        return False
    return any(r.op_type == "Reshape" and (_static_shape(r.outputs[0]) or shape)[:1] != shape[:1] for r in readers)


@RULES.graph_pass("Transpose", chips=SOFTMAX_ON_CPU_CHIPS, OBSERVED=TOOLKIT_OBSERVED, chip_key=CHANNELS_LAST_LEVEL_CHIPS.__contains__)
def nhwc_swap_beside_a_token_reshape(graph, chip):
    """{OBSERVED} holds tokens [N, H*W, C] as (N, C, 1, H*W), so tokens viewed as a channels-last map (Reshape [N, H, W, C]) and permuted to [N, C, H, W] (Transpose [0, 3, 1, 2]) before a convolution, or a map permuted channels-last (Transpose [0, 2, 3, 1]) and viewed as tokens, move no data: the Transpose has no layer of its own (its passes fuse_reshape_transpose, fuse_transpose_reshape), even on RK3566/RK3568 where a Transpose layer runs on the CPU.

    Measured on PVT-v2's, CoaT's and TinyViT's token/map round trips and on small models of both
    directions (tests/forms_models.py nhwc_swap, 32 channels on a 4x4 map); with attention's heads
    merged by that Reshape ([N, H*W, heads, D] -> [N, H, W, heads*D]: MobileNetV4's multi-query
    attention, tests/forms_models.py map_attention "mqa", 4, 9 and 16 tokens). Tokens regrouped on
    the way (area attention merging its areas back) are left as they are.
    """
    for node in [n for n in graph.nodes if n.op_type == "Transpose"]:
        perm = _perm(node)
        if not node.outputs or graph.producer(node.outputs[0].name) is not node or perm not in ([0, 3, 1, 2], [0, 2, 3, 1]):
            continue
        if perm == [0, 3, 1, 2]:
            before = graph.producer(node.inputs[0].name)
            source = graph.producer(before.inputs[0].name) if before is not None and before.inputs else None
            free = before is not None and _tokens_to_nhwc(before) and (source is None or _keeps_batch(source, _static_shape(before.outputs[0])[0], False))
        else:
            reader = graph.only_consumer(node.outputs[0].name)
            free = reader is not None and _nhwc_to_tokens(reader) and not _writes_channels_last_level(graph, node, chip)
        if free:
            graph.eliminate(node)


def _swap_then_regroup(graph, node, regroup, fmap) -> None:
    """Tokens of a map [N, C, H, W] regrouped into areas of T/A tokens: areas of one row each
    (T/A == W, held as (N*H, C, 1, W)) are the map's rows moved to the leading axis, a layout the
    NPU reshapes to; else (rows merged into one width, or split) the toolkit lays the data out
    again with a Reshape and a Transpose layer on the CPU."""
    out = _static_shape(regroup.outputs[0])
    if out[1] == fmap[3]:
        graph.eliminate(node)
        return
    graph.fuse([node], "Reshape", attributes={TOKEN_REGROUP_ATTRIBUTE: 1})
    graph.fuse([regroup], "Reshape", attributes={TOKEN_REGROUP_ATTRIBUTE: 2})


# A map's swap into tokens viewed straight back as a channels-last map [N, H, W, C] (rules.swap_viewed_as_a_map).
SWAP_VIEWED_AS_MAP_ATTRIBUTE = "rknn_swap_viewed_as_a_channels_last_map"
# The Reshape that unflattens tokens swapped back into a map [N, C, H, W]: no head merge (rules.reshape_of_unaligned_attention_heads).
MAP_UNFLATTEN_ATTRIBUTE = "rknn_map_unflatten_after_a_token_swap"


def _viewed_as_a_channels_last_map(graph, node, readers):
    """The Reshape [N, H*W, C] -> [N, H, W, C] that alone reads the swap `node`, directly or through
    a Mul by a constant (a per-channel scale), else None."""
    if len(readers) != 1:
        return None
    reader = readers[0]
    if reader.op_type == "Mul" and len(_computed_inputs(reader)) == 1 and reader.outputs:
        nxt = graph.consumers(reader.outputs[0].name)
        reader = nxt[0] if len(nxt) == 1 else None
    return reader if reader is not None and _tokens_to_nhwc(reader) else None


@RULES.graph_pass("Transpose", chips=SOFTMAX_ON_CPU_CHIPS, OBSERVED=TOOLKIT_OBSERVED)
def token_swap_beside_a_map_reshape(graph, chip):
    """{OBSERVED} holds a 3-D tensor [N, T, C] with its last axis as channels, so a Transpose [0, 2, 1] that turns a flattened feature map [N, C, H*W] into tokens [N, H*W, C], or tokens back into the map before a Reshape to [N, C, H, W], moves no data: it has no layer of its own (its passes bypass_two_reshape, fuse_transpose_reshape, reduce_tp_in_mesh_forward), even on RK3566/RK3568 where a Transpose layer runs on the CPU; that Reshape is no merge of attention heads, on the NPU whatever reads the map (a channels-last layer norm's Transpose). When the tokens are regrouped on the leading axis (area attention's Reshape [N, T, C] -> [N*A, T/A, C]) into areas that are not single rows of the map (T/A other than W), the swap is moved after that Reshape and becomes a Reshape and a Transpose layer, on the CPU, named after the Reshape and, by the order its passes ran, this Transpose or not: uncertain. Where the token stream ends in a 3-D model output, the toolkit makes a Transpose layer there, on the CPU, and names it after this Transpose or not, by the order its passes ran: uncertain; likewise where it ends in a mean over tokens sliced along their axis (EVA-02's x[:, 1:].mean(1)), which the toolkit computes as a Transpose, a Conv and a Reshape (that Transpose on the CPU or the NPU by the shapes). Tokens that go (through a layer norm) into a key/value projection of its own whose key is a CPU Transpose layer (key_transpose_of_a_kv_projection) are flattened with the swap on the CPU.

    Measured on the patch embeddings of ViT, DeiT, CLIP, DINOv2, BEiT and EVA-02, SegFormer's
    and PVT-v2's token/map round trips (Mix-FFN, spatial-reduction attention) and YOLO12's area
    attention (a 10x10 map's 100 tokens regrouped into 4 areas of 25: a CPU Transpose layer named
    after the Transpose; a 4x4 map's into 4 areas of 4, one row each: no layer); on small models
    of each form (tests/forms_models.py token_swap: 4 areas of a 10x10, 8x8 or 6x6 map on the CPU,
    named after the Reshape; of a 4x4 map on the NPU; BEiT's 3-D output named after the patch
    embedding's Transpose, CLIP's, DINOv2's and this model's not). The token mean: EVA-02's
    x[:, 1:].mean(1) (its CPU Transpose layer named after the patch embedding's swap, RK3566; a
    copy of the pool's skeleton with random weights, audit --confirm) and tests/forms_models.py
    token_pool_pack (the mean's Transpose layer named after the Linear before it, on the CPU for
    15 and 17 tokens, on the NPU for 16; the mean of tokens not sliced, as LeViT's and
    EfficientFormer's, was not seen named after the swap and is left on the NPU). The map
    unflattened at a stage's end and read by the next stage's channels-last layer norm (CAFormer:
    Transpose [0, 2, 3, 1]), [1, 64, 4, 4], [1, 64, 2, 2] and [1, 32, 7, 7]: its Reshape on the NPU
    of RK3566 and RK3588 (tests/forms_models.py map_unflatten_pack, 2026-12-05).
    """
    for node in [n for n in graph.nodes if n.op_type == "Transpose"]:
        if _perm(node) != TOKEN_SWAP or not node.outputs or graph.producer(node.outputs[0].name) is not node:
            continue
        before = graph.producer(node.inputs[0].name)
        readers = graph.consumers(node.outputs[0].name)
        if _swaps_a_batch_of_sets_then_joins_it(node, readers):
            continue  # a Transpose layer of its own (TNT's pixel sets: tests/forms_models.py pixel_sets_pack)
        fmap = _map_flatten(before) if before is not None else None
        view = _viewed_as_a_channels_last_map(graph, node, readers) if fmap is not None else None
        if view is not None:
            # The swap stays a Transpose layer (the CPU on this chip) and the view is one too.
            graph.fuse([view], "Reshape", attributes={SWAP_VIEWED_AS_MAP_ATTRIBUTE: 1})
            continue
        if fmap is not None and len(readers) == 1 and _regroups_tokens(readers[0], fmap[0]):
            _swap_then_regroup(graph, node, readers[0], fmap)
            continue
        shape = _static_shape(node.inputs[0])
        if not shape or not readers:
            continue
        to_tokens = fmap is not None and all(_keeps_batch(r, shape[0], True) for r in readers)
        to_map = len(readers) == 1 and _map_unflatten(readers[0]) and (before is None or _keeps_batch(before, shape[0], False))
        if to_tokens and _feeds_kv_stack(graph, node):
            graph.fuse([before, node], "Reshape", leader=before, attributes={TOKEN_KV_ATTRIBUTE: 1})
        elif to_tokens and (end := _token_stream_end(graph, node)) is not None:
            summed = _summed_straight_beside_a_product(graph, node, readers) if end == STREAM_TO_RESIDUAL_MEAN else None
            graph.fuse([node], "Reshape", attributes={TOKEN_STREAM_ATTRIBUTE: end})
            if summed is not None:
                graph.fuse([before], "Reshape", attributes={SWAP_SUMMED_ATTRIBUTE: 1})
                graph.fuse([summed], "Add", attributes={SWAP_SUMMED_ATTRIBUTE: 1})
        elif to_tokens or to_map:
            graph.eliminate(node)
            if to_map and not to_tokens:
                # Not a head merge: its Transpose reader (a channels-last layer norm's) keeps it on the NPU (CAFormer's stage end).
                graph.fuse([readers[0]], "Reshape", attributes={MAP_UNFLATTEN_ATTRIBUTE: 1})


def _last_axis_slice(node) -> bool:
    """A Slice of a 3-D tensor along its last axis only (a Conv1d's extra step dropped)."""
    axes = node.inputs[3] if node.op_type == "Slice" and len(node.inputs) > 3 else None
    rank = node.inputs[0].rank if node.inputs else None
    return axes is not None and axes.value is not None and rank == 3 and [int(a) % 3 for a in axes.value.reshape(-1)] == [2]


def _conv1d_before(graph, node):
    """The 1-D convolution ([N, C, L] result) that `node` reads through at most MAX_POSITIONWISE_CHAIN
    position-wise operators or Slices along the last axis (first data inputs), or None."""
    here = graph.producer(node.inputs[0].name) if node.inputs else None
    for _ in range(MAX_POSITIONWISE_CHAIN + 1):
        if here is None:
            return None
        if here.op_type == "Conv" and here.outputs and here.outputs[0].rank == 3:
            return here
        if here.op_type == "Add" and len(here.inputs) == 2 and not any(_known(t) for t in here.inputs):
            # a residual sum in the convolution's layout (SqueezeBERT): followed through its Conv operand
            sources = [graph.producer(t.name) for t in here.inputs]
            here = next((w for w in sources if w is not None and w.op_type == "Conv" and w.outputs and w.outputs[0].rank == 3), None)
            continue
        split = _channel_glu_split(graph, here)
        if split is not None:  # one exGlu layer in the convolution's layout (Speech2Text's subsampler)
            here = graph.producer(split.inputs[0].name)
            continue
        if not (_positionwise(here) or _last_axis_slice(here)):
            return None
        data = next((t for t in here.inputs if not _known(t)), None)
        here = graph.producer(data.name) if data is not None else None
    return None


def _channel_glu_split(graph, node):
    """The Split of a GLU over a 1-D convolution's channels when `node` is its product: a * sigmoid(b), a and b the two
    halves Split along the channel axis of [N, 2C, L] (torch's glu(dim=1)), which the toolkit makes one exGlu layer on
    the NPU in the convolution's layout (tests/forms_models.py conv1d_glu_pack, RK3566: the swap after it has no
    layer); else None."""
    if node.op_type != "Mul" or len(node.inputs) != 2 or any(_known(t) for t in node.inputs):
        return None
    makers = [graph.producer(t.name) for t in node.inputs]
    gate = next((m for m in makers if m is not None and m.op_type == "Sigmoid"), None)
    half = next((m for m in makers if m is not None and m.op_type == "Split"), None)
    if gate is None or half is None or graph.producer(gate.inputs[0].name) is not half or half.inputs[0].rank != 3:
        return None
    return half if int(half.attr("axis", 0)) % 3 == 1 and len([o for o in half.outputs if o.name]) == 2 else None


def _tokens_into_conv1d(graph, node) -> bool:
    """Whether the swap `node` of tokens [N, L, C] is read only by 1-D convolutions and residual Adds
    in their layout, at least one convolution (SqueezeBERT's q, k, v and post-attention Conv1d)."""
    readers = graph.consumers(node.outputs[0].name)
    convs = [r for r in readers if r.op_type == "Conv" and r.outputs and r.outputs[0].rank == 3 and r.inputs[0].name == node.outputs[0].name]
    return bool(convs) and all(r in convs or (r.op_type == "Add" and _conv1d_before(graph, r) is not None) for r in readers)


TOKENS_INTO_CONV1D_ATTRIBUTE = "rknn_tokens_moved_into_a_conv1d"  # T of the tokens [N, T, C]
TOKENS_INTO_CONV1D_ALIGN = 8


@RULES.graph_pass("Transpose", chips=SOFTMAX_ON_CPU_CHIPS, OBSERVED=TOOLKIT_OBSERVED, ALIGN=TOKENS_INTO_CONV1D_ALIGN)
def tokens_moved_into_a_conv1d(graph, chip):
    """{OBSERVED} runs on the CPU of RK3566/RK3568, as a Transpose layer, the swap [0, 2, 1] of tokens [N, T, C] read only by 1-D convolutions when the tokens are the model's input (Speech2Text's features into its subsampler), or a Relu or a LayerNorm of it and T is not a multiple of {ALIGN}; tokens of a Linear or a residual stream with one (which the toolkit holds as [N, C, 1, T] already: wav2vec2's positional convolution, Mimi's downsampling; conv1d_result_swapped_into_tokens) have the swap on the NPU or no layer. The pass marks the Transpose for the rule tokens_moved_into_a_conv1d (conv1d_result_swapped_into_tokens then leaves it).

    Measured with rknn-toolkit2 2.5.0 on RK3566 (2026-12-05, int8, opset 17; tests/forms_models.py
    tokens_into_conv1d_pack and scratch grids; found on fresh5's hf_speech_to_text/rk3566): tokens
    after a Relu (or a LayerNorm), kernel 1, 3 or 5, stride 1 or 2: 8, 16, 24, 32, 40, 48, 56, 64 and
    96 tokens of 24 to 80 channels: NPU; 49, 50 and 100 tokens: CPU; the model's input [1, 64, 64],
    [1, 64, 40] or [1, 100, 80] swapped straight into the Conv1d: CPU. The SqueezeBERT form (the
    swap also read by a residual Add in the convolutions' layout) is left to conv1d_result_swapped_into_tokens.
    """
    for node in [n for n in graph.nodes if n.op_type == "Transpose"]:
        if _perm(node) != TOKEN_SWAP or not node.outputs or node.inputs[0].rank != 3 or not _own_node(graph, node):
            continue
        readers = graph.consumers(node.outputs[0].name)
        if not readers or any(r.op_type != "Conv" or r.inputs[0].name != node.outputs[0].name for r in readers):
            continue
        tokens = _static_shape(node.inputs[0])
        source = graph.producer(node.inputs[0].name)
        # Measured on the input and on a Relu or a LayerNorm of it; other token streams (a Linear's result, a residual
        # sum with one: wav2vec2, Mimi's tokens_into_padded_conv_pack at 7 tokens) have the swap on the NPU.
        of_input = source is not None and source.op_type in ("Relu", "LayerNormalization") and graph.producer(source.inputs[0].name) is None
        if not tokens or (source is not None and (not of_input or tokens[1] % TOKENS_INTO_CONV1D_ALIGN == 0)):
            continue
        graph.fuse([node], "Transpose", attributes={"perm": [0, 2, 1], TOKENS_INTO_CONV1D_ATTRIBUTE: int(tokens[1])})


@RULES.graph_pass("Transpose", chips=SOFTMAX_ON_CPU_CHIPS, OBSERVED=TOOLKIT_OBSERVED, MAX_CHAIN=MAX_POSITIONWISE_CHAIN)
def conv1d_result_swapped_into_tokens(graph, chip):
    """{OBSERVED} holds a 1-D convolution's result [N, C, L] as (N, C, 1, L), and tokens [N, L, C] the same way, so a Transpose [0, 2, 1] that turns the one into the other (through up to {MAX_CHAIN} position-wise operators or Slices along the last axis: wav2vec2's and HuBERT's positional convolution, its extra step dropped, GELU) moves no data and has no layer of its own (its pass bypass_two_reshape), even on RK3566/RK3568 where a Transpose layer runs on the CPU; but where the tokens go straight to a model output (the Transpose's reader writes one) it is a Transpose layer, on the CPU.

    Measured on RK3566 and RK3588 with tests/forms_models.py speech_front_* (the pool's tiny
    wav2vec2/HuBERT: 199 tokens of 64, a kernel-16 Conv of 4 groups; 49, 64 and 100 tokens, 48, 64
    and 96 channels, 4 or 16 groups, an odd kernel without the Slice, no GELU; the residual Add as
    the model's output: CPU) and the pool's hf_wav2vec2 and hf_hubert. The other way, tokens swapped
    into 1-D convolutions, and the swap back of a residual sum in their layout (SqueezeBERT: a
    LayerNorm, the swap, Conv1d and Add, the swap back, a LayerNorm) move no data either:
    tests/forms_models.py tokens_for_conv1d_pack (RK3566, 2026-12-04; 16 to 49 tokens of 24 to 128:
    not reported after a LayerNorm, NPU after a Relu); the swap back into a LayerNorm that writes the
    model output is not reported and no Transpose is off the NPU in the verdict: no layer either.
    """
    for node in [n for n in graph.nodes if n.op_type == "Transpose"]:
        if _perm(node) != TOKEN_SWAP or not node.outputs or graph.producer(node.outputs[0].name) is not node:
            continue
        if node.attr(TOKENS_INTO_CONV1D_ATTRIBUTE) is not None:
            continue  # a Transpose layer (tokens_moved_into_a_conv1d)
        readers = graph.consumers(node.outputs[0].name)
        # A LayerNorm over the tokens writing the model output leaves no Transpose layer (SqueezeBERT's
        # last norm); tokens swapped into a Conv1d that writes the model output neither (HiFi-GAN's
        # conv_pre cut out of the vocoder: the swap NPU, normalised_input_pack).
        into_conv1d = _tokens_into_conv1d(graph, node)
        kept_apart = ("LayerNormalization", "Conv") if into_conv1d else ("LayerNormalization",)
        to_output = node.outputs[0].is_model_output or any(o.is_model_output for r in readers if r.op_type not in kept_apart for o in r.outputs if o.name)
        if readers and not to_output and (_conv1d_before(graph, node) is not None or into_conv1d):
            graph.eliminate(node)


PADDED_SWAP_ALIGN = 8  # the padded tokens' length and channels for their Transpose layer on RK3566's NPU


# Given by the pass below to the node that carries the output swap's CPU layer after a SiLU: "sigmoid" (the swap stays,
# its Sigmoid runs with it) or "output" (the swap is moved past the SiLU: the Mul writing the output is named for it).
SILU_OUTPUT_SWAP_ATTRIBUTE = "rknn_silu_output_swap"
SILU_OUTPUT_SWAP_ALIGN = 8


@RULES.graph_pass("Transpose", chips=SOFTMAX_ON_CPU_CHIPS, OBSERVED=TOOLKIT_OBSERVED, ALIGN=SILU_OUTPUT_SWAP_ALIGN)
def conv1d_swap_before_an_output_silu(graph, chip):
    """{OBSERVED} makes the swap [0, 2, 1] of a 1-D convolution's result into tokens [N, T, C] a CPU Transpose layer on RK3566/RK3568 when a SiLU (Sigmoid, Mul) of the tokens is the model output (ContextNet's end): with T a multiple of {ALIGN} it moves that layer past the SiLU, so the swap has none and the layout layer is named after the output Mul; otherwise the swap keeps it and the Sigmoid that reads it runs on the CPU too (the Mul on the NPU). The pass eliminates the swap or marks the Sigmoid or the Mul for the rule silu_beside_an_output_swap.

    Measured with rknn-toolkit2 2.5.0 on RK3566 (h19-rknorm, 2026-12-06, int8, opset 13; tests/forms_models.py
    swap_to_output_act_pack and _2, found on fresh10's pkg_contextnet): a Conv1d (kernel 1) to 40, 64 or 640 channels
    over 8, 12, 13, 16, 20, 24 and 32 steps, swapped, SiLU as the output: at 8, 16, 24 and 32 steps the swap and the
    Sigmoid NPU and the Mul CPU; at 12, 13 and 20 the swap and the Sigmoid CPU and the Mul NPU. A Sigmoid or a Relu
    alone as the output at 13 steps: the swap CPU, the activation NPU (as before). RK3588: every node on the NPU.
    """
    for swap in [n for n in graph.nodes if n.op_type == "Transpose"]:
        if _perm(swap) != TOKEN_SWAP or not _own_node(graph, swap) or not _swap_of_a_conv1d(graph, swap):
            continue
        readers = graph.consumers(swap.outputs[0].name)
        sigmoid = next((r for r in readers if r.op_type == "Sigmoid"), None)
        mul = next((r for r in readers if r.op_type == "Mul"), None)
        tokens = _static_shape(swap.outputs[0])
        if len(readers) != 2 or sigmoid is None or mul is None or tokens is None or _silu_input(graph, mul) is None:
            continue
        if not mul.outputs[0].is_model_output:
            continue
        if tokens[1] % SILU_OUTPUT_SWAP_ALIGN == 0:
            graph.eliminate(swap)
            graph.fuse([mul], "Mul", attributes={SILU_OUTPUT_SWAP_ATTRIBUTE: "output"})
        else:
            graph.fuse([sigmoid], "Sigmoid", attributes={SILU_OUTPUT_SWAP_ATTRIBUTE: "sigmoid"})


def _silu_input(graph, node):
    """The x of a SiLU written x * Sigmoid(x) (either order) whose Mul is `node`, else None."""
    if node.op_type != "Mul" or len(node.inputs) != 2:
        return None
    for x, gate in (node.inputs, node.inputs[::-1]):
        sigmoid = graph.producer(gate.name)
        if sigmoid is not None and sigmoid.op_type == "Sigmoid" and sigmoid.inputs[0].name == x.name:
            return x
    return None


def _writer(graph, tensor: str):
    """The node that writes `tensor`, or the one an earlier pass eliminated there (its input passes through)."""
    return graph.producer(tensor) or graph.wire(tensor)


def _swap_of_a_conv1d(graph, node) -> bool:
    """Whether `node` swaps a 1-D convolution's result into tokens, or is that convolution (its swap already
    removed by conv1d_result_swapped_into_tokens)."""
    if node.op_type == "Transpose" and _perm(node) == TOKEN_SWAP:
        node = graph.producer(node.inputs[0].name)
    return node is not None and node.op_type == "Conv" and bool(node.outputs) and node.outputs[0].rank == 3


def _swapped_conv1d_result(graph, tokens: str) -> bool:
    """Whether `tokens` [N, T, C] are a 1-D convolution's result swapped into tokens (Transpose [0, 2, 1]), through at
    most MAX_POSITIONWISE_CHAIN position-wise operators, SiLUs and residual Adds one operand of which is such a swap
    (ContextNet's blocks: SiLU(SE(swapped Conv1d) + swapped shortcut Conv1d))."""
    here = _writer(graph, tokens)
    for _ in range(MAX_POSITIONWISE_CHAIN + 1):
        if here is None:
            return False
        if _swap_of_a_conv1d(graph, here):
            return True
        if here.op_type == "Add" and len(here.inputs) == 2 and not any(_known(t) for t in here.inputs):
            here = next((w for w in (_writer(graph, t.name) for t in here.inputs) if w is not None and _swap_of_a_conv1d(graph, w)), None)
            continue
        x = _silu_input(graph, here)
        if x is None and not _positionwise(here):
            return False
        if x is None:
            x = next((t for t in here.inputs if not _known(t)), None)
        here = _writer(graph, x.name) if x is not None else None
    return False


@RULES.graph_pass("Transpose", chips=SOFTMAX_ON_CPU_CHIPS, OBSERVED=TOOLKIT_OBSERVED, ALIGN=PADDED_SWAP_ALIGN)
def tokens_swapped_past_a_pad(graph, chip):
    """{OBSERVED} moves the swap [0, 2, 1] of tokens [N, T, C] read only by a Pad of their time axis that a 1-D convolution alone reads (Mimi's downsampling after its transformer; the Pad becomes a Conv layer) after that Pad, as a Transpose layer of the padded tokens; on RK3566/RK3568 that layer runs on the NPU when the padded length and the channels are both multiples of {ALIGN}, else on the CPU.

    Measured with rknn-toolkit2 2.5.0 on RK3566 (2026-12-05, int8, opset 13; tests/forms_models.py
    tokens_into_edge_pad_pack and h9-views' tokens_into_padded_conv_pack; found on fresh5's hf_mimi/rk3566): edge,
    reflect and constant Pads, kernel 3 or 4: padded to 16, 24, 32 or 128 steps of 32 or 64 channels: "Transpose INT8
    on NPU"; padded to 10, 11, 19 or 131 steps, or 128 steps of 20 channels: on the CPU. The same tokens swapped
    straight into the Conv1d have no such layer (tokens_into_padded_conv_pack's unpadded case: NPU).
    Tokens that are a Conv1d's result swapped into tokens (through a SiLU, position-wise operators and residual sums
    of such) are held in the convolution's layout already: their swap past the Pad has no layer, whatever the
    lengths (h19-rknorm, 2026-12-06, tests/forms_models.py padded_swap_source_pack, found on fresh10's
    pkg_contextnet: a Conv1d's result or the sum of two, swapped, SiLU, swapped back into a reflect Pad and a
    depthwise Conv1d, 100 steps of 128 and 13 of 256: NPU; the model input's SiLU so: CPU at 100 steps (dense or
    depthwise Conv1d), NPU at 14). The model's input itself swapped into the Pad is a Transpose layer on the CPU
    at any length (h19-rknorm, tests/forms_models.py input_swap_pad_pack, found on fresh10's pkg_ecapa_tdnn: [1, 100,
    80] and [1, 12, 64] padded by 2 and 2 to 104 and 16 steps for a kernel-5 Conv1d: CPU; a Relu of them: NPU).
    """
    for node in [n for n in graph.nodes if n.op_type == "Transpose"]:
        tokens = _static_shape(node.inputs[0]) if node.inputs else None
        pad = graph.only_consumer(node.outputs[0].name) if node.outputs and _perm(node) == TOKEN_SWAP and tokens and len(tokens) == 3 else None
        if pad is None or pad.op_type != "Pad" or not _own_node(graph, node):
            continue
        if _swapped_conv1d_result(graph, node.inputs[0].name):
            graph.eliminate(node)  # tokens held in the convolution's layout already: no layer (ContextNet)
            continue
        if node.inputs[0].is_graph_input:
            continue  # the model's input itself: a Transpose layer on the CPU at any length (ECAPA-TDNN's front)
        padded = _static_shape(pad.outputs[0])
        conv = graph.only_consumer(pad.outputs[0].name)
        if padded is None or padded[:2] != (tokens[0], tokens[2]) or conv is None or conv.op_type != "Conv":
            continue
        if padded[1] % PADDED_SWAP_ALIGN == 0 and padded[2] % PADDED_SWAP_ALIGN == 0:
            graph.fuse([node], "Reshape", attributes={})  # a Transpose layer the NPU runs, placed as a layout change


# The token swap written in 4-D around a unit axis: tokens [N, T, C] unsqueezed to [N, 1, T, C] and swapped to a
# map [N, C, T, 1] for a convolution over time, and that map swapped back (FunASR's FSMN memory block).
UNIT_AXIS_TOKEN_SWAP = [0, 3, 2, 1]
# Activations the toolkit fuses into a Linear's Conv layer (ConvRelu, ConvSigmoid), measured after the Linear.
LINEAR_LAYER_ACTIVATIONS = ("Relu", "Sigmoid")


def _linear_layer_of(graph, tensor: str):
    """(the MatMul, whether an activation follows) when `tensor` is what one Linear's Conv layer writes: a MatMul by
    constant weights, then at most its bias Add and a Relu or Sigmoid; else (None, False)."""
    node = graph.producer(tensor)
    activated = node is not None and node.op_type in LINEAR_LAYER_ACTIVATIONS
    if activated:
        node = graph.producer(node.inputs[0].name)
    if node is not None and node.op_type == "Add" and len(node.inputs) == 2 and sum(_known(t) for t in node.inputs) == 1:
        node = graph.producer(next(t for t in node.inputs if not _known(t)).name)
    return (node, activated) if node is not None and _linear(node) else (None, False)


def _unit_axis_swap_merged(graph, swap) -> bool:
    """Whether the toolkit merges the swap [N, 1, T, C] -> [N, C, T, 1] of unsqueezed tokens into a Linear's layer:
    the tokens are an activated Linear's result, or a Linear's result whose input is itself a Linear's result."""
    unsqueeze = graph.producer(swap.inputs[0].name)
    shape = _static_shape(swap.inputs[0])
    if unsqueeze is None or unsqueeze.op_type != "Unsqueeze" or not shape or len(shape) != 4 or shape[1] != 1:
        return False
    linear, activated = _linear_layer_of(graph, unsqueeze.inputs[0].name)
    return linear is not None and (activated or _linear_layer_of(graph, linear.inputs[0].name)[0] is not None or _reads_an_npu_layernorm(graph, linear))


def _unit_axis_swap_back_merged(graph, swap) -> bool:
    """Whether the swap back [N, C, T, 1] -> [N, 1, T, C] of a convolution's map (or a sum with one), squeezed to tokens
    read only by Linears, has no layer: its pass fuse_transpose_reshape_transpose joins it to the Linears' layout."""
    shape, source = _static_shape(swap.inputs[0]), graph.producer(swap.inputs[0].name)
    readers = graph.consumers(swap.outputs[0].name)
    if not shape or len(shape) != 4 or shape[3] != 1 or source is None or source.op_type not in ("Conv", "Add") or len(readers) != 1:
        return False
    squeeze = readers[0]
    if squeeze.op_type not in ("Squeeze", "Reshape") or _static_shape(squeeze.outputs[0]) != (shape[0], shape[2], shape[1]) or squeeze.outputs[0].is_model_output:
        return False
    linears = graph.consumers(squeeze.outputs[0].name)
    return bool(linears) and all(_linear(r) and r.inputs[0].name == squeeze.outputs[0].name for r in linears)


@RULES.graph_pass("Transpose", chips=SOFTMAX_ON_CPU_CHIPS, OBSERVED=TOOLKIT_OBSERVED)
def unit_axis_token_swaps_merged_into_linears(graph, chip):
    """{OBSERVED} moves the Transpose [0, 3, 2, 1] that swaps tokens unsqueezed to [N, 1, T, C] into a map [N, C, T, 1] (FunASR's FSMN memory block, a depthwise Conv over time) back through the Linear that made the tokens and merges it into the layer before (its pass reduce_tp_in_mesh_backward: no layer of its own) when that Linear's Conv is followed by a fused Relu or Sigmoid, or reads another Linear's result or an NPU LayerNorm (axis and epsilon written); where the Linear reads a model input, or a Relu, a CPU LayerNorm (axis or epsilon left out) or an Add of model inputs, the swap stays a Transpose layer, which RK3566/RK3568 run on the CPU. The swap back [N, C, T, 1] -> [N, 1, T, C] of the Conv's map (or its residual sum), squeezed to tokens that Linears read, has no layer either (fuse_transpose_reshape_transpose); squeezed to the model output it is a Transpose layer on the CPU.

    Measured with rknn-toolkit2 2.5.0 on RK3566 and RK3588 (2026-12-05, int8, opset 17; tests/forms_models.py
    fsmn_memory_pack; found on fresh8's pypi_fsmn_vad/rk3566): 100 tokens of 128 channels and 49 of 24, a cache
    Concat or the Conv's own padding, with or without the residual Add. RK3588 runs all of it on the NPU. Measured,
    not modelled: at 16 tokens of 32 (the Conv's padding, no residual) the swap of a model input's Linear is a
    Transpose layer on RK3566's NPU (FSMN_MEMORY_MEASURED).
    """
    merged = []
    for node in [n for n in graph.nodes if n.op_type == "Transpose"]:
        if _perm(node) != UNIT_AXIS_TOKEN_SWAP or not node.outputs or not _own_node(graph, node) or node.outputs[0].is_model_output:
            continue
        if _unit_axis_swap_merged(graph, node) or _unit_axis_swap_back_merged(graph, node):
            merged.append(node)
    for node in merged:
        graph.eliminate(node)


# The attribute the pass below gives a detection head's anchor-merge Reshape: how the toolkit lays
# out the levels it concatenates (the rule anchor_merge_into_concat reads it).
CONCAT_FORM_ATTRIBUTE = "rknn_concat_form"
# [H*W, A*K, 1, 1] per level: the channels stay A*K (some level is a 1x1 map).
CONCAT_BY_CELLS = "cells"
# [1, H*W*A, 1, K] per level: the innermost axis changes from A*K to K.
CONCAT_BY_ANCHORS = "anchors"
# OBSERVED (tests/forms_models.py head_concat_pack, RK3588; cpu_concat_levels_pack, RK3566): levels of
# unequal widths A*K where a level of more than one cell has a width not a multiple of the chip's
# channel block cannot be concatenated by cells on the NPU (the blocks of rules.OUTPUT_CHANNEL_ALIGN).
# RK3576, RK3562 and RV1106 place head_concat_pack as RK3588 (tests/fixtures/forms/chip_verdicts.json).
CELLS_WIDTH_ALIGN = {"rk3588": 16, "rk3566": 8, "rk3568": 8, "rk3576": 16, "rk3562": 16, "rv1106": 16}
# OBSERVED (cpu_concat_levels_pack, cpu_concat_order_pack; RK3566 and RK3588): the toolkit then lays
# the levels out by anchors instead, the Concat on the NPU, when every level of more than one cell has
# rows H*W*A a multiple of this; else the Concat runs on the CPU.
ANCHOR_ROWS_STEP = 4
# OBSERVED: on RK3588 the 1x1 level's width does not count (head_concat_pack: 10x10x4 and 1x1x6 of K = 4,
# widths 16 and 24, by cells on the NPU); on RK3566 it does (cpu_concat_levels_pack: 10x10x6, 5x5x4 and
# 1x1x5 of K = 4, widths 24, 16 and 20, laid out by anchors).
SINGLE_CELL_WIDTH_IGNORED = ("rk3588",)
CELLS_OF_UNEQUAL_WIDTHS_ATTRIBUTE = "rknn_cells_of_unequal_widths"
# Marks each level of a Concat that runs on the CPU (rules.anchor_merge_into_concat reads it).
LEVEL_OF_CPU_CONCAT_ATTRIBUTE = "rknn_level_of_cpu_concat"
# OBSERVED (same pack): the one 1x1 level of a head keeps its Reshape on the NPU whatever its width;
# with two 1x1 levels (SSDlite) both run on the CPU where the width is unaligned.
ONLY_SINGLE_CELL_LEVEL_ATTRIBUTE = "rknn_only_single_cell_level"


def _anchor_merge(graph, node):
    """[N, H, W, A, K] -> [N, H*W*A, K] after a Transpose (a detection head's level), as (H, W, A, K); else None.

    On a 1x1 map the head's Transpose moves only unit axes and is a Reshape by then
    (transpose_of_unit_axes_is_a_reshape).
    """
    if node is None or node.op_type != "Reshape" or not node.inputs or not node.outputs:
        return None
    x, out = node.inputs[0], node.outputs[0]
    before = graph.producer(x.name)
    if before is None or before.op_type not in ("Transpose", "Reshape") or x.shape is None or out.shape is None:
        return None
    if len(x.shape) != 5 or len(out.shape) != 3 or not all(isinstance(d, int) for d in (*x.shape, *out.shape)):
        return None
    n, h, w, a, k = x.shape
    return (h, w, a, k) if out.shape == (n, h * w * a, k) else None


@RULES.graph_pass(
    "Reshape", "Concat", OBSERVED=TOOLKIT_OBSERVED, CELLS_ALIGN="16 on RK3588, 8 on RK3566/RK3568", ROWS=ANCHOR_ROWS_STEP,
    chip_key=lambda chip: (CELLS_WIDTH_ALIGN.get(chip), chip in SINGLE_CELL_WIDTH_IGNORED),
)
def detection_head_concat_layout(graph, chip):
    """{OBSERVED} concatenates a detection head's levels (Reshape [N, H, W, A, K] -> [N, H*W*A, K] per level, then Concat) in one of two layouts, decided by all the levels together: as [H*W, A*K, 1, 1] blocks when some level is a 1x1 map, else as [1, H*W*A, 1, K]; the audit notes which on each level's Reshape, where the Reshape's placement depends on it.

    Measured on ssdlite320_mobilenet_v3_large's six-level head (10x10 to 1x1 maps) and on small
    heads of 10/5/3/2/1/1, 5/3/2/1, 10/5/3, 5/3/2 and 5/3 maps (their layer tables).
    Cells cannot be concatenated on the NPU when the levels' widths A*K differ and a level of more
    than one cell (on RK3566/RK3568 any level) has a width not a multiple of the channel block
    ({CELLS_ALIGN}); the toolkit then
    lays the levels out by anchors (the Concat on the NPU) when every level of more than one cell
    has rows H*W*A a multiple of {ROWS}, else runs the Concat on the CPU: the audit marks it (rule
    cells_of_unequal_widths) and its levels (rules.anchor_merge_into_concat).
    tests/forms_models.py head_concat_pack (RK3588): SSD300's levels 38/19/10/5/3/1 with 4/6/6/6/4/4
    anchors of K = 4 or 91, from 19 or with a first level of 32, 40 or 45: CPU; every level of one
    width (16 or 24), all widths multiples of 16, or the unaligned width on the 1x1 level only: NPU.
    cpu_concat_levels_pack and cpu_concat_order_pack (RK3566 and RK3588, K = 91, 5, 12, 20; square
    and rectangular levels; the 1x1 level first, in the middle, last): the Concat on the CPU with a
    level of rows 2166, 294, 30, 150 or 125; on the NPU, every other level's Reshape on the CPU (laid
    out by anchors), with rows 2888/500/216, 432/484/980/192 or 400/100 (the Concat's offsets do not
    matter: a 1x1 level of 5 rows in the middle kept it on the NPU).
    The one 1x1 level of a head keeps its Reshape on the NPU at an unaligned width (24 or 364; four
    heads; and in every head laid out by anchors so), where two 1x1 levels of width 24 run both on
    the CPU (three heads, SSDlite's form).
    """
    for concat in [n for n in graph.nodes if n.op_type == "Concat"]:
        levels = [graph.producer(t.name) for t in concat.inputs]
        shapes = [_anchor_merge(graph, r) for r in levels]
        if len(levels) < 2 or any(s is None for s in shapes) or any(graph.only_consumer(r.outputs[0].name) is not concat for r in levels):
            continue
        form = CONCAT_BY_CELLS if any(h * w == 1 for h, w, _, _ in shapes) else CONCAT_BY_ANCHORS
        unaligned = _cells_not_concatenated(shapes, chip) if form == CONCAT_BY_CELLS else None
        on_cpu = unaligned is not None and any((h * w * a) % ANCHOR_ROWS_STEP for h, w, a, _ in shapes if h * w > 1)
        if unaligned is not None and not on_cpu:
            form = CONCAT_BY_ANCHORS
        single_cells = [r for r, (h, w, _, _) in zip(levels, shapes) if h * w == 1]
        for reshape in levels:
            only = {ONLY_SINGLE_CELL_LEVEL_ATTRIBUTE: 1} if single_cells == [reshape] else {}
            beside = {LEVEL_OF_CPU_CONCAT_ATTRIBUTE: 1} if on_cpu else {}
            graph.fuse([reshape], "Reshape", leader=reshape, attributes={CONCAT_FORM_ATTRIBUTE: form, **only, **beside})
        if on_cpu:
            graph.fuse([concat], "Concat", attributes={CELLS_OF_UNEQUAL_WIDTHS_ATTRIBUTE: unaligned})


def _cells_not_concatenated(shapes, chip):
    """The first unaligned width when the levels (H, W, A, K) cannot be concatenated by cells on the
    chip's NPU (unequal widths A*K, a level unaligned to the channel block: on RK3588 one of more than
    one cell, on RK3566/RK3568 any, the 1x1 level's too); else None."""
    align = CELLS_WIDTH_ALIGN.get(chip)
    if align is None or len({a * k for _, _, a, k in shapes}) < 2:
        return None
    counted = [s for s in shapes if s[0] * s[1] > 1] if chip in SINGLE_CELL_WIDTH_IGNORED else shapes
    unaligned = [a * k for _, _, a, k in counted if (a * k) % align]
    return unaligned[0] if unaligned else None


# The attribute the pass below gives each flattened level of a Concat along the last axis:
# [C, H, W, its offset in the Concat] (rules.flattened_level_of_unaligned_channels reads it).
LEVEL_PIECE_ATTRIBUTE = "rknn_level_piece"


def _flattened_level(graph, node, concat):
    """(C, H, W) when `node` is a Reshape [N, C, H, W] -> [N, C, H*W] read only by `concat`; else None."""
    if node is None or node.op_type != "Reshape" or graph.only_consumer(node.outputs[0].name) is not concat:
        return None
    x, out = _static_shape(node.inputs[0]), _static_shape(node.outputs[0])
    if x is None or out is None or len(x) != 4 or len(out) != 3 or out != (x[0], x[1], x[2] * x[3]):
        return None
    return int(x[1]), int(x[2]), int(x[3])


@RULES.graph_pass("Reshape", chips=("rk3588",), OBSERVED=TOOLKIT_OBSERVED)
def flattened_levels_concatenated(graph, chip):
    """{OBSERVED} concatenates an anchor-free detection head's levels (Reshape [N, C, H, W] -> [N, C, H*W] per level, then Concat along the last axis, as Ultralytics' heads export it); the audit notes on each level's Reshape its channels, map and offset in the Concat, on which the Reshape's placement depends (rules.flattened_level_of_unaligned_channels).

    Measured on RK3588 (tests/forms_models.py flattened_levels).
    """
    for concat in [n for n in graph.nodes if n.op_type == "Concat"]:
        out = _static_shape(concat.outputs[0]) if concat.outputs else None
        if out is None or len(out) != 3 or int(concat.attr("axis", 0)) % 3 != 2 or len(concat.inputs) < 2:
            continue
        levels = [graph.producer(t.name) for t in concat.inputs]
        shapes = [_flattened_level(graph, r, concat) for r in levels]
        if any(s is None for s in shapes):
            continue
        offset = 0
        for reshape, (channels, h, w) in zip(levels, shapes):
            graph.fuse([reshape], "Reshape", leader=reshape, attributes={LEVEL_PIECE_ATTRIBUTE: [channels, h, w, offset]})
            offset += h * w


# ---------------------------------------------------------------------------------------------
# Pad: where the toolkit folds it into the Conv after it.
# ---------------------------------------------------------------------------------------------

# The attribute the pass below gives a constant Pad the toolkit folds into a Conv (the rule
# constant_pad_of_a_low_rank_input_folded_into_conv reads it).
PAD_INTO_CONV_ATTRIBUTE = "rknn_pad_into_conv"
# Kernels the toolkit keeps whole, with the Pad folded in (measured: [1, 16]); one of 256 it first
# splits into slices (seperate_large_kernel_conv) and the Pad keeps a layer of its own.
PAD_FOLDED_KERNEL_MAX = 16
PAD_KEPT_KERNEL_MIN = 256
RESHAPING_OPS = ("Reshape", "Unsqueeze", "Squeeze", "Flatten")


def _conv_after(graph, node, hops: int = 2):
    """The Conv `node`'s result reaches through at most `hops` reshapes, each its input's only reader; else None."""
    for _ in range(hops + 1):
        out = node.outputs[0] if node.outputs else None
        node = graph.only_consumer(out.name) if out is not None and out.name else None
        if node is None:
            return None
        if node.op_type == "Conv":
            return node if node.inputs[0].name == out.name else None
        if node.op_type not in RESHAPING_OPS:
            return None
    return None


@RULES.graph_pass("Pad", OBSERVED=TOOLKIT_OBSERVED, FOLDED=PAD_FOLDED_KERNEL_MAX, KEPT=PAD_KEPT_KERNEL_MIN)
def constant_pad_folded_into_conv(graph, chip):
    """{OBSERVED} folds a constant-mode Pad into the Conv its result goes to (through reshapes) by widening the Conv's own padding (its pass fuse_pad_into_conv), when it keeps that Conv whole: measured with a kernel of {FOLDED} elements; one of {KEPT} or more it first splits into slices and the Pad keeps its own layer. The audit notes the folding on the Pad (where its placement depends on it); in between it cannot tell.

    Measured on a Pad of a [1, 64], [1, 4, 64] and [1, 4, 8, 64] input before a [1, 16] Conv, and
    of a [1, 576] or [1, 1, 576] audio input before a Conv1d of kernel 256 (tests/forms_models.py).
    """
    for pad in [n for n in graph.nodes if n.op_type == "Pad"]:
        if pad.attr("mode", "constant") != "constant":
            continue
        conv = _conv_after(graph, pad)
        if conv is None:
            continue
        weights = conv.input(1)
        if weights is None or weights.shape is None or not all(isinstance(d, int) for d in weights.shape[2:]):
            continue
        kernel = int(np.prod(weights.shape[2:], dtype=np.int64))
        if kernel >= PAD_KEPT_KERNEL_MIN:
            continue
        attributes = {a.name: helper_value(a) for a in pad.proto.attribute}
        attributes[PAD_INTO_CONV_ATTRIBUTE] = "folded" if kernel <= PAD_FOLDED_KERNEL_MAX else "uncertain"
        graph.fuse([pad], "Pad", attributes=attributes)


# The attribute the pass below gives a Pad whose input the toolkit holds with its last axis as
# channels (the rule constant_pad_appending_to_unaligned_channels reads it).
PAD_CHANNELS_LAST_ATTRIBUTE = "rknn_pad_channels_last"
# Producers of a channels-first map (the NPU's own layout) and the Transposes that make a map
# channels-last or channels-first again; other operators pass their input's layout on.
CHANNELS_FIRST_PRODUCERS = frozenset({"Conv", "ConvTranspose", "MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool",
                                      "BatchNormalization", "InstanceNormalization", "Resize", "Upsample", "DepthToSpace", "SpaceToDepth"})
TRANSPOSE_LAYOUT = {(0, 2, 3, 1): True, (0, 3, 1, 2): False}
TOKENS_TRANSPOSE = (0, 2, 1)  # [N, C, L] -> [N, L, C]: a flattened map's positions made tokens
LAYOUT_SEARCH_NODES = 32  # a residual stream doubles the paths at each Add: 8 missed Swin V2's later blocks


def _held_channels_last(graph, tensor) -> bool | None:
    """Whether the toolkit holds `tensor` with its last axis as channels: breadth-first back through
    the operators that pass a layout on, to the nearest that decides it (a MatMul's result: True;
    a convolution or pooling, a model input: False; a Transpose of a 4-D map by its perm); None
    when none is found within LAYOUT_SEARCH_NODES nodes. Behind a Transpose [0, 2, 1] (a map
    flattened into tokens, as Twins' and DaViT's patch embeddings) a convolution's map is held
    channels-last; tokens that are a model input stay channels-first."""
    frontier, visited = [(tensor, False)], 0
    while frontier and visited < LAYOUT_SEARCH_NODES:
        t, tokens = frontier.pop(0)
        node = graph.producer(t.name) if t.name else None
        # A node an earlier pass eliminated (RK3566's token swap beside a map Reshape, which moves no
        # data there) still tells the layout: its input passes through.
        node = node if node is not None or not t.name else graph.wire(t.name)
        if node is None:
            if t.is_graph_input:
                return False
            continue
        visited += 1
        if node.op_type == "MatMul" or node.op_type in CHANNELS_FIRST_PRODUCERS:
            return node.op_type == "MatMul" or tokens
        perm = tuple(node.attr("perm") or ()) if node.op_type == "Transpose" else ()
        if perm in TRANSPOSE_LAYOUT:
            return TRANSPOSE_LAYOUT[perm]
        flips = perm == TOKENS_TRANSPOSE
        frontier += [(i, tokens != flips) for i in node.inputs if i.present and not i.is_constant and not i.foldable]
    return None


@RULES.graph_pass("Pad", OBSERVED=TOOLKIT_OBSERVED)
def pad_of_a_channels_last_map(graph, chip):
    """{OBSERVED} holds a 4-D tensor made from a MatMul's result (tokens viewed as a map [N, H, W, C]) or by a Transpose [0, 2, 3, 1] of a feature map with its last axis as channels, as it holds the tokens: a Pad of such a map pads positions, not channels. The audit notes this on the Pad (where its placement depends on the channel axis).

    Measured with rknn-toolkit2 2.5.0 on RK3588 and RK3566 (tests/forms_models.py pad_pack): a
    constant Pad of axes 1 and 2 (or 1 alone) at their end of a Conv's map after Transpose
    [0, 2, 3, 1] ([1, 8, 8, 128], [1, 4, 4, 24]): NPU; the same of tokens that were a 3-D model
    input, reshaped to the map: CPU where axis 1 is not aligned, as a channels-first map; in the
    pool, TinyViT's and Swin's window Pads of [N, H, W, C] maps from MatMuls: NPU. A Conv's map
    flattened into tokens (Reshape [1, C, H*W], Transpose [0, 2, 1]) and viewed as [1, H, W, C]
    with no MatMul between, alone or through a per-channel Mul (Twins', DaViT's window Pads): NPU
    on RK3588 for [1, 8, 8, 128] by 6 on H and W or H alone, [1, 4, 4, 24] and [1, 4, 4, 256] by
    3, [1, 2, 2, 40] by 5 (tests/forms_models.py pad_tokens_pack); the same Pads of tokens that
    are a model input [1, C, H*W] ran on the CPU where H is not aligned, as channels-first.
    """
    for pad in [n for n in graph.nodes if n.op_type == "Pad"]:
        x = pad.inputs[0] if pad.inputs else None
        if x is None or x.shape is None or len(x.shape) != 4 or not _held_channels_last(graph, x):
            continue
        attributes = {a.name: helper_value(a) for a in pad.proto.attribute}
        attributes[PAD_CHANNELS_LAST_ATTRIBUTE] = 1
        graph.fuse([pad], "Pad", attributes=attributes)


ZERO_ADD_ATTRIBUTE = "rknn_zero_add"
ZERO_ADD_INTO_CONV = "into_conv"
ZERO_ADD_KEPT = "kept"


# A bias or scale is small; a larger constant's value is not read (a skeleton model leaves it out).
SMALL_CONSTANT_MAX_ELEMENTS = 1024  # what the pool's skeletons keep (scripts/corpus/make_skeletons.py)


def _value_of(t):
    """The value of a small constant or foldable tensor (an Identity of an initializer), else None."""
    if t is None or not t.present or not (t.is_constant or t.foldable):
        return None
    if t.numel is None or t.numel > SMALL_CONSTANT_MAX_ELEMENTS:
        return None
    return t.value


def _flattened_into_a_product(graph, reader, out) -> bool:
    """`reader` flattens a map of one position (Flatten or Reshape of [N, C, 1, 1]) for one Gemm
    or MatMul with constant weights alone, which the toolkit makes a Conv (convert_gemm_by_exmatmul,
    convert_exmatmul_to_conv)."""
    if reader.op_type not in ("Flatten", "Reshape") or out.shape is None or len(out.shape) < 3 or any(d != 1 for d in out.shape[2:]):
        return False
    flat = reader.outputs[0] if reader.outputs else None
    product = graph.only_consumer(flat.name) if flat is not None and flat.name else None
    return product is not None and product.op_type in ("Gemm", "MatMul") and product.inputs[0].name == flat.name and product.inputs[1].is_constant


def _reaches_conv_alone(graph, node) -> bool:
    """`node`'s result is read by one Conv alone, directly or through one constant Pad that
    constant_pad_folded_into_conv folds into it (the Pad read by that Conv alone), or by what the
    toolkit makes a Conv: a GlobalAveragePool (convert_global_avgpool_to_conv), a one-position
    map's flatten into a product with constant weights."""
    out = node.outputs[0] if node.outputs else None
    reader = graph.only_consumer(out.name) if out is not None and out.name else None
    if reader is not None and reader.op_type == "Pad" and reader.attr("mode", "constant") == "constant":
        out = reader.outputs[0] if reader.outputs else None
        reader = graph.only_consumer(out.name) if out is not None and out.name else None
    if reader is None or not reader.inputs or reader.inputs[0].name != out.name:
        return False
    return reader.op_type in ("Conv", "GlobalAveragePool") or _flattened_into_a_product(graph, reader, out)


def _first_operand_of_a_matmul(graph, node) -> bool:
    """`node`'s result is read by one MatMul alone, as its first operand (a Linear on tokens)."""
    out = node.outputs[0] if node.outputs else None
    reader = graph.only_consumer(out.name) if out is not None and out.name else None
    return reader is not None and reader.op_type == "MatMul" and bool(reader.inputs) and reader.inputs[0].name == out.name


@RULES.graph_pass("Add", OBSERVED=TOOLKIT_OBSERVED)
def zero_add_after_a_scalar_first_mul(graph, chip):
    """{OBSERVED} drops an Add of zeros after a * x with a constant scalar first (timm's learnable affine block and StarReLU at their initial bias 0): the Add shares the Mul's layer, and the Mul is folded into the Conv that alone reads the result (directly, or through a constant Pad folded into it; a GlobalAveragePool, or the flatten of a one-position map into a Gemm, which the toolkit makes Convs, counts as one) or by a MatMul alone as its first operand (a Linear on tokens, CAFormer's StarReLU before fc2), on the NPU; read by anything else, both keep a float layer.

    Measured on Conv, Relu, scale * x + bias, Conv with bias 0 and bias 0.4472 (scale 1 or 0.8944:
    only the bias decides) on RK3588 and RK3566 (tests/forms_models.py affine_relu_*), and on
    timm's hgnetv2_b0 (the stem's affine block before a Pad read by a Conv and a MaxPool keeps a
    float layer; before a Pad read by a Conv alone, or a Conv, it is folded) and poolformerv2_s12;
    read by a GlobalAveragePool (the model's output, or before Flatten and Gemm) or by the Flatten of
    a 1x1 map into a Gemm: INT8 on the NPU; by a MaxPool: float (tests/forms_models.py
    affine_before_*, RK3588 and RK3566). StarReLU, s * relu(x)^2 + b with s = 1 first and b = 0
    (timm's CAFormer), on tokens [1, 16, 128] read by a MatMul with constant weights (with or
    without its bias Add), by a MatMul with a run-time second operand, and s * relu(x) + 0 read by
    a MatMul: on the NPU; read by a Sigmoid, with or without the square: float
    (tests/forms_models.py star_relu_pack, RK3588 and RK3566, 2026-12-05).
    """
    for add in [n for n in graph.nodes if n.op_type == "Add" and len(n.inputs) == 2]:
        for i, x in enumerate(add.inputs):
            mul = graph.producer(x.name) if x.name else None
            zero = _value_of(add.inputs[1 - i])
            if mul is None or mul.op_type != "Mul" or zero is None or np.any(np.asarray(zero) != 0):
                continue
            scale = _value_of(mul.inputs[0])
            if scale is None or np.asarray(scale).size != 1 or _known(mul.inputs[1]) or graph.only_consumer(x.name) is not add:
                continue
            kept = ZERO_ADD_INTO_CONV if _reaches_conv_alone(graph, add) or _first_operand_of_a_matmul(graph, add) else ZERO_ADD_KEPT
            attributes = {a.name: helper_value(a) for a in mul.proto.attribute}
            attributes[ZERO_ADD_ATTRIBUTE] = kept
            graph.fuse([mul, add], "Mul", leader=mul, attributes=attributes, inputs=list(mul.inputs), outputs=list(add.outputs))
            break


def helper_value(attribute):
    from onnx import helper

    return helper.get_attribute_value(attribute)


# ---------------------------------------------------------------------------------------------
# Products by zeros, folded: a model whose every output they decide is refused.
# ---------------------------------------------------------------------------------------------

# The operand positions whose constant zeros make a product's result a constant (its bias, or zeros).
ZERO_OPERANDS = {"Gemm": (0, 1), "MatMul": (0, 1), "Conv": (1,), "Mul": (0, 1)}
CONSTANT_OUTPUT_OP = "ConstantModelOutput"  # the node a refused model's output comes from (rules.all_outputs_constant)


def _product_by_zeros(node, graph) -> bool:
    positions = ZERO_OPERANDS.get(node.op_type, ())
    return any(i < len(node.inputs) and node.inputs[i].present and _zeros(node.inputs[i], graph) for i in positions)


def _zeros(tensor, graph, depth: int = 4) -> bool:
    """A constant of zeros, or a foldable one passed through Identity nodes: torch.onnx writes a
    parameter equal to another (the zero weights of several blocks, a GRN's weight and bias) as an
    Identity of one initializer, whose view carries the value only when it is small."""
    if tensor.is_constant or (tensor.foldable and tensor.all_close_to_zero):
        return tensor.all_close_to_zero
    producer = graph.producer(tensor.name) if tensor.foldable and depth else None
    return producer is not None and producer.op_type == "Identity" and bool(producer.inputs) and _zeros(producer.inputs[0], graph, depth - 1)


def _zeroed_nodes(graph) -> dict:
    """The nodes whose results are computed from constants alone once products by zeros are
    folded: each product by zeros, and each node whose computed inputs all come from such nodes,
    in graph order (name -> node). Every product's constant operand is checked: its first stored
    values settle nearly every weight (TensorView.all_close_to_zero)."""
    nodes = graph.nodes
    # Nothing before the first product by zeros is zeroed: the walk starts there (most models have
    # none, and then only the products' operands are looked at).
    first = next((k for k, node in enumerate(nodes) if node.op_type in ZERO_OPERANDS and _product_by_zeros(node, graph)), None)
    if first is None:
        return {}
    zeroed, tensors = {}, set()
    for node in nodes[first:]:
        computed = [t.name for t in node.inputs if t.present and not (t.is_constant or t.foldable)]
        if _product_by_zeros(node, graph) or (computed and all(t in tensors for t in computed)):
            zeroed[node.name] = node
            tensors.update(o.name for o in node.outputs if o.name)
    return zeroed


@RULES.graph_pass(*ZERO_OPERANDS, OBSERVED=TOOLKIT_OBSERVED)
def product_by_zeros_folded(graph, chip):
    """{OBSERVED} computes at conversion time a product by a constant of zeros (a Gemm, MatMul or Conv weight, or a Mul operand, that a library initialises to zero, as timm does for the classifier of its MLP-Mixer family and the weight of ConvNeXt-V2's global response norm; or whose values all lie within 1e-8 of zero, as the 2**-27 by which I-BERT's integer-only LayerNorm scales its integers) and everything computed from it and constants alone (its fold_constant pass), and removes what only those products read (a GRN's ReduceL2 and Div, a residual branch whose last Conv timm's zero-initialised BatchNorm made a product by zeros, its Softmax on the CPU of RK3566 included: they run nowhere); a model output so computed is dropped from the model, and when every output is, the toolkit refuses the model.

    Measured on Conv, Relu, GlobalAveragePool, Flatten, then a Gemm with zero weights (bias zero
    or not), a MatMul or a 1x1 Conv with zero weights, or a Mul by zeros, as the only output:
    "ValueError: All outputs ['y'] of model are constants, The model is invalid!" on RK3588 and
    RK3566; with a second output from before the Gemm the model builds without the Gemm's output
    ("These outputs ['y'] of model are constants, remove it from RKNN model!"); weights of
    standard deviation 1e-6 are kept (tests/forms_models.py zero_weight_head). timm's
    GlobalResponseNorm at its initial weight and bias (zeros; the weight an Identity of the bias)
    after a Conv, 8 or 160 channels: its ReduceL2 and Div have no layer, on RK3588 and RK3566, as
    with a zero weight alone; with a weight not zero, or with Nx also read elsewhere, both run on
    the CPU (tests/forms_models.py grn_pack; ConvNeXt-V2-atto's 12 GRNs in the pool). A residual
    branch ending in a product by zeros (tests/forms_models.py zero_residual_branch: a branch Conv,
    Relu, a channel softmax and Mul or a self-attention, then a 1x1 Conv by zeros added to the
    stem's output; timm's zero_init_last BatchNorm folded into the Conv), RK3566 and RK3588:
    fold_constant removes the Conv (weights +0.0 or -0.0, given directly or through an Identity,
    96x96x3x3 too, bias zero or not; or a Mul by a zero scale), remove_invalid_add the Add of
    zeros, and the layer table has no layer of the branch (nor of a query scaled and transposed
    into the scores' MatMul); a softmax that is also a model output stays (on the CPU of RK3566)
    and only what follows it goes; weights of standard deviation 1e-6 keep it all.
    Within 1e-8 of zero counts as zero (numpy's allclose(w, 0); TensorView.all_close_to_zero):
    Relu then a Mul by a per-channel constant of 1e-9, 5e-9, -5e-9, 7.45e-9 (2**-27), 9.5e-9 or
    1e-8, or a MatMul by [64, 16] such weights, as the only output: refused as above; 1.01e-8,
    1.1e-8, 2.9e-8, 1e-7 or 1e-6 build, and so does 1e-9 with one channel's 2e-8; with the Relu
    also an output, the product's output is dropped (tests/forms_models.py near_zero_scale).
    HF I-BERT in quant_mode (fresh8 hf_ibert): its embeddings' IntLayerNorm ends in a Mul by
    2**-27 per channel; fold_constant removes it and all that follows (the toolkit's own list of
    removed nodes), and the toolkit refuses the model on RK3588 and RK3566. Not explained: after a
    Conv, Relu, GlobalAveragePool and Flatten, a Mul by 2e-8 per channel is folded too (1e-6 in
    one channel builds); the audit keeps it.
    """
    folded = _zeroed_nodes(graph)
    if not folded:
        return
    outputs = [o for n in graph.nodes for o in n.outputs if o.is_model_output]
    output_nodes = {n.name for n in folded.values() if any(o.is_model_output for o in n.outputs)}
    refused = bool(outputs) and all(graph.producer(o.name) is not None and graph.producer(o.name).name in output_nodes for o in outputs)
    for name, node in folded.items():
        if refused and name in output_nodes:
            graph.fuse([node], CONSTANT_OUTPUT_OP, attributes={})
        else:
            graph.fold(node)
    # What only the folded products read (a Div whose quotient only a product by zeros read, and back up
    # the graph; a Transpose merged into a MatMul passes its input through): the toolkit removes it too.
    graph.fold_what_nothing_reads([t for node in folded.values() for t in node.inputs])


# MobileViT-v2's unfolding of a map into patches and folding back (torch.onnx's spelling): the
# Transpose between a Reshape [N, C, H, W] -> [N, C, H/p, p, W/p, p] and a Reshape back to 4-D.
PATCH_UNFOLD = [0, 1, 3, 5, 2, 4]
PATCH_FOLD = [0, 1, 4, 2, 5, 3]
# The attribute the pass below gives the Reshape before a fold (rules.patch_fold_reshape_layer).
PATCH_FOLD_ATTRIBUTE = "rknn_patch_fold_channels"


def _patch_reshapes(graph, node):
    """(the Reshape before, the Reshape after) when `node` moves patches of a map between two
    Reshapes that keep the batch and channel axes ([N, C, a, b] -> 6-D -> [N, C, c, d]); else None."""
    before = graph.producer(node.inputs[0].name) if node.inputs else None
    after = graph.only_consumer(node.outputs[0].name) if node.outputs else None
    if before is None or after is None or before.op_type != "Reshape" or after.op_type != "Reshape" or graph.only_consumer(before.outputs[0].name) is not node:
        return None
    x, six, out = _static_shape(before.inputs[0]), _static_shape(before.outputs[0]), _static_shape(after.outputs[0])
    if not x or not six or not out or len(x) != 4 or len(six) != 6 or len(out) != 4 or not (x[:2] == six[:2] == out[:2]):
        return None
    return before, after


@RULES.graph_pass("Transpose", OBSERVED=TOOLKIT_OBSERVED)
def patches_unfolded_and_folded(graph, chip):
    """{OBSERVED} moves a map's patches between two Reshapes that keep the batch and channel axes (MobileViT-v2's unfolding, Transpose [0, 1, 3, 5, 2, 4], and folding back, [0, 1, 4, 2, 5, 3]) on the NPU, even on RK3566/RK3568 where a Transpose layer runs on the CPU; the Reshape before the fold is a layer of its own (rules.patch_fold_reshape_layer).

    Measured on tests/forms_models.py patch_unfold (2x2 patches; 64 channels on an 8x8 map, 24
    and 96 on 4x4) and MobileViT-v2-0.5's blocks, RK3566 and RK3588.
    """
    for node in [n for n in graph.nodes if n.op_type == "Transpose"]:
        if not node.outputs or graph.producer(node.outputs[0].name) is not node or _perm(node) not in (PATCH_UNFOLD, PATCH_FOLD):
            continue
        pair = _patch_reshapes(graph, node)
        if pair is None:
            continue
        graph.eliminate(node)
        if _perm(node) == PATCH_FOLD:
            graph.fuse([pair[0]], "Reshape", attributes={PATCH_FOLD_ATTRIBUTE: int(_static_shape(pair[0].inputs[0])[1])})


# MobileViT's unfolding of a map into patches through the batch axis (timm's and transformers'
# spelling): Reshape [N, C, H, W] -> [N*C*H/p, p, W/p, p], Transpose [0, 2, 1, 3], Reshape
# [N, C, patches, p*p], Transpose [0, 3, 2, 1], Reshape [N*p*p, patches, C]; the fold mirrors it.
# The attributes the pass below gives each node of the chain (rules.patches_through_the_batch):
# its role, and (W/p, W, patches).
BATCH_PATCHES_ATTRIBUTE = "rknn_batch_patches"
BATCH_PATCHES_DIMS = "rknn_batch_patches_dims"
# The layout ops after the unfolding's first Reshape, and before the fold's last one, with their
# roles (the fold's first Reshape, [p*p, patches, C] -> [1, p*p, patches, C], has none).
UNFOLD_ROLES = (("Transpose", "between"), ("Reshape", "between"), ("Transpose", "pixels"), ("Reshape", "after_pixels"))
FOLD_ROLES = (("Reshape", None), ("Transpose", "between"), ("Reshape", "after_pixels"), ("Transpose", "between"))


def _rows_in_batch(map_shape, rows) -> bool:
    """Whether `rows` is the map [N, C, H, W] with its channels and rows of patches moved to the
    batch axis: [N*C*H/p, p, W/p, p]."""
    if map_shape is None or rows is None or len(map_shape) != 4 or len(rows) != 4:
        return False
    n, c, h, w = map_shape
    return rows[0] * rows[1] == n * c * h and rows[2] * rows[3] == w and rows[0] > n and rows[0] % (n * c) == 0


def _layout_chain(graph, node, roles, forward: bool) -> list | None:
    """The layout nodes after (forward) or before `node`, one reader each, with the op types of
    `roles` in order (nearest first going forward, farthest first going back); else None. A
    Transpose of unit axes may already read as a Reshape (transpose_of_unit_axes_is_a_reshape)."""
    chain, current = [], node
    for op_type, _ in roles if forward else reversed(roles):
        if forward:
            nxt = graph.only_consumer(current.outputs[0].name) if current.outputs else None
        else:
            nxt = graph.producer(current.inputs[0].name) if current.inputs else None
            nxt = nxt if nxt is not None and graph.only_consumer(nxt.outputs[0].name) is current else None
        if nxt is None or nxt.op_type not in (op_type, "Reshape"):
            return None
        chain.append(nxt)
        current = nxt
    return chain if forward else chain[::-1]


def _batch_patch_chains(graph):
    """(the map's Reshape, its rows [N*C*H/p, p, W/p, p], the map [N, C, H, W], the chain's nodes
    with their roles) for each unfolding and fold."""
    found = []
    for node in [n for n in graph.nodes if n.op_type == "Reshape"]:
        x, out = _static_shape(node.inputs[0]) if node.inputs else None, _static_shape(node.outputs[0]) if node.outputs else None
        unfolds, folds = _rows_in_batch(x, out), _rows_in_batch(out, x)
        roles = UNFOLD_ROLES if unfolds else FOLD_ROLES if folds else None
        chain = _layout_chain(graph, node, roles, forward=unfolds) if roles else None
        if chain is not None:
            found.append((node, out if unfolds else x, x if unfolds else out, list(zip(chain, (r for _, r in roles)))))
    return found


@RULES.graph_pass("Reshape", "Transpose", OBSERVED=TOOLKIT_OBSERVED)
def patches_through_the_batch(graph, chip):
    """{OBSERVED} reads MobileViT's unfolding of a map into patches through the batch axis (Reshape [N, C, H, W] -> [N*C*H/p, p, W/p, p], Transpose [0, 2, 1, 3], Reshape [N, C, patches, p*p], Transpose [0, 3, 2, 1], Reshape [N*p*p, patches, C]) and the fold back as one chain of layout layers; where the map is one patch wide (W = p) the chain moves no data and its Transposes have no layer. Each other node is marked with its place in the chain (rules.patches_through_the_batch_on_cpu places it).

    Measured on tests/forms_models.py patch_unfold_v1 (C = 24 to 96, maps of 2x2 to 32x32, 2x2
    and 4x4 patches, 2 or 4 heads; RK3566 and RK3588) and MobileViT-XXS's three blocks.
    """
    for rows, rows_shape, map_shape, chain in _batch_patch_chains(graph):
        grid = _static_shape(chain[1][0].outputs[0])  # [N, C, patches, p*p]
        dims = [int(rows_shape[2]), int(map_shape[3]), int(grid[2]) if grid and len(grid) == 4 else 0]
        for node, role in [(rows, "map"), *chain]:
            if role is None:
                continue
            if dims[0] == 1 and node.op_type == "Transpose":
                graph.eliminate(node)
                continue
            attributes = {BATCH_PATCHES_ATTRIBUTE: role, BATCH_PATCHES_DIMS: dims}
            if node.op_type == "Transpose":
                attributes["perm"] = _perm(node)
            graph.fuse([node], node.op_type, attributes=attributes)


# The attribute the pass below gives the Reshape of LeViT's tokens into a grid that is subsampled
# to a single token (rules.grid_reshape_before_a_one_token_subsample).
ONE_TOKEN_GRID_ATTRIBUTE = "rknn_one_token_grid"


def _ints(t) -> list[int] | None:
    return [int(v) for v in t.value.reshape(-1)] if t is not None and t.present and t.value is not None else None


def _subsampled_grid(graph, rows):
    """(the Reshape to the grid, the columns' Slice, the Reshape back, tokens kept) when `rows` is
    the first of LeViT's subsampling Slices: tokens [1, T, C] Reshaped to a grid [1, H, W, C],
    Slices with a step > 1 along axes 1 and 2 (one each, one reader each), Reshaped back to
    [1, T', C]; else None."""
    grid = graph.producer(rows.inputs[0].name) if rows.inputs else None
    cols = graph.only_consumer(rows.outputs[0].name) if rows.outputs else None
    back = graph.only_consumer(cols.outputs[0].name) if cols is not None and cols.op_type == "Slice" else None
    if grid is None or back is None or grid.op_type != "Reshape" or back.op_type != "Reshape":
        return None
    tokens, shape, kept = _static_shape(grid.inputs[0]), _static_shape(grid.outputs[0]), _static_shape(back.outputs[0])
    if not tokens or not shape or not kept or len(tokens) != 3 or len(shape) != 4 or len(kept) != 3:
        return None
    axes = [(_ints(s.inputs[3]) if len(s.inputs) > 3 else None) for s in (rows, cols)]
    steps = [(_ints(s.inputs[4]) if len(s.inputs) > 4 else None) for s in (rows, cols)]
    if sorted(a[0] % 4 for a in axes if a and len(a) == 1) != [1, 2] or not all(s and len(s) == 1 and s[0] > 1 for s in steps):
        return None
    return grid, cols, back, int(kept[1])


@RULES.graph_pass("Slice", OBSERVED=TOOLKIT_OBSERVED)
def subsampled_token_grid(graph, chip):
    """{OBSERVED} takes LeViT's subsampled queries (tokens Reshaped to a grid, x[:, ::s, ::s] as two Slices with a step, Reshaped back to tokens) as one strided slice on the NPU, whatever the step, while more than one token is kept; where a single token is kept it runs both Slices on the CPU, and the Reshape back to tokens with them (its pass fuse_two_reshape names it so).

    Measured on tests/forms_models.py subsample_pack on RK3566 and RK3588: grids of 3 to 8 with
    steps 2, 3, 4 keeping 4 to 16 tokens (NPU), and 2x2 step 2, 3x3 step 3, 4x4 step 4, 8x8 step
    8 (one token: CPU); LeViT-128S's two subsamplings (4x4 and 2x2, step 2) in the pool.
    """
    for rows in [n for n in graph.nodes if n.op_type == "Slice"]:
        if graph.producer(rows.outputs[0].name) is not rows:
            continue
        found = _subsampled_grid(graph, rows)
        if found is None:
            continue
        grid, cols, back, kept = found
        if kept > 1:
            graph.fuse([rows, cols], "Slice", leader=rows, attributes={}, inputs=[rows.inputs[0]])
        else:
            graph.fuse([cols, back], "Slice", leader=cols)
            graph.fuse([grid], "Reshape", attributes={ONE_TOKEN_GRID_ATTRIBUTE: int(_static_shape(grid.outputs[0])[1])})


# The attribute the pass below gives each Slice of an interleaved pair rejoined by a Concat
# (rules.slice_step leaves those on the NPU).
INTERLEAVE_ATTRIBUTE = "rknn_interleaved_pair_rejoined"
INTERLEAVE_RANK = 4  # measured: the pair of a 4-D tensor on the NPU, of a 3-D one on the CPU
INTERLEAVE_LINKS = frozenset({"Neg", "Mul", "Unsqueeze"})  # what may lie between a Slice and the Concat


def _half_by_step_two(node) -> tuple[str, int, int] | None:
    """(the tensor sliced, the axis, the start) when `node` takes every second element of one axis
    of a 4-D tensor from 0 or from 1 to its end (x[..., ::2] or x[..., 1::2]); else None."""
    x = node.inputs[0] if node.inputs else None
    shape = _static_shape(x) if x is not None else None
    if node.op_type != "Slice" or not shape or len(shape) != INTERLEAVE_RANK or len(node.inputs) < 5:
        return None
    starts, ends, axes, steps = (_ints(node.inputs[i]) for i in (1, 2, 3, 4))
    if not (starts and ends and axes and steps) or not len(starts) == len(ends) == len(axes) == len(steps) == 1:
        return None
    axis = axes[0] % len(shape)
    if steps[0] != 2 or starts[0] not in (0, 1) or ends[0] < shape[axis]:
        return None
    return x.name, axis, starts[0]


def _rejoining_concat(graph, node):
    """The Concat that reads `node`'s result, directly or through up to two of a Neg, a Mul by a
    constant scalar or an Unsqueeze (each read by the next alone); else None."""
    for _ in range(3):
        nxt = graph.only_consumer(node.outputs[0].name) if node.outputs else None
        if nxt is None or nxt.op_type == "Concat":
            return nxt
        if nxt.op_type not in INTERLEAVE_LINKS or (nxt.op_type == "Mul" and _scalar(_other_input(nxt, node.outputs[0].name)) is None):
            return None
        node = nxt
    return None


@RULES.graph_pass("Slice", OBSERVED=TOOLKIT_OBSERVED, RANK=INTERLEAVE_RANK)
def interleaved_pair_rejoined(graph, chip):
    """{OBSERVED} runs on the NPU the two halves of a {RANK}-D tensor taken by a step of 2 along one axis (x[..., ::2] and x[..., 1::2]) when one Concat rejoins them, each directly or through a Neg, a Mul by a constant or an Unsqueeze (the rotate_half of EVA-02's rotary position embedding: the odd half negated, both stacked on a new last axis and reshaped back), where a Slice with a step of 2 otherwise runs on the CPU.

    Measured on tests/forms_models.py rope_pack on RK3588 and RK3566: [1, 3, 16, 64], [1, 4, 8, 16]
    and [1, 2, 16, 32] stacked, either half first, negated by Neg or by a Mul by -1, or not;
    concatenated along the sliced axis (the last, the third or the channels): NPU. The same pair
    through a Relu, added instead of concatenated, or stacked from a 3-D [1, 16, 64]: CPU.
    Seen on EVA-02's 24 rotary embeddings (pool).
    """
    halves: dict[tuple[str, int], dict[int, object]] = {}
    for node in [n for n in graph.nodes if n.op_type == "Slice"]:
        found = _half_by_step_two(node)
        if found is not None:
            halves.setdefault(found[:2], {})[found[2]] = node
    for pair in halves.values():
        if len(pair) != 2:
            continue
        concats = [_rejoining_concat(graph, pair[start]) for start in (0, 1)]
        if concats[0] is None or concats[0] is not concats[1] or len(concats[0].inputs) != 2:
            continue
        for half in pair.values():
            attributes = {a.name: helper_value(a) for a in half.proto.attribute}
            graph.fuse([half], "Slice", attributes={**attributes, INTERLEAVE_ATTRIBUTE: 1})


# The quarters of a space-to-depth in the order rknn-toolkit2 2.5.0 matches it: (start along the
# outer axis, start along the inner one), YOLOv5's Focus and torchvision's Swin PatchMerging.
SPACE_TO_DEPTH_ORDER = ((0, 0), (1, 0), (0, 1), (1, 1))
# OBSERVED (tests/forms_models.py focus_pack, RK3588 and RK3566): written with eight Slices (each
# quarter its own row Slice, as ddddocr's detector's export), the space-to-depth stays on the NPU
# only when the channels are a multiple of this; with the two halves shared, at every count measured.
SPACE_TO_DEPTH_OWN_HALVES_ALIGN = 8


def _space_to_depth_slices(graph, concat) -> list | None:
    """The six Slices of a space-to-depth `concat` rejoins: x[.., 0::2, :] and x[.., 1::2, :] along
    an axis, each sliced again by 2 along the next one, the four quarters read by `concat` alone in
    SPACE_TO_DEPTH_ORDER on an axis neither sliced nor the batch, the two axes of one size; else None."""
    if len(concat.inputs) != len(SPACE_TO_DEPTH_ORDER):
        return None
    quarters = [graph.producer(t.name) for t in concat.inputs]
    if any(q is None or graph.only_consumer(q.outputs[0].name) is not concat for q in quarters):
        return None
    inner = [_half_by_step_two(q) for q in quarters]
    if None in inner:
        return None
    outer_nodes = [graph.producer(q.inputs[0].name) for q in quarters]
    outer = [_half_by_step_two(h) if h is not None else None for h in outer_nodes]
    if None in outer or len({o[:2] for o in outer}) != 1 or len({i[1] for i in inner}) != 1:
        return None
    axis, shape = outer[0][1], _static_shape(outer_nodes[0].inputs[0])
    if not shape or inner[0][1] != axis + 1 or shape[axis] != shape[axis + 1] or shape[axis] % 2:
        return None
    if int(concat.attr("axis", 0)) % len(shape) in (0, axis, axis + 1) or [(o[2], i[2]) for o, i in zip(outer, inner)] != list(SPACE_TO_DEPTH_ORDER):
        return None
    halves = list({h.name: h for h in outer_nodes}.values())
    if any(c not in quarters for h in halves for c in graph.consumers(h.outputs[0].name)):
        return None
    channels = shape[int(concat.attr("axis", 0)) % len(shape)]
    if len(halves) == len(quarters) and channels % SPACE_TO_DEPTH_OWN_HALVES_ALIGN:
        return None  # each quarter sliced from a half of its own: on the NPU only with aligned channels
    return halves + quarters


@RULES.graph_pass("Slice", OBSERVED=TOOLKIT_OBSERVED)
def space_to_depth_by_slices(graph, chip):
    """{OBSERVED} runs on the NPU the six step-2 Slices of a space-to-depth written with them (YOLOv5's Focus on [N, C, H, W], torchvision's Swin PatchMerging on [N, H, W, C]): x[.., 0::2, :] and x[.., 1::2, :] along one axis, each sliced by 2 along the next, the four quarters Concatenated by one node (on the channels), in the order (0, 0), (1, 0), (0, 1), (1, 1), on a square map; where a Slice with a step of 2 otherwise runs on the CPU.

    Measured on tests/forms_models.py patch_merge_pack on RK3588 and RK3566 alike: [1, S, S, C]
    with S, C = 16, 96; 8, 192; 4, 384; 2, 768; 14, 24; 12, 64; 8, 32 and Focus [1, 8, 16, 16]: NPU.
    CPU (all six): a non-square map ([1, 8, 16, C], [1, 16, 8, 32], Focus [1, 8, 16, 8]), the
    quarters in another order ((0, 0), (0, 1), (1, 0), (1, 1)), the inner axis sliced first, three
    quarters only, two (rows only), a Relu between a quarter and the Concat, the quarters added.
    Seen on torchvision's Swin-T and Swin-V2-T patch merging (pool, RK3566).
    Written with eight Slices, each quarter sliced from a row half of its own (ddddocr's detector,
    fresh3), tests/forms_models.py focus_pack on both chips: NPU with 8, 16, 24 or 32 channels; all
    eight Slices on the CPU with 1, 3, 4, 6 or 12 (sides 16, 64, 416; a model input or computed);
    with the halves shared, 3 or 8 channels: NPU.
    """
    for concat in [n for n in graph.nodes if n.op_type == "Concat"]:
        found = _space_to_depth_slices(graph, concat)
        for node in found or ():
            attributes = {a.name: helper_value(a) for a in node.proto.attribute}
            graph.fuse([node], "Slice", attributes={**attributes, INTERLEAVE_ATTRIBUTE: 1})


def _tokens_reshaped_to_nhwc(graph, node) -> bool:
    """Whether `node` reads, through 1 to MAX_POSITIONWISE_CHAIN position-wise operators (first
    data inputs), a Reshape of tokens into a channels-last map (_tokens_to_nhwc) whose tokens were
    not regrouped on the way (_keeps_batch; nhwc_swap_beside_a_token_reshape takes the Transpose
    right after such a Reshape)."""
    for hops in range(MAX_POSITIONWISE_CHAIN + 1):
        data = [t for t in node.inputs if not _known(t)] if node.inputs else []
        before = graph.producer(data[0].name) if data else None
        if before is None:
            return False
        if before.op_type == "Reshape":
            source = graph.producer(before.inputs[0].name) if before.inputs else None
            return hops > 0 and _tokens_to_nhwc(before) and (source is None or _keeps_batch(source, _static_shape(before.outputs[0])[0], False))
        if not _positionwise(before):
            return False
        node = before
    return False


@RULES.graph_pass("Transpose", OBSERVED=TOOLKIT_OBSERVED, MAX_CHAIN=MAX_POSITIONWISE_CHAIN)
def channels_last_tokens_back_to_a_map(graph, chip):
    """{OBSERVED} holds tokens [N, T, C] with C as channels, so tokens Reshaped into a channels-last map [N, H, W, C] and, after at most {MAX_CHAIN} position-wise operators (a layer norm, Linears, GELU, a layer scale), Transposed [0, 3, 1, 2] back to [N, C, H, W] (EdgeNeXt's SDTA blocks) need no data moved: that Transpose has no layer of its own, even on RK3566/RK3568 where a Transpose layer runs on the CPU.

    Measured on tests/forms_models.py tokens_to_nhwc_pack (C = 24 to 176 on 2x2 to 10x10 maps, a
    Linear between, or none: nhwc_swap_beside_a_token_reshape) on RK3566 and RK3588. Where the
    tokens were regrouped first (YOLO12's area attention merging its areas back) the Transpose
    runs on the CPU on RK3566 (pool, tuning part): left to the chip's rules.
    """
    for node in [n for n in graph.nodes if n.op_type == "Transpose"]:
        if _perm(node) == [0, 3, 1, 2] and _tokens_reshaped_to_nhwc(graph, node):
            graph.eliminate(node)


def _crop_of_a_map(node) -> bool:
    """A Slice of a 4-D map along its height or width with a step of 1 (a window padding cropped)."""
    if node.op_type != "Slice" or len(node.inputs) < 4 or len(_static_shape(node.inputs[0]) or ()) != 4:
        return False
    axes, steps = _ints(node.inputs[3]), _ints(node.inputs[4]) if len(node.inputs) > 4 else [1]
    return bool(axes) and all(a % 4 in (1, 2) for a in axes) and all(s == 1 for s in steps or [1])


def _channels_last_source(graph, tensor) -> str | None:
    """What wrote the channels-last map `tensor`, through at most two crops: "tokens" (a Reshape of
    tokens, _tokens_to_nhwc), "windows" (a Reshape of 6-D windows back to the map: a window
    reverse), "map" (a map's Transpose [0, 2, 3, 1]); else None."""
    writer = graph.producer(tensor.name)
    for _ in range(2):
        if writer is None or not _crop_of_a_map(writer):
            break
        writer = graph.producer(writer.inputs[0].name)
    if writer is None:
        return None
    if writer.op_type == "Transpose" and _perm(writer) == [0, 2, 3, 1]:
        return "map"
    if writer.op_type == "Reshape" and _tokens_to_nhwc(writer):
        return "tokens"
    x, out = _static_shape(writer.inputs[0]) if writer.inputs else None, _static_shape(writer.outputs[0])
    return "windows" if writer.op_type == "Reshape" and x and out and len(x) == 6 and len(out) == 4 else None


@RULES.graph_pass("Transpose", chips=tuple(TRANSPOSE_LAYER_ALIGN), OBSERVED=TOOLKIT_OBSERVED)
def channels_last_residual_back_to_a_map(graph, chip):
    """{OBSERVED} holds a channels-last map added residually to another (TinyViT's window block: the block's input, a Conv's map Transposed [0, 2, 3, 1] or tokens Reshaped to [N, H, W, C], plus the window attention's map put back from its windows and cropped) without moving data: the Transpose [0, 3, 1, 2] of the sum into the next convolution, and the Transpose [0, 2, 3, 1] that made the block's input when only that sum and the window partition (a Pad or a Reshape) read it, have no layer of their own, even on RK3566/RK3568 where a Transpose layer runs on the CPU.

    Measured on tests/forms_models.py tinyvit_pack on RK3566 (2026-12-04): two token streams of
    16 tokens of 160 Reshaped to a 4x4 map and added; a Conv's 4x4 map of 160 or 8x8 of 128
    padded to one window of 14, a Linear on it, put back and cropped, and 7x7 of 64 unpadded: both
    Transposes on the NPU. Seen on TinyViT-5M's stages (pool, RK3566: one window, and four windows
    of 7 on its second stage). Not probed: other readers of the sum, several windows, other chips
    (their NPU runs these Transposes anyway).
    """
    for node in [n for n in graph.nodes if n.op_type == "Transpose" and _perm(n) == [0, 3, 1, 2]]:
        add = graph.producer(node.inputs[0].name) if node.inputs else None
        if add is None or add.op_type != "Add" or len(add.inputs) != 2 or graph.only_consumer(add.outputs[0].name) is not node:
            continue
        sources = [_channels_last_source(graph, t) for t in add.inputs]
        if None in sources or not set(sources) <= {"map", "tokens", "windows"} or sources.count("windows") > 1:
            continue
        for t in add.inputs:
            swap = graph.producer(t.name)
            readers = graph.consumers(t.name) if swap is not None and swap.op_type == "Transpose" else []
            if readers and all(r is add or r.op_type in ("Pad", "Reshape") for r in readers):
                graph.eliminate(swap)
        graph.eliminate(node)


def _biased_linear(graph, node) -> bool:
    """A Linear's bias Add: a constant vector along the last axis Added to a MatMul by a constant matrix."""
    if node.op_type != "Add" or len(node.inputs) != 2 or not _positionwise(node):
        return False
    data = next(t for t in node.inputs if not _known(t))
    matmul = graph.producer(data.name)
    return matmul is not None and matmul.op_type == "MatMul" and _positionwise(matmul)


def _linear_stream(graph, name: str, memo: dict) -> bool:
    """True when tensor `name` is a biased Linear's result, a last-axis layer norm's, or an Add of
    two such (a residual stream of Linears, at any depth)."""
    if name not in memo:
        memo[name] = False  # a cycle guard; graphs are acyclic, so this is never read back wrongly
        node = graph.producer(name)
        if node is None:
            pass
        elif node.op_type == "LayerNormalization":
            memo[name] = _positionwise(node)
        elif _biased_linear(graph, node):
            memo[name] = True
        elif node.op_type == "Add" and len(node.inputs) == 2 and not any(_known(t) for t in node.inputs):
            memo[name] = all(_linear_stream(graph, t.name, memo) for t in node.inputs)
    return memo[name]


@RULES.graph_pass("Transpose", OBSERVED=TOOLKIT_OBSERVED, chip_key=CHANNELS_LAST_LEVEL_CHIPS.__contains__)
def channels_last_linear_stream_into_a_conv(graph, chip):
    """{OBSERVED} holds a Linear's result on a channels-last map [N, H, W, C] channels-first already, so the Transpose [0, 3, 1, 2] that brings a stream of Linears (a biased MatMul, a residual Add of such and a layer norm, at any depth) into a Conv needs no data moved: it has no layer of its own on RK3566/RK3568, where a Transpose layer runs on the CPU (timm's MambaOut's stage downsamples).

    Found on a held-out pool pair (timm_mambaout_femto on RK3566), and measured on
    tests/forms_models.py channels_last_downsample_pack on RK3566: a biased MatMul, two added, one
    added to a layer norm, two MambaOut blocks in a row: no CPU layer, with 12 to 48 channels on
    5x5 to 16x16 maps, a 3x3 stride-2 or 1x1 stride-1 Conv, read by a Transpose back, a layer
    norm or the model's output. The model's input, a Relu, a MatMul without its bias, or a biased
    MatMul Added to a Relu, into a 3x3 stride-2 Conv: a Transpose layer on the CPU (left to the
    chip's rules; two 1x1 stride-1 forms of these ran on the NPU, not explained, see the pack).
    Only Convs read the Transpose in the probes, so the pass asks for them.
    """
    memo: dict = {}
    for node in [n for n in graph.nodes if n.op_type == "Transpose"]:
        readers = graph.consumers(node.outputs[0].name) if node.outputs else []
        if _perm(node) != [0, 3, 1, 2] or not readers or any(r.op_type != "Conv" for r in readers):
            continue
        if _linear_stream(graph, node.inputs[0].name, memo):
            graph.eliminate(node)


# The attribute the pass below gives a pose head's per-keypoint view and the view back:
# [cells, 0 for the view or 1 for the view back] (rules.keypoints_viewed_per_keypoint).
KEYPOINT_VIEW_ATTRIBUTE = "rknn_keypoint_view"


def _slices_the_values(graph, reshape) -> bool:
    """True when every reader of `reshape`'s output is a Slice along axis 2 (of 4) with step 1."""
    readers = graph.consumers(reshape.outputs[0].name)
    for s in readers:
        axes = _ints(s.inputs[3]) if s.op_type == "Slice" and len(s.inputs) > 3 else None
        steps = _ints(s.inputs[4]) if len(s.inputs) > 4 and s.inputs[4].name else [1]
        if axes is None or [a % 4 for a in axes] != [2] or steps != [1]:
            return False
    return bool(readers)


def _keypoint_view(graph, node) -> list[int] | None:
    """[cells, back] when `node` is a Reshape [N, k*d, W] -> [N, k, d, W] (k, d > 1) read by Slices
    of the d values (back = 0), or [N, k, d, W] -> [N, k*d, W] of a Concat along axis 2 (back = 1)."""
    x, out = _static_shape(node.inputs[0]) if node.inputs else None, _static_shape(node.outputs[0]) if node.outputs else None
    if not x or not out or {len(x), len(out)} != {3, 4}:
        return None
    back = len(x) == 4
    three, four = (out, x) if back else (x, out)
    if four[0] != three[0] or four[3] != three[2] or four[1] <= 1 or four[2] <= 1 or four[1] * four[2] != three[1]:
        return None
    if back:
        concat = graph.producer(node.inputs[0].name)
        if concat is None or concat.op_type != "Concat" or int(concat.attr("axis", 0)) % 4 != 2:
            return None
    elif not _slices_the_values(graph, node):
        return None
    return [int(three[2]), int(back)]


@RULES.graph_pass("Reshape", OBSERVED=TOOLKIT_OBSERVED)
def keypoint_views(graph, chip):
    """{OBSERVED} lays out a pose head's view of its keypoints per keypoint (Ultralytics' Pose.kpts_decode: Reshape [N, k*d, W] -> [N, k, d, W], Slices of the d values along axis 2, their Concat back along axis 2, Reshape [N, k*d, W]) with Reshape layers of their own, placed by the cells W (rules.keypoints_viewed_per_keypoint); the same split before a Transpose and a Softmax (a distribution-focal-loss decode) is no such view.

    Measured on tests/forms_models.py keypoint_view_pack and the pool's Ultralytics pose heads.
    """
    views = [(node, _keypoint_view(graph, node)) for node in graph.nodes if node.op_type == "Reshape"]
    # A view back is the pose head's only after its view per keypoint of the same [N, k, d, W]: Swin's
    # window reverse also flattens a Concat along axis 2 (its cyclic shift undone: fresh3 hf_swin2sr,
    # that Reshape on RK3588's NPU), with no such view before it.
    forward = {_static_shape(node.outputs[0]) for node, view in views if view is not None and not view[1]}
    for node, view in views:
        if view is not None and (not view[1] or _static_shape(node.inputs[0]) in forward):
            graph.fuse([node], "Reshape", attributes={KEYPOINT_VIEW_ATTRIBUTE: view})


# The attribute the pass below gives a Reshape that changes nothing and is a 3-D model output:
# what computes its input (rules.unchanged_3d_output_view).
OUTPUT_VIEW_SOURCE_ATTRIBUTE = "rknn_output_view_source"
PRODUCT_OPS = frozenset({"MatMul", "Gemm"})


def _view_source(graph, x) -> str | None:
    """What computes `x`, as the toolkit's output layout tells them apart: "norm" (a LayerNorm,
    decomposed or not), "biased" (a product's bias Add), "product" (a MatMul or Gemm),
    "sum" (an Add of two computed tensors); None for anything else (not measured)."""
    src = graph.producer(x.name)
    if src is None:
        return None
    if src.op_type == "LayerNormalization":
        return "norm"
    if src.op_type in PRODUCT_OPS:
        return "product"
    if src.op_type != "Add" or len(src.inputs) != 2:
        return None
    makers = [graph.producer(t.name) for t in src.inputs]
    computed = [m for m in makers if m is not None and not (m.op_type == "Constant")]
    constants = [t for t, m in zip(src.inputs, makers) if m is None and t.value is not None]
    if len(computed) == 2:
        return "sum"
    if len(computed) == 1 and constants and computed[0].op_type in PRODUCT_OPS:
        return "biased"
    return None


@RULES.graph_pass("Reshape", OBSERVED=TOOLKIT_OBSERVED)
def unchanged_output_views(graph, chip):
    """{OBSERVED} turns a model's 3-D output back from its own layout with a layer it names after a Reshape that changes nothing there (GPT-2's last node, hidden_states.view(output_shape)); whether that layer runs on the CPU depends on what computed the tensor (rules.unchanged_3d_output_view), which this pass notes on the Reshape.

    Measured on tests/forms_models.py output_view_pack.
    """
    for node in [n for n in graph.nodes if n.op_type == "Reshape"]:
        x, out = (node.inputs[0] if node.inputs else None), (node.outputs[0] if node.outputs else None)
        if x is None or out is None or not out.is_model_output:
            continue
        shape = _static_shape(out)
        if not shape or len(shape) != 3 or _static_shape(x) != shape:
            continue
        source = _view_source(graph, x)
        if source is not None:
            graph.fuse([node], "Reshape", attributes={OUTPUT_VIEW_SOURCE_ATTRIBUTE: source})


def _map_round_trip(graph, swap):
    """(the Reshape into a map, the Reshape back to tokens, the Transpose swapping back) when
    `swap` (a Transpose [0, 1, 3, 2]) starts a position encoding's round trip: Reshape into a map
    [N, C, H, W], a Conv (or a Split into Convs and their Concat, as CoaT writes it), Reshape back
    to [N, heads, head, H*W], Transpose [0, 1, 3, 2]; else None."""
    into = _lone_reshape_beside(graph, swap, False)
    if into is None or _tokens_map_reshape(into, True) is None:
        return None
    step = graph.only_consumer(into.outputs[0].name)
    if step is not None and step.op_type == "Split":
        convs = [graph.only_consumer(o.name) for o in step.outputs]
        if not convs or any(c is None or c.op_type != "Conv" for c in convs):
            return None
        joins = {id(graph.only_consumer(c.outputs[0].name)) for c in convs}
        step = graph.only_consumer(convs[0].outputs[0].name) if len(joins) == 1 else None
        if step is None or step.op_type != "Concat":
            return None
    elif step is None or step.op_type != "Conv":
        return None
    back = _lone_reshape_beside(graph, step, False)
    if back is None or _tokens_map_reshape(back, False) is None:
        return None
    swap_back = graph.only_consumer(back.outputs[0].name)
    if swap_back is None or swap_back.op_type != "Transpose" or list(swap_back.attr("perm") or []) != [0, 1, 3, 2]:
        return None
    return into, back, swap_back


def _lone_reshape_beside(graph, node, before: bool):
    """The Reshape `node` reads that only it reads (before) or the Reshape that alone reads `node`
    (after); None otherwise."""
    if before:
        r = graph.producer(node.inputs[0].name) if node.inputs else None
        return r if r is not None and r.op_type == "Reshape" and graph.only_consumer(r.outputs[0].name) is node else None
    r = graph.only_consumer(node.outputs[0].name) if node.outputs else None
    return r if r is not None and r.op_type == "Reshape" else None


@RULES.graph_pass("Transpose", chips=SOFTMAX_ON_CPU_CHIPS, OBSERVED=TOOLKIT_OBSERVED, chip_key=CHANNELS_LAST_LEVEL_CHIPS.__contains__)
def position_encoding_reshapes_join_their_transposes(graph, chip):
    """{OBSERVED} on RK3566/RK3568 runs CoaT's convolutional relative position encoding's round trip through a map (v's image tokens swapped [0, 1, 3, 2] and Reshaped into a map, a depthwise Conv, Reshaped back to [1, heads, head, tokens] and swapped back) with the Reshapes in the Transposes' CPU layers; and the heads' merge of the sum of the two attentions (an Add, Transpose [0, 2, 1, 3], Reshape) likewise.

    Measured on RK3566 with tests/forms_models.py crpe_pack (CoaT-Lite Tiny's four stages: 8 heads
    of 8, 16, 32, 40 values on 16x16 to 2x2 maps, and 4x4, 3x3, 2x2 maps) and on the pool's
    timm_coat_lite_tiny. Only the round trip is joined: a Reshape beside a Transpose of the same
    perm elsewhere (EfficientViT's linear attention, LambdaNetworks' output) and the heads' merge
    of a product's result (LeViT's) keep their Reshapes on the NPU in the pool's RK3566 verdicts.
    Without the class token's Slice and Pad the toolkit ran the whole block on the NPU but k's
    Softmax (probed first; not modelled: the audit keeps those Transposes on the CPU).
    """
    if chip not in CHANNELS_LAST_LEVEL_CHIPS:
        return
    for node in [n for n in graph.nodes if n.op_type == "Transpose"]:
        perm = list(node.attr("perm") or [])
        group = [node]
        if perm == [0, 1, 3, 2]:
            trip = _map_round_trip(graph, node)
            if trip is not None:
                into, back, swap_back = trip
                graph.fuse([into, node], "Transpose", leader=node)
                graph.fuse([back, swap_back], "Transpose", leader=swap_back)
            continue
        if perm == [0, 2, 1, 3]:
            source = graph.producer(node.inputs[0].name) if node.inputs else None
            after = _lone_reshape_beside(graph, node, False)
            if source is not None and source.op_type == "Add" and after is not None:
                group.append(after)
        if len(group) > 1:
            graph.fuse(group, "Transpose", leader=node)


# The attribute the pass below gives the Reshapes between a position encoding's tokens and its
# map, and the Transpose that swaps the map's tokens back: the map's cells
# (rules.position_encoding_map_reshape, rules.position_encoding_swap_back).
POSITION_MAP_ATTRIBUTE = "rknn_position_map_cells"
# And the heads on the Reshape into the map, the head size on the swap back (rules.position_encoding_map_reshape,
# rules.position_encoding_swap_back).
POSITION_HEADS_ATTRIBUTE = "rknn_position_map_heads"
POSITION_HEAD_ATTRIBUTE = "rknn_position_map_head"


def _tokens_map_reshape(reshape, to_map: bool) -> int | None:
    """The map's cells when `reshape` turns [N, h, d, H*W] into a map [N, h*d, H, W] (to_map) or
    back; else None."""
    a, b = _static_shape(reshape.inputs[0]), _static_shape(reshape.outputs[0])
    tokens, fmap = (a, b) if to_map else (b, a)
    if not tokens or not fmap or len(tokens) != 4 or len(fmap) != 4 or tokens[0] != fmap[0]:
        return None
    ok = tokens[1] * tokens[2] == fmap[1] and tokens[3] == fmap[2] * fmap[3] and tokens[1] > 1 and fmap[2] * fmap[3] > 1
    return int(tokens[3]) if ok else None


@RULES.graph_pass("Transpose", OBSERVED=TOOLKIT_OBSERVED)
def position_encoding_maps(graph, chip):
    """{OBSERVED} keeps CoaT's convolutional relative position encoding (v's tokens swapped [0, 1, 3, 2] and Reshaped into a map for a depthwise Conv, Reshaped back and swapped back) in its layout; the audit notes the map's cells on both Reshapes and on the swap back, the heads on the Reshape into the map and the head size on the swap back, on which their placement on RK3588 depends (rules.position_encoding_map_reshape, rules.position_encoding_swap_back). On RK3566/RK3568 the Reshapes have joined their CPU Transposes before this pass (position_encoding_reshapes_join_their_transposes).

    Measured on tests/forms_models.py crpe_pack.
    """
    for node in [n for n in graph.nodes if n.op_type == "Transpose" and list(n.attr("perm") or []) == [0, 1, 3, 2]]:
        trip = _map_round_trip(graph, node)
        if trip is None:
            continue
        into, back, swap_back = trip
        cells = _tokens_map_reshape(into, True)
        heads, head = _static_shape(into.inputs[0])[1:3]  # [N, heads, head, H*W] (checked by _tokens_map_reshape)
        graph.fuse([into], "Reshape", attributes={POSITION_MAP_ATTRIBUTE: cells, POSITION_HEADS_ATTRIBUTE: int(heads)})
        graph.fuse([back], "Reshape", attributes={POSITION_MAP_ATTRIBUTE: cells})
        graph.fuse([swap_back], "Transpose", attributes={"perm": [0, 1, 3, 2], POSITION_MAP_ATTRIBUTE: cells, POSITION_HEAD_ATTRIBUTE: int(head)})



# The attribute the pass below gives the flattening Reshape, the swap into tokens and the
# Reshape to a channels-last map of an unaligned swap read by a layer norm: (channels, tokens)
# (rules.unaligned_token_swap_into_norm, rules.unaligned_token_swap_into_norm_reshape).
SWAP_INTO_NORM_ATTRIBUTE = "rknn_unaligned_swap_into_norm"
SWAP_INTO_NORM_ALIGN = 16  # OBSERVED (RK3588): channels or tokens a multiple of it keep the swap on the NPU


def _flattened_map_swap(graph, node) -> tuple | None:
    """(flattening Reshape, channels, tokens) when `node` is x.flatten(2).transpose(1, 2) of a map
    [1, C, H, W] with H and W both above 1 (Reshape [1, C, H*W], Transpose [0, 2, 1]); else None."""
    flat = graph.producer(node.inputs[0].name) if node.inputs else None
    if flat is None or flat.op_type != "Reshape" or _perm(node) != [0, 2, 1]:
        return None
    fmap, tokens = _static_shape(flat.inputs[0]), _static_shape(node.inputs[0])
    if not fmap or not tokens or len(fmap) != 4 or len(tokens) != 3 or fmap[:2] != tokens[:2] or fmap[2] * fmap[3] != tokens[2]:
        return None
    if min(fmap[2], fmap[3]) < 2:  # a strip (PP-OCR's SVTR, 1 x W): on the NPU, OBSERVED
        return None
    return flat, int(tokens[1]), int(tokens[2])


def _norm_reads(graph, tensor: str) -> bool:
    """A layer norm reads `tensor` (LayerNormalization, or a ReduceMean over the last axis where it is written out)."""
    return any(r.op_type == "LayerNormalization" or (r.op_type == "ReduceMean" and [int(a) for a in (r.attr("axes") or [])] in ([-1], [2]))
               for r in graph.consumers(tensor))


@RULES.graph_pass("Transpose", chips=("rk3588",), OBSERVED=TOOLKIT_OBSERVED, ALIGN=SWAP_INTO_NORM_ALIGN)
def unaligned_token_swap_into_norm(graph, chip):
    """{OBSERVED} runs on the CPU a feature map's swap into tokens (Reshape [1, C, H*W], Transpose [0, 2, 1], which it joins as one Reshape layer: its pass bypass_two_reshape) when a layer norm reads the tokens, the map is not a strip (H and W above 1) and neither the channels nor the tokens are a multiple of {ALIGN}, and with it the Reshape of the tokens plus a residual into a channels-last map [1, H, W, C] (EdgeNeXt's split transpose block around its XCA); the audit marks all three (rules.unaligned_token_swap_into_norm).

    Found on a held-out pair (timm_edgenext_xx_small on RK3588, stage 3 block 1: 168 channels on a
    2x2 map; stage 2 block 5, 88 on 4x4, and stage 1 block 1, 48 on 8x8, on the NPU), explained by
    tests/forms_models.py xca_swap_pack (a depthwise Conv, the swap, a LayerNorm, a Linear Added
    to the tokens, the Reshape to the map, a Linear, Transpose back), on RK3588: CPU for 168 x 4,
    9, 25, 36 tokens, 88 x 4, 9, 40, 24, 120, 172 x 4; NPU for 48, 160, 176, 256 channels x 4 and
    160 x 9, 168 x 16 and 64, 88 x 16 tokens; CPU for 120 on 4x5 and 2x10, NPU for strips (120 on
    1x20 as PP-OCRv4's recogniser, 168 on 1x4 and 4x1); without the LayerNorm on the tokens (or with it only
    on the map) 168 x 4 and 88 x 4 stay on the NPU; the channel split before it does not matter. On
    RK3566 all on the NPU (RK3576/RK3562 not measured: left out).
    """
    for node in [n for n in graph.nodes if n.op_type == "Transpose"]:
        swap = _flattened_map_swap(graph, node)
        if swap is None or not _norm_reads(graph, node.outputs[0].name):
            continue
        flat, channels, tokens = swap
        if tokens < 2 or tokens % SWAP_INTO_NORM_ALIGN == 0 or channels % SWAP_INTO_NORM_ALIGN == 0:
            continue
        tag = {SWAP_INTO_NORM_ATTRIBUTE: [channels, tokens]}
        backs = [r for add in graph.consumers(node.outputs[0].name) if add.op_type == "Add"
                 for r in graph.consumers(add.outputs[0].name) if r.op_type == "Reshape" and len(_static_shape(r.outputs[0]) or ()) == 4]
        graph.fuse([flat], "Reshape", attributes=dict(tag))
        graph.fuse([node], "Transpose", attributes={"perm": [0, 2, 1], **tag})
        for back in backs:
            graph.fuse([back], "Reshape", attributes=dict(tag))


SWAP_FOR_LINEARS_ATTRIBUTE = "rknn_unaligned_map_tokens_for_linears"
SWAP_FOR_LINEARS_SEARCH = 200  # nodes walked from the tokens to their view back (one attention block)


def _linear(node) -> bool:
    """A MatMul by constant weights (a Linear without its bias Add)."""
    return node.op_type == "MatMul" and len(node.inputs) == 2 and _known(node.inputs[1])


def _view_back(graph, swap, fmap: tuple):
    """The Reshape [N, C, H*W] -> [N, C, H, W] of the same map after a Transpose [0, 2, 1] that the
    tokens of `swap` reach within SWAP_FOR_LINEARS_SEARCH nodes, or None."""
    seen, todo = {swap.name}, [swap]
    while todo and len(seen) < SWAP_FOR_LINEARS_SEARCH:
        node = todo.pop(0)
        for r in [r for o in node.outputs if o.name for r in graph.consumers(o.name)]:
            if r.name in seen:
                continue
            seen.add(r.name)
            before = graph.producer(r.inputs[0].name) if r.inputs else None
            if _map_unflatten(r) and _static_shape(r.outputs[0]) == tuple(fmap) and before is not None and before.op_type == "Transpose" and _perm(before) == TOKEN_SWAP:
                return r
            todo.append(r)
    return None


def _constant_scale_reading(graph, node):
    """The Mul by a constant that alone reads `node`'s result (a layer scale), or None."""
    reader = graph.only_consumer(node.outputs[0].name) if node.outputs else None
    if reader is None or reader.op_type != "Mul" or len(reader.inputs) != 2 or node.outputs[0].is_model_output:
        return None
    other = _other_input(reader, node.outputs[0].name)
    return reader if other is not None and _known(other) else None


@RULES.graph_pass("Reshape", chips=("rk3588",), OBSERVED=TOOLKIT_OBSERVED, ALIGN=SWAP_INTO_NORM_ALIGN)
def unaligned_map_as_tokens_for_linears(graph, chip):
    """{OBSERVED} runs on the CPU a feature map's flattening into tokens (Reshape [1, C, H*W], Transpose [0, 2, 1], joined as one layer named after the Reshape; the Transpose is not reported) read only by Linears, and the Reshape that views the tokens back as the map after the attention (Transpose [0, 2, 1], Reshape [1, C, H, W]: SwiftFormer's efficient additive attention), when the map is not a strip (H and W above 1) and neither the channels nor the tokens are a multiple of {ALIGN}; the audit marks both Reshapes (rules.unaligned_map_as_tokens_for_linears).

    Measured with rknn-toolkit2 2.5.0 on RK3588 (2026-12-04, int8): timm's own SwiftFormer Block
    (opset 17) with 220 channels on 2x2 and 3x3 maps, 40 on 2x2, 3x3 and 5x5, 56 on 2x2, 24 on
    3x3: the flattening Reshape and the Reshape back on the CPU; 48 on 2x2, 64 on 3x3, 112 and 40
    on 4x4: NPU; 220 on 1x1: nothing to flatten. tests/forms_models.py tokens_for_linears_pack
    (written out, opset 17, the flattening's shape constant or computed from Shape: 220 on 2x2,
    40 on 3x3 and 5x5, 56 on 2x2: CPU; 48 on 2x2, 40 on 4x4, 64 on 3x3: NPU). A layer scale (a Mul
    by a constant [C, 1, 1]) that alone reads the Reshape back runs with it ("fused (no layer of its
    own); runs with" the Reshape: fresh2 swiftformer_xs; tests/forms_models.py
    layer_scale_after_view_pack, 2026-12-05: gamma of 1e-5 everywhere, of 0.5, or drawn, at 220 on
    2x2 and 40 on 3x3: CPU; 48 on 2x2: NPU), and the pass joins it to the Reshape back. An earlier
    probe of timm's Block had that Mul on the NPU (not reproduced).
    A layer norm reading the tokens is unaligned_token_swap_into_norm. RK3566: not measured.
    """
    for node in [n for n in graph.nodes if n.op_type == "Transpose"]:
        swap = _flattened_map_swap(graph, node)
        readers = graph.consumers(node.outputs[0].name) if swap is not None else []
        if not readers or not all(_linear(r) for r in readers):
            continue
        flat, channels, tokens = swap
        if tokens % SWAP_INTO_NORM_ALIGN == 0 or channels % SWAP_INTO_NORM_ALIGN == 0:
            continue
        back = _view_back(graph, node, _static_shape(flat.inputs[0]))
        tag = {SWAP_FOR_LINEARS_ATTRIBUTE: [channels, tokens]}
        graph.fuse([flat], "Reshape", attributes=dict(tag))
        if back is not None:
            scale = _constant_scale_reading(graph, back)
            graph.fuse([back, scale] if scale is not None else [back], "Reshape", leader=back, attributes=dict(tag))


UNIT_BATCHNORM_RESHAPE_CHIPS = ("rk3566", "rk3568")
UNIT_BATCHNORM_TOKENS_ATTRIBUTE = "rknn_unit_batchnorm_tokens"


def _unit_batchnorm(node) -> bool:
    """Whether a BatchNormalization has an untrained BatchNorm1d's parameters (weight 1, bias 0,
    mean 0, variance 1): the toolkit then drops it. Worked out once per node: three passes ask, in
    each of the RKNN lowerings."""
    found = node.memo.get(_unit_batchnorm)
    if found is None:
        found = node.memo[_unit_batchnorm] = _has_unit_parameters(node)
    return found


def _has_unit_parameters(node) -> bool:
    if len(node.inputs) < 5 or any(t is None or t.stored_elsewhere for t in node.inputs[1:5]):
        return False
    # In order, stopping at the first that is not its unit value (a trained weight): the other
    # three are then never converted.
    for t, want in zip(node.inputs[1:5], (1.0, 0.0, 0.0, 1.0)):
        value = t.value
        if value is None or not np.all(np.asarray(value) == want):
            return False
    return True


@RULES.graph_pass("Reshape", OBSERVED=TOOLKIT_OBSERVED, chip_key=UNIT_BATCHNORM_RESHAPE_CHIPS.__contains__)
def reshape_back_after_a_unit_batchnorm(graph, chip):
    """{OBSERVED} drops a BatchNormalization with an untrained BatchNorm1d's parameters (weight 1, bias 0, mean 0, variance 1) from transformers' LeViT Linear (MatMul on [1, T, C], Flatten(axis=2), BatchNorm1d, Reshape to the MatMul's Shape); on RK3566 the Reshape back to tokens then runs on the CPU when a HardSwish reads it and T is a multiple of 8. The pass marks such a Reshape with its T for the rule reshape_back_of_a_dropped_batchnorm.

    Measured with rknn-toolkit2 2.5.0 on 2026-12-04 (tests/forms_models.py levit_mlp_pack; found
    on the held-out hf_levit/rk3566, whose stage-0 MLPs, 16 tokens, have these Reshapes on the CPU):
    with unit parameters the linear_up Reshape ran on the CPU at 8, 16, 24, 32 and 64 tokens
    (C 128 -> 128, 256, 512 and 256 -> 512 at 16), on the NPU at 1, 4, 9 and 49 tokens, without
    the HardSwish (Linear into Linear), and with random (trained-looking) parameters; on RK3588
    always on the NPU. RK3568 is taken to behave as RK3566 (not measured).
    """
    for node in [n for n in graph.nodes if n.op_type == "Reshape"]:
        norm = graph.producer(node.inputs[0].name) if node.inputs else None
        flat = graph.producer(norm.inputs[0].name) if norm is not None and norm.op_type == "BatchNormalization" else None
        if flat is None or flat.op_type != "Flatten" or not _unit_batchnorm(norm):
            continue
        tokens = _static_shape(node.outputs[0])
        readers = graph.consumers(node.outputs[0].name)
        if tokens and len(tokens) == 3 and readers and all(r.op_type == "HardSwish" for r in readers):
            graph.fuse([node], "Reshape", attributes={UNIT_BATCHNORM_TOKENS_ATTRIBUTE: int(tokens[1])})


def _constant_add_operand(node):
    """The run-time operand of an Add whose other operand is a constant (or computed from
    constants and static shapes), else None."""
    if node is None or node.op_type != "Add" or len(node.inputs) != 2:
        return None
    a, b = node.inputs
    if _known(b) and not _known(a):
        return a
    if _known(a) and not _known(b):
        return b
    return None


@RULES.graph_pass("Add", OBSERVED=TOOLKIT_OBSERVED)
def constant_adds_merged(graph, chip):
    """{OBSERVED} merges an Add of a constant (or of a value computed from constants, such as an embedding table gathered at constant positions) whose result only another Add of a constant reads into that Add, adding the two constants at conversion (its pass fuse_two_add): the first Add has no layer of its own, and the toolkit reports it with the layer that computes its other operand (BERT's embeddings: the word embeddings' Gather, on the CPU).

    Measured with rknn-toolkit2 2.5.0 on 2026-12-04 on RK3588 and RK3566 (tests/forms_models.py
    embeddings_add_pack; found on transformers' BERT, ALBERT and ELECTRA, whose word + token-type
    + position embeddings are such a chain after a CPU Gather): a CPU Gather's result plus a
    token-type table gathered at zeros plus a position table gathered at 0..T-1, in either order
    and with the constant first or second, with dims 16, 64 and 128, int64 and int32 ids; plus two
    [1, T, D] or [D] constants, either mix of them, or four [D] constants (every Add but the last
    reported with the Gather). One Add of a constant (DistilBERT's word + position), a first sum
    also read elsewhere (a model output), or a second Add of a run-time operand (a second table
    gathered at run-time ids) leave each Add a layer of its own on the NPU; after a Linear (an NPU
    layer) the merged Add is reported with it, on the NPU. Not modelled: a model input as the
    operand; the toolkit then gives the input a layout Reshape named after the first Add (on the
    CPU on RK3566, on the NPU on RK3588) and reports the merged Adds with it.
    """
    for add in [n for n in graph.nodes if n.op_type == "Add"]:
        x = _constant_add_operand(add)
        after = graph.only_consumer(add.outputs[0].name) if x is not None and add.outputs else None
        if after is None or _constant_add_operand(after) is None:
            continue
        source = graph.producer(x.name)
        if source is not None:  # a model input: its layout Reshape takes the Add's name (not modelled)
            graph.fuse([source, add], source.op_type, leader=source, inputs=list(source.inputs))


# Chips measured (RK3568 taken to behave as RK3566) and the attributes the pass below gives the
# two Reshapes (rules.batch_made_and_merged_by_reshapes places them).
BATCH_RESHAPE_CHIPS = ("rk3566", "rk3568")
BATCH_MADE_ATTRIBUTE = "rknn_batch_made"
BATCH_MERGED_ATTRIBUTE = "rknn_batch_merged"
# The most nodes walked back from a joining Reshape to the Reshapes that made its batch (TNT's
# inner stream through 12 blocks is about 400).
MAX_BATCH_WALK = 3000


def _joins_a_batch(node) -> bool:
    """A Reshape as written (its shape operand gives its output) that joins each set's tokens and
    channels of a batch of token sets, [B, N, C] with B above 1, into [.., B, N*C] (unit axes aside)."""
    x, out = node.inputs[0] if node.inputs else None, node.outputs[0] if node.outputs else None
    source, target = _static_shape(x), _static_shape(out)
    shape = _value_of(node.inputs[1]) if len(node.inputs) > 1 else None
    if source is None or target is None or shape is None or len(source) != 3 or source[0] < 2 or len(shape) != len(target):
        return False
    written = [source[i] if d == 0 and i < 3 else int(d) for i, d in enumerate(shape.tolist())]
    b, n, c = source
    return all(d in (-1, t) for d, t in zip(written, target)) and [d for d in target if d != 1] == [b, n * c] and min(n, c) > 1


def _makes_a_batch(node) -> bool:
    source, target = _static_shape(node.inputs[0]) if node.inputs else None, _static_shape(node.outputs[0]) if node.outputs else None
    return node.op_type == "Reshape" and source is not None and target is not None and source[:1] == (1,) and target[:1] != (1,)


def _batch_makers(graph, tensor) -> list | None:
    """The Reshapes that made the batch `tensor` carries (a tensor of batch 1 reshaped into one), found
    walking back over every computed input; None where a path reaches a model input (its batch is the
    model's, or something else made it) or the walk passes MAX_BATCH_WALK nodes."""
    makers, seen, frontier = {}, set(), [tensor]
    while frontier:
        t = frontier.pop()
        producer = graph.producer(t.name) if t.name else None
        if producer is None:
            gone = graph.wire(t.name)  # eliminated by an earlier pass: its input passes through
            if gone is not None:
                frontier += [x for x in gone.inputs[:1] if x.name and not _known(x)]
                continue
            if _known(t):
                continue
            return None  # a model input
        if producer.name in seen:
            continue
        seen.add(producer.name)
        if len(seen) > MAX_BATCH_WALK:
            return None
        if _makes_a_batch(producer):
            makers[producer.name] = producer
            continue
        frontier += [x for x in producer.inputs if x.name and not _known(x)]
    return list(makers.values()) or None


@RULES.graph_pass("Reshape", chips=BATCH_RESHAPE_CHIPS, OBSERVED=TOOLKIT_OBSERVED)
def batch_made_and_merged_by_reshapes(graph, chip):
    """{OBSERVED} runs on the CPU both Reshapes of a batch of token sets made inside the model and joined back set by set: the Reshape that made the batch from a tensor of batch 1 ([1, B*N, C] to [B, N, C]; TNT's pixel embedding) and the one that joins each set's tokens and channels ([B, N, C] to [1, B, N*C]; TNT's inner tokens passed to the outer ones); a batch that is the model input's, joined back into [1, B*N, C], or only split again, stays on the NPU.

    Measured with rknn-toolkit2 2.5.0 on RK3566 (tests/forms_models.py batch_merge_pack, and
    throwaway packs in docs/audit.md). Not modelled: the same joins of a model input's batch read
    by a layer norm the toolkit ran on the CPU went to the CPU too (6 of 8), and on RK3588 two of
    the pack's joins ran on the CPU where TNT's own ran on the NPU.
    """
    for node in [n for n in graph.nodes if n.op_type == "Reshape"]:
        if not _joins_a_batch(node):
            continue
        makers = _batch_makers(graph, node.inputs[0])
        if not makers:
            continue
        batch = int(node.inputs[0].shape[0])
        graph.fuse([node], "Reshape", attributes={BATCH_MERGED_ATTRIBUTE: batch})
        for maker in makers:
            if graph.producer(maker.outputs[0].name) is maker:  # not marked by an earlier join
                graph.fuse([maker], "Reshape", attributes={BATCH_MADE_ATTRIBUTE: batch})


@RULES.graph_pass("Identity", OBSERVED=TOOLKIT_OBSERVED)
def identity_joins_its_producer(graph, chip):
    """{OBSERVED} removes an Identity on a run-time tensor (its passes remove_invalid_dataconvert, bypass_two_reshape): the Identity has no layer of its own and the toolkit reports it with the layer that computes its input, whose result then is what the Identity wrote; a Softmax read by an Identity that writes the model output is a model-output Softmax (Paddle2ONNX ends PP-OCR's direction classifier so: float16 on RK3588's NPU, on the CPU on RK3566).

    Measured with rknn-toolkit2 2.5.0 on 2026-12-04 on RK3588 and RK3566 (tests/forms_models.py
    identity_pack, opset 11): after a Softmax over the last axis (2-D and 3-D, writing the model
    output, read by a Linear, or two Identities in a row), a biased Linear, a Linear and Relu, a
    3x3 Conv and a Gather at run-time ids, the Identity goes with its producer, and at a 3-D
    model output the producer takes the output's layout layer (a Relu's, on the CPU on RK3566).
    An Identity of a model input is left to the rules (identity_of_a_3d_model_input). Seen, not
    modelled: after a CPU Gather of 3-D embeddings, read by a Linear, RK3588 gives the Identity
    the layout Reshape into the NPU's layout, on the NPU.
    """
    for node in [n for n in graph.nodes if n.op_type == "Identity"]:
        x = node.inputs[0] if node.inputs else None
        source = graph.producer(x.name) if x is not None and x.name and not _known(x) else None
        if source is not None:
            graph.fuse([source, node], source.op_type, leader=source, inputs=list(source.inputs))


# The attribute patch_interleave_transposes gives a Transpose that interleaves the first two of five axes (with the
# Reshape into it; rules.patch_interleave_on_cpu reads it).
PATCH_INTERLEAVE_ATTRIBUTE = "rknn_patch_interleave"
PATCH_INTERLEAVE_AXES = 5
PATCH_INTERLEAVE_CHIPS = ("rk3588",)


def _effective_perm(shape, perm) -> list[int] | None:
    """The permutation `perm` of `shape` once its axes of one are dropped and each run of input axes it keeps
    together (in order, side by side) is merged into one axis."""
    kept = [a for a in range(len(shape)) if shape[a] != 1]
    rank_of = {a: i for i, a in enumerate(kept)}
    runs: list[list[int]] = []
    for r in (rank_of[a] for a in perm if shape[a] != 1):
        if runs and runs[-1][-1] + 1 == r:
            runs[-1].append(r)
        else:
            runs.append([r])
    starts = sorted(run[0] for run in runs)
    return [starts.index(run[0]) for run in runs]


def _interleaves_a_patch(node) -> bool:
    """A Transpose whose effective permutation has five axes and puts the first two at places 1 and 3 (SegGPT's
    patch fold [N, h, w, p, p, C] -> [N, C, h, p, w, p]; MaxViT's grid reverse is one too)."""
    shape, perm = _static_shape(node.inputs[0]) if node.inputs else None, _perm(node)
    if shape is None or perm is None or len(perm) != len(shape):
        return False
    eff = _effective_perm(shape, perm)
    return len(eff) == PATCH_INTERLEAVE_AXES and eff[1] == 0 and eff[3] == 1


@RULES.graph_pass("Transpose", chips=PATCH_INTERLEAVE_CHIPS, OBSERVED=TOOLKIT_OBSERVED, AXES=PATCH_INTERLEAVE_AXES)
def patch_interleave_transposes(graph, chip):
    """On RK3588 {OBSERVED} runs on the CPU a Transpose that, its axes of one dropped and the axes it keeps together merged, has {AXES} axes and puts the first two at places 1 and 3, each after another axis, when a Reshape alone reads it (SegGPT's decoder folds its patches back: [1, 16, 8, 8, 8, 16] by [0, 5, 1, 3, 2, 4], then viewed as the map [1, 16, 128, 64]), and with it the Reshape that alone feeds it (the view into the patches).

    Measured with rknn-toolkit2 2.5.0 on RK3588 (2026-12-05, int8, opset 13; tests/forms_models.py
    patch_interleave_pack; fresh8 hf_seggpt's /model/decoder/Reshape and Transpose): a MatMul's [1, 16, 8, 1024]
    viewed as [1, 16, 8, 8, 8, 16] or [16, 8, 8, 8, 16], swapped, viewed back to 4-D, read by a Conv. CPU, the view
    into it too: [0, 5, 1, 3, 2, 4], [0, 3, 1, 5, 2, 4], [0, 4, 1, 3, 2, 5], [0, 3, 1, 4, 2, 5] and [2, 0, 4, 1, 3],
    [4, 0, 2, 1, 3] of the 5-D. NPU: 24 other permutations (docs/audit.md lists them), among them five-axis ones
    that interleave other axes ([0, 2, 1, 4, 3, 5], [0, 1, 4, 2, 5, 3], [0, 4, 1, 5, 3, 2], ...) and [0, 5, 1, 4, 2, 3],
    [0, 4, 1, 5, 2, 3], [3, 0, 4, 1, 2], whose last two axes merge (four axes). Read by something else (single models, [0, 5, 1, 3, 2, 4]): as the model output or by
    an Add of itself, CPU; by a Relu, NPU (and [0, 2, 1, 4, 3, 5] then CPU): not modelled. MaxViT's grid reverse
    [0, 3, 1, 4, 2, 5] is left to grid_reverse_and_its_channels_last_region. RK3566 (where the Transpose runs on the CPU
    anyway) ran the view into it on the CPU for these and for [0, 2, 1, 4, 3, 5], [0, 1, 3, 2, 5, 4] too, and every view
    back; not modelled. RK3566 builds of a 6-D model output crashed (signal 6).
    """
    for swap in [n for n in graph.nodes if n.op_type == "Transpose"]:
        if _perm(swap) == GRID_REVERSE or not _interleaves_a_patch(swap) or swap.outputs[0].is_model_output:
            continue
        back = graph.only_consumer(swap.outputs[0].name)
        if back is None or back.op_type != "Reshape":
            continue
        view = graph.producer(swap.inputs[0].name)
        joined = [view, swap] if view is not None and view.op_type == "Reshape" and graph.only_consumer(view.outputs[0].name) is swap else [swap]
        graph.fuse(joined, "Transpose", leader=swap, attributes={"perm": _perm(swap), PATCH_INTERLEAVE_ATTRIBUTE: 1},
                   inputs=list(joined[0].inputs[:1]), outputs=list(swap.outputs))


GRID_REVERSE = [0, 3, 1, 4, 2, 5]  # [N, H/g, W/g, g, g, C] -> [N, g, H/g, g, W/g, C]: MaxViT's grid reverse
TO_CHANNELS_LAST, TO_CHANNELS_FIRST = [0, 2, 3, 1], [0, 3, 1, 2]
GRID_LAYOUT_ATTRIBUTE = "rknn_grid_reverse_layout"
GRID_REGION_MAX_NODES = 2000  # a bounded walk: one block's channels-last region is a few hundred nodes
GRID_REVERSE_CHIPS = ("rk3588",)


def _region_ends(graph, start, forward: bool) -> tuple[list, bool]:
    """(The Transposes that end the channels-last region `start` is in, walking from it against the data
    (forward False: to the [0, 2, 3, 1] that opened it) or with it (True: to the [0, 3, 1, 2] that
    closes it), through run-time tensors only, at most GRID_REGION_MAX_NODES nodes; whether a layer
    norm was on the way)."""
    end_perm = TO_CHANNELS_FIRST if forward else TO_CHANNELS_LAST
    ends, seen, todo, normed = [], {start.name}, [start], False
    while todo and len(seen) < GRID_REGION_MAX_NODES:
        node = todo.pop()
        if forward:
            nxt = [r for o in node.outputs if o.name for r in graph.consumers(o.name)]
        else:
            # a node an earlier pass removed (graph.wire) is walked through like any other
            nxt = [p for t in node.inputs if t.present and not _known(t) for p in [graph.producer(t.name) or graph.wire(t.name)] if p is not None]
        for n in nxt:
            if n.name in seen:
                continue
            seen.add(n.name)
            if n.op_type == "Transpose" and _perm(n) == end_perm:
                ends.append(n)
            else:
                normed = normed or n.op_type == "LayerNormalization"
                todo.append(n)
    return ends, normed


GRID_WINDOWS_ALIGN = 16  # OBSERVED (RK3588): a batch of windows viewed into the grid stays on the NPU at multiples of it


def _windows_into_grid(view) -> int:
    """The window count of a Reshape [nW, g, g, C] -> [1, a, b, g, g, C] with nW = a*b > 1 (attention's
    windows viewed back into MaxViT's grid before its reverse), else 0."""
    x, out = _static_shape(view.inputs[0]) if view.op_type == "Reshape" and view.inputs else None, _static_shape(view.outputs[0])
    if not x or not out or len(x) != 4 or len(out) != 6 or out[0] != 1 or x[1:] != out[3:] or x[0] != out[1] * out[2]:
        return 0
    return x[0] if x[0] > 1 else 0


@RULES.graph_pass("Transpose", "BatchNormalization", "Reshape", chips=GRID_REVERSE_CHIPS, OBSERVED=TOOLKIT_OBSERVED, ALIGN=GRID_WINDOWS_ALIGN)
def grid_reverse_and_its_channels_last_region(graph, chip):
    """{OBSERVED} runs on the CPU the 6-D Transpose [0, 3, 1, 4, 2, 5] of MaxViT's grid reverse (windows [N, H/g, W/g, g, g, C] back to [N, g, H/g, g, W/g, C] between two Reshapes), where the grid partition's [0, 2, 4, 1, 3, 5] and the window swap [0, 1, 3, 2, 4, 5] run on the NPU; where that channels-last map is also layer-normed, the Transposes that take it in from a convolution's layout ([0, 2, 3, 1]) and back out ([0, 3, 1, 2]) then run on the CPU too, and an untrained BatchNormalization (weight 1, bias 0, mean 0, variance 1), which the toolkit drops, right after the way out is reported with it, on the CPU. The pass marks them for the rule grid_reverse_layout_on_cpu.

    Measured with rknn-toolkit2 2.5.0 on RK3588 (2026-12-04, int8; tests/forms_models.py
    grid_reverse_pack, and timm's own MaxxVitBlock and PartitionAttentionCl in one model): the
    grid reverse on the CPU for 8x8 maps of 16, 32 and 128 channels, 4x4 of 256, 16x16 of 64,
    with or without the map's Transposes around it; the Transposes into and out of the
    channels-last map on the CPU with a layer norm before the grid's view (timm's blocks; the
    pack, 16 and 128 channels), on the NPU with a Sigmoid there instead, and around a block
    attention alone (window swap, no grid reverse); a BatchNormalization after the way out: on the
    CPU with unit parameters (with the layer norm), on the NPU with others. A grid whose axes are all 1
    moves nothing (transpose_of_unit_axes_is_a_reshape). The Reshape that views a batch of nW
    windows [nW, g, g, C] into the grid [1, a, b, g, g, C] right before the reverse runs on the CPU
    when nW is not a multiple of {ALIGN} (tests/forms_models.py grid_windows_view_pack: 4, 8 and 9
    windows of 32 to 256 channels, windows of 2x2 and 4x4: CPU; 16 and 32: NPU; the same views
    before Swin's window swap: NPU). Seen, not modelled: a [0, 2, 3, 1]
    Transpose read directly by the 6-D Reshape of a window partition, and that Reshape, ran on
    the CPU. Not measured: RK3566 (whose Transposes run on the CPU anyway), other chips.
    """
    reverses = [n for n in graph.nodes if n.op_type == "Transpose" and _perm(n) == GRID_REVERSE and n.inputs and n.inputs[0].rank == 6]
    for rev in reverses:
        (exits, normed_after), (entries, normed_before) = _region_ends(graph, rev, True), _region_ends(graph, rev, False)
        graph.fuse([rev], "Transpose", attributes={GRID_LAYOUT_ATTRIBUTE: "reverse"})
        view = graph.producer(rev.inputs[0].name)
        if view is not None and _windows_into_grid(view) % GRID_WINDOWS_ALIGN:
            graph.fuse([view], "Reshape", attributes={GRID_LAYOUT_ATTRIBUTE: "windows view"})
        if not (normed_after or normed_before):
            continue
        for entry in entries:
            graph.fuse([entry], "Transpose", attributes={GRID_LAYOUT_ATTRIBUTE: "entry"})
        for way_out in exits:
            for norm in graph.consumers(way_out.outputs[0].name):
                if norm.op_type == "BatchNormalization" and _unit_batchnorm(norm):
                    graph.fuse([norm], "BatchNormalization", attributes={GRID_LAYOUT_ATTRIBUTE: "dropped norm"})
            graph.fuse([way_out], "Transpose", attributes={GRID_LAYOUT_ATTRIBUTE: "exit"})


# ---- fresh3 (Wav2Vec2-Conformer): views of an attention's added scores ---------------------------

REGROUP_PLANE_ALIGN = 16  # OBSERVED (RK3588): a regrouped plane of a multiple of it stays on the NPU
CROPPED_BIAS_VIEW_ATTRIBUTE = "rknn_cropped_bias_view"


def last_axes_regroup(node) -> tuple | None:
    """(a, b, p, q) when `node` is a Reshape [N, C, a, b] -> [N, C, p, q] that regroups the last two
    axes (a*b = p*q, a different split, none of them 1), else None."""
    x, out = (_static_shape(node.inputs[0]), _static_shape(node.outputs[0])) if node.op_type == "Reshape" and node.inputs and node.outputs else (None, None)
    if not x or not out or len(x) != 4 or len(out) != 4 or x[:2] != out[:2] or x[2:] == out[2:] or 1 in x[2:] + out[2:]:
        return None
    return (x[2], x[3], out[2], out[3]) if x[2] * x[3] == out[2] * out[3] else None


def _unscaled(graph, node):
    """The producer of what `node` scales by a one-element constant (Mul or Div), else `node`."""
    if node is not None and node.op_type in ("Mul", "Div") and len(node.inputs) == 2 and _scalar(node.inputs[1]) is not None:
        return graph.producer(node.inputs[0].name)
    return node


# The products of two computed tensors that make attention's scores and read its weights (XLNet writes
# both as Einsums, 'ibnd,jbnd->bnij' and 'bnij,jbnd->ibnd': tests/forms_models.py xlnet_shift_pack).
ATTENTION_PRODUCTS = ("MatMul", "Einsum")


def _scores_of_a_full_attention(graph, add) -> bool:
    """`add` adds to q @ k^T (a MatMul or an Einsum of two run-time tensors), and its sum, scaled by
    at most a Div or Mul by a constant, is a Softmax that only such a product reads: the attention
    rknn-toolkit2 fuses."""
    scores = [_unscaled(graph, graph.producer(t.name)) for t in add.inputs if t.present and not _known(t)]
    if not any(p is not None and p.op_type in ATTENTION_PRODUCTS and not any(_known(t) for t in p.inputs) for p in scores):
        return False
    nxt = graph.only_consumer(add.outputs[0].name)
    if nxt is not None and nxt.op_type in ("Div", "Mul") and _known(nxt.inputs[1]):
        nxt = graph.only_consumer(nxt.outputs[0].name)
    if nxt is None or nxt.op_type != "Softmax":
        return False
    reader = graph.only_consumer(nxt.outputs[0].name)
    return reader is not None and reader.op_type in ATTENTION_PRODUCTS


RELATIVE_SHIFT_CHIPS = ("rk3588", "rk3566", "rk3568")
RELATIVE_SHIFT_TALL_ATTRIBUTE = "rknn_relative_shift_tall_view"


@RULES.graph_pass("Reshape", chips=("rk3566", "rk3568"), OBSERVED=TOOLKIT_OBSERVED)
def relative_shift_tall_view(graph, chip):
    """{OBSERVED} runs on RK3566's CPU, at every size, the Reshape that views Transformer-XL's padded position scores tall ([1, H, T, 2T] -> [1, H, 2T, T]) for the Slice that drops their first row (Wav2Vec2-Conformer's relative shift), where the same regroup between other layers stays on the NPU (last_axes_regroup_pack). The pass marks it for the rule relative_shift_tall_view.

    Measured with rknn-toolkit2 2.5.0 on RK3566 (2026-12-04, int8): tests/forms_models.py
    relative_shift_linear_pack (q, k, v Linears, T = 16, 32, 50, 199; the crop added to a model
    input and read by a Relu): CPU in every case; relative_shift_pack run on RK3566 (not held, its
    q and k model inputs): CPU but where the padded scores are a Concat of a model input (NPU).
    RK3568 is taken to behave as RK3566.
    """
    for node in [n for n in graph.nodes if n.op_type == "Reshape" and n.outputs]:
        shape = last_axes_regroup(node)
        drop = graph.only_consumer(node.outputs[0].name)
        if shape is None or shape[1] != 2 * shape[0] or shape[2:] != (shape[1], shape[0]) or drop is None or drop.op_type != "Slice" or len(drop.inputs) < 4:
            continue
        if [a % 4 for a in _ints(drop.inputs[3]) or []] == [2] and list(_ints(drop.inputs[1]) or []) == [1]:
            graph.fuse([node], "Reshape", attributes={RELATIVE_SHIFT_TALL_ATTRIBUTE: int(shape[0])})


def _crops_the_last_axis(crop) -> bool:
    """Whether `crop` keeps part of the last axis of a 4-D tensor: a Slice of axis 3, or a Gather on
    axis 3 of constant indices 0, 1, .., n - 1 (XLNet's index_select of the first T columns)."""
    if crop.op_type == "Slice":
        return len(crop.inputs) >= 4 and [a % 4 for a in _ints(crop.inputs[3]) or []] == [3]
    if crop.op_type != "Gather" or int(crop.attr("axis", 0)) % 4 != 3 or len(crop.inputs) < 2:
        return False
    indices = _ints(crop.inputs[1])
    return bool(indices) and list(indices) == list(range(len(indices)))


@RULES.graph_pass("Reshape", chips=RELATIVE_SHIFT_CHIPS, OBSERVED=TOOLKIT_OBSERVED)
def cropped_view_added_to_attention_scores(graph, chip):
    """{OBSERVED} runs on the CPU a Reshape whose result, cropped along its last axis by a Slice, is added to an attention's scores (q @ k^T + it, scaled, Softmax, @ v): Transformer-XL's relative shift as Wav2Vec2-Conformer writes it. The pass marks it for the rule cropped_view_added_to_attention_scores.

    Measured with rknn-toolkit2 2.5.0 on RK3588 (2026-12-04, int8; tests/forms_models.py
    relative_shift_pack): the shift's view back [1, H, 2T-1, T] -> [1, H, T, 2T-1] before the crop,
    CPU at T = 8, 16, 32, 50, 199; a split [1, H, T*(2T-1)] -> [1, H, T, 2T-1] before the crop:
    CPU; the same chain with the Softmax read by a Relu, with the scores a model input instead of
    q @ k^T, with the crop added to a model input, or with no crop (a regroup added as it is): NPU.
    RK3566 (relative_shift_linear_pack, 2026-12-04): the view back on the CPU at T = 16, 32, 50,
    199; with the crop added to a model input and read by a Relu: NPU. RK3568 taken alike. Each term
    scaled before the Add, the crop cut again to its own length (Parakeet; the same pack's "scaled"
    entries, RK3566, 2026-12-05, T = 13, 16, 32): CPU. XLNet's spelling (xlnet_shift_pack, both
    chips, 2026-12-05): the crop a Gather of the first T columns, the scores and the weights' product
    MatMuls or Einsums, T = 8, 16, 32: CPU; the Softmax read by a Relu instead: NPU.
    """
    for node in [n for n in graph.nodes if n.op_type == "Reshape" and n.outputs]:
        crop = graph.only_consumer(node.outputs[0].name)
        if crop is None or len(_static_shape(node.outputs[0]) or ()) != 4 or not _crops_the_last_axis(crop):
            continue
        add = graph.only_consumer(crop.outputs[0].name)
        for _ in range(2):  # Parakeet scales the crop first, and cuts it again to its own length
            if add is None or not (add.op_type == "Slice" or _unscaled(graph, add) is not add):
                break
            add = graph.only_consumer(add.outputs[0].name)
        if add is not None and add.op_type == "Add" and _scores_of_a_full_attention(graph, add):
            graph.fuse([node], "Reshape", attributes={CROPPED_BIAS_VIEW_ATTRIBUTE: 1})


GATES_VIEW_ALIGN = 16  # OBSERVED (RK3588): the view's third axis a multiple of it keeps it on the NPU
GATES_VIEW_ATTRIBUTE = "rknn_gates_view_into_a_sum"
GATES_VIEW_CHIPS = ("rk3588", "rk3566", "rk3568")
GATES_VIEW_ALIGNED_UNKNOWN = ("rk3566", "rk3568")  # where an aligned T is no rule found (uncertain)


@RULES.graph_pass("Reshape", chips=GATES_VIEW_CHIPS, OBSERVED=TOOLKIT_OBSERVED, ALIGN=GATES_VIEW_ALIGN, chip_key=GATES_VIEW_ALIGNED_UNKNOWN.__contains__)
def last_axis_split_into_a_sum(graph, chip):
    """{OBSERVED} runs on the CPU a Reshape that splits the last axis of [N, H, T, C] into [N, H, T, g, C/g] for a ReduceSum over the new last axis (WavLM's gated relative positions: [1, H, T, 8] -> [1, H, T, 2, 4]) when T is not a multiple of {ALIGN}. The pass marks it for the rule last_axis_split_into_a_sum.

    Measured with rknn-toolkit2 2.5.0 on RK3588 (2026-12-04, int8; tests/forms_models.py
    gated_positions_pack): CPU at T = 4, 8, 12, 20, 24, 40, 50 and 199 (2, 3 or 12 heads; the
    sum keeping its axis or not; after a Linear or from a model input); NPU at T = 16, 32, 48; at
    T = 199, read by a ReduceMean or a Relu instead: NPU. Not measured: other C than 8 = 2 x 4.
    On RK3566 (gated_positions_pack_rk3566, 2026-12-04) on the CPU at every T of the pack, 4 to
    199, multiples of 16 too (a Linear of a model input's heads), where the same view after a
    Linear of tokens split into heads (constant_product_pack's CONSTANT_PRODUCT_MEASURED "heads")
    ran on the CPU at T = 199 and 20 and on the NPU at 16: there an unaligned T is the CPU and an
    aligned one is marked for an uncertain placement. RK3568 is taken to behave as RK3566.
    """
    for node in [n for n in graph.nodes if n.op_type == "Reshape" and n.outputs]:
        x, out = _static_shape(node.inputs[0]), _static_shape(node.outputs[0])
        if not x or not out or len(x) != 4 or len(out) != 5 or out[:3] != x[:3] or out[3] * out[4] != x[3]:
            continue
        if out[2] % GATES_VIEW_ALIGN == 0 and chip not in GATES_VIEW_ALIGNED_UNKNOWN:
            continue
        reader = graph.only_consumer(node.outputs[0].name)
        if reader is None or reader.op_type != "ReduceSum":
            continue
        axes = (_ints(reader.inputs[1]) if len(reader.inputs) > 1 else reader.attr("axes")) or []
        if [int(a) % 5 for a in axes] == [4]:
            graph.fuse([node], "Reshape", attributes={GATES_VIEW_ATTRIBUTE: int(out[2])})



# A convolution map viewed into another shape (rules.view_of_a_map_on_cpu places it).
MAP_VIEW_ATTRIBUTE = "rknn_map_view"
MAP_VIEW_LINEAR_ALIGN = 8  # channels of a map viewed into a Linear that keep the view on the NPU (4: CPU, 16: NPU; 8 not measured)
MAP_VIEW_HOPS = 3  # activations, or products and sums with a constant, between the Conv and the view
VIEW_ACTIVATIONS = frozenset({"Relu", "Sigmoid"})  # measured after the view (one joins it) and before it


def _attributes_of(node) -> dict:
    from onnx import helper

    return {a.name: helper.get_attribute_value(a) for a in node.proto.attribute}


def _conv_map(graph, tensor: str) -> bool:
    """Whether a Conv made `tensor`, through at most MAP_VIEW_HOPS activations or products and sums with a constant."""
    for _ in range(MAP_VIEW_HOPS + 1):
        writer = graph.producer(tensor)
        if writer is None:
            return False
        if writer.op_type == "Conv":
            return True
        data = [t for t in writer.inputs if t.present and not _known(t)]
        if not (writer.op_type in VIEW_ACTIVATIONS or writer.op_type in ("Mul", "Add")) or len(data) != 1:
            return False
        tensor = data[0].name
    return False


def _linear_of(node, tensor: str) -> bool:
    """A MatMul of `tensor` by a constant weight (a Linear)."""
    return node.op_type == "MatMul" and len(node.inputs) == 2 and node.inputs[0].name == tensor and _known(node.inputs[1])


# What computes a map [1, C, H, W] in the NPU's own layout (map_maker_view_pack: each of them, after a Conv);
# sums, products, Where and Concat of such maps, and activations of one, are maps too. A Transpose's result is not
# (its view as the output ran on RK3566's NPU), nor attention's products (MatMul).
SPATIAL_MAKERS = frozenset({"Conv", "ConvTranspose", "MaxPool", "AveragePool", "Resize"})
SPATIAL_JOINS = frozenset({"Add", "Mul", "Sub", "Concat", "Where", "Relu", "Sigmoid", "Clip", "HardSwish", "LeakyRelu", "ReduceSum"})
SPATIAL_HOPS = 4
# Makers whose view's activation reader runs on the CPU with the view (map_maker_view_reader_pack: a
# Relu after a view of a Conv's, ConvTranspose's, Add's or Mul's map; after pooling, Resize, Where or
# Concat the Relu stays on the NPU).
MAP_VIEW_ACTIVATION_MAKERS = frozenset({"Conv", "ConvTranspose", "Add", "Mul"})


def _spatial_map(graph, tensor: str, hops: int = SPATIAL_HOPS) -> bool:
    """Whether `tensor` is a map computed by SPATIAL_MAKERS, through at most `hops` SPATIAL_JOINS."""
    writer = graph.producer(tensor)
    if writer is None:
        return False
    if writer.op_type in SPATIAL_MAKERS:
        return True
    if writer.op_type not in SPATIAL_JOINS or hops == 0:
        return False
    data = writer.inputs[1:] if writer.op_type == "Where" else writer.inputs
    return any(t.present and not _known(t) and _spatial_map(graph, t.name, hops - 1) for t in data)


def _activations_to_an_output(graph, tensor: str, hops: int = MAP_VIEW_HOPS) -> bool:
    """Whether `tensor` reaches a model output through a chain of activations alone (each read by one node)."""
    for _ in range(hops):
        readers = graph.consumers(tensor)
        if len(readers) != 1 or readers[0].op_type not in VIEW_ACTIVATIONS:
            return False
        tensor = readers[0].outputs[0].name
        if readers[0].outputs[0].is_model_output:
            return True
    return False


def _a_view_of_its_input(view) -> bool:
    """Reshape, Squeeze and Flatten; a Gather only of one constant scalar index along an axis of one (a Squeeze of it)."""
    if view.op_type != "Gather":
        return True
    x, index = view.inputs[0], view.inputs[1] if len(view.inputs) == 2 else None
    if index is None or not _known(index) or index.rank != 0:
        return False
    return x.shape[int(view.attr("axis", 0)) % x.rank] == 1


def _map_view(graph, view):
    """(map tensor, its maker) when `view` reads a map [1, C, H, W] (H * W > 1) that it changes the shape of, else None."""
    x, out = view.inputs[0] if view.inputs else None, view.outputs[0] if view.outputs else None
    if x is None or out is None or x.rank != 4 or not x.is_static or x.shape[2] * x.shape[3] == 1 or _static_shape(out) == _static_shape(x):
        return None
    maker = graph.producer(x.name)
    return (x, maker) if maker is not None and _a_view_of_its_input(view) and _spatial_map(graph, x.name) else None


@RULES.graph_pass("Reshape", "Squeeze", "Flatten", "Gather", chips=SOFTMAX_ON_CPU_CHIPS, OBSERVED=TOOLKIT_OBSERVED, ALIGN=MAP_VIEW_LINEAR_ALIGN)
def map_views_on_cpu(graph, chip):
    """{OBSERVED} on RK3566/RK3568 runs on the CPU a Reshape, Squeeze, Flatten or Gather of one index along an axis of one that views a map [1, C, H, W] (H * W > 1) into another shape, the map computed by a Conv, ConvTranspose, pooling or Resize (through at most a few sums, products, Where, Concat or activations; not a Transpose's result, nor attention's products), when the view is a model output or reaches one through activations alone, and when a Linear reads it and C is not a multiple of {ALIGN}. The activation reading it runs there with it after a Conv, ConvTranspose, Add or Mul (or a Conv through activations and products and sums with a constant). A pooled map (H = W = 1, a classifier's Flatten) and a view into a product of two computed tensors (EfficientFormerV2's key) stay on the NPU. The pass marks the view (and joins the activation to it) for rules.view_of_a_map_on_cpu.

    Measured on RK3566 with tests/forms_models.py squeezed_map_pack (rknn-toolkit2 2.5.0, 90 nodes,
    2026-12-04): as the model output, 1, 4, 8 and 16 channels of 7x7 to 64x64 after a Conv, a
    Relu, a Sigmoid or GLPN's Sigmoid and Mul, by Squeeze, Reshape (to 3-D, to [C, H, W], to
    [1, H, W, 1]) or Flatten: CPU; read by a Relu or a Sigmoid: both CPU (by a Relu then a
    Sigmoid: the Sigmoid on the NPU); into a Linear: CPU with 4 channels (8x8, 16x16), NPU with 16;
    into q @ k as k: NPU; GlobalAveragePool's [1, 16, 1, 1] flattened: NPU. By the map's maker
    (map_maker_view_pack, map_maker_view_reader_pack, 2026-12-05, RK3566 and RK3588): the same
    on RK3566 after a ConvTranspose, MaxPool, AveragePool, Resize, SuperPoint's Where, an Add, a Mul
    or a Concat of two Conv maps, by Squeeze, Gather at 0 of the axis of one (fresh7's SuperPoint)
    or Reshape to tokens; after a Transpose (on RK3566's CPU) the view runs on the NPU except into a
    Linear. RK3588 ran all of them on the NPU (only a 7x7 map squeezed to the output was on its CPU;
    not modelled here). RK3568 is taken to behave as RK3566 (not measured).
    """
    for view in [n for n in graph.nodes if n.op_type in ("Reshape", "Squeeze", "Flatten", "Gather")]:
        found = _map_view(graph, view)
        if found is None:
            continue
        x, maker = found
        out = view.outputs[0]
        readers = graph.consumers(out.name)
        marked = {**_attributes_of(view), MAP_VIEW_ATTRIBUTE: list(x.shape)}
        if out.is_model_output and not readers:
            graph.fuse([view], view.op_type, attributes=marked)
        elif len(readers) == 1 and not out.is_model_output and _activations_to_an_output(graph, out.name):
            joins = maker.op_type in MAP_VIEW_ACTIVATION_MAKERS or _conv_map(graph, x.name)
            graph.fuse([view, readers[0]] if joins else [view], view.op_type, leader=view, attributes=marked)
        elif len(readers) == 1 and not out.is_model_output and _linear_of(readers[0], out.name) and x.shape[1] % MAP_VIEW_LINEAR_ALIGN:
            graph.fuse([view], view.op_type, attributes=marked)


GROUPED_LINEAR_VIEW_ATTRIBUTE = "rknn_grouped_linear_view"


@RULES.graph_pass("Reshape", chips=SOFTMAX_ON_CPU_CHIPS, OBSERVED=TOOLKIT_OBSERVED)
def grouped_linear_views(graph, chip):
    """{OBSERVED} on RK3566/RK3568: marks a Reshape read only by an Einsum whose other operand is a constant weight (a grouped Linear, DeepFilterNet3's btgi,gih->btgh) for rules.grouped_linear_view_of_an_elementwise_result; attention's Einsums of two computed tensors (einsum_attention_pack: their heads' views on the NPU) are not such readers."""
    for view in [n for n in graph.nodes if n.op_type == "Reshape" and n.outputs]:
        readers = graph.consumers(view.outputs[0].name)
        if len(readers) != 1 or readers[0].op_type != "Einsum" or len(readers[0].inputs) != 2:
            continue
        einsum = readers[0]
        if einsum.inputs[0].name == view.outputs[0].name and _known(einsum.inputs[1]):
            graph.fuse([view], view.op_type, attributes={**_attributes_of(view), GROUPED_LINEAR_VIEW_ATTRIBUTE: 1})


# ---------------------------------------------------------------------------------------------
# A constant-first scale of an Add of two maps: folded only where the Add merges into a Conv.
# ---------------------------------------------------------------------------------------------

SCALE_OF_ADD_ATTRIBUTE = "rknn_scale_of_add"
SCALE_OF_ADD_KEPT = "kept"


@RULES.graph_pass("Mul", OBSERVED=TOOLKIT_OBSERVED)
def scale_of_an_add_of_two_maps(graph, chip):
    """{OBSERVED} keeps a * x, the constant a of one value first, in a float layer when x is an Add of two computed maps that is not a Conv's result plus that Conv's own input (VAN's layer scale of its attention's projection plus the block's normalised input); Conv(x) + x merges into one Conv, which the scale then folds into (int8).

    Measured on RK3588 and RK3566 (tests/forms_models.py mul_scale_pack_3: Conv(Relu(Conv(r))) + r
    scaled by 0.01, 1 ([C, 1, 1], [1, C, 1, 1]) or a scalar: float; varying values, or the constant
    second: int8; mul_scale_pack, mul_scale_pack_2: Conv(r) + r, 1x1 Conv, with or without a
    BatchNorm giving r: int8). Marks the Mul for rules.scalar_first_mul_before_an_add.
    """
    for mul in [n for n in graph.nodes if n.op_type == "Mul" and len(n.inputs) == 2]:
        x = mul.inputs[1]
        add = graph.producer(x.name) if x.name else None
        if add is None or add.op_type != "Add" or len(add.inputs) != 2 or any(_known(t) for t in add.inputs) or not _known(mul.inputs[0]) or _known(x):
            continue
        producers = [graph.producer(t.name) if t.name else None for t in add.inputs]
        conv_of_other = any(p is not None and p.op_type == "Conv" and p.inputs and p.inputs[0].name == add.inputs[1 - i].name for i, p in enumerate(producers))
        if conv_of_other:
            continue
        attributes = {a.name: helper_value(a) for a in mul.proto.attribute}
        attributes[SCALE_OF_ADD_ATTRIBUTE] = SCALE_OF_ADD_KEPT
        graph.fuse([mul], "Mul", attributes=attributes)


# ---------------------------------------------------------------------------------------------
# Two Slices of one tensor rejoined by a Concat: the toolkit's Conv rewrite, which fails unless 4-D.
# ---------------------------------------------------------------------------------------------

SLICE_PAIR_ATTRIBUTE = "rknn_slice_pair_concat"
SLICE_PAIR_RANKS_FAILING = (2, 3, 5)  # measured; 4-D builds (rank 1 and 6 not measured)


def _slice_along(graph, tensor, axis: int):
    """The Slice writing `tensor` when it slices one run-time tensor along `axis` only (its axes
    given as a constant), else None."""
    node = graph.producer(tensor.name) if tensor.present else None
    if node is None or node.op_type != "Slice" or len(node.inputs) < 4 or _known(node.inputs[0]):
        return None
    axes = _ints(node.inputs[3])
    rank = node.inputs[0].rank
    if rank is None or axes is None or len(axes) != 1 or axes[0] % rank != axis:
        return None
    return node


@RULES.graph_pass("Concat", OBSERVED=TOOLKIT_OBSERVED, RANKS=SLICE_PAIR_RANKS_FAILING)
def slice_pair_concatenated(graph, chip):
    """{OBSERVED} rewrites a Concat of exactly two Slices of one run-time tensor, each along the Concat's axis, into one Conv (its pass fuse_slice_slice_concat_to_conv), and on a tensor of rank {RANKS} that rewrite fails: the build crashes (SIGSEGV, SIGFPE) or stops (onnxruntime refuses the Conv or a Transpose it adds, IndexError in _p_fuse_reshape_transpose). The pass marks the Concat for the rule slice_pair_concatenated.

    Measured with rknn-toolkit2 2.5.0 on RK3588 and RK3566 (2026-12-04, int8, opset 14; also fp16 on
    RK3588; tests/forms_models.py slice_pair_*, one model each): Concat(x[:, :1], x[:, :-1]) on
    [1, 32, 64] (transformers' Funnel shifts its tokens so before its mean pool), a roll, the two
    halves swapped, x[:, :1] and x[:, 1:] (the identity), a shift along the last axis, two step-2
    halves, a 2-D [32, 64] and a 5-D [1, 2, 16, 8, 8] shift: every one fails; a 4-D [1, 16, 8, 8]
    shift along axis 1 or 3 builds. Not rewritten, and built: three Slices, Slices of two different
    tensors, Slices along another axis than the Concat's.
    """
    for concat in [n for n in graph.nodes if n.op_type == "Concat" and len(n.inputs) == 2]:
        out = concat.outputs[0] if concat.outputs else None
        rank = out.rank if out is not None else None
        if rank not in SLICE_PAIR_RANKS_FAILING:
            continue
        axis = int(concat.attr("axis", 0)) % rank
        slices = [_slice_along(graph, t, axis) for t in concat.inputs]
        if any(s is None for s in slices) or slices[0] is slices[1] or slices[0].inputs[0].name != slices[1].inputs[0].name:
            continue
        attributes = {a.name: helper_value(a) for a in concat.proto.attribute}
        graph.fuse([concat], "Concat", attributes={**attributes, SLICE_PAIR_ATTRIBUTE: 1})


def _concat_axis(node) -> int | None:
    """A Concat's axis counted from the front, or None where its result's rank is unknown."""
    rank = node.outputs[0].rank if node.outputs else None
    return int(node.attr("axis", 0)) % rank if rank else None


def _joined_into_outer_concat(graph, concat) -> bool:
    """Whether `concat`'s result is read only by another Concat along the same axis (not a model output)."""
    out = concat.outputs[0] if concat.outputs else None
    outer = graph.only_consumer(out.name) if out is not None and out.name else None
    return outer is not None and outer.op_type == "Concat" and _concat_axis(concat) is not None and _concat_axis(outer) == _concat_axis(concat)


@RULES.graph_pass("Concat", OBSERVED=TOOLKIT_OBSERVED)
def concat_joined_into_outer_concat(graph, chip):
    """{OBSERVED} merges a Concat read only by another Concat along the same axis into that one (BROS's bbox sinusoid embedding: each coordinate's Sin and Cos Concatenated, the pairs Concatenated again): the inner Concat has no layer of its own and its layer table names it with the node that computes its first input, on the CPU where that node is (a Sin), the outer Concat placed as usual.

    Measured with rknn-toolkit2 2.5.0 on RK3588 and RK3566 (2026-12-06, int8, opset 13;
    tests/forms_models.py nested_concat_*): Concats of a Sin and a Cos [32, 32, 1, 1] on the last
    axis, read only by a Concat on the last axis: "fused (no layer of its own); runs with" the Sin,
    CPU; the outer Concat an NPU layer. The outer Concat along another axis (2): each inner Concat an
    NPU Concat layer; an inner Concat read by a Relu too: an NPU Concat layer (the others of the same
    model still merged); the pairs made by a Relu and a Neg: merged, with the Relu, NPU.
    """
    for concat in [n for n in graph.nodes if n.op_type == "Concat" and n.inputs]:
        if not _joined_into_outer_concat(graph, concat):
            continue
        producer = next((p for p in (graph.producer(t.name) for t in concat.inputs if t.name) if p is not None), None)
        if producer is not None:
            graph.fuse([producer, concat], producer.op_type, leader=producer, domain=producer.domain)


# ---------------------------------------------------------------------------------------------
# A Reshape that keeps its input's shape: no layer, reported with its producer (run last, so that
# the passes above still see the views they match).
# ---------------------------------------------------------------------------------------------


@RULES.graph_pass("Reshape", OBSERVED=TOOLKIT_OBSERVED)
def shape_keeping_reshape_removed(graph, chip):
    """{OBSERVED} removes a Reshape whose result has its input's shape (its pass remove_invalid_reshape: RT-DETR views its gathered anchors [1, 300, 4] as [1, -1, 4]): it has no layer of its own and its layer table names it with the node it reads (whether or not others read that node too), on the CPU where that node is.

    Measured with rknn-toolkit2 2.5.0 on RK3588 and RK3566 (2026-12-04, int8, opset 18;
    tests/forms_models.py same_shape_reshape_pack): after a Gather at run-time indices and after a
    Mish (CPU): CPU; after a Relu: NPU; each "fused by remove_invalid_reshape". A model output so
    viewed is left to the rules (unchanged_3d_output_view). The same where another node reads the
    producer's result too (2026-12-06, shared_same_shape_pack: a Conv's [1, 8, 16, 16] after a Mish or
    resized 16 -> 13 (CPU), a Sigmoid reading it beside the Reshape: CPU; after a Relu: NPU; fresh10's
    KeyNet views its resized image beside a Pad of it).
    """
    for node in [n for n in graph.nodes if n.op_type == "Reshape"]:
        # The model's own Reshape (data and shape), not a node an earlier pass placed as one (a
        # Transpose of a square [1, C, T] with C = T keeps its shape too: ViT's patch embedding).
        if len(node.inputs) != 2 or graph.groups.get(node.name, [node.name]) != [node.name] or any(a.name.startswith("rknn_") for a in node.proto.attribute):
            continue
        x = node.inputs[0]
        if not node.outputs or node.outputs[0].is_model_output or _known(x) or x.is_model_output:
            continue
        shape = _static_shape(x)
        if shape is None or shape != _static_shape(node.outputs[0]):
            continue
        producer = graph.producer(x.name)
        readers = [r for r in graph.consumers(x.name) if r.op_type != "Shape"]
        if producer is not None and len(producer.outputs) == 1 and node in readers:
            # Where others read the producer's result too (KeyNet's Pad beside its view), it stays an output of the group.
            outputs = list(node.outputs) if readers == [node] else list(producer.outputs) + list(node.outputs)
            graph.fuse([producer, node], producer.op_type, leader=producer, domain=producer.domain, inputs=list(producer.inputs), outputs=outputs)


# ---------------------------------------------------------------------------------------------
# RK3566/RK3568: a Reshape between two Transpose layers, and tokens made a batch of maps (TNT's
# F.unfold into pixel sets). Run after the passes above, which remove or merge the Transposes the
# toolkit does not keep as layers.
# ---------------------------------------------------------------------------------------------

RESHAPE_BETWEEN_TRANSPOSES_CHIPS = ("rk3566", "rk3568")
RESHAPE_BETWEEN_TRANSPOSES_ATTRIBUTE = "rknn_reshape_between_transpose_layers"
MAPS_BATCH_ATTRIBUTE = "rknn_tokens_made_a_batch_of_maps"


def _own_node(graph, node) -> bool:
    """The model's own node, not one an earlier pass fused or marked."""
    return graph.groups.get(node.name, [node.name]) == [node.name] and not any(a.name.startswith("rknn_") for a in node.proto.attribute)


def _transpose_layer(graph, node) -> bool:
    """A Transpose that no earlier pass removed, merged or marked: a Transpose layer, which RK3566
    runs on the CPU."""
    return node is not None and node.op_type == "Transpose" and _own_node(graph, node)


@RULES.graph_pass("Reshape", chips=RESHAPE_BETWEEN_TRANSPOSES_CHIPS, OBSERVED=TOOLKIT_OBSERVED)
def reshape_between_transpose_layers(graph, chip):
    """{OBSERVED} runs on the CPU a Reshape that a Transpose layer alone writes and another alone reads (TNT's F.unfold: a 6-D Transpose [0, 1, 2, 4, 3, 5], the Reshape to [1, C*k*k, T], the swap [0, 2, 1]), with them; a Reshape beside one Transpose layer only stays on the NPU.

    Measured with rknn-toolkit2 2.5.0 on RK3566 and RK3588 (tests/forms_models.py unfold_pack,
    2026-12-04): k = 16, 8 and 4 over 4x4 patches, between the two Transposes: CPU on RK3566;
    after the 6-D Transpose read by a Relu, or before the swap without the 6-D Transpose: NPU;
    RK3588 every node on the NPU.
    """
    for node in [n for n in graph.nodes if n.op_type == "Reshape"]:
        if len(node.inputs) != 2 or not node.outputs or not _own_node(graph, node):
            continue
        writer = graph.producer(node.inputs[0].name)
        readers = graph.consumers(node.outputs[0].name)
        if len(readers) == 1 and _transpose_layer(graph, writer) and _transpose_layer(graph, readers[0]) and graph.consumers(writer.outputs[0].name) == [node]:
            graph.fuse([node], "Reshape", attributes={RESHAPE_BETWEEN_TRANSPOSES_ATTRIBUTE: 1})


def _tokens_to_a_batch_of_maps(node) -> bool:
    """A Reshape [1, T, X] -> [B, C, h, w] with B > 1: tokens (or their swap) viewed as a batch of
    maps, TNT's pixel sets for its pixel Conv."""
    x, out = _static_shape(node.inputs[0]) if node.inputs else None, _static_shape(node.outputs[0]) if node.outputs else None
    return node.op_type == "Reshape" and x is not None and out is not None and len(x) == 3 and x[0] == 1 and len(out) == 4 and out[0] > 1


@RULES.graph_pass("Reshape", chips=RESHAPE_BETWEEN_TRANSPOSES_CHIPS, OBSERVED=TOOLKIT_OBSERVED)
def tokens_made_a_batch_of_maps(graph, chip):
    """{OBSERVED} runs on the CPU a Reshape that views a 3-D tensor of batch 1 as a batch of maps ([1, T, C*k*k] -> [T, C, k, k]: TNT's pixel sets, after the swap of its F.unfold), where a batch of token sets ([1, B*N, C] -> [B, N, C]) only split again stays on the NPU (batch_made_and_merged_by_reshapes).

    Measured with rknn-toolkit2 2.5.0 on RK3566 (2026-12-04): tests/forms_models.py unfold_pack
    (16 sets of 3 x 16 x 16, 8 x 8 and 4 x 4 after TNT's swap, and 4 sets of 3 x 16 x 64 without
    the 6-D Transpose, each read by a Conv) and a throwaway pack of tokens from a 3-D model input
    (16 sets of 3 x 8 x 8 and 4 of 8 x 4 x 4, after a swap or a Relu, read by a Conv or a Relu;
    docs/audit.md): CPU in every case; RK3588 NPU.
    """
    for node in [n for n in graph.nodes if n.op_type == "Reshape"]:
        if len(node.inputs) == 2 and _own_node(graph, node) and _tokens_to_a_batch_of_maps(node):
            graph.fuse([node], "Reshape", attributes={MAPS_BATCH_ATTRIBUTE: 1})


CONV_WEIGHT_KERNEL_ATTRIBUTE = "rknn_run_time_conv_weight_kernel"  # the weight's kernel elements (kh * kw)
CONV_WEIGHT_DEPTHWISE_ATTRIBUTE = "rknn_run_time_conv_weight_depthwise"  # 1: one input channel per group


@RULES.graph_pass("Conv", OBSERVED=TOOLKIT_OBSERVED)
def run_time_conv_weight_reshape(graph, chip):
    """{OBSERVED} runs on the CPU the Reshape that makes a Conv's weight from a run-time tensor (timm's CondConv: the routing's MatMul of its experts' weights, reshaped to [O, I/g, kh, kw]) when the kernel is larger than 1x1, and on RK3566 a depthwise 1x1 one too. The pass marks such a Reshape with its kernel's size for the rule run_time_conv_weight_reshape.

    Measured with rknn-toolkit2 2.5.0 on RK3588 and RK3566 (2026-12-05, int8; tests/forms_models.py
    condconv_*_pack: a Sigmoid of a [1, 4] input, MatMul [4, N], Reshape, Conv of an [1, C, 8, 8] map):
    depthwise 5x5 and 3x3 [32, 1, k, k] and dense 3x3 [16, 16, 3, 3]: the Reshape on the CPU on both;
    pointwise [16, 32, 1, 1]: NPU on both; depthwise 1x1 [32, 1, 1, 1]: NPU on RK3588, CPU on RK3566. A
    grouped 3x3 weight (4 groups of 8) crashed the toolkit (signal 11): not modelled.
    """
    for conv in [n for n in graph.nodes if n.op_type == "Conv"]:
        w = conv.inputs[1] if len(conv.inputs) > 1 else None
        reshape = graph.producer(w.name) if w is not None and w.present and not _known(w) else None
        shape = _static_shape(w) if reshape is not None and reshape.op_type == "Reshape" else None
        if shape is None or len(shape) != 4 or _known(reshape.inputs[0]):
            continue
        marks = {CONV_WEIGHT_KERNEL_ATTRIBUTE: int(shape[2] * shape[3]), CONV_WEIGHT_DEPTHWISE_ATTRIBUTE: int(shape[1] == 1 and int(conv.attr("group", 1) or 1) > 1)}
        graph.fuse([reshape], "Reshape", attributes=marks)


LINEAR_HEADS_INTO_CONCAT_ATTRIBUTE = "rknn_linear_heads_into_concat_tokens"  # T of the Linear's [N, T, C]
LINEAR_HEADS_CHIPS = ("rk3566", "rk3568")
LINEAR_HEADS_WALK = 3  # the Linear's bias Add, one more constant Add (merged into the bias) and an activation


def _linear_result(graph, tensor: str) -> bool:
    """Whether `tensor` is a Linear's result: a MatMul by a constant matrix, then at most its bias
    Add, another Add of a constant and an activation, one reader each (what the toolkit makes one
    Conv over [N, C, 1, T] of; an Add of two Linears is not one, nor a result read by more than the next step)."""
    for _ in range(LINEAR_HEADS_WALK + 1):
        node = graph.producer(tensor)
        if node is None or len(graph.consumers(tensor)) != 1:
            return False
        if _linear(node):
            return True
        if node.op_type not in ("Add", "Relu") or (node.op_type == "Add" and not _positionwise(node)):
            return False
        tensor = next(t for t in node.inputs if not _known(t)).name
    return False


@RULES.graph_pass("Reshape", OBSERVED=TOOLKIT_OBSERVED, chip_key=LINEAR_HEADS_CHIPS.__contains__)
def linear_heads_into_a_concat(graph, chip):
    """{OBSERVED} computes a Linear over tokens [N, T, C] as a Conv over [N, C, 1, T] and Transposes its result back; the Reshape that splits that result's last axis into heads [N, T, h, d] for a Concat along the head's values (Conditional DETR's cross-attention query: content and sine-position heads side by side) then runs on the CPU on RK3566/RK3568 when T is not a multiple of 8. The pass marks the Reshape with T for the rule unaligned_linear_heads_into_a_concat.

    Measured with rknn-toolkit2 2.5.0 on RK3566 and RK3588 (2026-12-05, int8; tests/forms_models.py
    linear_heads_concat_pack, 64 channels into 2 heads of 32): from a biased Linear read by the Reshape alone, one without
    its bias, one with a constant Added after its bias or a Relu after it, with 4, 12 and 20 tokens:
    CPU on RK3566; 8, 16, 24, 32 and 40 tokens: NPU; from an Add of two Linears (20 tokens), from a Linear that that Add reads too, or read
    by the heads' Transpose [0, 2, 1, 3] instead of a Concat: NPU. RK3588: NPU in every case. Measured,
    not modelled: read by an Add of two such heads, CPU on RK3566 at 16 tokens too; the Reshape that
    flattens the Concat back to [N, T, 2C] CPU at 20 tokens when a MatMul reads it, NPU when a Mul does.
    RK3568 is taken to behave as RK3566 (not measured).
    """
    for node in [n for n in graph.nodes if n.op_type == "Reshape"]:
        x, out = node.inputs[0] if node.inputs else None, node.outputs[0] if node.outputs else None
        tokens, heads = _static_shape(x), _static_shape(out)
        if not tokens or not heads or len(tokens) != 3 or len(heads) != 4 or heads[:2] != tokens[:2] or heads[2] < 2:
            continue
        readers = graph.consumers(out.name)
        if readers and all(r.op_type == "Concat" and int(r.attr("axis", 0)) in (-1, 3) for r in readers) and _linear_result(graph, x.name):
            graph.fuse([node], "Reshape", attributes={LINEAR_HEADS_INTO_CONCAT_ATTRIBUTE: int(tokens[1])})


@RULES.graph_pass("BatchNormalization", OBSERVED=TOOLKIT_OBSERVED)
def unit_batchnorm_dropped(graph, chip):
    """{OBSERVED} drops a BatchNormalization with an untrained BatchNorm's parameters (weight 1, bias 0, mean 0, variance 1; its pass remove_invalid_bn) and reports it with the nearest node that has a layer, the one writing its input first: the BatchNormalization runs where its producer runs (CLAP's HTSAT audio encoder: the spectrogram's BatchNorm2d over the mel bins, between two Transposes [0, 3, 2, 1] of the model's input, reported with the first, on the CPU of RK3566). Runs after the passes that give such a BatchNormalization a place of their own (a Conv's fold, LeViT's Linear, MaxViT's grid reverse).

    Measured with rknn-toolkit2 2.5.0 on RK3566 and RK3588 (2026-12-05, int8; tests/forms_models.py
    spectrogram_image_pack, HTSAT's front [1, 1, 512, 32]): with unit parameters the BatchNormalization
    has no layer and is reported with the input's Transpose (CPU on RK3566); with random parameters it
    is a BatchNormalization layer on the NPU. Measured, not modelled: with a Relu before the first
    Transpose, the two Transposes around a unit BatchNormalization cancel too and are reported with the
    Relu (NPU), where the audit keeps them as CPU Transpose layers on RK3566.
    """
    for bn in [n for n in graph.nodes if n.op_type == "BatchNormalization"]:
        producer = graph.producer(bn.inputs[0].name) if bn.inputs else None
        if producer is None or not _unit_batchnorm(bn):
            continue
        swaps = _swaps_around(graph, producer, bn)
        if swaps is None and producer.op_type != "Transpose":
            graph.fuse([producer, bn], producer.op_type, leader=producer, inputs=list(producer.inputs))
        if swaps is None:
            # A Transpose before it that an earlier pass left without its inverse (PatchTST's swaps around its
            # BatchNorm1d, merged into the MatMuls): the toolkit moves it and reports the BatchNormalization on
            # the NPU (fresh5's hf_patchtst on RK3566); it keeps its own place.
            continue
        # The swaps cancel once the BatchNormalization is gone: all three go with the node before them,
        # or, after a model input, with the one reader after them.
        first, back = swaps
        before = graph.producer(first.inputs[0].name)
        after = graph.only_consumer(back.outputs[0].name)
        if before is not None:
            graph.fuse([before, first, bn, back], before.op_type, leader=before, inputs=list(before.inputs))
        elif after is not None and after.inputs[0].name == back.outputs[0].name:
            graph.fuse([first, bn, back, after], after.op_type, leader=after, inputs=[first.inputs[0], *after.inputs[1:]])


def _swaps_around(graph, first, bn):
    """(first, back) where `first` is a Transpose read only by `bn` and `back` the one reader of
    `bn`, a Transpose that undoes it, else None."""
    back = graph.only_consumer(bn.outputs[0].name) if bn.outputs else None
    if first.op_type != "Transpose" or back is None or back.op_type != "Transpose" or graph.only_consumer(first.outputs[0].name) is not bn:
        return None
    p, q = _perm(first), _perm(back)
    if not p or not q or len(p) != len(q) or any(p[q[i]] != i for i in range(len(p))):
        return None
    return first, back


CHANNEL_VIEW_CHIPS = ("rk3566", "rk3568")
CHANNEL_VIEW_ATTRIBUTE = "rknn_channels_moved_by_a_view"  # "C_in -> C_out"


def _positions_kept(heads: tuple, fmap: tuple) -> bool:
    """Whether `heads` [N, h, d, P] and `fmap` [N, h*d, H, W] with H*W = P hold every position's
    values in the same order: attention's heads over a map's positions merged back into its
    channels (YOLO11's C2PSA, EfficientViT's LiteMLA, Visformer), which the pool's RK3566 verdicts
    have on the NPU."""
    return heads[1] * heads[2] == fmap[1] and heads[3] == fmap[2] * fmap[3]


def _keeps_channels(reader) -> bool:
    """A Conv, or a Transpose that leaves axis 1 where it is (not a channels-last view's swap to
    channels first, [0, 3, 1, 2], whose Reshape before it is tokens made a map: MViTv2)."""
    if reader.op_type == "Conv":
        return True
    perm = _perm(reader) if reader.op_type == "Transpose" else None
    return bool(perm) and len(perm) == 4 and perm[1] == 1


@RULES.graph_pass("Reshape", OBSERVED=TOOLKIT_OBSERVED, chip_key=CHANNEL_VIEW_CHIPS.__contains__)
def channels_moved_by_a_map_view(graph, chip):
    """{OBSERVED} runs on the CPU of RK3566/RK3568 a Reshape of a 4-D map [N, C, H, W] into another 4-D map with a different channel count, data moved between the channel axis and the rows (HTSAT's spectrogram folded into an image: [1, 1, 512, 32] -> [1, 4, 128, 32], the rows' swap, [1, 4, 32, 128] -> [1, 1, 128, 128], CLAP's audio encoder), when what reads it is a Conv or a Transpose that keeps the channel axis. Attention's heads over a map's positions merged into its channels ([N, h, d, H*W] -> [N, h*d, H, W]) are not such a view. The pass marks the Reshape for the rule channels_moved_by_a_map_view.

    Measured with rknn-toolkit2 2.5.0 on RK3566 and RK3588 (2026-12-05, int8; tests/forms_models.py
    channel_view_pack and spectrogram_image_unit_bn): channels merged into the rows (4 -> 1 from a
    Relu, a Conv or a CPU Transpose; 16 -> 1; 8 -> 2) and rows split into channels (1 -> 4 from a
    Relu; 8 -> 32 from a Conv), each read by a 1x1 Conv; HTSAT's fold [1, 1, 512, 32] -> [1, 4, 128, 32]
    from the input, read by the rows' swap [0, 1, 3, 2]: CPU on RK3566, NPU on RK3588. The pool's
    RK3566 verdicts have the heads' merge above on the NPU (YOLO11, EfficientViT, Visformer) and
    MViTv2's tokens viewed as a channels-last map [1, 1, T, C] -> [1, H, W, C] before its swap to
    channels first. RK3568 is taken to behave as RK3566 (not measured).
    """
    for node in [n for n in graph.nodes if n.op_type == "Reshape"]:
        if len(node.inputs) != 2 or not node.outputs or not _own_node(graph, node):
            continue
        x, out = _static_shape(node.inputs[0]), _static_shape(node.outputs[0])
        if not x or not out or len(x) != 4 or len(out) != 4 or x[0] != out[0] or x[1] == out[1]:
            continue
        if _positions_kept(x, out) or _positions_kept(out, x):
            continue
        readers = graph.consumers(node.outputs[0].name)
        if readers and all(_keeps_channels(r) for r in readers):
            graph.fuse([node], "Reshape", attributes={CHANNEL_VIEW_ATTRIBUTE: f"{x[1]} -> {out[1]}"})


LSTM_SQUEEZE_CHIPS = ("rk3566", "rk3568")
LSTM_SQUEEZE_ATTRIBUTE = "rknn_lstm_squeeze_before_a_moved_swap"
SWAP_MOVES_PAST = frozenset({"Elu", "Relu", "LeakyRelu", "Sigmoid", "Tanh", "HardSwish", "Clip"})  # single-input activations


def _only_data_reader(graph, node):
    """The one reader of `node`'s result besides Shape and Size nodes (computed at conversion:
    EnCodec's padding sizes read the padded map's Shape), or None."""
    out = node.outputs[0] if node.outputs else None
    readers = [r for r in graph.consumers(out.name) if r.op_type not in ("Shape", "Size")] if out is not None and not out.is_model_output else []
    return readers[0] if len(readers) == 1 else None


def _swap_back_into_a_pad(graph, add) -> bool:
    """Whether `add`'s result is read only by a Transpose whose result reaches a Pad through
    single-reader activations at most (the toolkit moves the Transpose past them and the Pad)."""
    swap = _only_data_reader(graph, add)
    node = swap if swap is not None and swap.op_type == "Transpose" else None
    while node is not None:
        node = _only_data_reader(graph, node)
        if node is not None and node.op_type == "Pad":
            return True
        if node is not None and node.op_type not in SWAP_MOVES_PAST:
            return False
    return False


@RULES.graph_pass("Squeeze", OBSERVED=TOOLKIT_OBSERVED, chip_key=LSTM_SQUEEZE_CHIPS.__contains__)
def lstm_squeeze_before_a_moved_swap(graph, chip):
    """{OBSERVED} makes a 4-D Add of an LSTM's squeezed output Y [T, B, H] and its input (EnCodec's residual LSTM: a Conv1d's map swapped [2, 0, 1] in, the sum swapped [1, 2, 0] back) when it moves the swap back past a Pad after it (swap_transpose_pad, through an Elu: swap_transpose_elu); the Squeeze then becomes a Transpose layer (unsqueeze_to_4d_add, convert_reshape_to_transpose), on the CPU of RK3566/RK3568. Without the Pad it merges into the exLSTM (fuse_two_reshape), on the NPU. The pass marks the Squeeze for the rule lstm_squeeze_before_a_moved_swap.

    Measured with rknn-toolkit2 2.5.0 (2026-12-05, int8; tests/forms_models.py lstm_squeeze_pad_pack; found
    on fresh4's hf_encodec/rk3566): a [1, 32, L] Conv1d map through that block (hidden 32), the swap
    back read by a Conv1d, or an Elu then a Conv1d: Squeeze on the NPU; read by a reflect Pad (L 500 and
    64), an Elu then a reflect or constant Pad, then a Conv1d: a CPU Transpose layer on RK3566, NPU on
    RK3588. RK3568 is taken to behave as RK3566 (not measured).
    """
    for squeeze in [n for n in graph.nodes if n.op_type == "Squeeze"]:
        lstm = graph.producer(squeeze.inputs[0].name) if squeeze.inputs else None
        add = graph.only_consumer(squeeze.outputs[0].name) if lstm is not None and lstm.op_type == "LSTM" else None
        if add is not None and add.op_type == "Add" and _swap_back_into_a_pad(graph, add):
            graph.fuse([squeeze], "Squeeze", attributes={LSTM_SQUEEZE_ATTRIBUTE: 1})


GRU_OUTPUT_VIEW_CHIPS = ("rk3588", "rk3566", "rk3568")
GRU_OUTPUT_VIEW_ATTRIBUTE = "rknn_gru_output_view"
GRU_BATCH_SWAP = [1, 0, 2]  # Y squeezed [T, B, H] back batch-first [B, T, H]


def _squeezed_gru_output(graph, squeeze):
    """Whether `squeeze` reads a GRU's sequence output Y (its first output) and no GRU reads it."""
    gru = graph.producer(squeeze.inputs[0].name) if squeeze.inputs else None
    if gru is None or gru.op_type != "GRU" or not gru.outputs or gru.outputs[0].name != squeeze.inputs[0].name:
        return False
    readers = graph.consumers(squeeze.outputs[0].name)
    return not (readers and all(r.op_type == "GRU" for r in readers))


def _batch_swap(node) -> bool:
    """Whether `node` is a Transpose [1, 0, 2], or the Reshape a unit-axes one became (transpose_of_unit_axes_is_a_reshape)."""
    if node.op_type == "Transpose":
        return _perm(node) == GRU_BATCH_SWAP
    swap = node.attr(UNIT_AXES_SWAP_ATTRIBUTE) if node.op_type == "Reshape" else None
    return swap is not None and [int(p) for p in swap] == GRU_BATCH_SWAP


@RULES.graph_pass("Squeeze", OBSERVED=TOOLKIT_OBSERVED)
def gru_output_view_merged(graph, chip):
    """{OBSERVED} merges the Squeeze of a GRU's sequence output Y [T, 1, B, H] into the GRU's exGRU layer (its pass fuse_two_reshape), and a Transpose [1, 0, 2] that alone reads it, swapping Y back batch-first (fuse_transpose_reshape): they run with the GRU, in float16 on the NPU even in an int8 build, where the audit would place them in int8. A Squeeze read by another GRU (stacked GRUs) keeps its own int8 place. The pass marks them for the rule gru_output_view_merged.

    Measured with rknn-toolkit2 2.5.0 (2026-12-05, int8; tests/forms_models.py gru_squeeze_swap_pack;
    found on fresh7's DeepFilterNet3 encoder and ERB decoder, /emb_gru/Squeeze and Transpose_1):
    features [1, 50, 32] swapped into a GRU (hidden 64), Y squeezed then swapped back and read by
    a MatMul, or the squeeze read by the MatMul straight: float on RK3588 and RK3566; two stacked
    GRUs: the first Squeeze (read by the second GRU) int8, the second's Squeeze and swap float; an
    LSTM in the GRU's place: all int8 (its exLSTM is). RK3568 is taken to behave as RK3566 (not measured).
    """
    for squeeze in [n for n in graph.nodes if n.op_type == "Squeeze"]:
        if not _squeezed_gru_output(graph, squeeze):
            continue
        swap = graph.only_consumer(squeeze.outputs[0].name)
        graph.fuse([squeeze], "Squeeze", attributes={GRU_OUTPUT_VIEW_ATTRIBUTE: 1})
        if swap is not None and _batch_swap(swap):
            graph.fuse([swap], swap.op_type, attributes={GRU_OUTPUT_VIEW_ATTRIBUTE: 1, **({"perm": GRU_BATCH_SWAP} if swap.op_type == "Transpose" else {})})


# ---------------------------------------------------------------------------------------------
# An Add of zeros that broadcasts its run-time operand: removed, and the shapes after it go wrong.
# ---------------------------------------------------------------------------------------------

BROADCAST_ZERO_ADD_ATTRIBUTE = "rknn_broadcast_zero_add"
# Readers measured to fail after such an Add (each then read by another node): elementwise, their
# result's shape taken from the removed Add alone (no other operand, or a scalar constant).
SHAPE_TAKING_READERS = ("Relu", "Sigmoid", "Add", "Sub", "Mul")


def _takes_its_shape_from(reader, tensor) -> bool:
    """Whether `reader` is elementwise and its result has `tensor`'s shape only because of `tensor`:
    its other operands are constants of one element."""
    if reader.op_type not in SHAPE_TAKING_READERS:
        return False
    others = [t for t in reader.inputs if t.name != tensor.name]
    return all(_known(t) and t.numel == 1 for t in others)


@RULES.graph_pass("Add", OBSERVED=TOOLKIT_OBSERVED, READERS=SHAPE_TAKING_READERS)
def broadcast_zero_add_marked(graph, chip):
    """{OBSERVED} removes an Add whose first operand is a constant of zeros even where that constant is larger than the run-time operand it broadcasts (its pass remove_invalid_add: Pix2Struct adds its attention mask [1, 1, 1, T] to a position bias of zeros [1, H, T, T]); a reader ({READERS}) whose result then has a shape of the removed Add's alone keeps the larger shape recorded, and where another node reads that result the toolkit's next fold_constant runs onnxruntime on the wrong shape and the build stops ("Got invalid dimensions for input"). The pass marks the Add for the rule broadcast_zero_add_removed.

    Measured with rknn-toolkit2 2.5.0 on RK3588 and RK3566 (2026-12-05, int8, opset 17;
    tests/forms_models.py broadcast_zero_add_*): zeros [1, 2, 8, 64] + Relu(x) [1, 1, 1, 64],
    then 1 - it, Relu, Sigmoid, * 2, - 1 or + 1, then an Add of a run-time [1, 2, 8, 64]: the build
    stops in fold_constant; Pix2Struct's mask chain (1 - it, Equal 1, Where) in its attention: the
    same. Builds: the Add read directly by an Add or Mul of a run-time [1, 2, 8, 64] or by a Sub
    from a [1, 2, 8, 64] constant, a Relu that is the model output, the zeros second (the Add is
    then kept), zeros of the run-time operand's shape, a bias not zero.
    """
    for add in [n for n in graph.nodes if n.op_type == "Add" and len(n.inputs) == 2]:
        zeros, x = add.inputs
        out = add.outputs[0] if add.outputs else None
        if out is None or not zeros.is_constant or not zeros.all_zero or _known(x) or x.dtype not in ("float32", "float16"):
            continue
        if not x.is_static or not out.is_static or x.numel >= out.numel:
            continue
        readers = [r for r in graph.consumers(out.name) if _takes_its_shape_from(r, out)]
        if any(graph.consumers(r.outputs[0].name) for r in readers if r.outputs):
            attributes = {a.name: helper_value(a) for a in add.proto.attribute}
            graph.fuse([add], "Add", attributes={**attributes, BROADCAST_ZERO_ADD_ATTRIBUTE: 1})


# ---------------------------------------------------------------------------------------------
# A group variance's epsilon Add read by a Sqrt (EvoNorm-S0): the 5-D statistic's layout layer.
# ---------------------------------------------------------------------------------------------

GROUP_VARIANCE_EPS_ATTRIBUTE = "rknn_group_variance_eps"  # its value: G, the groups


def _group_statistic_groups(t) -> int | None:
    """G where `t` is a run-time [1, G, 1, 1, 1] (a mean over a grouped map's axes 2 to 4, kept)."""
    shape = _static_shape(t) if t is not None and not _known(t) else None
    if shape is None or len(shape) != 5 or shape[0] != 1 or list(shape[2:]) != [1, 1, 1]:
        return None
    return shape[1]


def _readers_through_casts(graph, tensor, op_type: str) -> list:
    """The nodes of `op_type` reading `tensor`, directly or through Casts."""
    found, frontier = [], [tensor]
    for _ in range(3):
        nxt = []
        for t in frontier:
            for r in graph.consumers(t.name):
                if r.op_type == op_type:
                    found.append(r)
                elif r.op_type == "Cast" and r.outputs:
                    nxt.append(r.outputs[0])
        frontier = nxt
    return found


@RULES.graph_pass("Add", OBSERVED=TOOLKIT_OBSERVED)
def group_variance_epsilon_marked(graph, chip):
    """{OBSERVED} lays a run-time group statistic [1, G, 1, 1, 1] plus a constant epsilon, read by a Sqrt (which runs on the CPU), out with a layer its table names "Reshape" after the Add (timm's EvoNorm-S0: the group variance + 1e-3, Sqrt, Cast, Expand to [1, G, C/G, H, W], Reshape back, the divisor of x * sigmoid(v * x)). The pass marks the Add with G for the rule group_variance_epsilon_layout.

    Measured with rknn-toolkit2 2.5.0 (2026-12-05, int8, opset 13; tests/forms_models.py
    evonorm_groups_pack on RK3588 and RK3566, evonorm_threshold_pack on RK3588): the Add on the CPU of
    RK3566 at every G (2, 3, 16, 18, 32, 48); on RK3588 on the NPU at G 32, 48 and 64 (fresh7's RegNetZ:
    48, 96), on the CPU at G 2, 3, 8, 16, 18, 20, 24, 28, 31, 33 and 40, with 4 to 64 channels per
    group, with or without timm's Casts. The Reshape back: CPU on RK3566, NPU on RK3588
    (rules.expanded_groups_viewed_as_a_map).
    """
    for add in [n for n in graph.nodes if n.op_type == "Add" and len(n.inputs) == 2 and n.outputs]:
        eps = next((t for t in add.inputs if _known(t) and t.numel == 1), None)
        stat = next((t for t in add.inputs if t is not eps), None)
        groups = _group_statistic_groups(stat) if eps is not None else None
        sqrts = _readers_through_casts(graph, add.outputs[0], "Sqrt") if groups else []
        if not sqrts:
            continue
        attributes = {a.name: helper_value(a) for a in add.proto.attribute}
        graph.fuse([add], "Add", attributes={**attributes, GROUP_VARIANCE_EPS_ATTRIBUTE: int(groups)})


# The width D of each head's part that a rotary embedding rotates through an unflattened pair axis
# (V-JEPA 2: x.unflatten(-1, (-1, 2)), unbind, stack((-x2, x1), -1), flatten), given by the pass
# below to that part's two views (rules.pair_axis_views_of_a_rotation places them).
PAIR_AXIS_VIEW_ATTRIBUTE = "rknn_pair_axis_view_width"
PAIR_AXIS_LINKS = frozenset({"Squeeze", "Neg", "Unsqueeze"})  # what may lie between the Split and the Concat


def _pair_axis_unflatten(graph, split):
    """(the Reshape, D) when `split` divides in two halves the last axis of a Reshape of a 4-D
    [..., D] into 5-D [..., D/2, 2] (the pair axis of an interleaved rotation); else None."""
    view = graph.producer(split.inputs[0].name) if split.inputs else None
    if view is None or view.op_type != "Reshape" or len(split.outputs) != 2 or int(split.attr("axis", 0)) not in (-1, 4):
        return None
    before, after = _static_shape(view.inputs[0]), _static_shape(view.outputs[0])
    if not before or not after or len(before) != 4 or len(after) != 5 or after[-1] != 2 or tuple(after[:3]) != tuple(before[:3]) or after[3] * 2 != before[3]:
        return None
    return view, before[3]


def _pair_axis_stack(graph, tensor):
    """The Concat that reads `tensor` directly or through up to three of a Squeeze, a Neg or an
    Unsqueeze (each read by the next alone); else None."""
    for _ in range(4):
        nxt = graph.only_consumer(tensor.name)
        if nxt is None or nxt.op_type == "Concat":
            return nxt
        if nxt.op_type not in PAIR_AXIS_LINKS or not nxt.outputs:
            return None
        tensor = nxt.outputs[0]
    return None


def _pair_axis_flatten(graph, stack):
    """The one Reshape reading `stack`'s result, other readers being Shapes (torch's flatten(-2)
    reads the shape of what it flattens); else None."""
    readers = graph.consumers(stack.outputs[0].name) if stack.outputs else []
    views = [r for r in readers if r.op_type != "Shape"]
    return views[0] if len(views) == 1 and views[0].op_type == "Reshape" else None


@RULES.graph_pass("Split", OBSERVED=TOOLKIT_OBSERVED)
def pair_axis_of_a_rotation(graph, chip):
    """{OBSERVED} runs on the CPU, on some chips, the two views of an interleaved rotation written through a pair axis (V-JEPA 2's rotary positions: a Reshape of the 4-D [B, H, T, D] into [B, H, T, D/2, 2], a Split of that last axis, the halves Squeezed, one negated, Unsqueezed, Concatenated on the last axis and Reshaped back to [B, H, T, D]); the pass gives both Reshapes D for the rule pair_axis_views_of_a_rotation. The same two Reshapes with nothing between, and EVA-02's form (step-2 Slices stacked and Reshaped back), stay on the NPU.

    Measured on tests/forms_models.py rope_unflatten_pack (rknn-toolkit2 2.5.0, 2026-12-05).
    """
    for split in [n for n in graph.nodes if n.op_type == "Split"]:
        found = _pair_axis_unflatten(graph, split)
        if found is None:
            continue
        view, width = found
        stacks = [_pair_axis_stack(graph, half) for half in split.outputs]
        stack = stacks[0] if stacks[0] is not None and stacks[0] is stacks[1] and len(stacks[0].inputs) == 2 else None
        back = _pair_axis_flatten(graph, stack) if stack is not None and int(stack.attr("axis", 0)) in (-1, 4) else None
        if back is None or _static_shape(back.outputs[0]) != _static_shape(view.inputs[0]):
            continue
        for reshape in (view, back):
            graph.fuse([reshape], "Reshape", attributes={PAIR_AXIS_VIEW_ATTRIBUTE: int(width)})


# ---- h18-rkmisc: a 2-D Linear's result as the model output (openWakeWord's classifier head) ------------------------

# The attribute the pass below gives the last node of a Linear of a 2-D input that writes the model output
# (rules.unaligned_2d_model_output reads it: the layer that turns that output back to the caller's layout).
LINEAR_2D_OUTPUT_ATTRIBUTE = "rknn_linear_2d_output"
# The activations measured after such a Linear (the toolkit fuses each into the Linear's Conv layer).
LINEAR_2D_OUTPUT_ACTIVATIONS = frozenset({"Relu", "Sigmoid", "Tanh"})


def _linear_2d_output_tail(graph, matmul):
    """The activation ending a Linear of a 2-D input (the MatMul, its bias Add or none, then a Relu, Sigmoid or Tanh)
    when it writes a 2-D model output; None otherwise (the bias Add as the output is not modelled: docs/audit.md)."""
    shape = _static_shape(matmul.inputs[0])
    if shape is None or len(shape) != 2 or not _linear(matmul):
        return None
    nxt = graph.only_consumer(matmul.outputs[0].name)
    if nxt is not None and nxt.op_type == "Add" and len(nxt.inputs) == 2 and sum(_known(t) for t in nxt.inputs) == 1:
        nxt = graph.only_consumer(nxt.outputs[0].name)
    if nxt is None or nxt.op_type not in LINEAR_2D_OUTPUT_ACTIVATIONS:
        return None
    out = _static_shape(nxt.outputs[0])
    return nxt if nxt.outputs[0].is_model_output and out is not None and len(out) == 2 else None


@RULES.graph_pass("MatMul", chips=("rk3588", "rk3566", "rk3568"), OBSERVED=TOOLKIT_OBSERVED)
def linear_2d_output_views(graph, chip):
    """{OBSERVED} makes a MatMul of a 2-D input by constant weights, its bias Add and a Relu, Sigmoid or Tanh one Conv layer (ConvSigmoid) and, where that Linear's [N, C] result is the model output, names after its last node the Reshape layer that turns the output back to the caller's layout: placed as any 2-D output view (rules.unaligned_2d_model_output: on the CPU unless C fills the channel block).

    Measured with rknn-toolkit2 2.5.0 on RK3588 and RK3566 (2026-12-05, int8, opset 13; tests/forms_models.py
    linear_head_output_pack, openWakeWord's Dense + sigmoid head [1, 64] -> [1, 1]): the Sigmoid after MatMul and
    bias Add, "layer Reshape INT8", on the CPU for C = 1, 8, 24 on RK3588 and C = 1 on RK3566, on the NPU for
    C = 16, 32 (RK3566 also 8, 24); the same with a Relu or a Tanh, without the bias Add, after a Relu of the input
    or of a Linear of it (C = 1, 4: CPU on both). Not modelled (docs/audit.md): the bias Add as the output with no
    activation (CPU in the probes, NPU in fresh8's MTCNN O-Net and DNSMOS), a Linear of a Concat of model inputs.
    """
    for matmul in [n for n in graph.nodes if n.op_type == "MatMul"]:
        activation = _linear_2d_output_tail(graph, matmul)
        if activation is not None:
            graph.fuse([activation], "Reshape", attributes={LINEAR_2D_OUTPUT_ATTRIBUTE: 1})


# ---- h18-rkmisc: a bidirectional LSTM's directions squeezed apart (openWakeWord's hey_mycroft) --------------------

LSTM_DIRECTIONS_SPLIT_CHIPS = ("rk3566", "rk3568")
# The attribute the pass below gives each direction's Squeeze (rules.lstm_directions_split_apart reads it).
LSTM_DIRECTIONS_SPLIT_ATTRIBUTE = "rknn_lstm_directions_split_apart"


def _direction_squeeze(graph, squeeze):
    """The LSTM whose sequence output Y [T, 2, B, H] `squeeze` reads one direction of: a Slice along the directions
    axis, then this Squeeze of that axis; else None."""
    axes = _ints(squeeze.inputs[1]) if len(squeeze.inputs) > 1 else squeeze.attr("axes")
    cut = _slice_along(graph, squeeze.inputs[0], 1) if squeeze.inputs and axes is not None and list(axes) == [1] else None
    lstm = graph.producer(cut.inputs[0].name) if cut is not None else None
    if lstm is None or lstm.op_type != "LSTM" or lstm.outputs[0].name != cut.inputs[0].name or lstm.attr("direction") != "bidirectional":
        return None
    return lstm


@RULES.graph_pass("Squeeze", chips=LSTM_DIRECTIONS_SPLIT_CHIPS, OBSERVED=TOOLKIT_OBSERVED)
def lstm_directions_split_apart(graph, chip):
    """{OBSERVED} merges a bidirectional LSTM's two directions, each Sliced from its output Y [T, 2, B, H] and Squeezed to [T, B, H], into the exLSTM layer when one Concat joins them along the features (fuse_two_reshape); read apart (Keras' Bidirectional(return_sequences=False) written by tf2onnx: each direction's own time step picked), the Squeezes become one Reshape layer of Y before a Split, which RK3566/RK3568 run on the CPU. The pass marks those Squeezes for the rule lstm_directions_split_apart.

    Measured with rknn-toolkit2 2.5.0 on RK3566 and RK3588 (2026-12-05, int8, opset 13; tests/forms_models.py
    lstm_directions_pack; found on fresh9's openWakeWord hey_mycroft): [1, 16, 24] through a Transpose [1, 0, 2]
    and a bidirectional LSTM of hidden 8, 16, 32 or 64, the forward direction's last step and the backward's first
    Concatenated [1, 2H]: both Squeezes "layer Reshape INT8 on CPU" on RK3566 (the Slices one Split layer, NPU),
    NPU on RK3588; the Squeezed directions Concatenated along the features: no layer of their own (NPU). A first run
    also Sliced only the forward direction's last step as the [1, 32] output: a Slice layer, the Squeezes one Reshape
    layer, on RK3566's CPU (not modelled, not kept in the pack). RK3568 is taken to behave as RK3566 (not measured).
    """
    by_lstm: dict = {}
    for squeeze in [n for n in graph.nodes if n.op_type == "Squeeze"]:
        lstm = _direction_squeeze(graph, squeeze)
        if lstm is not None:
            by_lstm.setdefault(lstm.name, []).append(squeeze)
    for squeezes in by_lstm.values():
        readers = {r.name: r for s in squeezes for r in graph.consumers(s.outputs[0].name)}
        joined = len(readers) == 1 and next(iter(readers.values())).op_type == "Concat"
        if len(squeezes) == 2 and not joined:
            for squeeze in squeezes:
                graph.fuse([squeeze], "Squeeze", attributes={LSTM_DIRECTIONS_SPLIT_ATTRIBUTE: 1})


# ---- h18-rkmisc: two scalings by constants in a row (openWakeWord's power_to_db: Log, * 10, / ln 10) ---------------

SCALINGS = frozenset({"Mul", "Div"})


def _scaling_by_one_value(node) -> bool:
    """A Mul or Div of a run-time tensor (first) by a one-value constant (second), the order the probes wrote."""
    return node.op_type in SCALINGS and len(node.inputs) == 2 and not _known(node.inputs[0]) and _known(node.inputs[1]) and node.inputs[1].numel == 1


@RULES.graph_pass("Mul", "Div", OBSERVED=TOOLKIT_OBSERVED)
def scaling_pair_merged(graph, chip):
    """{OBSERVED} merges two scalings by one-value constants in a row (Mul or Div, then Mul or Div: its pass fuse_two_mul) into one Mul layer named after the second; its layer table names the first with the node it reads (that node's only reader), on the CPU where that node is (torchlibrosa's power_to_db, 10 * log10(x), is Log, * 10, / ln 10, the Log on the CPU).

    Measured with rknn-toolkit2 2.5.0 on RK3588 and RK3566 (2026-12-05, int8, opset 13; tests/forms_models.py
    mel_forms_pack; fresh9's openWakeWord melspectrogram, Mul_19): after a Log (CPU), * 10 then / ln 10, * 10 then
    * ln 10, / 10 then * ln 10: the first on the CPU, the second a Mul layer on the NPU; after a Relu both on the NPU;
    * 10 then a Sub of a constant: a Mul layer on the NPU. Not measured: constants of more than one value, or first.
    """
    for node in [n for n in graph.nodes if n.op_type in SCALINGS]:
        reader = graph.only_consumer(node.outputs[0].name) if node.outputs else None
        if reader is not None and _scaling_by_one_value(node) and _scaling_by_one_value(reader):
            _named_with_the_node_it_reads(graph, node)



# ---- h18-rkmisc: FSMN's swap after a LayerNorm's Linear (the probes of the LayerNorm condition left its axis out) ------


def _reads_an_npu_layernorm(graph, linear) -> bool:
    """Whether `linear` reads a LayerNormalization that the toolkit makes an exNorm layer (axis and epsilon written, and
    no other norm of the model leaving either out: rules.layernorm_attribute_left_out). The toolkit then merges FSMN's
    swap of the Linear's tokens as after a Linear (_unit_axis_swap_merged): "fused by reduce_tp_in_mesh_backward",
    measured on tests/forms_models.py fsmn_layernorm_axis_pack (RK3566, rknn-toolkit2 2.5.0, 2026-12-05), a LayerNorm
    of the model input or of a Linear of it; with axis left out (fsmn_memory_pack's "ln", the norm on the CPU) the swap
    is a CPU Transpose layer."""
    norm = graph.producer(linear.inputs[0].name)
    return (norm is not None and norm.op_type == "LayerNormalization" and norm.has_attr("axis") and norm.has_attr("epsilon")
            and not norm.has_attr(LAYERNORM_DEFAULTED_ATTRIBUTE))


# ---- h18-rkmisc: an STFT's swaps taken into the mel Linear (openWakeWord's melspectrogram) --------------------------

# The swap of a Conv1d's result unsqueezed to [1, 1, C, L] into frames [1, 1, L, C].
STFT_SWAP = [0, 1, 3, 2]
# The element-wise nodes measured between the swaps and the Linear (the squares of real and imaginary parts, their sum).
STFT_SWAP_PASSES_THROUGH = frozenset({"Pow", "Add"})


def _stft_swap_into_a_linear(graph, swap) -> bool:
    """Whether `swap` turns an unsqueezed Conv1d result [1, 1, C, L] into frames that a Linear reads through at most
    MAX_POSITIONWISE_CHAIN single-reader Pows and Adds."""
    unsqueeze = graph.producer(swap.inputs[0].name) if swap.inputs else None
    shape = _static_shape(swap.inputs[0]) if swap.inputs else None
    if unsqueeze is None or unsqueeze.op_type != "Unsqueeze" or not shape or len(shape) != 4 or shape[:2] != (1, 1):
        return False
    conv = graph.producer(unsqueeze.inputs[0].name)
    if conv is None or conv.op_type != "Conv" or conv.outputs[0].rank != 3:
        return False
    node = swap
    for _ in range(MAX_POSITIONWISE_CHAIN):
        reader = graph.only_consumer(node.outputs[0].name)
        if reader is None:
            return False
        if _linear(reader) and reader.inputs[0].name == node.outputs[0].name:
            return True
        if reader.op_type not in STFT_SWAP_PASSES_THROUGH:
            return False
        node = reader
    return False


@RULES.graph_pass("Transpose", chips=SOFTMAX_ON_CPU_CHIPS, OBSERVED=TOOLKIT_OBSERVED)
def stft_swaps_taken_into_a_linear(graph, chip):
    """{OBSERVED} gives no layer to the swap [0, 1, 3, 2] of a Conv1d's result unsqueezed to [1, 1, C, L] when a Linear reads the frames through element-wise squares and their sum (an STFT's power before a mel filter bank: its pass reduce_tp_in_mesh_backward takes the swap into the Linear's layout); with the sum as the output the swap is a Transpose layer, on the CPU of RK3566/RK3568.

    Measured with rknn-toolkit2 2.5.0 on RK3566 and RK3588 (2026-12-05, int8, opset 13; tests/forms_models.py
    stft_swap_pack; fresh9's openWakeWord melspectrogram, Transpose_6 and Transpose_9): two Conv1d of [1, 1, 1600]
    (kernel 64, stride 16, C = 33 or 257), each Unsqueezed at 1 and swapped, squared (Pow 2), Added, a MatMul [C, 32]:
    both swaps "fused by reduce_tp_in_mesh_backward" on RK3566; the sum as the output: both on its CPU; RK3588 all NPU.
    Not measured: other element-wise nodes between, a Linear reading one swap alone.
    """
    for swap in [n for n in graph.nodes if n.op_type == "Transpose" and _perm(n) == STFT_SWAP]:
        if not swap.outputs[0].is_model_output and _stft_swap_into_a_linear(graph, swap):
            graph.eliminate(swap)


# Marks an Unsqueeze of a 2-D model input [1, F] to [1, F, 1] read by a Mul (an embedding of numeric features) with
# where its result goes: "matmul" (into a MatMul, straight or through Mul, Add and Concat) or "elementwise".
# The chips measured to run that Reshape on the CPU somewhere (RK3568 as RK3566, scripts/probe_rknn_chips.py);
# RK3576, RK3562 and RV1106 ran it on the NPU for every F (ft_embed_pack, _2, _3, _4).
FEATURES_EMBEDDED_ATTRIBUTE = "rknn_features_embedded"
FEATURES_EMBEDDED_CHIPS = ("rk3588", "rk3566", "rk3568")
# The nodes an embedding's tokens were measured to pass through on their way to the MatMul, and how far.
EMBEDDING_STEPS = ("Mul", "Add", "Concat")
EMBEDDING_STEPS_MAX = 4


@RULES.graph_pass("Unsqueeze", chips=FEATURES_EMBEDDED_CHIPS, OBSERVED=TOOLKIT_OBSERVED)
def features_unsqueezed_for_an_embedding(graph, chip):
    """{OBSERVED} converts a 2-D model input [1, F] unsqueezed to [1, F, 1] and multiplied by a weight [F, D] (FT-Transformer's numeric feature embedding) with a Reshape layer named after the Unsqueeze, on the NPU or the CPU by F and by where the tokens go: into a MatMul (attention's projections) or not. The pass marks the Unsqueeze for rules.features_embedding_input_layout.

    Measured with rknn-toolkit2 2.5.0 (2026-12-06, tests/forms_models.py ft_embed_pack, _2, _3, _4).
    """
    for node in [n for n in graph.nodes if n.op_type == "Unsqueeze"]:
        x = node.inputs[0] if node.inputs else None
        if x is None or not x.is_graph_input or not _own_node(graph, node):
            continue
        shape, out = _static_shape(x), _static_shape(node.outputs[0])
        reader = graph.only_consumer(node.outputs[0].name)
        if shape is None or len(shape) != 2 or out != (shape[0], shape[1], 1) or reader is None or reader.op_type != "Mul":
            continue
        attributes = {FEATURES_EMBEDDED_ATTRIBUTE: "matmul" if _tokens_reach_a_matmul(graph, reader) else "elementwise"}
        graph.fuse([node], node.op_type, leader=node, attributes=attributes)


def _tokens_reach_a_matmul(graph, node) -> bool:
    """Whether `node`'s result reaches a MatMul through single readers among EMBEDDING_STEPS (a few steps)."""
    for _ in range(EMBEDDING_STEPS_MAX):
        readers = graph.consumers(node.outputs[0].name) if node.outputs else []
        if any(r.op_type == "MatMul" for r in readers):
            return True
        if len(readers) != 1 or readers[0].op_type not in EMBEDDING_STEPS:
            return False
        node = readers[0]
    return False


# Marks the unit-axes swap [1, 0, 2] of a squeezed feature map into an LSTM's sequence (EasyOCR's CRNN).
# RK3568 measured as RK3566 (scripts/probe_rknn_chips.py); RK3576, RK3562 and RV1106 as RK3588 (NPU).
SQUEEZED_MAP_SWAP_ATTRIBUTE = "rknn_squeezed_map_swap"
SQUEEZED_MAP_SWAP_CHIPS = ("rk3566", "rk3568")
SEQUENCE_SWAP = [1, 0, 2]
# Element-wise nodes looked through back to what made the squeezed tensor, and how far: a MatMul or Gemm there made
# tokens, which the toolkit holds as such (DeepSpeech's Linear, Relu, Clip; the CRNN's second BiLSTM after a Linear).
TOKEN_MAKERS = ("MatMul", "Gemm")
ELEMENTWISE_BACK = ("Relu", "Clip", "Add", "Mul")
ELEMENTWISE_BACK_MAX = 4


@RULES.graph_pass("Transpose", chips=SQUEEZED_MAP_SWAP_CHIPS, OBSERVED=TOOLKIT_OBSERVED)
def swap_of_a_squeezed_map_into_an_lstm(graph, chip):
    """{OBSERVED} on RK3566 merges a Squeeze of a 4-D feature map into 3-D [1, T, C] and the swap [1, 0, 2] of its unit batch axis into the sequence [T, 1, C] of an LSTM (EasyOCR's CRNN) into one Reshape layer, named after the swap, on the CPU: the map's layout is not the sequence's. Where a MatMul or Gemm made the squeezed tensor (tokens), the swap stays a Reshape on the NPU. The pass marks the swap (a Reshape after passes.transpose_of_unit_axes_is_a_reshape) for rules.squeezed_map_swapped_into_an_lstm.

    Measured with rknn-toolkit2 2.5.0 (2026-12-06, tests/forms_models.py seq_swap_pack, seq_swap_pack_2).
    """
    for swap in [n for n in graph.nodes if n.op_type == "Reshape" and n.attr(UNIT_AXES_SWAP_ATTRIBUTE) is not None]:
        if list(swap.attr(UNIT_AXES_SWAP_ATTRIBUTE)) != SEQUENCE_SWAP or not swap.outputs:
            continue
        squeeze = graph.producer(swap.inputs[0].name) if swap.inputs else None
        readers = graph.consumers(swap.outputs[0].name)
        if squeeze is None or squeeze.op_type != "Squeeze" or not any(r.op_type == "LSTM" for r in readers):
            continue
        made = _static_shape(squeeze.inputs[0]) if squeeze.inputs else None
        if made is None or len(made) != 4 or _made_by_a_token_maker(graph, squeeze.inputs[0]):
            continue
        graph.fuse([swap], "Reshape", attributes={UNIT_AXES_SWAP_ATTRIBUTE: SEQUENCE_SWAP, SQUEEZED_MAP_SWAP_ATTRIBUTE: 1})


def _made_by_a_token_maker(graph, tensor) -> bool:
    """Whether a TOKEN_MAKERS node made `tensor`, straight or through ELEMENTWISE_BACK nodes (a few steps)."""
    for _ in range(ELEMENTWISE_BACK_MAX):
        maker = graph.producer(tensor.name)
        if maker is None or maker.op_type in TOKEN_MAKERS:
            return maker is not None
        if maker.op_type not in ELEMENTWISE_BACK or not maker.inputs:
            return False
        tensor = maker.inputs[0]
    return False
