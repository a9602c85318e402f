#!/usr/bin/env python3
"""Agreement of the i.MX 93 rule table with the real toolchain (onnx2tf + Vela), on ONNX's node tests.

Two phases, so that rules can be tuned without converting again:

  run      convert every selected node test with the eiq worker (Target.toolchain_verdicts, one
           process for all) and store each verdict in CACHE/verdicts.jsonl
  compare  audit every cached case with the current rules (targets/eiq/rules.py) and compare
           per node with the stored verdict; print the agreement and every disagreement

    python scripts/eiq_node_agreement.py run --cache /tmp/eiq-sweep [--limit N] [--ops Conv,Relu]
    python scripts/eiq_node_agreement.py compare --cache /tmp/eiq-sweep [--json out.json]

Each test case's own first input set is the calibration data. The agreement counts nodes; a case
the toolchain refused as a whole counts once (agreeing when the rules predicted an unsupported
node), as edgedeploy.audit.confirm.compare does.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import onnx


def select_cases(ops: set[str] | None, limit: int | None, per_op: int | None):
    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = collect_testcases(None)
    picked = []
    seen: collections.Counter = collections.Counter()
    for case in sorted(cases, key=lambda c: c.name):
        if not case.data_sets:
            continue
        op_types = {n.op_type for n in case.model.graph.node}
        if ops and not (op_types & ops):
            continue
        key = case.model.graph.node[0].op_type if case.model.graph.node else "?"
        if per_op is not None and seen[key] >= per_op:
            continue
        seen[key] += 1
        picked.append(case)
    return picked[:limit] if limit else picked


def run(args) -> int:
    from edgedeploy.targets.eiq import TARGET

    cache = Path(args.cache)
    models_dir = cache / "models"
    models_dir.mkdir(parents=True, exist_ok=True)
    cases = select_cases(set(args.ops.split(",")) if args.ops else None, args.limit, args.per_op)
    done = set()
    verdicts_path = cache / "verdicts.jsonl"
    if verdicts_path.exists() and not args.fresh:
        done = {json.loads(line)["case"] for line in verdicts_path.read_text().splitlines() if line.strip()}
    todo = [c for c in cases if c.name not in done]
    print(f"{len(cases)} cases selected, {len(todo)} to run", file=sys.stderr)
    started = time.monotonic()
    for start in range(0, len(todo), args.batch):
        chunk = todo[start:start + args.batch]
        paths, calib = [], []
        for case in chunk:
            path = models_dir / f"{case.name}.onnx"
            onnx.save(case.model, str(path))
            inputs = [vi.name for vi in case.model.graph.input]
            data = case.data_sets[0][0]
            calib.append({name: np.asarray(value) for name, value in zip(inputs, data) if isinstance(value, np.ndarray)})
            paths.append(path)
        verdicts = TARGET.toolchain_verdicts(paths, "imx93", cache / "work", cache / "worker.log", inputs=calib, per_model_timeout_s=args.timeout)
        # The worker's raw lines are kept too, so that `compare` can re-trace them after a parser change.
        raw = {}
        for line in (cache / "work" / "results.jsonl").read_text().splitlines():
            entry = json.loads(line)
            for key in ("float32_ops",):
                entry.pop(key, None)
            if entry.get("vela"):
                entry["vela"].pop("vela_ops", None)
            raw[entry["index"]] = entry
        with verdicts_path.open("a") as fh:
            for i, (case, path, verdict) in enumerate(zip(chunk, paths, verdicts)):
                fh.write(json.dumps({"case": case.name, "model": str(path), "verdict": verdict.to_dict(), "entry": raw.get(i)}) + "\n")
        print(f"{start + len(chunk)}/{len(todo)} in {time.monotonic() - started:.0f} s", file=sys.stderr)
    return 0


def load_verdict(data: dict):
    from edgedeploy.audit.confirm import NodeVerdict, ToolchainVerdict
    from edgedeploy.audit.rules import Placement

    v = ToolchainVerdict(toolchain=data["toolchain"], version=data["version"], failed=data["failed"], unmapped=data["unmapped"], estimates=data["estimates"])
    v.nodes = {k: NodeVerdict(Placement(n["placement"]), n["detail"]) for k, n in data["nodes"].items()}
    return v


def retrace(row: dict):
    """The verdict traced again from the worker's raw entry with the current parser."""
    import tempfile

    from edgedeploy.targets.eiq import vela_version
    from edgedeploy.targets.eiq.confirm import named_copy
    from edgedeploy.targets.eiq.vela import verdict_from_entry

    with tempfile.TemporaryDirectory() as tmp:
        tokens, producers = named_copy(Path(row["model"]), Path(tmp) / "m.onnx")
    return verdict_from_entry(row["entry"], tokens, producers, toolchain="onnx2tf+vela", version=vela_version())


def compare_all(args) -> int:
    from edgedeploy.audit.confirm import compare
    from edgedeploy.audit.engine import audit_model
    from edgedeploy.errors import EdgedeployError
    from edgedeploy.model import load_model
    from edgedeploy.targets.eiq import TARGET

    cache = Path(args.cache)
    rules = TARGET.rule_set("imx93")
    compared = agree = 0
    cases = failed_cases = 0
    rejected = 0
    disagreements = []
    by_op: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0])
    for line in (cache / "verdicts.jsonl").read_text().splitlines():
        row = json.loads(line)
        verdict = retrace(row) if row.get("entry") else load_verdict(row["verdict"])
        try:
            model = load_model(Path(row["model"]), {}, require_static=False)
        except EdgedeployError:
            rejected += 1
            continue
        result = audit_model(model, rules, precision="int8")
        cmp = compare(result, verdict)
        cases += 1
        failed_cases += verdict.failed is not None
        compared += cmp["compared"]
        agree += cmp["agree"]
        op = "+".join(sorted({n.op_type for n in model.graph.node})) or "?"
        by_op[op][0] += cmp["agree"]
        by_op[op][1] += cmp["compared"]
        for d in cmp["disagreements"]:
            disagreements.append({"case": row["case"], **{k: d.get(k) for k in ("node", "op_type", "predicted", "toolchain", "reason", "detail")}})
    rate = agree / compared if compared else 0.0
    summary = {
        "chip": "imx93",
        "toolchain": TARGET.toolchain.status().versions,
        "cases": cases,
        "cases_refused_by_intake": rejected,
        "cases_toolchain_failed": failed_cases,
        "compared": compared,
        "agree": agree,
        "agreement": rate,
        "disagreements": disagreements,
    }
    for d in disagreements:
        print(f"{d['case']}: {d['node']} ({d['op_type']}) predicted {d['predicted']}, toolchain {d['toolchain']}: {str(d['detail'])[:160]}")
    print(f"agreement {agree}/{compared} = {rate:.4f} over {cases} cases ({failed_cases} refused by the toolchain, {rejected} refused by intake)")
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=2) + "\n")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="phase", required=True)
    r = sub.add_parser("run")
    r.add_argument("--cache", required=True)
    r.add_argument("--ops", help="only cases using these ONNX ops (comma-separated)")
    r.add_argument("--limit", type=int)
    r.add_argument("--per-op", type=int, help="at most N cases per first operator")
    r.add_argument("--batch", type=int, default=100, help="models per worker process")
    r.add_argument("--timeout", type=float, default=120.0, help="seconds per model")
    r.add_argument("--fresh", action="store_true", help="ignore verdicts already cached")
    c = sub.add_parser("compare")
    c.add_argument("--cache", required=True)
    c.add_argument("--json", help="write the summary and every disagreement here")
    args = parser.parse_args(argv)
    return run(args) if args.phase == "run" else compare_all(args)


if __name__ == "__main__":
    sys.exit(main())
