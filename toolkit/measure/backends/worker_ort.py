"""One ONNX Runtime latency session (a worker: runs in its own process, never imports edgedeploy).

Started by edgedeploy.measure.harness through the toolchain worker protocol with the core's own
interpreter (ONNX Runtime is a core dependency). Loads the stdlib protocol by path, as the
generated runners on devices do, so the host and the devices time models the same way.
"""

import os


def make_inputs(np, inputs, seed):
    """Seeded inputs of the right shape and dtype: floats uniform in [0, 1), integers zero."""
    rng = np.random.default_rng(seed)
    feeds = {}
    for spec in inputs:
        dtype = np.dtype(spec["dtype"])
        if dtype.kind == "f":
            feeds[spec["name"]] = rng.random(spec["shape"], dtype=np.float32).astype(dtype)
        elif dtype.kind == "b":
            feeds[spec["name"]] = np.zeros(spec["shape"], dtype=dtype)
        else:
            feeds[spec["name"]] = np.zeros(spec["shape"], dtype=dtype)
    return feeds


def run(request, ctx):
    protocol = ctx.load_module(request["protocol_path"])
    import numpy as np
    import onnxruntime as ort

    options = ort.SessionOptions()
    threads = int(request["threads"])
    options.intra_op_num_threads = threads
    # One model, one stream of calls: inter-op parallelism only adds scheduling noise.
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    provider = request["provider"]
    ctx.log(f"onnxruntime {ort.__version__}: {provider}, {threads} intra-op threads")
    session = ort.InferenceSession(request["model_path"], options, providers=[provider])
    used = session.get_providers()
    if used[0] != provider:
        raise RuntimeError(f"ONNX Runtime fell back to {used[0]} instead of {provider}")
    feeds = make_inputs(np, request["inputs"], int(request.get("seed", 0)) + int(request.get("session_index", 0)))
    run_model = session.run

    def run_once():
        run_model(None, feeds)

    return protocol.run_requested_session(
        run_once,
        request,
        {
            "libraries": {"onnxruntime": ort.__version__, "numpy": np.__version__},
            "threads": threads,
            "detail": {"providers": used, "omp_num_threads": os.environ.get("OMP_NUM_THREADS")},
        },
    )
