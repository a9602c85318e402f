"""Probe models for the error referred to the outputs (edgedeploy.accuracy.referred; docs/accuracy.md).

- `spectrum`: x -> Conv (a bank of cosine and sine filters, an STFT) -> Slice into real and imaginary
  -> Pow 2 each -> Add -> Sqrt -> Conv 1x1 -> Relu -> ReduceMean: Silero VAD's front end in small. An
  int8 step of the power spectrum (the Add's output, or a Pow's) is large against its small values,
  which the Sqrt magnifies (d sqrt(x) = dx / (2 sqrt x)); the STFT Conv's own step is not.
- `attenuated`: aux -> Conv A -> Mul 0.01 -> Add <- Tanh <- Conv B <- x. A reads a side input whose
  calibration holds rare spikes (its range, so its step, set by them); on the evaluation inputs,
  without spikes, A's int8 output is a few steps: far worse alone than B, whose error is moderate,
  but A's error reaches the output a hundred times smaller, and B's whole.

Inputs are tones in noise at loud and quiet levels (the spectrum's small values are real ones).
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SIGNAL = 256
BINS, KERNEL, HOP = 16, 32, 16


def tones(count: int, seed: int, spikes: bool = False) -> list[dict]:
    """Sums of two tones and noise, each sample at its own level (30 dB apart at the extremes); and
    `aux`, noise with, when `spikes`, one value of 40 in every eighth sample (for `attenuated`)."""
    rng = np.random.default_rng(seed)
    t = np.arange(SIGNAL)
    out = []
    for _ in range(count):
        level = 10 ** rng.uniform(-1.5, 0.0)
        f1, f2 = rng.uniform(0.02, 0.45, size=2)
        x = level * (np.sin(2 * np.pi * f1 * t) + 0.5 * np.sin(2 * np.pi * f2 * t + rng.uniform(0, 6))) + 0.01 * rng.standard_normal(SIGNAL)
        aux = 0.1 * rng.standard_normal(SIGNAL)
        if spikes and len(out) % 8 == 0:
            aux[rng.integers(0, SIGNAL)] = 40.0
        out.append({"x": x.astype(np.float32).reshape(1, 1, SIGNAL), "aux": aux.astype(np.float32).reshape(1, 1, SIGNAL)})
    return out


def only(feeds: list[dict], names: list[str]) -> list[dict]:
    return [{k: f[k] for k in names} for f in feeds]


def _init(name, array):
    return numpy_helper.from_array(np.asarray(array, dtype=np.float32), name)


def spectrum(path) -> list[str]:
    """Writes the STFT probe; returns its nodes in graph order."""
    n = np.arange(KERNEL)
    window = np.hanning(KERNEL)
    freqs = np.arange(BINS) / (2 * BINS)
    cos = np.stack([window * np.cos(2 * np.pi * f * n) for f in freqs])
    sin = np.stack([-window * np.sin(2 * np.pi * f * n) for f in freqs])
    basis = np.concatenate([cos, sin])[:, None, :]  # [2*BINS, 1, KERNEL]
    rng = np.random.default_rng(3)
    mix = rng.standard_normal((8, BINS, 1)) / np.sqrt(BINS)
    nodes = [
        helper.make_node("Conv", ["x", "basis"], ["spec"], name="stft_Conv", strides=[HOP]),
        helper.make_node("Slice", ["spec", "s0", "s1", "ax"], ["re"], name="Slice_re"),
        helper.make_node("Slice", ["spec", "s1", "s2", "ax"], ["im"], name="Slice_im"),
        helper.make_node("Pow", ["re", "two"], ["re2"], name="Pow_re"),
        helper.make_node("Pow", ["im", "two"], ["im2"], name="Pow_im"),
        helper.make_node("Add", ["re2", "im2"], ["power"], name="Add_power"),
        helper.make_node("Sqrt", ["power"], ["mag"], name="Sqrt_mag"),
        helper.make_node("Conv", ["mag", "mix"], ["enc"], name="enc_Conv"),
        helper.make_node("Relu", ["enc"], ["act"], name="enc_Relu"),
        helper.make_node("ReduceMean", ["act"], ["y"], name="ReduceMean_out", axes=[2], keepdims=0),
    ]
    inits = [_init("basis", basis), _init("mix", mix), _init("two", 2.0),
             numpy_helper.from_array(np.array([0], np.int64), "s0"), numpy_helper.from_array(np.array([BINS], np.int64), "s1"),
             numpy_helper.from_array(np.array([2 * BINS], np.int64), "s2"), numpy_helper.from_array(np.array([1], np.int64), "ax")]
    _save(path, nodes, inits, [1, 1, SIGNAL], "y", [1, 8])
    return [node.name for node in nodes]


def attenuated(path) -> list[str]:
    """Writes the attenuation probe; returns its nodes in graph order."""
    rng = np.random.default_rng(5)
    wa = rng.standard_normal((8, 1, 9)) * 0.3
    wb = rng.standard_normal((8, 1, 9)) * 0.3
    nodes = [
        helper.make_node("Conv", ["aux", "wa"], ["a"], name="Conv_A", pads=[4, 4]),
        helper.make_node("Mul", ["a", "small"], ["a_small"], name="Mul_small"),
        helper.make_node("Conv", ["x", "wb"], ["b"], name="Conv_B", pads=[4, 4]),
        helper.make_node("Tanh", ["b"], ["b_act"], name="Tanh_B"),
        helper.make_node("Add", ["a_small", "b_act"], ["y"], name="Add_out"),
    ]
    _save(path, nodes, [_init("wa", wa), _init("wb", wb), _init("small", 0.01)], [1, 1, SIGNAL], "y", [1, 8, SIGNAL], ["x", "aux"])
    return [node.name for node in nodes]


def _save(path, nodes, inits, in_shape, out_name, out_shape, inputs=("x",)):
    graph = helper.make_graph(nodes, "probe", [helper.make_tensor_value_info(name, TensorProto.FLOAT, in_shape) for name in inputs],
                              [helper.make_tensor_value_info(out_name, TensorProto.FLOAT, out_shape)], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
