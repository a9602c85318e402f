"""The tables of docs/benchmarks.md from two (or more) GPU runs: each figure the union of the runs.

    python3 scripts/gpu/union_tables.py docs/results/gpu/2026-12-01-run1 docs/results/gpu/2026-12-01-run2

For each benchmark (cnn_bilstm-b1-fp32, densenet121-b8-fp16, densenet121-b8-fp32) and backend it
prints, per run, the median of the session medians and the ratio to that run's fastest backend
(or "noise" where the session ranges overlap the fastest's), then over all runs the union of the
session-median ranges, of the p99 ranges and of the first inferences. A backend measured in only
one run is marked so: it is not a published figure.

Where a run has no bench JSON for a benchmark (the call was cut short before bench wrote it),
the sessions are read from that run's progress log (log-*.txt), the lines bench prints after
each session: median, p90, iterations and first inference, no p99. Standard library only.
"""

from __future__ import annotations

import json
import re
import statistics
import sys
from pathlib import Path

BENCHES = ("cnn_bilstm-b1-fp32", "densenet121-b8-fp16", "densenet121-b8-fp32", "before-densenet121-b8-fp16")
UNIT_US = {"us": 1.0, "ms": 1e3, "s": 1e6}
SESSION_LINE = re.compile(
    r"\]\s+(?P<backend>\S+) session (?P<i>\d+)/(?P<n>\d+) \(pid (?P<pid>\d+)\): median (?P<median>[\d.]+) (?P<mu>us|ms|s), "
    r"p90 (?P<p90>[\d.]+) (?P<pu>us|ms|s) over (?P<iters>\d+) iterations; first (?P<first>[\d.]+) (?P<fu>us|ms|s)"
)


def from_json(path: Path) -> dict:
    """backend -> list of sessions {median, p99, first} (us) from an edgedeploy.bench/1 file."""
    doc = json.loads(path.read_text())
    found = {}
    for m in doc["results"]:
        found[m["scope"]["backend"]] = [
            {"median": s["latency_us"]["p50"], "p99": s["latency_us"]["p99"], "first": s["first_inference_us"]} for s in m["sessions"]
        ]
    return found


def from_log(run: Path, bench: str) -> dict:
    """The same from a progress log, for a bench whose JSON was never written (complete backends only)."""
    found: dict = {}
    for log in sorted(run.glob("log-*.txt")):
        inside = False
        for line in log.read_text(errors="replace").splitlines():
            if re.search(r"\] bench [\w.-]+: ", line) and "exit" not in line:
                inside = f"] bench {bench}: " in line
                continue
            match = SESSION_LINE.search(line) if inside else None
            if match:
                found.setdefault(match["backend"], []).append({
                    "median": float(match["median"]) * UNIT_US[match["mu"]],
                    "p99": None,
                    "first": float(match["first"]) * UNIT_US[match["fu"]],
                    "n": int(match["n"]),
                })
    return {b: s for b, s in found.items() if len(s) == s[0]["n"]}


def load(run: Path, bench: str) -> tuple[dict, str]:
    path = run / f"{bench}.json"
    if path.exists():
        return from_json(path), "json"
    return from_log(run, bench), "log"


def fmt(us: float | None, unit: str) -> str:
    if us is None:
        return "-"
    v = us / UNIT_US[unit]
    return f"{v:.0f}" if v >= 100 else f"{v:.1f}" if v >= 10 else f"{v:.2f}"


def table(bench: str, runs: list[Path]) -> str:
    loaded = [load(run, bench) for run in runs]
    backends: list[str] = []
    for found, _ in loaded:
        backends += [b for b in found if b not in backends]
    if not backends:
        return f"{bench}: no results\n"
    all_medians = [s["median"] for found, _ in loaded for ss in found.values() for s in ss]
    unit = "ms" if max(all_medians) >= 10000 else "us"
    per_run = []
    for found, _ in loaded:
        medians = {b: statistics.median([s["median"] for s in ss]) for b, ss in found.items()}
        ranges = {b: (min(s["median"] for s in ss), max(s["median"] for s in ss)) for b, ss in found.items()}
        fastest = min(medians, key=medians.get) if medians else None
        per_run.append((medians, ranges, fastest))
    head = ["backend"] + [f"median run {i + 1} ({unit})" for i in range(len(runs))]
    head += [f"session medians, all runs ({unit})", "p99, all runs", "first inference, all runs"]
    head += [f"x fastest, run {i + 1}" for i in range(len(runs))]
    lines = [f"{bench} (sources: " + ", ".join(f"run {i + 1} {src}" for i, (_, src) in enumerate(loaded)) + ")", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    order = sorted(backends, key=lambda b: statistics.median([m[b] for m, _, _ in per_run if b in m]))
    for b in order:
        sessions = [s for found, _ in loaded for s in found.get(b, [])]
        runs_with = sum(1 for found, _ in loaded if b in found)
        lo, hi = min(s["median"] for s in sessions), max(s["median"] for s in sessions)
        p99s = [s["p99"] for s in sessions if s["p99"] is not None]
        p99_complete = len(p99s) == len(sessions)
        p99 = (f"{fmt(min(p99s), unit)} - {fmt(max(p99s), unit)}" + ("" if p99_complete else " (JSON runs only)")) if p99s else "-"
        firsts = [s["first"] for s in sessions]
        first_unit = "s" if max(firsts) >= 1e6 else "ms"
        row = [f"{b}" + ("" if runs_with == len(runs) else f" (run {next(i + 1 for i, (f, _) in enumerate(loaded) if b in f)} only)")]
        for medians, _, _ in per_run:
            row.append(fmt(medians.get(b), unit))
        row += [f"{fmt(lo, unit)} - {fmt(hi, unit)}", p99, f"{fmt(min(firsts), first_unit)} - {fmt(max(firsts), first_unit)} {first_unit}"]
        for medians, ranges, fastest in per_run:
            if b not in medians:
                row.append("-")
            elif b == fastest:
                row.append("1.00")
            else:
                flo, fhi = ranges[fastest]
                blo, bhi = ranges[b]
                row.append("noise" if blo <= fhi and flo <= bhi else f"{medians[b] / medians[fastest]:.2f}")
        lines.append("| " + " | ".join(row) + " |")
    for i, (medians, ranges, _) in enumerate(per_run):
        spreads = ", ".join(f"{b} {100 * (ranges[b][1] - ranges[b][0]) / ranges[b][0]:.0f}%" for b in order if b in ranges)
        lines.append(f"\nrun {i + 1} session spreads: {spreads}")
    return "\n".join(lines) + "\n"


def main() -> None:
    runs = [Path(p) for p in sys.argv[1:]]
    if len(runs) < 1:
        raise SystemExit(__doc__)
    for bench in BENCHES:
        print(table(bench, runs))


if __name__ == "__main__":
    main()
