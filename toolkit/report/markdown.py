"""The Markdown rendering of a comparison: the same tables as the HTML page, scope on every row.

Plots are in the HTML page only (Markdown viewers differ in what they draw).
"""

from __future__ import annotations

from edgedeploy.escape import markdown_cell
from edgedeploy.report import fmt
from edgedeploy.report.text import comparison_lines


def _cell(value) -> str:
    return "-" if value is None else markdown_cell(value)


def _table(headers: list[str], rows: list[list]) -> list[str]:
    out = ["| " + " | ".join(_cell(h) for h in headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    out += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return out


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
                    fmt.metric_text(metric, fmt.metric_value(metric, e.get("after"))),
                    f"cosine {fmt.num(fid.get('cosine'), 6)}, SNR {fmt.num(fid.get('snr_db'), 4)} dB" if fid else "-",
                    e.get("samples"),
                    e["scope"],
                ]
            )
        lines += _table(["Artifact", "Where", "Metric", "Before", "After", "Fidelity (after vs before)", "Samples", "Scope"], arows) + [""]
    for group in comp["latency"]:
        lines += [f"## Latency on {fmt.device_text(group.get('identity') or {'name': group['device']})}", ""]
        lrows = [
            [e["label"], e["run"], fmt.us(e["median_us"]), fmt.us_range(e["session_median_range_us"]), fmt.us_range(e["session_p99_range_us"]), str(e["sessions"]) + (" (partial)" if e["partial"] else ""), fmt.latency_scope(e["scope"])]
            for e in group["entries"]
        ]
        lines += _table(["Artifact", "Run", "Median of session medians", "Session medians", "Session p99", "Sessions", "Scope"], lrows) + [""]
        for c in group["comparisons"]:
            lines += [f"- {c['label']}: " + " ".join(comparison_lines(c)).replace("  ", " ")]
        lines.append("")
    return "\n".join(lines)
