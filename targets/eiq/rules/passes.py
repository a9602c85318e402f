"""eIQ graph passes: what onnx2tf does to the ONNX graph before its operators are converted.

They run before the rules (edgedeploy.audit.lowering), in the order declared here, on both
chips: the graph the rules place is the one onnx2tf converts. Measured with onnx2tf 1.29.24 and
its pinned onnxsim on the corpus models and ONNX's node tests (scripts/corpus/agreement.py,
scripts/eiq_node_agreement.py).
"""

from __future__ import annotations

from edgedeploy.targets.eiq.rules.documents import ONNX2TF_VERSION, ONNXSIM_VERSION, RULES

# onnxsim's own ONNX checker stops on a newer IR version ("Your model ir_version 11 is higher
# than the checker's (10)"), and its optimizer on a Constant node given by value_ints,
# value_float, ... instead of a `value` tensor ("required undefined attribute 'value'"); onnx2tf
# then converts the graph as it is (measured on ONNX 1.19's node tests).
ONNXSIM_MAX_IR_VERSION = 10


def _onnxsim_refuses(graph) -> str | None:
    for node in graph.nodes:
        if node.ir_version > ONNXSIM_MAX_IR_VERSION:
            return f"IR version {node.ir_version}"
        if node.op_type == "Constant" and not any(a.name == "value" for a in node.proto.attribute):
            return f"Constant '{node.name}' without a value tensor"
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
        # The Div keeps the Sqrt's result as its divisor, so it is still seen as x / Sqrt(v).
        graph.fuse([sqrt, div], "Div", leader=div, inputs=list(div.inputs), outputs=list(div.outputs))


# A ReduceMean whose MEAN onnx2tf writes in ONNX's own axis order (mean_after_an_add_in_onnx_order).
MEAN_IN_ONNX_ORDER_ATTRIBUTE = "onnx2tf_mean_in_onnx_order"
# Element-wise activations between the Add and the ReduceMean that keep the Add's order (measured).
ACTIVATIONS_AFTER_AN_ADD = ("Relu", "Sigmoid", "HardSwish", "Clip", "LeakyRelu", "Tanh")


def _add_of_run_time_tensors_behind(graph, tensor: str):
    """The Add of two run-time tensors that `tensor` comes from, through element-wise activations, or None."""
    node = graph.producer(tensor)
    while node is not None and node.op_type in ACTIVATIONS_AFTER_AN_ADD and node.inputs:
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
    axis 1 there is on the NPU. A Conv's result, Relu(Conv), Sub, Mul, Concat, an Add of a constant
    bias, a MaxPool or Conv after the Add, and GlobalAveragePool keep the channels-last MEAN (NPU).
    """
    for node in [n for n in graph.nodes if n.op_type == "ReduceMean"]:
        data = node.inputs[0] if node.inputs else None
        if data is None or data.rank != 4 or _add_of_run_time_tensors_behind(graph, data.name) is None:
            continue
        kept = {a.name: node.attr(a.name) for a in node.proto.attribute}
        graph.fuse([node], "ReduceMean", attributes={**kept, MEAN_IN_ONNX_ORDER_ATTRIBUTE: 1})
