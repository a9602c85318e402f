"""`edgedeploy build --target esp32s3|esp32p4` end to end with the real esp-ppq (espdl environment).

Builds run through the real command line (a subprocess), so exit codes, stdout/stderr and the
wall-time line are what a user sees.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from edgedeploy.artifacts import check_manifest
from edgedeploy.errors import OptionError
from edgedeploy.model import load_model
from edgedeploy.model.stats import node_names
from edgedeploy.sample import sample_card, sample_model_path
from edgedeploy.targets.espdl import convert as espdl_build
from tests.espdl_models import HOSTILE, make_hostile_model
from tests.helpers import run_cli

toolchain = pytest.mark.toolchain("espdl")


@pytest.fixture(scope="module")
def sample_builds(tmp_path_factory):
    """The README's main job, for both chips: `edgedeploy build --target CHIP` with no model."""
    out = tmp_path_factory.mktemp("out")
    runs = {chip: run_cli("build", "--target", chip, "--out", str(out)) for chip in ("esp32s3", "esp32p4")}
    return out, runs


# --------------------------------------------------------------------------- options (no toolchain)


def test_int16_layers_option_parsing():
    names = ["conv_a", "relu_a", "odd,name"]
    assert espdl_build.parse_int16_layers((), names) is None
    assert espdl_build.parse_int16_layers(("auto",), names) == ("auto", espdl_build.INT16_AUTO_SNR_DB)
    assert espdl_build.parse_int16_layers(("AUTO=42.5",), names) == ("auto", 42.5)
    assert espdl_build.parse_int16_layers(("conv_a,relu_a",), names) == ["conv_a", "relu_a"]
    assert espdl_build.parse_int16_layers(("odd,name", "conv_a"), names) == ["odd,name", "conv_a"]
    for bad, message in ((("nope",), "no node named 'nope'"), (("auto=x",), "not a number"), (("auto=0",), "between"), (("auto", "conv_a"), "cannot be combined"), (("autox",), "is not 'auto'")):
        with pytest.raises(OptionError, match=message):
            espdl_build.parse_int16_layers(bad, names)


def test_snr_db():
    assert espdl_build.snr_db(0.01) == pytest.approx(20.0)
    assert espdl_build.snr_db(0.0) == math.inf
    assert espdl_build.snr_db(None) is None


# --------------------------------------------------------------------------- the sample, both chips


@toolchain
@pytest.mark.parametrize("chip", ["esp32s3", "esp32p4"])
def test_sample_builds_with_accuracy_before_and_after(sample_builds, chip):
    out, runs = sample_builds
    proc = runs[chip]
    assert proc.returncode == 0, proc.stderr
    artifact = out / "mnist_cnn" / chip
    # stdout is data: the summary table (chip, status, artifact); esp-ppq's banner went to the build log only.
    row = next(line for line in proc.stdout.splitlines() if line.startswith(chip))
    assert str(artifact) in row and " built " in row
    assert "ESP" not in proc.stdout.replace(str(artifact), "")
    assert "Network Quantization Finished" in (artifact / "build.log").read_text()
    manifest = check_manifest(artifact, chip)
    assert manifest["espdl"]["precision"] == "int8"

    espdl = (artifact / "model.espdl").read_bytes()
    assert espdl[:4] == b"EDL2"
    info = (artifact / "model.info").read_text()
    assert "test inputs value" in info and "test outputs value" in info  # export_test_values=True
    # The layers with their quant types, without the weights' values (targets/espdl/worker_info_export.py).
    assert "quant_type = 'S8'" in info and "initializers value:" not in info
    assert manifest["model"]["sha256"] in info  # metadata the firmware reports back

    report = json.loads((artifact / "report.json").read_text())
    acc = report["accuracy"]
    assert acc["metric"] == "top1" and acc["samples"] == 1000
    assert acc["before"]["top1"] == pytest.approx(sample_card()["float_top1"]["eval"])
    assert 0.9 < acc["after"]["top1"] <= 1.0
    assert abs(acc["delta_percentage_points"]) <= 1.0  # measured: -0.3 (esp32s3), -0.2 (esp32p4)
    fid = acc["fidelity"]["logits"]
    assert 0.99 < fid["cosine"] <= 1.0 and fid["snr_db"] > 15 and fid["max_abs_error"] > 0
    assert acc["scope"]["model_sha256"] == manifest["model"]["sha256"]

    quant = json.loads((artifact / "quantization.json").read_text())
    assert quant["platform"] == ("ESPDL_S3_INT8" if chip == "esp32s3" else "ESPDL_INT8")
    onnx_names = set(node_names(load_model(sample_model_path(), {}, require_static=True).graph))
    computing = [layer for layer in quant["layers"] if layer["computing"]]
    assert len(computing) == 5  # 3 Conv + 2 Gemm
    for layer in computing:
        assert layer["onnx_node"] in onnx_names
        assert layer["graphwise_noise_to_signal"] is not None and layer["layerwise_noise_to_signal"] is not None
    assert 15 < quant["output_snr_db"] < 40
    assert quant["espdl_float_ops"] == [] and all(op["quant_type"] == "S8" for op in quant["espdl_ops"])

    fw = artifact / "firmware"
    assert (fw / "main" / "model.espdl").read_bytes() == espdl
    assert manifest["model"]["sha256"] in (fw / "main" / "edgedeploy_model.h").read_text()
    assert report["codegen"]["model_location"] == "flash_rodata"
    assert report["audit"]["file"] == "audit.json" and report["audit"]["summary"]["nodes"] == 13
    # esp-ppq's own verdict (from the .info it exported) beside the rules' prediction
    assert report["toolchain_verdict"]["toolchain"] == "esp-ppq" and report["toolchain_verdict"]["agreement"] == 1.0
    assert report["build_seconds"] < 90  # measured ~20 s on a 2-core machine


@toolchain
def test_chips_get_different_models(sample_builds):
    out, _ = sample_builds
    assert (out / "mnist_cnn/esp32s3/model.espdl").read_bytes() != (out / "mnist_cnn/esp32p4/model.espdl").read_bytes()


@toolchain
def test_an_existing_artifact_is_kept_without_force(sample_builds):
    out, _ = sample_builds
    before = (out / "mnist_cnn/esp32s3/manifest.json").read_text()
    proc = run_cli("build", "--target", "esp32s3", "--out", str(out))
    assert proc.returncode != 0 and "exists already" in proc.stderr and "--force" in proc.stderr
    assert (out / "mnist_cnn/esp32s3/manifest.json").read_text() == before


# --------------------------------------------------------------------------- a model with hostile names


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hostile")
    return make_hostile_model(folder)


def artifact_of(out: Path) -> Path:
    (model_dir,) = [p for p in out.iterdir() if p.is_dir()]
    return model_dir / "esp32s3"


def build_with_calib(out: Path, model: Path, calib: Path, *options: str) -> Path:
    """`edgedeploy build MODEL --target esp32s3 --calib CALIB OPTIONS...` into `out` succeeds; the artifact folder."""
    proc = run_cli("build", str(model), "--target", "esp32s3", "--out", str(out), "--calib", str(calib), *options)
    assert proc.returncode == 0, proc.stderr
    return artifact_of(out)


@toolchain
def test_hostile_model_with_named_int16_layers(tmp_path, hostile):
    model, calib, names = hostile
    artifact = build_with_calib(tmp_path, model, calib, "--eval", str(calib), "--espdl-int16-layers", names["conv"])
    quant = json.loads((artifact / "quantization.json").read_text())
    # The named layer and the activation after it moved to int16, reported under their ONNX names.
    assert quant["int16_layers"][:2] == [names["conv"], names["relu"]]
    by_name = {layer["onnx_node"]: layer for layer in quant["layers"]}
    assert by_name[names["conv"]]["precision"] == "int16" and by_name[names["gemm"]]["precision"] == "int8"
    assert {op["quant_type"] for op in quant["espdl_ops"]} >= {"S16", "S8"}
    # No labels: fidelity only, on the data given.
    acc = json.loads((artifact / "report.json").read_text())["accuracy"]
    assert acc["metric"] == "fidelity" and "before" not in acc
    assert acc["fidelity"][names["output"]]["cosine"] > 0.95
    header = (artifact / "firmware/main/edgedeploy_model.h").read_text()
    assert "\n#include <evil.h>" not in header and HOSTILE not in header


@toolchain
def test_auto_mixed_precision_moves_layers_until_the_target(tmp_path, hostile):
    model, calib, names = hostile
    artifact = build_with_calib(tmp_path, model, calib, "--espdl-int16-layers", "auto=70")
    quant = json.loads((artifact / "quantization.json").read_text())
    auto = quant["int16_auto"]
    assert auto["target_snr_db"] == 70
    steps = auto["steps"]
    assert len(steps) >= 2 and steps[0]["int16_layers"] == []
    assert steps[1]["worst_layer"] in (names["conv"], names["gemm"])
    assert steps[-1]["output_snr_db"] > steps[0]["output_snr_db"] + 10  # int16 layers cut the error
    assert quant["int16_layers"] == steps[-1]["int16_layers"]
    assert auto["reached"] == (steps[-1]["output_snr_db"] >= 70)


@toolchain
def test_int16_precision(tmp_path, hostile):
    model, calib, _ = hostile
    artifact = build_with_calib(tmp_path, model, calib, "--precision", "int16")
    quant = json.loads((artifact / "quantization.json").read_text())
    assert quant["platform"] == "ESPDL_S3_INT16"
    assert {op["quant_type"] for op in quant["espdl_ops"]} == {"S16"}
    assert quant["output_snr_db"] > 50


@toolchain
@pytest.mark.parametrize(
    "extra,message",
    [
        (["--precision", "fp16"], "builds int8 or int16"),
        (["--precision", "int16", "--espdl-int16-layers", "auto"], "leave it out with --precision int16"),
        (["--espdl-int16-layers", "no such node"], "has no node named"),
        (["--espdl-int16-layers", "auto=loud"], "not a number"),
        ([], "needs calibration data"),
    ],
)
def test_bad_options_fail_with_one_sentence(tmp_path, hostile, extra, message):
    model, calib, _ = hostile
    args = ["build", str(model), "--target", "esp32s3", "--out", str(tmp_path)]
    if message != "needs calibration data":
        args += ["--calib", str(calib)]
    proc = run_cli(*args, *extra, timeout=120)
    assert proc.returncode != 0
    assert message in proc.stderr and "Traceback" not in proc.stderr
    assert not any(p.name == "esp32s3" for p in tmp_path.rglob("*"))  # nothing half-built in place


def test_batch_probe_tells_batchable_models_from_batch_one_models():
    """The reference's probe: a Flatten model runs in batches, a Reshape to [1, -1] does not."""
    from edgedeploy.measure.reference import ReferenceRunner

    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)

    def model(tail_nodes, inits):
        w = numpy_helper.from_array(rng.standard_normal((2, 1, 3, 3)).astype(np.float32), "w")
        nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1])] + tail_nodes
        graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 4, 4])], [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [w] + inits)
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
        m.ir_version = 7
        return m

    data = {"x": rng.random((3, 1, 4, 4), dtype=np.float32)}
    flatten = model([helper.make_node("Flatten", ["c"], ["y"], axis=1)], [])
    reshape = model([helper.make_node("Reshape", ["c", "s"], ["y"])], [numpy_helper.from_array(np.array([1, -1], dtype=np.int64), "s")])
    assert ReferenceRunner(flatten).accepts_batches(data) is True
    assert ReferenceRunner(reshape).accepts_batches(data) is False
    ref = ReferenceRunner(flatten).run(data)
    assert ref.batch_size == 32  # the batch-free copy, several samples per run
    one_by_one = np.concatenate([ReferenceRunner(flatten).session.run(None, {"x": data["x"][i : i + 1]})[0] for i in range(3)])
    assert ref.outputs["y"].shape == (3, 32) and np.allclose(ref.outputs["y"], one_by_one, atol=1e-6)
    assert ReferenceRunner(reshape).run(data).batch_size == 1


def test_calibration_batches_leave_esp_ppq_its_minimum_of_steps():
    """esp-ppq refuses fewer than 8 calibration steps: 16 samples are 8 steps of 2, not one step of 32."""
    from edgedeploy.targets.espdl.worker_verdict import MIN_CALIB_STEPS

    assert espdl_build.calibration_batch(16, batchable=True) == 2
    assert espdl_build.calibration_batch(256, batchable=True) == 32  # the sample: 8 steps of 32, as before
    assert espdl_build.calibration_batch(1000, batchable=True) == espdl_build.CALIB_BATCH
    assert espdl_build.calibration_batch(16, batchable=False) == 1
    for samples in (8, 9, 15, 63, 64, 100):
        assert samples // espdl_build.calibration_batch(samples, True) >= MIN_CALIB_STEPS
    # the target asks the core for esp-ppq's real minimum before the toolchain runs
    from edgedeploy.targets.espdl import TARGET

    need = TARGET.calibration_need(TARGET.chip("esp32s3"), "int8")
    assert need.required and need.minimum_samples == MIN_CALIB_STEPS


# --------------------------------------------------------------------------- activation calibration


CORPUS = Path(__file__).parent / "fixtures" / "corpus"


@toolchain
def test_calib_method_auto_keeps_minmax_where_kl_clips_a_trained_model_s_outputs_away(tmp_path):
    """mnist_box_and_class (a trained two-output CNN from the corpus): esp-ppq's default KL
    calibration leaves its class output at about 0 dB SNR (top-1 0.875 -> 0.23, the figure the
    corpus sweep measured); auto tries minmax too, keeps it, and the accuracy comes back."""
    model = CORPUS / "mnist_box_and_class.onnx"
    calib, evaluation = CORPUS / "mnist_box_and_class.calib.npz", CORPUS / "mnist_box_and_class.eval.npz"
    default = run_cli("build", str(model), "--target", "esp32s3", "--out", str(tmp_path / "kl"), "--calib", str(calib), "--eval", str(evaluation))
    assert default.returncode == 0, default.stderr
    assert "--espdl-calib-method auto also tries minmax" in default.stderr  # the hint, with the default
    kl = json.loads((artifact_of(tmp_path / "kl") / "report.json").read_text())
    assert kl["quantization"]["calibration"] == {"requested": "kl", "method": "kl", "tried": [], "auto_below_snr_db": None}
    assert kl["quantization"]["output_snr_db"] < espdl_build.CALIB_AUTO_SNR_DB

    auto_dir = tmp_path / "auto"
    proc = run_cli("build", str(model), "--target", "esp32s3", "--out", str(auto_dir), "--calib", str(calib), "--eval", str(evaluation), "--espdl-calib-method", "auto")
    assert proc.returncode == 0, proc.stderr
    artifact = artifact_of(auto_dir)
    report = json.loads((artifact / "report.json").read_text())
    calibration = report["quantization"]["calibration"]
    assert calibration["requested"] == "auto" and calibration["method"] == "minmax"
    assert [t["method"] for t in calibration["tried"]] == ["kl", "minmax"]
    kl_snr, minmax_snr = (t["output_snr_db"] for t in calibration["tried"])
    assert kl_snr == pytest.approx(kl["quantization"]["output_snr_db"], abs=0.01)
    assert minmax_snr > kl_snr + 10 and report["quantization"]["output_snr_db"] == pytest.approx(minmax_snr)
    before, after = report["accuracy"]["before"]["top1"], report["accuracy"]["after"]["top1"]
    assert kl["accuracy"]["after"]["top1"] < before - 0.3  # what KL costs
    assert after >= before - 0.05  # what minmax keeps
    assert json.loads((artifact / "manifest.json").read_text())["espdl"]["calib_method"] == "minmax"
    assert "kept minmax" in proc.stderr
    check_manifest(artifact)


# --------------------------------------------------------------------------- a model the chip cannot load


def make_max_of_two_convs(folder: Path) -> tuple[Path, Path]:
    """Element-wise Max of two Conv outputs (fresh7's FRN form): esp-ppq 1.3.12 exports the Max as an
    int8 layer of type Max, which ESP-DL 3.3.9's runtime has no module for. With calibration data."""
    import numpy as np
    from onnx import helper

    from tests.helpers import const, make_model, save, tensor

    rng = np.random.default_rng(0)
    weights = [const(w, (rng.standard_normal((4, 1, 3, 3)) * 0.3).astype(np.float32)) for w in ("wa", "wb")]
    nodes = [
        helper.make_node("Conv", ["x", "wa"], ["a"], name="conv_a", pads=[1, 1, 1, 1]),
        helper.make_node("Conv", ["x", "wb"], ["b"], name="conv_b", pads=[1, 1, 1, 1]),
        helper.make_node("Max", ["a", "b"], ["y"], name="max_ab"),
    ]
    model = save(make_model(nodes, [tensor("x", [1, 1, 8, 8])], [tensor("y", [1, 4, 8, 8])], weights), folder / "max_of_convs.onnx")
    calib = folder / "max_calib.npz"
    np.savez(calib, x=rng.random((16, 1, 8, 8), dtype=np.float32))
    return model, calib


@toolchain
def test_an_op_type_the_esp_dl_runtime_cannot_load_fails_the_build(tmp_path):
    """esp-ppq converts the Max, but the firmware's loader would stop at it ("Do not support Max"):
    the build fails with the toolchain family's exit code, naming the op type, the node and ESP-DL's
    version, and no artifact is left in place (the attempt is kept as esp32s3.failed)."""
    model, calib = make_max_of_two_convs(tmp_path)
    out = tmp_path / "out"
    proc = run_cli("build", str(model), "--target", "esp32s3", "--out", str(out), "--calib", str(calib), timeout=300)
    assert proc.returncode == 9, proc.stderr
    assert "ESP32-S3 cannot load it: ESP-DL 3.3.9 registers no module for Max (node 'max_ab')" in proc.stderr
    assert "Traceback" not in proc.stderr
    folder = out / "max_of_convs"
    assert not (folder / "esp32s3").exists() and (folder / "esp32s3.failed" / "build.log").exists()


@toolchain
def test_audit_confirm_reads_such_a_model_as_the_toolchain_s_refusal(tmp_path):
    """`audit --confirm` reads the chip's truth as the build does: the refusal, agreeing with the audit's unsupported Max."""
    model, _ = make_max_of_two_convs(tmp_path)
    out = tmp_path / "audit.json"
    proc = run_cli("audit", str(model), "--target", "esp32s3", "--confirm", "--format", "json", "-o", str(out), timeout=300)
    assert proc.returncode == 0, proc.stderr
    (audit,) = json.loads(out.read_text())["audits"]
    comparison = audit["confirm"]["comparison"]
    assert comparison["toolchain_failed"].startswith("ESP-DL 3.3.9 registers no module for Max (node 'max_ab')")
    assert comparison["agree"] == 1
    assert audit["confirm"]["verdict"]["nodes"]["max_ab"]["placement"] == "accelerator"  # esp-ppq's own placement, kept beside
