"""trtexec output parsers on real outputs posted publicly (tests/fixtures/tensorrt/SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgedeploy.targets.tensorrt.trtexec_output import (
    message_of,
    parse_layer_info,
    parse_profile_json,
    parse_profile_table,
    parse_trtexec_log,
    version_from_tag,
)

FIXTURES = Path(__file__).parent / "fixtures" / "tensorrt"


def _read(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def test_every_fixture_is_cited():
    sources = _read("SOURCES.md")
    for path in FIXTURES.iterdir():
        if path.name != "SOURCES.md":
            assert f"| {path.name} |" in sources, f"{path.name} has no source in SOURCES.md"


@pytest.mark.parametrize("tag, version", [("v8400", "8.4.0"), ("v8601", "8.6.1"), ("v8502", "8.5.2"), ("v100200", "10.2.0"), ("v101600", "10.16.0")])
def test_version_tags(tag, version):
    assert version_from_tag(tag) == version


def test_message_prefixes():
    assert message_of("[12/04/2024-11:57:45] [TRT] [W] Layer 'x' (SHUFFLE): y") == "Layer 'x' (SHUFFLE): y"
    assert message_of(" [W] [TRT] Default DLA is enabled") == "Default DLA is enabled"
    assert message_of("WARNING: [TRT]: route_3: Concatenation") == "route_3: Concatenation"
    assert message_of("[03/11/2022-14:57:03] [I] Throughput: 41087.7 qps") == "Throughput: 41087.7 qps"


def test_performance_summary_jetson_xavier_trt84():
    log = parse_trtexec_log(_read("perf_summary_xavier_agx_trt84.log"))
    assert log.trt_version == "8.4.0" and log.passed is True
    assert log.command.endswith("--batch=16")
    assert log.throughput_qps == pytest.approx(41087.7)
    lat = log.summary["latency"]
    assert lat.min_us == pytest.approx(387.207) and lat.max_us == pytest.approx(447.357)
    assert lat.mean_us == pytest.approx(402.238) and lat.median_us == pytest.approx(401.947)
    assert lat.percentiles_us == {"99": pytest.approx(420.288)}
    assert log.summary["gpu_compute_time"].mean_us == pytest.approx(388.221)
    assert log.summary["h2d_latency"].median_us == pytest.approx(9.52148)
    assert log.summary["d2h_latency"].max_us == pytest.approx(5.37109)
    assert log.total_host_walltime_s == pytest.approx(3.00119)
    assert log.total_gpu_compute_s == pytest.approx(2.99202)


def test_performance_summary_trt85_end_to_end_line():
    log = parse_trtexec_log(_read("perf_summary_xavier_nx_trt85.log"))
    assert set(log.summary) == {"latency", "end_to_end_host_latency", "enqueue_time", "h2d_latency", "gpu_compute_time", "d2h_latency"}
    assert log.summary["end_to_end_host_latency"].mean_us == pytest.approx(586.663)
    assert log.passed is None  # the excerpt has no PASSED/FAILED line: unknown, not assumed


def test_performance_summary_three_percentiles():
    log = parse_trtexec_log(_read("perf_summary_trt10_p90_p95_p99.log"))
    p = log.summary["latency"].percentiles_us
    assert p == {"90": pytest.approx(10299.6), "95": pytest.approx(10869.8), "99": pytest.approx(12967.5)}
    assert log.summary["gpu_compute_time"].percentiles_us["95"] == pytest.approx(10817.5)


def test_device_information_orin_and_desktop():
    orin = parse_trtexec_log(_read("device_info_orin_trt10.log"))
    assert (orin.device_name, orin.compute_capability, orin.trt_version) == ("Orin", "8.7", "10.16.2")
    assert orin.sms == 8 and orin.device_memory_mib == 15536
    desk = parse_trtexec_log(_read("device_info_rtx2080_trt86.log"))
    assert (desk.device_name, desk.compute_capability, desk.trt_version) == ("NVIDIA GeForce RTX 2080", "7.5", "8.6.3")


def test_running_header_gives_version_and_command():
    log = parse_trtexec_log(_read("header_trt10_windows.log"))
    assert log.trt_version == "10.2.0"
    assert "--loadEngine=FM_P_D_fp16.engine" in log.command
    assert log.passed is None and log.dla_core is None


def test_dla_switches_on_orin_jetpack5():
    dla = parse_trtexec_log(_read("dla_fallback_agx_orin_jp513.log")).dla
    assert set(dla.to_gpu) == {
        "/model.23/Concat_4",
        "/model.23/Constant_12_output_0",
        "(Unnamed Layer* 388) [Shuffle]",
        "/model.23/Concat_5",
        "/model.10/m/m.0/attn/Reshape",
    }
    # The reason printed before the switch is kept, not the generic switch message.
    assert dla.to_gpu["/model.23/Concat_4"].endswith("DLA only supports concatenation on the C dimension.")
    assert dla.subgraph_splits == ["/model.10/m/m.0/attn/Reshape"]


def test_dla_switches_tutorial_and_old_wording():
    tutorial = parse_trtexec_log(_read("dla_fallback_jetson_dla_tutorial.log")).dla
    assert len(tutorial.to_gpu) == 9 and "/model.24/Constant_5_output_0" in tutorial.to_gpu
    nmt = parse_trtexec_log(_read("dla_fallback_trt7_samplenmt.log")).dla
    assert len(nmt.to_gpu) == 9 and nmt.no_layer_on_dla
    assert "exceeds max batch size" in nmt.to_gpu["EltWise multiplication in likelihood calculation"]
    yolo = parse_trtexec_log(_read("dla_fallback_deepstream_yolo.log"))
    assert set(yolo.dla.to_gpu) == {"leaky_1", "leaky_2", "leaky_3", "route_3", "(Unnamed Layer* 10) [Slice]", "leaky_5"}
    assert "LEAKY_RELU" in yolo.dla.to_gpu["leaky_2"]
    assert yolo.dla.to_gpu["route_3"].endswith("requires at least two inputs.")


def test_dla_listings_trt7_and_trt86():
    old = parse_trtexec_log(_read("dla_layers_running_trt7.log")).dla
    assert len(old.dla_listed) == 49 and old.dla_listed[0] == "Tanh_3" and old.dla_listed[-1] == "BatchNormalization_568"
    assert old.gpu_listed[0] == "Conv_0" and old.gpu_listed[-1] == "Softplus_12" and len(old.gpu_listed) == 22
    new = parse_trtexec_log(_read("dla_drive_orin_no_gpu_layers.log")).dla
    assert new.no_layer_on_gpu and new.gpu_listed == []
    assert new.dla_ranges == [("", "/model/Sigmoid_4")]


def test_profile_tables_both_layouts():
    dla = parse_profile_table(_read("profile_table_dla_trt8.log"))
    assert [l.name for l in dla.layers][:3] == ["images to nvm", "{ForeignNode[Conv_0...Concat_198]}", "head_3 from nvm"]
    assert dla.layers[2].total_ms == pytest.approx(3069.55) and dla.layers[2].average_us == pytest.approx(7693.1)
    new = parse_profile_table(_read("profile_table_trt10.log"))
    assert new.iterations == 2094 and len(new.layers) == 6
    assert new.layers[1].median_us == pytest.approx(22.5) and new.layers[1].percent == pytest.approx(1.6)
    old = parse_profile_table(_read("profile_table_alexnet_trt7.log"))
    assert old.iterations == 490 and len(old.layers) == 14  # the Total row is not a layer
    assert sum(l.total_ms for l in old.layers) == pytest.approx(3141.50, abs=0.05)


def test_profile_json():
    profile = parse_profile_json(_read("profile_export_cbr.json"))
    assert profile.iterations == 41400
    (layer,) = profile.layers
    assert layer.name == "/conv1/Conv + /act1/Relu"
    assert layer.average_us == pytest.approx(28.0382) and layer.median_us == pytest.approx(27.872)


def test_layer_info_names_only():
    layers = parse_layer_info(_read("layerinfo_names_trt84.json"))
    assert len(layers) == 12
    assert layers[0].onnx_nodes == ["Conv__25", "Relu"] and layers[0].fused
    assert layers[2].is_reformat and layers[2].onnx_nodes == []
    assert layers[-1].onnx_nodes == []  # "(Unnamed Layer* 52) [Shuffle]" has no ONNX name


def test_layer_info_detailed_and_metadata():
    (layer,) = parse_layer_info(_read("layerinfo_detailed_trt8_one_layer.json"))
    assert layer.layer_type == "CaskPooling" and layer.onnx_nodes == ["GlobalAveragePool_5"]
    assert layer.tactic.startswith("sm50_xmma_pooling")
    # Metadata as printed by TensorRT 10 with --profilingVerbosity=detailed (NVIDIA/TensorRT#4020):
    meta = (
        "[ONNX Layer: resnetv15_stage1_conv1_fwd]\u001e[ONNX Layer: resnetv15_stage1_batchnorm1_fwd]"
        "\u001e[ONNX Layer: resnetv15_stage1__plus0]\u001e[ONNX Layer: resnetv15_stage1_activation0]"
    )
    text = '{"Layers": [{"Name": "fused", "LayerType": "CaskConvolution", "Metadata": %s}]}' % __import__("json").dumps(meta)
    (fused,) = parse_layer_info(text)
    assert fused.onnx_nodes == [
        "resnetv15_stage1_conv1_fwd",
        "resnetv15_stage1_batchnorm1_fwd",
        "resnetv15_stage1__plus0",
        "resnetv15_stage1_activation0",
    ]


def test_bad_layer_info_is_one_clear_error():
    with pytest.raises(ValueError, match="not JSON"):
        parse_layer_info("{Layers: ")
