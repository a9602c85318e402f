"""Reports claim only what the model supports (issue 29, part 7): an output is split into boxes
and scores only on evidence (the user's --detection, a Concat of a box branch and a score
branch, the names), never from its shape; a task metric only on one row of class scores per
sample, else one line says why not. Small synthetic graphs for each kind of evidence."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from onnx import helper

from edgedeploy.errors import OptionError
from edgedeploy.measure.output_roles import name_role, output_layouts, parse_detection
from edgedeploy.measure.verify import headline_line, model_evidence, verify
from tests.helpers import const, make_model, tensor

ANCHORS = 400


def _yolo_like(box_producer: str = "Mul", box_name: str = "/model.22/Mul_2_output_0", box_width: int = 4, score_op: str = "Sigmoid"):
    """x [1, 88, A] -> Concat(axis 1) of a box branch [1, box_width, A] and a score branch [1, 84 - ..., A]."""
    classes = 84 - box_width
    nodes = [
        helper.make_node("Slice", ["x", "s0", "s1", "ax"], ["raw_box"], name="slice_box"),
        helper.make_node(box_producer, ["raw_box", "two"] if box_producer in ("Mul", "Add") else ["raw_box"], [box_name], name="/model.22/Mul_2"),
        helper.make_node("Slice", ["x", "s1", "s2", "ax"], ["raw_cls"], name="slice_cls"),
        helper.make_node(score_op, ["raw_cls"], ["/model.22/Sigmoid_output_0"], name="/model.22/Sigmoid") if score_op != "Mul" else helper.make_node("Mul", ["raw_cls", "two"], ["/model.22/Sigmoid_output_0"], name="/model.22/Mul_3"),
        helper.make_node("Concat", [box_name, "/model.22/Sigmoid_output_0"], ["output0"], name="head", axis=1),
    ]
    inits = [const("s0", np.array([0], np.int64)), const("s1", np.array([box_width], np.int64)), const("s2", np.array([84], np.int64)), const("ax", np.array([1], np.int64)), const("two", np.array(2.0, np.float32))]
    return make_model(nodes, [tensor("x", [1, 88, ANCHORS])], [tensor("output0", [1, 84, ANCHORS])], inits)


def test_no_evidence_no_split_even_for_a_yolo_shaped_output():
    """[1, 84, A] from a Conv: the old shape guess called it 4 boxes + 80 scores; now it is compared whole."""
    w = np.zeros((84, 8, 1, 1), np.float32)
    model = make_model([helper.make_node("Conv", ["x", "w"], ["output0"], name="conv")], [tensor("x", [1, 8, 20, 20])], [tensor("output0", [1, 84, ANCHORS])], [const("w", w)])
    assert output_layouts(model) == {}
    rng = np.random.default_rng(0)
    ref = rng.standard_normal((2, 84, ANCHORS))
    section = verify({"output0": ref}, {"output0": ref + 0.01}, None, layouts=output_layouts(model))
    assert "detection" not in section["outputs"]["output0"]
    assert "box" not in headline_line(section) and "guessed" not in str(section)


def test_concat_of_a_box_branch_and_a_sigmoid_score_branch_is_split():
    layouts = output_layouts(_yolo_like())
    layout = layouts["output0"]
    assert layout["axis"] == 1
    assert [(p["role"], p["start"], p["stop"]) for p in layout["parts"]] == [("boxes", 0, 4), ("scores", 4, 84)]
    assert "Concat" in layout["evidence"] and "produced by Sigmoid" in layout["evidence"] and "4 wide" in layout["evidence"]
    rng = np.random.default_rng(1)
    ref = rng.standard_normal((2, 84, ANCHORS))
    cand = ref.copy()
    cand[:, :4] += 0.5
    section = verify({"output0": ref}, {"output0": cand}, None, layouts=layouts)
    detection = section["outputs"]["output0"]["detection"]
    assert detection["parts"]["boxes"]["max_abs_error"] == pytest.approx(0.5) and detection["parts"]["scores"]["max_abs_error"] == 0.0
    assert "split from a Concat" in headline_line(section)


def test_concat_without_a_known_box_and_score_branch_is_not_split():
    # 16 regressors beside the scores (4 box + 12 keypoint values): not a 4-wide box branch, no name.
    assert output_layouts(_yolo_like(box_width=16)) == {}
    # No probability op and no names: nothing says which branch is which.
    assert output_layouts(_yolo_like(score_op="Mul")) == {}


def test_names_of_the_concat_inputs_are_evidence():
    # Branches named boxes / keypoints beside a Sigmoid score branch: split by the names.
    layout = output_layouts(_yolo_like(box_width=16, box_name="kps_decoded"))["output0"]
    assert [(p["role"], p["start"], p["stop"]) for p in layout["parts"]] == [("keypoints", 0, 16), ("scores", 16, 84)]
    assert "its name 'kps_decoded'" in layout["evidence"]


def test_an_outputs_own_name_gives_its_role_and_no_split():
    nodes = [helper.make_node("Relu", ["x"], ["regressors"], name="r"), helper.make_node("Relu", ["y"], ["classificators"], name="c")]
    model = make_model(nodes, [tensor("x", [1, 896, 16]), tensor("y", [1, 896, 1])], [tensor("regressors", [1, 896, 16]), tensor("classificators", [1, 896, 1])])
    layouts = output_layouts(model)
    assert layouts["regressors"] == {"role": "boxes", "evidence": "its name 'regressors'"}
    assert layouts["classificators"]["role"] == "scores"
    rng = np.random.default_rng(2)
    ref = {"regressors": rng.standard_normal((3, 896, 16)), "classificators": rng.standard_normal((3, 896, 1))}
    section = verify(ref, ref, np.array([0, 1, 1]), layouts=layouts)
    assert section["metric"] == "fidelity" and "before" not in section
    regressors = section["outputs"]["regressors"]
    assert "detection" not in regressors and regressors["role"]["role"] == "boxes"
    assert "box regression" in regressors["metric_not_reported"] and "'regressors'" in regressors["metric_not_reported"]
    # 896 anchors of one score each are not one score per class, whatever the name.
    assert "896 rows of 1 values" in section["outputs"]["classificators"]["metric_not_reported"]


@pytest.mark.parametrize(
    ("name", "role"),
    [("boxes", "boxes"), ("bbox_8", "boxes"), ("loc", "boxes"), ("regressors", "boxes"), ("scores", "scores"), ("cls_logits", "scores"), ("obj_16", "scores"), ("kps_32", "keypoints"), ("landmarks", "keypoints"), ("output0", None), ("softmax_11.tmp_0", None), ("local_feat", None), ("bbox_score", None)],
)
def test_name_roles(name, role):
    assert name_role(name) == role


def test_detection_option_declares_a_split():
    model = make_model([helper.make_node("Relu", ["x"], ["output0"], name="r")], [tensor("x", [1, 84, ANCHORS])], [tensor("output0", [1, 84, ANCHORS])])
    declared = parse_detection(["output0:1=boxes:0-3,scores:4-"], model.graph)
    assert declared["output0"]["parts"] == [{"role": "boxes", "start": 0, "stop": 4}, {"role": "scores", "start": 4, "stop": 84}]
    producers, layouts = model_evidence(model, ["output0:1=boxes:0-3,scores:4-"])
    assert layouts["output0"]["evidence"] == "declared with --detection output0:1=boxes:0-3,scores:4-"
    # The axis defaults to the last.
    assert parse_detection(["output0=boxes:0-3,keypoints:4-15"], model.graph)["output0"]["axis"] == 2


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("nothere=boxes:0-3", "no output named 'nothere'"),
        ("output0:1=boxes:0-3,scores:2-", "overlap"),
        ("output0:1=boxes:0-99", "do not fit an axis of 84"),
        ("output0:1=corners:0-3", "'corners' is not a role"),
        ("output0:1=boxes:a-b", "not a channel range"),
        ("output0:5=boxes:0-3", "axis 5 is not one of them"),
        ("boxes:0-3", "give OUTPUT=ROLE:RANGE"),
    ],
)
def test_a_wrong_detection_option_is_one_sentence(value, message):
    model = make_model([helper.make_node("Relu", ["x"], ["output0"], name="r")], [tensor("x", [1, 84, ANCHORS])], [tensor("output0", [1, 84, ANCHORS])])
    with pytest.raises(OptionError, match=message):
        parse_detection([value], model.graph)


def test_top1_only_on_one_row_of_class_scores_per_sample():
    rng = np.random.default_rng(3)
    labels = rng.integers(0, 10, size=20)
    ctc = rng.random((20, 40, 97))  # a text recogniser's CTC softmax: 40 positions x 97 symbols
    logits = np.eye(10)[labels] + 0.1 * rng.random((20, 10))
    head = logits[:, :, None, None]  # a conv head pooled to 1x1: [N, C, 1, 1]
    section = verify({"ctc": ctc, "head": head}, {"ctc": ctc, "head": head}, labels)
    assert section["metric_output"] == "head" and section["before"]["top1"] == 1.0
    assert "before" not in section["outputs"]["ctc"]
    assert section["outputs"]["ctc"]["metric_not_reported"].startswith("its shape [40, 97] is 40 rows of 97 values per sample")
    # Alone, the CTC output gets no metric at all (it used to get top-1 over 40 x 97 "classes").
    alone = verify({"ctc": ctc}, {"ctc": ctc}, labels)
    assert alone["metric"] == "fidelity" and alone["metric_output"] is None and "before" not in alone
    # Fewer scores than the labels' classes: no top-1.
    few = verify({"p": logits[:, :4]}, {"p": logits[:, :4]}, labels)
    assert "cannot score the labels'" in few["outputs"]["p"]["metric_not_reported"]


def test_real_exports_yolo_head_split_ssd_roles_by_name():
    """The corpus's skeletons (the real exporters' graphs): ultralytics' YOLO11n head is a Concat of
    the decoded boxes and the Sigmoid class scores; torchvision's SSDlite head names its outputs."""
    import onnx

    skeletons = Path(__file__).parent / "fixtures" / "corpus" / "skeletons"
    yolo = output_layouts(onnx.load(str(skeletons / "yolo11n.onnx"), load_external_data=False))["output0"]
    assert [(p["role"], p["start"], p["stop"]) for p in yolo["parts"]] == [("boxes", 0, 4), ("scores", 4, 84)]
    assert yolo["evidence"] == "a Concat on axis 1 of boxes 0-3 (the one other input, 4 wide), scores 4-83 (produced by Sigmoid)"
    ssd = output_layouts(onnx.load(str(skeletons / "ssdlite320_mobilenet_v3_large_head.onnx"), load_external_data=False))
    assert ssd["bbox_regression"]["role"] == "boxes" and ssd["cls_logits"]["role"] == "scores"
    assert output_layouts(onnx.load(str(skeletons / "deeplabv3_mobilenet_v3_large.onnx"), load_external_data=False)) == {}
