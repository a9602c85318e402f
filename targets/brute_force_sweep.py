"""The brute force's sweep of variants, worker side (RKNN's and eIQ's worker_brute_force.py load it by path).

Runs in a toolchain environment (never imports edgedeploy). The variants: "every" (the model as
quantised), then per group (one ONNX node's layers or operators) "keep" (that group alone kept in
float) and "alone" (every other name of `everything` kept in float); their order and what they
return are what targets/brute_force.py reads.
"""

import time


def sweep(groups, everything, measure, ctx, deadline_s):
    """measure(names kept in float, variant index) -> the path of that variant's outputs file.
    A variant the toolchain refuses is recorded with its error (the sweep goes on), except
    "every", without which nothing compares. No pair is started after `deadline_s` seconds."""
    variants = [("every", None, [])]
    for index, group in enumerate(groups):
        mine = set(group["layers"])
        variants.append(("keep", index, list(group["layers"])))
        variants.append(("alone", index, [name for name in everything if name not in mine]))
    results, started = [], time.monotonic()
    for index, (kind, group, kept) in enumerate(variants):
        # Per node its two variants together, so that a sweep stopped by the deadline leaves whole pairs.
        if kind != "alone" and time.monotonic() - started > deadline_s:
            ctx.log("brute force: deadline of %.0f s reached after %d of %d variants" % (deadline_s, index, len(variants)))
            break
        try:
            path = measure(kept, index)
        except Exception as exc:  # noqa: BLE001 - one variant the toolchain refuses is said, the sweep goes on
            if kind == "every":
                raise
            results.append({"kind": kind, "group": group, "error": "%s: %s" % (type(exc).__name__, str(exc).strip().splitlines()[-1] if str(exc).strip() else "")})
            ctx.log("brute force: variant %d failed: %s" % (index + 1, results[-1]["error"]))
            continue
        results.append({"kind": kind, "group": group, "outputs": path})
        ctx.log("brute force: variant %d of %d (%s %s) after %.0f s" % (index + 1, len(variants), kind, groups[group]["node"] if group is not None else "", time.monotonic() - started))
    return results
