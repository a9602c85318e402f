"""TensorRT's own placement of each ONNX node, from a build's log and layer information.

The truth after a build, in the audit's vocabulary (edgedeploy.audit.confirm.ToolchainVerdict):
- GPU build: an engine was built, so every node runs on the GPU (ACCELERATOR); the detail says
  which engine layer it was fused into, or that it is not an engine layer (folded or fused away).
  A failed build is `failed` with TensorRT's first error.
- DLA build (--useDLACore --allowGPUFallback): the DLA is the default device, so a node runs on
  the DLA (ACCELERATOR) unless the builder said it switched it to the GPU (FALLBACK), with the
  reason it printed. Layers TensorRT added itself ("(Unnamed Layer* 12) [Shuffle]") or named
  after an initializer map to no ONNX node and are kept in `unmapped`.

TensorRT names a layer after its ONNX node (or, for a node without a name, after its first
output); the build sends a copy of the model whose nodes all carry edgedeploy's display names,
so layer names and report names agree.
"""

from __future__ import annotations

import re

import onnx

from edgedeploy.audit.confirm import NodeVerdict, ToolchainVerdict
from edgedeploy.audit.rules import Placement
from edgedeploy.model.stats import node_names
from edgedeploy.targets.tensorrt.trtexec_output import EngineLayer, TrtexecLog

# Errors that mean the build (not just one layer) failed.
_FATAL = re.compile(r"(Failed to parse|failed to create|could not be created|Engine could not be created|Network must have at least one output|No importer registered|Assertion failed|Error Code \d+)", re.I)


class NodeIndex:
    """ONNX display names in graph order, and how to find one from a TensorRT layer name."""

    def __init__(self, graph: onnx.GraphProto):
        self.names = node_names(graph)
        self.position = {n: i for i, n in enumerate(self.names)}
        self.by_output: dict[str, str] = {}
        for name, node in zip(self.names, graph.node):
            for out in node.output:
                if out:
                    self.by_output.setdefault(out, name)
        self.by_raw_name = {node.name: name for name, node in zip(self.names, graph.node) if node.name}

    def resolve(self, layer_name: str) -> str | None:
        for candidate in (layer_name, layer_name.strip("'")):
            if candidate in self.position:
                return candidate
            if candidate in self.by_raw_name:
                return self.by_raw_name[candidate]
            if candidate in self.by_output:
                return self.by_output[candidate]
        return None

    def span(self, first: str, last: str) -> list[str]:
        """Nodes of a {ForeignNode[first...last]} subgraph, by graph order (an approximation:
        TensorRT keeps the ONNX order when it builds the network)."""
        a = self.resolve(first) if first else None
        b = self.resolve(last) if last else None
        if a is None and b is None:
            return []
        start = self.position[a] if a is not None else 0
        end = self.position[b] if b is not None else len(self.names) - 1
        return self.names[start : end + 1]


def build_failure(log: TrtexecLog) -> str | None:
    """TensorRT's own sentence when the build as a whole failed, else None."""
    fatal = [e for e in log.errors if _FATAL.search(e)]
    if log.passed is False:
        return (fatal or log.errors or ["trtexec reported FAILED"])[0]
    if fatal:
        return fatal[0]
    return None


def _layer_of_each_node(index: NodeIndex, layers: list[EngineLayer]) -> tuple[dict[str, str], list[str]]:
    where: dict[str, str] = {}
    unmapped: list[str] = []
    for layer in layers:
        if layer.is_reformat:
            continue
        names = list(layer.onnx_nodes)
        if layer.foreign_range is not None:
            names += index.span(*layer.foreign_range)
        mapped = False
        for raw in names:
            node = index.resolve(raw)
            if node is not None:
                where.setdefault(node, layer.name)
                mapped = True
        if not mapped:
            unmapped.append(layer.name)
    return where, unmapped


def toolchain_verdict(
    graph: onnx.GraphProto,
    log: TrtexecLog,
    layers: list[EngineLayer] | None,
    dla: bool,
    trt_version: str | None = None,
) -> ToolchainVerdict:
    """The placement TensorRT itself reported for every node of `graph` (see the module docstring)."""
    index = NodeIndex(graph)
    verdict = ToolchainVerdict(toolchain="tensorrt", version=log.trt_version or trt_version or "unknown")
    failure = build_failure(log)
    if failure is not None:
        verdict.failed = failure
        return verdict
    where, unmapped_layers = _layer_of_each_node(index, layers or [])
    verdict.unmapped.extend(f"engine layer: {name}" for name in unmapped_layers)

    def engine_detail(node: str) -> str:
        if node in where:
            return f"engine layer '{where[node]}'"
        return "not an engine layer of its own (folded or fused away)" if layers is not None else ""

    if not dla:
        for node in index.names:
            verdict.nodes[node] = NodeVerdict(Placement.ACCELERATOR, ("GPU; " + engine_detail(node)).rstrip("; "))
        return verdict

    on_gpu: dict[str, str] = {}
    for layer, reason in log.dla.to_gpu.items():
        node = index.resolve(layer)
        if node is None:
            verdict.unmapped.append(f"switched to GPU: {layer}")
        else:
            on_gpu[node] = reason
    for layer in log.dla.gpu_listed:
        found = False
        for part in re.split(r" \+ ", layer):
            node = index.resolve(part.strip())
            if node is not None:
                on_gpu.setdefault(node, "listed under 'Layers running on GPU'")
                found = True
        if not found:
            verdict.unmapped.append(f"listed on GPU: {layer}")
    on_dla_listed: set[str] = set()
    for layer in log.dla.dla_listed:
        node = index.resolve(layer)
        if node is not None:
            on_dla_listed.add(node)
    for first, last in log.dla.dla_ranges:
        on_dla_listed.update(index.span(first, last))
    all_gpu = log.dla.no_layer_on_dla
    for node in index.names:
        if all_gpu:
            verdict.nodes[node] = NodeVerdict(Placement.FALLBACK, "no layer in the network can run on DLA")
        elif node in on_gpu:
            verdict.nodes[node] = NodeVerdict(Placement.FALLBACK, on_gpu[node])
        else:
            how = "listed on DLA" if node in on_dla_listed else "DLA (default device, not switched to GPU)"
            detail = "; ".join(x for x in (how, engine_detail(node)) if x)
            verdict.nodes[node] = NodeVerdict(Placement.ACCELERATOR, detail)
    return verdict
