/* SPDX-License-Identifier: MIT */
/*
 * test-qdq.c: QuantizeLinear / DequantizeLinear on the DPU (compiler/backend/dpu-qdq.c)
 * against the CPU executor, on the strict simulator: the int8 results of QuantizeLinear
 * within one int8 step of the CPU's (round half to even, saturation) and equal where the
 * inputs are exact halves; DequantizeLinear within fp16 rounding; a Q -> DQ chain in one
 * NPU job; cost() equal to the lowered tasks' modeled time; the refusals (uint8, per-axis
 * scales) with their reasons.
 */
#include "graph-case.h"
#include "npu-dpu-ops.h"
#include "npu/npu-timing.h"

extern int npu_dpu_qdq; /* dpu-qdq.c */

struct qcase {
    int kind; /* 0: Q, 1: DQ, 2: Q -> DQ */
    int nd;
    int64_t d[4];
    float scale;
    int zp;
    enum npu_dtype qt; /* int8, or uint8 for the refusal */
    int per_axis;      /* scale of C values (refused) */
    int qbits;         /* 4: a 4-bit result held one a byte, as the importer marks INT4 (refused) */
};

static struct npu_value *
qparams(struct npu_graph *g, const struct qcase *p, struct npu_value **zp)
{
    struct npu_value *s;
    if (p->per_axis) {
        int64_t c = p->d[1];
        float *v = malloc(sizeof(float) * (size_t)c);
        for (int64_t i = 0; i < c; i++)
            v[i] = p->scale * (float)(i + 1);
        s = gc_const(g, "scale", 1, &c, v);
        free(v);
    } else {
        float v = p->scale;
        s = gc_const(g, "scale", 0, NULL, &v);
    }
    struct npu_tensor t = {.dtype = p->qt, .ndim = 0};
    int8_t z8 = (int8_t)p->zp;
    uint8_t zu = (uint8_t)p->zp;
    t.data = p->qt == NPU_DTYPE_INT8 ? (void *)&z8 : (void *)&zu;
    *zp = npu_graph_add_const(g, "zp", &t);
    return s;
}

static struct npu_graph *
build(const void *vp)
{
    const struct qcase *p = vp;
    struct npu_graph *g = npu_graph_new("qdq");
    struct npu_value *x = p->kind == 1 ? npu_graph_add_input(g, "x", p->qt, p->nd, p->d)
                                       : gc_input(g, "x", p->nd, p->d);
    struct npu_value *zp, *s = qparams(g, p, &zp);
    struct npu_value *in[3] = {x, s, zp};
    if (p->kind != 1) {
        struct npu_node *q = gc_node(g, NPU_OP_QUANTIZE_LINEAR, "q", in, 3, 1);
        if (p->per_axis)
            npu_node_set_int(g, q, "axis", 1);
        if (p->qbits)
            npu_node_set_int(g, q, "qbits", p->qbits);
        x = gc_done(g, q);
        if (!x)
            return g;
    }
    if (p->kind != 0) {
        in[0] = x;
        struct npu_node *dq = gc_node(g, NPU_OP_DEQUANTIZE_LINEAR, "dq", in, 3, 1);
        x = gc_done(g, dq);
        if (!x)
            return g;
    }
    npu_graph_add_output(g, x);
    return g;
}

/* An input: kind 1 int8 values over the whole range; else floats in [-amp, amp], or
 * exact halves (k + 1/2) * scale when `halves`. */
static void
fill(const struct qcase *p, struct npu_tensor *t, float amp, bool halves)
{
    int64_t n = 1;
    memset(t, 0, sizeof(*t));
    t->ndim = p->nd;
    for (int i = 0; i < p->nd; i++)
        n *= (t->dims[i] = p->d[i]);
    uint32_t s = 12345;
    if (p->kind == 1) {
        t->dtype = p->qt;
        int8_t *v = malloc((size_t)n);
        for (int64_t i = 0; i < n; i++)
            v[i] = (int8_t)(tu_rand(&s) >> 24);
        t->data = v;
        return;
    }
    t->dtype = NPU_DTYPE_FP32;
    float *v = malloc(sizeof(float) * (size_t)n);
    for (int64_t i = 0; i < n; i++) {
        double u = (double)tu_rand(&s) / 4294967296.0 * 2.0 - 1.0;
        v[i] = halves ? ((float)floor(u * 140) + 0.5f) * p->scale : (float)(u * amp);
    }
    t->data = v;
}

static void
run_case(const char *label, const struct qcase *p, float amp, bool halves)
{
    struct npu_tensor x, want = {0}, got = {0};
    struct tu_npu_result res;
    fill(p, &x, amp, halves);
    CHECK_EQ_INT(NPU_OK, tu_run_cpu(build(p), &x, 1, &want));
    enum npu_status st = tu_run_npu(build(p), NULL, &x, &got, &res);
    CHECK_EQ_INT(NPU_OK, st);
    if (st || !want.data) {
        free(x.data);
        free(want.data);
        free(got.data);
        return;
    }
    int64_t n = npu_tensor_numel(&want);
    CHECK_EQ_INT(want.dtype, got.dtype);
    CHECK(npu_tensor_numel(&got) == n);
    int64_t off = 0, sat = 0;
    double worst = 0;
    if (p->kind == 0) {
        const int8_t *a = got.data, *b = want.data;
        for (int64_t i = 0; i < n; i++) {
            int d = abs((int)a[i] - (int)b[i]);
            off += d != 0;
            sat += b[i] == 127 || b[i] == -128;
            worst = d > worst ? d : worst;
        }
        CHECK(worst <= 1);
        if (halves)
            CHECK_EQ_INT(0, (int)off); /* exact halves: round half to even like the CPU */
    } else {
        const float *a = got.data, *b = want.data;
        for (int64_t i = 0; i < n; i++) {
            double d = fabs((double)a[i] - b[i]);
            /* DQ alone: fp16 rounding of the result; Q -> DQ: one int8 step besides */
            double tol = (p->kind == 2 ? p->scale * 1.001 : 0) + fabs(b[i]) * 1.0 / 1024 + 1e-7;
            if (d / tol > worst)
                worst = d / tol;
            off += d > fabs(b[i]) * 1.0 / 1024 + 1e-7;
        }
        CHECK(worst <= 1);
    }
    CHECK_EQ_INT(0, res.n_cpu);
    CHECK_EQ_INT(1, (int)res.submits);
    printf("  %-40s %lld elements: %lld off by one step%s, %lld saturated; worst %.3g%s; "
           "%u tasks, %u job, %.2f us modeled (%s)\n",
           label, (long long)n, (long long)off, p->kind ? " (beyond fp16 rounding)" : "",
           (long long)sat, worst, p->kind ? " of tolerance" : " step", res.tasks, res.submits,
           res.modeled_s * 1e6, npu_timing_model()->label);
    free(x.data);
    free(want.data);
    free(got.data);
}

/* cost() of each Q / DQ node against the modeled time of the rk.Dpu it lowers to. */
static void
check_cost(const struct qcase *p)
{
    struct npu_graph *g = build(p);
    npu_graph_update_uses(g);
    const char *names[2] = {"q", "dq"};
    double cost[2] = {-1, -1};
    npu_graph_for_each_node (g, n)
        for (int i = 0; i < 2; i++)
            if (!strcmp(n->name, names[i]))
                cost[i] = npu_backend_cost(g, n, NULL);
    CHECK_EQ_INT(NPU_OK, npu_lower_graph(g, NULL));
    for (int i = 0; i < 2; i++) {
        const struct npu_node *r = NULL;
        npu_graph_for_each_node (g, n)
            if (n->op == NPU_OP_RK_DPU && !strcmp(n->name, names[i]))
                r = n;
        CHECK(r != NULL);
        if (!r)
            continue;
        double lowered = npu_node_float(r, "modeled_us", -1) * 1e-6;
        CHECK(lowered > 0);
        CHECK(fabs(cost[i] - lowered) <= 1e-9 + 1e-6 * lowered);
        printf("  cost %-3s %.3f us, lowered %.3f us (%d task)\n", names[i], cost[i] * 1e6,
               lowered * 1e6, npu_rk_dpu_task_count(r));
    }
    npu_graph_free(g);
}

static void
check_refused(const char *label, const struct qcase *p, const char *node, const char *reason)
{
    struct npu_graph *g = build(p);
    npu_graph_update_uses(g);
    bool seen = false;
    npu_graph_for_each_node (g, n) {
        if (strcmp(n->name, node))
            continue;
        char why[256] = "";
        seen = true;
        CHECK(!npu_backend_supports(g, n, NULL, why, sizeof(why)));
        CHECK(strstr(why, reason) != NULL);
        printf("  refused %-32s %s\n", label, why);
    }
    CHECK(seen);
    npu_graph_free(g);
}

int
main(void)
{
    /* scales as the quantiser makes them (range / 255) and a power of two (exact halves) */
    struct qcase q4 = {0, 4, {1, 20, 7, 9}, 0.0137f, 5, NPU_DTYPE_INT8, 0};
    struct qcase q2 = {0, 2, {50, 40}, 0.021f, -3, NPU_DTYPE_INT8, 0};
    struct qcase qh = {0, 4, {1, 3, 5, 6}, 0.0625f, 0, NPU_DTYPE_INT8, 0};
    struct qcase d4 = {1, 4, {1, 20, 7, 9}, 0.0137f, 5, NPU_DTYPE_INT8, 0};
    struct qcase d2 = {1, 2, {50, 40}, 0.021f, -3, NPU_DTYPE_INT8, 0};
    struct qcase c4 = {2, 4, {1, 33, 4, 4}, 0.0119f, -7, NPU_DTYPE_INT8, 0};
    printf("QuantizeLinear / DequantizeLinear on the DPU vs the CPU executor (strict sim)\n");
    run_case("Q [1,20,7,9] s 0.0137 zp 5 (saturating)", &q4, 2.0f, false);
    run_case("Q [50,40] s 0.021 zp -3", &q2, 2.5f, false);
    run_case("Q [1,3,5,6] s 1/16 exact halves", &qh, 0, true);
    run_case("DQ [1,20,7,9] s 0.0137 zp 5", &d4, 0, false);
    run_case("DQ [50,40] s 0.021 zp -3", &d2, 0, false);
    run_case("Q -> DQ [1,33,4,4] s 0.0119 zp -7", &c4, 1.6f, false);
    check_cost(&c4);

    struct qcase u8 = q4, pa = q4, du8 = d4, i4 = q4;
    i4.qbits = 4;
    u8.qt = NPU_DTYPE_UINT8;
    u8.zp = 128;
    du8.qt = NPU_DTYPE_UINT8;
    du8.zp = 128;
    pa.per_axis = 1;
    check_refused("Q to uint8", &u8, "q", "int8 only");
    check_refused("DQ of uint8", &du8, "dq", "int8 only");
    check_refused("Q per-axis scale", &pa, "q", "per-tensor");
    check_refused("Q to int4 (qbits 4)", &i4, "q", "to 4 bits");
    npu_dpu_qdq = 0;
    check_refused("Q with npu_dpu_qdq = 0", &q4, "q", "switched off");
    npu_dpu_qdq = 1;
    return npu_test_done("dpu-qdq");
}
