"""The audit of one model on many chips shares work across chips (ChipIndependent); with the
lowering step the nodes the rules see differ per toolchain, so sharing must follow the lowering.

No target declares a graph pass yet, so the passes here are test doubles written the way a
target writes them (edgedeploy.audit.lowering): one absorbs a Relu into the Conv before it, one
eliminates Identity nodes, and one reads its chip (it fuses Sin+Add into one node on one chip
only). A chip-independent rule, shared by every rule set, flags a Conv by the name of the
tensor it writes: that name changes when the Relu is absorbed, so evaluating it once per node
index across lowerings would give the wrong answer on some chip.
"""

from __future__ import annotations

import dataclasses
import json

import pytest
from onnx import helper

from edgedeploy.audit.engine import ChipIndependent, audit_model
from edgedeploy.audit.lowering import graph_pass
from edgedeploy.audit.report import ChipAudit, build_report
from edgedeploy.audit.rules import Offence, Placement, Rule
from edgedeploy.model import load_model
from edgedeploy.pipeline.audit import chip_precision, resolve_chips, rules_for
from tests.helpers import const, make_model, save, tensor

LOWERED_BY = []  # (pass name, chip) per run of a pass


@graph_pass("Relu")
def absorb_relu_into_conv(graph, chip):
    """Test double: the toolchain absorbs a Relu into the Conv before it."""
    LOWERED_BY.append("absorb_relu_into_conv")
    for relu in [n for n in graph.nodes if n.op_type == "Relu"]:
        conv = graph.producer(relu.inputs[0].name)
        if conv is not None and conv.op_type == "Conv" and graph.only_consumer(relu.inputs[0].name) is relu:
            graph.absorb(relu, into=conv)


@graph_pass("Identity")
def eliminate_identity(graph, chip):
    """Test double: the toolchain removes Identity nodes (a wire)."""
    LOWERED_BY.append("eliminate_identity")
    for node in [n for n in graph.nodes if n.op_type == "Identity"]:
        graph.eliminate(node)


@graph_pass("Sin")
def fuse_sin_add_on_one_chip(graph, chip):
    """Test double: on rk3588 only, the toolchain fuses a Sin and the Add after it."""
    LOWERED_BY.append("fuse_sin_add_on_one_chip")
    if chip != "rk3588":
        return
    for sin in [n for n in graph.nodes if n.op_type == "Sin"]:
        add = graph.only_consumer(sin.outputs[0].name)
        if add is not None and add.op_type == "Add":
            graph.fuse([sin, add], "SinAdd")


def _flags_conv_by_output(node, chip):
    if node.outputs and node.outputs[0].name.endswith("_act"):
        return Offence(node.outputs[0].name, "writes the activation")
    return None


CONV_WRITES_ACTIVATION = Rule(
    name="conv_writes_activation",
    ops=frozenset({"Conv"}),
    placement=Placement.FALLBACK,
    constants={},
    check=_flags_conv_by_output,
    template="Test double: a Conv that writes the activation runs on the fallback unit.",
)


def _model():
    w = const("w", __import__("numpy").full((4, 4, 3, 3), 0.1, dtype="float32"))
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r_act"], name="relu"),
        helper.make_node("Identity", ["r_act"], ["i"], name="identity"),
        helper.make_node("Sin", ["i"], ["s"], name="sin"),
        helper.make_node("Add", ["s", "i"], ["a"], name="add"),
        helper.make_node("Conv", ["a", "w"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
        helper.make_node("Sigmoid", ["c2"], ["y"], name="sigmoid"),
    ]
    return make_model(nodes, [tensor("x", [1, 4, 8, 8])], [tensor("y", 4)], [w], opset=13)


def _rule_sets():
    """Every chip's rule set with the test passes: RKNN chips absorb and eliminate (the same pass
    objects), ESP-DL chips run the chip-reading pass, the rest none; every set holds the shared rule."""
    chips, _ = resolve_chips(("all",))
    out = []
    for choice in chips:
        precision, _ = chip_precision(choice.chip, None, False)
        rules = rules_for(choice.target, choice.chip.id, precision)
        if choice.target.id == "rknn":
            passes = [absorb_relu_into_conv, eliminate_identity] + ([fuse_sin_add_on_one_chip] if choice.chip.id in ("rk3588", "rk3566") else [])
        elif choice.target.id == "espdl":
            passes = [fuse_sin_add_on_one_chip]
        else:
            passes = []
        out.append((choice, precision, dataclasses.replace(rules, passes=passes, rules=list(rules.rules) + [CONV_WRITES_ACTIVATION])))
    return out


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return load_model(save(_model(), tmp_path_factory.mktemp("m") / "lowered.onnx"))


def test_shared_audits_equal_separate_audits_with_lowering(model):
    shared = ChipIndependent(model)
    sets = _rule_sets()
    for choice, precision, rules in sets:
        alone = audit_model(model, rules, precision).to_dict()
        together = audit_model(model, rules, precision, shared=shared).to_dict()
        assert together == alone, choice.chip.id
    by_chip = {choice.chip.id: audit_model(model, rules, precision, shared=shared) for choice, precision, rules in sets}
    conv = {chip: next(n for n in r.nodes if n.node == "conv") for chip, r in by_chip.items()}
    # The shared rule sees the Conv that absorbed the Relu (writing r_act) on RKNN, the plain Conv elsewhere.
    assert conv["rk3588"].placement is Placement.FALLBACK and conv["rk3588"].lowered == "fused"
    assert "conv_writes_activation" not in {v.rule for v in conv["esp32s3"].violations}
    # The chip-reading pass fused on rk3588 and not on rk3566 (same pass objects, chip in the key).
    assert next(n for n in by_chip["rk3588"].nodes if n.node == "sin").fused_into == "sin"
    assert next(n for n in by_chip["rk3566"].nodes if n.node == "sin").lowered is None
    # The eliminated Identity is a wire: nothing crosses from it, and the Sin reads the Conv's side.
    rk = by_chip["rk3566"]
    assert next(n for n in rk.nodes if n.node == "identity").lowered == "eliminated"
    assert all(c.producer != "identity" and c.consumer != "identity" for c in rk.crossings)
    assert all("identity" not in p["nodes"] for p in rk.partitions)


def test_a_lowering_is_computed_once_per_chips_that_share_it(model):
    sets = _rule_sets()
    shared = ChipIndependent(model)
    LOWERED_BY.clear()
    for choice, precision, rules in sets:
        audit_model(model, rules, precision, shared=shared)
    rknn = [c.chip.id for c, _, _ in sets if c.target.id == "rknn"]
    esp = [c.chip.id for c, _, _ in sets if c.target.id == "espdl"]
    with_chip_pass = [c for c in rknn if c in ("rk3588", "rk3566")]
    assert len(rknn) > len(with_chip_pass) >= 1, "the fixture needs RKNN chips with and without the chip-reading pass"
    # RKNN chips with and without the chip-reading pass do not share a lowering, but a pass runs once on a given
    # graph whichever lowering gets there (lowering.LoweringSteps): the chip-independent passes, first in every
    # RKNN list, run once; the chip-reading one once per chip that lists it.
    assert LOWERED_BY.count("absorb_relu_into_conv") == 1 and LOWERED_BY.count("eliminate_identity") == 1
    assert LOWERED_BY.count("fuse_sin_add_on_one_chip") == len(with_chip_pass) + len(esp)
    assert absorb_relu_into_conv.reads_chip is False and fuse_sin_add_on_one_chip.reads_chip is True


def test_the_report_shows_lowering_units_and_validates(model, tmp_path):
    from edgedeploy.report.schemas import validate

    pytest.importorskip("jsonschema", reason="the test extra installs jsonschema: pip install -e '.[test]'")
    shared = ChipIndependent(model)
    audits = [ChipAudit(audit_model(model, rules, precision, shared=shared), c.target.name, c.chip.name) for c, precision, rules in _rule_sets()]
    compact = build_report(model, audits, [])
    detailed = build_report(model, audits, [], detail=True)
    for report in (compact, detailed):
        validate(json.loads(json.dumps(report)))
    short = next(a for a in compact["audits"] if a["chip"] == "rk3588")
    full = next(a for a in detailed["audits"] if a["chip"] == "rk3588")
    assert short["units"] and short["units"] == full["units"]
    by_how = {e["how"]: e for e in short["lowered"]}
    assert by_how["eliminated"]["nodes"] == ["identity"] and by_how["eliminated"]["by"] == "eliminate_identity"
    fused = {(e["by"], g["into"]): g["nodes"] for e in short["lowered"] if e["how"] == "fused" for g in e["groups"]}
    assert fused == {("absorb_relu_into_conv", "conv"): ["conv", "relu"], ("fuse_sin_add_on_one_chip", "sin"): ["sin", "add"]}
    # Off the accelerator, a fused node is listed with what it became.
    listed = {n["node"]: n for n in short["nodes"]}
    assert listed["conv"]["lowered"] == "fused" and listed["conv"]["fused_into"] == "conv"
    assert [n["node"] for n in full["nodes"]] == [n.node for n in audits[0].result.nodes]
    assert all("lowered" in n for n in full["nodes"] if n["node"] in ("conv", "relu", "identity", "sin", "add"))
    # Every node is accounted for without --detail: listed, folded, lowered away, or in a partition.
    for s, f in zip(compact["audits"], detailed["audits"]):
        placements = {n["node"]: n["placement"] for n in s["nodes"]}
        placements.update(dict.fromkeys(s["folded"], "accelerator"))
        for entry in s["lowered"]:
            placements.update(dict.fromkeys(entry.get("nodes", ()), "accelerator"))
            for g in entry.get("groups", ()):
                for name in g["nodes"]:
                    placements.setdefault(name, g["placement"])
        for p in s["partitions"]:
            for name in p["nodes"]:
                placements.setdefault(name, "accelerator")
        assert placements == {n["node"]: n["placement"] for n in f["nodes"]}, s["chip"]
    # The schema is checked: a wrong `lowered` entry does not validate.
    broken = json.loads(json.dumps(compact))
    next(a for a in broken["audits"] if a["chip"] == "rk3588")["lowered"][0]["how"] = "merged"
    with pytest.raises(Exception):
        validate(broken)
