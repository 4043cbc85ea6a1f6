/* SPDX-License-Identifier: MIT */
/*
 * test-lut.c: the LUT functions on the strict simulator against fp64 references, over each
 * function's useful input range (every fp16 value in it), printing the error table that
 * docs/npu-dpu-ops.md quotes and bounding it. Also checks that the compiler's host model of
 * the lookup (npu_dpu_lut_eval, used for the documentation and accuracy estimates) gives
 * exactly the simulator's outputs, and what happens outside the range (saturation).
 */
#include "graph-case.h"
#include "npu-dpu-ops.h"

extern int npu_dpu_gelu_two_pass;

struct lcase {
    enum npu_op op;
    const char *approx;
    enum npu_dpu_fn fn;
    double lo, hi;  /* useful range */
    double max_abs; /* bound on |npu - f| in range */
    bool two_pass;
};

struct lctx {
    struct lcase c;
    int64_t dims[3];
};

static struct npu_graph *
build(const struct lctx *ctx)
{
    const struct lcase *c = &ctx->c;
    const int64_t *dims = ctx->dims;
    struct npu_graph *g = npu_graph_new("lut");
    struct npu_value *x = gc_input(g, "x", 3, dims);
    struct npu_node *n = gc_node(g, c->op, "f", &x, 1, 1);
    if (c->approx)
        npu_node_set_string(g, n, "approximate", c->approx);
    return gc_output(g, gc_done(g, n));
}

/* Every fp16 value in [lo, hi] (plus the ends), padded to a multiple of 64. */
static float *
sweep(double lo, double hi, int64_t *n)
{
    float *v = malloc(65536 * sizeof(float) + 256);
    int64_t k = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = npu_fp16_to_fp32((uint16_t)h);
        if (isfinite(f) && f >= lo && f <= hi)
            v[k++] = f;
    }
    while (k % 64)
        v[k++] = (float)lo;
    *n = k;
    return v;
}

static double
run(const struct lcase *c, const float *x, int64_t n, float *out)
{
    struct lctx ctx = {.c = *c, .dims = {1, n / 64, 64}};
    struct npu_graph *g = build(&ctx);
    struct npu_tensor in = {
        .dtype = NPU_DTYPE_FP32, .ndim = 3, .dims = {1, n / 64, 64}, .data = (void *)x};
    struct npu_tensor got = {0};
    struct tu_npu_result res;
    npu_dpu_gelu_two_pass = c->two_pass;
    enum npu_status st = tu_run_npu(g, NULL, &in, &got, &res);
    npu_dpu_gelu_two_pass = 0;
    CHECK_EQ_INT(NPU_OK, st);
    if (st)
        return -1;
    CHECK_EQ_INT(0, res.n_cpu);
    memcpy(out, got.data, (size_t)n * 4);
    free(got.data);
    return res.modeled_s;
}

int
main(void)
{
    const struct lcase cases[] = {
        /* bounds: half an fp16 ulp of the largest output (the final rounding) plus the
         * table's own error (interpolation + int16 quantisation, the 'lut' line) */
        {NPU_OP_SIGMOID, NULL, NPU_DPU_FN_SIGMOID, -16, 16, 2.45e-4 + 4e-5, false},
        {NPU_OP_TANH, NULL, NPU_DPU_FN_TANH, -8, 8, 2.45e-4 + 4e-5, false},
        {NPU_OP_ERF, NULL, NPU_DPU_FN_ERF, -4, 4, 2.45e-4 + 4e-5, false},
        {NPU_OP_GELU, NULL, NPU_DPU_FN_GELU, -8, 16, 3.91e-3 + 4e-4, false},
        {NPU_OP_GELU, "tanh", NPU_DPU_FN_GELU_TANH, -8, 16, 3.91e-3 + 4e-4, false},
        {NPU_OP_FUSED_SILU, NULL, NPU_DPU_FN_SILU, -16, 16, 3.91e-3 + 4e-4, false},
        {NPU_OP_GELU, NULL, NPU_DPU_FN_GELU, -8, 64, 1.57e-2 + 1e-3, true},
        {NPU_OP_GELU, "tanh", NPU_DPU_FN_GELU_TANH, -8, 64, 1.57e-2 + 1e-3, true},
        {NPU_OP_FUSED_SILU, NULL, NPU_DPU_FN_SILU, -16, 64, 1.57e-2 + 1e-3, true},
    };
    printf("LUT functions on the simulator vs fp64, every fp16 input in the range "
           "(errors include the fp16 output rounding; 'lut' = the error before it):\n");
    printf("  %-22s %-12s %10s %10s %10s %10s  %s\n", "function", "range", "max abs", "rel",
           "lut abs", "fp16 ulp", "beyond the range");
    for (size_t i = 0; i < NPU_ARRAY_SIZE(cases); i++) {
        const struct lcase *c = &cases[i];
        int64_t n;
        float *x = sweep(c->lo, c->hi, &n);
        float *y = malloc((size_t)n * 4);
        double ms = run(c, x, n, y);
        if (ms < 0) {
            free(x), free(y);
            continue;
        }
        const struct npu_dpu_lut *l = npu_dpu_lut_get(npu_dpu_lut_fn_id(c->fn));
        double max_abs = 0, max_rel = 0, lut_abs = 0, ulp = 0;
        unsigned model_mismatch = 0;
        for (int64_t k = 0; k < n; k++) {
            double f = npu_dpu_fn_ref(c->fn, x[k]);
            double e = fabs(y[k] - f);
            if (e > max_abs) {
                max_abs = e;
                ulp = fabs(npu_fp16_to_fp32(npu_fp32_to_fp16((float)f) + 1) -
                           npu_fp16_to_fp32(npu_fp32_to_fp16((float)f)));
            }
            if (fabs(f) > 1e-2 && e / fabs(f) > max_rel)
                max_rel = e / fabs(f);
            if (!c->two_pass) {
                double u = (double)x[k] * l->in_scale;
                double raw = npu_dpu_lut_lookup(l, u);
                if (fabs(raw - f) > lut_abs)
                    lut_abs = fabs(raw - f);
                model_mismatch += (float)npu_dpu_lut_eval(l, x[k]) != y[k];
            }
        }
        /* outside: 2x the range end */
        float xo[64], yo[64];
        for (int k = 0; k < 64; k++)
            xo[k] = (float)(k < 32 ? 2 * c->lo : 2 * c->hi);
        double beyond = 0;
        if (run(c, xo, 64, yo) >= 0)
            for (int k = 0; k < 64; k++)
                beyond = fmax(beyond, fabs(yo[k] - npu_dpu_fn_ref(c->fn, xo[k])));
        char label[48], range[32];
        snprintf(label, sizeof(label), "%s%s%s", npu_dpu_fn_name(c->fn),
                 c->two_pass ? " (2 pass)" : "", "");
        snprintf(range, sizeof(range), "[%g, %g]", c->lo, c->hi);
        char lut[16] = "-";
        if (!c->two_pass)
            snprintf(lut, sizeof(lut), "%.2e", lut_abs);
        printf("  %-22s %-12s %10.2e %10.2e %10s %10.2e  |err| %.3g at %g / %g\n", label, range,
               max_abs, max_rel, lut, ulp, beyond, 2 * c->lo, 2 * c->hi);
        CHECK(max_abs <= c->max_abs);
        CHECK_EQ_INT(0, model_mismatch);
        free(x), free(y);
        (void)ms;
    }
    return npu_test_done("dpu-lut");
}
