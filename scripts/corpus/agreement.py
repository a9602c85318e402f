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
- where the direct call failed but edgedeploy's own conversion converts (imx93: the pair's
  "edgedeploy" entry, collected through the eiq worker), the truth is that conversion's placement.

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


# How an ESP chip's truth is read (docs/audit.md, "ESP-DL's module registry in the truth"): "firmware"
# (the default): esp-ppq's conversion AND a module the ESP-DL runtime registers for every exported op
# type (a pair's "runtime_lacks", from targets/espdl/verdict.modules_the_runtime_lacks), since a model
# the chip's loader refuses is not converted for that chip; "esp-ppq": esp-ppq's .info alone (the
# reading until 2026-12-05, kept to give figures under both).
ESP_READINGS = ("firmware", "esp-ppq")
ESP_READING = ESP_READINGS[0]


def truth_of(pair: dict, chip: str) -> tuple[str | None, str | None, str]:
    """(placement codes, failure, what the truth is): the build edgedeploy makes where it differs from the direct call."""
    if pair.get("runtime_lacks") and not pair.get("failed") and ESP_READING == "firmware":
        from edgedeploy.targets.espdl.verdict import runtime_refusal

        return pair.get("placements"), runtime_refusal(pair["runtime_lacks"]), "esp-ppq's conversion, which ESP-DL's runtime does not load"
    workaround = pair.get("workaround") or {}
    if pair.get("failed") and workaround.get("converted") and workaround.get("placements") and chip.startswith(("rk", "rv")):
        return workaround["placements"], None, "the build with rknn-toolkit2's own disable_rules advice followed (edgedeploy applies it)"
    built = pair.get("edgedeploy") or {}
    if pair.get("failed") and built.get("converted") and built.get("placements"):
        # imx93: the direct script failed where edgedeploy's own conversion (the eiq worker that
        # `edgedeploy build` runs) converts, e.g. by calibrating integer inputs in their own dtype.
        return built["placements"], None, "edgedeploy's own conversion (the direct call failed)"
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
    tool_off, tool_off_observed = set(), set()
    for (name, op), code in zip(nodes, codes or ""):
        if code == ".":
            continue
        truth = CODES[code]
        mine = by_node.get(name)
        if truth != "accelerator":
            tool_off.add(op)
            if not (mine is not None and observes and mine.placement.value not in observes):
                tool_off_observed.add(op)
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
    # The node tests' measure (docs/audit-agreement.md, toolkit/audit/confirm.py): a node placed
    # where the toolchain cannot report (esp-ppq exports what the ESP-DL runtime lacks all the
    # same) is unverifiable, neither agreement nor disagreement. Counted beside `exact`, never in it.
    # Both sides leave those nodes out.
    unobservable = [n for n in audited.nodes if observes and n.placement.value not in observes]
    observable_off = {n.op_type for n in audited.nodes if n.placement is not Placement.ACCELERATOR and n not in unobservable}
    result["unverifiable_op_types"] = sorted({n.op_type for n in unobservable})
    result["exact_where_observable"] = not disagreements and observable_off - uncertain_ops(audited) == tool_off_observed - uncertain_ops(audited)
    return result


def _all_nodes(audited, test) -> dict[str, bool]:
    """Per op type: whether `test` holds for every node of that type."""
    ops: dict[str, bool] = {}
    for n in audited.nodes:
        ops[n.op_type] = ops.get(n.op_type, True) and test(n)
    return ops


def uncertain_ops(audited) -> set[str]:
    """Op types whose every node the audit placed only as a best guess."""
    return {op for op, all_uncertain in _all_nodes(audited, lambda n: bool(n.uncertain)).items() if all_uncertain}


def audited_pairs(data: dict, find_model, chips: set[str] | None = None, models: set[str] | None = None):
    """Each pair of a verdicts document (`data`) as (key, the audit of its model for its chip), in
    key order; the audit is None where `find_model(name)` -> (path, form) finds no model. Each
    model is loaded once (batch pinned, as intake does) and audited in the chip's first precision.
    Shared by this corpus and the issue-27 pool (scripts/pool/score.py)."""
    from edgedeploy.audit.engine import audit_model, node_views
    from edgedeploy.model.intake import with_batch_pinned
    from edgedeploy.targets import find_chip

    loaded: dict[str, object] = {}
    for key in sorted(data["pairs"]):
        name, chip = key.split("/")
        if (chips and chip not in chips) or (models and name not in models):
            continue
        if name not in loaded:
            path, form = find_model(name)
            if path is None:
                loaded[name] = None
            else:
                model = load_for_audit(path, form)
                model = with_batch_pinned(model) or model
                loaded[name] = (model, node_views(model))
        if loaded[name] is None:
            yield key, None
            continue
        model, views = loaded[name]
        target, chip_obj = find_chip(chip)
        precision = chip_obj.precisions[0]
        yield key, audit_model(model, target.rule_set(chip, precision), precision, views=views)


def run(chips: set[str] | None = None, models: set[str] | None = None) -> dict:
    data = json.loads(VERDICTS.read_text())
    pairs, missing = {}, []
    for key, audited in audited_pairs(data, model_file, chips, models):
        if audited is None:
            missing.append(key)
            continue
        name, chip = key.split("/")
        pairs[key] = compare_pair(name, chip, data["pairs"][key], data["models"][name]["nodes"], audited)
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
        "pairs_exact_where_observable": sum(p.get("exact_where_observable", p["exact"]) for p in pairs.values()),
        "nodes_compared": sum(p["nodes_compared"] for p in pairs.values()),
        "nodes_agree": sum(p["nodes_agree"] for p in pairs.values()),
        "nodes_uncertain": sum(p.get("nodes_uncertain", 0) for p in pairs.values()),
        "per_chip": {c: {"exact": v[0], "pairs": v[1]} for c, v in sorted(per_chip.items())},
        "disagreement_kinds": sorted(
            ({"chip": c, "op_type": o, "kind": k, "nodes": v[0], "models": sorted(v[1])} for (c, o, k), v in kinds.items()),
            key=lambda e: (-len(e["models"]), -e["nodes"], e["chip"], e["op_type"]),
        ),
    }


SECTION_START = "<!-- corpus-agreement:start -->"
SECTION_END = "<!-- corpus-agreement:end -->"


def render_section(result: dict) -> str:
    """The real-model section of docs/audit-agreement.md: per chip and per pair, with what disagrees."""
    s = result["summary"]
    pairs = sorted(result["pairs"].values(), key=lambda p: (p["chip"], p["model"]))
    lines = [
        SECTION_START,
        "## Real models: the corpus, per model-chip pair",
        "",
        "Written by `scripts/corpus/agreement.py --markdown docs/audit-agreement.md` (offline: the audit of today's rules against the "
        "toolchain verdicts committed in `tests/fixtures/corpus/verdicts.json`, collected from esp-ppq 1.3.12, rknn-toolkit2 2.5.0 and "
        "onnx2tf 1.29.24 + Vela 5.2.0 by `scripts/corpus/collect_verdicts.py`; models in `docs/corpus.md`). A pair agrees exactly when the set of "
        "op types off the accelerator is the same on both sides and every node the toolchain reports is placed the same; a model the "
        "toolchain refuses agrees when the audit predicts an unsupported node; nodes the audit marks uncertain are counted apart. "
        "*Where observable* uses the node tests' measure: a node the audit places where the toolchain cannot report it (esp-ppq exports "
        "operators the ESP-DL runtime cannot run all the same) is unverifiable, neither agreement nor disagreement. "
        "`tests/test_corpus_agreement.py` fails when a pair that agrees here stops agreeing. imx8mp has no pairs: its VX delegate "
        "places nodes on the board, and no host verdict exists.",
        "",
        f"Pairs agreeing exactly: **{s['pairs_exact']} of {s['pairs']}** ({100 * s['pairs_exact'] / s['pairs']:.1f}%); "
        f"where observable: {s['pairs_exact_where_observable']} of {s['pairs']} ({100 * s['pairs_exact_where_observable'] / s['pairs']:.1f}%). "
        f"Nodes: {s['nodes_agree']} of {s['nodes_compared']} compared agree; {s['nodes_uncertain']} uncertain.",
        "",
        "| chip | pairs | exact | where observable | nodes compared | nodes agree |",
        "|---|---|---|---|---|---|",
    ]
    for chip in sorted({p["chip"] for p in pairs}):
        mine = [p for p in pairs if p["chip"] == chip]
        lines.append(
            f"| {chip} | {len(mine)} | {sum(p['exact'] for p in mine)} | {sum(p.get('exact_where_observable', p['exact']) for p in mine)} "
            f"| {sum(p['nodes_compared'] for p in mine)} | {sum(p['nodes_agree'] for p in mine)} |"
        )
    lines += ["", "Pairs that do not agree exactly:", ""]
    for p in pairs:
        if p["exact"]:
            continue
        ops = sorted({d["op_type"] for d in p["disagreements"]})
        audit_only = sorted(set(p["predicted_off_accelerator"]) - set(p.get("toolchain_off_accelerator") or []))
        tool_only = sorted(set(p.get("toolchain_off_accelerator") or []) - set(p["predicted_off_accelerator"]))
        parts = []
        if p["disagreements"]:
            parts.append(f"{len(p['disagreements'])} nodes placed differently ({', '.join(ops)})")
        if audit_only:
            parts.append("off the accelerator by the audit only: " + ", ".join(audit_only))
        if tool_only:
            parts.append("by the toolchain only: " + ", ".join(tool_only))
        if p.get("exact_where_observable"):
            parts.append("agrees where observable (unverifiable: " + ", ".join(p.get("unverifiable_op_types") or []) + ")")
        lines.append(f"- {p['model']} on {p['chip']}: " + "; ".join(parts or ["the toolchain fails, the audit predicts a build"]))
    lines += ["", SECTION_END]
    return "\n".join(lines)


def splice_section(page: Path, section: str) -> None:
    """Replace the marked section of `page` (or append it), leaving the rest of the page as it is."""
    text = page.read_text() if page.exists() else ""
    start, end = text.find(SECTION_START), text.find(SECTION_END)
    if start != -1 and end != -1:
        text = text[:start] + section + text[end + len(SECTION_END):]
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    page.write_text(text)


def main() -> int:
    global ESP_READING
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chips", default="", help="comma-separated chips (default: all in the verdicts)")
    parser.add_argument("--models", default="", help="comma-separated corpus models (default: all)")
    parser.add_argument("--show", type=int, default=30, help="disagreement kinds to print")
    parser.add_argument("--json", type=Path, help="write the per-pair result here")
    parser.add_argument("--markdown", type=Path, help=f"write the corpus section into this page (docs/audit-agreement.md), between {SECTION_START} and {SECTION_END}")
    parser.add_argument("--esp-reading", choices=ESP_READINGS, default=ESP_READING,
                        help="an ESP chip's truth: esp-ppq's conversion that ESP-DL's runtime loads (firmware) or esp-ppq's alone")
    args = parser.parse_args()
    ESP_READING = args.esp_reading
    result = run({c for c in args.chips.split(",") if c} or None, {m for m in args.models.split(",") if m} or None)
    s = result["summary"]
    print(f"pairs agreeing exactly: {s['pairs_exact']}/{s['pairs']}; nodes {s['nodes_agree']}/{s['nodes_compared']}; uncertain (not compared) {s['nodes_uncertain']}")
    print(f"pairs agreeing where the toolchain can observe (unverifiable placements apart, as in the node tests): {s['pairs_exact_where_observable']}/{s['pairs']}")
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
    if args.markdown:
        splice_section(args.markdown, render_section(result))
        print(f"wrote the corpus section of {args.markdown}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
