"""The terminal view of a measurement and of a comparison (plain aligned text, scope on every block)."""

from __future__ import annotations

from edgedeploy.report import fmt, sections
from edgedeploy.report.fmt import table


def _latency_block(label: str, rec: dict) -> list[str]:
    summary = rec["summary"]
    lines = [
        f"{label}: {rec['backend']['label']}" + ("  [PARTIAL]" if rec.get("partial") else ""),
        f"  scope: {fmt.latency_scope(rec.get('scope'))}",
    ]
    # One unit per column, named in its header: a MAX of 35 ms must not turn a 75 us median into 0.07.
    columns = (("MEAN", "mean"), ("MEDIAN", "p50"), ("P90", "p90"), ("P99", "p99"), ("MIN", "min"), ("MAX", "max"))
    units = [fmt.unit_for([s["latency_us"][key] for s in rec["sessions"]]) for _, key in columns]
    first_unit = fmt.unit_for([s.get("first_inference_us") for s in rec["sessions"]])
    rows = []
    for s in rec["sessions"]:
        lat = s["latency_us"]
        cells = [fmt.in_unit(lat[key], unit) for (_, key), unit in zip(columns, units)]
        rows.append([s.get("session"), s["iterations"], *cells, fmt.in_unit(s.get("first_inference_us"), first_unit)])
    headers = ["SESSION", "ITERATIONS", *(f"{name} ({unit[0]})" for (name, _), unit in zip(columns, units)), f"FIRST ({first_unit[0]})"]
    body = table(headers, rows, right_align=range(9))
    lines += ["  " + line for line in body.splitlines()]
    lines.append(
        f"  median of session medians {fmt.us(summary['median_us'])} (sessions {fmt.us_range(summary['session_median_range_us'])}, "
        f"spread {fmt.num(summary.get('spread_percent'), 3)}%); p99 {fmt.us_range(summary.get('session_p99_range_us'))}; "
        f"first inference {fmt.us_range(summary.get('first_inference_range_us'))}"
    )
    if summary.get("throughput_items_per_s") and summary.get("batch", 1) > 1:
        lines.append(f"  throughput {summary['throughput_items_per_s']:.1f} items/s (batch {summary['batch']})")
    return lines


def comparison_lines(comparison: dict) -> list[str]:
    if not comparison:
        return []
    dep = comparison.get("deployment") or {}
    if comparison.get("speedup") is None:
        lines = [f"before/after: no ratio: {comparison.get('refused') or 'not computed'}."]
        if comparison.get("before_median_us") is not None and comparison.get("after_median_us") is not None:
            # Both figures still stand, each with its own deployment (their full scopes are above).
            lines.append(
                f"  side by side: before {fmt.us(comparison['before_median_us'])} ({fmt.deployment_text(dep.get('before'))}); "
                f"after {fmt.us(comparison['after_median_us'])} ({fmt.deployment_text(dep.get('after'))}), {comparison.get('basis')}"
            )
        return lines
    speedup = comparison["speedup"]
    figures = f"{fmt.us(comparison['before_median_us'])} -> {fmt.us(comparison['after_median_us'])}, {comparison['basis']}"
    if comparison.get("session_ranges_overlap"):
        # The sessions disagree more than before and after do: the ratio is no finding.
        headline = f"before/after: within session noise (the session ranges overlap), no speed-up either way: {figures}"
    else:
        verdict = f"after is {speedup:.2f}x as fast as before" if speedup >= 1 else f"after is {1 / speedup:.2f}x slower than before"
        headline = f"before/after: {verdict}: {figures}"
    return [
        headline,
        f"  same {fmt.shared_scope(comparison.get('scope'))}",
        f"  differs only in the deployment{_differs_text(comparison)}: before = {fmt.deployment_text(dep.get('before'))}; after = {fmt.deployment_text(dep.get('after'))}",
    ]


def output_check_lines(check: dict | None) -> list[str]:
    """A board's own check of its outputs (serial runs), when there is one."""
    if not check:
        return []
    per_session = check.get("per_session") or []
    matched = sum(1 for v in per_session if v)
    verdict = "match" if check.get("outputs_match") else "DO NOT match"
    return [f"on-device output check: outputs {verdict} in {matched} of {len(per_session)} session(s) ({check.get('scope')})"]


def _differs_text(comparison: dict) -> str:
    fields = comparison.get("deployment_differs_in")
    return f" ({', '.join(fields)})" if fields else ""


def accuracy_lines(section: dict | None, error: str | None = None) -> list[str]:
    if error:
        return [f"accuracy: {error}"]
    if not section:
        return []
    lines = []
    metric = section.get("metric")
    scope = fmt.accuracy_scope(section, "")
    if metric and metric != "fidelity" and section.get("before") is not None:
        b = fmt.metric_value(metric, section.get("before"))
        a = fmt.metric_value(metric, section.get("after"))
        delta = section.get("delta_percentage_points")
        delta_text = f" ({delta:+.2f} points)" if delta is not None else ""
        lines.append(f"accuracy ({fmt.METRIC_NAMES.get(metric, metric)}, {section.get('samples')} samples): before {fmt.metric_text(metric, b)}, after {fmt.metric_text(metric, a)}{delta_text}")
    else:
        lines.append(f"accuracy: output fidelity only ({section.get('samples')} samples, {fmt.why_fidelity_only(section)})")
    for name, fid in (section.get("fidelity") or {}).items():
        lines.append(f"  output {name!r} after vs before: cosine {fmt.num(fid['cosine'], 6)}, SNR {fmt.num(fid['snr_db'], 4)} dB, max abs error {fmt.num(fid['max_abs_error'], 4)}")
    for name, fid in (section.get("before_vs_host_reference") or {}).items():
        lines.append(f"  output {name!r} before on the device vs this host's reference: cosine {fmt.num(fid['cosine'], 6)}, max abs error {fmt.num(fid['max_abs_error'], 4)}")
    if scope:
        lines.append(f"  scope: {scope}")
    return lines


def render_measurement(record: dict) -> str:
    device = record.get("device") or {}
    lines = [f"measurement of {record['artifact']['path']} on device {device.get('name')} ({device.get('transport')}{', ' + device['address'] if device.get('address') else ''})"]
    host = record.get("host_run")
    if host:
        lines.append(f"HOST FIGURES: this {host['chip']} artifact run on this machine ({', '.join(f'{k}: {v}' for k, v in host['backends'].items())}); not the {host['chip']}'s latency")
    if record.get("partial"):
        lines.append(f"PARTIAL: {record.get('error')}")
    inputs = record.get("inputs") or {}
    lines.append(f"inputs: {inputs.get('source')}" + (f" ({inputs.get('count')} samples)" if inputs.get("count") else ""))
    for label in ("before", "after"):
        rec = (record.get("latency") or {}).get(label)
        if rec:
            lines.append("")
            lines += _latency_block(label, rec)
        elif label in (record.get("runner_errors") or {}):
            lines += ["", f"{label}: not measured: {record['runner_errors'][label]}"]
    lines.append("")
    comparison = comparison_lines(record.get("comparison") or {})
    if host and comparison:
        comparison[0] = comparison[0].replace("before/after:", f"before/after on this host (not the {host['chip']}):", 1)
    lines += comparison
    lines += output_check_lines(record.get("output_check"))
    acc = accuracy_lines(record.get("accuracy"), record.get("accuracy_error"))
    if acc:
        lines.append("")
        lines += acc
    return "\n".join(lines)


def render_comparison(comp: dict, width: int | None = None) -> str:
    """The terminal view of a comparison; `width` (the terminal's columns) wraps wide tables into blocks."""
    lines = ["edgedeploy report: " + ", ".join(f"{a['id']} = {a['path']}" for a in comp["artifacts"])]
    # An unchecked artifact is said at the top too, not only among the closing notes.
    lines += [n for n in comp["notes"] if n.startswith("NOT VERIFIED")] + [""]
    rows = []
    for a in comp["artifacts"]:
        s = a.get("audit_summary") or {}
        audit = f"{s.get('on_accelerator')}/{s.get('nodes')} on accel, {s.get('fallback', 0)} fallback, {s.get('transitions_per_inference')} transitions" if s else (a.get("audit_status") or "-")
        rows.append([a["id"], a["model"]["name"], fmt.short_hash(a["model"]["sha256"]), fmt.shapes(a["model"].get("input_shapes")), a["chip"] or a["target"], a.get("precision") or "-", audit])
    lines += ["Artifacts", table(["ID", "MODEL", "SHA256", "INPUTS", "CHIP", "PRECISION", "AUDIT (rules' prediction)"], rows, width=width)]
    lines += [f"  {a['id']} {a['chip'] or a['target']}: {a['estimate']}" for a in comp["artifacts"] if a.get("estimate")]
    for matrix in comp["audit"]:
        lines += ["", f"Audit matrix: operator types x chips ({matrix['scope']})"]
        headers = ["OP TYPE", "NODES"] + [c["label"] for c in matrix["columns"]]
        mrows = []
        for row in matrix["op_types"]:
            cells = []
            for c in matrix["columns"]:
                cell = row["cells"].get(c["id"], {})
                cells.append(", ".join(f"{n} {p}" for p, n in cell.items()) or "-")
            mrows.append([row["op_type"], row["count"], *cells])
        lines.append(table(headers, mrows, right_align=(1,), width=width, keep=2, what="artifacts"))
    if comp["accuracy"]:
        lines += ["", "Accuracy before/after (each on its own inputs and backends; see scope)"]
        for e in comp["accuracy"]:
            if e.get("status") and not e.get("metric"):
                lines.append(f"  {e['label']} ({e['kind']}): {e['status']}" + (f": {e['reason']}" if e.get("reason") else ""))
                continue
            metric = e.get("metric") or "fidelity"
            b, a = fmt.metric_value(metric, e.get("before")), fmt.metric_value(metric, e.get("after"))
            fid = e.get("fidelity") or {}
            task = f"before {fmt.metric_text(metric, b)}, after {fmt.metric_text(metric, a)}" if metric != "fidelity" else f"({fmt.why_fidelity_only(e)})"
            delta = e.get("delta_percentage_points")
            if delta is not None:
                task += f" ({delta:+.2f} pp)"
            lines.append(
                f"  {e['label']} ({e['kind']}): {fmt.METRIC_NAMES.get(metric, metric)} {task}"
                + (f"; output {e['output']!r} cosine {fmt.num(fid.get('cosine'), 6)}, SNR {fmt.num(fid.get('snr_db'), 4)} dB" if fid else "")
                + f" [{e['samples']} samples]"
            )
            lines += [f"    {line}" for line in output_metric_lines(e)]
            lines.append(f"    scope: {e['scope']}")
    lines += diagnosis_lines(comp)
    lines += memory_lines(comp, width)
    lines += section_lines(comp, width)
    for group in comp["latency"]:
        lines += ["", f"Latency on {fmt.device_text(group.get('identity') or {'name': group['device']})}"]
        lines += [f"  {note.replace('host figures', 'HOST FIGURES', 1)}" for note in group.get("host_notes") or []]
        units = fmt.latency_column_units(group["entries"])
        lrows = []
        for e in group["entries"]:
            lrows.append([e["label"], e["run"], fmt.in_unit(e["median_us"], units["median"]), fmt.range_in(e["session_median_range_us"], units["session_medians"]), fmt.range_in(e["session_p99_range_us"], units["p99"]), e["sessions"], "yes" if e["partial"] else ""])
        headers = ["ARTIFACT", "RUN", f"MEDIAN ({units['median'][0]})", f"SESSION MEDIANS ({units['session_medians'][0]})", f"P99 RANGE ({units['p99'][0]})", "SESSIONS", "PARTIAL"]
        lines.append(table(headers, lrows, right_align=(2, 3, 4, 5), width=width, keep=2))
        for e in group["entries"]:
            lines.append(f"  {e['label']} {e['run']}: {fmt.latency_scope(e['scope'])}")
        for c in group["comparisons"]:
            first = comparison_lines(c)[:1]
            if c.get("host_run_of") and first:
                first[0] = first[0].replace("before/after:", f"before/after on this host (not the {c['host_run_of']}):", 1)
            lines += ["  " + c["label"] + ": " + line for line in first]
    lines += [""] + [f"note: {n}" for n in comp["notes"]]
    return fmt.fit_lines("\n".join(lines), width)


def diagnosis_lines(comp: dict) -> list[str]:
    """The accuracy diagnosis a build wrote when an accuracy gate failed (edgedeploy.accuracy), per artifact."""
    from edgedeploy.escape import terminal_safe
    from edgedeploy.report.diagnosis import attempts_table, diagnosis_scope, render_path

    lines = []
    for artifact in comp["artifacts"]:
        document = (comp.get("reports", {}).get(artifact["id"]) or {}).get("accuracy_diagnosis")
        if not document:
            continue
        lines += ["", f"Accuracy diagnosis of {artifact['id']}: {terminal_safe(diagnosis_scope(document))}"]
        if document.get("error"):
            lines.append(f"  could not run: {document['error']}")
        for path in document.get("paths") or []:
            lines += [f"  {line}" for line in render_path(path, nodes=False).splitlines()]
    for artifact in comp["artifacts"]:
        recovery = (comp.get("reports", {}).get(artifact["id"]) or {}).get("recovery")
        if recovery:
            lines += ["", f"build --recover of {artifact['id']}: {recovery.get('sentence', '')}"]
            lines += [f"  {line}" for line in attempts_table(recovery).splitlines()[1:]]
    return lines


def output_metric_lines(entry: dict) -> list[str]:
    """Per output: fidelity and, where the labels fit, the task metric; which output the headline uses and why."""
    lines = []
    if entry.get("metric_output"):
        lines.append(f"task metric on output {entry['metric_output']!r}: {entry.get('metric_output_reason') or 'chosen by --metric-output'}")
    outputs = entry.get("outputs") or []
    if len(outputs) > 1 or (outputs and not entry.get("metric_output")):
        for out in outputs:
            fid = out.get("fidelity") or {}
            task = ""
            if out.get("before") and out.get("after"):
                task = "; " + ", ".join(f"{k} {fmt.num(out['before'][k], 4)} -> {fmt.num(out['after'].get(k), 4)}" for k in out["before"] if k in out["after"])
            mark = " (task metric)" if out.get("is_metric_output") else ""
            lines.append(f"output {out['output']!r}{mark}: cosine {fmt.num(fid.get('cosine'), 6)}, SNR {fmt.num(fid.get('snr_db'), 4)} dB, max abs error {fmt.num(fid.get('max_abs_error'), 4)}{task}")
            if out.get("holds"):
                lines.append(f"  holds {out['holds']}")
            if out.get("metric_not_reported"):
                lines.append(f"  no task metric: {out['metric_not_reported']}")
    return lines


def memory_lines(comp: dict, width: int | None = None) -> list[str]:
    """The memory and size section: the files, the flash layout of a generated firmware."""
    memory = comp.get("memory") or []
    layouts = comp.get("flash_layout") or []
    if not (memory or layouts):
        return []
    lines = ["", "Memory and size"]
    if memory:
        rows = [[m["label"], m["what"], fmt.bytes_text(m["bytes"]), m["source"]] for m in memory]
        lines.append(table(["ARTIFACT", "WHAT", "SIZE", "SOURCE"], rows, right_align=(2,), width=width, keep=2))
    for layout in layouts:
        lines.append(f"  {layout['label']}: flash layout (model in {layout.get('model_location') or '?'}; flash {fmt.bytes_text(layout.get('flash_bytes'))})")
        prows = [[p.get("name"), p.get("type"), p.get("subtype"), _hex(p.get("offset")), fmt.bytes_text(p.get("size"))] for p in layout["partitions"]]
        lines += ["    " + line for line in table(["PARTITION", "TYPE", "SUBTYPE", "OFFSET", "SIZE"], prows, right_align=(3, 4)).splitlines()]
    return lines


def section_lines(comp: dict, width: int | None = None) -> list[str]:
    """What the artifacts' targets add (edgedeploy.report.sections): per section its facts, tables
    and notes; every line terminal-safe (a value may hold a model's names)."""
    from edgedeploy.escape import terminal_safe

    lines = []
    for entry in comp.get("sections") or []:
        lines += ["", f"{entry['label']}: {entry['title']}"] + ([f"  source: {entry['source']}"] if entry.get("source") else [])
        for fact in entry["facts"]:
            lines.append(f"  {fact['label']}: {sections.fact_text(fact)}" + (f" ({fact['note']})" if fact.get("note") else ""))
        for tab in entry["tables"]:
            columns = tab["columns"]
            numeric = tuple(i for i, c in enumerate(columns) if sections.is_numeric(c))
            rows = [[sections.value_text(v, c.get("unit")) for v, c in zip(row, columns)] for row in tab["rows"]]
            lines.append(f"  {tab['title']}")
            lines += ["    " + line for line in table([sections.column_header(c, upper=True) for c in columns], rows, right_align=numeric, width=width).splitlines()]
            lines += [f"    {note}" for note in tab["notes"]]
        lines += [f"  {note}" for note in entry["notes"]]
    return [terminal_safe(line) for line in lines]


def _hex(value) -> str:
    return f"0x{value:x}" if isinstance(value, int) else "-"


