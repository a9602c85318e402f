"""TIDL's limits on Gemm and MatMul (fully connected layers).

Declared in the order the audit checks them: the limits both releases state, then those of one
release only (releases="11.02" / "11.00").
"""

from __future__ import annotations

from edgedeploy.audit.rules import Offence
from edgedeploy.targets.tidl.rules.conv import MAX_VARIABLE_INPUTS
from edgedeploy.targets.tidl.rules.documents import RULES
from edgedeploy.targets.tidl.rules.helpers import rank_outside, variable_inputs


GEMM_TRANS_A = 0
GEMM_ALPHA = 1.0
GEMM_BETA = 1.0
FILTER_MIN_RANK = 2


@RULES.rule("Gemm", TRANS_A=GEMM_TRANS_A, ALPHA=GEMM_ALPHA, BETA=GEMM_BETA)
def gemm_parameters(node, chip):
    """TIDL runs Gemm as a fully connected layer only with transA={TRANS_A}, alpha={ALPHA} and beta={BETA}."""
    found = {
        "transA": int(node.attr("transA", 0)),
        "alpha": float(node.attr("alpha", 1.0)),
        "beta": float(node.attr("beta", 1.0)),
    }
    wrong = {k: v for k, v in found.items() if v != {"transA": GEMM_TRANS_A, "alpha": GEMM_ALPHA, "beta": GEMM_BETA}[k]}
    if wrong:
        return Offence(wrong)
    return None


@RULES.rule("Gemm")
def gemm_bias_vector(node, chip):
    """Gemm's bias must be a vector [N] or [1, N] whose N is the output width; TI's model optimizer can split other Gemms into MatMul + Add."""
    bias, out = node.input(2), node.output(0)
    if bias is None or bias.shape is None or out is None or out.shape is None:
        return None
    width = out.shape[-1]
    if tuple(bias.shape) not in ((width,), (1, width)):
        return Offence(tuple(bias.shape), f"output width {width}")
    return None


@RULES.rule("Gemm", "MatMul", MIN_RANK=FILTER_MIN_RANK)
def inner_product_filter_rank(node, chip):
    """The second (filter) input of a fully connected layer needs at least {MIN_RANK} dimensions."""
    return rank_outside(node.input(1), "filter rank", at_least=FILTER_MIN_RANK)


@RULES.rule("Gemm", releases="11.02", MAX_VARIABLE_INPUTS=MAX_VARIABLE_INPUTS)
def gemm_single_variable_input(node, chip):
    """TIDL accepts at most {MAX_VARIABLE_INPUTS} variable input in Gemm; B and C must be constants."""
    n = len(variable_inputs(node))
    if n > MAX_VARIABLE_INPUTS:
        return Offence(n, "variable inputs")
    return None
