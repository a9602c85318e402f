"""TIDL rule table: small models built with onnx.helper trip each rule, per SoC and per TIDL release.

The limits come from TI's edgeai-tidl-tools documents (docs/operators.md at release 11.02 and
docs/supported_ops_rts_versions.md at tag 11_00_06_00, copied in shared/reference/tidl/). Each
case below names the rule it must trip, the chips it trips on, and is checked against the chips
it must NOT trip on, so a limit that leaks to the wrong SoC or release fails here.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto

from edgedeploy.audit import Placement, audit_model
from edgedeploy.targets import find_chip

from tests.tidl_models import conv, f32, i64, make_model, node, save_and_load

ALL = ("tda4vm", "am62a", "am68a", "am69a")
NOT_AM62A = ("tda4vm", "am68a", "am69a")


def _rules(chip: str, version: str):
    target, _ = find_chip(chip)
    return target.rule_set(chip, tidl_version=version)


# Each case: (id, model builder, node to check, rule expected, {version: chips it fires on}).
# The node must be on the accelerator (no violation of that rule) on every other chip listed in ALL.
def _conv(x_shape, w_shape, **attrs):
    return make_model([conv(**attrs)], {"x": x_shape}, {"w": f32(*w_shape)})


def _resize(scales=None, out_sizes=None, **attrs):
    inputs = ["x", "", "scales"] if scales is not None else ["x", "", "", "sizes"]
    inits = {"scales": np.asarray(scales, np.float32)} if scales is not None else {"sizes": i64(*out_sizes)}
    return make_model([node("Resize", inputs, **attrs)], {"x": (1, 3, 8, 8)}, inits, opset=13)


def _slice(starts, ends, axes=None, steps=None, x=(1, 3, 8, 8), variable=()):
    names = ["x", "starts", "ends"] + (["axes"] if axes is not None else []) + (["steps"] if steps is not None else [])
    values = {"starts": i64(*starts), "ends": i64(*ends), "axes": None if axes is None else i64(*axes), "steps": None if steps is None else i64(*steps)}
    inits = {k: v for k, v in values.items() if v is not None and k not in variable}
    inputs = {"x": x, **{k: values[k].shape for k in variable}}
    types = {k: TensorProto.INT64 for k in variable}
    return make_model([node("Slice", names)], inputs, inits, input_types=types)


CASES = [
    # --- Conv (per SoC) ---
    ("conv 3x3 stride 3", lambda: _conv((1, 8, 30, 30), (8, 8, 3, 3), strides=[3, 3]), "conv", "conv_3x3_stride_3_on_am62a", {"11.02": ("am62a",), "11.00": ("am62a",)}),
    ("conv padding over width", lambda: _conv((1, 4, 8, 4), (4, 4, 3, 3), pads=[5, 5, 5, 5]), "conv", "conv_padding_wider_than_input_on_am62a", {"11.02": ("am62a",), "11.00": ("am62a",)}),
    ("conv narrower than padding 11.02", lambda: _conv((1, 4, 8, 4), (4, 4, 3, 3), pads=[5, 5, 5, 5]), "conv", "conv_input_narrower_than_padding_on_am62a", {"11.02": ("am62a",)}),
    ("conv narrower than padding 11.00", lambda: _conv((1, 4, 8, 4), (4, 4, 3, 3), pads=[5, 5, 5, 5]), "conv", "conv_input_narrower_than_padding", {"11.00": ALL}),
    ("conv 9x9 stride 2", lambda: _conv((1, 2, 32, 32), (2, 2, 9, 9), strides=[2, 2]), "conv", "conv_stride_2_kernel_limit", {"11.02": ALL, "11.00": ALL}),
    ("conv 3x3 stride 4", lambda: _conv((1, 2, 32, 32), (2, 2, 3, 3), strides=[4, 4]), "conv", "conv_stride_4_kernel", {"11.02": ALL, "11.00": ALL}),
    ("conv unequal strides", lambda: _conv((1, 2, 16, 16), (2, 2, 3, 3), strides=[1, 2]), "conv", "conv_equal_strides", {"11.02": ALL, "11.00": ALL}),
    ("depthwise 5x5s1", lambda: _conv((1, 4, 16, 16), (4, 1, 5, 5), group=4), "conv", "depthwise_conv_kernels", {"11.00": ALL}),
    ("depthwise 9x9s1", lambda: _conv((1, 4, 16, 16), (4, 1, 9, 9), group=4), "conv", "depthwise_conv_kernels", {"11.02": ALL, "11.00": ALL}),
    ("conv variable weights", lambda: make_model([conv()], {"x": (1, 2, 8, 8), "w": (2, 2, 3, 3)}), "conv", "single_variable_input", {"11.02": ALL, "11.00": ALL}),
    ("conv 5-D input dims", lambda: make_model([node("Conv", ["x", "w"], name="conv")], {"x": (2, 2, 4, 4, 4)}, {"w": f32(2, 2, 1, 1, 1)}), "conv", "variable_input_dims_max_4", {"11.02": ALL, "11.00": ALL}),
    # --- Pooling ---
    ("gap over 1024", lambda: make_model([node("GlobalAveragePool", ["x"])], {"x": (1, 8, 40, 40)}), "globalaveragepool", "global_average_pool_plane", {"11.02": ALL}),
    ("gap 3-D", lambda: make_model([node("GlobalAveragePool", ["x"])], {"x": (1, 1, 4, 4, 4)}), "globalaveragepool", "global_average_pool_rank", {"11.02": ALL}),
    ("maxpool 2x2s1", lambda: make_model([node("MaxPool", ["x"], kernel_shape=[2, 2], strides=[1, 1])], {"x": (1, 3, 8, 8)}), "maxpool", "pool_kernel_and_stride", {"11.02": ALL, "11.00": ALL}),
    ("avgpool 5x5", lambda: make_model([node("AveragePool", ["x"], kernel_shape=[5, 5], strides=[1, 1])], {"x": (1, 3, 8, 8)}), "averagepool", "pool_kernel_and_stride", {"11.02": ALL, "11.00": ALL}),
    ("maxpool dilated", lambda: make_model([node("MaxPool", ["x"], kernel_shape=[3, 3], dilations=[2, 2])], {"x": (1, 3, 16, 16)}), "maxpool", "pool_default_dilations", {"11.02": ALL, "11.00": ALL}),
    ("maxpool indices", lambda: make_model([node("MaxPool", ["x"], outputs=("y", "idx"), kernel_shape=[2, 2], strides=[2, 2])], {"x": (1, 3, 8, 8)}, outputs=["y", "idx"]), "maxpool", "max_pool_single_output", {"11.02": ALL}),
    ("maxpool storage order", lambda: make_model([node("MaxPool", ["x"], kernel_shape=[2, 2], strides=[2, 2], storage_order=1)], {"x": (1, 3, 8, 8)}), "maxpool", "max_pool_storage_order", {"11.00": ALL}),
    ("avgpool constant input", lambda: make_model([node("AveragePool", ["c"], kernel_shape=[2, 2], strides=[2, 2]), node("Add", ["y", "x"], outputs=("z",), name="add")], {"x": (1, 3, 4, 4)}, {"c": f32(1, 3, 8, 8)}, outputs=["z"]), "averagepool", "pool_variable_input", {"11.02": ALL, "11.00": ALL}),
    # --- Activations / element-wise ---
    ("prelu variable slope", lambda: make_model([node("PRelu", ["x", "s"])], {"x": (1, 3, 8, 8), "s": (3, 1, 1)}), "prelu", "prelu_constant_slope", {"11.02": ALL, "11.00": ALL}),
    ("prelu slope on width", lambda: make_model([node("PRelu", ["x", "s"])], {"x": (1, 3, 8, 8)}, {"s": f32(8)}), "prelu", "prelu_slope_per_channel", {"11.02": ALL}),
    ("sum of three", lambda: make_model([node("Sum", ["a", "b", "c"])], {"a": (1, 3, 4, 4), "b": (1, 3, 4, 4), "c": (1, 3, 4, 4)}), "sum", "eltwise_two_inputs", {"11.02": ALL, "11.00": ALL}),
    ("add height vector", lambda: make_model([node("Add", ["x", "v"])], {"x": (1, 3, 8, 8)}, {"v": f32(1, 1, 8, 1)}), "add", "eltwise_vector_axis", {"11.02": ALL, "11.00": ALL}),
    ("sub two variables", lambda: make_model([node("Sub", ["a", "b"])], {"a": (1, 3, 4, 4), "b": (1, 3, 4, 4)}), "sub", "sub_both_variable", {"11.00": ALL}),
    ("sub 2-D constant", lambda: make_model([node("Sub", ["x", "c"])], {"x": (1, 3, 4, 4)}, {"c": f32(1, 3, 4, 1)}), "sub", "sub_constant_is_vector", {"11.00": ALL}),
    ("add batch broadcast", lambda: make_model([node("Add", ["a", "b"])], {"a": (2, 3), "b": (1, 3)}), "add", "add_mul_no_batch_broadcast", {"11.00": ALL}),
    ("relu rank 7", lambda: make_model([node("Relu", ["x"])], {"x": (2,) * 7}), "relu", "variable_input_dims_max_6", {"11.02": ALL, "11.00": ALL}),
    ("min 11.00", lambda: make_model([node("Min", ["a", "b"])], {"a": (1, 3), "b": (1, 3)}), "min", "operator_not_on_accelerator", {"11.00": ALL}),
    ("einsum", lambda: make_model([node("Einsum", ["a", "b"], equation="ij,jk->ik")], {"a": (2, 3), "b": (3, 4)}), "einsum", "operator_not_on_accelerator", {"11.02": ALL, "11.00": ALL}),
    # --- Gemm / MatMul ---
    ("gemm transA", lambda: make_model([node("Gemm", ["a", "b"], transA=1)], {"a": (4, 1)}, {"b": f32(4, 5)}), "gemm", "gemm_parameters", {"11.02": ALL, "11.00": ALL}),
    ("gemm alpha", lambda: make_model([node("Gemm", ["a", "b"], alpha=2.0)], {"a": (1, 4)}, {"b": f32(4, 5)}), "gemm", "gemm_parameters", {"11.02": ALL, "11.00": ALL}),
    ("gemm scalar-like bias", lambda: make_model([node("Gemm", ["a", "b", "c"])], {"a": (1, 4)}, {"b": f32(4, 5), "c": f32(1, 1)}), "gemm", "gemm_bias_vector", {"11.02": ALL, "11.00": ALL}),
    ("gemm variable B", lambda: make_model([node("Gemm", ["a", "b"])], {"a": (1, 4), "b": (4, 5)}), "gemm", "gemm_single_variable_input", {"11.02": ALL}),
    ("matmul 1-D filter", lambda: make_model([node("MatMul", ["a", "w"])], {"a": (1, 4)}, {"w": f32(4)}), "matmul", "inner_product_filter_rank", {"11.02": ALL, "11.00": ALL}),
    ("matmul 5-D", lambda: make_model([node("MatMul", ["a", "w"])], {"a": (2, 2, 2, 2, 2)}, {"w": f32(2, 2)}), "matmul", "variable_input_dims_max_4", {"11.02": ALL, "11.00": ALL}),
    # --- Softmax / normalisation ---
    ("softmax on channels", lambda: make_model([node("Softmax", ["x"], axis=1)], {"x": (1, 3, 8, 8)}), "softmax", "softmax_axis", {"11.02": ALL, "11.00": ALL}),
    ("batchnorm training", lambda: make_model([node("BatchNormalization", ["x", "s", "b", "m", "v"], outputs=("y", "rm", "rv"), training_mode=1)], {"x": (1, 3, 4, 4)}, {"s": f32(3), "b": f32(3), "m": f32(3), "v": f32(3, value=1.0)}, outputs=["y", "rm", "rv"], opset=15), "batchnormalization", "batchnorm_inference_mode", {"11.02": ALL, "11.00": ALL}),
    ("batchnorm rank 6", lambda: make_model([node("BatchNormalization", ["x", "s", "b", "m", "v"])], {"x": (1, 3, 2, 2, 2, 2)}, {"s": f32(3), "b": f32(3), "m": f32(3), "v": f32(3, value=1.0)}, opset=15), "batchnormalization", "batchnorm_rank", {"11.02": ALL}),
    ("batchnorm variable mean", lambda: make_model([node("BatchNormalization", ["x", "s", "b", "m", "v"])], {"x": (1, 3, 4, 4), "m": (3,)}, {"s": f32(3), "b": f32(3), "v": f32(3, value=1.0)}, opset=15), "batchnormalization", "batchnorm_constant_parameters", {"11.02": ALL}),
    ("batchnorm rank 7 dims", lambda: make_model([node("BatchNormalization", ["x", "s", "b", "m", "v"])], {"x": (2, 3, 2, 2, 2, 2, 2)}, {"s": f32(3), "b": f32(3), "m": f32(3), "v": f32(3, value=1.0)}, opset=15), "batchnormalization", "variable_input_dims_max_6", {"11.00": ALL}),
    ("instancenorm variable scale", lambda: make_model([node("InstanceNormalization", ["x", "s", "b"])], {"x": (1, 3, 4, 4), "s": (3,)}, {"b": f32(3)}), "instancenormalization", "instancenorm_parameters", {"11.02": ALL}),
    ("layernorm axis 1", lambda: make_model([node("LayerNormalization", ["x", "s", "b"], axis=1)], {"x": (1, 4, 8)}, {"s": f32(4, 8), "b": f32(4, 8)}), "layernormalization", "layernorm_width_axis", {"11.02": ALL, "11.00": ALL}),
    ("layernorm 2-D scale", lambda: make_model([node("LayerNormalization", ["x", "s", "b"], axis=1)], {"x": (1, 4, 8)}, {"s": f32(4, 8), "b": f32(4, 8)}), "layernormalization", "layernorm_parameter_shape", {"11.02": ALL, "11.00": ALL}),
    # --- ConvTranspose ---
    ("deconv 3x3s2", lambda: make_model([node("ConvTranspose", ["x", "w"], strides=[2, 2])], {"x": (1, 4, 8, 8)}, {"w": f32(4, 4, 3, 3)}), "convtranspose", "deconv_kernel_and_stride", {"11.00": ALL}),
    ("deconv 5x5s2", lambda: make_model([node("ConvTranspose", ["x", "w"], strides=[2, 2])], {"x": (1, 4, 8, 8)}, {"w": f32(4, 4, 5, 5)}), "convtranspose", "deconv_kernel_and_stride", {"11.02": ALL, "11.00": ALL}),
    ("deconv dilated", lambda: make_model([node("ConvTranspose", ["x", "w"], strides=[2, 2], dilations=[2, 2])], {"x": (1, 4, 8, 8)}, {"w": f32(4, 4, 2, 2)}), "convtranspose", "deconv_default_dilations", {"11.02": ALL}),
    ("deconv grouped", lambda: make_model([node("ConvTranspose", ["x", "w"], strides=[2, 2], group=2)], {"x": (1, 4, 8, 8)}, {"w": f32(4, 2, 2, 2)}), "convtranspose", "deconv_group", {"11.00": ALL}),
    ("conv kernel_shape mismatch", lambda: make_model([node("ConvTranspose", ["x", "w"], strides=[2, 2], kernel_shape=[3, 3])], {"x": (1, 4, 8, 8)}, {"w": f32(4, 4, 2, 2)}), "convtranspose", "kernel_shape_matches_weights", {"11.02": ALL, "11.00": ALL}),
    # --- Concat / Slice / Split ---
    ("concat batch", lambda: make_model([node("Concat", ["a", "b"], axis=0)], {"a": (1, 3, 4, 4), "b": (1, 3, 4, 4)}), "concat", "concat_axis", {"11.02": ALL, "11.00": ALL}),
    ("concat axis -4 of 5-D", lambda: make_model([node("Concat", ["a", "b"], axis=1)], {"a": (1, 2, 3, 4, 4), "b": (1, 2, 3, 4, 4)}), "concat", "concat_axis", {"11.02": ALL, "11.00": ALL}),
    ("slice without axes", lambda: _slice([0, 0, 0, 0], [1, 3, 4, 8]), "slice", "slice_constant_starts_ends_axes", {"11.02": ALL, "11.00": ALL}),
    ("slice variable starts", lambda: _slice([0, 0, 0, 0], [1, 3, 4, 8], [0, 1, 2, 3], variable=("starts",)), "slice", "slice_constant_starts_ends_axes", {"11.02": ALL, "11.00": ALL}),
    ("slice stride 2", lambda: _slice([0, 0, 0, 0], [1, 3, 8, 8], [0, 1, 2, 3], [1, 1, 2, 1]), "slice", "slice_unit_steps", {"11.02": ALL, "11.00": ALL}),
    ("slice one axis", lambda: _slice([0], [4], [2]), "slice", "slice_constant_inputs_shape", {"11.02": ALL}),
    ("slice 5-D", lambda: _slice([0, 0, 0, 0], [1, 1, 2, 2], [0, 1, 2, 3], x=(1, 1, 2, 2, 2)), "slice", "slice_input_rank", {"11.02": ALL, "11.00": ALL}),
    ("slice 3-D", lambda: _slice([0, 0, 0], [3, 4, 8], [0, 1, 2], x=(3, 8, 8)), "slice", "slice_input_rank", {"11.02": ALL}),
    ("slice batch 2", lambda: _slice([0, 0, 0, 0], [2, 3, 4, 8], [0, 1, 2, 3], x=(2, 3, 8, 8)), "slice", "slice_batch_size", {"11.02": ALL, "11.00": ALL}),
    ("slice cuts batch", lambda: _slice([0, 0, 0, 0], [1, 3, 4, 8], [0, 1, 2, 3], x=(2, 3, 8, 8)), "slice", "slice_not_batch_axis", {"11.02": ALL}),
    ("split batch", lambda: make_model([node("Split", ["x"], outputs=("p", "q"), axis=0)], {"x": (2, 3, 4, 4)}, outputs=["p", "q"]), "split", "slice_not_batch_axis", {"11.02": ALL}),
    ("dropout alone", lambda: make_model([node("Dropout", ["x"])], {"x": (1, 4)}), "dropout", "only_inside_fused_pattern", {"11.02": ALL, "11.00": ALL}),
    ("erf alone", lambda: make_model([node("Erf", ["x"])], {"x": (1, 4)}), "erf", "only_inside_fused_pattern", {"11.02": ALL, "11.00": ALL}),
    ("reducemean alone", lambda: make_model([node("ReduceMean", ["x"], axes=[-1])], {"x": (1, 4, 8)}), "reducemean", "only_inside_fused_pattern", {"11.00": ALL}),
    # --- ArgMax / Resize / depth-space / Pad ---
    ("argmax width", lambda: make_model([node("ArgMax", ["x"], axis=-1)], {"x": (1, 3, 4, 4)}), "argmax", "arg_axis_and_flags", {"11.02": ALL, "11.00": ALL}),
    ("argmin keepdims 0", lambda: make_model([node("ArgMin", ["x"], axis=1, keepdims=0)], {"x": (1, 3, 4, 4)}), "argmin", "arg_axis_and_flags", {"11.02": ALL}),
    ("argmax rank 5", lambda: make_model([node("ArgMax", ["x"], axis=2)], {"x": (2, 2, 2, 2, 2)}), "argmax", "variable_input_dims_max_4", {"11.02": ALL, "11.00": ALL}),
    ("resize x3", lambda: _resize([1, 1, 3, 3], mode="nearest", coordinate_transformation_mode="asymmetric", nearest_mode="floor"), "resize", "resize_scales", {"11.02": ALL, "11.00": ALL}),
    ("resize unequal", lambda: _resize([1, 1, 2, 1], mode="nearest", coordinate_transformation_mode="asymmetric", nearest_mode="floor"), "resize", "resize_scales", {"11.02": ALL, "11.00": ALL}),
    ("resize down", lambda: _resize([1, 1, 0.5, 0.5], mode="nearest", coordinate_transformation_mode="asymmetric", nearest_mode="floor"), "resize", "resize_scales", {"11.02": ALL, "11.00": ALL}),
    ("resize cubic", lambda: _resize([1, 1, 2, 2], mode="cubic"), "resize", "resize_mode", {"11.02": ALL, "11.00": ALL}),
    ("resize align_corners", lambda: _resize([1, 1, 2, 2], mode="linear", coordinate_transformation_mode="align_corners"), "resize", "resize_attributes", {"11.02": ALL, "11.00": ALL}),
    ("resize nearest half_pixel floor", lambda: _resize([1, 1, 2, 2], mode="nearest"), "resize", "resize_attributes", {"11.02": ALL, "11.00": ALL}),
    ("resize linear asymmetric", lambda: _resize([1, 1, 2, 2], mode="linear", coordinate_transformation_mode="asymmetric"), "resize", "resize_attributes", {"11.02": ALL, "11.00": ALL}),
    ("pad reflect", lambda: make_model([node("Pad", ["x", "pads"], mode="reflect")], {"x": (1, 3, 8, 8)}, {"pads": i64(0, 0, 1, 1, 0, 0, 1, 1)}), "pad", "pad_mode", {"11.02": ALL, "11.00": ALL}),
    ("pad value 1", lambda: make_model([node("Pad", ["x", "pads", "v"])], {"x": (1, 3, 8, 8)}, {"pads": i64(0, 0, 1, 1, 0, 0, 1, 1), "v": np.asarray(1.0, np.float32)}), "pad", "pad_zero_value", {"11.02": ALL}),
    ("pad channels", lambda: make_model([node("Pad", ["x", "pads"])], {"x": (1, 3, 8, 8)}, {"pads": i64(0, 1, 0, 0, 0, 1, 0, 0)}), "pad", "pad_spatial_only", {"11.02": ALL, "11.00": ALL}),
    ("pad rank 7", lambda: make_model([node("Pad", ["x", "pads"])], {"x": (1,) * 7}, {"pads": i64(*([0] * 12 + [1, 1]))}), "pad", "pad_rank", {"11.02": ALL, "11.00": ALL}),
    # --- Reductions / scatter ---
    ("reducemax width", lambda: make_model([node("ReduceMax", ["x"], axes=[3])], {"x": (1, 3, 8, 8)}), "reducemax", "reduce_height_axis", {"11.02": ALL, "11.00": ALL}),
    ("reducemin rank 5", lambda: make_model([node("ReduceMin", ["x"], axes=[3])], {"x": (2, 2, 2, 2, 2)}), "reducemin", "variable_input_dims_max_4", {"11.02": ALL}),
    ("scatter into variable", lambda: make_model([node("ScatterElements", ["d", "i", "u"], axis=3)], {"d": (1, 1, 4, 4), "u": (1, 1, 4, 1)}, {"i": np.zeros((1, 1, 4, 1), np.int64)}), "scatterelements", "scatter_zero_data", {"11.02": ALL, "11.00": ALL}),
    ("scatter along height", lambda: make_model([node("ScatterElements", ["d", "i", "u"], axis=2)], {"u": (1, 1, 1, 4)}, {"d": f32(1, 1, 4, 4, value=0.0), "i": np.zeros((1, 1, 1, 4), np.int64)}), "scatterelements", "scatter_width_axis", {"11.02": ALL, "11.00": ALL}),
    ("scatter add", lambda: make_model([node("ScatterElements", ["d", "i", "u"], axis=3, reduction="add")], {"u": (1, 1, 4, 1)}, {"d": f32(1, 1, 4, 4, value=0.0), "i": np.zeros((1, 1, 4, 1), np.int64)}, opset=18), "scatterelements", "scatter_reduction", {"11.02": ALL, "11.00": ALL}),
    ("scatter 2-channel updates", lambda: make_model([node("ScatterElements", ["d", "i", "u"], axis=3)], {"u": (1, 2, 4, 1)}, {"d": f32(1, 2, 4, 4, value=0.0), "i": np.zeros((1, 2, 4, 1), np.int64)}), "scatterelements", "scatter_update_channels", {"11.02": ALL, "11.00": ALL}),
    ("scatternd deep indices", lambda: make_model([node("ScatterND", ["d", "i", "u"])], {"u": (1,)}, {"d": f32(1, 1, 4, 4, value=0.0), "i": np.zeros((1, 4), np.int64)}), "scatternd", "scatter_nd_index_depth", {"11.02": ALL}),
    # --- Shapes ---
    ("reshape allowzero", lambda: make_model([node("Reshape", ["x", "s"], allowzero=1)], {"x": (1, 3, 4, 4)}, {"s": i64(1, 48)}), "reshape", "reshape_constant_shape", {"11.02": ALL, "11.00": ALL}),
    ("gather indices 2-D", lambda: make_model([node("Gather", ["x", "i"], axis=1)], {"x": (1, 6, 4)}, {"i": np.zeros((2, 2), np.int64)}), "gather", "gather_shapes", {"11.02": ALL, "11.00": ALL}),
    ("gather outer dim 2", lambda: make_model([node("Gather", ["x", "i"], axis=1)], {"x": (2, 6, 4)}, {"i": i64(0, 1)}), "gather", "gather_shapes", {"11.02": ALL, "11.00": ALL}),
    ("gather to rank 7", lambda: make_model([node("Gather", ["x", "i"], axis=1)], {"x": (1, 2, 2, 2, 2, 2)}, {"i": np.zeros((2, 2), np.int64)}), "gather", "gather_output_rank", {"11.02": ALL}),
    ("transpose width first 5-D", lambda: make_model([node("Transpose", ["x"], perm=[4, 0, 1, 2, 3])], {"x": (1, 2, 3, 4, 5)}), "transpose", "transpose_width_position", {"11.02": ALL}),
    ("unsqueeze to rank 7", lambda: make_model([node("Unsqueeze", ["x", "a"])], {"x": (1, 2, 2, 2, 2, 2)}, {"a": i64(0)}), "unsqueeze", "unsqueeze_output_rank", {"11.02": ALL, "11.00": ALL}),
    # --- Others ---
    ("gridsample border", lambda: make_model([node("GridSample", ["x", "g"], padding_mode="border")], {"x": (1, 3, 8, 8), "g": (1, 4, 4, 2)}, opset=16), "gridsample", "gridsample_modes", {"11.02": ALL, "11.00": ALL}),
    ("topk channels", lambda: make_model([node("TopK", ["x", "k"], outputs=("v", "i"), axis=1)], {"x": (1, 8, 4, 4)}, {"k": i64(2)}, outputs=["v", "i"]), "topk", "topk_axis_and_k", {"11.02": ALL, "11.00": ALL}),
    ("topk width 11.00", lambda: make_model([node("TopK", ["x", "k"], outputs=("v", "i"), axis=-1)], {"x": (1, 8, 4, 4)}, {"k": i64(2)}, outputs=["v", "i"]), "topk", "topk_axis_and_k", {"11.00": ALL}),
    ("deformconv 5x5", lambda: make_model([node("DeformConv", ["x", "w", "o"])], {"x": (1, 2, 8, 8), "o": (1, 50, 4, 4)}, {"w": f32(2, 2, 5, 5)}, opset=19), "deformconv", "deformconv_kernel", {"11.02": ALL, "11.00": ALL}),
    ("clip above zero", lambda: make_model([node("Clip", ["x", "lo", "hi"])], {"x": (1, 4)}, {"lo": np.asarray(0.5, np.float32), "hi": np.asarray(6.0, np.float32)}), "clip", "clip_range", {"11.02": ALL, "11.00": ALL}),
    ("dequantize axis 0", lambda: make_model([node("DequantizeLinear", ["q", "s", "z"], axis=0)], {"q": (4, 3)}, {"s": f32(4, value=0.1), "z": np.zeros(4, np.int8)}, input_types={"q": TensorProto.INT8}), "dequantizelinear", "qdq_default_axis", {"11.02": ALL, "11.00": ALL}),
    ("pow variable exponent", lambda: make_model([node("Pow", ["x", "e"])], {"x": (1, 4), "e": (1,)}), "pow", "pow_constant_exponent", {"11.02": ALL}),
    ("pow vector exponent", lambda: make_model([node("Pow", ["x", "e"])], {"x": (1, 4)}, {"e": f32(4)}), "pow", "pow_scalar_exponent", {"11.02": ALL}),
]

# Cases whose rule is tripped by a node that needs a variable (non-initializer) input built differently.
CASES += [
    ("reshape variable shape", lambda: make_model([node("Shape", ["x"], outputs=("s",), name="shape"), node("Reshape", ["x", "s"])], {"x": (1, 3, 4, 4)}), "reshape", "reshape_constant_shape", {"11.02": ALL, "11.00": ALL}),
    ("expand variable shape", lambda: make_model([node("Shape", ["x"], outputs=("s",), name="shape"), node("Expand", ["x", "s"])], {"x": (1, 4)}), "expand", "expand_constant_shape", {"11.02": ALL}),
    ("depth_to_space channels", lambda: make_model([node("DepthToSpace", ["x"], blocksize=2)], {"x": (1, 6, 4, 4)}), "depthtospace", "depth_to_space_channels", {"11.02": ALL, "11.00": ALL}),
    ("space_to_depth odd plane", lambda: make_model([node("SpaceToDepth", ["x"], blocksize=3)], {"x": (1, 2, 8, 6)}), "spacetodepth", "space_to_depth_plane", {"11.02": ALL, "11.00": ALL}),
    ("instancenorm rank 2", lambda: make_model([node("InstanceNormalization", ["x", "s", "b"])], {"x": (3, 4)}, {"s": f32(4), "b": f32(4)}), "instancenormalization", "instancenorm_rank", {"11.02": ALL}),
]
CASES = [c for c in CASES if c[2] is not None]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("version", ["11.02", "11.00"])
def test_rule_trips_on_the_documented_chips_only(case, version, tmp_path):
    name, build, node_name, rule_name, fires_on = case
    model = save_and_load(build(), tmp_path)
    expected_chips = set(fires_on.get(version, ()))
    for chip in ALL:
        result = audit_model(model, _rules(chip, version), precision="int8")
        placed = {n.node: n for n in result.nodes}[node_name]
        hit = [v for v in placed.violations if v.rule == rule_name]
        if chip in expected_chips:
            assert hit, f"{name}: {rule_name} did not fire on {chip} ({version}); got {[v.rule for v in placed.violations]}"
            assert placed.placement is Placement.FALLBACK, f"{name} on {chip}: {placed.placement}"
            assert hit[0].message and "{" not in hit[0].message  # the sentence users read, constants filled in
        else:
            assert not hit, f"{name}: {rule_name} fired on {chip} ({version}) but TI's document limits it to {sorted(expected_chips)}"


GOOD_MODELS = [
    ("conv 3x3 s1 pad 1", lambda: _conv((1, 8, 16, 16), (8, 8, 3, 3), pads=[1, 1, 1, 1]), "conv"),
    ("conv 3x3 stride 3 (not AM62A)", lambda: _conv((1, 8, 30, 30), (8, 8, 3, 3), strides=[3, 3]), None),
    ("conv 11x11 stride 4", lambda: _conv((1, 3, 64, 64), (4, 3, 11, 11), strides=[4, 4]), "conv"),
    ("depthwise 3x3s2", lambda: _conv((1, 4, 16, 16), (4, 1, 3, 3), group=4, strides=[2, 2], pads=[1, 1, 1, 1]), "conv"),
    ("maxpool 2x2s2", lambda: make_model([node("MaxPool", ["x"], kernel_shape=[2, 2], strides=[2, 2])], {"x": (1, 3, 8, 8)}), "maxpool"),
    ("add channel vector", lambda: make_model([node("Add", ["x", "v"])], {"x": (1, 3, 8, 8)}, {"v": f32(1, 3, 1, 1)}), "add"),
    ("gemm fc", lambda: make_model([node("Gemm", ["a", "b", "c"], transB=1)], {"a": (1, 4)}, {"b": f32(5, 4), "c": f32(5)}), "gemm"),
    ("softmax last axis", lambda: make_model([node("Softmax", ["x"], axis=-1)], {"x": (1, 10)}), "softmax"),
    ("resize nearest x2 asymmetric floor", lambda: _resize([1, 1, 2, 2], mode="nearest", coordinate_transformation_mode="asymmetric", nearest_mode="floor"), "resize"),
    ("resize linear x2 half_pixel", lambda: _resize([1, 1, 2, 2], mode="linear"), "resize"),
    ("slice 4 axes keeps batch", lambda: _slice([0, 0, 0, 0], [1, 3, 4, 8], [0, 1, 2, 3]), "slice"),
    ("clip relu6", lambda: make_model([node("Clip", ["x", "lo", "hi"])], {"x": (1, 4)}, {"lo": np.asarray(0.0, np.float32), "hi": np.asarray(6.0, np.float32)}), "clip"),
    ("argmax channel", lambda: make_model([node("ArgMax", ["x"], axis=1)], {"x": (1, 3, 4, 4)}), "argmax"),
    ("concat channels", lambda: make_model([node("Concat", ["a", "b"], axis=1)], {"a": (1, 3, 4, 4), "b": (1, 3, 4, 4)}), "concat"),
    ("deconv 2x2s2", lambda: make_model([node("ConvTranspose", ["x", "w"], strides=[2, 2])], {"x": (1, 4, 8, 8)}, {"w": f32(4, 4, 2, 2)}), "convtranspose"),
]


@pytest.mark.parametrize("case", GOOD_MODELS, ids=[c[0] for c in GOOD_MODELS])
def test_documented_good_cases_stay_on_the_accelerator(case, tmp_path):
    name, build, only = case
    model = save_and_load(build(), tmp_path)
    chips = NOT_AM62A if only is None else ALL
    for version in ("11.02",):
        for chip in chips:
            result = audit_model(model, _rules(chip, version), precision="int8")
            off = [(n.node, [v.rule for v in n.violations]) for n in result.nodes if n.placement is not Placement.ACCELERATOR]
            assert not off, f"{name} on {chip}: {off}"


def test_every_rule_of_every_release_is_tripped_by_a_case():
    """A rule no case trips is untested: the table above must cover the whole rule set."""
    for version in ("11.02", "11.00"):
        tripped = {c[3] for c in CASES if c[4].get(version)}
        declared = {r.name for r in _rules("am62a", version).rules}
        assert declared - tripped == set(), f"TIDL {version}: rules without a test case: {sorted(declared - tripped)}"


def test_int16_deconvolution_falls_back_on_am62a_only(tmp_path):
    """TI: 16-bit deconvolution is not supported on AM62A (and AM67A)."""
    model = save_and_load(make_model([node("ConvTranspose", ["x", "w"], strides=[2, 2])], {"x": (1, 4, 8, 8)}, {"w": f32(4, 4, 2, 2)}), tmp_path)
    for chip in ALL:
        for precision in ("int8", "int16"):
            placed = audit_model(model, _rules(chip, "11.02"), precision=precision).nodes[0]
            expect = Placement.FALLBACK if (chip == "am62a" and precision == "int16") else Placement.ACCELERATOR
            assert placed.placement is expect, (chip, precision, [v.rule for v in placed.violations])
            if expect is Placement.FALLBACK:
                assert placed.violations[0].rule == "precision_not_on_accelerator"


def test_sample_model_fully_on_the_accelerator_on_every_soc(sample_model_path):
    from edgedeploy.model import load_model

    model = load_model(sample_model_path, require_static=True)
    for chip in ALL:
        result = audit_model(model, _rules(chip, "11.02"), precision="int8")
        assert result.summary()["on_accelerator"] == len(model.graph.node) == 13
        assert result.transitions == 0


def test_mixed_graph_counts_partitions_and_crossings(tmp_path):
    """Conv -> Erf (Arm) -> Conv: two accelerator partitions, two transitions, int8 bytes crossing."""
    model = make_model(
        [conv("c1", "x", "w1", out="a"), node("Erf", ["a"], outputs=("b",), name="erf"), conv("c2", "b", "w2", out="y")],
        {"x": (1, 4, 8, 8)},
        {"w1": f32(4, 4, 1, 1), "w2": f32(4, 4, 1, 1)},
    )
    result = audit_model(save_and_load(model, tmp_path), _rules("am68a", "11.02"), precision="int8")
    assert [n.placement for n in result.nodes] == [Placement.ACCELERATOR, Placement.FALLBACK, Placement.ACCELERATOR]
    assert result.transitions == 2
    assert result.crossing_bytes == 2 * 4 * 8 * 8  # int8: one byte per element each way


def test_rule_set_options(tmp_path):
    target, _ = find_chip("am68a")
    assert target.rule_set("am68a").toolchain_version == "TIDL 11.02"
    assert "11_00_06_00" in target.rule_set("am68a", tidl_version="11.00").source
    from edgedeploy.errors import OptionError

    with pytest.raises(OptionError):
        target.rule_set("am68a", tidl_version="9.2")
    # Options meant for other targets' tables are ignored, not errors.
    assert target.rule_set("am68a", trt_version="10.1").chip == "am68a"
