"""The Python API (edgedeploy.api, exported by the package): typed results in the shipped schemas'
shape, errors of the one hierarchy with their exit codes, progress through the callback, and
nothing written to stdout or stderr (checked at the file-descriptor level, so a worker's or a C
library's output would show too). docs/api.md's session, with a real build, is tests/test_api_docs.py.
"""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
from pathlib import Path

import pytest

import edgedeploy
from edgedeploy.errors import EXIT_CODES, ArtifactError, EdgedeployError, ModelError, OptionError, UnknownName
from edgedeploy.report.schemas import validate


def test_import_edgedeploy_imports_no_heavy_module():
    code = "import sys, json, edgedeploy; print(json.dumps(sorted(sys.modules)))"
    loaded = set(json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout))
    heavy = {"onnx", "numpy", "click", "jinja2", "rich", "edgedeploy.api", "edgedeploy.targets", "edgedeploy.pipeline"}
    assert not loaded & heavy, sorted(loaded & heavy)


def test_the_api_names_are_exported_and_documented():
    for name in edgedeploy.API_NAMES:
        value = getattr(edgedeploy, name)
        assert inspect.getdoc(value), name
    assert "chips" in inspect.signature(edgedeploy.audit).parameters
    assert "device" in inspect.signature(edgedeploy.measure).parameters
    with pytest.raises(AttributeError):
        edgedeploy.no_such_function  # noqa: B018


def test_audit_and_measure_stay_functions_beside_their_subpackages():
    """`edgedeploy.audit` is also the subpackage toolkit/audit: importing it must not unbind the function."""
    import edgedeploy.audit.engine
    import edgedeploy.measure.harness
    from edgedeploy.audit import engine

    assert callable(edgedeploy.audit) and callable(edgedeploy.measure)
    assert edgedeploy.audit.engine is engine is sys.modules["edgedeploy.audit.engine"]
    assert edgedeploy.measure.harness is sys.modules["edgedeploy.measure.harness"]
    assert inspect.signature(edgedeploy.audit) == inspect.signature(edgedeploy.api.audit)


def test_audit_returns_typed_results_in_the_schemas_shape_and_prints_nothing(capfd):
    lines: list[str] = []
    result = edgedeploy.audit(chips=["esp32s3", "rk3588"], fail_on="any", progress=lines.append)
    out, err = capfd.readouterr()
    assert (out, err) == ("", "")
    assert any("bundled sample" in line for line in lines)
    assert isinstance(result, edgedeploy.AuditResult)
    assert [c.chip for c in result.chips] == ["esp32s3", "rk3588"]
    chip = result.chip("esp32s3")
    assert chip.target == "espdl" and chip.summary["nodes"] == chip.summary["on_accelerator"] > 0
    assert result.exit_code == 0 and result.fail_on["failed"] is False
    document = result.to_dict()
    validate(document)
    for c in result.chips:
        validate(c.to_dict())
    # to_dict() is a copy in JSON's own types: what `audit --format json` writes.
    assert document == json.loads(json.dumps(document))
    document["audits"].clear()
    assert result.to_dict()["audits"]


def test_the_cli_prints_the_api_result(tmp_path):
    from tests.helpers import run_cli

    proc = run_cli("audit", "--target", "esp32s3", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    by_cli = json.loads(proc.stdout)
    by_api = edgedeploy.audit(chips="esp32s3").to_dict()
    assert by_cli == by_api


@pytest.mark.parametrize(
    "call, error",
    [
        (lambda tmp: edgedeploy.audit(tmp / "missing.onnx", chips=["esp32s3"]), ModelError),
        (lambda tmp: edgedeploy.audit(chips=["esp99"]), UnknownName),
        (lambda tmp: edgedeploy.audit(chips=["esp32s3"], fail_on="sometimes"), OptionError),
        (lambda tmp: edgedeploy.load_artifact(tmp), ArtifactError),
        (lambda tmp: edgedeploy.build(None, "esp32s3", out=tmp, no_such_option=1), OptionError),
        (lambda tmp: edgedeploy.measure(tmp, device="no-such-device"), UnknownName),
        (lambda tmp: edgedeploy.measure_farm([tmp]), OptionError),
        (lambda tmp: edgedeploy.measure_farm([tmp], device="local"), OptionError),
        (lambda tmp: edgedeploy.measure_farm([tmp], "http://example.invalid"), OptionError),
        (lambda tmp: edgedeploy.measure_farm([tmp], "labgrid://127.0.0.1:1", parallel=-1), OptionError),
    ],
    ids=["missing-model", "unknown-chip", "bad-fail-on", "not-an-artifact", "unknown-target-option", "unknown-device", "farm-missing", "farm-not-labgrid", "farm-bad-url", "farm-bad-parallel"],
)
def test_errors_are_the_hierarchys_with_their_exit_codes(tmp_path, capfd, call, error):
    with pytest.raises(error) as raised:
        call(tmp_path)
    assert isinstance(raised.value, EdgedeployError)
    assert raised.value.exit_code in EXIT_CODES and raised.value.exit_code not in (0, 70)
    assert str(raised.value).strip() and "\n" not in str(raised.value).strip()
    assert capfd.readouterr() == ("", "")


def test_a_target_option_by_name_reaches_the_targets_options(tmp_path):
    """**options are the chip's target's own fields; a wrong value is that option's OptionError."""
    from edgedeploy.api import _target_options
    from edgedeploy.targets import find_chip

    target, _ = find_chip("rk3588")
    declared = target.options_type.declared()
    assert declared, "rknn declares options"
    field, meta = next((f, m) for f, m in declared if m["type"] is int or m["choices"])
    value = meta["choices"][-1] if meta["choices"] else (meta["maximum"] if meta["maximum"] is not None else 1)
    expected = int(value) if meta["type"] is int and not meta["choices"] else value
    assert getattr(_target_options(target, None, {field.name: value}), field.name) == expected
    # The flag spelled as a keyword: --rknn-optimization-level is rknn_optimization_level=.
    keyword = meta["flag"].lstrip("-").replace("-", "_")
    assert keyword != field.name
    assert getattr(_target_options(target, None, {keyword: value}), field.name) == expected


def test_builds_keywords_and_the_commands_options_come_from_one_definition():
    """Every shared option of BuildOptions is a keyword of edgedeploy.build (with its default) and
    a parameter of `edgedeploy build` by the same name; so is one added once, to a BuildOptions of
    its own: nothing else is edited for it to reach the API and the command."""
    import dataclasses

    import click
    from click.testing import CliRunner

    from edgedeploy.api import _shared_build_keywords
    from edgedeploy.cli.build_cmd import build_command, shared_build_options
    from edgedeploy.pipeline.build_options import BuildOptions, shared_option

    keywords = {name: p.default for name, p in inspect.signature(edgedeploy.build).parameters.items() if p.kind is p.KEYWORD_ONLY}
    declared = {name: default for name, default, _ in BuildOptions.keyword_options()}
    assert len(declared) >= 16 and {"out", "calib", "eval", "timeout_s", "input_shapes"} <= set(declared)
    assert {name: keywords[name] for name in declared} == declared
    assert set(declared) <= {p.name for p in build_command.params}
    for name in declared:
        assert f"    {name}: " in edgedeploy.build.__doc__

    @dataclasses.dataclass
    class WithAKnob(BuildOptions):
        knob_level: int = shared_option("--knob-level", "How far to turn the knob.", 3, type=int, minimum=0)

    def build(model, chip, *, progress=None, **options):
        """A stand-in for edgedeploy.build."""

    wrapped = _shared_build_keywords(build, WithAKnob)
    assert inspect.signature(wrapped).parameters["knob_level"].default == 3 and "knob_level: How far" in wrapped.__doc__
    command = click.command()(shared_build_options(lambda **values: print(values["knob_level"], values["timeout_s"]), WithAKnob))
    assert "--knob-level" in CliRunner().invoke(command, ["--help"]).output
    ran = CliRunner().invoke(command, ["--knob-level", "5"])
    knob, timeout = ran.output.split()
    assert ran.exit_code == 0 and int(knob) == 5 and float(timeout) == declared["timeout_s"], ran.output  # given, and the shared default
    assert "--knob-level" in CliRunner().invoke(command, ["--knob-level", "-1"]).output  # its bounds hold on the command line
    assert WithAKnob.from_keywords({"knob_level": 5, "timeout_s": 9}).knob_level == 5


def test_the_api_pages_list_of_builds_keywords_is_the_declared_one():
    import re

    from edgedeploy.pipeline.build_options import BuildOptions

    page = (Path(__file__).resolve().parent.parent / "docs" / "api.md").read_text()
    listed = page.split("`build`'s keyword options are the command's shared options (", 1)[1].split(")", 1)[0]
    assert re.findall(r"`(\w+)`", listed) == [name for name, _, _ in BuildOptions.keyword_options()]


@pytest.mark.parametrize(
    "keyword, nearest",
    [("calib_cont", "calib_count"), ("timeout", "timeout_s"), ("optimisation_level", "optimization_level"), ("rknn_optimisation_level", "rknn_optimization_level"), ("colour_space", None)],
)
def test_an_unknown_build_keyword_is_one_sentence_naming_it_and_the_nearest(tmp_path, capfd, keyword, nearest):
    with pytest.raises(OptionError) as raised:
        edgedeploy.build(None, "rk3588", out=tmp_path, **{keyword: 1})
    sentence = str(raised.value)
    assert "\n" not in sentence and sentence.startswith(f"{keyword}= is not an option of edgedeploy.build or of the RKNN target")
    if nearest:
        assert sentence.endswith(f"did you mean {nearest}=?")
    else:  # nothing close: the options, the shared ones and the target's
        assert "the options are: out, force," in sentence and "optimization_level" in sentence
    assert not any(tmp_path.iterdir())  # refused before any work
    assert capfd.readouterr() == ("", "")


def test_bench_times_the_sample_and_prints_nothing(capfd):
    lines: list[str] = []
    result = edgedeploy.bench(sessions=3, warmup=1, min_iterations=5, min_duration_s=0.05, progress=lines.append)
    assert capfd.readouterr() == ("", "")
    assert lines, "progress lines went to the callback"
    assert [r["backend"]["name"] for r in result.results] == ["ort-cpu"] and result.fastest == "ort-cpu"
    assert len(result.results[0]["sessions"]) == 3
    validate(result.to_dict())


def test_edgedeploys_warnings_reach_the_callback_and_the_result_not_stderr(tmp_path, capfd):
    """A model with ONNX Runtime's own com.microsoft operators is audited with a warning (intake)."""
    import onnx
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Gelu", ["x"], ["y"], domain="com.microsoft")],
        "ms_gelu",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
    path = tmp_path / "ms_gelu.onnx"
    onnx.save(model, str(path))
    lines: list[str] = []
    result = edgedeploy.audit(path, chips=["esp32s3"], progress=lines.append)
    assert capfd.readouterr() == ("", "")
    assert len(result.warnings) == 1 and "com.microsoft" in result.warnings[0]
    assert f"warning: {result.warnings[0]}" in lines
    # The command shows it once on stderr, as before the API took the warnings over.
    from tests.helpers import run_cli

    proc = run_cli("audit", str(path), "--target", "esp32s3")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count(f"warning: {result.warnings[0]}") == 1
