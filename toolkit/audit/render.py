"""Rendering the audit report (edgedeploy.audit.report) as terminal text, Markdown or HTML.

Self-contained on purpose: the audit's renderers depend on nothing but the report dict, so
`edgedeploy audit` stays fast and the general report renderer can embed these pieces. Every
string that comes from the model (node and tensor names) is escaped for the format it lands in.
"""

from __future__ import annotations

from edgedeploy.escape import html_text, markdown_cell, terminal_safe

from edgedeploy.report.fmt import fit_lines, table  # one table layout for every text rendering (wraps to a width)

# Short cell labels for the cross-chip matrix (terminal and Markdown), and their legend.
CELL_LABEL = {"accelerator": "acc", "float": "float", "fallback": "fallback", "unsupported": "UNSUP"}
LEGEND = "acc = on the accelerator; float = kept in float; fallback = runs on the fallback unit (CPU, or GPU for DLA); UNSUP = unsupported (the build fails); n/m = n of m nodes"
MAX_LISTED_NODES = 6


def _cell_text(cell: dict | None, count: int) -> str:
    if cell is None:
        return "-"
    worst = cell["worst"]
    label = CELL_LABEL[worst]
    n = cell["counts"].get(worst, 0)
    return label if n == count else f"{label} {n}/{count}"


def _short_list(items: list[str], limit: int = MAX_LISTED_NODES) -> str:
    shown = ", ".join(items[:limit])
    return shown + (f", ... (+{len(items) - limit})" if len(items) > limit else "")


def _ops_text(ops: dict) -> str:
    return ", ".join(f"{op} {n}" for op, n in ops.items())


def _model_line(report: dict) -> str:
    m = report["model"]
    shapes = ", ".join(f"{k}={'x'.join(map(str, v))}" for k, v in m["input_shapes"].items())
    return f"model {m['name']} (sha256 {m['sha256'][:16]}..., opset {m['opset']}, {m['nodes']} nodes)" + (f", input shapes {shapes}" if shapes else "")


# ---------------------------------------------------------------- text


def render_text(report: dict, per_node: bool = False, width: int | None = None) -> str:
    """The terminal view; `width` (the terminal's columns, None for no limit) wraps the chip matrix into blocks of chips."""
    out = [_model_line(report), ""]
    if report["matrix"] is not None:
        matrix = report["matrix"]
        headers = ["OPERATOR" if matrix["by"] == "op" else "NODE", "NODES"] + matrix["chips"]
        rows = [[r["key"], r["count"]] + [_cell_text(r["cells"].get(c), r["count"]) for c in matrix["chips"]] for r in matrix["rows"]]
        estimates, unseen = _estimate_cells(report, matrix["chips"]), _unseen_cells(report, matrix["chips"])
        rows += [[label, ""] + cells for label, cells in (("est. latency", estimates), (UNSEEN_LABEL, unseen)) if cells is not None]
        out.append(table(headers, rows, right_align=[1], width=width, keep=2, what="chips"))
        out.append(_legend(estimates, unseen))
        out.append("")
    for audit in report["audits"]:
        if report["matrix"] is None or per_node:
            out += _text_chip_detail(audit, per_node)
        out.append(audit["summary_line"])
        if report["matrix"] is None and audit.get("estimate"):
            out.append(f"  estimated latency (not measured): {audit['estimate']['sentence']}")
        if report["matrix"] is None and audit.get("unseen_agreement"):
            out.append(f"  how far to trust this audit: {audit['unseen_agreement']['sentence']}")
        if "confirm" in audit:
            out += _text_confirm(audit, detailed=report["matrix"] is None)
    for missing in report["no_rules"]:
        out.append(f"{missing['target_name']} ({', '.join(missing['chips'])}): {missing['reason']}")
    fail = report["fail_on"]
    if fail["failed"]:
        found = "; ".join(f"{chip}: " + ", ".join(f"{n} {p}" for p, n in counts.items()) for chip, counts in fail["found"].items())
        out.append(f"--fail-on {fail['level']}: failing (exit {fail['exit_code']}): {found}")
    return fit_lines("\n".join(out).rstrip(), width) + "\n"


ESTIMATE_LEGEND = "; est. latency = estimated ms per inference, +-the chip's typical (leave-one-out) error (`edgedeploy estimate`, docs/estimate.md)"
UNSEEN_LABEL = "exact unseen"
UNSEEN_LEGEND = ("; exact unseen = of the architectures nobody here had seen (blind sets), the share whose whole-model audit was exact "
                 "on the chip (the share of their nodes placed right), docs/audit-agreement.md; - = not measured")


def _legend(estimates: list[str] | None, unseen: list[str] | None) -> str:
    return LEGEND + (ESTIMATE_LEGEND if estimates is not None else "") + (UNSEEN_LEGEND if unseen is not None else "")


def _unseen_cells(report: dict, chips: list[str]) -> list[str] | None:
    """The matrix's row of each chip's pooled blind figures: 'pairs% (nodes%)', '-' where not
    measured; None when no chip of the report was measured."""
    by_chip = {a["chip"]: a.get("unseen_agreement") for a in report["audits"]}
    if not any(by_chip.values()):
        return None
    return [f"{100 * u['exact'] / u['pairs']:.0f}% ({100 * u['nodes_agree'] / u['nodes_compared']:.1f}%)" if u else "-"
            for u in map(by_chip.get, chips)]


def _estimate_cells(report: dict, chips: list[str]) -> list[str] | None:
    """The matrix's estimate row: 'ms +-error%' per chip, '-' where there is none; None when no chip has an estimate entry."""
    by_chip = {a["chip"]: a.get("estimate") for a in report["audits"]}
    if not any(by_chip.values()):
        return None
    cells = []
    for chip in chips:
        e = by_chip.get(chip)
        if not e or e.get("latency_ms") is None:
            cells.append("-")
            continue
        ms = e["latency_ms"]
        cells.append((f"{ms:.2f}" if ms < 1 else f"{ms:.1f}" if ms < 10 else f"{ms:.0f}") + f" +-{100 * e['loo_mdape']:.0f}%")
    return cells


def _text_chip_detail(audit: dict, per_node: bool) -> list[str]:
    out = [
        f"{audit['target_name']} {audit['chip_name']} ({audit['chip']}): rules for {audit['toolchain_version']}, precision {audit['precision'] or 'default'}",
    ]
    rows = []
    for g in audit["groups"]:
        reason = g["reason"] + (f" [{g['rule']}]" if g["rule"] else "")
        rows.append([g["placement"], g["count"], _ops_text(g["ops"]), reason or "-"])
        if g["placement"] != "accelerator":
            examples = g["values"] or g["examples"]
            rows.append(["", "", "", "e.g. " + "; ".join(examples[:3])])
    out.append(table(["PLACEMENT", "NODES", "OPERATORS", "REASON"], rows, right_align=[1]))
    if per_node:
        out.append("")
        out.append(table(["#", "NODE", "OP", "PLACEMENT", "REASON"], [[n["index"], n["node"], n["op_type"], n["placement"], n["reason"]] for n in audit["nodes"]], right_align=[0]))
    if audit["crossings"]:
        out.append("")
        out.append(
            table(
                ["TENSOR", "FROM", "TO", "DIRECTION", "BYTES"],
                [[c["tensor"], c["producer"], c["consumer"], c["direction"], c["size_bytes"] if c["size_bytes"] is not None else "?"] for c in audit["crossings"]],
                right_align=[4],
            )
        )
    notes = list(audit.get("notes", []))
    if audit["summary"]["on_accelerator"] < audit["summary"]["nodes"]:
        notes += audit.get("rules_notes", [])
    for note in notes:
        out.append(f"note: {note}")
    out.append("")
    return out


def _text_confirm(audit: dict, detailed: bool) -> list[str]:
    confirm = audit["confirm"]
    if "skipped" in confirm:
        return [f"  toolchain check skipped: {confirm['skipped']}"]
    verdict, comparison = confirm["verdict"], confirm["comparison"]
    name = f"{verdict['toolchain']} {verdict['version'].split()[-1] if verdict['version'] else ''}".strip()
    out = []
    if verdict["failed"]:
        agrees = "as predicted" if comparison["agree"] else "but the rules predicted it would build"
        out.append(f"  {name} refused the model ({agrees}): {verdict['failed']}")
        return out
    rate = f"{100 * comparison['agreement']:.1f}%" if comparison["agreement"] is not None else "n/a"
    out.append(
        f"  {name}: {comparison['agree']} of {comparison['compared']} nodes agree with the rules ({rate}); "
        f"{len(comparison['disagreements'])} disagree, {len(comparison.get('unverifiable', []))} unverifiable, {len(comparison['not_reported'])} not reported"
    )
    if detailed:
        verdict_nodes = verdict["nodes"]
        disagreeing = {d["node"] for d in comparison["disagreements"]}
        unverifiable = set(comparison.get("unverifiable", []))
        rows = []
        for n in audit["nodes"]:
            seen = verdict_nodes.get(n["node"])
            mark = "DIFFERS" if n["node"] in disagreeing else "unverifiable" if n["node"] in unverifiable else "" if seen else "not reported"
            rows.append([n["node"], n["op_type"], n["placement"], seen["placement"] if seen else "-", seen["detail"] if seen else "", mark])
        out.append(table(["NODE", "OP", "PREDICTED", "TOOLCHAIN", "TOOLCHAIN SAYS", ""], rows))
        if verdict["unmapped"]:
            out.append("  toolchain layers not traced to a node: " + _short_list(verdict["unmapped"]))
    for d in comparison["disagreements"]:
        out.append(f"  disagreement: {d['node']} ({d.get('op_type', '')}): predicted {d['predicted']}, {name} says {d['toolchain']} ({d.get('detail', '')})")
    return out


# ---------------------------------------------------------------- markdown


def _md(text) -> str:
    """Escape a value for a Markdown table cell."""
    return markdown_cell(text)


def render_markdown(report: dict) -> str:
    m = report["model"]
    out = [f"# Fallback-operator audit: {_md(m['name'])}", "", _md(_model_line(report)), ""]
    if report["matrix"] is not None:
        matrix = report["matrix"]
        out += ["## Matrix", ""]
        out.append("| " + " | ".join(["operator" if matrix["by"] == "op" else "node", "nodes"] + matrix["chips"]) + " |")
        out.append("|" + "---|" * (2 + len(matrix["chips"])))
        for r in matrix["rows"]:
            out.append("| " + " | ".join([_md(r["key"]), str(r["count"])] + [_cell_text(r["cells"].get(c), r["count"]) for c in matrix["chips"]]) + " |")
        estimates, unseen = _estimate_cells(report, matrix["chips"]), _unseen_cells(report, matrix["chips"])
        for label, cells in (("est. latency", estimates), (UNSEEN_LABEL, unseen)):
            if cells is not None:
                out.append("| " + " | ".join([label, ""] + cells) + " |")
        out += ["", _md(_legend(estimates, unseen)), ""]
    for audit in report["audits"]:
        out += [f"## {_md(audit['target_name'])} {_md(audit['chip_name'])} ({audit['chip']})", ""]
        out += [f"Rules for {_md(audit['toolchain_version'])}, precision {audit['precision'] or 'default'}. Source: {_md(audit['source'])}.", ""]
        out += [f"**{_md(audit['summary_line'])}**", ""]
        if audit.get("estimate"):
            out += [f"Estimated latency (not measured): {_md(audit['estimate']['sentence'])}", ""]
        if audit.get("unseen_agreement"):
            out += [f"How far to trust this audit: {_md(audit['unseen_agreement']['sentence'])}", ""]
        out += ["| placement | nodes | operators | reason | examples |", "|---|---|---|---|---|"]
        for g in audit["groups"]:
            reason = g["reason"] + (f" ({g['rule']})" if g["rule"] else "")
            examples = "; ".join(g["values"][:3] or g["examples"]) if g["placement"] != "accelerator" else ""
            out.append(f"| {g['placement']} | {g['count']} | {_md(_ops_text(g['ops']))} | {_md(reason)} | {_md(examples)} |")
        if audit["crossings"]:
            out += ["", "| tensor | from | to | direction | bytes |", "|---|---|---|---|---|"]
            for c in audit["crossings"]:
                out.append(f"| {_md(c['tensor'])} | {_md(c['producer'])} | {_md(c['consumer'])} | {c['direction']} | {c['size_bytes'] if c['size_bytes'] is not None else '?'} |")
        if "confirm" in audit:
            out += [""] + [_md(line.strip()) for line in _text_confirm_lines_plain(audit)]
        for note in audit.get("notes", []) + audit.get("rules_notes", []):
            out += ["", f"Note: {_md(note)}"]
        out.append("")
    for missing in report["no_rules"]:
        out.append(f"- {_md(missing['target_name'])} ({', '.join(missing['chips'])}): {_md(missing['reason'])}")
    return "\n".join(out).rstrip() + "\n"


def _text_confirm_lines_plain(audit: dict) -> list[str]:
    return [line for line in _text_confirm(audit, detailed=False) if line.strip()]


# ---------------------------------------------------------------- html

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;margin:2rem;color:#1d1d1f;max-width:1200px}
table{border-collapse:collapse;margin:1rem 0;font-size:.9rem}
th,td{border:1px solid #d0d0d7;padding:.3rem .55rem;text-align:left;vertical-align:top}
th{background:#f3f3f6}
td.accelerator{background:#d9f2dd}td.float{background:#fff3c4}td.fallback{background:#ffd9b3}td.unsupported{background:#ffc2c2;font-weight:600}
.summary{font-weight:600}.muted{color:#666}
code{font-size:.85rem}
table.matrix th[scope=row]{text-align:left;white-space:nowrap}
"""


def _h(text) -> str:
    return html_text(text)


# The page's content width (body max-width less margins), and what a character of the matrix
# costs at its font size: what decides how many columns go into one table.
PAGE_WIDTH_PX = 1100
CHAR_PX = 8.0
CELL_PAD_PX = 20


def _html_matrix(matrix: dict) -> list[str]:
    """The chip matrix as tables that fit a 1280 px page.

    With more chips than rows the matrix is transposed (a row per chip, grouped by target);
    then its columns are split into as many tables as the page width needs, each repeating
    the row labels, so no table runs off the page.
    """
    key_name = "operator" if matrix["by"] == "op" else "node"
    chips, rows = matrix["chips"], matrix["rows"]
    transposed = len(chips) > len(rows)

    def cell_html(r, c):
        cell = r["cells"].get(c)
        klass = cell["worst"] if cell else ""
        title = "; ".join(cell["reasons"]) if cell else ""
        return f'<td class="{klass}" title="{_h(title)}">{_h(_cell_text(cell, r["count"]))}</td>', len(_cell_text(cell, r["count"]))

    if transposed:
        col_heads = [f"{r['key']} ({r['count']})" for r in rows]
        row_heads = list(chips)
        grid = [[cell_html(r, c) for r in rows] for c in chips]
        corner = f"chip \\ {key_name} (nodes)"
    else:
        col_heads = list(chips)
        row_heads = [r["key"] for r in rows]
        grid = [[cell_html(r, c) for c in chips] for r in rows]
        corner = key_name
    label_px = max(len(corner), *(len(h) for h in row_heads)) * CHAR_PX + CELL_PAD_PX
    widths = [max(len(h), *(grid[i][j][1] for i in range(len(row_heads)))) * CHAR_PX + CELL_PAD_PX for j, h in enumerate(col_heads)]
    blocks, used = [[]], label_px
    for j, w in enumerate(widths):
        if blocks[-1] and used + w > PAGE_WIDTH_PX:
            blocks.append([])
            used = label_px
        blocks[-1].append(j)
        used += w
    parts = []
    if transposed:
        parts.append(f"<p class=\"muted\">One row per chip ({len(chips)} chips, {len(rows)} {key_name}s): transposed to fit the page.</p>")
    for block in blocks:
        head = "".join(f"<th>{_h(col_heads[j])}</th>" for j in block)
        body = []
        for i, label in enumerate(row_heads):
            label_cell = f"<th scope=\"row\">{_h(label)}</th>" if transposed else f"<td><code>{_h(label)}</code></td>"
            body.append(f"<tr>{label_cell}{''.join(grid[i][j][0] for j in block)}</tr>")
        parts.append(f'<table class="matrix"><tr><th>{_h(corner)}</th>{head}</tr>{"".join(body)}</table>')
    return parts


def render_html(report: dict) -> str:
    m = report["model"]
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>edgedeploy audit: {_h(m['name'])}</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<h1>Fallback-operator audit: {_h(m['name'])}</h1>",
        f"<p class=\"muted\">{_h(_model_line(report))}; edgedeploy {_h(report['edgedeploy_version'])}</p>",
    ]
    if report["matrix"] is not None:
        parts.append("<h2>Matrix</h2>")
        parts += _html_matrix(report["matrix"])
        parts.append(f"<p class=\"muted\">{_h(LEGEND)}; hover a cell for the reason.</p>")
    for audit in report["audits"]:
        parts.append(f"<h2>{_h(audit['target_name'])} {_h(audit['chip_name'])} ({_h(audit['chip'])})</h2>")
        parts.append(f"<p class=\"muted\">Rules for {_h(audit['toolchain_version'])}, precision {_h(audit['precision'] or 'default')}. Source: {_h(audit['source'])}.</p>")
        parts.append(f"<p class=\"summary\">{_h(audit['summary_line'])}</p>")
        if audit.get("estimate"):
            parts.append(f"<p>Estimated latency (not measured): {_h(audit['estimate']['sentence'])}</p>")
        if audit.get("unseen_agreement"):
            parts.append(f"<p>How far to trust this audit: {_h(audit['unseen_agreement']['sentence'])}</p>")
        parts.append("<table><tr><th>placement</th><th>nodes</th><th>operators</th><th>reason</th><th>examples</th></tr>")
        for g in audit["groups"]:
            reason = g["reason"] + (f" ({g['rule']})" if g["rule"] else "")
            examples = "; ".join(g["values"][:3] or g["examples"]) if g["placement"] != "accelerator" else ""
            parts.append(
                f'<tr><td class="{_h(g["placement"])}">{_h(g["placement"])}</td><td>{g["count"]}</td>'
                f"<td>{_h(_ops_text(g['ops']))}</td><td>{_h(reason)}</td><td><code>{_h(examples)}</code></td></tr>"
            )
        parts.append("</table>")
        if audit["crossings"]:
            parts.append("<table><tr><th>tensor</th><th>from</th><th>to</th><th>direction</th><th>bytes</th></tr>")
            for c in audit["crossings"]:
                parts.append(
                    f"<tr><td><code>{_h(c['tensor'])}</code></td><td>{_h(c['producer'])}</td><td>{_h(c['consumer'])}</td>"
                    f"<td>{_h(c['direction'])}</td><td>{_h(c['size_bytes'] if c['size_bytes'] is not None else '?')}</td></tr>"
                )
            parts.append("</table>")
        if "confirm" in audit:
            parts.append("<ul>" + "".join(f"<li>{_h(line.strip())}</li>" for line in _text_confirm_lines_plain(audit)) + "</ul>")
        for note in audit.get("notes", []) + audit.get("rules_notes", []):
            parts.append(f"<p class=\"muted\">Note: {_h(note)}</p>")
    if report["no_rules"]:
        parts.append("<h2>Targets without rules yet</h2><ul>")
        for missing in report["no_rules"]:
            parts.append(f"<li>{_h(missing['target_name'])} ({_h(', '.join(missing['chips']))}): {_h(missing['reason'])}</li>")
        parts.append("</ul>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
