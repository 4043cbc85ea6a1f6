#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# bench-int8-models.py: small quantized ONNX models for scripts/bench-int8.sh (issues 12/16:
# the CPU executor's int8 products against ONNX Runtime). Needs Debian's /usr/bin/python3
# (numpy, onnx 1.12). Each model goes to OUT/<name>/model.onnx with its inputs as
# in.<input>.npy (the folder layout of scripts/bench-ort.sh). Weights are random with a
# fixed seed; opset 13.
#
#   /usr/bin/python3 scripts/bench-int8-models.py --out DIR [NAME...]
#
# qmm_m1_2048:       QLinearMatMul u8 [1, 2048] x s8 [2048, 2048] (a decoder step)
# qmm_m1_5632:       the same at N = 5632 (TinyLlama's MLP up/gate width)
# qmm_m128_2048:     QLinearMatMul u8 [128, 2048] x s8 [2048, 2048] (a prompt)
# dynq_mmi_m1_2048:  fp32 x -> DynamicQuantizeLinear (spelt out in its defining ops:
#                    ReduceMin/Max, Div, Round, Clip, Cast, QuantizeLinear) -> MatMulInteger
#                    (s8 weights, per column zero points 0) -> Cast -> Mul by the scales
#                    (ORT's dynamic quantization of a Linear), M = 1
# dynq_mmi_m128_2048: the same with M = 128
# qconv_net:         QuantizeLinear -> 3 QLinearConv (3x3 64->64 at 56x56, stride 1 and 2,
#                    then 1x1 64->128, per-channel weight scales) -> DequantizeLinear
import argparse
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(1202)


def save(out, name, graph, inputs):
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(d, "model.onnx"))
    for k, v in inputs.items():
        np.save(os.path.join(d, f"in.{k}.npy"), v)
    print(f"wrote {d}")


def c(name, arr):
    return numpy_helper.from_array(np.asarray(arr), name)


def qmm(out, name, M, K, N):
    w = rng.integers(-127, 128, size=(K, N), dtype=np.int8)
    inits = [c("a_s", np.float32(0.02)), c("a_zp", np.uint8(128)), c("w", w),
             c("w_s", np.float32(0.004)), c("w_zp", np.int8(0)),
             c("y_s", np.float32(0.02 * 0.004 * np.sqrt(K) * 60)), c("y_zp", np.uint8(128))]
    node = helper.make_node("QLinearMatMul",
                            ["a", "a_s", "a_zp", "w", "w_s", "w_zp", "y_s", "y_zp"], ["y"])
    g = helper.make_graph([node], name,
                          [helper.make_tensor_value_info("a", TensorProto.UINT8, [M, K])],
                          [helper.make_tensor_value_info("y", TensorProto.UINT8, [M, N])], inits)
    save(out, name, g, {"a": rng.integers(0, 256, size=(M, K), dtype=np.uint8)})


def dynq(out, name, M, K, N):
    w = rng.integers(-127, 128, size=(K, N), dtype=np.int8)
    inits = [c("w", w), c("w_zp", np.zeros(N, np.int8)),
             c("w_s", (rng.random(N, dtype=np.float32) * 0.01 + 0.001).astype(np.float32))]
    inits += [c("zero", np.float32(0)), c("q255", np.float32(255)), c("qlo", np.float32(0))]
    nodes = [  # DynamicQuantizeLinear as its ONNX definition spells it (our importer has no
        # node for the op itself): range with 0 included, scale = range / 255,
        # zero point = saturate(round(-min / scale))
        helper.make_node("ReduceMin", ["x"], ["mn"], keepdims=0),
        helper.make_node("Min", ["mn", "zero"], ["mn0"]),
        helper.make_node("ReduceMax", ["x"], ["mx"], keepdims=0),
        helper.make_node("Max", ["mx", "zero"], ["mx0"]),
        helper.make_node("Sub", ["mx0", "mn0"], ["rng"]),
        helper.make_node("Div", ["rng", "q255"], ["xs"]),
        helper.make_node("Div", ["mn0", "xs"], ["t"]),
        helper.make_node("Neg", ["t"], ["t2"]),
        helper.make_node("Round", ["t2"], ["t3"]),
        helper.make_node("Clip", ["t3", "qlo", "q255"], ["t4"]),
        helper.make_node("Cast", ["t4"], ["xzp"], to=TensorProto.UINT8),
        helper.make_node("QuantizeLinear", ["x", "xs", "xzp"], ["xq"]),
        helper.make_node("MatMulInteger", ["xq", "w", "xzp", "w_zp"], ["acc"]),
        helper.make_node("Cast", ["acc"], ["accf"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["xs", "w_s"], ["sc"]),
        helper.make_node("Mul", ["accf", "sc"], ["y"]),
    ]
    g = helper.make_graph(nodes, name,
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [M, K])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [M, N])], inits)
    save(out, name, g, {"x": rng.standard_normal((M, K), dtype=np.float32)})


def qconv(out, name):
    nodes, inits = [], [c("x_s", np.float32(0.03)), c("x_zp", np.uint8(128))]
    nodes.append(helper.make_node("QuantizeLinear", ["x", "x_s", "x_zp"], ["q0"]))
    layers = [(64, 64, 3, 1), (64, 64, 3, 2), (64, 128, 1, 1)]
    cur, hw = "q0", 56
    for i, (ci, co, k, s) in enumerate(layers):
        w = rng.integers(-127, 128, size=(co, ci, k, k), dtype=np.int8)
        ws = (rng.random(co, dtype=np.float32) * 0.004 + 0.001).astype(np.float32)
        b = rng.integers(-2000, 2000, size=co, dtype=np.int32)
        inits += [c(f"w{i}", w), c(f"ws{i}", ws), c(f"wz{i}", np.zeros(co, np.int8)),
                  c(f"b{i}", b), c(f"ys{i}", np.float32(0.03 * 0.003 * np.sqrt(ci * k * k) * 30)),
                  c(f"yz{i}", np.uint8(128))]
        p = k // 2
        nodes.append(helper.make_node(
            "QLinearConv", [cur, "x_s" if i == 0 else f"ys{i - 1}", "x_zp" if i == 0 else f"yz{i - 1}",
                            f"w{i}", f"ws{i}", f"wz{i}", f"ys{i}", f"yz{i}", f"b{i}"],
            [f"q{i + 1}"], kernel_shape=[k, k], pads=[p] * 4, strides=[s, s]))
        cur = f"q{i + 1}"
        hw = (hw + 2 * p - k) // s + 1
    n = len(layers)
    nodes.append(helper.make_node("DequantizeLinear", [cur, f"ys{n - 1}", f"yz{n - 1}"], ["y"]))
    g = helper.make_graph(nodes, name,
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64, 56, 56])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT,
                                                         [1, layers[-1][1], hw, hw])], inits)
    save(out, name, g, {"x": rng.standard_normal((1, 64, 56, 56), dtype=np.float32)})


MODELS = {
    "qmm_m1_2048": lambda o: qmm(o, "qmm_m1_2048", 1, 2048, 2048),
    "qmm_m1_5632": lambda o: qmm(o, "qmm_m1_5632", 1, 2048, 5632),
    "qmm_m128_2048": lambda o: qmm(o, "qmm_m128_2048", 128, 2048, 2048),
    "dynq_mmi_m1_2048": lambda o: dynq(o, "dynq_mmi_m1_2048", 1, 2048, 2048),
    "dynq_mmi_m128_2048": lambda o: dynq(o, "dynq_mmi_m128_2048", 128, 2048, 2048),
    "qconv_net": lambda o: qconv(o, "qconv_net"),
}

if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", required=True)
    ap.add_argument("names", nargs="*")
    args = ap.parse_args()
    for n in args.names or MODELS:
        if n not in MODELS:
            raise SystemExit(f"bench-int8-models: unknown model {n} (have {', '.join(MODELS)})")
        MODELS[n](args.out)
