#!/usr/bin/env python3
"""Whole-process wall time of `edgedeploy audit MODEL --target all` on a model of about 1000 nodes.

    python scripts/bench_audit.py               # 7 runs, prints min / median / max
    python scripts/bench_audit.py --runs 15 --nodes 2000 --format json

The goal (issue 3) is under 1 s on our 2-core machines. Each run is a fresh process, as a user
or CI runs it, so imports count. The figures are printed, not asserted: wall time depends on the
machine and its load. The model is built here with onnx.helper (a residual CNN with a few
operators that leave the accelerator on some chips), so the benchmark needs no download.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def build_model(target_nodes: int = 1000):
    """A residual CNN of `target_nodes` nodes (roughly): Conv/Relu/Add blocks, Swish, Resize, Sin."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    channels = 16
    nodes, inits = [], []
    x = "input"
    index = 0

    def weight(name, shape):
        inits.append(numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32) * 0.1, name))
        return name

    while len(nodes) < target_nodes - 8:
        i = index
        w = weight(f"w{i}", (channels, channels, 3, 3))
        b = weight(f"b{i}", (channels,))
        nodes.append(helper.make_node("Conv", [x, w, b], [f"c{i}"], name=f"conv{i}", kernel_shape=[3, 3], pads=[1, 1, 1, 1]))
        nodes.append(helper.make_node("Relu", [f"c{i}"], [f"r{i}"], name=f"relu{i}"))
        w2 = weight(f"w{i}b", (channels, 1, 3, 3))
        nodes.append(helper.make_node("Conv", [f"r{i}", w2], [f"d{i}"], name=f"dwconv{i}", kernel_shape=[3, 3], pads=[1, 1, 1, 1], group=channels))
        nodes.append(helper.make_node("Sigmoid", [f"d{i}"], [f"s{i}"], name=f"sigmoid{i}"))
        nodes.append(helper.make_node("Mul", [f"d{i}", f"s{i}"], [f"m{i}"], name=f"swish{i}"))
        if i % 10 == 7:
            # An operator ESP-DL lacks, to give the audit transitions to count.
            nodes.append(helper.make_node("Sin", [f"m{i}"], [f"n{i}"], name=f"sin{i}"))
            nodes.append(helper.make_node("Add", [x, f"n{i}"], [f"a{i}"], name=f"add{i}"))
        else:
            nodes.append(helper.make_node("Add", [x, f"m{i}"], [f"a{i}"], name=f"add{i}"))
        x = f"a{i}"
        index += 1
    nodes.append(helper.make_node("GlobalAveragePool", [x], ["pooled"], name="gap"))
    nodes.append(helper.make_node("Flatten", ["pooled"], ["flat"], name="flatten", axis=1))
    wf = weight("fc_w", (channels, 10))
    nodes.append(helper.make_node("MatMul", ["flat", wf], ["logits"], name="fc"))
    nodes.append(helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=-1))
    graph = helper.make_graph(
        nodes,
        "bench",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, channels, 32, 32])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, [1, 10])],
        initializer=inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def edgedeploy_command() -> list[str]:
    """The console script next to this interpreter (what users run), else `python -m edgedeploy`."""
    script = Path(sys.executable).with_name("edgedeploy")
    return [str(script)] if script.exists() else [sys.executable, "-m", "edgedeploy"]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7, help="timed runs (at least 1)")
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--format", default="text", choices=["text", "json", "md", "html"], help="audit output format to time")
    parser.add_argument("--keep", type=Path, help="also save the model here")
    args = parser.parse_args(argv)

    import onnx

    model = build_model(args.nodes)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench_1000.onnx"
        onnx.save(model, str(path))
        if args.keep:
            onnx.save(model, str(args.keep))
        cmd = edgedeploy_command() + ["audit", str(path), "--target", "all", "--format", args.format]
        env = dict(os.environ, PYTHONDONTWRITEBYTECODE=os.environ.get("PYTHONDONTWRITEBYTECODE", ""))
        first = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if first.returncode != 0:
            print(first.stderr, file=sys.stderr)
            return first.returncode
        summary = [line for line in first.stdout.splitlines() if "nodes on the accelerator" in line]
        size_bytes = path.stat().st_size
        times, cpu = [], []
        for _ in range(args.runs):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            started = time.perf_counter()
            subprocess.run(cmd, capture_output=True, env=env, check=True)
            times.append(time.perf_counter() - started)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu.append((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))
    print(f"model: {len(model.graph.node)} nodes, {size_bytes} bytes")
    print(f"command: edgedeploy audit MODEL --target all --format {args.format} (fresh process each run; one warm-up run not counted)")
    for line in summary:
        print(f"  {line}")
    print(f"machine: {os.cpu_count()} CPUs, python {sys.version.split()[0]}, load average {os.getloadavg()[0]:.2f}")
    print(f"wall time over {args.runs} runs: min {min(times):.3f} s, median {statistics.median(times):.3f} s, max {max(times):.3f} s")
    # CPU time is what the run costs whatever else the machine does; on a busy machine wall time
    # includes waiting for a core.
    print(f"CPU time (user+sys) per run: min {min(cpu):.3f} s, median {statistics.median(cpu):.3f} s, max {max(cpu):.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
