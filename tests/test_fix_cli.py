"""`edgedeploy fix` and `build --fix` on models built to trip known fallbacks, judged by the
audit's real rule tables and, where the toolchain is installed, by the toolchain's own verdict."""

from __future__ import annotations

import json
import math

import numpy as np
import onnx
import pytest
from onnx import helper

from tests.helpers import const, make_model, run_cli, save, tensor


def gelu_cnn(path):
    """Conv -> Erf-based GELU (as PyTorch exports nn.GELU at opset 13) -> pooling -> classifier, on MNIST-shaped input."""
    rng = np.random.default_rng(0)
    nodes = [
        helper.make_node("Conv", ["input", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("Div", ["c", "sqrt2"], ["d"], name="gelu_div"),
        helper.make_node("Erf", ["d"], ["e"], name="gelu_erf"),
        helper.make_node("Add", ["e", "one"], ["a"], name="gelu_add"),
        helper.make_node("Mul", ["c", "a"], ["m"], name="gelu_mul"),
        helper.make_node("Mul", ["m", "half"], ["g"], name="gelu_half"),
        helper.make_node("GlobalAveragePool", ["g"], ["p"], name="gap"),
        helper.make_node("Flatten", ["p"], ["f"], name="flatten"),
        helper.make_node("Gemm", ["f", "fw", "fb"], ["logits"], name="fc", transB=1),
    ]
    inits = [
        const("w", rng.standard_normal((8, 1, 3, 3)).astype(np.float32)),
        const("b", np.zeros(8, np.float32)),
        const("sqrt2", np.array(math.sqrt(2), np.float32)),
        const("one", np.array(1, np.float32)),
        const("half", np.array(0.5, np.float32)),
        const("fw", rng.standard_normal((10, 8)).astype(np.float32)),
        const("fb", np.zeros(10, np.float32)),
    ]
    return save(make_model(nodes, [tensor("input", [1, 1, 28, 28])], [tensor("logits", [1, 10])], inits), path)


@pytest.fixture
def sample_eval():
    from edgedeploy.sample import sample_eval_path

    return str(sample_eval_path())


def test_fix_needs_allow_approx_for_tanh_gelu_on_espdl(tmp_path, sample_eval):
    model = gelu_cnn(tmp_path / "gelu.onnx")
    out = tmp_path / "fixed.onnx"
    result = run_cli("fix", str(model), "--target", "esp32s3", "--eval", sample_eval, "--out", str(out), "--format", "json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["applied"] == []  # ESP-DL has no Gelu operator: only the approximation helps
    assert any(a["rewrite"] == "erf_gelu_to_tanh" and "--allow-approx" in a["reason"] for a in report["not_applied"])
    assert report["chips"]["esp32s3"]["before"]["unsupported"] == 1


def test_fix_moves_erf_gelu_onto_espdl_with_allow_approx(tmp_path, sample_eval):
    model = gelu_cnn(tmp_path / "gelu.onnx")
    out = tmp_path / "fixed.onnx"
    result = run_cli("fix", str(model), "--target", "esp32s3", "--target", "esp32p4", "--allow-approx", "--eval", sample_eval, "--out", str(out), "--format", "json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert [a["rewrite"] for a in report["applied"]] == ["erf_gelu_to_tanh"]
    for chip in ("esp32s3", "esp32p4"):
        after = report["chips"][chip]["after"]
        assert after["unsupported"] == 0 and after["fallback"] == 0 and after["on_accelerator"] == after["nodes"]
    fid = report["fidelity"]["per_output"]["logits"]
    assert fid["cosine"] > 0.9999 and 0 < fid["max_abs_error"] < 1e-3
    assert onnx.load(str(out)).graph.node and not any(n.op_type == "Erf" for n in onnx.load(str(out)).graph.node)
    # Never overwrite without --force.
    again = run_cli("fix", str(model), "--target", "esp32s3", "--allow-approx", "--eval", sample_eval, "--out", str(out))
    assert again.returncode == 11 and "--force" in again.stderr  # ArtifactError


def test_fix_exact_gelu_for_jetson_dla_is_refused_when_it_only_merges_nodes(tmp_path):
    model = gelu_cnn(tmp_path / "gelu.onnx")
    result = run_cli("fix", str(model), "--target", "jetson-orin-nx", "--out", str(tmp_path / "f.onnx"), "--format", "json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    for attempt in report["applied"]:
        assert attempt["exact"]  # no approximation without --allow-approx


def test_fix_unknown_rewrite_and_list():
    assert run_cli("fix", "--target", "esp32s3", "--rewrite", "nope").returncode == 2
    listed = run_cli("fix", "--target", "esp32s3", "--list", "--format", "json")
    assert {"erf_gelu_to_gelu", "erf_gelu_to_tanh", "fold_batchnorm"} <= {r["name"] for r in json.loads(listed.stdout)["rewrites"]}


@pytest.mark.toolchain("espdl")
def test_fix_confirmed_by_esp_ppq(tmp_path, sample_eval):
    """esp-ppq's own verdict agrees: after the rewrite every node is quantised, none left in float."""
    model = gelu_cnn(tmp_path / "gelu.onnx")
    result = run_cli("fix", str(model), "--target", "esp32s3", "--allow-approx", "--confirm", "--eval", sample_eval, "--out", str(tmp_path / "f.onnx"), "--format", "json")
    assert result.returncode == 0, result.stderr
    confirmed = json.loads(result.stdout)["confirmed"]["esp32s3"]
    before = confirmed["before"]["verdict"]["nodes"]
    after = confirmed["after"]["verdict"]["nodes"]
    assert before["gelu_erf"]["placement"] == "float"  # esp-ppq kept the Erf in float
    assert after and all(v["placement"] == "accelerator" for v in after.values())
    assert confirmed["after"]["comparison"]["disagreements"] == []


@pytest.mark.toolchain("espdl")
def test_build_with_fix_converts_a_model_espdl_cannot_load(tmp_path, sample_eval):
    model = gelu_cnn(tmp_path / "gelu.onnx")
    from edgedeploy.sample import sample_calibration_path

    result = run_cli(
        "build", str(model), "--target", "esp32s3", "--fix", "--allow-approx", "--out", str(tmp_path / "out"),
        "--calib", str(sample_calibration_path()), "--eval", sample_eval, "--eval-count", "200", "--format", "json",
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)["builds"][0]["report"]
    assert [a["rewrite"] for a in report["fix"]["applied"]] == ["erf_gelu_to_tanh"]
    assert report["model"]["source_sha256"] != report["model"]["sha256"]
    artifact_model = onnx.load(str(tmp_path / "out" / "gelu" / "esp32s3" / "model.onnx"))
    assert not any(n.op_type == "Erf" for n in artifact_model.graph.node)


def test_fix_uses_the_exact_gelu_operator_for_ethos_u(tmp_path, sample_eval):
    """Ethos-U (through onnx2tf) runs TFLite's GELU builtin: the exact rewrite suffices there."""
    model = gelu_cnn(tmp_path / "gelu.onnx")
    result = run_cli("fix", str(model), "--target", "imx93", "--eval", sample_eval, "--out", str(tmp_path / "f.onnx"), "--format", "json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert [a["rewrite"] for a in report["applied"]] == ["erf_gelu_to_gelu"]
    assert report["chips"]["imx93"]["before"]["unsupported"] == 1
    after = report["chips"]["imx93"]["after"]
    assert after["on_accelerator"] == after["nodes"]
    assert report["fidelity"]["per_output"]["logits"]["max_abs_error"] < 1e-5
    fixed = onnx.load(str(tmp_path / "f.onnx"))
    assert any(n.op_type == "Gelu" for n in fixed.graph.node)
    assert any(i.version >= 20 for i in fixed.opset_import if i.domain in ("", "ai.onnx"))
    # The whole model moved to opset 20 for the Gelu operator: the report says so, from and to.
    change = report["opset_change"]
    assert (change["from"], change["to"], change["by"]) == (13, 20, ["erf_gelu_to_gelu"])
    assert report["model"]["opset"] == 13 and report["fixed_model"]["opset"] == 20


def test_fix_says_in_its_output_that_it_raised_the_opset(tmp_path, sample_eval):
    model = gelu_cnn(tmp_path / "gelu.onnx")
    result = run_cli("fix", str(model), "--target", "imx93", "--eval", sample_eval, "-o", str(tmp_path / "f.onnx"))
    assert result.returncode == 0, result.stderr
    assert "opset raised: 13 -> 20 for erf_gelu_to_gelu" in result.stdout and "must support opset 20" in result.stdout


def test_fix_list_needs_no_target():
    result = run_cli("fix", "--list", "--format", "json")
    assert result.returncode == 0, result.stderr
    rows = {r["name"]: r for r in json.loads(result.stdout)["rewrites"]}
    assert rows["erf_gelu_to_gelu"]["min_opset"] == 20 and rows["fold_batchnorm"]["min_opset"] is None


@pytest.mark.toolchain("eiq")
def test_fix_confirmed_by_vela(tmp_path, sample_eval):
    """The real toolchain agrees: before, onnx2tf needs FlexErf and full-int8 fails; after, Vela
    puts every reported operator on the Ethos-U65."""
    model = gelu_cnn(tmp_path / "gelu.onnx")
    result = run_cli("fix", str(model), "--target", "imx93", "--confirm", "--eval", sample_eval, "--out", str(tmp_path / "f.onnx"), "--format", "json")
    assert result.returncode == 0, result.stderr
    confirmed = json.loads(result.stdout)["confirmed"]["imx93"]
    assert "Erf" in (confirmed["before"]["verdict"]["failed"] or "")
    after = confirmed["after"]["verdict"]
    assert after["failed"] is None and after["nodes"]
    assert all(v["placement"] == "accelerator" for v in after["nodes"].values())
    assert confirmed["after"]["comparison"]["disagreements"] == []


def mish_cnn(path):
    """Conv -> Mish (opset 18) -> pooling -> classifier, on MNIST-shaped input."""
    rng = np.random.default_rng(1)
    nodes = [
        helper.make_node("Conv", ["input", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("Mish", ["c"], ["m"], name="mish"),
        helper.make_node("GlobalAveragePool", ["m"], ["p"], name="gap"),
        helper.make_node("Flatten", ["p"], ["f"], name="flatten"),
        helper.make_node("Gemm", ["f", "fw", "fb"], ["logits"], name="fc", transB=1),
    ]
    inits = [
        const("w", rng.standard_normal((8, 1, 3, 3)).astype(np.float32)),
        const("b", np.zeros(8, np.float32)),
        const("fw", rng.standard_normal((10, 8)).astype(np.float32)),
        const("fb", np.zeros(10, np.float32)),
    ]
    return save(make_model(nodes, [tensor("input", [1, 1, 28, 28])], [tensor("logits", [1, 10])], inits, opset=18), path)


def test_fix_moves_mish_onto_the_rknpu(tmp_path, sample_eval):
    model = mish_cnn(tmp_path / "mish.onnx")
    result = run_cli("fix", str(model), "--target", "rk3588", "--eval", sample_eval, "--out", str(tmp_path / "f.onnx"), "--format", "json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert [a["rewrite"] for a in report["applied"]] == ["mish_to_softplus_tanh"]
    assert report["chips"]["rk3588"]["before"]["fallback"] == 1
    assert report["chips"]["rk3588"]["after"]["fallback"] == 0


@pytest.mark.toolchain("rknn")
def test_fix_confirmed_by_rknn_toolkit(tmp_path, sample_eval):
    """rknn-toolkit2's layer table agrees: Mish runs on the CPU before, everything on the NPU after."""
    model = mish_cnn(tmp_path / "mish.onnx")
    result = run_cli("fix", str(model), "--target", "rk3588", "--confirm", "--eval", sample_eval, "--out", str(tmp_path / "f.onnx"), "--format", "json")
    assert result.returncode == 0, result.stderr
    confirmed = json.loads(result.stdout)["confirmed"]["rk3588"]
    assert confirmed["before"]["verdict"]["nodes"]["mish"]["placement"] == "fallback"
    after = confirmed["after"]["verdict"]["nodes"]
    assert after and all(v["placement"] == "accelerator" for v in after.values())
    assert confirmed["after"]["comparison"]["disagreements"] == []
