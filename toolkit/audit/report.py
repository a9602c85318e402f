"""The audit report: one model audited on one or many chips, as a JSON-able dict.

The dict is the source of truth; the terminal table, Markdown and HTML are rendered from it
(edgedeploy.audit.render). `build_report` takes AuditResults (one per chip), the chips that
have no rules yet, and optional toolchain verdicts with their comparison, and adds the
cross-chip matrix (operator or node x chip) and the `--fail-on` outcome.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from edgedeploy.audit.engine import AuditResult
from edgedeploy.audit.rules import Placement
from edgedeploy.errors import EXIT_AUDIT_FALLBACK, EXIT_AUDIT_FLOAT, EXIT_AUDIT_UNSUPPORTED

REPORT_SCHEMA = "edgedeploy.audit-report/1"

# `--fail-on` levels: which placements fail the run. Each level includes the worse ones.
FAIL_ON = {
    "unsupported": (Placement.UNSUPPORTED,),
    "cpu-fallback": (Placement.FALLBACK, Placement.UNSUPPORTED),
    "any": (Placement.FLOAT, Placement.FALLBACK, Placement.UNSUPPORTED),
}
# Exit codes when --fail-on trips, by the worst placement found (edgedeploy.errors.EXIT_CODES is the table).
EXIT_CODES = {Placement.FLOAT: EXIT_AUDIT_FLOAT, Placement.FALLBACK: EXIT_AUDIT_FALLBACK, Placement.UNSUPPORTED: EXIT_AUDIT_UNSUPPORTED}


@dataclass
class ChipAudit:
    """One chip's audit, with what the CLI knows beside the rules' result."""

    result: AuditResult
    target_name: str
    chip_name: str
    notes: list[str] = field(default_factory=list)  # about this run (pinned shapes, precision)
    rules_notes: list[str] = field(default_factory=list)  # what the rule set says about placements on this chip
    confirm: dict | None = None  # {"verdict": ToolchainVerdict.to_dict(), "comparison": compare(...)} or {"skipped": reason}


def groups_by_reason(audit: dict) -> list[dict]:
    """Nodes grouped by (placement, rule, sentence), worst placement first, then by size."""
    groups: dict[tuple, dict] = {}
    accelerator = Placement.ACCELERATOR.value
    for node in audit["nodes"]:
        placement = node["placement"]
        if placement == accelerator and not node["violations"]:
            key = (placement, "", "")
            group = groups.get(key)
            if group is None:
                group = groups[key] = {"placement": placement, "rule": "", "reason": "", "nodes": [], "ops": Counter(), "values": []}
            group["nodes"].append(node["node"])
            group["ops"][node["op_type"]] += 1
            continue
        decisive = [v for v in node["violations"] if v["placement"] == placement]
        if placement == accelerator:
            key = (placement, "", "")
        else:
            v = decisive[0] if decisive else {"rule": "", "message": node["reason"]}
            key = (placement, v["rule"], v["message"])
        group = groups.setdefault(key, {"placement": key[0], "rule": key[1], "reason": key[2], "nodes": [], "ops": Counter(), "values": []})
        group["nodes"].append(node["node"])
        group["ops"][node["op_type"]] += 1
        for v in decisive[:1]:
            if v.get("value") not in (None, "") and len(group["values"]) < 5:
                shown = f"{node['node']}: {v['value']}" + (f" ({v['detail']})" if v.get("detail") else "")
                group["values"].append(shown)
    severity = {p.value: p.severity for p in Placement}
    ordered = sorted(groups.values(), key=lambda g: (-severity[g["placement"]], -len(g["nodes"]), g["rule"]))
    for g in ordered:
        g["ops"] = dict(g["ops"].most_common())
    return ordered


def build_matrix(audits: list[dict], by: str = "op") -> dict:
    """Rows of operators (or nodes) x columns of chips; each cell: placement counts and the worst."""
    chips = [a["chip"] for a in audits]
    rows: dict[str, dict] = {}
    order: list[str] = []
    for audit in audits:
        for node in audit["nodes"]:
            key = node["op_type"] if by == "op" else node["node"]
            if key not in rows:
                rows[key] = {"key": key, "op_type": node["op_type"], "count": 0, "cells": {}}
                order.append(key)
            cell = rows[key]["cells"].setdefault(audit["chip"], {"counts": Counter(), "reasons": []})
            cell["counts"][node["placement"]] += 1
            if node["reason"] and node["reason"] not in cell["reasons"]:
                cell["reasons"].append(node["reason"])
    # Nodes per row, counted once (every chip sees the same model).
    if audits:
        for node in audits[0]["nodes"]:
            key = node["op_type"] if by == "op" else node["node"]
            rows[key]["count"] += 1
    severity = {p.value: p.severity for p in Placement}
    for row in rows.values():
        for cell in row["cells"].values():
            cell["worst"] = max(cell["counts"], key=lambda p: severity[p])
            cell["counts"] = dict(cell["counts"])
    ranked = sorted(order, key=lambda k: -max((severity[c["worst"]] for c in rows[k]["cells"].values()), default=0)) if by == "op" else order
    return {"by": by, "chips": chips, "rows": [rows[k] for k in ranked]}


def fail_on_outcome(audits: list[dict], level: str | None) -> dict:
    """Whether `--fail-on level` trips, the exit code, and the chips and placements that trip it."""
    if not level:
        return {"level": None, "failed": False, "exit_code": 0, "found": {}}
    failing = {p.value for p in FAIL_ON[level]}
    found: dict[str, dict[str, int]] = {}
    worst = None
    for audit in audits:
        counts = Counter(n["placement"] for n in audit["nodes"] if n["placement"] in failing)
        if counts:
            found[audit["chip"]] = dict(counts)
            for p in counts:
                placement = Placement(p)
                if worst is None or placement.severity > worst.severity:
                    worst = placement
    return {"level": level, "failed": worst is not None, "exit_code": EXIT_CODES[worst] if worst else 0, "found": found}


def build_report(model, chip_audits: list[ChipAudit], no_rules: list[dict], by: str = "op", fail_on: str | None = None, assumed_shapes: dict | None = None) -> dict:
    from edgedeploy import __version__

    audits = []
    for ca in chip_audits:
        d = ca.result.to_dict()
        d["target_name"] = ca.target_name
        d["chip_name"] = ca.chip_name
        d["summary_line"] = ca.result.summary_line()
        d["notes"] = ca.notes
        d["rules_notes"] = ca.rules_notes
        d["groups"] = groups_by_reason(d)
        if ca.confirm is not None:
            d["confirm"] = ca.confirm
        audits.append(d)
    return {
        "schema": REPORT_SCHEMA,
        "edgedeploy_version": __version__,
        "model": {
            "path": str(model.path),
            "name": model.path.name,
            "sha256": model.sha256,
            "opset": model.opset,
            "nodes": len(model.graph.node),
            "input_shapes": assumed_shapes or {},
        },
        "audits": audits,
        "no_rules": no_rules,
        "matrix": build_matrix(audits, by) if len(audits) > 1 else None,
        "fail_on": fail_on_outcome(audits, fail_on),
    }
