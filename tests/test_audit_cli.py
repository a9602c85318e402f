"""`edgedeploy audit`: formats, the cross-chip matrix, --fail-on exit codes and bad input."""

from __future__ import annotations

import json

import numpy as np
import pytest
from onnx import helper

from edgedeploy.audit.report import fail_on_outcome
from edgedeploy.cli import main
from tests.helpers import const, make_model, run_cli, save, tensor


def audit(capsys, *args):
    """Run `edgedeploy audit ARGS` in this process; (exit code, stdout, stderr)."""
    with pytest.raises(SystemExit) as exited:
        main(["audit", *args])
    out, err = capsys.readouterr()
    return exited.value.code, out, err


def small_model(tmp_path, tail_op="Relu", name="m.onnx"):
    """x[1,4,8,8] -> Conv -> TAIL -> Relu -> y; TAIL decides what leaves the accelerator."""
    w = np.zeros((4, 4, 3, 3), np.float32)
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node(tail_op, ["c"], ["t"], name="tail"),
        helper.make_node("Relu", ["t"], ["y"], name="relu"),
    ]
    return save(make_model(nodes, [tensor("x", [1, 4, 8, 8])], [tensor("y", [1, 4, 8, 8])], [const("w", w)]), tmp_path / name)


def test_sample_matrix_across_every_target(capsys):
    code, out, err = audit(capsys, "--target", "all")
    assert code == 0
    assert "using the bundled sample" in err
    header = next(line for line in out.splitlines() if line.startswith("OPERATOR"))
    assert "esp32s3" in header and "esp32p4" in header
    rows = {line.split()[0]: line.split()[1:] for line in out.splitlines() if line.split() and line.split()[0] in ("Conv", "Relu", "MaxPool", "Flatten", "Gemm")}
    assert rows["Conv"][0] == "3" and rows["Relu"][0] == "4" and rows["Gemm"][0] == "2"
    assert all(cell == "acc" for row in rows.values() for cell in row[1:3])
    assert "esp32s3: 13 of 13 nodes on the accelerator (ESP-DL integer kernels (SIMD), int8); 0 transitions, 0 bytes crossing per inference" in out
    from edgedeploy.pipeline.audit import has_rules
    from edgedeploy.targets import all_targets

    for target in all_targets():
        if not has_rules(target):
            assert f"{target.name} (" in out and "no rules yet" in out


def test_single_chip_table_grouped_by_reason_with_summary(tmp_path, capsys):
    code, out, _ = audit(capsys, str(small_model(tmp_path, "Sin")), "--target", "esp32s3")
    assert code == 0
    lines = out.splitlines()
    unsupported = next(line for line in lines if line.startswith("unsupported"))
    assert "Sin 1" in unsupported and "[operator_unsupported]" in unsupported
    assert any(line.startswith("accelerator") and "Conv 1, Relu 1" in line for line in lines)
    # conv -> sin -> relu: c leaves (256 int8 bytes), t comes back (256).
    assert "esp32s3: 2 of 3 nodes on the accelerator (ESP-DL integer kernels (SIMD), int8) (1 unsupported); 2 transitions, 512 bytes crossing per inference" in out


def test_each_chip_carries_its_measured_error_on_unseen_models(tmp_path, capsys):
    """A measured chip shows its pooled blind figures (matrix row, single-chip sentence, JSON); an
    unmeasured one shows '-' and claims nothing."""
    from edgedeploy.audit.report import unseen_agreement

    rk = unseen_agreement("rk3566")
    code, out, _ = audit(capsys, "--target", "rk3566", "--target", "rk3568")
    row = next(line for line in out.splitlines() if line.startswith("exact unseen"))
    assert code == 0 and row.split()[2:] == [f"{100 * rk['exact'] / rk['pairs']:.0f}%", f"({100 * rk['nodes_agree'] / rk['nodes_compared']:.1f}%)", "-"]
    code, out, _ = audit(capsys, "--target", "rk3566")
    assert "how far to trust this audit: " + rk["sentence"] in out
    code, out, _ = audit(capsys, "--target", "rk3566", "--target", "rk3568", "--format", "json")
    entries = {a["chip"]: a for a in json.loads(out)["audits"]}
    assert entries["rk3566"]["unseen_agreement"] == rk and "unseen_agreement" not in entries["rk3568"]


def test_json_is_pure_and_complete(tmp_path, capsys):
    code, out, _ = audit(capsys, str(small_model(tmp_path, "Log")), "--target", "esp32p4", "--format", "json")
    assert code == 0
    report = json.loads(out)
    assert report["schema"] == "edgedeploy.audit-report/2" and report["detail"] is False
    (chip,) = report["audits"]
    assert chip["schema"] == "edgedeploy.audit/2" and chip["nodes_listed"] == "with_violations"
    assert chip["chip"] == "esp32p4" and chip["precision"] == "int8"
    # Only the node with something to say is listed; the accelerator's are named by partition.
    (tail,) = chip["nodes"]
    assert tail["node"] == "tail" and tail["placement"] == "float" and tail["violations"][0]["rule"] == "operator_float_only"
    assert [(p["unit"], p["nodes"]) for p in chip["partitions"]] == [("accelerator", ["conv"]), ("fallback", ["tail"]), ("accelerator", ["relu"])]
    assert chip["folded"] == []
    assert chip["summary"]["transitions_per_inference"] == 2 and chip["summary"]["crossing_bytes_per_inference"] == 512
    assert [(g["placement"], g["count"], g["examples"]) for g in chip["groups"]] == [("float", 1, ["tail"]), ("accelerator", 2, ["conv", "relu"])]
    assert all("nodes" not in g for g in chip["groups"])
    assert report["matrix"] is None and report["fail_on"]["exit_code"] == 0


def test_json_detail_lists_every_node(tmp_path, capsys):
    path = str(small_model(tmp_path, "Log"))
    code, out, _ = audit(capsys, path, "--target", "esp32p4", "--format", "json", "--detail")
    assert code == 0
    report = json.loads(out)
    assert report["detail"] is True
    (chip,) = report["audits"]
    assert chip["nodes_listed"] == "all"
    assert [(n["node"], n["placement"], n["violations"]) for n in chip["nodes"] if n["node"] != "tail"] == [("conv", "accelerator", []), ("relu", "accelerator", [])]
    assert [g["nodes"] for g in chip["groups"]] == [["tail"], ["conv", "relu"]]
    # The default report is the detailed one less the nodes with nothing to say.
    _, compact, _ = audit(capsys, path, "--target", "esp32p4", "--format", "json")
    (short,) = json.loads(compact)["audits"]
    assert short["nodes"] == [n for n in chip["nodes"] if n["violations"]]
    assert short["partitions"] == chip["partitions"] and short["crossings"] == chip["crossings"] and short["summary"] == chip["summary"]


def test_precision_option_changes_placement(tmp_path, capsys):
    path = str(small_model(tmp_path, "Log"))
    _, out, _ = audit(capsys, path, "--target", "esp32s3", "--precision", "int16", "--format", "json")
    assert json.loads(out)["audits"][0]["summary"]["on_accelerator"] == 3
    code, _, err = audit(capsys, path, "--target", "esp32s3", "--precision", "fp16")
    assert code == 2 and "esp32s3 does not run fp16" in err


@pytest.mark.parametrize(
    "tail,level,expected",
    [
        ("Relu", "any", 0),
        ("Log", "any", 3),  # kept in float
        ("Log", "cpu-fallback", 0),
        ("Log", "unsupported", 0),
        ("Sin", "unsupported", 5),
        ("Sin", "cpu-fallback", 5),
    ],
)
def test_fail_on_exit_codes(tmp_path, capsys, tail, level, expected):
    code, out, _ = audit(capsys, str(small_model(tmp_path, tail)), "--target", "esp32s3", "--fail-on", level)
    assert code == expected
    assert ("--fail-on" in out) == (expected != 0)


def test_fail_on_fallback_code_from_the_report():
    audits = [{"chip": "a", "nodes": [{"placement": "fallback"}, {"placement": "float"}]}, {"chip": "b", "nodes": [{"placement": "accelerator"}]}]
    assert fail_on_outcome(audits, "cpu-fallback") == {"level": "cpu-fallback", "failed": True, "exit_code": 4, "found": {"a": {"fallback": 1}}}
    assert fail_on_outcome(audits, "unsupported")["exit_code"] == 0
    assert fail_on_outcome(audits, "any")["found"] == {"a": {"fallback": 1, "float": 1}}


def test_markdown_and_html_escape_model_names(tmp_path, capsys):
    w = np.zeros((4, 4, 1, 1), np.float32)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv|1"), helper.make_node("Sin", ["c"], ["y"], name="<b>s*n</b>")]
    path = save(make_model(nodes, [tensor("x", [1, 4, 2, 2])], [tensor("y", [1, 4, 2, 2])], [const("w", w)]), tmp_path / "odd.onnx")
    code, md, _ = audit(capsys, str(path), "--target", "esp32s3", "--format", "md")
    assert code == 0 and md.startswith("# Fallback-operator audit: odd.onnx")
    assert "\\<b\\>s\\*n\\</b\\>" in md and "<b>" not in md
    code, page, _ = audit(capsys, str(path), "--target", "all", "--format", "html", "--by", "node")
    assert code == 0 and page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert "&lt;b&gt;s*n&lt;/b&gt;" in page and "<b>s*n" not in page
    assert '<td class="unsupported"' in page


def test_output_file_and_by_node_matrix(tmp_path, capsys):
    out_file = tmp_path / "audit.md"
    code, out, err = audit(capsys, str(small_model(tmp_path, "Sin")), "--by", "node", "--format", "md", "-o", str(out_file))
    assert code == 0 and out == "" and f"wrote {out_file}" in err
    text = out_file.read_text()
    assert "| node | nodes | esp32s3 | esp32p4 |" in text and "| tail | 1 | UNSUP | UNSUP |" in text


def test_input_shape_pins_a_dynamic_batch(tmp_path, capsys):
    path = small_model(tmp_path)
    model_path = tmp_path / "dyn.onnx"
    import onnx

    m = onnx.load(str(path))
    m.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "N"
    m.graph.output[0].type.tensor_type.shape.dim[0].dim_param = "N"
    onnx.save(m, str(model_path))
    _, out, _ = audit(capsys, str(model_path), "--target", "esp32s3", "--format", "json")
    assert json.loads(out)["model"]["input_shapes"] == {"x": [1, 4, 8, 8]}
    _, out, _ = audit(capsys, str(model_path), "--target", "esp32s3", "--input-shape", "x=2x4x8x8", "--format", "json")
    report = json.loads(out)
    assert report["model"]["input_shapes"] == {"x": [2, 4, 8, 8]}


def test_unknown_and_ruleless_targets_are_clear_errors(capsys):
    code, _, err = audit(capsys, "--target", "esp99")
    assert code == 2 and err.startswith("error: Unknown target 'esp99'")
    from edgedeploy.pipeline.audit import has_rules
    from edgedeploy.targets import all_targets

    ruleless = [t for t in all_targets() if not has_rules(t)]
    if ruleless:
        code, _, err = audit(capsys, "--target", ruleless[0].chips[0].id)
        assert code == 2 and "declares no audit rules" in err


def test_corrupt_model_is_one_clear_error(tmp_path):
    bad = tmp_path / "corrupt.onnx"
    bad.write_bytes(b"\x08\x07garbage that is not a protobuf \xff\xfe" * 10)
    result = run_cli("audit", str(bad), "--target", "all")
    assert result.returncode == 8  # ModelError (edgedeploy.errors.EXIT_CODES)
    assert result.stdout == ""
    assert result.stderr.strip().splitlines() == [result.stderr.strip()] and result.stderr.startswith("error: corrupt.onnx")
    assert "Traceback" not in result.stderr


def test_missing_model_file(tmp_path):
    result = run_cli("audit", str(tmp_path / "nope.onnx"))
    assert result.returncode == 8 and "Model file not found" in result.stderr and "Traceback" not in result.stderr
