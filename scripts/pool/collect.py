#!/usr/bin/env python3
"""The real toolchains' placement of every node of the pool models (and of gen_cases.py's packed
case models), recorded as committed data for the offline score (scripts/pool/score.py).

    nice -n 10 .venv/bin/python scripts/pool/collect.py [--chips rk3588,rk3566,esp32s3,imx93] [--parts held-out,tuning]
        [--only NAMES] [--cases] [--max-minutes M]

Each (model, chip) is converted by the toolchain called directly, with the corpus's direct
scripts (scripts/corpus/direct/: rknn-toolkit2 with RKNN(verbose=True), esp-ppq) through
scripts/corpus/run_direct.Runner (one subprocess per case, killed past --timeout-s), and read by
edgedeploy's own verdict parsers, as scripts/corpus/collect_verdicts.py does for the corpus:
- the RKNN chips: the verbose "Network Layer Information Table" (targets/rknn/layer_table);
  where the build fails and the toolkit's log advises config(disable_rules=[...]), the build is
  run again with that advice followed (what `edgedeploy build` does) and kept as "workaround";
- esp32s3/esp32p4: esp-ppq's .info file (targets/espdl/worker_verdict, targets/espdl/verdict);
- imx93: the audit's --confirm path, target.toolchain_verdicts (onnx2tf + Vela in the eiq worker).
Resumable: every case is cached under $EDGEDEPLOY_HOME/pool-direct/<key>/ (key: model sha256,
chip, toolchain version, variant) and imx93 verdicts under $EDGEDEPLOY_HOME/pool-verdicts/; the
committed file is rewritten after every case, so an interrupted sweep keeps what it finished.
Held-out models go first (the headline figure), smallest first.

Writes tests/fixtures/pool/verdicts.json (the corpus's format: per model its nodes in graph
order, per pair one placement code per node) and tests/fixtures/pool/skeletons/<name>.onnx (the
graph without its large weights, so CI can audit it without the pool).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "scripts" / "corpus"))
sys.path.insert(0, str(HERE))
import run_direct  # noqa: E402  (stdlib only)
from catalogue import FRESH_SETS  # noqa: E402  (plain data)

HOME = Path(os.environ.get("EDGEDEPLOY_HOME", Path.home() / ".cache" / "edgedeploy"))
POOL = HOME / "pool"
FIXTURES = ROOT / "tests" / "fixtures" / "pool"
MANIFEST = FIXTURES / "manifest.json"
# --out-dir moves these (a long sweep writes to a copy; its results are copied in and committed).
VERDICTS = FIXTURES / "verdicts.json"
SKELETONS = FIXTURES / "skeletons"
CODES = {"accelerator": "A", "float": "F", "fallback": "C", "unsupported": "U"}
RKNN = ("rk3588", "rk3576", "rk3568", "rk3566", "rk3562", "rv1106")
ESP = ("esp32s3", "esp32p4")
run_direct.CACHE = HOME / "pool-direct"


def load_verdicts() -> dict:
    if VERDICTS.is_file():
        return json.loads(VERDICTS.read_text())
    return {"models": {}, "pairs": {}}


def record(data: dict, model_name: str, key: str | None, pair: dict | None) -> None:
    """Add one model's nodes (and one pair) to the verdicts file under a lock, re-reading it first:
    two collectors (other chips) may write the same file."""
    import fcntl

    VERDICTS.parent.mkdir(parents=True, exist_ok=True)
    with open(VERDICTS.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        current = load_verdicts()
        current["models"][model_name] = data["models"][model_name]
        if key is not None:
            current["pairs"][key] = pair
        save_verdicts(current)
    data["pairs"].update(current["pairs"])


def save_verdicts(data: dict) -> None:
    data["about"] = (
        "Each toolchain's own placement of every ONNX node of the issue-27 pool models and packed case models "
        "(scripts/pool/collect.py). 'models' lists each model's nodes (display name, op type) in graph order; a pair's "
        "'placements' has one code per node in that order; 'failed' is the toolchain's own message where it refused the model; "
        "'workaround' is the build with rknn-toolkit2's own disable_rules advice followed.")
    data["codes"] = {**{v: k for k, v in CODES.items()}, ".": "not reported by the toolchain (fused into a neighbour it does not name, folded, or unmapped)"}
    data["models"] = dict(sorted(data["models"].items()))
    data["pairs"] = dict(sorted(data["pairs"].items()))
    VERDICTS.parent.mkdir(parents=True, exist_ok=True)
    tmp = VERDICTS.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, separators=(",", ":")) + "\n")
    os.replace(tmp, VERDICTS)


def write_skeleton(name: str, path: Path) -> None:
    """The graph with every large initializer turned into a reference to a file not written
    (scripts/corpus/make_skeletons.strip): the audit reads shapes, and values of small tensors."""
    import onnx
    from make_skeletons import strip

    model = onnx.load(str(path))
    strip(model, name)
    SKELETONS.mkdir(parents=True, exist_ok=True)
    (SKELETONS / f"{name}.onnx").write_bytes(model.SerializeToString())


def audited_graph(path: Path):
    """The model as the audit sees it (intake, batch pinned): its graph names the nodes."""
    from edgedeploy.model import load_model
    from edgedeploy.model.intake import with_batch_pinned

    model = load_model(path)
    return with_batch_pinned(model) or model


def codes_of(verdict, display: list[str]) -> tuple[str, dict]:
    placements = "".join(CODES[verdict.nodes[d].placement.value] if d in verdict.nodes else "." for d in display)
    detail = {d: v.detail for d, v in verdict.nodes.items() if not v.placement.on_accelerator}
    return placements, detail


def case_key(sha: str, chip: str, version: str, variant: str) -> str:
    return hashlib.sha256(f"{sha} {chip} {version} {variant}".encode()).hexdigest()[:20]


def failure(result: dict, text: str) -> str:
    err = str(result.get("error") or "failed")
    if err.startswith(("the toolchain process", "timed out")):
        return err
    return run_direct.toolchain_message(text) or err


def rknn_pair(runner, sha: str, path: Path, calib: Path, chip: str, graph, display: list[str], variant: str = "plain") -> dict:
    """rknn-toolkit2's placements; where the build fails on a rule the log advises disabling,
    also the build with that advice followed (at most three rounds, as run_direct.py)."""
    from edgedeploy.targets.rknn.layer_table import verdict_from_output

    version = runner.versions["rknn"]
    args = [str(path), str(calib), chip]
    result, text, _ = runner.run_case("rknn", "rknn_direct.py", args, case_key(sha, chip, version, variant))
    pair = {"toolchain": version, "failed": None, "placements": None, "detail": {}, "seconds": result.get("_wall_s")}
    if result.get("converted"):
        pair["placements"], pair["detail"] = codes_of(verdict_from_output(text, graph, True, version.split(" ", 1)[1]), display)
        return pair
    pair["failed"] = failure(result, text)
    rules = sorted(set(run_direct.ADVICE.findall(text)))
    if not rules:
        return pair
    for _ in range(3):
        r2, t2, _ = runner.run_case("rknn", "rknn_direct.py", args + ["--disable-rule", *rules], case_key(sha, chip, version, f"disable_rules={rules}" if variant == "plain" else f"{variant}, disable_rules={rules}"))
        more = [a for a in sorted(set(run_direct.ADVICE.findall(t2))) if a not in rules]
        if r2.get("converted") or not more:
            break
        rules += more
    pair["workaround"] = {"variant": f"config(disable_rules={rules}) as the toolkit's build log advises", "converted": bool(r2.get("converted"))}
    if r2.get("converted"):
        pair["workaround"]["placements"], pair["workaround"]["detail"] = codes_of(verdict_from_output(t2, graph, True, version.split(" ", 1)[1]), display)
    else:
        pair["workaround"]["toolchain_message"] = failure(r2, t2)
    return pair


def esp_pair(runner, sha: str, path: Path, calib: Path, chip: str, display: list[str], variant: str = "plain") -> dict:
    """esp-ppq's placements from the .info file it exports (float vs int8 layers)."""
    import importlib.util

    import edgedeploy.targets.espdl as espdl_pkg
    from edgedeploy.targets.espdl.verdict import modules_the_runtime_lacks, verdict_from_case

    version = runner.versions["espdl"]
    result, text, folder = runner.run_case("espdl", "espdl_direct.py", [str(path), str(calib), chip], case_key(sha, chip, version, variant))
    pair = {"toolchain": version, "failed": None, "placements": None, "detail": {}, "seconds": result.get("_wall_s")}
    if not result.get("converted"):
        pair["failed"] = failure(result, text)
        return pair
    spec = importlib.util.spec_from_file_location("espdl_worker_verdict", Path(espdl_pkg.__file__).with_name("worker_verdict.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    layers, initializers = module.parse_info((folder / "out" / "model.info").read_text(errors="replace"))
    verdict = verdict_from_case(path, {"ok": True, "layers": layers, "initializers": initializers}, version.split(" ", 1)[1])
    pair["placements"], pair["detail"] = codes_of(verdict, display)
    lacks = modules_the_runtime_lacks(layer["op_type"] for layer in layers)
    if lacks:  # esp-ppq converted, but ESP-DL's runtime cannot load what it exported (agreement.truth_of)
        pair["runtime_lacks"] = lacks
    return pair


def imx93_pair(sha: str, path: Path, calib: Path, display: list[str], timeout_s: float, variant: str = "plain") -> dict:
    """onnx2tf + Vela through the audit's --confirm path (it maps TFLite operators back to ONNX
    nodes), cached per model sha256.

    The worker's own entry (the int8 operator list, the layer names, Vela's printout) is kept
    beside the cached verdict and read again with the current verdict reader whenever it is
    there: a change to targets/eiq/vela.py is then applied to every collected model without
    converting again (a1de6d0 had to convert again: only the read verdicts were kept).
    """
    from edgedeploy.audit.confirm import ToolchainVerdict
    from edgedeploy.targets import find_chip

    cache = HOME / "pool-verdicts" / (f"imx93-{sha[:20]}.json" if variant == "plain" else f"imx93-{sha[:20]}-whole.json")
    entry_file = cache.with_suffix(".entry.json")
    if entry_file.is_file():
        verdict = reread_imx93(entry_file, path, cache)
    elif cache.is_file():
        verdict = ToolchainVerdict.from_dict(json.loads(cache.read_text()))
    else:
        target, _ = find_chip("imx93")
        work = HOME / "pool-verdicts" / "imx93-work"
        started = time.monotonic()
        verdict = target.toolchain_verdicts([path], "imx93", work, work / "toolchain.log", inputs=[calib], per_model_timeout_s=timeout_s)[0]
        verdict.estimates["wall_s"] = round(time.monotonic() - started, 1)
        if not (verdict.failed and "timed out" in verdict.failed):
            cache.parent.mkdir(parents=True, exist_ok=True)
            cache.write_text(json.dumps(verdict.to_dict()))
            results = work / "results.jsonl"
            if results.is_file():  # one model per worker run: its one line
                entry_file.write_text(results.read_text().splitlines()[0] + "\n")
    pair = {"toolchain": verdict.version, "failed": verdict.failed, "placements": None, "detail": {}, "seconds": verdict.estimates.get("wall_s")}
    if not verdict.failed:
        pair["placements"], pair["detail"] = codes_of(verdict, display)
    return pair


def reread_imx93(entry_file: Path, path: Path, cache: Path):
    """The verdict read again from the worker's kept entry, with the tokens the worker saw (the
    model's nodes renamed edn<index> in graph order, targets/eiq/confirm.tokens_for)."""
    import onnx

    from edgedeploy.targets.eiq import vela_version
    from edgedeploy.targets.eiq.confirm import tokens_for
    from edgedeploy.targets.eiq.vela import verdict_from_entry

    _, token_names, producers = tokens_for(onnx.load(str(path), load_external_data=False).graph)
    verdict = verdict_from_entry(json.loads(entry_file.read_text()), token_names, producers, toolchain="onnx2tf+vela", version=vela_version())
    if cache.is_file():  # the conversion's wall time, measured when it ran
        verdict.estimates["wall_s"] = json.loads(cache.read_text()).get("estimates", {}).get("wall_s")
    return verdict


def units(args) -> list[dict]:
    """What to convert: pool models (held-out first, then smallest first), or gen_cases.py's packed models."""
    if args.cases:
        cases = json.loads((FIXTURES / "cases.json").read_text())
        only = {n for n in args.only.split(",") if n}
        return [{"name": c["name"], "path": HOME / "pool-cases" / f"{c['name']}.onnx", "calib": HOME / "pool-cases" / f"{c['name']}.calib.npz",
                 "sha256": c["sha256"], "part": c["part"], "bytes": 0} for c in cases["models"] if not only or c["name"] in only]
    manifest = json.loads(MANIFEST.read_text())
    parts = [p for p in args.parts.split(",") if p]
    only = {n for n in args.only.split(",") if n}
    out = []
    for m in manifest["models"].values():
        if (only and m["name"] not in only) or m["part"] not in parts:
            continue
        out.append({"name": m["name"], "path": POOL / f"{m['name']}.onnx", "calib": POOL / f"{m['name']}.calib.npz",
                    "sha256": m["sha256"], "part": m["part"], "bytes": m["bytes"]})
    return sorted(out, key=lambda u: (parts.index(u["part"]), u["bytes"]))


def with_whole_samples(u: dict, model) -> dict:
    """The unit with calibration data the toolchains are fed from as edgedeploy.datasets reads it.

    An input whose leading axis is not a batch axis (Silero VAD's state [2, 1, 128] beside its
    input [1, 512]) takes whole samples stacked on a new leading axis, which the direct scripts
    feed one at a time (graph_inputs.feed_of). Pools built before build_pool.py drew such
    samples hold [4, 1, 128], which was cut into [1, 1, 128] and refused by the toolchains: those
    are drawn again as build_pool.calibration draws them now (same seed), under their own cache
    key. Models without such inputs keep their data and cache keys.
    """
    from edgedeploy.datasets import leading_axis_is_batch, load_dataset, model_input_specs
    from edgedeploy.errors import OptionError

    specs = model_input_specs(model)
    if all(leading_axis_is_batch(s, specs) for s in specs):
        return u
    try:
        load_dataset(u["calib"], specs)
        return {**u, "variant": "plain, whole samples"}
    except OptionError as exc:
        import numpy as np

        import build_pool

        redrawn = HOME / "pool-calib-whole" / Path(u["calib"]).name
        redrawn.parent.mkdir(parents=True, exist_ok=True)
        np.savez(redrawn, **build_pool.calibration(model.proto, build_pool.seed_of(u["name"])))
        print(f"{u['name']}: calibration drawn again with whole samples ({exc})", flush=True)
        return {**u, "calib": redrawn, "variant": "plain, whole samples"}


def collect_unit(runner, u: dict, chips: list[str], data: dict, args) -> None:
    from edgedeploy.model.stats import node_names

    model = audited_graph(u["path"])
    u = with_whole_samples(u, model)
    graph = model.graph
    display = node_names(graph)
    data["models"][u["name"]] = {"sha256": u["sha256"], "part": u["part"], "nodes": [[d, n.op_type] for d, n in zip(display, graph.node)]}
    write_skeleton(u["name"], u["path"])
    for chip in chips:
        key = f"{u['name']}/{chip}"
        pair = data["pairs"].get(key)
        if pair is None or pair.get("sha256") != u["sha256"]:
            pair = collect_pair(runner, u, chip, graph, display, args)
            if pair is None:
                continue
            record(data, u["name"], key, pair)
        if args.cases and pair["failed"] and not (pair.get("workaround") or {}).get("converted"):
            bisect(runner, u, chip, data, args)


def collect_pair(runner, u: dict, chip: str, graph, display: list[str], args) -> dict | None:
    """One model on one chip (None: timed out, which is not a verdict)."""
    started = time.monotonic()
    if chip in RKNN:
        pair = rknn_pair(runner, u["sha256"], u["path"], u["calib"], chip, graph, display, u.get("variant", "plain"))
    elif chip in ESP:
        pair = esp_pair(runner, u["sha256"], u["path"], u["calib"], chip, display, u.get("variant", "plain"))
    elif chip == "imx93":
        pair = imx93_pair(u["sha256"], u["path"], u["calib"], display, args.timeout_s, u.get("variant", "plain"))
    else:
        raise SystemExit(f"no host verdict for {chip}")
    key = f"{u['name']}/{chip}"
    if "timed out" in (pair.get("failed") or ""):  # the eiq worker says "The eiq worker timed out after N s" (imx93_pair caches none)
        print(f"{key}: timed out (not a verdict; not recorded)", flush=True)
        return None
    if "corpus/direct/" in (pair.get("failed") or ""):
        # Our own direct script broke (e.g. esp-ppq's loader on a rank-1 input), not the toolchain.
        print(f"{key}: the direct script failed, not the toolchain (not recorded): {pair['failed'][:160]}", flush=True)
        return None
    pair["sha256"] = u["sha256"]
    state = "converts" if not pair["failed"] else f"fails: {pair['failed'][:120]}" + (" (workaround converts)" if pair.get("workaround", {}).get("converted") else "")
    print(f"{key}: {state} ({time.monotonic() - started:.0f} s)", flush=True)
    return pair


def case_tags(model) -> list[str]:
    return list(dict.fromkeys(n.name.split("_", 1)[0] for n in model.graph.node))


def bisect(runner, u: dict, chip: str, data: dict, args) -> None:
    """A pack the toolchain refused gives no per-case verdict: convert its two halves apart, and so
    on down to single cases, so that one refused case does not cost the others their verdicts."""
    import numpy as np
    import onnx

    model = onnx.load(str(u["path"]))
    tags = case_tags(model)
    if len(tags) < 2:
        return
    calib = dict(np.load(u["calib"]))
    for half in (tags[: len(tags) // 2], tags[len(tags) // 2 :]):
        name = f"{u['name'].split('__')[0]}__{half[0]}-{half[-1]}"
        path = HOME / "pool-cases" / "sub" / f"{name}.onnx"
        sub = sub_model(model, set(half))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(sub.SerializeToString())
        calib_path = path.with_suffix(".calib.npz")
        np.savez(calib_path, **{k: v for k, v in calib.items() if k.split("_", 1)[0] in half})
        unit = {"name": name, "path": path, "calib": calib_path, "sha256": hashlib.sha256(path.read_bytes()).hexdigest(), "part": u["part"], "bytes": 0}
        collect_unit(runner, unit, [chip], data, args)


def sub_model(model, tags: set[str]):
    """The cases `tags` of a pack, as a model of their own (same opset, same names)."""
    from onnx import helper

    mine = lambda name: name.split("_", 1)[0] in tags  # noqa: E731
    g = model.graph
    graph = helper.make_graph([n for n in g.node if mine(n.name)], g.name, [i for i in g.input if mine(i.name)],
                              [o for o in g.output if mine(o.name)], [t for t in g.initializer if mine(t.name)])
    out = helper.make_model(graph, opset_imports=list(model.opset_import), producer_name=model.producer_name)
    out.ir_version = model.ir_version
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chips", default="rk3588,rk3566")
    parser.add_argument("--parts", default="held-out,tuning")
    parser.add_argument("--only", default="")
    parser.add_argument("--cases", action="store_true", help="convert gen_cases.py's packed case models instead of the pool")
    parser.add_argument("--timeout-s", type=float, default=900)
    parser.add_argument("--out-dir", type=Path, default=FIXTURES, help="where verdicts.json and skeletons/ go (default tests/fixtures/pool)")
    parser.add_argument("--fresh", action="store_true", help="the fresh set (catalogue.fresh_entries): tests/fixtures/pool/fresh/ (manifest, verdicts, skeletons); --set fresh")
    parser.add_argument("--set", choices=sorted(FRESH_SETS), help="a fresh set of catalogue.FRESH_SETS: tests/fixtures/pool/<SET>/ (manifest, verdicts, skeletons)")
    parser.add_argument("--verdicts-file", help="with --set: the verdicts go to this file of the set's folder instead of verdicts.json "
                        "(chip_verdicts.json: the RKNN chips other than rk3588 and rk3566, kept apart from the blind score)")
    parser.add_argument("--max-minutes", type=float, default=0, help="start no new model after this long (0: no limit)")
    args = parser.parse_args()
    global VERDICTS, SKELETONS, MANIFEST
    fresh = "fresh" if args.fresh else args.set
    if fresh:  # scored blind, apart from the pool (score.py --set)
        args.out_dir, MANIFEST = FIXTURES / fresh, FIXTURES / fresh / "manifest.json"
    if args.cases:  # the packed cases: their own verdicts file and skeletons
        VERDICTS, SKELETONS = args.out_dir / "case_verdicts.json", args.out_dir / "case_skeletons"
    else:
        VERDICTS, SKELETONS = args.out_dir / (args.verdicts_file or VERDICTS.name), args.out_dir / "skeletons"
    chips = [c for c in args.chips.split(",") if c]
    runner = run_direct.Runner(args.timeout_s, HOME / "pool-direct" / "runner.json")
    envs = {e for e, cs in (("rknn", RKNN), ("espdl", ESP)) if set(cs) & set(chips)}
    runner.versions = {e: run_direct.env_version(e) for e in sorted(envs)}
    data = load_verdicts()
    started = time.monotonic()
    for u in units(args):
        if args.max_minutes and time.monotonic() - started > args.max_minutes * 60:
            print("time budget spent; re-run to go on (cached cases are not run again)", flush=True)
            break
        if not u["path"].is_file():
            print(f"{u['name']}: not built here (scripts/pool/build_pool.py)", flush=True)
            continue
        try:
            collect_unit(runner, u, chips, data, args)
        except Exception as exc:  # noqa: BLE001 - our own reading failed: say so and go on
            print(f"{u['name']}: collector error {type(exc).__name__}: {exc}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
