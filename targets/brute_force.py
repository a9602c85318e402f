"""TapResult.brute_force from a target's variant runs (scripts/accuracy/brute_force.py --chip):
shared by the targets whose worker returns one outputs file per variant (RKNN, eIQ).

A worker runs "every" (the model as quantised) first, then per group (one ONNX node's layers or
operators) "keep" (that group alone kept in float) and "alone" (that group alone quantised); a
variant the toolchain refused carries "error" instead of "outputs". Here each run is compared
with the float reference (ONNX Runtime's) on the same evaluation inputs.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

# A sweep starts no node's pair of variants after this many seconds (on RKNN each pair is two
# hybrid_quantization_step2 builds and two simulator runs); the nodes not reached are said.
DEADLINE_S = float(os.environ.get("EDGEDEPLOY_BRUTE_FORCE_DEADLINE_S", "2400"))


def with_producers(members: dict[str, list[str]], graph) -> dict[str, list[str]]:
    """Per node of `members` (ONNX node name: its layers or operators), its own members followed by those
    of the nodes producing its data inputs (initialisers are no data), without repeats. A node alone kept
    in float still reads an int8 tensor on a toolchain that quantises the tensor between two layers unless
    both are float: this is the fair single-node form there (docs/accuracy.md, brute force). A producer
    with no members of its own (a Relu the toolchain fused into the Conv before it) stands for its own
    producers, whose layers compute that tensor."""
    from edgedeploy.model.stats import node_names

    names = node_names(graph)
    constants = {i.name for i in graph.initializer}
    made_by = {out: name for name, node in zip(names, graph.node) for out in node.output if out}
    inputs_of = {name: [made_by[t] for t in node.input if t and t not in constants and t in made_by] for name, node in zip(names, graph.node)}

    def producing(name: str, seen: set) -> list[str]:
        found = []
        for producer in inputs_of[name]:
            if producer not in seen:
                seen.add(producer)
                found += members.get(producer) or producing(producer, seen)
        return found

    return {name: list(dict.fromkeys(members[name] + producing(name, {name}))) for name in names if name in members}


def float_reference(model_path: Path, measured, outputs: list[str]) -> dict:
    """The float model's `outputs` on the evaluation inputs (ONNX Runtime), one run for all of them."""
    from edgedeploy.measure.reference import ReferenceRunner

    found = ReferenceRunner(model_path).run(dict(measured.inputs)).outputs
    return {o: found[o] for o in outputs}


def per_sample(flat: np.ndarray, key: str) -> dict:
    """`key`_argmax and `key`_values of a run's first output ([samples, values]): per sample its largest
    element's index and its highest value (a detector's best anchor, as build's --metric-output and
    ESP-DL's brute force score it; a one-score output's own value)."""
    return {key + "_argmax": flat.argmax(axis=1).tolist(), key + "_values": flat.max(axis=1).tolist()}


def figures(variants: list[dict], groups: list[dict], reference: dict, outputs: list[str], count: int, op_type: dict, wanted: list[str]) -> dict:
    """TapResult.brute_force: `variants` as the worker returned them (every first), `groups` the
    measured nodes ({"node", "layers"}), `reference` the float outputs, `count` the samples."""
    from edgedeploy.accuracy import tap_numpy
    from edgedeploy.arrays import read_arrays

    def first(values: dict) -> np.ndarray:
        return values[outputs[0]].reshape(count, -1)

    runs = [(v, read_arrays(Path(v["outputs"]))) for v in variants if "outputs" in v]
    refused = {(v["group"], v["kind"]): v["error"] for v in variants if "error" in v}
    by_group: dict[int, dict] = {}
    for variant, got in runs[1:]:
        key = "all_but" if variant["kind"] == "keep" else "alone"
        by_group.setdefault(variant["group"], {}).update({key: {o: tap_numpy.moments(reference[o], got[o]) for o in outputs}, **per_sample(first(got), key)})
    # A node is ranked only when both its variants ran; one the toolchain refused is said with its reason.
    ops = [{"node": groups[i]["node"], "op_type": op_type[groups[i]["node"]], "layers": groups[i]["layers"], **found}
           for i, found in sorted(by_group.items()) if "all_but" in found and "alone" in found]
    every = runs[0][1]
    return {**per_sample(first(reference), "float"), **per_sample(first(every), "every"),
            "every": {o: tap_numpy.moments(reference[o], every[o]) for o in outputs}, "ops": ops,
            "without_layers": [n for n in wanted if n not in {g["node"] for g in groups}],
            "not_reached": [g["node"] for i, g in enumerate(groups) if i not in by_group and (i, "keep") not in refused],
            "refused": {f"{groups[i]['node']} ({kind})": error for (i, kind), error in refused.items()}}
