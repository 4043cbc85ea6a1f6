# SPDX-License-Identifier: MIT
"""Writes a graph in the IR's text form with its binary sidecar (docs/ir.md), the
form opennpu.torch hands to the library: `input`/`const`/node/`output` lines,
every constant a blob in the sidecar (64-byte aligned, FNV-1a 64 checked).
Every value carries its dtype and shape; the library re-infers each node and
refuses a declared type that disagrees, so a converter bug shows up as an error
naming the line rather than as wrong numbers."""
import re

import numpy as np

from . import _lib

NP_TO_IR = {np.dtype(np.float32): "f32", np.dtype(np.float16): "f16", np.dtype(np.int8): "i8",
            np.dtype(np.uint8): "u8", np.dtype(np.int16): "i16", np.dtype(np.int32): "i32",
            np.dtype(np.int64): "i64", np.dtype(np.bool_): "bool",
            np.dtype(np.float64): "f64"}
IR_TO_NP = {v: k for k, v in NP_TO_IR.items()}
# TensorProto.DataType codes for Cast's `to`
ONNX_CODE = {"f32": 1, "u8": 2, "i8": 3, "i16": 5, "i32": 6, "i64": 7, "bool": 9, "f16": 10,
             "f64": 11}
_BARE = re.compile(r"^[A-Za-z0-9_./-]+$")


def _fnv_fast(data):
    """FNV-1a 64 of bytes, by the library's npu_fnv1a64 (npu-ir.h)."""
    return int(_lib.fnv1a64(data, len(data)))


def name_str(n):
    return "%" + n if _BARE.match(n) else '%"' + n.replace("\\", "\\\\").replace('"', '\\"') + '"'


class V:
    """An IR value: its name, IR dtype name ("f32", ...) and shape (tuple)."""
    __slots__ = ("name", "dtype", "shape", "const")

    def __init__(self, name, dtype, shape, const=None):
        self.name, self.dtype, self.shape, self.const = name, dtype, tuple(shape), const

    @property
    def rank(self):
        return len(self.shape)

    def __repr__(self):
        return "%s: %s%s" % (self.name, self.dtype, list(self.shape))


def _fmt_attr(v):
    if isinstance(v, bool):
        return str(int(v))
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        r = repr(float(v))
        return r if ("." in r or "e" in r or "n" in r) else r + ".0"
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, (list, tuple)):
        if not v:
            return "ints[]"
        if all(isinstance(x, (int, np.integer)) and not isinstance(x, bool) for x in v):
            return "[" + ",".join(str(int(x)) for x in v) + "]"
        if all(isinstance(x, str) for x in v):
            return "[" + ",".join(_fmt_attr(x) for x in v) + "]"
        return "[" + ",".join(_fmt_attr(float(x)) for x in v) + "]"
    raise TypeError("attribute value %r" % (v,))


class Graph:
    """Collects lines; to_text() gives (text, sidecar bytes)."""

    def __init__(self, name="torch_fx", opset=18):
        self.name, self.opset = name, opset
        self.inputs, self.consts, self.nodes, self.outputs = [], [], [], []
        self.side = bytearray()
        self._n = 0
        self._const_cache = {}
        self.names = set()

    def fresh(self, hint):
        hint = re.sub(r"[^A-Za-z0-9_./-]", "_", hint) or "v"
        while True:
            self._n += 1
            n = "%s_%d" % (hint, self._n)
            if n not in self.names:
                self.names.add(n)
                return n

    def input(self, name, dtype, shape):
        v = V(self.fresh(name), dtype, shape)
        self.inputs.append(v)
        return v

    def const(self, arr, hint="c", key=None):
        arr = np.ascontiguousarray(arr)
        if arr.dtype not in NP_TO_IR:
            raise TypeError("constant of dtype %s" % arr.dtype)
        if key is not None and key in self._const_cache:
            return self._const_cache[key]
        v = V(self.fresh(hint), NP_TO_IR[arr.dtype], arr.shape, const=arr)
        data = arr.tobytes()
        pad = (-len(self.side)) % 64
        self.side += b"\0" * pad
        off = len(self.side)
        self.side += data
        self.consts.append("  const %s: %s = blob(fnv1a64=0x%016x, bytes=%d, offset=%d)" % (
            name_str(v.name), _type(v), _fnv_fast(data), len(data), off))
        if key is not None:
            self._const_cache[key] = v
        return v

    def op(self, op, inputs, outs, attrs=None, hint=None, label=None):
        """outs: list of (dtype, shape); returns the list of output values."""
        vals = [V(self.fresh(hint or op.split(".")[-1].lower()), dt, sh) for dt, sh in outs]
        ins = ", ".join("_" if i is None else name_str(i.name) for i in inputs)
        line = "  " + ", ".join("%s: %s" % (name_str(v.name), _type(v)) for v in vals)
        line += " = %s(%s)" % (op, ins)
        if attrs:
            line += " {" + ", ".join("%s=%s" % (k, _fmt_attr(a)) for k, a in attrs.items()
                                     if a is not None) + "}"
        if label:
            line += ' <name="%s">' % label.replace("\\", "\\\\").replace('"', '\\"')
        self.nodes.append(line)
        return vals

    def output(self, v):
        self.outputs.append(v)

    def to_text(self):
        lines = ["# opennpu ir v1", 'graph "%s" opset=%d {' % (self.name, self.opset)]
        lines += ["  input %s: %s" % (name_str(v.name), _type(v)) for v in self.inputs]
        lines += self.consts + self.nodes
        lines += ["  output %s" % name_str(v.name) for v in self.outputs]
        lines.append("}")
        return "\n".join(lines) + "\n", bytes(self.side)


def _type(v):
    return "%s[%s]" % (v.dtype, ",".join(str(int(d)) for d in v.shape))
