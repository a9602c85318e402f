"""Reports: schema check, combining artifacts, and the text / Markdown / HTML / JSON renderings."""

from __future__ import annotations

import json
import re

import onnx
import pytest
from click.testing import CliRunner
from onnx import TensorProto, helper

from edgedeploy.cli import cli
from edgedeploy.errors import ArtifactError
from edgedeploy.report.artifact import load_artifact, update_report_section
from edgedeploy.report.combine import combine
from edgedeploy.report.html import render_html
from edgedeploy.report.schema import REPORT_SCHEMA, validate_report
from tests.measure_helpers import add_test_audit, fast_settings, make_artifact


@pytest.fixture(scope="module")
def two_measured(tmp_path_factory):
    """fp32 and int8 onnx-cpu artifacts of the sample, each audited (test rule set) and measured on `local`."""
    from edgedeploy.devices import local_device
    from edgedeploy.pipeline.measure import MeasureRequest, run_measure

    out = tmp_path_factory.mktemp("report")
    arts = []
    for variant in ("fp32", "int8-qdq"):
        art = make_artifact(out, variant)
        add_test_audit(art)
        run_measure(MeasureRequest(art, local_device(), fast_settings(), eval_count=60))
        arts.append(art)
    return out, arts


def test_schema_version_check():
    good = {"schema": REPORT_SCHEMA, "edgedeploy_version": "0.1.0", "model": {"name": "m", "sha256": "ab", "input_shapes": {}}, "target": {"target": "x"}}
    assert validate_report(good) is good
    with pytest.raises(ArtifactError, match="newer than this edgedeploy"):
        validate_report(dict(good, schema="edgedeploy.report/2"))
    with pytest.raises(ArtifactError, match="not an edgedeploy report"):
        validate_report(dict(good, schema="something/1"))
    with pytest.raises(ArtifactError, match="model.sha256 is missing"):
        validate_report(dict(good, model={"name": "m", "input_shapes": {}}))
    with pytest.raises(ArtifactError, match="measurements must be a dict"):
        validate_report(dict(good, measurements=[1]))


def test_report_cli_refuses_a_folder_without_reports(tmp_path):
    (tmp_path / "report.json").write_text('{"schema": "edgedeploy.report/9"}')
    # A hand-made report has no manifest: refused as such first; unverified, its schema is refused.
    r = CliRunner().invoke(cli, ["report", str(tmp_path)])
    assert r.exit_code != 0 and "manifest.json is missing" in str(r.exception)
    r = CliRunner().invoke(cli, ["report", "--no-verify", str(tmp_path)])
    assert r.exit_code != 0 and "newer than this edgedeploy" in str(r.exception)


def test_combined_json_keeps_reports_and_never_divides_across_devices(two_measured):
    out, arts = two_measured
    r = CliRunner().invoke(cli, ["report", str(out), "--format", "json"])
    assert r.exit_code == 0, r.output
    comp = json.loads(r.stdout)
    assert comp["schema"] == "edgedeploy.comparison/1"
    assert [a["path"] for a in comp["artifacts"]] == [str(a) for a in sorted(arts)]
    assert set(comp["reports"]) == {"A1", "A2"}  # the sources, verbatim
    assert any("never divided" in n for n in comp["notes"])
    (group,) = comp["latency"]  # both measured on the same device: one group
    assert group["device"] == "local" and len(group["entries"]) == 4
    for entry in group["entries"]:
        assert entry["scope"]["device"]["name"] == "local" and entry["scope"]["model"]["sha256"]
    for c in group["comparisons"]:
        assert c["differs_only_in"] == "deployment" and c["speedup"] > 0
    (matrix,) = comp["audit"]
    flatten = next(r for r in matrix["op_types"] if r["op_type"] == "Flatten")
    assert flatten["cells"]["A1"] == {"fallback": 1}


def test_text_and_markdown_carry_scope(two_measured):
    out, _ = two_measured
    text = CliRunner().invoke(cli, ["report", str(out)]).stdout
    md = CliRunner().invoke(cli, ["report", str(out), "--format", "md"]).stdout
    for rendering in (text, md):
        assert "model mnist_cnn sha256 20e5b3084742" in rendering
        assert "device local" in rendering and "batch 1" in rendering
        assert "ort-cpu" in rendering and "int8" in rendering and "fp32" in rendering
    assert md.count("|---|") >= 4


def test_html_is_self_contained_with_plots(two_measured, tmp_path):
    out, _ = two_measured
    target = tmp_path / "report.html"
    r = CliRunner().invoke(cli, ["report", str(out), "--format", "html", "-o", str(target)])
    assert r.exit_code == 0, r.output
    page = target.read_text()
    assert page.startswith("<!DOCTYPE html>")
    assert not re.search(r"(src|href)\s*=\s*['\"]?(https?:)?//", page)  # nothing fetched
    assert "<script src" not in page and "<link" not in page
    assert page.count("class='plot latency-plot'") == 1
    assert page.count("class='plot accuracy-plot'") == 1
    assert page.count("class='plot audit-matrix'") == 1
    assert page.count("<rect class='hist'") > 20
    embedded = re.search(r"<script type='application/json' id='edgedeploy-data'>(.*?)</script>", page, re.S).group(1)
    assert json.loads(embedded)["schema"] == "edgedeploy.comparison/1"


def _hostile_model(path):
    """A two-node model whose node, op-input and output names try to break out of HTML."""
    evil = "<script>alert('x')</script>&\"'"
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info(evil + "out", TensorProto.FLOAT, [1, 4])
    nodes = [helper.make_node("Relu", ["x"], ["mid"], name=evil), helper.make_node("Sigmoid", ["mid"], [evil + "out"], name="</table><img src=x onerror=alert(1)>")]
    model = helper.make_model(helper.make_graph(nodes, "g", [x], [y]), opset_imports=[helper.make_opsetid("", 13)])
    onnx.save(model, str(path))
    return evil


def test_html_escapes_model_supplied_names(tmp_path):
    from edgedeploy.devices.runners import make_onnx_cpu_artifact

    evil = _hostile_model(tmp_path / "evil.onnx")
    art = make_onnx_cpu_artifact(tmp_path / "evil.onnx", tmp_path / "out", "fp32")
    add_test_audit(art)
    page = render_html(combine([load_artifact(art)]))
    assert "<script>alert" not in page and "<img src=x" not in page
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in page
    # The embedded JSON cannot close its script element either.
    assert "</script>" not in page.split("id='edgedeploy-data'>", 1)[1][:-len("</script></body></html>\n")]


def test_report_sections_are_updated_under_the_manifest(tmp_path):
    from edgedeploy.artifacts import check_manifest

    art = make_artifact(tmp_path, "fp32")
    update_report_section(art, ("measurements", "dev"), {"x": 1})
    update_report_section(art, ("measurements", "dev2"), {"x": 2})
    report = json.loads((art / "report.json").read_text())
    assert report["measurements"] == {"dev": {"x": 1}, "dev2": {"x": 2}}
    check_manifest(art)
    (art / "model.onnx").write_bytes(b"tampered")
    with pytest.raises(ArtifactError, match="changed since the build"):
        check_manifest(art)


def test_two_devices_are_two_groups_and_never_divided(two_measured, tmp_path):
    """The same artifact measured on a second device (its record copied under another device
    name and machine identity): the report shows both, side by side, with no ratio between them."""
    import copy

    _, arts = two_measured
    art = arts[1]
    report = json.loads((art / "report.json").read_text())
    other = copy.deepcopy(report["measurements"]["local"])
    for rec in other["latency"].values():
        rec["scope"]["device"] = dict(rec["scope"]["device"], name="board2", hostname="board2-host", cpu_model="Cortex-A76")
    update_report_section(art, ("measurements", "board2"), other)
    try:
        comp = combine([load_artifact(art)])
        assert [g["device"] for g in comp["latency"]] == ["board2", "local"]
        for group in comp["latency"]:
            names = {e["scope"]["device"]["name"] for e in group["entries"]}
            assert names == {group["device"]}  # never a figure of another device in a group
        text = CliRunner().invoke(cli, ["report", str(art)]).stdout
        assert "Latency on device board2 (host board2-host, Cortex-A76" in text and "Latency on device local" in text
    finally:
        report_now = json.loads((art / "report.json").read_text())
        del report_now["measurements"]["board2"]
        update_report_section(art, ("measurements",), report_now["measurements"])


def test_before_after_ratio_refused_across_devices_or_inputs(two_measured):
    import copy

    from edgedeploy.pipeline.measure import compare_before_after

    _, arts = two_measured
    record = json.loads((arts[1] / "report.json").read_text())["measurements"]["local"]
    before, after = record["latency"]["before"], record["latency"]["after"]
    assert compare_before_after(before, after)["speedup"] > 0
    moved = copy.deepcopy(after)
    moved["scope"]["device"]["hostname"] = "elsewhere"
    assert compare_before_after(before, moved)["speedup"] is None
    assert "never divided" in compare_before_after(before, moved)["refused"]
    batch4 = copy.deepcopy(after)
    batch4["scope"]["batch"] = 4
    refusal = compare_before_after(before, batch4)
    assert refusal["speedup"] is None and "batch" in refusal["refused"]


@pytest.mark.parametrize("lo, hi", [(20.0, 200.0), (100.0, 1000.0), (3.0, 7.0), (50.0, 51.0)])
def test_axis_tick_labels_stay_inside_the_plot(lo, hi):
    # A tick at the very end of the latency axis sits 20 px from the edge, closer than half of
    # a label such as "200.0 us": centred, it ran off the plot (seen in Chromium in CI).
    from edgedeploy.report.svg import CHAR_W, latency_sessions

    width = 780
    rows = [{"label": "s1", "run": "before", "latency_us": {"min": lo, "p50": (lo + hi) / 2, "p99": hi, "max": hi}, "histogram_us": None}]
    svg = latency_sessions(rows, "a title", width=width)
    labels = re.findall(r"<text x='([\d.]+)' y='\d+' text-anchor='(middle|end|start)'>([^<]*us)</text>", svg)
    assert len(labels) >= 2, svg
    for x, anchor, text in labels:
        x, w = float(x), len(text) * CHAR_W
        left = {"middle": x - w / 2, "end": x - w, "start": x}[anchor]
        assert left >= 0 and left + w <= width, (text, anchor, x)
