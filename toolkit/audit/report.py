"""The audit report: one model audited on one or many chips, as a JSON-able dict.

The dict is the source of truth; the terminal table, Markdown and HTML are rendered from it
(edgedeploy.audit.render). `build_report` takes each chip's audit (a ChipAudit: its AuditResult,
optionally with the toolchain's verdict and the comparison) or the parts of its entry already
made where it was audited (ChipReportParts), and the chips that have no rules yet, and adds the
cross-chip matrix (operator or node x chip) and the `--fail-on` outcome.

Schema `edgedeploy.audit-report/2` (docs/report-schema.md): each chip's `nodes` lists the nodes
that have something to say (a placement off the accelerator, uncertain, a violation beyond
folding and lowering) unless the report was made with `detail`, which lists every node; the
nodes on the accelerator with nothing to say are named by the `partitions` they belong to, those
folded at compile time by `folded`, what the toolchain's graph passes did by `lowered` (fused
groups with every node they absorbed, nodes folded or eliminated), the units by `units`. A
`--target all` audit of a 900-node model is then about a fifth of the size, and as quick to write.
"""

from __future__ import annotations

import functools
import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from edgedeploy.audit.engine import AuditResult, _jsonable
from edgedeploy.audit.rules import Placement
from edgedeploy.errors import EXIT_AUDIT_FALLBACK, EXIT_AUDIT_FLOAT, EXIT_AUDIT_UNSUPPORTED

REPORT_SCHEMA = "edgedeploy.audit-report/2"
# One chip's entry in the report: AuditResult.to_dict() (edgedeploy.audit/1, what audit.json
# holds) with `nodes` abridged unless `nodes_listed` is "all", `folded` and reason groups added.
CHIP_AUDIT_SCHEMA = "edgedeploy.audit/2"
# Per chip, how often the audit was right on architectures nobody here had seen: every blind
# set's first score, pooled (written by scripts/pool/score.py --blind-summary; docs/audit-agreement.md).
UNSEEN_AGREEMENT = Path(__file__).with_name("unseen_agreement.json")
# Placement -> its JSON name (an enum's .value is a slow descriptor in the per-node loops).
PLACEMENT_NAMES = {p: p.value for p in Placement}
# A placement's JSON name -> its severity (worse is higher).
SEVERITY = {p.value: p.severity for p in Placement}
# How many node names a reason group shows as examples.
GROUP_EXAMPLES = 3

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
    estimate: dict | None = None  # edgedeploy.estimate.ChipEstimate.to_dict(): the latency estimate of this chip


def groups_by_reason(result: AuditResult, detail: bool = True) -> list[dict]:
    """Nodes grouped by (placement, rule, sentence), worst placement first, then by size.

    Each group: placement, rule, reason, `count`, the operators it holds, up to five measured
    values and GROUP_EXAMPLES node names (`examples`); with `detail`, every member (`nodes`).
    """
    groups: dict[tuple, dict] = {}
    members: dict[tuple, list[str]] = {}
    accelerator = Placement.ACCELERATOR.value
    plain_key = (accelerator, "", "")
    for node in result.nodes:
        violations = node.violations
        if not violations and node.placement is Placement.ACCELERATOR:
            # Most nodes: on the accelerator with nothing to say.
            group = groups.get(plain_key)
            if group is not None:
                group["count"] += 1
                members[plain_key].append(node.node)
                group["ops"][node.op_type] += 1
                continue
        placement = PLACEMENT_NAMES[node.placement]
        # The violation that decided the placement (on the accelerator: folding, if any).
        decisive = next((v for v in violations if v.placement is node.placement), None) if violations else None
        if placement == accelerator:
            key = plain_key
        else:
            key = (placement, decisive.rule, decisive.message) if decisive else (placement, "", node.reason)
        group = groups.get(key)
        if group is None:
            group = groups[key] = {"placement": key[0], "rule": key[1], "reason": key[2], "count": 0, "ops": Counter(), "values": []}
            members[key] = []
        group["count"] += 1
        members[key].append(node.node)
        group["ops"][node.op_type] += 1
        if decisive is not None and len(group["values"]) < 5:
            value = _jsonable(decisive.value)
            if value not in (None, ""):
                group["values"].append(f"{node.node}: {value}" + (f" ({decisive.detail})" if decisive.detail else ""))
    ordered = sorted(groups, key=lambda k: (-SEVERITY[groups[k]["placement"]], -groups[k]["count"], groups[k]["rule"]))
    out = []
    for key in ordered:
        g = groups[key]
        g["ops"] = dict(g["ops"].most_common())
        g["examples"] = members[key][:GROUP_EXAMPLES]
        if detail:
            g["nodes"] = members[key]
        out.append(g)
    return out


@dataclass
class ChipReportParts:
    """What the report needs of one chip: its entry (chip_entry) and its cells of the cross-chip
    matrix (matrix_cells, None when there is no matrix). Made where the chip was audited, which
    may be another process (edgedeploy.pipeline.audit): plain data, so it pickles."""

    chip: str
    entry: dict
    cells: dict[str, tuple[str, dict]] | None


def report_parts(chip_audits: list[ChipAudit], detail: bool = False, by: str = "op", matrix: bool = True) -> list[ChipReportParts]:
    """Every chip's entry and matrix cells, in order. Chips whose audits share their placements
    (the same list objects: edgedeploy.audit.engine shares them between such chips) share what is
    derived from them; the report is only ever read and serialised, so the shared parts are safe."""
    parts_of: dict[tuple[int, int, int], dict] = {}
    cells_of: dict[int, dict[str, tuple[str, dict]]] = {}
    built = []
    for ca in chip_audits:
        r = ca.result
        key = (id(r.nodes), id(r.partitions), id(r.crossings))
        parts = parts_of.get(key)
        if parts is None:
            parts = parts_of[key] = placement_parts(r, detail)
        cells = None
        if matrix:
            cells = cells_of.get(id(r.nodes))
            if cells is None:
                cells = cells_of[id(r.nodes)] = matrix_cells(r.nodes, by)
        built.append(ChipReportParts(r.chip, chip_entry(ca, detail, parts), cells))
    return built


def build_matrix(chips: list[ChipReportParts], by: str = "op") -> dict:
    """Rows of operators (or nodes) x columns of chips; each cell: placement counts and the worst."""
    rows: dict[str, dict] = {}
    order: list[str] = []
    for chip in chips:
        for key, (op_type, cell) in chip.cells.items():
            row = rows.get(key)
            if row is None:
                row = rows[key] = {"key": key, "op_type": op_type, "count": 0, "cells": {}}
                order.append(key)
            row["cells"][chip.chip] = {"counts": dict(cell["counts"]), "reasons": list(cell["reasons"]), "worst": cell["worst"]}
    # Nodes per row, counted once (every chip sees the same model, and each of its nodes is in one cell).
    if chips:
        for key, (_, cell) in chips[0].cells.items():
            rows[key]["count"] = sum(cell["counts"].values())
    ranked = sorted(order, key=lambda k: -max((SEVERITY[c["worst"]] for c in rows[k]["cells"].values()), default=0)) if by == "op" else order
    return {"by": by, "chips": [chip.chip for chip in chips], "rows": [rows[k] for k in ranked]}


def matrix_cells(nodes: list, by: str = "op") -> dict[str, tuple[str, dict]]:
    """One chip's cells of the matrix, by row key in node order: (op type, {counts, reasons, worst})."""
    cells: dict[str, tuple[str, dict]] = {}
    for node in nodes:
        key = node.op_type if by == "op" else node.node
        found = cells.get(key)
        if found is None:
            found = cells[key] = (node.op_type, {"counts": Counter(), "reasons": []})
        cell = found[1]
        cell["counts"][PLACEMENT_NAMES[node.placement]] += 1
        if node.violations:
            reason = node.reason
            if reason and reason not in cell["reasons"]:
                cell["reasons"].append(reason)
    for _, cell in cells.values():
        cell["worst"] = max(cell["counts"], key=SEVERITY.__getitem__)
        cell["counts"] = dict(cell["counts"])
    return cells


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


def has_something_to_say(node) -> bool:
    """Listed without --detail: off the accelerator, uncertain, or with a violation beyond folding
    at compile time and what the graph passes did (those two are named by `folded` and `lowered`)."""
    if not node.violations:
        return False
    if node.placement is not Placement.ACCELERATOR:
        return True
    if node.lowered:
        return any(v.rule != node.lowered_by for v in node.violations)
    return not node.folded


def lowering_of(result: AuditResult) -> list[dict]:
    """What the toolchain's graph passes did, by pass and kind, in node order: each fused group
    (the node it became, its operator and every original node it absorbed), and the nodes folded
    or eliminated. Small (a name per touched node), so the default report keeps it whole."""
    entries: dict[tuple[str, str], dict] = {}
    for n in result.nodes:
        if not n.lowered:
            continue
        entry = entries.get((n.lowered, n.lowered_by))
        if entry is None:
            note = next((v for v in reversed(n.violations) if v.rule == n.lowered_by), None)
            entry = entries[(n.lowered, n.lowered_by)] = {"how": n.lowered, "by": n.lowered_by, "reason": note.message if note else ""}
        if n.lowered == "fused":
            groups = entry.setdefault("groups", {})
            group = groups.get(n.fused_into)
            if group is None:
                note = next((v for v in reversed(n.violations) if v.rule == n.lowered_by), None)
                group = groups[n.fused_into] = {"into": n.fused_into, "op_type": str(note.value) if note else "", "placement": PLACEMENT_NAMES[n.placement], "nodes": []}
            group["nodes"].append(n.node)
        else:
            entry.setdefault("nodes", []).append(n.node)
    out = list(entries.values())
    for entry in out:
        if "groups" in entry:
            entry["groups"] = list(entry["groups"].values())
    return out


def placement_parts(result: AuditResult, detail: bool) -> dict:
    """What a chip's entry says of its placements: the summary, the nodes listed, folded, lowered,
    crossings and groups (a function of the placements, partitions and crossings alone)."""
    listed = result.nodes if detail else [n for n in result.nodes if has_something_to_say(n)]
    return {
        "summary": result.summary(),
        "nodes": [n.to_dict() for n in listed],
        "folded": [n.node for n in result.nodes if n.folded and not n.lowered],
        "lowered": lowering_of(result),
        "crossings": [c.__dict__ for c in result.crossings],
        "groups": groups_by_reason(result, detail),
    }


def chip_entry(ca: ChipAudit, detail: bool = False, parts: dict | None = None) -> dict:
    """One chip's entry of the report (CHIP_AUDIT_SCHEMA): every node with `detail`, else those
    with something to say (every node off the accelerator has a decisive violation, so is listed).

    `parts`: placement_parts(ca.result, detail), when the caller has them (another chip's audit
    with the very same placements: edgedeploy.audit.engine shares them between such chips).
    """
    r = ca.result
    if parts is None:
        parts = placement_parts(r, detail)
    summary = parts["summary"]
    d = {
        "schema": CHIP_AUDIT_SCHEMA,
        "target": r.target,
        "chip": r.chip,
        "toolchain_version": r.toolchain_version,
        "source": r.source,
        "model_sha256": r.model_sha256,
        "precision": r.precision,
        "fallback_unit": r.fallback_unit,
        "summary": summary,
        "units": r.units,
        "nodes_listed": "all" if detail else "with_violations",
        "nodes": parts["nodes"],
        "folded": parts["folded"],
        "lowered": parts["lowered"],
        "partitions": r.partitions,
        "crossings": parts["crossings"],
        "target_name": ca.target_name,
        "chip_name": ca.chip_name,
        "summary_line": r.summary_line(summary),
        "notes": ca.notes,
        "rules_notes": ca.rules_notes,
        "groups": parts["groups"],
    }
    if ca.estimate is not None:
        d["estimate"] = ca.estimate
    unseen = unseen_agreement(r.chip)
    if unseen is not None:
        d["unseen_agreement"] = unseen
    if ca.confirm is not None:
        d["confirm"] = ca.confirm
    return d


@functools.lru_cache(maxsize=1)
def _unseen_agreement_table() -> dict:
    try:
        return json.loads(UNSEEN_AGREEMENT.read_text())["chips"]
    except (OSError, ValueError, KeyError):
        return {}


def unseen_agreement(chip: str) -> dict | None:
    """The chip's pooled blind figures (pairs, exact, nodes_compared, nodes_agree, sets, and a
    sentence), or None where no blind set measured it: an audit's own error bar, as an estimate has one."""
    c = _unseen_agreement_table().get(chip)
    if c is None:
        return None
    sentence = (f"on {c['pairs']} architectures nobody here had seen (blind), this chip's whole-model verdict was exact for "
                f"{c['exact']} of them ({100 * c['exact'] / c['pairs']:.0f}%) and {100 * c['nodes_agree'] / c['nodes_compared']:.1f}% "
                "of their nodes were placed right (docs/audit-agreement.md; --confirm gives the toolchain's own placement)")
    return {**c, "sentence": sentence}


def build_report(model, chips: list[ChipAudit | ChipReportParts], no_rules: list[dict], by: str = "op", fail_on: str | None = None, assumed_shapes: dict | None = None, detail: bool = False) -> dict:
    """The report dict; `detail`: every node of every chip in `nodes` (else those with something to say).

    `chips`, in report order: each chip's audit, or its parts already made (report_parts, with
    the same `detail` and `by`) where it was audited.
    """
    from edgedeploy import __version__

    with_matrix = len(chips) > 1
    made = iter(report_parts([c for c in chips if isinstance(c, ChipAudit)], detail, by, matrix=with_matrix))
    parts = [next(made) if isinstance(c, ChipAudit) else c for c in chips]
    audits = [p.entry for p in parts]
    return {
        "schema": REPORT_SCHEMA,
        "edgedeploy_version": __version__,
        "detail": detail,
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
        "matrix": build_matrix(parts, by) if with_matrix else None,
        # The listed nodes hold every node off the accelerator, all that --fail-on counts.
        "fail_on": fail_on_outcome(audits, fail_on),
    }
