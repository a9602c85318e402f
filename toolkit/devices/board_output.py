"""What a board sends back is untrusted input: escaped before it reaches a terminal, checked before it is recorded.

A board's console (or a runner's output on a device) can hold anything: line noise, a firmware
of another model, a firmware that lies, or bytes chosen to drive the user's terminal (ANSI
escape sequences that move the cursor, retitle the window or hide text). Two rules, applied at
the boundary where board text enters edgedeploy:

- `terminal_safe(text)`: every control character (C0, DEL, C1, and the Unicode bidirectional
  overrides) becomes a visible escape (`\\x1b`, `\\u202e`) before the text is printed; tabs stay.
- `check_result(obj, expected_model_sha256)`: a result line is taken as this artifact's figures
  only when it has the protocol's fields with the right types and ranges, and names this
  artifact's model; otherwise the one-sentence reason it was refused (see RESULT_RULES).
"""

from __future__ import annotations

import math
import re

# A console line longer than this is cut for display (the record keeps what the reader keeps).
MAX_SHOWN_CHARS = 2000


def terminal_safe(text: str, max_chars: int = MAX_SHOWN_CHARS) -> str:
    """`text` with control characters made visible (edgedeploy.escape, the one escaping module), cut to `max_chars`."""
    from edgedeploy.escape import terminal_safe as escape_for_terminal

    if not isinstance(text, str):
        text = str(text)
    cut = len(text) > max_chars
    shown = escape_for_terminal(text[:max_chars] if cut else text)
    return shown + (f" ... [{len(text)} characters, cut]" if cut else "")


# -- result lines -----------------------------------------------------------------------------

# Latency statistics a session must carry, in microseconds, and the ones it may.
REQUIRED_LATENCY_STATS = ("min", "mean", "p50", "p90", "p99", "max")
OPTIONAL_LATENCY_STATS = ("stdev", "count")
# A latency above this (one hour per inference) or an iteration count above this is not a
# measurement but a corrupted or lying line.
MAX_LATENCY_US = 3.6e9
MAX_ITERATIONS = 10_000_000
MAX_SESSIONS = 1000
# A model hash as a line may carry it: hex, a prefix of 8 digits at least (with an artifact to
# compare with, it must then equal the artifact's full hash).
SHA_PREFIX_HEX = re.compile(r"^[0-9a-f]{8,64}$")


def _number(value) -> bool:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    if isinstance(value, int):
        return abs(value) <= 1e300  # math.isfinite() cannot even convert a 400-digit integer
    return math.isfinite(value)


def check_result(obj, expected_model_sha256: str | None) -> str | None:
    """None if `obj` is a result line this artifact may record; else why not (a clause, lower case).

    The rules (RESULT_RULES in the docs): an object with schema edgedeploy.run/1; `iterations` a
    whole number from 1 to MAX_ITERATIONS; `latency_us` an object whose min/mean/p50/p90/p99/max
    are finite numbers from 0 to MAX_LATENCY_US with min <= p50 <= p90 <= p99 <= max and
    min <= mean <= max; `first_inference_us`, `warmup`, `session`, `sessions` and `duration_s`,
    when present, of the right type and range; `scope.model_sha256` present, 64 hex digits, and
    equal to the artifact's model hash (a line without it belongs to no known model; with no
    artifact to compare with, a hex prefix of 8 to 64 digits); when the
    firmware also reports the hash the loaded model carries (`espdl_model_sha256`), that too.
    """
    from edgedeploy.measure.protocol import RUN_SCHEMA

    if not isinstance(obj, dict):
        return "it is not a JSON object"
    if obj.get("schema") != RUN_SCHEMA:
        return f"its schema is {_shown(obj.get('schema'))}, not {RUN_SCHEMA}"
    iterations = obj.get("iterations")
    if not isinstance(iterations, int) or isinstance(iterations, bool) or not 1 <= iterations <= MAX_ITERATIONS:
        return f"iterations is {_shown(iterations)}, not a whole number from 1 to {MAX_ITERATIONS}"
    latency = obj.get("latency_us")
    if not isinstance(latency, dict):
        return f"latency_us is {_shown(latency)}, not an object of statistics"
    for stat in REQUIRED_LATENCY_STATS:
        value = latency.get(stat)
        if not _number(value) or not 0 <= value <= MAX_LATENCY_US:
            return f"latency_us.{stat} is {_shown(value)}, not a number of microseconds from 0 to {MAX_LATENCY_US:.0f}"
    for stat in OPTIONAL_LATENCY_STATS:
        if stat in latency and latency[stat] is not None and (not _number(latency[stat]) or latency[stat] < 0):
            return f"latency_us.{stat} is {_shown(latency[stat])}, not a non-negative number"
    ordered = [latency[s] for s in ("min", "p50", "p90", "p99", "max")]
    if any(a > b for a, b in zip(ordered, ordered[1:])) or not latency["min"] <= latency["mean"] <= latency["max"]:
        return "its latency statistics are out of order (min <= p50 <= p90 <= p99 <= max and min <= mean <= max must hold)"
    if "first_inference_us" in obj and obj["first_inference_us"] is not None:
        value = obj["first_inference_us"]
        if not _number(value) or not 0 <= value <= MAX_LATENCY_US:
            return f"first_inference_us is {_shown(value)}, not a number of microseconds"
    for key, upper in (("warmup", MAX_ITERATIONS), ("session", MAX_SESSIONS), ("sessions", MAX_SESSIONS)):
        if key in obj and obj[key] is not None:
            value = obj[key]
            if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= upper:
                return f"{key} is {_shown(value)}, not a whole number from 0 to {upper}"
    if "duration_s" in obj and obj["duration_s"] is not None and (not _number(obj["duration_s"]) or obj["duration_s"] < 0):
        return f"duration_s is {_shown(obj['duration_s'])}, not a non-negative number"
    scope = obj.get("scope")
    if not isinstance(scope, dict):
        return "it has no scope object, so it names no model"
    sha = scope.get("model_sha256")
    if sha is None:
        return "it names no model (scope.model_sha256 is missing), so it cannot be this artifact's"
    if not isinstance(sha, str) or not SHA_PREFIX_HEX.match(sha):
        return f"scope.model_sha256 is {_shown(sha)}, not a sha256 (64 hex digits)"
    if expected_model_sha256 and sha != expected_model_sha256:
        return f"it is for another model (sha256 {sha[:16]}...), not this artifact's ({expected_model_sha256[:16]}...)"
    # The hash the model the board loaded carries, where its firmware reports one (`<runtime>_model_sha256`).
    loaded = next((value for key, value in scope.items() if key.endswith("_model_sha256")), None)
    if loaded not in (None, "") and (not isinstance(loaded, str) or (expected_model_sha256 and loaded != expected_model_sha256)):
        return f"the model the board loaded is another one (sha256 {_shown(loaded)[:18]}...), not this artifact's"
    return None


def _shown(value) -> str:
    text = repr(value)
    return terminal_safe(text if len(text) <= 40 else text[:37] + "...")
