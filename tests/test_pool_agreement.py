"""The audit against the real toolchains on the issue-27 pool, in CI, without the toolchains.

The pool's models are built by scripts/pool/build_pool.py (not committed); their graphs are
committed as skeletons (tests/fixtures/pool/skeletons/) and the toolchains' placements of their
nodes as data (tests/fixtures/pool/verdicts.json, scripts/pool/collect.py). Pairs that agreed
exactly when recorded (tests/fixtures/pool/agreement.json, scripts/pool/score.py --record) must
still agree, and the published figures in docs/audit-agreement.md must be today's.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts" / "pool"))

import catalogue  # noqa: E402
import score  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures" / "pool"
RECORDED = FIXTURES / "agreement.json"


@pytest.fixture(scope="module")
def result():
    return score.run(skeletons_only=True)  # what CI has, here too


@pytest.fixture(scope="module")
def cases():
    return score.run_cases(skeletons_only=True)


def test_the_split_is_the_fixed_hash_and_the_manifest_agrees():
    manifest = json.loads((FIXTURES / "manifest.json").read_text())
    assert catalogue.part_of("tv_resnet18") == ("held-out" if int(__import__("hashlib").sha256(b"tv_resnet18").hexdigest(), 16) % 5 == 0 else "tuning")
    wrong = [m["name"] for m in manifest["models"].values() if m["part"] != catalogue.part_of(m["name"])]
    assert not wrong, f"manifest parts differ from catalogue.part_of: {wrong[:5]}"
    held = sum(m["part"] == "held-out" for m in manifest["models"].values())
    assert 0.1 < held / len(manifest["models"]) < 0.35, "the held-out share is far from one model in five"


def test_every_pair_with_a_verdict_is_compared(result):
    assert result["not_compared"] == [], "a pool model with verdicts has no committed skeleton (scripts/pool/collect.py writes it)"
    assert {p["part"] for p in result["pairs"].values()} == {"held-out", "tuning"}


def test_pairs_that_agreed_still_agree(result):
    recorded = json.loads(RECORDED.read_text())
    broken = {k: result["pairs"][k]["disagreements"][:3] or result["pairs"][k]["predicted_off_accelerator"]
              for k in recorded["exact"] if k in result["pairs"] and not result["pairs"][k]["exact"]}
    assert not broken, f"pool pairs that agreed exactly no longer do: {json.dumps(broken)[:2000]}"


def test_recording_refuses_to_drop_a_held_out_pair_unnoticed():
    """score.py --record stops (exit 1, the pairs named) when a held-out pair recorded as exact no
    longer is, unless --accept-held-out-loss is given: a rule tuned on the tuning part must not
    lower the held-out figure silently."""
    recorded = json.loads(RECORDED.read_text())
    held = [k for k in recorded["exact"] if catalogue.part_of(k.split("/")[0]) == "held-out"]
    assert held, "no held-out pair is recorded as exact"
    tuning = next(k for k in recorded["exact"] if catalogue.part_of(k.split("/")[0]) == "tuning")
    pairs = {held[0]: {"part": "held-out", "exact": False}, held[1]: {"part": "held-out", "exact": True}, tuning: {"part": "tuning", "exact": False}}
    assert score.held_out_lost({"pairs": pairs}) == [held[0]]


def test_the_recorded_figures_are_current(result):
    recorded = json.loads(RECORDED.read_text())
    stale = [k for k in recorded["not_exact"] if k in result["pairs"] and result["pairs"][k]["exact"]]
    assert not stale, f"these pool pairs agree now; run scripts/pool/score.py --record --markdown docs/audit-agreement.md and commit: {stale}"


def test_every_case_pack_with_a_verdict_is_compared(cases):
    assert cases["not_compared"] == [], "a case pack with verdicts has no committed skeleton"


def test_cases_that_agreed_still_agree(cases):
    recorded = json.loads(RECORDED.read_text()).get("cases_agree", [])
    broken = {k: cases["cases"][k]["disagreements"][:2] for k in recorded if k in cases["cases"] and not cases["cases"][k]["agree"]}
    assert not broken, f"packed cases that agreed no longer do: {json.dumps(broken)[:2000]}"


def test_the_published_section_shows_todays_figures(result, cases):
    page = (ROOT / "docs" / "audit-agreement.md").read_text()
    start, end = page.find(score.SECTION_START), page.find(score.SECTION_END)
    assert start != -1 and end > start, "docs/audit-agreement.md has no pool section"
    manifest = json.loads((FIXTURES / "manifest.json").read_text())
    assert page[start : end + len(score.SECTION_END)] == score.render_section(result, manifest, cases), \
        "re-run scripts/pool/score.py --record --markdown docs/audit-agreement.md and commit"


def test_packed_cases_are_independent_of_each_other():
    """Each case of a pack reads only its own inputs and constants and writes its own outputs, so
    one case's placement cannot depend on another's (the premise of packing)."""
    import onnx

    packs = sorted((FIXTURES / "case_skeletons").glob("*.onnx"))
    assert packs, "no case packs committed"
    for path in packs:
        graph = onnx.load(str(path), load_external_data=False).graph
        tag = lambda name: name.split("_", 1)[0]  # noqa: E731
        crossing = [n.name for n in graph.node if any(i and tag(i) != tag(n.name) for i in n.input) or any(tag(o) != tag(n.name) for o in n.output)]
        assert not crossing, f"{path.name}: nodes that touch another case's tensors: {crossing[:5]}"
        assert len({tag(i.name) for i in graph.input}) == len({tag(n.name) for n in graph.node}), f"{path.name}: a case without its own input"


def test_the_fresh_set_is_apart_and_every_pair_is_compared():
    """The fresh set (scored blind, score.py --fresh) shares no model with the pool the rules were
    tuned on, and each of its pairs with a verdict has its committed skeleton."""
    pool = {e.name for e in catalogue.entries()}
    fresh = {e.name for e in catalogue.fresh_entries()}
    assert fresh and not fresh & pool, f"fresh models also in the pool: {sorted(fresh & pool)}"
    result = score.run(skeletons_only=True, fresh=True)
    assert result["not_compared"] == [], "a fresh model with verdicts has no committed skeleton (collect.py --fresh writes it)"
    assert result["pairs"] and {p["part"] for p in result["pairs"].values()} == {"fresh"}
    assert {k.split("/")[0] for k in result["pairs"]} <= fresh


def test_the_second_fresh_set_is_apart_and_every_pair_is_compared():
    """fresh2 (score.py --set fresh2) shares no model with the pool or the first fresh set, and each
    of its pairs with a verdict has its committed skeleton and is audited today."""
    pool = {e.name for e in catalogue.entries()}
    fresh = {e.name for e in catalogue.fresh_entries()}
    fresh2 = {e.name for e in catalogue.fresh2_entries()}
    assert fresh2 and not fresh2 & (pool | fresh), f"fresh2 models also in the pool or fresh: {sorted(fresh2 & (pool | fresh))}"
    result = score.run(skeletons_only=True, fresh_set="fresh2")
    assert result["not_compared"] == [], "a fresh2 model with verdicts has no committed skeleton (collect.py --set fresh2 writes it)"
    assert result["pairs"] and {p["part"] for p in result["pairs"].values()} == {"fresh2"}
    assert {k.split("/")[0] for k in result["pairs"]} <= fresh2


@pytest.mark.parametrize("name", ["fresh2", "fresh3", "fresh4", "fresh5", "fresh6", "fresh7", "fresh8", "fresh9", "fresh10", "fresh11", "fresh12"])
def test_a_fresh_sets_blind_figures_are_kept_and_published(name):
    """Every pair of the fresh set collected was scored blind once (score.py --set NAME --chips C
    --blind, into NAME/blind.json), and docs/audit-agreement.md quotes each chip's blind figure."""
    verdicts = json.loads((FIXTURES / name / "verdicts.json").read_text())
    blind = json.loads((FIXTURES / name / "blind.json").read_text())
    scored = [k for c in blind["chips"].values() for k in c["pairs_scored"]]
    assert len(scored) == len(set(scored)) and set(scored) == set(verdicts["pairs"]), \
        f"{name} pairs collected but not scored blind: {sorted(set(verdicts['pairs']) - set(scored))[:5]}"
    for chip, c in blind["chips"].items():
        assert c["pairs"] == len(c["pairs_scored"]) and c["exact"] == c["pairs"] - len(c["misses"]), chip
    page = (ROOT / "docs" / "audit-agreement.md").read_text()
    missing = [line for line in score.blind_lines(blind) if line not in page]
    assert not missing, f"docs/audit-agreement.md does not quote these {name} blind figures: {missing}"


def test_the_third_fresh_set_is_apart_from_the_pool_and_the_other_fresh_sets():
    """fresh3 (chosen before any build, scored blind with score.py --set fresh3) shares no model with
    the pool, fresh or fresh2, and each of its picks has its reason written down."""
    others = {e.name for e in catalogue.entries()} | {e.name for e in catalogue.fresh_entries()} | {e.name for e in catalogue.fresh2_entries()}
    fresh3 = {e.name for e in catalogue.fresh3_entries()}
    assert fresh3 and not fresh3 & others, f"fresh3 models also in the pool, fresh or fresh2: {sorted(fresh3 & others)}"
    assert set(catalogue.FRESH3) == set(catalogue.FRESH3_WHY), "a fresh3 model without its reason, or a reason without its model"
    pool_archs = {(e.source, e.arch) for e in catalogue.entries()}
    assert not {(e.source, e.arch) for e in catalogue.fresh3_entries() if e.source != "pypi-wheel"} & pool_archs
    assert catalogue.FRESH_SETS["fresh3"] is catalogue.fresh3_entries
    result = score.run(skeletons_only=True, fresh_set="fresh3")
    assert result["not_compared"] == [], "a fresh3 model with verdicts has no committed skeleton (collect.py --set fresh3 writes it)"
    assert result["pairs"] and {p["part"] for p in result["pairs"].values()} == {"fresh3"}
    assert {k.split("/")[0] for k in result["pairs"]} <= fresh3


def test_the_fourth_fresh_set_is_apart_from_the_pool_and_the_other_fresh_sets():
    """fresh4 (chosen before any build, to be scored blind once with score.py --set fresh4) shares no
    model or (source, architecture) with the pool or the earlier fresh sets, and each pick has its
    reason. Its models are not audited here: nobody may see the audit on them before the blind score."""
    earlier = catalogue.entries() + catalogue.fresh_entries() + catalogue.fresh2_entries() + catalogue.fresh3_entries()
    fresh4 = catalogue.fresh4_entries()
    assert fresh4 and not {e.name for e in fresh4} & {e.name for e in earlier}
    assert not {(e.source, e.arch) for e in fresh4} & {(e.source, e.arch) for e in earlier}
    assert set(catalogue.FRESH4) == set(catalogue.FRESH4_WHY), "a fresh4 model without its reason, or a reason without its model"
    assert catalogue.FRESH_SETS["fresh4"] is catalogue.fresh4_entries


@pytest.mark.parametrize("name", ["fresh5", "fresh6", "fresh7", "fresh8", "fresh9", "fresh10", "fresh11", "fresh12"])
def test_a_later_fresh_set_is_apart_from_the_pool_and_the_other_fresh_sets(name):
    """A fresh set (chosen before any build, scored blind once with score.py --set NAME) shares no
    model or (source, architecture) with the pool or the other fresh sets, and each pick has its
    reason. Its models are not audited here: nobody may see the audit on them before the blind score."""
    earlier = catalogue.entries() + [e for other, entries in catalogue.FRESH_SETS.items() if other != name for e in entries()]
    chosen = getattr(catalogue, f"{name}_entries")()
    assert chosen and not {e.name for e in chosen} & {e.name for e in earlier}
    assert not {(e.source, e.arch) for e in chosen} & {(e.source, e.arch) for e in earlier}
    assert set(getattr(catalogue, name.upper())) == set(getattr(catalogue, f"{name.upper()}_WHY")), f"a {name} model without its reason, or a reason without its model"
    assert catalogue.FRESH_SETS[name] is getattr(catalogue, f"{name}_entries")


def test_the_pooled_blind_figures_are_published_as_kept():
    """docs/audit-agreement.md's pooled blind table (score.py --blind-summary) is what every fresh
    set's blind.json sums to, and it pools every set that has one."""
    sets, chips = score.blind_totals()
    kept = sorted(p.parent.name for p in FIXTURES.glob("*/blind.json"))
    assert sorted(sets) == kept and chips, f"sets pooled {sets}, blind.json kept for {kept}"
    for chip, c in chips.items():
        assert c["exact"] <= c["pairs"] and c["nodes_agree"] <= c["nodes_compared"], chip
    page = (ROOT / "docs" / "audit-agreement.md").read_text()
    assert score.render_blind_summary() in page, "run scripts/pool/score.py --blind-summary docs/audit-agreement.md"


def test_rederiving_runtime_lacks_keeps_the_committed_truth():
    """scripts/pool/runtime_lacks.py re-derives each converted ESP pair's runtime_lacks from its
    placements; on the committed verdicts it must change nothing, a fused layer recorded from the
    .info (esp-ppq's Attention, which no node is) included."""
    import runtime_lacks

    for path in runtime_lacks.verdict_files():
        data = json.loads(path.read_text())
        changes = [c for c in runtime_lacks.rederive(data, path.name) if "undetermined" not in c]
        assert not changes, changes[:3]
    aimv2 = json.loads((FIXTURES / "fresh10" / "verdicts.json").read_text())["pairs"]["hf_aimv2_vision/esp32s3"]
    assert aimv2["runtime_lacks"] == ["Attention"]


def test_the_audit_reports_its_own_blind_error_as_kept(tmp_path):
    """The report's unseen_agreement (each chip's error bar, toolkit/audit/unseen_agreement.json) is
    what every blind.json sums to, and a chip no blind set measured claims nothing."""
    from edgedeploy.audit import report

    _, chips = score.blind_totals()
    packaged = json.loads(report.UNSEEN_AGREEMENT.read_text())["chips"]
    assert packaged == chips, "run scripts/pool/score.py --blind-summary docs/audit-agreement.md"
    rk3566 = report.unseen_agreement("rk3566")
    assert {k: rk3566[k] for k in chips["rk3566"]} == chips["rk3566"]
    assert f"exact for {chips['rk3566']['exact']} of them" in rk3566["sentence"]
    assert report.unseen_agreement("rk3568") is None
