"""The terminal view of a measurement and of a comparison (plain aligned text, scope on every block)."""

from __future__ import annotations

from edgedeploy.report import fmt
from edgedeploy.report.fmt import table


def _latency_block(label: str, rec: dict) -> list[str]:
    summary = rec["summary"]
    lines = [
        f"{label}: {rec['backend']['label']}" + ("  [PARTIAL]" if rec.get("partial") else ""),
        f"  scope: {fmt.latency_scope(rec.get('scope'))}",
    ]
    rows = []
    for s in rec["sessions"]:
        lat = s["latency_us"]
        rows.append([s.get("session"), s["iterations"], fmt.us(lat["mean"]), fmt.us(lat["p50"]), fmt.us(lat["p90"]), fmt.us(lat["p99"]), fmt.us(lat["min"]), fmt.us(lat["max"]), fmt.us(s.get("first_inference_us"))])
    body = table(["SESSION", "ITERATIONS", "MEAN", "MEDIAN", "P90", "P99", "MIN", "MAX", "FIRST"], rows, right_align=range(9))
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
    verdict = f"after is {speedup:.2f}x as fast as before" if speedup >= 1 else f"after is {1 / speedup:.2f}x slower than before"
    noise = " (the session ranges overlap: within noise)" if comparison.get("session_ranges_overlap") else ""
    return [
        f"before/after: {verdict}{noise}: {fmt.us(comparison['before_median_us'])} -> {fmt.us(comparison['after_median_us'])}, {comparison['basis']}",
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
        lines.append(f"accuracy: output fidelity only ({section.get('samples')} samples, no labels)")
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
    lines += comparison_lines(record.get("comparison") or {})
    lines += output_check_lines(record.get("output_check"))
    acc = accuracy_lines(record.get("accuracy"), record.get("accuracy_error"))
    if acc:
        lines.append("")
        lines += acc
    return "\n".join(lines)


def render_comparison(comp: dict) -> str:
    lines = ["edgedeploy report: " + ", ".join(f"{a['id']} = {a['path']}" for a in comp["artifacts"]), ""]
    rows = []
    for a in comp["artifacts"]:
        s = a.get("audit_summary") or {}
        audit = f"{s.get('on_accelerator')}/{s.get('nodes')} on accel, {s.get('fallback', 0)} fallback, {s.get('transitions_per_inference')} transitions" if s else (a.get("audit_status") or "-")
        rows.append([a["id"], a["model"]["name"], fmt.short_hash(a["model"]["sha256"]), fmt.shapes(a["model"].get("input_shapes")), a["chip"] or a["target"], a.get("precision") or "-", audit])
    lines += ["Artifacts", table(["ID", "MODEL", "SHA256", "INPUTS", "CHIP", "PRECISION", "AUDIT (rules' prediction)"], rows)]
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
        lines.append(table(headers, mrows))
    if comp["accuracy"]:
        lines += ["", "Accuracy before/after (each on its own inputs and backends; see scope)"]
        for e in comp["accuracy"]:
            if e.get("status") and not e.get("metric"):
                lines.append(f"  {e['label']} ({e['kind']}): {e['status']}" + (f": {e['reason']}" if e.get("reason") else ""))
                continue
            metric = e.get("metric") or "fidelity"
            b, a = fmt.metric_value(metric, e.get("before")), fmt.metric_value(metric, e.get("after"))
            fid = e.get("fidelity") or {}
            task = f"before {fmt.metric_text(metric, b)}, after {fmt.metric_text(metric, a)}" if metric != "fidelity" else "no labels"
            lines.append(
                f"  {e['label']} ({e['kind']}): {fmt.METRIC_NAMES.get(metric, metric)} {task}"
                + (f"; output {e['output']!r} cosine {fmt.num(fid.get('cosine'), 6)}, SNR {fmt.num(fid.get('snr_db'), 4)} dB" if fid else "")
                + f" [{e['samples']} samples]"
            )
            lines.append(f"    scope: {e['scope']}")
    for group in comp["latency"]:
        lines += ["", f"Latency on {fmt.device_text(group.get('identity') or {'name': group['device']})}"]
        lrows = []
        for e in group["entries"]:
            lrows.append([e["label"], e["run"], fmt.us(e["median_us"]), fmt.us_range(e["session_median_range_us"]), fmt.us_range(e["session_p99_range_us"]), e["sessions"], "yes" if e["partial"] else "", fmt.latency_scope(e["scope"])])
        lines.append(table(["ARTIFACT", "RUN", "MEDIAN", "SESSION MEDIANS", "P99 RANGE", "SESSIONS", "PARTIAL", "SCOPE"], lrows))
        for c in group["comparisons"]:
            lines += ["  " + c["label"] + ": " + line for line in comparison_lines(c)[:1]]
    lines += [""] + [f"note: {n}" for n in comp["notes"]]
    return "\n".join(lines)
