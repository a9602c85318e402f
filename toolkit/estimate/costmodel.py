"""The per-chip cost model: coefficients (ms per unit of each feature) from a chip's priors, and
the estimate they give for one chip's audit of a model.

latency_ms = sum_j c_j * x_j, with x the FEATURES of edgedeploy.estimate.features:
  dense/depthwise/matmul GMACs on the accelerator / its effective rate for that op class,
  + elements written by the other accelerator nodes / their rate,
  + MB of weights and activations on the accelerator / its bandwidth,
  + a per-layer overhead per accelerator layer,
  + the fallback nodes' GMACs and elements at the CPU's float rates,
  + a copy-and-synchronise time per accelerator<->CPU transition, + MB crossing / copy bandwidth,
  + a fixed per-inference overhead.
The fitted c (data/params.json, scripts/estimate/fit.py) replace the priors' c for the chips
with enough published figures; a chip without them gets no estimate.
"""

from __future__ import annotations

import numpy as np

from edgedeploy.estimate.features import FEATURES


def prior_coefficients(spec: dict) -> dict[str, float]:
    """Coefficients (ms per unit of each feature) from one chip's entry of data/priors.json."""
    peak = float(spec["peak_gmac_per_s"])
    eff = spec["efficiency"]
    return {
        "acc_conv_gmac": 1000.0 / (peak * eff["conv"]),
        "acc_dw_gmac": 1000.0 / (peak * eff["depthwise"]),
        "acc_mm_gmac": 1000.0 / (peak * eff["matmul"]),
        "acc_elem_melem": 1000.0 / float(spec["elem_m_per_s"]),
        "acc_mbytes": 1.0 / float(spec["bandwidth_gb_per_s"]),  # 1 MB at B GB/s takes 1/B ms
        "acc_layers": float(spec["layer_overhead_ms"]),
        "cpu_gmac": 1000.0 / float(spec["cpu_gmac_per_s"]),
        "cpu_melem": 1000.0 / float(spec["cpu_melem_per_s"]),
        "transitions": float(spec["transition_ms"]),
        "cross_mbytes": 1.0 / float(spec["copy_gb_per_s"]),
        "fixed": float(spec["fixed_ms"]),
    }


def as_vector(values: dict[str, float]) -> np.ndarray:
    return np.array([float(values.get(k, 0.0)) for k in FEATURES])


def breakdown_ms(coefficients: dict[str, float], features: dict[str, float]) -> dict[str, float]:
    """Each feature's share of the estimate, in ms (the sum is the estimate)."""
    return {k: coefficients.get(k, 0.0) * features.get(k, 0.0) for k in FEATURES}


# What each term of the breakdown is, in the words a report uses.
TERM_GROUPS = {
    "accelerator compute": ("acc_conv_gmac", "acc_dw_gmac", "acc_mm_gmac", "acc_elem_melem"),
    "accelerator memory": ("acc_mbytes",),
    "per-layer overhead": ("acc_layers",),
    "fallback on the CPU": ("cpu_gmac", "cpu_melem"),
    "transitions": ("transitions", "cross_mbytes"),
    "fixed per inference": ("fixed",),
}


def grouped_ms(breakdown: dict[str, float]) -> dict[str, float]:
    return {name: sum(breakdown[k] for k in keys) for name, keys in TERM_GROUPS.items()}
