#!/usr/bin/env python3
"""Record which corpus pairs the audit agrees with exactly, per chip, for the CI test.

    .venv/bin/python scripts/corpus/record_agreement.py [--chips rk3588,...]

Writes tests/fixtures/corpus/agreement/<chip>.json: the pairs that agree exactly now, and the
node figures. tests/test_corpus_agreement.py fails when a pair recorded as exact stops agreeing
(a rule or pass change that breaks a real model), and when a chip's figures drop. Run it after
a change that makes more pairs agree, and commit the files with that change.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from agreement import ROOT, run  # noqa: E402

OUT = ROOT / "tests" / "fixtures" / "corpus" / "agreement"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chips", default="")
    args = parser.parse_args()
    chips = {c for c in args.chips.split(",") if c} or None
    result = run(chips)
    by_chip: dict[str, dict] = {}
    for key, pair in sorted(result["pairs"].items()):
        entry = by_chip.setdefault(pair["chip"], {"exact": [], "not_exact": [], "nodes_agree": 0, "nodes_compared": 0})
        entry["exact" if pair["exact"] else "not_exact"].append(pair["model"])
        entry["nodes_agree"] += pair["nodes_agree"]
        entry["nodes_compared"] += pair["nodes_compared"]
    OUT.mkdir(parents=True, exist_ok=True)
    for chip, entry in by_chip.items():
        (OUT / f"{chip}.json").write_text(json.dumps(entry, indent=1) + "\n")
        print(f"{chip}: {len(entry['exact'])}/{len(entry['exact']) + len(entry['not_exact'])} exact; nodes {entry['nodes_agree']}/{entry['nodes_compared']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
