"""The fallback-operator audit: rules per target and chip, placement of every node, and the cost.

Rule tables live in each target package (`targets/<vendor>/rules.py`), written with the
vocabulary of `edgedeploy.audit.rules`; `edgedeploy.audit.engine` applies them to a model.
"""

from edgedeploy.audit.engine import AuditResult, NodePlacement, Violation, audit_model
from edgedeploy.audit.rules import NodeView, Offence, OpSupport, Placement, Rule, RuleSet, TensorView, rule

__all__ = [
    "AuditResult",
    "NodePlacement",
    "NodeView",
    "Offence",
    "OpSupport",
    "Placement",
    "Rule",
    "RuleSet",
    "TensorView",
    "Violation",
    "audit_model",
    "rule",
]
