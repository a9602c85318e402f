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


def accuracy_scope(section: dict, fallback: str) -> str:
    scope = section.get("scope")
    if isinstance(scope, dict):
        parts = [f"{k.replace('_', ' ')}: {v}" for k, v in scope.items()]
        return "; ".join(parts)
    if isinstance(scope, str):
        return scope
    return fallback


def metric_value(metric: str, block: dict | None) -> float | None:
    if not block:
        return None
    key = {"top1": "top1", "auroc": "macro_auroc"}.get(metric)
    return block.get(key) if key else None


def metric_text(metric: str, value: float | None) -> str:
    if value is None:
        return "-"
    return pct(value, 2) if metric == "top1" else num(value)


METRIC_NAMES = {"top1": "top-1", "auroc": "macro-AUROC", "fidelity": "fidelity only"}


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]], right_align: Sequence[int] = ()) -> str:
    """A plain aligned text table; cells are terminal-safe (a name's control characters are shown escaped)."""
    from edgedeploy.escape import terminal_safe

    rows = [["" if c is None else terminal_safe(str(c)) for c in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))

    def line(cells):
        out = []
        for i, cell in enumerate(cells):
            out.append(cell.rjust(widths[i]) if i in right_align else cell.ljust(widths[i]))
        return "  ".join(out).rstrip()

    sep = "  ".join("-" * w for w in widths)
    return "\n".join([line(headers), sep] + [line(r) for r in rows])
