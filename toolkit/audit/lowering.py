"""The lowering step: the toolchain's own graph passes, which run on a model before its rules do.

A toolchain rewrites the graph before it places the nodes (constant folding, BN folding into
Conv, activation and pattern fusions, layout rewrites), so the audit must do the same to agree
with it on real models. A pass is written the way a rule is: a small documented function whose
docstring is the sentence a user reads (citing what was measured, with which toolchain version),
with its limits as named constants, declared in the target's registry with where the toolchain
applies it:

    @RULES.graph_pass("BatchNormalization", VERSION=ESP_PPQ_VERSION)
    def fold_batchnorm_into_conv(graph, chip):
        \"\"\"esp-ppq {VERSION} folds a BatchNormalization that follows a Conv into the Conv's weights.\"\"\"

`RuleSet.passes` lists one rule set's passes in the order they run. How the engine runs them
(the graph a pass receives and returns, and how placements are shown on the original node names,
a fused node listing the names it absorbed) belongs to the lowering step itself (issue 16); no
target declares a pass yet, so `audit_model` runs none.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Callable

from edgedeploy.audit.rules import format_sentence, sentence_template


@dataclass(frozen=True)
class GraphPass:
    """One graph rewrite a toolchain applies before placing the nodes."""

    name: str
    ops: frozenset[str]  # the operators the rewrite starts from; empty: it looks at every node
    constants: dict[str, Any]
    apply: Callable[..., Any]
    template: str

    @functools.cached_property
    def sentence(self) -> str:
        """The docstring with its constants filled in: what users read in reports and docs."""
        return format_sentence(self.template, self.constants)


def graph_pass(*ops: str, **constants: Any) -> Callable[[Callable[..., Any]], GraphPass]:
    """Declare a graph pass on `ops`; its docstring is the sentence users read, with {NAME} from `constants`."""

    def wrap(func: Callable[..., Any]) -> GraphPass:
        declared = GraphPass(func.__name__, frozenset(ops), dict(constants), func, sentence_template(func, "graph pass"))
        declared.sentence  # fail at import time if a placeholder has no constant
        return declared

    return wrap
