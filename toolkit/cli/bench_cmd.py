"""`edgedeploy bench`: latency of MODEL on this machine's backends, in independent sessions."""

from __future__ import annotations

from pathlib import Path

import click

from edgedeploy.cli.options import AbsolutePath

from edgedeploy.cli.options import input_shape_option, model_argument, parse_shapes, resolve_model
from edgedeploy.cli.output import output_options, resolve_output, table, to_json
from edgedeploy.measure import protocol

BENCH_FORMATS = ("text", "json")
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
    "torch-eager-cuda, torch-compile-cuda, torch-compile-cudagraphs-cuda, torch-eager-capture-cuda, torch-compile-capture-cuda, tflite-cpu; simulators: rknn-sim, espdl-sim, vela-estimate.",
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
@click.option("--samples/--no-samples", "keep_samples", default=False, show_default=True, help="Keep every timed sample in the JSON (large), not only the statistics.")
@output_options(BENCH_FORMATS, "the result")
def bench_command(model, backends, out_path, force, output_format, **values) -> None:
    """Time MODEL on this machine's backends: warm-up, timed iterations, >= 3 independent sessions each.

    MODEL (an .onnx file, or a torch.export .pt2 for the torch backends) defaults to the bundled
    MNIST sample. Prints per-session mean, median, p90, p99, min and max, the range across
    sessions, the first inference apart, and names the fastest backend with its ratio to each
    other one: only between figures whose scope (model, shapes, batch, precision, threads,
    device) differs in the backend alone. Progress goes to stderr.
    """
    from edgedeploy import api
    from edgedeploy.cli.progress import Reporter
    from edgedeploy.errors import EdgedeployError

    output = resolve_output(out_path, output_format, force, BENCH_FORMATS, "edgedeploy bench")
    # Every line carries the time since bench started: a torch.compile session takes up to a
    # minute and `--backend all` several (edgedeploy.cli.progress: live line or plain lines).
    progress = Reporter.for_command(stamp=True)
    # Every other option is edgedeploy.api.bench's keyword of the same name.
    values["input_shapes"] = parse_shapes(values["input_shapes"])
    result = api.bench(resolve_model(model), backends, **values, progress=progress)
    progress.close()
    doc = result.document
    output.write(to_json(doc) if output.format == "json" else render_text(doc))
    explicit = [b for b in backends if "all" not in b.lower().split(",")]
    if not doc["results"]:
        reasons = "; ".join(f"{s['backend']}: {s['reason']}" for s in doc["skipped"]) or "; ".join(f"{f['backend']}: {f['error'].splitlines()[0]}" for f in doc["failed"])
        raise EdgedeployError(f"No backend could be timed ({reasons}).")
    if explicit and (doc["failed"] or doc["skipped"]):
        names = [s["backend"] for s in doc["skipped"]] + [f["backend"] for f in doc["failed"]]
        raise EdgedeployError(f"Backend(s) you asked for did not run: {', '.join(names)} (reasons above).")


# One unit per column, named in its header (shared with the measure and report renderings).
from edgedeploy.report.fmt import UNITS, in_unit, range_with_unit, unit_for, with_unit  # noqa: E402,F401


def within_session_noise(entry: dict) -> bool:
    """A ratio whose session ranges overlap the fastest's: the sessions disagree by more than the backends do."""
    return bool(entry.get("ranges_overlap_fastest"))


def scope_line(scope: dict) -> str:
    shapes = ", ".join(f"{k}={'x'.join(map(str, v))}" for k, v in scope["input_shapes"].items())
    dev = scope["device"]
    acc = f" + {', '.join(dev['accelerators'])}" if dev.get("accelerators") else ""
    return (
        f"{scope['model']['name']} sha256 {scope['model']['sha256'][:12]}, {shapes}, batch {scope['batch']}, "
        f"{scope['precision']}, {scope['threads']} threads, {dev['cpu_model']} x{dev['cpu_cores']}{acc} ({dev['hostname']})"
    )


def headline(cmp: dict, scope: dict) -> str:
    """The one-line verdict: the fastest backend, and only the ratios that are findings.

    Backends whose session ranges overlap the fastest's are named as within the session noise,
    with no ratio; if any does, no backend is called the fastest outright.
    """
    where = f"{scope_line(scope).split(',')[0]} at batch {cmp['scope']['batch']} on {cmp['scope']['device']['cpu_model']} ({cmp['scope']['device']['hostname']})"
    others = [e for e in cmp["entries"] if e["backend"] != cmp["fastest"]]
    tied = [e["backend"] for e in others if within_session_noise(e)]
    clear = [e for e in others if not within_session_noise(e)]
    ahead = ", ".join(f"{e['ratio_to_fastest']:.2f}x faster than {e['backend']}" for e in clear)
    if tied:
        line = f"fastest: no clear winner for {where}: {cmp['fastest']} and {', '.join(tied)} are within session noise of each other (session ranges overlap)"
        if clear:
            line += f"; {cmp['fastest']} is {ahead}"
        return line
    return f"fastest: {cmp['fastest']} for {where}" + (f"; {ahead}" if ahead else "")


def render_text(doc: dict) -> str:
    """The terminal view of an `edgedeploy.bench/1` document: every figure under its scope."""
    out = _header_lines(doc)
    for m in doc["results"]:
        out.extend(_backend_lines(m))
    out.extend(_not_timed_lines(doc))
    if doc["comparison"]["fastest"]:
        out.extend(_comparison_lines(doc["comparison"]))
    return "\n".join(out)


def _header_lines(doc: dict) -> list[str]:
    """What was timed where, and how: the model, the machine and the protocol."""
    model = doc["model"]
    dev = doc["device"]
    gov = ", ".join(dev.get("frequency_governors") or []) or "not readable"
    p = doc["request"]["protocol"]
    return [
        f"model     {model['name']} ({model['format']}) sha256 {model['sha256']}",
        f"device    {dev['cpu_model']}, {dev['cpu_cores']} cores ({dev['cpu_cores_usable']} usable), governor {gov}"
        + (f", GPUs: {', '.join(dev['accelerators'])}" if dev.get("accelerators") else ", no GPU")
        + f"; host {dev['hostname']}, Python {dev['python']}",
        f"protocol  {p['sessions']} sessions per backend, each a separate process: first inference timed apart, "
        f"{p['warmup']} warm-up runs, then >= {p['min_iterations']} iterations and >= {p['min_duration_s']:g} s; each column's unit is in its header",
    ]


def _backend_lines(m: dict) -> list[str]:
    """One backend's sessions as a table, then the figures across them (and a warning when they disagree)."""
    b = m["backend"]
    libs = ", ".join(f"{k} {v}" for k, v in b["libraries"].items() if v)
    kind = " [SIMULATOR]" if b["kind"] != "runtime" else ""
    out = ["", f"{m['scope']['backend']}: {b['label']}{kind} ({libs})", f"  scope: {scope_line(m['scope'])}"]
    columns = (("MEAN", "mean"), ("MEDIAN", "p50"), ("P90", "p90"), ("P99", "p99"), ("MIN", "min"), ("MAX", "max"))
    # One unit per column, named in its header (a MAX of 35 ms must not turn a 75 us median into 0.07).
    units = [unit_for([s["latency_us"][key] for s in m["sessions"]]) for _, key in columns]
    first_unit = unit_for([s["first_inference_us"] for s in m["sessions"]])
    rows = []
    for i, s in enumerate(m["sessions"], start=1):
        lat = s["latency_us"]
        cells = [in_unit(lat[key], unit) for (_, key), unit in zip(columns, units)]
        rows.append([i, s["pid"], s["iterations"], *cells, in_unit(s["first_inference_us"], first_unit), f"{s['throughput_items_per_s']:.0f}"])
    headers = ["SESSION", "PID", "ITER", *(f"{name} ({unit[0]})" for (name, _), unit in zip(columns, units)), f"FIRST ({first_unit[0]})", "ITEMS/S"]
    out.extend("  " + line for line in table(headers, rows, right_align=range(11)).splitlines())
    sm = m["summary"]
    out.append(
        f"  across sessions: median {with_unit(sm['median_us'])} (session medians {range_with_unit(sm['session_median_range_us'])}, spread {sm['spread_percent']:.1f}%), "
        f"mean {range_with_unit(sm['session_mean_range_us'])}, p99 {range_with_unit(sm['session_p99_range_us'])}, first inference {range_with_unit(sm['first_inference_range_us'])}"
        + (f", {sm['throughput_items_per_s']:.0f} items/s" if m["scope"]["batch"] > 1 else "")
    )
    if sm["spread_percent"] is not None and sm["spread_percent"] > SPREAD_WARNING_PERCENT:
        out.append(
            f"  warning: the session medians differ by {sm['spread_percent']:.0f}%: the machine was busy or this backend is unstable; "
            "trust the range, not the single figure, or rerun on a quiet machine"
        )
    return out


def _not_timed_lines(doc: dict) -> list[str]:
    """The backends skipped (with the reason) and those that failed (with the first lines of the error)."""
    out: list[str] = []
    if doc["skipped"]:
        out += ["", "skipped:"]
        out.extend(f"  {s['backend']}: {s['reason']}" for s in doc["skipped"])
    if doc["failed"]:
        out += ["", "failed:"]
        for f in doc["failed"]:
            lines = f["error"].splitlines()
            out.append(f"  {f['backend']}: {lines[0]}")
            out.extend("    " + line.strip() for line in lines[1:6])
    return out


def _comparison_lines(cmp: dict) -> list[str]:
    """The backends side by side, a ratio only where it is a finding, and the headline verdict."""
    scope = dict(cmp["scope"], backend="*")
    out = ["", f"comparison: {scope_line(scope)}"]
    unit = unit_for([v for e in cmp["entries"] for v in (e["median_us"], *e["session_median_range_us"])])
    fastest = next(e for e in cmp["entries"] if e["backend"] == cmp["fastest"])
    tied = any(within_session_noise(e) for e in cmp["entries"] if e is not fastest)
    rows = []
    for e in cmp["entries"]:
        if e is fastest:
            ratio_cell, note = "1.00", "lowest median" if tied else "fastest"
        elif within_session_noise(e):
            # The sessions disagree more than the backends do: the ratio is no finding.
            ratio_cell, note = "~", "within session noise (session ranges overlap)"
        else:
            ratio_cell, note = f"{e['ratio_to_fastest']:.2f}", f"{e['ratio_to_fastest']:.2f}x slower"
        lo, hi = e["session_median_range_us"]
        rows.append([e["backend"], in_unit(e["median_us"], unit), f"{in_unit(lo, unit)}-{in_unit(hi, unit)}", ratio_cell, note])
    out.extend("  " + line for line in table(["BACKEND", f"MEDIAN ({unit[0]})", f"SESSION MEDIANS ({unit[0]})", "X FASTEST", ""], rows, right_align=(1, 2, 3)).splitlines())
    out.append(headline(cmp, scope))
    out.append(
        "Ratios divide medians of session medians, between results whose scopes differ only in the backend "
        "(same model sha256, input shapes, batch, precision, threads and device)."
    )
    out.extend(f"  not compared: {e['backend']}: {e['reason']}" for e in cmp["excluded"])
    return out


COMMANDS = [bench_command]
