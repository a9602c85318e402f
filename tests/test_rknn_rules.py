"""The RKNN rule table: every chip's rule set, and small models that trip each kind of rule."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from edgedeploy.audit.engine import audit_model
from edgedeploy.audit.rules import Placement
from edgedeploy.model import load_model
from edgedeploy.sample import sample_model_path
from edgedeploy.targets import find_chip
from edgedeploy.targets.rknn import rules as R
from tests.helpers import const, make_model, save, tensor

CHIPS = ("rk3588", "rk3576", "rk3568", "rk3566", "rk3562", "rv1106")


def place(tmp_path: Path, model: onnx.ModelProto, chip: str, precision: str = "int8") -> dict:
    loaded = load_model(save(model, tmp_path / "m.onnx"), require_static=True)
    result = audit_model(loaded, R.rule_set(chip, precision=precision), precision)
    return {n.node: n for n in result.nodes}


def one_node(op: str, inputs, outputs, inits=(), opset=13, **attrs) -> onnx.ModelProto:
    node = helper.make_node(op, [i.name for i in inputs] + [t.name for t in inits], [o.name for o in outputs], name="n", **attrs)
    return make_model([node], list(inputs), list(outputs), list(inits), opset=opset)


X = tensor("x", [1, 8, 16, 16])
Y = tensor("y", 4)


@pytest.mark.parametrize("chip", CHIPS)
def test_rule_sets_are_complete_and_cite_their_sources(chip):
    target, _ = find_chip(chip)
    rs = target.rule_set(chip)
    assert rs.chip == chip and rs.max_opset == 19
    assert R.DOC_COMPILER in rs.source and "2.5.0" in rs.toolchain_version
    for r in rs.rules:
        assert r.sentence and "{" not in r.sentence
    assert {"Conv", "Relu", "MaxPool", "Gemm"} <= set(rs.accelerator_ops)


@pytest.mark.parametrize("chip", CHIPS)
def test_sample_runs_entirely_on_the_npu(tmp_path, chip):
    loaded = load_model(sample_model_path(), require_static=True)
    result = audit_model(loaded, R.rule_set(chip), "int8")
    assert result.summary()["on_accelerator"] == 13 and result.transitions == 0


def test_chip_differences_from_the_documents(tmp_path):
    softmax = one_node("Softmax", [X], [Y], axis=1)
    # 3.2: RK3588 has an NPU softmax (float16 inside an int8 graph); 3.1: RK3566/RK3568 do not.
    assert place(tmp_path, softmax, "rk3588")["n"].placement is Placement.FLOAT
    assert place(tmp_path, softmax, "rk3566")["n"].placement is Placement.FALLBACK
    # The same operator in an fp16 build is simply on the NPU.
    assert place(tmp_path, softmax, "rk3588", "fp16")["n"].placement is Placement.ACCELERATOR
    # 3.1/3.2: transposed convolutions with strides 1, 2, 4, 8 only; 3.3/3.5 allow 1..8.
    w = const("w", np.zeros((8, 8, 3, 3), np.float32))
    deconv = one_node("ConvTranspose", [X], [Y], [w], kernel_shape=[3, 3], strides=[3, 3])
    assert place(tmp_path, deconv, "rk3588")["n"].placement is Placement.FALLBACK
    assert place(tmp_path, deconv, "rk3576")["n"].placement is Placement.ACCELERATOR
    # 3.5 (RK3576): Greater on the NPU, only without broadcasting; elsewhere on the CPU.
    same = one_node("Greater", [X, tensor("z", [1, 8, 16, 16])], [tensor("g", 4, TensorProto.BOOL)])
    bcast = one_node("Greater", [X, tensor("z", [16])], [tensor("g", 4, TensorProto.BOOL)])
    assert place(tmp_path, same, "rk3576")["n"].placement is Placement.ACCELERATOR
    assert place(tmp_path, bcast, "rk3576")["n"].placement is Placement.FALLBACK
    assert place(tmp_path, same, "rk3588")["n"].placement is Placement.FALLBACK
    # Observed: constant indices become a Slice or a Conv on every chip (even RV1106, whose 3.4
    # section has no Gather); indices computed at run time run on the CPU.
    gather = one_node("Gather", [X], [Y], [const("i", np.array([0, 2], np.int64))], axis=1)
    assert place(tmp_path, gather, "rv1106")["n"].placement is Placement.ACCELERATOR
    dynamic = one_node("Gather", [X, tensor("i", [2], TensorProto.INT64)], [Y], axis=1)
    assert place(tmp_path, dynamic, "rk3588")["n"].placement is Placement.FALLBACK


def test_rules_report_the_offending_value(tmp_path):
    # A division by a computed tensor leaves the NPU; by a constant it becomes a multiplication.
    by_tensor = one_node("Div", [X, tensor("d", [1, 8, 16, 16])], [Y])
    n = place(tmp_path, by_tensor, "rk3588")["n"]
    assert n.placement is Placement.FALLBACK and n.violations[0].rule == "div_by_runtime_tensor"
    by_const = one_node("Div", [X], [Y], [const("c", np.full((1, 8, 1, 1), 2.0, np.float32))])
    assert place(tmp_path, by_const, "rk3588")["n"].placement is Placement.ACCELERATOR
    # Pow: exponents 2 and 3 on the NPU, 0.5 on the CPU, with the exponent as the value.
    sqrt = one_node("Pow", [X], [Y], [const("e", np.array(0.5, np.float32))])
    v = [x for x in place(tmp_path, sqrt, "rk3588")["n"].violations if x.rule == "pow_exponent"]
    assert v and v[0].value == 0.5
    square = one_node("Pow", [X], [Y], [const("e", np.array(2.0, np.float32))])
    assert place(tmp_path, square, "rk3588")["n"].placement is Placement.ACCELERATOR
    # ceil_mode matters only where it changes the output size (15 -> 8 instead of 7 here).
    ceil_grows = one_node("AveragePool", [tensor("p", [1, 8, 15, 15])], [Y], kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1)
    ceil_same = one_node("AveragePool", [tensor("p", [1, 8, 15, 15])], [Y], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)
    v = place(tmp_path, ceil_grows, "rk3588")["n"]
    assert v.placement is Placement.FALLBACK and v.violations[-1].value == (8, 8)
    assert place(tmp_path, ceil_same, "rk3588")["n"].placement is Placement.ACCELERATOR
    # AveragePool that excludes padding runs on the CPU; including it stays on the NPU.
    excl = one_node("AveragePool", [X], [Y], kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    incl = one_node("AveragePool", [X], [Y], kernel_shape=[3, 3], pads=[1, 1, 1, 1], count_include_pad=1)
    assert place(tmp_path, excl, "rk3588")["n"].placement is Placement.FALLBACK
    assert place(tmp_path, incl, "rk3588")["n"].placement is Placement.ACCELERATOR


def test_build_stopping_rules(tmp_path):
    # Opset 20 is beyond the importer.
    gelu = one_node("Gelu", [X], [Y], opset=20)
    assert place(tmp_path, gelu, "rk3588")["n"].placement is Placement.UNSUPPORTED
    # Resize whose scales are computed at run time.
    scales = tensor("s", [4])
    resize = make_model([helper.make_node("Resize", ["x", "", "s"], ["y"], name="n")], [X, scales], [Y])
    n = place(tmp_path, resize, "rk3588")["n"]
    assert n.placement is Placement.UNSUPPORTED and any(v.rule == "shape_input_computed_at_run_time" and v.value == "s" for v in n.violations)
    # int16 tensors do not exist in the toolkit.
    x16 = tensor("a", [2, 3], TensorProto.INT16)
    add16 = one_node("Add", [x16, tensor("b", [2, 3], TensorProto.INT16)], [tensor("c", [2, 3], TensorProto.INT16)], opset=14)
    assert place(tmp_path, add16, "rk3588")["n"].placement is Placement.UNSUPPORTED


def test_a_layernorm_without_epsilon_builds_and_runs_on_the_cpu(tmp_path):
    # rknn-toolkit2 2.5.0 builds a LayerNormalization that leaves epsilon out and runs it on the CPU
    # (tests/forms_models.py LAYERNORM_EPSILON_CASES, a0e99b2; the seed's rule said the build fails, which no probe showed).
    g = const("g", np.ones(64, np.float32))
    ln = one_node("LayerNormalization", [tensor("t", [1, 16, 64])], [tensor("u", 3)], [g], opset=17, axis=-1)
    n = place(tmp_path, ln, "rk3588")["n"]
    assert n.placement is Placement.FALLBACK and any(v.rule == "layernorm_attribute_left_out" for v in n.violations)
    ln_eps = one_node("LayerNormalization", [tensor("t", [1, 16, 64])], [tensor("u", 3)], [g], opset=17, axis=-1, epsilon=1e-5)
    assert place(tmp_path, ln_eps, "rk3588")["n"].placement is Placement.ACCELERATOR


def test_softmax_is_float16_only_at_the_model_output(tmp_path):
    # Weights of ones, not zeros: a Conv by zeros is folded to a constant (product_by_zeros_folded),
    # which would leave the last Softmax nothing computed to read.
    w = const("w", np.ones((8, 8, 1, 1), np.float32))
    nodes = [
        helper.make_node("Softmax", ["x"], ["s"], name="inner", axis=1),
        helper.make_node("Conv", ["s", "w"], ["c"], name="conv", kernel_shape=[1, 1]),
        helper.make_node("Softmax", ["c"], ["y"], name="last", axis=1),
    ]
    placed = place(tmp_path, make_model(nodes, [X], [Y], [w]), "rk3588")
    assert placed["inner"].placement is Placement.ACCELERATOR
    assert placed["last"].placement is Placement.FLOAT


def test_integer_inputs_only_stop_int8_builds(tmp_path):
    a = tensor("a", [2, 3], TensorProto.INT32)
    add = one_node("Add", [a, tensor("b", [2, 3], TensorProto.INT32)], [tensor("c", [2, 3], TensorProto.INT32)])
    assert place(tmp_path, add, "rk3588", "int8")["n"].placement is Placement.UNSUPPORTED
    assert place(tmp_path, add, "rk3588", "fp16")["n"].placement is Placement.ACCELERATOR


def test_shape_arithmetic_counts_as_constant(tmp_path):
    # Shape -> Gather -> Concat -> Reshape: folded at conversion time, so the Reshape is static.
    nodes = [
        helper.make_node("Shape", ["x"], ["s"], name="shape"),
        helper.make_node("Gather", ["s", "zero"], ["b"], name="batch", axis=0),
        helper.make_node("Concat", ["b", "minus1"], ["newshape"], name="cat", axis=0),
        helper.make_node("Reshape", ["x", "newshape"], ["y"], name="reshape"),
    ]
    model = make_model(nodes, [X], [tensor("y", 2)], [const("zero", np.array([0], np.int64)), const("minus1", np.array([-1], np.int64))])
    placed = place(tmp_path, model, "rk3588")
    assert placed["reshape"].placement is Placement.ACCELERATOR


def _split_then_transpose(x_shape, split_shape, perm) -> onnx.ModelProto:
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
             helper.make_node("Reshape", ["r", "shape"], ["s"], name="split"),
             helper.make_node("Transpose", ["s"], ["t"], name="transpose", perm=perm),
             helper.make_node("Relu", ["t"], ["y"], name="out")]
    out = [split_shape[p] for p in perm]
    return make_model(nodes, [tensor("x", list(x_shape))], [tensor("y", out)], [const("shape", np.array(split_shape, np.int64))])


def test_only_a_split_of_the_last_axis_into_heads_is_an_unaligned_head_split(tmp_path):
    # tokens [1, 32, 60] split into 4 heads of 15 before their Transpose: the RK3566 toolkit runs the split on the CPU
    heads = place(tmp_path, _split_then_transpose((1, 32, 60), (1, 32, 4, 15), [0, 2, 1, 3]), "rk3566")["split"]
    assert [v.rule for v in heads.violations] == ["reshape_of_unaligned_attention_heads"]
    # a map unfolded into 2x2 patches (MobileViT-v2: [1, 64, 8, 8] -> [1, 64, 4, 2, 4, 2]) splits the
    # width too, into a last axis of 2, but is no head split: the pool's RK3566 verdicts have it on the NPU
    unfold = place(tmp_path, _split_then_transpose((1, 64, 8, 8), (1, 64, 4, 2, 4, 2), [0, 1, 3, 5, 2, 4]), "rk3566")["split"]
    assert "reshape_of_unaligned_attention_heads" not in [v.rule for v in unfold.violations]



def test_a_constant_within_1e8_of_zero_counts_as_zeros_as_rknn_toolkit2_folds_it():
    """rknn-toolkit2 2.5.0 folds a product by 2**-27 (I-BERT's LayerNorm scale) as one by zeros,
    and keeps 1.01e-8 or a single channel of 2e-8 (tests/forms_models.py near_zero_scale)."""
    from onnx import numpy_helper

    from edgedeploy.audit.rules import stored_all_close_to_zero

    def stored(values, dtype=np.float32):
        return numpy_helper.from_array(np.asarray(values, dtype))

    assert stored_all_close_to_zero(stored(np.full(64, 2.0**-27)))
    assert stored_all_close_to_zero(stored(np.full(64, -1e-8)))
    assert stored_all_close_to_zero(stored(np.zeros(8), np.float64))
    assert stored_all_close_to_zero(stored(np.zeros(4), np.int64))
    assert not stored_all_close_to_zero(stored(np.full(64, 1.01e-8)))
    one_above = np.full(64, 1e-9)
    one_above[37] = 2e-8  # past the first 16 values: read in full
    assert not stored_all_close_to_zero(stored(one_above))
    assert not stored_all_close_to_zero(stored(np.full(4, 1e-3), np.float16))
    assert not stored_all_close_to_zero(stored([], np.float32))
