#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Tiny ONNX models for the GStreamer element tests (tests/gst).

Each model is small enough that its outputs can be predicted by hand from the
input image, so the tests can compute what the element must attach without
trusting the element's own code:

    image_f32.onnx       x f32 [1,3,4,4] -> pixels = x * 1, mean = ReduceMean(x, [2,3])
    image_meta.onnx      the same graph with metadata_props opennpu.mean,
                         opennpu.std, opennpu.resize, opennpu.channel-order
    image_hf_meta.onnx   the same graph with Hugging Face style image_mean /
                         image_std metadata
    image_u8_nhwc.onnx   x u8 [1,4,4,3] -> pixels = Cast<float>(x)
    image_i8_gray.onnx   x i8 [1,1,4,4] -> pixels = Cast<float>(x)
    image_f16.onnx       x f16 [1,3,4,4] -> pixels = Cast<float>(x)
    image_f32_16.onnx    x f32 [1,3,16,16] -> pixels = x * 1 (resize tests)
    two_inputs.onnx      a, b f32 [1,3,4,4] -> a + b  (not an image model)
    vector_input.onnx    x f32 [1,16] -> Relu(x)      (not an image model)
    corrupt.onnx         random bytes
    detector_v8.onnx     x f32 [1,3,32,32] -> output0 [1,6,4], a YOLOv8-layout
                         output (2 classes, 4 anchors) that does not depend on
                         the picture: DETECTOR_V8 below (+ 0 * mean(x))
    quant_out.npuir      x f32 [1,3,4,4] -> q = QuantizeLinear(x, 0.05, 3), an int8
                         output carrying its quantisation (IR text: ONNX has no
                         quantised tensor type, only Quantize/DequantizeLinear)

Usage: make-gst-models.py OUTDIR
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 13

# YOLOv8 layout [4+nc, anchors] in model input pixels (32x32): anchor 0 a
# class-1 box at (8,12)-(24,20) scoring 0.9, anchor 1 the same box shifted by
# one pixel scoring 0.6 (NMS drops it), anchor 2 below any threshold, anchor 3
# a class-0 box at (2,6)-(6,10) scoring 0.5.
DETECTOR_V8 = [
    [16, 17, 5, 4],        # cx
    [16, 16, 5, 8],        # cy
    [16, 16, 4, 4],        # w
    [8, 8, 4, 4],          # h
    [0.1, 0.0, 0.01, 0.5],  # class 0
    [0.9, 0.6, 0.02, 0.0],  # class 1
]


def save(model, path):
    onnx.checker.check_model(model)
    onnx.save(model, path)


def image_graph(name, dtype, shape, cast, mul=True):
    x = helper.make_tensor_value_info("x", dtype, shape)
    nodes, inits = [], []
    src = "x"
    if cast:
        nodes.append(helper.make_node("Cast", ["x"], ["xf"], to=TensorProto.FLOAT))
        src = "xf"
    if mul:
        inits.append(numpy_helper.from_array(np.array(1.0, dtype=np.float32), "one"))
        nodes.append(helper.make_node("Mul", [src, "one"], ["pixels"]))
    else:
        nodes.append(helper.make_node("Identity", [src], ["pixels"]))
    outputs = [helper.make_tensor_value_info("pixels", TensorProto.FLOAT, shape)]
    if len(shape) == 4 and shape[1] in (1, 3) and not cast:
        nodes.append(helper.make_node("ReduceMean", ["pixels"], ["mean"], axes=[2, 3],
                                      keepdims=0))
        outputs.append(helper.make_tensor_value_info("mean", TensorProto.FLOAT,
                                                     [shape[0], shape[1]]))
    graph = helper.make_graph(nodes, name, [x], outputs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                             producer_name="opennpu-tests")


def set_meta(model, props):
    for k, v in props.items():
        e = model.metadata_props.add()
        e.key, e.value = k, v
    return model


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    F, U8, I8, F16 = TensorProto.FLOAT, TensorProto.UINT8, TensorProto.INT8, TensorProto.FLOAT16

    save(image_graph("image_f32", F, [1, 3, 4, 4], False), os.path.join(out, "image_f32.onnx"))
    save(set_meta(image_graph("image_meta", F, [1, 3, 4, 4], False), {
        "opennpu.mean": "0.5, 0.25, 0.125",
        "opennpu.std": "[0.5 0.25 0.5]",
        "opennpu.resize": "letterbox",
        "opennpu.channel-order": "bgr",
        "unrelated": "ignored",
    }), os.path.join(out, "image_meta.onnx"))
    save(set_meta(image_graph("image_hf_meta", F, [1, 3, 4, 4], False), {
        "image_mean": "[0.48145466, 0.4578275, 0.40821073]",
        "image_std": "[0.26862954, 0.26130258, 0.27577711]",
    }), os.path.join(out, "image_hf_meta.onnx"))
    save(image_graph("image_u8_nhwc", U8, [1, 4, 4, 3], True), os.path.join(out, "image_u8_nhwc.onnx"))
    save(image_graph("image_i8_gray", I8, [1, 1, 4, 4], True), os.path.join(out, "image_i8_gray.onnx"))
    save(image_graph("image_f16", F16, [1, 3, 4, 4], True), os.path.join(out, "image_f16.onnx"))
    save(image_graph("image_f32_16", F, [1, 3, 16, 16], False), os.path.join(out, "image_f32_16.onnx"))

    a = helper.make_tensor_value_info("a", F, [1, 3, 4, 4])
    b = helper.make_tensor_value_info("b", F, [1, 3, 4, 4])
    y = helper.make_tensor_value_info("y", F, [1, 3, 4, 4])
    g = helper.make_graph([helper.make_node("Add", ["a", "b"], ["y"])], "two_inputs", [a, b], [y])
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)]),
         os.path.join(out, "two_inputs.onnx"))

    x = helper.make_tensor_value_info("x", F, [1, 16])
    y = helper.make_tensor_value_info("y", F, [1, 16])
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "vector_input", [x], [y])
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)]),
         os.path.join(out, "vector_input.onnx"))

    with open(os.path.join(out, "quant_out.npuir"), "w") as f:
        f.write("# opennpu ir v1\n"
                "graph \"quant_out\" opset=13 {\n"
                "  input %x: f32[1,3,4,4]\n"
                "  const %s: f32[] = [0.05]\n"
                "  const %z: i8[] = [3]\n"
                "  %q: i8[1,3,4,4] q(0.05,3) = QuantizeLinear(%x, %s, %z)\n"
                "  output %q\n"
                "}\n")

    x = helper.make_tensor_value_info("x", F, [1, 3, 32, 32])
    y = helper.make_tensor_value_info("output0", F, [1, 6, 4])
    g = helper.make_graph([
        helper.make_node("ReduceMean", ["x"], ["m"], axes=[1, 2, 3], keepdims=0),
        helper.make_node("Mul", ["m", "zero"], ["z"]),
        helper.make_node("Add", ["z", "boxes"], ["output0"]),
    ], "detector_v8", [x], [y], [
        numpy_helper.from_array(np.zeros((1, 1, 1), dtype=np.float32), "zero"),
        numpy_helper.from_array(np.array([DETECTOR_V8], dtype=np.float32), "boxes"),
    ])
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)]),
         os.path.join(out, "detector_v8.onnx"))

    rng = np.random.default_rng(7)
    # 0xff first: not a valid protobuf field key for ModelProto's layout
    with open(os.path.join(out, "corrupt.onnx"), "wb") as f:
        f.write(b"\xff\xff" + rng.integers(0, 256, 4094, dtype=np.uint8).tobytes())


if __name__ == "__main__":
    main()
