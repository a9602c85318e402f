"""The accumulated-SNR curve of a diagnosis path (edgedeploy.accuracy_diagnosis/1), per graph output.

One point per diagnosed node upstream of the output, in the graph's (topological) order: the
accumulated SNR of the quantised graph up to that node against the float one. The culprits the
diagnosis names (the first sharp fall, the worst nodes alone) are marked. This module turns the
JSON into curve data and a text chart; snr_svg.py draws the same data as an inline SVG.
"""

from __future__ import annotations

import math

from edgedeploy.escape import terminal_safe

# The goal line: an output under 20 dB SNR counts as a loss to repair (issue 26, docs/accuracy.md).
GOAL_SNR_DB = 20.0
# Values above this are drawn at the top: past it the quantised tensor is as good as exact.
TOP_SNR_DB = 100.0
# Sparkline levels: the lower four are under the goal, the upper four at or over it.
LOW_BLOCKS, HIGH_BLOCKS = "▁▂▃▄", "▅▆▇█"
TEXT_CHART_WIDTH = 64


def snr_value(value) -> float | None:
    """A JSON SNR (number, 'inf', '-inf' or null) as a float; None when not measured."""
    if isinstance(value, str):
        return {"inf": math.inf, "-inf": -math.inf}.get(value)
    return None if value is None else float(value)


def culprit_marks(path: dict) -> dict[str, list[str]]:
    """node name -> its roles: 'F' for the first sharp fall, '1'..'3' for the worst ranked nodes."""
    marks: dict[str, list[str]] = {}
    first = path.get("first_sharp_drop")
    if first:
        marks.setdefault(first["node"], []).append("F")
    for rank, worst in enumerate(path.get("worst_isolated") or [], start=1):
        marks.setdefault(worst["node"], []).append(str(rank))
    return marks


def worst_role(path: dict) -> str:
    """What a ranked node is, in words: worst alone, or (a path without isolated figures) a largest fall."""
    # localise.worst_isolated: "isolated SNR", or "SNR drop in the accumulated run (no isolated figures ...)"
    return "worst alone" if (path.get("worst_ranked_by") or "isolated SNR").startswith("isolated") else "largest fall"


def _upstream(nodes: list[dict], output: str) -> set[int] | None:
    """Indices of the nodes the output depends on; None when the document cannot say (no inputs recorded)."""
    producer = {n.get("tensor"): i for i, n in enumerate(nodes) if n.get("tensor")}
    if output not in producer or not any("inputs" in n for n in nodes):
        return None
    seen, todo = set(), [producer[output]]
    while todo:
        index = todo.pop()
        if index in seen:
            continue
        seen.add(index)
        todo.extend(producer[t] for t in nodes[index].get("inputs") or [] if t in producer)
    return seen


def output_curves(path: dict) -> list[dict]:
    """One curve per graph output of the path: {"output", "points", "marks"}.

    points: {"position" (1-based, in the graph), "node", "op_type", "snr_db" (float, inf or None)};
    marks: {"node", "position", "roles", "snr_db"} for the culprits upstream of that output.
    """
    nodes = path.get("nodes") or []
    roles = culprit_marks(path)
    curves = []
    for output in list(path.get("outputs") or {}) or [None]:
        members = _upstream(nodes, output) if output is not None else None
        points = [
            {"position": i + 1, "node": n["node"], "op_type": n.get("op_type"), "snr_db": snr_value((n.get("accumulated") or {}).get("snr_db"))}
            for i, n in enumerate(nodes)
            if members is None or i in members
        ]
        marks = [{"node": p["node"], "position": p["position"], "roles": roles[p["node"]], "snr_db": p["snr_db"]} for p in points if p["node"] in roles]
        curves.append({"output": output, "points": points, "marks": marks})
    return curves


def _level(value: float | None, lo: float, hi: float) -> str:
    """One sparkline character: the lower half of the blocks under the goal, the upper half at or over it."""
    if value is None:
        return "·"
    if value >= GOAL_SNR_DB:
        t = (min(value, hi) - GOAL_SNR_DB) / max(hi - GOAL_SNR_DB, 1e-9)
        return HIGH_BLOCKS[min(int(t * len(HIGH_BLOCKS)), len(HIGH_BLOCKS) - 1)]
    t = (max(value, lo) - lo) / max(GOAL_SNR_DB - lo, 1e-9)
    return LOW_BLOCKS[min(int(t * len(LOW_BLOCKS)), len(LOW_BLOCKS) - 1)]


# On a small graph each node gets up to this many columns, so that a fall is seen as a step.
MAX_COLUMNS_PER_NODE = 3


def _columns(points: list[dict], width: int) -> list[list[dict]]:
    """The points in at most `width` columns, in order: several nodes share a column on a large
    graph; on a small one a node spans several columns."""
    per = max(1, math.ceil(len(points) / width))
    if per > 1:
        return [points[i : i + per] for i in range(0, len(points), per)]
    repeat = max(1, min(MAX_COLUMNS_PER_NODE, width // max(len(points), 1)))
    return [[p] for p in points for _ in range(repeat)]


def _column_value(column: list[dict]) -> float | None:
    """A column's lowest SNR: a fall must not be averaged away."""
    values = [p["snr_db"] for p in column if p["snr_db"] is not None]
    return min(values) if values else None


def db_range(points: list[dict]) -> tuple[float, float]:
    """The chart's range in whole tens: from at most 0 dB to at least 10 dB over the goal (TOP_SNR_DB at most)."""
    values = [p["snr_db"] for p in points if p["snr_db"] is not None and math.isfinite(p["snr_db"])]
    lo = math.floor(min([0.0] + values) / 10) * 10
    hi = math.ceil(min(max([GOAL_SNR_DB + 10] + values), TOP_SNR_DB) / 10) * 10
    return lo, hi


def _db_text(value: float | None) -> str:
    if value is None:
        return "not measured"
    return "exact" if value == math.inf else ("no signal" if value == -math.inf else f"{value:.1f} dB")


def text_chart(path: dict, width: int = TEXT_CHART_WIDTH) -> list[str]:
    """The curves as text: per output a sparkline, a row marking the culprits under their column, and their names."""
    lines = []
    for curve in output_curves(path):
        points = curve["points"]
        if not points:
            continue
        lo, hi = db_range(points)
        columns = _columns(points, width)
        spark = "".join(_level(_column_value(c), lo, hi) for c in columns)
        marker = [" "] * len(columns)
        for mark in curve["marks"]:
            column = next(i for i, c in enumerate(columns) if any(p["position"] == mark["position"] for p in c))
            if marker[column] == " ":
                marker[column] = mark["roles"][0]
        name = terminal_safe(curve["output"]) if curve["output"] is not None else "every node"
        per = f", {len(columns[0])} nodes a column (the lowest)" if len(columns[0]) > 1 else ""
        # The mark goes under the node's first column.
        lines.append(f"accumulated SNR to {name}, {len(points)} nodes in graph order{per}: {LOW_BLOCKS} under {GOAL_SNR_DB:g} dB (from {lo:g}), {HIGH_BLOCKS} {GOAL_SNR_DB:g} dB and over (to {hi:g}), · not measured")
        lines.append(f"  |{spark}|")
        if curve["marks"]:
            lines.append(f"  |{''.join(marker)}|")
            ranked = sorted(curve["marks"], key=lambda m: min("F123456789".index(r) for r in m["roles"]))
            lines.append("  " + "; ".join(_mark_text(m, path) for m in ranked))
    return lines


def _mark_text(mark: dict, path: dict) -> str:
    roles = " + ".join("F first sharp fall" if r == "F" else f"{r} {worst_role(path)}" for r in mark["roles"])
    return f"{roles}: {terminal_safe(mark['node'])} (node {mark['position']}, accumulated {_db_text(mark['snr_db'])})"
