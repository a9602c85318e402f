"""Fidelity metrics from a tap's sums: cosine, SNR (dB) and max abs error, as edgedeploy.measure defines them.

A tap sums over batches (tap_numpy.moments / merge_moments) so that no toolchain has to ship its
tensors back; these turn the sums into the same figures `edgedeploy.measure.accuracy.fidelity`
gives on whole arrays (tests/test_accuracy_diagnosis.py checks that they agree).
"""

from __future__ import annotations

import math


def snr_db(moments: dict | None) -> float | None:
    """Signal (reference power) over noise (error power) in dB: inf without error, -inf without signal."""
    if not moments:
        return None
    noise, signal = moments["err_sq"], moments["ref_sq"]
    if noise == 0:
        return math.inf
    if signal <= 0:
        return -math.inf
    return 10.0 * math.log10(signal / noise)


def cosine(moments: dict | None) -> float | None:
    if not moments:
        return None
    ref, got = math.sqrt(moments["ref_sq"]), math.sqrt(moments["got_sq"])
    if ref == 0 and got == 0:
        return 1.0
    if ref == 0 or got == 0:
        return 0.0
    return max(-1.0, min(1.0, moments["dot"] / (ref * got)))


def fidelity(moments: dict | None) -> dict | None:
    """The report's figures for one tensor; None when the tap had nothing to compare."""
    if not moments:
        return None
    return {"cosine": cosine(moments), "snr_db": snr_db(moments), "max_abs_error": moments["max_abs_error"], "elements": moments["count"]}


def json_number(value: float | None):
    """inf/-inf as strings, so that the JSON stays standard (the report's convention)."""
    if value is None or math.isfinite(value):
        return value
    return "inf" if value > 0 else "-inf"
