"""The accuracy diagnosis and build --recover's attempts as HTML and Markdown.

Used by `edgedeploy diagnose --format html|md` (a page of its own) and by `edgedeploy report`
(a section per artifact whose report.json carries `accuracy_diagnosis` or `recovery`). The text
forms are in diagnosis.py. Every model-supplied name is escaped: escape.html_text in HTML,
escape.markdown_cell in Markdown.
"""

from __future__ import annotations

from edgedeploy import __version__
from edgedeploy.escape import html_text, markdown_cell
from edgedeploy.report.diagnosis import latency_notes, referred_role, show_attempt_figures
from edgedeploy.report.snr_curve import GOAL_SNR_DB, output_curves, snr_value, text_chart
from edgedeploy.report.snr_svg import curve_svg


def _db(value) -> str:
    db = snr_value(value)
    if db is None:
        return "-"
    return {float("inf"): "exact", float("-inf"): "no signal"}.get(db, f"{db:.1f} dB")


def _findings(path: dict) -> list[str]:
    """The localisation in sentences (plain text; the caller escapes): first sharp fall, worst nodes, causes."""
    first = path.get("first_sharp_drop")
    lines = [
        f"First sharp fall: {first['node']} ({first.get('op_type')}) on {first.get('tensor')}: accumulated SNR {_db(first['accumulated_snr_db'])}, {first['drop_db']:.1f} dB below its inputs."
        if first
        else "First sharp fall: none (no node falls 10 dB or more to under 30 dB)."
    ]
    worst = ", ".join(f"{w['node']} ({_db(w['isolated_snr_db'] if w.get('isolated_snr_db') is not None else w['accumulated_snr_db'])})" for w in path.get("worst_isolated") or [])
    lines.append(f"Worst by {path.get('worst_ranked_by', 'isolated SNR')}: {worst or '-'}.")
    if path.get("worst_referred"):
        referred = ", ".join(f"{w['node']} ({_db(w.get('referred_snr_db'))})" for w in path["worst_referred"])
        lines.append(f"Worst referred to the outputs (that node alone quantised in the float model, lowest output SNR; {referred_role(path)}): {referred}.")
    lines += [f"Likely cause at {c['node']}: {c['sentence']}" for c in path.get("causes") or []] or ["Likely cause: none the statistics show."]
    return lines


def _outputs_text(path: dict) -> str:
    return ", ".join(f"{name} {_db((f or {}).get('snr_db'))}" for name, f in (path.get("outputs") or {}).items()) or "-"


def _html_table(headers: list[str], rows: list[list[str]], cls: str) -> str:
    """Cells are plain text, escaped here."""
    head = "".join(f"<th>{html_text(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{html_text(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table class='{cls}'><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


NODE_HEADERS = ["#", "Node", "Op", "Precision", "Accumulated SNR", "Cosine", "Isolated SNR", "Fall (dB)", "Absorbs"]


def _node_rows(path: dict) -> list[list[str]]:
    rows = []
    for i, node in enumerate(path.get("nodes") or [], start=1):
        acc, iso = node.get("accumulated") or {}, node.get("isolated") or {}
        cosine = "-" if acc.get("cosine") is None else f"{acc['cosine']:.4g}"
        fall = "-" if node.get("drop_db") is None else f"{node['drop_db']:.1f}"
        rows.append([str(i), node["node"], node.get("op_type") or "", node.get("precision") or "-", _db(acc.get("snr_db")), cosine, _db(iso.get("snr_db")), fall, ", ".join(node.get("absorbs") or [])])
    return rows


def path_html(path: dict) -> str:
    """One path: the curves, what the diagnosis found, every node in a folded table."""
    parts = [f"<h3>{html_text(path['path'])}: {html_text(path.get('toolchain', ''))}</h3>", f"<p class='scope'>{html_text(path.get('method', ''))}</p>"]
    parts.append(f"<p>Outputs (accumulated, quantised against float): {html_text(_outputs_text(path))}.</p>")
    for curve in output_curves(path):
        svg = curve_svg(curve, path)
        if svg:
            caption = f"One point per node upstream of {curve['output'] or 'the outputs'}, in graph order; dashed: the {GOAL_SNR_DB:g} dB goal; ringed: the nodes named below."
            parts.append(f"<figure>{svg}<figcaption>{html_text(caption)}</figcaption></figure>")
    parts.append("<ul class='findings'>" + "".join(f"<li>{html_text(line)}</li>" for line in _findings(path)) + "</ul>")
    rows = _node_rows(path)
    parts.append(f"<details><summary>Every node ({len(rows)})</summary><div class='wide'>{_html_table(NODE_HEADERS, rows, 'diagnosis-nodes')}</div></details>")
    return "".join(parts)


def diagnosis_html(document: dict) -> str:
    """The body of one accuracy_diagnosis document (no heading of its own)."""
    if document.get("error"):
        return f"<p class='note'>The diagnosis could not run: {html_text(document['error'])}</p>"
    parts = [path_html(p) for p in document.get("paths") or []]
    parts += [f"<p class='note'>{html_text(s['path'])}: not diagnosed: {html_text(s['reason'])}</p>" for s in document.get("skipped") or []]
    return "".join(parts)


ATTEMPT_HEADERS = ["Attempt", "Method", "Options", "Figures", "Goals", "Model size", "Nodes off int8", "Latency"]


def attempt_rows(section: dict) -> list[list[str]]:
    """build --recover's attempts, one row each, plain text: what was tried, its figures, its cost."""
    rows = []
    for a in section.get("attempts") or []:
        cost = a.get("cost_figures") or {}
        chosen = " (chosen)" if a["id"] == section.get("chosen") else ""
        figures = show_attempt_figures(a.get("figures") or {}) if a["status"] == "built" else f"failed: {a.get('reason')}"
        goals = ("met" if a.get("met") else "missed") if a["status"] == "built" else "-"
        size = cost.get("model_size_bytes")
        latency = f"{cost['latency_ms']:.3g} ms" if cost.get("latency_ms") is not None else "not measured"
        rows.append([a["id"] + chosen, a["cost"], a.get("flags") or "(as built)", figures, goals, "-" if size is None else f"{size} B", str(cost.get("nodes_off_int8", "-")), latency])
    return rows


def attempts_html(section: dict) -> str:
    notes = "".join(f"<li>{html_text(note)}</li>" for note in _attempt_notes(section))
    return f"<p>{html_text(section.get('sentence', ''))}</p>" + _html_table(ATTEMPT_HEADERS, attempt_rows(section), "recover-attempts") + (f"<ul class='scope'>{notes}</ul>" if notes else "")


def _md_table(headers: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    return out + ["| " + " | ".join(markdown_cell(c) or "-" for c in row) + " |" for row in rows]


def diagnosis_markdown(document: dict) -> list[str]:
    """One accuracy_diagnosis document as Markdown lines: per path the outputs, the text curve, the findings."""
    if document.get("error"):
        return [f"The diagnosis could not run: {markdown_cell(document['error'])}", ""]
    lines = []
    for path in document.get("paths") or []:
        lines += [f"### {markdown_cell(path['path'])}: {markdown_cell(path.get('toolchain', ''))}", "", markdown_cell(path.get("method", "")), ""]
        lines += [f"Outputs (accumulated, quantised against float): {markdown_cell(_outputs_text(path))}.", ""]
        chart = text_chart(path)  # names are terminal-safe; a code block shows them as they are
        lines += ["```text", *[line.replace("```", "'''") for line in chart], "```", ""] if chart else []
        lines += [f"- {markdown_cell(line)}" for line in _findings(path)] + [""]
    lines += [f"{markdown_cell(s['path'])}: not diagnosed: {markdown_cell(s['reason'])}" for s in document.get("skipped") or []]
    return lines


def attempts_markdown(section: dict) -> list[str]:
    lines = [markdown_cell(section.get("sentence", "")), ""] + _md_table(ATTEMPT_HEADERS, attempt_rows(section)) + [""]
    return lines + [f"- {markdown_cell(note)}" for note in _attempt_notes(section)]


def _attempt_notes(section: dict) -> list[str]:
    """Below the table: the knobs the toolchain does not have, and why no attempt has a latency."""
    unavailable = [f"not tried: {k['cost']}: {k['unavailable']}" for k in section.get("knobs") or [] if k.get("unavailable")]
    return unavailable + latency_notes(section)


def diagnosis_markdown_page(document: dict) -> str:
    """`edgedeploy diagnose --format md`: the document as a page of its own, saying it was generated."""
    title, generated = page_title(document)
    return "\n".join([f"# {markdown_cell(title)}", "", markdown_cell(generated), "", *diagnosis_markdown(document)]) + "\n"


def page_title(document: dict) -> tuple[str, str]:
    """The title of a diagnosis page, and its line saying it is generated (plain text)."""
    model = document.get("model") or {}
    title = f"Accuracy diagnosis of {model.get('name', '?')} for {document.get('chip', '?')}"
    generated = f"Generated by edgedeploy {__version__} from the accuracy_diagnosis document of {document.get('artifact', '?')} (edgedeploy diagnose); do not edit."
    if document.get("verified") is False:
        generated += " NOT VERIFIED: read with --no-verify; the artifact's files were not checked against its manifest."
    return title, generated
