#!/usr/bin/env python3
"""rknn-toolkit2 called directly, as Rockchip's examples do (no edgedeploy involved).

    ~/.cache/edgedeploy/envs/rknn/bin/python rknn_direct.py MODEL.onnx CALIB.npz CHIP [--disable-rule RULE...] OUTDIR

RKNN(verbose=True); config(target_platform=CHIP[, disable_rules=[...]]); load_onnx(model);
build(do_quantization=True, dataset=dataset.txt); export_rknn. The dataset file lists one sample
per line, the absolute .npy path of each input (in graph-input order), as the toolkit documents.
The calibration data is already normalised, so no mean/std values are given. The verbose build
log (with the "Network Layer Information Table") goes to stdout, which the driver keeps.
Writes OUTDIR/result.json: converted, the toolkit's own final error message, seconds, size.
"""

import json
import os
import sys
import time
import traceback

from graph_inputs import feed_of, graph_inputs


def main():
    model, calib, chip = sys.argv[1:4]
    out = sys.argv[-1]
    disable = sys.argv[sys.argv.index("--disable-rule") + 1 : -1] if "--disable-rule" in sys.argv else []
    os.makedirs(out, exist_ok=True)
    result = {"toolchain": "rknn-toolkit2", "chip": chip, "converted": False, "error": None, "disable_rules": disable}
    started = time.monotonic()
    stage = "import"
    try:
        import numpy as np
        import importlib.metadata as md

        from rknn.api import RKNN

        result["toolchain_version"] = "rknn-toolkit2 " + md.version("rknn-toolkit2")
        inputs = graph_inputs(model)
        names = [i.name for i in inputs]
        ranks = {i.name: len(i.type.tensor_type.shape.dim) for i in inputs}
        data = np.load(calib)
        lines = []
        folder = os.path.join(out, "dataset")
        os.makedirs(folder, exist_ok=True)
        for k in range(len(data[names[0]])):
            paths = []
            for j, n in enumerate(names):
                p = os.path.abspath(os.path.join(folder, "s%03d_i%d.npy" % (k, j)))
                np.save(p, feed_of(data[n], ranks[n], k))
                paths.append(p)
            lines.append(" ".join(paths))
        dataset = os.path.join(out, "dataset.txt")
        with open(dataset, "w") as f:
            f.write("\n".join(lines) + "\n")
        rknn = RKNN(verbose=True)
        config = {"target_platform": chip}
        if disable:
            config["disable_rules"] = disable
        stage = "config"
        rknn.config(**config)
        stage = "load_onnx"
        if rknn.load_onnx(model=model) != 0:
            raise RuntimeError("load_onnx failed")
        stage = "build"
        if rknn.build(do_quantization=True, dataset=dataset) != 0:
            raise RuntimeError("build failed")
        stage = "export_rknn"
        artifact = os.path.join(out, "model.rknn")
        if rknn.export_rknn(artifact) != 0:
            raise RuntimeError("export_rknn failed")
        rknn.release()
        result["converted"] = True
        result["artifact"] = artifact
        result["artifact_bytes"] = os.path.getsize(artifact)
    except BaseException as exc:  # noqa: BLE001 - the toolkit's own last words are the result
        traceback.print_exc()
        result["error"] = f"{stage}: {type(exc).__name__}: {exc}".strip()[:2000]
    sys.stdout.flush()
    result["seconds"] = round(time.monotonic() - started, 2)
    with open(os.path.join(out, "result.json"), "w") as f:
        json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
