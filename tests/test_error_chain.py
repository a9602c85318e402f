"""A toolchain failure keeps an error chain that ends: the build re-raises it, or raises a copy
with more to say from it, never the error from itself (a chain that loops hung every consumer
that walks `__cause__`, the failed-artifact bookkeeping first)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from edgedeploy.errors import ToolchainFailed
from edgedeploy.pipeline import build


def _raised_by_convert_stage(monkeypatch, prediction, node: str | None = None) -> ToolchainFailed:
    failure = ToolchainFailed("The stand-in toolchain failed", toolchain="stand-in", node=node, final_line="boom")

    def fail(ctx):
        raise failure

    monkeypatch.setattr(build, "run_conversion", fail)
    with pytest.raises(ToolchainFailed) as caught:
        build._convert_stage(SimpleNamespace(), {}, prediction)
    return caught.value, failure


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    while exc is not None:
        assert all(exc is not s for s in seen), "the error chain loops"
        seen.append(exc)
        exc = exc.__cause__
    return seen


@pytest.mark.parametrize("prediction", [None, SimpleNamespace(nodes=[])], ids=["no audit", "audit foresaw nothing"])
def test_a_failure_nothing_is_added_to_is_re_raised_as_it_was(monkeypatch, prediction):
    raised, failure = _raised_by_convert_stage(monkeypatch, prediction)
    assert raised is failure
    assert _chain(raised) == [failure]


def test_a_failure_the_audit_foresaw_is_a_copy_raised_from_the_original(monkeypatch):
    node = SimpleNamespace(placement=SimpleNamespace(value="unsupported"), reason="no kernel for Foo", node="foo_1", op_type="Foo")
    raised, failure = _raised_by_convert_stage(monkeypatch, SimpleNamespace(nodes=[node]), node="foo_1")
    assert raised is not failure
    assert _chain(raised) == [raised, failure]
    assert "The audit foresaw this at node 'foo_1' (Foo)" in str(raised)


# -- the audit's foresight only for the node the toolchain failed at ---------------------------


@pytest.fixture(scope="module")
def where_audit(tmp_path_factory):
    """A real esp32s3 audit of a model whose Where node the rules flag as unsupported (as in issue 29)."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    from edgedeploy.audit.engine import audit_model
    from edgedeploy.model import load_model
    from edgedeploy.targets import find_chip
    from tests.helpers import save

    weight = numpy_helper.from_array(np.ones((4, 3, 3, 3), np.float32), "w")
    zero = numpy_helper.from_array(np.zeros((1,), np.float32), "zero")
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], name="/stem/Conv", pads=[1, 1, 1, 1]),
        helper.make_node("Greater", ["c", "zero"], ["m"], name="/head/Greater"),
        helper.make_node("Where", ["m", "c", "zero"], ["y"], name="/head/Where"),
    ]
    graph = helper.make_graph(nodes, "where", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])], [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])], initializer=[weight, zero])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    proto.ir_version = 8
    model = load_model(save(proto, tmp_path_factory.mktemp("where") / "where.onnx"))
    target, chip = find_chip("esp32s3")
    audit = audit_model(model, target.rule_set(chip.id, "int8", target.options_type()), "int8")
    assert [n.node for n in audit.nodes if n.placement.value == "unsupported"] == ["/head/Where"]
    return audit


def _espdl_failure(**fields) -> ToolchainFailed:
    return ToolchainFailed("The espdl toolchain failed", toolchain="espdl", log_path="build.log", **fields)


@pytest.mark.parametrize(
    "fields",
    [
        # esp-ppq failing on a calibration range names no node of the audit's (issue 29).
        {"final_line": "ValueError: the calibration range of '/stem/Conv_output_0' is infinite", "source_location": "esp-ppq's observer"},
        {"node": "/stem/Conv", "op_type": "Conv", "final_line": "ValueError: cannot quantise this layer"},
        {"op_type": "Greater", "final_line": "KeyError: 'm'"},
        {"final_line": "NotImplementedError: no kernel for WhereNot"},  # a longer name is another name
    ],
    ids=["a calibration range", "another node", "another op", "a name that only begins the same"],
)
def test_a_failure_elsewhere_says_nothing_of_the_audit(where_audit, fields):
    failure = _espdl_failure(**fields)
    assert build._with_what_the_audit_foresaw(failure, where_audit) is failure
    assert "audit" not in str(failure)


@pytest.mark.parametrize(
    "fields",
    [
        {"node": "/head/Where", "op_type": "Where", "final_line": "KeyError: 'y'"},
        {"op_type": "Where", "final_line": "KeyError: 'y'"},
        {"final_line": "NotImplementedError: Not support op 'Where' yet"},
        {"final_line": "KeyError: '/head/Where'", "source_location": "the toolchain's align"},
    ],
    ids=["the node named", "its op named", "its op quoted", "its node quoted"],
)
def test_a_failure_at_the_flagged_node_names_what_the_audit_foresaw(where_audit, fields):
    failure = _espdl_failure(**fields)
    named = build._with_what_the_audit_foresaw(failure, where_audit)
    assert named is not failure and named.final_line == failure.final_line
    assert str(named).endswith(named.hints[-1]) and named.hints[-1].startswith("The audit foresaw this at node '/head/Where' (Where): ")
