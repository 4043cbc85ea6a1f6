#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""opennpu.torch.compile against eager torch (suite 'python', run with Debian's
/usr/bin/python3, which has torch 1.13 and torchvision 0.14).

  test_torch.py models cpu|sim [vision|blocks]
                                 torchvision resnet18, mobilenet_v3_small and a small
                                 vit_b_16-architecture VisionTransformer with random
                                 weights, a GPT-2 block, HF-style attention with an
                                 additive mask, a UNet-style decoder, a functional/
                                 method-heavy module, nn.MultiheadAttention
  test_torch.py vit_b16          torchvision vit_b_16 at 224 px on cpu and sim (slow)
  test_torch.py errors           data-dependent control flow, an unsupported op
                                 (error and fallback="cpu"), wrong example inputs

Tolerances: fp32 on cpu (max |diff| <= 1e-4 of the output's largest magnitude),
the simulator computes in fp16 (<= 2e-2 of it). Exit 77 (skip) without torch.
"""
import math
import os
import sys

if os.environ.get("OPENNPU_TEST_SKIP"):
    print("SKIP: " + os.environ["OPENNPU_TEST_SKIP"])
    sys.exit(77)
import time
import warnings

try:
    import numpy as np  # noqa: F401
    import torch
    import torch.nn as nn
except ImportError as e:
    print("SKIP: %s (run with /usr/bin/python3, which has torch and numpy)" % e)
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import opennpu  # noqa: E402
import opennpu.torch as ot  # noqa: E402
import torch_models as tm  # noqa: E402

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def compare(name, module, inputs, backend, rel_tol, expect_tracer=None, **kw):
    """Runs the compiled module against eager torch (on sim under the suite's evidence
    allow-list, NPU_SIM_EVIDENCE=T)."""
    module.eval()
    torch.manual_seed(1)
    t0 = time.time()
    cm = ot.compile(module, inputs, backend=backend,
                    partition="supported" if backend == "sim" else None, **kw)
    t1 = time.time()
    with torch.no_grad():
        ref = module(*inputs)
    got = cm(*inputs)
    refs = ref if isinstance(ref, (tuple, list)) else (ref,)
    gots = got if isinstance(got, (tuple, list)) else (got,)
    check(len(refs) == len(gots), "%s: %d outputs, eager %d" % (name, len(gots), len(refs)))
    worst = 0.0
    for r, g in zip(refs, gots):
        check(isinstance(g, torch.Tensor), "%s: output is a %s" % (name, type(g).__name__))
        check(tuple(g.shape) == tuple(r.shape), "%s: shape %s, eager %s" %
              (name, tuple(g.shape), tuple(r.shape)))
        scale = max(r.abs().max().item(), 1e-6)
        err = (g.float() - r.float()).abs().max().item() / scale
        worst = max(worst, err)
    check(worst <= rel_tol, "%s on %s: max |diff| / max |eager| = %.3g > %.3g" %
          (name, backend, worst, rel_tol))
    if expect_tracer:
        check(cm.tracer == expect_tracer, "%s: traced by %s, expected %s" %
              (name, cm.tracer, expect_tracer))
    check(not cm.cpu_nodes, "%s: nodes ran in torch: %s" % (name, cm.cpu_nodes))
    if backend == "sim":
        st = cm.stats
        check(st is not None and st.submits > 0 and st.npu_modeled_s > 0,
              "%s: no NPU work on sim (%s)" % (name, st))
        check(st is not None and st.npu_time_label.startswith("modeled (timing model v"),
              "%s: NPU time label %r" % (name, st and st.npu_time_label))
    print("ok %-22s %-4s %-8s rel err %.2e  compile %.2fs run %.2fs  %s" % (
        name, backend, cm.tracer, worst, t1 - t0, time.time() - t1, cm.stats))
    return cm


def reinit_linears(m, std=0.2):
    """torchvision zero-initialises ViT's head and gives MobileNet's classifier tiny
    weights: outputs would be ~0 (and below fp16's range)."""
    g = torch.Generator().manual_seed(3)
    for mod in m.modules():
        if isinstance(mod, nn.Linear):
            with torch.no_grad():
                mod.weight.copy_(torch.randn(mod.weight.shape, generator=g) * std /
                                 math.sqrt(mod.in_features) * 4)
    return m


def models(backend, group):
    if group in ("all", "vision"):
        vision_models(backend)
    if group in ("all", "blocks"):
        block_models(backend)


def vision_models(backend):
    import importlib.util
    tol = 1e-4 if backend == "cpu" else 2e-2
    torch.manual_seed(0)
    if importlib.util.find_spec("torchvision") is None:
        print("SKIP: torchvision is not installed (python3-torchvision)")
        sys.exit(77)
    import torchvision
    compare("resnet18", torchvision.models.resnet18(), (torch.randn(1, 3, 64, 64),),
            backend, tol, "fx")
    mnet = reinit_linears(torchvision.models.mobilenet_v3_small())
    compare("mobilenet_v3_small", mnet, (torch.randn(1, 3, 64, 64),), backend, tol, "fx")
    # the same network as make_fx's ATen-level graph (convolution, hardswish, ...)
    compare("mobilenet_v3_small/aten", mnet, (torch.randn(1, 3, 64, 64),), backend, tol,
            "make_fx", trace="make_fx")
    # vit_b_16's architecture (VisionTransformer: conv patchify, class token, encoder
    # blocks with nn.MultiheadAttention) at a small width/depth (vit_b_16 itself at
    # 224 px: suite 'slow'); traced both ways: the ATen graph decomposes attention
    vit = torchvision.models.VisionTransformer(image_size=32, patch_size=16, num_layers=2,
                                               num_heads=4, hidden_dim=64, mlp_dim=128,
                                               num_classes=10)
    vit = reinit_linears(vit)
    compare("vit_b_16-arch", vit, (torch.randn(1, 3, 32, 32),), backend, tol, "fx")
    compare("vit_b_16-arch/aten", vit, (torch.randn(1, 3, 32, 32),), backend, tol,
            "make_fx", trace="make_fx")


def block_models(backend):
    tol = 1e-4 if backend == "cpu" else 2e-2
    torch.manual_seed(0)
    compare("gpt2_block", tm.GPT2Block(), (torch.randn(1, 16, 64),), backend, tol, "make_fx")
    mask = torch.ones(2, 12, dtype=torch.int64)
    mask[1, 9:] = 0
    compare("hf_attention_mask", tm.HFSelfAttention(), (torch.randn(2, 12, 64), mask), backend,
            tol)
    compare("unet_decoder", tm.UNetDecoder(),
            (torch.randn(1, 32, 4, 4), torch.randn(1, 16, 8, 8), torch.randn(1, 8, 16, 16),
             torch.randn(1, 4, 32, 32)), backend, tol, "fx")
    compare("functional_mix", tm.FunctionalMix(),
            (torch.randint(0, 50, (2, 8)), torch.randn(2, 64)), backend, tol)
    pad = torch.zeros(2, 6, dtype=torch.bool)
    pad[0, 4:] = True
    compare("multihead_attention", tm.MHAModel(), (torch.randn(2, 6, 32), pad), backend, tol,
            "fx")


def vit_b16():
    """torchvision's vit_b_16 itself (86 M parameters, 224 px): suite 'slow'."""
    import importlib.util
    if importlib.util.find_spec("torchvision") is None:
        print("SKIP: torchvision is not installed (python3-torchvision)")
        sys.exit(77)
    import torchvision
    torch.manual_seed(0)
    m = reinit_linears(torchvision.models.vit_b_16())
    x = torch.randn(1, 3, 224, 224)
    compare("vit_b_16", m, (x,), "cpu", 1e-4, "fx")
    compare("vit_b_16", m, (x,), "sim", 2e-2, "fx")


def expect_error(what, exc, fn, *needles):
    try:
        fn()
    except exc as e:
        msg = str(e)
        for n in needles:
            check(n in msg, "%s: message lacks %r: %s" % (what, n, msg))
        print("ok error %-28s %s" % (what, msg.split("\n")[0][:150]))
        return msg
    except Exception as e:  # noqa: BLE001
        check(False, "%s: raised %s (%s), expected %s" % (what, type(e).__name__, e,
                                                          exc.__name__))
        return None
    check(False, "%s: no error" % what)
    return None


class DataDependent(nn.Module):
    def __init__(self):
        super().__init__()
        self.l = nn.Linear(8, 8)

    def forward(self, x):
        y = self.l(x)
        if y.sum() > 0:
            return y.relu()
        return y


class Unsupported(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(8, 8), nn.Linear(8, 4)

    def forward(self, x):
        y = self.a(x)
        y = torch.sort(y, dim=-1)[0]
        return self.b(y).relu()


class UnsupportedWithConsts(nn.Module):
    """Unsupported nodes that take a parameter and a size computed at trace time."""

    def __init__(self):
        super().__init__()
        self.a = nn.Linear(8, 8)
        self.p = nn.Parameter(torch.rand(8) + 0.5)

    def forward(self, x):
        y = torch.fmod(self.a(x), self.p)
        return torch.logcumsumexp(y, dim=y.dim() - 1) * 2


class InplaceView(nn.Module):
    def forward(self, x):
        y = x * 2
        y[:, 0].add_(1)
        return y


def errors():
    x = torch.randn(2, 8)
    # fx would convert the write into a copy and return y unchanged
    expect_error("in-place op on a view", ot.UnsupportedError,
                 lambda: ot.compile(InplaceView(), (x,), backend="cpu", trace="fx"),
                 "add_", "in-place op on a view", "test_torch.py:")
    # make_fx's circular padding: copy_ into slices of new_empty, read through the
    # empty tensor (it gave that tensor's uninitialised memory)
    circ = nn.Conv2d(2, 2, 3, padding=1, padding_mode="circular").eval()
    expect_error("make_fx write through a view", ot.UnsupportedError,
                 lambda: ot.compile(circ, (torch.randn(1, 2, 5, 5),), backend="cpu",
                                    trace="make_fx"), "copy_", "in-place op on a view")
    m = DataDependent().eval()
    msg = expect_error("data-dependent control flow", ot.TraceError,
                       lambda: ot.compile(m, (x,), backend="cpu"), "DataDependent")
    check(msg is not None and "test_torch.py" in msg and "if y.sum() > 0" in msg,
          "control flow: the message names the source line: %s" % msg)
    u = Unsupported().eval()
    msg = expect_error("unsupported op", ot.UnsupportedError,
                       lambda: ot.compile(u, (x,), backend="cpu"), "sort",
                       "fallback='cpu'")
    check(msg is not None and "torch.sort(y, dim=-1)" in msg and "test_torch.py:" in msg,
          "unsupported op: the message names the source line: %s" % msg)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        cm = ot.compile(u, (x,), backend="cpu", fallback="cpu")
    said = [str(i.message) for i in w if "run in torch" in str(i.message)]
    # torch.sort and the getitem that takes its (values, indices) tuple
    check(len(said) == 1 and "2 node(s) run in torch" in said[0] and
          "2 compiled part(s)" in said[0] and "no conversion for sort" in said[0],
          "fallback warning: %s" % said)
    check(cm.cpu_nodes == ["sort", "getitem"] and len(cm.models) == 2,
          "fallback: %d cpu nodes, %d parts" % (len(cm.cpu_nodes), len(cm.models)))
    with torch.no_grad():
        err = (cm(x) - u(x)).abs().max().item()
    check(err < 1e-5, "fallback result differs by %g" % err)
    print("ok fallback='cpu': %s, %d part(s), diff %.1e" % (cm.cpu_nodes, len(cm.models), err))
    uc = UnsupportedWithConsts().eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cmc = ot.compile(uc, (x,), backend="cpu", fallback="cpu")
    with torch.no_grad():
        errc = (cmc(x) - uc(x)).abs().max().item()
    check(cmc.cpu_nodes == ["fmod", "logcumsumexp"] and errc < 1e-5,
          "fallback with parameters and sizes: %s, diff %g" % (cmc.cpu_nodes, errc))
    lin = nn.Linear(8, 4).eval()
    expect_error("wrong example shape", ValueError,
                 lambda: ot.compile(lin, (torch.randn(2, 7),), backend="cpu"),
                 "example inputs do not fit", "Linear")
    expect_error("too few example inputs", ValueError,
                 lambda: ot.compile(tm.HFSelfAttention().eval(), (torch.randn(1, 4, 64),),
                                    backend="cpu"), "example inputs do not fit")
    expect_error("example not a tensor", TypeError,
                 lambda: ot.compile(lin, ([1.0] * 8,), backend="cpu"), "not a tensor")
    cm = ot.compile(lin, (torch.randn(2, 8),), backend="cpu")
    expect_error("run with another shape", ValueError, lambda: cm(torch.randn(3, 8)),
                 "compiled for (2, 8)")
    expect_error("bad fallback", ValueError,
                 lambda: ot.compile(lin, (x,), fallback="gpu"), "fallback")
    expect_error("bad option", TypeError,
                 lambda: ot.compile(lin, (x,), backend="cpu", opt_level=3), "opt_level")
    expect_error("bad backend", opennpu.Error,
                 lambda: ot.compile(lin, (x,), backend="tpu"), "unknown backend 'tpu'")
    bn = nn.BatchNorm1d(8)  # left in training mode
    expect_error("training-mode BatchNorm", ot.UnsupportedError,
                 lambda: ot.compile(nn.Sequential(bn), (x,), backend="cpu"), "eval()")
    # the compile cache: the same module compiles once
    import tempfile
    cache = tempfile.mkdtemp(prefix="opennpu-cache-")
    g = tm.GPT2Block().eval()
    xg = torch.randn(1, 16, 64)
    c1 = ot.compile(g, (xg,), backend="sim", cache_dir=cache)
    c2 = ot.compile(g, (xg,), backend="sim", cache_dir=cache)
    check(not c1.models[0].from_cache and c2.models[0].from_cache and
          torch.equal(c1(xg), c2(xg)), "compile cache: the second compile is a hit (%s, %s)" %
          (c1.models[0].from_cache, c2.models[0].from_cache))
    import shutil
    shutil.rmtree(cache)
    # parameters are read at compile time: a recompile picks up new weights
    lin2 = nn.Linear(8, 4).eval()
    cm1 = ot.compile(lin2, (x,), backend="cpu")
    with torch.no_grad():
        lin2.weight.add_(1.0)
    check((cm1(x) - lin2(x)).abs().max().item() > 0.1, "weights are copied at compile time")
    cm2 = ot.compile(lin2, (x,), backend="cpu")
    check((cm2(x) - lin2(x)).abs().max().item() < 1e-5, "a recompile takes the new weights")


def main():
    what = sys.argv[1] if len(sys.argv) > 1 else "models"
    if what == "models":
        models(sys.argv[2] if len(sys.argv) > 2 else "cpu",
               sys.argv[3] if len(sys.argv) > 3 else "all")
    elif what == "errors":
        errors()
    elif what == "vit_b16":
        vit_b16()
    else:
        print("usage: test_torch.py models cpu|sim [vision|blocks] | errors | vit_b16")
        return 2
    if failures:
        print("%d failure(s)" % len(failures))
        return 1
    print("all passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
