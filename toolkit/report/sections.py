"""What a target adds to `edgedeploy report`: data in one small form that the core renders.

A target returns (Target.report_sections) a list of Section: a title, key/value facts (each
with its unit and an optional note), tables (columns with their units, rows of plain values) and
notes. It returns no text, Markdown, HTML or schema of its own: the core writes each section
into the comparison JSON (`sections[]`, described by comparison-1.json's `$defs/section`, which
the core owns) and renders it once into text (edgedeploy.report.text), Markdown
(.markdown) and HTML (.html), escaping every value on the way.

Units: "bytes" is shown for people (34.4 KiB (35264 B)); any other unit (dB, ms, %) follows
the number in a fact and names the column in a table. A column of kind "name" holds names that
come from the model (layer and node names): they are shown as code and escaped like every value.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from edgedeploy.report import fmt

COLUMN_KINDS = ("text", "number", "name")
TABLE_NAME = re.compile(r"^[a-z][a-z0-9-]{0,40}$")  # the HTML table's class: plain, never model-supplied
Value = str | int | float | bool | None


class ReportSectionError(ValueError):
    """A target's report section is not in the shape of this module (a plug-in's bug, said in one sentence)."""


@dataclass(frozen=True)
class Fact:
    """One key/value row: `label` and its `value` in `unit`, with an optional note (where it comes from)."""

    label: str
    value: Value
    unit: str | None = None
    note: str | None = None

    def to_dict(self) -> dict:
        return {"label": self.label, "value": self.value, "unit": self.unit, "note": self.note}


@dataclass(frozen=True)
class Column:
    name: str
    unit: str | None = None
    kind: str = "text"  # one of COLUMN_KINDS

    def to_dict(self) -> dict:
        return {"name": self.name, "unit": self.unit, "kind": self.kind}


@dataclass(frozen=True)
class Table:
    """A titled table: its columns, rows of plain values (one per column), notes under it.
    `name` (lower-case letters, digits, '-') is the HTML table's class, for styling and tests."""

    title: str
    columns: tuple[Column, ...]
    rows: tuple[tuple[Value, ...], ...]
    notes: tuple[str, ...] = ()
    name: str | None = None

    def to_dict(self) -> dict:
        return {"title": self.title, "name": self.name, "columns": [c.to_dict() for c in self.columns], "rows": [list(r) for r in self.rows], "notes": list(self.notes)}


@dataclass(frozen=True)
class Section:
    """One section a target adds to the report of one of its artifacts; `source` says where its
    figures come from (the toolchain, its release, the data it ran on)."""

    title: str
    facts: tuple[Fact, ...] = ()
    tables: tuple[Table, ...] = ()
    notes: tuple[str, ...] = ()
    source: str | None = None

    def to_dict(self) -> dict:
        return {
            "title": self.title,
            "source": self.source,
            "facts": [f.to_dict() for f in self.facts],
            "tables": [t.to_dict() for t in self.tables],
            "notes": list(self.notes),
        }


# -- checking what a target hands in --------------------------------------------------------


def _scalar(value: Any, where: str) -> Value:
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    raise ReportSectionError(f"{where} is a {type(value).__name__}, not a string, number, boolean or null.")


def _text(value: Any, where: str, optional: bool = False) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ReportSectionError(f"{where} must be a non-empty string, not {value!r}.")
    return value


def _texts(values: Iterable, where: str) -> tuple[str, ...]:
    return tuple(_text(v, f"{where}[{i}]") for i, v in enumerate(values or ()))


def checked_table(table: Table, where: str) -> Table:
    _text(table.title, f"{where}.title")
    if table.name is not None and not (isinstance(table.name, str) and TABLE_NAME.match(table.name)):
        raise ReportSectionError(f"{where}.name {table.name!r} must be lower-case letters, digits and '-'.")
    if not table.columns:
        raise ReportSectionError(f"{where} has no columns.")
    for i, column in enumerate(table.columns):
        _text(column.name, f"{where}.columns[{i}].name")
        _text(column.unit, f"{where}.columns[{i}].unit", optional=True)
        if column.kind not in COLUMN_KINDS:
            raise ReportSectionError(f"{where}.columns[{i}].kind is {column.kind!r}, not one of {', '.join(COLUMN_KINDS)}.")
    rows = []
    for r, row in enumerate(table.rows):
        if len(row) != len(table.columns):
            raise ReportSectionError(f"{where}.rows[{r}] has {len(row)} values for {len(table.columns)} columns.")
        rows.append(tuple(_scalar(v, f"{where}.rows[{r}][{c}]") for c, v in enumerate(row)))
    return Table(table.title, tuple(table.columns), tuple(rows), _texts(table.notes, f"{where}.notes"), table.name)


def checked_section(section: Any, where: str = "section") -> Section:
    """The section, checked value by value; ReportSectionError (one sentence) when it is not a Section in shape."""
    if not isinstance(section, Section):
        raise ReportSectionError(f"{where} is a {type(section).__name__}, not an edgedeploy.report.sections.Section.")
    _text(section.title, f"{where}.title")
    _text(section.source, f"{where}.source", optional=True)
    facts = []
    for i, fact in enumerate(section.facts):
        if not isinstance(fact, Fact):
            raise ReportSectionError(f"{where}.facts[{i}] is not a Fact.")
        _text(fact.label, f"{where}.facts[{i}].label")
        _text(fact.unit, f"{where}.facts[{i}].unit", optional=True)
        _text(fact.note, f"{where}.facts[{i}].note", optional=True)
        facts.append(Fact(fact.label, _scalar(fact.value, f"{where}.facts[{i}].value"), fact.unit, fact.note))
    tables = []
    for i, table in enumerate(section.tables):
        if not isinstance(table, Table):
            raise ReportSectionError(f"{where}.tables[{i}] is not a Table.")
        tables.append(checked_table(table, f"{where}.tables[{i}]"))
    return Section(section.title, tuple(facts), tuple(tables), _texts(section.notes, f"{where}.notes"), section.source)


# -- values as people read them (every renderer uses these) ---------------------------------


def value_text(value: Value, unit: str | None = None) -> str:
    """A value in its unit, without markup: bytes for people, floats to 4 significant digits."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if unit == "bytes" and isinstance(value, (int, float)):
        return fmt.bytes_text(value)
    return fmt.num(value, 4) if isinstance(value, float) else str(value)


def fact_text(fact: Mapping) -> str:
    """A fact's value with its unit ("21.5 dB", "16.8 KiB (17200 B)")."""
    text = value_text(fact.get("value"), fact.get("unit"))
    unit = fact.get("unit")
    return f"{text} {unit}" if unit and unit != "bytes" and text != "-" else text


def column_header(column: Mapping, upper: bool = False) -> str:
    """A column's name (upper-case for the text view) with its unit in parentheses, as written
    (dB stays dB); bytes say their own unit in every cell."""
    name, unit = (column["name"].upper() if upper else column["name"]), column.get("unit")
    return f"{name} ({unit})" if unit and unit != "bytes" else name


def is_numeric(column: Mapping) -> bool:
    return column.get("kind") == "number" or column.get("unit") == "bytes"
