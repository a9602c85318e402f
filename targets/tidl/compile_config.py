"""The configuration of TI's ONNX Runtime compile path, built from the user's options and the audit.

TI documents the compile options in edgeai-tidl-tools:
  examples/osrt_python/README.md ("User options for TIDL Acceleration"; tag 11_00_06_00) and
  docs/model_compilation.md ("Compilation Options"; release 11.02),
and the session it hands them to in docs/custom_model_evaluation.md ("OSRT APIs for TIDL
Acceleration"): providers ['TIDLCompilationProvider', 'CPUExecutionProvider'] with
provider_options [options, {}]. The option names below are TI's, character for character.

The deny list keeps on the Arm cores what the audit placed there: TIDL's importer is told
`deny_list:layer_name`, whose entries are the node's name or, for a node without a name, its
first output's name (TI: "In models where layer name is not present, use the first output
name"); TI splits the list at commas, so a node name with a comma is renamed in a TIDL copy of
the model (model_tidl.onnx) that both the compile script and the runner then use.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import onnx

from edgedeploy.audit.rules import Placement
from edgedeploy.errors import OptionError
from edgedeploy.model.stats import node_names

CONFIG_SCHEMA = "edgedeploy.tidl-compile/1"

# edgedeploy chip id -> TI's SOC name (edgeai-tidl-tools README, device table: J721E (TDA4VM) is am68pa).
TI_SOC = {"tda4vm": "am68pa", "am62a": "am62a", "am68a": "am68a", "am69a": "am69a"}

# TI's option names (osrt_python/README.md, model_compilation.md).
OPT_TIDL_TOOLS_PATH = "tidl_tools_path"
OPT_ARTIFACTS_FOLDER = "artifacts_folder"
OPT_TENSOR_BITS = "tensor_bits"
OPT_DEBUG_LEVEL = "debug_level"
OPT_MAX_NUM_SUBGRAPHS = "max_num_subgraphs"
OPT_ACCURACY_LEVEL = "accuracy_level"
OPT_CALIBRATION_FRAMES = "advanced_options:calibration_frames"
OPT_CALIBRATION_ITERATIONS = "advanced_options:calibration_iterations"
OPT_DENY_LAYER_NAME = "deny_list:layer_name"
OPT_DENY_LAYER_TYPE = "deny_list:layer_type"

# TI's defaults and ranges (same documents).
TENSOR_BITS = {"int8": 8, "int16": 16}  # 32 exists for host emulation only, never for a device
DEFAULT_CALIBRATION_FRAMES = 20
DEFAULT_CALIBRATION_ITERATIONS = 50
DEFAULT_MAX_NUM_SUBGRAPHS = 16  # README (11.00): "<= 16", default 16; 11.02 keeps 16 as the ceiling
MAX_NUM_SUBGRAPHS = 16
DEFAULT_ACCURACY_LEVEL = 1  # advanced bias calibration; calibration_frames/iterations apply to it
ACCURACY_LEVELS = (0, 1, 2, 9)

# Characters TI's comma-separated list cannot carry inside one name.
_LIST_SEPARATOR = ","


@dataclass
class DeniedNode:
    node: str  # edgedeploy's display name (reports, rules)
    layer_name: str  # the name TIDL matches
    op_type: str
    reason: str


@dataclass
class DenyList:
    nodes: list[DeniedNode] = field(default_factory=list)
    renamed: dict[str, str] = field(default_factory=dict)  # display name -> safe node name in model_tidl.onnx

    @property
    def layer_names(self) -> list[str]:
        return [d.layer_name for d in self.nodes]

    def option_value(self) -> str:
        return ", ".join(self.layer_names)


def tensor_bits(precision: str | None) -> int:
    """TIDL's tensor_bits for --precision (int8 by default)."""
    precision = precision or "int8"
    if precision not in TENSOR_BITS:
        raise OptionError(
            f"TIDL compiles int8 or int16 (tensor_bits 8 or 16), not {precision}; TI's 32-bit mode runs only in host emulation."
        )
    return TENSOR_BITS[precision]


def _safe_in_list(name: str) -> bool:
    return bool(name) and _LIST_SEPARATOR not in name and name == name.strip()


def deny_list_from_audit(audit, model: onnx.ModelProto) -> DenyList:
    """Every node the audit did not place on the accelerator, as TIDL layer names.

    A node whose TIDL name cannot be written into TI's comma-separated list gets a safe name
    (`edgedeploy_deny_<index>`), recorded in `renamed`; the build applies it with edgedeploy.model.named_copy.
    """
    display = node_names(model.graph)
    by_display = {name: (i, n) for i, (name, n) in enumerate(zip(display, model.graph.node))}
    result = DenyList()
    for placed in audit.nodes:
        if placed.placement is Placement.ACCELERATOR:
            continue
        index, proto = by_display[placed.node]
        layer = proto.name if proto.name else (proto.output[0] if proto.output else "")
        if not _safe_in_list(layer) or (not proto.name and _duplicate_output_name(model, layer)):
            layer = f"edgedeploy_deny_{index}"
            result.renamed[placed.node] = layer
        result.nodes.append(DeniedNode(placed.node, layer, placed.op_type, placed.reason))
    return result


def _duplicate_output_name(model: onnx.ModelProto, name: str) -> bool:
    # A nameless node is matched by its first output; another node *named* that way would be denied too.
    return any(n.name == name for n in model.graph.node)


@dataclass
class CompileSettings:
    """The user's choices for one TIDL compilation."""

    tensor_bits: int = 8
    calibration_frames: int = DEFAULT_CALIBRATION_FRAMES
    calibration_iterations: int = DEFAULT_CALIBRATION_ITERATIONS
    max_num_subgraphs: int = DEFAULT_MAX_NUM_SUBGRAPHS
    accuracy_level: int = DEFAULT_ACCURACY_LEVEL
    debug_level: int = 0

    def check(self) -> None:
        if self.tensor_bits not in TENSOR_BITS.values():
            raise OptionError(f"TIDL tensor_bits must be 8 or 16, not {self.tensor_bits}.")
        if not 1 <= self.max_num_subgraphs <= MAX_NUM_SUBGRAPHS:
            raise OptionError(f"--tidl-max-subgraphs must be between 1 and {MAX_NUM_SUBGRAPHS} (TI's limit), not {self.max_num_subgraphs}.")
        if self.calibration_frames < 1:
            raise OptionError("--tidl-calibration-frames must be at least 1.")
        if self.calibration_iterations < 1:
            raise OptionError("--tidl-calibration-iterations must be at least 1.")
        if self.accuracy_level not in ACCURACY_LEVELS:
            raise OptionError(f"--tidl-accuracy-level must be one of {', '.join(map(str, ACCURACY_LEVELS))}.")


def provider_options(settings: CompileSettings, deny: DenyList | None) -> dict:
    """TI's compile options except the two paths, which the script fills in where it runs."""
    settings.check()
    options = {
        OPT_TENSOR_BITS: settings.tensor_bits,
        OPT_ACCURACY_LEVEL: settings.accuracy_level,
        OPT_DEBUG_LEVEL: settings.debug_level,
        OPT_MAX_NUM_SUBGRAPHS: settings.max_num_subgraphs,
        OPT_CALIBRATION_FRAMES: settings.calibration_frames,
        OPT_CALIBRATION_ITERATIONS: settings.calibration_iterations,
    }
    if deny is not None and deny.nodes:
        options[OPT_DENY_LAYER_NAME] = deny.option_value()
    return options


def compile_config(
    *,
    chip: str,
    model_file: str,
    calibration_file: str,
    eval_file: str | None,
    artifacts_folder: str,
    settings: CompileSettings,
    deny: DenyList | None,
    model_sha256: str,
    edgedeploy_version: str,
    tidl_version: str,
) -> dict:
    """The JSON configuration the generated compile script reads (paths relative to the script)."""
    return {
        "schema": CONFIG_SCHEMA,
        "generated_by": f"edgedeploy {edgedeploy_version}; do not edit, rebuild instead",
        "model_sha256": model_sha256,
        "chip": chip,
        "soc": TI_SOC[chip],
        "tidl_version": tidl_version,
        "model": model_file,
        "calibration": calibration_file,
        "eval_inputs": eval_file,
        "artifacts_folder": artifacts_folder,
        # The graph TIDL partitions must be the model's own graph, node for node, so that
        # allowedNode.txt's indices and the deny list's names refer to the model's nodes; TI's
        # troubleshooting guide also asks for the same setting at compile and inference time.
        "graph_optimization_level": "ORT_DISABLE_ALL",
        "provider_options": provider_options(settings, deny),
        "denied_nodes": [d.__dict__ for d in (deny.nodes if deny else [])],
        "renamed_nodes": dict(deny.renamed) if deny else {},
    }
