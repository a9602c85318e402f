"""The text form of an `accuracy_diagnosis` document (the JSON is the source)."""

from __future__ import annotations


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


def render_path(path: dict, nodes: bool = True) -> str:
    lines = [f"{path['path']}: {path.get('toolchain', '')}", f"  {path.get('method', '')}"]
    outputs = ", ".join(f"{name} {_db((f or {}).get('snr_db'))} dB (cosine {_num((f or {}).get('cosine'), 3)})" for name, f in path["outputs"].items())
    lines.append(f"  outputs (accumulated, quantised vs float): {outputs or '-'}")
    first = path.get("first_sharp_drop")
    if first:
        lines.append(f"  first sharp fall: {first['node']} ({first['op_type']}) on {first['tensor']}: accumulated SNR {_db(first['accumulated_snr_db'])} dB, {first['drop_db']:.1f} dB below its inputs")
    else:
        lines.append("  first sharp fall: none (no node falls 10 dB or more to under 30 dB)")
    worst = ", ".join(f"{w['node']} ({_db(w['isolated_snr_db'] if w['isolated_snr_db'] is not None else w['accumulated_snr_db'])} dB)" for w in path.get("worst_isolated") or [])
    lines.append(f"  worst by {path.get('worst_ranked_by', 'isolated SNR')}: {worst or '-'}")
    for cause in path.get("causes") or []:
        lines.append(f"  likely cause at {cause['node']}: {cause['sentence']}")
    if not path.get("causes"):
        lines.append("  likely cause: none the statistics show")
    if nodes:
        lines.append("")
        lines.append(_table(["NODE", "OP", "PRECISION", "ACC SNR dB", "ACC COS", "ISO SNR dB", "ACC MAX ERR", "ABSORBS"], _node_rows(path)))
    return "\n".join(lines)


def render_text(document: dict, nodes: bool = True) -> str:
    data = document.get("data") or {}
    head = [
        f"diagnosis of {document['model']['name']} for {document['chip']} ({document['artifact']})",
        f"figures on the {data.get('figures_on', 'calibration')} data ({((data.get(data.get('figures_on', 'calibration')) or {}).get('count'))} samples); "
        f"ranges from {(data.get('calibration') or {}).get('count')} calibration samples",
    ]
    parts = ["\n".join(head)]
    parts.extend(render_path(p, nodes) for p in document["paths"])
    parts.extend(f"{s['path']}: not diagnosed: {s['reason']}" for s in document.get("skipped") or [])
    return "\n\n".join(parts) + "\n"
