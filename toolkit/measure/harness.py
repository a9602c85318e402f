"""The latency harness on the host: independent sessions in separate processes, combined.

A *session* is one subprocess, started with the backend's own interpreter, that loads the model,
times it with protocol.time_session (first call apart, warm-up, then timed iterations until a
minimum count and a minimum duration are both reached) and returns its `edgedeploy.run/1`
result. A *measurement* is `sessions` such processes run one after another (never side by side:
they would compete for the same cores) and summarised across sessions (schema.py).

Sessions go through the toolchain worker protocol (edgedeploy.toolchains.worker), so a crash,
a time-out or an exception in the backend becomes one clear error quoting the session log.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

from edgedeploy.errors import OptionError, WorkerFailed
from edgedeploy.measure import protocol
from edgedeploy.measure.schema import LATENCY_SCHEMA
from edgedeploy.progress import StepStarted  # noqa: F401 - re-exported: the line that opens a session

PROTOCOL_FILE = Path(protocol.__file__)
MIN_SESSIONS = 3


@dataclass(frozen=True)
class SessionPlan:
    """How each session times the model, and how many sessions a measurement has."""

    sessions: int = MIN_SESSIONS
    warmup: int = protocol.DEFAULT_WARMUP
    min_iterations: int = protocol.DEFAULT_MIN_ITERATIONS
    min_duration_s: float = protocol.DEFAULT_MIN_DURATION_S
    max_iterations: int = protocol.DEFAULT_MAX_ITERATIONS
    keep_samples: bool = True

    # Fields that say how the sessions are driven, not what each one did: left out of the
    # measurement's `protocol` (to_dict).
    NOT_PROTOCOL = ("keep_samples",)

    def check(self) -> "SessionPlan":
        if self.sessions < MIN_SESSIONS:
            raise OptionError(f"A measurement needs at least {MIN_SESSIONS} independent sessions, not {self.sessions}.")
        if self.warmup < 0 or self.min_iterations < 1 or self.min_duration_s < 0:
            raise OptionError("Warm-up must be >= 0, the minimum iterations >= 1 and the minimum duration >= 0.")
        if self.max_iterations < self.min_iterations:
            raise OptionError("The maximum number of iterations is below the minimum.")
        return self

    def settings(self) -> dict:
        """What a session reads from its request (protocol.run_session)."""
        return {k: v for k, v in asdict(self).items() if k in ("warmup", "min_iterations", "min_duration_s", "max_iterations", "keep_samples")}

    def to_dict(self) -> dict:
        """The `protocol` part of a measurement: what every session did."""
        return {k: v for k, v in asdict(self).items() if k not in self.NOT_PROTOCOL}


@dataclass(frozen=True)
class SessionSettings(SessionPlan):
    """A SessionPlan for `edgedeploy measure`: plus how long one session may take on a device."""

    timeout_s: float = 600.0

    NOT_PROTOCOL = ("keep_samples", "timeout_s")

    def check(self) -> "SessionSettings":
        super().check()
        if self.timeout_s <= 0:
            raise OptionError("The time-out of a session must be more than 0 seconds.")
        return self

    def protocol(self) -> dict:
        return self.to_dict()


def _range(values: list[float]) -> list[float]:
    return [min(values), max(values)]


def summarize_sessions(sessions: list[dict]) -> dict:
    """The across-session summary of `edgedeploy.latency/1` from per-session results.

    Used by `bench` (host sessions), `measure` (device sessions) and the serial board runs alike.
    The headline figure is the median of the session medians: robust against one disturbed
    session, and what every ratio divides. The ranges show how far the sessions disagree.
    """
    if not sessions:
        raise ValueError("no sessions to summarise")
    medians = [s["latency_us"]["p50"] for s in sessions]
    means = [s["latency_us"]["mean"] for s in sessions]
    median_us = float(statistics.median(medians))
    batch = sessions[0].get("batch", 1)
    throughputs = [s["throughput_items_per_s"] for s in sessions if s.get("throughput_items_per_s")]
    return {
        "sessions": len(sessions),
        "median_us": median_us,
        "session_median_range_us": _range(medians),
        "session_mean_range_us": _range(means),
        "session_p90_range_us": _range([s["latency_us"]["p90"] for s in sessions]),
        "session_p99_range_us": _range([s["latency_us"]["p99"] for s in sessions]),
        "min_us": min(s["latency_us"]["min"] for s in sessions),
        "max_us": max(s["latency_us"]["max"] for s in sessions),
        "spread_percent": 100.0 * (max(medians) - min(medians)) / min(medians) if min(medians) > 0 else None,
        # Boards may not time their first inference apart (the field is optional in a result line).
        "first_inference_range_us": _range(firsts) if (firsts := [s["first_inference_us"] for s in sessions if s.get("first_inference_us") is not None]) else None,
        "iterations_per_session": [s["iterations"] for s in sessions],
        "batch": batch,
        # Throughput is items over time, so it comes from each session's mean (protocol.py):
        # the median over sessions, and the range.
        "throughput_items_per_s": float(statistics.median(throughputs)) if throughputs else None,
        "throughput_range_items_per_s": _range(throughputs) if throughputs else None,
    }


def make_measurement(scope: dict, backend: dict, plan: SessionPlan | dict, sessions: list[dict], environment: dict) -> dict:
    """One `edgedeploy.latency/1` object (schema.py); `plan` gives its `protocol` (a SessionPlan or the dict itself)."""
    return {
        "schema": LATENCY_SCHEMA,
        "scope": scope,
        "backend": backend,
        "protocol": plan.to_dict() if isinstance(plan, SessionPlan) else dict(plan),
        "sessions": sessions,
        "summary": summarize_sessions(sessions),
        "environment": environment,
    }


def _with_unit(value_us: float) -> str:
    """A time in the unit that suits it, the unit always written: 17.0 us, 1.87 ms, 31.8 s."""
    for unit, scale in (("s", 1e6), ("ms", 1e3)):
        if value_us >= scale:
            return f"{value_us / scale:.3g} {unit}"
    return f"{value_us:.1f} us"


def run_sessions(
    python: Path,
    worker_file: Path,
    request: dict,
    plan: SessionPlan,
    workdir: Path,
    label: str,
    timeout_s: float,
    echo: Callable[[str], None] = lambda line: None,
) -> list[dict]:
    """Run `plan.sessions` sessions of one backend, each in a fresh process; their results in order.

    The worker gets the request plus `protocol_path` (the stdlib protocol it loads by path, as a
    generated runner does), `settings` and `session_index`, and returns a protocol result.
    """
    from edgedeploy.toolchains.executor import Executor

    results = []
    for index in range(plan.sessions):
        session_dir = workdir / f"session{index + 1}"
        req = dict(request, protocol_path=str(PROTOCOL_FILE), settings=plan.settings(), session_index=index)
        echo(StepStarted(f"  {label} session {index + 1}/{plan.sessions}: running", log_path=workdir / "sessions.log"))
        started = time.monotonic()
        result = Executor(workdir / "sessions.log", timeout_s).run_worker(python, worker_file, req, session_dir, label=f"{label} session")
        if result.get("schema") != protocol.RUN_SCHEMA or "latency_us" not in result or "pid" not in result:
            raise WorkerFailed(f"The {label} session returned no {protocol.RUN_SCHEMA} result; see {workdir / 'sessions.log'}.")
        lat = result["latency_us"]
        echo(
            f"  {label} session {index + 1}/{plan.sessions} (pid {result['pid']}): median {_with_unit(lat['p50'])}, "
            f"p90 {_with_unit(lat['p90'])} over {result['iterations']} iterations; first {_with_unit(result['first_inference_us'])}; "
            f"session took {time.monotonic() - started:.1f} s"
        )
        results.append(result)
    pids = [r["pid"] for r in results]
    if len(set(pids)) != len(pids):
        raise WorkerFailed(f"The {label} sessions did not run in separate processes (pids {pids}).")
    return results
