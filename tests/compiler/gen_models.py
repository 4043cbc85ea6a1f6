#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Generates the compiler test models (run at build time by meson).

OUT/valid/<name>/model.onnx plus test_data_set_0/{input,output}_N.pb: small
models made with onnx.helper (old opset forms, shape subgraphs, Constant
nodes, external data, masks, every dtype) and with torch.onnx.export (MLP,
conv+BN, transformer block with decomposed LayerNorm / GELU / SiLU /
attention). Expected outputs come from numpy or torch, never from our code.

OUT/bad/<name>.onnx plus OUT/bad/manifest.txt ("<file> <keyword>"): files the
importer must refuse with an error message containing the keyword.

OUT/fuse/<name>.onnx plus OUT/fuse/manifest.txt ("<file> <op> <count>"): graphs
for the fusion tests: after the pipeline, the graph must hold <count> nodes
of <op> (near-miss patterns expect 0).
"""
import os
import sys
import warnings

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

warnings.filterwarnings("ignore")
OUT = sys.argv[1]
STAMP = sys.argv[2] if len(sys.argv) > 2 else None
rng = np.random.default_rng(1234)


def save_case(name, model, inputs, outputs, ext_data=False):
    d = os.path.join(OUT, "valid", name)
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    if ext_data:
        onnx.save_model(model, os.path.join(d, "model.onnx"), save_as_external_data=True,
                        all_tensors_to_one_file=True, location="weights.bin",
                        size_threshold=16)
    else:
        onnx.save(model, os.path.join(d, "model.onnx"))
    for i, a in enumerate(inputs):
        with open(os.path.join(d, "test_data_set_0", "input_%d.pb" % i), "wb") as f:
            f.write(numpy_helper.from_array(np.asarray(a)).SerializeToString())
    for i, a in enumerate(outputs):
        with open(os.path.join(d, "test_data_set_0", "output_%d.pb" % i), "wb") as f:
            f.write(numpy_helper.from_array(np.asarray(a)).SerializeToString())


def mk(nodes, inputs, outputs, inits=(), opset=13, name="g"):
    g = helper.make_graph(nodes, name, inputs, outputs, initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 7
    return m


def vi(name, dt, shape):
    return helper.make_tensor_value_info(name, dt, shape)


F = TensorProto.FLOAT
I64 = TensorProto.INT64


def rawt(name, dt, dims, floats=()):
    """A TensorProto built by hand, without onnx.helper's consistency checks."""
    t = TensorProto()
    t.name = name
    t.data_type = dt
    t.dims.extend(dims)
    t.float_data.extend(floats)
    return t


def init(name, a):
    return numpy_helper.from_array(np.asarray(a), name)


# ---------------------------------------------------------------- valid, hand-made

def hand_made():
    import torch
    import torch.nn.functional as tf
    # elementwise with broadcast and a constant
    x = rng.standard_normal((2, 3)).astype(np.float32)
    y = rng.standard_normal((3,)).astype(np.float32)
    c = np.float32(1.5)
    m = mk([helper.make_node("Add", ["x", "y"], ["s"], name="add0"),
            helper.make_node("Mul", ["s", "c"], ["z"], name="mul0")],
           [vi("x", F, [2, 3]), vi("y", F, [3])], [vi("z", F, [2, 3])],
           [init("c", np.array(c, np.float32))])
    save_case("add_mul", m, [x, y], [(x + y) * c])

    # exporter-style shape subgraph on a symbolic batch: Shape/Gather/Unsqueeze/Concat/Reshape
    x = rng.standard_normal((1, 4, 6)).astype(np.float32)
    nodes = [
        helper.make_node("Shape", ["x"], ["shp"], name="shape0"),
        helper.make_node("Constant", [], ["i0"], value=numpy_helper.from_array(np.array(0, np.int64))),
        helper.make_node("Gather", ["shp", "i0"], ["b"], axis=0, name="gather0"),
        helper.make_node("Unsqueeze", ["b", "ax0"], ["b1"], name="unsq0"),
        helper.make_node("Constant", [], ["m1"], value_ints=[-1]),
        helper.make_node("Concat", ["b1", "m1"], ["newshape"], axis=0, name="concat0"),
        helper.make_node("Reshape", ["x", "newshape"], ["r"], name="reshape0"),
        helper.make_node("Cast", ["b"], ["bf"], to=F, name="cast0"),
        helper.make_node("Sqrt", ["bf"], ["bs"], name="sqrt0"),
        helper.make_node("Cast", ["bs"], ["bsd"], to=TensorProto.DOUBLE, name="cast1"),
        helper.make_node("Cast", ["bsd"], ["bsf"], to=F, name="cast2"),
        helper.make_node("Mul", ["r", "bsf"], ["out"], name="mul0"),
    ]
    m = mk(nodes, [vi("x", F, ["batch", 4, 6])], [vi("out", F, ["batch", 24])],
           [init("ax0", np.array([0], np.int64))])
    save_case("shape_chain", m, [x], [x.reshape(1, -1) * 1.0])

    # Constant node forms
    x = rng.standard_normal((3,)).astype(np.float32)
    nodes = [
        helper.make_node("Constant", [], ["cf"], value_float=2.0),
        helper.make_node("Constant", [], ["cfs"], value_floats=[1.0, 2.0, 3.0]),
        helper.make_node("Constant", [], ["ct"], value=numpy_helper.from_array(
            np.array([0.5, 0.25, 0.125], np.float32))),
        helper.make_node("Mul", ["x", "cf"], ["a"]),
        helper.make_node("Add", ["a", "cfs"], ["b"]),
        helper.make_node("Mul", ["b", "ct"], ["out"]),
    ]
    m = mk(nodes, [vi("x", F, [3])], [vi("out", F, [3])], opset=13)
    save_case("constant_nodes", m, [x], [(x * 2 + np.array([1, 2, 3], np.float32)) *
                                          np.array([0.5, 0.25, 0.125], np.float32)])

    # old opset forms (opset 9): Slice/Squeeze/Unsqueeze/ReduceMean/Pad/Clip/Softmax/Dropout/Upsample
    x = rng.standard_normal((1, 2, 4, 4)).astype(np.float32)
    nodes = [
        helper.make_node("Slice", ["x"], ["sl"], starts=[0, 1], ends=[2, 3], axes=[1, 2], name="slice"),
        helper.make_node("ReduceMean", ["sl"], ["rm"], axes=[3], keepdims=1, name="rmean"),
        helper.make_node("Squeeze", ["rm"], ["sq"], axes=[3], name="squeeze"),
        helper.make_node("Unsqueeze", ["sq"], ["us"], axes=[0], name="unsqueeze"),
        helper.make_node("Pad", ["x"], ["pd"], pads=[0, 0, 1, 1, 0, 0, 1, 1], value=0.5, name="pad"),
        helper.make_node("Clip", ["pd"], ["cl"], min=-0.5, max=0.75, name="clip"),
        helper.make_node("Softmax", ["x"], ["smx"], axis=1, name="softmax"),
        helper.make_node("Dropout", ["cl"], ["dr"], ratio=0.3, name="dropout"),
        helper.make_node("Upsample", ["x", "scales"], ["up"], mode="nearest", name="upsample"),
    ]
    m = mk(nodes, [vi("x", F, [1, 2, 4, 4])],
           [vi("us", F, None), vi("dr", F, None), vi("smx", F, None), vi("up", F, None)],
           [init("scales", np.array([1, 1, 2, 2], np.float32))], opset=9)
    sl = x[:, 0:2, 1:3, :]
    us = sl.mean(axis=3, keepdims=True).squeeze(3)[None]
    pd = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=0.5)
    cl = np.clip(pd, -0.5, 0.75)
    flat = x.reshape(1, -1)
    e = np.exp(flat - flat.max(axis=1, keepdims=True))
    smx = (e / e.sum(axis=1, keepdims=True)).reshape(x.shape)
    up = x.repeat(2, axis=2).repeat(2, axis=3)
    save_case("legacy_opset9", m, [x], [us, cl, smx, up])

    # opset 3: legacy broadcast (axis), Reshape with a shape attribute, Cast to a
    # named type, Concat's default axis 1, consumed_inputs
    x = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    b = rng.standard_normal((3, 4)).astype(np.float32)
    xi = rng.integers(-5, 5, (2, 3, 4, 5)).astype(np.int32)
    nodes = [
        helper.make_node("Add", ["x", "b"], ["ab"], broadcast=1, axis=1, name="legacy_add"),
        helper.make_node("Cast", ["xi"], ["xf"], to="FLOAT", name="legacy_cast"),
        helper.make_node("Concat", ["ab", "xf"], ["cc"], name="legacy_concat"),
        helper.make_node("Relu", ["cc"], ["r"], consumed_inputs=[0]),
        helper.make_node("Reshape", ["r"], ["y"], shape=[2, -1], name="legacy_reshape"),
    ]
    m = mk(nodes, [vi("x", F, [2, 3, 4, 5]), vi("xi", TensorProto.INT32, [2, 3, 4, 5])],
           [vi("y", F, None)], [init("b", b)], opset=3)
    cc = np.concatenate([x + b[None, :, :, None], xi.astype(np.float32)], axis=1)
    save_case("legacy_opset3", m, [x, xi], [np.maximum(cc, 0).reshape(2, -1)])

    # TopK with its opset-1 attribute k and Scatter (opset 9-10's ScatterElements)
    x = rng.permutation(24).astype(np.float32).reshape(4, 6)  # distinct: no ties
    data = rng.standard_normal((3, 5)).astype(np.float32)
    sidx = np.array([[0, 4], [-1, 1], [2, 2]], np.int64)
    supd = rng.standard_normal((3, 2)).astype(np.float32)
    nodes = [
        helper.make_node("TopK", ["x"], ["tv", "ti"], k=3, axis=1, name="topk"),
        helper.make_node("Scatter", ["data", "sidx", "supd"], ["sc"], axis=1, name="scatter"),
    ]
    m = mk(nodes, [vi("x", F, [4, 6]), vi("data", F, [3, 5])],
           [vi("tv", F, None), vi("ti", I64, None), vi("sc", F, None)],
           [init("sidx", sidx), init("supd", supd)], opset=9)
    ti = np.argsort(-x, axis=1, kind="stable")[:, :3]
    sc = data.copy()
    for r in range(3):
        for j in range(2):
            sc[r, sidx[r, j]] = supd[r, j]
    save_case("legacy_topk_scatter_opset9", m, [x, data],
              [np.take_along_axis(x, ti, 1), ti, sc])

    # DepthToSpace (DCR and CRD), SpaceToDepth, ScatterND with a reduction (opset 16)
    x = rng.standard_normal((1, 8, 2, 3)).astype(np.float32)
    nidx = np.array([[0, 1], [0, 1], [1, -1]], np.int64)
    nupd = rng.standard_normal((3, 6)).astype(np.float32)
    nodes = [
        helper.make_node("DepthToSpace", ["x"], ["dcr"], blocksize=2, name="d2s_dcr"),
        helper.make_node("DepthToSpace", ["x"], ["crd"], blocksize=2, mode="CRD", name="d2s_crd"),
        helper.make_node("SpaceToDepth", ["dcr"], ["back"], blocksize=2, name="s2d"),
        helper.make_node("Reshape", ["back", "shp"], ["x4"], name="reshape"),
        helper.make_node("ScatterND", ["x4", "nidx", "nupd"], ["snd"], reduction="add",
                         name="scatternd"),
    ]
    m = mk(nodes, [vi("x", F, [1, 8, 2, 3])],
           [vi("dcr", F, None), vi("crd", F, None), vi("snd", F, None)],
           [init("shp", np.array([2, 4, 6], np.int64)), init("nidx", nidx),
            init("nupd", nupd)], opset=16)
    b = 2
    dcr = x.reshape(1, b, b, 2, 2, 3).transpose(0, 3, 4, 1, 5, 2).reshape(1, 2, 4, 6)
    crd = x.reshape(1, 2, b, b, 2, 3).transpose(0, 1, 4, 2, 5, 3).reshape(1, 2, 4, 6)
    snd = x.reshape(2, 4, 6).copy()
    for t in range(3):
        snd[nidx[t, 0], nidx[t, 1]] += nupd[t]
    save_case("index_ops_opset16", m, [x], [dcr, crd, snd])

    # LSTM (bidirectional, sequence_lens, initial states, clip) and GRU (reverse,
    # linear_before_reset=0, sequence_lens) against numpy loops written from the
    # ONNX operator text
    T_, B_, I_, H_ = 5, 3, 4, 3
    x = rng.standard_normal((T_, B_, I_)).astype(np.float32)
    sl = np.array([5, 2, 0], np.int32)
    lw = (0.5 * rng.standard_normal((2, 4 * H_, I_))).astype(np.float32)
    lr = (0.5 * rng.standard_normal((2, 4 * H_, H_))).astype(np.float32)
    lb = (0.3 * rng.standard_normal((2, 8 * H_))).astype(np.float32)
    h0 = rng.standard_normal((2, B_, H_)).astype(np.float32)
    c0 = rng.standard_normal((2, B_, H_)).astype(np.float32)
    gw = (0.5 * rng.standard_normal((1, 3 * H_, I_))).astype(np.float32)
    gr = (0.5 * rng.standard_normal((1, 3 * H_, H_))).astype(np.float32)
    gb = (0.3 * rng.standard_normal((1, 6 * H_))).astype(np.float32)
    sig = lambda v: 1 / (1 + np.exp(-v))

    def lstm_ref(d, clip):
        y = np.zeros((T_, B_, H_), np.float64)
        hh, cc = h0[d].astype(np.float64), c0[d].astype(np.float64)
        for b in range(B_):
            h, c = hh[b].copy(), cc[b].copy()
            steps = range(sl[b] - 1, -1, -1) if d == 1 else range(sl[b])
            for t in steps:
                g = lw[d] @ x[t, b] + lr[d] @ h + lb[d][:4 * H_] + lb[d][4 * H_:]
                g = np.clip(g, -clip, clip)
                i, o, f, cg = sig(g[:H_]), sig(g[H_:2 * H_]), sig(g[2 * H_:3 * H_]), \
                    np.tanh(g[3 * H_:])
                c = f * c + i * cg
                h = o * np.tanh(c)
                y[t, b] = h
            hh[b], cc[b] = h, c
        return y, hh, cc

    def gru_ref():
        y = np.zeros((T_, B_, H_), np.float64)
        hn = np.zeros((B_, H_))
        for b in range(B_):
            h = np.zeros(H_)
            for t in range(sl[b] - 1, -1, -1):
                xw = gw[0] @ x[t, b] + gb[0][:3 * H_]
                z = sig(xw[:H_] + gr[0][:H_] @ h + gb[0][3 * H_:4 * H_])
                r = sig(xw[H_:2 * H_] + gr[0][H_:2 * H_] @ h + gb[0][4 * H_:5 * H_])
                ht = np.tanh(xw[2 * H_:] + gr[0][2 * H_:] @ (r * h) + gb[0][5 * H_:])
                h = (1 - z) * ht + z * h
                y[t, b] = h
            hn[b] = h
        return y, hn

    nodes = [
        helper.make_node("LSTM", ["x", "lw", "lr", "lb", "sl", "h0", "c0"], ["ly", "lh", "lc"],
                         hidden_size=H_, direction="bidirectional", clip=1.5, name="lstm"),
        helper.make_node("GRU", ["x", "gw", "gr", "gb", "sl"], ["gy", "gh"], hidden_size=H_,
                         direction="reverse", name="gru"),
    ]
    m = mk(nodes, [vi("x", F, [T_, B_, I_])],
           [vi(n, F, None) for n in ["ly", "lh", "lc", "gy", "gh"]],
           [init("lw", lw), init("lr", lr), init("lb", lb), init("sl", sl), init("h0", h0),
            init("c0", c0), init("gw", gw), init("gr", gr), init("gb", gb)], opset=14)
    f0, f1 = lstm_ref(0, 1.5), lstm_ref(1, 1.5)
    gy, gh = gru_ref()
    save_case("rnn_seq_lens", m, [x],
              [np.stack([f0[0], f1[0]], 1).astype(np.float32),
               np.stack([f0[1], f1[1]]).astype(np.float32),
               np.stack([f0[2], f1[2]]).astype(np.float32),
               gy[:, None].astype(np.float32), gh[None].astype(np.float32)])

    # If with a condition that follows from shapes (torch's export of squeeze(d)
    # on a dim it cannot prove to be 1): the taken branch has its own
    # initializer and a nested If, captures outer values, and one of them
    # ("rx") is produced by a node listed after the If (the importer orders by
    # captures too)
    x = rng.standard_normal((1, 3, 4)).astype(np.float32)
    bw = rng.standard_normal((3, 4)).astype(np.float32)
    wo = rng.standard_normal((3, 4)).astype(np.float32)
    inner = helper.make_graph(
        [helper.make_node("Mul", ["sq", "wo"], ["n_then"], name="inner_mul")], "inner_then", [],
        [vi("n_then", F, None)])
    inner_else = helper.make_graph(
        [helper.make_node("Neg", ["sq"], ["n_else"], name="inner_neg")], "inner_else", [],
        [vi("n_else", F, None)])
    then_g = helper.make_graph(
        [helper.make_node("Constant", [], ["ax0"], value=helper.make_tensor("v", I64, [1], [0]),
                          name="c_ax"),
         helper.make_node("Squeeze", ["x", "ax0"], ["sq0"], name="sqz"),
         helper.make_node("Add", ["sq0", "bw"], ["sq1"], name="addb"),
         helper.make_node("Add", ["sq1", "rx"], ["sq"], name="addr"),
         helper.make_node("If", ["cond_b"], ["nested"], then_branch=inner, else_branch=inner_else,
                          name="nested_if")],
        "then", [], [vi("nested", F, None), vi("sq0", F, None)], [init("bw", bw)])
    else_g = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["e0"], name="e_id"),
         helper.make_node("Neg", ["x"], ["e1"], name="e_neg")], "else", [],
        [vi("e0", F, None), vi("e1", F, None)])
    nodes = [
        helper.make_node("Shape", ["x"], ["s"], name="shape"),
        helper.make_node("Gather", ["s", "i0"], ["d0"], axis=0, name="gather"),
        helper.make_node("Equal", ["d0", "one"], ["cond"], name="eq1"),
        helper.make_node("Equal", ["d0", "two"], ["cond_b"], name="eq2"),
        helper.make_node("If", ["cond"], ["y1", "y2"], then_branch=then_g, else_branch=else_g,
                         name="squeeze_if"),
        helper.make_node("Relu", ["x1"], ["rx"], name="relu_after"),
    ]
    m = mk(nodes, [vi("x", F, [1, 3, 4]), vi("x1", F, [3, 4])],
           [vi("y1", F, None), vi("y2", F, None)],
           [init("i0", np.array(0, np.int64)), init("one", np.array(1, np.int64)),
            init("two", np.array(2, np.int64)), init("wo", wo)], opset=13)
    x1 = rng.standard_normal((3, 4)).astype(np.float32)
    sq = x[0] + bw + np.maximum(x1, 0)
    save_case("if_shape_cond", m, [x, x1], [-sq, x[0]])

    # Split with the attribute (opset 11) and BatchNorm (opset 7, spatial=1)
    x = rng.standard_normal((1, 4, 3, 3)).astype(np.float32)
    sc, bi, me, va = [rng.standard_normal(4).astype(np.float32) for _ in range(4)]
    va = np.abs(va) + 0.5
    nodes = [
        helper.make_node("BatchNormalization", ["x", "sc", "bi", "me", "va"], ["bn"],
                         epsilon=1e-3, spatial=1, name="bn"),
        helper.make_node("Split", ["bn"], ["s0", "s1"], axis=1, split=[1, 3], name="split"),
    ]
    m = mk(nodes, [vi("x", F, [1, 4, 3, 3])], [vi("s0", F, None), vi("s1", F, None)],
           [init("sc", sc), init("bi", bi), init("me", me), init("va", va)], opset=7)
    r = lambda a: a.reshape(1, 4, 1, 1)
    bn = (x - r(me)) / np.sqrt(r(va) + 1e-3) * r(sc) + r(bi)
    save_case("legacy_opset7", m, [x], [bn[:, :1], bn[:, 1:]])

    # attention-mask arithmetic: Equal/Where/Expand/Cast on an input mask
    s = 5
    mask = (rng.random((1, s)) > 0.3).astype(np.int64)
    sc = rng.standard_normal((1, 2, s, s)).astype(np.float32)
    nodes = [
        helper.make_node("Unsqueeze", ["mask", "ax12"], ["m4"], name="unsq"),
        helper.make_node("Equal", ["m4", "zero"], ["eq"], name="eq"),
        helper.make_node("Expand", ["eq", "eshape"], ["ex"], name="expand"),
        helper.make_node("Where", ["ex", "neg", "scores"], ["wh"], name="where"),
        helper.make_node("Softmax", ["wh"], ["out"], axis=-1, name="softmax"),
    ]
    m = mk(nodes, [vi("mask", I64, [1, s]), vi("scores", F, [1, 2, s, s])], [vi("out", F, None)],
           [init("ax12", np.array([1, 2], np.int64)), init("zero", np.array(0, np.int64)),
            init("eshape", np.array([1, 2, s, s], np.int64)),
            init("neg", np.array(-1e9, np.float32))])
    wh = np.where(np.broadcast_to((mask[:, None, None, :] == 0), (1, 2, s, s)), np.float32(-1e9), sc)
    e = np.exp(wh - wh.max(-1, keepdims=True))
    save_case("where_mask", m, [mask, sc], [e / e.sum(-1, keepdims=True)])

    # initializers of every dtype, cast to f32 and summed (typed fields, not raw_data)
    dts = [np.float32, np.float16, np.float64, np.int8, np.uint8, np.int16, np.uint16,
           np.int32, np.int64, np.uint32, np.uint64, np.bool_]
    nodes, inits = [], []
    prev = "x"
    total = None
    x = rng.standard_normal((4,)).astype(np.float32)
    for i, dt in enumerate(dts):
        a = (np.arange(4) % 2 if dt == np.bool_ else np.arange(4) * (i + 1)).astype(dt)
        t = helper.make_tensor("c%d" % i, onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[np.dtype(dt)], [4],
                               a.tolist())
        inits.append(t)
        nodes.append(helper.make_node("Cast", ["c%d" % i], ["f%d" % i], to=F))
        nodes.append(helper.make_node("Add", [prev, "f%d" % i], ["s%d" % i]))
        prev = "s%d" % i
        total = a.astype(np.float32) if total is None else total + a.astype(np.float32)
    m = mk(nodes, [vi("x", F, [4])], [vi(prev, F, [4])], inits)
    save_case("all_dtypes", m, [x], [x + total])

    # external data (weights in weights.bin next to the model)
    x = rng.standard_normal((2, 8)).astype(np.float32)
    w = rng.standard_normal((8, 5)).astype(np.float32)
    b = rng.standard_normal((5,)).astype(np.float32)
    m = mk([helper.make_node("MatMul", ["x", "w"], ["mm"]), helper.make_node("Add", ["mm", "b"], ["y"])],
           [vi("x", F, [2, 8])], [vi("y", F, [2, 5])], [init("w", w), init("b", b)])
    save_case("external_data", m, [x], [x @ w + b], ext_data=True)

    # fp16 MatMul + bias + Relu and Conv + Relu: fused, run through the executor's
    # epilogue (the kernels apply npu_act themselves only for fp32)
    H = TensorProto.FLOAT16
    x = rng.standard_normal((3, 8)).astype(np.float16)
    w = (rng.standard_normal((8, 4)) * 0.5).astype(np.float16)
    b = rng.standard_normal((4,)).astype(np.float16)
    xi = rng.standard_normal((1, 2, 5, 5)).astype(np.float16)
    cw = (rng.standard_normal((3, 2, 3, 3)) * 0.5).astype(np.float16)
    cb = rng.standard_normal((3,)).astype(np.float16)
    m = mk([helper.make_node("MatMul", ["x", "w"], ["mm"]), helper.make_node("Add", ["mm", "b"], ["ab"]),
            helper.make_node("Relu", ["ab"], ["y"]),
            helper.make_node("Conv", ["xi", "cw", "cb"], ["c"], pads=[1, 1, 1, 1]),
            helper.make_node("LeakyRelu", ["c"], ["yc"], alpha=0.2)],
           [vi("x", H, [3, 8]), vi("xi", H, [1, 2, 5, 5])], [vi("y", H, [3, 4]), vi("yc", H, [1, 3, 5, 5])],
           [init("w", w), init("b", b), init("cw", cw), init("cb", cb)])
    ref = np.maximum(x.astype(np.float32) @ w.astype(np.float32) + b.astype(np.float32), 0)
    conv = tf.conv2d(torch.from_numpy(xi.astype(np.float32)), torch.from_numpy(cw.astype(np.float32)),
                     torch.from_numpy(cb.astype(np.float32)), padding=1).numpy()
    conv = np.where(conv > 0, conv, 0.2 * conv)
    save_case("fp16_fused", m, [x, xi], [ref.astype(np.float16), conv.astype(np.float16)])

    # nodes given out of topological order
    x = rng.standard_normal((3,)).astype(np.float32)
    m = mk([helper.make_node("Relu", ["a"], ["y"]), helper.make_node("Neg", ["x"], ["a"])],
           [vi("x", F, [3])], [vi("y", F, [3])])
    save_case("unsorted", m, [x], [np.maximum(-x, 0)])

    # conv with auto_pad SAME_UPPER, stride 2, plus pooling and Gemm
    x = rng.standard_normal((1, 3, 7, 7)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    import torch
    import torch.nn.functional as tf
    xt = torch.from_numpy(x)
    conv = tf.conv2d(tf.pad(xt, (1, 1, 1, 1)), torch.from_numpy(w), stride=2)
    pool = tf.max_pool2d(conv, 2, 2, ceil_mode=True)
    m = mk([helper.make_node("Conv", ["x", "w"], ["c"], auto_pad="SAME_UPPER", strides=[2, 2]),
            helper.make_node("MaxPool", ["c"], ["p"], kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1)],
           [vi("x", F, [1, 3, 7, 7])], [vi("p", F, None)], [init("w", w)])
    save_case("conv_autopad", m, [x], [pool.numpy()])


# ---------------------------------------------------------------- valid, torch-exported

def torch_models():
    import torch
    import torch.nn as nn
    torch.manual_seed(0)

    def export(name, model, args, opset=13, names=None, dyn=None, fuse_manifest=None):
        model.eval()
        d = os.path.join(OUT, "valid", name)
        os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
        path = os.path.join(d, "model.onnx")
        with torch.no_grad():
            torch.onnx.export(model, args, path, opset_version=opset, do_constant_folding=False,
                              input_names=names, dynamic_axes=dyn)
            outs = model(*args)
        if not isinstance(outs, (tuple, list)):
            outs = [outs]
        for i, a in enumerate(args):
            with open(os.path.join(d, "test_data_set_0", "input_%d.pb" % i), "wb") as f:
                f.write(numpy_helper.from_array(a.numpy()).SerializeToString())
        for i, a in enumerate(outs):
            with open(os.path.join(d, "test_data_set_0", "output_%d.pb" % i), "wb") as f:
                f.write(numpy_helper.from_array(a.numpy()).SerializeToString())

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.l1 = nn.Linear(16, 32)
            self.l2 = nn.Linear(32, 8)

        def forward(self, x):
            return self.l2(nn.functional.gelu(torch.relu(self.l1(x))))

    export("torch_mlp", MLP(), (torch.randn(4, 16),))

    class ConvNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.c1 = nn.Conv2d(3, 8, 3, padding=1)
            self.bn = nn.BatchNorm2d(8)
            self.c2 = nn.Conv2d(8, 8, 3, stride=2, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(8)
            self.fc = nn.Linear(8, 10)

        def forward(self, x):
            y = torch.relu(self.bn(self.c1(x)))
            y = nn.functional.relu6(self.bn2(self.c2(y)))
            y = nn.functional.adaptive_avg_pool2d(y, 1).flatten(1)
            return self.fc(y)

    net = ConvNet()
    with torch.no_grad():  # non-trivial BN statistics
        for bn in (net.bn, net.bn2):
            bn.running_mean.uniform_(-0.5, 0.5)
            bn.running_var.uniform_(0.5, 2.0)
            bn.weight.uniform_(0.5, 1.5)
            bn.bias.uniform_(-0.5, 0.5)
    export("torch_convnet", net, (torch.randn(1, 3, 16, 16),))

    class Block(nn.Module):
        """A transformer encoder block written the way HF models write it."""

        def __init__(self, d=32, h=4, tanh_gelu=False):
            super().__init__()
            self.h, self.dh = h, d // h
            self.ln1 = nn.LayerNorm(d, eps=1e-5)
            self.ln2 = nn.LayerNorm(d, eps=1e-12)
            self.q = nn.Linear(d, d)
            self.k = nn.Linear(d, d)
            self.v = nn.Linear(d, d)
            self.o = nn.Linear(d, d)
            self.f1 = nn.Linear(d, 4 * d)
            self.f2 = nn.Linear(4 * d, d)
            self.tanh_gelu = tanh_gelu

        def split(self, t):
            b, s, _ = t.shape
            return t.view(b, s, self.h, self.dh).permute(0, 2, 1, 3)

        def forward(self, x, mask):
            b, s, d = x.shape
            y = self.ln1(x)
            q, k, v = self.split(self.q(y)), self.split(self.k(y)), self.split(self.v(y))
            scores = torch.matmul(q, k.transpose(-1, -2)) / (self.dh ** 0.5)
            ext = (1.0 - mask[:, None, None, :].to(x.dtype)) * -10000.0
            p = torch.softmax(scores + ext, dim=-1)
            a = torch.matmul(p, v).permute(0, 2, 1, 3).reshape(b, s, d)
            x = x + self.o(a)
            y = self.f1(self.ln2(x))
            if self.tanh_gelu:
                y = 0.5 * y * (1.0 + torch.tanh(0.7978845608028654 * (y + 0.044715 * torch.pow(y, 3.0))))
            else:
                y = nn.functional.gelu(y)
            return x + self.f2(y * torch.sigmoid(y))

    mask = torch.ones(1, 6, dtype=torch.int64)
    mask[0, 5] = 0
    export("torch_block", Block(), (torch.randn(1, 6, 32), mask), names=["x", "mask"],
           dyn={"x": {0: "batch", 1: "seq"}, "mask": {0: "batch", 1: "seq"}})
    export("torch_block_tanh", Block(tanh_gelu=True), (torch.randn(2, 6, 32), mask.repeat(2, 1)))
    export("torch_block_opset17", Block(), (torch.randn(1, 6, 32), mask), opset=17)

    class SiLUNet(nn.Module):
        def forward(self, x):
            return nn.functional.silu(x) + x * torch.sigmoid(x * 2.0)

    export("torch_silu", SiLUNet(), (torch.randn(2, 8),))


# ---------------------------------------------------------------- fusion cases

def fusion_cases():
    d = os.path.join(OUT, "fuse")
    os.makedirs(d, exist_ok=True)
    man = []

    def add(name, model, op, count):
        onnx.save(model, os.path.join(d, name + ".onnx"))
        man.append("%s.onnx %s %d" % (name, op, count))

    def ln(eps=1e-5, axes=(-1,), pow_e=2.0, affine=True, use_mul=False):
        n = [helper.make_node("ReduceMean", ["x"], ["m"], axes=list(axes)),
             helper.make_node("Sub", ["x", "m"], ["d"])]
        if use_mul:
            n.append(helper.make_node("Mul", ["d", "d"], ["p"]))
        else:
            n.append(helper.make_node("Pow", ["d", "two"], ["p"]))
        n += [helper.make_node("ReduceMean", ["p"], ["v"], axes=list(axes)),
              helper.make_node("Add", ["v", "eps"], ["ve"]),
              helper.make_node("Sqrt", ["ve"], ["s"]),
              helper.make_node("Div", ["d", "s"], ["nrm"])]
        inits = [init("two", np.array(pow_e, np.float32)), init("eps", np.array(eps, np.float32))]
        out = "nrm"
        if affine:
            n += [helper.make_node("Mul", ["nrm", "g"], ["gm"]), helper.make_node("Add", ["gm", "b"], ["y"])]
            inits += [init("g", rng.standard_normal(8).astype(np.float32)),
                      init("b", rng.standard_normal(8).astype(np.float32))]
            out = "y"
        return mk(n, [vi("x", F, [2, 3, 8])], [vi(out, F, [2, 3, 8])], inits, opset=13)

    add("ln_ok", ln(), "LayerNormalization", 1)
    add("ln_mul_square", ln(use_mul=True, affine=False), "LayerNormalization", 1)
    add("ln_bad_pow", ln(pow_e=3.0), "LayerNormalization", 0)
    add("ln_bad_axes", ln(axes=(1,)), "LayerNormalization", 0)

    def gelu(c=1.4142135381698608, half=0.5):
        n = [helper.make_node("Div", ["x", "c"], ["a"]), helper.make_node("Erf", ["a"], ["e"]),
             helper.make_node("Add", ["e", "one"], ["e1"]), helper.make_node("Mul", ["x", "e1"], ["m"]),
             helper.make_node("Mul", ["m", "half"], ["y"])]
        return mk(n, [vi("x", F, [4, 8])], [vi("y", F, [4, 8])],
                  [init("c", np.array(c, np.float32)), init("one", np.array(1.0, np.float32)),
                   init("half", np.array(half, np.float32))])

    add("gelu_ok", gelu(), "Gelu", 1)
    add("gelu_bad_const", gelu(c=1.5), "Gelu", 0)
    add("gelu_bad_half", gelu(half=0.6), "Gelu", 0)

    def gelu_tanh(k=0.044715, c=0.7978845608028654, cube="pow"):
        n = []
        if cube == "pow":
            n.append(helper.make_node("Pow", ["x", "three"], ["x3"]))
        else:
            n += [helper.make_node("Mul", ["x", "x"], ["x2"]), helper.make_node("Mul", ["x", "x2"], ["x3"])]
        n += [helper.make_node("Mul", ["k", "x3"], ["kx3"]), helper.make_node("Add", ["x", "kx3"], ["in"]),
              helper.make_node("Mul", ["in", "c"], ["a"]), helper.make_node("Tanh", ["a"], ["t"]),
              helper.make_node("Add", ["one", "t"], ["t1"]), helper.make_node("Mul", ["half", "x"], ["hx"]),
              helper.make_node("Mul", ["hx", "t1"], ["y"])]
        return mk(n, [vi("x", F, [4, 8])], [vi("y", F, [4, 8])],
                  [init("three", np.array(3.0, np.float32)), init("k", np.array(k, np.float32)),
                   init("c", np.array(c, np.float32)), init("one", np.array(1.0, np.float32)),
                   init("half", np.array(0.5, np.float32))])

    add("gelu_tanh_ok", gelu_tanh(), "npu.GeluTanh", 1)
    add("gelu_tanh_muls", gelu_tanh(cube="mul"), "npu.GeluTanh", 1)
    add("gelu_tanh_bad_k", gelu_tanh(k=0.04), "npu.GeluTanh", 0)
    add("gelu_tanh_bad_c", gelu_tanh(c=0.8), "npu.GeluTanh", 0)

    n = [helper.make_node("Sigmoid", ["x"], ["s"]), helper.make_node("Mul", ["x", "s"], ["y"])]
    add("silu_ok", mk(n, [vi("x", F, [4, 8])], [vi("y", F, [4, 8])]), "npu.SiLU", 1)
    n = [helper.make_node("Sigmoid", ["x"], ["s"]), helper.make_node("Mul", ["z", "s"], ["y"])]
    add("silu_near_miss", mk(n, [vi("x", F, [4, 8]), vi("z", F, [4, 8])], [vi("y", F, [4, 8])]),
        "npu.SiLU", 0)

    # hard swish as torch exports it below opset 14: x * HardSigmoid(x; 1/6, 0.5)
    def hswish(alpha=1.0 / 6, beta=0.5, other="x", conv=False):
        n = [helper.make_node("HardSigmoid", ["x"], ["s"], alpha=alpha, beta=beta),
             helper.make_node("Mul", [other, "s"], ["y"])]
        ins = [vi("x", F, [4, 8])] + ([vi("z", F, [4, 8])] if other == "z" else [])
        if not conv:
            return mk(n, ins, [vi("y", F, [4, 8])])
        n = [helper.make_node("Conv", ["i", "w"], ["x"], pads=[1, 1, 1, 1])] + n
        w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
        return mk(n, [vi("i", F, [1, 3, 6, 6])], [vi("y", F, None)], [init("w", w)])

    add("hswish_ok", hswish(), "HardSwish", 1)
    add("hswish_ok_gone", hswish(), "HardSigmoid", 0)
    add("hswish_bad_alpha", hswish(alpha=0.2), "HardSwish", 0)
    add("hswish_bad_beta", hswish(beta=0.6), "HardSwish", 0)
    add("hswish_near_miss", hswish(other="z"), "HardSwish", 0)
    add("conv_hswish", hswish(conv=True), "Mul", 0)

    def attn(scale_op="Div", axis=-1, perm=(0, 1, 3, 2), kshape=(1, 2, 5, 4)):
        n = [helper.make_node("Transpose", ["k"], ["kt"], perm=list(perm)),
             helper.make_node("MatMul", ["q", "kt"], ["s"]),
             helper.make_node(scale_op, ["s", "sc"], ["ss"]),
             helper.make_node("Add", ["ss", "mask"], ["sm"]),
             helper.make_node("Softmax", ["sm"], ["p"], axis=axis),
             helper.make_node("MatMul", ["p", "v"], ["y"])]
        sh = [1, 2, 5, 4]
        return mk(n, [vi("q", F, sh), vi("k", F, list(kshape)), vi("v", F, sh), vi("mask", F, [1, 1, 1, 5])],
                  [vi("y", F, sh)], [init("sc", np.array(2.0, np.float32))])

    add("attn_ok", attn(), "npu.Attention", 1)
    add("attn_perm_k", attn(perm=(0, 2, 3, 1), kshape=(1, 5, 2, 4)), "npu.Attention", 1)
    add("attn_mul", attn(scale_op="Mul"), "npu.Attention", 1)
    add("attn_bad_axis", attn(axis=2), "npu.Attention", 0)

    # Conv + BN folding and Conv + Relu / Gemm + bias fusion
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    n = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
         helper.make_node("BatchNormalization", ["c", "sc", "bi", "me", "va"], ["bn"]),
         helper.make_node("Relu", ["bn"], ["y"])]
    m = mk(n, [vi("x", F, [1, 3, 6, 6])], [vi("y", F, None)],
           [init("w", w), init("sc", np.ones(4, np.float32) * 2), init("bi", np.ones(4, np.float32)),
            init("me", np.zeros(4, np.float32)), init("va", np.ones(4, np.float32))])
    add("conv_bn_relu", m, "BatchNormalization", 0)
    add("conv_bn_relu_act", m, "Relu", 0)
    n = [helper.make_node("MatMul", ["x", "w"], ["mm"]), helper.make_node("Add", ["mm", "b"], ["y"])]
    m = mk(n, [vi("x", F, [3, 4])], [vi("y", F, [3, 5])],
           [init("w", rng.standard_normal((4, 5)).astype(np.float32)),
            init("b", rng.standard_normal(5).astype(np.float32))])
    add("matmul_bias", m, "Add", 0)
    with open(os.path.join(d, "manifest.txt"), "w") as f:
        f.write("\n".join(man) + "\n")


# ---------------------------------------------------------------- bad files

def bad_models():
    d = os.path.join(OUT, "bad")
    os.makedirs(d, exist_ok=True)
    man = []

    def add(name, data, keyword):
        p = os.path.join(d, name + ".onnx")
        with open(p, "wb") as f:
            f.write(data if isinstance(data, bytes) else data.SerializeToString())
        man.append("%s.onnx %s" % (name, keyword))

    good = mk([helper.make_node("Relu", ["x"], ["y"], name="relu0")], [vi("x", F, [2])], [vi("y", F, [2])],
              [init("w", np.ones((4, 4), np.float32))])
    raw = good.SerializeToString()
    add("truncated", raw[: len(raw) // 2], "protobuf")
    add("garbage", b"\xff\xfe\x00garbage" * 10, "protobuf")
    add("empty", b"", "is empty")
    add("unknown_op", mk([helper.make_node("FooBar", ["x"], ["y"], name="foo")],
                         [vi("x", F, [2])], [vi("y", F, [2])]), "FooBar")
    add("other_domain", mk([helper.make_node("Gelu", ["x"], ["y"], name="g", domain="com.microsoft")],
                           [vi("x", F, [2])], [vi("y", F, [2])]), "com.microsoft")
    add("undefined_input", mk([helper.make_node("Add", ["x", "nothere"], ["y"], name="add0")],
                              [vi("x", F, [2])], [vi("y", F, [2])]), "nothere")
    add("duplicate_output", mk([helper.make_node("Relu", ["x"], ["y"], name="r0"),
                                helper.make_node("Neg", ["x"], ["y"], name="r1")],
                               [vi("x", F, [2])], [vi("y", F, [2])]), "duplicate")
    add("duplicate_init", mk([helper.make_node("Add", ["x", "w"], ["y"])], [vi("x", F, [2])],
                             [vi("y", F, [2])], [init("w", np.ones(2, np.float32)),
                                                 init("w", np.ones(2, np.float32))]), "twice")
    then_g = helper.make_graph([helper.make_node("Relu", ["x"], ["t"])], "t", [],
                               [vi("t", F, None)])
    else_g = helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "e", [],
                               [vi("e", F, None)])
    add("if_data_cond", mk([helper.make_node("ReduceSum", ["x"], ["sx"], keepdims=0, name="sum"),
                            helper.make_node("Greater", ["sx", "z"], ["c"], name="gt"),
                            helper.make_node("If", ["c"], ["y"], then_branch=then_g,
                                             else_branch=else_g, name="data_if")],
                           [vi("x", F, [2])], [vi("y", F, [2])],
                           [init("z", np.array(0, np.float32))]), "data")
    add("if_undefined_capture", mk([helper.make_node("If", ["c"], ["y"], then_branch=helper.make_graph(
        [helper.make_node("Relu", ["nowhere"], ["t"])], "t", [], [vi("t", F, None)]),
        else_branch=else_g, name="bad_if")], [vi("x", F, [2]), vi("c", TensorProto.BOOL, [])],
        [vi("y", F, [2])]), "nowhere")
    add("cycle", mk([helper.make_node("Add", ["x", "b"], ["a"], name="n_a"),
                     helper.make_node("Relu", ["a"], ["b"], name="n_b")],
                    [vi("x", F, [2])], [vi("b", F, [2])]), "cycle")
    t = rawt("w", F, [1000000, 1000000])
    add("absurd_dims", mk([helper.make_node("Add", ["x", "w"], ["y"])], [vi("x", F, [2])],
                          [vi("y", F, [2])], [t]), "w")
    t = rawt("w", F, [4, 4], [1.0, 2.0, 3.0])
    add("short_data", mk([helper.make_node("Add", ["x", "w"], ["y"])], [vi("x", F, [4, 4])],
                         [vi("y", F, [4, 4])], [t]), "shorter")
    t = rawt("w", F, [4])
    t.raw_data = np.ones(3, np.float32).tobytes()
    add("short_raw", mk([helper.make_node("Add", ["x", "w"], ["y"])], [vi("x", F, [4])],
                        [vi("y", F, [4])], [t]), "raw_data")
    t = rawt("s", TensorProto.STRING, [1])
    t.string_data.append(b"abc")
    add("string_tensor", mk([helper.make_node("Identity", ["s"], ["y"])], [vi("x", F, [4])],
                            [vi("y", F, [4])], [t]), "STRING")
    add("wrong_types", mk([helper.make_node("Add", ["x", "i"], ["y"], name="mixed")],
                          [vi("x", F, [2]), vi("i", I64, [2])], [vi("y", F, [2])]), "mixed")
    add("bad_shape_math", mk([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")],
                             [vi("x", F, [2, 3])], [vi("y", F, None)],
                             [init("w", np.ones((4, 2), np.float32))]), "mm")
    m = mk([helper.make_node("Relu", ["x"], ["y"])], [vi("x", F, [2])], [vi("y", F, [2])])
    m.opset_import[0].version = 0
    add("old_opset", m, "opset")
    m = mk([helper.make_node("Relu", ["x"], ["y"])], [vi("x", F, [2])], [vi("y", F, [2])])
    m.opset_import[0].version = 99
    add("future_opset", m, "opset")
    add("undefined_output", mk([helper.make_node("Relu", ["x"], ["y"])], [vi("x", F, [2])],
                               [vi("zz", F, [2])]), "zz")
    for nm, loc, kw in (("ext_escape", "../secret.bin", "leaves"), ("ext_absolute", "/etc/passwd", "relative"),
                        ("ext_missing", "nope.bin", "nope.bin")):
        t = rawt("w", F, [2])
        t.ClearField("float_data")
        t.data_location = TensorProto.EXTERNAL
        e = t.external_data.add()
        e.key, e.value = "location", loc
        add(nm, mk([helper.make_node("Add", ["x", "w"], ["y"])], [vi("x", F, [2])], [vi("y", F, [2])], [t]), kw)
    with open(os.path.join(d, "small.bin"), "wb") as f:
        f.write(b"\0" * 4)
    t = rawt("w", F, [2])
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", "small.bin"), ("offset", "0"), ("length", "8")):
        e = t.external_data.add()
        e.key, e.value = k, v
    add("ext_beyond_end", mk([helper.make_node("Add", ["x", "w"], ["y"])], [vi("x", F, [2])],
                             [vi("y", F, [2])], [t]), "beyond")
    os.makedirs(os.path.join(d, "sub"), exist_ok=True)
    link = os.path.join(d, "sub", "link.bin")
    if not os.path.lexists(link):
        os.symlink("/etc/hostname", link)
    t = rawt("w", F, [1])
    t.data_location = TensorProto.EXTERNAL
    e = t.external_data.add()
    e.key, e.value = "location", "sub/link.bin"
    add("ext_symlink", mk([helper.make_node("Add", ["x", "w"], ["y"])], [vi("x", F, [1])],
                          [vi("y", F, [1])], [t]), "outside")
    add("reshape_dynamic", mk([helper.make_node("Reshape", ["x", "s"], ["y"], name="rs")],
                              [vi("x", F, [4]), vi("s", I64, [2])], [vi("y", F, None)]), "compile-time")
    with open(os.path.join(d, "manifest.txt"), "w") as f:
        f.write("\n".join(man) + "\n")


if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    hand_made()
    bad_models()
    fusion_cases()
    torch_models()
    if STAMP:
        with open(STAMP, "w") as f:
            f.write("ok\n")
