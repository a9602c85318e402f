"""The text form of an `accuracy_diagnosis` document (the JSON is the source), and of build --recover's attempts."""

from __future__ import annotations

from edgedeploy.escape import terminal_safe
from edgedeploy.report.snr_curve import text_chart


def referred_role(path: dict) -> str:
    """Whether the worst referred nodes lead the ranking on this path (a path whose repair leaves a node's
    inputs int8 reports them without; documents older than the flag had them lead)."""
    return "ranked first" if (path.get("referred") or {}).get("leads_ranking", True) else "reported, not leading: this path's repair keeps a node's inputs int8"


def _db(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, str):
        return value
    return f"{value:.1f}"


def _num(value, digits=4) -> str:
    return "-" if value is None else f"{value:.{digits}g}"


def _node_rows(path: dict) -> list[list[str]]:
    rows = []
    for node in path["nodes"]:
        acc, iso = node.get("accumulated") or {}, node.get("isolated") or {}
        rows.append([
            node["node"],
            node.get("op_type") or "",
            node.get("precision") or "-",
            _db(acc.get("snr_db")),
            _num(acc.get("cosine")),
            _db(iso.get("snr_db")),
            _num(acc.get("max_abs_error")),
            ", ".join(node.get("absorbs") or []) or "",
        ])
    return rows


def _table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(r[i])) for r in [headers] + rows) for i in range(len(headers))]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip() for row in [headers] + rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def terminal_safe_copy(value):
    """The document with every string terminal-safe: node names, tensor names and the sentences that
    quote them come from the model (a newline or an escape sequence in a name stays visible text)."""
    if isinstance(value, dict):
        return {terminal_safe_copy(k): terminal_safe_copy(v) for k, v in value.items()}  # keys: output names
    if isinstance(value, list):
        return [terminal_safe_copy(v) for v in value]
    return terminal_safe(value) if isinstance(value, str) else value


def render_path(path: dict, nodes: bool = True, chart: bool = True) -> str:
    """One path in text: its outputs, the SNR chart, where it falls, the worst nodes, the causes (and every node)."""
    path = terminal_safe_copy(path)
    lines = [f"{path['path']}: {path.get('toolchain', '')}", f"  {path.get('method', '')}"]
    outputs = ", ".join(f"{name} {_db((f or {}).get('snr_db'))} dB (cosine {_num((f or {}).get('cosine'), 3)})" for name, f in path["outputs"].items())
    lines.append(f"  outputs (accumulated, quantised vs float): {outputs or '-'}")
    if chart:
        lines += [f"  {line}" for line in text_chart(path)]
    first = path.get("first_sharp_drop")
    if first:
        lines.append(f"  first sharp fall: {first['node']} ({first['op_type']}) on {first['tensor']}: accumulated SNR {_db(first['accumulated_snr_db'])} dB, {first['drop_db']:.1f} dB below its inputs")
    else:
        lines.append("  first sharp fall: none (no node falls 10 dB or more to under 30 dB)")
    worst = ", ".join(f"{w['node']} ({_db(w['isolated_snr_db'] if w['isolated_snr_db'] is not None else w['accumulated_snr_db'])} dB)" for w in path.get("worst_isolated") or [])
    lines.append(f"  worst by {path.get('worst_ranked_by', 'isolated SNR')}: {worst or '-'}")
    if path.get("worst_referred"):
        referred = ", ".join(f"{w['node']} ({_db(w.get('referred_snr_db'))} dB)" for w in path["worst_referred"])
        lines.append(f"  worst referred to the outputs (that node alone quantised in the float model, lowest output SNR; {referred_role(path)}): {referred}")
    for cause in path.get("causes") or []:
        lines.append(f"  likely cause at {cause['node']}: {cause['sentence']}")
    if not path.get("causes"):
        lines.append("  likely cause: none the statistics show")
    if nodes:
        lines.append("")
        lines.append(_table(["NODE", "OP", "PRECISION", "ACC SNR dB", "ACC COS", "ISO SNR dB", "ACC MAX ERR", "ABSORBS"], _node_rows(path)))
    return "\n".join(lines)


def diagnosis_scope(document: dict) -> str:
    """One sentence: which build the report's diagnosis is of (an accuracy gate failed on the artifact,
    or build --recover diagnosed an attempt that missed its goals before another met them)."""
    attempt = document.get("attempt")
    if attempt:
        return (f"build --recover diagnosed its attempt {attempt.get('id')} ({attempt.get('changes')}), which missed the goals, "
                "to rank the nodes for mixed precision; the artifact is the attempt that met them (docs/diagnose.md).")
    return "An accuracy gate failed at build time: where int8 breaks the model, node by node (docs/diagnose.md)."


def render_text(document: dict, nodes: bool = True) -> str:
    """The whole document in text (`edgedeploy diagnose`): what it ran on, then each path."""
    document = terminal_safe_copy(document)  # the model's name and the artifact's path too
    data = document.get("data") or {}
    head = [
        f"diagnosis of {document['model']['name']} for {document['chip']} ({document['artifact']})",
        f"figures on the {data.get('figures_on', 'calibration')} data ({((data.get(data.get('figures_on', 'calibration')) or {}).get('count'))} samples); "
        f"ranges from {(data.get('calibration') or {}).get('count')} calibration samples",
    ]
    if document.get("verified") is False:
        head.insert(0, "NOT VERIFIED: read with --no-verify; the artifact's files were not checked against its manifest")
    parts = ["\n".join(head)]
    parts.extend(render_path(p, nodes) for p in document["paths"])
    parts.extend(f"{s['path']}: not diagnosed: {s['reason']}" for s in document.get("skipped") or [])
    return "\n\n".join(parts) + "\n"


# -- build --recover's attempts (the report's `recovery` section, edgedeploy.recovery/1) ----------


def attempts_table(section: dict) -> str:
    """The attempts as text lines (the build's output and `edgedeploy report`)."""
    lines = ["recover: attempts (cheapest first):"]
    for a in section.get("attempts", []):
        f, c = a["figures"], a["cost_figures"]
        mark = "*" if a["id"] == section.get("chosen") else " "
        if a["status"] != "built":
            lines.append(f" {mark}{a['id']:<4} {a['cost']:<16} {a['flags'] or '(as built)'}: failed: {a['reason']}")
            continue
        why = f" ({a['reason']})" if a.get("reason") else ""  # built, but no figures: why
        lines.append(
            f" {mark}{a['id']:<4} {a['cost']:<16} {a['flags'] or '(as built)'}: {show_attempt_figures(f)}{why}; "
            f"{c.get('model_size_bytes')} B, {c.get('nodes_off_int8')} node(s) off int8{_on_chip(c.get('toolchain'))}{_latency_text(c)}; goals {'met' if a['met'] else 'missed'}"
        )
    for k in section.get("knobs", []):
        if k.get("unavailable"):
            lines.append(f"  not tried: {k['cost']}: {k['unavailable']}")
    lines += [f"  {note}" for note in latency_notes(section)]
    return "\n".join(lines)


def _latency_text(cost: dict) -> str:
    """An attempt's latency where it was measured (a build times nothing: latency_notes says why)."""
    return f", {cost['latency_ms']:.3g} ms" if cost.get("latency_ms") is not None else ", latency not measured"


def latency_notes(section: dict) -> list[str]:
    """Why the attempts have no latency, said once (each attempt carries the same sentence)."""
    notes = []
    for a in section.get("attempts", []):
        cost = a.get("cost_figures") or {}
        if cost.get("latency_ms") is None and cost.get("latency") and f"latency: {cost['latency']}" not in notes:
            notes.append(f"latency: {cost['latency']}")
    return notes


def _on_chip(figures: dict | None) -> str:
    """The target's own cost figures of an attempt (Target.repair_costs), as `, key value` pairs."""
    return "".join(f", {key.replace('_', ' ')} {value:.6g}" if isinstance(value, float) else f", {key.replace('_', ' ')} {value}" for key, value in (figures or {}).items() if value is not None)


def show_attempt_figures(f: dict) -> str:
    """An attempt's figures of `build --recover` in one phrase."""
    parts = []
    if f.get("task_metric_drop_pp") is not None:
        parts.append(f"{f['task_metric']} drop {f['task_metric_drop_pp']:.2f} pp")
    if f.get("lowest_snr_db") is not None:
        parts.append(f"lowest SNR {f['lowest_snr_db']:.1f} dB")
    if f.get("lowest_cosine") is not None:
        parts.append(f"lowest cosine {f['lowest_cosine']:.5f}")
    return ", ".join(parts) or "no accuracy figures"
