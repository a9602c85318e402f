"""`edgedeploy fix`: apply the rewrites that move nodes onto the accelerators of the given chips.

Greedy and honest: a rewrite is kept only if, for the requested chips together, it makes the
audit better on at least one chip and worse on none, and the rewritten model's outputs stay
within the rewrite's stated tolerance of the original's on the evaluation data. Approximations
(tanh GELU) are only tried with `allow_approx`, and their error is reported.

The audit score of a chip, compared lexicographically (lower is better): unsupported nodes,
nodes off the accelerator (fallback or float), transitions per inference. A rewrite counts as
better on a chip only when one of the first two drops; it is worse when the score rises.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import onnx

from edgedeploy.audit.engine import AuditResult, audit_model
from edgedeploy.audit.rules import Placement
from edgedeploy.fix.graph import Change, opset_of
from edgedeploy.fix.passes import REWRITES, Rewrite
from edgedeploy.interrupts import reraise_if_interrupted
from edgedeploy.measure.accuracy import fidelity
from edgedeploy.model import LoadedModel
from edgedeploy.model.intake import from_proto
from edgedeploy.records import record_fields

FIX_SCHEMA = "edgedeploy.fix/1"
# Random evaluation inputs when no --eval is given for a model that is not the sample.
RANDOM_EVAL_SAMPLES = 16
DEFAULT_EVAL_COUNT = 64


# The random inputs together may take at most this many bytes (fewer samples when one is large).
RANDOM_EVAL_MAX_BYTES = 256 * 1024 * 1024


def evaluation_feeds(model, eval_path: Path | None, eval_count: int, model_path: Path, allow_nonfinite: bool = False) -> tuple[list[dict], str]:
    """Per-sample feeds (batch as pinned) from --eval, the sample's held-out split, or seeded random data.

    The model's inputs are validated first (tensors, numeric types numpy can make, no zero-size
    dimension, a size that fits RANDOM_EVAL_MAX_BYTES for one sample), so the reference run only
    ever gets feeds it can take.
    """
    from edgedeploy.datasets import fixed_batch_of, load_dataset, model_input_specs
    from edgedeploy.errors import ModelError, OptionError
    from edgedeploy.sample import is_sample, sample_eval_path

    specs = model_input_specs(model)
    if not specs:
        raise ModelError(f"{model_path.name} has no inputs to feed; fix checks rewrites on the model's outputs for real inputs.")
    sample_bytes = 0
    for s in specs:
        zero = [axis for axis, d in enumerate(s.shape) if d == 0]
        if zero:
            raise ModelError(f"{model_path.name}: input '{s.name}' has a zero-size dimension at axis {zero[0]}, so it holds no data to evaluate rewrites on.")
        try:
            dtype = np.dtype(s.dtype)
        except TypeError as exc:
            raise ModelError(f"{model_path.name}: input '{s.name}' is of type {s.dtype}, which fix cannot make evaluation inputs of.") from exc
        if dtype.kind not in "biuf":
            raise ModelError(f"{model_path.name}: input '{s.name}' is of type {s.dtype}; fix evaluates numeric inputs only.")
        sample_bytes += int(np.prod([d or 1 for d in s.shape], dtype=np.int64)) * dtype.itemsize
    if sample_bytes > RANDOM_EVAL_MAX_BYTES:
        raise ModelError(
            f"{model_path.name}: one batch of its inputs takes {sample_bytes} bytes, more than the {RANDOM_EVAL_MAX_BYTES} "
            f"fix evaluates rewrites with; pin smaller shapes with --input-shape."
        )
    if eval_path is None and is_sample(model):
        eval_path = sample_eval_path()
    if eval_path is not None:
        ds = load_dataset(eval_path, specs, count=eval_count, allow_nonfinite=allow_nonfinite)
        batch = 1 if ds.whole else fixed_batch_of(specs)
        feeds = list(ds.batches(batch))
        if not feeds:
            raise OptionError(f"{ds.source} holds {len(ds)} samples, fewer than one batch of {batch}.")
        return feeds, f"{ds.source} ({len(feeds) * batch} samples)"
    samples = max(1, min(RANDOM_EVAL_SAMPLES, RANDOM_EVAL_MAX_BYTES // max(sample_bytes, 1)))
    rng = np.random.default_rng(0)
    feeds = []
    for _ in range(samples):
        feeds.append({s.name: rng.standard_normal([d or 1 for d in s.shape]).astype(np.dtype(s.dtype)) for s in specs})
    return feeds, f"{samples} random standard-normal inputs (seed 0; no --eval given)"

# Greedy rounds: each round tries every rewrite once on the current model.
MAX_ROUNDS = 5


def audit_score(result: AuditResult) -> tuple[int, int, int]:
    s = result.summary()
    return (s["unsupported"], s["fallback"] + s["float"], s["transitions_per_inference"])


@dataclass
class Attempt:
    rewrite: str
    applied: bool
    reason: str
    changes: list[Change] = field(default_factory=list)
    max_abs_error: float | None = None
    exact: bool = True

    def to_dict(self) -> dict:
        return {
            **record_fields(self, "rewrite", "applied", "exact", "reason", "max_abs_error"),
            "changes": [c.to_dict() for c in self.changes],
        }


@dataclass
class FixResult:
    original: LoadedModel
    fixed: LoadedModel
    attempts: list[Attempt]
    before: dict[str, AuditResult]
    after: dict[str, AuditResult]
    fidelity: dict
    eval_source: str

    def to_dict(self) -> dict:
        chips = {}
        for chip, before in self.before.items():
            after = self.after[chip]
            moved = []
            after_by_node = {n.node: n for n in after.nodes}
            for n in before.nodes:
                if n.placement is not Placement.ACCELERATOR and n.node not in after_by_node:
                    moved.append({"node": n.node, "op_type": n.op_type, "before": n.placement.value, "after": "rewritten"})
            chips[chip] = {
                "before": before.summary(),
                "after": after.summary(),
                "before_line": before.summary_line(),
                "after_line": after.summary_line(),
                "off_accelerator_before": [{"node": n.node, "op_type": n.op_type, "placement": n.placement.value, "reason": n.reason} for n in before.nodes if n.placement is not Placement.ACCELERATOR],
                "off_accelerator_after": [{"node": n.node, "op_type": n.op_type, "placement": n.placement.value, "reason": n.reason} for n in after.nodes if n.placement is not Placement.ACCELERATOR],
            }
        return {
            "schema": FIX_SCHEMA,
            "model": {"source": str(self.original.path), "sha256": self.original.sha256, "opset": opset_of(self.original.proto)},
            "fixed_model": {"sha256": self.fixed.sha256, "nodes": len(self.fixed.graph.node), "opset": opset_of(self.fixed.proto)},
            "opset_change": self.opset_change(),
            "applied": [a.to_dict() for a in self.attempts if a.applied],
            "not_applied": [a.to_dict() for a in self.attempts if not a.applied],
            "chips": chips,
            "fidelity": {"evaluation_data": self.eval_source, "per_output": self.fidelity},
        }


    def opset_change(self) -> dict | None:
        """When a kept rewrite needs a newer opset, the whole model was moved to it: from, to, and which rewrites did it."""
        before, after = opset_of(self.original.proto), opset_of(self.fixed.proto)
        if before == after:
            return None
        needs = {r.name: r.min_opset for r in REWRITES}
        by = [a.rewrite for a in self.attempts if a.applied and needs.get(a.rewrite, 0) > before]
        return {
            "from": before,
            "to": after,
            "by": by,
            "note": f"the whole model was moved from opset {before} to {after} with ONNX's version converter; the toolchain and runtime that read it must support opset {after}",
        }


def _run_reference(proto: onnx.ModelProto, feeds: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """The reference's outputs (ONNX Runtime fp32, CPU) on the feeds, in order (edgedeploy.measure.reference)."""
    from edgedeploy.errors import ModelError
    from edgedeploy.measure.reference import ReferenceError, ReferenceRunner

    from edgedeploy.toolchains.worker_arrays import leading_axis_is_batch

    shapes = {vi.name: tuple(d.dim_value if d.HasField("dim_value") else None for d in vi.type.tensor_type.shape.dim) for vi in proto.graph.input if vi.name in feeds[0]}
    # A feed of an input whose leading axis is no batch axis (a recurrent state) is one whole
    # sample: the feeds are stacked on a new axis (edgedeploy.datasets), the others joined.
    whole = {name for name, shape in shapes.items() if not leading_axis_is_batch(shape, list(shapes.values()))}
    inputs = {name: (np.stack if name in whole else np.concatenate)([feed[name] for feed in feeds]) for name in feeds[0]}
    try:
        return ReferenceRunner(proto).run(inputs).outputs
    except ReferenceError as exc:
        raise ModelError(f"The model does not run on its evaluation inputs: {exc}.") from exc


def _copy(proto: onnx.ModelProto) -> onnx.ModelProto:
    copy = onnx.ModelProto()
    copy.CopyFrom(proto)
    return copy


def fix_model(
    original: LoadedModel,
    rule_sets: dict,
    feeds: list[dict[str, np.ndarray]],
    eval_source: str,
    allow_approx: bool = False,
    only: list[str] | None = None,
    echo: Callable[[str], None] = lambda _: None,
    precisions: dict[str, str] | None = None,
) -> FixResult:
    """Rewrite `original` for the chips of `rule_sets` ({chip id: RuleSet}); see the module doc.

    `feeds`: the evaluation inputs, one dict per batch of the model's pinned batch size.
    `precisions`: the precision each chip compiles in ({chip id: "int8"}), for the audit's
    precision rules and the bytes crossing per inference; None audits precision-free.
    """
    precisions = precisions or {}

    def audit(model: LoadedModel, chip: str):
        return audit_model(model, rule_sets[chip], precisions.get(chip))

    candidates: list[Rewrite] = [r for r in REWRITES if (only is None or r.name in only)]
    before = {chip: audit(original, chip) for chip in rule_sets}
    reference = _run_reference(original.proto, feeds)
    current = original
    current_audit = before
    attempts: list[Attempt] = []
    tried_reasons: dict[str, Attempt] = {}
    for round_index in range(MAX_ROUNDS):
        improved = False
        for rewrite in candidates:
            trial_proto = _copy(current.proto)
            started = time.monotonic()
            try:
                changes = rewrite.apply(trial_proto)
            except Exception as exc:  # noqa: BLE001 - a pass that cannot handle this model is reported, not fatal
                reraise_if_interrupted(exc)
                tried_reasons[rewrite.name] = Attempt(rewrite.name, False, f"could not be applied: {type(exc).__name__}: {exc}", exact=rewrite.exact)
                continue
            if not changes:
                tried_reasons.setdefault(rewrite.name, Attempt(rewrite.name, False, "pattern not found", exact=rewrite.exact))
                continue
            if not rewrite.exact and not allow_approx:
                tried_reasons[rewrite.name] = Attempt(
                    rewrite.name, False, f"found {len(changes)} place(s), but it is an approximation: only with --allow-approx", changes, exact=False
                )
                continue
            try:
                trial = from_proto(trial_proto, current.path, None)
            except Exception as exc:  # noqa: BLE001 - an invalid result must never be kept
                reraise_if_interrupted(exc)
                tried_reasons[rewrite.name] = Attempt(rewrite.name, False, f"produced an invalid model: {exc}", changes, exact=rewrite.exact)
                continue
            trial_audit = {chip: audit(trial, chip) for chip in rule_sets}
            # Better means fewer nodes unsupported or off the accelerator; fewer transitions alone
            # (several accelerator nodes merged into one fallback node) is not a move onto it.
            better = [c for c in rule_sets if audit_score(trial_audit[c])[:2] < audit_score(current_audit[c])[:2]]
            worse = [c for c in rule_sets if audit_score(trial_audit[c]) > audit_score(current_audit[c])]
            if worse or not better:
                why = f"worse on {', '.join(worse)}" if worse else "moves no node onto an accelerator"
                tried_reasons[rewrite.name] = Attempt(rewrite.name, False, why, changes, exact=rewrite.exact)
                continue
            outputs = _run_reference(trial.proto, feeds)
            error = max(float(np.max(np.abs(outputs[k].astype(np.float64) - reference[k]))) for k in reference)
            if error > rewrite.max_abs_error:
                tried_reasons[rewrite.name] = Attempt(
                    rewrite.name, False, f"outputs moved by {error:.3g}, beyond its tolerance {rewrite.max_abs_error:g}", changes, error, rewrite.exact
                )
                continue
            echo(f"fix: {rewrite.name} applied ({len(changes)} place(s); better on {', '.join(better)}; max abs error {error:.3g}; {time.monotonic() - started:.2f} s)")
            attempts.append(Attempt(rewrite.name, True, f"better on {', '.join(better)}", changes, error, rewrite.exact))
            tried_reasons.pop(rewrite.name, None)
            current, current_audit = trial, trial_audit
            improved = True
        if not improved:
            break
    attempts += [a for name, a in tried_reasons.items() if not any(b.applied and b.rewrite == name for b in attempts)]
    final_outputs = _run_reference(current.proto, feeds)
    per_output = {k: fidelity(reference[k], final_outputs[k]) for k in reference}
    return FixResult(original, current, attempts, before, current_audit, per_output, eval_source)
