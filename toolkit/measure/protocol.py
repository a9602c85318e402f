"""The measurement protocol, shared by the host harness and every generated runner.

Standard library only, Python 3.7+: generated runners copy this file verbatim next to
themselves on the device (boards often have an old Python and no numpy).

One *session* is one process: warm-up runs, then timed runs until both a minimum number of
iterations and a minimum duration are reached. A *measurement* is at least three sessions in
separate processes; the host combines them (edgedeploy.measure). Each session prints exactly one
machine-readable line:

    EDGEDEPLOY {"schema": "edgedeploy.run/1", ...}

with per-session statistics in microseconds; everything else a runner prints is ignored.
"""

import json
import math
import os
import platform
import subprocess
import time

RESULT_PREFIX = "EDGEDEPLOY "
RUN_SCHEMA = "edgedeploy.run/1"
DEFAULT_WARMUP = 10
DEFAULT_MIN_ITERATIONS = 50
DEFAULT_MIN_DURATION_S = 1.0
# A runaway model must not hold a device forever: stop timing after this many iterations.
DEFAULT_MAX_ITERATIONS = 100000


def percentile(sorted_values, q):
    """Linear-interpolation percentile (numpy's default method) of an already sorted list."""
    if not sorted_values:
        return None
    if len(sorted_values) == 1:
        return float(sorted_values[0])
    pos = (len(sorted_values) - 1) * (q / 100.0)
    lo = int(math.floor(pos))
    hi = min(lo + 1, len(sorted_values) - 1)
    return float(sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo))


def summarize_us(samples_us):
    """min, mean, median (p50), p90, p99, max and standard deviation of latencies in microseconds."""
    values = sorted(float(v) for v in samples_us)
    n = len(values)
    if n == 0:
        return {"count": 0}
    mean = sum(values) / n
    var = sum((v - mean) ** 2 for v in values) / (n - 1) if n > 1 else 0.0
    return {
        "count": n,
        "min": values[0],
        "mean": mean,
        "p50": percentile(values, 50),
        "p90": percentile(values, 90),
        "p99": percentile(values, 99),
        "max": values[-1],
        "stdev": math.sqrt(var),
    }


def time_session(
    run_once,
    warmup=DEFAULT_WARMUP,
    min_iterations=DEFAULT_MIN_ITERATIONS,
    min_duration_s=DEFAULT_MIN_DURATION_S,
    max_iterations=DEFAULT_MAX_ITERATIONS,
    clock=time.perf_counter_ns,
):
    """Time `run_once()` in one session; returns first-run time, warm-up count and the samples.

    The first call is timed apart (it includes lazy initialisation and is often 10x slower);
    then `warmup` untimed calls; then timed calls until both `min_iterations` and
    `min_duration_s` are reached. Only the call itself sits between the two clock reads.
    """
    t0 = clock()
    run_once()
    first_us = (clock() - t0) / 1000.0
    for _ in range(warmup):
        run_once()
    samples = []
    append = samples.append
    deadline_ns = min_duration_s * 1e9
    started = clock()
    while True:
        t0 = clock()
        run_once()
        t1 = clock()
        append(t1 - t0)
        n = len(samples)
        if (n >= min_iterations and (t1 - started) >= deadline_ns) or n >= max_iterations:
            break
    return {
        "first_inference_us": first_us,
        "warmup": warmup,
        "iterations": len(samples),
        "duration_s": (clock() - started) / 1e9,
        "samples_us": [s / 1000.0 for s in samples],
    }


def session_result(timing, scope, batch=1, extra=None, keep_samples=True):
    """The result object of one session: scope, statistics, throughput, and optionally the samples."""
    stats = summarize_us(timing["samples_us"])
    result = {
        "schema": RUN_SCHEMA,
        "scope": scope,
        "first_inference_us": timing["first_inference_us"],
        "warmup": timing["warmup"],
        "iterations": timing["iterations"],
        "duration_s": timing["duration_s"],
        "latency_us": stats,
        "batch": batch,
        "throughput_items_per_s": (batch * 1e6 / stats["mean"]) if stats.get("mean") else None,
    }
    if keep_samples:
        result["samples_us"] = timing["samples_us"]
    if extra:
        result.update(extra)
    return result


def run_session(run_once, settings, scope, batch=1, extra=None):
    """Time one session with the settings of a request and return its result object.

    `settings` holds warmup, min_iterations, min_duration_s, max_iterations and keep_samples
    (any left out take the defaults). The result records this process's id, so the host can
    show that the sessions of a measurement really ran in different processes.
    """
    timing = time_session(
        run_once,
        warmup=int(settings.get("warmup", DEFAULT_WARMUP)),
        min_iterations=int(settings.get("min_iterations", DEFAULT_MIN_ITERATIONS)),
        min_duration_s=float(settings.get("min_duration_s", DEFAULT_MIN_DURATION_S)),
        max_iterations=int(settings.get("max_iterations", DEFAULT_MAX_ITERATIONS)),
    )
    process = describe_process()
    merged = {"process": process, "pid": process["pid"]}
    if extra:
        merged.update(extra)
    return session_result(timing, scope, batch=batch, extra=merged, keep_samples=bool(settings.get("keep_samples", True)))


def run_requested_session(run_once, request, extra):
    """One session of a backend worker's request (its settings, scope and batch), with `extra` merged in.

    Prints the result line (without the samples, which the host reads from the returned result)
    and returns the full result.
    """
    result = run_session(run_once, request["settings"], request["scope"], batch=int(request["batch"]), extra=extra)
    print(result_line({k: v for k, v in result.items() if k != "samples_us"}))
    return result


def _read_text(path):
    try:
        with open(path) as fh:
            return fh.read().strip()
    except (OSError, UnicodeDecodeError):
        return None


def cpu_model():
    """The CPU's marketing name from /proc/cpuinfo; on boards without one, the board's model."""
    text = _read_text("/proc/cpuinfo") or ""
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("model name", "Processor", "cpu model") and value.strip():
            return value.strip()
    board = _read_text("/sys/firmware/devicetree/base/model")
    if board:
        return board.replace("\x00", "").strip()
    return platform.processor() or platform.machine() or "unknown"


def frequency_governors():
    """The distinct cpufreq governors of the CPUs (e.g. ["performance"]); [] where not readable."""
    found = []
    base = "/sys/devices/system/cpu"
    try:
        names = sorted(os.listdir(base))
    except OSError:
        return found
    for name in names:
        if name.startswith("cpu") and name[3:].isdigit():
            governor = _read_text(os.path.join(base, name, "cpufreq", "scaling_governor"))
            if governor and governor not in found:
                found.append(governor)
    return found


def usable_cores():
    """CPUs this process may run on (its affinity), else all of them."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def accelerators(timeout_s=10):
    """Names of the NVIDIA GPUs `nvidia-smi` lists; [] where there is none (or no nvidia-smi)."""
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=timeout_s, check=False,
        ).stdout.decode(errors="replace")
    except (OSError, subprocess.SubprocessError):
        return []
    return [line.strip() for line in out.splitlines() if line.strip()]


def describe_host(include_accelerators=True):
    """The machine a measurement ran on: CPU model, cores, governors, OS and Python; GPUs if asked."""
    info = {
        "hostname": platform.node(),
        "cpu_model": cpu_model(),
        "cpu_cores": os.cpu_count(),
        "cpu_cores_usable": usable_cores(),
        "frequency_governors": frequency_governors(),
        "machine": platform.machine(),
        "os": platform.platform(),
        "python": platform.python_version(),
    }
    if include_accelerators:
        info["accelerators"] = accelerators()
    return info


def describe_process():
    """What one session process ran with: its id, the cores it may use, the governors at that moment."""
    return {
        "pid": os.getpid(),
        "cpu_cores_usable": usable_cores(),
        "frequency_governors": frequency_governors(),
        "python": platform.python_version(),
    }


def result_line(result):
    """The one line a runner prints: the prefix and compact JSON, no newlines inside."""
    return RESULT_PREFIX + json.dumps(result, separators=(",", ":"), sort_keys=True)


def parse_result_lines(text):
    """Every well-formed result object in a runner's output; garbage and partial lines are skipped."""
    results = []
    for line in text.splitlines():
        line = line.strip()
        start = line.find(RESULT_PREFIX)
        if start < 0:
            continue
        payload = line[start + len(RESULT_PREFIX):]
        try:
            obj = json.loads(payload)
        except (ValueError, RecursionError):
            # Not JSON, or nested deeper than the parser goes (a hostile line): skipped like garbage.
            continue
        if isinstance(obj, dict):
            results.append(obj)
    return results
