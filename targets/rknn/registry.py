"""The RKNN rule registry: rules.py (placement rules) and passes.py (the toolkit's graph passes) both join it.

Held apart so that neither module imports the other's registry.
"""

from __future__ import annotations

from edgedeploy.audit.registry import RuleRegistry

TOOLKIT_OBSERVED = "rknn-toolkit2 2.5.0 (observed)"
CHIPS = ("rk3588", "rk3576", "rk3568", "rk3566", "rk3562", "rv1106")
# Every rule and pass joins this registry as it is declared, with the chips (and build
# precisions) it applies to; a chip's rule set takes them in declaration order.
RULES = RuleRegistry("rknn", chips=CHIPS, precisions=("int8", "fp16"))
