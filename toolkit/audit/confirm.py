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

    def to_dict(self) -> dict:
        return {
            "toolchain": self.toolchain,
            "version": self.version,
            "failed": self.failed,
            "nodes": {k: {"placement": v.placement.value, "detail": v.detail} for k, v in self.nodes.items()},
            "unmapped": self.unmapped,
            "estimates": self.estimates,
        }


def compare(prediction: AuditResult, verdict: ToolchainVerdict) -> dict:
    """Every node where the rules and the toolchain disagree, plus the agreement rate.

    A node the toolchain says nothing about (fused away, or unmapped) is counted apart, not as
    agreement. If the toolchain failed on the whole model, the prediction agrees when it
    predicted at least one UNSUPPORTED node.
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
        }
    disagreements = []
    not_reported = []
    agree = 0
    for node in prediction.nodes:
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
    }
