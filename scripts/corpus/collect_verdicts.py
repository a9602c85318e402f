#!/usr/bin/env python3
"""Ground truth for the audit: each toolchain's own placement of every ONNX node of the corpus,
beside the audit's prediction, per model and chip.

    .venv/bin/python scripts/corpus/collect_verdicts.py [--only MODELS] [--chips CHIPS] [--no-eiq] [--keep-others]

Where the toolchain converted the model in the direct run (docs/corpus-direct.json), its verdict
comes from edgedeploy's own parsers of what the toolchain itself wrote in that run:
- esp32s3/esp32p4: esp-ppq's `.info` file (quant_type per exported layer) through
  targets/espdl/worker_verdict.parse_info and targets/espdl/verdict.verdict_from_case;
- the RKNN chips: rknn-toolkit2's verbose "Network Layer Information Table" (the direct run
  builds with RKNN(verbose=True)) through targets/rknn/layer_table.verdict_from_output;
- imx93: the audit's own confirm path, `target.toolchain_verdicts(...)` (onnx2tf + Vela in the
  eiq worker; it needs its own instrumented conversion to map TFLite operators back to ONNX
  nodes), run here for every model onnx2tf+Vela converted, cached per model sha256;
- imx8mp: no host verdict exists (the VX delegate decides on the board at run time).
Where the toolchain failed on the model, the verdict is that failure with its own message. For
imx93 the confirm path (edgedeploy's own conversion, the one `edgedeploy build` runs) is also
run where the direct call failed, and its outcome is kept as the pair's "edgedeploy" entry: where
edgedeploy converts a model the direct script could not (it calibrates integer inputs in their
own dtype), that is what the audit must predict (scripts/corpus/agreement.py uses it).

--keep-others keeps the pairs of the models and chips not collected in this run (to re-collect a
few models); --refresh-eiq MODELS ignores their cached imx93 verdicts (after a change to the eiq
worker that changes what `edgedeploy build` produces).

Writes tests/fixtures/corpus/verdicts.json (compact: one placement code per node, in graph
order; the data CI compares the audit with, without the toolchains) and
docs/corpus-agreement.json (per pair: agreement, disagreements), and prints the summary.
A pair agrees exactly when the set of off-accelerator op types is the same for the prediction
and the toolchain, and every node the toolchain reports is placed the same.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HOME = Path(os.environ.get("EDGEDEPLOY_HOME", Path.home() / ".cache" / "edgedeploy"))
MANIFEST = ROOT / "tests" / "fixtures" / "corpus" / "corpus.json"
DIRECT = ROOT / "docs" / "corpus-direct.json"
VERDICTS = ROOT / "tests" / "fixtures" / "corpus" / "verdicts.json"
AGREEMENT = ROOT / "docs" / "corpus-agreement.json"
CACHE = HOME / "corpus-verdicts"
CHIPS = ("esp32s3", "esp32p4", "rk3588", "rk3576", "rk3568", "rk3566", "rk3562", "rv1106", "imx93")
CODES = {"accelerator": "A", "float": "F", "fallback": "C", "unsupported": "U"}


def load_worker_module(path: Path):
    """targets/espdl/worker_verdict.py imports nothing of edgedeploy or esp-ppq at module level."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("espdl_worker_verdict", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def file_of(item: dict) -> Path:
    base = ROOT / "tests" / "fixtures" / "corpus" if item["where"] == "fixtures" else HOME / "corpus"
    return base / item["file"]


def main() -> int:
    from edgedeploy.audit.confirm import ToolchainVerdict, compare
    from edgedeploy.audit.engine import audit_model, node_views
    from edgedeploy.audit.rules import Placement
    from edgedeploy.pipeline.audit import chip_precision, rules_for
    from edgedeploy.model import load_model
    from edgedeploy.model.intake import with_batch_pinned
    from edgedeploy.model.stats import node_names
    from edgedeploy.targets import find_chip
    import edgedeploy.targets.espdl as espdl_pkg
    from edgedeploy.targets.espdl.verdict import modules_the_runtime_lacks, verdict_from_case
    from edgedeploy.targets.rknn.layer_table import verdict_from_output

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="")
    parser.add_argument("--chips", default=",".join(CHIPS))
    parser.add_argument("--no-eiq", action="store_true", help="skip the imx93 confirm runs (use cached ones only)")
    parser.add_argument("--keep-others", action="store_true", help="keep the committed pairs of the models and chips not collected in this run")
    parser.add_argument("--refresh-eiq", default="", help="comma-separated models whose cached imx93 verdicts are ignored (re-run)")
    args = parser.parse_args()
    only = {n for n in args.only.split(",") if n}
    refresh = {n for n in args.refresh_eiq.split(",") if n}
    chips = [c for c in args.chips.split(",") if c]
    manifest = json.loads(MANIFEST.read_text())
    direct = json.loads(DIRECT.read_text())
    plain = {(c["model"], c["chip"]): c for c in direct["cases"] if c["variant"] == "plain"}
    workaround = {(c["model"], c["chip"]): c for c in direct["cases"] if c["variant"] == "workaround"}
    parse_info = load_worker_module(Path(espdl_pkg.__file__).with_name("worker_verdict.py")).parse_info
    models = [m for m in manifest["models"] if (not only or m["name"] in only) and file_of(m["model"]).is_file()]

    # imx93: the confirm path, batched (TensorFlow starts once), cached per model sha256.
    imx93: dict[str, ToolchainVerdict] = {}
    CACHE.mkdir(parents=True, exist_ok=True)
    if "imx93" in chips:
        todo = []
        for m in models:
            case = plain.get((m["name"], "imx93"))
            cached = CACHE / f"imx93-{m['model']['sha256'][:20]}.json"
            if cached.is_file() and m["name"] not in refresh:
                imx93[m["name"]] = ToolchainVerdict.from_dict(json.loads(cached.read_text()))
            elif case and not str(case.get("error") or "").startswith("timed out") and not args.no_eiq:
                # Also where the direct call failed: what `edgedeploy build` gets on that model.
                todo.append(m)
        if todo:
            target, _ = find_chip("imx93")
            started = time.monotonic()
            print(f"imx93: running onnx2tf+Vela through the confirm path on {len(todo)} models ...", file=sys.stderr, flush=True)
            work = CACHE / "imx93-work"
            for m in todo:  # one at a time, so that an interrupted run keeps what it finished
                try:
                    # The confirm path's default limit (300 s a model) is short for the larger
                    # models on a shared 2-core machine; a time-out is not a verdict.
                    v = target.toolchain_verdicts([file_of(m["model"])], "imx93", work, work / "toolchain.log", inputs=[file_of(m["calib"])], per_model_timeout_s=1500)[0]
                except Exception as exc:  # noqa: BLE001 - recorded: the confirm path itself broke
                    v = ToolchainVerdict("onnx2tf+vela", "?", failed=f"confirm path raised {type(exc).__name__}: {exc}")
                    v.estimates["confirm_path_error"] = True
                imx93[m["name"]] = v
                if not (v.failed and "timed out" in v.failed):
                    (CACHE / f"imx93-{m['model']['sha256'][:20]}.json").write_text(json.dumps(v.to_dict()))
                print(f"  {m['name']}: {'failed: ' + v.failed if v.failed else f'{len(v.nodes)} nodes'} ({time.monotonic() - started:.0f} s)", file=sys.stderr, flush=True)

    out_models = {}
    confirm_errors: list[dict] = []
    pairs = {}
    agreement = {}
    for m in models:
        name = m["name"]
        model = load_model(file_of(m["model"]))
        audited = with_batch_pinned(model) or model
        views = node_views(audited)
        display = node_names(audited.graph)
        ops = [n.op_type for n in audited.graph.node]
        out_models[name] = {"sha256": m["model"]["sha256"], "nodes": [[d, o] for d, o in zip(display, ops)]}
        for chip in chips:
            case = plain.get((name, chip))
            if case is None:
                continue
            target, chip_obj = find_chip(chip)
            precision, _ = chip_precision(chip_obj, None, False)
            prediction = audit_model(audited, rules_for(target, chip, precision), precision, views=views)
            fixed = workaround.get((name, chip))
            if not case["converted"] and str(case.get("error") or "").startswith("timed out"):
                continue  # our time limit, not the toolchain's verdict: no ground truth for this pair
            built = None  # imx93: edgedeploy's own conversion where the direct call failed
            if not case["converted"]:
                msg = case.get("toolchain_message") or case.get("error") or "failed"
                verdict = ToolchainVerdict(case["toolchain"], case["toolchain"], failed=msg)
                if chip == "imx93" and imx93.get(name) is not None:
                    built = imx93[name]
            elif chip.startswith("esp32"):
                info = HOME / case["cache"] / "out" / "model.info"
                layers, initializers = parse_info(info.read_text(errors="replace"))
                verdict = verdict_from_case(file_of(m["model"]), {"ok": True, "layers": layers, "initializers": initializers}, case["toolchain"].split(" ", 1)[1])
            elif chip == "imx93":
                verdict = imx93.get(name)
                if verdict is None:
                    continue
                if verdict.failed:
                    # onnx2tf + Vela convert this model when called directly, but edgedeploy's
                    # confirm path did not get a verdict: no ground truth, and a core bug to report.
                    confirm_errors.append({"model": name, "chip": chip, "message": verdict.failed,
                                           "call": "target.toolchain_verdicts([model], 'imx93', work, log, inputs=[calib])"})
                    continue
            else:
                log = (HOME / case["cache"] / "log.txt").read_text(errors="replace")
                verdict = verdict_from_output(log, audited.graph, True, case["toolchain"].split(" ", 1)[1])
            cmp = compare(prediction, verdict)
            placements = ""
            details = {}
            if not verdict.failed:
                for d in display:
                    v = verdict.nodes.get(d)
                    placements += CODES[v.placement.value] if v else "."
                    if v and v.placement is not Placement.ACCELERATOR:
                        details[d] = v.detail
            pred_off = sorted({n.op_type for n in prediction.nodes if not n.placement.on_accelerator})
            tool_off = sorted({ops[display.index(k)] for k, v in verdict.nodes.items() if not v.placement.on_accelerator and k in display}) if not verdict.failed else None
            if verdict.failed:
                exact = bool(cmp["agree"])
            else:
                exact = not cmp["disagreements"] and pred_off == tool_off
            pair = {
                "toolchain": verdict.version,
                "failed": verdict.failed,
                "placements": placements or None,
                "detail": details,
                "unmapped": len(verdict.unmapped),
            }
            lacks = modules_the_runtime_lacks(l["op_type"] for l in layers) if chip.startswith("esp32") and not verdict.failed else []
            if lacks:  # esp-ppq converted, but ESP-DL's runtime cannot load what it exported (agreement.truth_of)
                pair["runtime_lacks"] = lacks
            if fixed is not None:
                pair["workaround"] = {"variant": fixed.get("workaround"), "converted": fixed["converted"], "toolchain_message": fixed.get("toolchain_message")}
                if fixed["converted"] and chip.startswith(("rk", "rv")):
                    # The placement the toolkit gives once its own advice is followed.
                    wlog = (HOME / fixed["cache"] / "log.txt").read_text(errors="replace")
                    wv = verdict_from_output(wlog, audited.graph, True, fixed["toolchain"].split(" ", 1)[1])
                    pair["workaround"]["placements"] = "".join(CODES[wv.nodes[d].placement.value] if d in wv.nodes else "." for d in display)
                    pair["workaround"]["detail"] = {d: v.detail for d, v in wv.nodes.items() if not v.placement.on_accelerator}
            if built is not None:
                # `edgedeploy build` converts through the confirm path's worker: where the direct
                # script failed but edgedeploy converts, the pair's truth is edgedeploy's result.
                pair["edgedeploy"] = {"converted": not built.failed, "failed": built.failed}
                if not built.failed:
                    pair["edgedeploy"]["placements"] = "".join(CODES[built.nodes[d].placement.value] if d in built.nodes else "." for d in display)
                    pair["edgedeploy"]["detail"] = {d: v.detail for d, v in built.nodes.items() if not v.placement.on_accelerator}
                    cmp = compare(prediction, built)
                    exact = not cmp["disagreements"] and pred_off == sorted({ops[display.index(k)] for k, v in built.nodes.items() if not v.placement.on_accelerator and k in display})
            if verdict.estimates.get("confirm_path_error"):
                pair["confirm_path_error"] = True
            pairs[f"{name}/{chip}"] = pair
            agreement[f"{name}/{chip}"] = {
                "model": name,
                "chip": chip,
                "exact": exact,
                "toolchain_failed": verdict.failed,
                "predicted_unsupported": sorted({n.op_type for n in prediction.nodes if n.placement is Placement.UNSUPPORTED}),
                "predicted_off_accelerator": pred_off,
                "toolchain_off_accelerator": tool_off,
                "nodes_compared": cmp["compared"],
                "nodes_agree": cmp["agree"],
                "not_reported": len(cmp["not_reported"]),
                "unverifiable": len(cmp["unverifiable"]),
                "disagreements": [{k: d.get(k) for k in ("node", "op_type", "predicted", "toolchain", "reason")} for d in cmp["disagreements"]],
            }
    if args.keep_others and VERDICTS.is_file():
        # Re-collecting a few models or chips: the committed pairs of the others stay as they
        # were, in the committed order (the re-collected ones replace theirs in place).
        old_verdicts = json.loads(VERDICTS.read_text())
        old_agreement = json.loads(AGREEMENT.read_text())["pairs"] if AGREEMENT.is_file() else {}
        pairs = {**{k: pairs.get(k, v) for k, v in old_verdicts["pairs"].items()}, **pairs}
        agreement = {**{k: agreement.get(k, v) for k, v in old_agreement.items()}, **agreement}
        out_models = {**{k: out_models.get(k, v) for k, v in old_verdicts["models"].items()}, **out_models}
    VERDICTS.write_text(json.dumps({
        "about": "Each toolchain's own placement of every ONNX node of the corpus models (scripts/corpus/collect_verdicts.py). "
        "'models' lists each model's nodes (display name, op type) in graph order; a pair's 'placements' has one code per node in "
        "that order. 'detail' says what the toolchain printed for every node off the accelerator. 'failed' is the toolchain's own "
        "message where it refused the model.",
        "codes": {**{v: k for k, v in CODES.items()}, ".": "not reported by the toolchain (fused into a neighbour it does not name, folded, or unmapped)"},
        "models": out_models,
        "pairs": pairs,
    }, separators=(",", ":")) + "\n")
    AGREEMENT.write_text(json.dumps({"pairs": agreement, "summary": summarise(agreement), "confirm_path_errors": confirm_errors}, indent=1) + "\n")
    print_summary(agreement)
    for e in confirm_errors:
        print(f"confirm path failed where the toolchain converts: {e['model']} {e['chip']}: {e['message']}")
    return 0


def summarise(agreement: dict) -> dict:
    per_chip = defaultdict(lambda: [0, 0])
    compared = agree = 0
    for p in agreement.values():
        per_chip[p["chip"]][0] += p["exact"]
        per_chip[p["chip"]][1] += 1
        compared += p["nodes_compared"]
        agree += p["nodes_agree"]
    kinds: dict[tuple[str, str, str], list] = defaultdict(lambda: [0, set()])  # -> [nodes, pairs]
    for key, p in agreement.items():
        if p["toolchain_failed"]:
            if not p["exact"]:
                k = kinds[("*", f"(model {p['model']})", "audit: buildable; toolchain: fails")]
                k[1].add(key)
            continue
        for d in p["disagreements"]:
            k = kinds[(p["chip"], d["op_type"], f"{d['predicted']} -> {d['toolchain']}")]
            k[0] += 1
            k[1].add(key)
        # Op types off the accelerator on one side only, even where no compared node disagrees
        # (a node the toolchain cannot report, e.g. esp-ppq and "unsupported", or fused away).
        pred, tool = set(p["predicted_off_accelerator"]), set(p["toolchain_off_accelerator"] or [])
        for op in pred - tool:
            kinds[(p["chip"], op, "op type off-accelerator by the audit only")][1].add(key)
        for op in tool - pred:
            kinds[(p["chip"], op, "op type off-accelerator by the toolchain only")][1].add(key)
    return {
        "pairs": len(agreement),
        "pairs_exact": sum(p["exact"] for p in agreement.values()),
        "nodes_compared": compared,
        "nodes_agree": agree,
        "per_chip": {c: {"exact": v[0], "pairs": v[1]} for c, v in sorted(per_chip.items())},
        "disagreement_kinds": sorted(
            ({"chip": c if c != "*" else ",".join(sorted({x.split("/")[1] for x in v[1]})), "op_type": o, "kind": k, "nodes": v[0], "pairs": len(v[1]),
              "models": sorted({x.split("/")[0] for x in v[1]})} for (c, o, k), v in kinds.items()),
            key=lambda e: (-e["pairs"], -e["nodes"], e["chip"], e["op_type"]),
        ),
    }


def print_summary(agreement: dict) -> None:
    s = summarise(agreement)
    print(f"pairs agreeing exactly: {s['pairs_exact']}/{s['pairs']}; nodes {s['nodes_agree']}/{s['nodes_compared']}")
    for chip, v in s["per_chip"].items():
        print(f"  {chip:8s} {v['exact']}/{v['pairs']}")
    print("disagreement kinds (chip, op type, kind, nodes, pairs, models):")
    for k in s["disagreement_kinds"]:
        print(f"  {k['chip']:8s} {k['op_type']:24s} {k['kind']:44s} {k['nodes']:4d} {k['pairs']:3d}  {', '.join(k['models'])[:120]}")


if __name__ == "__main__":
    sys.exit(main())
