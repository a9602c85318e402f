"""`edgedeploy build --target <rknn chip>` end to end with the real rknn-toolkit2 (the rknn env).

The sample converts for every chip; the report has the audit, the toolkit's verdict beside it,
and accuracy before (ONNX Runtime fp32) and after (RKNN simulator) on the same inputs.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from edgedeploy.audit.rules import Placement
from edgedeploy.sample import sample_model_path
from edgedeploy.targets import find_chip
from tests.helpers import conv_model, run_cli, save

pytestmark = pytest.mark.toolchain("rknn")

CHIPS = ("rk3588", "rk3576", "rk3568", "rk3566", "rk3562", "rv1106")
FIXTURES = Path(__file__).parent / "fixtures" / "rknn"
# Small splits keep the six builds fast; the figures are still real ones on real digits.
CALIB = "64"
EVAL = "200"


@pytest.fixture(scope="module")
def sample_builds(tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("rknn-builds")
    args = ["build", "--out", str(out), "--calib-count", CALIB, "--eval-count", EVAL, "--rknn-analyse", "--format", "json"]
    for chip in CHIPS:
        args += ["--target", chip]
    proc = run_cli(*args, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    return {b["chip"]: Path(b["artifact"]) for b in result["builds"]}


@pytest.mark.parametrize("chip", CHIPS)
def test_sample_converts_for_every_chip(sample_builds, chip):
    art = sample_builds[chip]
    manifest = json.loads((art / "manifest.json").read_text())
    report = json.loads((art / "report.json").read_text())
    assert (art / "model.rknn").stat().st_size > 10_000
    assert manifest["rknn"]["toolkit_version"] == "2.5.0" and manifest["rknn"]["target_platform"] == chip
    assert manifest["files"]["model.rknn"]["sha256"] == manifest["rknn"]["rknn_sha256"]
    assert "Network Layer Information Table" in (art / "build.log").read_text(errors="replace")
    # Mean/std from the sample's preprocessing: pixels 0..255 become the [0, 1] the model expects.
    assert report["convert"]["details"]["normalisation"]["std_values"] == [[255.0]]
    # Accuracy before and after, same inputs, scoped.
    acc = report["accuracy"]
    assert acc["samples"] == int(EVAL) and acc["metric"] == "top1"
    assert 0.9 < acc["before"]["top1"] <= 1.0
    assert abs(acc["after"]["top1"] - acc["before"]["top1"]) <= 0.02
    assert acc["fidelity"]["logits"]["cosine"] > 0.999
    assert acc["after_backend"].startswith("RKNN simulator") and acc["status"] == "done"
    # The toolkit's verdict beside the audit: the sample is entirely on the NPU, and they agree.
    verdict = report["toolchain_verdict"]
    assert verdict["failed"] is None and verdict["agreement"] == 1.0 and verdict["compared"] == 13
    assert "estimate" in verdict["estimates"]["label"] and verdict["estimates"]["cycles_total_estimate"] > 0
    assert report["audit"]["summary"]["on_accelerator"] == 13


def test_analyse_maps_per_layer_cosine_to_onnx_nodes(sample_builds):
    report = json.loads((sample_builds["rk3588"] / "report.json").read_text())
    analysis = report["accuracy_analysis"]
    nodes = analysis["nodes"]
    assert {"/features/features.0/Conv", "/features/features.1/Relu", "/classifier/classifier.3/Gemm"} <= set(nodes)
    for figures in nodes.values():
        assert 0.9 < figures["entire_cosine"] <= 1.0 and 0.9 < figures["single_cosine"] <= 1.0
    assert (sample_builds["rk3588"] / "accuracy_analysis.txt").is_file()


def test_precision_refusals(tmp_path):
    proc = run_cli("build", "--target", "rv1106", "--precision", "fp16", "--out", str(tmp_path))
    assert proc.returncode == 2 and "RV1106 builds int8, not fp16" in proc.stderr and "Traceback" not in proc.stderr
    proc = run_cli("build", "--target", "rk3588", "--precision", "fp32", "--out", str(tmp_path / "b"))
    assert proc.returncode == 2 and "int8 or fp16" in proc.stderr


def test_int8_of_a_user_model_needs_calibration_data(tmp_path):
    model = save(conv_model(cin=3, h=16, w=16, cout=4), tmp_path / "conv.onnx")
    proc = run_cli("build", str(model), "--target", "rk3588", "--out", str(tmp_path / "out"))
    assert proc.returncode == 2 and "needs calibration data" in proc.stderr
    np.savez(tmp_path / "calib.npz", x=np.random.default_rng(0).random((8, 1, 3, 16, 16)).astype(np.float32).reshape(8, 3, 16, 16))
    proc = run_cli("build", str(model), "--target", "rk3588", "--calib", str(tmp_path / "calib.npz"), "--out", str(tmp_path / "out2"))
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads((tmp_path / "out2" / "conv" / "rk3588" / "report.json").read_text())
    assert report["accuracy"]["status"] == "skipped" and report["toolchain_verdict"]["agreement"] == 1.0


def test_batched_verdicts_in_one_worker(tmp_path):
    target, _ = find_chip("rk3588")
    models = [sample_model_path(), FIXTURES / "test_softmax_axis_0.onnx", FIXTURES / "test_sin.onnx", FIXTURES / "test_gemm_default_no_bias.onnx"]
    verdicts = target.toolchain_verdicts(models, "rk3588", tmp_path / "v", tmp_path / "v.log")
    assert len(verdicts) == 4
    assert verdicts[0].failed is None and verdicts[0].nodes["/features/features.0/Conv"].placement is Placement.ACCELERATOR
    assert verdicts[1].nodes["Softmax_0"].placement is Placement.FLOAT
    assert verdicts[2].failed and "opset" in verdicts[2].failed
    assert verdicts[3].nodes["Gemm_0"].placement is Placement.ACCELERATOR
    # One worker process for all of them.
    assert (tmp_path / "v.log").read_text().count("worker finished") == 1


# A fixed sample of ONNX node tests across the kinds of rule (NPU ops, CPU fallbacks, float16 on
# the NPU, refused inputs and opsets). scripts/rknn_node_agreement.py runs all of them and writes
# the figures to docs/agreement/rknn.md (single-operator tests: 0.997 on five chips, 0.89 on RV1106).
NODE_TEST_SAMPLE = (
    "test_abs", "test_add", "test_add_bcast", "test_and2d", "test_argmax_default_axis_example", "test_concat_2d_axis_0",
    "test_div", "test_dropout_default_old", "test_exp", "test_gather_0", "test_gemm_default_no_bias", "test_gemm_alpha",
    "test_greater", "test_hardmax_axis_0", "test_leakyrelu", "test_matmul_2d", "test_matmul_bcast", "test_max_example",
    "test_min_example", "test_neg", "test_pow", "test_reciprocal", "test_relu", "test_resize_upsample_scales_nearest",
    "test_sigmoid", "test_slice", "test_softmax_axis_0", "test_split_equal_parts_1d_opset13", "test_sub", "test_sum_example",
    "test_tanh", "test_where_example", "test_add_int16", "test_acos", "test_clip", "test_layer_normalization_2d_axis0",
    "test_mean_example", "test_batchnorm_epsilon_training_mode", "test_reduce_mean_keepdims_example", "test_sum_one_input",
)  # fmt: skip
AGREEMENT_FLOOR = 0.99


@pytest.fixture(scope="module")
def node_test_cases(tmp_path_factory):
    from edgedeploy.targets.rknn.agreement import write_node_tests

    cases = write_node_tests(tmp_path_factory.mktemp("node-tests"), list(NODE_TEST_SAMPLE))
    assert len(cases) == len(NODE_TEST_SAMPLE)
    return cases


@pytest.mark.parametrize("chip", ["rk3588", "rk3566"])
def test_rules_agree_with_the_toolkit_on_node_tests(tmp_path, node_test_cases, chip):
    from edgedeploy.targets.rknn.agreement import measure

    cases = node_test_cases
    target, _ = find_chip(chip)
    single = measure(target, chip, cases, tmp_path / chip)["single"]
    assert single.models == len(NODE_TEST_SAMPLE) and single.models_failed >= 6
    assert single.rate >= AGREEMENT_FLOOR, single.disagreements


def test_the_toolkits_own_disable_rules_advice_is_followed_and_recorded(tmp_path, monkeypatch):
    """rknn-toolkit2 crashes in a fusion rule and names it in its build log; the worker disables it and
    builds again, rule after rule, and records every rule it disabled (the log is a real one: yolo11n)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("rknn_worker_under_test", Path(__file__).parent.parent / "targets" / "rknn" / "worker.py")
    worker = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(worker)
    real_log = (FIXTURES / "disable_rules_advice.txt").read_text()
    first, second = real_log.split("Rule: fuse_exmatmul_add_mul_exsoftmax13", 1)
    out = tmp_path / "build_output.txt"
    attempts = []

    def fake_build_once(request, case, ctx, output_path, dataset, export_path, disable_rules):
        attempts.append(list(disable_rules))
        if len(attempts) == 1:
            Path(output_path).write_text(first)  # the first crash and its advice
            raise ValueError("IndexError: list index out of range")
        if len(attempts) == 2:
            Path(output_path).write_text("Rule: fuse_exmatmul_add_mul_exsoftmax13" + second)
            raise ValueError("IndexError: list index out of range")
        return "built"

    class Ctx:
        def log(self, message):
            pass

    monkeypatch.setattr(worker, "_build_once", fake_build_once)
    monkeypatch.setattr(worker, "_toolkit_version", lambda: "2.5.0")
    rknn, workarounds = worker._build_following_advice({}, {}, Ctx(), str(out), None)
    assert rknn == "built"
    assert attempts == [[], ["seperate_conv_rs_split"], ["seperate_conv_rs_split", "fuse_exmatmul_add_mul_exsoftmax13_exmatmul_to_sdpa"]]
    (applied,) = workarounds
    assert "seperate_conv_rs_split" in applied["name"] and "advises" in applied["why"] and "2.5.0" in applied["source"]

    # No advice in the log: the failure is the toolchain's, as it said it.
    def always_fails(*args):
        Path(args[3]).write_text("E build: something else broke\n")
        raise ValueError("boom")

    monkeypatch.setattr(worker, "_build_once", always_fails)
    with pytest.raises(ValueError, match="boom"):
        worker._build_following_advice({}, {}, Ctx(), str(out), None)


def test_a_tensor_in_the_toolkits_error_is_named_by_its_node():
    """rknn-toolkit2 says `KeyError: '/gru/GRU_output_1'`; the sentence names the node producing it."""
    from onnx import helper

    from edgedeploy.targets.rknn.convert import with_failing_node

    graph = helper.make_graph(
        [helper.make_node("GRU", ["x", "w", "r"], ["/gru/GRU_output_0", "/gru/GRU_output_1"], name="/gru/GRU")], "g", [], []
    )
    from edgedeploy.errors import ToolchainFailed

    said = ToolchainFailed("The rknn toolchain failed", toolchain="rknn", final_line="KeyError: '/gru/GRU_output_1'", source_location="rknn-toolkit2's fold_constant", log_path="x")
    named = with_failing_node(said, graph)
    assert (named.node, named.op_type, named.final_line, named.log_path) == ("/gru/GRU", "GRU", said.final_line, "x")
    assert str(named) == "The rknn toolchain failed at node '/gru/GRU' (GRU): KeyError: '/gru/GRU_output_1' (in rknn-toolkit2's fold_constant) (full log: x)."
    other = said.replace(final_line="ValueError: Not support 'Dropout' of opset-9!")
    assert with_failing_node(other, graph) is other


def test_a_refusal_the_audit_foresaw_names_the_node_and_the_workaround(tmp_path):
    """rknn-toolkit2 2.5.0 refuses an opset-9 Dropout with a mask output without naming the node;
    the build's failure adds the node and the rule's workaround, and --fix takes it (remove_dropout)."""
    from onnx import TensorProto, helper, numpy_helper

    weight = numpy_helper.from_array(np.random.default_rng(0).standard_normal((4, 3, 3, 3)).astype(np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]), helper.make_node("Dropout", ["c"], ["y", "mask"], name="head_dropout", ratio=0.5)],
        "dropout9",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])],
        initializer=[weight],
    )
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 9)])
    proto.ir_version = 4
    model = save(proto, tmp_path / "dropout9.onnx")
    np.savez(tmp_path / "calib.npz", x=np.random.default_rng(1).standard_normal((8, 3, 8, 8)).astype(np.float32))
    common = ("build", str(model), "--target", "rk3588", "--calib", str(tmp_path / "calib.npz"))
    proc = run_cli(*common, "--out", str(tmp_path / "out"), "--format", "json")
    assert proc.returncode == 9, proc.stderr[-2000:]
    error = [line for line in proc.stderr.splitlines() if line.startswith("error:")][-1]
    assert "Not support 'Dropout' of opset-9" in error  # the toolchain's own words
    assert "node 'head_dropout' (Dropout)" in error and "edgedeploy fix" in error
    # --format json prints the summary of the chip that failed too: its status and the same sentence.
    [entry] = json.loads(proc.stdout)["builds"]
    assert (entry["chip"], entry["status"], entry["exit_code"]) == ("rk3588", "failed", 9) and error == f"error: {entry['reason']}"
    assert entry["failed_folder"] == str(tmp_path / "out" / "dropout9" / "rk3588.failed")
    proc = run_cli(*common, "--fix", "--out", str(tmp_path / "fixed"))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (tmp_path / "fixed" / "dropout9" / "rk3588" / "model.rknn").is_file()
