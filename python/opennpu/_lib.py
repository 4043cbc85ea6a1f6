# SPDX-License-Identifier: MIT
"""ctypes declarations of the part of libopennpu.so.0 the Python package uses.

The library is found, in this order: $OPENNPU_LIBRARY (a path), the library
directory meson installed it to (_install_config.py, written by
`meson install`), then the dynamic loader's search ("libopennpu.so.0", which
`meson devenv -C build` makes the build folder's through LD_LIBRARY_PATH).
Only the public API of npu-common.h, npu-tensor.h, npu-model.h, npu-device.h
and npu-timing.h is declared; the structs mirror those headers.
"""
import ctypes
import os

NPU_MAX_DIMS = 8

# enum npu_dtype (npu-tensor.h), in NPU_DTYPE_LIST order
DTYPE_NAMES = [None, "f32", "f16", "i8", "u8", "i16", "i32", "i64", "bool", "f64", "u16",
               "u32", "u64"]


class Tensor(ctypes.Structure):
    _fields_ = [("dtype", ctypes.c_int), ("ndim", ctypes.c_int),
                ("dims", ctypes.c_int64 * NPU_MAX_DIMS), ("data", ctypes.c_void_p),
                ("qscale", ctypes.c_float), ("qzero", ctypes.c_int32)]


class ModelOptions(ctypes.Structure):
    _fields_ = [("backend", ctypes.c_char_p), ("cache_dir", ctypes.c_char_p),
                ("core_mask", ctypes.c_uint32), ("cpu_threads", ctypes.c_int),
                ("dim_values", ctypes.c_char_p), ("strict_dims", ctypes.c_bool)]


class IoInfo(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("dtype", ctypes.c_int), ("ndim", ctypes.c_int),
                ("dims", ctypes.c_int64 * NPU_MAX_DIMS)]


class RunStats(ctypes.Structure):
    _fields_ = [("wall_s", ctypes.c_double), ("cpu_s", ctypes.c_double),
                ("npu_modeled_s", ctypes.c_double), ("submits", ctypes.c_uint),
                ("tasks", ctypes.c_uint), ("dma_bytes", ctypes.c_uint64),
                ("mac_utilisation", ctypes.c_double)]


class BackendProbe(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char * 16), ("status", ctypes.c_int),
                ("reason", ctypes.c_char * 320)]


class TimingModelHead(ctypes.Structure):
    # the leading fields of struct npu_timing_model (npu-timing.h)
    _fields_ = [("name", ctypes.c_char_p), ("version", ctypes.c_int),
                ("label", ctypes.c_char_p), ("doc", ctypes.c_char_p)]


def _candidates():
    env = os.environ.get("OPENNPU_LIBRARY")
    if env:
        yield env
    try:
        from . import _install_config
        yield os.path.join(_install_config.LIBDIR, "libopennpu.so.0")
    except ImportError:
        pass
    yield "libopennpu.so.0"


def _load():
    errors = []
    for c in _candidates():
        try:
            return ctypes.CDLL(c)
        except OSError as e:
            errors.append(str(e))
    raise ImportError("opennpu: cannot load libopennpu.so.0 (" + "; ".join(errors) +
                      "); run inside `meson devenv -C build`, install with `meson install`,"
                      " or set OPENNPU_LIBRARY to the library's path")


lib = _load()


def _decl(name, restype, *argtypes):
    f = getattr(lib, name)
    f.restype = restype
    f.argtypes = list(argtypes)
    return f


_P = ctypes.c_void_p
status_str = _decl("npu_status_str", ctypes.c_char_p, ctypes.c_int)
last_error = _decl("npu_last_error", ctypes.c_char_p)
clear_last_error = _decl("npu_clear_last_error", None)
model_load = _decl("npu_model_load", ctypes.c_int, ctypes.c_char_p,
                   ctypes.POINTER(ModelOptions), ctypes.POINTER(_P))
model_free = _decl("npu_model_free", None, _P)
model_num_inputs = _decl("npu_model_num_inputs", ctypes.c_int, _P)
model_num_outputs = _decl("npu_model_num_outputs", ctypes.c_int, _P)
model_input = _decl("npu_model_input", ctypes.POINTER(IoInfo), _P, ctypes.c_int)
model_output = _decl("npu_model_output", ctypes.POINTER(IoInfo), _P, ctypes.c_int)
model_backend = _decl("npu_model_backend", ctypes.c_char_p, _P)
model_num_props = _decl("npu_model_num_props", ctypes.c_int, _P)
model_prop = _decl("npu_model_prop", ctypes.POINTER(ctypes.c_char_p * 2), _P, ctypes.c_int)
session_create = _decl("npu_session_create", ctypes.c_int, _P, ctypes.c_int, ctypes.POINTER(_P))
session_destroy = _decl("npu_session_destroy", None, _P)
session_run = _decl("npu_session_run", ctypes.c_int, _P, ctypes.POINTER(Tensor), ctypes.c_int,
                    ctypes.POINTER(Tensor), ctypes.c_int, ctypes.POINTER(RunStats))
probe_backends = _decl("npu_device_probe_backends", ctypes.c_uint,
                       ctypes.POINTER(BackendProbe), ctypes.c_uint)
timing_model = _decl("npu_timing_model", ctypes.POINTER(TimingModelHead))
fnv1a64 = _decl("npu_fnv1a64", ctypes.c_uint64, ctypes.c_char_p, ctypes.c_size_t)
model_from_cache = _decl("npu_model_from_cache", ctypes.c_bool, _P)
model_compile_seconds = _decl("npu_model_compile_seconds", ctypes.c_double, _P)
