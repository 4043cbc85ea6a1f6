# SPDX-License-Identifier: MIT
"""opennpu.Model: a model loaded through npu-model.h, run with numpy arrays.

Inputs are passed to the library as pointers into the caller's arrays (no copy
when an array is C-contiguous and of the model's dtype already); outputs are
views of the session's memory, copied into fresh arrays unless run(copy=False)
asks for the views themselves (valid until the next run).
"""
import collections
import ctypes
import os
import threading

try:
    import numpy as np
except ImportError as e:  # e.g. a pyenv python3 first on PATH
    raise ImportError("opennpu needs numpy, which %s lacks (%s); Debian's /usr/bin/python3 "
                      "has it (python3-numpy)" % (__import__("sys").executable, e)) from e

from . import _lib

_NP_DTYPES = {
    "f32": np.float32, "f16": np.float16, "i8": np.int8, "u8": np.uint8, "i16": np.int16,
    "i32": np.int32, "i64": np.int64, "bool": np.bool_, "f64": np.float64, "u16": np.uint16,
    "u32": np.uint32, "u64": np.uint64,
}


class Error(RuntimeError):
    """A library call failed. str() is the library's own messages (what it logged as
    errors during the call), status the enum npu_status value, status_name its name."""

    def __init__(self, what, status, messages):
        self.status = status
        self.status_name = _lib.status_str(status).decode()
        self.messages = messages
        text = "%s: %s" % (what, self.status_name)
        if messages:
            text += "\n" + messages
        super().__init__(text)


def _call(what, fn, *args):
    _lib.clear_last_error()
    st = fn(*args)
    if st != 0:
        raise Error(what, st, _lib.last_error().decode(errors="replace"))
    return st


IoInfo = collections.namedtuple("IoInfo", "name dtype shape")
IoInfo.__doc__ = "A model input or output: name, numpy dtype, shape (tuple of ints)."


class RunStats(collections.namedtuple(
        "RunStats", "wall_s cpu_s npu_modeled_s npu_time_label submits tasks dma_bytes "
        "mac_utilisation")):
    """Statistics of the last run. npu_modeled_s is the NPU time the simulator's timing
    model gives (labelled by npu_time_label, e.g. "modeled (timing model v1)"); 0, with
    an empty label, on the cpu backend and on the hardware backends (whose jobs report
    no modeled time); wall_s and cpu_s are host times (whole run, CPU ops)."""

    def __str__(self):
        s = "host %.3f ms (CPU ops %.3f ms)" % (self.wall_s * 1e3, self.cpu_s * 1e3)
        if self.submits and self.npu_time_label:
            s += ", NPU %.3f ms %s, %d submits, %d tasks" % (
                self.npu_modeled_s * 1e3, self.npu_time_label, self.submits, self.tasks)
        elif self.submits:
            s += ", %d NPU submits, %d tasks (no modeled NPU time: a hardware backend)" % (
                self.submits, self.tasks)
        return s


def _io(info):
    i = info.contents
    return IoInfo(i.name.decode(), np.dtype(_NP_DTYPES[_lib.DTYPE_NAMES[i.dtype]]),
                  tuple(int(d) for d in i.dims[:i.ndim]))


def timing_label():
    """How modeled NPU times of this process are labelled ("modeled (timing model v1)")."""
    return "modeled (%s)" % _lib.timing_model().contents.label.decode()


class Model:
    """A model compiled (from .onnx or .npuir) or loaded (.npub) by libopennpu.

    backend: "auto" (the first NPU found, else the simulator), "cpu", "sim", "rknpu",
    "rocket". cache_dir: the compile cache. dims: values of symbolic input dims, a
    dict {"batch": 1} or the library's string "batch=1,seq=64". partition (NPU
    backends): "cost" (default: each node goes where the cost model says it is
    faster), "supported" (every node the NPU supports runs there) or "cpu"; it sets
    $NPU_PARTITION while the model compiles."""

    def __init__(self, path, backend="auto", cache_dir=None, dims=None, cpu_threads=0,
                 partition=None):
        if partition not in (None, "cost", "supported", "cpu"):
            raise ValueError("partition must be 'cost', 'supported' or 'cpu'")
        if isinstance(dims, dict):
            dims = ",".join("%s=%d" % (k, int(v)) for k, v in dims.items())
        path = os.fspath(path)
        self._keep = [s.encode() if s is not None else None
                      for s in (path, backend, cache_dir and os.fspath(cache_dir), dims)]
        opts = _lib.ModelOptions(backend=self._keep[1], cache_dir=self._keep[2],
                                 cpu_threads=int(cpu_threads), dim_values=self._keep[3],
                                 strict_dims=dims is not None)
        self._m = ctypes.c_void_p()
        self._s = ctypes.c_void_p()
        self._lock = threading.Lock()
        self.path = path
        old = os.environ.get("NPU_PARTITION")
        if partition:
            os.environ["NPU_PARTITION"] = partition
        try:
            _call("loading %s" % path, _lib.model_load, self._keep[0], ctypes.byref(opts),
                  ctypes.byref(self._m))
        finally:
            if partition:
                if old is None:
                    del os.environ["NPU_PARTITION"]
                else:
                    os.environ["NPU_PARTITION"] = old
        m = self._m
        self.inputs = [_io(_lib.model_input(m, i)) for i in range(_lib.model_num_inputs(m))]
        self.outputs = [_io(_lib.model_output(m, i)) for i in range(_lib.model_num_outputs(m))]
        self.backend = _lib.model_backend(m).decode()
        # NPU backends: whether the compile cache served the program, and how long the
        # compile took (0 on a hit and on the cpu backend)
        self.from_cache = bool(_lib.model_from_cache(m))
        self.compile_s = float(_lib.model_compile_seconds(m))
        self.metadata = {}
        for i in range(_lib.model_num_props(m)):
            kv = _lib.model_prop(m, i).contents
            self.metadata[kv[0].decode()] = kv[1].decode()
        self.stats = None
        self._tin = (_lib.Tensor * max(1, len(self.inputs)))()
        self._tout = (_lib.Tensor * max(1, len(self.outputs)))()
        _call("creating a session of %s" % path, _lib.session_create, m, 0,
              ctypes.byref(self._s))

    def close(self):
        """Frees the session and the model (also done when the object goes away)."""
        if getattr(self, "_s", None):
            _lib.session_destroy(self._s)
            self._s = None
        if getattr(self, "_m", None):
            _lib.model_free(self._m)
            self._m = None

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown: ctypes may be gone
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return "<opennpu.Model %s on %s: %s -> %s>" % (
            self.path, self.backend, [tuple(i) for i in self.inputs],
            [tuple(o) for o in self.outputs])

    def _arrays(self, inputs):
        if isinstance(inputs, dict):
            names = [i.name for i in self.inputs]
            extra = sorted(set(inputs) - set(names))
            if extra:
                raise ValueError("the model has no input named %s (inputs: %s)" %
                                 (", ".join(extra), ", ".join(names)))
            missing = [n for n in names if n not in inputs]
            if missing:
                raise ValueError("input %s not given" % ", ".join(missing))
            inputs = [inputs[n] for n in names]
        elif isinstance(inputs, np.ndarray):
            inputs = [inputs]
        inputs = list(inputs)
        if len(inputs) != len(self.inputs):
            raise ValueError("the model has %d inputs, %d given" %
                             (len(self.inputs), len(inputs)))
        out = []
        for info, a in zip(self.inputs, inputs):
            a = np.asarray(a)
            if a.dtype != info.dtype:
                kinds = ({a.dtype.kind, info.dtype.kind} <= set("iu") or
                         a.dtype.kind == info.dtype.kind)
                if not kinds or not np.can_cast(a.dtype, info.dtype, casting="same_kind"):
                    raise TypeError("input '%s' must be %s, not %s" %
                                    (info.name, info.dtype, a.dtype))
                a = a.astype(info.dtype)
            if a.shape != info.shape:
                if a.size == int(np.prod(info.shape, dtype=np.int64)) and \
                        a.squeeze().shape == np.empty(info.shape).squeeze().shape:
                    a = a.reshape(info.shape)
                else:
                    raise ValueError("input '%s' must have shape %s, not %s" %
                                     (info.name, info.shape, a.shape))
            out.append(np.ascontiguousarray(a))
        return out

    def run(self, inputs, copy=True):
        """Runs the model once. inputs: a dict name -> array, or a list (or one array) in
        the order of model.inputs. Returns a dict name -> numpy array, in the order of
        model.outputs. copy=False returns views of the session's memory, valid until the
        next run. model.stats holds the run's RunStats."""
        if not self._s:
            raise ValueError("the model was closed")
        arrays = self._arrays(inputs)
        with self._lock:
            for t, a in zip(self._tin, arrays):
                t.dtype = _lib.DTYPE_NAMES.index(_dtype_name(a.dtype))
                t.ndim = a.ndim
                for k, d in enumerate(a.shape):
                    t.dims[k] = d
                t.data = a.ctypes.data if a.size else None
            st = _lib.RunStats()
            _call("running %s" % self.path, _lib.session_run, self._s, self._tin,
                  len(arrays), self._tout, len(self.outputs), ctypes.byref(st))
            res = {}
            for info, t in zip(self.outputs, self._tout):
                shape = tuple(int(d) for d in t.dims[:t.ndim])
                dt = np.dtype(_NP_DTYPES[_lib.DTYPE_NAMES[t.dtype]])
                n = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
                if n == 0 or not t.data:
                    v = np.zeros(shape, dt)
                else:
                    buf = (ctypes.c_char * n).from_address(t.data)
                    v = np.frombuffer(buf, dt).reshape(shape)
                    if copy:
                        v = v.copy()
                res[info.name] = v
            self.stats = RunStats(st.wall_s, st.cpu_s, st.npu_modeled_s,
                                  timing_label() if st.npu_modeled_s > 0 else "", st.submits,
                                  st.tasks,
                                  st.dma_bytes, st.mac_utilisation)
        return res


def _dtype_name(dt):
    for k, v in _NP_DTYPES.items():
        if np.dtype(v) == dt:
            return k
    raise TypeError("dtype %s has no libopennpu equivalent" % dt)


Backend = collections.namedtuple("Backend", "name available reason")
Backend.__doc__ = "A backend 'auto' considers: name, whether it opens, and why (not)."


def backends():
    """The backends of this machine: "cpu" (always), then what "auto" would try in its
    order (rknpu, rocket, sim), each with whether it is available and the reason."""
    arr = (_lib.BackendProbe * 8)()
    n = min(8, _lib.probe_backends(arr, 8))
    out = [Backend("cpu", True, "the CPU executor (always present)")]
    for p in arr[:n]:
        reason = p.reason.decode(errors="replace")
        if p.status:
            reason = "%s (%s)" % (reason, _lib.status_str(p.status).decode())
        out.append(Backend(p.name.decode(), p.status == 0, reason))
    return out
