"""The hostile suite's fixture (`hostile`: one case's sandbox) and its figures.

Each module sets CATEGORY (model intake, names, file system, datasets, inventory, toolchain
failures); the verdicts of its cases are tallied under it and printed at the end of the run as
the figures docs/reliability.md quotes. With EDGEDEPLOY_HOSTILE_FIGURES=PATH they are also
written to PATH as JSON.
"""

from __future__ import annotations

import json
import os

import pytest

from tests.hostile.harness import Hostile, Tally

_TALLY = Tally()


@pytest.fixture
def hostile(tmp_path, monkeypatch, request) -> Hostile:
    category = getattr(request.module, "CATEGORY", request.module.__name__.rsplit(".", 1)[-1])
    case = Hostile(tmp_path, category, request.node.nodeid, _TALLY, monkeypatch)
    yield case
    # Even a case that failed its verdict must not have lost anything or left processes behind.
    case.check_no_orphans()
    case.check_nothing_lost()


def pytest_terminal_summary(terminalreporter):
    if not _TALLY.cases:
        return
    totals = _TALLY.totals()
    cases = sum(totals.values())
    terminalreporter.section("hostile-input figures")
    for category, per in sorted(_TALLY.cases.items()):
        terminalreporter.write_line(f"{category:20s} {sum(per.values()):4d} cases: " + ", ".join(f"{n} {v}" for v, n in sorted(per.items())))
    terminalreporter.write_line(
        f"{'total':20s} {cases:4d} cases: " + ", ".join(f"{n} {v}" for v, n in sorted(totals.items())) + f"; {_TALLY.orphans} orphaned processes"
    )
    path = os.environ.get("EDGEDEPLOY_HOSTILE_FIGURES")
    if path:
        with open(path, "w") as fh:
            json.dump({"cases": cases, "totals": totals, "by_category": _TALLY.cases, "orphans": _TALLY.orphans}, fh, indent=2, sort_keys=True)
