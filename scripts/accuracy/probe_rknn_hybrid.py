"""Probe: in rknn-toolkit2's hybrid quantisation, is the tensor between an int8 layer and a float16 layer int8?

Runs in the rknn environment (it imports rknn-toolkit2, so never from edgedeploy):

    nice -n 10 ~/.cache/edgedeploy/envs/rknn/bin/python scripts/accuracy/probe_rknn_hybrid.py OUT_DIR

The model, made here: x (1x4x16x16) -> Conv A (3x3) -> Relu -> Conv B (3x3) -> Relu -> Conv C (3x3) -> y,
seeded weights, inputs uniform in [0, 1). hybrid_quantization_step1 quantises once (64 calibration
samples, the toolkit's defaults); then per variant a copy of the quantization config with some layers
in custom_quantize_layers as float16 goes through hybrid_quantization_step2 on a fresh RKNN object, and
accuracy_analysis (the simulator, target=None) dumps every tensor of the quantised model. Per tensor the
probe prints how many distinct values one sample holds and whether they lie on one uniform grid
(int8: at most 256 levels of a single step), and the output's SNR against the float model. What the
toolkit prints about each layer's dtype while building is kept in OUT_DIR/<variant>/build.log.

The variants are the two forms of a brute force that keeps a node out of int8 (docs/accuracy.md,
"Which form is 'everything but that node' on each toolchain").
"""

import glob
import json
import os
import re
import shutil
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SHAPE = (1, 4, 16, 16)


def make_model(path):
    rng = np.random.default_rng(7)
    nodes, inits = [], []
    prev = "x"
    for k, name in enumerate("ABC"):
        centre = np.zeros((3, 3))
        centre[1, 1] = 1.0
        w = (rng.normal(0, 0.25, (4, 4, 3, 3)) + np.eye(4)[:, :, None, None] * centre).astype(np.float32)
        b = rng.normal(0, 0.1, 4).astype(np.float32)
        inits += [numpy_helper.from_array(w, f"w{name}"), numpy_helper.from_array(b, f"b{name}")]
        out = f"conv{name}" if name == "C" else f"conv{name}_out"
        nodes.append(helper.make_node("Conv", [prev, f"w{name}", f"b{name}"], [out], name=f"Conv_{name}", pads=[1, 1, 1, 1]))
        if name != "C":
            nodes.append(helper.make_node("Relu", [out], [f"relu{name}"], name=f"Relu_{name}"))
            prev = f"relu{name}"
    graph = helper.make_graph(nodes, "hybrid_probe", [helper.make_tensor_value_info("x", TensorProto.FLOAT, SHAPE)],
                              [helper.make_tensor_value_info("convC", TensorProto.FLOAT, SHAPE)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, path)
    return model


def float_run(model, x):
    import onnxruntime as ort  # noqa: F401 - present in the rknn environment

    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {"x": x})[0]


def on_int8_grid(values):
    """(distinct values, whether they fit 256 levels of one step)."""
    flat = np.unique(np.round(values.astype(np.float64).ravel(), 9))
    if flat.size <= 1:
        return flat.size, True
    steps = np.diff(flat)
    step = steps.min()
    levels = (flat.max() - flat.min()) / step
    on_grid = np.allclose(np.round((flat - flat.min()) / step), (flat - flat.min()) / step, atol=0.02)
    return int(flat.size), bool(on_grid and levels <= 256)


def snr(ref, got):
    noise = np.sum((ref - got) ** 2)
    return float("inf") if noise == 0 else 10 * np.log10(np.sum(ref**2) / noise)


def layer_keys(cfg):
    text = open(cfg).read().split("quantize_parameters:", 1)[-1]
    return [k.strip("'\"") for k in re.findall(r"^    (\S.*):$", text, flags=re.M)]


def mark_float16(src, dst, layers):
    text = open(src).read()
    lines = "".join("    %s: float16\n" % json.dumps(layer) for layer in layers)
    text = re.sub(r"^custom_quantize_layers:.*$", "custom_quantize_layers:\n" + lines.rstrip("\n"), text, count=1, flags=re.M)
    open(dst, "w").write(text)


def main(out):
    from rknn.api import RKNN

    os.makedirs(out, exist_ok=True)
    model_path = os.path.join(out, "hybrid_probe.onnx")
    model = make_model(model_path)
    rng = np.random.default_rng(0)
    calib_dir = os.path.join(out, "calib")
    os.makedirs(calib_dir, exist_ok=True)
    listing = []
    for i in range(64):
        p = os.path.join(calib_dir, f"{i}.npy")
        np.save(p, rng.random(SHAPE, dtype=np.float32))  # NCHW, as the toolkit asks of a 4-D .npy
        listing.append(p)
    open(os.path.join(out, "dataset.txt"), "w").write("\n".join(listing) + "\n")
    sample = rng.random(SHAPE, dtype=np.float32)
    np.save(os.path.join(out, "sample.npy"), sample)
    reference = float_run(model, sample)

    here = os.getcwd()
    os.chdir(out)
    rknn = RKNN(verbose=True)
    rknn.config(target_platform="rk3588")
    assert rknn.load_onnx(model=model_path) == 0
    assert rknn.hybrid_quantization_step1(dataset=os.path.join(out, "dataset.txt")) == 0
    rknn.release()
    os.chdir(here)
    files = [os.path.join(out, "hybrid_probe" + s) for s in (".model", ".data", ".quantization.cfg")]
    layers = layer_keys(files[2])
    print("layers of the quantization config:", layers)

    def group(name):
        return [k for k in layers if k.startswith(f"conv{name}") or k.startswith(f"relu{name}")]

    variants = {
        "every layer int8": [],
        "B alone float16": group("B"),
        "A and B float16": group("A") + group("B"),
        "B alone int8 (A, C float16)": group("A") + group("C"),
        "every layer float16": group("A") + group("B") + group("C"),
    }
    results = {}
    for label, float16 in variants.items():
        folder = os.path.join(out, re.sub(r"\W+", "_", label).strip("_"))
        shutil.rmtree(folder, ignore_errors=True)
        os.makedirs(folder)
        cfg = os.path.join(folder, "variant.quantization.cfg")
        mark_float16(files[2], cfg, float16)
        rknn = RKNN(verbose=True)
        log = os.path.join(folder, "build.log")
        rknn.config(target_platform="rk3588")
        fd = os.dup(1), os.dup(2)
        with open(log, "w") as fh:
            os.dup2(fh.fileno(), 1)
            os.dup2(fh.fileno(), 2)
            try:
                assert rknn.hybrid_quantization_step2(model_input=files[0], data_input=files[1], model_quantization_cfg=cfg) == 0
                assert rknn.accuracy_analysis(inputs=[os.path.join(out, "sample.npy")], output_dir=os.path.join(folder, "analysis"), target=None) == 0
            finally:
                os.dup2(fd[0], 1)
                os.dup2(fd[1], 2)
        rknn.release()
        dumped = {}
        for path in sorted(glob.glob(os.path.join(folder, "analysis", "simulator", "npy", "*.npy"))):
            name = os.path.basename(path)[:-4]
            dumped[name] = np.load(path)
        tensors = {}
        for name, values in dumped.items():
            count, grid = on_int8_grid(values)
            tensors[name] = {"distinct": count, "int8_grid": grid}
        output = dumped.get("convC")
        out_snr = None
        if output is not None:
            got = output.reshape(reference.shape) if output.size == reference.size else None
            out_snr = None if got is None else round(snr(reference, got), 1)
        layers_log = [line.split("] ", 1)[-1].strip() for line in open(log) if re.search(r"\] +\d+ +(exDataConvert|ConvRelu|Conv) +(INT8|FLOAT16) ", line)]
        results[label] = {"float16_layers": float16, "tensors": tensors, "output_snr_db": out_snr, "toolkit_layers": layers_log}
        print(label, json.dumps(results[label], indent=1))
    json.dump(results, open(os.path.join(out, "results.json"), "w"), indent=1)


if __name__ == "__main__":
    main(os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "/tmp/rknn_hybrid_probe"))
