"""RKNN brute force (scripts/accuracy/brute_force.py --chip rk3588): per layer of rknn-toolkit2's graph,
the simulator's outputs with that layer alone kept in float16 (every other layer int8) and, when
asked, with that layer alone in int8 (every other layer float16), through the toolkit's own
hybrid quantisation. Two calls: "step1" and "variants" (see run).

Runs in the rknn environment (never imported by edgedeploy; it must not import edgedeploy).
hybrid_quantization_step1 quantises once (the build's calibration, rknn-toolkit2's defaults) and
writes <model>.model, .data and .quantization.cfg; each variant is a copy of that config with
layers marked float16 in its custom_quantize_layers (worker.py's _mark_float16, as `build
--rknn-float16-nodes` does), built by hybrid_quantization_step2 on a fresh RKNN object and run on
the simulator (init_runtime(target=None)) over the evaluation inputs. The core maps ONNX nodes to
layers (request["nodes"]: each node's candidate tensors, best first) and compares the outputs
with the float model.
"""

import os
import re
import shutil

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "worker.py")
SWEEP = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "brute_force_sweep.py")


def _layers_of(cfg_path):
    """The layer keys of the quantization config (as worker._mark_float16 reads them)."""
    with open(cfg_path) as fh:
        text = fh.read()
    keys = re.findall(r"^    (\S.*):$", text.split("quantize_parameters:", 1)[-1], flags=re.M)
    return {k[1:-1].replace("''", "'") if k[:1] == "'" == k[-1:] else k.strip('"') for k in keys}


def _step1(base, request, ctx, folder):
    """config, load_onnx and hybrid_quantization_step1 once; returns its three files."""
    rknn = base._new_rknn()
    here = os.getcwd()
    os.makedirs(folder, exist_ok=True)
    os.chdir(folder)
    try:
        with base._Captured(ctx, os.path.join(ctx.workdir, "step1_output.txt")):
            rknn.config(**base._config_kwargs(request, request["case"]))
            if base._load(rknn, request["case"]) != 0:
                raise RuntimeError("rknn-toolkit2 could not load the model (load_onnx failed)")
            if rknn.hybrid_quantization_step1(dataset=request["dataset"]) != 0:
                raise RuntimeError("rknn-toolkit2's hybrid_quantization_step1 failed; see the log")
    finally:
        base._release(rknn)
        os.chdir(here)
    stem = os.path.splitext(os.path.basename(request["case"]["model"]))[0]
    return [os.path.join(folder, stem + suffix) for suffix in (".model", ".data", ".quantization.cfg")]


def _variant(base, ctx, files, float16, data, names, formats, index, whole=()):
    """The simulator's outputs (one array per output, samples stacked) with `float16` layers kept in float16."""
    import numpy as np

    cfg = os.path.join(os.path.dirname(files[2]), "variant_%d.quantization.cfg" % index)
    shutil.copyfile(files[2], cfg)
    if float16:
        base._mark_float16(cfg, [{"node": layer, "candidates": [layer]} for layer in float16])
    rknn = base._new_rknn()
    try:
        with base._Captured(ctx, os.path.join(ctx.workdir, "variant_output.txt")):
            if rknn.hybrid_quantization_step2(model_input=files[0], data_input=files[1], model_quantization_cfg=cfg) != 0:
                raise RuntimeError("hybrid_quantization_step2 failed for variant %d" % index)
            if rknn.init_runtime(target=None) != 0:
                raise RuntimeError("the RKNN simulator did not start for variant %d" % index)
            outputs = None
            for i in range(len(data[names[0]])):
                feed = ctx.arrays.take_feed(data, i, i + 1, whole)
                outs = rknn.inference(inputs=[feed[n] for n in names], data_format=formats)
                outputs = outputs if outputs is not None else [[] for _ in outs]
                for k, o in enumerate(outs):
                    outputs[k].append(np.asarray(o, dtype=np.float32))
    finally:
        base._release(rknn)
        os.remove(cfg)
    return [np.concatenate(o, axis=0) for o in outputs]


def run(request, ctx):
    """mode "step1": quantise once, return the config's layers (the core groups them by ONNX node);
    mode "variants": per group of layers (one ONNX node's), the two variants."""
    base = ctx.load_module(WORKER, "rknn_worker")
    if request["mode"] == "step1":
        files = _step1(base, request, ctx, request["hybrid_dir"])
        return {"files": files, "layers": sorted(_layers_of(files[2])), "toolkit_version": base._toolkit_version()}
    files, groups = request["files"], request["groups"]
    names = request["input_names"]
    data = ctx.arrays.read_arrays(request["eval_inputs"], names)
    whole = ctx.arrays.read_whole(request["eval_inputs"])  # inputs fed whole, one sample at a time
    formats = request["data_formats"] if any(request["data_formats"]) else None
    sweep = ctx.load_module(SWEEP, "brute_force_sweep")

    def measure(float16, index):
        outs = _variant(base, ctx, files, float16, data, names, formats, index, whole)
        path = os.path.join(ctx.workdir, "variant_%d.npz" % index)
        ctx.arrays.write_arrays(path, {name: o for name, o in zip(request["output_names"], outs)})
        return path

    # With producers (--with-producers) groups share layers: each is kept in float once.
    everything = list(dict.fromkeys(layer for group in groups for layer in group["layers"]))
    return {"variants": sweep.sweep(groups, everything, measure, ctx, float(request.get("deadline_s") or 1e9))}
