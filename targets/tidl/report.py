"""What a TIDL artifact adds to `edgedeploy report`: the compile settings and the deny list, as data.

The build's `tidl` section records what TI's compiler was (or, without TI's tools here, will
be) asked to do: the SoC, the TIDL release, tensor bits, calibration, and the nodes the audit
kept off the C7x/MMA (the deny list), with those TIDL offloaded anyway. The report shows them in
one section the core renders (edgedeploy.report.sections).
"""

from __future__ import annotations

from pathlib import Path

from edgedeploy.report.sections import Column, Fact, Section, Table

TITLE = "TIDL compile settings"
DENY_COLUMNS = (Column("Node", kind="name"), Column("Op"), Column("Why it stays on the Arm cores"))
SETTINGS = (
    ("SoC", "soc", None),
    ("TIDL release", "tidl_version", None),
    ("tensor bits", "tensor_bits", None),
    ("calibration frames", "calibration_frames", None),
    ("calibration iterations", "calibration_iterations", None),
    ("accuracy level", "accuracy_level", None),
    ("subgraphs at most", "max_num_subgraphs", None),
    ("evaluation frames (host emulation)", "eval_frames", None),
)


def report_sections(report: dict, artifact: Path) -> list[Section]:
    section = report.get("tidl")
    if not isinstance(section, dict):
        return []
    facts = tuple(Fact(label, section[key], unit) for label, key, unit in SETTINGS if _scalar(section.get(key)))
    denied = [d for d in section.get("deny_list") or [] if isinstance(d, dict)]
    rows = tuple((_text(d.get("node")), _text(d.get("op_type")), _text(d.get("reason"))) for d in denied)
    tables = (Table(f"deny list: {len(rows)} node(s) kept off the C7x/MMA", DENY_COLUMNS, rows, name="deny-list"),) if rows else ()
    ignored = [n for n in section.get("deny_list_ignored") or [] if isinstance(n, str)]
    notes = (f"TIDL offloaded denied node(s) anyway: {', '.join(ignored)}.",) if ignored else ()
    return [Section(TITLE, facts=facts, tables=tables, notes=notes, source="the build's compile configuration (tidl/)")]


def _scalar(value) -> bool:
    return isinstance(value, (str, int, float)) and not isinstance(value, bool)


def _text(value) -> str | None:
    return value if isinstance(value, str) and value.strip() else None
