"""What a target adds to `edgedeploy report` is data (edgedeploy.report.sections), rendered by the core.

A target hands in titled facts and tables with units and notes; the core checks them and shows
them in all four formats (text, Markdown, HTML, JSON valid against comparison-1.json) without
the target rendering anything. A section not in that shape, or a target whose report_sections
raises, is left out with a note and stops nothing.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest

from edgedeploy.pipeline.report import combine_reports
from edgedeploy.report.artifact import LoadedArtifact
from edgedeploy.report.combine import combine
from edgedeploy.report.html import render_html
from edgedeploy.report.markdown import render_markdown
from edgedeploy.report.schema import REPORT_SCHEMA
from edgedeploy.report.sections import Column, Fact, ReportSectionError, Section, Table, checked_section
from edgedeploy.report.text import render_comparison

HOSTILE = "conv|<b>x</b>`\x1b[31m"  # a model-supplied layer name with Markdown, HTML and terminal specials


def artifact(tmp_path: Path, target: str, chip: str, **sections) -> LoadedArtifact:
    """An artifact known by its report alone (the renderers read nothing else)."""
    report = {"schema": REPORT_SCHEMA, "edgedeploy_version": "0.1.0", "model": {"name": "m", "sha256": "ab" * 32, "input_shapes": {"x": [1, 3]}}, "target": {"target": target, "chip": chip}, **sections}
    folder = tmp_path / chip
    folder.mkdir()
    return LoadedArtifact(folder, report, None)


def all_formats(comp: dict) -> dict[str, str]:
    from edgedeploy.report.schemas import validate

    validate(comp)  # the JSON is what comparison-1.json (the core's schema) describes
    return {"json": json.dumps(comp), "text": render_comparison(comp), "markdown": render_markdown(comp), "html": render_html(comp)}


def readable(fmt: str, page: str) -> str:
    """The text a reader sees: Markdown's backslash escapes resolved; the HTML page's entities
    resolved, without the comparison JSON it embeds (which would hold every word anyway)."""
    if fmt == "markdown":
        return re.sub(r"\\(.)", r"\1", page)
    if fmt == "html":
        return html.unescape(page.split("edgedeploy-data")[0])
    return page


def made_up_section() -> Section:
    columns = (Column("Layer", kind="name"), Column("Bytes", unit="bytes"), Column("Error", unit="dB", kind="number"))
    table = Table("scratch use per layer", columns, ((HOSTILE, 70000, 12.25), ("fc", 512, None)), notes=("two layers only",), name="scratch")
    return Section("Made-up toolchain's figures", facts=(Fact("peak scratch", 1536, "bytes"), Fact("clock", 400.0, "MHz", note="nominal")), tables=(table,), notes=("made up for the test",), source="the made-up compiler 9.9")


def test_a_targets_data_appears_in_all_four_formats(tmp_path):
    comp = combine([artifact(tmp_path, "madeup", "chipx")], lambda art: [made_up_section()])
    [entry] = comp["sections"]
    assert entry["artifact"] == "A1" and entry["target"] == "madeup" and entry["facts"][0] == {"label": "peak scratch", "value": 1536, "unit": "bytes", "note": None}
    out = all_formats(comp)
    for fmt, page in out.items():
        page = readable(fmt, page)
        for words in ("Made-up toolchain's figures", "peak scratch", "scratch use per layer", "two layers only", "made up for the test", "the made-up compiler 9.9"):
            assert words in page, (fmt, words)
    # Units: bytes for people in every rendering, other units after the number or in the header.
    for fmt in ("text", "markdown", "html"):
        page = readable(fmt, out[fmt])
        assert "1.5 KiB (1536 B)" in page and "68.4 KiB (70000 B)" in page and "400 MHz" in page and "12.25" in page, fmt
    assert "ERROR (dB)" in out["text"] and "Error \\(dB\\)" in out["markdown"] and "<th>Error (dB)</th>" in out["html"]
    # The model-supplied name is escaped for each format: no markup, no escape sequence gets through.
    assert "<b>x</b>" not in out["html"] and "<code>conv|&lt;b&gt;x&lt;/b&gt;`\\x1b[31m</code>" in out["html"] and "<table class='scratch'>" in out["html"]
    assert "\x1b" not in out["text"] + out["markdown"] + out["html"]
    assert '`"conv\\|<b>x</b>\\u0060\\u001b[31m"`' in out["markdown"]  # a code span; the table's pipe escaped


def test_the_real_targets_sections_come_from_their_report_data(tmp_path):
    """eIQ's Vela estimates, ESP-DL's and RKNN's worst layers, TensorRT's engine, TIDL's settings, from report sections alone, in all four formats."""
    vela = {"estimates": {"system_config": "Ethos_U65_High_End", "memory_mode": "Dedicated_Sram_384KB", "sram_used_bytes": 17200, "dram_used_bytes": 27968}}
    layers = [{"onnx_node": f"/conv{i}", "op_type": "Conv", "precision": "int8", "graphwise_snr_db": 20.0 + i, "layerwise_snr_db": 40.0 + i} for i in range(8)]
    quantization = {"output_snr_db": 21.5, "metric": "noise:signal power ratio.", "layers": layers}
    nodes = {f"/layer{i}/Conv": {"tensor": f"t{i}", "op_type": "Conv", "single_cosine": 0.999 - i / 1000, "entire_cosine": 0.99 - i / 100, "single_euclidean": 1.0, "entire_euclidean": 2.0} for i in range(7)}
    analysis = {"status": "done", "nodes": nodes, "samples": 1, "file": "accuracy_analysis.txt", "note": "cosine of the simulator's layer outputs vs the float model's"}
    arts = [
        artifact(tmp_path, "eiq", "imx93", vela=vela),
        artifact(tmp_path, "espdl", "esp32s3", quantization=quantization),
        artifact(tmp_path, "rknn", "rk3588"),
        artifact(tmp_path, "rknn", "rk3566", accuracy_analysis=analysis),
        artifact(tmp_path, "rknn", "rk3568", accuracy_analysis={"status": "failed", "reason": "accuracy_analysis failed: out of memory"}),
    ]
    stats = {"min_us": 810.0, "max_us": 1400.0, "mean_us": 905.5, "median_us": 901.25, "percentiles_us": {"99": 1300.0}}
    trtexec = {"note": "trtexec's own timing on 'orin' after the build", "throughput_qps": 1100.5, "summary_us": {"latency": stats, "gpu_compute_time": stats}}
    tensorrt = {"built_on": "orin", "from_cache": False, "build_wall_s": 42.5, "provenance": {"trt_version": "10.3.0", "gpu_name": "Orin"}, "trtexec_performance": trtexec, "engine_layers": 12}
    arts.append(artifact(tmp_path, "tensorrt", "orin", tensorrt=tensorrt))
    denied = [{"node": "/head/Softmax", "layer_name": "n7", "op_type": "Softmax", "reason": "Softmax on a non-last axis runs on the Arm cores"}]
    arts.append(artifact(tmp_path, "tidl", "am62a", tidl={"soc": "am62a", "tidl_version": "10_01_04_00", "tensor_bits": 8, "deny_list": denied, "deny_list_ignored": ["/head/Softmax"]}))
    comp = combine_reports(arts)
    assert [(e["artifact"], e["target"]) for e in comp["sections"]] == [("A1", "eiq"), ("A2", "espdl"), ("A4", "rknn"), ("A5", "rknn"), ("A6", "tensorrt"), ("A7", "tidl")]
    tidl = comp["sections"][5]
    assert [f["label"] for f in tidl["facts"]] == ["SoC", "TIDL release", "tensor bits"] and tidl["tables"][0]["rows"] == [["/head/Softmax", "Softmax", denied[0]["reason"]]]
    trt = comp["sections"][4]
    assert {f["label"]: f["value"] for f in trt["facts"]} == {"built on": "orin", "TensorRT": "10.3.0", "GPU": "Orin", "layers in the engine": 12, "build time": 42.5, "trtexec throughput": 1100.5}
    assert [row[0] for row in trt["tables"][0]["rows"]] == ["latency", "GPU compute"]
    [rknn_table] = comp["sections"][2]["tables"]
    assert [row[0] for row in rknn_table["rows"]] == ["/layer6/Conv", "/layer5/Conv", "/layer4/Conv", "/layer3/Conv", "/layer2/Conv"] and rknn_table["title"].endswith("5 of 7 analysed nodes")
    assert comp["sections"][3]["facts"] == [{"label": "status", "value": "failed", "unit": None, "note": "accuracy_analysis failed: out of memory"}]
    vela_facts = {f["label"]: (f["value"], f["unit"]) for f in comp["sections"][0]["facts"]}
    assert vela_facts == {"SRAM used": (17200, "bytes"), "DRAM used": (27968, "bytes")}
    worst = comp["sections"][1]["tables"]
    assert [t["title"] for t in worst] == ["lowest graph-wise SNR: 5 of 8 quantised layers", "lowest layer-wise SNR: 5 of 8 quantised layers"]
    assert [row[0] for row in worst[0]["rows"]] == ["/conv0", "/conv1", "/conv2", "/conv3", "/conv4"]
    out = all_formats(comp)
    for fmt, page in out.items():
        page = readable(fmt, page)
        for words in ("SRAM used", "Dedicated_Sram_384KB", "lowest graph-wise SNR", "/conv4", "noise:signal power ratio.", "/layer6/Conv", "0.993", "out of memory", "trtexec's own timing after the build", "901.2", "10_01_04_00", "non-last axis", "offloaded denied node(s) anyway: /head/Softmax"):
            assert words in page, (fmt, words)
        assert fmt == "json" or "1100 inferences/s" in page, fmt
    # Only the worst five of each kind are shown (the source reports, verbatim in the JSON and the page's embedded copy, hold all).
    shown = {"json": json.dumps(comp["sections"]), "text": out["text"], "markdown": out["markdown"], "html": out["html"].split("edgedeploy-data")[0]}
    assert all("/conv5" not in page for page in shown.values())
    assert "16.8 KiB (17200 B)" in out["text"] and "21.5 dB" in out["markdown"] and "<table class='worst-layers'>" in out["html"]


@pytest.mark.parametrize(
    "bad, says",
    [
        ("text", "is a str, not an edgedeploy.report.sections.Section"),
        (Section("t", facts=(Fact("x", [1, 2]),)), "facts[0].value is a list"),
        (Section("t", tables=(Table("t", (Column("a"),), ((1, 2),)),)), "rows[0] has 2 values for 1 columns"),
        (Section("t", tables=(Table("t", (Column("a", kind="bar"),), ()),)), "kind is 'bar'"),
        (Section("t", tables=(Table("t", (Column("a"),), (), name="x' onload='y"),)), "must be lower-case letters"),
        (Section(""), "title must be a non-empty string"),
    ],
)
def test_a_section_out_of_shape_is_refused_in_one_sentence(bad, says):
    with pytest.raises(ReportSectionError, match=None) as caught:
        checked_section(bad)
    assert says in str(caught.value)


def test_a_bad_or_raising_target_is_left_out_with_a_note(tmp_path):
    arts = [artifact(tmp_path, "madeup", "chipx"), artifact(tmp_path, "other", "chipy")]

    def contribution(art):
        if art.report["target"]["chip"] == "chipx":
            return [made_up_section(), Section("t", facts=(Fact("x", {"no": "dicts"}),))]
        raise ReportSectionError("the other target's report_sections raised KeyError: 'vela'")

    comp = combine(arts, contribution)
    assert comp["sections"] == []
    notes = [n for n in comp["notes"] if "left out" in n]
    assert notes == [
        "A1 chipx: what its target adds to the report is left out: section 2.facts[0].value is a dict, not a string, number, boolean or null.",
        "A2 chipy: what its target adds to the report is left out: the other target's report_sections raised KeyError: 'vela'.",
    ]
    assert all(note in all_formats(comp)["text"] for note in notes)
