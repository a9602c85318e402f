"""An independent hand-written latency loop, to check that `edgedeploy bench` leaves no speed behind.

    python3 scripts/gpu/hand_loop.py --model densenet121 --batch 8 --precision fp16 \
        [--pt2 densenet121.pt2] [--variants plain-eager,plain-graph,...] [--sessions 3] [--out FILE.json]

It shares no code with edgedeploy: it builds the model with scripts/gpu/make_bench_models.py
(the same seeded builder the benchmark's .onnx and .pt2 come from) and times it the way a user
who tunes a PyTorch loop by hand would, with the settings the PyTorch documentation recommends:

  plain-eager          the nn.Module as built, cudnn.benchmark on
  plain-graph          the nn.Module captured once in a torch.cuda.CUDAGraph after a side-stream
                       warm-up (the documentation's recipe), cudnn.benchmark on; per call the
                       input is copied into the static buffer and the graph replayed
  plain-graph-nobench  the same with cudnn.benchmark off (torch's default): what it is worth
  pt2-graph            the torch.export program (--pt2) captured the same way: separates "which
                       module" from "which loop" when bench and this loop disagree

Each call is timed with time.perf_counter_ns around (copy, replay or forward, synchronize), the
same span bench times. Per session: a fresh process (torch imported anew), every variant in a
rotated order (so no variant always runs first), 10 warm-up calls after the first, then at least
50 calls and at least 1 s. Reported per variant: each session's median, p90, p99, mean and first
call, and the median and range of the session medians. Progress on stderr, the table on stdout.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
VARIANTS = ("plain-eager", "plain-graph", "plain-graph-nobench", "pt2-graph")
WARMUP = 10
MIN_ITERATIONS = 50
MIN_DURATION_S = 1.0
SIDE_STREAM_WARMUP = 3


def _percentile(values, q):
    values = sorted(values)
    pos = (len(values) - 1) * q / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (pos - lo)


def _builder():
    spec = importlib.util.spec_from_file_location("make_bench_models", HERE / "make_bench_models.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.build


def _graph_call(torch, fn, example):
    """The documented CUDA-graph recipe: warm up on a side stream, capture, then copy + replay."""
    static_input = example.clone()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(SIDE_STREAM_WARMUP):
            fn(static_input)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_output = fn(static_input)

    def call(x):
        static_input.copy_(x)
        graph.replay()
        return static_output

    return call


def run_variant(torch, variant, model, pt2_module, example):
    """Time one variant in this process; returns its statistics in microseconds."""
    torch.backends.cudnn.benchmark = variant != "plain-graph-nobench"
    module = pt2_module if variant == "pt2-graph" else model
    sync = torch.cuda.synchronize if example.is_cuda else (lambda: None)
    t0 = time.perf_counter_ns()
    if variant == "plain-eager":
        call = module
    else:
        call = _graph_call(torch, module, example)
    call(example)
    sync()
    first_us = (time.perf_counter_ns() - t0) / 1000.0
    for _ in range(WARMUP):
        call(example)
    sync()
    samples = []
    started = time.perf_counter_ns()
    while True:
        t0 = time.perf_counter_ns()
        call(example)
        sync()
        t1 = time.perf_counter_ns()
        samples.append((t1 - t0) / 1000.0)
        if len(samples) >= MIN_ITERATIONS and (t1 - started) >= MIN_DURATION_S * 1e9:
            break
    return {
        "variant": variant,
        "cudnn_benchmark": torch.backends.cudnn.benchmark,
        "iterations": len(samples),
        "first_us": first_us,
        "median_us": statistics.median(samples),
        "mean_us": statistics.fmean(samples),
        "p90_us": _percentile(samples, 90),
        "p99_us": _percentile(samples, 99),
        "min_us": min(samples),
        "max_us": max(samples),
    }


def child(args) -> None:
    """One session: a fresh process that times every variant asked for, in the order given."""
    import torch

    model, shape = _builder()(args.model)
    shape = (args.batch, *shape[1:])
    model = model.to(args.device)
    dtype = torch.float16 if args.precision == "fp16" else torch.float32
    if args.precision == "fp16":
        model = model.half()
    generator = torch.Generator().manual_seed(args.session)
    example = torch.rand(shape, generator=generator).to(dtype).to(args.device)
    pt2_module = None
    variants = args.variants.split(",")
    if "pt2-graph" in variants:
        if not args.pt2:
            raise SystemExit("pt2-graph needs --pt2")
        from torch.export.passes import move_to_device_pass

        program = move_to_device_pass(torch.export.load(args.pt2), args.device)
        pt2_module = program.module()
        if args.precision == "fp16":
            pt2_module = pt2_module.half()
    results = []
    with torch.inference_mode():
        for variant in variants:
            results.append(run_variant(torch, variant, model, pt2_module, example))
            print(f"hand_loop: session {args.session} pid {os.getpid()} {variant}: median {results[-1]['median_us']:.1f} us", file=sys.stderr, flush=True)
    print(json.dumps({
        "pid": os.getpid(),
        "session": args.session,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version(),
        "gpu": torch.cuda.get_device_name(0) if args.device == "cuda" else None,
        "cudnn_allow_tf32": torch.backends.cudnn.allow_tf32,
        "matmul_allow_tf32": torch.backends.cuda.matmul.allow_tf32,
        "results": results,
    }))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, help="cnn_bilstm or densenet121 (make_bench_models.py)")
    parser.add_argument("--batch", type=int, required=True)
    parser.add_argument("--precision", choices=["fp32", "fp16"], required=True)
    parser.add_argument("--pt2", help="the torch.export program of the same model, for the pt2-graph variant")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--sessions", type=int, default=3)
    parser.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (bench's --threads)")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--device", default="cuda", help=argparse.SUPPRESS)  # cpu: to try the script without a GPU (plain-eager only)
    parser.add_argument("--session", type=int, help=argparse.SUPPRESS)  # set in the child processes
    args = parser.parse_args()
    if args.session is not None:
        if args.threads:
            import torch

            torch.set_num_threads(args.threads)
        child(args)
        return
    variants = args.variants.split(",")
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown:
        raise SystemExit(f"unknown variants {unknown}; known: {', '.join(VARIANTS)}")
    sessions = []
    for index in range(args.sessions):
        # Rotate the order, so that no variant always runs first (cold GPU clocks, allocator).
        order = variants[index % len(variants):] + variants[: index % len(variants)]
        command = [sys.executable, __file__, "--model", args.model, "--batch", str(args.batch), "--precision", args.precision,
                   "--variants", ",".join(order), "--session", str(index)]
        if args.pt2:
            command += ["--pt2", args.pt2]
        if args.device != "cuda":
            command += ["--device", args.device]
        if args.threads:
            command += ["--threads", str(args.threads)]
        started = time.monotonic()
        print(f"hand_loop: {args.model} b{args.batch} {args.precision}: session {index + 1}/{args.sessions} ({','.join(order)})", file=sys.stderr, flush=True)
        done = subprocess.run(command, stdout=subprocess.PIPE, text=True, check=True)
        sessions.append(json.loads(done.stdout.strip().splitlines()[-1]))
        print(f"hand_loop: session {index + 1}/{args.sessions} done in {time.monotonic() - started:.1f} s", file=sys.stderr, flush=True)
    summary = {}
    for variant in variants:
        per = [next(r for r in s["results"] if r["variant"] == variant) for s in sessions]
        medians = [r["median_us"] for r in per]
        summary[variant] = {
            "median_of_session_medians_us": statistics.median(medians),
            "session_median_range_us": [min(medians), max(medians)],
            "spread_percent": 100.0 * (max(medians) - min(medians)) / min(medians),
            "session_p99_range_us": [min(r["p99_us"] for r in per), max(r["p99_us"] for r in per)],
            "first_range_us": [min(r["first_us"] for r in per), max(r["first_us"] for r in per)],
        }
    doc = {
        "what": "scripts/gpu/hand_loop.py: an independent hand-written loop",
        "model": args.model, "batch": args.batch, "precision": args.precision, "threads": args.threads,
        "protocol": {"sessions": args.sessions, "warmup": WARMUP, "min_iterations": MIN_ITERATIONS, "min_duration_s": MIN_DURATION_S},
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "sessions": sessions, "summary": summary,
    }
    if args.out:
        args.out.write_text(json.dumps(doc, indent=2) + "\n")
    print(f"hand loop: {args.model}, batch {args.batch}, {args.precision}, {sessions[0]['gpu']}, torch {sessions[0]['torch']}, cuDNN {sessions[0]['cudnn']}")
    print(f"{'variant':<22} {'median (us)':>12} {'session medians (us)':>22} {'spread':>8} {'p99 range (us)':>18}")
    for variant, s in summary.items():
        lo, hi = s["session_median_range_us"]
        plo, phi = s["session_p99_range_us"]
        print(f"{variant:<22} {s['median_of_session_medians_us']:>12.1f} {f'{lo:.1f}-{hi:.1f}':>22} {s['spread_percent']:>7.1f}% {f'{plo:.0f}-{phi:.0f}':>18}")


if __name__ == "__main__":
    main()
