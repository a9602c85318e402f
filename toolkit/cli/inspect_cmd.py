"""`edgedeploy inspect`: what a model is, in figures."""

from __future__ import annotations

import click

from edgedeploy.cli.options import input_shape_option, model_argument, parse_shapes, resolve_model
from edgedeploy.cli.output import echo_text, emit_json, format_option, human_bytes, human_count, table
from edgedeploy.model.shapes import show_shape


@click.command("inspect")
@model_argument
@input_shape_option
@format_option()
@click.option("--per-node", is_flag=True, help="List the MACs of every node, not only the total.")
def inspect_command(model, input_shapes, output_format, per_node) -> None:
    """Load and check MODEL; show its inputs, outputs, operators, parameters, MACs and content hash.

    MODEL defaults to the bundled MNIST sample.
    """
    from edgedeploy.model import load_model
    from edgedeploy.model.inspect import inspect_report

    loaded = load_model(resolve_model(model), parse_shapes(input_shapes))
    report = inspect_report(loaded)
    if output_format == "json":
        emit_json(report)
        return
    m = report["model"]
    echo_text(f"model    {m['path']}")
    echo_text(f"sha256   {m['sha256']}")
    echo_text(f"size     {human_bytes(m['size_bytes'])}   IR {m['ir_version']}   opsets "
               + ", ".join(f"{d} {v}" for d, v in m["opsets"].items())
               + (f"   producer {m['producer']}" if m["producer"] else ""))
    echo_text("")
    rows = []
    for kind in ("inputs", "outputs"):
        for t in report[kind]:
            dyn = ", ".join(str(a) for a in t["dynamic_axes"])
            rows.append([kind[:-1], t["name"], t["dtype"], show_shape(tuple(t["shape"]) if t["shape"] is not None else None), dyn or "-"])
    echo_text(table(["", "NAME", "DTYPE", "SHAPE", "DYNAMIC AXES"], rows))
    if report["pinned_input_shapes"]:
        echo_text("pinned: " + ", ".join(f"{k}={'x'.join(map(str, v))}" for k, v in report["pinned_input_shapes"].items()))
    echo_text("")
    echo_text(f"nodes    {report['node_count']}: " + ", ".join(f"{op} {n}" for op, n in report["op_histogram"].items()))
    p = report["parameters"]
    echo_text(f"params   {p['count']} ({human_count(p['count'])}), {human_bytes(p['size_bytes'])}")
    macs = report["macs"]
    if macs["complete"]:
        assumed = macs["assumed_input_shapes"]
        note = (" at batch 1 (" + ", ".join(f"{k}={'x'.join(map(str, v))}" for k, v in assumed.items()) + "; pin with --input-shape for another batch)") if assumed else ""
        echo_text(f"MACs     {macs['total']} ({human_count(macs['total'])}){note}")
    else:
        echo_text(f"MACs     unknown: {len(macs['unknown_nodes'])} nodes have dynamic shapes (at least {macs['known_total']}); pin them with --input-shape")
    if per_node and macs["per_node"]:
        echo_text("")
        echo_text(table(["NODE", "OP", "MACS"], [[r["node"], r["op_type"], r["macs"] if r["macs"] is not None else "?"] for r in macs["per_node"]], right_align=[2]))


COMMANDS = [inspect_command]
