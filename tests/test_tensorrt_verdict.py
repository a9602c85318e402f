"""TensorRT's own placement (ToolchainVerdict) from real build logs, mapped onto ONNX node names."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from edgedeploy.audit.rules import Placement
from edgedeploy.targets.tensorrt.trtexec_output import parse_layer_info, parse_trtexec_log
from edgedeploy.targets.tensorrt.verdict import build_failure, toolchain_verdict

FIXTURES = Path(__file__).parent / "fixtures" / "tensorrt"


def _graph(names_ops):
    """A chain graph whose node names are the ones in a real log (the ops are what those names say)."""
    nodes = []
    prev = "x"
    for i, (name, op) in enumerate(names_ops):
        out = f"t{i}"
        if op == "Constant":
            nodes.append(helper.make_node("Constant", [], [name], name="", value=numpy_helper.from_array(np.zeros(1, np.float32))))
            continue
        nodes.append(helper.make_node(op, [prev], [out], name=name))
        prev = out
    return helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])], [helper.make_tensor_value_info(prev, TensorProto.FLOAT, None)])


def test_orin_dla_log_maps_switched_layers_to_nodes():
    # Node names as in the AGX Orin / JetPack 5.1.3 log (ultralytics#18012); the Constant node is
    # unnamed, so TensorRT names its layer after its output tensor.
    graph = _graph(
        [
            ("/model.0/conv/Conv", "Relu"),
            ("/model.10/m/m.0/attn/Reshape", "Relu"),
            ("/model.23/Constant_12_output_0", "Constant"),
            ("/model.23/Concat_4", "Relu"),
            ("/model.23/Concat_5", "Relu"),
        ]
    )
    log = parse_trtexec_log((FIXTURES / "dla_fallback_agx_orin_jp513.log").read_text())
    verdict = toolchain_verdict(graph, log, None, dla=True)
    assert verdict.failed is None
    assert verdict.nodes["/model.0/conv/Conv"].placement is Placement.ACCELERATOR
    for node in ("/model.10/m/m.0/attn/Reshape", "/model.23/Concat_4", "/model.23/Concat_5"):
        assert verdict.nodes[node].placement is Placement.FALLBACK, node
    assert "concatenation on the C dimension" in verdict.nodes["/model.23/Concat_4"].detail
    constant = [n for n in verdict.nodes if n.startswith("Constant_")][0]
    assert verdict.nodes[constant].placement is Placement.FALLBACK  # found through its output name
    assert "switched to GPU: (Unnamed Layer* 388) [Shuffle]" in verdict.unmapped


def test_no_layer_on_dla_puts_everything_on_the_gpu():
    graph = _graph([("Projection Matrix Multiply", "Relu"), ("Some other layer", "Relu")])
    log = parse_trtexec_log((FIXTURES / "dla_fallback_trt7_samplenmt.log").read_text())
    verdict = toolchain_verdict(graph, log, None, dla=True)
    assert all(v.placement is Placement.FALLBACK for v in verdict.nodes.values())


def test_gpu_build_places_everything_on_the_gpu_with_fusion_detail():
    graph = _graph([("Conv__25", "Relu"), ("Relu", "Relu"), ("MaxPool2d", "Relu"), ("folded_away", "Relu")])
    log = parse_trtexec_log((FIXTURES / "perf_summary_xavier_agx_trt84.log").read_text())
    layers = parse_layer_info((FIXTURES / "layerinfo_names_trt84.json").read_text())
    verdict = toolchain_verdict(graph, log, layers, dla=False)
    assert verdict.version == "8.4.0"
    assert all(v.placement is Placement.ACCELERATOR for v in verdict.nodes.values())
    assert verdict.nodes["Relu"].detail == "GPU; engine layer 'Conv__25 + Relu'"
    assert "folded or fused away" in verdict.nodes["folded_away"].detail
    assert any(u.startswith("engine layer: ") for u in verdict.unmapped)


def test_failed_build_is_a_failed_verdict():
    # Lines in trtexec's error format, written for this test (the other tests read real logs).
    log = parse_trtexec_log(
        "[E] [TRT] ModelImporter.cpp:726: ERROR: builtin_op_importers.cpp:4531 In function importFallbackPluginImporter:\n"
        "[E] Failed to parse onnx file\n"
        "&&&& FAILED TensorRT.trtexec [TensorRT v8502] # trtexec --onnx=model.onnx\n"
    )
    assert build_failure(log) == "Failed to parse onnx file"
    verdict = toolchain_verdict(_graph([("a", "Relu")]), log, None, dla=False)
    assert verdict.failed == "Failed to parse onnx file" and not verdict.nodes
