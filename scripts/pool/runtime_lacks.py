#!/usr/bin/env python3
"""Re-derive every converted ESP pair's "runtime_lacks" from the committed truth (no toolchain run).

    .venv/bin/python scripts/pool/runtime_lacks.py [--write]

"runtime_lacks" lists the op types esp-ppq exported that ESP-DL's runtime registers no module for
(targets/espdl/verdict.modules_the_runtime_lacks); the truth reads such a pair as refused
(scripts/corpus/agreement.truth_of, docs/audit.md "ESP-DL's module registry in the truth").
collect.py and collect_verdicts.py write it from the .info's layers; for pairs collected before,
the layers' op types are read from what the pair recorded: each node off the accelerator names the
layer it went into in "detail" ("Erf F32", "fused into Expand F32"). A node on the accelerator
names none, so its op type counts only where esp-ppq is known to export that op type as a layer
of its own (EXPORTED_AS_ITSELF); where nothing else makes the pair refused, the other on-accelerator
op types the registry lacks are printed as undetermined (mostly folded: a BatchNormalization into its
Conv, a Shape or Cast computed at conversion; settled only by collecting again). Prints every pair
whose field changes.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
# Element-wise Max: an int8 layer of op type Max in the .info of h14-rk88's four elementwise_max_*
# probes and of every Max of the pool and fresh sets (docs/audit.md, fresh7's element-wise Max).
EXPORTED_AS_ITSELF = ("Max",)


def verdict_files() -> list[Path]:
    pool = FIXTURES / "pool"
    return [pool / "verdicts.json", pool / "case_verdicts.json", *sorted(pool.glob("fresh*/verdicts.json")), FIXTURES / "corpus" / "verdicts.json"]


def layer_types(pair: dict, nodes: list) -> tuple[set[str], set[str]]:
    """(op types of the layers the pair's record names, op types of on-accelerator nodes it cannot name).

    "exported_layers_read_again" names layers measured after the pair was collected (esp-ppq's fused
    Attention on the accelerator: h19-eiqesp, docs/audit.md, fresh10's AIMv2 on the ESP32-S3)."""
    named, unnamed = set((pair.get("exported_layers_read_again") or {}).get("op_types", ())), set()
    for (name, op), code in zip(nodes, pair["placements"]):
        if code == "A":
            (named if op in EXPORTED_AS_ITSELF else unnamed).add(op)
        elif code != ".":
            named.add(pair["detail"][name].removeprefix("fused into ").split(" ")[0])
    return named, unnamed


def rederive(data: dict, where: str) -> list[str]:
    from edgedeploy.targets.espdl.verdict import modules_the_runtime_lacks

    changes = []
    for key, pair in data["pairs"].items():
        if not key.rsplit("/", 1)[1].startswith("esp32") or pair.get("failed") or not pair.get("placements"):
            continue
        nodes = data["models"][key.rsplit("/", 1)[0]]["nodes"]
        named, unnamed = layer_types(pair, nodes)
        before = pair.get("runtime_lacks")
        # A layer of a type no node has (esp-ppq's fused Attention) was read from the .info when the
        # pair was collected; the placements cannot name it, so the recorded entry stands.
        fused = {op for op in before or () if op not in {op for _, op in nodes}}
        lacks = modules_the_runtime_lacks(named | fused)
        if lacks != (before or []):
            changes.append(f"{where} {key}: runtime_lacks {before} -> {lacks}")
        pair.pop("runtime_lacks", None)
        if lacks:
            pair["runtime_lacks"] = lacks
        if not lacks and modules_the_runtime_lacks(unnamed):  # refused already, or open until collected again
            changes.append(f"{where} {key}: undetermined (on the accelerator, layer not recorded): {modules_the_runtime_lacks(unnamed)}")
    return changes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="write the field into each verdicts file")
    args = parser.parse_args()
    for path in verdict_files():
        raw = path.read_text()
        data = json.loads(raw)
        for line in rederive(data, str(path.relative_to(FIXTURES))):
            print(line)
        if args.write:
            text = json.dumps(data, separators=(",", ":")) + "\n"
            if text != raw:
                path.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
