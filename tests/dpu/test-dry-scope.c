/* SPDX-License-Identifier: MIT */
/*
 * test-dry-scope.c: npu_backend_dry_scope (compiler/backend/dpu-low.c) lets the dry
 * lowerings of supports() and cost() share their predictions of producers' views; the
 * partitioner opens one around each node. The answers must be those computed without it:
 * every node's supports() and cost() (bit for bit) with no scope, with a scope per node, with
 * one scope over the whole graph (predictions of one value at different depths must not be
 * mixed up), nested scopes, and again after the scopes closed. The graph is a patch-embedding
 * conv whose result is reshaped and transposed (a view the dry runs predict), then a chain of
 * Relu / Sigmoid / Neg longer than the prediction depth (8) with a Transpose and a Reshape
 * inside, so predictions cut off at different depths see different producers.
 */
#include "graph-case.h"

#define CHAIN 30

static struct npu_graph *
build(void)
{
    struct npu_graph *g = npu_graph_new("dry-scope");
    const int64_t T = 16, C = 32;
    int64_t xd[4] = {1, 3, 2, 2 * T}, wd[4] = {C, 3, 2, 2}, ks[2] = {2, 2};
    struct npu_value *in[3] = {gc_input(g, "img", 4, xd), gc_rconst(g, "w", 4, wd, 3, 0.4f),
                               gc_rconst(g, "b", 1, &C, 4, 0.3f)};
    struct npu_node *cv = gc_node(g, NPU_OP_CONV, "conv", in, 3, 1);
    npu_node_set_ints(g, cv, "kernel_shape", ks, 2);
    npu_node_set_ints(g, cv, "strides", ks, 2);
    int64_t rs[3] = {1, C, T}, perm[3] = {0, 2, 1}, back[3] = {1, T, C};
    struct npu_value *y = gc_reshape(g, gc_done(g, cv), "reshape", 3, rs);
    y = gc_transpose(g, y, "transpose", 3, perm);
    static const enum npu_op ops[3] = {NPU_OP_RELU, NPU_OP_SIGMOID, NPU_OP_NEG};
    for (int i = 0; i < CHAIN && y; i++) {
        char nm[32];
        snprintf(nm, sizeof(nm), "u%d", i);
        if (i == 12) {
            y = gc_transpose(g, y, "mid_transpose", 3, perm); /* [1, C, T] */
        } else if (i == 13) {
            y = gc_transpose(g, y, "mid_back", 3, perm); /* [1, T, C] */
        } else if (i == 22) {
            int64_t flat[2] = {T, C};
            y = gc_reshape(g, y, "flat", 2, flat);
        } else if (i == 23) {
            y = gc_reshape(g, y, "unflat", 3, back);
        } else {
            y = gc_done(g, gc_node(g, ops[i % 3], nm, &y, 1, 1));
        }
    }
    return gc_output(g, y);
}

struct answer {
    bool sup;
    double cost;
};

/* supports() and cost() of every node into a[]; scope: 0 none, 1 one per node, 2 one over
 * the whole graph, 3 nested (one over the graph and one per node). */
static int
answers(struct npu_graph *g, int scope, struct answer *a)
{
    int k = 0;
    char why[160];
    if (scope >= 2)
        npu_backend_dry_scope(true);
    npu_graph_for_each_node (g, n) {
        if (scope == 1 || scope == 3)
            npu_backend_dry_scope(true);
        a[k].sup = npu_backend_supports(g, n, NULL, why, sizeof(why));
        a[k].cost = a[k].sup ? npu_backend_cost(g, n, NULL) : -1;
        if (scope == 1 || scope == 3)
            npu_backend_dry_scope(false);
        k++;
    }
    if (scope >= 2)
        npu_backend_dry_scope(false);
    return k;
}

int
main(void)
{
    struct npu_graph *g = build();
    CHECK(g != NULL);
    if (!g)
        return npu_test_done("dpu-dry-scope");
    CHECK_EQ_INT(NPU_OK, npu_graph_update_uses(g));
    struct answer ref[64], got[64];
    int n = answers(g, 0, ref), nsup = 0;
    CHECK(n == CHAIN + 3 && n <= 64);
    for (int i = 0; i < n; i++)
        nsup += ref[i].sup && ref[i].cost >= 0;
    CHECK(nsup >= CHAIN); /* the chain is costed on the NPU, not refused */
    static const char *const label[4] = {"no scope again", "a scope per node",
                                         "one scope over the graph", "nested scopes"};
    int order[5] = {1, 2, 3, 0, 2};
    for (int r = 0; r < 5; r++) {
        int s = order[r];
        memset(got, 0, sizeof(got));
        int m = answers(g, s, got), diff = 0;
        CHECK_EQ_INT(n, m);
        for (int i = 0; i < n && i < m; i++)
            diff += got[i].sup != ref[i].sup || memcmp(&got[i].cost, &ref[i].cost, sizeof(double));
        printf("  %-26s %d of %d nodes answer differently\n", label[s], diff, n);
        CHECK_EQ_INT(0, diff);
    }
    /* closing more scopes than were opened is harmless */
    npu_backend_dry_scope(false);
    int m = answers(g, 0, got), diff = 0;
    for (int i = 0; i < n && i < m; i++)
        diff += got[i].sup != ref[i].sup || memcmp(&got[i].cost, &ref[i].cost, sizeof(double));
    CHECK_EQ_INT(0, diff);
    npu_graph_free(g);
    return npu_test_done("dpu-dry-scope");
}
