"""What an eIQ artifact adds to `edgedeploy report`: Vela's memory estimates (i.MX 93), as data.

Every figure is Vela's estimate for the system configuration and memory mode it compiled for;
the section's source says which. The core renders it (edgedeploy.report.sections).
"""

from __future__ import annotations

from pathlib import Path

from edgedeploy.report.sections import Fact, Section

# (what the row says, the key in the report's vela.estimates)
VELA_MEMORY_ROWS = (
    ("SRAM used", "sram_used_bytes"),
    ("DRAM used", "dram_used_bytes"),
    ("weights, NPU-encoded", "weights_npu_encoded_bytes"),
    ("SRAM traffic per inference", "sram_total_bytes_per_inference"),
    ("DRAM traffic per inference", "dram_total_bytes_per_inference"),
)


def report_sections(report: dict, artifact: Path) -> list[Section]:
    estimates = vela_estimates(report)
    if estimates is None:
        return []
    facts = tuple(Fact(what, estimates[key], "bytes") for what, key in VELA_MEMORY_ROWS if _is_number(estimates.get(key)))
    if not facts:
        return []
    where = f"Vela's estimate for {estimates.get('system_config') or '?'}, memory mode {estimates.get('memory_mode') or '?'}"
    return [Section("Vela's memory estimates", facts=facts, source=where, notes=("Estimated by the compiler, not measured on the board.",))]


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def vela_estimates(report: dict) -> dict | None:
    """The report's vela.estimates, where the build ran Vela."""
    vela = report.get("vela")
    estimates = vela.get("estimates") if isinstance(vela, dict) else None
    return estimates if isinstance(estimates, dict) else None
