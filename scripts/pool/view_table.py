#!/usr/bin/env python3
"""Every view-like node (Reshape, Squeeze, Unsqueeze, Flatten, Concat, Expand, Gather) of every model
with committed rknn-toolkit2 verdicts, as one row of data: shapes, rank change, innermost dims,
neighbours with their own placements, constant inputs, each chip's placement by the toolchain and
by today's audit (the rule that fired).

    .venv/bin/python scripts/pool/view_table.py [--chips rk3566,rk3588] [--ops Reshape,...] -o table.jsonl

Sources: the pool (tests/fixtures/pool/verdicts.json), each fresh set, gen_cases.py's packs
(case_verdicts.json), the form models (tests/fixtures/forms/verdicts.json, built from
tests/forms_models.py) and the corpus (tests/fixtures/corpus/verdicts.json). Skeletons are read
where no full model is built; shapes come from ONNX shape inference, as the audit sees them.
The table is what the RKNN view rules are checked against (docs/audit.md).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "scripts" / "corpus"))
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))
import agreement  # noqa: E402
import score  # noqa: E402
from catalogue import FRESH_SETS  # noqa: E402

VIEW_OPS = ("Reshape", "Squeeze", "Unsqueeze", "Flatten", "Concat", "Expand", "Gather")
CODES = {"A": "A", "F": "A", "C": "C", "U": "U", ".": "."}  # float16 on the NPU counts as the NPU here


def _dims(t):
    return list(t.shape) if t is not None and t.shape is not None else None


def _neighbours(views):
    """tensor -> producing view, tensor -> reading views."""
    producer, readers = {}, {}
    for v in views:
        for t in v.outputs:
            producer[t.name] = v
        for t in v.inputs:
            if t.present:
                readers.setdefault(t.name, []).append(v)
    return producer, readers


def _row(v, producer, readers, truth: dict, audited: dict) -> dict:
    x = v.input(0)
    out = v.output(0)
    src = producer.get(x.name) if x is not None else None
    cons = readers.get(out.name, []) if out is not None else []

    def placed(n):
        return {c: truth[c].get(n.name, "-") for c in truth}

    return {
        "node": v.name, "op": v.op_type,
        "in": _dims(x), "out": _dims(out),
        "others": [_dims(t) if t.present else None for t in v.inputs[1:]],
        "inputs_const": [bool(t.present and (t.is_constant or t.foldable)) for t in v.inputs],
        "model_in": bool(x is not None and x.is_graph_input), "model_out": bool(out is not None and out.is_model_output),
        "dtype": x.dtype if x is not None else None,
        "attrs": {a.name: (v.attr(a.name) if not hasattr(v.attr(a.name), "tolist") else v.attr(a.name).tolist()) for a in v.proto.attribute},
        "producer": src.op_type if src else None, "producer_name": src.name if src else None,
        "producer_at": placed(src) if src else None,
        "consumers": [c.op_type for c in cons], "consumers_at": [placed(c) for c in cons],
        "truth": {c: truth[c].get(v.name, "-") for c in truth},
        "audit": {c: audited[c].get(v.name) for c in audited},
        "producer_audit": {c: audited[c].get(src.name) for c in audited} if src else None,
        "consumers_audit": [{c: audited[c].get(k.name) for c in audited} for k in cons],
    }


def _audit(model, views, chip):
    from edgedeploy.audit.engine import audit_model
    from edgedeploy.targets import find_chip

    target, chip_obj = find_chip(chip)
    precision = chip_obj.precisions[0]
    result = audit_model(model, target.rule_set(chip, precision), precision, views=views)
    return {n.node: [n.placement.value, ";".join(sorted({x.rule for x in n.violations if x.placement == n.placement}))] for n in result.nodes}


def rows_of(model, truth: dict, ops, source: str, name: str):
    """truth: chip -> {node name: code}."""
    from edgedeploy.audit.engine import node_views
    from edgedeploy.model.intake import with_batch_pinned

    model = with_batch_pinned(model) or model
    views = node_views(model)
    audited = {chip: _audit(model, views, chip) for chip in truth}
    producer, readers = _neighbours(views)
    for v in views:
        if v.op_type in ops:
            yield {"source": source, "model": name, **_row(v, producer, readers, truth, audited)}


def _pair_truth(data, name, chips):
    truth = {}
    for chip in chips:
        pair = data["pairs"].get(f"{name}/{chip}")
        if not pair:
            continue
        codes, failed, _ = agreement.truth_of(pair, chip)
        if failed or not codes:
            continue
        truth[chip] = {n: CODES[c] for (n, _op), c in zip(data["models"][name]["nodes"], codes)}
    return truth


def pool_like(verdicts: Path, find, source: str, chips, ops):
    data = json.loads(verdicts.read_text())
    for name in sorted(data["models"]):
        truth = _pair_truth(data, name, chips)
        if not truth:
            continue
        path, form = find(name)
        if path is None:
            continue
        try:
            model = agreement.load_for_audit(path, form)
        except Exception as exc:  # a skeleton shape inference refuses: say so, go on
            print(f"{source} {name}: {exc}"[:200], file=sys.stderr)
            continue
        yield from rows_of(model, truth, ops, source, name)


def forms(chips, ops):
    import tempfile

    import onnx

    from edgedeploy.model.intake import LoadedModel

    from tests.forms_models import CASES

    data = json.loads((ROOT / "tests" / "fixtures" / "forms" / "verdicts.json").read_text())["cases"]
    for case in CASES:
        rec = data.get(case.name)
        if not rec:
            continue
        truth = {c: {n: CODES[x] for n, x in v["nodes"].items()} for c, v in rec["chips"].items() if c in chips and not v.get("failed")}
        if not truth:
            continue
        proto = case.build()
        if not any(n.op_type in ops for n in proto.graph.node):
            continue
        with tempfile.NamedTemporaryFile(suffix=".onnx") as f:
            onnx.save(proto, f.name)
            inferred = onnx.shape_inference.infer_shapes(proto, data_prop=True)
            model = LoadedModel(path=Path(f.name), proto=inferred, sha256="form " + case.name, size_bytes=1)
            yield from rows_of(model, truth, ops, "forms", case.name)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chips", default="rk3566,rk3588")
    parser.add_argument("--ops", default=",".join(VIEW_OPS))
    parser.add_argument("--sources", default="pool,fresh,cases,forms,corpus")
    parser.add_argument("-o", "--out", type=Path, required=True)
    args = parser.parse_args()
    chips, ops, sources = args.chips.split(","), set(args.ops.split(",")), args.sources.split(",")
    fx = score.FIXTURES
    streams = []
    if "pool" in sources:
        streams.append(pool_like(score.VERDICTS, lambda n: score.model_file(n), "pool", chips, ops))
    if "fresh" in sources:
        for s in sorted(FRESH_SETS):
            if not (fx / s / "blind.json").is_file():
                continue  # a set not yet scored blind is nobody's to read
            streams.append(pool_like(fx / s / "verdicts.json", lambda n, s=s: score.model_file(n, folder=fx / s), s, chips, ops))
    if "cases" in sources:
        streams.append(pool_like(fx / "case_verdicts.json", lambda n: score.case_model_file(n), "cases", chips, ops))
    if "corpus" in sources:
        streams.append(pool_like(agreement.VERDICTS, agreement.model_file, "corpus", chips, ops))
    if "forms" in sources:
        streams.append(forms(chips, ops))
    n = 0
    with args.out.open("w") as f:
        for stream in streams:
            for row in stream:
                f.write(json.dumps(row) + "\n")
                n += 1
    print(f"{n} rows -> {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
