#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# The op x precision matrix of docs/quantisation.md: one small ONNX model per
# op class, compiled with every node the NPU supports on the NPU (fp16, and
# quantised w8a8 by npuc --quantize from 4 random calibration samples) and
# run on the simulator against the CPU executor's fp32 result on a held-out
# input. Prints a markdown table: per cell the cosine and the max abs error
# relative to max |reference|, and where the op did not run on the NPU in
# that precision, why (from npuc --explain); w16a16i likewise (npuc --quantize
# w16a16i). With --check it exits 1 when a cell is neither within its cosine
# threshold (fp16 0.999, w8a8 0.99, w16a16i 0.999) nor explained (test
# quant-op-matrix, suite 'slow').
#   op-matrix.py BUILD_DIR WORKDIR [--check]   (Debian's /usr/bin/python3: numpy, onnx)
import os
import re
import subprocess
import sys

try:
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
except ImportError as e:  # the test skips without them
    print(f"SKIP: {e} (use Debian's /usr/bin/python3)")
    sys.exit(77)

B, W = sys.argv[1], sys.argv[2]
CHECK = "--check" in sys.argv[3:]
MIN_COS = {"fp16": 0.999, "w8a8": 0.99, "w16a16i": 0.999}
bad = []
NPUC, RUN = f"{B}/tools/npuc/npuc", f"{B}/tools/npu-run/npu-run"
rng = np.random.default_rng(5)
X = [1, 32, 8, 8]


def w(*shape, s=0.2):
    return (rng.normal(0, s, shape)).astype(np.float32)


def c(name, a):
    return numpy_helper.from_array(np.asarray(a), name)


# name: (nodes, initializers, input shapes, output shape or None)
def ops():
    e = lambda op, **k: ([helper.make_node(op, ["x"], ["y"], **k)], [], [X])
    b2 = lambda op: ([helper.make_node(op, ["x", "k"], ["y"])], [c("k", w(1, 32, 8, 8) + (2.0 if op == "Div" else 0))], [X])
    return {
        "add": b2("Add"), "sub": b2("Sub"), "mul": b2("Mul"), "div": b2("Div"),
        "relu": e("Relu"), "sigmoid": e("Sigmoid"), "tanh": e("Tanh"),
        "gelu": ([helper.make_node("Mul", ["x", "h"], ["a"]), helper.make_node("Div", ["x", "r2"], ["b"]),
                  helper.make_node("Erf", ["b"], ["e"]), helper.make_node("Add", ["e", "one"], ["f"]),
                  helper.make_node("Mul", ["a", "f"], ["y"])],
                 [c("h", np.float32(0.5)), c("r2", np.float32(np.sqrt(2))), c("one", np.float32(1))], [X]),
        "silu": ([helper.make_node("Sigmoid", ["x"], ["s"]), helper.make_node("Mul", ["x", "s"], ["y"])], [], [X]),
        "exp": e("Exp"),
        "sqrt": ([helper.make_node("Abs", ["x"], ["a"]), helper.make_node("Sqrt", ["a"], ["y"])], [], [X]),
        "matmul/gemm": ([helper.make_node("Gemm", ["x2", "wm", "bm"], ["y"])],
                        [c("wm", w(256, 128, s=0.06)), c("bm", w(128))], [[16, 256]]),
        "batch matmul": ([helper.make_node("MatMul", ["x3", "x4"], ["y"])], [], [[1, 4, 16, 32], [1, 4, 32, 16]]),
        "conv": ([helper.make_node("Conv", ["x", "wc", "bc"], ["y"], pads=[1, 1, 1, 1])],
                 [c("wc", w(32, 32, 3, 3, s=0.06)), c("bc", w(32))], [X]),
        "depthwise": ([helper.make_node("Conv", ["x", "wd"], ["y"], pads=[1, 1, 1, 1], group=32)],
                      [c("wd", w(32, 1, 3, 3))], [X]),
        "deconv": ([helper.make_node("ConvTranspose", ["x", "wt"], ["y"], pads=[1, 1, 1, 1])],
                   [c("wt", w(32, 32, 3, 3, s=0.06))], [X]),
        "pooling": e("MaxPool", kernel_shape=[2, 2], strides=[2, 2]),
        "softmax": e("Softmax", axis=-1),
        "layernorm": ([helper.make_node("LayerNormalization", ["x", "g", "be"], ["y"], axis=-1)],
                      [c("g", w(8) + 1), c("be", w(8))], [X]),
        "concat": ([helper.make_node("Concat", ["x", "k"], ["y"], axis=1)], [c("k", w(1, 32, 8, 8))], [X]),
        "transpose": e("Transpose", perm=[0, 1, 3, 2]),
        "reshape": ([helper.make_node("Reshape", ["x", "sh"], ["y"])], [c("sh", np.array([1, 32, 64], np.int64))], [X]),
        "slice": ([helper.make_node("Slice", ["x", "st", "en", "ax"], ["y"])],
                  [c("st", np.array([2], np.int64)), c("en", np.array([6], np.int64)), c("ax", np.array([2], np.int64))], [X]),
        "pad": ([helper.make_node("Pad", ["x", "pd"], ["y"])], [c("pd", np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64))], [X]),
        "reduce": ([helper.make_node("ReduceMean", ["x"], ["y"], axes=[1], keepdims=1)], [], [X]),
    }


def build(name, spec, d):
    nodes, inits, shapes = spec
    names = [n for n in ("x", "x2", "x3", "x4") if any(n in nd.input for nd in nodes)]
    ins = [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in zip(names, shapes)]
    out = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    g = helper.make_graph(nodes, name, ins, [out], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    m = onnx.shape_inference.infer_shapes(m)
    os.makedirs(d, exist_ok=True)
    onnx.save(m, f"{d}/model.onnx")
    with open(f"{d}/calib.txt", "w") as f:
        for i in range(5):
            fs = []
            for n, s in zip(names, shapes):
                np.save(f"{d}/{n}_{i}.npy", rng.normal(0, 1, s).astype(np.float32))
                fs.append(f"{n}_{i}.npy")
            if i < 4:
                f.write(" ".join(fs) + "\n")
    return names


def run(model, backend, d, names):
    od = f"{d}/out-{os.path.basename(model)}-{backend}"
    args = [RUN, model, "--backend", backend, "-o", od, "-q"]
    for n in names:
        args += ["-i", f"{n}={d}/{n}_4.npy"]
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode:
        return None, r.stderr.strip().splitlines()[-1] if r.stderr.strip() else "run failed"
    return np.load(f"{od}/y.npy"), None


def explain(model, extra):
    r = subprocess.run([NPUC, model, "-p", "supported", "--explain"] + extra, capture_output=True, text=True)
    return r.stdout + r.stderr


def cell(ref, got, prec="fp16", name=""):
    cos = float(np.dot(ref.ravel(), got.ravel()) / (np.linalg.norm(ref) * np.linalg.norm(got) + 1e-30))
    err = float(np.max(np.abs(ref - got)) / (np.max(np.abs(ref)) + 1e-30))
    if not cos >= MIN_COS[prec]:
        bad.append(f"{name} {prec}: cosine {cos:.5f} < {MIN_COS[prec]}")
    return f"cos {cos:.5f}, err {err:.1e}"


FLOAT_NOTE = "float ¹"


def quant_cell(m, d, names, ref, mode, name):
    """The op quantised by npuc --quantize MODE, run on the simulator."""
    q = subprocess.run([NPUC, m, "--quantize", mode, "--dataset", f"{d}/calib.txt", "-p", "supported",
                        "-o", f"{d}/q-{mode}.npub", "--accuracy", f"{d}/acc-{mode}.json", "--print-program"],
                       capture_output=True, text=True)
    if q.returncode:
        bad.append(f"{name} {mode}: quantiser failed")
        return "quantiser failed: " + (q.stderr.strip().splitlines() or ["?"])[-1]
    qg, e2 = run(f"{d}/q-{mode}.npub", "sim", d, names)
    acc = open(f"{d}/acc-{mode}.json").read()
    nq = int(re.search(r'"quantised": (\d+)', acc).group(1))
    why = re.findall(r'"why": "([^"]+)"', acc)
    bits = "int16" if mode == "w16a16i" else "int8"
    if qg is None:
        bad.append(f"{name} {mode}: {e2}")
        return f"fails: {e2}"
    # a quantised product the lowering gave back to the CPU (the program's step list)
    on_cpu = re.findall(r"step \d+ cpu (QLinear\w+)", q.stdout)
    if nq and on_cpu:
        bad.append(f"{name} {mode}: {on_cpu[0]} runs on the CPU")
        return cell(ref, qg, mode, name) + f" ({bits}, but {on_cpu[0]} on the CPU)"
    if nq:
        return cell(ref, qg, mode, name) + f" ({bits})"
    if why:
        return f"float, as in the fp16 column: the {bits} node is refused ({why[0]})"
    return FLOAT_NOTE


def main():
    os.environ["NPU_PARTITION"] = "supported"
    print("| op | fp16 | w8a8 | w16a16i |\n|---|---|---|---|")
    for name, spec in ops().items():
        d = f"{W}/{name.replace('/', '_').replace(' ', '_')}"
        names = build(name, spec, d)
        m = f"{d}/model.onnx"
        ref, _ = run(m, "cpu", d, names)
        fp16, e1 = run(m, "sim", d, names)
        ex = explain(m, [])
        # rows: "#  node  op  place  npu_us cpu_mod_us conv_us submit reason"
        rows = [r.split(None, 8) for r in ex.splitlines() if re.match(r"\s+\d+\s", r)]
        cpu_rows = [r for r in rows if len(r) > 3 and r[3] == "cpu"]
        c16 = cell(ref, fp16, "fp16", name) if fp16 is not None else f"fails: {e1}"
        if fp16 is None:
            bad.append(f"{name} fp16: {e1}")
        if cpu_rows:
            why = "; ".join(sorted({f"{r[2]} {r[8].strip()}" if len(r) > 8 else r[2] for r in cpu_rows}))
            c16 = ("CPU (fp32): " if len(cpu_rows) == len(rows) else c16 + "; on the CPU: ") + why
        c8 = quant_cell(m, d, names, ref, "w8a8", name)
        c16i = quant_cell(m, d, names, ref, "w16a16i", name)
        print(f"| {name} | {c16} | {c8} | {c16i} |")
        sys.stdout.flush()
    print()
    print("¹ the quantiser quantises Conv and MatMul / Gemm with constant weights only; the op "
          "stays float and runs as in the fp16 column (fp16 on the NPU, or on the CPU for the "
          "reason given there), between the quantised layers' Quantize / DequantizeLinear.")
    if bad:
        print("\ncells outside their threshold or failing:\n" + "\n".join(bad), file=sys.stderr)
    if CHECK and bad:
        sys.exit(1)


main()
