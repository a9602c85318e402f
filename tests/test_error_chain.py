"""A toolchain failure keeps an error chain that ends: the build re-raises it, or raises a copy
with more to say from it, never the error from itself (a chain that loops hung every consumer
that walks `__cause__`, the failed-artifact bookkeeping first)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from edgedeploy.errors import ToolchainFailed
from edgedeploy.pipeline import build


def _raised_by_convert_stage(monkeypatch, prediction) -> ToolchainFailed:
    failure = ToolchainFailed("The stand-in toolchain failed", toolchain="stand-in", final_line="boom")

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
    raised, failure = _raised_by_convert_stage(monkeypatch, SimpleNamespace(nodes=[node]))
    assert raised is not failure
    assert _chain(raised) == [raised, failure]
    assert "The audit foresaw this at node 'foo_1' (Foo)" in str(raised)
