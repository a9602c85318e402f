"""Accuracy diagnosis: where int8 breaks a model, and why (`edgedeploy diagnose`, and `build` when an accuracy gate fails).

Vendor-neutral. Each quantised path (a target's toolchain simulating on this host, or ONNX
Runtime's QDQ quantisation) is *tapped*: per node of the user's model, the quantised tensor
against the float one on the same inputs, accumulated (the quantised graph up to the node) and
isolated (that node alone quantised, on float inputs), with the statistics that explain it.
Targets tap their own toolchain (Capability.DIAGNOSE) in a worker that loads tap_numpy.py by
path; the core computes the figures (metrics), finds where they fall (localise) and why (causes)
once for all (diagnosis).
"""

from edgedeploy.accuracy.diagnosis import SCHEMA, absorbed_nodes, diagnose_path

__all__ = ["SCHEMA", "absorbed_nodes", "diagnose_path"]
