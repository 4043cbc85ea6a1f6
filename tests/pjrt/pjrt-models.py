#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""pjrt-models.py: runs the StableHLO test programs (tests/pjrt/programs/*.mlir,
written by hand in the form `jax.jit(f).lower(...).as_text()` prints) through
pjrt-run and the PJRT plugin on the given backends and compares each result
with a numpy reference computed here from the same inputs (fixed seeds).
The jx_*.mlir programs (branch shloprobe) are written from what jax
0.4.1x-0.7 prints for common models and ops (each file says which form);
a NaN the reference has (jnp.take's fill value) must be NaN in the result.

Needs Debian's /usr/bin/python3 with numpy (exit 77, skipped, without it).

Usage: pjrt-models.py PJRT_RUN PLUGIN PROGRAM_DIR BACKEND[,BACKEND] [NAME...]
  On "sim" the NPU really computes: NPU_PARTITION=supported puts every node
  the NPU supports on it, and the tolerance is fp16's.
"""
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
except ImportError:
    print('SKIP: numpy is not available to this interpreter (use /usr/bin/python3)')
    sys.exit(77)


def rng(seed):
    return np.random.default_rng(seed)


def normal(r, shape, scale=0.5):
    return (r.standard_normal(shape) * scale).astype(np.float32)


def softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def layer_norm(x, g, b, eps=1e-6):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + eps) * g + b


def gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi).astype(np.float32) * (x + 0.044715 * x ** 3)))


def conv_nhwc(x, w, stride, pad):
    """x [N,H,W,C], w [KH,KW,C,O] (HWIO), pad ((t,b),(l,r))."""
    x = np.pad(x, ((0, 0), pad[0], pad[1], (0, 0)))
    n, h, wd, c = x.shape
    kh, kw, _, o = w.shape
    oh = (h - kh) // stride + 1
    ow = (wd - kw) // stride + 1
    y = np.zeros((n, oh, ow, o), np.float32)
    for i in range(oh):
        for j in range(ow):
            patch = x[:, i * stride:i * stride + kh, j * stride:j * stride + kw, :]
            y[:, i, j, :] = np.tensordot(patch, w, axes=([1, 2, 3], [0, 1, 2]))
    return y


def mha(x, wq, wk, wv, wo, heads, bq=0, bk=0, bv=0, bo=0):
    b, s, d = x.shape
    hd = d // heads
    q = (x @ wq + bq).reshape(b, s, heads, hd)
    k = (x @ wk + bk).reshape(b, s, heads, hd)
    v = (x @ wv + bv).reshape(b, s, heads, hd)
    sc = np.einsum('bqhd,bkhd->bhqk', q, k) * np.float32(1 / np.sqrt(hd))
    p = softmax(sc, -1)
    o = np.einsum('bhqk,bkhd->bqhd', p, v).reshape(b, s, d)
    return o @ wo + bo


def prog_mlp():
    r = rng(1)
    a = [normal(r, (16, 32)), normal(r, (32,)), normal(r, (32, 8)), normal(r, (8,)),
         normal(r, (4, 16), 1.0)]
    ref = np.tanh(np.maximum(a[4] @ a[0] + a[1], 0) @ a[2] + a[3])
    return a, [ref]


def prog_attention():
    r = rng(2)
    wk, wo, wq, wv = (normal(r, (32, 32), 0.2) for _ in range(4))
    x = normal(r, (1, 8, 32), 1.0)
    return [wk, wo, wq, wv, x], [mha(x, wq, wk, wv, wo, 4)]


def prog_conv_block():
    r = rng(3)
    w1, b1 = normal(r, (3, 3, 3, 8), 0.3), normal(r, (8,), 0.1)
    w2, b2 = normal(r, (3, 3, 8, 16), 0.2), normal(r, (16,), 0.1)
    x = normal(r, (1, 8, 8, 3), 1.0)
    h = np.maximum(conv_nhwc(x, w1, 1, ((1, 1), (1, 1))) + b1, 0)
    h = conv_nhwc(h, w2, 2, ((0, 1), (0, 1))) + b2
    h = h * (1 / (1 + np.exp(-h)))
    return [w1, b1, w2, b2, x], [h.mean(axis=(1, 2))]


def prog_siglip_layer():
    r = rng(4)
    d, f = 32, 64
    ln1_b, ln1_g = normal(r, (d,), 0.1), 1 + normal(r, (d,), 0.1)
    ln2_b, ln2_g = normal(r, (d,), 0.1), 1 + normal(r, (d,), 0.1)
    bq, bk, bv, bo = (normal(r, (d,), 0.05) for _ in range(4))
    wq, wk, wv, wo = (normal(r, (d, d), 0.15) for _ in range(4))
    b1, w1 = normal(r, (f,), 0.05), normal(r, (d, f), 0.15)
    b2, w2 = normal(r, (d,), 0.05), normal(r, (f, d), 0.15)
    x = normal(r, (1, 16, d), 1.0)
    h = x + mha(layer_norm(x, ln1_g, ln1_b), wq, wk, wv, wo, 4, bq, bk, bv, bo)
    y = h + gelu_tanh(layer_norm(h, ln2_g, ln2_b) @ w1 + b1) @ w2 + b2
    # argument order: the flattened params dict (keys sorted), then x
    args = [bk, wk, bo, wo, bq, wq, bv, wv, ln1_b, ln1_g, ln2_b, ln2_g, b1, w1, b2, w2, x]
    return args, [y.astype(np.float32)]


def prog_ops():
    r = rng(5)
    x = normal(r, (4, 6), 1.0)
    y = normal(r, (4, 6), 1.0)
    w = normal(r, (6, 5), 0.5)
    # custom_call @opennpu.matmul, then concatenate/slice/iota/compare/select
    mm = x @ w
    ax = x * x + 0.5
    e = np.exp(-ax) + np.log(ax) + np.sqrt(ax) - 1 / np.sqrt(ax) + 1 / (1 + np.exp(-y))
    e = np.minimum(e, y) * 0.5 - (-x)
    cat = np.concatenate([e, mm], axis=1)           # 4x11
    sl = cat[1:4, 2:11:3]                           # 3x3
    io = np.broadcast_to(np.arange(3, dtype=np.float32), (3, 3))
    sel = np.where(sl > io, sl, io.T)
    red = sel.max(axis=0)                           # 3
    t = np.transpose(cat).reshape(11, 2, 2).sum(axis=2)  # 11x2
    i32 = (x > 0).astype(np.int32).sum(axis=1).astype(np.int32)  # 4, via convert
    return [x, y, w], [sel, red, t.astype(np.float32), i32]


def prog_extras():
    import math
    r = rng(6)
    x = normal(r, (3, 8), 1.0)
    erf = np.vectorize(math.erf)
    gelu = (x * (1 + erf(x * np.float32(0.707106769))) * 0.5).astype(np.float32)
    return [x], [gelu, (np.abs(x) ** 1.5).min(axis=1).astype(np.float32)]


PROGRAMS = {
    'extras': prog_extras,
    'mlp': prog_mlp,
    'attention': prog_attention,
    'conv_block': prog_conv_block,
    'siglip_layer': prog_siglip_layer,
    'ops': prog_ops,
}


# ---- the shloprobe programs (jx_*.mlir): StableHLO as jax prints it ----------


def gelu_erf(x):
    import math
    return (x * (1 + np.vectorize(math.erf)(x / np.sqrt(2))) * 0.5).astype(np.float32)


def prog_jx_mlp_gelu():
    r = rng(11)
    b0, k0 = normal(r, (32,), 0.1), normal(r, (16, 32), 0.3)
    b1, k1 = normal(r, (8,), 0.1), normal(r, (32, 8), 0.3)
    x = normal(r, (4, 16), 1.0)
    return [b0, k0, b1, k1, x], [gelu_tanh(x @ k0 + b0) @ k1 + b1]


def prog_jx_cnn():
    r = rng(12)
    cb, ck = normal(r, (8,), 0.1), normal(r, (3, 3, 3, 8), 0.3)
    db, dk = normal(r, (10,), 0.1), normal(r, (8, 10), 0.3)
    x = normal(r, (2, 8, 8, 3), 1.0)
    h = np.maximum(conv_nhwc(x, ck, 1, ((1, 1), (1, 1))) + cb, 0)
    h = h.reshape(2, 4, 2, 4, 2, 8).max(axis=(2, 4))
    return [cb, ck, db, dk, x], [h.mean(axis=(1, 2)) @ dk + db]


def prog_jx_layernorm():
    r = rng(13)
    b, g = normal(r, (16,), 0.1), 1 + normal(r, (16,), 0.1)
    x = normal(r, (2, 5, 16), 1.0) + 0.5
    return [b, g, x], [layer_norm(x, g, b).astype(np.float32)]


def prog_jx_softmax():
    x = normal(rng(14), (2, 3, 7), 2.0)
    s = x - x.max(-1, keepdims=True)
    return [x], [softmax(x), s - np.log(np.exp(s).sum(-1, keepdims=True))]


def prog_jx_attention_causal():
    r = rng(15)
    x = normal(r, (1, 6, 16), 1.0)
    wq, wk, wv = (normal(r, (16, 2, 8), 0.3) for _ in range(3))
    wo = normal(r, (2, 8, 16), 0.3)
    q, k, v = (np.einsum('bsd,dhk->bshk', x, w) for w in (wq, wk, wv))
    s = np.einsum('bqhd,bkhd->bhqk', q, k) * np.float32(1 / np.sqrt(8))
    s = np.where(np.tril(np.ones((6, 6), bool)), s, np.float32(-1e9))
    o = np.einsum('bhqk,bkhd->bqhd', softmax(s), v)
    return [x, wq, wk, wv, wo], [x + np.einsum('bshk,hkd->bsd', o, wo)]


def prog_jx_embed():
    r = rng(16)
    table = normal(r, (50, 16), 1.0)
    ids = np.array([[3, 0, 49, -3, 60], [7, 7, -1, 12, -51]], np.int32)
    w = np.where(ids < 0, ids + 50, ids)
    ok = (w >= 0) & (w < 50)
    fill = np.where(ok[..., None], table[np.clip(w, 0, 49)], np.float32(np.nan))
    return [table, ids], [fill.astype(np.float32), table[np.clip(w, 0, 49)]]


def prog_jx_argmax():
    x = normal(rng(17), (4, 5), 1.0)
    x[2, 1] = x[2, 3] = x[2].max() + 1  # a tie: the lower index wins
    return [x], [x.argmax(1).astype(np.int32), x.max(1)]


def prog_jx_cumsum():
    x = normal(rng(18), (3, 6), 1.0)
    return [x], [np.cumsum(x, 1, dtype=np.float32), np.cumsum(x, 0, dtype=np.float32)]


def prog_jx_pool_legacy():
    r = rng(19)
    x, y = normal(r, (1, 5, 5, 2), 1.0), normal(r, (1, 4, 4, 2), 1.0)
    xp = np.pad(x, ((0, 0), (0, 1), (0, 1), (0, 0)), constant_values=-np.inf)
    mx = xp.reshape(1, 3, 2, 3, 2, 2).max(axis=(2, 4))
    return [x, y], [mx, y.reshape(1, 2, 2, 2, 2, 2).mean(axis=(2, 4))]


def prog_jx_activations():
    x = normal(rng(20), (3, 8), 1.5)
    elu = np.where(x > 0, x, np.expm1(np.minimum(x, 0)))
    softplus = np.logaddexp(x, 0)
    silu = x / (1 + np.exp(-x))
    cl = np.clip(np.sin(x) + np.cos(x), -0.5, 0.5)
    return [x], [a.astype(np.float32) for a in
                 (elu, softplus, silu, cl, np.floor(x * 2) + np.sign(x), np.round(x * 3))]


def prog_jx_types():
    r = rng(21)
    x = normal(r, (4, 4), 1.0).astype(np.float16)
    s = np.array(1.5, np.float32)
    n = np.array([3, -2, 0, 5], np.int32)
    m = np.array([True, False, True, True])
    u = np.array([0, 7, 4000000000, 12], np.uint32)
    y = (x.astype(np.float32) * s).astype(np.float16)
    return [x, s, n, m, u], [y, np.where(m, 2 * n, -n).astype(np.int32),
                             (u + np.uint32(1)).astype(np.float32),
                             np.float32(x.astype(np.float32).sum()), m & (n > 0)]


def prog_jx_dynamic_slice():
    x = normal(rng(22), (8, 4), 1.0)
    i = np.array(7, np.int32)  # the 2-row slice's start is clamped to 6
    return [x, i], [x[6:8], x[7], x[1:7:2]]


def prog_jx_composite():
    r = rng(23)
    x = normal(r, (3, 2), 1.0)
    s = np.array(0.7, np.float32)
    w = np.array([[0.5, -1.0, 0.25, 2.0], [1.5, 0.75, -0.5, -2.0]], np.float32)
    t = np.tanh((x @ w) * s)
    return [x, s], [np.maximum(t, 0) - np.minimum(t, 0), np.minimum(t, 0)]


def prog_jx_rope():
    x = normal(rng(24), (1, 6, 8), 1.0)
    f = np.array([1.0, 0.1, 0.01, 0.001], np.float32)
    a = np.arange(6, dtype=np.float32)[:, None] * f
    c, s = np.cos(a), np.sin(a)
    x1, x2 = x[..., :4], x[..., 4:]
    return [x], [np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], -1).astype(np.float32)]


def prog_jx_pad_reverse():
    x = normal(rng(25), (3, 4), 1.0)
    return [x], [np.pad(x, ((1, 2), (0, 1))), x[:, ::-1], x.T.reshape(2, 6)]


def prog_jx_shardy():
    r = rng(26)
    x, w = normal(r, (4, 8), 1.0), normal(r, (8, 3), 0.4)
    return [x, w], [np.tanh(x @ w)]


def prog_jx_logsumexp():
    x = normal(rng(27), (3, 5), 2.0)
    n = np.array([7, -7, 0, 3, -1, 11], np.int32)
    m = x.max(1, keepdims=True)
    return [x, n], [(np.log(np.exp(x - m).sum(1)) + m[:, 0]).astype(np.float32), np.mod(n, 3),
                    x.prod(1)]


def prog_jx_conv_transpose():
    r = rng(28)
    x = normal(r, (1, 4, 4, 2), 1.0)
    w1, w2, w3 = normal(r, (3, 3, 2, 3), 0.4), normal(r, (2, 2, 2, 3), 0.4), normal(r, (3, 3, 1, 2))
    xd = np.zeros((1, 7, 7, 2), np.float32)
    xd[:, ::2, ::2, :] = x  # lhs_dilate 2
    dw = np.concatenate([conv_nhwc(x[..., g:g + 1], w3[..., g:g + 1], 1, ((1, 1), (1, 1)))
                         for g in range(2)], -1)
    return [x, w1, w2, w3], [conv_nhwc(xd, w1, 1, ((2, 1), (2, 1))),
                             conv_nhwc(xd, w2, 1, ((1, 1), (1, 1))), dw]


def prog_jx_kv_update():
    r = rng(29)
    cache, new, q = normal(r, (1, 8, 4), 1.0), normal(r, (1, 2, 4), 1.0), normal(r, (1, 4), 1.0)
    x, row = normal(r, (6, 3), 1.0), normal(r, (3,), 1.0)
    pos = np.array(7, np.int32)  # clamped to 6
    out = cache.copy()
    out[:, 6:8] = new
    x2 = x.copy()
    x2[4] = row
    return [cache, new, pos, q, x, row], [out, np.einsum('bd,bsd->bs', q, out), x2]


def prog_jx_topk():
    x = normal(rng(30), (2, 10), 1.0)
    x[0, 4] = np.inf
    x[1, 7] = -np.inf
    x[1, 2] = x[1, 5] = 3.0  # a tie: the lower index first
    idx = np.argsort(-x, axis=1, kind='stable')[:, :3]
    return [x], [np.take_along_axis(x, idx, 1), idx.astype(np.int32), np.isinf(x),
                 np.isneginf(x)]


PROGRAMS.update({name[5:]: fn for name, fn in list(globals().items())
                 if name.startswith('prog_jx_')})


def compare(out, ref):
    """Maximum absolute error and the tolerance's scale (the largest finite
    |reference|); NaN where the reference has NaN (jnp.take's fill value) and
    an equal infinity count as equal, NaN elsewhere as an infinite error."""
    if not ref.size:
        return 0.0, 1.0
    o, r = out.astype(np.float64), ref.astype(np.float64)
    nan = np.isnan(r)
    if (np.isnan(o) != nan).any():
        return float('inf'), 1.0
    if nan.all():
        return 0.0, 1.0
    o, r = o[~nan], r[~nan]
    with np.errstate(invalid='ignore'):  # equal infinities are equal
        err = np.where(o == r, 0.0, np.abs(o - r))
    fin = np.abs(r[np.isfinite(r)])
    return float(err.max()), max(1.0, float(fin.max()) if fin.size else 1.0)


def run(pjrt_run, plugin, program, backend, inputs, tmp):
    args = [pjrt_run, program, '--plugin', plugin, '--backend', backend, '--output-dir', tmp]
    for i, a in enumerate(inputs):
        p = os.path.join(tmp, 'in%d.npy' % i)
        np.save(p, a)
        args += ['--input', p]
    env = dict(os.environ)
    if backend == 'sim':
        env['NPU_PARTITION'] = 'supported'
    p = subprocess.run(args, capture_output=True, text=True, env=env)
    return p


UNSUPPORTED = '''func.func public @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.cbrt %arg0 : tensor<4xf32>
  return %0 : tensor<4xf32>
}
'''


def check_errors(pjrt_run, plugin):
    """pjrt-run's failures: a non-zero status and the reason on stderr."""
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        prog = os.path.join(tmp, 'cbrt.mlir')
        with open(prog, 'w') as f:
            f.write(UNSUPPORTED)
        x = os.path.join(tmp, 'x.npy')
        np.save(x, np.ones(4, np.float32))
        cases = [
            ([prog, '--input', x], "'stablehlo.cbrt' is not supported"),
            ([os.path.join(tmp, 'missing.mlir'), '--input', x], 'cannot read'),
            ([prog, '--input', x, '--backend', 'tpu'], "unknown backend 'tpu'"),
        ]
        for args, needle in cases:
            p = subprocess.run([pjrt_run] + args + ['--plugin', plugin, '--output-dir', tmp],
                               capture_output=True, text=True)
            ok = p.returncode != 0 and needle in p.stderr
            print('%s pjrt-run %s: exit %d, %r' % ('ok  ' if ok else 'FAIL', ' '.join(args[:1]),
                                                   p.returncode, p.stderr.strip()[-200:]))
            bad += not ok
    return bad


def main():
    if len(sys.argv) < 5:
        print(__doc__)
        return 2
    pjrt_run, plugin, pdir, backends = sys.argv[1:5]
    names = sys.argv[5:] or sorted(PROGRAMS)
    bad = check_errors(pjrt_run, plugin)
    for name in names:
        inputs, refs = PROGRAMS[name]()
        for backend in backends.split(','):
            with tempfile.TemporaryDirectory() as tmp:
                for ext in ('.mlir', '.mlirbc'):
                    program = os.path.join(pdir, name + ext)
                    if not os.path.exists(program):
                        continue
                    p = run(pjrt_run, plugin, program, backend, inputs, tmp)
                    if p.returncode != 0:
                        print('FAIL %s%s on %s: pjrt-run exit %d\n%s' %
                              (name, ext, backend, p.returncode, p.stderr[-3000:]))
                        bad += 1
                        continue
                    for i, ref in enumerate(refs):
                        out = np.load(os.path.join(tmp, 'out%d.npy' % i))
                        ref = np.asarray(ref)
                        if out.shape != ref.shape or out.dtype != ref.dtype:
                            print('FAIL %s%s on %s: out%d is %s %s, expected %s %s' %
                                  (name, ext, backend, i, out.dtype, out.shape, ref.dtype,
                                   ref.shape))
                            bad += 1
                            continue
                        err, scale = compare(out, ref)
                        tol = (1e-4 if backend == 'cpu' else 1e-2) * scale
                        ok = err <= tol
                        print('%s %s%s on %s: out%d max abs error %.3g (tolerance %.3g)' %
                              ('ok  ' if ok else 'FAIL', name, ext, backend, i, err, tol))
                        bad += not ok
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
