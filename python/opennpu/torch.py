# SPDX-License-Identifier: MIT
"""opennpu.torch.compile: a torch.nn.Module -> the project's IR -> libopennpu.

The module is traced with torch.fx (symbolic_trace; when that fails - a module
that reads shapes in Python, `B, T, D = x.shape` - with make_fx, which traces
with the example tensors and gives an ATen-level graph). The graph is run once
on the example inputs (a ShapeProp-style interpreter) so that every node has
its concrete value: shapes, and the results of everything that does not depend
on the inputs' data (sizes, masks built with arange/ones, parameters), which
become constants. Each remaining node is converted to IR ops (opennpu._ir:
text form plus sidecar, no ONNX), the text is loaded through the library's
model API (the same pipeline as an .onnx: passes, partitioning, lowering) and
the result is wrapped in a torch.nn.Module.

Nodes with no conversion raise UnsupportedError naming the node and its
source line; with fallback="cpu" they run in torch instead and the graph is
split around them into several compiled parts.
"""
import operator
import os
import tempfile
import traceback
import warnings

import numpy as np

try:
    import torch
except ImportError as e:
    raise ImportError("opennpu.torch needs torch, which %s lacks (%s); Debian's "
                      "/usr/bin/python3 has torch 1.13 (python3-torch)" %
                      (__import__("sys").executable, e)) from e
import torch.fx
import torch.nn as nn
import torch.nn.functional as F

from . import _ir
from ._model import Error, Model

__all__ = ["compile", "CompiledModule", "UnsupportedError", "TraceError", "supported_ops"]


class UnsupportedError(RuntimeError):
    """A node of the traced graph has no conversion (the message names it and its
    source line)."""


class TraceError(RuntimeError):
    """torch.fx could not trace the module (data-dependent control flow, ...)."""


class _Unsup(Exception):
    pass


_TORCH_TO_IR = {torch.float32: "f32", torch.float16: "f16", torch.int64: "i64",
                torch.int32: "i32", torch.bool: "bool", torch.int8: "i8", torch.uint8: "u8",
                torch.int16: "i16", torch.float64: "f64"}
_IR_TO_TORCH = {v: k for k, v in _TORCH_TO_IR.items()}
_FLOAT = {"f32", "f16", "f64"}


# ---- tracing ------------------------------------------------------------------------

def _user_frame(tb_or_stack):
    """The innermost frame outside torch and this package: 'file:line: code'."""
    frames = traceback.extract_tb(tb_or_stack) if not isinstance(tb_or_stack, list) \
        else tb_or_stack
    tdir = os.path.dirname(torch.__file__)
    mine = os.path.dirname(__file__)
    for f in reversed(frames):
        if not f.filename.startswith(tdir) and not f.filename.startswith(mine) and \
                "<eval_with_key>" not in f.filename:
            return "%s:%d: %s" % (f.filename, f.lineno, (f.line or "").strip())
    return None


class _Proxy(torch.fx.Proxy):
    """torch 1.13's Proxy.__iter__ finds the unpacking instruction by f_lasti // 2,
    which Python 3.11's inline caches break (`a, b = proxy` fails with an
    IndexError); this one looks the instruction up by its offset."""

    def __iter__(self):
        import dis
        import inspect
        frame = inspect.currentframe().f_back
        for inst in dis.get_instructions(frame.f_code):
            if inst.offset == frame.f_lasti:
                if inst.opname == "UNPACK_SEQUENCE":
                    return (self[i] for i in range(inst.argval))
                break
        return self.tracer.iter(self)


class _Tracer(torch.fx.Tracer):
    """symbolic_trace, keeping as leaves only the torch.nn modules that have a
    conversion (others, e.g. TransformerEncoderLayer, are traced through)."""
    record_stack_traces = True

    def proxy(self, node):
        return _Proxy(node, self)

    def is_leaf_module(self, m, qualname):
        if type(m) in _MODULES:
            return True
        return super().is_leaf_module(m, qualname) and not m.__module__.startswith("torch.nn")


def _trace(module, example, how):
    errors = []
    if how in ("auto", "fx"):
        try:
            # every Proxy (x.shape is an Attribute proxy, made without tracer.proxy)
            saved_iter = torch.fx.proxy.Proxy.__iter__
            torch.fx.proxy.Proxy.__iter__ = _Proxy.__iter__
            try:
                graph = _Tracer().trace(module)
            finally:
                torch.fx.proxy.Proxy.__iter__ = saved_iter
            return torch.fx.GraphModule(module, graph), "fx"
        except Exception as e:  # noqa: BLE001 - torch raises many kinds
            where = _user_frame(e.__traceback__)
            errors.append("torch.fx.symbolic_trace: %s: %s%s" % (
                type(e).__name__, str(e).split("\n")[0], " (at %s)" % where if where else ""))
            if how == "fx":
                raise TraceError("cannot trace %s: %s" % (type(module).__name__, errors[-1]))
    try:
        from torch.fx.experimental.proxy_tensor import make_fx
        old = torch.fx.proxy.TracerBase.record_stack_traces
        torch.fx.proxy.TracerBase.record_stack_traces = True
        try:
            # with grad enabled: under no_grad, eval-mode attention layers take fused
            # fast paths (_native_multi_head_attention, _transformer_encoder_layer_fwd)
            gm = make_fx(module)(*example)
        finally:
            torch.fx.proxy.TracerBase.record_stack_traces = old
        return gm, "make_fx"
    except Exception as e:  # noqa: BLE001
        where = _user_frame(e.__traceback__)
        msg = str(e).split("\n")[0]
        if "value out of a tracing tensor" in msg or "_local_scalar_dense" in msg:
            msg = "data-dependent control flow or value (a Python branch or .item() on " \
                  "tensor data)"
        errors.append("make_fx: %s%s" % (msg, " (at %s)" % where if where else ""))
    raise TraceError("cannot trace %s:\n  %s" % (type(module).__name__, "\n  ".join(errors)))


def _mutates(gm, n):
    """Whether node n writes into its first argument: an in-place op (add_, relu_,
    aten.sigmoid_), inplace=True, out=, or a module with .inplace set."""
    if n.op == "call_module":
        return bool(getattr(gm.get_submodule(n.target), "inplace", False))
    if n.op not in ("call_function", "call_method"):
        return False
    if n.kwargs.get("inplace") or n.kwargs.get("out") is not None:
        return True
    t = n.target
    if isinstance(t, torch._ops.OpOverload):
        name = t.overloadpacket.__name__
    elif isinstance(t, str):
        name = t
    else:
        name = getattr(t, "__name__", "")
    return name.endswith("_") and not name.endswith("__")


def _rewire_inplace(gm):
    """symbolic_trace records `y.add_(1)` or `self.relu(y)` (inplace) as a node whose
    result may go unused, while later code reads `y`, which eager torch has
    overwritten: later readers of the written argument read the in-place node
    instead (else they saw the old value, and dead-code elimination dropped the
    write). make_fx's graph does this itself."""
    order = {n: i for i, n in enumerate(gm.graph.nodes)}
    for n in list(gm.graph.nodes):
        if not _mutates(gm, n) or not n.args or not isinstance(n.args[0], torch.fx.Node):
            continue
        a = n.args[0]
        for u in list(a.users):
            if u is not n and order[u] > order[n]:
                u.replace_input_with(a, n)


class _Concrete(torch.fx.Interpreter):
    """ShapeProp that keeps every node's concrete value (tensors, sizes, tuples).

    A value that a later in-place node overwrites (make_fx keeps LSTM's gate
    `add_`/`sigmoid_`, a module may run ReLU(inplace=True)) would be kept as its
    overwritten self, and a node whose value does not depend on the inputs becomes a
    constant with that value: before an in-place node runs, every kept tensor that
    shares storage with its tensor arguments is replaced by a copy."""

    def __init__(self, gm):
        super().__init__(gm)
        self._by_storage = {}  # storage address -> nodes whose kept tensor lives there

    @staticmethod
    def _storage(t):
        """The address of t's storage, shared by its views (torch 1.13 has only
        Tensor.storage(); later versions untyped_storage())."""
        try:
            if hasattr(t, "untyped_storage"):
                return t.untyped_storage().data_ptr()
            return t.storage().data_ptr()
        except (AttributeError, RuntimeError, NotImplementedError):
            return None  # every such tensor shares one key: copies more, never fewer

    def _mutates(self, n):
        return _mutates(self.module, n)

    def _keep(self, n, r):
        for t in (r if isinstance(r, (tuple, list)) else (r,)):
            if isinstance(t, torch.Tensor):
                self._by_storage.setdefault(self._storage(t), []).append(n)

    def run_node(self, n):
        # a reader of a tensor that was written after it was made reads it as it is now
        # (the kept value is the one from before the write)
        for a in _all_nodes(n):
            live = self.env.get(a)
            if isinstance(live, torch.Tensor) and a.meta.get("concrete") is not live:
                n.meta.setdefault("arg_snap", {})[a] = live.clone()
        if self._mutates(n):
            first = n.args[0] if n.args else None
            if isinstance(first, torch.fx.Node) and isinstance(first.meta.get("concrete"),
                                                               torch.Tensor):
                n.meta["inplace_on_view"] = first.meta["concrete"]._is_view()
            for a in _all_nodes(n):
                v = a.meta.get("concrete")
                if not isinstance(v, torch.Tensor):
                    continue
                for k in self._by_storage.pop(self._storage(v), []):
                    kv = k.meta.get("concrete")
                    if isinstance(kv, torch.Tensor):
                        k.meta["concrete"] = kv.clone()
                    elif isinstance(kv, (tuple, list)):
                        k.meta["concrete"] = type(kv)(
                            x.clone() if isinstance(x, torch.Tensor) else x for x in kv)
        r = super().run_node(n)
        n.meta["concrete"] = r
        self._keep(n, r)
        return r


# ---- helpers ------------------------------------------------------------------------

def _src(node):
    """The node's source line from its recorded stack (innermost frame first):
    'file:line: code' of the first frame outside torch and this package."""
    st = node.stack_trace or node.meta.get("stack_trace")
    if not st:
        return None
    lines = st.rstrip().split("\n")
    tdir = os.path.dirname(torch.__file__)
    mine = os.path.dirname(__file__)
    for i, ln in enumerate(lines):
        ln = ln.strip()
        if not ln.startswith("File "):
            continue
        try:
            fname = ln.split('"')[1]
            lineno = ln.split("line ")[1].split(",")[0]
        except IndexError:
            continue
        if fname.startswith(tdir) or fname.startswith(mine) or fname.startswith("<"):
            continue
        code = lines[i + 1].strip() if i + 1 < len(lines) else ""
        return "%s:%s: %s" % (fname, lineno, code)
    return None


def _describe(node, gm):
    if node.op == "call_module":
        return "%s (call_module %s)" % (node.name, type(gm.get_submodule(node.target)).__name__)
    if node.op == "call_method":
        return "%s (call_method .%s)" % (node.name, node.target)
    t = node.target
    tn = getattr(t, "__name__", None) or str(t)
    mod = getattr(t, "__module__", None)
    if isinstance(t, torch._ops.OpOverload):
        tn = str(t)
    elif mod:
        tn = "%s.%s" % (mod, tn)
    return "%s (call_function %s)" % (node.name, tn)


def _np_dtype(dt):
    return _ir.IR_TO_NP[dt]


def _bcast(*shapes):
    return tuple(np.broadcast_shapes(*shapes))


def _norm_axis(a, r):
    a = int(a)
    return a + r if a < 0 else a


def _target_name(node):
    """One name for a node's operation, shared by functions, methods and ATen ops:
    torch.add / operator.add / Tensor.add / aten.add.Tensor -> "add"."""
    t = node.target
    if node.op == "call_method":  # x.add_(y) is x.add(y) (its readers: _rewire_inplace)
        return t.rstrip("_") if not t.endswith("__") else t
    if node.op == "call_module":
        return "module:" + t
    if isinstance(t, torch._ops.OpOverload):
        return t.overloadpacket.__name__.rstrip("_")
    if isinstance(t, torch._ops.OpOverloadPacket):
        return t.__name__.rstrip("_")
    n = getattr(t, "__name__", str(t))
    if t is operator.truediv:
        return "div"
    if t is operator.floordiv:
        return "floor_divide"
    if t is operator.getitem:
        return "getitem"
    if t is getattr:
        return "getattr"
    if t is operator.invert:
        return "bitwise_not"
    return n.rstrip("_") if n not in ("__and__", "__or__") else n


# ---- the converter ------------------------------------------------------------------

class _Conv:
    """Converts FX nodes into ops of one opennpu._ir.Graph."""

    def __init__(self, gm, g, env_in):
        self.gm, self.g = gm, g
        self.env = env_in  # node -> V or constant python/tensor value
        self.node = None

    # values
    def val(self, a):
        """FX argument -> V or constant (nested lists/tuples converted)."""
        if isinstance(a, torch.fx.Node):
            return self.env[a]
        if isinstance(a, (list, tuple)):
            return type(a)(self.val(x) for x in a)
        if isinstance(a, dict):
            return {k: self.val(x) for k, x in a.items()}
        return a

    def T(self, x, like=None):
        """A V for x: an IR value as is, a tensor/number as a constant (numbers take the
        dtype of `like`)."""
        if isinstance(x, _ir.V):
            return x
        if isinstance(x, torch.Tensor):
            arr = x.detach().cpu().numpy()
            return self.g.const(arr, "w", key=("t", id(x), x.data_ptr(), tuple(x.shape),
                                               x.dtype))
        if isinstance(x, (bool, int, float, np.number)):
            dt = like if isinstance(like, str) else (like.dtype if like is not None else
                                                     ("f32" if isinstance(x, float) else "i64"))
            if dt == "bool" and not isinstance(x, bool):
                dt = "f32" if isinstance(x, float) else "i64"
            return self.g.const(np.array(x, dtype=_np_dtype(dt)), "s")
        if isinstance(x, np.ndarray):
            return self.g.const(x, "c")
        raise _Unsup("operand %r is not a tensor" % (type(x).__name__,))

    def ci64(self, vals):
        return self.g.const(np.array(vals, dtype=np.int64), "i")

    def op1(self, op, ins, dtype, shape, attrs=None):
        return self.g.op(op, ins, [(dtype, tuple(shape))], attrs, label=self.node.name)[0]

    def cast(self, v, dt):
        if v.dtype == dt:
            return v
        return self.op1("Cast", [v], dt, v.shape, {"to": _ir.ONNX_CODE[dt]})

    def reshape(self, v, shape):
        shape = tuple(int(s) for s in shape)
        if tuple(v.shape) == shape:
            return v
        return self.op1("Reshape", [v, self.ci64(shape)], v.dtype, shape)

    def transpose(self, v, perm):
        perm = [int(p) for p in perm]
        if perm == list(range(v.rank)):
            return v
        return self.op1("Transpose", [v], v.dtype, [v.shape[p] for p in perm], {"perm": perm})

    def unsqueeze(self, v, axes):
        shape = list(v.shape)
        r = v.rank + len(axes)
        for a in sorted(_norm_axis(a, r) for a in axes):
            shape.insert(a, 1)
        return self.op1("Unsqueeze", [v, self.ci64(axes)], v.dtype, shape)

    def ew(self, op, a, b, out_dt=None, cast_to=None):
        """Elementwise binary op with torch's promotion: both operands are cast to
        cast_to (the promoted type) first."""
        cdt = cast_to or (a.dtype if isinstance(a, _ir.V) else b.dtype)
        a = self.cast(self.T(a, cdt), cdt)
        b = self.cast(self.T(b, cdt), cdt)
        return self.op1(op, [a, b], out_dt or cdt, _bcast(a.shape, b.shape))

    def un(self, op, x, attrs=None):
        return self.op1(op, [x], x.dtype, x.shape, attrs)

    def matmul(self, a, b):
        if a.rank == 1 and b.rank == 1:
            r = self.matmul(self.reshape(a, (1, a.shape[0])), self.reshape(b, (b.shape[0], 1)))
            return self.reshape(r, ())
        if a.rank == 1:
            sh = b.shape[:-2] + (b.shape[-1],)
        elif b.rank == 1:
            sh = a.shape[:-1]
        else:
            sh = _bcast(a.shape[:-2], b.shape[:-2]) + (a.shape[-2], b.shape[-1])
        return self.op1("MatMul", [a, b], a.dtype, sh)

    def reduce(self, op, x, axes, keep):
        r = x.rank
        axes = sorted(set(_norm_axis(a, r) for a in axes)) if axes is not None else \
            list(range(r))
        shape = [1 if i in axes else d for i, d in enumerate(x.shape)]
        if not keep:
            shape = [d for i, d in enumerate(x.shape) if i not in axes]
        return self.op1(op, [x, self.ci64(axes)], x.dtype, shape, {"keepdims": int(bool(keep))})

    def out_meta(self, i=None):
        c = self.node.meta["concrete"]
        if i is not None:
            c = c[i]
        return _TORCH_TO_IR[c.dtype], tuple(c.shape)

    # the node
    def convert(self, node):
        self.node = node
        # tensors known at compile time (parameters, masks built from shapes) become
        # constants, so that every conversion sees IR values
        args = tuple(self.T(a) if isinstance(a, torch.Tensor) else a
                     for a in self.val(node.args))
        kwargs = {k: self.T(a) if isinstance(a, torch.Tensor) else a
                  for k, a in self.val(node.kwargs).items()}
        if node.op == "call_module":
            m = self.gm.get_submodule(node.target)
            h = _MODULES.get(type(m))
            if h is None:
                for cls, fn in _MODULES.items():
                    if isinstance(m, cls):
                        h = fn
                        break
            if h is None:
                raise _Unsup("no conversion for module %s" % type(m).__name__)
            return h(self, m, *args, **kwargs)
        name = _target_name(node)
        h = _FUNCS.get(name)
        if h is None:
            raise _Unsup("no conversion for %s" % name)
        return h(self, *args, **kwargs)


# ---- conversions: functions, methods and ATen ops (by _target_name) -------------------

_FUNCS = {}


def _f(*names):
    def deco(fn):
        for n in names:
            _FUNCS[n] = fn
        return fn
    return deco


def _promoted(c):
    dt, _ = c.out_meta()
    return dt


def _binary(op):
    def h(c, a, b, *rest, alpha=None, **kw):
        if rest:
            alpha = rest[0]
        dt = _promoted(c)
        if op == "RSub":  # rsub(x, other, alpha) = other - alpha * x
            if alpha is not None and alpha != 1:
                a = c.ew("Mul", a, alpha, cast_to=dt)
            return c.ew("Sub", b, a, cast_to=dt)
        if alpha is not None and alpha != 1:
            b = c.ew("Mul", b, alpha, cast_to=dt)
        if op == "Div" and dt not in _FLOAT:
            raise _Unsup("integer division")
        return c.ew(op, a, b, cast_to=dt)
    return h


_f("add", "__add__", "__radd__", "iadd")(_binary("Add"))
_f("sub", "__sub__", "subtract", "isub")(_binary("Sub"))
_f("rsub", "__rsub__")(_binary("RSub"))
_f("mul", "__mul__", "__rmul__", "multiply", "imul")(_binary("Mul"))
_f("div", "__truediv__", "true_divide", "divide", "itruediv")(_binary("Div"))
_f("maximum")(_binary("Max"))
_f("minimum")(_binary("Min"))


@_f("__rtruediv__")
def _rdiv(c, a, b):
    return c.ew("Div", b, a, cast_to=_promoted(c))


@_f("pow", "__pow__")
def _pow(c, a, b):
    dt = _promoted(c)
    if isinstance(b, (int, float)) and b == 2:
        x = c.cast(c.T(a), dt)
        return c.op1("Mul", [x, x], dt, x.shape)
    if isinstance(b, (int, float)) and b == 0.5:
        return c.un("Sqrt", c.cast(c.T(a), dt))
    return c.ew("Pow", a, b, cast_to=dt)


def _compare(op, negate=False):
    def h(c, a, b):
        ta = a.dtype if isinstance(a, _ir.V) else None
        tb = b.dtype if isinstance(b, _ir.V) else None
        dt = ta or tb
        if ta and tb and ta != tb:
            dt = "f32" if (ta in _FLOAT or tb in _FLOAT) else "i64"
        if dt not in _FLOAT and (isinstance(a, float) or isinstance(b, float)):
            dt = "f32"
        r = c.ew(op, a, b, out_dt="bool", cast_to=dt)
        return c.un("Not", r) if negate else r
    return h


_f("eq", "__eq__")(_compare("Equal"))
_f("ne", "__ne__")(_compare("Equal", True))
_f("lt", "__lt__", "less")(_compare("Less"))
_f("gt", "__gt__", "greater")(_compare("Greater"))
_f("le", "__le__", "less_equal")(_compare("LessOrEqual"))
_f("ge", "__ge__", "greater_equal")(_compare("GreaterOrEqual"))


def _logic(op):
    def h(c, a, b):
        return c.ew(op, a, b, cast_to="bool")
    return h


_f("logical_and", "__and__", "bitwise_and")(_logic("And"))
_f("logical_or", "__or__", "bitwise_or")(_logic("Or"))


@_f("logical_not", "bitwise_not")
def _not(c, x):
    if x.dtype != "bool":
        raise _Unsup("bitwise not of %s" % x.dtype)
    return c.un("Not", x)


def _unary(op, attrs=None):
    def h(c, x, *a, **kw):
        dt = _promoted(c)
        return c.un(op, c.cast(x, dt), attrs)
    return h


for _n, _op in [("relu", "Relu"), ("sigmoid", "Sigmoid"), ("tanh", "Tanh"), ("exp", "Exp"),
                ("log", "Log"), ("sqrt", "Sqrt"), ("abs", "Abs"), ("neg", "Neg"),
                ("__neg__", "Neg"), ("erf", "Erf"), ("sin", "Sin"), ("cos", "Cos"),
                ("reciprocal", "Reciprocal"), ("floor", "Floor"), ("ceil", "Ceil"),
                ("round", "Round"), ("sign", "Sign"), ("silu", "npu.SiLU"),
                ("hardswish", "HardSwish"), ("selu", "Selu")]:
    _f(_n)(_unary(_op))
_f("hardsigmoid")(_unary("HardSigmoid", {"alpha": 1.0 / 6, "beta": 0.5}))


@_f("rsqrt")
def _rsqrt(c, x):
    return c.un("Reciprocal", c.un("Sqrt", c.cast(x, _promoted(c))))


@_f("gelu")
def _gelu(c, x, approximate="none"):
    return c.un("npu.GeluTanh" if approximate == "tanh" else "Gelu", x)


@_f("leaky_relu")
def _leaky(c, x, negative_slope=0.01, inplace=False):
    return c.un("LeakyRelu", x, {"alpha": float(negative_slope)})


@_f("celu")
def _celu(c, x, alpha=1.0, inplace=False):
    return c.op1("Celu", [x], x.dtype, x.shape, {"alpha": float(alpha)})


@_f("elu")
def _elu(c, x, alpha=1.0, *a, **kw):
    return c.un("Elu", x, {"alpha": float(alpha)})


@_f("softplus")
def _softplus(c, x, beta=1, threshold=20):
    if beta != 1:
        raise _Unsup("softplus with beta != 1")
    return c.un("Softplus", x)


@_f("mish")
def _mish(c, x, inplace=False):
    return c.op1("Mul", [x, c.un("Tanh", c.un("Softplus", x))], x.dtype, x.shape)


@_f("clamp", "clip", "hardtanh", "clamp_min", "clamp_max", "relu6")
def _clamp(c, x, lo=None, hi=None, *a, min=None, max=None, min_val=None, max_val=None,
           inplace=False):
    name = _target_name(c.node)
    lo = lo if lo is not None else (min if min is not None else min_val)
    hi = hi if hi is not None else (max if max is not None else max_val)
    if name == "hardtanh":
        lo = -1.0 if lo is None else lo
        hi = 1.0 if hi is None else hi
    if name == "relu6":
        lo, hi = 0.0, 6.0
    if name == "clamp_max":
        lo, hi = None, lo
    if isinstance(lo, _ir.V) or isinstance(hi, _ir.V):
        raise _Unsup("clamp with tensor bounds")
    ins = [x, c.T(float(lo), x) if lo is not None else None,
           c.T(float(hi), x) if hi is not None else None]
    while ins[-1] is None:
        ins.pop()
    return c.op1("Clip", ins, x.dtype, x.shape)


@_f("softmax", "_softmax", "log_softmax", "_log_softmax")
def _softmax(c, x, dim=None, *a, dtype=None, _stacklevel=3, **kw):
    name = _target_name(c.node)
    op = "LogSoftmax" if "log" in name else "Softmax"
    dt = _promoted(c)
    return c.un(op, c.cast(x, dt), {"axis": _norm_axis(dim if dim is not None else -1, x.rank)})


@_f("matmul", "bmm", "mm", "__matmul__")
def _matmul(c, a, b):
    return c.matmul(c.T(a), c.T(b))


@_f("linear")
def _linear(c, x, weight, bias=None):
    w, b = c.T(weight), bias
    wt = c.transpose(w, [1, 0])
    y = c.matmul(x, wt)
    if b is not None:
        y = c.ew("Add", y, c.T(b))
    return y


@_f("addmm")
def _addmm(c, bias, a, b, beta=1, alpha=1):
    if beta != 1 or alpha != 1:
        raise _Unsup("addmm with alpha/beta")
    return c.ew("Add", c.matmul(c.T(a), c.T(b)), c.T(bias))


@_f("baddbmm")
def _baddbmm(c, bias, a, b, beta=1, alpha=1):
    y = c.matmul(c.T(a), c.T(b))
    if alpha != 1:
        y = c.ew("Mul", y, float(alpha))
    if beta == 0:
        return y
    bias = c.T(bias)
    if beta != 1:
        bias = c.ew("Mul", bias, float(beta))
    return c.ew("Add", y, bias)


@_f("einsum")
def _einsum(c, eq, *ops):
    if len(ops) == 1 and isinstance(ops[0], (list, tuple)):
        ops = ops[0]
    dt, shape = c.out_meta()
    return c.op1("Einsum", [c.T(o) for o in ops], dt, shape, {"equation": eq.replace(" ", "")})


@_f("t", "numpy_T")
def _t(c, x):
    return x if x.rank < 2 else c.transpose(x, [1, 0])


@_f("transpose", "swapaxes")
def _transpose(c, x, d0, d1):
    p = list(range(x.rank))
    d0, d1 = _norm_axis(d0, x.rank), _norm_axis(d1, x.rank)
    p[d0], p[d1] = p[d1], p[d0]
    return c.transpose(x, p)


@_f("permute")
def _permute(c, x, *dims):
    if len(dims) == 1 and isinstance(dims[0], (list, tuple)):
        dims = dims[0]
    return c.transpose(x, [_norm_axis(d, x.rank) for d in dims])


@_f("view", "reshape", "_unsafe_view", "flatten", "unflatten", "view_as", "reshape_as",
    "squeeze", "unsqueeze", "_reshape_alias", "expand_dims")
def _reshape(c, x, *a, **kw):
    _, shape = c.out_meta()
    return c.reshape(x, shape)


@_f("contiguous", "clone", "detach", "alias", "dropout", "feature_dropout", "alpha_dropout",
    "lift_fresh_copy", "lift_fresh", "cpu", "requires_grad_", "identity", "dropout2d",
    "dropout1d")
def _ident(c, x, *a, **kw):
    return x


@_f("to", "type", "float", "half", "double", "long", "int", "bool", "_to_copy", "type_as")
def _to(c, x, *a, **kw):
    dt, _ = c.out_meta()
    return c.cast(x, dt)


@_f("expand", "expand_as", "broadcast_to")
def _expand(c, x, *a, **kw):
    dt, shape = c.out_meta()
    if tuple(x.shape) == shape:
        return x
    return c.op1("Expand", [x, c.ci64(shape)], x.dtype, shape)


@_f("repeat")
def _repeat(c, x, *reps):
    if len(reps) == 1 and isinstance(reps[0], (list, tuple)):
        reps = reps[0]
    reps = [int(r) for r in reps]
    if len(reps) > x.rank:
        x = c.reshape(x, (1,) * (len(reps) - x.rank) + tuple(x.shape))
    dt, shape = c.out_meta()
    return c.op1("Tile", [x, c.ci64(reps)], x.dtype, shape)


@_f("cat", "concat", "concatenate")
def _cat(c, xs, dim=0, axis=None):
    if axis is not None:
        dim = axis
    dt, shape = c.out_meta()
    vs = [c.cast(c.T(x), dt) for x in xs if not (isinstance(x, torch.Tensor) and x.numel() == 0
                                                  and x.dim() == 1)]
    if len(vs) == 1:
        return vs[0]
    return c.op1("Concat", vs, dt, shape, {"axis": _norm_axis(dim, len(shape))})


@_f("stack")
def _stack(c, xs, dim=0):
    dt, shape = c.out_meta()
    d = _norm_axis(dim, len(shape))
    vs = [c.unsqueeze(c.cast(c.T(x), dt), [d]) for x in xs]
    return c.op1("Concat", vs, dt, shape, {"axis": d}) if len(vs) > 1 else vs[0]


def _split_by(c, x, dim, sizes):
    d = _norm_axis(dim, x.rank)
    outs = []
    for s in sizes:
        sh = list(x.shape)
        sh[d] = s
        outs.append((x.dtype, tuple(sh)))
    if len(outs) == 1:
        return (x,)
    return tuple(c.g.op("Split", [x, c.ci64(sizes)], outs, {"axis": d}, label=c.node.name))


@_f("split", "split_with_sizes", "chunk", "unbind", "tensor_split", "unsafe_split")
def _split(c, x, *a, dim=0, **kw):
    name = _target_name(c.node)
    if a and name != "unbind" and len(a) > 1:
        dim = a[1]
    if name == "unbind":
        dim = a[0] if a else dim
    outs = c.node.meta["concrete"]
    d = _norm_axis(dim, x.rank)
    sizes = [int(o.shape[d]) if name != "unbind" else 1 for o in outs]
    parts = _split_by(c, x, d, sizes)
    if name == "unbind":
        parts = tuple(c.reshape(p, tuple(o.shape)) for p, o in zip(parts, outs))
    return parts


@_f("narrow")
def _narrow(c, x, dim, start, length):
    return _slice(c, x, dim, start, start + length, 1)


@_f("slice")
def _slice(c, x, dim=0, start=None, end=None, step=1):
    d = _norm_axis(dim, x.rank)
    n = x.shape[d]
    s, e, st = slice(start, end, step).indices(n)
    if s == 0 and e >= n and st == 1:
        return x
    sh = list(x.shape)
    sh[d] = len(range(s, e, st))
    return c.op1("Slice", [x, c.ci64([s]), c.ci64([e]), c.ci64([d]), c.ci64([st])], x.dtype,
                 sh)


@_f("select")
def _select(c, x, dim, index):
    d = _norm_axis(dim, x.rank)
    index = int(index) % x.shape[d]
    y = _slice(c, x, d, index, index + 1, 1)
    return c.reshape(y, x.shape[:d] + x.shape[d + 1:])


@_f("getitem")
def _getitem(c, x, idx):
    if isinstance(x, (tuple, list)):
        return x[idx]
    if not isinstance(x, _ir.V):
        raise _Unsup("indexing a %s" % type(x).__name__)
    if not isinstance(idx, tuple):
        idx = (idx,)
    # basic indexing: ints, slices, None, Ellipsis; one tensor index on one axis
    n_real = sum(1 for i in idx if i is not None and i is not Ellipsis)
    if any(i is Ellipsis for i in idx):
        k = idx.index(Ellipsis)
        idx = idx[:k] + (slice(None),) * (x.rank - n_real) + idx[k + 1:]
    d = 0
    y = x
    for i in idx:
        if i is None:
            continue
        if isinstance(i, slice):
            y = _slice(c, y, d, i.start, i.stop, i.step or 1)
            d += 1
        elif isinstance(i, int):
            y = _slice(c, y, d, i % y.shape[d], i % y.shape[d] + 1, 1)
            d += 1
        elif isinstance(i, (_ir.V, torch.Tensor)):
            iv = c.T(i)
            if iv.dtype == "bool":
                raise _Unsup("boolean mask indexing (data-dependent shape)")
            sh = y.shape[:d] + iv.shape + y.shape[d + 1:]
            y = c.op1("Gather", [y, iv], y.dtype, sh, {"axis": d})
            d += iv.rank
        else:
            raise _Unsup("index %r" % (i,))
    _, shape = c.out_meta()
    return c.reshape(y, shape)


@_f("index")
def _aten_index(c, x, indices):
    if sum(1 for i in indices if i is not None) != 1:
        raise _Unsup("advanced indexing with several index tensors")
    d = [k for k, i in enumerate(indices) if i is not None][0]
    iv = c.T(indices[d])
    if iv.dtype == "bool":
        raise _Unsup("boolean mask indexing (data-dependent shape)")
    dt, shape = c.out_meta()
    return c.op1("Gather", [x, iv], x.dtype, shape, {"axis": d})


@_f("masked_fill")
def _masked_fill(c, x, mask, value):
    mask = c.T(mask)
    if mask.dtype != "bool":
        mask = c.cast(mask, "bool")
    v = c.T(float(value) if x.dtype in _FLOAT else int(value), x) \
        if not isinstance(value, _ir.V) else c.cast(value, x.dtype)
    return c.op1("Where", [mask, v, x], x.dtype, _bcast(mask.shape, x.shape))


@_f("where")
def _where(c, cond, a=None, b=None):
    if a is None:
        raise _Unsup("where(cond) (data-dependent shape)")
    dt, shape = c.out_meta()
    cond = c.cast(c.T(cond), "bool")
    return c.op1("Where", [cond, c.cast(c.T(a, dt), dt), c.cast(c.T(b, dt), dt)], dt, shape)


def _reduce_fn(op):
    def h(c, x, dim=None, keepdim=False, *a, dtype=None, axis=None, **kw):
        if axis is not None:
            dim = axis
        if isinstance(dim, int):
            dim = [dim]
        if dim is not None and len(dim) == 0:
            dim = None
        dt, shape = c.out_meta()
        x = c.cast(x, dt) if op in ("ReduceMean", "ReduceSum") else x
        r = c.reduce(op, x, dim, keepdim)
        return r
    return h


_f("mean")(_reduce_fn("ReduceMean"))
_f("sum")(_reduce_fn("ReduceSum"))
_f("amax")(_reduce_fn("ReduceMax"))
_f("amin")(_reduce_fn("ReduceMin"))
_f("prod")(_reduce_fn("ReduceProd"))


def _max_min(op, argop, pairwise):
    def h(c, x, dim=None, keepdim=False):
        if isinstance(dim, _ir.V) or isinstance(dim, torch.Tensor):
            return c.ew(pairwise, x, dim, cast_to=_promoted(c))
        if dim is None:
            return c.reduce(op, x, None, False)
        vals = c.reduce(op, x, [dim], keepdim)
        _, ish = c.out_meta(1)
        idx = c.op1(argop, [x], "i64", ish, {"axis": _norm_axis(dim, x.rank),
                                             "keepdims": int(bool(keepdim))})
        return (vals, idx)
    return h


_f("max")(_max_min("ReduceMax", "ArgMax", "Max"))
_f("min")(_max_min("ReduceMin", "ArgMin", "Min"))


@_f("any", "all")
def _any_all(c, x, dim=None, keepdim=False):
    """any/all as ReduceMax/ReduceMin over 0/1 in int32 (the reductions take no bool);
    a non-bool input counts its nonzero entries as true."""
    if isinstance(dim, int):
        dim = [dim]
    if x.dtype != "bool":
        x = c.op1("Not", [c.op1("Equal", [x, c.T(0, x)], "bool", x.shape)], "bool", x.shape)
    r = c.reduce("ReduceMax" if _target_name(c.node) == "any" else "ReduceMin",
                 c.cast(x, "i32"), dim, keepdim)
    return c.cast(r, "bool")


@_f("argmax", "argmin")
def _argmax(c, x, dim=None, keepdim=False):
    if dim is None:
        raise _Unsup("argmax over all elements")
    dt, shape = c.out_meta()
    op = "ArgMax" if _target_name(c.node) == "argmax" else "ArgMin"
    return c.op1(op, [x], "i64", shape, {"axis": _norm_axis(dim, x.rank),
                                         "keepdims": int(bool(keepdim))})


@_f("var", "std")
def _var(c, x, dim=None, unbiased=True, keepdim=False, *, correction=None):
    if isinstance(dim, int):
        dim = [dim]
    r = x.rank
    axes = list(range(r)) if dim is None else [_norm_axis(d, r) for d in dim]
    n = int(np.prod([x.shape[a] for a in axes]))
    corr = correction if correction is not None else (1 if unbiased else 0)
    m = c.reduce("ReduceMean", x, axes, True)
    d = c.ew("Sub", x, m)
    s = c.reduce("ReduceSum", c.op1("Mul", [d, d], x.dtype, x.shape), axes, keepdim)
    v = c.ew("Div", s, float(max(n - corr, 1)))
    return c.un("Sqrt", v) if _target_name(c.node) == "std" else v


@_f("cumsum")
def _cumsum(c, x, dim, dtype=None):
    dt, shape = c.out_meta()
    return c.op1("CumSum", [c.cast(x, dt), c.ci64(_norm_axis(dim, x.rank))], dt, shape)


@_f("tril", "triu")
def _tril(c, x, diagonal=0):
    return c.op1("Trilu", [x, c.g.const(np.array(int(diagonal), np.int64), "k")], x.dtype,
                 x.shape, {"upper": int(_target_name(c.node) == "triu")})


@_f("layer_norm", "native_layer_norm")
def _layer_norm(c, x, normalized_shape, weight=None, bias=None, eps=1e-5, *a):
    k = len(normalized_shape)
    w, b = weight, bias
    nshape = tuple(x.shape[-k:])
    w = c.T(w) if w is not None else c.g.const(np.ones(nshape, _np_dtype(x.dtype)), "ones")
    b = c.T(b) if b is not None else c.g.const(np.zeros(nshape, _np_dtype(x.dtype)), "zeros")
    y = c.op1("LayerNormalization", [x, w, b], x.dtype, x.shape,
              {"axis": x.rank - k, "epsilon": float(eps)})
    if _target_name(c.node) == "native_layer_norm":
        return (y, None, None)
    return y


@_f("group_norm", "native_group_norm")
def _group_norm(c, x, *a, **kw):
    if _target_name(c.node) == "native_group_norm":
        w, b, N, C, HW, G, eps = a
        return (_group_norm_impl(c, x, G, w, b, eps), None, None)
    G = a[0] if a else kw["num_groups"]
    w = a[1] if len(a) > 1 else kw.get("weight")
    b = a[2] if len(a) > 2 else kw.get("bias")
    eps = a[3] if len(a) > 3 else kw.get("eps", 1e-5)
    return _group_norm_impl(c, x, G, w, b, eps)


def _channel_affine(c, y, w, b, C, rank):
    """y * w + b with w, b of C channels along axis 1 (the norms' optional affine)."""
    cs = (C,) + (1,) * (rank - 2)
    if w is not None:
        y = c.ew("Mul", y, c.reshape(c.T(w), cs))
    if b is not None:
        y = c.ew("Add", y, c.reshape(c.T(b), cs))
    return y


def _group_norm_impl(c, x, G, w, b, eps):
    N, C = x.shape[0], x.shape[1]
    rest = int(np.prod(x.shape[2:])) if x.rank > 2 else 1
    y = c.reshape(x, (N, G, (C // G) * rest))
    ones = c.g.const(np.ones(G, _np_dtype(x.dtype)), "ones")
    zeros = c.g.const(np.zeros(G, _np_dtype(x.dtype)), "zeros")
    y = c.op1("InstanceNormalization", [y, ones, zeros], x.dtype, y.shape,
              {"epsilon": float(eps)})
    y = c.reshape(y, x.shape)
    return _channel_affine(c, y, w, b, C, x.rank)


@_f("batch_norm", "native_batch_norm", "_native_batch_norm_legit_no_training")
def _batch_norm(c, x, w=None, b=None, mean=None, var=None, *a, **kw):
    name = _target_name(c.node)
    if c.node.target is F.batch_norm:  # F.batch_norm(input, running_mean, running_var,
        # weight=None, bias=None, training=False, momentum=0.1, eps=1e-5)
        mean, var = w, b
        w = a[0] if a else kw.get("weight")
        b = a[1] if len(a) > 1 else kw.get("bias")
        training = a[2] if len(a) > 2 else kw.get("training", False)
        eps = a[4] if len(a) > 4 else kw.get("eps", 1e-5)
        if training:
            raise _Unsup("batch norm in training mode (call module.eval() before compiling)")
        return _bn_impl(c, x, w, b, mean, var, eps)
    if name == "_native_batch_norm_legit_no_training":
        training, eps = False, a[1] if len(a) > 1 else kw.get("eps", 1e-5)
    else:
        training = a[0] if a else kw.get("training", False)
        eps = a[2] if len(a) > 2 else kw.get("eps", 1e-5)
    if training and mean is None and var is None:
        # statistics of the batch itself, no running ones to update: what
        # InstanceNorm (track_running_stats=False, the default) becomes in make_fx's
        # graph, a batch norm over (1, N*C, ...)
        y = _bn_batch_stats(c, x, w, b, eps)
    elif training:
        raise _Unsup("batch norm in training mode (call module.eval() before compiling)")
    else:
        y = _bn_impl(c, x, w, b, mean, var, eps)
    return (y, None, None) if name != "batch_norm" else y


def _bn_batch_stats(c, x, w, b, eps):
    """Normalises each channel over the batch and spatial dims (biased variance)."""
    N, C = x.shape[0], x.shape[1]
    rest = int(np.prod(x.shape[2:])) if x.rank > 2 else 1
    perm = [1, 0] + list(range(2, x.rank))
    y = x if N == 1 else c.transpose(x, perm)
    y = c.reshape(y, (1, C, N * rest))
    dt = _np_dtype(x.dtype)
    y = c.op1("InstanceNormalization", [y, c.g.const(np.ones(C, dt), "ones"),
                                        c.g.const(np.zeros(C, dt), "zeros")],
              x.dtype, y.shape, {"epsilon": float(eps)})
    if N == 1:
        y = c.reshape(y, x.shape)
    else:
        y = c.transpose(c.reshape(y, (C, N) + tuple(x.shape[2:])), perm)
    return _channel_affine(c, y, w, b, C, x.rank)


def _bn_impl(c, x, w, b, mean, var, eps):
    C = x.shape[1]
    dt = _np_dtype(x.dtype)
    w = c.T(w) if w is not None else c.g.const(np.ones(C, dt), "ones")
    b = c.T(b) if b is not None else c.g.const(np.zeros(C, dt), "zeros")
    if x.rank == 2:  # (N, C): BatchNormalization wants a spatial dim
        y = _bn_impl(c, c.reshape(x, x.shape + (1,)), w, b, mean, var, eps)
        return c.reshape(y, x.shape)
    return c.op1("BatchNormalization", [x, w, b, c.T(mean), c.T(var)], x.dtype, x.shape,
                 {"epsilon": float(eps)})


@_f("embedding")
def _embedding(c, *a, **kw):
    if isinstance(a[0], _ir.V) and a[0].dtype in ("i64", "i32"):
        idx, w = a[0], a[1]  # F.embedding(input, weight)
    else:
        w, idx = a[0], a[1]  # aten.embedding(weight, indices)
    w = c.T(w)
    idx = c.T(idx)
    return c.op1("Gather", [w, idx], w.dtype, idx.shape + w.shape[1:], {"axis": 0})


def _conv_attrs(x, w, stride, padding, dilation, groups, transposed=False, out_pad=None):
    k = w.rank - 2
    rep = lambda v: [int(v)] * k if isinstance(v, int) else [int(i) for i in v]  # noqa: E731
    if isinstance(padding, str):
        if padding == "valid":
            pads = [0] * (2 * k)
        else:  # "same" (stride 1)
            tot = [d * (kk - 1) for d, kk in zip(rep(dilation), w.shape[2:])]
            pads = [t // 2 for t in tot] + [t - t // 2 for t in tot]
    else:
        p = rep(padding)
        pads = p + p
    at = {"kernel_shape": [int(s) for s in w.shape[2:]], "strides": rep(stride), "pads": pads,
          "dilations": rep(dilation), "group": int(groups)}
    if transposed and out_pad is not None:
        at["output_padding"] = rep(out_pad)
    return at


def _conv(c, x, w, b, stride, padding, dilation, groups, transposed=False, out_pad=None):
    w = c.T(w)
    dt, shape = c.out_meta()
    squeeze = False
    if x.rank == w.rank - 1:  # unbatched
        x = c.reshape(x, (1,) + x.shape)
        shape = (1,) + shape
        squeeze = True
    ins = [x, w] + ([c.T(b)] if b is not None else [])
    y = c.op1("ConvTranspose" if transposed else "Conv", ins, dt, shape,
              _conv_attrs(x, w, stride, padding, dilation, groups, transposed, out_pad))
    return c.reshape(y, shape[1:]) if squeeze else y


@_f("conv1d", "conv2d", "conv3d")
def _conv_fn(c, x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _conv(c, x, weight, bias, stride, padding, dilation, groups)


@_f("conv_transpose1d", "conv_transpose2d")
def _convt_fn(c, x, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
              dilation=1):
    return _conv(c, x, weight, bias, stride, padding, dilation, groups, True, output_padding)


@_f("convolution")
def _aten_conv(c, x, w, b, stride, padding, dilation, transposed, out_pad, groups):
    return _conv(c, x, w, b, stride, padding, dilation, groups, transposed, out_pad)


def _pool_attrs(k, kernel, stride, padding, dilation=1, ceil_mode=False):
    rep = lambda v: [int(v)] * k if isinstance(v, int) else [int(i) for i in v]  # noqa: E731
    kernel = rep(kernel)
    stride = rep(stride) if stride not in (None, [], ()) else kernel
    p = rep(padding)
    at = {"kernel_shape": kernel, "strides": stride, "pads": p + p,
          "ceil_mode": int(bool(ceil_mode))}
    if dilation not in (1, None) and rep(dilation) != [1] * k:
        at["dilations"] = rep(dilation)
    return at


@_f("max_pool1d", "max_pool2d", "max_pool2d_with_indices", "max_pool1d_with_indices")
def _maxpool(c, x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
             return_indices=False):
    kernel = kernel_size
    name = _target_name(c.node)
    if return_indices:
        raise _Unsup("max pooling with indices")
    k = len(kernel) if isinstance(kernel, (list, tuple)) else x.rank - 2
    dt, shape = c.out_meta(0 if name.endswith("indices") else None)
    y = c.op1("MaxPool", [x], x.dtype, shape,
              _pool_attrs(k, kernel, stride, padding, dilation, ceil_mode))
    return (y, None) if name.endswith("indices") else y


@_f("avg_pool1d", "avg_pool2d")
def _avgpool(c, x, kernel_size, stride=None, padding=0, ceil_mode=False,
             count_include_pad=True, divisor_override=None):
    kernel = kernel_size
    if divisor_override:
        raise _Unsup("avg_pool with divisor_override")
    k = len(kernel) if isinstance(kernel, (list, tuple)) else x.rank - 2
    at = _pool_attrs(k, kernel, stride, padding, 1, ceil_mode)
    at["count_include_pad"] = int(bool(count_include_pad))
    dt, shape = c.out_meta()
    return c.op1("AveragePool", [x], x.dtype, shape, at)


@_f("adaptive_avg_pool1d", "adaptive_avg_pool2d", "_adaptive_avg_pool2d",
    "adaptive_max_pool1d", "adaptive_max_pool2d")
def _adaptive(c, x, output_size, *a, **kw):
    name = _target_name(c.node)
    pair = isinstance(c.node.meta["concrete"], (tuple, list))  # aten's (values, indices)
    dt, shape = c.out_meta(0 if pair else None)
    k = x.rank - 2
    ins = tuple(x.shape[2:])
    outs = tuple(shape[2:])
    mx = "max" in name
    if all(o == 1 for o in outs):
        y = c.op1("GlobalMaxPool" if mx else "GlobalAveragePool", [x], x.dtype, shape)
    elif all(i % o == 0 for i, o in zip(ins, outs)):
        kern = [i // o for i, o in zip(ins, outs)]
        y = c.op1("MaxPool" if mx else "AveragePool", [x], x.dtype, shape,
                  {"kernel_shape": kern, "strides": kern, "pads": [0] * (2 * k)})
    else:
        raise _Unsup("adaptive pooling from %s to %s (not a whole divisor)" % (ins, outs))
    return (y, None) if pair else y


@_f("interpolate", "upsample", "upsample_nearest2d", "upsample_bilinear2d",
    "upsample_nearest1d", "upsample_linear1d")
def _interp(c, x, *a, mode=None, align_corners=None, **kw):
    name = _target_name(c.node)
    if name.startswith("upsample_"):
        mode = "nearest" if "nearest" in name else "linear"
        if mode == "linear" and len(a) > 1 and isinstance(a[1], bool):
            align_corners = a[1]
    else:
        mode = mode or (a[2] if len(a) > 2 else "nearest")
        align_corners = align_corners if align_corners is not None else \
            (a[3] if len(a) > 3 else None)
    dt, shape = c.out_meta()
    if mode in ("nearest",):
        at = {"mode": "nearest", "coordinate_transformation_mode": "asymmetric",
              "nearest_mode": "floor"}
    elif mode in ("linear", "bilinear"):
        at = {"mode": "linear", "coordinate_transformation_mode":
              "align_corners" if align_corners else "pytorch_half_pixel"}
    else:
        raise _Unsup("interpolate mode '%s'" % mode)
    return c.op1("Resize", [x, None, None, c.ci64(shape)], x.dtype, shape, at)


@_f("pad", "constant_pad_nd")
def _pad(c, x, pad, mode="constant", value=None):
    if _target_name(c.node) == "constant_pad_nd":
        value, mode = mode if not isinstance(mode, str) else 0.0, "constant"
    if mode not in ("constant", "reflect", "replicate"):
        raise _Unsup("pad mode '%s'" % mode)
    n = len(pad) // 2
    begins = [0] * x.rank
    ends = [0] * x.rank
    for i in range(n):
        begins[x.rank - 1 - i] = int(pad[2 * i])
        ends[x.rank - 1 - i] = int(pad[2 * i + 1])
    dt, shape = c.out_meta()
    ins = [x, c.ci64(begins + ends)]
    if mode == "constant":
        ins.append(c.T(float(value or 0.0) if x.dtype in _FLOAT else int(value or 0), x))
    return c.op1("Pad", ins, x.dtype, shape,
                 {"mode": {"replicate": "edge"}.get(mode, mode)})


@_f("prelu")
def _prelu(c, x, w):
    w = c.T(w)
    if w.shape != (1,) and x.rank > 2:
        w = c.reshape(w, (-1 if False else w.shape[0],) + (1,) * (x.rank - 2))
    return c.op1("PRelu", [x, w], x.dtype, x.shape)


@_f("reflection_pad1d", "reflection_pad2d", "replication_pad1d", "replication_pad2d")
def _pad_aten(c, x, pad):
    return _pad(c, x, pad, "reflect" if "reflection" in _target_name(c.node) else "replicate")


@_f("normalize")
def _normalize(c, x, p=2.0, dim=1, eps=1e-12, out=None):
    if p != 2:
        raise _Unsup("normalize with p != 2")
    n = c.reduce("ReduceL2", x, [dim], True)
    n = c.ew("Max", n, float(eps))
    return c.ew("Div", x, n)


@_f("norm", "linalg_vector_norm", "linalg_norm")
def _norm(c, x, p=2, dim=None, keepdim=False, *a, **kw):
    if p is None:
        p = 2
    if isinstance(p, str) or float(p) not in (1.0, 2.0):
        raise _Unsup("norm with p=%s" % (p,))
    if isinstance(dim, int):
        dim = [dim]
    return c.reduce("ReduceL2" if float(p) == 2.0 else "ReduceL1", x, dim or None, keepdim)


@_f("scaled_dot_product_attention")
def _sdpa(c, q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False):
    return _attention(c, q, k, v, attn_mask, is_causal)


def _attention(c, q, k, v, mask=None, causal=False, scale=None):
    D = q.shape[-1]
    kt = c.transpose(k, list(range(k.rank - 2)) + [k.rank - 1, k.rank - 2])
    s = c.matmul(q, kt)
    s = c.ew("Mul", s, float(scale if scale is not None else 1.0 / np.sqrt(D)))
    if causal:
        L, S = q.shape[-2], k.shape[-2]
        m = np.triu(np.full((L, S), -np.inf, np.float32), 1)
        s = c.ew("Add", s, m.astype(_np_dtype(s.dtype)))
    if mask is not None:
        mask = c.T(mask)
        if mask.dtype == "bool":
            s = c.op1("Where", [mask, s, c.T(float("-inf"), s)], s.dtype,
                      _bcast(mask.shape, s.shape))
        else:
            s = c.ew("Add", s, mask)
    p = c.un("Softmax", s, {"axis": s.rank - 1})
    return c.matmul(p, v), p


@_f("size", "dim", "numel")
def _shape_query(c, *a, **kw):
    return c.node.meta["concrete"]


@_f("getattr")
def _getattr(c, x, attr):
    if isinstance(x, (tuple, list)) and attr in ("values", "indices"):
        return x[0 if attr == "values" else 1]  # max/min(dim=...) results
    if not isinstance(c.node.meta["concrete"], torch.Tensor):
        return c.node.meta["concrete"]  # .shape, .dtype, ...
    if attr == "T":
        return c.transpose(x, list(range(x.rank))[::-1])
    if attr == "mT":
        return c.transpose(x, list(range(x.rank - 2)) + [x.rank - 1, x.rank - 2])
    if attr == "data":
        return x
    raise _Unsup("tensor attribute .%s" % attr)


@_f("item", "tolist", "__bool__", "nonzero", "unique", "masked_select")
def _data_dependent(c, *a, **kw):
    raise _Unsup("data-dependent result (%s)" % _target_name(c.node))


# ---- conversions: modules -----------------------------------------------------------

_MODULES = {}


def _m(*classes):
    def deco(fn):
        for cl in classes:
            _MODULES[cl] = fn
        return fn
    return deco


@_m(nn.Linear)
def _m_linear(c, m, x):
    return _linear(c, x, m.weight, m.bias)


@_m(nn.Conv1d, nn.Conv2d, nn.Conv3d)
def _m_conv(c, m, x):
    if m.padding_mode == "zeros":
        return _conv(c, x, m.weight, m.bias, m.stride, m.padding, m.dilation, m.groups)
    # as torch: pad first (F.pad's order, last dim first), then a convolution without
    pad = [int(p) for p in m._reversed_padding_repeated_twice]
    if m.padding_mode == "circular":
        for i in range(len(pad) // 2):
            x = _wrap(c, x, x.rank - 1 - i, pad[2 * i], pad[2 * i + 1])
    else:
        x = _pad_to(c, x, pad, {"reflect": "reflect", "replicate": "edge"}[m.padding_mode])
    return _conv(c, x, m.weight, m.bias, m.stride, 0, m.dilation, m.groups)


def _pad_to(c, x, pad, mode):
    """Pad with F.pad's pad list (last dim first) and an ONNX mode."""
    begins, ends = [0] * x.rank, [0] * x.rank
    for i in range(len(pad) // 2):
        begins[x.rank - 1 - i] = pad[2 * i]
        ends[x.rank - 1 - i] = pad[2 * i + 1]
    shape = [n + b + e for n, b, e in zip(x.shape, begins, ends)]
    return c.op1("Pad", [x, c.ci64(begins + ends)], x.dtype, shape, {"mode": mode})


def _slice_to(c, x, d, s, e):
    sh = list(x.shape)
    sh[d] = e - s
    return c.op1("Slice", [x, c.ci64([s]), c.ci64([e]), c.ci64([d])], x.dtype, sh)


def _wrap(c, x, d, before, after):
    """Circular padding of dim d: the last `before` entries in front, the first
    `after` behind."""
    n = x.shape[d]
    parts = ([_slice_to(c, x, d, n - before, n)] if before else []) + [x] + \
        ([_slice_to(c, x, d, 0, after)] if after else [])
    if len(parts) == 1:
        return x
    sh = list(x.shape)
    sh[d] = n + before + after
    return c.op1("Concat", parts, x.dtype, sh, {"axis": d})


@_f("roll")
def _roll(c, x, shifts, dims=None):
    shifts = [shifts] if isinstance(shifts, int) else list(shifts)
    if dims is None or (isinstance(dims, (list, tuple)) and not dims):
        flat = c.reshape(x, (int(np.prod(x.shape)),))
        return c.reshape(_roll(c, flat, shifts, [0]), x.shape)
    dims = [dims] if isinstance(dims, int) else list(dims)
    y = x
    for s, d in zip(shifts, dims):
        d = _norm_axis(d, x.rank)
        n = x.shape[d]
        s = int(s) % n if n else 0
        if s:
            y = c.op1("Concat", [_slice_to(c, y, d, n - s, n), _slice_to(c, y, d, 0, n - s)],
                      y.dtype, y.shape, {"axis": d})
    return y


@_f("flip")
def _flip(c, x, *dims):
    if len(dims) == 1 and isinstance(dims[0], (list, tuple)):
        dims = dims[0]
    axes = [_norm_axis(d, x.rank) for d in dims]
    if not axes:
        return x
    # a negative step from the last entry; an end below -n is clamped to before the first
    return c.op1("Slice", [x, c.ci64([-1] * len(axes)), c.ci64([-x.shape[a] - 1 for a in axes]),
                           c.ci64(axes), c.ci64([-1] * len(axes))], x.dtype, x.shape)


@_f("pixel_shuffle", "pixel_unshuffle")
def _pixel_shuffle(c, x, r):
    """(*, C*r*r, H, W) <-> (*, C, H*r, W*r), channel c*r*r + i*r + j to pixel (h*r+i,
    w*r+j); as reshape + transpose over the leading dims folded into one."""
    r = int(r)
    lead = int(np.prod(x.shape[:-3])) if x.rank > 3 else 1
    C, H, W = x.shape[-3:]
    _, shape = c.out_meta()
    if _target_name(c.node) == "pixel_shuffle":
        y = c.reshape(x, (lead, C // (r * r), r, r, H, W))
        y = c.transpose(y, [0, 1, 4, 2, 5, 3])
    else:
        y = c.reshape(x, (lead, C, H // r, r, W // r, r))
        y = c.transpose(y, [0, 1, 3, 5, 2, 4])
    return c.reshape(y, shape)


@_f("topk")
def _topk(c, x, k, dim=-1, largest=True, sorted=True):
    (_, vsh), (_, ish) = c.out_meta(0), c.out_meta(1)
    v, i = c.g.op("TopK", [x, c.ci64([int(k)])], [(x.dtype, vsh), ("i64", ish)],
                  {"axis": _norm_axis(dim, x.rank), "largest": int(bool(largest)),
                   "sorted": 1}, label=c.node.name)
    return (v, i)


@_f("gather")
def _gather(c, x, dim, index, sparse_grad=False):
    return c.op1("GatherElements", [x, c.T(index)], x.dtype, c.T(index).shape,
                 {"axis": _norm_axis(dim, x.rank)})


@_f("one_hot")
def _one_hot(c, x, num_classes=-1):
    dt, shape = c.out_meta()
    vals = c.g.const(np.array([0, 1], _np_dtype(dt)), "onehot")
    return c.op1("OneHot", [c.T(x), c.g.const(np.array(shape[-1], np.int64), "depth"), vals],
                 dt, shape, {"axis": -1})


@_f("grid_sample", "grid_sampler", "grid_sampler_2d")
def _grid_sample(c, x, grid, *a, **kw):
    """F.grid_sample(input, grid, mode, padding_mode, align_corners) or aten's
    grid_sampler(input, grid, mode 0/1/2, padding 0/1/2, align_corners)."""
    modes, pads = ["bilinear", "nearest", "bicubic"], ["zeros", "border", "reflection"]
    if _target_name(c.node) == "grid_sample":
        mode = a[0] if a else kw.get("mode", "bilinear")
        pad = a[1] if len(a) > 1 else kw.get("padding_mode", "zeros")
        align = a[2] if len(a) > 2 else kw.get("align_corners", None)
    else:
        mode, pad, align = modes[a[0]], pads[a[1]], a[2]
    dt, shape = c.out_meta()
    return c.op1("GridSample", [x, c.T(grid)], x.dtype, shape,
                 {"mode": mode, "padding_mode": pad, "align_corners": int(bool(align))})


@_f("index_select")
def _index_select(c, x, dim, index):
    _, shape = c.out_meta()
    return c.op1("Gather", [x, c.T(index)], x.dtype, shape, {"axis": _norm_axis(dim, x.rank)})


@_f("cosine_similarity")
def _cosine_similarity(c, x1, x2, dim=1, eps=1e-8):
    """sum(x1 / max(|x1|, eps) * x2 / max(|x2|, eps)) over dim, as torch computes it."""
    dt, shape = c.out_meta()
    x1, x2 = c.cast(c.T(x1), dt), c.cast(c.T(x2), dt)
    r = max(x1.rank, x2.rank)
    d = _norm_axis(dim, r)
    units = []
    for v in (x1, x2):
        if v.rank < r:
            v = c.reshape(v, (1,) * (r - v.rank) + tuple(v.shape))
        n = c.reduce("ReduceL2", v, [d], True)
        n = c.op1("Max", [n, c.g.const(np.array(eps, _np_dtype(dt)), "eps")], dt, n.shape)
        units.append(c.op1("Div", [v, n], dt, v.shape))
    prod = c.ew("Mul", units[0], units[1])
    return c.reduce("ReduceSum", prod, [d], False)


@_m(nn.ConvTranspose1d, nn.ConvTranspose2d)
def _m_convt(c, m, x, output_size=None):
    if output_size is not None:
        raise _Unsup("ConvTranspose with output_size")
    return _conv(c, x, m.weight, m.bias, m.stride, m.padding, m.dilation, m.groups, True,
                 m.output_padding)


@_m(nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d)
def _m_bn(c, m, x):
    if m.training or m.running_mean is None:
        raise _Unsup("%s in training mode or without running statistics (call "
                     "module.eval() before compiling)" % type(m).__name__)
    return _bn_impl(c, x, m.weight, m.bias, m.running_mean, m.running_var, m.eps)


@_m(nn.LayerNorm)
def _m_ln(c, m, x):
    return _layer_norm(c, x, m.normalized_shape, m.weight, m.bias, m.eps)


@_m(nn.GroupNorm)
def _m_gn(c, m, x):
    return _group_norm_impl(c, x, m.num_groups, m.weight, m.bias, m.eps)


@_m(nn.Embedding)
def _m_emb(c, m, idx):
    w = c.T(m.weight)
    return c.op1("Gather", [w, idx], w.dtype, idx.shape + w.shape[1:], {"axis": 0})


@_m(nn.Dropout, nn.Dropout1d, nn.Dropout2d, nn.Identity, nn.AlphaDropout)
def _m_ident(c, m, x, *a, **kw):
    if getattr(m, "training", False) and getattr(m, "p", 0) > 0:
        raise _Unsup("%s in training mode (call module.eval() before compiling)" %
                     type(m).__name__)
    return x


@_m(nn.Flatten, nn.Unflatten)
def _m_flatten(c, m, x):
    _, shape = c.out_meta()
    return c.reshape(x, shape)


def _act(fn, *attrs):
    def h(c, m, x):
        return fn(c, x, *[getattr(m, a) for a in attrs])
    return h


_m(nn.ReLU)(_act(_FUNCS["relu"]))
_m(nn.Sigmoid)(_act(_FUNCS["sigmoid"]))
_m(nn.Tanh)(_act(_FUNCS["tanh"]))
_m(nn.SiLU)(_act(_FUNCS["silu"]))
_m(nn.Hardswish)(_act(_FUNCS["hardswish"]))
_m(nn.Hardsigmoid)(_act(_FUNCS["hardsigmoid"]))
_m(nn.GELU)(_act(_gelu, "approximate"))
_m(nn.LeakyReLU)(_act(_leaky, "negative_slope"))
_m(nn.ELU)(_act(_elu, "alpha"))
_m(nn.SELU)(_act(_FUNCS["selu"]))
_m(nn.Mish)(_act(_mish))


@_m(nn.Softmax, nn.LogSoftmax)
def _m_softmax(c, m, x):
    dim = m.dim if m.dim is not None else -1
    return c.un("LogSoftmax" if isinstance(m, nn.LogSoftmax) else "Softmax", x,
                {"axis": _norm_axis(dim, x.rank)})


@_m(nn.Softplus)
def _m_softplus(c, m, x):
    return _softplus(c, x, m.beta, m.threshold)


@_m(nn.ReLU6, nn.Hardtanh)
def _m_hardtanh(c, m, x):
    y = c.T(x)
    return c.op1("Clip", [y, c.T(float(m.min_val), y), c.T(float(m.max_val), y)], y.dtype,
                 y.shape)


@_m(nn.PReLU)
def _m_prelu(c, m, x):
    w = m.weight.detach().cpu().numpy()
    if w.size > 1:
        w = w.reshape((-1,) + (1,) * (x.rank - 2))
    return c.op1("PRelu", [x, c.g.const(w.astype(_np_dtype(x.dtype)), "slope")], x.dtype,
                 x.shape)


@_m(nn.MaxPool1d, nn.MaxPool2d)
def _m_maxpool(c, m, x):
    return _maxpool(c, x, m.kernel_size, m.stride, m.padding, m.dilation, m.ceil_mode,
                    m.return_indices)


@_m(nn.AvgPool1d, nn.AvgPool2d)
def _m_avgpool(c, m, x):
    return _avgpool(c, x, m.kernel_size, m.stride, m.padding, m.ceil_mode,
                    m.count_include_pad, getattr(m, "divisor_override", None))


@_m(nn.AdaptiveAvgPool1d, nn.AdaptiveAvgPool2d, nn.AdaptiveMaxPool2d)
def _m_adaptive(c, m, x):
    if isinstance(m, nn.AdaptiveMaxPool2d) and m.return_indices:
        raise _Unsup("adaptive max pooling with indices")
    dt, shape = c.out_meta()
    k = x.rank - 2
    ins, outs = tuple(x.shape[2:]), tuple(shape[2:])
    mx = isinstance(m, nn.AdaptiveMaxPool2d)
    if all(o == 1 for o in outs):
        return c.op1("GlobalMaxPool" if mx else "GlobalAveragePool", [x], x.dtype, shape)
    if all(i % o == 0 for i, o in zip(ins, outs)):
        kern = [i // o for i, o in zip(ins, outs)]
        return c.op1("MaxPool" if mx else "AveragePool", [x], x.dtype, shape,
                     {"kernel_shape": kern, "strides": kern, "pads": [0] * (2 * k)})
    raise _Unsup("adaptive pooling from %s to %s (not a whole divisor)" % (ins, outs))


@_m(nn.Upsample, nn.UpsamplingNearest2d, nn.UpsamplingBilinear2d)
def _m_upsample(c, m, x):
    mode = m.mode
    ac = m.align_corners
    if isinstance(m, nn.UpsamplingBilinear2d):
        ac = True
    return _interp(c, x, mode=mode, align_corners=ac)


@_m(nn.ZeroPad2d, nn.ConstantPad1d, nn.ConstantPad2d, nn.ReflectionPad1d, nn.ReflectionPad2d,
    nn.ReplicationPad1d, nn.ReplicationPad2d)
def _m_pad(c, m, x):
    mode = "reflect" if "Reflection" in type(m).__name__ else \
        "replicate" if "Replication" in type(m).__name__ else "constant"
    return _pad(c, x, m.padding, mode, getattr(m, "value", 0.0))


@_m(nn.MultiheadAttention)
def _m_mha(c, m, query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
           average_attn_weights=True, is_causal=False):
    if m.bias_k is not None or m.add_zero_attn:
        raise _Unsup("MultiheadAttention with bias_k/bias_v or add_zero_attn")
    E, H = m.embed_dim, m.num_heads
    Dh = E // H
    if not m.batch_first:  # (L, N, E) -> (N, L, E)
        query, key, value = [c.transpose(t, [1, 0, 2]) if t.rank == 3 else t
                             for t in (query, key, value)]
    unbatched = query.rank == 2
    if unbatched:
        query, key, value = [c.reshape(t, (1,) + t.shape) for t in (query, key, value)]
    N, L, _ = query.shape
    S = key.shape[1]
    if m._qkv_same_embed_dim:
        wq, wk, wv = m.in_proj_weight.chunk(3)
    else:
        wq, wk, wv = m.q_proj_weight, m.k_proj_weight, m.v_proj_weight
    bq, bk, bv = m.in_proj_bias.chunk(3) if m.in_proj_bias is not None else (None,) * 3

    def proj(x, w, b, n):
        y = _linear(c, x, w.detach().clone(), b.detach().clone() if b is not None else None)
        return c.transpose(c.reshape(y, (N, n, H, Dh)), [0, 2, 1, 3])

    q, k, v = proj(query, wq, bq, L), proj(key, wk, bk, S), proj(value, wv, bv, S)
    mask = None
    if attn_mask is not None:
        am = c.T(attn_mask)
        if am.dtype == "bool":
            am = c.op1("Where", [am, c.T(float("-inf"), "f32"), c.T(0.0, "f32")], "f32",
                       am.shape)
        if am.rank == 3:
            am = c.reshape(am, (N, H) + am.shape[1:])
        mask = am
    if key_padding_mask is not None:
        kp = c.T(key_padding_mask)
        if kp.dtype == "bool":
            kp = c.op1("Where", [kp, c.T(float("-inf"), "f32"), c.T(0.0, "f32")], "f32",
                       kp.shape)
        kp = c.reshape(kp, (N, 1, 1, S))
        mask = kp if mask is None else c.ew("Add", mask, kp)
    o, p = _attention(c, q, k, v, mask, is_causal)
    o = c.reshape(c.transpose(o, [0, 2, 1, 3]), (N, L, E))
    o = _linear(c, o, m.out_proj.weight, m.out_proj.bias)
    if not m.batch_first:
        o = c.transpose(o, [1, 0, 2])
    if unbatched:
        o = c.reshape(o, o.shape[1:])
    w = None
    if need_weights:
        w = c.reduce("ReduceMean", p, [1], False) if average_attn_weights else p
        if unbatched:
            w = c.reshape(w, w.shape[1:])
    return (o, w)


# ---- the compiled module ------------------------------------------------------------

def supported_ops():
    """The names of the functions/methods/ATen ops and the module classes converted."""
    return (sorted(k for k, h in _FUNCS.items() if h is not _data_dependent),
            sorted(cl.__name__ for cl in _MODULES))


def _flatten(v, out):
    if isinstance(v, (list, tuple)):
        return type(v), [_flatten(x, out) for x in v]
    if isinstance(v, dict):
        return dict, {k: _flatten(x, out) for k, x in v.items()}
    out.append(v)
    return None, len(out) - 1


def _unflatten(spec, vals):
    kind, sub = spec
    if kind is None:
        return vals[sub]
    if kind is dict:
        return {k: _unflatten(s, vals) for k, s in sub.items()}
    return kind(_unflatten(s, vals) for s in sub)


class _Part:
    """One compiled subgraph: the FX nodes it takes in (as model inputs) and gives out."""

    def __init__(self, g):
        self.g = g
        self.in_nodes, self.out_nodes = [], []
        self.model = None
        self.nodes = 0


class CompiledModule(nn.Module):
    """What compile() returns: forward(*inputs) runs the compiled parts (and, with
    fallback="cpu", the nodes torch runs) and returns torch tensors shaped like the
    eager module's outputs. Attributes: models (the opennpu.Model of each part),
    cpu_nodes (names of nodes run in torch), tracer ("fx" or "make_fx"), stats (the
    last run's RunStats, summed over the parts), ir_text (the IR of each part)."""

    def __init__(self, gm, stages, placeholders, out_spec, out_leaves, tracer, ir_text):
        super().__init__()
        self._gm = gm
        self._stages = stages
        self._placeholders = placeholders
        self._out_spec, self._out_leaves = out_spec, out_leaves
        self.tracer = tracer
        self.models = [s for k, s in stages if k == "npu"]
        self.models = [p.model for p in self.models]
        self.cpu_nodes = [n.name for k, n in stages if k == "cpu"]
        self.ir_text = ir_text
        self.stats = None
        self._consts = {}

    def forward(self, *inputs):
        if len(inputs) != len(self._placeholders):
            raise TypeError("expected %d inputs, got %d" % (len(self._placeholders),
                                                            len(inputs)))
        env = dict(self._consts)
        for n, v in zip(self._placeholders, inputs):
            env[n] = v
        stats = []
        for kind, s in self._stages:
            if kind == "npu":
                arrays = []
                for n, info in zip(s.in_nodes, s.model.inputs):
                    t = env[n]
                    if not isinstance(t, torch.Tensor):
                        raise TypeError("input %s must be a tensor" % n.name)
                    a = t.detach()
                    if a.dtype != _IR_TO_TORCH[_ir.NP_TO_IR[info.dtype]]:
                        a = a.to(_IR_TO_TORCH[_ir.NP_TO_IR[info.dtype]])
                    a = a.cpu().contiguous().numpy()
                    if a.shape != info.shape:
                        raise ValueError("input %s has shape %s; the module was compiled for "
                                         "%s" % (n.name, tuple(a.shape), info.shape))
                    arrays.append(a)
                res = s.model.run(arrays)
                stats.append(s.model.stats)
                for n, info in zip(s.out_nodes, s.model.outputs):
                    env[n] = torch.from_numpy(res[info.name])
            else:
                n = s
                args = torch.fx.node.map_arg(n.args, lambda a: env[a])
                kwargs = torch.fx.node.map_arg(n.kwargs, lambda a: env[a])
                with torch.no_grad():
                    if n.op == "call_module":
                        env[n] = self._gm.get_submodule(n.target)(*args, **kwargs)
                    elif n.op == "call_method":
                        env[n] = getattr(args[0], n.target)(*args[1:], **kwargs)
                    else:
                        env[n] = n.target(*args, **kwargs)
        if stats:
            from ._model import RunStats
            self.stats = RunStats(
                sum(s.wall_s for s in stats), sum(s.cpu_s for s in stats),
                sum(s.npu_modeled_s for s in stats),
                next((s.npu_time_label for s in stats if s.npu_time_label), ""),
                sum(s.submits for s in stats), sum(s.tasks for s in stats),
                sum(s.dma_bytes for s in stats),
                max(s.mac_utilisation for s in stats))
        leaves = [env[x] if isinstance(x, torch.fx.Node) else x for x in self._out_leaves]
        return _unflatten(self._out_spec, leaves)


_MODEL_OPTIONS = ("cache_dir", "cpu_threads", "partition")


def compile(module, example_inputs, backend="auto", fallback="error", trace="auto",
            **compile_options):
    """Compiles module for libopennpu; see the module docstring and docs/python.md.

    example_inputs: a tensor or a tuple of tensors (the shapes the result runs with).
    backend: as opennpu.Model. fallback: "error" (an unsupported node raises
    UnsupportedError) or "cpu" (such nodes run in torch; a warning says how many).
    trace: "auto" (symbolic_trace, else make_fx), "fx" or "make_fx".
    compile_options: cache_dir, cpu_threads, partition (as opennpu.Model)."""
    if fallback not in ("error", "cpu"):
        raise ValueError("fallback must be 'error' or 'cpu', not %r" % (fallback,))
    if trace not in ("auto", "fx", "make_fx"):
        raise ValueError("trace must be 'auto', 'fx' or 'make_fx'")
    for k in compile_options:
        if k not in _MODEL_OPTIONS:
            raise TypeError("unknown compile option '%s' (known: %s)" %
                            (k, ", ".join(_MODEL_OPTIONS)))
    if not isinstance(module, nn.Module):
        raise TypeError("compile() takes a torch.nn.Module, not %s" % type(module).__name__)
    if isinstance(example_inputs, torch.Tensor):
        example_inputs = (example_inputs,)
    example_inputs = tuple(example_inputs)
    for i, t in enumerate(example_inputs):
        if not isinstance(t, torch.Tensor):
            raise TypeError("example input %d is a %s, not a tensor" % (i, type(t).__name__))
        if t.dtype not in _TORCH_TO_IR:
            raise TypeError("example input %d has dtype %s, which has no IR equivalent" %
                            (i, t.dtype))
    # the eager result first: wrong example inputs fail here with torch's own message
    with torch.no_grad():
        try:
            module(*example_inputs)
        except Exception as e:  # noqa: BLE001
            raise ValueError("the example inputs do not fit %s: %s: %s" % (
                type(module).__name__, type(e).__name__, str(e).split("\n")[0])) from e
    gm, tracer = _trace(module, example_inputs, trace)
    if tracer == "fx":
        _rewire_inplace(gm)
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if len(placeholders) < len(example_inputs):
        raise ValueError("%s takes %d inputs, %d example inputs given" % (
            type(module).__name__, len(placeholders), len(example_inputs)))
    args = list(example_inputs)
    for n in placeholders[len(example_inputs):]:
        if not n.args:
            raise ValueError("input '%s' has no example and no default" % n.name)
        args.append(n.args[0])
    with torch.no_grad():
        _Concrete(gm).run(*args)
    # A write through a view (`y[:, 0].add_(1)`; make_fx's circular padding, copy_
    # into slices of new_empty) changes the tensor it views, which later code reads
    # through another node: not followed, so refused. make_fx's graph reads the write
    # itself where the value is used (LSTM's gates), so only an unread one is refused
    # there; fx's graph never does.
    dyn = _dynamic(gm, placeholders[:len(example_inputs)])
    for n in gm.graph.nodes:
        if n.meta.get("inplace_on_view") and n in dyn and (tracer == "fx" or not n.users):
            src = _src(n)
            raise UnsupportedError(
                "cannot compile node %s: an in-place op on a view of another tensor "
                "(the write to the viewed tensor is not followed)%s; write it "
                "out of place (y = y + ...)" % (_describe(n, gm),
                                               " (at %s)" % src if src else ""))
    gm.graph.eliminate_dead_code()  # e.g. the indices of make_fx's max_pool*_with_indices
    gm.recompile()
    placeholders = placeholders[:len(example_inputs)]
    _split_tuple_outputs(gm)
    return _build(gm, placeholders, args, backend, fallback, tracer, compile_options)


def _split_tuple_outputs(gm):
    """An output that is one node holding a tuple (`return x.chunk(2)`) becomes a
    tuple of getitem nodes, so that each element is a compiled model output."""
    out_node = [n for n in gm.graph.nodes if n.op == "output"][0]

    def expand(a):
        vals = a.meta.get("concrete")
        if not isinstance(vals, (tuple, list)) or a.op == "placeholder":
            return a
        items = []
        for i, v in enumerate(vals):
            with gm.graph.inserting_before(out_node):
                g = gm.graph.call_function(operator.getitem, (a, i))
            g.meta["concrete"] = v
            items.append(expand(g))
        return list(items) if isinstance(vals, list) else tuple(items)

    out_node.args = (torch.fx.node.map_arg(out_node.args[0], expand),)


def _all_nodes(node):
    out = []
    torch.fx.node.map_arg((node.args, node.kwargs), lambda a: out.append(a))
    return out


_SHAPE_ONLY = {"size", "dim", "numel", "getattr", "zeros_like", "ones_like", "full_like",
               "empty_like", "new_zeros", "new_ones", "new_full", "new_empty", "sym_size"}


def _dynamic(gm, placeholders):
    """The nodes whose value depends on the inputs' data (as _build decides); a write
    made only of values known at compile time is folded like any constant."""
    dyn = set(placeholders)
    for n in gm.graph.nodes:
        if n.op in ("placeholder", "output", "get_attr"):
            continue
        name = _target_name(n) if n.op != "call_module" else None
        if any(a in dyn for a in _all_nodes(n)) and not (name in _SHAPE_ONLY and not (
                name == "getattr" and isinstance(n.meta.get("concrete"), torch.Tensor))):
            dyn.add(n)
    return dyn


def _build(gm, placeholders, args, backend, fallback, tracer, opts):
    nodes = list(gm.graph.nodes)
    dyn = set(placeholders)   # nodes whose value depends on the inputs' data
    const = {}                # node -> value known at compile time
    for n in gm.graph.nodes:
        if n.op == "placeholder" and n not in dyn:
            const[n] = n.meta["concrete"]
    stages = []
    cpu_nodes = []
    part = None
    where = {}                # dynamic node -> part or "cpu"/"input"
    for n in placeholders:
        where[n] = "input"
    cur_env = {}
    ir_text = []

    def new_part():
        p = _Part(_ir.Graph("torch_%s_%d" % (type(gm).__name__, len(stages))))
        stages.append(("npu", p))
        return p

    def env_for(p):
        return cur_env.setdefault(id(p), {})

    for n in nodes:
        if n.op in ("placeholder", "output"):
            continue
        ins = _all_nodes(n)
        if n.op == "get_attr":
            const[n] = n.meta["concrete"]
            continue
        if not n.users:  # dead (make_fx keeps unused getitems of multi-output ops)
            continue
        is_dyn = any(a in dyn for a in ins)
        name = _target_name(n) if n.op != "call_module" else None
        if not is_dyn or (name in _SHAPE_ONLY and not (
                name == "getattr" and isinstance(n.meta.get("concrete"), torch.Tensor))):
            const[n] = n.meta["concrete"]
            continue
        dyn.add(n)
        # try to convert into the current part
        if part is None:
            part = new_part()
        env = env_for(part)
        ok = False
        err = None
        if not any(where.get(a) == "cpu" and not isinstance(a.meta.get("concrete"),
                                                             torch.Tensor) for a in ins):
            g = part.g
            saved = (len(g.inputs), len(g.consts), len(g.nodes), len(g.side), g._n,
                     set(g.names), dict(g._const_cache), list(part.in_nodes), dict(env))
            for a in ins:
                if a in const:
                    env[a] = n.meta.get("arg_snap", {}).get(a, const[a])
                elif a not in env:
                    c = a.meta["concrete"]
                    if not isinstance(c, torch.Tensor):
                        err = "operand %s is not a tensor" % a.name
                        break
                    env[a] = g.input(a.name, _TORCH_TO_IR[c.dtype], tuple(c.shape))
                    part.in_nodes.append(a)
            if err is None:
                try:
                    r = _Conv(gm, g, env).convert(n)
                    _check_result(n, r)
                    env[n] = r
                    where[n] = part
                    part.nodes += 1
                    ok = True
                except _Unsup as e:
                    err = str(e)
                except Exception as e:  # noqa: BLE001 - a converter bug names the node
                    err = "%s: %s" % (type(e).__name__, e)
            if not ok:
                g.inputs[saved[0]:] = []
                g.consts[saved[1]:] = []
                g.nodes[saved[2]:] = []
                del g.side[saved[3]:]
                g._n, g.names, g._const_cache = saved[4], saved[5], saved[6]
                part.in_nodes[:] = saved[7]
                env.clear()
                env.update(saved[8])
        else:
            err = "takes a non-tensor value computed in torch"
        if ok:
            continue
        src = _src(n)
        msg = "%s: %s%s" % (_describe(n, gm), err, " (at %s)" % src if src else "")
        if fallback == "error":
            raise UnsupportedError("cannot compile node " + msg +
                                   "; fallback='cpu' runs such nodes in torch")
        cpu_nodes.append(msg)
        where[n] = "cpu"
        stages.append(("cpu", n))
        part = None
    # outputs of the graph
    out_node = [n for n in nodes if n.op == "output"][0]
    leaves = []
    spec = _flatten(out_node.args[0], leaves)
    out_leaves = []
    for x in leaves:
        if isinstance(x, torch.fx.Node) and x in const:
            out_leaves.append(const[x])
        else:
            out_leaves.append(x)
    # each part's outputs: its values used by later stages or by the graph output
    used_later = {}
    for idx, (kind, s) in enumerate(stages):
        if kind == "cpu":
            for a in _all_nodes(s):
                used_later.setdefault(a, set()).add(idx)
        else:
            for a in s.in_nodes:
                used_later.setdefault(a, set()).add(idx)
    final = [x for x in out_leaves if isinstance(x, torch.fx.Node)]
    built = []
    for idx, (kind, s) in enumerate(stages):
        if kind != "npu":
            continue
        env = cur_env.get(id(s), {})
        outs = []
        for nd, w in where.items():
            if w is s and (nd in final or any(i > idx for i in used_later.get(nd, ()))):
                outs.append(nd)
        vals = []
        for nd in outs:
            v = env[nd]
            if isinstance(v, (tuple, list)):
                raise UnsupportedError("node %s gives a tuple used outside its part" % nd.name)
            vals.append(v)
        if not outs:
            continue
        seen = {}
        for nd, v in zip(outs, vals):
            if v.name in seen or v.const is not None or v in s.g.inputs:
                # an output must be a node's own value: copy it once
                v = s.g.op("Identity", [v], [(v.dtype, v.shape)], hint="out")[0]
            seen[v.name] = nd
            s.g.output(v)
        s.out_nodes = outs
        built.append(s)
    for s in built:
        text, side = s.g.to_text()
        ir_text.append(text)
        try:
            s.model = _load(text, side, backend, opts)
        except Error as e:
            raise _with_ir_line(e, text) from None
    stages = [(k, s) for k, s in stages if k == "cpu" or s in built]
    if cpu_nodes:
        warnings.warn("opennpu.torch.compile: %d node(s) run in torch (fallback='cpu'), the "
                      "graph is split into %d compiled part(s):\n  %s" %
                      (len(cpu_nodes), len(built), "\n  ".join(cpu_nodes)), stacklevel=3)
    cm = CompiledModule(gm, stages, placeholders, spec, out_leaves, tracer, ir_text)
    # what the nodes run in torch take that was fixed at compile time (parameters,
    # sizes): kept, not recomputed
    cm._consts = {a: const[a] for k, n in stages if k == "cpu" for a in _all_nodes(n)
                  if a in const}
    cm.cpu_node_reasons = cpu_nodes
    return cm


def _with_ir_line(e, text):
    """The library names IR lines ("ir-text: line 12: ..."): add the line itself,
    whose <name="..."> is the FX node it came from."""
    import re
    m = re.search(r"line (\d+):", e.messages or "")
    if m:
        lines = text.split("\n")
        k = int(m.group(1))
        if 0 < k <= len(lines):
            e.args = (str(e) + "\nIR line %d: %s" % (k, lines[k - 1].strip()),)
    return e


def _check_result(n, r):
    c = n.meta.get("concrete")
    if isinstance(c, torch.Tensor):
        if not isinstance(r, _ir.V):
            raise _Unsup("conversion gave %s" % type(r).__name__)
        want = (_TORCH_TO_IR.get(c.dtype), tuple(c.shape))
        if (r.dtype, tuple(r.shape)) != want:
            raise _Unsup("conversion gave %s%s, torch %s%s" % (r.dtype, list(r.shape),
                                                              want[0], list(want[1])))


def _load(text, side, backend, opts):
    """Loads the IR through npu_model_load from a .npuir + .bin pair. With a cache_dir
    the pair is written under cache_dir/torch-ir/ with a name from the text's hash
    (which covers every constant's hash): the compile cache keys on the file's
    contents and path, so the same module compiles once. Otherwise a temporary folder
    holds it while it loads."""
    cache = opts.get("cache_dir")
    kw = dict(backend=backend, cache_dir=cache, cpu_threads=opts.get("cpu_threads", 0),
              partition=opts.get("partition"))
    data = text.encode()
    if cache:
        d = os.path.join(os.fspath(cache), "torch-ir")
        os.makedirs(d, exist_ok=True)
        path = os.path.join(d, "%016x.npuir" % _ir._fnv_fast(data))
        if not (os.path.exists(path) and os.path.exists(path + ".bin") and
                os.path.getsize(path + ".bin") == len(side)):
            for p, b in ((path + ".bin", side), (path, data)):
                with open(p + ".tmp", "wb") as f:
                    f.write(b)
                os.replace(p + ".tmp", p)
        return Model(path, **kw)
    d = tempfile.mkdtemp(prefix="opennpu-torch-")
    path = os.path.join(d, "model.npuir")
    try:
        with open(path, "wb") as f:
            f.write(data)
        with open(path + ".bin", "wb") as f:
            f.write(side)
        return Model(path, **kw)
    finally:
        for p in (path, path + ".bin"):
            try:
                os.unlink(p)
            except OSError:
                pass
        os.rmdir(d)
