"""Parsers for what trtexec writes: its log, --exportLayerInfo, --exportProfile and --dumpProfile.

Pure Python (standard library only), so they run anywhere: on this machine over logs brought back
from a Jetson, and in tests over real outputs posted publicly (tests/fixtures/tensorrt/SOURCES.md).
The formats follow trtexec's own printing code (NVIDIA/TensorRT samples/common/sampleReporting.cpp,
sampleEngines.cpp) across TensorRT 7.x to 10.x; each parser accepts every variant seen in the
fixtures and ignores lines it does not know. Times come out in microseconds (`*_us`).

What each gives:
- parse_trtexec_log(text) -> TrtexecLog: TensorRT version, device name and compute capability,
  the performance summary (throughput, latency / GPU compute / H2D / D2H / enqueue statistics),
  pass/fail, and the DLA placement messages (layers switched to the GPU and why, DLA subgraphs).
- parse_layer_info(text) -> list[EngineLayer]: the engine's layers with the ONNX nodes fused in
  each (from "Metadata" with --profilingVerbosity=detailed, else from the layer name).
- parse_profile_json(text) / parse_profile_table(text) -> LayerProfile: per-layer time.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field

from edgedeploy.records import record_fields

# A trtexec log line starts with an optional timestamp and severity tags: "[03/11/2022-14:57:03] [I] ",
# "[12/04/2024-11:57:45] [TRT] [W] ", " [W] [TRT] ", "WARNING: [TRT]: ". Strip them to get the message.
_PREFIX = re.compile(r"^\s*(?:\[[0-9/]+-[0-9:]+\]\s*)?(?:(?:\[(?:I|W|E|V|F|TRT)\]|WARNING:|INFO:|ERROR:)\s*:?\s*)*")


def message_of(line: str) -> str:
    """A log line without its timestamp and [I]/[W]/[TRT] tags."""
    return _PREFIX.sub("", line.rstrip("\n"), count=1).strip()


def severity_of(line: str) -> str:
    for tag, name in (("[E]", "error"), ("ERROR:", "error"), ("[W]", "warning"), ("WARNING:", "warning"), ("[V]", "verbose")):
        if tag in line[:60]:
            return name
    return "info"


# --- versions ---------------------------------------------------------------------------------

def version_from_tag(tag: str) -> str | None:
    """trtexec's '[TensorRT v8601]' / 'v100200' to '8.6.1' / '10.2.0'.

    TensorRT < 10 packs MAJOR*1000 + MINOR*100 + PATCH; from 10 on, MAJOR*10000 + MINOR*100 + PATCH
    (NvInferVersion.h, NV_TENSORRT_VERSION).
    """
    m = re.fullmatch(r"v?(\d+)", tag.strip())
    if not m:
        return None
    n = int(m.group(1))
    if n >= 100000:
        major, rest = divmod(n, 10000)
    else:
        major, rest = divmod(n, 1000)
    minor, patch = divmod(rest, 100)
    return f"{major}.{minor}.{patch}"


# --- performance summary ----------------------------------------------------------------------

@dataclass
class TimingStats:
    """One statistics line of the performance summary, in microseconds."""

    min_us: float
    max_us: float
    mean_us: float
    median_us: float
    percentiles_us: dict[str, float] = field(default_factory=dict)  # "90" -> value

    def to_dict(self) -> dict:
        return asdict(self)


_STAT = re.compile(r"(min|max|mean|median|percentile\(([\d.]+)%\))\s*=\s*([-\d.eE+]+)\s*ms")

# Summary line name -> field name in TrtexecLog.summary.
SUMMARY_LINES = {
    "Latency": "latency",
    "End-to-End Host Latency": "end_to_end_host_latency",
    "Enqueue Time": "enqueue_time",
    "H2D Latency": "h2d_latency",
    "GPU Compute Time": "gpu_compute_time",
    "D2H Latency": "d2h_latency",
}


def parse_stats(text: str) -> TimingStats | None:
    found = {}
    percentiles = {}
    for m in _STAT.finditer(text):
        value_us = float(m.group(3)) * 1000.0
        if m.group(2):
            key = m.group(2)
            percentiles[key[:-2] if key.endswith(".0") else key] = value_us
        else:
            found[m.group(1)] = value_us
    if not {"min", "max", "mean", "median"} <= found.keys():
        return None
    return TimingStats(found["min"], found["max"], found["mean"], found["median"], percentiles)


# --- DLA placement messages -------------------------------------------------------------------

# TensorRT >= 8.4: "Layer '<name>' (<TYPE>): Unsupported on DLA. Switching this layer's device type to GPU."
_SWITCHED = re.compile(r"^Layer '(?P<name>.+)' \((?P<type>[A-Z_]+)\): Unsupported on DLA\. Switching this layer's device type to GPU\.")
# TensorRT <= 8.2: "Default DLA is enabled but layer <name> is not supported on DLA, falling back to GPU."
_DEFAULT_DLA = re.compile(r"^Default DLA is enabled but layer (?P<name>.+?) is not (?:supported|running) on DLA, falling back to GPU\.")
# "DLA only supports FP16 and Int8 precision type. Switching <name> device type to GPU."
_PRECISION_SWITCH = re.compile(r"^DLA only supports FP16 and Int8 precision type\. Switching (?P<name>.+) device type to GPU\.")
# "Validation failed for DLA layer: <name>. Switching to GPU fallback."
_VALIDATION = re.compile(r"^Validation failed for DLA layer: (?P<name>.+)\. Switching to GPU fallback\.")
# "DLA supports only 8 subgraphs per DLA core. Switching to GPU for layer <name>"
_SUBGRAPHS = re.compile(r"^DLA supports only \d+ subgraphs per DLA core\. Switching to GPU for layer (?P<name>.+)$")
# Reason lines printed just before the switch: "<name>: DLA only supports ...", "<name>: DLA cores do not ...",
# "DLA Layer <name> does not support dynamic shapes in any dimension.", "DLA LAYER: Batch size ... for layer <name> exceeds ..."
_REASON_COLON = re.compile(r"^(?P<name>[^:]+?): (?P<reason>(?:DLA|Concatenation on DLA|ActivationLayer).*)$")
_REASON_DYNAMIC = re.compile(r"^DLA Layer (?P<name>.+) does not support dynamic shapes in any dimension\.")
_REASON_BATCH = re.compile(r"^DLA LAYER: (?P<reason>Batch size .* for layer (?P<name>.+?) exceeds max batch size allowed of \d+)\.?$")
# Block listings: "---------- Layers Running on DLA ----------" (8.x) / "--------------- Layers running on DLA:" (7.x).
_BLOCK = re.compile(r"^-{3,}\s*Layers [Rr]unning on (?P<unit>DLA|GPU)\s*:?\s*-*$")
_FOREIGN = re.compile(r"\{ForeignNode\[(?P<first>.*?)(?:\.\.\.|…)(?P<last>.*?)\]\}")
_OFFLOADED = re.compile(r"^(?P<what>\{ForeignNode\[.*\]\}) successfully offloaded to DLA\.")


@dataclass
class DlaPlacement:
    """What the builder said about DLA and GPU placement, by TensorRT layer name."""

    to_gpu: dict[str, str] = field(default_factory=dict)  # layer -> reason (or the message that moved it)
    gpu_listed: list[str] = field(default_factory=list)  # from a "Layers running on GPU" block
    dla_listed: list[str] = field(default_factory=list)  # layer names inside DLA groups {a,b,c}
    dla_ranges: list[tuple[str, str]] = field(default_factory=list)  # ForeignNode[first...last] on DLA
    subgraph_splits: list[str] = field(default_factory=list)
    no_layer_on_dla: bool = False
    no_layer_on_gpu: bool = False

    @property
    def seen(self) -> bool:
        return bool(self.to_gpu or self.gpu_listed or self.dla_listed or self.dla_ranges or self.no_layer_on_dla or self.no_layer_on_gpu)

    def to_dict(self) -> dict:
        return {
            **record_fields(self, "to_gpu", "gpu_listed", "dla_listed"),
            "dla_ranges": [list(r) for r in self.dla_ranges],
            **record_fields(self, "subgraph_splits", "no_layer_on_dla", "no_layer_on_gpu"),
        }


def _split_listing(text: str) -> list[str]:
    """'{a,b,c}, {d}, e, f' -> groups of names; braces keep a DLA subgraph together."""
    items: list[str] = []
    depth = 0
    current = ""
    for ch in text:
        if ch in "{[(":
            depth += 1
        elif ch in "}])":
            depth -= 1
        if ch == "," and depth == 0:
            if current.strip():
                items.append(current.strip())
            current = ""
            continue
        current += ch
    if current.strip():
        items.append(current.strip())
    return items


def _parse_dla_lines(messages: list[str]) -> DlaPlacement:
    out = DlaPlacement()
    reasons: dict[str, str] = {}
    block: tuple[str, str] | None = None  # (unit, "new" | "old")
    for msg in messages:
        m = _BLOCK.match(msg)
        if m:
            # 8.x+: "---------- Layers Running on DLA ----------", then "[DlaLayer] ..." lines;
            # 7.x: "--------------- Layers running on DLA:", then one comma-separated line.
            block = (m.group("unit"), "old" if msg.rstrip().endswith(":") else "new")
            continue
        if block is not None:
            unit, style = block
            if msg in ("No layer is running on GPU", "No layer is running on DLA"):
                out.no_layer_on_gpu |= msg.endswith("GPU")
                out.no_layer_on_dla |= msg.endswith("DLA")
                block = None
                continue
            if style == "new" and msg.startswith("[DlaLayer] "):
                entry = msg[len("[DlaLayer] "):]
                fm = _FOREIGN.search(entry)
                if fm:
                    out.dla_ranges.append((fm.group("first"), fm.group("last")))
                else:
                    out.dla_listed.append(entry)
                continue
            if style == "new" and msg.startswith("[GpuLayer] "):
                entry = msg[len("[GpuLayer] "):]
                tm = re.match(r"^[A-Z_]+: (.+)$", entry)  # "[GpuLayer] SHUFFLE: name"
                out.gpu_listed.append(tm.group(1) if tm else entry)
                continue
            if style == "old" and msg:
                for item in _split_listing(msg):
                    if unit == "DLA" and item.startswith("{") and item.endswith("}"):
                        out.dla_listed.extend(n.strip() for n in item[1:-1].split(",") if n.strip())
                    elif unit == "DLA":
                        out.dla_listed.append(item)
                    else:
                        out.gpu_listed.append(item)
                block = None
                continue
            if msg:
                block = None
        for pattern in (_SWITCHED, _DEFAULT_DLA, _PRECISION_SWITCH, _VALIDATION, _SUBGRAPHS):
            m = pattern.match(msg)
            if m:
                name = m.group("name")
                out.to_gpu[name] = reasons.get(name, msg)
                break
        else:
            m = _REASON_BATCH.match(msg) or _REASON_DYNAMIC.match(msg)
            if m:
                reasons[m.group("name")] = msg
                continue
            m = re.match(r"^Splitting DLA subgraph at: (?P<name>.+?) because", msg)
            if m:
                out.subgraph_splits.append(m.group("name"))
                continue
            m = _OFFLOADED.match(msg)
            if m:
                fm = _FOREIGN.search(m.group("what"))
                if fm:
                    out.dla_ranges.append((fm.group("first"), fm.group("last")))
                continue
            if "no layer in the network can run on DLA" in msg:
                out.no_layer_on_dla = True
                continue
            m = _REASON_COLON.match(msg)
            if m and " " not in m.group("name").strip().replace("(Unnamed Layer* ", "("):
                reasons[m.group("name")] = msg
    return out


# --- the whole log ----------------------------------------------------------------------------

@dataclass
class TrtexecLog:
    trt_version: str | None = None
    command: str | None = None
    passed: bool | None = None
    device_name: str | None = None
    compute_capability: str | None = None
    device_memory_mib: int | None = None
    sms: int | None = None
    dla_core: str | None = None
    precision: str | None = None
    throughput_qps: float | None = None
    summary: dict[str, TimingStats] = field(default_factory=dict)
    total_host_walltime_s: float | None = None
    total_gpu_compute_s: float | None = None
    warmup_queries: int | None = None
    timed_queries: int | None = None
    errors: list[str] = field(default_factory=list)
    dla: DlaPlacement = field(default_factory=DlaPlacement)
    engine_built_s: float | None = None

    def to_dict(self) -> dict:
        d = {k: v for k, v in asdict(self).items() if k not in ("summary", "dla")}
        d["summary_us"] = {k: v.to_dict() for k, v in self.summary.items()}
        d["dla"] = self.dla.to_dict()
        return d


def parse_trtexec_log(text: str) -> TrtexecLog:
    """Everything trtexec's log says about the run (see the module docstring)."""
    log = TrtexecLog()
    messages = []
    for raw in text.splitlines():
        line = raw.rstrip()
        m = re.match(r"^&&&& (RUNNING|PASSED|FAILED) TensorRT\.trtexec \[TensorRT (v\d+)\] # (.*)$", line.strip())
        if m:
            log.trt_version = log.trt_version or version_from_tag(m.group(2))
            log.command = m.group(3)
            if m.group(1) != "RUNNING":
                log.passed = m.group(1) == "PASSED"
            continue
        msg = message_of(line)
        messages.append(msg)
        if severity_of(line) == "error" and msg:
            log.errors.append(msg)
        key, _, value = msg.partition(": ")
        value = value.strip()
        if key == "TensorRT version" and value:
            log.trt_version = value
        elif key == "Selected Device":
            log.device_name = value
        elif key == "Compute Capability":
            log.compute_capability = value
        elif key == "SMs" and value.isdigit():
            log.sms = int(value)
        elif key == "Device Global Memory":
            mm = re.match(r"(\d+) MiB", value)
            log.device_memory_mib = int(mm.group(1)) if mm else None
        elif key == "DLACore":
            log.dla_core = value or None
        elif key == "Precision":
            log.precision = value or None
        elif key == "Throughput":
            mm = re.match(r"([\d.eE+-]+) qps", value)
            log.throughput_qps = float(mm.group(1)) if mm else None
        elif key in SUMMARY_LINES:
            stats = parse_stats(value)
            if stats is not None:
                log.summary[SUMMARY_LINES[key]] = stats
        elif key == "Total Host Walltime":
            log.total_host_walltime_s = float(value.split()[0])
        elif key == "Total GPU Compute Time":
            log.total_gpu_compute_s = float(value.split()[0])
        else:
            mm = re.match(r"^Warmup completed (\d+) queries", msg)
            if mm:
                log.warmup_queries = int(mm.group(1))
            mm = re.match(r"^Timing trace has (\d+) queries", msg)
            if mm:
                log.timed_queries = int(mm.group(1))
            mm = re.match(r"^Engine built in ([\d.]+) sec", msg)
            if mm:
                log.engine_built_s = float(mm.group(1))
    log.dla = _parse_dla_lines(messages)
    return log


# --- layer information (--exportLayerInfo) -----------------------------------------------------

@dataclass
class EngineLayer:
    name: str
    layer_type: str | None
    onnx_nodes: list[str]  # ONNX node names fused into this layer (empty: reformat / unnamed)
    foreign_range: tuple[str, str] | None = None  # {ForeignNode[first...last]}: DLA or Myelin subgraph
    tactic: str | None = None
    origin: str | None = None
    is_reformat: bool = False

    @property
    def fused(self) -> bool:
        return len(self.onnx_nodes) > 1 or self.foreign_range is not None


# Record separator between "[ONNX Layer: X]" entries in detailed Metadata (TensorRT 10).
_META = re.compile(r"\[ONNX Layer: (.*?)\]")


def _names_in_layer_name(name: str) -> list[str]:
    """ONNX node names in a TensorRT layer name: 'Conv_0 + Relu_1', 'Conv_0 + PWN(Clip_3)', 'PWN(PWN(a, b), c)'."""
    if name.startswith("Reformatting CopyNode") or name.endswith(" copy finish") or " to nvm" in name or " from nvm" in name:
        return []
    if name.startswith("(Unnamed Layer*"):
        return []
    parts = []
    for piece in re.split(r" \+ |, ", name):
        piece = piece.strip()
        while True:
            m = re.match(r"^PWN\((.*)\)$", piece)
            if not m:
                break
            piece = m.group(1)
        for sub in re.split(r", ", piece):
            sub = re.sub(r"^PWN\(", "", sub).rstrip(")").strip()
            if sub and not sub.startswith("(Unnamed Layer*"):
                parts.append(sub)
    return parts


def parse_layer_info(text: str) -> list[EngineLayer]:
    """The layers of an engine from --exportLayerInfo (names only, or detailed objects)."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"layer information is not JSON: {exc}") from None
    layers_raw = data.get("Layers", []) if isinstance(data, dict) else data
    out = []
    for entry in layers_raw:
        if isinstance(entry, str):
            name, layer_type, meta, tactic, origin = entry, None, "", None, None
        else:
            name = str(entry.get("Name", ""))
            layer_type = entry.get("LayerType")
            meta = entry.get("Metadata") or ""
            tactic = entry.get("TacticName") or entry.get("TacticValue")
            origin = entry.get("Origin")
        fm = _FOREIGN.search(name)
        nodes = _META.findall(meta) if meta else []
        if not nodes:
            nodes = [] if fm else _names_in_layer_name(name)
        out.append(
            EngineLayer(
                name=name,
                layer_type=layer_type,
                onnx_nodes=nodes,
                foreign_range=(fm.group("first"), fm.group("last")) if fm else None,
                tactic=tactic,
                origin=origin,
                is_reformat=name.startswith("Reformatting CopyNode") or layer_type == "Reformat",
            )
        )
    return out


# --- per-layer profile ------------------------------------------------------------------------

@dataclass
class LayerTime:
    name: str
    total_ms: float
    average_us: float
    median_us: float | None
    percent: float


@dataclass
class LayerProfile:
    iterations: int | None
    layers: list[LayerTime]

    def to_dict(self) -> dict:
        return {"iterations": self.iterations, "layers": [asdict(layer) for layer in self.layers]}


def parse_profile_json(text: str) -> LayerProfile:
    """--exportProfile: [{"count": N}, {"name", "timeMs", "averageMs", "medianMs"?, "percentage"}, ...]."""
    data = json.loads(text)
    iterations = None
    layers = []
    for entry in data:
        if "count" in entry and "name" not in entry:
            iterations = int(entry["count"])
            continue
        median = entry.get("medianMs")
        layers.append(
            LayerTime(
                name=entry["name"],
                total_ms=float(entry["timeMs"]),
                average_us=float(entry["averageMs"]) * 1000.0,
                median_us=float(median) * 1000.0 if median is not None else None,
                percent=float(entry["percentage"]),
            )
        )
    return LayerProfile(iterations, layers)


# --dumpProfile's two table layouts: (header line, row under it). Times in ms; the median only in the second.
_PROFILE_LAYOUTS = (
    # TensorRT <= 8.4: name first
    (re.compile(r"^Layer\s+Time \(ms\)\s+Avg\. Time \(ms\)\s+Time %$"), re.compile(r"^(?P<name>.+?)\s+(?P<t>[\d.]+)\s+(?P<a>[\d.]+)\s+(?P<p>[\d.]+)$")),
    # TensorRT >= 8.5: name last
    (
        re.compile(r"^Time\(ms\)\s+Avg\.\(ms\)\s+Median\(ms\)\s+Time\(%\)\s+Layer$"),
        re.compile(r"^(?P<t>[\d.]+)\s+(?P<a>[\d.]+)\s+(?P<md>[\d.]+)\s+(?P<p>[\d.]+)\s+(?P<name>.+)$"),
    ),
)


def parse_profile_table(text: str) -> LayerProfile:
    """--dumpProfile's table in the log; both layouts:
    TensorRT <= 8.4: 'Layer   Time (ms)   Avg. Time (ms)   Time %' (name first);
    TensorRT >= 8.5: 'Time(ms)   Avg.(ms)   Median(ms)   Time(%)   Layer' (name last).
    The 'Total' row is left out.
    """
    iterations = None
    layers: list[LayerTime] = []
    row = None  # the row pattern of the table being read
    for raw in text.splitlines():
        msg = message_of(raw)
        m = re.match(r"^=== Profile \((\d+) iterations \) ===", msg)
        if m:
            iterations = int(m.group(1))
            continue
        header_row = next((r for header, r in _PROFILE_LAYOUTS if header.match(msg)), None)
        if header_row is not None:
            row = header_row
            continue
        if row is None:
            continue
        m = row.match(msg)
        if not m:
            row = None if msg else row  # a blank line inside the table keeps it; anything else ends it
            continue
        if m.group("name") != "Total":
            median = m.groupdict().get("md")
            median_us = float(median) * 1000.0 if median is not None else None
            layers.append(LayerTime(m.group("name"), float(m.group("t")), float(m.group("a")) * 1000.0, median_us, float(m.group("p"))))
    return LayerProfile(iterations, layers)
