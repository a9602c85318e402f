#!/usr/bin/env python3
"""The real toolchains' placements of the small form models of tests/forms_models.py.

    .venv/bin/python scripts/probe_forms.py [--only CASE,...] [--keep-others]

Each case is one model built by a builder of tests/forms_models.py and the chips whose toolchain
it is checked with. For each, this runs `edgedeploy audit MODEL --target CHIP ... --confirm
--format json` (with `--precision` where the case names one) (esp-ppq in the espdl environment, rknn-toolkit2 in the rknn one, onnx2tf + Vela
in the eiq one) and keeps the toolchain's own verdict: its placement of every ONNX node it
reports, or its failure. Writes tests/fixtures/forms/verdicts.json, the data
tests/test_audit_forms.py compares the audit with (no toolchain needed there), and prints the
audit's disagreements with each verdict as it goes.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
VERDICTS = ROOT / "tests" / "fixtures" / "forms" / "verdicts.json"
CODES = {"accelerator": "A", "float": "F", "fallback": "C", "unsupported": "U"}


def run_case(case, work: Path) -> dict:
    import onnx

    path = work / f"{case.name}.onnx"
    onnx.save(case.build(), path)
    out = work / f"{case.name}.json"
    cmd = [str(ROOT / ".venv" / "bin" / "edgedeploy"), "audit", str(path), "--confirm", "--format", "json", "-o", str(out), "--force"]
    for chip in case.chips:
        cmd += ["--target", chip]
    if case.precision:
        cmd += ["--precision", case.precision]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if not out.exists():
        raise SystemExit(f"{case.name}: edgedeploy audit --confirm failed (exit {done.returncode}): {done.stderr.strip()[-2000:]}")
    report = json.loads(out.read_text())
    chips = {}
    for audit in report["audits"]:
        confirm = audit.get("confirm") or {}
        verdict = confirm.get("verdict")
        if verdict is None:
            print(f"  {case.name} {audit['chip']}: no verdict ({confirm.get('skipped')})")
            continue
        chips[audit["chip"]] = {
            "toolchain": f"{verdict['toolchain']} {verdict['version']}",
            "failed": verdict.get("failed"),
            "nodes": {name: CODES[v["placement"]] for name, v in sorted(verdict["nodes"].items())},
            "observes": verdict.get("observes"),
            **({"precision": case.precision} if case.precision else {}),
        }
        disagreements = confirm["comparison"]["disagreements"]
        shown = ", ".join(f"{d['node']} {d['predicted']}/{d['toolchain']}" for d in disagreements[:8])
        print(f"  {case.name} {audit['chip']}: {verdict['toolchain']} {verdict['version']}: {'failed: ' + verdict['failed'][:200] if verdict.get('failed') else str(len(verdict['nodes'])) + ' nodes'}; audit disagrees on {len(disagreements)} {shown}")
    return chips


def main() -> int:
    from tests.forms_models import CASES

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="comma-separated case names")
    parser.add_argument("--keep-others", action="store_true", help="keep the recorded verdicts of the cases not run (always so with --only)")
    args = parser.parse_args()
    wanted = set(args.only.split(",")) if args.only else None
    recorded = json.loads(VERDICTS.read_text()) if VERDICTS.exists() else {}
    # --only re-records some cases: the others' verdicts stay (dropping them lost other helpers' probes twice).
    cases = dict(recorded.get("cases", {})) if args.keep_others or wanted else {}
    with tempfile.TemporaryDirectory(prefix="edgedeploy-forms-") as tmp:
        for case in CASES:
            if wanted and case.name not in wanted:
                continue
            print(f"{case.name}: {', '.join(case.chips)}", flush=True)
            cases[case.name] = {"form": case.form, "chips": run_case(case, Path(tmp))}
    data = {
        "about": "The real toolchains' placements of the form models of tests/forms_models.py (scripts/probe_forms.py); codes: " + ", ".join(f"{v} {k}" for k, v in CODES.items()),
        "cases": dict(sorted(cases.items())),
    }
    VERDICTS.parent.mkdir(parents=True, exist_ok=True)
    VERDICTS.write_text(json.dumps(data, indent=1) + "\n")
    print(f"wrote {VERDICTS.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
