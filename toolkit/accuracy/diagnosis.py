"""One path's diagnosis from its tap records: figures per node, localisation, causes; and the text form.

A *path* is one quantised simulation of the user's model: a target's toolchain on a chip, or
ONNX Runtime's QDQ quantisation. Its tap returns one record per node, in the graph's order:

    node       the ONNX node's name (the toolchain's name mapped back by the tap)
    op_type    its ONNX operator
    tensor     the output tensor the figures are of (the ONNX name)
    inputs     the activation tensors it reads (ONNX names), for the accumulated fall
    precision  what the toolchain made of it (int8, int16, float32, ...) or None
    absorbs    ONNX nodes fused into it (filled by `absorbed_nodes` where the tap does not say)
    accumulated, isolated   tap_numpy.moments sums (quantised graph up to the node; the node alone
               quantised on float inputs), or None where the toolchain offers no such run
    stats, stats_eval   tap_numpy.tensor_stats of the float tensor against its quantised range,
               on the calibration (and evaluation) inputs
    weight, bias        tap_numpy.weight_stats / bias_stats; input_steps: the steps of its inputs
"""

from __future__ import annotations

from edgedeploy.accuracy import causes as cause_rules
from edgedeploy.accuracy import localise, metrics

SCHEMA = "edgedeploy.accuracy_diagnosis/1"


def absorbed_nodes(records: list[dict], onnx_nodes: list[tuple[str, list[str], list[str]]]) -> None:
    """Name, on each record, the ONNX nodes the toolchain folded into it (nodes with no record of their own).

    onnx_nodes: (name, inputs, outputs) of the user's model in graph order. A node without a record
    goes to the record that produces its output tensor (a BatchNormalization folded into its Conv
    keeps the BN's output name), else to the first record reading its output (a Reshape removed).
    """
    by_tensor = {r["tensor"]: r for r in records if r.get("tensor")}
    named = {r["node"] for r in records}
    readers: dict[str, dict] = {}
    for record in records:
        for name in record.get("inputs") or []:
            readers.setdefault(name, record)
    for record in records:
        record.setdefault("absorbs", [])
    for name, _inputs, outputs in onnx_nodes:
        if name in named:
            continue
        owner = next((by_tensor[o] for o in outputs if o in by_tensor), None) or next((readers[o] for o in outputs if o in readers), None)
        if owner is not None and name != owner["node"] and name not in owner["absorbs"]:
            owner["absorbs"].append(name)
    _inputs_of_fused_groups(records, onnx_nodes)


def _inputs_of_fused_groups(records: list[dict], onnx_nodes) -> None:
    """A record that absorbed nodes reads what the group reads: its absorbed nodes' inputs, less
    the tensors made inside the group (so the accumulated fall is measured from the group's inputs)."""
    by_name = {name: (inputs, outputs) for name, inputs, outputs in onnx_nodes}
    for record in records:
        group = [record["node"]] + list(record.get("absorbs") or [])
        made = {o for n in group if n in by_name for o in by_name[n][1]}
        reads = list(record.get("inputs") or [])
        for name in group[1:]:
            reads += [x for x in by_name.get(name, ([], []))[0] if x and x not in reads]
        record["inputs"] = [x for x in reads if x not in made]


def diagnose_path(path: dict, records: list[dict], graph_outputs: list[str], calibration_samples: int | None = None,
                  graph_inputs: list[str] | None = None, refer=None, referred_lead: bool = True) -> dict:
    """The `accumulated_diagnosis` entry of one path: every node's figures, where it falls, and why.

    `graph_inputs` lets a fall be measured only from what is known upstream (see localise.upstream_snr).
    `refer(records)`, when given, sets each record's error referred to the outputs (referred.refer_to_outputs)
    and returns its summary; the ranking then starts from the nodes whose own error costs the outputs most,
    unless not `referred_lead`: the path's repair leaves in place the roundings those figures charge a
    node with (TapResult.repair_keeps_inputs_rounded), and the figures are reported without leading.
    """
    for record in records:
        record["fidelity_accumulated"] = metrics.fidelity(record.get("accumulated"))
        record["fidelity_isolated"] = metrics.fidelity(record.get("isolated"))
    localise.add_drops(records, None if graph_inputs is None else set(graph_inputs))
    referred_summary = refer(records) if refer is not None else None
    for record in records:
        record["referred_output"], record["fidelity_referred"] = _lowest_output(record.get("referred"))
    first = localise.first_sharp_drop(records)
    worst, ranked_by = localise.worst_isolated(records)
    worst_referred = localise.worst_referred(records)
    context = cause_rules.CauseContext(
        by_tensor={r["tensor"]: r for r in records if r.get("tensor")},
        by_node={r["node"]: r for r in records},
        calibration_samples=calibration_samples,
    )
    suspects = _suspects(first, worst + [r for r in worst_referred if all(r is not w for w in worst)], context)
    found = []
    for record in suspects:
        found.extend(c for c in cause_rules.causes_of(record, context) if c not in found)
    outputs = {r["tensor"]: r["fidelity_accumulated"] for r in records if r.get("tensor") in graph_outputs}
    entry = {
        **path,
        "outputs": {name: _json_figures(f) for name, f in outputs.items()},
        "nodes": [_node_entry(r) for r in records],
        "first_sharp_drop": _brief(first),
        "worst_isolated": [_brief(r) for r in worst],
        "worst_ranked_by": ranked_by,
        "ranked": [r["node"] for r in localise.ranked(first, worst, worst_referred if referred_lead else [])],
        "causes": found,
    }
    if referred_summary is not None:
        entry["worst_referred"] = [_brief(r) for r in worst_referred]
        entry["referred"] = {**referred_summary, "leads_ranking": bool(referred_lead and worst_referred)}
    return entry


def _lowest_output(referred: dict | None) -> tuple[str | None, dict | None]:
    """The graph output the node's own error hurts most (lowest SNR), and its figures there."""
    if not referred:
        return None, None
    figures = {name: metrics.fidelity(m) for name, m in referred.items() if m}
    if not figures:
        return None, None
    name = min(figures, key=lambda n: figures[n]["snr_db"])
    return name, figures[name]


def _suspects(first, worst, context) -> list[dict]:
    """The nodes whose causes are looked for: the first fall, the node feeding it, the worst alone
    (and the worst referred to the outputs)."""
    chosen = []
    if first is not None:
        chosen.append(first)
        for name in first.get("inputs") or []:
            producer = context.by_tensor.get(name)
            if producer is not None:
                chosen.append(producer)
    chosen.extend(worst)
    unique = []
    for record in chosen:
        if all(record is not r for r in unique):
            unique.append(record)
    return unique


def _json_figures(figures: dict | None) -> dict | None:
    if figures is None:
        return None
    return {k: metrics.json_number(v) if isinstance(v, float) else v for k, v in figures.items()}


def _brief(record: dict | None) -> dict | None:
    if record is None:
        return None
    acc, iso = record.get("fidelity_accumulated") or {}, record.get("fidelity_isolated") or {}
    return {
        "node": record["node"],
        "op_type": record.get("op_type"),
        "tensor": record.get("tensor"),
        "accumulated_snr_db": metrics.json_number(acc.get("snr_db")),
        "isolated_snr_db": metrics.json_number(iso.get("snr_db")),
        "drop_db": record.get("drop_db"),
        **({"referred_snr_db": metrics.json_number((record.get("fidelity_referred") or {}).get("snr_db"))} if record.get("fidelity_referred") else {}),
    }


def _node_entry(record: dict) -> dict:
    keep = ("node", "op_type", "tensor", "inputs", "precision", "absorbs", "drop_db", "stats", "stats_eval", "weight", "bias", "input_steps")
    entry = {k: record[k] for k in keep if record.get(k) is not None}
    entry["accumulated"] = _json_figures(record.get("fidelity_accumulated"))
    entry["isolated"] = _json_figures(record.get("fidelity_isolated"))
    if record.get("fidelity_referred"):
        entry["referred"] = _json_figures(record["fidelity_referred"])
        entry["referred_output"] = record["referred_output"]
        entry["referred_injected"] = record.get("referred_injected")
    return entry
