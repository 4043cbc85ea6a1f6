#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""pjrt-vhlo.py: VHLO portable artifacts (MLIR bytecode, tests/pjrt/vhlo/)
run through pjrt-run and the PJRT plugin. One function of an upstream
artifact at a time (pjrt-run --entry, the plugin's "entry" client option) on
each backend, compared with numpy on the same inputs; on cpu also with the
same function compiled from its StableHLO text (the results must be equal:
both forms go through one op mapping). Also the one-add artifact with a
@main as jaxlib would send it, and the refusals: an op the reader does not
map and an op version newer than VHLO's list, each named with the producer.

Needs Debian's /usr/bin/python3 with numpy (exit 77, skipped, without it).

Usage: pjrt-vhlo.py PJRT_RUN PLUGIN VHLO_DIR BACKEND[,BACKEND]
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

R = np.random.default_rng(7)


def f32(*shape, lo=-1.0, hi=1.0):
    return R.uniform(lo, hi, shape).astype(np.float32)


def sigmoid(x):
    return (1 / (1 + np.exp(-x))).astype(np.float32)


def conv_valid_nhwc(x, w):
    n, h, wd, c = x.shape
    kh, kw, _, o = w.shape
    y = np.zeros((n, h - kh + 1, wd - kw + 1, o), np.float64)
    for i in range(h - kh + 1):
        for j in range(wd - kw + 1):
            y[:, i, j, :] = np.tensordot(x[:, i:i + kh, j:j + kw, :], w, axes=([1, 2, 3], [0, 1, 2]))
    return y.astype(np.float32)


def cases():
    """(function, inputs, reference outputs) of stablehlo_legalize_to_vhlo.*"""
    a, b = f32(), f32()
    p, q = f32(lo=0.5, hi=2.0), f32(lo=0.5, hi=2.0)
    v16 = f32(16)
    m16x8 = f32(16, 8)
    x8, y8 = f32(8), f32(8)
    l3, r3 = f32(8, 8, 16), f32(8, 16, 8)
    cx, cw = f32(1, 8, 8, 207), f32(3, 3, 207, 16, lo=-0.1, hi=0.1)
    d1, d2 = f32(8, 16), f32(16, 8)
    i32 = np.array(-7, np.int32)
    yes = np.array(True)
    return [
        ('op_add', [a, b], [a + b]),
        ('op_subtract', [a, b], [a - b]),
        ('op_multiply', [a, b], [a * b]),
        ('op_divide', [p, q], [p / q]),
        ('op_maximum', [a, b], [np.maximum(a, b)]),
        ('op_minimum', [a, b], [np.minimum(a, b)]),
        ('op_negate', [a], [-a]),
        ('op_exponential', [a], [np.exp(a)]),
        ('op_log', [p], [np.log(p)]),
        ('op_tanh', [a], [np.tanh(a)]),
        ('op_logistic', [a], [sigmoid(a)]),
        ('op_sqrt', [p], [np.sqrt(p)]),
        ('op_rsqrt', [p], [(1 / np.sqrt(p)).astype(np.float32)]),
        ('op_broadcast_in_dim', [v16], [np.broadcast_to(v16, (16, 16)).copy()]),
        ('op_reshape', [v16], [v16.reshape(4, 4)]),
        ('op_transpose', [m16x8], [m16x8.T.copy()]),
        ('op_reduce', [v16, a], [np.float32(v16.sum() + a)]),
        ('op_constant', [a], [np.float32(0)]),
        ('op_convert', [i32], [np.float32(-7)]),
        ('op_compare', [a, a], [np.array(True)]),
        ('op_select', [yes, a, b], [a]),
        ('op_concatenate', [x8, y8], [np.concatenate([x8, y8])]),
        ('op_slice', [v16], [v16[0:4]]),
        ('op_iota', [], [np.arange(16, dtype=np.float32)]),
        ('op_dot_general', [l3, r3], [np.einsum('bik,bkj->bij', l3, r3)]),
        ('default_convolution', [cx, cw], [conv_valid_nhwc(cx, cw)]),
        ('op_dot', [d1, d2], [d1 @ d2]),
    ]


def run(pjrt_run, plugin, program, backend, inputs, tmp, entry=None):
    args = [pjrt_run, program, '--plugin', plugin, '--backend', backend, '--output-dir', tmp]
    if entry:
        args += ['--entry', entry]
    for i, x in enumerate(inputs):
        path = os.path.join(tmp, 'in%d.npy' % i)
        np.save(path, x)
        args += ['--input', path]
    env = dict(os.environ)
    if backend == 'sim':
        env['NPU_PARTITION'] = 'supported'
    return subprocess.run(args, capture_output=True, text=True, env=env)


def outputs(tmp, n):
    return [np.load(os.path.join(tmp, 'out%d.npy' % i)) for i in range(n)]


def main():
    if len(sys.argv) != 5:
        print(__doc__)
        return 2
    pjrt_run, plugin, vdir, backends = sys.argv[1:5]
    bad = 0
    text = os.path.join(vdir, 'stablehlo_legalize_to_vhlo.ops.mlir')
    for version in ('1_20_0', '0_9_0'):
        art = os.path.join(vdir, 'stablehlo_legalize_to_vhlo.%s.mlir.bc' % version)
        for fn, inputs, refs in cases():
            for backend in backends.split(','):
                if version != '1_20_0' and backend != 'cpu':
                    continue
                with tempfile.TemporaryDirectory() as tmp:
                    p = run(pjrt_run, plugin, art, backend, inputs, tmp, fn)
                    if p.returncode != 0:
                        print('FAIL %s @%s on %s: exit %d: %s' %
                              (version, fn, backend, p.returncode, p.stderr[-2000:]))
                        bad += 1
                        continue
                    outs = outputs(tmp, len(refs))
                    worst, tol, ok = 0.0, 0.0, True
                    for out, ref in zip(outs, refs):
                        ref = np.asarray(ref)
                        if out.shape != ref.shape or out.dtype != ref.dtype:
                            print('FAIL %s @%s on %s: %s %s, expected %s %s' %
                                  (version, fn, backend, out.dtype, out.shape, ref.dtype,
                                   ref.shape))
                            ok = False
                            continue
                        err = float(np.abs(out.astype(np.float64) - ref).max()) if ref.size else 0
                        scale = max(1.0, float(np.abs(ref).max())) if ref.size else 1.0
                        t = (1e-4 if backend == 'cpu' else 1e-2) * scale
                        worst, tol, ok = max(worst, err), max(tol, t), ok and err <= t
                    same = ''
                    if backend == 'cpu' and version == '1_20_0':  # bytecode == text
                        with tempfile.TemporaryDirectory() as tmp2:
                            p2 = run(pjrt_run, plugin, text, backend, inputs, tmp2, fn)
                            if p2.returncode != 0:
                                ok, same = False, ', text run failed: ' + p2.stderr[-500:]
                            else:
                                eq = all(np.array_equal(x, y)
                                         for x, y in zip(outs, outputs(tmp2, len(refs))))
                                ok, same = ok and eq, ', same as the text' if eq else \
                                    ', DIFFERS from the text'
                    print('%s %s @%s on %s: max abs error %.3g (tolerance %.3g)%s' %
                          ('ok  ' if ok else 'FAIL', version, fn, backend, worst, tol, same))
                    bad += not ok
    # the jaxlib shape: one module with @main
    x = f32(lo=-3, hi=3)
    for backend in backends.split(','):
        with tempfile.TemporaryDirectory() as tmp:
            p = run(pjrt_run, plugin, os.path.join(vdir, 'vhlo_emit_version_api.1_1_0.mlir.bc'),
                    backend, [x], tmp)
            ok = p.returncode == 0 and np.allclose(outputs(tmp, 1)[0], x + x, rtol=1e-2)
            print('%s vhlo_emit_version_api.1_1_0 @main on %s: x + x' %
                  ('ok  ' if ok else 'FAIL', backend))
            bad += not ok
    # refusals name the op, the VHLO op and the producer
    with tempfile.TemporaryDirectory() as tmp:
        for prog, entry, inputs, needles in [
            ('stablehlo_legalize_to_vhlo.1_20_0.mlir.bc', 'op_sort', [f32(16)],
             ["producer 'StableHLO_v1.20.0'", 'vhlo.sort_v1', "'stablehlo.sort' is not "
              "supported"]),
            ('invalid_vhlo_future.mlir.bc', None, [],
             ["producer 'StableHLO_v2.0.0'", "'vhlo.constant_v99' is not supported"]),
        ]:
            p = run(pjrt_run, plugin, os.path.join(vdir, prog), 'cpu', inputs, tmp, entry)
            ok = p.returncode != 0 and all(n in p.stderr for n in needles)
            print('%s %s refused: %r' % ('ok  ' if ok else 'FAIL', prog,
                                         p.stderr.strip()[-300:]))
            bad += not ok
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
