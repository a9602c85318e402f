"""`edgedeploy estimate`: latency per inference on chips without a board, from the audit's
placements and the cost model fitted to published device figures (edgedeploy.estimate).

Cheap on purpose (no toolchain runs): `audit --target all` and every build report carry it too.
"""

from __future__ import annotations

from pathlib import Path

ESTIMATE_REPORT_SCHEMA = "edgedeploy.estimate-report/1"
FIGURES_DOC = "docs/estimate-figures.md"


def built_estimates(model, chip_id: str, artifacts_root: Path | None) -> tuple[dict | None, str]:
    """The toolchain's estimates of an earlier build of this very model for the chip
    (ARTIFACTS/<model>/<chip>/report.json, the same sha256), and that report's path; else (None, "")."""
    import json

    from edgedeploy.artifacts import artifact_dir

    if artifacts_root is None:
        return None, ""
    path = artifact_dir(artifacts_root, model.name, chip_id) / "report.json"
    try:
        report = json.loads(path.read_text())
    except (OSError, ValueError):
        return None, ""
    made_from = report.get("model") or {}
    if model.sha256 not in (made_from.get("sha256"), made_from.get("source_sha256")):
        return None, ""
    return (report.get("toolchain_verdict") or {}).get("estimates"), str(path)


def estimate_audits(model, audits: list, targets_by_chip: dict, params: dict | None = None, artifacts_root: Path | None = None) -> list:
    """A ChipEstimate per AuditResult in `audits` (one model); `targets_by_chip`: chip id -> its
    target; `artifacts_root`: where earlier builds are looked for, for the toolchain's own estimate."""
    from edgedeploy.estimate import estimate_chip, load_params, node_costs, toolchain_estimate_entry

    params = load_params() if params is None else params
    costs = node_costs(model)
    found = []
    for audit in audits:
        est = estimate_chip(costs, audit, params)
        target = targets_by_chip.get(audit.chip)
        if target is not None and getattr(target, "toolchain_latency_estimate", {}).get(audit.chip):
            estimates, source = built_estimates(model, audit.chip, artifacts_root)
            est.toolchain_estimate = toolchain_estimate_entry(target, audit.chip, estimates, source)
        found.append(est)
    return found


def estimate_model(model_path: Path, input_shapes: dict, chips: list, precision: str | None = None, budget_ms: float | None = None, params: dict | None = None, artifacts_root: Path | None = None) -> dict:
    """Audit the model on `chips` (edgedeploy.pipeline.audit.ChipChoice) and estimate each; the report dict.

    `artifacts_root`: a build folder (`build --out`) whose builds of this model give the
    toolchain's own estimate beside edgedeploy's (Vela's for the i.MX 93)."""
    from edgedeploy import __version__
    from edgedeploy.audit.engine import ChipIndependent
    from edgedeploy.estimate import load_params
    from edgedeploy.model import load_model
    from edgedeploy.model.intake import with_batch_pinned
    from edgedeploy.pipeline.audit import audit_one

    params = load_params() if params is None else params
    model = load_model(model_path, input_shapes)
    audited = with_batch_pinned(model) or model
    shared = ChipIndependent(audited)
    explicit = len(chips) == 1
    audits, no_rules = [], []
    for choice in chips:
        found = audit_one(audited, shared, choice, precision, explicit, [])
        (no_rules if isinstance(found, dict) else audits).append(found if isinstance(found, dict) else found.result)
    estimates = estimate_audits(audited, audits, {c.chip.id: c.target for c in chips}, params, artifacts_root)
    rows = []
    for est in estimates:
        row = est.to_dict()
        row["meets_budget"] = None if budget_ms is None or est.latency_ms is None else est.latency_ms <= budget_ms
        rows.append(row)
    return {
        "schema": ESTIMATE_REPORT_SCHEMA,
        "edgedeploy_version": __version__,
        "model": {"path": str(model.path), "name": model.path.name, "sha256": model.sha256, "input_shapes": {**audited.pinned, **audited.auto_pinned}},
        "budget_ms": budget_ms,
        "estimates": rows,
        "no_rules": no_rules,
        "fitted": params.get("fitted", {}),
        "figures_table": FIGURES_DOC,
    }
