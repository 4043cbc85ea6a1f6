#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Small opset 18-21 graphs in the layout of the ONNX node tests, run by
npu-conformance on cpu and sim (meson test 'onnx18-graphs').

Needs Debian's /usr/bin/python3 (numpy, onnx 1.12). onnx 1.12 does not know
opsets above 17, INT4 or FunctionProto.attribute_proto: the graphs are written
with its helper as plain nodes under opset_import 18-21 and never passed to
its checker; INT4/UINT4 tensors and function default attributes are encoded
by hand (protobuf fields) and survive as unknown fields. Expected outputs come
from numpy references written here, never from our code.

usage: gen_opset21.py OUTDIR [STAMP]
  OUTDIR/cases/<name>/model.onnx + test_data_set_0/{input,output}_N.pb
  OUTDIR/bad/<name>.onnx + OUTDIR/bad/manifest.txt ("<file> <keyword>")
"""
import math
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT = sys.argv[1]
rng = np.random.default_rng(21)
F = TensorProto.FLOAT
INT4, UINT4 = 22, 21


def varint(v):
    b = bytearray()
    while True:
        x = v & 0x7F
        v >>= 7
        b.append(x | (0x80 if v else 0))
        if not v:
            return bytes(b)


def field(num, wt, payload):
    key = varint((num << 3) | wt)
    if wt == 2:
        return key + varint(len(payload)) + payload
    return key + payload


def int4_tensor(name, values, signed=True):
    """TensorProto bytes of an INT4/UINT4 tensor: dims 1, data_type 2,
    name 8, raw_data 9 (two values a byte, the first in the low nibble)."""
    v = np.asarray(values).astype(np.int64)
    lo, hi = (-8, 7) if signed else (0, 15)
    assert v.min() >= lo and v.max() <= hi
    flat = (v.reshape(-1) & 15).astype(np.uint8)
    if flat.size % 2:
        flat = np.concatenate([flat, np.zeros(1, np.uint8)])
    packed = (flat[0::2] | (flat[1::2] << 4)).astype(np.uint8).tobytes()
    b = b"".join(field(1, 0, varint(d)) for d in v.shape)
    b += field(2, 0, varint(INT4 if signed else UINT4))
    b += field(8, 2, name.encode())
    b += field(9, 2, packed)
    t = TensorProto()
    t.ParseFromString(b)  # data_type 22/21 is unknown to onnx 1.12: kept as an unknown field
    return t


def model(nodes, inputs, outputs, inits=(), opset=21, functions=(), ir=10, extra_opsets=()):
    g = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    ops = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, v) for d, v in extra_opsets]
    m = helper.make_model(g, opset_imports=ops)
    m.ir_version = ir
    for f in functions:
        m.functions.add().CopyFrom(f) if isinstance(f, onnx.FunctionProto) else \
            m.functions.add().ParseFromString(f)
    return m


def vi(name, shape, dt=F):
    return helper.make_tensor_value_info(name, dt, shape)


def save_case(name, m, inputs, outputs):
    d = os.path.join(OUT, "cases", "test_" + name)
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    with open(os.path.join(d, "model.onnx"), "wb") as f:
        f.write(m.SerializeToString())
    for kind, arrs in (("input", inputs), ("output", outputs)):
        for i, a in enumerate(arrs):
            with open(os.path.join(d, "test_data_set_0", "%s_%d.pb" % (kind, i)), "wb") as f:
                f.write(numpy_helper.from_array(np.asarray(a)).SerializeToString())


# ---------------------------------------------------------------- references

def group_norm_ref(x, scale, bias, G, eps, per_group):
    N, C = x.shape[:2]
    xg = x.reshape(N, G, -1).astype(np.float64)
    mean = xg.mean(axis=2, keepdims=True)
    var = xg.var(axis=2, keepdims=True)
    y = ((xg - mean) / np.sqrt(var + eps)).reshape(x.shape)
    if per_group:
        scale = np.repeat(scale, C // G)
        bias = np.repeat(bias, C // G)
    sh = (1, C) + (1,) * (x.ndim - 2)
    return (y * scale.reshape(sh) + bias.reshape(sh)).astype(np.float32)


def gelu_ref(x, approx):
    x = x.astype(np.float64)
    if approx == "tanh":
        y = 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    else:
        y = 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))
    return y.astype(np.float32)


def pool_ref(x, k, d, s, mode):
    N, C, H, W = x.shape
    eh, ew = (k[0] - 1) * d[0] + 1, (k[1] - 1) * d[1] + 1
    oh, ow = (H - eh) // s[0] + 1, (W - ew) // s[1] + 1
    y = np.zeros((N, C, oh, ow), np.float32)
    for i in range(oh):
        for j in range(ow):
            win = x[:, :, i * s[0]:i * s[0] + eh:d[0], j * s[1]:j * s[1] + ew:d[1]]
            y[:, :, i, j] = win.max(axis=(2, 3)) if mode == "max" else win.mean(axis=(2, 3))
    return y


# ---------------------------------------------------------------- cases

def cases():
    # GroupNormalization, opset 18: scale and bias per group
    x = rng.standard_normal((2, 6, 3, 4)).astype(np.float32)
    sg = rng.standard_normal(3).astype(np.float32)
    bg = rng.standard_normal(3).astype(np.float32)
    n = helper.make_node("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=3, epsilon=1e-4)
    save_case("groupnorm_opset18_per_group",
              model([n], [vi("x", x.shape)], [vi("y", x.shape)],
                    [numpy_helper.from_array(sg, "s"), numpy_helper.from_array(bg, "b")], 18),
              [x], [group_norm_ref(x, sg, bg, 3, 1e-4, True)])
    # opset 21: per channel
    sc = rng.standard_normal(6).astype(np.float32)
    bc = rng.standard_normal(6).astype(np.float32)
    n = helper.make_node("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=2)
    save_case("groupnorm_opset21_per_channel",
              model([n], [vi("x", x.shape)], [vi("y", x.shape)],
                    [numpy_helper.from_array(sc, "s"), numpy_helper.from_array(bc, "b")], 21),
              [x], [group_norm_ref(x, sc, bc, 2, 1e-5, False)])

    # Gelu (opset 20), both approximations
    g = (rng.standard_normal((3, 17)) * 3).astype(np.float32)
    for approx in ("none", "tanh"):
        n = helper.make_node("Gelu", ["x"], ["y"], approximate=approx)
        save_case("gelu_opset20_" + approx, model([n], [vi("x", g.shape)], [vi("y", g.shape)], (), 20),
                  [g], [gelu_ref(g, approx)])

    # int4 weights dequantised block-wise (opset 21) feeding a MatMul
    K, Nn, bs = 64, 24, 16
    xa = rng.standard_normal((5, K)).astype(np.float32)
    w4 = rng.integers(-8, 8, (K, Nn))
    sc4 = (rng.random((K // bs, Nn)) * 0.05 + 0.01).astype(np.float32)
    w = (w4 * np.repeat(sc4, bs, axis=0)).astype(np.float32)
    nodes = [helper.make_node("DequantizeLinear", ["w4", "ws"], ["w"], axis=0, block_size=bs),
             helper.make_node("MatMul", ["x", "w"], ["y"])]
    save_case("matmul_int4_block_dq",
              model(nodes, [vi("x", xa.shape)], [vi("y", (5, Nn))],
                    [int4_tensor("w4", w4), numpy_helper.from_array(sc4, "ws")]),
              [xa], [(xa.astype(np.float64) @ w.astype(np.float64)).astype(np.float32)])
    # uint4 with a uint4 zero point, per block along axis 1 (an odd element count)
    u4 = rng.integers(0, 16, (7, 9))
    zp = rng.integers(0, 16, (7, 3))
    us = (rng.random((7, 3)) * 0.1 + 0.02).astype(np.float32)
    wu = ((u4 - np.repeat(zp, 3, axis=1)) * np.repeat(us, 3, axis=1)).astype(np.float32)
    xb = rng.standard_normal((2, 7)).astype(np.float32)
    nodes = [helper.make_node("DequantizeLinear", ["u4", "us", "uz"], ["w"], axis=1, block_size=3),
             helper.make_node("MatMul", ["x", "w"], ["y"])]
    save_case("matmul_uint4_zero_point_block_dq",
              model(nodes, [vi("x", xb.shape)], [vi("y", (2, 9))],
                    [int4_tensor("u4", u4, False), numpy_helper.from_array(us, "us"),
                     int4_tensor("uz", zp, False)]),
              [xb], [(xb.astype(np.float64) @ wu.astype(np.float64)).astype(np.float32)])
    # QuantizeLinear to int4 (zero point int4) saturates to [-8, 7]
    q = (rng.standard_normal((4, 6)) * 2).astype(np.float32)
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"])]
    ref = (np.clip(np.rint(q / np.float32(0.25)) + 1, -8, 7) - 1) * np.float32(0.25)
    save_case("quantize_int4_saturates",
              model(nodes, [vi("x", q.shape)], [vi("y", q.shape)],
                    [numpy_helper.from_array(np.float32(0.25), "s"), int4_tensor("z", 1)]),
              [q], [ref.astype(np.float32)])

    # Pad, wrap mode with axes (opset 19)
    p = rng.standard_normal((1, 2, 3, 4)).astype(np.float32)
    nodes = [helper.make_node("Pad", ["x", "pads", "", "axes"], ["y"], mode="wrap")]
    pads = np.array([1, 2, 2, 3], np.int64)  # axes 2, 3: begin (1, 2), end (2, 3)
    ref = np.pad(p, ((0, 0), (0, 0), (1, 2), (2, 3)), mode="wrap")
    save_case("pad_wrap_axes_opset19",
              model(nodes, [vi("x", p.shape)], [vi("y", ref.shape)],
                    [numpy_helper.from_array(pads, "pads"),
                     numpy_helper.from_array(np.array([2, 3], np.int64), "axes")], 19),
              [p], [ref])

    # dilated pooling (opset 19)
    xp = rng.standard_normal((1, 3, 9, 10)).astype(np.float32)
    for mode, op in (("max", "MaxPool"), ("avg", "AveragePool")):
        n = helper.make_node(op, ["x"], ["y"], kernel_shape=[3, 2], dilations=[2, 3],
                             strides=[1, 2])
        ref = pool_ref(xp, (3, 2), (2, 3), (1, 2), mode)
        save_case("%s_dilated_opset19" % op.lower(),
                  model([n], [vi("x", xp.shape)], [vi("y", ref.shape)], (), 19), [xp], [ref])

    # ReduceMean / ReduceMax with axes as an input (opset 18)
    r = rng.standard_normal((2, 3, 4)).astype(np.float32)
    nodes = [helper.make_node("ReduceMean", ["x", "ax"], ["m"], keepdims=0),
             helper.make_node("ReduceMax", ["m", "ax2"], ["y"], keepdims=1)]
    save_case("reduce_axes_input_opset18",
              model(nodes, [vi("x", r.shape)], [vi("y", (1, 4))],
                    [numpy_helper.from_array(np.array([0], np.int64), "ax"),
                     numpy_helper.from_array(np.array([0], np.int64), "ax2")], 18),
              [r], [r.mean(axis=0).max(axis=0, keepdims=True)])

    # Mish and Bitwise (opset 18)
    mx = (rng.standard_normal((3, 5)) * 4).astype(np.float32)
    save_case("mish_opset18", model([helper.make_node("Mish", ["x"], ["y"])], [vi("x", mx.shape)],
                                    [vi("y", mx.shape)], (), 18),
              [mx], [(mx * np.tanh(np.log1p(np.exp(mx.astype(np.float64))))).astype(np.float32)])

    # model-local functions: a call with an attribute reference, a nested call, a default
    save_case(*functions_case())


def attr_bytes(a):
    return a.SerializeToString()


def functions_case():
    """custom.ScaledGelu(x; alpha) = custom.AddBias(Gelu(x) * alpha; bias default 0.5)
    AddBias(x; bias) = x + bias (bias from the call, else the function's default,
    FunctionProto.attribute_proto, field 11 of IR 9)."""
    # AddBias: Constant(value_float <- ref bias) + x
    c = helper.make_node("Constant", [], ["b"])
    a = helper.AttributeProto()
    a.name = "value_float"
    a.type = helper.AttributeProto.FLOAT
    a.ref_attr_name = "bias"
    c.attribute.append(a)
    add = helper.make_node("Add", ["x", "b"], ["y"])
    addbias = helper.make_function("custom", "AddBias", ["x"], ["y"], [c, add],
                                   [helper.make_opsetid("", 21)], ["bias"])
    default = helper.make_attribute("bias", 0.5)
    addbias_bytes = addbias.SerializeToString() + field(11, 2, attr_bytes(default))
    # ScaledGelu: Gelu, Mul by Constant(ref alpha), then AddBias without bias
    g = helper.make_node("Gelu", ["x"], ["g"])
    ca = helper.make_node("Constant", [], ["alpha"])
    a2 = helper.AttributeProto()
    a2.name = "value_float"
    a2.type = helper.AttributeProto.FLOAT
    a2.ref_attr_name = "alpha"
    ca.attribute.append(a2)
    mul = helper.make_node("Mul", ["g", "alpha"], ["s"])
    call = helper.make_node("AddBias", ["s"], ["y"], domain="custom")
    scaled = helper.make_function("custom", "ScaledGelu", ["x"], ["y"], [g, ca, mul, call],
                                  [helper.make_opsetid("", 21), helper.make_opsetid("custom", 1)],
                                  ["alpha"])
    # main: two calls (names inside must not clash), one with an explicit bias
    n1 = helper.make_node("ScaledGelu", ["x"], ["t"], domain="custom", alpha=2.0)
    n2 = helper.make_node("AddBias", ["t"], ["y"], domain="custom", bias=-1.25)
    n3 = helper.make_node("ScaledGelu", ["y"], ["z"], domain="custom", alpha=0.5)
    x = (rng.standard_normal((2, 8)) * 2).astype(np.float32)
    m = model([n1, n2, n3], [vi("x", x.shape)], [vi("z", x.shape)], (), 21,
              [scaled, addbias_bytes], 10, [("custom", 1)])
    t = gelu_ref(x, "none").astype(np.float64) * 2.0 + 0.5
    y = t - 1.25
    z = gelu_ref(y.astype(np.float32), "none").astype(np.float64) * 0.5 + 0.5
    return "local_functions_nested_attrs", m, [x], [z.astype(np.float32)]


def bad():
    d = os.path.join(OUT, "bad")
    os.makedirs(d, exist_ok=True)
    man = []
    x = vi("x", (2,))
    y = vi("y", (2,))
    idn = helper.make_node("Relu", ["x"], ["y"])

    def save(name, m, kw):
        with open(os.path.join(d, name + ".onnx"), "wb") as f:
            f.write(m.SerializeToString())
        man.append("%s.onnx %s" % (name, kw))

    save("opset_28", model([idn], [x], [y], (), 28), "1.22.0")
    save("ir_version_14", model([idn], [x], [y], (), 21, ir=14), "IR version 14")
    # a function calling itself
    rec = helper.make_function("custom", "Loop1", ["a"], ["b"],
                               [helper.make_node("Loop1", ["a"], ["b"], domain="custom")],
                               [helper.make_opsetid("", 21)])
    save("function_recursive",
         model([helper.make_node("Loop1", ["x"], ["y"], domain="custom")], [x], [y], (), 21,
               [rec], 10, [("custom", 1)]), "nested more than")
    # a function importing another default-domain opset than the model
    f17 = helper.make_function("custom", "R", ["a"], ["b"], [helper.make_node("Relu", ["a"], ["b"])],
                               [helper.make_opsetid("", 17)])
    save("function_other_opset",
         model([helper.make_node("R", ["x"], ["y"], domain="custom")], [x], [y], (), 21, [f17], 10,
               [("custom", 1)]), "imports opset 17")
    # a call of a function the model does not define
    save("function_missing",
         model([helper.make_node("Nope", ["x"], ["y"], domain="custom")], [x], [y], (), 21, (), 10,
               [("custom", 1)]), "local functions")
    # an int4 graph input
    save("int4_input", model([helper.make_node("DequantizeLinear", ["q", "s"], ["y"])],
                             [vi("q", (2,), INT4)], [y],
                             [numpy_helper.from_array(np.float32(1), "s")]), "INT4")
    # int4 data shorter than its shape
    t = int4_tensor("w", [1, 2, 3])
    t.raw_data = b"\x21"
    save("int4_short", model([helper.make_node("DequantizeLinear", ["w", "s"], ["y"])], [], [y],
                             [t, numpy_helper.from_array(np.float32(1), "s")]), "two a byte")
    with open(os.path.join(d, "manifest.txt"), "w") as f:
        f.write("\n".join(man) + "\n")


os.makedirs(OUT, exist_ok=True)
cases()
bad()
if len(sys.argv) > 2:
    with open(sys.argv[2], "w") as f:
        f.write("ok\n")
