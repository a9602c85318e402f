#!/usr/bin/env python3
"""esp-ppq called directly, as ESP-DL's own quantisation examples do (no edgedeploy involved).

    ~/.cache/edgedeploy/envs/espdl/bin/python espdl_direct.py MODEL.onnx CALIB.npz esp32s3|esp32p4 OUTDIR

`espdl_quantize_onnx` with a DataLoader over the calibration samples (batch 1: the corpus models
have a fixed batch of 1), as many calibration steps as samples, int8, on the CPU. It overwrites
its input ONNX with the simplified model (toolchains.md), so it is given a copy. Writes
OUTDIR/result.json: converted, the toolchain's own final error message, seconds, artifact size.
"""

import json
import os
import shutil
import sys
import time
import traceback

from graph_inputs import feed_of, graph_inputs


def main():
    model, calib, chip, out = sys.argv[1:5]
    os.makedirs(out, exist_ok=True)
    result = {"toolchain": "esp-ppq", "chip": chip, "converted": False, "error": None}
    started = time.monotonic()
    try:
        import numpy as np
        import torch
        from torch.utils.data import DataLoader, Dataset

        from esp_ppq.api import espdl_quantize_onnx

        import importlib.metadata as md

        result["toolchain_version"] = "esp-ppq " + md.version("esp-ppq")
        inputs = graph_inputs(model)
        ranks = [len(i.type.tensor_type.shape.dim) for i in inputs]
        data = np.load(calib)
        arrays = [data[i.name] for i in inputs]
        count = len(arrays[0])

        class Samples(Dataset):
            def __len__(self):
                return count

            def __getitem__(self, k):
                # One feed of batch 1 as the model takes it (whole samples where the data holds them).
                items = [torch.from_numpy(np.ascontiguousarray(feed_of(a, r, k))) for a, r in zip(arrays, ranks)]
                return items[0] if len(items) == 1 else items

        def collate_fn(batch):
            return batch.to("cpu") if isinstance(batch, torch.Tensor) else [b.to("cpu") for b in batch]

        loader = DataLoader(Samples(), batch_size=None, shuffle=False)  # the items are whole feeds already
        first = Samples()[0]
        shapes = [list(t.shape) for t in (first if isinstance(first, list) else [first])]
        scratch = os.path.join(out, "input_copy.onnx")
        shutil.copyfile(model, scratch)
        export = os.path.join(out, "model.espdl")
        espdl_quantize_onnx(
            onnx_import_file=scratch,
            espdl_export_file=export,
            calib_dataloader=loader,
            calib_steps=count,
            input_shape=shapes[0] if len(shapes) == 1 else shapes,
            target=chip,
            num_of_bits=8,
            collate_fn=collate_fn,
            device="cpu",
            error_report=False,
            skip_export=False,
            export_test_values=False,
            verbose=0,
        )
        result["converted"] = os.path.isfile(export)
        result["artifact"] = export
        result["artifact_bytes"] = os.path.getsize(export) if os.path.isfile(export) else None
        info = os.path.splitext(export)[0] + ".info"
        if os.path.isfile(info):
            result["info"] = info
            text = open(info, errors="replace").read()
            result["float_layers"] = text.count("quant_type = 'F32'")
        if not result["converted"]:
            result["error"] = "espdl_quantize_onnx returned but wrote no .espdl"
    except BaseException as exc:  # noqa: BLE001 - the toolchain's own last words are the result
        traceback.print_exc()
        result["error"] = f"{type(exc).__name__}: {exc}".strip()[:2000]
    result["seconds"] = round(time.monotonic() - started, 2)
    with open(os.path.join(out, "result.json"), "w") as f:
        json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
