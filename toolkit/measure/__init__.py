"""Measurement: the latency protocol (protocol.py), accuracy and fidelity (accuracy.py)."""
