"""`edgedeploy fix --confirm`: each chip's real toolchain, asked for its verdict before and after the rewrites.

The rewrites themselves are the core's (edgedeploy.fix): they need rule sets, not targets; this
step needs the targets' toolchains, so it lives with the pipelines.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import onnx

from edgedeploy.fix.engine import FixResult
from edgedeploy.progress import StepStarted
from edgedeploy.targets import find_chip
from edgedeploy.targets.base import Capability


def _verdict_line(verdict) -> str:
    if verdict.failed:
        return f"refused the model ({verdict.failed})"
    counts: dict[str, int] = {}
    for node in verdict.nodes.values():
        counts[node.placement.value] = counts.get(node.placement.value, 0) + 1
    on = counts.pop("accelerator", 0)
    rest = ", ".join(f"{n} {p}" for p, n in sorted(counts.items()))
    return f"{on} of {len(verdict.nodes)} reported nodes on the accelerator" + (f" ({rest})" if rest else "")


def confirm_fix(result: FixResult, echo: Callable[[str], None] = lambda _: None) -> dict:
    """Each chip's real toolchain verdict on the model before and after the rewrites (where installed).

    The rules decided what `fix` applied; this asks the toolchain itself (esp-ppq's float ops,
    RKNN's layer table, Vela's CPU operators, ...) whether the nodes really moved.
    """
    import tempfile

    from edgedeploy.audit.confirm import compare
    from edgedeploy.errors import EdgedeployError

    confirmed: dict = {}
    with tempfile.TemporaryDirectory(prefix="edgedeploy-fix-confirm-") as tmp:
        work = Path(tmp)
        paths = {}
        for label, model in (("before", result.original), ("after", result.fixed)):
            paths[label] = work / f"{label}.onnx"
            onnx.save(model.proto, str(paths[label]))
        for chip_id, before_audit in result.before.items():
            target, chip = find_chip(chip_id)
            status = target.toolchain.status()
            if not target.has(Capability.VERDICT):
                confirmed[chip_id] = {"skipped": f"{target.name}'s toolchain reports no per-node placement"}
                continue
            if not status.installed:
                confirmed[chip_id] = {"skipped": f"the {target.toolchain.name} toolchain is {status.detail}"}
                continue
            entry: dict = {"toolchain": target.toolchain.name}
            try:
                for label, audit in (("before", before_audit), ("after", result.after[chip_id])):
                    folder = work / f"{chip_id}-{label}"
                    folder.mkdir()
                    echo(StepStarted(f"fix: {chip_id}: asking {target.toolchain.name} for its verdict on the model {label} the rewrites", log_path=folder / "toolchain.log"))
                    verdict = target.toolchain_verdict(paths[label], chip_id, folder, folder / "toolchain.log", precision=audit.precision)
                    comparison = compare(audit, verdict)
                    agreement = comparison.get("agreement")
                    entry[label] = {
                        "verdict": verdict.to_dict(),
                        "comparison": comparison,
                        "line": _verdict_line(verdict),
                        "agreement_line": f"{comparison['agree']} of {comparison['compared']} nodes agree" + ("" if agreement is None else f" ({agreement:.0%})"),
                    }
            except EdgedeployError as exc:
                confirmed[chip_id] = {"skipped": str(exc).splitlines()[0]}
                continue
            confirmed[chip_id] = entry
    return confirmed
