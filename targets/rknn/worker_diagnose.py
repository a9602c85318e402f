"""RKNN accuracy taps: rknn-toolkit2's accuracy_analysis on a few samples, with its tensor dumps (`edgedeploy diagnose`).

Runs in the rknn environment (never imported by edgedeploy; it must not import edgedeploy).
Builds the model as the artifact's build did (worker.py's build, following the toolkit's own
disable_rules advice), then runs accuracy_analysis once per sample: the toolkit writes, per layer
output tensor, the float ("golden") and the simulator's values (`golden/npy`, `simulator/npy`,
named in map_name_to_file.txt) and error_analysis.txt with its `entire` (accumulated) and
`single` (that layer alone) cosine and Euclidean distance. Per layer this returns the sums of
golden vs simulator over the samples (tap_numpy.moments), the golden values' statistics, and each sample's error_analysis.txt for the core to
read the `single` figures from. Layer names are the toolkit's tensor names; the core maps them to
ONNX nodes (accuracy_table.py).
"""

import os

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "worker.py")


def _name_map(path):
    """layer name -> dump file stem, from map_name_to_file.txt (two columns after a header rule)."""
    mapping, started = {}, False
    with open(path) as fh:
        for line in fh:
            if line.startswith("----"):
                started = True
                continue
            parts = line.split()
            if started and len(parts) == 2:
                mapping[parts[0]] = os.path.splitext(parts[1])[0]
    return mapping


def _analyse_sample(rknn, base, ctx, request, index):
    folder = os.path.join(ctx.workdir, "analysis_%d" % index)
    with base._Captured(ctx, os.path.join(ctx.workdir, "analysis_%d.txt" % index)):
        if rknn.accuracy_analysis(inputs=request["samples"][index], output_dir=folder) != 0:
            raise RuntimeError("accuracy_analysis failed on sample %d; see the log" % index)
    with open(os.path.join(folder, "error_analysis.txt"), errors="replace") as fh:
        report = fh.read()
    return folder, report


def run(request, ctx):
    import numpy as np

    tap = ctx.load_module(request["tap_helpers"], "edgedeploy_tap_numpy")
    base = ctx.load_module(WORKER, "rknn_worker")
    ctx.log("building for %s as the artifact's build did" % request["chip"])
    rknn, workarounds = base._build_following_advice(request, request["case"], ctx, os.path.join(ctx.workdir, "build_output.txt"), request.get("dataset"), None)
    layers, reports = {}, []
    try:
        for index in range(len(request["samples"])):
            ctx.log("accuracy_analysis on sample %d of %d" % (index + 1, len(request["samples"])))
            folder, report = _analyse_sample(rknn, base, ctx, request, index)
            reports.append(report)
            for layer, stem in _name_map(os.path.join(folder, "map_name_to_file.txt")).items():
                golden, simulated = os.path.join(folder, "golden", "npy", stem + ".npy"), os.path.join(folder, "simulator", "npy", stem + ".npy")
                if os.path.exists(golden) and os.path.exists(simulated):
                    entry = layers.setdefault(layer, {"golden": [], "simulated": []})
                    entry["golden"].append(np.load(golden).astype(np.float64).reshape(-1))
                    entry["simulated"].append(np.load(simulated).astype(np.float64).reshape(-1))
    finally:
        base._release(rknn)
    out = {}
    for layer, entry in layers.items():
        sums = None
        for g, s in zip(entry["golden"], entry["simulated"]):
            if g.size == s.size:
                sums = tap.merge_moments(sums, tap.moments(g, s))
        # Float statistics only: the quantised range is not reported by accuracy_analysis, and the
        # range the simulator's values happen to span is no substitute (it flagged clipping where
        # the values had only collapsed).
        out[layer] = {
            "accumulated": sums,
            "ref_sq": [float(np.dot(g, g)) for g in entry["golden"]],
            "stats": tap.tensor_stats(np.concatenate(entry["golden"])),
        }
    return {"layers": out, "reports": reports, "workarounds": workarounds, "toolkit_version": base._toolkit_version()}
