"""The ESP-DL rule registry and the toolchain versions its rules and graph passes cite.

rules.py (placement rules) and passes.py (esp-ppq's graph passes) both join RULES as they are
declared; this module holds what both need, so neither imports the other's registry.
"""

from __future__ import annotations

from edgedeploy.audit.registry import RuleRegistry

ESP_DL_VERSION = "3.3.9"
ESP_PPQ_VERSION = "1.3.12"
# The ONNX simplifier esp-ppq 1.3.12 runs first (pinned in the espdl environment).
ONNXSIM_VERSION = "0.7.3"
CHIPS = ("esp32s3", "esp32p4")
# Every rule and pass joins this registry as it is declared; the table is the same for both chips.
RULES = RuleRegistry("espdl", chips=CHIPS)
