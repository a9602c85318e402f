"""Small models of the graph forms real exporters write and the audit once misread (issue 27).

Each builder returns an ONNX model with exactly one form, in the spelling a real exporter uses
(and its variants), small enough to build in a test. scripts/probe_forms.py runs the real
toolchains on them and records their placements in tests/fixtures/forms/verdicts.json;
tests/test_audit_forms.py checks the audit against those placements without the toolchains.
Every builder is deterministic (fixed seeds), so the recorded verdicts stay the models'.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def _const(name, array) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(array), name)


def _model(nodes, inputs, outputs, inits=(), opset=13, ir_version=8) -> onnx.ModelProto:
    graph = helper.make_graph(list(nodes), "form", list(inputs), list(outputs), initializer=list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = ir_version
    return model


def _vi(name, shape, dtype=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, dtype, shape)


def _weights(rng, *shape) -> np.ndarray:
    return (rng.standard_normal(shape) * 0.3).astype(np.float32)


class _Constants:
    """Constant nodes as torch.onnx writes them (a `value` tensor), or in the other spellings."""

    def __init__(self, spelling: str = "tensor"):
        self.spelling = spelling
        self.nodes: list = []
        self.inits: list = []
        self._n = 0

    def __call__(self, values, dtype=np.int64) -> str:
        self._n += 1
        name = f"k{self._n}"
        array = np.asarray(values, dtype)
        if self.spelling == "initializer":
            self.inits.append(_const(name, array))
        elif self.spelling == "ints" and array.dtype == np.int64 and array.ndim == 1:
            self.nodes.append(helper.make_node("Constant", [], [name], name=f"Constant_{self._n}", value_ints=[int(v) for v in array]))
        else:
            self.nodes.append(helper.make_node("Constant", [], [name], name=f"Constant_{self._n}", value=numpy_helper.from_array(array)))
        return name


# ---- (a) a detector's decode head and a channel split computed from static shapes --------------


def yolo_decode_head(spelling: str = "tensor", size: int = 16) -> onnx.ModelProto:
    """YOLOv8's forms under a static input: C2f's `chunk(2, 1)` as Shape, Gather, Add, Div, Mul,
    Slice; the anchor grid as Shape, Gather, Cast, Range, Add, Unsqueeze, Expand, Concat,
    ConstantOfShape; the stride as Div of two Gathers of Shapes; a Reshape whose shape is a
    Concat of Unsqueezed Gathers. `spelling`: how the constants are written (tensor: Constant
    nodes with a value tensor, as torch.onnx does; ints: Constant nodes with value_ints;
    initializer)."""
    rng = np.random.default_rng(1)
    k = _Constants(spelling)
    n: list = []
    inits = [_const("w1", _weights(rng, 8, 3, 3, 3)), _const("b1", np.zeros(8, np.float32)), _const("w2", _weights(rng, 6, 8, 3, 3)), _const("b2", np.zeros(6, np.float32))]
    n.append(helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]))
    n.append(helper.make_node("Sigmoid", ["c1"], ["s1"], name="act1_sigmoid"))
    n.append(helper.make_node("Mul", ["c1", "s1"], ["a1"], name="act1_mul"))
    # chunk(2, dim=1)
    n += [
        helper.make_node("Shape", ["a1"], ["sh"], name="chunk_shape"),
        helper.make_node("Gather", ["sh", k([1])], ["ch"], name="chunk_gather", axis=0),
        helper.make_node("Add", ["ch", k([1])], ["ch1"], name="chunk_add"),
        helper.make_node("Div", ["ch1", k([2])], ["half"], name="chunk_div"),
        helper.make_node("Mul", ["half", k([1])], ["end1"], name="chunk_mul"),
        helper.make_node("Slice", ["a1", k([0]), "end1", k([1])], ["p1"], name="chunk_slice0"),
        helper.make_node("Mul", ["half", k([2])], ["end2"], name="chunk_mul2"),
        helper.make_node("Slice", ["a1", "end1", "end2", k([1])], ["p2"], name="chunk_slice1"),
        helper.make_node("Concat", ["p2", "p1"], ["cat"], name="chunk_concat", axis=1),
        helper.make_node("Conv", ["cat", "w2", "b2"], ["f"], name="conv2", pads=[1, 1, 1, 1]),
    ]
    # the anchor grid from the feature map's shape: (x + 0.5, y + 0.5) for every cell
    n += [
        helper.make_node("Shape", ["f"], ["fs"], name="grid_shape"),
        helper.make_node("Gather", ["fs", k(2)], ["h"], name="grid_h", axis=0),
        helper.make_node("Gather", ["fs", k(3)], ["w"], name="grid_w", axis=0),
        helper.make_node("Range", [k(0), "w", k(1)], ["rx"], name="grid_range_x"),
        helper.make_node("Range", [k(0), "h", k(1)], ["ry"], name="grid_range_y"),
        helper.make_node("Cast", ["rx"], ["rxf"], name="grid_cast_x", to=TensorProto.FLOAT),
        helper.make_node("Cast", ["ry"], ["ryf"], name="grid_cast_y", to=TensorProto.FLOAT),
        helper.make_node("Add", ["rxf", k(0.5, np.float32)], ["cx"], name="grid_add_x"),
        helper.make_node("Add", ["ryf", k(0.5, np.float32)], ["cy"], name="grid_add_y"),
        helper.make_node("Unsqueeze", ["h", k([0])], ["h1"], name="grid_unsq_h"),
        helper.make_node("Unsqueeze", ["w", k([0])], ["w1_"], name="grid_unsq_w"),
        helper.make_node("Concat", ["h1", "w1_"], ["hw"], name="grid_hw", axis=0),
        helper.make_node("ConstantOfShape", ["hw"], ["ones"], name="grid_ones", value=numpy_helper.from_array(np.array([1.0], np.float32))),
        helper.make_node("Unsqueeze", ["cy", k([1])], ["cy2"], name="grid_unsq_y"),
        helper.make_node("Mul", ["ones", "cx"], ["gx"], name="grid_mul_x"),
        helper.make_node("Expand", ["cy2", "hw"], ["gy"], name="grid_expand_y"),
        helper.make_node("Unsqueeze", ["gx", k([0])], ["gx1"], name="grid_unsq_gx"),
        helper.make_node("Unsqueeze", ["gy", k([0])], ["gy1"], name="grid_unsq_gy"),
        helper.make_node("Concat", ["gx1", "gy1"], ["grid"], name="grid_concat", axis=0),
        helper.make_node("Mul", ["h", "w"], ["cells"], name="grid_cells"),
        helper.make_node("Unsqueeze", ["cells", k([0])], ["cells1"], name="grid_unsq_cells"),
        helper.make_node("Concat", [k([1]), k([2]), "cells1"], ["gshape"], name="grid_reshape_shape", axis=0),
        helper.make_node("Reshape", ["grid", "gshape"], ["anchors"], name="grid_reshape"),
        # the stride: input height / feature height, as a float
        helper.make_node("Shape", ["x"], ["xs"], name="stride_shape"),
        helper.make_node("Gather", ["xs", k(2)], ["xh"], name="stride_gather"),
        helper.make_node("Div", ["xh", "h"], ["stride_i"], name="stride_div"),
        helper.make_node("Cast", ["stride_i"], ["stride"], name="stride_cast", to=TensorProto.FLOAT),
    ]
    # decode: the first two channels are offsets from the anchors, times the stride
    n += [
        helper.make_node("Concat", [k([1]), k([6]), "cells1"], ["fshape"], name="head_shape", axis=0),
        helper.make_node("Reshape", ["f", "fshape"], ["fr"], name="head_reshape"),
        helper.make_node("Slice", ["fr", k([0]), k([2]), k([1])], ["xy"], name="head_slice_xy"),
        helper.make_node("Slice", ["fr", k([2]), k([6]), k([1])], ["rest"], name="head_slice_rest"),
        helper.make_node("Add", ["xy", "anchors"], ["xya"], name="head_add"),
        helper.make_node("Mul", ["xya", "stride"], ["xys"], name="head_mul"),
        helper.make_node("Sigmoid", ["rest"], ["cls"], name="head_sigmoid"),
        helper.make_node("Concat", ["xys", "cls"], ["y"], name="head_concat", axis=1),
    ]
    cells = (size) * (size)
    return _model(k.nodes + n, [_vi("x", [1, 3, size, size])], [_vi("y", [1, 6, cells])], inits + k.inits)


# ---- the cases the toolchains are probed with (scripts/probe_forms.py) --------------------------


class Case:
    """One model of a form and the chips its toolchains are asked about."""

    def __init__(self, name: str, form: str, build, chips: tuple[str, ...]):
        self.name, self.form, self.build, self.chips = name, form, build, chips


CASES = [
    Case(f"yolo_head_{spelling}", "a: values computed from static shapes", lambda s=spelling: yolo_decode_head(s), ("esp32s3", "imx93", "rk3588"))
    for spelling in ("tensor", "ints", "initializer")
]


def constant_spelling(attribute: str) -> onnx.ModelProto:
    """A Conv whose result is reshaped and scaled by Constant nodes written with `attribute`
    (value_ints for the Reshape's shape, value_float or value_floats for the scale; `value`: a tensor)."""
    rng = np.random.default_rng(2)
    shape = {"value_ints": [1, 64], "value": numpy_helper.from_array(np.array([1, 64], np.int64))}
    scale = {"value_float": 0.5, "value_floats": [0.5], "value": numpy_helper.from_array(np.array([0.5], np.float32))}
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("Constant", [], ["shape"], name="shape_constant", **({"value_ints": shape["value_ints"]} if attribute == "value_ints" else {"value": shape["value"]})),
        helper.make_node("Reshape", ["c", "shape"], ["r"], name="reshape"),
        helper.make_node("Constant", [], ["scale"], name="scale_constant", **({attribute: scale[attribute]} if attribute in scale else {"value": scale["value"]})),
    ]
    if attribute == "value_int":  # an integer scalar: the Reshape's shape is [1, -1] computed from it
        nodes[1:3] = [
            helper.make_node("Constant", [], ["minus"], name="shape_constant", value_int=-1),
            helper.make_node("Concat", ["one", "minus_1d"], ["shape"], name="shape_concat", axis=0),
            helper.make_node("Unsqueeze", ["minus", "axes"], ["minus_1d"], name="shape_unsqueeze"),
            helper.make_node("Reshape", ["c", "shape"], ["r"], name="reshape"),
        ]
        nodes[2], nodes[3] = nodes[3], nodes[2]
    nodes.append(helper.make_node("Mul", ["r", "scale"], ["y"], name="mul"))
    inits = [_const("w", _weights(rng, 4, 3, 3, 3)), _const("one", np.array([1], np.int64)), _const("axes", np.array([0], np.int64))]
    return _model(nodes, [_vi("x", [1, 3, 4, 4])], [_vi("y", [1, 64])], inits)


CASES += [Case(f"constant_{a}", "a: Constant spellings", lambda a=a: constant_spelling(a), ("esp32s3", "imx93", "rk3588")) for a in ("value_ints", "value_float", "value_floats", "value_int")]
