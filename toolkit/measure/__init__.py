"""Measurement: the latency protocol (protocol.py, stdlib only, copied next to generated runners),
the host harness (harness.py: independent sessions in separate processes, combined), the
versioned JSON of latency figures and the same-scope ratio rule (schema.py), `edgedeploy bench`
(bench.py, backends/), and accuracy and fidelity (accuracy.py, with the ONNX Runtime reference)."""
