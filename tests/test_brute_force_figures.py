"""The brute force's figures from a worker's variants (targets/brute_force.py, RKNN's and eIQ's), on
hand-made outputs: a node is ranked only with both variants, one the toolchain refused is said with
its reason, one the deadline stopped is said as not reached, and nodes with no layers are listed."""

from __future__ import annotations

import numpy as np

from edgedeploy.arrays import write_arrays
from edgedeploy.targets.brute_force import figures


def test_figures_rank_whole_pairs_and_say_what_was_refused_or_not_reached(tmp_path):
    reference = {"y": np.array([[1.0, 2.0], [3.0, 0.5]])}

    def saved(name, values):
        return str(write_arrays(tmp_path / f"{name}.npz", {"y": np.asarray(values)}))

    groups = [{"node": "a", "layers": ["a1"]}, {"node": "b", "layers": ["b1"]}, {"node": "c", "layers": ["c1"]}]
    variants = [{"kind": "every", "group": None, "outputs": saved("every", [[1.0, 1.0], [2.0, 0.0]])},
                {"kind": "keep", "group": 0, "outputs": saved("keep_a", [[1.0, 2.0], [3.0, 0.5]])},
                {"kind": "alone", "group": 0, "outputs": saved("alone_a", [[0.0, 3.0], [0.0, 4.0]])},
                {"kind": "keep", "group": 1, "error": "RuntimeError: refused"},
                {"kind": "alone", "group": 1, "outputs": saved("alone_b", [[1.0, 2.0], [3.0, 0.5]])}]
    found = figures(variants, groups, reference, ["y"], 2, {"a": "Conv", "b": "Relu", "c": "Add", "d": "Shape"}, ["a", "b", "c", "d"])
    assert [op["node"] for op in found["ops"]] == ["a"]
    a = found["ops"][0]
    assert a["all_but"]["y"]["err_sq"] == 0.0 and a["alone"]["y"]["err_sq"] > 0
    assert a["alone_argmax"] == [1, 1] and a["alone_values"] == [3.0, 4.0]
    assert found["float_values"] == [2.0, 3.0] and found["every_argmax"] == [0, 0]
    assert found["refused"] == {"b (keep)": "RuntimeError: refused"}
    assert found["not_reached"] == ["c"] and found["without_layers"] == ["d"]
