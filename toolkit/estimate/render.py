"""The estimate report (edgedeploy.pipeline.estimate) as terminal text or Markdown."""

from __future__ import annotations

from edgedeploy.escape import markdown_cell
from edgedeploy.report.fmt import fit_lines, table

ESTIMATE_NOTE = (
    "Estimates, not measurements: a cost model on the audit's placements, fitted per chip to the vendors' "
    "published figures (inference only, batch 1, int8); the error is leave-one-model-out over those figures (docs/estimate.md)."
)


def fmt_ms(value) -> str:
    from edgedeploy.estimate import fmt_ms as fmt

    return fmt(value)


def _row(e: dict, with_budget: bool) -> list:
    if e["latency_ms"] is None:
        cells = [e["chip"], "-", "-", "-", e["figures"], e["fallback_nodes"]]
        return cells + (["-"] if with_budget else []) + [e["reason"]]
    low, high = e["range_ms"]
    shared = f" ({e['fitted_on']}'s)" if e.get("fitted_on") and e["fitted_on"] != e["chip"] else ""
    cells = [
        e["chip"],
        fmt_ms(e["latency_ms"]),
        f"{fmt_ms(low)[:-3]}-{fmt_ms(high)}",
        f"{100 * e['loo_mdape']:.0f}% ({100 * e['loo_within_25']:.0f}% within 25%)",
        f"{e['figures']}{shared}",
        e["fallback_nodes"],
    ]
    if with_budget:
        cells.append("yes" if e["meets_budget"] else "no")
    tool = e.get("toolchain_estimate")
    extra = f"{tool['name']}: {fmt_ms(tool['latency_ms'])}" if tool and tool.get("latency_ms") is not None else f"{tool['name']}: not run" if tool else ""
    return cells + [extra]


def estimate_rows(report: dict) -> tuple[list[str], list[list]]:
    with_budget = report.get("budget_ms") is not None
    headers = ["CHIP", "ESTIMATE", "RANGE", "TYPICAL ERROR (LOO)", "FIGURES", "FALLBACK"]
    if with_budget:
        headers.append(f"<= {report['budget_ms']:g} MS")
    headers.append("NOTE")
    return headers, [_row(e, with_budget) for e in report["estimates"]]


def render_text(report: dict, width: int | None = None) -> str:
    m = report["model"]
    out = [f"model {m['name']} (sha256 {m['sha256'][:16]}...): estimated latency per inference", ""]
    estimates = report["estimates"]
    if len(estimates) == 1:
        e = estimates[0]
        out.append(f"{e['chip']}: {e['sentence']}")
        if e["latency_ms"] is not None:
            out.append("  where the time goes: " + ", ".join(f"{k} {fmt_ms(v)}" for k, v in e["breakdown_ms"].items() if v >= 0.005))
            if report.get("budget_ms") is not None:
                out.append(f"  budget {report['budget_ms']:g} ms: " + ("met" if e["meets_budget"] else "not met") + " by the estimate")
    else:
        headers, rows = estimate_rows(report)
        out.append(table(headers, rows, right_align=[1, 5], width=width))
        if report.get("budget_ms") is not None:
            meets = [e["chip"] for e in estimates if e["meets_budget"]]
            out.append(f"meet {report['budget_ms']:g} ms by the estimate: " + (", ".join(meets) if meets else "none"))
    for e in estimates:
        tool = e.get("toolchain_estimate")
        if tool:
            out.append(f"{e['chip']}: {tool['name']}'s own estimate: " + (f"{fmt_ms(tool['latency_ms'])} ({tool['note']})" if tool.get("latency_ms") is not None else f"not run ({tool['not_run']})"))
        for note in e["notes"]:
            out.append(f"{e['chip']}: note: {note}")
    for missing in report.get("no_rules", []):
        out.append(f"{missing['target_name']} ({', '.join(missing['chips'])}): no estimate: {missing['reason']}")
    out.append("")
    out.append(ESTIMATE_NOTE)
    return fit_lines("\n".join(out).rstrip(), width) + "\n"


def render_markdown(report: dict) -> str:
    m = report["model"]
    headers, rows = estimate_rows(report)
    lines = [f"# Estimated latency: {markdown_cell(m['name'])}", "", ESTIMATE_NOTE, ""]
    lines.append("| " + " | ".join(headers) + " |")
    lines.append("|" + "---|" * len(headers))
    for r in rows:
        lines.append("| " + " | ".join(markdown_cell(str(c)) for c in r) + " |")
    return "\n".join(lines) + "\n"
