/* SPDX-License-Identifier: MIT */
/*
 * test-dry-memo.c: the partitioner prices every node inside one npu_backend_dry_scope
 * (compiler/partition/npu-partition.c), in which the dry lowerings keep their predictions of
 * producers' views for every depth they stay clear of the depth cut, and supports() keeps
 * its answers and reasons (compiler/backend/dpu-low.c, dpu-ops.c). The partition must be the
 * one priced without any of that: for the test models (after the front-end passes) and for a
 * built graph with a prediction chain longer than the cut, a value read by several nodes and
 * refused nodes, every node's supports(), reason and cost() asked with no scope (each call
 * computes from scratch) must equal what npu_partition reports (bit for bit), and its
 * placements must follow from them. Reasons are checked at several buffer lengths, inside
 * and outside a scope, including one longer than the remembered reason (256 bytes).
 */
#include "graph-case.h"
#include "npu-dpu-ops.h"
#include "npu/npu-onnx.h"
#include "npu/npu-partition.h"
#include "npu/npu-passes.h"

#define CHAIN 24

/* A conv [1, 4, 4, 8] reshaped to [1, 16, 8]: the Reshape keeps the conv's view (4, 4, 8),
 * not the canonical (16, 1, 8) of its shape, so a node reached by a prediction that gets
 * back to it sees that view (4 channels padded to 8: twice the bytes), and one whose
 * prediction is cut on the way sees the canonical view: the nodes of the Relu / Sigmoid /
 * Neg chain after it are priced differently up to and beyond the depth cut. Then a value
 * with three readers (two chains joined by Add) and refused nodes (Pow with a tensor
 * exponent, a Transpose the copy classification cannot do). */
static struct npu_graph *
build(void)
{
    struct npu_graph *g = npu_graph_new("dry-memo");
    const int64_t C = 4, H = 4, W = 8, CH = C * H;
    int64_t xd[4] = {1, 3, 2 * H, 2 * W}, wd[4] = {C, 3, 2, 2}, ks[2] = {2, 2};
    struct npu_value *in[3] = {gc_input(g, "img", 4, xd), gc_rconst(g, "w", 4, wd, 3, 0.4f),
                               gc_rconst(g, "b", 1, &C, 4, 0.3f)};
    struct npu_node *cv = gc_node(g, NPU_OP_CONV, "conv", in, 3, 1);
    npu_node_set_ints(g, cv, "kernel_shape", ks, 2);
    npu_node_set_ints(g, cv, "strides", ks, 2);
    int64_t rs[3] = {1, CH, W};
    struct npu_value *y = gc_reshape(g, gc_done(g, cv), "reshape", 3, rs);
    static const enum npu_op ops[3] = {NPU_OP_RELU, NPU_OP_SIGMOID, NPU_OP_NEG};
    struct npu_value *fork = NULL;
    for (int i = 0; i < CHAIN && y; i++) {
        char nm[32];
        snprintf(nm, sizeof(nm), "u%d", i);
        y = gc_done(g, gc_node(g, ops[i % 3], nm, &y, 1, 1));
        if (i == 4)
            fork = y;
    }
    if (!y || !fork)
        return gc_output(g, NULL);
    /* three readers of fork: a short chain, the Add, and a refused Pow */
    struct npu_value *s = gc_done(g, gc_node(g, NPU_OP_SIGMOID, "side0", &fork, 1, 1));
    s = gc_done(g, gc_node(g, NPU_OP_RELU, "side1", &s, 1, 1));
    struct npu_value *ab[2] = {y, s};
    struct npu_value *sum = gc_done(g, gc_node(g, NPU_OP_ADD, "join", ab, 2, 1));
    struct npu_value *ab2[2] = {sum, fork};
    sum = gc_done(g, gc_node(g, NPU_OP_ADD, "join2", ab2, 2, 1));
    struct npu_value *pw[2] = {fork, fork};
    struct npu_value *p = gc_done(g, gc_node(g, NPU_OP_POW, "pow", pw, 2, 1));
    struct npu_value *ab3[2] = {sum, p};
    sum = gc_done(g, gc_node(g, NPU_OP_ADD, "join3", ab3, 2, 1));
    /* [1, 16, 8] -> [16, 1, 8]: a relayout the DPU copies do not make */
    int64_t perm2[3] = {1, 0, 2};
    sum = gc_transpose(g, sum, "odd_transpose", 3, perm2);
    return gc_output(g, sum);
}

struct answer {
    bool sup;
    char why[160];
    double cost;
};

/* supports() (reason in a why_len buffer) and cost() of node n, each from scratch. */
static void
ask(const struct npu_graph *g, const struct npu_node *n, size_t why_len, struct answer *a)
{
    char why[400];
    memset(a, 0, sizeof(*a));
    why[0] = 0;
    a->sup = npu_backend_supports(g, n, NULL, why, why_len);
    snprintf(a->why, sizeof(a->why), "%s", why);
    a->cost = a->sup ? npu_backend_cost(g, n, NULL) : -1;
}

/* The partition's report (by cost, or every supported node) against the answers without
 * a scope; returns the nodes that differ. */
static int
check_partition(struct npu_graph *g, const char *label, enum npu_partition_mode mode)
{
    int nodes = 0;
    npu_graph_for_each_node (g, n) {
        n->device = NPU_DEVICE_ANY;
        nodes++;
    }
    struct answer *ref = calloc((size_t)nodes + 1, sizeof(*ref));
    CHECK(ref != NULL);
    if (!ref)
        return 1;
    int k = 0;
    npu_graph_for_each_node (g, n) {
        ask(g, n, 160, &ref[k]);
        k++;
    }
    struct npu_partition_options po = {.mode = mode};
    struct npu_partition_report rep;
    CHECK_EQ_INT(NPU_OK, npu_partition(g, &po, &rep));
    CHECK_EQ_INT(nodes, rep.n);
    int diff = 0, sup = 0, npu = 0;
    for (int i = 0; i < rep.n && i < nodes; i++) {
        const struct npu_partition_node *pn = &rep.nodes[i];
        bool d = pn->supported != ref[i].sup;
        if (ref[i].sup)
            d |= memcmp(&pn->npu_s, &ref[i].cost, sizeof(double)) != 0 && ref[i].cost >= 0;
        else
            d |= strcmp(pn->why, ref[i].why) != 0;
        /* placed on the NPU only when supported */
        d |= pn->device == NPU_DEVICE_NPU && !ref[i].sup;
        if (d)
            printf("    differs: node %d '%s' (supported %d / %d, cost %.9g / %.9g, '%s' / "
                   "'%s')\n",
                   i, pn->name, pn->supported, ref[i].sup, pn->npu_s, ref[i].cost, pn->why,
                   ref[i].why);
        diff += d;
        sup += ref[i].sup;
        npu += pn->device == NPU_DEVICE_NPU;
    }
    printf("  %-16s %-9s %d nodes (%d supported, %d placed on the NPU): %d priced "
           "differently\n",
           label, mode == NPU_PARTITION_COST ? "cost" : "supported", nodes, sup, npu, diff);
    if (mode == NPU_PARTITION_SUPPORTED)
        CHECK_EQ_INT(sup, npu);
    npu_partition_report_free(&rep);
    free(ref);
    return diff;
}

/* Reasons at several buffer lengths, with no scope, inside one (twice: computed, then
 * remembered) and after it closed. */
static int
check_reasons(struct npu_graph *g)
{
    static const size_t lens[] = {160, 24, 1, 256, 257, 400};
    int diff = 0, refused = 0;
    npu_graph_for_each_node (g, n) {
        for (size_t l = 0; l < NPU_ARRAY_SIZE(lens); l++) {
            struct answer a0, a1, a2, a3;
            ask(g, n, lens[l], &a0);
            npu_backend_dry_scope(true);
            ask(g, n, lens[l], &a1);
            ask(g, n, lens[l], &a2);
            npu_backend_dry_scope(false);
            ask(g, n, lens[l], &a3);
            const struct answer *b[3] = {&a1, &a2, &a3};
            for (int k = 0; k < 3; k++)
                diff += b[k]->sup != a0.sup || strcmp(b[k]->why, a0.why) ||
                        memcmp(&b[k]->cost, &a0.cost, sizeof(double));
            refused += l == 0 && !a0.sup;
        }
        /* no reason buffer, whatever length is passed, inside a scope and out */
        const struct npu_op_handler *h = npu_op_handler(n->op);
        if (h && h->supports == npu_dpu_supports) {
            bool s0 = npu_dpu_supports(g, n, NULL, NULL, 0);
            npu_backend_dry_scope(true);
            diff += npu_dpu_supports(g, n, NULL, NULL, 300) != s0;
            diff += npu_dpu_supports(g, n, NULL, NULL, 300) != s0;
            npu_backend_dry_scope(false);
            diff += npu_dpu_supports(g, n, NULL, NULL, 300) != s0;
        }
    }
    printf("  reasons: %d refused nodes, %d answers differ\n", refused, diff);
    CHECK(refused >= 2); /* the Pow and the odd Transpose */
    return diff;
}

static void
model(const char *dir, const char *name)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s/model.onnx", dir, name);
    struct npu_graph *g = NULL;
    struct npu_compile_options co = {0};
    if (npu_onnx_load(path, NULL, &g) || npu_compile(g, &co)) {
        printf("  %s: not loaded, skipped\n", name);
        npu_graph_free(g);
        return;
    }
    CHECK_EQ_INT(0, check_partition(g, name, NPU_PARTITION_COST));
    CHECK_EQ_INT(0, check_partition(g, name, NPU_PARTITION_SUPPORTED));
    npu_graph_free(g);
}

int
main(int argc, char **argv)
{
    struct npu_graph *g = build();
    CHECK(g != NULL);
    if (g) {
        CHECK_EQ_INT(NPU_OK, npu_graph_update_uses(g));
        CHECK_EQ_INT(0, check_reasons(g));
        CHECK_EQ_INT(0, check_partition(g, "built graph", NPU_PARTITION_COST));
        CHECK_EQ_INT(0, check_partition(g, "built graph", NPU_PARTITION_SUPPORTED));
        npu_graph_free(g);
    }
    if (argc > 1) {
        static const char *const models[] = {"siglip_tiny", "bert_tiny", "gpt2_tiny",
                                             "mobilenet_tiny", "yolo_tiny"};
        for (size_t i = 0; i < NPU_ARRAY_SIZE(models); i++)
            model(argv[1], models[i]);
    }
    return npu_test_done("dpu-dry-memo");
}
