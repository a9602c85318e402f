"""Rules register themselves (edgedeploy.audit.registry); every rule must reach some chip's rule set.

A rule that no rule set reaches is dead knowledge: it is checked nowhere and missing from the
supported-operator pages (that is how eIQ's DynamicQuantizeLinear rule went unnoticed). The
target tests go through each target's public `rule_set` for every chip, precision and
`rule_set_variants` entry, so a variant the target forgets to offer shows up too.
"""

from __future__ import annotations

import importlib
import pkgutil

import pytest

from edgedeploy.audit.registry import RuleRegistry
from edgedeploy.audit.rules import Offence, Placement, Rule
from edgedeploy.pipeline.audit import has_rules
from edgedeploy.targets import all_targets

TARGETS_WITH_RULES = [t for t in all_targets() if has_rules(t)]


def rule_set_variants(module, chip_id: str) -> list[dict]:
    """The keyword arguments of every table a rules module offers for a chip (default included)."""
    variants = module.rule_set_variants(chip_id) if hasattr(module, "rule_set_variants") else [{}]
    return [{k: v for k, v in variant.items() if k not in ("label", "default")} for variant in variants]


def reached_rules(target) -> list[Rule]:
    """Every rule some chip's rule set holds, through the target's own rule_set()."""
    module = target.module("rules")
    reached: dict[int, Rule] = {}
    for chip in target.chips:
        for variant in rule_set_variants(module, chip.id):
            precisions = [variant["precision"]] if "precision" in variant else list(chip.precisions)
            for precision in precisions:
                options = {**variant, "precision": precision}
                reached.update((id(r), r) for r in target.rule_set(chip.id, **options).rules)
    return list(reached.values())


def rules_modules(target) -> list:
    """The target's rules module and, when it is a package, every module in it."""
    module = target.module("rules")
    found = [module]
    if hasattr(module, "__path__"):
        found += [importlib.import_module(f"{module.__name__}.{info.name}") for info in pkgutil.iter_modules(module.__path__)]
    return found


@pytest.mark.parametrize("target", TARGETS_WITH_RULES, ids=lambda t: t.id)
def test_every_rule_and_pass_sentence_is_complete(target):
    """A rule's or pass's sentence is formatted when first read, not at import (the audit's start
    stays cheap), so every one a chip can meet is formatted here: a {NAME} without its constant fails."""
    module = target.module("rules")
    declared = list(module.RULES) + list(module.RULES.passes)
    for chip in target.chips:
        for variant in rule_set_variants(module, chip.id):
            for precision in [variant["precision"]] if "precision" in variant else list(chip.precisions):
                rule_set = target.rule_set(chip.id, **{**variant, "precision": precision})
                declared += list(rule_set.rules) + list(rule_set.passes)
    for item in declared:
        assert item.sentence and "{" not in item.sentence.replace("{{", ""), item.name


def unreached(target) -> list[str]:
    reached = {id(r) for r in reached_rules(target)}
    return sorted(r.name for r in target.module("rules").RULES if id(r) not in reached)


@pytest.mark.parametrize("target", TARGETS_WITH_RULES, ids=lambda t: t.id)
def test_every_registered_rule_reaches_a_chips_rule_set(target):
    registry = target.module("rules").RULES
    assert isinstance(registry, RuleRegistry) and registry.target == target.id
    assert set(registry.chips) == {c.id for c in target.chips}
    assert len(registry) > 0
    assert unreached(target) == [], "rules no chip's rule set reaches (wire them to a chip or delete them)"
    assert registry.unreachable() == []
    assert registry.name_clashes() == []


@pytest.mark.parametrize("target", TARGETS_WITH_RULES, ids=lambda t: t.id)
def test_every_rule_a_target_declares_is_registered(target):
    """A rule made with the bare @rule decorator in a rules module would reach no rule set."""
    registered = {id(r) for r in target.module("rules").RULES}
    loose = []
    for module in rules_modules(target):
        for name, value in vars(module).items():
            if isinstance(value, Rule) and value.check.__module__.startswith(target.package) and id(value) not in registered:
                loose.append(f"{module.__name__}.{name}")
    assert loose == []


@pytest.mark.parametrize("target", TARGETS_WITH_RULES, ids=lambda t: t.id)
def test_rule_sets_take_their_rules_in_declaration_order(target):
    order = {id(r): i for i, r in enumerate(target.module("rules").RULES)}
    for chip in target.chips:
        positions = [order[id(r)] for r in target.rule_set(chip.id).rules]
        assert positions == sorted(positions), chip.id


# --- the registry itself, on a made-up target ---------------------------------------------------


def toy_registry() -> RuleRegistry:
    registry = RuleRegistry("toy", chips=("big", "small"), releases=("2", "1"), precisions={"big": ("int8", "fp16"), "small": ("int8",)})

    @registry.rule("Conv", LIMIT=3)
    def everywhere(node, chip):
        """Conv kernels up to {LIMIT}."""

    @registry.rule("Conv", chips=("small",))
    def only_small(node, chip):
        """Small chips only."""

    @registry.rule(placement=Placement.UNSUPPORTED, releases="1")
    def only_release_1(node, chip):
        """Release 1 only."""

    @registry.rule("Relu", precisions=("fp16",), releases=("2",))
    def fp16_release_2(node, chip):
        """fp16 builds of release 2."""

    return registry


def names(rules) -> list[str]:
    return [r.name for r in rules]


def test_rules_for_a_selection_in_declaration_order():
    registry = toy_registry()
    assert names(registry.rules_for("small", release="1", precision="int8")) == ["everywhere", "only_small", "only_release_1"]
    assert names(registry.rules_for("big", release="2", precision="fp16")) == ["everywhere", "fp16_release_2"]
    assert names(registry.rules_for("big", release="2", precision="int8")) == ["everywhere"]
    assert names(registry) == ["everywhere", "only_small", "only_release_1", "fp16_release_2"]
    everywhere = next(iter(registry))
    assert everywhere.sentence == "Conv kernels up to 3." and everywhere.ops == frozenset({"Conv"})


def test_selections_must_name_declared_values():
    registry = toy_registry()
    with pytest.raises(KeyError):
        registry.rules_for("medium", release="1", precision="int8")
    with pytest.raises(ValueError, match="small has no precision 'fp16'"):
        registry.rules_for("small", release="1", precision="fp16")
    with pytest.raises(ValueError, match="no release None"):
        registry.rules_for("big", precision="int8")
    with pytest.raises(ValueError, match="do not distinguish units"):
        registry.rules_for("big", release="1", precision="int8", unit="dla")


def test_scopes_are_checked_when_a_rule_is_declared():
    registry = toy_registry()
    with pytest.raises(ValueError, match="no such chips"):
        registry.rule(chips=("bigg",))
    with pytest.raises(ValueError, match="no such releases"):
        registry.rule(releases=("3",))
    with pytest.raises(TypeError, match="do not distinguish units"):
        registry.rule(units=("dla",))
    with pytest.raises(TypeError, match="unknown keywords \\['release'\\]"):
        registry.rule(release="1")
    with pytest.raises(ValueError, match="no docstring"):

        @registry.rule("Relu")
        def silent(node, chip):
            return None


def test_unreachable_and_clashing_rules_are_found():
    registry = toy_registry()
    assert registry.unreachable() == [] and registry.name_clashes() == []

    # fp16 is declared, but not for the small chip: this scope names no rule set.
    @registry.rule(chips=("small",), precisions=("fp16",))
    def small_fp16(node, chip):
        """Nothing builds this."""

    assert registry.unreachable() == ["small_fp16"]

    def make(release):
        @registry.rule("Conv", releases=release)
        def per_release(node, chip):
            """One per release."""

    make(("1",))
    make(("2",))
    assert registry.name_clashes() == []
    make(("1", "2"))
    assert registry.name_clashes() == ["per_release"]


def test_the_reachability_check_sees_a_variant_the_target_never_offers():
    """What test_every_registered_rule_reaches_a_chips_rule_set catches: a release rule_set never passes."""
    registry = toy_registry()

    class Module:
        RULES = registry

        @staticmethod
        def rule_set_variants(chip_id):
            return [{"default": True}]  # forgets release 1

    class ToyTarget:
        chips = tuple(type("Chip", (), {"id": c, "precisions": ("int8",)}) for c in ("big", "small"))

        def module(self, name):
            return Module

        def rule_set(self, chip_id, precision="int8", release="2"):
            from edgedeploy.audit.rules import RuleSet

            return RuleSet("toy", chip_id, release, "", {}, registry.rules_for(chip_id, release=release, precision=precision))

    assert unreached(ToyTarget()) == ["fp16_release_2", "only_release_1"]


def test_graph_passes_register_like_rules():
    registry = toy_registry()

    @registry.graph_pass("BatchNormalization", releases=("2",), VERSION="2")
    def fold_batchnorm(graph, chip):
        """Release {VERSION} folds BatchNormalization into the Conv before it."""
        return graph

    assert registry.passes_for("big", release="2", precision="int8") == [fold_batchnorm]
    assert registry.passes_for("big", release="1", precision="int8") == []
    assert fold_batchnorm.sentence == "Release 2 folds BatchNormalization into the Conv before it."
    assert fold_batchnorm.apply("g", "big") == "g" and len(registry) == 4  # passes are not rules


def test_a_registered_rule_still_checks_nodes():
    registry = RuleRegistry("toy", chips=("c",))

    @registry.rule("Relu", placement=Placement.UNSUPPORTED)
    def refuses(node, chip):
        """Refused."""
        return Offence(chip)

    assert refuses.evaluate(None, "c") == [Offence("c")] and refuses.placement is Placement.UNSUPPORTED
