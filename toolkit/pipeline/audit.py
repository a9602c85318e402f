"""`edgedeploy audit`: choosing chips, loading their rules, confirming with the toolchains.

Kept apart from the CLI so scripts and other commands (build, report) can produce the same
report dict.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from edgedeploy.errors import EdgedeployError, NotAvailableYet, OptionError, ToolchainMissing
from edgedeploy.progress import StepStarted
from edgedeploy.targets import all_targets, find_chip
from edgedeploy.targets.base import Capability


@dataclass
class ChipChoice:
    target: object
    chip: object


def has_rules(target) -> bool:
    """Whether the target declares rules (Capability.AUDIT; the registry checked the declaration)."""
    return target.has(Capability.AUDIT)


def resolve_chips(values: tuple[str, ...] | list[str]) -> tuple[list[ChipChoice], list[dict]]:
    """The chips `--target` names ('all' or none: every chip of every target), and those without rules.

    A chip named explicitly whose target has no rules yet is an error; under 'all' it is listed
    as "no rules yet".
    """
    wanted = [v for value in values for v in value.split(",") if v.strip()] or ["all"]
    chips: list[ChipChoice] = []
    no_rules: list[dict] = []
    seen: set[str] = set()
    for value in wanted:
        if value.strip().lower() == "all":
            for target in all_targets():
                if not has_rules(target):
                    if target.id not in {m["target"] for m in no_rules}:
                        no_rules.append({"target": target.id, "target_name": target.name, "chips": [c.id for c in target.chips], "reason": "no rules yet"})
                    continue
                for chip in target.chips:
                    if chip.id not in seen:
                        seen.add(chip.id)
                        chips.append(ChipChoice(target, chip))
            continue
        target, chip = find_chip(value)
        if not has_rules(target):
            raise OptionError(f"The {target.name} target declares no audit rules, so {chip.id} cannot be audited.")
        if chip.id not in seen:
            seen.add(chip.id)
            chips.append(ChipChoice(target, chip))
    return chips, no_rules


def rules_for(target, chip_id: str, precision: str):
    """The target's RuleSet for a chip in the precision audited."""
    return target.rule_set(chip_id, precision)


def chip_precision(chip, requested: str | None, explicit: bool) -> tuple[str, list[str]]:
    """The precision to audit `chip` in, and a note when the requested one does not apply to it."""
    if not requested:
        return chip.precisions[0], []
    if requested in chip.precisions:
        return requested, []
    if explicit:
        raise OptionError(f"{chip.id} does not run {requested}; it runs {', '.join(chip.precisions)}.")
    return chip.precisions[0], [f"{requested} is not a precision of {chip.id}; audited in {chip.precisions[0]}."]


def audit_chips(
    model_path: Path,
    input_shapes: dict,
    chips: list[ChipChoice],
    no_rules: list[dict],
    precision: str | None = None,
    fail_on: str | None = None,
    by: str = "op",
    confirm: bool = False,
    calib: str | None = None,
    echo: Callable[[str], None] = lambda s: None,
    detail: bool = False,
    processes: int = 1,
) -> dict:
    """Load the model once, audit it on every chip, optionally confirm with toolchains; the report dict.

    `detail`: every node of every chip in the report (else, per chip, those with something to say;
    edgedeploy.audit.report).
    `processes`: 2 runs ONNX's checker, and audits the chips of different toolchains, in a second
    process where that is possible (edgedeploy.forked, audit_in_two_processes; the chips not with
    `confirm`); the report is the same as with 1.
    """
    from edgedeploy.audit.report import build_report
    from edgedeploy.model import load_model
    from edgedeploy.model.intake import with_batch_pinned

    model = load_model(model_path, input_shapes, second_process=processes > 1)
    # Shapes must be static for the bytes crossing; a dynamic batch is audited at batch 1, as
    # every target here compiles it.
    pinned = with_batch_pinned(model)
    audited = pinned or model
    assumed = {**audited.pinned, **audited.auto_pinned}
    notes_all = [f"dynamic batch pinned to 1 for the audit ({', '.join(pinned.auto_pinned)})"] if pinned else []
    groups = toolchain_groups(chips) if processes > 1 and not confirm else None
    # What every chip shares is made before a fork, so both processes have it.
    shared, estimator = shared_by_every_chip(audited, fork=groups is not None)
    explicit = len(chips) == 1

    def audit_all(group: list[int], as_parts: bool) -> list[tuple[int, object]]:
        """(index in `chips`, its ChipAudit, or its no-rules entry) for the chips of `group`;
        `as_parts`: each audit already made into its report parts (to send from a second process)."""
        done = []
        for i in group:
            done.append((i, audit_one(audited, shared, chips[i], precision, explicit, notes_all, estimator)))
        if as_parts:
            from edgedeploy.audit.report import ChipAudit, report_parts

            audits = [(i, ca) for i, ca in done if isinstance(ca, ChipAudit)]
            made = report_parts([ca for _, ca in audits], detail, by, matrix=len(chips) > 1)
            done = [(i, found) for i, found in done if not isinstance(found, ChipAudit)] + [(i, parts) for (i, _), parts in zip(audits, made)]
        return done

    if groups is None:
        done = audit_all(list(range(len(chips))), as_parts=False)
    else:
        done = audit_in_two_processes(groups, audit_all)
    reported = []
    for _, found in done:
        if isinstance(found, dict):
            no_rules.append(found)
        else:
            reported.append(found)
    if confirm:
        for ca in reported:
            ca.confirm = confirm_chip(ca, audited, chips, calib, single=explicit, echo=echo)
    return build_report(audited, reported, no_rules, by=by, fail_on=fail_on, assumed_shapes=assumed, detail=detail)


def chip_estimator(model, costs: list | None = None) -> Callable:
    """estimate(audit result, target) -> the chip's latency estimate as a dict (edgedeploy.estimate):
    the model's node costs (`costs`, when the caller has them) and the fitted parameters are read
    once for every chip. Cheap: no toolchain runs."""
    from edgedeploy.estimate import estimate_chip, load_params, node_costs, toolchain_estimate_entry

    costs, params = node_costs(model) if costs is None else costs, load_params()

    def estimate(result, target) -> dict:
        found = estimate_chip(costs, result, params)
        found.toolchain_estimate = toolchain_estimate_entry(target, result.chip)
        return found.to_dict()

    return estimate


def shared_by_every_chip(model, fork: bool) -> tuple:
    """(ChipIndependent(model), chip_estimator(model)): the node views, edges and memos every
    chip's audit shares, and its latency estimator. With `fork`, the model's node costs, which
    only the estimates read, are worked out meanwhile in a forked child: the second CPU is idle
    while this process makes the views (20 of 100 ms on DenseNet-121)."""
    from edgedeploy.audit.engine import ChipIndependent

    costing = _node_costs_in_child(model) if fork else None
    try:
        shared = ChipIndependent(model)
        costs = costing.result() if costing is not None else None
    finally:
        if costing is not None:
            costing.close()
    return shared, chip_estimator(model, costs)


def _node_costs_in_child(model):
    """edgedeploy.estimate.node_costs(model) running in a forked child (a ForkedCall, whose
    result() is None if the child failed), or None where no child can be forked."""
    from edgedeploy import forked
    from edgedeploy.estimate import node_costs

    return forked.ForkedCall(lambda: node_costs(model)) if forked.available() else None


def audit_one(model, shared, choice: ChipChoice, precision: str | None, explicit: bool, notes_all: list[str], estimator: Callable | None = None):
    """One chip's ChipAudit, or its no-rules entry (a dict) when its target has no rules for it;
    `estimator` (chip_estimator): the chip's latency estimate goes into the ChipAudit too."""
    from edgedeploy.audit.engine import audit_model
    from edgedeploy.audit.report import ChipAudit

    target, chip = choice.target, choice.chip
    chosen, notes = chip_precision(chip, precision, explicit)
    try:
        rules = rules_for(target, chip.id, chosen)
    except KeyError:
        return {"target": target.id, "target_name": target.name, "chips": [chip.id], "reason": "no rules for this chip yet"}
    result = audit_model(model, rules, chosen, shared=shared)
    estimate = estimator(result, target) if estimator is not None else None
    return ChipAudit(result, target.name, chip.name, notes=notes_all + notes, rules_notes=list(rules.notes), estimate=estimate)


def toolchain_groups(chips: list[ChipChoice]) -> list[list[int]] | None:
    """The chips (indices) by toolchain, the groups of most chips first, or None when there is only
    one toolchain. A toolchain's chips stay together: they share its graph passes and many
    placements (edgedeploy.audit.engine), which a second process would compute again."""
    by_target: dict[str, list[int]] = {}
    for i, choice in enumerate(chips):
        by_target.setdefault(choice.target.id, []).append(i)
    if len(by_target) < 2:
        return None
    return sorted(by_target.values(), key=len, reverse=True)


def audit_in_two_processes(groups: list[list[int]], audit_all: Callable) -> list:
    """audit_all's (index, report parts or no-rules entry) for every chip of `groups`, in chip order,
    the groups shared out as they go between this process and a forked child (edgedeploy.forked):
    this one takes the groups of most chips first, the child those of fewest, until none is left.

    How long a group takes depends on the model as much as on its number of chips (on
    DenseNet-121 the 2 ESP-DL chips took 25 ms of CPU and the 4 TIDL chips 13 ms; on a
    transformer the 6 RKNN chips more than all the others together), so no split made beforehand
    balances the two processes; taken in turns, neither waits long for the other. If the child
    fails, the groups it took are audited here: the same report, or the same error, as one process.
    """
    from edgedeploy.forked import ForkedCall, Turns

    try:
        turns = Turns(len(groups))
    except OSError:  # no anonymous in-memory file here (a kernel without memfd): one process
        return audit_all(sorted(i for group in groups for i in group), as_parts=False)
    mine: list[int] = []

    def chips_taken(from_back: bool):
        while (group := turns.take(from_back)) is not None:
            mine.append(group)  # in the child, the child's copy
            yield from groups[group]

    try:
        with ForkedCall(lambda: audit_all(chips_taken(from_back=True), as_parts=True)) as child:
            # This process's report parts are made here too, while the child still works.
            done = audit_all(chips_taken(from_back=False), as_parts=True)
            theirs = child.result()
    finally:
        turns.close()
    if theirs is None:
        theirs = audit_all([i for g, group in enumerate(groups) if g not in mine for i in group], as_parts=False)
    return sorted(done + theirs, key=lambda item: item[0])


def model_as_audited(model, work: Path) -> Path:
    """The model file the toolchain is to confirm: the user's own, or, where the audit pinned input
    shapes (--input-shape, a dynamic batch), a copy with those shapes in `work`, so the toolchain
    is asked about the model the audit placed."""
    if not (model.pinned or model.auto_pinned):
        return model.path
    import onnx

    copy = onnx.ModelProto()
    copy.CopyFrom(model.proto)
    del copy.graph.value_info[:]  # the toolchain infers its own; only the inputs' shapes are pinned
    path = work / "pinned" / model.path.name
    path.parent.mkdir()
    onnx.save(copy, str(path))
    return path


def confirm_chip(ca, model, chips: list[ChipChoice], calib: str | None, single: bool, echo) -> dict:
    """Run the chip's real toolchain on the model and compare its verdict with the prediction."""
    from edgedeploy.audit.confirm import compare

    choice = next(c for c in chips if c.chip.id == ca.result.chip)
    target = choice.target
    status = target.toolchain.status()
    if not status.installed:
        if single:
            raise ToolchainMissing(f"--confirm needs the {target.toolchain.name} toolchain, which is {status.detail}.")
        return {"skipped": f"the {target.toolchain.name} toolchain is {status.detail}"}
    if not target.has(Capability.VERDICT):
        reason = f"{target.name}'s toolchain reports no per-node placement"
        if single:
            raise NotAvailableYet(f"`audit --confirm` is not available for {ca.result.chip}: {reason}.")
        return {"skipped": reason}
    with tempfile.TemporaryDirectory(prefix="edgedeploy-confirm-") as tmp:
        work = Path(tmp)
        echo(StepStarted(f"{ca.result.chip}: running {target.toolchain.name} on the model for its own verdict ...", log_path=work / "toolchain.log"))
        try:
            source = model_as_audited(model, work)
            verdict = target.toolchain_verdict(source, ca.result.chip, work, work / "toolchain.log", precision=ca.result.precision, inputs=Path(calib) if calib else None)
        except NotAvailableYet as exc:
            if single:
                raise
            return {"skipped": str(exc)}
        except EdgedeployError as exc:
            if single:
                raise
            return {"skipped": str(exc).splitlines()[0]}
    return {"verdict": verdict.to_dict(), "comparison": compare(ca.result, verdict)}
