/* SPDX-License-Identifier: MIT */
/*
 * test-lut-index.c: every LUT the compiler emits under both of the simulator's LUT index
 * models (docs/simulator.md, "LUT"): double (the fractional index of the exact value) and
 * fixed (the value rounded to an integer first, only the low INDEX_SELECT bits
 * interpolating). For each table it prints the max / mean error against the exact function
 * over every finite fp16 input of the function's domain, for the configuration the
 * compiler emits and for the previous one (the same entries with 2^5 times smaller input
 * scale and ranges and INDEX_SELECT 5 lower: 0, 1 or 7), which is the table
 * docs/npu-dpu-ops.md quotes. It bounds the emitted configurations under both models and
 * checks that the simulator under NPU_SIM_LUT=fixed gives exactly the host model's fixed
 * outputs (npu_dpu_lut_eval_fixed) for the functions a graph reaches directly and, through
 * a hand-emitted upload and pass, for the coarse exp table and a 1/sqrt band. The coarse
 * exp table (attention with the shift as an fp16 operand, dpu-attn.c) keeps INDEX_SELECT 0
 * and is flagged: under the fixed model it steps by 1/32 in t.
 */
#include "dpu-test.h"
#include "graph-case.h"
#include "npu-dpu-ops.h"

/* One row: a table, its exact function and the inputs that reach it. */
struct row {
    const char *name;
    uint32_t id;
    enum npu_dpu_fn fn; /* NPU_DPU_FN_COUNT: an rsqrt band */
    int band_lg;
    double lo, hi; /* domain of t */
    double bound;  /* max abs error allowed for the emitted configuration, both models */
    bool coarse;   /* INDEX_SELECT 0 kept on purpose: bound the double model only */
};

struct stats {
    double max_abs, mean_abs, max_rel, max_raw;
    int64_t n;
};

static double
band_ref(int lg, double v)
{
    double L = ldexp(1.0, lg), H = ldexp(1.0, lg + NPU_DPU_RSQRT_BAND_LG);
    return sqrt(L / NPU_MIN(NPU_MAX(v, L), H));
}

/* The previous layout of a table: the same entries, 32 times smaller index domain. */
static struct npu_dpu_lut
shift0(const struct npu_dpu_lut *l)
{
    struct npu_dpu_lut o = *l;
    o.le_start = l->le_start / 32;
    o.lo_start = l->lo_start / 32;
    o.le_sel = l->le_sel - 5;
    o.lo_sel = l->lo_sel - 5;
    o.in_scale = l->in_scale / 32;
    return o;
}

/* Output of table l for argument t: the BN scaling (exact powers of two, rsqrt bands
 * scale in two stages that are exact too), the lookup and the fp16 store. */
static double
out(const struct npu_dpu_lut *l, float t, bool fixed, double *raw)
{
    double u = (double)t * l->in_scale;
    double y = fixed ? npu_dpu_lut_lookup_fixed(l, u) : npu_dpu_lut_lookup(l, u);
    *raw = y;
    return npu_fp16_to_fp32(npu_fp32_to_fp16((float)y));
}

static struct stats
measure(const struct npu_dpu_lut *l, const struct row *r, bool fixed)
{
    struct stats s = {0};
    double sum = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float t = npu_fp16_to_fp32((uint16_t)h);
        if (!isfinite(t) || t < r->lo || t > r->hi)
            continue;
        double f = r->fn == NPU_DPU_FN_COUNT ? band_ref(r->band_lg, t) : npu_dpu_fn_ref(r->fn, t);
        double raw;
        double y = out(l, t, fixed, &raw);
        double e = fabs(y - f);
        s.max_abs = fmax(s.max_abs, e);
        s.max_raw = fmax(s.max_raw, fabs(raw - f));
        if (fabs(f) >= 1e-2)
            s.max_rel = fmax(s.max_rel, e / fabs(f));
        sum += e;
        s.n++;
    }
    s.mean_abs = s.n ? sum / (double)s.n : 0;
    return s;
}

static void
print_cfg(char *buf, size_t n, const struct npu_dpu_lut *l)
{
    snprintf(buf, n, "x%g sel %u/%u LE %d LO %d", l->in_scale, l->le_sel, l->lo_sel, l->le_start,
             l->lo_start);
}

/* The simulator under NPU_SIM_LUT=fixed against the host model, every fp16 input in
 * [lo, hi], through the graph path (one flying LUT pass). */
static void
sim_fixed(enum npu_op op, const char *approx, enum npu_dpu_fn fn, double lo, double hi)
{
    float *x = malloc(65536 * sizeof(float) + 256);
    int64_t n = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = npu_fp16_to_fp32((uint16_t)h);
        if (isfinite(f) && f >= lo && f <= hi)
            x[n++] = f;
    }
    while (n % 64)
        x[n++] = (float)lo;
    int64_t dims[3] = {1, n / 64, 64};
    struct npu_graph *g = npu_graph_new("lut-fixed");
    struct npu_value *v = gc_input(g, "x", 3, dims);
    struct npu_node *nd = gc_node(g, op, "f", &v, 1, 1);
    if (approx)
        npu_node_set_string(g, nd, "approximate", approx);
    struct npu_value *o = gc_done(g, nd);
    CHECK(o != NULL);
    if (!o) {
        free(x);
        return;
    }
    npu_graph_add_output(g, o);
    struct npu_tensor in = {.dtype = NPU_DTYPE_FP32, .ndim = 3, .dims = {1, n / 64, 64}, .data = x};
    struct npu_tensor got = {0};
    struct tu_npu_result res;
    enum npu_status st = tu_run_npu(g, NULL, &in, &got, &res);
    CHECK_EQ_INT(NPU_OK, st);
    if (!st) {
        const struct npu_dpu_lut *l = npu_dpu_lut_get(npu_dpu_lut_fn_id(fn));
        const float *y = got.data;
        int64_t bad = 0;
        for (int64_t k = 0; k < n; k++)
            if ((float)npu_dpu_lut_eval_fixed(l, x[k]) != y[k] && bad++ < 3)
                fprintf(stderr, "%s(%g): sim %g, host model %g\n", npu_dpu_fn_name(fn), x[k], y[k],
                        npu_dpu_lut_eval_fixed(l, x[k]));
        CHECK_EQ_INT(0, bad);
        printf("  simulator (NPU_SIM_LUT=fixed) = host model on %lld %s inputs: %s\n", (long long)n,
               npu_dpu_fn_name(fn), bad ? "NO" : "yes");
        free(got.data);
    }
    free(x);
}

/* The simulator under NPU_SIM_LUT=fixed against the host model for a table no single graph
 * op reaches (the coarse exp: INDEX_SELECT 0; a 1/sqrt band: 5 / 12), through one upload
 * and one flying pass (BN MUL by in_scale, then the LUT), every fp16 t in [lo, hi]. */
static void
sim_fixed_table(const struct npu_dpu_lut *l, const char *name, double lo, double hi)
{
    const uint32_t C = 8, W = 64;
    float *t = malloc(65536 * sizeof(float) + C * W * 4);
    size_t n = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = npu_fp16_to_fp32((uint16_t)h);
        if (isfinite(f) && f >= lo && f <= hi)
            t[n++] = f;
    }
    while (n % (C * W))
        t[n++] = (float)lo;
    uint32_t H = (uint32_t)(n / (C * W));
    struct drig r;
    drig_open(&r, 4096, 4u << 20);
    struct npu_dpu_ref scratch = drig_alloc(&r, DRIG_A, 32);
    struct npu_dpu_map x = drig_map(&r, DRIG_A, NPU_DPU_FP16, C, H, W);
    struct npu_dpu_map y = drig_map(&r, DRIG_A, NPU_DPU_FP16, C, H, W);
    drig_put(&r, &x, t);
    CHECK_EQ_INT(NPU_OK, npu_dpu_emit_lut_upload(&r.s, l, scratch, NULL));
    struct npu_dpu_pass p = {.in = x, .out = y};
    p.st.bn.mul = NPU_DPU_SRC_REG;
    p.st.bn.mul_value = l->in_scale;
    p.st.ew.lut = l;
    CHECK_EQ_INT(NPU_OK, npu_dpu_emit_pass(&r.s, &p, NULL));
    enum npu_status st = drig_run(&r);
    CHECK_EQ_INT(NPU_OK, st);
    if (st)
        fprintf(stderr, "%s: %s\n", name, r.msg);
    float *got = malloc(n * sizeof(float));
    drig_get(&r, &y, got);
    size_t bad = 0;
    for (size_t k = 0; !st && k < n; k++)
        if ((float)npu_dpu_lut_eval_fixed(l, t[k]) != got[k] && bad++ < 3)
            fprintf(stderr, "%s(%g): sim %g, host model %g\n", name, t[k], got[k],
                    npu_dpu_lut_eval_fixed(l, t[k]));
    CHECK_EQ_INT(0, bad);
    printf("  simulator (NPU_SIM_LUT=fixed) = host model on %zu %s inputs: %s\n", n, name,
           bad || st ? "NO" : "yes");
    free(got);
    free(t);
    drig_close(&r);
}

int
main(void)
{
    const double inf = INFINITY;
    /* bounds: the fp16 output rounding (half an ulp of the largest output) plus the
     * table's error under either model, with margin */
    const struct row rows[] = {
        {"sigmoid", 0, NPU_DPU_FN_SIGMOID, 0, -inf, inf, 5e-4},
        {"tanh", 0, NPU_DPU_FN_TANH, 0, -inf, inf, 5e-4},
        {"erf", 0, NPU_DPU_FN_ERF, 0, -inf, inf, 5e-4},
        {"gelu", 0, NPU_DPU_FN_GELU, 0, -8, 16, 4.4e-3},
        {"gelu_tanh", 0, NPU_DPU_FN_GELU_TANH, 0, -8, 16, 4.4e-3},
        {"silu", 0, NPU_DPU_FN_SILU, 0, -16, 16, 4.4e-3},
        {"phi", 0, NPU_DPU_FN_PHI, 0, -inf, inf, 5e-4},
        {"phi_tanh", 0, NPU_DPU_FN_PHI_TANH, 0, -inf, inf, 5e-4},
        {"exp_neg", 0, NPU_DPU_FN_EXP_NEG, 0, -inf, 0, 1e-3},
        {"exp_neg coarse", NPU_DPU_LUT_EXP_NEG_COARSE, NPU_DPU_FN_EXP_NEG, 0, -inf, 0, 1e-3, true},
        {"rsqrt band 2^-20", 0, NPU_DPU_FN_COUNT, -20, 0, inf, 7e-3},
        {"rsqrt band 2^-6", 0, NPU_DPU_FN_COUNT, -6, 0, inf, 7e-3},
        {"rsqrt band 2^8", 0, NPU_DPU_FN_COUNT, 8, 0, inf, 7e-3},
    };
    printf("LUT tables vs fp64 over every finite fp16 input of the domain, under the two index "
           "models\n(abs errors include the fp16 output rounding; 'raw' is the error before it; "
           "rel where |f| >= 1e-2):\n");
    printf("  %-17s %-10s %-32s | %-35s | %-35s\n", "table", "domain", "configuration",
           "double: max abs / mean / max rel / raw", "fixed: max abs / mean / max rel / raw");
    for (size_t i = 0; i < NPU_ARRAY_SIZE(rows); i++) {
        const struct row *r = &rows[i];
        uint32_t id = r->id                       ? r->id
                      : r->fn == NPU_DPU_FN_COUNT ? npu_dpu_lut_band_id(r->band_lg)
                                                  : npu_dpu_lut_fn_id(r->fn);
        const struct npu_dpu_lut *l = npu_dpu_lut_get(id);
        CHECK(l != NULL);
        if (!l)
            continue;
        char dom[64];
        snprintf(dom, sizeof(dom), "[%g, %g]", r->lo, r->hi);
        for (int old = 0; old < (r->coarse ? 1 : 2); old++) {
            struct npu_dpu_lut lo = old ? shift0(l) : *l;
            struct stats d = measure(&lo, r, false), f = measure(&lo, r, true);
            char cfg[64];
            print_cfg(cfg, sizeof(cfg), &lo);
            printf("  %-17s %-10s %-32s | %.2e %.2e %.2e %.2e | %.2e %.2e %.2e %.2e%s\n",
                   old ? "" : r->name, old ? "" : dom, cfg, d.max_abs, d.mean_abs, d.max_rel,
                   d.max_raw, f.max_abs, f.mean_abs, f.max_rel, f.max_raw,
                   old         ? "  (previous)"
                   : r->coarse ? "  (emitted, FLAG: no fraction bits)"
                               : "  (emitted)");
            if (!old && r->coarse) {
                CHECK(d.max_abs <= r->bound);
            } else if (!old) {
                CHECK(d.max_abs <= r->bound);
                CHECK(f.max_abs <= r->bound);
                CHECK(l->le_sel >= 5 && l->lo_sel >= 5);
            } else {
                /* the previous layout gives the same double-model outputs */
                struct stats dn = measure(l, r, false);
                CHECK(dn.max_abs == d.max_abs && dn.mean_abs == d.mean_abs);
            }
        }
    }
    setenv("NPU_SIM_LUT", "fixed", 1);
    sim_fixed(NPU_OP_SIGMOID, NULL, NPU_DPU_FN_SIGMOID, -16, 16);
    sim_fixed(NPU_OP_TANH, NULL, NPU_DPU_FN_TANH, -8, 8);
    sim_fixed(NPU_OP_GELU, NULL, NPU_DPU_FN_GELU, -8, 16);
    sim_fixed(NPU_OP_FUSED_SILU, NULL, NPU_DPU_FN_SILU, -16, 16);
    sim_fixed_table(npu_dpu_lut_get(NPU_DPU_LUT_EXP_NEG_COARSE), "exp_neg coarse", -20, 0);
    sim_fixed_table(npu_dpu_lut_get(npu_dpu_lut_band_id(-6)), "rsqrt band 2^-6", 0, 512);
    unsetenv("NPU_SIM_LUT");
    return npu_test_done("dpu-lut-index");
}
