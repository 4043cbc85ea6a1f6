/* SPDX-License-Identifier: MIT */
/*
 * test-qdq-fuse.c: a DequantizeLinear folded into the QLinearMatMul before it
 * (compiler/backend/conv-quant.c conv_deq_consumer): the int8 product's DPU writes the
 * dequantised fp16 result, keeping the int8 range's saturation. On the strict simulator
 * the fused program agrees with the unfused one (npu_conv_deq_fusion = 0: the product
 * requantises to int8, a DPU pass dequantises) within one int8 step plus fp16 rounding,
 * and with the CPU executor likewise; it has one DPU node fewer; cost() of the product
 * equals the lowered rk.Conv's modeled time and the DequantizeLinear's is 0. A per-channel weight
 * scale with a result zero point other than -128 (its saturation needs both bounds) folds
 * with the lower bound added back by the EW stage from a constant operand when that is small
 * (conv-quant.c conv_deq_lo_ew), and is left unfused otherwise. With a residual Add after the
 * DequantizeLinear (the other operand made on the NPU first), the product's EW stage adds it too
 * (conv-fuse.c conv_residual_add): two DPU passes fewer, checked the same way. With an activation
 * after the DequantizeLinear (GELU, tanh-GELU, sigmoid), the EW stage applies it as its DPU LUT
 * (conv-quant.c conv_deq_act), the per-channel scales carrying the table's input scale.
 */
#include "graph-case.h"
#include "npu/npu-timing.h"

extern int npu_conv_deq_fusion; /* conv-quant.c */

struct fcase {
    const char *label;
    int64_t m, k, n;
    int per_channel;
    int y_zp;
    float y_scale;
    int fuses;
    int residual;    /* an Add of Relu(r) (r: a second, fp32 input) after the DequantizeLinear */
    enum npu_op act; /* an activation after the DequantizeLinear (NPU_OP_NONE: none) */
};

static struct npu_value *
i8_const(struct npu_graph *g, const char *name, int nd, const int64_t *d, const int8_t *v)
{
    struct npu_tensor t = {.dtype = NPU_DTYPE_INT8, .ndim = nd};
    for (int i = 0; i < nd; i++)
        t.dims[i] = d[i];
    t.data = (void *)v;
    return npu_graph_add_const(g, name, &t);
}

static struct npu_graph *
build(const struct fcase *p)
{
    struct npu_graph *g = npu_graph_new("qfuse");
    int64_t xd[2] = {p->m, p->k}, wd[2] = {p->k, p->n};
    struct npu_value *x = npu_graph_add_input(g, "x", NPU_DTYPE_INT8, 2, xd);
    struct npu_value *rr = NULL;
    if (p->residual) {
        /* the residual operand: made on the NPU before the product, so its EW stage reads
         * it */
        int64_t rd[2] = {p->m, p->n};
        struct npu_value *r = npu_graph_add_input(g, "r", NPU_DTYPE_FP32, 2, rd);
        rr = gc_done(g, gc_node(g, NPU_OP_RELU, "rrelu", &r, 1, 1));
        if (!rr)
            return g;
    }
    int8_t *w = malloc((size_t)(p->k * p->n));
    uint32_t s = 777;
    for (int64_t i = 0; i < p->k * p->n; i++)
        w[i] = (int8_t)(tu_rand(&s) >> 24);
    struct npu_value *wv = i8_const(g, "w", 2, wd, w);
    free(w);
    float xs = 0.02f, ys = p->y_scale;
    int8_t xz = 3, wz = 0, yz = (int8_t)p->y_zp;
    struct npu_value *xsv = gc_const(g, "xs", 0, NULL, &xs);
    struct npu_value *xzv = i8_const(g, "xz", 0, NULL, &xz);
    struct npu_value *wsv;
    if (p->per_channel) {
        float *ws = malloc(sizeof(float) * (size_t)p->n);
        for (int64_t i = 0; i < p->n; i++)
            ws[i] = 0.004f * (float)(1 + i % 5);
        int64_t nd = p->n;
        wsv = gc_const(g, "ws", 1, &nd, ws);
        free(ws);
    } else {
        float ws = 0.006f;
        wsv = gc_const(g, "ws", 0, NULL, &ws);
    }
    struct npu_value *wzv = i8_const(g, "wz", 0, NULL, &wz);
    struct npu_value *ysv = gc_const(g, "ys", 0, NULL, &ys);
    struct npu_value *yzv = i8_const(g, "yz", 0, NULL, &yz);
    struct npu_value *in[8] = {x, xsv, xzv, wv, wsv, wzv, ysv, yzv};
    struct npu_node *q = gc_node(g, NPU_OP_QLINEAR_MATMUL, "qmm", in, 8, 1);
    struct npu_value *y = gc_done(g, q);
    if (!y)
        return g;
    struct npu_value *din[3] = {y, ysv, yzv};
    struct npu_node *dq = gc_node(g, NPU_OP_DEQUANTIZE_LINEAR, "dq", din, 3, 1);
    y = gc_done(g, dq);
    if (y && rr) {
        struct npu_value *ain[2] = {y, rr};
        y = gc_done(g, gc_node(g, NPU_OP_ADD, "radd", ain, 2, 1));
    }
    if (y && p->act != NPU_OP_NONE)
        y = gc_done(g, gc_node(g, p->act, "act", &y, 1, 1));
    if (y)
        npu_graph_add_output(g, y);
    return g;
}

static void
run_case(const struct fcase *p)
{
    int64_t n = p->m * p->k;
    struct npu_tensor x = {.dtype = NPU_DTYPE_INT8, .ndim = 2, .dims = {p->m, p->k}};
    int8_t *xv = malloc((size_t)n);
    uint32_t s = 4242;
    for (int64_t i = 0; i < n; i++)
        xv[i] = (int8_t)(tu_rand(&s) >> 24);
    x.data = xv;
    struct npu_tensor xr[2] = {x, {.dtype = NPU_DTYPE_FP32, .ndim = 2, .dims = {p->m, p->n}}};
    float *rv = malloc(sizeof(float) * (size_t)(p->m * p->n));
    for (int64_t i = 0; i < p->m * p->n; i++)
        rv[i] = (float)((int32_t)(tu_rand(&s) >> 16) - 32768) / 8192.0f;
    xr[1].data = rv;
    int nin = p->residual ? 2 : 1;
    struct npu_tensor want = {0}, fused = {0}, plain = {0};
    struct tu_npu_result rf, rp;
    CHECK_EQ_INT(NPU_OK, tu_run_cpu(build(p), xr, nin, &want));
    npu_conv_deq_fusion = 1;
    CHECK_EQ_INT(NPU_OK, tu_run_npu(build(p), NULL, xr, &fused, &rf));
    npu_conv_deq_fusion = 0;
    CHECK_EQ_INT(NPU_OK, tu_run_npu(build(p), NULL, xr, &plain, &rp));
    npu_conv_deq_fusion = 1;
    if (!want.data || !fused.data || !plain.data) {
        CHECK(0);
        goto out;
    }
    int64_t ne = npu_tensor_numel(&want);
    CHECK(npu_tensor_numel(&fused) == ne && npu_tensor_numel(&plain) == ne);
    const float *a = fused.data, *b = plain.data, *c = want.data;
    double worst_p = 0, worst_c = 0;
    int64_t sat = 0, moved = 0;
    float lo = (-128.0f - p->y_zp) * p->y_scale, hi = (127.0f - p->y_zp) * p->y_scale;
    for (int64_t i = 0; i < ne; i++) {
        /* one int8 step (the fused result is not rounded to int8) + fp16 rounding; after
         * an activation (slope up to 1.13) also the LUT's own error */
        double tol = p->act != NPU_OP_NONE ? p->y_scale * 1.2 + fabs(c[i]) / 256 + 2e-3
                                           : p->y_scale * 1.001 + fabs(c[i]) / 1024 + 1e-6;
        worst_p = fmax(worst_p, fabs((double)a[i] - b[i]) / tol);
        worst_c = fmax(worst_c, fabs((double)a[i] - c[i]) / tol);
        moved += a[i] != b[i];
        /* the int8 range is kept (the residual added after it) */
        float r = p->residual ? fmaxf(rv[i], 0) : 0, d = a[i] - r;
        if (p->act != NPU_OP_NONE) /* the range is before the activation: see the cpu */
            continue;
        sat += c[i] - r <= lo || c[i] - r >= hi;
        CHECK(d >= lo * 1.001f - 1e-3f && d <= hi * 1.001f + 1e-3f);
    }
    CHECK(worst_p <= 1);
    CHECK(worst_c <= 1);
    CHECK(sat > 0 || p->act != NPU_OP_NONE); /* the cases exercise the saturation */
    CHECK_EQ_INT(0, rf.n_cpu);
    if (p->fuses)
        CHECK_EQ_INT(rp.n_dpu - 1 - p->residual - (p->act != NPU_OP_NONE), rf.n_dpu);
    else
        CHECK_EQ_INT(rp.n_dpu, rf.n_dpu);
    printf("  %-34s %lld results (%lld saturated, %lld differ): worst %.3f / %.3f of "
           "tolerance vs unfused / cpu; DPU nodes %d -> %d, tasks %u -> %u, %.2f -> %.2f us "
           "modeled (%s)\n",
           p->label, (long long)ne, (long long)sat, (long long)moved, worst_p, worst_c, rp.n_dpu,
           rf.n_dpu, rp.tasks, rf.tasks, rp.modeled_s * 1e6, rf.modeled_s * 1e6,
           npu_timing_model()->label);
out:
    free(rv);
    free(x.data);
    free(want.data);
    free(fused.data);
    free(plain.data);
}

/* cost() of the product and the DequantizeLinear against the modeled time of what they
 * lower to: fused, the rk.Conv carries both and the DequantizeLinear costs nothing. */
static void
check_cost(const struct fcase *p)
{
    struct npu_graph *g = build(p);
    npu_graph_update_uses(g);
    double cq = -1, cd = -1, ca = -1, cact = -1;
    npu_graph_for_each_node (g, n) {
        if (!strcmp(n->name, "qmm"))
            cq = npu_backend_cost(g, n, NULL);
        if (!strcmp(n->name, "dq"))
            cd = npu_backend_cost(g, n, NULL);
        if (!strcmp(n->name, "radd"))
            ca = npu_backend_cost(g, n, NULL);
        if (!strcmp(n->name, "act"))
            cact = npu_backend_cost(g, n, NULL);
    }
    if (p->act != NPU_OP_NONE)
        CHECK(cact == 0); /* priced in the product */
    if (p->residual)
        CHECK(ca == 0); /* priced in the product */
    CHECK_EQ_INT(NPU_OK, npu_lower_graph(g, NULL));
    double conv = -1, dpu = 0;
    npu_graph_for_each_node (g, n) {
        if (n->op == NPU_OP_RK_CONV)
            conv = npu_node_float(n, "modeled_us", -1) * 1e-6;
        if (n->op == NPU_OP_RK_DPU && !strcmp(n->name, "dq"))
            dpu = npu_node_float(n, "modeled_us", -1) * 1e-6;
    }
    CHECK(conv > 0);
    CHECK(fabs(cq - conv) <= 1e-9 + 1e-6 * conv);
    CHECK(fabs(cd - dpu) <= 1e-9 + 1e-6 * dpu);
    if (p->fuses)
        CHECK(cd == 0 && dpu == 0);
    else
        CHECK(cd > 0 && dpu > 0);
    printf("  cost %-34s product %.3f us (lowered %.3f), dequantise %.3f us (lowered %.3f)\n",
           p->label, cq * 1e6, conv * 1e6, cd * 1e6, dpu * 1e6);
    npu_graph_free(g);
}

int
main(void)
{
    /* small y scales so that some results saturate */
    static const struct fcase cases[] = {
        {"per-tensor, zp 5", 64, 96, 80, 0, 5, 0.08f, 1},
        {"per-tensor, zp -128 (relu range)", 32, 64, 48, 0, -128, 0.05f, 1},
        {"per-channel, zp -128 (relu range)", 64, 96, 80, 1, -128, 0.1f, 1},
        {"per-channel, zp 5 (lower bound in EW)", 32, 64, 48, 1, 5, 0.1f, 1},
        {"per-channel, zp 0 (lower bound in EW)", 1, 256, 320, 1, 0, 0.1f, 1},
        {"per-channel, zp 5, 128 KB bound: not fused", 128, 64, 256, 1, 5, 0.1f, 0},
        {"per-tensor, zp 5, residual Add", 64, 96, 80, 0, 5, 0.08f, 1, 1},
        {"per-channel, zp -128, residual Add", 32, 64, 48, 1, -128, 0.1f, 1, 1},
        {"per-tensor, zp 5, tanh-GELU", 64, 96, 80, 0, 5, 0.08f, 1, 0, NPU_OP_FUSED_GELU_TANH},
        {"per-tensor, zp -20, GELU", 32, 64, 48, 0, -20, 0.05f, 1, 0, NPU_OP_GELU},
        {"per-channel, zp -128, sigmoid", 32, 64, 48, 1, -128, 0.1f, 1, 0, NPU_OP_SIGMOID},
        {"per-channel, zp 0, sigmoid (EW add, LUT)", 4, 96, 80, 1, 0, 0.1f, 1, 0, NPU_OP_SIGMOID},
    };
    for (size_t i = 0; i < NPU_ARRAY_SIZE(cases); i++) {
        run_case(&cases[i]);
        check_cost(&cases[i]);
    }
    return npu_test_done("dpu-qdq-fuse");
}
