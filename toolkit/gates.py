"""CI gates: `--fail-on KEY=VALUE` thresholds on what build and measure found.

    edgedeploy build model.onnx --target rk3588 --fail-on accuracy-drop=0.5 --fail-on snr=25
    edgedeploy measure ARTIFACT --device rock5b --fail-on p99=8ms
    edgedeploy build --target imx93 --target esp32s3 --fail-on imx93:ram=256KiB

A gate is `[CHIP:]KEY=VALUE`; with CHIP it applies to that chip only. Each gate reads one
figure of the JSON report (`FIGURES` says where) and compares it with its threshold. A gate
whose figure is missing fails too, and says why (the host check could not run, the target does
not report that figure, the project was only generated): a CI gate that cannot be checked must
not pass. The results are data (`GateResult.to_dict`), written into the build result and the
measurement record; the CLI turns a failure into exit status 7 (edgedeploy.errors.EXIT_CODES).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Callable

from edgedeploy.errors import OptionError

GATE_SCHEMA = "edgedeploy.gates/1"


class BadThreshold(ValueError):
    """A threshold that does not read; parse_gate prefixes the gate and where it was given."""


def _number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise BadThreshold(f"{text!r} is not a number") from None
    if not math.isfinite(value):
        raise BadThreshold("the threshold must be a finite number")
    return value


_DURATION = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:e[-+]?\d+)?)\s*(us|µs|ms|s)?\s*$", re.I)
_DURATION_US = {"us": 1.0, "µs": 1.0, "ms": 1e3, "s": 1e6}


def parse_duration_us(text: str) -> float:
    """'1.5ms' -> 1500.0 (microseconds); a bare number is milliseconds."""
    match = _DURATION.match(text)
    if not match:
        raise BadThreshold("give a duration such as 2.5ms, 800us or 0.01s")
    return float(match.group(1)) * _DURATION_US[(match.group(2) or "ms").lower()]


_SIZE = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*(b|kb|kib|mb|mib|gb|gib|k|m|g)?\s*$", re.I)
_SIZE_BYTES = {"b": 1, "kb": 1000, "mb": 1000**2, "gb": 1000**3, "kib": 1024, "mib": 1024**2, "gib": 1024**3, "k": 1024, "m": 1024**2, "g": 1024**3}


def parse_size_bytes(text: str) -> float:
    """'256KiB' -> 262144; '1.5MB' -> 1500000; a bare number is bytes (K/M/G alone are binary)."""
    match = _SIZE.match(text)
    if not match:
        raise BadThreshold("give a size such as 512KiB, 4MiB, 2MB or 100000 (bytes)")
    return float(match.group(1)) * _SIZE_BYTES[(match.group(2) or "b").lower()]


@dataclass(frozen=True)
class GateKind:
    """One kind of gate: which commands check it, how its threshold reads, which way it fails."""

    key: str
    commands: tuple[str, ...]  # "build", "measure"
    limit: str  # "max": the figure may be at most the threshold; "min": at least
    unit: str
    parse: Callable[[str], float]
    meaning: str  # one sentence for the docs and --help


KINDS: dict[str, GateKind] = {
    k.key: k
    for k in (
        GateKind("accuracy-drop", ("build", "measure"), "max", "pp", _number, "the task metric may drop at most N percentage points, after vs before on the same inputs (top-1; macro-AUROC x 100)"),
        GateKind("snr", ("build", "measure"), "min", "dB", _number, "every output's SNR, compiled vs reference, at least N dB"),
        GateKind("cosine", ("build", "measure"), "min", "", _number, "every output's cosine similarity, compiled vs reference, at least N"),
        GateKind("p50", ("measure",), "max", "us", parse_duration_us, "the after model's median latency in every session at most N (2.5ms, 800us; a bare number is ms)"),
        GateKind("p99", ("measure",), "max", "us", parse_duration_us, "the after model's p99 latency in every session at most N"),
        GateKind("model-size", ("build",), "max", "bytes", parse_size_bytes, "the compiled model file (report convert.size_bytes.model) at most N bytes (512KiB, 4MiB, 2MB)"),
        GateKind("artifact-size", ("build",), "max", "bytes", parse_size_bytes, "every file of the artifact folder together (its manifest) at most N bytes"),
        GateKind("flash", ("build",), "max", "bytes", parse_size_bytes, "the model's bytes in flash at most N, where the target places it there and reports it (report figures.flash)"),
        GateKind("ram", ("build",), "max", "bytes", parse_size_bytes, "the accelerator's working memory at most N bytes, where the target's toolchain estimates it (report figures.ram)"),
    )
}


@dataclass(frozen=True)
class Gate:
    kind: GateKind
    threshold: float
    chip: str | None = None  # None: every chip
    given: str = ""  # as written: "imx93:ram=256KiB"

    def applies_to(self, chip: str | None) -> bool:
        return self.chip is None or chip is None or self.chip == chip

    def to_dict(self) -> dict:
        return {"gate": self.given, "key": self.kind.key, "chip": self.chip, "limit": self.kind.limit, "threshold": self.threshold, "unit": self.kind.unit}


# Gates a build can check only on edgedeploy's estimate (edgedeploy.estimate), never measured
# there: accepted only when the user asks for it (`build --allow-estimate`), and labelled so.
ESTIMATED_IN_BUILD = ("p50",)


def parse_gate(text: str, command: str, chip_id: Callable[[str], str] | None = None, where: str = "--fail-on", allow_estimate: bool = False) -> Gate:
    """`[CHIP:]KEY=VALUE` as a Gate for `command` ("build" or "measure"); OptionError naming the mistake.

    `chip_id` turns a chip name (or alias) into its id, raising for an unknown one.
    `allow_estimate`: a build may gate p50 on the estimate (ESTIMATED_IN_BUILD).
    """
    key_part, sep, value = str(text).partition("=")
    if not sep or not value.strip():
        raise OptionError(f"{where} {text}: write KEY=VALUE (keys: {', '.join(KINDS)}), e.g. accuracy-drop=0.5.")
    chip, colon, key = key_part.strip().rpartition(":")
    key = key.strip().lower().replace("_", "-")
    kind = KINDS.get(key)
    if kind is None:
        import difflib

        close = difflib.get_close_matches(key, list(KINDS), n=1)
        hint = f" Did you mean {close[0]}?" if close else ""
        raise OptionError(f"{where} {text}: unknown gate '{key}'.{hint} Gates: {', '.join(KINDS)}.")
    if command == "build" and key in ESTIMATED_IN_BUILD and not allow_estimate:
        raise OptionError(f"{where} {text}: a build measures no latency, so this gate could only judge edgedeploy's estimate; pass --allow-estimate to accept that, or gate the measured figure with `edgedeploy measure --fail-on {text}`.")
    if command not in kind.commands and not (command == "build" and key in ESTIMATED_IN_BUILD):
        raise OptionError(f"{where} {text}: {key} is a gate of `edgedeploy {' and '.join(kind.commands)}`, not of `edgedeploy {command}`.")
    chip = chip.strip() if colon else None
    if chip and chip_id is not None:
        try:
            chip = chip_id(chip)
        except OptionError as exc:
            raise OptionError(f"{where} {text}: {exc}") from None
    try:
        threshold = kind.parse(value.strip())
    except BadThreshold as exc:
        raise OptionError(f"{where} {text}: {exc}.") from None
    return Gate(kind, threshold, chip or None, text.strip())


def parse_gates(values, command: str, chip_id=None, where: str = "--fail-on", allow_estimate: bool = False) -> list[Gate]:
    return [parse_gate(v, command, chip_id, where, allow_estimate) for v in values]


def gates_of_command(texts, command: str) -> list[str]:
    """The project file's gates that `command` checks (its [gates] table serves build and measure);
    a text with an unknown key is kept, so that parsing it says what is wrong."""
    chosen = []
    for text in texts:
        key = str(text).partition("=")[0].rpartition(":")[2].strip().lower().replace("_", "-")
        kind = KINDS.get(key)
        if kind is None or command in kind.commands:
            chosen.append(text)
    return chosen


def merge_gates(base: list[Gate], override: list[Gate]) -> list[Gate]:
    """The project file's gates with the command line's on top: a (chip, key) given again replaces it."""
    given = {(g.chip, g.kind.key) for g in override}
    return [g for g in base if (g.chip, g.kind.key) not in given] + list(override)


@dataclass
class GateResult:
    gate: Gate
    value: float | None  # the figure, in the gate's unit; None when it could not be read
    passed: bool
    reason: str  # one sentence: the comparison, or why the figure is missing
    source: str  # where in the report the figure was read

    def to_dict(self) -> dict:
        value = self.value
        if value is not None and not math.isfinite(value):
            value = None if math.isnan(value) else ("inf" if value > 0 else "-inf")
        return {**self.gate.to_dict(), "value": value, "passed": self.passed, "reason": self.reason, "source": self.source}


def _judge(gate: Gate, value: float | None, source: str, missing: str | None = None) -> GateResult:
    if value is None:
        return GateResult(gate, None, False, f"{gate.given}: cannot be checked: {missing}", source)
    ok = value <= gate.threshold if gate.kind.limit == "max" else value >= gate.threshold
    shown, limit = _show(value, gate.kind.unit), _show(gate.threshold, gate.kind.unit)
    relation = ("<=" if ok else ">") if gate.kind.limit == "max" else (">=" if ok else "<")
    verdict = "passed" if ok else "FAILED"
    return GateResult(gate, value, ok, f"{gate.given}: {verdict}: {gate.kind.key} {shown} {relation} {limit}", source)


def _show(value: float, unit: str) -> str:
    if unit == "us":
        return f"{value / 1000:.3f} ms" if value >= 1000 else f"{value:.1f} us"
    if unit == "bytes":
        return f"{value:.0f} B" if value < 1024 else (f"{value / 1024:.1f} KiB" if value < 1024**2 else f"{value / 1024**2:.2f} MiB")
    if unit == "pp":
        return f"{value:.2f} pp"
    if unit == "dB":
        return "inf dB (exact)" if value == math.inf else f"{value:.2f} dB"
    return f"{value:.6f}"


# -- figures ---------------------------------------------------------------------------------


def _accuracy_drop(accuracy: dict | None, what: str) -> tuple[float | None, str, str | None]:
    if not accuracy:
        return None, "accuracy", f"no {what} accuracy was measured (no evaluation data, or no outputs came back)"
    status = accuracy.get("status", "done")
    if status != "done":
        return None, "accuracy.status", f"the {what} accuracy check {status}: {accuracy.get('reason') or 'no reason given'}"
    if "delta_percentage_points" in accuracy:
        return -float(accuracy["delta_percentage_points"]), "accuracy.delta_percentage_points", None
    if "delta" in accuracy:
        return -100.0 * float(accuracy["delta"]), "accuracy.delta (x 100)", None
    return None, "accuracy.metric", f"the {what} measured output fidelity only (metric {accuracy.get('metric')!r}: no labels or --metric fidelity), so there is no task metric to gate"


def _fidelity(accuracy: dict | None, field: str, what: str) -> tuple[float | None, str, str | None]:
    if not accuracy:
        return None, "accuracy", f"no {what} accuracy was measured (no evaluation data, or no outputs came back)"
    if accuracy.get("status", "done") != "done":
        return None, "accuracy.status", f"the {what} accuracy check {accuracy.get('status')}: {accuracy.get('reason') or 'no reason given'}"
    fidelity = accuracy.get("fidelity") or {}
    if not fidelity:
        return None, "accuracy.fidelity", f"the {what} accuracy check compared no outputs"
    worst = min(float(f[field]) for f in fidelity.values())
    return worst, f"accuracy.fidelity.*.{field} (worst output)", None


def _build_figure(key: str, report: dict, manifest: dict | None) -> tuple[float | None, str, str | None]:
    accuracy = report.get("accuracy")
    convert = report.get("convert") or {}
    if key == "accuracy-drop":
        return _accuracy_drop(accuracy, "build's host")
    if key == "snr":
        return _fidelity(accuracy, "snr_db", "build's host")
    if key == "cosine":
        return _fidelity(accuracy, "cosine", "build's host")
    if key == "model-size":
        if convert.get("status") != "built":
            return None, "convert.status", f"the model was not compiled here (convert status {convert.get('status')!r})"
        size = (convert.get("size_bytes") or {}).get("model")
        return (float(size) if size is not None else None), "convert.size_bytes.model", "the target lists no compiled model file"
    if key == "artifact-size":
        files = (manifest or {}).get("files")
        if not files:
            return None, "manifest.files", "the artifact has no manifest"
        return float(sum(f["size_bytes"] for f in files.values())), "manifest.files.*.size_bytes (sum)", None
    if key in ESTIMATED_IN_BUILD:
        return _estimated_latency(report)
    if key in TARGET_FIGURES:
        # The target's own figures (Target.gate_figures), which the build keeps in `figures`.
        figure = (report.get("figures") or {}).get(key)
        if isinstance(figure, dict) and isinstance(figure.get("value"), (int, float)):
            return float(figure["value"]), f"figures.{key}: {figure.get('source') or 'the target'}", None
        chip = (report.get("target") or {}).get("chip") or "this chip"
        return None, f"figures.{key}", TARGET_FIGURES[key].format(chip=chip)
    raise AssertionError(key)


# Gates whose figure only a target can give, and the sentence when it gives none.
TARGET_FIGURES = {
    "flash": "the {chip} target does not place the model in flash or does not report it",
    "ram": "the toolchain of {chip} reports no working-memory estimate (scope the gate to a chip that does: CHIP:ram=N)",
}


def _estimated_latency(report: dict) -> tuple[float | None, str, str | None]:
    """The build's latency estimate in microseconds (report section `estimate`), labelled as one."""
    estimate = report.get("estimate") or {}
    if estimate.get("latency_ms") is None:
        return None, "estimate.latency_ms", f"edgedeploy has no latency estimate for {report.get('target', {}).get('chip', 'this chip')} ({estimate.get('reason') or 'no estimate in the report'})"
    error = estimate.get("loo_mdape")
    typical = f", typically within {100 * error:.0f}% on this chip" if error is not None else ""
    return float(estimate["latency_ms"]) * 1000.0, f"estimate.latency_ms (edgedeploy's estimate, not a measurement{typical})", None


def evaluate_build(gates: list[Gate], report: dict, manifest: dict | None = None) -> list[GateResult]:
    """Every gate that applies to this build's chip, judged on its report (and manifest)."""
    chip = (report.get("target") or {}).get("chip")
    results = []
    for gate in gates:
        estimated = gate.kind.key in ESTIMATED_IN_BUILD
        if not gate.applies_to(chip) or ("build" not in gate.kind.commands and not estimated):
            continue
        value, source, missing = _build_figure(gate.kind.key, report, manifest)
        result = _judge(gate, value, source, missing)
        if estimated and value is not None:
            result.reason += " (estimated, not measured)"
        results.append(result)
    return results


def failed_build(gates: list[Gate], chip: str, reason: str) -> list[GateResult]:
    """The gates of a chip whose build failed: none can be checked."""
    return [_judge(g, None, "build", f"the build failed ({reason})") for g in gates if g.applies_to(chip) and ("build" in g.kind.commands or g.kind.key in ESTIMATED_IN_BUILD)]


def evaluate_measurement(gates: list[Gate], record: dict) -> list[GateResult]:
    """Every gate that applies to the measured chip, judged on the measurement record (the after model)."""
    chip = ((record.get("artifact") or {}).get("target") or {}).get("chip")
    after = (record.get("latency") or {}).get("after")
    results = []
    for gate in gates:
        if not gate.applies_to(chip) or "measure" not in gate.kind.commands:
            continue
        key = gate.kind.key
        if key in ("p50", "p99"):
            field = "session_median_range_us" if key == "p50" else "session_p99_range_us"
            summary = (after or {}).get("summary") or {}
            pair = summary.get(field)
            if not pair:
                results.append(_judge(gate, None, f"latency.after.summary.{field}", "no session of the after model completed"))
            else:
                # The worst session: a gate holds only if every session holds it.
                results.append(_judge(gate, float(pair[1]), f"latency.after.summary.{field}[1] (the worst session)"))
            continue
        accuracy = record.get("accuracy")
        if accuracy is None and record.get("accuracy_error"):
            accuracy = {"status": "failed", "reason": record["accuracy_error"]}
        if key == "accuracy-drop":
            value, source, missing = _accuracy_drop(accuracy, "on-device")
        else:
            value, source, missing = _fidelity(accuracy, "snr_db" if key == "snr" else "cosine", "on-device")
        results.append(_judge(gate, value, source, missing))
    return results


def summary(results: list[GateResult]) -> dict:
    """The gates section of a build result or measurement record."""
    return {"schema": GATE_SCHEMA, "passed": all(r.passed for r in results), "results": [r.to_dict() for r in results]}
