"""What a TensorRT artifact adds to `edgedeploy report`: the engine build and trtexec's own timing, as data.

The build's `tensorrt` section says where and how the engine was built, and holds trtexec's
timing of it right after the build (one process, trtexec's own warm-up and duration; not
edgedeploy's measurement protocol, which `edgedeploy measure` runs). The report shows both in
one section the core renders (edgedeploy.report.sections), trtexec's timing labelled as its own.
"""

from __future__ import annotations

from pathlib import Path

from edgedeploy.report.sections import Column, Fact, Section, Table

TITLE = "TensorRT engine"
# (the statistics line of trtexec's summary, as the report names it)
TIMING_LINES = (("latency", "latency"), ("gpu_compute_time", "GPU compute"), ("end_to_end_host_latency", "end-to-end host latency"))
TIMING_COLUMNS = (Column("What"), Column("Min", unit="us", kind="number"), Column("Median", unit="us", kind="number"), Column("Mean", unit="us", kind="number"), Column("Max", unit="us", kind="number"))


def report_sections(report: dict, artifact: Path) -> list[Section]:
    section = report.get("tensorrt")
    if not isinstance(section, dict):
        return []
    provenance = section.get("provenance") if isinstance(section.get("provenance"), dict) else {}
    facts = (
        Fact("built on", _text(section.get("built_on"))),
        Fact("TensorRT", _text(provenance.get("trt_version"))),
        Fact("GPU", _text(provenance.get("gpu_name"))),
        Fact("layers in the engine", section.get("engine_layers") if _is_number(section.get("engine_layers")) else None),
        Fact("build time", section.get("build_wall_s") if _is_number(section.get("build_wall_s")) else None, "s", note="from the engine cache" if section.get("from_cache") else None),
    )
    perf = section.get("trtexec_performance") if isinstance(section.get("trtexec_performance"), dict) else {}
    tables, notes = (), ()
    summary = perf.get("summary_us") if isinstance(perf.get("summary_us"), dict) else {}
    rows = tuple((words, *(_number(summary[key].get(f)) for f in ("min_us", "median_us", "mean_us", "max_us"))) for key, words in TIMING_LINES if isinstance(summary.get(key), dict))
    if rows:
        tables = (Table("trtexec's own timing after the build", TIMING_COLUMNS, rows, name="trtexec-timing"),)
    if _is_number(perf.get("throughput_qps")):
        facts += (Fact("trtexec throughput", perf["throughput_qps"], "inferences/s"),)
    if isinstance(perf.get("note"), str):
        notes = (perf["note"],)
    return [Section(TITLE, facts=tuple(f for f in facts if f.value is not None), tables=tables, notes=notes, source="the build's trtexec run")]


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _number(value) -> float | None:
    return float(value) if _is_number(value) else None


def _text(value) -> str | None:
    return value if isinstance(value, str) and value.strip() else None
