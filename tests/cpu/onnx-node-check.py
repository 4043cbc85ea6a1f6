#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""onnx-node-check.py: runs the ONNX backend node tests (model.onnx +
test_data_set_*/*.pb) through the CPU kernels alone, via ctypes, and reports
which pass. It is a check of the kernels' ONNX semantics, not the conformance
runner (that one goes through the importer and graph executor).

The harness does the small jobs the importer would do: it upgrades the
attribute forms of old opsets that the kernels take as inputs (Slice, Pad,
Resize-10, Softmax < 13), allocates every output with the expected shape
(intermediates from ONNX shape inference) and compares with the ONNX test
tolerances (rtol 1e-3, atol 1e-7; exact for integers and bools).

usage: onnx-node-check.py LIB.so NODE_DIR [--filter SUBSTR] [--ops-h OPS_H]
       [--verbose] [--min-pass N] [--strict]
Exit status 0 unless fewer than --min-pass tests pass or (--strict) any test fails;
77 (skip) without numpy/onnx or without the test data.
"""
import ctypes as C
import glob
import os
import re
import sys

try:
    import numpy as np
    import onnx
    from onnx import numpy_helper, shape_inference
    from onnx import TensorProto as TP
except ImportError as e:  # not an error: the check needs python3-numpy and python3-onnx
    print("skipped: %s" % e)
    sys.exit(77)

MAX_DIMS = 8

class Tensor(C.Structure):
    _fields_ = [("dtype", C.c_int), ("ndim", C.c_int), ("dims", C.c_int64 * MAX_DIMS),
                ("data", C.c_void_p), ("qscale", C.c_float), ("qzero", C.c_int32)]

class Attr(C.Structure):
    pass

Attr._fields_ = [("name", C.c_char_p), ("type", C.c_int), ("i", C.c_int64), ("f", C.c_float),
                 ("s", C.c_char_p), ("ints", C.POINTER(C.c_int64)),
                 ("floats", C.POINTER(C.c_float)), ("strs", C.POINTER(C.c_char_p)),
                 ("n", C.c_size_t), ("t", C.POINTER(Tensor))]

class Attrs(C.Structure):
    _fields_ = [("v", C.POINTER(Attr)), ("n", C.c_size_t)]

# enum npu_dtype order (npu-tensor.h)
NPU_DT = {np.dtype("float32"): 1, np.dtype("float16"): 2, np.dtype("int8"): 3,
          np.dtype("uint8"): 4, np.dtype("int16"): 5, np.dtype("int32"): 6,
          np.dtype("int64"): 7, np.dtype("bool"): 8, np.dtype("float64"): 9,
          np.dtype("uint16"): 10, np.dtype("uint32"): 11, np.dtype("uint64"): 12}
ONNX_NP = {TP.FLOAT: "float32", TP.FLOAT16: "float16", TP.INT8: "int8", TP.UINT8: "uint8",
           TP.INT16: "int16", TP.INT32: "int32", TP.INT64: "int64", TP.BOOL: "bool",
           TP.DOUBLE: "float64", TP.UINT16: "uint16", TP.UINT32: "uint32",
           TP.UINT64: "uint64"}
ATTR_INT, ATTR_FLOAT, ATTR_STRING, ATTR_INTS, ATTR_FLOATS, ATTR_STRINGS, ATTR_TENSOR = range(7)


class Unsupported(Exception):
    pass


def op_enum_table(ops_h):
    """enum npu_op values from the X-macro list in npu-ops.h."""
    text = open(ops_h).read()
    names = re.findall(r'X\(\s*\w+\s*,\s*"([^"]+)"\s*\)', text)
    return {n: i + 1 for i, n in enumerate(names)}


class Runner:
    def __init__(self, lib, ops):
        self.lib = C.CDLL(lib)
        self.lib.npu_cpu_ctx_create.restype = C.c_void_p
        self.lib.npu_cpu_ctx_create.argtypes = [C.c_int]
        self.lib.npu_cpu_run.argtypes = [C.c_void_p, C.c_int, C.POINTER(Attrs),
                                         C.POINTER(C.POINTER(Tensor)), C.c_int,
                                         C.POINTER(C.POINTER(Tensor)), C.c_int]
        self.lib.npu_cpu_supports.argtypes = [C.c_int]
        self.lib.npu_cpu_supports.restype = C.c_bool
        self.ctx = self.lib.npu_cpu_ctx_create(0)
        self.ops = ops
        self.keep = []

    def tensor(self, arr):
        if not arr.flags["C_CONTIGUOUS"]:
            arr = np.ascontiguousarray(arr)  # (would turn a 0-d array into 1-d)
        if arr.dtype not in NPU_DT:
            raise Unsupported("dtype %s" % arr.dtype)
        if arr.ndim > MAX_DIMS:
            raise Unsupported("rank")
        t = Tensor()
        t.dtype = NPU_DT[arr.dtype]
        t.ndim = arr.ndim
        for i, d in enumerate(arr.shape):
            t.dims[i] = d
        t.data = arr.ctypes.data if arr.size else None
        self.keep.append(arr)
        return t

    def attrs(self, node):
        vals = []
        for a in node.attribute:
            at = Attr()
            at.name = a.name.encode()
            self.keep.append(at.name)
            if a.type == onnx.AttributeProto.INT:
                at.type, at.i = ATTR_INT, a.i
            elif a.type == onnx.AttributeProto.FLOAT:
                at.type, at.f = ATTR_FLOAT, a.f
            elif a.type == onnx.AttributeProto.STRING:
                at.type, at.s = ATTR_STRING, a.s
                self.keep.append(a.s)
            elif a.type == onnx.AttributeProto.INTS:
                arr = (C.c_int64 * max(1, len(a.ints)))(*a.ints)
                self.keep.append(arr)
                at.type, at.ints, at.n = ATTR_INTS, arr, len(a.ints)
            elif a.type == onnx.AttributeProto.FLOATS:
                arr = (C.c_float * max(1, len(a.floats)))(*a.floats)
                self.keep.append(arr)
                at.type, at.floats, at.n = ATTR_FLOATS, arr, len(a.floats)
            elif a.type == onnx.AttributeProto.TENSOR:
                t = self.tensor(numpy_helper.to_array(a.t))
                self.keep.append(t)
                at.type, at.t = ATTR_TENSOR, C.pointer(t)
            else:
                continue
            vals.append(at)
        arr = (Attr * max(1, len(vals)))(*vals)
        self.keep.append(arr)
        return Attrs(arr, len(vals))

    def run_node(self, node, opset, inputs, out_specs):
        """inputs: list of arrays or None; out_specs: list of (shape, dtype) or None."""
        op = node.op_type
        inputs = list(inputs)
        node_attrs = node
        # --- upgrades the importer would do ---
        if op == "Slice" and opset < 10:
            a = {x.name: onnx.helper.get_attribute_value(x) for x in node.attribute}
            inputs = [inputs[0], np.array(a["starts"], np.int64), np.array(a["ends"], np.int64)]
            if "axes" in a:
                inputs.append(np.array(a["axes"], np.int64))
            node_attrs = onnx.helper.make_node("Slice", [], [])
        if op == "Pad" and opset < 11:
            a = {x.name: onnx.helper.get_attribute_value(x) for x in node.attribute}
            inputs = [inputs[0], np.array(a["pads"], np.int64),
                      np.array(a.get("value", 0.0), inputs[0].dtype)]
            node_attrs = onnx.helper.make_node("Pad", [], [], mode=a.get("mode", b"constant"))
        if op == "Resize" and opset < 11:
            inputs = [inputs[0], None, inputs[1]]
        if op in ("Softmax", "LogSoftmax", "Hardmax") and opset < 13:
            x = inputs[0]
            a = {x.name: onnx.helper.get_attribute_value(x) for x in node.attribute}
            axis = a.get("axis", 1)
            axis = axis + x.ndim if axis < 0 else axis
            shp = x.shape
            inputs[0] = x.reshape(int(np.prod(shp[:axis])), int(np.prod(shp[axis:])))
            node_attrs = onnx.helper.make_node(op, [], [], axis=-1)
            res = self.run_node(node_attrs, 13, inputs,
                                [(inputs[0].shape, out_specs[0][1])])
            return [res[0].reshape(shp)]
        if op not in self.ops or not self.lib.npu_cpu_supports(self.ops[op]):
            raise Unsupported("op " + op)
        tin = [self.tensor(a) if a is not None else None for a in inputs]
        outs = []
        tout = []
        for spec in out_specs:
            if spec is None:
                outs.append(None)
                tout.append(None)
                continue
            shape, dt = spec
            arr = np.zeros(shape, dtype=dt)
            outs.append(arr)
            tout.append(self.tensor(arr))
        pin = (C.POINTER(Tensor) * max(1, len(tin)))(
            *[C.pointer(t) if t is not None else None for t in tin])
        pout = (C.POINTER(Tensor) * max(1, len(tout)))(
            *[C.pointer(t) if t is not None else None for t in tout])
        at = self.attrs(node_attrs)
        st = self.lib.npu_cpu_run(self.ctx, self.ops[op], C.byref(at), pin, len(tin), pout,
                                  len(tout))
        if st == -4:
            raise Unsupported("kernel says unsupported")
        if st != 0:
            raise RuntimeError("npu_cpu_run(%s) returned %d" % (op, st))
        return outs


def load_pb(path):
    t = TP()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


def elem_np(vi):
    tt = vi.type.tensor_type
    if tt.elem_type not in ONNX_NP:
        raise Unsupported("elem type %d" % tt.elem_type)
    return ONNX_NP[tt.elem_type]


def static_shape(vi):
    dims = []
    for d in vi.type.tensor_type.shape.dim:
        if not d.HasField("dim_value"):
            return None
        dims.append(d.dim_value)
    return tuple(dims)


def run_test(runner, tdir):
    model = onnx.load(os.path.join(tdir, "model.onnx"))
    opset = max([o.version for o in model.opset_import if o.domain in ("", "ai.onnx")] or [1])
    g = model.graph
    for vi in list(g.input) + list(g.output):
        if not vi.type.HasField("tensor_type") or vi.type.tensor_type.elem_type not in ONNX_NP:
            raise Unsupported("non-tensor or unsupported element type")
    for node in g.node:
        if node.op_type not in runner.ops or not runner.lib.npu_cpu_supports(runner.ops[node.op_type]):
            raise Unsupported("op " + node.op_type)
    if len(g.node) > 1:
        try:
            model = shape_inference.infer_shapes(model, data_prop=True)
            g = model.graph
        except Exception as e:
            raise Unsupported("shape inference: %s" % e)
    vinfo = {v.name: v for v in list(g.value_info) + list(g.output) + list(g.input)}
    inits = {i.name: numpy_helper.to_array(i) for i in g.initializer}
    sets = sorted(glob.glob(os.path.join(tdir, "test_data_set_*")))
    if not sets:
        raise Unsupported("no data")
    for ds in sets:
        ins = [load_pb(p) for p in sorted(glob.glob(os.path.join(ds, "input_*.pb")),
                                          key=lambda p: int(re.findall(r"\d+", os.path.basename(p))[0]))]
        outs = [load_pb(p) for p in sorted(glob.glob(os.path.join(ds, "output_*.pb")),
                                           key=lambda p: int(re.findall(r"\d+", os.path.basename(p))[0]))]
        env = dict(inits)
        real_inputs = [i for i in g.input if i.name not in inits]
        for vi, arr in zip(real_inputs, ins):
            env[vi.name] = arr
        expected = {o.name: arr for o, arr in zip(g.output, outs)}
        for node in g.node:
            nin = [env[n] if n else None for n in node.input]
            specs = []
            for n in node.output:
                if not n:
                    specs.append(None)
                elif n in expected:
                    specs.append((expected[n].shape, expected[n].dtype))
                else:
                    vi = vinfo.get(n)
                    if vi is None:
                        raise Unsupported("no shape for %s" % n)
                    shp = static_shape(vi)
                    if shp is None:
                        raise Unsupported("dynamic shape for %s" % n)
                    specs.append((shp, np.dtype(elem_np(vi))))
            # trailing absent outputs are dropped
            while specs and specs[-1] is None:
                specs.pop()
            res = runner.run_node(node, opset, nin, specs)
            for n, r in zip(node.output, res):
                if n:
                    env[n] = r
        for o, exp in zip(g.output, outs):
            got = env[o.name]
            if got.shape != exp.shape:
                return False, "shape %s vs %s" % (got.shape, exp.shape)
            if exp.dtype.kind in "fc":
                try:
                    np.testing.assert_allclose(got.astype(np.float64), exp.astype(np.float64),
                                               rtol=1e-3, atol=1e-7)
                except AssertionError as e:
                    return False, str(e).strip().split("\n")[-3:]
            else:
                if not np.array_equal(got, exp):
                    bad = np.argwhere(got != exp)[:3]
                    return False, "mismatch at %s: got %s want %s" % (
                        bad.tolist(), got[tuple(bad.T)].tolist(), exp[tuple(bad.T)].tolist())
    return True, ""


def main():
    args = sys.argv[1:]
    flt, verbose, min_pass, ops_h, strict = None, False, 0, None, False
    pos = []
    i = 0
    while i < len(args):
        if args[i] == "--filter":
            flt = args[i + 1]
            i += 2
        elif args[i] == "--verbose":
            verbose = True
            i += 1
        elif args[i] == "--min-pass":
            min_pass = int(args[i + 1])
            i += 2
        elif args[i] == "--strict":
            strict = True
            i += 1
        elif args[i] == "--ops-h":
            ops_h = args[i + 1]
            i += 2
        else:
            pos.append(args[i])
            i += 1
    lib, node_dir = pos
    if not os.path.isdir(node_dir):
        print("skipped: no ONNX node test data at %s" % node_dir)
        return 77
    if ops_h is None:
        ops_h = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "core",
                             "include", "npu", "npu-ops.h")
    runner = Runner(lib, op_enum_table(ops_h))
    passed, failed, skipped = [], [], []
    for tdir in sorted(glob.glob(os.path.join(node_dir, "test_*"))):
        name = os.path.basename(tdir)
        if flt and flt not in name:
            continue
        try:
            ok, why = run_test(runner, tdir)
        except Unsupported as e:
            skipped.append((name, str(e)))
            if verbose:
                print("SKIP", name, e)
            continue
        except Exception as e:
            ok, why = False, "error: %s" % e
        runner.keep = []
        (passed if ok else failed).append((name, why))
        if verbose or not ok:
            print("PASS" if ok else "FAIL", name, "" if ok else why)
    total = len(passed) + len(failed)
    print("onnx node tests through the CPU kernels: %d/%d passed (%.1f%%), %d skipped "
          "(op or dtype outside the kernel set)" % (len(passed), total,
                                                    100.0 * len(passed) / max(1, total),
                                                    len(skipped)))
    if strict and failed:
        return 1
    return 0 if len(passed) >= min_pass else 1


if __name__ == "__main__":
    sys.exit(main())
