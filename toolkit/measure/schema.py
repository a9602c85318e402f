"""The versioned JSON of latency figures: scopes, measurements and bench results.

Everything `edgedeploy bench` (and `edgedeploy measure`, and the reports) says about latency is
built from three objects. Their field names are a contract: other parts of edgedeploy and users'
scripts read them. A change that removes or renames a field, or changes a unit, bumps the
version in the schema name; adding a field does not.

**Scope** (`make_scope`): what a figure is a figure *of*. Two figures may be divided only when
their scopes differ in exactly one field, and never in `device` (`ratio`).

    {
      "model":        {"name": "mnist_cnn", "sha256": "<64 hex>", "format": "onnx" | "pt2"},
      "input_shapes": {"input": [1, 1, 28, 28]},        # every input, batch axis included
      "batch":        1,                                 # items per inference (axis 0)
      "precision":    "fp32" | "fp16" | "int8" | ...,    # the arithmetic the backend ran
      "backend":      "ort-cpu",                         # see edgedeploy.measure.backends
      "threads":      2,                                 # CPU threads the backend was given
      "device":       {"hostname": "...", "cpu_model": "...", "cpu_cores": 2,
                       "accelerators": ["NVIDIA H200"]}  # the machine, not the unit
    }

The execution unit (CPU or CUDA) is part of the backend name (`torch-eager-cuda`), so the
backends of one machine share a device and can be compared; figures from two machines never are.

**Measurement** (`LATENCY_SCHEMA`, made by edgedeploy.measure.harness): one scope measured in
`sessions` independent processes (at least three), each with warm-up, then timed iterations
until both a minimum count and a minimum duration are reached. All times in microseconds.

    {
      "schema": "edgedeploy.latency/1",
      "scope": {...},
      "backend": {"name", "label", "kind": "runtime" | "simulator", "unit": "cpu" | "cuda",
                  "libraries": {"onnxruntime": "1.32.0", ...}, "detail": {...}},
      "protocol": {"sessions", "warmup", "min_iterations", "min_duration_s", "max_iterations"},
      "sessions": [   # one per process, in the order they ran
        {"pid", "first_inference_us", "warmup", "iterations", "duration_s",
         "latency_us": {"count", "min", "mean", "p50", "p90", "p99", "max", "stdev"},
         "batch", "throughput_items_per_s", "process": {...}, "samples_us": [...] (optional)}
      ],
      "summary": {
        "sessions": 3,
        "median_us": <median of the session medians>,          # the figure ratios use
        "session_median_range_us": [min, max],                 # the range across sessions
        "session_mean_range_us", "session_p90_range_us", "session_p99_range_us",
        "min_us", "max_us",                                    # over every timed iteration
        "spread_percent": 100 * (max - min) / min of the session medians,
        "first_inference_range_us": [min, max],                # first call, timed apart
        "throughput_items_per_s": median over sessions of batch * 1e6 / session mean,
        "throughput_range_items_per_s": [min, max] of the same over sessions
      },
      "environment": {describe_host() of the machine, "threads", "libraries"}
    }

**Bench result** (`BENCH_SCHEMA`, `edgedeploy bench --format json`): the measurements of every
backend that ran, the ones skipped and failed (with why), and the comparison.

    {
      "schema": "edgedeploy.bench/1",
      "edgedeploy_version", "created_at",
      "model": {"name", "sha256", "format", "path"},
      "request": {the options: backends, batch, input_shapes, precision, threads, protocol},
      "device": {...},
      "results": [measurement, ...],
      "skipped": [{"backend", "reason"}],
      "failed":  [{"backend", "error"}],
      "comparison": {
        "basis": "median of session medians",
        "differs_only_in": "backend",
        "scope": {the shared scope, backend left out},
        "fastest": "ort-cpu" | null,
        "entries": [{"backend", "median_us", "session_median_range_us",
                     "ratio_to_fastest", "ranges_overlap_fastest"}],
        "excluded": [{"backend", "reason"}]   # e.g. simulators, other precision
      }
    }
"""

from __future__ import annotations

from typing import Any

from edgedeploy.errors import EdgedeployError

LATENCY_SCHEMA = "edgedeploy.latency/1"
BENCH_SCHEMA = "edgedeploy.bench/1"

SCOPE_FIELDS = ("model", "input_shapes", "batch", "precision", "backend", "threads", "device")
# The parts of a device description that identify the machine (the rest, like governors, is
# environment: recorded, but a change of governor does not make it another machine).
DEVICE_IDENTITY = ("hostname", "cpu_model", "cpu_cores", "accelerators")


class ScopeMismatch(EdgedeployError):
    """Two figures were to be divided whose scopes differ in more than one thing, or in the device."""


def make_scope(model: dict, input_shapes: dict, batch: int, precision: str, backend: str, threads: int, device: dict) -> dict:
    """A scope object (see the module docstring); `device` is reduced to the machine's identity."""
    return {
        "model": {"name": model["name"], "sha256": model["sha256"], "format": model.get("format", "onnx")},
        "input_shapes": {name: [int(d) for d in dims] for name, dims in input_shapes.items()},
        "batch": int(batch),
        "precision": precision,
        "backend": backend,
        "threads": int(threads),
        "device": device_identity(device),
    }


def device_identity(device: dict, keys: tuple[str, ...] = DEVICE_IDENTITY) -> dict:
    return {key: device.get(key) for key in keys}


def _field_value(scope: dict, field: str, device_keys: tuple[str, ...] = DEVICE_IDENTITY) -> Any:
    value = scope.get(field)
    if field == "model" and isinstance(value, dict):
        return value.get("sha256")  # the content, not the file name, identifies the model
    if field == "device" and isinstance(value, dict):
        return device_identity(value, device_keys)
    return value


def scope_differences(a: dict, b: dict, fields: tuple[str, ...] = SCOPE_FIELDS, device_keys: tuple[str, ...] = DEVICE_IDENTITY) -> list[str]:
    """The scope fields in which two scopes differ, in `fields` order (by default SCOPE_FIELDS).

    A model is identified by its hash, a device by `device_keys` of its description.
    """
    return [field for field in fields if _field_value(a, field, device_keys) != _field_value(b, field, device_keys)]


def _difference_text(a: dict, b: dict, field: str, device_keys: tuple[str, ...]) -> str:
    va, vb = _field_value(a, field, device_keys), _field_value(b, field, device_keys)
    if all(v is None or isinstance(v, (str, int, float)) for v in (va, vb)):
        return f"{field} ({va} vs {vb})"
    return field


def ratio_refusal(
    a: dict,
    b: dict,
    varying: str | tuple[str, ...],
    fields: tuple[str, ...] = SCOPE_FIELDS,
    device_keys: tuple[str, ...] = DEVICE_IDENTITY,
    varying_text: str | None = None,
) -> str | None:
    """Why the figures of scopes `a` and `b` may not be divided, or None when they may.

    The one rule of every ratio edgedeploy prints (bench, measure, reports): the scopes differ
    in at most ONE field, that field is one of `varying`, and it is never the device. The
    reason names every field that differs, with both values where they are short.
    """
    varying = (varying,) if isinstance(varying, str) else tuple(varying)
    varying_text = varying_text or " or ".join(varying)
    if "device" in varying:
        return "figures from different devices are never divided; compare them side by side instead"
    diffs = scope_differences(a, b, fields, device_keys)
    if "device" in diffs:
        return "the figures come from different devices; figures from different devices are never divided"
    if len(diffs) <= 1 and all(d in varying for d in diffs):
        return None
    listed = [_difference_text(a, b, d, device_keys) for d in diffs]
    listed_text = listed[0] if len(listed) == 1 else ", ".join(listed[:-1]) + " and " + listed[-1]
    if len(diffs) == 1:
        return f"the figures differ in {listed_text}, which is not {varying_text}; a ratio is only computed between figures that differ in one thing"
    return (
        f"the figures differ in {listed_text}; a ratio is only computed between figures that differ in one thing "
        f"({varying_text}), so both are shown with their scopes instead"
    )


def ratio(slower: dict, faster: dict, varying: str) -> float:
    """How many times `slower`'s median exceeds `faster`'s; both are measurements.

    Allowed only when the scopes differ in `varying` alone (or not at all) and `varying` is
    not the device (ratio_refusal); otherwise ScopeMismatch says what else differs.
    """
    refusal = ratio_refusal(slower["scope"], faster["scope"], varying)
    if refusal:
        names = (slower["scope"].get("backend"), faster["scope"].get("backend"))
        raise ScopeMismatch(f"Cannot divide the figures of {names[0]} and {names[1]}: {refusal}.")
    return slower["summary"]["median_us"] / faster["summary"]["median_us"]


def _require(obj: dict, keys: tuple[str, ...], where: str) -> None:
    if not isinstance(obj, dict):
        raise ValueError(f"{where}: expected an object")
    missing = [k for k in keys if k not in obj]
    if missing:
        raise ValueError(f"{where}: missing {', '.join(missing)}")


def validate_scope(scope: dict, where: str = "scope") -> None:
    _require(scope, SCOPE_FIELDS, where)
    _require(scope["model"], ("name", "sha256", "format"), f"{where}.model")
    _require(scope["device"], DEVICE_IDENTITY, f"{where}.device")
    if not isinstance(scope["batch"], int) or scope["batch"] < 1:
        raise ValueError(f"{where}.batch: a positive whole number is required")


def validate_measurement(m: dict, where: str = "measurement") -> None:
    """Raise ValueError naming the first field that is missing or malformed."""
    _require(m, ("schema", "scope", "backend", "protocol", "sessions", "summary", "environment"), where)
    if m["schema"] != LATENCY_SCHEMA:
        raise ValueError(f"{where}.schema: {m['schema']!r} is not {LATENCY_SCHEMA}")
    validate_scope(m["scope"], f"{where}.scope")
    _require(m["backend"], ("name", "label", "kind", "unit", "libraries"), f"{where}.backend")
    for i, s in enumerate(m["sessions"]):
        _require(s, ("pid", "first_inference_us", "iterations", "latency_us", "throughput_items_per_s"), f"{where}.sessions[{i}]")
        _require(s["latency_us"], ("count", "min", "mean", "p50", "p90", "p99", "max"), f"{where}.sessions[{i}].latency_us")
    _require(
        m["summary"],
        ("sessions", "median_us", "session_median_range_us", "session_mean_range_us", "spread_percent", "first_inference_range_us", "throughput_items_per_s"),
        f"{where}.summary",
    )


def validate_bench(doc: dict) -> None:
    """Raise ValueError naming the first field of a bench result that is missing or malformed."""
    _require(doc, ("schema", "edgedeploy_version", "model", "request", "device", "results", "skipped", "failed", "comparison"), "bench")
    if doc["schema"] != BENCH_SCHEMA:
        raise ValueError(f"bench.schema: {doc['schema']!r} is not {BENCH_SCHEMA}")
    for i, m in enumerate(doc["results"]):
        validate_measurement(m, f"bench.results[{i}]")
    for i, s in enumerate(doc["skipped"]):
        _require(s, ("backend", "reason"), f"bench.skipped[{i}]")
    for i, f in enumerate(doc["failed"]):
        _require(f, ("backend", "error"), f"bench.failed[{i}]")
    _require(doc["comparison"], ("basis", "differs_only_in", "fastest", "entries", "excluded"), "bench.comparison")
