"""What an RKNN artifact adds to `edgedeploy report`: rknn-toolkit2's accuracy analysis, as data.

With --rknn-analyse, the build runs accuracy_analysis on one evaluation sample and keeps, per
ONNX node, the cosine of the simulator's layer output against the float model's: `single` (the
layer alone, on the float model's inputs) and `entire` (accumulated from the model's input).
The report shows the WORST_LAYERS nodes of lowest single-layer cosine, in one section the core
renders (edgedeploy.report.sections); a failed analysis is one fact saying why.
"""

from __future__ import annotations

from pathlib import Path

from edgedeploy.report.sections import Column, Fact, Section, Table

WORST_LAYERS = 5
TITLE = "rknn-toolkit2's accuracy analysis"
LAYER_COLUMNS = (Column("Node", kind="name"), Column("Op"), Column("Cosine, layer alone", kind="number"), Column("Cosine from the input", kind="number"))


def report_sections(report: dict, artifact: Path) -> list[Section]:
    section = report.get("accuracy_analysis")
    if not isinstance(section, dict):
        return []
    if section.get("status") != "done":
        return [Section(TITLE, facts=(Fact("status", str(section.get("status") or "?"), note=_text(section.get("reason"))),))]
    nodes = section.get("nodes") if isinstance(section.get("nodes"), dict) else {}
    scored = [(name, figures) for name, figures in nodes.items() if isinstance(figures, dict) and _is_number(figures.get("single_cosine"))]
    worst = sorted(scored, key=lambda item: item[1]["single_cosine"])[:WORST_LAYERS]
    rows = tuple((name, _text(f.get("op_type")), float(f["single_cosine"]), float(f["entire_cosine"]) if _is_number(f.get("entire_cosine")) else None) for name, f in worst)
    tables = (Table(f"lowest single-layer cosine: {len(rows)} of {len(scored)} analysed nodes", LAYER_COLUMNS, rows, name="worst-layers"),) if rows else ()
    facts = (Fact("samples", section.get("samples") if _is_number(section.get("samples")) else None), Fact("analysis file", _text(section.get("file"))))
    notes = (section["note"],) if isinstance(section.get("note"), str) and section["note"].strip() else ()
    return [Section(TITLE, facts=facts, tables=tables, notes=notes, source="rknn-toolkit2's accuracy_analysis on the simulator")]


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _text(value) -> str | None:
    return value if isinstance(value, str) and value.strip() else None
