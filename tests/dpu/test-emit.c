/* SPDX-License-Identifier: MIT */
/*
 * test-emit.c: the DPU/PPU task emitters on the strict simulator, each against a plain
 * reference computed here from the definition of the operation: flying passes with every
 * EW operation, BS/BN stages with register and per-channel memory operands, ReLU / ReLU-X,
 * strided views (channel and row slices, windows), a convolution with bias and a fused
 * residual EW stage (fp16 and fp32 output, row tiling), depthwise convolution, max / min
 * pooling with padding, and the transpose copy. Shapes are odd on purpose (channels not a
 * multiple of 8, widths not a multiple of 16).
 */
#include "dpu-test.h"
#include "npu-test-log.h"
#include "npu/npu-timing.h"

/* ------------------------------------------------------------ EW binary */

static double
ref_ew(enum npu_dpu_ew_op op, double a, double b)
{
    switch (op) {
    case NPU_DPU_EW_ADD: return (float)(a + b);
    case NPU_DPU_EW_SUB: return (float)(a - b);
    case NPU_DPU_EW_MUL: return (float)(a * b);
    case NPU_DPU_EW_DIV: return (float)(a / b);
    case NPU_DPU_EW_MAX: return a > b ? a : b;
    case NPU_DPU_EW_MIN: return a < b ? a : b;
    default: return a;
    }
}

static void
test_ew_ops(void)
{
    const uint32_t C = 13, H = 5, W = 7;
    size_t n = (size_t)C * H * W;
    static const char *names[] = {"", "add", "sub", "mul", "div", "max", "min"};
    for (int op = NPU_DPU_EW_ADD; op <= NPU_DPU_EW_MIN; op++) {
        struct drig r;
        drig_open(&r, 4096, 1 << 16);
        struct npu_dpu_map x = drig_map(&r, DRIG_A, NPU_DPU_FP16, C, H, W);
        struct npu_dpu_map y = drig_map(&r, DRIG_A, NPU_DPU_FP16, C, H, W);
        struct npu_dpu_map z = drig_map(&r, DRIG_A, NPU_DPU_FP16, C, H, W);
        float *xv = malloc(n * 4), *yv = malloc(n * 4), *zv = malloc(n * 4);
        double *want = malloc(n * 8);
        drand_fill(xv, n, 1 + op, 4.0f);
        drand_fill(yv, n, 100 + op, 4.0f);
        if (op == NPU_DPU_EW_DIV)
            for (size_t i = 0; i < n; i++)
                yv[i] = f16r(yv[i] >= 0 ? yv[i] + 0.25f : yv[i] - 0.25f);
        drig_put(&r, &x, xv);
        drig_put(&r, &y, yv);
        for (size_t i = 0; i < n; i++)
            want[i] = f16r((float)ref_ew(op, xv[i], yv[i]));
        struct npu_dpu_pass p = {.in = x, .out = z};
        p.st.ew.op = op;
        p.st.ew.operand = y;
        CHECK_EQ_INT(NPU_OK, npu_dpu_emit_pass(&r.s, &p, &r.cost));
        CHECK_EQ_INT(NPU_OK, drig_run(&r));
        drig_get(&r, &z, zv);
        size_t worst = 0;
        double e = dcompare(zv, want, n, 0, 1e-7, &worst);
        if (e > 1)
            fprintf(stderr, "ew %s: [%zu] %g vs %g\n", names[op], worst, zv[worst], want[worst]);
        CHECK(e <= 1);
        /* the emitters' cost estimate equals the simulator's model (the job less its submit
         * overhead, in the timing model in use) */
        CHECK_NEAR(r.res.modeled_s - npu_timing_model()->submit_overhead_s, r.cost.s, 1e-9);
        free(xv), free(yv), free(zv), free(want);
        drig_close(&r);
    }
    printf("EW add/sub/mul/div/max/min per pixel, %ux%ux%u: exact fp16\n", C, H, W);
}

/* --------------------------------------------------------- BS / BN stages */

static void
test_stages(void)
{
    const uint32_t C = 21, H = 3, W = 9;
    size_t n = (size_t)C * H * W;
    struct drig r;
    drig_open(&r, 4096, 1 << 16);
    struct npu_dpu_map x = drig_map(&r, DRIG_A, NPU_DPU_FP16, C, H, W);
    struct npu_dpu_map z = drig_map(&r, DRIG_A, NPU_DPU_FP16, C, H, W);
    float *xv = malloc(n * 4), *zv = malloc(n * 4), bias[32], scale[32];
    double *want = malloc(n * 8);
    drand_fill(xv, n, 7, 3.0f);
    drand_fill(bias, C, 8, 1.0f);
    drand_fill(scale, C, 9, 2.0f);
    drig_put(&r, &x, xv);
    struct npu_dpu_ref bref = drig_f32(&r, bias, C), sref = drig_f32(&r, scale, C);

    /* (a) BS: per-channel add from memory, then register multiply, ReLU-X at 2;
     *     BN: per-channel multiply from memory, then register subtract */
    struct npu_dpu_pass p = {.in = x, .out = z};
    p.st.bs.alu = NPU_DPU_SRC_MEM;
    p.st.bs.alu_mem = bref;
    p.st.bs.mul = NPU_DPU_SRC_REG;
    p.st.bs.mul_value = 0.5f;
    p.st.bs.relu = true;
    p.st.bs.relux = true;
    p.st.bs.relux_value = 2.0f;
    p.st.bn.mul = NPU_DPU_SRC_MEM;
    p.st.bn.mul_mem = sref;
    p.st.bn.alu = NPU_DPU_SRC_REG;
    p.st.bn.alu_minus = true;
    p.st.bn.alu_value = 0.125f;
    CHECK_EQ_INT(NPU_OK, npu_dpu_emit_pass(&r.s, &p, &r.cost));
    CHECK_EQ_INT(NPU_OK, drig_run(&r));
    drig_get(&r, &z, zv);
    for (uint32_t c = 0; c < C; c++)
        for (size_t i = 0; i < (size_t)H * W; i++) {
            size_t k = c * H * W + i;
            float v = (xv[k] + bias[c]) * 0.5f;
            v = v < 0 ? 0 : v > 2 ? 2 : v;
            v = v * scale[c] - 0.125f;
            want[k] = f16r(v);
        }
    CHECK(dcompare(zv, want, n, 0, 1e-7, NULL) <= 1);

    /* (b) two operand kinds from memory in one stage are refused by the emitter */
    p.st.bs.mul = NPU_DPU_SRC_MEM;
    p.st.bs.mul_mem = sref;
    npu_log_set_handler(npu_test_log_quiet, NULL); /* the expected refusal */
    CHECK_EQ_INT(NPU_ERR_INVALID, npu_dpu_emit_pass(&r.s, &p, NULL));
    npu_log_set_handler(NULL, NULL);
    npu_stream_fini(&r.s);
    npu_stream_init(&r.s);
    printf("BS/BN: per-channel add/mul from BRDMA/NRDMA, register ops, ReLU-X: exact\n");
    free(xv), free(zv), free(want);
    drig_close(&r);
}

/* ----------------------------------------------------------------- views */

static void
test_views(void)
{
    /* z[:, 1:4, 2:7] of a 24x6x10 map = x[8:24 channels] + y, written into channel
     * surface 1 of a 40-channel output: slices by addressing alone. */
    const uint32_t C = 16, H = 3, W = 5;
    struct drig r;
    drig_open(&r, 4096, 1 << 16);
    struct npu_dpu_map big = drig_map(&r, DRIG_A, NPU_DPU_FP16, 24, 6, 10);
    struct npu_dpu_map y = drig_map(&r, DRIG_A, NPU_DPU_FP16, C, H, W);
    struct npu_dpu_map out = drig_map(&r, DRIG_A, NPU_DPU_FP16, 40, H, W);
    size_t nb = 24 * 6 * 10, n = (size_t)C * H * W;
    float *bv = malloc(nb * 4), *yv = malloc(n * 4), *ov = malloc(40 * H * W * 4);
    drand_fill(bv, nb, 3, 8.0f);
    drand_fill(yv, n, 4, 8.0f);
    drig_put(&r, &big, bv);
    drig_put(&r, &y, yv);
    struct npu_dpu_map xv = npu_dpu_map_channels(&big, 8, C);
    xv = npu_dpu_map_rows(&xv, 1, H);
    xv = npu_dpu_map_cols(&xv, 2, W);
    struct npu_dpu_map zv = npu_dpu_map_channels(&out, 8, C);
    struct npu_dpu_pass p = {.in = xv, .out = zv};
    p.st.ew.op = NPU_DPU_EW_ADD;
    p.st.ew.operand = y;
    CHECK_EQ_INT(NPU_OK, npu_dpu_emit_pass(&r.s, &p, NULL));
    CHECK_EQ_INT(NPU_OK, drig_run(&r));
    drig_get(&r, &out, ov);
    unsigned bad = 0;
    for (uint32_t c = 0; c < C; c++)
        for (uint32_t yy = 0; yy < H; yy++)
            for (uint32_t x = 0; x < W; x++) {
                float a = bv[((size_t)(c + 8) * 6 + yy + 1) * 10 + x + 2];
                float b = yv[((size_t)c * H + yy) * W + x];
                float g = ov[((size_t)(c + 8) * H + yy) * W + x];
                bad += g != f16r(a + b);
            }
    for (size_t i = 0; i < 8 * H * W; i++) /* channels 0..7 untouched */
        bad += ov[i] != 0;
    CHECK_EQ_INT(0, bad);
    printf("views: channel/row/column slices in and a channel slice out by addressing: exact\n");
    free(bv), free(yv), free(ov);
    drig_close(&r);
}

/* ------------------------------------------------------------ convolution */

static void
test_conv(bool fp32_out, uint32_t C, uint32_t K, uint32_t H, uint32_t W, uint32_t kh, uint32_t kw,
          uint32_t s, uint32_t pad, bool residual, bool depthwise)
{
    struct drig r;
    drig_open(&r, 1 << 20, 16 << 20);
    uint32_t OH = (H + 2 * pad - kh) / s + 1, OW = (W + 2 * pad - kw) / s + 1;
    if (depthwise)
        K = C;
    struct npu_dpu_map x = drig_map(&r, DRIG_A, NPU_DPU_FP16, C, H, W);
    enum npu_dpu_type ot = fp32_out ? NPU_DPU_FP32 : NPU_DPU_FP16;
    uint32_t kpad = NPU_ALIGN(K, npu_dpu_type_c2(ot));
    struct npu_dpu_map z = drig_map(&r, DRIG_A, ot, kpad, OH, OW);
    z.c = K;
    struct npu_dpu_map res = drig_map(&r, DRIG_A, NPU_DPU_FP16, kpad, OH, OW);
    size_t nx = (size_t)C * H * W, nz = (size_t)K * OH * OW;
    size_t nw = (size_t)(depthwise ? 1 : K) * C * kh * kw;
    float *xv = malloc(nx * 4), *wv = malloc(nw * 4), *zv = malloc(nz * 4),
          *rv = calloc(kpad * OH * OW, 4);
    float *bias = malloc(K * 4);
    double *want = malloc(nz * 8);
    drand_fill(xv, nx, 11, 1.0f);
    drand_fill(wv, nw, 12, 0.5f);
    drand_fill(bias, K, 13, 1.0f);
    drand_fill(rv, (size_t)K * OH * OW, 14, 2.0f);
    drig_put(&r, &x, xv);
    drig_put(&r, &res, rv);
    struct npu_dpu_conv cv = {.in = x,
                              .kernels = K,
                              .kh = kh,
                              .kw = kw,
                              .sy = s,
                              .sx = s,
                              .pad_top = pad,
                              .pad_left = pad,
                              .depthwise = depthwise,
                              .out = z};
    cv.weights = drig_weights(&r, wv, K, C, kh, kw, depthwise);
    cv.st.bs.alu = NPU_DPU_SRC_MEM;
    cv.st.bs.alu_mem = drig_f32(&r, bias, K);
    if (residual) {
        cv.st.ew.op = NPU_DPU_EW_ADD;
        cv.st.ew.operand = res;
    }
    CHECK_EQ_INT(NPU_OK, npu_dpu_emit_conv(&r.s, &cv, &r.cost));
    CHECK_EQ_INT(NPU_OK, drig_run(&r));
    drig_get(&r, &z, zv);
    double sumabs_max = 0;
    for (uint32_t k = 0; k < K; k++)
        for (uint32_t oy = 0; oy < OH; oy++)
            for (uint32_t ox = 0; ox < OW; ox++) {
                double acc = 0, sa = 0;
                for (uint32_t c = 0; c < C; c++) {
                    if (depthwise && c != k)
                        continue;
                    for (uint32_t ky = 0; ky < kh; ky++)
                        for (uint32_t kx = 0; kx < kw; kx++) {
                            int iy = (int)(oy * s + ky) - (int)pad,
                                ix = (int)(ox * s + kx) - (int)pad;
                            if (iy < 0 || ix < 0 || iy >= (int)H || ix >= (int)W)
                                continue;
                            size_t wi = depthwise ? ((size_t)c * kh + ky) * kw + kx
                                                  : (((size_t)k * C + c) * kh + ky) * kw + kx;
                            double t = (double)f16r(wv[wi]) * xv[((size_t)c * H + iy) * W + ix];
                            acc += t;
                            sa += fabs(t);
                        }
                }
                if (sa > sumabs_max)
                    sumabs_max = sa;
                double v = acc + bias[k];
                if (residual)
                    v += rv[((size_t)k * OH + oy) * OW + ox];
                want[((size_t)k * OH + oy) * OW + ox] = fp32_out ? v : f16r((float)v);
            }
    /* fp32 accumulation in an unknown order: bound n 2^-24 sum|terms| (docs/simulator.md),
     * plus one fp16 rounding of the result */
    double atol = (double)C * kh * kw * 6e-8 * sumabs_max + 1e-6;
    size_t worst = 0;
    double e = dcompare(zv, want, nz, atol, fp32_out ? 1e-6 : 1.0 / 1024, &worst);
    if (e > 1)
        fprintf(stderr, "conv: [%zu] %g vs %g\n", worst, zv[worst], want[worst]);
    CHECK(e <= 1);
    printf("conv %s%ux%u s%u p%u C%u K%u %ux%u -> %s%s: %u task(s), modeled %.1f us, ok\n",
           depthwise ? "dw " : "", kh, kw, s, pad, C, K, H, W, fp32_out ? "fp32" : "fp16",
           residual ? " + residual EW" : "", r.cost.tasks, r.res.modeled_s * 1e6);
    CHECK_NEAR(r.res.modeled_s - npu_timing_model()->submit_overhead_s, r.cost.s, 1e-9);
    free(xv), free(wv), free(zv), free(rv), free(bias), free(want);
    drig_close(&r);
}

/* --------------------------------------------------------------- pooling */

static void
test_pool(enum npu_dpu_pool_op op, uint32_t C, uint32_t H, uint32_t W, uint32_t k, uint32_t s,
          uint32_t pad)
{
    struct drig r;
    drig_open(&r, 4096, 1 << 20);
    uint32_t OH = (H + 2 * pad - k) / s + 1, OW = (W + 2 * pad - k) / s + 1;
    struct npu_dpu_map x = drig_map(&r, DRIG_A, NPU_DPU_FP16, C, H, W);
    struct npu_dpu_map z = drig_map(&r, DRIG_A, NPU_DPU_FP16, C, OH, OW);
    size_t nx = (size_t)C * H * W, nz = (size_t)C * OH * OW;
    float *xv = malloc(nx * 4), *zv = malloc(nz * 4);
    double *want = malloc(nz * 8);
    drand_fill(xv, nx, 21, 5.0f);
    drig_put(&r, &x, xv);
    struct npu_dpu_pool p = {.op = op,
                             .in = x,
                             .kh = k,
                             .kw = k,
                             .sy = s,
                             .sx = s,
                             .pad_top = pad,
                             .pad_left = pad,
                             .pad_bottom = pad,
                             .pad_right = pad,
                             .out = z};
    CHECK_EQ_INT(NPU_OK, npu_dpu_emit_pool(&r.s, &p, &r.cost));
    CHECK_EQ_INT(NPU_OK, drig_run(&r));
    drig_get(&r, &z, zv);
    for (uint32_t c = 0; c < C; c++)
        for (uint32_t oy = 0; oy < OH; oy++)
            for (uint32_t ox = 0; ox < OW; ox++) {
                double m = op == NPU_DPU_POOL_MAX ? -INFINITY : INFINITY;
                for (uint32_t ky = 0; ky < k; ky++)
                    for (uint32_t kx = 0; kx < k; kx++) {
                        int iy = (int)(oy * s + ky) - (int)pad, ix = (int)(ox * s + kx) - (int)pad;
                        double v = (iy < 0 || ix < 0 || iy >= (int)H || ix >= (int)W)
                                       ? 0.0 /* the pad value */
                                       : xv[((size_t)c * H + iy) * W + ix];
                        m = op == NPU_DPU_POOL_MAX ? fmax(m, v) : fmin(m, v);
                    }
                want[((size_t)c * OH + oy) * OW + ox] = m;
            }
    size_t worst = 0;
    if (dcompare(zv, want, nz, 0, 1e-9, &worst) > 1)
        fprintf(stderr, "pool: [%zu] %g vs %g\n", worst, zv[worst], want[worst]);
    CHECK(dcompare(zv, want, nz, 0, 1e-9, NULL) <= 1);
    printf("PPU %s %ux%u s%u p%u on %ux%ux%u: exact\n", op == NPU_DPU_POOL_MAX ? "max" : "min", k,
           k, s, pad, C, H, W);
    free(xv), free(zv), free(want);
    drig_close(&r);
}

/* -------------------------------------------------------------- transpose */

static void
test_tp(void)
{
    /* the vendor's shape (onpu-relu): a row-major [R][C] matrix read as C channels of R
     * pixels (interleaved surfaces one atom apart), written as NC1HWC2 with R pixels */
    const uint32_t R = 24, C = 40;
    struct drig r;
    drig_open(&r, 4096, 1 << 16);
    struct npu_dpu_ref src = drig_alloc(&r, DRIG_A, (size_t)R * C * 2);
    uint16_t *m = (uint16_t *)drig_ptr(&r, src);
    for (uint32_t i = 0; i < R; i++)
        for (uint32_t j = 0; j < C; j++)
            m[i * C + j] = npu_fp32_to_fp16((float)(i * C + j));
    struct npu_dpu_map in = {
        .ref = src, .type = NPU_DPU_FP16, .w = 1, .h = R, .c = C, .line = C / 8, .surf = 1};
    struct npu_dpu_map out = drig_map(&r, DRIG_A, NPU_DPU_FP16, R, 1, C);
    /* pixel p = row i goes to lane i % 8 of atom i / 8: one grid column, grid rows one
     * surface (C atoms) apart, channel j at atom j */
    struct npu_dpu_tp t = {.in = in, .dst = out.ref, .grid_w = 1, .grid_line = C, .chan_stride = 1};
    CHECK_EQ_INT(NPU_OK, npu_dpu_emit_tp(&r.s, &t, &r.cost));
    CHECK_EQ_INT(NPU_OK, drig_run(&r));
    float *ov = malloc((size_t)R * C * 4);
    drig_get(&r, &out, ov); /* out[c = i][x = j] */
    unsigned bad = 0;
    for (uint32_t i = 0; i < R; i++)
        for (uint32_t j = 0; j < C; j++)
            if (ov[(size_t)i * C + j] != (float)(i * C + j) && bad++ < 5)
                fprintf(stderr, "tp [%u][%u] = %g\n", i, j, ov[(size_t)i * C + j]);
    CHECK_EQ_INT(0, bad);
    printf("transpose copy %ux%u (RKNN's layout-copy shape): exact\n", R, C);
    free(ov);
    drig_close(&r);
}

int
main(void)
{
    test_ew_ops();
    test_stages();
    test_views();
    test_conv(false, 40, 24, 5, 7, 1, 1, 1, 0, true, false);
    test_conv(true, 40, 24, 5, 7, 1, 1, 1, 0, false, false);
    test_conv(false, 13, 20, 9, 11, 3, 3, 1, 1, false, false);
    test_conv(false, 16, 16, 12, 9, 3, 3, 2, 1, true, false);
    test_conv(false, 24, 24, 10, 10, 3, 3, 1, 1, false, true);
    test_conv(false, 256, 64, 96, 20, 1, 1, 1, 0, true, false); /* row tiles */
    test_pool(NPU_DPU_POOL_MAX, 19, 9, 13, 3, 2, 1);
    test_pool(NPU_DPU_POOL_MIN, 8, 8, 8, 2, 2, 0);
    test_pool(NPU_DPU_POOL_MAX, 24, 14, 14, 14, 14, 0);
    test_tp();
    return npu_test_done("dpu-emit");
}
