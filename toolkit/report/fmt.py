"""Number formats and scope sentences shared by the text, Markdown and HTML renderings.

Every figure a report shows is printed next to (or under a heading with) its scope: the model
hash, the input shapes and batch, the precision, the backend, and the device.
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Sequence


def us(value: float | None) -> str:
    """A latency in microseconds, with a unit that keeps 3-4 significant digits."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if value >= 1e6:
        return f"{value / 1e6:.3g} s"
    if value >= 1e4:
        return f"{value / 1e3:.1f} ms"
    if value >= 1e3:
        return f"{value / 1e3:.2f} ms"
    return f"{value:.1f} us"


# The unit of a column (or of a summary figure): the largest that keeps its biggest value
# under 10,000 of it. One unit per column, named in the header; never a suffix in a cell.
UNITS = (("us", 1.0), ("ms", 1e3), ("s", 1e6))


def unit_for(values_us) -> tuple[str, float]:
    """(name, microseconds per unit) for a column holding `values_us` (None ignored)."""
    top = max((v for v in values_us if v is not None), default=0.0)
    for name, scale in UNITS:
        if top < 10000 * scale:
            return name, scale
    return UNITS[-1]


def in_unit(value_us: float | None, unit: tuple[str, float]) -> str:
    """One cell: the value in `unit` (no suffix), three significant figures or whole numbers."""
    if value_us is None:
        return "-"
    value = value_us / unit[1]
    if value >= 100:
        return f"{value:.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def with_unit(value_us: float | None, unit: tuple[str, float] | None = None) -> str:
    """A figure in running text, with its unit written: "1869 us", "7.0 s"."""
    if value_us is None:
        return "-"
    unit = unit or unit_for([value_us])
    return f"{in_unit(value_us, unit)} {unit[0]}"


def range_with_unit(pair) -> str:
    """A range in running text, one unit for both ends: "1865-2020 us", "0.60-46.6 s"."""
    if not pair:
        return "-"
    unit = unit_for(pair)
    return f"{in_unit(pair[0], unit)}-{in_unit(pair[1], unit)} {unit[0]}"


def range_in(pair, unit: tuple[str, float]) -> str:
    """A range in a column's unit (no suffix): "17.5-17.6"."""
    if not pair:
        return "-"
    return f"{in_unit(pair[0], unit)}-{in_unit(pair[1], unit)}"


def latency_column_units(entries: list[dict]) -> dict[str, tuple[str, float]]:
    """The unit of each column of a latency table (the report's entries): one per column."""

    def values(key):
        out = []
        for e in entries:
            v = e.get(key)
            out.extend(v if isinstance(v, (list, tuple)) else [v])
        return out

    return {
        "median": unit_for(values("median_us")),
        "session_medians": unit_for(values("session_median_range_us")),
        "p99": unit_for(values("session_p99_range_us")),
        "first": unit_for(values("first_inference_range_us")),
    }


def us_range(pair: list | None) -> str:
    if not pair:
        return "-"
    return f"{us(pair[0])} .. {us(pair[1])}"


def pct(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{100 * value:.{digits}f}%"


def num(value, digits: int = 4) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return f"{value:.{digits}g}"
    return str(value)


def short_hash(sha: str | None) -> str:
    return (sha or "?")[:12]


def shapes(input_shapes: dict | None) -> str:
    if not input_shapes:
        return "?"
    return ", ".join(f"{name}={'x'.join(str(d) for d in dims)}" for name, dims in input_shapes.items())


def device_text(device: dict | None) -> str:
    if not device:
        return "device ?"
    parts = [f"device {device.get('name') or device.get('hostname') or '?'}"]
    facts = [f for f in (device.get("chip"), device.get("cpu_model"), f"{device['cpu_cores']} cores" if device.get("cpu_cores") else None) if f]
    if device.get("port") and device["port"] not in str(device.get("name")):
        facts.append(f"on {device['port']}")
    if device.get("hostname") and device.get("hostname") != device.get("name"):
        facts.insert(0, f"host {device['hostname']}")
    if facts:
        parts.append("(" + ", ".join(facts) + ")")
    return " ".join(parts)


def threads_text(threads) -> str:
    return "runtime default threads" if not threads else f"{threads} threads"


def latency_scope(scope: dict | None) -> str:
    """One line: everything a latency figure is a figure of."""
    if not scope:
        return "scope unknown"
    model = scope.get("model") or {}
    backend = scope.get("backend") or "?"
    if scope.get("backend_version"):
        backend += f" {scope['backend_version']}"
    deployed = scope.get("deployed_model") or {}
    bits = [
        f"model {model.get('name') or '?'} sha256 {short_hash(model.get('sha256'))}",
        f"inputs {shapes(scope.get('input_shapes'))}",
        f"batch {scope.get('batch', '?')}",
        f"{scope.get('precision') or '?'}",
        f"{backend} ({threads_text(scope.get('threads'))})" if "threads" in scope else backend,
    ]
    if deployed.get("file"):
        bits.append(f"runs {deployed['file']}")
    if isinstance(scope.get("inputs"), str):
        bits.append(f"inputs: {scope['inputs']}")
    firmware = scope.get("firmware")
    if isinstance(firmware, dict):
        facts = [f"{k.removesuffix('_version').replace('_', '-')} {v}" for k, v in firmware.items() if k.endswith("_version") and v]
        if firmware.get("cpu_freq_mhz"):
            facts.append(f"CPU {firmware['cpu_freq_mhz']} MHz")
        facts.append(f"flashed with {firmware['flashed_with']}" if firmware.get("flashed_with") else "flashed outside edgedeploy")
        bits.append("firmware: " + ", ".join(facts))
    bits.append(device_text(scope.get("device")))
    if scope.get("figures"):
        # A chip artifact run on this host (measure --device local): said first, in capitals.
        bits.insert(0, str(scope["figures"]).replace("host figures", "HOST FIGURES", 1))
    return "; ".join(bits)


def shared_scope(scope: dict | None) -> str:
    """The scope two compared figures share (model, inputs, batch, device)."""
    if not scope:
        return "scope unknown"
    model = scope.get("model") or {}
    return "; ".join(
        [
            f"model {model.get('name') or '?'} sha256 {short_hash(model.get('sha256'))}",
            f"inputs {shapes(scope.get('input_shapes'))}",
            f"batch {scope.get('batch', '?')}",
            device_text(scope.get("device")),
        ]
    )


def deployment_text(dep: dict | None) -> str:
    if not dep:
        return "?"
    deployed = (dep.get("deployed_model") or {}).get("file")
    return f"{dep.get('precision') or '?'} on {dep.get('backend_label') or dep.get('backend') or '?'}" + (f" ({deployed})" if deployed else "")


def bytes_text(n) -> str:
    """A size for people: 35264 -> "34.4 KiB (35264 B)"; None -> "-"."""
    if not isinstance(n, (int, float)) or isinstance(n, bool):
        return "-"
    for unit, scale in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if abs(n) >= scale:
            return f"{n / scale:.1f} {unit} ({int(n)} B)"
    return f"{int(n)} B"


# How the known keys of an accuracy scope read (edgedeploy.pipeline.build and .measure write them).
_SCOPE_WORDS = {
    "samples": "samples",
    "chip": "chip",
    "device": "on",
    "before": "before",
    "after": "after",
    "host_reference": "host reference",
    "differs_in": "differs in",
}


def scope_value(value) -> str:
    """A scope value as text, never a Python repr: dicts as k=v, shapes as 1x28x28."""
    if isinstance(value, dict):
        return ", ".join(f"{k}={scope_value(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        if all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            return "x".join(str(v) for v in value) or "scalar"
        return ", ".join(scope_value(v) for v in value)
    return str(value)


def accuracy_scope(section: dict, fallback: str) -> str:
    """The scope of an accuracy figure as one readable sentence."""
    scope = section.get("scope")
    if isinstance(scope, str):
        return scope
    if not isinstance(scope, dict):
        return fallback
    parts = []
    rest = dict(scope)
    if "model_sha256" in rest:
        parts.append(f"model sha256 {short_hash(rest.pop('model_sha256'))}")
    shapes_ = rest.pop("input_shapes", None)
    if isinstance(shapes_, dict):
        # Build-time scopes record each sample's shape (the evaluation set stacks samples on axis 0).
        parts.append("each sample " + ", ".join(f"{name} {scope_value(dims)}" for name, dims in shapes_.items()))
    before, after = rest.pop("precision_before", None), rest.pop("precision_after", None)
    if before or after:
        parts.append(f"{before or '?'} before, {after or '?'} after")
    for key, word in _SCOPE_WORDS.items():
        if key in rest:
            value = rest.pop(key)
            if key == "device" and value == "host":
                parts.append("both run on this host")
            elif key == "samples":
                parts.append(f"{value} samples")
            else:
                parts.append(f"{word} {scope_value(value)}")
    parts += [f"{k.replace('_', ' ')} {scope_value(v)}" for k, v in rest.items()]
    return "; ".join(parts)


def metric_value(metric: str, block: dict | None) -> float | None:
    if not block:
        return None
    key = {"top1": "top1", "auroc": "macro_auroc"}.get(metric)
    return block.get(key) if key else None


def metric_text(metric: str, value: float | None) -> str:
    if value is None:
        return "-"
    return pct(value, 2) if metric == "top1" else num(value)


def why_fidelity_only(section: dict) -> str:
    """Why an accuracy section has no task metric: the verification's own reason ('no labels', or
    labels that no output fits), without its closing ': fidelity only'."""
    reason = section.get("metric_output_reason") or "no labels"
    return reason[: -len(": fidelity only")] if reason.endswith(": fidelity only") else reason


METRIC_NAMES = {"top1": "top-1", "auroc": "macro-AUROC", "fidelity": "fidelity only"}


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]], right_align: Sequence[int] = (), width: int | None = None, keep: int = 1, what: str = "columns") -> str:
    """A plain aligned text table; wider than `width`, it is wrapped into blocks of columns.

    Each block repeats the first `keep` columns (the row labels) and holds as many of the
    others as fit in `width`; a note above each block says which columns it shows. A column
    that does not fit even alone gets a block of its own (the terminal wraps it). Cells are
    terminal-safe (a name's control characters are shown escaped).
    """
    from edgedeploy.escape import terminal_safe

    headers = [terminal_safe(str(h)) for h in headers]
    rows = [["" if c is None else terminal_safe(str(c)) for c in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))
    full = sum(widths) + 2 * (len(widths) - 1)
    if width is None or full <= width or len(headers) <= keep + 1:
        return _aligned(headers, rows, widths, right_align, range(len(headers)))
    fixed = list(range(keep))
    base = sum(widths[i] for i in fixed) + 2 * keep
    groups: list[list[int]] = [[]]
    used = base
    for i in range(keep, len(headers)):
        if groups[-1] and used + widths[i] > width:
            groups.append([])
            used = base
        groups[-1].append(i)
        used += widths[i] + 2
    blocks = []
    total = len(headers) - keep
    for group in groups:
        first, last = group[0] - keep + 1, group[-1] - keep + 1
        shown = f"{what} {first}-{last}" if last > first else f"{what.rstrip('s')} {first}"
        note = f"({shown} of {total}; the table is wider than {width} characters)"
        blocks.append(note + "\n" + _aligned(headers, rows, widths, right_align, fixed + group))
    return "\n\n".join(blocks)


def _aligned(headers: list[str], rows: list[list[str]], widths: list[int], right_align: Sequence[int], columns) -> str:
    columns = list(columns)

    def line(cells):
        out = []
        for i in columns:
            cell = cells[i] if i < len(cells) else ""
            out.append(cell.rjust(widths[i]) if i in right_align else cell.ljust(widths[i]))
        return "  ".join(out).rstrip()

    sep = "  ".join("-" * widths[i] for i in columns)
    return "\n".join([line(headers), sep] + [line(r) for r in rows])


def fit_lines(text: str, width: int | None) -> str:
    """Running text wrapped to `width` (continuation lines indented); lines that fit are left alone."""
    if width is None:
        return text
    import textwrap

    out = []
    for line in text.split("\n"):
        if len(line) <= width:
            out.append(line)
            continue
        indent = " " * (len(line) - len(line.lstrip()))
        out.extend(textwrap.wrap(line, width=width, subsequent_indent=indent + "  ", break_long_words=False, break_on_hyphens=False) or [line])
    return "\n".join(out)
