#!/usr/bin/env python3
"""The audit on the RKNN chips other than rk3588 and rk3566, against a fresh set's chip verdicts.

    .venv/bin/python scripts/pool/chip_agreement.py --set fresh4 [--chips rk3568,...]

<SET>/chip_verdicts.json is written by `scripts/pool/collect.py --set SET --chips CHIP
--verdicts-file chip_verdicts.json` (kept apart from verdicts.json, so the blind score's pairs are
unchanged). Per pair: does the audit agree exactly (score.py's comparison, on the committed
skeletons, as CI), and is the toolkit's placement the one it gave on rk3566 / rk3588 (the chips
whose rules the audit borrows).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "scripts" / "corpus"))
sys.path.insert(0, str(HERE))
import agreement  # noqa: E402
from score import FIXTURES, model_file  # noqa: E402

MEASURED = ("rk3566", "rk3588")


def same_placement(a: dict | None, b: dict) -> bool:
    """The same refusal or the same code on every node (the advised workaround build where the plain one fails)."""
    if a is None:
        return False
    (codes_a, failed_a, _), (codes_b, failed_b, _) = (agreement.truth_of(p, "rk") for p in (a, b))
    return codes_a == codes_b and bool(failed_a) == bool(failed_b)


def pairs(fresh_set: str, chips: set[str] | None = None) -> dict:
    folder = FIXTURES / fresh_set
    data = json.loads((folder / "chip_verdicts.json").read_text())
    measured = json.loads((folder / "verdicts.json").read_text())["pairs"]
    out = {}
    for key, audited in agreement.audited_pairs(data, lambda name: model_file(name, True, folder), chips):
        name, chip = key.split("/")
        result = agreement.compare_pair(name, chip, data["pairs"][key], data["models"][name]["nodes"], audited)
        result["like"] = [m for m in MEASURED if same_placement(measured.get(f"{name}/{m}"), data["pairs"][key])]
        out[key] = result
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", required=True)
    parser.add_argument("--chips", default="")
    args = parser.parse_args()
    found = pairs(args.set, {c for c in args.chips.split(",") if c} or None)
    for chip in sorted({k.split("/")[1] for k in found}):
        mine = {k: v for k, v in found.items() if k.endswith("/" + chip)}
        for key, r in sorted(mine.items()):
            shown = ", ".join(f"{d['node']} {d['predicted']}/{d['toolchain']}" for d in r["disagreements"][:4])
            print(f"  {key}: {'exact' if r['exact'] else 'differs'} ({r['nodes_agree']}/{r['nodes_compared']} nodes); toolkit placement as {', '.join(r['like']) or 'neither'} {shown}")
        like = {m: sum(m in r["like"] for r in mine.values()) for m in MEASURED}
        print(f"{args.set} {chip}: {sum(r['exact'] for r in mine.values())}/{len(mine)} pairs exact, nodes "
              f"{sum(r['nodes_agree'] for r in mine.values())}/{sum(r['nodes_compared'] for r in mine.values())}; toolkit placement as rk3566 {like['rk3566']}, as rk3588 {like['rk3588']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
