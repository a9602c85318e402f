#!/usr/bin/env python3
"""The audit against the toolchains' own placements on the real-model corpus, without the toolchains.

    .venv/bin/python scripts/corpus/agreement.py [--chips rk3588,imx93] [--models yolo11n,...] [--show N] [--json FILE]

The ground truth is tests/fixtures/corpus/verdicts.json (collected by collect_verdicts.py from
the real toolchains: esp-ppq, rknn-toolkit2, onnx2tf + Vela). For every model-chip pair it holds
the toolchain's placement of each ONNX node (or its failure). This script audits each model on
each chip with the current rules and compares, per pair:

- exact: the set of op types off the accelerator is the same for the audit and the toolchain,
  and every node the toolchain reports is placed the same (a node it cannot report, e.g. one it
  fused without naming it, is not compared); where the toolchain refuses the model, the pair
  agrees when the audit predicts the build fails (some node UNSUPPORTED);
- where edgedeploy applies a workaround the toolchain itself advises (rknn-toolkit2's
  disable_rules), the truth is the placement of that build, which is what `edgedeploy build`
  produces.

Models come from tests/fixtures/corpus/ (committed), else $EDGEDEPLOY_HOME/corpus/ (regenerated
by make_corpus.py), else tests/fixtures/corpus/skeletons/ (the graph with its large weights
left out: enough for the audit, which never reads weight values). Pairs whose model is found
nowhere are listed as not compared.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "corpus"
VERDICTS = FIXTURES / "verdicts.json"
SKELETONS = FIXTURES / "skeletons"
CODES = {"A": "accelerator", "F": "float", "C": "fallback", "U": "unsupported"}
# Toolchains that cannot tell per node that an operator will not load (esp-ppq exports it all
# the same): their verdicts observe ACCELERATOR and FLOAT only (see targets/espdl/verdict.py).
OBSERVES = {"esp32s3": ("accelerator", "float"), "esp32p4": ("accelerator", "float")}


def home() -> Path:
    return Path(os.environ.get("EDGEDEPLOY_HOME", Path.home() / ".cache" / "edgedeploy"))


def model_file(name: str) -> tuple[Path | None, str]:
    """Where the model is, and which form: "full" or "skeleton"."""
    for path in (FIXTURES / f"{name}.onnx", home() / "corpus" / f"{name}.onnx"):
        if path.is_file():
            return path, "full"
    skeleton = SKELETONS / f"{name}.onnx"
    if skeleton.is_file():
        return skeleton, "skeleton"
    return None, "missing"


def load_for_audit(path: Path, form: str):
    """A LoadedModel: through intake for a full model; a skeleton's missing weights are not loaded."""
    from edgedeploy.model import load_model

    if form == "full":
        return load_model(path, {}, require_static=True)
    import onnx

    from edgedeploy.model.intake import LoadedModel

    # The checker wants the weights' file; the skeleton has none by design. Shapes are inferred
    # from the dims alone (the small tensors shape inference reads are kept in the skeleton).
    proto = onnx.load(str(path), load_external_data=False)
    inferred = onnx.shape_inference.infer_shapes(proto, check_type=True, strict_mode=True, data_prop=True)  # as intake does
    return LoadedModel(path=path, proto=inferred, sha256="skeleton of " + path.stem, size_bytes=path.stat().st_size)


def truth_of(pair: dict, chip: str) -> tuple[str | None, str | None, str]:
    """(placement codes, failure, what the truth is): the workaround build's where edgedeploy applies it."""
    workaround = pair.get("workaround") or {}
    if pair.get("failed") and workaround.get("converted") and workaround.get("placements") and chip.startswith(("rk", "rv")):
        return workaround["placements"], None, "the build with rknn-toolkit2's own disable_rules advice followed (edgedeploy applies it)"
    return pair.get("placements"), pair.get("failed"), "the toolchain called directly"


def compare_pair(model_name: str, chip: str, pair: dict, nodes: list, audited) -> dict:
    """One pair's agreement (see the module docstring)."""
    from edgedeploy.audit.rules import Placement

    codes, failed, basis = truth_of(pair, chip)
    by_node = {n.node: n for n in audited.nodes}
    pred_off = sorted({n.op_type for n in audited.nodes if n.placement is not Placement.ACCELERATOR})
    result = {
        "model": model_name,
        "chip": chip,
        "truth": basis,
        "toolchain_failed": failed,
        "predicted_off_accelerator": pred_off,
        "predicted_unsupported": sorted({n.op_type for n in audited.nodes if n.placement is Placement.UNSUPPORTED}),
    }
    if failed:
        predicted_fail = bool(result["predicted_unsupported"])
        result.update(exact=predicted_fail, nodes_compared=1, nodes_agree=int(predicted_fail), disagreements=[] if predicted_fail else [{"node": "(model)", "op_type": "(model)", "predicted": "builds", "toolchain": "fails"}])
        return result
    observes = OBSERVES.get(chip)
    disagreements, compared, agree, uncertain = [], 0, 0, 0
    tool_off = set()
    for (name, op), code in zip(nodes, codes or ""):
        if code == ".":
            continue
        truth = CODES[code]
        if truth != "accelerator":
            tool_off.add(op)
        mine = by_node.get(name)
        if mine is None:
            continue
        if mine.uncertain:
            uncertain += 1
            continue  # the audit says it cannot know: counted apart, neither agreement nor not
        if observes and mine.placement.value not in observes:
            continue  # a placement this toolchain cannot report: neither agreement nor not
        compared += 1
        if mine.placement.value == truth:
            agree += 1
        else:
            disagreements.append({"node": name, "op_type": op, "predicted": mine.placement.value, "toolchain": truth, "reason": mine.reason})
    # esp-ppq cannot report UNSUPPORTED: an op type the audit calls unsupported where esp-ppq
    # converted the model is a disagreement all the same (the model converts).
    result.update(
        toolchain_off_accelerator=sorted(tool_off),
        nodes_compared=compared,
        nodes_agree=agree,
        nodes_uncertain=uncertain,
        disagreements=disagreements,
        # Op types the audit left uncertain do not count against the pair; they are counted.
        exact=not disagreements and set(pred_off) - uncertain_ops(audited) == tool_off - uncertain_ops(audited),
    )
    return result


def uncertain_ops(audited) -> set[str]:
    """Op types whose every node the audit placed only as a best guess."""
    ops: dict[str, bool] = {}
    for n in audited.nodes:
        ops[n.op_type] = ops.get(n.op_type, True) and bool(n.uncertain)
    return {op for op, all_uncertain in ops.items() if all_uncertain}


def run(chips: set[str] | None = None, models: set[str] | None = None) -> dict:
    from edgedeploy.audit.engine import audit_model, node_views
    from edgedeploy.model.intake import with_batch_pinned
    from edgedeploy.targets import find_chip

    data = json.loads(VERDICTS.read_text())
    pairs, missing = {}, []
    loaded: dict[str, object] = {}
    for key, pair in sorted(data["pairs"].items()):
        name, chip = key.split("/")
        if (chips and chip not in chips) or (models and name not in models):
            continue
        if name not in loaded:
            path, form = model_file(name)
            if path is None:
                loaded[name] = None
            else:
                model = load_for_audit(path, form)
                model = with_batch_pinned(model) or model
                loaded[name] = (model, node_views(model))
        if loaded[name] is None:
            missing.append(key)
            continue
        model, views = loaded[name]
        target, chip_obj = find_chip(chip)
        precision = chip_obj.precisions[0]
        audited = audit_model(model, target.rule_set(chip, precision), precision, views=views)
        pairs[key] = compare_pair(name, chip, pair, data["models"][name]["nodes"], audited)
    return {"pairs": pairs, "not_compared": missing, "summary": summarise(pairs)}


def summarise(pairs: dict) -> dict:
    per_chip = defaultdict(lambda: [0, 0])
    kinds: dict = defaultdict(lambda: [0, set()])
    for key, p in pairs.items():
        per_chip[p["chip"]][0] += p["exact"]
        per_chip[p["chip"]][1] += 1
        for d in p["disagreements"]:
            k = kinds[(p["chip"], d["op_type"], f"{d['predicted']} -> {d['toolchain']}")]
            k[0] += 1
            k[1].add(p["model"])
        if not p["toolchain_failed"]:
            for op in set(p["predicted_off_accelerator"]) - set(p.get("toolchain_off_accelerator") or []):
                kinds[(p["chip"], op, "off the accelerator by the audit only")][1].add(p["model"])
            for op in set(p.get("toolchain_off_accelerator") or []) - set(p["predicted_off_accelerator"]):
                kinds[(p["chip"], op, "off the accelerator by the toolchain only")][1].add(p["model"])
    return {
        "pairs": len(pairs),
        "pairs_exact": sum(p["exact"] for p in pairs.values()),
        "nodes_compared": sum(p["nodes_compared"] for p in pairs.values()),
        "nodes_agree": sum(p["nodes_agree"] for p in pairs.values()),
        "nodes_uncertain": sum(p.get("nodes_uncertain", 0) for p in pairs.values()),
        "per_chip": {c: {"exact": v[0], "pairs": v[1]} for c, v in sorted(per_chip.items())},
        "disagreement_kinds": sorted(
            ({"chip": c, "op_type": o, "kind": k, "nodes": v[0], "models": sorted(v[1])} for (c, o, k), v in kinds.items()),
            key=lambda e: (-len(e["models"]), -e["nodes"], e["chip"], e["op_type"]),
        ),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chips", default="", help="comma-separated chips (default: all in the verdicts)")
    parser.add_argument("--models", default="", help="comma-separated corpus models (default: all)")
    parser.add_argument("--show", type=int, default=30, help="disagreement kinds to print")
    parser.add_argument("--json", type=Path, help="write the per-pair result here")
    args = parser.parse_args()
    result = run({c for c in args.chips.split(",") if c} or None, {m for m in args.models.split(",") if m} or None)
    s = result["summary"]
    print(f"pairs agreeing exactly: {s['pairs_exact']}/{s['pairs']}; nodes {s['nodes_agree']}/{s['nodes_compared']}; uncertain (not compared) {s['nodes_uncertain']}")
    for chip, v in s["per_chip"].items():
        print(f"  {chip:8s} {v['exact']}/{v['pairs']}")
    if result["not_compared"]:
        print(f"not compared (model not found): {', '.join(result['not_compared'])}")
    print("disagreement kinds (chip, op type, kind, nodes, models):")
    for k in s["disagreement_kinds"][: args.show]:
        print(f"  {k['chip']:8s} {k['op_type']:22s} {k['kind']:42s} {k['nodes']:4d}  {', '.join(k['models'])[:110]}")
    inexact = [p for p in result["pairs"].values() if not p["exact"]]
    if inexact:
        print("pairs that disagree: " + ", ".join(f"{p['model']}/{p['chip']}" for p in inexact))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
