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
    left, right, row_h = 210, 20, 30
    # The title starts at the left edge and wraps: a long device name is never cut off.
    title_lines = text_lines(title, width - 8, CHAR_W + 0.4)
    top = 14 * len(title_lines) + 14
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
    ]
    for k, line in enumerate(title_lines):
        out.append(f"<text class='plot-title' x='4' y='{14 + 14 * k}' font-weight='600'>{esc(line)}</text>")
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
        out.append(tick_label(x, axis_y + 16, fmt.us(t), width))
    out.append(
        f"<text x='{width - right}' y='{axis_y + 32}' text-anchor='end' fill='#57606a'>latency per inference ({'log' if scale.log else 'linear'} scale, 0.5th-99.5th percentile); black: median, red: p99</text>"
    )
    out.append("</svg>")
    return "\n".join(out)


# Average advance of a character of the plots' 11 px sans-serif font: enough to lay text out
# without measuring it (a little generous, so estimates err towards more room).
CHAR_W = 6.4


def tick_label(x: float, y: float, text: str, width: float, css_class: str | None = None) -> str:
    """An axis tick's label centred under x, unless that would run past the plot's edge.

    A tick at the very end of an axis sits closer to the edge than half its label (the latency
    axis ends 20 px from it; a label like "200.0 us" is about 50 px wide), so near an edge the
    label is anchored at its end or start instead, and stays whole inside the plot.
    """
    half = len(text) * CHAR_W / 2
    if x + half > width - 2:
        anchor, x = "end", min(x + half, width - 2)
    elif x - half < 2:
        anchor, x = "start", max(x - half, 2)
    else:
        anchor = "middle"
    cls = f" class='{css_class}'" if css_class else ""
    return f"<text{cls} x='{x:.1f}' y='{y}' text-anchor='{anchor}'>{esc(text)}</text>"


def text_lines(text: str, max_px: float, char_w: float = CHAR_W) -> list[str]:
    """`text` broken at spaces into lines of at most max_px (estimated)."""
    import textwrap

    return textwrap.wrap(text, width=max(int(max_px / char_w), 10), break_long_words=True) or [text]


def accuracy_bars(entries: list[dict], width: int = 780) -> str:
    """Before and after of each accuracy entry on an axis zoomed to the values, with the change written beside.

    A drop of 0.1-0.3 points is invisible on bars that start at zero, so each entry is a row:
    a grey dot (before) and a blue dot (after) on one shared axis that spans only the values
    (with a margin; the axis says it does not start at 0), joined by a line, the change in
    points at the end of the row, and the label on its own line: nothing overlaps however
    many entries there are.
    """
    entries = [e for e in entries if e.get("metric") in ("top1", "auroc") and e.get("before") and e.get("after")]
    if not entries:
        return ""
    values = [fmt.metric_value(e["metric"], e.get(run)) for e in entries for run in ("before", "after")]
    values = [v for v in values if v is not None]
    lo, hi = min(values), max(values)
    span = max(hi - lo, 0.004)  # at least 0.4 points across, so one equal pair still gets an axis
    lo_axis, hi_axis = max(0.0, lo - 0.35 * span), min(1.0, hi + 0.35 * span)
    if hi_axis - lo_axis < span:
        lo_axis, hi_axis = max(0.0, hi_axis - 1.7 * span), min(1.0, lo_axis + 1.7 * span)
    left, right, top, row_h = 16, 200, 40, 44
    plot_l, plot_r = left + 4, width - right
    height = top + row_h * len(entries) + 46
    scale = Scale(lo_axis, hi_axis, plot_l, plot_r)
    scale.log = False  # a metric axis is linear
    out = [
        f"<svg xmlns='http://www.w3.org/2000/svg' class='plot accuracy-plot' width='{width}' height='{height}' viewBox='0 0 {width} {height}' role='img' {FONT}>",
        "<title>Accuracy before and after</title>",
        f"<text x='{left}' y='16' font-weight='600'>Task metric before (grey) and after (blue), same inputs per row</text>",
        f"<text x='{left}' y='30' fill='#57606a'>axis zoomed to the values ({esc(_axis_text(entries[0]['metric'], lo_axis))} to {esc(_axis_text(entries[0]['metric'], hi_axis))}; it does not start at 0)</text>",
    ]
    ticks = scale.ticks(6)
    axis_y = top + row_h * len(entries) + 4
    for t in ticks:
        x = scale(t)
        out.append(f"<line x1='{x:.1f}' x2='{x:.1f}' y1='{top}' y2='{axis_y}' stroke='#eaeef2'/>")
        out.append(tick_label(x, axis_y + 14, _axis_text(entries[0]['metric'], t), width, css_class="tick"))
    out.append(f"<line x1='{plot_l}' x2='{plot_r}' y1='{axis_y}' y2='{axis_y}' stroke='#57606a'/>")
    for i, e in enumerate(entries):
        y0 = top + i * row_h
        y = y0 + 30
        b, a = fmt.metric_value(e["metric"], e.get("before")), fmt.metric_value(e["metric"], e.get("after"))
        name = f"{e['label']}: {fmt.METRIC_NAMES.get(e['metric'], e['metric'])}, {e['kind']}, {e.get('samples')} samples"
        out.append(f"<text class='row-label' x='{plot_l}' y='{y0 + 12}' fill='#24292f'>{esc(name)}</text>")
        if b is not None and a is not None:
            out.append(f"<line class='change' x1='{scale(b):.1f}' x2='{scale(a):.1f}' y1='{y}' y2='{y}' stroke='#57606a' stroke-width='2'/>")
        for run, value in (("before", b), ("after", a)):
            if value is None:
                continue
            out.append(
                f"<circle class='dot {run}' cx='{scale(value):.1f}' cy='{y}' r='5.5' fill='{COLORS[run]}'>"
                f"<title>{esc(run)}: {esc(fmt.metric_text(e['metric'], value))}</title></circle>"
            )
        delta = e.get("delta_percentage_points") if e["metric"] == "top1" else e.get("delta")
        if delta is None and b is not None and a is not None:
            delta = (a - b) * (100 if e["metric"] == "top1" else 1)
        unit = " pp" if e["metric"] == "top1" else ""
        text = f"{fmt.metric_text(e['metric'], b)} -> {fmt.metric_text(e['metric'], a)}"
        if delta is not None:
            text += f" ({delta:+.2f}{unit})" if e["metric"] == "top1" else f" ({delta:+.4f})"
        colour = "#cf222e" if delta is not None and delta < 0 else "#1a7f37" if delta else "#24292f"
        out.append(f"<text class='delta' x='{plot_r + 10}' y='{y + 4}' fill='{colour}'>{esc(text)}</text>")
    out.append("</svg>")
    return "\n".join(out)


def _axis_text(metric: str, value: float) -> str:
    return f"{100 * value:.1f}%" if metric == "top1" else f"{value:.3f}"


# The widest plot the HTML page shows at full size (its content width at 1280 px).
PAGE_PLOT_WIDTH = 1060


def audit_matrix(matrix: dict, width: int = 780, max_width: int = PAGE_PLOT_WIDTH) -> str:
    """Operator types x chips; each cell coloured by its worst placement, with the counts written in.

    The cells are as wide as their longest text (column label or counts) and the label column
    as wide as its longest operator, so no text overlaps; more chips than fit in `max_width`
    go into several plots, each with the operator labels (a plot scaled down to the page would
    make its text unreadable).
    """
    columns = matrix["columns"]
    rows = matrix["op_types"]
    if not rows or not columns:
        return ""
    left, cell_w = _audit_matrix_geometry(matrix)
    per_plot = max(1, int((max_width - left - 10) // cell_w))
    if len(columns) > per_plot:
        chunks = [columns[i : i + per_plot] for i in range(0, len(columns), per_plot)]
        return "\n".join(
            _audit_matrix_plot(dict(matrix, columns=chunk), (left, cell_w), f" (chips {i * per_plot + 1}-{i * per_plot + len(chunk)} of {len(columns)})")
            for i, chunk in enumerate(chunks)
        )
    return _audit_matrix_plot(matrix, (left, max(cell_w, min(170, (width - left - 10) // len(columns)))), "")


MATRIX_ORDER = ("unsupported", "fallback", "float", "accelerator")


def _cell_text(cell: dict) -> str:
    return ", ".join(f"{cell[p]} {p[:5] if p != 'accelerator' else 'accel'}" for p in MATRIX_ORDER if cell.get(p)) or "-"


def _column_lines(label: str) -> list[str]:
    """A column label ("A12 jetson-orin-nano") on two lines: the artifact id, then the chip."""
    ident, _, rest = str(label).partition(" ")
    return [ident, rest] if rest else [ident]


def _audit_matrix_geometry(matrix: dict) -> tuple[float, float]:
    """(label column width, cell width) in px, from the longest texts."""
    labels = [f"{row['op_type']} ({row['count']})" for row in matrix["op_types"]]
    left = max(150.0, max(len(t) for t in labels) * CHAR_W + 14)
    texts = [line for c in matrix["columns"] for line in _column_lines(c["label"])]
    texts += [_cell_text(row["cells"].get(c["id"], {})) for row in matrix["op_types"] for c in matrix["columns"]]
    cell_w = max(90.0, max(len(t) for t in texts) * (CHAR_W + 0.6) + 12)
    return left, cell_w


def _audit_matrix_plot(matrix: dict, geometry: tuple[float, float], part: str) -> str:
    columns = matrix["columns"]
    rows = matrix["op_types"]
    left, cell_w = geometry
    top, cell_h = 64, 22
    width = int(left + cell_w * len(columns) + 10)
    height = top + cell_h * len(rows) + 34
    order = MATRIX_ORDER
    out = [
        f"<svg xmlns='http://www.w3.org/2000/svg' class='plot audit-matrix' width='{width}' height='{height}' viewBox='0 0 {width} {height}' role='img' {FONT}>",
        f"<title>Audit matrix: operator types by chip{esc(part)}</title>",
        f"<text x='4' y='16' font-weight='600'>Where each operator type runs, per chip (rules' prediction){esc(part)}</text>",
    ]
    for j, c in enumerate(columns):
        x = left + j * cell_w + cell_w / 2
        lines = _column_lines(c["label"])
        for k, line in enumerate(lines):
            out.append(f"<text x='{x:.1f}' y='{top - 8 - 13 * (len(lines) - 1 - k)}' text-anchor='middle' font-weight='600'>{esc(line)}</text>")
        if c.get("precision"):
            out.append(f"<text x='{x:.1f}' y='{top - 8 - 13 * len(lines)}' text-anchor='middle' fill='#57606a'>{esc(c['precision'])}</text>")
    for i, row in enumerate(rows):
        y = top + i * cell_h
        out.append(f"<text x='{left - 6}' y='{y + cell_h * 0.68:.1f}' text-anchor='end'>{esc(row['op_type'])} ({esc(row['count'])})</text>")
        for j, c in enumerate(columns):
            cell = row["cells"].get(c["id"], {})
            worst = next((p for p in order if cell.get(p)), None)
            text = _cell_text(cell)
            x = left + j * cell_w
            out.append(
                f"<rect class='cell {esc(worst or 'none')}' x='{x + 1:.1f}' y='{y + 1}' width='{cell_w - 2:.1f}' height='{cell_h - 2}' fill='{PLACEMENT_COLORS[worst]}' fill-opacity='0.8'>"
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


def flash_layout(layout: dict, width: int = 780) -> str:
    """The flash of the dev kit as one bar: each partition at its offset and size, the rest free."""
    flash = layout.get("flash_bytes")
    partitions = [p for p in layout.get("partitions") or [] if isinstance(p.get("offset"), int) and isinstance(p.get("size"), int)]
    if not isinstance(flash, int) or flash <= 0 or not partitions:
        return ""
    left, right, top, bar_h = 8, 8, 24, 28
    height = top + bar_h + 42
    span = width - left - right
    out = [
        f"<svg xmlns='http://www.w3.org/2000/svg' class='plot flash-plot' width='{width}' height='{height}' viewBox='0 0 {width} {height}' role='img' {FONT}>",
        f"<title>Flash layout of {esc(layout.get('label'))}</title>",
        f"<text x='{left}' y='14' font-weight='600'>Flash layout ({esc(fmt.bytes_text(flash))}; model in {esc(layout.get('model_location') or '?')})</text>",
        f"<rect x='{left}' y='{top}' width='{span}' height='{bar_h}' fill='#f6f8fa' stroke='#d0d7de'/>",
    ]
    for p in partitions:
        x = left + span * p["offset"] / flash
        w = max(span * p["size"] / flash, 1.5)
        out.append(
            f"<rect class='partition' x='{x:.1f}' y='{top}' width='{w:.1f}' height='{bar_h}' fill='#1f6feb' fill-opacity='0.7'>"
            f"<title>{esc(p.get('name'))} ({esc(p.get('type'))}/{esc(p.get('subtype'))}): 0x{p['offset']:x}, {esc(fmt.bytes_text(p['size']))}</title></rect>"
        )
        if w > 60:
            out.append(f"<text x='{x + 4:.1f}' y='{top + 18}' fill='#fff'>{esc(p.get('name'))} {esc(fmt.bytes_text(p['size']).split(' (')[0])}</text>")
    out.append(f"<text x='{left}' y='{top + bar_h + 16}' fill='#57606a'>0x0</text>")
    out.append(f"<text x='{width - right}' y='{top + bar_h + 16}' text-anchor='end' fill='#57606a'>0x{flash:x}</text>")
    out.append(f"<text x='{left}' y='{top + bar_h + 32}' fill='#57606a'>blue: partitions of the generated partitions.csv; grey: not assigned</text>")
    out.append("</svg>")
    return "\n".join(out)
