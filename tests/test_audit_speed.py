"""What the audit of one model on many chips shares must not change a placement: a rule is
evaluated once per node for every chip only when it does not read its chip argument."""

from __future__ import annotations

import dis
from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper

from edgedeploy.audit.engine import ChipIndependent, LoweredViews, audit_model
from edgedeploy.audit.rules import reads_argument
from edgedeploy.model import load_model
from edgedeploy.pipeline.audit import chip_precision, resolve_chips, rules_for
from edgedeploy.targets import all_targets
from edgedeploy.targets.base import Capability
from tests.helpers import const, make_model, save, tensor

CHIP_NAMES = ("esp32p4", "rk3588")


def _uses_chip(node, chip):
    return chip == "esp32p4"


def _ignores_chip(node, chip):
    return node.op_type == "Conv"


def _passes_chip_on(node, chip):
    return _uses_chip(node, chip)


def _chip_in_comprehension(node, chip):
    return [t for t in node.inputs if t.name.startswith(chip)]


def _chip_in_lambda(node, chip):
    return sorted(node.inputs, key=lambda t: t.name == chip)


def _varargs(*args):
    return None


class _Callable:
    def __call__(self, node, chip):
        return None


@pytest.mark.parametrize(
    "func, reads",
    [(_uses_chip, True), (_ignores_chip, False), (_passes_chip_on, True), (_chip_in_comprehension, True), (_chip_in_lambda, True), (_varargs, True), (_Callable(), True)],
    ids=lambda v: getattr(v, "__name__", type(v).__name__) if callable(v) else str(v),
)
def test_reads_argument(func, reads):
    assert reads_argument(func, 1) is reads


def _reads_by_dis(func, position) -> bool:
    """The slow, obvious reading of the same question (dis names every instruction)."""
    code = func.__code__
    name = code.co_varnames[position]
    if name in code.co_cellvars:
        return True
    return any("FAST" in i.opname and (i.argval == name or (isinstance(i.argval, tuple) and name in i.argval)) for i in dis.get_instructions(code))


def test_every_registered_rule_is_read_as_dis_reads_it():
    rules = [r for t in all_targets() if t.has(Capability.AUDIT) for r in t.module("rules").RULES]
    assert len(rules) > 100
    assert [r.name for r in rules if reads_argument(r.check, 1) != _reads_by_dis(r.check, 1)] == []
    # The one rule that reads its chip today (esp32p4 has more parameter inputs): found.
    assert "parameters_are_constant" in {r.name for r in rules if r.reads_chip}


def _mixed_model():
    """A Conv whose weights are computed at run time (esp32p4 refuses that, esp32s3 does not), a
    Resize, a Sin (off the accelerator on ESP-DL) and a residual Add."""
    w = const("w", np.ones((4, 4, 3, 3), np.float32))
    nodes = [
        helper.make_node("Mul", ["w", "two"], ["w2"], name="scale_weights"),
        helper.make_node("Relu", ["x"], ["r"], name="relu"),
        helper.make_node("Add", ["r", "gate"], ["g"], name="gated"),
        helper.make_node("Conv", ["g", "w_live"], ["c"], name="conv_live", pads=[1, 1, 1, 1]),
        helper.make_node("Conv", ["x", "w2"], ["c2"], name="conv_const", pads=[1, 1, 1, 1]),
        helper.make_node("Sin", ["c"], ["s"], name="sin"),
        helper.make_node("Add", ["s", "c2"], ["y"], name="residual"),
    ]
    inputs = [tensor("x", [1, 4, 8, 8]), tensor("gate", [1, 4, 8, 8]), tensor("w_live", [4, 4, 3, 3])]
    return make_model(nodes, inputs, [tensor("y", 4)], [w, const("two", np.float32(2.0))], opset=13)


def test_shared_audits_equal_separate_audits(tmp_path):
    model = load_model(save(_mixed_model(), tmp_path / "mixed.onnx"))
    chips, _ = resolve_chips(("all",))
    shared = ChipIndependent(model)
    seen_differ = False
    for choice in chips:
        precision, _ = chip_precision(choice.chip, None, False)
        rules = rules_for(choice.target, choice.chip.id, precision)
        alone = audit_model(model, rules, precision).to_dict()
        together = audit_model(model, rules, precision, shared=shared).to_dict()
        assert together == alone, choice.chip.id
        if choice.chip.id in ("esp32s3", "esp32p4"):
            seen_differ |= any(v["rule"] == "parameters_are_constant" for n in together["nodes"] for v in n["violations"])
    assert seen_differ  # the chip-reading rule was exercised through the shared path
    s3 = next(c for c in chips if c.chip.id == "esp32s3")
    p4 = next(c for c in chips if c.chip.id == "esp32p4")
    by_chip = {c.chip.id: audit_model(model, rules_for(c.target, c.chip.id, "int8"), "int8", shared=shared) for c in (s3, p4)}
    live = {c: next(n for n in r.nodes if n.node == "conv_live") for c, r in by_chip.items()}
    assert [v.rule for v in live["esp32p4"].violations if v.rule == "parameters_are_constant"]
    assert not [v.rule for v in live["esp32s3"].violations if v.rule == "parameters_are_constant"]


def test_a_chip_independent_rule_is_evaluated_once_per_node(tmp_path, monkeypatch):
    model = load_model(save(_mixed_model(), tmp_path / "mixed.onnx"))
    chips, _ = resolve_chips(("all",))
    rknn = [c for c in chips if c.target.id == "rknn"]
    assert len(rknn) >= 2
    calls: list[tuple[str, str]] = []
    rules = {c.chip.id: rules_for(c.target, c.chip.id, "int8") for c in rknn}
    shared_rule = next(r for r in rules[rknn[0].chip.id].rules if not r.ops and not r.reads_chip)
    assert all(shared_rule in rs.rules for rs in rules.values())
    original = type(shared_rule).evaluate

    def counting(self, node, chip):
        if self is shared_rule:
            calls.append((node.name, chip))
        return original(self, node, chip)

    monkeypatch.setattr(type(shared_rule), "evaluate", counting)
    shared = ChipIndependent(model)
    for c in rknn:
        audit_model(model, rules[c.chip.id], "int8", shared=shared)
    # every node but the one folded at compile time, once: not once per RKNN chip, nor once per
    # distinct lowering (RK3566/RK3568 have graph passes the other RKNN chips lack), since no pass
    # touches these nodes and a node no pass touched is the same view in every lowering
    lowerings = {LoweredViews.key_of(rs) for rs in rules.values()}
    assert 1 < len(lowerings) < len(rknn)
    expected = [n.name for n in model.graph.node if n.name != "scale_weights"]
    assert sorted(name for name, _ in calls) == sorted(expected)


def test_the_default_report_accounts_for_every_node(tmp_path):
    """Without --detail each node is listed (with its violations), folded, or named by an
    accelerator partition; read back that way, every chip's placements are the detailed ones."""
    from edgedeploy.pipeline.audit import audit_chips

    path = save(_mixed_model(), tmp_path / "mixed.onnx")
    chips, no_rules = resolve_chips(("all",))
    compact = audit_chips(path, {}, chips, list(no_rules))
    detailed = audit_chips(path, {}, chips, list(no_rules), detail=True)
    assert compact["schema"] == detailed["schema"] == "edgedeploy.audit-report/2"
    assert (compact["detail"], detailed["detail"]) == (False, True)
    assert compact["matrix"] == detailed["matrix"] and compact["fail_on"] == detailed["fail_on"]
    for short, full in zip(compact["audits"], detailed["audits"]):
        listed = {n["node"]: n for n in short["nodes"]}
        placements = {name: n["placement"] for name, n in listed.items()}
        placements.update(dict.fromkeys(short["folded"], "accelerator"))
        for partition in short["partitions"]:
            for name in partition["nodes"]:
                if name not in listed:
                    assert partition["unit"] == "accelerator", (short["chip"], name)
                    placements[name] = "accelerator"
        assert placements == {n["node"]: n["placement"] for n in full["nodes"]}, short["chip"]
        assert list(listed.values()) == [n for n in full["nodes"] if n["violations"] and n["node"] not in short["folded"]]
        assert [{k: v for k, v in g.items() if k != "nodes"} for g in full["groups"]] == short["groups"]
        assert sum(g["count"] for g in short["groups"]) == len(full["nodes"])
    assert any(a["folded"] for a in compact["audits"]) and any(a["nodes"] for a in compact["audits"])


def test_the_report_command_reads_node_level_audits_only(tmp_path):
    """An abridged chip audit cannot give the per-node matrix; a detailed one (or audit.json) can."""
    from edgedeploy.pipeline.audit import audit_chips
    from edgedeploy.report.artifact import LoadedArtifact
    from edgedeploy.report.combine import audit_of, audit_summary

    path = save(_mixed_model(), tmp_path / "mixed.onnx")
    chips, _ = resolve_chips(("esp32s3",))
    short = audit_chips(path, {}, chips, [])["audits"][0]
    full = audit_chips(path, {}, chips, [], detail=True)["audits"][0]
    assert audit_of(LoadedArtifact(tmp_path, {"audit": full}, None)) is full
    abridged = LoadedArtifact(tmp_path, {"audit": short}, None)
    assert audit_of(abridged) is None and audit_summary(abridged) == short["summary"]


def test_every_built_in_pass_that_reads_its_chip_says_what_of_it_it_reads():
    """A pass that reads its chip without a chip_key gives every chip a lowering of its own: one
    that tests only `chip in SOME_CHIPS` (softmax_across_an_inner_axis, before its chip_key) took
    the six RKNN chips from three lowerings to six and added about 25 ms of CPU to the audit of
    DenseNet-121 on every chip (scripts/bench_audit.py). chip_key=SOME_CHIPS.__contains__ (or a
    table's .get) keeps the chips it treats alike together; a pass that truly differs per chip
    says so with chip_key=str."""
    unkeyed = set()
    for target in all_targets():
        if not target.has(Capability.AUDIT):
            continue
        for chip in target.chips:
            rules = rules_for(target, chip.id, chip.precisions[0])
            unkeyed |= {f"{target.id}: {p.name}" for p in rules.passes if p.reads_chip and p.chip_key is None}
    assert unkeyed == set()


def _lowered_as_data(result):
    """A LoweringResult as plain data: every node the rules see (name, operator, tensors,
    attributes) and what became of every original node."""
    views = [(v.name, v.op_type, v.domain, [t.name for t in v.inputs], [t.name for t in v.outputs], v.proto.SerializeToString()) for v in result.views]
    lowered = {name: (done.how, done.by.name, done.group) for name, done in result.lowered.items()}
    return views, lowered, result.groups


def test_lowerings_that_share_their_steps_equal_lowerings_made_alone():
    """LoweringSteps lets a lowering take over what another one's passes did on the same graph.
    On fresh4's SAM encoder (its skeleton) transposes_merged_into_matmul fuses two attention
    Transposes on RK3588 and eliminates them on RK3576, chips its chip_key (the value-Transpose
    alignment) does not tell apart: keyed by that, RK3576 got RK3588's lowering."""
    from edgedeploy.audit.engine import node_views
    from edgedeploy.audit.lowering import GraphIndex, LoweringSteps, lower
    from scripts.corpus.agreement import load_for_audit

    path = Path(__file__).parent / "fixtures" / "pool" / "fresh4" / "skeletons" / "hf_sam_vision.onnx"
    model = load_for_audit(path, "skeleton")
    views = node_views(model)
    index, steps = GraphIndex(views), LoweringSteps()
    chips, _ = resolve_chips(("all",))
    made = {}
    for choice in chips:
        rules = rules_for(choice.target, choice.chip.id, choice.chip.precisions[0])
        if rules.passes:
            alone = _lowered_as_data(lower(views, rules.passes, rules.chip))
            made[choice.chip.id] = _lowered_as_data(lower(views, rules.passes, rules.chip, index, steps))
            assert made[choice.chip.id] == alone, choice.chip.id
    assert made["rk3588"][1] != made["rk3576"][1]  # the chips this test is about do differ


def _counted_pass(calls: list, name: str, drops: str | None = None, reads_chip: bool = False):
    """A graph pass that records each run and eliminates the nodes of operator `drops`."""
    from edgedeploy.audit.lowering import graph_pass

    def run(graph, chip):
        calls.append((name, chip))
        for node in graph.nodes:
            if node.op_type == drops:
                graph.eliminate(node)

    if reads_chip:

        def apply(graph, chip):
            """A pass of this test that reads its chip."""
            run(graph, chip)

    else:

        def apply(graph, chip):
            """A pass of this test."""
            run(graph, None)

    apply.__name__ = name
    return graph_pass(chip_key=str if reads_chip else None)(apply)


def test_a_pass_runs_once_on_a_graph_whatever_lowering_gets_there(tmp_path):
    """Two lowerings (rule sets listing different passes) of one model: a pass that changed
    nothing, or changed the graph, is not run again on the graph it was run on; one that reads
    its chip is run for each chip. The second lowering stands on the first's node views."""
    from edgedeploy.audit.engine import node_views
    from edgedeploy.audit.lowering import GraphIndex, LoweringSteps, lower

    views = node_views(load_model(save(_mixed_model(), tmp_path / "mixed.onnx")))
    calls: list = []
    quiet = _counted_pass(calls, "changes_nothing")
    drops_sin = _counted_pass(calls, "drops_sin", drops="Sin")
    per_chip = _counted_pass(calls, "reads_its_chip", reads_chip=True)
    only_b = _counted_pass(calls, "only_in_b")
    first, second = [quiet, drops_sin, per_chip], [quiet, drops_sin, only_b, per_chip]
    assert per_chip.reads_chip and not drops_sin.reads_chip
    index, steps = GraphIndex(views), LoweringSteps()
    a = lower(views, first, "a", index, steps)
    b = lower(views, second, "b", index, steps)
    assert calls == [("changes_nothing", None), ("drops_sin", None), ("reads_its_chip", "a"), ("only_in_b", None), ("reads_its_chip", "b")]
    assert _lowered_as_data(a) == _lowered_as_data(lower(views, first, "a"))
    assert _lowered_as_data(b) == _lowered_as_data(lower(views, second, "b"))
    assert "sin" in b.lowered and [id(v) for v in b.views] == [id(v) for v in a.views]
