"""Each rewrite keeps the model's function within its stated tolerance, through ONNX Runtime,
on random inputs and on real ones (the sample's MNIST digits where the shapes allow)."""

from __future__ import annotations

import math

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from edgedeploy.fix.passes import REWRITES, convert_opset, find_rewrite
from tests.helpers import const, make_model, reshape_by_shape_subgraph, tensor


def run(model: onnx.ModelProto, feeds: dict) -> list[np.ndarray]:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def check(model: onnx.ModelProto, rewrite_name: str, feeds_list: list[dict], expect_ops: set[str] | None = None, forbid_ops: set[str] = frozenset()):
    """Apply a rewrite to a copy; assert it changed something, and outputs stay within tolerance."""
    rewrite = find_rewrite(rewrite_name)
    after = onnx.ModelProto()
    after.CopyFrom(model)
    changes = rewrite.apply(after)
    assert changes, f"{rewrite_name} found nothing to rewrite"
    onnx.checker.check_model(after)
    ops = {n.op_type for n in after.graph.node}
    if expect_ops:
        assert expect_ops <= ops, ops
    assert not (forbid_ops & ops), ops
    worst = 0.0
    for feeds in feeds_list:
        for a, b in zip(run(model, feeds), run(after, feeds)):
            worst = max(worst, float(np.max(np.abs(a - b))))
    assert worst <= max(rewrite.max_abs_error, 1e-6), (rewrite_name, worst)
    return after, changes, worst


def random_feeds(name, shape, n=3, scale=3.0):
    rng = np.random.default_rng(0)
    return [{name: (rng.standard_normal(shape) * scale).astype(np.float32)} for _ in range(n)]


@pytest.fixture(scope="module")
def digits():
    """Real inputs: 8 MNIST digits from the sample's held-out split, [8, 1, 28, 28] in [0, 1]."""
    from edgedeploy.sample import sample_eval_path

    return np.load(sample_eval_path())["input"][:8]


def erf_gelu_model(half_first=False, opset=13):
    nodes = [
        helper.make_node("Div", ["x", "sqrt2"], ["d"], name="div"),
        helper.make_node("Erf", ["d"], ["e"], name="erf"),
        helper.make_node("Add", ["e", "one"], ["a"], name="add"),
    ]
    if half_first:
        nodes += [helper.make_node("Mul", ["x", "half"], ["h"], name="half"), helper.make_node("Mul", ["h", "a"], ["y"], name="mul")]
    else:
        nodes += [helper.make_node("Mul", ["x", "a"], ["m"], name="mul"), helper.make_node("Mul", ["m", "half"], ["y"], name="half")]
    inits = [const("sqrt2", np.array(math.sqrt(2), np.float32)), const("one", np.array(1.0, np.float32)), const("half", np.array(0.5, np.float32))]
    return make_model(nodes, [tensor("x", [8, 1, 28, 28])], [tensor("y", [8, 1, 28, 28])], inits, opset=opset)


@pytest.mark.parametrize("half_first", [False, True])
def test_erf_gelu_to_gelu(half_first, digits):
    feeds = random_feeds("x", (8, 1, 28, 28)) + [{"x": digits * 4 - 2}]
    after, changes, _ = check(erf_gelu_model(half_first), "erf_gelu_to_gelu", feeds, expect_ops={"Gelu"}, forbid_ops={"Erf"})
    assert changes[0].replaced == ["div", "erf", "add", "mul", "half"] or set(changes[0].replaced) == {"div", "erf", "add", "mul", "half"}
    assert any(i.version >= 20 for i in after.opset_import if i.domain in ("", "ai.onnx"))


def test_erf_gelu_to_tanh_is_an_approximation_within_1e_3(digits):
    feeds = random_feeds("x", (8, 1, 28, 28)) + [{"x": digits * 4 - 2}]
    _, _, worst = check(erf_gelu_model(), "erf_gelu_to_tanh", feeds, expect_ops={"Tanh"}, forbid_ops={"Erf"})
    assert 1e-6 < worst < 1e-3  # a real approximation: not exact, and within its stated error
    assert not find_rewrite("erf_gelu_to_tanh").exact


def test_gelu_operator_to_tanh():
    model = make_model([helper.make_node("Gelu", ["x"], ["y"], name="g")], [tensor("x", [4, 16])], [tensor("y", [4, 16])], opset=20)
    check(model, "gelu_to_tanh", random_feeds("x", (4, 16)), expect_ops={"Tanh"}, forbid_ops={"Gelu"})


def test_hardswish_decompose_and_fuse_back(digits):
    model = make_model([helper.make_node("HardSwish", ["x"], ["y"], name="hs")], [tensor("x", [8, 1, 28, 28])], [tensor("y", [8, 1, 28, 28])], opset=14)
    feeds = random_feeds("x", (8, 1, 28, 28)) + [{"x": digits * 8 - 4}]
    check(model, "hardswish_decompose", feeds, expect_ops={"HardSigmoid", "Mul"}, forbid_ops={"HardSwish"})


def test_clip_chain_fuses_to_hardswish_and_hardsigmoid():
    # PyTorch's older export of hardswish: x * clip(x + 3, 0, 6) / 6
    nodes = [
        helper.make_node("Add", ["x", "three"], ["a"], name="add3"),
        helper.make_node("Clip", ["a", "zero", "six"], ["c"], name="clip"),
        helper.make_node("Div", ["c", "six"], ["d"], name="div6"),
        helper.make_node("Mul", ["x", "d"], ["y"], name="mulx"),
        helper.make_node("Add", ["x", "three"], ["a2"], name="add3b"),
        helper.make_node("Clip", ["a2", "zero", "six"], ["c2"], name="clipb"),
        helper.make_node("Div", ["c2", "six"], ["z"], name="div6b"),
    ]
    inits = [const("three", np.array(3.0, np.float32)), const("zero", np.array(0.0, np.float32)), const("six", np.array(6.0, np.float32))]
    model = make_model(nodes, [tensor("x", [2, 64])], [tensor("y", [2, 64]), tensor("z", [2, 64])], inits, opset=14)
    after, changes, _ = check(model, "hardsigmoid_fuse", random_feeds("x", (2, 64)), expect_ops={"HardSwish", "HardSigmoid"}, forbid_ops={"Clip"})
    assert {c.note for c in changes} == {"HardSwish", "HardSigmoid"}


def test_hardsigmoid_decompose():
    model = make_model([helper.make_node("HardSigmoid", ["x"], ["y"], name="hsig", alpha=0.25, beta=0.4)], [tensor("x", [2, 64])], [tensor("y", [2, 64])])
    check(model, "hardsigmoid_decompose", random_feeds("x", (2, 64)), expect_ops={"Clip"}, forbid_ops={"HardSigmoid"})


def test_silu_to_swish_and_back():
    nodes = [helper.make_node("Sigmoid", ["x"], ["s"], name="sig"), helper.make_node("Mul", ["x", "s"], ["y"], name="mul")]
    model = make_model(nodes, [tensor("x", [2, 64])], [tensor("y", [2, 64])], opset=13)
    after, _, _ = check(model, "silu_to_swish", random_feeds("x", (2, 64)), expect_ops={"Swish"}, forbid_ops={"Sigmoid"})
    check(after, "swish_decompose", random_feeds("x", (2, 64)), expect_ops={"Sigmoid", "Mul"}, forbid_ops={"Swish"})


def test_mish_decompose():
    model = make_model([helper.make_node("Mish", ["x"], ["y"], name="mish")], [tensor("x", [2, 64])], [tensor("y", [2, 64])], opset=18)
    check(model, "mish_decompose", random_feeds("x", (2, 64), scale=10.0), expect_ops={"Tanh", "Exp", "Log"}, forbid_ops={"Mish"})


def test_mish_to_softplus_tanh():
    model = make_model([helper.make_node("Mish", ["x"], ["y"], name="mish")], [tensor("x", [2, 64])], [tensor("y", [2, 64])], opset=18)
    check(model, "mish_to_softplus_tanh", random_feeds("x", (2, 64), scale=10.0), expect_ops={"Softplus", "Tanh"}, forbid_ops={"Mish"})


def layernorm_model():
    rng = np.random.default_rng(3)
    node = helper.make_node("LayerNormalization", ["x", "g", "b"], ["y"], name="ln", axis=-1, epsilon=1e-5)
    return make_model([node], [tensor("x", [2, 7, 32])], [tensor("y", [2, 7, 32])], [const("g", rng.random(32).astype(np.float32) + 0.5), const("b", rng.random(32).astype(np.float32))], opset=17)


def test_layernorm_decompose_then_fuse_round_trip():
    feeds = random_feeds("x", (2, 7, 32))
    decomposed, _, _ = check(layernorm_model(), "layernorm_decompose", feeds, expect_ops={"ReduceMean", "Sqrt", "Div"}, forbid_ops={"LayerNormalization"})
    fused, changes, _ = check(decomposed, "layernorm_fuse", feeds, expect_ops={"LayerNormalization"}, forbid_ops={"ReduceMean", "Sqrt"})
    assert len(fused.graph.node) == 1


def conv_bn_model():
    rng = np.random.default_rng(4)
    nodes = [
        helper.make_node("Conv", ["x", "w", "cb"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c", "g", "b", "m", "v"], ["y"], name="bn", epsilon=1e-3),
    ]
    inits = [
        const("w", rng.standard_normal((6, 1, 3, 3)).astype(np.float32)),
        const("cb", rng.standard_normal(6).astype(np.float32)),
        const("g", rng.random(6).astype(np.float32) + 0.5),
        const("b", rng.standard_normal(6).astype(np.float32)),
        const("m", rng.standard_normal(6).astype(np.float32)),
        const("v", rng.random(6).astype(np.float32) + 0.1),
    ]
    return make_model(nodes, [tensor("x", [8, 1, 28, 28])], [tensor("y", [8, 6, 28, 28])], inits)


def test_fold_batchnorm_into_conv(digits):
    after, _, _ = check(conv_bn_model(), "fold_batchnorm", random_feeds("x", (8, 1, 28, 28)) + [{"x": digits}], forbid_ops={"BatchNormalization"})
    assert [n.op_type for n in after.graph.node] == ["Conv"]


def test_fold_batchnorm_into_gemm():
    rng = np.random.default_rng(5)
    nodes = [
        helper.make_node("Gemm", ["x", "w", "bias"], ["c"], name="fc", transB=1),
        helper.make_node("BatchNormalization", ["c", "g", "b", "m", "v"], ["y"], name="bn"),
    ]
    inits = [const("w", rng.standard_normal((10, 16)).astype(np.float32)), const("bias", rng.standard_normal(10).astype(np.float32))]
    inits += [const(n, (rng.random(10) + 0.5).astype(np.float32)) for n in ("g", "b", "m", "v")]
    model = make_model(nodes, [tensor("x", [4, 16])], [tensor("y", [4, 10])], inits)
    check(model, "fold_batchnorm", random_feeds("x", (4, 16)), forbid_ops={"BatchNormalization"})


def test_fold_pad_into_conv(digits):
    rng = np.random.default_rng(6)
    nodes = [
        helper.make_node("Pad", ["x", "pads"], ["p"], name="pad", mode="constant"),
        helper.make_node("Conv", ["p", "w"], ["y"], name="conv", pads=[0, 1, 0, 1]),
    ]
    inits = [const("pads", np.array([0, 0, 2, 1, 0, 0, 2, 1], np.int64)), const("w", rng.standard_normal((4, 1, 3, 3)).astype(np.float32))]
    model = make_model(nodes, [tensor("x", [8, 1, 28, 28])], [tensor("y", 4)], inits)
    after, _, _ = check(model, "fold_pad_into_conv", random_feeds("x", (8, 1, 28, 28)) + [{"x": digits}], forbid_ops={"Pad"})
    pads = next(list(a.ints) for a in after.graph.node[0].attribute if a.name == "pads")
    assert pads == [2, 2, 2, 2]


def test_reflect_pad_is_not_folded():
    nodes = [helper.make_node("Pad", ["x", "pads"], ["p"], name="pad", mode="reflect"), helper.make_node("Conv", ["p", "w"], ["y"], name="conv")]
    inits = [const("pads", np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64)), const("w", np.ones((1, 1, 3, 3), np.float32))]
    model = make_model(nodes, [tensor("x", [1, 1, 8, 8])], [tensor("y", 4)], inits)
    assert find_rewrite("fold_pad_into_conv").apply(model) == []


def test_fold_constants_and_shape_subgraph():
    # y = Reshape(x, Concat(Shape(x)[0], -1)) + (c1 * c2): the shape subgraph and the product fold away.
    nodes, inits = reshape_by_shape_subgraph("x", "r")
    nodes += [helper.make_node("Mul", ["c1", "c2"], ["c"], name="constmul"), helper.make_node("Add", ["r", "c"], ["y"], name="add")]
    inits += [const("c1", np.full((1, 12), 2.0, np.float32)), const("c2", np.full((1, 12), 3.0, np.float32))]
    model = make_model(nodes, [tensor("x", [2, 3, 4])], [tensor("y", [2, 12])], inits)
    after, changes, _ = check(model, "fold_constants", random_feeds("x", (2, 3, 4)), forbid_ops={"Shape", "Gather", "Concat"})
    assert [n.op_type for n in after.graph.node] == ["Reshape", "Add"]


def test_collapse_reshape_chains_and_transposes(digits):
    nodes = [
        helper.make_node("Flatten", ["x"], ["f"], name="flatten"),
        helper.make_node("Unsqueeze", ["f", "ax"], ["u"], name="unsqueeze"),
        helper.make_node("Reshape", ["u", "shape"], ["r"], name="reshape"),
        helper.make_node("Transpose", ["r"], ["t1"], name="t1", perm=[0, 2, 1]),
        helper.make_node("Transpose", ["t1"], ["y"], name="t2", perm=[0, 2, 1]),
    ]
    inits = [const("ax", np.array([1], np.int64)), const("shape", np.array([8, 28, 28], np.int64))]
    model = make_model(nodes, [tensor("x", [8, 1, 28, 28])], [tensor("y", [8, 28, 28])], inits)
    after, _, _ = check(model, "collapse_reshape_chains", [{"x": digits}] + random_feeds("x", (8, 1, 28, 28)), forbid_ops={"Flatten", "Unsqueeze", "Transpose"})
    assert [n.op_type for n in after.graph.node] == ["Reshape"]


def test_remove_dropout_keeps_one_whose_mask_is_used(digits):
    # The ONNX zoo's opset-9 form: Dropout with a (named, unused) mask output, which
    # rknn-toolkit2 2.5.0 refuses; removing it is exact at inference.
    w = const("w", np.random.default_rng(0).standard_normal((4, 1, 3, 3)).astype(np.float32))
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("Dropout", ["c"], ["d", "mask"], name="dropout", ratio=0.5),
        helper.make_node("Relu", ["d"], ["y"], name="relu"),
    ]
    model = make_model(nodes, [tensor("x", [8, 1, 28, 28])], [tensor("y", [8, 4, 28, 28])], [w], opset=9)
    after, changes, _ = check(model, "remove_dropout", [{"x": digits}] + random_feeds("x", (8, 1, 28, 28)), forbid_ops={"Dropout", "Identity"})
    assert [c.replaced for c in changes] == [["dropout"]]
    # A mask that is a model output stays: the rewrite finds nothing.
    model.graph.output.append(helper.make_tensor_value_info("mask", TensorProto.BOOL, [8, 4, 28, 28]))
    assert find_rewrite("remove_dropout").apply(model) == []


def test_convert_opset():
    model = make_model([helper.make_node("Relu", ["x"], ["y"], name="r")], [tensor("x", [2, 3])], [tensor("y", [2, 3])], opset=13)
    changes = convert_opset(17)(model)
    assert changes and any(i.version == 17 for i in model.opset_import)


def test_every_rewrite_is_documented_and_tested():
    """Each pass has a docstring (what users read) and a test in this file naming it."""
    source = open(__file__).read()
    for r in REWRITES:
        assert r.apply.__doc__, r.name
        assert f'"{r.name}"' in source, f"no test for {r.name}"
