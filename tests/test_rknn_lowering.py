"""rknn-toolkit2's own graph passes and its crash and refusal forms, as the RKNN audit models them.

Each test builds the small graph form a pass or rule describes (as the corpus models have it)
and checks the placement the toolkit gave it (rknn-toolkit2 2.5.0, read from its layer table;
the real models are in tests/test_corpus_agreement.py).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from edgedeploy.audit.engine import audit_model
from edgedeploy.audit.rules import Placement
from edgedeploy.model import load_model
from edgedeploy.targets.rknn import rules as R
from tests.helpers import const, make_model, save, tensor

CHIPS = ("rk3588", "rk3576", "rk3568", "rk3566", "rk3562", "rv1106")


def place(tmp_path: Path, model: onnx.ModelProto, chip: str, precision: str = "int8") -> dict:
    loaded = load_model(save(model, tmp_path / f"{chip}.onnx"), require_static=True)
    result = audit_model(loaded, R.rule_set(chip, precision=precision), precision)
    return {n.node: n for n in result.nodes}


def ints(name: str, values) -> onnx.TensorProto:
    return const(name, np.array(values, np.int64))


# --- crash and refusal forms -----------------------------------------------------------------


def gru_model(y_used: bool) -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    hidden, features, steps = 8, 4, 5
    inits = [
        const("W", rng.standard_normal((1, 3 * hidden, features)).astype(np.float32)),
        const("R", rng.standard_normal((1, 3 * hidden, hidden)).astype(np.float32)),
        const("B", np.zeros((1, 6 * hidden), np.float32)),
        ints("axes", [0]),
    ]
    nodes = [
        helper.make_node("GRU", ["x", "W", "R", "B"], ["Y", "Y_h"], name="gru", hidden_size=hidden),
        helper.make_node("Squeeze", ["Y_h", "axes"], ["y"], name="squeeze"),
    ]
    outputs = [tensor("y", [1, hidden])] + ([tensor("Y", [steps, 1, 1, hidden])] if y_used else [])
    return make_model(nodes, [tensor("x", [steps, 1, features])], outputs, inits)


@pytest.mark.parametrize("chip", ["rk3588", "rk3566"])
def test_a_gru_read_only_through_its_final_state_stops_the_build(tmp_path, chip):
    gru = place(tmp_path, gru_model(y_used=False), chip)["gru"]
    assert gru.placement is Placement.UNSUPPORTED
    assert "KeyError" in gru.reason and "last step of Y" in gru.reason
    # With Y used too (here a model output), the toolkit builds it.
    assert place(tmp_path, gru_model(y_used=True), chip)["gru"].placement is Placement.FLOAT


def dropout_model(opset: int, mask: bool) -> onnx.ModelProto:
    w = const("w", np.ones((8, 3, 3, 3), np.float32))
    attrs = {"ratio": 0.5} if opset < 12 else {}
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("Dropout", ["c"], ["d", "mask"] if mask else ["d"], name="dropout", **attrs),
        helper.make_node("Relu", ["d"], ["y"], name="relu"),
    ]
    model = make_model(nodes, [tensor("x", [1, 3, 8, 8])], [tensor("y", [1, 8, 8, 8])], [w], opset=opset)
    model.ir_version = 4 if opset <= 9 else 7
    return model


def test_an_opset_9_dropout_with_its_mask_stops_the_build(tmp_path):
    refused = place(tmp_path, dropout_model(9, mask=True), "rk3588")["dropout"]
    assert refused.placement is Placement.UNSUPPORTED and "Not support 'Dropout' of opset-9!" in refused.reason
    assert "edgedeploy fix" in refused.reason
    for opset, mask in ((9, False), (8, True), (10, True), (13, True)):
        assert place(tmp_path, dropout_model(opset, mask), "rk3588")["dropout"].placement is Placement.ACCELERATOR, (opset, mask)


def test_the_dfl_decode_crash_is_noted_with_the_workaround_edgedeploy_applies(tmp_path):
    # Conv -> Reshape -> two Slices: the box decode of YOLOv5u/v8/11 heads.
    inits = [const("w", np.ones((1, 16, 1, 1), np.float32)), ints("shape", [1, 4, 525])]
    inits += [ints("s0", [0]), ints("e0", [2]), ints("s1", [2]), ints("e1", [4]), ints("axis", [1])]
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], name="conv"),
        helper.make_node("Reshape", ["c", "shape"], ["r"], name="reshape"),
        helper.make_node("Slice", ["r", "s0", "e0", "axis"], ["a"], name="slice0"),
        helper.make_node("Slice", ["r", "s1", "e1", "axis"], ["b"], name="slice1"),
        helper.make_node("Sub", ["b", "a"], ["y"], name="sub"),
    ]
    model = make_model(nodes, [tensor("x", [1, 16, 4, 525])], [tensor("y", [1, 2, 525])], inits)
    for chip in CHIPS:
        placed = place(tmp_path, model, chip)
        reshape = placed["reshape"]
        assert reshape.placement is Placement.ACCELERATOR  # the workaround build's placement
        assert "disable_rules=['seperate_conv_rs_split']" in reshape.reason and "edgedeploy build" in reshape.reason
        assert all(placed[n].placement is Placement.ACCELERATOR for n in ("conv", "slice0", "slice1", "sub"))


# --- pattern fusions -------------------------------------------------------------------------


def gelu_nodes(x: str, out: str, prefix: str) -> tuple[list, list]:
    nodes = [
        helper.make_node("Div", [x, f"{prefix}sqrt2"], [f"{prefix}d"], name=f"{prefix}div"),
        helper.make_node("Erf", [f"{prefix}d"], [f"{prefix}e"], name=f"{prefix}erf"),
        helper.make_node("Add", [f"{prefix}e", f"{prefix}one"], [f"{prefix}a"], name=f"{prefix}add"),
        helper.make_node("Mul", [x, f"{prefix}a"], [f"{prefix}m"], name=f"{prefix}mul"),
        helper.make_node("Mul", [f"{prefix}m", f"{prefix}half"], [out], name=f"{prefix}half"),
    ]
    inits = [const(f"{prefix}sqrt2", np.array(1.4142135, np.float32)), const(f"{prefix}one", np.array(1.0, np.float32)), const(f"{prefix}half", np.array(0.5, np.float32))]
    return nodes, inits


def layernorm_nodes(x: str, out: str, prefix: str, channels: int) -> tuple[list, list]:
    nodes = [
        helper.make_node("ReduceMean", [x], [f"{prefix}mean"], name=f"{prefix}mean", axes=[-1]),
        helper.make_node("Sub", [x, f"{prefix}mean"], [f"{prefix}d"], name=f"{prefix}sub"),
        helper.make_node("Pow", [f"{prefix}d", f"{prefix}two"], [f"{prefix}sq"], name=f"{prefix}pow"),
        helper.make_node("ReduceMean", [f"{prefix}sq"], [f"{prefix}var"], name=f"{prefix}var", axes=[-1]),
        helper.make_node("Add", [f"{prefix}var", f"{prefix}eps"], [f"{prefix}ve"], name=f"{prefix}add_eps"),
        helper.make_node("Sqrt", [f"{prefix}ve"], [f"{prefix}std"], name=f"{prefix}sqrt"),
        helper.make_node("Div", [f"{prefix}d", f"{prefix}std"], [f"{prefix}n"], name=f"{prefix}div"),
        helper.make_node("Mul", [f"{prefix}n", f"{prefix}g"], [f"{prefix}s"], name=f"{prefix}scale"),
        helper.make_node("Add", [f"{prefix}s", f"{prefix}b"], [out], name=f"{prefix}shift"),
    ]
    inits = [
        const(f"{prefix}two", np.array(2.0, np.float32)),
        const(f"{prefix}eps", np.array(1e-6, np.float32)),
        const(f"{prefix}g", np.ones(channels, np.float32)),
        const(f"{prefix}b", np.zeros(channels, np.float32)),
    ]
    return nodes, inits


def test_a_layer_norm_written_out_over_the_channels_is_one_exnorm_layer(tmp_path):
    # SAFMN's LayerNorm2d: both means over axis 1 of an NCHW map, then weight[:, None, None] * x + bias (weight first).
    nodes, inits = layernorm_nodes("x", "y", "ln_", 8)
    for n in nodes:
        if n.op_type == "ReduceMean":
            del n.attribute[:]
            n.attribute.append(helper.make_attribute("axes", [1]))
    nodes[-2].input[:] = ["ln_g", "ln_n"]
    inits = [t for t in inits if t.name not in ("ln_g", "ln_b")] + [const("ln_g", np.full((8, 1, 1), 0.5, np.float32)), const("ln_b", np.zeros((8, 1, 1), np.float32))]
    model = make_model(nodes, [tensor("x", [1, 8, 16, 16])], [tensor("y", [1, 8, 16, 16])], inits)
    for chip in ("rk3588", "rk3566"):
        placed = place(tmp_path, model, chip)
        assert all(placed[n.name].placement is Placement.ACCELERATOR and placed[n.name].fused_into == "ln_mean" for n in nodes), chip
    # Means over two axes (a norm of each channel's map) are not the toolkit's layer norm: the Sqrt stays on the CPU.
    for n in nodes:
        if n.op_type == "ReduceMean":
            n.attribute[0].CopyFrom(helper.make_attribute("axes", [2, 3]))
    two_axes = make_model(nodes, [tensor("x", [1, 8, 16, 16])], [tensor("y", [1, 8, 16, 16])], inits)
    assert place(tmp_path, two_axes, "rk3588")["ln_sqrt"].placement is Placement.FALLBACK


def rnn_directions_model(op: str, directions: int) -> onnx.ModelProto:
    """DeepSpeech's recurrent layer: Y [T, directions, 1, H] swapped [0, 2, 1, 3] and viewed [T, 1, directions * H]."""
    t, h, gates = 10, 8, 4 if op == "LSTM" else 1
    rng = np.random.default_rng(3)
    inits = [const("W", rng.standard_normal((directions, gates * h, 8)).astype(np.float32)),
             const("R", rng.standard_normal((directions, gates * h, h)).astype(np.float32)),
             const("B", np.zeros((directions, 2 * gates * h), np.float32)), ints("joined", [t, 1, directions * h])]
    nodes = [helper.make_node(op, ["x", "W", "R", "B"], ["seq"], name="rnn", hidden_size=h, direction="bidirectional" if directions == 2 else "forward"),
             helper.make_node("Transpose", ["seq"], ["swap"], name="swap", perm=[0, 2, 1, 3]),
             helper.make_node("Reshape", ["swap", "joined"], ["y"], name="view")]
    return make_model(nodes, [tensor("x", [t, 1, 8])], [tensor("y", [t, 1, directions * h])], inits)


def test_the_unit_axes_swap_of_an_rnn_runs_with_it_on_the_cpu(tmp_path):
    placed = place(tmp_path, rnn_directions_model("RNN", 2), "rk3588")
    assert placed["rnn"].placement is placed["swap"].placement is Placement.FALLBACK
    assert placed["swap"].fused_into == "rnn" and placed["view"].placement is Placement.ACCELERATOR  # it joins the directions
    forward = place(tmp_path, rnn_directions_model("RNN", 1), "rk3588")
    assert forward["view"].placement is Placement.FALLBACK and forward["view"].fused_into == "rnn"  # a view of unit axes joins too
    lstm = place(tmp_path, rnn_directions_model("LSTM", 2), "rk3588")  # an NPU layer: its swap is a Reshape there
    assert lstm["swap"].placement is Placement.ACCELERATOR and lstm["swap"].fused_into != "rnn"


def padded_swap_model(source: str, t: int) -> onnx.ModelProto:
    """ContextNet's and ECAPA-TDNN's Conv1d over tokens: tokens [1, t, 16] (the model input, its Relu, or a Conv1d's result
    swapped into tokens and through a SiLU) swapped [0, 2, 1], reflect-Padded by one, a depthwise Conv1d."""
    rng = np.random.default_rng(4)
    inits = [const("wa", rng.standard_normal((16, 16, 1)).astype(np.float32)), const("wk", rng.standard_normal((16, 1, 3)).astype(np.float32)),
             ints("pads", [0, 0, 1, 0, 0, 1])]
    nodes, tokens, x_shape = [], "x", [1, t, 16]
    if source == "relu":
        nodes, tokens = [helper.make_node("Relu", ["x"], ["r"], name="relu")], "r"
    if source == "conv":
        x_shape = [1, 16, t]
        nodes = [helper.make_node("Conv", ["x", "wa"], ["c"], name="conv_a", kernel_shape=[1]),
                 helper.make_node("Transpose", ["c"], ["tok"], name="to_tokens", perm=[0, 2, 1]),
                 helper.make_node("Sigmoid", ["tok"], ["sig"], name="sig"), helper.make_node("Mul", ["tok", "sig"], ["silu"], name="silu")]
        tokens = "silu"
    nodes += [helper.make_node("Transpose", [tokens], ["swap"], name="swap", perm=[0, 2, 1]),
              helper.make_node("Pad", ["swap", "pads"], ["padded"], name="pad", mode="reflect"),
              helper.make_node("Conv", ["padded", "wk"], ["y"], name="dw", kernel_shape=[3], group=16)]
    return make_model(nodes, [tensor("x", x_shape)], [tensor("y", [1, 16, t])], inits)


def test_tokens_swapped_past_a_pad_by_their_source(tmp_path):
    placed = lambda source, t: place(tmp_path, padded_swap_model(source, t), "rk3566")["swap"].placement  # noqa: E731
    assert placed("relu", 14) is Placement.ACCELERATOR and placed("relu", 13) is Placement.FALLBACK  # padded to 16 or 15 steps
    assert placed("input", 14) is Placement.FALLBACK  # the model input itself: CPU at any length
    assert placed("conv", 13) is Placement.ACCELERATOR  # a Conv1d's result, held in its layout: no layer


def test_the_exact_gelu_chain_is_one_npu_layer_on_every_chip(tmp_path):
    w = const("w", np.ones((16, 32), np.float32))
    nodes, inits = gelu_nodes("h", "y", "g_")
    model = make_model([helper.make_node("MatMul", ["x", "w"], ["h"], name="fc"), *nodes], [tensor("x", [1, 8, 16])], [tensor("y", [1, 8, 32])], [w, *inits])
    for chip in CHIPS:
        placed = place(tmp_path, model, chip)
        for name in ("g_div", "g_erf", "g_add", "g_mul", "g_half"):
            assert placed[name].placement is Placement.ACCELERATOR and placed[name].fused_into == "g_erf", (chip, name)
        assert placed["g_erf"].lowered_by == "fuse_exact_gelu"


def test_a_written_out_layer_norm_is_one_exnorm_layer(tmp_path):
    nodes, inits = layernorm_nodes("x", "y", "ln_", 64)
    model = make_model(nodes, [tensor("x", [1, 16, 64])], [tensor("y", [1, 16, 64])], inits)
    names = [n.name for n in nodes]
    for chip in ("rk3588", "rk3566", "rk3562"):
        placed = place(tmp_path, model, chip)
        assert all(placed[n].placement is Placement.ACCELERATOR and placed[n].fused_into == "ln_mean" for n in names), chip
    # RV1106's NPU has no exNorm: the whole chain is one CPU layer (its runtime has LayerNormalization).
    placed = place(tmp_path, model, "rv1106")
    assert all(placed[n].placement is Placement.FALLBACK for n in names)
    assert len({placed[n].fused_into for n in names}) == 1


# --- layout ----------------------------------------------------------------------------------


def test_a_transpose_of_unit_axes_is_a_reshape(tmp_path):
    # The batch-first transposes of a batch-1 sequence model: (1, T, F) -> (T, 1, F).
    model = make_model([helper.make_node("Transpose", ["x"], ["y"], name="t", perm=[1, 0, 2])], [tensor("x", [1, 16, 8])], [tensor("y", [16, 1, 8])])
    assert place(tmp_path, model, "rk3566")["t"].placement is Placement.ACCELERATOR
    moving = make_model([helper.make_node("Transpose", ["x"], ["y"], name="t", perm=[0, 2, 1])], [tensor("x", [1, 16, 8])], [tensor("y", [1, 8, 16])])
    assert place(tmp_path, moving, "rk3566")["t"].placement is Placement.FALLBACK  # a real transpose: CPU on RK3566


def test_a_channel_shuffle_is_one_npu_convolution(tmp_path):
    nodes = [
        helper.make_node("Reshape", ["x", "split"], ["r"], name="split"),
        helper.make_node("Transpose", ["r"], ["t"], name="shuffle", perm=[0, 2, 1, 3, 4]),
        helper.make_node("Reshape", ["t", "back"], ["y"], name="merge"),
    ]
    inits = [ints("split", [1, 2, 24, 12, 12]), ints("back", [1, 48, 12, 12])]
    model = make_model(nodes, [tensor("x", [1, 48, 12, 12])], [tensor("y", [1, 48, 12, 12])], inits)
    placed = place(tmp_path, model, "rk3566")
    assert all(placed[n].placement is Placement.ACCELERATOR and placed[n].fused_into == "shuffle" for n in ("split", "shuffle", "merge"))


def test_channels_last_blocks_cancel_their_transposes(tmp_path):
    # ConvNeXt's block: NCHW -> NHWC, layer norm, Linear, GELU, Linear, layer scale, back to NCHW.
    ln, ln_inits = layernorm_nodes("t", "n", "ln_", 8)
    gelu, gelu_inits = gelu_nodes("h", "g", "g_")
    nodes = [
        helper.make_node("Transpose", ["x"], ["t"], name="to_nhwc", perm=[0, 2, 3, 1]),
        *ln,
        helper.make_node("MatMul", ["n", "w1"], ["h"], name="fc1"),
        *gelu,
        helper.make_node("MatMul", ["g", "w2"], ["o"], name="fc2"),
        helper.make_node("Mul", ["o", "gamma"], ["s"], name="layer_scale"),
        helper.make_node("Transpose", ["s"], ["y"], name="to_nchw", perm=[0, 3, 1, 2]),
    ]
    inits = [*ln_inits, *gelu_inits, const("w1", np.ones((8, 32), np.float32)), const("w2", np.ones((32, 8), np.float32)), const("gamma", np.ones(8, np.float32))]
    model = make_model(nodes, [tensor("x", [1, 8, 6, 6])], [tensor("y", [1, 8, 6, 6])], inits)
    placed = place(tmp_path, model, "rk3566")
    assert placed["to_nhwc"].lowered == "eliminated" and placed["to_nchw"].lowered == "eliminated"
    assert all(p.placement is Placement.ACCELERATOR for p in placed.values())
    # A Transpose that is not undone is a real one: CPU on RK3566.
    del model.graph.node[-1]
    model.graph.output[0].CopyFrom(tensor("s", [1, 6, 6, 8]))
    assert place(tmp_path, model, "rk3566")["to_nhwc"].placement is Placement.FALLBACK


def test_the_transposes_of_attention_heads_merge_into_the_matmuls(tmp_path):
    # q, k, v of 4 heads: the key transposed into q @ k^T, the heads merged after attn @ v.
    nodes = [
        helper.make_node("Transpose", ["k"], ["kt"], name="k_transpose", perm=[0, 1, 3, 2]),
        helper.make_node("MatMul", ["q", "kt"], ["s"], name="scores"),
        helper.make_node("MatMul", ["s", "v"], ["a"], name="attend"),
        helper.make_node("Transpose", ["a"], ["m"], name="heads_last", perm=[0, 2, 1, 3]),
        helper.make_node("Reshape", ["m", "shape"], ["y"], name="merge_heads"),
    ]
    heads = [tensor(n, [1, 4, 16, 16]) for n in ("q", "k", "v")]
    model = make_model(nodes, heads, [tensor("y", [1, 16, 64])], [ints("shape", [1, 16, 64])])
    placed = place(tmp_path, model, "rk3566")
    assert placed["k_transpose"].lowered == "eliminated" and placed["heads_last"].lowered == "eliminated"
    assert placed["k_transpose"].placement is Placement.ACCELERATOR and placed["heads_last"].placement is Placement.ACCELERATOR


# --- quantisation ----------------------------------------------------------------------------


def test_a_conv_of_large_dilation_is_split_in_float16(tmp_path):
    # ASPP-like: 3x3 convolutions with dilation = padding on an 8x8 map (deeplabv3's head).
    dilations = (1, 12, 16, 24, 36)
    inits = [const(f"w{d}", np.ones((16, 32, 3, 3), np.float32)) for d in dilations]
    nodes = [helper.make_node("Conv", ["x", f"w{d}"], [f"y{d}"], name=f"d{d}", dilations=[d, d], pads=[d] * 4, kernel_shape=[3, 3]) for d in dilations]
    model = make_model(nodes, [tensor("x", [1, 32, 8, 8])], [tensor(f"y{d}", [1, 16, 8, 8]) for d in dilations], inits)
    on_3588, on_3566 = place(tmp_path, model, "rk3588"), place(tmp_path, model, "rk3566")
    for placed in (on_3588, on_3566):
        assert placed["d1"].placement is Placement.ACCELERATOR and placed["d36"].placement is Placement.ACCELERATOR
        assert placed["d24"].placement is Placement.FLOAT and not placed["d24"].uncertain
    assert on_3566["d16"].placement is Placement.FLOAT and not on_3566["d16"].uncertain
    assert on_3566["d12"].placement is Placement.ACCELERATOR
    # RK3588 at dilation 12 and 16: float16 or int8 by the input channels, which the rule does not model.
    assert on_3588["d12"].uncertain and on_3588["d16"].uncertain
    # An fp16 build is float16 throughout: nothing to say.
    assert place(tmp_path, model, "rk3588", precision="fp16")["d24"].placement is Placement.ACCELERATOR


# --- the model's boundary --------------------------------------------------------------------


def test_a_2d_output_of_unaligned_channels_is_reshaped_on_the_cpu(tmp_path):
    nodes, inits, outputs = [], [], []
    for c in (40, 1008, 24):  # Conv -> GlobalAveragePool -> Flatten: [1, C]
        nodes += [
            helper.make_node("Conv", ["x", f"w{c}"], [f"c{c}"], name=f"conv{c}", kernel_shape=[1, 1]),
            helper.make_node("GlobalAveragePool", [f"c{c}"], [f"g{c}"], name=f"gap{c}"),
            helper.make_node("Flatten", [f"g{c}"], [f"f{c}"], name=f"flatten{c}"),
        ]
        inits.append(const(f"w{c}", np.ones((c, 16, 1, 1), np.float32)))
        outputs.append(tensor(f"f{c}", [1, c]))
    for n in (8, 16, 12):  # Gemm -> Sigmoid: [1, n]; the Gemm alone is 2-D on the NPU
        nodes += [helper.make_node("Gemm", ["v", f"w{n}"], [f"h{n}"], name=f"gemm{n}", transB=1), helper.make_node("Sigmoid", [f"h{n}"], [f"s{n}"], name=f"sigmoid{n}")]
        inits.append(const(f"w{n}", np.ones((n, 32), np.float32)))
        outputs.append(tensor(f"s{n}", [1, n]))
    nodes.append(helper.make_node("Gemm", ["v", "w12"], ["plain"], name="gemm_out", transB=1))
    outputs.append(tensor("plain", [1, 12]))
    model = make_model(nodes, [tensor("x", [1, 16, 8, 8]), tensor("v", [1, 32])], outputs, inits)
    expected = {  # measured: the nodes whose output Reshape runs on the CPU
        "rk3588": {"flatten40", "flatten24", "sigmoid8", "sigmoid12"},
        "rk3566": {"sigmoid12"},
        "rk3562": set(),
    }
    for chip, on_cpu in expected.items():
        placed = place(tmp_path, model, chip)
        assert {n for n, p in placed.items() if p.placement is Placement.FALLBACK} == on_cpu, chip


def test_a_reshape_into_a_cpu_softmax_runs_on_the_cpu_with_it(tmp_path):
    # The DFL decode: Conv -> Reshape (1, 4, 16, N) -> Transpose -> Softmax over the 16 bins.
    n = 20
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], name="conv", kernel_shape=[1, 1]),
        helper.make_node("Reshape", ["c", "bins"], ["r"], name="dfl_reshape"),
        helper.make_node("Transpose", ["r"], ["t"], name="dfl_transpose", perm=[0, 2, 1, 3]),
        helper.make_node("Softmax", ["t"], ["y"], name="dfl_softmax", axis=1),
    ]
    model = make_model(nodes, [tensor("x", [1, 32, 1, n])], [tensor("y", [1, 16, 4, n])], [const("w", np.ones((64, 32, 1, 1), np.float32)), ints("bins", [1, 4, 16, n])])
    for chip in ("rk3566", "rk3568"):
        placed = place(tmp_path, model, chip)
        assert placed["dfl_transpose"].fused_into == "dfl_reshape"
        assert all(placed[k].placement is Placement.FALLBACK for k in ("dfl_reshape", "dfl_transpose", "dfl_softmax")), chip
    assert place(tmp_path, model, "rk3588")["dfl_reshape"].placement is Placement.ACCELERATOR  # Softmax on the NPU there


def test_the_transpose_of_a_cpu_softmax_runs_with_it(tmp_path):
    nodes = [
        helper.make_node("MatMul", ["q", "k"], ["s"], name="scores"),
        helper.make_node("Softmax", ["s"], ["a"], name="softmax", axis=-1),
        helper.make_node("Transpose", ["a"], ["at"], name="attn_transpose", perm=[0, 1, 3, 2]),
        helper.make_node("MatMul", ["v", "at"], ["o"], name="attend"),
    ]
    model = make_model(nodes, [tensor("q", [1, 2, 16, 32]), tensor("k", [1, 2, 32, 16]), tensor("v", [1, 2, 32, 16])], [tensor("o", [1, 2, 32, 16])])
    placed = place(tmp_path, model, "rk3566")
    assert placed["attn_transpose"].fused_into == "softmax" and placed["attn_transpose"].placement is Placement.FALLBACK
    assert placed["attend"].placement is Placement.ACCELERATOR
    assert all(p.placement is Placement.ACCELERATOR for p in place(tmp_path, model, "rk3588").values())


def test_a_residual_add_of_a_3d_model_input_keeps_the_inputs_cpu_reshape(tmp_path):
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["h"], name="proj"),
        helper.make_node("Add", ["b", "h"], ["hb"], name="proj_bias"),
        helper.make_node("Add", ["x", "hb"], ["y"], name="residual"),
        helper.make_node("MatMul", ["y", "w2"], ["z"], name="next"),
    ]
    inits = [const("w", np.ones((64, 64), np.float32)), const("b", np.zeros(64, np.float32)), const("w2", np.ones((64, 64), np.float32))]
    model = make_model(nodes, [tensor("x", [1, 16, 64])], [tensor("z", [1, 16, 64])], inits)
    for chip, expected in (("rk3566", {"residual"}), ("rk3568", {"residual"}), ("rk3588", set())):
        placed = place(tmp_path, model, chip)
        assert {n for n, p in placed.items() if p.placement is Placement.FALLBACK} == expected, chip


def test_a_3d_product_output_of_unaligned_width_is_reshaped_on_the_cpu_on_rk3588(tmp_path):
    nodes, inits, outputs = [], [], []
    for k in (4, 8, 16, 32):  # [1, 16, 32] -> MatMul -> bias Add -> [1, 16, K]
        nodes += [
            helper.make_node("MatMul", ["x", f"w{k}"], [f"m{k}"], name=f"matmul{k}"),
            helper.make_node("Add", [f"b{k}", f"m{k}"], [f"y{k}"], name=f"bias{k}"),
        ]
        inits += [const(f"w{k}", np.ones((32, k), np.float32)), const(f"b{k}", np.zeros(k, np.float32))]
        outputs.append(tensor(f"y{k}", [1, 16, k]))
    for k in (4, 16):  # the MatMul alone
        nodes.append(helper.make_node("MatMul", ["x", f"w{k}"], [f"alone{k}"], name=f"alone{k}"))
        outputs.append(tensor(f"alone{k}", [1, 16, k]))
    model = make_model(nodes, [tensor("x", [1, 16, 32])], outputs, inits)
    # measured with rknn-toolkit2 2.5.0, one model per K: the bias Add's output Reshape runs on the CPU for K = 4, 8.
    # The MatMul alone is reported as its Conv layer on the NPU at every K, the CPU Reshape only as its layout glue
    # (tests/forms_models.py output_width_pack, 2026-12-05; an earlier reading had alone4 on the CPU).
    placed = place(tmp_path, model, "rk3588")
    assert {n for n, p in placed.items() if p.placement is Placement.FALLBACK} == {"bias4", "bias8"}
    assert "3-D model output" in placed["bias4"].reason
    for chip in ("rk3576", "rk3562"):
        assert all(p.placement is Placement.ACCELERATOR for p in place(tmp_path, model, chip).values()), chip


def detection_head(k: int, anchors: int, sizes=(5, 3)) -> onnx.ModelProto:
    """Conv -> Reshape [1, A, K, H, W] -> Transpose -> Reshape [1, H*W*A, K] per level (maps of `sizes`), then Concat."""
    cin = 16
    nodes, inits, maps = [], [], ["x"]
    for level in range(1, len(sizes)):
        nodes.append(helper.make_node("Conv", [maps[-1], f"wd{level}"], [f"x{level}"], name=f"down{level}", strides=[2, 2], pads=[1, 1, 1, 1], kernel_shape=[3, 3]))
        inits.append(const(f"wd{level}", np.ones((cin, cin, 3, 3), np.float32)))
        maps.append(f"x{level}")
    total = 0
    for level, (src, h) in enumerate(zip(maps, sizes)):
        nodes += [
            helper.make_node("Conv", [src, f"w{level}"], [f"c{level}"], name=f"head{level}", kernel_shape=[1, 1]),
            helper.make_node("Reshape", [f"c{level}", f"view_shape{level}"], [f"r{level}"], name=f"view{level}"),
            helper.make_node("Transpose", [f"r{level}"], [f"t{level}"], name=f"perm{level}", perm=[0, 3, 4, 1, 2]),
            helper.make_node("Reshape", [f"t{level}", f"flat_shape{level}"], [f"o{level}"], name=f"flat{level}"),
        ]
        inits += [
            const(f"w{level}", np.ones((anchors * k, cin, 1, 1), np.float32)),
            ints(f"view_shape{level}", [1, anchors, k, h, h]),
            ints(f"flat_shape{level}", [1, h * h * anchors, k]),
        ]
        total += h * h * anchors
    nodes.append(helper.make_node("Concat", [f"o{level}" for level in range(len(sizes))], ["y"], name="cat", axis=1))
    return make_model(nodes, [tensor("x", [1, cin, sizes[0], sizes[0]])], [tensor("y", [1, total, k])], inits)


SIX_LEVELS = (10, 5, 3, 2, 1, 1)  # ssdlite320's maps at a 160x160 input


@pytest.mark.parametrize("k", [4, 8, 16, 91])
@pytest.mark.parametrize("anchors", [1, 6])
def test_a_detection_heads_levels_laid_out_by_cells_reshape_on_the_cpu_when_their_channels_are_unaligned(tmp_path, k, anchors):
    # measured with rknn-toolkit2 2.5.0 on exactly these models: the toolkit stacks the levels as
    # [H*W, A*K, 1, 1] (a 1x1 level is present); the Reshape of each level with H*W > 1 is on the
    # CPU exactly where A*K is not a multiple of 16 (RK3588) / 8 (RK3566)
    model = detection_head(k, anchors, SIX_LEVELS)
    for chip, block in (("rk3588", 16), ("rk3566", 8)):
        placed = place(tmp_path, model, chip)
        for level in range(4):
            assert (placed[f"flat{level}"].placement is Placement.FALLBACK) is bool(anchors * k % block), (chip, level)
        assert placed["cat"].placement is Placement.ACCELERATOR
    assert all(p.placement is Placement.ACCELERATOR for n, p in place(tmp_path, model, "rk3576").items() if n.startswith("flat"))


@pytest.mark.parametrize("k", [4, 8, 16, 91])
@pytest.mark.parametrize("anchors", [1, 2, 6])
def test_a_detection_heads_levels_laid_out_by_anchors_reshape_on_the_cpu_when_k_is_unaligned(tmp_path, k, anchors):
    # measured on these two-level models (5x5, 3x3: laid out as [1, H*W*A, 1, K]): RK3588 puts the
    # Reshapes on the CPU exactly where A > 1 and K is not a multiple of 16; RK3566 always
    model = detection_head(k, anchors, (5, 3))
    on_3588 = place(tmp_path, model, "rk3588")
    on_3566 = place(tmp_path, model, "rk3566")
    for flat in ("flat0", "flat1"):
        assert (on_3588[flat].placement is Placement.FALLBACK) is (anchors > 1 and k % 16 != 0), flat
        assert on_3566[flat].placement is Placement.FALLBACK, flat


# --- a feature map's swap into tokens (issue 27 pool, rk3566) ----------------------------------


@pytest.mark.parametrize("form,side", [("pooled", 4), ("round_trip", 4), ("round_trip", 5)])
def test_a_token_swap_beside_the_maps_reshape_has_no_cpu_layer(tmp_path, form, side):
    from tests.forms_models import token_swap

    placed = place(tmp_path, token_swap(form, 32, side), "rk3566")
    swaps = [n for n in placed.values() if n.op_type == "Transpose"]
    assert swaps and all(n.placement is Placement.ACCELERATOR and n.folded for n in swaps)
    # The maps's flattening Reshape is no head split: no unaligned-head CPU Reshape (4 or 5 wide).
    assert placed["flatten"].placement is Placement.ACCELERATOR


def test_a_token_swap_that_reaches_a_3d_model_output_is_uncertain(tmp_path):
    from tests.forms_models import token_swap

    swap = place(tmp_path, token_swap("tokens_out", 32, 4), "rk3566")["to_tokens"]
    assert swap.placement is Placement.FALLBACK and swap.uncertain and "3-D model output" in swap.uncertain


@pytest.mark.parametrize("side,one_row", [(10, False), (6, False), (8, False), (4, True)])
def test_tokens_regrouped_into_areas_reshape_on_the_cpu_unless_each_area_is_one_row(tmp_path, side, one_row):
    from tests.forms_models import token_swap

    placed = place(tmp_path, token_swap("areas", 32, side), "rk3566")
    regroup, swap = placed["to_areas"], placed["to_tokens"]
    if one_row:
        assert regroup.placement is Placement.ACCELERATOR and swap.placement is Placement.ACCELERATOR
    else:
        assert regroup.placement is Placement.FALLBACK and not regroup.uncertain and "not single rows" in regroup.reason
        assert swap.uncertain  # the CPU layers are named after the Reshape, and the Transpose or not
    assert all(n.placement is Placement.ACCELERATOR for n in place(tmp_path, token_swap("areas", 32, side), "rk3588").values())


@pytest.mark.parametrize("unbind", ["split", "gather"])
def test_the_key_of_a_separate_kv_projection_is_a_cpu_transpose_with_its_maps_flatten(tmp_path, unbind):
    from tests.forms_models import kv_attention

    placed = place(tmp_path, kv_attention(4, 2, heads=2, head=32, unbind=unbind), "rk3566")
    key = placed["k_transpose"]
    assert key.placement is Placement.FALLBACK and key.lowered_by == "key_transpose_of_a_kv_projection"
    assert placed["sr_flatten"].placement is Placement.FALLBACK
    # The query's own map flatten and heads are not affected.
    assert placed["x_flatten"].placement is Placement.ACCELERATOR and placed["q_heads_transpose"].placement is Placement.ACCELERATOR
    one_head = place(tmp_path, kv_attention(4, 2, heads=1, head=64, unbind=unbind), "rk3566")
    assert one_head["k_transpose"].placement is Placement.ACCELERATOR and one_head["sr_flatten"].placement is Placement.ACCELERATOR


@pytest.mark.parametrize("heads", [4, 16])
def test_talking_heads_keep_the_transpose_of_a_product_and_of_a_cpu_softmax_on_rk3566(tmp_path, heads):
    from tests.forms_models import talking_heads

    placed = place(tmp_path, talking_heads(heads, "product"), "rk3566")
    assert placed["to_last"].placement is Placement.FALLBACK and not placed["to_last"].folded
    assert placed["to_last_2"].placement is Placement.FALLBACK and placed["to_last_2"].fused_into == "softmax"
    assert placed["back"].folded and placed["back_2"].folded
    after_conv = place(tmp_path, talking_heads(heads, "conv"), "rk3566")
    assert after_conv["to_last"].folded and after_conv["to_last_2"].placement is Placement.FALLBACK
    assert all(n.placement is not Placement.FALLBACK or n.op_type == "Softmax" for n in place(tmp_path, talking_heads(heads, "product"), "rk3588").values())


@pytest.mark.parametrize("tokens", [16, 17])
def test_a_joint_qkv_projection_whose_k_is_softmaxed_first_keeps_its_heads_layers_on_the_cpu(tmp_path, tokens):
    from tests.forms_models import attention_block, factorized_attention

    placed = place(tmp_path, factorized_attention(tokens, norm="softmax_k"), "rk3566")
    assert placed["qkv_split_heads"].placement is Placement.FALLBACK and placed["qkv_heads_transpose"].placement is Placement.FALLBACK
    assert place(tmp_path, factorized_attention(tokens, norm="softmax_k"), "rk3588")["qkv_split_heads"].placement is Placement.ACCELERATOR
    # Norms over D (cosine attention) and the plain form leave the projection split: no layers.
    for model in (factorized_attention(tokens, norm="cosine"), attention_block(tokens=tokens, style="timm")):
        plain = place(tmp_path, model, "rk3566")
        assert plain["qkv_split_heads"].placement is Placement.ACCELERATOR and plain["qkv_heads_transpose"].placement is Placement.ACCELERATOR
