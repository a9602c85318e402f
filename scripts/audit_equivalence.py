#!/usr/bin/env python3
"""Show that a change to intake or the audit leaves every placement, reason and violation as it was.

    python scripts/audit_equivalence.py dump OUT_DIR            # audit every model, write one JSON each
    python scripts/audit_equivalence.py dump OUT_DIR --processes 2   # ... in two processes, as the program does
    python scripts/audit_equivalence.py compare BEFORE AFTER    # compare two dumps, print the figures

`dump` audits, in this process, every corpus model it finds (the corpus manifest's models, those
committed under tests/fixtures/corpus and those regenerated under $EDGEDEPLOY_HOME/corpus) and
the corpus's skeletons (tests/fixtures/corpus/skeletons: graphs without their large
weights, loaded as scripts/corpus/agreement.py loads them, not through intake), and every case of ONNX's backend node tests (`onnx.backend.test.case.node.collect_testcases()`) on
every chip (`--target all`), and writes per model: the intake outcome (the error sentence, or the
model's sha256 and a digest of the checked, shape-inferred proto) and the whole audit report with
every node (`--detail`). `compare` reads two dumps (made before and after a change, with the
code of each) and reports, per model and chip, whether every node's placement, reason and
violations, the partitions, crossings, summaries, reason groups, matrix and --fail-on outcome are
identical; fields that only the newer report schema has are left out of the comparison.
"""

from __future__ import annotations

import argparse
import hashlib
import inspect
import json
import os
import sys
import tempfile
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def corpus_models(extra: list[Path] = ()) -> list[Path]:
    """Every corpus model on this machine: committed fixtures and regenerated ones, by name."""
    home = Path(os.environ.get("EDGEDEPLOY_HOME", Path.home() / ".cache" / "edgedeploy"))
    found: dict[str, Path] = {}
    for folder in (REPO / "tests" / "fixtures" / "corpus", home / "corpus", *extra):
        if folder.is_dir():
            for path in sorted(folder.glob("*.onnx")):
                found.setdefault(path.stem, path)
    return [found[k] for k in sorted(found)]


def node_cases():
    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return collect_testcases()


SKELETONS = REPO / "tests" / "fixtures" / "corpus" / "skeletons"


def skeleton_loader():
    """scripts/corpus/agreement.py's loader of a skeleton (whose weights are missing by design)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("corpus_agreement", REPO / "scripts" / "corpus" / "agreement.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return lambda path, shapes=None, **kw: module.load_for_audit(path, "skeleton")


def audit_one(path: Path, skeleton: bool = False, processes: int = 1) -> dict:
    """The intake outcome and the full audit report of one model on every chip."""
    import onnx

    import edgedeploy.model
    from edgedeploy.errors import EdgedeployError
    from edgedeploy.pipeline.audit import audit_chips, resolve_chips

    load_model = original_loader = edgedeploy.model.load_model
    if skeleton:
        # audit_chips imports load_model from edgedeploy.model when it runs: it gets this loader.
        load_model = edgedeploy.model.load_model = skeleton_loader()
    out: dict = {}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = load_model(path, {}, second_process=True) if processes > 1 and not skeleton else load_model(path, {})
        out["intake"] = {"sha256": model.sha256, "proto_sha256": hashlib.sha256(model.proto.SerializeToString(deterministic=True)).hexdigest()}
    except EdgedeployError as exc:
        out["intake"] = {"error": str(exc)}
        edgedeploy.model.load_model = original_loader
        return out
    chips, no_rules = resolve_chips(("all",))
    extra = {"detail": True} if "detail" in inspect.signature(audit_chips).parameters else {}
    if processes > 1:
        extra["processes"] = processes
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            report = audit_chips(path, {}, chips, no_rules, **extra)
    except EdgedeployError as exc:
        out["audit_error"] = str(exc)
        return out
    finally:
        edgedeploy.model.load_model = original_loader
    report["model"].pop("path", None)
    out["report"] = json.loads(json.dumps(report, default=str))
    del onnx
    return out


def dump(out_dir: Path, limit: int | None, extra: list[Path], processes: int = 1) -> None:
    import onnx

    out_dir.mkdir(parents=True, exist_ok=True)
    models = corpus_models(extra)
    for path in models:
        (out_dir / f"corpus__{path.stem}.json").write_text(json.dumps(audit_one(path, processes=processes), sort_keys=True))
    skeletons = sorted(SKELETONS.glob("*.onnx")) if SKELETONS.is_dir() else []
    for path in skeletons:
        (out_dir / f"skeleton__{path.stem}.json").write_text(json.dumps(audit_one(path, skeleton=True, processes=processes), sort_keys=True))
    cases = node_cases()[:limit] if limit else node_cases()
    with tempfile.TemporaryDirectory() as tmp:
        for case in cases:
            path = Path(tmp) / f"{case.name}.onnx"
            onnx.save(case.model, str(path))
            (out_dir / f"node__{case.name}.json").write_text(json.dumps(audit_one(path, processes=processes), sort_keys=True))
            path.unlink()
    print(f"dumped {len(models)} corpus models, {len(skeletons)} skeletons and {len(cases)} node-test cases into {out_dir}")


# Fields of the newer schema that the older one lacks (or that name the schema itself).
NEW_OR_VERSION_FIELDS = {"schema", "edgedeploy_version", "detail", "nodes_listed", "folded", "count", "examples"}


def comparable(value, ignore=NEW_OR_VERSION_FIELDS):
    if isinstance(value, dict):
        # A chip's `lowered` list (audit/2) summarises the nodes' own `lowered` fields, which are compared.
        return {k: comparable(v, ignore) for k, v in value.items() if k not in ignore and not (k == "lowered" and isinstance(v, list))}
    if isinstance(value, list):
        return [comparable(v, ignore) for v in value]
    return value


def compare(before_dir: Path, after_dir: Path) -> int:
    names = sorted(p.name for p in before_dir.glob("*.json"))
    missing = [n for n in names if not (after_dir / n).exists()]
    counts = {"models": 0, "intake_errors": 0, "chip_audits": 0, "nodes": 0, "violations": 0}
    differing: list[str] = []
    for name in names:
        if name in missing:
            continue
        before = json.loads((before_dir / name).read_text())
        after = json.loads((after_dir / name).read_text())
        counts["models"] += 1
        if "error" in before["intake"]:
            counts["intake_errors"] += 1
        if before["intake"] != after["intake"]:
            differing.append(f"{name}: intake {before['intake']} -> {after['intake']}")
            continue
        if before.get("audit_error") != after.get("audit_error"):
            differing.append(f"{name}: audit error {before.get('audit_error')!r} -> {after.get('audit_error')!r}")
            continue
        if "report" not in before:
            continue
        b, a = comparable(before["report"]), comparable(after["report"])
        for chip_b in before["report"]["audits"]:
            counts["chip_audits"] += 1
            counts["nodes"] += len(chip_b["nodes"])
            counts["violations"] += sum(len(n["violations"]) for n in chip_b["nodes"])
        if b != a:
            keys = sorted(k for k in set(b) | set(a) if b.get(k) != a.get(k))
            detail = []
            if "audits" in keys and len(b["audits"]) == len(a["audits"]):
                for cb, ca in zip(b["audits"], a["audits"]):
                    diff = sorted(k for k in set(cb) | set(ca) if cb.get(k) != ca.get(k))
                    if diff:
                        detail.append(f"{cb['chip']}: {', '.join(diff)}")
            differing.append(f"{name}: report differs in {', '.join(keys)}" + (f" ({'; '.join(detail[:4])})" if detail else ""))
    print(f"compared {counts['models']} models ({counts['intake_errors']} refused at intake), {counts['chip_audits']} chip audits, "
          f"{counts['nodes']} node placements, {counts['violations']} violations")
    if missing:
        print(f"{len(missing)} models missing from {after_dir}: {', '.join(missing[:5])}")
    print(f"{len(differing)} models differ")
    for line in differing[:40]:
        print("  " + line)
    return 1 if differing or missing else 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    d = sub.add_parser("dump")
    d.add_argument("out_dir", type=Path)
    d.add_argument("--limit", type=int, help="only the first N node-test cases")
    d.add_argument("--models", type=Path, action="append", default=[], help="another folder of .onnx models to include (repeatable)")
    d.add_argument("--processes", type=int, default=1, help="2: audit as the program does, ONNX's checker and half the chips in a second process (edgedeploy.forked)")
    c = sub.add_parser("compare")
    c.add_argument("before", type=Path)
    c.add_argument("after", type=Path)
    args = parser.parse_args(argv)
    if args.command == "dump":
        dump(args.out_dir, args.limit, args.models, args.processes)
        return 0
    return compare(args.before, args.after)


if __name__ == "__main__":
    sys.exit(main())
