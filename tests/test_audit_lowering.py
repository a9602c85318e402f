"""The lowering step: a toolchain's graph passes run before the rules, and every original node
gets the placement of what it became (tests/test_audit_engine.py covers the rules alone)."""

from __future__ import annotations

import numpy as np
from onnx import helper

from edgedeploy.audit import OpSupport, Placement, RuleSet, audit_model
from edgedeploy.audit.rules import Rule
from edgedeploy.audit.lowering import graph_pass
from edgedeploy.model import load_model
from tests.helpers import const, make_model, save, tensor


@graph_pass("Erf", VERSION="toy 1.0")
def fuse_exact_gelu(graph, chip):
    """The toy toolchain {VERSION} fuses the exact GELU chain (Div, Erf, Add, Mul, Mul) into one Gelu."""
    for erf in [n for n in graph.nodes if n.op_type == "Erf"]:
        div = graph.producer(erf.inputs[0].name)
        add = graph.only_consumer(erf.outputs[0].name)
        mul = graph.only_consumer(add.outputs[0].name) if add else None
        half = graph.only_consumer(mul.outputs[0].name) if mul else None
        if div is not None and div.op_type == "Div" and add and add.op_type == "Add" and mul and mul.op_type == "Mul" and half and half.op_type == "Mul":
            graph.fuse([div, erf, add, mul, half], "Gelu", attributes={})


@graph_pass("BatchNormalization")
def fold_batchnorm(graph, chip):
    """The toy toolchain folds a BatchNormalization that follows a Conv into the Conv's weights."""
    for bn in [n for n in graph.nodes if n.op_type == "BatchNormalization"]:
        conv = graph.producer(bn.inputs[0].name)
        if conv is not None and conv.op_type == "Conv" and graph.only_consumer(conv.outputs[0].name) is bn:
            graph.absorb(bn, into=conv)


@graph_pass("Identity")
def drop_identity(graph, chip):
    """The toy toolchain removes Identity nodes."""
    for node in [n for n in graph.nodes if n.op_type == "Identity"]:
        graph.eliminate(node)


def gelu_model():
    rng = np.random.default_rng(0)
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c", "g", "b", "m", "v"], ["bn"], name="bn"),
        helper.make_node("Identity", ["bn"], ["i"], name="identity"),
        helper.make_node("Div", ["i", "sqrt2"], ["d"], name="div"),
        helper.make_node("Erf", ["d"], ["e"], name="erf"),
        helper.make_node("Add", ["e", "one"], ["a"], name="add"),
        helper.make_node("Mul", ["i", "a"], ["m1"], name="mul"),
        helper.make_node("Mul", ["m1", "half"], ["y"], name="half"),
    ]
    inits = [
        const("w", rng.standard_normal((4, 3, 3, 3)).astype(np.float32)),
        *(const(n, np.ones(4, dtype=np.float32)) for n in ("g", "b", "m", "v")),
        const("sqrt2", np.array(1.41421356, dtype=np.float32)),
        const("one", np.array(1.0, dtype=np.float32)),
        const("half", np.array(0.5, dtype=np.float32)),
    ]
    return make_model(nodes, [tensor("x", [1, 3, 8, 8])], [tensor("y", [1, 4, 8, 8])], inits)


def toy_rules(passes) -> RuleSet:
    # The accelerator runs Conv and Gelu; Div, Erf, Add, Mul, BatchNormalization and Identity only the CPU.
    return RuleSet(
        target="toy",
        chip="toy1",
        toolchain_version="toy 1.0",
        source="written for this test",
        accelerator_ops={"Conv": OpSupport(("int8",)), "Gelu": OpSupport(("int8",))},
        rules=[],
        passes=list(passes),
    )


def test_without_the_passes_the_chain_and_the_batchnorm_fall_back(tmp_path):
    model = load_model(save(gelu_model(), tmp_path / "m.onnx"))
    result = audit_model(model, toy_rules([]), "int8")
    placements = {n.node: n.placement for n in result.nodes}
    assert placements["conv"] is Placement.ACCELERATOR
    assert all(placements[n] is Placement.FALLBACK for n in ("bn", "identity", "div", "erf", "add", "mul", "half"))
    assert result.transitions == 1


def test_the_passes_fuse_fold_and_eliminate_and_report_on_the_original_names(tmp_path):
    model = load_model(save(gelu_model(), tmp_path / "m.onnx"))
    result = audit_model(model, toy_rules([fold_batchnorm, drop_identity, fuse_exact_gelu]), "int8")
    by_name = {n.node: n for n in result.nodes}
    # Every original node is still reported, under its own name.
    assert [n.node for n in result.nodes] == ["conv", "bn", "identity", "div", "erf", "add", "mul", "half"]
    assert all(n.placement is Placement.ACCELERATOR for n in result.nodes)
    assert by_name["bn"].lowered == "fused" and by_name["bn"].fused_into == "conv" and by_name["bn"].lowered_by == "fold_batchnorm"
    assert by_name["identity"].lowered == "eliminated" and by_name["identity"].folded
    for name in ("div", "erf", "add", "mul", "half"):
        assert by_name[name].lowered == "fused" and by_name[name].fused_into == "div", name
    assert "fuses the exact GELU chain" in by_name["erf"].reason
    assert result.transitions == 0 and len(result.partitions) == 1
    # The JSON says what became of each node.
    erf = next(n for n in result.to_dict()["nodes"] if n["node"] == "erf")
    assert erf["lowered"] == "fused" and erf["fused_into"] == "div"


def test_a_fused_node_off_the_accelerator_keeps_its_own_reason(tmp_path):
    model = load_model(save(gelu_model(), tmp_path / "m.onnx"))
    rules = toy_rules([fuse_exact_gelu])
    del rules.accelerator_ops["Gelu"]  # this chip has no Gelu kernel
    result = audit_model(model, rules, "int8")
    erf = next(n for n in result.nodes if n.node == "erf")
    assert erf.placement is Placement.FALLBACK and erf.fused_into == "div"
    assert "no kernel" in erf.reason  # the group's decisive reason, not the fusion note


@graph_pass("Relu")
def mark_relu(graph, chip):
    """The toy toolchain marks every Relu (a pass that fuses one node alone, as many passes do)."""
    for relu in [n for n in graph.nodes if n.op_type == "Relu"]:
        graph.fuse([relu], "Relu", attributes={"toy_marked": 1})


def test_a_dead_end_fused_alone_keeps_its_output_for_the_rules(tmp_path):
    # The Relu's result is read by nothing and is no model output (an exporter's leftover): the
    # fused node must still have its output, since rules read it (RKNN's rules read output shapes;
    # an empty output list made one crash with AttributeError on Mask2Former-like probes).
    nodes = [helper.make_node("Conv", ["x", "w"], ["y"], name="conv"), helper.make_node("Relu", ["y"], ["dead"], name="relu")]
    model = make_model(nodes, [tensor("x", [1, 3, 8, 8])], [tensor("y", [1, 4, 8, 8])], [const("w", np.full((4, 3, 1, 1), 0.1, dtype=np.float32))])
    seen = []

    def shape_of_the_output(node, chip):
        seen.append(tuple(node.output(0).shape))
        return None

    rules = toy_rules([mark_relu])
    rules.accelerator_ops["Relu"] = OpSupport(("int8",))
    rules.rules.append(Rule(name="shape_of_the_output", ops=frozenset({"Relu"}), placement=Placement.FALLBACK, constants={}, check=shape_of_the_output, template="reads the output"))
    audit_model(load_model(save(model, tmp_path / "m.onnx")), rules, "int8")
    assert seen == [(1, 4, 8, 8)]
