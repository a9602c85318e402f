"""TFLite backend of `edgedeploy bench` (a worker: runs in the `eiq` environment, never imports edgedeploy).

Actions (request["action"]):
  convert  ONNX -> float32 TFLite with onnx2tf (4-D inputs become NHWC, as onnx2tf lays them out)
  session  one latency session with ai_edge_litert's interpreter (XNNPACK on CPU)
"""

import glob
import os


def convert(request, ctx):
    import onnx2tf

    out_dir = os.path.join(ctx.workdir, "tflite")
    ctx.log(f"onnx2tf {ctx.package_version('onnx2tf')}: converting {request['model_path']}")
    onnx2tf.convert(
        input_onnx_file_path=request["model_path"],
        output_folder_path=out_dir,
        non_verbose=True,
        # Only the float32 (and float16-weight) models are wanted; no calibration, no download.
        output_integer_quantized_tflite=False,
    )
    found = sorted(glob.glob(os.path.join(out_dir, "*_float32.tflite")))
    if not found:
        raise RuntimeError(f"onnx2tf wrote no *_float32.tflite into {out_dir}")
    from ai_edge_litert.interpreter import Interpreter

    interpreter = Interpreter(model_path=found[0])
    details = interpreter.get_input_details()
    return {
        "tflite_path": found[0],
        "inputs": [{"name": d["name"], "shape": [int(x) for x in d["shape"]], "dtype": d["dtype"].__name__} for d in details],
        "onnx2tf": ctx.package_version("onnx2tf"),
    }


def session(request, ctx):
    protocol = ctx.load_module(request["protocol_path"])
    import numpy as np
    from ai_edge_litert.interpreter import Interpreter

    threads = int(request["threads"])
    interpreter = Interpreter(model_path=request["tflite_path"], num_threads=threads)
    interpreter.allocate_tensors()
    rng = np.random.default_rng(int(request.get("seed", 0)) + int(request.get("session_index", 0)))
    feeds = []
    for d in interpreter.get_input_details():
        dtype = np.dtype(d["dtype"])
        array = rng.random(tuple(d["shape"]), dtype=np.float32).astype(dtype) if dtype.kind == "f" else np.zeros(tuple(d["shape"]), dtype)
        feeds.append((d["index"], array))
    outputs = [d["index"] for d in interpreter.get_output_details()]
    set_tensor, invoke, get_tensor = interpreter.set_tensor, interpreter.invoke, interpreter.get_tensor

    # Inputs in, inference, outputs out: the same work an ONNX Runtime `run` call does.
    def run_once():
        for index, array in feeds:
            set_tensor(index, array)
        invoke()
        for index in outputs:
            get_tensor(index)

    return protocol.run_requested_session(
        run_once,
        request,
        {
            "libraries": {"ai-edge-litert": ctx.package_version("ai-edge-litert"), "onnx2tf": ctx.package_version("onnx2tf"), "numpy": np.__version__},
            "threads": threads,
            "detail": {"delegate": "XNNPACK (the interpreter's default on CPU)", "tflite": os.path.basename(request["tflite_path"])},
        },
    )


def run(request, ctx):
    return ctx.dispatch(request, {"convert": convert, "session": session})
