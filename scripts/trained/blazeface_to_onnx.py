"""BlazeFace (MediaPipe's short-range face detector, trained weights) as ONNX, for the tests of
truthful reports (tests/test_trained_outputs.py): its outputs are `regressors` [1, 896, 16]
(4 box values and 6 keypoints x 2 per anchor) and `classificators` [1, 896, 1].

Runs in the eiq environment (TensorFlow's flatbuffer schema, LiteRT, onnx):

    pip download mediapipe==0.10.14 --no-deps -d /tmp/mp && unzip -o /tmp/mp/*.whl 'mediapipe/modules/face_detection/*' -d /tmp/mp
    ~/.cache/edgedeploy/envs/eiq/bin/python scripts/trained/blazeface_to_onnx.py \
        /tmp/mp/mediapipe/modules/face_detection/face_detection_short_range.tflite tests/fixtures/trained/blazeface_short_range.onnx

The model uses nine TFLite ops (CONV_2D, DEPTHWISE_CONV_2D, ADD, RELU, PAD, MAX_POOL_2D,
RESHAPE, CONCATENATION, DEQUANTIZE of its fp16 weights); each is written as its ONNX
equivalent in NCHW, and the result is checked against LiteRT on random inputs before it is saved.
"""
from __future__ import annotations

import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper
from tensorflow.lite.python import schema_py_generated as schema

OPS = {getattr(schema.BuiltinOperator, name): name for name in dir(schema.BuiltinOperator) if not name.startswith("_")}


def load(path: str):
    model = schema.ModelT.InitFromObj(schema.Model.GetRootAsModel(open(path, "rb").read(), 0))
    return model, model.subgraphs[0]


def buffer(model, tensor) -> np.ndarray | None:
    data = model.buffers[tensor.buffer].data
    if data is None or len(data) == 0:
        return None
    dtype = {schema.TensorType.FLOAT32: np.float32, schema.TensorType.FLOAT16: np.float16, schema.TensorType.INT32: np.int32}[tensor.type]
    return np.frombuffer(bytes(data), dtype=dtype).reshape(tensor.shape)


def pads_same(in_hw, kernel, stride) -> list[int]:
    """TFLite's SAME padding as ONNX pads [top, left, bottom, right]."""
    pads = []
    for size, k, s in zip(in_hw, kernel, stride):
        out = -(-size // s)
        total = max((out - 1) * s + k - size, 0)
        pads.append((total // 2, total - total // 2))
    return [pads[0][0], pads[1][0], pads[0][1], pads[1][1]]


class Writer:
    def __init__(self, model, graph):
        self.model, self.graph = model, graph
        self.nodes, self.inits, self.consts = [], [], {}

    def name(self, index: int) -> str:
        return self.graph.tensors[index].name.decode()

    def shape(self, index: int) -> list[int]:
        return [int(d) for d in self.graph.tensors[index].shape]

    def const(self, index: int) -> np.ndarray | None:
        if index in self.consts:
            return self.consts[index]
        return buffer(self.model, self.graph.tensors[index])

    def add_init(self, name: str, array) -> str:
        self.inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def activation(self, out: str, fused: int) -> str:
        if fused == schema.ActivationFunctionType.NONE:
            return out
        assert fused == schema.ActivationFunctionType.RELU, fused
        self.nodes.append(helper.make_node("Relu", [out + "_pre"], [out]))
        return out + "_pre"

    def conv(self, op, depthwise: bool) -> None:
        x, w, b = op.inputs
        opt = op.builtinOptions
        weight = self.const(w).astype(np.float32)  # OHWI (conv) or 1HWC (depthwise)
        if depthwise:
            weight = weight.transpose(3, 0, 1, 2)  # C1HW
        else:
            weight = weight.transpose(0, 3, 1, 2)  # OIHW
        kernel, stride = weight.shape[2:], (opt.strideH, opt.strideW)
        in_hw = self.shape(x)[1:3]
        pads = pads_same(in_hw, kernel, stride) if opt.padding == schema.Padding.SAME else [0, 0, 0, 0]
        out = self.name(op.outputs[0])
        target = self.activation(out, opt.fusedActivationFunction)
        wname = self.add_init(out + "_w", weight)
        bname = self.add_init(out + "_b", self.const(b).astype(np.float32))
        group = weight.shape[0] if depthwise else 1
        self.nodes.append(helper.make_node("Conv", [self.name(x), wname, bname], [target], kernel_shape=list(kernel), strides=list(stride), pads=pads, group=group))

    def convert(self, op) -> None:
        kind = OPS[self.model.operatorCodes[op.opcodeIndex].builtinCode or self.model.operatorCodes[op.opcodeIndex].deprecatedBuiltinCode]
        ins, out = list(op.inputs), self.name(op.outputs[0])
        if kind == "DEQUANTIZE":
            self.consts[op.outputs[0]] = self.const(ins[0]).astype(np.float32)
        elif kind in ("CONV_2D", "DEPTHWISE_CONV_2D"):
            self.conv(op, kind == "DEPTHWISE_CONV_2D")
        elif kind == "RELU":
            self.nodes.append(helper.make_node("Relu", [self.name(ins[0])], [out]))
        elif kind == "ADD":
            target = self.activation(out, op.builtinOptions.fusedActivationFunction)
            self.nodes.append(helper.make_node("Add", [self.name(i) for i in ins], [target]))
        elif kind == "MAX_POOL_2D":
            opt = op.builtinOptions
            pads = pads_same(self.shape(ins[0])[1:3], (opt.filterHeight, opt.filterWidth), (opt.strideH, opt.strideW)) if opt.padding == schema.Padding.SAME else [0, 0, 0, 0]
            self.nodes.append(helper.make_node("MaxPool", [self.name(ins[0])], [out], kernel_shape=[opt.filterHeight, opt.filterWidth], strides=[opt.strideH, opt.strideW], pads=pads))
        elif kind == "PAD":
            nhwc = self.const(ins[1])  # [[n0, n1], [h0, h1], [w0, w1], [c0, c1]]
            nchw = nhwc[[0, 3, 1, 2]]
            pads = self.add_init(out + "_pads", np.concatenate([nchw[:, 0], nchw[:, 1]]).astype(np.int64))
            self.nodes.append(helper.make_node("Pad", [self.name(ins[0]), pads], [out]))
        elif kind == "RESHAPE":
            # NCHW back to NHWC first: TFLite reshapes its NHWC tensor.
            self.nodes.append(helper.make_node("Transpose", [self.name(ins[0])], [out + "_nhwc"], perm=[0, 2, 3, 1]))
            shape = self.add_init(out + "_shape", np.array(self.shape(op.outputs[0]), np.int64))
            self.nodes.append(helper.make_node("Reshape", [out + "_nhwc", shape], [out]))
        elif kind == "CONCATENATION":
            assert len(self.shape(op.outputs[0])) == 3, "a 4-D concatenation would need its axis moved to NCHW"
            self.nodes.append(helper.make_node("Concat", [self.name(i) for i in ins], [out], axis=op.builtinOptions.axis))
        else:
            raise SystemExit(f"unsupported op {kind}")


def main(source: str, dest: str) -> None:
    model, graph = load(source)
    writer = Writer(model, graph)
    for op in graph.operators:
        writer.convert(op)
    (x,), outputs = graph.inputs, graph.outputs
    # Every tensor is NCHW here (the ops above are written so), the input included.
    nodes = ([] if writer.name(x) == "input" else [helper.make_node("Identity", ["input"], [writer.name(x)])]) + writer.nodes
    onnx_graph = helper.make_graph(
        nodes,
        "blazeface_short_range",
        [helper.make_tensor_value_info("input", onnx.TensorProto.FLOAT, [1, 3, 128, 128])],
        [helper.make_tensor_value_info(writer.name(i), onnx.TensorProto.FLOAT, writer.shape(i)) for i in outputs],
        writer.inits,
    )
    proto = helper.make_model(onnx_graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="scripts/trained/blazeface_to_onnx.py")
    proto.ir_version = 8
    onnx.checker.check_model(proto)
    check(proto, source)
    onnx.save(proto, dest)
    print(f"wrote {dest}")


def check(proto, source: str) -> None:
    """The ONNX model against LiteRT on random inputs: the same outputs to float rounding."""
    import onnxruntime as ort
    from ai_edge_litert.interpreter import Interpreter

    interpreter = Interpreter(model_path=source)
    interpreter.allocate_tensors()
    session = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    x = np.random.default_rng(0).uniform(-1, 1, (1, 128, 128, 3)).astype(np.float32)
    interpreter.set_tensor(interpreter.get_input_details()[0]["index"], x)
    interpreter.invoke()
    got = dict(zip([o.name for o in session.get_outputs()], session.run(None, {"input": x.transpose(0, 3, 1, 2)})))
    for detail in interpreter.get_output_details():
        want = interpreter.get_tensor(detail["index"])
        error = float(np.max(np.abs(want - got[detail["name"]])))
        print(f"{detail['name']}: max abs difference from LiteRT {error:.2e}")
        assert error < 1e-3 * max(1.0, float(np.max(np.abs(want)))), detail["name"]


if __name__ == "__main__":
    main(*sys.argv[1:3])
