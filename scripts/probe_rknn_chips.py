#!/usr/bin/env python3
"""rknn-toolkit2's placements of the RKNN form models on the chips the form verdicts leave out.

    .venv/bin/python scripts/probe_rknn_chips.py --chip rk3568 [--only CASE,...] [--limit N]

tests/fixtures/forms/verdicts.json holds the toolkit's verdicts for rk3588 and rk3566 (scripts/
probe_forms.py). The audit also serves rk3576, rk3568, rk3562 and rv1106 with rules taken from
those two chips or from the documents; this builds the same int8 form models (every case of
tests/forms_models.py with an rk3566 or rk3588 int8 verdict) for one more chip, all in one
toolkit worker (targets/rknn/verdict.py: each model in a forked child), and records the verdicts
in tests/fixtures/forms/chip_verdicts.json, in verdicts.json's structure, keyed by chip.
tests/test_audit_rknn_chips.py compares the audit with them offline.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
FORMS = ROOT / "tests" / "fixtures" / "forms" / "verdicts.json"
VERDICTS = ROOT / "tests" / "fixtures" / "forms" / "chip_verdicts.json"
CODES = {"accelerator": "A", "float": "F", "fallback": "C", "unsupported": "U"}
MEASURED = ("rk3588", "rk3566")


def probed_cases(only):
    """The form cases with an int8 verdict on a measured RKNN chip (fp16 cases left out)."""
    from tests.forms_models import CASES

    recorded = json.loads(FORMS.read_text())["cases"]
    for case in CASES:
        chips = recorded.get(case.name, {}).get("chips", {})
        if case.precision is None and any(c in chips for c in MEASURED) and (not only or case.name in only):
            yield case


def main() -> int:
    import onnx

    from edgedeploy.targets import find_chip

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chip", required=True)
    parser.add_argument("--only", help="comma-separated case names")
    parser.add_argument("--limit", type=int, help="the first N cases only")
    parser.add_argument("--report", action="store_true", help="no toolkit: compare the recorded verdicts with the audit and with rk3566/rk3588's")
    args = parser.parse_args()
    if args.report:
        return report(args.chip)
    cases = list(probed_cases(set(args.only.split(",")) if args.only else None))[: args.limit]
    target, chip = find_chip(args.chip)
    data = json.loads(VERDICTS.read_text()) if VERDICTS.exists() else {"cases": {}}
    with tempfile.TemporaryDirectory(prefix="edgedeploy-rknn-chips-") as tmp:
        paths = []
        for case in cases:
            path = Path(tmp) / f"{case.name}.onnx"
            onnx.save(case.build(), path)
            paths.append(path)
        verdicts = target.toolchain_verdicts(paths, chip.id, Path(tmp) / "work", Path(tmp) / "log.txt")
    for case, verdict in zip(cases, verdicts):
        entry = data["cases"].setdefault(case.name, {"form": case.form, "chips": {}})
        entry["chips"][chip.id] = {
            "toolchain": f"{verdict.toolchain} {verdict.version}",
            "failed": verdict.failed,
            "nodes": {name: CODES[v.placement.value] for name, v in sorted(verdict.nodes.items())},
            "observes": None,
        }
        entry["chips"] = dict(sorted(entry["chips"].items()))
    data = {
        "about": "rknn-toolkit2's placements of the int8 RKNN form models of tests/forms_models.py on the chips other than "
        "rk3588 and rk3566 (scripts/probe_rknn_chips.py); structure and codes as verdicts.json: " + ", ".join(f"{v} {k}" for k, v in CODES.items()),
        "cases": dict(sorted(data["cases"].items())),
    }
    VERDICTS.write_text(json.dumps(data, indent=1) + "\n")
    print(f"{chip.id}: {len(cases)} cases, {sum(1 for v in verdicts if v.failed)} failed; wrote {VERDICTS.relative_to(ROOT)}")
    return 0


def audit_disagreements(name: str, chip: str, entry: dict) -> list[str]:
    """The nodes the audit places otherwise than the recorded verdict (uncertain ones apart), or ["(build)"] for a failure the audit does not predict."""
    from tests.forms_models import CASES
    from tests.forms_verdicts import audit_case, certain_disagreements, recorded_verdict

    case = next(c for c in CASES if c.name == name)
    with tempfile.TemporaryDirectory() as tmp:
        result = audit_case(case, chip, Path(tmp))
    off = certain_disagreements(result, recorded_verdict(entry))[0]
    return [f"{d['node']} {d['predicted']}/{d['toolchain']}" for d in off]


def same_verdict(a: dict | None, b: dict) -> bool:
    return a is not None and bool(a["failed"]) == bool(b["failed"]) and (bool(a["failed"]) or a["nodes"] == b["nodes"])


def report(chip: str) -> int:
    """Per case: does the audit agree with the chip's verdict; is the verdict rk3566's or rk3588's."""
    forms = json.loads(FORMS.read_text())["cases"]
    cases = {n: e["chips"][chip] for n, e in json.loads(VERDICTS.read_text())["cases"].items() if chip in e["chips"]}
    agree = 0
    like = {m: [0, 0] for m in MEASURED}  # same verdict, cases with a verdict on that chip
    for name, entry in sorted(cases.items()):
        off = audit_disagreements(name, chip, entry)
        agree += not off
        for m in MEASURED:
            other = forms[name]["chips"].get(m)
            if other is not None:
                like[m][1] += 1
                like[m][0] += same_verdict(other, entry)
        differs = [m for m in MEASURED if m in forms[name]["chips"] and not same_verdict(forms[name]["chips"][m], entry)]
        if off or len(differs) == len([m for m in MEASURED if m in forms[name]["chips"]]):
            print(f"  {name}: audit disagrees on {len(off)} {', '.join(off[:6])}; verdict differs from {', '.join(differs) or '-'}", flush=True)
    print(f"{chip}: {len(cases)} cases, the audit agrees on {agree}; " + "; ".join(f"same verdict as {m} {s}/{n}" for m, (s, n) in like.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
