"""Where along the graph int8 goes wrong: the first sharp fall of the accumulated SNR, and the worst nodes alone.

Input: a path's node records in the graph's order (see edgedeploy.accuracy), each with its
accumulated and isolated fidelity already computed (`fidelity_accumulated`, `fidelity_isolated`).
"""

from __future__ import annotations

import math

# A node "falls sharply" when its accumulated SNR is this much below the worst of the nodes
# feeding it...
SHARP_DROP_DB = 10.0
# ... and ends under this: 30 dB is an output noise amplitude of about 3% of the signal's RMS,
# the figure `--int16-layers auto` aims at (docs/espdl.md); a fall from 70 to 45 dB is harmless.
ALARM_SNR_DB = 30.0
# A graph input (or a tensor nobody quantised) counts as this clean: an int8 step of the first
# layer alone gives 35-50 dB, so falls from "perfect" are measured from a finite level.
CLEAN_SNR_DB = 60.0
# How many of the worst nodes alone are named.
WORST_COUNT = 3


def _snr(record: dict, key: str) -> float | None:
    figures = record.get(key)
    return None if not figures else figures.get("snr_db")


def upstream_snr(record: dict, by_tensor: dict, graph_inputs: set[str] | None = None) -> float | None:
    """The worst accumulated SNR of the records producing this node's inputs (CLEAN_SNR_DB for graph inputs).

    With `graph_inputs` given, an input that is neither a graph input nor a record's tensor (the
    second output of a Split, say: a record is of its node's first output) makes the upstream
    unknown (None): the noisy input may be that one, and the others (an axes constant, exact)
    would make a fall appear where none is.
    """
    values = []
    for name in record.get("inputs") or []:
        producer = by_tensor.get(name)
        snr = _snr(producer, "fidelity_accumulated") if producer else None
        if snr is not None:
            values.append(min(snr, CLEAN_SNR_DB))
        elif graph_inputs is None or name in graph_inputs:
            values.append(CLEAN_SNR_DB)
        else:
            return None
    return min(values) if values else CLEAN_SNR_DB


def add_drops(records: list[dict], graph_inputs: set[str] | None = None) -> None:
    """Set each record's `drop_db`: how far its accumulated SNR falls below the nodes feeding it."""
    by_tensor = {r["tensor"]: r for r in records if r.get("tensor")}
    for record in records:
        snr = _snr(record, "fidelity_accumulated")
        upstream = upstream_snr(record, by_tensor, graph_inputs)
        if snr is None or upstream is None:
            record["drop_db"] = None
            continue
        record["drop_db"] = max(0.0, upstream - min(snr, CLEAN_SNR_DB))


# Nodes that hold parameters, not activations: a weight written as a Constant node (Silero VAD's
# inlined branches) is quantised as a weight, and its error belongs to the node that reads it,
# whose isolated figure includes it; ranked itself, a weight "falls" from clean at every layer.
PARAMETER_OPS = frozenset({"Constant"})


def _activation_records(records: list[dict]) -> list[dict]:
    return [r for r in records if r.get("op_type") not in PARAMETER_OPS]


def first_sharp_drop(records: list[dict]) -> dict | None:
    """The first record (graph order) whose accumulated SNR falls by SHARP_DROP_DB or more to under ALARM_SNR_DB."""
    for record in _activation_records(records):
        snr = _snr(record, "fidelity_accumulated")
        drop = record.get("drop_db")
        if snr is not None and drop is not None and drop >= SHARP_DROP_DB and snr < ALARM_SNR_DB:
            return record
    return None


def worst_isolated(records: list[dict], count: int = WORST_COUNT) -> tuple[list[dict], str]:
    """The nodes with the lowest isolated SNR, and what ranked them.

    Where the toolchain offers no isolated figure, the nodes that add the most accumulated error
    (`drop_db`) stand in, and the second value says so.
    """
    records = _activation_records(records)
    isolated = [r for r in records if _snr(r, "fidelity_isolated") is not None]
    if isolated:
        ranked = sorted(isolated, key=lambda r: (_snr(r, "fidelity_isolated"), r["node"]))
        return [r for r in ranked if not math.isinf(_snr(r, "fidelity_isolated"))][:count], RANKED_BY_ISOLATED
    dropped = [r for r in records if r.get("drop_db")]
    ranked = sorted(dropped, key=lambda r: (-r["drop_db"], r["node"]))
    return ranked[:count], "SNR drop in the accumulated run (no isolated figures from this toolchain)"


# A node alone this much worse (isolated SNR lower) than the first sharp fall alone goes before it:
# a fall is measured from CLEAN_SNR_DB, so an early node with a moderate error of its own is the
# first to fall under ALARM_SNR_DB, while a node whose own quantisation leaves a few dB is where a
# wider type gains most. Silero VAD on ONNX Runtime's QDQ path: the STFT's Pow falls first; the
# encoder's fourth Conv, far worse alone, is brute force's first (kept float: 13.9 -> 19.6 dB);
# ranked by the fall it was 35th of 51. mnist_mobilenet_v3_small on esp32s3: the stem Conv falls
# to 27.8 dB (its own clip; brute force's 79th of 141), the Hardswish Mul after it alone gives
# 2.1 dB and is brute force's first (kept float alone: 1.1 -> 16.1 dB).
OWN_ERROR_MARGIN_DB = SHARP_DROP_DB


RANKED_BY_ISOLATED = "isolated SNR"  # worst_isolated's answer where the path measured each node alone


def _left_in_float(record: dict) -> bool:
    """A node the path computes in float (ONNX Runtime's QDQ leaves a Sqrt or a Pow unquantised): a
    wider type for it changes nothing; its figures are those of the quantised tensors around it."""
    return str(record.get("precision") or "").startswith("float")


def worst_referred(records: list[dict], count: int = WORST_COUNT) -> list[dict]:
    """The nodes whose own error, put alone into the float model, leaves the lowest output SNR
    (referred.refer_to_outputs); none where the path was not referred to its outputs."""
    referred = [r for r in _activation_records(records) if _snr(r, "fidelity_referred") is not None
                and not math.isinf(_snr(r, "fidelity_referred")) and not _left_in_float(r)]
    return sorted(referred, key=lambda r: (_snr(r, "fidelity_referred"), r["node"]))[:count]


def ranked(first: dict | None, worst: list[dict], referred: list[dict] | None = None) -> list[dict]:
    """The culprits, the one keeping in a wider type most likely repairs first.

    With errors referred to the outputs, the nodes whose own error costs the outputs most come
    first (an error at a node's output says nothing of what the graph after it does to it: the
    power spectrum's Add before a Sqrt, silero_vad_16k on rk3588, docs/accuracy.md), then the
    first sharp fall and the worst alone. Without them: the first sharp fall, then the worst
    alone; a worst-alone node whose isolated SNR is OWN_ERROR_MARGIN_DB or more below the first
    fall's own goes before it."""
    if referred:
        ordered = list(referred) + ([first] if first is not None else []) + list(worst)
        unique: list[dict] = []
        for record in ordered:
            if all(record is not r for r in unique):
                unique.append(record)
        return unique
    if first is None:
        return list(worst)
    own = _snr(first, "fidelity_isolated")
    before = [w for w in worst if w is not first and own is not None and _snr(w, "fidelity_isolated") is not None
              and _snr(w, "fidelity_isolated") <= own - OWN_ERROR_MARGIN_DB]
    after = [w for w in worst if w is not first and w not in before]
    return before + [first] + after
