"""One self-contained HTML page: tables and inline SVG plots, no script, no fetched resource.

The comparison JSON it was rendered from is embedded (<script type="application/json">, not
executed) so the page carries its own source of truth.
"""

from __future__ import annotations

import json

from edgedeploy.escape import html_text, terminal_safe
from edgedeploy.report import diagnosis_pages, fmt, sections, svg
from edgedeploy.report.diagnosis import diagnosis_scope
from edgedeploy.report.svg import esc

CSS = """
body { font-family: system-ui, -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif; margin: 24px auto; max-width: 1100px; color: #24292f; padding: 0 16px; }
h1 { font-size: 22px; } h2 { font-size: 18px; margin-top: 32px; border-bottom: 1px solid #d0d7de; padding-bottom: 4px; } h3 { font-size: 15px; }
table { border-collapse: collapse; margin: 8px 0 16px; font-size: 13px; }
th, td { border: 1px solid #d0d7de; padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #f6f8fa; } td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.scope { color: #57606a; font-size: 12px; } .partial { color: #cf222e; font-weight: 600; }
.placement-accelerator { background: #dafbe1; } .placement-float { background: #fff8c5; } .placement-fallback { background: #ffe7d1; } .placement-unsupported { background: #ffd8d3; }
.note { background: #f6f8fa; border-left: 3px solid #57606a; padding: 6px 10px; margin: 6px 0; font-size: 13px; }
figure { margin: 12px 0 20px; } figcaption { font-size: 12px; color: #57606a; max-width: 900px; }
svg.plot { display: block; max-width: 100%; height: auto; margin-bottom: 8px; }
.wide { overflow-x: auto; max-width: 100%; }
"""


def _table(headers: list[str], rows: list[list[str]], cls: str, numeric: tuple[int, ...] = ()) -> str:
    """Cells are HTML already escaped by the caller."""
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = []
    for row in rows:
        cells = "".join(f"<td class='num'>{c}</td>" if i in numeric else f"<td>{c}</td>" for i, c in enumerate(row))
        body.append(f"<tr>{cells}</tr>")
    return f"<table class='{cls}'><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _artifacts(comp: dict) -> str:
    rows = []
    for a in comp["artifacts"]:
        s = a.get("audit_summary") or {}
        audit = (
            f"{esc(s.get('on_accelerator'))} of {esc(s.get('nodes'))} nodes on the accelerator; {esc(s.get('float', 0))} float, {esc(s.get('fallback', 0))} fallback, "
            f"{esc(s.get('unsupported', 0))} unsupported; {esc(s.get('transitions_per_inference'))} transitions"
            if s
            else esc(a.get("audit_status") or "no audit")
        )
        rows.append(
            [
                esc(a["id"]),
                esc(a["model"]["name"]),
                f"<code>{esc(fmt.short_hash(a['model']['sha256']))}</code>",
                esc(fmt.shapes(a["model"].get("input_shapes"))),
                esc(f"{a.get('chip_name') or a.get('chip') or a.get('target')} ({a.get('vendor') or '?'})"),
                esc(a.get("accelerator") or "-"),
                esc(a.get("precision") or "-"),
                audit,
                f"<span class='scope'>{esc(a['path'])}</span>",
            ]
        )
    estimates = "".join(f"<li>{esc(a['id'])} {esc(a.get('chip') or a.get('target'))}: {esc(a['estimate'])}</li>" for a in comp["artifacts"] if a.get("estimate"))
    return (
        "<h2 id='artifacts'>Artifacts</h2>"
        + _table(["ID", "Model", "SHA-256", "Inputs", "Chip", "Accelerator", "Precision", "Audit (rules' prediction)", "Artifact"], rows, "artifacts")
        + (f"<ul class='scope'>{estimates}</ul>" if estimates else "")
    )


def _audit(comp: dict) -> str:
    if not comp["audit"]:
        return "<h2 id='audit'>Audit</h2><p>No artifact carries a node-level audit.</p>"
    parts = ["<h2 id='audit'>Audit matrix</h2>"]
    for matrix in comp["audit"]:
        plot = svg.audit_matrix(matrix)
        parts.append(f"<figure>{plot}<figcaption>Scope: {esc(matrix['scope'])}.</figcaption></figure>")
        headers = ["#", "Node", "Op"] + [c["label"] for c in matrix["columns"]]
        rows = []
        for i, node in enumerate(matrix["nodes"]):
            cells = []
            for c in matrix["columns"]:
                cell = node["cells"].get(c["id"])
                if cell:
                    cells.append(f"<span class='placement-{esc(cell['placement'])}' title='{esc(cell.get('reason'))}'>{esc(cell['placement'])}</span>" + (f"<br><span class='scope'>{esc(cell['reason'])}</span>" if cell.get("reason") else ""))
                else:
                    cells.append("-")
            rows.append([str(i), esc(node["node"]), esc(node["op_type"]), *cells])
        parts.append(f"<details><summary>Every node ({len(rows)})</summary><div class='wide'>{_table(headers, rows, 'audit-nodes')}</div></details>")
    return "".join(parts)


def _accuracy(comp: dict) -> str:
    entries = comp["accuracy"]
    if not entries:
        return "<h2 id='accuracy'>Accuracy before and after</h2><p>No accuracy was recorded (build without --eval data, and no on-device output check).</p>"
    rows = []
    for e in entries:
        metric = e.get("metric")
        fid = e.get("fidelity") or {}
        if e.get("status") and not metric:
            rows.append([esc(e["label"]), esc(e["kind"]), esc(e["status"]), "-", "-", "-", "-", esc(e.get("reason") or ""), ""])
            continue
        b, a = fmt.metric_value(metric, e.get("before")), fmt.metric_value(metric, e.get("after"))
        delta = e.get("delta_percentage_points")
        rows.append(
            [
                esc(e["label"]),
                esc(e["kind"]),
                esc(fmt.METRIC_NAMES.get(metric, metric)),
                esc(fmt.metric_text(metric, b)),
                esc(fmt.metric_text(metric, a)) + (f" ({delta:+.2f} pts)" if delta is not None else ""),
                esc(fmt.num(fid.get("cosine"), 6)) if fid else "-",
                esc(fmt.num(fid.get("snr_db"), 4)) + " dB" if fid else "-",
                esc(e.get("samples")),
                f"<span class='scope'>{esc(e['scope'])}</span>",
            ]
        )
    plot = svg.accuracy_bars(entries)
    figure = f"<figure>{plot}<figcaption>Each row compares before and after on the same inputs; the scope of each row is in the table below.</figcaption></figure>" if plot else ""
    outputs = _accuracy_outputs(entries)
    return "<h2 id='accuracy'>Accuracy before and after</h2>" + figure + _table(["Artifact", "Where", "Metric", "Before", "After", "Cosine (after vs before)", "SNR", "Samples", "Scope"], rows, "accuracy") + outputs


def _accuracy_outputs(entries: list[dict]) -> str:
    """Every output's fidelity (and task metric where the labels fit), and which output the headline metric uses, with why."""
    rows = []
    for e in entries:
        for out in e.get("outputs") or []:
            fid = out.get("fidelity") or {}
            task = ""
            if out.get("before") and out.get("after"):
                task = esc(", ".join(f"{k} {fmt.num(out['before'][k], 4)} → {fmt.num(out['after'].get(k), 4)}" for k in out["before"] if k in out["after"]))
            used = f"yes: {esc(e.get('metric_output_reason') or 'chosen with --metric-output')}" if out.get("is_metric_output") else "no"
            rows.append(
                [
                    esc(e["label"]),
                    esc(e["kind"]),
                    f"<code>{esc(out['output'])}</code>",
                    esc((out.get("producer") or "-") + (f"; holds {out['holds']}" if out.get("holds") else "")),
                    esc(fmt.scope_value(out["shape"])) if out.get("shape") else "-",
                    esc(fmt.num(fid.get("cosine"), 6)),
                    esc(fmt.num(fid.get("snr_db"), 4)),
                    esc(fmt.num(fid.get("max_abs_error"), 4)),
                    task or (esc(f"- ({out['metric_not_reported']})") if out.get("metric_not_reported") else "-"),
                    used,
                ]
            )
    if not rows:
        return ""
    return "<h3>Every output</h3>" + _table(
        ["Artifact", "Where", "Output", "Produced by", "Shape (per sample)", "Cosine", "SNR (dB)", "Max abs error", "Task metric before → after", "Headline metric?"],
        rows,
        "accuracy-outputs",
        numeric=(5, 6, 7),
    )


def _memory(comp: dict) -> str:
    """The artifacts' files and the flash layout of generated firmware."""
    memory, layouts = comp.get("memory") or [], comp.get("flash_layout") or []
    if not (memory or layouts):
        return "<h2 id='memory'>Memory and size</h2><p>No artifact records sizes or memory figures.</p>"
    parts = ["<h2 id='memory'>Memory and size</h2>"]
    if memory:
        rows = [[esc(m["label"]), esc(m["what"]), esc(fmt.bytes_text(m["bytes"])), f"<span class='scope'>{esc(m['source'])}</span>"] for m in memory]
        parts.append(_table(["Artifact", "What", "Size", "Source"], rows, "memory", numeric=(2,)))
    for layout in layouts:
        parts.append(f"<h3>{esc(layout['label'])}: flash layout</h3>")
        parts.append(svg.flash_layout(layout))
        rows = [[esc(p.get("name")), esc(p.get("type")), esc(p.get("subtype")), esc(f"0x{p['offset']:x}" if isinstance(p.get("offset"), int) else "-"), esc(fmt.bytes_text(p.get("size")))] for p in layout["partitions"]]
        parts.append(_table(["Partition", "Type", "Subtype", "Offset", "Size"], rows, "flash-layout", numeric=(3, 4)))
        parts.append(f"<p class='scope'>The model is placed in {esc(layout.get('model_location') or '?')}; flash of the dev kit {esc(fmt.bytes_text(layout.get('flash_bytes')))}.</p>")
    return "".join(parts)


def _section_cell(value, column: dict) -> str:
    text = html_text(sections.value_text(value, column.get("unit")))
    return f"<code>{text}</code>" if column.get("kind") == "name" and value is not None else text


def _table_class(name) -> str:
    """A target's table name as the class (checked when the comparison was made; checked again: it goes into markup)."""
    return name if isinstance(name, str) and sections.TABLE_NAME.match(name) else "section-table"


def _sections(comp: dict) -> str:
    """What the artifacts' targets add (edgedeploy.report.sections), rendered from their data; every value escaped."""
    parts = []
    for entry in comp.get("sections") or []:
        parts.append(f"<h2 class='target-section'>{html_text(entry['label'])}: {html_text(entry['title'])}</h2>")
        if entry.get("source"):
            parts.append(f"<p class='scope'>Source: {html_text(entry['source'])}.</p>")
        if entry["facts"]:
            rows = [[html_text(f["label"]), html_text(sections.fact_text(f)), f"<span class='scope'>{html_text(f.get('note') or '')}</span>"] for f in entry["facts"]]
            parts.append(_table(["What", "Value", "Note"], rows, "facts", numeric=(1,)))
        for tab in entry["tables"]:
            columns = tab["columns"]
            parts.append(f"<h3>{html_text(tab['title'])}</h3>")
            rows = [[_section_cell(v, c) for v, c in zip(row, columns)] for row in tab["rows"]]
            numeric = tuple(i for i, c in enumerate(columns) if sections.is_numeric(c))
            parts.append(_table([terminal_safe(sections.column_header(c)) for c in columns], rows, _table_class(tab.get("name")), numeric=numeric))
            parts += [f"<p class='scope'>{html_text(note)}</p>" for note in tab["notes"]]
        parts += [f"<p class='note'>{html_text(note)}</p>" for note in entry["notes"]]
    return "".join(parts)


def _latency(comp: dict) -> str:
    if not comp["latency"]:
        return "<h2 id='latency'>Latency</h2><p>No measurement yet: run <code>edgedeploy measure ARTIFACT --device NAME</code>.</p>"
    parts = ["<h2 id='latency'>Latency</h2>"]
    for group in comp["latency"]:
        device = fmt.device_text(group.get("identity") or {"name": group["device"]})
        parts.append(f"<h3>On {esc(device)}</h3>")
        for note in group.get("host_notes") or []:
            label, _, text = note.partition(": ")
            parts.append(f"<p class='note host-figures'><b>{esc(label)}</b>: {esc(text).replace('host figures', '<b>host figures</b>', 1)}.</p>")
        rows = []
        plot_rows = []
        # One unit per column, named in its header.
        units = fmt.latency_column_units(group["entries"])
        for e in group["entries"]:
            rows.append(
                [
                    esc(e["label"]),
                    esc(e["run"]),
                    esc(fmt.in_unit(e["median_us"], units["median"])),
                    esc(fmt.range_in(e["session_median_range_us"], units["session_medians"])),
                    esc(fmt.range_in(e["session_p99_range_us"], units["p99"])),
                    esc(fmt.range_in(e["first_inference_range_us"], units["first"])),
                    esc(e["sessions"]) + (" <span class='partial'>partial</span>" if e["partial"] else ""),
                    f"<span class='scope'>{esc(fmt.latency_scope(e['scope']))}</span>",
                ]
            )
            for s in e["session_stats"]:
                plot_rows.append({"label": f"{e['artifact']} {e['run']} s{s.get('session')}", "run": e["run"], "latency_us": s.get("latency_us"), "histogram_us": s.get("histogram_us")})
        headers = ["Artifact", "Run", f"Median of session medians ({units['median'][0]})", f"Session medians ({units['session_medians'][0]})", f"Session p99 ({units['p99'][0]})", f"First inference ({units['first'][0]})", "Sessions", "Scope"]
        parts.append(_table(headers, rows, "latency", numeric=(2, 3, 4, 5)))
        host = " (host figures of chip artifacts, not the chips' latency)" if group.get("host_notes") else ""
        plot = svg.latency_sessions(plot_rows, f"Latency distribution per session on {device}{host}")
        if plot:
            parts.append(f"<figure>{plot}<figcaption>One row per session (separate process); same device for every row. Scopes: as in the table above.</figcaption></figure>")
        for c in group["comparisons"]:
            if c.get("speedup") is None:
                parts.append(f"<p class='note'>{esc(c['label'])}: no before/after ratio: {esc(c.get('refused') or 'not computed')}.</p>")
                continue
            dep = c.get("deployment") or {}
            speed = c["speedup"]
            if c.get("session_ranges_overlap"):
                # The sessions disagree more than before and after do: no ratio as the finding.
                verdict, overlap = "within session noise: no speed-up either way", " The session ranges overlap."
            else:
                verdict = f"after is {speed:.2f}x as fast as before" if speed >= 1 else f"after is {1 / speed:.2f}x slower than before"
                overlap = ""
            if c.get("host_run_of"):
                verdict += f" on this host (not the {c['host_run_of']})"
            parts.append(
                f"<p class='note comparison'>{esc(c['label'])}: <b>{esc(verdict)}</b> ({esc(fmt.us(c['before_median_us']))} &#8594; {esc(fmt.us(c['after_median_us']))}, {esc(c['basis'])}).{esc(overlap)}"
                f"<br><span class='scope'>Same {esc(fmt.shared_scope(c.get('scope')))}. Differs only in the deployment: before = {esc(fmt.deployment_text(dep.get('before')))}; after = {esc(fmt.deployment_text(dep.get('after')))}.</span></p>"
            )
            if c.get("partial"):
                parts.append(f"<p class='partial'>{esc(c['label'])}: partial measurement: {esc(c.get('error'))}</p>")
    return "".join(parts)


def render_html(comp: dict) -> str:
    title = "edgedeploy report: " + ", ".join(sorted({a["model"]["name"] or "?" for a in comp["artifacts"]})) + " on " + ", ".join(a["chip"] or a["target"] or "?" for a in comp["artifacts"])
    data = json.dumps(comp, separators=(",", ":"), default=str).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    notes = "".join(f"<p class='note'>{esc(n)}</p>" for n in comp["notes"])
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        "<meta http-equiv='Content-Security-Policy' content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">"
        f"<meta name='viewport' content='width=device-width, initial-scale=1'><title>{esc(title)}</title><style>{CSS}</style></head><body>"
        f"<h1>{esc(title)}</h1>"
        f"<p class='scope'>edgedeploy {esc(comp['edgedeploy_version'])}, rendered {esc(comp['created_at'])} from {len(comp['artifacts'])} report(s) ({esc(comp['schema'])}).</p>"
        f"{notes}{_artifacts(comp)}{_audit(comp)}{_accuracy(comp)}{_diagnoses(comp)}{_memory(comp)}{_sections(comp)}{_latency(comp)}"
        f"<script type='application/json' id='edgedeploy-data'>{data}</script>"
        "</body></html>\n"
    )


def _diagnoses(comp: dict) -> str:
    """Per artifact, the accuracy diagnosis its build wrote (an accuracy gate failed) and build --recover's attempts."""
    parts = []
    for artifact in comp["artifacts"]:
        report = comp.get("reports", {}).get(artifact["id"]) or {}
        if report.get("accuracy_diagnosis"):
            parts.append(f"<h2 id='diagnosis-{html_text(artifact['id'])}'>Accuracy diagnosis of {html_text(artifact['id'])}</h2>")
            parts.append(f"<p class='scope'>{html_text(diagnosis_scope(report['accuracy_diagnosis']))}</p>")
            parts.append(diagnosis_pages.diagnosis_html(report["accuracy_diagnosis"]))
        if report.get("recovery"):
            parts.append(f"<h2 id='recover-{html_text(artifact['id'])}'>build --recover of {html_text(artifact['id'])}</h2>" + diagnosis_pages.attempts_html(report["recovery"]))
    return "".join(parts)


def render_diagnosis_page(document: dict) -> str:
    """`edgedeploy diagnose --format html`: one accuracy_diagnosis document as a self-contained page."""
    title, generated = diagnosis_pages.page_title(document)
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        "<meta http-equiv='Content-Security-Policy' content=\"default-src 'none'; style-src 'unsafe-inline'\">"
        f"<title>{html_text(title)}</title><style>{CSS}</style></head><body><h1>{html_text(title)}</h1>"
        f"<p class='scope'>{html_text(generated)}</p>{diagnosis_pages.diagnosis_html(document)}</body></html>\n"
    )
