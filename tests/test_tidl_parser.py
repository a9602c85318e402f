"""Reading TIDL's compile artifacts into the audit's placement form.

The fixtures under tests/fixtures/tidl/ are HAND-MADE from the formats TI documents (see the
README there), not captured from a real compilation: TI's tools cannot be installed here. The
formats: allowedNode.txt and tempDir/graphvizInfo.txt as TIDL's ONNX Runtime import writes them,
*_tidl_net.bin / *_tidl_io_1.bin and tempDir/*.layer_info.txt as listed in edgeai-tidl-tools
docs/model_compilation.md (11.02) and docs/tidl_osr_debug.md (11_00_06_00).
"""

from __future__ import annotations

import shutil

import pytest

from edgedeploy.audit import Placement, audit_model
from edgedeploy.audit.confirm import compare
from edgedeploy.targets import find_chip
from edgedeploy.targets.tidl.artifact_parser import (
    ArtifactFormatError,
    parse_allowed_nodes,
    parse_graphviz_info,
    parse_layer_info,
    parse_log_summary,
    read_compiled_artifacts,
    verdict_from_artifacts,
)

from tests.tidl_models import FIXTURES, conv_erf_conv_model, conv_relu_pool_model, save_and_load


def test_allowed_nodes_groups():
    assert parse_allowed_nodes("2\n1\n0\n2\n2\n3\n") == [[0], [2, 3]]
    assert parse_allowed_nodes("0\n") == []


@pytest.mark.parametrize(
    "text, words",
    [
        ("", "empty"),
        ("2\n1\n0\n", "ends after 1"),
        ("1\n3\n0\n1\n", "announces 3 nodes but lists 2"),
        ("1\n1\n0\n7\n", "1 values after"),
        ("1\nx\n", "not an integer"),
    ],
)
def test_allowed_nodes_malformed_is_one_clear_error(text, words):
    with pytest.raises(ArtifactFormatError) as info:
        parse_allowed_nodes(text)
    assert words in str(info.value)
    assert "\n" not in str(info.value)


def test_graphviz_info_reads_names_types_and_reasons():
    text = (FIXTURES / "conv_erf_conv" / "artifacts" / "tempDir" / "graphvizInfo.txt").read_text()
    nodes = parse_graphviz_info(text)
    assert [(n.index, n.name, n.op_type) for n in nodes] == [(0, "c1", "Conv"), (1, "erf", "Erf"), (2, "y", "Conv")]
    assert nodes[0].diagnostic == ""
    assert "deny_list" in nodes[1].diagnostic


def test_graphviz_info_name_with_spaces_and_count_check():
    nodes = parse_graphviz_info("1\n0 my conv Conv outputAdjNodes 0 y inputAdjNodes 0 x additionalOutput 0 diagInfo \n")
    assert (nodes[0].name, nodes[0].op_type) == ("my conv", "Conv")
    with pytest.raises(ArtifactFormatError, match="announces 2 nodes"):
        parse_graphviz_info("2\n0 a Relu outputAdjNodes 0 y inputAdjNodes 0 x additionalOutput 0 diagInfo \n")


def test_layer_info_and_log_summary():
    assert [(l.layer_id, l.data_id, l.name) for l in parse_layer_info("0 0 x\n1 1 b\n\nnoise\n")] == [(0, 0, "x"), (1, 1, "b")]
    log = "stuff\nFinal number of subgraphs created are : 2, - Offloaded Nodes - 5, Total Nodes - 9 \nmore"
    assert parse_log_summary(log) == {"subgraphs": 2, "offloaded_nodes": 5, "total_nodes": 9}
    assert parse_log_summary("nothing") is None


def test_fully_offloaded_fixture(tmp_path):
    folder = FIXTURES / "conv_relu_pool"
    compiled = read_compiled_artifacts(folder / "artifacts", (folder / "compile.log").read_text())
    summary = compiled.summary()
    assert summary["subgraphs"] == 1 and summary["offloaded_nodes"] == 3 and summary["graph_nodes"] == 3
    assert summary["networks"] == ["subgraph_0_tidl_net.bin"] and summary["io_descriptors"] == ["subgraph_0_tidl_io_1.bin"]
    assert summary["log_summary"] == {"subgraphs": 1, "offloaded_nodes": 3, "total_nodes": 3}
    model = save_and_load(conv_relu_pool_model(), tmp_path)
    verdict = verdict_from_artifacts(compiled, model.proto, "11.02")
    assert verdict.failed is None and verdict.unmapped == []
    assert {k: v.placement for k, v in verdict.nodes.items()} == {"conv1": Placement.ACCELERATOR, "relu1": Placement.ACCELERATOR, "pool1": Placement.ACCELERATOR}
    assert verdict.nodes["relu1"].detail == "TIDL subgraph 0, TIDL layer subgraph_0_tidl_net.bin:1"
    result = compare(audit_model(model, find_chip("am68a")[0].rule_set("am68a"), "int8"), verdict)
    assert (result["agree"], result["compared"], result["disagreements"]) == (3, 3, [])


def test_two_subgraphs_with_arm_fallback_and_nameless_node(tmp_path):
    folder = FIXTURES / "conv_erf_conv"
    compiled = read_compiled_artifacts(folder / "artifacts", (folder / "compile.log").read_text())
    assert compiled.subgraphs == [[0], [2]]
    assert compiled.networks == ["a_tidl_net.bin", "y_tidl_net.bin"]  # older naming: after the subgraph's output
    model = save_and_load(conv_erf_conv_model(), tmp_path)
    verdict = verdict_from_artifacts(compiled, model.proto, "11.02")
    # The nameless Conv is "Conv_2" in edgedeploy's reports and "y" (its first output) to TIDL.
    assert verdict.nodes["c1"].placement is Placement.ACCELERATOR
    assert verdict.nodes["Conv_2"].placement is Placement.ACCELERATOR
    assert verdict.nodes["Conv_2"].detail.startswith("TIDL subgraph 1")
    assert verdict.nodes["erf"].placement is Placement.FALLBACK
    assert "deny_list" in verdict.nodes["erf"].detail  # TIDL's own reason, from diagInfo
    audit = audit_model(model, find_chip("tda4vm")[0].rule_set("tda4vm"), "int8")
    assert compare(audit, verdict)["agreement"] == 1.0


def test_without_graphviz_info_nodes_map_by_index(tmp_path):
    folder = tmp_path / "artifacts"
    shutil.copytree(FIXTURES / "conv_erf_conv" / "artifacts", folder)
    (folder / "tempDir" / "graphvizInfo.txt").unlink()
    model = save_and_load(conv_erf_conv_model(), tmp_path)
    verdict = verdict_from_artifacts(read_compiled_artifacts(folder), model.proto, "11.02")
    assert [verdict.nodes[n].placement for n in ("c1", "erf", "Conv_2")] == [Placement.ACCELERATOR, Placement.FALLBACK, Placement.ACCELERATOR]
    # The metadata's node count guards the index mapping: artifacts of another graph are refused.
    (folder / "onnxrtMetaData.txt").write_text("numGraphNodes=7\n")
    other = verdict_from_artifacts(read_compiled_artifacts(folder), model.proto, "11.02")
    assert other.failed and "7 nodes" in other.failed and other.nodes == {}


def test_missing_networks_mean_the_compile_stopped(tmp_path):
    folder = tmp_path / "artifacts"
    shutil.copytree(FIXTURES / "conv_erf_conv" / "artifacts", folder)
    (folder / "y_tidl_net.bin").unlink()
    model = save_and_load(conv_erf_conv_model(), tmp_path)
    verdict = verdict_from_artifacts(read_compiled_artifacts(folder), model.proto, "11.02")
    assert verdict.failed and "2 subgraphs" in verdict.failed and "1 network" in verdict.failed


def test_unknown_graphviz_node_is_kept_as_unmapped(tmp_path):
    folder = tmp_path / "artifacts"
    shutil.copytree(FIXTURES / "conv_relu_pool" / "artifacts", folder)
    info = folder / "tempDir" / "graphvizInfo.txt"
    info.write_text(info.read_text().replace("relu1 Relu", "fused_thing Relu"))
    model = save_and_load(conv_relu_pool_model(), tmp_path)
    verdict = verdict_from_artifacts(read_compiled_artifacts(folder), model.proto, "11.02")
    assert verdict.unmapped == ["fused_thing (Relu, TIDL index 1)"]
    assert "relu1" not in verdict.nodes  # nothing is invented for it


def test_folder_without_allowed_nodes_is_one_clear_error(tmp_path):
    with pytest.raises(ArtifactFormatError, match="no allowedNode.txt"):
        read_compiled_artifacts(tmp_path)
