"""The audit against the real toolchains' placements on the real-model corpus, in CI, without the toolchains.

The toolchains' own verdicts on every corpus model and chip are committed data
(tests/fixtures/corpus/verdicts.json, collected by scripts/corpus/collect_verdicts.py from
esp-ppq, rknn-toolkit2 and onnx2tf + Vela); the models are committed, or their skeletons are
(graphs without weights: scripts/corpus/make_skeletons.py). Per chip, the pairs that agreed
exactly when the figures were recorded (scripts/corpus/record_agreement.py) must still agree:
a rule or pass change that breaks a real model fails here.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts" / "corpus"))

import agreement  # noqa: E402

RECORDED = ROOT / "tests" / "fixtures" / "corpus" / "agreement"
CHIPS = sorted(p.stem for p in RECORDED.glob("*.json"))


@pytest.fixture(scope="module")
def result():
    return agreement.run()


def test_every_pair_of_the_corpus_is_compared(result):
    assert result["not_compared"] == [], "a corpus model is neither committed nor a committed skeleton"
    assert len(result["pairs"]) >= 240


@pytest.mark.parametrize("chip", CHIPS)
def test_pairs_that_agreed_still_agree(result, chip):
    recorded = json.loads((RECORDED / f"{chip}.json").read_text())
    pairs = {p["model"]: p for p in result["pairs"].values() if p["chip"] == chip}
    broken = {m: pairs[m]["disagreements"][:3] for m in recorded["exact"] if m in pairs and not pairs[m]["exact"]}
    assert not broken, f"{chip}: pairs that agreed exactly no longer do: {json.dumps(broken)[:2000]}"
    agree = sum(p["nodes_agree"] for p in pairs.values())
    assert agree >= recorded["nodes_agree"], f"{chip}: {agree} nodes agree, {recorded['nodes_agree']} did"


def test_the_recorded_figures_are_current(result):
    """A pair that now agrees but is recorded as not agreeing: record it (scripts/corpus/record_agreement.py)."""
    stale = []
    for chip in CHIPS:
        recorded = json.loads((RECORDED / f"{chip}.json").read_text())
        for model in recorded["not_exact"]:
            pair = result["pairs"].get(f"{model}/{chip}")
            if pair and pair["exact"]:
                stale.append(f"{model}/{chip}")
    assert not stale, f"these pairs agree now; run scripts/corpus/record_agreement.py and commit: {', '.join(stale)}"
