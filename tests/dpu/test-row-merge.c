/* SPDX-License-Identifier: MIT */
/*
 * test-row-merge.c: a Reshape that merges the rows of a rows-layout NPU value into channels
 * (e.g. the one-token head merge [H, 1, hd] -> [1, 1, H hd] behind an NPU attention), read
 * by a product (MatMul, or QuantizeLinear -> QLinearMatMul in w8a8). The product's conv
 * lowering reads its input in the canonical view only, so the Reshape is lowered as a
 * relayout (dpu-move.c lower_row_merge: DPU copies into the canonical view) instead of a
 * copy in the input's view that the product then refused. Checks: every node on the NPU,
 * the Reshape's rk.Dpu has the expected copy count and its cost() matches the lowering, and
 * the result matches the CPU executor on the strict simulator.
 */
#include "graph-case.h"
#include "npu-dpu-ops.h"

struct mcase {
    int64_t a, r, c; /* input [a, r, c]: a x r rows of c channels */
    int64_t rows;    /* Reshape to [1, rows, a r c / rows] */
    int64_t k;       /* product's output columns */
    bool q;          /* QuantizeLinear -> QLinearMatMul -> DequantizeLinear */
    unsigned copies; /* DPU copies the relayout takes */
};

static struct npu_value *
qconst(struct npu_graph *g, const char *name, enum npu_dtype dt, int nd, const int64_t *d,
       const void *v)
{
    struct npu_tensor t = {.dtype = dt, .ndim = nd, .data = (void *)v};
    for (int i = 0; i < nd; i++)
        t.dims[i] = d[i];
    return npu_graph_add_const(g, name, &t);
}

static struct npu_graph *
build(const void *vp)
{
    const struct mcase *p = vp;
    struct npu_graph *g = npu_graph_new("row-merge");
    int64_t xd[3] = {p->a, p->r, p->c}, m = p->a * p->r * p->c / p->rows;
    /* an Add on the NPU holds x as rows (view c x a r x 1) */
    struct npu_value *in[2] = {gc_input(g, "x", 3, xd), gc_rconst(g, "k0", 3, xd, 5, 0.25f)};
    struct npu_value *y = gc_done(g, gc_node(g, NPU_OP_ADD, "add_in", in, 2, 1));
    int64_t rs[3] = {1, p->rows, m};
    struct npu_value *rin[2] = {y, gc_const_i64(g, "shape", rs, 3, false)};
    y = gc_done(g, gc_node(g, NPU_OP_RESHAPE, "reshape", rin, 2, 1));
    int64_t wd[2] = {m, p->k};
    if (!p->q) {
        struct npu_value *min[2] = {y, gc_rconst(g, "w", 2, wd, 7, 0.2f)};
        return gc_output(g, gc_done(g, gc_node(g, NPU_OP_MATMUL, "mm", min, 2, 1)));
    }
    /* w8a8: per-tensor int8 activations, per-column int8 weights */
    static const float xs = 1.0f / 64, ys = 1.0f / 16;
    static const int8_t z = 0;
    int8_t *wq = malloc((size_t)(m * p->k));
    float *ws = malloc(sizeof(float) * (size_t)p->k);
    int8_t *wz = calloc((size_t)p->k, 1);
    if (!wq || !ws || !wz) {
        free(wq);
        free(ws);
        free(wz);
        return NULL;
    }
    uint32_t s = 99;
    for (int64_t i = 0; i < m * p->k; i++)
        wq[i] = (int8_t)(tu_rand(&s) % 127 - 63);
    for (int64_t i = 0; i < p->k; i++)
        ws[i] = (float)(1.0 / 256 + (double)i / (4096.0 * (double)p->k));
    struct npu_value *vxs = qconst(g, "xs", NPU_DTYPE_FP32, 0, NULL, &xs),
                     *vys = qconst(g, "ys", NPU_DTYPE_FP32, 0, NULL, &ys),
                     *vz = qconst(g, "z", NPU_DTYPE_INT8, 0, NULL, &z),
                     *vw = qconst(g, "wq", NPU_DTYPE_INT8, 2, wd, wq),
                     *vws = qconst(g, "ws", NPU_DTYPE_FP32, 1, &p->k, ws),
                     *vwz = qconst(g, "wz", NPU_DTYPE_INT8, 1, &p->k, wz);
    free(wq);
    free(ws);
    free(wz);
    struct npu_value *qin[3] = {y, vxs, vz};
    y = gc_done(g, gc_node(g, NPU_OP_QUANTIZE_LINEAR, "quant", qin, 3, 1));
    struct npu_value *mm[8] = {y, vxs, vz, vw, vws, vwz, vys, vz};
    y = gc_done(g, gc_node(g, NPU_OP_QLINEAR_MATMUL, "qmm", mm, 8, 1));
    struct npu_value *dq[3] = {y, vys, vz};
    return gc_output(g, gc_done(g, gc_node(g, NPU_OP_DEQUANTIZE_LINEAR, "deq", dq, 3, 1)));
}

/* The Reshape lowered as a relayout of `copies` DPU copies into the canonical view (the
 * product's), and cost() of the Reshape before lowering equal to the lowered time. */
static void
check_lowering(const struct mcase *p, const char *label)
{
    struct npu_graph *g = build(p);
    CHECK(g != NULL);
    if (!g)
        return;
    npu_graph_update_uses(g);
    double cost = -1;
    npu_graph_for_each_node (g, n)
        if (!strcmp(n->name, "reshape"))
            cost = npu_backend_cost(g, n, NULL);
    CHECK_EQ_INT(NPU_OK, npu_lower_graph(g, NULL));
    const struct npu_node *r = NULL;
    int cpu = 0;
    npu_graph_for_each_node (g, n) {
        if (n->op == NPU_OP_RK_DPU && !strcmp(n->name, "reshape"))
            r = n;
        if (!npu_op_is_rk(n->op))
            cpu++;
    }
    CHECK_EQ_INT(0, cpu);
    CHECK(r != NULL);
    if (r) {
        uint32_t view[3];
        int64_t m = p->a * p->r * p->c / p->rows;
        CHECK(npu_rk_view(r->out[0], view));
        CHECK(view[0] == (uint32_t)m && view[1] == (uint32_t)p->rows && view[2] == 1);
        CHECK_EQ_INT(NPU_VIEW_HWC, (int)npu_rk_view_order(r->out[0]));
        CHECK_EQ_INT(0, (int)npu_node_int(r, "alias", 0));
        CHECK_EQ_INT((int)p->copies, npu_rk_dpu_task_count(r));
        double lowered = npu_node_float(r, "modeled_us", -1) * 1e-6;
        CHECK(lowered > 0 && fabs(cost - lowered) <= 1e-9 + 1e-6 * lowered);
        printf("  %-46s %u copies, cost %.2f us lowered %.2f us, %d CPU nodes\n", label,
               npu_rk_dpu_task_count(r), cost * 1e6, lowered * 1e6, cpu);
    }
    npu_graph_free(g);
}

static void
run_case(const struct mcase *p, const char *label)
{
    struct gcase c = {.label = label,
                      .build = build,
                      .ctx = p,
                      .nin = 1,
                      .atol = p->q ? 0.13 : 2e-2,
                      .rtol = 1e-2,
                      .expect_all_npu = true};
    int64_t xd[3] = {p->a, p->r, p->c};
    gc_fill(&c.in[0], 3, xd, 31, 16, 0);
    struct gresult r = gc_run(&c);
    printf("  %-46s tasks %4u  modeled %8.1f us  err/tol %.2f\n", label, r.tasks, r.modeled_s * 1e6,
           r.err);
    free(c.in[0].data);
}

int
main(void)
{
    /* one row of all heads, few surfaces: one copy per input surface (C / 8) */
    struct mcase heads = {.a = 8, .r = 1, .c = 16, .rows = 1, .k = 32, .copies = 2};
    /* GQA's decode layout [KVH, G, hd]: 4 x 2 rows of 64 into one row: 8 rows < 8 surfaces
     * is not fewer, so one copy per row */
    struct mcase gqa = {.a = 4, .r = 2, .c = 64, .rows = 1, .k = 48, .copies = 8};
    /* two rows of 64 into one: one copy per row */
    struct mcase two = {.a = 2, .r = 1, .c = 64, .rows = 1, .k = 40, .copies = 2};
    /* 6 rows into 3 (pairs side by side): one copy per position in the pair */
    struct mcase pairs = {.a = 1, .r = 6, .c = 16, .rows = 3, .k = 24, .copies = 2};
    struct mcase q = heads, qg = gqa;
    q.q = qg.q = true;
    printf("Reshape merging rows into channels, read by a product:\n");
    check_lowering(&heads, "8 rows x 16 -> 1 x 128, MatMul");
    check_lowering(&gqa, "4 x 2 rows x 64 -> 1 x 512, MatMul");
    check_lowering(&two, "2 rows x 64 -> 1 x 128, MatMul");
    check_lowering(&pairs, "6 rows x 16 -> 3 x 32, MatMul");
    check_lowering(&q, "8 rows x 16 -> 1 x 128, w8a8");
    check_lowering(&qg, "4 x 2 rows x 64 -> 1 x 512, w8a8");
    run_case(&heads, "NPU: 8 rows x 16 -> 1 x 128, MatMul");
    run_case(&gqa, "NPU: 4 x 2 rows x 64 -> 1 x 512, MatMul");
    run_case(&two, "NPU: 2 rows x 64 -> 1 x 128, MatMul");
    run_case(&pairs, "NPU: 6 rows x 16 -> 3 x 32, MatMul");
    run_case(&q, "NPU: 8 rows x 16 -> 1 x 128, w8a8");
    run_case(&qg, "NPU: 4 x 2 rows x 64 -> 1 x 512, w8a8");
    return npu_test_done("dpu-row-merge");
}
