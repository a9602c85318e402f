"""`edgedeploy build --target <TI SoC>`: the generated compile project, its configuration, the deny
list from the audit, and the compile run (through TIDL_TOOLS_PATH or a configurable command).

Option names and values are TI's, as documented in TexasInstruments/edgeai-tidl-tools:
  examples/osrt_python/README.md, "User options for TIDL Acceleration" (tag 11_00_06_00):
      tidl_tools_path, artifacts_folder (required); tensor_bits 8/16 (32 PC only); debug_level;
      max_num_subgraphs <= 16 (default 16); accuracy_level 0/1/2/9 (default 1);
      deny_list:layer_type / deny_list:layer_name (comma-separated strings);
      advanced_options:calibration_frames (default 20), advanced_options:calibration_iterations (default 50)
  docs/model_compilation.md, "Compilation Options" (release 11.02): the same names; for a layer
      without a name, deny_list:layer_name takes its first output's name
  docs/custom_model_evaluation.md, "OSRT APIs for TIDL Acceleration": the compile session uses
      providers ['TIDLCompilationProvider', 'CPUExecutionProvider'] with provider_options [options, {}]
TI's real tools are not installable here: tests that need them carry @pytest.mark.toolchain("tidl")
(set TIDL_TOOLS_PATH to run them); the others use the real generated script with this machine's
plain onnxruntime, or a stand-in compile command (tests/tidl_standin_compile.py, which says what it fakes).
"""

from __future__ import annotations

import ast
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper

from edgedeploy.audit import Placement
from edgedeploy.pipeline.build import BuildOptions, run_build
from edgedeploy.targets.tidl import TidlOptions
from edgedeploy.errors import OptionError, ToolchainError, ToolchainMissing

from tests.tidl_models import FIXTURES, conv, conv_erf_conv_model, conv_relu_pool_model, f32, make_model, node, write_inputs

TI_OPTION_NAMES = {
    "tidl_tools_path",
    "artifacts_folder",
    "tensor_bits",
    "debug_level",
    "max_num_subgraphs",
    "accuracy_level",
    "deny_list",
    "deny_list:layer_type",
    "deny_list:layer_name",
    "advanced_options:calibration_frames",
    "advanced_options:calibration_iterations",
}
STANDIN = Path(__file__).parent / "tidl_standin_compile.py"
# TI's tools where the user has them (read before the fixture below hides them from the other tests).
REAL_TI_ENV = {k: os.environ[k] for k in ("TIDL_TOOLS_PATH", "TIDL_PYTHON", "SOC") if k in os.environ}


@pytest.fixture(autouse=True)
def no_tidl_tools(monkeypatch):
    """These tests decide themselves whether TI's tools 'exist'."""
    monkeypatch.delenv("TIDL_TOOLS_PATH", raising=False)
    monkeypatch.delenv("TIDL_PYTHON", raising=False)
    monkeypatch.delenv("SOC", raising=False)


def build(tmp_path, model: onnx.ModelProto, chip="am68a", precision=None, calib_count=24, eval_count=6, **target_options):
    model_path = tmp_path / "model.onnx"
    onnx.save(model, str(model_path))
    shape = tuple(d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim)
    calib = write_inputs(tmp_path / "calib.npz", shape, calib_count, seed=1)
    evaluation = write_inputs(tmp_path / "eval.npz", shape, eval_count, seed=2) if eval_count else None
    lines: list[str] = []
    options = BuildOptions(out_root=tmp_path / "out", precision=precision, calib=calib, eval=evaluation, target_options={"tidl": TidlOptions.from_values(target_options)})
    dest = run_build(model_path, chip, options, echo=lines.append)
    return dest, lines


def config_of(dest: Path) -> dict:
    return json.loads((dest / "tidl" / "compile_config.json").read_text())


def report_of(dest: Path) -> dict:
    return json.loads((dest / "report.json").read_text())


def test_generated_project_when_ti_tools_are_absent(tmp_path):
    dest, lines = build(tmp_path, conv_relu_pool_model())
    for rel in ("tidl/compile_tidl.py", "tidl/compile_config.json", "tidl/calibration.npz", "tidl/eval_inputs.npz", "tidl/model_tidl.onnx", "runner/run_tidl.py", "runner/protocol.py", "runner/inputs.npz", "runner/reference_outputs.npz"):
        assert (dest / rel).is_file(), rel
    report = report_of(dest)
    assert report["convert"]["status"] == "generated"
    assert "TIDL_TOOLS_PATH is not set" in report["convert"]["reason"]
    # The one command: absolute path of the final artifact (not the temporary build folder), TI's SOC name.
    command = report["convert"]["details"]["command"]
    assert command.startswith(f"cd {dest.resolve() / 'tidl'} && SOC=am68a TIDL_TOOLS_PATH=")
    assert command.endswith("python3 compile_tidl.py")
    assert any(command in line for line in lines)
    manifest = json.loads((dest / "manifest.json").read_text())
    assert manifest["tidl"] == {"soc": "am68a", "tidl_version": "11.02", "tensor_bits": 8, "model": "model_tidl.onnx", "precision": "int8", "compiled": False}


@pytest.mark.parametrize("script", ["tidl/compile_tidl.py", "runner/run_tidl.py"])
def test_generated_scripts_are_valid_python_with_the_header(tmp_path, script):
    dest, _ = build(tmp_path, conv_relu_pool_model(), chip="tda4vm")
    source = (dest / script).read_text()
    compile(source, script, "exec")  # raises SyntaxError if the template produced broken code
    ast.parse(source)
    header = "\n".join(source.splitlines()[:3])
    sha = report_of(dest)["model"]["sha256"]
    assert "Generated by edgedeploy 0.1.0" in header and sha in header and "Do not edit" in header
    assert "TI SOC am68pa" in header  # TDA4VM is J721E, TI's SOC name am68pa


def test_tidl_soc_names(tmp_path):
    from edgedeploy.targets.tidl.compile_config import TI_SOC

    # edgeai-tidl-tools README, device table: J721E (TDA4VM) -> am68pa, AM62A -> am62a, AM68A -> am68a, AM69A -> am69a.
    assert TI_SOC == {"tda4vm": "am68pa", "am62a": "am62a", "am68a": "am68a", "am69a": "am69a"}


@pytest.mark.parametrize("precision, bits", [(None, 8), ("int8", 8), ("int16", 16)])
def test_configuration_uses_ti_option_names_and_values(tmp_path, precision, bits):
    dest, _ = build(tmp_path, conv_relu_pool_model(), precision=precision, tidl_max_subgraphs=3, tidl_calibration_iterations=7)
    config = config_of(dest)
    options = config["provider_options"]
    assert set(options) <= TI_OPTION_NAMES
    assert options["tensor_bits"] == bits
    assert options["max_num_subgraphs"] == 3
    assert options["accuracy_level"] == 1
    assert options["advanced_options:calibration_frames"] == 20  # TI's default; 24 frames are available
    assert options["advanced_options:calibration_iterations"] == 7
    assert "deny_list:layer_name" not in options  # nothing to deny: every node is on the accelerator
    assert config["soc"] == "am68a" and config["graph_optimization_level"] == "ORT_DISABLE_ALL"
    from edgedeploy.arrays import read_arrays

    calibration = read_arrays(dest / "tidl" / "calibration.npz")
    assert calibration["x"].shape == (20, 1, 3, 8, 8)  # one [batch, ...] array per frame
    # The script hands these to TIDLCompilationProvider and fills the two required paths itself.
    script = (dest / "tidl" / "compile_tidl.py").read_text()
    for needle in ('"TIDLCompilationProvider", "CPUExecutionProvider"', 'options["tidl_tools_path"] = tools', 'options["artifacts_folder"] = str(artifacts)', "provider_options=[options, {}]"):
        assert needle in script


def test_calibration_frames_are_capped_at_the_data(tmp_path):
    dest, lines = build(tmp_path, conv_relu_pool_model(), calib_count=5, tidl_calibration_frames=30)
    assert config_of(dest)["provider_options"]["advanced_options:calibration_frames"] == 5
    assert any("only 5 calibration frames available" in line for line in lines)


@pytest.mark.parametrize("precision", ["fp32", "fp16"])
def test_float_precisions_are_refused(tmp_path, precision):
    with pytest.raises(OptionError, match="int8 or int16"):
        build(tmp_path, conv_relu_pool_model(), precision=precision)
    assert not (tmp_path / "out" / "model" / "am68a").exists()


def _tidl_name(n: onnx.NodeProto) -> str:
    """The name TIDL matches deny_list:layer_name against (TI: the layer name, else its first output)."""
    return n.name or n.output[0]


def _denied(config: dict) -> set[str]:
    """deny_list:layer_name read the way TI's list is written: comma-separated names."""
    value = config["provider_options"].get("deny_list:layer_name", "")
    return {part.strip() for part in value.split(",") if part.strip()}


def test_deny_list_keeps_the_audited_fallbacks_on_the_arm_cores(tmp_path):
    """Every node the audit put on the Arm cores is denied to TIDL by the name TIDL knows it by; no other node is."""
    model = make_model(
        [
            conv("c1", "x", "w1", out="a"),
            node("Erf", ["a"], outputs=("b",), name="erf"),  # only inside GELU: Arm
            helper.make_node("Erf", ["b"], ["c"]),  # nameless: TIDL knows it as "c"
            node("Erf", ["c"], outputs=("d",), name="gelu,part"),  # a comma: cannot go into TI's list as is
            conv("c2", "d", "w2", out="e"),
            node("Softmax", ["e"], outputs=("y",), name="softmax_c", axis=1),  # channel softmax: Arm
        ],
        {"x": (1, 4, 8, 8)},
        {"w1": f32(4, 4, 1, 1), "w2": f32(4, 4, 1, 1)},
    )
    dest, lines = build(tmp_path, model)
    report = report_of(dest)
    placement = {n["node"]: n["placement"] for n in json.loads((dest / "audit.json").read_text())["nodes"]}
    assert placement == {"c1": "accelerator", "erf": "fallback", "Erf_2": "fallback", "gelu,part": "fallback", "c2": "accelerator", "softmax_c": "fallback"}

    config = config_of(dest)
    compiled = onnx.load(str(dest / "tidl" / config["model"]))
    from edgedeploy.model.stats import node_names

    by_display = dict(zip(node_names(model.graph), compiled.graph.node))
    denied = _denied(config)
    for display, where in placement.items():
        assert (_tidl_name(by_display[display]) in denied) == (where == "fallback"), display
    assert denied == {"erf", "c", "edgedeploy_deny_3", "softmax_c"}
    # Only the unsafe name was changed, in TIDL's copy; the pinned model keeps the user's names.
    assert config["renamed_nodes"] == {"gelu,part": "edgedeploy_deny_3"}
    assert [n.name for n in compiled.graph.node] == ["c1", "erf", "", "edgedeploy_deny_3", "c2", "softmax_c"]
    assert [n.name for n in onnx.load(str(dest / "model.onnx")).graph.node][3] == "gelu,part"
    assert {d["node"] for d in config["denied_nodes"]} == {"erf", "Erf_2", "gelu,part", "softmax_c"}
    assert all(d["reason"] for d in config["denied_nodes"])
    assert any("deny list keeps 4 node(s)" in line for line in lines)


def test_no_deny_option_lets_tidl_decide(tmp_path):
    dest, _ = build(tmp_path, conv_erf_conv_model(), tidl_no_deny=True)
    assert "deny_list:layer_name" not in config_of(dest)["provider_options"]
    (tmp_path / "again").mkdir()
    dest2, _ = build(tmp_path / "again", conv_erf_conv_model())
    assert _denied(config_of(dest2)) == {"erf"}


def _run_script(dest: Path, env_extra: dict) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("TIDL_TOOLS_PATH", "SOC")}
    env.update(env_extra)
    return subprocess.run([sys.executable, "compile_tidl.py"], cwd=dest / "tidl", env=env, capture_output=True, text=True, timeout=120)


def test_generated_compile_script_checks_ti_environment(tmp_path):
    """The real generated script, run with this machine's plain onnxruntime (no TI build)."""
    dest, _ = build(tmp_path, conv_relu_pool_model())
    tools = tmp_path / "tidl_tools"
    tools.mkdir()
    no_tools = _run_script(dest, {})
    assert no_tools.returncode == 4 and "TIDL_TOOLS_PATH must name TI's tidl_tools folder" in no_tools.stderr
    wrong_soc = _run_script(dest, {"TIDL_TOOLS_PATH": str(tools), "SOC": "am62a"})
    assert wrong_soc.returncode == 4 and "SOC=am62a" in wrong_soc.stderr and "am68a" in wrong_soc.stderr
    no_provider = _run_script(dest, {"TIDL_TOOLS_PATH": str(tools), "SOC": "am68a"})
    assert no_provider.returncode == 3 and "no TIDLCompilationProvider" in no_provider.stderr
    assert not (dest / "tidl" / "artifacts").exists()  # nothing half-written


def test_build_with_tidl_tools_path_but_no_ti_onnxruntime(tmp_path, monkeypatch):
    tools = tmp_path / "tidl_tools"
    tools.mkdir()
    monkeypatch.setenv("TIDL_TOOLS_PATH", str(tools))
    with pytest.raises(ToolchainMissing, match="TIDLCompilationProvider") as info:
        build(tmp_path, conv_relu_pool_model(), tidl_python=sys.executable)
    assert "\n" not in str(info.value)
    out = tmp_path / "out" / "model"
    assert not (out / "am68a").exists()  # no artifact pretends to be compiled
    assert "no TIDLCompilationProvider" in (out / "am68a.failed" / "tidl" / "compile.log").read_text()


def test_cli_reports_missing_ti_runtime_in_one_sentence(tmp_path):
    tools = tmp_path / "tidl_tools"
    tools.mkdir()
    model = tmp_path / "m.onnx"
    onnx.save(conv_relu_pool_model(), str(model))
    calib = write_inputs(tmp_path / "calib.npz", (1, 3, 8, 8), 4)
    env = {**os.environ, "TIDL_TOOLS_PATH": str(tools), "TIDL_PYTHON": sys.executable}
    env.pop("SOC", None)
    proc = subprocess.run(
        [sys.executable, "-m", "edgedeploy", "build", str(model), "--target", "am69a", "--calib", str(calib), "--out", str(tmp_path / "out")],
        env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode != 0
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "TIDLCompilationProvider" in errors[0]
    assert "Traceback" not in proc.stderr


def standin_command(fixture: str, exit_code: int = 0) -> str:
    return f"{shlex.quote(sys.executable)} {shlex.quote(str(STANDIN))} {shlex.quote(str(FIXTURES / fixture))} {{dir}}" + (f" --exit {exit_code}" if exit_code else "")


def test_compile_through_a_configured_command(tmp_path):
    """--tidl-compile-command runs instead of the local tools; its artifacts are parsed into placements.

    The command is a STAND-IN for the user's TI container (tests/tidl_standin_compile.py): it
    copies hand-made artifacts and writes float 'emulation' outputs, so the figures below test
    the plumbing only.
    """
    dest, lines = build(tmp_path, conv_erf_conv_model(), chip="tda4vm", tidl_compile_command=standin_command("conv_erf_conv"))
    report = report_of(dest)
    assert report["convert"]["status"] == "built" and report["convert"]["details"]["how"] == "command"
    assert report["convert"]["details"]["artifacts"]["subgraphs"] == 2
    assert report["convert"]["details"]["artifacts"]["log_summary"] == {"subgraphs": 2, "offloaded_nodes": 2, "total_nodes": 3}
    verdict = json.loads((dest / "toolchain_verdict.json").read_text())["verdict"]["nodes"]
    assert {k: v["placement"] for k, v in verdict.items()} == {"c1": "accelerator", "erf": "fallback", "Conv_2": "accelerator"}
    assert report["toolchain_verdict"]["agreement"] == 1.0 and report["toolchain_verdict"]["compared"] == 3
    assert "deny_list_ignored" not in report["tidl"]
    assert {row["network"] for row in report["tidl_layers"]} == {"a_tidl_net.bin", "y_tidl_net.bin"}
    accuracy = report["accuracy"]
    assert accuracy["samples"] == 6 and accuracy["metric"] == "fidelity"
    assert accuracy["fidelity"]["y"]["cosine"] == pytest.approx(1.0)  # the stand-in's outputs ARE the float ones
    assert "TI host emulation" in accuracy["after_backend"]
    assert "compiling with TIDL" in "\n".join(lines)
    manifest = json.loads((dest / "manifest.json").read_text())
    assert manifest["tidl"]["compiled"] is True
    assert "tidl/artifacts/allowedNode.txt" in manifest["files"]


def test_command_placeholders_and_failures(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    with pytest.raises(OptionError, match=r"\{script\}, \{dir\}, \{config\} and \{soc\}"):
        build(tmp_path / "a", conv_relu_pool_model(), tidl_compile_command="run {nonsense}")
    with pytest.raises(ToolchainError, match="exit 9") as info:
        build(tmp_path / "b", conv_relu_pool_model(), tidl_compile_command=standin_command("conv_relu_pool", 9))
    assert "stand-in compile asked to fail" in str(info.value)  # the log's tail is quoted


@pytest.mark.toolchain("tidl")
def test_real_tidl_compile_of_the_sample(tmp_path, monkeypatch, sample_model_path):
    """Needs TI's edgeai-tidl-tools for AM68A: TIDL_TOOLS_PATH (tools/AM68A/tidl_tools) and TI's onnxruntime (TIDL_PYTHON)."""
    for key, value in REAL_TI_ENV.items():
        monkeypatch.setenv(key, value)
    options = BuildOptions(out_root=tmp_path / "out", target_options={"tidl": TidlOptions(tidl_calibration_frames=4, tidl_calibration_iterations=2)})
    dest = run_build(sample_model_path, "am68a", options, echo=lambda line: None)
    report = report_of(dest)
    assert report["convert"]["status"] == "built"
    assert report["convert"]["details"]["artifacts"]["subgraphs"] == 1
    assert report["toolchain_verdict"]["agreement"] == 1.0
    assert report["accuracy"]["after"]["top1"] > 0.9


def test_verdict_uses_the_users_names_after_a_safe_rename(tmp_path):
    """A node renamed for TI's deny list (a comma in its name) is reported under its own name again."""
    import shutil

    fixture = tmp_path / "fixture"
    shutil.copytree(FIXTURES / "conv_erf_conv", fixture)
    info = fixture / "artifacts" / "tempDir" / "graphvizInfo.txt"
    info.write_text(info.read_text().replace("1 erf Erf", "1 edgedeploy_deny_1 Erf"))  # what TIDL sees in model_tidl.onnx
    model = conv_erf_conv_model()
    model.graph.node[1].name = "erf,x"
    command = f"{shlex.quote(sys.executable)} {shlex.quote(str(STANDIN))} {shlex.quote(str(fixture))} {{dir}}"
    (tmp_path / "b").mkdir()
    dest, _ = build(tmp_path / "b", model, tidl_compile_command=command)
    report = report_of(dest)
    assert _denied(config_of(dest)) == {"edgedeploy_deny_1"}
    assert json.loads((dest / "toolchain_verdict.json").read_text())["verdict"]["nodes"]["erf,x"]["placement"] == "fallback"
    assert "edgedeploy_deny_1" not in json.loads((dest / "toolchain_verdict.json").read_text())["verdict"]["nodes"]
    assert report["toolchain_verdict"]["agreement"] == 1.0 and report["toolchain_verdict"]["not_reported"] == []


def test_audit_confirm_compiles_and_parses(tmp_path):
    """Target.toolchain_verdict (audit --confirm): no TI tools -> one clear error; with a compile command -> TIDL's placement."""
    from edgedeploy.targets import find_chip

    target, _ = find_chip("am62a")
    model_path = tmp_path / "m.onnx"
    onnx.save(conv_erf_conv_model(), str(model_path))
    with pytest.raises(ToolchainMissing, match="TIDL_TOOLS_PATH is not set"):
        target.toolchain_verdict(model_path, "am62a", tmp_path / "w0", tmp_path / "log.txt")
    verdict = target.toolchain_verdict(model_path, "am62a", tmp_path / "w1", tmp_path / "log.txt", tidl_compile_command=standin_command("conv_erf_conv"))
    assert {k: v.placement for k, v in verdict.nodes.items()} == {"c1": Placement.ACCELERATOR, "erf": Placement.FALLBACK, "Conv_2": Placement.ACCELERATOR}
    config = json.loads((tmp_path / "w1" / "tidl" / "compile_config.json").read_text())
    assert "deny_list:layer_name" not in config["provider_options"]  # TIDL's own verdict, unsteered
    assert config["provider_options"]["advanced_options:calibration_frames"] == 1
    assert "Final number of subgraphs" in (tmp_path / "log.txt").read_text()


def test_the_compile_script_reads_the_calibration_frames_by_the_models_own_names(tmp_path):
    """The generated compile script reads edgedeploy's index-keyed arrays (any tensor name, a NUL
    included, survives) and writes its emulation outputs the same way."""
    import importlib.util

    import numpy as np

    from edgedeploy.arrays import read_arrays, write_arrays

    dest, _ = build(tmp_path, conv_relu_pool_model())
    spec = importlib.util.spec_from_file_location("compile_tidl_under_test", dest / "tidl" / "compile_tidl.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)  # defines its functions; main() runs only as a script
    calibration = script.load_arrays(np, dest / "tidl" / "calibration.npz")
    assert list(calibration) == ["x"] and calibration["x"].shape[1:] == (1, 3, 8, 8)
    hostile = {"a\x00b/\u00e9" * 3: np.arange(4.0), "y": np.ones((2, 2))}
    script.save_arrays(np, tmp_path / "out.npz", hostile)
    back = read_arrays(tmp_path / "out.npz")
    assert list(back) == list(hostile) and all(np.array_equal(back[k], hostile[k]) for k in hostile)
    write_arrays(tmp_path / "in.npz", hostile)
    assert list(script.load_arrays(np, tmp_path / "in.npz")) == list(hostile)
