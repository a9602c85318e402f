#!/usr/bin/env python3
"""Check a target's rule table against its real toolchain on ONNX's backend node tests.

Every case of `onnx.backend.test.case.node.collect_testcases()` (about 1900 single-operator
models, with inputs) is placed by the target's rules (`edgedeploy audit`'s prediction) and
converted by the target's toolchain (`target.toolchain_verdicts`, batched: one worker process
per batch); `edgedeploy.audit.confirm.compare` counts where they agree. The agreement per
toolchain and chip goes to docs/audit-agreement.json, and docs/audit-agreement.md is rendered
from all entries of that JSON (so sweeps of other chips and toolchains accumulate).

    python scripts/sweep_node_tests.py --target esp32s3                # every case
    python scripts/sweep_node_tests.py --target esp32p4 --sample 60    # a spread over operators
    python scripts/sweep_node_tests.py --target esp32s3 --ops Conv,Resize --no-write
    python scripts/sweep_node_tests.py --target esp32s3 --shard 1/4    # a quarter, for CI jobs

Verdicts are cached in the work folder (keyed by case and model hash); `--reuse` takes them from
there, so the rules can be revised and re-checked without running the toolchain again.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import inspect
import json
import sys
import time
import warnings
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_JSON = REPO / "docs" / "audit-agreement.json"
DEFAULT_MARKDOWN = REPO / "docs" / "audit-agreement.md"
DEFAULT_WORKDIR = Path("/tmp") / "edgedeploy-node-sweep"
BATCH_SIZE = 100


@dataclass
class CaseResult:
    name: str
    ops: list[str]
    intake_error: str | None = None
    prediction: dict = field(default_factory=dict)  # node -> placement
    verdict: dict | None = None
    comparison: dict | None = None


def load_cases():
    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the case generators overflow casts on purpose
        return collect_testcases()


def case_ops(case) -> list[str]:
    return sorted({n.op_type for n in case.model.graph.node})


def select_cases(cases, ops=None, names=None, sample=None, limit=None, shard=None):
    """Filter by operator or name, then a spread sample, a shard (i/n, 1-based) and a limit.

    `sample` N takes cases round-robin over operator types (sorted), so a small sample still
    touches as many operators as it can, deterministically.
    """
    chosen = sorted(cases, key=lambda c: c.name)
    if ops:
        wanted = set(ops)
        chosen = [c for c in chosen if wanted & set(case_ops(c))]
    if names:
        wanted = set(names)
        chosen = [c for c in chosen if c.name in wanted]
    if sample:
        by_op: dict[str, list] = defaultdict(list)
        for c in chosen:
            by_op[c.model.graph.node[0].op_type if c.model.graph.node else ""].append(c)
        picked = []
        depth = 0
        while len(picked) < sample and any(depth < len(v) for v in by_op.values()):
            for op in sorted(by_op):
                if depth < len(by_op[op]) and len(picked) < sample:
                    picked.append(by_op[op][depth])
            depth += 1
        chosen = sorted(picked, key=lambda c: c.name)
    if shard:
        index, count = shard
        chosen = chosen[index - 1 :: count]
    if limit:
        chosen = chosen[:limit]
    return chosen


def write_case(case, folder: Path) -> tuple[Path, Path | None]:
    """The case's model, and its first input set as an .npz keyed by graph input name (None if not numeric)."""
    import numpy as np
    import onnx

    folder.mkdir(parents=True, exist_ok=True)
    model_path = folder / "model.onnx"
    onnx.save(case.model, str(model_path))
    inputs_path = None
    if case.data_sets:
        arrays = case.data_sets[0][0]
        inits = {t.name for t in case.model.graph.initializer}
        names = [vi.name for vi in case.model.graph.input if vi.name not in inits]
        if len(arrays) == len(names) and all(isinstance(a, np.ndarray) and a.dtype.kind in "biuf" for a in arrays):
            inputs_path = folder / "inputs.npz"
            np.savez(inputs_path, **dict(zip(names, arrays)))
    return model_path, inputs_path


def predict(model_path: Path, rules, precision: str):
    from edgedeploy.audit import audit_model
    from edgedeploy.errors import EdgedeployError
    from edgedeploy.model import load_model

    try:
        return audit_model(load_model(model_path), rules, precision), None
    except EdgedeployError as exc:
        return None, str(exc)


def _file_sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _accepts(func, name: str) -> bool:
    return name in inspect.signature(func).parameters


def run_sweep(chip_id: str, cases, workdir: Path, precision: str | None = None, reuse: bool = False, batch_size: int = BATCH_SIZE, echo=print) -> dict:
    """Predict and convert every case on one chip; return the sweep entry (totals, per-op figures, cases)."""
    from edgedeploy.audit.confirm import ToolchainVerdict, compare
    from edgedeploy.targets import find_chip

    target, chip = find_chip(chip_id)
    from edgedeploy.pipeline.audit import rules_for

    precision = precision or chip.precisions[0]
    rules = rules_for(target, chip.id, precision)
    chip_dir = workdir / f"{chip.id}-{precision}"
    cache_path = chip_dir / "verdicts.json"
    cache = json.loads(cache_path.read_text()) if (reuse and cache_path.exists()) else {}

    results: list[CaseResult] = []
    to_convert: list[tuple[CaseResult, Path, Path | None, str]] = []
    predictions = {}
    for case in cases:
        folder = chip_dir / "cases" / case.name
        model_path, inputs_path = write_case(case, folder)
        result = CaseResult(case.name, case_ops(case))
        audit, error = predict(model_path, rules, precision)
        results.append(result)
        if audit is None:
            result.intake_error = error
            continue
        predictions[case.name] = audit
        result.prediction = {n.node: n.placement.value for n in audit.nodes}
        sha = _file_sha(model_path)
        cached = cache.get(case.name)
        if cached and cached.get("sha256") == sha:
            result.verdict = cached["verdict"]
        else:
            to_convert.append((result, model_path, inputs_path, sha))

    options = {}
    if _accepts(target.toolchain_verdicts, "precision"):
        options["precision"] = precision
    started = time.monotonic()
    for first in range(0, len(to_convert), batch_size):
        batch = to_convert[first : first + batch_size]
        if _accepts(target.toolchain_verdicts, "inputs"):
            options["inputs"] = [inputs for _, _, inputs, _ in batch]
        verdicts = target.toolchain_verdicts(
            [model for _, model, _, _ in batch], chip.id, chip_dir / "work", chip_dir / "toolchain.log", **options
        )
        for (result, _, _, sha), verdict in zip(batch, verdicts):
            result.verdict = verdict.to_dict()
            cache[result.name] = {"sha256": sha, "verdict": result.verdict}
        cache_path.parent.mkdir(parents=True, exist_ok=True)
        cache_path.write_text(json.dumps(cache))
        done = first + len(batch)
        rate = (time.monotonic() - started) / done
        echo(f"{chip.id}: converted {done}/{len(to_convert)} ({rate:.2f} s per case, about {rate * (len(to_convert) - done) / 60:.0f} min left)")

    for result in results:
        if result.verdict is not None and result.name in predictions:
            result.comparison = compare(predictions[result.name], ToolchainVerdict.from_dict(result.verdict))
    return summarise(target, chip, rules, precision, results)


def summarise(target, chip, rules, precision: str, results: list[CaseResult]) -> dict:
    """Totals, per-operator figures and the disagreements of one sweep."""
    totals = Counter()
    per_op: dict[str, Counter] = defaultdict(Counter)
    disagreements = []
    toolchain = version = ""
    for r in results:
        op = r.ops[0] if len(r.ops) == 1 else "+".join(r.ops) if len(r.ops) <= 3 else f"{len(r.ops)} ops"
        totals["cases"] += 1
        if r.intake_error:
            totals["intake_refused"] += 1
            continue
        c = r.comparison
        if c is None:
            continue
        toolchain, version = r.verdict["toolchain"], r.verdict["version"]
        counts = per_op[op]
        counts["cases"] += 1
        for key in ("compared", "agree"):
            totals[key] += c[key]
            counts[key] += c[key]
        totals["unverifiable"] += len(c.get("unverifiable", []))
        counts["unverifiable"] += len(c.get("unverifiable", []))
        totals["not_reported"] += len(c["not_reported"])
        if c["toolchain_failed"]:
            totals["toolchain_failed"] += 1
            counts["toolchain_failed"] += 1
        for d in c["disagreements"]:
            entry = {"case": r.name, **d}
            if entry["node"] == "(model)":
                entry["op_type"] = op  # the case's operator(s): what the refusal is about
            disagreements.append(entry)
    compared = totals["compared"]
    return {
        "target": target.id,
        "chip": chip.id,
        "toolchain": toolchain,
        "toolchain_version": version,
        "rules": rules.toolchain_version,
        "precision": precision,
        "measured_on": datetime.date.today().isoformat(),
        "totals": dict(totals),
        "agreement": round(totals["agree"] / compared, 4) if compared else None,
        "per_op": {op: dict(v) for op, v in sorted(per_op.items())},
        "disagreements": disagreements,
        "cases": [
            {"name": r.name, "ops": r.ops, "intake_error": r.intake_error, "prediction": r.prediction,
             "verdict": r.verdict, "agree": None if r.comparison is None else r.comparison["agree"],
             "compared": None if r.comparison is None else r.comparison["compared"]}
            for r in results
        ],
    }


def entry_key(entry: dict) -> str:
    return f"{entry['target']}/{entry['chip']}/{entry['precision']}"


def render_markdown(entries: dict) -> str:
    lines = [
        "# Audit rules against the real toolchains: agreement on ONNX's node tests",
        "",
        "Generated by `scripts/sweep_node_tests.py` from docs/audit-agreement.json; do not edit by hand.",
        "",
        "Each of ONNX's backend node tests (`onnx.backend.test.case.node.collect_testcases()`, single-operator",
        "models with inputs) is placed by the target's rules and converted by the target's real toolchain;",
        "`edgedeploy.audit.confirm.compare` counts the nodes on which the two agree. A model the toolchain refuses",
        "counts once: as agreement if the rules predicted an unsupported node. *Unverifiable* nodes are predicted at a",
        "placement the toolchain cannot report (esp-ppq exports operators the ESP-DL runtime lacks as float layers, so",
        "it cannot confirm *unsupported*); they are neither agreement nor disagreement. *Intake refused*: models",
        "edgedeploy's own intake rejects (checker or strict shape inference), never audited. Verdicts are cached per",
        "case and model hash, so a revised rule table is re-scored against the same toolchain output (`--reuse`).",
        "",
        "| target / chip | precision | toolchain | rules | scope | cases | compared | agree | agreement | unverifiable | toolchain refused | intake refused | measured |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for key in sorted(entries):
        e = entries[key]
        t = e["totals"]
        rate = f"{100 * e['agreement']:.1f}%" if e["agreement"] is not None else "n/a"
        lines.append(
            f"| {e['target']} / {e['chip']} | {e['precision']} | {e['toolchain']} {e['toolchain_version'].split()[-1] if e['toolchain_version'] else ''} | "
            f"{e['rules']} | {e.get('scope', 'all')} | {t.get('cases', 0)} | {t.get('compared', 0)} | {t.get('agree', 0)} | **{rate}** | "
            f"{t.get('unverifiable', 0)} | {t.get('toolchain_failed', 0)} | {t.get('intake_refused', 0)} | {e['measured_on']} |"
        )
    for key in sorted(entries):
        e = entries[key]
        unverifiable = {op: c["unverifiable"] for op, c in e["per_op"].items() if c.get("unverifiable")}
        if unverifiable:
            lines += ["", f"## {e['target']} / {e['chip']} ({e['precision']}): unverifiable nodes by operator", ""]
            lines.append(", ".join(f"{op} {n}" for op, n in sorted(unverifiable.items())) + ".")
        lines += ["", f"## {e['target']} / {e['chip']} ({e['precision']}): remaining disagreements", ""]
        if not e["disagreements"]:
            lines.append("None.")
            continue
        by_op = defaultdict(list)
        for d in e["disagreements"]:
            by_op[d.get("op_type") or "(model)"].append(d)
        lines += ["| operator | cases | predicted | toolchain | example | toolchain detail |", "|---|---|---|---|---|---|"]
        for op in sorted(by_op):
            ds = by_op[op]
            kinds = Counter((d["predicted"], d["toolchain"]) for d in ds)
            for (pred, tool), n in kinds.most_common():
                example = next(d for d in ds if (d["predicted"], d["toolchain"]) == (pred, tool))
                detail = str(example.get("detail", "")).replace("|", "\\|").replace("\n", " ")[:120]
                lines.append(f"| {op} | {n} | {pred} | {tool} | {example['case']} | {detail} |")
    lines.append("")
    return "\n".join(lines)


def parse_shard(text: str) -> tuple[int, int]:
    index, _, count = text.partition("/")
    i, n = int(index), int(count)
    if not (1 <= i <= n):
        raise argparse.ArgumentTypeError("--shard is I/N with 1 <= I <= N")
    return i, n


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target", action="append", required=True, metavar="CHIP", help="chip id (repeatable), e.g. esp32s3")
    parser.add_argument("--precision", help="precision to audit and convert in (default: the chip's first)")
    parser.add_argument("--ops", help="only cases with these operators (comma-separated)")
    parser.add_argument("--cases", help="only these case names (comma-separated)")
    parser.add_argument("--sample", type=int, help="N cases spread round-robin over operator types")
    parser.add_argument("--shard", type=parse_shard, help="I/N: every N-th case starting at the I-th")
    parser.add_argument("--limit", type=int, help="at most N cases")
    parser.add_argument("--batch", type=int, default=BATCH_SIZE, help="cases per toolchain worker process")
    parser.add_argument("--workdir", type=Path, default=DEFAULT_WORKDIR)
    parser.add_argument("--reuse", action="store_true", help="reuse cached toolchain verdicts from the work folder")
    parser.add_argument("--json", type=Path, default=DEFAULT_JSON)
    parser.add_argument("--markdown", type=Path, default=DEFAULT_MARKDOWN)
    parser.add_argument("--no-write", action="store_true", help="print the figures, do not touch docs/")
    args = parser.parse_args(argv)

    cases = select_cases(
        load_cases(),
        ops=args.ops.split(",") if args.ops else None,
        names=args.cases.split(",") if args.cases else None,
        sample=args.sample,
        limit=args.limit,
        shard=args.shard,
    )
    partial = any([args.ops, args.cases, args.sample, args.shard, args.limit])
    scope = "all" if not partial else "sample" if args.sample and not (args.ops or args.cases or args.shard or args.limit) else "subset"
    from edgedeploy.errors import EdgedeployError

    entries = json.loads(args.json.read_text()) if args.json.exists() else {}
    failures = 0
    for chip_id in args.target:
        log = lambda line: print(line, file=sys.stderr, flush=True)  # noqa: E731
        log(f"{chip_id}: {len(cases)} cases")
        try:
            entry = run_sweep(chip_id, cases, args.workdir, args.precision, args.reuse, args.batch, echo=log)
        except EdgedeployError as exc:
            # A toolchain that is not installed here, or not able to give verdicts yet.
            print(f"error: {chip_id}: {exc}", file=sys.stderr)
            failures += 1
            continue
        entry["scope"] = scope if scope == "all" else f"{scope} of {len(cases)}"
        t = entry["totals"]
        rate = f"{100 * entry['agreement']:.2f}%" if entry["agreement"] is not None else "n/a"
        print(
            f"{entry['target']}/{entry['chip']} {entry['precision']} vs {entry['toolchain']} {entry['toolchain_version']}: "
            f"agreement {rate} ({t.get('agree', 0)} of {t.get('compared', 0)} compared; {t.get('unverifiable', 0)} unverifiable; "
            f"{t.get('toolchain_failed', 0)} refused by the toolchain; {t.get('intake_refused', 0)} refused by intake; {t.get('cases', 0)} cases)"
        )
        for d in entry["disagreements"][:40]:
            print(f"  {d['case']}: {d.get('op_type', '')} predicted {d['predicted']}, toolchain {d['toolchain']}: {str(d.get('detail', ''))[:140]}")
        if len(entry["disagreements"]) > 40:
            print(f"  ... {len(entry['disagreements']) - 40} more")
        if not args.no_write:
            if partial:
                log(f"{chip_id}: partial sweep ({entry['scope']}); docs are written only for full sweeps (use --no-write, or --json/--markdown elsewhere)")
                if args.json == DEFAULT_JSON:
                    continue
            entries[entry_key(entry)] = entry
    if not args.no_write and (not partial or args.json != DEFAULT_JSON):
        args.json.parent.mkdir(parents=True, exist_ok=True)
        slim = {k: {kk: vv for kk, vv in v.items() if kk != "cases"} for k, v in entries.items()}
        args.json.write_text(json.dumps(slim, indent=1, sort_keys=True) + "\n")
        page = render_markdown(slim)
        # Everything from the real-model section on is written by others (scripts/corpus/agreement.py
        # --markdown, scripts/pool/score.py, the fresh sets' hand-written sections): keep it all.
        previous = args.markdown.read_text() if args.markdown.exists() else ""
        start = previous.find("<!-- corpus-agreement:start -->")
        if start != -1:
            page = page.rstrip("\n") + "\n\n" + previous[start:].rstrip("\n") + "\n"
        args.markdown.write_text(page)
        print(f"wrote {args.json} and {args.markdown}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
