"""Where a chip's rules come from: one registry per target, which every rule joins as it is declared.

A target's rules package makes one `RuleRegistry`, naming its chips and, where its documents
distinguish them, the toolchain releases, build precisions and units its tables differ by:

    RULES = RuleRegistry("tidl", chips=CHIPS, releases=TIDL_VERSIONS)

and declares every rule through it, saying where the rule applies (left out: everywhere):

    @RULES.rule("Conv", chips=("am62a",), KERNEL=(3, 3), STRIDE=3)
    def conv_3x3_stride_3_on_am62a(node, chip):
        \"\"\"On AM62A a convolution with a {KERNEL} kernel and stride {STRIDE} does not run on the accelerator.\"\"\"

The other arguments are those of `edgedeploy.audit.rules.rule` (operators, placement, the named
constants its sentence shows). A chip's RuleSet takes `RULES.rules_for(chip, release=...)`: every
rule whose scope admits that selection, in the order the rules were declared (so the first rule
that decides a node's placement gives the reason shown). No list of rules is kept by hand, and
`RULES.unreachable()` names a rule that no declared selection reaches (tests/test_rule_registry.py
also checks this through every target's `rule_set`).

The toolchain's own graph passes, the lowering step that runs before the rules (folding, fusions,
layout rewrites: edgedeploy.audit.lowering), are declared the same way with `@RULES.graph_pass`
and reach the RuleSet through `RULES.passes_for(...)`.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Mapping, Union

from edgedeploy.audit.lowering import GraphPass, graph_pass
from edgedeploy.audit.rules import Placement, Rule, RuleFunction, rule

# The ways a target's documents may split its tables, besides the chip. The decorator names them
# in the plural (the values a rule applies to), a selection in the singular (the one audited).
DIMENSIONS = ("releases", "precisions", "units")
SINGULAR = {"releases": "release", "precisions": "precision", "units": "unit"}

# Declared values of a dimension: one tuple for every chip, or a tuple per chip.
Values = Union[Iterable[str], Mapping[str, Iterable[str]]]


@dataclass(frozen=True)
class Selection:
    """One rule set's coordinates: a chip and, where the target distinguishes them, a release
    (of the toolchain documents the table follows), a build precision and a unit (which unit is the
    accelerator where a chip offers a choice, e.g. TensorRT's DLA or GPU)."""

    chip: str
    release: str | None = None
    precision: str | None = None
    unit: str | None = None

    def value(self, dimension: str) -> str | None:
        return getattr(self, SINGULAR[dimension])


@dataclass(frozen=True)
class Scope:
    """Where a rule (or graph pass) applies: the values of each dimension it admits; None: every one."""

    chips: frozenset[str] | None = None
    releases: frozenset[str] | None = None
    precisions: frozenset[str] | None = None
    units: frozenset[str] | None = None

    def admits(self, selection: Selection) -> bool:
        if self.chips is not None and selection.chip not in self.chips:
            return False
        return all(getattr(self, d) is None or selection.value(d) in getattr(self, d) for d in DIMENSIONS)


def _as_set(values: str | Iterable[str] | None) -> frozenset[str] | None:
    if values is None:
        return None
    return frozenset((values,) if isinstance(values, str) else values)


class RuleRegistry:
    """The rules and graph passes of one target, each with its scope, in the order they were declared."""

    def __init__(self, target: str, chips: Iterable[str], *, releases: Values | None = None, precisions: Values | None = None, units: Values | None = None):
        self.target = target
        self.chips = tuple(chips)
        # dimension -> chip -> the values declared for that chip (absent: the target does not distinguish it)
        self._declared: dict[str, dict[str, tuple[str, ...]]] = {}
        for dimension, values in (("releases", releases), ("precisions", precisions), ("units", units)):
            if values is None:
                continue
            if isinstance(values, Mapping):
                unknown = set(values) - set(self.chips)
                if unknown:
                    raise ValueError(f"{target}: {dimension} declared for unknown chips {sorted(unknown)}")
                self._declared[dimension] = {chip: tuple(values.get(chip, ())) for chip in self.chips}
            else:
                self._declared[dimension] = dict.fromkeys(self.chips, tuple(values))
        self._rules: list[tuple[Rule, Scope]] = []
        self._passes: list[tuple[GraphPass, Scope]] = []

    # --- declaring -------------------------------------------------------------------------------

    def rule(self, *ops: str, placement: Placement = Placement.FALLBACK, before_folding: bool = False, **options: Any) -> Callable[[RuleFunction], Rule]:
        """`edgedeploy.audit.rules.rule`, registered here with where it applies.

        `options`: chips, releases, precisions, units (each left out: everywhere), and the named
        constants the rule's sentence shows.
        """
        scope, constants = self._split(options)

        def wrap(func: RuleFunction) -> Rule:
            declared = rule(*ops, placement=placement, before_folding=before_folding, **constants)(func)
            self._rules.append((declared, scope))
            return declared

        return wrap

    def graph_pass(self, *ops: str, **options: Any) -> Callable[[Callable], GraphPass]:
        """`edgedeploy.audit.lowering.graph_pass`, registered here with where the toolchain applies it (options as for rule)."""
        chip_key = options.pop("chip_key", None)
        scope, constants = self._split(options)

        def wrap(func: Callable) -> GraphPass:
            declared = graph_pass(*ops, chip_key=chip_key, **constants)(func)
            self._passes.append((declared, scope))
            return declared

        return wrap

    def _split(self, options: dict[str, Any]) -> tuple[Scope, dict[str, Any]]:
        """(where it applies, the named constants): the scope keywords are chips and DIMENSIONS."""
        where = {k: options.pop(k, None) for k in ("chips", *DIMENSIONS)}
        # Constants are UPPER_CASE; a lower-case keyword is a misspelt scope (release=, chip=, ...).
        misspelt = [k for k in options if not k.isupper()]
        if misspelt:
            raise TypeError(f"{self.target}: unknown keywords {misspelt}; where a rule applies is said with chips, {', '.join(DIMENSIONS)}")
        return self._scope(**where), options

    def _scope(self, chips, releases, precisions, units) -> Scope:
        scope = Scope(_as_set(chips), _as_set(releases), _as_set(precisions), _as_set(units))
        if scope.chips is not None and not scope.chips <= set(self.chips):
            raise ValueError(f"{self.target}: no such chips {sorted(scope.chips - set(self.chips))}; the chips are {', '.join(self.chips)}")
        for dimension in DIMENSIONS:
            wanted = getattr(scope, dimension)
            if wanted is None:
                continue
            if dimension not in self._declared:
                raise TypeError(f"{self.target}: the rules do not distinguish {dimension}; declare them in RuleRegistry(...) first")
            known = {v for values in self._declared[dimension].values() for v in values}
            if not wanted <= known:
                raise ValueError(f"{self.target}: no such {dimension} {sorted(wanted - known)}; declared: {', '.join(sorted(known))}")
        return scope

    # --- assembling a rule set -------------------------------------------------------------------

    def select(self, chip: str, release: str | None = None, precision: str | None = None, unit: str | None = None) -> Selection:
        """The selection for one rule set; every dimension the registry declares must be given a declared value."""
        if chip not in self.chips:
            raise KeyError(chip)
        selection = Selection(chip, release, precision, unit)
        for dimension in DIMENSIONS:
            value = selection.value(dimension)
            declared = self._declared.get(dimension)
            if declared is None:
                if value is not None:
                    raise ValueError(f"{self.target}: the rules do not distinguish {dimension} (given {SINGULAR[dimension]}={value!r})")
            elif value not in declared[chip]:
                raise ValueError(f"{self.target}: {chip} has no {SINGULAR[dimension]} {value!r}; declared: {', '.join(declared[chip])}")
        return selection

    def rules_for(self, chip: str, release: str | None = None, precision: str | None = None, unit: str | None = None) -> list[Rule]:
        """The rules of one rule set, in declaration order."""
        selection = self.select(chip, release, precision, unit)
        return [r for r, scope in self._rules if scope.admits(selection)]

    def passes_for(self, chip: str, release: str | None = None, precision: str | None = None, unit: str | None = None) -> list[GraphPass]:
        """The graph passes the toolchain applies for one rule set, in declaration order (the order they run)."""
        selection = self.select(chip, release, precision, unit)
        return [p for p, scope in self._passes if scope.admits(selection)]

    # --- checking --------------------------------------------------------------------------------

    def __iter__(self) -> Iterator[Rule]:
        return (r for r, _ in self._rules)

    def __len__(self) -> int:
        return len(self._rules)

    @property
    def passes(self) -> tuple[GraphPass, ...]:
        return tuple(p for p, _ in self._passes)

    def selections(self) -> list[Selection]:
        """Every selection the declared chips and dimension values make."""
        found = []
        for chip in self.chips:
            axes = [self._declared[d][chip] if d in self._declared else (None,) for d in DIMENSIONS]
            found += [Selection(chip, *values) for values in itertools.product(*axes)]
        return found

    def unreachable(self) -> list[str]:
        """Names of the rules and passes no declared selection admits (a scope that names no real rule set)."""
        selections = self.selections()
        entries = [*self._rules, *self._passes]
        return [entry.name for entry, scope in entries if not any(scope.admits(s) for s in selections)]

    def name_clashes(self) -> list[str]:
        """Rule names that two rules of one selection share (a rule's name must say which rule it is)."""
        clashes = set()
        for selection in self.selections():
            names = [r.name for r, scope in self._rules if scope.admits(selection)]
            clashes |= {n for n in names if names.count(n) > 1}
        return sorted(clashes)
