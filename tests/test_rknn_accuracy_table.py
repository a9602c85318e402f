"""rknn-toolkit2's accuracy_analysis report, mapped to ONNX node names (captured real report)."""

from __future__ import annotations

from pathlib import Path

import onnx

from edgedeploy.sample import sample_model_path
from edgedeploy.targets.rknn.accuracy_table import parse_error_analysis, per_node_errors

FIXTURE = Path(__file__).parent / "fixtures" / "rknn" / "mnist_cnn.rk3588.error_analysis.txt"


def test_rows_and_figures():
    rows = parse_error_analysis(FIXTURE.read_text())
    assert rows[0]["tensor"] == "input" and rows[0]["entire_cosine"] == 1.0
    fused = [r for r in rows if r["entire_cosine"] is None]
    assert [r["op_type"] for r in fused] == ["Conv"] * 4
    assert all(0.99 < r["single_cosine"] <= 1.0 for r in rows if r["single_cosine"] is not None)


def test_maps_to_onnx_nodes_including_fused_convolutions():
    analysis = per_node_errors(parse_error_analysis(FIXTURE.read_text()), onnx.load(str(sample_model_path())).graph)
    nodes = analysis["nodes"]
    assert "/features/features.1/Relu" in nodes and "/features/features.8/MaxPool" in nodes
    # The convolution's row has no figures (fused with its Relu); it gets the Relu's, marked so.
    conv = nodes["/features/features.0/Conv"]
    assert conv["fused_with"] == "/features/features.1/Relu"
    assert conv["single_cosine"] == nodes["/features/features.1/Relu"]["single_cosine"]
    # Suffixed toolkit tensors (logits_mm, ..._output_0-rs) still land on their ONNX node.
    assert "/classifier/classifier.3/Gemm" in nodes and "/classifier/classifier.2/Relu" in nodes
    assert {r["tensor"] for r in analysis["unmapped"]} == {"input", "input_int8"}
    worst = analysis["worst_single_cosine"]
    assert worst["cosine"] == min(v["single_cosine"] for v in nodes.values())
