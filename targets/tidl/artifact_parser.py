"""Reading what TI's compile path leaves in the artifacts folder, as the audit's placement form.

The files and their formats, as TI documents and writes them (edgeai-tidl-tools):
- `allowedNode.txt` (artifacts folder): the node groups TIDL accepted. One integer per line: the
  number of subgraphs; then per subgraph its node count followed by one node index per line
  (indices into the ONNX graph ONNX Runtime handed to TIDL). Written by TIDL's ONNX Runtime
  import (tidl_onnxRtImport_EP.cpp, TIDL_getSupportedNodesImport); listed among the artifacts in
  docs/model_compilation.md and in TI's tidl_osr_debug.md.
- `tempDir/graphvizInfo.txt`: the input of TI's runtimes visualisation
  (tempDir/runtimes_visualization.svg). First line: the node count; then one line per node:
  `<index> <name> <op_type> outputAdjNodes <n> ... inputAdjNodes <m> ... additionalOutput <k> ...
  diagInfo <why TIDL did not take it>`, where name is the node's name, or its first output's
  name when it has none.
- `*_tidl_net.bin` / `*_tidl_io_<n>.bin` (artifacts folder): one compiled network and its IO
  descriptor per subgraph, named `subgraph_<i>_...` (11.x, docs/model_compilation.md) or after the
  subgraph's output tensor (older releases, tidl_osr_debug.md: "{subgraphId}_tidl_net.bin").
- `tempDir/<net>.layer_info.txt`: per TIDL layer `<layerId> <dataId> <name in the original model>`
  (tidl_osr_debug.md: "first column ... layerId, second dataId, third the name in original model";
  docs/debugging.md 11.02: "SL No., Layer Num, Name").
- `onnxrtMetaData.txt`: `numGraphNodes=<n>` and `<serial>:<key>=<value>` lines per subgraph.
- the compile log: `Final number of subgraphs created are : <n>, - Offloaded Nodes - <k>, Total Nodes - <m>`.

Nothing here imports a TI library; every file is plain text except the .bin files, which are
only counted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import onnx

from edgedeploy.audit.confirm import NodeVerdict, ToolchainVerdict
from edgedeploy.audit.rules import Placement
from edgedeploy.errors import ToolchainError
from edgedeploy.model.stats import node_names

ALLOWED_NODES_FILE = "allowedNode.txt"
GRAPHVIZ_FILE = "tempDir/graphvizInfo.txt"
METADATA_FILE = "onnxrtMetaData.txt"
TEMP_DIR = "tempDir"
LOG_SUMMARY = re.compile(
    r"Final number of subgraphs created are\s*:\s*(\d+),\s*-\s*Offloaded Nodes\s*-\s*(\d+),\s*Total Nodes\s*-\s*(\d+)"
)


@dataclass
class GraphNodeInfo:
    index: int
    name: str
    op_type: str
    diagnostic: str


@dataclass
class LayerInfo:
    layer_id: int
    data_id: int
    name: str


@dataclass
class CompiledArtifacts:
    """Everything the TIDL compile path wrote that says where nodes run."""

    folder: Path
    subgraphs: list[list[int]]
    graph_nodes: list[GraphNodeInfo] | None
    networks: list[str]
    io_descriptors: list[str]
    layer_info: dict[str, list[LayerInfo]] = field(default_factory=dict)
    metadata: dict[str, str] = field(default_factory=dict)
    log_summary: dict | None = None

    @property
    def offloaded_indices(self) -> dict[int, int]:
        """node index -> subgraph number."""
        return {i: s for s, members in enumerate(self.subgraphs) for i in members}

    def summary(self) -> dict:
        return {
            "subgraphs": len(self.subgraphs),
            "offloaded_nodes": sum(len(s) for s in self.subgraphs),
            "graph_nodes": len(self.graph_nodes) if self.graph_nodes is not None else _int_or_none(self.metadata.get("numGraphNodes")),
            "networks": self.networks,
            "io_descriptors": self.io_descriptors,
            "tidl_layers": {k: len(v) for k, v in self.layer_info.items()},
            "log_summary": self.log_summary,
        }


def _int_or_none(text):
    try:
        return int(text)
    except (TypeError, ValueError):
        return None


class ArtifactFormatError(ToolchainError):
    """A TIDL artifact file does not have the format TI documents."""


def parse_allowed_nodes(text: str, source: str = ALLOWED_NODES_FILE) -> list[list[int]]:
    values = []
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line:
            continue
        try:
            values.append(int(line))
        except ValueError as exc:
            raise ArtifactFormatError(f"{source} line {number} is not an integer ({line[:40]!r}); it is not TIDL's node list.") from exc
    if not values:
        raise ArtifactFormatError(f"{source} is empty; TIDL did not finish partitioning the model.")
    count, pos = values[0], 1
    groups: list[list[int]] = []
    for s in range(count):
        if pos >= len(values):
            raise ArtifactFormatError(f"{source} announces {count} subgraphs but ends after {s}.")
        size = values[pos]
        members = values[pos + 1 : pos + 1 + size]
        if len(members) != size:
            raise ArtifactFormatError(f"{source}: subgraph {s} announces {size} nodes but lists {len(members)}.")
        groups.append(members)
        pos += 1 + size
    if pos != len(values):
        raise ArtifactFormatError(f"{source} has {len(values) - pos} values after its {count} subgraphs.")
    return groups


def parse_graphviz_info(text: str, source: str = GRAPHVIZ_FILE) -> list[GraphNodeInfo]:
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        raise ArtifactFormatError(f"{source} is empty.")
    try:
        count = int(lines[0].strip())
    except ValueError as exc:
        raise ArtifactFormatError(f"{source} does not start with the node count.") from exc
    nodes = []
    for line in lines[1:]:
        # `<index> <name> <op_type> outputAdjNodes ...`: the name may itself contain spaces, so the
        # fields are read around the first keyword rather than by splitting the line.
        head, keyword, _ = line.partition(" outputAdjNodes ")
        fields = head.split(" ")
        if not keyword or len(fields) < 3 or not fields[0].isdigit():
            raise ArtifactFormatError(f"{source}: cannot read the line {line[:60]!r}.")
        marker = line.find(" diagInfo")
        diagnostic = line[marker + len(" diagInfo") :].strip() if marker >= 0 else ""
        nodes.append(GraphNodeInfo(int(fields[0]), " ".join(fields[1:-1]), fields[-1], diagnostic))
    if len(nodes) != count:
        raise ArtifactFormatError(f"{source} announces {count} nodes but describes {len(nodes)}.")
    return nodes


def parse_layer_info(text: str) -> list[LayerInfo]:
    layers = []
    for line in text.splitlines():
        parts = line.replace(",", " ").split()
        if len(parts) >= 3 and parts[0].lstrip("-").isdigit() and parts[1].lstrip("-").isdigit():
            layers.append(LayerInfo(int(parts[0]), int(parts[1]), parts[-1]))
    return layers


def parse_metadata(text: str) -> dict[str, str]:
    meta = {}
    for line in text.splitlines():
        if "=" in line:
            key, value = line.split("=", 1)
            meta[key.strip()] = value.strip()
    return meta


def parse_log_summary(text: str) -> dict | None:
    found = LOG_SUMMARY.findall(text or "")
    if not found:
        return None
    subgraphs, offloaded, total = (int(v) for v in found[-1])
    return {"subgraphs": subgraphs, "offloaded_nodes": offloaded, "total_nodes": total}


def read_compiled_artifacts(folder: Path, log_text: str | None = None) -> CompiledArtifacts:
    """Read a TIDL artifacts folder; ArtifactFormatError with one sentence when it is not one."""
    folder = Path(folder)
    allowed = folder / ALLOWED_NODES_FILE
    if not allowed.is_file():
        raise ArtifactFormatError(f"{folder} has no {ALLOWED_NODES_FILE}: TIDL's compilation did not run there or stopped before partitioning.")
    subgraphs = parse_allowed_nodes(allowed.read_text(errors="replace"), str(allowed.name))
    graphviz = folder / GRAPHVIZ_FILE
    graph_nodes = parse_graphviz_info(graphviz.read_text(errors="replace")) if graphviz.is_file() else None
    networks = sorted(p.name for p in folder.glob("*_tidl_net.bin"))
    io_descriptors = sorted(p.name for p in folder.glob("*_tidl_io_*.bin"))
    layer_info = {p.name: parse_layer_info(p.read_text(errors="replace")) for p in sorted((folder / TEMP_DIR).glob("*layer_info*.txt"))}
    metadata_file = folder / METADATA_FILE
    metadata = parse_metadata(metadata_file.read_text(errors="replace")) if metadata_file.is_file() else {}
    return CompiledArtifacts(folder, subgraphs, graph_nodes, networks, io_descriptors, layer_info, metadata, parse_log_summary(log_text or ""))


def verdict_from_artifacts(compiled: CompiledArtifacts, model: onnx.ModelProto, version: str) -> ToolchainVerdict:
    """Where TIDL put each node of `model` (the model it compiled), keyed by edgedeploy's node names.

    Nodes in one of allowedNode.txt's groups run on the C7x/MMA (ACCELERATOR); the rest run in
    ONNX Runtime on the Arm cores (FALLBACK), with TIDL's own reason from graphvizInfo.txt. Nodes
    are matched by TIDL's name for them (node name, else first output); without graphvizInfo.txt,
    by index, which holds because the compile runs with ONNX Runtime's graph optimisations off.
    """
    graph = model.graph
    display = node_names(graph)
    tidl_names = [n.name or (n.output[0] if n.output else "") for n in graph.node]
    verdict = ToolchainVerdict(toolchain="tidl", version=f"TIDL {version}")
    offloaded = compiled.offloaded_indices

    # Which model node each TIDL index stands for.
    index_to_model: dict[int, int] = {}
    diagnostics: dict[int, str] = {}
    if compiled.graph_nodes is not None:
        by_name: dict[str, list[int]] = {}
        for i, name in enumerate(tidl_names):
            by_name.setdefault(name, []).append(i)
        for info in compiled.graph_nodes:
            candidates = [i for i in by_name.get(info.name, []) if graph.node[i].op_type == info.op_type]
            if len(candidates) == 1:
                index_to_model[info.index] = candidates[0]
            elif info.index < len(graph.node) and graph.node[info.index].op_type == info.op_type and tidl_names[info.index] == info.name:
                index_to_model[info.index] = info.index
            else:
                verdict.unmapped.append(f"{info.name} ({info.op_type}, TIDL index {info.index})")
            diagnostics[info.index] = info.diagnostic
    else:
        announced = _int_or_none(compiled.metadata.get("numGraphNodes"))
        if announced is not None and announced != len(graph.node):
            verdict.failed = f"TIDL saw {announced} nodes but the model has {len(graph.node)}: the artifacts belong to another model or graph optimisation level."
            return verdict
        index_to_model = {i: i for i in range(len(graph.node))}

    for index in offloaded:
        if index not in index_to_model and compiled.graph_nodes is None:
            verdict.unmapped.append(f"TIDL index {index} (beyond the model's {len(graph.node)} nodes)")

    layer_names = _layers_by_name(compiled)
    model_to_index = {m: t for t, m in index_to_model.items()}
    for m, name in enumerate(display):
        t = model_to_index.get(m)
        if t is None:
            continue
        if t in offloaded:
            detail = f"TIDL subgraph {offloaded[t]}"
            layer = next((layer_names[o] for o in graph.node[m].output if o in layer_names), None)
            if layer:
                detail += f", TIDL layer {layer}"
            verdict.nodes[name] = NodeVerdict(Placement.ACCELERATOR, detail)
        else:
            reason = diagnostics.get(t, "")
            verdict.nodes[name] = NodeVerdict(Placement.FALLBACK, reason or "not in TIDL's allowed nodes: runs in ONNX Runtime on the Arm cores")

    if compiled.subgraphs and len(compiled.networks) < len(compiled.subgraphs):
        verdict.failed = (
            f"TIDL partitioned {len(compiled.subgraphs)} subgraphs but wrote {len(compiled.networks)} network files: "
            "the compilation stopped before calibration finished."
        )
    verdict.estimates = {}  # TIDL's compile path reports no timing estimates
    return verdict


def _layers_by_name(compiled: CompiledArtifacts) -> dict[str, str]:
    """Original-model tensor name -> 'network:layerId' of the first TIDL layer that names it."""
    out = {}
    for file, layers in compiled.layer_info.items():
        net = file.split(".layer_info")[0]
        for layer in layers:
            out.setdefault(layer.name, f"{net}:{layer.layer_id}")
    return out


def layer_table(compiled: CompiledArtifacts) -> list[dict]:
    """The layer information as rows for the report."""
    return [
        {"network": file.split(".layer_info")[0], "layer_id": l.layer_id, "data_id": l.data_id, "name": l.name}
        for file, layers in compiled.layer_info.items()
        for l in layers
    ]
