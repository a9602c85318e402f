"""esp-ppq's graph passes and crash forms (targets/espdl/passes.py, rules.py), form by form.

Each case is a small model built here in one form that esp-ppq 1.3.12 was measured on, with what
esp-ppq did: converted it (and how it placed the node that matters) or stopped. The audit must
predict the same; where esp-ppq is installed, the last test runs it on every case and checks the
measured outcome still holds, so the table below is evidence, not a transcription.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

from edgedeploy.audit import Placement, audit_model
from edgedeploy.model import load_model
from edgedeploy.targets import find_chip
from tests.helpers import const, make_model, save, tensor

RNG = np.random.default_rng(0)
T, N, I, H = 5, 1, 4, 8  # sequence length, batch, input size, hidden size


def _w(name, *shape):
    return const(name, (RNG.standard_normal(shape) * 0.3).astype(np.float32))


def _bn_stats(prefix, channels):
    return [
        const(prefix + "s", (RNG.random(channels) + 0.5).astype(np.float32)),
        const(prefix + "b", RNG.standard_normal(channels).astype(np.float32)),
        const(prefix + "m", RNG.standard_normal(channels).astype(np.float32)),
        const(prefix + "v", (RNG.random(channels) + 0.5).astype(np.float32)),
    ]


def _bn(x, y, name="bn", prefix="g", outputs=None, **attrs):
    return helper.make_node("BatchNormalization", [x, prefix + "s", prefix + "b", prefix + "m", prefix + "v"], outputs or [y], name=name, **attrs)


def _relu(x, y, name="relu"):
    return helper.make_node("Relu", [x], [y], name=name)


def _conv(x, y, w="w", name="conv"):
    return helper.make_node("Conv", [x, w], [y], name=name, pads=[1, 1, 1, 1])


W8 = lambda: _w("w", 8, 3, 3, 3)  # noqa: E731
X4 = lambda: tensor("x", [1, 3, 8, 8])  # noqa: E731


def batchnorm_cases():
    yield "bn after conv: folded", make_model([_conv("x", "c"), _bn("c", "y")], [X4()], [tensor("y", [1, 8, 8, 8])], [W8(), *_bn_stats("g", 8)]), "bn", True, Placement.ACCELERATOR
    yield "bn after gemm: folded", make_model([helper.make_node("Gemm", ["x", "wg"], ["g1"], name="gemm"), _bn("g1", "y")], [tensor("x", [1, 10])], [tensor("y", [1, 6])], [_w("wg", 10, 6), *_bn_stats("g", 6)]), "bn", True, Placement.ACCELERATOR
    yield "bn after convtranspose: folded", make_model([helper.make_node("ConvTranspose", ["x", "wt"], ["c"], name="convt", strides=[2, 2]), _bn("c", "y")], [X4()], [tensor("y", [1, 4, 16, 16])], [_w("wt", 3, 4, 2, 2), *_bn_stats("g", 4)]), "bn", True, Placement.ACCELERATOR
    yield "bn with training outputs after conv: folded", make_model([_conv("x", "c"), _bn("c", None, outputs=["y", "rm", "rv"], training_mode=1)], [X4()], [tensor("y", [1, 8, 8, 8]), tensor("rm", [8]), tensor("rv", [8])], [W8(), *_bn_stats("g", 8)], opset=15), "bn", True, Placement.ACCELERATOR
    yield "bn after a conv read twice: a 1x1 depthwise conv", make_model([_conv("x", "c"), _bn("c", "b1"), helper.make_node("Add", ["c", "b1"], ["y"], name="add")], [X4()], [tensor("y", [1, 8, 8, 8])], [W8(), *_bn_stats("g", 8)]), "bn", True, Placement.ACCELERATOR
    yield "bn after maxpool, 4-D: a 1x1 depthwise conv", make_model([helper.make_node("MaxPool", ["x"], ["p"], name="pool", kernel_shape=[2, 2], strides=[2, 2]), _bn("p", "y")], [X4()], [tensor("y", [1, 3, 4, 4])], _bn_stats("g", 3)), "bn", True, Placement.ACCELERATOR
    yield "bn after relu, 3-D: the conv made of it fails", make_model([_relu("x", "r"), _bn("r", "y")], [tensor("x", [1, 6, 20])], [tensor("y", [1, 6, 20])], _bn_stats("g", 6)), "bn", False, Placement.UNSUPPORTED
    yield "bn after relu, 2-D: the conv made of it fails", make_model([_relu("x", "r"), _bn("r", "y")], [tensor("x", [1, 6])], [tensor("y", [1, 6])], _bn_stats("g", 6)), "bn", False, Placement.UNSUPPORTED
    yield "bn with run-time statistics", make_model([_relu("x", "r"), helper.make_node("BatchNormalization", ["r", "s", "b", "m", "v"], ["y"], name="bn")], [X4(), *(tensor(n, [3]) for n in "sbmv")], [tensor("y", [1, 3, 8, 8])]), "bn", False, Placement.UNSUPPORTED
    yield "bn after a conv with run-time weights", make_model([_conv("x", "c", w="wx"), _bn("c", "y")], [X4(), tensor("wx", [8, 3, 3, 3])], [tensor("y", [1, 8, 8, 8])], _bn_stats("g", 8)), "bn", False, Placement.UNSUPPORTED


def _dropout_model(inputs, outputs, inits=(), opset=13, chain=True, **attrs):
    """relu -> Dropout -> relu2 (or the Dropout alone), the Dropout named 'drop'."""
    ins = ["r" if chain else "x", *inputs]
    nodes = [helper.make_node("Dropout", ins, ["d" if chain else "y", *outputs], name="drop", **attrs)]
    graph_outputs = [tensor("y", [1, 3, 8, 8])]
    if chain:
        nodes = [_relu("x", "r"), *nodes, _relu("d", "y", "relu2")]
    extra_inputs = [tensor(i, []) for i in inputs if i.startswith("in_")]
    if "mask_used" in outputs:
        nodes.append(helper.make_node("Cast", ["mask_used"], ["mf"], name="cast", to=TensorProto.FLOAT))
        graph_outputs.append(tensor("mf", [1, 3, 8, 8]))
    return make_model(nodes, [X4(), *extra_inputs], graph_outputs, list(inits), opset=opset)


def dropout_cases():
    ratio0 = const("ratio", np.array(0.0, np.float32))
    yield "opset-13 dropout: removed", _dropout_model([], []), "drop", True, Placement.ACCELERATOR
    yield "opset-13 dropout, constant ratio: removed", _dropout_model(["ratio"], [], [ratio0]), "drop", True, Placement.ACCELERATOR
    yield "opset-13 dropout, mask unused: removed", _dropout_model([], ["mask"]), "drop", True, Placement.ACCELERATOR
    yield "opset-9 dropout, ratio 0: removed", _dropout_model([], [], opset=9, ratio=0.0), "drop", True, Placement.ACCELERATOR
    yield "opset-9 dropout, ratio 0.5: kept, no executor", _dropout_model([], [], opset=9, ratio=0.5), "drop", False, Placement.UNSUPPORTED
    yield "opset-9 dropout with its mask: kept", _dropout_model([], ["mask"], opset=9, ratio=0.5), "drop", False, Placement.UNSUPPORTED
    yield "opset-13 dropout, mask used: kept", _dropout_model([], ["mask_used"]), "drop", False, Placement.UNSUPPORTED
    yield "opset-13 dropout, training_mode true: kept", _dropout_model(["ratio", "tm"], [], [const("ratio", np.array(0.5, np.float32)), const("tm", np.array(True))]), "drop", False, Placement.UNSUPPORTED
    yield "opset-13 dropout, training_mode false: kept", _dropout_model(["ratio", "tm"], [], [const("ratio", np.array(0.5, np.float32)), const("tm", np.array(False))]), "drop", False, Placement.UNSUPPORTED
    yield "opset-13 dropout, run-time ratio: kept", _dropout_model(["in_ratio"], []), "drop", False, Placement.UNSUPPORTED
    yield "opset-13 dropout from model input to model output: kept", _dropout_model([], [], chain=False), "drop", False, Placement.UNSUPPORTED


def _rnn(kind, inputs, outputs, states=(), inits=(), graph_states=()):
    gates = {"GRU": 3, "LSTM": 4}[kind]
    weights = [_w("W", 1, gates * H, I), _w("R", 1, gates * H, H), _w("B", 1, 2 * gates * H)]
    attrs = {"linear_before_reset": 1} if kind == "GRU" else {}
    node = helper.make_node(kind, ["x", "W", "R", "B", *inputs], outputs, name="rnn", hidden_size=H, **attrs)
    shapes = {"y": [T, 1, N, H], "yh": [1, N, H], "yc": [1, N, H]}
    return make_model(
        [*states, node],
        [tensor("x", [T, N, I]), *(tensor(s, [1, N, H]) for s in graph_states)],
        [tensor(o, shapes[o]) for o in outputs if o],
        weights + list(inits),
    )


def _tf2onnx_zero_state():
    """tf2onnx's zero state of a Keras LSTM: Expand(0, [batch read from the input's Shape, H/2]), one
    Unsqueeze, the two halves concatenated (hey_mycroft's glue, per direction a block)."""
    return [
        helper.make_node("Shape", ["x"], ["xs"], name="shape"),
        helper.make_node("Cast", ["xs"], ["xs32"], name="cast_shape", to=TensorProto.INT32),
        helper.make_node("Slice", ["xs32", "b_start", "b_end", "b_axis"], ["batch"], name="batch"),
        helper.make_node("Concat", ["batch", "half_h"], ["packed"], name="packed", axis=0),
        helper.make_node("Cast", ["packed"], ["packed64"], name="cast_packed", to=TensorProto.INT64),
        helper.make_node("Expand", ["zero", "packed64"], ["z"], name="zeros"),
        helper.make_node("Unsqueeze", ["z", "u_axes"], ["u"], name="unsqueeze"),
        helper.make_node("Concat", ["u", "u"], ["h0"], name="join", axis=2),
    ]


def _tf2onnx_state_inits():
    i32 = lambda name, v: const(name, np.array(v, np.int32))  # noqa: E731
    return [i32("b_start", [1]), i32("b_end", [2]), i32("b_axis", [0]), i32("half_h", [H // 2]),
            const("zero", np.array(0.0, np.float32)), const("u_axes", np.array([0], np.int64))]


def recurrent_cases():
    zeros = lambda name: const(name, np.zeros((1, N, H), np.float32))  # noqa: E731
    expand = helper.make_node("Expand", ["h1", "shape"], ["h0"], name="expand")
    shape = const("shape", np.array([1, N, H], np.int64))
    yield "gru, initial state a model input: converts", _rnn("GRU", ["", "h0"], ["y", "yh"], graph_states=["h0"]), "rnn", True, Placement.ACCELERATOR
    yield "gru, non-zero constant initial state: converts", _rnn("GRU", ["", "h0"], ["y", "yh"], inits=[_w("h0", 1, N, H)]), "rnn", True, Placement.ACCELERATOR
    yield "gru, expanded non-zero initial state: converts", _rnn("GRU", ["", "h0"], ["y", "yh"], states=[expand], inits=[_w("h1", 1, 1, H), shape]), "rnn", True, Placement.ACCELERATOR
    yield "gru without initial state: crashes", _rnn("GRU", [], ["y", "yh"]), "rnn", False, Placement.UNSUPPORTED
    yield "gru, zero constant initial state: crashes", _rnn("GRU", ["", "h0"], ["y", "yh"], inits=[zeros("h0")]), "rnn", False, Placement.UNSUPPORTED
    yield "gru, expanded zero initial state (PyTorch's export): crashes", _rnn("GRU", ["", "h0"], ["y", "yh"], states=[expand], inits=[const("h1", np.zeros((1, 1, H), np.float32)), shape]), "rnn", False, Placement.UNSUPPORTED
    # PLCMOS's form (fresh8 pypi_plcmos): PyTorch slices one layer's state out of a stacked zero state,
    # ConstantOfShape([2 * layers, N, H]) then Slice per layer (h15-espeiq, esp-ppq 1.3.12).
    stacked = helper.make_node("ConstantOfShape", ["stack_shape"], ["hs"], name="zeros")
    sliced = helper.make_node("Slice", ["hs", "starts", "ends", "axes"], ["h0"], name="slice")
    slice_inits = [const("stack_shape", np.array([2, N, H], np.int64)), *(const(k, np.array([v], np.int64)) for k, v in (("starts", 1), ("ends", 2), ("axes", 0)))]
    yield "gru, zero initial state sliced from a stacked one (PLCMOS): crashes", _rnn("GRU", ["", "h0"], ["y", "yh"], states=[stacked, sliced], inits=slice_inits), "rnn", False, Placement.UNSUPPORTED
    yield "gru, non-zero initial state sliced from a stacked one: converts", _rnn("GRU", ["", "h0"], ["y", "yh"], states=[sliced], inits=[_w("hs", 2, N, H), *slice_inits[1:]]), "rnn", True, Placement.ACCELERATOR
    gathered = helper.make_node("Gather", ["hs", "layer"], ["h0"], name="gather", axis=0)
    yield "gru, zero initial state gathered from a stacked one: crashes", _rnn("GRU", ["", "h0"], ["y", "yh"], states=[stacked, gathered], inits=[slice_inits[0], const("layer", np.array([1], np.int64))]), "rnn", False, Placement.UNSUPPORTED
    # openWakeWord's hey_mycroft (fresh9, tf2onnx): each layer's zero state is the concatenation of one
    # zero block per direction, Concat(Unsqueeze(Expand(0, shape))) (h18-espeiq, esp-ppq 1.3.12).
    half = lambda name, value: const(name, np.full((1, N, H // 2), value, np.float32))  # noqa: E731
    joined = helper.make_node("Concat", ["h_a", "h_b"], ["h0"], name="join", axis=2)
    yield "lstm, zero states concatenated from zero blocks: crashes", _rnn("LSTM", ["", "h0", "h0"], ["y", "yh", "yc"], states=[joined], inits=[half("h_a", 0.0), half("h_b", 0.0)]), "rnn", False, Placement.UNSUPPORTED
    yield "lstm, states concatenated from a zero and a non-zero block: converts", _rnn("LSTM", ["", "h0", "h0"], ["y", "yh", "yc"], states=[joined], inits=[half("h_a", 0.0), half("h_b", 0.5)]), "rnn", True, Placement.ACCELERATOR
    yield "lstm, zero states concatenated from expanded zeros read at run time (tf2onnx): crashes", _rnn("LSTM", ["", "h0", "h0"], ["y", "yh", "yc"], states=_tf2onnx_zero_state(), inits=_tf2onnx_state_inits()), "rnn", False, Placement.UNSUPPORTED
    yield "gru without Y_h: crashes", _rnn("GRU", ["", "h0"], ["y"], graph_states=["h0"]), "rnn", False, Placement.UNSUPPORTED
    yield "lstm, states model inputs: converts", _rnn("LSTM", ["", "h0", "c0"], ["y", "yh", "yc"], graph_states=["h0", "c0"]), "rnn", True, Placement.ACCELERATOR
    yield "lstm, only initial_c given: converts", _rnn("LSTM", ["", "", "c0"], ["y", "yh", "yc"], graph_states=["c0"]), "rnn", True, Placement.ACCELERATOR
    yield "lstm, zero initial_h and initial_c an input: converts", _rnn("LSTM", ["", "h0", "c0"], ["y", "yh", "yc"], inits=[zeros("h0")], graph_states=["c0"]), "rnn", True, Placement.ACCELERATOR
    yield "lstm, Y and Y_h only: converts", _rnn("LSTM", ["", "h0", "c0"], ["y", "yh"], graph_states=["h0", "c0"]), "rnn", True, Placement.ACCELERATOR
    yield "lstm without initial states: crashes", _rnn("LSTM", [], ["y", "yh", "yc"]), "rnn", False, Placement.UNSUPPORTED
    yield "lstm, zero constant states: crashes", _rnn("LSTM", ["", "h0", "c0"], ["y", "yh", "yc"], inits=[zeros("h0"), zeros("c0")]), "rnn", False, Placement.UNSUPPORTED
    yield "lstm without Y_h: crashes", _rnn("LSTM", ["", "h0", "c0"], ["y"], graph_states=["h0", "c0"]), "rnn", False, Placement.UNSUPPORTED
    yield "lstm with Y_h skipped: fails", _rnn("LSTM", ["", "h0", "c0"], ["y", "", "yc"], graph_states=["h0", "c0"]), "rnn", False, Placement.UNSUPPORTED


def other_cases():
    yield "lrn: no executor", make_model([_relu("x", "r"), helper.make_node("LRN", ["r"], ["y"], name="lrn", size=5)], [tensor("x", [1, 8, 8, 8])], [tensor("y", [1, 8, 8, 8])]), "lrn", False, Placement.UNSUPPORTED


def _matmul_add(first, second, x=(1, I), h=(1, H), second_weight=True, extra=()):
    """x @ W1 (and h @ W2) then Add(first, second) as y: the run-time bias of a fused Gemm (h15-espeiq)."""
    nodes = [helper.make_node("MatMul", ["x", "W1"], ["a"], name="a")]
    if second_weight:
        nodes.append(helper.make_node("MatMul", ["h", "W2"], ["b"], name="b"))
    nodes += [*extra, helper.make_node("Add", [first, second], ["y"], name="y")]
    outputs = [tensor("y", [*x[:-1], H])] + [tensor(e.output[0], [*x[:-1], H]) for e in extra if e.input[0] == "a"]
    inits = [_w("W1", I, H), *([_w("W2", H, H)] if second_weight else []), *([_w("B", H)] if "B" in (first, second) else [])]
    reads_h = any("h" in n.input for n in nodes)
    return make_model(nodes, [tensor("x", list(x)), *([tensor("h", list(h))] if reads_h else [])], outputs, inits)


def gemm_bias_cases():
    relu = helper.make_node("Relu", ["h"], ["r"], name="r")
    yield "matmul + matmul, 2-D: a Gemm with a run-time bias, fails", _matmul_add("a", "b"), "y", False, Placement.UNSUPPORTED
    yield "matmul + matmul, second first, 2-D: fails", _matmul_add("b", "a"), "y", False, Placement.UNSUPPORTED
    yield "matmul + model input [H], 2-D: fails", _matmul_add("a", "h", h=(H,), second_weight=False), "y", False, Placement.UNSUPPORTED
    yield "matmul + constant bias: converts", _matmul_add("a", "B", second_weight=False), "y", True, Placement.ACCELERATOR
    yield "matmul + matmul, 3-D: converts", _matmul_add("a", "b", x=(1, 4, I), h=(1, 4, H)), "y", True, Placement.ACCELERATOR
    yield "relu + matmul, the product second: converts", _matmul_add("r", "a", second_weight=False, extra=[relu]), "y", True, Placement.ACCELERATOR
    also_read = helper.make_node("Relu", ["a"], ["z"], name="z")
    yield "matmul read twice + model input: converts", _matmul_add("a", "h", second_weight=False, extra=[also_read]), "y", True, Placement.ACCELERATOR


def attention_cases():
    """esp-ppq's Attention layer, which ESP-DL 3.3.9's runtime has no module for (h19-eiqesp: fresh10's AIMv2)."""
    from tests.forms_models import attention_layer_esp, masked_attention_esp

    yield "attention, head size 32: one Attention layer, no runtime module", attention_layer_esp("d32"), "softmax", False, Placement.UNSUPPORTED
    yield "attention, head size 128: expanded back to MatMul and Softmax, converts", attention_layer_esp("d128"), "softmax", True, Placement.ACCELERATOR
    yield "attention, 2-D q and k: not fused, converts", attention_layer_esp("rank2"), "softmax", True, Placement.ACCELERATOR
    yield "masked attention, scores through Reshapes that cancel: fused, no runtime module", masked_attention_esp("min_reshape"), "softmax", False, Placement.UNSUPPORTED
    yield "masked attention, a bias Added before the mask: not fused, converts", masked_attention_esp("1e9_alibi"), "softmax", True, Placement.ACCELERATOR


CASES = [*batchnorm_cases(), *dropout_cases(), *recurrent_cases(), *gemm_bias_cases(), *other_cases(), *attention_cases()]


def _audit(tmp_path, name, model, chip):
    target, _ = find_chip(chip)
    path = save(model, tmp_path / f"{abs(hash(name))}.onnx")
    return path, audit_model(load_model(path), target.rule_set(chip), "int8")


@pytest.mark.parametrize("chip", ["esp32s3", "esp32p4"])
@pytest.mark.parametrize("name,model,node,converts,placement", CASES, ids=[c[0] for c in CASES])
def test_the_audit_predicts_what_esp_ppq_does(tmp_path, chip, name, model, node, converts, placement):
    _, result = _audit(tmp_path, name, model, chip)
    placed = {n.node: n for n in result.nodes}
    assert placed[node].placement is placement, (name, placed[node].reason)
    unsupported = [n.node for n in result.nodes if n.placement is Placement.UNSUPPORTED]
    assert bool(unsupported) is not converts, (name, unsupported)
    if not converts:
        assert placed[node].reason and "esp-ppq" in placed[node].reason  # esp-ppq's own words, not a generic line


def test_lowered_nodes_say_what_became_of_them(tmp_path):
    cases = {c[0]: c for c in CASES}
    _, result = _audit(tmp_path, "a", cases["bn after conv: folded"][1], "esp32s3")
    bn = next(n for n in result.nodes if n.node == "bn")
    assert bn.lowered == "fused" and bn.fused_into == "conv" and bn.lowered_by == "fold_batchnorm_into_preceding_layer"
    _, result = _audit(tmp_path, "b", cases["bn after maxpool, 4-D: a 1x1 depthwise conv"][1], "esp32s3")
    bn = next(n for n in result.nodes if n.node == "bn")
    assert bn.lowered_by == "batchnorm_as_depthwise_conv" and bn.placement is Placement.ACCELERATOR
    _, result = _audit(tmp_path, "c", cases["opset-13 dropout: removed"][1], "esp32s3")
    drop = next(n for n in result.nodes if n.node == "drop")
    assert drop.lowered == "eliminated" and drop.folded and result.transitions == 0
    _, result = _audit(tmp_path, "d", cases["gru, expanded zero initial state (PyTorch's export): crashes"][1], "esp32s3")
    rnn = next(n for n in result.nodes if n.node == "rnn")
    assert rnn.lowered_by == "simplifier_drops_zero_initial_states" and "no initial state" in [v.value for v in rnn.violations]


@pytest.mark.toolchain("espdl")
def test_esp_ppq_still_does_what_was_measured(tmp_path):
    """esp-ppq itself on every case: it converts exactly the cases marked as converting."""
    target, _ = find_chip("esp32s3")
    paths = [save(model, tmp_path / f"case{i}.onnx") for i, (_, model, *_rest) in enumerate(CASES)]
    verdicts = target.toolchain_verdicts(paths, "esp32s3", tmp_path / "work", tmp_path / "toolchain.log")
    wrong = []
    for (name, _, node, converts, placement), verdict in zip(CASES, verdicts):
        if bool(verdict.failed) is converts:
            wrong.append(f"{name}: {'failed: ' + verdict.failed if verdict.failed else 'converted'}")
        elif converts and node in verdict.nodes and verdict.nodes[node].placement is not placement:
            wrong.append(f"{name}: {node} {verdict.nodes[node].placement.value}")
    assert not wrong, "\n".join(wrong)
