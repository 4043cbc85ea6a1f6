/* SPDX-License-Identifier: MIT */
/*
 * test-cpu-gemm.c: MatMul (1-D operands, batch broadcasting, odd sizes, K = 0,
 * bias and fused activations, fp16/fp64/int), Gemm (transposes, alpha/beta,
 * every C broadcast), Einsum forms, MatMulInteger and QLinearMatMul, each
 * against a naive double loop written here. The fp32 cases run twice: with
 * OpenBLAS (when built with it) and with our own blocked kernel.
 */
#include "../../core/cpu/npu-cpu-internal.h"
#include "cpu-test-util.h"
#include "npu-test.h"

/* |got - ref| <= tol * sum|a_k b_k| per element (fp32 accumulation of K products) */
static bool
close_to(const struct npu_tensor *got, const double *ref, const double *mag, double tol)
{
    int bad = 0;
    for (int64_t i = 0; i < tt_n(got); i++) {
        double g = tt_get(got, i);
        if (!(fabs(g - ref[i]) <= tol * mag[i] + 1e-30)) {
            if (bad++ < 3)
                fprintf(stderr, "  element %lld: got %.9g want %.9g (tol %.3g)\n", (long long)i, g,
                        ref[i], tol * mag[i]);
        }
    }
    return bad == 0;
}

static double
act_ref(const char *act, double x, double a, double b)
{
    if (!act)
        return x;
    if (!strcmp(act, "relu"))
        return x < 0 ? 0 : x;
    if (!strcmp(act, "leaky_relu"))
        return x < 0 ? a * x : x;
    if (!strcmp(act, "clip"))
        return fmin(fmax(x, a), b);
    if (!strcmp(act, "sigmoid"))
        return 1 / (1 + exp(-x));
    if (!strcmp(act, "tanh"))
        return tanh(x);
    if (!strcmp(act, "gelu"))
        return 0.5 * x * erfc(-x / sqrt(2.0));
    if (!strcmp(act, "gelu_tanh"))
        return x / (1 + exp(-2 * sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
    if (!strcmp(act, "silu"))
        return x / (1 + exp(-x));
    if (!strcmp(act, "hard_swish"))
        return x * fmin(1, fmax(0, x / 6 + 0.5));
    if (!strcmp(act, "hard_sigmoid"))
        return fmin(1, fmax(0, a * x + b));
    return NAN;
}

/* ---- MatMul ------------------------------------------------------------------------------- */

/* a [.., M, K] or [K]; b [.., K, N] or [K]; numpy semantics */
static void
check_matmul(enum npu_dtype dt, int na, const int64_t *ad, int nb, const int64_t *bd, bool bias,
             const char *act, double tol)
{
    struct npu_tensor *a = tt_fill_rand(tt_new(dt, na, ad), -1, 1);
    struct npu_tensor *b = tt_fill_rand(tt_new(dt, nb, bd), -1, 1);
    if (!npu_dtype_is_float(dt)) {
        bool uns = dt == NPU_DTYPE_UINT32 || dt == NPU_DTYPE_UINT64;
        tt_fill_rand(a, uns ? 0 : -50, 50);
        tt_fill_rand(b, uns ? 0 : -50, 50);
    }
    int64_t M = na >= 2 ? ad[na - 2] : 1, K = ad[na - 1], N = nb >= 2 ? bd[nb - 1] : 1;
    int abr = na > 2 ? na - 2 : 0, bbr = nb > 2 ? nb - 2 : 0, br = abr > bbr ? abr : bbr;
    int64_t yd[NPU_MAX_DIMS];
    int yr = 0;
    for (int d = 0; d < br; d++) {
        int ia = d - (br - abr), ib = d - (br - bbr);
        int64_t x = ia >= 0 ? ad[ia] : 1, z = ib >= 0 ? bd[ib] : 1;
        yd[yr++] = x == 1 ? z : x;
    }
    int64_t batch = 1;
    for (int d = 0; d < yr; d++)
        batch *= yd[d];
    if (na >= 2)
        yd[yr++] = M;
    if (nb >= 2)
        yd[yr++] = N;
    struct npu_tensor *y = tt_new(dt, yr, yd);
    struct npu_tensor *bt = bias ? tt_fill_rand(tt(NPU_DTYPE_FP32, 1, D(N)), -1, 1) : NULL;
    if (bt && dt == NPU_DTYPE_FP16) {
        struct npu_tensor *h = tt(NPU_DTYPE_FP16, 1, D(N));
        for (int64_t i = 0; i < N; i++)
            tt_set(h, i, tt_get(bt, i));
        tt_free(bt);
        bt = h;
    }
    struct alist al = {0};
    if (act) {
        al_str(&al, "npu_act", act);
        if (!strcmp(act, "clip")) {
            al_float(&al, "npu_act_alpha", -0.5f);
            al_float(&al, "npu_act_beta", 0.75f);
        }
    }
    double aa = !act ? 0 : !strcmp(act, "clip") ? -0.5 : !strcmp(act, "leaky_relu") ? 0.01 : 0.2;
    double ab = !act ? 0 : !strcmp(act, "clip") ? 0.75 : 0.5;
    struct npu_tensor *in[3] = {a, b, bt}, *out[1] = {y};
    CHECK_EQ_INT(NPU_OK, run2(NPU_OP_MATMUL, &al, bias ? 3 : 2, in, 1, out));
    int64_t n = tt_n(y);
    double *ref = calloc((size_t)n + 1, sizeof(double)),
           *mag = calloc((size_t)n + 1, sizeof(double));
    int64_t bidx[NPU_MAX_DIMS];
    for (int64_t t = 0; t < batch; t++) {
        tt_unravel(t, br, yd, bidx);
        /* operand batch offsets with broadcasting */
        int64_t ao = 0, bo = 0;
        for (int d = 0; d < abr; d++)
            ao = ao * ad[d] + (ad[d] == 1 ? 0 : bidx[d + br - abr]);
        for (int d = 0; d < bbr; d++)
            bo = bo * bd[d] + (bd[d] == 1 ? 0 : bidx[d + br - bbr]);
        ao *= M * K;
        bo *= K * N;
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                double s = 0, m = 0;
                for (int64_t k = 0; k < K; k++) {
                    double p = tt_get(a, ao + i * K + k) * tt_get(b, bo + k * N + j);
                    s += p;
                    m += fabs(p);
                }
                if (bt) {
                    s += tt_get(bt, j);
                    m += fabs(tt_get(bt, j));
                }
                int64_t e = (t * M + i) * N + j;
                ref[e] = act_ref(act, s, aa, ab);
                mag[e] = m + fabs(ref[e]) + (act ? 1e-6 : 0);
            }
    }
    bool ok;
    if (!npu_dtype_is_float(dt)) {
        /* exact in the integer type (values stay far from overflow) */
        ok = true;
        for (int64_t e = 0; e < n; e++)
            ok = ok && tt_get(y, e) == ref[e];
    } else {
        ok = close_to(y, ref, mag, tol);
    }
    if (!ok)
        fprintf(stderr, "MatMul %s [%d-D x %d-D] M=%lld K=%lld N=%lld bias=%d act=%s failed\n",
                npu_dtype_name(dt), na, nb, (long long)M, (long long)K, (long long)N, bias,
                act ? act : "-");
    CHECK(ok);
    free(ref);
    free(mag);
    tt_free(a), tt_free(b), tt_free(y), tt_free(bt);
}

static void
test_matmul(void)
{
    const double t32 = 2e-6, t16 = 2e-3;
    static const int64_t sizes[] = {1, 2, 5, 16, 17, 63, 130};
    for (size_t i = 0; i < NPU_ARRAY_SIZE(sizes); i++)
        for (size_t j = 0; j < NPU_ARRAY_SIZE(sizes); j += 2)
            for (size_t k = 0; k < NPU_ARRAY_SIZE(sizes); k += 3) {
                int64_t ad[2] = {sizes[i], sizes[k]}, bd[2] = {sizes[k], sizes[j]};
                check_matmul(NPU_DTYPE_FP32, 2, ad, 2, bd, false, NULL, t32);
            }
    /* 1-D operands */
    int64_t v7[1] = {7}, m73[2] = {7, 3}, m47[2] = {4, 7}, b273[3] = {2, 7, 3};
    check_matmul(NPU_DTYPE_FP32, 1, v7, 1, v7, false, NULL, t32);
    check_matmul(NPU_DTYPE_FP32, 1, v7, 2, m73, false, NULL, t32);
    check_matmul(NPU_DTYPE_FP32, 2, m47, 1, v7, false, NULL, t32);
    check_matmul(NPU_DTYPE_FP32, 1, v7, 3, b273, false, NULL, t32);
    /* batches: folded into M (B 2-D), broadcast both ways, 4-D */
    int64_t a3[3] = {3, 5, 7}, a4[4] = {2, 1, 9, 11}, b4[4] = {1, 3, 11, 6}, b2[2] = {11, 6};
    check_matmul(NPU_DTYPE_FP32, 3, a3, 2, m73, false, NULL, t32);
    check_matmul(NPU_DTYPE_FP32, 2, m47, 3, b273, false, NULL, t32);
    check_matmul(NPU_DTYPE_FP32, 4, a4, 4, b4, false, NULL, t32);
    check_matmul(NPU_DTYPE_FP32, 4, a4, 2, b2, true, "relu", t32);
    /* K = 0 gives zeros (+ bias); M = 0 is empty */
    int64_t k0a[2] = {3, 0}, k0b[2] = {0, 4}, m0[2] = {0, 5}, m05[2] = {5, 4};
    check_matmul(NPU_DTYPE_FP32, 2, k0a, 2, k0b, false, NULL, t32);
    check_matmul(NPU_DTYPE_FP32, 2, k0a, 2, k0b, true, NULL, t32);
    check_matmul(NPU_DTYPE_FP32, 2, m0, 2, m05, false, NULL, t32);
    /* big enough to be cut into tiles and spread over threads (ViT-like and odd) */
    int64_t big_a[2] = {196, 768}, big_b[2] = {768, 300}, odd_a[3] = {2, 301, 517},
            odd_b[2] = {517, 263};
    check_matmul(NPU_DTYPE_FP32, 2, big_a, 2, big_b, true, "gelu", t32);
    check_matmul(NPU_DTYPE_FP32, 3, odd_a, 2, odd_b, false, NULL, t32);
    /* every fused activation */
    static const char *acts[] = {"relu", "leaky_relu", "clip", "sigmoid",    "tanh",
                                 "gelu", "gelu_tanh",  "silu", "hard_swish", "hard_sigmoid"};
    int64_t fa[2] = {33, 40}, fb[2] = {40, 70};
    for (size_t i = 0; i < NPU_ARRAY_SIZE(acts); i++)
        check_matmul(NPU_DTYPE_FP32, 2, fa, 2, fb, true, acts[i], t32);
    /* fp16 (computed in fp32, rounded once), fp64, integers */
    check_matmul(NPU_DTYPE_FP16, 2, fa, 2, fb, true, "relu", t16);
    check_matmul(NPU_DTYPE_FP16, 3, a3, 2, m73, false, NULL, t16);
    check_matmul(NPU_DTYPE_FP64, 4, a4, 4, b4, false, NULL, 1e-14);
    check_matmul(NPU_DTYPE_INT32, 3, a3, 2, m73, false, NULL, 0);
    check_matmul(NPU_DTYPE_INT64, 4, a4, 4, b4, false, NULL, 0);
    check_matmul(NPU_DTYPE_UINT32, 2, fa, 2, fb, false, NULL, 0);
}

/* ---- Gemm --------------------------------------------------------------------------------- */

static void
check_gemm(enum npu_dtype dt, int64_t M, int64_t N, int64_t K, bool ta, bool tb, float alpha,
           float beta, int cr, const int64_t *cd, const char *act)
{
    struct npu_tensor *a = ta ? tt(dt, 2, D(K), D(M)) : tt(dt, 2, D(M), D(K));
    struct npu_tensor *b = tb ? tt(dt, 2, D(N), D(K)) : tt(dt, 2, D(K), D(N));
    tt_fill_rand(a, -4, 4), tt_fill_rand(b, -4, 4);
    struct npu_tensor *c = cr >= 0 ? tt_fill_rand(tt_new(dt, cr, cd), -4, 4) : NULL;
    struct npu_tensor *y = tt(dt, 2, D(M), D(N));
    struct alist al = {0};
    al_int(&al, "transA", ta);
    al_int(&al, "transB", tb);
    al_float(&al, "alpha", alpha);
    al_float(&al, "beta", beta);
    if (act)
        al_str(&al, "npu_act", act);
    struct npu_tensor *in[3] = {a, b, c}, *out[1] = {y};
    CHECK_EQ_INT(NPU_OK, run2(NPU_OP_GEMM, &al, c ? 3 : 2, in, 1, out));
    double *ref = calloc((size_t)(M * N + 1), sizeof(double)),
           *mag = calloc((size_t)(M * N + 1), sizeof(double));
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            double s = 0, m = 0;
            for (int64_t k = 0; k < K; k++) {
                double p =
                    tt_get(a, ta ? k * M + i : i * K + k) * tt_get(b, tb ? j * K + k : k * N + j);
                s += p;
                m += fabs(p);
            }
            s *= alpha;
            m *= fabs(alpha);
            if (c) {
                int64_t cm = cr == 2 ? cd[0] : 1, cn = cr >= 1 ? cd[cr - 1] : 1;
                double cv = tt_get(c, (cm == 1 ? 0 : i) * cn + (cn == 1 ? 0 : j));
                s += beta * cv;
                m += fabs(beta * cv);
            }
            ref[i * N + j] = act_ref(act, s, 0, 0);
            mag[i * N + j] = m + 1e-6;
        }
    bool ok;
    if (!npu_dtype_is_float(dt)) {
        ok = true;
        for (int64_t e = 0; e < M * N; e++)
            ok = ok && tt_get(y, e) == ref[e];
    } else {
        ok = close_to(y, ref, mag, dt == NPU_DTYPE_FP64 ? 1e-14 : 2e-6);
    }
    if (!ok)
        fprintf(stderr, "Gemm %s M=%lld N=%lld K=%lld tA=%d tB=%d C rank %d failed\n",
                npu_dtype_name(dt), (long long)M, (long long)N, (long long)K, ta, tb, cr);
    CHECK(ok);
    free(ref), free(mag);
    tt_free(a), tt_free(b), tt_free(c), tt_free(y);
}

static void
test_gemm(void)
{
    const int64_t M = 19, N = 23, K = 37;
    int64_t c_mn[2] = {M, N}, c_1n[2] = {1, N}, c_m1[2] = {M, 1}, c_n[1] = {N}, c_1[1] = {1};
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
            check_gemm(NPU_DTYPE_FP32, M, N, K, ta, tb, 1, 1, -1, NULL, NULL);
            check_gemm(NPU_DTYPE_FP32, M, N, K, ta, tb, 0.5f, 2, 2, c_mn, NULL);
            check_gemm(NPU_DTYPE_FP64, M, N, K, ta, tb, -1.5f, 0.25f, 2, c_m1, NULL);
        }
    check_gemm(NPU_DTYPE_FP32, M, N, K, false, true, 1, 1, 2, c_1n, "relu");
    check_gemm(NPU_DTYPE_FP32, M, N, K, false, false, 1, 3, 1, c_n, "silu");
    check_gemm(NPU_DTYPE_FP32, M, N, K, true, false, 2, -1, 1, c_1, NULL);
    check_gemm(NPU_DTYPE_FP32, M, N, K, false, false, 1, 0, 2, c_mn, NULL); /* beta 0: C unused */
    check_gemm(NPU_DTYPE_FP32, 250, 300, 400, false, true, 1, 1, 1, c_1, "gelu");
    /* few rows (M <= 4: B streamed once, no packing), B plain and transposed */
    check_gemm(NPU_DTYPE_FP32, 1, 77, 301, false, true, 0.5f, 2, 1, c_1, "relu");
    check_gemm(NPU_DTYPE_FP32, 3, 45, 37, false, true, 1, 1, -1, NULL, "silu");
    check_gemm(NPU_DTYPE_FP32, 4, 70, 19, false, false, 1.5f, 0.5f, 1, c_1, NULL);
    check_gemm(NPU_DTYPE_FP32, 2, 1000, 129, false, false, 1, 1, -1, NULL, "hard_swish");
    check_gemm(NPU_DTYPE_FP32, 1, 4500, 70, false, false, 1, 0.5f, 1, c_1, NULL); /* 3 chunks */
    check_gemm(NPU_DTYPE_FP32, 3, 600, 500, false, true, 1, 1, -1, NULL, NULL);   /* column tiles */
    check_gemm(NPU_DTYPE_INT32, M, N, K, true, true, 2, 3, 2, c_m1, NULL);
    check_gemm(NPU_DTYPE_INT64, M, N, K, false, false, 1, 1, 1, c_n, NULL);
}

/* ---- Einsum ------------------------------------------------------------------------------- */

static void
einsum_case(const char *eq, int nin, struct npu_tensor **in, struct npu_tensor *y,
            const double *ref)
{
    struct alist al = {0};
    al_str(&al, "equation", eq);
    struct npu_tensor *out[1] = {y};
    enum npu_status st = run2(NPU_OP_EINSUM, &al, nin, in, 1, out);
    CHECK_EQ_INT(NPU_OK, st);
    double tol = y->dtype == NPU_DTYPE_FP64 ? 1e-12 : 1e-4;
    double err = st == NPU_OK ? tt_err(y, ref, tol, tol) : INFINITY;
    if (!(err <= 1))
        fprintf(stderr, "Einsum \"%s\" %s: error %g\n", eq, npu_dtype_name(y->dtype), err);
    CHECK(err <= 1);
}

static void
test_einsum(void)
{
    for (int pass = 0; pass < 2; pass++) {
        enum npu_dtype dt = pass ? NPU_DTYPE_FP64 : NPU_DTYPE_FP32;
        /* matmul, batched matmul with a transposed operand, attention-style scores */
        struct npu_tensor *a = tt_fill_rand(tt(dt, 2, D(4), D(6)), -1, 1);
        struct npu_tensor *b = tt_fill_rand(tt(dt, 2, D(6), D(5)), -1, 1);
        struct npu_tensor *y = tt(dt, 2, D(4), D(5));
        double ref[4096];
        for (int i = 0; i < 4; i++)
            for (int k = 0; k < 5; k++) {
                double s = 0;
                for (int j = 0; j < 6; j++)
                    s += tt_get(a, i * 6 + j) * tt_get(b, j * 5 + k);
                ref[i * 5 + k] = s;
            }
        struct npu_tensor *in[2] = {a, b};
        einsum_case("ij,jk->ik", 2, in, y, ref);
        einsum_case("ij,jk", 2, in, y, ref); /* implicit output */
        einsum_case("ab , bc -> ac", 2, in, y, ref);
        /* transpose of the result */
        struct npu_tensor *yt = tt(dt, 2, D(5), D(4));
        double reft[20];
        for (int i = 0; i < 4; i++)
            for (int k = 0; k < 5; k++)
                reft[k * 4 + i] = ref[i * 5 + k];
        einsum_case("ij,jk->ki", 2, in, yt, reft);
        tt_free(y), tt_free(yt);

        struct npu_tensor *q = tt_fill_rand(tt(dt, 4, D(2), D(3), D(5), D(4)), -1, 1);
        struct npu_tensor *k = tt_fill_rand(tt(dt, 4, D(2), D(3), D(7), D(4)), -1, 1);
        struct npu_tensor *s = tt(dt, 4, D(2), D(3), D(5), D(7));
        for (int bh = 0; bh < 6; bh++)
            for (int i = 0; i < 5; i++)
                for (int j = 0; j < 7; j++) {
                    double v = 0;
                    for (int d = 0; d < 4; d++)
                        v += tt_get(q, (bh * 5 + i) * 4 + d) * tt_get(k, (bh * 7 + j) * 4 + d);
                    ref[(bh * 5 + i) * 7 + j] = v;
                }
        in[0] = q, in[1] = k;
        einsum_case("bhqd,bhkd->bhqk", 2, in, s, ref);
        einsum_case("...qd,...kd->...qk", 2, in, s, ref);
        tt_free(q), tt_free(k), tt_free(s);

        /* inner product to a scalar, outer product */
        struct npu_tensor *u = tt_fill_rand(tt(dt, 1, D(9)), -1, 1),
                          *v = tt_fill_rand(tt(dt, 1, D(9)), -1, 1);
        struct npu_tensor *sc = tt(dt, 0);
        ref[0] = 0;
        for (int i = 0; i < 9; i++)
            ref[0] += tt_get(u, i) * tt_get(v, i);
        in[0] = u, in[1] = v;
        einsum_case("i,i", 2, in, sc, ref);
        struct npu_tensor *op = tt(dt, 2, D(9), D(9));
        for (int i = 0; i < 9; i++)
            for (int j = 0; j < 9; j++)
                ref[i * 9 + j] = tt_get(u, i) * tt_get(v, j);
        einsum_case("i,j->ij", 2, in, op, ref);
        tt_free(u), tt_free(v), tt_free(sc), tt_free(op);

        /* one operand: transpose, diagonal, trace, sum, batch diagonal */
        struct npu_tensor *m = tt_fill_rand(tt(dt, 2, D(6), D(6)), -1, 1);
        struct npu_tensor *d1 = tt(dt, 1, D(6)), *s0 = tt(dt, 0), *mt = tt(dt, 2, D(6), D(6));
        in[0] = m;
        for (int i = 0; i < 6; i++)
            for (int j = 0; j < 6; j++)
                ref[j * 6 + i] = tt_get(m, i * 6 + j);
        einsum_case("ij->ji", 1, in, mt, ref);
        for (int i = 0; i < 6; i++)
            ref[i] = tt_get(m, i * 7);
        einsum_case("ii->i", 1, in, d1, ref);
        ref[0] = 0;
        for (int i = 0; i < 6; i++)
            ref[0] += tt_get(m, i * 7);
        einsum_case("ii", 1, in, s0, ref);
        ref[0] = 0;
        for (int i = 0; i < 36; i++)
            ref[0] += tt_get(m, i);
        einsum_case("ij->", 1, in, s0, ref);
        tt_free(m), tt_free(d1), tt_free(s0), tt_free(mt);
        struct npu_tensor *bm = tt_fill_rand(tt(dt, 3, D(3), D(4), D(4)), -1, 1);
        struct npu_tensor *bd = tt(dt, 2, D(3), D(4));
        for (int b2 = 0; b2 < 3; b2++)
            for (int i = 0; i < 4; i++)
                ref[b2 * 4 + i] = tt_get(bm, (b2 * 4 + i) * 4 + i);
        in[0] = bm;
        einsum_case("...ii->...i", 1, in, bd, ref);
        tt_free(bm), tt_free(bd);

        /* ellipsis with a broadcast batch (size 1 against 3) */
        struct npu_tensor *ea = tt_fill_rand(tt(dt, 3, D(1), D(2), D(3)), -1, 1);
        struct npu_tensor *eb = tt_fill_rand(tt(dt, 3, D(3), D(3), D(2)), -1, 1);
        struct npu_tensor *ey = tt(dt, 3, D(3), D(2), D(2));
        for (int t = 0; t < 3; t++)
            for (int i = 0; i < 2; i++)
                for (int j = 0; j < 2; j++) {
                    double v2 = 0;
                    for (int kk = 0; kk < 3; kk++)
                        v2 += tt_get(ea, i * 3 + kk) * tt_get(eb, (t * 3 + kk) * 2 + j);
                    ref[(t * 2 + i) * 2 + j] = v2;
                }
        in[0] = ea, in[1] = eb;
        einsum_case("...ij,...jk->...ik", 2, in, ey, ref);
        tt_free(ea), tt_free(eb), tt_free(ey);
        /* three operands */
        struct npu_tensor *x1 = tt_fill_rand(tt(dt, 2, D(2), D(3)), -1, 1);
        struct npu_tensor *x2 = tt_fill_rand(tt(dt, 2, D(3), D(4)), -1, 1);
        struct npu_tensor *x3 = tt_fill_rand(tt(dt, 1, D(4)), -1, 1);
        struct npu_tensor *x4 = tt(dt, 1, D(2)), *in3[3] = {x1, x2, x3};
        for (int i = 0; i < 2; i++) {
            double v2 = 0;
            for (int j = 0; j < 3; j++)
                for (int l = 0; l < 4; l++)
                    v2 += tt_get(x1, i * 3 + j) * tt_get(x2, j * 4 + l) * tt_get(x3, l);
            ref[i] = v2;
        }
        einsum_case("ij,jk,k->i", 3, in3, x4, ref);
        tt_free(x1), tt_free(x2), tt_free(x3), tt_free(x4);
        tt_free(a), tt_free(b);
    }
    /* bad equations are refused */
    struct npu_tensor *a = tt(NPU_DTYPE_FP32, 2, D(2), D(3)), *y = tt(NPU_DTYPE_FP32, 1, D(2));
    struct npu_tensor *in[1] = {a}, *out[1] = {y};
    static const char *bad[] = {"ijk->i", "ij,jk->ik", "i$->i", "ij->k", "i..j->i"};
    npu_log_set_level((enum npu_log_level) - 1);
    for (size_t i = 0; i < NPU_ARRAY_SIZE(bad); i++) {
        struct alist al = {0};
        al_str(&al, "equation", bad[i]);
        CHECK_EQ_INT(NPU_ERR_INVALID, run_op(tctx1, NPU_OP_EINSUM, &al, 1, in, 1, out));
    }
    npu_log_set_level(NPU_LOG_WARN);
    tt_free(a), tt_free(y);
}

/* ---- integer matmuls ----------------------------------------------------------------------- */

static void
test_int_matmul(void)
{
    for (int s8 = 0; s8 < 2; s8++) {
        enum npu_dtype dt = s8 ? NPU_DTYPE_INT8 : NPU_DTYPE_UINT8;
        double lo = s8 ? -128 : 0, hi = s8 ? 128 : 256;
        const int64_t B = 2, M = 5, K = 33, N = 7;
        struct npu_tensor *a = tt_fill_rand(tt(dt, 3, D(B), D(M), D(K)), lo, hi);
        struct npu_tensor *b = tt_fill_rand(tt(dt, 2, D(K), D(N)), lo, hi);
        /* per-row A zero points and per-column B zero points (int8), scalars (uint8) */
        struct npu_tensor *az =
            s8 ? tt_fill_rand(tt(dt, 1, D(M)), -10, 10) : tt_fill_rand(tt(dt, 0), lo, hi);
        struct npu_tensor *bz =
            s8 ? tt_fill_rand(tt(dt, 1, D(N)), -10, 10) : tt_fill_rand(tt(dt, 0), lo, hi);
        struct npu_tensor *y = tt(NPU_DTYPE_INT32, 3, D(B), D(M), D(N));
        struct npu_tensor *in[4] = {a, b, az, bz}, *out[1] = {y};
        CHECK_EQ_INT(NPU_OK, run2(NPU_OP_MATMUL_INTEGER, NULL, 4, in, 1, out));
        int bad = 0;
        for (int64_t t = 0; t < B; t++)
            for (int64_t i = 0; i < M; i++)
                for (int64_t j = 0; j < N; j++) {
                    int64_t s = 0;
                    double azv = tt_get(az, s8 ? i : 0), bzv = tt_get(bz, s8 ? j : 0);
                    for (int64_t k = 0; k < K; k++)
                        s += (int64_t)(tt_get(a, (t * M + i) * K + k) - azv) *
                             (int64_t)(tt_get(b, k * N + j) - bzv);
                    bad += tt_get(y, (t * M + i) * N + j) != (double)s;
                }
        CHECK_EQ_INT(0, bad);
        /* absent zero points mean 0 */
        CHECK_EQ_INT(NPU_OK, run2(NPU_OP_MATMUL_INTEGER, NULL, 2, in, 1, out));
        int64_t s = 0;
        for (int64_t k = 0; k < K; k++)
            s += (int64_t)tt_get(a, k) * (int64_t)tt_get(b, k * N);
        CHECK_EQ_INT(s, tt_get(y, 0));

        /* QLinearMatMul: y = sat(rint(acc * a_s * b_s / y_s) + y_zp), b_s per column */
        struct npu_tensor *as = tt(NPU_DTYPE_FP32, 0), *ys = tt(NPU_DTYPE_FP32, 0);
        struct npu_tensor *bs = tt_fill_rand(tt(NPU_DTYPE_FP32, 1, D(N)), 0.001, 0.02);
        *(float *)as->data = 0.0125f;
        *(float *)ys->data = s8 ? 0.5f : 0.75f;
        struct npu_tensor *yz = tt(dt, 0);
        tt_set(yz, 0, s8 ? -3 : 120);
        struct npu_tensor *azs = tt_fill_rand(tt(dt, 0), lo / 4, hi / 4),
                          *bzs = tt_fill_rand(tt(dt, 1, D(N)), lo / 4, hi / 4);
        struct npu_tensor *q = tt(dt, 3, D(B), D(M), D(N));
        struct npu_tensor *qin[8] = {a, as, azs, b, bs, bzs, ys, yz}, *qout[1] = {q};
        CHECK_EQ_INT(NPU_OK, run2(NPU_OP_QLINEAR_MATMUL, NULL, 8, qin, 1, qout));
        bad = 0;
        for (int64_t t = 0; t < B; t++)
            for (int64_t i = 0; i < M; i++)
                for (int64_t j = 0; j < N; j++) {
                    int64_t acc = 0;
                    for (int64_t k = 0; k < K; k++)
                        acc += (int64_t)(tt_get(a, (t * M + i) * K + k) - tt_get(azs, 0)) *
                               (int64_t)(tt_get(b, k * N + j) - tt_get(bzs, j));
                    float scale = 0.0125f * (float)tt_get(bs, j) / (float)tt_get(ys, 0);
                    double v = rintf((float)acc * scale) + tt_get(yz, 0);
                    v = fmin(fmax(v, lo), hi - 1);
                    bad += tt_get(q, (t * M + i) * N + j) != v;
                }
        CHECK_EQ_INT(0, bad);
        /* OpenNPU's input 8: an int32 bias per column added to the sums before the
         * requantisation (the quantiser's MatMul bias); a wrong length is refused */
        struct npu_tensor *qb = tt_fill_rand(tt(NPU_DTYPE_INT32, 1, D(N)), -3000, 3000);
        struct npu_tensor *qin9[9] = {a, as, azs, b, bs, bzs, ys, yz, qb};
        CHECK_EQ_INT(NPU_OK, run2(NPU_OP_QLINEAR_MATMUL, NULL, 9, qin9, 1, qout));
        bad = 0;
        for (int64_t t = 0; t < B; t++)
            for (int64_t i = 0; i < M; i++)
                for (int64_t j = 0; j < N; j++) {
                    int64_t acc = (int64_t)tt_get(qb, j);
                    for (int64_t k = 0; k < K; k++)
                        acc += (int64_t)(tt_get(a, (t * M + i) * K + k) - tt_get(azs, 0)) *
                               (int64_t)(tt_get(b, k * N + j) - tt_get(bzs, j));
                    float scale = 0.0125f * (float)tt_get(bs, j) / (float)tt_get(ys, 0);
                    double v = rintf((float)acc * scale) + tt_get(yz, 0);
                    v = fmin(fmax(v, lo), hi - 1);
                    bad += tt_get(q, (t * M + i) * N + j) != v;
                }
        CHECK_EQ_INT(0, bad);
        struct npu_tensor *qbad = tt(NPU_DTYPE_INT32, 1, D(N + 1));
        qin9[8] = qbad;
        CHECK(run2(NPU_OP_QLINEAR_MATMUL, NULL, 9, qin9, 1, qout) != NPU_OK);
        tt_free(qb), tt_free(qbad);
        tt_free(a), tt_free(b), tt_free(az), tt_free(bz), tt_free(y), tt_free(as), tt_free(ys);
        tt_free(bs), tt_free(yz), tt_free(azs), tt_free(bzs), tt_free(q);
    }
}

int
main(void)
{
    tctx_init();
    for (int blas = cpu_have_blas() ? 1 : 0; blas >= 0; blas--) {
        cpu_gemm_use_blas(blas);
        test_matmul();
        test_gemm();
        test_einsum();
    }
    /* the fallback's other micro-kernel too, if this CPU picked the 32-wide one */
    if (cpu_gemm_kernel_width(0) == 32) {
        cpu_gemm_kernel_width(16);
        test_matmul();
        test_gemm();
    }
    test_int_matmul();
    CHECK_EQ_INT(0, t_thread_mismatches);
    tctx_fini();
    return npu_test_done("test-cpu-gemm");
}
