#!/usr/bin/env python3
"""docs/accuracy.md's tables, from the trained set's manifest and its sweep (docs/accuracy.json).

    python3 scripts/trained/render_accuracy.py

The sweep is scripts/corpus/sweep.py run on scripts/trained/manifest.json (the command is in the
page). Standard library only.
"""
from __future__ import annotations

import json
import math
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MANIFEST = ROOT / "scripts" / "trained" / "manifest.json"
RESULTS = ROOT / "docs" / "accuracy.json"
BRUTE_FORCE = ROOT / "docs" / "accuracy-bruteforce.json"
PAGE = ROOT / "docs" / "accuracy.md"
CHIPS = ("esp32s3", "esp32p4", "rk3588", "rk3576", "rk3568", "rk3566", "rk3562", "rv1106", "imx93", "imx8mp")
BEGIN, END = "<!-- generated: render_accuracy.py -->", "<!-- end generated -->"
# The goal of issue 26: a pair misses it when it loses more than 1 pp of its task metric or has an
# output under 20 dB SNR against the float model on the same inputs.
MAX_DROP_PP, MIN_SNR_DB = 1.0, 20.0


def metric_figures(acc: dict) -> tuple[float | None, float | None, float | None]:
    """(before, after, change in points) of the task metric, in percent for top-1 and AUROC."""
    key = {"top1": "top1", "auroc": "macro_auroc"}.get(acc.get("metric") or "")
    if not key or not acc.get("before") or not acc.get("after"):
        return None, None, None
    before, after = acc["before"].get(key), acc["after"].get(key)
    if before is None or after is None:
        return None, None, None
    return 100 * before, 100 * after, 100 * (after - before)


def lowest_snr(acc: dict) -> float | None:
    snrs = [o.get("snr_db") for o in (acc.get("outputs") or {}).values() if o.get("snr_db") is not None]
    return None if not snrs else (math.nan if any(math.isnan(s) for s in snrs) else min(snrs))


def misses(case: dict) -> list[str]:
    acc = case.get("accuracy") or {}
    _, _, change = metric_figures(acc)
    snr = lowest_snr(acc)
    out = []
    if change is not None and change < -MAX_DROP_PP - 1e-9:  # exactly one point lost meets the goal
        out.append(f"{change:+.1f} pp")
    if snr is not None and (math.isnan(snr) or snr < MIN_SNR_DB):
        out.append(f"{snr:.1f} dB")
    return out


def cell(case: dict | None) -> str:
    if case is None:
        return "-"
    if case.get("timed_out"):
        return "t/o"
    if not case.get("converted"):
        return "x"
    acc = case.get("accuracy") or {}
    before, after, change = metric_figures(acc)
    snr = lowest_snr(acc)
    snr_text = "" if snr is None else ("n/a dB" if math.isnan(snr) else f"{snr:.0f} dB")
    text = f"{after:.1f} ({change:+.1f} pp), {snr_text}" if change is not None else snr_text or "ok"
    return f"**{text}**" if misses(case) else text


def float_text(model: dict) -> str:
    value = model.get("float_metric")
    name = model.get("float_metric_name") or f"{model.get('metric')} (ONNX Runtime)"
    return "-" if value is None else f"{100 * value:.1f}% {name}"


def tables(manifest: dict, sweep: dict) -> list[str]:
    cases = {(c["model"], c["chip"]): c for c in sweep.get("cases", [])}
    chips = [c for c in CHIPS if any(chip == c for _, chip in cases)]
    lines = ["| model | weights | data | task metric (float, ONNX Runtime) | " + " | ".join(chips) + " |",
             "|---|---|---|---|" + "---|" * len(chips)]
    for m in manifest["models"]:
        row = [cell(cases.get((m["name"], chip))) for chip in chips]
        data = f"{m['data_kind']} ({m['data_domain']}), {m['eval']['count']} held-out"
        lines.append(f"| {m['name']} | {m['source']} | {data} | {float_text(m)} | " + " | ".join(row) + " |")
    missed = [(m["name"], chip, misses(cases[(m["name"], chip)])) for m in manifest["models"] for chip in chips
              if (m["name"], chip) in cases and cases[(m["name"], chip)].get("converted") and misses(cases[(m["name"], chip)])]
    failed = [(name, chip, c.get("failure") or "?") for (name, chip), c in sorted(cases.items()) if not c.get("converted")]
    commits = sorted({c["edgedeploy"]["ident"] for c in sweep.get("cases", [])})
    lines += ["", f"{len(cases)} builds (edgedeploy at {', '.join(commits)}; {', '.join(f'{k} {v}' for k, v in sweep.get('toolchains', {}).items())}). "
              f"**{len(missed)}** converted pairs miss the goal (more than {MAX_DROP_PP:.0f} pp lost, or an output under {MIN_SNR_DB:.0f} dB):", ""]
    lines += [f"- {name} on {chip}: {', '.join(why)}" for name, chip, why in missed] or ["- none"]
    if failed:
        lines += ["", "Builds that failed, in edgedeploy's sentence:", ""]
        lines += [f"- {name} on {chip}: {re.sub(r' [(]full log: [^)]*[)]', '', why)[:300]}" for name, chip, why in failed]
    return lines


def brute_force_table(results: dict) -> list[str]:
    """scripts/accuracy/brute_force.py's comparison, one row a model; the ranks of the form with
    producers beside where it was run. ONNX Runtime's QDQ format rounds a tensor once for all its
    readers, so a reader rounds its input there: the row is judged in the form with producers."""
    paired_rows = results.get("models_with_producers") or {}
    lines = ["", "### The diagnosis against brute force (ONNX Runtime's QDQ path)", "",
             "| model | nodes quantised | output SNR, every node int8 | diagnosis's first node | its brute-force rank: kept float / alone | the same, kept with its producers (`--with-producers`) | criterion (top node in the top 3), in the toolchain's form | before the referred figures: first node, rank | brute-force top 3 (kept float) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for name, r in results.get("models", {}).items():
        top3 = ", ".join(f"`{n}`" for n in r["brute_force_top3_by_gain"])
        paired = paired_rows.get(name)
        second = f"{paired['diagnosis_top_rank_by_gain']} / {paired['diagnosis_top_rank_alone']}" if paired else "not run"
        lines.append(f"| {name} | {r['nodes_quantised']} | {r['snr_every_node_db']:.1f} dB | `{r['diagnosis_top']}` | "
                     f"{r['diagnosis_top_rank_by_gain']} / {r['diagnosis_top_rank_alone']} | {second} | "
                     f"{criterion({**r, 'reader_rounds_input': True}, paired)} | {before_referred(r)} | {top3} |")
    return lines + target_brute_force_table(results.get("targets") or {}, results.get("targets_with_producers") or {})


def before_referred(r: dict, paired: dict | None = None) -> str:
    """The diagnosis's first node and its ranks before it ranked by errors referred to the outputs
    (kept by brute_force.py --rediagnose); "not re-run" where the row was not diagnosed again since."""
    before = r.get("diagnosis_before_referred")
    if not before:
        return "not re-run"
    if isinstance(before, str):  # a row brute-forced afresh with the referred diagnosis says so
        return before
    text = f"`{before['diagnosis_top']}`, {before['diagnosis_top_rank_by_gain']} / {before['diagnosis_top_rank_alone']}"
    second = (paired or {}).get("diagnosis_before_referred")
    return text + (f" ({second['diagnosis_top_rank_by_gain']} / {second['diagnosis_top_rank_alone']} with producers)" if second else "")


def target_brute_force_table(targets: dict, with_producers: dict | None = None) -> list[str]:
    """brute_force.py --chip: the same comparison on a chip's own quantised simulation, with top-1;
    the ranks of the second form (--with-producers) beside the single-node ones where it was run."""
    if not targets:
        return []
    lines = ["", "### The diagnosis against brute force (the chip's own quantised simulation)", "",
             "| model on chip | ops quantised (measured) | evaluation samples | every op int8: SNR, task metric | diagnosis's first node | its brute-force rank: kept float / alone | the same, kept with its producers (`--with-producers`) | criterion (top node in the top 3), in the toolchain's form | before the referred figures: first node, rank | brute-force top 3 (kept float: SNR, task metric) |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for case, r in targets.items():
        by_node = {n["node"]: n for n in r["nodes"]}
        metric = r.get("task_metric", "top1")  # top-1 %, or a detector's AUROC in %
        top3 = ", ".join(f"`{n}` ({by_node[n]['snr_all_but_this_db']:.1f} dB, {100 * by_node[n][metric + '_all_but_this']:.1f}%)" for n in r["brute_force_top3_by_gain"])
        every = f"{r['snr_every_node_db']:.1f} dB, {100 * r[metric + '_every_node']:.1f}% {metric}"
        measured = f"{r['nodes_quantised']}" + (f" ({r['nodes_measured']})" if r.get("nodes_measured", "every node") != "every node" else "")
        paired = (with_producers or {}).get(case)
        second = f"{paired['diagnosis_top_rank_by_gain']} / {paired['diagnosis_top_rank_alone']}" if paired else "not run"
        lines.append(f"| {case} ({r['toolchain']}) | {measured} | {r['evaluation_samples']} | {every} | `{r['diagnosis_top']}` | "
                     f"{r['diagnosis_top_rank_by_gain']} / {r['diagnosis_top_rank_alone']} | {second} | {criterion(r, paired)} | {before_referred(r, paired)} | {top3} |")
    return lines


def criterion(r: dict, paired: dict | None) -> str:
    """The criterion of issue 26's part 6 in the form of the brute force that is "everything but that node"
    on the row's toolchain (docs/accuracy.md, "Which tensor a node is charged with"): the single-node form
    where a tensor's rounding is its writer's, the form with producers where a reader rounds its input
    (the tensor entering a node kept off int8 alone is still its int8 writer's). The toolchain's
    declaration is in the row (`reader_rounds_input`, written by brute_force.py since it was recorded)."""
    rounds = r.get("reader_rounds_input")
    if rounds is None:
        return "form not recorded"
    judged, form = (paired, "with producers") if rounds else (r, "single node")
    if judged is None:
        return f"{form}: not run"
    ranks = [judged["diagnosis_top_rank_by_gain"], judged["diagnosis_top_rank_alone"]]
    holds = any(rank is not None and rank <= 3 for rank in ranks)
    return f"{form}: {'holds' if holds else '**fails**'}"


def main() -> int:
    manifest, sweep = json.loads(MANIFEST.read_text()), json.loads(RESULTS.read_text())
    page = PAGE.read_text()
    if BEGIN not in page or END not in page:
        sys.exit(f"{PAGE} has no {BEGIN} ... {END} block")
    head, rest = page.split(BEGIN, 1)
    tail = rest.split(END, 1)[1]
    lines = tables(manifest, sweep)
    if BRUTE_FORCE.exists():
        lines += brute_force_table(json.loads(BRUTE_FORCE.read_text()))
    PAGE.write_text(head + BEGIN + "\n" + "\n".join(lines) + "\n" + END + tail)
    print(f"wrote {PAGE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
