# SPDX-License-Identifier: MIT
"""OpenNPU for Python: run compiled models with numpy (opennpu.Model), list the
backends (opennpu.backends()), and compile PyTorch modules (opennpu.torch, which
imports torch only when used). A ctypes binding over libopennpu.so.0: see
docs/python.md."""
from ._model import Error, IoInfo, Model, RunStats, backends, timing_label

__all__ = ["Error", "IoInfo", "Model", "RunStats", "backends", "timing_label"]
__version__ = "0.1.0"
