"""esp-ppq's layers (as its .info file lists them) traced back to ONNX nodes: targets/espdl/verdict.py.

The layer lists are written by hand in the form esp-ppq 1.3.12 exports them (seen in the .info
files of the corpus's ResNet-18 and the ONNX model zoo's ResNet-50); no toolchain is needed.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import helper

from edgedeploy.audit.rules import Placement
from edgedeploy.targets.espdl.verdict import verdict_from_case
from tests.helpers import const, make_model, save, tensor


def batchnorm(index: int, source: str) -> tuple[onnx.NodeProto, list[onnx.TensorProto]]:
    """BatchNormalization `bn{index}` of `source` into tensor `b{index}`, with its four parameters."""
    ones, zeros = np.ones(2, np.float32), np.zeros(2, np.float32)
    parameters = [const(f"{p}{index}", a) for p, a in (("scale", ones), ("shift", zeros), ("mean", zeros), ("var", ones))]
    return helper.make_node("BatchNormalization", [source] + [t.name for t in parameters], [f"b{index}"], name=f"bn{index}"), parameters


def conv_bn(index: int, source: str) -> tuple[list[onnx.NodeProto], list[onnx.TensorProto]]:
    """Conv `conv{index}` of `source` into tensor `c{index}`, then `bn{index}` (tensor `b{index}`)."""
    bn, parameters = batchnorm(index, f"c{index}")
    conv = helper.make_node("Conv", [source, f"w{index}"], [f"c{index}"], name=f"conv{index}")
    return [conv, bn], [const(f"w{index}", np.ones((2, 2, 1, 1), np.float32))] + parameters


def saved(tmp_path, nodes, weights) -> Path:
    return save(make_model(nodes, [tensor("x", [1, 2, 4, 4])], [tensor("y", [1, 2, 4, 4])], weights), tmp_path / "m.onnx")


def layer(op_type, inputs, outputs, quant_type):
    return {"op_type": op_type, "inputs": inputs, "outputs": outputs, "quant_type": quant_type}


def test_a_batchnorm_before_a_float_sum_runs_in_the_conv_it_was_folded_into(tmp_path):
    first, w1 = conv_bn(1, "x")
    second, w2 = conv_bn(2, "x")
    path = saved(tmp_path, first + second + [helper.make_node("Sum", ["b1", "b2"], ["y"], name="sum")], w1 + w2)
    # esp-ppq folded both BatchNormalizations into their Conv (their tensors b1, b2 are gone) and
    # runs the Sum in float behind its own DequantizeLinear glue.
    layers = [
        layer("Conv", ["x", "_v_1", "_v_2"], ["c1"], "S8"),
        layer("Conv", ["x", "_v_3", "_v_4"], ["c2"], "S8"),
        layer("DequantizeLinear", ["c1", "PPQ_1", "PPQ_2"], ["PPQ_0"], "F32"),
        layer("DequantizeLinear", ["c2", "PPQ_4", "PPQ_5"], ["PPQ_3"], "F32"),
        layer("Sum", ["PPQ_0", "PPQ_3"], ["y"], "F32"),
    ]
    verdict = verdict_from_case(path, {"ok": True, "layers": layers, "initializers": []}, "1.3.12")
    placements = {name: v.placement for name, v in verdict.nodes.items()}
    assert placements == {"conv1": Placement.ACCELERATOR, "bn1": Placement.ACCELERATOR, "conv2": Placement.ACCELERATOR, "bn2": Placement.ACCELERATOR, "sum": Placement.FLOAT}
    assert verdict.nodes["bn1"].detail == "fused into Conv S8"


def test_a_batchnorm_fused_with_its_relu_stays_with_the_layer_both_went_into(tmp_path):
    nodes, weights = conv_bn(1, "x")
    path = saved(tmp_path, nodes + [helper.make_node("Relu", ["b1"], ["y"], name="relu")], weights)
    layers = [layer("Conv", ["x", "_v_1", "_v_2"], ["y"], "S8")]  # Conv + BatchNormalization + Relu as one layer
    verdict = verdict_from_case(path, {"ok": True, "layers": layers, "initializers": []}, "1.3.12")
    assert {name: (v.placement, v.detail) for name, v in verdict.nodes.items()} == {
        "conv1": (Placement.ACCELERATOR, "fused into Conv S8"),
        "bn1": (Placement.ACCELERATOR, "fused into Conv S8"),
        "relu": (Placement.ACCELERATOR, "Conv S8"),
    }


def test_a_batchnorm_after_another_operator_keeps_the_layer_its_consumers_went_into(tmp_path):
    bn, parameters = batchnorm(1, "a")
    nodes = [helper.make_node("Add", ["x", "x"], ["a"], name="add"), bn, helper.make_node("Relu", ["b1"], ["y"], name="relu")]
    path = saved(tmp_path, nodes, parameters)
    layers = [layer("Add", ["x", "x"], ["a"], "S8"), layer("Relu", ["PPQ_0"], ["y"], "F32")]
    verdict = verdict_from_case(path, {"ok": True, "layers": layers, "initializers": []}, "1.3.12")
    assert verdict.nodes["bn1"].placement is Placement.FLOAT and verdict.nodes["bn1"].detail == "fused into Relu F32"


def test_an_exported_op_type_without_an_esp_dl_module_makes_the_truth_a_refusal(monkeypatch):
    """ESP-DL 3.3.9's loader builds a module per exported node by op type and stops on one it has none for
    (registry.ESP_DL_RUNTIME_MODULES): esp-ppq's conversion of such a model is read as refused (docs/audit.md,
    "ESP-DL's module registry in the truth"), unless the old reading (esp-ppq's .info alone) is asked for."""
    import sys

    from edgedeploy.targets.espdl.verdict import modules_the_runtime_lacks

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts" / "corpus"))
    import agreement

    assert modules_the_runtime_lacks(["Conv", "Max", "Erf", "LUT", "Gelu", "ReduceMax", "Max"]) == ["Erf", "Max"]
    pair = {"failed": None, "placements": "AA", "detail": {}, "runtime_lacks": ["Max"]}
    codes, failed, _ = agreement.truth_of(pair, "esp32s3")
    assert codes == "AA" and "no module for Max" in failed
    monkeypatch.setattr(agreement, "ESP_READING", "esp-ppq")
    assert agreement.truth_of(pair, "esp32s3")[1] is None


def test_the_user_s_paths_read_an_exported_op_type_without_a_module_as_the_toolchain_s_refusal(tmp_path):
    """build and audit --confirm (the_runtime_loads): esp-ppq's int8 Max is a refusal naming the op type,
    its node and ESP-DL's version, esp-ppq's placements kept beside; the collectors' reading is unchanged."""
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="relu"), helper.make_node("Max", ["a", "x"], ["y"], name="max_ab")]
    path = saved(tmp_path, nodes, [])
    layers = [layer("Relu", ["x"], ["a"], "S8"), layer("Max", ["a", "x"], ["y"], "S8")]
    case = {"ok": True, "layers": layers, "initializers": []}
    assert verdict_from_case(path, case, "1.3.12").failed is None
    verdict = verdict_from_case(path, case, "1.3.12", the_runtime_loads=True)
    assert verdict.failed.startswith("ESP-DL 3.3.9 registers no module for Max (node 'max_ab') (dl_module_creator.hpp)")
    assert verdict.nodes["max_ab"].placement is Placement.ACCELERATOR
    plain = [layer("Relu", ["x"], ["y"], "S8")]
    path = saved(tmp_path, [helper.make_node("Relu", ["x"], ["y"], name="relu")], [])
    assert verdict_from_case(path, {"ok": True, "layers": plain, "initializers": []}, "1.3.12", the_runtime_loads=True).failed is None


def test_the_runtime_refusal_names_a_few_nodes_per_op_type_and_counts_the_rest():
    from edgedeploy.targets.espdl.verdict import runtime_refusal

    said = runtime_refusal(["Erf", "Max"], {"Erf": ["e1", "e2", "e3", "e4", "e5"]})
    assert "no module for Erf (nodes 'e1', 'e2', 'e3' and 2 more), Max (dl_module_creator.hpp)" in said
    assert runtime_refusal(["Max"]).startswith("ESP-DL 3.3.9 registers no module for Max (dl_module_creator.hpp)")
