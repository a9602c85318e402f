"""What an eIQ artifact adds to `edgedeploy report`: Vela's memory estimates (i.MX 93).

Every figure is Vela's estimate for the system configuration and memory mode it compiled for,
and says so in its source column.
"""

from __future__ import annotations

from pathlib import Path

# (what the row says, the key in the report's vela.estimates)
VELA_MEMORY_ROWS = (
    ("SRAM used (Vela)", "sram_used_bytes"),
    ("DRAM used (Vela)", "dram_used_bytes"),
    ("weights, NPU-encoded (Vela)", "weights_npu_encoded_bytes"),
    ("SRAM traffic per inference (Vela)", "sram_total_bytes_per_inference"),
    ("DRAM traffic per inference (Vela)", "dram_total_bytes_per_inference"),
)


def report_contribution(report: dict, artifact: Path) -> dict:
    estimates = vela_estimates(report)
    if estimates is None:
        return {}
    where = f"Vela's estimate ({estimates.get('system_config') or '?'}, {estimates.get('memory_mode') or '?'})"
    rows = [{"what": what, "bytes": estimates.get(key), "source": where} for what, key in VELA_MEMORY_ROWS]
    return {"memory": [row for row in rows if isinstance(row["bytes"], (int, float)) and not isinstance(row["bytes"], bool)]}


def vela_estimates(report: dict) -> dict | None:
    """The report's vela.estimates, where the build ran Vela."""
    vela = report.get("vela")
    estimates = vela.get("estimates") if isinstance(vela, dict) else None
    return estimates if isinstance(estimates, dict) else None
