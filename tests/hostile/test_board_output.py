"""Hostile board output (issue 17 item 4): what a board sends back is untrusted input.

Two layers:
- CLI cases: `edgedeploy measure ARTIFACT --device esp32s3@PTY --flash none` against a real
  esp32s3 build of the sample, with a STAND-IN for the board on the far end of a real pty
  (tests/serial_standin.py) that lies, floods, or sends terminal control bytes. Each case
  asserts the exit code, one `error:` sentence on stderr (and no traceback), and what was
  recorded: nothing, or the trustworthy sessions marked partial.
- Property tests (hypothesis) of the serial result parser: arbitrary bytes through the line
  reader and arbitrary JSON through check_result never raise, and whatever is accepted is a
  well-formed measurement of the expected model; terminal_safe leaves no control character.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from edgedeploy.devices.board_output import MAX_LATENCY_US, check_result, terminal_safe
from edgedeploy.devices.serial import SerialDisconnected, read_sessions
from tests.helpers import run_cli
from tests.serial_standin import BOOT, DONE

SHA = "ab" * 32
# The suite's figures (tests/hostile/conftest.py) count these cases under this category.
CATEGORY = "board output"


# -- the CLI cases --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("out")
    proc = run_cli("build", "--target", "esp32s3", "--out", str(out), timeout=900)
    assert proc.returncode == 0, proc.stderr
    return out / "mnist_cnn" / "esp32s3"


@pytest.fixture
def artifact(built, tmp_path) -> Path:
    copy = tmp_path / "mnist_cnn" / "esp32s3"
    shutil.copytree(built, copy)
    return copy


def firmware(artifact: Path):
    from tests.test_serial_measure_cli import Firmware

    return Firmware(artifact)


def line(obj: dict) -> bytes:
    return b"EDGEDEPLOY " + json.dumps(obj, separators=(",", ":")).encode() + b"\r\n"


def good(fw, index: int, median: float = 1500.0) -> dict:
    return json.loads(fw.result(index, median)[len(b"EDGEDEPLOY ") :])


def edit(obj: dict, path: str, value) -> dict:
    """A copy of obj with the dotted path set to value (or removed when value is DELETE)."""
    obj = json.loads(json.dumps(obj))
    node = obj
    keys = path.split(".")
    for key in keys[:-1]:
        node = node[key]
    if value is DELETE:
        node.pop(keys[-1], None)
    else:
        node[keys[-1]] = value
    return obj


DELETE = object()

# (id, how each of the three lines is changed, the clause the sentence must hold)
REFUSED_LINES = [
    ("no-model-hash", ("scope.model_sha256", DELETE), "names no model"),
    ("model-hash-not-hex", ("scope.model_sha256", "zz" * 32), "not a sha256"),
    ("model-hash-a-list", ("scope.model_sha256", ["ab"]), "not a sha256"),
    ("another-model", ("scope.model_sha256", "cd" * 32), "another model"),
    ("loaded-another-model", ("scope.espdl_model_sha256", "cd" * 32), "another one"),
    ("latency-a-string", ("latency_us", "fast"), "latency_us is 'fast'"),
    ("latency-a-list", ("latency_us", [1, 2, 3]), "not an object of statistics"),
    ("median-a-string", ("latency_us.p50", "1500"), "latency_us.p50 is '1500'"),
    ("median-a-list", ("latency_us.p50", [1500]), "latency_us.p50 is [1500]"),
    ("median-missing", ("latency_us.p50", DELETE), "latency_us.p50 is None"),
    ("median-negative", ("latency_us.p50", -5.0), "latency_us.p50 is -5.0"),
    ("median-a-bool", ("latency_us.p50", True), "latency_us.p50 is True"),
    ("median-huge-int", ("latency_us.p50", 10**400), "latency_us.p50 is"),
    ("max-infinite", ("latency_us.max", 1e999), "latency_us.max is inf"),
    ("stats-out-of-order", ("latency_us.min", 99999.0), "out of order"),
    ("iterations-zero", ("iterations", 0), "iterations is 0"),
    ("iterations-a-string", ("iterations", "800"), "iterations is '800'"),
    ("iterations-a-float", ("iterations", 800.5), "iterations is 800.5"),
    ("first-inference-a-string", ("first_inference_us", "soon"), "first_inference_us is 'soon'"),
    ("first-inference-a-list", ("first_inference_us", [2000.0]), "first_inference_us is [2000.0]"),
    ("session-negative", ("session", -1), "session is -1"),
    ("scope-a-string", ("scope", "esp32s3"), "no scope object"),
]


def assert_one_sentence(hostile, outcome, exit_code: int, *clauses: str) -> str:
    """The suite's verdict (non-zero, not 70, one sentence, no traceback), the exit code, and the clauses (case as written)."""
    sentence = hostile.refused(outcome, code=exit_code)
    for clause in clauses:
        assert clause in sentence, sentence
    return sentence


def measurement_files(artifact: Path) -> list[Path]:
    return sorted((artifact / "measurements").glob("*.json")) if (artifact / "measurements").exists() else []


def measure(hostile, artifact: Path, port: str, *extra: str):
    return hostile.run_subprocess("measure", str(artifact), "--device", f"esp32s3@{port}", "--flash", "none", "--timeout", "20", *extra)


pytestmark_espdl = pytest.mark.toolchain("espdl")


@pytestmark_espdl
@pytest.mark.parametrize("change, clause", [(c, k) for _, c, k in REFUSED_LINES], ids=[i for i, _, _ in REFUSED_LINES])
def test_a_board_whose_every_line_lies_records_nothing(hostile, artifact, board, change, clause):
    fw = firmware(artifact)
    report_before = (artifact / "report.json").read_bytes()
    lines = [line(edit(good(fw, i), *change)) for i in range(fw.sessions)]
    board.play([BOOT, fw.start(), *lines, DONE])
    outcome = measure(hostile, artifact, board.port)
    assert_one_sentence(hostile, outcome, 10, clause)
    assert measurement_files(artifact) == [] and (artifact / "report.json").read_bytes() == report_before


@pytestmark_espdl
def test_one_lying_line_among_good_ones_keeps_the_good_ones_marked_partial(hostile, artifact, board):
    fw = firmware(artifact)
    board.play([BOOT, fw.start(), fw.result(0, 1500.0), line(edit(good(fw, 1), "latency_us", "fast")), fw.result(2, 1510.0), DONE])
    outcome = measure(hostile, artifact, board.port)
    sentence = assert_one_sentence(hostile, outcome, 10, "only 2 of 3 result lines could be taken", "1 result line(s) were refused", "latency_us is 'fast'", "marked partial")
    (path,) = measurement_files(artifact)
    assert str(path) in sentence
    record = json.loads(path.read_text())
    assert record["partial"] is True and [s["latency_us"]["p50"] for s in record["latency"]["after"]["sessions"]] == [1500.0, 1510.0]
    assert record["board"]["rejected_result_lines"] == 1


@pytestmark_espdl
def test_a_line_without_first_inference_is_recorded_without_crashing(hostile, artifact, board):
    fw = firmware(artifact)
    board.play([BOOT, fw.start(), *[line(edit(good(fw, i), "first_inference_us", DELETE)) for i in range(fw.sessions)], DONE])
    outcome = measure(hostile, artifact, board.port, "--format", "json")
    hostile.accepted(outcome)
    record = json.loads(outcome.stdout)
    assert record["latency"]["after"]["summary"]["first_inference_range_us"] is None and len(record["latency"]["after"]["sessions"]) == 3
    proc = run_cli("report", str(artifact))  # the text views render it too
    assert "Traceback" not in proc.stderr


@pytestmark_espdl
@pytest.mark.parametrize(
    "noise",
    [b"\x1b[2J\x1b[H\x1b]0;pwned\x07", b"\x1b[31mred\x1b[0m \x9b6n", "\u202eevil\u202c".encode(), b"\x00\x01\x02\x7f\x08\x08\x08"],
    ids=["clear-screen-and-title", "colours-and-csi", "bidi-override", "nul-del-backspace"],
)
def test_control_bytes_from_the_board_are_escaped_on_the_terminal(hostile, artifact, board, noise):
    fw = firmware(artifact)
    lying = edit(good(fw, 0), "scope.dev_kit_note", noise.decode("utf-8", "replace"))
    board.play([BOOT, b"I (1) boot: " + noise + b"\r\n", fw.start(), line(lying), fw.result(1, 1500.0), fw.result(2, 1500.0), b"crash? " + noise + b"\r\n", DONE])
    outcome = measure(hostile, artifact, board.port, "--console")
    hostile.accepted(outcome)
    raw_controls = [c for c in outcome.stderr + outcome.stdout if (ord(c) < 32 and c not in "\n\t") or 0x7F <= ord(c) <= 0x9F or c in "\u202e\u202c"]
    assert raw_controls == []
    assert "console: I (1) boot: \\x" in outcome.stderr or "console: I (1) boot: \\u" in outcome.stderr


@pytestmark_espdl
def test_a_flooding_board_ends_in_one_sentence_with_what_it_had_sent_kept(hostile, artifact, board):
    fw = firmware(artifact)
    flood = [b"x" * 65536 + b"\r\n"] * 140  # ~9 MiB of console, never finishing
    board.play([BOOT, fw.start(), fw.result(0, 1500.0), *flood])
    outcome = measure(hostile, artifact, board.port)
    assert_one_sentence(hostile, outcome, 10, "flooded its console", "after 1 of 3 sessions", "marked partial")
    (path,) = measurement_files(artifact)
    assert json.loads(path.read_text())["partial"] is True


@pytestmark_espdl
@pytest.mark.parametrize(
    "script, clause",
    [
        (lambda fw: [BOOT, b"edgedeploy: harness start, model x, chip esp32s3, 999999999999 sessions, boot 1\r\n"], "more than a run can have"),
        (lambda fw: [BOOT, fw.start(), b"EDGEDEPLOY " + b"[" * 200000 + b"\r\n", 0.2, "close"], "disconnected"),
        (lambda fw: [BOOT, fw.start(), b"EDGEDEPLOY " + b"9" * 100000 + b"\r\n", b"EDGEDEPLOY [1,2]\r\n", b"EDGEDEPLOY null\r\n", DONE], "only 0 of 3"),
    ],
    ids=["announces-a-billion-sessions", "json-nesting-bomb", "non-object-results"],
)
def test_a_board_that_lies_about_its_run_is_one_sentence(hostile, artifact, board, script, clause):
    board.play(script(firmware(artifact)))
    outcome = measure(hostile, artifact, board.port)
    assert_one_sentence(hostile, outcome, 10, clause)
    assert measurement_files(artifact) == []


# -- property tests of the serial result parser ---------------------------------------------------


class ScriptedConsole:
    """The console of read_sessions fed from a list of byte chunks, then unplugged."""

    port = "/dev/stand-in"

    def __init__(self, chunks: list[bytes]):
        self.chunks = list(chunks)

    def read_chunk(self) -> bytes:
        if not self.chunks:
            raise SerialDisconnected("end of script")
        return self.chunks.pop(0)


def valid_result(p50: float, spread: float, iterations: int, sha: str = SHA) -> dict:
    lo, hi = p50 - spread, p50 + spread
    return {
        "schema": "edgedeploy.run/1",
        "scope": {"model_sha256": sha},
        "iterations": iterations,
        "latency_us": {"min": lo, "mean": p50, "p50": p50, "p90": p50 + spread / 2, "p99": hi, "max": hi},
    }


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=25,
)
result_like = st.fixed_dictionaries(
    {},
    optional={
        "schema": st.sampled_from(["edgedeploy.run/1", "edgedeploy.run/2", 1]) | json_values,
        "scope": st.fixed_dictionaries({}, optional={"model_sha256": st.sampled_from([SHA, "cd" * 32, "zz"]) | json_values, "espdl_model_sha256": json_values}) | json_values,
        "iterations": st.integers(-5, 10**12) | json_values,
        "latency_us": st.dictionaries(st.sampled_from(["min", "mean", "p50", "p90", "p99", "max", "stdev", "count"]), st.floats() | st.integers() | json_values) | json_values,
        "first_inference_us": json_values,
        "warmup": json_values,
        "session": json_values,
        "sessions": json_values,
        "duration_s": json_values,
    },
)


@settings(max_examples=400, deadline=None)
@given(result_like)
def test_check_result_never_raises_and_accepts_only_well_formed_lines(obj):
    reason = check_result(obj, SHA)
    assert reason is None or (isinstance(reason, str) and reason)
    if reason is None:
        lat = obj["latency_us"]
        values = [lat[k] for k in ("min", "p50", "p90", "p99", "max")]
        assert all(isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v <= MAX_LATENCY_US for v in values)
        assert values == sorted(values) and lat["min"] <= lat["mean"] <= lat["max"]
        assert isinstance(obj["iterations"], int) and obj["iterations"] >= 1
        assert obj["scope"]["model_sha256"] == SHA


@settings(max_examples=200, deadline=None)
@given(st.floats(0, 1e6), st.floats(0, 1e3), st.integers(1, 10**6))
def test_every_well_formed_line_of_this_model_is_accepted_and_of_another_refused(p50, spread, iterations):
    spread = min(spread, p50)
    assert check_result(valid_result(p50, spread, iterations), SHA) is None
    assert "another model" in check_result(valid_result(p50, spread, iterations, sha="cd" * 32), SHA)
    assert "names no model" in check_result(dict(valid_result(p50, spread, iterations), scope={}), SHA)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.binary(max_size=300) | st.sampled_from([b"\n", b"\r\n", b"EDGEDEPLOY ", b"edgedeploy: harness start, 3 sessions\n", b"edgedeploy: done\n", BOOT]), max_size=40), st.lists(st.tuples(st.floats(1, 1e5), st.floats(0, 1), st.integers(1, 1000)), max_size=4))
def test_the_serial_reader_survives_any_bytes_and_keeps_only_trustworthy_results(noise, goods):
    chunks = [b"edgedeploy: harness start, model x, 3 sessions\r\n"]
    for index, (p50, frac, iterations) in enumerate(goods):
        chunks += noise[index::4][:3]
        chunks.append(b"\nEDGEDEPLOY " + json.dumps(valid_result(p50, p50 * frac, iterations)).encode() + b"\n")
    chunks += noise
    run = read_sessions(ScriptedConsole(chunks), timeout_s=60, expected_model_sha256=SHA)
    assert run.error is None or isinstance(run.error, str)
    for result in run.results:
        assert check_result(result, SHA) is None
    for text in [run.error or "", run.last_line()]:
        assert terminal_safe(text) == text  # nothing printable from the run carries a control byte


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_terminal_safe_leaves_no_control_character(text):
    shown = terminal_safe(text)
    assert not any((ord(c) < 32 and c != "\t") or 0x7F <= ord(c) <= 0x9F or c in "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c" for c in shown)
    if all(c.isprintable() or c == "\t" for c in text) and len(text) <= 2000:
        assert shown == text  # printable text is left as it is
