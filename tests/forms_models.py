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


def _packed(case, entries: tuple, seed: int, used_only: bool = False, **model_options) -> onnx.ModelProto:
    """Every entry of a pack as `case(rng, entry)` makes it (nodes, initialisers, inputs, outputs), all
    in one model, so that one conversion places them all; `used_only` drops initialisers no node reads."""
    rng = np.random.default_rng(seed)
    nodes, inits, inputs, outputs = [], [], [], []
    for spec in entries:
        for whole, part in zip((nodes, inits, inputs, outputs), case(rng, spec)):
            whole += part
    if used_only:
        used = {name for n in nodes for name in n.input}
        inits = [t for t in inits if t.name in used]
    return _model(nodes, inputs, outputs, inits, **model_options)


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


def yolo_decode_head(spelling: str = "tensor", size: int | str = 16) -> onnx.ModelProto:
    """YOLOv8's forms under a static input: C2f's `chunk(2, 1)` as Shape, Gather, Add, Div, Mul,
    Slice; the anchor grid as Shape, Gather, Cast, Range, Add, Unsqueeze, Expand, Concat,
    ConstantOfShape; the stride as Div of two Gathers of Shapes; a Reshape whose shape is a
    Concat of Unsqueezed Gathers. `spelling`: how the constants are written (tensor: Constant
    nodes with a value tensor, as torch.onnx does; ints: Constant nodes with value_ints;
    initializer). `size`: the input's height and width, or a name to leave them dynamic."""
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
    cells = size * size if isinstance(size, int) else "cells"
    return _model(k.nodes + n, [_vi("x", [1, 3, size, size])], [_vi("y", [1, 6, cells])], inits + k.inits)


# ---- the cases the toolchains are probed with (scripts/probe_forms.py) --------------------------


class Case:
    """One model of a form, the chips its toolchains are asked about and the build's precision
    (None: each chip's default)."""

    def __init__(self, name: str, form: str, build, chips: tuple[str, ...], precision: str | None = None):
        self.name, self.form, self.build, self.chips, self.precision = name, form, build, chips, precision


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


# ---- (c) Pad by mode and rank ------------------------------------------------------------------


def pad_first(mode: str, rank: int) -> onnx.ModelProto:
    """A Pad of `mode` as the graph's first node, on a rank-`rank` input, its pads from an
    initializer (silero-vad pads its [1, 576] audio input so, reflect mode, before its STFT Conv),
    then a Conv over what it made of the input."""
    rng = np.random.default_rng(3)
    width = 64
    shape = {2: [1, width], 3: [1, 4, width], 4: [1, 4, 8, width]}[rank]
    pads = [0] * (2 * rank)
    pads[rank - 1], pads[2 * rank - 1] = 8, 8  # only the last axis, as an STFT's centring
    to4 = {2: [1, 1, 1, width + 16], 3: [1, 4, 1, width + 16], 4: [1, 4, 8, width + 16]}[rank]
    cin = to4[1]
    nodes = [
        helper.make_node("Pad", ["x", "pads"], ["p"], name="pad", mode=mode),
        helper.make_node("Reshape", ["p", "shape4"], ["p4"], name="to_4d"),
        helper.make_node("Conv", ["p4", "w"], ["y"], name="conv", kernel_shape=[1, 16], strides=[1, 8]),
    ]
    out_w = (width + 16 - 16) // 8 + 1
    inits = [_const("pads", np.array(pads, np.int64)), _const("shape4", np.array(to4, np.int64)), _const("w", _weights(rng, 8, cin, 1, 16))]
    return _model(nodes, [_vi("x", shape)], [_vi("y", [1, 8, to4[2], out_w])], inits)


CASES += [Case(f"pad_{mode}_rank{rank}", "c: Pad by mode and rank", lambda m=mode, r=rank: pad_first(m, r), ("rk3588", "rk3566")) for mode in ("constant", "reflect", "edge") for rank in (2, 3, 4)]


# ---- (b) L2 normalisation written out -----------------------------------------------------------


def l2_normalise(variant: str) -> onnx.ModelProto:
    """An embedding [1, 256] after Gemm and Relu, L2-normalised: ReduceL2(axes=[1], keepdims=1)
    feeding Div directly (`plain`), or with the eps spellings exporters use: Clip(min=eps)
    (`clip`, torch's F.normalize), Max with an eps constant (`max`), Add of eps (`add`), and
    Expand of the norm to the embedding's shape before the Div (`expand`, F.normalize at opset 13)."""
    rng = np.random.default_rng(4)
    k = _Constants("initializer")
    nodes = [
        helper.make_node("Gemm", ["x", "w", "b"], ["g"], name="fc", transB=1),
        helper.make_node("Relu", ["g"], ["e"], name="relu"),
        helper.make_node("ReduceL2", ["e"], ["norm"], name="l2", axes=[1], keepdims=1),
    ]
    denominator = "norm"
    if variant in ("clip", "expand"):
        nodes.append(helper.make_node("Clip", ["norm", k(1e-12, np.float32)], ["normc"], name="eps_clip"))
        denominator = "normc"
    elif variant == "max":
        nodes.append(helper.make_node("Max", ["norm", k([1e-12], np.float32)], ["normc"], name="eps_max"))
        denominator = "normc"
    elif variant == "add":
        nodes.append(helper.make_node("Add", ["norm", k([1e-12], np.float32)], ["normc"], name="eps_add"))
        denominator = "normc"
    if variant == "expand":
        nodes.append(helper.make_node("Expand", ["normc", k([1, 256])], ["norme"], name="expand"))
        denominator = "norme"
    nodes.append(helper.make_node("Div", ["e", denominator], ["y"], name="div"))
    inits = [_const("w", _weights(rng, 256, 64)), _const("b", np.zeros(256, np.float32))] + k.inits
    return _model(nodes, [_vi("x", [1, 64])], [_vi("y", [1, 256])], inits)


CASES += [Case(f"l2norm_{v}", "b: L2 normalisation", lambda v=v: l2_normalise(v), ("rk3588", "rk3566")) for v in ("plain", "clip", "max", "add", "expand")]


# ---- (d) a Transpose between PRelu and the flatten into a Gemm -----------------------------------


def transpose_before_flatten(perm: tuple, activation: str = "PRelu") -> onnx.ModelProto:
    """A small face detector's tail: Conv, PRelu, Transpose(perm), Flatten, Gemm."""
    rng = np.random.default_rng(5)
    c, h, w = 16, 3, 3
    nodes = [
        helper.make_node("Conv", ["x", "wc"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node(activation, ["c", "slope"] if activation == "PRelu" else ["c"], ["a"], name="act"),
        helper.make_node("Transpose", ["a"], ["t"], name="transpose", perm=list(perm)),
        helper.make_node("Flatten", ["t"], ["f"], name="flatten", axis=1),
        helper.make_node("Gemm", ["f", "wg", "bg"], ["y"], name="fc", transB=1),
    ]
    inits = [_const("wc", _weights(rng, c, 8, 3, 3)), _const("wg", _weights(rng, 10, c * h * w)), _const("bg", np.zeros(10, np.float32))]
    if activation == "PRelu":
        inits.append(_const("slope", np.full((c, 1, 1), 0.25, np.float32)))
    return _model(nodes, [_vi("x", [1, 8, h, w])], [_vi("y", [1, 10])], inits)


CASES += [
    Case(f"transpose_{''.join(map(str, perm))}_flatten_{act.lower()}", "d: Transpose before a flatten into Gemm", lambda p=perm, a=act: transpose_before_flatten(p, a), ("rk3588", "rk3566"))
    for perm, act in (((0, 3, 2, 1), "PRelu"), ((0, 2, 3, 1), "PRelu"), ((0, 3, 2, 1), "Relu"), ((0, 1, 3, 2), "PRelu"))
]


# ---- (e) an SVTR block as Paddle2ONNX writes it (PP-OCRv4's recogniser, opset 12) ----------------


def svtr_block(channels: int = 64, tokens: int = 40, heads: int = 2) -> onnx.ModelProto:
    """PP-OCRv4 rec's SVTR mixing block in Paddle2ONNX's spelling, opset 12: the feature map
    flattened to tokens by a Reshape whose shape is Shape, Slice, Concat; a layer norm written out
    (ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div, Mul, Add); attention whose Reshape shapes
    are Concats of int32 constants and a token count taken by Shape, Cast(int32), Slice and cast
    back to int64; q, k, v by Slice and Squeeze; Transpose, MatMul, Softmax, MatMul, Transpose."""
    rng = np.random.default_rng(6)
    k = _Constants("tensor")
    d = channels // heads
    i32 = np.int32
    inits = [
        _const("wc", _weights(rng, channels, channels, 1, 1)),
        _const("ln_w", 1 + _weights(rng, channels)),
        _const("ln_b", _weights(rng, channels)),
        _const("w_qkv", _weights(rng, channels, 3 * channels)),
        _const("b_qkv", _weights(rng, 3 * channels)),
        _const("w_proj", _weights(rng, channels, channels)),
        _const("b_proj", _weights(rng, channels)),
    ]
    n = [
        helper.make_node("Conv", ["x", "wc"], ["c"], name="conv"),
        helper.make_node("Sigmoid", ["c"], ["cs"], name="swish_sigmoid"),
        helper.make_node("Mul", ["c", "cs"], ["sw"], name="swish_mul"),
        # flatten(2): Reshape(sw, Concat(Shape(sw)[0:2], [-1])), then the tokens
        helper.make_node("Shape", ["sw"], ["sw_shape"], name="flatten_shape"),
        helper.make_node("Slice", ["sw_shape", k([0]), k([2]), k([0])], ["sw_nc"], name="flatten_slice"),
        helper.make_node("Concat", ["sw_nc", k([-1])], ["flat_shape"], name="flatten_concat", axis=0),
        helper.make_node("Reshape", ["sw", "flat_shape"], ["flat"], name="flatten_reshape"),
        helper.make_node("Transpose", ["flat"], ["t0"], name="to_tokens", perm=[0, 2, 1]),
        # the layer norm, written out
        helper.make_node("ReduceMean", ["t0"], ["mu"], name="ln_mean", axes=[-1]),
        helper.make_node("Sub", ["t0", "mu"], ["dev"], name="ln_sub"),
        helper.make_node("Pow", ["dev", k(2.0, np.float32)], ["sq"], name="ln_pow"),
        helper.make_node("ReduceMean", ["sq"], ["var"], name="ln_var", axes=[-1]),
        helper.make_node("Add", ["var", k(1e-6, np.float32)], ["var_eps"], name="ln_add_eps"),
        helper.make_node("Sqrt", ["var_eps"], ["std"], name="ln_sqrt"),
        helper.make_node("Div", ["dev", "std"], ["normed"], name="ln_div"),
        helper.make_node("Mul", ["normed", "ln_w"], ["scaled"], name="ln_mul"),
        helper.make_node("Add", ["scaled", "ln_b"], ["ln"], name="ln_add"),
        # the token count, through int32
        helper.make_node("Shape", ["ln"], ["ln_shape"], name="count_shape"),
        helper.make_node("Cast", ["ln_shape"], ["ln_shape32"], name="count_cast32", to=TensorProto.INT32),
        helper.make_node("Slice", ["ln_shape32", k([1]), k([2]), k([0]), k([1])], ["count32"], name="count_slice"),
        helper.make_node("Cast", ["count32"], ["count"], name="count_cast64", to=TensorProto.INT64),
        # attention
        helper.make_node("MatMul", ["ln", "w_qkv"], ["qkv0"], name="qkv_matmul"),
        helper.make_node("Add", ["qkv0", "b_qkv"], ["qkv"], name="qkv_add"),
    ]
    parts = []
    for i, v in enumerate((0, None, 3, heads, d)):
        if v is None:
            parts.append("count")
        else:
            n.append(helper.make_node("Cast", [k([v], i32)], [f"qkv_dim{i}"], name=f"qkv_dim_cast{i}", to=TensorProto.INT64))
            parts.append(f"qkv_dim{i}")
    n += [
        helper.make_node("Concat", parts, ["qkv_shape"], name="qkv_shape", axis=0),
        helper.make_node("Reshape", ["qkv", "qkv_shape"], ["qkv5"], name="qkv_reshape"),
        helper.make_node("Transpose", ["qkv5"], ["qkvt"], name="qkv_transpose", perm=[2, 0, 3, 1, 4]),
    ]
    for i, part in enumerate("qkv"):
        n.append(helper.make_node("Slice", ["qkvt", k([i]), k([i + 1]), k([0]), k([1])], [f"{part}_sliced"], name=f"{part}_slice"))
        n.append(helper.make_node("Squeeze", [f"{part}_sliced"], [f"{part}_"], name=f"{part}_squeeze", axes=[0]))
    n += [
        helper.make_node("Mul", ["q_", k(d**-0.5, np.float32)], ["qs"], name="q_scale"),
        helper.make_node("Transpose", ["k_"], ["kt"], name="k_transpose", perm=[0, 1, 3, 2]),
        helper.make_node("MatMul", ["qs", "kt"], ["scores"], name="scores"),
        helper.make_node("Softmax", ["scores"], ["attn"], name="softmax", axis=3),
        helper.make_node("MatMul", ["attn", "v_"], ["ctx"], name="context"),
        helper.make_node("Transpose", ["ctx"], ["ctxt"], name="merge_transpose", perm=[0, 2, 1, 3]),
        helper.make_node("Cast", [k([0], i32)], ["m0"], name="merge_dim_cast0", to=TensorProto.INT64),
        helper.make_node("Cast", [k([channels], i32)], ["m2"], name="merge_dim_cast2", to=TensorProto.INT64),
        helper.make_node("Concat", ["m0", "count", "m2"], ["merge_shape"], name="merge_shape", axis=0),
        helper.make_node("Reshape", ["ctxt", "merge_shape"], ["merged"], name="merge_reshape"),
        helper.make_node("MatMul", ["merged", "w_proj"], ["proj0"], name="proj_matmul"),
        helper.make_node("Add", ["proj0", "b_proj"], ["proj"], name="proj_add"),
        helper.make_node("Add", ["t0", "proj"], ["y"], name="residual"),
    ]
    return _model(k.nodes + n, [_vi("x", [1, channels, 1, tokens])], [_vi("y", [1, tokens, channels])], inits + k.inits, opset=12, ir_version=7)


CASES.append(Case("svtr_block", "e: SVTR attention block (Paddle2ONNX, opset 12)", svtr_block, ("rk3588", "rk3566", "imx93")))


# ---- (g) an FPN neck's upsampling Resize as Paddle2ONNX writes it (PP-OCR det, opset 12) ---------


def fpn_resize(roi: str = "constant", size: int = 16) -> onnx.ModelProto:
    """Two levels of a PP-OCR text detector's FPN neck: the coarse level upsampled x2 by Resize
    (opset 12, nearest, asymmetric, floor; roi an empty Constant node, scales a Constant node
    [1, 1, 2, 2], no sizes) and added to the fine level, as PP-OCRv4 det's neck does. `roi`: the
    empty roi as a Constant node (Paddle2ONNX) or an initializer (at opset 12 it cannot be left out)."""
    rng = np.random.default_rng(7)
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["fine"], name="fine_conv", pads=[1, 1, 1, 1]),
        helper.make_node("Conv", ["fine", "w2"], ["coarse"], name="coarse_conv", pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("Constant", [], ["scales"], name="scales_constant", value=numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32))),
        helper.make_node("Resize", ["coarse", "roi", "scales"], ["up"], name="upsample", mode="nearest", coordinate_transformation_mode="asymmetric", nearest_mode="floor"),
        helper.make_node("Add", ["fine", "up"], ["merged"], name="merge"),
        helper.make_node("Conv", ["merged", "w3"], ["y"], name="out_conv", pads=[1, 1, 1, 1]),
    ]
    inits = [_const("w1", _weights(rng, 8, 3, 3, 3)), _const("w2", _weights(rng, 8, 8, 3, 3)), _const("w3", _weights(rng, 4, 8, 3, 3))]
    empty = np.array([], np.float32)
    if roi == "constant":
        nodes.insert(2, helper.make_node("Constant", [], ["roi"], name="roi_constant", value=numpy_helper.from_array(empty)))
    elif roi == "initializer":
        inits.append(_const("roi", empty))
    return _model(nodes, [_vi("x", [1, 3, size, size])], [_vi("y", [1, 4, size, size])], inits, opset=12, ir_version=7)


CASES += [Case(f"fpn_resize_roi_{r}", "g: FPN upsampling Resize (Paddle2ONNX, opset 12)", lambda r=r: fpn_resize(r), ("esp32s3",)) for r in ("constant", "initializer")]


# ---- (f) the onnx package's opset-9 model-zoo form (IR 3, weights as ConstantOfShape) ------------


def zoo_shuffle_unit(group: int = 2) -> onnx.ModelProto:
    """A ShuffleNet unit in the form of the onnx package's light model zoo: IR 3, opset 9, every
    initializer also listed as a graph input, the weights computed by ConstantOfShape from an
    initializer holding their shape, BatchNormalization at opset 9 after each Conv (1x1 grouped,
    depthwise 3x3, 1x1 grouped), a channel shuffle (Reshape, Transpose, Reshape), a residual Sum."""
    c = 8
    inits, inputs, nodes = [], [_vi("data", [1, c, 8, 8])], []

    def initializer(name, array):
        inits.append(_const(name, array))
        inputs.append(helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(np.asarray(array).dtype), list(np.asarray(array).shape)))

    def weight(name, shape, fill):
        initializer(f"{name}__SHAPE", np.array(shape, np.int64))
        nodes.append(helper.make_node("ConstantOfShape", [f"{name}__SHAPE"], [name], value=numpy_helper.from_array(np.array([fill], np.float32))))

    def conv_bn(x, out, cout, cin_per_group, k, groups, relu):
        weight(f"{out}_w", [cout, cin_per_group, k, k], 0.02)
        nodes.append(helper.make_node("Conv", [x, f"{out}_w"], [f"{out}_c"], kernel_shape=[k, k], pads=[k // 2] * 4, group=groups))
        for p, v in (("s", 1.0), ("b", 0.0), ("rm", 0.0), ("riv", 1.0)):
            initializer(f"{out}_bn_{p}", np.full(cout, v, np.float32))
        nodes.append(helper.make_node("BatchNormalization", [f"{out}_c", f"{out}_bn_s", f"{out}_bn_b", f"{out}_bn_rm", f"{out}_bn_riv"], [f"{out}_bn" if relu else out], epsilon=1e-5))
        if relu:
            nodes.append(helper.make_node("Relu", [f"{out}_bn"], [out]))

    conv_bn("data", "a", c, c // group, 1, group, True)
    initializer("shuffle_split", np.array([1, group, c // group, 8, 8], np.int64))
    initializer("shuffle_back", np.array([1, c, 8, 8], np.int64))
    nodes += [
        helper.make_node("Reshape", ["a", "shuffle_split"], ["a5"]),
        helper.make_node("Transpose", ["a5"], ["a5t"], perm=[0, 2, 1, 3, 4]),
        helper.make_node("Reshape", ["a5t", "shuffle_back"], ["sh"]),
    ]
    conv_bn("sh", "d", c, 1, 3, c, False)
    conv_bn("d", "e", c, c // group, 1, group, False)
    conv_bn("e", "f", c, c, 1, 1, False)
    nodes += [helper.make_node("Sum", ["data", "f"], ["s"]), helper.make_node("Relu", ["s"], ["y"])]
    for i, node in enumerate(nodes):
        node.name = f"n{i}"
    model = _model(nodes, inputs, [_vi("y", [1, c, 8, 8])], inits, opset=9, ir_version=3)
    return model


CASES.append(Case("zoo_shuffle_unit", "f: opset-9 model-zoo form (IR 3, ConstantOfShape weights)", zoo_shuffle_unit, ("esp32s3", "rk3588", "imx93")))
CASES.append(Case("zoo_shuffle_unit_g4_block_diagonal", "f: the zoo unit (group 4) as edgedeploy writes it for esp-ppq", lambda: block_diagonal(zoo_shuffle_unit(4)), ("esp32s3",)))


def stft_pad(mode: str, rank: int = 2) -> onnx.ModelProto:
    """silero-vad's front end: the [1, 576] audio (rank 2; rank 3: [1, 1, 576]) padded by 64 on
    the right with Pad(`mode`) as the first node, pads from an initializer, then Unsqueeze (rank 2)
    and the STFT as a Conv1d (kernel 256, stride 128)."""
    rng = np.random.default_rng(8)
    pads = [0, 0, 0, 64] if rank == 2 else [0, 0, 0, 0, 0, 64]
    nodes = [helper.make_node("Pad", ["x", "pads"], ["p"], name="pad", mode=mode)]
    if rank == 2:
        nodes.append(helper.make_node("Unsqueeze", ["p", "axes"], ["p3"], name="unsqueeze"))
    nodes.append(helper.make_node("Conv", ["p3" if rank == 2 else "p", "w"], ["y"], name="stft", kernel_shape=[256], strides=[128]))
    inits = [_const("pads", np.array(pads, np.int64)), _const("w", _weights(rng, 16, 1, 256))]
    if rank == 2:
        inits.append(_const("axes", np.array([1], np.int64)))
    return _model(nodes, [_vi("x", [1, 576] if rank == 2 else [1, 1, 576])], [_vi("y", [1, 16, 4])], inits)


CASES += [Case(f"stft_pad_{mode}_rank{rank}", "c: Pad by mode and rank", lambda m=mode, r=rank: stft_pad(m, r), ("rk3588", "rk3566")) for mode in ("reflect", "constant", "edge") for rank in (2, 3)]


# ---- a Cast to the type its input already has ------------------------------------------------------


def cast_to_same_type() -> onnx.ModelProto:
    """A Cast to float32 of a float32 tensor between two Convs (silero-vad's STFT magnitude, as
    torch.onnx writes `.float()`)."""
    rng = np.random.default_rng(9)
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["c"], name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node("Cast", ["c"], ["cf"], name="cast", to=TensorProto.FLOAT),
        helper.make_node("Conv", ["cf", "w2"], ["y"], name="conv2", pads=[1, 1, 1, 1]),
    ]
    inits = [_const("w1", _weights(rng, 8, 3, 3, 3)), _const("w2", _weights(rng, 4, 8, 3, 3))]
    return _model(nodes, [_vi("x", [1, 3, 8, 8])], [_vi("y", [1, 4, 8, 8])], inits)


CASES.append(Case("cast_to_same_type", "e: a Cast that changes nothing", cast_to_same_type, ("rk3588", "rk3566", "esp32s3", "imx93")))


# ---- PP-LCNet's learnable affine block after a hard swish (PP-OCRv4 rec's backbone) ---------------


def affine_after_hardswish(variant: str = "scale_first") -> onnx.ModelProto:
    """Conv, a hard swish as Paddle2ONNX writes it (Add 3, Clip 0..6, Mul, Div 6), then the
    learnable affine block: Mul by a scalar and Add of a scalar, before the next Conv. `variant`:
    scale_first (the scalar as the Mul's first operand, as Paddle2ONNX writes it), scale_second,
    scale_only (no Add), no_hardswish (the affine block after a Relu)."""
    rng = np.random.default_rng(10)
    k = _Constants("tensor")
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c"], name="conv1", pads=[1, 1, 1, 1])]
    if variant == "no_hardswish":
        nodes.append(helper.make_node("Relu", ["c"], ["h"], name="relu"))
    else:
        nodes += [
            helper.make_node("Add", ["c", k(3.0, np.float32)], ["c3"], name="hs_add"),
            helper.make_node("Clip", ["c3", k(0.0, np.float32), k(6.0, np.float32)], ["c3c"], name="hs_clip"),
            helper.make_node("Mul", ["c", "c3c"], ["cm"], name="hs_mul"),
            helper.make_node("Div", ["cm", k(6.0, np.float32)], ["h"], name="hs_div"),
        ]
    scale = k(0.1675, np.float32)
    nodes.append(helper.make_node("Mul", [scale, "h"] if variant != "scale_second" else ["h", scale], ["s"], name="lab_mul"))
    last = "s"
    if variant != "scale_only":
        nodes.append(helper.make_node("Add", ["s", k(0.02, np.float32)], ["a"], name="lab_add"))
        last = "a"
    nodes.append(helper.make_node("Conv", [last, "w2"], ["y"], name="conv2", pads=[1, 1, 1, 1]))
    inits = [_const("w1", _weights(rng, 8, 3, 3, 3)), _const("w2", _weights(rng, 4, 8, 3, 3))]
    return _model(k.nodes + nodes, [_vi("x", [1, 3, 8, 8])], [_vi("y", [1, 4, 8, 8])], inits, opset=12, ir_version=7)


CASES += [Case(f"affine_{v}", "e: PP-LCNet's learnable affine block", lambda v=v: affine_after_hardswish(v), ("rk3588", "rk3566")) for v in ("scale_first", "scale_second", "scale_only", "no_hardswish")]

CASES += [
    Case(f"svtr_block_c{c}_h{h}", "e: SVTR attention block (Paddle2ONNX, opset 12)", lambda c=c, h=h: svtr_block(channels=c, heads=h), ("rk3566",))
    for c, h in ((120, 8), (128, 8), (64, 8))
]


# ---- pool (issue 27, rk3588 tuning part): TF-"same" padding computed by the exporter ---------------


def _tf_same_pads(k: "_Constants", nodes: list, prefix: str, size, kernel: int, stride: int) -> str:
    """timm's pad_same as torch.onnx traces it: the padding of each side computed from the input
    size (`size`: a float tensor name, or a number written as a Constant) with Ceil, Sub, Mul,
    Add, Clip, Div and Cast, then F.pad's (left, right, top, bottom) turned into ONNX pads by
    Concat with zeros, Reshape to pairs, a Slice with step -1, Transpose and Reshape, and a Cast."""
    def node(op, inputs, **attrs):
        out = f"{prefix}_{op.lower()}{len(nodes)}"
        nodes.append(helper.make_node(op, inputs, [out], name=out, **attrs))
        return out

    if not isinstance(size, str):
        size = k(float(size), np.float32)
    steps = node("Ceil", [node("Div", [size, k(float(stride), np.float32)])])
    total = node("Sub", [node("Add", [node("Add", [node("Mul", [node("Sub", [steps, k(1.0, np.float32)]), k(float(stride), np.float32)]), k(float(kernel - 1), np.float32)]), k(1.0, np.float32)]), size])
    total = node("Clip", [total, k(0.0, np.float32)])
    before = node("Cast", [node("Cast", [node("Div", [total, k(2.0, np.float32)])], to=TensorProto.INT64)], to=TensorProto.FLOAT)
    after = node("Sub", [total, before])
    sides = [node("Unsqueeze", [v, k([0])]) for v in (before, after, before, after)]
    torch_pads = node("Cast", [node("Concat", sides, axis=0)], to=TensorProto.INT64)
    pairs = node("Reshape", [node("Concat", [torch_pads, k([0, 0, 0, 0])], axis=0), k([-1, 2])])
    flipped = node("Slice", [pairs, k([-1]), k([-(1 << 62)]), k([0]), k([-1])])
    return node("Cast", [node("Reshape", [node("Transpose", [flipped], perm=[1, 0]), k([-1])])], to=TensorProto.INT64)


def tf_same_pad(spelling: str = "traced") -> onnx.ModelProto:
    """Two Conv stages with TF-"same" padding written out (timm's tf_* models, opset 13): a stride-2
    Conv on the input, a Relu, then a stride-2 depthwise Conv. `spelling`: traced (the sizes the
    tracer saw written as Constants), shape (the sizes read with Shape and Gather from the tensor
    padded), traced_then_shape (the stem's from Constants, the next from Shape, as timm's
    tf_efficientnet_lite0 has them: the next Pad's size is known only once the first Pad's pads are
    computed from the Constants)."""
    rng = np.random.default_rng(11)
    k = _Constants("tensor")
    nodes: list = []
    size_in, size_mid = 17, 9
    if spelling != "traced":
        def size_of(tensor):
            out = f"{tensor}_size"
            nodes.append(helper.make_node("Shape", [tensor], [f"{tensor}_shape"], name=f"{tensor}_shape"))
            nodes.append(helper.make_node("Gather", [f"{tensor}_shape", k(2)], [f"{tensor}_h"], name=f"{tensor}_gather", axis=0))
            nodes.append(helper.make_node("Cast", [f"{tensor}_h"], [out], name=f"{tensor}_cast", to=TensorProto.FLOAT))
            return out
        size_in = size_of("x") if spelling == "shape" else size_in
        size_mid = None
    pads1 = _tf_same_pads(k, nodes, "p1", size_in, 3, 2)
    nodes += [
        helper.make_node("Pad", ["x", pads1, k(0.0, np.float32)], ["xp"], name="pad1", mode="constant"),
        helper.make_node("Conv", ["xp", "w1"], ["c1"], name="conv1", strides=[2, 2]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
    ]
    pads2 = _tf_same_pads(k, nodes, "p2", size_of("r1") if size_mid is None else size_mid, 3, 2)
    nodes += [
        helper.make_node("Pad", ["r1", pads2, k(0.0, np.float32)], ["rp"], name="pad2", mode="constant"),
        helper.make_node("Conv", ["rp", "w2"], ["c2"], name="conv2", strides=[2, 2], group=8),
        helper.make_node("Conv", ["c2", "w3"], ["y"], name="conv3"),
    ]
    inits = [_const("w1", _weights(rng, 8, 3, 3, 3)), _const("w2", _weights(rng, 8, 1, 3, 3)), _const("w3", _weights(rng, 4, 8, 1, 1))]
    return _model(k.nodes + nodes, [_vi("x", [1, 3, 17, 17])], [_vi("y", [1, 4, 5, 5])], inits)


CASES += [Case(f"tf_same_pad_{s}", "pool: TF-'same' padding computed by the exporter", lambda s=s: tf_same_pad(s), ("rk3588",)) for s in ("traced", "shape", "traced_then_shape")]


# ---- pool (issue 27, rk3588 tuning part): a * x + b beside the PP-LCNet form -----------------------


def affine_variants(variant: str) -> onnx.ModelProto:
    """Conv, then an activation, then `a * x + b` with the constant first, then a Conv, in the
    forms the pool's models write it. `variant`: add_computed (GELU-tanh's x + 0.0447 * x^3: the
    Add's other operand is computed, timm's test_convnext), starrelu (Relu, Pow 2, then scale and
    bias as (1,) initializers, timm's poolformerv2 StarReLU), relu_vec1 (Relu, then scale and bias as
    (1,) initializers, timm's hgnetv2 learnable affine block), relu_unit (the same with the values
    timm initialises them to, 1 and 0; relu_scale1, relu_bias0: one of them so), gelu_tanh (timm's
    GELUTanh, whose x + 0.044715 * x^3 is the add_computed form, with 0.5 * x first), gelu_tanh_torch
    (ConvNeXt's MLP with nn.GELU(approximate="tanh") as torch.onnx writes it: (x * (1 + tanh)) * 0.5)."""
    rng = np.random.default_rng(12)
    k = _Constants("tensor")
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c"], name="conv1", pads=[1, 1, 1, 1])]
    inits = [_const("w1", _weights(rng, 8, 3, 3, 3)), _const("w2", _weights(rng, 4, 8, 3, 3))]
    if variant in ("gelu_tanh_matmul", "gelu_tanh_torch"):
        # ConvNeXt's MLP: channels last, Linear (MatMul + Add), the activation, Linear, channels first.
        nodes += [
            helper.make_node("Transpose", ["c"], ["ct"], name="to_last", perm=[0, 2, 3, 1]),
            helper.make_node("MatMul", ["ct", "fc1"], ["cm"], name="fc1"),
            helper.make_node("Add", ["fc1_b", "cm"], ["cl"], name="fc1_add"),
        ]
        inits += [_const("fc1", _weights(rng, 8, 16)), _const("fc1_b", _weights(rng, 16)), _const("fc2", _weights(rng, 16, 8))]
        nodes.append(helper.make_node("Identity", ["cl"], ["c_in"], name="fc1_out"))
    if variant.startswith("gelu_tanh"):
        c = "c_in" if variant != "gelu_tanh" else "c"
        # timm's GELUTanh as torch.onnx writes it: 0.5 * x * (1 + tanh(0.79788 * (x + 0.044715 * x * x * x))).
        nodes += [
            helper.make_node("Mul", [c, c], ["c2"], name="cube_mul"),
            helper.make_node("Mul", [c, "c2"], ["c3"], name="cube_mul2"),
            helper.make_node("Mul", [k(0.044715, np.float32), "c3"], ["s"], name="lab_mul"),
            helper.make_node("Add", [c, "s"], ["inner"], name="lab_add"),
            helper.make_node("Mul", [k(0.7978846, np.float32), "inner"], ["t_in"], name="tanh_scale"),
            helper.make_node("Tanh", ["t_in"], ["t"], name="tanh"),
            helper.make_node("Add", [k(1.0, np.float32), "t"], ["t1"], name="tanh_add"),
        ]
        if variant == "gelu_tanh_torch":
            nodes += [helper.make_node("Mul", [c, "t1"], ["m"], name="gelu_mul"), helper.make_node("Mul", [k(0.5, np.float32), "m"], ["g"], name="half_mul")]
        else:
            nodes += [helper.make_node("Mul", [k(0.5, np.float32), c], ["half"], name="half_mul"),
                      helper.make_node("Mul", ["half", "t1"], ["a" if variant == "gelu_tanh" else "g"], name="gelu_mul")]
        if variant != "gelu_tanh":
            nodes += [
                helper.make_node("MatMul", ["g", "fc2"], ["gm"], name="fc2"),
                helper.make_node("Transpose", ["gm"], ["a"], name="to_first", perm=[0, 3, 1, 2]),
            ]
    elif variant == "add_computed":
        nodes += [
            helper.make_node("Mul", ["c", "c"], ["c2"], name="cube_mul"),
            helper.make_node("Mul", ["c", "c2"], ["c3"], name="cube_mul2"),
            helper.make_node("Mul", [k(0.044715, np.float32), "c3"], ["s"], name="lab_mul"),
            helper.make_node("Add", ["c", "s"], ["a"], name="lab_add"),
        ]
    else:
        nodes.append(helper.make_node("Relu", ["c"], ["r"], name="relu"))
        x = "r"
        if variant == "starrelu":
            nodes.append(helper.make_node("Pow", ["r", k(2.0, np.float32)], ["p"], name="pow"))
            x = "p"
        scale = 1.0 if variant in ("relu_unit", "relu_scale1") else 0.8944
        bias = 0.0 if variant in ("relu_unit", "relu_bias0") else 0.4472
        inits += [_const("scale", np.array([scale], np.float32)), _const("bias", np.array([bias], np.float32))]
        nodes += [helper.make_node("Mul", ["scale", x], ["s"], name="lab_mul"), helper.make_node("Add", ["s", "bias"], ["a"], name="lab_add")]
    nodes.append(helper.make_node("Conv", ["a", "w2"], ["y"], name="conv2", pads=[1, 1, 1, 1]))
    return _model(k.nodes + nodes, [_vi("x", [1, 3, 8, 8])], [_vi("y", [1, 4, 8, 8])], inits)


CASES += [Case(f"affine_{v}", "pool: a * x + b in the pool's spellings", lambda v=v: affine_variants(v), ("rk3588", "rk3566")) for v in ("add_computed", "starrelu", "relu_vec1", "relu_unit", "relu_scale1", "relu_bias0")]
# RK3588 only: on RK3566 the toolkit fuses the chain as well, but runs this small MLP's two
# channels-last Transposes on the NPU where the audit says CPU (not explained yet).
CASES.append(Case("affine_gelu_tanh_torch", "pool: a * x + b in the pool's spellings", lambda: affine_variants("gelu_tanh_torch"), ("rk3588",)))
# Not recorded: gelu_tanh and gelu_tanh_matmul (rknn-toolkit2 2.5.0 keeps every constant-first scalar
# Mul of the chain in float there, read by an Add, a Tanh or a Mul, where timm's test_convnext has
# the same chain on the NPU). What differs is the order: they write 0.5 * x first, which the
# toolkit's replace_torch_tanh_gelu does not match; torch.onnx's (x * (1 + tanh)) * 0.5 is fused
# (gelu_tanh_torch, rknn passes.fuse_tanh_gelu). The unfused chain's float Muls are not modelled yet.


# ---- pool (issue 27, rk3566 tuning part): attention's heads, split and merged around MatMuls -----


def attention_block(tokens: int = 16, heads: int = 2, head: int = 32, style: str = "hf") -> onnx.ModelProto:
    """One self-attention block on a [1, tokens, heads*head] input, as torch.onnx writes it.
    style "hf" (transformers' ViT/BERT): q, k and v each a Linear, a Reshape to [1, T, H, D] and a
    Transpose [0, 2, 1, 3]; q scaled by a constant Mul; k transposed again [0, 1, 3, 2].
    style "timm": one qkv Linear, a Reshape to [1, T, 3, H, D], a Transpose [2, 0, 3, 1, 4] and
    three Gathers (qkv.unbind(0)). style "sdpa": as "hf", with F.scaled_dot_product_attention's
    scale, computed from q's shape and multiplied into q and k's transpose. style "present": as "hf",
    k and v read through a Concat of that one tensor (transformers' GPT-2: its cache with no past).
    Then MatMul, Softmax, MatMul, the heads merged back by a
    Transpose and a Reshape, the output Linear, and a mean over the tokens: the model's output is
    2-D, so no layout change for a 3-D output is mixed into what is measured."""
    rng = np.random.default_rng(27)
    c = heads * head
    inits = [_const("heads_shape", np.array([1, tokens, heads, head], np.int64)), _const("merged_shape", np.array([1, tokens, c], np.int64)),
             _const("scale", np.array(head**-0.5, np.float32)), _const("w_out", _weights(rng, c, c)), _const("b_out", _weights(rng, c))]
    n = []
    if style in ("hf", "sdpa", "present"):
        for p in "qkv":
            inits += [_const(f"w_{p}", _weights(rng, c, c)), _const(f"b_{p}", _weights(rng, c))]
            n += [helper.make_node("MatMul", ["x", f"w_{p}"], [f"{p}0"], name=f"{p}_matmul"),
                  helper.make_node("Add", [f"{p}0", f"b_{p}"], [f"{p}1"], name=f"{p}_add"),
                  helper.make_node("Reshape", [f"{p}1", "heads_shape"], [f"{p}4"], name=f"{p}_split_heads"),
                  helper.make_node("Transpose", [f"{p}4"], [f"{p}h"], name=f"{p}_heads_transpose", perm=[0, 2, 1, 3])]
    else:
        inits += [_const("w_qkv", _weights(rng, c, 3 * c)), _const("b_qkv", _weights(rng, 3 * c)),
                  _const("qkv_shape", np.array([1, tokens, 3, heads, head], np.int64))]
        n += [helper.make_node("MatMul", ["x", "w_qkv"], ["qkv0"], name="qkv_matmul"),
              helper.make_node("Add", ["qkv0", "b_qkv"], ["qkv1"], name="qkv_add"),
              helper.make_node("Reshape", ["qkv1", "qkv_shape"], ["qkv5"], name="qkv_split_heads"),
              helper.make_node("Transpose", ["qkv5"], ["qkvt"], name="qkv_heads_transpose", perm=[2, 0, 3, 1, 4])]
        for i, p in enumerate("qkv"):
            inits.append(_const(f"i_{p}", np.array(i, np.int64)))
            n.append(helper.make_node("Gather", ["qkvt", f"i_{p}"], [f"{p}h"], name=f"{p}_unbind", axis=0))
    outputs = [_vi("y", [1, c])]
    if style == "present":
        # Probed as model outputs too (use_cache's present key and value), not recorded: RK3566 then
        # puts the heads' Transposes, the value's split and both Concats on the CPU (32 tokens), which
        # the audit does not model.
        for p in "kv":
            n.append(helper.make_node("Concat", [f"{p}h"], [f"{p}_present"], name=f"{p}_present_concat", axis=-2))
        n += [helper.make_node("Mul", ["qh", "scale"], ["qs"], name="q_scale"),
              helper.make_node("Transpose", ["k_present"], ["kt"], name="k_transpose", perm=[0, 1, 3, 2])]
    elif style == "sdpa":
        # scaled_dot_product_attention's export: sqrt(1 / sqrt(D)) computed from q's static shape,
        # multiplied into q and into k's transpose.
        inits += [_const("last", np.array([-1], np.int64)), _const("end", np.array([2**62], np.int64)), _const("one", np.array([1.0], np.float32))]
        n += [helper.make_node("Shape", ["qh"], ["q_shape"], name="scale_shape"),
              helper.make_node("Slice", ["q_shape", "last", "end"], ["q_d"], name="scale_slice"),
              helper.make_node("Cast", ["q_d"], ["q_df"], name="scale_cast", to=TensorProto.FLOAT),
              helper.make_node("Sqrt", ["q_df"], ["q_sqrt"], name="scale_sqrt"),
              helper.make_node("Div", ["one", "q_sqrt"], ["q_inv"], name="scale_div"),
              helper.make_node("Sqrt", ["q_inv"], ["half_scale"], name="scale_sqrt_half"),
              helper.make_node("Mul", ["qh", "half_scale"], ["qs"], name="q_scale"),
              helper.make_node("Transpose", ["kh"], ["kt0"], name="k_transpose", perm=[0, 1, 3, 2]),
              helper.make_node("Mul", ["kt0", "half_scale"], ["kt"], name="k_scale")]
    else:
        n += [helper.make_node("Mul", ["qh", "scale"], ["qs"], name="q_scale"),
              helper.make_node("Transpose", ["kh"], ["kt"], name="k_transpose", perm=[0, 1, 3, 2])]
    n += [helper.make_node("MatMul", ["qs", "kt"], ["scores"], name="scores"),
          helper.make_node("Softmax", ["scores"], ["attn"], name="softmax", axis=-1),
          helper.make_node("MatMul", ["attn", "v_present" if style == "present" else "vh"], ["ctx"], name="context"),
          helper.make_node("Transpose", ["ctx"], ["ctxt"], name="merge_transpose", perm=[0, 2, 1, 3]),
          helper.make_node("Reshape", ["ctxt", "merged_shape"], ["merged"], name="merge_heads"),
          helper.make_node("MatMul", ["merged", "w_out"], ["o0"], name="out_matmul"),
          helper.make_node("Add", ["o0", "b_out"], ["o1"], name="out_add"),
          helper.make_node("ReduceMean", ["o1"], ["y"], name="token_mean", axes=[1], keepdims=0)]
    return _model(n, [_vi("x", [1, tokens, c])], outputs, inits)


# Tokens and head sizes either side of RK3566's 8-alignment of a Transpose layer and a head split.
# RK3568 (the RK3566's NPU) checked on one of each: aligned, tokens unaligned, heads unaligned.
ATTENTION_ON_RK3568 = (("hf", 16, 32), ("hf", 20, 32), ("hf", 32, 12))
ATTENTION_FORMS = (("hf", 16, 32), ("hf", 20, 32), ("hf", 65, 32), ("hf", 32, 12), ("hf", 32, 24), ("timm", 65, 32), ("sdpa", 16, 32), ("present", 32, 32), ("present", 20, 32))
CASES += [
    Case(f"attention_{s}_t{t}_d{d}", "pool: attention's heads split and merged around MatMuls", lambda s=s, t=t, d=d: attention_block(tokens=t, head=d, style=s),
         ("rk3588", "rk3566", "rk3568") if (s, t, d) in ATTENTION_ON_RK3568 else ("rk3588", "rk3566"))
    for s, t, d in ATTENTION_FORMS
]


# ---- pool (issue 27, rk3588 tuning part): a division by a computed tensor, Sqrt -------------------


def div_by_computed(variant: str) -> onnx.ModelProto:
    """Conv, then a Div whose divisor is computed, then a Conv (NCHW 1x8x8x8). `variant`: same
    (x / (|x| + 1), the divisor the dividend's shape), same_cast (then a Cast to float32 of that
    float32 quotient, as EfficientViT's LiteMLA writes `.float()`), one (x / (mean over everything + eps), a one-element
    divisor), channel (x / (GlobalAveragePool(|x|) + eps), [1, 8, 1, 1]), grn (ConvNeXt-V2's GRN:
    ReduceL2 over H, W then / (its channel mean + eps), [1, 8, 1, 1] by [1, 1, 1, 1]), grn_full
    (the same with timm's x + bias + weight * (x * Nx) after it), last_axis
    (x / (ReduceMean over the last axis + eps), [1, 8, 8, 1]: EfficientViT's LiteMLA divides by
    the attention's last column so), rsqrt (T5's RMSNorm: 1 / Sqrt(mean(x^2) + eps) times x, over
    the last axis), rsqrt_only (1 / Sqrt(|x| + eps) alone), rsqrt_channel (the RMSNorm over the
    channel axis), sqrt (a Sqrt of |x| + eps on its own)."""
    rng = np.random.default_rng(13)
    k = _Constants("tensor")
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c"], name="conv1", pads=[1, 1, 1, 1])]
    inits = [_const("w1", _weights(rng, 8, 3, 3, 3)), _const("w2", _weights(rng, 4, 8, 3, 3))]
    eps = k(1e-6, np.float32)
    if variant in ("same", "same_cast"):
        nodes += [helper.make_node("Abs", ["c"], ["ab"], name="abs"), helper.make_node("Add", ["ab", k(1.0, np.float32)], ["d"], name="eps_add")]
    elif variant in ("one", "last_axis"):
        axes = [1, 2, 3] if variant == "one" else [3]
        nodes += [helper.make_node("Abs", ["c"], ["ab"], name="abs"), helper.make_node("ReduceMean", ["ab"], ["m"], name="mean", axes=axes, keepdims=1), helper.make_node("Add", ["m", eps], ["d"], name="eps_add")]
    elif variant == "channel":
        nodes += [helper.make_node("Abs", ["c"], ["ab"], name="abs"), helper.make_node("GlobalAveragePool", ["ab"], ["m"], name="gap"), helper.make_node("Add", ["m", eps], ["d"], name="eps_add")]
    if variant == "same_cast":
        nodes += [helper.make_node("Div", ["c", "d"], ["qd"], name="div"), helper.make_node("Cast", ["qd"], ["q"], name="cast", to=TensorProto.FLOAT)]
        nodes.append(helper.make_node("Conv", ["q", "w2"], ["y"], name="conv2", pads=[1, 1, 1, 1]))
    if variant in ("same", "one", "last_axis", "channel"):
        nodes += [helper.make_node("Div", ["c", "d"], ["q"], name="div"), helper.make_node("Conv", ["q", "w2"], ["y"], name="conv2", pads=[1, 1, 1, 1])]
    elif variant in ("grn", "grn_full"):
        nodes += [
            helper.make_node("ReduceL2", ["c"], ["g"], name="l2", axes=[2, 3], keepdims=1),
            helper.make_node("ReduceMean", ["g"], ["gm"], name="mean", axes=[1], keepdims=1),
            helper.make_node("Add", ["gm", eps], ["d"], name="eps_add"),
            helper.make_node("Div", ["g", "d"], ["n"], name="div"),
            helper.make_node("Mul", ["c", "n"], ["q" if variant == "grn" else "xn"], name="apply"),
        ]
        if variant == "grn_full":
            # timm's GlobalResponseNorm: x + addcmul(bias, weight, x * Nx), as torch.onnx writes it.
            inits += [_const("gamma", _weights(rng, 1, 8, 1, 1)), _const("beta", _weights(rng, 1, 8, 1, 1))]
            nodes += [
                helper.make_node("Mul", ["gamma", "xn"], ["gx"], name="gamma_mul"),
                helper.make_node("Mul", ["gx", k([1.0], np.float32)], ["gx1"], name="value_mul"),
                helper.make_node("Add", ["beta", "gx1"], ["gb"], name="beta_add"),
                helper.make_node("Add", ["c", "gb"], ["q"], name="residual"),
            ]
        nodes.append(helper.make_node("Conv", ["q", "w2"], ["y"], name="conv2", pads=[1, 1, 1, 1]))
    elif variant in ("rsqrt", "rsqrt_channel"):
        # The root mean square over the last axis, or over the channels.
        nodes += [
            helper.make_node("Pow", ["c", k(2.0, np.float32)], ["p"], name="pow"),
            helper.make_node("ReduceMean", ["p"], ["m"], name="mean", axes=[1] if variant == "rsqrt_channel" else [-1], keepdims=1),
            helper.make_node("Add", ["m", eps], ["d"], name="eps_add"),
            helper.make_node("Sqrt", ["d"], ["s"], name="sqrt"),
            helper.make_node("Div", [k(1.0, np.float32), "s"], ["r"], name="div"),
            helper.make_node("Mul", ["c", "r"], ["q"], name="apply"),
            helper.make_node("Conv", ["q", "w2"], ["y"], name="conv2", pads=[1, 1, 1, 1]),
        ]
    elif variant in ("rsqrt_only", "sqrt"):
        # sqrt(|c| + eps), and for rsqrt_only its reciprocal, feeds the next Conv.
        root = "s" if variant == "rsqrt_only" else "q"
        nodes += [
            helper.make_node("Abs", ["c"], ["ab"], name="abs"),
            helper.make_node("Add", ["ab", eps], ["d"], name="eps_add"),
            helper.make_node("Sqrt", ["d"], [root], name="sqrt"),
        ]
        if variant == "rsqrt_only":
            nodes.append(helper.make_node("Div", [k(1.0, np.float32), "s"], ["q"], name="div"))
        nodes.append(helper.make_node("Conv", ["q", "w2"], ["y"], name="conv2", pads=[1, 1, 1, 1]))
    return _model(k.nodes + nodes, [_vi("x", [1, 3, 8, 8])], [_vi("y", [1, 4, 8, 8])], inits)


DIV_VARIANTS = ("same", "same_cast", "one", "channel", "grn", "grn_full", "last_axis", "rsqrt", "rsqrt_only", "rsqrt_channel", "sqrt")
CASES += [Case(f"div_by_computed_{v}", "pool: a division by a computed tensor, Sqrt", lambda v=v: div_by_computed(v), ("rk3588", "rk3566")) for v in DIV_VARIANTS]


# ---- pool (issue 27, rk3588 tuning part): a training-mode BatchNormalization the toolkit could fold --


def weight_standardised_conv() -> onnx.ModelProto:
    """NF-Net's ScaledStdConv2d as torch.onnx writes F.batch_norm(weight, training=True) at opset 17:
    the Conv's weight [16, 3, 3, 3] standardised by a BatchNormalization with training_mode=1 whose
    mean and variance are ReduceMeans of that constant weight, so every input of it is known when
    the model is compiled. Then a Relu."""
    rng = np.random.default_rng(14)
    k = _Constants("tensor")
    w = _weights(rng, 1, 16, 27)
    nodes = [
        helper.make_node("ReduceMean", ["w"], ["mean"], name="mean", axes=[0, 2], keepdims=0),
        helper.make_node("Transpose", ["w"], ["wt"], name="to_rows", perm=[0, 2, 1]),
        helper.make_node("ReduceMean", ["wt"], ["m2"], name="mean_rows", axes=[0, 1], keepdims=1),
        helper.make_node("Sub", ["wt", "m2"], ["d"], name="centre"),
        helper.make_node("Mul", ["d", "d"], ["d2"], name="square"),
        helper.make_node("ReduceMean", ["d2"], ["var"], name="var", axes=[0, 1], keepdims=0),
        helper.make_node("BatchNormalization", ["w", "gain", "zero", "mean", "var"], ["wn", "rm", "rv"], name="standardise", epsilon=1e-5, momentum=1.0, training_mode=1),
        helper.make_node("Reshape", ["wn", k([16, 3, 3, 3])], ["w4"], name="to_kernel"),
        helper.make_node("Conv", ["x", "w4", "b"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["y"], name="relu"),
    ]
    inits = [_const("w", w), _const("gain", np.ones(16, np.float32)), _const("zero", np.zeros(16, np.float32)), _const("b", np.zeros(16, np.float32))]
    return _model(k.nodes + nodes, [_vi("x", [1, 3, 8, 8])], [_vi("y", [1, 16, 8, 8])], inits, opset=17)


CASES.append(Case("weight_standardised_conv", "pool: a training-mode BatchNormalization of constants", weight_standardised_conv, ("rk3588",)))


# ---- pool (issue 27, rk3588 tuning part): Slice with a step larger than 1 -------------------------


def strided_slice(shape: tuple, axis: int, step: int, start: int = 0, then: str = "Relu") -> onnx.ModelProto:
    """A Conv (1x1, to `shape`'s channels) on an input of `shape`, a Slice of its result along
    `axis` from `start` with `step` (to the end; from the end for a negative step), a Relu (or the
    same 1x1 Conv, `then`="Conv"): as
    EVA-02's rotate_half (x[..., ::2], x[..., 1::2]) and LeViT's subsampled queries
    (x[:, ::2, ::2]) are written by torch.onnx (opset 13, INT64_MAX as the end)."""
    rng = np.random.default_rng(15)
    k = _Constants("tensor")
    end = -(1 << 62) if step < 0 else (1 << 62)
    rank = len(shape)
    conv_in = "x" if rank == 4 else "x4"
    nodes = []
    if rank != 4:
        nodes.append(helper.make_node("Unsqueeze", ["x", k([0])], ["x4"], name="to_4d"))
    nodes.append(helper.make_node("Conv", [conv_in, "w"], ["c4"], name="conv"))
    c = "c4"
    if rank != 4:
        nodes.append(helper.make_node("Squeeze", ["c4", k([0])], ["c"], name="to_rank"))
        c = "c"
    nodes += [
        helper.make_node("Slice", [c, k([start]), k([end]), k([axis]), k([step])], ["s"], name="slice"),
        helper.make_node("Relu", ["s"], ["y"], name="relu") if then == "Relu" else helper.make_node("Conv", ["s", "w"], ["y"], name="conv2"),
    ]
    channels = shape[1] if rank == 4 else shape[0]
    inits = [_const("w", _weights(rng, channels, channels, 1, 1))]
    sliced = list(shape)
    n = shape[axis]
    sliced[axis] = len(range(start % n if start >= 0 else n + start, n if step > 0 else -1, step))
    return _model(k.nodes + nodes, [_vi("x", list(shape))], [_vi("y", sliced)], inits)


SLICE_FORMS = {
    "last_axis_step2": ((1, 4, 8, 16), 3, 2, 0),
    "last_axis_step2_from1": ((1, 4, 8, 16), 3, 2, 1),
    "channels_step2": ((1, 4, 8, 16), 1, 2, 0),
    "height_step3": ((1, 4, 8, 16), 2, 3, 0),
    "last_axis_step_minus2": ((1, 4, 8, 16), 3, -2, -1),
    "channels_step4_to_one": ((1, 4, 8, 16), 1, 4, 0),
    "channels2_step2_to_one": ((1, 2, 8, 16), 1, 2, 0),
    "height2_step2_to_one": ((1, 4, 2, 16), 2, 2, 0),
    "channels3_step2": ((1, 3, 8, 16), 1, 2, 0),
    "last_axis_step2_conv": ((1, 4, 8, 16), 3, 2, 0, "Conv"),
    "height_step2_conv": ((1, 4, 8, 16), 2, 2, 0, "Conv"),
}
CASES += [Case(f"slice_{name}", "pool: Slice with a step larger than 1", lambda f=f: strided_slice(*f), ("rk3588",)) for name, f in SLICE_FORMS.items()]


def strided_slice_in_context(form: str) -> onnx.ModelProto:
    """A step-2 Slice in the context a pool model has it. `form`: rotate_half (EVA-02's rotary
    embedding: x[..., 1::2] negated and x[..., ::2], each Unsqueezed, stacked on a new last axis by
    Concat and Reshaped back, then x * cos + rotated * sin) on a [1, 4, 8, 16] Conv output;
    subsample4, subsample2 (LeViT's queries x[:, ::2, ::2] on tokens Reshaped to a 4x4 or 2x2 grid,
    Reshaped back to tokens, then a MatMul)."""
    rng = np.random.default_rng(16)
    k = _Constants("tensor")
    big = 1 << 62
    if form == "rotate_half":
        nodes = [
            helper.make_node("Conv", ["x", "w"], ["c"], name="conv"),
            helper.make_node("Slice", ["c", k([1]), k([big]), k([3]), k([2])], ["odd"], name="slice_odd"),
            helper.make_node("Neg", ["odd"], ["neg"], name="neg"),
            helper.make_node("Unsqueeze", ["neg", k([-1])], ["u0"], name="unsqueeze0"),
            helper.make_node("Slice", ["c", k([0]), k([big]), k([3]), k([2])], ["even"], name="slice_even"),
            helper.make_node("Unsqueeze", ["even", k([-1])], ["u1"], name="unsqueeze1"),
            helper.make_node("Concat", ["u0", "u1"], ["st"], name="stack", axis=-1),
            helper.make_node("Reshape", ["st", k([1, 4, 8, 16])], ["rot"], name="merge"),
            helper.make_node("Mul", ["c", k(_weights(rng, 8, 16), np.float32)], ["xc"], name="cos_mul"),
            helper.make_node("Mul", ["rot", k(_weights(rng, 8, 16), np.float32)], ["xs"], name="sin_mul"),
            helper.make_node("Add", ["xc", "xs"], ["y"], name="rope_add"),
        ]
        inits = [_const("w", _weights(rng, 4, 4, 1, 1))]
        return _model(k.nodes + nodes, [_vi("x", [1, 4, 8, 16])], [_vi("y", [1, 4, 8, 16])], inits)
    side = 4 if form == "subsample4" else 2
    ch = 32
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["t"], name="proj"),
        helper.make_node("Reshape", ["t", k([1, side, side, ch])], ["g"], name="to_grid"),
        helper.make_node("Slice", ["g", k([0]), k([big]), k([1]), k([2])], ["r"], name="rows"),
        helper.make_node("Slice", ["r", k([0]), k([big]), k([2]), k([2])], ["rc"], name="cols"),
        helper.make_node("Reshape", ["rc", k([1, -1, ch])], ["q"], name="to_tokens"),
        helper.make_node("MatMul", ["q", "w2"], ["y"], name="out"),
    ]
    inits = [_const("w1", _weights(rng, ch, ch)), _const("w2", _weights(rng, ch, ch))]
    half = (side + 1) // 2
    return _model(k.nodes + nodes, [_vi("x", [1, side * side, ch])], [_vi("y", [1, half * half, ch])], inits)


# Not recorded: rknn-toolkit2 2.5.0 runs both step-2 Slices of rotate_half on the NPU (as in
# EVA-02), where every step-2 Slice alone (strided_slice: between two Convs, before a Relu, any
# axis, step 2, 3, 4 or -2) runs on the CPU: probed and recorded as rope_pack
# (passes.interleaved_pair_rejoined).
# subsample4 (NPU) and subsample2 (CPU with the Reshape after them) are LeViT's subsampling, kept
# to more than one token or to one: probed and recorded as subsample_pack (passes.subsampled_token_grid).


# ---- pool (issue 27, rk3588 tuning part): the token ids Reshaped before the embedding Gather ------


def ids_reshaped_before_embedding(op: str = "Reshape") -> onnx.ModelProto:
    """transformers' input_ids.view(-1, T) before the embedding lookup (GPT-2, T5): an int64 [1, 16]
    model input Reshaped to [-1, 16] (or `op`="Identity": not reshaped), Gathered from a [100, 32]
    embedding table, then a MatMul; `op`="Reshape_cast": Reshaped, then Cast to float and into a
    MatMul, no Gather."""
    rng = np.random.default_rng(17)
    k = _Constants("tensor")
    nodes = []
    if op == "Reshape":
        nodes.append(helper.make_node("Reshape", ["ids", k([-1, 16])], ["ids2"], name="view"))
    else:
        nodes.append(helper.make_node("Identity", ["ids"], ["ids2"], name="view"))
    if op == "Reshape_cast":
        nodes = [helper.make_node("Reshape", ["ids", k([-1, 16])], ["ids2"], name="view")]
        nodes += [helper.make_node("Cast", ["ids2"], ["f"], name="to_float", to=TensorProto.FLOAT), helper.make_node("Unsqueeze", ["f", k([2])], ["e"], name="unsqueeze"),
                  helper.make_node("MatMul", ["e", "w1"], ["y"], name="proj")]
    else:
        nodes += [helper.make_node("Gather", ["table", "ids2"], ["e"], name="embed", axis=0), helper.make_node("MatMul", ["e", "w"], ["y"], name="proj")]
    inits = [_const("table", _weights(rng, 100, 32)), _const("w", _weights(rng, 32, 32)), _const("w1", _weights(rng, 1, 32))]
    return _model(k.nodes + nodes, [_vi("ids", [1, 16], TensorProto.INT64)], [_vi("y", [1, 16, 32])], inits)


CASES += [Case(f"ids_{op.lower()}_before_embedding", "pool: token ids reshaped before the embedding Gather", lambda op=op: ids_reshaped_before_embedding(op), ("rk3588",)) for op in ("Reshape", "Identity", "Reshape_cast")]


# ---- pool (issue 27, rk3588 tuning part): a MatMul whose batch dimensions broadcast ----------------


def broadcast_matmul(a_shape: tuple, b_shape: tuple) -> onnx.ModelProto:
    """A MatMul of two computed tensors whose batch dimensions broadcast (LambdaNetworks' content
    and position lambdas, timm's lambda_resnet26t): each operand a Relu of its own model input,
    the product a model output through a Relu."""
    nodes = [
        helper.make_node("Relu", ["a"], ["ra"], name="relu_a"),
        helper.make_node("Relu", ["b"], ["rb"], name="relu_b"),
        helper.make_node("MatMul", ["ra", "rb"], ["m"], name="matmul"),
        helper.make_node("Relu", ["m"], ["y"], name="relu"),
    ]
    out = list(np.broadcast_shapes(tuple(a_shape[:-2]), tuple(b_shape[:-2]))) + [a_shape[-2], b_shape[-1]]
    return _model(nodes, [_vi("a", list(a_shape)), _vi("b", list(b_shape))], [_vi("y", out)])


MATMUL_FORMS = {
    "heads_by_one": ((1, 4, 16, 16), (1, 1, 16, 64)),
    "rank5_by_one": ((1, 4, 16, 1, 16), (1, 1, 16, 16, 64)),
    "one_by_heads": ((1, 1, 16, 16), (1, 4, 16, 64)),
    "mutual": ((1, 4, 1, 16, 16), (1, 1, 3, 16, 8)),
    "rank3_by_rank4": ((4, 16, 16), (2, 1, 16, 8)),
    "two_heads_by_one": ((1, 2, 16, 16), (1, 1, 16, 32)),
    "two_heads_by_one_keys": ((1, 2, 16, 32), (1, 1, 32, 16)),
}
CASES += [Case(f"matmul_broadcast_{n}", "pool: a MatMul whose batch dimensions broadcast", lambda f=f: broadcast_matmul(*f), ("rk3588",)) for n, f in MATMUL_FORMS.items()]


# ---- ESP-DL: grouped Conv (neither group 1 nor depthwise) and opset-9 BatchNormalization ------


def grouped_conv(cin: int, cout: int, group: int, kernel: int = 3, stride: int = 1, dilation: int = 1, pad: int | None = None, rank: int = 4) -> onnx.ModelProto:
    """A plain Conv, then a Conv with `group` groups (cin / group input channels per group), then
    a Relu: the grouped Conv sits inside the graph, as in ShuffleNet, RegNet and ResNeXt. `pad`:
    the same on every side (default: kernel // 2 * dilation); `rank` 3 makes the Convs 1-D."""
    rng = np.random.default_rng(cin * 1000 + cout * 10 + group)
    pad = kernel // 2 * dilation if pad is None else pad
    spatial = [10] * (rank - 2)
    ones = [1] * (rank - 2)
    inits = [_const("w0", _weights(rng, cin, cin, *ones)), _const("w1", _weights(rng, cout, cin // group, *([kernel] * (rank - 2)))), _const("b1", _weights(rng, cout))]
    nodes = [
        helper.make_node("Conv", ["x", "w0"], ["c0"], name="conv_plain", kernel_shape=ones),
        helper.make_node("Conv", ["c0", "w1", "b1"], ["c1"], name="conv_grouped", kernel_shape=[kernel] * (rank - 2), group=group,
                         strides=[stride] * (rank - 2), dilations=[dilation] * (rank - 2), pads=[pad] * (2 * (rank - 2))),
        helper.make_node("Relu", ["c1"], ["y"], name="relu"),
    ]
    out = [(s + 2 * pad - dilation * (kernel - 1) - 1) // stride + 1 for s in spatial]
    return _model(nodes, [_vi("x", [1, cin, *spatial])], [_vi("y", [1, cout, *out])], inits)


GROUPED_CONV_FORMS = {
    # name: (cin, cout, group, kernel, stride, dilation, pad, rank)
    "group1": (16, 16, 1, 3, 1, 1, None, 4),
    "depthwise": (16, 16, 16, 3, 1, 1, None, 4),
    "depthwise_x2": (8, 16, 8, 3, 1, 1, None, 4),
    "g2_c16": (16, 16, 2, 3, 1, 1, None, 4),
    "g4_1x1_24to56": (24, 56, 4, 1, 1, 1, None, 4),
    "g4_cpg8_s2": (32, 32, 4, 3, 2, 1, None, 4),
    "g4_dil2": (16, 16, 4, 3, 1, 2, None, 4),
    "g2_nopad": (16, 16, 2, 3, 1, 1, 0, 4),
    "g8_16to8": (16, 8, 8, 1, 1, 1, None, 4),
    "g2_1d": (8, 8, 2, 3, 1, 1, None, 3),
}
CASES += [Case(f"conv_{name}", "espdl: grouped Conv", lambda f=f: grouped_conv(*f), ("esp32s3",)) for name, f in GROUPED_CONV_FORMS.items()]


def block_diagonal(model: onnx.ModelProto) -> onnx.ModelProto:
    """The model as `edgedeploy build` hands it to esp-ppq: every Conv ESP-DL cannot run written
    as a group-1 Conv with block-diagonal weights (targets/espdl/grouped_conv.py)."""
    from edgedeploy.targets.espdl.grouped_conv import rewrite_grouped_convs

    rewrite_grouped_convs(model)
    return model


# The grouped forms above (those ESP-DL cannot run as written) and form f's zoo unit, rewritten.
REWRITTEN_FORMS = [name for name, (cin, cout, group, *_rest) in GROUPED_CONV_FORMS.items() if group != 1 and not group == cin == cout]
CASES += [Case(f"conv_{name}_block_diagonal", "espdl: grouped Conv as edgedeploy writes it for esp-ppq", lambda f=GROUPED_CONV_FORMS[name]: block_diagonal(grouped_conv(*f)), ("esp32s3",)) for name in REWRITTEN_FORMS]


def batchnorm_probe(opset: int, after: str, rank: int = 4) -> onnx.ModelProto:
    """A BatchNormalization at `opset` after a plain Conv (`after` conv), a grouped Conv
    (gconv, 2 groups) or a Relu (relu: nothing to fold it into), on a `rank`-D tensor."""
    rng = np.random.default_rng(opset * 10 + rank)
    c = 8
    spatial = [6] * (rank - 2)
    ones = [1] * (rank - 2)
    group = 2 if after == "gconv" else 1
    inits = [_const("w0", _weights(rng, c, c // group, *ones))]
    inits += [_const(p, v) for p, v in (("s", 1 + _weights(rng, c)), ("b", _weights(rng, c)), ("m", _weights(rng, c)), ("v", 1 + np.abs(_weights(rng, c))))]
    nodes = [helper.make_node("Conv", ["x", "w0"], ["c0"], name="conv", kernel_shape=ones, group=group)]
    x = "c0"
    if after == "relu":
        nodes.append(helper.make_node("Relu", ["c0"], ["r0"], name="relu0"))
        x = "r0"
    attrs = {"spatial": 1} if opset < 9 else {}
    nodes += [
        helper.make_node("BatchNormalization", [x, "s", "b", "m", "v"], ["bn"], name="bn", epsilon=1e-5, **attrs),
        helper.make_node("Relu", ["bn"], ["y"], name="relu1"),
    ]
    inputs = [_vi("x", [1, c, *spatial])]
    if opset <= 9:  # the model zoo's IR 3: every initializer is also a graph input
        inputs += [_vi(t.name, list(t.dims)) for t in inits]
    return _model(nodes, inputs, [_vi("y", [1, c, *spatial])], inits, opset=opset, ir_version=3 if opset <= 9 else 8)


BATCHNORM_FORMS = {f"bn_op{o}_after_{a}{'' if r == 4 else f'_rank{r}'}": (o, a, r) for o, a, r in [
    (9, "conv", 4), (9, "gconv", 4), (9, "relu", 4), (9, "relu", 3), (7, "relu", 4), (15, "relu", 4), (15, "gconv", 4)]}
CASES += [Case(name, "espdl: BatchNormalization by opset and producer", lambda f=f: batchnorm_probe(*f), ("esp32s3",)) for name, f in BATCHNORM_FORMS.items()]
# ---- pool (issue 27, rk3566 tuning part): a feature map's swap into tokens and back -----------------


def token_swap(form: str, channels: int = 32, side: int = 4) -> onnx.ModelProto:
    """A feature map [1, C, H, W] flattened into tokens (Reshape [1, C, H*W], Transpose [0, 2, 1]),
    as torch.onnx writes x.flatten(2).transpose(1, 2). form "pooled": a ViT patch embedding (Conv,
    the swap, a class token Concat, a position Add, a Linear, the class token Gathered: a 2-D
    output); "tokens_out": the same ending in the 3-D tokens (a model output); "round_trip": tokens
    back to the map (Transpose [0, 2, 1], Reshape [1, C, H, W]) around a depthwise Conv, as
    SegFormer's Mix-FFN; "areas": the tokens regrouped into 4 areas (Reshape [4, T/4, C]) before a
    Linear, as YOLO12's area attention."""
    rng = np.random.default_rng(27)
    c, t = channels, side * side
    inits = [_const("w_patch", _weights(rng, c, 3, 2, 2)), _const("flat", np.array([1, c, t], np.int64)), _const("w_lin", _weights(rng, c, c)),
             _const("cls", _weights(rng, 1, 1, c)), _const("pos", _weights(rng, 1, t + 1, c)), _const("first", np.array(0, np.int64)),
             _const("map", np.array([1, c, side, side], np.int64)), _const("w_dw", _weights(rng, c, 1, 3, 3)), _const("areas", np.array([4, t // 4, c], np.int64))]
    n = [helper.make_node("Conv", ["x", "w_patch"], ["f"], name="patch_conv", kernel_shape=[2, 2], strides=[2, 2]),
         helper.make_node("Reshape", ["f", "flat"], ["f3"], name="flatten"),
         helper.make_node("Transpose", ["f3"], ["tok"], name="to_tokens", perm=[0, 2, 1])]
    if form in ("pooled", "tokens_out"):
        n += [helper.make_node("Concat", ["cls", "tok"], ["cat"], name="cls_concat", axis=1),
              helper.make_node("Add", ["cat", "pos"], ["emb"], name="pos_add"),
              helper.make_node("MatMul", ["emb", "w_lin"], ["lin"], name="linear"),
              helper.make_node("Relu", ["lin"], ["act" if form == "pooled" else "y"], name="act")]
        if form == "pooled":
            n.append(helper.make_node("Gather", ["act", "first"], ["y"], name="cls_token", axis=1))
        out = [1, c] if form == "pooled" else [1, t + 1, c]
    elif form == "round_trip":
        n += [helper.make_node("MatMul", ["tok", "w_lin"], ["lin"], name="linear"),
              helper.make_node("Transpose", ["lin"], ["back"], name="to_map", perm=[0, 2, 1]),
              helper.make_node("Reshape", ["back", "map"], ["m"], name="unflatten"),
              helper.make_node("Conv", ["m", "w_dw"], ["y"], name="dw_conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1], group=c)]
        out = [1, c, side, side]
    else:
        n += [helper.make_node("Reshape", ["tok", "areas"], ["a"], name="to_areas"),
              helper.make_node("MatMul", ["a", "w_lin"], ["lin"], name="linear"),
              helper.make_node("ReduceMean", ["lin"], ["y"], name="area_mean", axes=[1], keepdims=0)]
        out = [4, c]
    used = {i for node in n for i in node.input}
    return _model(n, [_vi("x", [1, 3, 2 * side, 2 * side])], [_vi("y", out)], [i for i in inits if i.name in used])


# 4 areas of a 10x10, 6x6 and 8x8 map (25, 9, 16 tokens) are not single rows of it; of a 4x4 map are.
TOKEN_SWAP_FORMS = (("pooled", 32, 4), ("tokens_out", 32, 4), ("round_trip", 32, 4), ("round_trip", 20, 5), ("areas", 32, 10), ("areas", 32, 6),
                    ("areas", 32, 4), ("areas", 32, 8))
CASES += [Case(f"token_swap_{f}_c{c}_s{s}", "pool: a feature map's swap into tokens and back", lambda f=f, c=c, s=s: token_swap(f, c, s), ("rk3566", "rk3588"))
          for f, c, s in TOKEN_SWAP_FORMS]
# Not recorded on rk3588: token_swap("pooled", 24, 3), whose flattening Reshape of a 3x3 map of 24
# channels rknn-toolkit2 2.5.0 runs on the CPU there (on the NPU on RK3566); not yet explained.
CASES.append(Case("token_swap_pooled_c24_s3", "pool: a feature map's swap into tokens and back", lambda: token_swap("pooled", 24, 3), ("rk3566",)))


def nhwc_swap(direction: str, channels: int = 32, side: int = 4) -> onnx.ModelProto:
    """Tokens viewed as a channels-last map and permuted for a convolution (direction "to_map":
    Linear, Reshape [1, H, W, C], Transpose [0, 3, 1, 2], Conv, as PVT-v2 and CoaT write it), or a
    map permuted channels-last and viewed as tokens ("to_tokens": Conv, Transpose [0, 2, 3, 1],
    Reshape [1, H*W, C], Linear)."""
    rng = np.random.default_rng(27)
    c, t = channels, side * side
    inits = [_const("w_lin", _weights(rng, c, c)), _const("w_conv", _weights(rng, c, c, 3, 3)),
             _const("nhwc", np.array([1, side, side, c], np.int64)), _const("tokens", np.array([1, t, c], np.int64))]
    if direction == "to_map":
        n = [helper.make_node("MatMul", ["x", "w_lin"], ["lin"], name="linear"),
             helper.make_node("Reshape", ["lin", "nhwc"], ["m"], name="to_nhwc"),
             helper.make_node("Transpose", ["m"], ["mc"], name="to_nchw", perm=[0, 3, 1, 2]),
             helper.make_node("Conv", ["mc", "w_conv"], ["y"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1])]
        inputs, out = [_vi("x", [1, t, c])], [1, c, side, side]
    else:
        n = [helper.make_node("Conv", ["x", "w_conv"], ["f"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("Transpose", ["f"], ["fl"], name="to_nhwc", perm=[0, 2, 3, 1]),
             helper.make_node("Reshape", ["fl", "tokens"], ["tok"], name="to_tokens"),
             helper.make_node("MatMul", ["tok", "w_lin"], ["lin"], name="linear"),
             helper.make_node("ReduceMean", ["lin"], ["y"], name="token_mean", axes=[1], keepdims=0)]
        inputs, out = [_vi("x", [1, c, side, side])], [1, c]
    used = {i for node in n for i in node.input}
    return _model(n, inputs, [_vi("y", out)], [i for i in inits if i.name in used])


CASES += [Case(f"nhwc_swap_{d}_c32_s4", "pool: tokens viewed as a channels-last map and permuted", lambda d=d: nhwc_swap(d, 32, 4), ("rk3566", "rk3588")) for d in ("to_map", "to_tokens")]
# Not recorded, and left for the next round (rknn-toolkit2 2.5.0, 20 channels on a 5x5 map): in
# nhwc_swap("to_map", 20, 5) the Reshape and the Transpose run on the CPU on RK3588 (on the NPU on
# RK3566); in nhwc_swap("to_tokens", 20, 5) the Reshape runs on the CPU on both. The audit places
# them on the NPU; the alignment that decides it is not measured.


# ---- pool (issue 27, rk3566 tuning part): a key/value projection of its own -----------------------


def kv_attention(side: int = 4, stride: int = 2, heads: int = 2, head: int = 32, unbind: str = "split", key_scaled: bool = False) -> onnx.ModelProto:
    """PVT-v2's spatial-reduction attention on a map [1, C, H, W]: q from the map's tokens (Reshape,
    Transpose [0, 2, 1], Linear), k and v from one Linear of a strided Conv's tokens, split into heads
    (Reshape [1, S, 2, heads, head], Transpose [2, 0, 3, 1, 4]) and unbound by a Split and Squeezes
    (unbind "split") or two Gathers ("gather"); k transposed [0, 1, 3, 2]; Softmax, heads merged, a
    Linear and a mean over the tokens. `key_scaled`: q and the transposed k each times sqrt(scale)
    (PVT-v2's export) instead of q times the scale."""
    rng = np.random.default_rng(27)
    c, t, s = heads * head, side * side, (side // stride) ** 2
    inits = [_const("w_q", _weights(rng, c, c)), _const("w_kv", _weights(rng, c, 2 * c)), _const("w_o", _weights(rng, c, c)), _const("w_sr", _weights(rng, c, c, stride, stride)),
             _const("flat_t", np.array([1, c, t], np.int64)), _const("flat_s", np.array([1, c, s], np.int64)), _const("q_shape", np.array([1, t, heads, head], np.int64)),
             _const("kv_shape", np.array([1, s, 2, heads, head], np.int64)), _const("merged", np.array([1, t, c], np.int64)), _const("scale", np.array(head**-0.5, np.float32)),
             _const("split", np.array([1, 1], np.int64)), _const("ax0", np.array([0], np.int64)), _const("i0", np.array(0, np.int64)), _const("i1", np.array(1, np.int64))]
    n = [helper.make_node("Reshape", ["x", "flat_t"], ["xf"], name="x_flatten"),
         helper.make_node("Transpose", ["xf"], ["tok"], name="x_to_tokens", perm=[0, 2, 1]),
         helper.make_node("Conv", ["x", "w_sr"], ["sr"], name="sr_conv", kernel_shape=[stride, stride], strides=[stride, stride]),
         helper.make_node("Reshape", ["sr", "flat_s"], ["srf"], name="sr_flatten"),
         helper.make_node("Transpose", ["srf"], ["m"], name="sr_to_tokens", perm=[0, 2, 1]),
         helper.make_node("MatMul", ["tok", "w_q"], ["q0"], name="q_proj"),
         helper.make_node("Reshape", ["q0", "q_shape"], ["q1"], name="q_split_heads"),
         helper.make_node("Transpose", ["q1"], ["q"], name="q_heads_transpose", perm=[0, 2, 1, 3]),
         helper.make_node("MatMul", ["m", "w_kv"], ["kv0"], name="kv_proj"),
         helper.make_node("Reshape", ["kv0", "kv_shape"], ["kv1"], name="kv_split_heads"),
         helper.make_node("Transpose", ["kv1"], ["kv"], name="kv_heads_transpose", perm=[2, 0, 3, 1, 4])]
    if unbind == "split":
        n += [helper.make_node("Split", ["kv", "split"], ["k5", "v5"], name="kv_unbind", axis=0),
              helper.make_node("Squeeze", ["k5", "ax0"], ["k"], name="k_squeeze"),
              helper.make_node("Squeeze", ["v5", "ax0"], ["v"], name="v_squeeze")]
    else:
        n += [helper.make_node("Gather", ["kv", "i0"], ["k"], name="k_unbind", axis=0), helper.make_node("Gather", ["kv", "i1"], ["v"], name="v_unbind", axis=0)]
    n.append(helper.make_node("Transpose", ["k"], ["kt"], name="k_transpose", perm=[0, 1, 3, 2]))
    if key_scaled:
        inits.append(_const("root", np.array(head**-0.25, np.float32)))
        n += [helper.make_node("Mul", ["q", "root"], ["qs"], name="q_scale"), helper.make_node("Mul", ["kt", "root"], ["kts"], name="k_scale"),
              helper.make_node("MatMul", ["qs", "kts"], ["scores"], name="scores")]
    else:
        n += [helper.make_node("Mul", ["q", "scale"], ["qs"], name="q_scale"), helper.make_node("MatMul", ["qs", "kt"], ["scores"], name="scores")]
    n += _softmax_merge_and_token_mean("scores")
    used = {i for node in n for i in node.input}
    return _model(n, [_vi("x", [1, c, side, side])], [_vi("y", [1, c])], [i for i in inits if i.name in used])


def _softmax_merge_and_token_mean(scores: str) -> list:
    """The attention's end shared by kv_attention and qk_attention: Softmax over the keys, the
    product by v ("v"), the heads merged back ("merged"), the output Linear ("w_o") and the mean
    over the tokens into "y"."""
    return [helper.make_node("Softmax", [scores], ["attn"], name="softmax", axis=-1),
            helper.make_node("MatMul", ["attn", "v"], ["ctx"], name="context"),
            helper.make_node("Transpose", ["ctx"], ["ctxt"], name="merge_transpose", perm=[0, 2, 1, 3]),
            helper.make_node("Reshape", ["ctxt", "merged"], ["mg"], name="merge_heads"),
            helper.make_node("MatMul", ["mg", "w_o"], ["o"], name="out_proj"),
            helper.make_node("ReduceMean", ["o"], ["y"], name="token_mean", axes=[1], keepdims=0)]

# Keys: 4 of a 4x4 map (Split), 16 of an 8x8 map (Gather), 4 with 1 head (no Transpose layer in PVT).
KV_FORMS = (("split", 4, 2, 2), ("gather", 8, 2, 2), ("split", 8, 4, 2), ("split", 4, 2, 1))
CASES += [Case(f"kv_attention_{u}_s{s}_r{r}_h{h}", "pool: a key/value projection of its own (spatial-reduction attention)",
               lambda u=u, s=s, r=r, h=h: kv_attention(s, r, heads=h, head=64 // h, unbind=u), ("rk3566", "rk3588")) for u, s, r, h in KV_FORMS]
CASES += [Case(f"kv_attention_{u}_s{s}_r{r}_h{h}_key_scaled", "pool: a key/value projection of its own, the key scaled after its Transpose (PVT-v2)",
               lambda u=u, s=s, r=r, h=h: kv_attention(s, r, heads=h, head=64 // h, unbind=u, key_scaled=True), ("rk3566",)) for u, s, r, h in (("split", 4, 2, 2), ("gather", 8, 2, 2))]


def qk_attention(tokens: int = 16, heads: int = 4, head: int = 48, unbind: str = "gather", key_first: bool = False, batch: int = 1) -> onnx.ModelProto:
    """ConViT's gated attention's patch half on tokens [1, T, C]: q and k from one Linear, split into
    heads (Reshape [1, T, 2, heads, head], Transpose [2, 0, 3, 1, 4]) and unbound by two Gathers
    ("gather") or a Split and Squeezes ("split"); v from a Linear of its own; k transposed
    [0, 1, 3, 2], scores scaled, Softmax, heads merged, a Linear and a mean over the tokens: the
    counterpart of kv_attention with the query, not the value, beside the key. `key_first`: the key
    is the projection's first half, the query its second. `batch` > 1: attention over a batch of
    token sets (TNT's inner attention over each patch's pixels)."""
    rng = np.random.default_rng(27)
    c, t, b = heads * head, tokens, batch
    inits = [_const("w_qk", _weights(rng, c, 2 * c)), _const("w_v", _weights(rng, c, c)), _const("w_o", _weights(rng, c, c)),
             _const("qk_shape", np.array([b, t, 2, heads, head], np.int64)), _const("v_shape", np.array([b, t, heads, head], np.int64)),
             _const("merged", np.array([b, t, c], np.int64)), _const("scale", np.array(head**-0.5, np.float32)),
             _const("split", np.array([1, 1], np.int64)), _const("ax0", np.array([0], np.int64)), _const("i0", np.array(0, np.int64)), _const("i1", np.array(1, np.int64))]
    n = [helper.make_node("MatMul", ["x", "w_qk"], ["qk0"], name="qk_proj"),
         helper.make_node("Reshape", ["qk0", "qk_shape"], ["qk1"], name="qk_split_heads"),
         helper.make_node("Transpose", ["qk1"], ["qk"], name="qk_heads_transpose", perm=[2, 0, 3, 1, 4]),
         helper.make_node("MatMul", ["x", "w_v"], ["v0"], name="v_proj"),
         helper.make_node("Reshape", ["v0", "v_shape"], ["v1"], name="v_split_heads"),
         helper.make_node("Transpose", ["v1"], ["v"], name="v_heads_transpose", perm=[0, 2, 1, 3])]
    if unbind == "split":
        halves = ["k5", "q5"] if key_first else ["q5", "k5"]
        n += [helper.make_node("Split", ["qk", "split"], halves, name="qk_unbind", axis=0),
              helper.make_node("Squeeze", ["q5", "ax0"], ["q"], name="q_squeeze"),
              helper.make_node("Squeeze", ["k5", "ax0"], ["k"], name="k_squeeze")]
    else:
        first, second = ("i1", "i0") if key_first else ("i0", "i1")
        n += [helper.make_node("Gather", ["qk", first], ["q"], name="q_unbind", axis=0), helper.make_node("Gather", ["qk", second], ["k"], name="k_unbind", axis=0)]
    n += [helper.make_node("Transpose", ["k"], ["kt"], name="k_transpose", perm=[0, 1, 3, 2]),
          helper.make_node("MatMul", ["q", "kt"], ["s0"], name="scores"),
          helper.make_node("Mul", ["s0", "scale"], ["s1"], name="scores_scale")]
    n += _softmax_merge_and_token_mean("s1")
    used = {i for node in n for i in node.input}
    return _model(n, [_vi("x", [b, t, c])], [_vi("y", [b, c])], [i for i in inits if i.name in used])


# ConViT-tiny's form (16 tokens, 4 heads of 48, Gathers) and variants: Split, 2 heads, 65 tokens, 1 head.
QK_FORMS = (("gather", 16, 4, 48), ("split", 16, 4, 48), ("gather", 16, 2, 32), ("gather", 65, 4, 16), ("gather", 16, 1, 64))
CASES += [Case(f"qk_attention_{u}_t{t}_h{h}_d{d}", "pool: a joint query/key projection, the value of its own (ConViT)",
               lambda u=u, t=t, h=h, d=d: qk_attention(t, h, d, unbind=u), ("rk3566", "rk3588")) for u, t, h, d in QK_FORMS]
CASES += [Case(f"qk_attention_{u}_t16_h4_d48_key_first", "pool: a joint key/query projection (the key its first half), the value of its own",
               lambda u=u: qk_attention(16, 4, 48, unbind=u, key_first=True), ("rk3566",)) for u in ("gather", "split")]
# TNT's inner attention (16 token sets of 16 pixels, 4 heads of 6, Split) and variants: heads of 8, 12 tokens, Gather.
QK_BATCHED = (("split", 16, 16, 4, 6), ("split", 16, 16, 4, 8), ("split", 16, 12, 4, 6), ("gather", 16, 16, 4, 6), ("split", 4, 16, 2, 6))
CASES += [Case(f"qk_attention_{u}_b{b}_t{t}_h{h}_d{d}", "pool: a joint query/key projection over a batch of token sets (TNT's inner attention)",
               lambda u=u, b=b, t=t, h=h, d=d: qk_attention(t, h, d, unbind=u, batch=b), ("rk3566", "rk3588")) for u, b, t, h, d in QK_BATCHED]


# ---- pool (issue 27, rk3566 tuning part): CaiT's talking heads ---------------------------------------


def talking_heads(heads: int = 4, source: str = "product", tokens: int = 16) -> onnx.ModelProto:
    """CaiT's talking-heads attention on scores [1, heads, T, T]: Transpose [0, 2, 3, 1], a Linear over
    the heads, Transpose [0, 3, 1, 2], Softmax, and again (Transpose, Linear, Transpose back), then a
    mean. source "product": the scores are a product of two computed tensors (q @ k, each a 1x1 Conv
    of its own model input); "conv": a 1x1 Conv of one input."""
    rng = np.random.default_rng(27)
    h, t = heads, tokens
    inits = [_const("w_l", _weights(rng, h, h)), _const("b_l", _weights(rng, h)), _const("w_w", _weights(rng, h, h)), _const("b_w", _weights(rng, h)),
             _const("w_q", _weights(rng, h, h, 1, 1)), _const("w_k", _weights(rng, h, h, 1, 1))]
    if source == "product":
        n = [helper.make_node("Conv", ["q", "w_q"], ["q1"], name="q_conv", kernel_shape=[1, 1]),
             helper.make_node("Conv", ["k", "w_k"], ["k1"], name="k_conv", kernel_shape=[1, 1]),
             helper.make_node("MatMul", ["q1", "k1"], ["a"], name="scores")]
        inputs = [_vi("q", [1, h, t, 16]), _vi("k", [1, h, 16, t])]
    else:
        n = [helper.make_node("Conv", ["q", "w_q"], ["a"], name="scores", kernel_shape=[1, 1])]
        inputs = [_vi("q", [1, h, t, t])]
    n += [helper.make_node("Transpose", ["a"], ["a1"], name="to_last", perm=[0, 2, 3, 1]),
          helper.make_node("MatMul", ["a1", "w_l"], ["a2"], name="proj_l"),
          helper.make_node("Add", ["a2", "b_l"], ["a3"], name="proj_l_bias"),
          helper.make_node("Transpose", ["a3"], ["a4"], name="back", perm=[0, 3, 1, 2]),
          helper.make_node("Softmax", ["a4"], ["a5"], name="softmax", axis=-1),
          helper.make_node("Transpose", ["a5"], ["a6"], name="to_last_2", perm=[0, 2, 3, 1]),
          helper.make_node("MatMul", ["a6", "w_w"], ["a7"], name="proj_w"),
          helper.make_node("Add", ["a7", "b_w"], ["a8"], name="proj_w_bias"),
          helper.make_node("Transpose", ["a8"], ["a9"], name="back_2", perm=[0, 3, 1, 2]),
          helper.make_node("ReduceMean", ["a9"], ["y"], name="mean", axes=[2, 3], keepdims=0)]
    used = {i for node in n for i in node.input}
    return _model(n, inputs, [_vi("y", [1, h])], [i for i in inits if i.name in used])


CASES += [Case(f"talking_heads_{s}_h{h}", "pool: CaiT's talking heads (a Linear over the heads between Transposes)", lambda s=s, h=h: talking_heads(h, s), ("rk3566", "rk3588"))
          for s, h in (("product", 4), ("product", 16), ("conv", 4), ("conv", 12))]


# ---- pool (issue 27, rk3566 tuning part): a joint q/k/v projection the toolkit does not split --------


def factorized_attention(tokens: int = 17, heads: int = 2, head: int = 32, norm: str = "softmax_k") -> onnx.ModelProto:
    """A joint q/k/v projection split into heads (Reshape [1, T, 3, H, D], Transpose [2, 0, 3, 1, 4],
    three Gathers) whose k is not taken straight into a product. norm "softmax_k": CoaT's factorised
    attention (k.softmax(dim=2), k^T @ v, q @ (k^T v)); "cosine": Swin-V2's cosine attention (q and k
    divided by their L2 norm over D, then q @ k^T, Softmax, @ v)."""
    rng = np.random.default_rng(27)
    c = heads * head
    inits = [_const("w_qkv", _weights(rng, c, 3 * c)), _const("qkv_shape", np.array([1, tokens, 3, heads, head], np.int64)),
             _const("merged", np.array([1, tokens, c], np.int64)), _const("w_o", _weights(rng, c, c)), _const("scale", np.array(head**-0.5, np.float32)),
             _const("last", np.array([-1], np.int64))]
    inits += [_const(f"i_{p}", np.array(i, np.int64)) for i, p in enumerate("qkv")]
    n = [helper.make_node("MatMul", ["x", "w_qkv"], ["qkv0"], name="qkv_matmul"),
         helper.make_node("Reshape", ["qkv0", "qkv_shape"], ["qkv5"], name="qkv_split_heads"),
         helper.make_node("Transpose", ["qkv5"], ["qkvt"], name="qkv_heads_transpose", perm=[2, 0, 3, 1, 4])]
    n += [helper.make_node("Gather", ["qkvt", f"i_{p}"], [f"{p}h"], name=f"{p}_unbind", axis=0) for p in "qkv"]
    if norm == "softmax_k":
        n += [helper.make_node("Softmax", ["kh"], ["ks"], name="k_softmax", axis=2),
              helper.make_node("Transpose", ["ks"], ["kt"], name="k_transpose", perm=[0, 1, 3, 2]),
              helper.make_node("MatMul", ["kt", "vh"], ["kv"], name="k_v"),
              helper.make_node("MatMul", ["qh", "kv"], ["ctx0"], name="q_kv"),
              helper.make_node("Mul", ["ctx0", "scale"], ["ctx"], name="ctx_scale")]
    else:
        for p in "qk":
            n += [helper.make_node("ReduceL2", [f"{p}h"], [f"{p}n"], name=f"{p}_norm", axes=[-1], keepdims=1),
                  helper.make_node("Div", [f"{p}h", f"{p}n"], [f"{p}u"], name=f"{p}_unit")]
        n += [helper.make_node("Transpose", ["ku"], ["kt"], name="k_transpose", perm=[0, 1, 3, 2]),
              helper.make_node("MatMul", ["qu", "kt"], ["s"], name="scores"),
              helper.make_node("Softmax", ["s"], ["a"], name="softmax", axis=-1),
              helper.make_node("MatMul", ["a", "vh"], ["ctx"], name="context")]
    n += [helper.make_node("Transpose", ["ctx"], ["ctxt"], name="merge_transpose", perm=[0, 2, 1, 3]),
          helper.make_node("Reshape", ["ctxt", "merged"], ["mg"], name="merge_heads"),
          helper.make_node("MatMul", ["mg", "w_o"], ["o"], name="out_proj"),
          helper.make_node("ReduceMean", ["o"], ["y"], name="token_mean", axes=[1], keepdims=0)]
    used = {i for node in n for i in node.input}
    return _model(n, [_vi("x", [1, tokens, c])], [_vi("y", [1, c])], [i for i in inits if i.name in used])


CASES += [Case(f"factorized_attention_{m}_t{t}", "pool: a joint q/k/v projection whose k is not taken straight into a product", lambda m=m, t=t: factorized_attention(t, norm=m), ("rk3566", "rk3588"))
          for m, t in (("softmax_k", 17), ("softmax_k", 16), ("cosine", 16))]


# ---- pool: a product by zeros (timm's MLP-Mixer family initialises its classifier to zero) ----


def zero_weight_head(variant: str, classes: int = 10) -> onnx.ModelProto:
    """Conv, Relu, GlobalAveragePool, Flatten, then a classifier whose weights are all zero (as
    timm's mlp_mixer.py initialises ResMLP's, gMLP's and MLP-Mixer's head): a Gemm (bias zero, or
    random: "gemm_bias"), a MatMul, a 1x1 Conv on the map, a Mul by zeros; "two_outputs": the zero
    Gemm's result and the pooled features; "tiny": weights of standard deviation 1e-6, not zero."""
    rng = np.random.default_rng(27)
    c = 16
    inits = [_const("cw", _weights(rng, c, 3, 3, 3)), _const("cb", np.zeros(c, np.float32))]
    n = [helper.make_node("Conv", ["x", "cw", "cb"], ["c"], name="stem", pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["c"], ["r"], name="stem_relu")]
    zeros = np.zeros((classes, c), np.float32)
    bias = (rng.standard_normal(classes) if variant == "gemm_bias" else np.zeros(classes)).astype(np.float32)
    outputs = [_vi("y", [1, classes, 8, 8] if variant == "conv" else [1, c if variant == "mul" else classes])]
    if variant == "conv":
        inits += [_const("w", zeros.reshape(classes, c, 1, 1)), _const("b", bias)]
        n.append(helper.make_node("Conv", ["r", "w", "b"], ["y"], name="head"))
        return _model(n, [_vi("x", [1, 3, 8, 8])], outputs, inits)
    n += [helper.make_node("GlobalAveragePool", ["r"], ["g"], name="pool"), helper.make_node("Flatten", ["g"], ["f"], name="flatten")]
    if variant == "matmul":
        inits.append(_const("w", zeros.T.copy()))
        n.append(helper.make_node("MatMul", ["f", "w"], ["y"], name="head"))
    elif variant == "mul":
        inits.append(_const("w", np.zeros((1, c), np.float32)))
        n.append(helper.make_node("Mul", ["f", "w"], ["y"], name="head"))
    else:
        weights = (rng.standard_normal((classes, c)) * 1e-6).astype(np.float32) if variant == "tiny" else zeros
        inits += [_const("w", weights), _const("b", bias)]
        n.append(helper.make_node("Gemm", ["f", "w", "b"], ["y"], name="head", transB=1))
    if variant == "two_outputs":
        outputs.append(_vi("f", [1, c]))
    return _model(n, [_vi("x", [1, 3, 8, 8])], outputs, inits)


CASES += [Case(f"zero_weight_head_{v}", "pool: a classifier initialised to zero (timm's MLP-Mixer family)", lambda v=v: zero_weight_head(v), ("rk3588", "rk3566"))
          for v in ("gemm", "gemm_bias", "matmul", "conv", "mul", "two_outputs", "tiny")]


def flattened_levels(channels: int = 4, sides: tuple = (20, 10, 5), base: int = 20, tail: str = "sigmoid") -> onnx.ModelProto:
    """An anchor-free detection head's levels as Ultralytics exports them: per level a Conv of
    `channels` outputs on a side x side map (a Conv of stride base/side on one [1, 8, base, base]
    input), a Reshape [1, C, H, W] -> [1, C, H*W], and one Concat of the levels along the last axis.
    tail "sigmoid": then a Sigmoid, the model's output; "slices": the box decode's two Slices of
    the channels (halves) subtracted, then a Concat of both along the channels (the model's output)."""
    rng = np.random.default_rng(27)
    inits, n, pieces = [], [], []
    for i, side in enumerate(sides):
        h, w = side if isinstance(side, tuple) else (side, side)  # a map of h x w
        stride = [base // h, base // w]
        inits += [_const(f"w{i}", _weights(rng, channels, 8, *stride)), _const(f"s{i}", np.array([1, channels, h * w], np.int64))]
        n += [helper.make_node("Conv", ["x", f"w{i}"], [f"m{i}"], name=f"level{i}_conv", kernel_shape=stride, strides=stride),
              helper.make_node("Reshape", [f"m{i}", f"s{i}"], [f"f{i}"], name=f"level{i}_flatten")]
        pieces.append(f"f{i}")
    cells = sum(s[0] * s[1] if isinstance(s, tuple) else s * s for s in sides)
    n.append(helper.make_node("Concat", pieces, ["cat"], name="levels_concat", axis=-1))
    if tail == "sigmoid":
        n.append(helper.make_node("Sigmoid", ["cat"], ["y"], name="sigmoid"))
        return _model(n, [_vi("x", [1, 8, base, base])], [_vi("y", [1, channels, cells])], inits)
    half = channels // 2
    inits += [_const("z", np.array([0], np.int64)), _const("h", np.array([half], np.int64)), _const("e", np.array([2 * half], np.int64)), _const("ax", np.array([1], np.int64))]
    n += [helper.make_node("Slice", ["cat", "z", "h", "ax"], ["lt"], name="slice_lt"),
          helper.make_node("Slice", ["cat", "h", "e", "ax"], ["rb"], name="slice_rb"),
          helper.make_node("Sub", ["rb", "lt"], ["wh"], name="sub"),
          helper.make_node("Add", ["rb", "lt"], ["c2"], name="add"),
          helper.make_node("Concat", ["c2", "wh"], ["y"], name="box_concat", axis=1)]
    return _model(n, [_vi("x", [1, 8, base, base])], [_vi("y", [1, 2 * half, cells])], inits)


# Not recorded, since the audit does not model them: the "sigmoid" tail (a 3-D model output right
# after the Concat), where the toolkit puts the last level's Reshape on the CPU too (RK3588 and
# RK3566, C = 4, 16, 80), and (4, (20, (5, 1), 5), 20), whose 5x5 level ran on the CPU on RK3588
# (other 5x5 levels: NPU), not explained.
LEVEL_FORMS = ((4, (20, 10, 5), 20), (8, (20, 10, 5), 20), (16, (20, 10, 5), 20), (24, (20, 10, 5), 20), (4, (10, 20, 5), 20), (4, (10, 5, 20), 20), (4, (12, 6, 3), 12), (4, (20, 5), 20), (4, (20, 5, 10), 20), (4, (20, (5, 4), 5), 20), (4, (12, (4, 6), 3), 12), (4, (12, (2, 3), 3), 12))
CASES += [Case(f"levels_c{c}_{'_'.join(f'{x[0]}x{x[1]}' if isinstance(x, tuple) else str(x) for x in s)}", "pool: a detection head's flattened levels concatenated along the last axis", lambda c=c, s=s, b=b: flattened_levels(c, s, b, "slices"), ("rk3588", "rk3566"))
          for c, s, b in LEVEL_FORMS]


# ---- pool: AveragePool whose padding is as large as its input (Inception-v3's pools at 64x64) ----

# (name, input height and width, kernel, pads [top, left, bottom, right], stride); count_include_pad=1
AVERAGE_POOL_PADS = (
    ("1x1_k3p1", (1, 1), 3, (1, 1, 1, 1), 1), ("1x1_k3p1_s2", (1, 1), 3, (1, 1, 1, 1), 2), ("1x4_k3p1", (1, 4), 3, (1, 1, 1, 1), 1),
    ("1x1_k2_end1", (1, 1), 2, (0, 0, 1, 1), 1), ("1x1_k2_begin1", (1, 1), 2, (1, 1, 0, 0), 1), ("2x2_k5p2", (2, 2), 5, (2, 2, 2, 2), 1),
    ("2x2_k3_top2", (2, 2), 3, (2, 1, 0, 1), 1), ("2x2_k3p1", (2, 2), 3, (1, 1, 1, 1), 1), ("2x2_k4p1", (2, 2), 4, (1, 1, 1, 1), 1),
    ("2x2_k3_end1", (2, 2), 3, (0, 0, 1, 1), 1), ("3x3_k5p2_s2", (3, 3), 5, (2, 2, 2, 2), 2), ("3x3_k3_end2", (3, 3), 3, (0, 0, 2, 2), 1),
    ("4x4_k7p3", (4, 4), 7, (3, 3, 3, 3), 1), ("2x2_k3_p1212", (2, 2), 3, (1, 2, 1, 2), 1), ("2x2_k3_p1122", (2, 2), 3, (1, 1, 2, 2), 1),
    ("4x1_k3p1", (4, 1), 3, (1, 1, 1, 1), 1), ("2x4_k3_p2020", (2, 4), 3, (2, 0, 2, 0), 1), ("3x2_k3_right1", (3, 2), 3, (0, 0, 0, 1), 1),
    ("2x3_k3_bottom1", (2, 3), 3, (0, 0, 1, 0), 1), ("4x4_k5_end1", (4, 4), 5, (0, 0, 1, 1), 1), ("4x4_k3_end1", (4, 4), 3, (0, 0, 1, 1), 1),
)


def average_pool_pads(channels: int = 16) -> onnx.ModelProto:
    """Independent AveragePools (count_include_pad=1), one per AVERAGE_POOL_PADS entry, each on
    its own input: one conversion places them all."""
    nodes, inputs, outputs = [], [], []
    for name, (h, w), k, pads, stride in AVERAGE_POOL_PADS:
        out_h = (h + pads[0] + pads[2] - k) // stride + 1
        out_w = (w + pads[1] + pads[3] - k) // stride + 1
        inputs.append(_vi(f"x_{name}", [1, channels, h, w]))
        outputs.append(_vi(f"y_{name}", [1, channels, out_h, out_w]))
        nodes.append(helper.make_node("AveragePool", [f"x_{name}"], [f"y_{name}"], name=f"pool_{name}", kernel_shape=[k, k],
                                      pads=list(pads), strides=[stride, stride], count_include_pad=1))
    return _model(nodes, inputs, outputs)


CASES.append(Case("average_pool_pads", "pool: AveragePool padded as wide as its input", average_pool_pads, ("rk3588", "rk3566")))


def map_attention(side: int = 2, heads: int = 2, head: int = 32, style: str = "efficientformer") -> onnx.ModelProto:
    """Attention over a feature map's positions, q, k and v each a 1x1 Conv of the map
    [1, 32, side, side] (T = side*side tokens). style "efficientformer" (EfficientFormerV2's
    attention): each Reshape [1, H, D, T]; q and v Transposed [0, 1, 3, 2] to [1, H, T, D], k taken
    as it is; q @ k, Softmax, @ v, Transpose [0, 1, 3, 2] and Reshape back to the map. style "mqa"
    (MobileNetV4's multi-query attention): q Reshape [1, H, D, T], Transpose [0, 1, 3, 2]; k and v one
    head each, Reshape [1, D, T], Transpose [0, 2, 1], Unsqueeze(1), k transposed again [0, 1, 3, 2];
    the product's heads Transposed [0, 2, 1, 3], Reshape [1, side, side, H*D], Transpose to the map;
    "mqa4": as "mqa" with k and v Reshaped straight to [1, 1, D, T] (no Unsqueeze), v Transposed
    [0, 1, 3, 2]."""
    rng = np.random.default_rng(27)
    c, t = heads * head, side * side
    kv = head if style in ("mqa", "mqa4") else c
    inits = [_const("wq", _weights(rng, c, 32, 1, 1)), _const("wk", _weights(rng, kv, 32, 1, 1)), _const("wv", _weights(rng, kv, 32, 1, 1)),
             _const("wo", _weights(rng, 32, c, 1, 1)), _const("heads", np.array([1, heads, head, t], np.int64)), _const("one", np.array([1, head, t], np.int64)),
             _const("ax1", np.array([1], np.int64)), _const("scale", np.array(head**-0.5, np.float32))]
    n = [helper.make_node("Conv", ["x", f"w{p}"], [f"{p}m"], name=f"{p}_conv", kernel_shape=[1, 1]) for p in "qkv"]
    n += [helper.make_node("Reshape", ["qm", "heads"], ["q4"], name="q_split"),
          helper.make_node("Transpose", ["q4"], ["qt"], name="q_transpose", perm=[0, 1, 3, 2]),
          helper.make_node("Mul", ["qt", "scale"], ["qs"], name="q_scale")]
    if style == "mqa4":  # the multi-query form with k and v made 4-D by their Reshape, no Unsqueeze
        inits.append(_const("one4", np.array([1, 1, head, t], np.int64)))
        n += [helper.make_node("Reshape", ["km", "one4"], ["kk"], name="k_flatten"),
              helper.make_node("Reshape", ["vm", "one4"], ["v4"], name="v_flatten"),
              helper.make_node("Transpose", ["v4"], ["vh"], name="v_transpose", perm=[0, 1, 3, 2])]
    if style == "mqa":
        for p in "kv":
            n += [helper.make_node("Reshape", [f"{p}m", "one"], [f"{p}3"], name=f"{p}_flatten"),
                  helper.make_node("Transpose", [f"{p}3"], [f"{p}t"], name=f"{p}_transpose", perm=[0, 2, 1]),
                  helper.make_node("Unsqueeze", [f"{p}t", "ax1"], [f"{p}h"], name=f"{p}_unsqueeze")]
        n.append(helper.make_node("Transpose", ["kh"], ["kk"], name="k_transpose_again", perm=[0, 1, 3, 2]))
    if style in ("mqa", "mqa4"):
        merged = [_const("nhwc", np.array([1, side, side, c], np.int64))]
        tail = [helper.make_node("Transpose", ["ctx"], ["ctxt"], name="merge_transpose", perm=[0, 2, 1, 3]),
                helper.make_node("Reshape", ["ctxt", "nhwc"], ["ctxm"], name="merge_heads"),
                helper.make_node("Transpose", ["ctxm"], ["ctxmap"], name="to_map", perm=[0, 3, 1, 2])]
    else:
        n += [helper.make_node("Reshape", ["km", "heads"], ["kk"], name="k_split"),
              helper.make_node("Reshape", ["vm", "heads"], ["v4"], name="v_split"),
              helper.make_node("Transpose", ["v4"], ["vh"], name="v_transpose", perm=[0, 1, 3, 2])]
        merged = [_const("map", np.array([1, c, side, side], np.int64))]
        tail = [helper.make_node("Transpose", ["ctx"], ["ctxt"], name="merge_transpose", perm=[0, 1, 3, 2]),
                helper.make_node("Reshape", ["ctxt", "map"], ["ctxmap"], name="merge_heads")]
    n += [helper.make_node("MatMul", ["qs", "kk"], ["s"], name="scores"),
          helper.make_node("Softmax", ["s"], ["a"], name="softmax", axis=-1),
          helper.make_node("MatMul", ["a", "vh"], ["ctx"], name="context"), *tail,
          helper.make_node("Conv", ["ctxmap", "wo"], ["o"], name="out_conv", kernel_shape=[1, 1]),
          helper.make_node("Add", ["o", "x"], ["y"], name="residual")]
    used = {i for node in n for i in node.input}
    return _model(n, [_vi("x", [1, 32, side, side])], [_vi("y", [1, 32, side, side])], [i for i in inits + merged if i.name in used])


# Not recorded, since the audit does not model it (rknn-toolkit2 2.5.0): "efficientformer" with 2
# heads of 12 on a 4x4 map, where RK3566 runs q, k and v's head splits and the merge on the CPU.
MAP_ATTENTION_FORMS = (("efficientformer", 2, 32, 2, ("rk3566", "rk3588")), ("efficientformer", 4, 32, 2, ("rk3566", "rk3588")),
                       ("efficientformer", 3, 32, 2, ("rk3566", "rk3588")), ("mqa", 2, 32, 2, ("rk3566", "rk3588")), ("mqa", 4, 32, 2, ("rk3566", "rk3588")),
                       ("mqa", 3, 32, 2, ("rk3566", "rk3588")), ("mqa", 4, 32, 1, ("rk3566", "rk3588")), ("mqa", 2, 32, 1, ("rk3566", "rk3588")),
                       ("mqa4", 4, 32, 2, ("rk3566", "rk3588")))
CASES += [Case(f"map_attention_{s}_t{side * side}_d{d}" + ("" if h == 2 else f"_h{h}"), "pool: attention over a feature map's positions (EfficientFormerV2, MobileNetV4)",
               lambda s=s, side=side, d=d, h=h: map_attention(side, h, d, s), chips) for s, side, d, h, chips in MAP_ATTENTION_FORMS]


def selective_kernel_attention(paths: int = 2, channels: int = 64, opset: int = 11) -> onnx.ModelProto:
    """timm's SelectiveKernelAttn at opset 11/12: the paths' features [1, P, C, H, W] summed and
    pooled, two 1x1 Convs to [1, P*C, 1, 1], a Reshape [1, P, C, 1, 1] and softmax(dim=1), which
    torch.onnx writes below opset 13 as Transpose [0, 4, 2, 3, 1], Softmax(axis=-1) and the same
    Transpose back; then the paths weighted (Mul) and summed (ReduceSum)."""
    rng = np.random.default_rng(27)
    inits = [_const("w_reduce", _weights(rng, 16, channels, 1, 1)), _const("w_select", _weights(rng, paths * channels, 16, 1, 1)),
             _const("attn_shape", np.array([1, paths, channels, 1, 1], np.int64))]
    n = [helper.make_node("ReduceSum", ["x"], ["s"], name="paths_sum", axes=[1], keepdims=0),
         helper.make_node("ReduceMean", ["s"], ["p"], name="pool", axes=[2, 3], keepdims=1),
         helper.make_node("Conv", ["p", "w_reduce"], ["r"], name="fc_reduce", kernel_shape=[1, 1]),
         helper.make_node("Relu", ["r"], ["rr"], name="relu"),
         helper.make_node("Conv", ["rr", "w_select"], ["a"], name="fc_select", kernel_shape=[1, 1]),
         helper.make_node("Reshape", ["a", "attn_shape"], ["a5"], name="attn_reshape"),
         helper.make_node("Transpose", ["a5"], ["at"], name="attn_transpose", perm=[0, 4, 2, 3, 1]),
         helper.make_node("Softmax", ["at"], ["sm"], name="softmax", axis=-1),
         helper.make_node("Transpose", ["sm"], ["w"], name="attn_transpose_back", perm=[0, 4, 2, 3, 1]),
         helper.make_node("Mul", ["x", "w"], ["xw"], name="weigh"),
         helper.make_node("ReduceSum", ["xw"], ["y"], name="select_sum", axes=[1], keepdims=0)]
    return _model(n, [_vi("x", [1, paths, channels, 8, 8])], [_vi("y", [1, channels, 8, 8])], inits, opset=opset)


CASES += [Case(f"sk_attention_p{p}_c{c}", "pool: softmax across selective-kernel paths, written below opset 13", lambda p=p, c=c: selective_kernel_attention(p, c), ("rk3566", "rk3588"))
          for p, c in ((2, 64), (3, 64), (2, 60), (2, 24))]


def broadcast_attention(between: str = "Softmax", heads: int = 2, tokens: int = 16, head: int = 32) -> onnx.ModelProto:
    """Multi-query attention from model inputs: q [1, H, T, D] @ k [1, 1, D, T] (k broadcast over the
    heads), then `between` (Softmax, or Relu), then @ v [1, 1, T, D]; each input through a Relu, the
    result a model output through a Relu."""
    nodes = [helper.make_node("Relu", [p], [f"r{p}"], name=f"relu_{p}") for p in "qkv"]
    nodes += [helper.make_node("MatMul", ["rq", "rk"], ["s"], name="scores"),
              helper.make_node(between, ["s"], ["a"], name="between", **({"axis": -1} if between == "Softmax" else {})),
              helper.make_node("MatMul", ["a", "rv"], ["ctx"], name="context"),
              helper.make_node("Relu", ["ctx"], ["y"], name="relu")]
    return _model(nodes, [_vi("q", [1, heads, tokens, head]), _vi("k", [1, 1, head, tokens]), _vi("v", [1, 1, tokens, head])], [_vi("y", [1, heads, tokens, head])])


CASES += [Case(f"broadcast_attention_{b.lower()}", "pool: multi-query attention, k and v broadcast over the heads", lambda b=b: broadcast_attention(b), ("rk3588",))
          for b in ("Softmax", "Relu")]


# ---- pool: a learnable affine block (bias 0) before a pooling or a classifier (timm's hgnetv2) ----


def affine_before_reader(reader: str) -> onnx.ModelProto:
    """Conv, Relu, then scale * x + 0 with the scale first as (1,) initializers (timm's hgnetv2
    learnable affine block at bias 0, scale 0.8944), read by `reader`: "gap" (GlobalAveragePool, the
    model's output), "gap_gemm" (GlobalAveragePool, Flatten, Gemm), "flatten_gemm" (on a 1x1 map:
    Flatten, Gemm), "maxpool" (a MaxPool, the model's output)."""
    rng = np.random.default_rng(31)
    side = 1 if reader == "flatten_gemm" else 4
    inits = [_const("w1", _weights(rng, 16, 3, side if side == 1 else 3, side if side == 1 else 3)), _const("scale", np.array([0.8944], np.float32)),
             _const("bias", np.array([0.0], np.float32)), _const("fc", _weights(rng, 10, 16)), _const("fc_b", _weights(rng, 10))]
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c"], name="conv1", pads=[0, 0, 0, 0] if side == 1 else [1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"], name="relu"),
             helper.make_node("Mul", ["scale", "r"], ["s"], name="lab_mul"), helper.make_node("Add", ["s", "bias"], ["a"], name="lab_add")]
    if reader == "maxpool":
        nodes.append(helper.make_node("MaxPool", ["a"], ["y"], name="pool", kernel_shape=[2, 2], strides=[2, 2]))
        return _model(nodes, [_vi("x", [1, 3, 4, 4])], [_vi("y", [1, 16, 2, 2])], inits[:3])
    if reader.startswith("gap"):
        nodes.append(helper.make_node("GlobalAveragePool", ["a"], ["g" if reader == "gap_gemm" else "y"], name="gap"))
        if reader == "gap":
            return _model(nodes, [_vi("x", [1, 3, 4, 4])], [_vi("y", [1, 16, 1, 1])], inits[:3])
    nodes += [helper.make_node("Flatten", ["g" if reader == "gap_gemm" else "a"], ["f"], name="flatten"),
              helper.make_node("Gemm", ["f", "fc", "fc_b"], ["y"], name="fc", transB=1)]
    return _model(nodes, [_vi("x", [1, 3, side if side == 1 else 4, side if side == 1 else 4])], [_vi("y", [1, 10])], inits)


CASES += [Case(f"affine_before_{r}", "pool: a * x + 0 read by a pooling or a classifier", lambda r=r: affine_before_reader(r), ("rk3588", "rk3566"))
          for r in ("gap", "gap_gemm", "flatten_gemm", "maxpool")]


# ---- pool: a per-channel layer scale written constant first, read by a residual Add ----


def layer_scale_first(variant: str, channels: int = 16) -> onnx.ModelProto:
    """Conv, Relu, then gamma * x with gamma a per-channel constant written first (transformers'
    PoolFormer: gamma [C, 1, 1] = 1e-5; XCiT's class-attention blocks: gamma [C] on tokens), added
    to the Conv's result (the residual), then a Conv. `variant`: "map_1e-5", "map_unit" (gamma 1),
    "map_second" (x * gamma, the constant second, as timm's LayerScale), "after_conv" and
    "after_linear" (gamma first, of a 1x1 Conv's result, or of a channels-last Linear's: torchvision's
    ConvNeXt), "tokens" ([1, 16, C] tokens, gamma [C] = 1, then MatMul)."""
    rng = np.random.default_rng(41)
    c = channels
    inits = [_const("w1", _weights(rng, c, 3, 3, 3)), _const("w2", _weights(rng, 4, c, 3, 3))]
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c"], name="conv1", pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c"], ["r"], name="relu")]
    if variant == "tokens":
        inits += [_const("gamma", np.ones(c, np.float32)), _const("shape", np.array([1, c, 16], np.int64)), _const("fc", _weights(rng, c, 8))]
        nodes += [helper.make_node("Reshape", ["c", "shape"], ["cf"], name="flatten_map"), helper.make_node("Transpose", ["cf"], ["t"], name="to_tokens", perm=[0, 2, 1]),
                  helper.make_node("Relu", ["t"], ["rt"], name="token_relu"),
                  helper.make_node("Mul", ["gamma", "rt"], ["s"], name="ls_mul"), helper.make_node("Add", ["t", "s"], ["a"], name="ls_add"),
                  helper.make_node("MatMul", ["a", "fc"], ["y"], name="fc")]
        return _model(nodes, [_vi("x", [1, 3, 4, 4])], [_vi("y", [1, 16, 8])], inits)
    gamma = np.full((c, 1, 1), 1.0 if variant == "map_unit" else 1e-5, np.float32)
    inits.append(_const("gamma", gamma))
    data = "r"
    if variant == "after_conv":  # the scale of a Conv's result, as after ConvNeXt's last projection
        inits.append(_const("wp", _weights(rng, c, c, 1, 1)))
        nodes.append(helper.make_node("Conv", ["r", "wp"], ["p"], name="proj"))
        data = "p"
    elif variant == "after_linear":  # channels last: Linear (MatMul + bias Add), back to channels first
        inits += [_const("fc", _weights(rng, c, c)), _const("fc_b", _weights(rng, c))]
        nodes += [helper.make_node("Transpose", ["r"], ["rt"], name="to_last", perm=[0, 2, 3, 1]), helper.make_node("MatMul", ["rt", "fc"], ["m"], name="fc"),
                  helper.make_node("Add", ["m", "fc_b"], ["mb"], name="fc_bias"), helper.make_node("Transpose", ["mb"], ["p"], name="to_first", perm=[0, 3, 1, 2])]
        data = "p"
    operands = [data, "gamma"] if variant == "map_second" else ["gamma", data]
    nodes += [helper.make_node("Mul", operands, ["s"], name="ls_mul"), helper.make_node("Add", ["c", "s"], ["a"], name="ls_add"),
              helper.make_node("Conv", ["a", "w2"], ["y"], name="conv2", pads=[1, 1, 1, 1])]
    return _model(nodes, [_vi("x", [1, 3, 8, 8])], [_vi("y", [1, 4, 8, 8])], inits)


CASES += [Case(f"layer_scale_{v}", "pool: a per-channel layer scale, constant first, read by a residual Add", lambda v=v: layer_scale_first(v), ("rk3588", "rk3566"))
          for v in ("map_1e-5", "map_unit", "map_second", "after_conv", "after_linear")]
# Not recorded: "tokens" (its gamma * x is float on both chips, as the audit says, but the toolkit
# runs the tokens' Transpose on the NPU on RK3566 and the MatMul on the NPU on RK3588 where the
# audit says CPU: other mechanisms, not explained).


def patch_unfold(channels: int = 64, side: int = 8, patch: int = 2) -> onnx.ModelProto:
    """MobileViT-v2's unfolding of a map into patches and folding back, as torch.onnx writes it:
    a 1x1 Conv, Reshape [1, C, H/p, p, W/p, p], Transpose [0, 1, 3, 5, 2, 4], Reshape
    [1, C, p*p, N] (N = H*W/p^2 patches), a 1x1 Conv on that, Reshape [1, C, p, p, H/p, W/p],
    Transpose [0, 1, 4, 2, 5, 3], Reshape [1, C, H, W] and a 1x1 Conv."""
    rng = np.random.default_rng(27)
    g, c, n = side // patch, channels, (side // patch) ** 2
    inits = [_const(f"w{i}", _weights(rng, c, c, 1, 1)) for i in range(3)]
    inits += [_const("s6", np.array([1, c, g, patch, g, patch], np.int64)), _const("s4", np.array([1, c, patch * patch, n], np.int64)),
              _const("b6", np.array([1, c, patch, patch, g, g], np.int64)), _const("m4", np.array([1, c, side, side], np.int64))]
    nodes = [helper.make_node("Conv", ["x", "w0"], ["a"], name="conv_in", kernel_shape=[1, 1]),
             helper.make_node("Reshape", ["a", "s6"], ["a6"], name="unfold_split"),
             helper.make_node("Transpose", ["a6"], ["at"], name="unfold_transpose", perm=[0, 1, 3, 5, 2, 4]),
             helper.make_node("Reshape", ["at", "s4"], ["p"], name="unfold_merge"),
             helper.make_node("Conv", ["p", "w1"], ["q"], name="conv_patches", kernel_shape=[1, 1]),
             helper.make_node("Reshape", ["q", "b6"], ["q6"], name="fold_split"),
             helper.make_node("Transpose", ["q6"], ["qt"], name="fold_transpose", perm=[0, 1, 4, 2, 5, 3]),
             helper.make_node("Reshape", ["qt", "m4"], ["m"], name="fold_merge"),
             helper.make_node("Conv", ["m", "w2"], ["y"], name="conv_out", kernel_shape=[1, 1])]
    return _model(nodes, [_vi("x", [1, c, side, side])], [_vi("y", [1, c, side, side])], inits)


CASES += [Case(f"patch_unfold_c{c}_s{s}", "pool: a map unfolded into patches and folded back (MobileViT-v2)", lambda c=c, s=s: patch_unfold(c, s), ("rk3566", "rk3588"))
          for c, s in ((64, 8), (24, 4), (96, 4))]


# ---- pool: a cubic Resize of a run-time tensor (timm's CrossViT resizes its input so) ----


def cubic_resize(coords: str, after_conv: bool = False, side: int = 96) -> onnx.ModelProto:
    """[1, 3, 64, 64] (or a Conv's [1, 8, 64, 64]) resized to side x side with mode cubic and
    `coords`, then a Conv of stride 2."""
    rng = np.random.default_rng(51)
    c = 8 if after_conv else 3
    inits = [_const("roi", np.zeros(0, np.float32)), _const("scales", np.zeros(0, np.float32)), _const("sizes", np.array([1, c, side, side], np.int64)),
             _const("w", _weights(rng, 8, c, 3, 3))]
    nodes, src = [], "x"
    if after_conv:
        inits.append(_const("w0", _weights(rng, 8, 3, 3, 3)))
        nodes.append(helper.make_node("Conv", ["x", "w0"], ["c0"], name="conv0", pads=[1, 1, 1, 1]))
        src = "c0"
    nodes += [helper.make_node("Resize", [src, "roi", "scales", "sizes"], ["r"], name="resize", mode="cubic", coordinate_transformation_mode=coords),
              helper.make_node("Conv", ["r", "w"], ["y"], name="conv", strides=[2, 2])]
    out = (side - 3) // 2 + 1
    return _model(nodes, [_vi("x", [1, 3, 64, 64])], [_vi("y", [1, 8, out, out])], inits)


CASES += [Case(f"cubic_resize_{name}", "pool: a cubic Resize of a run-time tensor", build, ("rk3588", "rk3566")) for name, build in (
    ("half_pixel", lambda: cubic_resize("half_pixel")), ("asymmetric", lambda: cubic_resize("asymmetric")),
    ("align_corners", lambda: cubic_resize("align_corners")), ("half_pixel_after_conv", lambda: cubic_resize("half_pixel", after_conv=True)))]


# ---- pool: MobileViT(-v1)'s unfolding into patches through the batch axis, then heads -------------


def _prefixed(p: str):
    """A node maker for one packed case: the node, its output and every input not already named
    with the case's prefix `p` get it."""
    def node(op, ins, name, **kw):
        return helper.make_node(op, [i if i.startswith(p) else p + i for i in ins], [p + name], name=p + name, **kw)
    return node


def _tokens_attention(p: str, node, tokens: str, c: int, n: int, pp: int, heads: int, rng, scale_both: bool = False) -> tuple[list, list, str]:
    """Attention over the n patches of each of the pp pixel positions (a batch of pp), as timm's
    MobileViT writes it: a joint q/k/v Linear, Reshape [pp, n, 3, heads, d], Transpose
    [2, 0, 3, 1, 4], Split and Squeeze, q scaled (`scale_both`: q and the transposed k each by the
    scale's square root, as scaled_dot_product_attention's export does), k Transposed
    [0, 1, 3, 2], Softmax, the heads swapped back [0, 2, 1, 3] and merged. Returns nodes,
    initializers and the output name."""
    d = c // heads
    inits = [_const(p + "w_qkv", _weights(rng, c, 3 * c)), _const(p + "scale", np.array(d ** (-0.25 if scale_both else -0.5), np.float32)),
             _const(p + "s_heads", np.array([pp, n, 3, heads, d], np.int64)), _const(p + "s_merge", np.array([pp, n, c], np.int64)),
             _const(p + "axis0", np.array([0], np.int64))]
    nodes = [node("MatMul", [tokens, "w_qkv"], "qkv"),
             node("Reshape", ["qkv", "s_heads"], "heads_split"),
             node("Transpose", ["heads_split"], "heads_stack", perm=[2, 0, 3, 1, 4]),
             helper.make_node("Split", [p + "heads_stack"], [p + "q5", p + "k5", p + "v5"], name=p + "split", axis=0)]
    nodes += [helper.make_node("Squeeze", [p + part + "5", p + "axis0"], [p + part], name=p + part + "_squeeze") for part in ("q", "k", "v")]
    nodes += [node("Mul", ["q", "scale"], "q_scaled"),
              node("Transpose", ["k"], "k_t", perm=[0, 1, 3, 2])]
    if scale_both:
        nodes.append(node("Mul", ["k_t", "scale"], "k_scaled"))
    nodes += [node("MatMul", ["q_scaled", "k_scaled" if scale_both else "k_t"], "scores"),
              node("Softmax", ["scores"], "attn", axis=-1),
              node("MatMul", ["attn", "v"], "context"),
              node("Transpose", ["context"], "heads_swap", perm=[0, 2, 1, 3]),
              node("Reshape", ["heads_swap", "s_merge"], "heads_merge")]
    return nodes, inits, "heads_merge"


def _patch_unfold_v1(prefix: str, rng, c: int, side: int, patch: int, heads: int) -> tuple[list, list, str, str]:
    """One branch: timm's and transformers' MobileViT unfolding as torch.onnx writes it (a 1x1 Conv,
    Reshape [C*H/p, p, W/p, p] (the channels and rows go to the batch axis), Transpose [0, 2, 1, 3],
    Reshape [1, C, N, p*p], Transpose [0, 3, 2, 1], Reshape [p*p, N, C]), attention over the N
    patches (heads > 0, _tokens_attention) and a Linear, then the fold back (Reshape
    [1, p*p, N, C], Transpose [0, 3, 2, 1], Reshape [C*H/p, W/p, p, p], Transpose [0, 2, 1, 3],
    Reshape [1, C, H, W]) and a 1x1 Conv. Returns nodes, initializers, the input and output names."""
    g, pp, p = side // patch, patch * patch, prefix
    n = g * g
    k = lambda name, v: _const(p + name, np.array(v, np.int64))  # noqa: E731
    inits = [_const(p + "w_in", _weights(rng, c, c, 1, 1)), _const(p + "w_out", _weights(rng, c, c, 1, 1)), _const(p + "w_proj", _weights(rng, c, c)),
             k("s_unfold", [c * g, patch, g, patch]), k("s_patches", [1, c, n, pp]), k("s_tokens", [pp, n, c]),
             k("s_back", [1, pp, n, c]), k("s_fold", [c * g, g, patch, patch]), k("s_map", [1, c, side, side])]
    node = _prefixed(p)
    nodes = [node("Conv", ["x", "w_in"], "conv_in", kernel_shape=[1, 1]),
             node("Reshape", ["conv_in", "s_unfold"], "unfold_rows"),
             node("Transpose", ["unfold_rows"], "unfold_swap", perm=[0, 2, 1, 3]),
             node("Reshape", ["unfold_swap", "s_patches"], "unfold_patches"),
             node("Transpose", ["unfold_patches"], "unfold_pixels", perm=[0, 3, 2, 1]),
             node("Reshape", ["unfold_pixels", "s_tokens"], "unfold_tokens")]
    tokens = "unfold_tokens"
    if heads:
        more, more_inits, tokens = _tokens_attention(p, node, tokens, c, n, pp, heads, rng)
        nodes, inits = nodes + more, inits + more_inits
    nodes += [node("MatMul", [tokens, "w_proj"], "proj"),
              node("Reshape", ["proj", "s_back"], "fold_tokens"),
              node("Transpose", ["fold_tokens"], "fold_pixels", perm=[0, 3, 2, 1]),
              node("Reshape", ["fold_pixels", "s_fold"], "fold_rows"),
              node("Transpose", ["fold_rows"], "fold_swap", perm=[0, 2, 1, 3]),
              node("Reshape", ["fold_swap", "s_map"], "fold_map"),
              node("Conv", ["fold_map", "w_out"], "y", kernel_shape=[1, 1])]
    return nodes, inits, p + "x", p + "y"


def patch_unfold_v1(variants: tuple) -> onnx.ModelProto:
    """Independent MobileViT unfoldings ((channels, side, patch, heads) each; heads 0: no attention)
    packed into one model, one input and one output each, so one conversion gives all their placements."""
    rng = np.random.default_rng(27)
    nodes, inits, inputs, outputs = [], [], [], []
    for c, side, patch, heads in variants:
        n, i, x, y = _patch_unfold_v1(f"c{c}s{side}p{patch}h{heads}_", rng, c, side, patch, heads)
        nodes, inits = nodes + n, inits + i
        inputs.append(_vi(x, [1, c, side, side]))
        outputs.append(_vi(y, [1, c, side, side]))
    return _model(nodes, inputs, outputs, inits)


# The unfolding and fold alone (a Linear between): the map's width, the patches, the patch size.
PATCH_UNFOLD_V1_PACKS = {
    "sizes": ((64, 8, 2, 0), (80, 4, 2, 0), (96, 2, 2, 0), (32, 8, 2, 0)),
    "widths": ((80, 8, 2, 0), (64, 4, 2, 0), (40, 8, 2, 0), (96, 4, 2, 0), (24, 6, 2, 0), (64, 4, 4, 0)),
    "patches": ((64, 10, 2, 0), (64, 12, 2, 0), (32, 16, 2, 0), (32, 12, 2, 0)),
    "patch4": ((64, 16, 4, 0), (32, 32, 4, 0), (64, 8, 4, 0)),
    "attention": ((96, 2, 2, 4), (80, 2, 2, 4), (128, 2, 2, 4), (64, 4, 4, 4), (96, 4, 2, 4), (64, 8, 2, 4)),
}
# "attention" (MobileViT's whole block) is recorded on RK3566 only. On RK3588 the toolkit runs the
# heads' merge Reshape on the CPU where one patch token is left (2x2 map, 2x2 patches) with heads of
# 20 or 24 (NPU with 16 or 32, or 4 tokens), as in MobileViT-XXS's last stage (pool, tuning), but
# batched_attention's 4 x 1 tokens, 4 heads of 24 (the same attention, from a model input) keeps it
# on the NPU: not explained, not modelled.
CASES += [Case(f"patch_unfold_v1_{name}", "pool: a map unfolded into patches through the batch axis and folded back (MobileViT)",
               lambda v=v: patch_unfold_v1(v), ("rk3566",) if name == "attention" else ("rk3566", "rk3588")) for name, v in PATCH_UNFOLD_V1_PACKS.items()]


def batched_attention(variants: tuple) -> onnx.ModelProto:
    """Independent attention blocks over a batch of token sets ((batch, tokens, heads, head size)
    each: MobileViT's attention over the patches of each pixel position, _tokens_attention),
    between two Linears, packed into one model, one input [batch, tokens, C] and output each."""
    rng = np.random.default_rng(27)
    nodes, inits, inputs, outputs = [], [], [], []
    for b, n, heads, d, *both in variants:
        p, c = f"b{b}n{n}h{heads}d{d}{'s' if both else ''}_", heads * d
        node = _prefixed(p)
        more, more_inits, tokens = _tokens_attention(p, node, "lin_in", c, n, b, heads, rng, scale_both=bool(both))
        nodes += [node("MatMul", ["x", "w_in"], "lin_in"), *more, node("MatMul", [tokens, "w_out"], "y")]
        inits += [_const(p + "w_in", _weights(rng, c, c)), _const(p + "w_out", _weights(rng, c, c)), *more_inits]
        inputs.append(_vi(p + "x", [b, n, c]))
        outputs.append(_vi(p + "y", [b, n, c]))
    return _model(nodes, inputs, outputs, inits)


BATCHED_ATTENTION_PACKS = {
    "heads": ((4, 4, 4, 20), (4, 16, 4, 20), (4, 16, 4, 16), (1, 16, 4, 20), (4, 9, 2, 16), (4, 1, 4, 24)),
    "tokens": ((4, 8, 2, 16), (4, 12, 2, 16), (2, 16, 2, 24), (1, 16, 4, 12), (4, 16, 4, 12), (4, 1, 4, 16)),
    "scaled": ((4, 4, 4, 20, "both"), (4, 16, 4, 16, "both"), (2, 9, 2, 16, "both"), (2, 16, 4, 20), (9, 49, 2, 16), (9, 16, 2, 16, "both")),
    "windows": ((64, 4, 2, 32), (16, 4, 2, 32), (4, 4, 2, 32), (64, 16, 2, 32), (16, 9, 2, 32), (4, 4, 2, 16), (16, 49, 2, 32)),
    "windows3": ((17, 4, 2, 32), (20, 4, 2, 32), (24, 4, 2, 32), (28, 4, 2, 32), (30, 4, 2, 32), (20, 16, 2, 32), (24, 9, 2, 32)),
    "windows2": ((32, 4, 2, 32), (48, 4, 2, 32), (33, 4, 2, 32), (128, 4, 2, 32), (64, 4, 2, 16), (64, 4, 4, 32), (31, 4, 2, 32), (64, 1, 2, 32)),
}
# (batch, tokens, heads, head size[, q and k both scaled]). Not recorded: 2 heads of 12 (C = 24) on
# RK3588, where the toolkit runs the last Linear (a 3-D model output 24 wide) on the NPU and the
# audit says CPU (unaligned_3d_model_output, another mechanism: not studied here).
CASES += [Case(f"batched_attention_{name}", "pool: attention over a batch of token sets (MobileViT's patches of each pixel position)",
               lambda v=v: batched_attention(v), ("rk3566", "rk3588")) for name, v in BATCHED_ATTENTION_PACKS.items()]


def subsample_pack(variants: tuple) -> onnx.ModelProto:
    """LeViT's subsampled queries, (side, channels, step) each, packed one input and output each: a
    Linear on [1, side*side, C] tokens, Reshape to the [1, side, side, C] grid, Slice of the rows and
    of the columns with `step` (x[:, ::step, ::step], INT64_MAX as the end), Reshape back to tokens
    [1, -1, C], a Linear."""
    rng = np.random.default_rng(16)
    k = _Constants("tensor")
    big, nodes, inits, inputs, outputs = 1 << 62, [], [], [], []
    for side, ch, step in variants:
        p, kept = f"s{side}c{ch}t{step}_", len(range(0, side, step))
        nodes += [helper.make_node("MatMul", [p + "x", p + "w1"], [p + "t"], name=p + "proj"),
                  helper.make_node("Reshape", [p + "t", k([1, side, side, ch])], [p + "g"], name=p + "to_grid"),
                  helper.make_node("Slice", [p + "g", k([0]), k([big]), k([1]), k([step])], [p + "r"], name=p + "rows"),
                  helper.make_node("Slice", [p + "r", k([0]), k([big]), k([2]), k([step])], [p + "rc"], name=p + "cols"),
                  helper.make_node("Reshape", [p + "rc", k([1, -1, ch])], [p + "q"], name=p + "to_tokens"),
                  helper.make_node("MatMul", [p + "q", p + "w2"], [p + "y"], name=p + "out")]
        inits += [_const(p + "w1", _weights(rng, ch, ch)), _const(p + "w2", _weights(rng, ch, ch))]
        inputs.append(_vi(p + "x", [1, side * side, ch]))
        outputs.append(_vi(p + "y", [1, kept * kept, ch]))
    return _model(k.nodes + nodes, inputs, outputs, inits)


SUBSAMPLE_PACKS = {
    "sides": ((2, 32, 2), (4, 32, 2), (3, 32, 2), (6, 32, 2), (8, 32, 2), (2, 128, 2), (4, 128, 2), (7, 64, 2)),
    "steps": ((4, 32, 4), (4, 32, 3), (6, 32, 3), (5, 32, 4), (3, 32, 3), (8, 32, 8), (8, 32, 4)),
}
CASES += [Case(f"subsample_{name}", "pool: LeViT's subsampled queries (a token grid sliced with a step, back to tokens)",
               lambda v=v: subsample_pack(v), ("rk3566", "rk3588")) for name, v in SUBSAMPLE_PACKS.items()]


def _l2_normalised(p: str, x: str, shape: list, name: str) -> list:
    """F.normalize(x, dim=-1) as torch.onnx writes it: ReduceL2 over the last axis (kept), Clip at
    1e-12, Expand to x's shape, Div."""
    return [helper.make_node("ReduceL2", [p + x], [p + name + "_norm"], name=p + name + "_l2", axes=[-1], keepdims=1),
            helper.make_node("Clip", [p + name + "_norm", p + "eps"], [p + name + "_clip"], name=p + name + "_clip"),
            helper.make_node("Expand", [p + name + "_clip", p + "full"], [p + name + "_exp"], name=p + name + "_expand"),
            helper.make_node("Div", [p + x, p + name + "_exp"], [p + name + "n"], name=p + name + "_div")]


def xca_pack(variants: tuple) -> onnx.ModelProto:
    """Cross-covariance attention (XCiT's and EdgeNeXt's XCA, timm's spelling), (tokens, heads, head
    size) each, packed one input [1, T, C] and output each: a qkv Linear, Reshape [1, T, 3, H, D],
    Transpose [2, 0, 3, 4, 1] (q, k, v as [1, H, D, T]), Split and Squeeze, q and k L2-normalised
    over the tokens, q @ k.transpose(-2, -1) times a per-head temperature, Softmax, @ v, Transpose
    [0, 3, 1, 2], Reshape [1, T, C], a Linear."""
    rng = np.random.default_rng(28)
    nodes, inits, inputs, outputs = [], [], [], []
    for t, h, d in variants:
        p, c = f"t{t}h{h}d{d}_", h * d
        inits += [_const(p + "w_qkv", _weights(rng, c, 3 * c)), _const(p + "w_out", _weights(rng, c, c)),
                  _const(p + "s5", np.array([1, t, 3, h, d], np.int64)), _const(p + "s3", np.array([1, t, c], np.int64)),
                  _const(p + "axis0", np.array([0], np.int64)), _const(p + "eps", np.array(1e-12, np.float32)),
                  _const(p + "full", np.array([1, h, d, t], np.int64)), _const(p + "temperature", np.ones((h, 1, 1), np.float32))]
        nodes += [helper.make_node("MatMul", [p + "x", p + "w_qkv"], [p + "qkv"], name=p + "qkv"),
                  helper.make_node("Reshape", [p + "qkv", p + "s5"], [p + "qkv5"], name=p + "heads_split"),
                  helper.make_node("Transpose", [p + "qkv5"], [p + "qkvt"], name=p + "heads_stack", perm=[2, 0, 3, 4, 1]),
                  helper.make_node("Split", [p + "qkvt"], [p + "q5", p + "k5", p + "v5"], name=p + "split", axis=0)]
        nodes += [helper.make_node("Squeeze", [p + s + "5", p + "axis0"], [p + s], name=p + s + "_squeeze") for s in "qkv"]
        nodes += _l2_normalised(p, "q", [1, h, d, t], "q") + _l2_normalised(p, "k", [1, h, d, t], "k")
        nodes += [helper.make_node("Transpose", [p + "kn"], [p + "kt"], name=p + "k_t", perm=[0, 1, 3, 2]),
                  helper.make_node("MatMul", [p + "qn", p + "kt"], [p + "scores"], name=p + "scores"),
                  helper.make_node("Mul", [p + "scores", p + "temperature"], [p + "scaled"], name=p + "temperature_mul"),
                  helper.make_node("Softmax", [p + "scaled"], [p + "attn"], name=p + "softmax", axis=-1),
                  helper.make_node("MatMul", [p + "attn", p + "v"], [p + "ctx"], name=p + "context"),
                  helper.make_node("Transpose", [p + "ctx"], [p + "ctxt"], name=p + "tokens_back", perm=[0, 3, 1, 2]),
                  helper.make_node("Reshape", [p + "ctxt", p + "s3"], [p + "merged"], name=p + "heads_merge"),
                  helper.make_node("MatMul", [p + "merged", p + "w_out"], [p + "y"], name=p + "out")]
        inputs.append(_vi(p + "x", [1, t, c]))
        outputs.append(_vi(p + "y", [1, t, c]))
    return _model(nodes, inputs, outputs, inits)


XCA_PACKS = {
    "sizes": ((16, 4, 32), (64, 4, 16), (20, 2, 32), (16, 2, 24), (4, 4, 16), (49, 2, 32)),
}
CASES += [Case(f"xca_{name}", "pool: cross-covariance attention (XCiT, EdgeNeXt): q and k L2-normalised over the tokens",
               lambda v=v: xca_pack(v), ("rk3566", "rk3588")) for name, v in XCA_PACKS.items()]


# ---- (c) Pad by axis, amount, mode, rank, spelling and position, packed (BlazeFace's channel pads) ----

# Independent Pads, one per entry, each on its own input: (name, input shape, pads (ONNX order:
# all starts, then all ends), mode, constant value or None, where it sits, spelling of pads/value).
# "block": Conv 1x1 -> Relu -> Pad -> Add with a Conv 1x1 of the input to the padded channels
# (MediaPipe's BlazeBlock: zero channels appended before the residual Add); "conv": Conv 1x1 ->
# Pad -> output; "first": the model input -> Pad -> Relu; "relu": Relu -> Pad -> Relu;
# "before_conv": Relu -> Pad -> Conv 1x1 (where the toolkit may fold the Pad into the Conv);
# "nhwc": Conv 1x1 -> Transpose [0, 2, 3, 1] -> Pad -> Relu (the shape given is the Pad's
# channels-last input); "tokens": Conv 1x1 -> Reshape [N, C, H*W] -> Transpose [0, 2, 1] ->
# MatMul -> Reshape [N, H, W, C] -> Pad -> Relu.
PAD_PACK = (
    ("c8_end8", (1, 8, 8, 8), (0, 0, 0, 0, 0, 8, 0, 0), "constant", None, "block", "init"),
    ("c12_end4", (1, 12, 8, 8), (0, 0, 0, 0, 0, 4, 0, 0), "constant", None, "block", "init"),
    ("c16_end4", (1, 16, 8, 8), (0, 0, 0, 0, 0, 4, 0, 0), "constant", None, "block", "init"),
    ("c16_end16", (1, 16, 8, 8), (0, 0, 0, 0, 0, 16, 0, 0), "constant", None, "block", "init"),
    ("c24_end4", (1, 24, 8, 8), (0, 0, 0, 0, 0, 4, 0, 0), "constant", None, "block", "init"),
    ("c24_end8", (1, 24, 8, 8), (0, 0, 0, 0, 0, 8, 0, 0), "constant", None, "block", "init"),
    ("c24_end24", (1, 24, 8, 8), (0, 0, 0, 0, 0, 24, 0, 0), "constant", None, "block", "init"),
    ("c32_end4", (1, 32, 8, 8), (0, 0, 0, 0, 0, 4, 0, 0), "constant", None, "block", "init"),
    ("c32_end5", (1, 32, 8, 8), (0, 0, 0, 0, 0, 5, 0, 0), "constant", None, "block", "init"),
    ("c32_end16", (1, 32, 8, 8), (0, 0, 0, 0, 0, 16, 0, 0), "constant", None, "block", "init"),
    ("c40_end8", (1, 40, 8, 8), (0, 0, 0, 0, 0, 8, 0, 0), "constant", None, "block", "init"),
    ("c48_end8", (1, 48, 8, 8), (0, 0, 0, 0, 0, 8, 0, 0), "constant", None, "block", "init"),
    ("c56_end8", (1, 56, 8, 8), (0, 0, 0, 0, 0, 8, 0, 0), "constant", None, "block", "init"),
    ("c64_end8", (1, 64, 8, 8), (0, 0, 0, 0, 0, 8, 0, 0), "constant", None, "block", "init"),
    ("c72_end8", (1, 72, 8, 8), (0, 0, 0, 0, 0, 8, 0, 0), "constant", None, "block", "init"),
    ("c24_end8_const", (1, 24, 8, 8), (0, 0, 0, 0, 0, 8, 0, 0), "constant", None, "block", "node"),
    ("c32_end8_const", (1, 32, 8, 8), (0, 0, 0, 0, 0, 8, 0, 0), "constant", None, "block", "node"),
    ("c32_start4", (1, 32, 8, 8), (0, 4, 0, 0, 0, 0, 0, 0), "constant", None, "block", "init"),
    ("c32_start16", (1, 32, 8, 8), (0, 16, 0, 0, 0, 0, 0, 0), "constant", None, "block", "init"),
    ("c32_both2", (1, 32, 8, 8), (0, 2, 0, 0, 0, 2, 0, 0), "constant", None, "block", "init"),
    ("c32_end4_value1", (1, 32, 8, 8), (0, 0, 0, 0, 0, 4, 0, 0), "constant", 1.0, "block", "init"),
    ("c24_end8_value1", (1, 24, 8, 8), (0, 0, 0, 0, 0, 8, 0, 0), "constant", 1.0, "block", "node"),
    ("c24_end8_conv", (1, 24, 8, 8), (0, 0, 0, 0, 0, 8, 0, 0), "constant", None, "conv", "init"),
    ("c32_end8_conv", (1, 32, 8, 8), (0, 0, 0, 0, 0, 8, 0, 0), "constant", None, "conv", "init"),
    ("c24_end8_first", (1, 24, 8, 8), (0, 0, 0, 0, 0, 8, 0, 0), "constant", None, "first", "init"),
    ("c32_end8_first", (1, 32, 8, 8), (0, 0, 0, 0, 0, 8, 0, 0), "constant", None, "first", "init"),
    ("c24_hw1", (1, 24, 8, 8), (0, 0, 1, 1, 0, 0, 1, 1), "constant", None, "conv", "init"),
    ("c24_hw1_value1", (1, 24, 8, 8), (0, 0, 1, 1, 0, 0, 1, 1), "constant", 1.0, "conv", "init"),
    ("c32_h1_end4", (1, 32, 8, 8), (0, 0, 1, 0, 0, 4, 1, 0), "constant", None, "conv", "init"),
    ("c16_n1", (1, 16, 8, 8), (1, 0, 0, 0, 0, 0, 0, 0), "constant", None, "relu", "init"),
    ("c24_reflect_hw1", (1, 24, 8, 8), (0, 0, 1, 1, 0, 0, 1, 1), "reflect", None, "conv", "init"),
    ("c32_edge_end4", (1, 32, 8, 8), (0, 0, 0, 0, 0, 4, 0, 0), "edge", None, "conv", "init"),
    ("c24_edge_end4", (1, 24, 8, 8), (0, 0, 0, 0, 0, 4, 0, 0), "edge", None, "conv", "init"),
    ("r3_c24_end8", (1, 24, 16), (0, 0, 0, 0, 8, 0), "constant", None, "relu", "init"),
    ("r3_c32_end8", (1, 32, 16), (0, 0, 0, 0, 8, 0), "constant", None, "relu", "init"),
    ("r3_c24_len4", (1, 24, 16), (0, 0, 0, 0, 0, 4), "constant", None, "relu", "init"),
    ("r2_l24_end8", (1, 24), (0, 0, 0, 8), "constant", None, "relu", "init"),
    ("c24_start8", (1, 24, 8, 8), (0, 8, 0, 0, 0, 0, 0, 0), "constant", None, "block", "init"),
    ("c12_start4", (1, 12, 8, 8), (0, 4, 0, 0, 0, 0, 0, 0), "constant", None, "block", "init"),
    ("c24_h1_end8", (1, 24, 8, 8), (0, 0, 1, 0, 0, 8, 1, 0), "constant", None, "conv", "init"),
    ("c24_n1", (1, 24, 8, 8), (1, 0, 0, 0, 0, 0, 0, 0), "constant", None, "relu", "init"),
    ("c12_hw1", (1, 12, 8, 8), (0, 0, 1, 1, 0, 0, 1, 1), "constant", None, "conv", "init"),
    ("c4_end4", (1, 4, 8, 8), (0, 0, 0, 0, 0, 4, 0, 0), "constant", None, "block", "init"),
    ("c20_end4", (1, 20, 8, 8), (0, 0, 0, 0, 0, 4, 0, 0), "constant", None, "block", "init"),
    ("c36_end4", (1, 36, 8, 8), (0, 0, 0, 0, 0, 4, 0, 0), "constant", None, "block", "init"),
    ("c44_end4", (1, 44, 8, 8), (0, 0, 0, 0, 0, 4, 0, 0), "constant", None, "block", "init"),
    ("c12_end8_value1", (1, 12, 8, 8), (0, 0, 0, 0, 0, 8, 0, 0), "constant", 1.0, "block", "node"),
    ("c24_end8_before_conv", (1, 24, 8, 8), (0, 0, 0, 0, 0, 8, 0, 0), "constant", None, "before_conv", "init"),
    ("c12_end4_before_conv", (1, 12, 8, 8), (0, 0, 0, 0, 0, 4, 0, 0), "constant", None, "before_conv", "init"),
    ("c24_hw1_before_conv", (1, 24, 8, 8), (0, 0, 1, 1, 0, 0, 1, 1), "constant", None, "before_conv", "init"),
    ("r3_c12_end4", (1, 12, 16), (0, 0, 0, 0, 4, 0), "constant", None, "relu", "init"),
    ("r3_one_len8_of24", (1, 1, 24), (0, 0, 0, 0, 0, 8), "constant", None, "relu", "init"),
    ("r3_one_len8_of32", (1, 1, 32), (0, 0, 0, 0, 0, 8), "constant", None, "relu", "init"),
    ("r3_one_len4_of12", (1, 1, 12), (0, 0, 0, 0, 0, 4), "constant", None, "relu", "init"),
    ("c24_both4", (1, 24, 8, 8), (0, 4, 0, 0, 0, 4, 0, 0), "constant", None, "block", "init"),
    ("c12_both2", (1, 12, 8, 8), (0, 2, 0, 0, 0, 2, 0, 0), "constant", None, "block", "init"),
    ("c24_start4", (1, 24, 8, 8), (0, 4, 0, 0, 0, 0, 0, 0), "constant", None, "block", "init"),
    ("c20_start4", (1, 20, 8, 8), (0, 4, 0, 0, 0, 0, 0, 0), "constant", None, "block", "init"),
    ("c24_reflect_end4", (1, 24, 8, 8), (0, 0, 0, 0, 0, 4, 0, 0), "reflect", None, "conv", "init"),
    ("c24_end8_wide", (1, 24, 3, 5), (0, 0, 0, 0, 0, 8, 0, 0), "constant", None, "block", "init"),
    ("c24_end8_h_end8", (1, 24, 8, 8), (0, 0, 0, 0, 0, 8, 8, 0), "constant", None, "conv", "init"),
    ("c24_end8_hw_end8", (1, 24, 8, 8), (0, 0, 0, 0, 0, 8, 8, 8), "constant", None, "conv", "init"),
    ("as_nhwc_8x8x128_hw6", (1, 8, 8, 128), (0, 0, 0, 0, 0, 6, 6, 0), "constant", None, "relu", "init"),
    ("as_nhwc_8x8x128_h6", (1, 8, 8, 128), (0, 0, 0, 0, 0, 6, 0, 0), "constant", None, "relu", "init"),
    ("nhwc_8x8x128_hw6", (1, 8, 8, 128), (0, 0, 0, 0, 0, 6, 6, 0), "constant", None, "nhwc", "init"),
    ("nhwc_8x8x128_h6", (1, 8, 8, 128), (0, 0, 0, 0, 0, 6, 0, 0), "constant", None, "nhwc", "init"),
    ("nhwc_4x4x24_hw3", (1, 4, 4, 24), (0, 0, 0, 0, 0, 3, 3, 0), "constant", None, "nhwc", "init"),
    ("tokens_8x8x128_hw6", (1, 8, 8, 128), (0, 0, 0, 0, 0, 6, 6, 0), "constant", None, "tokens", "init"),
    ("tokens_8x8x128_h6", (1, 8, 8, 128), (0, 0, 0, 0, 0, 6, 0, 0), "constant", None, "tokens", "init"),
    ("tokens_4x4x24_hw3", (1, 4, 4, 24), (0, 0, 0, 0, 0, 3, 3, 0), "constant", None, "tokens", "init"),
    ("c2_end2", (1, 2, 8, 8), (0, 0, 0, 0, 0, 2, 0, 0), "constant", None, "block", "init"),
    ("c6_end2", (1, 6, 8, 8), (0, 0, 0, 0, 0, 2, 0, 0), "constant", None, "block", "init"),
    ("c10_end6", (1, 10, 8, 8), (0, 0, 0, 0, 0, 6, 0, 0), "constant", None, "block", "init"),
)


def _pad_operands(spec) -> tuple[list[str], list, list]:
    """The Pad's pads and (if given) constant value: their names, and the Constant nodes or
    initializers that hold them (a pack has one namespace: names carry the entry's)."""
    name, _shape, pads, _mode, value, _where, spelling = spec
    values = [(f"pads_{name}", np.array(pads, np.int64))] + ([] if value is None else [(f"value_{name}", np.array(value, np.float32))])
    if spelling == "init":
        return [n for n, _ in values], [], [_const(n, v) for n, v in values]
    nodes = [helper.make_node("Constant", [], [n], name=f"constant_{n}", value=numpy_helper.from_array(v)) for n, v in values]
    return [n for n, _ in values], nodes, []


def _pad_source(rng, spec, nodes: list, inits: list) -> tuple[list, str]:
    """The nodes before an entry's Pad: the model input's shape and the Pad's input."""
    name, shape, _pads, _mode, _value, where, _spelling = spec
    x, src = f"x_{name}", f"x_{name}"
    if where == "nhwc":  # a Conv's map turned channels-last (Transpose [0, 2, 3, 1]), as Swin's windows
        inits.append(_const(f"w_{name}", _weights(rng, shape[3], shape[3], 1, 1)))
        nodes += [helper.make_node("Conv", [x, f"w_{name}"], [f"c_{name}"], name=f"conv_{name}"),
                  helper.make_node("Transpose", [f"c_{name}"], [f"t_{name}"], name=f"nhwc_{name}", perm=[0, 2, 3, 1])]
        return [1, shape[3], shape[1], shape[2]], f"t_{name}"
    if where == "tokens":  # a map flattened into tokens, a Linear over them, viewed as a map again (TinyViT's windows)
        h, w, c = shape[1:]
        inits += [_const(f"flat_{name}", np.array([1, c, h * w], np.int64)), _const(f"shape_{name}", np.array(shape, np.int64)),
                  _const(f"w_{name}", _weights(rng, c, c, 1, 1)), _const(f"fc_{name}", _weights(rng, c, c))]
        nodes += [helper.make_node("Conv", [x, f"w_{name}"], [f"c_{name}"], name=f"conv_{name}"),
                  helper.make_node("Reshape", [f"c_{name}", f"flat_{name}"], [f"f_{name}"], name=f"flatten_{name}"),
                  helper.make_node("Transpose", [f"f_{name}"], [f"t_{name}"], name=f"tokens_{name}", perm=[0, 2, 1]),
                  helper.make_node("MatMul", [f"t_{name}", f"fc_{name}"], [f"m_{name}"], name=f"linear_{name}"),
                  helper.make_node("Reshape", [f"m_{name}", f"shape_{name}"], [f"v_{name}"], name=f"map_{name}")]
        return [1, c, h, w], f"v_{name}"
    if where in ("conv_tokens", "conv_tokens_scaled"):  # a Conv's map as tokens, no MatMul, viewed as a map (Twins', DaViT's windows)
        h, w, c = shape[1:]
        inits += [_const(f"flat_{name}", np.array([1, c, h * w], np.int64)), _const(f"shape_{name}", np.array(shape, np.int64)),
                  _const(f"w_{name}", _weights(rng, c, c, 1, 1)), _const(f"g_{name}", rng.standard_normal(c).astype(np.float32))]
        nodes += [helper.make_node("Conv", [x, f"w_{name}"], [f"c_{name}"], name=f"conv_{name}"),
                  helper.make_node("Reshape", [f"c_{name}", f"flat_{name}"], [f"f_{name}"], name=f"flatten_{name}"),
                  helper.make_node("Transpose", [f"f_{name}"], [f"t_{name}"], name=f"tokens_{name}", perm=[0, 2, 1])]
        src = f"t_{name}"
        if where == "conv_tokens_scaled":  # a per-channel scale between, as a LayerNorm's gain
            nodes.append(helper.make_node("Mul", [src, f"g_{name}"], [f"s_{name}"], name=f"gain_{name}"))
            src = f"s_{name}"
        nodes.append(helper.make_node("Reshape", [src, f"shape_{name}"], [f"v_{name}"], name=f"map_{name}"))
        return [1, c, h, w], f"v_{name}"
    if where in ("block", "conv"):
        inits.append(_const(f"w_{name}", _weights(rng, shape[1], shape[1], 1, 1)))
        nodes.append(helper.make_node("Conv", [x, f"w_{name}"], [f"c_{name}"], name=f"conv_{name}"))
        src = f"c_{name}"
    if where in ("block", "relu", "before_conv"):
        nodes.append(helper.make_node("Relu", [src], [f"r_{name}"], name=f"relu_{name}"))
        src = f"r_{name}"
    return list(shape), src


def _pad_case(rng, spec) -> tuple[list, list, list, list]:
    """One entry of PAD_PACK: its nodes, initializers, input and output."""
    name, shape, pads, mode, _value, where, _spelling = spec
    rank = len(shape)
    out = [d + pads[i] + pads[i + rank] for i, d in enumerate(shape)]
    operands, nodes, inits = _pad_operands(spec)
    x_shape, src = _pad_source(rng, spec, nodes, inits)
    y = f"y_{name}"
    padded = y if where == "conv" else f"p_{name}"
    nodes.append(helper.make_node("Pad", [src, *operands], [padded], name=f"pad_{name}", mode=mode))
    if where == "block":
        inits.append(_const(f"ws_{name}", _weights(rng, out[1], shape[1], 1, 1)))
        nodes += [helper.make_node("Conv", [f"x_{name}", f"ws_{name}"], [f"s_{name}"], name=f"shortcut_{name}"),
                  helper.make_node("Add", [padded, f"s_{name}"], [y], name=f"add_{name}")]
    elif where == "before_conv":
        inits.append(_const(f"wa_{name}", _weights(rng, 8, out[1], 1, 1)))
        nodes.append(helper.make_node("Conv", [padded, f"wa_{name}"], [y], name=f"conv_after_{name}"))
        out = [1, 8, *out[2:]]
    elif where != "conv":
        nodes.append(helper.make_node("Relu", [padded], [y], name=f"after_{name}"))
    return nodes, inits, [_vi(f"x_{name}", x_shape)], [_vi(y, out)]


def pad_pack(opset: int = 13, entries: tuple = PAD_PACK) -> onnx.ModelProto:
    """Every PAD_PACK entry in one model at `opset` (11 or later: pads as an input): one
    conversion places them all."""
    return _packed(_pad_case, entries, 61, opset=opset)


CASES += [Case(f"pad_pack_opset{o}", "c: Pad by axis, amount, mode, rank and position", lambda o=o: pad_pack(o), ("rk3588", "rk3566")) for o in (13, 11)]
CASES.append(Case("pad_pack_fp16", "c: Pad by axis, amount, mode, rank and position", pad_pack, ("rk3588", "rk3566"), precision="fp16"))

# A Conv's map flattened into tokens (Reshape, Transpose [0, 2, 1]) and viewed as a map [1, H, W, C]
# with no MatMul between, padded at the end of H and W (Twins' and DaViT's windows), by sizes,
# axes and neighbours.
PAD_TOKENS_PACK = tuple(
    (f"{where}_{h}x{h}x{c}_{axes}{p}", (1, h, h, c), (0, 0, 0, 0, 0, p, p if axes == "hw" else 0, 0), "constant", None, where, "init")
    for where in ("conv_tokens", "conv_tokens_scaled")
    for h, c, p, axes in ((8, 128, 6, "hw"), (8, 128, 6, "h"), (4, 24, 3, "hw"), (4, 256, 3, "hw"), (2, 40, 5, "hw"))
)
CASES.append(Case("pad_tokens_pack", "pool: a Pad of a Conv's map as tokens viewed as a map (Twins, DaViT)",
                  lambda: pad_pack(13, PAD_TOKENS_PACK), ("rk3588", "rk3566")))


def _centred(p: str, nodes: list) -> str:
    """x - mean(x) over the last axis (a LayerNorm's first half), appended to `nodes`."""
    nodes += [helper.make_node("ReduceMean", [p + "x"], [p + "mean"], name=p + "ln_mean", axes=[-1], keepdims=1),
              helper.make_node("Sub", [p + "x", p + "mean"], [p + "xc"], name=p + "ln_sub")]
    return p + "xc"


def separate_projections_pack(variants: tuple) -> onnx.ModelProto:
    """Attention with q, k and v each its own Linear (transformers' spelling: Linear, Reshape
    [B, T, H, D], Transpose [0, 2, 1, 3]; k transposed again [0, 1, 3, 2]; the scores divided by
    sqrt(D); Softmax; @ v; Transpose [0, 2, 1, 3]; Reshape [B, T, C]; a Linear), (batch, tokens,
    heads, head size[, context...]) each, packed one input [B, T, C] and output each; context "ln"
    centres the input first, "res" adds it to the result, "k231" transposes the key once
    [0, 2, 3, 1] (transformers' export) instead of [0, 2, 1, 3] then [0, 1, 3, 2]."""
    rng = np.random.default_rng(29)
    nodes, inits, inputs, outputs = [], [], [], []
    for b, t, h, d, *context in variants:
        p, c = f"b{b}t{t}h{h}d{d}{''.join(context)}_", h * d
        x = _centred(p, nodes) if "ln" in context else p + "x"
        inits += [_const(p + "s4", np.array([b, t, h, d], np.int64)), _const(p + "s3", np.array([b, t, c], np.int64)),
                  _const(p + "root", np.array(d ** 0.5, np.float32)), _const(p + "w_out", _weights(rng, c, c))]
        for part in "qkv":
            inits += [_const(p + "w_" + part, _weights(rng, c, c)), _const(p + "b_" + part, _weights(rng, c))]
            once = part == "k" and "k231" in context  # the key transposed once [0, 2, 3, 1] (transformers' MobileViT export)
            nodes += [helper.make_node("MatMul", [x, p + "w_" + part], [p + part + "0"], name=p + part + "_matmul"),
                      helper.make_node("Add", [p + part + "0", p + "b_" + part], [p + part + "1"], name=p + part + "_add"),
                      helper.make_node("Reshape", [p + part + "1", p + "s4"], [p + part + "4"], name=p + part + "_split_heads"),
                      helper.make_node("Transpose", [p + part + "4"], [p + ("kt" if once else part + "h")], name=p + part + "_heads_transpose",
                                       perm=[0, 2, 3, 1] if once else [0, 2, 1, 3])]
        if "k231" not in context:
            nodes.append(helper.make_node("Transpose", [p + "kh"], [p + "kt"], name=p + "k_transpose", perm=[0, 1, 3, 2]))
        nodes += [helper.make_node("MatMul", [p + "qh", p + "kt"], [p + "scores"], name=p + "scores"),
                  helper.make_node("Div", [p + "scores", p + "root"], [p + "scaled"], name=p + "scale"),
                  helper.make_node("Softmax", [p + "scaled"], [p + "attn"], name=p + "softmax", axis=-1),
                  helper.make_node("MatMul", [p + "attn", p + "vh"], [p + "ctx"], name=p + "context"),
                  helper.make_node("Transpose", [p + "ctx"], [p + "ctxt"], name=p + "merge_transpose", perm=[0, 2, 1, 3]),
                  helper.make_node("Reshape", [p + "ctxt", p + "s3"], [p + "merged"], name=p + "merge_heads"),
                  helper.make_node("MatMul", [p + "merged", p + "w_out"], [p + ("o" if "res" in context else "y")], name=p + "out")]
        if "res" in context:  # the residual Add of the block's input
            nodes.append(helper.make_node("Add", [p + "o", x], [p + "y"], name=p + "residual"))
        inputs.append(_vi(p + "x", [b, t, c]))
        outputs.append(_vi(p + "y", [b, t, c]))
    return _model(nodes, inputs, outputs, inits)


SEPARATE_PROJECTION_PACKS = {
    "batch": ((4, 16, 4, 20), (4, 4, 4, 20), (4, 16, 4, 16), (1, 16, 4, 20), (4, 9, 2, 16), (2, 16, 2, 24)),
}
CASES += [Case(f"separate_projections_{name}", "pool: attention with q, k and v each its own Linear over a batch of token sets (transformers' MobileViT)",
               lambda v=v: separate_projections_pack(v), ("rk3566", "rk3588")) for name, v in SEPARATE_PROJECTION_PACKS.items()]

# transformers' MobileViT at 64 x 64: stage layer.4 attends 4 patch positions x 1 token, 4 heads of
# 60 (C = 240), layer.3 4 x 4 tokens, 4 heads of 48 (C = 192), layer.2 4 x 16, 4 heads of 36; the
# others change one thing of layer.4's form at a time (tokens, head size).
MOBILEVIT_STAGE_PACKS = {
    "stages": ((4, 1, 4, 60), (4, 4, 4, 48), (4, 16, 4, 36), (4, 1, 4, 48), (4, 4, 4, 60), (4, 1, 4, 64), (4, 1, 4, 56)),
    "context": ((4, 1, 4, 60, "res"), (4, 1, 4, 60, "ln"), (4, 1, 4, 60, "ln", "res"), (4, 4, 4, 48, "ln", "res"), (4, 1, 4, 48, "ln", "res")),
    "residual": ((4, 4, 4, 60, "res"), (4, 1, 4, 56, "res"), (4, 1, 4, 64, "res"), (4, 16, 4, 36, "res"), (4, 4, 4, 48, "res"), (2, 1, 4, 60, "res"), (4, 1, 4, 36, "res")),
    "batch": ((1, 1, 4, 60, "res"), (3, 1, 4, 60, "res"), (8, 1, 4, 60, "res"), (4, 2, 4, 60, "res"), (4, 1, 2, 56, "res"), (4, 1, 1, 60, "res")),
}
# The same attention on RK3566 (held-out pair hf_mobilevit/rk3566), one thing varied at a time from its
# stages: "k231" the key transposed once [0, 2, 3, 1], as transformers exports it; the block's input
# centred first ("ln": a residual Add of a 3-D model input is a case of its own on RK3566).
MOBILEVIT_KEY_PACKS = {
    "tokens": ((4, 16, 4, 36, "k231", "ln", "res"), (4, 16, 4, 36, "ln", "res"), (4, 1, 4, 60, "k231", "ln", "res"), (4, 1, 4, 60, "ln", "res"),
               (4, 4, 4, 48, "k231", "ln", "res"), (1, 16, 4, 36, "k231", "ln", "res"), (4, 16, 4, 20, "k231", "ln", "res"), (4, 4, 4, 60, "k231", "ln", "res")),
    "one_token": ((3, 1, 4, 60, "ln", "res"), (8, 1, 4, 60, "ln", "res"), (2, 1, 4, 60, "ln", "res"), (4, 1, 4, 60, "ln"), (4, 1, 4, 60, "k231", "ln"),
                  (4, 1, 2, 36, "k231", "ln", "res"), (4, 2, 4, 60, "k231", "ln", "res")),
}
CASES += [Case(f"mobilevit_key_{name}", "held-out pool pair hf_mobilevit/rk3566: its attention over a batch of token sets, the key transposed once or twice",
               lambda v=v: separate_projections_pack(v), ("rk3566",)) for name, v in MOBILEVIT_KEY_PACKS.items()]
CASES += [Case(f"mobilevit_stage_{name}", "held-out pool pair hf_mobilevit/rk3588: its stages' attention over a batch of token sets",
               lambda v=v: separate_projections_pack(v), ("rk3588",)) for name, v in MOBILEVIT_STAGE_PACKS.items()]


def tokens_to_nhwc_pack(variants: tuple) -> onnx.ModelProto:
    """EdgeNeXt's SDTA block layout, (channels, side[, "direct"]) each, packed one input [1, C, s, s]
    and output each: a 1x1 Conv, the map flattened into tokens (Reshape [1, C, s*s], Transpose
    [0, 2, 1]), a Linear on the tokens with a residual Add, the tokens Reshaped to a channels-last
    map [1, s, s, C], a Linear there (not with "direct"), Transpose [0, 3, 1, 2] back to
    [1, C, s, s] and a residual Add."""
    rng = np.random.default_rng(30)
    nodes, inits, inputs, outputs = [], [], [], []
    for c, s, *direct in variants:
        p = f"c{c}s{s}{'d' if direct else ''}_"
        inits += [_const(p + "w_conv", _weights(rng, c, c, 1, 1)), _const(p + "w_tok", _weights(rng, c, c)), _const(p + "w_map", _weights(rng, c, c)),
                  _const(p + "flat", np.array([1, c, s * s], np.int64)), _const(p + "nhwc", np.array([1, s, s, c], np.int64))]
        nodes += [helper.make_node("Conv", [p + "x", p + "w_conv"], [p + "f"], name=p + "conv", kernel_shape=[1, 1]),
                  helper.make_node("Reshape", [p + "f", p + "flat"], [p + "f3"], name=p + "flatten"),
                  helper.make_node("Transpose", [p + "f3"], [p + "tok"], name=p + "to_tokens", perm=[0, 2, 1]),
                  helper.make_node("MatMul", [p + "tok", p + "w_tok"], [p + "lin"], name=p + "token_linear"),
                  helper.make_node("Add", [p + "tok", p + "lin"], [p + "res"], name=p + "token_residual"),
                  helper.make_node("Reshape", [p + "res", p + "nhwc"], [p + "m"], name=p + "to_nhwc"),
                  *([] if direct else [helper.make_node("MatMul", [p + "m", p + "w_map"], [p + "ml"], name=p + "map_linear")]),
                  helper.make_node("Transpose", [p + ("m" if direct else "ml")], [p + "back"], name=p + "to_nchw", perm=[0, 3, 1, 2]),
                  helper.make_node("Add", [p + "x", p + "back"], [p + "y"], name=p + "map_residual")]
        inputs.append(_vi(p + "x", [1, c, s, s]))
        outputs.append(_vi(p + "y", [1, c, s, s]))
    return _model(nodes, inputs, outputs, inits)


TOKENS_TO_NHWC_PACKS = {
    "sizes": ((168, 2), (88, 4), (160, 2), (176, 2), (168, 4), (48, 2), (64, 2), (24, 8)),
    "direct": ((168, 2, "direct"), (64, 10, "direct"), (32, 4, "direct"), (64, 10)),
}
CASES += [Case(f"tokens_to_nhwc_{name}", "pool: a map flattened into tokens, the tokens reshaped to a channels-last map (EdgeNeXt's SDTA block)",
               lambda v=v: tokens_to_nhwc_pack(v), ("rk3566", "rk3588")) for name, v in TOKENS_TO_NHWC_PACKS.items()]


def levit_attention_pack(variants: tuple) -> onnx.ModelProto:
    """LeViT's attention, timm's spelling, (tokens, query tokens, heads, key size, value size) each,
    packed: q, k and v from one Linear viewed [1, T, H, 2*kd + vd] and Split on the last axis (or,
    with fewer query tokens, as the attention-downsample block: k and v from one Linear of the
    tokens, q from a Linear of a second input of the query tokens), q Transposed [0, 2, 1, 3],
    k [0, 2, 3, 1], v [0, 2, 1, 3]; q @ k times a scale plus a per-head attention bias; Softmax;
    @ v; Transpose [0, 2, 1, 3]; Reshape [1, Tq, H*vd]; (a 6th entry: a HardSwish, as LeViT's
    projection starts with) a Linear."""
    rng = np.random.default_rng(31)
    nodes, inits, inputs, outputs = [], [], [], []
    for t, tq, h, kd, vd, *act in variants:
        p, c = f"t{t}q{tq}h{h}k{kd}v{vd}{'a' if act else ''}_", 64
        node = _prefixed(p)
        parts = [kd, kd, vd] if tq == t else [kd, vd]
        inits += [_const(p + "w_qkv", _weights(rng, c, h * sum(parts))), _const(p + "heads", np.array([1, t, h, sum(parts)], np.int64)),
                  _const(p + "parts", np.array(parts, np.int64)), _const(p + "scale", np.array(kd ** -0.5, np.float32)),
                  _const(p + "bias", _weights(rng, h, tq, t)), _const(p + "merged", np.array([1, tq, h * vd], np.int64)),
                  _const(p + "w_out", _weights(rng, h * vd, c))]
        outs = ["q4", "k4", "v4"] if tq == t else ["k4", "v4"]
        nodes += [node("MatMul", ["x", "w_qkv"], "qkv"), node("Reshape", ["qkv", "heads"], "view"),
                  helper.make_node("Split", [p + "view", p + "parts"], [p + o for o in outs], name=p + "split", axis=3)]
        if tq != t:
            inits += [_const(p + "w_q", _weights(rng, c, h * kd)), _const(p + "q_heads", np.array([1, tq, h, kd], np.int64))]
            nodes += [node("MatMul", ["xq", "w_q"], "q_lin"), node("Reshape", ["q_lin", "q_heads"], "q4")]
            inputs.append(_vi(p + "xq", [1, tq, c]))
        nodes += [node("Transpose", ["q4"], "q_t", perm=[0, 2, 1, 3]), node("Transpose", ["k4"], "k_t", perm=[0, 2, 3, 1]),
                  node("Transpose", ["v4"], "v_t", perm=[0, 2, 1, 3]), node("MatMul", ["q_t", "k_t"], "scores"),
                  node("Mul", ["scores", "scale"], "scaled"), node("Add", ["scaled", "bias"], "biased"),
                  node("Softmax", ["biased"], "attn", axis=-1), node("MatMul", ["attn", "v_t"], "context"),
                  node("Transpose", ["context"], "merge_t", perm=[0, 2, 1, 3]), node("Reshape", ["merge_t", "merged"], "merge")]
        nodes += [node("HardSwish", ["merge"], "act"), node("MatMul", ["act", "w_out"], "y")] if act else [node("MatMul", ["merge", "w_out"], "y")]
        inputs.append(_vi(p + "x", [1, t, c]))
        outputs.append(_vi(p + "y", [1, tq, c]))
    return _model(nodes, inputs, outputs, inits, opset=14 if any(len(v) > 5 for v in variants) else 13)  # HardSwish: opset 14


LEVIT_ATTENTION_PACKS = {
    "sizes": ((16, 16, 4, 16, 32), (16, 4, 8, 16, 64), (16, 16, 4, 16, 64), (16, 4, 4, 16, 32), (4, 1, 8, 16, 64)),
    "act": ((16, 16, 4, 16, 32, "act"), (16, 4, 8, 16, 64, "act"), (4, 1, 8, 16, 64, "act"), (16, 16, 4, 16, 64, "act"), (9, 9, 4, 16, 32, "act")),
}
# Not recorded: (4, 4, 6, 16, 32), with or without the HardSwish: RK3566 runs the value's Transpose
# (4 tokens of 32) on the NPU where the audit says CPU (transpose_layer_of_unaligned_value), while
# the downsample form's value (4 tokens of 64) runs on the CPU as it says: not explained.
CASES += [Case(f"levit_attention_{name}", "pool: LeViT's attention (key size other than value size, an attention bias Add; the downsample block's fewer queries)",
               lambda v=v: levit_attention_pack(v), ("rk3566", "rk3588")) for name, v in LEVIT_ATTENTION_PACKS.items()]


# ---- pool: an SSD-style head whose levels go channels-last before their Concat (MediaPipe's BlazeFace) ----


def channels_last_levels(heads: tuple) -> onnx.ModelProto:
    """Independent detection heads on one [1, 8, 16, 16] input, each as MediaPipe's BlazeFace
    exports it: per level a Conv of k*d outputs on a side x side map, a Transpose [0, 2, 3, 1],
    a Reshape [1, H*W*k, d]; the levels of a head concatenated along axis 1 ("concat", the
    model's output) or each level a model output of its own ("output"). `heads`: tuples
    (name, ((side, k), ...), d, reader)."""
    rng = np.random.default_rng(28)
    inits, n, outputs = [], [], []
    for name, levels, d, reader in heads:
        pieces = []
        for i, (side, k) in enumerate(levels):
            stride = 16 // side
            p = f"{name}_l{i}"
            inits += [_const(f"{p}_w", _weights(rng, k * d, 8, stride, stride)), _const(f"{p}_s", np.array([1, side * side * k, d], np.int64))]
            n += [helper.make_node("Conv", ["x", f"{p}_w"], [f"{p}_m"], name=f"{p}_conv", kernel_shape=[stride, stride], strides=[stride, stride]),
                  helper.make_node("Transpose", [f"{p}_m"], [f"{p}_t"], name=f"{p}_transpose", perm=[0, 2, 3, 1]),
                  helper.make_node("Reshape", [f"{p}_t", f"{p}_s"], [f"{p}_f"], name=f"{p}_reshape")]
            pieces.append((f"{p}_f", side * side * k))
        if reader == "concat":
            n.append(helper.make_node("Concat", [t for t, _ in pieces], [f"{name}_y"], name=f"{name}_concat", axis=1))
            outputs.append(_vi(f"{name}_y", [1, sum(c for _, c in pieces), d]))
        else:
            outputs += [_vi(t, [1, c, d]) for t, c in pieces]
    return _model(n, [_vi("x", [1, 8, 16, 16])], outputs, inits)


CHANNELS_LAST_HEADS = {
    "blazeface": (("cls", ((16, 2), (8, 6)), 1, "concat"), ("reg", ((16, 2), (8, 6)), 16, "concat")),
    "widths": (("d4", ((16, 2), (8, 6)), 4, "concat"), ("d8", ((16, 2), (8, 6)), 8, "concat"), ("d2", ((16, 1), (8, 1)), 2, "concat"), ("d32", ((8, 1), (4, 2)), 32, "concat")),
    "outputs": (("o1", ((16, 2), (8, 6)), 1, "output"), ("o16", ((16, 2), (8, 6)), 16, "output"), ("o8k1", ((8, 1),), 8, "output")),
    "aligned": (("a1", ((16, 8), (8, 16)), 1, "concat"), ("a16", ((16, 1), (8, 1)), 16, "concat"), ("a2", ((4, 2), (2, 4)), 2, "concat")),
}
CASES += [Case(f"channels_last_levels_{key}", "pool: a detection head's levels made channels-last (Transpose, Reshape) before their Concat", lambda h=heads: channels_last_levels(h), ("rk3588", "rk3566"))
          for key, heads in CHANNELS_LAST_HEADS.items()]


# ---- pool: a pose head's keypoints viewed per keypoint and back (Ultralytics' Pose.kpts_decode) ----


def keypoint_view_pack(variants: tuple, size: int = 16) -> onnx.ModelProto:
    """Independent pose heads on one [1, 8, size, size] input, each as Ultralytics' Pose head exports
    its keypoint decode under a static input: per level a Conv of k*d outputs, a Reshape to
    [1, k*d, cells] and a Concat of the levels along the last axis; the view per keypoint
    (Reshape [1, k, d, -1]); the coordinates Sliced, scaled and offset, the visibility Sliced
    through a Sigmoid and Concatenated back along axis 2 (d == 3); the view back (Reshape
    [1, k*d, -1]); then a Concat along axis 1 with a box branch ("concat", the model's output) or
    the model's output itself ("output"). `variants`: tuples (name, k, d, sides, reader); the
    sides are the levels' widths, made by Convs of stride size/side."""
    rng = np.random.default_rng(29)
    inits, n, outputs = [], [], []
    for name, k, d, sides, reader in variants:
        node = _prefixed(f"{name}_")
        cells = sum(s * s for s in sides)
        levels, boxes = [], []
        for i, side in enumerate(sides):
            stride = size // side
            for branch, width, into in (("kp", k * d, levels), ("box", 5, boxes)):
                if branch == "box" and reader != "concat":
                    continue
                w = f"{name}_{branch}{i}_w"
                inits += [_const(w, _weights(rng, width, 8, stride, stride)), _const(f"{name}_{branch}{i}_s", np.array([1, width, side * side], np.int64))]
                n += [helper.make_node("Conv", ["x", w], [f"{name}_{branch}{i}_m"], name=f"{name}_{branch}{i}_conv", kernel_shape=[stride, stride], strides=[stride, stride]),
                      node("Reshape", [f"{branch}{i}_m", f"{branch}{i}_s"], f"{branch}{i}_flat")]
                into.append(f"{name}_{branch}{i}_flat")
        kp = levels[0]
        if len(levels) > 1:
            n.append(node("Concat", levels, "kp_levels", axis=2))
            kp = f"{name}_kp_levels"
        inits += [_const(f"{name}_{c}", v) for c, v in (
            ("view", np.array([1, k, d, -1], np.int64)), ("back", np.array([1, k * d, -1], np.int64)),
            ("s0", np.array([0], np.int64)), ("s2", np.array([2], np.int64)), ("s3", np.array([3], np.int64)), ("ax", np.array([2], np.int64)),
            ("two", np.array(2.0, np.float32)), ("grid", rng.standard_normal((2, cells)).astype(np.float32)), ("stride", np.abs(rng.standard_normal((1, cells))).astype(np.float32)))]
        n += [node("Reshape", ["kp_levels" if len(levels) > 1 else kp, "view"], "view_kp"),
              node("Slice", ["view_kp", "s0", "s2", "ax"], "xy"),
              node("Mul", ["xy", "two"], "xy2"), node("Add", ["xy2", "grid"], "xyg"), node("Mul", ["xyg", "stride"], "xys")]
        merged = f"{name}_xys"
        if d == 3:
            n += [node("Slice", ["view_kp", "s2", "s3", "ax"], "vis"), node("Sigmoid", ["vis"], "vis_s"), node("Concat", ["xys", "vis_s"], "kp_cat", axis=2)]
            merged = f"{name}_kp_cat"
        n.append(node("Reshape", [merged, "back"], "kp_back"))
        if reader == "concat":
            n += [node("Concat", boxes, "box_levels", axis=2), node("Sigmoid", ["box_levels"], "box_s"), node("Concat", ["box_s", "kp_back"], "y", axis=1)]
            outputs.append(_vi(f"{name}_y", [1, 5 + k * d, cells]))
        else:
            outputs.append(_vi(f"{name}_kp_back", [1, k * d, cells]))
    used = {i for x in n for i in x.input}
    return _model(n, [_vi("x", [1, 8, size, size])], outputs, [t for t in inits if t.name in used])


# Varied one at a time from the COCO pose head (17 keypoints of 3 values, three levels, read by
# the head's Concat): the keypoint count (channels 51, 48, 24, 15, 96, 12), the levels (cells 336
# or one level of 256), the reader. (2 values per keypoint, probed first, made the toolkit name
# its CPU layers after other nodes; see rules.keypoints_viewed_per_keypoint.)
KEYPOINT_VIEW_PACKS = {
    "coco": (("k17d3", 17, 3, (16, 8, 4), "concat"), ("k16d3", 16, 3, (16, 8, 4), "concat"), ("k8d3", 8, 3, (16, 8, 4), "concat"), ("k5d3", 5, 3, (16, 8, 4), "concat")),
    "counts": tuple((f"k{k}d3", k, 3, (16, 8, 4), "concat") for k in (3, 5, 6, 7, 9, 10, 11, 15)),
    "shapes": (("k32d3", 32, 3, (16, 8, 4), "concat"), ("k17d3one", 17, 3, (16,), "concat"), ("k17d3out", 17, 3, (16, 8, 4), "output"), ("k4d3", 4, 3, (16, 8, 4), "concat")),
}
# The cells, on a 20x20 input: 525 as the pool's 160x160 pose models have them (20, 10, 5), 400
# (one level), 100, 125, 500 (20 and 10).
KEYPOINT_VIEW_CELLS = (("c525", 17, 3, (20, 10, 5), "concat"), ("c400", 17, 3, (20,), "concat"), ("c100", 17, 3, (10,), "concat"), ("c125", 17, 3, (10, 5), "concat"), ("c500", 17, 3, (20, 10), "concat"))
CASES += [Case(f"keypoint_view_{key}", "pool: a pose head's keypoints viewed per keypoint and back (Ultralytics' Pose)", lambda v=v: keypoint_view_pack(v), ("rk3588", "rk3566"))
          for key, v in KEYPOINT_VIEW_PACKS.items()]
CASES.append(Case("keypoint_view_cells", "pool: a pose head's keypoints viewed per keypoint and back (Ultralytics' Pose)", lambda: keypoint_view_pack(KEYPOINT_VIEW_CELLS, 20), ("rk3588", "rk3566")))


# ---- the range a model-output Softmax is calibrated to -------------------------------------------


def softmax_output_range(peaks: tuple, opset: int = 13) -> onnx.ModelProto:
    """Independent Gemm -> Softmax heads, each Softmax a model output, whose logits reach the
    signed peak of `peaks` (a bias on one class; the input is the [0, 1) calibration the audit's
    --confirm uses, so the other logits stay within a few units). Seeded random weights blow a
    classifier's logits up to +-150,000 (the pool's zoo_shufflenet), which trained ones never reach."""
    rng = np.random.default_rng(29)
    nodes, inits, outputs = [], [], []
    for i, peak in enumerate(peaks):
        bias = np.zeros(16, np.float32)
        bias[0] = peak
        inits += [_const(f"h{i}_w", (rng.standard_normal((8, 16)) * 0.1).astype(np.float32)), _const(f"h{i}_b", bias)]
        nodes += [helper.make_node("Gemm", ["x", f"h{i}_w", f"h{i}_b"], [f"h{i}_l"], name=f"h{i}_gemm"),
                  helper.make_node("Softmax", [f"h{i}_l"], [f"h{i}_y"], name=f"h{i}_softmax", **({} if opset < 13 else {"axis": 1}))]
        outputs.append(_vi(f"h{i}_y", [1, 16]))
    return _model(nodes, [_vi("x", [1, 8])], outputs, inits, opset=opset)


SOFTMAX_OUTPUT_PEAKS = (10.0, 60000.0, 65000.0, 66000.0, -70000.0, 150000.0)
CASES += [Case(f"softmax_output_range_opset{o}", "pool: a model-output Softmax on logits within and beyond float16's range", lambda o=o: softmax_output_range(SOFTMAX_OUTPUT_PEAKS, o), ("rk3588", "rk3566"))
          for o in (9, 13)]


# ---- pool: a Reshape that changes nothing, the model's last node (GPT-2's output view) ----------


def _layer_norm(node, p: str, x: str, width: int, inits: list) -> list:
    """LayerNorm over the last axis as torch.onnx writes it below opset 17 (ReduceMean, Sub, Pow,
    ReduceMean, Add, Sqrt, Div, Mul, Add)."""
    inits += [_const(p + "two", np.array(2.0, np.float32)), _const(p + "eps", np.array(1e-5, np.float32)),
              _const(p + "gamma", np.ones(width, np.float32)), _const(p + "beta", np.zeros(width, np.float32))]
    return [node("ReduceMean", [x], "mean", axes=[-1]), node("Sub", [x, "mean"], "centred"), node("Pow", ["centred", "two"], "square"),
            node("ReduceMean", ["square"], "var", axes=[-1]), node("Add", ["var", "eps"], "var_eps"), node("Sqrt", ["var_eps"], "std"),
            node("Div", ["centred", "std"], "normed"), node("Mul", ["normed", "gamma"], "scaled"), node("Add", ["scaled", "beta"], "ln")]


def output_view_pack(variants: tuple) -> onnx.ModelProto:
    """Independent cases on one [1, 32, 64] input (and [1, 32, 24]), each a Linear, then `source`
    (ln: a decomposed LayerNorm; linear: nothing more; bias: the Linear's bias Add; residual: an
    Add of two Linears), then a
    Reshape to `shape` (GPT-2's hidden_states.view(output_shape): the same shape, written
    [-1, 32, 64]), then `after` (out: the Reshape is the model's output; relu: a Relu is).
    `variants`: tuples (name, width, source, shape, after)."""
    rng = np.random.default_rng(30)
    inits, n, outputs = [], [], []
    for name, width, source, shape, after in variants:
        p = f"{name}_"
        node = _prefixed(p)
        x = "x" if width == 64 else f"x{width}"
        inits.append(_const(p + "w", _weights(rng, width, width)))
        n.append(helper.make_node("MatMul", [x, p + "w"], [p + "lin"], name=p + "lin"))
        tail = p + "lin"
        if source == "ln":
            n += _layer_norm(node, p, "lin", width, inits)
            tail = p + "ln"
        elif source == "residual":  # two computed tensors: an Add of the model's input is placed by a rule of its own
            inits.append(_const(p + "w2", _weights(rng, width, width)))
            n += [helper.make_node("MatMul", [x, p + "w2"], [p + "lin2"], name=p + "lin2"), helper.make_node("Add", [p + "lin", p + "lin2"], [p + "res"], name=p + "res")]
            tail = p + "res"
        elif source == "bias":
            inits.append(_const(p + "b", _weights(rng, width)))
            n.append(helper.make_node("Add", [p + "lin", p + "b"], [p + "biased"], name=p + "bias"))
            tail = p + "biased"
        inits.append(_const(p + "shape", np.array(shape, np.int64)))
        n.append(helper.make_node("Reshape", [tail, p + "shape"], [p + "view"], name=p + "view"))
        final = np.empty((1, 32, width)).reshape(shape).shape
        if after == "relu":
            n.append(node("Relu", ["view"], "y"))
        outputs.append(_vi(p + ("y" if after == "relu" else "view"), list(final)))
    inputs = [_vi("x", [1, 32, 64])] + ([_vi("x24", [1, 32, 24])] if any(v[1] == 24 for v in variants) else [])
    return _model(n, inputs, outputs, inits)


# GPT-2's last node and one change at a time: the source (a LayerNorm, a Linear, its bias, a residual Add),
# the shape (the same, written with -1 as GPT-2 does; the last axis changed; 2-D), the width
# (64, 24), a reader after it.
OUTPUT_VIEW_CASES = (("gpt2", 64, "ln", [-1, 32, 64], "out"), ("linear", 64, "linear", [-1, 32, 64], "out"), ("residual", 64, "residual", [-1, 32, 64], "out"),
                     ("lnlast", 64, "ln", [1, 64, 32], "out"), ("ln2d", 64, "ln", [32, 64], "out"), ("lnrelu", 64, "ln", [-1, 32, 64], "relu"),
                     ("ln24", 24, "ln", [-1, 32, 24], "out"), ("lnsame", 64, "ln", [1, 32, 64], "out"), ("bias", 64, "bias", [-1, 32, 64], "out"),
                     ("linear24", 24, "linear", [-1, 32, 24], "out"), ("residual24", 24, "residual", [-1, 32, 24], "out"))
CASES.append(Case("output_view", "pool: a Reshape that changes nothing, the model's last node (GPT-2)", lambda: output_view_pack(OUTPUT_VIEW_CASES), ("rk3566", "rk3588")))


# ---- a ReduceMean reading an Add (RepGhostNet's squeeze-and-excitation, onnx2tf + Vela) ----------


def _mean_source(n, inits, rng, p: str, a: str, variant: str, c: int) -> tuple[str, list]:
    """The tensor the branch's ReduceMean reads, built from `a` [1, c, 8, 8], and its axes."""
    def conv(x, name, out_c=c, k=1):
        inits.append(_const(f"{p}{name}_w", _weights(rng, out_c, c, k, k)))
        n.append(helper.make_node("Conv", [x, f"{p}{name}_w"], [f"{p}{name}"], name=f"{p}{name}", pads=[k // 2] * 4))
        return f"{p}{name}"

    def node(op, ins, name, **kw):
        n.append(helper.make_node(op, ins, [f"{p}{name}"], name=f"{p}{name}", **kw))
        return f"{p}{name}"

    kind, _, tail = variant.partition(":")
    left, right = conv(a, "conv1", k=3), conv(a, "conv2")
    if kind == "conv":
        return left, [2, 3]
    if kind == "const":  # an Add of a constant bias
        inits.append(_const(f"{p}bias", _weights(rng, 1, c, 1, 1)))
        return node("Add", [left, f"{p}bias"], "add"), [2, 3]
    if kind in ("Sub", "Mul"):
        return node(kind, [left, right], kind.lower()), [2, 3]
    if kind == "concat":
        return node("Concat", [left, right], "concat", axis=1), [2, 3]
    if kind == "residual":  # a Conv's result added to its own input
        return node("Add", [left, a], "add"), [2, 3]
    if kind == "c1":
        return node("Add", [conv(a, "conv3", out_c=1), conv(a, "conv4", out_c=1)], "add"), [2, 3]
    if kind == "convsq":  # a Conv's result squared (Filter Response Norm's x * x), then a Cast to float
        return node("Cast", [node("Mul", [left, left], "square")], "cast", to=TensorProto.FLOAT), [2, 3]
    x = node("Add", [left, right], "add")
    for j, op in enumerate(o for o in tail.split(",") if o):
        if op in ("Square", "Cast"):  # Filter Response Norm's nu2 = mean(x * x), timm's Cast to float between
            x = node("Mul", [x, x], f"act{j}_square") if op == "Square" else node("Cast", [x], f"act{j}_cast", to=TensorProto.FLOAT)
            continue
        extra = {"LeakyRelu": {"alpha": 0.1}, "MaxPool": {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}}.get(op, {})
        if op == "Clip":  # ReLU6: onnx2tf needs the bounds as inputs
            inits += [_const(f"{p}lo", np.array(0, np.float32)), _const(f"{p}hi", np.array(6, np.float32))]
        bounds = [f"{p}lo", f"{p}hi"] if op == "Clip" else []
        x = conv(x, f"conv{5 + j}") if op == "Conv" else node(op, [x, *bounds], f"act{j}_{op.lower()}", **extra)
    axes = {"add1": [1], "add3": [3]}.get(kind, [2, 3])
    return x, axes


def mean_after_add_pack(variants: tuple) -> onnx.ModelProto:
    """Independent branches from one [1, 32, 8, 8] input: Conv, Relu, then the tensor a ReduceMean
    (keepdims) reads (`variant`: "add:Relu" an Add of two Convs' results then a Relu, "conv" a
    Conv's result, "Sub" a Sub of two, "const" an Add of a constant bias, ...), read by the
    squeeze-and-excitation Mul too where the variant ends in "+se"."""
    rng = np.random.default_rng(30)
    c, n, inits, outputs = 32, [], [], []
    for i, variant in enumerate(variants):
        p = f"v{i}_"
        inits.append(_const(f"{p}w0", _weights(rng, c, c, 1, 1)))
        n += [helper.make_node("Conv", ["x", f"{p}w0"], [f"{p}c0"], name=f"{p}conv0"), helper.make_node("Relu", [f"{p}c0"], [f"{p}a"], name=f"{p}relu0")]
        source, axes = _mean_source(n, inits, rng, p, f"{p}a", variant.removesuffix("+gap").removesuffix("+se"), c)
        op = "GlobalAveragePool" if variant.endswith("+gap") else "ReduceMean"
        n.append(helper.make_node(op, [source], [f"{p}mean"], name=f"{p}{op.lower()}", **({"axes": axes, "keepdims": 1} if op == "ReduceMean" else {})))
        if variant.endswith("+se"):
            n.append(helper.make_node("Mul", [source, f"{p}mean"], [f"{p}y"], name=f"{p}se_mul"))
        outputs.append(f"{p}y" if variant.endswith("+se") else f"{p}mean")
    inferred = onnx.shape_inference.infer_shapes(_model(n, [_vi("x", [1, c, 8, 8])], [], inits, opset=14))
    shapes = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim] for v in inferred.graph.value_info}
    return _model(n, [_vi("x", [1, c, 8, 8])], [_vi(o, shapes[o]) for o in outputs], inits, opset=14)  # HardSwish


MEAN_AFTER_ADD_PACKS = {
    "producers": ("add:Relu+se", "add:", "conv", "conv+se", "Sub", "Mul", "const", "concat", "residual", "add:+gap", "add:Relu,Relu"),
    "between": ("add:Sigmoid", "add:HardSwish", "add:Clip", "add:LeakyRelu", "add:Tanh", "add:MaxPool", "add:Conv", "add1:", "add3:", "c1"),
    # fresh7 (h13-eiq): Filter Response Norm's mean of x * x over H, W after a residual Add (timm's resnetv2_50d_frn).
    "square": ("add:Square", "add:Square,Cast", "add:Relu,Square,Cast", "convsq", "add:Square,Sigmoid"),
}
CASES += [Case(f"mean_after_add_{key}", "pool: a ReduceMean reading an Add of two run-time tensors (onnx2tf's layout)", lambda v=v: mean_after_add_pack(v), ("imx93",))
          for key, v in MEAN_AFTER_ADD_PACKS.items()]


# ---- pool: CoaT's convolutional relative position encoding beside its factorised attention ------


def _crpe_block(name: str, rng, heads: int, head: int, side: int, cls: bool, op11: bool = False) -> tuple[list, list, str, int]:
    """One CoaT-Lite factorised attention block with its ConvRelPosEnc (timm's coat.py): joint
    q/k/v, heads unbound; k Softmaxed over the tokens, q @ (k^T @ v) scaled; v's image tokens
    (the class token Sliced off when `cls`) Transposed [0, 1, 3, 2] and Reshaped into a map
    [1, heads*head, side, side], a depthwise Conv, Reshaped back [1, heads, head, side*side] and
    Transposed back, times q's image tokens, zero-Padded for the class token; the sum's heads
    merged (Transpose [0, 2, 1, 3], Reshape) into the output Linear. `op11`: as torch.onnx writes it
    at opset 11 (timm_coat_lite_mini in the fresh set): q, k, v by a Split and Squeezes, k's softmax
    as a Transpose [0, 1, 3, 2] and a Softmax over the last axis read by the product (the Transpose
    back cancelled by k^T). Returns nodes, initializers, the output and the tokens."""
    node, p = _prefixed(f"{name}_"), f"{name}_"
    c, hw = heads * head, side * side
    t = hw + (1 if cls else 0)
    inits = [_const(p + "w_qkv", _weights(rng, c, 3 * c)), _const(p + "w_o", _weights(rng, c, c)), _const(p + "w_dw", _weights(rng, c, 1, 3, 3)),
             _const(p + "s_qkv", np.array([1, t, 3, heads, head], np.int64)), _const(p + "s_map", np.array([1, c, side, side], np.int64)),
             _const(p + "s_tokens", np.array([1, heads, head, hw], np.int64)), _const(p + "s_merge", np.array([1, t, c], np.int64)),
             _const(p + "scale", np.array(head**-0.5, np.float32)), _const(p + "one", np.array([1], np.int64)), _const(p + "end", np.array([t], np.int64)),
             _const(p + "axis2", np.array([2], np.int64)), _const(p + "pads", np.array([0, 0, 1, 0, 0, 0, 0, 0], np.int64))]
    inits += [_const(f"{p}i_{q}", np.array(i, np.int64)) for i, q in enumerate("qkv")]
    n = [node("MatMul", ["x", "w_qkv"], "qkv"), node("Reshape", ["qkv", "s_qkv"], "qkv5"), node("Transpose", ["qkv5"], "qkvt", perm=[2, 0, 3, 1, 4])]
    if op11:
        n += [helper.make_node("Split", [p + "qkvt"], [p + f"{q}3" for q in "qkv"], name=p + "unbind", axis=0, split=[1, 1, 1])]
        n += [node("Squeeze", [f"{q}3"], q, axes=[0]) for q in "qkv"]
        n += [node("Transpose", ["k"], "kt", perm=[0, 1, 3, 2]), node("Softmax", ["kt"], "ks", axis=3), node("MatMul", ["ks", "v"], "kv")]
    else:
        n += [node("Gather", ["qkvt", f"i_{q}"], q, axis=0) for q in "qkv"]
        n += [node("Softmax", ["k"], "ks", axis=2), node("Transpose", ["ks"], "kt", perm=[0, 1, 3, 2]), node("MatMul", ["kt", "v"], "kv")]
    n += [node("MatMul", ["q", "kv"], "qkv_att"), node("Mul", ["qkv_att", "scale"], "factor")]
    q_img, v_img = "q", "v"
    if cls:
        n += [node("Slice", ["q", "one", "end", "axis2"], "q_img"), node("Slice", ["v", "one", "end", "axis2"], "v_img")]
        q_img, v_img = "q_img", "v_img"
    n += [node("Transpose", [v_img], "crpe_t", perm=[0, 1, 3, 2]), node("Reshape", ["crpe_t", "s_map"], "crpe_map"),
          node("Conv", ["crpe_map", "w_dw"], "crpe_conv", group=c, kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
          node("Reshape", ["crpe_conv", "s_tokens"], "crpe_tokens"), node("Transpose", ["crpe_tokens"], "crpe_back", perm=[0, 1, 3, 2]),
          node("Mul", [q_img, "crpe_back"], "crpe_q")]
    rel = "crpe_q"
    if cls:
        n.append(node("Pad", ["crpe_q", "pads"], "crpe_pad", mode="constant"))
        rel = "crpe_pad"
    n += [node("Add", ["factor", rel], "sum"), node("Transpose", ["sum"], "merge_t", perm=[0, 2, 1, 3]), node("Reshape", ["merge_t", "s_merge"], "merge"),
          node("MatMul", ["merge", "w_o"], "y")]
    return n, inits, p + "y", t


def crpe_pack(variants: tuple, op11: bool = False) -> onnx.ModelProto:
    """Independent CoaT-Lite attention blocks (_crpe_block), each on an input [1, tokens, C] of its
    own. `variants`: tuples (name, heads, head size, side, class token); `op11`: the blocks and the
    model as torch.onnx writes them at opset 11."""
    rng = np.random.default_rng(31)
    nodes, inits, inputs, outputs = [], [], [], []
    for name, heads, head, side, cls in variants:
        more, more_inits, y, t = _crpe_block(name, rng, heads, head, side, cls, op11)
        nodes += more
        inits += more_inits
        inputs.append(_vi(f"{name}_x", [1, t, heads * head]))
        outputs.append(_vi(y, [1, t, heads * head]))
    used = {i for x in nodes for i in x.input}
    return _model(nodes, inputs, outputs, [i for i in inits if i.name in used], **({"opset": 11} if op11 else {}))


# CoaT-Lite Tiny's four stages at the pool's 64x64 input (8 heads of 8, 16, 32, 40 values on maps
# of 16, 8, 4, 2), then the map of the first and the last changed. (Without the class token,
# probed first, RK3566 runs the whole block but k's Softmax on the NPU, head split and Transposes
# included, where the audit puts those Transposes on the CPU: another mechanism, not modelled.)
CRPE_PACKS = {
    "stages": (("s1", 8, 8, 16, True), ("s2", 8, 16, 8, True), ("s3", 8, 32, 4, True), ("s4", 8, 40, 2, True)),
    "maps": (("s4side4", 8, 40, 4, True), ("s1side4", 8, 8, 4, True), ("s1side2", 8, 8, 2, True), ("s2side2", 8, 16, 2, True), ("s4side3", 8, 40, 3, True)),
}
CASES += [Case(f"crpe_{key}", "pool: CoaT's convolutional relative position encoding beside its factorised attention", lambda v=v: crpe_pack(v), ("rk3566", "rk3588"))
          for key, v in CRPE_PACKS.items()]
# CoaT-Lite Mini's four stages at 64x64 (8 heads of 8, 16, 40, 64 values) as torch.onnx writes them
# at opset 11 (the fresh set's timm_coat_lite_mini); and the swap back after a 2x2 map for more
# channels and heads (RK3588).
CRPE_PACKS_MORE = {
    "mini_op11": ((("m1", 8, 8, 16, True), ("m2", 8, 16, 8, True), ("m3", 8, 40, 4, True), ("m4", 8, 64, 2, True)), True),
    "back": ((("c256", 8, 32, 2, True), ("c512", 8, 64, 2, True), ("c192", 8, 24, 2, True), ("c384", 8, 48, 2, True),
              ("c128h4", 4, 32, 2, True), ("c512s3", 8, 64, 3, True), ("c96", 8, 12, 2, True)), False),
    # Head size against channels: 16-value heads in 64 and 96 channels, 24- and 8-value heads in 384 and 128.
    "heads": ((("h4d16", 4, 16, 2, True), ("h2d32", 2, 32, 2, True), ("h16d24", 16, 24, 2, True), ("h16d8", 16, 8, 2, True),
               ("h6d16", 6, 16, 2, True), ("h4d16s3", 4, 16, 3, True)), False),
    # Heads a multiple of 16 or not, with 8- and 16-value heads.
    "heads16": ((("h32d8", 32, 8, 2, True), ("h16d16", 16, 16, 2, True), ("h16d8s3", 16, 8, 3, True), ("h12d8", 12, 8, 2, True),
                 ("h24d8", 24, 8, 2, True)), False),
}
CASES += [Case(f"crpe_{key}", "fresh: CoaT's position encoding and factorised attention, at opset 11 and more sizes", lambda v=v, o=o: crpe_pack(v, o), ("rk3566", "rk3588"))
          for key, (v, o) in CRPE_PACKS_MORE.items()]


# ---- pool: a Transpose in a chain of layout operators that together move nothing (YOLO12's v) ----


def moveless_chain_pack(variants: tuple) -> onnx.ModelProto:
    """Independent cases, each on an input [1, h*d, side, side] of its own: a 1x1 Conv, a Reshape
    to [1, h, d, side*side] (attention's value, heads first), then `form`: "map" (YOLO12's area
    attention: Transpose [0, 3, 1, 2], Reshape [1, side, side, h*d], Transpose [0, 3, 1, 2] back to
    a map, read by a depthwise Conv: together they move nothing), "split" (the same for v of a joint
    q/k/v projection as YOLO12 writes it: Reshape [1, 3C, side*side], Transpose [0, 2, 1], Reshape
    [1, side*side, h, 3d], Transpose [0, 2, 3, 1], Split along axis 2; the attention's result made a
    map likewise and added), or "tokens" (Transpose [0, 3, 1, 2] and Reshape
    [1, side*side, h*d] into a Linear: the data move). `variants`: tuples (name, h, d, side, form)."""
    rng = np.random.default_rng(32)
    nodes, inits, inputs, outputs = [], [], [], []
    for name, h, d, side, form in variants:
        node, p = _prefixed(f"{name}_"), f"{name}_"
        c, n = h * d, side * side
        width = 3 * c if form == "split" else c
        inits += [_const(p + "w", _weights(rng, width, c, 1, 1)), _const(p + "heads", np.array([1, h, width // h, n], np.int64)),
                  _const(p + "nhwc", np.array([1, side, side, c], np.int64)), _const(p + "tokens", np.array([1, n, c], np.int64)),
                  _const(p + "w_dw", _weights(rng, c, 1, 3, 3)), _const(p + "w_lin", _weights(rng, c, c)), _const(p + "parts", np.array([d, d, d], np.int64))]
        nodes.append(node("Conv", ["x", "w"], "proj", kernel_shape=[1, 1]))
        v = "v"
        if form == "split":  # as YOLO12 writes it: flattened, swapped into tokens, heads split, swapped back
            inits += [_const(p + "flat3", np.array([1, width, n], np.int64)), _const(p + "heads3", np.array([1, n, h, 3 * d], np.int64))]
            nodes += [node("Reshape", ["proj", "flat3"], "qkv_flat"), node("Transpose", ["qkv_flat"], "qkv_tokens", perm=[0, 2, 1]),
                      node("Reshape", ["qkv_tokens", "heads3"], "qkv_heads"), node("Transpose", ["qkv_heads"], "qkv", perm=[0, 2, 3, 1]),
                      helper.make_node("Split", [p + "qkv", p + "parts"], [p + "q", p + "k", p + "vv"], name=p + "split", axis=2)]
            v = "vv"
        else:
            nodes.append(node("Reshape", ["proj", "heads"], "v"))
        nodes.append(node("Transpose", [v], "swap", perm=[0, 3, 1, 2]))
        if form == "tokens":
            nodes += [node("Reshape", ["swap", "tokens"], "flat"), node("MatMul", ["flat", "w_lin"], "y")]
            outputs.append(_vi(p + "y", [1, n, c]))
        else:
            nodes += [node("Reshape", ["swap", "nhwc"], "grid"), node("Transpose", ["grid"], "map", perm=[0, 3, 1, 2]),
                      node("Conv", ["map", "w_dw"], "y", group=c, kernel_shape=[3, 3], pads=[1, 1, 1, 1])]
            if form == "split":  # the rest of YOLO12's AAttn: attention over the tokens, its result made a map and added
                inits.append(_const(p + "scale", np.array(d**-0.5, np.float32)))
                nodes += [node("Transpose", ["q"], "q_t", perm=[0, 1, 3, 2]), node("MatMul", ["q_t", "k"], "scores"), node("Mul", ["scores", "scale"], "scaled"),
                          node("Softmax", ["scaled"], "attn", axis=-1), node("Transpose", ["attn"], "attn_t", perm=[0, 1, 3, 2]),
                          node("MatMul", ["vv", "attn_t"], "ctx"), node("Transpose", ["ctx"], "ctx_swap", perm=[0, 3, 1, 2]),
                          node("Reshape", ["ctx_swap", "nhwc"], "ctx_grid"), node("Transpose", ["ctx_grid"], "ctx_map", perm=[0, 3, 1, 2]),
                          node("Add", ["ctx_map", "y"], "y2")]
                outputs.append(_vi(p + "y2", [1, c, side, side]))
            else:
                outputs.append(_vi(p + "y", [1, c, side, side]))
        inputs.append(_vi(p + "x", [1, c, side, side]))
    used = {i for x in nodes for i in x.input}
    return _model(nodes, inputs, outputs, [i for i in inits if i.name in used])


# YOLO12n's model.8 value (4 heads of 32 on a 5x5 map, after the Split), then the map and heads
# changed, the Split left out, and the data moved (into tokens) as the control.
MOVELESS_CHAIN_CASES = (("y12", 4, 32, 5, "split"), ("map5", 4, 32, 5, "map"), ("map4", 2, 16, 4, "map"), ("map8", 4, 32, 8, "map"),
                        ("map3h8", 8, 8, 3, "map"), ("tokens5", 4, 32, 5, "tokens"), ("tokens4", 2, 16, 4, "tokens"))
CASES.append(Case("moveless_chain", "pool: a Transpose in a chain of layout operators that together move nothing (YOLO12's area attention)",
                  lambda: moveless_chain_pack(MOVELESS_CHAIN_CASES), ("rk3566", "rk3588")))


# ---- pool: a channels-last stage's downsample (timm's MambaOut: Transpose, Conv, Transpose) ----


def channels_last_downsample_pack(variants: tuple) -> onnx.ModelProto:
    """Independent cases, each on its own channels-last input [1, side, side, c]: `source` (input:
    the model's input itself; relu: a Relu of it; linear: a MatMul [c, c] of that Relu; bias: the
    MatMul's bias Add; residual: that biased MatMul Added to the Relu, as MambaOut's block ends;
    ln: a decomposed LayerNorm of the Relu; resln: a biased MatMul of that LayerNorm Added to
    it, as MambaOut's first block; res2: two biased MatMuls of the Relu Added; chain: two such
    blocks in a row after the LayerNorm), then a Transpose [0, 3, 1, 2] into a Conv of `k` x `k`,
    stride `stride`, 2c outputs, then `after` (out: the Conv is the model's output; back: a
    Transpose [0, 2, 3, 1] is; ln: that Transpose into a decomposed LayerNorm, as MambaOut's
    downsample). `variants`: tuples (name, source, c, side, k, stride, after)."""
    rng = np.random.default_rng(31)
    inits, n, inputs, outputs = [], [], [], []
    for name, source, c, side, k, stride, after in variants:
        p = f"{name}_"
        node = _prefixed(p)
        inputs.append(_vi(p + "x", [1, side, side, c]))
        tail = "x"
        if source != "input":
            n.append(node("Relu", ["x"], "r"))
            tail = "r"
        if source in ("ln", "resln"):
            n += _layer_norm(node, p, "r", c, inits)
            tail = "ln"
        if source in ("linear", "bias", "residual", "res2", "resln"):
            into = tail
            inits += [_const(p + "w", _weights(rng, c, c)), _const(p + "b", _weights(rng, c))]
            n.append(node("MatMul", [into, "w"], "lin"))
            tail = "lin"
            if source != "linear":
                n.append(node("Add", ["b", "lin"], "biased"))
                tail = "biased"
            if source == "res2":
                inits += [_const(p + "w2", _weights(rng, c, c)), _const(p + "b2", _weights(rng, c))]
                n += [node("MatMul", [into, "w2"], "lin2"), node("Add", ["b2", "lin2"], "biased2")]
            if source != "linear" and source != "bias":
                n.append(node("Add", ["biased", "biased2" if source == "res2" else into], "res"))
                tail = "res"
        if source == "chain":  # two of MambaOut's blocks after its stem's LayerNorm
            n += _layer_norm(node, p, "r", c, inits)
            tail = "ln"
            for i in range(2):
                inits += [_const(f"{p}w{i}", _weights(rng, c, c)), _const(f"{p}b{i}", _weights(rng, c))]
                n += [node("MatMul", [tail, f"w{i}"], f"lin{i}"), node("Add", [f"b{i}", f"lin{i}"], f"biased{i}"), node("Add", [f"biased{i}", tail], f"res{i}")]
                tail = f"res{i}"
        out_side = (side + 2 * (k // 2) - k) // stride + 1
        inits += [_const(p + "cw", _weights(rng, 2 * c, c, k, k)), _const(p + "cb", _weights(rng, 2 * c))]
        n += [node("Transpose", [tail], "to_nchw", perm=[0, 3, 1, 2]),
              node("Conv", ["to_nchw", "cw", "cb"], "conv", kernel_shape=[k, k], strides=[stride, stride], pads=[k // 2] * 4)]
        if after == "out":
            outputs.append(_vi(p + "conv", [1, 2 * c, out_side, out_side]))
            continue
        n.append(node("Transpose", ["conv"], "o_to_nhwc", perm=[0, 2, 3, 1]))
        if after == "ln":  # its own prefix: a LayerNorm may feed the Transpose too
            n += _layer_norm(_prefixed(p + "o_"), p + "o_", p + "o_to_nhwc", 2 * c, inits)
        outputs.append(_vi(p + ("o_ln" if after == "ln" else "o_to_nhwc"), [1, out_side, out_side, 2 * c]))
    return _model(n, inputs, outputs, inits)


# One change at a time from MambaOut's stage-1 downsample (48 channels on a 16x16 map, a residual
# Add before it, a 3x3 stride-2 Conv, a LayerNorm after it): what feeds the Transpose, the Conv's
# kernel and stride and what reads it, the channels and the map.
CHANNELS_LAST_DOWNSAMPLE_PACKS = {
    "source": tuple((f"{s}", s, 48, 16, 3, 2, "ln") for s in ("input", "relu", "linear", "bias", "residual", "ln")),
    "conv": (("k3s1", "residual", 48, 16, 3, 1, "ln"), ("k1s2", "residual", 48, 16, 1, 2, "ln"),
             ("out", "residual", 48, 16, 3, 2, "out"), ("back", "residual", 48, 16, 3, 2, "back")),
    "sizes": (("c20", "residual", 20, 16, 3, 2, "ln"), ("c12", "residual", 12, 16, 3, 2, "ln"), ("c64", "residual", 64, 16, 3, 2, "ln"),
              ("s8", "residual", 48, 8, 3, 2, "ln"), ("s5", "residual", 48, 5, 3, 2, "ln"), ("c96s4", "residual", 96, 4, 3, 2, "ln")),
}
CHANNELS_LAST_DOWNSAMPLE_PACKS["linear"] = (
    ("resln", "resln", 48, 16, 3, 2, "ln"), ("res2", "res2", 48, 16, 3, 2, "ln"), ("bk1s1", "bias", 48, 16, 1, 1, "ln"), ("bout", "bias", 48, 16, 3, 2, "out"),
    ("bc20", "bias", 20, 16, 3, 2, "ln"), ("bs5", "bias", 48, 5, 3, 2, "ln"), ("bc12s8", "bias", 12, 8, 3, 2, "ln"), ("bback", "bias", 48, 16, 3, 2, "back"))
# Not recorded: a 1x1 stride-1 Conv read by a Transpose back and a layer norm, after a biased
# MatMul Added to a Relu, or after a MatMul without its bias: RK3566 runs the Transpose into the
# Conv on the NPU, where the audit says CPU (the same sources into a 3x3 stride-2 Conv, or into a
# 1x1 Conv that is the model's output: on the CPU, as it says): not explained.
CHANNELS_LAST_DOWNSAMPLE_PACKS["reader"] = (
    ("chain", "chain", 48, 16, 3, 2, "ln"), ("ik1s1", "input", 48, 16, 1, 1, "ln"), ("rk1s1", "relu", 48, 16, 1, 1, "ln"), ("rk1s1out", "relu", 48, 16, 1, 1, "out"), ("resk1s1out", "residual", 48, 16, 1, 1, "out"))
CASES += [Case(f"channels_last_downsample_{key}", "pool: a channels-last stage's downsample, Transpose into a Conv and back (timm's MambaOut)",
               lambda v=v: channels_last_downsample_pack(v), ("rk3588", "rk3566")) for key, v in CHANNELS_LAST_DOWNSAMPLE_PACKS.items()]


# ---- pool (issue 27, held-out miss): EdgeNeXt's swap into tokens around its XCA, by map and channels ----


def _channel_split_convs(p: str, x: str, c: int, scales: int, nodes: list, inits: list, rng) -> str:
    """EdgeNeXt's channel split (timm's SplitTransposeBlock): x split into `scales` pieces of
    ceil(C / scales) channels by Slice, each but the last through a depthwise 3x3 Conv after the
    previous piece's output is Added to it, Concatenated back."""
    width = -(-c // scales)
    ends = [min(c, width * (i + 1)) for i in range(scales)]
    pieces, prev = [], None
    for i, end in enumerate(ends):
        start = end - width if i < scales - 1 else width * i
        inits += [_const(p + f"st{i}", np.array([start], np.int64)), _const(p + f"en{i}", np.array([end], np.int64))]
        nodes.append(helper.make_node("Slice", [x, p + f"st{i}", p + f"en{i}", p + "ax1"], [p + f"piece{i}"], name=p + f"slice{i}"))
        if i == scales - 1:
            pieces.append(p + f"piece{i}")
            break
        src = p + f"piece{i}"
        if prev is not None:
            nodes.append(helper.make_node("Add", [src, prev], [p + f"sum{i}"], name=p + f"add{i}"))
            src = p + f"sum{i}"
        inits.append(_const(p + f"w_dw{i}", _weights(rng, width, 1, 3, 3)))
        nodes.append(helper.make_node("Conv", [src, p + f"w_dw{i}"], [p + f"conv{i}"], name=p + f"conv{i}", kernel_shape=[3, 3], pads=[1, 1, 1, 1], group=width))
        pieces.append(prev := p + f"conv{i}")
    inits.append(_const(p + "ax1", np.array([1], np.int64)))
    nodes.append(helper.make_node("Concat", pieces, [p + "cat"], name=p + "concat", axis=1))
    return p + "cat"


def _prefixed_within(p: str, sub: str):
    """A node maker for a part `sub` of a packed case `p`: names already the case's are kept, the
    part's own get p + sub."""
    def node(op, ins, name, **kw):
        return helper.make_node(op, [i if i.startswith(p) else p + sub + i for i in ins], [p + sub + name], name=p + sub + name, **kw)
    return node


def xca_swap_pack(variants: tuple) -> onnx.ModelProto:
    """EdgeNeXt's split depth-wise transpose attention block around its XCA, (channels, side,
    scales) each, packed one input [1, C, side, side] and output each: the channel split into
    `scales` pieces and their depthwise Convs (scales 1: one depthwise Conv), the map flattened
    into tokens (Reshape [1, C, side*side], Transpose [0, 2, 1]), a Linear Added back to the tokens,
    the tokens viewed as a channels-last map (Reshape [1, side, side, C]), a Linear, Transpose
    [0, 3, 1, 2] back to the map."""
    rng = np.random.default_rng(29)
    nodes, inits, inputs, outputs = [], [], [], []
    for c, side, scales, norms in variants:
        h, w = side if isinstance(side, tuple) else (side, side)  # a strip of 1 x W as PP-OCR's SVTR
        p, t = f"c{c}s{h}x{w}x{scales}{norms}_", h * w
        inits += [_const(p + "flat", np.array([1, c, t], np.int64)), _const(p + "w1", _weights(rng, c, c)),
                  _const(p + "w2", _weights(rng, c, c)), _const(p + "nhwc", np.array([1, h, w, c], np.int64))]
        if scales > 1:
            mixed = _channel_split_convs(p, p + "x", c, scales, nodes, inits, rng)
        else:
            inits.append(_const(p + "w_dw", _weights(rng, c, 1, 3, 3)))
            nodes.append(helper.make_node("Conv", [p + "x", p + "w_dw"], [p + "dw"], name=p + "dw_conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1], group=c))
            mixed = p + "dw"
        nodes += [helper.make_node("Reshape", [mixed, p + "flat"], [p + "f3"], name=p + "flatten"),
                  helper.make_node("Transpose", [p + "f3"], [p + "tok"], name=p + "to_tokens", perm=[0, 2, 1])]
        if "t" in norms:  # norm_xca, the LayerNorm on the tokens before the XCA
            nodes += _layer_norm(_prefixed_within(p, "t_"), p + "t_", p + "tok", c, inits)
        nodes += [helper.make_node("MatMul", [p + ("t_ln" if "t" in norms else "tok"), p + "w1"], [p + "l1"], name=p + "xca_linear"),
                  helper.make_node("Add", [p + "tok", p + "l1"], [p + "res"], name=p + "residual"),
                  helper.make_node("Reshape", [p + "res", p + "nhwc"], [p + "m"], name=p + "to_nhwc")]
        if "m" in norms:  # norm, the LayerNorm on the channels-last map before the MLP
            nodes += _layer_norm(_prefixed_within(p, "m_"), p + "m_", p + "m", c, inits)
        nodes += [helper.make_node("MatMul", [p + ("m_ln" if "m" in norms else "m"), p + "w2"], [p + "l2"], name=p + "mlp"),
                  helper.make_node("Transpose", [p + "l2"], [p + "y"], name=p + "to_nchw", perm=[0, 3, 1, 2])]
        inputs.append(_vi(p + "x", [1, c, h, w]))
        outputs.append(_vi(p + "y", [1, c, h, w]))
    return _model(nodes, inputs, outputs, inits)


# One change at a time from EdgeNeXt-XX-small's stage-3 block 1 on a 64x64 input (168 channels on a
# 2x2 map), against its stage-2 block 5 (88 channels on 4x4) and stage-1 block 1 (48 on 8x8).
XCA_SWAP_PACKS = {
    "sizes": ((168, 2, 1, ""), (88, 2, 1, ""), (48, 2, 1, ""), (168, 4, 1, ""), (88, 4, 1, ""), (48, 8, 1, "")),
    "split": ((168, 2, 4, ""), (88, 4, 3, ""), (168, 4, 4, ""), (88, 2, 3, ""), (168, 2, 3, ""), (88, 2, 4, "")),
    "norms": ((168, 2, 4, "tm"), (168, 2, 4, "m"), (168, 2, 4, "t"), (88, 4, 3, "tm"), (168, 2, 1, "tm"), (168, 2, 1, "m")),
    "tokens_norm": tuple((c, s, 1, "t") for c, s in ((168, 2), (88, 2), (48, 2), (160, 2), (176, 2), (168, 3), (168, 4), (88, 4), (256, 2), (168, 1))),
    "tokens_norm_align": tuple((c, s, 1, "t") for c, s in ((40, 2), (24, 2), (172, 2), (120, 2), (168, 5), (168, 6), (168, 8), (88, 3), (160, 3))),
    "tokens_norm_strip": tuple((c, side, 1, "t") for c, side in ((120, (1, 20)), (168, (1, 4)), (120, (4, 5)), (168, (4, 1)), (120, (2, 10)))),
}
CASES += [Case(f"xca_swap_{key}", "pool: EdgeNeXt's swap into tokens around its XCA, by map and channels",
               lambda v=v: xca_swap_pack(v), ("rk3588", "rk3566")) for key, v in XCA_SWAP_PACKS.items()]


# ---- pool: LeViT's MLP, transformers' spelling (found on the held-out hf_levit/rk3566) ----


def _levit_linear_norm(node, p, rng, prev, part, a, b):
    """transformers' MLPLayerWithBN: MatMul a -> b, Flatten(axis=2), BatchNormalization, Reshape
    back to the MatMul's Shape; (nodes, initializers, output)."""
    unit = "unitbn" in p  # an untrained BatchNorm1d: weight 1, bias 0, mean 0, variance 1
    inits = [_const(p + f"w_{part}", _weights(rng, a, b)), _const(p + f"g_{part}", np.ones(b, np.float32) if unit else 1 + _weights(rng, b)),
             _const(p + f"b_{part}", np.zeros(b, np.float32) if unit else _weights(rng, b)),
             _const(p + f"m_{part}", np.zeros(b, np.float32) if unit else _weights(rng, b)),
             _const(p + f"v_{part}", np.ones(b, np.float32) if unit else 1 + np.abs(_weights(rng, b)))]
    nodes = [node("MatMul", [prev, f"w_{part}"], f"{part}_mm"), node("Flatten", [f"{part}_mm"], f"{part}_flat", axis=2),
             node("BatchNormalization", [f"{part}_flat", f"g_{part}", f"b_{part}", f"m_{part}", f"v_{part}"], f"{part}_bn"),
             node("Shape", [f"{part}_mm"], f"{part}_shape"), node("Reshape", [f"{part}_bn", f"{part}_shape"], f"{part}_back")]
    return nodes, inits, p + f"{part}_back"


def levit_mlp_pack(variants: tuple, opset: int = 14) -> onnx.ModelProto:
    """LeViT's residual MLP as transformers writes LevitMLPLayer, (tokens, channels, hidden, flags)
    each, packed: MatMul to `hidden`, Flatten(axis=2), BatchNormalization, Reshape back to the
    MatMul's Shape, HardSwish, MatMul back to `channels`, the same Flatten/BatchNormalization/
    Reshape, and the residual Add; flags: "unitbn" gives the BatchNormalizations an untrained
    BatchNorm1d's parameters (as the held-out hf_levit has), "noact" drops the HardSwish."""
    rng = np.random.default_rng(37)
    nodes, inits, inputs, outputs = [], [], [], []
    for t, c, hid, *flags in variants:
        p = f"t{t}c{c}h{hid}{''.join('_' + f for f in flags)}_"
        node, prev = _prefixed(p), p + "x"
        for part, (a, b) in (("up", (c, hid)), ("down", (hid, c))):
            more, more_inits, prev = _levit_linear_norm(node, p, rng, prev, part, a, b)
            nodes, inits = nodes + more, inits + more_inits
            if part == "up" and "noact" not in flags:
                nodes.append(node("HardSwish", [prev], "act"))
                prev = p + "act"
        nodes.append(node("Add", ["x", prev], "res"))
        inputs.append(_vi(p + "x", [1, t, c]))
        outputs.append(_vi(p + "res", [1, t, c]))
    return _model(nodes, inputs, outputs, inits, opset=opset)


LEVIT_MLP_PACKS = {
    "base": ((16, 128, 256),),
    "unitbn": ((16, 128, 256, "unitbn"),),
    "unitbn_sizes": ((4, 128, 256, "unitbn"), (16, 128, 128, "unitbn"), (16, 256, 512, "unitbn")),
    "unitbn_tokens": ((9, 128, 256, "unitbn"), (49, 128, 256, "unitbn"), (1, 128, 256, "unitbn")),
    "unitbn_aligned": ((8, 128, 256, "unitbn"), (32, 128, 256, "unitbn"), (64, 128, 256, "unitbn"), (24, 128, 256, "unitbn")),
    "unitbn_flags": ((16, 128, 256, "unitbn", "noact"),),
}
# Not recorded: without the residual Add, the MLP's last Reshape (a model output) ran on the CPU
# on RK3566 with unit parameters: not explained.
CASES += [Case(f"levit_mlp_{name}", "pool: LeViT's MLP as transformers writes it (Linear, Flatten, BatchNorm1d, Reshape back; HardSwish; residual)",
               lambda v=v: levit_mlp_pack(v), ("rk3566", "rk3588")) for name, v in LEVIT_MLP_PACKS.items()]
CASES.append(Case("levit_mlp_unitbn_opset17", "pool: LeViT's MLP as transformers writes it, at opset 17 (timm's LeViT-128S's)",
                  lambda: levit_mlp_pack(LEVIT_MLP_PACKS["unitbn"], opset=17), ("rk3566", "rk3588")))


# ---- pool: a text encoder's embeddings, the sum of Gathers (transformers' BERT, ALBERT, ELECTRA) ----


def _embedding_operand(node, p: str, kind: str, dim: int, tokens: int, ids_type, rng, inits: list, inputs: list) -> tuple[list, str]:
    """What one embedding Add adds: tok (a token-type table [2, dim] gathered at constant zeros, as
    transformers' default token_type_ids), pos (a position table [512, dim] gathered at constant
    positions 0..T-1), const (a [1, T, dim] initializer), vec (a [dim] initializer), rt (a second
    table gathered at run-time ids of its own); (nodes, the operand's name)."""
    if kind in ("tok", "pos"):
        rows = 2 if kind == "tok" else 512
        ids = np.zeros((1, tokens)) if kind == "tok" else np.arange(tokens).reshape(1, tokens)
        inits += [_const(p + f"{kind}_table", _weights(rng, rows, dim)), _const(p + f"{kind}_ids", ids.astype(np.int64))]
        return [node("Gather", [f"{kind}_table", f"{kind}_ids"], f"{kind}_emb")], p + f"{kind}_emb"
    if kind in ("const", "vec"):
        inits.append(_const(p + f"{kind}{len(inits)}", _weights(rng, *((1, tokens, dim) if kind == "const" else (dim,)))))
        return [], inits[-1].name
    inits.append(_const(p + "rt_table", _weights(rng, 100, dim)))
    inputs.append(_vi(p + "rt_ids", [1, tokens], ids_type))
    return [node("Gather", ["rt_table", "rt_ids"], "rt_emb")], p + "rt_emb"


def embeddings_add_pack(variants: tuple, tokens: int = 32) -> onnx.ModelProto:
    """Text encoders' embeddings, (kinds, dim, flags) each, packed: a word table [1000, dim]
    gathered at run-time ids [1, T] (flag "mm": a Linear of a float input instead, an NPU
    producer; "int32": int32 ids), then one Add per kind in `kinds` (_embedding_operand), then a
    decomposed LayerNorm and a Linear (as BERT's embeddings go into its first layer); flag
    "branch": the first sum is also a model output; "cfirst": each Add takes the operand first."""
    rng = np.random.default_rng(27)
    nodes, inits, inputs, outputs = [], [], [], []
    for i, (kinds, dim, *flags) in enumerate(variants):
        p = f"e{i}_{'_'.join(kinds)}_{dim}{''.join('_' + f for f in flags)}_"
        node = _prefixed(p)
        ids_type = TensorProto.INT32 if "int32" in flags else TensorProto.INT64
        if "mm" in flags:
            inputs.append(_vi(p + "x", [1, tokens, dim]))
            inits.append(_const(p + "w_in", _weights(rng, dim, dim)))
            nodes.append(node("MatMul", ["x", "w_in"], "word_emb"))
        else:
            inputs.append(_vi(p + "ids", [1, tokens], ids_type))
            inits.append(_const(p + "word_table", _weights(rng, 1000, dim)))
            nodes.append(node("Gather", ["word_table", "ids"], "word_emb"))
        prev = p + "word_emb"
        for k, kind in enumerate(kinds):
            more, operand = _embedding_operand(node, p, kind, dim, tokens, ids_type, rng, inits, inputs)
            nodes += more + [node("Add", [operand, prev] if "cfirst" in flags else [prev, operand], f"sum{k}")]
            prev = p + f"sum{k}"
            if k == 0 and "branch" in flags:
                outputs.append(_vi(prev, [1, tokens, dim]))
        nodes += _layer_norm(node, p, prev, dim, inits)
        inits.append(_const(p + "w_out", _weights(rng, dim, dim)))
        nodes.append(node("MatMul", ["ln", "w_out"], "out"))
        outputs.append(_vi(p + "out", [1, tokens, dim]))
    return _model(nodes, inputs, outputs, inits, opset=14)


EMBEDDINGS_ADD_PACKS = {
    "bert": ((("tok", "pos"), 64), (("pos",), 64), (("pos", "tok"), 64), (("tok", "pos"), 128), (("tok", "pos"), 64, "int32")),
    "consts": ((("const", "const"), 64), (("vec", "vec"), 64), (("const",), 64), (("tok", "pos", "const"), 64), (("tok", "pos"), 64, "branch")),
    "producers": ((("rt",), 64), (("rt", "pos"), 64), (("pos", "rt"), 64), (("tok", "pos"), 64, "mm"), (("tok",), 64, "mm")),
    "orders": ((("tok", "pos"), 64, "cfirst"), (("vec", "const"), 64), (("const", "vec"), 64), (("vec", "vec", "vec", "vec"), 32), (("tok", "pos"), 16, "int32")),
}
CASES += [Case(f"embeddings_add_{name}", "pool: a text encoder's embeddings, the sum of Gathers (BERT, ALBERT, ELECTRA)",
               lambda v=v: embeddings_add_pack(v), ("rk3566", "rk3588")) for name, v in EMBEDDINGS_ADD_PACKS.items()]


# ---- pool: YOLO12's area attention (AAttn), as torch.onnx writes it ----


def _area_attention_block(node, p: str, x: str, rng, c: int, area: int, side: int, d: int) -> tuple[list, list, str]:
    """One AAttn on the map `x` [1, c, side, side] with heads of `d` (Ultralytics' AAttn.forward as
    exported: qkv 1x1 Conv, flatten, Transpose [0, 2, 1], the tokens regrouped into `area` areas
    when area > 1, heads split with Transpose [0, 2, 3, 1] and Split, attention, both the result and
    v permuted back [0, 3, 1, 2], merged into the map (channels-last Reshape, Transpose [0, 3, 1, 2]),
    a 7x7 depthwise positional Conv on v Added, a 1x1 projection). Returns nodes, inits, output."""
    h, n = c // d, side * side
    b, t = area, n // area
    inits = [_const(p + "w_qkv", _weights(rng, 3 * c, c, 1, 1)), _const(p + "b_qkv", _weights(rng, 3 * c)),
             _const(p + "flat", np.array([1, 3 * c, n], np.int64)), _const(p + "areas", np.array([b, t, 3 * c], np.int64)),
             _const(p + "heads", np.array([b, t, h, 3 * d], np.int64)), _const(p + "parts", np.array([d, d, d], np.int64)),
             _const(p + "scale", np.array(d**-0.5, np.float32)), _const(p + "merged", np.array([1, n, c], np.int64)),
             _const(p + "nhwc", np.array([1, side, side, c], np.int64)), _const(p + "w_pe", _weights(rng, c, 1, 7, 7)),
             _const(p + "b_pe", _weights(rng, c)), _const(p + "w_proj", _weights(rng, c, c, 1, 1)), _const(p + "b_proj", _weights(rng, c))]
    nodes = [node("Conv", [x, "w_qkv", "b_qkv"], "qkv", kernel_shape=[1, 1]), node("Reshape", ["qkv", "flat"], "qkv_flat"),
             node("Transpose", ["qkv_flat"], "qkv_tokens", perm=[0, 2, 1])]
    tokens = "qkv_tokens"
    if area > 1:
        nodes.append(node("Reshape", ["qkv_tokens", "areas"], "qkv_areas"))
        tokens = "qkv_areas"
    nodes += [node("Reshape", [tokens, "heads"], "qkv_heads"), node("Transpose", ["qkv_heads"], "qkv_t", perm=[0, 2, 3, 1]),
              helper.make_node("Split", [p + "qkv_t", p + "parts"], [p + "q", p + "k", p + "v"], name=p + "split", axis=2),
              node("Mul", ["q", "scale"], "q_scaled"), node("Transpose", ["q_scaled"], "q_t", perm=[0, 1, 3, 2]),
              node("MatMul", ["q_t", "k"], "scores"), node("Softmax", ["scores"], "attn", axis=-1),
              node("Transpose", ["attn"], "attn_t", perm=[0, 1, 3, 2]), node("MatMul", ["v", "attn_t"], "ctx"),
              node("Transpose", ["ctx"], "ctx_swap", perm=[0, 3, 1, 2]), node("Transpose", ["v"], "v_swap", perm=[0, 3, 1, 2])]
    ctx, v = "ctx_swap", "v_swap"
    if area > 1:
        nodes += [node("Reshape", ["ctx_swap", "merged"], "ctx_merged"), node("Reshape", ["v_swap", "merged"], "v_merged")]
        ctx, v = "ctx_merged", "v_merged"
    nodes += [node("Reshape", [ctx, "nhwc"], "ctx_grid"), node("Transpose", ["ctx_grid"], "ctx_map", perm=[0, 3, 1, 2]),
              node("Reshape", [v, "nhwc"], "v_grid"), node("Transpose", ["v_grid"], "v_map", perm=[0, 3, 1, 2]),
              node("Conv", ["v_map", "w_pe", "b_pe"], "pe", group=c, kernel_shape=[7, 7], pads=[3, 3, 3, 3]),
              node("Add", ["ctx_map", "pe"], "sum"), node("Conv", ["sum", "w_proj", "b_proj"], "proj", kernel_shape=[1, 1])]
    return nodes, inits, p + "proj"


def area_attention_pack(variants: tuple) -> onnx.ModelProto:
    """Independent cases, each on an input [1, c, side, side] of its own: a 1x1 Conv (A2C2f's cv1),
    then `blocks` area-attention blocks in a row, each Added to its input (ABlock's residual).
    `variants`: tuples (name, c, area, side, head size, blocks)."""
    rng = np.random.default_rng(37)
    nodes, inits, inputs, outputs = [], [], [], []
    for name, c, area, side, d, blocks, *flags in variants:
        p = f"{name}_"
        node = _prefixed(p)
        inits += [_const(p + "w_in", _weights(rng, c, c, 1, 1))]
        nodes.append(node("Conv", ["x", "w_in"], "b0", kernel_shape=[1, 1]))
        if "add_in" in flags:  # the first block reads a residual Add, as every later one does
            nodes[-1] = node("Conv", ["x", "w_in"], "c0", kernel_shape=[1, 1])
            nodes.append(node("Add", ["x", "c0"], "b0"))
        for i in range(blocks):
            more, more_inits, out = _area_attention_block(_prefixed_within(p, f"a{i}_"), f"{p}a{i}_", f"{p}b{i}", rng, c, area, side, d)
            nodes += more + [node("Identity" if "no_residual" in flags else "Add", [out] if "no_residual" in flags else [f"b{i}", out], f"b{i + 1}")]
            inits += more_inits
        inputs.append(_vi(p + "x", [1, c, side, side]))
        outputs.append(_vi(f"{p}b{blocks}", [1, c, side, side]))
    used = {i for x in nodes for i in x.input}
    return _model(nodes, inputs, outputs, [i for i in inits if i.name in used])


# YOLO12n's model.6 at the pool's 160x160 input (2 heads of 32 on a 10x10 map, 4 areas of 25
# tokens, two blocks in a row) and its model.8 (4 heads of 32 on 5x5, one area); then the map
# (320 and 640 inputs: 20x20, 40x40), the tokens per area and the heads changed.
AREA_ATTENTION_PACKS = {
    "y12n": (("s10a4", 64, 4, 10, 32, 2), ("s5a1", 128, 1, 5, 32, 1)),
    "maps": (("s20a4", 64, 4, 20, 32, 2), ("s8a4", 64, 4, 8, 32, 1), ("s4a4", 64, 4, 4, 32, 1), ("s16a4", 64, 4, 16, 32, 1)),
    "heads": (("s10a4h4", 128, 4, 10, 32, 2), ("s10a4d16", 64, 4, 10, 16, 1), ("s10a1", 64, 1, 10, 32, 1), ("s20a1", 128, 1, 20, 32, 1)),
    "s40": (("s40a4", 64, 4, 40, 32, 2),),
    "rows": (("first", 64, 4, 8, 32, 1), ("addin", 64, 4, 10, 32, 1, "add_in"), ("nores", 64, 4, 10, 32, 3, "no_residual")),
}
CASES += [Case(f"area_attention_{key}", "pool: YOLO12's area attention (AAttn) as torch.onnx writes it",
               lambda v=v: area_attention_pack(v), ("rk3566", "rk3588")) for key, v in AREA_ATTENTION_PACKS.items()]


# ---- pool (issue 27, tuning part): ConvNeXt-V2's global response norm at timm's initial weights --


def _grn_case(rng, spec) -> tuple[list, list, list, list]:
    """One GRN_PACK entry: Conv, timm's GlobalResponseNorm as torch.onnx writes it
    (x + addcmul(bias, weight, x * Nx), Nx = ||x||_spatial / (mean over channels + eps)), Conv.
    `layout` nchw: ReduceL2 over axes [2, 3], the mean over axis 1 (timm's conv_mlp blocks);
    nhwc: between Transposes to and from channels-last, ReduceL2 over [1, 2], the mean over -1.
    `params`: zero_shared (weight and bias zeros, the weight an Identity of the bias as torch.onnx
    writes two equal parameters: timm's initial values), zero (two zero initializers), gamma0
    (weight zeros, bias not), beta0 (bias zeros, weight not), random; `reader` "used": the
    normalised map Nx is also a model output of its own (a Relu of it)."""
    name, channels, side, layout, params, *reader = spec
    p = f"{name}_"
    shape = [1, channels, 1, 1] if layout == "nchw" else [channels]
    inits = [_const(p + "w1", _weights(rng, channels, 3, 3, 3)), _const(p + "w2", _weights(rng, 4, channels, 3, 3)),
             _const(p + "eps", np.array(1e-6, np.float32)), _const(p + "one", np.array([1.0], np.float32))]
    weight = np.zeros(shape, np.float32) if params in ("zero_shared", "zero", "gamma0") else _weights(rng, *shape)
    bias = np.zeros(shape, np.float32) if params in ("zero_shared", "zero", "beta0") else _weights(rng, *shape)
    inits.append(_const(p + "bias", bias))
    nodes = [helper.make_node("Conv", [p + "x", p + "w1"], [p + "c"], name=p + "conv1", pads=[1, 1, 1, 1])]
    if params == "zero_shared":
        nodes.append(helper.make_node("Identity", [p + "bias"], [p + "weight"], name=p + "weight_identity"))
    else:
        inits.append(_const(p + "weight", weight))
    x, spatial, across = p + "c", [2, 3], [1]
    if layout == "nhwc":
        nodes.append(helper.make_node("Transpose", [p + "c"], [p + "t"], name=p + "to_nhwc", perm=[0, 2, 3, 1]))
        x, spatial, across = p + "t", [1, 2], [-1]
    nodes += [
        helper.make_node("ReduceL2", [x], [p + "g"], name=p + "l2", axes=spatial, keepdims=1),
        helper.make_node("ReduceMean", [p + "g"], [p + "gm"], name=p + "mean", axes=across, keepdims=1),
        helper.make_node("Add", [p + "gm", p + "eps"], [p + "d"], name=p + "eps_add"),
        helper.make_node("Div", [p + "g", p + "d"], [p + "n"], name=p + "div"),
        helper.make_node("Mul", [x, p + "n"], [p + "xn"], name=p + "apply"),
        helper.make_node("Mul", [p + "weight", p + "xn"], [p + "gx"], name=p + "gamma_mul"),
        helper.make_node("Mul", [p + "gx", p + "one"], [p + "gx1"], name=p + "value_mul"),
        helper.make_node("Add", [p + "bias", p + "gx1"], [p + "gb"], name=p + "beta_add"),
        helper.make_node("Add", [x, p + "gb"], [p + "r"], name=p + "residual"),
    ]
    y = p + "r"
    if layout == "nhwc":
        nodes.append(helper.make_node("Transpose", [p + "r"], [p + "rt"], name=p + "to_nchw", perm=[0, 3, 1, 2]))
        y = p + "rt"
    nodes.append(helper.make_node("Conv", [y, p + "w2"], [p + "y"], name=p + "conv2", pads=[1, 1, 1, 1]))
    outputs = [_vi(p + "y", [1, 4, side, side])]
    if reader == ["used"]:
        nodes.append(helper.make_node("Relu", [p + "n"], [p + "n_out"], name=p + "n_relu"))
        outputs.append(_vi(p + "n_out", [1, channels, 1, 1] if layout == "nchw" else [1, 1, 1, channels]))
    return nodes, inits, [_vi(p + "x", [1, 3, side, side])], outputs


GRN_PACK = (
    ("c160s16_zero_shared", 160, 16, "nchw", "zero_shared"),  # convnextv2_atto's first stage, as exported
    ("c8s8_zero_shared", 8, 8, "nchw", "zero_shared"),
    ("c8s8_zero", 8, 8, "nchw", "zero"),
    ("c8s8_gamma0", 8, 8, "nchw", "gamma0"),
    ("c8s8_beta0", 8, 8, "nchw", "beta0"),
    ("c8s8_random", 8, 8, "nchw", "random"),
    ("c160s16_random", 160, 16, "nchw", "random"),
    ("c8s8_zero_used", 8, 8, "nchw", "zero", "used"),
    ("c32s8_nhwc_random", 32, 8, "nhwc", "random"),
)
# Not recorded (probed 2026-12-04, the audit disagrees): the channels-last GRN at a zero weight
# (bias zero or not) runs its two Transposes on the NPU of RK3566 too: after the fold the block is
# x + a constant [1, H, W, C], and the toolkit cancels the Transposes around it; the audit cancels
# a pair only around arithmetic with a scalar or a per-channel constant, so keeps them on the CPU.


def grn_pack(entries: tuple = GRN_PACK) -> onnx.ModelProto:
    """Every GRN_PACK entry in one model (opset 13): one conversion places them all."""
    return _packed(_grn_case, entries, 71)


CASES.append(Case("grn_pack", "pool: ConvNeXt-V2's global response norm, by weights, layout and size", grn_pack, ("rk3588", "rk3566")))


# ---- pool (issue 27, tuning part): rotary position embeddings (EVA-02) ---------------------------


def _rope_rotated(p: str, x: str, form: str, axis: int, nodes: list, node) -> str:
    """The rotated half of `x` for `form` (see _rope_case), appended to `nodes`; its name."""
    if form == "halves":
        nodes += [node("Slice", [x, p + "half", p + "end", p + "axis", p + "one"], "slice_second"), node("Neg", [p + "slice_second"], "neg"),
                  node("Slice", [x, p + "zero", p + "half", p + "axis", p + "one"], "slice_first"), node("Concat", [p + "neg", p + "slice_first"], "rot", axis=axis)]
        return p + "rot"
    nodes += [node("Slice", [x, p + "one", p + "end", p + "axis", p + "two"], "slice_odd"), node("Slice", [x, p + "zero", p + "end", p + "axis", p + "two"], "slice_even")]
    odd = p + "slice_odd"
    if form in ("stack", "cat", "stack_even_first"):
        nodes.append(node("Neg", [odd], "neg"))
        odd = p + "neg"
    elif form in ("stack_mulneg", "stack_relu"):
        nodes.append(node("Mul", [odd, p + "minus_one"], "neg") if form == "stack_mulneg" else node("Relu", [odd], "relu"))
        odd = p + ("neg" if form == "stack_mulneg" else "relu")
    pair = [odd, p + "slice_even"][:: -1 if form.endswith("even_first") else 1]
    if form.startswith("cat"):
        nodes.append(node("Concat", pair, "rot", axis=axis))
        return p + "rot"
    nodes += [node("Unsqueeze", [pair[0], p + "new_axis"], "unsqueeze_first"), node("Unsqueeze", [pair[1], p + "new_axis"], "unsqueeze_second"),
              node("Concat", [p + "unsqueeze_first", p + "unsqueeze_second"], "stack", axis=-1), node("Reshape", [p + "stack", p + "shape"], "rot")]
    return p + "rot"


def _rope_case(rng, spec) -> tuple[list, list, list, list]:
    """One ROPE_PACK entry on an input of `shape` ([B, H, T, D] or [B, T, D]) plus a constant (a
    computed tensor), then x * cos + rotate(x) * sin with constant tables, as timm's EVA-02 and
    LLaMA-style models write it. `form`: stack (EVA-02: x[..., 1::2] negated and x[..., ::2], each
    Unsqueezed, Concat on a new last axis, Reshaped back), stack_mulneg (the negation a Mul by -1),
    stack_noneg (no negation), stack_relu (a Relu in its place), stack_even_first (the even
    elements first), cat (-x[..., 1::2] and x[..., ::2] Concatenated on the sliced axis),
    cat_even_first (x[..., ::2] and x[..., 1::2]), halves (-x[..., D/2:] and x[..., :D/2]
    Concatenated: step 1), pair_add (x[..., ::2] + x[..., 1::2]: no Concat). `axis`: the axis
    sliced (the last by default)."""
    name, shape, form, *rest = spec
    p, rank = f"{name}_", len(shape)
    axis = rest[0] if rest else rank - 1
    node = lambda op, ins, out, **kw: helper.make_node(op, ins, [p + out], name=p + out, **kw)  # noqa: E731
    half_shape = [d // 2 if i == axis else d for i, d in enumerate(shape)]
    inits = [_const(p + "shift", _weights(rng, *shape[1:])), _const(p + "cos", _weights(rng, *shape[-2:])),
             _const(p + "sin", _weights(rng, *shape[-2:])), _const(p + "axis", np.array([axis], np.int64)), _const(p + "two", np.array([2], np.int64)),
             _const(p + "zero", np.array([0], np.int64)), _const(p + "one", np.array([1], np.int64)), _const(p + "end", np.array([1 << 62], np.int64)),
             _const(p + "half", np.array([shape[axis] // 2], np.int64)), _const(p + "minus_one", np.array(-1.0, np.float32)),
             _const(p + "new_axis", np.array([-1], np.int64)), _const(p + "shape", np.array(shape, np.int64))]
    nodes = [node("Add", [p + "x", p + "shift"], "xs")]
    x = p + "xs"
    if form == "pair_add":
        nodes += [node("Slice", [x, p + "one", p + "end", p + "axis", p + "two"], "slice_odd"), node("Slice", [x, p + "zero", p + "end", p + "axis", p + "two"], "slice_even"),
                  node("Add", [p + "slice_odd", p + "slice_even"], "y")]
        return nodes, inits, [_vi(p + "x", list(shape))], [_vi(p + "y", half_shape)]
    rot = _rope_rotated(p, x, form, axis, nodes, node)
    nodes += [node("Mul", [x, p + "cos"], "cos_mul"), node("Mul", [rot, p + "sin"], "sin_mul"), node("Add", [p + "cos_mul", p + "sin_mul"], "y")]
    return nodes, inits, [_vi(p + "x", list(shape))], [_vi(p + "y", list(shape))]


ROPE_PACK = (
    ("h3t16d64_stack", (1, 3, 16, 64), "stack"),  # EVA-02 tiny's q and k after the class token
    ("h3t16d64_stack_mulneg", (1, 3, 16, 64), "stack_mulneg"),
    ("h3t16d64_stack_noneg", (1, 3, 16, 64), "stack_noneg"),
    ("h3t16d64_stack_relu", (1, 3, 16, 64), "stack_relu"),
    ("h3t16d64_stack_even_first", (1, 3, 16, 64), "stack_even_first"),
    ("h3t16d64_cat", (1, 3, 16, 64), "cat"),
    ("h3t16d64_cat_even_first", (1, 3, 16, 64), "cat_even_first"),
    ("h3t16d64_cat_axis2", (1, 3, 16, 64), "cat", 2),
    ("h4t8d16_cat_axis1", (1, 4, 8, 16), "cat", 1),
    ("h3t16d64_halves", (1, 3, 16, 64), "halves"),
    ("h3t16d64_pair_add", (1, 3, 16, 64), "pair_add"),
    ("h4t8d16_stack", (1, 4, 8, 16), "stack"),
    ("h2t16d32_stack", (1, 2, 16, 32), "stack"),
)
# Not recorded (probed 2026-12-04, RK3588 and RK3566 alike; the audit disagrees, not explained):
# the same stack form on a 3-D [1, 16, 64] input runs both Slices and the even elements'
# Unsqueeze on the CPU (the audit: the Unsqueeze on the NPU); x[..., 1::2] negated alone and
# times a table runs the Slice and the Neg on the CPU (the audit: the Neg on the NPU).


def rope_pack(entries: tuple = ROPE_PACK) -> onnx.ModelProto:
    """Every ROPE_PACK entry in one model (opset 13): one conversion places them all."""
    return _packed(_rope_case, entries, 72, used_only=True)


CASES.append(Case("rope_pack", "pool: rotary position embeddings (EVA-02's rotate_half and its variants)", rope_pack, ("rk3588", "rk3566")))
# ---- fresh8: rotary positions rotated through an unflattened pair axis (V-JEPA 2) ----------------
# transformers' V-JEPA 2 rotates each head's part by x.unflatten(-1, (-1, 2)), unbind(-1),
# stack((-x2, x1), -1), flatten(-2): a Reshape into 5-D [B, H, T, D/2, 2], a Split of the pair axis,
# two Squeezes, a Neg, two Unsqueezes, a Concat on a new last axis and a Reshape back to 4-D; then
# x * cos + rotated * sin. Forms: "unbind" (that), "unbind_noneg" (no Neg), "roundtrip" (the two
# Reshapes straight, nothing between), "swap" (the Split's two parts Concatenated back swapped, no
# Squeeze or Unsqueeze), "stack" (the pair axis made by a Concat of two Unsqueezed
# step-2 Slices, EVA-02's form, for comparison with the same shapes).


def _rope_unflatten_case(rng, spec) -> tuple[list, list, list, list]:
    """One ROPE_UNFLATTEN_PACK entry on an input of `shape` [B, H, T, D] plus a constant."""
    name, shape, form = spec
    p = f"{name}_"
    node = lambda op, ins, out, **kw: helper.make_node(op, ins, [p + out], name=p + out, **kw)  # noqa: E731
    pairs = list(shape[:-1]) + [shape[-1] // 2, 2]
    inits = [_const(p + "shift", _weights(rng, *shape[1:])), _const(p + "cos", _weights(rng, *shape[-2:])), _const(p + "sin", _weights(rng, *shape[-2:])),
             _const(p + "pairs", np.array(pairs, np.int64)), _const(p + "shape", np.array(shape, np.int64)), _const(p + "ones", np.array([1, 1], np.int64)),
             _const(p + "last", np.array([-1], np.int64))]
    nodes = [node("Add", [p + "x", p + "shift"], "xs")]
    if form == "stack":
        return _rope_case(rng, (name + "_eva", shape, "stack"))
    nodes.append(node("Reshape", [p + "xs", p + "pairs"], "unflatten"))
    if form == "roundtrip":
        nodes.append(node("Reshape", [p + "unflatten", p + "shape"], "rot"))
    elif form == "swap":
        nodes += [helper.make_node("Split", [p + "unflatten", p + "ones"], [p + "x1", p + "x2"], name=p + "unbind", axis=-1),
                  node("Concat", [p + "x2", p + "x1"], "stack", axis=-1), node("Reshape", [p + "stack", p + "shape"], "rot")]
    else:
        nodes += [helper.make_node("Split", [p + "unflatten", p + "ones"], [p + "x1", p + "x2"], name=p + "unbind", axis=-1),
                  node("Squeeze", [p + "x1", p + "last"], "squeeze_first"), node("Squeeze", [p + "x2", p + "last"], "squeeze_second")]
        second = p + "squeeze_second"
        if form == "unbind":
            nodes.append(node("Neg", [second], "neg"))
            second = p + "neg"
        nodes += [node("Unsqueeze", [second, p + "last"], "unsqueeze_second"), node("Unsqueeze", [p + "squeeze_first", p + "last"], "unsqueeze_first"),
                  node("Concat", [p + "unsqueeze_second", p + "unsqueeze_first"], "stack", axis=-1), node("Reshape", [p + "stack", p + "shape"], "rot")]
    nodes += [node("Mul", [p + "xs", p + "cos"], "cos_mul"), node("Mul", [p + "rot", p + "sin"], "sin_mul"), node("Add", [p + "cos_mul", p + "sin_mul"], "y")]
    return nodes, inits, [_vi(p + "x", list(shape))], [_vi(p + "y", list(shape))]


ROPE_UNFLATTEN_PACK = (
    ("h2t64d10_unbind", (1, 2, 64, 10), "unbind"),  # V-JEPA 2 (fresh8): a head's 10 values per axis
    ("h2t64d10_unbind_noneg", (1, 2, 64, 10), "unbind_noneg"),
    ("h2t64d10_roundtrip", (1, 2, 64, 10), "roundtrip"),
    ("h2t64d10_stack", (1, 2, 64, 10), "stack"),
    ("h3t16d64_unbind", (1, 3, 16, 64), "unbind"),
    ("h3t16d64_roundtrip", (1, 3, 16, 64), "roundtrip"),
    ("h2t64d32_unbind", (1, 2, 64, 32), "unbind"),
    ("h2t16d16_unbind", (1, 2, 16, 16), "unbind"),
    ("h2t64d6_unbind", (1, 2, 64, 6), "unbind"),
    ("h2t64d8_unbind", (1, 2, 64, 8), "unbind"),
    ("h2t64d12_unbind", (1, 2, 64, 12), "unbind"),
    ("h2t64d20_unbind", (1, 2, 64, 20), "unbind"),
    ("h2t64d24_unbind", (1, 2, 64, 24), "unbind"),
    ("h2t64d48_unbind", (1, 2, 64, 48), "unbind"),
    ("h2t16d10_unbind", (1, 2, 16, 10), "unbind"),
    ("h2t9d16_unbind", (1, 2, 9, 16), "unbind"),
    ("h2t64d10_swap", (1, 2, 64, 10), "swap"),
)


def rope_unflatten_pack(entries: tuple = ROPE_UNFLATTEN_PACK) -> onnx.ModelProto:
    """Every ROPE_UNFLATTEN_PACK entry in one model (opset 13): one conversion places them all."""
    return _packed(_rope_unflatten_case, entries, 73, used_only=True)


CASES.append(Case("rope_unflatten_pack", "fresh8: rotary positions rotated through an unflattened pair axis (V-JEPA 2's unbind and stack)", rope_unflatten_pack, ("rk3588", "rk3566")))
# ---- pool: integer arithmetic at run time (RoBERTa's position ids from input_ids) ---------------

_ONNX_INT = {"int64": TensorProto.INT64, "int32": TensorProto.INT32}


def _roberta_position_ids(node, k: "_Constants", ids: str, dtype: str) -> list:
    """transformers' create_position_ids_from_input_ids as torch.onnx writes it: mask = (ids !=
    padding_idx) as Equal and Not, Cast to int32, CumSum along the tokens, times the mask, Cast
    back to the ids' type, plus padding_idx; the result is "pos"."""
    one, axis, pad = k(1, np.int64 if dtype == "int64" else np.int32), k(1, np.int32), k(1, np.int64 if dtype == "int64" else np.int32)
    return [node("Equal", [ids, one], "eq"), node("Not", ["eq"], "mask"), node("Cast", ["mask"], "mask_i", to=TensorProto.INT32),
            node("CumSum", ["mask_i", axis], "cum"), node("Mul", ["cum", "mask_i"], "incr"),
            node("Cast", ["incr"], "incr_ids", to=_ONNX_INT[dtype]), node("Add", ["incr_ids", pad], "pos")]


def _integer_binary(node, k: "_Constants", variant: str, dtype: str, inputs: list, tokens: int) -> list:
    """`op`_`operand`: the ids Added to (Sub, Mul) a second ids input (ids) or a constant 1 (one)."""
    op, operand = variant.split("_")[:2]
    if operand == "ids":
        inputs.append(_vi("ids2", [1, tokens], _ONNX_INT[dtype]))
        other = "ids2"
    else:
        other = k(1, np.int64 if dtype == "int64" else np.int32)
    return [node(op.capitalize(), ["ids", other], "pos")]


def integer_path(variant: str, tokens: int = 32, dim: int = 64) -> onnx.ModelProto:
    """One integer computation on run-time ids [1, T] and where its result goes: into a position
    table's Gather, added to the word embeddings, a LayerNorm and a Linear; with the suffix _out a
    model output instead (_cast_out: Cast to float first). variant: roberta (RoBERTa's position
    ids), add_ids / sub_ids / mul_ids (the ids and a second ids input), add_one / sub_one /
    mul_one (the ids and a constant 1), mask (Equal and Not of the ids, a bool result), cumsum
    (CumSum of the ids); _int32: int32 ids (else int64)."""
    rng = np.random.default_rng(28)
    dtype = "int32" if "_int32" in variant else "int64"
    k, node = _Constants(), _prefixed("")
    inputs, inits, nodes = [_vi("ids", [1, tokens], _ONNX_INT[dtype])], [_const("table", _weights(rng, 512, dim))], []
    out_type, result = _ONNX_INT[dtype], "pos"
    if variant.startswith("roberta"):
        nodes = _roberta_position_ids(node, k, "ids", dtype)
    elif variant.split("_")[0] in ("add", "sub", "mul"):
        nodes = _integer_binary(node, k, variant, dtype, inputs, tokens)
    elif variant.startswith("mask"):
        nodes, out_type, result = [node("Equal", ["ids", k(1, np.int64 if dtype == "int64" else np.int32)], "eq"), node("Not", ["eq"], "mask")], TensorProto.BOOL, "mask"
    elif variant.startswith("cumsum"):
        nodes = [node("CumSum", ["ids", k(1, np.int32)], "pos")]
    if variant.endswith("_cast_out"):
        nodes.append(node("Cast", [result], "as_float", to=TensorProto.FLOAT))
        out_type, result = TensorProto.FLOAT, "as_float"
    if variant.endswith("_out"):
        return _model(k.nodes + nodes, inputs, [_vi(result, [1, tokens], out_type)], k.inits + inits, opset=14)
    inits += [_const("word", _weights(rng, 1000, dim)), _const("w_out", _weights(rng, dim, dim))]
    nodes += [node("Gather", ["table", "pos"], "pos_emb"), node("Gather", ["word", "ids"], "word_emb"), node("Add", ["word_emb", "pos_emb"], "emb")]
    nodes += _layer_norm(node, "", "emb", dim, inits) + [node("MatMul", ["ln", "w_out"], "out")]
    return _model(k.nodes + nodes, inputs, [_vi("out", [1, tokens, dim])], k.inits + inits, opset=14)


INTEGER_PATH_VARIANTS = (
    "roberta", "roberta_int32", "roberta_out", "add_ids", "add_ids_out", "add_one", "add_one_out", "mask_out", "cumsum_int32",
    "add_one_int32", "add_ids_int32", "sub_one_int32", "mul_one_int32", "mul_ids_int32", "sub_one", "mul_one", "cumsum",
    "add_one_cast_out", "add_one_int32_out",
)  # fmt: skip
CASES += [Case(f"integer_path_{v}", "pool: integer arithmetic at run time (RoBERTa's position ids)", lambda v=v: integer_path(v), ("rk3566", "rk3588"))
          for v in INTEGER_PATH_VARIANTS]


# ---- pool: a speech encoder's front (wav2vec2 / HuBERT as transformers writes them) ----

FEATURES = 32  # the feature extractor's channels (the pool's tiny wav2vec2/HuBERT configs)


def _erf_gelu(node, x: str, out: str) -> list:
    """GELU as torch.onnx writes the exact form: x * 0.5 * (1 + erf(x / sqrt(2)))."""
    return [node("Div", [x, "sqrt2"], out + "_d"), node("Erf", [out + "_d"], out + "_e"), node("Add", [out + "_e", "one"], out + "_a"),
            node("Mul", [x, out + "_a"], out + "_m"), node("Mul", [out + "_m", "half"], out)]


def speech_front_pack(variants: tuple) -> onnx.ModelProto:
    """Independent cases, each on an input of its own. `form` "wave": a waveform [1, L] made
    [1, 1, L] (Unsqueeze axis 1; "wave_reshape": a Reshape; "wave_relu": after a Relu) and read by
    the feature extractor's first Conv1d (1 -> c channels, kernel 10, stride 5), as wav2vec2's
    ("wave_noconv": read by a Relu instead);
    "posconv": the extractor's features [1, 32, L] swapped into tokens, layer-normed and projected
    to [1, L, c] (the feature projection), swapped to [1, c, L] (Transpose [0, 2, 1]), the
    positional grouped Conv1d (kernel k, padding k/2, `groups`), the extra last step dropped by a
    Slice, GELU, swapped back (Transpose [0, 2, 1]), Added to the tokens, then the encoder's layer
    norm and a Linear ("posconv_noslice": no Slice, odd k; "posconv_nogelu": no GELU;
    "posconv_out": the Add is the model's output). `variants`: tuples (name,
    form, L, c, k, groups)."""
    rng = np.random.default_rng(38)
    nodes, inputs, outputs = [], [], []
    inits = [_const("sqrt2", np.array(np.sqrt(2.0), np.float32)), _const("one", np.array(1.0, np.float32)),
             _const("half", np.array(0.5, np.float32)), _const("axis1", np.array([1], np.int64))]
    for name, form, length, c, k, groups in variants:
        p = f"{name}_"
        node = _prefixed(p)
        if form.startswith("wave"):
            out = (length - 10) // 5 + 1
            inits += [_const(p + "w", _weights(rng, c, 1, 10)), _const(p + "shape", np.array([1, 1, length], np.int64))]
            x = "x"
            if form == "wave_relu":
                nodes.append(node("Relu", ["x"], "r"))
                x = "r"
            nodes.append(node("Reshape", [x, "shape"], "u") if form == "wave_reshape" else helper.make_node("Unsqueeze", [p + x, "axis1"], [p + "u"], name=p + "u"))
            if form == "wave_noconv":  # not read by a convolution: a Relu
                nodes.append(node("Relu", ["u"], "y"))
            else:
                nodes.append(node("Conv", ["u", "w"], "y", kernel_shape=[10], strides=[5]))
            inputs.append(_vi(p + "x", [1, length]))
            outputs.append(_vi(p + "y", [1, 1, length] if form == "wave_noconv" else [1, c, out]))
            continue
        inits += [_const(p + "w_lin", _weights(rng, FEATURES, c)), _const(p + "b_lin", _weights(rng, c)), _const(p + "w_out", _weights(rng, c, c)),
                  _const(p + "w_pos", _weights(rng, c, c // groups, k)), _const(p + "b_pos", _weights(rng, c)),
                  _const(p + "s0", np.array([0], np.int64)), _const(p + "s1", np.array([-1], np.int64)), _const(p + "s2", np.array([2], np.int64))]
        nodes += [node("Transpose", ["x"], "feat", perm=[0, 2, 1])] + _layer_norm(_prefixed_within(p, "f_"), p + "f_", p + "feat", FEATURES, inits)
        nodes += [node("MatMul", ["f_ln", "w_lin"], "lin"), node("Add", ["b_lin", "lin"], "tok"), node("Transpose", ["tok"], "swap", perm=[0, 2, 1]),
                  node("Conv", ["swap", "w_pos", "b_pos"], "pos", group=groups, kernel_shape=[k], pads=[k // 2, k // 2])]
        pos = "pos"
        if form in ("posconv", "posconv_nogelu", "posconv_out"):
            nodes.append(node("Slice", ["pos", "s0", "s1", "s2"], "trim"))
            pos = "trim"
        if form != "posconv_nogelu":
            nodes += _erf_gelu(lambda op, ins, n: helper.make_node(op, [i if i in ("sqrt2", "one", "half") or i.startswith(p) else p + i for i in ins], [p + n], name=p + n), pos, "act")
            pos = "act"
        nodes += [node("Transpose", [pos], "back", perm=[0, 2, 1]), node("Add", ["tok", "back"], "y" if form == "posconv_out" else "res")]
        if form != "posconv_out":  # the encoder's layer norm and a Linear after it
            nodes += _layer_norm(_prefixed_within(p, "e_"), p + "e_", p + "res", c, inits) + [node("MatMul", ["e_ln", "w_out"], "y")]
        inputs.append(_vi(p + "x", [1, FEATURES, length]))
        outputs.append(_vi(p + "y", [1, length, c]))
    used = {i for x in nodes for i in x.input}
    return _model(nodes, inputs, outputs, [i for i in inits if i.name in used])


# The pool's hf_wav2vec2/hf_hubert (tiny configs at a [1, 4000] waveform: 32 channels, 199 tokens
# of 64, a kernel-16 Conv of 4 groups), then the lengths, channels and spellings changed.
SPEECH_FRONT_PACKS = {
    "pool": (("wave4000", "wave", 4000, 32, 0, 0), ("pos199", "posconv", 199, 64, 16, 4)),
    "posconv": (("p49", "posconv", 49, 64, 16, 4), ("p64", "posconv", 64, 64, 16, 4), ("p100c48", "posconv", 100, 48, 16, 16),
                ("ns", "posconv_noslice", 199, 64, 15, 4), ("ng", "posconv_nogelu", 199, 64, 16, 4), ("c96", "posconv", 49, 96, 16, 16)),
    "waves": (("w576", "wave", 576, 32, 0, 0), ("w1600", "wave", 1600, 32, 0, 0), ("w400", "wave", 400, 16, 0, 0),
              ("wr4000", "wave_reshape", 4000, 32, 0, 0), ("wl4000", "wave_relu", 4000, 32, 0, 0), ("w16000", "wave", 16000, 64, 0, 0)),
    "controls": (("nc576", "wave_noconv", 576, 1, 0, 0), ("nc4000", "wave_noconv", 4000, 1, 0, 0), ("out199", "posconv_out", 199, 64, 16, 4)),
}
CASES += [Case(f"speech_front_{key}", "pool: a speech encoder's front (wav2vec2's waveform Unsqueeze and positional Conv1d)",
               lambda v=v: speech_front_pack(v), ("rk3566", "rk3588")) for key, v in SPEECH_FRONT_PACKS.items()]
# ---- pool: an Identity on a run-time tensor (Paddle2ONNX's classifier head: Softmax, Identity, output) ----


def _identity_source(node, p: str, before: str, rank: int, rng, inits: list, inputs: list) -> tuple[list, str]:
    """What the Identity reads: softmax (a Linear with its bias, then Softmax over the last axis),
    linear (the biased Linear), relu (a Linear, then Relu), conv (a 3x3 Conv), gather (a table
    gathered at run-time ids), input (the model input itself); (nodes, the tensor's name)."""
    shape = {2: [1, 64], 3: [1, 16, 32], 4: [1, 8, 16, 16]}[rank]
    if before == "gather":
        inputs.append(_vi(p + "ids", [1, 16], TensorProto.INT64))
        inits.append(_const(p + "table", _weights(rng, 100, 32)))
        return [node("Gather", ["table", "ids"], "src")], p + "src"
    inputs.append(_vi(p + "x", shape))
    if before == "input":
        return [], p + "x"
    if before == "conv":
        inits.append(_const(p + "k", _weights(rng, 8, 8, 3, 3)))
        return [node("Conv", ["x", "k"], "src", pads=[1, 1, 1, 1])], p + "src"
    width = shape[-1]
    inits += [_const(p + "w", _weights(rng, width, width)), _const(p + "b", _weights(rng, width))]
    nodes = [node("MatMul", ["x", "w"], "lin")]
    if before == "relu":
        return nodes + [node("Relu", ["lin"], "src")], p + "src"
    nodes.append(node("Add", ["lin", "b"], "src" if before == "linear" else "biased"))
    if before == "softmax":
        nodes.append(node("Softmax", ["biased"], "src", axis=rank - 1))
    return nodes, p + "src"


def identity_pack(variants: tuple, opset: int = 11) -> onnx.ModelProto:
    """An Identity on a run-time tensor, (before, where, rank) each, packed: `before` computes the
    tensor (_identity_source), the Identity reads it, and `where` is out (the Identity writes the
    model output, as Paddle2ONNX ends PP-OCR's direction classifier after its Softmax), twice (two
    Identities, the second writes the output) or mid (a Linear, or a 1x1 Conv at rank 4, reads
    it)."""
    rng = np.random.default_rng(29)
    nodes, inits, inputs, outputs = [], [], [], []
    for before, where, rank in variants:
        p = f"{before}_{where}_{rank}d_"
        node = _prefixed(p)
        more, src = _identity_source(node, p, before, rank, rng, inits, inputs)
        nodes += more + [node("Identity", [src], "id")]
        last = p + "id"
        if where == "twice":
            nodes.append(node("Identity", ["id"], "id2"))
            last = p + "id2"
        elif where == "mid" and rank == 4:
            inits.append(_const(p + "k2", _weights(rng, 8, 8, 1, 1)))
            nodes.append(node("Conv", ["id", "k2"], "after"))
            last = p + "after"
        elif where == "mid":
            width = 32 if rank == 3 else 64
            inits.append(_const(p + "w2", _weights(rng, width, width)))
            nodes.append(node("MatMul", ["id", "w2"], "after"))
            last = p + "after"
        outputs.append(_vi(last, [1, 16, 32] if before == "gather" else {2: [1, 64], 3: [1, 16, 32], 4: [1, 8, 16, 16]}[rank]))
    return _model(nodes, inputs, outputs, inits, opset=opset)


IDENTITY_PACKS = {
    "outputs": (("softmax", "out", 2), ("linear", "out", 2), ("relu", "out", 2), ("softmax", "out", 3), ("conv", "out", 4), ("gather", "out", 3)),
    "inside": (("softmax", "mid", 2), ("softmax", "mid", 3), ("relu", "mid", 3), ("conv", "mid", 4), ("input", "mid", 3), ("softmax", "twice", 2)),
}
# Not recorded: ("relu", "out", 3) on RK3566, where a Linear and Relu writing a 3-D model output
# have the output's layout Reshape named after the Relu, on the CPU, with or without the Identity
# (a miss of its own, not the Identity's); ("gather", "mid", 3), a CPU Gather's [1, 16, 32] result through the Identity into
# a Linear: on RK3588 the toolkit names its layout Reshape into the NPU after the Identity (NPU).
CASES += [Case(f"identity_{name}", "pool: an Identity on a run-time tensor (PP-OCR's direction classifier ends Softmax, Identity)",
               lambda v=v: identity_pack(v), ("rk3566", "rk3588")) for name, v in IDENTITY_PACKS.items()]


# ---- pool (issue 27, tuning part): how a token stream from a patch embedding is pooled (EVA-02) ----


def _token_pool_case(rng, spec) -> tuple[list, list, list, list]:
    """One TOKEN_POOL_PACK entry: a patch embedding (Conv 2x2 stride 2, Reshape [1, C, H*W],
    Transpose [0, 2, 1]), a class token Concatenated in front (`cls`) and a position Add, a Linear
    and a Relu, then the pooling `ending`: gather (x[:, 0], ViT), mean (x.mean(1), LeViT),
    slice_mean (x[:, 1:].mean(1), or x[:, 1:] of the tokens without a class token: EVA-02's
    avg pooling), slice_gather (x[:, 1:] then x[:, 0]); a 2-D output [1, C]."""
    name, c, side, cls, ending = spec
    p, t = f"{name}_", side * side
    node = lambda op, ins, out, **kw: helper.make_node(op, ins, [p + out], name=p + out, **kw)  # noqa: E731
    tokens = t + 1 if cls else t
    inits = [_const(p + "w_patch", _weights(rng, c, 3, 2, 2)), _const(p + "flat", np.array([1, c, t], np.int64)), _const(p + "w_lin", _weights(rng, c, c)),
             _const(p + "pos", _weights(rng, 1, tokens, c)), _const(p + "first", np.array(0, np.int64)), _const(p + "one", np.array([1], np.int64)),
             _const(p + "end", np.array([1 << 62], np.int64)), _const(p + "axis", np.array([1], np.int64))]
    nodes = [node("Conv", [p + "x", p + "w_patch"], "patch_conv", kernel_shape=[2, 2], strides=[2, 2]), node("Reshape", [p + "patch_conv", p + "flat"], "flatten"),
             node("Transpose", [p + "flatten"], "to_tokens", perm=[0, 2, 1])]
    x = p + "to_tokens"
    if cls:
        inits.append(_const(p + "cls", _weights(rng, 1, 1, c)))
        nodes.append(node("Concat", [p + "cls", x], "cls_concat", axis=1))
        x = p + "cls_concat"
    nodes += [node("Add", [x, p + "pos"], "pos_add"), node("MatMul", [p + "pos_add", p + "w_lin"], "linear"), node("Relu", [p + "linear"], "act")]
    x = p + "act"
    if ending in ("slice_mean", "slice_gather"):
        nodes.append(node("Slice", [x, p + "one", p + "end", p + "axis"], "drop_first"))
        x = p + "drop_first"
    if ending in ("gather", "slice_gather"):
        nodes.append(node("Gather", [x, p + "first"], "y", axis=1))
    else:
        nodes.append(node("ReduceMean", [x], "y", axes=[1], keepdims=0))
    return nodes, inits, [_vi(p + "x", [1, 3, 2 * side, 2 * side])], [_vi(p + "y", [1, c])]


TOKEN_POOL_PACK = (
    ("cls_slice_mean", 32, 4, True, "slice_mean"),  # EVA-02's ending
    ("cls_mean", 32, 4, True, "mean"),
    ("cls_gather", 32, 4, True, "gather"),
    ("cls_slice_gather", 32, 4, True, "slice_gather"),
    ("slice_mean", 32, 4, False, "slice_mean"),
    ("mean", 32, 4, False, "mean"),
    ("cls_slice_mean_c192", 192, 4, True, "slice_mean"),
)


def token_pool_pack(entries: tuple = TOKEN_POOL_PACK) -> onnx.ModelProto:
    """Every TOKEN_POOL_PACK entry in one model (opset 13): one conversion places them all."""
    return _packed(_token_pool_case, entries, 73)


CASES.append(Case("token_pool_pack", "pool: a patch embedding's token stream pooled (class token, mean, EVA-02's x[:, 1:].mean(1))", token_pool_pack, ("rk3566", "rk3588")))


# ---- pool (issue 27, tuning part): ReduceL2 by axes, rank and keepdims, alone or dividing --------


def _l2_case(rng, spec) -> tuple[list, list, list, list]:
    """One L2_PACK entry: an input of `shape` plus a constant (a computed tensor), ReduceL2 over
    `axes` (None: all) with `keepdims`, then `then`: div (the tensor divided by it, as
    F.normalize without its eps), div_eps (divided by the norm plus a constant eps), alone (the
    norm itself); a Relu before the output."""
    name, shape, axes, keepdims, then = spec
    p = f"{name}_"
    node = lambda op, ins, out, **kw: helper.make_node(op, ins, [p + out], name=p + out, **kw)  # noqa: E731
    inits = [_const(p + "shift", _weights(rng, *shape[1:]))]
    reduce_kw = {"keepdims": keepdims} if axes is None else {"axes": list(axes), "keepdims": keepdims}
    nodes = [node("Add", [p + "x", p + "shift"], "xs"), node("ReduceL2", [p + "xs"], "l2", **reduce_kw)]
    if then == "div":
        nodes.append(node("Div", [p + "xs", p + "l2"], "div"))
        out = list(shape)
    elif then == "div_eps":
        inits.append(_const(p + "eps", np.array(1e-12, np.float32)))
        nodes += [node("Add", [p + "l2", p + "eps"], "eps_add"), node("Div", [p + "xs", p + "eps_add"], "div")]
        out = list(shape)
    else:
        kept = set(range(len(shape))) if axes is None else {a % len(shape) for a in axes}
        out = [1 if i in kept else d for i, d in enumerate(shape)] if keepdims else [d for i, d in enumerate(shape) if i not in kept]
    nodes.append(node("Relu", [nodes[-1].output[0]], "y"))
    return nodes, inits, [_vi(p + "x", list(shape))], [_vi(p + "y", out)]


L2_PACK = (
    ("r2_a1_div", (1, 256), (1,), 1, "div"),
    ("r4_a1_div", (1, 32, 8, 8), (1,), 1, "div"),
    ("r4_am1_div", (1, 32, 8, 8), (-1,), 1, "div"),
    ("r4_a23_div", (1, 32, 8, 8), (2, 3), 1, "div"),
    ("r4_a12_div", (1, 8, 8, 32), (1, 2), 1, "div"),
    ("r3_am1_div", (1, 16, 64), (-1,), 1, "div"),
    ("r3_a1_div", (1, 16, 64), (1,), 1, "div"),
    ("r4_all_div", (1, 32, 8, 8), None, 1, "div"),
    ("r2_a1_k0_alone", (1, 256), (1,), 0, "alone"),
    ("r4_a23_k0_alone", (1, 32, 8, 8), (2, 3), 0, "alone"),
    ("r4_a23_k1_alone", (1, 32, 8, 8), (2, 3), 1, "alone"),
    ("r4_a1_k1_alone", (1, 32, 8, 8), (1,), 1, "alone"),
    ("r3_am1_k1_alone", (1, 16, 64), (-1,), 1, "alone"),
    ("r4_a1_div_eps", (1, 32, 8, 8), (1,), 1, "div_eps"),
    ("r4_a23_div_eps", (1, 32, 8, 8), (2, 3), 1, "div_eps"),
    ("r3_am1_div_eps", (1, 16, 64), (-1,), 1, "div_eps"),
)


def l2_pack(entries: tuple = L2_PACK) -> onnx.ModelProto:
    """Every L2_PACK entry in one model (opset 13): one conversion places them all."""
    return _packed(_l2_case, entries, 74)


CASES.append(Case("l2_pack", "b: ReduceL2 by axes, rank and keepdims, alone or dividing its input", l2_pack, ("rk3588", "rk3566")))


def zero_residual_branch(variant: str) -> onnx.ModelProto:
    """A residual block whose branch ends in a product by zeros, as timm initialises the last
    BatchNorm of a bottleneck (zero_init_last; torch.onnx folds it into the Conv, whose weights and
    bias are then zeros, negative zeros where a weight was negative): stem Conv, Relu; branch Conv,
    Relu, a channel softmax (GlobalAveragePool, Softmax over the channels, Mul with the branch:
    ResNeSt's split attention, reduced), then a 1x1 Conv by zeros; Add of the stem's output, Relu,
    a head Conv. Variants: "zero" as written; "negative_zero": the zero weights carry the signs of
    random ones (-0.0); "identity": the zero weights reach the Conv through an Identity (torch.onnx's
    spelling of a weight shared by value); "identity_large": so, with 96 channels and a 3x3 Conv by
    zeros (a weight too large for the audit's view of the Identity to carry its value); "bias": the last Conv's bias is not zero; "mul": the branch
    ends in a Mul by a zero per-channel scale (a layer scale initialised to zero); "attention": the
    branch is self-attention over the map's positions (Reshape, Transpose, MatMul, Softmax, MatMul,
    Reshape back) before the Conv by zeros; "attention_scaled": the query its own 1x1 Conv, scaled by a
    constant and transposed into the scores' MatMul (EfficientViT-M's heads: the Transpose joins the
    MatMul, so the query reaches the rest only through it); "shared": the softmax's output is also a model output;
    "tiny": the last Conv's weights have standard deviation 1e-6 (not zero: a control)."""
    rng = np.random.default_rng(27)
    c = 96 if variant == "identity_large" else 16
    inits = [_const("sw", _weights(rng, c, 3, 3, 3)), _const("bw", _weights(rng, c, c, 3, 3)), _const("hw", _weights(rng, 8, c, 1, 1))]
    n = [helper.make_node("Conv", ["x", "sw"], ["stem"], name="stem_conv", pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["stem"], ["r"], name="stem_relu"),
         helper.make_node("Conv", ["r", "bw"], ["b"], name="branch_conv", pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["b"], ["br"], name="branch_relu")]
    if variant == "attention_scaled":
        inits += [_const("wq", _weights(rng, c, c, 1, 1)), _const("wk", _weights(rng, c, c, 1, 1)), _const("scale", np.array(0.25, np.float32)),
                  _const("tokens", np.array([1, c, 64], np.int64)), _const("map", np.array([1, c, 8, 8], np.int64))]
        n += [helper.make_node("Conv", ["br", "wq"], ["q4"], name="attn_q"), helper.make_node("Reshape", ["q4", "tokens"], ["q"], name="attn_q_tokens"),
              helper.make_node("Mul", ["q", "scale"], ["qs"], name="attn_q_scale"),
              helper.make_node("Transpose", ["qs"], ["qt"], name="attn_q_transpose", perm=[0, 2, 1]),
              helper.make_node("Conv", ["br", "wk"], ["k4"], name="attn_k"), helper.make_node("Reshape", ["k4", "tokens"], ["k"], name="attn_k_tokens"),
              helper.make_node("MatMul", ["qt", "k"], ["scores"], name="attn_scores"),
              helper.make_node("Softmax", ["scores"], ["a"], name="attn_softmax", axis=-1),
              helper.make_node("Reshape", ["br", "tokens"], ["v"], name="attn_v_tokens"),
              helper.make_node("MatMul", ["v", "a"], ["o"], name="attn_values"),
              helper.make_node("Reshape", ["o", "map"], ["m"], name="attn_map")]
    elif variant == "attention":
        inits += [_const("tokens", np.array([1, c, 64], np.int64)), _const("map", np.array([1, c, 8, 8], np.int64))]
        n += [helper.make_node("Reshape", ["br", "tokens"], ["t"], name="attn_tokens"),
              helper.make_node("Transpose", ["t"], ["tt"], name="attn_transpose", perm=[0, 2, 1]),
              helper.make_node("MatMul", ["tt", "t"], ["scores"], name="attn_scores"),
              helper.make_node("Softmax", ["scores"], ["a"], name="attn_softmax", axis=-1),
              helper.make_node("MatMul", ["t", "a"], ["o"], name="attn_values"),
              helper.make_node("Reshape", ["o", "map"], ["m"], name="attn_map")]
    else:
        n += [helper.make_node("GlobalAveragePool", ["br"], ["g"], name="attn_pool"),
              helper.make_node("Softmax", ["g"], ["a"], name="attn_softmax", axis=1),
              helper.make_node("Mul", ["br", "a"], ["m"], name="attn_mul")]
    if variant == "mul":
        inits.append(_const("gamma", np.zeros((1, c, 1, 1), np.float32)))
        n.append(helper.make_node("Mul", ["m", "gamma"], ["z"], name="branch_last"))
    else:
        k = 3 if variant == "identity_large" else 1  # 96 x 96 x 3 x 3: more elements than a view carries the value of
        weights = rng.standard_normal((c, c, k, k)).astype(np.float32) * (1e-6 if variant == "tiny" else 0.0)
        bias = (rng.standard_normal(c) * 0.1).astype(np.float32) if variant == "bias" else np.zeros(c, np.float32)
        if variant != "negative_zero" and variant != "tiny":
            weights = np.abs(weights)  # +0.0 only
        inits += [_const("zw", weights), _const("zb", bias)]
        shared = variant.startswith("identity")
        if shared:
            n.append(helper.make_node("Identity", ["zw"], ["zw_shared"], name="shared_weight"))
        n.append(helper.make_node("Conv", ["m", "zw_shared" if shared else "zw", "zb"], ["z"], name="branch_last", **({"pads": [1] * 4} if k == 3 else {})))
    n += [helper.make_node("Add", ["r", "z"], ["s"], name="residual_add"),
          helper.make_node("Relu", ["s"], ["sr"], name="residual_relu"),
          helper.make_node("Conv", ["sr", "hw"], ["y"], name="head_conv")]
    outputs = [_vi("y", [1, 8, 8, 8])] + ([_vi("a", [1, c, 1, 1])] if variant == "shared" else [])
    return _model(n, [_vi("x", [1, 3, 8, 8])], outputs, inits)


ZERO_BRANCH_VARIANTS = ("zero", "negative_zero", "identity", "identity_large", "bias", "mul", "attention", "attention_scaled", "shared", "tiny")
CASES += [Case(f"zero_residual_branch_{v}", "pool: a residual branch ending in a product by zeros (timm's zero_init_last)", lambda v=v: zero_residual_branch(v), ("rk3588", "rk3566"))
          for v in ZERO_BRANCH_VARIANTS]


# ---- pool (issue 27, rk3566 tuning part): Swin's patch merging (four step-2 Slices, one Concat) --


def _patch_merge_case(rng, spec) -> tuple[list, list, list, list]:
    """One PATCH_MERGE_PACK entry on an input of `shape` plus a constant (a computed tensor). `form`:
    tv (torchvision's PatchMerging on [B, H, W, C]: x[:, 0::2] and x[:, 1::2] along H, each sliced
    again along W; the four quarters x0 (0,0), x1 (1,0), x2 (0,1), x3 (1,1) Concatenated on the
    last axis, then a Linear 4C -> 2C), tv_reordered (x0, x2, x1, x3), tv_three (x3 left out),
    tv_relu (a Relu between x1 and the Concat), tv_add (x0 + x1 + x2 + x3: no Concat), focus
    (YOLOv5's Focus on [B, C, H, W]: the quarters on axes 2 and 3, Concatenated on the channels,
    then a 1x1 Conv), rows_only (x[:, 0::2] and x[:, 1::2] along H, each sliced along W from 0:
    two quarters)."""
    name, shape, form = spec
    p = f"{name}_"
    node = lambda op, ins, out, **kw: helper.make_node(op, ins, [p + out], name=p + out, **kw)  # noqa: E731
    nchw = form.startswith("focus")
    ha, wa = (2, 3) if nchw else (1, 2)
    if form.endswith("_wfirst"):  # W sliced first, then H (the quarters named by (h, w) still)
        ha, wa = wa, ha
    ch = shape[1] if nchw else shape[3]
    inits = [_const(p + "shift", _weights(rng, *shape[1:])), _const(p + "zero", np.array([0], np.int64)), _const(p + "one", np.array([1], np.int64)),
             _const(p + "two", np.array([2], np.int64)), _const(p + "end", np.array([(1 << 63) - 1], np.int64)),
             _const(p + "ha", np.array([ha], np.int64)), _const(p + "wa", np.array([wa], np.int64))]
    nodes = [node("Add", [p + "x", p + "shift"], "xs")]
    nodes += [node("Slice", [p + "xs", p + "zero", p + "end", p + "ha", p + "two"], "h0"), node("Slice", [p + "xs", p + "one", p + "end", p + "ha", p + "two"], "h1")]
    order = {"tv_reordered": [(0, 0), (0, 1), (1, 0), (1, 1)], "focus_reordered": [(0, 0), (0, 1), (1, 0), (1, 1)], "tv_three": [(0, 0), (1, 0), (0, 1)], "rows_only": [(0, 0), (1, 0)]}.get(form, [(0, 0), (1, 0), (0, 1), (1, 1)])
    for hs, ws in order:
        nodes.append(node("Slice", [p + f"h{hs}", p + ("one" if ws else "zero"), p + "end", p + "wa", p + "two"], f"q{hs}{ws}"))
    parts = [p + (f"q{ws}{hs}" if form.endswith("_wfirst") else f"q{hs}{ws}") for hs, ws in order]
    if form == "tv_relu":
        nodes.append(node("Relu", [parts[1]], "relu"))
        parts[1] = p + "relu"
    half = [shape[0], shape[1] // 2, shape[2] // 2, ch] if not nchw else [shape[0], ch, shape[2] // 2, shape[3] // 2]
    if form == "tv_add":
        nodes += [node("Add", [parts[0], parts[1]], "a01"), node("Add", [p + "a01", parts[2]], "a012"), node("Add", [p + "a012", parts[3]], "y")]
        return nodes, inits, [_vi(p + "x", list(shape))], [_vi(p + "y", half)]
    nodes.append(node("Concat", parts, "cat", axis=1 if nchw else -1))
    n = len(parts) * ch
    if nchw:
        inits.append(_const(p + "w", _weights(rng, 2 * ch, n, 1, 1)))
        nodes.append(node("Conv", [p + "cat", p + "w"], "y"))
        out = [shape[0], 2 * ch, shape[2] // 2, shape[3] // 2]
    else:
        inits.append(_const(p + "w", _weights(rng, n, 2 * ch)))
        nodes.append(node("MatMul", [p + "cat", p + "w"], "y"))
        out = [shape[0], shape[1] // 2, shape[2] // 2, 2 * ch]
    return nodes, inits, [_vi(p + "x", list(shape))], [_vi(p + "y", out)]


PATCH_MERGE_PACK = (
    ("s16c96_tv", (1, 16, 16, 96), "tv"),  # Swin-T's first merging at a 64x64 input
    ("s8c192_tv", (1, 8, 8, 192), "tv"),
    ("s4c384_tv", (1, 4, 4, 384), "tv"),
    ("s14c24_tv", (1, 14, 14, 24), "tv"),
    ("s8x16c32_tv", (1, 8, 16, 32), "tv"),
    ("s8c32_tv_reordered", (1, 8, 8, 32), "tv_reordered"),
    ("s8c32_tv_three", (1, 8, 8, 32), "tv_three"),
    ("s8c32_tv_relu", (1, 8, 8, 32), "tv_relu"),
    ("s8c32_tv_add", (1, 8, 8, 32), "tv_add"),
    ("s8c32_rows_only", (1, 8, 8, 32), "rows_only"),
    ("c8s16_focus", (1, 8, 16, 16), "focus"),
    ("s8c32_tv", (1, 8, 8, 32), "tv"),
    ("s8x16c96_tv", (1, 8, 16, 96), "tv"),
    ("s16x8c32_tv", (1, 16, 8, 32), "tv"),
    ("s8c32_tv_wfirst", (1, 8, 8, 32), "tv_wfirst"),
    ("c8h16w8_focus", (1, 8, 16, 8), "focus"),
    ("c8s16_focus_reordered", (1, 8, 16, 16), "focus_reordered"),
    ("s2c768_tv", (1, 2, 2, 768), "tv"),
    ("s12c64_tv", (1, 12, 12, 64), "tv"),
)


def patch_merge_pack(entries: tuple = PATCH_MERGE_PACK) -> onnx.ModelProto:
    """Every PATCH_MERGE_PACK entry in one model (opset 13): one conversion places them all."""
    return _packed(_patch_merge_case, entries, 75, used_only=True)


CASES.append(Case("patch_merge_pack", "pool: Swin's patch merging (four step-2 Slices rejoined by one Concat) and its variants", patch_merge_pack, ("rk3588", "rk3566")))


# ---- pool (issue 27, rk3566 tuning part): Swin's window attention ------------------------------


def _window_case(rng, spec) -> tuple[list, list, list, list]:
    """One WINDOW_PACK entry: a [1, S, S, C] map (plus a constant) split into windows of `w` as
    torchvision's Swin does (Reshape [1, S/w, w, S/w, w, C], Transpose [0, 1, 3, 2, 4, 5], Reshape
    [nW, w*w, C]), then `form`: linear (a Linear C -> C), attention (a joint q/k/v Linear, Reshape
    [nW, w*w, 3, heads, C/heads], Transpose [2, 0, 3, 1, 4], Gathers of q, k, v, q times the scale,
    k Transposed, MatMul, a relative position bias [heads, w*w, w*w] Added, Softmax, MatMul by v,
    Transpose [0, 2, 1, 3], Reshape, the output Linear), masked (attention with the shifted
    windows' mask: Reshape [1, nW, heads, w*w, w*w], Add a [1, nW, 1, w*w, w*w] mask, Reshape
    [-1, heads, w*w, w*w] before the Softmax); then the windows put back (Reshape [1, S/w, S/w, w,
    w, C], Transpose [0, 1, 3, 2, 4, 5], Reshape [1, S, S, C])."""
    name, side, ch, heads, form, *rest = spec
    w = rest[0] if rest else 7
    p, n, t, hd = f"{name}_", side // w, w * w, ch // heads
    nw = n * n
    node = lambda op, ins, out, **kw: helper.make_node(op, ins, [p + out], name=p + out, **kw)  # noqa: E731
    c = lambda key, value, dtype=np.int64: inits.append(_const(p + "k_" + key, np.asarray(value, dtype))) or p + "k_" + key  # noqa: E731
    inits: list = []
    nodes = [node("Add", [p + "x", c("shift", _weights(rng, side, side, ch), np.float32)], "xs"),
             node("Reshape", [p + "xs", c("grid", [1, n, w, n, w, ch])], "grid"),
             node("Transpose", [p + "grid"], "partition", perm=[0, 1, 3, 2, 4, 5]),
             node("Reshape", [p + "partition", c("windows", [nw, t, ch])], "windows")]
    if form == "linear":
        nodes.append(node("MatMul", [p + "windows", c("w", _weights(rng, ch, ch), np.float32)], "out"))
    else:
        nodes += [node("MatMul", [p + "windows", c("wqkv", _weights(rng, ch, 3 * ch), np.float32)], "qkv_mm"),
                  node("Add", [p + "qkv_mm", c("bqkv", _weights(rng, 3 * ch), np.float32)], "qkv"),
                  node("Reshape", [p + "qkv", c("heads", [nw, t, 3, heads, hd])], "split"),
                  node("Transpose", [p + "split"], "heads_t", perm=[2, 0, 3, 1, 4])]
        nodes += [node("Gather", [p + "heads_t", c(f"i{i}", i)], part, axis=0) for i, part in enumerate(("q", "k", "v"))]
        if form == "cosine":  # Swin-V2: q and k L2-normalised (F.normalize), the scores times a per-head scale
            for part in ("q", "k"):
                nodes += [node("ReduceL2", [p + part], part + "_norm", axes=[-1], keepdims=1),
                          node("Clip", [p + part + "_norm", c(part + "_eps", np.float32(1e-12), np.float32)], part + "_clip"),
                          node("Expand", [p + part + "_clip", c(part + "_shape", [nw, heads, t, hd])], part + "_full"),
                          node("Div", [p + part, p + part + "_full"], part + "n")]
            nodes += [node("Transpose", [p + "kn"], "kt", perm=[0, 1, 3, 2]), node("MatMul", [p + "qn", p + "kt"], "cos"),
                      node("Mul", [p + "cos", c("logit", np.full((heads, 1, 1), 10.0, np.float32), np.float32)], "scores")]
        else:
            nodes += [node("Mul", [p + "q", c("scale", np.float32(hd ** -0.5), np.float32)], "qs"),
                      node("Transpose", [p + "k"], "kt", perm=[0, 1, 3, 2]),
                      node("MatMul", [p + "qs", p + "kt"], "scores")]
        nodes.append(node("Add", [p + "scores", c("bias", _weights(rng, heads, t, t), np.float32)], "biased"))
        logits = p + "biased"
        if form == "masked":
            nodes += [node("Reshape", [logits, c("by_window", [1, nw, heads, t, t])], "by_window"),
                      node("Add", [p + "by_window", c("mask", _weights(rng, 1, nw, 1, t, t), np.float32)], "masked"),
                      node("Reshape", [p + "masked", c("back", [-1, heads, t, t])], "unmasked")]
            logits = p + "unmasked"
        nodes += [node("Softmax", [logits], "attn", axis=-1), node("MatMul", [p + "attn", p + "v"], "ctx"),
                  node("Transpose", [p + "ctx"], "merge_t", perm=[0, 2, 1, 3]),
                  node("Reshape", [p + "merge_t", c("merged", [nw, t, ch])], "merged"),
                  node("MatMul", [p + "merged", c("wo", _weights(rng, ch, ch), np.float32)], "out")]
    nodes += [node("Reshape", [p + "out", c("back_grid", [1, n, n, w, w, ch])], "back_grid"),
              node("Transpose", [p + "back_grid"], "reverse", perm=[0, 1, 3, 2, 4, 5]),
              node("Reshape", [p + "reverse", c("map", [1, side, side, ch])], "y")]
    return nodes, inits, [_vi(p + "x", [1, side, side, ch])], [_vi(p + "y", [1, side, side, ch])]


WINDOW_PACK = (
    ("s21c96_linear", 21, 96, 3, "linear"),  # Swin-T's first stage at a 64x64 input: 9 windows
    ("s14c192_linear", 14, 192, 6, "linear"),
    ("s7c384_linear", 7, 384, 12, "linear"),
    ("s21c96_attention", 21, 96, 3, "attention"),
    ("s14c192_attention", 14, 192, 6, "attention"),
    ("s21c96_masked", 21, 96, 3, "masked"),
    ("s14c192_masked", 14, 192, 6, "masked"),
    ("s16c64_w8_attention", 16, 64, 2, "attention", 8),
    ("s16c64_w8_linear", 16, 64, 2, "linear", 8),
    ("s14c32_linear", 14, 32, 1, "linear"),
    ("s28c96_linear", 28, 96, 3, "linear"),
)


# Not recorded (probed 2026-12-04 in this pack, RK3566; the audit disagrees, not explained): one
# window ([1, 7, 7, 384], 12 heads) with attention runs the Reshape into windows [1, 49, 384] and
# the Reshape back to the map on the CPU (the audit: NPU; Swin-T's one-window stages in the pool
# agree with the audit). On RK3588 every node of the pack runs on the NPU, as the audit says.


def window_pack(entries: tuple = WINDOW_PACK) -> onnx.ModelProto:
    """Every WINDOW_PACK entry in one model (opset 13): one conversion places them all."""
    return _packed(_window_case, entries, 76)


CASES.append(Case("window_pack", "pool: Swin's window partition, window attention (with the shifted windows' mask) and window reverse", window_pack, ("rk3588", "rk3566")))
# Swin-V2's cosine attention: 4 windows of 64 tokens (the pool's first stage), 9 of 49. Not recorded
# (probed in this pack, RK3566, 2026-12-04): one window of 64 ([1, 8, 8, 96]) runs the key's
# Transpose on the NPU, as the audit says, but the Reshape into windows and the one back to the map
# on the CPU (the audit: NPU), as one window of 49 does in WINDOW_PACK; Swin-V2's one-window stages
# in the pool have that second Reshape on the CPU too. Not explained.
WINDOW_COSINE_PACK = (("s16c96_w8_cosine", 16, 96, 3, "cosine", 8), ("s21c96_cosine", 21, 96, 3, "cosine"))
CASES.append(Case("window_cosine_pack", "pool: Swin-V2's window attention (q and k L2-normalised)", lambda: window_pack(WINDOW_COSINE_PACK), ("rk3566",)))


# ---- pool (issue 27, rk3566 tuning part): TinyViT's window block between its convolutions -------


def _tinyvit_case(rng, spec) -> tuple[list, list, list, list]:
    """One TINYVIT_PACK entry. `form`: residual_tokens (two token streams [1, T, C], one through a
    Linear, each Reshaped to a channels-last map [1, S, S, C], Added, Transposed [0, 3, 1, 2] into a
    1x1 Conv); block (timm's TinyViT block on a Conv's [1, C, S, S]: Transpose [0, 2, 3, 1], Pad to
    `padded` when larger, the window partition of one window, a Linear, the reverse, the pad cropped
    by two Slices, the residual Add of the Transposed map, Transpose [0, 3, 1, 2] into a 1x1 Conv)."""
    name, form, side, ch, *rest = spec
    p = f"{name}_"
    node = lambda op, ins, out, **kw: helper.make_node(op, ins, [p + out], name=p + out, **kw)  # noqa: E731
    inits: list = []
    c = lambda key, value, dtype=np.int64: inits.append(_const(p + "k_" + key, np.asarray(value, dtype))) or p + "k_" + key  # noqa: E731
    t = side * side
    if form == "residual_tokens":
        nodes = [node("Add", [p + "x", c("shift", _weights(rng, t, ch), np.float32)], "xs"), node("MatMul", [p + "xs", c("w", _weights(rng, ch, ch), np.float32)], "lin"),
                 node("Reshape", [p + "xs", c("map", [1, side, side, ch])], "map_a"), node("Reshape", [p + "lin", p + "k_map"], "map_b"),
                 node("Add", [p + "map_a", p + "map_b"], "res")]
        inputs = [_vi(p + "x", [1, t, ch])]
    else:
        padded = rest[0]
        nodes = [node("Conv", [p + "x", c("w0", _weights(rng, ch, ch, 1, 1), np.float32)], "conv0"), node("Transpose", [p + "conv0"], "to_nhwc", perm=[0, 2, 3, 1])]
        x = p + "to_nhwc"
        if padded > side:
            nodes.append(node("Pad", [x, c("pads", [0, 0, 0, 0, 0, padded - side, padded - side, 0])], "pad"))
            x = p + "pad"
        nodes += [node("Reshape", [x, c("grid", [1, 1, padded, 1, padded, ch])], "grid"), node("Transpose", [p + "grid"], "partition", perm=[0, 1, 3, 2, 4, 5]),
                  node("Reshape", [p + "partition", c("windows", [1, padded * padded, ch])], "windows"),
                  node("MatMul", [p + "windows", c("w", _weights(rng, ch, ch), np.float32)], "lin"),
                  node("Reshape", [p + "lin", c("back_grid", [1, 1, 1, padded, padded, ch])], "back_grid"), node("Transpose", [p + "back_grid"], "reverse", perm=[0, 1, 3, 2, 4, 5]),
                  node("Reshape", [p + "reverse", c("map", [1, padded, padded, ch])], "map")]
        x = p + "map"
        if padded > side:
            nodes += [node("Slice", [x, c("zero", [0]), c("side", [side]), c("h", [1]), c("one", [1])], "crop_h"),
                      node("Slice", [p + "crop_h", p + "k_zero", p + "k_side", c("w_axis", [2]), p + "k_one"], "crop_w")]
            x = p + "crop_w"
        nodes.append(node("Add", [p + "to_nhwc", x], "res"))
        inputs = [_vi(p + "x", [1, ch, side, side])]
    nodes += [node("Transpose", [p + "res"], "to_nchw", perm=[0, 3, 1, 2]), node("Conv", [p + "to_nchw", c("w1", _weights(rng, ch, ch, 1, 1), np.float32)], "y")]
    return nodes, inits, inputs, [_vi(p + "y", [1, ch, side, side])]


TINYVIT_PACK = (
    ("s4c160_residual_tokens", "residual_tokens", 4, 160),
    ("s4c160_block_pad14", "block", 4, 160, 14),  # TinyViT-5M's third stage at a 64x64 input
    ("s8c128_block_pad14", "block", 8, 128, 14),
    ("s7c64_block", "block", 7, 64, 7),
)


def tinyvit_pack(entries: tuple = TINYVIT_PACK) -> onnx.ModelProto:
    """Every TINYVIT_PACK entry in one model (opset 13): one conversion places them all."""
    return _packed(_tinyvit_case, entries, 78)


CASES.append(Case("tinyvit_pack", "pool: TinyViT's window block between its convolutions (the channels-last map's Transposes)", tinyvit_pack, ("rk3566",)))


def _last_axis_split_case(rng, spec) -> tuple[list, list, list, list]:
    """One LAST_AXIS_SPLIT_PACK entry: timm's TinyViT attention on `batch` token sets of `tokens`
    tokens: a joint Linear C -> 3C, Reshape [B, T, heads, 3D], Split on the last axis into q, k, v,
    q and v Transposed [0, 2, 1, 3], k [0, 2, 3, 1], q and k each times sqrt(scale) (`scaled`),
    MatMul, Softmax, MatMul by v, Transpose [0, 2, 1, 3], Reshape [B, T, C], a Linear."""
    name, batch, tokens, heads, hd, scaled = spec
    p, ch = f"{name}_", heads * hd
    node = lambda op, ins, out, **kw: helper.make_node(op, ins, [p + out], name=p + out, **kw)  # noqa: E731
    inits: list = []
    c = lambda key, value, dtype=np.int64: inits.append(_const(p + "k_" + key, np.asarray(value, dtype))) or p + "k_" + key  # noqa: E731
    nodes = [node("MatMul", [p + "x", c("wqkv", _weights(rng, ch, 3 * ch), np.float32)], "qkv"),
             node("Reshape", [p + "qkv", c("heads", [batch, tokens, heads, 3 * hd])], "heads"),
             helper.make_node("Split", [p + "heads", c("parts", [hd, hd, hd])], [p + "q", p + "k", p + "v"], name=p + "split", axis=3),
             node("Transpose", [p + "q"], "qt", perm=[0, 2, 1, 3]), node("Transpose", [p + "k"], "kt", perm=[0, 2, 3, 1]),
             node("Transpose", [p + "v"], "vt", perm=[0, 2, 1, 3])]
    q, k = p + "qt", p + "kt"
    if scaled:
        root = c("root", np.float32(hd ** -0.25), np.float32)
        nodes += [node("Mul", [q, root], "qs"), node("Mul", [k, root], "ks")]
        q, k = p + "qs", p + "ks"
    nodes += [node("MatMul", [q, k], "scores"), node("Softmax", [p + "scores"], "attn", axis=-1), node("MatMul", [p + "attn", p + "vt"], "ctx"),
              node("Transpose", [p + "ctx"], "merge_t", perm=[0, 2, 1, 3]), node("Reshape", [p + "merge_t", c("merged", [batch, tokens, ch])], "merged"),
              node("MatMul", [p + "merged", c("wo", _weights(rng, ch, ch), np.float32)], "y")]
    return nodes, inits, [_vi(p + "x", [batch, tokens, ch])], [_vi(p + "y", [batch, tokens, ch])]


LAST_AXIS_SPLIT_PACK = (
    ("b4t49h4", 4, 49, 4, 32, True),  # TinyViT-5M's second stage at a 64x64 input: 4 windows of 7x7
    ("b1t196h5", 1, 196, 5, 32, True),  # its third stage: one window of 14x14
    ("b4t64h4", 4, 64, 4, 32, True),
    ("b2t16h2", 2, 16, 2, 32, True),
    ("b4t49h4_unscaled", 4, 49, 4, 32, False),
    ("b4t49h2d16", 4, 49, 2, 16, True),
)


def last_axis_split_pack(entries: tuple = LAST_AXIS_SPLIT_PACK) -> onnx.ModelProto:
    """Every LAST_AXIS_SPLIT_PACK entry in one model (opset 13): one conversion places them all."""
    return _packed(_last_axis_split_case, entries, 79)


CASES.append(Case("last_axis_split_pack", "pool: TinyViT's attention (q, k, v Split on the last axis after the heads' Reshape) over one or several windows", last_axis_split_pack, ("rk3566",)))


# ---- fresh set (issue 27): a Transpose that brings the tokens last for a Softmax, not undone ------
# torch.onnx below opset 13 writes k.softmax(dim=2) as Transpose [0, 1, 3, 2], Softmax(axis=-1) and
# the Transpose back; CoaT's k_softmax.transpose(-1, -2) then cancels the Transpose back (the
# exporter's peephole), leaving Transpose, Softmax over the last axis, MatMul by v.


def _transposed_softmax_case(rng, spec):
    """(name, shape, perm, axis, after): an input through a Relu, Transposed by perm, a Softmax over
    `axis`, then `after`: "matmul" (times a second input through a Relu, [.., T, 16]), "second" (the
    Softmax the second operand of such a product), "two" (the Softmax read by a product and a Relu),
    "weights" (a MatMul by a constant), "relu", "output" (the Softmax is a model output) or "both"
    (the Transpose also read by a Relu)."""
    name, shape, perm, axis, after = spec
    p = f"{name}_"
    node = _prefixed(p)
    t_shape = [shape[i] for i in perm]
    n = [node("Relu", ["x"], "r"), node("Transpose", ["r"], "t", perm=list(perm)), node("Softmax", ["t"], "s", axis=axis)]
    inputs, inits = [_vi(p + "x", shape)], []
    out, out_shape = p + "s", t_shape
    if after in ("matmul", "two"):
        n += [node("Relu", ["v"], "rv"), node("MatMul", ["s", "rv"], "y")]
        inputs.append(_vi(p + "v", t_shape[:-2] + [t_shape[-1], 16]))
        out, out_shape = p + "y", t_shape[:-1] + [16]
    elif after == "second":
        n += [node("Relu", ["v"], "rv"), node("MatMul", ["rv", "s"], "y")]
        inputs.append(_vi(p + "v", t_shape[:-2] + [16, t_shape[-2]]))
        out, out_shape = p + "y", t_shape[:-2] + [16, t_shape[-1]]
    elif after == "weights":
        inits.append(_const(p + "w", _weights(rng, t_shape[-1], 16)))
        n.append(node("MatMul", ["s", "w"], "y"))
        out, out_shape = p + "y", t_shape[:-1] + [16]
    elif after in ("relu", "both"):
        n.append(node("Relu", ["s"], "y"))
        out, out_shape = p + "y", t_shape
    outputs = [_vi(out, out_shape)]
    if after in ("both", "two"):
        n.append(node("Relu", ["t" if after == "both" else "s"], "y2"))
        outputs.append(_vi(p + "y2", t_shape))
    return n, inits, inputs, outputs


TRANSPOSED_SOFTMAX_PACKS = {
    # CoaT-Lite's k at its first and last stage (8 heads of 8 and 64 values; 257 and 5 tokens), then the neighbour changed.
    "after": (("coat1", [1, 8, 257, 8], [0, 1, 3, 2], 3, "matmul"), ("coat4", [1, 8, 5, 64], [0, 1, 3, 2], 3, "matmul"),
              ("relu", [1, 8, 17, 16], [0, 1, 3, 2], 3, "relu"), ("out", [1, 8, 17, 16], [0, 1, 3, 2], 3, "output"),
              ("weights", [1, 8, 17, 16], [0, 1, 3, 2], 3, "weights"), ("both", [1, 8, 17, 16], [0, 1, 3, 2], 3, "both")),
    # The perm and the axis: the moved axis last or not, the Softmax over the last axis or not, rank 3 and 5.
    "perms": (("r3", [1, 17, 16], [0, 2, 1], 2, "matmul"), ("p0213", [1, 8, 17, 16], [0, 2, 1, 3], 3, "matmul"),
              ("p0321", [1, 8, 17, 16], [0, 3, 2, 1], 3, "matmul"), ("ax2", [1, 8, 17, 16], [0, 1, 3, 2], 2, "matmul"),
              ("p0231", [1, 8, 17, 16], [0, 2, 3, 1], 3, "matmul"), ("r5", [1, 2, 4, 17, 16], [0, 1, 2, 4, 3], 4, "matmul")),
    # The Softmax's readers, and other sizes (tokens and values not multiples of 8, one head).
    "readers": (("second", [1, 8, 17, 16], [0, 1, 3, 2], 3, "second"), ("two", [1, 8, 17, 16], [0, 1, 3, 2], 3, "two"),
                ("h1", [1, 1, 50, 24], [0, 1, 3, 2], 3, "matmul"), ("odd", [1, 3, 7, 5], [0, 1, 3, 2], 3, "matmul"),
                ("big", [1, 4, 64, 32], [0, 1, 3, 2], 3, "matmul")),
}
CASES += [Case(f"transposed_softmax_{key}_op{opset}", "fresh: a Transpose that brings the tokens last for a Softmax, not undone (CoaT below opset 13)",
               lambda v=v, o=opset: _packed(_transposed_softmax_case, v, 41, opset=o), ("rk3566", "rk3588"))
          for key, v in TRANSPOSED_SOFTMAX_PACKS.items() for opset in (11, 13) if key != "readers" or opset == 13]


# ---- fresh set (issue 27): InstanceNormalization on the i.MX 93 (GroupNorm as torch.onnx writes it) --


def _instance_norm_case(rng, spec):
    """(name, shape, groups): an input through a Relu, then an InstanceNormalization. groups None: on
    the input itself, with a scale and bias per channel (initializers); groups G: GroupNorm(G) as
    torch.onnx writes it below opset 18 (timm's SHViT pre_norm: Reshape [N, G, -1], an
    InstanceNormalization of scale 1 and bias 0 from Constant nodes, Reshape back, Mul and Add by
    the affine per channel); then a 1x1 Conv."""
    name, shape, groups = spec
    p = f"{name}_"
    node = _prefixed(p)
    c = shape[1]
    inits = [_const(p + "w", _weights(rng, c, c, *([1] * (len(shape) - 2))))]
    n = [node("Relu", ["x"], "r")]
    if groups is None:
        inits += [_const(p + "scale", (1 + 0.1 * rng.standard_normal(c)).astype(np.float32)), _const(p + "bias", _weights(rng, c))]
        n.append(node("InstanceNormalization", ["r", "scale", "bias"], "norm", epsilon=1e-5))
    else:
        affine = [c] + [1] * (len(shape) - 2)
        inits += [_const(p + "grouped", np.array([shape[0], groups, -1], np.int64)), _const(p + "back", np.array(shape, np.int64)),
                  _const(p + "gamma", (1 + 0.1 * rng.standard_normal(affine)).astype(np.float32)), _const(p + "beta", _weights(rng, *affine))]
        n += [helper.make_node("Constant", [], [p + "one"], name=p + "one", value=_const("v", np.ones(groups, np.float32))),
              helper.make_node("Constant", [], [p + "zero"], name=p + "zero", value=_const("v", np.zeros(groups, np.float32))),
              node("Reshape", ["r", "grouped"], "g"), node("InstanceNormalization", ["g", "one", "zero"], "gnorm", epsilon=1e-5),
              node("Reshape", ["gnorm", "back"], "ungrouped"), node("Mul", ["ungrouped", "gamma"], "scaled"), node("Add", ["scaled", "beta"], "norm")]
    n.append(node("Conv", ["norm", "w"], "y", kernel_shape=[1] * (len(shape) - 2)))
    return n, inits, [_vi(p + "x", shape)], [_vi(p + "y", shape)]


INSTANCE_NORM_PACK = (
    ("gn1", [1, 32, 4, 4], 1), ("gn1big", [1, 64, 8, 8], 1), ("gn4", [1, 32, 8, 8], 4),  # SHViT's GroupNorm(1), and 4 groups
    ("in4", [1, 16, 8, 8], None), ("in4big", [1, 8, 32, 32], None), ("in3", [1, 16, 32], None),  # InstanceNorm itself, rank 4 and 3
)
CASES += [Case(f"instance_norm_op{o}", "fresh: InstanceNormalization, and GroupNorm as torch.onnx writes it (SHViT)",
               lambda o=o: _packed(_instance_norm_case, INSTANCE_NORM_PACK, 43, opset=o), ("imx93",)) for o in (17,)]


# A Tile whose repeats are all 1 (GC ViT's global query, tiled to the windows when a stage has
# one window), by rank, producer and beside a Tile that repeats; each read by a Relu.
TILE_ONES_PACK = (
    ("ones4_relu", (1, 8, 4, 4), (1, 1, 1, 1), "relu"),
    ("ones4_conv", (1, 16, 4, 4), (1, 1, 1, 1), "conv"),
    ("ones4_input", (1, 8, 4, 4), (1, 1, 1, 1), "input"),
    ("ones4_expand_nhwc", (1, 4, 4, 32), (1, 1, 1, 1), "expand"),
    ("ones3_relu", (1, 16, 32), (1, 1, 1), "relu"),
    ("twos4_relu", (1, 8, 4, 4), (2, 1, 1, 1), "relu"),
    ("twos4_expand_nhwc", (1, 4, 4, 32), (4, 1, 1, 1), "expand"),
)


def _tile_case(rng, spec) -> tuple[list, list, list, list]:
    """One entry of TILE_ONES_PACK: its nodes, initializers, input and output."""
    name, shape, repeats, source = spec
    x, src, nodes = f"x_{name}", f"x_{name}", []
    inits = [_const(f"repeats_{name}", np.array(repeats, np.int64))]
    if source == "conv":
        inits.append(_const(f"w_{name}", _weights(rng, shape[1], shape[1], 1, 1)))
        nodes.append(helper.make_node("Conv", [x, f"w_{name}"], [f"c_{name}"], name=f"conv_{name}"))
        src = f"c_{name}"
    elif source in ("relu", "expand"):
        nodes.append(helper.make_node("Relu", [x], [f"r_{name}"], name=f"relu_{name}"))
        src = f"r_{name}"
    if source == "expand":
        inits.append(_const(f"shape_{name}", np.array(shape, np.int64)))
        nodes.append(helper.make_node("Expand", [src, f"shape_{name}"], [f"e_{name}"], name=f"expand_{name}"))
        src = f"e_{name}"
    out = [d * r for d, r in zip(shape, repeats)]
    nodes += [helper.make_node("Tile", [src, f"repeats_{name}"], [f"t_{name}"], name=f"tile_{name}"),
              helper.make_node("Relu", [f"t_{name}"], [f"y_{name}"], name=f"after_{name}")]
    return nodes, inits, [_vi(x, list(shape))], [_vi(f"y_{name}", out)]


CASES.append(Case("tile_ones_pack", "fresh2: a Tile whose repeats are all 1 (GC ViT)",
                  lambda: _packed(_tile_case, TILE_ONES_PACK, 67), ("rk3588",)))


# ---- fresh2 (MViTv2): a ScatterND that writes every element in order -----------------------------

# (name, data shape, indices, axes the indices cover, first element of each covered axis, reversed axis)
SCATTER_PACK = (
    ("all_1x2x16x16", (1, 2, 16, 16), 4, None),
    ("all_1x8x4x4", (1, 8, 4, 4), 4, None),
    ("all_1x3x9x9", (1, 3, 9, 9), 4, None),
    ("all_leading_two_axes", (1, 2, 16, 16), 2, None),
    ("class_token_block", (1, 2, 17, 17), 4, "block"),
    ("two_rows", (1, 2, 16, 16), 3, "rows"),
    ("all_reversed", (1, 2, 16, 16), 4, "reversed"),
)


def _scatter_indices(shape: tuple, k: int, variant: str | None) -> np.ndarray:
    """ScatterND's indices: every element of the first k axes in row-major order, or the variant."""
    if variant == "rows":
        return np.array([[[[0, 0, 3], [0, 0, 5]]]], np.int64)
    lows = [0, 0, 1, 1] if variant == "block" else [0] * k
    grid = np.stack(np.meshgrid(*[np.arange(lo, d) for lo, d in zip(lows, shape[:k])], indexing="ij"), axis=-1).astype(np.int64)
    return grid[:, :, ::-1].copy() if variant == "reversed" else grid


def _scatter_case(rng, spec) -> tuple[list, list, list, list]:
    """One entry of SCATTER_PACK, as MViTv2 writes `attn[:, :, i:, i:] = attn[...].view(...) + rel`:
    the data a Sigmoid of the input, the updates computed from the data (so that the data stays
    read where the toolkit drops the ScatterND), a Softmax after."""
    name, shape, k, variant = spec
    indices = _scatter_indices(shape, k, variant)
    updates_shape = list(indices.shape[:-1]) + list(shape[indices.shape[-1]:])
    starts = [0, 0, 1, 1] if variant == "block" else [0] * len(shape)
    ends = [1, 1, 2, shape[3]] if variant == "rows" else list(shape)  # the updates' own shape
    inits = [_const(f"indices_{name}", indices), _const(f"starts_{name}", np.array(starts, np.int64)), _const(f"ends_{name}", np.array(ends, np.int64)),
             _const(f"rel_{name}", _weights(rng, *updates_shape[-1:]))]
    nodes = [helper.make_node("Sigmoid", [f"x_{name}"], [f"d_{name}"], name=f"attn_{name}"),
             helper.make_node("Slice", [f"d_{name}", f"starts_{name}", f"ends_{name}"], [f"s_{name}"], name=f"slice_{name}"),
             helper.make_node("Add", [f"s_{name}", f"rel_{name}"], [f"u_{name}"], name=f"add_{name}"),
             helper.make_node("ScatterND", [f"d_{name}", f"indices_{name}", f"u_{name}"], [f"o_{name}"], name=f"scatter_{name}"),
             helper.make_node("Softmax", [f"o_{name}"], [f"y_{name}"], name=f"softmax_{name}", axis=-1)]
    return nodes, inits, [_vi(f"x_{name}", list(shape))], [_vi(f"y_{name}", list(shape))]


CASES.append(Case("scatter_pack", "fresh2: a ScatterND that writes every element in order (MViTv2)",
                  lambda: _packed(_scatter_case, SCATTER_PACK, 71), ("rk3588", "rk3566")))


# A map taken channels-last for a layer norm whose result forks, every branch going back to
# channels-first (FocalNet's stem and downsamples: the norm's output is Transposed back for the
# block's shortcut and read, still channels-last, by the block's first norm, whose Transpose back
# feeds a Conv). `branches`: what reads the first norm: "back" (Transpose back, then Add into
# the sum), "norm_back" (a second norm, Transpose back, 1x1 Conv), "scale_back" (a per-channel
# Mul, Transpose back), "relu_nhwc" (a Relu, kept channels-last as a model output of its own:
# measured, not modelled, so not in the pack: docs/audit.md).
FORKED_NHWC_NORM_PACK = (
    ("focal96", 96, 16, ("back", "norm_back")),
    ("focal40", 40, 8, ("back", "norm_back")),
    ("focal24", 24, 4, ("back", "norm_back")),
    ("three", 32, 8, ("back", "norm_back", "scale_back")),
)


def _forked_nhwc_norm_case(rng, spec) -> tuple[list, list, list, list]:
    """One entry of FORKED_NHWC_NORM_PACK: its nodes, initializers, inputs and outputs."""
    name, c, side, branches = spec
    p = f"{name}_"
    node = _prefixed(p)
    inits = [_const(p + "w", _weights(rng, c, 3, 3, 3))]
    n = [node("Conv", ["x", "w"], "conv", pads=[1, 1, 1, 1]), node("Transpose", ["conv"], "to_nhwc", perm=[0, 2, 3, 1])]
    n += _layer_norm(node, p, "to_nhwc", c, inits)
    summed, outputs = [], [_vi(p + "y", [1, c, side, side])]
    for i, branch in enumerate(branches):
        b = f"b{i}_"
        bn = _prefixed_within(p, b)
        src = p + "ln"
        if branch == "norm_back":
            n += _layer_norm(bn, p + b, src, c, inits)
            src = p + b + "ln"
        elif branch == "scale_back":
            inits.append(_const(p + b + "scale", (rng.standard_normal(c) * 0.3 + 1).astype(np.float32)))
            n.append(bn("Mul", [src, "scale"], "scaled"))
            src = p + b + "scaled"
        elif branch == "relu_nhwc":
            n.append(bn("Relu", [src], "nhwc_out"))
            outputs.append(_vi(p + b + "nhwc_out", [1, side, side, c]))
            continue
        n.append(bn("Transpose", [src], "back", perm=[0, 3, 1, 2]))
        src = p + b + "back"
        if branch == "norm_back":
            inits.append(_const(p + b + "w", _weights(rng, c, c, 1, 1)))
            n.append(bn("Conv", [src, "w"], "conv"))
            src = p + b + "conv"
        summed.append(src)
    total = summed[0]
    for i, other in enumerate(summed[1:]):
        n.append(node("Add", [total, other], f"sum{i}"))
        total = p + f"sum{i}"
    n.append(node("Relu", [total], "y"))
    return n, inits, [_vi(p + "x", [1, 3, side, side])], outputs


CASES.append(Case("forked_nhwc_norm_pack", "fresh2: a channels-last layer norm whose result forks, each branch Transposed back (FocalNet)",
                  lambda: _packed(_forked_nhwc_norm_case, FORKED_NHWC_NORM_PACK, 71), ("rk3566", "rk3588")))


# A space-to-depth written as Reshape, Transpose and Reshape (TResNet's stem: x.view(N, C, H/b,
# b, W/b, b).permute(0, 3, 5, 1, 2, 4).reshape(N, C*b*b, H/b, W/b)), and depth-to-space the same
# way, by block size, channels, what feeds it (a model input, a Conv, a Relu) and the order of
# the moved axes; each read by a 3x3 Conv. (name, channels, side, block, source, perm). Not here:
# space-to-depth with the block axes after the channels (perm [0, 1, 3, 5, 2, 4]), measured and
# not modelled (docs/audit.md).
SPACE_TO_DEPTH_PACK = (
    ("s2d_b4_input", 3, 64, 4, "input", (0, 3, 5, 1, 2, 4)),
    ("s2d_b2_input", 3, 32, 2, "input", (0, 3, 5, 1, 2, 4)),
    ("s2d_b2_conv", 16, 16, 2, "conv", (0, 3, 5, 1, 2, 4)),
    ("s2d_b4_relu", 8, 32, 4, "relu", (0, 3, 5, 1, 2, 4)),
    ("d2s_b2_conv", 32, 8, 2, "conv", (0, 3, 4, 1, 5, 2)),
    ("d2s_crd_b2_conv", 32, 8, 2, "conv", (0, 1, 4, 2, 5, 3)),
    ("s2d_b2_conv64", 64, 8, 2, "conv", (0, 3, 5, 1, 2, 4)),
    ("s2d_b3_conv", 16, 12, 3, "conv", (0, 3, 5, 1, 2, 4)),
)


def _space_to_depth_case(rng, spec) -> tuple[list, list, list, list]:
    """One entry of SPACE_TO_DEPTH_PACK: its nodes, initializers, input and output."""
    name, c, side, b, source, perm = spec
    p = f"{name}_"
    node = _prefixed(p)
    inits, n, src = [], [], p + "x"
    if source == "conv":
        inits.append(_const(p + "w0", _weights(rng, c, c, 3, 3)))
        n.append(node("Conv", ["x", "w0"], "c0", pads=[1, 1, 1, 1]))
        src = p + "c0"
    elif source == "relu":
        n.append(node("Relu", ["x"], "r0"))
        src = p + "r0"
    if name.startswith("d2s_crd"):  # PixelShuffle: [N, C/b^2, b, b, H, W] -> [N, C/b^2, H, b, W, b] -> [N, C/b^2, H*b, W*b]
        split, out_c, out_side = [1, c // (b * b), b, b, side, side], c // (b * b), side * b
    elif name.startswith("d2s"):  # [N, b, b, C/b^2, H, W] -> [N, C/b^2, H, b, W, b] -> [N, C/b^2, H*b, W*b]
        split, out_c, out_side = [1, b, b, c // (b * b), side, side], c // (b * b), side * b
    else:  # [N, C, H/b, b, W/b, b] -> [N, b, b, C, H/b, W/b] -> [N, C*b*b, H/b, W/b]
        split, out_c, out_side = [1, c, side // b, b, side // b, b], c * b * b, side // b
    inits += [_const(p + "split", np.array(split, np.int64)), _const(p + "merged", np.array([1, out_c, out_side, out_side], np.int64)),
              _const(p + "w", _weights(rng, 16, out_c, 3, 3))]
    n += [node("Reshape", [src, "split"], "split_r"), node("Transpose", ["split_r"], "moved", perm=list(perm)),
          node("Reshape", ["moved", "merged"], "merged_r"), node("Conv", ["merged_r", "w"], "y", pads=[1, 1, 1, 1])]
    return n, inits, [_vi(p + "x", [1, c, side, side])], [_vi(p + "y", [1, 16, out_side, out_side])]


CASES.append(Case("space_to_depth_pack", "fresh2: space-to-depth and depth-to-space as Reshape, Transpose, Reshape (TResNet's stem)",
                  lambda: _packed(_space_to_depth_case, SPACE_TO_DEPTH_PACK, 73), ("rk3566", "rk3588")))


# ---- fresh2 (MaxViT): the grid reverse's 6-D Transpose and its channels-last map ------------------

_GRID_REVERSE, _GRID_PARTITION = [0, 3, 1, 4, 2, 5], [0, 2, 4, 1, 3, 5]
# (name, channels, map side, the 6-D view of [1, H, W, C], perm, "map": a Conv's map taken channels-last
# and back around it, then a BatchNormalization ("unit": untrained parameters, "trained", None))
GRID_REVERSE_PACK = (
    ("reverse_8x8x128", 128, 8, (2, 4, 2, 4), _GRID_REVERSE, None),
    ("reverse_4x4x256", 256, 4, (2, 2, 2, 2), _GRID_REVERSE, None),
    ("reverse_16x16x64", 64, 16, (2, 8, 2, 8), _GRID_REVERSE, None),
    ("reverse_8x8x32", 32, 8, (4, 2, 4, 2), _GRID_REVERSE, None),
    ("reverse_8x8x16", 16, 8, (2, 4, 2, 4), _GRID_REVERSE, None),
    ("partition_8x8x128", 128, 8, (2, 4, 2, 4), _GRID_PARTITION, None),
    ("reverse_in_map_unit_norm", 128, 8, (2, 4, 2, 4), _GRID_REVERSE, "unit"),
    ("reverse_in_map_trained_norm", 128, 8, (2, 4, 2, 4), _GRID_REVERSE, "trained"),
    ("partition_in_map_unit_norm", 128, 8, (2, 4, 2, 4), _GRID_PARTITION, "unit"),
    ("reverse_in_layer_normed_map_unit_norm", 128, 8, (2, 4, 2, 4), _GRID_REVERSE, "unit", "layernorm"),
    ("reverse_in_layer_normed_map_trained_norm", 128, 8, (2, 4, 2, 4), _GRID_REVERSE, "trained", "layernorm"),
    ("partition_in_layer_normed_map_unit_norm", 128, 8, (2, 4, 2, 4), _GRID_PARTITION, "unit", "layernorm"),
    ("reverse_in_layer_normed_map_16", 16, 8, (2, 4, 2, 4), _GRID_REVERSE, "unit", "layernorm"),
)


def _batchnorm_params(rng, name: str, c: int, kind: str) -> list:
    if kind == "unit":
        values = (np.ones(c), np.zeros(c), np.zeros(c), np.ones(c))
    else:
        values = (1 + 0.1 * rng.standard_normal(c), 0.1 * rng.standard_normal(c), 0.1 * rng.standard_normal(c), 1 + 0.1 * rng.random(c))
    return [_const(f"{p}_{name}", np.asarray(v, np.float32)) for p, v in zip(("gamma", "beta", "mean", "var"), values)]


def _grid_layer_norm(x: str, y: str, name: str, inits: list) -> list:
    """ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div over the last axis (weight 1, bias 0 left out)."""
    inits += [_const(f"two_{name}", np.array(2.0, np.float32)), _const(f"eps_{name}", np.array(1e-5, np.float32))]
    return [helper.make_node("ReduceMean", [x], [f"mu_{name}"], name=f"ln_mean_{name}", axes=[-1]),
            helper.make_node("Sub", [x, f"mu_{name}"], [f"d_{name}"], name=f"ln_sub_{name}"),
            helper.make_node("Pow", [f"d_{name}", f"two_{name}"], [f"sq_{name}"], name=f"ln_pow_{name}"),
            helper.make_node("ReduceMean", [f"sq_{name}"], [f"v_{name}"], name=f"ln_var_{name}", axes=[-1]),
            helper.make_node("Add", [f"v_{name}", f"eps_{name}"], [f"ve_{name}"], name=f"ln_add_{name}"),
            helper.make_node("Sqrt", [f"ve_{name}"], [f"sd_{name}"], name=f"ln_sqrt_{name}"),
            helper.make_node("Div", [f"d_{name}", f"sd_{name}"], [y], name=f"ln_div_{name}")]


def _grid_case(rng, spec) -> tuple[list, list, list, list]:
    """One entry of GRID_REVERSE_PACK: a channels-last map viewed 6-D, permuted, viewed back, as
    timm's MaxViT writes its grid partition and reverse; with "map", a Conv's map taken channels-last
    ([0, 2, 3, 1]) with a Sigmoid and a residual Add around the view, back out ([0, 3, 1, 2]), a
    BatchNormalization and a Conv (MaxViT's next MBConv)."""
    name, c, h, view, perm, norm, between = (*spec, "sigmoid")[:7]
    six = [1, *view, c]
    inits = [_const(f"six_{name}", np.array(six, np.int64)), _const(f"four_{name}", np.array([1, h, h, c], np.int64))]
    if norm is None:
        nodes, src = [helper.make_node("Relu", [f"x_{name}"], [f"in_{name}"], name=f"relu_{name}")], f"in_{name}"
        x_shape = [1, h, h, c]
    else:
        inits.append(_const(f"w1_{name}", _weights(rng, c, c, 1, 1)))
        nodes = [helper.make_node("Conv", [f"x_{name}", f"w1_{name}"], [f"c_{name}"], name=f"conv_{name}"),
                 helper.make_node("Transpose", [f"c_{name}"], [f"nhwc_{name}"], name=f"to_channels_last_{name}", perm=[0, 2, 3, 1]),
                 helper.make_node("Sigmoid", [f"nhwc_{name}"], [f"in_{name}"], name=f"sigmoid_{name}")]
        if between == "layernorm":  # timm's LayerNorm over the channels, as torch.onnx writes it at opset 13
            nodes = nodes[:-1] + _grid_layer_norm(f"nhwc_{name}", f"in_{name}", name, inits)
        src, x_shape = f"in_{name}", [1, c, h, h]
    nodes += [helper.make_node("Reshape", [src, f"six_{name}"], [f"v6_{name}"], name=f"view6_{name}"),
              helper.make_node("Transpose", [f"v6_{name}"], [f"p_{name}"], name=f"grid_{name}", perm=perm),
              helper.make_node("Reshape", [f"p_{name}", f"four_{name}"], [f"v4_{name}"], name=f"view4_{name}")]
    if norm is None:
        nodes.append(helper.make_node("Relu", [f"v4_{name}"], [f"y_{name}"], name=f"after_{name}"))
        return nodes, inits, [_vi(f"x_{name}", x_shape)], [_vi(f"y_{name}", [1, h, h, c])]
    inits += _batchnorm_params(rng, name, c, norm) + [_const(f"w2_{name}", _weights(rng, c, c, 1, 1))]
    nodes += [helper.make_node("Add", [f"nhwc_{name}", f"v4_{name}"], [f"r_{name}"], name=f"residual_{name}"),
              helper.make_node("Transpose", [f"r_{name}"], [f"nchw_{name}"], name=f"to_channels_first_{name}", perm=[0, 3, 1, 2]),
              helper.make_node("BatchNormalization", [f"nchw_{name}"] + [f"{p}_{name}" for p in ("gamma", "beta", "mean", "var")], [f"bn_{name}"], name=f"norm_{name}"),
              helper.make_node("Conv", [f"bn_{name}", f"w2_{name}"], [f"y_{name}"], name=f"conv2_{name}")]
    return nodes, inits, [_vi(f"x_{name}", x_shape)], [_vi(f"y_{name}", [1, c, h, h])]


CASES.append(Case("grid_reverse_pack", "fresh2: MaxViT's grid reverse and its channels-last map",
                  lambda: _packed(_grid_case, GRID_REVERSE_PACK, 73), ("rk3588",)))


# A batch of token sets made inside the model and joined back by Reshapes (TNT's inner tokens:
# the pixel embedding reshapes [1, T, C] into a batch of T sets, each block joins them into the
# outer tokens [1, T, N*C]). Each case: the batch made by a Reshape [1, B*N, C] -> [B, N, C] (or
# given as the model input, "input"), a Linear, a residual Add, then the Reshape under test to
# `target`, read by a layer norm and a Linear (or a Relu where the sets are only split), and a
# Reshape to a 4-D output. (name, B, N, C, target, made)
BATCH_MERGE_PACK = (
    ("tnt16", 16, 16, 24, (1, 16, 384), "reshape"),
    ("b16n4c16", 16, 4, 16, (1, 16, 64), "reshape"),
    ("b16n4c32", 16, 4, 32, (1, 16, 128), "reshape"),
    ("b16n4c24", 16, 4, 24, (1, 16, 96), "reshape"),
    ("b16n8c16", 16, 8, 16, (1, 16, 128), "reshape"),
    ("b16n16c8", 16, 16, 8, (1, 16, 128), "reshape"),
    ("b16n2c16", 16, 2, 16, (1, 16, 32), "reshape"),
    ("b4n4c16", 4, 4, 16, (1, 4, 64), "reshape"),
    ("b4n16c32", 4, 16, 32, (1, 4, 512), "reshape"),
    ("b2n16c24", 2, 16, 24, (1, 2, 384), "reshape"),
    ("flat16", 16, 16, 24, (1, 256, 24), "reshape"),
    ("lead16", 16, 16, 24, (1, 16, 16, 24), "reshape"),
    ("lead16n4", 16, 4, 16, (1, 16, 4, 16), "reshape"),
    ("input16", 16, 16, 24, (1, 16, 384), "input"),
    ("input4", 4, 16, 32, (1, 4, 512), "input"),
)


def _batch_merge_case(rng, spec) -> tuple[list, list, list, list]:
    """One entry of BATCH_MERGE_PACK: its nodes, initializers, input and output."""
    name, b, n, c, target, made = spec
    p = f"{name}_"
    node = _prefixed(p)
    inits = [_const(p + "w0", _weights(rng, c, c)), _const(p + "w", _weights(rng, c, c)), _const(p + "shape", np.array(target, np.int64))]
    if made == "input":
        nodes, x_shape = [node("MatMul", ["x", "w0"], "sets")], [b, n, c]
    else:
        inits.append(_const(p + "into", np.array([b, n, c], np.int64)))
        nodes, x_shape = [node("MatMul", ["x", "w0"], "tokens"), node("Reshape", ["tokens", "into"], "sets")], [1, b * n, c]
    nodes += [node("MatMul", ["sets", "w"], "lin"), node("Add", ["lin", "sets"], "res"), node("Reshape", ["res", "shape"], "joined")]
    width = target[-1]
    if len(target) == 3:  # joined: a layer norm and a Linear read it
        inits += [_const(p + "g", np.ones(width, np.float32)), _const(p + "b", np.zeros(width, np.float32)), _const(p + "w2", _weights(rng, width, 32))]
        nodes += [node("LayerNormalization", ["joined", "g", "b"], "ln", axis=-1, epsilon=1e-5), node("MatMul", ["ln", "w2"], "read")]
        rows, cols = int(np.prod(target[:-1])), 32
    else:  # only split: a Relu reads it
        nodes.append(node("Relu", ["joined"], "read"))
        rows, cols = int(np.prod(target[:-1])), width
    inits.append(_const(p + "out", np.array([1, rows, cols, 1], np.int64)))
    nodes.append(node("Reshape", ["read", "out"], "y"))
    return nodes, inits, [_vi(p + "x", x_shape)], [_vi(p + "y", [1, rows, cols, 1])]


CASES.append(Case("batch_merge_pack", "fresh2: a batch of token sets made and joined back by Reshapes (TNT)",
                  lambda: _packed(_batch_merge_case, BATCH_MERGE_PACK, 79, opset=17), ("rk3566",)))


# Attention's heads merged with the heads last (NesT: (attn @ v).permute(0, 2, 3, 4, 1), C = D*H
# order) against the usual merge. One joint q/k/v Linear, a Reshape [1, (T,) N, 3, H, D], its
# Transpose, Split and Squeeze (as NesT), q @ k^T scaled, Softmax, @ v, the merge Transpose and
# Reshape, the output Linear and a mean over the tokens. (name, T (None: no block axis), N, H, D,
# merge). Not here: 16 blocks of 16 tokens (NesT's first level), where RK3566 also ran the joint
# projection's Transpose (and with the usual merge, the merge) on the CPU: docs/audit.md.
HEADS_LAST_PACK = (
    ("flat_last", None, 16, 4, 16, "last"),
    ("flat_last_d8", None, 16, 4, 8, "last"),
    ("flat_usual", None, 16, 4, 16, "usual"),
    ("block_last", 1, 16, 12, 32, "last"),
)


def _heads_last_case(rng, spec) -> tuple[list, list, list, list]:
    """One entry of HEADS_LAST_PACK: its nodes, initializers, input and output."""
    name, t, n, h, d, merge = spec
    p = f"{name}_"
    node = _prefixed(p)
    c, lead = h * d, [1] if t is None else [1, t]
    inits = [_const(p + "wqkv", _weights(rng, c, 3 * c)), _const(p + "bqkv", _weights(rng, 3 * c)), _const(p + "split", np.array(lead + [n, 3, h, d], np.int64)),
             _const(p + "merged", np.array(lead + [n, c], np.int64)), _const(p + "scale", np.array(d ** -0.5, np.float32)), _const(p + "wout", _weights(rng, c, c)),
             _const(p + "parts", np.array([1, 1, 1], np.int64)), _const(p + "axis0", np.array([0], np.int64))]
    if t is None:
        qkv_perm, k_perm, merge_perm = [2, 0, 3, 1, 4], [0, 1, 3, 2], [0, 2, 3, 1] if merge == "last" else [0, 2, 1, 3]
    else:
        qkv_perm, k_perm, merge_perm = [3, 0, 4, 1, 2, 5], [0, 1, 2, 4, 3], [0, 2, 3, 4, 1] if merge == "last" else [0, 2, 3, 1, 4]
    nodes = [node("MatMul", ["x", "wqkv"], "qkv0"), node("Add", ["qkv0", "bqkv"], "qkv1"), node("Reshape", ["qkv1", "split"], "qkv_r"),
             node("Transpose", ["qkv_r"], "qkv_t", perm=qkv_perm),
             helper.make_node("Split", [p + "qkv_t", p + "parts"], [p + "q0", p + "k0", p + "v0"], name=p + "split_qkv", axis=0)]
    nodes += [node("Squeeze", [f"{part}0", "axis0"], part) for part in "qkv"]
    nodes += [node("Transpose", ["k"], "kt", perm=k_perm), node("MatMul", ["q", "kt"], "s0"), node("Mul", ["s0", "scale"], "s"),
              node("Softmax", ["s"], "a", axis=-1), node("MatMul", ["a", "v"], "o"), node("Transpose", ["o"], "merge_t", perm=merge_perm),
              node("Reshape", ["merge_t", "merged"], "merge_r"), node("MatMul", ["merge_r", "wout"], "proj"),
              node("ReduceMean", ["proj"], "y", axes=list(range(1, len(lead) + 1)), keepdims=0)]
    return nodes, inits, [_vi(p + "x", lead + [n, c])], [_vi(p + "y", [1, c])]


CASES.append(Case("heads_last_pack", "fresh2: attention's heads merged with the heads last (NesT)",
                  lambda: _packed(_heads_last_case, HEADS_LAST_PACK, 83), ("rk3566", "rk3588")))


# ---- fresh2 (SwiftFormer): a small map flattened into tokens for Linears and viewed back ----------

# (name, channels, map side, how the flattening's shape is written: "constant" or "computed" from Shape)
TOKENS_FOR_LINEARS_PACK = (
    ("c220_2x2", 220, 2, "computed"), ("c40_3x3", 40, 3, "computed"), ("c56_2x2", 56, 2, "constant"),
    ("c40_5x5", 40, 5, "constant"), ("c48_2x2", 48, 2, "computed"), ("c40_4x4", 40, 4, "computed"), ("c64_3x3", 64, 3, "constant"),
)


def _tokens_for_linears_case(rng, spec) -> tuple[list, list, list, list]:
    """One entry of TOKENS_FOR_LINEARS_PACK, as timm's SwiftFormer writes its attention's ends:
    x.flatten(2).permute(0, 2, 1), a query and a key Linear, their product, a Linear, then
    .permute(0, 2, 1).reshape(B, -1, H, W) and the residual Add; the map from a depthwise Conv."""
    name, c, h, spelling = spec
    p = f"{name}_"
    inits = [_const(p + "dw", _weights(rng, c, 1, 3, 3)), _const(p + "wq", _weights(rng, c, c)), _const(p + "wk", _weights(rng, c, c)),
             _const(p + "wf", _weights(rng, c, c)), _const(p + "back", np.array([1, c, h, h], np.int64))]
    nodes = [helper.make_node("Conv", [p + "x", p + "dw"], [p + "m"], name=p + "dwconv", group=c, pads=[1, 1, 1, 1])]
    if spelling == "computed":  # flatten(2) at opset 17: Shape, Slice, Concat with -1
        inits += [_const(p + "s0", np.array([0], np.int64)), _const(p + "s2", np.array([2], np.int64)), _const(p + "m1", np.array([-1], np.int64))]
        nodes += [helper.make_node("Shape", [p + "m"], [p + "shape"], name=p + "shape"),
                  helper.make_node("Slice", [p + "shape", p + "s0", p + "s2"], [p + "nc"], name=p + "slice"),
                  helper.make_node("Concat", [p + "nc", p + "m1"], [p + "flat_shape"], name=p + "concat", axis=0)]
    else:
        inits.append(_const(p + "flat_shape", np.array([1, c, h * h], np.int64)))
    nodes += [helper.make_node("Reshape", [p + "m", p + "flat_shape"], [p + "f"], name=p + "flatten"),
              helper.make_node("Transpose", [p + "f"], [p + "t"], name=p + "to_tokens", perm=[0, 2, 1]),
              helper.make_node("MatMul", [p + "t", p + "wq"], [p + "q"], name=p + "to_query"),
              helper.make_node("MatMul", [p + "t", p + "wk"], [p + "k"], name=p + "to_key"),
              helper.make_node("Mul", [p + "q", p + "k"], [p + "qk"], name=p + "product"),
              helper.make_node("MatMul", [p + "qk", p + "wf"], [p + "o"], name=p + "final"),
              helper.make_node("Transpose", [p + "o"], [p + "ot"], name=p + "to_map", perm=[0, 2, 1]),
              helper.make_node("Reshape", [p + "ot", p + "back"], [p + "v"], name=p + "view_back"),
              helper.make_node("Add", [p + "m", p + "v"], [p + "y"], name=p + "residual")]
    return nodes, inits, [_vi(p + "x", [1, c, h, h])], [_vi(p + "y", [1, c, h, h])]


CASES.append(Case("tokens_for_linears_pack", "fresh2: a small map flattened into tokens for Linears and viewed back (SwiftFormer)",
                  lambda: _packed(_tokens_for_linears_case, TOKENS_FOR_LINEARS_PACK, 79, opset=17), ("rk3588",)))


# A convolution map split into blocks laid along an axis of their own and rebuilt (NesT's levels):
# Conv, Transpose [0, 2, 3, 1], Reshape [1, H/b, b, W/b, b, C], Transpose [0, 1, 3, 2, 4, 5],
# Reshape [1, blocks, b*b, C], a position Add, a layer norm and a residual Linear, then the reverse
# and Transpose [0, 3, 1, 2] into a 1x1 Conv. (name, channels, side, block)
BLOCK_PARTITION_PACK = (("l0", 96, 16, 4), ("l1", 192, 8, 4), ("l2", 384, 4, 4), ("s32", 32, 16, 4), ("s32b8", 32, 16, 8))


def _block_partition_case(rng, spec) -> tuple[list, list, list, list]:
    """One entry of BLOCK_PARTITION_PACK: its nodes, initializers, input and output."""
    name, c, side, b = spec
    p = f"{name}_"
    node = _prefixed(p)
    g = side // b
    inits = [_const(p + "w0", _weights(rng, c, 3, 3, 3)), _const(p + "part", np.array([1, g, b, g, b, c], np.int64)), _const(p + "blocks", np.array([1, g * g, b * b, c], np.int64)),
             _const(p + "pos", _weights(rng, 1, g * g, b * b, c)), _const(p + "g", np.ones(c, np.float32)), _const(p + "bb", np.zeros(c, np.float32)),
             _const(p + "w", _weights(rng, c, c)), _const(p + "grid", np.array([1, g, g, b, b, c], np.int64)), _const(p + "map", np.array([1, side, side, c], np.int64)),
             _const(p + "w1", _weights(rng, 16, c, 1, 1))]
    nodes = [node("Conv", ["x", "w0"], "conv", pads=[1, 1, 1, 1]), node("Transpose", ["conv"], "nhwc", perm=[0, 2, 3, 1]),
             node("Reshape", ["nhwc", "part"], "part_r"), node("Transpose", ["part_r"], "part_t", perm=[0, 1, 3, 2, 4, 5]), node("Reshape", ["part_t", "blocks"], "blocks_r"),
             node("Add", ["blocks_r", "pos"], "posed"), node("LayerNormalization", ["posed", "g", "bb"], "ln", axis=-1, epsilon=1e-6), node("MatMul", ["ln", "w"], "lin"),
             node("Add", ["lin", "posed"], "res"), node("Reshape", ["res", "grid"], "grid_r"), node("Transpose", ["grid_r"], "grid_t", perm=[0, 1, 3, 2, 4, 5]),
             node("Reshape", ["grid_t", "map"], "map_r"), node("Transpose", ["map_r"], "nchw", perm=[0, 3, 1, 2]), node("Conv", ["nchw", "w1"], "y")]
    return nodes, inits, [_vi(p + "x", [1, 3, side, side])], [_vi(p + "y", [1, 16, side, side])]


CASES.append(Case("block_partition_pack", "fresh2: a convolution map split into blocks along an axis of their own and rebuilt (NesT)",
                  lambda: _packed(_block_partition_case, BLOCK_PARTITION_PACK, 11, opset=17), ("rk3566", "rk3588")))


# ---- fresh2 (SwiftFormer, esp32s3): F.normalize as torch.onnx writes it --------------------------

# (name, input shape, the normalised axis, "expand": F.normalize's Clip and Expand; "clip": no Expand)
LP_NORM_PACK = (("last_axis", (1, 4, 64), -1, "expand"), ("axis_1", (1, 4, 1), 1, "expand"), ("clip_only", (1, 4, 64), -1, "clip"))


def _lp_norm_case(rng, spec) -> tuple[list, list, list, list]:
    """One entry of LP_NORM_PACK: a Linear, then x / Expand(Clip(ReduceL2(x, axis)), Shape(x)) (SwiftFormer's
    query and key), or without the Expand."""
    name, shape, axis, form = spec
    p = f"{name}_"
    inits = [_const(p + "w", _weights(rng, shape[-1], shape[-1])), _const(p + "eps", np.array(1e-12, np.float32))]
    nodes = [helper.make_node("MatMul", [p + "x", p + "w"], [p + "q"], name=p + "linear"),
             helper.make_node("ReduceL2", [p + "q"], [p + "n"], name=p + "l2", axes=[axis], keepdims=1),
             helper.make_node("Clip", [p + "n", p + "eps", ""], [p + "nc"], name=p + "clip")]
    norm = p + "nc"
    if form == "expand":
        nodes += [helper.make_node("Shape", [p + "q"], [p + "qs"], name=p + "shape"),
                  helper.make_node("Expand", [p + "nc", p + "qs"], [p + "ne"], name=p + "expand")]
        norm = p + "ne"
    nodes.append(helper.make_node("Div", [p + "q", norm], [p + "y"], name=p + "div"))
    return nodes, inits, [_vi(p + "x", list(shape))], [_vi(p + "y", list(shape))]


CASES.append(Case("lp_norm_pack", "fresh2: F.normalize fused into LpNormalization by esp-ppq (SwiftFormer)",
                  lambda: _packed(_lp_norm_case, LP_NORM_PACK, 83, opset=17), ("esp32s3",)))


# (name, windows along H and W, window side, channels, the swap after the view: MaxViT's grid
# reverse or Swin's window swap)
GRID_WINDOWS_VIEW_PACK = (
    ("windows4_c256", (2, 2), 2, 256, "grid"), ("windows4_c32", (2, 2), 2, 32, "grid"), ("windows8_c128", (2, 4), 2, 128, "grid"),
    ("windows9_c128", (3, 3), 2, 128, "grid"), ("windows4_of_4x4_c64", (2, 2), 4, 64, "grid"), ("windows16_c128", (4, 4), 2, 128, "grid"),
    ("windows32_c64", (4, 8), 2, 64, "grid"), ("windows4_c128_swin", (2, 2), 2, 128, "window"),
)


def _grid_windows_view_case(rng, spec) -> tuple[list, list, list, list]:
    """One entry of GRID_WINDOWS_VIEW_PACK: attention's output projection over a batch of windows
    [nW, g, g, C], viewed into [1, a, b, g, g, C], swapped, viewed as the map [1, a*g, b*g, C]."""
    name, (a, b), g, c, swap = spec
    p = f"{name}_"
    perm = _GRID_REVERSE if swap == "grid" else [0, 1, 3, 2, 4, 5]
    inits = [_const(p + "w", _weights(rng, c, c)), _const(p + "six", np.array([1, a, b, g, g, c], np.int64)),
             _const(p + "four", np.array([1, a * g, b * g, c], np.int64))]
    nodes = [helper.make_node("MatMul", [p + "x", p + "w"], [p + "o"], name=p + "proj"),
             helper.make_node("Reshape", [p + "o", p + "six"], [p + "v6"], name=p + "view6"),
             helper.make_node("Transpose", [p + "v6"], [p + "t"], name=p + "swap", perm=perm),
             helper.make_node("Reshape", [p + "t", p + "four"], [p + "v4"], name=p + "view4"),
             helper.make_node("Relu", [p + "v4"], [p + "y"], name=p + "after")]
    return nodes, inits, [_vi(p + "x", [a * b, g, g, c])], [_vi(p + "y", [1, a * g, b * g, c])]


CASES.append(Case("grid_windows_view_pack", "fresh2: MaxViT's windows viewed back into its grid before the reverse",
                  lambda: _packed(_grid_windows_view_case, GRID_WINDOWS_VIEW_PACK, 89), ("rk3588",)))


# Channel attention over a joint q/k/v projection (DaViT's ChannelAttention: k scaled, k^T @ v,
# Softmax, attn @ q^T, transposed back; ChannelAttentionV2: q scaled, q^T @ k, attn @ v^T) beside
# the usual attention, each on a [1, N, H*D] input: heads merged, output Linear, token mean.
# (name, N, H, D, kind)
CHANNEL_ATTENTION_PACK = (("davit64", 64, 3, 32, "davit"), ("davit16", 16, 6, 32, "davit"), ("v2_64", 64, 3, 32, "v2"),
                          ("usual64", 64, 3, 32, "usual"), ("davit16d16", 16, 4, 16, "davit"))


def _channel_attention_case(rng, spec) -> tuple[list, list, list, list]:
    """One entry of CHANNEL_ATTENTION_PACK: its nodes, initializers, input and output."""
    name, n, h, d, kind = spec
    p = f"{name}_"
    node = _prefixed(p)
    c = h * d
    inits = [_const(p + "wqkv", _weights(rng, c, 3 * c)), _const(p + "bqkv", _weights(rng, 3 * c)), _const(p + "split", np.array([1, n, 3, h, d], np.int64)),
             _const(p + "merged", np.array([1, n, c], np.int64)), _const(p + "scale", np.array(d ** -0.5, np.float32)), _const(p + "wout", _weights(rng, c, c)),
             _const(p + "parts", np.array([1, 1, 1], np.int64)), _const(p + "axis0", np.array([0], np.int64))]
    nodes = [node("MatMul", ["x", "wqkv"], "qkv0"), node("Add", ["qkv0", "bqkv"], "qkv1"), node("Reshape", ["qkv1", "split"], "qkv_r"),
             node("Transpose", ["qkv_r"], "qkv_t", perm=[2, 0, 3, 1, 4]),
             helper.make_node("Split", [p + "qkv_t", p + "parts"], [p + "q0", p + "k0", p + "v0"], name=p + "split_qkv", axis=0)]
    nodes += [node("Squeeze", [f"{part}0", "axis0"], part) for part in "qkv"]
    swap = [0, 1, 3, 2]
    if kind == "davit":
        nodes += [node("Mul", ["k", "scale"], "ks"), node("Transpose", ["ks"], "kt", perm=swap), node("MatMul", ["kt", "v"], "s"),
                  node("Softmax", ["s"], "a", axis=-1), node("Transpose", ["q"], "qt", perm=swap), node("MatMul", ["a", "qt"], "o0"), node("Transpose", ["o0"], "o", perm=swap)]
    elif kind == "v2":
        nodes += [node("Mul", ["q", "scale"], "qs"), node("Transpose", ["qs"], "qt", perm=swap), node("MatMul", ["qt", "k"], "s"),
                  node("Softmax", ["s"], "a", axis=-1), node("Transpose", ["v"], "vt", perm=swap), node("MatMul", ["a", "vt"], "o0"), node("Transpose", ["o0"], "o", perm=swap)]
    else:
        nodes += [node("Mul", ["q", "scale"], "qs"), node("Transpose", ["k"], "kt", perm=swap), node("MatMul", ["qs", "kt"], "s"),
                  node("Softmax", ["s"], "a", axis=-1), node("MatMul", ["a", "v"], "o")]
    nodes += [node("Transpose", ["o"], "merge_t", perm=[0, 2, 1, 3]), node("Reshape", ["merge_t", "merged"], "merge_r"), node("MatMul", ["merge_r", "wout"], "proj"),
              node("ReduceMean", ["proj"], "y", axes=[1], keepdims=0)]
    return nodes, inits, [_vi(p + "x", [1, n, c])], [_vi(p + "y", [1, c])]


CASES.append(Case("channel_attention_pack", "fresh2: channel attention over a joint q/k/v projection (DaViT)",
                  lambda: _packed(_channel_attention_case, CHANNEL_ATTENTION_PACK, 13), ("rk3566", "rk3588")))


# ---- fresh2 (GC ViT): a global query tiled over the windows and split into heads -----------------

# (name, what makes the query: "tile" of a [1, 4, C] query, "tile4d" of a [1, 2, 2, C] one, "sigmoid"
# or "mish" of a per-window one; windows, heads, head size, whether q @ k^T follows)
# Not here: a [1, 4, C] query tiled and split into heads ([B, 4, C] -> [B, 4, h, d]), whose Reshape the
# toolkit also ran on the CPU (4 and 16 windows, heads of 24 and 32) but which the audit joins with its
# Transpose into the product (transposes_merged_into_matmul) and leaves on the NPU: docs/audit.md.
TILED_QUERY_PACK = (
    ("tile4d_product", "tile4d", 4, 2, 32, True), ("tile4d_relu", "tile4d", 4, 2, 32, False), ("tile4d_16_windows_4_heads", "tile4d", 16, 4, 32, True),
    ("tile4d_heads_of_24", "tile4d", 4, 2, 24, True), ("sigmoid_product", "sigmoid", 4, 2, 32, True), ("mish_product", "mish", 4, 2, 32, True),
)


def _tiled_query_case(rng, spec) -> tuple[list, list, list, list]:
    """One entry of TILED_QUERY_PACK: the query (tiled over the windows as GC ViT's q_global.repeat),
    Reshape into heads, Transpose [0, 2, 1, 3], the scale, then q @ k^T with k a Linear of the windows'
    tokens split into heads (or a Relu instead of the product)."""
    name, source, b, h, d, product = spec
    p, c, n = f"{name}_", h * d, 4
    tiled = source.startswith("tile")
    q_shape = [1, 2, 2, c] if source == "tile4d" else [1 if tiled else b, n, c]
    inits = [_const(p + "rep", np.array([b] + [1] * (len(q_shape) - 1), np.int64)), _const(p + "heads", np.array([b, n, h, d], np.int64)),
             _const(p + "scale", np.array(d ** -0.5, np.float32))]
    make = {"tile": "Tile", "tile4d": "Tile", "sigmoid": "Sigmoid", "mish": "Mish"}[source]
    nodes = [helper.make_node("Relu", [p + "q"], [p + "r"], name=p + "relu"),
             helper.make_node(make, [p + "r", p + "rep"] if tiled else [p + "r"], [p + "s"], name=p + make.lower()),
             helper.make_node("Reshape", [p + "s", p + "heads"], [p + "qh"], name=p + "q_heads"),
             helper.make_node("Transpose", [p + "qh"], [p + "qt"], name=p + "q_swap", perm=[0, 2, 1, 3]),
             helper.make_node("Mul", [p + "qt", p + "scale"], [p + "qm"], name=p + "q_scale")]
    inputs = [_vi(p + "q", q_shape)]
    if not product:
        nodes.append(helper.make_node("Relu", [p + "qm"], [p + "y"], name=p + "after"))
        return nodes, inits, inputs, [_vi(p + "y", [b, h, n, d])]
    inits.append(_const(p + "wk", _weights(rng, c, c)))
    nodes += [helper.make_node("MatMul", [p + "x", p + "wk"], [p + "k"], name=p + "key"),
              helper.make_node("Reshape", [p + "k", p + "heads"], [p + "kh"], name=p + "key_heads"),
              helper.make_node("Transpose", [p + "kh"], [p + "kt"], name=p + "key_swap", perm=[0, 2, 3, 1]),
              helper.make_node("MatMul", [p + "qm", p + "kt"], [p + "y"], name=p + "qk")]
    return nodes, inits, inputs + [_vi(p + "x", [b, n, c])], [_vi(p + "y", [b, h, n, n])]


CASES.append(Case("tiled_query_pack", "fresh2: a global query tiled over the windows, split into heads (GC ViT)",
                  lambda: _packed(_tiled_query_case, TILED_QUERY_PACK, 97, opset=18), ("rk3588",)))


# TNT's pixel embedding after its unfold: tokens [1, L, C*k*k] reshaped into a batch of L pixel
# sets [L, C, k, k], a 1x1 Conv, the sets flattened [L, D, k*k] and swapped [L, k*k, D] (Transpose
# [0, 2, 1]), then joined into the outer tokens [1, L, k*k*D], a layer norm and a Linear.
# (name, L, C, k, D)
PIXEL_SETS_PACK = (("tnt16", 16, 3, 4, 24), ("tnt4", 4, 8, 4, 16))


def _pixel_sets_case(rng, spec) -> tuple[list, list, list, list]:
    """One entry of PIXEL_SETS_PACK: its nodes, initializers, input and output."""
    name, sets, c, k, d = spec
    p = f"{name}_"
    node = _prefixed(p)
    width = d * k * k
    inits = [_const(p + "w0", _weights(rng, c * k * k, c * k * k)), _const(p + "sets", np.array([sets, c, k, k], np.int64)), _const(p + "w1", _weights(rng, d, c, 1, 1)),
             _const(p + "back", np.array([sets, d, k * k], np.int64)), _const(p + "join", np.array([1, sets, width], np.int64)),
             _const(p + "g", np.ones(width, np.float32)), _const(p + "b", np.zeros(width, np.float32)), _const(p + "w2", _weights(rng, width, 32)),
             _const(p + "out", np.array([1, sets, 32, 1], np.int64))]
    nodes = [node("MatMul", ["x", "w0"], "tokens"), node("Reshape", ["tokens", "sets"], "sets_r"), node("Conv", ["sets_r", "w1"], "conv"),
             node("Reshape", ["conv", "back"], "back_r"), node("Transpose", ["back_r"], "inner", perm=[0, 2, 1]), node("Reshape", ["inner", "join"], "joined"),
             node("LayerNormalization", ["joined", "g", "b"], "ln", axis=-1, epsilon=1e-5), node("MatMul", ["ln", "w2"], "lin"), node("Reshape", ["lin", "out"], "y")]
    return nodes, inits, [_vi(p + "x", [1, sets, c * k * k])], [_vi(p + "y", [1, sets, 32, 1])]


CASES.append(Case("pixel_sets_pack", "fresh2: TNT's pixel sets made, convolved, swapped and joined back (a batch flattened after a Transpose)",
                  lambda: _packed(_pixel_sets_case, PIXEL_SETS_PACK, 19, opset=17), ("rk3566", "rk3588")))


# ---- fresh2 (MViTv2): attention plus decomposed relative positions merged back -----------------

# (name, heads, query grid side, key grid side, head size, positions: "einsum" from the query as timm
# writes them, or "constant")
RELATIVE_POSITIONS_PACK = (("keys4_einsum", 8, 2, 2, 32, "einsum"), ("keys16_einsum", 8, 2, 4, 32, "einsum"),
                           ("keys4_constant", 8, 2, 2, 32, "constant"), ("keys9_einsum", 2, 3, 3, 32, "einsum"))


def _relative_positions_case(rng, spec) -> tuple[list, list, list, list]:
    """One entry of RELATIVE_POSITIONS_PACK, as timm's cal_rel_pos_type writes it with no class token:
    attn = q @ k^T viewed [1, h, qh, qw, kh, kw], plus rel_h.unsqueeze(-1) and rel_w.unsqueeze(-2) (Einsums
    of the query with position tables), merged back to [1, h, Tq, Tk], Expand, Reshape, written over attn
    by a ScatterND of every element, Softmax, attn @ k (as the value)."""
    name, h, qs, ks, d, positions = spec
    p, tq, tk = f"{name}_", qs * qs, ks * ks
    four, six = [1, h, tq, tk], [1, h, qs, qs, ks, ks]
    every = np.stack(np.meshgrid(*[np.arange(n) for n in four], indexing="ij"), axis=-1).astype(np.int64)
    inits = [_const(p + "six", np.array(six, np.int64)), _const(p + "four", np.array(four, np.int64)), _const(p + "every", every)]
    nodes = [helper.make_node("Transpose", [p + "k"], [p + "kt"], name=p + "k_swap", perm=[0, 1, 3, 2]),
             helper.make_node("MatMul", [p + "q", p + "kt"], [p + "attn"], name=p + "qk"),
             helper.make_node("Reshape", [p + "attn", p + "six"], [p + "a6"], name=p + "view6")]
    if positions == "einsum":
        inits += [_const(p + "q5", np.array([1, h, qs, qs, d], np.int64)), _const(p + "table_h", _weights(rng, qs, ks, d)),
                  _const(p + "table_w", _weights(rng, qs, ks, d)), _const(p + "last", np.array([5], np.int64)), _const(p + "fifth", np.array([4], np.int64))]
        nodes += [helper.make_node("Reshape", [p + "q", p + "q5"], [p + "rq"], name=p + "q_view"),
                  helper.make_node("Einsum", [p + "rq", p + "table_h"], [p + "rh"], name=p + "einsum_h", equation="byhwc,hkc->byhwk"),
                  helper.make_node("Einsum", [p + "rq", p + "table_w"], [p + "rw"], name=p + "einsum_w", equation="byhwc,wkc->byhwk"),
                  helper.make_node("Unsqueeze", [p + "rh", p + "last"], [p + "rh6"], name=p + "unsqueeze_h"),
                  helper.make_node("Unsqueeze", [p + "rw", p + "fifth"], [p + "rw6"], name=p + "unsqueeze_w"),
                  helper.make_node("Add", [p + "a6", p + "rh6"], [p + "s1"], name=p + "add_h"),
                  helper.make_node("Add", [p + "s1", p + "rw6"], [p + "s2"], name=p + "add_w")]
    else:
        inits.append(_const(p + "positions", _weights(rng, 1, h, qs, qs, ks, 1)))
        nodes.append(helper.make_node("Add", [p + "a6", p + "positions"], [p + "s2"], name=p + "add_h"))
    nodes += [helper.make_node("Reshape", [p + "s2", p + "four"], [p + "m"], name=p + "merge"),
              helper.make_node("Expand", [p + "m", p + "four"], [p + "e"], name=p + "expand"),
              helper.make_node("Reshape", [p + "e", p + "four"], [p + "u"], name=p + "updates"),
              helper.make_node("ScatterND", [p + "attn", p + "every", p + "u"], [p + "sc"], name=p + "scatter"),
              helper.make_node("Softmax", [p + "sc"], [p + "sm"], name=p + "softmax", axis=-1),
              helper.make_node("MatMul", [p + "sm", p + "k"], [p + "y"], name=p + "av")]
    return nodes, inits, [_vi(p + "q", [1, h, tq, d]), _vi(p + "k", [1, h, tk, d])], [_vi(p + "y", [1, h, tq, d])]


CASES.append(Case("relative_positions_pack", "fresh2: attention plus decomposed relative positions merged back (MViTv2)",
                  lambda: _packed(_relative_positions_case, RELATIVE_POSITIONS_PACK, 101), ("rk3588",)))


# ---- fresh2 (Twins' locally-grouped attention): attention over windows kept on an axis of their own ----

# Attention over nW windows kept on an axis of their own ([1, nW, H, T, D], 5-D; Twins' LSA, NesT),
# as timm writes it: one joint q/k/v Linear, Reshape [1, nW, T, 3, H, D], Transpose [3, 0, 1, 4, 2,
# 5], Split and Squeeze, then the scores scaled either as scaled_dot_product_attention's export
# writes it (q * sqrt(s) and the key's Transpose [0, 1, 2, 4, 3] * sqrt(s): "both") or after the
# product ("after"), Softmax, @ v, the merge Transpose [0, 1, 3, 2, 4] and Reshape [1, nW, T, C],
# the output Linear. "flat": the same over [1, H, T, D] (no window axis). (name, nW, T, H, D, scale)
WINDOW_AXIS_ATTENTION_PACK = (
    ("w9_both", 9, 49, 2, 32, "both"), ("w4_both", 4, 49, 4, 32, "both"), ("w1_both", 1, 49, 8, 32, "both"),
    ("w1_both_t16", 1, 16, 4, 16, "both"), ("w9_after", 9, 49, 2, 32, "after"), ("w1_after", 1, 49, 8, 32, "after"),
    ("flat_both", None, 49, 4, 32, "both"), ("w4_both_t24", 4, 24, 2, 32, "both"), ("w1_both_t16_d12", 1, 16, 2, 12, "both"),
    ("w9_after_t64", 9, 64, 2, 16, "after"), ("w4_after_t20", 4, 20, 2, 32, "after"),
)


def _window_axis_attention_case(rng, spec) -> tuple[list, list, list, list]:
    """One entry of WINDOW_AXIS_ATTENTION_PACK: its nodes, initializers, input and output."""
    name, nw, t, h, d, scale = spec
    p = f"{name}_"
    node = _prefixed(p)
    c, lead = h * d, [1] if nw is None else [1, nw]
    r = len(lead)  # axes before the tokens
    inits = [_const(p + "wqkv", _weights(rng, c, 3 * c)), _const(p + "bqkv", _weights(rng, 3 * c)), _const(p + "split", np.array(lead + [t, 3, h, d], np.int64)),
             _const(p + "merged", np.array(lead + [t, c], np.int64)), _const(p + "s", np.array(d ** -0.25 if scale == "both" else d ** -0.5, np.float32)),
             _const(p + "wout", _weights(rng, c, c)), _const(p + "parts", np.array([1, 1, 1], np.int64)), _const(p + "axis0", np.array([0], np.int64))]
    qkv_perm = [r + 1, *range(r), r + 2, r, r + 3]  # [3, 0, 1, 4, 2, 5] with a window axis
    k_perm = list(range(r + 1)) + [r + 2, r + 1]
    merge_perm = list(range(r)) + [r + 1, r, r + 2]
    nodes = [node("MatMul", ["x", "wqkv"], "qkv0"), node("Add", ["qkv0", "bqkv"], "qkv1"), node("Reshape", ["qkv1", "split"], "qkv_r"),
             node("Transpose", ["qkv_r"], "qkv_t", perm=qkv_perm),
             helper.make_node("Split", [p + "qkv_t", p + "parts"], [p + "q0", p + "k0", p + "v0"], name=p + "split_qkv", axis=0)]
    nodes += [node("Squeeze", [f"{part}0", "axis0"], part) for part in "qkv"]
    nodes += [node("Transpose", ["k"], "kt", perm=k_perm)]
    if scale == "both":
        nodes += [node("Mul", ["q", "s"], "qs"), node("Mul", ["kt", "s"], "kts"), node("MatMul", ["qs", "kts"], "scores")]
    else:
        nodes += [node("MatMul", ["q", "kt"], "s0"), node("Mul", ["s0", "s"], "scores")]
    nodes += [node("Softmax", ["scores"], "a", axis=-1), node("MatMul", ["a", "v"], "o"), node("Transpose", ["o"], "merge_t", perm=merge_perm),
              node("Reshape", ["merge_t", "merged"], "merge_r"), node("MatMul", ["merge_r", "wout"], "y")]
    return nodes, inits, [_vi(p + "x", lead + [t, c])], [_vi(p + "y", lead + [t, c])]


CASES.append(Case("window_axis_attention_pack", "fresh2: attention over windows on an axis of their own, scaled as SDPA exports (Twins)",
                  lambda: _packed(_window_axis_attention_case, WINDOW_AXIS_ATTENTION_PACK, 89, opset=17), ("rk3566", "rk3588")))


# Twins' locally-grouped attention from its windows on, as timm writes it: a map of side H padded
# at the end to a multiple of the window ws and partitioned ([1, hp, wp, ws, ws, C], the model
# input here: the partition before it is not modelled, docs/audit.md), the joint q/k/v Linear, Reshape
# [1, nW, T, 3, heads, D], Transpose [3, 0, 1, 4, 2, 5], Split, Squeeze, SDPA's scales, Softmax,
# @ v, the merge Transpose [0, 1, 3, 2, 4], the reverse (Reshape [1, hp, wp, ws, ws, C],
# Transpose [0, 1, 3, 2, 4, 5], Reshape [1, hp*ws, wp*ws, C]), the crop (Slice) and the tokens
# again, then the output Linear. (name, side, C, heads, ws)
LOCAL_GROUPED_ATTENTION_PACK = (
    ("s16", 16, 64, 2, 7), ("s8", 8, 128, 4, 7), ("s4", 4, 256, 8, 7), ("s2", 2, 512, 16, 7), ("s14", 14, 64, 2, 7),
    ("s16w8", 16, 64, 8, 8), ("s16w8h2", 16, 64, 2, 8), ("s8w8", 8, 64, 8, 8), ("s7", 7, 64, 2, 7), ("s16w8h8d16", 16, 128, 8, 8),
)


def _local_grouped_attention_case(rng, spec) -> tuple[list, list, list, list]:
    """One entry of LOCAL_GROUPED_ATTENTION_PACK: its nodes, initializers, input and output."""
    name, side, c, h, ws = spec
    p = f"{name}_"
    node = _prefixed(p)
    padded = -(-side // ws) * ws
    g, d, t = padded // ws, c // h, ws * ws
    inits = [_const(p + "wqkv", _weights(rng, c, 3 * c)), _const(p + "bqkv", _weights(rng, 3 * c)),
             _const(p + "split", np.array([1, g * g, t, 3, h, d], np.int64)), _const(p + "s", np.array(d ** -0.25, np.float32)),
             _const(p + "parts", np.array([1, 1, 1], np.int64)), _const(p + "axis0", np.array([0], np.int64)),
             _const(p + "grid", np.array([1, g, g, ws, ws, c], np.int64)), _const(p + "full", np.array([1, padded, padded, c], np.int64)),
             _const(p + "starts", np.array([0, 0], np.int64)), _const(p + "ends", np.array([side, side], np.int64)), _const(p + "axes", np.array([1, 2], np.int64)),
             _const(p + "tokens", np.array([1, side * side, c], np.int64)), _const(p + "wout", _weights(rng, c, c))]
    nodes = [node("MatMul", ["x", "wqkv"], "qkv0"), node("Add", ["qkv0", "bqkv"], "qkv1"),
             node("Reshape", ["qkv1", "split"], "qkv_r"), node("Transpose", ["qkv_r"], "qkv_t", perm=[3, 0, 1, 4, 2, 5]),
             helper.make_node("Split", [p + "qkv_t", p + "parts"], [p + "q0", p + "k0", p + "v0"], name=p + "split_qkv", axis=0)]
    nodes += [node("Squeeze", [f"{part}0", "axis0"], part) for part in "qkv"]
    nodes += [node("Transpose", ["k"], "kt", perm=[0, 1, 2, 4, 3]), node("Mul", ["q", "s"], "qs"), node("Mul", ["kt", "s"], "kts"), node("MatMul", ["qs", "kts"], "scores"),
              node("Softmax", ["scores"], "a", axis=-1), node("MatMul", ["a", "v"], "o"), node("Transpose", ["o"], "merge_t", perm=[0, 1, 3, 2, 4]),
              node("Reshape", ["merge_t", "grid"], "grid_r"), node("Transpose", ["grid_r"], "grid_t", perm=[0, 1, 3, 2, 4, 5]), node("Reshape", ["grid_t", "full"], "full_r"),
              node("Slice", ["full_r", "starts", "ends", "axes"], "crop"), node("Reshape", ["crop", "tokens"], "tok"), node("MatMul", ["tok", "wout"], "y")]
    return nodes, inits, [_vi(p + "x", [1, g, g, ws, ws, c])], [_vi(p + "y", [1, side * side, c])]


CASES.append(Case("local_grouped_attention_pack", "fresh2: Twins' locally-grouped attention from its windows (windowed attention, merge, reverse, crop)",
                  lambda: _packed(_local_grouped_attention_case, LOCAL_GROUPED_ATTENTION_PACK, 97, opset=17), ("rk3566", "rk3588")))


# ---- fresh3 (Magika, jax2tf): a Max or Min reading a constant -inf ------------------------------

# (name, op, constant, operand order): a MatMul's [1, 32] output, then the op with the constant.
# "-inf" is the scalar, "half" is [1, 32] with 0 in the first 16 channels and -inf in the rest.
MINUS_INFINITY_REFUSED = (("max_after", "Max", "-inf", "after"), ("max_before", "Max", "-inf", "before"),
                          ("max_half", "Max", "half", "after"), ("max_three", "Max", "-inf", "three"),
                          ("min_half", "Min", "half", "after"), ("softmax_stabiliser", "Max", "-inf", "softmax"))
MINUS_INFINITY_CONVERTS = (("max_zero", "Max", "0", "after"), ("max_float32_min", "Max", "float32_min", "softmax"),
                           ("max_minus_1e30", "Max", "-1e30", "after"), ("min_plus_inf", "Min", "+inf", "after"),
                           ("clip_minus_inf", "Clip", "-inf", "after"), ("add_after_relu", "Add", "half", "relu"),
                           ("where_minus_inf", "Where", "-inf", "after"))
_INFINITY_CONSTANTS = {"-inf": -np.inf, "+inf": np.inf, "0": 0.0, "-1e30": -1e30, "float32_min": float(np.finfo(np.float32).min),
                       "half": np.where(np.arange(32) < 16, 0.0, -np.inf).reshape(1, 32)}


def _minus_infinity_case(rng, spec) -> tuple[list, list, list, list]:
    """One entry of MINUS_INFINITY_*: x [1, 16] -> MatMul -> h [1, 32] -> the op with its constant k -> y.
    "softmax" is jax2tf's stabilised softmax: exp(h - max(k, ReduceMax(h)))."""
    name, op, constant, order = spec
    p = f"{name}_"
    inits = [_const(p + "w", _weights(rng, 16, 32)), _const(p + "k", np.asarray(_INFINITY_CONSTANTS[constant], np.float32))]
    nodes = [helper.make_node("MatMul", [p + "x", p + "w"], [p + "h"], name=p + "matmul")]
    h, k = p + "h", p + "k"
    if order == "softmax":
        nodes += [helper.make_node("ReduceMax", [h], [p + "r"], name=p + "reduce_max", axes=[1], keepdims=1),
                  helper.make_node(op, [k, p + "r"], [p + "m"], name=p + "op"),
                  helper.make_node("Sub", [h, p + "m"], [p + "s"], name=p + "sub"),
                  helper.make_node("Exp", [p + "s"], [p + "y"], name=p + "exp")]
    elif order == "relu":
        nodes += [helper.make_node("Relu", [h], [p + "r"], name=p + "relu"), helper.make_node(op, [p + "r", k], [p + "y"], name=p + "op")]
    elif order == "three":
        nodes += [helper.make_node("Relu", [h], [p + "r"], name=p + "relu"), helper.make_node(op, [h, p + "r", k], [p + "y"], name=p + "op")]
    elif op == "Clip":
        inits.append(_const(p + "hi", np.float32(6.0)))
        nodes.append(helper.make_node(op, [h, k, p + "hi"], [p + "y"], name=p + "op"))
    elif op == "Where":
        inits.append(_const(p + "zero", np.float32(0.0)))
        nodes += [helper.make_node("Greater", [h, p + "zero"], [p + "g"], name=p + "greater"),
                  helper.make_node(op, [p + "g", h, k], [p + "y"], name=p + "op")]
    else:
        nodes.append(helper.make_node(op, [k, h] if order == "before" else [h, k], [p + "y"], name=p + "op"))
    return nodes, inits, [_vi(p + "x", [1, 16])], [_vi(p + "y", [1, 32])]


# A refused entry refuses its whole model: one model each.
for _spec in MINUS_INFINITY_REFUSED:
    CASES.append(Case(f"minus_infinity_{_spec[0]}", "fresh3: a Max or Min reading a constant -inf (Magika's jax2tf softmax)",
                      lambda s=_spec: _packed(_minus_infinity_case, (s,), 113), ("rk3566", "rk3588")))
CASES.append(Case("minus_infinity_softmax_stabiliser_fp16", "fresh3: a Max or Min reading a constant -inf (Magika's jax2tf softmax)",
                  lambda: _packed(_minus_infinity_case, (MINUS_INFINITY_REFUSED[-1],), 113), ("rk3588",), precision="fp16"))
CASES.append(Case("minus_infinity_converts_pack", "fresh3: a Max or Min reading a constant -inf (Magika's jax2tf softmax)",
                  lambda: _packed(_minus_infinity_case, MINUS_INFINITY_CONVERTS, 113), ("rk3566", "rk3588")))
# Attention as transformers' DeBERTa-v2 and BLOOM write it: q, k and v each their own Linear,
# the heads split (Reshape [1, T, H, D], Transpose [0, 2, 1, 3]) and the batch and heads merged
# into one axis (Reshape [H, T, D]) for 3-D batched MatMuls; k Transposed [0, 2, 1], the scores
# scaled and viewed back to [1, H, T, T] for the mask and the Softmax, the probabilities viewed
# again to [H, T, T] for attn @ v, the result viewed to [1, H, T, D], the heads merged. Forms:
# "full" (as DeBERTa-v2), "mask" (a Where of a constant mask before the Softmax, as DeBERTa-v2
# writes it), "cast" (two Casts to float after the Softmax, as BLOOM), "no_view" (the 4-D
# probabilities into a 4-D attn @ v: no view after the Softmax), "relu" (the viewed probabilities
# read by a Relu, not a MatMul), "output" (the viewed probabilities a model output),
# "scores_in" (the scores a model input: Softmax, view, attn @ v only), "merge_ht" (the view
# merges heads and queries: [1, H*T, T], a 2-D product with v's [T, H*D]... kept 3-D: [1, H*T, T]
# @ [1, T, D] for one head's value), "scores3_in" (the 3-D scores a model input: view, Softmax,
# view, attn @ v), "view_4d" (the 3-D scores viewed to 4-D, the Softmax's result into a 4-D
# attn @ v with no view back). (name, form, T, H, D)
SOFTMAX_VIEW_PACK = (
    ("t32h2d32", "full", 32, 2, 32), ("t64h8d24", "full", 64, 8, 24), ("t32h1d64", "full", 32, 1, 64), ("t24h2d32", "full", 24, 2, 32),
    ("t8h4d8", "full", 8, 4, 8),
    ("mask", "mask", 32, 2, 32), ("cast", "cast", 32, 2, 32), ("no_view", "no_view", 32, 2, 32), ("relu", "relu", 32, 2, 32),
    ("output", "output", 32, 2, 32), ("scores_in", "scores_in", 32, 2, 32), ("scores_in49", "scores_in", 49, 3, 20),
    ("scores3_in", "scores3_in", 32, 2, 32), ("view_4d", "view_4d", 32, 2, 32),
)
# The same attention with T or D not a multiple of 8 (the heads' layouts of 3-D batched products
# on RK3566: measured, docs/audit.md; not modelled yet, so not a form the audit is held to).
BATCHED_HEADS_UNALIGNED = (
    ("t49h4d16", "full", 49, 4, 16), ("t7h2d8", "full", 7, 2, 8), ("t16h12d12", "full", 16, 12, 12), ("t32h2d12", "full", 32, 2, 12),
    ("t49h2d32", "full", 49, 2, 32), ("t12h2d16", "full", 12, 2, 16), ("t16h4d20", "full", 16, 4, 20),
)


def _softmax_view_case(rng, spec) -> tuple[list, list, list, list]:
    """One entry of SOFTMAX_VIEW_PACK: its nodes, initializers, input and output."""
    name, form, t, h, d = spec
    p = f"{name}_"
    node = _prefixed(p)
    c = h * d
    inits = [_const(p + "heads", np.array([1, t, h, d], np.int64)), _const(p + "batched", np.array([-1, t, d], np.int64)),
             _const(p + "probs3", np.array([-1, t, t], np.int64)), _const(p + "probs4", np.array([-1, h, t, t], np.int64)),
             _const(p + "out4", np.array([-1, h, t, d], np.int64)), _const(p + "merged", np.array([1, t, c], np.int64)),
             _const(p + "scale", np.array(np.sqrt(d), np.float32)), _const(p + "wo", _weights(rng, c, c))]
    nodes, inputs = [], []
    if form in ("scores_in", "scores3_in"):
        inputs = [_vi(p + "x", [1, h, t, t] if form == "scores_in" else [h, t, t]), _vi(p + "vx", [h, t, d])]
        if form == "scores3_in":
            nodes.append(node("Reshape", ["x", "probs4"], "x4"))
        nodes += [node("Softmax", ["x4" if form == "scores3_in" else "x"], "probs", axis=-1), node("Reshape", ["probs", "probs3"], "probs_v"),
                  node("MatMul", ["probs_v", "vx"], "o3"), node("Reshape", ["o3", "out4"], "o4"),
                  node("Transpose", ["o4"], "o_t", perm=[0, 2, 1, 3]), node("Reshape", ["o_t", "merged"], "o"), node("MatMul", ["o", "wo"], "y")]
        return nodes, inits, inputs, [_vi(p + "y", [1, t, c])]
    inputs = [_vi(p + "x", [1, t, c])]
    for part in "qk" if form == "relu" else "qkv":  # the Relu form has no value
        inits += [_const(p + f"w{part}", _weights(rng, c, c)), _const(p + f"b{part}", _weights(rng, c))]
        nodes += [node("MatMul", ["x", f"w{part}"], f"{part}0"), node("Add", [f"{part}0", f"b{part}"], f"{part}1"),
                  node("Reshape", [f"{part}1", "heads"], f"{part}2"), node("Transpose", [f"{part}2"], f"{part}3", perm=[0, 2, 1, 3])]
        if not (form == "no_view" and part in "kv") and not (form == "view_4d" and part == "v"):
            nodes.append(node("Reshape", [f"{part}3", "batched"], part))
    if form == "no_view":  # 4-D throughout from the heads on, as timm writes it (the control)
        nodes += [node("Transpose", ["k3"], "kt", perm=[0, 1, 3, 2]), node("Div", ["q3", "scale"], "qs"), node("MatMul", ["qs", "kt"], "scores"),
                  node("Softmax", ["scores"], "probs", axis=-1), node("MatMul", ["probs", "v3"], "o4")]
    else:
        nodes += [node("Transpose", ["k"], "kt", perm=[0, 2, 1]), node("Div", ["q", "scale"], "qs"), node("MatMul", ["qs", "kt"], "s3"),
                  node("Reshape", ["s3", "probs4"], "scores")]
        if form == "mask":
            mask = np.zeros((1, h, t, t), bool)
            mask[..., t - 3:] = True
            inits += [_const(p + "mask", mask), _const(p + "neg", np.array(-3.4028234663852886e38, np.float32))]
            nodes.append(node("Where", ["mask", "neg", "scores"], "scores_m"))
        nodes.append(node("Softmax", ["scores_m" if form == "mask" else "scores"], "probs", axis=-1))
        probs = "probs"
        if form == "view_4d":
            nodes += [node("MatMul", ["probs", "v3"], "o4"), node("Transpose", ["o4"], "o_t", perm=[0, 2, 1, 3]),
                      node("Reshape", ["o_t", "merged"], "o"), node("MatMul", ["o", "wo"], "y")]
            return nodes, inits, inputs, [_vi(p + "y", [1, t, c])]
        if form == "cast":
            nodes += [node("Cast", ["probs"], "probs_c", to=TensorProto.FLOAT), node("Cast", ["probs_c"], "probs_cc", to=TensorProto.FLOAT)]
            probs = "probs_cc"
        nodes.append(node("Reshape", [probs, "probs3"], "probs_v"))
        if form == "relu":
            nodes.append(node("Relu", ["probs_v"], "y"))
            return nodes, inits, inputs, [_vi(p + "y", [h, t, t])]
        if form == "output":
            nodes.append(node("MatMul", ["probs_v", "v"], "o3_"))
            nodes += [node("Reshape", ["o3_", "out4"], "o4")]
            outputs = [_vi(p + "probs_v", [h, t, t])]
        else:
            nodes += [node("MatMul", ["probs_v", "v"], "o3"), node("Reshape", ["o3", "out4"], "o4")]
            outputs = []
        nodes += [node("Transpose", ["o4"], "o_t", perm=[0, 2, 1, 3]), node("Reshape", ["o_t", "merged"], "o"), node("MatMul", ["o", "wo"], "y")]
        return nodes, inits, inputs, outputs + [_vi(p + "y", [1, t, c])]
    nodes += [node("Transpose", ["o4"], "o_t", perm=[0, 2, 1, 3]), node("Reshape", ["o_t", "merged"], "o"), node("MatMul", ["o", "wo"], "y")]
    return nodes, inits, inputs, [_vi(p + "y", [1, t, c])]


CASES.append(Case("softmax_view_pack", "fresh3: attention over 3-D batched products, the probabilities viewed from [1, H, T, T] to [H, T, T] after the Softmax (DeBERTa-v2, BLOOM)",
                  lambda: _packed(_softmax_view_case, SOFTMAX_VIEW_PACK, 101, used_only=True, opset=17), ("rk3566",)))


# ---- fresh3 (YOLO26 semantic segmentation): a Cast of a run-time integer tensor as a model output ----

# (name, source, Cast's target type or None, what reads the Cast): the source is ArgMax over the 19
# classes of a Conv's [1, 19, 8, 8] map (int64, keepdims 0), the Conv's float map itself, or the map > 0 (bool).
CAST_OUTPUT_FORMS = (("argmax_uint8", "argmax", TensorProto.UINT8, "output"), ("argmax_int32", "argmax", TensorProto.INT32, "output"),
                     ("argmax_int8", "argmax", TensorProto.INT8, "output"), ("argmax_float", "argmax", TensorProto.FLOAT, "output"),
                     ("argmax_alone", "argmax", None, "output"), ("argmax_uint8_then_float", "argmax", TensorProto.UINT8, "float"),
                     ("float_uint8", "float", TensorProto.UINT8, "output"), ("float_int32", "float", TensorProto.INT32, "output"),
                     ("bool_uint8_then_float", "bool", TensorProto.UINT8, "float"), ("bool_int32_then_float", "bool", TensorProto.INT32, "float"))


def _cast_output_case(rng, spec) -> tuple[list, list, list, list]:
    """One entry of CAST_OUTPUT_FORMS: x [1, 16, 8, 8] -> Conv 1x1 -> [1, 19, 8, 8] -> (ArgMax) -> (Cast) -> (Cast to float) -> y."""
    name, source, to, reader = spec
    p = f"{name}_"
    inits = [_const(p + "w", _weights(rng, 19, 16, 1, 1))]
    nodes = [helper.make_node("Conv", [p + "x", p + "w"], [p + "c"], name=p + "conv")]
    t, dtype, shape = p + "c", TensorProto.FLOAT, [1, 19, 8, 8]
    if source == "argmax":
        nodes.append(helper.make_node("ArgMax", [t], [p + "a"], name=p + "argmax", axis=1, keepdims=0))
        t, dtype, shape = p + "a", TensorProto.INT64, [1, 8, 8]
    elif source == "bool":
        inits.append(_const(p + "zero", np.float32(0.0)))
        nodes.append(helper.make_node("Greater", [t, p + "zero"], [p + "g"], name=p + "greater"))
        t, dtype = p + "g", TensorProto.BOOL
    if to is not None:
        nodes.append(helper.make_node("Cast", [t], [p + "cast"], name=p + "cast", to=to))
        t, dtype = p + "cast", to
    if reader == "float":
        nodes.append(helper.make_node("Cast", [t], [p + "back"], name=p + "cast_back", to=TensorProto.FLOAT))
        t, dtype = p + "back", TensorProto.FLOAT
    return nodes, inits, [_vi(p + "x", [1, 16, 8, 8])], [_vi(t, shape, dtype)]


for _spec in CAST_OUTPUT_FORMS:
    CASES.append(Case(f"cast_output_{_spec[0]}", "fresh3: a Cast of a run-time integer tensor as a model output (YOLO26's semantic map)",
                      lambda s=_spec: _packed(_cast_output_case, (s,), 127), ("rk3566", "rk3588")))
for _name in ("argmax_uint8", "float_uint8"):
    CASES.append(Case(f"cast_output_{_name}_fp16", "fresh3: a Cast of a run-time integer tensor as a model output (YOLO26's semantic map)",
                      lambda n=_name: _packed(_cast_output_case, tuple(s for s in CAST_OUTPUT_FORMS if s[0] == n), 127), ("rk3588",), precision="fp16"))
# Attention whose two products are Einsums, as transformers' CvT writes it: q from its own tokens
# [1, Tq, C], k and v from [1, Tk, C] (CvT's convolutional projections, a class token first),
# each its own Linear, the heads split (Reshape [1, T, H, D], Transpose [0, 2, 1, 3]), the scores
# Einsum("bhlk,bhtk->bhlt") (k's swap implicit), scaled by a Mul, Softmax, Einsum("bhlt,bhtv->bhlv"),
# the heads merged (Transpose [0, 2, 1, 3], Reshape [1, Tq, C]) and the output Linear.
# (name, Tq, Tk, H, D)
EINSUM_ATTENTION_PACK = (
    ("cvt1", 64, 16, 3, 64), ("cvt2", 17, 5, 6, 64), ("t16", 16, 16, 2, 32), ("t49", 49, 49, 2, 32), ("tk12", 32, 12, 2, 32),
    ("d12", 32, 32, 2, 12), ("d20", 16, 16, 4, 20), ("t17d16", 17, 17, 4, 16), ("t24d8", 24, 8, 8, 8),
)


def _einsum_attention_case(rng, spec) -> tuple[list, list, list, list]:
    """One entry of EINSUM_ATTENTION_PACK: its nodes, initializers, inputs and output."""
    name, tq, tk, h, d = spec
    p = f"{name}_"
    node = _prefixed(p)
    c = h * d
    inits = [_const(p + "hq", np.array([1, tq, h, d], np.int64)), _const(p + "hk", np.array([1, tk, h, d], np.int64)),
             _const(p + "merged", np.array([1, tq, c], np.int64)), _const(p + "scale", np.array(d ** -0.5, np.float32)),
             _const(p + "wo", _weights(rng, c, c))]
    nodes = []
    for part, src, shape in (("q", "xq", "hq"), ("k", "xkv", "hk"), ("v", "xkv", "hk")):
        inits += [_const(p + f"w{part}", _weights(rng, c, c)), _const(p + f"b{part}", _weights(rng, c))]
        nodes += [node("MatMul", [src, f"w{part}"], f"{part}0"), node("Add", [f"{part}0", f"b{part}"], f"{part}1"),
                  node("Reshape", [f"{part}1", shape], f"{part}2"), node("Transpose", [f"{part}2"], part, perm=[0, 2, 1, 3])]
    nodes += [node("Einsum", ["q", "k"], "scores", equation="bhlk,bhtk->bhlt"), node("Mul", ["scores", "scale"], "scaled"),
              node("Softmax", ["scaled"], "probs", axis=-1), node("Einsum", ["probs", "v"], "o4", equation="bhlt,bhtv->bhlv"),
              node("Transpose", ["o4"], "o_t", perm=[0, 2, 1, 3]), node("Reshape", ["o_t", "merged"], "o"), node("MatMul", ["o", "wo"], "y")]
    return nodes, inits, [_vi(p + "xq", [1, tq, c]), _vi(p + "xkv", [1, tk, c])], [_vi(p + "y", [1, tq, c])]


CASES.append(Case("einsum_attention_pack", "fresh3: attention whose products are Einsums (transformers' CvT)",
                  lambda: _packed(_einsum_attention_case, EINSUM_ATTENTION_PACK, 103, opset=17), ("rk3566",)))


# ---- fresh3 (Wav2Vec2-Conformer): the relative shift of Transformer-XL's position scores --------

# (name, heads, T, head size): the whole attention as transformers' Wav2Vec2ConformerSelfAttention
# writes it with relative positions (q @ pos^T [1, H, T, 2T-1], a zero column concatenated, viewed
# [1, H, 2T, T], the first row dropped, viewed back [1, H, T, 2T-1], cropped to T keys, added to
# q @ k^T, scaled, Softmax, @ v).
RELATIVE_SHIFT_PACK = (("shift_t199", 2, 199, 32), ("shift_t16", 2, 16, 32), ("shift_t32", 4, 32, 16),
                       ("shift_t50", 2, 50, 32), ("shift_t8", 2, 8, 32), ("alone_t16", 2, 16, 32, "alone"),
                       ("nocat_t16", 2, 16, 32, "nocat"), ("added_t16", 2, 16, 32, "added"), ("product_t16", 2, 16, 32, "product"),
                       ("softmax_t16", 2, 16, 32, "softmax"), ("product_softmax_t16", 2, 16, 32, "product_softmax"),
                       ("product_added_t16", 2, 16, 32, "product_added"), ("no_av_t16", 2, 16, 32, "no_av"), ("no_qk_t16", 2, 16, 32, "no_qk"),
                       ("bias_split_t16", 2, 16, 32, "bias_split"), ("bias_regroup_t16", 2, 16, 32, "bias_regroup"),
                       ("bias_crop_t16", 2, 16, 32, "bias_crop"))
# The forms after the name: "alone" starts at q @ pos^T as a model input and ends at the crop (a
# Relu after it); "nocat" also takes the padded scores [1, H, T, 2T] as the input; "added" starts
# at the tall view's [1, H, 2T, T] and adds the crop to a second input; "product" is "alone" with
# q @ pos^T computed (a MatMul of a query input and constant positions); "softmax" is "alone" with
# the crop added to a second input, scaled and Softmaxed; "product_softmax" both; "product_added"
# is "product" with the crop added to q @ k^T of the same query; "no_av" is the whole attention with
# the Softmax read by a Relu (no product by v); "no_qk" is the whole attention with the scores a
# model input (no q @ k^T); "bias_split", "bias_regroup" and "bias_crop" are the whole attention with
# its added bias made from a model input otherwise: a Reshape [1, H, T*(2T-1)] -> [1, H, T, 2T-1]
# then the crop; a Reshape [1, H, T/2, 2T] -> [1, H, T, T] alone; the crop alone.
# (name, heads, [a, b] -> [c, d]): a Reshape [1, H, a, b] -> [1, H, c, d] that regroups the last two
# axes (neither a split nor a merge of them), alone between a Relu and a 1x1 Conv (a Relu as the
# model output after a CPU Reshape also runs on the CPU).
LAST_AXES_REGROUP_PACK = (("t199", 2, 199, 398, 398, 199), ("t16", 2, 16, 32, 32, 16), ("t8", 2, 8, 16, 16, 8),
                          ("in20_out8", 2, 24, 20, 60, 8), ("in16_out12", 2, 12, 16, 16, 12), ("in40_out24", 2, 3, 40, 5, 24),
                          ("in48_out32", 2, 4, 48, 6, 32), ("in16_out8", 2, 5, 16, 10, 8), ("in8_out16", 2, 10, 8, 5, 16),
                          ("in24_out8", 2, 7, 24, 21, 8), ("in64_out32", 2, 2, 64, 4, 32), ("in397_out199", 2, 398, 199, 199, 398),
                          ("in15_out16", 2, 32, 15, 30, 16), ("in32_out48", 1, 6, 32, 4, 48), ("in16_out31", 2, 31, 16, 16, 31),
                          ("in32_out63", 2, 63, 32, 32, 63), ("in8_out15", 2, 15, 8, 8, 15), ("in16_out31_h4", 4, 31, 16, 16, 31),
                          ("rows_in16_out31", 2, 31, 16, 16, 31, "rows"), ("rows_in16_out32", 2, 32, 16, 16, 32, "rows"),
                          ("rows_in32_out16", 2, 16, 32, 32, 16, "rows"), ("cols_in16_out32", 2, 32, 16, 16, 32, "cols"),
                          ("rows_merge", 2, 16, 32, 1, 512, "rows"), ("rows_split", 2, 16, 32, 16, 32, "rows"),
                          ("crop_in16_out31", 2, 31, 16, 16, 31, "", "crop"), ("rows_crop_in16_out31", 2, 31, 16, 16, 31, "rows", "crop"),
                          ("crop_in32_out63", 2, 63, 32, 32, 63, "", "crop"), ("crop_in16_out32", 2, 32, 16, 16, 32, "", "crop"),
                          ("crop_split", 2, 16, 32, 16, 32, "", "crop"), ("crop_in16_out8", 2, 5, 16, 10, 8, "", "crop"))


def _relative_shift_case(rng, spec) -> tuple[list, list, list, list]:
    """One entry of RELATIVE_SHIFT_PACK."""
    name, h, t, d, *form = spec
    if form and not form[0].startswith(("no_", "bias_")):
        return _relative_shift_part(spec)
    p = f"{name}_"
    inits = [_const(p + "pos", _weights(rng, 1, h, d, 2 * t - 1)), _const(p + "zero", np.zeros((1, h, t, 1), np.float32)),
             _const(p + "tall", np.array([1, h, 2 * t, t], np.int64)), _const(p + "wide", np.array([1, h, t, 2 * t - 1], np.int64)),
             _const(p + "one", np.array([1], np.int64)), _const(p + "end", np.array([2 ** 63 - 1], np.int64)),
             _const(p + "two", np.array([2], np.int64)), _const(p + "zero_i", np.array([0], np.int64)),
             _const(p + "t", np.array([t], np.int64)), _const(p + "three", np.array([3], np.int64)), _const(p + "scale", np.float32(np.sqrt(d)))]
    nodes = [helper.make_node("Transpose", [p + "k"], [p + "kt"], name=p + "k_swap", perm=[0, 1, 3, 2]),
             helper.make_node("MatMul", [p + "q", p + "kt"], [p + "ac"], name=p + "qk"),
             helper.make_node("MatMul", [p + "q", p + "pos"], [p + "bd"], name=p + "q_pos"),
             helper.make_node("Concat", [p + "zero", p + "bd"], [p + "padded"], name=p + "pad_column", axis=-1),
             helper.make_node("Reshape", [p + "padded", p + "tall"], [p + "talled"], name=p + "view_tall"),
             helper.make_node("Slice", [p + "talled", p + "one", p + "end", p + "two", p + "one"], [p + "dropped"], name=p + "drop_row"),
             helper.make_node("Reshape", [p + "dropped", p + "wide"], [p + "back"], name=p + "view_back"),
             helper.make_node("Slice", [p + "back", p + "zero_i", p + "t", p + "three", p + "one"], [p + "crop"], name=p + "crop"),
             helper.make_node("Add", [p + "ac", p + "crop"], [p + "sum"], name=p + "add"),
             helper.make_node("Div", [p + "sum", p + "scale"], [p + "scaled"], name=p + "scale"),
             helper.make_node("Softmax", [p + "scaled"], [p + "sm"], name=p + "softmax", axis=-1),
             helper.make_node("MatMul", [p + "sm", p + "k"], [p + "y"], name=p + "av")]
    inputs, y_shape = [_vi(p + "q", [1, h, t, d]), _vi(p + "k", [1, h, t, d])], [1, h, t, d]
    if form == ["no_av"]:
        nodes[-1] = helper.make_node("Relu", [p + "sm"], [p + "y"], name=p + "relu")
        y_shape = [1, h, t, t]
    elif form == ["no_qk"]:
        nodes = nodes[2:]
        inputs.append(_vi(p + "ac", [1, h, t, t]))
    elif form and form[0].startswith("bias_"):
        keep = [n for n in nodes if n.name in (p + "k_swap", p + "qk", p + "scale", p + "softmax", p + "av")]
        if form[0] == "bias_split":
            inputs.append(_vi(p + "b", [1, h, t * (2 * t - 1)]))
            made = [helper.make_node("Reshape", [p + "b", p + "wide"], [p + "back"], name=p + "bias_view"),
                    helper.make_node("Slice", [p + "back", p + "zero_i", p + "t", p + "three", p + "one"], [p + "crop"], name=p + "crop")]
        elif form[0] == "bias_regroup":
            inputs.append(_vi(p + "b", [1, h, t // 2, 2 * t]))
            inits.append(_const(p + "square", np.array([1, h, t, t], np.int64)))
            made = [helper.make_node("Reshape", [p + "b", p + "square"], [p + "crop"], name=p + "bias_view")]
        else:
            inputs.append(_vi(p + "b", [1, h, t, 2 * t - 1]))
            made = [helper.make_node("Slice", [p + "b", p + "zero_i", p + "t", p + "three", p + "one"], [p + "crop"], name=p + "crop")]
        nodes = keep[:2] + made + [helper.make_node("Add", [p + "ac", p + "crop"], [p + "sum"], name=p + "add")] + keep[2:]
    return nodes, inits, inputs, [_vi(p + "y", y_shape)]


def _relative_shift_part(spec) -> tuple[list, list, list, list]:
    """An entry of RELATIVE_SHIFT_PACK with a form: part of the shift, see the pack."""
    name, h, t, d, form = spec
    p = f"{name}_"
    inits = [_const(p + "zero", np.zeros((1, h, t, 1), np.float32)), _const(p + "tall", np.array([1, h, 2 * t, t], np.int64)),
             _const(p + "wide", np.array([1, h, t, 2 * t - 1], np.int64)), _const(p + "one", np.array([1], np.int64)),
             _const(p + "end", np.array([2 ** 63 - 1], np.int64)), _const(p + "two", np.array([2], np.int64)),
             _const(p + "zero_i", np.array([0], np.int64)), _const(p + "t", np.array([t], np.int64)), _const(p + "three", np.array([3], np.int64))]
    nodes, inputs = [], []
    if form.startswith("product"):
        inputs.append(_vi(p + "q", [1, h, t, d]))
        inits.append(_const(p + "pos", _weights(np.random.default_rng(t), 1, h, d, 2 * t - 1)))
        nodes.append(helper.make_node("MatMul", [p + "q", p + "pos"], [p + "bd"], name=p + "q_pos"))
    elif form in ("alone", "softmax"):
        inputs.append(_vi(p + "bd", [1, h, t, 2 * t - 1]))
    if form not in ("nocat", "added"):
        nodes.append(helper.make_node("Concat", [p + "zero", p + "bd"], [p + "padded"], name=p + "pad_column", axis=-1))
    elif form == "nocat":
        inputs.append(_vi(p + "padded", [1, h, t, 2 * t]))
    if form != "added":
        nodes.append(helper.make_node("Reshape", [p + "padded", p + "tall"], [p + "talled"], name=p + "view_tall"))
    else:
        inputs.append(_vi(p + "talled", [1, h, 2 * t, t]))
    nodes += [helper.make_node("Slice", [p + "talled", p + "one", p + "end", p + "two", p + "one"], [p + "dropped"], name=p + "drop_row"),
              helper.make_node("Reshape", [p + "dropped", p + "wide"], [p + "back"], name=p + "view_back"),
              helper.make_node("Slice", [p + "back", p + "zero_i", p + "t", p + "three", p + "one"], [p + "crop"], name=p + "crop")]
    if form == "product_added":
        inputs.append(_vi(p + "k", [1, h, t, d]))
        nodes += [helper.make_node("Transpose", [p + "k"], [p + "kt"], name=p + "k_swap", perm=[0, 1, 3, 2]),
                  helper.make_node("MatMul", [p + "q", p + "kt"], [p + "ac"], name=p + "qk"),
                  helper.make_node("Add", [p + "ac", p + "crop"], [p + "sum"], name=p + "add"),
                  helper.make_node("Relu", [p + "sum"], [p + "y"], name=p + "relu")]
    elif form == "added":
        inputs.append(_vi(p + "ac", [1, h, t, t]))
        nodes.append(helper.make_node("Add", [p + "ac", p + "crop"], [p + "sum"], name=p + "add"))
        nodes.append(helper.make_node("Relu", [p + "sum"], [p + "y"], name=p + "relu"))
    elif form.endswith("softmax"):
        inputs.append(_vi(p + "ac", [1, h, t, t]))
        inits.append(_const(p + "scale", np.float32(np.sqrt(d))))
        nodes += [helper.make_node("Add", [p + "ac", p + "crop"], [p + "sum"], name=p + "add"),
                  helper.make_node("Div", [p + "sum", p + "scale"], [p + "scaled"], name=p + "scale"),
                  helper.make_node("Softmax", [p + "scaled"], [p + "y"], name=p + "softmax", axis=-1)]
    else:
        nodes.append(helper.make_node("Relu", [p + "crop"], [p + "y"], name=p + "relu"))
    return nodes, inits, inputs, [_vi(p + "y", [1, h, t, t])]


# ---- fresh8: XLNet's relative shift, its crop a Gather of the first T columns -------------------
# transformers' XLNet (rel_shift_bnij): the position scores bd [1, H, T, 2T] viewed tall [1, H, 2T, T],
# the first row dropped (Slice), viewed back [1, H, T, 2T - 1] and cropped to T columns by
# index_select (a Gather of arange(T) on the last axis), added to q @ k^T, scaled, Softmax, @ v.
# Forms: "gather" (that, with MatMuls), "slice" (the crop a Slice: relative_shift_pack's form),
# "gather_relu" (the Softmax read by a Relu, no product), "einsum" (XLNet's own spelling: token-major
# q, k, v [T, 1, H, D] and Einsums 'ibnd,jbnd->bnij' for both scores and 'bnij,jbnd->ibnd' after),
# "einsum_relu" (that with the Softmax read by a Relu).


def _xlnet_shift_case(rng, spec) -> tuple[list, list, list, list]:
    """One XLNET_SHIFT_PACK entry: (name, heads H, tokens T, head width D, form)."""
    name, h, t, d, form = spec
    p = f"{name}_"
    node = lambda op, ins, out, **kw: helper.make_node(op, ins, [p + out], name=p + out, **kw)  # noqa: E731
    einsum = form.startswith("einsum")
    inits = [_const(p + "pos", _weights(rng, 2 * t, 1, h, d) if einsum else _weights(rng, 1, h, d, 2 * t)),
             _const(p + "tall", np.array([1, h, 2 * t, t], np.int64)), _const(p + "wide", np.array([1, h, t, 2 * t - 1], np.int64)),
             _const(p + "one", np.array([1], np.int64)), _const(p + "end", np.array([2 ** 63 - 1], np.int64)), _const(p + "two", np.array([2], np.int64)),
             _const(p + "zero", np.array([0], np.int64)), _const(p + "t", np.array([t], np.int64)), _const(p + "three", np.array([3], np.int64)),
             _const(p + "cols", np.arange(t, dtype=np.int64)), _const(p + "scale", np.float32(1 / np.sqrt(d)))]
    if einsum:
        nodes = [node("Einsum", [p + "q", p + "k"], "ac", equation="ibnd,jbnd->bnij"), node("Einsum", [p + "q", p + "pos"], "bd", equation="ibnd,jbnd->bnij")]
    else:
        nodes = [node("Transpose", [p + "k"], "kt", perm=[0, 1, 3, 2]), node("MatMul", [p + "q", p + "kt"], "ac"), node("MatMul", [p + "q", p + "pos"], "bd")]
    nodes += [node("Reshape", [p + "bd", p + "tall"], "view_tall"), node("Slice", [p + "view_tall", p + "one", p + "end", p + "two", p + "one"], "drop_row"),
              node("Reshape", [p + "drop_row", p + "wide"], "view_back")]
    if form == "slice":
        nodes.append(node("Slice", [p + "view_back", p + "zero", p + "t", p + "three", p + "one"], "crop"))
    else:
        nodes.append(node("Gather", [p + "view_back", p + "cols"], "crop", axis=3))
    nodes += [node("Add", [p + "ac", p + "crop"], "sum"), node("Mul", [p + "sum", p + "scale"], "scaled"), node("Softmax", [p + "scaled"], "softmax", axis=3)]
    if form.endswith("relu"):
        nodes.append(node("Relu", [p + "softmax"], "y"))
        y_shape = [1, h, t, t]
    elif einsum:
        nodes.append(node("Einsum", [p + "softmax", p + "k"], "y", equation="bnij,jbnd->ibnd"))
        y_shape = [t, 1, h, d]
    else:
        nodes.append(node("MatMul", [p + "softmax", p + "k"], "y"))
        y_shape = [1, h, t, d]
    shape = [t, 1, h, d] if einsum else [1, h, t, d]
    return nodes, inits, [_vi(p + "q", shape), _vi(p + "k", shape)], [_vi(p + "y", y_shape)]


XLNET_SHIFT_PACK = (
    ("xl_t32_gather", 2, 32, 32, "gather"), ("xl_t32_slice", 2, 32, 32, "slice"), ("xl_t32_gather_relu", 2, 32, 32, "gather_relu"),
    ("xl_t32_einsum", 2, 32, 32, "einsum"), ("xl_t16_gather", 2, 16, 32, "gather"), ("xl_t16_einsum", 2, 16, 32, "einsum"),
    ("xl_t8_gather", 4, 8, 16, "gather"),
)
# The Einsum forms alone, for RK3566 too: there the key's Transpose of the MatMul forms (k a model
# input, also read by attn @ k) runs on the CPU as well, which is the RK3566 attention work's.
XLNET_SHIFT_EINSUM_PACK = (("xle_t32_einsum", 2, 32, 32, "einsum"), ("xle_t16_einsum", 2, 16, 32, "einsum"),
                           ("xle_t32_einsum_relu", 2, 32, 32, "einsum_relu"))
CASES.append(Case("xlnet_shift_pack", "fresh8: XLNet's relative shift, cropped by a Gather (index_select) into attention's scores",
                  lambda: _packed(_xlnet_shift_case, XLNET_SHIFT_PACK, 139, used_only=True, opset=13), ("rk3588",)))
CASES.append(Case("xlnet_shift_einsum_pack", "fresh8: XLNet's relative shift as XLNet writes it (Einsums), cropped by a Gather",
                  lambda: _packed(_xlnet_shift_case, XLNET_SHIFT_EINSUM_PACK, 149, used_only=True, opset=13), ("rk3588", "rk3566")))


def _last_axes_regroup_case(rng, spec) -> tuple[list, list, list, list]:
    """One entry of LAST_AXES_REGROUP_PACK."""
    name, h, a, b, c, d, *around = spec
    before, after = (around + ["", ""])[:2]
    p = f"regroup_{name}_"
    inits = [_const(p + "shape", np.array([1, h, c, d], np.int64))]
    nodes = [helper.make_node("Relu", [p + "x"], [p + "r"], name=p + "relu_in")]
    x_shape, r = [1, h, a, b], p + "r"
    if before:  # the first row (or column) dropped by a Slice, as the relative shift does
        axis = 2 if before == "rows" else 3
        x_shape[axis] += 1
        inits += [_const(p + "one", np.array([1], np.int64)), _const(p + "end", np.array([2 ** 63 - 1], np.int64)), _const(p + "axis", np.array([axis], np.int64))]
        nodes.append(helper.make_node("Slice", [r, p + "one", p + "end", p + "axis", p + "one"], [p + "sliced"], name=p + "slice"))
        r = p + "sliced"
    nodes.append(helper.make_node("Reshape", [r, p + "shape"], [p + "v"], name=p + "regroup"))
    v, y_shape = p + "v", [1, h, c, d]
    if after == "crop":  # the last axis cropped to its first half by a Slice, as the relative shift does
        y_shape[3] = (d + 1) // 2
        inits += [_const(p + "zero", np.array([0], np.int64)), _const(p + "half", np.array([y_shape[3]], np.int64)),
                  _const(p + "last", np.array([3], np.int64)), _const(p + "step", np.array([1], np.int64))]
        nodes.append(helper.make_node("Slice", [v, p + "zero", p + "half", p + "last", p + "step"], [p + "cropped"], name=p + "crop"))
        v = p + "cropped"
    inits.append(_const(p + "w", _weights(rng, h, h, 1, 1)))
    nodes.append(helper.make_node("Conv", [v, p + "w"], [p + "y"], name=p + "conv_out"))
    return nodes, inits, [_vi(p + "x", x_shape)], [_vi(p + "y", y_shape)]


# RK3588 only: on RK3566 the key's Transpose and the Softmax of the shift pack also run on the CPU
# (measured, docs/audit.md), which is the RK3566 attention work's.
CASES.append(Case("relative_shift_pack", "fresh3: Transformer-XL's relative shift of the position scores (Wav2Vec2-Conformer)",
                  lambda: _packed(_relative_shift_case, RELATIVE_SHIFT_PACK, 131), ("rk3588",)))
CASES.append(Case("last_axes_regroup_pack", "fresh3: a Reshape that regroups the last two axes (Wav2Vec2-Conformer's relative shift)",
                  lambda: _packed(_last_axes_regroup_case, LAST_AXES_REGROUP_PACK, 137), ("rk3588", "rk3566")))


# ---- fresh3 (WavLM): the gated relative position bias's split into gates -------------------------

# (name, heads, T, form): WavLM's gru_rel_pos (transformers' WavLMAttention): the query's heads
# [1, H, T, 32] through a Linear to 8, viewed [1, H, T, 2, 4], summed over the last axis, a Sigmoid,
# the two gates combined (a * (b * c - 1) + 2) and multiplied into a position bias [1, H, T, T].
# Forms: "wavlm"; "keepdims" (the sum keeps its axis, then viewed [1, H, T, 2]); "mean" (ReduceMean);
# "input" (the Linear's output a model input); "relu" (the 5-D view read by a Relu, viewed back).
GATED_POSITIONS_PACK = (("wavlm_t199", 2, 199, "wavlm"), ("wavlm_t16", 2, 16, "wavlm"), ("wavlm_t32", 2, 32, "wavlm"),
                        ("wavlm_t199_h12", 12, 199, "wavlm"), ("wavlm_t16_h12", 12, 16, "wavlm"), ("keepdims_t199", 2, 199, "keepdims"),
                        ("mean_t199", 2, 199, "mean"), ("input_t199", 2, 199, "input"), ("relu_t199", 2, 199, "relu"), ("relu_t16", 2, 16, "relu"),
                        ("wavlm_t8", 2, 8, "wavlm"), ("wavlm_t24", 2, 24, "wavlm"), ("wavlm_t20", 2, 20, "wavlm"), ("wavlm_t48", 2, 48, "wavlm"),
                        ("wavlm_t50", 2, 50, "wavlm"), ("wavlm_t4", 2, 4, "wavlm"), ("wavlm_t12", 2, 12, "wavlm"), ("wavlm_t40_h3", 3, 40, "wavlm"))


def _gated_positions_case(rng, spec) -> tuple[list, list, list, list]:
    """One entry of GATED_POSITIONS_PACK."""
    name, h, t, form = spec
    p = f"gated_{name}_"
    inits = [_const(p + "five", np.array([1, h, t, 2, 4], np.int64)), _const(p + "last", np.array([-1], np.int64))]
    if form == "input":
        nodes, inputs, x = [], [_vi(p + "x", [1, h, t, 8])], p + "x"
    else:
        inits += [_const(p + "w", _weights(rng, 32, 8)), _const(p + "b", _weights(rng, 8))]
        nodes = [helper.make_node("MatMul", [p + "q", p + "w"], [p + "lin"], name=p + "linear"),
                 helper.make_node("Add", [p + "b", p + "lin"], [p + "x"], name=p + "linear_bias")]
        inputs, x = [_vi(p + "q", [1, h, t, 32])], p + "x"
    nodes.append(helper.make_node("Reshape", [x, p + "five"], [p + "v5"], name=p + "view_gates"))
    if form == "relu":
        inits.append(_const(p + "four", np.array([1, h, t, 8], np.int64)))
        nodes += [helper.make_node("Relu", [p + "v5"], [p + "r5"], name=p + "relu"),
                  helper.make_node("Reshape", [p + "r5", p + "four"], [p + "back"], name=p + "view_back"),
                  helper.make_node("Sigmoid", [p + "back"], [p + "y"], name=p + "sigmoid")]
        return nodes, inits, inputs, [_vi(p + "y", [1, h, t, 8])]
    if form == "keepdims":
        inits.append(_const(p + "four", np.array([1, h, t, 2], np.int64)))
        nodes += [helper.make_node("ReduceSum", [p + "v5", p + "last"], [p + "s5"], name=p + "sum", keepdims=1),
                  helper.make_node("Reshape", [p + "s5", p + "four"], [p + "s"], name=p + "view_sum")]
    elif form == "mean":
        nodes.append(helper.make_node("ReduceMean", [p + "v5"], [p + "s"], name=p + "sum", axes=[-1], keepdims=0))
    else:
        nodes.append(helper.make_node("ReduceSum", [p + "v5", p + "last"], [p + "s"], name=p + "sum", keepdims=0))
    inits += [_const(p + "zero", np.array([0], np.int64)), _const(p + "one", np.array([1], np.int64)), _const(p + "two", np.array([2], np.int64)),
              _const(p + "axis", np.array([3], np.int64)), _const(p + "c", np.float32(1.7)), _const(p + "f1", np.float32(1.0)), _const(p + "f2", np.float32(2.0))]
    nodes += [helper.make_node("Sigmoid", [p + "s"], [p + "g"], name=p + "sigmoid"),
              helper.make_node("Slice", [p + "g", p + "zero", p + "one", p + "axis"], [p + "ga"], name=p + "gate_a"),
              helper.make_node("Slice", [p + "g", p + "one", p + "two", p + "axis"], [p + "gb"], name=p + "gate_b"),
              helper.make_node("Mul", [p + "gb", p + "c"], [p + "gbc"], name=p + "gate_b_scale"),
              helper.make_node("Sub", [p + "gbc", p + "f1"], [p + "gbm"], name=p + "gate_b_minus"),
              helper.make_node("Mul", [p + "ga", p + "gbm"], [p + "gab"], name=p + "gates"),
              helper.make_node("Add", [p + "gab", p + "f2"], [p + "gate"], name=p + "gate_plus"),
              helper.make_node("Mul", [p + "gate", p + "bias"], [p + "y"], name=p + "gated_bias")]
    return nodes, inits, inputs + [_vi(p + "bias", [1, h, t, t])], [_vi(p + "y", [1, h, t, t])]


CASES.append(Case("gated_positions_pack", "fresh3: WavLM's gated relative position bias (its gates' 5-D view)",
                  lambda: _packed(_gated_positions_case, GATED_POSITIONS_PACK, 139), ("rk3588",)))
# The same on RK3566 without the "keepdims" entry (there the view of the sum and the Sigmoid after it
# also ran on the CPU: measured, not modelled; docs/audit.md).
CASES.append(Case("gated_positions_pack_rk3566", "fresh3: WavLM's gated relative position bias (its gates' 5-D view)",
                  lambda: _packed(_gated_positions_case, tuple(e for e in GATED_POSITIONS_PACK if e[3] != "keepdims"), 139), ("rk3566",)))


# ---- fresh3 (ddddocr's detector, YOLOv5's Focus): the space-to-depth by Slices on a model input --

# (name, channels, side, source, outer Slices): "input" slices the model input itself, "add" a
# computed map (the input plus a constant); "own" gives each quarter its own row Slice (8 Slices,
# as ddddocr's export), "shared" has the two row halves shared (6 Slices, as patch_merge_pack).
FOCUS_PACK = (("c3_s416_input_own", 3, 416, "input", "own"), ("c3_s416_add_own", 3, 416, "add", "own"),
              ("c3_s64_input_own", 3, 64, "input", "own"), ("c3_s64_input_shared", 3, 64, "input", "shared"),
              ("c16_s64_input_own", 16, 64, "input", "own"), ("c16_s64_add_own", 16, 64, "add", "own"),
              ("c8_s16_add_shared", 8, 16, "add", "shared"), ("c3_s16_add_shared", 3, 16, "add", "shared"),
              ("c8_s16_input_shared", 8, 16, "input", "shared"), ("c4_s64_input_own", 4, 64, "input", "own"),
              ("c8_s64_input_own", 8, 64, "input", "own"), ("c6_s64_input_own", 6, 64, "input", "own"),
              ("c12_s64_input_own", 12, 64, "input", "own"), ("c32_s16_add_own", 32, 16, "add", "own"),
              ("c1_s64_input_own", 1, 64, "input", "own"), ("c3_s16_add_own", 3, 16, "add", "own"),
              ("c24_s16_add_own", 24, 16, "add", "own"), ("c3_s416_input_shared", 3, 416, "input", "shared"))


def _focus_case(rng, spec) -> tuple[list, list, list, list]:
    """One FOCUS_PACK entry: x[..., ::2, ::2], x[..., 1::2, ::2], x[..., ::2, 1::2], x[..., 1::2, 1::2]
    Concatenated on the channels, then a 1x1 Conv (YOLOv5's Focus, opset 11 Slices)."""
    name, c, s, source, outer = spec
    p = f"focus_{name}_"
    inits = [_const(p + "zero", np.array([0], np.int64)), _const(p + "one", np.array([1], np.int64)), _const(p + "two", np.array([2], np.int64)),
             _const(p + "end", np.array([(1 << 63) - 1], np.int64)), _const(p + "rows", np.array([2], np.int64)),
             _const(p + "cols", np.array([3], np.int64)), _const(p + "w", _weights(rng, 2 * c, 4 * c, 1, 1))]
    nodes, x = [], p + "x"
    if source == "add":
        inits.append(_const(p + "shift", _weights(rng, c, s, s)))
        nodes.append(helper.make_node("Add", [x, p + "shift"], [p + "xs"], name=p + "add"))
        x = p + "xs"
    parts = []
    for i, (hs, ws) in enumerate(SPACE_TO_DEPTH_QUARTERS):
        half = p + (f"h{hs}" if outer == "shared" else f"h{hs}_{i}")
        if outer == "own" or not any(n.output[0] == half for n in nodes):
            nodes.append(helper.make_node("Slice", [x, p + ("one" if hs else "zero"), p + "end", p + "rows", p + "two"], [half], name=half))
        nodes.append(helper.make_node("Slice", [half, p + ("one" if ws else "zero"), p + "end", p + "cols", p + "two"], [p + f"q{hs}{ws}"], name=p + f"q{hs}{ws}"))
        parts.append(p + f"q{hs}{ws}")
    nodes += [helper.make_node("Concat", parts, [p + "cat"], name=p + "cat", axis=1), helper.make_node("Conv", [p + "cat", p + "w"], [p + "y"], name=p + "conv")]
    return nodes, inits, [_vi(p + "x", [1, c, s, s])], [_vi(p + "y", [1, 2 * c, s // 2, s // 2])]


SPACE_TO_DEPTH_QUARTERS = ((0, 0), (1, 0), (0, 1), (1, 1))
CASES.append(Case("focus_pack", "fresh3: YOLOv5's Focus (a space-to-depth by step-2 Slices) on a model input (ddddocr's detector)",
                  lambda: _packed(_focus_case, FOCUS_PACK, 149, opset=11), ("rk3588", "rk3566")))


# ---- fresh3 (ddddocr's detector, a YOLOv5 head): flattened levels swapped to [1, cells, C] -------

# (name, channels, sides, base): per level a Conv of C outputs (stride base/side on one
# [1, 8, base, base] input), a Reshape [1, C, H, W] -> [1, C, H*W], one Concat of the levels along
# the last axis and a Transpose [0, 2, 1] to [1, cells, C], the model output.
LEVELS_SWAP_PACK = (("c6_52", 6, (52, 26, 13), 52), ("c6_20", 6, (20, 10, 5), 20), ("c4_20", 4, (20, 10, 5), 20),
                    ("c8_20", 8, (20, 10, 5), 20), ("c16_20", 16, (20, 10, 5), 20), ("c12_20", 12, (20, 10, 5), 20),
                    ("c32_20", 32, (20, 10, 5), 20), ("c85_20", 85, (20, 10, 5), 20), ("c6_16", 6, (16, 8, 4), 16))


def _levels_swap_case(rng, spec) -> tuple[list, list, list, list]:
    """One LEVELS_SWAP_PACK entry."""
    name, c, sides, base = spec
    p = f"swap_{name}_"
    inits, nodes, pieces = [], [], []
    for i, side in enumerate(sides):
        stride = base // side
        inits += [_const(p + f"w{i}", _weights(rng, c, 8, stride, stride)), _const(p + f"s{i}", np.array([1, c, -1], np.int64))]
        nodes += [helper.make_node("Conv", [p + "x", p + f"w{i}"], [p + f"m{i}"], name=p + f"level{i}_conv", kernel_shape=[stride, stride], strides=[stride, stride]),
                  helper.make_node("Reshape", [p + f"m{i}", p + f"s{i}"], [p + f"f{i}"], name=p + f"level{i}_flatten")]
        pieces.append(p + f"f{i}")
    cells = sum(s * s for s in sides)
    nodes += [helper.make_node("Concat", pieces, [p + "cat"], name=p + "levels_concat", axis=2),
              helper.make_node("Transpose", [p + "cat"], [p + "y"], name=p + "swap", perm=[0, 2, 1])]
    return nodes, inits, [_vi(p + "x", [1, 8, base, base])], [_vi(p + "y", [1, cells, c])]


CASES.append(Case("levels_swap_pack", "fresh3: a YOLOv5 head's flattened levels swapped to [1, cells, C] as the model output (ddddocr's detector)",
                  lambda: _packed(_levels_swap_case, LEVELS_SWAP_PACK, 151, opset=11), ("rk3588", "rk3566")))


# A one-channel map squeezed to a 3-D model output (transformers' GLPN depth head: Conv, Sigmoid,
# Mul by the max depth, Squeeze(1)), by what computes the map, its size, the op that drops the
# channel axis (or the shape a Reshape gives it; "c4": a map of 4 channels) and whether the result
# is the model's output (False: a Relu reads it; "MatMul": a Linear; else the activations named, the
# last the output; "product": the second operand of a product with a model input); "pooled": a
# GlobalAveragePool's [1, C, 1, 1] (then a 1x1 Conv for "pooled_conv"); "c4", "c16": 4 or 16 channels.
# (name, source, side, drop, output)
SQUEEZED_MAP_PACK = (
    ("glpn", "sigmoid_mul", 64, "Squeeze", True), ("s16", "sigmoid_mul", 16, "Squeeze", True), ("s7", "sigmoid_mul", 7, "Squeeze", True),
    ("conv", "conv", 32, "Squeeze", True), ("relu", "relu", 32, "Squeeze", True), ("sigmoid", "sigmoid", 32, "Squeeze", True),
    ("reshape", "sigmoid_mul", 32, "Reshape", True), ("inner", "sigmoid_mul", 32, "Squeeze", False),
    ("flat", "sigmoid_mul", 32, "Flatten", True),
    ("c4_tokens", "c4", 16, [1, 4, 256], True), ("c4_nobatch", "c4", 16, [4, 16, 16], True), ("c1_tokens", "conv", 16, [1, 1, 256], True),
    ("c1_nhwc", "conv", 16, [1, 16, 16, 1], True), ("c1_rows", "conv", 16, [1, 16, 16], False),
    ("pooled", "pooled", 16, "Flatten", True), ("pooled_conv", "pooled_conv", 16, "Flatten", True), ("pooled_rs", "pooled", 16, [1, 4], True),
    ("then_sigmoid", "conv", 16, "Squeeze", "Sigmoid"), ("then_two", "conv", 16, "Squeeze", "Relu,Sigmoid"),
    ("into_linear", "c4", 16, [1, 4, 256], "MatMul"), ("pooled16", "pooled16", 16, "Flatten", True),
    ("into_linear16", "c16", 8, [1, 16, 64], "MatMul"), ("into_product", "c16", 8, [1, 2, 8, 64], "product"),
    ("into_linear_c4s8", "c4", 8, [1, 4, 64], "MatMul"), ("into_linear_c16s16", "c16", 16, [1, 16, 256], "MatMul"),
    ("c16_out", "c16", 8, [1, 16, 64], True), ("c16_nobatch", "c16", 8, [16, 8, 8], True), ("c16_relu", "c16", 8, [1, 16, 64], False),
    ("c16_s16_out", "c16", 16, [1, 16, 256], True), ("c8_out", "c8", 8, [1, 8, 64], True),
)


def _squeezed_map_case(rng, spec) -> tuple[list, list, list, list]:
    """One entry of SQUEEZED_MAP_PACK: its nodes, initializers, input and output."""
    name, source, side, drop, output = spec
    p = f"{name}_"
    node = _prefixed(p)
    in_side = side
    channels = 16 if source.endswith("16") else 8 if source == "c8" else 4 if source.startswith(("c4", "pooled")) else 1
    target = drop if isinstance(drop, list) else [1, side, side]
    inits = [_const(p + "w", _weights(rng, channels, 8, 3, 3)), _const(p + "b", np.zeros(channels, np.float32)), _const(p + "ten", np.array(10.0, np.float32)),
             _const(p + "axis", np.array([1], np.int64)), _const(p + "shape", np.array(target, np.int64))]
    nodes = [node("Conv", ["x", "w", "b"], "conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1])]
    last = "conv"
    if source in ("sigmoid", "sigmoid_mul"):
        nodes.append(node("Sigmoid", [last], "sig"))
        last = "sig"
    if source == "sigmoid_mul":
        nodes.append(node("Mul", [last, "ten"], "depth"))
        last = "depth"
    if source == "relu":
        nodes.append(node("Relu", [last], "act"))
        last = "act"
    if source.startswith("pooled"):  # a classifier's pooled map [1, C, 1, 1]: nothing spatial left
        nodes.append(node("GlobalAveragePool", [last], "gap"))
        last = "gap"
        side = 1
        if source == "pooled_conv":
            inits += [_const(p + "w1", _weights(rng, 4, 4, 1, 1)), _const(p + "b1", _weights(rng, 4))]
            nodes.append(node("Conv", [last, "w1", "b1"], "fc", kernel_shape=[1, 1]))
            last = "fc"
    if drop == "Squeeze":
        nodes.append(node("Squeeze", [last, "axis"], "y" if output is True else "sq"))
    elif drop == "Reshape" or isinstance(drop, list):
        nodes.append(node("Reshape", [last, "shape"], "y" if output is True else "sq"))
    else:
        nodes.append(node("Flatten", [last], "y", axis=2 if side > 1 else 1))
    shape = list(target)
    if output is False:
        nodes.append(node("Relu", ["sq"], "y"))
    elif output == "product":  # the second operand of q @ k with q a model input (EfficientFormerV2's key)
        nodes.append(node("MatMul", ["q", "sq"], "y"))
        shape = [1, 2, 8, 64]
        return nodes, inits, [_vi(p + "x", [1, 8, in_side, in_side]), _vi(p + "q", [1, 2, 8, 8])], [_vi(p + "y", shape)]
    elif output == "MatMul":
        inits.append(_const(p + "wl", _weights(rng, target[-1], 8)))
        nodes.append(node("MatMul", ["sq", "wl"], "y"))
        shape = target[:-1] + [8]
    elif isinstance(output, str):  # activations after the view, the last one the model output
        ops = output.split(",")
        for i, op in enumerate(ops):
            nodes.append(node(op, ["sq" if i == 0 else f"a{i - 1}"], "y" if i == len(ops) - 1 else f"a{i}"))
    if drop == "Flatten":
        shape = [1, side * side] if side > 1 else [1, channels]
    return nodes, inits, [_vi(p + "x", [1, 8, in_side, in_side])], [_vi(p + "y", shape)]


CASES.append(Case("squeezed_map_pack", "fresh3: a one-channel map squeezed to a 3-D model output (transformers' GLPN depth head)",
                  lambda: _packed(_squeezed_map_case, SQUEEZED_MAP_PACK, 107, opset=13), ("rk3566",)))
# ---- fresh3 (issue 27): the i.MX 93 and ESP32-S3 misses' mechanisms ---------------------------


def _batched_norm_case(rng, spec):
    """(name, shape, kind): a Conv 1x1 on the input, then `kind`: "in" an InstanceNormalization
    (scale and bias per channel, initializers), "gn4" GroupNorm(4) as torch.onnx writes it below
    opset 18 (Reshape [N, 4, -1], InstanceNormalization of ones and zeros, Reshape back, Mul, Add),
    "mean" a ReduceMean over the spatial axes read by a Mul (the rule the batch limit came from);
    then a Relu. RAFT runs its feature encoder on both images as one batch of 2."""
    name, shape, kind = spec
    p = f"{name}_"
    node = _prefixed(p)
    c, n, ones = shape[1], shape[0], [1] * (len(shape) - 2)
    inits = [_const(p + "w", _weights(rng, c, c, *ones))]
    nodes = [node("Conv", ["x", "w"], "c", kernel_shape=ones)]
    if kind == "in":
        inits += [_const(p + "scale", (1 + 0.1 * rng.standard_normal(c)).astype(np.float32)), _const(p + "bias", _weights(rng, c))]
        nodes.append(node("InstanceNormalization", ["c", "scale", "bias"], "norm", epsilon=1e-5))
    elif kind == "gn4":
        affine = [c] + ones
        inits += [_const(p + "grouped", np.array([n, 4, -1], np.int64)), _const(p + "back", np.array(shape, np.int64)),
                  _const(p + "one", np.ones(4, np.float32)), _const(p + "zero", np.zeros(4, np.float32)),
                  _const(p + "gamma", (1 + 0.1 * rng.standard_normal(affine)).astype(np.float32)), _const(p + "beta", _weights(rng, *affine))]
        nodes += [node("Reshape", ["c", "grouped"], "g"), node("InstanceNormalization", ["g", "one", "zero"], "gnorm", epsilon=1e-5),
                  node("Reshape", ["gnorm", "back"], "ungrouped"), node("Mul", ["ungrouped", "gamma"], "scaled"), node("Add", ["scaled", "beta"], "norm")]
    else:
        nodes += [node("ReduceMean", ["c"], "m", axes=list(range(2, len(shape))), keepdims=1), node("Mul", ["c", "m"], "norm")]
    nodes.append(node("Relu", ["norm"], "y"))
    return nodes, inits, [_vi(p + "x", shape)], [_vi(p + "y", shape)]


BATCHED_NORM_PACK = (
    ("in_b2", [2, 16, 8, 8], "in"), ("in_b1", [1, 16, 8, 8], "in"), ("in3_b2", [2, 16, 32], "in"), ("in_b2_wide", [2, 32, 16, 16], "in"),
    ("gn4_b2", [2, 32, 8, 8], "gn4"), ("gn4_b1", [1, 32, 8, 8], "gn4"), ("mean_b2", [2, 16, 8, 8], "mean"),
    ("mean3_b2", [2, 16, 32], "mean"), ("in_b3", [3, 8, 8, 8], "in"),
)
CASES.append(Case("batched_norm_pack", "fresh3: InstanceNormalization on a batch of 2 (RAFT's feature encoder)",
                  lambda: _packed(_batched_norm_case, BATCHED_NORM_PACK, 61, opset=17), ("imx93",)))


# fresh12 (h21-imx12): Vela 5.2.0's MEAN limit on a reduced axis (at most 4096, "Reduced axis is
# too large") on the MEAN of onnx2tf's InstanceNormalization and of a ReduceMean: a rank-3 [N, C, L]
# is [N, L, C] channels-last, so L is reduced (GroupNorm's Reshape [N, G, -1] makes L = C/G*H*W);
# of a 4-D input H and W each, not their product.
WIDE_NORM_PACK = (
    ("in3_l4096", [1, 8, 4096], "in"), ("in3_l4104", [1, 8, 4104], "in"),
    ("gn4_l4096", [1, 16, 32, 32], "gn4"), ("gn4_l8192", [1, 16, 32, 64], "gn4"),
    ("in4_w4096", [1, 8, 1, 4096], "in"), ("in4_w4104", [1, 8, 1, 4104], "in"),
    ("in4_h4104", [1, 8, 4104, 1], "in"), ("in4_64x80", [1, 8, 64, 80], "in"),
    ("mean_w4096", [1, 8, 1, 4096], "mean"), ("mean_w4104", [1, 8, 1, 4104], "mean"),
)
CASES.append(Case("wide_norm_imx_pack", "fresh12: InstanceNormalization (GroupNorm's) over more than 4096 positions (SegResNet, RealPLKSR, DDPM UNet)",
                  lambda: _packed(_batched_norm_case, WIDE_NORM_PACK, 63, opset=17), ("imx93",)))


def _attention_softmax_imx_case(rng, spec):
    """(name, heads, tokens): DDPM UNet's attention core, scores = MatMul(q [1, heads, tokens, 16],
    k^T [1, heads, 16, tokens]), Softmax over the last axis, MatMul with v: is the SOFTMAX's height
    and width (Vela's 65536 limit) read in channels-last order or in ONNX's?"""
    name, heads, tokens = spec
    p = f"{name}_"
    node = _prefixed(p)
    nodes = [node("MatMul", ["q", "kt"], "scores"), node("Softmax", ["scores"], "probs", axis=-1), node("MatMul", ["probs", "v"], "y")]
    inputs = [_vi(p + "q", [1, heads, tokens, 16]), _vi(p + "kt", [1, heads, 16, tokens]), _vi(p + "v", [1, heads, tokens, 16])]
    return nodes, [], inputs, [_vi(p + "y", [1, heads, tokens, 16])]


ATTENTION_SOFTMAX_IMX_PACK = (("sm_h8_t256", 8, 256), ("sm_h1_t256", 1, 256), ("sm_h2_t512", 2, 512), ("sm_h8_t64", 8, 64), ("sm_h1024_t64", 1024, 64))
CASES.append(Case("attention_softmax_imx_pack", "fresh12: DDPM UNet's attention Softmax [1, 8, 256, 256] on the NPU",
                  lambda: _packed(_attention_softmax_imx_case, ATTENTION_SOFTMAX_IMX_PACK, 64, opset=17), ("imx93",)))


def _float_concat_imx_case(rng, spec):
    """(name, variant): DDPM UNet's sinusoidal time projection, a Mul of the input [1, 16] by
    frequencies, then a Concat on the last axis of "sin_cos" its Sin and Cos (no int8 kernel: float),
    "sin_relu" its Sin and a Relu of it, "relu_sin" the other way round, "relu_relu" two Relus; a Gemm (the time embedding) reads it."""
    name, variant = spec
    p = f"{name}_"
    node = _prefixed(p)
    inits = [_const(p + "freq", (rng.random((1, 16)) + 0.1).astype(np.float32)), _const(p + "w", _weights(rng, 32, 32)), _const(p + "b", _weights(rng, 32))]
    first, second = {"sin_cos": ("Sin", "Cos"), "sin_relu": ("Sin", "Relu"), "relu_sin": ("Relu", "Sin"), "relu_relu": ("Relu", "Relu")}[variant]
    nodes = [node("Mul", ["x", "freq"], "arg"), node(first, ["arg"], "first"), node(second, ["arg"], "second"),
             node("Concat", ["first", "second"], "joined", axis=-1), node("Gemm", ["joined", "w", "b"], "y")]
    return nodes, inits, [_vi(p + "x", [1, 16])], [_vi(p + "y", [1, 32])]


CASES.append(Case("float_concat_imx_pack", "fresh12: DDPM UNet's time projection, a Concat of Sin and Cos, in float",
                  lambda: _packed(_float_concat_imx_case, (("fc_sin_cos", "sin_cos"), ("fc_sin_relu", "sin_relu"), ("fc_relu_sin", "relu_sin"), ("fc_relu_relu", "relu_relu")), 65, opset=17), ("imx93",)))


def _two_images_case(rng, spec):
    """(name, variant): RAFT's two encoders on two images [1, 3, 32, 32]: "raft" the images joined
    into a batch (Concat axis 0) for a Conv 7x7/2 (pads 3), InstanceNormalization and Relu, and the
    first image alone through its own Conv 7x7/2 and Relu (the context encoder, no norm);
    "alone" that second branch only; "concat_c" the images joined on the channels instead;
    "raft_3x3" the context branch as a Conv 3x3/1 (pads 1, no PAD of its own)."""
    name, variant, c = (*spec, 16) if len(spec) == 2 else spec
    p = f"{name}_"
    node = _prefixed(p)
    k, pad, stride = (3, 1, 1) if variant == "raft_3x3" else (7, 3, 2)
    side = 32 // stride
    inits = [_const(p + "wc", _weights(rng, c, 3, k, k)), _const(p + "bc", _weights(rng, c))]
    nodes = [node("Conv", ["x1", "wc", "bc"], "cc", kernel_shape=[k, k], pads=[pad] * 4, strides=[stride] * 2), node("Relu", ["cc"], "ctx")]
    inputs = [_vi(p + "x1", [1, 3, 32, 32])]
    outputs = [_vi(p + "ctx", [1, c, side, side])]
    if variant != "alone":
        batch = variant != "concat_c"
        inits += [_const(p + "wf", _weights(rng, c, 3 if batch else 6, 7, 7)), _const(p + "bf", _weights(rng, c))]
        inputs.append(_vi(p + "x2", [1, 3, 32, 32]))
        nodes += [node("Concat", ["x1", "x2"], "both", axis=0 if batch else 1),
                  node("Conv", ["both", "wf", "bf"], "cf", kernel_shape=[7, 7], pads=[3] * 4, strides=[2, 2])]
        if batch:
            inits += [_const(p + "scale", np.ones(c, np.float32)), _const(p + "bias", np.zeros(c, np.float32))]
            nodes.append(node("InstanceNormalization", ["cf", "scale", "bias"], "nf", epsilon=1e-5))
        nodes.append(node("Relu", ["nf" if batch else "cf"], "feat"))
        outputs.append(_vi(p + "feat", [2 if batch else 1, c, 16, 16]))
    return nodes, inits, inputs, outputs


CASES += [Case(f"two_images_{v}", "fresh3: RAFT's context encoder on an image also joined into the feature encoder's batch",
               lambda v=v: _packed(_two_images_case, ((v, v),), 62, opset=17), ("imx93",)) for v in ("raft", "alone", "concat_c", "raft_3x3")]


def _l2_norm_imx_case(rng, spec):
    """(name, variant): a Relu of the input [1, 32, 8, 8] (SSD's conv4_3 map), then its L2 norm
    over the channels: "ssd" torchvision's F.normalize (ReduceL2 axes [1] keepdims, Clip with a
    min only, Expand to the input's Shape, Div) and the per-channel scale Mul; "noexpand" ReduceL2,
    Clip, Div; "alone" ReduceL2 read by a Relu; "k0" ReduceL2 without keepdims; "a23" over H and W,
    Div; "sqrt_clip_div" the norm written out (Mul, ReduceSum, Sqrt), Clip, Div; "sqrt_relu_div"
    with a Relu for the Clip; "sqrt_clip_mul" Clip read by a Mul of the input; "l2_clip_conv" the
    Clip read by a Conv 1x1."""
    name, variant = spec
    p = f"{name}_"
    node = _prefixed(p)
    shape = [1, 32, 8, 8]
    inits = [_const(p + "eps", np.array(1e-12, np.float32))]
    nodes = [node("Relu", ["x"], "r")]
    axes = [2, 3] if variant == "a23" else [1]
    keep = 0 if variant == "k0" else 1
    if variant.startswith("sqrt"):
        inits.append(_const(p + "axes", np.array(axes, np.int64)))
        nodes += [node("Mul", ["r", "r"], "sq"), node("ReduceSum", ["sq", "axes"], "ss", keepdims=1), node("Sqrt", ["ss"], "norm")]
    else:
        nodes.append(node("ReduceL2", ["r"], "norm", axes=axes, keepdims=keep))
    if variant in ("alone", "k0"):
        nodes.append(node("Relu", ["norm"], "y"))
        out = [1, 1, 8, 8] if keep else [1, 8, 8]
        return nodes, inits, [_vi(p + "x", shape)], [_vi(p + "y", out)]
    if variant == "sqrt_relu_div":
        nodes.append(node("Relu", ["norm"], "clipped"))
    else:
        nodes.append(helper.make_node("Clip", [p + "norm", p + "eps", ""], [p + "clipped"], name=p + "clipped"))
    if variant == "ssd":
        inits.append(_const(p + "gamma", (20 + rng.standard_normal([1, 32, 1, 1])).astype(np.float32)))
        nodes += [node("Shape", ["r"], "shape"), node("Expand", ["clipped", "shape"], "wide"), node("Div", ["r", "wide"], "d"), node("Mul", ["gamma", "d"], "y")]
    elif variant == "sqrt_clip_mul":
        nodes.append(node("Mul", ["r", "clipped"], "y"))
    elif variant == "l2_clip_conv":
        inits.append(_const(p + "w", _weights(rng, 32, 1, 1, 1)))
        nodes.append(node("Conv", ["clipped", "w"], "y", kernel_shape=[1, 1]))
    else:
        nodes.append(node("Div", ["r", "clipped"], "y"))
    return nodes, inits, [_vi(p + "x", shape)], [_vi(p + "y", shape)]


L2_NORM_IMX_PACK = tuple((v, v) for v in ("ssd", "noexpand", "alone", "k0", "a23", "sqrt_clip_div", "sqrt_relu_div", "sqrt_clip_mul", "l2_clip_conv"))
CASES.append(Case("l2_norm_imx_pack", "fresh3: an L2 norm over the channels (SSD's F.normalize) through onnx2tf and Vela",
                  lambda: _packed(_l2_norm_imx_case, L2_NORM_IMX_PACK, 63, used_only=True, opset=13), ("imx93",)))


def _jax_layer_norm_case(rng, spec):
    """(name, variant): jax2tf's LayerNorm (magika) of a Relu of the input [1, 64, 32] over axis 1:
    ReduceSum (keepdims 0) of x and of x*x, Muls by 1/n, the variance as E[x^2] - E[x]^2, Max with
    0; "jax" then Reshape [1, 1, C], Expand to the same shape, Add eps, Sqrt, Reciprocal, Mul by
    gamma, and x minus the mean (Reshape, Expand) times it, plus beta; "noexpand" without the
    Expands; "keepdims" reduced with keepdims (no Reshape, no Expand); "vector" the same on a
    [1, 64] vector (magika's second LayerNorm: a [1] mean Reshaped to [1, 1])."""
    name, variant = spec
    p = f"{name}_"
    node = _prefixed(p)
    shape = [1, 64] if variant == "vector" else [1, 64, 32]
    n, c = 64, shape[-1] if len(shape) == 3 else None
    stat = [1, 1, c] if c else [1, 1]
    keep = 1 if variant == "keepdims" else 0
    inits = [_const(p + "axes", np.array([1], np.int64)), _const(p + "inv_n", np.array(1.0 / n, np.float32)), _const(p + "zero", np.array(0, np.float32)),
             _const(p + "eps", np.array(1e-6, np.float32)), _const(p + "stat", np.array(stat, np.int64)),
             _const(p + "gamma", (1 + 0.1 * rng.standard_normal(shape)).astype(np.float32)), _const(p + "beta", _weights(rng, *shape))]
    nodes = [node("Relu", ["x"], "r"), node("ReduceSum", ["r", "axes"], "s", keepdims=keep), node("Mul", ["r", "r"], "sq"),
             node("ReduceSum", ["sq", "axes"], "s2", keepdims=keep), node("Mul", ["s", "inv_n"], "mean"), node("Mul", ["s2", "inv_n"], "mean2"),
             node("Mul", ["mean", "mean"], "mean_sq"), node("Sub", ["mean2", "mean_sq"], "var0"), node("Max", ["zero", "var0"], "var")]

    def widened(t, tag):
        if variant == "keepdims":
            return t
        nodes.append(node("Reshape", [t, "stat"], f"{tag}_r"))
        if variant == "noexpand":
            return f"{tag}_r"
        nodes.append(node("Expand", [f"{tag}_r", "stat"], f"{tag}_e"))
        return f"{tag}_e"

    v = widened("var", "var")
    nodes += [node("Add", [v, "eps"], "ve"), node("Sqrt", ["ve"], "sd"), node("Reciprocal", ["sd"], "inv"), node("Mul", ["inv", "gamma"], "k")]
    m = widened("mean", "mean")
    nodes += [node("Sub", ["r", m], "centred"), node("Mul", ["centred", "k"], "scaled"), node("Add", ["scaled", "beta"], "y")]
    return nodes, inits, [_vi(p + "x", shape)], [_vi(p + "y", shape)]


def _one_hot_case(rng, spec):
    """(name, variant): jax2tf's one-hot of byte values (magika): an int32 input [1, 64] Reshaped to
    [1, 64, 1], ("expand": Expanded to the same shape, as jax2tf's BroadcastTo), Equal to the
    constant classes [1, 1, 17], Cast to float, MatMul by weights [17, 16]; "big": 257 classes
    and weights [257, 64] (magika's); "...bias": the MatMul's result plus a bias (Add)."""
    name, variant = spec
    p = f"{name}_"
    node = _prefixed(p)
    k, d = (257, 64) if variant.startswith("big") else (17, 16)
    inits = [_const(p + "col", np.array([1, 64, 1], np.int64)), _const(p + "classes", np.arange(k, dtype=np.int32).reshape(1, 1, k)),
             _const(p + "w", _weights(rng, k, d)), _const(p + "b", _weights(rng, d))]
    nodes = [node("Reshape", ["x", "col"], "col_x")]
    src = "col_x"
    if variant == "expand":
        nodes.append(node("Expand", ["col_x", "col"], "wide"))
        src = "wide"
    nodes += [node("Equal", [src, "classes"], "hot"), node("Cast", ["hot"], "hotf", to=TensorProto.FLOAT)]
    if variant.endswith("bias"):
        nodes += [node("MatMul", ["hotf", "w"], "mm"), node("Add", ["mm", "b"], "y")]
    else:
        nodes.append(node("MatMul", ["hotf", "w"], "y"))
    return nodes, inits, [_vi(p + "x", [1, 64], TensorProto.INT32)], [_vi(p + "y", [1, 64, d])]


def _jax_softmax_case(rng, spec):
    """(name, variant): jax2tf's softmax over [1, 24] logits (a MatMul of the input [1, 16]):
    ReduceMax (keepdims 0), Max with a constant, Reshape [1, 1], Expand, Sub, Exp, ReduceSum
    (keepdims 0), Reshape [1, 1], Expand, Div, a model output; "keepdims" the same with keepdims
    and no Reshape or Expand."""
    name, variant = spec
    p = f"{name}_"
    node = _prefixed(p)
    keep = 1 if variant == "keepdims" else 0
    inits = [_const(p + "w", _weights(rng, 16, 24)), _const(p + "axes", np.array([1], np.int64)), _const(p + "floor", np.array(-1e30, np.float32)),
             _const(p + "stat", np.array([1, 1], np.int64))]
    nodes = [node("MatMul", ["x", "w"], "logits"), node("ReduceMax", ["logits"], "mx", axes=[1], keepdims=keep), node("Max", ["floor", "mx"], "mx2")]

    def widened(t):
        if keep:
            return t
        nodes.extend([node("Reshape", [t, "stat"], f"{t}_r"), node("Expand", [f"{t}_r", "stat"], f"{t}_e")])
        return f"{t}_e"

    nodes += [node("Sub", ["logits", widened("mx2")], "shifted"), node("Exp", ["shifted"], "e"), node("ReduceSum", ["e", "axes"], "total", keepdims=keep)]
    nodes.append(node("Div", ["e", widened("total")], "y"))
    return nodes, inits, [_vi(p + "x", [1, 16])], [_vi(p + "y", [1, 24])]


def _jax_case(rng, spec):
    kind = spec[0].split("_")[0]
    return {"ln": _jax_layer_norm_case, "hot": _one_hot_case, "sm": _jax_softmax_case}[kind](rng, spec)


JAX_FORMS_PACK = (("ln_jax", "jax"), ("ln_noexpand", "noexpand"), ("ln_keepdims", "keepdims"), ("ln_vector", "vector"),
                  ("hot_plain", "plain"), ("hot_expand", "expand"), ("sm_jax", "jax"), ("sm_keepdims", "keepdims"))
# The one-hot's MatMul: with a bias, and at magika's size (257 classes, 64 wide).
ONE_HOT_PACK = (("hot_bias", "bias"), ("hot_big", "big"), ("hot_big_bias", "big_bias"))
CASES.append(Case("jax_forms_pack", "fresh3: jax2tf's LayerNorm, one-hot and softmax spellings (magika) through onnx2tf and Vela",
                  lambda: _packed(_jax_case, JAX_FORMS_PACK, 64, used_only=True, opset=15), ("imx93",)))
CASES.append(Case("one_hot_pack", "fresh3: jax2tf's one-hot (Equal, Cast) into a MatMul, with a bias and at magika's size",
                  lambda: _packed(_jax_case, ONE_HOT_PACK, 66, used_only=True, opset=15), ("imx93",)))


def _identity_reshape_case(rng, spec):
    """(name, shape, groups, then): a Conv 1x1 on the input, then a Reshape to [0, groups, -1] (an
    identity where groups is the channel count of a rank-3 map: SEW's feature-extractor layer
    norm, GroupNorm(C) as torch.onnx writes it), then `then`: "in" an InstanceNormalization of ones
    and zeros, the Reshape back to the Conv's Shape, Mul and Add per channel; "conv" a Conv 1x1
    (on [N, groups, L]); "sigmoid" a Sigmoid. Then a Relu."""
    name, shape, groups, then = spec
    p = f"{name}_"
    node = _prefixed(p)
    c = shape[1]
    ones = [1] * (len(shape) - 2)
    inits = [_const(p + "w", _weights(rng, c, c, *ones)), _const(p + "grouped", np.array([0, groups, -1], np.int64))]
    nodes = [node("Conv", ["x", "w"], "c", kernel_shape=ones), node("Reshape", ["c", "grouped"], "g")]
    flat = shape[0] * int(np.prod(shape[1:])) // groups
    if then == "in":
        affine = [c] + ones
        inits += [_const(p + "one", np.ones(groups, np.float32)), _const(p + "zero", np.zeros(groups, np.float32)),
                  _const(p + "gamma", (1 + 0.1 * rng.standard_normal(affine)).astype(np.float32)), _const(p + "beta", _weights(rng, *affine))]
        nodes += [node("InstanceNormalization", ["g", "one", "zero"], "gn", epsilon=1e-5), node("Shape", ["c"], "shape"),
                  node("Reshape", ["gn", "shape"], "back"), node("Mul", ["back", "gamma"], "scaled"), node("Add", ["scaled", "beta"], "out")]
        out = shape
    elif then == "conv":
        inits.append(_const(p + "w2", _weights(rng, groups, groups, 1)))
        nodes.append(node("Conv", ["g", "w2"], "out", kernel_shape=[1]))
        out = [shape[0], groups, flat]
    else:
        nodes.append(node("Sigmoid", ["g"], "out"))
        out = [shape[0], groups, flat]
    nodes.append(node("Relu", ["out"], "y"))
    return nodes, inits, [_vi(p + "x", shape)], [_vi(p + "y", out)]


IDENTITY_RESHAPE_PACK = (
    ("sew", [1, 32, 99], 32, "in"), ("sew16", [1, 16, 40], 16, "in"), ("gn4", [1, 32, 99], 4, "in"), ("map_gn1", [1, 8, 4, 4], 1, "in"),
    ("id_conv", [1, 16, 40], 16, "conv"), ("id_sigmoid", [1, 16, 40], 16, "sigmoid"),
)
CASES.append(Case("identity_reshape_pack", "fresh3: a Reshape to the shape it already has before an InstanceNormalization (SEW's feature-extractor GroupNorm)",
                  lambda: _packed(_identity_reshape_case, IDENTITY_RESHAPE_PACK, 65, opset=17), ("esp32s3",)))


# RoFormer's attention as transformers writes it: q and k each their own Linear, the heads split
# (Reshape [1, T, H, D], Transpose [0, 2, 1, 3]), then the rotary embedding on the 4-D heads:
# x * cos + rotate(x) * sin, rotate interleaved (x[..., 1::2] negated and x[..., ::2] stacked on a
# new last axis, viewed back: "interleaved") or by halves (Concat(-x2, x1): "halves"), cos and sin
# constants [1, 1, T, D] ("interleaved_shape": the view back shaped by Shape(x)); scores q @ k^T (k swapped by Transpose [0, 1, 3, 2]), Softmax, @ v (its own
# Linear, split as usual), heads merged, Linear. "plain": no rotary embedding (the control).
# The "halves" form is kept out of the held pack (ROTARY_HEADS_HALVES below).
# (name, form, T, H, D)
ROTARY_HEADS_PACK = (
    ("int_t32h2d32", "interleaved", 32, 2, 32), ("int_t49h4d16", "interleaved", 49, 4, 16), ("int_t16h2d64", "interleaved", 16, 2, 64),
    ("int_t17h8d8", "interleaved", 17, 8, 8), ("plain_t32h2d32", "plain", 32, 2, 32), ("shape_t32h2d32", "interleaved_shape", 32, 2, 32),
)
# Probed, not modelled (not held, docs/audit.md): the rotation by halves, where the heads'
# Transposes are on the NPU as well but the key's swap [0, 1, 3, 2] runs on the CPU.
ROTARY_HEADS_HALVES = (("half_t32h2d32", "halves", 32, 2, 32), ("half_t24h4d16", "halves", 24, 4, 16))


def _rotary_heads_case(rng, spec) -> tuple[list, list, list, list]:
    """One entry of ROTARY_HEADS_PACK: its nodes, initializers, input and output."""
    name, form, t, h, d = spec
    p = f"{name}_"
    node = _prefixed(p)
    c = h * d
    inits = [_const(p + "heads", np.array([1, t, h, d], np.int64)), _const(p + "merged", np.array([1, t, c], np.int64)),
             _const(p + "cos", _weights(rng, 1, 1, t, d)), _const(p + "sin", _weights(rng, 1, 1, t, d)),
             _const(p + "scale", np.array(np.sqrt(d), np.float32)), _const(p + "wo", _weights(rng, c, c)),
             _const(p + "one", np.array([1], np.int64)), _const(p + "zero", np.array([0], np.int64)), _const(p + "big", np.array([2 ** 62], np.int64)),
             _const(p + "last", np.array([3], np.int64)), _const(p + "two", np.array([2], np.int64)), _const(p + "minus1", np.array([-1], np.int64)),
             _const(p + "half", np.array([d // 2], np.int64)), _const(p + "shape4", np.array([1, h, t, d], np.int64)),
             _const(p + "shape5", np.array([1, h, t, d // 2, 2], np.int64)), _const(p + "ones", np.array([1, 1], np.int64))]
    nodes = []
    for part in "qkv":
        inits += [_const(p + f"w{part}", _weights(rng, c, c)), _const(p + f"b{part}", _weights(rng, c))]
        nodes += [node("MatMul", ["x", f"w{part}"], f"{part}0"), node("Add", [f"{part}0", f"b{part}"], f"{part}1"),
                  node("Reshape", [f"{part}1", "heads"], f"{part}2"), node("Transpose", [f"{part}2"], f"{part}3", perm=[0, 2, 1, 3])]
    for part in "qk":
        x = f"{part}3"
        if form == "plain":
            continue
        if form.startswith("interleaved"):
            if form == "interleaved_shape":  # the view back's shape read from x at run time, as RoFormer's export writes it
                nodes.append(node("Shape", [x], f"{part}_shape"))
            nodes += [node("Slice", [x, "one", "big", "last", "two"], f"{part}_odd"), node("Neg", [f"{part}_odd"], f"{part}_neg"),
                      node("Slice", [x, "zero", "big", "last", "two"], f"{part}_even"),
                      node("Unsqueeze", [f"{part}_neg", "minus1"], f"{part}_u1"), node("Unsqueeze", [f"{part}_even", "minus1"], f"{part}_u0"),
                      node("Concat", [f"{part}_u1", f"{part}_u0"], f"{part}_st", axis=-1),
                      node("Reshape", [f"{part}_st", f"{part}_shape" if form == "interleaved_shape" else "shape4"], f"{part}_rot")]
        elif form == "pairs":  # V-JEPA 2: unflatten(-1, (-1, 2)), unbind(-1), stack((-x2, x1), -1), flatten(-2)
            nodes += [node("Reshape", [x, "shape5"], f"{part}_pairs"), helper.make_node("Split", [p + f"{part}_pairs", p + "ones"], [p + f"{part}_p0", p + f"{part}_p1"], name=p + f"{part}_unbind", axis=-1),
                      node("Squeeze", [f"{part}_p0", "minus1"], f"{part}_x1"), node("Squeeze", [f"{part}_p1", "minus1"], f"{part}_x2"), node("Neg", [f"{part}_x2"], f"{part}_neg"),
                      node("Unsqueeze", [f"{part}_neg", "minus1"], f"{part}_u1"), node("Unsqueeze", [f"{part}_x1", "minus1"], f"{part}_u0"),
                      node("Concat", [f"{part}_u1", f"{part}_u0"], f"{part}_st", axis=-1), node("Reshape", [f"{part}_st", "shape4"], f"{part}_rot")]
        else:
            nodes += [node("Slice", [x, "zero", "half", "last"], f"{part}_x1"), node("Slice", [x, "half", "big", "last"], f"{part}_x2"),
                      node("Neg", [f"{part}_x2"], f"{part}_neg"), node("Concat", [f"{part}_neg", f"{part}_x1"], f"{part}_rot", axis=-1)]
        nodes += [node("Mul", [x, "cos"], f"{part}_c"), node("Mul", [f"{part}_rot", "sin"], f"{part}_s"), node("Add", [f"{part}_c", f"{part}_s"], f"{part}r")]
    q, k = ("q3", "k3") if form == "plain" else ("qr", "kr")
    nodes += [node("Transpose", [k], "kt", perm=[0, 1, 3, 2]), node("MatMul", [q, "kt"], "s0"), node("Div", ["s0", "scale"], "scores"),
              node("Softmax", ["scores"], "probs", axis=-1), node("MatMul", ["probs", "v3"], "o4"), node("Transpose", ["o4"], "o_t", perm=[0, 2, 1, 3]),
              node("Reshape", ["o_t", "merged"], "o"), node("MatMul", ["o", "wo"], "y")]
    return nodes, [i for i in inits], [_vi(p + "x", [1, t, c])], [_vi(p + "y", [1, t, c])]


CASES.append(Case("rotary_heads_pack", "fresh3: rotary position embeddings on the heads right after their split (transformers' RoFormer)",
                  lambda: _packed(_rotary_heads_case, ROTARY_HEADS_PACK, 109, used_only=True, opset=13), ("rk3566",)))
# fresh8 (V-JEPA 2): the rotation through a pair axis on the whole of each head ("pairs").
ROTARY_HEADS_PAIRS = (("pair_t64h2d32", "pairs", 64, 2, 32), ("pair_t32h2d16", "pairs", 32, 2, 16), ("pair_t20h2d32", "pairs", 20, 2, 32))
CASES.append(Case("rotary_heads_pairs_pack", "fresh8: rotary positions through a pair axis on the heads right after their split (V-JEPA 2)",
                  lambda: _packed(_rotary_heads_case, ROTARY_HEADS_PAIRS, 111, used_only=True, opset=13), ("rk3566", "rk3588")))


# ---- fresh3 (torchvision's SSD300): a detection head's levels concatenated, by their count -------

# (name, values per anchor K, levels as (side, anchors)): per level a 1x1 Conv of A*K outputs on a
# [1, 8, side, side] input, torchvision's view [1, A, K, H, W], permute [0, 3, 4, 1, 2], reshape
# [1, H*W*A, K], then one Concat of the levels along the anchors. Not recorded, since the audit does
# not model them: without a 1x1 level (laid out by anchors), SSD300's first five levels and the same
# with 6 anchors on every level (K = 4): the Concat on the CPU (RK3588), where smaller heads of
# 10/5/3 and 5/3 maps keep it on the NPU; not explained.
SSD_LEVELS = ((38, 4), (19, 6), (10, 6), (5, 6), (3, 4), (1, 4))
HEAD_CONCAT_PACK = (("k4_ssd300", 4, SSD_LEVELS), ("k4_from19", 4, SSD_LEVELS[1:]), ("k4_first32", 4, ((32, 4),) + SSD_LEVELS[1:]),
                    ("k4_first40", 4, ((40, 4),) + SSD_LEVELS[1:]), ("k4_first45", 4, ((45, 4),) + SSD_LEVELS[1:]),
                    ("k16_ssd300", 16, SSD_LEVELS), ("k4_two", 4, ((46, 4), (1, 4))), ("k4_two_small", 4, ((20, 4), (1, 4))),
                    ("k4_same6", 4, tuple((s, 6) for s, _ in SSD_LEVELS)), ("k4_same4", 4, tuple((s, 4) for s, _ in SSD_LEVELS)),
                    ("k4_a4_a8", 4, ((10, 4), (5, 8), (1, 4))), ("k4_mixed_two", 4, ((10, 4), (1, 6))),
                    ("k91_ssd300", 91, SSD_LEVELS),
                    ("k4_lite", 4, ((10, 6), (5, 6), (3, 6), (2, 6), (1, 6), (1, 6))),
                    ("k4_lite_one1x1", 4, ((10, 6), (5, 6), (3, 6), (2, 6), (1, 6))), ("k4_same6_two1x1", 4, tuple((s, 6) for s, _ in SSD_LEVELS) + ((1, 6),)),
                    ("k4_lite_big", 4, ((38, 6), (5, 6), (3, 6), (2, 6), (1, 6), (1, 6))))


def _head_concat_case(rng, spec) -> tuple[list, list, list, list]:
    """One HEAD_CONCAT_PACK entry."""
    name, k, levels = spec
    p = f"head_{name}_"
    inits, nodes, inputs, pieces, total = [], [], [], [], 0
    for i, (side, a) in enumerate(levels):
        q = p + f"l{i}_"
        inits += [_const(q + "w", _weights(rng, a * k, 8, 1, 1)), _const(q + "five", np.array([1, -1, k, side, side], np.int64)),
                  _const(q + "three", np.array([1, -1, k], np.int64))]
        nodes += [helper.make_node("Conv", [q + "x", q + "w"], [q + "c"], name=q + "conv"),
                  helper.make_node("Reshape", [q + "c", q + "five"], [q + "v"], name=q + "view"),
                  helper.make_node("Transpose", [q + "v"], [q + "t"], name=q + "permute", perm=[0, 3, 4, 1, 2]),
                  helper.make_node("Reshape", [q + "t", q + "three"], [q + "f"], name=q + "flatten")]
        inputs.append(_vi(q + "x", [1, 8, side, side]))
        pieces.append(q + "f")
        total += side * side * a
    nodes.append(helper.make_node("Concat", pieces, [p + "y"], name=p + "concat", axis=1))
    return nodes, inits, inputs, [_vi(p + "y", [1, total, k])]


CASES.append(Case("head_concat_pack", "fresh3: a detection head's levels concatenated (torchvision's SSD300)",
                  lambda: _packed(_head_concat_case, HEAD_CONCAT_PACK, 157), ("rk3588",)))
# On RK3566 the same heads but SSD300's K = 91 (whose Concat ran on the CPU there and its 38x38 and
# 10x10 levels on the NPU: not modelled, docs/audit.md): the one 1x1 level's Reshape on the NPU too.
CASES.append(Case("head_concat_pack_rk3566", "fresh3: a detection head's levels concatenated (torchvision's SSD300)",
                  lambda: _packed(_head_concat_case, tuple(e for e in HEAD_CONCAT_PACK if e[0] != "k91_ssd300"), 157), ("rk3566",)))


# SqueezeBERT's token layout: the embeddings' LayerNorm over [1, T, C], Transpose [0, 2, 1] into
# [1, C, T] for 1-D convolutions (k = 1) and a residual Add in that layout, then Transpose [0, 2, 1]
# back for a LayerNorm over the channels. (name, T, C, norm before the first swap)
TOKENS_FOR_CONV1D_PACK = (("t32c64", 32, 64, True), ("t49c64", 49, 64, True), ("t32c24", 32, 24, True), ("t16c128", 16, 128, True),
                          ("t32c64_plain", 32, 64, False))


def _tokens_for_conv1d_case(rng, spec) -> tuple[list, list, list, list]:
    """One entry of TOKENS_FOR_CONV1D_PACK: its nodes, initializers, input and output."""
    name, t, c, norm = spec
    p = f"{name}_"
    node = _prefixed(p)
    inits = [_const(p + "g", np.ones(c, np.float32)), _const(p + "b", np.zeros(c, np.float32)),
             _const(p + "w", _weights(rng, c, c, 1)), _const(p + "wb", _weights(rng, c)),
             _const(p + "g2", np.ones(c, np.float32)), _const(p + "b2", np.zeros(c, np.float32))]
    nodes = [node("LayerNormalization", ["x", "g", "b"], "ln", axis=-1, epsilon=1e-12)] if norm else [node("Relu", ["x"], "ln")]
    nodes += [node("Transpose", ["ln"], "cf", perm=[0, 2, 1]), node("Conv", ["cf", "w", "wb"], "conv", kernel_shape=[1]),
              node("Add", ["conv", "cf"], "res"), node("Transpose", ["res"], "back", perm=[0, 2, 1]),
              node("LayerNormalization", ["back", "g2", "b2"], "y", axis=-1, epsilon=1e-12)]
    return nodes, inits, [_vi(p + "x", [1, t, c])], [_vi(p + "y", [1, t, c])]


CASES.append(Case("tokens_for_conv1d_pack", "fresh3: tokens swapped for 1-D convolutions and back around LayerNorms (transformers' SqueezeBERT)",
                  lambda: _packed(_tokens_for_conv1d_case, TOKENS_FOR_CONV1D_PACK, 113, opset=17), ("rk3566",)))


# ---- fresh3 (torchvision's RAFT): a batch of lookups folded back into a map -----------------------

# (name, side, window, producer, chip note): RAFT's correlation lookup gives [S*S, 1, w, w] (one
# window per pixel in the batch) and views it [1, S, S, w*w]. producer: "gridsample" (the lookup,
# bilinear, align_corners, zeros: CPU on RK3588), "relu" (a Relu of a [S*S, 1, w, w] input),
# "conv" (a 1x1 Conv of it).
BATCH_FOLD_PACK = (("s16_w7_gridsample", 16, 7, "gridsample"), ("s16_w7_relu", 16, 7, "relu"), ("s16_w7_conv", 16, 7, "conv"),
                   ("s4_w7_relu", 4, 7, "relu"), ("s4_w4_relu", 4, 4, "relu"), ("s8_w3_gridsample", 8, 3, "gridsample"),
                   ("s16_w4_relu", 16, 4, "relu"), ("s16_w8_relu", 16, 8, "relu"), ("s8_w5_relu", 8, 5, "relu"), ("s8_w4_gridsample", 8, 4, "gridsample"))


def _batch_fold_case(rng, spec) -> tuple[list, list, list, list]:
    """One BATCH_FOLD_PACK entry, read by a 1x1 Conv after the fold (a Relu as the model output after a
    CPU Reshape also runs on the CPU)."""
    name, s, w, producer = spec
    p = f"fold_{name}_"
    b = s * s
    inits = [_const(p + "shape", np.array([1, s, s, -1], np.int64))]
    if producer == "gridsample":
        inits.append(_const(p + "grid", np.clip(_weights(rng, b, w, w, 2), -1, 1)))
        nodes = [helper.make_node("GridSample", [p + "x", p + "grid"], [p + "g"], name=p + "lookup", align_corners=1, mode="bilinear", padding_mode="zeros")]
        inputs = [_vi(p + "x", [b, 1, s, s])]
    elif producer == "conv":
        inits.append(_const(p + "w", _weights(rng, 1, 1, 1, 1)))
        nodes = [helper.make_node("Conv", [p + "x", p + "w"], [p + "g"], name=p + "conv")]
        inputs = [_vi(p + "x", [b, 1, w, w])]
    else:
        nodes = [helper.make_node("Relu", [p + "x"], [p + "g"], name=p + "relu_in")]
        inputs = [_vi(p + "x", [b, 1, w, w])]
    inits.append(_const(p + "wout", _weights(rng, s, s, 1, 1)))
    nodes += [helper.make_node("Reshape", [p + "g", p + "shape"], [p + "v"], name=p + "fold"),
              helper.make_node("Conv", [p + "v", p + "wout"], [p + "y"], name=p + "conv_out")]
    return nodes, inits, inputs, [_vi(p + "y", [1, s, s, w * w])]


CASES.append(Case("batch_fold_pack", "fresh3: a batch of per-pixel windows folded back into a map (RAFT's correlation lookup)",
                  lambda: _packed(_batch_fold_case, BATCH_FOLD_PACK, 163, opset=16), ("rk3588",)))


# ---- fresh4 (DAC's Snake, VAN's layer scale): a per-channel constant times a map, by neighbour -----

# (name, producer, consumer, constant, order, rank): a map r = Relu(Conv(x)) of 16 channels, then
# d by `producer`: "conv" (a 1x1 Conv of r read only by the Mul), "conv_fork" (that Conv's result
# also read by the residual Add, as DAC's Snake reads its input twice), "add2" (Conv(r) + r, two
# computed maps: VAN's attention block before its layer scale), "relu" (r itself); s = the Mul of d
# by the constant; `consumer`: "add" (Add(residual, s)), "sin" (Sin(s), then the residual Add:
# the Snake's alpha * x), "relu", "conv" (a 1x1 Conv of s, then the residual Add). constant:
# "c11_small" [C, 1, 1] of 0.01 (VAN), "c11_unit" of 1 (DAC's alpha as initialised), "c11_huge"
# of 100, "c11_rand" random in [0.5, 2], "1c11_small" [1, C, 1, 1], "scalar_small"; order "first"
# (constant * d, as both models) or "second"; rank "2d" (8x8 maps) or "1d" ([1, C, 64], the
# constant [1, C, 1] or [C, 1]: DAC's Conv1d).
MUL_SCALE_PACK = (("conv_add", "conv", "add", "c11_small", "first", "2d"),
                  ("fork_add", "conv_fork", "add", "c11_small", "first", "2d"),
                  ("add2_add", "add2", "add", "c11_small", "first", "2d"),
                  ("add2_add_second", "add2", "add", "c11_small", "second", "2d"),
                  ("add2_add_1c11", "add2", "add", "1c11_small", "first", "2d"),
                  ("add2_add_scalar", "add2", "add", "scalar_small", "first", "2d"),
                  ("add2_add_unit", "add2", "add", "c11_unit", "first", "2d"),
                  ("add2_relu", "add2", "relu", "c11_small", "first", "2d"),
                  ("fork_sin", "conv_fork", "sin", "c11_unit", "first", "2d"),
                  ("conv_sin", "conv", "sin", "c11_unit", "first", "2d"),
                  ("fork_sin_second", "conv_fork", "sin", "c11_unit", "second", "2d"),
                  ("relu_sin", "relu", "sin", "c11_unit", "first", "2d"),
                  ("fork_sin_rand", "conv_fork", "sin", "c11_rand", "first", "2d"),
                  ("fork_sin_huge", "conv_fork", "sin", "c11_huge", "first", "2d"),
                  ("fork_conv", "conv_fork", "conv", "c11_unit", "first", "2d"),
                  ("conv_relu", "conv", "relu", "c11_unit", "first", "2d"),
                  ("fork_sin_1d", "conv_fork", "sin", "c11_unit", "first", "1d"),
                  ("conv_sin_1d", "conv", "sin", "c11_unit", "first", "1d"),
                  ("fork_add_1d", "conv_fork", "add", "c11_rand", "first", "1d"))
# Measured, left out: ("fork_relu", "conv_fork", "relu", "c11_unit"): the Mul float and its Relu float
# too (the toolkit fuses the Relu into the Mul's layer), which the audit does not model.


def _mul_scale_constant(kind: str, c: int, rank: str, rng) -> np.ndarray:
    shape_name, value = kind.split("_")
    values = {"small": np.full(c, 0.01), "unit": np.ones(c), "huge": np.full(c, 100.0), "rand": rng.uniform(0.5, 2.0, c), "half": np.full(c, 0.5),
              "nearly": np.r_[np.full(c - 1, 0.01), 0.02]}[value].astype(np.float32)
    if shape_name == "scalar":
        return np.array(values[0], np.float32)
    if rank == "1d":
        return values.reshape(1, c, 1) if shape_name == "1c11" else values.reshape(c, 1)
    return values.reshape(1, c, 1, 1) if shape_name == "1c11" else values.reshape(c, 1, 1)


def _mul_scale_case(rng, spec) -> tuple[list, list, list, list]:
    """One MUL_SCALE_PACK entry, ended by a Conv (the Mul never writes a model output)."""
    name, producer, consumer, constant, order, rank = spec
    p, c = f"ms_{name}_", 16
    k = (3,) if rank == "1d" else (3, 3)
    one = (1,) if rank == "1d" else (1, 1)
    space = [64] if rank == "1d" else [8, 8]
    pads = [1, 1] if rank == "1d" else [1, 1, 1, 1]
    inits = [_const(p + "w1", _weights(rng, c, 3, *k)), _const(p + "wp", _weights(rng, c, c, *one)), _const(p + "wq", _weights(rng, c, c, *one)),
             _const(p + "w2", _weights(rng, 4, c, *k)), _const(p + "gamma", _mul_scale_constant(constant, c, rank, rng))]
    nodes = [helper.make_node("Conv", [p + "x", p + "w1"], [p + "c"], name=p + "conv1", pads=pads), helper.make_node("Relu", [p + "c"], [p + "r"], name=p + "relu1")]
    residual = p + "r"
    if producer in ("conv", "conv_fork"):
        nodes.append(helper.make_node("Conv", [p + "r", p + "wp"], [p + "d"], name=p + "proj"))
        residual = p + "d" if producer == "conv_fork" else residual
    elif producer == "add2_apart":  # VAN's attention: the projection reads another map than the Add's other operand
        nodes += [helper.make_node("Conv", [p + "r", p + "wq"], [p + "q"], name=p + "pre"), helper.make_node("Relu", [p + "q"], [p + "qr"], name=p + "pre_act"),
                  helper.make_node("Conv", [p + "qr", p + "wp"], [p + "pc"], name=p + "proj"), helper.make_node("Add", [p + "pc", p + "r"], [p + "d"], name=p + "inner_add")]
        residual = p + "c"
    elif producer in ("add2", "add2_outer", "add2_bn"):
        inner = p + "r"
        if producer == "add2_bn":  # VAN: the block's input c, its BatchNorm n read by the projection and the inner Add
            inits += [_const(p + "bn_" + k, np.asarray(v, np.float32)) for k, v in (("scale", rng.uniform(0.5, 2, c)), ("bias", _weights(rng, c)), ("mean", _weights(rng, c)), ("var", rng.uniform(0.5, 2, c)))]
            nodes.append(helper.make_node("BatchNormalization", [p + "c"] + [p + "bn_" + k for k in ("scale", "bias", "mean", "var")], [p + "n"], name=p + "norm"))
            inner = p + "n"
        nodes += [helper.make_node("Conv", [inner, p + "wp"], [p + "pc"], name=p + "proj"), helper.make_node("Add", [p + "pc", inner], [p + "d"], name=p + "inner_add")]
        residual = p + "c" if producer != "add2" else residual  # the outer residual reads the block's input, not the inner Add's
    else:
        nodes.append(helper.make_node("Identity", [p + "r"], [p + "d"], name=p + "same"))
    operands = [p + "gamma", p + "d"] if order == "first" else [p + "d", p + "gamma"]
    nodes.append(helper.make_node("Mul", operands, [p + "s"], name=p + "scale"))
    if consumer == "add":
        reads = p + "s"
    else:
        reads = p + "t"
        if consumer == "conv":
            nodes.append(helper.make_node("Conv", [p + "s", p + "wq"], [p + "t"], name=p + "after"))
        else:
            nodes.append(helper.make_node(consumer.capitalize(), [p + "s"], [p + "t"], name=p + "after"))
    nodes += [helper.make_node("Add", [residual, reads], [p + "a"], name=p + "residual"),
              helper.make_node("Conv", [p + "a", p + "w2"], [p + "y"], name=p + "conv2", pads=pads)]
    return nodes, inits, [_vi(p + "x", [1, 3, *space])], [_vi(p + "y", [1, 4, *space])]


# A second round: VAN's block written out (the outer residual reading the block's input; its BatchNorm),
# constants of one value against varying ones, after a Relu, and esp-ppq's Mul before a Sin.
MUL_SCALE_PACK_2 = (("outer_add", "add2_outer", "add", "c11_small", "first", "2d"),
                    ("bn_add", "add2_bn", "add", "c11_small", "first", "2d"),
                    ("bn_add_rand", "add2_bn", "add", "c11_rand", "first", "2d"),
                    ("bn_add_second", "add2_bn", "add", "c11_small", "second", "2d"),
                    ("bn_add_nearly", "add2_bn", "add", "c11_nearly", "first", "2d"),
                    ("fork_add_rand", "conv_fork", "add", "c11_rand", "first", "2d"),
                    ("fork_add_nearly", "conv_fork", "add", "c11_nearly", "first", "2d"),
                    ("fork_add_scalar", "conv_fork", "add", "scalar_small", "first", "2d"),
                    ("fork_add_second", "conv_fork", "add", "c11_small", "second", "2d"),
                    ("relu_add_rand", "relu", "add", "c11_rand", "first", "2d"),
                    ("relu_add_unit", "relu", "add", "c11_unit", "first", "2d"),
                    ("fork_sin_half", "conv_fork", "sin", "c11_half", "first", "2d"),
                    ("fork_sin_scalar_unit", "conv_fork", "sin", "scalar_unit", "first", "2d"),
                    ("relu_sin_rand", "relu", "sin", "c11_rand", "first", "2d"),
                    ("fork_sin_nearly", "conv_fork", "sin", "c11_nearly", "first", "2d"))


CASES.append(Case("mul_scale_pack_2", "fresh4: a per-channel constant times a map, second round (VAN's block written out, constants of one value)",
                  lambda: _packed(_mul_scale_case, MUL_SCALE_PACK_2, 173, opset=14), ("rk3588", "rk3566")))
# A third round: VAN's attention has the projection read another map than the Add's other operand
# (Conv(Relu(Conv(r))) + r), where Conv(r) + r above may merge into one Conv.
MUL_SCALE_PACK_3 = (("apart_add", "add2_apart", "add", "c11_small", "first", "2d"),
                    ("apart_add_unit", "add2_apart", "add", "c11_unit", "first", "2d"),
                    ("apart_add_scalar", "add2_apart", "add", "scalar_small", "first", "2d"),
                    ("apart_add_1c11", "add2_apart", "add", "1c11_small", "first", "2d"),
                    ("apart_add_rand", "add2_apart", "add", "c11_rand", "first", "2d"),
                    ("apart_add_second", "add2_apart", "add", "c11_small", "second", "2d"),
                    ("apart_sin", "add2_apart", "sin", "c11_unit", "first", "2d"))


CASES.append(Case("mul_scale_pack_3", "fresh4: a per-channel constant times an Add of two maps, the projection reading another map (VAN's attention)",
                  lambda: _packed(_mul_scale_case, MUL_SCALE_PACK_3, 179, opset=14), ("rk3588", "rk3566")))
CASES.append(Case("mul_scale_pack", "fresh4: a per-channel constant times a map, by producer and reader (DAC's Snake, VAN's layer scale)",
                  lambda: _packed(_mul_scale_case, MUL_SCALE_PACK, 167, opset=14), ("rk3588", "rk3566")))


# ---- issue 27 (fresh4 DETR, GroupViT): the operands of 3-D batched attention on RK3566 ---------------

# Attention as transformers' CLIP-style classes (DETR, GroupViT, ...) write it: q scaled, then q, k
# and v each split into heads (Reshape [1, T, H, D], Transpose [0, 2, 1, 3]) and viewed to [H, T, D]
# for 3-D batched products, k swapped [0, 2, 1], the Softmax over the 3-D scores, attn @ v viewed
# back to [1, H, T, D], the heads merged, a Linear. Forms: "self" (k and v from the same tokens),
# "cross" (k and v from a second input of S tokens), "constq" (the query a constant: DETR's first
# decoder layer, whose queries the compiler folds), "mask4d" (the scores viewed to [1, H, T, S] for a
# mask Add and back before the Softmax, as DETR), "self4d" (the control: no 3-D views, 4-D products,
# k swapped [0, 1, 3, 2]). (name, form, T, S, H, D)
BATCHED_OPERANDS_PACK_SELF = (
    ("t4d32", "self", 4, 4, 2, 32), ("t20d32", "self", 20, 20, 2, 32), ("t16d32", "self", 16, 16, 2, 32),
    ("t24d32", "self", 24, 24, 2, 32), ("t16d12", "self", 16, 16, 4, 12), ("t16d16", "self", 16, 16, 2, 16),
    ("t49d16", "self", 49, 49, 4, 16), ("t12d16", "self", 12, 12, 2, 16), ("t8d8", "self", 8, 8, 2, 8),
)
# Measured with the pack above, not held: 2 heads of 20 over 32 tokens (RK3566: q's Transpose on the
# NPU where 4 heads of 12 over 16 tokens have it on the CPU; RK3588: the output Linear's 3-D [1, 32, 40]
# on the NPU where unaligned_3d_model_output has it on the CPU). docs/audit.md.
BATCHED_OPERANDS_UNMODELLED = (("t32d20", "self", 32, 32, 2, 20),)
BATCHED_OPERANDS_PACK_CROSS = (
    ("x20s4", "cross", 20, 4, 2, 32), ("x16s20", "cross", 16, 20, 2, 32), ("x20s16", "cross", 20, 16, 2, 32),
    ("x4s16", "cross", 4, 16, 2, 32), ("c20s4", "constq", 20, 4, 2, 32), ("c20s16", "constq", 20, 16, 2, 32),
    ("m4", "mask4d", 4, 4, 2, 32), ("m16", "mask4d", 16, 16, 2, 32), ("f20", "self4d", 20, 20, 2, 32),
    ("f16", "self4d", 16, 16, 2, 32),
)


def _batched_operands_case(rng, spec) -> tuple[list, list, list, list]:
    """One entry of BATCHED_OPERANDS_PACK_*: its nodes, initializers, inputs and output."""
    name, form, t, s, h, d = spec
    p = f"{name}_"
    node = _prefixed(p)
    c = h * d
    four = form == "self4d"
    inits = [_const(p + "q_heads", np.array([1, t, h, d], np.int64)), _const(p + "kv_heads", np.array([1, s, h, d], np.int64)),
             _const(p + "shape_q3", np.array([h, t, d], np.int64)), _const(p + "shape_kv3", np.array([h, s, d], np.int64)),
             _const(p + "out4", np.array([1, h, t, d], np.int64)), _const(p + "merged", np.array([1, t, c], np.int64)),
             _const(p + "scale", np.array(d ** -0.5, np.float32)), _const(p + "wo", _weights(rng, c, c))]
    inputs = [_vi(p + "x", [1, t, c])]
    kv_source = "x"
    if form in ("cross", "constq"):
        inputs = [_vi(p + "y", [1, s, c])] if form == "constq" else inputs + [_vi(p + "y", [1, s, c])]
        kv_source = "y"
    nodes = []
    for part in "qkv":
        src = kv_source if part in "kv" else "x"
        inits += [_const(p + f"w{part}", _weights(rng, c, c)), _const(p + f"b{part}", _weights(rng, c))]
        if part == "q" and form == "constq":
            inits.append(_const(p + "x", _weights(rng, 1, t, c)))
        nodes += [node("MatMul", [src, f"w{part}"], f"{part}0"), node("Add", [f"{part}0", f"b{part}"], f"{part}1")]
        first = f"{part}1"
        if part == "q":
            nodes.append(node("Mul", ["q1", "scale"], "q1s"))
            first = "q1s"
        nodes += [node("Reshape", [first, "q_heads" if part == "q" else "kv_heads"], f"{part}2"),
                  node("Transpose", [f"{part}2"], f"{part}3", perm=[0, 2, 1, 3])]
        if not four:
            nodes.append(node("Reshape", [f"{part}3", "shape_q3" if part == "q" else "shape_kv3"], part))
    if four:
        nodes += [node("Transpose", ["k3"], "kt", perm=[0, 1, 3, 2]), node("MatMul", ["q3", "kt"], "scores"),
                  node("Softmax", ["scores"], "probs", axis=-1), node("MatMul", ["probs", "v3"], "o4")]
    else:
        nodes += [node("Transpose", ["k"], "kt", perm=[0, 2, 1]), node("MatMul", ["q", "kt"], "s3")]
        scores = "s3"
        if form == "mask4d":
            mask = np.zeros((1, 1, t, s), np.float32)
            mask[..., s - 1:] = -100.0
            inits += [_const(p + "s4", np.array([1, h, t, s], np.int64)), _const(p + "s3b", np.array([h, t, s], np.int64)), _const(p + "mask", mask)]
            nodes += [node("Reshape", ["s3", "s4"], "s4v"), node("Add", ["s4v", "mask"], "s4m"), node("Reshape", ["s4m", "s3b"], "s3m")]
            scores = "s3m"
        nodes += [node("Softmax", [scores], "probs", axis=-1), node("MatMul", ["probs", "v"], "o3"), node("Reshape", ["o3", "out4"], "o4")]
    nodes += [node("Transpose", ["o4"], "o_t", perm=[0, 2, 1, 3]), node("Reshape", ["o_t", "merged"], "o"), node("MatMul", ["o", "wo"], "y_out")]
    return nodes, inits, inputs, [_vi(p + "y_out", [1, t, c])]


CASES.append(Case("batched_operands_pack_self", "fresh4: the operands of 3-D batched attention (DETR, GroupViT): which swap of k or v is a Transpose layer",
                  lambda: _packed(_batched_operands_case, BATCHED_OPERANDS_PACK_SELF, 131, used_only=True, opset=17), ("rk3566", "rk3588")))
CASES.append(Case("batched_operands_pack_cross", "fresh4: the operands of 3-D batched attention (DETR, GroupViT): which swap of k or v is a Transpose layer",
                  lambda: _packed(_batched_operands_case, BATCHED_OPERANDS_PACK_CROSS, 132, used_only=True, opset=17), ("rk3566", "rk3588")))


# ---- issue 27 (fresh4 YOLO-World, fresh3 WavLM): a Transpose into a product by a constant ---------------

# A Transpose whose result is the first operand of a MatMul by a constant (a Linear), on RK3566:
# "map" is YOLO-World's max-sigmoid attention (a 1x1 Conv's map [1, H*D, h, w] viewed [1, H, D, h*w],
# Transposed [0, 1, 3, 2], times the text guide [1, H, D, N], ReduceMax over N, viewed [1, H, h, w],
# scaled, a Sigmoid, multiplied into a second Conv's heads); "map2" the same viewed in two steps
# ([1, H, D, h, w] then [1, H, D, h*w]) as Ultralytics writes it; "mapx" that with a Relu of the input
# for the embedding, no Conv (Ultralytics' ec is None where the channels match); "heads" is WavLM's gates (tokens
# [1, T, C] through a Linear, the heads split [1, T, H, D] and Transposed [0, 2, 1, 3], a Linear to 8,
# viewed [1, H, T, 2, 4] and summed over the last axis, a Sigmoid); "heads_relu" the same Linear to 8
# read by a Relu; "mapt" the map's tokens into the guide, read by a Relu (the output); "mix" the control that moves the channels away from the last axis (tokens swapped
# [0, 2, 1], a Linear over the tokens, MLP-Mixer's token mixing). (name, form, H, D, h, w or T)
CONSTANT_PRODUCT_PACK = (
    ("mapt_h2_10", "mapt", 2, 32, 10, 10), ("mapt_h4_5", "mapt", 4, 32, 5, 5), ("mapt_h2_8", "mapt", 2, 32, 8, 8),
    ("heads_relu_t199", "heads_relu", 2, 32, 199, None), ("heads_relu_t16", "heads_relu", 2, 32, 16, None),
    ("heads_relu_t20", "heads_relu", 4, 16, 20, None), ("mix_t20", "mix", 2, 32, 20, None),
)
# Measured with the pack (RK3566 and RK3588, 2026-12-04), not held: what follows the product in
# YOLO-World's block and WavLM's gates view, and one head of a map or heads of 12 (docs/audit.md).
CONSTANT_PRODUCT_MEASURED = (
    ("map_h2_10", "map", 2, 32, 10, 10), ("map_h1_20", "map", 1, 32, 20, 20), ("map_h4_5", "map", 4, 32, 5, 5),
    ("map_h2_8", "map", 2, 32, 8, 8), ("map_h1_5", "map", 1, 32, 5, 5), ("map2_h2_10", "map2", 2, 32, 10, 10),
    ("map_h2_10_d12", "map", 2, 12, 10, 10), ("map2_h1_20", "map2", 1, 32, 20, 20), ("mapx_h1_20", "mapx", 1, 32, 20, 20),
    ("mapx_h2_10", "mapx", 2, 32, 10, 10),
    ("heads_t199", "heads", 2, 32, 199, None), ("heads_t16", "heads", 2, 32, 16, None), ("heads_t20", "heads", 4, 16, 20, None),
    ("mix_t16", "mix", 2, 32, 16, None),
)


def _constant_product_case(rng, spec) -> tuple[list, list, list, list]:
    """One entry of CONSTANT_PRODUCT_PACK."""
    name, form, h, d, a, b = spec
    p = f"{name}_"
    node = _prefixed(p)
    c = h * d
    if form == "mapt":  # the map's tokens into the guide, read by a Relu, the output
        hw = a * b
        inits = [_const(p + "w_embed", _weights(rng, c, c, 1, 1)), _const(p + "guide", _weights(rng, 1, h, d, 8)),
                 _const(p + "tokens", np.array([1, h, d, hw], np.int64))]
        nodes = [node("Conv", ["x", "w_embed"], "embed"), node("Reshape", ["embed", "tokens"], "embed_t"),
                 node("Transpose", ["embed_t"], "embed_s", perm=[0, 1, 3, 2]), node("MatMul", ["embed_s", "guide"], "aw"), node("Relu", ["aw"], "y")]
        return nodes, inits, [_vi(p + "x", [1, c, a, b])], [_vi(p + "y", [1, h, hw, 8])]
    if form in ("map", "map2", "mapx"):
        n, hw = 8, a * b
        inits = [_const(p + "w_embed", _weights(rng, c, c, 1, 1)), _const(p + "w_proj", _weights(rng, c, c, 1, 1)),
                 _const(p + "guide", _weights(rng, 1, h, d, n)), _const(p + "tokens", np.array([1, h, d, hw], np.int64)),
                 _const(p + "grid5", np.array([1, h, d, a, b], np.int64)), _const(p + "grid", np.array([1, h, a, b], np.int64)),
                 _const(p + "scale", np.float32(d ** 0.5)), _const(p + "bias", _weights(rng, 1, h, 1, 1)), _const(p + "gain", np.float32(1.5)),
                 _const(p + "axis2", np.array([2], np.int64)), _const(p + "map", np.array([1, c, a, b], np.int64))]
        # "mapx": the map itself is the embedding (Ultralytics' ec is None when the channels match), in two steps
        nodes = [node("Conv", ["x", "w_embed"], "embed")] if form != "mapx" else [node("Relu", ["x"], "embed")]
        if form in ("map2", "mapx"):
            nodes += [node("Reshape", ["embed", "grid5"], "embed5"), node("Reshape", ["embed5", "tokens"], "embed_t")]
        else:
            nodes.append(node("Reshape", ["embed", "tokens"], "embed_t"))
        nodes += [node("Transpose", ["embed_t"], "embed_s", perm=[0, 1, 3, 2]), node("MatMul", ["embed_s", "guide"], "aw"),
                  node("ReduceMax", ["aw"], "awm", axes=[-1], keepdims=0), node("Reshape", ["awm", "grid"], "awg"),
                  node("Div", ["awg", "scale"], "aws"), node("Add", ["aws", "bias"], "awb"), node("Sigmoid", ["awb"], "sig"),
                  node("Mul", ["sig", "gain"], "gate"), node("Unsqueeze", ["gate", "axis2"], "gate5"),
                  node("Conv", ["x", "w_proj"], "proj"), node("Reshape", ["proj", "grid5"], "proj5"), node("Mul", ["proj5", "gate5"], "gated"),
                  node("Reshape", ["gated", "map"], "y")]
        return nodes, inits, [_vi(p + "x", [1, c, a, b])], [_vi(p + "y", [1, c, a, b])]
    t = a
    inits = [_const(p + "w_in", _weights(rng, c, c)), _const(p + "b_in", _weights(rng, c)), _const(p + "heads", np.array([1, t, h, d], np.int64)),
             _const(p + "w8", _weights(rng, d, 8)), _const(p + "b8", _weights(rng, 8)), _const(p + "five", np.array([1, h, t, 2, 4], np.int64)),
             _const(p + "last", np.array([-1], np.int64)), _const(p + "w_mix", _weights(rng, t, t))]
    nodes = [node("MatMul", ["x", "w_in"], "lin0"), node("Add", ["lin0", "b_in"], "lin")]
    if form == "mix":
        nodes += [node("Transpose", ["lin"], "swapped", perm=[0, 2, 1]), node("MatMul", ["swapped", "w_mix"], "mixed"), node("Relu", ["mixed"], "y")]
        return nodes, inits, [_vi(p + "x", [1, t, c])], [_vi(p + "y", [1, c, t])]
    nodes += [node("Reshape", ["lin", "heads"], "split"), node("Transpose", ["split"], "q", perm=[0, 2, 1, 3]),
              node("MatMul", ["q", "w8"], "g0"), node("Add", ["g0", "b8"], "g")]
    if form == "heads_relu":
        nodes.append(node("Relu", ["g"], "y"))
        return nodes, inits, [_vi(p + "x", [1, t, c])], [_vi(p + "y", [1, h, t, 8])]
    nodes += [node("Reshape", ["g", "five"], "g5"), node("ReduceSum", ["g5", "last"], "gs", keepdims=0), node("Sigmoid", ["gs"], "y")]
    return nodes, inits, [_vi(p + "x", [1, t, c])], [_vi(p + "y", [1, h, t, 2])]


CASES.append(Case("constant_product_pack", "fresh4/fresh3: a Transpose into a product by a constant (YOLO-World's max-sigmoid attention, WavLM's gates)",
                  lambda: _packed(_constant_product_case, CONSTANT_PRODUCT_PACK, 133, used_only=True, opset=13), ("rk3566",)))


# ---- fresh4 (transformers' Funnel): a Concat of two Slices of one tensor, by rank -----------------

# (name, shape, slices, slice axis, concat axis, sources): a Relu of the input, two Slices of it
# ((start, end) each, step 1, or (start, end, step)), Concat, a Relu as the model output. Funnel's
# pooling shifts its tokens right by one before the mean pool: Concat(x[:, :1], x[:, :-1]) on
# [1, 32, 64]. rknn-toolkit2 2.5.0's fuse_slice_slice_concat_to_conv rewrites such a pair into one
# Conv, which fails on a tensor of rank other than 4 (one model each: a crash ends the build).
# sources: "one" (both Slices read the Relu), "two" (the second reads a Sigmoid of the input).
SLICE_PAIR_FORMS = {
    "funnel_shift_r3": ((1, 32, 64), ((0, 1), (0, -1)), 1, 1, "one"),
    "roll_r3": ((1, 32, 64), ((-1, 32), (0, -1)), 1, 1, "one"),
    "halves_swapped_r3": ((1, 32, 64), ((16, 32), (0, 16)), 1, 1, "one"),
    "identity_split_r3": ((1, 32, 64), ((0, 1), (1, 32)), 1, 1, "one"),
    "last_axis_r3": ((1, 32, 64), ((0, 1), (0, -1)), 2, 2, "one"),
    "step2_r3": ((1, 32, 64), ((0, 32, 2), (1, 32, 2)), 1, 1, "one"),
    "shift_r2": ((32, 64), ((0, 1), (0, -1)), 1, 1, "one"),
    "shift_r5": ((1, 2, 16, 8, 8), ((0, 1), (0, -1)), 2, 2, "one"),
    "shift_r4": ((1, 16, 8, 8), ((0, 1), (0, -1)), 1, 1, "one"),
    "shift_r4_axis3": ((1, 16, 8, 8), ((0, 1), (0, -1)), 3, 3, "one"),
    "two_sources_r3": ((1, 32, 64), ((0, 1), (0, -1)), 1, 1, "two"),
    "across_axes_r3": ((1, 32, 64), ((0, 16), (16, 32)), 1, 2, "one"),
    "three_slices_r3": ((1, 32, 64), ((0, 1), (0, 8), (0, -1)), 1, 1, "one"),
}


def slice_pair_concat(shape, slices, axis: int, concat_axis: int, sources: str) -> onnx.ModelProto:
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu_in")]
    inits = [_const("axes", np.array([axis], np.int64))]
    if sources == "two":
        nodes.append(helper.make_node("Sigmoid", ["x"], ["r2"], name="sigmoid_in"))
    parts = []
    for i, bounds in enumerate(slices):
        start, end, step = (*bounds, 1)[:3]
        inits += [_const(f"start{i}", np.array([start], np.int64)), _const(f"end{i}", np.array([end], np.int64)), _const(f"step{i}", np.array([step], np.int64))]
        source = "r2" if sources == "two" and i == 1 else "r"
        nodes.append(helper.make_node("Slice", [source, f"start{i}", f"end{i}", "axes", f"step{i}"], [f"part{i}"], name=f"slice{i}"))
        parts.append(f"part{i}")
    nodes += [helper.make_node("Concat", parts, ["c"], name="concat", axis=concat_axis), helper.make_node("Relu", ["c"], ["y"], name="relu_out")]
    model = _model(nodes, [_vi("x", list(shape))], [_vi("y", None)], inits, opset=14)
    inferred = onnx.shape_inference.infer_shapes(model).graph.output[0]
    model.graph.output[0].CopyFrom(inferred)
    return model


CASES += [Case(f"slice_pair_{name}", "fresh4: a Concat of two Slices of one tensor (transformers' Funnel shifts its tokens before pooling)",
               lambda f=f: slice_pair_concat(*f), ("rk3588", "rk3566")) for name, f in SLICE_PAIR_FORMS.items()]


# ---- fresh4 (transformers' TimeSformer): which Tile runs on RK3588's NPU -----------------------

# TimeSformer repeats its class token over the frames: [1, 64] -> Unsqueeze -> Expand [1, 1, 64]
# -> Tile [1, 4, 1] -> Reshape [4, 1, 64], where GC ViT's query tiled over the windows
# ([1, 2, 2, C], repeats [4, 1, 1, 1]) runs on RK3588's CPU. Entries as TILE_ONES_PACK's:
# (name, input shape, repeats, producer), by rank and by the axis repeated.
TILE_AXIS_PACK = (
    ("r3_axis1_expand", (1, 1, 64), (1, 4, 1), "expand"),
    ("r3_axis1_relu", (1, 1, 64), (1, 4, 1), "relu"),
    ("r3_axis0_relu", (1, 1, 64), (4, 1, 1), "relu"),
    ("r3_axis0_expand", (1, 1, 64), (4, 1, 1), "expand"),
    ("r3_axis2_relu", (1, 1, 64), (1, 1, 4), "relu"),
    ("r3_axis1_wide_relu", (1, 16, 32), (1, 2, 1), "relu"),
    ("r2_axis0_relu", (1, 64), (4, 1), "relu"),
    ("r2_axis1_relu", (1, 64), (1, 4), "relu"),
    ("r4_axis1_relu", (1, 8, 4, 4), (1, 2, 1, 1), "relu"),
    ("r4_axis2_relu", (1, 8, 4, 4), (1, 1, 2, 1), "relu"),
    ("r4_axis3_expand_nhwc", (1, 4, 4, 32), (1, 1, 1, 4), "expand"),
    ("r4_hw_relu", (1, 8, 4, 4), (1, 1, 2, 2), "relu"),
    ("r4_axis0_relu", (1, 8, 4, 4), (2, 1, 1, 1), "relu"),
)
CASES.append(Case("tile_axis_pack", "fresh4: a Tile by rank and by the axis it repeats (TimeSformer's class token over the frames)",
                  lambda: _packed(_tile_case, TILE_AXIS_PACK, 191), ("rk3588", "rk3566")))


# ---- fresh4 (transformers' SpeechT5 HiFi-GAN): a model input normalised by constants ---------------

# The vocoder normalises its spectrogram [1, T, 80] by its mean and scale ([80] each: Sub, Div),
# swaps it to [1, 80, T] and runs a Conv1d (k = 7). (name, input shape, operations, constant,
# producer, reader): operations a string of "s" (Sub), "d" (Div), "m" (Mul) in order; constant
# "vec" (one value per position of the last axis, varying), "scalar", "identity" ([C] zeros to
# subtract, ones to divide or multiply by: the checkpoint's mean and scale as initialised) or
# "identity_scalar"; producer "input" (the
# model input itself) or "relu"; reader "swap_conv" (Transpose [0, 2, 1], Conv1d without a bias),
# "swap_conv_bias" (with one, as the vocoder's), "relu".
NORMALISED_INPUT_PACK = (
    ("hifigan", (1, 32, 80), "sd", "vec", "input", "swap_conv"),
    ("after_relu", (1, 32, 80), "sd", "vec", "relu", "swap_conv"),
    ("scalars", (1, 32, 80), "sd", "scalar", "input", "swap_conv"),
    ("sub_only", (1, 32, 80), "s", "vec", "input", "swap_conv"),
    ("div_only", (1, 32, 80), "d", "vec", "input", "swap_conv"),
    ("sub_mul", (1, 32, 80), "sm", "vec", "input", "swap_conv"),
    ("c64", (1, 32, 64), "sd", "vec", "input", "swap_conv"),
    ("t16_c80", (1, 16, 80), "sd", "vec", "input", "swap_conv"),
    ("hifigan_bias", (1, 32, 80), "sd", "vec", "input", "swap_conv_bias"),
    ("after_relu_bias", (1, 32, 80), "sd", "vec", "relu", "swap_conv_bias"),
    ("scalars_bias", (1, 32, 80), "sd", "scalar", "input", "swap_conv_bias"),
    ("sub_only_bias", (1, 32, 80), "s", "vec", "input", "swap_conv_bias"),
    ("div_only_bias", (1, 32, 80), "d", "vec", "input", "swap_conv_bias"),
    ("c64_bias", (1, 32, 64), "sd", "vec", "input", "swap_conv_bias"),
    ("hifigan_initial", (1, 32, 80), "sd", "identity", "input", "swap_conv_bias"),
    ("initial_after_relu", (1, 32, 80), "sd", "identity", "relu", "swap_conv_bias"),
    ("initial_read_by_relu", (1, 32, 80), "sd", "identity", "input", "relu"),
    ("sub_zeros_only", (1, 32, 80), "s", "identity", "input", "swap_conv_bias"),
    ("div_ones_only", (1, 32, 80), "d", "identity", "input", "swap_conv_bias"),
    ("mul_ones_only", (1, 32, 80), "m", "identity", "input", "swap_conv_bias"),
    ("initial_scalars", (1, 32, 80), "sd", "identity_scalar", "input", "swap_conv_bias"),
)


def _normalised_input_case(rng, spec) -> tuple[list, list, list, list]:
    name, shape, ops, constant, producer, reader = spec
    p = f"norm_{name}_"
    c = shape[-1]
    nodes, inits, x = [], [], p + "x"
    if producer == "relu":
        nodes.append(helper.make_node("Relu", [x], [p + "r"], name=p + "relu_in"))
        x = p + "r"
    for i, op in enumerate(ops):
        kind = {"s": "Sub", "d": "Div", "m": "Mul"}[op]
        if constant.startswith("identity"):  # the vocoder's buffers as transformers initialises them: mean 0, scale 1
            values = np.full(c if constant == "identity" else (), 0.0 if op == "s" else 1.0)
        else:
            values = rng.uniform(0.5, 2.0, c) if constant == "vec" else np.array(rng.uniform(0.5, 2.0))
        inits.append(_const(p + f"k{i}", values.astype(np.float32)))
        nodes.append(helper.make_node(kind, [x, p + f"k{i}"], [p + f"o{i}"], name=p + kind.lower()))
        x = p + f"o{i}"
    if reader.startswith("swap_conv"):
        inits.append(_const(p + "w", _weights(rng, 16, c, 7)))
        weights = [p + "t", p + "w"]
        if reader == "swap_conv_bias":  # the vocoder's conv_pre has a bias
            inits.append(_const(p + "b", _weights(rng, 16)))
            weights.append(p + "b")
        nodes += [helper.make_node("Transpose", [x], [p + "t"], name=p + "swap", perm=[0, 2, 1]),
                  helper.make_node("Conv", weights, [p + "y"], name=p + "conv", pads=[3, 3])]
        out = [1, 16, shape[1]]
    else:
        nodes.append(helper.make_node("Relu", [x], [p + "y"], name=p + "relu_out"))
        out = list(shape)
    return nodes, inits, [_vi(p + "x", list(shape))], [_vi(p + "y", out)]


CASES.append(Case("normalised_input_pack", "fresh4: a model input normalised by per-position constants, then swapped into a Conv1d (SpeechT5's HiFi-GAN)",
                  lambda: _packed(_normalised_input_case, NORMALISED_INPUT_PACK, 193), ("rk3588", "rk3566")))


# ---- fresh4 (transformers' EnCodec): a Slice that keeps its whole input ----------------------------

# EnCodec's reflect padding ends in padded[..., :end] with end the padded length (nothing dropped):
# a Slice whose result is its input. (name, input shape, producer, pad, end): producer
# "reflect_pad" (a Relu, then a reflect Pad by `pad` on each side of the last axis: on the CPU for
# [1, 1, L], the NPU for [1, C, L], C > 1), "input_pad" (the model input padded so, as EnCodec's
# first layer), "relu"; end "full" (the padded length), "max" (INT64_MAX, as x[..., :] exports),
# "short" (one step less: a real Slice); read by a Conv1d (k = 7).
WHOLE_SLICE_PACK = (
    ("pad_full", (1, 8, 64), "reflect_pad", 3, "full"),
    ("pad_max", (1, 8, 64), "reflect_pad", 3, "max"),
    ("pad_short", (1, 8, 64), "reflect_pad", 3, "short"),
    ("c1_pad64_full", (1, 1, 576), "reflect_pad", 64, "full"),
    ("c1_pad64_max", (1, 1, 576), "reflect_pad", 64, "max"),
    ("c1_pad64_short", (1, 1, 576), "reflect_pad", 64, "short"),
    ("input_c1_pad64_full", (1, 1, 576), "input_pad", 64, "full"),
    ("input_c1_long_full", (1, 1, 4000), "input_pad", 3, "full"),
    ("relu_full", (1, 8, 64), "relu", 0, "full"),
    ("relu_short", (1, 8, 64), "relu", 0, "short"),
)


def _whole_slice_case(rng, spec) -> tuple[list, list, list, list]:
    name, shape, producer, pad, end = spec
    p = f"whole_{name}_"
    c, length = shape[1], shape[2]
    nodes, x = [], p + "x"
    inits = [_const(p + "w", _weights(rng, 8, c, 7)), _const(p + "start", np.array([0], np.int64)), _const(p + "axes", np.array([2], np.int64)), _const(p + "step", np.array([1], np.int64))]
    if producer == "relu":
        nodes.append(helper.make_node("Relu", [x], [p + "s"], name=p + "relu"))
    else:
        if producer == "reflect_pad":
            nodes.append(helper.make_node("Relu", [x], [p + "r"], name=p + "relu"))
            x = p + "r"
        inits.append(_const(p + "pads", np.array([0, 0, pad, 0, 0, pad], np.int64)))
        nodes.append(helper.make_node("Pad", [x, p + "pads"], [p + "s"], name=p + "pad", mode="reflect"))
        length += 2 * pad
    stop = {"full": length, "max": np.iinfo(np.int64).max, "short": length - 1}[end]
    inits.append(_const(p + "end", np.array([stop], np.int64)))
    kept = length if end != "short" else length - 1
    nodes += [helper.make_node("Slice", [p + "s", p + "start", p + "end", p + "axes", p + "step"], [p + "k"], name=p + "slice"),
              helper.make_node("Conv", [p + "k", p + "w"], [p + "y"], name=p + "conv")]
    return nodes, inits, [_vi(p + "x", list(shape))], [_vi(p + "y", [1, 8, kept - 6])]


CASES.append(Case("whole_slice_pack", "fresh4: a Slice that keeps its whole input, after a CPU reflect Pad (EnCodec's padding)",
                  lambda: _packed(_whole_slice_case, WHOLE_SLICE_PACK, 197, opset=14), ("rk3588", "rk3566")))
# A second round: the sizes of the repeated axes (1 or more) at ranks 2 and 3, and one spatial axis at rank 4.
TILE_AXIS_PACK_2 = (
    ("r3_last_of_one", (1, 4, 1), (1, 1, 8), "relu"),
    ("r3_batch2_axis1", (2, 1, 64), (1, 4, 1), "relu"),
    ("r3_two_axes_of_one", (1, 1, 64), (4, 4, 1), "relu"),
    ("r3_axis1_of_two", (1, 2, 64), (1, 2, 1), "relu"),
    ("r3_axis0_of_four", (4, 1, 64), (2, 1, 1), "relu"),
    ("r2_last_of_one", (4, 1), (1, 8), "relu"),
    ("r2_axis0_of_four", (4, 64), (2, 1), "relu"),
    ("r4_h_of_one", (1, 8, 1, 4), (1, 1, 4, 1), "relu"),
    ("r4_w", (1, 8, 4, 4), (1, 1, 1, 2), "relu"),
    ("r4_h_by_3", (1, 8, 4, 4), (1, 1, 3, 1), "relu"),
    ("r4_channel_of_one", (1, 1, 4, 4), (1, 8, 1, 1), "relu"),
    ("r4_batch2_h", (2, 8, 4, 4), (1, 1, 2, 1), "relu"),
)
CASES.append(Case("tile_axis_pack_2", "fresh4: a Tile by the sizes of the axes it repeats (TimeSformer's class token over the frames)",
                  lambda: _packed(_tile_case, TILE_AXIS_PACK_2, 199), ("rk3588", "rk3566")))

# ---- issue 27 (fresh4 Nyströmformer): what else reads attention's transposed heads ---------------------------

# 4-D attention over T tokens, heads of D (q, k, v each a Linear, split, Transposed [0, 2, 1, 3], q
# divided by a scale, k swapped [0, 1, 3, 2], Softmax, attn @ v, merged, a Linear), with one more
# reader of a transposed tensor: "base" none; "mean_q" q also averaged over the tokens (ReduceMean
# axis 2, Nyströmformer's landmarks) and Added to the result; "mean_last_q" q also averaged over its
# last axis and Added to the scores; "conv_v" v also through a depthwise Conv over [1, H, T, D] (its
# heads as channels, Nyströmformer) Added to the result; "relu_v" v also through a Relu Added to the
# result; "two_k" the swapped key read by two products (q @ k^T and Relu(q) @ k^T Added); "seg_q" q
# also viewed into 8 segments of tokens [1, H, 8, T/8, D] and averaged over each (Nyströmformer's
# landmarks); "seg_q_prod" those landmarks times k^T, a Softmax, times v; "seg_k_two" k's landmarks swapped [0, 1, 3, 2] and read
# by two products (q @ kl^T and Relu(q) @ kl^T, a Softmax, times v's landmarks);
# "seg_k_one" the same with one product. The seg_* forms Add their landmarks' mean (one value per
# head) to the scores.
# (name, form, T, H, D)
TRANSPOSE_READERS_PACK = (
    ("base", "base", 32, 2, 32), ("conv_v", "conv_v", 32, 2, 32), ("two_k", "two_k", 32, 2, 32), ("conv_v16", "conv_v", 16, 2, 32),
    ("seg_q_prod", "seg_q_prod", 32, 2, 32), ("seg_k_two", "seg_k_two", 32, 2, 32), ("seg_k_one", "seg_k_one", 32, 2, 32),
)
# Measured with the pack (RK3566, 2026-12-04), not held (docs/audit.md): q also averaged over the
# tokens or the value through a Relu, Added to attn @ v (the heads' merge after that Add on the NPU,
# where the audit has it on the CPU); q also averaged over its last axis (q's Transpose on the CPU);
# q's landmarks swapped into a product with q (the value, also cut, on the NPU; that product on the CPU).
TRANSPOSE_READERS_MEASURED = (
    ("seg_q", "seg_q", 32, 2, 32), ("seg_q16", "seg_q", 16, 2, 32),
    ("mean_q", "mean_q", 32, 2, 32), ("mean_last_q", "mean_last_q", 32, 2, 32), ("relu_v", "relu_v", 32, 2, 32),
    ("mean_q16", "mean_q", 16, 2, 32),
)


def _transpose_readers_case(rng, spec) -> tuple[list, list, list, list]:
    """One entry of TRANSPOSE_READERS_PACK."""
    name, form, t, h, d = spec
    p = f"tr_{name}_"
    node = _prefixed(p)
    c = h * d
    inits = [_const(p + "heads", np.array([1, t, h, d], np.int64)), _const(p + "merged", np.array([1, t, c], np.int64)),
             _const(p + "scale", np.float32(d ** 0.5)), _const(p + "half", np.float32(2.0)), _const(p + "wo", _weights(rng, c, c)),
             _const(p + "wconv", _weights(rng, h, 1, 3, 1))]
    nodes = []
    for part in "qkv":
        inits += [_const(p + f"w{part}", _weights(rng, c, c)), _const(p + f"b{part}", _weights(rng, c))]
        nodes += [node("MatMul", ["x", f"w{part}"], f"{part}0"), node("Add", [f"{part}0", f"b{part}"], f"{part}1"),
                  node("Reshape", [f"{part}1", "heads"], f"{part}2"), node("Transpose", [f"{part}2"], f"{part}3", perm=[0, 2, 1, 3])]
    nodes += [node("Div", ["q3", "scale"], "qs"), node("Transpose", ["k3"], "kt", perm=[0, 1, 3, 2]), node("MatMul", ["qs", "kt"], "s0")]
    scores = "s0"
    if form == "two_k":
        nodes += [node("Relu", ["qs"], "q_half"), node("MatMul", ["q_half", "kt"], "s1"), node("Add", ["s0", "s1"], "s2")]
        scores = "s2"
    if form == "mean_last_q":
        nodes += [node("ReduceMean", ["qs"], "q_mean", axes=[-1], keepdims=1), node("Add", ["s0", "q_mean"], "s2")]
        scores = "s2"
    if form.startswith("seg_"):
        inits.append(_const(p + "segments", np.array([1, h, 8, t // 8, d], np.int64)))
        part = "qs" if form.startswith("seg_q") else "k3"
        nodes += [node("Reshape", [part, "segments"], "seg"), node("ReduceMean", ["seg"], "landmarks", axes=[-2], keepdims=0)]
        extra = "landmarks" if form == "seg_q" else "extra"
        if form == "seg_q_prod":
            nodes += [node("MatMul", ["landmarks", "kt"], "ls"), node("Softmax", ["ls"], "lp", axis=-1), node("MatMul", ["lp", "v3"], "lo"),
                      node("ReduceMean", ["lo"], "extra", axes=[2], keepdims=1)]
        else:
            nodes += [node("Reshape", ["v3", "segments"], "vseg"), node("ReduceMean", ["vseg"], "vl", axes=[-2], keepdims=0),
                      node("Transpose", ["landmarks"], "klt", perm=[0, 1, 3, 2]), node("MatMul", ["qs", "klt"], "ks")]
            ks = "ks"
            if form == "seg_k_two":
                nodes += [node("Relu", ["qs"], "q_relu"), node("MatMul", ["q_relu", "klt"], "ks2"), node("Add", ["ks", "ks2"], "ks3")]
                ks = "ks3"
            nodes += [node("Softmax", [ks], "kp", axis=-1), node("MatMul", ["kp", "vl"], "extra")]
        # the landmarks' result averaged to one value per head and Added to the scores (not to the
        # result, whose heads' merge after an Add is placed by what made the Add's operands)
        nodes += [node("ReduceMean", [extra], "extra1", axes=[2, 3], keepdims=1), node("Add", ["s0", "extra1"], "s_seg")]
        scores = "s_seg"
    nodes += [node("Softmax", [scores], "probs", axis=-1), node("MatMul", ["probs", "v3"], "o4")]
    out = "o4"
    if form == "mean_q":
        nodes += [node("ReduceMean", ["qs"], "q_mean", axes=[2], keepdims=1), node("Add", ["o4", "q_mean"], "o5")]
        out = "o5"
    elif form == "conv_v":
        nodes += [node("Conv", ["v3", "wconv"], "v_conv", group=h, pads=[1, 0, 1, 0]), node("Add", ["o4", "v_conv"], "o5")]
        out = "o5"
    elif form == "relu_v":
        nodes += [node("Relu", ["v3"], "v_relu"), node("Add", ["o4", "v_relu"], "o5")]
        out = "o5"
    nodes += [node("Transpose", [out], "o_t", perm=[0, 2, 1, 3]), node("Reshape", ["o_t", "merged"], "o"), node("MatMul", ["o", "wo"], "y")]
    return nodes, inits, [_vi(p + "x", [1, t, c])], [_vi(p + "y", [1, t, c])]


CASES.append(Case("transpose_readers_pack", "fresh4: what else reads attention's transposed heads (Nyströmformer's landmarks and value convolution)",
                  lambda: _packed(_transpose_readers_case, TRANSPOSE_READERS_PACK, 137, used_only=True, opset=13), ("rk3566", "rk3588")))


# ---- fresh4 (YOLO-World) on RK3588: the max-sigmoid gate after the CPU ReduceMax --------------------

# CONSTANT_PRODUCT_PACK's "map" block (ReduceMax over the guide's N, keepdims 0, viewed [1, H, h, w],
# scaled, biased, a Sigmoid and a gain, Unsqueezed to [1, H, 1, h, w] for the heads' Mul) by heads and
# map size: the view joins the CPU ReduceMax, the Unsqueeze runs on the CPU by h*w (RK3588).
MAX_SIGMOID_PACK = (
    ("gate_h2_10", "map", 2, 32, 10, 10), ("gate_h2_8", "map", 2, 32, 8, 8), ("gate_h4_5", "map", 4, 32, 5, 5),
    ("gate_h2_4", "map", 2, 32, 4, 4), ("gate_h2_12", "map", 2, 32, 12, 12), ("gate_h2_6", "map", 2, 32, 6, 6),
    ("gate_h2_16", "map", 2, 32, 16, 16), ("gate_h4_8", "map", 4, 32, 8, 8), ("gate_h3_10", "map", 3, 32, 10, 10),
    ("gate_h1_20", "map", 1, 32, 20, 20), ("gate_h2_4x8", "map", 2, 32, 4, 8), ("gate_h2_20", "map", 2, 32, 20, 20),
)
CASES.append(Case("max_sigmoid_pack", "fresh4: YOLO-World's max-sigmoid gate after its CPU ReduceMax, by heads and map size",
                  lambda: _packed(_constant_product_case, MAX_SIGMOID_PACK, 223, used_only=True, opset=13), ("rk3588",)))


# ---- fresh4 (transformers' SAM) on RK3588: the decomposed relative positions' outer sum ------------

# SAM's vision attention adds rel_h[:, :, :, :, None] + rel_w[:, :, :, None, :] to its scores:
# q [B, a, b, C] (B windows times heads) with the height and width tables [a, k, C] and [b, k, C]
# as Einsums bhwc,hkc->bhwk and bhwc,wkc->bhwk, Unsqueezed at 4 and at 3, added ([B, a, b, k, k]),
# viewed [B, a*b, k*k] and added to the scores (a second input, through a Relu), read by a Relu.
# (name, B, a (= b = k), C)
# (Measured, not held: 2 windows of 6x6, whose view [2, 36, 36] and the scores' Add after it also ran on
# RK3588's CPU; and RK3566, where both Unsqueezes and the 3-D output's Relu ran on the CPU in every block.)
REL_POS_SUM_PACK = (("sam_windows", 8, 4, 32), ("sam_global", 2, 8, 32), ("b2_s16", 2, 16, 32), ("b4_s4_c16", 4, 4, 16),
                    ("b1_s8_c64", 1, 8, 64), ("b2_s12", 2, 12, 32))


def _rel_pos_sum_case(rng, spec) -> tuple[list, list, list, list]:
    name, b, s, c = spec
    p = f"relpos_{name}_"
    node = _prefixed(p)
    inits = [_const(p + "rh", _weights(rng, s, s, c)), _const(p + "rw", _weights(rng, s, s, c)),
             _const(p + "ax4", np.array([4], np.int64)), _const(p + "ax3", np.array([3], np.int64)),
             _const(p + "flat", np.array([b, s * s, s * s], np.int64))]
    nodes = [node("Relu", ["q_in"], "q"), node("Relu", ["scores_in"], "scores"),
             node("Einsum", ["q", "rh"], "rel_h", equation="bhwc,hkc->bhwk"), node("Einsum", ["q", "rw"], "rel_w", equation="bhwc,wkc->bhwk"),
             node("Unsqueeze", ["rel_h", "ax4"], "rel_h5"), node("Unsqueeze", ["rel_w", "ax3"], "rel_w5"),
             node("Add", ["rel_h5", "rel_w5"], "rel"), node("Reshape", ["rel", "flat"], "rel_flat"),
             node("Add", ["scores", "rel_flat"], "biased"), node("Relu", ["biased"], "y")]
    return nodes, inits, [_vi(p + "q_in", [b, s, s, c]), _vi(p + "scores_in", [b, s * s, s * s])], [_vi(p + "y", [b, s * s, s * s])]


CASES.append(Case("rel_pos_sum_pack", "fresh4: SAM's decomposed relative positions, Unsqueezed and added (its outer sum)",
                  lambda: _packed(_rel_pos_sum_case, REL_POS_SUM_PACK, 227, opset=13), ("rk3588",)))
# ---- fresh4's i.MX 93 misses: strided and transposed convolutions, Einsum, LayerNormalization, ...


def _with_inferred_outputs(model: onnx.ModelProto) -> onnx.ModelProto:
    """The model with its outputs' shapes filled in by ONNX's shape inference (the packs below give only their names)."""
    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    known = {v.name: v for v in list(inferred.graph.value_info) + list(inferred.graph.output) if v.type.tensor_type.HasField("shape")}
    for out in model.graph.output:
        if out.name in known:
            out.CopyFrom(known[out.name])
    return model


def _conv_form_case(rng, spec):
    """(name, op, channels in, out, spatial, kernel, strides, pads[, output_padding]): a Relu of the
    input, the Conv or ConvTranspose (with bias), and a Relu of its result."""
    name, op, cin, cout, spatial, kernel, strides, pads, *output_padding = spec
    p = f"{name}_"
    node = _prefixed(p)
    w = _weights(rng, cout, cin, *kernel) if op == "Conv" else _weights(rng, cin, cout, *kernel)
    inits = [_const(p + "w", w), _const(p + "b", _weights(rng, cout))]
    extra = {"output_padding": list(output_padding[0])} if output_padding else {}
    nodes = [node("Relu", ["x"], "r"), node(op, ["r", "w", "b"], "conv", kernel_shape=list(kernel), strides=list(strides), pads=list(pads), **extra), node("Relu", ["conv"], "y")]
    return nodes, inits, [_vi(p + "x", [1, cin, *spatial])], [helper.make_tensor_value_info(p + "y", TensorProto.FLOAT, None)]


def _conv_form(entries: tuple, seed: int) -> onnx.ModelProto:
    return _with_inferred_outputs(_packed(_conv_form_case, entries, seed, opset=14))


# A Conv strided by more than 3, padded or not (DAC's 1-D downsampling Conv 8/4 pads 2), each
# apart where Vela stops on it; the forms that compile share one model.
STRIDED_CONV_STOPS = {
    "1d_k8s4p2": ("Conv", 16, 32, [2000], [8], [4], [2, 2]),
    "1d_k7s4p3": ("Conv", 16, 32, [2000], [7], [4], [3, 3]),
    "1d_k10s5p2": ("Conv", 16, 32, [2000], [10], [5], [2, 2]),
    "2d_k8s4p3": ("Conv", 16, 32, [32, 32], [8, 8], [4, 4], [3] * 4),
    "2d_k7s4p3": ("Conv", 16, 32, [32, 32], [7, 7], [4, 4], [3] * 4),
    "2d_k4s4p1": ("Conv", 16, 32, [32, 32], [4, 4], [4, 4], [1] * 4),
}
STRIDED_CONV_PACK = (
    ("s_2d_k8s4p2", "Conv", 16, 32, [32, 32], [8, 8], [4, 4], [2] * 4),
    ("s_2d_1x8s1x4p2", "Conv", 16, 32, [1, 2000], [1, 8], [1, 4], [0, 2, 0, 2]),
    ("s_1d_k8s4p0", "Conv", 16, 32, [2000], [8], [4], [0, 0]),
    ("s_1d_k10s5p0", "Conv", 16, 32, [2000], [10], [5], [0, 0]),
    ("s_1d_k6s3p1", "Conv", 16, 32, [2000], [6], [3], [1, 1]),
    ("s_1d_k4s2p1", "Conv", 8, 16, [4000], [4], [2], [1, 1]),
    ("s_2d_k8s4p0", "Conv", 16, 32, [32, 32], [8, 8], [4, 4], [0] * 4),
    ("s_2d_k4s4p0", "Conv", 16, 32, [32, 32], [4, 4], [4, 4], [0] * 4),
)
CASES += [Case(f"strided_conv_imx_{key}", "fresh4: a padded Conv strided by more than 3 (DAC's 1-D downsampling) through onnx2tf and Vela",
               lambda k=key, s=spec: _conv_form(((f"c_{k}", *s),), 181), ("imx93",)) for key, spec in STRIDED_CONV_STOPS.items()]
CASES.append(Case("strided_conv_imx_pack", "fresh4: Convs strided by more than 3, unpadded or SAME-padded, through onnx2tf and Vela",
                  lambda: _conv_form(STRIDED_CONV_PACK, 182), ("imx93",)))
# ConvTranspose by stride, kernel and pads, 1-D and 2-D (SpeechT5's HiFi-GAN upsampler: 1-D 8/4 pads 2).
TRANSPOSE_CONV_PACK = (
    ("t_1d_k8s4p2", "ConvTranspose", 64, 32, [32], [8], [4], [2, 2]),
    ("t_1d_k4s4p0", "ConvTranspose", 64, 32, [32], [4], [4], [0, 0]),
    ("t_1d_k16s8p4", "ConvTranspose", 64, 32, [32], [16], [8], [4, 4]),
    ("t_1d_k4s2p1", "ConvTranspose", 64, 32, [32], [4], [2], [1, 1]),
    ("t_1d_k2s2p0", "ConvTranspose", 64, 32, [32], [2], [2], [0, 0]),
    ("t_1d_k3s1p1", "ConvTranspose", 64, 32, [32], [3], [1], [1, 1]),
    ("t_2d_k2s2p0", "ConvTranspose", 32, 16, [16, 16], [2, 2], [2, 2], [0] * 4),
    ("t_2d_k4s4p0", "ConvTranspose", 32, 16, [16, 16], [4, 4], [4, 4], [0] * 4),
    ("t_2d_k4s2p1", "ConvTranspose", 32, 16, [16, 16], [4, 4], [2, 2], [1] * 4),
    ("t_2d_k3s2p1", "ConvTranspose", 32, 16, [16, 16], [3, 3], [2, 2], [1] * 4),
    ("t_2d_1x4s1x2p0", "ConvTranspose", 32, 16, [1, 32], [1, 4], [1, 2], [0] * 4),
    ("t_2d_1x8s1x4p0", "ConvTranspose", 32, 16, [1, 32], [1, 8], [1, 4], [0] * 4),
)
CASES.append(Case("transpose_conv_imx_pack", "fresh4: ConvTranspose by stride, kernel and pads, 1-D and 2-D (HiFi-GAN's upsampler) through onnx2tf and Vela",
                  lambda: _conv_form(TRANSPOSE_CONV_PACK, 183), ("imx93",)))
# fresh11's Attention U-Net upsampler (2-D 3x3 stride 2 pads 1 output_padding 1) and its
# neighbours: output_padding on or off, kernel below, at and above the stride, 1-D, one axis only,
# other channels and sizes.
TRANSPOSE_CONV_OUTPUT_PADDING_PACK = (
    ("o_2d_k3s2p1o1", "ConvTranspose", 128, 64, [16, 16], [3, 3], [2, 2], [1] * 4, [1, 1]),
    ("o_2d_k3s2p1o0", "ConvTranspose", 128, 64, [16, 16], [3, 3], [2, 2], [1] * 4, [0, 0]),
    ("o_2d_k3s2p1o1_small", "ConvTranspose", 16, 8, [8, 8], [3, 3], [2, 2], [1] * 4, [1, 1]),
    ("o_2d_k3s2p1o10", "ConvTranspose", 32, 16, [16, 16], [3, 3], [2, 2], [1] * 4, [1, 0]),
    ("o_2d_k4s2p1o1", "ConvTranspose", 32, 16, [16, 16], [4, 4], [2, 2], [1] * 4, [1, 1]),
    ("o_2d_k2s2p0o1", "ConvTranspose", 32, 16, [16, 16], [2, 2], [2, 2], [0] * 4, [1, 1]),
    ("o_2d_k1s2p0o1", "ConvTranspose", 32, 16, [16, 16], [1, 1], [2, 2], [0] * 4, [1, 1]),
    ("o_2d_k1s2p0o0", "ConvTranspose", 32, 16, [16, 16], [1, 1], [2, 2], [0] * 4, [0, 0]),
    ("o_1d_k3s2p1o1", "ConvTranspose", 64, 32, [32], [3], [2], [1, 1], [1]),
    ("o_1d_k3s2p1o0", "ConvTranspose", 64, 32, [32], [3], [2], [1, 1], [0]),
)
CASES.append(Case("transpose_conv_imx_output_padding", "fresh11: ConvTranspose with and without output_padding (Attention U-Net's upsampler) through onnx2tf and Vela",
                  lambda: _conv_form(TRANSPOSE_CONV_OUTPUT_PADDING_PACK, 311), ("imx93",)))


def _einsum_case(rng, spec):
    """(name, equation, first operand's shape, second's: a shape (a Relu of an input), ("c", shape)
    (a constant) or None (one operand)); the Einsum read by a Relu."""
    name, equation, a, b = spec
    p = f"{name}_"
    node = _prefixed(p)
    nodes, inits, inputs, operands = [node("Relu", ["x"], "a")], [], [_vi(p + "x", a)], ["a"]
    if isinstance(b, tuple):
        inits.append(_const(p + "wb", _weights(rng, *b[1])))
        operands.append("wb")
    elif b is not None:
        nodes.append(node("Relu", ["x2"], "b"))
        inputs.append(_vi(p + "x2", b))
        operands.append("b")
    nodes += [node("Einsum", operands, "einsum", equation=equation), node("Relu", ["einsum"], "y")]
    return nodes, inits, inputs, [helper.make_tensor_value_info(p + "y", TensorProto.FLOAT, None)]


# funnel's four attention equations (its position terms against constants), CvT's, plain matrix
# products, a one-operand permutation; apart: a diagonal and a label summed out of one operand.
EINSUM_PACK = (
    ("e_bind_bjnd_bnij", "bind,bjnd->bnij", [1, 32, 2, 32], [1, 32, 2, 32]),
    ("e_binh_tnh_bnit", "binh,tnh->bnit", [1, 32, 2, 32], ("c", [64, 2, 32])),
    ("e_bind_snd_bnis", "bind,snd->bnis", [1, 32, 2, 32], ("c", [2, 2, 32])),
    ("e_bnij_bjnd_bind", "bnij,bjnd->bind", [1, 2, 32, 32], [1, 32, 2, 32]),
    ("e_bhlk_bhtk_bhlt", "bhlk,bhtk->bhlt", [1, 2, 16, 32], [1, 2, 16, 32]),
    ("e_bhlt_bhtv_bhlv", "bhlt,bhtv->bhlv", [1, 2, 16, 16], [1, 2, 16, 32]),
    ("e_ij_jk_ik", "ij,jk->ik", [16, 32], [32, 8]),
    ("e_bij_jk_bik", "bij,jk->bik", [1, 16, 32], ("c", [32, 8])),
    ("e_bi_bi_b", "bi,bi->b", [1, 16], [1, 16]),
    ("e_bij_bji", "bij->bji", [1, 8, 16], None),
)
EINSUM_REFUSED = {"diagonal": ("e_bii_bi", "bii->bi", [1, 8, 8], None), "summed_out": ("e_bij_bjk_bk", "bij,bjk->bk", [1, 8, 16], [1, 16, 4])}
CASES.append(Case("einsum_imx_pack", "fresh4: Einsum equations that are matrix products or permutations (funnel's attention) through onnx2tf and Vela",
                  lambda: _with_inferred_outputs(_packed(_einsum_case, EINSUM_PACK, 184, opset=14)), ("imx93",)))
CASES += [Case(f"einsum_imx_{key}", "fresh4: an Einsum equation TensorFlow's converter does not lower to builtins",
               lambda s=spec: _with_inferred_outputs(_packed(_einsum_case, (s,), 185, opset=14)), ("imx93",)) for key, spec in EINSUM_REFUSED.items()]
# fresh11's LongT5 equations (an ellipsis before explicit labels), the same with an empty ellipsis
# and one operand; apart: an ellipsis beside a diagonal, beside a label summed out of one operand,
# and an implicit output.
EINSUM_ELLIPSIS_PACK = (
    ("e_nd_ng_gd", "...nd,...ng->...gd", [1, 64, 64], [1, 64, 8]),
    ("e_qhd_khd_hqk", "...qhd,...khd->...hqk", [1, 4, 16, 2, 32], [1, 4, 16, 2, 32]),
    ("e_hqk_khd_qhd", "...hqk,...khd->...qhd", [1, 4, 2, 16, 16], [1, 4, 16, 2, 32]),
    ("e_ij_jk_ik_empty", "...ij,...jk->...ik", [16, 32], [32, 8]),
    ("e_ij_ji", "...ij->...ji", [1, 8, 16], None),
)
EINSUM_ELLIPSIS_REFUSED = {"diagonal": ("e_ii_i", "...ii->...i", [1, 8, 8], None),
                           "summed_out": ("e_ij_jk_k", "...ij,...jk->...k", [1, 8, 16], [1, 16, 4]),
                           "implicit": ("e_ij_jk_implicit", "ij,jk", [16, 32], [32, 8])}
CASES.append(Case("einsum_imx_ellipsis_pack", "fresh11: Einsum equations with an ellipsis (LongT5's attention) through onnx2tf and Vela",
                  lambda: _with_inferred_outputs(_packed(_einsum_case, EINSUM_ELLIPSIS_PACK, 312, opset=14)), ("imx93",)))
CASES += [Case(f"einsum_imx_ellipsis_{key}", "fresh11: an Einsum equation with an ellipsis or an implicit output through onnx2tf and Vela",
               lambda s=spec: _with_inferred_outputs(_packed(_einsum_case, (s,), 313, opset=14)), ("imx93",)) for key, spec in EINSUM_ELLIPSIS_REFUSED.items()]


def _layer_norm_imx_case(rng, spec):
    """(name, shape, axis): a Relu of the input, LayerNormalization (opset 17, constant scale and
    bias over the normalised axes), a Relu."""
    name, shape, axis = spec
    p = f"{name}_"
    node = _prefixed(p)
    normalised = shape[axis % len(shape):]
    inits = [_const(p + "g", 1 + _weights(rng, *normalised)), _const(p + "bb", _weights(rng, *normalised))]
    nodes = [node("Relu", ["x"], "r"), node("LayerNormalization", ["r", "g", "bb"], "ln", axis=axis, epsilon=1e-5), node("Relu", ["ln"], "y")]
    return nodes, inits, [_vi(p + "x", shape)], [_vi(p + "y", shape)]


LAYER_NORM_IMX_PACK = (("ln_2d_last", [4, 64], -1), ("ln_3d_last", [1, 32, 64], -1), ("ln_4d_last", [1, 8, 8, 16], -1))
CASES.append(Case("layer_norm_imx_pack", "fresh4: LayerNormalization over the last axis (Nystromformer's) through onnx2tf and Vela",
                  lambda: _packed(_layer_norm_imx_case, LAYER_NORM_IMX_PACK, 186, opset=17), ("imx93",)))
CASES.append(Case("layer_norm_imx_two_axes", "fresh4: LayerNormalization over the last two axes through onnx2tf",
                  lambda: _packed(_layer_norm_imx_case, (("ln_3d_axis1", [1, 32, 64], 1),), 187, opset=17), ("imx93",)))


def _small_forms_imx_case(rng, spec):
    """(name, kind, value): "pow" x ** value then x * 0.044715 + x (GELU's tanh form); "mean5" a
    ReduceMean (keepdims 0) over axis `value[1]` of a 5-D map `value[0]` (Nystromformer's
    landmarks); "scalar" op `value` of the map and the run-time scalar of a ReduceMax over every
    axis (through a Reciprocal for "Mul_recip"), read by a Sigmoid; "where" a Where picking a Relu
    or a Sigmoid of the input by a constant condition `value` ("true", "false", "mixed"),
    Expanded to the map and read by a Softmax; "mask" a Softmax of q @ k^T plus an upper-triangular
    mask of `value` (float32's lowest, transformers' causal mask), times the input."""
    name, kind, value = spec
    p = f"{name}_"
    node = _prefixed(p)
    if kind == "pow":
        inits = [_const(p + "e", np.array(value, np.float32)), _const(p + "k", np.array(0.044715, np.float32))]
        nodes = [node("Relu", ["x"], "r"), node("Pow", ["r", "e"], "pow"), node("Mul", ["pow", "k"], "mul"), node("Add", ["r", "mul"], "y")]
        return nodes, inits, [_vi(p + "x", [1, 32, 128])], [_vi(p + "y", [1, 32, 128])]
    if kind == "mean5":
        shape, axis = value
        out = [d for i, d in enumerate(shape) if i != axis % len(shape)]
        nodes = [node("Relu", ["x"], "r"), node("ReduceMean", ["r"], "mean", axes=[axis], keepdims=0), node("Relu", ["mean"], "y")]
        return nodes, [], [_vi(p + "x", shape)], [_vi(p + "y", out)]
    if kind == "scalar":
        op = value.split("_")[0]
        nodes = [node("Relu", ["x"], "r"), node("ReduceMax", ["r"], "rmax", keepdims=0)]
        scalar = "rmax"
        if value.endswith("recip"):
            nodes.append(node("Reciprocal", ["rmax"], "recip"))
            scalar = "recip"
        nodes += [node(op, [scalar, "r"], "op"), node("Sigmoid", ["op"], "y")]
        return nodes, [], [_vi(p + "x", [1, 2, 8, 8])], [_vi(p + "y", [1, 2, 8, 8])]
    if kind == "where":
        cond = {"true": np.ones([1, 1, 8, 8], bool), "false": np.zeros([1, 1, 8, 8], bool), "mixed": rng.random([1, 1, 8, 8]) > 0.5}[value]
        inits = [_const(p + "c", cond), _const(p + "shape", np.array([1, 2, 8, 8], np.int64))]
        nodes = [node("Relu", ["x"], "a"), node("Sigmoid", ["x"], "b"), node("Expand", ["c", "shape"], "ce"), node("Where", ["ce", "a", "b"], "where"), node("Softmax", ["where"], "y", axis=-1)]
        return nodes, inits, [_vi(p + "x", [1, 2, 8, 8])], [_vi(p + "y", [1, 2, 8, 8])]
    # "mask"
    mask = np.triu(np.full([1, 1, 16, 16], value, np.float32), 1)
    inits = [_const(p + "w", _weights(rng, 1, 2, 32, 16)), _const(p + "mask", mask)]
    nodes = [node("MatMul", ["x", "w"], "scores"), node("Add", ["scores", "mask"], "masked"), node("Softmax", ["masked"], "softmax", axis=-1), node("MatMul", ["softmax", "x"], "y")]
    return nodes, inits, [_vi(p + "x", [1, 2, 16, 32])], [_vi(p + "y", [1, 2, 16, 32])]


SMALL_FORMS_IMX_PACK = (
    ("pow_2", "pow", 2.0), ("pow_3", "pow", 3.0), ("pow_4", "pow", 4.0), ("pow_half", "pow", 0.5),
    ("mean5_b2", "mean5", ([1, 2, 8, 4, 32], -2)), ("mean5_b1", "mean5", ([1, 1, 8, 4, 32], -2)), ("mean5_last", "mean5", ([1, 2, 8, 4, 32], -1)),
    ("scalar_mul", "scalar", "Mul"), ("scalar_add", "scalar", "Add"), ("scalar_mul_recip", "scalar", "Mul_recip"),
    ("where_true", "where", "true"), ("where_false", "where", "false"), ("where_mixed", "where", "mixed"),
    ("mask_1e9", "mask", -1e9),
)
CASES.append(Case("small_forms_imx_pack", "fresh4: Pow by 3, 5-D means, run-time scalars, selects by known conditions (funnel, Nystromformer) through onnx2tf and Vela",
                  lambda: _packed(_small_forms_imx_case, SMALL_FORMS_IMX_PACK, 188, opset=13), ("imx93",)))
CASES.append(Case("softmax_mask_imx_float_min", "fresh3: a Softmax of scores plus a causal mask of float32's lowest value (BLOOM) through onnx2tf and Vela",
                  lambda: _packed(_small_forms_imx_case, (("mask_min", "mask", float(np.finfo(np.float32).min)),), 189, opset=13), ("imx93",)))


def _where_known_broadcast_case(rng, spec):
    """(name, condition, picked shape): a Where of a known uniform condition ("true"/"false", Expanded
    to [1, 2, 8, 8]) between a Relu of x [1, 2, 8, 8] and a Sigmoid of x2 of `picked shape` (the
    branch the condition picks is the second when "false", the first's shape then [1, 2, 8, 8]), read
    by a Softmax."""
    name, condition, picked = spec
    p = f"{name}_"
    node = _prefixed(p)
    cond = np.full([1, 1, 8, 8], condition == "true")
    inits = [_const(p + "c", cond), _const(p + "shape", np.array([1, 2, 8, 8], np.int64))]
    nodes = [node("Relu", ["x"], "a"), node("Sigmoid", ["x2"], "b"), node("Expand", ["c", "shape"], "ce"), node("Where", ["ce", "a", "b"], "where"), node("Softmax", ["where"], "y", axis=-1)]
    return nodes, inits, [_vi(p + "x", [1, 2, 8, 8]), _vi(p + "x2", picked)], [_vi(p + "y", [1, 2, 8, 8])]


# A select by a condition known all false whose picked branch has the output's shape or must be broadcast to it.
WHERE_KNOWN_BROADCAST_PACK = (("wb_false_full", "false", [1, 2, 8, 8]), ("wb_false_row", "false", [1, 2, 1, 8]), ("wb_false_one", "false", [1, 1, 1, 1]),
                              ("wb_true_row", "true", [1, 2, 1, 8]))
CASES.append(Case("where_known_broadcast_imx_pack", "fresh11: a Where of a condition known uniform whose picked branch is broadcast to the output (or not) through onnx2tf and Vela",
                  lambda: _packed(_where_known_broadcast_case, WHERE_KNOWN_BROADCAST_PACK, 317, opset=13), ("imx93",)))

def _id_reshape_case(rng, spec):
    """(name, dtype, target shape): an input [1, 32] of `dtype` Reshaped to `target` (LongT5's
    input_ids Reshaped to [-1, 32], its own shape), then an embedding Gather (int64) or a Relu (float)."""
    name, dtype, target = spec
    p = f"{name}_"
    node = _prefixed(p)
    inits = [_const(p + "shape", np.array(target, np.int64))]
    nodes = [node("Reshape", ["x", "shape"], "ids")]
    if dtype == "int64":
        inits.append(_const(p + "table", _weights(rng, 100, 16)))
        nodes.append(node("Gather", ["table", "ids"], "y", axis=0))
        return nodes, inits, [_vi(p + "x", [1, 32], TensorProto.INT64)], [helper.make_tensor_value_info(p + "y", TensorProto.FLOAT, None)]
    nodes.append(node("Relu", ["ids"], "y"))
    return nodes, inits, [_vi(p + "x", [1, 32])], [helper.make_tensor_value_info(p + "y", TensorProto.FLOAT, None)]


# LongT5's Reshape of its int64 token ids to their own shape, beside one to another shape, and float ones.
ID_RESHAPE_PACK = (("ir_i64_same", "int64", [-1, 32]), ("ir_i64_other", "int64", [4, 8]), ("ir_f32_same", "float", [-1, 32]), ("ir_f32_other", "float", [4, 8]))
CASES.append(Case("id_reshape_imx_pack", "fresh11: a Reshape of int64 token ids (or float data) to its own shape or another through onnx2tf and Vela",
                  lambda: _with_inferred_outputs(_packed(_id_reshape_case, ID_RESHAPE_PACK, 318, opset=13)), ("imx93",)))

def _run_time_mask_imx_case(rng, spec):
    """(name, fill, condition, reshaped): scores x @ w plus a mask computed at run time (Doge's dynamic
    mask): a Where of a known condition ("causal": upper triangle; "none": all false) picking `fill`
    or a Sigmoid of the keys' mean, directly or through an Unsqueeze, Expand, Reshape and Slice (as
    Doge's), into a Softmax."""
    name, fill, condition, reshaped = spec
    p = f"{name}_"
    node = _prefixed(p)
    cond = np.triu(np.ones([1, 1, 16, 16], bool), 1) if condition == "causal" else np.zeros([1, 1, 16, 16], bool)
    inits = [_const(p + "w", _weights(rng, 1, 2, 32, 16)), _const(p + "cond", cond), _const(p + "fill", np.asarray(fill, np.float32)),
             _const(p + "ax", np.array([2], np.int64)), _const(p + "shape5", np.array([1, 2, 1, 16, 16], np.int64)),
             _const(p + "shape4", np.array([1, 2, 16, 16], np.int64)), _const(p + "s0", np.array([0], np.int64)), _const(p + "s1", np.array([16], np.int64)),
             _const(p + "s3", np.array([3], np.int64))]
    nodes = [node("MatMul", ["x", "w"], "scores"), node("ReduceMean", ["x"], "mean", axes=[-1], keepdims=1), node("Sigmoid", ["mean"], "gate"),
             node("Transpose", ["gate"], "gate_t", perm=[0, 1, 3, 2]), node("Where", ["cond", "fill", "gate_t"], "mask")]
    mask = "mask"
    if reshaped:
        nodes += [node("Unsqueeze", ["mask", "ax"], "mask5"), node("Expand", ["mask5", "shape5"], "mask5e"),
                  node("Reshape", ["mask5e", "shape4"], "mask4"), node("Slice", ["mask4", "s0", "s1", "s3"], "mask_s")]
        mask = "mask_s"
    nodes += [node("Add", ["scores", mask], "masked"), node("Softmax", ["masked"], "softmax", axis=-1), node("MatMul", ["softmax", "x"], "y")]
    return nodes, inits, [_vi(p + "x", [1, 2, 16, 32])], [_vi(p + "y", [1, 2, 16, 32])]


FLOAT32_LOWEST = float(np.finfo(np.float32).min)
RUN_TIME_MASK_IMX_STOPS = {"direct": ("rm_min", FLOAT32_LOWEST, "causal", False), "reshaped": ("rm_min_r", FLOAT32_LOWEST, "causal", True)}
RUN_TIME_MASK_IMX_PACK = (("rm_1e9", -1e9, "causal", False), ("rm_1e9_r", -1e9, "causal", True), ("rm_min_none", FLOAT32_LOWEST, "none", True))
CASES += [Case(f"softmax_run_time_mask_imx_{key}", "fresh11: a Softmax of scores plus a run-time mask holding float32's lowest value (Doge's dynamic mask) through onnx2tf and Vela",
               lambda s=spec: _packed(_run_time_mask_imx_case, (s,), 314, opset=13), ("imx93",)) for key, spec in RUN_TIME_MASK_IMX_STOPS.items()]
CASES.append(Case("softmax_run_time_mask_imx_pack", "fresh11: a Softmax of scores plus a run-time mask of -1e9, or never picking float32's lowest value, through onnx2tf and Vela",
                  lambda: _packed(_run_time_mask_imx_case, RUN_TIME_MASK_IMX_PACK, 315, opset=13), ("imx93",)))


def _source_decoder_imx_case(rng, spec):
    """(name, stack, masked, reader): SepFormer's decoder path: a 1-D Conv encoder (1 -> 64 channels,
    16/8) of [1, 1, 800], its result Unsqueezed at axis 0, then `stack` ("concat": two copies
    Concatenated on axis 0; "one": as is), `masked` (a Mul by per-source masks: True a 1x1 Conv to 128
    channels, Reshape [1, 2, 64, T], Sigmoid, Transpose [1, 0, 2, 3]; "reshape" the Reshape straight
    to [2, 1, 64, T]; "const" constant masks [2, 1, 64, T]), a Gather of index 0 on axis 0,
    and `reader`: a 1-D ConvTranspose 64 -> 1 (16/8, the decoder), a 1-D Conv 64 -> 8 or a Relu."""
    name, stack, masked, reader = spec
    p = f"{name}_"
    node = _prefixed(p)
    t = 99
    inits = [_const(p + "we", _weights(rng, 64, 1, 16)), _const(p + "ax0", np.array([0], np.int64)), _const(p + "idx", np.array(0, np.int64))]
    nodes = [node("Conv", ["x", "we"], "enc", kernel_shape=[16], strides=[8]), node("Relu", ["enc"], "enc_r"), node("Unsqueeze", ["enc_r", "ax0"], "enc_u")]
    stacked = "enc_u"
    if stack == "concat":
        nodes.append(node("Concat", ["enc_u", "enc_u"], "stack", axis=0))
        stacked = "stack"
    if masked == "const":
        inits.append(_const(p + "mt", 1 + _weights(rng, 2 if stack == "concat" else 1, 1, 64, t)))
        nodes.append(node("Mul", [stacked, "mt"], "masked"))
        stacked = "masked"
    elif masked:
        # True: Reshape [1, 2, 64, T] and Transpose [1, 0, 2, 3] (SepFormer's); "reshape": Reshape [2, 1, 64, T] alone.
        shape = [2, 1, 64, t] if masked == "reshape" else [1, 2, 64, t]
        inits += [_const(p + "wm", _weights(rng, 128, 64, 1)), _const(p + "mshape", np.array(shape, np.int64))]
        nodes += [node("Conv", ["enc_r", "wm"], "mconv", kernel_shape=[1]), node("Reshape", ["mconv", "mshape"], "m4"), node("Sigmoid", ["m4"], "ms")]
        if masked is True:
            nodes.append(node("Transpose", ["ms"], "mt", perm=[1, 0, 2, 3]))
        nodes.append(node("Mul", [stacked, "mt" if masked is True else "ms"], "masked"))
        stacked = "masked"
    nodes.append(node("Gather", [stacked, "idx"], "source", axis=0))
    if reader == "ConvTranspose":
        inits.append(_const(p + "wd", _weights(rng, 64, 1, 16)))
        nodes.append(node("ConvTranspose", ["source", "wd"], "y", kernel_shape=[16], strides=[8]))
    elif reader == "Conv":
        inits.append(_const(p + "wd", _weights(rng, 8, 64, 3)))
        nodes.append(node("Conv", ["source", "wd"], "y", kernel_shape=[3], pads=[1, 1]))
    else:
        nodes.append(node("Relu", ["source"], "y"))
    return nodes, inits, [_vi(p + "x", [1, 1, 800])], [helper.make_tensor_value_info(p + "y", TensorProto.FLOAT, None)]


# fresh11's SepFormer decoder: which step of its path onnx2tf stops on.
SOURCE_DECODER_IMX = {"full": ("sd_full", "concat", True, "ConvTranspose"), "unmasked": ("sd_unmasked", "concat", False, "ConvTranspose"),
                      "one": ("sd_one", "one", False, "ConvTranspose"), "conv": ("sd_conv", "concat", True, "Conv"), "relu": ("sd_relu", "concat", True, "Relu"),
                      "reshaped_masks": ("sd_reshaped", "concat", "reshape", "ConvTranspose"), "constant_masks": ("sd_const", "concat", "const", "ConvTranspose"),
                      "one_constant_mask": ("sd_one_const", "one", "const", "ConvTranspose")}
CASES += [Case(f"source_decoder_imx_{key}", "fresh11: SepFormer's decoder path (Unsqueeze, Concat, masks, Gather, 1-D ConvTranspose) through onnx2tf and Vela",
               lambda s=spec: _with_inferred_outputs(_packed(_source_decoder_imx_case, (s,), 316, opset=13)), ("imx93",)) for key, spec in SOURCE_DECODER_IMX.items()]


# ---- ESP-DL: arithmetic by a unit constant (DAC's Snake) and 5-D element-wise and reduction nodes


def _unit_arithmetic_case(rng, spec):
    """(name, op, constant, constant first, reader): a Relu of the input [1, 8, 16], `op` of it and
    the constant, read by a Sin, a Relu, an Add of the Relu's result or a Conv 1x1."""
    name, op, constant, first, reader = spec
    p = f"{name}_"
    node = _prefixed(p)
    inits = [_const(p + "k", np.asarray(constant, np.float32))]
    nodes = [node("Relu", ["x"], "r"), node(op, ["k", "r"] if first else ["r", "k"], "op")]
    out = [1, 1, 8, 16] if np.asarray(constant).ndim == 4 else [1, 8, 16]
    if reader == "Add":
        nodes.append(node("Add", ["op", "r"], "y"))
    elif reader == "Conv":
        inits.append(_const(p + "w", _weights(rng, 8, 8, 1)))
        nodes.append(node("Conv", ["op", "w"], "y", kernel_shape=[1]))
    else:
        nodes.append(node(reader, ["op"], "y"))
    return nodes, inits, [_vi(p + "x", [1, 8, 16])], [_vi(p + "y", out)]


UNIT_ARITHMETIC_PACK = (
    ("mul_ones_sin", "Mul", np.ones([8, 1]), True, "Sin"), ("mul_one_sin", "Mul", 1.0, True, "Sin"), ("mul_ones_second_sin", "Mul", np.ones([8, 1]), False, "Sin"),
    ("mul_half_sin", "Mul", 0.5, True, "Sin"), ("mul_ones_widen_sin", "Mul", np.ones([1, 1, 8, 1]), True, "Sin"),
    ("add_zero_sin", "Add", 0.0, True, "Sin"), ("sub_zero_sin", "Sub", 0.0, False, "Sin"), ("sub_from_zero_sin", "Sub", 0.0, True, "Sin"),
    ("div_one_sin", "Div", 1.0, False, "Sin"), ("pow_one_sin", "Pow", 1.0, False, "Sin"),
    ("mul_ones_relu", "Mul", np.ones([8, 1]), True, "Relu"), ("mul_ones_add", "Mul", np.ones([8, 1]), True, "Add"), ("mul_ones_conv", "Mul", np.ones([8, 1]), True, "Conv"),
)
CASES.append(Case("unit_arithmetic_pack", "fresh4: arithmetic by a constant of ones or zeros (DAC's Snake, alpha of ones) through esp-ppq's simplifier",
                  lambda: _packed(_unit_arithmetic_case, UNIT_ARITHMETIC_PACK, 191, opset=14), ("esp32s3",)))


def _rank5_case(rng, spec):
    """(name, op, shapes or (shape, axes)): an element-wise op of two Relus of 5-D inputs, or a
    ReduceMean (keepdims 0) of a Relu of a 5-D input over `axes`; the result read by a Relu."""
    name, op, form = spec
    p = f"{name}_"
    node = _prefixed(p)
    if op == "ReduceMean":
        shape, axes = form
        kept = [d for i, d in enumerate(shape) if i not in {a % len(shape) for a in axes}]
        nodes = [node("Relu", ["x"], "r"), node("ReduceMean", ["r"], "op", axes=list(axes), keepdims=0), node("Relu", ["op"], "y")]
        return nodes, [], [_vi(p + "x", shape)], [_vi(p + "y", kept)]
    a, b = form
    out = list(np.broadcast_shapes(tuple(a), tuple(b)))
    nodes = [node("Relu", ["x"], "ra"), node("Sigmoid", ["x2"], "rb"), node(op, ["ra", "rb"], "op"), node("Relu", ["op"], "y")]
    return nodes, [], [_vi(p + "x", a), _vi(p + "x2", b)], [_vi(p + "y", out)]


RANK5_PACK = (
    ("mul_worldv2", "Mul", ([1, 2, 8, 10, 10], [1, 2, 1, 10, 10])),
    ("add_same", "Add", ([1, 2, 3, 4, 5], [1, 2, 3, 4, 5])),
    ("add_alternating", "Add", ([2, 1, 4, 1, 6], [1, 3, 1, 5, 1])),
    ("mean_landmarks", "ReduceMean", ([1, 2, 8, 4, 32], [-2])),
    ("mean_alternating", "ReduceMean", ([2, 3, 4, 5, 6], [0, 2, 4])),
)
CASES.append(Case("rank5_espdl_pack", "fresh4: 5-D element-wise and reduction nodes (YOLO-World's text attention, Nystromformer's landmarks) through esp-ppq",
                  lambda: _packed(_rank5_case, RANK5_PACK, 192, opset=13), ("esp32s3",)))


# ---- fresh3 (Ultralytics' RT-DETR) on RK3588: an Expand of integer indices -------------------------

# RT-DETR's postprocess repeats its top-k class indices over the box's 4 values for a GatherElements:
# int64 indices [1, N] -> Unsqueeze [1, N, 1] -> Expand [1, N, 4] -> Cast to int64 (no change) ->
# GatherElements of the boxes. (name, N, index type, reader): indices from an ArgMax of a Relu of the
# input scores [1, N, 8] ("int64"), cast to int32 first ("int32"), or a comparison's bool ("bool",
# cast to float after the Expand); reader "gather" (GatherElements of a second input's boxes [1, N, 4]).
# (Measured, not held: int32 indices, whose Cast ran as "Cast INT64 on CPU" and Expand on the CPU; a
# bool's Expand on the NPU; both with their Unsqueeze joined to the CPU node before it, on RK3588 and RK3566.)
INTEGER_EXPAND_PACK = (("int64_n16", 16, "int64"), ("int64_n300", 300, "int64"))


def _integer_expand_case(rng, spec) -> tuple[list, list, list, list]:
    name, n, dtype = spec
    p = f"iexp_{name}_"
    node = _prefixed(p)
    inits = [_const(p + "last", np.array([-1], np.int64)), _const(p + "shape", np.array([1, n, 4], np.int64)), _const(p + "zero", np.float32(0.5))]
    nodes = [node("Relu", ["scores"], "s")]
    if dtype == "bool":
        nodes += [node("ReduceMax", ["s"], "best", axes=[-1], keepdims=0), node("Greater", ["best", "zero"], "idx")]
    else:
        nodes.append(node("ArgMax", ["s"], "idx64", axis=-1, keepdims=0))
        nodes.append(node("Cast", ["idx64"], "idx", to=TensorProto.INT32 if dtype == "int32" else TensorProto.INT64))
    nodes += [node("Unsqueeze", ["idx", "last"], "idx1"), node("Expand", ["idx1", "shape"], "idx4")]
    if dtype == "bool":
        nodes += [node("Cast", ["idx4"], "f4", to=TensorProto.FLOAT), node("Mul", ["boxes", "f4"], "y")]
    else:
        nodes.append(node("GatherElements", ["boxes", "idx4"], "y", axis=1))
    return nodes, inits, [_vi(p + "scores", [1, n, 8]), _vi(p + "boxes", [1, n, 4])], [_vi(p + "y", [1, n, 4])]


CASES.append(Case("integer_expand_pack", "fresh3: an Expand of integer indices (RT-DETR's top-k classes repeated over a box's values)",
                  lambda: _packed(_integer_expand_case, INTEGER_EXPAND_PACK, 239, opset=13), ("rk3588", "rk3566")))


# The tiled forms on RK3566; its Sigmoid and Mish forms were measured, not held (after a Mish, on the
# CPU, the heads' Reshape and Transpose on the CPU as after a Tile; after a Sigmoid the Reshape on the
# NPU and the Transpose on the CPU: docs/audit.md).
CASES.append(Case("tiled_query_pack_rk3566", "fresh2: a global query tiled over the windows, split into heads (GC ViT)",
                  lambda: _packed(_tiled_query_case, tuple(e for e in TILED_QUERY_PACK if e[1].startswith("tile")), 97, opset=18), ("rk3566",)))


# ---- fresh3 (Ultralytics' RT-DETR): a Reshape that keeps its input's shape --------------------------

# RT-DETR gathers its top-k anchors [1, 300, 4] with run-time indices (a CPU Gather) and views them
# [1, 300, 4] again (-1 in its shape) before an Add. (name, producer, shape): producer "gather" (a Gather
# along axis 1 of a constant table [1, 64, C] at indices from an ArgMax of the input, on the CPU),
# "relu" (a Relu of the input, NPU), "mish" (a Mish of the input, on RK3588's CPU); read by an Add of a
# second input.
SAME_SHAPE_RESHAPE_PACK = (("gather_300x4", "gather", (1, 300, 4)), ("gather_16x8", "gather", (1, 16, 8)),
                           ("relu_16x8", "relu", (1, 16, 8)), ("mish_16x8", "mish", (1, 16, 8)))


def _same_shape_reshape_case(rng, spec) -> tuple[list, list, list, list]:
    name, producer, shape = spec
    p = f"same_{name}_"
    node = _prefixed(p)
    n, c = shape[1], shape[2]
    inits = [_const(p + "view", np.array([1, -1, c], np.int64)), _const(p + "table", _weights(rng, 64, c))]
    if producer == "gather":
        nodes = [node("Relu", ["x"], "r"), node("ArgMax", ["r"], "idx", axis=-1, keepdims=0),
                 node("Gather", ["table", "idx"], "g", axis=0)]
        inputs = [_vi(p + "x", [1, n, 64])]
    else:
        nodes = [node("Relu" if producer == "relu" else "Mish", ["x"], "g")]
        inputs = [_vi(p + "x", list(shape))]
    nodes += [node("Reshape", ["g", "view"], "v"), node("Add", ["v", "other"], "y")]
    return nodes, inits, inputs + [_vi(p + "other", list(shape))], [_vi(p + "y", list(shape))]


CASES.append(Case("same_shape_reshape_pack", "fresh3: a Reshape that keeps its input's shape, after a CPU Gather (RT-DETR's anchors)",
                  lambda: _packed(_same_shape_reshape_case, SAME_SHAPE_RESHAPE_PACK, 241, opset=18), ("rk3588", "rk3566")))
# ---- fresh3 (Wav2Vec2-Conformer) on RK3566: the relative shift inside attention from Linears --------------

# Wav2Vec2-Conformer's relative-position attention as transformers writes it: tokens [1, T, C], q, k
# and v Linears split into heads (Transpose [0, 2, 1, 3]; k [0, 2, 3, 1]), the position scores
# q @ pos^T [1, H, T, 2T-1] padded with a zero column, viewed tall [1, H, 2T, T], the first row
# dropped, viewed back [1, H, T, 2T-1], cropped to T and added to q @ k^T, scaled, Softmax, @ v,
# merged. "relu": the crop added to a second input and read by a Relu instead. (name, H, T, D, form)
RELATIVE_SHIFT_LINEAR_PACK = (("lin_t199", 2, 199, 32, "full"), ("lin_t16", 2, 16, 32, "full"), ("lin_t32", 4, 32, 16, "full"),
                              ("lin_t50", 2, 50, 32, "full"), ("lin_relu_t16", 2, 16, 32, "relu"),
                              # Parakeet's (fresh5): the crop and q @ k^T each scaled, then added ("scaled"),
                              # the crop cut again to its own length before the Add as Parakeet does ("scaled_crop2").
                              ("lin_scaled_t13", 2, 13, 32, "scaled"), ("lin_scaled_t16", 2, 16, 32, "scaled"),
                              ("lin_scaled_crop2_t13", 2, 13, 32, "scaled_crop2"), ("lin_scaled_crop2_t32", 4, 32, 16, "scaled_crop2"))


def _relative_shift_linear_case(rng, spec) -> tuple[list, list, list, list]:
    """One entry of RELATIVE_SHIFT_LINEAR_PACK."""
    name, h, t, d, form = spec
    p = f"{name}_"
    node = _prefixed(p)
    c = h * d
    inits = [_const(p + "pos", _weights(rng, 1, h, d, 2 * t - 1)), _const(p + "zero", np.zeros((1, h, t, 1), np.float32)),
             _const(p + "tall", np.array([1, h, 2 * t, t], np.int64)), _const(p + "wide", np.array([1, h, t, 2 * t - 1], np.int64)),
             _const(p + "one", np.array([1], np.int64)), _const(p + "end", np.array([2 ** 63 - 1], np.int64)),
             _const(p + "two", np.array([2], np.int64)), _const(p + "zero_i", np.array([0], np.int64)),
             _const(p + "t", np.array([t], np.int64)), _const(p + "three", np.array([3], np.int64)), _const(p + "scale", np.float32(np.sqrt(d))),
             _const(p + "heads", np.array([1, t, h, d], np.int64)), _const(p + "merged", np.array([1, t, c], np.int64)), _const(p + "wo", _weights(rng, c, c))]
    nodes = []
    for part, perm in (("q", [0, 2, 1, 3]), ("k", [0, 2, 3, 1]), ("v", [0, 2, 1, 3])):
        inits += [_const(p + f"w{part}", _weights(rng, c, c)), _const(p + f"b{part}", _weights(rng, c))]
        nodes += [node("MatMul", ["x", f"w{part}"], f"{part}0"), node("Add", [f"{part}0", f"b{part}"], f"{part}1"),
                  node("Reshape", [f"{part}1", "heads"], f"{part}2"), node("Transpose", [f"{part}2"], f"{part}h", perm=perm)]
    nodes += [node("MatMul", ["qh", "kh"], "ac"), node("MatMul", ["qh", "pos"], "bd"), node("Concat", ["zero", "bd"], "padded", axis=-1),
              node("Reshape", ["padded", "tall"], "view_tall"), node("Slice", ["view_tall", "one", "end", "two", "one"], "drop_row"),
              node("Reshape", ["drop_row", "wide"], "view_back"), node("Slice", ["view_back", "zero_i", "t", "three", "one"], "crop")]
    inputs = [_vi(p + "x", [1, t, c])]
    if form == "relu":
        inputs.append(_vi(p + "other", [1, h, t, t]))
        nodes += [node("Add", ["other", "crop"], "sum"), node("Relu", ["sum"], "y")]
        unused = tuple(f"_{part}{i}" for part in "kv" for i in ("0", "1", "2", "h")) + ("_ac",)
        return [n for n in nodes if not n.name.endswith(unused)], inits, inputs, [_vi(p + "y", [1, h, t, t])]
    if form.startswith("scaled"):  # each term scaled, then added (Parakeet), the crop cut again to its own length
        nodes += [node("Div", ["ac", "scale"], "ac_s"), node("Div", ["crop", "scale"], "crop_s")]
        bias = "crop_s"
        if form == "scaled_crop2":
            nodes.append(node("Slice", ["crop_s", "zero_i", "t", "three", "one"], "crop2"))
            bias = "crop2"
        nodes += [node("Add", ["ac_s", bias], "scaled"), node("Softmax", ["scaled"], "probs", axis=-1)]
    else:
        nodes += [node("Add", ["ac", "crop"], "sum"), node("Div", ["sum", "scale"], "scaled"), node("Softmax", ["scaled"], "probs", axis=-1)]
    nodes += [node("MatMul", ["probs", "vh"], "o4"), node("Transpose", ["o4"], "o_t", perm=[0, 2, 1, 3]), node("Reshape", ["o_t", "merged"], "o"),
              node("MatMul", ["o", "wo"], "y")]
    return nodes, inits, inputs, [_vi(p + "y", [1, t, c])]


CASES.append(Case("relative_shift_linear_pack", "fresh3: Transformer-XL's relative shift inside attention from Linears (Wav2Vec2-Conformer)",
                  lambda: _packed(_relative_shift_linear_case, RELATIVE_SHIFT_LINEAR_PACK, 151, used_only=True, opset=13), ("rk3566",)))


# ---- fresh4 (transformers' SAM) on RK3588: the key's Transpose beside a query read twice --------------

# SAM's vision attention: a [1, a, a, C] map through the joint qkv Linear, Reshape [B, N, 3, H, D],
# Transpose [2, 0, 3, 1, 4], Reshape [3, B*H, N, D], Split and Squeeze into q, k, v; (q * scale) @ k^T
# (Transpose [0, 2, 1]), plus the decomposed relative positions computed from q ("q": q viewed
# [B*H, a, a, D], two Einsums with the height and width tables, Unsqueezed at 4 and 3, added, viewed
# [B*H, N, N]), a constant bias ("const") or none ("none"); Softmax, @ v, heads merged, a Linear.
# (name, B, N, H, D, bias)
SAM_ATTENTION_PACK = (("relq_win16", 1, 16, 2, 32, "q"), ("relq_glob64", 1, 64, 2, 32, "q"),
                      ("none_glob64", 1, 64, 2, 32, "none"), ("const_glob64", 1, 64, 2, 32, "const"))


def _sam_attention_case(rng, spec) -> tuple[list, list, list, list]:
    name, b, n, heads, d, bias = spec
    p = f"sam_{name}_"
    node = _prefixed(p)
    c, a = heads * d, int(round(n ** 0.5))
    inits = [_const(p + "wqkv", _weights(rng, c, 3 * c)), _const(p + "bqkv", _weights(rng, 3 * c)),
             _const(p + "s5", np.array([b, n, 3, heads, d], np.int64)), _const(p + "s4", np.array([3, b * heads, n, d], np.int64)),
             _const(p + "split", np.array([1, 1, 1], np.int64)), _const(p + "ax0", np.array([0], np.int64)),
             _const(p + "scale", np.float32(d ** -0.5)), _const(p + "rel", _weights(rng, b * heads, n, n)),
             _const(p + "wo", _weights(rng, c, c)), _const(p + "back", np.array([b, heads, n, d], np.int64)), _const(p + "merged", np.array([b, n, c], np.int64))]
    nodes = [node("MatMul", ["x", "wqkv"], "qkv0"), node("Add", ["qkv0", "bqkv"], "qkv"), node("Reshape", ["qkv", "s5"], "qkv5"),
             node("Transpose", ["qkv5"], "qkvt", perm=[2, 0, 3, 1, 4]), node("Reshape", ["qkvt", "s4"], "qkv4"),
             helper.make_node("Split", [p + "qkv4", p + "split"], [p + "q3", p + "k3", p + "v3"], name=p + "split", axis=0),
             node("Squeeze", ["q3", "ax0"], "q"), node("Squeeze", ["k3", "ax0"], "k"), node("Squeeze", ["v3", "ax0"], "v"),
             node("Mul", ["q", "scale"], "qs"), node("Transpose", ["k"], "kt", perm=[0, 2, 1]), node("MatMul", ["qs", "kt"], "scores")]
    scores = p + "scores"
    if bias == "q":
        inits += [_const(p + "rh", _weights(rng, a, a, d)), _const(p + "rw", _weights(rng, a, a, d)), _const(p + "grid", np.array([b * heads, a, a, d], np.int64)),
                  _const(p + "ax4", np.array([4], np.int64)), _const(p + "ax3", np.array([3], np.int64)), _const(p + "flat", np.array([b * heads, n, n], np.int64))]
        nodes += [node("Reshape", ["q", "grid"], "qg"), node("Einsum", ["qg", "rh"], "relh", equation="bhwc,hkc->bhwk"),
                  node("Einsum", ["qg", "rw"], "relw", equation="bhwc,wkc->bhwk"), node("Unsqueeze", ["relh", "ax4"], "relh5"),
                  node("Unsqueeze", ["relw", "ax3"], "relw5"), node("Add", ["relh5", "relw5"], "relsum"), node("Reshape", ["relsum", "flat"], "relq"),
                  node("Add", ["scores", "relq"], "biased")]
        scores = p + "biased"
    elif bias == "const":
        nodes.append(node("Add", ["scores", "rel"], "biased"))
        scores = p + "biased"
    nodes += [node("Softmax", [scores], "attn", axis=-1), node("MatMul", ["attn", "v"], "o"), node("Reshape", ["o", "back"], "o4"),
              node("Transpose", ["o4"], "ot", perm=[0, 2, 1, 3]), node("Reshape", ["ot", "merged"], "om"), node("MatMul", ["om", "wo"], "y")]
    return nodes, inits, [_vi(p + "x", [b, a, a, c])], [_vi(p + "y", [b, n, c])]


CASES.append(Case("sam_attention_pack", "fresh4: SAM's attention, the key's Transpose beside a query that also makes the relative positions",
                  lambda: _packed(_sam_attention_case, SAM_ATTENTION_PACK, 253, opset=13), ("rk3566", "rk3588")))


# ---- fresh2 (timm's ViT-RelPos and ViTamin): a patch embedding's tokens averaged without a class token ----

# Both swap a 4x4 map of 384 channels into 16 tokens with no class token and end in x.mean(1) and a
# LayerNorm of the [1, C] mean (fc_norm) before the head; RK3566 puts the patch Transpose on the CPU
# where token_pool_pack's x.mean(1) of 32 channels kept it on the NPU. Each case: the patch embedding
# (Conv 2x2 stride 2, Reshape [1, C, H*W], Transpose [0, 2, 1]) and a position Add, one block, x.mean(1)
# (keepdims 0), then `ending`. (name, channels, side, norm, residual, final, ending): the block is a
# Linear after `norm` ("w": LayerNorm written out as torch.onnx writes it at opset 13; "op": one
# LayerNormalization; "": none), Added back to its input where `residual`; `final` a norm of the tokens
# before the mean (as `norm`; or "relu", "mul" by a [C] constant; "keepdims": the mean keeps its axis);
# norm "-": no block (the mean reads the position Add); a last False: no position Add (ViT-RelPos); `ending` "" (the mean is the output), "ln" (a written LayerNorm of the
# mean, timm's fc_norm), "gemm" (a head Gemm), "ln_gemm".
TOKEN_MEAN_PACK = tuple((f"c{c}_s{s}_{e or 'out'}", c, s, "w", True, "", e) for c, s in ((32, 4), (384, 4)) for e in ("", "ln", "gemm", "ln_gemm")) + (
    ("c384_s7_ln_gemm", 384, 7, "w", True, "", "ln_gemm"), ("c192_s4_ln_gemm", 192, 4, "w", True, "", "ln_gemm"), ("c64_s4_ln_gemm", 64, 4, "w", True, "", "ln_gemm"))
# Which part of the block decides (opset 17, for LayerNormalization): the norm's spelling, the residual,
# a final norm before the mean (EfficientFormer's, MViTv2's), the mean's reader.
TOKEN_MEAN_FACTORS_PACK = (
    ("w_res", 384, 4, "w", True, "", ""), ("w_nores", 384, 4, "w", False, "", ""), ("none_res", 384, 4, "", True, "", ""),
    ("none_nores", 384, 4, "", False, "", ""), ("op_res", 384, 4, "op", True, "", ""), ("op_nores", 384, 4, "op", False, "", ""),
    ("w_res_final_w", 384, 4, "w", True, "w", ""), ("op_res_final_op", 384, 4, "op", True, "op", ""), ("none_res_final_w", 384, 4, "", True, "w", ""),
    ("none_res_c32", 32, 4, "", True, "", ""), ("none_nores_c32", 32, 4, "", False, "", ""), ("op_res_c32", 32, 4, "op", True, "", ""),
    ("w_res_s7", 384, 7, "w", True, "", ""), ("op_res_final_op_s7", 448, 7, "op", True, "op", ""),
    ("none_res_final_relu", 384, 4, "", True, "relu", ""), ("none_res_final_mul", 384, 4, "", True, "mul", ""),
    ("none_res_keepdims", 384, 4, "", True, "keepdims", ""), ("no_block", 384, 4, "-", False, "", ""), ("no_block_c32", 32, 4, "-", False, "", ""),
    ("nopos_w_res", 384, 4, "w", True, "", "", False), ("nopos_none_res", 384, 4, "", True, "", "", False),
    ("nopos_w_res_final_w", 384, 4, "w", True, "w", "", False), ("nopos_w_res_c32", 32, 4, "w", True, "", "", False),
    ("nopos_none_res_c32", 32, 4, "", True, "", "", False), ("nopos_none_res_s7", 384, 7, "", True, "", "", False),
    ("nopos_none_res_final_w", 384, 4, "", True, "w", "", False), ("nopos_none_res_relu", 384, 4, "", True, "relu", "", False))


def _token_norm(node, p: str, x: str, c: int, rng, inits: list, tag: str, spelling: str) -> tuple[list, str]:
    """LayerNorm over the last axis: one LayerNormalization ("op") or as torch.onnx writes it at opset
    13 ("w": ReduceMean, Sub, Pow, ReduceMean, Add eps, Sqrt, Div, Mul, Add)."""
    inits += [_const(p + tag + "_g", (1 + _weights(rng, c)).astype(np.float32)), _const(p + tag + "_b", _weights(rng, c))]
    if spelling == "op":
        return [node("LayerNormalization", [x, tag + "_g", tag + "_b"], tag, axis=-1, epsilon=1e-6)], p + tag
    inits += [_const(p + tag + "_two", np.array(2.0, np.float32)), _const(p + tag + "_eps", np.array(1e-6, np.float32))]
    nodes = [node("ReduceMean", [x], tag + "_mu", axes=[-1]), node("Sub", [x, tag + "_mu"], tag + "_d"),
             node("Pow", [tag + "_d", tag + "_two"], tag + "_sq"), node("ReduceMean", [tag + "_sq"], tag + "_var", axes=[-1]),
             node("Add", [tag + "_var", tag + "_eps"], tag + "_ve"), node("Sqrt", [tag + "_ve"], tag + "_sd"),
             node("Div", [tag + "_d", tag + "_sd"], tag + "_n"), node("Mul", [tag + "_n", tag + "_g"], tag + "_s"),
             node("Add", [tag + "_s", tag + "_b"], tag)]
    return nodes, p + tag


def _token_mean_case(rng, spec) -> tuple[list, list, list, list]:
    name, c, side, norm, residual, final, ending, *position = spec
    p, t = f"tmean_{name}_", side * side
    node = _prefixed(p)
    inits = [_const(p + "w_patch", _weights(rng, c, 3, 2, 2)), _const(p + "flat", np.array([1, c, t], np.int64)),
             _const(p + "pos", _weights(rng, 1, t, c)), _const(p + "w_lin", (_weights(rng, c, c) / np.sqrt(c)).astype(np.float32))]
    nodes = [node("Conv", ["x", "w_patch"], "patch_conv", kernel_shape=[2, 2], strides=[2, 2]), node("Reshape", ["patch_conv", "flat"], "flatten"),
             node("Transpose", ["flatten"], "to_tokens", perm=[0, 2, 1])]
    stream = p + "to_tokens"
    if position != [False]:
        nodes.append(node("Add", ["to_tokens", "pos"], "pos_add"))
        stream = p + "pos_add"
    x = stream
    if norm in ("w", "op"):
        ln, x = _token_norm(node, p, x, c, rng, inits, "norm1", norm)
        nodes += ln
    if norm != "-":
        nodes.append(node("MatMul", [x, "w_lin"], "linear"))
        x = p + "linear"
    if residual:
        nodes.append(node("Add", [stream, "linear"], "residual"))
        x = p + "residual"
    if final in ("w", "op"):
        ln, x = _token_norm(node, p, x, c, rng, inits, "norm", final)
        nodes += ln
    elif final in ("relu", "mul"):
        inits.append(_const(p + "gamma", _weights(rng, c)))
        nodes.append(node("Relu", [x], "final") if final == "relu" else node("Mul", [x, "gamma"], "final"))
        x = p + "final"
    keep = int(final == "keepdims")
    nodes.append(node("ReduceMean", [x], "mean", axes=[1], keepdims=keep))
    x, out = p + "mean", [1, 1, c] if keep else [1, c]
    if "ln" in ending:
        ln, x = _token_norm(node, p, x, c, rng, inits, "fc_norm", "w")
        nodes += ln
    if "gemm" in ending:
        inits += [_const(p + "w_head", _weights(rng, 10, c)), _const(p + "b_head", _weights(rng, 10))]
        nodes.append(node("Gemm", [x, "w_head", "b_head"], "head", transB=1))
        x, out = p + "head", [1, 10]
    nodes.append(node("Identity", [x], "y"))
    return nodes, inits, [_vi(p + "x", [1, 3, 2 * side, 2 * side])], [_vi(p + "y", out)]


CASES.append(Case("token_mean_pack", "fresh2: a patch embedding's tokens averaged without a class token, then a LayerNorm and a head (ViT-RelPos, ViTamin)",
                  lambda: _packed(_token_mean_case, TOKEN_MEAN_PACK, 242), ("rk3566", "rk3588")))
CASES.append(Case("token_mean_factors_pack", "fresh2: what decides the swap of tokens averaged without a class token (norm spelling, residual, final norm)",
                  lambda: _packed(_token_mean_case, TOKEN_MEAN_FACTORS_PACK, 243, opset=17), ("rk3566", "rk3588")))


# ---- fresh2 (timm's TNT): F.unfold's patches, swapped into pixel sets, on RK3566 ----------------

# torch.onnx writes TNT's F.unfold(x, k, stride=k) as a Pad, two index Gathers ([k, n] indices
# i + k*j along H, then W: [1, C, k, n, k, n]), a Transpose [0, 1, 2, 4, 3, 5] and a Reshape
# [1, C*k*k, n*n]; TNT swaps it (Transpose [0, 2, 1]) and views the patches as a batch [n*n, C, k, k]
# for its pixel Conv. (name, k, n, form): "tnt" as written; "relu_after" the unfold's Reshape read by a
# Relu (no swap after); "no_transpose" the Gathers' result viewed straight ([1, C*k*n, k*n]: no 6-D
# Transpose before the Reshape) then swapped as TNT does.
UNFOLD_PACK = (("tnt_k16_n4", 16, 4, "tnt"), ("tnt_k8_n4", 8, 4, "tnt"), ("tnt_k4_n4", 4, 4, "tnt"),
               ("relu_after_k16_n4", 16, 4, "relu_after"), ("no_transpose_k16_n4", 16, 4, "no_transpose"))


def _unfold_case(rng, spec) -> tuple[list, list, list, list]:
    name, k, n, form = spec
    p, s, c = f"unfold_{name}_", k * n, 3
    node = _prefixed(p)
    idx = (np.arange(k)[:, None] + k * np.arange(n)[None, :]).astype(np.int64)
    inits = [_const(p + "pads", np.zeros(8, np.int64)), _const(p + "idx", idx), _const(p + "w", _weights(rng, 8, c, 3, 3))]
    nodes = [node("Pad", ["x", "pads"], "pad"), node("Gather", ["pad", "idx"], "rows", axis=2), node("Gather", ["rows", "idx"], "cols", axis=4)]
    if form == "no_transpose":
        inits.append(_const(p + "flat", np.array([1, c * k * n, k * n], np.int64)))
        nodes.append(node("Reshape", ["cols", "flat"], "unfolded"))
        outs = [n * n, c, k, k]
    else:
        inits.append(_const(p + "flat", np.array([1, c * k * k, n * n], np.int64)))
        nodes += [node("Transpose", ["cols"], "patches", perm=[0, 1, 2, 4, 3, 5]), node("Reshape", ["patches", "flat"], "unfolded")]
    if form == "relu_after":
        nodes.append(node("Relu", ["unfolded"], "y"))
        return nodes, inits, [_vi(p + "x", [1, c, s, s])], [_vi(p + "y", [1, c * k * k, n * n])]
    inits.append(_const(p + "sets", np.array([n * n, c, k, k] if form == "tnt" else [k * n, c, k, n], np.int64)))
    nodes += [node("Transpose", ["unfolded"], "swap", perm=[0, 2, 1]), node("Reshape", ["swap", "sets"], "pixel_sets"),
              node("Conv", ["pixel_sets", "w"], "y", kernel_shape=[3, 3], pads=[1, 1, 1, 1])]
    out = [n * n, 8, k, k] if form == "tnt" else [k * n, 8, k, n]
    return nodes, inits, [_vi(p + "x", [1, c, s, s])], [_vi(p + "y", out)]


CASES.append(Case("unfold_pack", "fresh2: TNT's F.unfold (index Gathers, a 6-D Transpose, a Reshape) swapped into pixel sets",
                  lambda: _packed(_unfold_case, UNFOLD_PACK, 244), ("rk3566", "rk3588")))



# ---- fresh3 (torchvision's SSD300 on RK3566): the levels of a head whose Concat runs on the CPU ----

# (name, values per anchor K, levels as (height, width, anchors)): _head_concat_case's form with
# rectangular levels. Each head has a 1x1 level (laid out by cells). Varied: the level's side
# parity, its rows H*W*A modulo 8, its cells H*W modulo 4, and whether the widths A*K differ
# (a CPU Concat) or not; K = 91 as SSD300's class head, K = 5 and 12 for small widths.
SSD300_RECT = tuple((s, s, a) for s, a in SSD_LEVELS)
CPU_CONCAT_LEVELS_PACK = (("k91_ssd300", 91, SSD300_RECT),
                          ("k91_oddaligned", 91, ((19, 19, 8), (10, 10, 5), (6, 6, 6), (1, 1, 4))),
                          ("k91_mixed", 91, ((20, 20, 4), (9, 9, 8), (7, 7, 6), (4, 4, 5), (1, 1, 6))),
                          ("k91_rect", 91, ((3, 4, 6), (4, 3, 6), (2, 5, 4), (5, 2, 3), (1, 1, 4))),
                          ("k91_more", 91, ((12, 12, 3), (11, 11, 4), (14, 14, 5), (8, 8, 3), (1, 1, 4))),
                          ("k5_ssd300", 5, SSD300_RECT),
                          ("k91_equal", 91, ((19, 19, 6), (10, 10, 6), (5, 5, 6), (1, 1, 6))),
                          ("k4_unaligned_1x1", 4, ((10, 10, 6), (5, 5, 4), (1, 1, 5))),
                          ("k12_unequal", 12, ((10, 10, 6), (5, 5, 5), (3, 3, 6), (1, 1, 6))))


def _rect_head_case(rng, spec) -> tuple[list, list, list, list]:
    """One CPU_CONCAT_LEVELS_PACK entry."""
    name, k, levels = spec
    p = f"rhead_{name}_"
    inits, nodes, inputs, pieces, total = [], [], [], [], 0
    for i, (h, w, a) in enumerate(levels):
        q = p + f"l{i}_"
        inits += [_const(q + "w", _weights(rng, a * k, 8, 1, 1)), _const(q + "five", np.array([1, -1, k, h, w], np.int64)),
                  _const(q + "three", np.array([1, -1, k], np.int64))]
        nodes += [helper.make_node("Conv", [q + "x", q + "w"], [q + "c"], name=q + "conv"),
                  helper.make_node("Reshape", [q + "c", q + "five"], [q + "v"], name=q + "view"),
                  helper.make_node("Transpose", [q + "v"], [q + "t"], name=q + "permute", perm=[0, 3, 4, 1, 2]),
                  helper.make_node("Reshape", [q + "t", q + "three"], [q + "f"], name=q + "flatten")]
        inputs.append(_vi(q + "x", [1, 8, h, w]))
        pieces.append(q + "f")
        total += h * w * a
    nodes.append(helper.make_node("Concat", pieces, [p + "y"], name=p + "concat", axis=1))
    return nodes, inits, inputs, [_vi(p + "y", [1, total, k])]


CASES.append(Case("cpu_concat_levels_pack", "fresh3: the levels of a detection head whose Concat runs on the CPU (torchvision's SSD300, RK3566)",
                  lambda: _packed(_rect_head_case, CPU_CONCAT_LEVELS_PACK, 271), ("rk3566", "rk3588")))
# The same form with the 1x1 level first, in the middle or before a last level of rows H*W*A not a
# multiple of 4: whether the Concat's input offsets or the levels' own rows decide; and a CPU
# Concat's levels at rows a multiple of 8 or only of 4.
CPU_CONCAT_ORDER_PACK = (("k91_last_big", 91, ((10, 10, 4), (1, 1, 4), (5, 5, 6))),
                         ("k91_mid_1x1", 91, ((10, 10, 4), (1, 1, 5), (5, 5, 4))),
                         ("k91_first_1x1", 91, ((1, 1, 4), (10, 10, 4), (5, 5, 6))),
                         ("k91_rows8", 91, ((12, 12, 6), (7, 7, 6), (6, 6, 5), (1, 1, 4))),
                         ("k20_offsets4", 20, ((9, 9, 4), (7, 7, 4), (3, 3, 6), (1, 1, 6))))
# Not recorded, since the audit does not model it: on RK3588, K = 20 with levels 9x9x4, 7x7x6, 3x3x4
# and 1x1x6 (widths 80 and 120, the 7x7 level's rows 294 not a multiple of 4) ran its Concat on the
# NPU and every Reshape but the 1x1 level's on the CPU (laid out by anchors), where the rows rule
# has the Concat on the CPU; the same levels with 4 and 6 anchors swapped on 7x7 and 3x3 (k20_offsets4)
# ran it on the CPU as predicted. Not explained (RK3566: widths aligned to 8, everything as predicted).
# Nor these (one model, both chips, 2026-12-04): K = 91 with levels 9x9x4, 7x7x6, 3x3x4, 1x1x6 (rows
# 324, 294, 36) laid out by anchors, the Concat on the NPU, on RK3566 and RK3588 (the rows rule: CPU);
# on RK3588 K = 20 or 12 with 9x9x4 and 7x7x6 (with or without 3x3x4 or 3x3x6 after, 7x7x6 first, or
# 5x5x6 for it) the same, where 8x8x4, 7x7x6, 3x3x4, 1x1x6 (K = 20) ran the Concat on the CPU.
CASES.append(Case("cpu_concat_order_pack", "fresh3: the levels of a detection head whose Concat runs on the CPU (torchvision's SSD300, RK3566)",
                  lambda: _packed(_rect_head_case, CPU_CONCAT_ORDER_PACK, 277), ("rk3566", "rk3588")))


# ---- fresh2 (timm's DaViT): channel attention's query swapped into the second product -------------

# DaViT's channel attention: qkv Linear, Reshape [1, N, 3, h, d], Transpose [2, 0, 3, 1, 4], Split and
# Squeeze; k scaled and swapped (k^T @ v: [1, h, d, d]), a Softmax, then attn @ q^T (q swapped to
# [1, h, d, N]: its "q_swap" Transpose), swapped back, heads merged, a Linear. RK3566 ran the query's
# swap on the CPU in the last stage (N = 4 tokens of 24 heads) and on the NPU before (N = 16, 64, 256).
# (name, tokens N, heads h, head size d[, the qkv Linear biased, as timm's]). Named channel_attention_pack
# until 2026-12-05, beside the case above of that name: its names shadowed that case's builder and
# verdict (both built this pack; verdicts.json kept one entry, this one's).
QUERY_SWAP_PACK = (("n4_h24", 4, 24, 32), ("n4_h4", 4, 4, 32), ("n8_h4", 8, 4, 32), ("n12_h4", 12, 4, 32),
                   ("n16_h4", 16, 4, 32), ("n16_h12", 16, 12, 32), ("n2_h4", 2, 4, 32), ("n4_h4_d16", 4, 4, 16),
                   ("n4_h24_bias", 4, 24, 32, True), ("n16_h12_bias", 16, 12, 32, True), ("n4_h4_bias", 4, 4, 32, True))


def _query_swap_case(rng, spec) -> tuple[list, list, list, list]:
    name, n, h, d, *bias = spec
    p, c = f"chatt_{name}_", h * d
    node = _prefixed(p)
    inits = [_const(p + "w_qkv", (_weights(rng, c, 3 * c) / np.sqrt(c)).astype(np.float32)), _const(p + "heads", np.array([1, n, 3, h, d], np.int64)),
             _const(p + "split", np.array([1, 1, 1], np.int64)), _const(p + "zero", np.array([0], np.int64)),
             _const(p + "scale", np.array(d ** -0.5, np.float32)), _const(p + "merged", np.array([1, n, c], np.int64)),
             _const(p + "w_proj", (_weights(rng, c, c) / np.sqrt(c)).astype(np.float32))]
    nodes = [node("MatMul", ["x", "w_qkv"], "qkv")]
    if bias:
        inits.append(_const(p + "b_qkv", _weights(rng, 3 * c)))
        nodes.append(node("Add", ["b_qkv", "qkv"], "qkv_b"))
    nodes += [node("Reshape", ["qkv_b" if bias else "qkv", "heads"], "qkv_heads"),
             node("Transpose", ["qkv_heads"], "qkv_t", perm=[2, 0, 3, 1, 4])]
    nodes.append(helper.make_node("Split", [p + "qkv_t", p + "split"], [p + "q5", p + "k5", p + "v5"], name=p + "split_qkv", axis=0))
    nodes += [node("Squeeze", ["q5", "zero"], "q"), node("Squeeze", ["k5", "zero"], "k"), node("Squeeze", ["v5", "zero"], "v"),
              node("Mul", ["k", "scale"], "k_scaled"), node("Transpose", ["k_scaled"], "k_swap", perm=[0, 1, 3, 2]),
              node("MatMul", ["k_swap", "v"], "scores"), node("Softmax", ["scores"], "attn", axis=-1),
              node("Transpose", ["q"], "q_swap", perm=[0, 1, 3, 2]), node("MatMul", ["attn", "q_swap"], "out"),
              node("Transpose", ["out"], "out_swap", perm=[0, 1, 3, 2]), node("Transpose", ["out_swap"], "heads_t", perm=[0, 2, 1, 3]),
              node("Reshape", ["heads_t", "merged"], "merge"), node("MatMul", ["merge", "w_proj"], "y")]
    return nodes, inits, [_vi(p + "x", [1, n, c])], [_vi(p + "y", [1, n, c])]


CASES.append(Case("channel_attention_query_swap_pack", "fresh2: DaViT's channel attention, the query swapped into attn @ q^T, by tokens and heads",
                  lambda: _packed(_query_swap_case, QUERY_SWAP_PACK, 246), ("rk3566", "rk3588")))


# ---- fresh5 (transformers' Gemma 3, LFM2): grouped-query attention's key/value repeat ---------------

# transformers' repeat_kv gives each query head its key/value head: k [1, Hkv, T, D] -> Unsqueeze
# (axis 2) -> Expand [1, Hkv, n, T, D] -> Reshape [1, Hkv * n, T, D]; the key then swapped [0, 1, 3, 2]
# into q @ k^T, the value into attn @ v. (name, tokens T, key/value heads Hkv, repeats n, head size D,
# repeat, reader[, source]): repeat "hf" (as above), "front" (Unsqueeze axis 1, Expand [1, n, Hkv, T, D]),
# "expand4" (Hkv = 1: Expand [1, n, T, D] straight), "tile4" (Tile [1, n, 1, 1]), "none" (Hkv heads
# for the query too: no repeat); reader "attn" (q, k, v Linears of x [1, T, Hkv * n * D], heads split,
# scaled scores, Softmax, attn @ v, heads merged, a Linear), "relu" (the repeated key alone, read by
# a Relu: a model output), "relu5" (the 5-D Expand itself read by a Relu, no Reshape), "qk" (q @ the
# swapped repeat only), "relu_qk" (a Relu between), "av" (a Softmax of q @ W times the repeat),
# "matmul_w" (times a constant [D, 16]), "add" (plus the query heads); source "lin" (default: the
# projection's heads, split [1, T, Hkv, D] and swapped), "relu" (a Relu of them, as RMSNorm and rotary
# positions stand between in Gemma 3 and LFM2), "input_t" (a model input [1, T, Hkv, D] swapped into
# heads), "input4" (a Relu of a model input already [1, Hkv, T, D]).
# Probed and left out of the packs (docs/audit.md): "front"; readers "relu_qk", "add", "matmul_w";
# source "input_t".
GQA_REPEAT_PACK = (
    ("hf_t32_h1_n2_d32", 32, 1, 2, 32, "hf", "attn"),
    ("hf_t32_h1_n4_d32", 32, 1, 4, 32, "hf", "attn"),
    ("hf_t64_h1_n2_d16", 64, 1, 2, 16, "hf", "attn"),
    ("expand4_t32_h1_n2_d32", 32, 1, 2, 32, "expand4", "attn"),
    ("tile4_t32_h1_n2_d32", 32, 1, 2, 32, "tile4", "attn"),
    ("hf_relu_t32_h1_n2_d32", 32, 1, 2, 32, "hf", "relu"),
    ("hf_relu5_t32_h1_n2_d32", 32, 1, 2, 32, "hf", "relu5"),
    ("expand4_relu_t32_h1_n2_d32", 32, 1, 2, 32, "expand4", "relu"),
    ("pre_t32_h1_n2_d32", 32, 1, 2, 32, "hf", "attn", "relu"),
    ("pre_expand4_t32_h1_n2_d32", 32, 1, 2, 32, "expand4", "attn", "relu"),
    ("qk_t32_h1_n2_d32", 32, 1, 2, 32, "hf", "qk", "relu"),
    ("av_t32_h1_n2_d32", 32, 1, 2, 32, "hf", "av", "relu"),
    ("relu_pre_t32_h1_n2_d32", 32, 1, 2, 32, "hf", "relu", "relu"),
    ("relu_input4_t32_h1_n2_d32", 32, 1, 2, 32, "hf", "relu", "input4"),
)


def _repeated_heads(node, inits, p: str, src: str, spec, role: str) -> tuple[list, str]:
    """`src` [1, Hkv, T, D] repeated to [1, Hkv * n, T, D] as the spec's repeat writes it: (nodes, the result)."""
    _, t, hkv, n, d, repeat, reader, *_ = spec
    q = p + role
    if repeat in ("hf", "front"):
        axis, shape = (2, [1, hkv, n, t, d]) if repeat == "hf" else (1, [1, n, hkv, t, d])
        inits += [_const(q + "axis", np.array([axis], np.int64)), _const(q + "shape5", np.array(shape, np.int64)),
                  _const(q + "merged", np.array([1, hkv * n, t, d], np.int64))]
        nodes = [node("Unsqueeze", [src, role + "axis"], role + "_u"), node("Expand", [role + "_u", role + "shape5"], role + "_e")]
        if reader == "relu5":
            return nodes, role + "_e"
        return nodes + [node("Reshape", [role + "_e", role + "merged"], role + "_rep")], role + "_rep"
    if repeat == "expand4":
        inits.append(_const(q + "shape4", np.array([1, n, t, d], np.int64)))
        return [node("Expand", [src, role + "shape4"], role + "_rep")], role + "_rep"
    if repeat == "tile4":
        inits.append(_const(q + "repeats", np.array([1, n, 1, 1], np.int64)))
        return [node("Tile", [src, role + "repeats"], role + "_rep")], role + "_rep"
    return [], src


def _heads(node, inits, rng, p: str, role: str, t: int, heads: int, d: int, c: int, pre: str) -> tuple[list, str]:
    """A Linear of x split into `heads` heads [1, heads, T, D] (then a Relu where `pre` says so)."""
    inits += [_const(p + "w_" + role, (_weights(rng, c, heads * d) / np.sqrt(c)).astype(np.float32)),
              _const(p + role + "_shape", np.array([1, t, heads, d], np.int64))]
    nodes = [node("MatMul", ["x", "w_" + role], role + "_lin"), node("Reshape", [role + "_lin", role + "_shape"], role + "_split"),
             node("Transpose", [role + "_split"], role + "_heads", perm=[0, 2, 1, 3])]
    if pre == "relu":
        return nodes + [node("Relu", [role + "_heads"], role + "_pre")], role + "_pre"
    if pre == "input_t":  # a model input [1, T, heads, D] swapped into heads, no Linear
        return [node("Transpose", [role + "_in"], role + "_heads", perm=[0, 2, 1, 3])], role + "_heads"
    if pre == "input4":  # a Relu of a model input [1, heads, T, D]
        return [node("Relu", [role + "_in"], role + "_heads")], role + "_heads"
    if pre in ("partial", "halves", "partial_input4"):  # Nemotron's partial rotary (h18-rkhead): _partial_rotary
        return _partial_rotary(node, inits, rng, p, role, t, d, nodes if pre != "partial_input4" else [], pre)
    return nodes, role + "_heads"


def _partial_rotary(node, inits, rng, p: str, role: str, t: int, d: int, nodes: list, pre: str) -> tuple[list, str]:
    """transformers' Nemotron: rotary positions on the first half of each head only. The heads [1, H, T, D] (the
    Linear's, or a model input [1, H, T, D] for "partial_input4") Sliced into halves along the last axis; the first
    rotated (x * cos + rotate_half(x) * sin, cos and sin constants [1, 1, T, D/2]; "halves": a Relu instead); the two
    halves Concatenated back."""
    half, quarter = d // 2, d // 4
    src = role + ("_in" if pre == "partial_input4" else "_heads")
    q = p + role
    inits += [_const(q + "ax", np.array([3], np.int64)), _const(q + "s0", np.array([0], np.int64)), _const(q + "s1", np.array([half], np.int64)),
              _const(q + "s2", np.array([d], np.int64)), _const(q + "sq", np.array([quarter], np.int64)),
              _const(q + "cos", np.cos(rng.standard_normal((1, 1, t, half))).astype(np.float32)),
              _const(q + "sin", np.sin(rng.standard_normal((1, 1, t, half))).astype(np.float32))]
    nodes = nodes + [node("Slice", [src, role + "s0", role + "s1", role + "ax"], role + "_rot_in"),
                     node("Slice", [src, role + "s1", role + "s2", role + "ax"], role + "_pass")]
    if pre == "halves":
        nodes.append(node("Relu", [role + "_rot_in"], role + "_rot"))
    else:
        nodes += [node("Slice", [role + "_rot_in", role + "s0", role + "sq", role + "ax"], role + "_x1"),
                  node("Slice", [role + "_rot_in", role + "sq", role + "s1", role + "ax"], role + "_x2"),
                  node("Neg", [role + "_x2"], role + "_neg"), node("Concat", [role + "_neg", role + "_x1"], role + "_half_rot", axis=-1),
                  node("Mul", [role + "_rot_in", role + "cos"], role + "_c"), node("Mul", [role + "_half_rot", role + "sin"], role + "_s"),
                  node("Add", [role + "_c", role + "_s"], role + "_rot")]
    return nodes + [node("Concat", [role + "_rot", role + "_pass"], role + "_posed", axis=-1)], role + "_posed"


def _gqa_case(rng, spec) -> tuple[list, list, list, list]:
    name, t, hkv, n, d, repeat, reader, *rest = spec
    pre = rest[0] if rest else "lin"
    p, h = f"gqa_{name}_", hkv * n
    node = _prefixed(p)
    c, inits = h * d, []
    nodes, k = _heads(node, inits, rng, p, "k", t, hkv, d, c, pre)
    k_nodes, k = _repeated_heads(node, inits, p, k, spec, "k")
    nodes += k_nodes
    outputs = {"relu": [1, h, t, d], "relu5": [1, hkv, n, t, d], "qk": [1, h, t, t], "relu_qk": [1, h, t, t], "av": [1, h, t, d],
               "matmul_w": [1, h, t, 16], "add": [1, h, t, d], "attn": [1, t, c]}
    if reader in ("relu", "relu5"):
        nodes.append(node("Relu", [k], "y"))
    elif reader == "matmul_w":
        inits.append(_const(p + "w_after", _weights(rng, d, 16)))
        nodes.append(node("MatMul", [k, "w_after"], "y"))
    else:
        q_nodes, q = _heads(node, inits, rng, p, "q", t, h, d, c, "lin")
        nodes += q_nodes
        if reader == "add":
            nodes.append(node("Add", [k, q], "y"))
        elif reader in ("qk", "relu_qk"):
            if reader == "relu_qk":
                nodes.append(node("Relu", [k], "k_relu"))
            nodes += [node("Transpose", ["k_relu" if reader == "relu_qk" else k], "k_swap", perm=[0, 1, 3, 2]), node("MatMul", [q, "k_swap"], "y")]
        elif reader == "av":
            inits.append(_const(p + "w_a", (_weights(rng, d, t) / np.sqrt(d)).astype(np.float32)))
            nodes += [node("MatMul", [q, "w_a"], "a"), node("Softmax", ["a"], "attn", axis=-1), node("MatMul", ["attn", k], "y")]
        else:
            v_nodes, v = _heads(node, inits, rng, p, "v", t, hkv, d, c, "lin" if pre in ("partial", "halves", "partial_input4") else pre)
            nodes += v_nodes
            v_rep, v = _repeated_heads(node, inits, p, v, spec, "v")
            inits += [_const(p + "scale", np.array(d ** -0.5, np.float32)), _const(p + "merged_out", np.array([1, t, c], np.int64)),
                      _const(p + "w_o", (_weights(rng, c, c) / np.sqrt(c)).astype(np.float32))]
            nodes += v_rep + [node("Transpose", [k], "k_swap", perm=[0, 1, 3, 2]), node("MatMul", [q, "k_swap"], "scores"),
                              node("Mul", ["scores", "scale"], "scaled"), node("Softmax", ["scaled"], "attn", axis=-1),
                              node("MatMul", ["attn", v], "ctx"), node("Transpose", ["ctx"], "ctx_t", perm=[0, 2, 1, 3]),
                              node("Reshape", ["ctx_t", "merged_out"], "merge"), node("MatMul", ["merge", "w_o"], "y")]
    read = {i for n in nodes for i in n.input}
    inputs = [_vi(p + "x", [1, t, c])] if p + "x" in read else []
    if pre.startswith("input") or pre == "partial_input4":
        inputs.append(_vi(p + "k_in", [1, t, hkv, d] if pre == "input_t" else [1, hkv, t, d]))
    return nodes, inits, inputs, [_vi(p + "y", outputs[reader])]




# A third round: an Expand alone, by rank, by how many times it repeats an axis of size 1 and by what
# reads it. (name, input shape, output shape, source, reader): source "relu" (a Relu of the model
# input) or "input"; reader "relu" (a Relu: the model output), "add" (plus a Relu of a second input
# of the output's shape), "relu_add" (a Relu, then that Add), "matmul_w" (times a constant [last, 16]).
EXPAND_READER_PACK = (
    ("r4_n2_relu", (1, 1, 32, 32), (1, 2, 32, 32), "relu", "relu"),
    ("r4_n2_add", (1, 1, 32, 32), (1, 2, 32, 32), "relu", "add"),
    ("r4_n2_relu_add", (1, 1, 32, 32), (1, 2, 32, 32), "relu", "relu_add"),
    ("r4_n2_matmul_w", (1, 1, 32, 32), (1, 2, 32, 32), "relu", "matmul_w"),
    ("r4_n16_add", (1, 1, 32, 32), (1, 16, 32, 32), "relu", "add"),
    ("r4_n64_add", (1, 1, 32, 32), (1, 64, 32, 32), "relu", "add"),
    ("r3_n2_add", (1, 1, 64), (1, 2, 64), "relu", "add"),
    ("r3_n64_add", (1, 1, 64), (1, 64, 64), "relu", "add"),
    ("r3_n64_relu", (1, 1, 64), (1, 64, 64), "relu", "relu"),
    ("r4_h_add", (1, 1, 1, 32), (1, 1, 32, 32), "relu", "add"),
    ("r5_n2_add", (1, 1, 1, 32, 32), (1, 1, 2, 32, 32), "relu", "add"),
    ("r4_n2_relu_input", (1, 1, 32, 32), (1, 2, 32, 32), "input", "relu"),
    ("r4_n2_add_input", (1, 1, 32, 32), (1, 2, 32, 32), "input", "add"),
)


def _expand_reader_case(rng, spec) -> tuple[list, list, list, list]:
    name, shape, out, source, reader = spec
    p = f"expand_{name}_"
    node = _prefixed(p)
    inits = [_const(p + "shape", np.array(out, np.int64))]
    nodes = [node("Relu", ["x"], "x_relu")] if source == "relu" else []
    nodes.append(node("Expand", ["x_relu" if source == "relu" else "x", "shape"], "e"))
    inputs, y_shape = [_vi(p + "x", list(shape))], list(out)
    if reader == "relu":
        nodes.append(node("Relu", ["e"], "y"))
    elif reader == "matmul_w":
        inits.append(_const(p + "w", _weights(rng, out[-1], 16)))
        nodes.append(node("MatMul", ["e", "w"], "y"))
        y_shape = [*out[:-1], 16]
    else:
        inputs.append(_vi(p + "other", list(out)))
        nodes.append(node("Relu", ["other"], "other_relu"))
        if reader == "relu_add":
            nodes.append(node("Relu", ["e"], "e_relu"))
        nodes.append(node("Add", ["e_relu" if reader == "relu_add" else "e", "other_relu"], "y"))
    return nodes, inits, inputs, [_vi(p + "y", y_shape)]


CASES.append(Case("expand_reader_pack", "fresh5: an Expand of an axis of size 1 by rank, repeats and reader (grouped-query attention's one key/value head)",
                  lambda: _packed(_expand_reader_case, EXPAND_READER_PACK, 253), ("rk3588", "rk3566")))
CASES.append(Case("gqa_repeat_pack", "fresh5: grouped-query attention's one key/value head repeated (transformers' repeat_kv: Unsqueeze, Expand, Reshape) by form, reader and source",
                  lambda: _packed(_gqa_case, GQA_REPEAT_PACK, 251, used_only=True), ("rk3588", "rk3566")))
# Two or more key/value heads (the toolkit makes the repeat a Conv), and none; on RK3588 only: on RK3566
# the heads' own swaps of these forms differ from the audit (not this pass's matter).
GQA_HEADS_PACK = (
    ("hf_t32_h2_n2_d32", 32, 2, 2, 32, "hf", "attn"),
    ("hf_t16_h2_n4_d64", 16, 2, 4, 64, "hf", "attn"),
    ("none_t32_h2_d32", 32, 2, 1, 32, "none", "attn"),
    ("pre_t32_h2_n2_d32", 32, 2, 2, 32, "hf", "attn", "relu"),
    ("pre_t16_h2_n4_d64", 16, 2, 4, 64, "hf", "attn", "relu"),
    ("qk_t32_h2_n2_d32", 32, 2, 2, 32, "hf", "qk", "relu"),
    ("relu_t32_h2_n2_d32", 32, 2, 2, 32, "hf", "relu", "relu"),
    ("qk_input4_t32_h2_n2_d32", 32, 2, 2, 32, "hf", "qk", "input4"),
)
CASES.append(Case("gqa_heads_pack", "fresh5: grouped-query attention with two or more key/value heads repeated (a Conv) or none",
                  lambda: _packed(_gqa_case, GQA_HEADS_PACK, 252, used_only=True), ("rk3588",)))


# ---- fresh5 (transformers' LFM2): an RMSNorm's weight written first ----------------------------------

# LFM2's RMSNorm: x.float(), Pow 2, ReduceMean (last axis), Add eps, Sqrt, Div(1, .), Mul, Cast back, then
# weight * x (the weight first; Gemma 3 writes x * (1 + w)), its weight initialised to ones. (name, rank,
# weight ("ones" or "vary"), order ("first" or "second"), cast (the Cast before the weight), reader):
# rank 4 is a projection's heads [1, 32, 2, 32] (q_layernorm), read by the heads' swap [0, 2, 1, 3] then
# a Relu ("swap") or by q @ k^T of two such ("qk"); rank 3 is a Relu of the model input [1, 32, 64]
# (embedding_norm), the model output ("output") or read by a Relu ("relu").
RMS_WEIGHT_PACK = (
    ("r3_first_ones_output", 3, "ones", "first", True, "output"),
    ("r3_second_ones_output", 3, "ones", "second", True, "output"),
    ("r3_first_vary_output", 3, "vary", "first", True, "output"),
    ("r3_second_vary_output", 3, "vary", "second", True, "output"),
    ("r3_first_ones_relu", 3, "ones", "first", True, "relu"),
    ("r3_second_ones_nocast_output", 3, "ones", "second", False, "output"),
    ("r3_first_ones_nocast_output", 3, "ones", "first", False, "output"),
    ("r3_second_vary_nocast_output", 3, "vary", "second", False, "output"),
)
# The heads' norms, on RK3588 only: on RK3566 the heads' split and swap of these forms run on the CPU where
# the audit has the split on the NPU (the RK3566 attention views, not this rule's matter).
RMS_WEIGHT_HEADS_PACK = (
    ("r4_first_ones_swap", 4, "ones", "first", True, "swap"),
    ("r4_second_ones_swap", 4, "ones", "second", True, "swap"),
    ("r4_first_vary_swap", 4, "vary", "first", True, "swap"),
    ("r4_second_vary_swap", 4, "vary", "second", True, "swap"),
    ("r4_first_ones_nocast_swap", 4, "ones", "first", False, "swap"),
    ("r4_first_ones_qk", 4, "ones", "first", True, "qk"),
)


def _rms_normed(node, inits, rng, p: str, x: str, width: int, weight: str, order: str, cast: bool) -> list:
    """LFM2's RMSNorm of `x` over its last axis, then its weight; the result is p + "normed"."""
    w = np.ones(width, np.float32) if weight == "ones" else rng.uniform(0.5, 2.0, width).astype(np.float32)
    inits += [_const(p + "two", np.array(2.0, np.float32)), _const(p + "eps", np.array(1e-5, np.float32)),
              _const(p + "one", np.array(1.0, np.float32)), _const(p + "weight", w)]
    nodes = [node("Cast", [x], "xf", to=TensorProto.FLOAT), node("Pow", ["xf", "two"], "sq"),
             node("ReduceMean", ["sq"], "ms", axes=[-1], keepdims=1), node("Add", ["ms", "eps"], "ms_eps"),
             node("Sqrt", ["ms_eps"], "rms"), node("Div", ["one", "rms"], "inv"), node("Mul", ["xf", "inv"], "scaled")]
    if cast:
        nodes.append(node("Cast", ["scaled"], "scaled_c", to=TensorProto.FLOAT))
    s = "scaled_c" if cast else "scaled"
    return nodes + [node("Mul", ["weight", s] if order == "first" else [s, "weight"], "normed")]


def _rms_weight_case(rng, spec) -> tuple[list, list, list, list]:
    name, rank, weight, order, cast, reader = spec
    p = f"rmsw_{name}_"
    node = _prefixed(p)
    inits, nodes = [], []
    if rank == 3:  # of a computed tensor (LFM2's last residual sum): a Relu of the model input
        nodes += [node("Relu", ["x"], "x_relu")] + _rms_normed(node, inits, rng, p, "x_relu", 64, weight, order, cast)
        if reader == "relu":
            nodes.append(node("Relu", ["normed"], "y"))
        return nodes, inits, [_vi(p + "x", [1, 32, 64])], [_vi(p + ("y" if reader == "relu" else "normed"), [1, 32, 64])]
    parts = ("q", "k") if reader == "qk" else ("q",)
    inits.append(_const(p + "heads", np.array([1, 32, 2, 32], np.int64)))
    for part in parts:
        inits.append(_const(p + part + "_w", (_weights(rng, 64, 64) / 8).astype(np.float32)))
        nodes += [node("MatMul", ["x", part + "_w"], part + "_lin"), node("Reshape", [part + "_lin", "heads"], part + "_split")]
        sub = _prefixed(p + part + "_")
        nodes += _rms_normed(sub, inits, rng, p + part + "_", p + part + "_split", 32, weight, order, cast)
        nodes.append(node("Transpose", [part + "_normed"], part + "_swap", perm=[0, 2, 1, 3]))
    if reader == "qk":
        nodes += [node("Transpose", ["k_swap"], "k_t", perm=[0, 1, 3, 2]), node("MatMul", ["q_swap", "k_t"], "y")]
        out = [1, 2, 32, 32]
    else:
        nodes.append(node("Relu", ["q_swap"], "y"))
        out = [1, 2, 32, 32]
    return nodes, inits, [_vi(p + "x", [1, 32, 64])], [_vi(p + "y", out)]


CASES.append(Case("rms_weight_pack", "fresh5: an RMSNorm's weight written first or second, after a Cast or not, as the model output (LFM2's final norm)",
                  lambda: _packed(_rms_weight_case, RMS_WEIGHT_PACK, 255), ("rk3588", "rk3566")))
CASES.append(Case("rms_weight_heads_pack", "fresh5: an RMSNorm's weight of attention heads written first (LFM2's q/k layernorm)",
                  lambda: _packed(_rms_weight_case, RMS_WEIGHT_HEADS_PACK, 256), ("rk3588",)))


# ---- fresh5 (D-FINE, Mask2Former) on RKNN: run-time int64 data; an Einsum written with spaces ----------------

# D-FINE keeps its top-k queries: TopK's int64 indices [1, K] -> Unsqueeze [1, K, 1] -> Expand to that same shape ->
# Tile over a box's 4 values (or straight over 64 features) -> GatherElements. Mask2Former counts a mask's pixels:
# Less -> Cast to int64 -> ReduceSum. (name, what): "indices_tile4" (through the shape-keeping Expand, Tile by
# [1, 1, 4]), "indices_tile64" (Tile by [1, 1, 64] straight), "values_tile8" (a float [1, 20, 1], a Relu of a model
# input, Tiled by [1, 1, 8] into a Mul), "count" (an int64 ReduceSum of a Less, a float ReduceSum beside it).
INT64_DATA_PACK = (("indices_tile4",), ("indices_tile64",), ("values_tile8",), ("count",))


def _int64_data_case(rng, spec) -> tuple[list, list, list, list]:
    (what,) = spec
    p = f"i64_{what}_"
    node = _prefixed(p)
    if what == "count":
        inits = [_const(p + "half", np.float32(0.5)), _const(p + "last", np.array([-1], np.int64))]
        nodes = [node("Less", ["x", "half"], "lt"), node("Cast", ["lt"], "lt64", to=TensorProto.INT64),
                 node("ReduceSum", ["lt64", "last"], "cnt", keepdims=0), node("Cast", ["cnt"], "y", to=TensorProto.FLOAT),
                 node("ReduceSum", ["x", "last"], "sum", keepdims=0), node("Relu", ["sum"], "yf")]
        return nodes, inits, [_vi(p + "x", [2, 10, 4])], [_vi(p + "y", [2, 10]), _vi(p + "yf", [2, 10])]
    width = {"indices_tile4": 4, "indices_tile64": 64, "values_tile8": 8}[what]
    inits = [_const(p + "k", np.array([20], np.int64)), _const(p + "axis", np.array([2], np.int64)),
             _const(p + "same", np.array([1, 20, 1], np.int64)), _const(p + "reps", np.array([1, 1, width], np.int64))]
    nodes = [node("Relu", ["logits"], "l")]
    nodes.append(helper.make_node("TopK", [p + "l", p + "k"], [p + "vals", p + "idx"], name=p + "topk", axis=1))
    if what == "values_tile8":
        # A float [1, 20, 1] of its own: on RK3566 the Unsqueeze of the TopK's values [1, 20] -> [1, 20, 1] ran on the
        # CPU, straight or through a Relu (measured, not modelled: docs/audit.md), on RK3588 on the NPU.
        nodes = [node("Relu", ["v"], "v1"), node("Tile", ["v1", "reps"], "v8"), node("Mul", ["v8", "m"], "y")]
        return nodes, inits[3:], [_vi(p + "v", [1, 20, 1]), _vi(p + "m", [1, 20, width])], [_vi(p + "y", [1, 20, width])]
    nodes.append(node("Unsqueeze", ["idx", "axis"], "idx1"))
    if what == "indices_tile4":
        nodes.append(node("Expand", ["idx1", "same"], "idx1e"))
    nodes += [node("Tile", ["idx1e" if what == "indices_tile4" else "idx1", "reps"], "idxw"),
              node("GatherElements", ["boxes", "idxw"], "y", axis=1)]
    return nodes, inits, [_vi(p + "logits", [1, 84]), _vi(p + "boxes", [1, 84, width])], [_vi(p + "y", [1, 20, width])]


CASES.append(Case("int64_data_pack", "fresh5: run-time int64 data unsqueezed, tiled and summed (D-FINE's top-k indices, Mask2Former's mask counts)",
                  lambda: _packed(_int64_data_case, INT64_DATA_PACK, 254, opset=13), ("rk3588", "rk3566")))

# transformers' Mask2Former writes torch.einsum("bqc, bchw -> bqhw", ...): the equation keeps its spaces. (name,
# equation): operands are Relus of model inputs (b 1, q 10, c 32, h = w 8, n 64, l = t 16, k 32).
EINSUM_SPACES_PACK = (
    ("plain_map", "bqc,bchw->bqhw"), ("spaced_map", "bqc, bchw -> bqhw"), ("spaced_bmm", "bqc, bcn -> bqn"),
    ("spaced_scores", "bhlk, bhtk -> bhlt"), ("two_after_comma", "bqc,  bcn->bqn"), ("one_after_comma", "bqc, bcn->bqn"),
    ("one_before_arrow", "bqc,bcn ->bqn"), ("one_before_comma", "bqc ,bcn->bqn"), ("one_after_arrow", "bqc,bcn-> bqn"),
    ("one_leading", " bqc,bcn->bqn"), ("around_arrow", "bqc,bchw -> bqhw"),
)
EINSUM_SPACES_DIMS = {"b": 1, "q": 10, "c": 32, "h": 8, "w": 8, "n": 64, "l": 16, "t": 16, "k": 32}


def _einsum_spaces_case(rng, spec) -> tuple[list, list, list, list]:
    name, equation = spec
    p = f"eqsp_{name}_"
    node = _prefixed(p)
    a, rest = equation.replace(" ", "").split(",")
    b, out = rest.split("->")
    shape = lambda term: [EINSUM_SPACES_DIMS[s] for s in term]  # noqa: E731
    nodes = [node("Relu", ["a"], "ra"), node("Relu", ["b"], "rb"), node("Einsum", ["ra", "rb"], "y", equation=equation)]
    return nodes, [], [_vi(p + "a", shape(a)), _vi(p + "b", shape(b))], [_vi(p + "y", shape(out))]


CASES.append(Case("einsum_spaces_pack", "fresh5: an Einsum whose equation keeps spaces (Mask2Former's mask predictor)",
                  lambda: _packed(_einsum_spaces_case, EINSUM_SPACES_PACK, 255, opset=13), ("rk3588", "rk3566")))


# ---- fresh5 (h9-espeiq): a Cast to its own type and a folded Expand shape on ESP-DL; StarReLU before a
# Linear and a token map unflattened before a channels-last layer norm on RKNN; a spectrogram's
# Unsqueeze into a Conv2d through onnx2tf.


def _nop_cast_case(rng, spec):
    """(name, reader): a Relu of the input [1, 8, 16], a Cast to float of it (torch's `.float()` of a
    float tensor, Gemma's and LFM2's RMSNorm), read by `reader`: "relu", "sqrt", "two" (a Relu and a
    Sigmoid, summed), "chain" (a second Cast, then a MatMul with constant weights) or "output" (the
    model's output)."""
    name, reader = spec
    p = f"nopcast_{name}_"
    node = _prefixed(p)
    nodes = [node("Relu", ["x"], "r"), node("Cast", ["r"], "cast", to=TensorProto.FLOAT)]
    inits, out = [], [1, 8, 16]
    if reader == "output":
        return nodes[:1] + [node("Cast", ["r"], "y", to=TensorProto.FLOAT)], [], [_vi(p + "x", [1, 8, 16])], [_vi(p + "y", out)]
    if reader == "two":
        nodes += [node("Relu", ["cast"], "a"), node("Sigmoid", ["cast"], "b"), node("Add", ["a", "b"], "y")]
    elif reader == "chain":
        inits.append(_const(p + "w", _weights(rng, 16, 16)))
        nodes += [node("Cast", ["cast"], "cast2", to=TensorProto.FLOAT), node("MatMul", ["cast2", "w"], "y")]
    else:
        nodes.append(node(reader.capitalize(), ["cast"], "y"))
    return nodes, inits, [_vi(p + "x", [1, 8, 16])], [_vi(p + "y", out)]


def _folded_shape_case(rng, spec):
    """(name, reader): the shape [1, 2, 8, 16] computed from constants as torch.onnx writes an
    Expand's target (ConstantOfShape of the rank, Mul by -1, Equal to the shape, Where; Gemma's
    repeat_kv), read by `reader`: "expand" (Expand of a [1, 1, 8, 16] Relu) or "reshape" (a
    Reshape of a [1, 2, 128] Relu)."""
    name, reader = spec
    p = f"foldshape_{name}_"
    node = _prefixed(p)
    inits = [_const(p + "shape", np.array([1, 2, 8, 16], np.int64)), _const(p + "minus", np.array(-1, np.int64))]
    nodes = [helper.make_node("ConstantOfShape", [p + "rank"], [p + "ones"], name=p + "ones", value=numpy_helper.from_array(np.array([1], np.int64))),
             node("Mul", ["ones", "minus"], "neg"), node("Equal", ["shape", "neg"], "eq"), node("Where", ["eq", "ones", "shape"], "target")]
    inits.append(_const(p + "rank", np.array([4], np.int64)))
    x_shape = [1, 1, 8, 16] if reader == "expand" else [1, 2, 128]
    nodes += [node("Relu", ["x"], "r"), node("Expand" if reader == "expand" else "Reshape", ["r", "target"], "view"), node("Relu", ["view"], "y")]
    return nodes, inits, [_vi(p + "x", x_shape)], [_vi(p + "y", [1, 2, 8, 16])]


NOP_CAST_PACK = (("relu", "relu"), ("sqrt", "sqrt"), ("two", "two"), ("chain", "chain"), ("output", "output"))
FOLDED_SHAPE_PACK = (("expand", "expand"), ("reshape", "reshape"))


def _nop_cast_and_folded_shape_pack() -> onnx.ModelProto:
    rng = np.random.default_rng(281)
    parts = [_nop_cast_case(rng, s) for s in NOP_CAST_PACK] + [_folded_shape_case(rng, s) for s in FOLDED_SHAPE_PACK]
    return _model(*(sum((list(part[i]) for part in parts), []) for i in (0, 2, 3)), inits=sum((list(part[1]) for part in parts), []), opset=14)


CASES.append(Case("nop_cast_folded_shape_pack", "fresh5: a Cast to its own type, and an Expand's or a Reshape's shape folded from constants, through esp-ppq's simplifier",
                  _nop_cast_and_folded_shape_pack, ("esp32s3",)))


def _star_relu_case(rng, spec):
    """(name, reader, bias): tokens [1, 16, 64] through a Linear (MatMul with constant weights) to 128,
    timm's StarReLU s * relu(x)^2 + b (s of one value first, b of one value, both [1]; CAFormer's
    MLP), read by `reader`: "linear" (a MatMul with constant weights, CAFormer's fc2), "linear_bias"
    (the same plus its bias Add and a Relu), "runtime" (a MatMul by a run-time [1, 128, 16]), "sigmoid" (a
    Sigmoid, the model's output) or "conv" (the tokens as a [1, 128, 4, 4] map through a 1x1 Conv
    instead: PoolFormerV2's form); a fourth item False: without the square (s * relu(x) + b)."""
    name, reader, bias, *square = spec
    p = f"star_{name}_"
    node = _prefixed(p)
    conv = reader == "conv"
    inits = [_const(p + "w1", _weights(rng, 128, 64, 1, 1) if conv else _weights(rng, 64, 128)), _const(p + "s", np.array([1.0], np.float32)),
             _const(p + "b", np.array([bias], np.float32)), _const(p + "two", np.array(2.0, np.float32))]
    nodes = [node("Conv" if conv else "MatMul", ["x", "w1"], "fc1", **({"kernel_shape": [1, 1]} if conv else {})),
             node("Relu", ["fc1"], "relu")]
    if square != [False]:
        nodes.append(node("Pow", ["relu", "two"], "sq"))
    nodes += [node("Mul", ["s", "sq" if square != [False] else "relu"], "scaled"), node("Add", ["scaled", "b"], "act")]
    inputs = [_vi(p + "x", [1, 64, 4, 4] if conv else [1, 16, 64])]
    out = [1, 64, 4, 4] if conv else [1, 16, 64]
    if conv:
        inits.append(_const(p + "w2", _weights(rng, 64, 128, 1, 1)))
        nodes.append(node("Conv", ["act", "w2"], "y", kernel_shape=[1, 1]))
    elif reader == "sigmoid":
        nodes.append(node("Sigmoid", ["act"], "y"))
        out = [1, 16, 128]
    elif reader == "runtime":
        inputs.append(_vi(p + "m", [1, 128, 16]))
        nodes.append(node("MatMul", ["act", "m"], "y"))
        out = [1, 16, 16]
    else:
        inits.append(_const(p + "w2", _weights(rng, 128, 64)))
        nodes.append(node("MatMul", ["act", "w2"], "fc2" if reader == "linear_bias" else "y"))
        if reader == "linear_bias":
            inits.append(_const(p + "b2", _weights(rng, 64)))
            nodes += [node("Add", ["b2", "fc2"], "biased"), node("Relu", ["biased"], "y")]
    return nodes, inits, inputs, [_vi(p + "y", out)]


# Measured and left out (2026-12-05): a "linear_bias" variant, fc2 plus its bias Add: the StarReLU on
# the NPU of both chips as here, but the bias Add as the 3-D model output (or a Relu after it) on the
# CPU of RK3566, a mechanism not looked for (the MatMul as the output runs on the NPU).
STAR_RELU_PACK = (("linear", "linear", 0.0), ("runtime", "runtime", 0.0), ("conv", "conv", 0.0),
                  ("linear_b01", "linear", 0.1), ("sigmoid", "sigmoid", 0.0), ("relu_linear", "linear", 0.0, False), ("relu_sigmoid", "sigmoid", 0.0, False))
CASES.append(Case("star_relu_pack", "fresh5: CAFormer's StarReLU s * relu(x)^2 + b (s first, b 0) read by a Linear on tokens, or by a Sigmoid; without the square",
                  lambda: _packed(_star_relu_case, STAR_RELU_PACK, 282, used_only=True, opset=14), ("rk3588", "rk3566")))


def _map_unflatten_case(rng, spec):
    """(name, channels, side, reader): tokens [1, side*side, C] through a Linear, swapped back to
    [1, C, side*side] (Transpose [0, 2, 1]) and unflattened into the map [1, C, side, side] (CAFormer's
    stage end), read by `reader`: "ln" (the next stage's channels-last layer norm: Transpose
    [0, 2, 3, 1], mean, variance, scale and shift, Transpose [0, 3, 1, 2], a strided 3x3 Conv) or
    "gap" (a GlobalAveragePool, the model's output)."""
    name, c, side, reader = spec
    p = f"unflat_{name}_"
    node = _prefixed(p)
    inits = [_const(p + "w", _weights(rng, c, c)), _const(p + "map", np.array([1, c, side, side], np.int64))]
    nodes = [node("MatMul", ["x", "w"], "tokens"), node("Transpose", ["tokens"], "swap", perm=[0, 2, 1]), node("Reshape", ["swap", "map"], "fmap")]
    if reader == "gap":
        nodes.append(node("GlobalAveragePool", ["fmap"], "y"))
        return nodes, inits, [_vi(p + "x", [1, side * side, c])], [_vi(p + "y", [1, c, 1, 1])]
    inits += [_const(p + "two", np.array(2.0, np.float32)), _const(p + "eps", np.array(1e-6, np.float32)),
              _const(p + "gamma", (1 + _weights(rng, c)).astype(np.float32)), _const(p + "beta", _weights(rng, c)), _const(p + "wc", _weights(rng, c, c, 3, 3))]
    nodes += [node("Transpose", ["fmap"], "nhwc", perm=[0, 2, 3, 1]), node("ReduceMean", ["nhwc"], "mean", axes=[-1]), node("Sub", ["nhwc", "mean"], "centred"),
              node("Pow", ["centred", "two"], "sq"), node("ReduceMean", ["sq"], "var", axes=[-1]), node("Add", ["var", "eps"], "var_eps"),
              node("Sqrt", ["var_eps"], "std"), node("Div", ["centred", "std"], "normed"), node("Mul", ["normed", "gamma"], "scaled"),
              node("Add", ["scaled", "beta"], "shifted"), node("Transpose", ["shifted"], "nchw", perm=[0, 3, 1, 2]),
              node("Conv", ["nchw", "wc"], "y", kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2])]
    half = (side + 1) // 2
    return nodes, inits, [_vi(p + "x", [1, side * side, c])], [_vi(p + "y", [1, c, half, half])]


MAP_UNFLATTEN_PACK = (("c64_s4_ln", 64, 4, "ln"), ("c64_s2_ln", 64, 2, "ln"), ("c32_s7_ln", 32, 7, "ln"), ("c64_s8_ln", 64, 8, "ln"),
                      ("c64_s4_gap", 64, 4, "gap"))
CASES.append(Case("map_unflatten_pack", "fresh5: tokens swapped back and unflattened into a map read by a channels-last layer norm (CAFormer's stage end)",
                  lambda: _packed(_map_unflatten_case, MAP_UNFLATTEN_PACK, 283, opset=14), ("rk3566", "rk3588")))


def spectrogram_into_conv2d(variant: str) -> onnx.ModelProto:
    """A [1, T, F] input made a one-channel image for a 3x3 stride-2 Conv2d to 16 channels, then a
    Relu (Parakeet's and NeMo's subsampling): "unsqueeze" (Unsqueeze axis 1 of [1, 100, 80]),
    "relu_first" (a Relu before it), "reshape" (a Reshape to [1, 1, 100, 80] instead), "square"
    ([1, 64, 64]), "no_conv" (the Unsqueeze read by a Sigmoid, the model's output)."""
    rng = np.random.default_rng(284)
    t, f = (64, 64) if variant == "square" else (100, 80)
    inits = [_const("axes", np.array([1], np.int64)), _const("image", np.array([1, 1, t, f], np.int64)),
             _const("w", _weights(rng, 16, 1, 3, 3)), _const("b", _weights(rng, 16))]
    nodes = [helper.make_node("Relu", ["x"], ["xr"], name="relu_in")] if variant == "relu_first" else []
    source = "xr" if variant == "relu_first" else "x"
    if variant == "reshape":
        nodes.append(helper.make_node("Reshape", [source, "image"], ["u"], name="to_image"))
    else:
        nodes.append(helper.make_node("Unsqueeze", [source, "axes"], ["u"], name="to_image"))
    if variant == "no_conv":
        nodes.append(helper.make_node("Sigmoid", ["u"], ["y"], name="sigmoid"))
        return _model(nodes, [_vi("x", [1, t, f])], [_vi("y", [1, 1, t, f])], inits[:1], opset=14)
    nodes += [helper.make_node("Conv", ["u", "w", "b"], ["c"], name="conv", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
              helper.make_node("Relu", ["c"], ["y"], name="relu")]
    return _model(nodes, [_vi("x", [1, t, f])], [_vi("y", [1, 16, (t + 1) // 2, (f + 1) // 2])], [i for i in inits if i.name != ("image" if variant != "reshape" else "axes")], opset=14)


CASES += [Case(f"spectrogram_conv2d_{v}", "fresh5: a spectrogram [1, T, F] made a one-channel image for a Conv2d (Parakeet's subsampling) through onnx2tf",
               lambda v=v: spectrogram_into_conv2d(v), ("imx93",)) for v in ("unsqueeze", "relu_first", "reshape", "square", "no_conv")]


def masked_attention_esp(variant: str) -> onnx.ModelProto:
    """q @ k^T * d^-0.5 plus an upper-triangular mask, Softmax, @ v (q, k, v [1, 2, 16, 32] model
    inputs through Relus), as esp-ppq's Attention fusion takes it: "min" (a mask of float32's lowest
    value), "min_alibi" (an ALiBi-like bias [1, 2, 1, 16] Added before the mask: BLOOM's baddbmm),
    "min_reshape" (the scores through Reshapes to [2, 16, 16] and back before the mask) and
    "1e9_alibi" (a mask of -1e9, with the bias)."""
    heads, tokens, d = 2, 16, 32
    value = -1e9 if variant.startswith("1e9") else float(np.finfo(np.float32).min)
    inits = [_const("scale", np.array(d ** -0.5, np.float32)), _const("mask", np.triu(np.full([1, 1, tokens, tokens], value, np.float32), 1))]
    nodes = [helper.make_node("Relu", [i], [f"r{i}"], name=f"relu_{i}") for i in "qkv"]
    nodes += [helper.make_node("Transpose", ["rk"], ["kt"], name="k_t", perm=[0, 1, 3, 2]), helper.make_node("MatMul", ["rq", "kt"], ["s"], name="scores"),
              helper.make_node("Mul", ["s", "scale"], ["ss"], name="scale_mul")]
    scores = "ss"
    if variant.endswith("alibi"):
        slopes = np.array([-0.5, -0.25], np.float32)[None, :, None, None]
        inits.append(_const("alibi", (np.arange(tokens, dtype=np.float32)[None, None, None, :] * slopes).astype(np.float32)))
        nodes.append(helper.make_node("Add", ["ss", "alibi"], ["sa"], name="alibi_add"))
        scores = "sa"
    if variant.endswith("reshape"):
        inits += [_const("s3", np.array([heads, tokens, tokens], np.int64)), _const("s4", np.array([1, heads, tokens, tokens], np.int64))]
        nodes += [helper.make_node("Reshape", ["ss", "s3"], ["s3o"], name="to_3d"), helper.make_node("Reshape", ["s3o", "s4"], ["s4o"], name="to_4d")]
        scores = "s4o"
    nodes += [helper.make_node("Add", [scores, "mask"], ["m"], name="mask_add"), helper.make_node("Softmax", ["m"], ["p"], name="softmax", axis=-1),
              helper.make_node("MatMul", ["p", "rv"], ["y"], name="context")]
    return _model(nodes, [_vi(i, [1, heads, tokens, d]) for i in "qkv"], [_vi("y", [1, heads, tokens, d])], inits, opset=14)


CASES += [Case(f"masked_attention_esp_{v}", "fresh3/fresh5: attention with a mask of float32's lowest value, fused by esp-ppq into one Attention layer or calibrated on its own (BLOOM)",
               lambda v=v: masked_attention_esp(v), ("esp32s3",)) for v in ("min", "min_alibi", "min_reshape", "1e9_alibi")]


# ---- fresh5 (transformers' PatchTST, PatchTSMixer, Mimi): a series input scaled by ones, padded, patched ----

# PatchTST's and PatchTSMixer's scaler multiplies the [1, T, C] series input by its observed mask, a
# constant of ones [1, T, C], and sums it over the time axis. (name, input shape, ones' shape ("full" or
# "vec": [C]), reader ("sum": ReduceSum over axis 1, kept; "relu"), a second reader of the input (None or
# "relu")).
SCALED_INPUT_PACK = (
    ("t64_c3_full_sum", (1, 64, 3), "full", "sum", None), ("t64_c3_full_sum_2", (1, 64, 3), "full", "sum", "relu"),
    ("t64_c3_full_relu", (1, 64, 3), "full", "relu", None), ("t64_c3_vec_sum", (1, 64, 3), "vec", "sum", None),
    ("t64_c3_vec_relu", (1, 64, 3), "vec", "relu", None), ("t32_c80_full_relu", (1, 32, 80), "full", "relu", None),
    ("t32_c80_vec_sum", (1, 32, 80), "vec", "sum", None), ("t64_c16_full_sum", (1, 64, 16), "full", "sum", None),
) + tuple((f"t64_c{c}_vec_relu", (1, 64, c), "vec", "relu", None) for c in (1, 2, 4, 8, 12, 24, 32, 48)) + (
    ("t63_c16_vec_relu", (1, 63, 16), "vec", "relu", None), ("t64_c3_identity_relu", (1, 64, 3), "identity", "relu", None),
    ("t64_c8_identity_relu", (1, 64, 8), "identity", "relu", None), ("t64_c24_identity_relu", (1, 64, 24), "identity", "relu", None),
)


def _scaled_input_case(rng, spec) -> tuple[list, list, list, list]:
    name, shape, ones, reader, second = spec
    p = f"ones_{name}_"
    node = _prefixed(p)
    inits = [_const(p + "ones", np.ones(shape if ones == "full" else shape[-1:], np.float32)), _const(p + "axis", np.array([1], np.int64))]
    nodes = [node("Identity", ["x"], "masked")] if ones == "identity" else [node("Mul", ["x", "ones"], "masked")]
    if reader == "sum":
        nodes.append(node("ReduceSum", ["masked", "axis"], "y", keepdims=1))
        outs = [_vi(p + "y", [1, 1, shape[-1]])]
    else:
        nodes.append(node("Relu", ["masked"], "y"))
        outs = [_vi(p + "y", list(shape))]
    if second:
        nodes.append(node("Relu", ["x"], "y2"))
        outs.append(_vi(p + "y2", list(shape)))
    return nodes, inits, [_vi(p + "x", list(shape))], outs


CASES.append(Case("scaled_input_pack", "fresh5: a series model input multiplied by ones (PatchTST's observed mask), summed over time",
                  lambda: _packed(_scaled_input_case, SCALED_INPUT_PACK, 301), ("rk3588", "rk3566")))


# Mimi's first Conv1d is padded causally: a constant Pad of the [1, 1, L] audio input (left kernel - 1,
# pads computed from static shapes) straight into a Conv1d of kernel 7 (1 -> 8 channels).
# (name, input shape, (left, right), producer ("input" or "relu"), kernel)
UNIT_CHANNEL_PAD_PACK = (
    ("l4000_left6", (1, 1, 4000), (6, 0), "input", 7), ("l4000_both3", (1, 1, 4000), (3, 3), "input", 7),
    ("l576_left6", (1, 1, 576), (6, 0), "input", 7), ("l64_left6", (1, 1, 64), (6, 0), "input", 7),
    ("c4_l4000_left6", (1, 4, 4000), (6, 0), "input", 7), ("l4000_left6_relu", (1, 1, 4000), (6, 0), "relu", 7),
    ("l4000_left15_k16", (1, 1, 4000), (15, 0), "input", 16),
) + tuple((f"l{n}_left6_relu", (1, 1, n), (6, 0), "relu", 7) for n in (128, 256, 320, 400, 448, 480, 496, 504, 511, 512, 520, 1024)) + (
    ("c2_l576_left6_relu", (1, 2, 576), (6, 0), "relu", 7), ("l506_left6_relu", (1, 1, 506), (6, 0), "relu", 7),
    ("l507_left6_relu", (1, 1, 507), (6, 0), "relu", 7), ("l509_left3_relu", (1, 1, 509), (3, 0), "relu", 7),
    ("l510_left3_relu", (1, 1, 510), (3, 0), "relu", 7),
)


def _unit_channel_pad_case(rng, spec) -> tuple[list, list, list, list]:
    name, shape, (left, right), producer, kernel = spec
    p = f"upad_{name}_"
    node = _prefixed(p)
    inits = [_const(p + "pads", np.array([0, 0, left, 0, 0, right], np.int64)), _const(p + "w", _weights(rng, 8, shape[1], kernel)),
             _const(p + "b", _weights(rng, 8))]
    nodes = [node("Relu", ["x"], "r")] if producer == "relu" else []
    nodes += [node("Pad", ["r" if producer == "relu" else "x", "pads"], "padded", mode="constant"),
              node("Conv", ["padded", "w", "b"], "y")]
    length = shape[2] + left + right - kernel + 1
    return nodes, inits, [_vi(p + "x", list(shape))], [_vi(p + "y", [1, 8, length])]


CASES.append(Case("unit_channel_pad_pack", "fresh5: a constant Pad of a [1, 1, L] audio input into a Conv1d (Mimi's causal padding)",
                  lambda: _packed(_unit_channel_pad_case, UNIT_CHANNEL_PAD_PACK, 302, opset=13), ("rk3588", "rk3566")))


# PatchTST's and PatchTSMixer's patchifier: the series [1, T, C] cut into N patches of P steps by Slices
# along the time axis, each swapped [0, 2, 1] to [1, C, P], Unsqueezed on axis 1 and Concatenated into
# [1, N, C, P], swapped [0, 2, 1, 3] to [1, C, N, P] into a Linear over the patch (or a Relu).
# (name, T, C, P, source ("div": the scaler's Div by a run-time std, a CPU layer; "relu"), reader)
PATCHIFY_PACK = (
    ("c3_p8_div_linear", 64, 3, 8, "div", "linear"), ("c3_p8_relu_linear", 64, 3, 8, "relu", "linear"),
    ("c3_p8_relu_relu", 64, 3, 8, "relu", "relu"), ("c8_p8_relu_linear", 64, 8, 8, "relu", "linear"),
    ("c16_p16_relu_linear", 64, 16, 16, "relu", "linear"),
)
# Measured with the pack (RK3566, 2026-12-05), not held: 4 patches of 16 steps of 3 channels from the Div,
# into the Linear: the Transpose after the Concat on the CPU where the audit merges it into the Linear (as
# PatchTST's and PatchTSMixer's Transpose_8; 8 patches of 8 in the pack: merged, NPU). The swaps: NPU.
PATCHIFY_MEASURED = (("c3_p16_div_linear", 64, 3, 16, "div", "linear"),)
# PatchTST's reader of the swap after the Concat: the Linear's result with its positions, viewed [C, N, D], then
# (or not) its BatchNorm between two swaps (RK3566, 2026-12-05; measured, not held: docs/audit.md).
PATCHIFY_READERS = (("c3_p8_div_view", 64, 3, 8, "div", "linear_view"), ("c3_p8_div_view_bn", 64, 3, 8, "div", "linear_view_bn"))


def _patchify_case(rng, spec) -> tuple[list, list, list, list]:
    name, t, c, size, source, reader = spec
    p = f"patch_{name}_"
    node = _prefixed(p)
    n = t // size
    inits = [_const(p + "axis", np.array([1], np.int64)), _const(p + "w", _weights(rng, size, 32)), _const(p + "b", _weights(rng, 32)),
             _const(p + "eps", np.array(1e-5, np.float32))]
    nodes = [node("Relu", ["x"], "r")]
    series = "r"
    if source == "div":
        nodes += [node("ReduceMean", ["r"], "mean", axes=[1], keepdims=1), node("Add", ["mean", "eps"], "var"),
                  node("Sqrt", ["var"], "std"), node("Div", ["r", "std"], "scaled")]
        series = "scaled"
    pieces = []
    for i in range(n):
        inits += [_const(p + f"s{i}", np.array([i * size], np.int64)), _const(p + f"e{i}", np.array([(i + 1) * size], np.int64))]
        nodes += [node("Slice", [series, f"s{i}", f"e{i}", "axis"], f"slice{i}"), node("Transpose", [f"slice{i}"], f"swap{i}", perm=[0, 2, 1]),
                  node("Unsqueeze", [f"swap{i}", "axis"], f"patch{i}")]
        pieces.append(f"patch{i}")
    nodes += [node("Concat", pieces, "patches", axis=1), node("Transpose", ["patches"], "by_channel", perm=[0, 2, 1, 3])]
    if reader == "linear":
        nodes += [node("MatMul", ["by_channel", "w"], "lin"), node("Add", ["lin", "b"], "y")]
        out = [1, c, n, 32]
    elif reader in ("linear_view", "linear_view_bn"):  # PatchTST: the bias first, positions added, the channels into the batch
        inits += [_const(p + "pos", _weights(rng, n, 32)), _const(p + "batched", np.array([c, n, 32], np.int64))]
        nodes += [node("MatMul", ["by_channel", "w"], "lin"), node("Add", ["b", "lin"], "biased"), node("Add", ["biased", "pos"], "placed"),
                  node("Reshape", ["placed", "batched"], "y" if reader == "linear_view" else "flat")]
        out = [c, n, 32]
        if reader == "linear_view_bn":  # then its BatchNorm over the features, swapped there and back
            inits += [_const(p + "g", np.ones(32, np.float32)), _const(p + "beta", np.zeros(32, np.float32)),
                      _const(p + "mu", np.zeros(32, np.float32)), _const(p + "bn_var", np.ones(32, np.float32))]
            nodes += [node("Transpose", ["flat"], "nf", perm=[0, 2, 1]), node("BatchNormalization", ["nf", "g", "beta", "mu", "bn_var"], "bn"),
                      node("Transpose", ["bn"], "y", perm=[0, 2, 1])]
    else:
        nodes.append(node("Relu", ["by_channel"], "y"))
        out = [1, c, n, size]
    return nodes, inits, [_vi(p + "x", [1, t, c])], [_vi(p + "y", out)]


CASES.append(Case("patchify_pack", "fresh5: a series cut into patches by Slices, each swapped and Concatenated, then swapped by channel (PatchTST)",
                  lambda: _packed(_patchify_case, PATCHIFY_PACK, 303, opset=13), ("rk3566", "rk3588")))


# ---- fresh5 (transformers' ModernBERT): a joint q/k/v projection's heads rotated before the scores ----

# ModernBERT's attention: one Linear to [1, T, 3C], viewed [1, T, 3, H, D], Transposed [0, 3, 2, 1, 4] to
# [1, H, 3, T, D], Split on axis 2 and Squeezed ("mb"; "timm": [2, 0, 3, 1, 4], Split on axis 0), q and k
# rotated (x * cos + rotate(x) * sin: "halves", Concat(-x2, x1), as ModernBERT; "interleaved", as RoFormer;
# "none"), k swapped [0, 1, 3, 2] into the scores, Softmax, @ v, heads merged, Linear. (name, layout, rotation, T, H, D)
JOINT_ROTARY_PACK = (
    ("mb_halves_t32h2d32", "mb", "halves", 32, 2, 32), ("mb_none_t32h2d32", "mb", "none", 32, 2, 32),
    ("timm_halves_t32h2d32", "timm", "halves", 32, 2, 32),
    ("timm_none_t32h2d32", "timm", "none", 32, 2, 32), ("mb_halves_t16h4d16", "mb", "halves", 16, 4, 16),
)
# Measured with the pack (RK3566, 2026-12-05), not held: the "mb" layout rotated interleaved, whose split
# runs on the CPU as the others' but whose key swap runs on the NPU (the audit: a CPU layer, as with halves).
JOINT_ROTARY_MEASURED = (("mb_int_t32h2d32", "mb", "interleaved", 32, 2, 32),)


def _rotated(node, x: str, part: str, form: str, d: int, h: int, t: int) -> list:
    """x * cos + rotate(x) * sin on heads [1, H, T, D] (`form` "halves" or "interleaved"), the result named part + "r"."""
    if form == "halves":
        nodes = [node("Slice", [x, "zero", "half", "last"], f"{part}_x1"), node("Slice", [x, "half", "big", "last"], f"{part}_x2"),
                 node("Neg", [f"{part}_x2"], f"{part}_neg"), node("Concat", [f"{part}_neg", f"{part}_x1"], f"{part}_rot", axis=-1)]
    else:
        nodes = [node("Slice", [x, "one", "big", "last", "two"], f"{part}_odd"), node("Neg", [f"{part}_odd"], f"{part}_neg"),
                 node("Slice", [x, "zero", "big", "last", "two"], f"{part}_even"),
                 node("Unsqueeze", [f"{part}_neg", "minus1"], f"{part}_u1"), node("Unsqueeze", [f"{part}_even", "minus1"], f"{part}_u0"),
                 node("Concat", [f"{part}_u1", f"{part}_u0"], f"{part}_st", axis=-1), node("Reshape", [f"{part}_st", "shape4"], f"{part}_rot")]
    return nodes + [node("Mul", [x, "cos"], f"{part}_c"), node("Mul", [f"{part}_rot", "sin"], f"{part}_s"), node("Add", [f"{part}_c", f"{part}_s"], f"{part}r")]


def _joint_rotary_case(rng, spec) -> tuple[list, list, list, list]:
    name, layout, form, t, h, d = spec
    p = f"jrot_{name}_"
    node = _prefixed(p)
    c = h * d
    axis = 2 if layout == "mb" else 0
    inits = [_const(p + "w_qkv", _weights(rng, c, 3 * c)), _const(p + "heads", np.array([1, t, 3, h, d], np.int64)),
             _const(p + "split", np.array([1, 1, 1], np.int64)), _const(p + "axis", np.array([axis], np.int64)),
             _const(p + "cos", _weights(rng, 1, 1, t, d)), _const(p + "sin", _weights(rng, 1, 1, t, d)),
             _const(p + "scale", np.array(d ** -0.5, np.float32)), _const(p + "merged", np.array([1, t, c], np.int64)),
             _const(p + "wo", _weights(rng, c, c)), _const(p + "one", np.array([1], np.int64)), _const(p + "zero", np.array([0], np.int64)),
             _const(p + "big", np.array([2 ** 62], np.int64)), _const(p + "last", np.array([3], np.int64)), _const(p + "two", np.array([2], np.int64)),
             _const(p + "minus1", np.array([-1], np.int64)), _const(p + "half", np.array([d // 2], np.int64)),
             _const(p + "shape4", np.array([1, h, t, d], np.int64))]
    nodes = [node("MatMul", ["x", "w_qkv"], "qkv"), node("Reshape", ["qkv", "heads"], "qkv5"),
             node("Transpose", ["qkv5"], "qkv_t", perm=[0, 3, 2, 1, 4] if layout == "mb" else [2, 0, 3, 1, 4]),
             helper.make_node("Split", [p + "qkv_t", p + "split"], [p + "q5", p + "k5", p + "v5"], name=p + "split_qkv", axis=axis),
             node("Squeeze", ["q5", "axis"], "q"), node("Squeeze", ["k5", "axis"], "k"), node("Squeeze", ["v5", "axis"], "v")]
    q, k = "q", "k"
    if form != "none":
        nodes += _rotated(node, "q", "q", form, d, h, t) + _rotated(node, "k", "k", form, d, h, t)
        q, k = "qr", "kr"
    nodes += [node("Transpose", [k], "kt", perm=[0, 1, 3, 2]), node("MatMul", [q, "kt"], "s0"), node("Mul", ["s0", "scale"], "scores"),
              node("Softmax", ["scores"], "probs", axis=-1), node("MatMul", ["probs", "v"], "o4"), node("Transpose", ["o4"], "o_t", perm=[0, 2, 1, 3]),
              node("Reshape", ["o_t", "merged"], "o"), node("MatMul", ["o", "wo"], "y")]
    return nodes, inits, [_vi(p + "x", [1, t, c])], [_vi(p + "y", [1, t, c])]


CASES.append(Case("joint_rotary_pack", "fresh5: a joint q/k/v projection split from [1, H, 3, T, D] and rotated before the scores (ModernBERT)",
                  lambda: _packed(_joint_rotary_case, JOINT_ROTARY_PACK, 304, used_only=True, opset=13), ("rk3566", "rk3588")))


# ---- fresh5 (transformers' Moonshine): a rotary embedding on part of each head ------------------------

# Moonshine's attention: q, k and v each a Linear, the heads split (Reshape [1, T, H, D], Transpose
# [0, 2, 1, 3]); q and k cut on the last axis into the rotated part (the first R values, rotated
# interleaved, as Moonshine, or by halves) and the rest, Concatenated back; then the scores, Softmax, @ v,
# heads merged, Linear. (name, rotation, T, H, D, R)
PARTIAL_ROTARY_PACK = (
    ("int_t9h2d32r28", "interleaved", 9, 2, 32, 28), ("int_t16h2d32r16", "interleaved", 16, 2, 32, 16),
    ("int_t32h4d16r8", "interleaved", 32, 4, 16, 8),
)
# Measured with the pack (RK3566, 2026-12-05), not held: part of each head rotated by halves, where q's
# Transpose merges as with interleaved and k's split, Transpose and swap run on the CPU (the audit: NPU).
PARTIAL_ROTARY_MEASURED = (("halves_t9h2d32r28", "halves", 9, 2, 32, 28),)


def _partial_rotary_case(rng, spec) -> tuple[list, list, list, list]:
    name, form, t, h, d, r = spec
    p = f"prot_{name}_"
    node = _prefixed(p)
    c = h * d
    inits = [_const(p + "heads", np.array([1, t, h, d], np.int64)), _const(p + "merged", np.array([1, t, c], np.int64)),
             _const(p + "cos", _weights(rng, 1, 1, t, r)), _const(p + "sin", _weights(rng, 1, 1, t, r)),
             _const(p + "scale", np.array(d ** -0.5, np.float32)), _const(p + "wo", _weights(rng, c, c)),
             _const(p + "one", np.array([1], np.int64)), _const(p + "zero", np.array([0], np.int64)), _const(p + "big", np.array([2 ** 62], np.int64)),
             _const(p + "last", np.array([3], np.int64)), _const(p + "two", np.array([2], np.int64)), _const(p + "minus1", np.array([-1], np.int64)),
             _const(p + "half", np.array([r // 2], np.int64)), _const(p + "shape4", np.array([1, h, t, r], np.int64)),
             _const(p + "rot", np.array([r], np.int64))]
    nodes = []
    for part in "qkv":
        inits.append(_const(p + f"w{part}", _weights(rng, c, c)))
        nodes += [node("MatMul", ["x", f"w{part}"], f"{part}0"), node("Reshape", [f"{part}0", "heads"], f"{part}2"),
                  node("Transpose", [f"{part}2"], f"{part}3", perm=[0, 2, 1, 3])]
    for part in "qk":
        nodes += [node("Slice", [f"{part}3", "zero", "rot", "last"], f"{part}_a"), node("Slice", [f"{part}3", "rot", "big", "last"], f"{part}_pass")]
        nodes += _rotated(node, f"{part}_a", part, form, r, h, t)
        nodes.append(node("Concat", [f"{part}r", f"{part}_pass"], f"{part}_full", axis=-1))
    nodes += [node("Transpose", ["k_full"], "kt", perm=[0, 1, 3, 2]), node("MatMul", ["q_full", "kt"], "s0"), node("Mul", ["s0", "scale"], "scores"),
              node("Softmax", ["scores"], "probs", axis=-1), node("MatMul", ["probs", "v3"], "o4"), node("Transpose", ["o4"], "o_t", perm=[0, 2, 1, 3]),
              node("Reshape", ["o_t", "merged"], "o"), node("MatMul", ["o", "wo"], "y")]
    return nodes, inits, [_vi(p + "x", [1, t, c])], [_vi(p + "y", [1, t, c])]


CASES.append(Case("partial_rotary_pack", "fresh5: a rotary embedding on the first values of each head, the rest passed through (Moonshine)",
                  lambda: _packed(_partial_rotary_case, PARTIAL_ROTARY_PACK, 305, used_only=True, opset=13), ("rk3566", "rk3588")))


# ---- fresh5 (transformers' Parakeet): a 3-D spectrogram input made a Conv2d's input ------------------

# Parakeet's subsampling: the [1, T, F] features Unsqueezed on axis 1 ([1, 1, T, F]) into a 3x3 stride-2
# Conv2d (1 -> 16), a Relu. (name, T, F, how ("unsqueeze" or "reshape"), producer ("input" or "relu"),
# reader ("conv" or "relu"))
SPECTROGRAM_CONV_PACK = (
    ("t100_f80", 100, 80, "unsqueeze", "input", "conv"), ("t100_f64", 100, 64, "unsqueeze", "input", "conv"),
    ("t100_f40", 100, 40, "unsqueeze", "input", "conv"), ("t50_f24", 50, 24, "unsqueeze", "input", "conv"),
    ("t100_f80_reshape", 100, 80, "reshape", "input", "conv"),
    ("t100_f80_relu_in", 100, 80, "unsqueeze", "relu", "conv"), ("t100_f80_relu_out", 100, 80, "unsqueeze", "input", "relu"),
)
# Measured with the pack (2026-12-05), not held: 3 features, the Unsqueeze on the CPU of RK3566 (as the others)
# and of RK3588 too (the audit: NPU there; 24, 40, 64, 80 features: NPU).
SPECTROGRAM_CONV_MEASURED = (("t100_f3", 100, 3, "unsqueeze", "input", "conv"),)


def _spectrogram_conv_case(rng, spec) -> tuple[list, list, list, list]:
    name, t, f, how, producer, reader = spec
    p = f"spec_{name}_"
    node = _prefixed(p)
    inits = [_const(p + "axis", np.array([1], np.int64)), _const(p + "shape", np.array([1, 1, t, f], np.int64)),
             _const(p + "w", _weights(rng, 16, 1, 3, 3)), _const(p + "b", _weights(rng, 16))]
    nodes = [node("Relu", ["x"], "r")] if producer == "relu" else []
    x = "r" if producer == "relu" else "x"
    nodes.append(node("Unsqueeze", [x, "axis"], "map") if how == "unsqueeze" else node("Reshape", [x, "shape"], "map"))
    if reader == "conv":
        nodes += [node("Conv", ["map", "w", "b"], "c", pads=[1, 1, 1, 1], strides=[2, 2]), node("Relu", ["c"], "y")]
        out = [1, 16, (t + 1) // 2, (f + 1) // 2]
    else:
        nodes.append(node("Relu", ["map"], "y"))
        out = [1, 1, t, f]
    return nodes, inits, [_vi(p + "x", [1, t, f])], [_vi(p + "y", out)]


CASES.append(Case("spectrogram_conv_pack", "fresh5: a 3-D spectrogram model input Unsqueezed into a Conv2d (Parakeet's subsampling)",
                  lambda: _packed(_spectrogram_conv_case, SPECTROGRAM_CONV_PACK, 306, opset=13), ("rk3566", "rk3588")))


# ---- fresh5 (transformers' Speech2Text): features swapped into Conv1d's with GLUs, swapped back --------

# Speech2Text's subsampler: the [1, T, F] features swapped [0, 2, 1] into a Conv1d (kernel 5, stride 2,
# F -> 2C), a GLU (Split in two on the channels, a Sigmoid of the second, multiplied), again (C -> 2C'), and
# the result swapped back [0, 2, 1] into tokens scaled by a constant. (name, T, F, C, source ("input" or
# "relu": a Relu of the input first), act ("glu" or "relu": a Relu after each Conv1d, C channels))
SPEECH_CONV_GLU_PACK = (
    ("t100_f80_glu", 100, 80, 32, "input", "glu"), ("t64_f40_glu", 64, 40, 16, "input", "glu"),
    ("t100_f24_glu", 100, 24, 32, "input", "glu"), ("t100_f80_glu_relu_in", 100, 80, 32, "relu", "glu"),
    ("t100_f80_relu", 100, 80, 32, "input", "relu"),
)


def _speech_conv_glu_case(rng, spec) -> tuple[list, list, list, list]:
    name, t, f, c, source, act = spec
    p = f"s2t_{name}_"
    node = _prefixed(p)
    width = 2 * c if act == "glu" else c
    inits = [_const(p + "w0", _weights(rng, width, f, 5)), _const(p + "b0", _weights(rng, width)),
             _const(p + "w1", _weights(rng, width, c, 5)), _const(p + "b1", _weights(rng, width)),
             _const(p + "halves", np.array([c, c], np.int64)), _const(p + "scale", np.array(8.0, np.float32))]
    nodes = [node("Relu", ["x"], "r")] if source == "relu" else []
    nodes.append(node("Transpose", ["r" if source == "relu" else "x"], "swap_in", perm=[0, 2, 1]))
    x = "swap_in"
    for i in range(2):
        nodes.append(node("Conv", [x, f"w{i}", f"b{i}"], f"conv{i}", pads=[2, 2], strides=[2]))
        if act == "glu":
            nodes += [helper.make_node("Split", [p + f"conv{i}", p + "halves"], [p + f"a{i}", p + f"g{i}"], name=p + f"split{i}", axis=1),
                      node("Sigmoid", [f"g{i}"], f"sig{i}"), node("Mul", [f"a{i}", f"sig{i}"], f"glu{i}")]
            x = f"glu{i}"
        else:
            nodes.append(node("Relu", [f"conv{i}"], f"act{i}"))
            x = f"act{i}"
    length = (t + 1) // 2
    length = (length + 1) // 2
    nodes += [node("Transpose", [x], "swap_out", perm=[0, 2, 1]), node("Mul", ["swap_out", "scale"], "y")]
    return nodes, inits, [_vi(p + "x", [1, t, f])], [_vi(p + "y", [1, length, c])]


# Measured (RK3566 and RK3588, 2026-12-05), not modelled, so not a held case (docs/audit.md): build it with
# _packed(_speech_conv_glu_case, SPEECH_CONV_GLU_PACK, 307, opset=13).


# ---- fresh5 (transformers' Mimi): the rotation by halves on every head, by token count ---------------

# RoFormer's attention form (_rotary_heads_case) rotated by halves (Concat(-x2, x1)), as Mimi's
# transformer does, over aligned and unaligned token counts. (name, form, T, H, D)
ROTARY_HALVES_TOKENS_PACK = (
    ("halves_t7h2d32", "halves", 7, 2, 32), ("halves_t9h2d32", "halves", 9, 2, 32), ("halves_t16h2d32", "halves", 16, 2, 32),
    ("halves_t20h4d16", "halves", 20, 4, 16), ("halves_t32h2d32", "halves", 32, 2, 32),
)
CASES.append(Case("rotary_halves_tokens_pack", "fresh5: the rotation by halves on the heads right after their split, by token count (Mimi)",
                  lambda: _packed(_rotary_heads_case, ROTARY_HALVES_TOKENS_PACK, 308, used_only=True, opset=13), ("rk3566",)))


# ---- fresh5 (transformers' Mimi): tokens swapped back into a padded Conv1d -----------------------------

# Mimi's transformer output: tokens [1, T, C] (a Linear, a layer scale and a residual Add) swapped [0, 2, 1]
# into its downsampling Conv1d, padded first (a constant Pad of the last axis, folded into the Conv), or not.
# (name, T, C, pad (left, right) or None, kernel, stride)
TOKENS_INTO_PADDED_CONV_PACK = (
    ("t7_c64_pad", 7, 64, (3, 0), 4, 2), ("t16_c64_pad", 16, 64, (3, 0), 4, 2), ("t9_c32_pad", 9, 32, (2, 0), 3, 1),
    ("t7_c64_nopad", 7, 64, None, 4, 2),
)


def _tokens_into_padded_conv_case(rng, spec) -> tuple[list, list, list, list]:
    name, t, c, pad, kernel, stride, *mode = spec
    p = f"tpc_{name}_"
    node = _prefixed(p)
    inits = [_const(p + "w_lin", _weights(rng, c, c)), _const(p + "gamma", np.full(c, 0.1, np.float32)),
             _const(p + "w", _weights(rng, c, c, kernel)), _const(p + "b", _weights(rng, c))]
    nodes = [node("MatMul", ["x", "w_lin"], "lin"), node("Mul", ["lin", "gamma"], "scaled"), node("Add", ["x", "scaled"], "res"),
             node("Transpose", ["res"], "swap", perm=[0, 2, 1])]
    x, length = "swap", t
    if pad is not None:
        inits.append(_const(p + "pads", np.array([0, 0, pad[0], 0, 0, pad[1]], np.int64)))
        nodes.append(node("Pad", ["swap", "pads"], "padded", mode=mode[0] if mode else "constant"))
        x, length = "padded", t + pad[0] + pad[1]
    nodes.append(node("Conv", [x, "w", "b"], "y", strides=[stride]))
    return nodes, inits, [_vi(p + "x", [1, t, c])], [_vi(p + "y", [1, c, (length - kernel) // stride + 1])]


CASES.append(Case("tokens_into_padded_conv_pack", "fresh5: tokens swapped back into a padded Conv1d (Mimi's downsampling after its transformer)",
                  lambda: _packed(_tokens_into_padded_conv_case, TOKENS_INTO_PADDED_CONV_PACK, 309, opset=13), ("rk3566", "rk3588")))
# h16-rk66t: Mimi pads its downsampling input by repeating the edge (mode "edge"), not with zeros. (as above, mode)
TOKENS_INTO_EDGE_PAD_PACK = (
    ("t7_c64_edge", 7, 64, (3, 0), 4, 2, "edge"), ("t16_c64_edge", 16, 64, (3, 0), 4, 2, "edge"), ("t9_c32_edge", 9, 32, (2, 0), 3, 1, "edge"),
    ("t16_c64_reflect", 16, 64, (3, 0), 4, 2, "reflect"), ("t125_c64_edge", 125, 64, (2, 1), 4, 2, "edge"),
    ("t125_c64_const", 125, 64, (2, 1), 4, 2, "constant"), ("t16_c64_edge21", 16, 64, (2, 1), 4, 2, "edge"),
    ("t128_c64_edge", 128, 64, (2, 1), 4, 2, "edge"), ("t13_c64_edge", 13, 64, (3, 0), 4, 2, "edge"),
    ("t21_c32_edge", 21, 32, (2, 1), 4, 2, "edge"), ("t125_c20_edge", 125, 20, (2, 1), 4, 2, "edge"), ("t29_c64_const", 29, 64, (2, 1), 4, 2, "constant"),
)  # fmt: skip
CASES.append(Case("tokens_into_edge_pad_pack", "fresh5: tokens swapped back into an edge-padded Conv1d (Mimi's downsampling after its transformer)",
                  lambda: _packed(_tokens_into_padded_conv_case, TOKENS_INTO_EDGE_PAD_PACK, 1607, opset=13), ("rk3566", "rk3588")))


# ---- fresh5 (transformers' PatchTSMixer): a mixer's swap, MLP over the swapped axis, swap back ----------

# PatchTSMixer's channel mixer and patch mixer on [1, C, N, D] (a Linear's result): swapped by `perm`
# ([0, 3, 2, 1]: the channels last; [0, 1, 3, 2]: the patches last), an MLP over that last axis (Linear,
# Relu, Linear; "gated": then times the Softmax of a Linear of it, as its gating block), swapped back by
# the same perm and added to the block's input. (name, C, N, D, perm, gated)
MIXER_SWAP_PACK = (
    ("ch_c3_gated", 3, 8, 16, (0, 3, 2, 1), True), ("ch_c3", 3, 8, 16, (0, 3, 2, 1), False),
    ("ch_c8", 8, 8, 16, (0, 3, 2, 1), False), ("ch_c16_gated", 16, 8, 16, (0, 3, 2, 1), True),
    ("patch_n8_gated", 3, 8, 16, (0, 1, 3, 2), True), ("patch_n8", 3, 8, 16, (0, 1, 3, 2), False),
)


def _mixer_swap_case(rng, spec) -> tuple[list, list, list, list]:
    name, c, n, d, perm, gated = spec
    p = f"mix_{name}_"
    node = _prefixed(p)
    width = (c, n, d)[[1, 2, 3].index(perm[3])]
    inits = [_const(p + "w_in", _weights(rng, d, d)), _const(p + "w1", _weights(rng, width, 2 * width)), _const(p + "b1", _weights(rng, 2 * width)),
             _const(p + "w2", _weights(rng, 2 * width, width)), _const(p + "b2", _weights(rng, width)), _const(p + "wg", _weights(rng, width, width))]
    nodes = [node("MatMul", ["x", "w_in"], "base"), node("Transpose", ["base"], "swap", perm=list(perm)),
             node("MatMul", ["swap", "w1"], "h0"), node("Add", ["h0", "b1"], "h1"), node("Relu", ["h1"], "h2"),
             node("MatMul", ["h2", "w2"], "m0"), node("Add", ["m0", "b2"], "m")]
    mixed = "m"
    if gated:
        nodes += [node("MatMul", ["m", "wg"], "g0"), node("Softmax", ["g0"], "g", axis=-1), node("Mul", ["m", "g"], "gated")]
        mixed = "gated"
    nodes += [node("Transpose", [mixed], "back", perm=list(perm)), node("Add", ["back", "base"], "y")]
    return nodes, inits, [_vi(p + "x", [1, c, n, d])], [_vi(p + "y", [1, c, n, d])]


# Measured (RK3566 and RK3588, 2026-12-05), not modelled, so not a held case (docs/audit.md): build it with
# _packed(_mixer_swap_case, MIXER_SWAP_PACK, 310, opset=13).

# Measured (RK3566, 2026-12-05), not held: _packed(_patchify_case, PATCHIFY_READERS, 311, opset=13).


# ---- fresh6 (LayoutLM) on RKNN: a Gather of run-time int64 data at a constant index ---------------------------------

# LayoutLM takes bbox [1, 32, 4] (int64) and picks each coordinate, Gather(bbox, c, axis=2), into an embedding
# lookup of a [1024, 64] table. (name, data): "box_<type>" (the coordinate picked from a model input of that type,
# then looked up), "box_f32" (a float input's coordinate, into a Relu), "box_i64_axis1" (a token picked, axis 1),
# "argmax_i64" (a computed int64 tensor, ArgMax keepdims [1, 32, 1], picked at axis 2), "ids" (the word-embedding
# lookup by an int64 input alone, a control).
GATHER_INT64_DATA_PACK = (("box_i64", TensorProto.INT64), ("box_i32", TensorProto.INT32), ("box_f32", TensorProto.FLOAT),
                          ("box_i64_axis1", TensorProto.INT64), ("argmax_i64", TensorProto.FLOAT), ("ids", TensorProto.INT64))
# The second probe: "cast_i64" (a float map cast to int64 [1, 32, 4], picked at axis 2), "topk_i64" (a TopK's int64
# indices [1, 20], picked at axis 1), "box_i64_unit" (an int64 input [1, 32, 1] picked along its axis of one),
# "box_i64_pair" (an int64 input's coordinates 0 and 2, 1-D indices).
# The third: "box_i64_last" (coordinate -1, scalar), "box_i64_one" (1-D indices [0]), "box_i32_pair" (int32, [0, 2]).
GATHER_INT64_DATA_PACK_3 = (("box_i64_last", TensorProto.INT64), ("box_i64_one", TensorProto.INT64), ("box_i32_pair", TensorProto.INT32))
GATHER_INT64_DATA_PACK_2 = (("cast_i64", TensorProto.FLOAT), ("topk_i64", TensorProto.FLOAT),
                            ("box_i64_unit", TensorProto.INT64), ("box_i64_pair", TensorProto.INT64))


def _gather_int64_data_case(rng, spec) -> tuple[list, list, list, list]:
    name, dtype = spec
    p = f"g64_{name}_"
    node = _prefixed(p)
    table = _const(p + "table", _weights(rng, 1024, 64).astype(np.float32))
    c0 = _const(p + "c0", np.array(0, np.int64))
    if name == "ids":
        return [node("Gather", ["table", "x"], "y")], [table], [_vi(p + "x", [1, 32], dtype)], [_vi(p + "y", [1, 32, 64])]
    if name == "box_f32":
        nodes = [node("Gather", ["x", "c0"], "pick", axis=2), node("Relu", ["pick"], "y")]
        return nodes, [c0], [_vi(p + "x", [1, 32, 4], dtype)], [_vi(p + "y", [1, 32])]
    nodes, data, shape, pick = [], "x", [1, 32, 4], "c0"
    if name in ("cast_i64", "topk_i64", "box_i64_unit", "box_i64_pair", "box_i64_last", "box_i64_one", "box_i32_pair"):
        return _gather_int64_data_more(p, node, table, c0, name, dtype)
    if name == "argmax_i64":
        nodes = [node("Relu", ["x"], "r"), node("ArgMax", ["r"], "am", axis=2, keepdims=1)]
        data = "am"
    axis = 1 if name == "box_i64_axis1" else 2
    nodes += [node("Gather", [data, "c0"], "pick", axis=axis), node("Gather", ["table", "pick"], "y")]
    out = [1, 4, 64] if axis == 1 else [1, 32, 64]
    return nodes, [table, c0], [_vi(p + "x", [1, 32, 4], dtype)], [_vi(p + "y", out)]


def _gather_int64_data_more(p, node, table, c0, name, dtype) -> tuple[list, list, list, list]:
    inits, shape, axis, pick = [table, c0], [1, 32, 4], 2, "c0"
    if name == "cast_i64":
        nodes = [node("Relu", ["x"], "r"), node("Cast", ["r"], "data", to=TensorProto.INT64)]
    elif name == "topk_i64":
        inits.append(_const(p + "k", np.array([20], np.int64)))
        shape, axis = [1, 84], 1
        nodes = [node("Relu", ["x"], "r"), helper.make_node("TopK", [p + "r", p + "k"], [p + "vals", p + "data"], name=p + "topk", axis=1)]
    else:
        nodes = [node("Identity", ["x"], "data")]
        if name == "box_i64_unit":
            shape = [1, 32, 1]
        else:
            picks = {"box_i64_last": np.array(-1, np.int64), "box_i64_one": np.array([0], np.int64)}
            inits.append(_const(p + "pair", picks.get(name, np.array([0, 2], np.int64))))
            pick = "pair"
    nodes = [n for n in nodes if n.op_type != "Identity"]
    data = "x" if not nodes else "data"
    nodes += [node("Gather", [data, pick], "pick", axis=axis), node("Gather", ["table", "pick"], "y")]
    out = {"topk_i64": [1, 64], "box_i64_pair": [1, 32, 2, 64], "box_i32_pair": [1, 32, 2, 64], "box_i64_one": [1, 32, 1, 64]}.get(name, [1, 32, 64])
    return nodes, inits, [_vi(p + "x", shape, dtype)], [_vi(p + "y", out)]


CASES.append(Case("gather_int64_data_pack", "fresh6: a Gather of run-time int64 data at a constant index into an embedding lookup (LayoutLM's box coordinates)",
                  lambda: _packed(_gather_int64_data_case, GATHER_INT64_DATA_PACK, 257, opset=13), ("rk3588", "rk3566")))
CASES.append(Case("gather_int64_data_pack_3", "fresh6: a Gather of an int64 or int32 input at index -1, at 1-D indices [0] or [0, 2]",
                  lambda: _packed(_gather_int64_data_case, GATHER_INT64_DATA_PACK_3, 260, opset=13), ("rk3588", "rk3566")))
CASES.append(Case("gather_int64_data_pack_2", "fresh6: a Gather at constant indices of computed int64 data, or of an int64 input along an axis of one",
                  lambda: _packed(_gather_int64_data_case, GATHER_INT64_DATA_PACK_2, 258, opset=13), ("rk3588", "rk3566")))


# ---- fresh6 (CondConv) on RKNN: a Conv's weight computed at run time --------------------------------------------

# timm's CondConv mixes its experts' weights per input: routing Sigmoid [1, 4] -> MatMul [4, N] -> Reshape to the
# weight's shape -> Conv's weight. (name, in channels, out channels, kernel, group): depthwise 5x5, 3x3 and 1x1,
# pointwise, dense 3x3 and grouped 3x3; "dw5_mul" reshapes a depthwise 5x5 weight into a Mul, not a Conv.
CONDCONV_WEIGHT_PACK = (("dw5", 32, 32, 5, 32), ("dw3", 32, 32, 3, 32), ("dw1", 32, 32, 1, 32), ("pw", 32, 16, 1, 1),
                        ("dense3", 16, 16, 3, 1), ("grouped3", 32, 32, 3, 4), ("dw5_mul", 32, 32, 5, 32))


def _condconv_weight_case(rng, spec) -> tuple[list, list, list, list]:
    name, cin, cout, k, group = spec
    p = f"ccw_{name}_"
    node = _prefixed(p)
    wshape = [cout, cin // group, k, k]
    size = int(np.prod(wshape))
    inits = [_const(p + "experts", (_weights(rng, 4, size) * 0.1).astype(np.float32)), _const(p + "wshape", np.array(wshape, np.int64))]
    nodes = [node("Sigmoid", ["route"], "gate"), node("MatMul", ["gate", "experts"], "mixed"), node("Reshape", ["mixed", "wshape"], "w")]
    if name == "dw5_mul":
        inits.append(_const(p + "scale", _weights(rng, *wshape).astype(np.float32)))
        nodes.append(node("Mul", ["w", "scale"], "y"))
        return nodes, inits, [_vi(p + "route", [1, 4])], [_vi(p + "y", wshape)]
    nodes += [node("Relu", ["x"], "xr"),
              node("Conv", ["xr", "w"], "conv", group=group, kernel_shape=[k, k], pads=[k // 2] * 4),
              node("Relu", ["conv"], "y")]
    return nodes, inits, [_vi(p + "route", [1, 4]), _vi(p + "x", [1, cin, 8, 8])], [_vi(p + "y", [1, cout, 8, 8])]


CASES.append(Case("condconv_dw5_pack", "fresh6: CondConv's depthwise 5x5 weight alone (condconv_weight_pack crashed the toolkit)",
                  lambda: _packed(_condconv_weight_case, CONDCONV_WEIGHT_PACK[:1], 261, opset=13), ("rk3588", "rk3566")))
CASES.append(Case("condconv_pw_pack", "fresh6: CondConv's pointwise weight alone",
                  lambda: _packed(_condconv_weight_case, CONDCONV_WEIGHT_PACK[3:4], 262, opset=13), ("rk3588", "rk3566")))
CASES.append(Case("condconv_dw1_pack", "fresh6: CondConv's depthwise 1x1 weight alone",
                  lambda: _packed(_condconv_weight_case, CONDCONV_WEIGHT_PACK[2:3], 263, opset=13), ("rk3588", "rk3566")))
CASES.append(Case("condconv_dense3_pack", "fresh6: CondConv's dense 3x3 weight alone",
                  lambda: _packed(_condconv_weight_case, CONDCONV_WEIGHT_PACK[4:5], 264, opset=13), ("rk3588", "rk3566")))
CASES.append(Case("condconv_dw3_pack", "fresh6: CondConv's depthwise 3x3 weight alone",
                  lambda: _packed(_condconv_weight_case, CONDCONV_WEIGHT_PACK[1:2], 266, opset=13), ("rk3588", "rk3566")))


# ---- fresh6 (Conditional DETR) on RKNN: a ScatterND of the first two of a box's four values ---------------------

# Conditional DETR writes boxes[..., :2] += reference: ScatterND of [1, 20, 4] at constant indices [1, 20, 2, 3] (the
# first two values of each box). (name,): "own_slice" (updates a Slice of the data's own first two values plus a
# Relu of a second input), "other" (updates that Relu alone), "chain" (own_slice, then a second ScatterND of the same
# updates into its result, as the model writes it twice).
SCATTER_BOX_PACK = (("own_slice",), ("other",), ("chain",))


def _scatter_box_case(rng, spec) -> tuple[list, list, list, list]:
    (name,) = spec
    p = f"scb_{name}_"
    node = _prefixed(p)
    grid = np.stack(np.meshgrid([0], np.arange(20), np.arange(2), indexing="ij"), axis=-1).astype(np.int64)
    inits = [_const(p + "idx", grid), _const(p + "s0", np.array([0], np.int64)), _const(p + "s2", np.array([2], np.int64)),
             _const(p + "ax", np.array([2], np.int64))]
    nodes = [node("Relu", ["x"], "data"), node("Relu", ["r"], "ref")]
    if name == "other":
        nodes.append(node("ScatterND", ["data", "idx", "ref"], "sc"))
    else:
        nodes += [node("Slice", ["data", "s0", "s2", "ax"], "head"), node("Add", ["head", "ref"], "upd"),
                  node("ScatterND", ["data", "idx", "upd"], "sc")]
    if name == "chain":
        nodes.append(node("ScatterND", ["sc", "idx", "upd"], "sc2"))
    nodes.append(node("Sigmoid", ["sc2" if name == "chain" else "sc"], "y"))
    return nodes, inits, [_vi(p + "x", [1, 20, 4]), _vi(p + "r", [1, 20, 2])], [_vi(p + "y", [1, 20, 4])]


CASES.append(Case("scatter_box_pack", "fresh6: a ScatterND of the first two of a box's four values (Conditional DETR's reference added)",
                  lambda: _packed(_scatter_box_case, SCATTER_BOX_PACK, 267, opset=13), ("rk3588", "rk3566")))

# The second probe: "chain_relu" (a Relu between the two ScatterNDs), "chain_far" (the second writes values 1 and 2; 2
# and 3 overwrite the whole input, which the toolkit then drops from the model),
# "last_two" (values 2 and 3 alone), "strided" (values 0 and 2), "rows" (boxes 0..4 whole, indices [1, 5, 2]).
SCATTER_BOX_PACK_2 = (("chain_relu",), ("chain_far",), ("last_two",), ("strided",), ("rows",))


def _scatter_box_more(rng, spec) -> tuple[list, list, list, list]:
    (name,) = spec
    p = f"scb_{name}_"
    node = _prefixed(p)

    def grid(values):
        return np.stack(np.meshgrid([0], np.arange(20), values, indexing="ij"), axis=-1).astype(np.int64)
    rows = np.stack(np.meshgrid([0], np.arange(5), indexing="ij"), axis=-1).astype(np.int64)
    inits = [_const(p + "idx", {"last_two": grid([2, 3]), "strided": grid([0, 2]), "rows": rows}.get(name, grid([0, 1]))),
             _const(p + "far", grid([1, 2]))]
    upd_shape = [1, 5, 4] if name == "rows" else [1, 20, 2]
    nodes = [node("Relu", ["x"], "data"), node("Relu", ["r"], "ref"), node("ScatterND", ["data", "idx", "ref"], "sc")]
    last = "sc"
    if name == "chain_relu":
        nodes += [node("Relu", ["sc"], "mid"), node("ScatterND", ["mid", "idx", "ref"], "sc2")]
        last = "sc2"
    elif name == "chain_far":
        nodes.append(node("ScatterND", ["sc", "far", "ref"], "sc2"))
        last = "sc2"
    nodes.append(node("Sigmoid", [last], "y"))
    return nodes, inits, [_vi(p + "x", [1, 20, 4]), _vi(p + "r", upd_shape)], [_vi(p + "y", [1, 20, 4])]


CASES.append(Case("scatter_box_pack_2", "fresh6: a ScatterND after another, with a Relu between or another range; of other ranges alone",
                  lambda: _packed(_scatter_box_more, SCATTER_BOX_PACK_2, 268, used_only=True, opset=13), ("rk3588", "rk3566")))

# The third: "box4d" (the first two values of [1, 1, 20, 4], k = 4), "big" (of [1, 256, 4]: 512 values), "block3d"
# ([:, 1:, 1:] of [1, 17, 17], k = 3), "rev3d" (every element of [1, 20, 4], axis 1 reversed).
# "rev3d" was measured once and left out (its updates, a Relu of the data's own input, ran on the CPU with it: not
# modelled); the builder keeps it for that record.
SCATTER_BOX_PACK_3 = (("box4d",), ("big",), ("block3d",))


def _scatter_box_shapes(rng, spec) -> tuple[list, list, list, list]:
    (name,) = spec
    p = f"scb_{name}_"
    node = _prefixed(p)
    if name == "box4d":
        shape, idx = [1, 1, 20, 4], np.stack(np.meshgrid([0], [0], np.arange(20), [0, 1], indexing="ij"), axis=-1)
    elif name == "big":
        shape, idx = [1, 256, 4], np.stack(np.meshgrid([0], np.arange(256), [0, 1], indexing="ij"), axis=-1)
    elif name == "block3d":
        shape, idx = [1, 17, 17], np.stack(np.meshgrid([0], np.arange(1, 17), np.arange(1, 17), indexing="ij"), axis=-1)
    else:
        shape, idx = [1, 20, 4], np.stack(np.meshgrid([0], np.arange(20)[::-1], np.arange(4), indexing="ij"), axis=-1)
    nodes = [node("Relu", ["x"], "data"), node("Relu", ["r"], "ref"), node("ScatterND", ["data", "idx", "ref"], "sc"),
             node("Sigmoid", ["sc"], "y")]
    if name == "rev3d":  # every element overwritten: the data must stay read, or the toolkit drops the input
        nodes[1] = node("Relu", ["x"], "ref")
        return nodes, [_const(p + "idx", idx.astype(np.int64))], [_vi(p + "x", shape)], [_vi(p + "y", shape)]
    return nodes, [_const(p + "idx", idx.astype(np.int64))], [_vi(p + "x", shape), _vi(p + "r", list(idx.shape[:-1]))], [_vi(p + "y", shape)]


CASES.append(Case("scatter_box_pack_3", "fresh6: ScatterNDs of element indices of other ranks, sizes and patterns",
                  lambda: _packed(_scatter_box_shapes, SCATTER_BOX_PACK_3, 269, opset=13), ("rk3588", "rk3566")))


# ---- fresh5/fresh6 (transformers' Qwen3, LFM2, Gemma 3): a per-head RMS norm around the heads' swap ----

# q and k each a Linear, the heads split (Reshape [1, T, H, D]); a per-head RMS norm over the last axis
# (Pow, ReduceMean, Add eps, Sqrt, Div 1 by it, Mul, Mul by a weight of D) either before the heads' swap
# [0, 2, 1, 3] ("before": Qwen3, LFM2) or after it ("after": Gemma 3), or none ("none"); then the rotation by
# halves on the swapped heads ("halves") or none ("plain"); the scores q @ k^T (k swapped [0, 1, 3, 2]),
# Softmax, @ v (its own split), heads merged, Linear. (name, norm, rotation, T, H, D)
HEAD_NORM_PACK = (
    ("before_halves_t32h2d32", "before", "halves", 32, 2, 32), ("after_halves_t32h2d32", "after", "halves", 32, 2, 32),
    ("before_plain_t32h2d32", "before", "plain", 32, 2, 32), ("after_plain_t32h2d32", "after", "plain", 32, 2, 32),
    ("before_halves_t16h4d16", "before", "halves", 16, 4, 16), ("after_halves_t16h4d16", "after", "halves", 16, 4, 16),
    ("before_halves_t9h2d32", "before", "halves", 9, 2, 32), ("after_halves_t9h2d32", "after", "halves", 9, 2, 32),
)
# The same with a LayerNorm (torch.onnx's decomposed form, with weight and bias) for the RMS norm, and with the
# rotation interleaved (RoFormer's) after an RMS norm. (name, norm, rotation, T, H, D, kind)
HEAD_NORM_PACK_2 = (
    ("ln_before_halves_t32h2d32", "before", "halves", 32, 2, 32, "ln"), ("ln_after_halves_t32h2d32", "after", "halves", 32, 2, 32, "ln"),
    ("ln_after_plain_t16h4d16", "after", "plain", 16, 4, 16, "ln"), ("after_interleaved_t32h2d32", "after", "interleaved", 32, 2, 32, "rms"),
    ("before_interleaved_t32h2d32", "before", "interleaved", 32, 2, 32, "rms"),
)


def _rms_norm(node, x: str, out: str) -> list:
    """transformers' RMSNorm of `x` over its last axis: x * (1 / sqrt(mean(x^2) + eps)) * weight, named `out`."""
    return [node("Pow", [x, "two_f"], f"{out}_sq"), node("ReduceMean", [f"{out}_sq"], f"{out}_ms", axes=[-1]),
            node("Add", [f"{out}_ms", "eps"], f"{out}_var"), node("Sqrt", [f"{out}_var"], f"{out}_std"),
            node("Div", ["one_f", f"{out}_std"], f"{out}_inv"), node("Mul", [x, f"{out}_inv"], f"{out}_n"),
            node("Mul", ["norm_w", f"{out}_n"], out)]


def _layer_norm_of(node, x: str, out: str) -> list:
    """torch.onnx's LayerNorm of `x` over its last axis (below opset 17), weight and bias, named `out`."""
    return [node("ReduceMean", [x], f"{out}_mean", axes=[-1]), node("Sub", [x, f"{out}_mean"], f"{out}_c"),
            node("Pow", [f"{out}_c", "two_f"], f"{out}_sq"), node("ReduceMean", [f"{out}_sq"], f"{out}_var", axes=[-1]),
            node("Add", [f"{out}_var", "eps"], f"{out}_ve"), node("Sqrt", [f"{out}_ve"], f"{out}_std"),
            node("Div", [f"{out}_c", f"{out}_std"], f"{out}_n"), node("Mul", [f"{out}_n", "norm_w"], f"{out}_s"),
            node("Add", [f"{out}_s", "norm_b"], out)]


def _head_norm_case(rng, spec) -> tuple[list, list, list, list]:
    name, norm, rotation, t, h, d, *kind = spec
    norm_of = _layer_norm_of if kind == ["ln"] else _rms_norm
    p = f"hnorm_{name}_"
    node = _prefixed(p)
    c = h * d
    inits = [_const(p + "heads", np.array([1, t, h, d], np.int64)), _const(p + "merged", np.array([1, t, c], np.int64)),
             _const(p + "cos", _weights(rng, 1, 1, t, d)), _const(p + "sin", _weights(rng, 1, 1, t, d)),
             _const(p + "scale", np.array(d ** -0.5, np.float32)), _const(p + "wo", _weights(rng, c, c)),
             _const(p + "zero", np.array([0], np.int64)), _const(p + "big", np.array([2 ** 62], np.int64)),
             _const(p + "last", np.array([3], np.int64)), _const(p + "half", np.array([d // 2], np.int64)),
             _const(p + "two_f", np.array(2.0, np.float32)), _const(p + "one_f", np.array(1.0, np.float32)),
             _const(p + "eps", np.array(1e-6, np.float32)), _const(p + "norm_w", (1 + _weights(rng, d)).astype(np.float32)),
             _const(p + "norm_b", _weights(rng, d)), _const(p + "one", np.array([1], np.int64)), _const(p + "two", np.array([2], np.int64)),
             _const(p + "minus1", np.array([-1], np.int64)), _const(p + "shape4", np.array([1, h, t, d], np.int64))]
    nodes = []
    for part in "qkv":
        inits.append(_const(p + f"w{part}", _weights(rng, c, c)))
        nodes += [node("MatMul", ["x", f"w{part}"], f"{part}0"), node("Reshape", [f"{part}0", "heads"], f"{part}2")]
        normed = part != "v" and norm != "none"
        if normed and norm == "before":
            nodes += norm_of(node, f"{part}2", f"{part}_nb")
        nodes.append(node("Transpose", [f"{part}_nb" if normed and norm == "before" else f"{part}2"], f"{part}3", perm=[0, 2, 1, 3]))
        if normed and norm == "after":
            nodes += norm_of(node, f"{part}3", f"{part}_na")
    q, k = [(f"{x}_na" if norm == "after" else f"{x}3") for x in "qk"]
    if rotation != "plain":
        nodes += _rotated(node, q, "q", rotation, d, h, t) + _rotated(node, k, "k", rotation, d, h, t)
        q, k = "qr", "kr"
    nodes += [node("Transpose", [k], "kt", perm=[0, 1, 3, 2]), node("MatMul", [q, "kt"], "s0"), node("Mul", ["s0", "scale"], "scores"),
              node("Softmax", ["scores"], "probs", axis=-1), node("MatMul", ["probs", "v3"], "o4"), node("Transpose", ["o4"], "o_t", perm=[0, 2, 1, 3]),
              node("Reshape", ["o_t", "merged"], "o"), node("MatMul", ["o", "wo"], "y")]
    return nodes, inits, [_vi(p + "x", [1, t, c])], [_vi(p + "y", [1, t, c])]


CASES.append(Case("head_norm_pack", "fresh5/fresh6: a per-head RMS norm before or after the heads' swap, with or without a rotation by halves (Qwen3, LFM2, Gemma 3)",
                  lambda: _packed(_head_norm_case, HEAD_NORM_PACK, 311, used_only=True, opset=13), ("rk3566", "rk3588")))
CASES.append(Case("head_norm_pack_2", "fresh5/fresh6: a per-head LayerNorm before or after the heads' swap, and an RMS norm with the rotation interleaved",
                  lambda: _packed(_head_norm_case, HEAD_NORM_PACK_2, 314, used_only=True, opset=13), ("rk3566", "rk3588")))


# Phi's rotation by halves on the first R values of each head, the rest passed through
# (_partial_rotary_case with "halves"), by token count, head size and rotated part.
PARTIAL_HALVES_PACK = (
    ("halves_t32h2d32r16", "halves", 32, 2, 32, 16), ("halves_t16h4d16r8", "halves", 16, 4, 16, 8),
    ("halves_t9h2d32r16", "halves", 9, 2, 32, 16), ("halves_t32h2d32r8", "halves", 32, 2, 32, 8),
)
CASES.append(Case("partial_halves_pack", "fresh6: a rotation by halves on the first values of each head, the rest passed through (Phi)",
                  lambda: _packed(_partial_rotary_case, PARTIAL_HALVES_PACK, 312, used_only=True, opset=13), ("rk3566", "rk3588")))


# ---- fresh6 (transformers' SigLIP attention-pooling head): torch's nn.MultiheadAttention, batch first ----

# torch.nn.MultiheadAttention(batch_first=True) as torch.onnx writes it: the tokens swapped to [S, 1, E]; the query
# (its own input [1, Tq, E], swapped) by its own in-projection; the key and value by one joint projection [E, 2E]
# ("kv": key is value, as SigLIP's probe attending to the tokens) unflattened to [S, 1, 2, E], unsqueezed, swapped
# [3, 1, 2, 0, 4], squeezed and Gathered at 0 and 1; or q, k and v by one joint projection [E, 3E] of the same tokens
# ("qkv": query is key is value, [S, 1, 3, E]). Then each part viewed [T, H, D] (heads into the batch) and swapped:
# q and v [1, 0, 2], k [1, 2, 0] (k^T directly); q scaled, q @ k^T, Softmax, @ v, swapped back [1, 0, 2], viewed [T, E],
# the out-projection (Gemm), viewed [T, 1, E] and swapped to [1, T, E]. (name, form, S, Tq, H, D)
# The inputs are first shifted by a constant (an Add), as SigLIP's tokens come from a LayerNorm: a swap of a model
# input itself ran on the CPU in some first probes (not modelled).
TORCH_MHA_PACK = (
    ("kv_s64q1h2d32", "kv", 64, 1, 2, 32), ("kv_s16q1h4d16", "kv", 16, 1, 4, 16), ("kv_s9q1h2d32", "kv", 9, 1, 2, 32),
)
# Measured (RK3566, 2026-12-05), not modelled, so not held: the joint query/key/value form (torch's self-attention),
# where the stack's swap ran on the NPU as in "kv", the key's and the query's views and swaps (and q's scale) on the
# CPU, the value's view on the CPU and its swap on the NPU.
# Also measured, with the pack: 4 query tokens ("kv", S = 64, 2 heads of 32): the stack's swap on the NPU, the key's
# and value's swaps on the CPU as with one, and the query's and tokens' swaps [1, 0, 2] and the flatten before the
# out-projection on the NPU, which batch_made_and_merged_by_reshapes puts on the CPU (not explained).
TORCH_MHA_MEASURED = (("qkv_s16h2d32", "qkv", 16, 16, 2, 32), ("kv_s64q4h2d32", "kv", 64, 4, 2, 32))


def _torch_mha_case(rng, spec) -> tuple[list, list, list, list]:
    name, form, s, tq, h, d = spec
    p = f"tmha_{name}_"
    node = _prefixed(p)
    e, parts = h * d, (2 if form == "kv" else 3)
    inits = [_const(p + "w_in", _weights(rng, e, parts * e)), _const(p + "b_in", _weights(rng, parts * e)),
             _const(p + "unflat", np.array([s, 1, parts, e], np.int64)), _const(p + "ax0", np.array([0], np.int64)),
             _const(p + "ax3", np.array([3], np.int64)), _const(p + "kv_heads", np.array([s, h, d], np.int64)),
             _const(p + "q_heads", np.array([tq, h, d], np.int64)), _const(p + "scale", np.array(d ** -0.5, np.float32)),
             _const(p + "flat", np.array([tq, e], np.int64)), _const(p + "w_out", _weights(rng, e, e)), _const(p + "b_out", _weights(rng, e)),
             _const(p + "tokens", np.array([tq, 1, e], np.int64)), _const(p + "i0", np.array(0, np.int64)),
             _const(p + "i1", np.array(1, np.int64)), _const(p + "i2", np.array(2, np.int64)), _const(p + "shift", _weights(rng, e))]
    nodes = [node("Add", ["x", "shift"], "xa"), node("Transpose", ["xa"], "xs", perm=[1, 0, 2]), node("MatMul", ["xs", "w_in"], "proj0"), node("Add", ["proj0", "b_in"], "proj"),
             node("Reshape", ["proj", "unflat"], "parts"), node("Unsqueeze", ["parts", "ax0"], "parts5"),
             node("Transpose", ["parts5"], "stack", perm=[3, 1, 2, 0, 4]), node("Squeeze", ["stack", "ax3"], "stack4"),
             node("Gather", ["stack4", "i0" if form == "kv" else "i1"], "k", axis=0), node("Gather", ["stack4", "i1" if form == "kv" else "i2"], "v", axis=0)]
    inputs = [_vi(p + "x", [1, s, e])]
    if form == "kv":
        inits += [_const(p + "w_q", _weights(rng, e, e)), _const(p + "b_q", _weights(rng, e))]
        nodes += [node("Add", ["q_in", "shift"], "qa"), node("Transpose", ["qa"], "qs", perm=[1, 0, 2]), node("MatMul", ["qs", "w_q"], "q0"), node("Add", ["q0", "b_q"], "q")]
        inputs.append(_vi(p + "q_in", [1, tq, e]))
    else:
        nodes.append(node("Gather", ["stack4", "i0"], "q", axis=0))
    nodes += [node("Reshape", ["q", "q_heads"], "qh"), node("Transpose", ["qh"], "qt", perm=[1, 0, 2]), node("Mul", ["qt", "scale"], "qsc"),
              node("Reshape", ["k", "kv_heads"], "kh"), node("Transpose", ["kh"], "kt", perm=[1, 2, 0]),
              node("Reshape", ["v", "kv_heads"], "vh"), node("Transpose", ["vh"], "vt", perm=[1, 0, 2]),
              node("MatMul", ["qsc", "kt"], "scores"), node("Softmax", ["scores"], "probs", axis=-1), node("MatMul", ["probs", "vt"], "o"),
              node("Transpose", ["o"], "ot", perm=[1, 0, 2]), node("Reshape", ["ot", "flat"], "of"), node("Gemm", ["of", "w_out", "b_out"], "out"),
              node("Reshape", ["out", "tokens"], "o3"), node("Transpose", ["o3"], "y", perm=[1, 0, 2])]
    return nodes, inits, inputs, [_vi(p + "y", [1, tq, e])]


CASES.append(Case("torch_mha_pack", "fresh6: torch's nn.MultiheadAttention (batch first) with a joint key/value or query/key/value in-projection (SigLIP's pooling head)",
                  lambda: _packed(_torch_mha_case, TORCH_MHA_PACK, 313, used_only=True, opset=13), ("rk3566", "rk3588")))


# ---- fresh6 (Conditional DETR, MGP-STR) on RKNN: a Linear's heads into a Concat; a view of unit axes into a Softmax ----

# Conditional DETR's cross-attention query (decoder layers after the first): the content Linear's and the sine
# position Linear's [1, T, 64] each split into 2 heads of 32, Concatenated along the heads' values, flattened back to
# [1, T, 128] and scaled (a Mul by a constant) before the product. (name, T, source, reader): source "linear" (a
# biased Linear), "nobias", "addconst" (a constant Added after the bias), "relu" (a Relu after it), "sum" (the Add of
# the two Linears, the second split from its own Linear, which that Add reads too); reader "concat" (the model's
# form) or "transpose" (the heads' Transposes into a product, as attention splits them).
LINEAR_HEADS_CONCAT_PACK = (
    ("t20", 20, "linear", "concat"), ("t4", 4, "linear", "concat"), ("t12", 12, "linear", "concat"), ("t8", 8, "linear", "concat"),
    ("t16", 16, "linear", "concat"), ("t24", 24, "linear", "concat"), ("t20_nobias", 20, "nobias", "concat"),
    ("t20_addc", 20, "addconst", "concat"), ("t20_relu", 20, "relu", "concat"), ("t20_sum", 20, "sum", "concat"),
    ("t20_tp", 20, "linear", "transpose"),
)


def _linear_heads_concat_case(rng, spec) -> tuple[list, list, list, list]:
    name, t, source, reader = spec
    p = f"lhc_{name}_"
    node = _prefixed(p)
    inits = [_const(p + "w1", _weights(rng, 64, 64)), _const(p + "b1", _weights(rng, 64)), _const(p + "w2", _weights(rng, 64, 64)),
             _const(p + "b2", _weights(rng, 64)), _const(p + "c", _weights(rng, 64)), _const(p + "heads", np.array([1, t, 2, 32], np.int64)),
             _const(p + "flat", np.array([1, t, 128], np.int64)), _const(p + "scale", np.array(0.125, np.float32)),
             _const(p + "wo", _weights(rng, 128, 16))]
    nodes = [node("Relu", ["x"], "xr"), node("MatMul", ["xr", "w1"], "m1"), node("MatMul", ["xr", "w2"], "m2"), node("Add", ["m2", "b2"], "l2")]
    a = "m1"
    if source != "nobias":
        nodes.append(node("Add", ["m1", "b1"], "l1"))
        a = "l1"
    if source in ("addconst", "relu", "sum"):
        nodes.append(node(*{"addconst": ("Add", ["l1", "c"]), "relu": ("Relu", ["l1"]), "sum": ("Add", ["l1", "l2"])}[source], "l1x"))
        a = "l1x"
    nodes += [node("Reshape", [a, "heads"], "ha"), node("Reshape", ["l2", "heads"], "hb")]
    if reader == "concat":
        nodes += [node("Concat", ["ha", "hb"], "cat", axis=3), node("Reshape", ["cat", "flat"], "f"), node("Mul", ["f", "scale"], "fs"),
                  node("MatMul", ["fs", "wo"], "y")]
        return nodes, inits, [_vi(p + "x", [1, t, 64])], [_vi(p + "y", [1, t, 16])]
    nodes += [node("Transpose", ["ha"], "ta", perm=[0, 2, 1, 3]), node("Transpose", ["hb"], "tb", perm=[0, 2, 3, 1]), node("MatMul", ["ta", "tb"], "y")]
    return nodes, inits, [_vi(p + "x", [1, t, 64])], [_vi(p + "y", [1, 2, t, t])]


CASES.append(Case("linear_heads_concat_pack", "fresh6: a Linear's tokens split into heads for a Concat (Conditional DETR's cross-attention query)",
                  lambda: _packed(_linear_heads_concat_case, LINEAR_HEADS_CONCAT_PACK, 410, used_only=True, opset=13), ("rk3588", "rk3566")))

# MGP-STR's A3 module: a 1x1 Conv's [1, C, T, 1] viewed [1, C, T] for a Softmax over the tokens, then a product.
# (name, C, T, W, view): W 1 and the view dropping or moving the axis of one; W 2 and the view merging T and W.
UNIT_AXIS_SOFTMAX_PACK = (
    ("c27_t257_w1", 27, 257, 1, (1, 27, 257)), ("c32_t64_w1", 32, 64, 1, (1, 32, 64)), ("c8_t16_w1", 8, 16, 1, (1, 8, 16)),
    ("c27_t257_w1_front", 27, 257, 1, (1, 1, 27, 257)), ("c27_t64_w2", 27, 64, 2, (1, 27, 128)),
)


def _unit_axis_softmax_case(rng, spec) -> tuple[list, list, list, list]:
    name, c, t, w, view = spec
    p = f"uas_{name}_"
    node = _prefixed(p)
    inits = [_const(p + "w", _weights(rng, c, 16, 1, 1)), _const(p + "view", np.array(view, np.int64)), _const(p + "wo", _weights(rng, view[-1], 16))]
    nodes = [node("Relu", ["x"], "xr"), node("Conv", ["xr", "w"], "conv"), node("Reshape", ["conv", "view"], "viewed"),
             node("Softmax", ["viewed"], "probs", axis=-1), node("MatMul", ["probs", "wo"], "y")]
    return nodes, inits, [_vi(p + "x", [1, 16, t, w])], [_vi(p + "y", [*view[:-1], 16])]


CASES.append(Case("unit_axis_softmax_pack", "fresh6: a Conv's map viewed without its axis of one for a Softmax (MGP-STR's A3 module)",
                  lambda: _packed(_unit_axis_softmax_case, UNIT_AXIS_SOFTMAX_PACK, 411, opset=13), ("rk3588", "rk3566")))


# ---- fresh6 (CLAP's audio encoder, HTSAT) on RKNN: a map view moving channels; an untrained BatchNorm dropped ----

# 4-D views that move data between the channel axis and the rows, each read by a 1x1 Conv. (name, input, view, source):
# source "relu" (a Relu of the input), "conv" (a 1x1 Conv), "swap" (a Relu then a Transpose [0, 1, 3, 2] layer).
CHANNEL_VIEW_PACK = (
    ("merge4_relu", (1, 4, 32, 128), (1, 1, 128, 128), "relu"), ("merge4_conv", (1, 4, 32, 128), (1, 1, 128, 128), "conv"),
    ("merge4_swap", (1, 4, 32, 128), (1, 1, 128, 128), "swap"), ("merge16_conv", (1, 16, 8, 32), (1, 1, 128, 32), "conv"),
    ("split4_relu", (1, 1, 512, 32), (1, 4, 128, 32), "relu"), ("split16_conv", (1, 8, 64, 16), (1, 32, 16, 16), "conv"),
    ("merge8_to2_conv", (1, 8, 16, 16), (1, 2, 64, 16), "conv"),
)


def _channel_view_case(rng, spec) -> tuple[list, list, list, list]:
    name, shape_in, view, source = spec
    p = f"chv_{name}_"
    node = _prefixed(p)
    inits = [_const(p + "view", np.array(view, np.int64)), _const(p + "w", _weights(rng, 8, view[1], 1, 1)),
             _const(p + "w_in", _weights(rng, shape_in[1], shape_in[1], 1, 1))]
    x_shape = list(shape_in)
    if source == "relu":
        nodes = [node("Relu", ["x"], "src")]
    elif source == "conv":
        nodes = [node("Conv", ["x", "w_in"], "src")]
    else:  # the rows and columns swapped by a Transpose layer first
        nodes = [node("Relu", ["x"], "r"), node("Transpose", ["r"], "src", perm=[0, 1, 3, 2])]
        x_shape = [shape_in[0], shape_in[1], shape_in[3], shape_in[2]]
    nodes += [node("Reshape", ["src", "view"], "viewed"), node("Conv", ["viewed", "w"], "y")]
    return nodes, inits, [_vi(p + "x", x_shape)], [_vi(p + "y", [1, 8, *view[2:]])]


CASES.append(Case("channel_view_pack", "fresh6: a 4-D view moving data between the channels and the rows, into a Conv (HTSAT's spectrogram image)",
                  lambda: _packed(_channel_view_case, CHANNEL_VIEW_PACK, 412, opset=13), ("rk3588", "rk3566")))


def spectrogram_image(batchnorm: str) -> onnx.ModelProto:
    """HTSAT's front (transformers' CLAP audio encoder): the input [1, 1, T, F] swapped [0, 3, 2, 1], a BatchNorm2d
    over the F mel bins (`batchnorm` "unit": an untrained one's parameters, which the toolkit drops; "random"),
    swapped back, folded into an image (Reshape [1, r, T/r, F], Transpose [0, 1, 3, 2], Reshape [1, 1, r*F, T/r])
    for the patch embedding's 4x4 stride-4 Conv. T 512, F 32, r 4."""
    rng = np.random.default_rng(413)
    t, f, r = 512, 32, 4
    if batchnorm == "unit":
        g, b, mu, var = np.ones(f), np.zeros(f), np.zeros(f), np.ones(f)
    else:
        g, b, mu, var = 1 + 0.1 * rng.standard_normal(f), 0.1 * rng.standard_normal(f), 0.1 * rng.standard_normal(f), 1 + 0.1 * rng.random(f)
    inits = [_const(n, np.asarray(a, np.float32)) for n, a in (("g", g), ("b", b), ("mu", mu), ("var", var))]
    inits += [_const("fold", np.array([1, r, t // r, f], np.int64)), _const("image", np.array([1, 1, r * f, t // r], np.int64)),
              _const("w", _weights(rng, 16, 1, 4, 4))]
    nodes = [helper.make_node("Transpose", ["x"], ["t0"], name="swap_in", perm=[0, 3, 2, 1]),
             helper.make_node("BatchNormalization", ["t0", "g", "b", "mu", "var"], ["bn"], name="batch_norm"),
             helper.make_node("Transpose", ["bn"], ["t1"], name="swap_out", perm=[0, 3, 2, 1]),
             helper.make_node("Reshape", ["t1", "fold"], ["r1"], name="fold"),
             helper.make_node("Transpose", ["r1"], ["t2"], name="rows_swap", perm=[0, 1, 3, 2]),
             helper.make_node("Reshape", ["t2", "image"], ["r2"], name="to_image"),
             helper.make_node("Conv", ["r2", "w"], ["y"], name="patch_embed", kernel_shape=[4, 4], strides=[4, 4])]
    return _model(nodes, [_vi("x", [1, 1, t, f])], [_vi("y", [1, 16, r * f // 4, t // r // 4])], inits)


# Measured (RK3566, 2026-12-05), not held: spectrogram_image("random") (the BatchNorm a layer on the NPU, the swap
# back and the fold merged into it, the rows' swap a Gather on the NPU; the audit has them on the CPU), and the front
# without the BatchNorm and its swaps, or with a Relu before them (the fold on the CPU where the audit has the NPU;
# with the Relu and a unit BatchNorm, both swaps reported with the Relu, NPU): docs/audit.md.
CASES.append(Case("spectrogram_image_unit_bn", "fresh6: an untrained BatchNorm2d between the input's swaps, then the spectrogram folded into an image (CLAP's HTSAT)",
                  lambda: spectrogram_image("unit"), ("rk3588", "rk3566")))


# ---- fresh2 (GC ViT): global query attention, a key/value projection of the windows' tokens ---------------

# GC ViT's WindowAttentionGlobal: k and v one Linear of B windows' N tokens, Reshape [B, N, 2, H, D], Transpose
# [2, 0, 3, 1, 4], Split and Squeeze; q a global query map [1, h, w, C] (a Relu of an input) tiled over the B windows
# ("tile", as q_global.repeat) or its own Linear of the tokens ("linear"), Reshape [B, N, H, D], Transpose
# [0, 2, 1, 3], scaled; q @ k^T (k swapped [0, 1, 3, 2]) plus a relative-position bias, Softmax, @ v, heads merged,
# Linear. (name, query, B, N, H, D)
# Measured with rknn-toolkit2 2.5.0 on RK3566 (and RK3588 for the first pack) on 2026-12-05, not modelled, so none is
# a held case (docs/audit.md, h11-rk66attn): at batch 1 the stack's Reshape and Transpose ran on the CPU in every
# form below (GC ViT's stage 2 and 3 misses), at batch 2, 4 and 16 on the NPU, where PVT's single-model probes
# (kv_attention_*) have them on the NPU at batch 1; what separates them was not found. Build any with
# _packed(_global_kv_case, PACK, seed, used_only=True, opset=13).
GLOBAL_KV_PACK = (
    ("tile_b1n16h8d32", "tile", 1, 16, 8, 32), ("tile_b16n4h4d32", "tile", 16, 4, 4, 32), ("tile_b1n16h2d32", "tile", 1, 16, 2, 32),
    ("linear_b1n16h8d32", "linear", 1, 16, 8, 32), ("tile_b4n16h4d32", "tile", 4, 16, 4, 32),
)


# Varied at batch 1 to find what keeps the stack on the CPU there: no position bias ("nobias"), and the query its own
# input of Nq tokens by a Linear ("own"). (name, query, B, N, H, D, bias, Nq)
GLOBAL_KV_PACK_2 = (
    ("linear_b1n16h8d32_nobias", "linear", 1, 16, 8, 32, False, 16), ("own_b1n16h8d32_q4", "own", 1, 16, 8, 32, True, 4),
    ("own_b1n16h8d32_q16", "own", 1, 16, 8, 32, True, 16), ("linear_b1n64h2d32", "linear", 1, 64, 2, 32, True, 64),
    ("linear_b2n16h8d32", "linear", 2, 16, 8, 32, True, 16),
)


# And at batch 1 by the keys' count (4 as PVT's probes), unbound by two Gathers, the tokens a Relu of the input
# ("relu") first. (name, query, B, N, H, D, bias, Nq, unbind, source)
GLOBAL_KV_PACK_3 = (
    ("linear_b1n4h2d32", "linear", 1, 4, 2, 32, False, 4, "split", "input"), ("linear_b1n16h2d32_gather", "linear", 1, 16, 2, 32, False, 16, "gather", "input"),
    ("linear_b1n16h2d32_relu", "linear", 1, 16, 2, 32, False, 16, "split", "relu"), ("own_b1n4h2d32_q16", "own", 1, 4, 2, 32, False, 16, "split", "input"),
    ("linear_b1n9h2d32", "linear", 1, 9, 2, 32, False, 9, "split", "input"),
)


# And without the key/value projection's bias Add ("nobias" last: kv_bias False). (name, query, B, N, H, D, bias, Nq,
# unbind, source, kv_bias)
GLOBAL_KV_PACK_4 = (
    ("linear_b1n16h2d32_nokvb", "linear", 1, 16, 2, 32, False, 16, "split", "input", False),
    ("linear_b1n4h2d32_nokvb", "linear", 1, 4, 2, 32, False, 4, "split", "input", False),
    ("linear_b1n16h8d32_nokvb", "linear", 1, 16, 8, 32, True, 16, "split", "relu", False),
    ("linear_b4n16h4d32_nokvb", "linear", 4, 16, 4, 32, True, 16, "split", "input", False),
)


# And by where the tokens come from: a channels-first map's swap into tokens ("swap": [1, C, N] Transpose [0, 2, 1],
# as PVT's probes), or a channels-last map viewed as tokens ("map": [1, s, s, C] Reshape [1, N, C], as GC ViT's
# windows). (as GLOBAL_KV_PACK_4)
GLOBAL_KV_PACK_5 = (
    ("linear_b1n16h2d32_swap", "linear", 1, 16, 2, 32, False, 16, "split", "swap", True),
    ("linear_b1n16h8d32_map", "linear", 1, 16, 8, 32, True, 16, "split", "map", True),
    ("linear_b1n4h2d32_swap", "linear", 1, 4, 2, 32, False, 4, "split", "swap", True),
)
# And the tokens of a 1x1 Conv of a map [1, C, s, s], flattened and swapped ("conv", PVT's spatial reduction).
GLOBAL_KV_PACK_6 = (
    ("linear_b1n16h2d32_conv", "linear", 1, 16, 2, 32, False, 16, "split", "conv", False),
    ("linear_b1n4h2d32_conv", "linear", 1, 4, 2, 32, False, 4, "split", "conv", False),
)


def _global_kv_case(rng, spec) -> tuple[list, list, list, list]:
    name, query, b, n, h, d, *more = spec
    bias, nq, unbind, source, kv_bias = more + [True, n, "split", "input", True][len(more):]
    p = f"gkv_{name}_"
    node = _prefixed(p)
    c, side = h * d, int(round(n ** 0.5))
    inits = [_const(p + "w_kv", _weights(rng, c, 2 * c)), _const(p + "b_kv", _weights(rng, 2 * c)),
             _const(p + "kv_heads", np.array([b, n, 2, h, d], np.int64)), _const(p + "halves", np.array([1, 1], np.int64)),
             _const(p + "ax0", np.array([0], np.int64)), _const(p + "q_heads", np.array([b, n, h, d], np.int64)),
             _const(p + "rep", np.array([b, 1, 1, 1], np.int64)), _const(p + "scale", np.array(d ** -0.5, np.float32)),
             _const(p + "bias", _weights(rng, 1, h, nq, n)), _const(p + "merged", np.array([b, nq, c], np.int64)),
             _const(p + "own_heads", np.array([b, nq, h, d], np.int64)),
             _const(p + "w_out", _weights(rng, c, c)), _const(p + "w_q", _weights(rng, c, c))]
    inits += [_const(p + "i0", np.array(0, np.int64)), _const(p + "i1", np.array(1, np.int64))]
    tokens = {"relu": "x_r", "swap": "x_t", "map": "x_m", "conv": "x_t"}.get(source, "x")
    inits += [_const(p + "as_tokens", np.array([b, n, c], np.int64)), _const(p + "w_sr", _weights(rng, c, c, 1, 1)),
              _const(p + "flat", np.array([b, c, n], np.int64))]
    made = {"relu": [node("Relu", ["x"], "x_r")], "swap": [node("Transpose", ["x"], "x_t", perm=[0, 2, 1])],
            "map": [node("Reshape", ["x", "as_tokens"], "x_m")],
            "conv": [node("Conv", ["x", "w_sr"], "x_c"), node("Reshape", ["x_c", "flat"], "x_f"), node("Transpose", ["x_f"], "x_t", perm=[0, 2, 1])]}
    nodes = made.get(source, []) + [
        node("MatMul", [tokens, "w_kv"], "kv0" if kv_bias else "kv")] + ([node("Add", ["kv0", "b_kv"], "kv")] if kv_bias else []) + [
        node("Reshape", ["kv", "kv_heads"], "kv5"),
        node("Transpose", ["kv5"], "stack", perm=[2, 0, 3, 1, 4])]
    if unbind == "split":
        nodes += [helper.make_node("Split", [p + "stack", p + "halves"], [p + "k5", p + "v5"], name=p + "split", axis=0),
                  node("Squeeze", ["k5", "ax0"], "k"), node("Squeeze", ["v5", "ax0"], "v")]
    else:
        nodes += [node("Gather", ["stack", "i0"], "k", axis=0), node("Gather", ["stack", "i1"], "v", axis=0)]
    inputs = [_vi(p + "x", {"swap": [b, c, n], "map": [b, side, side, c], "conv": [b, c, side, side]}.get(source, [b, n, c]))]
    if query == "tile":
        nodes += [node("Relu", ["g"], "g_r"), node("Tile", ["g_r", "rep"], "q")]
        inputs.append(_vi(p + "g", [1, side, side, c]))
    elif query == "own":
        nodes += [node("Relu", ["xq"], "xq_r"), node("MatMul", ["xq_r", "w_q"], "q")]
        inputs.append(_vi(p + "xq", [b, nq, c]))
    else:
        nodes.append(node("MatMul", [tokens, "w_q"], "q"))
    nodes += [node("Reshape", ["q", "own_heads"], "qh"), node("Transpose", ["qh"], "qt", perm=[0, 2, 1, 3]), node("Mul", ["qt", "scale"], "qs"),
              node("Transpose", ["k"], "kt", perm=[0, 1, 3, 2]), node("MatMul", ["qs", "kt"], "s0" if bias else "s")]
    nodes += [node("Add", ["s0", "bias"], "s")] if bias else []
    nodes += [node("Softmax", ["s"], "a", axis=-1), node("MatMul", ["a", "v"], "o"), node("Transpose", ["o"], "ot", perm=[0, 2, 1, 3]),
              node("Reshape", ["ot", "merged"], "om"), node("MatMul", ["om", "w_out"], "y")]
    return nodes, inits, inputs, [_vi(p + "y", [b, nq, c])]


# ---- fresh4 (EnCodec) on RKNN: an LSTM's squeezed output summed with its input, swapped back before a Pad ----

# EnCodec's residual LSTM: a Conv1d map [1, C, L] swapped [2, 0, 1] into an LSTM (hidden C, with its bias), Y squeezed
# on axis 1, plus the LSTM's input, swapped back [1, 2, 0], then (tail) an Elu and/or a Pad ("reflect" or "constant")
# before a Conv1d. (name, C, L, tail)
LSTM_SQUEEZE_PAD_PACK = (("conv", 32, 64, ""), ("elu", 32, 64, "elu"), ("elu_reflect", 32, 64, "elu_reflect"),
                         ("reflect", 32, 64, "reflect"), ("elu_constant", 32, 64, "elu_constant"))


def _lstm_squeeze_pad_case(rng, spec) -> tuple[list, list, list, list]:
    name, c, length, tail = spec
    p = f"lsp_{name}_"
    node = _prefixed(p)
    inits = [_const(p + "w_in", _weights(rng, c, c, 3)), _const(p + "W", _weights(rng, 1, 4 * c, c)), _const(p + "R", _weights(rng, 1, 4 * c, c)),
             _const(p + "B", _weights(rng, 1, 8 * c)), _const(p + "axis", np.array([1], np.int64)), _const(p + "w_out", _weights(rng, c, c, 7)),
             _const(p + "pads", np.array([0, 0, 6, 0, 0, 0], np.int64))]
    nodes = [node("Conv", ["x", "w_in"], "map", pads=[1, 1]), node("Transpose", ["map"], "steps", perm=[2, 0, 1]),
             node("LSTM", ["steps", "W", "R", "B"], "Y", hidden_size=c), node("Squeeze", ["Y", "axis"], "h"),
             node("Add", ["h", "steps"], "sum"), node("Transpose", ["sum"], "back", perm=[1, 2, 0])]
    last = "back"
    if tail.startswith("elu"):
        nodes.append(node("Elu", [last], "act"))
        last = "act"
    if tail.endswith(("reflect", "constant")):
        nodes.append(node("Pad", [last, "pads"], "padded", mode=tail.split("_")[-1]))
        last = "padded"
    nodes.append(node("Conv", [last, "w_out"], "y"))
    out = length - 6 + (6 if last == "padded" else 0)
    return nodes, inits, [_vi(p + "x", [1, c, length])], [_vi(p + "y", [1, c, out])]


CASES.append(Case("lstm_squeeze_pad_pack", "fresh4: an LSTM's squeezed output plus its input, swapped back before a Pad (EnCodec's residual LSTM)",
                  lambda: _packed(_lstm_squeeze_pad_case, LSTM_SQUEEZE_PAD_PACK, 414, opset=13), ("rk3588", "rk3566")))
# ---- fresh6 (CondConv) on the i.MX 93: a Conv's weight computed at run time through onnx2tf ------------------------

# The same chain (routing Sigmoid -> MatMul of the experts -> Reshape to the weight -> Conv), one form a model since a
# conversion that fails refuses the whole model; "pw_folded" computes the routing from a constant instead of an input,
# so that onnxsim computes the weight before onnx2tf sees it.
def _condconv_weight_folded(rng, spec) -> tuple[list, list, list, list]:
    nodes, inits, inputs, outputs = _condconv_weight_case(rng, spec)
    p = f"ccw_{spec[0]}_"
    inits.append(_const(p + "route", np.full((1, 4), 0.5, np.float32)))
    return nodes, inits, [vi for vi in inputs if vi.name != p + "route"], outputs


for _i, (_spec, _build) in enumerate(((CONDCONV_WEIGHT_PACK[3], _condconv_weight_case), (CONDCONV_WEIGHT_PACK[0], _condconv_weight_case),
                                      (CONDCONV_WEIGHT_PACK[2], _condconv_weight_case), (CONDCONV_WEIGHT_PACK[4], _condconv_weight_case),
                                      (CONDCONV_WEIGHT_PACK[5], _condconv_weight_case), (CONDCONV_WEIGHT_PACK[3], _condconv_weight_folded))):
    _name = _spec[0] + ("_folded" if _build is _condconv_weight_folded else "")
    CASES.append(Case(f"condconv_imx_{_name}", f"fresh6: CondConv's {_name} weight computed {'from constants' if 'folded' in _name else 'at run time'} into a Conv, through onnx2tf",
                      lambda s=_spec, b=_build, i=_i: _packed(b, (s,), 270 + i, opset=13), ("imx93",)))


# ---- fresh6 (ViViT) through onnx2tf: an If of a constant condition and a 3-D patch-embedding Conv ----------------

def if_constant_condition(taken: bool) -> onnx.ModelProto:
    """A ViT's class token as transformers' traced interpolation check writes it: If(cond) on a constant [taken]
    (and a second If on Identity(cond)) picks the repeat counts [1, 1, 1] (else: Identity of a Constant; then:
    Expand of a Constant by a Reshape of a constant 0, Concat) and the class token (else: Identity of the
    initializer; then: a Reshape of it), Cast to int64, Tile, Concat before the [1, 16, 32] tokens, Sigmoid."""
    rng = np.random.default_rng(280 + int(taken))
    ones = numpy_helper.from_array(np.array([1, 1, 1], np.int64), "ifc_ones")
    then_a = helper.make_graph(
        [helper.make_node("Constant", [], ["ifc_t_one"], value=numpy_helper.from_array(np.array([1], np.int64))),
         helper.make_node("Reshape", ["ifc_zero", "ifc_t_one"], ["ifc_t_r"]),
         helper.make_node("Expand", ["ifc_t_one", "ifc_t_r"], ["ifc_t_e"]),
         helper.make_node("Concat", ["ifc_t_e", "ifc_two"], ["ifc_t_out"], axis=0)],
        "then_a", [], [helper.make_tensor_value_info("ifc_t_out", TensorProto.INT64, None)])
    else_a = helper.make_graph([helper.make_node("Identity", ["ifc_ones_c"], ["ifc_e_out"])], "else_a", [],
                               [helper.make_tensor_value_info("ifc_e_out", TensorProto.INT64, None)])
    then_b = helper.make_graph([helper.make_node("Reshape", ["ifc_cls", "ifc_cls_shape"], ["ifc_tb_out"])], "then_b", [],
                               [helper.make_tensor_value_info("ifc_tb_out", TensorProto.FLOAT, None)])
    else_b = helper.make_graph([helper.make_node("Identity", ["ifc_cls"], ["ifc_eb_out"])], "else_b", [],
                               [helper.make_tensor_value_info("ifc_eb_out", TensorProto.FLOAT, None)])
    inits = [_const("ifc_cond", np.array([taken])), _const("ifc_zero", np.array(0, np.int64)), _const("ifc_two", np.array([1, 1, 1], np.int64)),
             _const("ifc_cls", (_weights(rng, 1, 1, 32) * 0.1).astype(np.float32)), _const("ifc_cls_shape", np.array([1, 1, 32], np.int64))]
    nodes = [
        helper.make_node("Constant", [], ["ifc_ones_c"], value=ones, name="ifc_ones_const"),
        helper.make_node("If", ["ifc_cond"], ["ifc_reps"], then_branch=then_a, else_branch=else_a, name="ifc_if"),
        helper.make_node("Identity", ["ifc_cond"], ["ifc_cond2"], name="ifc_cond_identity"),
        helper.make_node("If", ["ifc_cond2"], ["ifc_token"], then_branch=then_b, else_branch=else_b, name="ifc_if_1"),
        helper.make_node("Cast", ["ifc_reps"], ["ifc_reps64"], to=TensorProto.INT64, name="ifc_cast"),
        helper.make_node("Tile", ["ifc_token", "ifc_reps64"], ["ifc_tiled"], name="ifc_tile"),
        helper.make_node("Relu", ["x"], ["ifc_xr"], name="ifc_relu"),
        helper.make_node("Concat", ["ifc_tiled", "ifc_xr"], ["ifc_cat"], axis=1, name="ifc_concat"),
        helper.make_node("Sigmoid", ["ifc_cat"], ["y"], name="ifc_sigmoid"),
    ]
    return _model(nodes, [_vi("x", [1, 16, 32])], [_vi("y", [1, 17, 32])], inits, opset=14, ir_version=7)


CASES.append(Case("if_constant_condition_else", "fresh6: ViViT's class token picked by an If of a constant false condition",
                  lambda: if_constant_condition(False), ("imx93", "rk3588", "esp32s3")))
# if_constant_condition(True) was measured too, not recorded: onnxsim 0.4.36 crashed on it (signal 11; its then-branch
# expands to an empty shape) and onnx2tf 1.29.24 then failed on the If itself ("KeyError: 'ifc_zero'"): not modelled.


# (name, input [N, C, D, H, W], kernel = stride, reader): ViViT's tubelet embedding [1, 3, 8, 32, 32] by 2x8x8 into
# 32 channels, read by its Reshape [1, 32, -1] then a Transpose to tokens and a Linear; by a Relu; by a Reshape and a
# Sigmoid.
CONV3D_PACK = (("vivit", "tokens"), ("relu", "relu"), ("reshape", "sigmoid"))


def _conv3d_case(rng, spec) -> tuple[list, list, list, list]:
    name, reader = spec
    p = f"c3d_{name}_"
    node = _prefixed(p)
    inits = [_const(p + "w", (_weights(rng, 32, 3, 2, 8, 8) * 0.05).astype(np.float32)), _const(p + "b", np.zeros(32, np.float32))]
    nodes = [node("Conv", ["x", "w", "b"], "conv", kernel_shape=[2, 8, 8], strides=[2, 8, 8])]
    if reader == "relu":
        return nodes + [node("Relu", ["conv"], "y")], inits, [_vi(p + "x", [1, 3, 8, 32, 32])], [_vi(p + "y", [1, 32, 4, 4, 4])]
    inits.append(_const(p + "flat", np.array([1, 32, 64], np.int64)))
    nodes.append(node("Reshape", ["conv", "flat"], "tok"))
    if reader == "sigmoid":
        return nodes + [node("Sigmoid", ["tok"], "y")], inits, [_vi(p + "x", [1, 3, 8, 32, 32])], [_vi(p + "y", [1, 32, 64])]
    inits.append(_const(p + "proj", (_weights(rng, 32, 32) * 0.1).astype(np.float32)))
    nodes += [node("Transpose", ["tok"], "t", perm=[0, 2, 1]), node("MatMul", ["t", "proj"], "y")]
    return nodes, inits, [_vi(p + "x", [1, 3, 8, 32, 32])], [_vi(p + "y", [1, 64, 32])]


CASES.append(Case("conv3d_imx_pack", "fresh6: ViViT's 3-D patch-embedding Conv and its readers through onnx2tf",
                  lambda: _packed(_conv3d_case, CONV3D_PACK, 282, opset=13), ("imx93",)))


# ---- fresh6 (Conditional DETR) through onnx2tf: onnxsim's fuse_qkv on a shared constant --------------------------

def qkv_of_equal_constants(second_round: bool, reader: str = "reshape", weights: tuple = (64, 64, 64)) -> onnx.ModelProto:
    """Conditional DETR's first decoder layer: its queries start as zeros, so the content query, key and value
    projections are three MatMuls of three equal Constants [1, 16, 64] (zeros) by constant weights [64, n] (+ bias),
    each read once: by a Reshape [1, 16, 4, -1] then an Add of the tokens ("reshape"), or by the Add alone ("add").
    `second_round`: the tokens are also Reshaped by a shape computed from Shape -> Gather of the input (onnxsim's
    first optimizer round makes it a constant, and shape inference then learns new shapes)."""
    rng = np.random.default_rng(290 + int(second_round))
    nodes, inits, outputs = [], [], []
    if second_round:
        nodes += [helper.make_node("Shape", ["x"], ["qkv_shape"], name="qkv_shape"),
                  helper.make_node("Gather", ["qkv_shape", "qkv_g0"], ["qkv_d0"], axis=0, name="qkv_gather"),
                  helper.make_node("Unsqueeze", ["qkv_d0", "qkv_ax0"], ["qkv_d0u"], name="qkv_unsqueeze"),
                  helper.make_node("Concat", ["qkv_d0u", "qkv_rest"], ["qkv_newshape"], axis=0, name="qkv_concat")]
        inits += [_const("qkv_g0", np.array(0, np.int64)), _const("qkv_ax0", np.array([0], np.int64)), _const("qkv_rest", np.array([16, 4, 16], np.int64))]
    else:
        inits.append(_const("qkv_newshape", np.array([1, 16, 4, 16], np.int64)))
    nodes += [helper.make_node("Relu", ["x"], ["qkv_xr"], name="qkv_relu"), helper.make_node("Reshape", ["qkv_xr", "qkv_newshape"], ["qkv_xx"], name="qkv_tokens")]
    inits.append(_const("qkv_heads", np.array([1, 16, 4, -1], np.int64)))
    for i, n in enumerate(weights):
        zeros = numpy_helper.from_array(np.zeros((1, 16, 64), np.float32))
        inits += [_const(f"qkv_w{i}", (_weights(rng, 64, n) * 0.1).astype(np.float32)), _const(f"qkv_b{i}", np.zeros(n, np.float32))]
        nodes += [helper.make_node("Constant", [], [f"qkv_z{i}"], value=zeros, name=f"qkv_zeros{i}"),
                  helper.make_node("MatMul", [f"qkv_z{i}", f"qkv_w{i}"], [f"qkv_m{i}"], name=f"qkv_matmul{i}"),
                  helper.make_node("Add", [f"qkv_b{i}", f"qkv_m{i}"], [f"qkv_p{i}"], name=f"qkv_bias{i}")]
        if reader == "reshape":
            nodes += [helper.make_node("Reshape", [f"qkv_p{i}", "qkv_heads"], [f"qkv_r{i}"], name=f"qkv_heads{i}"),
                      helper.make_node("Add", [f"qkv_r{i}", "qkv_xx" if n == 64 else f"qkv_r{i}"], [f"y{i}"], name=f"qkv_out{i}")]
            outputs.append(_vi(f"y{i}", [1, 16, 4, n // 4]))
        else:
            nodes.append(helper.make_node("Add", [f"qkv_p{i}", "qkv_xr"], [f"y{i}"], name=f"qkv_out{i}"))
            outputs.append(_vi(f"y{i}", [1, 16, 64]))
    if reader != "reshape":
        outputs.append(_vi("qkv_xx", ["n", "t", "h", "d"]))  # left open: shape inference learns it in the second round
    return _model(nodes, [_vi("x", [1, 16, 64])], outputs, inits, opset=14, ir_version=7)


CASES.append(Case("qkv_equal_constants_reshape", "fresh6: Conditional DETR's q/k/v of equal zero Constants, Reshaped into heads, onnxsim's second round",
                  lambda: qkv_of_equal_constants(True), ("imx93",)))
CASES.append(Case("qkv_equal_constants_one_round", "fresh6: the same q/k/v without the Shape that makes onnxsim optimize twice",
                  lambda: qkv_of_equal_constants(False), ("imx93",)))
CASES.append(Case("qkv_equal_constants_add", "fresh6: the q/k/v of equal Constants read by an Add of the tokens (no Reshape), onnxsim's second round",
                  lambda: qkv_of_equal_constants(True, "add"), ("imx93",)))
CASES.append(Case("qkv_equal_constants_unequal_weights", "fresh6: the same with a value weight [64, 32]: fuse_qkv does not match",
                  lambda: qkv_of_equal_constants(True, "reshape", (64, 64, 32)), ("imx93",)))


# ---- fresh6 (TimesFM) on RKNN: a Where with a one-element result ------------------------------------------------

# TimesFM guards its masked context's count against zero, Where(count == 0, 1, count), on a [1] sum. (name, input,
# axis summed or None): a [1, 1] input; a [1, 8] input summed over axis 1 (TimesFM's [1]); a [1, 8] input; a
# [1, 8, 8] input summed over axis 2 ([1, 8]). A crash refuses the whole model: each one-element form is a model.
WHERE_ONE_ELEMENT_FORMS = (("input11", [1, 1], None), ("sum1", [1, 8], 1), ("map18", [1, 8], None), ("sum18", [1, 8, 8], 2))


def _where_guard_case(rng, spec) -> tuple[list, list, list, list]:
    name, shape, axis = spec
    p = f"wog_{name}_"
    node = _prefixed(p)
    inits = [_const(p + "zero", np.array(0.0, np.float32)), _const(p + "one", np.array(1.0, np.float32))]
    nodes, src, out = [node("Relu", ["x"], "xr")], "xr", list(shape)
    if axis is not None:
        inits.append(_const(p + "axes", np.array([axis], np.int64)))
        nodes.append(node("ReduceSum", ["xr", "axes"], "count", keepdims=0))
        src, out = "count", [d for i, d in enumerate(shape) if i != axis]
    nodes += [node("Equal", [src, "zero"], "empty"), node("Where", ["empty", "one", src], "guarded"), node("Sigmoid", ["guarded"], "y")]
    return nodes, inits, [_vi(p + "x", shape)], [_vi(p + "y", out)]


for _form in WHERE_ONE_ELEMENT_FORMS[:2]:
    CASES.append(Case(f"where_one_element_{_form[0]}", f"fresh6: TimesFM's Where guard on a one-element tensor ({_form[0]})",
                      lambda f=_form: _packed(_where_guard_case, (f,), 300, opset=14), ("rk3588", "rk3566")))
CASES.append(Case("where_of_a_map_pack", "fresh6: the same Where guard on [1, 8] maps (read as is, or summed from [1, 8, 8])",
                  lambda: _packed(_where_guard_case, WHERE_ONE_ELEMENT_FORMS[2:], 301, opset=14), ("rk3588", "rk3566")))



# ---- fresh4 (SAM's ViTDet attention) on RKNN: the heads' stack flattened to [3, B*H, N, D] before its Split ----------

# transformers' SamVisionAttention: qkv one Linear of B windows' N tokens, Reshape [B, N, 3, H, D], Transpose
# [2, 0, 3, 1, 4], then Reshape [3, B*H, N, D] (the windows and heads flattened into one batch) before the Split on
# axis 0 and three Squeezes; q scaled, k swapped [0, 2, 1], q @ k^T, Softmax, @ v, viewed [B, H, N, D], swapped
# [0, 2, 1, 3], viewed [B, N, C], Linear ("flat"). timm's form ("timm") Splits the stack itself, 4-D parts, k swapped
# [0, 1, 3, 2]. (name, form, B, N, H, D)
# Measured with rknn-toolkit2 2.5.0 on RK3566 and RK3588 (2026-12-05, h12-rk66win), not modelled, so not held cases (build
# with _packed(_sam_stack_case, SAM_STACK_PACK, 331, used_only=True, opset=13), SAM_RELPOS_PACK with seed 337): the
# tokens a 3-D input shifted by a constant, not SAM's channels-last map (sam_attention_pack). RK3566: "flat" and "timm"
# at B = 1 and 16 or 64 tokens merged (no layer); 17 tokens: the stack's Transpose and flatten and the key's swap on the
# CPU; 4 windows: the heads' Reshape, the stack and flatten, q's and k's Squeezes and q's scale on the CPU. "relpos" at
# B = 1: the stack and flatten, the key's swap, q's view and both Unsqueezes on the CPU, as in sam_attention_pack, but
# RK3588 ran the stack and flatten on the CPU too there (on the NPU with the map input, as in SAM): not explained.
SAM_STACK_PACK = (
    ("flat_b1n16h2d32", "flat", 1, 16, 2, 32), ("timm_b1n16h2d32", "timm", 1, 16, 2, 32),
    ("flat_b1n64h2d32", "flat", 1, 64, 2, 32), ("flat_b1n16h4d16", "flat", 1, 16, 4, 16),
    ("flat_b4n16h2d32", "flat", 4, 16, 2, 32), ("flat_b1n17h2d32", "flat", 1, 17, 2, 32),
)
# SAM's decomposed relative positions ("relpos"): q (unscaled) also viewed [B*H, s, s, D], two Einsums with constant
# tables [s, s, D] (rows, columns), unsqueezed at -1 and -2, added, viewed [B*H, N, N] and added to the scores.
SAM_RELPOS_PACK = (
    ("relpos_b1n64h2d32", "relpos", 1, 64, 2, 32), ("relpos_b4n16h2d32", "relpos", 4, 16, 2, 32),
    ("relpos_b1n16h2d32", "relpos", 1, 16, 2, 32),
)


def _sam_stack_case(rng, spec) -> tuple[list, list, list, list]:
    name, form, b, n, h, d = spec
    p = f"samst_{name}_"
    node = _prefixed(p)
    c = h * d
    inits = [_const(p + "w_qkv", _weights(rng, c, 3 * c)), _const(p + "b_qkv", _weights(rng, 3 * c)),
             _const(p + "heads", np.array([b, n, 3, h, d], np.int64)), _const(p + "flat", np.array([3, b * h, n, d], np.int64)),
             _const(p + "thirds", np.array([1, 1, 1], np.int64)), _const(p + "ax0", np.array([0], np.int64)),
             _const(p + "scale", np.array(d ** -0.5, np.float32)), _const(p + "unflat", np.array([b, h, n, d], np.int64)),
             _const(p + "merged", np.array([b, n, c], np.int64)), _const(p + "w_out", _weights(rng, c, c)),
             _const(p + "shift", _weights(rng, c))]
    nodes = [node("Add", ["x", "shift"], "xa"), node("MatMul", ["xa", "w_qkv"], "qkv0"), node("Add", ["qkv0", "b_qkv"], "qkv"),
             node("Reshape", ["qkv", "heads"], "qkv5"), node("Transpose", ["qkv5"], "stack", perm=[2, 0, 3, 1, 4])]
    flat = form in ("flat", "relpos")
    if flat:
        nodes.append(node("Reshape", ["stack", "flat"], "stack4"))
    nodes += [helper.make_node("Split", [p + ("stack4" if flat else "stack"), p + "thirds"], [p + "q5", p + "k5", p + "v5"], name=p + "split", axis=0),
              node("Squeeze", ["q5", "ax0"], "q"), node("Squeeze", ["k5", "ax0"], "k"), node("Squeeze", ["v5", "ax0"], "v"),
              node("Mul", ["q", "scale"], "qs"), node("Transpose", ["k"], "kt", perm=[0, 2, 1] if flat else [0, 1, 3, 2]),
              node("MatMul", ["qs", "kt"], "s" if form != "relpos" else "s0")]
    if form == "relpos":
        nodes += _sam_relative_positions(rng, p, node, inits, b * h, n, d)
    nodes += [node("Softmax", ["s"], "a", axis=-1), node("MatMul", ["a", "v"], "o")]
    if flat:
        nodes.append(node("Reshape", ["o", "unflat"], "o4"))
    nodes += [node("Transpose", ["o4" if flat else "o"], "ot", perm=[0, 2, 1, 3]), node("Reshape", ["ot", "merged"], "om"),
              node("MatMul", ["om", "w_out"], "y")]
    return nodes, inits, [_vi(p + "x", [b, n, c])], [_vi(p + "y", [b, n, c])]


def _sam_relative_positions(rng, p, node, inits, bh, n, d) -> list:
    """SAM's add_decomposed_rel_pos on q [B*H, N, D]: the scores "s0" plus the rows' and columns' terms, as "s"."""
    side = int(round(n ** 0.5))
    inits += [_const(p + "q_map", np.array([bh, side, side, d], np.int64)), _const(p + "rel_h", _weights(rng, side, side, d)),
              _const(p + "rel_w", _weights(rng, side, side, d)), _const(p + "axm1", np.array([-1], np.int64)),
              _const(p + "axm2", np.array([-2], np.int64)), _const(p + "scores", np.array([bh, n, n], np.int64))]
    return [node("Reshape", ["q", "q_map"], "qm"), helper.make_node("Einsum", [p + "qm", p + "rel_h"], [p + "eh"], name=p + "eh", equation="bhwc,hkc->bhwk"),
            helper.make_node("Einsum", [p + "qm", p + "rel_w"], [p + "ew"], name=p + "ew", equation="bhwc,wkc->bhwk"),
            node("Unsqueeze", ["eh", "axm1"], "eh5"), node("Unsqueeze", ["ew", "axm2"], "ew5"), node("Add", ["eh5", "ew5"], "rel5"),
            node("Reshape", ["rel5", "scores"], "rel"), node("Add", ["s0", "rel"], "s")]




# SAM's heads merged through its map ("map"): attn @ v [B*H, N, D] viewed [B, H, a, a, D], swapped [0, 2, 3, 1, 4],
# viewed [B, a, a, C] and the out-projection Linear on that map (transformers' SamVisionAttention), instead of
# sam_attention_pack's [B, H, N, D], [0, 2, 1, 3], [B, N, C]; the rest as sam_attention_pack. (name, B, N, H, D, bias)
SAM_MAP_MERGE_PACK = (("relq_glob64_map", 1, 64, 2, 32, "q"), ("none_glob64_map", 1, 64, 2, 32, "none"),
                      ("relq_win16_map", 1, 16, 2, 32, "q"))
# The same with SAM's two Casts to float32 of the probabilities (softmax(dtype=float32).to(q.dtype)) before @ v ("cast").
SAM_MAP_MERGE_PACK_2 = (("relq_glob64_cast", 1, 64, 2, 32, "q", "cast"), ("none_glob64_cast", 1, 64, 2, 32, "none", "cast"))


def _sam_map_merge_case(rng, spec) -> tuple[list, list, list, list]:
    name, b, n, heads, d, _, *cast = spec
    nodes, inits, inputs, _ = _sam_attention_case(rng, spec[:6])
    p = f"sam_{name}_"
    node = _prefixed(p)
    c, a = heads * d, int(round(n ** 0.5))
    nodes = nodes[:next(i for i, x in enumerate(nodes) if x.name == p + "o") + 1]
    if cast:
        nodes[-1:] = [node("Cast", ["attn"], "attn_c", to=1), node("Cast", ["attn_c"], "attn_cc", to=1), node("MatMul", ["attn_cc", "v"], "o")]
    inits += [_const(p + "map5", np.array([b, heads, a, a, d], np.int64)), _const(p + "map4", np.array([b, a, a, c], np.int64))]
    nodes += [node("Reshape", ["o", "map5"], "o5"), node("Transpose", ["o5"], "ot5", perm=[0, 2, 3, 1, 4]),
              node("Reshape", ["ot5", "map4"], "omap"), node("MatMul", ["omap", "wo"], "y")]
    return nodes, inits, inputs, [_vi(p + "y", [b, a, a, c])]


CASES.append(Case("sam_map_merge_pack", "fresh4: SAM's attention with its heads merged through the map ([B, H, a, a, D] swapped [0, 2, 3, 1, 4])",
                  lambda: _packed(_sam_map_merge_case, SAM_MAP_MERGE_PACK, 347, opset=13), ("rk3566", "rk3588")))
CASES.append(Case("sam_map_merge_pack_2", "fresh4: SAM's attention merged through the map, its probabilities cast twice to float32",
                  lambda: _packed(_sam_map_merge_case, SAM_MAP_MERGE_PACK_2, 349, opset=13), ("rk3566", "rk3588")))

# The same between SAM's patch embedding and neck ("conv"): a 1x1 Conv of an image [B, C, a, a] swapped [0, 2, 3, 1]
# into the map, the attention's output added to that map, swapped back [0, 3, 1, 2] into a 1x1 Conv.
# Measured (rknn-toolkit2 2.5.0, RK3566 and RK3588, 2026-12-05), not modelled, so not held (build with
# _packed(_sam_between_convs_case, SAM_MAP_MERGE_PACK_3, 353, opset=13)): RK3566 runs the swap back into the neck's Conv
# on the NPU (SAM's neck/Transpose), where the audit has a CPU Transpose layer (the sum of an unbiased Linear and a
# map's swap is no stream channels_last_linear_stream_into_a_conv takes); the heads' merge through the map merged.
SAM_MAP_MERGE_PACK_3 = (("relq_glob64_conv", 1, 64, 2, 32, "q", "cast", "conv"), ("none_glob64_conv", 1, 64, 2, 32, "none", "cast", "conv"),
                        ("relq_win16_conv", 1, 16, 2, 32, "q", "", "conv"))


def _sam_between_convs_case(rng, spec) -> tuple[list, list, list, list]:
    name, b, n, heads, d, bias, cast, _ = spec
    nodes, inits, inputs, outputs = _sam_map_merge_case(rng, (name, b, n, heads, d, bias, *([cast] if cast else [])))
    p = f"sam_{name}_"
    node = _prefixed(p)
    c, a = heads * d, int(round(n ** 0.5))
    inits += [_const(p + "w_embed", _weights(rng, c, c, 1, 1)), _const(p + "w_neck", _weights(rng, c, c, 1, 1))]
    nodes = [node("Conv", ["img", "w_embed"], "embedded"), node("Transpose", ["embedded"], "x", perm=[0, 2, 3, 1])] + nodes
    nodes += [node("Add", ["y", "x"], "res"), node("Transpose", ["res"], "res_t", perm=[0, 3, 1, 2]), node("Conv", ["res_t", "w_neck"], "out")]
    return nodes, inits, [_vi(p + "img", [b, c, a, a])], [_vi(p + "out", [b, c, a, a])]


# ViViT's tubelet tokens into a Concat with the class token: a 3-D Conv [1, 3, 8, 32, 32] by 2x8x8 into 32 channels,
# Reshape [1, 32, -1], then (name, reader): a Transpose into a Concat after a constant class token ("concat_const"),
# after a run-time token ("concat_runtime"), the Reshape straight into a Concat along the channels ("concat_direct"),
# a Transpose into an Add of position embeddings ("add").
CONV3D_TOKENS_PACK = (("concat_const",), ("concat_runtime",), ("concat_direct",), ("add",))


def _conv3d_tokens_case(rng, spec) -> tuple[list, list, list, list]:
    (name,) = spec
    p = f"c3t_{name}_"
    node = _prefixed(p)
    inits = [_const(p + "w", (_weights(rng, 32, 3, 2, 8, 8) * 0.05).astype(np.float32)), _const(p + "b", np.zeros(32, np.float32)),
             _const(p + "flat", np.array([1, 32, -1], np.int64)), _const(p + "cls", (_weights(rng, 1, 1, 32) * 0.1).astype(np.float32))]
    nodes = [node("Conv", ["x", "w", "b"], "conv", kernel_shape=[2, 8, 8], strides=[2, 8, 8]), node("Reshape", ["conv", "flat"], "tok")]
    inputs, out = [_vi(p + "x", [1, 3, 8, 32, 32])], [1, 65, 32]
    if name == "concat_direct":
        inits[-1] = _const(p + "cls", (_weights(rng, 1, 32, 1) * 0.1).astype(np.float32))
        return nodes + [node("Concat", ["cls", "tok"], "y", axis=2)], inits, inputs, [_vi(p + "y", [1, 32, 65])]
    nodes.append(node("Transpose", ["tok"], "t", perm=[0, 2, 1]))
    if name == "add":
        inits.append(_const(p + "pos", (_weights(rng, 1, 64, 32) * 0.1).astype(np.float32)))
        return nodes + [node("Add", ["t", "pos"], "y")], inits, inputs, [_vi(p + "y", [1, 64, 32])]
    first = "cls"
    if name == "concat_runtime":
        nodes.append(node("Relu", ["r"], "rr"))
        inputs.append(_vi(p + "r", [1, 1, 32]))
        first = "rr"
    return nodes + [node("Concat", [first, "t"], "y", axis=1)], inits, inputs, [_vi(p + "y", out)]


CASES.append(Case("conv3d_tokens_imx_pack", "fresh6: ViViT's 3-D Conv tokens Reshaped into a Concat with a class token, through onnx2tf",
                  lambda: _packed(_conv3d_tokens_case, CONV3D_TOKENS_PACK, 283, opset=14), ("imx93",)))
# ---- fresh5 (Speech2Text) on RKNN: tokens swapped into a Conv1d, by source and token count ----

# Speech2Text's subsampler reads its features [1, T, F] swapped [0, 2, 1] into a Conv1d. (name, T, F, source, kernel,
# stride): source "input" (the model's input itself), "relu" (a Relu of it), "norm" (a LayerNorm over F); the
# Conv1d (32 channels) and a Relu, then a second swap [0, 2, 1] back into a Linear to 16 values.
TOKENS_INTO_CONV1D_PACK = (
    ("input_t100_f80", 100, 80, "input", 5, 2), ("input_t64_f40", 64, 40, "input", 3, 1), ("relu_t100_f80", 100, 80, "relu", 5, 2),
    ("relu_t49_f64", 49, 64, "relu", 3, 1), ("relu_t50_f64", 50, 64, "relu", 3, 1), ("norm_t100_f80", 100, 80, "norm", 5, 1),
    ("relu_t64_f64", 64, 64, "relu", 3, 1), ("relu_t24_f64", 24, 64, "relu", 3, 1), ("relu_t96_f80", 96, 80, "relu", 5, 2),
)


def _tokens_into_conv1d_case(rng, spec) -> tuple[list, list, list, list]:
    name, t, f, source, k, s = spec
    p = f"tic_{name}_"
    node = _prefixed(p)
    inits = [_const(p + "w", _weights(rng, 32, f, k)), _const(p + "b", _weights(rng, 32)), _const(p + "g", np.ones(f, np.float32)),
             _const(p + "beta", np.zeros(f, np.float32)), _const(p + "w_out", _weights(rng, 32, 16))]
    nodes = {"input": [], "relu": [node("Relu", ["x"], "src")], "norm": [node("LayerNormalization", ["x", "g", "beta"], "src", axis=-1, epsilon=1e-5)]}[source]
    nodes += [node("Transpose", ["x" if source == "input" else "src"], "swap", perm=[0, 2, 1]),
              node("Conv", ["swap", "w", "b"], "conv", pads=[k // 2, k // 2], strides=[s]), node("Relu", ["conv"], "act"),
              node("Transpose", ["act"], "back", perm=[0, 2, 1]), node("MatMul", ["back", "w_out"], "y")]
    length = (t + 2 * (k // 2) - k) // s + 1
    return nodes, inits, [_vi(p + "x", [1, t, f])], [_vi(p + "y", [1, length, 16])]


CASES.append(Case("tokens_into_conv1d_pack", "fresh5: tokens swapped into a Conv1d, from the input or not, by token count (Speech2Text's subsampler)",
                  lambda: _packed(_tokens_into_conv1d_case, TOKENS_INTO_CONV1D_PACK, 415, opset=17), ("rk3566",)))
# Measured on RK3588 too (2026-12-05), not modelled there: the model input [1, 64, 40] swapped into the Conv1d on its CPU
# (as Speech2Text's pack found for F = 24 and 40), every other swap on its NPU; the pack is held for RK3566 only.


# ---- Casts of comparisons' bools and Casts to the same type as model outputs (fresh7) ------------------------------
# (name, source, reader). source: "eq" Equal of a Relu and its 3x3 MaxPool (SuperPoint's NMS), "gt" Greater than a
# constant, "or" Or of that Equal and a Not, "same" a float32 Cast of a float32 Where (OWL-ViT's class head), "relu"
# a float32 Cast of a float32 Relu, "div" a float32 Cast of the Relu divided by itself plus one (a Div on the CPU).
# reader: "maxpool" a 3x3 MaxPool, "conv" a 1x1 Conv, "mul" a Mul by the Relu, "out" the Cast is the model output
# [1, 4, 16, 16], "out3" the same of a 3-D input [1, 64, 1] (OWL-ViT's logits), MaxPool then 1-D.
CAST_BOOL_PACK = (
    ("eq_maxpool", "eq", "maxpool"), ("eq_conv", "eq", "conv"), ("eq_mul", "eq", "mul"), ("eq_out", "eq", "out"),
    ("gt_maxpool", "gt", "maxpool"), ("or_maxpool", "or", "maxpool"), ("gt_out3", "gt", "out3"),
)  # fmt: skip
# Measured with the pack above on 2026-12-05 (RK3588 and RK3566), not held: the audit does not model them (a same-type
# Cast as the model output runs with its producer, 4-D, or as the output view, 3-D; docs/audit.md).
CAST_SAME_OUTPUT_PACK = (
    ("same_where_out", "same", "out"), ("same_relu_out", "relu", "out"), ("same_div_out", "div", "out"),
    ("same_where_out3", "same", "out3"), ("same_relu_out3", "relu", "out3"),
)  # fmt: skip


def _cast_bool_case(rng, spec) -> tuple[list, list, list, list]:
    name, source, reader = spec
    p = f"cb_{name}_"
    node = _prefixed(p)
    inits = [_const(p + "half", np.float32(0.5)), _const(p + "zero", np.float32(0.0)), _const(p + "w", _weights(rng, 4, 4, 1, 1))]
    inits.append(_const(p + "one", np.float32(1.0)))
    flat = reader == "out3"
    pool = {"kernel_shape": [3], "pads": [1, 1]} if flat else {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}
    nodes = [node("Relu", ["x"], "r"), node("MaxPool", ["r"], "mp", **pool)]
    if source == "eq":
        nodes.append(node("Equal", ["r", "mp"], "b"))
    elif source == "gt":
        nodes.append(node("Greater", ["r", "half"], "b"))
    elif source == "or":
        nodes += [node("Equal", ["r", "mp"], "eq"), node("Greater", ["mp", "half"], "gt"), node("Not", ["gt"], "ng"), node("Or", ["eq", "ng"], "b")]
    elif source == "same":
        nodes += [node("Greater", ["r", "half"], "gt"), node("Where", ["gt", "zero", "mp"], "b")]
    elif source == "div":
        nodes += [node("Add", ["r", "one"], "r1"), node("Div", ["mp", "r1"], "b")]
    else:
        nodes = nodes[:1]
    src = "r" if source == "relu" else "b"
    nodes.append(node("Cast", [src], "cast", to=TensorProto.FLOAT))
    if reader == "maxpool":
        nodes.append(node("MaxPool", ["cast"], "y", kernel_shape=[3, 3], pads=[1, 1, 1, 1]))
    elif reader == "conv":
        nodes.append(node("Conv", ["cast", "w"], "y"))
    elif reader == "mul":
        nodes.append(node("Mul", ["cast", "r"], "y"))
    out = p + ("cast" if reader.startswith("out") else "y")
    shape = [1, 64, 1] if flat else [1, 4, 16, 16]
    return nodes, inits, [_vi(p + "x", shape)], [_vi(out, shape)]


CASES.append(Case("cast_bool_pack", "fresh7: a Cast to float of a comparison's bool, read by an NPU operator or as the model output (SuperPoint's NMS)",
                  lambda: _packed(_cast_bool_case, CAST_BOOL_PACK, 707, opset=17), ("rk3588", "rk3566")))


# ---- fresh7 (Informer's mean scaler) on RKNN: a one-element Where whose condition is known at conversion ---------
# transformers' TimeSeriesMeanScaler: scale = sum|x| / max(sum(mask), 1) [1, 1]; default = the batch's scale, a scalar;
# Where(sum(mask) > 0, scale, default), clipped, divides the series. Its mask is constant in the export, so the
# condition is known at conversion. cond: "folded" Greater(ReduceSum(constant mask), 0) as exported; "stored" a bool
# [1, 1] initialiser; "runtime" Greater(sum|x|, 0), known only at run time (not held: the toolkit crashes, as
# where_one_element_* does; measured 2026-12-05). A crash refuses the whole model: each form is a model.
def where_known_condition(cond: str) -> onnx.ModelProto:
    rng = np.random.default_rng(77)
    node = _prefixed("")
    inits = [_const("mask", np.ones((1, 8), np.float32)), _const("axis1", np.array([1], np.int64)), _const("one", np.float32(1.0)),
             _const("zero", np.float32(0.0)), _const("tiny", np.float32(1e-10)), _const("w", _weights(rng, 8, 8))]
    nodes = [node("Abs", ["x"], "ax"), node("ReduceSum", ["ax", "axis1"], "num", keepdims=1), node("ReduceSum", ["mask", "axis1"], "cnt", keepdims=1),
             node("Clip", ["cnt", "one"], "cntc"), node("Div", ["num", "cntc"], "scale"), node("ReduceSum", ["num", "axis1"], "num0", keepdims=0),
             node("Squeeze", ["num0"], "default")]
    if cond == "folded":
        nodes.append(node("Greater", ["cnt", "zero"], "present"))
    elif cond == "runtime":
        nodes.append(node("Greater", ["num", "zero"], "present"))
    else:
        inits.append(_const("present", np.array([[True]])))
    nodes += [node("Where", ["present", "scale", "default"], "picked"), node("Clip", ["picked", "tiny"], "safe"), node("Div", ["x", "safe"], "scaled"),
              node("MatMul", ["scaled", "w"], "y")]
    return _model(nodes, [_vi("x", [1, 8])], [_vi("y", [1, 8])], inits, opset=14, ir_version=7)


for _cond in ("folded", "stored"):
    CASES.append(Case(f"where_known_condition_{_cond}", f"fresh7: Informer's mean scaler, a one-element Where whose condition is known at conversion ({_cond})",
                      lambda c=_cond: where_known_condition(c), ("rk3588", "rk3566")))


# ---- fresh7 (DeepFilterNet3) on RKNN: a GRU's output Y squeezed, then swapped batch-first or not ----

# DeepFilterNet3's SqueezedGRU: features [1, T, F] swapped [1, 0, 2] into a GRU (hidden H, linear_before_reset, with
# its bias), Y [T, 1, 1, H] squeezed on axis 1 and then (tail) swapped [1, 0, 2] back batch-first ("swap"), read
# straight ("plain"), fed to a second GRU whose Y is squeezed and swapped back ("stacked"), or the same with an LSTM
# ("lstm_swap"); a MatMul by a constant reads the end. (name, F, H, T, tail)
GRU_SQUEEZE_SWAP_PACK = (("swap", 32, 64, 50, "swap"), ("plain", 32, 64, 50, "plain"), ("stacked", 32, 64, 50, "stacked"),
                         ("lstm_swap", 32, 64, 50, "lstm_swap"))


def _recurrent_step(node, rng, p, inits, x, name, op, f, h):
    """A one-direction GRU (or LSTM) over `x` [T, 1, f] and its Y squeezed to [T, 1, h]; returns the Squeeze's output."""
    gates = 3 if op == "GRU" else 4
    inits += [_const(p + name + "W", _weights(rng, 1, gates * h, f)), _const(p + name + "R", _weights(rng, 1, gates * h, h)),
              _const(p + name + "B", _weights(rng, 1, 2 * gates * h))]
    extra = {"linear_before_reset": 1} if op == "GRU" else {}
    return [node(op, [x, name + "W", name + "R", name + "B"], name + "Y", hidden_size=h, **extra),
            node("Squeeze", [name + "Y", "axis"], name + "sq")]


def _gru_squeeze_swap_case(rng, spec) -> tuple[list, list, list, list]:
    name, f, h, t, tail = spec
    p = f"gss_{name}_"
    node = _prefixed(p)
    inits = [_const(p + "axis", np.array([1], np.int64)), _const(p + "w_out", _weights(rng, h, f))]
    nodes = [node("Transpose", ["x"], "steps", perm=[1, 0, 2])]
    nodes += _recurrent_step(node, rng, p, inits, "steps", "r1", "LSTM" if tail == "lstm_swap" else "GRU", f, h)
    last = "r1sq"
    if tail == "stacked":
        nodes += _recurrent_step(node, rng, p, inits, last, "r2", "GRU", h, h)
        last = "r2sq"
    if tail != "plain":
        nodes.append(node("Transpose", [last], "back", perm=[1, 0, 2]))
        last = "back"
    nodes.append(node("MatMul", [last, "w_out"], "y"))
    out = [1, t, f] if tail != "plain" else [t, 1, f]
    return nodes, inits, [_vi(p + "x", [1, t, f])], [_vi(p + "y", out)]


CASES.append(Case("gru_squeeze_swap_pack", "fresh7: a GRU's output Y squeezed, swapped back batch-first or not (DeepFilterNet3's SqueezedGRU)",
                  lambda: _packed(_gru_squeeze_swap_case, GRU_SQUEEZE_SWAP_PACK, 427, opset=13), ("rk3588", "rk3566")))


# ---- fresh7 (timm's EvoNorm-S0, RegNetZ-c16-evos) on RKNN: the norm's affine after a Div by a runtime tensor ----

# x / s with s computed (here Sigmoid(x) + 1), then * w [1, C, 1, 1] + b [1, C, 1, 1] (w ones, b zeros as timm
# initialises them, or not), read by a Conv. (name, C, weight, bias): "ones"/"zeros" or "random".
# ("weight", 32, "random", "zeros") was measured too (its Add with the CPU Div, the Mul on the NPU: the Mul folded into
# the Conv once the Add is gone, fuse_mul_into_conv, the audit does not model that; docs/audit.md) and is left out.
DIV_AFFINE_PACK = (("init", 32, "ones", "zeros"), ("bias", 32, "ones", "random"), ("trained", 32, "random", "random"))


def _div_affine_case(rng, spec) -> tuple[list, list, list, list]:
    name, c, weight, bias = spec
    p = f"dva_{name}_"
    node = _prefixed(p)
    fill = {"ones": lambda: np.ones((1, c, 1, 1), np.float32), "zeros": lambda: np.zeros((1, c, 1, 1), np.float32),
            "random": lambda: _weights(rng, 1, c, 1, 1) + 1.0}
    inits = [_const(p + "w_in", _weights(rng, c, 3, 3, 3)), _const(p + "one", np.array(1.0, np.float32)), _const(p + "w", fill[weight]()),
             _const(p + "b", fill[bias]()), _const(p + "w_out", _weights(rng, c, c, 1, 1))]
    nodes = [node("Conv", ["x", "w_in"], "map", pads=[1, 1, 1, 1]), node("Sigmoid", ["map"], "sig"), node("Add", ["sig", "one"], "s"),
             node("Div", ["map", "s"], "q"), node("Mul", ["q", "w"], "scaled"), node("Add", ["scaled", "b"], "shifted"),
             node("Conv", ["shifted", "w_out"], "y")]
    return nodes, inits, [_vi(p + "x", [1, 3, 16, 16])], [_vi(p + "y", [1, c, 16, 16])]


CASES.append(Case("div_affine_pack", "fresh7: a norm's affine (weight ones, bias zeros or not) after a Div by a runtime tensor (timm's EvoNorm-S0)",
                  lambda: _packed(_div_affine_case, DIV_AFFINE_PACK, 431, opset=13), ("rk3588", "rk3566")))



# ---- fresh7: a written-out layer norm over a MatMul's square [1, N, N] result (wav2vec2-BERT) ---------
def _layer_norm_written_out(rng, x: str, p: str, c: int) -> tuple[list, list, str]:
    """HF's decomposed LayerNorm over the last axis: ReduceMean, Sub, Pow 2, ReduceMean, Add eps, Sqrt, Div, Mul, Add."""
    inits = [_const(p + "two", np.array(2.0, np.float32)), _const(p + "eps", np.array(1e-5, np.float32)),
             _const(p + "w", 1 + _weights(rng, c)), _const(p + "b", _weights(rng, c))]
    nodes = [helper.make_node("ReduceMean", [x], [p + "mu"], name=p + "mean", axes=[-1]),
             helper.make_node("Sub", [x, p + "mu"], [p + "d"], name=p + "sub"),
             helper.make_node("Pow", [p + "d", p + "two"], [p + "d2"], name=p + "pow"),
             helper.make_node("ReduceMean", [p + "d2"], [p + "var"], name=p + "var", axes=[-1]),
             helper.make_node("Add", [p + "var", p + "eps"], [p + "ve"], name=p + "add_eps"),
             helper.make_node("Sqrt", [p + "ve"], [p + "s"], name=p + "sqrt"),
             helper.make_node("Div", [p + "d", p + "s"], [p + "n"], name=p + "div"),
             helper.make_node("Mul", [p + "n", p + "w"], [p + "nw"], name=p + "scale"),
             helper.make_node("Add", [p + "nw", p + "b"], [p + "y"], name=p + "shift")]
    return nodes, inits, p + "y"


def layer_norm_after_matmul(tokens: int, channels: int, source: str) -> onnx.ModelProto:
    """From a [1, tokens, 160] input: `source` "linear" a MatMul + bias to `channels`, "matmul" the MatMul alone,
    "residual" the sum of a Linear and a Linear of it ("half_residual" the second scaled by 0.5, "conv_residual" a
    Conv1d's instead), "input" no MatMul (input [1, tokens, channels]); then the norm."""
    rng = np.random.default_rng(27)
    width = channels if source == "input" else 160
    nodes, inits, x = [], [], "x"
    if source != "input":
        inits += [_const("w1", _weights(rng, width, channels) / 4), _const("b1", _weights(rng, channels))]
        nodes.append(helper.make_node("MatMul", ["x", "w1"], ["m1"], name="matmul"))
        x = "m1"
        if source in ("linear", "residual", "half_residual", "conv_residual"):
            nodes.append(helper.make_node("Add", ["b1", "m1"], ["h"], name="bias"))
            x = "h"
        if source in ("residual", "half_residual"):
            inits += [_const("w2", _weights(rng, channels, channels) / 3), _const("half", np.array(0.5, np.float32))]
            nodes.append(helper.make_node("MatMul", ["h", "w2"], ["m2"], name="matmul2"))
            if source == "half_residual":  # a Conformer's half-step feed-forward residual
                nodes.append(helper.make_node("Mul", ["m2", "half"], ["m2h"], name="half_step"))
            nodes.append(helper.make_node("Add", ["h", "m2h" if source == "half_residual" else "m2"], ["r"], name="residual"))
            x = "r"
        if source == "conv_residual":  # a Conv1d over the tokens (Transpose, Conv, Transpose) added back
            inits.append(_const("wc", _weights(rng, channels, channels, 3) / 4))
            nodes += [helper.make_node("Transpose", ["h"], ["ht"], name="to_channels", perm=[0, 2, 1]),
                      helper.make_node("Conv", ["ht", "wc"], ["hc"], name="conv1d", pads=[1, 1]),
                      helper.make_node("Transpose", ["hc"], ["hct"], name="to_tokens", perm=[0, 2, 1]),
                      helper.make_node("Add", ["h", "hct"], ["r"], name="residual")]
            x = "r"
    more, more_inits, y = _layer_norm_written_out(rng, x, "ln_", channels)
    return _model(nodes + more, [_vi("x", [1, tokens, width])], [_vi(y, [1, tokens, channels])], inits + more_inits, opset=14)


LAYER_NORM_AFTER_MATMUL = (("linear", 64, 64), ("linear", 32, 32), ("linear", 64, 48), ("matmul", 64, 64), ("residual", 64, 64), ("input", 64, 64),
                           ("half_residual", 64, 64), ("conv_residual", 64, 64))
CASES += [Case(f"layer_norm_after_{s}_{t}x{c}", "fresh7: a written-out layer norm over a MatMul's [1, N, N] result (wav2vec2-BERT)",
               lambda s=s, t=t, c=c: layer_norm_after_matmul(t, c, s), ("imx93",)) for s, t, c in LAYER_NORM_AFTER_MATMUL]


# ---- fresh7 (Perceiver's classification decoder) on RKNN: a Gather of one token as the model output ------------
# (name, tokens, bias, reader): a Linear [1, T, 16] -> [1, T, 10] (with its bias Add or not), Gather index 0 on axis 1
# (a scalar index: [1, 10]), the model output ("out") or read by a Relu first ("relu"); "map": see the builder.
TOKEN_PICK_PACK = (
    ("t1_bias_out", 1, True, "out"), ("t4_bias_out", 4, True, "out"), ("t1_nobias_out", 1, False, "out"),
    ("t4_bias_relu", 4, True, "relu"), ("map1_out", "map", True, "out"), ("t1_res_out", 1, "res", "out"),
    ("t1_ln_out", 1, "ln", "out"),
)  # fmt: skip
# Measured in the pack's first run (2026-12-05, RK3588 and RK3566), not held: ("t1_bias_relu", 1, True, "relu"): the
# Gather on the CPU and the Relu reading it on the CPU too, which the audit does not model (docs/audit.md).


def _token_pick_case(rng, spec) -> tuple[list, list, list, list]:
    name, tokens, bias, reader = spec
    p = f"tp_{name}_"
    node = _prefixed(p)
    if tokens == "map":  # a 1x1 Conv's one-channel map [1, 1, 8, 8] picked at 0 of axis 1 (SuperPoint's scores): [1, 8, 8]
        inits = [_const(p + "w", _weights(rng, 1, 4, 1, 1)), _const(p + "i0", np.array(0, np.int64))]
        nodes = [node("Conv", ["x", "w"], "map"), node("Gather", ["map", "i0"], "y", axis=1)]
        return nodes, inits, [_vi(p + "x", [1, 4, 8, 8])], [_vi(p + "y", [1, 8, 8])]
    inits = [_const(p + "w", _weights(rng, 16, 10)), _const(p + "b", _weights(rng, 10)), _const(p + "i0", np.array(0, np.int64))]
    nodes = [node("MatMul", ["x", "w"], "mm")]
    src = "mm"
    if bias == "res":  # SigLIP's pooling head: the sum of two computed tensors (two Linears here)
        inits.append(_const(p + "w2", _weights(rng, 16, 10)))
        nodes += [node("MatMul", ["x", "w2"], "mm2"), node("Add", ["mm", "mm2"], "logits")]
        src = "logits"
    elif bias == "ln":  # PiT's final norm: a LayerNorm of the Linear's result
        inits += [_const(p + "g", np.ones(10, np.float32)), _const(p + "beta", np.zeros(10, np.float32))]
        nodes.append(node("LayerNormalization", ["mm", "g", "beta"], "logits", axis=-1, epsilon=1e-5))
        src = "logits"
    elif bias:
        nodes.append(node("Add", ["b", "mm"], "logits"))
        src = "logits"
    nodes.append(node("Gather", [src, "i0"], "pick" if reader == "relu" else "y", axis=1))
    if reader == "relu":
        nodes.append(node("Relu", ["pick"], "y"))
    return nodes, inits, [_vi(p + "x", [1, tokens, 16])], [_vi(p + "y", [1, 10])]


# Not held (the audit does not model it; docs/audit.md): measured with
# _packed(_token_pick_case, TOKEN_PICK_PACK, 808, opset=17) on RK3588 and RK3566, 2026-12-05.


# ---- h14-rk66r: a map viewed as the model output, by what made the map --------------------------
# map_views_on_cpu (passes.py) held the view of a Conv's map [1, C, H, W] (H * W > 1) as the model output on RK3566's
# CPU. fresh7's CLIPSeg squeezes a ConvTranspose's map, SuperPoint picks (Gather at 0 of an axis of one) a Where's map:
# both CPU on RK3566, NPU on RK3588. This pack varies the map's maker alone, each viewed as a model output.
MAP_MAKERS = ("conv", "convtranspose", "where", "maxpool", "add2", "concat", "resize", "avgpool", "mul2")
# Measured in the packs' first run (2026-12-05), not held: the maker "transpose" (Transpose [0, 1, 3, 2] of the Conv's
# map): on RK3566 the Transpose runs on the CPU and its view by Squeeze, Gather or Reshape as the output, or read by a
# Relu, on the NPU; read by a Linear the view runs on the CPU. The audit's transpose_then_flatten_to_conv puts that
# Transpose (its moved axes merged by the Reshape) on the NPU (docs/audit.md). RK3588: all on the NPU.
MAP_VIEWS = ("squeeze", "gather", "tokens")
MAP_READERS = ("relu", "linear")  # the view read by a Relu (the model output), or by a Linear of a 4-channel map


def _map_maker_case(rng, spec) -> tuple[list, list, list, list]:
    """One entry (maker, view): x [1, 4, 8, 8] -> Conv (C channels) -> maker -> view -> model output y."""
    maker, view = spec[:2]
    reader = spec[2] if len(spec) > 2 else None
    p = f"mm_{maker}_{view}_" + (f"{reader}_" if reader else "")
    node = _prefixed(p)
    c = 1 if view in ("squeeze", "gather") else 4
    inits = [_const(p + "w", _weights(rng, c, 4, 3, 3)), _const(p + "w2", _weights(rng, c, 4, 3, 3)), _const(p + "zero", np.zeros((1, c, 1, 1), np.float32)),
             _const(p + "i0", np.array(0, np.int64)), _const(p + "axis", np.array([1], np.int64)), _const(p + "scales", np.array([1, 1, 2, 2], np.float32)),
             _const(p + "tokens", np.array([1, c, -1], np.int64)), _const(p + "wt", _weights(rng, c, c, 2, 2))]
    nodes = [node("Conv", ["x", "w"], "conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1])]
    side = 8
    if maker == "conv":
        last = "conv"
    elif maker == "convtranspose":
        nodes.append(node("ConvTranspose", ["conv", "wt"], "map", kernel_shape=[2, 2], strides=[2, 2]))
        last, side = "map", 16
    elif maker == "where":  # SuperPoint's suppression: keep a score where it equals its 3x3 max, else 0
        nodes += [node("MaxPool", ["conv"], "mx", kernel_shape=[3, 3], pads=[1, 1, 1, 1]), node("Equal", ["conv", "mx"], "eq"),
                  node("Where", ["eq", "conv", "zero"], "map")]
        last = "map"
    elif maker == "maxpool":
        nodes.append(node("MaxPool", ["conv"], "map", kernel_shape=[3, 3], pads=[1, 1, 1, 1]))
        last = "map"
    elif maker == "avgpool":
        nodes.append(node("AveragePool", ["conv"], "map", kernel_shape=[2, 2], strides=[2, 2]))
        last, side = "map", 4
    elif maker in ("add2", "mul2"):
        nodes += [node("Conv", ["x", "w2"], "conv2", kernel_shape=[3, 3], pads=[1, 1, 1, 1]), node("Add" if maker == "add2" else "Mul", ["conv", "conv2"], "map")]
        last = "map"
    elif maker == "concat":  # along the rows: the channel count kept
        nodes += [node("Conv", ["x", "w2"], "conv2", kernel_shape=[3, 3], pads=[1, 1, 1, 1]), node("Concat", ["conv", "conv2"], "map", axis=2)]
        last = "map"
    elif maker == "resize":
        nodes.append(helper.make_node("Resize", [p + "conv", "", p + "scales"], [p + "map"], name=p + "map", mode="nearest"))
        last, side = "map", 16
    else:  # transpose: the rows and columns swapped, still a [1, C, H, W] map
        nodes.append(node("Transpose", ["conv"], "map", perm=[0, 1, 3, 2]))
        last = "map"
    rows = side * 2 if maker == "concat" else side
    if view == "squeeze":
        nodes.append(node("Squeeze", [last, "axis"], "y"))
        shape = [1, rows, side]
    elif view == "gather":
        nodes.append(node("Gather", [last, "i0"], "y", axis=1))
        shape = [1, rows, side]
    else:
        nodes.append(node("Reshape", [last, "tokens"], "y"))
        shape = [1, c, rows * side]
    if reader:  # the view renamed "v", read by the reader that writes y
        nodes[-1] = helper.make_node(nodes[-1].op_type, list(nodes[-1].input), [p + "v"], name=p + "v", **{a.name: helper.get_attribute_value(a) for a in nodes[-1].attribute})
        if reader == "relu":
            nodes.append(node("Relu", ["v"], "y"))
        else:
            inits.append(_const(p + "wl", _weights(rng, shape[-1], 8)))
            nodes.append(node("MatMul", ["v", "wl"], "y"))
            shape = shape[:-1] + [8]
    return nodes, inits, [_vi(p + "x", [1, 4, 8, 8])], [_vi(p + "y", shape)]


MAP_MAKER_PACK = tuple((m, v) for m in MAP_MAKERS for v in MAP_VIEWS)
MAP_MAKER_READER_PACK = tuple((m, "tokens", r) for m in MAP_MAKERS for r in MAP_READERS)
# RK3588 not held: every node on its NPU, the Linear's [1, 4, 8] output too, which unaligned_3d_model_output puts on
# its CPU (K = 8 not a multiple of 16; measured 2026-12-05, not modelled: docs/audit.md).
CASES.append(Case("map_maker_view_reader_pack", "fresh7: a map viewed by its maker, read by a Relu or a Linear",
                  lambda: _packed(_map_maker_case, MAP_MAKER_READER_PACK, 1415, used_only=True, opset=13), ("rk3566",)))
CASES.append(Case("map_maker_view_pack", "fresh7: a map viewed as the model output, by its maker (CLIPSeg's ConvTranspose, SuperPoint's Where)",
                  lambda: _packed(_map_maker_case, MAP_MAKER_PACK, 1414, used_only=True, opset=13), ("rk3566", "rk3588")))


# ---- h14-rk66r: a view read by a CPU node (EvoNorm-S0's group std viewed back into a map, read by a Div) ---------
# fresh7's timm_regnetz_c16_evos: Reshape [1, G, 16, H, W] -> [1, C, H, W] of an Expand, read by a Div by that
# computed tensor (CPU on both chips): the Reshape on RK3566's CPU, on RK3588's NPU. This pack varies the ranks the view
# goes between and whether its reader runs on the CPU (a Div by the view) or the NPU (a Mul by it).
VIEW_RANKS = {  # name: (shape before the view, shape after it); the Conv's map is [1, 16, 8, 8]
    "r5to4": ([1, 4, 4, 8, 8], [1, 16, 8, 8]), "r3to4": ([1, 16, 64], [1, 16, 8, 8]), "r4to3": ([1, 16, 8, 8], [1, 16, 64]),
    "r4to5": ([1, 16, 8, 8], [1, 4, 4, 8, 8]), "r4to4": ([1, 16, 8, 8], [1, 4, 32, 8]), "r5to4e": ([1, 4, 4, 8, 8], [1, 16, 8, 8]),
    "r3to3": ([1, 16, 64], [1, 64, 16]),
}
VIEW_READERS = ("div", "mul")


def _view_reader_case(rng, spec) -> tuple[list, list, list, list]:
    """One entry (ranks, reader): Conv map -> [view into `before`] -> Sigmoid -> the view V into `after` -> reader(y2, V)."""
    ranks, reader = spec
    before, after = VIEW_RANKS[ranks]
    p = f"vr_{ranks}_{reader}_"
    node = _prefixed(p)
    inits = [_const(p + "w", _weights(rng, 16, 4, 3, 3)), _const(p + "before", np.array(before, np.int64)), _const(p + "after", np.array(after, np.int64)),
             _const(p + "axes", np.array([2, 3, 4], np.int64)), _const(p + "full", np.array(before, np.int64))]
    nodes = [node("Conv", ["x", "w"], "conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1])]
    last = "conv"
    if before != [1, 16, 8, 8]:
        nodes.append(node("Reshape", [last, "before"], "grouped"))
        last = "grouped"
    if ranks == "r5to4e":  # EvoNorm's group statistic: a mean over each group, expanded back over it
        nodes += [node("ReduceMean", [last], "mean", axes=[2, 3, 4], keepdims=1), node("Sigmoid", ["mean"], "act"), node("Expand", ["act", "full"], "src")]
    else:
        nodes.append(node("Sigmoid", [last], "src"))
    nodes.append(node("Reshape", ["src", "after"], "v"))
    nodes.append(node("Div" if reader == "div" else "Mul", ["y2", "v"], "y"))
    return nodes, inits, [_vi(p + "x", [1, 4, 8, 8]), _vi(p + "y2", after)], [_vi(p + "y", after)]


VIEW_READER_PACK = tuple((r, k) for r in VIEW_RANKS for k in VIEW_READERS)
# Not held (the audit does not model it; docs/audit.md): measured with
# _packed(_view_reader_case, VIEW_READER_PACK, 1416, used_only=True, opset=13) on RK3566 and RK3588, 2026-12-05.


# ---- h14-rk66r: a view of an Expand's result (EvoNorm-S0's group statistic expanded over its group) ---------------
# view_reader_pack: Reshape [1, 4, 4, 8, 8] -> [1, 16, 8, 8] of an Expand ran on RK3566's CPU whatever read it, of a
# Sigmoid on its NPU. This pack varies the Expand's ranks and what is expanded, the view, and what reads the view.
EXPAND_VIEWS = {  # name: (statistic's shape, Expand's shape, the view's shape); the Conv's map is [1, 16, 8, 8]
    "g5to4": ([1, 4, 1, 1, 1], [1, 4, 4, 8, 8], [1, 16, 8, 8]), "g5to4p": ([1, 4, 4, 1, 1], [1, 4, 4, 8, 8], [1, 16, 8, 8]),
    "c4to3": ([1, 16, 1, 1], [1, 16, 8, 8], [1, 16, 64]), "c4to4": ([1, 16, 1, 1], [1, 16, 8, 8], [1, 16, 4, 16]),
    "t3to4": ([1, 16, 1], [1, 16, 64], [1, 16, 8, 8]), "c4to5": ([1, 16, 1, 1], [1, 16, 8, 8], [1, 4, 4, 8, 8]),
}
EXPAND_READERS = ("square", "conv")  # Mul(V, V) as the output; a 1x1 Conv of V (4-D views only)


def _expand_view_case(rng, spec) -> tuple[list, list, list, list]:
    """One entry (shapes, reader): Conv map -> view into the statistic's rank -> ReduceMean -> Sigmoid -> Expand -> view V -> reader."""
    name, reader = spec
    stat, full, view = EXPAND_VIEWS[name]
    p = f"ev_{name}_{reader}_"
    node = _prefixed(p)
    grouped = [1, 4, 4, 8, 8] if len(stat) == 5 else [1, 16, 64] if len(stat) == 3 else [1, 16, 8, 8]
    inits = [_const(p + "w", _weights(rng, 16, 4, 3, 3)), _const(p + "grouped", np.array(grouped, np.int64)), _const(p + "full", np.array(full, np.int64)),
             _const(p + "view", np.array(view, np.int64)), _const(p + "w1", _weights(rng, 8, 16, 1, 1))]
    nodes = [node("Conv", ["x", "w"], "conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1])]
    last = "conv"
    if grouped != [1, 16, 8, 8]:
        nodes.append(node("Reshape", [last, "grouped"], "g"))
        last = "g"
    axes = [i for i, (a, b) in enumerate(zip(stat, grouped)) if a != b]
    nodes += [node("ReduceMean", [last], "mean", axes=axes, keepdims=1), node("Sigmoid", ["mean"], "act"), node("Expand", ["act", "full"], "e"),
              node("Reshape", ["e", "view"], "v")]
    if reader == "square":
        nodes.append(node("Mul", ["v", "v"], "y"))
        shape = view
    else:
        nodes.append(node("Conv", ["v", "w1"], "y", kernel_shape=[1, 1]))
        shape = [1, 8] + view[2:]
    return nodes, inits, [_vi(p + "x", [1, 4, 8, 8])], [_vi(p + "y", shape)]


# Measured in the pack's first run (2026-12-05, RK3566 and RK3588), not held: ("t3to4", "square") and ("c4to5", "square"):
# the view on RK3566's CPU (the 3-D Expand's view read by a Conv instead: NPU), which the audit does not model; RK3588: NPU.
EXPAND_VIEW_NOT_HELD = (("t3to4", "square"), ("c4to5", "square"))
EXPAND_VIEW_PACK = tuple((n, r) for n in EXPAND_VIEWS for r in EXPAND_READERS
                         if (r == "square" or len(EXPAND_VIEWS[n][2]) == 4) and (n, r) not in EXPAND_VIEW_NOT_HELD)
CASES.append(Case("expand_view_pack", "fresh7: a view of an Expand's result (EvoNorm-S0's group statistic), by ranks and reader",
                  lambda: _packed(_expand_view_case, EXPAND_VIEW_PACK, 1417, used_only=True, opset=13), ("rk3566", "rk3588")))


# ---- fresh7 (Pix2Struct's attention mask) on RKNN: an Add of zeros that broadcasts a smaller run-time tensor ------
# zeros [1, 2, 8, 64] + Relu(x) [1, 1, 1, 64] (x first where "second"), then `tail`, then (unless "out") an Add of the
# run-time y [1, 2, 8, 64]. rknn-toolkit2 2.5.0 removes the Add (remove_invalid_add) and, where a reader taking its
# shape from it alone is read further, stops in fold_constant (onnxruntime: invalid dimensions); the rest build.
# Measured, not held ("map_minus": the Add read by a Sub from a [1, 2, 8, 64] constant, then the Add of y): builds,
# the Sub on the CPU of both chips, which the audit does not model (2026-12-05).
BROADCAST_ZERO_ADD_FORMS = {
    # name: (reader chain, x's shape, zeros first)
    "relu": ("relu", [1, 1, 1, 64], True),
    "one_minus": ("one_minus", [1, 1, 1, 64], True),
    "times_two": ("times_two", [1, 1, 1, 64], True),
    "sigmoid": ("sigmoid", [1, 1, 1, 64], True),
    "mask_where": ("mask_where", [1, 1, 1, 64], True),
    "read_by_add": ("none", [1, 1, 1, 64], True),
    "relu_out": ("relu_out", [1, 1, 1, 64], True),
    "zeros_second": ("relu", [1, 1, 1, 64], False),
    "same_shape": ("relu", [1, 2, 8, 64], True),
}


def broadcast_zero_add(tail: str, x_shape: list, zeros_first: bool) -> onnx.ModelProto:
    rng = np.random.default_rng(417)
    inits = [_const("zeros", np.zeros((1, 2, 8, 64), np.float32)), _const("one", np.array(1.0, np.float32)),
             _const("two", np.array(2.0, np.float32)), _const("low", np.array(-1e4, np.float32)),
             _const("map", rng.random((1, 2, 8, 64)).astype(np.float32))]
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu_x"),
             helper.make_node("Add", ["zeros", "r"] if zeros_first else ["r", "zeros"], ["a"], name="zero_add")]
    readers = {
        "relu": [helper.make_node("Relu", ["a"], ["m"], name="reader")],
        "relu_out": [helper.make_node("Relu", ["a"], ["out"], name="reader")],
        "one_minus": [helper.make_node("Sub", ["one", "a"], ["m"], name="reader")],
        "times_two": [helper.make_node("Mul", ["a", "two"], ["m"], name="reader")],
        "sigmoid": [helper.make_node("Sigmoid", ["a"], ["m"], name="reader")],
        "map_minus": [helper.make_node("Sub", ["map", "a"], ["m"], name="reader")],
        "none": [],
        "mask_where": [helper.make_node("Sub", ["one", "a"], ["s"], name="reader"),
                       helper.make_node("Equal", ["s", "one"], ["e"], name="is_masked"),
                       helper.make_node("Where", ["e", "low", "s"], ["m"], name="mask_fill")],
    }
    nodes += readers[tail]
    inputs = [_vi("x", x_shape)]
    if tail != "relu_out":
        nodes.append(helper.make_node("Add", ["y", "a" if tail == "none" else "m"], ["out"], name="scores_add"))
        inputs.append(_vi("y", [1, 2, 8, 64]))
    return _model(nodes, inputs, [_vi("out", [1, 2, 8, 64])], inits, opset=17)


CASES += [Case(f"broadcast_zero_add_{name}", "fresh7: an Add of zeros broadcasting a smaller run-time tensor (Pix2Struct's attention mask)",
               lambda f=f: broadcast_zero_add(*f), ("rk3588", "rk3566")) for name, f in BROADCAST_ZERO_ADD_FORMS.items()]


# ---- fresh7 (timm's EvoNorm-S0) on RKNN: the group variance's epsilon Add, by group count -----------------------
# (name, G, H, cast): a 1x1 Conv [1, 8, H, H] -> [1, 16G, H, H], EvoNorm-S0 with G groups of 16 channels (Reshape to
# [1, G, 16, H, H], Cast, mean, squared deviation, mean, + 1e-3, Sqrt, Cast, Expand to the grouped shape, Reshape
# back, x * sigmoid(v * x) divided by it, times w plus b), then a 1x1 Conv to 8 channels. cast False: no Casts.
EVONORM_GROUPS_PACK = (
    ("g2", 2, 8, True), ("g3", 3, 8, True), ("g16", 16, 4, True), ("g18", 18, 4, True), ("g32", 32, 4, True),
    ("g48", 48, 4, True), ("g2_nocast", 2, 8, False), ("g48_nocast", 48, 4, False),
)  # fmt: skip


def _evonorm_groups_case(rng, spec) -> tuple[list, list, list, list]:
    name, groups, size, cast, per = (*spec, 16) if len(spec) == 4 else spec
    p = f"evo_{name}_"
    node = _prefixed(p)
    c = per * groups
    grouped = [1, groups, per, size, size]
    inits = [_const(p + "w_in", _weights(rng, c, 8, 1, 1)), _const(p + "grouped", np.array(grouped, np.int64)),
             _const(p + "back", np.array([1, c, size, size], np.int64)), _const(p + "eps", np.array(1e-3, np.float32)),
             _const(p + "v", _weights(rng, 1, c, 1, 1)), _const(p + "w", _weights(rng, 1, c, 1, 1) + 1),
             _const(p + "b", _weights(rng, 1, c, 1, 1)), _const(p + "w_out", _weights(rng, 8, c, 1, 1))]
    nodes = [node("Conv", ["x", "w_in"], "map"), node("Reshape", ["map", "grouped"], "g")]
    src = "g"
    if cast:
        nodes.append(node("Cast", ["g"], "gc", to=TensorProto.FLOAT))
        src = "gc"
    nodes += [node("ReduceMean", [src], "mean", axes=[2, 3, 4], keepdims=1), node("Sub", [src, "mean"], "dev"),
              node("Mul", ["dev", "dev"], "sq"), node("ReduceMean", ["sq"], "var", axes=[2, 3, 4], keepdims=1),
              node("Add", ["var", "eps"], "var_eps"), node("Sqrt", ["var_eps"], "std")]
    std = "std"
    if cast:
        nodes.append(node("Cast", ["std"], "std_c", to=TensorProto.FLOAT))
        std = "std_c"
    nodes += [node("Expand", [std, "grouped"], "std_x"), node("Reshape", ["std_x", "back"], "std_map"),
              node("Mul", ["map", "v"], "vx"), node("Sigmoid", ["vx"], "gate"), node("Mul", ["map", "gate"], "num"),
              node("Div", ["num", "std_map"], "normed"), node("Mul", ["normed", "w"], "scaled"),
              node("Add", ["scaled", "b"], "biased"), node("Conv", ["biased", "w_out"], "y")]
    return nodes, inits, [_vi(p + "x", [1, 8, size, size])], [_vi(p + "y", [1, 8, size, size])]


# The group-count threshold on RK3588 (name, G, H, cast, channels per group).
EVONORM_THRESHOLD_PACK = (
    ("g20", 20, 2, True, 16), ("g24", 24, 2, True, 16), ("g28", 28, 2, True, 16), ("g31", 31, 2, True, 16),
    ("g33", 33, 2, True, 16), ("g40", 40, 2, True, 16), ("g64", 64, 2, True, 16), ("g32_per8", 32, 2, True, 8),
    ("g16_per32", 16, 2, True, 32), ("g24_per4", 24, 2, True, 4), ("g8_per64", 8, 2, True, 64),
)  # fmt: skip
CASES.append(Case("evonorm_threshold_pack", "fresh7: EvoNorm-S0's group variance plus epsilon, by group count (timm's RegNetZ-EvoS)",
                  lambda: _packed(_evonorm_groups_case, EVONORM_THRESHOLD_PACK, 912, opset=13), ("rk3588",)))
CASES.append(Case("evonorm_groups_pack", "fresh7: EvoNorm-S0's group variance plus epsilon, by group count (timm's RegNetZ-EvoS)",
                  lambda: _packed(_evonorm_groups_case, EVONORM_GROUPS_PACK, 911, opset=13), ("rk3588", "rk3566")))


# ---- fresh7 (Marian's lm_head) on RKNN: a Linear's 3-D model output by width --------------------------------------
# (name, K, bias): [1, 16, 64] -> MatMul [64, K] -> + bias [1, K] ("zeros": a bias of zeros, as Marian's
# final_logits_bias; None: no bias Add) -> the model output [1, 16, K].
OUTPUT_WIDTH_PACK = (
    ("k8", 8, "random"), ("k24", 24, "random"), ("k40", 40, "random"), ("k100", 100, "random"), ("k1000", 1000, "random"),
    ("k1000_zeros", 1000, "zeros"), ("k1000_nobias", 1000, None), ("k24_zeros", 24, "zeros"), ("k1008", 1008, "random"),
    ("k4_nobias", 4, None), ("k8_nobias", 8, None), ("k12_nobias", 12, None), ("k24_nobias", 24, None), ("k40_nobias", 40, None),
    ("k4_zeros", 4, "zeros"),
)  # fmt: skip


def _output_width_case(rng, spec) -> tuple[list, list, list, list]:
    name, width, bias = spec
    p = f"ow_{name}_"
    node = _prefixed(p)
    inits = [_const(p + "w", _weights(rng, 64, width))]
    nodes = [node("MatMul", ["x", "w"], "logits" if bias is None else "mm")]
    if bias is not None:
        inits.append(_const(p + "b", np.zeros((1, width), np.float32) if bias == "zeros" else _weights(rng, 1, width)))
        nodes.append(node("Add", ["mm", "b"], "logits"))
    return nodes, inits, [_vi(p + "x", [1, 16, 64])], [_vi(p + "logits", [1, 16, width])]


CASES.append(Case("output_width_pack", "fresh7: a Linear's 3-D model output by width, its bias of zeros or not (Marian's lm_head)",
                  lambda: _packed(_output_width_case, OUTPUT_WIDTH_PACK, 913, opset=17), ("rk3588",)))


# ---- fresh7 (OWL-ViT's class head) on RKNN: a float-to-float Cast as the model output -----------------------------
# (name, K, rank): [1, 64, 16] -> MatMul [16, K] -> Relu -> Cast to float -> the model output [1, 64, K] (rank 3), or
# a 1x1 Conv [1, 8, 8, 8] -> [1, K, 8, 8] -> Relu -> Cast (rank 4).
SAME_TYPE_CAST_OUT_PACK = (
    ("k1", 1, 3), ("k4", 4, 3), ("k16", 16, 3), ("k24", 24, 3), ("k64", 64, 3), ("c4_map", 4, 4), ("c16_map", 16, 4),
)  # fmt: skip


def _same_type_cast_out_case(rng, spec) -> tuple[list, list, list, list]:
    name, width, rank = spec
    p = f"cto_{name}_"
    node = _prefixed(p)
    if rank == 3:
        inits, nodes = [_const(p + "w", _weights(rng, 16, width))], [node("MatMul", ["x", "w"], "mm")]
        x_shape, y_shape = [1, 64, 16], [1, 64, width]
    else:
        inits, nodes = [_const(p + "w", _weights(rng, width, 8, 1, 1))], [node("Conv", ["x", "w"], "mm")]
        x_shape, y_shape = [1, 8, 8, 8], [1, width, 8, 8]
    nodes += [node("Relu", ["mm"], "act"), node("Cast", ["act"], "y", to=TensorProto.FLOAT)]
    return nodes, inits, [_vi(p + "x", x_shape)], [_vi(p + "y", y_shape)]


CASES.append(Case("same_type_cast_out_pack", "fresh7: a float-to-float Cast as the model output, 3-D by width or 4-D (OWL-ViT's class head)",
                  lambda: _packed(_same_type_cast_out_case, SAME_TYPE_CAST_OUT_PACK, 914, opset=17), ("rk3588",)))
# RK3566 measured on the whole pack too (2026-12-05): k1 and k4 on the NPU, which the audit does not model (OWL-ViT's
# [1, 64, 1] after a Where: CPU); held without them.
CASES.append(Case("same_type_cast_out_rk3566_pack", "fresh7: a float-to-float Cast as the model output, 3-D by width or 4-D (OWL-ViT's class head)",
                  lambda: _packed(_same_type_cast_out_case, tuple(e for e in SAME_TYPE_CAST_OUT_PACK if e[0] not in ("k1", "k4")), 914, opset=17),
                  ("rk3566",)))


# ---- fresh7 (Perceiver's decoder) on RKNN: the pick of the one token, by width and reader -------------------------
# (name, K, reader): [1, 1, 16] -> MatMul [16, K] + bias -> Gather index 0 along axis 1 ([1, K]) -> the model output
# ("out"), or a MatMul [K, 16] + bias read as the output ("linear": PiT's head reads its class token so).
TOKEN_PICK_WIDTH_PACK = (
    ("k10_out", 10, "out"), ("k16_out", 16, "out"), ("k24_out", 24, "out"), ("k32_out", 32, "out"), ("k64_out", 64, "out"),
    ("k8_out", 8, "out"), ("k10_linear", 10, "linear"), ("k64_linear", 64, "linear"),
)  # fmt: skip


def _token_pick_width_case(rng, spec) -> tuple[list, list, list, list]:
    name, width, reader = spec
    p = f"tpw_{name}_"
    node = _prefixed(p)
    inits = [_const(p + "w", _weights(rng, 16, width)), _const(p + "b", _weights(rng, width)), _const(p + "i0", np.array(0, np.int64))]
    nodes = [node("MatMul", ["x", "w"], "mm"), node("Add", ["mm", "b"], "tokens"),
             node("Gather", ["tokens", "i0"], "y" if reader == "out" else "pick", axis=1)]
    out_width = width
    if reader == "linear":
        inits += [_const(p + "w2", _weights(rng, width, 16)), _const(p + "b2", _weights(rng, 16))]
        nodes += [node("MatMul", ["pick", "w2"], "mm2"), node("Add", ["mm2", "b2"], "y")]
        out_width = 16
    return nodes, inits, [_vi(p + "x", [1, 1, 16])], [_vi(p + "y", [1, out_width])]


CASES.append(Case("token_pick_width_pack", "fresh7: a Gather of the one token along an axis of one, by width and reader (Perceiver's decoder, PiT's and SigLIP's heads)",
                  lambda: _packed(_token_pick_width_case, TOKEN_PICK_WIDTH_PACK, 915, opset=17), ("rk3588", "rk3566")))


# ---- Attention's heads merged into a channels-last map or into tokens (h14-rk66t) ---------------------------------
# (name, B, h, w, H, D, tail): a batch of B windows of h*w tokens [B, h*w, H*D], a joint q/k/v Linear, Reshape
# [B, N, 3, H, D], Transpose [2, 0, 3, 1, 4], Split, Squeezes, q scaled, k swapped, Softmax, attn @ v, the heads'
# merge Transpose [0, 2, 1, 3], then tail: "tokens" Reshape [B, N, H*D] and a Linear (ViT), "map" Reshape
# [B, h, w, H*D] and a Linear (MaxViT's channels-last windows), "map_conv" Reshape [B, h, w, H*D], Transpose
# [0, 3, 1, 2] and a 1x1 Conv (MobileNetV4), "map_relu" Reshape [B, h, w, H*D] and a Relu (the Linear alone away).
HEADS_MERGE_MAP_PACK = (
    ("tok_b16_n4_h4", 16, 2, 2, 4, 32, "tokens"), ("map_b16_n4_h4", 16, 2, 2, 4, 32, "map"),
    ("tok_b1_n16_h2", 1, 4, 4, 2, 32, "tokens"), ("map_b1_n16_h2", 1, 4, 4, 2, 32, "map"),
    ("tok_b4_n64_h2", 4, 8, 8, 2, 32, "tokens"), ("map_b4_n64_h2", 4, 8, 8, 2, 32, "map"),
    ("conv_b16_n4_h4", 16, 2, 2, 4, 32, "map_conv"), ("relu_b16_n4_h4", 16, 2, 2, 4, 32, "map_relu"),
    ("map_b1_n16_h8", 1, 4, 4, 8, 32, "map"), ("tok_b1_n16_h8", 1, 4, 4, 8, 32, "tokens"),
)  # fmt: skip


def _heads_merge_map_case(rng, spec) -> tuple[list, list, list, list]:
    name, b, h, w, heads, d, tail = spec
    p = f"hmm_{name}_"
    node = _prefixed(p)
    n, c = h * w, heads * d
    inits = [_const(p + "wqkv", _weights(rng, c, 3 * c)), _const(p + "split5", np.array([b, n, 3, heads, d], np.int64)),
             _const(p + "ones", np.array([1, 1, 1], np.int64)), _const(p + "ax0", np.array([0], np.int64)),
             _const(p + "scale", np.float32(d ** -0.5)), _const(p + "wo", _weights(rng, c, c)),
             _const(p + "tok", np.array([b, n, c], np.int64)), _const(p + "map", np.array([b, h, w, c], np.int64)),
             _const(p + "wconv", _weights(rng, c, c, 1, 1))]
    nodes = [node("MatMul", ["x", "wqkv"], "qkv"), node("Reshape", ["qkv", "split5"], "heads"),
             node("Transpose", ["heads"], "stack", perm=[2, 0, 3, 1, 4])]
    nodes.append(helper.make_node("Split", [p + "stack", p + "ones"], [p + "q5", p + "k5", p + "v5"], name=p + "split", axis=0))
    nodes += [node("Squeeze", ["q5", "ax0"], "q"), node("Squeeze", ["k5", "ax0"], "k"), node("Squeeze", ["v5", "ax0"], "v"),
              node("Mul", ["q", "scale"], "qs"), node("Transpose", ["k"], "kt", perm=[0, 1, 3, 2]),
              node("MatMul", ["qs", "kt"], "scores"), node("Softmax", ["scores"], "attn", axis=-1),
              node("MatMul", ["attn", "v"], "ctx"), node("Transpose", ["ctx"], "merge", perm=[0, 2, 1, 3])]
    if tail == "tokens":
        nodes += [node("Reshape", ["merge", "tok"], "view"), node("MatMul", ["view", "wo"], "y")]
        shape = [b, n, c]
    elif tail == "map":
        nodes += [node("Reshape", ["merge", "map"], "view"), node("MatMul", ["view", "wo"], "y")]
        shape = [b, h, w, c]
    elif tail == "map_relu":
        nodes += [node("Reshape", ["merge", "map"], "view"), node("Relu", ["view"], "y")]
        shape = [b, h, w, c]
    else:
        nodes += [node("Reshape", ["merge", "map"], "view"), node("Transpose", ["view"], "chw", perm=[0, 3, 1, 2]),
                  node("Conv", ["chw", "wconv"], "y")]
        shape = [b, c, h, w]
    return nodes, inits, [_vi(p + "x", [b, n, c])], [_vi(p + "y", shape)]


CASES.append(Case("heads_merge_map_pack", "fresh2: attention's heads merged into a channels-last map or into tokens, by what reads it (MaxViT)",
                  lambda: _packed(_heads_merge_map_case, HEADS_MERGE_MAP_PACK, 1401, used_only=True, opset=17), ("rk3566", "rk3588")))
# The same by window count and size at one window (B = 1), MaxViT's last stage ([1, 2, 2, 16 heads of 32]) among them.
HEADS_MERGE_MAP_PACK_2 = (
    ("map_b1_n4_h16", 1, 2, 2, 16, 32, "map"), ("tok_b1_n4_h16", 1, 2, 2, 16, 32, "tokens"), ("map_b1_n4_h4", 1, 2, 2, 4, 32, "map"),
    ("map_b1_n4_h2", 1, 2, 2, 2, 32, "map"), ("map_b2_n16_h2", 2, 4, 4, 2, 32, "map"), ("map_b1_n64_h2", 1, 8, 8, 2, 32, "map"),
    ("map_b1_n16_h16", 1, 4, 4, 16, 32, "map"), ("map_b1_n8_h2", 1, 2, 4, 2, 32, "map"), ("map_b1_n8_h2w", 1, 4, 2, 2, 32, "map"),
)  # fmt: skip
CASES.append(Case("heads_merge_map_pack_2", "fresh2: attention's heads merged into one channels-last window, by its size and heads (MaxViT)",
                  lambda: _packed(_heads_merge_map_case, HEADS_MERGE_MAP_PACK_2, 1402, used_only=True, opset=17), ("rk3566", "rk3588")))


# ---- A key/value projection's stack by query source and token counts (h14-rk66t) ---------------------------------
# (name, Nq, Nkv, H, source): q a Linear of x [1, Nq, H*32] split into heads (Reshape, Transpose [0, 2, 1, 3]), k and v
# one Linear of source ("x": the same tokens as q, PVT-v2's last stage; "y": an input of its own [1, Nkv, H*32], a
# spatial reduction's tokens) split by Reshape [1, Nkv, 2, H, 32], Transpose [2, 0, 3, 1, 4], Split and Squeezes; the
# key swapped, q scaled, Softmax, attn @ v, the heads merged and a Linear.
KV_STACK_PACK = (
    ("same_n4_h8", 4, 4, 8, "x"), ("same_n4_h2", 4, 4, 2, "x"), ("same_n16_h8", 16, 16, 8, "x"), ("same_n4_h16", 4, 4, 16, "x"),
    ("own_q16_kv4_h8", 16, 4, 8, "y"), ("own_q4_kv4_h8", 4, 4, 8, "y"), ("own_q16_kv16_h8", 16, 16, 8, "y"),
    ("own_q4_kv16_h8", 4, 16, 8, "y"), ("own_q16_kv4_h2", 16, 4, 2, "y"),
)  # fmt: skip


def _kv_stack_case(rng, spec) -> tuple[list, list, list, list]:
    name, nq, nkv, heads, source, *style = spec
    p = f"kvs_{name}_"
    node = _prefixed(p)
    d, c = 32, heads * 32
    if style == ["ln_bias"]:  # timm's form: a LayerNorm of each source, Linears with a bias
        return _kv_stack_ln_bias(rng, p, node, nq, nkv, heads, source)
    inits = [_const(p + "wq", _weights(rng, c, c)), _const(p + "wkv", _weights(rng, c, 2 * c)), _const(p + "wo", _weights(rng, c, c)),
             _const(p + "qshape", np.array([1, nq, heads, d], np.int64)), _const(p + "kvshape", np.array([1, nkv, 2, heads, d], np.int64)),
             _const(p + "ones", np.array([1, 1], np.int64)), _const(p + "ax0", np.array([0], np.int64)),
             _const(p + "scale", np.float32(d ** -0.5)), _const(p + "tok", np.array([1, nq, c], np.int64))]
    nodes = [node("MatMul", ["x", "wq"], "qlin"), node("Reshape", ["qlin", "qshape"], "qheads"),
             node("Transpose", ["qheads"], "q", perm=[0, 2, 1, 3]), node("Mul", ["q", "scale"], "qs"),
             node("MatMul", [source, "wkv"], "kvlin"), node("Reshape", ["kvlin", "kvshape"], "kvheads"),
             node("Transpose", ["kvheads"], "stack", perm=[2, 0, 3, 1, 4])]
    nodes.append(helper.make_node("Split", [p + "stack", p + "ones"], [p + "k5", p + "v5"], name=p + "split", axis=0))
    nodes += [node("Squeeze", ["k5", "ax0"], "k"), node("Squeeze", ["v5", "ax0"], "v"), node("Transpose", ["k"], "kt", perm=[0, 1, 3, 2]),
              node("MatMul", ["qs", "kt"], "scores"), node("Softmax", ["scores"], "attn", axis=-1),
              node("MatMul", ["attn", "v"], "ctx"), node("Transpose", ["ctx"], "merge", perm=[0, 2, 1, 3]),
              node("Reshape", ["merge", "tok"], "view"), node("MatMul", ["view", "wo"], "y_out")]
    inputs = [_vi(p + "x", [1, nq, c])] + ([_vi(p + "y", [1, nkv, c])] if source == "y" else [])
    return nodes, inits, inputs, [_vi(p + "y_out", [1, nq, c])]


CASES.append(Case("kv_stack_pack", "fresh2: a key/value projection's heads stack by the query's source, token counts and heads (PVT-v2, Twins, GC ViT)",
                  lambda: _packed(_kv_stack_case, KV_STACK_PACK, 1403, used_only=True, opset=17), ("rk3566", "rk3588")))


# The same written as timm writes PVT-v2's attention: the sources LayerNormed, the Linears with a bias.
KV_STACK_PACK_2 = (
    ("ln_same_n4_h8", 4, 4, 8, "x", "ln_bias"), ("ln_own_q16_kv4_h8", 16, 4, 8, "y", "ln_bias"), ("ln_own_q16_kv4_h2", 16, 4, 2, "y", "ln_bias"),
    ("ln_own_q4_kv4_h8", 4, 4, 8, "y", "ln_bias"), ("ln_same_n16_h2", 16, 16, 2, "x", "ln_bias"),
)  # fmt: skip


def _kv_stack_ln_bias(rng, p, node, nq, nkv, heads, source) -> tuple[list, list, list, list]:
    d, c = 32, heads * 32
    inits = [_const(p + "wq", _weights(rng, c, c)), _const(p + "wkv", _weights(rng, c, 2 * c)), _const(p + "wo", _weights(rng, c, c)),
             _const(p + "bq", _weights(rng, c)), _const(p + "bkv", _weights(rng, 2 * c)), _const(p + "g", np.ones(c, np.float32)),
             _const(p + "beta", np.zeros(c, np.float32)),
             _const(p + "qshape", np.array([1, nq, heads, d], np.int64)), _const(p + "kvshape", np.array([1, nkv, 2, heads, d], np.int64)),
             _const(p + "ones", np.array([1, 1], np.int64)), _const(p + "ax0", np.array([0], np.int64)),
             _const(p + "scale", np.float32(d ** -0.5)), _const(p + "tok", np.array([1, nq, c], np.int64))]
    nodes = [node("LayerNormalization", ["x", "g", "beta"], "xn", axis=-1, epsilon=1e-5)]
    side = int(round(nkv ** 0.5))
    if source in ("sr", "map"):  # the tokens of a map [1, C, s, s] (a Conv's, stride 2 over x's map, or an input)
        inits += [_const(p + "wsr", _weights(rng, c, c, 2, 2)), _const(p + "flat", np.array([1, c, nkv], np.int64)),
                  _const(p + "xmap", np.array([1, 2 * side, 2 * side, c], np.int64))]
        if source == "sr":
            nodes += [node("Reshape", ["x", "xmap"], "xm"), node("Transpose", ["xm"], "xc", perm=[0, 3, 1, 2]),
                      node("Conv", ["xc", "wsr"], "ymap", strides=[2, 2])]
        nodes += [node("Reshape", ["ymap" if source == "sr" else "m", "flat"], "yflat"), node("Transpose", ["yflat"], "y", perm=[0, 2, 1])]
        source = "y"
    if source == "y":
        nodes.append(node("LayerNormalization", ["y", "g", "beta"], "yn", axis=-1, epsilon=1e-5))
    nodes += [node("MatMul", ["xn", "wq"], "qmm"), node("Add", ["qmm", "bq"], "qlin"), node("Reshape", ["qlin", "qshape"], "qheads"),
              node("Transpose", ["qheads"], "q", perm=[0, 2, 1, 3]), node("Mul", ["q", "scale"], "qs"),
              node("MatMul", [source + "n", "wkv"], "kvmm"), node("Add", ["kvmm", "bkv"], "kvlin"), node("Reshape", ["kvlin", "kvshape"], "kvheads"),
              node("Transpose", ["kvheads"], "stack", perm=[2, 0, 3, 1, 4])]
    nodes.append(helper.make_node("Split", [p + "stack", p + "ones"], [p + "k5", p + "v5"], name=p + "split", axis=0))
    nodes += [node("Squeeze", ["k5", "ax0"], "k"), node("Squeeze", ["v5", "ax0"], "v"), node("Transpose", ["k"], "kt", perm=[0, 1, 3, 2]),
              node("MatMul", ["qs", "kt"], "scores"), node("Softmax", ["scores"], "attn", axis=-1),
              node("MatMul", ["attn", "v"], "ctx"), node("Transpose", ["ctx"], "merge", perm=[0, 2, 1, 3]),
              node("Reshape", ["merge", "tok"], "view"), node("MatMul", ["view", "wo"], "y_out")]
    inputs = [_vi(p + "x", [1, nq, c])] + ([_vi(p + "y", [1, nkv, c])] if source == "y" and not any(n.name == p + "y" for n in nodes) else [])
    inputs += [_vi(p + "m", [1, c, side, side])] if any(p + "m" in n.input for n in nodes) else []
    return nodes, inits, inputs, [_vi(p + "y_out", [1, nq, c])]


# The key/value source a map's tokens: a Conv's (stride 2, PVT-v2's spatial reduction) or an input map's, flattened.
KV_STACK_PACK_3 = (
    ("sr_q16_kv4_h8", 16, 4, 8, "sr", "ln_bias"), ("sr_q16_kv4_h2", 16, 4, 2, "sr", "ln_bias"), ("sr_q64_kv16_h2", 64, 16, 2, "sr", "ln_bias"),
    ("map_q16_kv4_h8", 16, 4, 8, "map", "ln_bias"), ("map_q4_kv4_h8", 4, 4, 8, "map", "ln_bias"),
)  # fmt: skip
# Measured with _packed(_kv_stack_case, KV_STACK_PACK_3, 1405, used_only=True, opset=17) (RK3566 and RK3588, 2026-12-05),
# not held: on RK3566 every stack and its heads' Reshape on the NPU (the audit agrees), but the map's flattening (Reshape
# [1, C, H*W]) on the CPU in all five and, for "sr", the tokens viewed as a map and swapped into the Conv on the CPU
# (the audit: NPU; not modelled, docs/audit.md). RK3588: every node on the NPU.


CASES.append(Case("kv_stack_pack_2", "fresh2: a key/value projection's heads stack as timm writes it (LayerNorm, biased Linears), by the query's source",
                  lambda: _packed(_kv_stack_case, KV_STACK_PACK_2, 1404, used_only=True, opset=17), ("rk3566", "rk3588")))


# ---- fresh2 (SwiftFormer's layer scale after its attention) on RKNN: the Mul after the view back ----------------
# (name, channels, map side, gamma): tokens_for_linears_pack's block with a layer scale gamma [C, 1, 1] between the view
# back and the residual Add: "uniform" every value 1e-5 (timm's initial layer scale, as the pool's fresh2 model has
# it), "random" values drawn, "half" every value 0.5.
LAYER_SCALE_AFTER_VIEW_PACK = (
    ("c220_2x2_uniform", 220, 2, "uniform"), ("c220_2x2_random", 220, 2, "random"), ("c220_2x2_half", 220, 2, "half"),
    ("c48_2x2_uniform", 48, 2, "uniform"), ("c40_3x3_uniform", 40, 3, "uniform"), ("c40_3x3_random", 40, 3, "random"),
)  # fmt: skip


def _layer_scale_after_view_case(rng, spec) -> tuple[list, list, list, list]:
    name, c, h, gamma = spec
    nodes, inits, inputs, outputs = _tokens_for_linears_case(rng, (f"ls_{name}", c, h, "constant"))
    p = f"ls_{name}_"
    values = {"uniform": np.full((c, 1, 1), 1e-5, np.float32), "half": np.full((c, 1, 1), 0.5, np.float32),
              "random": (rng.random((c, 1, 1)) + 0.5).astype(np.float32)}[gamma]
    inits.append(_const(p + "gamma", values))
    residual = nodes.pop()
    nodes += [helper.make_node("Mul", [p + "v", p + "gamma"], [p + "vs"], name=p + "layer_scale"),
              helper.make_node("Add", [residual.input[0], p + "vs"], list(residual.output), name=residual.name)]
    return nodes, inits, inputs, outputs


CASES.append(Case("layer_scale_after_view_pack", "fresh2: a layer scale after SwiftFormer's view back of its attention's tokens",
                  lambda: _packed(_layer_scale_after_view_case, LAYER_SCALE_AFTER_VIEW_PACK, 916, opset=17), ("rk3588",)))


# ---- fresh2 (GC ViT's global query) on RK3588: what puts the heads' Transpose with the CPU Tile --------------------
# (name, key, expand): tiled_query_pack's tile4d_product (a [1, 2, 2, 64] query tiled over 16 windows, 2 heads of 32,
# scaled, into q @ k^T), its key a Linear split into heads ("linear", as there) or timm's WindowAttentionGlobal's kv:
# a Linear to 2C, Reshape [B, N, 2, h, d], Transpose [2, 0, 3, 1, 4], Split, Squeeze, the key's Transpose
# [0, 1, 3, 2] ("kv"); expand: the query Expanded to its own shape first (timm's q_global.expand).
GLOBAL_QUERY_PACK = (
    ("linear", "linear", False), ("linear_expand", "linear", True), ("kv", "kv", False), ("kv_expand", "kv", True),
)  # fmt: skip


def _global_query_case(rng, spec) -> tuple[list, list, list, list]:
    name, key, expand = spec
    p, b, n, h, d = f"gq_{name}_", 16, 4, 2, 32
    c = h * d
    node = _prefixed(p)
    inits = [_const(p + "rep", np.array([b, 1, 1, 1], np.int64)), _const(p + "heads", np.array([b, n, h, d], np.int64)),
             _const(p + "scale", np.array(d ** -0.5, np.float32)), _const(p + "qshape", np.array([1, 2, 2, c], np.int64))]
    nodes = [node("Relu", ["q"], "r")]
    src = "r"
    if expand:
        nodes.append(node("Expand", ["r", "qshape"], "re"))
        src = "re"
    nodes += [node("Tile", [src, "rep"], "s"), node("Reshape", ["s", "heads"], "qh"),
              node("Transpose", ["qh"], "qt", perm=[0, 2, 1, 3]), node("Mul", ["qt", "scale"], "qm")]
    if key == "linear":
        inits.append(_const(p + "wk", _weights(rng, c, c)))
        nodes += [node("MatMul", ["x", "wk"], "k"), node("Reshape", ["k", "heads"], "kh"),
                  node("Transpose", ["kh"], "kt", perm=[0, 2, 3, 1])]
    else:
        inits += [_const(p + "wkv", _weights(rng, c, 2 * c)), _const(p + "kv_heads", np.array([b, n, 2, h, d], np.int64)),
                  _const(p + "axis0", np.array([0], np.int64)), _const(p + "halves", np.array([1, 1], np.int64))]
        nodes += [node("MatMul", ["x", "wkv"], "kv"), node("Reshape", ["kv", "kv_heads"], "kvh"),
                  node("Transpose", ["kvh"], "kvt", perm=[2, 0, 3, 1, 4]),
                  helper.make_node("Split", [p + "kvt", p + "halves"], [p + "k5", p + "v5"], name=p + "split", axis=0),
                  node("Squeeze", ["k5", "axis0"], "k"), node("Squeeze", ["v5", "axis0"], "v"),
                  node("Transpose", ["k"], "kt", perm=[0, 1, 3, 2])]
    nodes += [node("MatMul", ["qm", "kt"], "att"), node("Softmax", ["att"], "y", axis=-1)]
    outputs = [_vi(p + "y", [b, h, n, n])]
    if key == "kv":
        nodes.append(node("Relu", ["v"], "yv"))
        outputs.append(_vi(p + "yv", [b, h, n, d]))
    return nodes, inits, [_vi(p + "q", [1, 2, 2, c]), _vi(p + "x", [b, n, c])], outputs


CASES.append(Case("global_query_pack", "fresh2: GC ViT's global query tiled over the windows, its key a Linear or timm's kv split (RK3588)",
                  lambda: _packed(_global_query_case, GLOBAL_QUERY_PACK, 917, opset=17), ("rk3588",)))


# ---- fresh7 (Pix2Struct's patch mask) on the i.MX 93: Not(Equal(.)) through onnx2tf -----------------------------
# (name, comparison, negated): a [1, 64, 16] input summed over its last axis ([1, 64]), compared with 0, negated by a
# Not or not, Cast to float and multiplied into a Relu of the sum (the mask's use), the model output.
NOT_EQUAL_PACK = (("equal_not", "Equal", True), ("equal", "Equal", False), ("greater_not", "Greater", True))


def _not_equal_case(rng, spec) -> tuple[list, list, list, list]:
    name, comparison, negated = spec
    p = f"ne_{name}_"
    node = _prefixed(p)
    inits = [_const(p + "axis", np.array([-1], np.int64)), _const(p + "zero", np.array(0.0, np.float32))]
    nodes = [node("ReduceSum", ["x", "axis"], "s", keepdims=0), node(comparison, ["s", "zero"], "cmp")]
    mask = "cmp"
    if negated:
        nodes.append(node("Not", ["cmp"], "neg"))
        mask = "neg"
    nodes += [node("Cast", [mask], "m", to=TensorProto.FLOAT), node("Relu", ["s"], "r"), node("Mul", ["r", "m"], "y")]
    return nodes, inits, [_vi(p + "x", [1, 64, 16])], [_vi(p + "y", [1, 64])]


CASES.append(Case("not_equal_pack", "fresh7: Not of an Equal of a float sum, Cast to float (Pix2Struct's patch mask) through onnx2tf",
                  lambda: _packed(_not_equal_case, NOT_EQUAL_PACK, 918, opset=17), ("imx93",)))


# ---- fresh7 (Pix2Struct's score clamp, FRN's TLU) on ESP32-S3: an element-wise Max through esp-ppq ---------------
# A 1x1 Conv [1, 8, 8, 8] -> [1, 16, 8, 8], then Max with: "lowest" the scalar -3.4e38 (Pix2Struct's
# max(scores, finfo.min)), "zeros" a [1, 16, 1, 1] of zeros (FRN's TLU tau at its initial value), "tau" a drawn
# [1, 16, 1, 1], "computed" a Sigmoid of the same map; then a 1x1 Conv to 8 channels.
ELEMENTWISE_MAX_FORMS = ("lowest", "zeros", "tau", "computed")


def elementwise_max(other: str) -> onnx.ModelProto:
    rng = np.random.default_rng(919)
    inits = [_const("w_in", _weights(rng, 16, 8, 1, 1)), _const("w_out", _weights(rng, 8, 16, 1, 1))]
    nodes = [helper.make_node("Conv", ["x", "w_in"], ["m"], name="conv_in")]
    if other == "computed":
        nodes.append(helper.make_node("Sigmoid", ["m"], ["o"], name="gate"))
    else:
        value = {"lowest": np.array(-3.4028235e38, np.float32), "zeros": np.zeros((1, 16, 1, 1), np.float32),
                 "tau": _weights(rng, 1, 16, 1, 1)}[other]
        inits.append(_const("o", value))
    nodes += [helper.make_node("Max", ["m", "o"], ["mx"], name="max"), helper.make_node("Conv", ["mx", "w_out"], ["y"], name="conv_out")]
    return _model(nodes, [_vi("x", [1, 8, 8, 8])], [_vi("y", [1, 8, 8, 8])], inits, opset=13)


CASES += [Case(f"elementwise_max_{o}", "fresh7: an element-wise Max (Pix2Struct's score clamp, FRN's TLU) through esp-ppq",
               lambda o=o: elementwise_max(o), ("esp32s3",)) for o in ELEMENTWISE_MAX_FORMS]


# ---- h14-rk66r: DeepFilterNet3's grouped Linear (Reshape [1, T, G*I] -> [1, T, G, I], Einsum btgi,gih->btgh) -------
# fresh7 pypi_deepfilternet3_enc: the Reshape into the Einsum on RK3566's CPU (RK3588: NPU) when it reads a sum;
# pypi_deepfilternet3_erb_dec: the same Reshape of a model input on the NPU. This pack varies what the view reads.
GROUPED_LINEAR_SOURCES = ("input", "sum_inputs", "sum_linear", "sum_swapped", "relu", "linear", "scale", "sum_const")


def _grouped_linear_case(rng, spec) -> tuple[list, list, list, list]:
    """One entry (source, T): source [1, T, 512] -> Reshape [1, T, 16, 32] -> Einsum with [16, 32, 32] -> Reshape [1, T, 512] -> Relu."""
    source, t = spec
    p = f"gl_{source}_{t}_"
    node = _prefixed(p)
    inits = [_const(p + "groups", np.array([1, t, 16, 32], np.int64)), _const(p + "flat", np.array([1, t, 512], np.int64)),
             _const(p + "wg", _weights(rng, 16, 32, 32)), _const(p + "wl", _weights(rng, 512, 512))]
    inputs = [_vi(p + "x", [1, t, 512])]
    nodes = []
    src = "x"
    if source in ("relu", "linear", "scale", "sum_const"):  # one computed tensor of the one input
        inits.append(_const(p + "c", _weights(rng, 512)))
        op, ins = {"relu": ("Relu", ["x"]), "linear": ("MatMul", ["x", "wl"]), "scale": ("Mul", ["x", "c"]), "sum_const": ("Add", ["x", "c"])}[source]
        nodes.append(node(op, ins, "sum"))
        src = "sum"
    elif source != "input":
        inputs.append(_vi(p + "x2", [1, 8, t, 64] if source == "sum_swapped" else [1, t, 512]))
        other = "x2"
        if source == "sum_linear":
            nodes += [node("MatMul", ["x2", "wl"], "lin"), node("Relu", ["lin"], "act")]
            other = "act"
        elif source == "sum_swapped":  # DeepFilterNet3's /Transpose_1, /Reshape_1: [1, 8, T, 64] -> [1, T, 8, 64] -> [1, T, 512]
            nodes += [node("Transpose", ["x2"], "sw", perm=[0, 2, 1, 3]), node("Reshape", ["sw", "flat"], "swr")]
            other = "swr"
        nodes.append(node("Add", ["x", other], "sum"))
        src = "sum"
    nodes += [node("Reshape", [src, "groups"], "v"), node("Einsum", ["v", "wg"], "e", equation="btgi,gih->btgh"),
              node("Reshape", ["e", "flat"], "back"), node("Relu", ["back"], "y")]
    return nodes, inits, inputs, [_vi(p + "y", [1, t, 512])]


# Measured in the pack's runs (2026-12-05), not held: "sum_swapped", a sum of [1, 8, T, 64] swapped [0, 2, 1, 3] and merged
# into [1, T, 512] (DeepFilterNet3's /Transpose_1, /Reshape_1): on RK3566 the swap, its merge and the grouped view on the
# CPU; the audit has the merge on the NPU (a view after a CPU Transpose; docs/audit.md). RK3588: all on the NPU.
GROUPED_LINEAR_PACK = tuple((s, t) for s in GROUPED_LINEAR_SOURCES if s != "sum_swapped" for t in (50, 64))
CASES.append(Case("grouped_linear_pack", "fresh7: DeepFilterNet3's grouped Linear, by what its Reshape reads",
                  lambda: _packed(_grouped_linear_case, GROUPED_LINEAR_PACK, 1418, used_only=True, opset=13), ("rk3566", "rk3588")))


# ---- The query's heads read by its product and by a relative-position product (h14-rk66t) -------------------------
# (name, T, H, second): q, k, v three biased Linears of x [1, T, H*32], each split into heads (Reshape [1, T, H, 32],
# Transpose [0, 2, 1, 3]; k's [0, 2, 3, 1]), scores q @ k^T / sqrt(32), Softmax, attn @ v, merged, a Linear. second:
# what else reads q's heads: "none", "einsum" wav2vec2-BERT's Einsum bhld,lrd->bhlr with a constant [T, T, 32] (its
# distance embedding) added to the scores, "matmul" q @ a constant [32, T] added to the scores, "relu" a Relu of q
# added to the output through a mean.
QUERY_READ_TWICE_PACK = (
    ("t64_h2_none", 64, 2, "none"), ("t64_h2_einsum", 64, 2, "einsum"), ("t16_h2_einsum", 16, 2, "einsum"),
    ("t64_h4_einsum", 64, 4, "einsum"), ("t64_h2_matmul", 64, 2, "matmul"), ("t20_h2_einsum", 20, 2, "einsum"),
)  # fmt: skip


def _query_read_twice_case(rng, spec) -> tuple[list, list, list, list]:
    name, t, heads, second = spec
    p = f"qrt_{name}_"
    node = _prefixed(p)
    d, c = 32, heads * 32
    inits = [_const(p + "heads", np.array([1, t, heads, d], np.int64)), _const(p + "tok", np.array([1, t, c], np.int64)),
             _const(p + "sqrt", np.float32(np.sqrt(d))), _const(p + "wo", _weights(rng, c, c)),
             _const(p + "pos", _weights(rng, t, t, d)), _const(p + "posm", _weights(rng, d, t))]
    nodes = []
    for part, perm in (("q", [0, 2, 1, 3]), ("k", [0, 2, 3, 1]), ("v", [0, 2, 1, 3])):
        inits += [_const(p + "w" + part, _weights(rng, c, c)), _const(p + "b" + part, _weights(rng, c))]
        nodes += [node("MatMul", ["x", "w" + part], part + "mm"), node("Add", [part + "mm", "b" + part], part + "lin"),
                  node("Reshape", [part + "lin", "heads"], part + "h"), node("Transpose", [part + "h"], part, perm=perm)]
    nodes += [node("MatMul", ["q", "k"], "qk"), node("Div", ["qk", "sqrt"], "s0")]
    if second == "einsum":
        nodes += [node("Einsum", ["q", "pos"], "rel", equation="bhld,lrd->bhlr"), node("Div", ["rel", "sqrt"], "rels"), node("Add", ["s0", "rels"], "s")]
    elif second == "matmul":
        nodes += [node("MatMul", ["q", "posm"], "rel"), node("Add", ["s0", "rel"], "s")]
    else:
        nodes += [node("Identity", ["s0"], "s")]
    nodes += [node("Softmax", ["s"], "attn", axis=-1), node("MatMul", ["attn", "v"], "ctx"), node("Transpose", ["ctx"], "merge", perm=[0, 2, 1, 3]),
              node("Reshape", ["merge", "tok"], "view"), node("MatMul", ["view", "wo"], "y")]
    return nodes, inits, [_vi(p + "x", [1, t, c])], [_vi(p + "y", [1, t, c])]


CASES.append(Case("query_read_twice_pack", "fresh7: attention's query heads read by the scores and by a relative-position product (wav2vec2-BERT)",
                  lambda: _packed(_query_read_twice_case, QUERY_READ_TWICE_PACK, 1406, used_only=True, opset=17), ("rk3566", "rk3588")))


# ---- MaxViT's q/k/v: heads split before the parts, cut by Slices (h14-rk66t) ---------------------------------------
# (name, B, h, w, H, tail): x [B, h*w, H*32], one Linear, Reshape [B, N, H, 96], Transpose [0, 2, 1, 3], three Slices of
# the last axis (q, k, v), q @ k^T scaled, Softmax, attn @ v, the merge Transpose [0, 2, 1, 3], then "map" Reshape
# [B, h, w, H*32] or "tokens" Reshape [B, N, H*32], and a Linear (timm's MaxViT AttentionCl).
SLICED_QKV_PACK = (
    ("b1_n4_h16_map", 1, 2, 2, 16, "map"), ("b1_n4_h16_tok", 1, 2, 2, 16, "tokens"), ("b1_n16_h2_map", 1, 4, 4, 2, "map"),
    ("b1_n16_h2_tok", 1, 4, 4, 2, "tokens"),
)  # fmt: skip
# Measured with the pack and this entry too (RK3566 and RK3588, 2026-12-05), not held: 4 windows of 2x2, 8 heads, viewed
# into windows: the merge and its view on the CPU (as the audit has it), and also the heads' Reshape and Transpose before
# the Slices (the audit: NPU; not modelled). One window (above): every Transpose merged, so MaxViT's last-stage merge and
# heads' Transpose on RK3566's CPU are not reproduced (docs/audit.md). RK3588: every node on the NPU.
SLICED_QKV_MEASURED = (("b4_n4_h8_map", 4, 2, 2, 8, "map"),)


def _sliced_qkv_case(rng, spec) -> tuple[list, list, list, list]:
    name, b, h, w, heads, tail = spec
    p = f"sqkv_{name}_"
    node = _prefixed(p)
    n, d = h * w, 32
    c = heads * d
    inits = [_const(p + "wqkv", _weights(rng, c, 3 * c)), _const(p + "bqkv", _weights(rng, 3 * c)), _const(p + "heads", np.array([b, n, heads, 3 * d], np.int64)),
             _const(p + "axis", np.array([3], np.int64)), _const(p + "scale", np.float32(d ** -0.5)), _const(p + "wo", _weights(rng, c, c)),
             _const(p + "view", np.array([b, h, w, c] if tail == "map" else [b, n, c], np.int64))]
    for i, part in enumerate("qkv"):
        inits += [_const(p + part + "0", np.array([i * d], np.int64)), _const(p + part + "1", np.array([(i + 1) * d], np.int64))]
    nodes = [node("MatMul", ["x", "wqkv"], "mm"), node("Add", ["mm", "bqkv"], "lin"), node("Reshape", ["lin", "heads"], "hd"),
             node("Transpose", ["hd"], "ht", perm=[0, 2, 1, 3])]
    nodes += [node("Slice", ["ht", part + "0", part + "1", "axis"], part) for part in "qkv"]
    nodes += [node("Mul", ["q", "scale"], "qs"), node("Transpose", ["k"], "kt", perm=[0, 1, 3, 2]), node("MatMul", ["qs", "kt"], "scores"),
              node("Softmax", ["scores"], "attn", axis=-1), node("MatMul", ["attn", "v"], "ctx"), node("Transpose", ["ctx"], "merge", perm=[0, 2, 1, 3]),
              node("Reshape", ["merge", "view"], "out_view"), node("MatMul", ["out_view", "wo"], "y")]
    return nodes, inits, [_vi(p + "x", [b, n, c])], [_vi(p + "y", [b, h, w, c] if tail == "map" else [b, n, c])]


CASES.append(Case("sliced_qkv_pack", "fresh2: MaxViT's q/k/v cut by Slices after the heads' Transpose, merged into a window or tokens",
                  lambda: _packed(_sliced_qkv_case, SLICED_QKV_PACK, 1407, used_only=True, opset=17), ("rk3566", "rk3588")))


# ---- h14-rk66r: a lone view between a model input and a model output, by the ranks it goes between ---------------
# gen_cases.py's single-view cases (tests/fixtures/pool/case_verdicts.json): on RK3566 every Reshape, Squeeze, Unsqueeze
# or Flatten whose one side is 4-D and the other not ran on the CPU (59 of 59), the others on the NPU but for three
# 4-D Reshapes that move data between the channels and the rows. This pack varies the ranks alone.
LONE_VIEWS = (  # name, op, input shape, output shape
    ("r2to3", "Reshape", [1, 256], [1, 16, 16]), ("r3to2", "Reshape", [1, 16, 16], [1, 256]),
    ("r3to4", "Reshape", [1, 16, 64], [1, 16, 8, 8]), ("r4to3", "Reshape", [1, 16, 8, 8], [1, 16, 64]),
    ("r4to5", "Reshape", [1, 16, 8, 8], [1, 4, 4, 8, 8]), ("r5to4", "Reshape", [1, 4, 4, 8, 8], [1, 16, 8, 8]),
    ("r4to2", "Reshape", [1, 16, 8, 8], [1, 1024]), ("r2to4", "Reshape", [1, 1024], [1, 16, 8, 8]),
    ("r5to3", "Reshape", [1, 4, 4, 8, 8], [1, 16, 64]), ("r3to5", "Reshape", [1, 16, 64], [1, 4, 4, 8, 8]),
    ("r4to4", "Reshape", [1, 16, 8, 8], [1, 16, 4, 16]), ("r3to3", "Reshape", [1, 16, 64], [1, 64, 16]),
    ("sq5to4", "Squeeze", [1, 1, 16, 8, 8], [1, 16, 8, 8]), ("sq4to3", "Squeeze", [1, 1, 16, 64], [1, 16, 64]),
    ("us3to4", "Unsqueeze", [1, 16, 64], [1, 1, 16, 64]), ("us2to3", "Unsqueeze", [1, 256], [1, 1, 256]),
    ("fl4to2", "Flatten", [1, 16, 8, 8], [1, 1024]), ("fl3to2", "Flatten", [1, 16, 64], [1, 1024]),
)


def _lone_view_case(rng, spec) -> tuple[list, list, list, list]:
    name, op, shape_in, shape_out = spec
    p = f"lv_{name}_"
    node = _prefixed(p)
    inits = [_const(p + "shape", np.array(shape_out, np.int64)), _const(p + "axes", np.array([1], np.int64))]
    if op == "Reshape":
        nodes = [node("Reshape", ["x", "shape"], "y")]
    elif op in ("Squeeze", "Unsqueeze"):
        nodes = [node(op, ["x", "axes"], "y")]
    else:
        nodes = [node("Flatten", ["x"], "y", axis=1)]
    return nodes, inits, [_vi(p + "x", shape_in)], [_vi(p + "y", shape_out)]


CASES.append(Case("lone_view_pack", "gen_cases: a lone view between a model input and output, by its ranks",
                  lambda: _packed(_lone_view_case, LONE_VIEWS, 1419, used_only=True, opset=13), ("rk3566", "rk3588")))


def near_zero_scale(variant: str) -> onnx.ModelProto:
    """Relu, then a product by constants all within 1e-8 of zero, as I-BERT's integer-only
    LayerNorm multiplies its integers by 2**-27 (HF IBertModel in quant_mode): "mul": a Mul by 2**-27
    per channel, the model's only output; "mul_above": one channel's scale 2e-8; "mul_two_outputs":
    the Relu's result is a second output; "matmul": a MatMul by weights of 1e-9."""
    x, w = _vi("x", [1, 32, 64]), np.full((64,), 2.0**-27, np.float32)
    if variant == "mul_above":
        w[37] = 2e-8
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu")]
    if variant == "matmul":
        nodes.append(helper.make_node("MatMul", ["r", "w"], ["y"], name="scale"))
        return _model(nodes, [x], [_vi("y", [1, 32, 16])], [_const("w", np.full((64, 16), 1e-9, np.float32))])
    nodes.append(helper.make_node("Mul", ["r", "w"], ["y"], name="scale"))
    outputs = [_vi("y", [1, 32, 64])] + ([_vi("r", [1, 32, 64])] if variant == "mul_two_outputs" else [])
    return _model(nodes, [x], outputs, [_const("w", w)])


CASES += [Case(f"near_zero_scale_{v}", "pool: a product by constants within 1e-8 of zero (I-BERT's quant_mode)", lambda v=v: near_zero_scale(v), ("rk3588", "rk3566"))
          for v in ("mul", "mul_above", "mul_two_outputs", "matmul")]


def transpose_into_output_softmax(variant: str) -> onnx.ModelProto:
    """MTCNN's P-Net head as tf2onnx writes it: Conv, Relu, 1x1 Conv, Transpose to NHWC [0, 2, 3, 1] and
    a Softmax over the last axis (the classes); "output": the Softmax is the model output; "inner":
    a Mul by a constant reads it; "two": a second Transpose of a sibling 1x1 Conv is an output too."""
    rng = np.random.default_rng(8)
    inits = [_const("w1", _weights(rng, 10, 3, 3, 3)), _const("b1", np.zeros(10, np.float32)),
             _const("w2", _weights(rng, 2, 10, 1, 1)), _const("b2", np.zeros(2, np.float32))]
    n = [helper.make_node("Conv", ["x", "w1", "b1"], ["c"], name="conv"), helper.make_node("Relu", ["c"], ["r"], name="relu"),
         helper.make_node("Conv", ["r", "w2", "b2"], ["logits"], name="head"),
         helper.make_node("Transpose", ["logits"], ["t"], name="to_nhwc", perm=[0, 2, 3, 1]),
         helper.make_node("Softmax", ["t"], ["p"], name="softmax", axis=3)]
    outputs = [_vi("p", [1, 14, 14, 2])]
    if variant == "inner":
        inits.append(_const("k", np.full((1,), 2.0, np.float32)))
        n.append(helper.make_node("Mul", ["p", "k"], ["y"], name="scale"))
        outputs = [_vi("y", [1, 14, 14, 2])]
    if variant == "two":
        inits += [_const("w3", _weights(rng, 4, 10, 1, 1)), _const("b3", np.zeros(4, np.float32))]
        n += [helper.make_node("Conv", ["r", "w3", "b3"], ["box"], name="box"),
              helper.make_node("Transpose", ["box"], ["bt"], name="box_nhwc", perm=[0, 2, 3, 1])]
        outputs.append(_vi("bt", [1, 14, 14, 4]))
    return _model(n, [_vi("x", [1, 3, 16, 16])], outputs, inits)


CASES += [Case(f"transpose_into_output_softmax_{v}", "pool: a Transpose to NHWC before a class Softmax (MTCNN P-Net, tf2onnx)", lambda v=v: transpose_into_output_softmax(v), ("rk3588", "rk3566"))
          for v in ("output", "inner", "two")]


# ---- FSMN's memory block: tokens unsqueezed and swapped into a depthwise Conv over time (h16-rk66t) ---------------
# (name, T, C, source, memory, residual, tail, spelling): FunASR's FSMN VAD (fresh8 pypi_fsmn_vad) as exported: tokens
# x [1, T, C] made by `source` from the model input ("input": the input itself; "linear": a Linear's MatMul of it, no
# bias; "bias": with a bias; "relu": a Relu of the Linear; "relu_linear": a Linear of a Relu of the input, the model's
# order; "linear2": a Linear of a Linear), spelling "4d": Unsqueeze at 1, Transpose [0, 3, 2, 1] to [1, C, T, 1] (the
# export's), "3d": Transpose [0, 2, 1] to [1, C, T] and 1-D Convs; then "cache": a Concat along T with a model input
# cache of K-1 steps (its Slice of the last K-1 steps the second model output) or "pad": the Conv pads K-1 steps in
# front; a depthwise Conv of kernel K = 20 over T; "residual": the swapped tokens Added to the Conv's result; the swap
# back (4d: Transpose [0, 3, 2, 1] and Squeeze at 1; 3d: Transpose [0, 2, 1]), then tail "linear" (a Linear, the
# output) or "out" (the swapped-back tokens the output).
FSMN_MEMORY_PACK = (
    ("model", 100, 128, "linear", "cache", True, "linear", "4d"), ("pad", 100, 128, "linear", "pad", True, "linear", "4d"),
    ("nores", 100, 128, "linear", "cache", False, "linear", "4d"), ("input", 100, 128, "input", "cache", True, "linear", "4d"),
    ("relu", 100, 128, "relu", "cache", True, "linear", "4d"), ("out", 100, 128, "linear", "cache", True, "out", "4d"),
    ("t49c24", 49, 24, "linear", "cache", True, "linear", "4d"), ("t64c64", 64, 64, "linear", "cache", True, "linear", "4d"),
    ("rl", 100, 128, "relu_linear", "cache", True, "linear", "4d"), ("bias", 100, 128, "bias", "cache", True, "linear", "4d"),
    ("l2", 100, 128, "linear2", "cache", True, "linear", "4d"), ("rl_pad", 100, 128, "relu_linear", "pad", True, "linear", "4d"),
    ("d3_lin", 100, 128, "linear", "cache", True, "linear", "3d"), ("d3_rl", 100, 128, "relu_linear", "cache", True, "linear", "3d"),
    ("d3_in", 100, 128, "input", "cache", True, "linear", "3d"),
    ("lrl", 100, 128, "linear_relu_linear", "cache", True, "linear", "4d"), ("lrl_t49", 49, 24, "linear_relu_linear", "cache", True, "linear", "4d"),
    ("sig", 100, 128, "sigmoid", "cache", True, "linear", "4d"),
    ("l2_t16", 16, 32, "linear2", "pad", False, "linear", "4d"), ("addin", 100, 128, "sum_linear", "cache", True, "linear", "4d"),
    ("lsl", 100, 128, "linear_sigmoid_linear", "cache", True, "linear", "4d"),
)  # fmt: skip
# Measured with the pack (RK3566 and RK3588, 2026-12-05), not held: 16 tokens of 32 from a model input's Linear, the
# Conv's padding, no residual: the swap is a Transpose layer on RK3566's NPU (the audit: CPU, as at 100 and 49 tokens);
# the "3d" form with the relu source: the swap into the cache Concat has no layer (bypass_two_reshape), the audit has it
# on the CPU (tokens_moved_into_a_conv1d and conv1d_result_swapped_into_tokens take only Conv readers). RK3588: NPU.
# The "relu_input" source (a Relu of the model input unsqueezed and swapped): the swap on the CPU (as the audit has it),
# and the Unsqueeze too (the audit: NPU). The "norm_linear" source (a LayerNorm of the [1, 100, 64] model input, epsilon
# set): the swap on the CPU (as the audit has it), the LayerNorm on the CPU of both chips (the audit: NPU).
FSMN_MEMORY_MEASURED = (("ln", 100, 128, "norm_linear", "cache", True, "linear", "4d"), ("lin_t16", 16, 32, "linear", "pad", False, "linear", "4d"), ("d3_relu", 100, 128, "relu", "cache", True, "linear", "3d"),
                        ("relu_in", 100, 128, "relu_input", "cache", True, "linear", "4d"))


def _fsmn_source(node, source: str) -> tuple[list, str]:
    """The nodes that make FSMN_MEMORY_PACK's tokens from the input x, and the tokens' name."""
    chain = {"input": [], "linear": [("MatMul", ["x", "w_in"], "tok")], "bias": [("MatMul", ["x", "w_in"], "mm"), ("Add", ["mm", "b_in"], "tok")],
             "relu": [("MatMul", ["x", "w_in"], "mm"), ("Relu", ["mm"], "tok")], "relu_linear": [("Relu", ["x"], "xr"), ("MatMul", ["xr", "w_in"], "tok")],
             "linear2": [("MatMul", ["x", "w_pre"], "pre"), ("MatMul", ["pre", "w_in"], "tok")],
             "linear_relu_linear": [("MatMul", ["x", "w_pre"], "pre"), ("Add", ["pre", "b_pre"], "preb"), ("Relu", ["preb"], "prer"), ("MatMul", ["prer", "w_in"], "tok")],
             "relu_input": [("Relu", ["x"], "tok")], "norm_linear": [("LayerNormalization", ["x", "g", "b_pre"], "xn", {"epsilon": 1e-5}), ("MatMul", ["xn", "w_in"], "tok")],
             "sum_linear": [("Add", ["x", "x2"], "xs"), ("MatMul", ["xs", "w_in"], "tok")],
             "linear_norm_linear": [("MatMul", ["x", "w_pre"], "pre"), ("LayerNormalization", ["pre", "g", "b_pre"], "xn", {"epsilon": 1e-5}), ("MatMul", ["xn", "w_in"], "tok")],
             "norm_ax_linear": [("LayerNormalization", ["x", "g", "b_pre"], "xn", {"axis": -1, "epsilon": 1e-5}), ("MatMul", ["xn", "w_in"], "tok")],
             "linear_norm_ax_linear": [("MatMul", ["x", "w_pre"], "pre"), ("LayerNormalization", ["pre", "g", "b_pre"], "xn", {"axis": -1, "epsilon": 1e-5}), ("MatMul", ["xn", "w_in"], "tok")],
             "linear_sigmoid_linear": [("MatMul", ["x", "w_pre"], "pre"), ("Sigmoid", ["pre"], "pres"), ("MatMul", ["pres", "w_in"], "tok")], "sigmoid": [("MatMul", ["x", "w_in"], "mm"), ("Sigmoid", ["mm"], "tok")]}[source]
    return [node(op, ins, out, **(attrs[0] if attrs else {})) for op, ins, out, *attrs in chain], "x" if source == "input" else "tok"


def _fsmn_memory_case(rng, spec) -> tuple[list, list, list, list]:
    name, t, c, source, memory, residual, tail, spelling = spec
    p, k, d4 = f"fsmn_{name}_", 20, spelling == "4d"
    node = _prefixed(p)
    width = c if source in ("input", "relu_input") else 64
    inits = [_const(p + "w_in", _weights(rng, 64, c)), _const(p + "b_in", _weights(rng, c)), _const(p + "w_pre", _weights(rng, 64, 64)), _const(p + "b_pre", _weights(rng, 64)), _const(p + "g", np.ones(64, np.float32)),
             _const(p + "ax1", np.array([1], np.int64)), _const(p + "w_mem", _weights(rng, c, 1, k, 1) if d4 else _weights(rng, c, 1, k)),
             _const(p + "w_out", _weights(rng, c, 64)), _const(p + "s0", np.array([-(k - 1)], np.int64)),
             _const(p + "s1", np.array([2**62], np.int64)), _const(p + "ax2", np.array([2], np.int64))]
    hist_shape = [1, c, k - 1, 1] if d4 else [1, c, k - 1]
    inputs, outputs = [_vi(p + "x", [1, t, width])] + ([_vi(p + "x2", [1, t, width])] if source == "sum_linear" else []), []
    nodes, tok = _fsmn_source(node, source)
    if d4:
        nodes += [node("Unsqueeze", [tok, "ax1"], "tok4"), node("Transpose", ["tok4"], "swap", perm=[0, 3, 2, 1])]
    else:
        nodes.append(node("Transpose", [tok], "swap", perm=[0, 2, 1]))
    kernel = [k, 1] if d4 else [k]
    if memory == "cache":
        inputs.append(_vi(p + "cache", hist_shape))
        outputs.append(_vi(p + "cache_out", hist_shape))
        nodes += [node("Concat", ["cache", "swap"], "hist", axis=2), node("Slice", ["hist", "s0", "s1", "ax2"], "cache_out"),
                  node("Conv", ["hist", "w_mem"], "mem", group=c, kernel_shape=kernel, pads=[0] * (2 * len(kernel)))]
    else:
        nodes.append(node("Conv", ["swap", "w_mem"], "mem", group=c, kernel_shape=kernel, pads=[k - 1] + [0] * (2 * len(kernel) - 1)))
    if residual:
        nodes.append(node("Add", ["swap", "mem"], "sum"))
    last = "sum" if residual else "mem"
    if d4:
        nodes += [node("Transpose", [last], "back", perm=[0, 3, 2, 1]), node("Squeeze", ["back", "ax1"], "seq")]
    else:
        nodes.append(node("Transpose", [last], "seq", perm=[0, 2, 1]))
    if tail == "linear":
        nodes.append(node("MatMul", ["seq", "w_out"], "y"))
        outputs.insert(0, _vi(p + "y", [1, t, 64]))
    else:
        outputs.insert(0, _vi(p + "seq", [1, t, c]))
    return nodes, inits, inputs, outputs


CASES.append(Case("fsmn_memory_pack", "fresh8: FSMN's memory block, tokens unsqueezed and swapped [0, 3, 2, 1] into a depthwise Conv over time and back",
                  lambda: _packed(_fsmn_memory_case, FSMN_MEMORY_PACK, 1601, used_only=True, opset=17), ("rk3566", "rk3588")))


# ---- GPT-NeoX's joint q/k/v: heads split before the parts, cut by Slices, partly rotated (h16-rk66t) ---------------
# (name, T, H, R, shape, B, extra): x [B, T, H*32] a model input, one biased Linear to 3*H*32, Reshape [B, T, H, 96],
# Transpose [0, 2, 1, 3], three Slices of the last axis (q, k, v: 32 values each); q and k rotated by halves on their
# first R values (x * cos + Concat(-x2, x1) * sin; R = 0: not rotated), the other 32 - R Concatenated back; k swapped
# [0, 1, 3, 2], the scores scaled, Softmax, attn @ v, the merge [0, 2, 1, 3], Reshape [B, T, H*32], a Linear.
# shape: "const" Slices of constant bounds; "shape": the bounds computed from the Transpose's Shape (GPT-NeoX's export).
# extra: "" nothing more; "map": x a channels-last map [B, 2, T/2, H*32] (MaxViT's windows), viewed as [B, T, H, 96];
# "scaled": q and the swapped k each multiplied by a scalar, the scores plus a constant bias [H, T, T] (MaxViT's).
NEOX_QKV_PACK = (
    ("t32_h2_r8", 32, 2, 8, "const", 1, ""), ("t32_h2_r0", 32, 2, 0, "const", 1, ""),
    ("t32_h2_r8_shape", 32, 2, 8, "shape", 1, ""), ("t16_h4_r8", 16, 4, 8, "const", 1, ""), ("t9_h2_r8", 9, 2, 8, "const", 1, ""),
    ("t32_h2_r0_shape", 32, 2, 0, "shape", 1, ""), ("b4_t4_r0_shape", 4, 2, 0, "shape", 4, ""), ("b1_t4_r0_shape", 4, 2, 0, "shape", 1, ""),
    ("t4_map_shape", 4, 2, 0, "shape", 1, "map"), ("t16_map_shape", 16, 2, 0, "shape", 1, "map"), ("t4_scaled_shape", 4, 2, 0, "shape", 1, "scaled"),
    ("t16_scaled_shape", 16, 2, 0, "shape", 1, "scaled"), ("b4_t4_map_shape", 4, 2, 0, "shape", 4, "map"),
    ("t4_h16_map_scaled", 4, 16, 0, "shape", 1, "map_scaled"), ("t4_h16_scaled", 4, 16, 0, "shape", 1, "scaled"), ("t4_h16_map", 4, 16, 0, "shape", 1, "map"),
)  # fmt: skip


def _neox_bounds(node, p: str, shape: str) -> list:
    """The q/k/v Slices' bounds, constants or (shape) computed from the heads' Shape as GPT-NeoX's export does."""
    if shape == "const":
        return []
    return [node("Shape", ["ht"], "shp"), node("Gather", ["shp", "last0"], "width", axis=0), node("Div", ["width", "three"], "third"),
            node("Mul", ["third", "one"], "b1"), node("Mul", ["third", "two"], "b2"), node("Mul", ["third", "three"], "b3")]


def _neox_qkv_case(rng, spec) -> tuple[list, list, list, list]:
    name, t, heads, r, shape, b, extra = spec
    p, d = f"neox_{name}_", 32
    node = _prefixed(p)
    c = heads * d
    x_shape = [b, 2, t // 2, c] if extra.startswith("map") else [b, t, c]
    inits = [_const(p + "wqkv", _weights(rng, c, 3 * c)), _const(p + "bqkv", _weights(rng, 3 * c)), _const(p + "heads", np.array([b, t, heads, 3 * d], np.int64)),
             _const(p + "last", np.array([3], np.int64)), _const(p + "last0", np.array(3, np.int64)), _const(p + "scale", np.float32(d ** -0.5)),
             _const(p + "wo", _weights(rng, c, c)), _const(p + "view", np.array(x_shape, np.int64)), _const(p + "zero", np.array([0], np.int64)),
             _const(p + "one", np.array([1], np.int64)), _const(p + "two", np.array([2], np.int64)), _const(p + "three", np.array([3], np.int64)),
             _const(p + "big", np.array([2**62], np.int64)), _const(p + "rot", np.array([r], np.int64)), _const(p + "half", np.array([r // 2], np.int64)),
             _const(p + "cos", _weights(rng, 1, 1, t, max(r, 1))), _const(p + "sin", _weights(rng, 1, 1, t, max(r, 1))),
             _const(p + "d0", np.array([0], np.int64)), _const(p + "d1", np.array([d], np.int64)), _const(p + "d2", np.array([2 * d], np.int64)),
             _const(p + "d3", np.array([3 * d], np.int64)), _const(p + "root", np.float32(d ** -0.25)), _const(p + "bias", _weights(rng, heads, t, t))]
    nodes = [node("MatMul", ["x", "wqkv"], "mm"), node("Add", ["mm", "bqkv"], "lin"), node("Reshape", ["lin", "heads"], "hd"),
             node("Transpose", ["hd"], "ht", perm=[0, 2, 1, 3])]
    nodes += _neox_bounds(node, p, shape)
    bounds = ("d0", "d1", "d2", "d3") if shape == "const" else ("zero", "b1", "b2", "b3")
    for i, part in enumerate("qkv"):
        nodes.append(node("Slice", ["ht", bounds[i], bounds[i + 1], "last"], part))
    parts = {"q": "q", "k": "k"}
    if r:
        for part in "qk":
            nodes += [node("Slice", [part, "zero", "rot", "last"], f"{part}_a"), node("Slice", [part, "rot", "big", "last"], f"{part}_pass")]
            nodes += _rotated(node, f"{part}_a", part, "halves", r, heads, t)
            nodes.append(node("Concat", [f"{part}r", f"{part}_pass"], f"{part}_full", axis=-1))
            parts[part] = f"{part}_full"
    nodes.append(node("Transpose", [parts["k"]], "kt", perm=[0, 1, 3, 2]))
    if extra.endswith("scaled"):
        nodes += [node("Mul", [parts["q"], "root"], "qs"), node("Mul", ["kt", "root"], "kts"), node("MatMul", ["qs", "kts"], "s0"), node("Add", ["s0", "bias"], "scores")]
    else:
        nodes += [node("MatMul", [parts["q"], "kt"], "s0"), node("Mul", ["s0", "scale"], "scores")]
    nodes += [node("Softmax", ["scores"], "attn", axis=-1), node("MatMul", ["attn", "v"], "ctx"), node("Transpose", ["ctx"], "merge", perm=[0, 2, 1, 3]),
              node("Reshape", ["merge", "view"], "out_view"), node("MatMul", ["out_view", "wo"], "y")]
    return nodes, inits, [_vi(p + "x", x_shape)], [_vi(p + "y", x_shape)]


CASES.append(Case("neox_qkv_pack", "fresh8: GPT-NeoX's joint q/k/v, heads split and swapped before Slices cut the parts, q and k partly rotated",
                  lambda: _packed(_neox_qkv_case, NEOX_QKV_PACK, 1602, used_only=True, opset=17), ("rk3566", "rk3588")))


# ---- V-JEPA 2's video patch embedding: frames swapped with the colour axis into a Conv3d (h16-rk66t) ---------------
# (name, T, side, swap, cast, kt, tail): a video model input; swap True: [1, T, 3, side, side] Transposed [0, 2, 1, 3, 4]
# to [1, 3, T, side, side] (transformers' V-JEPA 2); "relu": a Relu of that input first; "time_last": [1, 3, side,
# side, T] Transposed [0, 1, 4, 2, 3]; False: the input is [1, 3, T, side, side] already; "cast": a Cast to
# float after it (the export's); a Conv3d of 32 channels, kernel and stride [kt, 16, 16]; its map [1, 32, T/kt, s, s]
# flattened by a Reshape [1, 32, N] and swapped [0, 2, 1] into tokens, then tail "norm": a LayerNorm and a Linear;
# "linear": a Linear; "relu_norm": a Relu of the Conv's map before the Reshape, then as "norm"; "out": the Reshape is
# the model output.
VIDEO_PATCH_PACK = (
    ("model", 8, 64, True, True, 2, "norm"), ("nocast", 8, 64, True, False, 2, "norm"), ("noswap", 8, 64, False, True, 2, "norm"),
    ("noswap_nocast", 8, 64, False, False, 2, "norm"), ("linear", 8, 64, True, True, 2, "linear"),
    ("relu_first", 8, 64, "relu", False, 2, "norm"), ("time_last", 8, 64, "time_last", False, 2, "norm"), ("relu_map", 8, 64, True, False, 2, "relu_norm"),
    ("out", 8, 64, True, False, 2, "out"),
)  # fmt: skip
# Measured with the pack (RK3566 and RK3588, 2026-12-05), not held: kernel and stride [1, 16, 16] over 4 frames of 32 x 32
# (a [1, 32, 4, 2, 2] map): RK3566 as the others (the swap and its Cast NPU, the flatten CPU); RK3588 runs the flatten
# on the CPU too (the audit: NPU; its other cases: NPU), not modelled.
VIDEO_PATCH_MEASURED = (("kt1", 4, 32, True, True, 1, "norm"),)


def _video_patch_case(rng, spec) -> tuple[list, list, list, list]:
    name, t, side, swap, cast, kt, tail = spec
    p, c = f"vpe_{name}_", 32
    node = _prefixed(p)
    n = (t // kt) * (side // 16) ** 2
    inits = [_const(p + "w", _weights(rng, c, 3, kt, 16, 16) * 0.1), _const(p + "b", _weights(rng, c)), _const(p + "flat", np.array([1, c, n], np.int64)),
             _const(p + "g", np.ones(c, np.float32)), _const(p + "beta", np.zeros(c, np.float32)), _const(p + "wl", _weights(rng, c, c))]
    nodes, last = [], "x"
    if swap == "relu":  # a Relu of the input, then the swap
        nodes += [node("Relu", ["x"], "xr"), node("Transpose", ["xr"], "swap", perm=[0, 2, 1, 3, 4])]
        last = "swap"
    elif swap == "time_last":  # the input [1, 3, side, side, T], its time axis brought before the rows
        nodes.append(node("Transpose", ["x"], "swap", perm=[0, 1, 4, 2, 3]))
        last = "swap"
    elif swap:
        nodes.append(node("Transpose", ["x"], "swap", perm=[0, 2, 1, 3, 4]))
        last = "swap"
    if cast:
        nodes.append(node("Cast", [last], "cast", to=TensorProto.FLOAT))
        last = "cast"
    nodes.append(node("Conv", [last, "w", "b"], "conv", kernel_shape=[kt, 16, 16], strides=[kt, 16, 16]))
    if tail == "relu_norm":
        nodes.append(node("Relu", ["conv"], "conv_r"))
    nodes += [node("Reshape", ["conv_r" if tail == "relu_norm" else "conv", "flat"], "tokens_cn")]
    if tail == "out":
        return nodes, inits, [_vi(p + "x", [1, t, 3, side, side])], [_vi(p + "tokens_cn", [1, c, n])]
    nodes.append(node("Transpose", ["tokens_cn"], "tokens", perm=[0, 2, 1]))
    if tail in ("norm", "relu_norm"):
        nodes += [node("LayerNormalization", ["tokens", "g", "beta"], "normed", axis=-1, epsilon=1e-6), node("MatMul", ["normed", "wl"], "y")]
    else:
        nodes.append(node("MatMul", ["tokens", "wl"], "y"))
    x_shape = {"time_last": [1, 3, side, side, t], False: [1, 3, t, side, side]}.get(swap, [1, t, 3, side, side])
    return nodes, inits, [_vi(p + "x", x_shape)], [_vi(p + "y", [1, n, c])]


CASES.append(Case("video_patch_pack", "fresh8: V-JEPA 2's video patch embedding, the frames swapped with the colour axis into a Conv3d",
                  lambda: _packed(_video_patch_case, VIDEO_PATCH_PACK, 1603, used_only=True, opset=17), ("rk3566", "rk3588")))


# ---- A Shape of a swapped tensor giving the sizes of the view after it (h16-rk66t) --------------------------------
# (name, form, shape): form "tokens_to_map": CLIPSeg's decoder, tokens [1, 1+N, 32] of a Linear (x [1, 1+N, 16]), the
# first token Sliced off, Transpose [0, 2, 1], Reshape [1, 32, h, w], a ConvTranspose of kernel and stride 4 to one
# channel, Squeeze to the output [1, 4h, 4w]; "map_to_tokens": Perceiver's input, a Conv and a MaxPool of an image
# [1, 3, 32, 32] to [1, 32, 8, 8], Transpose [0, 2, 3, 1], Reshape [1, 64, 32], a Linear. shape: the view's target
# computed from the Transpose's Shape (Shape, Gather of the batch, Unsqueeze, Concat with the constant rest) as
# transformers' exports write it; else a constant.
SHAPE_READER_PACK = (
    ("t2m_const", "tokens_to_map", False), ("t2m_shape", "tokens_to_map", True),
    ("m2t_const", "map_to_tokens", False), ("m2t_shape", "map_to_tokens", True),
)  # fmt: skip


def _shape_reader_case(rng, spec) -> tuple[list, list, list, list]:
    name, form, shape = spec
    p = f"shr_{name}_"
    node = _prefixed(p)
    rest = [32, 4, 4] if form == "tokens_to_map" else [64, 32]
    inits = [_const(p + "rest", np.array(rest, np.int64)), _const(p + "full", np.array([1, *rest], np.int64)), _const(p + "zero", np.array(0, np.int64)),
             _const(p + "ax0", np.array([0], np.int64)), _const(p + "one", np.array([1], np.int64)), _const(p + "big", np.array([2**62], np.int64)),
             _const(p + "w_in", _weights(rng, 16, 32)), _const(p + "w_up", _weights(rng, 32, 1, 4, 4)), _const(p + "w_conv", _weights(rng, 32, 3, 3, 3)),
             _const(p + "w_out", _weights(rng, 32, 32))]
    if form == "tokens_to_map":
        nodes = [node("MatMul", ["x", "w_in"], "tok"), node("Slice", ["tok", "one", "big", "one"], "patches"), node("Transpose", ["patches"], "swap", perm=[0, 2, 1])]
        x = _vi(p + "x", [1, 17, 16])
    else:
        nodes = [node("Conv", ["x", "w_conv"], "conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1]), node("MaxPool", ["conv"], "pool", kernel_shape=[4, 4], strides=[4, 4]),
                 node("Transpose", ["pool"], "swap", perm=[0, 2, 3, 1])]
        x = _vi(p + "x", [1, 3, 32, 32])
    target = "full"
    if shape:
        nodes += [node("Shape", ["swap"], "shp"), node("Gather", ["shp", "zero"], "batch", axis=0), node("Unsqueeze", ["batch", "ax0"], "batch1"),
                  node("Concat", ["batch1", "rest"], "target", axis=0)]
        target = "target"
    nodes.append(node("Reshape", ["swap", target], "view"))
    if form == "tokens_to_map":
        nodes += [node("ConvTranspose", ["view", "w_up"], "up", kernel_shape=[4, 4], strides=[4, 4]), node("Squeeze", ["up", "one"], "y")]
        return nodes, inits, [x], [_vi(p + "y", [1, 16, 16])]
    nodes.append(node("MatMul", ["view", "w_out"], "y"))
    return nodes, inits, [x], [_vi(p + "y", [1, 64, 32])]


CASES.append(Case("shape_reader_pack", "fresh7: a Shape of a swapped tensor giving the view after it its sizes (CLIPSeg's decoder, Perceiver's input)",
                  lambda: _packed(_shape_reader_case, SHAPE_READER_PACK, 1604, used_only=True, opset=17), ("rk3566", "rk3588")))


# ---- Speech2Text's subsampler: a Conv1d's GLU swapped into tokens (h16-rk66t) -------------------------------------
# (name, glu, tail): x [1, 32, 50] (channels first) through a Conv1d of kernel 5, stride 2, padding 2 (to 128 channels
# with "glu", then split in halves along the channels, a * sigmoid(b); to 64 without), Transpose [0, 2, 1] into tokens
# [1, 25, 64], then tail "scaled": a Mul by a scalar and an Add of constant positions, a LayerNorm, a Linear (the
# model's); "norm": the LayerNorm and the Linear straight.
CONV1D_GLU_PACK = (("glu_scaled", True, "scaled"), ("glu_norm", True, "norm"), ("plain_scaled", False, "scaled"), ("plain_norm", False, "norm"))


def _conv1d_glu_case(rng, spec) -> tuple[list, list, list, list]:
    name, glu, tail = spec
    p = f"cglu_{name}_"
    node = _prefixed(p)
    inits = [_const(p + "w", _weights(rng, 128 if glu else 64, 32, 5) * 0.3), _const(p + "b", _weights(rng, 128 if glu else 64)),
             _const(p + "halves", np.array([64, 64], np.int64)), _const(p + "scale", np.float32(8.0)), _const(p + "pos", _weights(rng, 1, 25, 64)),
             _const(p + "g", np.ones(64, np.float32)), _const(p + "beta", np.zeros(64, np.float32)), _const(p + "wl", _weights(rng, 64, 64))]
    nodes = [node("Conv", ["x", "w", "b"], "conv", kernel_shape=[5], strides=[2], pads=[2, 2])]
    last = "conv"
    if glu:
        nodes += [helper.make_node("Split", [p + "conv", p + "halves"], [p + "ga", p + "gb"], name=p + "split", axis=1),
                  node("Sigmoid", ["gb"], "gate"), node("Mul", ["ga", "gate"], "glu")]
        last = "glu"
    nodes.append(node("Transpose", [last], "swap", perm=[0, 2, 1]))
    last = "swap"
    if tail == "scaled":
        nodes += [node("Mul", ["swap", "scale"], "scaled"), node("Add", ["scaled", "pos"], "posed")]
        last = "posed"
    nodes += [node("LayerNormalization", [last, "g", "beta"], "normed", axis=-1, epsilon=1e-5), node("MatMul", ["normed", "wl"], "y")]
    return nodes, inits, [_vi(p + "x", [1, 32, 50])], [_vi(p + "y", [1, 25, 64])]


CASES.append(Case("conv1d_glu_pack", "fresh5: Speech2Text's subsampler, a Conv1d's GLU swapped into tokens",
                  lambda: _packed(_conv1d_glu_case, CONV1D_GLU_PACK, 1605, used_only=True, opset=17), ("rk3566", "rk3588")))


# ---- PatchTST's patches: a Concat of patches swapped [0, 2, 1, 3] into a Linear (h16-rk66t) -----------------------
# (name, source): the swap [1, P, C, L] -> [1, C, P, L] (P = 8 patches of L = 8 steps, C = 3 channels) read by a biased
# Linear to 64; source "patches": PatchTST's patchifier, x [1, 64, 3] Sliced into 8 steps at a time, each swapped
# [0, 2, 1] and Unsqueezed at 1, Concatenated along axis 1; "concat2": a Concat of two model inputs [1, 4, 3, 8];
# "input": the model input [1, 8, 3, 8]; "relu": a Relu of it.
PATCH_SWAP_PACK = (("patches", "patches"), ("concat2", "concat2"), ("input", "input"), ("relu", "relu"))


def _patch_swap_case(rng, spec) -> tuple[list, list, list, list]:
    name, source = spec
    p = f"psw_{name}_"
    node = _prefixed(p)
    inits = [_const(p + "w", _weights(rng, 8, 64)), _const(p + "b", _weights(rng, 64)), _const(p + "ax1", np.array([1], np.int64))]
    nodes, inputs, parts = [], [], []
    if source == "patches":
        inputs.append(_vi(p + "x", [1, 64, 3]))
        for i in range(8):
            inits += [_const(p + f"s{i}", np.array([8 * i], np.int64)), _const(p + f"e{i}", np.array([8 * i + 8], np.int64))]
            nodes += [node("Slice", ["x", f"s{i}", f"e{i}", "ax1"], f"cut{i}"), node("Transpose", [f"cut{i}"], f"t{i}", perm=[0, 2, 1]),
                      node("Unsqueeze", [f"t{i}", "ax1"], f"u{i}")]
            parts.append(f"u{i}")
        nodes.append(node("Concat", parts, "stack", axis=1))
    elif source == "concat2":
        inputs += [_vi(p + "x", [1, 4, 3, 8]), _vi(p + "x2", [1, 4, 3, 8])]
        nodes.append(node("Concat", ["x", "x2"], "stack", axis=1))
    elif source == "relu":
        inputs.append(_vi(p + "x", [1, 8, 3, 8]))
        nodes.append(node("Relu", ["x"], "stack"))
    else:
        inputs.append(_vi(p + "x", [1, 8, 3, 8]))
    nodes += [node("Transpose", ["x" if source == "input" else "stack"], "swap", perm=[0, 2, 1, 3]), node("MatMul", ["swap", "w"], "mm"), node("Add", ["mm", "b"], "y")]
    return nodes, inits, inputs, [_vi(p + "y", [1, 3, 8, 64])]


CASES.append(Case("patch_swap_pack", "fresh5: PatchTST's Concat of patches swapped [0, 2, 1, 3] into a Linear",
                  lambda: _packed(_patch_swap_case, PATCH_SWAP_PACK, 1606, used_only=True, opset=17), ("rk3566", "rk3588")))

# ---- fresh8 (transformers' ZoeDepth) on RKNN: an identity with its constant first, after a CPU Div --------------

# ZoeDepth's attractor layer sums its attractors' pulls starting from torch.zeros_like(bins) (an Add of zeros, the
# zeros first: ConstantOfShape of the bins' shape) and divides the sum by n_attractors (1 in its last layer: a Div by
# one); the first pull is a Div by a computed tensor (CPU). A Conv's map [1, 16, 8, 8], x = map / (Sigmoid(map) + 1)
# (CPU) or Softmax(map, axis 1) (CPU on RK3566), then the identity (op, the constant first or second, its shape, its
# value), then read with the map by an Add. (name, producer, op, first, shape, value, then a Div by one).
IDENTITY_FIRST_PACK = (
    ("zf_full", "Div", "Add", True, (1, 16, 8, 8), 0.0, False), ("zf_chan", "Div", "Add", True, (1, 16, 1, 1), 0.0, False),
    ("zf_row", "Div", "Add", True, (1, 1, 1, 8), 0.0, False), ("zf_3d", "Div", "Add", True, (16, 8, 8), 0.0, False),
    ("zf_scalar", "Div", "Add", True, (), 0.0, False), ("zs_full", "Div", "Add", False, (1, 16, 8, 8), 0.0, False),
    ("zf_div1", "Div", "Add", True, (1, 16, 8, 8), 0.0, True), ("zfrand", "Div", "Add", True, (1, 16, 8, 8), None, False),
    ("of_full", "Div", "Mul", True, (1, 16, 8, 8), 1.0, False), ("of_chan", "Div", "Mul", True, (1, 16, 1, 1), 1.0, False),
    ("zf_full_sm", "Softmax", "Add", True, (1, 16, 8, 8), 0.0, False), ("zs_full_sm", "Softmax", "Add", False, (1, 16, 8, 8), 0.0, False),
    ("zs_chan_sm", "Softmax", "Add", False, (1, 16, 1, 1), 0.0, False), ("of_full_sm", "Softmax", "Mul", True, (1, 16, 8, 8), 1.0, False),
)


def _identity_first_case(rng, spec) -> tuple[list, list, list, list]:
    name, producer, op, first, shape, value, div_one = spec
    p = f"idf_{name}_"
    node = _prefixed(p)
    k = np.full(shape, value, np.float32) if value is not None else _weights(rng, *shape)
    inits = [_const(p + "w", _weights(rng, 16, 16, 1, 1)), _const(p + "b", np.zeros(16, np.float32)), _const(p + "one", np.array(1.0, np.float32)),
             _const(p + "k", k)]
    nodes = [node("Conv", ["x", "w", "b"], "map")]
    if producer == "Div":
        nodes += [node("Sigmoid", ["map"], "sig"), node("Add", ["sig", "one"], "s"), node("Div", ["map", "s"], "q")]
    else:
        nodes += [node("Softmax", ["map"], "q", axis=1)]
    nodes.append(node(op, ["k", "q"] if first else ["q", "k"], "ident"))
    last = "ident"
    if div_one:
        nodes.append(node("Div", ["ident", "one"], "by_one"))
        last = "by_one"
    nodes.append(node("Add", [last, "map"], "y"))
    return nodes, inits, [_vi(p + "x", [1, 16, 8, 8])], [_vi(p + "y", [1, 16, 8, 8])]


CASES.append(Case("identity_first_pack", "fresh8: x + 0 and x * 1 with the constant first (ZoeDepth's attractors' zeros_like sum), after a CPU Div or Softmax",
                  lambda: _packed(_identity_first_case, IDENTITY_FIRST_PACK, 433, opset=13), ("rk3588", "rk3566")))


# ---- fresh8 (ZoeDepth, DNSMOS) on RKNN: a view of a CPU node's 3-D result into a map ---------------------------

# A Conv's map [1, 4, H, W], its channels 0 and 1 picked by Gather ([1, H, W]), then the maker: "div" channel 0
# divided by their sum (CPU), "divk" by a constant (NPU), "log" Log(Relu(.) + 1), "sqrt" Sqrt(Relu(.)); then steps
# ("mul", "div": by a scalar; "addvec": plus a vector [W]; "relu"), then the view ("u0", "u1", "u2", "u3": Unsqueeze at
# that axis; "lead", "trail": Reshape to [1, 1, H, W] or [1, H, W, 1]; None: no view), then "swap" (Transpose
# [0, 3, 1, 2], as tf2onnx writes expand_dims then NHWC) or not, then the reader: "mulk" a Mul by a scalar, "conv" a
# 3x3 Conv to 4 channels, "relu", "addvec" (plus a vector [W]), "addc1" (plus channel 1, for no view). ZoeDepth's
# log-binomial: div, u1, mulk; DNSMOS's log power: log, div by a scalar, u3, swap, conv.
CPU_3D_VIEW_PACK = (
    ("div_u1", "div", (), "u1", False, "mulk", 16, 16), ("div_u0", "div", (), "u0", False, "mulk", 16, 16),
    ("div_u2", "div", (), "u2", False, "mulk", 16, 16), ("div_u3", "div", (), "u3", False, "mulk", 16, 16),
    ("div_lead", "div", (), "lead", False, "mulk", 16, 16), ("div_trail", "div", (), "trail", False, "mulk", 16, 16),
    ("div_u1_rect", "div", (), "u1", False, "mulk", 8, 24), ("div_u1_big", "div", (), "u1", False, "mulk", 64, 64),
    ("div_u1_relu", "div", (), "u1", False, "relu", 16, 16), ("div_u1_addvec", "div", (), "u1", False, "addvec", 16, 16),
    ("div_u1_conv", "div", (), "u1", False, "conv", 16, 16), ("sqrt_u1", "sqrt", (), "u1", False, "mulk", 16, 16),
    ("log_u1", "log", (), "u1", False, "mulk", 16, 16), ("divk_u1", "divk", (), "u1", False, "mulk", 16, 16),
    ("div_mul_u1", "div", ("mul",), "u1", False, "mulk", 16, 16), ("div_mul_mul_u1", "div", ("mul", "mul"), "u1", False, "mulk", 16, 16),
    ("div_mul_u1_conv", "div", ("mul",), "u1", False, "conv", 16, 16), ("div_mul_u1_relu", "div", ("mul",), "u1", False, "relu", 16, 16),
    ("div_mul_u1_addvec", "div", ("mul",), "u1", False, "addvec", 16, 16), ("div_mul_u3", "div", ("mul",), "u3", False, "mulk", 16, 16),
    ("log_div_u3_swap", "log", ("div",), "u3", True, "conv", 16, 16), ("log_div_u3_swap_long", "log", ("div",), "u3", True, "conv", 90, 161),
    ("log_u3_swap", "log", (), "u3", True, "conv", 16, 16), ("log_div_u1", "log", ("div",), "u1", False, "conv", 16, 16),
    ("div_addvec_u1", "div", ("addvec",), "u1", False, "mulk", 16, 16), ("div_relu_u1", "div", ("relu",), "u1", False, "mulk", 16, 16),
    ("div_mul", "div", ("mul",), None, False, "addc1", 16, 16),
)
_CPU_3D_VIEW_AXES = {"u0": (0, "Unsqueeze"), "u1": (1, "Unsqueeze"), "u2": (2, "Unsqueeze"), "u3": (3, "Unsqueeze"), "lead": ((1, 1), "Reshape"),
                     "trail": ((1, None), "Reshape")}


def _cpu_3d_view_case(rng, spec) -> tuple[list, list, list, list]:
    name, maker, steps, view, swap, reader, h, w = spec
    p = f"c3v_{name}_"
    node = _prefixed(p)
    inits = [_const(p + "w", _weights(rng, 4, 4, 1, 1)), _const(p + "one", np.array(1.0, np.float32)), _const(p + "k", np.array(3.0, np.float32)),
             _const(p + "k2", np.array(5.0, np.float32)), _const(p + "vec", _weights(rng, w)), _const(p + "w_out", _weights(rng, 4, 1, 3, 3)),
             _const(p + "i0", np.array(0, np.int64)), _const(p + "i1", np.array(1, np.int64))]
    nodes = [node("Conv", ["x", "w"], "map"), node("Gather", ["map", "i0"], "c0", axis=1), node("Gather", ["map", "i1"], "c1", axis=1)]
    made = {"div": [node("Add", ["c0", "c1"], "sum"), node("Div", ["c0", "sum"], "made")], "divk": [node("Div", ["c0", "k"], "made")],
            "log": [node("Relu", ["c0"], "pos"), node("Add", ["pos", "one"], "pos1"), node("Log", ["pos1"], "made")],
            "sqrt": [node("Relu", ["c0"], "pos"), node("Sqrt", ["pos"], "made")]}
    nodes += made[maker]
    last = "made"
    for i, step in enumerate(steps):
        ins = {"mul": ("Mul", [last, "k"]), "div": ("Div", [last, "k"]), "addvec": ("Add", [last, "vec"]), "relu": ("Relu", [last])}[step]
        nodes.append(node(ins[0], ins[1], f"step{i}"))
        last = f"step{i}"
    shape = [1, h, w]
    if view is not None:
        arg, op = _CPU_3D_VIEW_AXES[view]
        if op == "Unsqueeze":
            inits.append(_const(p + "axes", np.array([arg], np.int64)))
            nodes.append(node("Unsqueeze", [last, "axes"], "view"))
            shape.insert(arg, 1)
        else:
            shape = [1, 1, h, w] if arg == (1, 1) else [1, h, w, 1]
            inits.append(_const(p + "shape", np.array(shape, np.int64)))
            nodes.append(node("Reshape", [last, "shape"], "view"))
        last = "view"
    if swap:
        nodes.append(node("Transpose", [last], "swap", perm=[0, 3, 1, 2]))
        shape = [shape[0], shape[3], shape[1], shape[2]]
        last = "swap"
    if reader == "conv":
        nodes.append(node("Conv", [last, "w_out"], "y", pads=[1, 1, 1, 1]))
        shape = [1, 4, h, w]
    else:
        # without a view, a second scalar Mul here would be merged with the first (measured: the first then named with the Div)
        ins = {"mulk": ("Mul", [last, "k2"]), "relu": ("Relu", [last]), "addvec": ("Add", [last, "vec"]), "addc1": ("Add", [last, "c1"])}[reader]
        nodes.append(node(ins[0], ins[1], "y"))
    return nodes, inits, [_vi(p + "x", [1, 4, h, w])], [_vi(p + "y", shape)]


CASES.append(Case("view_of_a_cpu_3d_result_pack", "fresh8: a CPU Div's, Log's or Sqrt's 3-D result (scaled or not) viewed into a map (ZoeDepth's log-binomial, DNSMOS's log power)",
                  lambda: _packed(_cpu_3d_view_case, CPU_3D_VIEW_PACK, 437, opset=13), ("rk3588", "rk3566")))


# ---- fresh8 (ZoeDepth) on RKNN: a Resize to its own size -------------------------------------------------------

# ZoeDepth's metric head resizes the relative depth [1, 1, 128, 128] to the size of the features it is concatenated
# with, which is its own (align_corners, linear). A Conv's map [1, 16, 8, 8] (or x / (Sigmoid(x) + 1), CPU), resized
# by sizes or scales to (name, maker, sizes or scales, mode, coordinate mode), then read by a Relu.
SAME_SIZE_RESIZE_PACK = (
    ("same_ac", "conv", (1, 16, 8, 8), "linear", "align_corners"), ("same_hp", "conv", (1, 16, 8, 8), "linear", "half_pixel"),
    ("same_nearest", "conv", (1, 16, 8, 8), "nearest", "asymmetric"), ("same_scales_ac", "conv", (1.0, 1.0, 1.0, 1.0), "linear", "align_corners"),
    ("same_ac_after_div", "div", (1, 16, 8, 8), "linear", "align_corners"), ("up2_ac", "conv", (1, 16, 16, 16), "linear", "align_corners"),
    ("up2_hp", "conv", (1, 16, 16, 16), "linear", "half_pixel"),
)


def _same_size_resize_case(rng, spec) -> tuple[list, list, list, list]:
    name, maker, size, mode, coordinates = spec
    p = f"ssr_{name}_"
    node = _prefixed(p)
    scales = isinstance(size[0], float)
    inits = [_const(p + "w", _weights(rng, 16, 16, 1, 1)), _const(p + "one", np.array(1.0, np.float32)),
             _const(p + "size", np.array(size, np.float32 if scales else np.int64))]
    nodes = [node("Conv", ["x", "w"], "map")]
    if maker == "div":
        nodes += [node("Sigmoid", ["map"], "sig"), node("Add", ["sig", "one"], "s"), node("Div", ["map", "s"], "made")]
    source = "made" if maker == "div" else "map"
    ins = [p + source, "", p + "size"] if scales else [p + source, "", "", p + "size"]
    nodes.append(helper.make_node("Resize", ins, [p + "resized"], name=p + "resized", mode=mode, coordinate_transformation_mode=coordinates))
    nodes.append(node("Relu", ["resized"], "y"))
    out = [1, 16, 8, 8] if scales else list(size)
    return nodes, inits, [_vi(p + "x", [1, 16, 8, 8])], [_vi(p + "y", out)]


CASES.append(Case("same_size_resize_pack", "fresh8: a Resize to its own size (ZoeDepth's relative depth resized to the features' size), after an NPU or a CPU node",
                  lambda: _packed(_same_size_resize_case, SAME_SIZE_RESIZE_PACK, 439, opset=13), ("rk3588", "rk3566")))


# ---- fresh8 (ZoeDepth) on RKNN: the view of a map summed over its channels, as the model output ----------------

# ZoeDepth's depth: the bin centres times the bins' probabilities, summed over the bins (ReduceSum keepdims), squeezed
# to the model output [1, H, W]. A Conv's map [1, 16, 8, 8] (or its product by a second Conv's map, or its channel
# Softmax times an align_corners Resize of another map, as ZoeDepth), summed over channels (keepdims), then viewed
# to the output by Squeeze or Reshape [1, 64]. (name, what is summed, view)
REDUCED_MAP_VIEW_PACK = (("conv_squeeze", "conv", "Squeeze"), ("conv_reshape", "conv", "Reshape"), ("product_squeeze", "product", "Squeeze"),
                         ("zoe_squeeze", "softmax_resized", "Squeeze"))


def _reduced_map_view_case(rng, spec) -> tuple[list, list, list, list]:
    name, summed, view = spec
    p = f"rmv_{name}_"
    node = _prefixed(p)
    inits = [_const(p + "w", _weights(rng, 16, 16, 1, 1)), _const(p + "w2", _weights(rng, 16, 16, 1, 1)), _const(p + "axes", np.array([1], np.int64)),
             _const(p + "shape", np.array([1, 64], np.int64)), _const(p + "size", np.array([1, 16, 8, 8], np.int64))]
    nodes = [node("Conv", ["x", "w"], "map")]
    source = "map"
    if summed == "product":
        nodes += [node("Conv", ["x", "w2"], "map2"), node("Mul", ["map", "map2"], "product")]
        source = "product"
    elif summed == "softmax_resized":
        nodes += [node("Conv", ["x", "w2"], "map2"), node("MaxPool", ["map2"], "pooled", kernel_shape=[2, 2], strides=[2, 2]),
                  node("Softmax", ["map"], "probs", axis=1), helper.make_node("Resize", [p + "pooled", "", "", p + "size"], [p + "bins"], name=p + "bins", mode="linear",
                                                                                coordinate_transformation_mode="align_corners"),
                  node("Mul", ["probs", "bins"], "product")]
        source = "product"
    nodes.append(node("ReduceSum", [source, "axes"], "summed", keepdims=1))
    nodes.append(node("Squeeze", ["summed", "axes"], "y") if view == "Squeeze" else node("Reshape", ["summed", "shape"], "y"))
    return nodes, inits, [_vi(p + "x", [1, 16, 8, 8])], [_vi(p + "y", [1, 8, 8] if view == "Squeeze" else [1, 64])]


CASES.append(Case("reduced_map_view_pack", "fresh8: a map summed over its channels (keepdims) viewed as the model output (ZoeDepth's depth from its bins)",
                  lambda: _packed(_reduced_map_view_case, REDUCED_MAP_VIEW_PACK, 441, opset=13), ("rk3588", "rk3566")))


# ---- fresh8 (SegGPT) on RKNN: a patch fold, a 6-D Transpose that interleaves its first two axes --------------

# SegGPT's decoder: a Linear's [1, 16, 8, 1024] viewed as patches [1, 16, 8, 8, 8, 16], swapped by [0, 5, 1, 3, 2, 4]
# to [1, 16, 16, 8, 8, 8], viewed back as the map [1, 16, 128, 64], read by a Conv. (name, the view's shape, the
# permutation); the map's height is what the swapped shape's size leaves at 16 channels and a width of 64.
PATCH_INTERLEAVE_PACK = (
    ("seggpt", (1, 16, 8, 8, 8, 16), (0, 5, 1, 3, 2, 4)), ("c354", (1, 16, 8, 8, 8, 16), (0, 3, 1, 5, 2, 4)),
    ("c435", (1, 16, 8, 8, 8, 16), (0, 4, 1, 3, 2, 5)), ("five_a", (16, 8, 8, 8, 16), (2, 0, 4, 1, 3)),
    ("five_b", (16, 8, 8, 8, 16), (4, 0, 2, 1, 3)), ("mid_swap", (1, 16, 8, 8, 8, 16), (0, 1, 3, 2, 4, 5)),
    ("channels_first", (1, 16, 8, 8, 8, 16), (0, 5, 1, 2, 3, 4)), ("two_swaps", (1, 16, 8, 8, 8, 16), (0, 1, 3, 2, 5, 4)),
    ("last_two_merge", (1, 16, 8, 8, 8, 16), (0, 5, 1, 4, 2, 3)), ("pair_swaps", (1, 16, 8, 8, 8, 16), (0, 2, 1, 4, 3, 5)),
    ("first_kept", (1, 16, 8, 8, 8, 16), (0, 1, 4, 2, 5, 3)), ("far_apart", (1, 16, 8, 8, 8, 16), (0, 4, 1, 5, 3, 2)),
    ("five_cycle", (1, 16, 8, 8, 8, 16), (0, 2, 4, 1, 5, 3)), ("five_merge", (16, 8, 8, 8, 16), (3, 0, 4, 1, 2)),
    ("five_kept", (16, 8, 8, 8, 16), (0, 2, 1, 4, 3)),
)


def _patch_interleave_case(rng, spec) -> tuple[list, list, list, list]:
    name, shape, perm = spec
    p = f"pil_{name}_"
    node = _prefixed(p)
    height = int(np.prod(shape)) // (16 * 64)
    inits = [_const(p + "w", (rng.standard_normal((128, 1024)) * 0.05).astype(np.float32)), _const(p + "patches", np.array(shape, np.int64)),
             _const(p + "map_shape", np.array([1, 16, height, 64], np.int64)), _const(p + "w_out", _weights(rng, 4, 16, 1, 1))]
    nodes = [node("MatMul", ["x", "w"], "linear"), node("Reshape", ["linear", "patches"], "unfold"), node("Transpose", ["unfold"], "swap", perm=list(perm)),
             node("Reshape", ["swap", "map_shape"], "fold"), node("Conv", ["fold", "w_out"], "y")]
    return nodes, inits, [_vi(p + "x", [1, 16, 8, 128])], [_vi(p + "y", [1, 4, height, 64])]


CASES.append(Case("patch_interleave_pack", "fresh8: a 6-D or 5-D Transpose between two views, interleaving its first two axes or not (SegGPT's patch fold)",
                  lambda: _packed(_patch_interleave_case, PATCH_INTERLEAVE_PACK, 443, opset=13), ("rk3588",)))



# ---- fresh8 (DNSMOS) on RK3566: a computed row split into frames ----------------------------------------------

# DNSMOS crops its waveform [1, 144160] to [1, 144000] (a Slice) and views it as 900 frames of 160 samples. A row
# [1, N] (the model input), made by (name, what makes the row), viewed by a Reshape to frames (the shape), read by
# a MatMul [H, 8] or an Add of itself.
ROW_SPLIT_PACK = (
    ("slice", "slice", (1, 90, 160), "matmul"), ("slice_of_relu", "slice_of_relu", (1, 90, 160), "matmul"),
    ("relu_of_slice", "relu_of_slice", (1, 90, 160), "matmul"), ("scaled", "mul", (1, 90, 160), "matmul"),
    ("slice_add", "slice", (1, 90, 160), "add"), ("square", "relu", (1, 16, 16), "matmul"), ("small", "relu", (1, 4, 32), "matmul"),
    ("leading_unit", "relu", (1, 1, 14400), "matmul"), ("input", "input", (1, 90, 160), "matmul"),
)


def _row_split_case(rng, spec) -> tuple[list, list, list, list]:
    name, maker, shape, reader = spec
    p = f"rsp_{name}_"
    node = _prefixed(p)
    length = int(np.prod(shape))
    width = length + 16 if "slice" in maker else length
    inits = [_const(p + "start", np.array([0], np.int64)), _const(p + "end", np.array([length], np.int64)), _const(p + "axes", np.array([1], np.int64)),
             _const(p + "frames", np.array(shape, np.int64)), _const(p + "k", np.array(2.0, np.float32)), _const(p + "w", _weights(rng, shape[2], 8))]
    made = {"slice": [node("Slice", ["x", "start", "end", "axes"], "row")],
            "slice_of_relu": [node("Relu", ["x"], "pos"), node("Slice", ["pos", "start", "end", "axes"], "row")],
            "relu_of_slice": [node("Slice", ["x", "start", "end", "axes"], "cut"), node("Relu", ["cut"], "row")],
            "mul": [node("Mul", ["x", "k"], "row")], "relu": [node("Relu", ["x"], "row")], "input": []}[maker]
    nodes = made + [node("Reshape", ["row" if made else "x", "frames"], "framed")]
    if reader == "matmul":
        nodes.append(node("MatMul", ["framed", "w"], "y"))
        out = [shape[0], shape[1], 8]
    else:
        nodes.append(node("Add", ["framed", "framed"], "y"))
        out = list(shape)
    return nodes, inits, [_vi(p + "x", [1, width])], [_vi(p + "y", out)]


CASES.append(Case("row_split_pack", "fresh8: a computed row [1, L] viewed as frames [1, F, H] (DNSMOS's framing of its cropped waveform)",
                  lambda: _packed(_row_split_case, ROW_SPLIT_PACK, 447, opset=13), ("rk3588", "rk3566")))


# ---- a LayerNorm of a model input, and its epsilon left at the default (h17-lnorm) ---------------------------------
# (name, source, shape, form, scale): `source` makes what the norm reads from the model input x of `shape` (input: x
# itself; relu; matmul: a Linear C -> C; bias: x + a constant; sum: x + a second model input); `form` op
# (LayerNormalization, epsilon 1e-5) or dec (written out: ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div, Mul, Add);
# `scale` ones or random. A Linear reads the norm. LAYERNORM_EPSILON_CASES: one model each (a failed build fails all).
LAYERNORM_SOURCE_PACK = (
    ("in3", "input", (1, 100, 64), "op", "ones"), ("in3_dec", "input", (1, 100, 64), "dec", "ones"),
    ("in3_rand", "input", (1, 100, 64), "op", "random"), ("relu3", "relu", (1, 100, 64), "op", "ones"),
    ("mm3", "matmul", (1, 100, 64), "op", "ones"), ("mm3_dec", "matmul", (1, 100, 64), "dec", "ones"),
    ("bias3", "bias", (1, 100, 64), "op", "ones"), ("sum3", "sum", (1, 100, 64), "op", "ones"),
    ("in4", "input", (1, 10, 10, 64), "op", "ones"), ("in4_dec", "input", (1, 10, 10, 64), "dec", "ones"),
    ("mm4", "matmul", (1, 10, 10, 64), "op", "ones"), ("in2", "input", (100, 64), "op", "ones"),
    ("in3_c32", "input", (1, 100, 32), "op", "ones"), ("in3_c256", "input", (1, 49, 256), "op", "ones"),
    ("in3_c100", "input", (1, 16, 100), "op", "ones"), ("in3_t7", "input", (1, 7, 64), "op", "ones"),
)


def _layernorm_source_case(rng, spec, epsilon: float | None = 1e-5) -> tuple[list, list, list, list]:
    name, source, shape, form, scale = spec
    p = f"lns_{name}_"
    node = _prefixed(p)
    c = shape[-1]
    inits = [_const(p + "w_pre", _weights(rng, c, c)), _const(p + "b_pre", _weights(rng, c)), _const(p + "w", _weights(rng, c, 64))]
    inputs = [_vi(p + "x", list(shape))] + ([_vi(p + "x2", list(shape))] if source == "sum" else [])
    nodes = {"input": [], "relu": [node("Relu", ["x"], "src")], "matmul": [node("MatMul", ["x", "w_pre"], "src")],
             "bias": [node("Add", ["x", "b_pre"], "src")], "sum": [node("Add", ["x", "x2"], "src")]}[source]
    src = "x" if source == "input" else "src"
    gamma = np.ones(c, np.float32) if scale == "ones" else (1 + _weights(rng, c)).astype(np.float32)
    if form == "op":
        inits += [_const(p + "g", gamma), _const(p + "b", _weights(rng, c))]
        nodes.append(node("LayerNormalization", [src, "g", "b"], "ln", axis=-1, **({} if epsilon is None else {"epsilon": epsilon})))
    else:
        nodes += _layer_norm(node, p, src, c, inits)
    nodes.append(node("MatMul", ["ln", "w"], "y"))
    return nodes, inits, inputs, [_vi(p + "y", list(shape[:-1]) + [64])]


CASES.append(Case("layernorm_source_pack", "fresh8 FSMN probe: a LayerNorm of a model input or of a node computed from it, rank 2-4, widths, op or written out",
                  lambda: _packed(_layernorm_source_case, LAYERNORM_SOURCE_PACK, 1701, used_only=True, opset=17), ("rk3566", "rk3588")))

# (name, source, shape, epsilon): epsilon None leaves the attribute out (ONNX default 1e-5).
LAYERNORM_EPSILON_CASES = (
    ("absent_in3", "input", (1, 100, 64), None), ("absent_mm3", "matmul", (1, 100, 64), None), ("absent_in4", "input", (1, 10, 10, 64), None),
    ("absent_rand", "input", (1, 100, 64), None, "random"), ("given_1e12", "input", (1, 100, 64), 1e-12), ("given_1e3", "matmul", (1, 100, 64), 1e-3),
)


def layernorm_epsilon_model(spec) -> onnx.ModelProto:
    """One LayerNormalization (opset 17) with its epsilon attribute absent or set, as LAYERNORM_EPSILON_CASES has it."""
    name, source, shape, epsilon, *scale = spec
    entry = (name, source, shape, "op", scale[0] if scale else "ones")
    return _packed(lambda rng, s: _layernorm_source_case(rng, s, epsilon), (entry,), 1702, used_only=True, opset=17)


CASES += [Case(f"layernorm_epsilon_{spec[0]}", "h17: a LayerNormalization's epsilon attribute absent (default) or set",
               lambda s=spec: layernorm_epsilon_model(s), ("rk3566", "rk3588")) for spec in LAYERNORM_EPSILON_CASES]

# FSMN's memory block after a LayerNorm (h16-rk66t's FSMN_MEMORY_MEASURED "ln": the norm on the CPU of both chips).
# Measured, not held (LAYERNORM_SWAP_MEASURED): "ln_pad", whose 4-D swap (the norm on the CPU) is a Transpose layer on
# RK3566's NPU where the audit has it on the CPU (fsmn_memory_pack's input rule).
LAYERNORM_SWAP_MEASURED = (("ln_pad", 100, 128, "norm_linear", "pad", False, "linear", "4d"),)
LAYERNORM_SWAP_PACK = (("ln", 100, 128, "norm_linear", "cache", True, "linear", "4d"),
                       ("ln_d3", 100, 128, "norm_linear", "cache", True, "linear", "3d"), ("lnl", 100, 128, "linear_norm_linear", "cache", True, "linear", "4d"),
                       ("lnl_d3", 100, 128, "linear_norm_linear", "cache", True, "linear", "3d"))
CASES.append(Case("layernorm_swap_pack", "fresh8 FSMN probe: a LayerNorm (epsilon set) of the model input or of a Linear, a Linear, the FSMN memory block",
                  lambda: _packed(_fsmn_memory_case, LAYERNORM_SWAP_PACK, 1703, used_only=True, opset=17), ("rk3566", "rk3588")))

# What between a LayerNorm (epsilon set) of tokens [1, 100, 64] and the swap [0, 2, 1] into a depthwise Conv1d puts the
# norm on the CPU: (name, between, reader) with `between` the nodes from the norm to the swap (linear: a Linear 64 ->
# 128; linear_relu; linear2: two Linears; none) and `reader` what reads the swap (conv1d, or output: the model output).
LAYERNORM_INTO_SWAP_PACK = (("lin_conv", "linear", "conv1d"), ("lin_out", "linear", "output"), ("relu_conv", "linear_relu", "conv1d"),
                            ("lin2_conv", "linear2", "conv1d"), ("none_conv", "none", "conv1d"), ("none_out", "none", "output"))


def _layernorm_into_swap_case(rng, spec) -> tuple[list, list, list, list]:
    name, between, reader = spec
    p = f"lnsw_{name}_"
    node = _prefixed(p)
    c = 64 if between == "none" else 128
    inits = [_const(p + "g", (1 + _weights(rng, 64)).astype(np.float32)), _const(p + "b", _weights(rng, 64)), _const(p + "w1", _weights(rng, 64, 128)),
             _const(p + "w2", _weights(rng, 128, 128)), _const(p + "wc", _weights(rng, c, 1, 3))]
    nodes = [node("LayerNormalization", ["x", "g", "b"], "ln", axis=-1, epsilon=1e-5)]
    nodes += {"none": [], "linear": [node("MatMul", ["ln", "w1"], "tok")], "linear_relu": [node("MatMul", ["ln", "w1"], "mm"), node("Relu", ["mm"], "tok")],
              "linear2": [node("MatMul", ["ln", "w1"], "mm"), node("MatMul", ["mm", "w2"], "tok")]}[between]
    nodes.append(node("Transpose", ["ln" if between == "none" else "tok"], "swap", perm=[0, 2, 1]))
    if reader == "conv1d":
        nodes.append(node("Conv", ["swap", "wc"], "y", group=c, kernel_shape=[3], pads=[1, 1]))
        return nodes, inits, [_vi(p + "x", [1, 100, 64])], [_vi(p + "y", [1, c, 100])]
    return nodes, inits, [_vi(p + "x", [1, 100, 64])], [_vi(p + "swap", [1, c, 100])]


CASES.append(Case("layernorm_into_swap_pack", "h17: a LayerNorm of tokens, then a Linear (or not) and the swap into a depthwise Conv1d or the output",
                  lambda: _packed(_layernorm_into_swap_case, LAYERNORM_INTO_SWAP_PACK, 1704, used_only=True, opset=17), ("rk3566", "rk3588")))
LAYERNORM_SWAP_PACK_2 = (("d3_out", 100, 128, "norm_linear", "cache", True, "output", "3d"), ("d3_nores", 100, 128, "norm_linear", "cache", False, "linear", "3d"),
                         ("d3_pad", 100, 128, "norm_linear", "pad", False, "linear", "3d"), ("d3_pad_out", 100, 128, "norm_linear", "pad", False, "output", "3d"),
                         ("d3_c64", 100, 64, "norm_linear", "cache", True, "linear", "3d"), ("d3_t16", 16, 128, "norm_linear", "cache", True, "linear", "3d"))
CASES.append(Case("layernorm_swap_pack_2", "fresh8 FSMN probe: what of FSMN's memory block after a LayerNorm's Linear puts the norm on the CPU",
                  lambda: _packed(_fsmn_memory_case, LAYERNORM_SWAP_PACK_2, 1705, used_only=True, opset=17), ("rk3566", "rk3588")))
# (name, kernel, pads, gamma): LayerNorm (epsilon set), Linear 64 -> 128, swap [0, 2, 1], depthwise Conv1d of `kernel`
# and `pads` (FSMN's: 20, causal [19, 0]), the model output; gamma ones or random.
LAYERNORM_INTO_SWAP_PACK_2 = (("k20_causal", 20, (19, 0), "random"), ("k20_same", 20, (10, 9), "random"), ("k3_causal", 3, (2, 0), "random"),
                              ("k3_ones", 3, (1, 1), "ones"), ("k20_causal_ones", 20, (19, 0), "ones"), ("k9_same", 9, (4, 4), "random"))


def _layernorm_into_conv_case(rng, spec) -> tuple[list, list, list, list]:
    name, k, pads, gamma, *more = spec
    between, back, form = more or ("linear", False, "op")
    p = f"lnk_{name}_"
    node = _prefixed(p)
    c = 128 if between == "linear" else 64
    inits = [_const(p + "g", np.ones(64, np.float32) if gamma == "ones" else (1 + _weights(rng, 64)).astype(np.float32)), _const(p + "b", _weights(rng, 64)),
             _const(p + "w1", _weights(rng, 64, 128)), _const(p + "wc", _weights(rng, c, 1, k))]
    if form == "op":
        nodes = [node("LayerNormalization", ["x", "g", "b"], "ln", axis=-1, epsilon=1e-5)]
    else:
        nodes = _layer_norm(node, p, "x", 64, inits)
    nodes += [node("MatMul", ["ln", "w1"], "tok")] if between == "linear" else []
    nodes += [node("Transpose", ["tok" if between == "linear" else "ln"], "swap", perm=[0, 2, 1]), node("Conv", ["swap", "wc"], "y", group=c, kernel_shape=[k], pads=list(pads))]
    length = 100 + sum(pads) - k + 1
    if back:
        nodes.append(node("Transpose", ["y"], "back", perm=[0, 2, 1]))
        return nodes, inits, [_vi(p + "x", [1, 100, 64])], [_vi(p + "back", [1, length, c])]
    return nodes, inits, [_vi(p + "x", [1, 100, 64])], [_vi(p + "y", [1, c, length])]


CASES.append(Case("layernorm_into_conv_pack", "h17: a LayerNorm of tokens, a Linear, the swap into a depthwise Conv1d of FSMN's kernel 20 or not",
                  lambda: _packed(_layernorm_into_conv_case, LAYERNORM_INTO_SWAP_PACK_2, 1706, used_only=True, opset=17), ("rk3566", "rk3588")))
# (name, kernel, pads, gamma, between, back, form): the same with the Conv's map swapped back to tokens (FSMN's).
LAYERNORM_CONV_BACK_PACK = (("back_lin", 20, (19, 0), "ones", "linear", True, "op"), ("back_lin_k3", 3, (1, 1), "random", "linear", True, "op"),
                            ("back_none", 3, (1, 1), "random", "none", True, "op"), ("back_lin_dec", 3, (1, 1), "ones", "linear", True, "dec"),
                            ("back_none_dec", 3, (1, 1), "ones", "none", True, "dec"))
CASES.append(Case("layernorm_conv_back_pack", "h17: a LayerNorm of tokens, a Linear or not, swapped into a depthwise Conv1d and back",
                  lambda: _packed(_layernorm_into_conv_case, LAYERNORM_CONV_BACK_PACK, 1707, used_only=True, opset=17), ("rk3566", "rk3588")))

# (name, shape, attributes): a LayerNormalization of the model input with its axis and epsilon attributes written or
# left at their defaults (axis -1, epsilon 1e-5), a Linear reading it. FSMN's probes wrote epsilon and left axis out.
LAYERNORM_ATTRIBUTE_PACK = (("axis_absent", (1, 100, 64), {"epsilon": 1e-5}), ("axis_m1", (1, 100, 64), {"axis": -1, "epsilon": 1e-5}),
                            ("axis_2", (1, 100, 64), {"axis": 2, "epsilon": 1e-5}), ("axis_absent_4d", (1, 10, 10, 64), {"epsilon": 1e-5}),
                            ("axis_3_4d", (1, 10, 10, 64), {"axis": 3, "epsilon": 1e-5}), ("both_absent", (1, 100, 64), {}))


def _layernorm_attribute_case(rng, spec) -> tuple[list, list, list, list]:
    name, shape, attributes = spec
    p = f"lna_{name}_"
    node = _prefixed(p)
    inits = [_const(p + "g", np.ones(64, np.float32)), _const(p + "b", _weights(rng, 64)), _const(p + "w", _weights(rng, 64, 64))]
    nodes = [node("LayerNormalization", ["x", "g", "b"], "ln", **attributes), node("MatMul", ["ln", "w"], "y")]
    return nodes, inits, [_vi(p + "x", list(shape))], [_vi(p + "y", list(shape))]


CASES.append(Case("layernorm_attribute_pack", "h17: a LayerNormalization's axis and epsilon attributes written or left at their defaults",
                  lambda: _packed(_layernorm_attribute_case, LAYERNORM_ATTRIBUTE_PACK, 1708, used_only=True, opset=17), ("rk3566", "rk3588")))
# Sub-packs: does one LayerNormalization with an attribute left out move the others of the model?
LAYERNORM_ATTRIBUTE_MIXES = {"written": ("axis_m1", "axis_2", "axis_3_4d"), "axis_mix": ("axis_m1", "axis_absent"), "eps_mix": ("axis_m1", "eps_absent")}


def layernorm_attribute_mix(mix: str) -> onnx.ModelProto:
    entries = {e[0]: e for e in LAYERNORM_ATTRIBUTE_PACK + (("eps_absent", (1, 100, 64), {"axis": -1}),)}
    return _packed(_layernorm_attribute_case, tuple(entries[n] for n in LAYERNORM_ATTRIBUTE_MIXES[mix]), 1709, used_only=True, opset=17)


CASES += [Case(f"layernorm_attribute_{mix}", "h17: LayerNormalizations with their attributes written, or one with axis or epsilon left out",
               lambda m=mix: layernorm_attribute_mix(m), ("rk3566", "rk3588")) for mix in LAYERNORM_ATTRIBUTE_MIXES]


# ---- fresh9 (EfficientDet-Lite0) on RKNN: BiFPN's fast fusion, maps stacked on a new last axis and summed ----------

# effdet's BiFPN node combines its inputs by torch.stack(nodes, dim=-1).sum(-1) (weight_method "sum"): each map
# [1, C, H, W] Unsqueezed at -1, Concatenated on -1, ReduceSum over -1 (keepdims 0). Maps are 1x1 Convs of one input
# [1, C, H, W], each stack's sum read by a Relu. (name, C, H, W, stacks: the maps each stack reads, by index); a map
# in two stacks is Unsqueezed once in each (as BiFPN's level input read by its top-down and its output node).
STACKED_SUM_PACK = (
    ("two_4x4", 16, 4, 4, ((0, 1),)), ("three_4x4", 16, 4, 4, ((0, 1, 2),)), ("two_2x2", 16, 2, 2, ((0, 1),)),
    ("two_8x8_c64", 64, 8, 8, ((0, 1),)), ("two_1x1", 16, 1, 1, ((0, 1),)), ("two_4x1", 16, 4, 1, ((0, 1),)),
    ("two_1x4", 16, 1, 4, ((0, 1),)), ("shared_4x4", 16, 4, 4, ((0, 1), (0, 2))), ("shared_2x2", 16, 2, 2, ((0, 1), (0, 2))),
    ("shared_three_4x4", 16, 4, 4, ((0, 1), (2, 1, 3))), ("shared_8x8_c64", 64, 8, 8, ((0, 1), (2, 0, 3))),
)


def _stacked_sum_case(rng, spec) -> tuple[list, list, list, list]:
    name, c, h, w, stacks = spec
    p = f"ss_{name}_"
    node = _prefixed(p)
    count = 1 + max(i for stack in stacks for i in stack)
    inits = [_const(p + f"w{i}", _weights(rng, c, c, 1, 1)) for i in range(count)] + [_const(p + "last", np.array([-1], np.int64))]
    nodes = [node("Conv", ["x", f"w{i}"], f"map{i}") for i in range(count)]
    outputs = []
    for s, stack in enumerate(stacks):
        for i in stack:
            nodes.append(node("Unsqueeze", [f"map{i}", "last"], f"s{s}_u{i}"))
        nodes += [node("Concat", [f"s{s}_u{i}" for i in stack], f"s{s}_stack", axis=-1), node("ReduceSum", [f"s{s}_stack", "last"], f"s{s}_sum", keepdims=0),
                  node("Relu", [f"s{s}_sum"], f"y{s}")]
        outputs.append(_vi(p + f"y{s}", [1, c, h, w]))
    return nodes, inits, [_vi(p + "x", [1, c, h, w])], outputs


CASES.append(Case("stacked_sum_pack", "fresh9: maps stacked on a new last axis and summed (EfficientDet's BiFPN fusion), by size, count, a map in two stacks",
                  lambda: _packed(_stacked_sum_case, STACKED_SUM_PACK, 457, opset=13), ("rk3588", "rk3566")))

# ---- h18-espeiq: a Clip whose floor is computed at run time (openWakeWord's melspectrogram) ------------------------


def clip_run_time_floor(variant: str) -> onnx.ModelProto:
    """openWakeWord's melspectrogram tail: a map [1, 1, 97, 32] (a Mul of the input), floored at its own maximum less
    80 dB, Clip(m, Cast(ReduceMax(m, keepdims=0) - 80), inf). Variants: `form` as the model writes it; `no_cast`
    without the Cast; `keepdims` the maximum kept [1, 1, 1, 1]; `constant` a constant floor (-80); `max` a Max of the
    map and the run-time floor instead of the Clip."""
    x, m = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 97, 32]), "m"
    nodes = [helper.make_node("Mul", ["x", "scale"], [m], name="scale_map")]
    inits = [_const("scale", np.array(0.5, np.float32)), _const("db", np.array(80.0, np.float32)), _const("top", np.array(np.inf, np.float32))]
    if variant == "constant":
        inits.append(_const("floor", np.array(-80.0, np.float32)))
    else:
        nodes.append(helper.make_node("ReduceMax", [m], ["peak"], name="peak", keepdims=int(variant == "keepdims")))
        nodes.append(helper.make_node("Sub", ["peak", "db"], ["low" if variant != "no_cast" else "floor"], name="low"))
        if variant != "no_cast":
            nodes.append(helper.make_node("Cast", ["low"], ["floor"], name="cast", to=TensorProto.FLOAT))
    if variant == "max":
        nodes.append(helper.make_node("Max", [m, "floor"], ["y"], name="clip"))
    else:
        nodes.append(helper.make_node("Clip", [m, "floor", "top"], ["y"], name="clip"))
    return _model(nodes, [x], [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, 97, 32])], inits)


CASES += [Case(f"clip_run_time_floor_{v}", "h18: a Clip floored at the map's maximum less 80 (melspectrogram)",
               lambda v=v: clip_run_time_floor(v), ("imx93",)) for v in ("form", "no_cast", "keepdims", "constant", "max")]


# ---- h18-espeiq: tf2onnx's strided slice, its axes out of order (Spotify's basic_pitch) ------------------------------


def slice_axes_out_of_order(variant: str) -> onnx.ModelProto:
    """basic_pitch's constant-Q front: a map [1, 8, 12, 2] sliced to its last 9 bins (axis 2) by one Slice over all four
    axes as tf2onnx writes a strided_slice, then swapped [0, 2, 1, 3] and scaled per bin by a constant [9, 1, 1].
    Variants: `form` axes [0, 2, 1, 3] with starts [0, -9, 0, 0]; `sorted` axes [0, 1, 2, 3], starts [0, 0, -9, 0];
    `one_axis` axes [2], start -9; `form_relu` the form's Slice into a Relu (no swap, no scale)."""
    big = 2**31 - 1
    slices = {"form": ([0, -9, 0, 0], [big] * 4, [0, 2, 1, 3]), "sorted": ([0, 0, -9, 0], [big] * 4, [0, 1, 2, 3]),
              "one_axis": ([-9], [big], [2]), "form_relu": ([0, -9, 0, 0], [big] * 4, [0, 2, 1, 3])}
    starts, ends, axes = slices[variant]
    inits = [_const("starts", np.array(starts, np.int64)), _const("ends", np.array(ends, np.int64)), _const("axes", np.array(axes, np.int64))]
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="front"), helper.make_node("Slice", ["r", "starts", "ends", "axes"], ["s"], name="bins")]
    if variant == "form_relu":
        nodes.append(helper.make_node("Relu", ["s"], ["y"], name="after"))
        out = [1, 8, 9, 2]
    else:
        inits.append(_const("gain", np.linspace(0.5, 1.5, 9, dtype=np.float32).reshape(9, 1, 1)))
        nodes += [helper.make_node("Transpose", ["s"], ["t"], name="swap", perm=[0, 2, 1, 3]), helper.make_node("Mul", ["t", "gain"], ["y"], name="gain_mul")]
        out = [1, 9, 8, 2]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 12, 2])
    return _model(nodes, [x], [helper.make_tensor_value_info("y", TensorProto.FLOAT, out)], inits)


CASES += [Case(f"slice_axes_out_of_order_{v}", "h18: a Slice over all axes, its axes out of order (tf2onnx, basic_pitch)",
               lambda v=v: slice_axes_out_of_order(v), ("imx93",)) for v in ("form", "sorted", "one_axis", "form_relu")]


def slice_of_stacked_rows(variant: str) -> onnx.ModelProto:
    """basic_pitch's constant-Q stack: rows [1, 8, 6] (a Relu of the 3-D input) unsqueezed to [1, 8, 6, 1], two
    stacked on the last axis and two such stacks concatenated on axis 2 into [1, 8, 12, 2], then tf2onnx's Slice of
    the last 9 bins (axes [0, 2, 1, 3], starts [0, -9, 0, 0]; `sorted`: axes [0, 1, 2, 3]; `one_axis`: axes [2]),
    swapped [0, 2, 1, 3] and scaled by a constant [9, 1, 1]."""
    big = 2**31 - 1
    slices = {"form": ([0, -9, 0, 0], [big] * 4, [0, 2, 1, 3]), "sorted": ([0, 0, -9, 0], [big] * 4, [0, 1, 2, 3]), "one_axis": ([-9], [big], [2])}
    starts, ends, axes = slices[variant]
    inits = [_const("starts", np.array(starts, np.int64)), _const("ends", np.array(ends, np.int64)), _const("axes", np.array(axes, np.int64)),
             _const("u_axes", np.array([3], np.int64)), _const("gain", np.linspace(0.5, 1.5, 9, dtype=np.float32).reshape(9, 1, 1))]
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="front"), helper.make_node("Neg", ["x"], ["n"], name="front_neg"),
             helper.make_node("Unsqueeze", ["r", "u_axes"], ["ur"], name="unsq_r"), helper.make_node("Unsqueeze", ["n", "u_axes"], ["un"], name="unsq_n"),
             helper.make_node("Concat", ["ur", "un"], ["st1"], name="stack1", axis=3), helper.make_node("Concat", ["un", "ur"], ["st2"], name="stack2", axis=3),
             helper.make_node("Concat", ["st1", "st2"], ["c"], name="bins_all", axis=2),
             helper.make_node("Slice", ["c", "starts", "ends", "axes"], ["s"], name="bins"),
             helper.make_node("Transpose", ["s"], ["t"], name="swap", perm=[0, 2, 1, 3]), helper.make_node("Mul", ["t", "gain"], ["y"], name="gain_mul")]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 6])
    return _model(nodes, [x], [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 9, 8, 2])], inits)


CASES += [Case(f"slice_of_stacked_rows_{v}", "h18: tf2onnx's Slice of stacked rows (basic_pitch's constant-Q front)",
               lambda v=v: slice_of_stacked_rows(v), ("imx93",)) for v in ("form", "sorted", "one_axis")]

# ---- fresh9 (XFeat) on RKNN: a map cut into windows by torch's unfold, written with Slices -----------------------

# XFeat's _unfold2d: x.unfold(2, ws, ws).unfold(3, ws, ws) of the normalised image [1, 1, H, W], exported as one Slice
# per window along H, each swapped [0, 1, 3, 2], Unsqueezed at 2 and Concatenated on 2 ([1, 1, H/ws, W, ws]); then the
# same along W of that ([1, 1, H/ws, W/ws, ws, ws]), Reshaped to [1, 1, H/ws, W/ws, ws*ws], swapped [0, 1, 4, 2, 3] and
# Reshaped to the map [1, ws*ws, H/ws, W/ws] a 1x1 Conv reads. (name, C, H, W, ws, both axes or only H (then the
# [1, C, H/ws, W, ws] result is read by a Relu), what makes the image: an InstanceNormalization or a Conv)
WINDOW_UNFOLD_PACK = (
    ("xfeat", 1, 128, 128, 8, "both", "instnorm"), ("conv_64", 1, 64, 64, 8, "both", "conv"), ("ws4_32", 1, 32, 32, 4, "both", "conv"),
    ("c4_64", 4, 64, 64, 8, "both", "conv"), ("rows_only", 1, 64, 64, 8, "rows", "conv"), ("c1_32", 1, 32, 32, 8, "both", "conv"),
    ("c2_32", 2, 32, 32, 8, "both", "conv"), ("c8_32", 8, 32, 32, 8, "both", "conv"), ("c16_32", 16, 32, 32, 8, "both", "conv"),
    ("c4_rows_only", 4, 64, 64, 8, "rows", "conv"), ("c1_wide", 1, 32, 64, 8, "both", "conv"),
)


def _windows_by_slices(node, inits, p, source, rank, axis, count, ws, tag) -> tuple[list, str]:
    """torch's unfold(axis, ws, ws) of `source` (of `rank`) as the exporter writes it: the Concat's output name."""
    nodes, pieces = [], []
    perm = list(range(rank))
    perm[-1], perm[-2] = perm[-2], perm[-1]
    inits += [_const(p + f"{tag}_axis", np.array([axis], np.int64)), _const(p + f"{tag}_at", np.array([axis], np.int64))]
    for i in range(count):
        inits += [_const(p + f"{tag}_b{i}", np.array([i * ws], np.int64)), _const(p + f"{tag}_e{i}", np.array([(i + 1) * ws], np.int64))]
        nodes += [node("Slice", [source, f"{tag}_b{i}", f"{tag}_e{i}", f"{tag}_axis"], f"{tag}_s{i}"),
                  node("Transpose", [f"{tag}_s{i}"], f"{tag}_t{i}", perm=perm), node("Unsqueeze", [f"{tag}_t{i}", f"{tag}_at"], f"{tag}_u{i}")]
        pieces.append(f"{tag}_u{i}")
    nodes.append(node("Concat", pieces, f"{tag}_windows", axis=axis))
    return nodes, f"{tag}_windows"


def _window_unfold_case(rng, spec) -> tuple[list, list, list, list]:
    name, c, h, w, ws, axes, maker = spec
    p = f"uf_{name}_"
    node = _prefixed(p)
    inits = [_const(p + "w", _weights(rng, c, c, 1, 1)), _const(p + "scale", np.ones(c, np.float32)), _const(p + "bias", np.zeros(c, np.float32))]
    nodes = [node("InstanceNormalization", ["x", "scale", "bias"], "image") if maker == "instnorm" else node("Conv", ["x", "w"], "image")]
    rows, windows = _windows_by_slices(node, inits, p, "image", 4, 2, h // ws, ws, "rows")
    nodes += rows
    if axes == "rows":
        nodes.append(node("Relu", [windows], "y"))
        return nodes, inits, [_vi(p + "x", [1, c, h, w])], [_vi(p + "y", [1, c, h // ws, w, ws])]
    cols, patches = _windows_by_slices(node, inits, p, windows, 5, 3, w // ws, ws, "cols")
    hh, ww, k = h // ws, w // ws, c * ws * ws
    inits += [_const(p + "flat", np.array([1, c, hh, ww, ws * ws], np.int64)), _const(p + "map", np.array([1, -1, hh, ww], np.int64)),
              _const(p + "head", _weights(rng, 16, k, 1, 1))]
    nodes += cols + [node("Reshape", [patches, "flat"], "flat_patches"), node("Transpose", ["flat_patches"], "swapped", perm=[0, 1, 4, 2, 3]),
                     node("Reshape", ["swapped", "map"], "patch_map"), node("Conv", ["patch_map", "head"], "y")]
    return nodes, inits, [_vi(p + "x", [1, c, h, w])], [_vi(p + "y", [1, 16, hh, ww])]


CASES.append(Case("window_unfold_pack", "fresh9: a map cut into windows by torch's unfold along H and W, written with Slices (XFeat's _unfold2d)",
                  lambda: _packed(_window_unfold_case, WINDOW_UNFOLD_PACK, 461, used_only=True, opset=13), ("rk3588", "rk3566")))

def slice_of_conv_rows(variant: str) -> onnx.ModelProto:
    """basic_pitch's constant-Q front closer: four Conv1d written 2-D over [1, 1, 1, 18] (6 filters, kernel [1, 4],
    stride [1, 2]: [1, 6, 1, 8]), each Transposed [0, 2, 3, 1] and Reshaped to rows [1, 8, 6], Unsqueezed on axis 3,
    stacked in twos on the last axis, the two stacks concatenated on axis 2 into [1, 8, 12, 2]; then tf2onnx's Slice
    of the last 9 bins (`form`: axes [0, 2, 1, 3], starts [0, -9, 0, 0]; `sorted`: axes [0, 1, 2, 3]; `one_axis`:
    axes [2]), swapped [0, 2, 1, 3] and scaled by a constant [9, 1, 1]."""
    rng = np.random.default_rng(1818)
    big = 2**31 - 1
    slices = {"form": ([0, -9, 0, 0], [big] * 4, [0, 2, 1, 3]), "sorted": ([0, 0, -9, 0], [big] * 4, [0, 1, 2, 3]), "one_axis": ([-9], [big], [2])}
    starts, ends, axes = slices[variant]
    inits = [_const("starts", np.array(starts, np.int64)), _const("ends", np.array(ends, np.int64)), _const("axes", np.array(axes, np.int64)),
             _const("u_axes", np.array([3], np.int64)), _const("rows", np.array([1, 8, 6], np.int64)),
             _const("gain", np.linspace(0.5, 1.5, 9, dtype=np.float32).reshape(9, 1, 1))]
    nodes = []
    for k in "abcd":
        inits.append(_const(f"w{k}", (rng.standard_normal((6, 1, 1, 4)) * 0.3).astype(np.float32)))
        nodes += [helper.make_node("Conv", ["x", f"w{k}"], [f"c{k}"], name=f"conv_{k}", kernel_shape=[1, 4], strides=[1, 2]),
                  helper.make_node("Transpose", [f"c{k}"], [f"t{k}"], name=f"swap_{k}", perm=[0, 2, 3, 1]),
                  helper.make_node("Reshape", [f"t{k}", "rows"], [f"r{k}"], name=f"rows_{k}"),
                  helper.make_node("Unsqueeze", [f"r{k}", "u_axes"], [f"u{k}"], name=f"unsq_{k}")]
    nodes += [helper.make_node("Concat", ["ua", "ub"], ["st1"], name="stack1", axis=3), helper.make_node("Concat", ["uc", "ud"], ["st2"], name="stack2", axis=3),
              helper.make_node("Concat", ["st1", "st2"], ["c"], name="bins_all", axis=2),
              helper.make_node("Slice", ["c", "starts", "ends", "axes"], ["s"], name="bins"),
              helper.make_node("Transpose", ["s"], ["t"], name="swap", perm=[0, 2, 1, 3]), helper.make_node("Mul", ["t", "gain"], ["y"], name="gain_mul")]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 1, 18])
    return _model(nodes, [x], [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 9, 8, 2])], inits)


def slice_of_reshaped_rows(variant: str) -> onnx.ModelProto:
    """slice_of_stacked_rows with its rows Reshaped from a 4-D input [1, 1, 8, 6] (a Relu of it) instead of read from a
    3-D one: no Conv, no Transpose. Variants as slice_of_conv_rows."""
    big = 2**31 - 1
    slices = {"form": ([0, -9, 0, 0], [big] * 4, [0, 2, 1, 3]), "sorted": ([0, 0, -9, 0], [big] * 4, [0, 1, 2, 3])}
    starts, ends, axes = slices[variant]
    inits = [_const("starts", np.array(starts, np.int64)), _const("ends", np.array(ends, np.int64)), _const("axes", np.array(axes, np.int64)),
             _const("u_axes", np.array([3], np.int64)), _const("rows", np.array([1, 8, 6], np.int64)),
             _const("gain", np.linspace(0.5, 1.5, 9, dtype=np.float32).reshape(9, 1, 1))]
    nodes = [helper.make_node("Relu", ["x"], ["xr"], name="front"), helper.make_node("Neg", ["x"], ["xn"], name="front_neg"),
             helper.make_node("Reshape", ["xr", "rows"], ["r"], name="rows_r"), helper.make_node("Reshape", ["xn", "rows"], ["n"], name="rows_n"),
             helper.make_node("Unsqueeze", ["r", "u_axes"], ["ur"], name="unsq_r"), helper.make_node("Unsqueeze", ["n", "u_axes"], ["un"], name="unsq_n"),
             helper.make_node("Concat", ["ur", "un"], ["st1"], name="stack1", axis=3), helper.make_node("Concat", ["un", "ur"], ["st2"], name="stack2", axis=3),
             helper.make_node("Concat", ["st1", "st2"], ["c"], name="bins_all", axis=2),
             helper.make_node("Slice", ["c", "starts", "ends", "axes"], ["s"], name="bins"),
             helper.make_node("Transpose", ["s"], ["t"], name="swap", perm=[0, 2, 1, 3]), helper.make_node("Mul", ["t", "gain"], ["y"], name="gain_mul")]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 8, 6])
    return _model(nodes, [x], [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 9, 8, 2])], inits)


CASES += [Case(f"slice_of_conv_rows_{v}", "h18: tf2onnx's Slice of stacked Conv1d rows (basic_pitch's constant-Q front)",
               lambda v=v: slice_of_conv_rows(v), ("imx93",)) for v in ("form", "sorted", "one_axis")]
CASES += [Case(f"slice_of_reshaped_rows_{v}", "h18: tf2onnx's Slice of stacked rows reshaped from a 4-D input",
               lambda v=v: slice_of_reshaped_rows(v), ("imx93",)) for v in ("form", "sorted")]


# ---- fresh9 (openWakeWord's hey_mycroft) on RKNN: a 2-D Linear's activation as the model output -------------------

# openWakeWord's classifier ends in a Keras Dense with a sigmoid, written by tf2onnx as MatMul [1, 64] x [64, 1], a bias
# Add and a Sigmoid, the model's [1, 1] output. (name, op of the product: MatMul (+ bias Add unless "nobias") or Gemm,
# the activation after it ("" none: not kept, see docs/audit.md), output width N, what the Linear reads: the model input (default), a Relu of it,
# a Concat of two inputs (not kept), a Relu or PRelu of a Linear of it.)
LINEAR_HEAD_OUTPUT_PACK = (
    ("mm_sig_1", "MatMul", "Sigmoid", 1), ("mm_sig_8", "MatMul", "Sigmoid", 8), ("mm_sig_16", "MatMul", "Sigmoid", 16),
    ("mm_sig_24", "MatMul", "Sigmoid", 24), ("mm_sig_32", "MatMul", "Sigmoid", 32), ("mm_relu_1", "MatMul", "Relu", 1),
    ("mm_relu_16", "MatMul", "Relu", 16), ("mmnb_sig_1", "MatMul nobias", "Sigmoid", 1), ("mmnb_sig_16", "MatMul nobias", "Sigmoid", 16),
    ("gemm_sig_8", "Gemm", "Sigmoid", 8), ("mm_tanh_1", "MatMul", "Tanh", 1), ("r_mm_sig_1", "MatMul", "Sigmoid", 1, "relu"),
    ("r_mm_sig_4", "MatMul", "Sigmoid", 4, "relu"), ("r_mm_relu_4", "MatMul", "Relu", 4, "relu"), ("l_mm_sig_1", "MatMul", "Sigmoid", 1, "linear"),
    ("l_mm_relu_4", "MatMul", "Relu", 4, "linear"),
)


def _linear_head_output_case(rng, spec) -> tuple[list, list, list, list]:
    name, op, act, n, source = (*spec, "input")[:5]
    p = f"lho_{name}_"
    node = _prefixed(p)
    inits = [_const(p + "w", _weights(rng, 64, n)), _const(p + "b", _weights(rng, n))]
    inputs = [_vi(p + "x", [1, 64])]
    nodes = []
    if source == "relu":
        nodes.append(node("Relu", ["x"], "src"))
    elif source in ("linear", "plinear"):
        inits += [_const(p + "w0", _weights(rng, 64, 64)), _const(p + "b0", _weights(rng, 64)), _const(p + "slope", np.full(64, 0.25, np.float32))]
        nodes += [node("MatMul", ["x", "w0"], "mm0"), node("Add", ["mm0", "b0"], "lin0"),
                  node("Relu", ["lin0"], "src") if source == "linear" else node("PRelu", ["lin0", "slope"], "src")]
    elif source == "concat":
        inputs = [_vi(p + "x", [1, 32]), _vi(p + "x2", [1, 32])]
        nodes.append(node("Concat", ["x", "x2"], "src", axis=1))
    x = "x" if source == "input" else "src"
    if op == "Gemm":
        nodes += [node("Gemm", [x, "w", "b"], "lin")]
    else:
        nodes += [node("MatMul", [x, "w"], "mm" if op == "MatMul" else "lin")]
        if op == "MatMul":
            nodes.append(node("Add", ["mm", "b"], "lin"))
    if act:
        nodes.append(node(act, ["lin"], "y"))
    else:
        nodes[-1].output[0] = p + "y"
    return nodes, inits, inputs, [_vi(p + "y", [1, n])]


CASES.append(Case("linear_head_output_pack", "fresh9: a Linear of a 2-D input (MatMul, bias Add or not, or Gemm), then a Sigmoid, Relu or Tanh as the [1, N] model output (openWakeWord's classifiers)",
                  lambda: _packed(_linear_head_output_case, LINEAR_HEAD_OUTPUT_PACK, 1909, used_only=True, opset=13), ("rk3588", "rk3566")))


# ---- fresh9 (openWakeWord's hey_mycroft) on RKNN: a bidirectional LSTM's directions squeezed and picked in time ---------

# tf2onnx's Keras Bidirectional(LSTM) over [1, 16, 96] (time-major after a Transpose [1, 0, 2]): the LSTM's output
# [T, 2, 1, H], each direction Sliced and Squeezed to [T, 1, H], then (tail) "pick": the backward direction's first
# step and the forward one's last, Sliced and Squeezed to [1, H], Concatenated [1, 2H] (hey_mycroft's second LSTM);
# "concat": the directions Concatenated along the features [T, 1, 2H] (its first LSTM); "fwd_pick": only the forward
# direction's last step. (name, hidden size H, tail)
LSTM_DIRECTIONS_PACK = (
    ("pick_32", 32, "pick"), ("pick_64", 64, "pick"), ("pick_16", 16, "pick"), ("pick_8", 8, "pick"),
    ("concat_32", 32, "concat"),
)


def _lstm_directions_case(rng, spec) -> tuple[list, list, list, list]:
    name, h, tail = spec
    p = f"lsd_{name}_"
    node = _prefixed(p)
    d, t = 24, 16
    inits = [_const(p + "W", _weights(rng, 2, 4 * h, d)), _const(p + "R", _weights(rng, 2, 4 * h, h)), _const(p + "B", _weights(rng, 2, 8 * h)),
             _const(p + "i0", np.array([0], np.int64)), _const(p + "i1", np.array([1], np.int64)), _const(p + "i2", np.array([2], np.int64)),
             _const(p + "im1", np.array([-1], np.int64)), _const(p + "big", np.array([2 ** 31 - 1], np.int64))]
    nodes = [node("Transpose", ["x"], "tm", perm=[1, 0, 2]),
             node("LSTM", ["tm", "W", "R", "B"], "seq", direction="bidirectional", hidden_size=h),
             node("Slice", ["seq", "i0", "i1", "i1"], "fwd"), node("Squeeze", ["fwd", "i1"], "fwd_sq")]
    if tail != "fwd_pick":
        nodes += [node("Slice", ["seq", "i1", "i2", "i1"], "bwd"), node("Squeeze", ["bwd", "i1"], "bwd_sq")]
    if tail == "concat":
        nodes.append(node("Concat", ["fwd_sq", "bwd_sq"], "y", axis=2))
        out = [t, 1, 2 * h]
    else:
        nodes += [node("Slice", ["fwd_sq", "im1", "big", "i0"], "fwd_last"), node("Squeeze", ["fwd_last", "i0"], "fwd_pick" if tail == "pick" else "y")]
        out = [1, h]
        if tail == "pick":
            nodes += [node("Slice", ["bwd_sq", "i0", "i1", "i0"], "bwd_first"), node("Squeeze", ["bwd_first", "i0"], "bwd_pick"),
                      node("Concat", ["fwd_pick", "bwd_pick"], "y", axis=1)]
            out = [1, 2 * h]
    return nodes, inits, [_vi(p + "x", [1, t, d])], [_vi(p + "y", out)]


CASES.append(Case("lstm_directions_pack", "fresh9: a bidirectional LSTM's directions Sliced, Squeezed, then picked in time or Concatenated (openWakeWord's hey_mycroft)",
                  lambda: _packed(_lstm_directions_case, LSTM_DIRECTIONS_PACK, 1910, used_only=True, opset=13), ("rk3588", "rk3566")))


# ---- fresh9 (openWakeWord's melspectrogram) on RKNN: two scalings in a row, a Clip at a computed floor, a Conv1d's
# result unsqueezed and swapped ------------------------------------------------------------------------------------

# openWakeWord's melspectrogram (torchlibrosa's power_to_db): 10 * log10(x) written as Log, Mul by 10, Div by ln(10);
# then the floor: Clip(x, ReduceMax(x) - 80, inf), its min a run-time scalar (ReduceMax, Sub, Cast); its STFT: two
# Conv1d [1, 1, 16000] -> [1, 257, 97], each Unsqueezed at 1 and Transposed [0, 1, 3, 2] into [1, 1, 97, 257], squared.
# (name, form, variant)
MEL_FORMS_PACK = (
    ("log_mul_div", "scale", "log mul div"), ("log_mul_mul", "scale", "log mul mul"), ("log_mul_sub", "scale", "log mul sub"),
    ("relu_mul_div", "scale", "relu mul div"), ("log_div_mul", "scale", "log div mul"),
    ("clip_cast", "floor", "cast"), ("clip_nocast", "floor", ""), ("clip_both", "floor", "max"),
)  # the "swap" form (variant: channels, reader) is not kept: docs/audit.md, measured, not modelled


def _mel_forms_case(rng, spec) -> tuple[list, list, list, list]:
    name, form, variant = spec
    p = f"mel_{name}_"
    node = _prefixed(p)
    inits = [_const(p + "k10", np.array(10.0, np.float32)), _const(p + "ln10", np.array(2.3025851, np.float32)), _const(p + "one", np.array(1.0, np.float32)),
             _const(p + "k80", np.array(80.0, np.float32)), _const(p + "inf", np.array(np.inf, np.float32)), _const(p + "ax1", np.array([1], np.int64)),
             _const(p + "two", np.array(2.0, np.float32))]
    if form == "scale":
        src, first, second = variant.split()
        nodes = [node("Relu", ["x"], "r"), node("Add", ["r", "one"], "r1")]
        nodes.append(node("Log", ["r1"], "s") if src == "log" else node("Relu", ["r1"], "s"))
        nodes.append(node("Mul" if first == "mul" else "Div", ["s", "k10"], "m"))
        nodes.append(node({"mul": "Mul", "div": "Div", "sub": "Sub"}[second], ["m", "ln10" if second != "sub" else "k80"], "y"))
        return nodes, inits, [_vi(p + "x", [1, 1, 16, 32])], [_vi(p + "y", [1, 1, 16, 32])]
    if form == "floor":
        nodes = [node("Relu", ["x"], "r"), node("ReduceMax", ["r"], "top", keepdims=0), node("Sub", ["top", "k80"], "low")]
        low = "low"
        if variant == "cast":
            nodes.append(node("Cast", ["low"], "lowc", to=TensorProto.FLOAT))
            low = "lowc"
        high = "top" if variant == "max" else "inf"
        nodes.append(node("Clip", ["r", low, high], "y"))
        return nodes, inits, [_vi(p + "x", [1, 1, 16, 32])], [_vi(p + "y", [1, 1, 16, 32])]
    channels, reader = variant
    inits.append(_const(p + "w", _weights(rng, channels, 1, 64)))
    nodes = [node("Conv", ["x", "w"], "c", kernel_shape=[64], strides=[16]), node("Unsqueeze", ["c", "ax1"], "u"),
             node("Transpose", ["u"], "t", perm=[0, 1, 3, 2])]
    nodes.append(node("Pow", ["t", "two"], "y") if reader == "Pow" else node("Relu", ["t"], "y"))
    frames = (1600 - 64) // 16 + 1
    return nodes, inits, [_vi(p + "x", [1, 1, 1600])], [_vi(p + "y", [1, 1, frames, channels])]


CASES.append(Case("mel_forms_pack", "fresh9: Log then two scalings, a Clip at a run-time floor, a Conv1d's result unsqueezed and swapped (openWakeWord's melspectrogram)",
                  lambda: _packed(_mel_forms_case, MEL_FORMS_PACK, 1911, used_only=True, opset=13), ("rk3588", "rk3566")))


# h18-rkmisc: FSMN's memory block after a LayerNorm that writes both its axis and its epsilon (the "norm_linear" sources
# above leave axis out, which moves every LayerNorm of a model to the CPU: layernorm_attribute_left_out), of the model
# input or of a Linear of it.
FSMN_LAYERNORM_AXIS_PACK = (("lnax", 100, 128, "norm_ax_linear", "cache", True, "linear", "4d"),
                            ("lnlax", 100, 128, "linear_norm_ax_linear", "cache", True, "linear", "4d"))
CASES.append(Case("fsmn_layernorm_axis_pack", "h18: FSMN's memory block after a LayerNorm with axis and epsilon written, of the input or of a Linear",
                  lambda: _packed(_fsmn_memory_case, FSMN_LAYERNORM_AXIS_PACK, 1801, used_only=True, opset=17), ("rk3566", "rk3588")))


# ---- fresh9 (kornia's YuNet): a detection head's levels flattened to rows and concatenated (h18-rkhead) -----------
# YuNet's four heads (Conv [1, C, s, s], C = 51 or 34) each: Transpose [0, 2, 3, 1], Reshape [1, -1] (a row), the rows
# Concatenated along axis 1, Reshape [1, -1, 17], Split [14, 2, 1]. (name, levels (side, C), swap, flatten, joined, after):
# swap: the Transpose or none; flatten "row" (Reshape [1, -1]), "flatten" (Flatten axis 1), "rows17" (Reshape
# [1, -1, 17] per level); joined: "concat" or "each" (each level alone); after: "frames" (Reshape [1, -1, 17] then
# Split), "split" (the Split of the rows17), "output" (the result is the model output), "gemm" (a Linear of each row).
# Held on RK3566 only: RK3588's row Reshapes (CPU or NPU by no rule found) and the maps flattened without the
# Transposes (swap False: some rows' Reshapes on the CPU, some on the NPU, on both chips) are measured, not
# modelled (docs/audit.md, "fresh9's YuNet ..."), so not in the pack.
YUNET_LEVEL_PACK = (
    ("yunet", ((16, 51), (8, 34), (4, 34), (2, 51)), True, "row", "concat", "frames"),
    ("aligned", ((8, 272), (4, 272)), True, "row", "concat", "frames"),
    ("concat_out", ((16, 51), (8, 34)), True, "row", "concat", "output"),
    ("each_out", ((8, 51), (4, 34)), True, "row", "each", "output"),
    ("each_frames", ((8, 51), (4, 34)), True, "row", "each", "frames"),
    ("flatten", ((16, 51), (8, 34)), True, "flatten", "concat", "frames"),
    ("rows17", ((16, 51), (8, 34)), True, "rows17", "concat", "split"),
    ("gemm", ((8, 51), (4, 34)), True, "row", "each", "gemm"),
    # the rows' lengths (side * side * C) aligned to 16 or not: 204 = 2*2*51 is not, 136 = 2*2*34 to 8 only
    ("all16", ((16, 51), (8, 34), (4, 34), (2, 68)), True, "row", "concat", "frames"),
    ("three16", ((16, 51), (8, 34), (4, 34)), True, "row", "concat", "frames"),
    ("two_204", ((16, 51), (2, 51)), True, "row", "concat", "frames"),
    ("two_136", ((16, 51), (2, 34)), True, "row", "concat", "frames"),
    ("out_204", ((16, 51), (2, 51)), True, "row", "concat", "output"),
)


def _yunet_level_case(rng, spec) -> tuple[list, list, list, list]:
    name, levels, swap, flatten, joined, after = spec
    p = f"yul_{name}_"
    node = _prefixed(p)
    inits = [_const(p + "row", np.array([1, -1], np.int64)), _const(p + "frames", np.array([1, -1, 17], np.int64)),
             _const(p + "parts", np.array([14, 2, 1], np.int64))]
    nodes, rows, outputs = [], [], []
    for i, (side, c) in enumerate(levels):
        stride = 16 // side
        inits.append(_const(f"{p}w{i}", _weights(rng, c, 8, stride, stride)))
        nodes.append(node("Conv", ["x", f"w{i}"], f"m{i}", kernel_shape=[stride, stride], strides=[stride, stride]))
        src = f"m{i}"
        if swap:
            nodes.append(node("Transpose", [src], f"t{i}", perm=[0, 2, 3, 1]))
            src = f"t{i}"
        if flatten == "flatten":
            nodes.append(node("Flatten", [src], f"r{i}", axis=1))
        else:
            nodes.append(node("Reshape", [src, "frames" if flatten == "rows17" else "row"], f"r{i}"))
        rows.append((f"r{i}", side * side * c))
    pieces = [("cat", sum(n for _, n in rows))] if joined == "concat" else rows
    if joined == "concat":
        nodes.append(node("Concat", [r for r, _ in rows], "cat", axis=1))
    for j, (src, length) in enumerate(pieces):
        if after == "output":
            outputs.append(_vi(p + src, [1, length]))
        elif after == "gemm":
            inits.append(_const(f"{p}g{j}", _weights(rng, length, 8)))
            nodes.append(node("MatMul", [src, f"g{j}"], f"y{j}"))
            outputs.append(_vi(f"{p}y{j}", [1, 8]))
        else:
            if after == "frames":
                nodes.append(node("Reshape", [src, "frames"], f"f{j}"))
                src = f"f{j}"
            nodes.append(helper.make_node("Split", [p + src, p + "parts"], [f"{p}box{j}", f"{p}cls{j}", f"{p}obj{j}"], name=f"{p}split{j}", axis=-1))
            outputs += [_vi(f"{p}{o}{j}", [1, length // 17, k]) for o, k in (("box", 14), ("cls", 2), ("obj", 1))]
    return nodes, inits, [_vi(p + "x", [1, 8, 16, 16])], outputs


CASES.append(Case("yunet_level_pack", "fresh9: a detection head's levels made channels-last, flattened to rows and concatenated (kornia's YuNet)",
                  lambda: _packed(_yunet_level_case, YUNET_LEVEL_PACK, 1801, opset=13), ("rk3566",)))


# ---- fresh9 (transformers' Nemotron): the repeated key/value head after partial rotary positions (h18-rkhead) ----
# Nemotron rotates the first half of each key head only and Concatenates the pass-through half back before
# repeat_kv. Sources (_partial_rotary): "partial" (the Linear's one key head, rotated on its first half),
# "halves" (a Relu of the first half instead), "partial_input4" (the same rotation of a model input [1, 1, T, D]).
GQA_PARTIAL_PACK = (
    ("partial_t32_h1_n2_d32", 32, 1, 2, 32, "hf", "attn", "partial"),
    ("partial_t64_h1_n4_d16", 64, 1, 4, 16, "hf", "attn", "partial"),
    ("partial_qk_t32_h1_n2_d32", 32, 1, 2, 32, "hf", "qk", "partial"),
    ("halves_t32_h1_n2_d32", 32, 1, 2, 32, "hf", "attn", "halves"),
    ("partial_expand4_t32_h1_n2_d32", 32, 1, 2, 32, "expand4", "attn", "partial"),
)
CASES.append(Case("gqa_partial_pack", "fresh9: grouped-query attention's one key head repeated after rotary positions on half of it (Nemotron)",
                  lambda: _packed(_gqa_case, GQA_PARTIAL_PACK, 1802, used_only=True), ("rk3588", "rk3566")))
# The same rotation of a model input [1, 1, T, D] (no Linear, no swap): the repeat on the NPU. On RK3588 only: on
# RK3566 the key's swap into q @ k^T ran on the CPU there (a swapped model input into q @ k^T, measured, not
# modelled: docs/audit.md).
CASES.append(Case("gqa_partial_input_pack", "fresh9: a model input's one key head rotated on its first half and repeated (Nemotron's form, no Linear)",
                  lambda: _packed(_gqa_case, (("partial_input4_t32_h1_n2_d32", 32, 1, 2, 32, "hf", "qk", "partial_input4"),), 1803, used_only=True),
                  ("rk3588",)))
# ---- fresh9 (openWakeWord's embedding) on RKNN: a Reshape that only moves unit axes, a Transpose to the toolkit -----

# tf2onnx writes the NHWC -> NCHW swap of a 1-channel map as a Reshape ([1, 76, 34, 1] -> [1, 1, 76, 34] before the
# first Conv) and the swap of the last Conv's [1, 96, 1, 1] back to NHWC as a Reshape to [1, 1, 1, 96] (the model
# output); Conv-TasNet's decoder output [2, 1, L] (a batch of 2 sources) is viewed as [1, 2, L], the model output.
# (name, the input's shape, what is viewed: the input, its Pad along axis 2, its Relu, a 1x1 Conv of it or a 1-D one
# to one channel, the view's shape, its reader: a 3x3 Conv, a Relu, a Reshape to [1, N], or none: the model output)
UNIT_AXES_VIEW_PACK = (
    ("oww_front", (1, 76, 32, 1), "pad", (1, 1, 76, 34), "conv"), ("input_front", (1, 76, 32, 1), "input", (1, 1, 76, 32), "conv"),
    ("relu_front", (1, 76, 32, 1), "relu", (1, 1, 76, 32), "conv"), ("oww_back", (1, 16, 1, 1), "conv", (1, 1, 1, 96), "output"),
    ("back_2d", (1, 16, 1, 1), "conv", (1, 96), "output"), ("channels_to_h", (1, 16, 1, 1), "conv", (1, 1, 96, 1), "output"),
    ("aligned_back", (1, 16, 1, 1), "conv", (1, 1, 1, 64), "output"), ("tasnet_back", (2, 8, 64), "conv1d", (1, 2, 64), "output"),
    ("back_then_flat", (1, 16, 1, 1), "conv", (1, 1, 1, 96), "reshape"),
)
# Measured, not held: read by a Relu, which the toolkit moves before the view (swap_reshape_relu). The 4-D view (as
# oww_back) is a CPU Transpose layer and the Relu (fused into the Conv) is placed on the CPU with it; the 3-D batch
# view (as tasnet_back) merges into the Relu's own 4-D views and is placed on the NPU. The audit (a Relu reader is
# not held by rules.view_moving_unit_axes_is_a_transpose): both on the NPU.
UNIT_AXES_VIEW_MEASURED = (("back_relu", (1, 16, 1, 1), "conv", (1, 1, 1, 96), "relu"),
                           ("batch_back_relu", (2, 8, 64), "conv1d", (1, 2, 64), "relu"))


def _unit_axes_view_case(rng, spec) -> tuple[list, list, list, list]:
    name, shape, maker, view, reader = spec
    p = f"uav_{name}_"
    node = _prefixed(p)
    out_c = 1 if maker == "conv1d" else int(np.prod(view))
    inits = [_const(p + "w1d", _weights(rng, 1, shape[1], 1)), _const(p + "shape", np.array(view, np.int64)), _const(p + "pads", np.array([0, 0, 1, 0, 0, 0, 1, 0], np.int64)),
             _const(p + "w1", _weights(rng, out_c, shape[1], 1, 1)), _const(p + "w3", _weights(rng, 8, view[1], 3, 3)) if len(view) == 4 else _const(p + "w3", np.zeros(1, np.float32))]
    nodes = {"pad": [node("Pad", ["x", "pads"], "made")], "relu": [node("Relu", ["x"], "made")], "conv": [node("Conv", ["x", "w1"], "made")],
             "conv1d": [node("Conv", ["x", "w1d"], "made")]}.get(maker, [])
    nodes.append(node("Reshape", ["made" if nodes else "x", "shape"], "view" if reader != "output" else "y"))
    if reader == "conv":
        nodes.append(node("Conv", ["view", "w3"], "y"))
        out = [1, 8, view[2] - 2, view[3] - 2]
    elif reader == "reshape":
        inits.append(_const(p + "flat", np.array([1, out_c], np.int64)))
        nodes.append(node("Reshape", ["view", "flat"], "y"))
        out = [1, out_c]
    elif reader == "relu":
        nodes.append(node("Relu", ["view"], "y"))
        out = list(view)
    else:
        out = list(view)
    return nodes, inits, [_vi(p + "x", list(shape))], [_vi(p + "y", out)]


CASES.append(Case("unit_axes_view_pack", "fresh9: a Reshape that only moves unit axes of a 4-D map (tf2onnx's NHWC swaps of 1-channel and 1x1 maps: openWakeWord's embedding)",
                  lambda: _packed(_unit_axes_view_case, UNIT_AXES_VIEW_PACK, 463, used_only=True, opset=13), ("rk3588", "rk3566")))


# ---- fresh9 (openWakeWord's melspectrogram) on RK3566: an STFT's swaps into the mel Linear --------------------------------

# Two Conv1d of one signal [1, 1, 1600] (kernel 64, stride 16: [1, C, 97]), each Unsqueezed at 1 and Transposed
# [0, 1, 3, 2] into [1, 1, 97, C], squared, the squares Added; then (tail) "mel": a MatMul [C, 32]; "sum": the sum as the
# output. (name, C, tail)
STFT_SWAP_PACK = (("mel_33", 33, "mel"), ("mel_257", 257, "mel"), ("sum_33", 33, "sum"))


def _stft_swap_case(rng, spec) -> tuple[list, list, list, list]:
    name, c, tail = spec
    p = f"stft_{name}_"
    node = _prefixed(p)
    inits = [_const(p + "w1", _weights(rng, c, 1, 64)), _const(p + "w2", _weights(rng, c, 1, 64)), _const(p + "ax", np.array([1], np.int64)),
             _const(p + "two", np.array(2.0, np.float32)), _const(p + "mel", np.abs(_weights(rng, c, 32)))]
    nodes = []
    for i in ("1", "2"):
        nodes += [node("Conv", ["x", "w" + i], "c" + i, kernel_shape=[64], strides=[16]), node("Unsqueeze", ["c" + i, "ax"], "u" + i),
                  node("Transpose", ["u" + i], "t" + i, perm=[0, 1, 3, 2]), node("Pow", ["t" + i, "two"], "p" + i)]
    nodes.append(node("Add", ["p1", "p2"], "s" if tail == "mel" else "y"))
    if tail == "mel":
        nodes.append(node("MatMul", ["s", "mel"], "y"))
    return nodes, inits, [_vi(p + "x", [1, 1, 1600])], [_vi(p + "y", [1, 1, 97, 32 if tail == "mel" else c])]


CASES.append(Case("stft_swap_pack", "fresh9: an STFT's two Conv1d results unsqueezed, swapped, squared and summed, into a mel MatMul or as the output (openWakeWord's melspectrogram)",
                  lambda: _packed(_stft_swap_case, STFT_SWAP_PACK, 1912, used_only=True, opset=13), ("rk3588", "rk3566")))


# ---- fresh10 (KeyNet, PSPNet) on RKNN: a linear Resize's size ratio -----------------------------------------------

# KeyNet's scale pyramid resizes (linear, half_pixel) 128 -> 106 -> 88 and back to 128 (CPU); PSPNet's pyramid
# resizes pooled maps 1, 2, 3, 6 -> 12 (linear, align_corners; 1 and 2 on the NPU, 3 and 6 on the CPU). A Conv's map
# [1, C, S, S] resized by sizes to [1, C, T, T], read by a Relu. (name, C, S, T, coordinate mode)
RESIZE_RATIO_PACK = (
    ("hp_32_27", 8, 32, 27, "half_pixel"), ("hp_27_32", 8, 27, 32, "half_pixel"), ("hp_32_16", 8, 32, 16, "half_pixel"),
    ("hp_16_32", 8, 16, 32, "half_pixel"), ("hp_32_48", 8, 32, 48, "half_pixel"), ("hp_48_32", 8, 48, 32, "half_pixel"),
    ("hp_16_48", 8, 16, 48, "half_pixel"), ("hp_128_106", 1, 128, 106, "half_pixel"), ("hp_106_128", 8, 106, 128, "half_pixel"),
    ("ac_1_12", 8, 1, 12, "align_corners"), ("ac_2_12", 8, 2, 12, "align_corners"), ("ac_3_12", 8, 3, 12, "align_corners"),
    ("ac_6_12", 8, 6, 12, "align_corners"), ("ac_3_13", 8, 3, 13, "align_corners"), ("ac_5_13", 8, 5, 13, "align_corners"),
    ("ac_4_12", 8, 4, 12, "align_corners"), ("ac_2_7", 8, 2, 7, "align_corners"), ("ac_8_15", 8, 8, 15, "align_corners"),
)


def _resize_ratio_case(rng, spec) -> tuple[list, list, list, list]:
    name, c, s, t, coordinates, *mode = spec
    th, tw = t if isinstance(t, tuple) else (t, t)
    p = f"rr_{name}_"
    node = _prefixed(p)
    inits = [_const(p + "w", _weights(rng, c, c, 1, 1)), _const(p + "size", np.array([1, c, th, tw], np.int64))]
    nodes = [node("Conv", ["x", "w"], "map"),
             helper.make_node("Resize", [p + "map", "", "", p + "size"], [p + "resized"], name=p + "resized", mode=mode[0] if mode else "linear",
                              coordinate_transformation_mode=coordinates),
             node("Relu", ["resized"], "y")]
    return nodes, inits, [_vi(p + "x", [1, c, s, s])], [_vi(p + "y", [1, c, th, tw])]


CASES.append(Case("resize_ratio_pack", "fresh10: a linear Resize by a size ratio that is or is not whole (KeyNet's pyramid, PSPNet's pooled levels)",
                  lambda: _packed(_resize_ratio_case, RESIZE_RATIO_PACK, 1010, opset=13), ("rk3588", "rk3566")))

# The same, one axis whole and the other not, in the other coordinate modes, and nearest: (..., mode).
RESIZE_RATIO_PACK_2 = (
    ("hp_mixed", 8, 32, (64, 27), "half_pixel"), ("ac_mixed", 8, 3, (13, 12), "align_corners"), ("php_32_27", 8, 32, 27, "pytorch_half_pixel"),
    ("asym_32_27", 8, 32, 27, "asymmetric"), ("asym_16_32", 8, 16, 32, "asymmetric"), ("nearest_32_27", 8, 32, 27, "asymmetric", "nearest"),
    ("nearest_hp_27_32", 8, 27, 32, "half_pixel", "nearest"),
)
CASES.append(Case("resize_ratio_pack_2", "fresh10: a Resize by a size ratio that is whole along one axis only, or in other modes",
                  lambda: _packed(_resize_ratio_case, RESIZE_RATIO_PACK_2, 1014, opset=13), ("rk3588", "rk3566")))


# ---- fresh10 (RetinaFace) on RK3588: a detection head's channels-last levels concatenated into a Softmax -----------

# RetinaFace's class head: levels [1, 4, S, S] (2 anchors x 2 classes) Transposed [0, 2, 3, 1], Reshaped [1, -1, 2],
# concatenated, a Softmax over the last axis as the model's output (its Reshapes on RK3588's CPU; its box and
# landmark heads, d = 4 and 10, concatenated as outputs: NPU). (name, d, reader: "softmax" or "concat", Softmax axis)
LEVELS_SOFTMAX_PACK = (("s2", 2, "softmax", -1), ("s4", 4, "softmax", -1), ("c2", 2, "concat", -1), ("s10", 10, "softmax", -1), ("s2_axis1", 2, "softmax", 1))
# The same levels concatenated into a Sigmoid or into a Softmax that a Relu reads (not the output); (_3) one level
# Reshaped straight into a Softmax (no Concat): RK3588 alone, as RK3566 runs that Reshape on its NPU (the Transpose
# and the Softmax on the CPU), which the audit does not model (docs/audit.md).
LEVELS_SOFTMAX_PACK_2 = (("sig2", 2, "sigmoid", -1), ("srelu2", 2, "softmax_relu", -1))
LEVELS_SOFTMAX_PACK_3 = (("one2", 2, "one_softmax", -1),)


def _levels_softmax_case(rng, spec) -> tuple[list, list, list, list]:
    name, d, reader, axis = spec
    p = f"ls_{name}_"
    node = _prefixed(p)
    inits, nodes, pieces, total = [], [], [], 0
    for i, side in enumerate((20,) if reader == "one_softmax" else (20, 10, 5)):
        stride = 20 // side
        inits += [_const(f"{p}w{i}", _weights(rng, 2 * d, 16, stride, stride)), _const(f"{p}s{i}", np.array([1, -1, d], np.int64))]
        nodes += [node("Conv", ["x", f"w{i}"], f"m{i}", kernel_shape=[stride, stride], strides=[stride, stride]),
                  node("Transpose", [f"m{i}"], f"t{i}", perm=[0, 2, 3, 1]), node("Reshape", [f"t{i}", f"s{i}"], f"f{i}")]
        pieces.append(f"f{i}")
        total += side * side * 2
    if reader == "one_softmax":
        nodes.append(node("Softmax", ["f0"], "y", axis=axis))
        return nodes, inits, [_vi(p + "x", [1, 16, 20, 20])], [_vi(p + "y", [1, total, d])]
    nodes.append(node("Concat", pieces, "y" if reader == "concat" else "cat", axis=1))
    if reader == "softmax":
        nodes.append(node("Softmax", ["cat"], "y", axis=axis))
    elif reader == "sigmoid":
        nodes.append(node("Sigmoid", ["cat"], "y"))
    elif reader == "softmax_relu":
        nodes += [node("Softmax", ["cat"], "probs", axis=axis), node("Relu", ["probs"], "y")]
    return nodes, inits, [_vi(p + "x", [1, 16, 20, 20])], [_vi(p + "y", [1, total, d])]


CASES.append(Case("levels_softmax_pack", "fresh10: a detection head's channels-last levels concatenated, then a Softmax as the output (RetinaFace's class head)",
                  lambda: _packed(_levels_softmax_case, LEVELS_SOFTMAX_PACK, 1011, opset=13), ("rk3588", "rk3566")))
CASES.append(Case("levels_softmax_pack_2", "fresh10: a detection head's channels-last levels concatenated into a Sigmoid or an inner Softmax",
                  lambda: _packed(_levels_softmax_case, LEVELS_SOFTMAX_PACK_2, 1015, opset=13), ("rk3588", "rk3566")))
CASES.append(Case("levels_softmax_pack_3", "fresh10: a detection head's channels-last level straight into a Softmax",
                  lambda: _packed(_levels_softmax_case, LEVELS_SOFTMAX_PACK_3, 1016, opset=13), ("rk3588",)))


# ---- fresh10 (CREPE) on RK3566: a 2-D model input unsqueezed into a map for a Conv ---------------------------------

# CREPE's frames [1, 1024]: Unsqueeze 1 -> [1, 1, 1024], Unsqueeze 3 -> [1, 1, 1024, 1], a constant Pad, a Conv of
# kernel (512, 1) (both Unsqueezes on RK3566's CPU). The model input [1, L] made [1, 1, L, 1] or [1, 1, 1, L] by
# (name, L, how, reader): "two" Unsqueezes, "one" Unsqueeze of axes [1, 3] / [1, 2], or a "reshape"; read by a
# "pad_conv" (the Pad then a Conv), a "conv" or a "relu".
INPUT_TO_MAP_PACK = (("crepe", 256, "two", "pad_conv", "h"), ("two_conv", 256, "two", "conv", "h"), ("one_conv", 256, "one", "conv", "h"),
                     ("reshape_conv", 256, "reshape", "conv", "h"), ("two_relu", 256, "two", "relu", "h"), ("two_conv_w", 256, "two", "conv", "w"))


def _input_to_map_case(rng, spec) -> tuple[list, list, list, list]:
    name, length, how, reader, along = spec
    p = f"im_{name}_"
    node = _prefixed(p)
    last = 3 if along == "h" else 2
    shape = [1, 1, length, 1] if along == "h" else [1, 1, 1, length]
    kernel = [16, 1] if along == "h" else [1, 16]
    strides = [4, 1] if along == "h" else [1, 4]
    inits = [_const(p + "a1", np.array([1], np.int64)), _const(p + "a2", np.array([last], np.int64)), _const(p + "a12", np.array([1, last], np.int64)),
             _const(p + "shape", np.array(shape, np.int64)), _const(p + "w", _weights(rng, 16, 1, *kernel)),
             _const(p + "pads", np.array([0, 0, 8, 0, 0, 0, 7, 0] if along == "h" else [0, 0, 0, 8, 0, 0, 0, 7], np.int64))]
    if how == "two":
        nodes = [node("Unsqueeze", ["x", "a1"], "u1"), node("Unsqueeze", ["u1", "a2"], "m")]
    elif how == "one":
        nodes = [node("Unsqueeze", ["x", "a12"], "m")]
    else:
        nodes = [node("Reshape", ["x", "shape"], "m")]
    source, out = "m", list(shape)
    if reader == "pad_conv":
        nodes.append(node("Pad", ["m", "pads"], "padded", mode="constant"))
        source = "padded"
    if reader in ("pad_conv", "conv"):
        nodes.append(node("Conv", [source, "w"], "y", kernel_shape=kernel, strides=strides))
        padded = length + (15 if reader == "pad_conv" else 0)
        steps = (padded - 16) // 4 + 1
        out = [1, 16, steps, 1] if along == "h" else [1, 16, 1, steps]
    else:
        nodes.append(node("Relu", ["m"], "y"))
    return nodes, inits, [_vi(p + "x", [1, length])], [_vi(p + "y", out)]


CASES.append(Case("input_to_map_pack", "fresh10: a 2-D model input unsqueezed into a one-channel map for a Conv (CREPE's frames)",
                  lambda: _packed(_input_to_map_case, INPUT_TO_MAP_PACK, 1012, used_only=True, opset=13), ("rk3588", "rk3566")))


# ---- fresh10 (TabNet) on RKNN and i.MX 93: a reduction without keepdims, then an Unsqueeze of the reduced axis -----

# TabNet's sparsemax counts its support: a Greater, a Cast to int64, ReduceSum(axis -1, keepdims 0) [B], Unsqueeze -1
# [B, 1], then a Sub of one and a Cast back to float (the Unsqueeze: not in the toolkit's layer table, nor in the
# i.MX 93's). (name, dtype: "int" the count, Sub of one, Cast to float as the output / "float" a Relu's sums taken
# from x, Unsqueeze axis). Left out after the first probes (docs/audit.md, not modelled): the int count's Cast read
# by a Div of x (RKNN NPU, where the audit says CPU) and the float sums unsqueezed to [1, 4], then a Relu or a Sub
# of a constant as the output (RKNN CPU, where the audit says NPU).
REDUCED_UNSQUEEZE_PACK = (("int_last", "int", -1), ("float_last", "float", -1), ("int_first", "int", 0))


def _reduced_unsqueeze_case(rng, spec) -> tuple[list, list, list, list]:
    name, dtype, axis, *rows = spec
    if rows:  # a 3-D input [1, 4, 16]: the count [1, 4] unsqueezed (_2)
        return _reduced_unsqueeze_3d_case(rng, name, axis)
    p = f"ru_{name}_"
    node = _prefixed(p)
    inits = [_const(p + "axes", np.array([-1], np.int64)), _const(p + "ax", np.array([axis], np.int64)), _const(p + "half", np.array(0.5, np.float32)),
             _const(p + "one", np.array(1, np.int64))]
    nodes = [node("Relu", ["x"], "r")]
    if dtype == "int":
        nodes += [node("Greater", ["r", "half"], "g"), node("Cast", ["g"], "gi", to=TensorProto.INT64), node("ReduceSum", ["gi", "axes"], "s", keepdims=0),
                  node("Unsqueeze", ["s", "ax"], "u"), node("Sub", ["u", "one"], "k"), node("Cast", ["k"], "y", to=TensorProto.FLOAT)]
        out = [4, 1] if axis == -1 else [1, 4]
    else:
        nodes += [node("ReduceSum", ["r", "axes"], "s", keepdims=0), node("Unsqueeze", ["s", "ax"], "u"),
                  node("Sub", ["r", "u"], "y")]
        out = [4, 16]
    return nodes, inits, [_vi(p + "x", [4, 16])], [_vi(p + "y", out)]


# The same count of a 3-D input [1, 4, 16]: [1, 4] unsqueezed at -1 (the reduced axis back) or at 0, a Sub of one, a
# Cast to float as the output.
REDUCED_UNSQUEEZE_PACK_2 = (("int3_last", "int", -1, "3d"), ("int3_first", "int", 0, "3d"))


def _reduced_unsqueeze_3d_case(rng, name, axis) -> tuple[list, list, list, list]:
    p = f"ru_{name}_"
    node = _prefixed(p)
    inits = [_const(p + "axes", np.array([-1], np.int64)), _const(p + "ax", np.array([axis], np.int64)), _const(p + "half", np.array(0.5, np.float32)),
             _const(p + "one", np.array(1, np.int64))]
    nodes = [node("Relu", ["x"], "r"), node("Greater", ["r", "half"], "g"), node("Cast", ["g"], "gi", to=TensorProto.INT64),
             node("ReduceSum", ["gi", "axes"], "s", keepdims=0), node("Unsqueeze", ["s", "ax"], "u"), node("Sub", ["u", "one"], "k"),
             node("Cast", ["k"], "y", to=TensorProto.FLOAT)]
    return nodes, inits, [_vi(p + "x", [1, 4, 16])], [_vi(p + "y", [1, 4, 1] if axis == -1 else [1, 1, 4])]


CASES.append(Case("reduced_unsqueeze_pack_2", "fresh10: a ReduceSum without keepdims of a 3-D count, then an Unsqueeze (TabNet's sparsemax support count, one rank up)",
                  lambda: _packed(_reduced_unsqueeze_case, REDUCED_UNSQUEEZE_PACK_2, 1018, used_only=True, opset=13), ("rk3588", "rk3566")))
CASES.append(Case("reduced_unsqueeze_pack", "fresh10: a ReduceSum without keepdims, then an Unsqueeze of the reduced axis (TabNet's sparsemax support count)",
                  lambda: _packed(_reduced_unsqueeze_case, REDUCED_UNSQUEEZE_PACK, 1013, used_only=True, opset=13), ("rk3588", "rk3566", "imx93")))


# ---- fresh10 (KeyNet) on RKNN: a shape-keeping Reshape of a result another node reads too ---------------------------

# KeyNet's spatial gradient views its resized image [1, 1, 106, 106] as [1, 1, 106, 106] (a Reshape to its own shape)
# while a Pad reads the Resize's result too; the Resize on the CPU, the Reshape with it. A Conv's [1, 8, 16, 16]
# made by (name, producer: "mish" CPU / "relu" NPU / "resize" 16 -> 13 linear CPU, shared: whether a Sigmoid reads
# the producer's result beside the Reshape), the Reshape's view read by a Relu.
SHARED_SAME_SHAPE_PACK = (("mish_shared", "mish", True), ("relu_shared", "relu", True), ("resize_shared", "resize", True), ("resize_only", "resize", False))


def _shared_same_shape_case(rng, spec) -> tuple[list, list, list, list]:
    name, producer, shared = spec
    p = f"sss_{name}_"
    node = _prefixed(p)
    side = 13 if producer == "resize" else 16
    inits = [_const(p + "w", _weights(rng, 8, 8, 1, 1)), _const(p + "size", np.array([1, 8, 13, 13], np.int64)),
             _const(p + "view", np.array([1, 8, side, side], np.int64))]
    nodes = [node("Conv", ["x", "w"], "map")]
    if producer == "resize":
        nodes.append(helper.make_node("Resize", [p + "map", "", "", p + "size"], [p + "made"], name=p + "made", mode="linear", coordinate_transformation_mode="half_pixel"))
    else:
        nodes.append(node("Mish" if producer == "mish" else "Relu", ["map"], "made"))
    nodes += [node("Reshape", ["made", "view"], "v"), node("Relu", ["v"], "y")]
    outputs = [_vi(p + "y", [1, 8, side, side])]
    if shared:
        nodes.append(node("Sigmoid", ["made"], "y2"))
        outputs.append(_vi(p + "y2", [1, 8, side, side]))
    return nodes, inits, [_vi(p + "x", [1, 8, 16, 16])], outputs


CASES.append(Case("shared_same_shape_pack", "fresh10: a Reshape that keeps its input's shape, of a result another node reads too (KeyNet's spatial gradient after its CPU Resize)",
                  lambda: _packed(_shared_same_shape_case, SHARED_SAME_SHAPE_PACK, 1017, opset=18), ("rk3588", "rk3566")))
# ---- fresh10 (AIMv2 on the ESP32-S3): attention esp-ppq exports as one Attention layer ----------------------------------

def attention_layer_esp(variant: str) -> onnx.ModelProto:
    """q, k, v from one [1, 16, 2 * D] token input (through a Relu) by three MatMuls, split into 2 heads ([1, 16, 2, D],
    q and v Transposed [0, 2, 1, 3], k [0, 2, 3, 1] as AIMv2 writes it), q @ k^T * D^-0.5, Softmax, @ v, merged
    back and projected: "d32" (head size 32), "d128" (128, above esp-ppq's Attention limit of 64), "rank2"
    (one head, 2-D q [16, 32] and k^T by a 2-D Transpose: no 3-D or 4-D attention)."""
    rng = np.random.default_rng(2710)
    d = 128 if variant == "d128" else 32
    heads, tokens, width = (1, 16, d) if variant == "rank2" else (2, 16, 2 * d)
    inits = [_const(f"w{i}", (_weights(rng, width, width) / np.sqrt(width)).astype(np.float32)) for i in "qkvo"] + [_const("scale", np.array(d ** -0.5, np.float32))]
    nodes = [helper.make_node("Relu", ["x"], ["rx"], name="relu_x")] + [helper.make_node("MatMul", ["rx", f"w{i}"], [f"p{i}"], name=f"{i}_proj") for i in "qkv"]
    if variant == "rank2":
        inits += [_const("flat", np.array([tokens, d], np.int64)), _const("back", np.array([1, tokens, d], np.int64))]
        nodes += [helper.make_node("Reshape", [f"p{i}", "flat"], [i], name=f"{i}_flat") for i in "qkv"]
        nodes.append(helper.make_node("Transpose", ["k"], ["kt"], name="k_t", perm=[1, 0]))
        tail = [helper.make_node("Reshape", ["ctx", "back"], ["merged"], name="merge")]
    else:
        inits += [_const("split", np.array([1, tokens, heads, d], np.int64)), _const("back", np.array([1, tokens, width], np.int64))]
        nodes += [helper.make_node("Reshape", [f"p{i}", "split"], [f"s{i}"], name=f"{i}_split") for i in "qkv"]
        nodes += [helper.make_node("Transpose", ["sq"], ["q"], name="q_t", perm=[0, 2, 1, 3]), helper.make_node("Transpose", ["sv"], ["v"], name="v_t", perm=[0, 2, 1, 3]),
                  helper.make_node("Transpose", ["sk"], ["kt"], name="k_t", perm=[0, 2, 3, 1])]
        tail = [helper.make_node("Transpose", ["ctx"], ["ctx_t"], name="ctx_t", perm=[0, 2, 1, 3]), helper.make_node("Reshape", ["ctx_t", "back"], ["merged"], name="merge")]
    nodes += [helper.make_node("MatMul", ["q", "kt"], ["scores"], name="scores"), helper.make_node("Mul", ["scores", "scale"], ["scaled"], name="scale_mul"),
              helper.make_node("Softmax", ["scaled"], ["probs"], name="softmax", axis=-1), helper.make_node("MatMul", ["probs", "v"], ["ctx"], name="context"),
              *tail, helper.make_node("MatMul", ["merged", "wo"], ["y"], name="out_proj")]
    return _model(nodes, [_vi("x", [1, tokens, width])], [_vi("y", [1, tokens, width])], inits, opset=14)


CASES += [Case(f"attention_layer_esp_{v}", "fresh10: attention esp-ppq fuses into one Attention layer, which ESP-DL 3.3.9's runtime has no module for (AIMv2)",
               lambda v=v: attention_layer_esp(v), ("esp32s3",)) for v in ("d32", "d128", "rank2")]


# ---- fresh10 (MODNet on the i.MX 93): a squeeze-and-excitation weight Expanded to the map before its Mul -----------------

def se_expand_imx(variant: str) -> onnx.ModelProto:
    """MODNet's SEBlock on a [1, C, H, W] input (a Conv, Relu): GlobalAveragePool, Reshape [1, C], a MatMul, Sigmoid,
    Reshape [1, C, 1, 1], then `w.expand_as(x)` (an Expand to Shape(x)) and x * w. "c32_h8" (C 32, 8x8),
    "c1280_h4" (MODNet's C 1280, 4x4), "c32_h8_bcast" (the Mul broadcasts the [1, C, 1, 1] weight itself, no Expand),
    "c32_h8_const" (an Expand to a constant shape)."""
    rng = np.random.default_rng(2711)
    c, h = (1280, 4) if variant.startswith("c1280") else (32, 8)
    inits = [_const("wc", (_weights(rng, c, c, 1, 1) / np.sqrt(c)).astype(np.float32)), _const("fc", (_weights(rng, c, c) / np.sqrt(c)).astype(np.float32)), _const("flat", np.array([1, c], np.int64)),
             _const("unflat", np.array([1, c, 1, 1], np.int64)), _const("full", np.array([1, c, h, h], np.int64))]
    nodes = [helper.make_node("Conv", ["x", "wc"], ["cx"], name="conv"), helper.make_node("Relu", ["cx"], ["a"], name="relu"),
             helper.make_node("GlobalAveragePool", ["a"], ["g"], name="pool"), helper.make_node("Reshape", ["g", "flat"], ["gf"], name="flat"),
             helper.make_node("MatMul", ["gf", "fc"], ["f"], name="fc"), helper.make_node("Sigmoid", ["f"], ["s"], name="sigmoid"),
             helper.make_node("Reshape", ["s", "unflat"], ["w"], name="unflat")]
    if variant.endswith("_bcast"):
        nodes.append(helper.make_node("Mul", ["a", "w"], ["y"], name="se_mul"))
    else:
        if variant.endswith("_const"):
            shape = "full"
        else:
            nodes.append(helper.make_node("Shape", ["a"], ["shape"], name="shape"))
            shape = "shape"
        nodes += [helper.make_node("Expand", ["w", shape], ["we"], name="expand"), helper.make_node("Mul", ["a", "we"], ["y"], name="se_mul")]
    return _model(nodes, [_vi("x", [1, c, h, h])], [_vi("y", [1, c, h, h])], inits, opset=13)


CASES += [Case(f"se_expand_imx_{v}", "fresh10: a squeeze-and-excitation weight Expanded to its map before the Mul (MODNet's SEBlock)",
               lambda v=v: se_expand_imx(v), ("imx93",)) for v in ("c32_h8", "c1280_h4", "c32_h8_bcast", "c32_h8_const")]


# ---- fresh10 (NAFNet on the i.MX 93): LayerNorm2d's two channel means, after an Add or a Conv ----------------------------

# NAFNet's LayerNorm2d over the channels of a [1, C, H, H] map: mu = mean(x, 1), d = x - mu, var = mean(d ** 2, 1),
# d / sqrt(var + eps), then * weight + bias ([1, C, 1, 1]). x is an Add of two Convs' results ("add", NAFBlock's
# y = inp + x * beta) or one Conv's result ("conv"). (name, C, H, source)
LAYERNORM2D_PACK = (("add_c16_h8", 16, 8, "add"), ("add_c32_h16", 32, 16, "add"), ("add_c16_h32", 16, 32, "add"), ("add_c32_h32", 32, 32, "add"),
                    ("add_c16_h16", 16, 16, "add"), ("add_c8_h8", 8, 8, "add"), ("conv_c16_h8", 16, 8, "conv"), ("conv_c32_h32", 32, 32, "conv"))


def _layernorm2d_case(rng, spec) -> tuple[list, list, list, list]:
    name, c, h, source = spec
    p = f"ln2d_{name}_"
    node = _prefixed(p)
    inits = [_const(p + "w1", _weights(rng, c, c, 1, 1)), _const(p + "w2", _weights(rng, c, c, 3, 3)), _const(p + "two", np.array(2.0, np.float32)),
             _const(p + "eps", np.array(1e-6, np.float32)), _const(p + "g", np.abs(_weights(rng, 1, c, 1, 1)) + 0.5), _const(p + "b", _weights(rng, 1, c, 1, 1))]
    nodes = [node("Conv", ["x", "w1"], "c1")]
    if source == "add":
        nodes += [node("Conv", ["c1", "w2"], "c2", pads=[1, 1, 1, 1]), node("Add", ["c1", "c2"], "s")]
    x = "s" if source == "add" else "c1"
    nodes += [node("ReduceMean", [x], "mu", axes=[1], keepdims=1), node("Sub", [x, "mu"], "d"), node("Pow", ["d", "two"], "sq"),
              node("ReduceMean", ["sq"], "var", axes=[1], keepdims=1), node("Add", ["var", "eps"], "ve"), node("Sqrt", ["ve"], "sd"),
              node("Div", ["d", "sd"], "n"), node("Mul", ["n", "g"], "ng"), node("Add", ["ng", "b"], "y")]
    return nodes, inits, [_vi(p + "x", [1, c, h, h])], [_vi(p + "y", [1, c, h, h])]


CASES.append(Case("layernorm2d_imx_pack", "fresh10: NAFNet's LayerNorm2d (two channel means) after an Add or a Conv, square and cube maps",
                  lambda: _packed(_layernorm2d_case, LAYERNORM2D_PACK, 2712, opset=13), ("imx93",)))


# ---- fresh10 (MODNet on the i.MX 93): IBNorm, a BatchNormalization of one half of the channels, an InstanceNormalization
# of the other ---------------------------------------------------------------------------------------------------------

def ibnorm_imx(variant: str) -> onnx.ModelProto:
    """MODNet's Conv2dIBNormRelu on a [1, 3, 32, 32] input: a Conv to 16 channels, then "slice" (channels 0-7 Sliced
    into a BatchNormalization, 8-15 into an InstanceNormalization without affine parameters (scale ones, bias zeros),
    Concatenated, Relu: MODNet's IBNorm), "slice_affine" (the same with learnt scale and bias), "whole" (the
    InstanceNormalization, no affine, of all 16 channels, no Slice), "in_lo" / "in_hi" (channels 0-7 / 8-15
    Sliced into the InstanceNormalization, then the Relu: no BatchNormalization, no Concat), "in_lo_relu" (a Relu
    between the Slice and the InstanceNormalization), "whole_c8" (the Conv to 8 channels, all instance-normalised:
    the halves' channel count without a Slice)."""
    rng = np.random.default_rng(2713)
    c, half = (8, 4) if variant == "whole_c8" else (16, 8)
    affine = variant == "slice_affine"
    inits = [_const("w", _weights(rng, c, 3, 3, 3)), _const("bw", np.abs(_weights(rng, half)) + 0.5), _const("bb", _weights(rng, half)),
             _const("bm", _weights(rng, half)), _const("bv", np.abs(_weights(rng, half)) + 0.5),
             _const("s0", np.array([0], np.int64)), _const("s1", np.array([half], np.int64)), _const("s2", np.array([c], np.int64)), _const("ax", np.array([1], np.int64))]
    n_in = c if variant.startswith("whole") else half
    inits += [_const("ig", (np.abs(_weights(rng, n_in)) + 0.5) if affine else np.ones(n_in, np.float32)), _const("ib", _weights(rng, n_in) if affine else np.zeros(n_in, np.float32))]
    nodes = [helper.make_node("Conv", ["x", "w"], ["cx"], name="conv", pads=[1, 1, 1, 1])]
    if variant.startswith("whole"):
        nodes += [helper.make_node("InstanceNormalization", ["cx", "ig", "ib"], ["n"], name="inorm")]
    elif variant.startswith(("in_lo", "in_hi")):  # one half Sliced into the InstanceNormalization alone (through a Relu)
        bounds = ["s0", "s1"] if variant.startswith("in_lo") else ["s1", "s2"]
        nodes.append(helper.make_node("Slice", ["cx", *bounds, "ax"], ["part"], name="slice_in"))
        if variant.endswith("_relu"):
            nodes.append(helper.make_node("Relu", ["part"], ["part_r"], name="relu_in"))
        nodes.append(helper.make_node("InstanceNormalization", ["part_r" if variant.endswith("_relu") else "part", "ig", "ib"], ["n"], name="inorm"))
    else:
        nodes += [helper.make_node("Slice", ["cx", "s0", "s1", "ax"], ["lo"], name="slice_bn"), helper.make_node("Slice", ["cx", "s1", "s2", "ax"], ["hi"], name="slice_in"),
                  helper.make_node("BatchNormalization", ["lo", "bw", "bb", "bm", "bv"], ["bn"], name="bnorm"),
                  helper.make_node("InstanceNormalization", ["hi", "ig", "ib"], ["inn"], name="inorm"), helper.make_node("Concat", ["bn", "inn"], ["n"], name="concat", axis=1)]
    nodes.append(helper.make_node("Relu", ["n"], ["y"], name="relu"))
    return _model(nodes, [_vi("x", [1, 3, 32, 32])], [_vi("y", [1, half if variant.startswith("in_") else c, 32, 32])], inits, opset=13)


CASES += [Case(f"ibnorm_imx_{v}", "fresh10: MODNet's IBNorm, half the channels batch-normalised and half instance-normalised",
               lambda v=v: ibnorm_imx(v), ("imx93",)) for v in ("slice", "slice_affine", "whole", "in_lo", "in_hi", "in_lo_relu", "whole_c8")]


# ---- fresh10 (CREPE tiny on the i.MX 93): a Conv with a tall kernel, then Relu and BatchNormalization ---------------------

def tall_kernel_conv_imx(variant: str) -> onnx.ModelProto:
    """CREPE's first layer on a [1, 1, H, 1] frame: a Conv with a kernel of K x 1 and stride 4 x 1 (no pads), Relu,
    BatchNormalization, MaxPool 2 x 1: "k512" (CREPE's 512 on H 1024), "k256" (256 on H 1024), "k257" (257), 16
    channels; "k512_c128" (CREPE tiny's 128 channels), "k512_c128_pad" (and CREPE's Pad of 254 above and below first)."""
    rng = np.random.default_rng(2714)
    k = int(variant[1:].split("_")[0])
    c = 128 if "_c128" in variant else 16
    pad = 254 if variant.endswith("_pad") else 0
    inits = [_const("w", (_weights(rng, c, 1, k, 1) / np.sqrt(k)).astype(np.float32)), _const("b", _weights(rng, c)),
             _const("g", np.abs(_weights(rng, c)) + 0.5), _const("beta", _weights(rng, c)), _const("m", _weights(rng, c)), _const("v", np.abs(_weights(rng, c)) + 0.5)]
    nodes = [helper.make_node("Pad", ["x", "pads"], ["xp"], name="pad")] if pad else []
    inits += [_const("pads", np.array([0, 0, pad, 0, 0, 0, pad, 0], np.int64))] if pad else []
    nodes += [helper.make_node("Conv", ["xp" if pad else "x", "w", "b"], ["cx"], name="conv", kernel_shape=[k, 1], strides=[4, 1]), helper.make_node("Relu", ["cx"], ["r"], name="relu"),
             helper.make_node("BatchNormalization", ["r", "g", "beta", "m", "v"], ["bn"], name="bn", epsilon=1e-3),
             helper.make_node("MaxPool", ["bn"], ["y"], name="pool", kernel_shape=[2, 1], strides=[2, 1])]
    h = (1024 + 2 * pad - k) // 4 + 1
    return _model(nodes, [_vi("x", [1, 1, 1024, 1])], [_vi("y", [1, c, h // 2, 1])], inits, opset=13)


CASES += [Case(f"tall_kernel_conv_imx_{v}", "fresh10: a Conv with a kernel taller than 256, then Relu (CREPE's first layer)",
               lambda v=v: tall_kernel_conv_imx(v), ("imx93",)) for v in ("k512", "k256", "k257", "k512_c128", "k512_c128_pad")]




# ---- fresh10 (SAFMN's LayerNorm over the channels) on RKNN: a layer norm written out over axis 1 of a map -------------------

# h19-rknorm. SAFMN (and NAFNet, ConvNeXt's channels-first norm) write LayerNorm2d as u = x.mean(1), s = (x - u).pow(2).mean(1),
# (x - u) / sqrt(s + eps), then weight[:, None, None] * x + bias[:, None, None]. Each case: a Conv of the input, the norm
# over `axis` of its [1, C, *rest] map, the affine (`affine`: "first" weight * x + bias as SAFMN writes it, "second" x * weight
# + bias, "none"), then a Conv (kernel 1; for rank 3 a Conv1d). (name, C, rest, axis, affine)
CHANNEL_NORM_PACK = (
    ("c36_64_first", 36, (64, 64), 1, "first"), ("c32_16_first", 32, (16, 16), 1, "first"), ("c32_16_second", 32, (16, 16), 1, "second"),
    ("c32_16_none", 32, (16, 16), 1, "none"), ("c32_16_axis2", 32, (16, 16), 2, "first"), ("c32_16_last", 32, (16, 16), 3, "first"),
    ("c32_t100_first", 32, (100,), 1, "first"),
)


def _channel_norm_case(rng, spec) -> tuple[list, list, list, list]:
    name, c, rest, axis, affine = spec
    p = f"chn_{name}_"
    node = _prefixed(p)
    shape = [1, c, *rest]
    kernel = [1] * len(rest)
    param_shape = [shape[axis]] + [1] * (len(shape) - 1 - axis)  # weight[:, None, None] for the channels
    inits = [_const(p + "w_in", _weights(rng, c, c, *kernel)), _const(p + "w_out", _weights(rng, c, c, *kernel)),
             _const(p + "two", np.array(2.0, np.float32)), _const(p + "eps", np.array(1e-6, np.float32)),
             _const(p + "g", (1 + _weights(rng, *param_shape)).astype(np.float32)), _const(p + "b", _weights(rng, *param_shape))]
    nodes = [node("Conv", ["x", "w_in"], "m", kernel_shape=kernel),
             node("ReduceMean", ["m"], "mu", axes=[axis]), node("Sub", ["m", "mu"], "d"), node("Pow", ["d", "two"], "d2"),
             node("ReduceMean", ["d2"], "var", axes=[axis]), node("Add", ["var", "eps"], "ve"), node("Sqrt", ["ve"], "sd"),
             node("Div", ["d", "sd"], "n")]
    last = "n"
    if affine != "none":
        nodes += [node("Mul", ["g", "n"] if affine == "first" else ["n", "g"], "s"), node("Add", ["s", "b"], "a")]
        last = "a"
    nodes.append(node("Conv", [last, "w_out"], "y", kernel_shape=kernel))
    return nodes, inits, [_vi(p + "x", shape)], [_vi(p + "y", shape)]


CASES.append(Case("channel_norm_pack", "fresh10: a layer norm written out over the channels of a map (SAFMN's LayerNorm2d), its affine first, second or none; over axis 2 or the last",
                  lambda: _packed(_channel_norm_case, CHANNEL_NORM_PACK, 2001, used_only=True, opset=13), ("rk3588", "rk3566")))


# ---- fresh10 (ECAPA-TDNN's attentive statistics pooling) on RKNN: a map weighted by a constant over time, summed ---------------

# h19-rknorm. SpeechBrain's ECAPA-TDNN pools [1, C, T] with weights it computes from a length mask that folds to a
# constant of one value [1, 1, T] (1 / T), written first: mean = (w * x).sum(2), std = sqrt((w * (x - mean)^2).sum(2)).
# Each case: a Conv1d and Relu of the input [1, 32, 100], then Mul(weight, map) (`order`: "first" or "second"), the weight
# of `shape` ("t": [1, 1, T], "c": [1, C, 1], "scalar": []) and `values` ("one": 1 / T throughout, "vary"), read by
# `reader` ("sum": ReduceSum over time, keepdims 0; "relu"; "add": an Add of a constant [C, 1]). (name, shape, values, order, reader)
WEIGHTED_POOL_PACK = (
    ("t_one_first_sum", "t", "one", "first", "sum"), ("t_one_second_sum", "t", "one", "second", "sum"),
    ("t_vary_first_sum", "t", "vary", "first", "sum"), ("scalar_first_sum", "scalar", "one", "first", "sum"),
    ("c_one_first_sum", "c", "one", "first", "sum"),
    ("t_one_first_add", "t", "one", "first", "add"), ("scalar_first_add", "scalar", "one", "first", "add"),
)
# Measured, not held (docs/audit.md, ECAPA-TDNN's weight Muls): the float Mul's Relu as the [1, 32, 100] model output ran
# on the CPU of both chips, which the audit does not model.
WEIGHTED_POOL_MEASURED = (("t_one_first_relu", "t", "one", "first", "relu"),)


def _weighted_pool_case(rng, spec) -> tuple[list, list, list, list]:
    name, shape, values, order, reader = spec
    p = f"wpool_{name}_"
    node = _prefixed(p)
    c, t = 32, 100
    dims = {"t": [1, 1, t], "c": [1, c, 1], "scalar": []}[shape]
    weight = np.full(dims, 1.0 / t, np.float32) if values == "one" else (np.abs(_weights(rng, *dims)) + 0.01).astype(np.float32)
    inits = [_const(p + "w", _weights(rng, c, 32, 3)), _const(p + "k", weight), _const(p + "axis", np.array([2], np.int64)),
             _const(p + "b", _weights(rng, c, 1))]
    nodes = [node("Conv", ["x", "w"], "m", kernel_shape=[3], pads=[1, 1]), node("Relu", ["m"], "r"),
             node("Mul", ["k", "r"] if order == "first" else ["r", "k"], "wm")]
    if reader == "sum":
        nodes.append(node("ReduceSum", ["wm", "axis"], "y", keepdims=0))
        out = [1, c]
    else:
        nodes.append(node("Relu", ["wm"], "y") if reader == "relu" else node("Add", ["wm", "b"], "y"))
        out = [1, c, t]
    return nodes, inits, [_vi(p + "x", [1, 32, t])], [_vi(p + "y", out)]


CASES.append(Case("weighted_pool_pack", "fresh10: a map multiplied by a constant weight over time (first or second, one value or varying) and summed over time, or read by a Relu or an Add (ECAPA-TDNN's statistics pooling)",
                  lambda: _packed(_weighted_pool_case, WEIGHTED_POOL_PACK, 2002, used_only=True, opset=13), ("rk3588", "rk3566")))


# ---- fresh10 (torchaudio's DeepSpeech) on RKNN: a bidirectional RNN's directions joined by a Transpose and a Reshape ------------

# h19-rknorm. DeepSpeech's bidirectional nn.RNN (Relu) over [T, 1, 128], as torch.onnx writes it: Y [T, 2, 1, H], Transpose
# [0, 2, 1, 3] (moves only the batch axis of one), Reshape [T, 1, 2H], then the two halves Sliced and Added, a Linear.
# `cell`: "rnn_relu", "rnn_tanh" (ONNX RNN), "lstm" (ONNX LSTM); `directions` "bidirectional" or "forward" (Y [T, 1, 1, H]).
# (name, cell, directions)
RNN_DIRECTIONS_PACK = (
    ("rnn_relu", "rnn_relu", "bidirectional"), ("rnn_tanh", "rnn_tanh", "bidirectional"), ("lstm", "lstm", "bidirectional"),
    ("rnn_relu_fwd", "rnn_relu", "forward"),
)


def _rnn_directions_case(rng, spec) -> tuple[list, list, list, list]:
    name, cell, directions = spec
    p = f"rnd_{name}_"
    node = _prefixed(p)
    t, d, h = 100, 128, 128
    n_dir = 2 if directions == "bidirectional" else 1
    gates = 4 if cell == "lstm" else 1
    inits = [_const(p + "w_in", _weights(rng, 40, d)), _const(p + "W", _weights(rng, n_dir, gates * h, d)),
             _const(p + "R", _weights(rng, n_dir, gates * h, h) * 0.3), _const(p + "B", _weights(rng, n_dir, 2 * gates * h)),
             _const(p + "joined", np.array([t, 1, n_dir * h], np.int64)), _const(p + "w_out", _weights(rng, h, 29)),
             _const(p + "i0", np.array([0], np.int64)), _const(p + "ih", np.array([h], np.int64)),
             _const(p + "i2h", np.array([2 * h], np.int64)), _const(p + "ax", np.array([2], np.int64))]
    attrs = {"direction": directions, "hidden_size": h}
    if cell == "rnn_relu":
        attrs["activations"] = ["Relu"] * n_dir
    nodes = [node("MatMul", ["x", "w_in"], "f"), node("Relu", ["f"], "fr"), node("Transpose", ["fr"], "tm", perm=[1, 0, 2]),
             node("LSTM" if cell == "lstm" else "RNN", ["tm", "W", "R", "B"], "seq", **attrs),
             node("Transpose", ["seq"], "swap", perm=[0, 2, 1, 3]), node("Reshape", ["swap", "joined"], "joined_y")]
    if n_dir == 2:
        nodes += [node("Slice", ["joined_y", "i0", "ih", "ax"], "fwd"), node("Slice", ["joined_y", "ih", "i2h", "ax"], "bwd"),
                  node("Add", ["fwd", "bwd"], "sum"), node("MatMul", ["sum", "w_out"], "y")]
    else:
        nodes.append(node("MatMul", ["joined_y", "w_out"], "y"))
    return nodes, inits, [_vi(p + "x", [1, t, 40])], [_vi(p + "y", [t, 1, 29])]


CASES.append(Case("rnn_directions_pack", "fresh10: a bidirectional RNN's (Relu or Tanh) or LSTM's directions joined by Transpose [0, 2, 1, 3] and Reshape, Sliced and Added (DeepSpeech)",
                  lambda: _packed(_rnn_directions_case, RNN_DIRECTIONS_PACK, 2003, used_only=True, opset=13), ("rk3588", "rk3566")))


# ---- fresh10 (SpeechBrain's ContextNet) on RK3566: tokens swapped into a reflect-padded depthwise Conv1d --------------------

# h19-rknorm. ContextNet's blocks hold [1, T, C] tokens and run each Conv1d as Transpose [0, 2, 1], reflect Pad (1, 1), Conv,
# Transpose back; its tokens are a SiLU (Sigmoid, Mul) of a residual sum of such Conv1d results. Each case: tokens from
# `source` ("input": the model input; "conv": a Conv1d of an input map [1, C, T] swapped into tokens; "residual": the sum of
# two such), their SiLU, the swap [0, 2, 1], the reflect Pad of the time axis, then `conv` ("dw": a depthwise Conv1d kernel 3;
# "dense": a Conv1d kernel 3) and a pointwise Conv1d as the output. (name, source, T, C, conv)
PADDED_SWAP_SOURCE_PACK = (
    ("in_t100_dw", "input", 100, 128, "dw"), ("in_t14_dw", "input", 14, 128, "dw"), ("in_t100_dense", "input", 100, 128, "dense"),
    ("conv_t100_dw", "conv", 100, 128, "dw"), ("conv_t13_dw", "conv", 13, 256, "dw"), ("res_t100_dw", "residual", 100, 128, "dw"),
)


def _padded_swap_source_case(rng, spec) -> tuple[list, list, list, list]:
    name, source, t, c, conv = spec
    p = f"pss_{name}_"
    node = _prefixed(p)
    inits = [_const(p + "w_a", _weights(rng, c, c, 1)), _const(p + "w_b", _weights(rng, c, c, 1)),
             _const(p + "w_k", _weights(rng, c, 1 if conv == "dw" else c, 3)), _const(p + "w_pw", _weights(rng, c, c, 1)),
             _const(p + "pads", np.array([0, 0, 1, 0, 0, 1], np.int64))]
    nodes = []
    if source == "input":
        tokens, x_shape = "x", [1, t, c]
    else:
        x_shape = [1, c, t]
        nodes += [node("Conv", ["x", "w_a"], "ca", kernel_shape=[1]), node("Transpose", ["ca"], "ta", perm=[0, 2, 1])]
        tokens = "ta"
        if source == "residual":
            nodes += [node("Conv", ["x", "w_b"], "cb", kernel_shape=[1]), node("Transpose", ["cb"], "tb", perm=[0, 2, 1]),
                      node("Add", ["ta", "tb"], "res")]
            tokens = "res"
    nodes += [node("Sigmoid", [tokens], "sig"), node("Mul", [tokens, "sig"], "silu"), node("Transpose", ["silu"], "swap", perm=[0, 2, 1]),
              node("Pad", ["swap", "pads"], "padded", mode="reflect"),
              node("Conv", ["padded", "w_k"], "k", kernel_shape=[3], group=c if conv == "dw" else 1),
              node("Conv", ["k", "w_pw"], "y", kernel_shape=[1])]
    return nodes, inits, [_vi(p + "x", x_shape)], [_vi(p + "y", [1, c, t])]


CASES.append(Case("padded_swap_source_pack", "fresh10: tokens (the input, a Conv1d's swapped result, a residual sum of two) through a SiLU, swapped into a reflect-padded (depthwise) Conv1d (ContextNet)",
                  lambda: _packed(_padded_swap_source_case, PADDED_SWAP_SOURCE_PACK, 2004, used_only=True, opset=13), ("rk3566",)))


# h19-rknorm. ECAPA's pooling weight as its export writes it: computed from the map's static length (Shape, Gather, Cast,
# Range, Less against the length, Cast, Unsqueeze to [1, 1, T], divided by its ReduceSum), which the toolkit folds to a
# constant of one value 1 / T; or that constant as a Div of two initialisers ("div"), or stored ("init"). Each case: a
# Conv1d and Relu of the input [1, 32, 100], Mul(weight, map), ReduceSum over time. (name, weight)
WEIGHTED_POOL_PACK_2 = (("shape", "shape"), ("div", "div"), ("init", "init"))


def _weighted_pool_case_2(rng, spec) -> tuple[list, list, list, list]:
    name, weight = spec
    p = f"wpool2_{name}_"
    node = _prefixed(p)
    c, t = 32, 100
    inits = [_const(p + "w", _weights(rng, c, 32, 3)), _const(p + "axis", np.array([2], np.int64)), _const(p + "axes01", np.array([0, 1], np.int64)),
             _const(p + "i2", np.array(2, np.int64)), _const(p + "zero", np.array(0.0, np.float32)), _const(p + "one", np.array(1.0, np.float32)),
             _const(p + "ones", np.ones((1, 1, t), np.float32)), _const(p + "t", np.array(float(t), np.float32)),
             _const(p + "stored", np.full((1, 1, t), 1.0 / t, np.float32))]
    nodes = [node("Conv", ["x", "w"], "m", kernel_shape=[3], pads=[1, 1]), node("Relu", ["m"], "r")]
    if weight == "shape":
        nodes += [node("Shape", ["r"], "s"), node("Gather", ["s", "i2"], "len", axis=0), node("Cast", ["len"], "lenf", to=TensorProto.FLOAT),
                  node("Range", ["zero", "lenf", "one"], "steps"), node("Less", ["steps", "lenf"], "valid"),
                  node("Cast", ["valid"], "mask", to=TensorProto.FLOAT), node("Unsqueeze", ["mask", "axes01"], "mask3"),
                  node("ReduceSum", ["mask3", "axis"], "total", keepdims=1), node("Div", ["mask3", "total"], "k")]
    elif weight == "div":
        nodes.append(node("Div", ["ones", "t"], "k"))
    nodes += [node("Mul", ["stored" if weight == "init" else "k", "r"], "wm"), node("ReduceSum", ["wm", "axis"], "y", keepdims=0)]
    return nodes, inits, [_vi(p + "x", [1, 32, t])], [_vi(p + "y", [1, c])]


CASES.append(Case("weighted_pool_pack_2", "fresh10: ECAPA-TDNN's pooling weight 1 / T computed from the map's length, a Div of constants or stored, first in a Mul summed over time",
                  lambda: _packed(_weighted_pool_case_2, WEIGHTED_POOL_PACK_2, 2005, used_only=True, opset=13), ("rk3588", "rk3566")))


# h19-rknorm. ECAPA-TDNN's statistics joined to every step (global context): mean and std [1, C] of a map [1, C, T], each
# Unsqueezed to [1, C, 1], Expanded to its own shape, Tiled over time, Concatenated with the map for a Conv1d. The std is
# Sqrt(Clip(...)), a CPU layer. Each case: its map a Conv1d and Relu of the input [1, 32, 100]; `stat` "mean" (a ReduceSum of
# the map times 1 / T) or "std" (Sqrt of a Clip of the mean of squares); `tail` "expand_tile" (as ECAPA), "tile" (no Expand),
# "relu" (the Unsqueeze read by a Relu, [1, C, 1] the output). (name, stat, tail)
STAT_UNSQUEEZE_PACK = (
    ("mean_expand_tile", "mean", "expand_tile"), ("std_expand_tile", "std", "expand_tile"), ("std_tile", "std", "tile"),
    ("std_relu", "std", "relu"),
)
# Measured, not held: the mean's Unsqueeze read by a Relu as the output, both on RK3566's CPU (the std's Relu: NPU).
STAT_UNSQUEEZE_MEASURED = (("mean_relu", "mean", "relu"),)
# The Unsqueeze also read by a Sub of the map (ECAPA's x - mean; "sub_expand_tile": and Expanded and Tiled as above), or by
# the Sub alone ("sub": the centred map the output).
STAT_UNSQUEEZE_PACK_2 = (
    ("mean_sub_expand_tile", "mean", "sub_expand_tile"), ("mean_sub", "mean", "sub"), ("std_sub", "std", "sub"),
    ("std_sub_expand_tile", "std", "sub_expand_tile"),
)


def _stat_unsqueeze_case(rng, spec) -> tuple[list, list, list, list]:
    name, stat, tail = spec
    p = f"stu_{name}_"
    node = _prefixed(p)
    c, t = 32, 100
    inits = [_const(p + "w", _weights(rng, c, 32, 3)), _const(p + "axis", np.array([2], np.int64)), _const(p + "k", np.full((1, 1, t), 1.0 / t, np.float32)),
             _const(p + "floor", np.array(1e-4, np.float32)), _const(p + "same", np.array([1, 1, 1], np.int64)),
             _const(p + "reps", np.array([1, 1, t], np.int64)), _const(p + "w2", _weights(rng, c, 2 * c, 1))]
    nodes = [node("Conv", ["x", "w"], "m", kernel_shape=[3], pads=[1, 1]), node("Relu", ["m"], "r"), node("Mul", ["r", "k"], "wm")]
    if stat == "mean":
        nodes.append(node("ReduceSum", ["wm", "axis"], "stat", keepdims=0))
    else:
        nodes += [node("Mul", ["wm", "r"], "sq"), node("ReduceSum", ["sq", "axis"], "ms", keepdims=0), node("Clip", ["ms", "floor"], "clipped"),
                  node("Sqrt", ["clipped"], "stat")]
    nodes.append(node("Unsqueeze", ["stat", "axis"], "u"))
    if tail == "sub":
        nodes.append(node("Sub", ["r", "u"], "y"))
        return nodes, inits, [_vi(p + "x", [1, 32, t])], [_vi(p + "y", [1, c, t])]
    if tail == "sub_expand_tile":
        nodes.append(node("Sub", ["r", "u"], "centred"))
        inits.append(_const(p + "w3", _weights(rng, c, c, 1)))
    if tail == "relu":
        nodes.append(node("Relu", ["u"], "y"))
        return nodes, inits, [_vi(p + "x", [1, 32, t])], [_vi(p + "y", [1, c, 1])]
    if tail.endswith("expand_tile"):
        nodes += [node("Expand", ["u", "same"], "e"), node("Tile", ["e", "reps"], "tiled")]
    else:
        nodes.append(node("Tile", ["u", "reps"], "tiled"))
    nodes += [node("Concat", ["r", "tiled"], "joined", axis=1), node("Conv", ["joined", "w2"], "y" if tail != "sub_expand_tile" else "ctx", kernel_shape=[1])]
    if tail == "sub_expand_tile":  # the sum read by a Conv, not the output (a 3-D output Add ran on the CPU)
        inits.append(_const(p + "w4", _weights(rng, c, c, 1)))
        nodes += [node("Conv", ["centred", "w3"], "cc", kernel_shape=[1]), node("Add", ["ctx", "cc"], "sum"),
                  node("Conv", ["sum", "w4"], "y", kernel_shape=[1])]
    return nodes, inits, [_vi(p + "x", [1, 32, t])], [_vi(p + "y", [1, c, t])]


CASES.append(Case("stat_unsqueeze_pack", "fresh10: a statistic [1, C] (a mean, or a Sqrt std on the CPU) Unsqueezed, Expanded and Tiled over time, or read by a Relu (ECAPA-TDNN's global context)",
                  lambda: _packed(_stat_unsqueeze_case, STAT_UNSQUEEZE_PACK, 2006, used_only=True, opset=13), ("rk3588", "rk3566")))
CASES.append(Case("stat_unsqueeze_pack_2", "fresh10: a statistic [1, C] Unsqueezed and read by a Sub of its map (and Expanded and Tiled) (ECAPA-TDNN's statistics pooling)",
                  lambda: _packed(_stat_unsqueeze_case, STAT_UNSQUEEZE_PACK_2, 2009, used_only=True, opset=13), ("rk3588", "rk3566")))


# h19-rknorm. ECAPA-TDNN's front: the model input fbank [1, T, 80] swapped [0, 2, 1] straight into a reflect Pad (2, 2) and
# a Conv1d kernel 5 to 64 channels; or a Relu of it swapped so. (name, source, T, C, pad)
INPUT_SWAP_PAD_PACK = (
    ("in_t100_c80", "input", 100, 80, 2), ("relu_t100_c80", "relu", 100, 80, 2), ("in_t12_c64", "input", 12, 64, 2),
    ("relu_t12_c64", "relu", 12, 64, 2),
)


def _input_swap_pad_case(rng, spec) -> tuple[list, list, list, list]:
    name, source, t, c, pad = spec
    p = f"isp_{name}_"
    node = _prefixed(p)
    inits = [_const(p + "pads", np.array([0, 0, pad, 0, 0, pad], np.int64)), _const(p + "w", _weights(rng, 64, c, 5)), _const(p + "b", _weights(rng, 64))]
    nodes = [node("Relu", ["x"], "src")] if source == "relu" else []
    nodes += [node("Transpose", ["src" if source == "relu" else "x"], "swap", perm=[0, 2, 1]), node("Pad", ["swap", "pads"], "padded", mode="reflect"),
              node("Conv", ["padded", "w", "b"], "y", kernel_shape=[5])]
    return nodes, inits, [_vi(p + "x", [1, t, c])], [_vi(p + "y", [1, 64, t + 2 * pad - 4])]


CASES.append(Case("input_swap_pad_pack", "fresh10: the model input (or a Relu of it) swapped straight into a reflect-padded Conv1d (ECAPA-TDNN's front), aligned lengths or not",
                  lambda: _packed(_input_swap_pad_case, INPUT_SWAP_PAD_PACK, 2007, used_only=True, opset=13), ("rk3566",)))


# h19-rknorm. The directions of an LSTM joined by Reshape on RK3566: the bidirectional LSTM's Y [T, 2, 1, H] swapped
# [0, 2, 1, 3] and viewed [T, 1, 2H] (`join` "swap_view"), or viewed [T, 2H] straight ("view2d"), or a MatMul's [T, 1, 2H]
# viewed [T, 1, 2, H] and back ("matmul"), read by a MatMul. (name, join, T)
DIRECTIONS_VIEW_PACK = (
    ("lstm_t100", "swap_view", 100), ("lstm_t16", "swap_view", 16), ("lstm_view2d_t100", "view2d", 100), ("matmul_t100", "matmul", 100),
)
# The same joins read by the two halves' Slices along the features and their Add (DeepSpeech's sum of the directions), then
# the MatMul.
DIRECTIONS_VIEW_PACK_2 = (
    ("lstm_t100_halves", "swap_view", 100, "halves"), ("lstm_t16_halves", "swap_view", 16, "halves"),
    ("matmul_t100_halves", "matmul", 100, "halves"), ("lstm_view2d_halves", "view2d", 100, "halves"),
)


def _directions_view_case(rng, spec) -> tuple[list, list, list, list]:
    name, join, t, *tail = spec
    p = f"dview_{name}_"
    node = _prefixed(p)
    d, h = 32, 32
    inits = [_const(p + "W", _weights(rng, 2, 4 * h, d)), _const(p + "R", _weights(rng, 2, 4 * h, h) * 0.3), _const(p + "B", _weights(rng, 2, 8 * h)),
             _const(p + "w_in", _weights(rng, d, 2 * h)), _const(p + "four", np.array([t, 1, 2, h], np.int64)),
             _const(p + "three", np.array([t, 1, 2 * h], np.int64)), _const(p + "two", np.array([t, 2 * h], np.int64)), _const(p + "w_out", _weights(rng, 2 * h, 16))]
    if join == "matmul":
        nodes = [node("MatMul", ["x", "w_in"], "lin"), node("Reshape", ["lin", "four"], "split"), node("Relu", ["split"], "act"),
                 node("Reshape", ["act", "three"], "joined")]
    else:
        nodes = [node("LSTM", ["x", "W", "R", "B"], "seq", direction="bidirectional", hidden_size=h)]
        nodes += ([node("Transpose", ["seq"], "swap", perm=[0, 2, 1, 3]), node("Reshape", ["swap", "three"], "joined")] if join == "swap_view"
                  else [node("Reshape", ["seq", "two"], "joined")])
    if tail == ["halves"]:
        axis = 1 if join == "view2d" else 2
        inits += [_const(p + "i0", np.array([0], np.int64)), _const(p + "ih", np.array([h], np.int64)),
                  _const(p + "i2h", np.array([2 * h], np.int64)), _const(p + "ax", np.array([axis], np.int64)), _const(p + "w_half", _weights(rng, h, 16))]
        nodes += [node("Slice", ["joined", "i0", "ih", "ax"], "fwd"), node("Slice", ["joined", "ih", "i2h", "ax"], "bwd"),
                  node("Add", ["fwd", "bwd"], "sum"), node("MatMul", ["sum", "w_half"], "y")]
    else:
        nodes.append(node("MatMul", ["joined", "w_out"], "y"))
    out = [t, 16] if join == "view2d" else [t, 1, 16]
    return nodes, inits, [_vi(p + "x", [t, 1, d])], [_vi(p + "y", out)]


CASES.append(Case("directions_view_pack", "fresh10: a bidirectional LSTM's directions joined by Reshape (after the swap or straight to 2-D), or a MatMul's heads so, on RK3566",
                  lambda: _packed(_directions_view_case, DIRECTIONS_VIEW_PACK, 2008, used_only=True, opset=13), ("rk3566", "rk3588")))
# More lengths (and the RNN's own join), read by the halves as above.
DIRECTIONS_VIEW_PACK_3 = (
    ("lstm_t24_halves", "swap_view", 24, "halves"), ("lstm_t20_halves", "swap_view", 20, "halves"),
    ("lstm_t32_halves", "swap_view", 32, "halves"), ("lstm_t104_halves", "swap_view", 104, "halves"),
)
CASES.append(Case("directions_view_pack_3", "fresh10: a bidirectional LSTM's directions joined by Reshape and read by the Slices of their halves, 20 to 104 steps",
                  lambda: _packed(_directions_view_case, DIRECTIONS_VIEW_PACK_3, 2012, used_only=True, opset=13), ("rk3566",)))
CASES.append(Case("directions_view_pack_2", "fresh10: the directions so joined, read by the Slices of their halves and an Add (DeepSpeech's sum of its RNN's directions)",
                  lambda: _packed(_directions_view_case, DIRECTIONS_VIEW_PACK_2, 2010, used_only=True, opset=13), ("rk3566", "rk3588")))


# h19-rknorm. ECAPA-TDNN's attentive statistics pooling around its weight Muls (the weight 1 / T [1, 1, T] written first):
# the map [1, C, 100] a Conv1d and Relu of the input (or then a BatchNormalization, "bn"); `form` "sum": Mul, ReduceSum over
# time as the output; "stats": mean = ReduceSum(w * x), std = Sqrt(Clip(ReduceSum(w * (x - mean)^2))), Concatenated [1, 2C]
# as the output. (name, C, source, form)
ECAPA_POOL_PACK = (("wide_sum", 1536, "relu", "sum"),)
# Measured, not modelled (docs/audit.md): each weight Mul int8 on the NPU of both chips, where the audit keeps it float.
ECAPA_POOL_MEASURED = (("bn_sum", 32, "bn", "sum"), ("relu_stats", 32, "relu", "stats"), ("bn_stats", 32, "bn", "stats"))


def _ecapa_pool_case(rng, spec) -> tuple[list, list, list, list]:
    name, c, source, form = spec
    p = f"epool_{name}_"
    node = _prefixed(p)
    t = 100
    inits = [_const(p + "w", _weights(rng, c, 32, 3)), _const(p + "axis", np.array([2], np.int64)), _const(p + "k", np.full((1, 1, t), 1.0 / t, np.float32)),
             _const(p + "floor", np.array(1e-12, np.float32)), _const(p + "two", np.array(2.0, np.float32))]
    inits += [_const(p + n, v) for n, v in zip(("g", "b", "mu", "var"), (1 + _weights(rng, c), _weights(rng, c), _weights(rng, c), 1 + np.abs(_weights(rng, c))))]
    nodes = [node("Conv", ["x", "w"], "m", kernel_shape=[3], pads=[1, 1]), node("Relu", ["m"], "r" if source == "relu" else "a")]
    if source == "bn":
        nodes.append(node("BatchNormalization", ["a", "g", "b", "mu", "var"], "r"))
    nodes += [node("Mul", ["k", "r"], "wm"), node("ReduceSum", ["wm", "axis"], "y" if form == "sum" else "mean", keepdims=0)]
    if form == "stats":
        nodes += [node("Unsqueeze", ["mean", "axis"], "mean3"), node("Sub", ["r", "mean3"], "d"), node("Pow", ["d", "two"], "d2"),
                  node("Mul", ["k", "d2"], "wd2"), node("ReduceSum", ["wd2", "axis"], "var2", keepdims=0), node("Clip", ["var2", "floor"], "clipped"),
                  node("Sqrt", ["clipped"], "std"), node("Concat", ["mean", "std"], "y", axis=1)]
    return nodes, inits, [_vi(p + "x", [1, 32, t])], [_vi(p + "y", [1, c if form == "sum" else 2 * c])]


CASES.append(Case("ecapa_pool_pack", "fresh10: ECAPA-TDNN's weighted mean and std of a Relu's or a BatchNorm's map, the weight 1 / T written first",
                  lambda: _packed(_ecapa_pool_case, ECAPA_POOL_PACK, 2011, used_only=True, opset=13), ("rk3588", "rk3566")))


# h19-rknorm. The weight Mul summed over time (1 / T [1, 1, T] written first, a Relu's map [1, 32, 100]) by what reads the
# ReduceSum: "out" (it is the model output), "relu" (a Relu as the output), "unsqueeze_sub" (Unsqueezed and subtracted
# from the map, ECAPA's centring, then a Conv1d), "concat" (Concatenated with another ReduceSum of the map, ECAPA's
# [mean, std]); `op` the reduction ("ReduceSum", or "ReduceMean" of the weighted map). (name, reader, op)
WEIGHTED_SUM_READER_PACK = (("out", "out", "ReduceSum"), ("mean_relu", "relu", "ReduceMean"))
# Measured, not modelled (docs/audit.md): "unsqueeze_sub" and "concat" had the Mul int8 on the NPU of both chips; "relu"
# had it float as the audit says, but its Relu output on RK3566's CPU.
WEIGHTED_SUM_READER_MEASURED = (("relu", "relu", "ReduceSum"), ("unsqueeze_sub", "unsqueeze_sub", "ReduceSum"), ("concat", "concat", "ReduceSum"))


def _weighted_sum_reader_case(rng, spec) -> tuple[list, list, list, list]:
    name, reader, op = spec
    p = f"wsr_{name}_"
    node = _prefixed(p)
    c, t = 32, 100
    inits = [_const(p + "w", _weights(rng, c, 32, 3)), _const(p + "axis", np.array([2], np.int64)), _const(p + "k", np.full((1, 1, t), 1.0 / t, np.float32)),
             _const(p + "w2", _weights(rng, c, c, 1))]
    nodes = [node("Conv", ["x", "w"], "m", kernel_shape=[3], pads=[1, 1]), node("Relu", ["m"], "r"), node("Mul", ["k", "r"], "wm")]
    reduce_out = "y" if reader == "out" else "s"
    nodes.append(node("ReduceSum", ["wm", "axis"], reduce_out, keepdims=0) if op == "ReduceSum" else node("ReduceMean", ["wm"], reduce_out, axes=[2], keepdims=0))
    out = [1, c]
    if reader == "relu":
        nodes.append(node("Relu", ["s"], "y"))
    elif reader == "unsqueeze_sub":
        nodes += [node("Unsqueeze", ["s", "axis"], "s3"), node("Sub", ["r", "s3"], "d"), node("Conv", ["d", "w2"], "y", kernel_shape=[1])]
        out = [1, c, t]
    elif reader == "concat":
        nodes += [node("ReduceSum", ["r", "axis"], "s2", keepdims=0), node("Concat", ["s", "s2"], "y", axis=1)]
        out = [1, 2 * c]
    return nodes, inits, [_vi(p + "x", [1, 32, t])], [_vi(p + "y", out)]


CASES.append(Case("weighted_sum_reader_pack", "fresh10: a map times a constant weight written first, summed over time, the sum the output or read by a Relu, an Unsqueeze and Sub, or a Concat (ECAPA-TDNN)",
                  lambda: _packed(_weighted_sum_reader_case, WEIGHTED_SUM_READER_PACK, 2013, used_only=True, opset=13), ("rk3588", "rk3566")))


# Which of the two decides (h19-rknorm): what else reads the weighted map, or what reads the sum. "solo_concat": the Relu
# read by the Mul alone, the sum Concatenated with a sum of the Conv's result; "shared_out": the Relu also summed by a
# second output, the weighted sum an output; "pow_out": the weight times the Relu squared (Pow), the sum the output;
# "solo_clip": the Relu read by the Mul alone, the sum Clipped as the output. (name, form)
WEIGHTED_SUM_READER_PACK_2 = (("pow_out", "pow_out"),)
# Measured, not modelled (docs/audit.md): "solo_concat" and "shared_out" had the Mul int8 on the NPU of both chips;
# "solo_clip" had it float, its Clip output on RK3566's CPU.
WEIGHTED_SUM_READER_MEASURED_2 = (("solo_concat", "solo_concat"), ("shared_out", "shared_out"), ("solo_clip", "solo_clip"))


def _weighted_sum_reader_case_2(rng, spec) -> tuple[list, list, list, list]:
    name, form = spec
    p = f"wsr2_{name}_"
    node = _prefixed(p)
    c, t = 32, 100
    inits = [_const(p + "w", _weights(rng, c, 32, 3)), _const(p + "axis", np.array([2], np.int64)), _const(p + "k", np.full((1, 1, t), 1.0 / t, np.float32)),
             _const(p + "two", np.array(2.0, np.float32)), _const(p + "floor", np.array(1e-4, np.float32))]
    nodes = [node("Conv", ["x", "w"], "m", kernel_shape=[3], pads=[1, 1]), node("Relu", ["m"], "r")]
    data = "r"
    if form == "pow_out":
        nodes.append(node("Pow", ["r", "two"], "r2"))
        data = "r2"
    nodes += [node("Mul", ["k", data], "wm"), node("ReduceSum", ["wm", "axis"], "y" if form in ("shared_out", "pow_out") else "s", keepdims=0)]
    outputs = [_vi(p + "y", [1, 2 * c if form == "solo_concat" else c])]
    if form == "solo_concat":
        nodes += [node("ReduceSum", ["m", "axis"], "s2", keepdims=0), node("Concat", ["s", "s2"], "y", axis=1)]
    elif form == "shared_out":
        nodes.append(node("ReduceSum", ["r", "axis"], "y2", keepdims=0))
        outputs.append(_vi(p + "y2", [1, c]))
    elif form == "solo_clip":
        nodes.append(node("Clip", ["s", "floor"], "y"))
    return nodes, inits, [_vi(p + "x", [1, 32, t])], outputs


CASES.append(Case("weighted_sum_reader_pack_2", "fresh10: a constant-first weight Mul summed over time: the Relu it weighs read by it alone or also summed, the sum Concatenated, Clipped or an output",
                  lambda: _packed(_weighted_sum_reader_case_2, WEIGHTED_SUM_READER_PACK_2, 2014, used_only=True, opset=13), ("rk3588", "rk3566")))


# h19-rknorm. ContextNet's end: its last Conv1d's [1, 640, 13] swapped [0, 2, 1] into tokens, then a SiLU (Sigmoid and
# Mul) whose Mul is the model's output. Each case: a Conv1d of the input [1, 32, T] to C channels, the swap, then `act`
# ("silu", "sigmoid": the Sigmoid the output, "relu") as the output. (name, C, T, act)
SWAP_TO_OUTPUT_ACT_PACK = (
    ("silu_c64_t13", 64, 13, "silu"), ("sigmoid_c64_t13", 64, 13, "sigmoid"), ("relu_c64_t13", 64, 13, "relu"),
    ("silu_c64_t16", 64, 16, "silu"),
)


def _swap_to_output_act_case(rng, spec) -> tuple[list, list, list, list]:
    name, c, t, act = spec
    p = f"soa_{name}_"
    node = _prefixed(p)
    inits = [_const(p + "w", _weights(rng, c, 32, 1))]
    nodes = [node("Conv", ["x", "w"], "m", kernel_shape=[1]), node("Transpose", ["m"], "tok", perm=[0, 2, 1])]
    if act == "silu":
        nodes += [node("Sigmoid", ["tok"], "sig"), node("Mul", ["tok", "sig"], "y")]
    else:
        nodes.append(node("Sigmoid" if act == "sigmoid" else "Relu", ["tok"], "y"))
    return nodes, inits, [_vi(p + "x", [1, 32, t])], [_vi(p + "y", [1, t, c])]


CASES.append(Case("swap_to_output_act_pack", "fresh10: a Conv1d's result swapped into tokens, then a SiLU, Sigmoid or Relu as the model output (ContextNet's end)",
                  lambda: _packed(_swap_to_output_act_case, SWAP_TO_OUTPUT_ACT_PACK, 2015, used_only=True, opset=13), ("rk3566", "rk3588")))
# More lengths and widths of the SiLU form, on RK3566.
SWAP_TO_OUTPUT_ACT_PACK_2 = (
    ("silu_c64_t8", 64, 8, "silu"), ("silu_c64_t12", 64, 12, "silu"), ("silu_c64_t20", 64, 20, "silu"), ("silu_c64_t24", 64, 24, "silu"),
    ("silu_c64_t32", 64, 32, "silu"), ("silu_c40_t16", 40, 16, "silu"), ("silu_c640_t13", 640, 13, "silu"),
)
CASES.append(Case("swap_to_output_act_pack_2", "fresh10: a Conv1d's result swapped into tokens and a SiLU as the model output, 8 to 32 steps, 40 to 640 channels",
                  lambda: _packed(_swap_to_output_act_case, SWAP_TO_OUTPUT_ACT_PACK_2, 2016, used_only=True, opset=13), ("rk3566",)))


# fresh11's FBCNN quality-factor head (looked at after its blind score): a Gemm of a Relu'd [1, 512] by a [1, 512]
# weight (transB) plus a one-element bias [1], whose result [1, 1] has one column, converts on RKNN where the rule
# gemm_scalar_bias said every one-element bias fails. Each case one model (a refusal fails the whole model): the
# bias one element ([1]) or a scalar ([]), the result's columns N and rows M. (name, bias shape, N, M)
GEMM_ONE_ELEMENT_BIAS_CASES = (
    ("vec_n1_m1", [1], 1, 1), ("vec_n4_m1", [1], 4, 1), ("scalar_n1_m1", [], 1, 1), ("scalar_n4_m1", [], 4, 1),
    ("vec_n1_m2", [1], 1, 2),
)


def gemm_one_element_bias(bias_shape: list, n: int, m: int, bias_is_input: bool = False) -> onnx.ModelProto:
    """x [M, 16] -> Relu -> Gemm(transB) with a weight [N, 16] and a one-element bias of `bias_shape`
    (a constant, or with `bias_is_input` a model input, as in ONNX's node tests) -> y [M, N]."""
    rng = np.random.default_rng(2101)
    inits = [_const("w", _weights(rng, n, 16))]
    inputs = [_vi("x", [m, 16])]
    if bias_is_input:
        inputs.append(_vi("b", bias_shape))
    else:
        inits.append(_const("b", np.full(bias_shape, 0.25, np.float32)))
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"), helper.make_node("Gemm", ["r", "w", "b"], ["y"], name="gemm", transB=1)]
    return _model(nodes, inputs, [_vi("y", [m, n])], inits, opset=13)


CASES += [Case(f"gemm_one_element_bias_{name}", "fresh11: a Gemm with a one-element or scalar bias, by the result's columns and rows (FBCNN's quality-factor head)",
               lambda s=shape, n=n, m=m: gemm_one_element_bias(s, n, m), ("rk3588", "rk3566")) for name, shape, n, m in GEMM_ONE_ELEMENT_BIAS_CASES]
# The same with the bias a model input, as in ONNX's node tests test_gemm_default_scalar_bias and _single_elem_vector_bias.
CASES += [Case(f"gemm_one_element_bias_input_{name}", "fresh11: a Gemm whose one-element or scalar bias is a model input",
               lambda s=shape, n=n, m=m: gemm_one_element_bias(s, n, m, bias_is_input=True), ("rk3588", "rk3566"))
          for name, shape, n, m in GEMM_ONE_ELEMENT_BIAS_CASES[:4]]


def gemm_computed_one_element_bias(n: int) -> onnx.ModelProto:
    """As gemm_one_element_bias, the bias [1] computed at run time: the mean of the input over all of it."""
    rng = np.random.default_rng(2102)
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
             helper.make_node("ReduceMean", ["x"], ["m"], name="mean", axes=[0, 1], keepdims=0),
             helper.make_node("Unsqueeze", ["m", "ax"], ["b"], name="unsq"),
             helper.make_node("Gemm", ["r", "w", "b"], ["y"], name="gemm", transB=1)]
    return _model(nodes, [_vi("x", [1, 16])], [_vi("y", [1, n])], [_const("w", _weights(rng, n, 16)), _const("ax", np.array([0], np.int64))], opset=13)


CASES += [Case(f"gemm_computed_one_element_bias_n{n}", "fresh11: a Gemm whose one-element bias is computed at run time", lambda n=n: gemm_computed_one_element_bias(n), ("rk3588", "rk3566")) for n in (1, 4)]


# fresh11's TCN pads its [1, 40, 100] model input causally (2 steps on the left) into a Conv1d of
# kernel 3: on RK3588's CPU as a layout Reshape, where [1, 4, 64] (pad_constant_rank3) ran on its NPU.
# The input's last axis by RK3588's block of 16 (INPUT_LAYOUT_ALIGN), and its channels, both ways.
# (name, input shape, (left, right), producer, kernel), as UNIT_CHANNEL_PAD_PACK (h20-rkconv).
INPUT_PAD_ALIGN_PACK = tuple((f"c{c}_l{n}", (1, c, n), (2, 0), "input", 3) for c, n in (
    (40, 100), (40, 96), (40, 112), (40, 104), (40, 120), (40, 128), (48, 100), (16, 100), (4, 100), (4, 96), (40, 8), (40, 24)))


CASES.append(Case("input_pad_align_pack", "fresh11: a constant Pad of a [1, C, L] model input into a Conv1d (TCN's causal padding), by C and L",
                  lambda: _packed(_unit_channel_pad_case, INPUT_PAD_ALIGN_PACK, 303, opset=13), ("rk3588", "rk3566")))


# fresh11's FT-Transformer embeds its numeric features [1, 12] as Unsqueeze(axis 2) * W[12, 128] + b[1, 12, 128],
# then Concatenates a CLS token before them: the Unsqueeze on the CPU of RK3588 too, where the lead's
# Unsqueeze * W (F = 12, D = 8/32/192) ran on its NPU. (name, F, D, tail) (h20-rkconv).
FT_EMBED_PACK = tuple((f"f{f}_d{d}_{tail}", f, d, tail) for f, d, tail in (
    (12, 128, "mul"), (12, 128, "add"), (12, 128, "add_concat"), (12, 128, "addvec"), (12, 32, "add"), (12, 32, "mul"),
    (16, 128, "add"), (16, 128, "add_concat"), (12, 128, "mul3d")))


def _ft_embed_case(rng, spec) -> tuple[list, list, list, list]:
    name, f, d, tail = spec
    p = f"fte_{name}_"
    node = _prefixed(p)
    weight = _weights(rng, 1, f, d) if tail == "mul3d" else _weights(rng, f, d)
    inits = [_const(p + "axes", np.array([2], np.int64)), _const(p + "w", weight),
             _const(p + "b", _weights(rng, d) if tail == "addvec" else _weights(rng, 1, f, d)), _const(p + "cls", _weights(rng, 1, 1, d))]
    nodes = [node("Unsqueeze", ["x", "axes"], "u"), node("Mul", ["u", "w"], "y" if tail in ("mul", "mul3d") else "m")]
    rows = f
    if tail not in ("mul", "mul3d"):
        nodes.append(node("Add", ["m", "b"], {"add": "y", "addvec": "y", "add_mm": "t"}.get(tail, "e")))
    if tail.startswith("add_concat"):
        nodes.append(node("Concat", ["cls", "e"], "y" if tail == "add_concat" else "t", axis=1))
        rows = f + 1
    if tail.endswith("_mm") or tail.endswith("_mm3"):  # the tokens into the attention's q (k, v) projections
        heads = 3 if tail.endswith("_mm3") else 1
        inits += [_const(p + f"wq{i}", _weights(rng, d, d)) for i in range(heads)]
        nodes += [node("MatMul", ["t", f"wq{i}"], "y" if i == 0 else f"y{i}") for i in range(heads)]
        return nodes, inits, [_vi(p + "x", [1, f])], [_vi(p + ("y" if i == 0 else f"y{i}"), [1, rows, d]) for i in range(heads)]
    return nodes, inits, [_vi(p + "x", [1, f])], [_vi(p + "y", [1, rows, d])]


CASES.append(Case("ft_embed_pack", "fresh11: FT-Transformer's numeric embedding, a [1, F] input Unsqueezed, times W, plus b, a CLS token before",
                  lambda: _packed(_ft_embed_case, FT_EMBED_PACK, 304, used_only=True, opset=13), ("rk3588", "rk3566")))


# fresh11's EasyOCR CRNN: the VGG map [1, 256, 3, 63] swapped [0, 3, 1, 2] (a CPU Transpose layer on RK3566),
# pooled over its last axis to [1, 63, 256, 1], Squeezed, swapped [1, 0, 2] to [63, 1, 256] for a bidirectional
# LSTM: RK3566 ran the Squeeze and swap as one Reshape layer on its CPU (RK3588: NPU).
# (name, front ("swap": Relu, the swap, the pool; "pool": Relu, the pool; "unit": Relu of a [1, T, C, 1]), T, C, reader) (h20-rkconv).
SEQ_SWAP_PACK = (
    ("swap_t63_c256_lstm", "swap", 63, 256, "lstm"), ("swap_t64_c256_lstm", "swap", 64, 256, "lstm"),
    ("pool_t63_c256_lstm", "pool", 63, 256, "lstm"), ("unit_t63_c256_lstm", "unit", 63, 256, "lstm"),
    ("swap_t63_c64_lstm", "swap", 63, 64, "lstm"), ("pool_t64_c64_lstm", "pool", 64, 64, "lstm"),
)
# Measured, not held (RK3566; RK3588 all NPU): the swap read by a Relu (the swap and the Squeeze before it on the CPU); the
# map viewed [T, 1, C] by one Reshape into the LSTM (CPU); the map squeezed and not swapped, into a Relu (the Squeeze and the
# Relu on the CPU); a 3-D model input [1, 63, 256] swapped into an LSTM or a Relu (CPU: a 3-D input's layout Reshape).
SEQ_SWAP_MEASURED = (("swap_t63_c256_relu", "swap", 63, 256, "relu"), ("view_t63_c256_lstm", "view", 63, 256, "lstm"),
                     ("squeeze_only_t63_c256", "squeeze_only", 63, 256, "relu"), ("tokens_t63_c256_lstm", "tokens", 63, 256, "lstm"),
                     ("tokens_t63_c256_relu", "tokens", 63, 256, "relu"))


def _seq_swap_case(rng, spec) -> tuple[list, list, list, list]:
    name, front, t, c, reader = spec
    p = f"sq_{name}_"
    node = _prefixed(p)
    hidden = 16
    inits = [_const(p + "axes", np.array([3], np.int64))]
    if front == "swap":
        shape = [1, c, 3, t]
        nodes = [node("Relu", ["x"], "r"), node("Transpose", ["r"], "s", perm=[0, 3, 1, 2]),
                 node("AveragePool", ["s"], "m", kernel_shape=[1, 3], strides=[1, 3])]
    elif front == "pool":
        shape = [1, t, c, 3]
        nodes = [node("Relu", ["x"], "r"), node("AveragePool", ["r"], "m", kernel_shape=[1, 3], strides=[1, 3])]
    elif front == "tokens":  # a 3-D tensor [1, T, C], no map before it
        shape = [1, t, c]
        nodes = [node("Relu", ["x"], "q")]
    elif front == "unitc":  # a map of one channel, squeezed on its channel axis
        shape = [1, 1, t, c]
        inits[0] = _const(p + "axes", np.array([1], np.int64))
        nodes = [node("Relu", ["x"], "m"), node("Squeeze", ["m", "axes"], "q")]
    elif front == "linear":  # the squeezed map's tokens through a Linear
        shape = [1, t, c, 1]
        inits += [_const(p + "wl", _weights(rng, c, c)), _const(p + "bl", _weights(rng, c))]
        nodes = [node("Relu", ["x"], "m"), node("Squeeze", ["m", "axes"], "sq"), node("MatMul", ["sq", "wl"], "l"), node("Add", ["l", "bl"], "q")]
    else:
        shape = [1, t, c, 1]
        nodes = [node("Relu", ["x"], "m")]
    if front == "view":  # the map viewed [T, 1, C] by one Reshape
        inits.append(_const(p + "seq_shape", np.array([t, 1, c], np.int64)))
        nodes.append(node("Reshape", ["m", "seq_shape"], "seq"))
    elif front == "squeeze_only":  # no swap: the squeezed [1, T, C] read by a Relu
        nodes += [node("Squeeze", ["m", "axes"], "q"), node("Relu", ["q"], "y")]
        return nodes, inits, [_vi(p + "x", shape)], [_vi(p + "y", [1, t, c])]
    else:
        if front not in ("tokens", "unitc", "linear"):
            nodes.append(node("Squeeze", ["m", "axes"], "q"))
        nodes.append(node("Transpose", ["q"], "seq", perm=[1, 0, 2]))
    if reader == "lstm":
        inits += [_const(p + "W", _weights(rng, 2, 4 * hidden, c)), _const(p + "R", _weights(rng, 2, 4 * hidden, hidden)),
                  _const(p + "B", _weights(rng, 2, 8 * hidden))]
        nodes.append(node("LSTM", ["seq", "W", "R", "B"], "y", direction="bidirectional", hidden_size=hidden))
        out = [t, 2, 1, hidden]
    else:
        nodes.append(node("Relu", ["seq"], "y"))
        out = [t, 1, c]
    return nodes, inits, [_vi(p + "x", shape)], [_vi(p + "y", out)]


CASES.append(Case("seq_swap_pack", "fresh11: a pooled map Squeezed and swapped [1, 0, 2] into a sequence for an LSTM (EasyOCR's CRNN)",
                  lambda: _packed(_seq_swap_case, SEQ_SWAP_PACK, 305, opset=13), ("rk3588", "rk3566")))

# The embedding into the attention's projections (MatMul), and in opset 17 as FT-Transformer was exported.
FT_EMBED_PACK_2 = tuple((f"f{f}_d{d}_{tail}", f, d, tail) for f, d, tail in (
    (12, 128, "add_concat_mm"), (12, 128, "add_mm"), (12, 128, "add_concat_mm3"), (16, 128, "add_concat_mm")))
CASES.append(Case("ft_embed_pack_2", "fresh11: FT-Transformer's numeric embedding read by the attention's projections",
                  lambda: _packed(_ft_embed_case, FT_EMBED_PACK_2, 306, used_only=True, opset=13), ("rk3588", "rk3566")))
CASES.append(Case("ft_embed_pack_3", "fresh11: FT-Transformer's numeric embedding, opset 17",
                  lambda: _packed(_ft_embed_case, FT_EMBED_PACK[:4], 304, used_only=True, opset=17), ("rk3588", "rk3566")))

# Both ways: a map of one channel [1, 1, T, C] squeezed on axis 1 (DeepSpeech's; RK3566 NPU in fresh10), and tokens
# computed by a Linear from the squeezed map, swapped (the CRNN's second BiLSTM's input; RK3566 NPU).
SEQ_SWAP_PACK_2 = (("unitc_t63_c256_lstm", "unitc", 63, 256, "lstm"), ("unitc_t100_c128_lstm", "unitc", 100, 128, "lstm"),
                   ("linear_t63_c256_lstm", "linear", 63, 256, "lstm"))
CASES.append(Case("seq_swap_pack_2", "fresh11: a sequence swapped [1, 0, 2] for an LSTM from a one-channel map, or from a Linear's tokens",
                  lambda: _packed(_seq_swap_case, SEQ_SWAP_PACK_2, 307, opset=13), ("rk3588", "rk3566")))
# The embedding into a MatMul, by the feature count F.
FT_EMBED_PACK_4 = tuple((f"f{f}_d128_add_mm", f, 128, "add_mm") for f in (8, 24, 32, 48, 64, 4))
CASES.append(Case("ft_embed_pack_4", "fresh11: FT-Transformer's numeric embedding into a MatMul, by the feature count",
                  lambda: _packed(_ft_embed_case, FT_EMBED_PACK_4, 308, used_only=True, opset=13), ("rk3588", "rk3566")))


# fresh11's MAnet centre block (position attention, RK3566): scores [1, N, N] flattened [1, N*N] for a Softmax over all
# of them, viewed back [1, N, N], times v [1, N, C], the product viewed straight as the map [1, C, h, w] (no swap back).
# (name, side, channels, q/k channels, softmax ("all": flattened; "last": over the last axis, no views)) (h20-rkconv).
CENTRE_ATTENTION_MEASURED = (("s4_c512_all", 4, 512, 64, "all"), ("s8_c64_all", 8, 64, 16, "all"), ("s4_c512_last", 4, 512, 64, "last"))


def _centre_attention_case(rng, spec) -> tuple[list, list, list, list]:
    name, side, c, qk, softmax = spec
    p = f"ca_{name}_"
    node = _prefixed(p)
    n = side * side
    inits = [_const(p + "wq", _weights(rng, qk, c, 1, 1)), _const(p + "wk", _weights(rng, qk, c, 1, 1)), _const(p + "wv", _weights(rng, c, c, 1, 1)),
             _const(p + "qk_tokens", np.array([1, qk, n], np.int64)), _const(p + "v_tokens", np.array([1, c, n], np.int64)),
             _const(p + "flat", np.array([1, -1], np.int64)), _const(p + "square", np.array([1, n, n], np.int64)), _const(p + "map", np.array([1, c, side, side], np.int64))]
    nodes = [node("Conv", ["x", "wq"], "q"), node("Conv", ["x", "wk"], "k"), node("Conv", ["x", "wv"], "v"),
             node("Reshape", ["q", "qk_tokens"], "q_t"), node("Reshape", ["k", "qk_tokens"], "k_t"), node("Transpose", ["k_t"], "k_s", perm=[0, 2, 1]),
             node("Reshape", ["v", "v_tokens"], "v_t"), node("Transpose", ["v_t"], "v_s", perm=[0, 2, 1]), node("MatMul", ["k_s", "q_t"], "scores")]
    if softmax == "all":
        nodes += [node("Reshape", ["scores", "flat"], "flat_scores"), node("Softmax", ["flat_scores"], "weights_flat", axis=1),
                  node("Reshape", ["weights_flat", "square"], "weights")]
    else:
        nodes.append(node("Softmax", ["scores"], "weights", axis=-1))
    nodes += [node("MatMul", ["weights", "v_s"], "out_t"), node("Reshape", ["out_t", "map"], "out"), node("Add", ["x", "out"], "y")]
    return nodes, inits, [_vi(p + "x", [1, c, side, side])], [_vi(p + "y", [1, c, side, side])]


# Measured, not modelled (docs/audit.md "fresh11's TCN, FT-Transformer and CRNN on RKNN"): probed as packs of their own
# (seeds 309, 310), not held by tests/test_audit_forms.py.
CENTRE_ATTENTION_MEASURED_2 = tuple((f"s{s}_c{c}_last", s, c, 16, "last") for s, c in ((4, 64), (4, 128), (4, 256), (8, 512), (2, 512), (8, 128)))


# fresh11's BROS bbox sinusoid embedding (h20-rkattn, looked at after its blind score): per box
# coordinate x, a Mul by a constant, then Sin and Cos, Concatenated on the last axis; those pairs
# and more Sin/Cos results Concatenated again on the last axis, then a Linear. Variants: the inner
# Concats read only by the outer one on the same axis ("nested"); the outer Concat on another axis
# ("other_axis"); an inner Concat also read by a second node ("read_twice"); the inner pairs made
# on the NPU (Relu, Neg instead of Sin, Cos: "npu_pairs").
NESTED_CONCAT_VARIANTS = ("nested", "other_axis", "read_twice", "npu_pairs")


def nested_concat(variant: str, pairs: int = 3) -> onnx.ModelProto:
    """x [32, 32, 1, 1 + pairs] -> per column a Slice, Mul by a constant, two unary ops (Sin, Cos; or
    Relu, Neg), their Concat (the inner one); the first column's two results and the inner Concats
    Concatenated (the outer one) -> MatMul by a [2 + 2 * pairs, 16] weight -> y."""
    rng = np.random.default_rng(2111)
    unary = ("Relu", "Neg") if variant == "npu_pairs" else ("Sin", "Cos")
    axis = 2 if variant == "other_axis" else -1
    nodes, inits, parts, extra = [], [_const("scale", np.full([1, 1, 1, 1], 0.5, np.float32))], [], []
    for i in range(pairs + 1):
        inits += [_const(f"s{i}", np.array([i], np.int64)), _const(f"e{i}", np.array([i + 1], np.int64))]
        nodes += [helper.make_node("Slice", ["x", f"s{i}", f"e{i}", "ax3"], [f"col{i}"], name=f"slice{i}"),
                  helper.make_node("Mul", [f"col{i}", "scale"], [f"m{i}"], name=f"mul{i}"),
                  helper.make_node(unary[0], [f"m{i}"], [f"a{i}"], name=f"{unary[0].lower()}{i}"),
                  helper.make_node(unary[1], [f"m{i}"], [f"b{i}"], name=f"{unary[1].lower()}{i}")]
        if i == 0:
            parts += ["a0", "b0"]
            continue
        nodes.append(helper.make_node("Concat", [f"a{i}", f"b{i}"], [f"pair{i}"], name=f"inner{i}", axis=-1))
        parts.append(f"pair{i}")
    inits.append(_const("ax3", np.array([3], np.int64)))
    width = 2 + 2 * pairs
    out_shape = [32, 32, 1, width] if axis == -1 else [32, 32, 2 + 2 * pairs, 2]
    if axis == 2:  # every part [32, 32, 1, 2]: the first column's results joined on the last axis first
        nodes.append(helper.make_node("Concat", ["a0", "b0"], ["pair0"], name="inner0", axis=-1))
        parts = ["pair0"] + parts[2:]
        out_shape = [32, 32, pairs + 1, 2]
        width = 2
    nodes.append(helper.make_node("Concat", parts, ["joined"], name="outer", axis=axis))
    inits.append(_const("w", _weights(rng, width, 16)))
    nodes.append(helper.make_node("MatMul", ["joined", "w"], ["y"], name="linear"))
    outputs = [_vi("y", out_shape[:-1] + [16])]
    if variant == "read_twice":
        nodes.append(helper.make_node("Relu", ["pair1"], ["y2"], name="second_reader"))
        outputs.append(_vi("y2", [32, 32, 1, 2]))
    return _model(nodes, [_vi("x", [32, 32, 1, 1 + pairs])], outputs, inits, opset=13)


CASES += [Case(f"nested_concat_{v}", "fresh11: a Concat of two results read only by a Concat on the same axis (BROS's bbox sinusoid embedding)",
               lambda v=v: nested_concat(v), ("rk3588", "rk3566")) for v in NESTED_CONCAT_VARIANTS]


# fresh11's BROS relative box positions (h20-rkattn, looked at after its blind score): boxes [1, 32, 8]
# (computed) swapped to [32, 1, 8], Unsqueezed at 0 ([1, 32, 1, 8]) and at 2 ([32, 1, 1, 8]), one
# subtracted from the other ([32, 32, 1, 8]: every pair's difference). Variants: that form ("batch");
# the difference taken on the axes after the batch instead (x [1, 32, 8] Unsqueezed at 1 and 2:
# [1, 1, 32, 8] - [1, 32, 1, 8], "no_batch"); the swap left out (x Unsqueezed at 0 and 2 of [32, 1, 8]
# read straight: "no_swap").
# "gathers", "gathers_no_swap": the difference read as BROS reads it, each of its 8 coordinates picked by a Gather of
# the last axis (a Sin of each, Concatenated): measured on RK3588 and RK3566 (2026-12-06), not held (docs/audit.md:
# RK3566 runs unsqueeze_b as a CPU Transpose layer, the Gathers one NPU Split; RK3588 all NPU; not modelled).
PAIRWISE_DIFFERENCE_VARIANTS = ("batch", "no_batch", "no_swap")
PAIRWISE_DIFFERENCE_MEASURED = ("gathers", "gathers_no_swap")


def pairwise_difference(variant: str) -> onnx.ModelProto:
    """x -> Mul by a constant -> (Transpose [1, 0, 2]) -> two Unsqueezes -> Sub -> Relu -> y (or the Gathers)."""
    first, second, shape = {"batch": ([0], [2], [1, 32, 8]), "no_batch": ([1], [2], [1, 32, 8]), "no_swap": ([0], [2], [32, 1, 8]),
                            "gathers": ([0], [2], [1, 32, 8]), "gathers_no_swap": ([0], [2], [32, 1, 8])}[variant]
    inits = [_const("scale", np.full([1, 1, 8], 0.5, np.float32)), _const("ax_a", np.array(first, np.int64)), _const("ax_b", np.array(second, np.int64))]
    nodes = [helper.make_node("Mul", ["x", "scale"], ["m"], name="mul")]
    boxes = "m"
    if variant in ("batch", "gathers"):
        nodes.append(helper.make_node("Transpose", ["m"], ["t"], name="swap", perm=[1, 0, 2]))
        boxes = "t"
    nodes += [helper.make_node("Unsqueeze", [boxes, "ax_a"], ["a"], name="unsqueeze_a"),
              helper.make_node("Unsqueeze", [boxes, "ax_b"], ["b"], name="unsqueeze_b"),
              helper.make_node("Sub", ["a", "b"], ["d"], name="sub")]
    out = [1, 32, 32, 8] if variant == "no_batch" else [32, 32, 1, 8]
    if not variant.startswith("gathers"):
        nodes.append(helper.make_node("Relu", ["d"], ["y"], name="relu"))
        return _model(nodes, [_vi("x", shape)], [_vi("y", out)], inits, opset=13)
    # BROS: each of the 8 coordinates' differences picked by a Gather of the last axis, Sin of each, Concatenated
    for i in range(8):
        inits.append(_const(f"i{i}", np.array(i, np.int64)))
        nodes += [helper.make_node("Gather", ["d", f"i{i}"], [f"g{i}"], name=f"gather{i}", axis=3),
                  helper.make_node("Sin", [f"g{i}"], [f"s{i}"], name=f"sin{i}")]
    nodes.append(helper.make_node("Concat", [f"s{i}" for i in range(8)], ["y"], name="concat", axis=-1))
    return _model(nodes, [_vi("x", shape)], [_vi("y", [32, 32, 8])], inits, opset=13)


CASES += [Case(f"pairwise_difference_{v}", "fresh11: every pair's difference of boxes by two Unsqueezes and a Sub (BROS's relative positions)",
               lambda v=v: pairwise_difference(v), ("rk3588", "rk3566")) for v in PAIRWISE_DIFFERENCE_VARIANTS]


# fresh11's DiffLlama value (h20-rkattn, looked at after its blind score): one key/value head repeated
# (repeat_kv: Unsqueeze, Expand [1, 1, 2, T, D], Reshape [1, 2, T, D]), cut back into its 2 copies (Slices
# along axis 1), the copies Concatenated on the last axis ([1, 1, T, 2D]), an Expand to the same shape
# (the export's no-op), a Tile [1, 2, 1, 1], then attn @ v. Variants: the head from the Linear, split and
# swapped ("lin", as DiffLlama); a Relu of a model input [1, 1, T, D] ("input4", as gqa_repeat_pack's
# source measured on the NPU); the Tile straight of the head, no repeat_kv and no cut ("tile_only").
DIFF_VALUE_VARIANTS = ("lin", "input4", "tile_only")


def diff_value(variant: str, t: int = 32, d: int = 32) -> onnx.ModelProto:
    """x [1, T, 2D] -> q (2 heads), k (1 head, repeat_kv), scores, Softmax; v (1 head) as the variant writes it;
    attn @ v [1, 2, T, 2D] -> Relu -> y."""
    rng = np.random.default_rng(2112)
    c = 2 * d
    inits = [_const("w_q", _weights(rng, c, 2 * d)), _const("w_k", _weights(rng, c, d)), _const("w_v", _weights(rng, c, d)),
             _const("q_shape", np.array([1, t, 2, d], np.int64)), _const("kv_shape", np.array([1, t, 1, d], np.int64)),
             _const("ax2", np.array([2], np.int64)), _const("ax1", np.array([1], np.int64)), _const("e5", np.array([1, 1, 2, t, d], np.int64)),
             _const("merged", np.array([1, 2, t, d], np.int64)), _const("s0", np.array([0], np.int64)), _const("s1", np.array([1], np.int64)),
             _const("s2", np.array([2], np.int64)), _const("same", np.array([1, 1, t, 2 * d], np.int64)),
             _const("reps", np.array([1, 2, 1, 1], np.int64)), _const("scale", np.array(d ** -0.5, np.float32))]
    n = helper.make_node
    nodes = [n("MatMul", ["x", "w_q"], ["q_lin"], name="q_lin"), n("Reshape", ["q_lin", "q_shape"], ["q_split"], name="q_split"),
             n("Transpose", ["q_split"], ["q"], name="q_heads", perm=[0, 2, 1, 3])]
    for role in ("k", "v") if variant != "input4" else ("k",):
        nodes += [n("MatMul", ["x", f"w_{role}"], [f"{role}_lin"], name=f"{role}_lin"),
                  n("Reshape", [f"{role}_lin", "kv_shape"], [f"{role}_split"], name=f"{role}_split"),
                  n("Transpose", [f"{role}_split"], [f"{role}_head"], name=f"{role}_heads", perm=[0, 2, 1, 3])]
    inputs = [_vi("x", [1, t, c])]
    v_head = "v_head"
    if variant == "input4":
        inputs.append(_vi("v_in", [1, 1, t, d]))
        nodes.append(n("Relu", ["v_in"], ["v_relu"], name="v_relu"))
        v_head = "v_relu"
    for role, head in (("k", "k_head"), ("v", v_head)):
        if role == "v" and variant == "tile_only":
            continue
        nodes += [n("Unsqueeze", [head, "ax2"], [f"{role}_u"], name=f"{role}_unsqueeze"), n("Expand", [f"{role}_u", "e5"], [f"{role}_e"], name=f"{role}_expand"),
                  n("Reshape", [f"{role}_e", "merged"], [f"{role}_rep"], name=f"{role}_repeat")]
    if variant == "tile_only":
        nodes.append(n("Concat", [v_head, v_head], ["v_cat"], name="v_concat", axis=-1))
    else:
        nodes += [n("Slice", ["v_rep", "s0", "s1", "ax1"], ["v_c0"], name="v_chunk0"), n("Slice", ["v_rep", "s1", "s2", "ax1"], ["v_c1"], name="v_chunk1"),
                  n("Concat", ["v_c0", "v_c1"], ["v_cat"], name="v_concat", axis=-1)]
    nodes += [n("Expand", ["v_cat", "same"], ["v_same"], name="v_same"), n("Tile", ["v_same", "reps"], ["v"], name="v_tile"),
              n("Transpose", ["k_rep"], ["k_swap"], name="k_swap", perm=[0, 1, 3, 2]), n("MatMul", ["q", "k_swap"], ["scores"], name="scores"),
              n("Mul", ["scores", "scale"], ["scaled"], name="scaled"), n("Softmax", ["scaled"], ["attn"], name="softmax", axis=-1),
              n("MatMul", ["attn", "v"], ["ctx"], name="attn_v"), n("Relu", ["ctx"], ["y"], name="out")]
    used = {i for node in nodes for i in node.input}
    return _model(nodes, inputs, [_vi("y", [1, 2, t, 2 * d])], [i for i in inits if i.name in used], opset=14)


CASES += [Case(f"diff_value_{v}", "fresh11: DiffLlama's value: one head repeated, cut into its copies, rejoined on the last axis, Tiled into attn @ v",
               lambda v=v: diff_value(v), ("rk3588", "rk3566")) for v in DIFF_VALUE_VARIANTS]


# fresh11's DiffLlama group norm (h20-rkattn, looked at after its blind score): an RMS norm written as a
# division, x / Sqrt(ReduceMean(x * x) + eps) (no reciprocal, no Mul), of a Conv's [1, 8, 8, 8] result.
# Variants: over the last axis ("last", DiffLlama's), over the channels ("channel"); the mean of |x|
# instead of x * x ("abs": not an RMS norm, a Sqrt and a division by a computed tensor).
RMS_DIVIDED_VARIANTS = ("last", "channel", "abs")


def rms_divided(variant: str) -> onnx.ModelProto:
    """Conv -> (Mul(c, c) or Abs) -> ReduceMean -> Add eps -> Sqrt -> Div(c, root) -> Conv."""
    rng = np.random.default_rng(2113)
    inits = [_const("w1", _weights(rng, 8, 3, 3, 3)), _const("w2", _weights(rng, 4, 8, 3, 3)), _const("eps", np.array(1e-6, np.float32))]
    n = helper.make_node
    nodes = [n("Conv", ["x", "w1"], ["c"], name="conv1", pads=[1, 1, 1, 1]),
             n("Abs", ["c"], ["sq"], name="abs") if variant == "abs" else n("Mul", ["c", "c"], ["sq"], name="square"),
             n("ReduceMean", ["sq"], ["m"], name="mean", axes=[1] if variant == "channel" else [-1], keepdims=1),
             n("Add", ["m", "eps"], ["d"], name="eps_add"), n("Sqrt", ["d"], ["s"], name="sqrt"),
             n("Div", ["c", "s"], ["q"], name="div"), n("Conv", ["q", "w2"], ["y"], name="conv2", pads=[1, 1, 1, 1])]
    return _model(nodes, [_vi("x", [1, 3, 8, 8])], [_vi("y", [1, 4, 8, 8])], inits)


CASES += [Case(f"rms_divided_{v}", "fresh11: an RMS norm written as x / Sqrt(mean(x * x) + eps) (DiffLlama's group norm)",
               lambda v=v: rms_divided(v), ("rk3588", "rk3566")) for v in RMS_DIVIDED_VARIANTS]


# fresh12's MixDehazeNet and TEED (looked at after their blind score): a DepthToSpace of blocksize 1 (an
# identity, as their PixelShuffle(1) exports) goes to the CPU on RK3588 and RK3566, while MixDehazeNet's
# blocksize-2 ones stay on the NPU. Varied one at a time: the blocksize (1, 2), the mode (CRD, DCR), the
# channels, and what reads it (a Conv, an Add with its input, the model output).
# (name, blocksize, mode, channels in, side, reader)
DEPTH_TO_SPACE_PACK = (
    ("b1_crd_c24_conv", 1, "CRD", 24, 32, "conv"), ("b1_dcr_c24_conv", 1, "DCR", 24, 32, "conv"),
    ("b2_crd_c96_conv", 2, "CRD", 96, 16, "conv"), ("b2_dcr_c96_conv", 2, "DCR", 96, 16, "conv"),
    ("b1_crd_c4_out", 1, "CRD", 4, 32, "output"), ("b1_crd_c24_add", 1, "CRD", 24, 32, "add"),
    ("b2_crd_c16_out", 2, "CRD", 16, 32, "output"), ("b1_crd_c64_conv", 1, "CRD", 64, 16, "conv"),
)


def _depth_to_space_case(rng, spec) -> tuple[list, list, list, list]:
    name, block, mode, c, side, reader = spec
    p = f"d2s_{name}_"
    node = _prefixed(p)
    out_c = c // (block * block)
    inits = [_const(p + "w", _weights(rng, c, 8, 3, 3)), _const(p + "w2", _weights(rng, 8, out_c, 1, 1))]
    nodes = [node("Conv", ["x", "w"], "m", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             node("DepthToSpace", ["m"], "d" if reader != "output" else "y", blocksize=block, mode=mode)]
    if reader == "conv":
        nodes.append(node("Conv", ["d", "w2"], "y", kernel_shape=[1, 1]))
    elif reader == "add":
        nodes.append(node("Add", ["d", "m"], "y"))
    shape = [1, 8 if reader == "conv" else out_c, side * block, side * block]
    return nodes, inits, [_vi(p + "x", [1, 8, side, side])], [_vi(p + "y", shape)]


CASES.append(Case("depth_to_space_pack", "fresh12: a DepthToSpace after a Conv by blocksize (1, 2), mode (CRD, DCR), channels and reader (MixDehazeNet's and TEED's PixelShuffle(1))",
                  lambda: _packed(_depth_to_space_case, DEPTH_TO_SPACE_PACK, 2201, used_only=True, opset=13), ("rk3566", "rk3588")))


# fresh12's RealPLKSR (looked at after its blind score): its input [1, 3, 64, 64] Unsqueezed to [1, 3, 1, 64, 64], Tiled
# [1, 1, 16, 1, 1] and Reshaped to [1, 48, 64, 64] (a repeat_interleave of the channels, added to the features) runs on
# RK3588's NPU, where the audit knew no 5-D Tile. Varied: the repeated axis of size 1 or 2, which axis, the Tile's
# input a model input's Unsqueeze or a Conv's map Reshaped, the result Reshaped to 4-D or the model output.
# Recorded on RK3588 only: on RK3566 the Tiles are placed alike, but Reshapes around them go to the CPU in ways
# not modelled (docs/audit.md "fresh12's DepthToSpace of blocksize 1 and RealPLKSR's 5-D Tile").
# (name, channels, 5-D shape from [1, C, 16, 16], repeats, source, reader)
TILE_FIVE_D_PACK = (
    ("unsq_a2_r16_reshape", 3, [1, 3, 1, 16, 16], [1, 1, 16, 1, 1], "input", "reshape"),
    ("unsq_a2_r4_out", 3, [1, 3, 1, 16, 16], [1, 1, 4, 1, 1], "input", "output"),
    ("conv_a2_r4_reshape", 8, [1, 8, 1, 16, 16], [1, 1, 4, 1, 1], "conv", "reshape"),
    ("conv_size2_a2_r4_reshape", 8, [1, 4, 2, 16, 16], [1, 1, 4, 1, 1], "conv", "reshape"),
    ("conv_a1_r4_reshape", 8, [1, 8, 1, 16, 16], [1, 4, 1, 1, 1], "conv", "reshape"),
    ("conv_a4_r2_reshape", 8, [1, 8, 16, 16, 1], [1, 1, 1, 1, 2], "conv", "reshape"),
    ("conv_c1_a1_r4_reshape", 8, [1, 1, 8, 16, 16], [1, 4, 1, 1, 1], "conv", "reshape"),
    ("conv_longt5_a1_r4_reshape", 8, [1, 1, 8, 2, 128], [1, 4, 1, 1, 1], "conv", "reshape"),
    ("conv_a3_r2_reshape", 8, [1, 8, 16, 1, 16], [1, 1, 1, 2, 1], "conv", "reshape"),
    ("conv_a0_r2_reshape", 8, [1, 8, 1, 16, 16], [2, 1, 1, 1, 1], "conv", "reshape"),
    ("unsq_a2_r16_shape", 3, [1, 3, 1, 16, 16], [1, 1, 16, 1, 1], "input", "shape"),
)


def _tile_five_d_case(rng, spec) -> tuple[list, list, list, list]:
    name, c, shape, repeats, source, reader = spec
    p = f"t5_{name}_"
    node = _prefixed(p)
    tiled = [s * r for s, r in zip(shape, repeats)]
    out_c = int(np.prod(tiled)) // (16 * 16)
    inits = [_const(p + "shape", np.array(shape, np.int64)), _const(p + "reps", np.array(repeats, np.int64)),
             _const(p + "flat", np.array([1, out_c, 16, 16], np.int64)), _const(p + "w", _weights(rng, c, c, 3, 3)),
             _const(p + "w2", _weights(rng, 8, out_c, 1, 1))]
    nodes = [node("Conv", ["x", "w"], "m", kernel_shape=[3, 3], pads=[1, 1, 1, 1])] if source == "conv" else []
    nodes += [node("Reshape", ["m" if source == "conv" else "x", "shape"], "five"),
              node("Tile", ["five", "reps"], "y" if reader == "output" else "t")]
    if reader == "shape":  # RealPLKSR's: the 4-D shape taken from the Tile's own (Shape, Slice, Concat)
        inits += [_const(p + "zero", np.array([0], np.int64)), _const(p + "one", np.array([1], np.int64)),
                  _const(p + "rest", np.array([-1, 16, 16], np.int64))]
        nodes += [node("Shape", ["t"], "s"), node("Slice", ["s", "zero", "one"], "batch"), node("Concat", ["batch", "rest"], "flatc", axis=0)]
    if reader in ("reshape", "shape"):
        nodes += [node("Reshape", ["t", "flatc" if reader == "shape" else "flat"], "flat4"), node("Conv", ["flat4", "w2"], "y", kernel_shape=[1, 1])]
    out = [1, 8, 16, 16] if reader in ("reshape", "shape") else tiled
    return nodes, inits, [_vi(p + "x", [1, c, 16, 16])], [_vi(p + "y", out)]


CASES.append(Case("tile_five_d_pack", "fresh12: a 5-D Tile of a map Reshaped to 5-D, by which axis it repeats and its size, its source and reader (RealPLKSR's repeat_interleave of its input)",
                  lambda: _packed(_tile_five_d_case, TILE_FIVE_D_PACK, 2202, used_only=True, opset=13), ("rk3588",)))
# LongT5's TransientGlobalSelfAttention (fresh11, RK3588: its 5-D Tiles [1, 1, 8, 2, 32] by [1, n, 1, 1, 1] on the CPU):
# the Tile after an Expand by ones, and read by a Concat on axis 2, each way. (name, expand, reader)
TILE_FIVE_D_PACK_2 = (("plain_reshape", False, "reshape"), ("expand_reshape", True, "reshape"),
                      ("plain_concat", False, "concat"), ("expand_concat", True, "concat"))


def _tile_five_d_case_2(rng, spec) -> tuple[list, list, list, list]:
    name, expand, reader = spec
    p = f"t52_{name}_"
    node = _prefixed(p)
    out_c = 32
    inits = [_const(p + "shape", np.array([1, 1, 8, 2, 128], np.int64)), _const(p + "reps", np.array([1, 4, 1, 1, 1], np.int64)),
             _const(p + "ones", np.ones(5, np.int64)), _const(p + "other_shape", np.array([1, 4, 8, 2, 128], np.int64)),
             _const(p + "flat", np.array([1, out_c, 16, 16], np.int64)), _const(p + "w", _weights(rng, 8, 8, 3, 3)),
             _const(p + "wo", _weights(rng, 32, 8, 1, 1)), _const(p + "w2", _weights(rng, 8, out_c, 1, 1))]
    nodes = [node("Conv", ["x", "w"], "m", kernel_shape=[3, 3], pads=[1, 1, 1, 1]), node("Reshape", ["m", "shape"], "five")]
    if expand:
        nodes.append(node("Expand", ["five", "ones"], "e"))
    nodes.append(node("Tile", ["e" if expand else "five", "reps"], "t"))
    tiled = "t"
    if reader == "concat":
        nodes += [node("Conv", ["x", "wo"], "mo", kernel_shape=[1, 1]), node("Reshape", ["mo", "other_shape"], "other"),
                  node("Concat", ["other", "t"], "y", axis=2)]  # Reshaped to 4-D after, the toolkit's own Reshape fails
        return nodes, inits, [_vi(p + "x", [1, 8, 16, 16])], [_vi(p + "y", [1, 4, 16, 2, 128])]
    nodes += [node("Reshape", ["t", "flat"], "flat4"), node("Conv", ["flat4", "w2"], "y", kernel_shape=[1, 1])]
    return nodes, inits, [_vi(p + "x", [1, 8, 16, 16])], [_vi(p + "y", [1, 8, 16, 16])]


CASES.append(Case("tile_five_d_pack_2", "fresh12: LongT5's 5-D Tile of one block by the blocks: after an Expand by ones, read by a Concat on axis 2",
                  lambda: _packed(_tile_five_d_case_2, TILE_FIVE_D_PACK_2, 2203, used_only=True, opset=13), ("rk3588",)))
