"""PyTorch backends of `edgedeploy bench` (a worker: runs in the `torch` environment, never imports edgedeploy).

Actions (request["action"]):
  probe         torch and onnx2torch versions, whether CUDA is usable, and the GPU names
  describe_pt2  load a torch.export archive and report its inputs (names, shapes, dtypes)
  outputs       run a .pt2 in fp32 on the CPU on inputs from an .npz; save the outputs to an .npz
  session       one latency session, on CPU or CUDA, in fp32 or fp16, in one of these modes:
                  eager               the module as loaded
                  compile             torch.compile, default mode
                  compile-cudagraphs  torch.compile(mode="reduce-overhead"): CUDA graph trees
                  eager-capture       the module captured once in a torch.cuda.CUDAGraph, replayed
                  compile-capture     torch.compile (default mode) captured the same way
The model comes from the ONNX file through onnx2torch, or from the user's .pt2 (torch.export).

On CUDA a session sets what a tuned hand-written loop sets (see `tune_cuda`): the figures are
meant to be the best this torch build gives for the model, not its defaults.
"""

import os
import sys

TORCH_DTYPES = {"float32": "float32", "float16": "float16", "float64": "float64", "bfloat16": "bfloat16",
                "int64": "int64", "int32": "int32", "int8": "int8", "uint8": "uint8", "bool": "bool"}


def import_onnx2torch(torch, ctx):
    """Import onnx2torch, which imports torchvision at import time.

    torchvision's wheels are built against one torch build. Where the CPU build of torch sits
    beside torchvision's (CUDA) wheel, torchvision's C++ operators cannot load, and
    torchvision 0.28's `import` then fails on an unguarded fake-kernel registration for its
    `nms` and `qnms` operators ("operator torchvision::nms does not exist"). onnx2torch needs
    torchvision only for the NonMaxSuppression and RoiAlign converters, so declaring those two
    operator schemas (no kernels) lets the import pass; a model that uses them then fails at
    run time with torchvision's own message. Where torchvision matches torch, nothing is done.
    """
    try:
        import torchvision  # noqa: F401
    except RuntimeError as exc:
        if "torchvision::" not in str(exc):
            raise
        ctx.log(f"torchvision's C++ operators do not match this torch build ({exc}); declaring nms/qnms schemas so onnx2torch imports")
        for name in [m for m in sys.modules if m == "torchvision" or m.startswith("torchvision.")]:
            del sys.modules[name]
        library = torch.library.Library("torchvision", "FRAGMENT")
        for op in ("nms", "qnms"):
            library.define(f"{op}(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
        import torchvision  # noqa: F401,F811
        # Keep the library object alive for the life of the process.
        torch._edgedeploy_torchvision_schemas = library
    import onnx2torch

    return onnx2torch


def probe(request, ctx):
    import torch

    result = {
        "torch": torch.__version__,
        "onnx2torch": ctx.package_version("onnx2torch"),
        "python": sys.version.split()[0],
        "cuda_available": bool(torch.cuda.is_available()),
        "cuda_version": torch.version.cuda,
        "cuda_devices": [],
        "onnx2torch_error": None,
    }
    if result["cuda_available"]:
        result["cuda_devices"] = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    try:
        import_onnx2torch(torch, ctx)
    except Exception as exc:  # noqa: BLE001 - reported, the eager .pt2 path may still work
        result["onnx2torch_error"] = f"{type(exc).__name__}: {exc}"
    return result


def _pt2_inputs(program):
    """(name, shape, dtype) of each user input of an ExportedProgram, from its placeholders."""
    user_inputs = set(program.graph_signature.user_inputs)
    found = []
    for node in program.graph.nodes:
        if node.op == "placeholder" and node.name in user_inputs:
            val = node.meta.get("val")
            if val is None or not hasattr(val, "shape"):
                raise ValueError(f"input {node.name} is not a tensor")
            shape = []
            for d in val.shape:
                try:
                    shape.append(int(d))
                except (TypeError, ValueError):
                    # A symbolic (dynamic) size: the example value's hint, if torch kept one.
                    hint = getattr(getattr(d, "node", None), "hint", None)
                    if hint is None:
                        raise ValueError(f"input {node.name} has a dynamic dimension without an example size; give --input-shape")
                    shape.append(int(hint))
            found.append({"name": node.name, "shape": shape, "dtype": str(val.dtype).replace("torch.", "")})
    return found


def describe_pt2(request, ctx):
    import torch

    program = torch.export.load(request["path"])
    # The probe's answers too, so that a .pt2 bench starts torch once less.
    return {"inputs": _pt2_inputs(program), "torch": torch.__version__, "probe": probe(request, ctx)}


def _load_model(torch, request, ctx):
    source = request["source"]
    if source["kind"] == "onnx":
        onnx2torch = import_onnx2torch(torch, ctx)
        return onnx2torch.convert(source["path"]).eval()
    program = torch.export.load(source["path"])
    device = request.get("device", "cpu")
    if device != "cpu":
        # An exported program bakes the device of tensors it creates (an LSTM's zero initial
        # state, say) into its graph; module().to(device) moves only parameters and buffers.
        # move_to_device_pass rewrites those device arguments too.
        from torch.export.passes import move_to_device_pass

        program = move_to_device_pass(program, device)
    return program.module()


def tune_cuda(torch, request):
    """Set what a tuned hand-written CUDA loop sets; return the settings, for the result's detail.

    cudnn.benchmark: cuDNN times its convolution algorithms on the first call of each shape and
    keeps the fastest, instead of picking by heuristics (the default, False). The first call
    pays for it, and it is timed apart. TF32 is left at torch's defaults: it changes the
    arithmetic, and precision is part of a figure's scope, so it is recorded, not switched on.
    """
    torch.backends.cudnn.benchmark = bool(request.get("cudnn_benchmark", True))
    return {
        "cudnn_benchmark": torch.backends.cudnn.benchmark,
        "cudnn_version": torch.backends.cudnn.version(),
        "cudnn_allow_tf32": torch.backends.cudnn.allow_tf32,
        "matmul_allow_tf32": torch.backends.cuda.matmul.allow_tf32,
    }


class CapturedGraph:
    """Run `fn` through one CUDA graph: captured on the first call, replayed on every later one.

    This is the loop the PyTorch CUDA-graphs documentation shows and a tuned hand-written
    benchmark uses: warm up on a side stream (cuDNN's algorithm search and any allocation happen
    there, outside the graph), capture one call with static input buffers, then per call copy
    the inputs into those buffers and replay. The copy stays in the timed call: a real caller
    brings new data every time. The first call (warm-up and capture) is the session's first
    inference, timed apart.
    """

    WARMUP_CALLS = 3

    def __init__(self, torch, fn):
        self.torch = torch
        self.fn = fn
        self.graph = None
        self.static_inputs = None
        self.static_outputs = None

    def capture(self, inputs):
        torch = self.torch
        self.static_inputs = [t.clone() for t in inputs]
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(self.WARMUP_CALLS):
                self.fn(*self.static_inputs)
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.static_outputs = self.fn(*self.static_inputs)

    def __call__(self, *inputs):
        if self.graph is None:
            self.capture(inputs)
        for static, fresh in zip(self.static_inputs, inputs):
            static.copy_(fresh)
        self.graph.replay()
        return self.static_outputs


def make_runnable(torch, model, mode, device):
    """The callable a session times for `mode` (see the module docstring)."""
    if mode == "eager":
        return model
    if mode == "compile":
        return torch.compile(model)
    if mode == "compile-cudagraphs":
        return torch.compile(model, mode="reduce-overhead")
    if mode in ("eager-capture", "compile-capture"):
        if device != "cuda":
            raise ValueError(f"{mode} captures a CUDA graph and needs device cuda, not {device}")
        return CapturedGraph(torch, model if mode == "eager-capture" else torch.compile(model))
    raise ValueError(f"unknown mode {mode}")


def session(request, ctx):
    protocol = ctx.load_module(request["protocol_path"])
    if request.get("private_compile_cache"):
        # A private compile cache per session: each session compiles from cold, like a fresh
        # deployment, and its first-inference time says so.
        cache = os.path.join(ctx.workdir, "compile-cache")
    else:
        # Shared by the sessions of one bench (never the user's own cache): later sessions
        # compile warm, and their first-inference times say so.
        cache = request.get("compile_cache_dir") or os.path.join(ctx.workdir, "compile-cache")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = cache
    os.environ["TRITON_CACHE_DIR"] = os.path.join(cache, "triton")
    import torch

    threads = int(request["threads"])
    torch.set_num_threads(threads)
    device = request["device"]
    mode = request["mode"]
    precision = request["precision"]
    if device == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("torch reports no CUDA device (torch.cuda.is_available() is False)")
    cuda_settings = tune_cuda(torch, request) if device == "cuda" else {}
    model = _load_model(torch, request, ctx)
    generator = torch.Generator().manual_seed(int(request.get("seed", 0)) + int(request.get("session_index", 0)))
    inputs = []
    for spec in request["inputs"]:
        dtype = getattr(torch, TORCH_DTYPES.get(spec["dtype"], spec["dtype"]))
        if dtype.is_floating_point:
            tensor = torch.rand(spec["shape"], generator=generator, dtype=torch.float32).to(dtype)
            if precision == "fp16":
                tensor = tensor.half()
        else:
            tensor = torch.zeros(spec["shape"], dtype=dtype)
        inputs.append(tensor.to(device))
    model = model.to(device)
    if precision == "fp16":
        model = model.half()
    runnable = make_runnable(torch, model, mode, device)
    ctx.log(f"torch {torch.__version__}: {mode} on {device}, {precision}, {threads} threads" + (f", {cuda_settings}" if cuda_settings else ""))
    synchronize = torch.cuda.synchronize if device == "cuda" else None

    if synchronize is None:
        def run_once():
            runnable(*inputs)
    else:
        # CUDA calls return before the GPU finishes: wait for it inside the timed region.
        def run_once():
            runnable(*inputs)
            synchronize()

    with torch.inference_mode():
        return protocol.run_requested_session(
            run_once,
            request,
            {
                "libraries": {"torch": torch.__version__, "onnx2torch": ctx.package_version("onnx2torch"), "torchvision": ctx.package_version("torchvision")},
                "threads": threads,
                "detail": {
                    "mode": mode,
                    "device": device,
                    "gpu": torch.cuda.get_device_name(0) if device == "cuda" else None,
                    "cuda_version": torch.version.cuda,
                    "source": request["source"]["kind"],
                    **cuda_settings,
                },
            },
        )


def outputs(request, ctx):
    import numpy as np
    import torch

    program = torch.export.load(request["path"]).module()
    with np.load(request["inputs_npz"]) as archive:
        arrays = [archive[f"arr_{k}"] for k in range(len(archive.files))]
    with torch.inference_mode():
        result = program(*[torch.from_numpy(a) for a in arrays])
    if isinstance(result, torch.Tensor):
        result = (result,)
    flat = [r.detach().float().cpu().numpy() for r in result]
    np.savez(request["out_npz"], *flat)
    return {"out_npz": request["out_npz"], "outputs": len(flat)}


def run(request, ctx):
    return ctx.dispatch(request, {"outputs": outputs, "probe": probe, "describe_pt2": describe_pt2, "session": session})
