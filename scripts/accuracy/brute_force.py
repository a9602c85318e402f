#!/usr/bin/env python3
"""Check the diagnosis's ranking by brute force, on ONNX Runtime's QDQ path (docs/accuracy.md).

For each model and every node ONNX Runtime quantises: the model quantised with that node left in
float (everything else int8), and the model with that node alone quantised; the task output's SNR
against the float model on the same evaluation inputs. The brute-force ranking puts first the
node whose float keeping gains most, and is compared with what `edgedeploy diagnose` ranks first
on the same path (its first sharp fall, else its worst node alone).

    .venv/bin/python scripts/accuracy/brute_force.py [--models a,b] [--calib 32] [--eval 32]
    .venv/bin/python scripts/accuracy/brute_force.py --chip esp32s3 --models a,b [--calib 128] [--eval 64]

With --chip (a target whose accuracy taps can brute-force: ESP-DL, RKNN, eIQ), the same on the chip's own
quantised simulation, in one toolchain worker: esp-ppq quantises the model as `build` does by
default (kl calibration), the diagnosis is taken from that run, and each op is kept in float alone
(every other op quantised: esp-ppq dequantises that op) and quantised alone; the figures are the
task output's SNR and top-1 against the labels. Written under "targets" ("model/chip") in the same
file. RKNN (targets/rknn/worker_brute_force.py): rknn-toolkit2's hybrid quantisation keeps a node's
layers in float16. eIQ (targets/eiq/worker_brute_force.py; needs --artifact, an `edgedeploy build
--target imx93` of the model with the same calibration data, whose TFLite models the diagnosis
reads): the TFLite converter's denylisted_nodes keep a node's operators in float.

Models come from the trained set (scripts/trained/manifest.json, files under
$EDGEDEPLOY_HOME/trained). Writes docs/accuracy-bruteforce.json (per model: the diagnosis's
top node, every node's two SNRs, the ranks). Quantisation settings are the diagnosis path's own
(ONNX Runtime's defaults: MinMax, uint8 activations, int8 weights, per tensor).
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import logging
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort

from edgedeploy.accuracy import diagnosis, qdq

ROOT = Path(__file__).resolve().parents[2]
HOME = Path(os.environ.get("EDGEDEPLOY_HOME", Path.home() / ".cache" / "edgedeploy")) / "trained"
MANIFEST = ROOT / "scripts" / "trained" / "manifest.json"
RESULTS = ROOT / "docs" / "accuracy-bruteforce.json"


def feeds_of(path: Path, inputs: list[str], count: int) -> list[dict]:
    """One feed per sample (some models take batch 1 only), the data file's first `count`."""
    data = np.load(path)
    keys = inputs if all(k in data.files for k in inputs) else [next(k for k in data.files if k not in ("labels", "label", "y"))]
    arrays = {name: data[key][:count].astype(np.float32) for name, key in zip(inputs, keys)}
    return [{name: a[i:i + 1] for name, a in arrays.items()} for i in range(len(next(iter(arrays.values()))))]


class Reader:
    def __init__(self, feeds):
        self.feeds, self.position = feeds, 0

    def get_next(self):
        self.position += 1
        return self.feeds[self.position - 1] if self.position <= len(self.feeds) else None

    def rewind(self):
        self.position = 0


def quantised_snr(model: Path, calib: list[dict], evaluation: list[dict], reference: np.ndarray, output: str, **which) -> float:
    from onnxruntime.quantization import CalibrationMethod, QuantFormat, QuantType, quantize_static

    with tempfile.TemporaryDirectory(prefix="bruteforce-") as tmp:
        out, own = Path(tmp) / "q.onnx", Path(tmp) / "model.onnx"
        shutil.copyfile(model, own)  # quantize_static writes '<model>-inferred.onnx' beside its input: one copy per process
        quantize_static(str(own), str(out), Reader(calib), quant_format=QuantFormat.QDQ, activation_type=QuantType.QUInt8,
                        weight_type=QuantType.QInt8, per_channel=False, calibrate_method=CalibrationMethod.MinMax, **which)
        got = run(out, evaluation, output)
    noise = np.sum((got.astype(np.float64) - reference) ** 2)
    return float(10 * np.log10(np.sum(reference.astype(np.float64) ** 2) / max(noise, 1e-30)))


def run(model: Path, feeds: list[dict], output: str) -> np.ndarray:
    session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    return np.concatenate([session.run([output], f)[0] for f in feeds])


def diagnosis_top(model: Path, calib: list[dict], evaluation: list[dict], outputs: list[str]) -> tuple[str | None, list[dict]]:
    from edgedeploy.accuracy import referred

    records, _ = qdq.diagnose_records(model, calib, evaluation)
    proto = onnx.load(str(model))
    found = diagnosis.diagnose_path({"path": "qdq"}, records, [o.name for o in proto.graph.output], len(calib), graph_inputs=list(evaluation[0]),
                                    refer=lambda r: referred.refer_to_outputs(r, proto, evaluation, calib))
    ranked = diagnosis_ranking(found)
    return (ranked[0] if ranked else None), [r for r in records if r.get("precision") == "int8"]


def one_node(work: tuple) -> dict:
    """One node's two brute-force figures (a process of the pool: quantize_static is single-threaded).
    `kept`: the nodes left in float for the first figure: the node alone, or with its inputs' writers."""
    logging.getLogger().setLevel(logging.ERROR)
    model, calib, evaluation, reference, output, name, op_type, kept = work
    return {"node": name, "op_type": op_type, **({"kept_float": kept} if kept != [name] else {}),
            "snr_all_but_this_db": quantised_snr(model, calib, evaluation, reference, output, nodes_to_exclude=kept),
            "snr_this_alone_db": quantised_snr(model, calib, evaluation, reference, output, nodes_to_quantize=[name])}


def kept_float(proto: onnx.ModelProto, producers: bool) -> dict[str, list[str]]:
    """Per node, the nodes left out of quantisation for its "kept float" figure: the node alone, or
    with the writers of its run-time inputs (targets.brute_force.with_producers). ONNX Runtime's QDQ
    format rounds a tensor once for all its readers (one DequantizeLinear replaces it in each), so a
    node left out alone still reads its writer's rounded tensor; left out with its writers it reads
    float, unless a sibling reader keeps the tensor quantised, as on RKNN."""
    from edgedeploy.model.stats import node_names
    from edgedeploy.targets.brute_force import with_producers

    alone = {name: [name] for name in node_names(proto.graph)}
    return with_producers(alone, proto.graph) if producers else alone


def brute_force(entry: dict, calib_count: int, eval_count: int, jobs: int, producers: bool = False) -> dict:
    model = HOME / entry["model"]["file"]
    proto = onnx.load(str(model), load_external_data=False)
    inits = {i.name for i in proto.graph.initializer}
    inputs = [i.name for i in proto.graph.input if i.name not in inits]
    output = entry.get("task_output") if entry.get("task_output") in [o.name for o in proto.graph.output] else proto.graph.output[0].name
    calib = feeds_of(HOME / entry["calib"]["file"], inputs, calib_count)
    evaluation = feeds_of(HOME / entry["eval"]["file"], inputs, eval_count)
    reference = run(model, evaluation, output)
    started = time.monotonic()
    top, quantised = diagnosis_top(model, calib, evaluation, [output])
    every = quantised_snr(model, calib, evaluation, reference, output)
    kept = kept_float(proto, producers)
    work = [(model, calib, evaluation, reference, output, r["node"], r["op_type"], kept[r["node"]]) for r in quantised]
    with cf.ProcessPoolExecutor(max_workers=jobs) as pool:
        nodes = list(pool.map(one_node, work))
    by_gain = sorted(nodes, key=lambda n: -n["snr_all_but_this_db"])
    by_alone = sorted(nodes, key=lambda n: n["snr_this_alone_db"])
    rank = {n["node"]: i + 1 for i, n in enumerate(by_gain)}
    rank_alone = {n["node"]: i + 1 for i, n in enumerate(by_alone)}
    return {"model": entry["name"], "output": output, "calibration_samples": len(calib), "evaluation_samples": len(evaluation),
            "snr_every_node_db": every, "nodes_quantised": len(nodes), "diagnosis_top": top,
            "diagnosis_top_rank_by_gain": rank.get(top), "diagnosis_top_rank_alone": rank_alone.get(top),
            "brute_force_top3_by_gain": [n["node"] for n in by_gain[:3]], "brute_force_top3_alone": [n["node"] for n in by_alone[:3]],
            "seconds": round(time.monotonic() - started, 1), "onnxruntime": ort.__version__, "nodes": nodes}


def on_target(entry: dict, chip_id: str, calib_count: int, eval_count: int, artifact: Path | None = None, only: list[str] | None = None,
              producers: bool = False) -> dict:
    """The brute force of one trained-set model on a chip's own quantised simulation; with `artifact`,
    on the model that artifact's build converted (its passes applied) and with its manifest."""
    model = artifact / "model.onnx" if artifact else HOME / entry["model"]["file"]
    manifest = json.loads((artifact / "manifest.json").read_text()) if artifact else {}
    found = on_chip(model, HOME / entry["calib"]["file"], HOME / entry["eval"]["file"], chip_id,
                    calib_count, eval_count, entry.get("task_output"), manifest=manifest, only=only, metric=entry.get("metric"), artifact=artifact, producers=producers)
    return {"model": entry["name"], **found}


def on_chip(model_path: Path, calib_path: Path, eval_path: Path, chip_id: str, calib_count: int | None, eval_count: int | None,
            output: str | None = None, preprocess=None, manifest: dict | None = None, only: list[str] | None = None, metric: str | None = None,
            artifact: Path | None = None, producers: bool = False) -> dict:
    """Per op, the task output with that op alone kept in float and alone quantised, on the chip's
    quantised simulation (TapRequest.brute_force_outputs), and the diagnosis of the same run.
    `only`: the nodes to measure (default every one); metric "auroc": the task metric is the AUROC
    of one score per sample (a detector's score; on ESP-DL the output's highest value, so a
    per-anchor output is scored by its best anchor, as build's --metric-output does), else top-1.
    `artifact`: the build's artifact, for targets whose diagnosis reads its files (eIQ's TFLite models).
    `producers`: each node kept in float with the nodes producing its data inputs (RKNN and eIQ)."""
    from edgedeploy.datasets import load_dataset, model_input_specs
    from edgedeploy.model import load_model, named_copy
    from edgedeploy.model.stats import node_names
    from edgedeploy.pipeline.diagnose import TAP_HELPERS, _batchable, finish_tapped
    from edgedeploy.targets import find_chip
    from edgedeploy.targets.base import TapRequest
    from edgedeploy.toolchains.executor import Executor

    target, chip = find_chip(chip_id)
    if producers and target.id not in ("rknn", "eiq"):
        raise SystemExit(f"--with-producers keeps sets of nodes in float on RKNN, eIQ and ONNX Runtime's QDQ path only, not on {chip_id}.")
    model = load_model(model_path, require_static=True)
    named = named_copy(model.proto, node_names(model.graph))
    specs = model_input_specs(model)
    calibration = load_dataset(calib_path, specs, preprocess, calib_count)
    evaluation = load_dataset(eval_path, specs, preprocess, eval_count)
    labels = np.load(eval_path)["labels"][: len(evaluation)]
    output = output or named.graph.output[0].name
    started = time.monotonic()
    keep = os.environ.get("EDGEDEPLOY_BRUTE_FORCE_KEEP")  # a folder to keep the workers' files in (a long sweep's outputs)
    with tempfile.TemporaryDirectory(prefix="bruteforce-") as tmp:
        work = Path(keep or tmp)
        request = TapRequest(artifact=artifact or work, model_path=Path(model_path), chip=chip, precision="int8", manifest=manifest or {},
                             calibration=calibration, evaluation=evaluation, workdir=work / target.id,
                             executor=Executor(work / "worker.log", 7200.0, None), tap_helpers=TAP_HELPERS, echo=print,
                             batchable=_batchable(named, calibration), brute_force_outputs=[output], brute_force_nodes=list(only or []),
                             brute_force_with_producers=producers)
        tapped = target.accuracy_taps(request)
    found = finish_tapped(chip.id, {}, tapped, named, calibration, evaluation)
    brute = tapped.brute_force
    every = _snr(brute["every"][output]) if "every" in brute else next(r for r in found["nodes"] if r.get("tensor") == output)["accumulated"]["snr_db"]
    task, name = (_auroc, "auroc") if metric == "auroc" and "every_values" in brute else (_top1, "top1")
    key = "values" if name == "auroc" else "argmax"
    nodes = [{"node": b["node"], "op_type": b["op_type"], **({"toolkit_layers": len(b["layers"])} if "layers" in b else {}),
              "snr_all_but_this_db": _snr(b["all_but"][output]), "snr_this_alone_db": _snr(b["alone"][output]),
              f"{name}_all_but_this": task(b[f"all_but_{key}"], labels), f"{name}_this_alone": task(b[f"alone_{key}"], labels)}
             for b in brute["ops"]]
    return {"chip": chip.id, "toolchain": tapped.toolchain, "output": output, "task_metric": name,
            "calibration_samples": len(calibration), "evaluation_samples": len(brute["float_argmax"]), "snr_every_node_db": every,
            f"{name}_float": task(brute[f"float_{key}"], labels), f"{name}_every_node": task(brute[f"every_{key}"], labels),
            "nodes_measured": "every node" if not only else f"{len(only)} of {len(named.graph.node)} nodes (--only)",
            **{key: brute[key] for key in ("without_layers", "not_reached", "refused") if key in brute},
            "nodes_quantised": len(nodes), **ranks(found, nodes), "seconds": round(time.monotonic() - started, 1), "nodes": nodes}


def _snr(moments: dict) -> float:
    from edgedeploy.accuracy import metrics

    value = metrics.snr_db(moments)
    return value if np.isfinite(value) else (999.0 if value > 0 else -999.0)


def _top1(argmax: list[int], labels: np.ndarray) -> float:
    return float(np.mean(np.asarray(argmax) == labels[: len(argmax)]))


def _auroc(scores: list[float], labels: np.ndarray) -> float:
    """The AUROC of one score per sample against 0/1 labels (ties count half), as build's auroc metric."""
    scores, truth = np.asarray(scores, dtype=np.float64), np.asarray(labels[: len(scores)]).reshape(-1) > 0.5
    positive, negative = scores[truth], scores[~truth]
    if not len(positive) or not len(negative):
        return float("nan")
    wins = (positive[:, None] > negative[None, :]).sum() + 0.5 * (positive[:, None] == negative[None, :]).sum()
    return float(wins / (len(positive) * len(negative)))


def diagnosis_ranking(found: dict) -> list[str]:
    """What `build --recover` ranks first from a diagnosis: the first sharp fall, the worst alone, the nodes with a cause."""
    ranked = list(found.get("ranked") or [])
    ranked += [(found.get("first_sharp_drop") or {}).get("node")]
    ranked += [w["node"] for w in found.get("worst_isolated") or []]
    return list(dict.fromkeys(n for n in ranked if n))


def ranking_without_referred(found: dict) -> list[str]:
    """The ranking the diagnosis gave before it referred errors to the outputs (localise.ranked on the
    first sharp fall and the worst alone), for the comparison."""
    from edgedeploy.accuracy import localise

    def record(brief):
        return None if not brief else {"node": brief["node"], "fidelity_isolated": {"snr_db": brief.get("isolated_snr_db")} if brief.get("isolated_snr_db") is not None else None}

    first = record(found.get("first_sharp_drop"))
    worst = [first if first and w["node"] == first["node"] else record(w) for w in found.get("worst_isolated") or []]
    return list(dict.fromkeys(r["node"] for r in localise.ranked(first, worst)))


def ranks(found: dict, nodes: list[dict]) -> dict:
    """The diagnosis's top node and its ranks among the brute-force figures (kept float: most gain first)."""
    ranked = diagnosis_ranking(found)
    top = ranked[0] if ranked else None
    by_gain = [n["node"] for n in sorted(nodes, key=lambda n: -n["snr_all_but_this_db"])]
    by_alone = [n["node"] for n in sorted(nodes, key=lambda n: n["snr_this_alone_db"])]
    return {"diagnosis_top": top, "diagnosis_ranking": ranked, "diagnosis_ranking_without_referred": ranking_without_referred(found),
            **({"reader_rounds_input": found["referred"]["reader_rounds_input"]} if "reader_rounds_input" in (found.get("referred") or {}) else {}),
            "first_sharp_drop": (found.get("first_sharp_drop") or {}).get("node"),
            "causes": [c.get("sentence") or c.get("cause") for c in found.get("causes") or []],
            "diagnosis_top_rank_by_gain": by_gain.index(top) + 1 if top in by_gain else None,
            "diagnosis_top_rank_alone": by_alone.index(top) + 1 if top in by_alone else None,
            "brute_force_top3_by_gain": by_gain[:3], "brute_force_top3_alone": by_alone[:3]}


def rediagnose_on_chip(entry: dict, chip_id: str, result: dict, artifact: Path | None) -> dict:
    """Today's diagnosis on the chip's own taps (no brute force run), ranked against the brute-force
    figures kept in `result` (the same model, data counts and artifact)."""
    from edgedeploy.datasets import load_dataset, model_input_specs
    from edgedeploy.model import load_model, named_copy
    from edgedeploy.model.stats import node_names
    from edgedeploy.pipeline.diagnose import TAP_HELPERS, _batchable, finish_tapped
    from edgedeploy.targets import find_chip
    from edgedeploy.targets.base import TapRequest
    from edgedeploy.toolchains.executor import Executor

    target, chip = find_chip(chip_id)
    model_path = artifact / "model.onnx" if artifact else HOME / entry["model"]["file"]
    manifest = json.loads((artifact / "manifest.json").read_text()) if artifact else {}
    model = load_model(model_path, require_static=True)
    named = named_copy(model.proto, node_names(model.graph))
    specs = model_input_specs(model)
    calibration = load_dataset(HOME / entry["calib"]["file"], specs, None, result["calibration_samples"])
    evaluation = load_dataset(HOME / entry["eval"]["file"], specs, None, result["evaluation_samples"])
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="rediagnose-") as tmp:
        work = Path(tmp)
        request = TapRequest(artifact=artifact or work, model_path=Path(model_path), chip=chip, precision="int8", manifest=manifest,
                             calibration=calibration, evaluation=evaluation, workdir=work / target.id,
                             executor=Executor(work / "worker.log", 7200.0, None), tap_helpers=TAP_HELPERS, echo=print,
                             batchable=_batchable(named, calibration))
        tapped = target.accuracy_taps(request)
    found = finish_tapped(chip.id, {}, tapped, named, calibration, evaluation)
    referred = {n["node"]: (n.get("referred") or {}).get("snr_db") for n in found["nodes"] if n.get("referred")}
    earlier = {k: result[k] for k in ("diagnosis_top", "diagnosis_ranking", "diagnosis_top_rank_by_gain", "diagnosis_top_rank_alone") if k in result}
    return {**result, "diagnosis_before_referred": result.get("diagnosis_before_referred") or earlier, **ranks(found, result["nodes"]), "referred_snr_db": referred,
            "worst_referred": [w["node"] for w in found.get("worst_referred") or []], "referred": found.get("referred"),
            "rediagnosed": {"seconds": round(time.monotonic() - started, 1)}}


def result_count(done: dict, entry: dict, key: str) -> int:
    return done["models"][entry["name"]][key]


def rediagnose(entry: dict, result: dict, calib_count: int, eval_count: int) -> dict:
    """The diagnosis's top node and its ranks again (today's diagnosis), on the brute-force figures kept."""
    model = HOME / entry["model"]["file"]
    proto = onnx.load(str(model), load_external_data=False)
    inits = {i.name for i in proto.graph.initializer}
    inputs = [i.name for i in proto.graph.input if i.name not in inits]
    calib = feeds_of(HOME / entry["calib"]["file"], inputs, calib_count)
    evaluation = feeds_of(HOME / entry["eval"]["file"], inputs, eval_count)
    earlier = {k: result[k] for k in ("diagnosis_top", "diagnosis_top_rank_by_gain", "diagnosis_top_rank_alone") if k in result}
    top, _ = diagnosis_top(model, calib, evaluation, [result["output"]])
    by_gain = [n["node"] for n in sorted(result["nodes"], key=lambda n: -n["snr_all_but_this_db"])]
    by_alone = [n["node"] for n in sorted(result["nodes"], key=lambda n: n["snr_this_alone_db"])]
    return {**result, "diagnosis_before_referred": result.get("diagnosis_before_referred") or earlier, "diagnosis_top": top, "diagnosis_top_rank_by_gain": by_gain.index(top) + 1 if top in by_gain else None,
            "diagnosis_top_rank_alone": by_alone.index(top) + 1 if top in by_alone else None}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="", help="comma-separated names from the trained set (default: all)")
    parser.add_argument("--calib", type=int, default=32)
    parser.add_argument("--eval", type=int, default=32)
    parser.add_argument("--rediagnose", action="store_true", help="only the diagnosis again, against the brute-force figures kept")
    parser.add_argument("--chip", default="", help="brute force on this chip's own quantised simulation (ESP-DL, RKNN, eIQ: eIQ needs --artifact) instead of ONNX Runtime's QDQ")
    parser.add_argument("--artifact", type=Path, help="with --chip: the model an `edgedeploy build` artifact converted (its passes applied), with its manifest")
    parser.add_argument("--only", default="", help="with --chip: only these ONNX nodes (comma-separated), when every node does not fit")
    parser.add_argument("--with-producers", action="store_true",
                        help="RKNN, eIQ and ONNX Runtime's QDQ path: keep each node in float together with the producers of its data inputs (its input tensor "
                             "float too); written under \"targets_with_producers\" (QDQ: \"models_with_producers\"), beside the single-node form")
    parser.add_argument("--trained-dir", type=Path, help="the trained set's files from this folder instead of $EDGEDEPLOY_HOME/trained (files made apart, e.g. scripts/trained/make_cls_data.py's)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="processes quantising nodes at once")
    args = parser.parse_args()
    if args.trained_dir:
        global HOME
        HOME = args.trained_dir
    logging.getLogger().setLevel(logging.ERROR)  # quantize_static's advice on every call
    manifest = json.loads(MANIFEST.read_text())
    wanted = {m for m in args.models.split(",") if m}
    done = json.loads(RESULTS.read_text()) if RESULTS.exists() else {"about": __doc__.splitlines()[0], "models": {}}
    for entry in manifest["models"]:
        if wanted and entry["name"] not in wanted:
            continue
        if args.chip and args.rediagnose:
            form = "targets_with_producers" if args.with_producers else "targets"
            key = f"{entry['name']}/{args.chip}"
            result = rediagnose_on_chip(entry, args.chip, done[form][key], args.artifact)
            done = json.loads(RESULTS.read_text())
            done[form][key] = result
            RESULTS.write_text(json.dumps(done, indent=1) + "\n")
            print(f"{key} ({form}): diagnosis top {result['diagnosis_top']} (brute-force rank {result['diagnosis_top_rank_by_gain']} kept float, "
                  f"{result['diagnosis_top_rank_alone']} alone); ranking {result['diagnosis_ranking'][:5]}", flush=True)
            continue
        if args.chip:
            result = on_target(entry, args.chip, args.calib, args.eval, args.artifact, [n for n in args.only.split(",") if n], args.with_producers)
            done = json.loads(RESULTS.read_text()) if RESULTS.exists() else done  # another run may have written meanwhile
            done.setdefault("targets_with_producers" if args.with_producers else "targets", {})[f"{entry['name']}/{args.chip}"] = result
            RESULTS.write_text(json.dumps(done, indent=1) + "\n")
            print(f"{entry['name']} on {args.chip}: every node int8 {result['snr_every_node_db']:.1f} dB; diagnosis top {result['diagnosis_top']} "
                  f"(brute-force rank {result['diagnosis_top_rank_by_gain']} by gain, {result['diagnosis_top_rank_alone']} alone; "
                  f"{result['nodes_quantised']} ops, {result['seconds']} s); top 3 kept float: {result['brute_force_top3_by_gain']}", flush=True)
            continue
        form = "models_with_producers" if args.with_producers else "models"
        if args.rediagnose:
            if entry["name"] not in done.get(form, {}):
                continue
            result = rediagnose(entry, done[form][entry["name"]], result_count(done, entry, "calibration_samples"), result_count(done, entry, "evaluation_samples"))
        else:
            result = brute_force(entry, args.calib, args.eval, args.jobs, args.with_producers)
        done.setdefault(form, {})[entry["name"]] = result
        RESULTS.write_text(json.dumps(done, indent=1) + "\n")
        print(f"{entry['name']}: every node int8 {result['snr_every_node_db']:.1f} dB; diagnosis top {result['diagnosis_top']} "
              f"(brute-force rank {result['diagnosis_top_rank_by_gain']} by gain, {result['diagnosis_top_rank_alone']} alone; "
              f"{result['nodes_quantised']} nodes, {result['seconds']} s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
