/* SPDX-License-Identifier: MIT */
/*
 * test-cpu-norm.c: Softmax/LogSoftmax (every axis, negative axes), the
 * normalisations (LayerNormalization with broadcast Scale/B and its Mean and
 * InvStdDev outputs, BatchNormalization in inference and training mode,
 * InstanceNormalization), npu.Attention (masks bool and additive with
 * broadcasting, causal, Sq != Sk, Dv != D, broadcast batch dims, fully masked
 * rows), the reductions (keepdims, noop_with_empty_axes, empty sets, integer
 * types), ArgMax/ArgMin and CumSum, against double loops written here.
 */
#include "cpu-test-util.h"
#include "npu-test.h"

/* ---- Softmax ------------------------------------------------------------------------------- */

static void
check_softmax(bool lg, int nd, const int64_t *dims, int64_t axis, enum npu_dtype dt)
{
    struct npu_tensor *x = tt_fill_rand(tt_new(dt, nd, dims), -10, 10);
    struct npu_tensor *y = tt_new(dt, nd, dims);
    struct alist al = {0};
    al_int(&al, "axis", axis);
    struct npu_tensor *in[1] = {x}, *out[1] = {y};
    CHECK_EQ_INT(NPU_OK, run2(lg ? NPU_OP_LOG_SOFTMAX : NPU_OP_SOFTMAX, &al, 1, in, 1, out));
    int ax = (int)(axis < 0 ? axis + nd : axis);
    int64_t outer = 1, D = dims[ax], inner = 1;
    for (int i = 0; i < ax; i++)
        outer *= dims[i];
    for (int i = ax + 1; i < nd; i++)
        inner *= dims[i];
    double *ref = malloc(sizeof(double) * (size_t)(tt_n(x) + 1));
    for (int64_t o = 0; o < outer; o++)
        for (int64_t l = 0; l < inner; l++) {
            double m = -INFINITY, s = 0;
            for (int64_t d = 0; d < D; d++)
                m = fmax(m, tt_get(x, (o * D + d) * inner + l));
            for (int64_t d = 0; d < D; d++)
                s += exp(tt_get(x, (o * D + d) * inner + l) - m);
            for (int64_t d = 0; d < D; d++) {
                double v = tt_get(x, (o * D + d) * inner + l) - m;
                ref[(o * D + d) * inner + l] = lg ? v - log(s) : exp(v) / s;
            }
        }
    double tol = dt == NPU_DTYPE_FP16 ? 2e-3 : dt == NPU_DTYPE_FP64 ? 1e-13 : 2e-6;
    double err = tt_err(y, ref, lg ? tol : dt == NPU_DTYPE_FP16 ? 1e-4 : 1e-9, tol);
    if (!(err <= 1))
        fprintf(stderr, "%s axis %lld of %d-D %s: error %g\n", lg ? "LogSoftmax" : "Softmax",
                (long long)axis, nd, npu_dtype_name(dt), err);
    CHECK(err <= 1);
    free(ref);
    tt_free(x), tt_free(y);
}

static void
test_softmax(void)
{
    int64_t d3[3] = {3, 17, 129}, d4[4] = {2, 3, 4, 5};
    for (int lg = 0; lg < 2; lg++) {
        for (int64_t ax = -3; ax < 3; ax++)
            check_softmax(lg, 3, d3, ax, NPU_DTYPE_FP32);
        for (int64_t ax = 0; ax < 4; ax++)
            check_softmax(lg, 4, d4, ax, NPU_DTYPE_FP32);
        check_softmax(lg, 3, d3, -1, NPU_DTYPE_FP16);
        check_softmax(lg, 4, d4, 1, NPU_DTYPE_FP64);
        check_softmax(lg, 4, d4, -1, NPU_DTYPE_FP64);
    }
    int64_t big[2] = {12 * 196, 196};
    check_softmax(false, 2, big, 1, NPU_DTYPE_FP32);
    /* -inf entries and a row of equal values */
    int64_t d[2] = {2, 4};
    double v[8] = {-INFINITY, 0, 1, -INFINITY, 3, 3, 3, 3};
    struct npu_tensor *x = tt_vals(NPU_DTYPE_FP32, 2, d, v), *y = tt_new(NPU_DTYPE_FP32, 2, d);
    struct npu_tensor *in[1] = {x}, *out[1] = {y};
    CHECK_EQ_INT(NPU_OK, run2(NPU_OP_SOFTMAX, NULL, 1, in, 1, out));
    CHECK(tt_get(y, 0) == 0 && tt_get(y, 3) == 0);
    CHECK_NEAR(1 / (1 + exp(1.0)), tt_get(y, 1), 1e-7);
    CHECK_NEAR(0.25, tt_get(y, 5), 1e-7);
    tt_free(x), tt_free(y);
}

/* ---- LayerNormalization -------------------------------------------------------------------- */

static void
check_layernorm(int nd, const int64_t *dims, int64_t axis, int sr, const int64_t *sdims, bool bias,
                bool stats, enum npu_dtype dt)
{
    struct npu_tensor *x = tt_fill_rand(tt_new(dt, nd, dims), -3, 5);
    struct npu_tensor *sc = tt_fill_rand(tt_new(dt, sr, sdims), 0.5, 2);
    struct npu_tensor *b = bias ? tt_fill_rand(tt_new(dt, sr, sdims), -1, 1) : NULL;
    struct npu_tensor *y = tt_new(dt, nd, dims);
    int ax = (int)(axis < 0 ? axis + nd : axis);
    int64_t sd[NPU_MAX_DIMS];
    for (int i = 0; i < nd; i++)
        sd[i] = i < ax ? dims[i] : 1;
    struct npu_tensor *mean = stats ? tt_new(NPU_DTYPE_FP32, nd, sd) : NULL;
    struct npu_tensor *inv = stats ? tt_new(NPU_DTYPE_FP32, nd, sd) : NULL;
    struct alist al = {0};
    al_int(&al, "axis", axis);
    al_float(&al, "epsilon", 1e-3f);
    struct npu_tensor *in[3] = {x, sc, b}, *out[3] = {y, mean, inv};
    CHECK_EQ_INT(NPU_OK,
                 run2(NPU_OP_LAYER_NORMALIZATION, &al, bias ? 3 : 2, in, stats ? 3 : 1, out));
    int64_t rows = 1, n = 1;
    for (int i = 0; i < ax; i++)
        rows *= dims[i];
    for (int i = ax; i < nd; i++)
        n *= dims[i];
    int bad = 0;
    double tol = dt == NPU_DTYPE_FP16 ? 4e-3 : dt == NPU_DTYPE_FP64 ? 1e-12 : 2e-5;
    for (int64_t r = 0; r < rows; r++) {
        double m = 0, v = 0;
        for (int64_t i = 0; i < n; i++)
            m += tt_get(x, r * n + i);
        m /= (double)n;
        for (int64_t i = 0; i < n; i++)
            v += (tt_get(x, r * n + i) - m) * (tt_get(x, r * n + i) - m);
        double is = 1 / sqrt(v / (double)n + (double)1e-3f);
        for (int64_t i = 0; i < n; i++) {
            /* Scale and B broadcast (right-aligned) over the normalised shape */
            int64_t idx[NPU_MAX_DIMS];
            tt_unravel(i, nd - ax, dims + ax, idx);
            double s = tt_get(sc, tt_bcast_index(sc, nd - ax, idx));
            double bb = b ? tt_get(b, tt_bcast_index(b, nd - ax, idx)) : 0;
            double want = (tt_get(x, r * n + i) - m) * is * s + bb;
            if (!(fabs(tt_get(y, r * n + i) - want) <= tol * (1 + fabs(want))))
                bad++;
        }
        if (stats) {
            bad += !(fabs(tt_get(mean, r) - m) <= 1e-5 * (1 + fabs(m)));
            bad += !(fabs(tt_get(inv, r) - is) <= 1e-5 * is);
        }
    }
    if (bad)
        fprintf(stderr, "LayerNorm %d-D axis %lld %s: %d bad\n", nd, (long long)axis,
                npu_dtype_name(dt), bad);
    CHECK_EQ_INT(0, bad);
    tt_free(x), tt_free(sc), tt_free(b), tt_free(y), tt_free(mean), tt_free(inv);
}

static void
test_layernorm(void)
{
    int64_t d3[3] = {4, 7, 768}, s768[1] = {768}, d4[4] = {2, 3, 5, 6}, s56[2] = {5, 6},
            s16[2] = {1, 6}, s1[1] = {1}, s356[3] = {3, 5, 6};
    check_layernorm(3, d3, -1, 1, s768, true, true, NPU_DTYPE_FP32);
    check_layernorm(4, d4, 2, 2, s56, true, true, NPU_DTYPE_FP32);
    check_layernorm(4, d4, -2, 2, s16, true, false, NPU_DTYPE_FP32); /* broadcast Scale */
    check_layernorm(4, d4, 1, 1, s1, false, true, NPU_DTYPE_FP32);
    check_layernorm(4, d4, 1, 3, s356, true, false, NPU_DTYPE_FP32);
    check_layernorm(4, d4, 0, 2, s56, true, true, NPU_DTYPE_FP32);
    check_layernorm(3, d3, -1, 1, s768, true, false, NPU_DTYPE_FP16);
    check_layernorm(4, d4, 2, 2, s56, true, true, NPU_DTYPE_FP64);
    int64_t odd[2] = {3, 13}, s13[1] = {13};
    check_layernorm(2, odd, -1, 1, s13, true, true, NPU_DTYPE_FP32);
}

/* ---- BatchNormalization / InstanceNormalization -------------------------------------------- */

static void
test_batch_instance_norm(void)
{
    const int64_t N = 3, C = 4, H = 5, W = 6;
    struct npu_tensor *x = tt_fill_rand(tt(NPU_DTYPE_FP32, 4, D(N), D(C), D(H), D(W)), -3, 3);
    struct npu_tensor *sc = tt_fill_rand(tt(NPU_DTYPE_FP32, 1, D(C)), 0.5, 2);
    struct npu_tensor *bi = tt_fill_rand(tt(NPU_DTYPE_FP32, 1, D(C)), -1, 1);
    struct npu_tensor *mu = tt_fill_rand(tt(NPU_DTYPE_FP32, 1, D(C)), -1, 1);
    struct npu_tensor *var = tt_fill_rand(tt(NPU_DTYPE_FP32, 1, D(C)), 0.5, 2);
    struct npu_tensor *y = tt(NPU_DTYPE_FP32, 4, D(N), D(C), D(H), D(W));
    struct npu_tensor *rm = tt(NPU_DTYPE_FP32, 1, D(C)), *rv = tt(NPU_DTYPE_FP32, 1, D(C));
    struct npu_tensor *in[5] = {x, sc, bi, mu, var}, *out[3] = {y, rm, rv};
    struct alist al = {0};
    al_float(&al, "epsilon", 1e-4f);
    CHECK_EQ_INT(NPU_OK, run2(NPU_OP_BATCH_NORMALIZATION, &al, 5, in, 1, out));
    double worst = 0;
    for (int64_t e = 0; e < tt_n(x); e++) {
        int64_t c = (e / (H * W)) % C;
        double want =
            (tt_get(x, e) - tt_get(mu, c)) / sqrt(tt_get(var, c) + (double)1e-4f) * tt_get(sc, c) +
            tt_get(bi, c);
        worst = fmax(worst, fabs(tt_get(y, e) - want));
    }
    CHECK(worst < 1e-5);
    /* training mode: batch statistics, running averages with momentum */
    al_int(&al, "training_mode", 1);
    al_float(&al, "momentum", 0.8f);
    CHECK_EQ_INT(NPU_OK, run2(NPU_OP_BATCH_NORMALIZATION, &al, 5, in, 3, out));
    worst = 0;
    for (int64_t c = 0; c < C; c++) {
        double m = 0, v = 0;
        int64_t cnt = N * H * W;
        for (int64_t n = 0; n < N; n++)
            for (int64_t i = 0; i < H * W; i++)
                m += tt_get(x, (n * C + c) * H * W + i);
        m /= (double)cnt;
        for (int64_t n = 0; n < N; n++)
            for (int64_t i = 0; i < H * W; i++) {
                double d = tt_get(x, (n * C + c) * H * W + i) - m;
                v += d * d;
            }
        v /= (double)cnt;
        worst = fmax(worst,
                     fabs(tt_get(rm, c) - (tt_get(mu, c) * (double)0.8f + m * (1 - (double)0.8f))));
        worst = fmax(
            worst, fabs(tt_get(rv, c) - (tt_get(var, c) * (double)0.8f + v * (1 - (double)0.8f))));
        for (int64_t n = 0; n < N; n++)
            for (int64_t i = 0; i < H * W; i++) {
                int64_t e = (n * C + c) * H * W + i;
                double want =
                    (tt_get(x, e) - m) / sqrt(v + (double)1e-4f) * tt_get(sc, c) + tt_get(bi, c);
                worst = fmax(worst, fabs(tt_get(y, e) - want));
            }
    }
    CHECK(worst < 1e-5);
    /* InstanceNormalization: per (n, c) plane */
    struct npu_tensor *iin[3] = {x, sc, bi};
    out[0] = y;
    struct alist ial = {0};
    al_float(&ial, "epsilon", 1e-5f);
    CHECK_EQ_INT(NPU_OK, run2(NPU_OP_INSTANCE_NORMALIZATION, &ial, 3, iin, 1, out));
    worst = 0;
    for (int64_t p = 0; p < N * C; p++) {
        double m = 0, v = 0;
        for (int64_t i = 0; i < H * W; i++)
            m += tt_get(x, p * H * W + i) / (double)(H * W);
        for (int64_t i = 0; i < H * W; i++)
            v += pow(tt_get(x, p * H * W + i) - m, 2) / (double)(H * W);
        for (int64_t i = 0; i < H * W; i++) {
            double want =
                (tt_get(x, p * H * W + i) - m) / sqrt(v + (double)1e-5f) * tt_get(sc, p % C) +
                tt_get(bi, p % C);
            worst = fmax(worst, fabs(tt_get(y, p * H * W + i) - want));
        }
    }
    CHECK(worst < 1e-5);
    tt_free(x), tt_free(sc), tt_free(bi), tt_free(mu), tt_free(var), tt_free(y), tt_free(rm);
    tt_free(rv);
}

/* ---- npu.Attention ------------------------------------------------------------------------- */

static void
check_attention(int lead, const int64_t *ql, const int64_t *kl, int64_t Sq, int64_t Sk, int64_t Dk,
                int64_t Dv, int mr, const int64_t *md, bool mbool, bool causal, float scale,
                enum npu_dtype dt)
{
    int64_t qd[6], kd[6], vd[6], yd[6];
    int64_t L[4];
    for (int i = 0; i < lead; i++) {
        qd[i] = ql[i];
        kd[i] = vd[i] = kl[i];
        L[i] = ql[i] == 1 ? kl[i] : ql[i];
        yd[i] = L[i];
    }
    qd[lead] = Sq, qd[lead + 1] = Dk;
    kd[lead] = Sk, kd[lead + 1] = Dk;
    vd[lead] = Sk, vd[lead + 1] = Dv;
    yd[lead] = Sq, yd[lead + 1] = Dv;
    struct npu_tensor *q = tt_fill_rand(tt_new(dt, lead + 2, qd), -1, 1);
    struct npu_tensor *k = tt_fill_rand(tt_new(dt, lead + 2, kd), -1, 1);
    struct npu_tensor *v = tt_fill_rand(tt_new(dt, lead + 2, vd), -1, 1);
    struct npu_tensor *y = tt_new(dt, lead + 2, yd);
    struct npu_tensor *m = mr > 0 ? tt_new(mbool ? NPU_DTYPE_BOOL : dt, mr, md) : NULL;
    if (m)
        tt_fill_rand(m, mbool ? 0 : -3, mbool ? 1.7 : 1); /* bool: ~40% masked */
    struct alist al = {0};
    if (scale > 0)
        al_float(&al, "scale", scale);
    if (causal)
        al_int(&al, "is_causal", 1);
    struct npu_tensor *in[4] = {q, k, v, m}, *out[1] = {y};
    CHECK_EQ_INT(NPU_OK, run2(NPU_OP_FUSED_ATTENTION, &al, m ? 4 : 3, in, 1, out));
    double sc = scale > 0 ? scale : 1 / sqrt((double)Dk);
    int64_t batch = 1;
    for (int i = 0; i < lead; i++)
        batch *= L[i];
    int bad = 0;
    double *s = malloc(sizeof(double) * (size_t)Sk);
    for (int64_t b = 0; b < batch; b++) {
        int64_t bi[4], qo = 0, ko = 0;
        tt_unravel(b, lead, L, bi);
        for (int i = 0; i < lead; i++) {
            qo = qo * ql[i] + (ql[i] == 1 ? 0 : bi[i]);
            ko = ko * kl[i] + (kl[i] == 1 ? 0 : bi[i]);
        }
        for (int64_t i = 0; i < Sq; i++) {
            double mx = -INFINITY;
            for (int64_t j = 0; j < Sk; j++) {
                double a = 0;
                for (int64_t d = 0; d < Dk; d++)
                    a += tt_get(q, (qo * Sq + i) * Dk + d) * tt_get(k, (ko * Sk + j) * Dk + d);
                a *= sc;
                if (m) {
                    int64_t idx[6];
                    memcpy(idx, bi, sizeof(int64_t) * (size_t)lead);
                    idx[lead] = i, idx[lead + 1] = j;
                    double mv = tt_get(m, tt_bcast_index(m, lead + 2, idx));
                    a = mbool ? (mv ? a : -INFINITY) : a + mv;
                }
                if (causal && j > i)
                    a = -INFINITY;
                s[j] = a;
                mx = fmax(mx, a);
            }
            double sum = 0;
            for (int64_t j = 0; j < Sk; j++)
                sum += s[j] = mx == -INFINITY ? 0 : exp(s[j] - mx);
            for (int64_t d = 0; d < Dv; d++) {
                double o = 0;
                for (int64_t j = 0; j < Sk; j++)
                    o += sum > 0 ? s[j] / sum * tt_get(v, (ko * Sk + j) * Dv + d) : 0;
                double got = tt_get(y, (b * Sq + i) * Dv + d);
                double tol = dt == NPU_DTYPE_FP16 ? 4e-3 : 2e-6;
                if (!(fabs(got - o) <= tol)) {
                    if (bad++ < 3)
                        fprintf(stderr, "  attention b%lld i%lld d%lld: got %g want %g\n",
                                (long long)b, (long long)i, (long long)d, got, o);
                }
            }
        }
    }
    free(s);
    if (bad)
        fprintf(stderr, "Attention Sq=%lld Sk=%lld D=%lld Dv=%lld mask=%d causal=%d failed\n",
                (long long)Sq, (long long)Sk, (long long)Dk, (long long)Dv, mr, causal);
    CHECK_EQ_INT(0, bad);
    tt_free(q), tt_free(k), tt_free(v), tt_free(y), tt_free(m);
}

static void
test_attention(void)
{
    const enum npu_dtype f = NPU_DTYPE_FP32;
    int64_t l12[2] = {1, 12}, l1[2] = {2, 3}, l2[2] = {2, 1}, l3[2] = {1, 3};
    check_attention(2, l12, l12, 196, 196, 64, 64, 0, NULL, false, false, 0, f);
    check_attention(2, l1, l1, 37, 50, 16, 24, 0, NULL, false, false, 0.3f, f);
    check_attention(2, l2, l3, 33, 65, 8, 8, 0, NULL, false, true, 0, f); /* broadcast batch */
    check_attention(2, l1, l1, 40, 40, 8, 8, 0, NULL, false, true, 0, f); /* causal */
    check_attention(2, l1, l1, 7, 12, 8, 8, 0, NULL, false, true, 0, f);  /* causal, Sq < Sk */
    /* more query rows than one task of the packed path takes (256), Sk and Dv off the panel */
    check_attention(2, l1, l1, 300, 70, 16, 20, 0, NULL, false, true, 0, f);
    int64_t m2[2] = {33, 45}, m4[4] = {2, 1, 1, 45}, mq[3] = {3, 33, 1};
    check_attention(2, l1, l1, 33, 45, 8, 5, 2, m2, false, false, 0, f); /* additive */
    check_attention(2, l1, l1, 33, 45, 8, 5, 4, m4, true, false, 0, f);  /* bool, padding */
    check_attention(2, l1, l1, 33, 45, 8, 5, 3, mq, true, true, 0, f);   /* bool + causal */
    int64_t none[2] = {1, 45};
    check_attention(2, l1, l1, 33, 45, 8, 5, 2, none, true, false, 0, f);
    int64_t m17[2] = {17, 29};
    check_attention(2, l1, l1, 17, 29, 16, 8, 2, m17, false, false, 0, NPU_DTYPE_FP16);
    check_attention(0, NULL, NULL, 65, 1, 4, 3, 0, NULL, false, false, 0, f);
    /* a fully masked row yields zeros */
    struct npu_tensor *q = tt_fill_rand(tt(f, 2, D(2), D(4)), -1, 1),
                      *k = tt_fill_rand(tt(f, 2, D(3), D(4)), -1, 1);
    struct npu_tensor *v = tt_fill_rand(tt(f, 2, D(3), D(2)), -1, 1),
                      *m = tt(NPU_DTYPE_BOOL, 2, D(2), D(3));
    struct npu_tensor *y = tt(f, 2, D(2), D(2));
    tt_set(m, 3, 1);
    struct npu_tensor *in[4] = {q, k, v, m}, *out[1] = {y};
    CHECK_EQ_INT(NPU_OK, run2(NPU_OP_FUSED_ATTENTION, NULL, 4, in, 1, out));
    CHECK(tt_get(y, 0) == 0 && tt_get(y, 1) == 0);
    CHECK_NEAR(tt_get(v, 0), tt_get(y, 2), 1e-7);
    tt_free(q), tt_free(k), tt_free(v), tt_free(m), tt_free(y);
}

/* ---- reductions ---------------------------------------------------------------------------- */

enum { R_SUM, R_MEAN, R_MAX, R_MIN, R_PROD, R_L2, R_SUMSQ };
static const enum npu_op red_ops[] = {
    NPU_OP_REDUCE_SUM,  NPU_OP_REDUCE_MEAN, NPU_OP_REDUCE_MAX,       NPU_OP_REDUCE_MIN,
    NPU_OP_REDUCE_PROD, NPU_OP_REDUCE_L2,   NPU_OP_REDUCE_SUM_SQUARE};

static void
check_reduce(int kind, enum npu_dtype dt, int nd, const int64_t *dims, int na, const int64_t *axes,
             bool keep, bool noop)
{
    struct npu_tensor *x = tt_new(dt, nd, dims);
    tt_fill_rand(x, npu_dtype_is_float(dt) ? (kind == R_PROD ? 0.8 : -5) : 0,
                 kind == R_PROD ? (npu_dtype_is_float(dt) ? 1.25 : 3) : 5);
    bool red[8] = {false};
    for (int i = 0; i < na; i++)
        red[axes[i] < 0 ? axes[i] + nd : axes[i]] = true;
    if (na == 0 && !noop)
        for (int i = 0; i < nd; i++)
            red[i] = true;
    int64_t od[8];
    int on = 0;
    for (int i = 0; i < nd; i++)
        if (!red[i])
            od[on++] = dims[i];
        else if (keep)
            od[on++] = 1;
    struct npu_tensor *y = tt_new(dt, on, od);
    struct npu_tensor *ax = na ? tt_ints(na, axes) : NULL;
    struct alist al = {0};
    al_int(&al, "keepdims", keep);
    al_int(&al, "noop_with_empty_axes", noop);
    struct npu_tensor *in[2] = {x, ax}, *out[1] = {y};
    CHECK_EQ_INT(NPU_OK, run2(red_ops[kind], &al, ax ? 2 : 1, in, 1, out));
    int64_t ny = tt_n(y);
    double *ref = malloc(sizeof(double) * (size_t)(ny + 1));
    for (int64_t o = 0; o < ny; o++)
        ref[o] = kind == R_MAX ? -INFINITY : kind == R_MIN ? INFINITY : kind == R_PROD ? 1 : 0;
    int64_t *cnt = calloc((size_t)(ny + 1), sizeof(int64_t));
    for (int64_t e = 0; e < tt_n(x); e++) {
        int64_t idx[8], o = 0;
        tt_unravel(e, nd, dims, idx);
        for (int i = 0; i < nd; i++)
            if (!red[i])
                o = o * dims[i] + idx[i];
        double v = tt_get(x, e);
        cnt[o]++;
        switch (kind) {
        case R_SUM:
        case R_MEAN: ref[o] += v; break;
        case R_MAX: ref[o] = fmax(ref[o], v); break;
        case R_MIN: ref[o] = fmin(ref[o], v); break;
        case R_PROD: ref[o] *= v; break;
        default: ref[o] += v * v; break;
        }
    }
    for (int64_t o = 0; o < ny; o++) {
        if (kind == R_MEAN)
            ref[o] = cnt[o] ? ref[o] / (double)cnt[o] : npu_dtype_is_float(dt) ? NAN : 0;
        if (noop && na == 0) {
            /* "the output tensor would be equivalent to input tensor" (ONNX), for every op */
            ref[o] = tt_get(x, o);
            continue;
        }
        if (kind == R_L2)
            ref[o] = sqrt(ref[o]);
        if (!npu_dtype_is_float(dt)) {
            ref[o] = trunc(ref[o]);
            if (isinf(ref[o]))
                ref[o] = ref[o] < 0 ? -2147483648.0 : 2147483647.0; /* int32 tests only */
        }
        if (dt == NPU_DTYPE_FP16)
            ref[o] = tt_f16_to(tt_f16_from(ref[o]));
    }
    double err = tt_err(y, ref, 1e-6, dt == NPU_DTYPE_FP16 ? 1e-3 : 1e-6);
    if (!(err <= 1))
        fprintf(stderr, "%s %s %d-D %d axes keep=%d: error %g\n", npu_op_name(red_ops[kind]),
                npu_dtype_name(dt), nd, na, keep, err);
    CHECK(err <= 1);
    free(ref);
    free(cnt);
    tt_free(x), tt_free(y), tt_free(ax);
}

static void
test_reduce(void)
{
    int64_t d4[4] = {3, 4, 5, 6}, big[2] = {64, 1000}, e0[3] = {2, 0, 3};
    int64_t a_last[1] = {-1}, a_mid[1] = {1}, a_two[2] = {0, 2}, a_hw[2] = {2, 3},
            a_neg[2] = {-3, -1}, a_first[1] = {0};
    for (int k = 0; k < 7; k++) {
        for (int keep = 0; keep < 2; keep++) {
            check_reduce(k, NPU_DTYPE_FP32, 4, d4, 1, a_last, keep, false);
            check_reduce(k, NPU_DTYPE_FP32, 4, d4, 1, a_mid, keep, false);
            check_reduce(k, NPU_DTYPE_FP32, 4, d4, 2, a_two, keep, false);
            check_reduce(k, NPU_DTYPE_FP32, 4, d4, 2, a_hw, keep, false);
            check_reduce(k, NPU_DTYPE_FP32, 4, d4, 2, a_neg, keep, false);
            check_reduce(k, NPU_DTYPE_FP32, 4, d4, 0, NULL, keep, false); /* all axes */
        }
        check_reduce(k, NPU_DTYPE_FP32, 4, d4, 0, NULL, true, true); /* noop */
        check_reduce(k, NPU_DTYPE_FP64, 4, d4, 2, a_hw, true, false);
        check_reduce(k, NPU_DTYPE_FP16, 4, d4, 1, a_mid, false, false);
        check_reduce(k, NPU_DTYPE_INT32, 4, d4, 2, a_two, true, false);
        check_reduce(k, NPU_DTYPE_FP32, 2, big, 1, a_last, false, false);
        check_reduce(k, NPU_DTYPE_FP32, 2, big, 1, a_first, false, false);
        check_reduce(k, NPU_DTYPE_FP32, 3, e0, 1, a_mid, true, false); /* empty set */
        check_reduce(k, NPU_DTYPE_INT32, 3, e0, 1, a_mid, false, false);
    }
    check_reduce(R_MAX, NPU_DTYPE_INT8, 4, d4, 1, a_mid, true, false);
    check_reduce(R_MIN, NPU_DTYPE_UINT8, 4, d4, 1, a_last, true, false);
    /* the old attribute form of axes still works */
    struct npu_tensor *x = tt_fill_rand(tt(NPU_DTYPE_FP32, 2, D(3), D(4)), -1, 1);
    struct npu_tensor *y = tt(NPU_DTYPE_FP32, 1, D(3)), *in[1] = {x}, *out[1] = {y};
    struct alist al = {0};
    int64_t one = 1;
    al_ints(&al, "axes", &one, 1);
    al_int(&al, "keepdims", 0);
    CHECK_EQ_INT(NPU_OK, run2(NPU_OP_REDUCE_SUM, &al, 1, in, 1, out));
    CHECK_NEAR(tt_get(x, 0) + tt_get(x, 1) + tt_get(x, 2) + tt_get(x, 3), tt_get(y, 0), 1e-6);
    tt_free(x), tt_free(y);
}

static void
test_arg_cumsum(void)
{
    /* ArgMax/ArgMin with ties: first or last index */
    int64_t d[2] = {3, 4};
    double v[12] = {1, 5, 5, 2, 7, 7, 7, 7, -1, -3, -3, 0};
    struct npu_tensor *x = tt_vals(NPU_DTYPE_FP32, 2, d, v);
    struct npu_tensor *y = tt(NPU_DTYPE_INT64, 2, D(3), D(1)), *in[1] = {x}, *out[1] = {y};
    for (int last = 0; last < 2; last++)
        for (int mx = 0; mx < 2; mx++) {
            struct alist al = {0};
            al_int(&al, "axis", -1);
            al_int(&al, "select_last_index", last);
            CHECK_EQ_INT(NPU_OK, run2(mx ? NPU_OP_ARGMAX : NPU_OP_ARGMIN, &al, 1, in, 1, out));
            static const double want[2][2][3] = {{{0, 0, 1}, {1, 0, 3}}, {{0, 3, 2}, {2, 3, 3}}};
            for (int r = 0; r < 3; r++)
                CHECK_EQ_INT(want[last][mx][r], tt_get(y, r));
        }
    struct npu_tensor *y0 = tt(NPU_DTYPE_INT64, 1, D(4));
    struct alist al0 = {0};
    al_int(&al0, "keepdims", 0);
    out[0] = y0;
    CHECK_EQ_INT(NPU_OK, run2(NPU_OP_ARGMAX, &al0, 1, in, 1, out));
    CHECK(tt_get(y0, 0) == 1 && tt_get(y0, 1) == 1 && tt_get(y0, 3) == 1);
    tt_free(x), tt_free(y), tt_free(y0);

    /* CumSum: exclusive / reverse, negative axis, int64 */
    for (int excl = 0; excl < 2; excl++)
        for (int rev = 0; rev < 2; rev++) {
            struct npu_tensor *c =
                tt_fill_rand(tt(NPU_DTYPE_INT64, 3, D(2), D(5), D(3)), -100, 100);
            struct npu_tensor *cy = tt(NPU_DTYPE_INT64, 3, D(2), D(5), D(3));
            int64_t axv = -2;
            struct npu_tensor *ax = tt_ints(1, &axv);
            ax->ndim = 0;
            struct alist al = {0};
            al_int(&al, "exclusive", excl);
            al_int(&al, "reverse", rev);
            struct npu_tensor *cin[2] = {c, ax}, *cout[1] = {cy};
            CHECK_EQ_INT(NPU_OK, run2(NPU_OP_CUMSUM, &al, 2, cin, 1, cout));
            int bad = 0;
            for (int o = 0; o < 2; o++)
                for (int l = 0; l < 3; l++)
                    for (int i = 0; i < 5; i++) {
                        double s = 0;
                        for (int j = 0; j < 5; j++) {
                            bool take = rev ? (excl ? j > i : j >= i) : (excl ? j < i : j <= i);
                            if (take)
                                s += tt_get(c, (o * 5 + j) * 3 + l);
                        }
                        bad += tt_get(cy, (o * 5 + i) * 3 + l) != s;
                    }
            CHECK_EQ_INT(0, bad);
            tt_free(c), tt_free(cy), tt_free(ax);
        }
}

int
main(void)
{
    tctx_init();
    test_softmax();
    test_layernorm();
    test_batch_instance_norm();
    test_attention();
    test_reduce();
    test_arg_cumsum();
    CHECK_EQ_INT(0, t_thread_mismatches);
    tctx_fini();
    return npu_test_done("test-cpu-norm");
}
