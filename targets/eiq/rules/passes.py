"""eIQ graph passes: what onnx2tf does to the ONNX graph before its operators are converted.

They run before the rules (edgedeploy.audit.lowering), in the order declared here, on both
chips: the graph the rules place is the one onnx2tf converts. Measured with onnx2tf 1.29.24 and
its pinned onnxsim on the corpus models and ONNX's node tests (scripts/corpus/agreement.py,
scripts/eiq_node_agreement.py).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from onnx import TensorProto

from edgedeploy.audit.rules import TensorView
from edgedeploy.targets.eiq.rules.documents import ONNX2TF_VERSION, ONNXSIM_VERSION, RULES

# onnxsim's own ONNX checker stops on a newer IR version ("Your model ir_version 11 is higher
# than the checker's (10)"), and its optimizer on a Constant node given by value_ints,
# value_float, ... instead of a `value` tensor ("required undefined attribute 'value'"); onnx2tf
# then converts the graph as it is (measured on ONNX 1.19's node tests).
ONNXSIM_MAX_IR_VERSION = 10


def _onnxsim_refuses(graph) -> str | None:
    matmuls, shape_read = [], False
    for node in graph.nodes:
        if node.ir_version > ONNXSIM_MAX_IR_VERSION:
            return f"IR version {node.ir_version}"
        if node.op_type == "Constant" and not any(a.name == "value" for a in node.proto.attribute):
            return f"Constant '{node.name}' without a value tensor"
        if node.op_type == "MatMul":
            matmuls.append(node)
        shape_read = shape_read or node.op_type == "Shape"
    return _fuse_qkv_crash(graph, matmuls, shape_read) if matmuls else None


# onnx-optimizer's fuse_qkv (in onnxsim 0.4.36's optimizer) matches a tensor read by exactly three MatMuls, as
# their first operand, each with a constant second operand of one shape and a result read once, and inserts a
# Concat after the tensor's producer: when the tensor is an initializer there is none, and onnxsim stops
# ("insertAfter: Assertion `!inGraphList() && n->inGraphList()` failed"). onnxsim makes a Constant an
# initializer and merges equal initializers into one, the merge after fuse_qkv in its pass order: equal
# Constants (Conditional DETR's zero queries) meet fuse_qkv in the optimizer's second round, which runs when
# shape inference learns something from the first (measured with a Shape of a static shape; without one, no
# second round and no crash).
QKV_READERS = 3


def _stored_constant_key(t):
    """Equal stored constants (initializers, Constant nodes) share a key; None for anything else."""
    if t is None or not t.is_constant or t.producer not in (None, "Constant") or t.is_graph_input or t.stored_elsewhere:
        return None
    value = t.value
    return None if value is None else (t.dtype, value.shape, value.tobytes())


def _fuse_qkv_crash(graph, matmuls: list, shape_read: bool) -> str | None:
    groups: dict = {}
    for node in matmuls:
        key = _stored_constant_key(node.input(0))
        if key is not None:
            groups.setdefault(key, []).append(node)
    for readers in groups.values():
        names = {n.input(0).name for n in readers}
        if len(readers) != QKV_READERS or (len(names) > 1 and not shape_read):
            continue
        if sum(len(graph.consumers(name)) for name in names) != QKV_READERS:
            continue  # the merged tensor has other readers
        weights = [n.input(1) for n in readers]
        if all(w is not None and w.is_constant and w.shape == weights[0].shape for w in weights) and all(
            graph.only_consumer(n.outputs[0].name) is not None for n in readers
        ):
            return f"fuse_qkv on the constant read by {', '.join(n.name for n in readers)}"
    return None


@RULES.graph_pass(CONVERTER=f"onnx2tf {ONNX2TF_VERSION}", SIMPLIFIER=f"onnxsim {ONNXSIM_VERSION}", MAX_IR_VERSION=ONNXSIM_MAX_IR_VERSION)
def onnxsim_computes_static_values(graph, chip):
    """{CONVERTER} runs {SIMPLIFIER} first, which computes every value that follows from constants and the static input shapes (the Slice ends of a detector's decoding head or of a channel split): the converter sees them as constants. {SIMPLIFIER} refuses models above IR version {MAX_IR_VERSION} and Constant nodes without a value tensor, and then computes nothing in advance (measured)."""
    if _onnxsim_refuses(graph):
        return
    for node in graph.nodes:
        computed = [t.name for t in node.inputs if t.present and t.foldable and not t.is_constant]
        if computed:
            graph.known_inputs(node, computed)


def _known(t) -> bool:
    return t is not None and t.present and (t.is_constant or t.foldable)


def _computed_branch(node) -> bool:
    """An If whose condition is known when the model is compiled and whose every result the static
    analysis computed from the branch that condition takes (static_values: a branch of constants)."""
    cond = node.input(0)
    return _known(cond) and cond.value is not None and all(o.value is not None for o in node.outputs if o.present)


@RULES.graph_pass("If", CONVERTER=f"onnx2tf {ONNX2TF_VERSION}", SIMPLIFIER=f"onnxsim {ONNXSIM_VERSION}")
def simplifier_removes_an_if_of_a_known_condition(graph, chip):
    """{SIMPLIFIER} replaces an If whose condition is a constant by the branch it takes (eliminate_if_with_const_cond) and computes that branch when it reads constants only; the If, and the nodes that only read its results and constants (a class token's Cast and Tile), leave no operator: {CONVERTER} never sees them.

    Measured with onnx2tf 1.29.24 + Vela 5.2.0 (tests/forms_models.py if_constant_condition_else:
    transformers' traced interpolation check, two Ifs on a constant false condition picking a class
    token and its repeat counts, Cast, Tile, Concat before the tokens: only the Concat, the tokens'
    Relu and the Sigmoid are reported, on the NPU; fresh6 ViViT). Not modelled: the same model on a
    true condition, whose then-branch expands to an empty shape, crashed onnxsim (signal 11) and
    onnx2tf then failed on the If ("KeyError" on an initializer the branch reads).
    """
    if _onnxsim_refuses(graph):
        return
    gone: set[str] = set()
    for node in graph.nodes:
        if node.op_type == "If" and _computed_branch(node):
            pass
        elif not node.inputs or any(o.is_model_output for o in node.outputs) or not any(t.name in gone for t in node.inputs if t.present):
            continue
        elif not all(t.name in gone or _known(t) for t in node.inputs if t.present):
            continue
        gone.update(o.name for o in node.outputs if o.present)
        graph.fold(node)


@RULES.graph_pass("Clip", CONVERTER=f"onnx2tf {ONNX2TF_VERSION}")
def clip_drops_a_run_time_floor(graph, chip):
    """{CONVERTER} writes a Clip whose min is computed at run time and whose max is a constant as tf.minimum(x, max) alone: the floor, whose value is unknown while the Keras model is built, is dropped, and the nodes that computed only the floor leave no operator (TensorFlow's dead-node removal): they run nowhere.

    Measured with onnx2tf 1.29.24 + Vela 5.2.0 (tests/forms_models.py clip_run_time_floor_*: a map
    [1, 1, 97, 32] floored at its own maximum less 80, openWakeWord's melspectrogram in fresh9): the
    floor ReduceMax (keepdims 0 or 1), Sub and Cast, or no Cast: the TFLite holds MUL and MINIMUM only,
    the Clip on the NPU; a constant floor: the Clip on the NPU; a Max of the map and the same run-time
    floor instead of the Clip keeps the ReduceMax and the Sub. Not measured: a run-time max, a Clip
    without max.
    """
    for node in [n for n in graph.nodes if n.op_type == "Clip" and len(n.inputs) == 3]:
        floor, top = node.inputs[1], node.inputs[2]
        if not floor.present or _known(floor) or not _known(top):
            continue
        graph.fuse([node], "Clip", inputs=[node.inputs[0], TensorView("", None, None, False), top], outputs=list(node.outputs))
        graph.fold_what_nothing_reads([floor])


# A Reshape that onnx2tf meets computing on constants, because onnxsim did not compute it first.
RESHAPE_OF_CONSTANTS_ATTRIBUTE = "onnx2tf_reshape_of_constants"


@RULES.graph_pass("MatMul", CONVERTER=f"onnx2tf {ONNX2TF_VERSION}", SIMPLIFIER=f"onnxsim {ONNXSIM_VERSION}")
def simplifier_crash_leaves_constant_reshapes(graph, chip):
    """When {SIMPLIFIER} stops on its fuse_qkv pass (three MatMuls of one constant, or of equal constants, by constant weights of one shape), {CONVERTER} converts the graph as it is: a Reshape of a rank-3+ tensor computed from constants is then marked (rule reshape_of_constants_unsimplified).

    Measured with onnxsim 0.4.36 and onnx2tf 1.29.24 (tests/forms_models.py qkv_equal_constants_*:
    three equal zero Constants [1, 16, 64] by weights [64, 64] plus bias, Conditional DETR's first
    decoder queries; fresh6 Conditional DETR).
    """
    if not (_onnxsim_refuses(graph) or "").startswith("fuse_qkv"):
        return
    for node in [n for n in graph.nodes if n.op_type == "Reshape"]:
        data = node.input(0)
        if data is None or not data.foldable or data.producer in (None, "Constant") or not data.is_static or data.rank < 3:
            continue
        kept = {a.name: node.attr(a.name) for a in node.proto.attribute}
        graph.fuse([node], "Reshape", attributes={**kept, RESHAPE_OF_CONSTANTS_ATTRIBUTE: 1})


# A Reshape of a 3-D Conv's result whose tokens a Concat reads: its layout TRANSPOSE stays in float.
CONV3D_TOKENS_INTO_A_CONCAT_ATTRIBUTE = "onnx2tf_conv3d_tokens_into_a_concat"


def _read_by_a_concat(graph, tensor: str) -> bool:
    """A Concat reads `tensor`, directly or through one Transpose."""
    for reader in graph.consumers(tensor):
        if reader.op_type == "Concat":
            return True
        if reader.op_type == "Transpose" and reader.outputs and any(r.op_type == "Concat" for r in graph.consumers(reader.outputs[0].name)):
            return True
    return False


@RULES.graph_pass("Reshape", CONVERTER=f"onnx2tf {ONNX2TF_VERSION}")
def conv3d_tokens_into_a_concat(graph, chip):
    """{CONVERTER} writes the Reshape of a 3-D Conv's result (CONV_3D, float) as a layout TRANSPOSE and a RESHAPE; when a Concat reads the tokens (directly or through a Transpose: ViViT's class token joined to its tubelet tokens), that TRANSPOSE stays in float (rule float_tokens_of_a_conv3d_into_a_concat).

    Measured with onnx2tf 1.29.24 + TensorFlow 2.19 + Vela 5.2.0 (tests/forms_models.py
    conv3d_tokens_imx_pack: [1, 3, 8, 32, 32] by 2x8x8, Reshape [1, 32, -1], Transposed into a Concat
    after a constant or a run-time token, or straight into a Concat: the Reshape float; Transposed into
    an Add, or read by a Relu, a Sigmoid or a Linear (conv3d_imx_pack): int8 on the NPU; the same after
    a 2-D Conv: int8). Why the quantiser keeps it in float there was not found.
    """
    for node in [n for n in graph.nodes if n.op_type == "Reshape"]:
        data = node.input(0)
        conv = graph.producer(data.name) if data is not None and data.present else None
        if conv is None or conv.op_type != "Conv" or conv.input(0) is None or conv.input(0).rank != 5:
            continue
        if node.outputs and _read_by_a_concat(graph, node.outputs[0].name):
            kept = {a.name: node.attr(a.name) for a in node.proto.attribute}
            graph.fuse([node], "Reshape", attributes={**kept, CONV3D_TOKENS_INTO_A_CONCAT_ATTRIBUTE: 1})


@RULES.graph_pass("Sqrt", CONVERTER=f"onnx2tf {ONNX2TF_VERSION}")
def sqrt_divisor_becomes_rsqrt(graph, chip):
    """{CONVERTER} rewrites x / Sqrt(v) as x * Rsqrt(v) (a written-out layer norm's last step): a Sqrt read only as a Div's divisor has no operator of its own and runs where that Div's RSQRT and MUL run.

    Measured on PP-OCRv4's recogniser's SVTR block form (tests/forms_models.py svtr_block): the
    Sqrt is on the NPU with the Div, where a Sqrt of its own would be TFLite SQRT, kept in float.
    """
    for sqrt in [n for n in graph.nodes if n.op_type == "Sqrt"]:
        out = sqrt.outputs[0] if sqrt.outputs else None
        div = graph.only_consumer(out.name) if out is not None and out.name else None
        if div is None or div.op_type != "Div" or len(div.inputs) != 2 or div.inputs[1].name != out.name or div.inputs[0].name == out.name:
            continue
        if _square_matmul_result_normalised(graph, div):
            # onnx2tf transposes the statistic between the SQRT and the DIV (a RESHAPE in TFLite): no RSQRT.
            graph.fuse([div], "Div", leader=div, inputs=[div.inputs[0], replace(div.inputs[1], producer="Reshape")], outputs=list(div.outputs))
            continue
        # The Div keeps the Sqrt's result as its divisor, so it is still seen as x / Sqrt(v).
        graph.fuse([sqrt, div], "Div", leader=div, inputs=list(div.inputs), outputs=list(div.outputs))


# How far back through Adds and constant scalings the MatMul results are looked for (a Conformer block's
# residual sums reach 4 deep); beyond it the tensor is taken as not one.
MATMUL_RESULT_DEPTH = 6


def _is_matmul_result(graph, tensor, depth: int = 0) -> bool:
    """`tensor` is made of MatMul results alone: a MatMul's, with a constant bias added or scaled by a constant
    (a half-step residual), or the sum of such tensors (a residual); a Conv's result anywhere in it is not."""
    node = graph.producer(tensor.name)
    if node is None or depth > MATMUL_RESULT_DEPTH:
        return False
    if node.op_type == "MatMul":
        return True
    if node.op_type not in ("Add", "Mul") or len(node.inputs) != 2:
        return False
    data = [t for t in node.inputs if not (t.is_constant or t.foldable)]
    if node.op_type == "Mul" and len(data) != 1:
        return False
    return bool(data) and all(_is_matmul_result(graph, t, depth + 1) for t in data)


def _square_matmul_result_normalised(graph, div) -> bool:
    """A written-out layer norm's Div, x - mean(x) over a MatMul's [1, N, N] result (h13-eiq probes, docs/eiq.md).

    onnx2tf 1.29.24 cannot tell the channels-last layout of a square rank-3 tensor from ONNX's and
    transposes the Sqrt's statistic ([1, N, 1] -> [1, 1, N], a RESHAPE) before the DIV: the
    converter's x / sqrt(v) -> x * rsqrt(v) rewrite no longer applies, SQRT and DIV stay float.
    """
    sub = graph.producer(div.inputs[0].name)
    if sub is None or sub.op_type != "Sub" or not sub.inputs:
        return False
    x = sub.inputs[0]
    if x.rank != 3 or not x.is_static or x.shape[1] != x.shape[2] or x.shape[1] < 2:
        return False
    return _is_matmul_result(graph, x)


# A ReduceMean whose MEAN onnx2tf writes in ONNX's own axis order (mean_after_an_add_in_onnx_order).
MEAN_IN_ONNX_ORDER_ATTRIBUTE = "onnx2tf_mean_in_onnx_order"
# Element-wise activations between the Add and the ReduceMean that keep the Add's order (measured).
ACTIVATIONS_AFTER_AN_ADD = ("Relu", "Sigmoid", "HardSwish", "Clip", "LeakyRelu", "Tanh")


def _keeps_the_add_order(graph, node) -> bool:
    """An element-wise step between the Add and the ReduceMean that keeps the Add's order (measured): a listed
    activation, a square x * x (Filter Response Norm's) or x ** 2, x less its own mean (a LayerNorm2d's
    variance: mean((x - mean(x)) ** 2)), or a Cast to float (a no-op on float data)."""
    if node.op_type in ACTIVATIONS_AFTER_AN_ADD:
        return True
    if node.op_type == "Mul" and len(node.inputs) == 2:
        return node.inputs[0].name == node.inputs[1].name
    if node.op_type == "Pow" and len(node.inputs) == 2:
        return node.inputs[1].is_constant or node.inputs[1].foldable
    if node.op_type == "Sub" and len(node.inputs) == 2:
        mean = graph.producer(node.inputs[1].name)
        return mean is not None and mean.op_type == "ReduceMean" and bool(mean.inputs) and mean.inputs[0].name == node.inputs[0].name
    return node.op_type == "Cast" and node.attr("to") == TensorProto.FLOAT and bool(node.inputs) and node.inputs[0].dtype == "float32"


def _add_of_run_time_tensors_behind(graph, tensor: str):
    """The Add of two run-time tensors that `tensor` comes from, through element-wise steps that keep its order, or None."""
    node = graph.producer(tensor)
    while node is not None and node.inputs and _keeps_the_add_order(graph, node):
        node = graph.producer(node.inputs[0].name)
    if node is None or node.op_type != "Add" or len(node.inputs) != 2:
        return None
    return node if not any(t.is_constant or t.foldable for t in node.inputs) else None


@RULES.graph_pass("ReduceMean", CONVERTER=f"onnx2tf {ONNX2TF_VERSION}", ACTIVATIONS=", ".join(ACTIVATIONS_AFTER_AN_ADD))
def mean_after_an_add_in_onnx_order(graph, chip):
    """{CONVERTER} gives the MEAN of a 4-D ReduceMean that reads an Add of two run-time tensors (directly or through {ACTIVATIONS}) the tensor in ONNX's NCHW order, a TRANSPOSE back before it, with the ONNX axes: the channels-last rules of the MEAN then apply to that order (rules mean_limits).

    Measured with onnx2tf 1.29.24 and Vela 5.2.0 (tests/forms_models.py mean_after_add_pack, 21
    branches on [1, 32, 8, 8]; the float TFLite shows ADD, TRANSPOSE [1, 8, 8, 32] -> [1, 32, 8, 8],
    MEAN): the spatial mean after such an Add is a depth reduction to Vela ("IFM 1, 32, 8, 8"), on
    the CPU, whether Relu, two Relus or another listed activation come between and whatever else
    reads the Add (RepGhostNet's squeeze-and-excitation, its Relu read by the Mul too); a mean over
    axis 1 there is on the NPU. The same through a square x * x and a Cast to float (Filter Response
    Norm's mean of x * x after a residual Add, timm's resnetv2_50d_frn; mean_after_add_square): CPU;
    the square of a Conv's result: NPU. A Conv's result, Relu(Conv), Sub, Mul, Concat, an Add of a constant
    bias, a MaxPool or Conv after the Add, and GlobalAveragePool keep the channels-last MEAN (NPU).
    NAFNet's LayerNorm2d (tests/forms_models.py layernorm2d_imx_pack, fresh10): after such an Add both
    channel means, of x and of (x - mean(x)) ** 2, are on the NPU (the ONNX order reaches the second
    through the Sub and the Pow), after a Conv both on the CPU; and on a map with C == H == W (8, 16
    and 32) both on the CPU after the Add too: the two orders have the same shape, and onnx2tf keeps
    the channels-last one.
    """
    for node in [n for n in graph.nodes if n.op_type == "ReduceMean"]:
        data = node.inputs[0] if node.inputs else None
        if data is None or data.rank != 4 or _add_of_run_time_tensors_behind(graph, data.name) is None:
            continue
        if data.is_static and data.shape[1] == data.shape[2] == data.shape[3]:
            continue  # C == H == W: both orders have one shape, and onnx2tf keeps the channels-last one
        kept = {a.name: node.attr(a.name) for a in node.proto.attribute}
        graph.fuse([node], "ReduceMean", attributes={**kept, MEAN_IN_ONNX_ORDER_ATTRIBUTE: 1})


# Shape-only steps between a reduction without keepdims and its reader: jax2tf writes keepdims as a
# Reshape back to the reduced rank, then a BroadcastTo (an Expand to the same shape).
RESHAPES_OF_A_STATISTIC = ("Reshape", "Expand")


def _shape_steps_from(graph, tensor: str, source_op: str) -> list:
    """The Reshape/Expand nodes between `tensor` and the `source_op` node that writes it through them (source first), or []."""
    chain = []
    node = graph.producer(tensor)
    while node is not None and node.op_type in RESHAPES_OF_A_STATISTIC and node.inputs and len(chain) < 2:
        chain.insert(0, node)
        node = graph.producer(node.inputs[0].name)
    if not chain or node is None or node.op_type != source_op:
        return []
    if any(graph.only_consumer(n.outputs[0].name) is None for n in [node, *chain[:-1]]):
        return []
    return [node, *chain]


@RULES.graph_pass("Div", CONVERTER=f"onnx2tf {ONNX2TF_VERSION}")
def softmax_sum_reshaped_back(graph, chip):
    """{CONVERTER} sees a softmax's sum reduced without keepdims and Reshaped (and Expanded) back to the reduced rank, as jax2tf writes keepdims, as the sum itself: exp(x) / sum(exp(x)) is still fused into one SOFTMAX (rule node_tflite_ops).

    Measured with onnx2tf 1.29.24 and Vela 5.2.0 (tests/forms_models.py jax_forms_pack sm_jax,
    magika's output: ReduceSum keepdims 0, Reshape [1, 1], Expand, Div: SOFTMAX on the NPU, like
    the keepdims spelling sm_keepdims; the Exp, ReduceSum, Reshape and Expand have no operator of
    their own).
    """
    for div in [n for n in graph.nodes if n.op_type == "Div"]:
        if len(div.inputs) != 2 or div.inputs[0].producer != "Exp":
            continue
        steps = _shape_steps_from(graph, div.inputs[1].name, "ReduceSum")
        if not steps:
            continue
        graph.fuse(steps, "ReduceSum", leader=steps[0], inputs=list(steps[0].inputs), outputs=list(steps[-1].outputs))
        # The divisor is now the sum's own result: the Div's view of it says so.
        divisor = replace(div.inputs[1], producer="ReduceSum")
        graph.fuse([div], "Div", leader=div, inputs=[div.inputs[0], divisor], outputs=list(div.outputs))


@RULES.graph_pass("Sqrt", CONVERTER=f"onnx2tf {ONNX2TF_VERSION}")
def reshaped_variance_runs_with_its_sqrt(graph, chip):
    """{CONVERTER} and TensorFlow's converter give a Reshape of a variance (jax2tf's keepdims, with its Expand) read by an Add of epsilon and a SQRT no operator of its own: TensorFlow names it only inside the ADD's and the SQRT's fused names, and it is reported with the SQRT, in float; the Add is an ADD of its own, int8 on the NPU.

    Measured with onnx2tf 1.29.24 and Vela 5.2.0 (tests/forms_models.py jax_forms_pack, magika's
    LayerNorm as jax2tf writes it): Reshape [1, 1, C] (with or without jax2tf's Expand to the same
    shape, which the simplifier removes: no operator) or [1, 1], Add of eps, Sqrt: the Reshape
    reported with the SQRT (float, on the CPU), the Add an int8 ADD on the NPU (read again on
    2026-12-05 with the verdict that places a node by the operators it leads, targets/eiq/vela.py;
    read before as run with the SQRT, TensorFlow writing the Add's name into the SQRT's).
    """
    for sqrt in [n for n in graph.nodes if n.op_type == "Sqrt"]:
        add = graph.producer(sqrt.inputs[0].name) if sqrt.inputs else None
        if add is None or add.op_type != "Add" or len(add.inputs) != 2 or graph.only_consumer(add.outputs[0].name) is None:
            continue
        data = [t for t in add.inputs if not (t.is_constant or t.foldable)]
        if len(data) != 1:
            continue
        node = graph.producer(data[0].name)
        expand = node if node is not None and node.op_type == "Expand" and _same_shape(node) and graph.only_consumer(node.outputs[0].name) is not None else None
        reshape = graph.producer(expand.inputs[0].name) if expand is not None else node
        if reshape is None or reshape.op_type != "Reshape" or graph.only_consumer(reshape.outputs[0].name) is None:
            continue
        if expand is not None:
            graph.eliminate(expand)  # an Expand to the shape it has: the simplifier removes it
        # The Add of epsilon is an ADD of its own (int8, on the NPU); only the Reshape, which has no
        # operator, is named inside the SQRT's fused name and placed as that SQRT (targets/eiq/vela.py).
        graph.fuse([reshape], "Sqrt", leader=reshape, inputs=[reshape.inputs[0]], outputs=list(reshape.outputs))


def _same_shape(node) -> bool:
    x, y = node.inputs[0] if node.inputs else None, node.outputs[0] if node.outputs else None
    return x is not None and y is not None and x.is_static and y.is_static and tuple(x.shape) == tuple(y.shape)


def _arange_classes(t) -> bool:
    """A constant [1, ..., 1, K] holding 0 .. K-1 (the classes a one-hot compares with)."""
    v = t.value if t is not None and t.is_constant else None
    if v is None or v.ndim == 0 or any(d != 1 for d in v.shape[:-1]):
        return False
    return bool(np.array_equal(v.reshape(-1), np.arange(v.shape[-1])))


@RULES.graph_pass("Equal", CONVERTER=f"onnx2tf {ONNX2TF_VERSION}")
def one_hot_of_an_equal(graph, chip):
    """TensorFlow's converter (after {CONVERTER}) turns integer indices [..., 1] compared with the classes 0..K-1 (Equal) and Cast to float into one ONE_HOT, which runs where the Equal runs; a MatMul by constant weights reading it becomes one EMBEDDING_LOOKUP with them, unless a constant bias is added to its result (then the MatMul is a FULLY_CONNECTED of its own).

    Measured with onnx2tf 1.29.24 and Vela 5.2.0 (tests/forms_models.py jax_forms_pack hot_*,
    one_hot_pack; magika's byte one-hot): ONE_HOT and EMBEDDING_LOOKUP on the CPU (not in Vela's
    list) for 17 and 257 classes, with or without jax2tf's Expand; with a bias the MatMul's
    FULLY_CONNECTED on the NPU.
    """
    for equal in [n for n in graph.nodes if n.op_type == "Equal"]:
        if len(equal.inputs) != 2 or not _arange_classes(equal.inputs[1]) or equal.inputs[0].dtype not in ("int32", "int64"):
            continue
        shape = equal.inputs[0].shape
        if not shape or shape[-1] != 1:
            continue
        cast = graph.only_consumer(equal.outputs[0].name)
        if cast is None or cast.op_type != "Cast" or cast.outputs[0].dtype not in ("float32", "float16"):
            continue
        members = [equal, cast]
        matmul = graph.only_consumer(cast.outputs[0].name)
        if matmul is not None and matmul.op_type == "MatMul" and len(matmul.inputs) == 2 and matmul.inputs[1].is_constant and not _biased(graph, matmul):
            members.append(matmul)
        graph.fuse(members, "Equal", leader=equal, inputs=list(equal.inputs), outputs=list(members[-1].outputs))


# An Equal and the Not that alone reads it, marked by not_of_an_equal (node_tflite_ops: NOT_EQUAL).
NOT_EQUAL_ATTRIBUTE = "onnx2tf_not_equal"


@RULES.graph_pass("Not", CONVERTER=f"onnx2tf {ONNX2TF_VERSION}")
def not_of_an_equal(graph, chip):
    """{CONVERTER} turns Not(Equal(a, b)), the Not the Equal's only reader, into one NOT_EQUAL, which TensorFlow's int8 quantiser keeps in float on float data (both nodes: "NOT_EQUAL computes in float", on the CPU).

    Measured with onnx2tf 1.29.24 and Vela 5.2.0 (2026-12-05; tests/forms_models.py not_equal_pack;
    fresh7's Pix2Struct, its patch mask sum != 0): the sum of a [1, 64, 16] input compared with 0 by an
    Equal then negated: NOT_EQUAL, float; the Equal alone: EQUAL, int8 on the CPU; Not(Greater(.)):
    GREATER and LOGICAL_NOT, int8 on the CPU.
    """
    for neg in [n for n in graph.nodes if n.op_type == "Not"]:
        equal = graph.producer(neg.inputs[0].name) if neg.inputs else None
        if equal is None or equal.op_type != "Equal" or graph.only_consumer(equal.outputs[0].name) is not neg or equal.outputs[0].is_model_output:
            continue
        graph.fuse([equal, neg], "Equal", leader=equal, attributes={NOT_EQUAL_ATTRIBUTE: 1}, inputs=list(equal.inputs), outputs=list(neg.outputs))


def _biased(graph, matmul) -> bool:
    add = graph.only_consumer(matmul.outputs[0].name)
    return add is not None and add.op_type == "Add" and any(t.is_constant for t in add.inputs)


# A Conv marked by input_padded_beside_a_concat (rules: padded_input_shared_with_a_concat).
PADDED_INPUT_BESIDE_A_CONCAT_ATTRIBUTE = "onnx2tf_padded_input_beside_a_concat"
# Activations onnx2tf fuses into the CONV_2D they follow: they run where it runs.
FUSED_ACTIVATIONS = ("Relu",)


def explicit_pad(conv) -> bool:
    """Whether onnx2tf writes the Conv's padding as a PAD of its own: pads that are neither none (VALID) nor TensorFlow's SAME for this size."""
    x = conv.inputs[0] if conv.inputs else None
    pads = list(conv.attr("pads", []) or [])
    if x is None or not x.is_static or not pads or not any(pads) or conv.attr("auto_pad", "NOTSET") != "NOTSET":
        return False
    spatial = list(x.shape[2:])
    kernel = list(conv.attr("kernel_shape", []) or [])
    strides = list(conv.attr("strides", []) or [1] * len(spatial))
    dilations = list(conv.attr("dilations", []) or [1] * len(spatial))
    if len(kernel) != len(spatial) or len(pads) != 2 * len(spatial):
        return False
    return pads != _same_pads(spatial, kernel, strides, dilations)


def _same_pads(spatial: list, kernel: list, strides: list, dilations: list) -> list:
    """TensorFlow's SAME padding for this size, in ONNX's pads order (all begins, then all ends)."""
    begins, ends = [], []
    for i, size in enumerate(spatial):
        out = -(-size // strides[i])
        total = max((out - 1) * strides[i] + (kernel[i] - 1) * dilations[i] + 1 - size, 0)
        begins.append(total // 2)
        ends.append(total - total // 2)
    return begins + ends


def padded_by_a_pad_node_as_same(graph, conv) -> bool:
    """An unpadded 2-D Conv strided by more than 3 that reads, alone, a Pad node of zeros over its spatial axes equal to TensorFlow's SAME for the Pad's input: TensorFlow's converter folds that PAD into the CONV_2D as SAME padding, as it does a Conv's own such pads."""
    strides = list(conv.attr("strides", []) or [])
    pad = graph.producer(conv.inputs[0].name) if conv.inputs else None
    if not strides or max(strides) <= VELA_MAX_PADDED_STRIDE or any(conv.attr("pads", []) or []) or pad is None or pad.op_type != "Pad":
        return False
    if conv.attr("auto_pad", "NOTSET") != "NOTSET" or int(conv.attr("group", 1)) != 1 or graph.only_consumer(pad.outputs[0].name) is not conv:
        return False
    x, amounts = pad.input(0), pad.input(1)
    value = pad.input(2)
    if x is None or not x.is_static or x.rank != 4 or amounts is None or amounts.value is None or pad.attr("mode", b"constant") not in (b"constant", "constant"):
        return False
    if value is not None and (value.value is None or float(np.asarray(value.value).reshape(-1)[0]) != 0.0):
        return False
    pads = [int(p) for p in amounts.value.reshape(-1)]
    if len(pads) != 8 or any(pads[i] for i in (0, 1, 4, 5)):
        return False
    kernel = list(conv.attr("kernel_shape", []) or [])
    dilations = list(conv.attr("dilations", []) or [1, 1])
    return len(kernel) == 2 and [pads[2], pads[3], pads[6], pads[7]] == _same_pads(list(x.shape[2:]), kernel, strides, dilations)


@RULES.graph_pass("Conv", QUANTISER="TensorFlow's int8 quantiser")
def input_padded_beside_a_concat(graph, chip):
    """A Conv whose padding becomes a PAD of its own, reading a model input that a Concat also reads (RAFT's context encoder on the first image, its feature encoder on both joined): {QUANTISER} sets that input's scale for one of the two and may leave the PAD, the CONV_2D and its fused Relu in float; which one it does changes with the tensors' names (the order it visits them): the rule marks the Conv and its Relu uncertain.

    Measured with onnx2tf 1.29.24 and Vela 5.2.0 (tests/forms_models.py two_images_*, RAFT's
    first layers cut from fresh3's tv_raft_small): a Conv 7x7/2 with pads 3 on [1, 3, 32, 32] and
    [1, 3, 128, 128], the image joined on the batch or the channels: float with the inputs named
    image1/image2 or concat_c_x1/x2, int8 on the NPU named raft_x1/x2 or x1/x2 (same graph, same
    weights); int8 whatever the names with a Conv 3x3/1 (SAME padding, no PAD) or without the Concat.
    """
    for conv in [n for n in graph.nodes if n.op_type == "Conv"]:
        x = conv.inputs[0] if conv.inputs else None
        if x is None or not x.is_graph_input or not explicit_pad(conv):
            continue
        if not any(c.op_type == "Concat" for c in graph.consumers(x.name)):
            continue
        members = [conv]
        after = graph.only_consumer(conv.outputs[0].name)
        if after is not None and after.op_type in FUSED_ACTIVATIONS:
            members.append(after)
        kept = {a.name: conv.attr(a.name) for a in conv.proto.attribute}
        graph.fuse(members, "Conv", leader=conv, attributes={**kept, PADDED_INPUT_BESIDE_A_CONCAT_ATTRIBUTE: 1}, inputs=list(conv.inputs), outputs=list(members[-1].outputs))


# A Conv strided by more than 3 whose padding TFLite keeps SAME (strided_conv_padding).
STRIDED_PADDING_ATTRIBUTE = "onnx2tf_strided_padding"
VELA_MAX_PADDED_STRIDE = 3


def strided_padding(conv) -> str | None:
    """How a Conv strided by more than 3 is padded once converted: "same" when the padding becomes TFLite's SAME, "pad" when a PAD of its own stays before a VALID CONV_2D, None when unpadded or strided by at most 3."""
    strides = list(conv.attr("strides", []) or [])
    pads = list(conv.attr("pads", []) or [])
    x = conv.inputs[0] if conv.inputs else None
    if not strides or max(strides) <= VELA_MAX_PADDED_STRIDE or not any(pads) or x is None or x.rank is None:
        return None
    if conv.attr("auto_pad", "NOTSET") != "NOTSET" or int(conv.attr("group", 1)) != 1:
        return None  # not measured
    # onnx2tf pads a strided Conv with a PAD of its own; TensorFlow's converter folds a PAD equal to
    # SAME into a 2-D CONV_2D, but a 1-D Conv's PAD is before its EXPAND_DIMS (RESHAPE) and stays.
    if x.rank == 4 and not explicit_pad(conv):
        return "same"
    return "pad"


@RULES.graph_pass("Conv", CONVERTER=f"onnx2tf {ONNX2TF_VERSION}", MAX_STRIDE=VELA_MAX_PADDED_STRIDE)
def strided_conv_padding(graph, chip):
    """{CONVERTER} writes a padded Conv strided by more than {MAX_STRIDE} as a PAD and a VALID CONV_2D; TensorFlow's converter folds that PAD into a 2-D CONV_2D as SAME padding when the pads are SAME's (a Relu reading it fused in), and leaves it otherwise, and always before a 1-D Conv (its EXPAND_DIMS between): the rule strided_conv_padded places each form.

    Measured with onnx2tf 1.29.24 and Vela 5.2.0 (tests/forms_models.py strided_conv_imx_*):
    Conv 8x8/4 pads 2 on 32x32 and 1x8/4 pads 2 on 1x2000 become CONV_2D SAME, stride 4, with the
    Relu after fused (Vela: "Unsupported kernel stride", CPU); 8x8/4 pads 3, 7x7/4 pads 3, 11x11/4
    pads 2 and 4x4/4 pads 1 keep their PAD, and Vela stops ("Non-passthrough operation (Conv2D)
    could not run on NPU"), as for every padded 1-D Conv of stride 4 or 5 (DAC's 8/4 pads 2).
    Unpadded (VALID) stride 4 and 5, and stride 3 padded, run on the NPU. An unpadded Conv 512x1/4
    reading a Pad node of 254 above and below, SAME's for its size (CREPE's first layer,
    tall_kernel_conv_imx_k512_c128_pad): the same CONV_2D SAME, the Conv and its Relu on the CPU.
    """
    for conv in [n for n in graph.nodes if n.op_type == "Conv"]:
        form = strided_padding(conv) or ("same" if padded_by_a_pad_node_as_same(graph, conv) else None)
        if form is None:
            continue
        members = [conv]
        after = graph.only_consumer(conv.outputs[0].name) if form == "same" else None
        if after is not None and after.op_type in FUSED_ACTIVATIONS:
            members.append(after)
        kept = {a.name: conv.attr(a.name) for a in conv.proto.attribute}
        graph.fuse(members, "Conv", leader=conv, attributes={**kept, STRIDED_PADDING_ATTRIBUTE: form}, inputs=list(conv.inputs), outputs=list(members[-1].outputs))


def transpose_conv_stride_refused(node) -> tuple | None:
    """The (height, width) strides of a ConvTranspose that Vela's TRANSPOSE_CONV refuses, or None: it takes 1x1 and 2x2, and 2 along one axis alone when the input and the kernel are 1 wide across the other (a 1-D ConvTranspose is a 2-D one of height 1)."""
    x = node.inputs[0] if node.inputs else None
    strides = list(node.attr("strides", []) or [])
    kernel = list(node.attr("kernel_shape", []) or [])
    if x is None or not x.is_static or len(x.shape) not in (3, 4) or len(strides) != len(x.shape) - 2:
        return None
    if len(x.shape) == 3:
        sh, sw, ih, iw, kh, kw = 1, strides[0], 1, x.shape[2], 1, (kernel or [None])[0]
    else:
        (sh, sw), (ih, iw) = strides, x.shape[2:]
        kh, kw = (kernel + [None, None])[:2]
    if (sh, sw) in ((1, 1), (2, 2)):
        return None
    if (sh, sw) == (1, 2) and ih == 1 and kh == 1:
        return None
    if (sh, sw) == (2, 1) and iw == 1 and kw == 1:
        return None
    return (sh, sw)


def transpose_conv_size_refused(node) -> list | None:
    """The [axis, kernel, stride, output_padding] of each spatial axis of a ConvTranspose whose TRANSPOSE_CONV Vela refuses for its size, or None.

    onnx2tf writes the TRANSPOSE_CONV with VALID padding and its full output, (input - 1) * stride +
    kernel + output_padding, cropping the ONNX pads after it; Vela takes a VALID one only when that is
    input * stride + max(kernel - stride, 0). The input's size cancels out: the axis is refused when
    kernel + output_padding - stride differs from max(kernel - stride, 0), i.e. any output_padding
    when the kernel is at least the stride, or kernel + output_padding short of the stride.
    Dilated kernels and an explicit output_shape were not measured: None."""
    weight = node.input(1)
    kernel = list(node.attr("kernel_shape", []) or (weight.shape[2:] if weight is not None and weight.is_static else []))
    strides = list(node.attr("strides", []) or [1] * len(kernel))
    extra = list(node.attr("output_padding", []) or [0] * len(kernel))
    if not kernel or node.attr("output_shape") or any(d != 1 for d in node.attr("dilations", []) or []):
        return None
    if not len(kernel) == len(strides) == len(extra):
        return None
    refused = [[axis, k, s, o] for axis, (k, s, o) in enumerate(zip(kernel, strides, extra)) if k + o - s != max(k - s, 0)]
    return refused or None


# A ConvTranspose reading a source picked out of an unsqueezed product (rules.conversion.transpose_conv_of_a_misbroadcast_product).
UNSQUEEZED_PRODUCT_ATTRIBUTE = "onnx2tf_transpose_conv_of_an_unsqueezed_product"


def _unsqueezed_at_axis_0(graph, t, through_concat: bool = True) -> bool:
    """`t` is an Unsqueeze at axis 0 (SepFormer's stack of sources), or a Concat on axis 0 of such."""
    node = graph.producer(t.name) if t is not None and t.name else None
    if node is not None and node.op_type == "Concat" and through_concat and int(node.attr("axis", 0)) == 0:
        return bool(node.inputs) and all(_unsqueezed_at_axis_0(graph, i, through_concat=False) for i in node.inputs)
    return node is not None and node.op_type == "Unsqueeze" and _unsqueeze_axes(node) == [0]


@RULES.graph_pass("ConvTranspose", CONVERTER=f"onnx2tf {ONNX2TF_VERSION}")
def transpose_conv_of_an_unsqueezed_product(graph, chip):
    """{CONVERTER} stops on a ConvTranspose reading, through a Gather on axis 0, a Mul of a tensor Unsqueezed at axis 0 (or a Concat on axis 0 of such) by masks (SepFormer's decoder: each source is the encoded mixture times its mask): the Mul broadcasts its two operands, held in different layouts, into a wrong shape, which the ConvTranspose, its output shape fixed from ONNX's, refuses ("Dimensions must be equal"). The pass marks the ConvTranspose for the rule transpose_conv_of_a_misbroadcast_product.

    Measured with onnx2tf 1.29.24 (tests/forms_models.py source_decoder_imx_*, a 1-D Conv encoder of
    [1, 1, 800] to [1, 64, 99]): Unsqueeze at axis 0, two copies Concatenated, times masks (computed and
    Transposed as SepFormer's, Reshaped straight, or constant), a Gather and a 1-D ConvTranspose: fails;
    one copy times a constant mask: fails; without the Mul: converts; the same Mul read by a Conv or a
    Relu instead of the ConvTranspose: converts (a Conv of 64 channels takes the wrong shape too).
    """
    for convt in [n for n in graph.nodes if n.op_type == "ConvTranspose"]:
        gather = graph.producer(convt.inputs[0].name) if convt.inputs and convt.inputs[0].name else None
        if gather is None or gather.op_type != "Gather" or int(gather.attr("axis", 0)) != 0 or not gather.inputs:
            continue
        mul = graph.producer(gather.inputs[0].name)
        if mul is None or mul.op_type != "Mul" or not any(_unsqueezed_at_axis_0(graph, t) for t in mul.inputs):
            continue
        kept = {a.name: convt.attr(a.name) for a in convt.proto.attribute}
        graph.fuse([convt], "ConvTranspose", attributes={**kept, UNSQUEEZED_PRODUCT_ATTRIBUTE: 1})


@RULES.graph_pass("ConvTranspose", CONVERTER=f"onnx2tf {ONNX2TF_VERSION}")
def transpose_conv_activation(graph, chip):
    """TensorFlow's converter (after {CONVERTER}) fuses a Relu into the TRANSPOSE_CONV of an unpadded ConvTranspose it alone reads; where Vela leaves that TRANSPOSE_CONV on the CPU (its strides), the Relu goes with it. A padded ConvTranspose ends in a crop (STRIDED_SLICE), and the Relu after it is an operator of its own.

    Measured with onnx2tf 1.29.24 and Vela 5.2.0 (tests/forms_models.py transpose_conv_imx_*):
    1-D 4/4 and 2-D 4x4/4 and 1x8/4 without pads: the Relu on the CPU with the TRANSPOSE_CONV;
    1-D 8/4 pads 2 and 16/8 pads 4: the Relu on the NPU. Refused for its size (output_padding,
    transpose_conv_size_refused), unpadded 2x2/2 output_padding 1 and 1x1/2: the Relu on the CPU too.
    """
    for convt in [n for n in graph.nodes if n.op_type == "ConvTranspose"]:
        if any(convt.attr("pads", []) or []):
            continue
        if transpose_conv_stride_refused(convt) is None and transpose_conv_size_refused(convt) is None:
            continue
        after = graph.only_consumer(convt.outputs[0].name)
        if after is None or after.op_type not in FUSED_ACTIVATIONS:
            continue
        graph.fuse([convt, after], "ConvTranspose", leader=convt, inputs=list(convt.inputs), outputs=list(after.outputs))


# A Softmax whose scale Vela cannot represent (rule softmax_scale_overflow).
FLOAT_MIN_MASK_ATTRIBUTE = "onnx2tf_softmax_of_a_float_min_mask"
# The int8 input scale is the calibrated range / 255 and SOFTMAX's output scale 1 / 256: their
# ratio overflows float32 once the range passes float32's largest value * 255 / 256.
FLOAT32_MAX = float(np.finfo(np.float32).max)
OVERFLOWING_RANGE = FLOAT32_MAX * 255 / 256


# Masks are [1, 1, T, T] at most; larger constants (weights) are not read.
MAX_MASK_ELEMENTS = 1 << 20


def known_small_value(t):
    """The value of a tensor known when the model is compiled, when it is stored here and not large, else None."""
    if t is None or not (t.is_constant or t.foldable) or t.stored_elsewhere or (t.numel or 0) > MAX_MASK_ELEMENTS:
        return None
    return t.value


def _known_minimum(t) -> float | None:
    value = known_small_value(t)
    if value is None or value.size == 0 or value.dtype.kind != "f":
        return None
    return float(value.min())


# How far back the constants a mask is computed from are looked for (Where, Expand, ScatterND, Slice, ...).
MASK_DEPTH = 12


def _holds_float_min(graph, t, depth: int = MASK_DEPTH, seen: set | None = None) -> bool:
    """`t` is known when the model is compiled and holds float32's lowest value, or is computed from a constant that does."""
    seen = set() if seen is None else seen
    if t is None or not (t.is_constant or t.foldable) or t.name in seen:
        return False
    seen.add(t.name)  # a mask's computation is a graph: each tensor is looked at once
    low = _known_minimum(t)
    if low is not None:
        return low <= -OVERFLOWING_RANGE
    node = graph.producer(t.name)
    if node is None or depth == 0:
        return False
    inputs = [i for i in node.inputs if i.present]
    condition = known_small_value(node.inputs[0]) if node.op_type == "Where" and node.inputs else None
    if condition is not None and condition.size:
        # A condition known when compiled picks its branches: only those reach the mask.
        inputs = ([node.inputs[1]] if condition.any() else []) + ([node.inputs[2]] if not condition.all() else [])
    return any(_holds_float_min(graph, i, depth - 1, seen) for i in inputs)


# Steps that move or copy a mask's values without computing new ones: a mask computed at run time
# reaches its Add through them (Doge's: Unsqueeze, Expand, Reshape, Slice).
MASK_CARRIERS = ("Unsqueeze", "Squeeze", "Expand", "Reshape", "Slice", "Transpose", "Identity")


def _run_time_mask_picks_float_min(graph, t, depth: int = MASK_DEPTH) -> bool:
    """`t` is computed at run time by a Where whose known condition picks float32's lowest value somewhere (Doge's dynamic mask: the causal positions get it, the rest a run-time value), reached through steps that only move values."""
    node = graph.producer(t.name) if t is not None and t.name else None
    while node is not None and node.op_type in MASK_CARRIERS and node.inputs and depth > 0:
        node, depth = graph.producer(node.inputs[0].name), depth - 1
    if node is None or node.op_type != "Where" or len(node.inputs) < 3:
        return False
    condition = known_small_value(node.inputs[0])
    if condition is None or not condition.size:
        return False
    picks_then = bool(condition.any()) and _holds_float_min(graph, node.inputs[1])
    return picks_then or (not condition.all() and _holds_float_min(graph, node.inputs[2]))


@RULES.graph_pass("Softmax", QUANTISER="TensorFlow's int8 quantiser")
def softmax_of_a_float_min_mask(graph, chip):
    """A Softmax of scores plus a mask known when the model is compiled that holds float32's lowest value (transformers' causal mask, torch.finfo(float32).min): {QUANTISER} calibrates its input over that whole range, and the ratio of the input's scale to the output's (1/256) overflows float32: the pass marks it for the rule softmax_scale_overflow.

    Measured with onnx2tf 1.29.24 and Vela 5.2.0 (tests/forms_models.py softmax_mask_imx_pack, an
    upper-triangular mask added to q @ k^T): with -3.4028235e38 Vela stops ("SOFTMAX ... Does not
    have valid TFLite Semantics ... (IFM Scale / OFM Scale)=inf"); with -3e38, -1.7e38, -1e38 and
    -1e9 it compiles (SOFTMAX on the NPU). A mask computed at run time by a Where whose known
    condition picks float32's lowest value (fresh11's Doge; softmax_run_time_mask_imx_*: the causal
    triangle gets it, the rest a Sigmoid of the keys), directly or through an Unsqueeze, Expand,
    Reshape and Slice: stops the same; with -1e9, or a condition that never picks it: compiles.
    """
    for softmax in [n for n in graph.nodes if n.op_type == "Softmax"]:
        add = graph.producer(softmax.inputs[0].name) if softmax.inputs else None
        if add is None or add.op_type != "Add":
            continue
        if not any(_holds_float_min(graph, t) or _run_time_mask_picks_float_min(graph, t) for t in add.inputs):
            continue
        kept = {a.name: softmax.attr(a.name) for a in softmax.proto.attribute}
        graph.fuse([softmax], "Softmax", attributes={**kept, FLOAT_MIN_MASK_ATTRIBUTE: 1})


# A Conv reading a 3-D tensor given a channel axis by an Unsqueeze (rules.conversion.unsqueezed_channel_into_a_conv).
UNSQUEEZED_CHANNEL_ATTRIBUTE = "onnx2tf_conv_of_an_unsqueezed_3d_tensor"
# What may stand between the Unsqueeze and the Conv and still fail (measured: a Relu).
BETWEEN_UNSQUEEZE_AND_CONV = ("Relu",)


def _unsqueeze_axes(node) -> list[int] | None:
    axes = node.attr("axes")
    if axes is None and len(node.inputs) > 1 and node.inputs[1].present and (node.inputs[1].is_constant or node.inputs[1].foldable):
        value = node.inputs[1].value
        axes = None if value is None else value.reshape(-1).tolist()
    return None if axes is None else [int(a) for a in axes]


def _unsqueezed_3d_input(graph, conv):
    """The [N, A, B] tensor (A != B) an Unsqueeze at axis 1 made `conv`'s input, directly or through a Relu; else None."""
    x = conv.inputs[0] if conv.inputs else None
    producer = graph.producer(x.name) if x is not None and x.name else None
    if producer is not None and producer.op_type in BETWEEN_UNSQUEEZE_AND_CONV and producer.inputs:
        producer = graph.producer(producer.inputs[0].name)
    if producer is None or producer.op_type != "Unsqueeze" or _unsqueeze_axes(producer) not in ([1], [-3]):
        return None
    data = producer.inputs[0]
    shape = data.shape if data.is_static else None
    return shape if shape is not None and len(shape) == 3 and shape[1] != shape[2] else None


@RULES.graph_pass("Conv", CONVERTER=f"onnx2tf {ONNX2TF_VERSION}")
def conv_of_an_unsqueezed_3d_tensor(graph, chip):
    """{CONVERTER} holds a 3-D tensor [N, T, F] transposed, [N, F, T], and an Unsqueeze at axis 1 adds the new axis there ([N, 1, F, T]), which a Conv then reads as F channels of a 1 x F map instead of one channel of a T x F one: the conversion stops ("Depth of output ... is not a multiple of the number of groups"): the pass marks the Conv for the rule unsqueezed_channel_into_a_conv.

    Measured with onnx2tf 1.29.24 (tests/forms_models.py spectrogram_conv2d_*, 2026-12-05;
    Parakeet's subsampling, fresh5 hf_parakeet): [1, 100, 80] Unsqueezed at axis 1 into a 3x3 or a
    1x1 Conv, directly or through a Relu (before or after the Unsqueeze): fails; [1, 80, 100]: fails;
    [1, 64, 64] (the two axes alike), a Reshape to [1, 1, 100, 80] instead, or the Unsqueeze read by
    a Sigmoid: converts.
    """
    for conv in [n for n in graph.nodes if n.op_type == "Conv"]:
        shape = _unsqueezed_3d_input(graph, conv)
        if shape is not None:
            kept = {a.name: conv.attr(a.name) for a in conv.proto.attribute}
            graph.fuse([conv], "Conv", attributes={**kept, UNSQUEEZED_CHANNEL_ATTRIBUTE: list(shape)})


REDUCTIONS = ("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd")


def _axes(node, opset_input: int) -> list[int] | None:
    """A reduction's or an Unsqueeze's axes: the attribute, or the constant input at `opset_input`."""
    axes = node.attr("axes")
    if axes is None and len(node.inputs) > opset_input and _known(node.inputs[opset_input]):
        value = node.inputs[opset_input].value
        axes = None if value is None else value.reshape(-1).tolist()
    return None if axes is None else [int(a) for a in axes]


def _unsqueeze_puts_back_reduced_axes(reduce, unsqueeze) -> bool:
    """Whether `unsqueeze` adds back exactly the axes `reduce` removed (keepdims 0)."""
    x, out = reduce.inputs[0] if reduce.inputs else None, unsqueeze.outputs[0] if unsqueeze.outputs else None
    if x is None or out is None or x.rank is None or out.rank != x.rank or int(reduce.attr("keepdims", 1)) != 0:
        return False
    removed, added = _axes(reduce, 1), _axes(unsqueeze, 1)
    if removed is None or added is None:
        return False
    return sorted(a % x.rank for a in removed) == sorted(a % out.rank for a in added)


@RULES.graph_pass("Unsqueeze", SIMPLIFIER=f"onnxsim {ONNXSIM_VERSION}")
def reduction_and_unsqueeze_fused(graph, chip):
    """{SIMPLIFIER} fuses a reduction without keepdims and an Unsqueeze that adds the reduced axes back into one reduction that keeps them (its optimizer's fuse_consecutive_reduce_unsqueeze): the Unsqueeze leaves no operator (TabNet's sparsemax: its int64 support count [B] unsqueezed to [B, 1]).

    Measured with onnx2tf 1.29.24 + Vela 5.2.0 (2026-12-06, tests/forms_models.py reduced_unsqueeze_pack:
    the int64 count [4] of a [4, 16] and a float ReduceSum of a Relu, unsqueezed at -1: not reported; the
    int64 count unsqueezed at 0: CPU, as rules.integer_feature_map says; fresh10's TabNet).
    """
    if _onnxsim_refuses(graph):
        return
    for node in [n for n in graph.nodes if n.op_type == "Unsqueeze"]:
        reduce = graph.producer(node.inputs[0].name) if node.inputs else None
        if reduce is None or reduce.op_type not in REDUCTIONS or len(graph.consumers(reduce.outputs[0].name)) != 1:
            continue
        if _unsqueeze_puts_back_reduced_axes(reduce, node):
            graph.eliminate(node)
