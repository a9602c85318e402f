"""eIQ brute force (scripts/accuracy/brute_force.py --chip imx93): per ONNX node, the full-int8 TFLite
model's outputs with that node's operators alone kept in float and with them alone quantised.

Runs in the eiq environment (never imported by edgedeploy; it must not import edgedeploy). The
model is converted as `build` converts it (worker.py's convert: onnx2tf, the same calibration),
then quantised through the TFLite converter's own two steps: calibrate once, then per variant
mlir_quantize with denylisted_nodes (what `build --eiq-float-nodes` and TFLite's
QuantizationDebugger use): "keep" denylists the node's operators (their output tensors), "alone"
every other operator. Each variant runs in the TFLite CPU interpreter on the evaluation inputs.
Vela is not run: it compiles the int8 operators the converter made without changing their
arithmetic (an operator left in float runs on the Cortex-A, not the Ethos-U65).
"""

import os

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "worker.py")
SWEEP = os.path.join(os.path.dirname(HERE), "brute_force_sweep.py")


def _outputs(base, path, conv, data):
    """The variant's outputs per ONNX output; XNNPACK refuses some mixed models, then the builtin kernels run it (as build's simulation retries)."""
    try:
        return base.run_tflite(path, conv["onnx_inputs"], conv["input_layouts"], data, conv["onnx_outputs"])
    except base.NoSignature:
        raise
    except Exception:  # noqa: BLE001 - retried once without the default delegates
        return base.run_tflite(path, conv["onnx_inputs"], conv["input_layouts"], data, conv["onnx_outputs"], default_delegates=False)


def run(request, ctx):
    """request: "model" (node names as tokens), "calib" and "eval" (.npz, ONNX layout), "nodes" ({ONNX
    node: its tokens}), "deadline_s". Returns the groups measured (node, its operators' tensors) and the variants."""
    import tensorflow as tf

    base = ctx.load_module(WORKER, "eiq_worker")
    sweep = ctx.load_module(SWEEP, "brute_force_sweep")
    os.chdir(ctx.workdir)
    calib = base.load_arrays(ctx, request["calib"])
    data = base.load_arrays(ctx, request["eval"])
    folder = os.path.join(ctx.workdir, "onnx2tf")
    ctx.log("onnx2tf: converting as build does (%d calibration samples)" % min(len(a) for a in calib.values()))
    conv = base.convert(request["model"], folder, calib, ctx)
    converter = base._int8_converter(tf, os.path.join(folder, "saved_model"), conv["onnx_inputs"], conv["input_layouts"], calib)
    calibrated, ops = base.calibrated_model(converter, os.path.join(ctx.workdir, "model"))
    groups = []
    for node, tokens in request["nodes"].items():
        tensors, found = base.node_tensors(ops, {node: tokens}, conv["layers"])
        if found:
            groups.append({"node": node, "layers": tensors})
    everything = [t["name"] for op in ops["ops"] for t in op["outputs"]]
    ctx.log("brute force: %d of %d nodes own operators of the TFLite model (%d operators)" % (len(groups), len(request["nodes"]), len(ops["ops"])))

    def measure(kept_float, index):
        path = os.path.join(ctx.workdir, "variant_%d.tflite" % index)
        with open(path, "wb") as fh:
            fh.write(base.quantize_except(tf, calibrated, kept_float))
        outs = _outputs(base, path, conv, data)
        os.remove(path)
        found = os.path.join(ctx.workdir, "variant_%d.npz" % index)
        ctx.arrays.write_arrays(found, outs)
        return found

    variants = sweep.sweep(groups, everything, measure, ctx, float(request.get("deadline_s") or 1e9))
    return {"groups": groups, "variants": variants, "operators": len(ops["ops"]), "versions": base.versions()}
