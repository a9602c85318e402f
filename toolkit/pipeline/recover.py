"""`build --recover`: the accuracy gates of --fail-on become goals, and when the int8 build misses
them the toolchain's own means are tried in order of cost until they hold or nothing is left.

The core owns the loop and the order (REPAIR_COSTS: calibration method, per-channel quantisation,
equalisation, bias correction, then mixed precision on the fewest nodes the accuracy diagnosis
ranks first); each target only declares its knobs (Target.repair_knobs). Each stage starts from
the best attempt so far, so a better calibration is kept under the mixed precision that follows
(best by merit; mixed precision, while no attempt meets the task-metric goal, from the highest
lowest SNR too: stage_starts).
The first attempt that meets every gate wins (attempts go cheapest first, so it is the cheapest
that does) and replaces the artifact; every attempt, with its figures and its cost, goes into the
report's `recovery` section (schema recovery-1.json). Attempts are built beside the artifact in
`.<chip>.recover/` and removed at the end.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from edgedeploy.errors import EdgedeployError
from edgedeploy.report.diagnosis import attempts_table, show_attempt_figures  # noqa: F401 - attempts_table: the CLI prints it
from edgedeploy.gates import Gate, GateResult, evaluate_build
from edgedeploy.targets.base import RANKED_NODES, REPAIR_COSTS, RepairKnob, TargetOptions

RECOVERY_SCHEMA = "edgedeploy.recovery/1"
# The gates --recover turns into goals; the others (sizes) are judged on every attempt too.
GOAL_GATES = ("accuracy-drop", "snr", "cosine")


@dataclass
class Attempt:
    """One build tried: what it changed, what it reached, what it costs."""

    id: str
    cost: str  # a REPAIR_COSTS class, or "as built"
    options: TargetOptions
    changes: dict
    artifact: Path | None = None
    gates: list[GateResult] = field(default_factory=list)
    figures: dict = field(default_factory=dict)
    cost_figures: dict = field(default_factory=dict)
    error: str | None = None

    @property
    def met(self) -> bool:
        return self.artifact is not None and bool(self.gates) and all(g.passed for g in self.gates)

    def merit(self) -> tuple:
        """What makes one attempt better than another that misses too: more gates held, a smaller
        drop of the task metric, a higher lowest SNR."""
        if self.artifact is None:
            return (-1, -math.inf, -math.inf)
        drop = self.figures.get("task_metric_drop_pp")
        snr = self.figures.get("lowest_snr_db")
        return (sum(g.passed for g in self.gates), -(drop if drop is not None else 0.0), snr if snr is not None else -math.inf)

    def to_dict(self, flags: dict[str, str]) -> dict:
        return {
            "id": self.id,
            "cost": self.cost,
            "changes": {name: _jsonable(value) for name, value in self.changes.items()},
            "flags": _flags_line(self.changes, flags),
            "status": "built" if self.artifact is not None else "failed",
            "reason": self.error,
            "met": self.met,
            "figures": self.figures,
            "cost_figures": self.cost_figures,
            "gates": [g.to_dict() for g in self.gates],
        }


@dataclass
class Recovery:
    met: bool
    artifact: Path  # the artifact the command leaves (the winner, or the build as it was)
    section: dict  # the report's `recovery` section
    sentence: str  # one line: what won, or why the goals cannot be met
    # The accuracy diagnosis recover ran to rank the nodes for mixed precision (of a failing attempt,
    # named in its `attempt`), None when no stage needed it: the report keeps it for its SNR curve.
    diagnosis: dict | None = None


@dataclass
class RecoverPlan:
    """What the loop needs from the command: how to build one attempt, and how to diagnose one."""

    target: object
    chip: object
    precision: str
    options: TargetOptions
    gates: list[Gate]
    build: Callable[[Path, TargetOptions], Path]  # (out root, options) -> the attempt's artifact
    diagnose: Callable[[Path], dict | None]  # artifact -> its accuracy_diagnosis document
    echo: Callable[[str], None]


def goals_of(gates: list[Gate]) -> list[Gate]:
    return [g for g in gates if g.kind.key in GOAL_GATES]


def recover(initial: Path, plan: RecoverPlan) -> Recovery:
    """Try the target's knobs, cheapest first, from the build `initial` that missed its goals."""
    initial = Path(initial)
    scratch = initial.parent / f".{initial.name}.recover"
    shutil.rmtree(scratch, ignore_errors=True)
    knobs = plan.target.repair_knobs(plan.chip, plan.precision, plan.options)
    flags = {f.name: meta["flag"] for f, meta in plan.options.declared()}
    attempts = [_judged(Attempt("a0", "as built", plan.options, {}, artifact=initial), plan, knobs)]
    ranking, diagnosis = None, None
    unchecked = [g for g in attempts[0].gates if g.value is None and g.gate.kind.key in GOAL_GATES]
    if unchecked:
        # No attempt could be judged either: the figure is missing, not bad.
        sentence = f"recover: the goals cannot be met on {plan.chip.id}: they cannot be checked on this build ({unchecked[0].reason})"
        return Recovery(False, initial, _section(attempts, knobs, flags, plan, None, sentence), sentence)
    try:
        for cost in REPAIR_COSTS:
            for best in stage_starts(attempts, cost):  # each costlier stage starts from the best so far
                for knob in (k for k in knobs if k.cost == cost and not k.unavailable):
                    if knob.values == RANKED_NODES and ranking is None:
                        diagnosis = _diagnosis_of(best, plan)
                        ranking = ranked_nodes(diagnosis, plan.chip.id)
                    groups = _groups_of(knob, initial / "model.onnx", ranking or [])
                    for value in _values_to_try(knob, best.options, groups):
                        attempt = _try(len(attempts), knob, value, best, scratch, plan, knobs)
                        attempts.append(attempt)
                        if attempt.met:
                            return dataclasses.replace(_won(initial, attempt, attempts, knobs, flags, plan, scratch), diagnosis=diagnosis)
        return dataclasses.replace(_lost(initial, max(attempts, key=Attempt.merit), attempts, knobs, flags, plan), diagnosis=diagnosis)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def stage_starts(attempts: list[Attempt], cost: str) -> list[Attempt]:
    """The attempts a stage builds on: the best by merit so far; for mixed precision, while no
    attempt meets the task-metric goal (or there is none), then also the highest lowest SNR among
    the attempts holding the most gates, where that is another attempt. A drop that misses the goal
    everywhere has not told the calibrations apart on the way to it, and which one mixed precision
    repairs best is not known beforehand: on rk3588 float16 nodes did better on the higher-SNR
    calibration for a face detector (mmse, 1.44 pp at 15.0 dB, against normal's 1.03 pp at 11.0 dB)
    and on the smaller-drop one for a voice detector (kl, 1.28 pp at 9.9 dB, against normal's 2.14 pp
    at 10.3 dB): docs/accuracy.md. The ranking stays the diagnosis of the first start."""
    best = max(attempts, key=Attempt.merit)
    task_met = any(g.passed for a in attempts for g in a.gates if g.gate.kind.key == "accuracy-drop")
    built = [a for a in attempts if a.artifact is not None]
    if cost != "mixed-precision" or task_met or not built:
        return [best]
    most = max(sum(g.passed for g in a.gates) for a in built)
    held = [a for a in built if sum(g.passed for g in a.gates) == most and a.figures.get("lowest_snr_db") is not None]
    clearest = max(held, key=lambda a: a.figures["lowest_snr_db"]) if held else best
    return [best] if clearest is best else [best, clearest]


def _values_to_try(knob: RepairKnob, base: TargetOptions, groups: list[tuple[str, ...]]) -> list:
    """The values of one knob to try from `base`: its declared ones, less the one `base` already has;
    for RANKED_NODES, the nodes of the first 1, 2, 4, ... ranked groups (a ranked node with the
    layers computing its input, for a knob that asks for them), added to any the user gave."""
    current = getattr(base, knob.option)
    if knob.values != RANKED_NODES:
        return [v for v in knob.values if v != current]
    given = tuple(current or ())
    fresh = [g for g in groups if any(n not in given for n in g)]
    most = min(len(fresh), knob.max_nodes)
    counts, count = [], 1
    while count < most:
        counts.append(count)
        count *= 2
    counts.append(most)
    values = []
    for n in dict.fromkeys(c for c in counts if c > 0):
        chosen = list(given)
        for group in fresh[:n]:
            chosen += [name for name in group if name not in chosen]
        values.append(tuple(chosen))
    return values


def _try(index: int, knob: RepairKnob, value, base: Attempt, scratch: Path, plan: RecoverPlan, knobs) -> Attempt:
    changes = {**base.changes, knob.option: value}
    attempt = Attempt(f"a{index}", knob.cost, dataclasses.replace(base.options, **{knob.option: value}), changes)
    plan.echo(f"recover: attempt {attempt.id} ({knob.cost}): {_describe_changes(changes)}")
    try:
        attempt.artifact = plan.build(scratch / attempt.id, attempt.options)
    except EdgedeployError as exc:
        attempt.error = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        plan.echo(f"recover: attempt {attempt.id} failed: {attempt.error}")
        return attempt
    _judged(attempt, plan, knobs)
    unchecked = next((g for g in attempt.gates if g.value is None and g.gate.kind.key in GOAL_GATES), None)
    if unchecked is not None:
        attempt.error = unchecked.reason  # built, but its figures could not be had: say why
    plan.echo(f"recover: attempt {attempt.id}: {_figures_line(attempt)}; goals {'met' if attempt.met else 'missed'}")
    return attempt


def _judged(attempt: Attempt, plan: RecoverPlan, knobs: list[RepairKnob]) -> Attempt:
    """The attempt's gates, figures (task metric, lowest SNR and cosine) and cost, from its report."""
    report = json.loads((attempt.artifact / "report.json").read_text())
    manifest = json.loads((attempt.artifact / "manifest.json").read_text())
    attempt.gates = evaluate_build(plan.gates, report, manifest)
    accuracy = report.get("accuracy") or {}
    fidelity = [f for f in (accuracy.get("fidelity") or {}).values()]
    drop = accuracy.get("delta_percentage_points")
    if drop is None and accuracy.get("delta") is not None:
        drop = 100.0 * float(accuracy["delta"])  # AUROC's change in points, as the accuracy-drop gate reads it
    key = {"auroc": "macro_auroc"}.get(accuracy.get("metric") or "", accuracy.get("metric") or "")
    attempt.figures = {
        "task_metric": accuracy.get("metric"),
        "task_metric_after": (accuracy.get("after") or {}).get(key, None),
        "task_metric_drop_pp": round(-float(drop), 4) + 0.0 if drop is not None else None,  # + 0.0: no -0.0
        "lowest_snr_db": _finite(min((f["snr_db"] for f in fidelity), default=None)),
        "lowest_cosine": min((f["cosine"] for f in fidelity), default=None),
    }
    attempt.cost_figures = {
        "model_size_bytes": ((report.get("convert") or {}).get("size_bytes") or {}).get("model"),
        "nodes_off_int8": _nodes_off_int8(attempt, knobs),
        "latency_ms": None,
        "latency": "not measured: a build times nothing; `edgedeploy measure` the artifact on the chip",
    }
    on_chip = plan.target.repair_costs(report) if hasattr(plan.target, "repair_costs") else {}
    if on_chip:
        attempt.cost_figures["toolchain"] = on_chip
    return attempt


def _nodes_off_int8(attempt: Attempt, knobs: list[RepairKnob]) -> int:
    """The nodes an attempt's mixed precision takes off int8: the ranked nodes it names, or every node
    of the model for a whole-model wider type the attempt changed (RepairKnob.every_node)."""
    ranked = [k.option for k in knobs if k.values == RANKED_NODES and not k.unavailable]
    if any(k.every_node and k.option in attempt.changes for k in knobs):
        import onnx

        return len(onnx.load(str(attempt.artifact / "model.onnx"), load_external_data=False).graph.node)
    return sum(len(getattr(attempt.options, name) or ()) for name in ranked)


def _diagnosis_of(best: Attempt, plan: RecoverPlan) -> dict | None:
    """The accuracy diagnosis of the best attempt so far (it missed the goals), stamped with the
    attempt it is of; None when it could not run (then no mixed precision)."""
    plan.echo(f"recover: diagnosing attempt {best.id} to rank the nodes for mixed precision")
    try:
        document = plan.diagnose(best.artifact)
    except EdgedeployError as exc:
        plan.echo(f"recover: the diagnosis could not run ({str(exc).splitlines()[0]}); no mixed precision")
        return None
    if not document:
        return None
    # Its artifact folder is the attempt's, gone (or, for a0, now the winner's) when recover ends.
    return {**document, "attempt": {"id": best.id, "changes": _describe_changes(best.changes) or "as built"}}


def ranked_nodes(document: dict | None, chip_id: str) -> list[str]:
    """The nodes a diagnosis ranks first on the chip's path: the first sharp fall, then the worst
    alone, then the nodes with a stated cause, then the others whose accumulated SNR falls."""
    path = next((p for p in (document or {}).get("paths", []) if p.get("path") == chip_id), None)
    if path is None:
        return []
    ranked = list(path.get("ranked") or [])  # the first sharp fall and the worst alone, in the diagnosis's order
    ranked += [(path.get("first_sharp_drop") or {}).get("node")]
    ranked += [r.get("node") for r in path.get("worst_isolated") or []]
    ranked += [c.get("node") for c in path.get("causes") or []]
    # Then the rest by how far each one's accumulated SNR falls below its inputs': where no node
    # falls sharply the error builds up over many (a transformer's LayerNorms and MatMuls on eIQ).
    falls = sorted((r for r in path.get("nodes") or [] if (r.get("drop_db") or 0) > 0), key=lambda r: -r["drop_db"])
    ranked += [r.get("node") for r in falls]
    return list(dict.fromkeys(n for n in ranked if n))


def _groups_of(knob: RepairKnob, model_path: Path, ranked: list[str]) -> list[tuple[str, ...]]:
    """The ranked nodes as the knob takes them: alone, with the chain computing their input back to
    the first layer with weights (`producers`), or with the nodes producing their data inputs
    (`input_producers`)."""
    if knob.producers:
        return _with_producers(model_path, ranked)
    if knob.input_producers:
        return _with_input_producers(model_path, ranked)
    return [(n,) for n in ranked]


def _graph_index(model_path: Path):
    """(node by name, (name, node) by the tensor it writes, the initialisers' names) of an ONNX file."""
    import onnx

    from edgedeploy.model.stats import node_names

    graph = onnx.load(str(model_path), load_external_data=False).graph
    names = node_names(graph)
    producer = {out: (name, node) for name, node in zip(names, graph.node) for out in node.output}
    return dict(zip(names, graph.node)), producer, {i.name for i in graph.initializer}


def _with_producers(model_path: Path, ranked: list[str]) -> list[tuple[str, ...]]:
    """Each ranked node preceded by the nodes that compute its input, back to the first with weights
    (an initializer input: Conv, Gemm, MatMul with a constant): ReLU -> its BatchNorm -> its Conv."""
    by_name, producer, weights = _graph_index(model_path)
    groups: list[tuple[str, ...]] = []
    for name in ranked:
        chain, node = [name], by_name.get(name)
        while node is not None and not any(i in weights for i in node.input):
            data = [i for i in node.input if i in producer]
            if len(data) != 1:
                break
            upstream, node = producer[data[0]]
            chain.append(upstream)
        groups.append(tuple(reversed(chain)))
    return groups


def _with_input_producers(model_path: Path, ranked: list[str]) -> list[tuple[str, ...]]:
    """Each ranked node preceded by the nodes that write its data inputs (not initialisers): on a
    toolchain that keeps the tensor between two layers in int8 unless both are in the wider type,
    the node alone would still read an int8 tensor (docs/accuracy.md, the brute force's second form).
    Constant nodes write weights, not layers: they are left out."""
    by_name, producer, weights = _graph_index(model_path)
    groups: list[tuple[str, ...]] = []
    for name in ranked:
        node = by_name.get(name)
        inputs = [i for i in (node.input if node is not None else ()) if i and i not in weights and i in producer]
        writers = [producer[i][0] for i in inputs if producer[i][1].op_type != "Constant"]
        groups.append(tuple(dict.fromkeys(writers + [name])))
    return groups


def _won(initial: Path, winner: Attempt, attempts, knobs, flags, plan: RecoverPlan, scratch: Path) -> Recovery:
    """The winner replaces the build that missed its goals (both were made by this command)."""
    kept = scratch / "as-built"
    os.replace(initial, kept)
    os.replace(winner.artifact, initial)
    winner.artifact = initial
    sentence = f"recover: goals met by attempt {winner.id} ({_describe_changes(winner.changes)}): {_figures_line(winner)}"
    return Recovery(True, initial, _section(attempts, knobs, flags, plan, winner, sentence), sentence)


def _lost(initial: Path, best: Attempt, attempts, knobs, flags, plan: RecoverPlan) -> Recovery:
    tried = sorted({a.cost for a in attempts[1:]}, key=REPAIR_COSTS.index)
    lacking = [f"{k.cost} ({k.unavailable})" for k in knobs if k.unavailable]
    if not knobs:
        why = f"the {plan.target.name} target declares no means of repair"
    else:
        why = f"tried {len(attempts) - 1} attempt(s) ({', '.join(tried) or 'none'})"
        if lacking:
            why += "; not available: " + "; ".join(lacking)
        # An attempt that failed (a time-out, a crash) is no answer from the toolchain: say which, and why.
        silent = [f"{a.id} ({_describe_changes(a.changes)}: {a.error})" for a in attempts[1:] if a.error]
        if silent:
            why += "; no figures from " + "; ".join(silent)
    sentence = f"recover: the goals cannot be met on {plan.chip.id}: {why}; the best, {best.id} ({_describe_changes(best.changes) or 'as built'}), reaches {_figures_line(best)}"
    return Recovery(False, initial, _section(attempts, knobs, flags, plan, None, sentence), sentence)


def _section(attempts, knobs, flags, plan: RecoverPlan, winner: Attempt | None, sentence: str) -> dict:
    return {
        "schema": RECOVERY_SCHEMA,
        "goals": [g.to_dict() for g in plan.gates],
        "met": winner is not None,
        "chosen": winner.id if winner is not None else None,
        "sentence": sentence.removeprefix("recover: "),
        "order": list(REPAIR_COSTS),
        "knobs": [
            {"option": k.option, "flag": flags.get(k.option, k.option), "cost": k.cost, "what": k.what,
             "values": k.values if isinstance(k.values, str) else [_jsonable(v) for v in k.values], "unavailable": k.unavailable or None}
            for k in knobs
        ],
        "attempts": [a.to_dict(flags) for a in attempts],
    }


# -- small helpers ----------------------------------------------------------------------------


def _finite(value):
    return None if value is None or not math.isfinite(value) else round(float(value), 3)


def _jsonable(value):
    return list(value) if isinstance(value, tuple) else value


def _flags_line(changes: dict, flags: dict[str, str]) -> str:
    parts = []
    for name, value in changes.items():
        flag = flags.get(name, name)
        values = value if isinstance(value, (tuple, list)) else [value]
        parts += [f"{flag} {v}" if not isinstance(v, bool) else flag for v in values]
    return " ".join(parts)


def _describe_changes(changes: dict) -> str:
    return ", ".join(f"{name}={','.join(map(str, v)) if isinstance(v, (tuple, list)) else v}" for name, v in changes.items())


def _figures_line(attempt: Attempt) -> str:
    return show_attempt_figures(attempt.figures)
