"""Inline SVG plots for the HTML report, drawn here (no plotting library, nothing fetched).

Every plot gets a <title> (what it shows) and a caption in the page with its scope. All text
that may come from a model (operator and node names) goes through `esc`.
"""

from __future__ import annotations

import math
from html import escape

from edgedeploy.report import fmt

FONT = "font-family='system-ui, -apple-system, Segoe UI, Helvetica, Arial, sans-serif' font-size='11'"
COLORS = {"before": "#8c8c8c", "after": "#1f6feb"}
PLACEMENT_COLORS = {"accelerator": "#2da44e", "float": "#d4a72c", "fallback": "#e16f24", "unsupported": "#cf222e", None: "#eaeef2"}


def esc(text) -> str:
    return escape("" if text is None else str(text), quote=True)


class Scale:
    """A linear or logarithmic map from values to pixels, with readable ticks."""

    def __init__(self, lo: float, hi: float, px_lo: float, px_hi: float):
        lo = max(lo, 1e-9)
        hi = max(hi, lo * 1.0001)
        self.log = hi / lo > 8
        self.lo, self.hi, self.px_lo, self.px_hi = lo, hi, px_lo, px_hi

    def __call__(self, value: float) -> float:
        value = min(max(value, self.lo), self.hi)
        if self.log:
            t = (math.log10(value) - math.log10(self.lo)) / (math.log10(self.hi) - math.log10(self.lo))
        else:
            t = (value - self.lo) / (self.hi - self.lo)
        return self.px_lo + t * (self.px_hi - self.px_lo)

    def ticks(self, count: int = 6) -> list[float]:
        if self.log:
            out = []
            for e in range(math.floor(math.log10(self.lo)), math.ceil(math.log10(self.hi)) + 1):
                for m in (1, 2, 5):
                    v = m * 10**e
                    if self.lo <= v <= self.hi:
                        out.append(v)
            return out or [self.lo, self.hi]
        step = _nice_step((self.hi - self.lo) / max(count - 1, 1))
        first = math.ceil(self.lo / step) * step
        out, v = [], first
        while v <= self.hi + 1e-12:
            out.append(v)
            v += step
        return out


def _nice_step(raw: float) -> float:
    if raw <= 0:
        return 1.0
    exp = math.floor(math.log10(raw))
    for m in (1, 2, 2.5, 5, 10):
        if m * 10**exp >= raw:
            return m * 10**exp
    return 10 ** (exp + 1)


def latency_sessions(rows: list[dict], title: str, width: int = 780) -> str:
    """One row per session: its latency histogram, with the median (black) and p99 (red) marked.

    rows: {"label", "run" ("before"/"after"), "latency_us": {...}, "histogram_us": {...} or None}.
    The x axis is shared by all rows (same device only: the caller groups by device).
    """
    rows = [r for r in rows if r.get("latency_us")]
    if not rows:
        return ""
    left, right, top, row_h = 210, 20, 28, 30
    height = top + row_h * len(rows) + 40
    lows, highs = [], []
    for r in rows:
        h = r.get("histogram_us")
        lat = r["latency_us"]
        lows.append(h["edges"][0] if h else lat["min"])
        highs.append(h["edges"][-1] if h else lat["p99"])
    scale = Scale(min(lows), max(highs), left, width - right)
    out = [
        f"<svg xmlns='http://www.w3.org/2000/svg' class='plot latency-plot' width='{width}' height='{height}' viewBox='0 0 {width} {height}' role='img' {FONT}>",
        f"<title>{esc(title)}</title>",
        f"<text x='{left}' y='14' font-weight='600'>{esc(title)}</text>",
    ]
    for i, r in enumerate(rows):
        y0 = top + i * row_h
        color = COLORS.get(r.get("run"), "#1f6feb")
        lat = r["latency_us"]
        out.append(f"<text x='{left - 8}' y='{y0 + row_h * 0.62:.1f}' text-anchor='end'>{esc(r['label'])}</text>")
        out.append(f"<line x1='{left}' x2='{width - right}' y1='{y0 + row_h - 3}' y2='{y0 + row_h - 3}' stroke='#d0d7de'/>")
        h = r.get("histogram_us")
        if h and h.get("counts"):
            peak = max(h["counts"]) or 1
            for c, a, b in zip(h["counts"], h["edges"][:-1], h["edges"][1:]):
                if not c:
                    continue
                x1, x2 = scale(a), scale(b)
                bar_h = (row_h - 6) * c / peak
                out.append(f"<rect class='hist' x='{x1:.1f}' y='{y0 + row_h - 3 - bar_h:.1f}' width='{max(x2 - x1, 0.8):.1f}' height='{bar_h:.1f}' fill='{color}' fill-opacity='0.55'/>")
        for q, stroke in (("p50", "#000"), ("p99", "#cf222e")):
            if lat.get(q) is not None:
                x = scale(lat[q])
                out.append(f"<line class='{q}' x1='{x:.1f}' x2='{x:.1f}' y1='{y0 + 2}' y2='{y0 + row_h - 3}' stroke='{stroke}' stroke-width='1.5'><title>{esc(q)} {esc(fmt.us(lat[q]))}</title></line>")
        out.append(
            f"<title>{esc(r['label'])}: median {esc(fmt.us(lat.get('p50')))}, p90 {esc(fmt.us(lat.get('p90')))}, p99 {esc(fmt.us(lat.get('p99')))}, "
            f"min {esc(fmt.us(lat.get('min')))}, max {esc(fmt.us(lat.get('max')))}, {esc(lat.get('count'))} iterations</title>"
        )
    axis_y = top + row_h * len(rows) + 4
    out.append(f"<line x1='{left}' x2='{width - right}' y1='{axis_y}' y2='{axis_y}' stroke='#57606a'/>")
    for t in scale.ticks():
        x = scale(t)
        out.append(f"<line x1='{x:.1f}' x2='{x:.1f}' y1='{axis_y}' y2='{axis_y + 4}' stroke='#57606a'/>")
        out.append(f"<text x='{x:.1f}' y='{axis_y + 16}' text-anchor='middle'>{esc(fmt.us(t))}</text>")
    out.append(
        f"<text x='{width - right}' y='{axis_y + 32}' text-anchor='end' fill='#57606a'>latency per inference ({'log' if scale.log else 'linear'} scale, 0.5th-99.5th percentile); black: median, red: p99</text>"
    )
    out.append("</svg>")
    return "\n".join(out)


def accuracy_bars(entries: list[dict], width: int = 780) -> str:
    """Before and after bars per accuracy entry (task metric from 0 to 1; bars start at zero)."""
    entries = [e for e in entries if e.get("metric") in ("top1", "auroc") and e.get("before") and e.get("after")]
    if not entries:
        return ""
    left, top, bottom, group_w = 50, 30, 70, 120
    width = max(width, left + group_w * len(entries) + 20)
    height = 260
    plot_h = height - top - bottom
    out = [
        f"<svg xmlns='http://www.w3.org/2000/svg' class='plot accuracy-plot' width='{width}' height='{height}' viewBox='0 0 {width} {height}' role='img' {FONT}>",
        "<title>Accuracy before and after</title>",
        f"<text x='{left}' y='16' font-weight='600'>Task metric before (grey) and after (blue), same inputs per pair</text>",
    ]
    for t in (0, 0.25, 0.5, 0.75, 1.0):
        y = top + plot_h * (1 - t)
        out.append(f"<line x1='{left}' x2='{width - 10}' y1='{y:.1f}' y2='{y:.1f}' stroke='#eaeef2'/>")
        out.append(f"<text x='{left - 6}' y='{y + 4:.1f}' text-anchor='end'>{t:.2f}</text>")
    for i, e in enumerate(entries):
        x0 = left + 10 + i * group_w
        for j, run in enumerate(("before", "after")):
            value = fmt.metric_value(e["metric"], e.get(run))
            if value is None:
                continue
            bar_h = plot_h * max(0.0, min(1.0, value))
            x = x0 + j * 42
            out.append(f"<rect class='bar {run}' x='{x}' y='{top + plot_h - bar_h:.1f}' width='40' height='{bar_h:.1f}' fill='{COLORS[run]}'><title>{esc(run)}: {esc(fmt.metric_text(e['metric'], value))}</title></rect>")
            # The value inside the top of the bar (white) when it fits, else just above it.
            inside = bar_h > 18
            label_y = top + plot_h - bar_h + (13 if inside else -4)
            out.append(
                f"<text x='{x + 20}' y='{label_y:.1f}' text-anchor='middle' font-size='9' fill='{'#fff' if inside else '#24292f'}'>{esc(fmt.metric_text(e['metric'], value))}</text>"
            )
        out.append(f"<text x='{x0 + 40}' y='{top + plot_h + 16}' text-anchor='middle'>{esc(e['label'])}</text>")
        out.append(f"<text x='{x0 + 40}' y='{top + plot_h + 30}' text-anchor='middle' fill='#57606a'>{esc(fmt.METRIC_NAMES.get(e['metric'], e['metric']))}, {esc(e['kind'])}</text>")
        out.append(f"<text x='{x0 + 40}' y='{top + plot_h + 44}' text-anchor='middle' fill='#57606a'>{esc(e.get('samples'))} samples</text>")
    out.append("</svg>")
    return "\n".join(out)


def audit_matrix(matrix: dict, width: int = 780) -> str:
    """Operator types x chips; each cell coloured by its worst placement, with the counts written in."""
    columns = matrix["columns"]
    rows = matrix["op_types"]
    if not rows or not columns:
        return ""
    left, top, cell_h = 150, 56, 22
    cell_w = max(90, min(170, (width - left - 10) // max(len(columns), 1)))
    width = left + cell_w * len(columns) + 10
    height = top + cell_h * len(rows) + 34
    order = ("unsupported", "fallback", "float", "accelerator")
    out = [
        f"<svg xmlns='http://www.w3.org/2000/svg' class='plot audit-matrix' width='{width}' height='{height}' viewBox='0 0 {width} {height}' role='img' {FONT}>",
        "<title>Audit matrix: operator types by chip</title>",
        "<text x='4' y='16' font-weight='600'>Where each operator type runs, per chip (rules' prediction)</text>",
    ]
    for j, c in enumerate(columns):
        x = left + j * cell_w + cell_w / 2
        out.append(f"<text x='{x:.1f}' y='{top - 8}' text-anchor='middle' font-weight='600'>{esc(c['label'])}</text>")
        if c.get("precision"):
            out.append(f"<text x='{x:.1f}' y='{top - 22}' text-anchor='middle' fill='#57606a'>{esc(c['precision'])}</text>")
    for i, row in enumerate(rows):
        y = top + i * cell_h
        out.append(f"<text x='{left - 6}' y='{y + cell_h * 0.68:.1f}' text-anchor='end'>{esc(row['op_type'])} ({esc(row['count'])})</text>")
        for j, c in enumerate(columns):
            cell = row["cells"].get(c["id"], {})
            worst = next((p for p in order if cell.get(p)), None)
            text = ", ".join(f"{cell[p]} {p[:5] if p != 'accelerator' else 'accel'}" for p in order if cell.get(p)) or "-"
            x = left + j * cell_w
            out.append(
                f"<rect class='cell {esc(worst or 'none')}' x='{x + 1}' y='{y + 1}' width='{cell_w - 2}' height='{cell_h - 2}' fill='{PLACEMENT_COLORS[worst]}' fill-opacity='0.8'>"
                f"<title>{esc(row['op_type'])} on {esc(c['label'])}: {esc(text)}</title></rect>"
            )
            out.append(f"<text x='{x + cell_w / 2:.1f}' y='{y + cell_h * 0.68:.1f}' text-anchor='middle' fill='{'#fff' if worst in ('unsupported', 'fallback', 'accelerator') else '#24292f'}'>{esc(text)}</text>")
    legend_y = top + cell_h * len(rows) + 20
    x = 4
    for p in ("accelerator", "float", "fallback", "unsupported"):
        out.append(f"<rect x='{x}' y='{legend_y - 10}' width='12' height='12' fill='{PLACEMENT_COLORS[p]}'/>")
        out.append(f"<text x='{x + 16}' y='{legend_y}'>{esc(p)}</text>")
        x += 110
    out.append("</svg>")
    return "\n".join(out)
