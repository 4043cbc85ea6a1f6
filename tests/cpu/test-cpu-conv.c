/* SPDX-License-Identifier: MIT */
/*
 * test-cpu-conv.c: Conv (1-D to 3-D, groups, depthwise, dilations, strides,
 * explicit pads and every auto_pad, bias, fused activation, fp16, fp64),
 * ConvTranspose (strides, pads, output_padding, output_shape, groups,
 * dilations), MaxPool (Indices in both storage orders, ceil_mode, dilations),
 * AveragePool (count_include_pad), the global pools, ConvInteger and
 * QLinearConv, against direct loops written here in double.
 */
#include "cpu-test-util.h"
#include "npu-test.h"

struct geo {
    int nsp;
    int64_t in[3], k[3], s[3], d[3], pb[3], pe[3], out[3];
};

/* the test's own reading of the ONNX padding rules */
static void
geo_resolve(struct geo *g, const char *auto_pad, bool ceil_mode)
{
    for (int i = 0; i < g->nsp; i++) {
        int64_t ext = (g->k[i] - 1) * g->d[i] + 1;
        if (auto_pad && strncmp(auto_pad, "SAME", 4) == 0) {
            g->out[i] = (g->in[i] + g->s[i] - 1) / g->s[i];
            int64_t tot = (g->out[i] - 1) * g->s[i] + ext - g->in[i];
            if (tot < 0)
                tot = 0;
            bool upper = !strcmp(auto_pad, "SAME_UPPER");
            g->pb[i] = upper ? tot / 2 : (tot + 1) / 2;
            g->pe[i] = tot - g->pb[i];
            continue;
        }
        if (auto_pad && !strcmp(auto_pad, "VALID"))
            g->pb[i] = g->pe[i] = 0;
        double o = (double)(g->in[i] + g->pb[i] + g->pe[i] - ext) / (double)g->s[i] + 1;
        g->out[i] = ceil_mode ? (int64_t)ceil(o) : (int64_t)floor(o);
        if (ceil_mode && (g->out[i] - 1) * g->s[i] >= g->in[i] + g->pb[i])
            g->out[i]--;
    }
}

static void
geo_attrs(const struct geo *g, struct alist *al, const char *auto_pad, int64_t *buf)
{
    int n = g->nsp;
    memcpy(buf, g->s, sizeof(int64_t) * (size_t)n);
    memcpy(buf + 4, g->d, sizeof(int64_t) * (size_t)n);
    memcpy(buf + 8, g->pb, sizeof(int64_t) * (size_t)n);
    memcpy(buf + 8 + n, g->pe, sizeof(int64_t) * (size_t)n);
    al_ints(al, "strides", buf, (size_t)n);
    al_ints(al, "dilations", buf + 4, (size_t)n);
    if (auto_pad)
        al_str(al, "auto_pad", auto_pad);
    else
        al_ints(al, "pads", buf + 8, 2 * (size_t)n);
}

/* spatial odometer helpers */
static int64_t
sp_numel(const int64_t *d, int n)
{
    int64_t p = 1;
    for (int i = 0; i < n; i++)
        p *= d[i];
    return p;
}

/* ---- Conv ---------------------------------------------------------------------------------- */

static void
check_conv(enum npu_dtype dt, int64_t N, int64_t C, int64_t M, int64_t G, struct geo g,
           const char *auto_pad, bool bias, const char *act)
{
    geo_resolve(&g, auto_pad, false);
    int nsp = g.nsp;
    int64_t xd[5] = {N, C}, wd[5] = {M, C / G}, yd[5] = {N, M};
    for (int i = 0; i < nsp; i++) {
        xd[2 + i] = g.in[i];
        wd[2 + i] = g.k[i];
        yd[2 + i] = g.out[i];
    }
    struct npu_tensor *x = tt_fill_rand(tt_new(dt, nsp + 2, xd), -1, 1);
    struct npu_tensor *w = tt_fill_rand(tt_new(dt, nsp + 2, wd), -1, 1);
    struct npu_tensor *b = bias ? tt_fill_rand(tt(dt, 1, D(M)), -1, 1) : NULL;
    struct npu_tensor *y = tt_new(dt, nsp + 2, yd);
    struct alist al = {0};
    int64_t buf[16];
    geo_attrs(&g, &al, auto_pad, buf);
    al_int(&al, "group", G);
    if (act)
        al_str(&al, "npu_act", act);
    if (act && !strcmp(act, "clip")) {
        al_float(&al, "npu_act_alpha", -0.25f);
        al_float(&al, "npu_act_beta", 0.5f);
    }
    struct npu_tensor *in[3] = {x, w, b}, *out[1] = {y};
    CHECK_EQ_INT(NPU_OK, run2(NPU_OP_CONV, &al, bias ? 3 : 2, in, 1, out));
    int64_t ip = sp_numel(g.in, nsp), op = sp_numel(g.out, nsp), kp = sp_numel(g.k, nsp);
    int64_t Cg = C / G, Mg = M / G;
    int bad = 0;
    for (int64_t n = 0; n < N; n++)
        for (int64_t m = 0; m < M; m++)
            for (int64_t o = 0; o < op; o++) {
                int64_t oi[3];
                tt_unravel(o, nsp, g.out, oi);
                double s = b ? tt_get(b, m) : 0, mag = fabs(s);
                for (int64_t c = 0; c < Cg; c++)
                    for (int64_t kk = 0; kk < kp; kk++) {
                        int64_t ki[3], off = 0;
                        tt_unravel(kk, nsp, g.k, ki);
                        bool inside = true;
                        for (int i = 0; i < nsp; i++) {
                            int64_t p = oi[i] * g.s[i] - g.pb[i] + ki[i] * g.d[i];
                            inside = inside && p >= 0 && p < g.in[i];
                            off = off * g.in[i] + p;
                        }
                        if (!inside)
                            continue;
                        double v = tt_get(x, (n * C + (m / Mg) * Cg + c) * ip + off) *
                                   tt_get(w, (m * Cg + c) * kp + kk);
                        s += v;
                        mag += fabs(v);
                    }
                if (act && !strcmp(act, "relu"))
                    s = s < 0 ? 0 : s;
                if (act && !strcmp(act, "clip"))
                    s = s < -0.25 ? -0.25 : s > 0.5 ? 0.5 : s;
                if (act && !strcmp(act, "silu")) {
                    s = s / (1 + exp(-s));
                    mag += 1e-6 / 2e-6; /* the activation's own error, a few ulp */
                }
                double got = tt_get(y, (n * M + m) * op + o);
                double tol = dt == NPU_DTYPE_FP16   ? 2e-3 * (mag + 1)
                             : dt == NPU_DTYPE_FP64 ? 1e-13 * mag
                                                    : 2e-6 * mag + 1e-30;
                if (!(fabs(got - s) <= tol)) {
                    if (bad++ < 3)
                        fprintf(stderr, "  conv n%lld m%lld o%lld: got %g want %g\n", (long long)n,
                                (long long)m, (long long)o, got, s);
                }
            }
    if (bad)
        fprintf(stderr, "Conv %s %dD C=%lld M=%lld G=%lld auto_pad=%s failed (%d)\n",
                npu_dtype_name(dt), nsp, (long long)C, (long long)M, (long long)G,
                auto_pad ? auto_pad : "-", bad);
    CHECK_EQ_INT(0, bad);
    tt_free(x), tt_free(w), tt_free(b), tt_free(y);
}

#define G1(i0, k0, s0, d0, p0, q0) ((struct geo){1, {i0}, {k0}, {s0}, {d0}, {p0}, {q0}, {0}})
#define G2(i0, i1, k0, k1, s0, s1, d0, d1, p0, p1, q0, q1)                                         \
    ((struct geo){2, {i0, i1}, {k0, k1}, {s0, s1}, {d0, d1}, {p0, p1}, {q0, q1}, {0}})

static void
test_conv(void)
{
    const enum npu_dtype f = NPU_DTYPE_FP32;
    /* 1x1 direct path, plain 3x3, strides, dilations, asymmetric pads, bias + relu */
    check_conv(f, 2, 8, 16, 1, G2(9, 7, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0), NULL, true, NULL);
    check_conv(f, 1, 3, 5, 1, G2(11, 13, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1), NULL, false, NULL);
    check_conv(f, 2, 4, 6, 1, G2(17, 10, 3, 2, 2, 3, 1, 1, 1, 0, 2, 1), NULL, true, "relu");
    check_conv(f, 1, 4, 4, 1, G2(15, 15, 3, 3, 1, 2, 2, 3, 2, 1, 0, 3), NULL, true, NULL);
    check_conv(f, 1, 3, 8, 1, G2(32, 32, 16, 16, 16, 16, 1, 1, 0, 0, 0, 0), NULL, true, NULL);
    /* groups and depthwise (with a channel multiplier) */
    check_conv(f, 2, 6, 9, 3, G2(8, 9, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1), NULL, true, NULL);
    check_conv(f, 1, 8, 8, 8, G2(12, 12, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1), NULL, true, "relu");
    check_conv(f, 2, 4, 8, 4, G2(9, 10, 5, 3, 1, 2, 2, 1, 2, 1, 2, 1), NULL, false, NULL);
    /* depthwise through the padded, phase-split buffer: strides 1-2, 3x3 and 5x5, narrow rows
     * (7, 14) and odd ones, a dilation, asymmetric pads, Clip and SiLU fused */
    check_conv(f, 1, 16, 16, 16, G2(14, 14, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1), NULL, true, "clip");
    check_conv(f, 2, 12, 12, 12, G2(7, 7, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1), NULL, true, "relu");
    check_conv(f, 1, 8, 8, 8, G2(17, 23, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1), NULL, true, "silu");
    check_conv(f, 1, 6, 6, 6, G2(15, 14, 5, 5, 2, 2, 1, 1, 2, 2, 2, 2), NULL, false, NULL);
    check_conv(f, 1, 4, 8, 4, G2(13, 11, 3, 5, 2, 1, 2, 1, 0, 2, 3, 1), NULL, true, NULL);
    /* 1x1 on a 7x7 plane with many output channels: the channels are cut into blocks */
    check_conv(f, 1, 40, 200, 1, G2(7, 7, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0), NULL, true, "relu");
    check_conv(f, 1, 24, 100, 1, G2(5, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1), NULL, true, NULL);
    /* auto_pad */
    static const char *aps[] = {"SAME_UPPER", "SAME_LOWER", "VALID"};
    for (int i = 0; i < 3; i++) {
        check_conv(f, 1, 2, 3, 1, G2(10, 7, 4, 3, 3, 2, 1, 1, 0, 0, 0, 0), aps[i], true, NULL);
        check_conv(f, 1, 2, 2, 2, G2(6, 9, 2, 5, 2, 1, 2, 1, 0, 0, 0, 0), aps[i], false, NULL);
    }
    /* 1-D and 3-D */
    check_conv(f, 2, 3, 4, 1, G1(25, 5, 2, 2, 3, 1), NULL, true, NULL);
    struct geo g3 = {3, {5, 6, 7}, {3, 2, 3}, {1, 2, 1}, {1, 1, 2}, {1, 0, 2}, {1, 1, 0}, {0}};
    check_conv(f, 1, 2, 3, 1, g3, NULL, true, NULL);
    /* a layer large enough for tiles over several threads, odd sizes */
    check_conv(f, 1, 32, 40, 1, G2(45, 47, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1), NULL, true, "relu");
    /* fp16 and fp64 */
    check_conv(NPU_DTYPE_FP16, 1, 4, 6, 2, G2(9, 9, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1), NULL, true,
               NULL);
    check_conv(NPU_DTYPE_FP64, 1, 4, 6, 2, G2(9, 9, 3, 3, 2, 1, 1, 2, 1, 1, 1, 1), NULL, true,
               NULL);
    /* mismatched W is refused */
    struct npu_tensor *x = tt(f, 4, D(1), D(3), D(5), D(5)), *w = tt(f, 4, D(2), D(2), D(3), D(3));
    struct npu_tensor *y = tt(f, 4, D(1), D(2), D(3), D(3)), *in[2] = {x, w}, *out[1] = {y};
    npu_log_set_level((enum npu_log_level) - 1);
    CHECK_EQ_INT(NPU_ERR_INVALID, run_op(tctx1, NPU_OP_CONV, NULL, 2, in, 1, out));
    npu_log_set_level(NPU_LOG_WARN);
    tt_free(x), tt_free(w), tt_free(y);
}

/* ---- ConvTranspose ------------------------------------------------------------------------- */

static void
check_convt(int64_t N, int64_t C, int64_t Mg, int64_t G, int nsp, const int64_t *in_sp,
            const int64_t *k, const int64_t *s, const int64_t *d, const int64_t *pads,
            const int64_t *opad, const int64_t *oshape, const char *auto_pad)
{
    int64_t pb[3] = {0}, out_sp[3];
    for (int i = 0; i < nsp; i++) {
        int64_t full = s[i] * (in_sp[i] - 1) + (opad ? opad[i] : 0) + (k[i] - 1) * d[i] + 1;
        if (oshape || auto_pad) {
            out_sp[i] = oshape ? oshape[i] : in_sp[i] * s[i];
            int64_t tot = full - out_sp[i];
            if (tot < 0)
                tot = 0;
            pb[i] = auto_pad && !strcmp(auto_pad, "SAME_UPPER") ? tot / 2 : tot - tot / 2;
        } else {
            pb[i] = pads ? pads[i] : 0;
            out_sp[i] = full - pb[i] - (pads ? pads[nsp + i] : 0);
        }
    }
    int64_t M = Mg * G;
    int64_t xd[5] = {N, C}, wd[5] = {C, Mg}, yd[5] = {N, M};
    for (int i = 0; i < nsp; i++) {
        xd[2 + i] = in_sp[i];
        wd[2 + i] = k[i];
        yd[2 + i] = out_sp[i];
    }
    struct npu_tensor *x = tt_fill_rand(tt_new(NPU_DTYPE_FP32, nsp + 2, xd), -1, 1);
    struct npu_tensor *w = tt_fill_rand(tt_new(NPU_DTYPE_FP32, nsp + 2, wd), -1, 1);
    struct npu_tensor *b = tt_fill_rand(tt(NPU_DTYPE_FP32, 1, D(M)), -1, 1);
    struct npu_tensor *y = tt_new(NPU_DTYPE_FP32, nsp + 2, yd);
    struct alist al = {0};
    al_ints(&al, "strides", s, (size_t)nsp);
    al_ints(&al, "dilations", d, (size_t)nsp);
    al_int(&al, "group", G);
    if (pads)
        al_ints(&al, "pads", pads, 2 * (size_t)nsp);
    if (opad)
        al_ints(&al, "output_padding", opad, (size_t)nsp);
    if (oshape)
        al_ints(&al, "output_shape", oshape, (size_t)nsp);
    if (auto_pad)
        al_str(&al, "auto_pad", auto_pad);
    struct npu_tensor *in[3] = {x, w, b}, *out[1] = {y};
    CHECK_EQ_INT(NPU_OK, run2(NPU_OP_CONV_TRANSPOSE, &al, 3, in, 1, out));
    int64_t ip = sp_numel(in_sp, nsp), op = sp_numel(out_sp, nsp), kp = sp_numel(k, nsp);
    int64_t Cg = C / G;
    double *ref = calloc((size_t)tt_n(y) + 1, sizeof(double));
    for (int64_t n = 0; n < N; n++)
        for (int64_t m = 0; m < M; m++)
            for (int64_t o = 0; o < op; o++)
                ref[(n * M + m) * op + o] = tt_get(b, m);
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t p = 0; p < ip; p++)
                for (int64_t kk = 0; kk < kp; kk++) {
                    int64_t pi[3], ki[3], off = 0;
                    tt_unravel(p, nsp, in_sp, pi);
                    tt_unravel(kk, nsp, k, ki);
                    bool inside = true;
                    for (int i = 0; i < nsp; i++) {
                        int64_t q = pi[i] * s[i] - pb[i] + ki[i] * d[i];
                        inside = inside && q >= 0 && q < out_sp[i];
                        off = off * out_sp[i] + q;
                    }
                    if (!inside)
                        continue;
                    for (int64_t mg = 0; mg < Mg; mg++) {
                        int64_t m = (c / Cg) * Mg + mg;
                        ref[(n * M + m) * op + off] +=
                            tt_get(x, (n * C + c) * ip + p) * tt_get(w, (c * Mg + mg) * kp + kk);
                    }
                }
    double err = tt_err(y, ref, 1e-5, 1e-5);
    if (!(err <= 1))
        fprintf(stderr, "ConvTranspose %dD C=%lld Mg=%lld G=%lld failed: %g\n", nsp, (long long)C,
                (long long)Mg, (long long)G, err);
    CHECK(err <= 1);
    free(ref);
    tt_free(x), tt_free(w), tt_free(b), tt_free(y);
}

static void
test_conv_transpose(void)
{
    int64_t in2[2] = {3, 4}, k3[2] = {3, 3}, s1[2] = {1, 1}, s2[2] = {2, 3}, d1[2] = {1, 1},
            d2[2] = {2, 1}, p[4] = {1, 0, 2, 1}, op[2] = {1, 2}, os[2] = {9, 13};
    check_convt(1, 2, 3, 1, 2, in2, k3, s1, d1, NULL, NULL, NULL, NULL);
    check_convt(2, 4, 2, 2, 2, in2, k3, s2, d1, p, NULL, NULL, NULL);
    check_convt(1, 3, 2, 1, 2, in2, k3, s2, d2, p, op, NULL, NULL);
    check_convt(1, 2, 2, 1, 2, in2, k3, s2, d1, NULL, NULL, os, NULL);
    check_convt(1, 2, 2, 1, 2, in2, k3, s2, d1, NULL, NULL, NULL, "SAME_UPPER");
    check_convt(1, 2, 2, 1, 2, in2, k3, s2, d1, NULL, NULL, NULL, "SAME_LOWER");
    int64_t in1[1] = {7}, k1[1] = {4}, s13[1] = {3}, d11[1] = {1};
    check_convt(2, 3, 5, 1, 1, in1, k1, s13, d11, NULL, NULL, NULL, NULL);
    int64_t in3[3] = {2, 3, 2}, kk3[3] = {2, 2, 3}, s3[3] = {2, 1, 2}, d3[3] = {1, 2, 1};
    check_convt(1, 2, 2, 2, 3, in3, kk3, s3, d3, NULL, NULL, NULL, NULL);
}

/* ---- pools --------------------------------------------------------------------------------- */

static void
check_pool(bool is_max, struct geo g, const char *auto_pad, bool ceil_mode, bool include_pad,
           bool indices, bool col_major, enum npu_dtype dt)
{
    geo_resolve(&g, auto_pad, ceil_mode);
    int nsp = g.nsp;
    const int64_t N = 2, C = 3;
    int64_t xd[5] = {N, C}, yd[5] = {N, C};
    for (int i = 0; i < nsp; i++) {
        xd[2 + i] = g.in[i];
        yd[2 + i] = g.out[i];
    }
    struct npu_tensor *x = tt_fill_rand(tt_new(dt, nsp + 2, xd), -100, 100);
    struct npu_tensor *y = tt_new(dt, nsp + 2, yd);
    struct npu_tensor *ind = indices ? tt_new(NPU_DTYPE_INT64, nsp + 2, yd) : NULL;
    struct alist al = {0};
    int64_t buf[16];
    geo_attrs(&g, &al, auto_pad, buf);
    al_ints(&al, "kernel_shape", g.k, (size_t)nsp);
    al_int(&al, "ceil_mode", ceil_mode);
    al_int(&al, "count_include_pad", include_pad);
    al_int(&al, "storage_order", col_major);
    struct npu_tensor *in[1] = {x}, *out[2] = {y, ind};
    CHECK_EQ_INT(NPU_OK, run2(is_max ? NPU_OP_MAX_POOL : NPU_OP_AVERAGE_POOL, &al, 1, in,
                              indices ? 2 : 1, out));
    int64_t ip = sp_numel(g.in, nsp), op = sp_numel(g.out, nsp), kp = sp_numel(g.k, nsp);
    int bad = 0;
    for (int64_t pl = 0; pl < N * C; pl++)
        for (int64_t o = 0; o < op; o++) {
            int64_t oi[3];
            tt_unravel(o, nsp, g.out, oi);
            double acc = is_max ? -INFINITY : 0;
            int64_t cnt = 0, cnt_pad = 0, best = -1;
            for (int64_t kk = 0; kk < kp; kk++) {
                int64_t ki[3], off = 0, cm = 0, mul = 1;
                tt_unravel(kk, nsp, g.k, ki);
                bool inside = true, in_pad = true;
                for (int i = 0; i < nsp; i++) {
                    int64_t p = oi[i] * g.s[i] - g.pb[i] + ki[i] * g.d[i];
                    inside = inside && p >= 0 && p < g.in[i];
                    in_pad = in_pad && p < g.in[i] + g.pe[i];
                    off = off * g.in[i] + p;
                    cm += p * mul;
                    mul *= g.in[i];
                }
                cnt_pad += in_pad;
                if (!inside)
                    continue;
                double v = tt_get(x, pl * ip + off);
                cnt++;
                if (is_max) {
                    if (v > acc) {
                        acc = v;
                        best = pl * ip + (col_major ? cm : off);
                    }
                } else {
                    acc += v;
                }
            }
            if (!is_max)
                acc /= (double)(include_pad ? cnt_pad : cnt);
            double got = tt_get(y, pl * op + o);
            double tol = dt == NPU_DTYPE_FP16 ? 0.1 : 1e-4;
            if (!(fabs(got - acc) <= tol) || (ind && tt_get(ind, pl * op + o) != best)) {
                if (bad++ < 3)
                    fprintf(stderr, "  pool plane %lld pos %lld: got %g want %g\n", (long long)pl,
                            (long long)o, got, acc);
            }
        }
    if (bad)
        fprintf(stderr, "%s %dD auto_pad=%s ceil=%d incl=%d failed\n",
                is_max ? "MaxPool" : "AveragePool", nsp, auto_pad ? auto_pad : "-", ceil_mode,
                include_pad);
    CHECK_EQ_INT(0, bad);
    tt_free(x), tt_free(y), tt_free(ind);
}

static void
test_pools(void)
{
    const enum npu_dtype f = NPU_DTYPE_FP32;
    for (int mx = 0; mx < 2; mx++) {
        check_pool(mx, G2(8, 9, 2, 2, 2, 2, 1, 1, 0, 0, 0, 0), NULL, false, false, false, false, f);
        check_pool(mx, G2(9, 10, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1), NULL, false, false, false, false,
                   f);
        check_pool(mx, G2(9, 10, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1), NULL, false, true, false, false, f);
        check_pool(mx, G2(10, 11, 3, 2, 2, 3, 1, 1, 0, 1, 1, 1), NULL, true, false, false, false,
                   f);
        check_pool(mx, G2(10, 11, 3, 2, 2, 3, 1, 1, 0, 1, 1, 1), NULL, true, true, false, false, f);
        check_pool(mx, G2(12, 12, 3, 3, 1, 1, 2, 2, 1, 1, 2, 2), NULL, false, true, false, false,
                   f);
        check_pool(mx, G2(7, 9, 3, 4, 2, 3, 1, 1, 0, 0, 0, 0), "SAME_UPPER", false, false, false,
                   false, f);
        check_pool(mx, G2(7, 9, 3, 4, 2, 3, 1, 1, 0, 0, 0, 0), "SAME_LOWER", false, true, false,
                   false, f);
        check_pool(mx, G2(7, 9, 3, 4, 2, 3, 1, 1, 0, 0, 0, 0), "VALID", false, false, false, false,
                   f);
        check_pool(mx, G1(20, 4, 3, 1, 2, 1), NULL, true, false, false, false, f);
        struct geo g3 = {3, {4, 5, 6}, {2, 3, 2}, {2, 1, 2}, {1, 1, 2}, {0, 1, 1}, {1, 1, 0}, {0}};
        check_pool(mx, g3, NULL, false, true, false, false, f);
        check_pool(mx, G2(9, 10, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1), NULL, false, false, false, false,
                   NPU_DTYPE_FP16);
    }
    /* MaxPool indices, row- and column-major; int8 */
    check_pool(true, G2(9, 8, 3, 2, 2, 2, 1, 1, 1, 0, 0, 1), NULL, false, false, true, false, f);
    check_pool(true, G2(9, 8, 3, 2, 2, 2, 1, 1, 1, 0, 0, 1), NULL, false, false, true, true, f);
    check_pool(true, G2(9, 8, 3, 2, 2, 2, 1, 1, 1, 0, 0, 1), NULL, false, false, false, false,
               NPU_DTYPE_INT8);

    /* global pools */
    struct npu_tensor *x = tt_fill_rand(tt(f, 4, D(2), D(3), D(7), D(9)), -5, 5);
    struct npu_tensor *y = tt(f, 4, D(2), D(3), D(1), D(1)), *in[1] = {x}, *out[1] = {y};
    for (int mx = 0; mx < 2; mx++) {
        CHECK_EQ_INT(NPU_OK, run2(mx ? NPU_OP_GLOBAL_MAX_POOL : NPU_OP_GLOBAL_AVERAGE_POOL, NULL, 1,
                                  in, 1, out));
        double worst = 0;
        for (int p = 0; p < 6; p++) {
            double acc = mx ? -INFINITY : 0;
            for (int i = 0; i < 63; i++)
                acc = mx ? fmax(acc, tt_get(x, p * 63 + i)) : acc + tt_get(x, p * 63 + i) / 63;
            worst = fmax(worst, fabs(tt_get(y, p) - acc));
        }
        CHECK(worst < 1e-6);
    }
    tt_free(x), tt_free(y);
}

/* ---- ConvInteger / QLinearConv ------------------------------------------------------------- */

static void
test_int_conv(void)
{
    const int64_t C = 4, M = 6, H = 7, W = 8;
    struct npu_tensor *x = tt_fill_rand(tt(NPU_DTYPE_UINT8, 4, D(1), D(C), D(H), D(W)), 0, 256);
    struct npu_tensor *w = tt_fill_rand(tt(NPU_DTYPE_INT8, 4, D(M), D(C), D(3), D(3)), -128, 128);
    struct npu_tensor *xz = tt(NPU_DTYPE_UINT8, 0),
                      *wz = tt_fill_rand(tt(NPU_DTYPE_INT8, 1, D(M)), -5, 5);
    tt_set(xz, 0, 17);
    struct npu_tensor *y = tt(NPU_DTYPE_INT32, 4, D(1), D(M), D(H), D(W));
    struct alist al = {0};
    int64_t pads[4] = {1, 1, 1, 1};
    al_ints(&al, "pads", pads, 4);
    struct npu_tensor *in[4] = {x, w, xz, wz}, *out[1] = {y};
    CHECK_EQ_INT(NPU_OK, run2(NPU_OP_CONV_INTEGER, &al, 4, in, 1, out));
    int bad = 0;
    int64_t *acc = calloc((size_t)(M * H * W), sizeof(int64_t));
    for (int64_t m = 0; m < M; m++)
        for (int64_t oh = 0; oh < H; oh++)
            for (int64_t ow = 0; ow < W; ow++) {
                int64_t s = 0;
                for (int64_t c = 0; c < C; c++)
                    for (int kh = 0; kh < 3; kh++)
                        for (int kw = 0; kw < 3; kw++) {
                            int64_t h = oh - 1 + kh, ww = ow - 1 + kw;
                            if (h < 0 || h >= H || ww < 0 || ww >= W)
                                continue; /* padding holds the zero point: contributes 0 */
                            s += ((int64_t)tt_get(x, (c * H + h) * W + ww) - 17) *
                                 ((int64_t)tt_get(w, ((m * C + c) * 3 + kh) * 3 + kw) -
                                  (int64_t)tt_get(wz, m));
                        }
                acc[(m * H + oh) * W + ow] = s;
                bad += tt_get(y, (m * H + oh) * W + ow) != (double)s;
            }
    CHECK_EQ_INT(0, bad);

    /* QLinearConv on the same data: per-channel w_scale, int32 bias, uint8 output */
    struct npu_tensor *xs = tt(NPU_DTYPE_FP32, 0), *ys = tt(NPU_DTYPE_FP32, 0),
                      *yz = tt(NPU_DTYPE_UINT8, 0);
    struct npu_tensor *ws = tt_fill_rand(tt(NPU_DTYPE_FP32, 1, D(M)), 0.001, 0.01);
    struct npu_tensor *bias = tt_fill_rand(tt(NPU_DTYPE_INT32, 1, D(M)), -2000, 2000);
    *(float *)xs->data = 0.02f;
    *(float *)ys->data = 0.4f;
    tt_set(yz, 0, 128);
    struct npu_tensor *q = tt(NPU_DTYPE_UINT8, 4, D(1), D(M), D(H), D(W));
    struct npu_tensor *qin[9] = {x, xs, xz, w, ws, wz, ys, yz, bias}, *qout[1] = {q};
    CHECK_EQ_INT(NPU_OK, run2(NPU_OP_QLINEAR_CONV, &al, 9, qin, 1, qout));
    bad = 0;
    for (int64_t m = 0; m < M; m++)
        for (int64_t e = 0; e < H * W; e++) {
            float scale = 0.02f * (float)tt_get(ws, m) / 0.4f;
            double v = rintf((float)(acc[m * H * W + e] + (int64_t)tt_get(bias, m)) * scale) + 128;
            v = fmin(fmax(v, 0), 255);
            bad += tt_get(q, m * H * W + e) != v;
        }
    CHECK_EQ_INT(0, bad);
    free(acc);
    tt_free(x), tt_free(w), tt_free(xz), tt_free(wz), tt_free(y), tt_free(xs), tt_free(ys);
    tt_free(yz), tt_free(ws), tt_free(bias), tt_free(q);
}

int
main(void)
{
    tctx_init();
    test_conv();
    test_conv_transpose();
    test_pools();
    test_int_conv();
    CHECK_EQ_INT(0, t_thread_mismatches);
    tctx_fini();
    return npu_test_done("test-cpu-conv");
}
