"""Several artifact reports (targets, chips, devices) into one comparison.

The comparison (`edgedeploy.comparison/1`) keeps every report verbatim and adds derived
tables, each with its scope:
- `artifacts`: one row per artifact (model, chip, precision, audit summary);
- `audit`: per model, the matrix of operator types (and nodes) x chips with their placements;
- `accuracy`: each accuracy section (build-time verification, on-device checks), before/after
  with the inputs and the backends it compared;
- `latency`: per device, every measured figure side by side, and the before/after ratio of
  each measurement (computed on that device, between figures that differ only in the
  deployment). Figures from different devices sit in different groups and are never divided;
- `memory` and `flash_layout`: the files and firmware layout each artifact records;
- `sections`: what each artifact's target adds (edgedeploy.report.sections), as data.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Callable

from edgedeploy import __version__
from edgedeploy.artifacts import now_iso
from edgedeploy.report.artifact import LoadedArtifact
from edgedeploy.report.schema import COMPARISON_SCHEMA
from edgedeploy.report.sections import ReportSectionError, checked_section

PLACEMENTS = ("accelerator", "float", "fallback", "unsupported")
NEVER_DIVIDED = "Figures from different devices are shown side by side and never divided."


def audit_of(art: LoadedArtifact) -> dict | None:
    """The full audit (with every node) of an artifact: inline in report.json, or in the file it names."""
    audit = art.report.get("audit")
    if not isinstance(audit, dict):
        return None
    if _lists_every_node(audit):
        return audit
    name = audit.get("file")
    if isinstance(name, str):
        path = (art.path / name).resolve()
        if art.path.resolve() in path.parents and path.is_file():
            try:
                full = json.loads(path.read_text(encoding="utf-8"))
            except ValueError:
                return None
            if isinstance(full, dict) and _lists_every_node(full):
                return full
    return None


def _lists_every_node(audit: dict) -> bool:
    """A chip audit whose `nodes` holds every node: edgedeploy.audit/1 (audit.json), or an
    edgedeploy.audit/2 entry made with --detail. An abridged one (the nodes with violations
    only) cannot give the per-node matrix; its summary is still used."""
    return isinstance(audit.get("nodes"), list) and audit.get("nodes_listed", "all") == "all"


def audit_summary(art: LoadedArtifact) -> dict | None:
    full = audit_of(art)
    if full is not None and isinstance(full.get("summary"), dict):
        return full["summary"]
    audit = art.report.get("audit")
    if isinstance(audit, dict) and isinstance(audit.get("summary"), dict):
        return audit["summary"]
    return None


def precision_of(report: dict) -> str | None:
    options = report.get("options") or {}
    audit = report.get("audit") or {}
    return options.get("precision") or (audit.get("precision") if isinstance(audit, dict) else None)


def artifact_row(ident: str, art: LoadedArtifact) -> dict:
    r = art.report
    target = r.get("target") or {}
    audit = r.get("audit") if isinstance(r.get("audit"), dict) else {}
    return {
        "id": ident,
        "path": str(art.path),
        "model": {k: (r.get("model") or {}).get(k) for k in ("name", "sha256", "input_shapes")},
        "target": target.get("target"),
        "chip": target.get("chip"),
        "chip_name": target.get("chip_name"),
        "vendor": target.get("vendor"),
        "accelerator": target.get("accelerator"),
        "precision": precision_of(r),
        "audit_summary": audit_summary(art),
        "audit_status": audit.get("status") if audit else None,
        "edgedeploy_version": r.get("edgedeploy_version"),
        "build_seconds": r.get("build_seconds"),
        "estimate": estimate_line(r.get("estimate")),
    }


def estimate_line(section) -> str | None:
    """The build's latency estimate (report section `estimate`) as one sentence that says it is one,
    with the toolchain's own estimate beside it where there is one; None for a report without it."""
    if not isinstance(section, dict) or "sentence" not in section:
        return None
    line = f"estimated (not measured): {section['sentence']}"
    tool = section.get("toolchain_estimate")
    if isinstance(tool, dict) and tool.get("latency_ms") is not None:
        line += f"; {tool.get('name')}'s own estimate: {tool['latency_ms']:.3g} ms"
    return line


def column_label(row: dict) -> str:
    return f"{row['id']} {row['chip'] or row['target']}"


def audit_matrices(arts: list[tuple[str, LoadedArtifact]], rows: dict[str, dict]) -> list[dict]:
    """Per model (by hash): operator types x artifacts, and nodes x artifacts, with placements."""
    by_model: dict[str, list[tuple[str, dict]]] = {}
    for ident, art in arts:
        full = audit_of(art)
        if full is None:
            continue
        by_model.setdefault(art.report["model"]["sha256"], []).append((ident, full))
    matrices = []
    for sha, audits in by_model.items():
        first_nodes = audits[0][1]["nodes"]
        op_rows: dict[str, dict] = {}
        for node in first_nodes:
            op_rows.setdefault(node["op_type"], {"op_type": node["op_type"], "count": 0, "cells": {}})["count"] += 1
        node_rows = [{"node": n["node"], "op_type": n["op_type"], "cells": {}} for n in first_nodes]
        node_index = {n["node"]: i for i, n in enumerate(first_nodes)}
        for ident, audit in audits:
            counts: dict[str, Counter] = {}
            for node in audit["nodes"]:
                counts.setdefault(node["op_type"], Counter())[node["placement"]] += 1
                i = node_index.get(node["node"])
                if i is not None:
                    node_rows[i]["cells"][ident] = {"placement": node["placement"], "reason": node.get("reason", "")}
            for op, counter in counts.items():
                row = op_rows.setdefault(op, {"op_type": op, "count": sum(counter.values()), "cells": {}})
                row["cells"][ident] = {p: counter.get(p, 0) for p in PLACEMENTS if counter.get(p)}
        severity = {p: i for i, p in enumerate(PLACEMENTS)}

        def worst(row):
            return max((severity[p] for cell in row["cells"].values() for p in cell), default=0)

        matrices.append(
            {
                "model": rows[audits[0][0]]["model"],
                "columns": [{"id": ident, "label": column_label(rows[ident]), "precision": audit.get("precision"), "toolchain_version": audit.get("toolchain_version")} for ident, audit in audits],
                "op_types": sorted(op_rows.values(), key=lambda r: (-worst(r), r["op_type"])),
                "nodes": node_rows,
                "scope": f"placements predicted by edgedeploy's rules for model sha256 {sha[:12]} (per column: chip, precision and the toolchain release the rules transcribe)",
            }
        )
    return matrices


def accuracy_entries(arts: list[tuple[str, LoadedArtifact]], rows: dict[str, dict]) -> list[dict]:
    entries = []
    for ident, art in arts:
        section = art.report.get("accuracy")
        if isinstance(section, dict):
            entries.append(_accuracy_entry(ident, rows[ident], "build verification", section, "as recorded by the build (host)"))
        for device, record in sorted((art.report.get("measurements") or {}).items()):
            if isinstance(record, dict) and isinstance(record.get("accuracy"), dict):
                entries.append(_accuracy_entry(ident, rows[ident], f"on device {device}", record["accuracy"], f"device {device}"))
    return entries


def _accuracy_entry(ident: str, row: dict, kind: str, section: dict, fallback_scope: str) -> dict:
    from edgedeploy.report.fmt import accuracy_scope

    fidelity = section.get("fidelity") or {}
    first_output = next(iter(fidelity), None)
    entry = {
        "artifact": ident,
        "label": column_label(row),
        "kind": kind,
        "status": section.get("status"),
        "reason": section.get("reason"),
        "metric": section.get("metric"),
        "samples": section.get("samples"),
        "before": section.get("before"),
        "after": section.get("after"),
        "delta_percentage_points": section.get("delta_percentage_points"),
        "delta": section.get("delta"),
        "output": section.get("metric_output") or first_output,
        "fidelity": fidelity.get(section.get("metric_output") or first_output) if (section.get("metric_output") or first_output) else None,
        # The verification's choice of output for the task metric, and why (edgedeploy.measure.verify).
        "metric_output": section.get("metric_output"),
        "metric_output_reason": section.get("metric_output_reason"),
        "outputs": _output_rows(section),
        # A build's scope names the model and precisions itself; a device check's says only where it ran.
        "scope": accuracy_scope(section, fallback_scope)
        if isinstance(section.get("scope"), dict) and "model_sha256" in section["scope"]
        else f"model sha256 {(row['model'].get('sha256') or '?')[:12]}; {row['precision'] or '?'}; " + accuracy_scope(section, fallback_scope),
    }
    return entry


def output_holds(out: dict) -> str | None:
    """'boxes 0-3, scores 4-83 on axis 1 (from a Concat ...)' or 'box regression (from its name ...)', else None."""
    detection, role = out.get("detection"), out.get("role")
    if isinstance(detection, dict) and detection.get("layout"):
        return f"{detection['layout']} (from {detection.get('evidence')})"
    if isinstance(role, dict) and role.get("role"):
        return f"{role['role']} (from {role.get('evidence')})"
    return None


def _output_rows(section: dict) -> list[dict]:
    """Every output's fidelity (and task metric where the labels fit it), as rows."""
    outputs = section.get("outputs")
    rows = []
    if isinstance(outputs, dict):
        for name, out in outputs.items():
            if not isinstance(out, dict):
                continue
            rows.append(
                {
                    "output": name,
                    "producer": out.get("producer"),
                    "shape": out.get("shape"),
                    "fidelity": out.get("fidelity"),
                    "before": out.get("before"),
                    "after": out.get("after"),
                    "parts": out.get("parts"),
                    "is_metric_output": name == section.get("metric_output"),
                    # What the output holds, only where evidence says so, and why it has no task metric.
                    "holds": output_holds(out),
                    "metric_not_reported": out.get("metric_not_reported"),
                }
            )
    else:
        for name, fid in (section.get("fidelity") or {}).items():
            rows.append({"output": name, "fidelity": fid, "is_metric_output": name == section.get("metric_output")})
    return rows


# -- memory and size ---------------------------------------------------------------------------

# What a target adds to the comparison of one of its artifacts (Target.report_sections, handed
# in by the layer that knows the targets): a list of edgedeploy.report.sections.Section, data the
# core renders into every format. A section not in that shape is left out with a note saying why.
Contribution = Callable[[LoadedArtifact], list]


def _no_contribution(art: LoadedArtifact) -> list:
    return []


def target_sections(arts: list[tuple[str, LoadedArtifact]], rows: dict[str, dict], contribution: Contribution) -> tuple[list[dict], list[str]]:
    """Every section the artifacts' targets add, checked, as comparison entries; and a note for each left out."""
    entries, problems = [], []
    for ident, art in arts:
        label = column_label(rows[ident])
        try:
            sections = contribution(art) or []
            if not isinstance(sections, (list, tuple)):
                raise ReportSectionError(f"the target returned a {type(sections).__name__}, not a list of sections")
            checked = [checked_section(s, f"section {i + 1}") for i, s in enumerate(sections)]
        except ReportSectionError as exc:
            problems.append(f"{label}: what its target adds to the report is left out: {str(exc).rstrip('.')}.")
            continue
        entries += [{"artifact": ident, "label": label, "target": rows[ident]["target"], **s.to_dict()} for s in checked]
    return entries, problems


def memory_rows(arts: list[tuple[str, LoadedArtifact]], rows: dict[str, dict]) -> list[dict]:
    """Per artifact: the files it deploys, the model's place in a generated firmware, the flash it takes, each with its source.
    A toolchain's own memory figures are a target's section (target_sections)."""
    out = []
    for ident, art in arts:
        r = art.report
        label = column_label(rows[ident])

        def add(what: str, value, source: str) -> None:
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                out.append({"artifact": ident, "label": label, "what": what, "bytes": int(value), "source": source})

        convert = r.get("convert") if isinstance(r.get("convert"), dict) else {}
        files = convert.get("files") if isinstance(convert.get("files"), dict) else {}
        for role, size in (convert.get("size_bytes") or {}).items():
            add(f"{role.replace('_', ' ')} ({files.get(role, role)})", size, "file size in the artifact")
        codegen = r.get("codegen") if isinstance(r.get("codegen"), dict) else {}
        if codegen.get("model_size_bytes") is not None:
            add(f"model in the firmware ({codegen.get('model_location') or '?'})", codegen.get("model_size_bytes"), "the generated project")
        if codegen.get("flash_bytes") is not None:
            add("flash up to the end of the last partition", codegen.get("flash_used_bytes"), f"partitions.csv of the generated project ({codegen.get('dev_kit') or 'the dev kit'})")
            add("flash of the dev kit", codegen.get("flash_bytes"), f"{codegen.get('dev_kit') or 'the dev kit'}")
        if codegen.get("firmware_size_bytes") is not None:
            add("firmware image", codegen.get("firmware_size_bytes"), "the compiled firmware")
        elif codegen.get("compiled") is False:
            out.append({"artifact": ident, "label": label, "what": "firmware image", "bytes": None, "source": codegen.get("note") or "not compiled here"})
    return out


def flash_layouts(arts: list[tuple[str, LoadedArtifact]], rows: dict[str, dict]) -> list[dict]:
    """The partition tables of generated firmware projects (ESP-DL): where the model lives in flash."""
    layouts = []
    for ident, art in arts:
        codegen = art.report.get("codegen") if isinstance(art.report.get("codegen"), dict) else {}
        partitions = codegen.get("partitions")
        if isinstance(partitions, list) and partitions:
            layouts.append(
                {
                    "artifact": ident,
                    "label": column_label(rows[ident]),
                    "model_location": codegen.get("model_location"),
                    "flash_bytes": codegen.get("flash_bytes"),
                    "partitions": [p for p in partitions if isinstance(p, dict)],
                }
            )
    return layouts


def latency_groups(arts: list[tuple[str, LoadedArtifact]], rows: dict[str, dict]) -> list[dict]:
    """Per device: every measured before/after figure, and each measurement's own before/after ratio."""
    groups: dict[str, dict] = {}
    for ident, art in arts:
        for device, record in sorted((art.report.get("measurements") or {}).items()):
            if not isinstance(record, dict):
                continue
            latency = record.get("latency") or {}
            identity = None
            for label in ("after", "before"):
                rec = latency.get(label)
                if rec:
                    identity = (rec.get("scope") or {}).get("device")
                    break
            key = device + "|" + json.dumps({k: (identity or {}).get(k) for k in ("hostname", "cpu_model", "cpu_cores")}, sort_keys=True)
            group = groups.setdefault(key, {"device": device, "identity": identity, "entries": [], "comparisons": [], "host_notes": []})
            host = record.get("host_run")
            if isinstance(host, dict) and host.get("note"):
                # A chip artifact run on this host: its figures are the host's, never the chip's.
                group["host_notes"].append(f"{column_label(rows[ident])}: {host['note']}")
            for label in ("before", "after"):
                rec = latency.get(label)
                if not rec:
                    continue
                summary = rec.get("summary") or {}
                group["entries"].append(
                    {
                        "artifact": ident,
                        "label": column_label(rows[ident]),
                        "run": label,
                        "median_us": summary.get("median_us"),
                        "session_median_range_us": summary.get("session_median_range_us"),
                        "session_p99_range_us": summary.get("session_p99_range_us"),
                        "first_inference_range_us": summary.get("first_inference_range_us"),
                        "throughput_items_per_s": summary.get("throughput_items_per_s"),
                        "sessions": summary.get("sessions"),
                        "partial": rec.get("partial") or record.get("partial"),
                        "scope": rec.get("scope"),
                        "session_stats": [
                            {"session": s.get("session"), "latency_us": s.get("latency_us"), "histogram_us": s.get("histogram_us"), "iterations": s.get("iterations")}
                            for s in rec.get("sessions") or []
                        ],
                        "measured_at": record.get("created_at"),
                    }
                )
            comparison = record.get("comparison") or {}
            host_chip = host.get("chip") if isinstance(host, dict) else None
            group["comparisons"].append({"artifact": ident, "label": column_label(rows[ident]), "partial": record.get("partial"), "error": record.get("error"), "host_run_of": host_chip, **comparison})
    return list(groups.values())


def combine(artifacts: list[LoadedArtifact], contribution: Contribution = _no_contribution) -> dict:
    """The comparison of several artifacts (one artifact is a comparison of one).

    `contribution(artifact)` is what the artifact's target adds (see Contribution): the
    pipeline's `combine_reports` asks the targets; without it, only the shared sections.
    """
    arts = [(f"A{i + 1}", art) for i, art in enumerate(artifacts)]
    rows = {ident: artifact_row(ident, art) for ident, art in arts}
    sections, left_out = target_sections(arts, rows, contribution)
    models = {row["model"]["sha256"] for row in rows.values()}
    notes = [NEVER_DIVIDED, "Before/after ratios are computed inside one measurement only: same device, model, inputs and batch; they differ in one part of the deployment alone (backend, precision or threads)."]
    if len(models) > 1:
        notes.append(f"The artifacts come from {len(models)} different models; their figures are not comparable with each other.")
    notes += left_out
    # First, so that no one takes an unchecked report's figures for checked ones.
    notes[:0] = [f"NOT VERIFIED: {ident} ({art.path}) was read with --no-verify; its files were not checked against its manifest, so its figures may have been changed since the build." for ident, art in arts if not art.verified]
    return {
        "schema": COMPARISON_SCHEMA,
        "edgedeploy_version": __version__,
        "created_at": now_iso(),
        "artifacts": list(rows.values()),
        "audit": audit_matrices(arts, rows),
        "accuracy": accuracy_entries(arts, rows),
        "memory": memory_rows(arts, rows),
        "flash_layout": flash_layouts(arts, rows),
        "sections": sections,
        "latency": latency_groups(arts, rows),
        "notes": notes,
        "reports": {ident: art.report for ident, art in arts},
    }


def artifact_paths(paths: list[Path]) -> list[Path]:
    """The artifact folders named, expanding a folder of artifacts (OUT/<model>/<chip>) into its members."""
    found: list[Path] = []
    for path in paths:
        path = Path(path)
        if (path / "report.json").is_file() or path.is_file():
            found.append(path)
            continue
        members = sorted(p.parent for p in path.glob("*/report.json")) + sorted(p.parent for p in path.glob("*/*/report.json"))
        found.extend(m for m in members if not m.name.endswith(".failed") and not m.name.startswith("."))
        if not members:
            found.append(path)  # let load_artifact say what is wrong with it
    return found
