"""The Markdown rendering of a comparison: the same tables as the HTML page, scope on every row.

Plots are in the HTML page only (Markdown viewers differ in what they draw).
"""

from __future__ import annotations

from edgedeploy.escape import markdown_cell, markdown_code
from edgedeploy.report import fmt, sections
from edgedeploy.report.text import comparison_lines


def _cell(value) -> str:
    return "-" if value is None else markdown_cell(value)


def _table(headers: list[str], rows: list[list]) -> list[str]:
    out = ["| " + " | ".join(_cell(h) for h in headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    out += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return out


def _memory(comp: dict) -> list[str]:
    memory, layouts = comp.get("memory") or [], comp.get("flash_layout") or []
    if not (memory or layouts):
        return []
    lines = ["## Memory and size", ""]
    if memory:
        lines += _table(["Artifact", "What", "Size", "Source"], [[m["label"], m["what"], fmt.bytes_text(m["bytes"]), m["source"]] for m in memory]) + [""]
    for layout in layouts:
        lines += [f"### {layout['label']}: flash layout", "", f"The model is placed in {layout.get('model_location') or '?'}; flash of the dev kit {fmt.bytes_text(layout.get('flash_bytes'))}.", ""]
        rows = [[p.get("name"), p.get("type"), p.get("subtype"), f"0x{p['offset']:x}" if isinstance(p.get("offset"), int) else "-", fmt.bytes_text(p.get("size"))] for p in layout["partitions"]]
        lines += _table(["Partition", "Type", "Subtype", "Offset", "Size"], rows) + [""]
    return lines


def _section_cell(value, column: dict) -> str:
    """A table cell of a target's section: a model-supplied name as an escaped code span, the rest as text."""
    if column.get("kind") == "name" and value is not None:
        return markdown_code(str(value)).replace("|", "\\|")
    return markdown_cell(sections.value_text(value, column.get("unit")))


def _sections(comp: dict) -> list[str]:
    """What the artifacts' targets add (edgedeploy.report.sections), rendered from their data."""
    lines = []
    for entry in comp.get("sections") or []:
        lines += [f"## {markdown_cell(entry['label'])}: {markdown_cell(entry['title'])}", ""]
        if entry.get("source"):
            lines += [f"Source: {markdown_cell(entry['source'])}.", ""]
        if entry["facts"]:
            rows = [[markdown_cell(f["label"]), markdown_cell(sections.fact_text(f)), markdown_cell(f.get("note") or "")] for f in entry["facts"]]
            lines += _raw_table(["What", "Value", "Note"], rows) + [""]
        for tab in entry["tables"]:
            lines += [f"### {markdown_cell(tab['title'])}", ""]
            rows = [[_section_cell(v, c) for v, c in zip(row, tab["columns"])] for row in tab["rows"]]
            lines += _raw_table([markdown_cell(sections.column_header(c)) for c in tab["columns"]], rows) + [""]
            lines += [markdown_cell(note) for note in tab["notes"]] + ([""] if tab["notes"] else [])
        lines += [markdown_cell(note) for note in entry["notes"]] + ([""] if entry["notes"] else [])
    return lines


def _raw_table(headers: list[str], rows: list[list[str]]) -> list[str]:
    """A table of cells that are Markdown already."""
    out = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    return out + ["| " + " | ".join(row) + " |" for row in rows]


def _diagnoses(comp: dict) -> list[str]:
    """Per artifact, the accuracy diagnosis its build wrote (an accuracy gate failed) and build --recover's attempts."""
    from edgedeploy.report.diagnosis import diagnosis_scope
    from edgedeploy.report.diagnosis_pages import attempts_markdown, diagnosis_markdown

    lines = []
    for artifact in comp["artifacts"]:
        report = comp.get("reports", {}).get(artifact["id"]) or {}
        if report.get("accuracy_diagnosis"):
            lines += [f"## Accuracy diagnosis of {markdown_cell(artifact['id'])}", "", markdown_cell(diagnosis_scope(report["accuracy_diagnosis"])), ""]
            lines += diagnosis_markdown(report["accuracy_diagnosis"])
        if report.get("recovery"):
            lines += [f"## build --recover of {markdown_cell(artifact['id'])}", ""] + attempts_markdown(report["recovery"]) + [""]
    return lines


def render_markdown(comp: dict) -> str:
    lines = ["# edgedeploy report", "", f"edgedeploy {comp['edgedeploy_version']}, rendered {comp['created_at']} ({comp['schema']}).", ""]
    lines += [f"> {n}" for n in comp["notes"]] + [""]
    lines += ["## Artifacts", ""]
    rows = []
    for a in comp["artifacts"]:
        s = a.get("audit_summary") or {}
        audit = f"{s.get('on_accelerator')} of {s.get('nodes')} on the accelerator, {s.get('float', 0)} float, {s.get('fallback', 0)} fallback, {s.get('unsupported', 0)} unsupported; {s.get('transitions_per_inference')} transitions" if s else (a.get("audit_status") or "no audit")
        rows.append([a["id"], a["model"]["name"], f"`{fmt.short_hash(a['model']['sha256'])}`", fmt.shapes(a["model"].get("input_shapes")), a.get("chip") or a.get("target"), a.get("precision"), audit, f"`{a['path']}`"])
    lines += _table(["ID", "Model", "SHA-256", "Inputs", "Chip", "Precision", "Audit (rules' prediction)", "Artifact"], rows) + [""]
    estimates = [f"- {a['id']} {a.get('chip') or a.get('target')}: {a['estimate']}" for a in comp["artifacts"] if a.get("estimate")]
    lines += estimates + ([""] if estimates else [])
    for matrix in comp["audit"]:
        lines += ["## Audit matrix", "", f"Scope: {matrix['scope']}.", ""]
        mrows = []
        for row in matrix["op_types"]:
            cells = [", ".join(f"{n} {p}" for p, n in row["cells"].get(c["id"], {}).items()) or "-" for c in matrix["columns"]]
            mrows.append([f"`{row['op_type']}`", row["count"], *cells])
        lines += _table(["Op type", "Nodes", *[c["label"] for c in matrix["columns"]]], mrows) + [""]
    if comp["accuracy"]:
        lines += ["## Accuracy before and after", ""]
        arows = []
        for e in comp["accuracy"]:
            metric = e.get("metric")
            if e.get("status") and not metric:
                arows.append([e["label"], e["kind"], e["status"], "-", "-", "-", e.get("samples"), e.get("reason") or ""])
                continue
            fid = e.get("fidelity") or {}
            arows.append(
                [
                    e["label"],
                    e["kind"],
                    fmt.METRIC_NAMES.get(metric, metric),
                    fmt.metric_text(metric, fmt.metric_value(metric, e.get("before"))),
                    fmt.metric_text(metric, fmt.metric_value(metric, e.get("after"))) + (f" ({e['delta_percentage_points']:+.2f} pp)" if e.get("delta_percentage_points") is not None else ""),
                    f"cosine {fmt.num(fid.get('cosine'), 6)}, SNR {fmt.num(fid.get('snr_db'), 4)} dB" if fid else "-",
                    e.get("samples"),
                    e["scope"],
                ]
            )
        lines += _table(["Artifact", "Where", "Metric", "Before", "After", "Fidelity (after vs before)", "Samples", "Scope"], arows) + [""]
        orows = []
        for e in comp["accuracy"]:
            for out in e.get("outputs") or []:
                fid = out.get("fidelity") or {}
                task = ", ".join(f"{k} {fmt.num(out['before'][k], 4)} → {fmt.num(out['after'].get(k), 4)}" for k in out["before"] if k in out["after"]) if out.get("before") and out.get("after") else (f"- ({out['metric_not_reported']})" if out.get("metric_not_reported") else "-")
                used = f"yes: {e.get('metric_output_reason') or 'chosen with --metric-output'}" if out.get("is_metric_output") else "no"
                orows.append([e["label"], e["kind"], f"`{out['output']}`", (out.get("producer") or "-") + (f"; holds {out['holds']}" if out.get("holds") else ""), fmt.scope_value(out["shape"]) if out.get("shape") else "-", fmt.num(fid.get("cosine"), 6), fmt.num(fid.get("snr_db"), 4), fmt.num(fid.get("max_abs_error"), 4), task, used])
        if orows:
            lines += ["### Every output", ""]
            lines += _table(["Artifact", "Where", "Output", "Produced by", "Shape (per sample)", "Cosine", "SNR (dB)", "Max abs error", "Task metric before → after", "Headline metric?"], orows) + [""]
    lines += _diagnoses(comp)
    lines += _memory(comp)
    lines += _sections(comp)
    for group in comp["latency"]:
        lines += [f"## Latency on {fmt.device_text(group.get('identity') or {'name': group['device']})}", ""]
        lines += [f"> **{note.partition(': ')[0]}**: {note.partition(': ')[2]}." for note in group.get("host_notes") or []] + ([""] if group.get("host_notes") else [])
        units = fmt.latency_column_units(group["entries"])
        lrows = [
            [e["label"], e["run"], fmt.in_unit(e["median_us"], units["median"]), fmt.range_in(e["session_median_range_us"], units["session_medians"]), fmt.range_in(e["session_p99_range_us"], units["p99"]), str(e["sessions"]) + (" (partial)" if e["partial"] else ""), fmt.latency_scope(e["scope"])]
            for e in group["entries"]
        ]
        headers = ["Artifact", "Run", f"Median of session medians ({units['median'][0]})", f"Session medians ({units['session_medians'][0]})", f"Session p99 ({units['p99'][0]})", "Sessions", "Scope"]
        lines += _table(headers, lrows) + [""]
        for c in group["comparisons"]:
            lines += [f"- {c['label']}: " + " ".join(comparison_lines(c)).replace("  ", " ")]
        lines.append("")
    return "\n".join(lines)
