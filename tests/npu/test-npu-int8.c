/* SPDX-License-Identifier: MIT */
/*
 * test-npu-int8.c: the int8 pipeline on the simulator (strict) against the
 * CPU executor, exactly:
 *   MatMulInteger / ConvInteger (int8 / uint8 operands, zero points) -> int32;
 *   QLinearMatMul / QLinearConv -> int8 / uint8 with per-tensor scales
 *   (OUT_CVT scale, shift, offset) and per-channel weight scales (BN MUL by a
 *   per-channel multiplier from NRDMA), QLinearConv's int32 bias, padding
 *   (the pad value is the input zero point), uint8 held as value - 128.
 * The integer products are exact on both sides; the requantisation is exact
 * when sx * sw / sy is a dyadic fraction m / 2^s with m < 2^15 (the scales
 * used here: powers of two times small odd numbers), because both sides then
 * compute round_half_even(acc * m / 2^s) exactly.
 */
#include "npu-test-util.h"
#include "npu/npu-timing.h"

static int verbose;

static void
fill_i8(void *p, enum npu_dtype dt, size_t n, uint32_t *s, int lo, int hi)
{
    for (size_t i = 0; i < n; i++) {
        int v = lo + (int)(tu_rand(s) % (uint32_t)(hi - lo + 1));
        if (dt == NPU_DTYPE_UINT8)
            ((uint8_t *)p)[i] = (uint8_t)v;
        else
            ((int8_t *)p)[i] = (int8_t)v;
    }
}

static struct npu_value *
cscalar(struct npu_graph *g, const char *name, enum npu_dtype dt, double v)
{
    struct npu_tensor t = {.dtype = dt, .ndim = 0};
    uint8_t buf[8];
    t.data = buf;
    if (dt == NPU_DTYPE_FP32)
        *(float *)buf = (float)v;
    else if (dt == NPU_DTYPE_UINT8)
        buf[0] = (uint8_t)v;
    else
        buf[0] = (uint8_t)(int8_t)v;
    return npu_graph_add_const(g, name, &t);
}

struct qcase {
    bool conv, qlinear;
    enum npu_dtype xdt, wdt, ydt;
    int M, K, N;                  /* matmul: A [M, K], B [K, N] */
    int C, H, W, Kc, kh, ks, pad; /* conv */
    int xzp, wzp, yzp;
    float sx, sy;
    const float *sw; /* NULL: per tensor sw0 */
    float sw0;
    bool bias;
    uint32_t seed;
};

static struct npu_graph *
build(const struct qcase *q)
{
    struct npu_graph *g = npu_graph_new("q");
    uint32_t s = q->seed;
    int64_t xd[4], wd[4];
    int xr, wr;
    if (q->conv) {
        xd[0] = 1, xd[1] = q->C, xd[2] = q->H, xd[3] = q->W, xr = 4;
        wd[0] = q->Kc, wd[1] = q->C, wd[2] = q->kh, wd[3] = q->kh, wr = 4;
    } else {
        xd[0] = q->M, xd[1] = q->K, xr = 2;
        wd[0] = q->K, wd[1] = q->N, wr = 2;
    }
    struct npu_value *x = npu_graph_add_input(g, "x", q->xdt, xr, xd);
    int64_t nw = 1;
    for (int i = 0; i < wr; i++)
        nw *= wd[i];
    void *w = malloc((size_t)nw);
    /* weights kept so that w - zw stays int8 */
    fill_i8(w, q->wdt, (size_t)nw, &s, q->wdt == NPU_DTYPE_UINT8 ? q->wzp - 100 : -100,
            q->wdt == NPU_DTYPE_UINT8 ? q->wzp + 100 : 100);
    struct npu_tensor wt = {.dtype = q->wdt, .ndim = wr, .data = w};
    memcpy(wt.dims, wd, sizeof(wd));
    struct npu_value *wv = npu_graph_add_const(g, "w", &wt);
    free(w);
    int nk = q->conv ? q->Kc : q->N;
    struct npu_value *in[9] = {0};
    int nin;
    enum npu_op op;
    if (!q->qlinear) {
        op = q->conv ? NPU_OP_CONV_INTEGER : NPU_OP_MATMUL_INTEGER;
        in[0] = x;
        in[1] = wv;
        in[2] = cscalar(g, "xz", q->xdt, q->xzp);
        in[3] = cscalar(g, "wz", q->wdt, q->wzp);
        nin = 4;
    } else {
        op = q->conv ? NPU_OP_QLINEAR_CONV : NPU_OP_QLINEAR_MATMUL;
        in[0] = x;
        in[1] = cscalar(g, "xs", NPU_DTYPE_FP32, q->sx);
        in[2] = cscalar(g, "xz", q->xdt, q->xzp);
        in[3] = wv;
        if (q->sw)
            in[4] = npu_graph_const_f32(g, "ws", q->sw, nk, false);
        else
            in[4] = cscalar(g, "ws", NPU_DTYPE_FP32, q->sw0);
        in[5] = cscalar(g, "wz", q->wdt, q->wzp);
        in[6] = cscalar(g, "ys", NPU_DTYPE_FP32, q->sy);
        in[7] = cscalar(g, "yz", q->ydt, q->yzp);
        nin = 8;
        if (q->conv && q->bias) {
            int32_t *b = malloc(sizeof(int32_t) * (size_t)nk);
            for (int i = 0; i < nk; i++)
                b[i] = (int32_t)(tu_rand(&s) % 20001) - 10000;
            struct npu_tensor bt = {.dtype = NPU_DTYPE_INT32, .ndim = 1, .dims = {nk}, .data = b};
            in[8] = npu_graph_add_const(g, "B", &bt);
            free(b);
            nin = 9;
        }
    }
    struct npu_node *n = npu_node_new(g, op, "q", in, nin, 1, (const char *[]){"y"});
    if (q->conv) {
        int64_t k2[2] = {q->kh, q->kh}, s2[2] = {q->ks, q->ks};
        int64_t pads[4] = {q->pad, q->pad, q->pad, q->pad};
        npu_node_set_ints(g, n, "kernel_shape", k2, 2);
        npu_node_set_ints(g, n, "strides", s2, 2);
        npu_node_set_ints(g, n, "pads", pads, 4);
    }
    npu_graph_append(g, n);
    if (npu_infer_node(g, n)) {
        npu_graph_free(g);
        return NULL;
    }
    npu_graph_add_output(g, n->out[0]);
    return g;
}

static void
check(const struct qcase *q, const char *label)
{
    struct npu_graph *g1 = build(q), *g2 = build(q);
    CHECK(g1 && g2);
    if (!g1 || !g2)
        return;
    int64_t nx = npu_tensor_numel(&g1->inputs[0]->t);
    void *x = malloc((size_t)nx);
    uint32_t s = q->seed + 17;
    fill_i8(x, q->xdt, (size_t)nx, &s, q->xdt == NPU_DTYPE_UINT8 ? 0 : -128,
            q->xdt == NPU_DTYPE_UINT8 ? 255 : 127);
    struct npu_tensor in = g1->inputs[0]->t, want = {0}, got = {0};
    in.data = x;
    struct npu_backend_options o = {0};
    struct tu_npu_result res;
    CHECK_EQ_INT(NPU_OK, tu_run_cpu(g1, &in, 1, &want));
    enum npu_status st = tu_run_npu(g2, &o, &in, &got, &res);
    CHECK_EQ_INT(NPU_OK, st);
    if (!st) {
        int64_t n = npu_tensor_numel(&want), bad = 0, first = -1;
        size_t es = npu_dtype_size(want.dtype);
        for (int64_t i = 0; i < n; i++)
            if (memcmp((char *)want.data + i * es, (char *)got.data + i * es, es)) {
                if (first < 0)
                    first = i;
                bad++;
            }
        if (bad) {
            struct npu_tensor *t = &want;
            fprintf(stderr, "%s: %lld of %lld differ, first %lld: npu %g cpu %g\n", label,
                    (long long)bad, (long long)n, (long long)first, prun_get(&got, got.data, first),
                    prun_get(t, t->data, first));
        }
        CHECK_EQ_INT(0, bad);
        CHECK_EQ_INT(1, res.n_rk);
        CHECK_EQ_INT(0, res.n_cpu);
        if (verbose)
            printf("%-50s exact, %u task(s), modeled %.1f us (%s)\n", label, res.tasks,
                   res.modeled_s * 1e6, npu_timing_model()->label);
    }
    free(x);
    free(want.data);
    free(got.data);
}

int
main(int argc, char **argv)
{
    verbose = argc > 1 && !strcmp(argv[1], "-v");
    const enum npu_dtype I8 = NPU_DTYPE_INT8, U8 = NPU_DTYPE_UINT8;
    struct qcase q;

    q = (struct qcase){.M = 9, .K = 40, .N = 24, .xdt = I8, .wdt = I8, .seed = 1};
    check(&q, "MatMulInteger int8 9x40x24");
    q = (struct qcase){
        .M = 5, .K = 70, .N = 33, .xdt = U8, .wdt = I8, .xzp = 131, .wzp = -3, .seed = 2};
    check(&q, "MatMulInteger uint8 x, zero points 131 / -3");
    q = (struct qcase){.conv = true,
                       .C = 12,
                       .H = 9,
                       .W = 11,
                       .Kc = 20,
                       .kh = 3,
                       .ks = 1,
                       .pad = 1,
                       .xdt = U8,
                       .wdt = U8,
                       .xzp = 100,
                       .wzp = 120,
                       .seed = 3};
    check(&q, "ConvInteger uint8 3x3 pad 1 (pad value = zero point)");

    q = (struct qcase){.qlinear = true,
                       .M = 16,
                       .K = 64,
                       .N = 48,
                       .xdt = I8,
                       .wdt = I8,
                       .ydt = I8,
                       .xzp = 3,
                       .yzp = -5,
                       .sx = 0.5f,
                       .sw0 = 0.0078125f,
                       .sy = 1.0f,
                       .seed = 4};
    check(&q, "QLinearMatMul int8 per tensor (scale 2^-8)");
    q = (struct qcase){.qlinear = true,
                       .M = 7,
                       .K = 100,
                       .N = 30,
                       .xdt = U8,
                       .wdt = U8,
                       .ydt = U8,
                       .xzp = 128,
                       .wzp = 127,
                       .yzp = 130,
                       .sx = 0.0625f,
                       .sw0 = 0.046875f,
                       .sy = 0.5f,
                       .seed = 5};
    check(&q, "QLinearMatMul uint8 per tensor (3/512)");
    float sw[40];
    for (int i = 0; i < 40; i++)
        sw[i] = (float)ldexp(1 + 2 * (i % 5), -9 - (i % 3)); /* dyadic per column */
    q = (struct qcase){.qlinear = true,
                       .M = 12,
                       .K = 96,
                       .N = 40,
                       .xdt = I8,
                       .wdt = I8,
                       .ydt = I8,
                       .xzp = -7,
                       .yzp = 4,
                       .sx = 0.25f,
                       .sw = sw,
                       .sy = 0.125f,
                       .seed = 6};
    check(&q, "QLinearMatMul int8 per-column weight scales");
    q = (struct qcase){.qlinear = true,
                       .conv = true,
                       .C = 16,
                       .H = 14,
                       .W = 13,
                       .Kc = 40,
                       .kh = 3,
                       .ks = 2,
                       .pad = 1,
                       .xdt = U8,
                       .wdt = I8,
                       .ydt = U8,
                       .xzp = 120,
                       .yzp = 128,
                       .sx = 0.03125f,
                       .sw = sw,
                       .sy = 0.0625f,
                       .bias = true,
                       .seed = 7};
    check(&q, "QLinearConv uint8 3x3/2 pad, per-channel, bias");
    q = (struct qcase){.qlinear = true,
                       .conv = true,
                       .C = 8,
                       .H = 20,
                       .W = 20,
                       .Kc = 32,
                       .kh = 5,
                       .ks = 1,
                       .pad = 2,
                       .xdt = I8,
                       .wdt = I8,
                       .ydt = I8,
                       .xzp = 0,
                       .yzp = 0,
                       .sx = 1.0f,
                       .sw0 = 0.015625f,
                       .sy = 2.0f,
                       .bias = true,
                       .seed = 8};
    check(&q, "QLinearConv int8 5x5 per tensor, bias");
    /* K large enough for channel-block accumulation in int32 */
    q = (struct qcase){.qlinear = true,
                       .M = 196,
                       .K = 3072,
                       .N = 64,
                       .xdt = I8,
                       .wdt = I8,
                       .ydt = I8,
                       .xzp = 1,
                       .yzp = 0,
                       .sx = 0.125f,
                       .sw0 = 0.001953125f,
                       .sy = 4.0f,
                       .seed = 9};
    check(&q, "QLinearMatMul 196x3072x64 (int32 partial sums)");
    return npu_test_done("npu-int8");
}
