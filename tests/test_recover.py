"""`build --recover`: the accuracy gates of --fail-on as goals, the target's knobs tried cheapest first.

The loop (edgedeploy.pipeline.recover) on a stand-in target whose builds write reports with
figures that depend on its options, so the order, the chaining of stages and the choice can be
checked in milliseconds; then the real case: mnist_box_and_class on esp32s3, which int8 with
esp-ppq's default KL calibration collapses (-64 pp of top-1), built with --recover until it loses
at most 1 pp (esp-ppq builds and one diagnosis: minutes on this machine).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from edgedeploy.errors import ToolchainError
from edgedeploy.gates import parse_gates
from edgedeploy.pipeline.recover import RecoverPlan, attempts_table, recover
from edgedeploy.report.schemas import validate
from edgedeploy.targets.base import RANKED_NODES, RepairKnob, TargetOptions, option
from tests.helpers import run_cli

CORPUS = Path(__file__).parent / "fixtures" / "corpus"


@dataclass(frozen=True)
class FakeOptions(TargetOptions):
    method: str | None = option("--fake-method", "calibration", choices=("a", "b", "c"))
    nodes: tuple[str, ...] = option("--fake-nodes", "nodes off int8", multiple=True)


@dataclass(frozen=True)
class FakeChip:
    id: str = "fakechip"


class FakeTarget:
    name = "Fake"

    def __init__(self, knobs):
        self.knobs = knobs

    def repair_knobs(self, chip, precision, options):
        return self.knobs


def fake_report(drop_pp: float, snr: float, size: int = 1000) -> dict:
    return {
        "target": {"chip": "fakechip"},
        "convert": {"status": "built", "size_bytes": {"model": size}},
        "accuracy": {"status": "done", "metric": "top1", "after": {"top1": 0.9 - drop_pp / 100}, "delta_percentage_points": -drop_pp,
                     "fidelity": {"out": {"snr_db": snr, "cosine": 0.99}}},
    }


def write_artifact(folder: Path, report: dict) -> Path:
    folder.mkdir(parents=True)
    (folder / "report.json").write_text(json.dumps(report))
    (folder / "manifest.json").write_text(json.dumps({"files": {}}))
    return folder


def figures_of(options: FakeOptions) -> dict:
    """Method b is the best calibration (still 3 pp off); n1 and n2 in int16 together recover it."""
    drop = {None: 60.0, "a": 10.0, "b": 3.0, "c": 5.0}[options.method]
    if {"n1", "n2"} <= set(options.nodes) and options.method == "b":
        drop = 0.5
    return fake_report(drop, 30.0 - drop, 1000 + 100 * len(options.nodes))


def plan_for(tmp_path, knobs, gates=("accuracy-drop=1",), ranking=("n1", "n2", "n3", "n4", "n5")):
    built, diagnosed = [], []

    def build(out: Path, options: FakeOptions) -> Path:
        built.append(options)
        return write_artifact(out / "model" / "fakechip", figures_of(options))

    def diagnose(artifact: Path) -> dict:
        diagnosed.append(artifact)
        return {"paths": [{"path": "fakechip", "first_sharp_drop": {"node": ranking[0]}, "worst_isolated": [{"node": n} for n in ranking]}]}

    plan = RecoverPlan(FakeTarget(knobs), FakeChip(), "int8", FakeOptions(), parse_gates(list(gates), "build"), build, diagnose, lambda line: None)
    initial = write_artifact(tmp_path / "out" / "model" / "fakechip", figures_of(FakeOptions()))
    return plan, initial, built, diagnosed


KNOBS = [
    RepairKnob("nodes", RANKED_NODES, "mixed-precision", "int16 nodes", max_nodes=4),  # declared out of order: the core orders
    RepairKnob("method", ("a", "b", "c"), "calibration", "calibration method"),
    RepairKnob("method", (), "equalisation", "equalisation", unavailable="the toolchain has none"),
]


def test_cheapest_first_each_stage_from_the_best_and_the_winner_replaces_the_artifact(tmp_path):
    plan, initial, built, diagnosed = plan_for(tmp_path, KNOBS)
    outcome = recover(initial, plan)
    assert outcome.met and outcome.artifact == initial
    # every calibration method, then int16 on 1, then 2 ranked nodes on top of the best method (b)
    assert [(o.method, o.nodes) for o in built] == [("a", ()), ("b", ()), ("c", ()), ("b", ("n1",)), ("b", ("n1", "n2"))]
    assert len(diagnosed) == 1 and diagnosed[0].parent.parent.name == "a2"  # the diagnosis of the best attempt, b
    section = outcome.section
    validate(section)
    assert section["chosen"] == "a5" and section["attempts"][5]["flags"] == "--fake-method b --fake-nodes n1 --fake-nodes n2"
    assert section["attempts"][5]["cost_figures"]["nodes_off_int8"] == 2 and section["attempts"][0]["figures"]["task_metric_drop_pp"] == 60.0
    # the winner's report is now the artifact's; the attempts' scratch folder is gone
    assert json.loads((initial / "report.json").read_text())["convert"]["size_bytes"]["model"] == 1200
    assert not (initial.parent / ".fakechip.recover").exists()
    assert "not tried: equalisation: the toolchain has none" in attempts_table(section)


def test_goals_that_cannot_be_met_keep_the_build_and_say_why(tmp_path):
    plan, initial, built, _ = plan_for(tmp_path, KNOBS[1:], gates=("accuracy-drop=1", "snr=20"))
    outcome = recover(initial, plan)
    assert not outcome.met and len(built) == 3
    assert json.loads((initial / "report.json").read_text())["accuracy"]["delta_percentage_points"] == -60.0  # as built
    assert "cannot be met on fakechip" in outcome.sentence and "equalisation (the toolchain has none)" in outcome.sentence
    assert "the best, a2 (method=b)" in outcome.sentence
    validate(outcome.section)


def test_goals_not_met_name_the_attempts_that_gave_no_figures(tmp_path):
    """An attempt stopped by a time-out (ppocr_rec_v4 on rk3588: mmse past 1800 s) is no answer from
    the toolchain: the sentence says which attempt gave no figures and why, not only "cannot be met"."""
    plan, initial, built, _ = plan_for(tmp_path, KNOBS[1:], gates=("accuracy-drop=1",))
    build = plan.build

    def timing_out(out: Path, options: FakeOptions) -> Path:
        if options.method == "b":
            raise ToolchainError("The fake worker timed out after 1800 s and was stopped: last line")
        return build(out, options)

    plan = RecoverPlan(plan.target, plan.chip, plan.precision, plan.options, plan.gates, timing_out, plan.diagnose, plan.echo)
    outcome = recover(initial, plan)
    assert not outcome.met and outcome.section["attempts"][2]["status"] == "failed"
    assert "no figures from a2 (method=b: The fake worker timed out after 1800 s and was stopped: last line)" in outcome.sentence
    assert "the best, a3 (method=c)" in outcome.sentence
    validate(outcome.section)


def test_a_ranking_longer_than_max_nodes_stops_there(tmp_path):
    knobs = [RepairKnob("nodes", RANKED_NODES, "mixed-precision", "int16 nodes", max_nodes=3)]
    plan, initial, built, _ = plan_for(tmp_path, knobs)
    recover(initial, plan)
    assert [o.nodes for o in built] == [("n1",), ("n1", "n2"), ("n1", "n2", "n3")]


def test_the_ranking_goes_on_with_the_accumulated_falls_where_no_node_falls_sharply(tmp_path):
    """eIQ's diagnosis has no isolated figures and, on a transformer, no sharp fall: the ranking
    continues past the worst three with every node whose accumulated SNR falls, largest first."""
    from edgedeploy.pipeline.recover import ranked_nodes

    nodes = [{"node": "ln", "drop_db": 12.5}, {"node": "mm", "drop_db": 4.2}, {"node": "flat", "drop_db": 0.0}, {"node": "emb", "drop_db": 23.9}, {"node": "sq", "drop_db": None}]
    document = {"paths": [{"path": "fakechip", "first_sharp_drop": None, "worst_isolated": [{"node": "emb"}], "nodes": nodes}]}
    assert ranked_nodes(document, "fakechip") == ["emb", "ln", "mm"]
    assert ranked_nodes(document, "otherchip") == [] and ranked_nodes(None, "fakechip") == []


def test_a_recovered_build_keeps_the_diagnosis_of_its_failing_attempt_for_the_report(tmp_path, monkeypatch):
    """The diagnosis recover ran to rank the nodes (of attempt a2, the best calibration, which missed
    the goal) goes into the recovered artifact's report, marked as that attempt's, so `edgedeploy
    report` shows its SNR curve beside the attempts; build's own wiring (_recover_chip) writes it."""
    from click.testing import CliRunner

    from edgedeploy.cli import cli
    from edgedeploy.cli.build_cmd import _recover_chip
    from edgedeploy.pipeline import recover as recover_module
    from tests.measure_helpers import make_artifact
    from tests.test_accuracy_diagnosis import _feeds, write_outlier_case
    from tests.test_snr_curve import qdq_diagnosis

    model_path, _calib, _eval = write_outlier_case(tmp_path)
    real = qdq_diagnosis(model_path, _feeds(outlier=400.0))  # a real QDQ diagnosis: conv1 falls first
    real["paths"][0]["path"] = "fakechip"
    real["paths"][0]["first_sharp_drop"] = {**real["paths"][0]["first_sharp_drop"], "node": "n1"}  # the ranking the fake builds need
    real["paths"][0]["worst_isolated"] = [{**real["paths"][0]["worst_isolated"][0], "node": "n2"}]
    real["paths"][0]["ranked"] = ["n1", "n2"]
    plan, initial, _built, _diagnosed = plan_for(tmp_path, KNOBS)
    plan.diagnose = lambda artifact: real
    outcome = recover(initial, plan)
    assert outcome.met and outcome.section["chosen"] == "a5"
    assert outcome.diagnosis["attempt"] == {"id": "a2", "changes": "method=b"} and outcome.diagnosis["paths"] == real["paths"]
    validate(outcome.diagnosis)
    # a goal missed keeps no stale diagnosis for build's: build diagnoses the artifact it leaves
    lost_plan, lost_initial, _, _ = plan_for(tmp_path / "lost", KNOBS[1:])
    assert recover(lost_initial, lost_plan).diagnosis is None

    artifact = make_artifact(tmp_path / "art", "fp32")
    monkeypatch.setattr(recover_module, "recover", lambda path, plan: recover_module.Recovery(True, path, outcome.section, outcome.sentence, outcome.diagnosis))
    _recover_chip(artifact, FakeTarget(KNOBS), FakeChip(), model_path, {}, FakeOptions(), plan.gates, None, None)
    report = json.loads((artifact / "report.json").read_text())
    assert report["accuracy_diagnosis"]["attempt"]["id"] == "a2" and report["recovery"]["chosen"] == "a5"
    pages = {}
    for fmt in ("html", "md", "text"):
        done = CliRunner().invoke(cli, ["report", str(artifact), "--format", fmt, "-o", str(tmp_path / f"r.{fmt}")])
        assert done.exit_code == 0, done.output
        pages[fmt] = (tmp_path / f"r.{fmt}").read_text()
    assert "<svg class='plot snr-curve'" in pages["html"] and "build --recover diagnosed its attempt a2 (method=b)" in pages["html"]
    assert "F first sharp fall + 1 worst alone" not in pages["text"]  # n1 and n2: two different culprits
    for page in pages.values():
        page = page.replace("\\", "").replace("**", "")  # Markdown's escapes and emphasis
        assert "attempt a2 (method=b), which missed the goals" in page and "goals met by attempt a5" in page
    assert "first sharp fall: n1" in pages["text"] and "An accuracy gate failed at build time" not in pages["text"]


def test_recover_needs_an_accuracy_gate():
    done = run_cli("build", "--target", "esp32s3", "--recover", "--fail-on", "model-size=1MiB")
    assert done.returncode == 2, done.stderr
    assert "--recover turns the accuracy gates into goals" in done.stderr and "Traceback" not in done.stderr


def test_eiq_declares_float_nodes_then_16x8_and_the_converters_reasons_for_the_rest():
    """The TFLite converter has no other calibration, equalisation or bias correction (said, not
    tried); its mixed precision is nodes left in float (ranked), then the whole model in 16x8,
    which counts every node as off int8 and is exclusive with float nodes."""
    from edgedeploy.errors import OptionError
    from edgedeploy.targets import find_chip

    target, chip = find_chip("imx93")
    knobs = target.repair_knobs(chip, "int8", target.options_type())
    tried = [(k.option, k.values, k.cost) for k in knobs if not k.unavailable]
    assert tried == [("float_nodes", RANKED_NODES, "mixed-precision"), ("activations", ("int16",), "mixed-precision")]
    assert next(k for k in knobs if k.option == "activations").every_node
    assert "min/max only" in next(k.unavailable for k in knobs if k.cost == "calibration")
    wide = target.options_type(activations="int16")
    assert all(k.unavailable for k in target.repair_knobs(chip, "int8", wide) if k.cost == "mixed-precision")
    with pytest.raises(OptionError, match="cannot be combined"):
        target.options_type(activations="int16", float_nodes=("a",)).validate(chip)
    # what an attempt costs on the i.MX 93: operators on the CPU and Vela's time estimate
    report = {"vela": {"npu_operator_count": 188, "cpu_operator_count": 12, "estimates": {"estimated_inference_time_us": 240.5}}}
    assert target.repair_costs(report) == {"npu_operators": 188, "cpu_operators": 12, "npu_time_us_vela_estimate": 240.5}


def test_rknn_marks_every_layer_the_toolkit_made_of_a_node_float16(tmp_path):
    """step1's quantization.cfg keys layers by tensor; rknn-toolkit2 splits silero_vad_16k's STFT Conv
    into slices named after its input (`..._slice#1-rs`): every layer made from the tensor is marked,
    a name with '::' is quoted, and a node with no layer is one sentence."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("rknn_worker", Path(__file__).parents[1] / "targets" / "rknn" / "worker.py")
    worker = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(worker)
    cfg = tmp_path / "m.quantization.cfg"
    cfg.write_text("custom_quantize_layers: {}\nquantize_parameters:\n    F0::a/U_output_0_slice-rs:\n        dtype: int8\n    F0::a/U_output_0_slice#1_conv:\n"
                   "        dtype: int8\n    F0::a/U_output_00:\n        dtype: int8\n    /c/Relu_output_0:\n        dtype: int8\n")
    kept = worker._mark_float16(str(cfg), [{"node": "U", "candidates": ["F0::a/U_output_0"]}, {"node": "C", "candidates": ["/c/Conv_output_0", "/c/Relu_output_0"]}])
    assert kept == {"U": ["F0::a/U_output_0_slice#1_conv", "F0::a/U_output_0_slice-rs"], "C": ["/c/Relu_output_0"]}
    assert cfg.read_text().startswith('custom_quantize_layers:\n    "F0::a/U_output_0_slice#1_conv": float16\n    "F0::a/U_output_0_slice-rs": float16\n    "/c/Relu_output_0": float16\nquantize_parameters:')
    with pytest.raises(RuntimeError, match="no layer for node.s. X"):
        worker._mark_float16(str(cfg), [{"node": "X", "candidates": ["/x_output_0"]}])


def test_rknn_does_not_rebuild_its_default_calibration_and_declares_hybrid_float16():
    """A build without --rknn-quantized-algorithm used normal already (rknn-toolkit2's default): trying
    it again rebuilt a0 (silero_vad_16k: 4 min for the same 10.1 dB)."""
    from edgedeploy.targets import find_chip

    target, chip = find_chip("rk3588")
    knobs = target.repair_knobs(chip, "int8", target.options_type())
    assert next(k.values for k in knobs if k.cost == "calibration") == ("kl_divergence", "mmse")
    asked = target.repair_knobs(chip, "int8", target.options_type(quantized_algorithm="mmse"))
    assert next(k.values for k in asked if k.cost == "calibration") == ("kl_divergence", "normal")
    hybrid = next(k for k in knobs if k.cost == "mixed-precision")
    assert hybrid.option == "float16_nodes" and hybrid.values == RANKED_NODES and not hybrid.unavailable


def test_a_ranked_activation_brings_the_layer_that_computes_its_input():
    """esp-ppq quantises a ReLU's input at the Conv before it: the ReLU alone in int16 changed nothing
    on mnist_box_and_class (the same 32.7 dB and 1.56 pp as all-int8), so ESP-DL's knob asks for producers."""
    from edgedeploy.pipeline.recover import _with_producers

    groups = _with_producers(CORPUS / "mnist_box_and_class.onnx", ["/features/features.6/Relu", "/features/features.0/Conv"])
    assert groups == [("/features/features.4/Conv", "/features/features.6/Relu"), ("/features/features.0/Conv",)]


def test_rknn_keeps_a_ranked_node_in_float16_with_the_nodes_writing_its_inputs():
    """rknn-toolkit2 keeps the tensor between two layers int8 unless both are float16: BlazeFace's
    Conv_77 alone in float16 gave 10.9 dB on rk3588, with Conv_76 (its input's writer) 15.6 dB
    (docs/accuracy.md), so the hybrid knob takes a ranked node with its inputs' writers."""
    from edgedeploy.pipeline.recover import _groups_of, _values_to_try
    from edgedeploy.targets import find_chip

    target, chip = find_chip("rk3588")
    hybrid = next(k for k in target.repair_knobs(chip, "int8", target.options_type()) if k.cost == "mixed-precision")
    ranked = ["/features/features.4/Conv", "/cls/Gemm", "/features/features.0/Conv"]
    groups = _groups_of(hybrid, CORPUS / "mnist_box_and_class.onnx", ranked)
    # The model's input and the weights write no layer: the first Conv stays alone.
    assert groups == [("/features/features.3/MaxPool", "/features/features.4/Conv"), ("/Flatten", "/cls/Gemm"), ("/features/features.0/Conv",)]
    # A Constant node writes a weight or a shape, not a layer: the Reshape keeps only its data's writer.
    reshape = _groups_of(hybrid, CORPUS / "shufflenet_v2_x0_5.onnx", ["/stage2/stage2.0/Reshape"])
    assert reshape == [("/stage2/stage2.0/Concat", "/stage2/stage2.0/Reshape")]
    values = _values_to_try(hybrid, target.options_type(), groups)
    assert values[0] == ("/features/features.3/MaxPool", "/features/features.4/Conv")
    assert values[-1] == ("/features/features.3/MaxPool", "/features/features.4/Conv", "/Flatten", "/cls/Gemm", "/features/features.0/Conv")


def test_rknn_float16_nodes_are_looked_up_by_their_tensors_and_those_they_fuse_into():
    """Hybrid quantisation keys a layer by its output tensor in rknn-toolkit2's own graph, after its
    fusions: each node's own output first, then its consumers' (a Conv fused with its ReLU is the
    ReLU's layer). A name that is not a node of the model is one sentence, not a toolkit error later."""
    import onnx

    from edgedeploy.errors import OptionError
    from edgedeploy.targets.rknn.convert import float16_layers

    graph = onnx.load(str(CORPUS / "mnist_box_and_class.onnx")).graph
    layers = float16_layers(("/features/features.0/Conv,/features/features.4/Conv",), graph, True)
    assert [entry["node"] for entry in layers] == ["/features/features.0/Conv", "/features/features.4/Conv"]
    assert layers[0]["candidates"][:3] == ["/features/features.0/Conv_output_0", "/features/features.2/Relu_output_0", "/features/features.3/MaxPool_output_0"]
    with pytest.raises(OptionError, match="no node named 'nope'"):
        float16_layers(("nope",), graph, True)
    with pytest.raises(OptionError, match="fp16 build"):
        float16_layers(("/features/features.4/Conv",), graph, False)


@pytest.mark.slow
@pytest.mark.toolchain("espdl")
def test_box_and_class_on_esp32s3_recovers_within_1pp(tmp_path):
    """KL collapses it (-64 pp); minmax, percentile and mse each leave one of the 64 samples wrong
    (-1.56 pp); esp-ppq's equalisation on top of minmax meets the goal (mixed precision on the
    diagnosis's first node with its Conv did too, before equalisation was a knob). Five esp-ppq
    builds: about 4 min on this machine under load (docs/accuracy.md)."""
    out = tmp_path / "out"
    done = run_cli(
        "build", str(CORPUS / "mnist_box_and_class.onnx"), "--target", "esp32s3", "--calib", str(CORPUS / "mnist_box_and_class.calib.npz"),
        "--eval", str(CORPUS / "mnist_box_and_class.eval.npz"), "--fail-on", "accuracy-drop=1", "--recover", "-o", str(out), timeout=1500,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    artifact = out / "mnist_box_and_class" / "esp32s3"
    report = json.loads((artifact / "report.json").read_text())
    validate(report)
    recovery = report["recovery"]
    first, chosen = recovery["attempts"][0], next(a for a in recovery["attempts"] if a["id"] == recovery["chosen"])
    assert first["figures"]["task_metric_drop_pp"] > 50  # the collapse of KL calibration
    assert chosen["met"] and chosen["figures"]["task_metric_drop_pp"] <= 1
    assert report["accuracy"]["delta_percentage_points"] >= -1  # the artifact is the chosen attempt
    manifest = json.loads((artifact / "manifest.json").read_text())
    assert manifest["espdl"]["calib_method"] == chosen["changes"].get("calib_method", "kl")
    # esp-ppq moves the asked layers and the activation chain after them (docs/espdl.md)
    assert set(chosen["changes"].get("int16_layers", [])) <= set(manifest["espdl"]["int16_layers"])
    assert "recover: goals met by attempt" in done.stderr


TRAINED = Path(__file__).parent / "fixtures" / "trained"


@pytest.mark.slow
@pytest.mark.toolchain("rknn")
def test_speech_lstm_on_rk3588_meets_snr_25_with_another_calibration(tmp_path):
    """rknn-toolkit2's default (normal) calibration leaves speech_lstm's logits near 21 dB; the first
    calibration tried, kl_divergence, lifts them above 30 dB (two rknn builds: about 2 min here)."""
    out = tmp_path / "out"
    done = run_cli(
        "build", str(TRAINED / "speech_lstm.onnx"), "--target", "rk3588", "--calib", str(TRAINED / "speech_lstm.calib.npz"),
        "--eval", str(TRAINED / "speech_lstm.eval.npz"), "--fail-on", "snr=25", "--fail-on", "accuracy-drop=1", "--recover", "-o", str(out), timeout=1500,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads((out / "speech_lstm" / "rk3588" / "report.json").read_text())
    validate(report)
    attempts = report["recovery"]["attempts"]
    assert attempts[0]["figures"]["lowest_snr_db"] < 25 and not attempts[0]["met"]
    chosen = next(a for a in attempts if a["id"] == report["recovery"]["chosen"])
    assert chosen["cost"] == "calibration" and chosen["figures"]["lowest_snr_db"] >= 25
    assert report["options"]["target_options"]["quantized_algorithm"] == chosen["changes"]["quantized_algorithm"]
    # hybrid quantisation is declared (not needed here: the calibration met the goals first)
    assert any(k["cost"] == "mixed-precision" and k["option"] == "float16_nodes" and not k["unavailable"] for k in report["recovery"]["knobs"])


def test_the_attempts_table_shows_each_attempt_with_its_figures_and_cost_in_every_format(tmp_path):
    from edgedeploy.report.diagnosis_pages import ATTEMPT_HEADERS, attempt_rows, attempts_html, attempts_markdown

    plan, initial, _built, _ = plan_for(tmp_path, KNOBS)
    section = recover(initial, plan).section
    rows = attempt_rows(section)
    assert [r[0] for r in rows] == ["a0", "a1", "a2", "a3", "a4", "a5 (chosen)"]
    chosen = dict(zip(ATTEMPT_HEADERS, rows[-1]))
    assert chosen["Method"] == "mixed-precision" and chosen["Nodes off int8"] == "2" and chosen["Model size"] == "1200 B"
    assert chosen["Goals"] == "met" and "drop 0.50 pp" in chosen["Figures"] and chosen["Latency"] == "not measured"
    markdown = attempts_markdown(section)
    assert sum(line.startswith("| a") for line in markdown) == 6 and all(line.count(" | ") == len(ATTEMPT_HEADERS) - 1 for line in markdown if line.startswith("| a"))
    assert "not tried: equalisation: the toolchain has none" in attempts_html(section)
    assert "1200 B, 2 node(s) off int8, latency not measured; goals met" in attempts_table(section)


@pytest.mark.slow
@pytest.mark.toolchain("eiq")
def test_digits_transformer_on_imx93_recovers_with_nodes_left_in_float(tmp_path):
    """The TFLite converter's full int8 (min/max, its only calibration) leaves a small trained
    transformer (real digits) 1.67 pp down at 12.5 dB; its only means are mixed precision: nodes left
    in float, 1, 2, 4, then 8 of those the diagnosis ranks first, which meets the goals. Six eIQ
    builds and a diagnosis: about 6 min on this machine under load (each onnx2tf + TFLite + Vela
    build about 70 s), then `diagnose` on the artifact."""
    out = tmp_path / "out"
    model = TRAINED / "digits_transformer.onnx"
    done = run_cli(
        "build", str(model), "--target", "imx93", "--calib", str(TRAINED / "digits_transformer.calib.npz"), "--eval", str(TRAINED / "digits_transformer.eval.npz"),
        "--fail-on", "accuracy-drop=1", "--fail-on", "snr=20", "--recover", "-o", str(out), timeout=1500,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    artifact = out / "digits_transformer" / "imx93"
    report = json.loads((artifact / "report.json").read_text())
    validate(report)
    attempts = report["recovery"]["attempts"]
    first = attempts[0]
    assert not first["met"] and (first["figures"]["task_metric_drop_pp"] > 1 or first["figures"]["lowest_snr_db"] < 20)
    chosen = next(a for a in attempts if a["id"] == report["recovery"]["chosen"])
    assert chosen["cost"] == "mixed-precision" and chosen["figures"]["lowest_snr_db"] >= 20 and chosen["figures"]["task_metric_drop_pp"] <= 1
    # the nodes left in float run on the CPU: the cost says so, and the artifact is the chosen build
    assert chosen["cost_figures"]["toolchain"]["cpu_operators"] > first["cost_figures"]["toolchain"]["cpu_operators"]
    assert chosen["cost_figures"]["nodes_off_int8"] == len(chosen["changes"]["float_nodes"])
    manifest = json.loads((artifact / "manifest.json").read_text())
    assert manifest["eiq"]["float_nodes"] == chosen["changes"]["float_nodes"]
    assert "denylisted_nodes" in report["conversion"]["int8_settings"]
    # the diagnosis of the repaired artifact runs on its own
    diagnosed = run_cli("diagnose", str(artifact), "--eval", str(TRAINED / "digits_transformer.eval.npz"), "--no-qdq", "--summary", timeout=600)
    assert diagnosed.returncode == 0, diagnosed.stderr[-2000:]
    assert "imx93" in diagnosed.stdout


def test_an_auroc_drop_is_an_attempts_figure_and_ranks_it(tmp_path):
    """A face detector's AUROC (--metric auroc): each attempt's drop in points and its AUROC after are
    its figures (they were empty, so the best attempt was chosen on SNR alone)."""
    def auroc_report(options: FakeOptions) -> dict:
        report = figures_of(options)
        drop = -report["accuracy"].pop("delta_percentage_points")
        report["accuracy"].update(metric="auroc", after={"macro_auroc": 0.99 - drop / 100}, delta=-drop / 100)
        return report

    plan, initial, built, _ = plan_for(tmp_path, KNOBS)
    plan.build = lambda out, options: built.append(options) or write_artifact(out / "model" / "fakechip", auroc_report(options))
    (initial / "report.json").write_text(json.dumps(auroc_report(FakeOptions())))
    outcome = recover(initial, plan)
    first = outcome.section["attempts"][0]["figures"]
    assert first["task_metric_drop_pp"] == 60.0 and abs(first["task_metric_after"] - 0.39) < 1e-9
    assert outcome.met and [(o.method, o.nodes) for o in built][3:] == [("b", ("n1",)), ("b", ("n1", "n2"))]


def _calibration_then_nodes(options: FakeOptions, tied: dict) -> dict:
    """figures_of's shape with the calibrations' (drop, SNR) from `tied`, and int16 on n1 gaining
    1 pp and 6 dB over whichever calibration it is put on."""
    drop, snr = tied[options.method]
    if "n1" in options.nodes:
        drop, snr = drop - 1.0, snr + 6.0
    return fake_report(drop, snr, 1000 + 100 * len(options.nodes))


def test_mixed_precision_also_starts_from_the_best_snr_while_no_attempt_meets_the_task_goal(tmp_path):
    """BlazeFace on rk3588 (docs/accuracy.md): normal calibration misses by 1.03 pp at 11.0 dB, mmse by
    1.44 pp at 15.0 dB; float16 nodes went on the first only (merit: the smaller drop) and reached
    15.9 dB, on mmse they reach 18 dB. Both now carry the nodes, the merit's first."""
    tied = {None: (1.03, 11.0), "a": (4.66, 9.6), "b": (1.44, 15.0), "c": (1.5, 12.0)}
    plan, initial, built, diagnosed = plan_for(tmp_path, KNOBS, gates=("accuracy-drop=1", "snr=20"))
    plan.build = lambda out, options: built.append(options) or write_artifact(out / "model" / "fakechip", _calibration_then_nodes(options, tied))
    (initial / "report.json").write_text(json.dumps(_calibration_then_nodes(FakeOptions(), tied)))
    outcome = recover(initial, plan)
    assert [(o.method, o.nodes) for o in built][3:] == [(None, ("n1",)), (None, ("n1", "n2")), (None, ("n1", "n2", "n3", "n4")), ("b", ("n1",))]
    assert diagnosed == [initial] and outcome.met  # on b, n1 gives 0.44 pp and 21 dB
    assert outcome.section["chosen"] == "a7"


def test_once_an_attempt_meets_the_task_goal_mixed_precision_starts_from_the_merit_alone(tmp_path):
    tied = {None: (0.8, 11.0), "a": (4.66, 9.6), "b": (1.44, 15.0), "c": (1.5, 12.0)}
    plan, initial, built, _ = plan_for(tmp_path, KNOBS, gates=("accuracy-drop=1", "snr=20"))
    plan.build = lambda out, options: built.append(options) or write_artifact(out / "model" / "fakechip", _calibration_then_nodes(options, tied))
    (initial / "report.json").write_text(json.dumps(_calibration_then_nodes(FakeOptions(), tied)))
    assert not recover(initial, plan).met
    assert {o.method for o in built[3:]} == {None} and len(built) == 6


def test_the_other_stages_start_from_the_best_by_merit_even_when_no_attempt_meets_the_task_goal(tmp_path):
    """Only mixed precision takes the best SNR: equalisation starts from the smaller drop (a face
    detector on esp32s3 met its task goal by equalising percentile calibration, 2.2 pp at 1.7 dB,
    not KL, 4.7 pp at 3.0 dB)."""
    tied = {None: (4.7, 3.0), "a": (27.9, -1.6), "b": (2.2, 1.7), "c": (29.7, -2.9)}
    knobs = [*KNOBS[1:2], RepairKnob("nodes", (("eq",),), "equalisation", "equalisation")]
    plan, initial, built, _ = plan_for(tmp_path, knobs, gates=("accuracy-drop=1", "snr=20"))
    plan.build = lambda out, options: built.append(options) or write_artifact(out / "model" / "fakechip", _calibration_then_nodes(options, tied))
    (initial / "report.json").write_text(json.dumps(_calibration_then_nodes(FakeOptions(), tied)))
    recover(initial, plan)
    assert [(o.method, o.nodes) for o in built][3:] == [("b", ("eq",))]
