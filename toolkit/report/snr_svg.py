"""The accumulated-SNR curve (snr_curve.py) as an inline SVG, drawn here (no plotting library).

x: the nodes upstream of one output, in graph order; y: accumulated SNR in dB. A dashed line at
the 20 dB goal; the culprits the diagnosis names ringed in red and labelled above the plot. Every
model-supplied name goes through escape.html_text (markup and control characters), so the SVG
is well-formed XML whatever the model calls its nodes.
"""

from __future__ import annotations

import math

from edgedeploy import __version__
from edgedeploy.escape import html_text
from edgedeploy.report.snr_curve import GOAL_SNR_DB, db_range, worst_role

FONT = "font-family='system-ui, -apple-system, Segoe UI, Helvetica, Arial, sans-serif' font-size='11'"
CHAR_W = 6.2  # average glyph width at 11 px, for laying labels out
LABEL_CHARS = 34  # a name longer than this is cut in its label (the full name is in the <title>)
LABEL_ROW_H = 13
LEFT, RIGHT, PLOT_H, BOTTOM = 52, 16, 170, 34


def _attr(text) -> str:
    """An attribute value that parses back to the text: a tab written as a reference (XML reads a raw one as a space)."""
    return html_text(text).replace("\t", "&#9;")


class Frame:
    """The plot's pixel frame: node positions to x, dB to y (values beyond the range drawn at its edge)."""

    def __init__(self, count: int, lo: float, hi: float, top: float, width: int):
        self.count, self.lo, self.hi, self.top, self.width = count, lo, hi, top, width

    def x(self, index: int) -> float:
        span = self.width - LEFT - RIGHT
        return LEFT + (span / 2 if self.count == 1 else span * index / (self.count - 1))

    def y(self, db: float) -> float:
        db = min(max(db, self.lo), self.hi)
        return self.top + PLOT_H * (self.hi - db) / (self.hi - self.lo)


def _label_rows(marks: list[dict], frame: Frame, path: dict) -> list[tuple[dict, str, int]]:
    """Each culprit's label and the row it goes in: the first row where it overlaps no other label."""
    placed: list[tuple[dict, str, int]] = []
    ends: list[float] = []  # per row, the right edge of its last label
    for mark in sorted(marks, key=lambda m: m["position"]):
        roles = " + ".join("first sharp fall" if r == "F" else f"{worst_role(path)} #{r}" for r in mark["roles"])
        # A long name keeps its end: a path-like name's last parts tell the nodes apart.
        name = mark["node"] if len(mark["node"]) <= LABEL_CHARS else "…" + mark["node"][-(LABEL_CHARS - 1) :]
        text = f"{roles}: {name}"
        start = min(frame.x(mark["index"]), frame.width - RIGHT - len(text) * CHAR_W)
        row = next((i for i, end in enumerate(ends) if start > end + 8), len(ends))
        if row == len(ends):
            ends.append(0.0)
        ends[row] = start + len(text) * CHAR_W
        placed.append((mark, text, row))
    return placed


def _axes(frame: Frame) -> list[str]:
    """The y axis with a grid line every 10 dB (20 on a tall range), the x axis, and the goal line."""
    parts = []
    step = 10 if frame.hi - frame.lo <= 60 else 20
    db = frame.lo
    while db <= frame.hi:
        y = frame.y(db)
        parts.append(f"<line x1='{LEFT}' y1='{y:.1f}' x2='{frame.width - RIGHT}' y2='{y:.1f}' stroke='#eaeef2'/>")
        parts.append(f"<text x='{LEFT - 6}' y='{y + 4:.1f}' text-anchor='end' {FONT}>{db:g}</text>")
        db += step
    bottom = frame.top + PLOT_H
    parts.append(f"<line class='axis' x1='{LEFT}' y1='{frame.top}' x2='{LEFT}' y2='{bottom}' stroke='#57606a'/>")
    parts.append(f"<line class='axis' x1='{LEFT}' y1='{bottom}' x2='{frame.width - RIGHT}' y2='{bottom}' stroke='#57606a'/>")
    parts.append(f"<text x='12' y='{frame.top + PLOT_H / 2:.1f}' transform='rotate(-90 12 {frame.top + PLOT_H / 2:.1f})' text-anchor='middle' {FONT}>accumulated SNR (dB)</text>")
    parts.append(f"<text x='{(LEFT + frame.width - RIGHT) / 2:.1f}' y='{bottom + 28}' text-anchor='middle' {FONT}>{frame.count} nodes in graph order (numbered as in the node table)</text>")
    goal = frame.y(GOAL_SNR_DB)
    parts.append(f"<line class='goal' x1='{LEFT}' y1='{goal:.1f}' x2='{frame.width - RIGHT}' y2='{goal:.1f}' stroke='#cf222e' stroke-dasharray='5 4'/>")
    parts.append(f"<text x='{frame.width - RIGHT - 2}' y='{goal - 4:.1f}' text-anchor='end' fill='#cf222e' {FONT}>goal {GOAL_SNR_DB:g} dB</text>")
    return parts


def _x_ticks(points: list[dict], frame: Frame) -> list[str]:
    """The node numbers of the first and the last point under the x axis."""
    y = frame.top + PLOT_H + 13
    ends = {0: points[0], len(points) - 1: points[-1]}
    return [f"<text x='{frame.x(i):.1f}' y='{y}' text-anchor='middle' {FONT}>{p['position']}</text>" for i, p in ends.items()]


def _point_y(point: dict, frame: Frame) -> float | None:
    db = point["snr_db"]
    if db is None:
        return None
    return frame.y(frame.hi if db == math.inf else (frame.lo if db == -math.inf else db))


def _curve(points: list[dict], frame: Frame) -> list[str]:
    """The line (broken where a node was not measured) and one point per node with its figures in a <title>."""
    parts, run = [], []
    for i, point in enumerate(points + [{"snr_db": None}]):
        y = _point_y(point, frame)
        if y is None:
            if len(run) > 1:
                parts.append(f"<polyline fill='none' stroke='#1f6feb' stroke-width='1.5' points='{' '.join(run)}'/>")
            run = []
        else:
            run.append(f"{frame.x(i):.1f},{y:.1f}")
    radius = 3 if len(points) <= 80 else 1.8
    for i, point in enumerate(points):
        y = _point_y(point, frame)
        figure = "not measured" if point["snr_db"] is None else f"{point['snr_db']:.1f} dB"
        title = f"node {point['position']}: {html_text(point['node'])} ({html_text(point.get('op_type') or '?')}), accumulated SNR {figure}"
        cy = frame.top + PLOT_H if y is None else y
        fill = "#ffffff' stroke='#8c8c8c" if y is None else "#1f6feb"
        parts.append(f"<circle class='node' data-node='{_attr(point['node'])}' cx='{frame.x(i):.1f}' cy='{cy:.1f}' r='{radius}' fill='{fill}'><title>{title}</title></circle>")
    return parts


def _marks(placed: list[tuple[dict, str, int]], frame: Frame) -> list[str]:
    """A red ring on each culprit, a dotted stem up to its label."""
    parts = []
    for mark, text, row in placed:
        x, y = frame.x(mark["index"]), _point_y(mark, frame)
        y = frame.top + PLOT_H if y is None else y
        label_y = 14 + 16 + row * LABEL_ROW_H
        start = min(x, frame.width - RIGHT - len(text) * CHAR_W)
        node = html_text(mark["node"])
        parts.append(f"<g class='culprit' data-node='{_attr(mark['node'])}' data-roles='{html_text(' '.join(mark['roles']))}'><title>{html_text(text.split(': ')[0])}: {node}</title>")
        parts.append(f"<line x1='{x:.1f}' y1='{label_y + 3}' x2='{x:.1f}' y2='{y - 6:.1f}' stroke='#cf222e' stroke-dasharray='1 2'/>")
        parts.append(f"<circle cx='{x:.1f}' cy='{y:.1f}' r='6' fill='none' stroke='#cf222e' stroke-width='2'/>")
        parts.append(f"<text x='{max(start, 2):.1f}' y='{label_y}' fill='#cf222e' {FONT}>{html_text(text)}</text></g>")
    return parts


def curve_svg(curve: dict, path: dict, width: int = 780) -> str:
    """One output's curve (snr_curve.output_curves) of one diagnosis path as an <svg> element."""
    points = curve["points"]
    if not points:
        return ""
    lo, hi = db_range(points)
    marks = [{**m, "index": next(i for i, p in enumerate(points) if p["position"] == m["position"])} for m in curve["marks"]]
    probe = Frame(len(points), lo, hi, 0, width)
    placed = _label_rows(marks, probe, path)
    rows = 1 + max([row for _m, _t, row in placed], default=-1)
    frame = Frame(len(points), lo, hi, 14 + 16 + rows * LABEL_ROW_H + 8, width)
    height = frame.top + PLOT_H + BOTTOM
    output = "every node" if curve["output"] is None else html_text(curve["output"])
    title = f"{html_text(path['path'])}: accumulated SNR along the graph to {output}"
    parts = [
        f"<svg class='plot snr-curve' xmlns='http://www.w3.org/2000/svg' viewBox='0 0 {width} {height:.0f}' width='{width}' height='{height:.0f}' role='img'>",
        f"<title>{title}</title><desc>Generated by edgedeploy {html_text(__version__)} from the accuracy_diagnosis document; do not edit.</desc>",
        f"<text x='4' y='14' {FONT} font-weight='600'>{title}</text>",
    ]
    parts += _axes(frame) + _x_ticks(points, frame) + _curve(points, frame) + _marks(placed, frame)
    parts.append("</svg>")
    return "".join(parts)
