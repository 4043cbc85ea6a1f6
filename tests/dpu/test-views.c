/* SPDX-License-Identifier: MIT */
/*
 * test-views.c: the DPU lowerings' cost() of data-movement views (Reshape, Transpose) predicts what
 * the lowering emits (compiler/backend/dpu-move.c, docs/performance.md). A reshape or transpose
 * that keeps the bytes and whose readers are all DPU-lowered NPU nodes is lowered by addressing
 * (an rk.Dpu alias without tasks), so cost() must be 0; one whose result is a graph output,
 * or that moves bytes (the attention head split read by something other than the attention
 * composite), is lowered as DPU copies, so cost() must be their modeled time (timing model
 * v1). The head merge after an attention composite (Transpose + Reshape) costs 0: the
 * attention writes the merged layout, and its own cost() is priced that way. A head split
 * of fewer tokens than heads is one copy per token; one token's head split read by a
 * Reshape to rows (the LLaMA decode step) is such a copy, not a view. The
 * one-output graphs also run on the strict simulator against the CPU executor.
 */
#include "graph-case.h"
#include "npu-dpu-ops.h"

enum want { VIEW, COPY };

struct vcase {
    int kind;    /* 0: conv -> Reshape -> Transpose -> Add (the patch embedding) */
                 /* 1: Add -> Reshape -> Transpose (0,2,1,3) -> Add (a head split) */
                 /* 2: kind 1 for one token (T = 1), then a Reshape to rows [H, 1, C/H]
                  * (the LLaMA decode step's heads as rows: the split is one copy) */
    bool tp_out; /* the Transpose's result is also a graph output */
    int T, C, H; /* tokens, width, heads (kind 1) */
};

static struct npu_value *
add_const(struct npu_graph *g, struct npu_value *x, const char *nm, uint32_t seed)
{
    struct npu_value *in[2] = {x, gc_rconst(g, "k", x->t.ndim, x->t.dims, seed, 0.5f)};
    return gc_done(g, gc_node(g, NPU_OP_ADD, nm, in, 2, 1));
}

static struct npu_graph *
build(const void *vp)
{
    const struct vcase *p = vp;
    struct npu_graph *g = npu_graph_new("views");
    int64_t T = p->T, C = p->C;
    struct npu_value *y;
    if (p->kind == 0) {
        /* image [1, 3, 2, 2T] -> conv 2x2 / 2 -> [1, C, 1, T] -> [1, C, T] -> [1, T, C] */
        int64_t xd[4] = {1, 3, 2, 2 * T}, wd[4] = {C, 3, 2, 2}, ks[2] = {2, 2};
        struct npu_value *in[3] = {gc_input(g, "img", 4, xd), gc_rconst(g, "w", 4, wd, 3, 0.4f),
                                   gc_rconst(g, "b", 1, &C, 4, 0.3f)};
        struct npu_node *cv = gc_node(g, NPU_OP_CONV, "conv", in, 3, 1);
        npu_node_set_ints(g, cv, "kernel_shape", ks, 2);
        npu_node_set_ints(g, cv, "strides", ks, 2);
        int64_t rs[3] = {1, C, T}, perm[3] = {0, 2, 1};
        y = gc_reshape(g, gc_done(g, cv), "reshape", 3, rs);
        y = gc_transpose(g, y, "transpose", 3, perm);
    } else {
        /* [1, T, C] -> Add -> [1, T, H, C/H] -> [1, H, T, C/H] (the head split) */
        int64_t xd[3] = {1, T, C}, rs[4] = {1, T, p->H, C / p->H}, perm[4] = {0, 2, 1, 3};
        y = add_const(g, gc_input(g, "x", 3, xd), "add_in", 5);
        y = gc_reshape(g, y, "reshape", 4, rs);
        y = gc_transpose(g, y, "transpose", 4, perm);
        if (p->kind == 2) {
            int64_t rows[3] = {p->H, T, C / p->H};
            y = gc_reshape(g, y, "rows", 3, rows);
        }
    }
    struct npu_value *tp = y;
    y = add_const(g, y, "add_out", 6);
    if (!y)
        return g;
    npu_graph_add_output(g, y);
    if (p->tp_out)
        npu_graph_add_output(g, tp);
    return g;
}

/* cost() of every Reshape / Transpose before lowering against what the lowering emits for
 * it (rk.Dpu node of the same name): views cost 0 and emit an alias without tasks, copies
 * cost their lowered modeled time. */
static void
check_cost(const struct vcase *p, enum want w_reshape, enum want w_transpose, const char *label)
{
    struct npu_graph *g = build(p);
    CHECK(g != NULL);
    if (!g)
        return;
    npu_graph_update_uses(g);
    const char *names[2] = {"reshape", "transpose"};
    enum want want[2] = {w_reshape, w_transpose};
    double cost[2] = {-1, -1};
    npu_graph_for_each_node (g, n)
        for (int i = 0; i < 2; i++)
            if (!strcmp(n->name, names[i]))
                cost[i] = npu_backend_cost(g, n, NULL);
    CHECK_EQ_INT(NPU_OK, npu_lower_graph(g, NULL));
    printf("  %-44s", label);
    for (int i = 0; i < 2; i++) {
        const struct npu_node *r = NULL;
        npu_graph_for_each_node (g, n)
            if (n->op == NPU_OP_RK_DPU && !strcmp(n->name, names[i]))
                r = n;
        CHECK(r != NULL);
        if (!r)
            continue;
        double lowered = npu_node_float(r, "modeled_us", -1) * 1e-6;
        int tasks = npu_rk_dpu_task_count(r);
        bool alias = npu_node_int(r, "alias", 0) != 0;
        if (want[i] == VIEW) {
            CHECK(alias);
            CHECK_EQ_INT(0, tasks);
            CHECK(cost[i] == 0);
        } else {
            CHECK(!alias);
            CHECK(tasks > 0);
            CHECK(lowered > 0);
        }
        CHECK(fabs(cost[i] - lowered) <= 1e-9 + 1e-6 * lowered);
        printf("  %s %s cost %.2f us lowered %.2f us (%d tasks)", names[i], alias ? "view" : "copy",
               cost[i] * 1e6, lowered * 1e6, tasks);
    }
    printf("\n");
    npu_graph_free(g);
}

/* Attention over inputs [1, H, S, D], then the head merge (Transpose (0, 2, 1, 3) +
 * Reshape to [1, S, H D]) and an Add: the attention writes the merged layout itself. */
static const int64_t at_h = 2, at_s = 20, at_d = 32;

static struct npu_graph *
build_attn(const void *vp)
{
    (void)vp;
    struct npu_graph *g = npu_graph_new("merge");
    int64_t d[4] = {1, at_h, at_s, at_d}, rs[3] = {1, at_s, at_h * at_d}, perm[4] = {0, 2, 1, 3};
    struct npu_value *in[3] = {gc_input(g, "q", 4, d), gc_input(g, "k", 4, d),
                               gc_input(g, "v", 4, d)};
    struct npu_node *a = gc_node(g, NPU_OP_FUSED_ATTENTION, "attn", in, 3, 1);
    npu_node_set_float(g, a, "scale", (float)(1.0 / sqrt((double)at_d)));
    struct npu_value *y = gc_transpose(g, gc_done(g, a), "transpose", 4, perm);
    y = add_const(g, gc_reshape(g, y, "reshape", 3, rs), "add_out", 7);
    if (!y)
        return g;
    npu_graph_add_output(g, y);
    return g;
}

/* The merge's Transpose and Reshape cost 0 and lower to nothing of their own; the
 * attention's cost is that of the lowered node, which carries the Reshape's name. */
static void
check_merge(void)
{
    struct npu_graph *g = build_attn(NULL);
    CHECK(g != NULL);
    if (!g)
        return;
    npu_graph_update_uses(g);
    double c_attn = -1, c_tp = -1, c_rs = -1;
    npu_graph_for_each_node (g, n) {
        if (!strcmp(n->name, "attn"))
            c_attn = npu_backend_cost(g, n, NULL);
        else if (!strcmp(n->name, "transpose"))
            c_tp = npu_backend_cost(g, n, NULL);
        else if (!strcmp(n->name, "reshape"))
            c_rs = npu_backend_cost(g, n, NULL);
    }
    CHECK_EQ_INT(NPU_OK, npu_lower_graph(g, NULL));
    const struct npu_node *r = NULL, *t = NULL;
    npu_graph_for_each_node (g, n)
        if (n->op == NPU_OP_RK_DPU) {
            if (!strcmp(n->name, "reshape"))
                r = n;
            if (!strcmp(n->name, "transpose"))
                t = n;
        }
    CHECK(r != NULL && t == NULL);
    double lowered = r ? npu_node_float(r, "modeled_us", -1) * 1e-6 : -1;
    CHECK(c_tp == 0 && c_rs == 0);
    CHECK(lowered > 0 && fabs(c_attn - lowered) <= 1e-9 + 1e-6 * lowered);
    printf("  %-44s  transpose %.2f us reshape %.2f us; attention cost %.2f us lowered %.2f "
           "us\n",
           "head merge written by the attention", c_tp * 1e6, c_rs * 1e6, c_attn * 1e6,
           lowered * 1e6);
    npu_graph_free(g);
}

/* The same graph through the whole back end against the CPU executor. */
static void
run_case(const struct vcase *p, const char *label)
{
    struct gcase c = {.label = label,
                      .build = build,
                      .ctx = p,
                      .nin = 1,
                      .atol = 2e-2,
                      .rtol = 1e-2,
                      .expect_all_npu = true};
    if (p->kind == 0) {
        int64_t xd[4] = {1, 3, 2, 2 * p->T};
        gc_fill(&c.in[0], 4, xd, 21, 16, 0);
    } else {
        int64_t xd[3] = {1, p->T, p->C};
        gc_fill(&c.in[0], 3, xd, 22, 16, 0);
    }
    struct gresult r = gc_run(&c);
    printf("  %-44s tasks %4u  modeled %8.1f us  err/tol %.2f\n", label, r.tasks, r.modeled_s * 1e6,
           r.err);
    free(c.in[0].data);
}

int
main(void)
{
    printf("cost() of Reshape / Transpose = what the lowering emits:\n");
    struct vcase emb = {.kind = 0, .T = 16, .C = 64};
    struct vcase emb_out = emb, heads = {.kind = 1, .T = 24, .C = 64, .H = 4};
    emb_out.tp_out = true;
    check_cost(&emb, VIEW, VIEW, "conv embedding: reshape + transpose views");
    check_cost(&emb_out, VIEW, COPY, "same, transpose also a graph output");
    check_cost(&heads, VIEW, COPY, "head split read by an Add");
    /* one token: the Transpose keeps the bytes, but the Reshape to rows after it wants the
     * heads as rows (view D x H x 1): one strided copy (dpu-move.c rows_follow) */
    struct vcase rows = {.kind = 2, .T = 1, .C = 64, .H = 4},
                 rows64 = {.kind = 2, .T = 1, .C = 512, .H = 8};
    check_cost(&rows, VIEW, COPY, "one-token head split read as rows (4 x 16)");
    check_cost(&rows64, VIEW, COPY, "one-token head split read as rows (8 x 64)");
    /* fewer tokens than heads: one copy per token (its heads as strided lines) */
    struct vcase few = {.kind = 1, .T = 2, .C = 128, .H = 8};
    check_cost(&few, VIEW, COPY, "head split of 2 tokens x 8 heads");
    check_merge();
    run_case(&emb, "NPU: conv embedding views");
    run_case(&few, "NPU: head split of 2 tokens x 8 heads");
    run_case(&heads, "NPU: head split read by an Add");
    run_case(&rows, "NPU: one-token heads as rows (4 x 16)");
    run_case(&rows64, "NPU: one-token heads as rows (8 x 64)");
    return npu_test_done("dpu-views");
}
