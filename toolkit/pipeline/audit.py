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
            raise OptionError(f"The {target.name} target has no audit rules yet, so {chip.id} cannot be audited.")
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
) -> dict:
    """Load the model once, audit it on every chip, optionally confirm with toolchains; the report dict.

    `detail`: every node of every chip in the report (else, per chip, those with something to say;
    edgedeploy.audit.report).
    """
    from edgedeploy.audit.engine import ChipIndependent, audit_model
    from edgedeploy.audit.report import ChipAudit, build_report
    from edgedeploy.model import load_model
    from edgedeploy.model.intake import with_batch_pinned

    model = load_model(model_path, input_shapes)
    # Shapes must be static for the bytes crossing; a dynamic batch is audited at batch 1, as
    # every target here compiles it.
    pinned = with_batch_pinned(model)
    audited = pinned or model
    assumed = {**audited.pinned, **audited.auto_pinned}
    notes_all = [f"dynamic batch pinned to 1 for the audit ({', '.join(pinned.auto_pinned)})"] if pinned else []
    shared = ChipIndependent(audited)
    explicit = len(chips) == 1
    results: list[ChipAudit] = []
    for choice in chips:
        target, chip = choice.target, choice.chip
        chosen, notes = chip_precision(chip, precision, explicit)
        try:
            rules = rules_for(target, chip.id, chosen)
        except KeyError:
            no_rules.append({"target": target.id, "target_name": target.name, "chips": [chip.id], "reason": "no rules for this chip yet"})
            continue
        result = audit_model(audited, rules, chosen, shared=shared)
        results.append(ChipAudit(result, target.name, chip.name, notes=notes_all + notes, rules_notes=list(rules.notes)))
    if confirm:
        for ca in results:
            ca.confirm = confirm_chip(ca, audited, chips, calib, single=explicit, echo=echo)
    return build_report(audited, results, no_rules, by=by, fail_on=fail_on, assumed_shapes=assumed, detail=detail)


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
            verdict = target.toolchain_verdict(model.path, ca.result.chip, work, work / "toolchain.log", precision=ca.result.precision, inputs=Path(calib) if calib else None)
        except NotAvailableYet as exc:
            if single:
                raise
            return {"skipped": str(exc)}
        except EdgedeployError as exc:
            if single:
                raise
            return {"skipped": str(exc).splitlines()[0]}
    return {"verdict": verdict.to_dict(), "comparison": compare(ca.result, verdict)}
