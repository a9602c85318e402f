"""The toolchain's own verdict, beside the rule-based prediction.

Where a toolchain is installed, `audit --confirm` runs the real conversion and parses what the
toolchain itself says about each operator (esp-ppq's float ops, RKNN's layer table, Vela's CPU
operators, trtexec's layer information, TIDL's subgraphs) into a `ToolchainVerdict`: the same
placement vocabulary as the rules, keyed by ONNX node name. `compare` lists every disagreement.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from edgedeploy.audit.engine import AuditResult
from edgedeploy.audit.rules import Placement
from edgedeploy.records import record_fields


@dataclass
class NodeVerdict:
    placement: Placement
    detail: str = ""  # what the toolchain printed about it (layer name, reason, cycles, ...)


@dataclass
class ToolchainVerdict:
    """Placements reported by a toolchain, keyed by ONNX node name.

    `unmapped`: toolchain entries that could not be traced back to an ONNX node (fused or
    renamed layers), kept so nothing the toolchain said is dropped silently.
    `failed`: set when the toolchain refused the model as a whole (the reason).
    """

    toolchain: str
    version: str
    nodes: dict[str, NodeVerdict] = field(default_factory=dict)
    unmapped: list[str] = field(default_factory=list)
    failed: str | None = None
    estimates: dict = field(default_factory=dict)  # toolchain figures (cycles, time) labelled as estimates
    # The placements this toolchain can report per node; None: all of them. esp-ppq, for one,
    # says whether it quantised a layer or kept it in float, but it exports operators the
    # ESP-DL runtime cannot load all the same: it cannot tell UNSUPPORTED apart per node.
    observes: tuple[Placement, ...] | None = None

    @classmethod
    def from_dict(cls, data: dict) -> "ToolchainVerdict":
        """The inverse of to_dict (verdicts are cached by sweeps and carried in reports)."""
        observes = data.get("observes")
        return cls(
            toolchain=data["toolchain"],
            version=data["version"],
            nodes={k: NodeVerdict(Placement(v["placement"]), v.get("detail", "")) for k, v in data.get("nodes", {}).items()},
            unmapped=list(data.get("unmapped", [])),
            failed=data.get("failed"),
            estimates=dict(data.get("estimates", {})),
            observes=None if observes is None else tuple(Placement(p) for p in observes),
        )

    def to_dict(self) -> dict:
        return {
            **record_fields(self, "toolchain", "version", "failed"),
            "nodes": {k: {"placement": v.placement.value, "detail": v.detail} for k, v in self.nodes.items()},
            **record_fields(self, "unmapped", "estimates"),
            "observes": None if self.observes is None else [p.value for p in self.observes],
        }


def compare(prediction: AuditResult, verdict: ToolchainVerdict) -> dict:
    """Every node where the rules and the toolchain disagree, plus the agreement rate.

    A node the toolchain says nothing about (fused away, or unmapped) is counted apart, not as
    agreement. So is a node predicted at a placement the toolchain cannot report
    (`verdict.observes`): "unverifiable", neither agreement nor disagreement. If the toolchain
    failed on the whole model, the prediction agrees when it predicted at least one UNSUPPORTED
    node.
    """
    if verdict.failed is not None:
        predicted_fail = any(n.placement is Placement.UNSUPPORTED for n in prediction.nodes)
        return {
            "compared": 1,
            "agree": 1 if predicted_fail else 0,
            "agreement": 1.0 if predicted_fail else 0.0,
            "toolchain_failed": verdict.failed,
            "disagreements": [] if predicted_fail else [{"node": "(model)", "predicted": "buildable", "toolchain": "failed", "detail": verdict.failed}],
            "not_reported": [],
            "unverifiable": [],
        }
    disagreements = []
    not_reported = []
    unverifiable = []
    agree = 0
    for node in prediction.nodes:
        if verdict.observes is not None and node.placement not in verdict.observes:
            unverifiable.append(node.node)
            continue
        seen = verdict.nodes.get(node.node)
        if seen is None:
            not_reported.append(node.node)
            continue
        if seen.placement == node.placement:
            agree += 1
        else:
            disagreements.append(
                {
                    "node": node.node,
                    "op_type": node.op_type,
                    "predicted": node.placement.value,
                    "toolchain": seen.placement.value,
                    "reason": node.reason,
                    "detail": seen.detail,
                }
            )
    compared = agree + len(disagreements)
    return {
        "compared": compared,
        "agree": agree,
        "agreement": agree / compared if compared else None,
        "toolchain_failed": None,
        "disagreements": disagreements,
        "not_reported": not_reported,
        "unverifiable": unverifiable,
    }
