"""CI gates (`--fail-on`) on build and measure, and the project file (edgedeploy.toml).

The gates are judged on real outputs: a real RKNN build of the sample, a TIDL build that only
generates its project (no TI tools here: its figures are missing, so its gates must fail), and a
real measurement on the local device. The project file is read from the folder the command runs
in, the way a CI job runs `edgedeploy build` with no flags.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest

from edgedeploy.errors import OptionError
from edgedeploy.gates import KINDS, merge_gates, parse_duration_us, parse_gate, parse_size_bytes
from tests.helpers import run_cli
from tests.measure_helpers import FAST_SESSION_ARGS, make_artifact


def test_thresholds_read_with_their_units():
    assert parse_duration_us("2.5ms") == 2500 and parse_duration_us("800us") == 800 and parse_duration_us("0.01s") == 10000
    assert parse_duration_us("3") == 3000  # a bare number is milliseconds
    assert parse_size_bytes("256KiB") == 262144 and parse_size_bytes("2MB") == 2_000_000 and parse_size_bytes("4M") == 4 * 1024**2
    gate = parse_gate("imx93:ram=256KiB", "build")
    assert (gate.chip, gate.kind.key, gate.threshold) == ("imx93", "ram", 262144)
    with pytest.raises(OptionError, match="give a size"):
        parse_gate("ram=lots", "build")
    with pytest.raises(OptionError, match="finite"):
        parse_gate("snr=inf", "build")
    with pytest.raises(OptionError, match="Did you mean accuracy-drop"):
        parse_gate("accuracy_dorp=1", "build")


def test_the_command_line_replaces_a_project_gate_of_the_same_chip_and_key():
    base = [parse_gate(t, "build") for t in ("snr=25", "accuracy-drop=0.5", "imx93:snr=30")]
    merged = merge_gates(base, [parse_gate("snr=20", "build")])
    assert sorted(g.given for g in merged) == ["accuracy-drop=0.5", "imx93:snr=30", "snr=20"]


def test_docs_list_every_gate():
    page = (Path(__file__).resolve().parent.parent / "docs" / "cli.md").read_text()
    for key, kind in KINDS.items():
        assert f"| `{key}` | {', '.join(kind.commands)} |" in page, key


def _gates_by_key(entry: dict) -> dict:
    return {g["gate"]: g for g in entry["gates"]["results"]}


@pytest.mark.slow
@pytest.mark.toolchain("rknn")
def test_gates_on_a_real_build_mark_the_chip_and_set_the_exit_status(tmp_path):
    """rk3588 is built and judged; am62a is only generated here, so its gates cannot be checked and fail."""
    done = run_cli(
        "build", "--target", "rk3588", "--target", "am62a", "--out", str(tmp_path), "--calib-count", "64", "--eval-count", "200",
        "--fail-on", "accuracy-drop=50", "--fail-on", "snr=1000", "--fail-on", "rk3588:model-size=10MiB", "--fail-on", "am62a:flash=1",
        "--allow-generated", "--format", "json",
    )
    assert done.returncode == 7, done.stderr[-3000:]
    rk, am = json.loads(done.stdout)["builds"]
    assert rk["status"] == "built" and am["status"] == "generated only"
    gates = _gates_by_key(rk)
    accuracy = rk["report"]["accuracy"]
    assert gates["accuracy-drop=50"]["passed"] and gates["accuracy-drop=50"]["value"] == pytest.approx(-accuracy["delta_percentage_points"])
    worst_snr = min(f["snr_db"] for f in accuracy["fidelity"].values())
    assert not gates["snr=1000"]["passed"] and gates["snr=1000"]["value"] == pytest.approx(worst_snr) and math.isfinite(worst_snr)
    size = gates["rk3588:model-size=10MiB"]
    assert size["passed"] and size["value"] == (Path(rk["artifact"]) / "model.rknn").stat().st_size
    assert "am62a:flash=1" not in gates  # scoped to the other chip
    am_gates = _gates_by_key(am)
    assert set(am_gates) == {"accuracy-drop=50", "snr=1000", "am62a:flash=1"}
    assert not any(g["passed"] for g in am_gates.values())
    assert "not compiled here" in am_gates["accuracy-drop=50"]["reason"] and am_gates["snr=1000"]["value"] is None
    assert "does not place the model in flash" in am_gates["am62a:flash=1"]["reason"]
    # The text summary marks the chip, and the closing line names every failed gate.
    again = run_cli("build", "--target", "rk3588", "--out", str(tmp_path), "--force", "--calib-count", "64", "--eval-count", "200", "--fail-on", "snr=1000")
    assert again.returncode == 7
    assert "GATES" in again.stdout and "FAILED: snr" in again.stdout and "FAILED: FAILED" not in again.stdout
    assert "--fail-on: rk3588: snr=1000: FAILED" in again.stderr and "(exit 7)" in again.stderr


def test_a_failed_chip_wins_over_gates_and_its_gates_say_why(tmp_path):
    # rv1106 builds int8 only: with --precision fp16 it fails (a usage error, 2) before any work;
    # am62a generates its project. The failed chip's code is the exit status.
    done = run_cli("build", "--target", "am62a", "--target", "rv1106", "--precision", "int16", "--out", str(tmp_path), "--fail-on", "snr=10", "--format", "json")
    builds = {b["chip"]: b for b in json.loads(done.stdout)["builds"]}
    assert done.returncode == 2, done.stderr[-2000:]
    assert builds["rv1106"]["status"] == "failed" and builds["rv1106"]["exit_code"] == 2
    [gate] = builds["rv1106"]["gates"]["results"]
    assert not gate["passed"] and "the build failed" in gate["reason"]


PROJECT = """
model = "model.onnx"
targets = ["am62a"]
out = "ci-out"
allow-generated = true

[data]
calib = "data/calib.npz"

[gates]
p99 = "1s"                       # a measure gate: build leaves it to measure

[options.tidl]
tidl-calibration-frames = 7
"""


@pytest.fixture
def project(tmp_path):
    from edgedeploy.sample import sample_calibration_path, sample_model_path

    folder = tmp_path / "repo"
    (folder / "data").mkdir(parents=True)
    shutil.copyfile(sample_model_path(), folder / "model.onnx")
    shutil.copyfile(sample_calibration_path(), folder / "data" / "calib.npz")
    (folder / "edgedeploy.toml").write_text(PROJECT)
    return folder


def test_a_ci_job_is_build_with_no_flags(project):
    done = run_cli("build", "--format", "json", cwd=project)
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"project: {project / 'edgedeploy.toml'}" in done.stderr
    [entry] = json.loads(done.stdout)["builds"]
    assert entry["artifact"] == str(project / "ci-out" / "model" / "am62a")
    options = entry["report"]["options"]
    assert options["calib"] == str(project / "data" / "calib.npz")  # relative to the file's folder
    assert options["target_options"]["tidl_calibration_frames"] == 7
    assert "gates" not in entry  # p99 is measure's


def test_flags_win_over_the_project_file(project, tmp_path):
    sub = project / "sub"
    sub.mkdir()
    done = run_cli("build", "--project", "../edgedeploy.toml", "--target", "am68a", "--tidl-calibration-frames", "3", "--fail-on", "cosine=0.9", "--format", "json", cwd=sub)
    assert done.returncode == 7, done.stderr[-3000:]  # the cosine gate cannot be checked on a generated-only build
    [entry] = json.loads(done.stdout)["builds"]
    assert entry["chip"] == "am68a" and entry["report"]["options"]["target_options"]["tidl_calibration_frames"] == 3
    assert [g["gate"] for g in entry["gates"]["results"]] == ["cosine=0.9"]
    ignored = run_cli("build", "--no-project", "--target", "am62a", "--out", str(tmp_path / "o"), "--allow-generated", "--format", "json", cwd=project)
    assert ignored.returncode == 0 and "project:" not in ignored.stderr
    assert json.loads(ignored.stdout)["builds"][0]["report"]["model"]["name"] == "mnist_cnn"  # the sample, not the project's model


@pytest.mark.parametrize(
    "text, sentence",
    [
        ('targts = ["rk3588"]', "edgedeploy.toml: unknown field 'targts'. Did you mean targets?"),
        ('precision = "int9"', "edgedeploy.toml: precision: 'int9' is not one of"),
        ('[data]\ncalib = "missing.npz"', "edgedeploy.toml: [data] calib: Path"),
        ('targets = ["rk3599"]', "edgedeploy.toml: targets: Unknown target 'rk3599'. Did you mean rk3588"),
        ('targets = ["am62a"]\n[data]\npreprocess = "layout=NCWH"', "edgedeploy.toml: [data] preprocess: --preprocess: layout must be NCHW or NHWC"),
        ('[gates]\nsnr = "high"', "edgedeploy.toml: [gates] snr=high: 'high' is not a number"),
        ('[gates.rk3599]\nsnr = 3', "edgedeploy.toml: [gates] rk3599:snr=3: Unknown target"),
        ('[options.espdl]\nint16-layer = "auto"', "edgedeploy.toml: [options.espdl] int16-layer: unknown option of the ESP-DL target; its options: bias-correction, calib-method, equalization, int16-layers"),
        ('[options.rknn]\noptimization-level = 9', "edgedeploy.toml: [options.rknn] optimization-level: 9 is not in the range 0<=x<=3"),
        ('timeout = "soon"', "edgedeploy.toml: timeout: must be a number"),
        ("model = ", "edgedeploy.toml is not valid TOML"),
    ],
)
def test_a_bad_field_is_one_sentence_naming_the_file_and_field(tmp_path, text, sentence):
    (tmp_path / "edgedeploy.toml").write_text(text + "\n")
    done = run_cli("build", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    [line] = [l for l in done.stderr.splitlines() if l.startswith("error: ")]
    assert sentence in line, line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["edgedeploy.toml"]  # nothing built


@pytest.fixture(scope="module")
def local_artifact(tmp_path_factory):
    return make_artifact(tmp_path_factory.mktemp("artifacts"), "int8-qdq")


def test_measure_gates_on_the_local_device(local_artifact, tmp_path):
    # p50 of 1 us cannot hold for an ONNX Runtime call; 10 s always does. The worst session is judged.
    done = run_cli("measure", str(local_artifact), "--device", "local", *FAST_SESSION_ARGS, "--fail-on", "p50=1us", "--fail-on", "p99=10s", "--fail-on", "cosine=0.5", "--format", "json")
    assert done.returncode == 7, done.stderr[-3000:]
    record = json.loads(done.stdout)
    gates = {g["key"]: g for g in record["gates"]["results"]}
    worst_p50 = max(s["latency_us"]["p50"] for s in record["latency"]["after"]["sessions"])
    assert not gates["p50"]["passed"] and gates["p50"]["value"] == pytest.approx(worst_p50)
    assert gates["p99"]["passed"] and gates["cosine"]["passed"]
    assert gates["cosine"]["value"] == pytest.approx(min(f["cosine"] for f in record["accuracy"]["fidelity"].values()))
    assert "--fail-on: p50=1us: FAILED" in done.stderr


def test_measure_reads_its_device_and_gates_from_the_project_file(local_artifact, tmp_path):
    (tmp_path / "edgedeploy.toml").write_text('[measure]\ndevice = "local"\nsessions = 3\nmin-duration = 0.2\nmin-iterations = 20\nwarmup = 3\neval-count = 50\n\n[gates]\np99 = "10s"\nmodel-size = "1MiB"\n')
    done = run_cli("measure", str(local_artifact), "--format", "json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    record = json.loads(done.stdout)
    assert record["device"]["name"] == "local" and record["settings"]["min_duration_s"] == 0.2
    assert [g["gate"] for g in record["gates"]["results"]] == ["p99=10s"]  # model-size is build's
