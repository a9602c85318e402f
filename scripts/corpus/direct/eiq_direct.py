#!/usr/bin/env python3
"""onnx2tf and Vela called directly, as their READMEs show (no edgedeploy involved).

    ~/.cache/edgedeploy/envs/eiq/bin/python eiq_direct.py MODEL.onnx CALIB.npz [--keep-input-layout NAME...] OUTDIR

`--keep-input-layout`: onnx2tf's -kat (keep_ncw_or_nchw_or_ncdhw_input_names), the option its
own error message recommends for inputs that are not channels-first; those inputs are neither
transposed by onnx2tf nor in their calibration data.

1. onnx2tf full-integer quantisation with the corpus calibration data
   (`onnx2tf.convert(..., output_integer_quantized_tflite=True,
   custom_input_op_name_np_data_path=[[name, file.npy, mean, std], ...])`; calibration arrays
   are NHWC for 4-D inputs, as onnx2tf wants, already normalised: mean 0, std 1). Its
   `*_full_integer_quant.tflite` is the i.MX 8M Plus artifact (the VX delegate runs it on the board).
2. Vela for the i.MX 93's Ethos-U65 on that file (`vela --accelerator-config ethos-u65-256
   --config Arm/vela.ini --system-config Ethos_U65_High_End --memory-mode Dedicated_Sram_384KB
   --show-cpu-operations`).
Writes OUTDIR/result.json with one entry per chip (imx8mp, imx93).
"""

import glob
import json
import os
import shutil
import subprocess
import sys
import time
import traceback

from graph_inputs import graph_inputs


def main():
    model, calib = sys.argv[1:3]
    keep = sys.argv[sys.argv.index("--keep-input-layout") + 1 : -1] if "--keep-input-layout" in sys.argv else []
    out = sys.argv[-1]
    out = os.path.abspath(out)
    os.makedirs(out, exist_ok=True)
    os.chdir(out)
    env_bin = os.path.dirname(sys.executable)
    os.environ["PATH"] = env_bin + os.pathsep + os.environ.get("PATH", "")  # onnx2tf shells out to onnxsim
    import importlib.metadata as md

    versions = {p: md.version(p) for p in ("onnx2tf", "tensorflow-cpu", "ethos-u-vela")}
    res = {"imx8mp": {"toolchain": "onnx2tf", "chip": "imx8mp", "converted": False, "error": None,
                      "toolchain_version": f"onnx2tf {versions['onnx2tf']}, tensorflow-cpu {versions['tensorflow-cpu']}"},
           "imx93": {"toolchain": "onnx2tf+vela", "chip": "imx93", "converted": False, "error": None,
                     "toolchain_version": f"onnx2tf {versions['onnx2tf']}, Vela {versions['ethos-u-vela']}"}}
    started = time.monotonic()
    tflite = None
    try:
        import numpy as np

        specs = graph_inputs(model)
        data = np.load(calib)
        custom = []
        for j, spec in enumerate(specs):
            array = data[spec.name]  # in the model's own dtype (int64 token ids stay integers)
            if 3 <= array.ndim <= 5 and spec.name not in keep:
                # onnx2tf turns every 3-D to 5-D input channels-last (NCW -> NWC, NCHW -> NHWC,
                # NCDHW -> NDHWC), and its calibration data must be in that TensorFlow layout.
                array = np.moveaxis(array, 1, -1)
            path = os.path.join(out, "calib_%d.npy" % j)
            np.save(path, array)
            shape = [1] * (array.ndim - 1) + [array.shape[-1]]
            kind = array.dtype if array.dtype.kind in "iu" else np.float32
            custom.append([spec.name, path, np.zeros(shape, kind), np.ones(shape, kind)])
        # onnx2tf downloads a sample calibration image set for 3-channel 4-D inputs unless a file
        # of that name is in the working directory (toolchains.md); this machine is offline.
        sample = "calibration_image_sample_data_20x128x128x3_float32.npy"
        np.save(sample, np.random.default_rng(0).random((20, 128, 128, 3), dtype=np.float32))
        import onnx2tf

        # onnx2tf overwrites its input ONNX with the onnxsim-simplified model (seen here with
        # onnx2tf 1.29.24): give it a copy, never the corpus file.
        model_copy = os.path.join(out, "input_copy.onnx")
        shutil.copyfile(model, model_copy)
        onnx2tf.convert(
            input_onnx_file_path=model_copy,
            output_folder_path=os.path.join(out, "saved_model"),
            output_integer_quantized_tflite=True,
            custom_input_op_name_np_data_path=custom,
            keep_ncw_or_nchw_or_ncdhw_input_names=keep or None,
        )
        found = sorted(glob.glob(os.path.join(out, "saved_model", "*_full_integer_quant.tflite")))
        if found:
            tflite = found[0]
            res["imx8mp"].update(converted=True, artifact=tflite, artifact_bytes=os.path.getsize(tflite))
        else:
            # onnx2tf prints the quantiser's exception and "Full INT8 Quantization tflite output
            # failed." and returns; the driver takes that exception line from the log.
            res["imx8mp"]["error"] = "onnx2tf wrote no full-integer TFLite (its int8 quantisation failed; see the log)"
            res["imx93"]["error"] = "no int8 TFLite to compile (onnx2tf's int8 quantisation failed)"
    except BaseException as exc:  # noqa: BLE001 - SystemExit included: onnx2tf exits on errors
        traceback.print_exc()
        msg = f"{type(exc).__name__}: {exc}".strip()
        res["imx8mp"]["error"] = ("onnx2tf: " + msg)[:2000]
        res["imx93"]["error"] = "no int8 TFLite to compile (onnx2tf failed)"
    res["imx8mp"]["seconds"] = round(time.monotonic() - started, 2)
    if tflite:
        t0 = time.monotonic()
        vela_out = os.path.join(out, "vela")
        cmd = [os.path.join(env_bin, "vela"), tflite, "--accelerator-config", "ethos-u65-256", "--config", "Arm/vela.ini",
               "--system-config", "Ethos_U65_High_End", "--memory-mode", "Dedicated_Sram_384KB",
               "--output-dir", vela_out, "--show-cpu-operations"]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        with open(os.path.join(out, "vela.log"), "w") as f:
            f.write(proc.stdout + "\n--- stderr ---\n" + proc.stderr)
        print(proc.stdout)
        print(proc.stderr, file=sys.stderr)
        compiled = sorted(glob.glob(os.path.join(vela_out, "*_vela.tflite")))
        if proc.returncode == 0 and compiled:
            cpu_ops = [l.strip() for l in proc.stdout.splitlines() if l.startswith("Warning (supported operators) operator:")]
            import re

            m = re.search(r"CPU operators = (\d+)", proc.stdout)
            res["imx93"].update(converted=True, artifact=compiled[0], artifact_bytes=os.path.getsize(compiled[0]),
                                cpu_operators=int(m.group(1)) if m else None, cpu_operator_warnings=cpu_ops[:50])
        else:
            tail = [l for l in (proc.stdout + proc.stderr).splitlines() if l.strip()][-3:]
            res["imx93"]["error"] = ("vela exit %d: " % proc.returncode + " | ".join(tail))[:2000]
        res["imx93"]["seconds"] = round(res["imx8mp"]["seconds"] + time.monotonic() - t0, 2)
    else:
        res["imx93"]["seconds"] = res["imx8mp"]["seconds"]
    with open(os.path.join(out, "result.json"), "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
