"""The error referred to the outputs (edgedeploy.accuracy.referred) on probe models, ONNX Runtime's QDQ path.

tests/referred_probes.py builds the probes; scripts/accuracy/probe_referred.py checks them against a
brute force (docs/accuracy.md, "Referred to the outputs").
"""

from __future__ import annotations

import copy

import onnx
import pytest

from tests import referred_probes
from edgedeploy.accuracy import diagnose_path, localise, qdq, referred


def _diagnose(path, inputs, strip=False, reader_rounds_input=True, referred_lead=True):
    calib = referred_probes.only(referred_probes.tones(32, 1, spikes=True), inputs)
    evaluation = referred_probes.only(referred_probes.tones(16, 2), inputs)
    model = onnx.load(str(path))
    records, _ = qdq.diagnose_records(path, calib, evaluation)
    if strip:  # as a path without isolated tensors or ranges sees them (rknn-toolkit2's accuracy_analysis)
        records = copy.deepcopy(records)
        for r in records:
            r.pop("isolated_values", None)
            (r.get("stats") or {}).pop("step", None)
            r["precision"] = "int8"  # a toolchain that quantises every node, Sqrt and Pow included
    found = diagnose_path({"path": "probe", "toolchain": "onnxruntime quantize_static", "method": "QDQ"}, records, [model.graph.output[0].name], len(calib), graph_inputs=inputs,
                          refer=lambda r: referred.refer_to_outputs(r, model, evaluation, calib, reader_rounds_input=reader_rounds_input),
                          referred_lead=referred_lead)
    return found, {n["node"]: n for n in found["nodes"]}, records


@pytest.fixture(scope="module")
def spectrum(tmp_path_factory):
    path = tmp_path_factory.mktemp("spectrum") / "spectrum.onnx"
    referred_probes.spectrum(path)
    return path


def test_the_power_spectrum_before_a_sqrt_is_ranked_first_not_the_stft_conv_that_falls_first(spectrum):
    found, nodes, records = _diagnose(spectrum, ["x"])
    assert found["first_sharp_drop"]["node"] == "stft_Conv"
    # The Add's own error is no worse than the Conv's where it is made, and far worse at the output.
    assert nodes["Add_power"]["isolated"]["snr_db"] > nodes["stft_Conv"]["isolated"]["snr_db"]
    assert nodes["Add_power"]["referred"]["snr_db"] < nodes["stft_Conv"]["referred"]["snr_db"] - 10
    assert nodes["Add_power"]["referred_injected"] == referred.INJECTED_ISOLATED
    assert found["ranked"][0] == "Add_power" and found["worst_referred"][0]["node"] == "Add_power"
    # ONNX Runtime leaves the Sqrt in float: never ranked by its error, which is the Add's tensor.
    assert nodes["Sqrt_mag"]["precision"] == "float32"
    assert "Sqrt_mag" not in [w["node"] for w in found["worst_referred"]]
    # Without referred figures the ranking started from the Sqrt (worst alone, 10 dB under the fall).
    by_node = {r["node"]: r for r in records}
    before = localise.ranked(by_node["stft_Conv"], [by_node[w["node"]] for w in found["worst_isolated"]])
    assert before[0]["node"] == "Sqrt_mag"


def test_fake_quantised_inputs_charge_a_bad_tensor_to_its_consumer_as_to_its_producer(spectrum):
    found, nodes, _ = _diagnose(spectrum, ["x"], strip=True)
    assert nodes["Add_power"]["referred_injected"] == referred.INJECTED_FAKE
    add, sqrt, conv = (nodes[n]["referred"]["snr_db"] for n in ("Add_power", "Sqrt_mag", "stft_Conv"))
    assert abs(sqrt - add) < 3 and max(add, sqrt) < conv - 10
    assert set(found["ranked"][:2]) == {"Add_power", "Sqrt_mag"}


def test_where_a_tensor_is_its_writers_alone_its_reader_is_not_charged_with_it(spectrum):
    """esp-ppq rounds a tensor with its writer's quantiser alone (TapResult.reader_rounds_input False): the
    Sqrt after the power spectrum's Add reads the Add's rounding, which is the Add's error, not the Sqrt's."""
    charged, charged_nodes, _ = _diagnose(spectrum, ["x"], strip=True)
    found, nodes, _ = _diagnose(spectrum, ["x"], strip=True, reader_rounds_input=False)
    assert charged["referred"]["reader_rounds_input"] and not found["referred"]["reader_rounds_input"]
    add, sqrt = nodes["Add_power"]["referred"]["snr_db"], nodes["Sqrt_mag"]["referred"]["snr_db"]
    assert sqrt > add + 10  # only its own output's rounding
    assert abs(charged_nodes["Sqrt_mag"]["referred"]["snr_db"] - charged_nodes["Add_power"]["referred"]["snr_db"]) < 3  # charged: the same tensor
    assert found["ranked"][0] == "Add_power"


def test_a_path_whose_repair_keeps_inputs_int8_reports_the_referred_nodes_without_their_lead(spectrum):
    """TFLite's denylisted operator still reads its int8 writer's tensor (TapResult.repair_keeps_inputs_rounded):
    the referred figures are reported, and the ranking is the one of the falls and the worst alone."""
    from edgedeploy.report.diagnosis import render_path

    led, _, _ = _diagnose(spectrum, ["x"])
    found, _, records = _diagnose(spectrum, ["x"], referred_lead=False)
    assert led["referred"]["leads_ranking"] and not found["referred"]["leads_ranking"]
    assert found["worst_referred"] == led["worst_referred"] and found["ranked"][0] != led["ranked"][0]
    by_node = {r["node"]: r for r in records}
    falls = localise.ranked(by_node[found["first_sharp_drop"]["node"]], [by_node[w["node"]] for w in found["worst_isolated"]])
    assert found["ranked"] == [r["node"] for r in falls]
    assert "reported, not leading" in render_path(found, nodes=False) and "ranked first" in render_path(led, nodes=False)


def test_each_target_declares_its_tensors_rounding_as_its_repair_takes_a_node():
    """A target whose readers round their inputs and whose mixed precision takes a node without the
    writers of its inputs says the referred figures cannot lead its ranking (targets/*/diagnose.py)."""
    import importlib

    from edgedeploy.targets import find_chip
    from edgedeploy.targets.base import RANKED_NODES

    declared = {}
    for chip_id in ("esp32s3", "rk3588", "imx93"):
        target, chip = find_chip(chip_id)
        module = importlib.import_module(f"edgedeploy.targets.{target.id}.diagnose")
        knob = next(k for k in target.repair_knobs(chip, "int8", target.options_type()) if k.values == RANKED_NODES)
        assert module.REPAIR_KEEPS_INPUTS_ROUNDED == (module.READER_ROUNDS_INPUT and not knob.input_producers)
        declared[target.id] = module.READER_ROUNDS_INPUT
    assert declared == {"espdl": False, "rknn": True, "eiq": True}


def test_a_node_far_worse_alone_whose_error_reaches_the_output_attenuated_is_not_ranked_first(tmp_path):
    path = tmp_path / "attenuated.onnx"
    referred_probes.attenuated(path)
    found, nodes, _ = _diagnose(path, ["x", "aux"])
    assert found["worst_isolated"][0]["node"] == "Conv_A"
    assert nodes["Conv_A"]["isolated"]["snr_db"] < nodes["Conv_B"]["isolated"]["snr_db"] - 20
    assert nodes["Conv_A"]["referred"]["snr_db"] > nodes["Conv_B"]["referred"]["snr_db"] + 10
    assert found["ranked"][0] == "Conv_B"


def test_without_data_the_ranking_is_the_one_of_the_falls(spectrum):
    calib = referred_probes.only(referred_probes.tones(8, 1), ["x"])
    records, _ = qdq.diagnose_records(spectrum, calib, None)
    found = diagnose_path({"path": "probe"}, records, ["y"], len(calib), graph_inputs=["x"])
    assert "worst_referred" not in found and found["ranked"][0] in {"Sqrt_mag", "stft_Conv"}
    assert all("referred" not in n for n in found["nodes"])


def test_a_conv_weight_is_quantised_with_the_steps_the_path_reports(tmp_path):
    """ESP-DL reports each weight's step: a per-tensor step crushed by one channel leaves the others a
    few levels, which only a quantised weight shows at the outputs (BlazeFace's Conv_44 on esp32s3)."""
    path = tmp_path / "attenuated.onnx"
    referred_probes.attenuated(path)
    inputs = ["x", "aux"]
    calib = referred_probes.only(referred_probes.tones(32, 1, spikes=True), inputs)
    evaluation = referred_probes.only(referred_probes.tones(8, 2), inputs)
    model = onnx.load(str(path))
    records, _ = qdq.diagnose_records(path, calib, evaluation)
    figures = {}
    for label, scale in (("fine", 0.01), ("crushed", 0.25)):
        bare = copy.deepcopy(records)
        for r in bare:
            r.pop("isolated_values", None)
            if r["node"] == "Conv_B":
                r["weight"] = {"channels": 8, "channel_absmax": [1.0] * 8, "bits": 8, "per_channel": False, "scale": scale}
        found = diagnose_path({"path": "probe"}, bare, ["y"], len(calib), graph_inputs=inputs,
                              refer=lambda r: referred.refer_to_outputs(r, model, evaluation, calib))
        figures[label] = next(n for n in found["nodes"] if n["node"] == "Conv_B")["referred"]["snr_db"]
    assert figures["crushed"] < figures["fine"] - 10


def test_the_referred_figures_follow_the_schema_and_show_in_the_text(spectrum):
    import json

    from edgedeploy.accuracy import SCHEMA
    from edgedeploy.report.diagnosis import render_path
    from edgedeploy.report.schemas import validate

    found, _, _ = _diagnose(spectrum, ["x"])
    data = {"calibration": {"count": 32}, "evaluation": None, "figures_on": "evaluation"}
    document = {"schema": SCHEMA, "artifact": str(spectrum), "model": {"name": "spectrum", "sha256": "0" * 64}, "chip": "esp32s3",
                "data": data, "paths": [found], "skipped": []}
    validate(json.loads(json.dumps(document)))
    assert "worst referred to the outputs" in render_path(found, nodes=False) and "Add_power" in render_path(found, nodes=False)


def test_a_model_the_float_runs_cannot_take_leaves_the_ranking_as_before(spectrum):
    """The referred figures are an addition: a failure there is said in the summary, never the path's."""
    calib = referred_probes.only(referred_probes.tones(8, 1), ["x"])
    records, _ = qdq.diagnose_records(spectrum, calib, None)
    model = onnx.load(str(spectrum))
    wrong = [{"not_x": f["x"]} for f in calib]
    found = diagnose_path({"path": "probe"}, records, ["y"], len(calib), graph_inputs=["x"],
                          refer=lambda r: referred.refer_to_outputs(r, model, wrong, wrong))
    assert found["referred"]["nodes"] == 0 and found["referred"]["error"]
    assert found["worst_referred"] == [] and found["ranked"][0] in {"Sqrt_mag", "stft_Conv"}


def test_an_op_that_only_moves_values_on_its_inputs_grid_is_charged_to_its_writer():
    # esp-ppq reports a range for the stem ReLU's output and none for the MaxPool that reads it
    # (a passive op): the MaxPool adds no rounding, so it gets no referred figure of its own.
    grid = (-0.5, 0.49609375, 0.00390625)
    ranges = {"relu_out": grid, "conv_in": (-1.0, 1.0, 2 / 255)}
    passive = {"op_type": "MaxPool", "tensor": "pool_out", "inputs": ["relu_out"]}
    assert referred._on_its_inputs_grid(passive, ranges)
    assert referred._on_its_inputs_grid(passive, {**ranges, "pool_out": grid})  # the same grid, reported
    assert not referred._on_its_inputs_grid(passive, {**ranges, "pool_out": (-0.5, 1.5, 2 / 255)})  # a grid of its own
    assert not referred._on_its_inputs_grid({**passive, "op_type": "Conv"}, ranges)  # a Conv computes: its own error
    assert not referred._on_its_inputs_grid(passive, {})  # no ranges reported (rknn-toolkit2): charged as before
