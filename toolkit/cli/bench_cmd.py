"""`edgedeploy bench`: latency of MODEL on this machine's backends, in independent sessions."""

from __future__ import annotations

from pathlib import Path

import click

from edgedeploy.cli.options import AbsolutePath

from edgedeploy.cli.options import input_shape_option, model_argument, parse_shapes, resolve_model
from edgedeploy.cli.output import emit_json, format_option, info, table
from edgedeploy.measure import protocol

# Session medians further apart than this are flagged: the figure is then mostly the machine's noise.
SPREAD_WARNING_PERCENT = 10.0


@click.command("bench")
@model_argument
@click.option(
    "--backend",
    "backends",
    multiple=True,
    default=("ort-cpu",),
    show_default=True,
    metavar="NAME[,NAME...]",
    help="Backend(s) to time (repeatable or comma-separated), or `all` for every one installed here. "
    "ort-cpu (and ort-<provider> for other ONNX Runtime providers), torch-eager-cpu, torch-compile-cpu, "
    "torch-eager-cuda, torch-compile-cuda, torch-compile-cudagraphs-cuda, tflite-cpu; simulators: rknn-sim, espdl-sim, vela-estimate.",
)
@input_shape_option
@click.option("--batch", type=click.IntRange(min=1), help="Items per inference (the inputs' leading dimension); above 1 the figures include items/s.")
@click.option("--precision", type=click.Choice(["fp32", "fp16"]), default="fp32", show_default=True, help="Arithmetic precision (fp16: the torch CUDA backends, or an fp16 ONNX model).")
@click.option("--threads", type=click.IntRange(min=1), help="CPU threads for every backend (default: the cores this process may use).")
@click.option("--sessions", type=click.IntRange(min=3), default=3, show_default=True, help="Independent sessions (separate processes) per backend; at least 3.")
@click.option("--warmup", type=click.IntRange(min=0), default=protocol.DEFAULT_WARMUP, show_default=True, help="Untimed runs per session after the first (timed-apart) inference.")
@click.option("--min-iterations", type=click.IntRange(min=1), default=protocol.DEFAULT_MIN_ITERATIONS, show_default=True, help="Timed iterations per session, at least.")
@click.option("--min-duration", "min_duration_s", type=click.FloatRange(min=0), default=protocol.DEFAULT_MIN_DURATION_S, show_default=True, help="Seconds of timed iterations per session, at least.")
@click.option("--torch-python", type=AbsolutePath(dir_okay=False, path_type=Path), help="An interpreter with torch and onnx2torch for the torch backends, instead of the `torch` toolchain environment (e.g. a CUDA build of torch already on a GPU machine). Also $EDGEDEPLOY_TORCH_PYTHON.")
@click.option("--torch-model", type=AbsolutePath(dir_okay=False, exists=True, path_type=Path), help="A torch.export .pt2 of the same model for the torch backends (instead of converting the ONNX with onnx2torch). Its outputs are checked against the ONNX model's on one seeded input first; a mismatch is an error.")
@click.option("--shared-compile-cache", is_flag=True, help="Let torch.compile sessions share one compile cache (later sessions compile warm). Default: each session compiles from cold, like a fresh deployment.")
@click.option("--timeout", "timeout_s", type=click.FloatRange(min=1), default=900, show_default=True, help="Time-out in seconds for each session (torch.compile compiles inside it).")
@click.option("--samples/--no-samples", default=False, show_default=True, help="Keep every timed sample in the JSON (large), not only the statistics.")
@click.option("--out", "out_path", type=AbsolutePath(dir_okay=False, path_type=Path), help="Also write the JSON result to FILE (atomically; an existing file needs --force).")
@click.option("--force", is_flag=True, help="Overwrite --out FILE if it exists.")
@format_option()
def bench_command(model, backends, input_shapes, batch, precision, threads, sessions, warmup, min_iterations, min_duration_s, torch_python, torch_model, shared_compile_cache, timeout_s, samples, out_path, force, output_format) -> None:
    """Time MODEL on this machine's backends: warm-up, timed iterations, >= 3 independent sessions each.

    MODEL (an .onnx file, or a torch.export .pt2 for the torch backends) defaults to the bundled
    MNIST sample. Prints per-session mean, median, p90, p99, min and max, the range across
    sessions, the first inference apart, and names the fastest backend with its ratio to each
    other one: only between figures whose scope (model, shapes, batch, precision, threads,
    device) differs in the backend alone. Progress goes to stderr.
    """
    from edgedeploy.artifacts import atomic_write_json
    from edgedeploy.errors import ArtifactError, EdgedeployError
    from edgedeploy.pipeline.bench import BenchOptions, run_bench
    from edgedeploy.measure.harness import SessionPlan

    if out_path is not None and out_path.exists() and not force:
        raise ArtifactError(f"{out_path} exists already; use --force to overwrite it.")
    options = BenchOptions(
        backends=tuple(backends),
        input_shapes=parse_shapes(input_shapes),
        batch=batch,
        precision=precision,
        threads=threads,
        plan=SessionPlan(sessions=sessions, warmup=warmup, min_iterations=min_iterations, min_duration_s=min_duration_s, keep_samples=samples),
        torch_python=torch_python,
        torch_model=torch_model,
        shared_compile_cache=shared_compile_cache,
        session_timeout_s=timeout_s,
    )
    doc = run_bench(resolve_model(model), options, echo=info)
    if out_path is not None:
        atomic_write_json(out_path, doc)
        info(f"bench: wrote {out_path}")
    if output_format == "json":
        emit_json(doc)
    else:
        click.echo(render_text(doc))
    explicit = [b for b in options.backends if "all" not in b.lower().split(",")]
    if not doc["results"]:
        reasons = "; ".join(f"{s['backend']}: {s['reason']}" for s in doc["skipped"]) or "; ".join(f"{f['backend']}: {f['error'].splitlines()[0]}" for f in doc["failed"])
        raise EdgedeployError(f"No backend could be timed ({reasons}).")
    if explicit and (doc["failed"] or doc["skipped"]):
        names = [s["backend"] for s in doc["skipped"]] + [f["backend"] for f in doc["failed"]]
        raise EdgedeployError(f"Backend(s) you asked for did not run: {', '.join(names)} (reasons above).")


def _us(value: float | None) -> str:
    if value is None:
        return "-"
    if value >= 100000:
        return f"{value / 1000:.0f}ms"
    if value >= 1000:
        return f"{value:.0f}"
    return f"{value:.1f}"


def _range_us(pair) -> str:
    return f"{_us(pair[0])}-{_us(pair[1])}" if pair else "-"


def scope_line(scope: dict) -> str:
    shapes = ", ".join(f"{k}={'x'.join(map(str, v))}" for k, v in scope["input_shapes"].items())
    dev = scope["device"]
    acc = f" + {', '.join(dev['accelerators'])}" if dev.get("accelerators") else ""
    return (
        f"{scope['model']['name']} sha256 {scope['model']['sha256'][:12]}, {shapes}, batch {scope['batch']}, "
        f"{scope['precision']}, {scope['threads']} threads, {dev['cpu_model']} x{dev['cpu_cores']}{acc} ({dev['hostname']})"
    )


def render_text(doc: dict) -> str:
    """The terminal view of an `edgedeploy.bench/1` document: every figure under its scope."""
    out: list[str] = []
    model = doc["model"]
    out.append(f"model     {model['name']} ({model['format']}) sha256 {model['sha256']}")
    dev = doc["device"]
    gov = ", ".join(dev.get("frequency_governors") or []) or "not readable"
    out.append(
        f"device    {dev['cpu_model']}, {dev['cpu_cores']} cores ({dev['cpu_cores_usable']} usable), governor {gov}"
        + (f", GPUs: {', '.join(dev['accelerators'])}" if dev.get("accelerators") else ", no GPU")
        + f"; host {dev['hostname']}, Python {dev['python']}"
    )
    p = doc["request"]["protocol"]
    out.append(
        f"protocol  {p['sessions']} sessions per backend, each a separate process: first inference timed apart, "
        f"{p['warmup']} warm-up runs, then >= {p['min_iterations']} iterations and >= {p['min_duration_s']:g} s; times in us"
    )
    for m in doc["results"]:
        b = m["backend"]
        libs = ", ".join(f"{k} {v}" for k, v in b["libraries"].items() if v)
        kind = " [SIMULATOR]" if b["kind"] != "runtime" else ""
        out.append("")
        out.append(f"{m['scope']['backend']}: {b['label']}{kind} ({libs})")
        out.append(f"  scope: {scope_line(m['scope'])}")
        rows = []
        for i, s in enumerate(m["sessions"], start=1):
            lat = s["latency_us"]
            rows.append([i, s["pid"], s["iterations"], _us(lat["mean"]), _us(lat["p50"]), _us(lat["p90"]), _us(lat["p99"]), _us(lat["min"]), _us(lat["max"]), _us(s["first_inference_us"]), f"{s['throughput_items_per_s']:.0f}"])
        for line in table(["SESSION", "PID", "ITER", "MEAN", "MEDIAN", "P90", "P99", "MIN", "MAX", "FIRST", "ITEMS/S"], rows, right_align=range(11)).splitlines():
            out.append("  " + line)
        sm = m["summary"]
        out.append(
            f"  across sessions: median {_us(sm['median_us'])} (session medians {_range_us(sm['session_median_range_us'])}, spread {sm['spread_percent']:.1f}%), "
            f"mean {_range_us(sm['session_mean_range_us'])}, p99 {_range_us(sm['session_p99_range_us'])}, first inference {_range_us(sm['first_inference_range_us'])}"
            + (f", {sm['throughput_items_per_s']:.0f} items/s" if m["scope"]["batch"] > 1 else "")
        )
        if sm["spread_percent"] is not None and sm["spread_percent"] > SPREAD_WARNING_PERCENT:
            out.append(
                f"  warning: the session medians differ by {sm['spread_percent']:.0f}%: the machine was busy or this backend is unstable; "
                "trust the range, not the single figure, or rerun on a quiet machine"
            )
    if doc["skipped"]:
        out.append("")
        out.append("skipped:")
        for s in doc["skipped"]:
            out.append(f"  {s['backend']}: {s['reason']}")
    if doc["failed"]:
        out.append("")
        out.append("failed:")
        for f in doc["failed"]:
            lines = f["error"].splitlines()
            out.append(f"  {f['backend']}: {lines[0]}")
            out.extend("    " + line.strip() for line in lines[1:6])
    cmp = doc["comparison"]
    if cmp["fastest"]:
        out.append("")
        scope = dict(cmp["scope"], backend="*")
        out.append(f"comparison: {scope_line(scope)}")
        rows = []
        for e in cmp["entries"]:
            note = "fastest" if e["backend"] == cmp["fastest"] else (f"{e['ratio_to_fastest']:.2f}x slower" + (" (session ranges overlap: within the noise)" if e["ranges_overlap_fastest"] else ""))
            rows.append([e["backend"], _us(e["median_us"]), _range_us(e["session_median_range_us"]), f"{e['ratio_to_fastest']:.2f}", note])
        for line in table(["BACKEND", "MEDIAN", "SESSION MEDIANS", "X FASTEST", ""], rows, right_align=(1, 2, 3)).splitlines():
            out.append("  " + line)
        others = [e for e in cmp["entries"] if e["backend"] != cmp["fastest"]]
        out.append(
            f"fastest: {cmp['fastest']} for {scope_line(scope).split(',')[0]} at batch {cmp['scope']['batch']} on {cmp['scope']['device']['cpu_model']} ({cmp['scope']['device']['hostname']})"
            + ("; " + ", ".join(f"{e['ratio_to_fastest']:.2f}x faster than {e['backend']}" for e in others) if others else "")
        )
        out.append(
            "Ratios divide medians of session medians, between results whose scopes differ only in the backend "
            "(same model sha256, input shapes, batch, precision, threads and device)."
        )
        for e in cmp["excluded"]:
            out.append(f"  not compared: {e['backend']}: {e['reason']}")
    return "\n".join(out)


COMMANDS = [bench_command]
