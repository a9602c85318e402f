"""The audit engine on small graphs whose placements, partitions, transitions and bytes are worked out by hand."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from edgedeploy.audit import OpSupport, Placement, RuleSet, audit_model, rule
from edgedeploy.audit.confirm import NodeVerdict, ToolchainVerdict, compare
from edgedeploy.audit.engine import node_views
from edgedeploy.audit.layers import ToolchainLayer, map_layers
from edgedeploy.audit.rules import Offence
from edgedeploy.model import load_model
from tests.helpers import const, make_model, reshape_by_shape_subgraph, save, tensor


@rule("Relu", placement=Placement.FALLBACK, MAX_RANK=3)
def relu_rank(node, chip):
    """Relu runs on the accelerator up to rank {MAX_RANK}."""
    x = node.input(0)
    if x is not None and x.rank is not None and x.rank > 3:
        return Offence(x.rank, "rank")
    return None


def toy_rules(**overrides) -> RuleSet:
    fields = dict(
        target="toy",
        chip="toy1",
        toolchain_version="toy 1.0",
        source="written for this test",
        accelerator_ops={"Conv": OpSupport(("int8",)), "Relu": OpSupport(("int8",)), "Add": OpSupport(("int8", "int16"))},
        rules=[],
    )
    fields.update(overrides)
    return RuleSet(**fields)


def chain_model(tmp_path):
    """x[1,4,8,8] -> Conv -> Sin -> Relu -> Add(conv, relu) -> y; Conv keeps 4 channels of 8x8."""
    w = np.zeros((4, 4, 1, 1), np.float32)
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], name="conv"),
        helper.make_node("Sin", ["c"], ["s"], name="sin"),
        helper.make_node("Relu", ["s"], ["r"], name="relu"),
        helper.make_node("Add", ["c", "r"], ["y"], name="add"),
    ]
    model = make_model(nodes, [tensor("x", [1, 4, 8, 8])], [tensor("y", [1, 4, 8, 8])], [const("w", w)])
    return load_model(save(model, tmp_path / "chain.onnx"))


def test_placements_partitions_transitions_and_bytes_by_hand(tmp_path):
    result = audit_model(chain_model(tmp_path), toy_rules(), "int8")
    placements = {n.node: n.placement for n in result.nodes}
    # Sin is not in the table and fallback_ops is None (anything falls back): it runs on the CPU.
    assert placements == {"conv": Placement.ACCELERATOR, "sin": Placement.FALLBACK, "relu": Placement.ACCELERATOR, "add": Placement.ACCELERATOR}
    # conv-add (tensor c) and relu-add join one accelerator partition; sin is alone on the CPU.
    assert [(p["unit"], p["nodes"]) for p in result.partitions] == [("accelerator", ["conv", "relu", "add"]), ("fallback", ["sin"])]
    # c goes to the CPU (1*4*8*8 int8 = 256 bytes) and s comes back (256 bytes).
    assert [(c.tensor, c.direction, c.size_bytes) for c in result.crossings] == [("c", "to_fallback", 256), ("s", "to_accelerator", 256)]
    assert result.transitions == 2 and result.crossing_bytes == 512
    assert result.summary_line() == "toy1: 3 of 4 nodes on the accelerator (1 on the CPU); 2 transitions, 512 bytes crossing per inference"
    sin = next(n for n in result.nodes if n.node == "sin")
    assert sin.violations[0].rule == "operator_not_on_accelerator" and sin.violations[0].value == "Sin"


def test_bytes_follow_the_precision(tmp_path):
    model = chain_model(tmp_path)
    assert audit_model(model, toy_rules(), "int16").crossing_bytes == 2 * 512
    assert audit_model(model, toy_rules(), None).crossing_bytes == 4 * 512  # float32 as the model has it


def test_rule_violation_carries_node_rule_and_value(tmp_path):
    # A 4-D Relu breaks relu_rank: FALLBACK, with the measured rank.
    result = audit_model(chain_model(tmp_path), toy_rules(rules=[relu_rank]), "int8")
    relu = next(n for n in result.nodes if n.node == "relu")
    assert relu.placement is Placement.FALLBACK
    v = [v for v in relu.violations if v.rule == "relu_rank"][0]
    assert (v.node, v.value, v.message) == ("relu", 4, "Relu runs on the accelerator up to rank 3.")
    # sin and relu now form one CPU partition: one crossing out (c), one back (r).
    assert [c.tensor for c in result.crossings] == ["c", "r"]


def test_unsupported_when_no_fallback_unit(tmp_path):
    result = audit_model(chain_model(tmp_path), toy_rules(fallback_ops=frozenset()), "int8")
    sin = next(n for n in result.nodes if n.node == "sin")
    assert sin.placement is Placement.UNSUPPORTED and sin.reason.startswith("Neither the accelerator")


def test_precision_gaps_go_where_the_table_says(tmp_path):
    model = chain_model(tmp_path)
    ops = {
        "Conv": OpSupport(("int8", "float"), missing_precision=Placement.FLOAT),
        "Relu": OpSupport(("int8",)),  # default: another unit runs it
        "Add": OpSupport(("int8",), missing_precision=Placement.UNSUPPORTED),
        "Sin": OpSupport(("int16",)),
    }
    result = audit_model(model, toy_rules(accelerator_ops=ops), "int16")
    placed = {n.node: n for n in result.nodes}
    assert placed["conv"].placement is Placement.FLOAT and placed["conv"].violations[0].rule == "operator_float_only"
    assert placed["relu"].placement is Placement.FALLBACK and placed["relu"].violations[0].rule == "precision_not_on_accelerator"
    assert placed["add"].placement is Placement.UNSUPPORTED and placed["add"].violations[0].rule == "precision_unsupported"
    assert placed["sin"].placement is Placement.ACCELERATOR


def test_opset_and_ir_version_limits(tmp_path):
    model = chain_model(tmp_path)  # opset 13, IR 8
    too_old = audit_model(model, toy_rules(min_opset=14), "int8")
    assert {n.placement for n in too_old.nodes} == {Placement.UNSUPPORTED}
    assert too_old.nodes[0].violations[0].rule == "opset_out_of_range"
    ir = audit_model(model, toy_rules(max_ir_version=7), "int8")
    assert ir.nodes[0].placement is Placement.UNSUPPORTED and ir.nodes[0].violations[0].value == 8


def folding_model(tmp_path):
    """Shape(x) -> Gather -> Unsqueeze -> Concat -> Reshape(x): the shape subgraph is computable at compile time."""
    nodes, inits = reshape_by_shape_subgraph("x", "flat")
    nodes.append(helper.make_node("Sin", ["flat"], ["y"], name="sin"))
    model = make_model(nodes, [tensor("x", [1, 2, 3])], [tensor("y", [1, 6])], inits)
    return load_model(save(model, tmp_path / "fold.onnx"))


def test_compile_time_folding_is_opt_in(tmp_path):
    model = folding_model(tmp_path)
    ops = {"Reshape": OpSupport(("int8",))}
    plain = audit_model(model, toy_rules(accelerator_ops=ops, fallback_ops=frozenset()), "int8")
    assert {n.node for n in plain.nodes if n.placement is Placement.UNSUPPORTED} == {"shape", "gather", "unsqueeze", "concat", "sin"}
    folding = audit_model(model, toy_rules(accelerator_ops=ops, fallback_ops=frozenset(), folds_constants=True), "int8")
    placed = {n.node: n for n in folding.nodes}
    for name in ("shape", "gather", "unsqueeze", "concat"):
        assert placed[name].placement is Placement.ACCELERATOR
        assert placed[name].violations[0].rule == "folded_at_compile_time"
    assert placed["reshape"].placement is Placement.ACCELERATOR and placed["sin"].placement is Placement.UNSUPPORTED
    # Folded nodes run nowhere: no partition holds them, nothing crosses from them.
    assert [p["nodes"] for p in folding.partitions] == [["reshape"], ["sin"]]
    assert [c.tensor for c in folding.crossings] == ["flat"]
    views = {v.name: v for v in node_views(model)}
    assert views["reshape"].inputs[1].foldable and not views["reshape"].inputs[0].foldable


def test_graph_outputs_are_never_folded(tmp_path):
    node = helper.make_node("Shape", ["x"], ["y"], name="shape")
    model = load_model(save(make_model([node], [tensor("x", [2, 3])], [helper.make_tensor_value_info("y", TensorProto.INT64, [2])]), tmp_path / "s.onnx"))
    result = audit_model(model, toy_rules(fallback_ops=frozenset(), folds_constants=True), "int8")
    assert result.nodes[0].placement is Placement.UNSUPPORTED


def test_compare_counts_agreement_disagreement_and_unverifiable(tmp_path):
    prediction = audit_model(chain_model(tmp_path), toy_rules(fallback_ops=frozenset()), "int8")  # sin unsupported
    verdict = ToolchainVerdict(
        "toy-compiler",
        "toy 1.0",
        nodes={"conv": NodeVerdict(Placement.ACCELERATOR), "sin": NodeVerdict(Placement.FLOAT), "relu": NodeVerdict(Placement.FLOAT)},
        observes=(Placement.ACCELERATOR, Placement.FLOAT),
    )
    result = compare(prediction, verdict)
    assert (result["compared"], result["agree"]) == (2, 1)
    assert result["disagreements"][0]["node"] == "relu" and result["disagreements"][0]["toolchain"] == "float"
    assert result["unverifiable"] == ["sin"] and result["not_reported"] == ["add"]
    # Without `observes`, the same verdict makes sin a disagreement.
    verdict.observes = None
    assert compare(prediction, verdict)["compared"] == 3
    # A refused model agrees with a prediction that has an unsupported node.
    refused = compare(prediction, ToolchainVerdict("toy-compiler", "toy 1.0", failed="no"))
    assert refused["agree"] == 1


def test_verdict_round_trips_through_json():
    verdict = ToolchainVerdict("t", "t 1", nodes={"a": NodeVerdict(Placement.FLOAT, "F32")}, unmapped=["x"], observes=(Placement.ACCELERATOR,))
    assert ToolchainVerdict.from_dict(verdict.to_dict()) == verdict


def test_layers_map_to_nodes_through_fusion_and_folding():
    graph = helper.make_graph(
        [
            helper.make_node("Conv", ["x", "w"], ["c"]),
            helper.make_node("Relu", ["c"], ["r"]),
            helper.make_node("Shape", ["r"], ["shp"]),
            helper.make_node("Reshape", ["r", "shp"], ["y"], name="reshape"),
        ],
        "g",
        [tensor("x", [1, 1, 2, 2])],
        [tensor("y", 4)],
        [const("w", np.ones((1, 1, 1, 1), np.float32))],
    )
    layers = [
        ToolchainLayer("Conv", ["x", "w"], ["r"]),  # Conv+Relu fused: outputs the Relu's tensor
        ToolchainLayer("Transpose", ["r"], ["PPQ_0"]),  # inserted by the toolchain
        ToolchainLayer("Reshape", ["PPQ_0", "shp"], ["y"]),
    ]
    mapping = map_layers(graph, layers, constants={"shp"})
    assert mapping.nodes == {"Conv_0": (0, "fused"), "Relu_1": (0, "output"), "reshape": (2, "output")}
    assert mapping.folded_nodes == ["Shape_2"] and mapping.unmapped_layers == [1]


def test_rule_needs_its_constants_in_the_docstring():
    """Read when first used, not at import (tests/test_rule_registry.py reads every declared one)."""

    @rule("Relu", LIMIT=3)
    def broken(node, chip):
        """At most {LIMIT} and {MISSING}."""

    with pytest.raises(ValueError, match="not given"):
        broken.sentence  # noqa: B018 - reading it is the check


def test_constant_values_are_read_only_when_asked(tmp_path):
    views = node_views(folding_model(tmp_path))
    gather = next(v for v in views if v.name == "gather")
    assert gather.inputs[1].is_constant and int(gather.inputs[1].value) == 0


def test_onnx_helper_used_in_engine_is_stable():
    # The engine names dtypes the numpy way; keep that contract visible.
    from edgedeploy.model.stats import dtype_name

    assert dtype_name(onnx.TensorProto.FLOAT) == "float32" and dtype_name(onnx.TensorProto.INT64) == "int64"
