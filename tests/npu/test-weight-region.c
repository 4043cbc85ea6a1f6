/* SPDX-License-Identifier: MIT */
/*
 * test-weight-region.c: the program's weight buffer handed over from the graph's weight
 * region (npu_graph_alloc_weights, npu-memplan.c in_region) instead of copied. The same
 * graphs are compiled twice: once as they come (the lowerings' constants lie in the region
 * at the buffer's offsets, so the program holds the region) and once with 64 bytes taken
 * from the region before lowering (no constant is where the buffer wants it: the copy),
 * and once with 4 MiB taken after lowering (the program would keep much that is not
 * weights: the copy).
 * Both programs must carry the same weight bytes, the adopted one must stay readable
 * after its graph is freed (and the graph after its program is: ASan checks both orders),
 * and the shared mapping's refusals are checked.
 */
#include "npu-test-util.h"
#include "npu/npu-program.h"

enum mode { PLAIN, SHIFT, TAIL };

static struct npu_program *
compile(struct npu_graph *g, enum mode m, bool *adopted)
{
    struct npu_backend_options o = {0};
    struct npu_program *p = NULL;
    if (m == SHIFT) /* the region's first 64 bytes taken: every constant 64 bytes later */
        CHECK(npu_graph_alloc_weights(g, 64) != NULL);
    if (npu_lower_graph(g, &o))
        return NULL;
    if (m == TAIL) /* 4 MiB of something else after the weights: not kept by the program */
        CHECK(npu_graph_alloc_weights(g, (size_t)4 << 20) != NULL);
    if (npu_codegen(g, &o, &p))
        return NULL;
    size_t used = 0;
    const uint8_t *base = npu_shared_mapping_addr(npu_graph_weight_region(g, &used));
    *adopted = base && p->weights == base;
    return p;
}

/* Compiles twice (region, copy), compares the weights; frees in both orders. */
static void
check_pair(struct npu_graph *(*make)(const void *), const void *arg, const char *what)
{
    bool a1 = false, a2 = true, a3 = true;
    struct npu_graph *g1 = make(arg), *g2 = make(arg), *g3 = make(arg);
    CHECK(g1 && g2 && g3);
    if (!g1 || !g2 || !g3) {
        npu_graph_free(g1);
        npu_graph_free(g2);
        npu_graph_free(g3);
        return;
    }
    struct npu_program *p1 = compile(g1, PLAIN, &a1);
    struct npu_program *p2 = compile(g2, SHIFT, &a2);
    struct npu_program *p3 = compile(g3, TAIL, &a3);
    CHECK(p1 && p2 && p3);
    if (!p1 || !p2 || !p3) {
        fprintf(stderr, "%s: compile failed\n", what);
        goto out;
    }
    if (!a1 || a2 || a3)
        fprintf(stderr, "%s: adopted %d (want 1), shifted %d (want 0), tail %d (want 0)\n", what,
                a1, a2, a3);
    CHECK(a1);
    CHECK(!a2);
    CHECK(!a3);
    CHECK_EQ_INT((int)p3->weights_bytes, (int)p1->weights_bytes);
    if (p1->weights_bytes == p3->weights_bytes)
        CHECK(!memcmp(p1->weights, p3->weights, (size_t)p1->weights_bytes));
    CHECK(p1->weights_bytes > 0);
    CHECK_EQ_INT((int)p2->weights_bytes, (int)p1->weights_bytes);
    /* the graph first: the program still reads its weights */
    npu_graph_free(g1);
    g1 = NULL;
    if (p1->weights_bytes == p2->weights_bytes)
        CHECK(!memcmp(p1->weights, p2->weights, (size_t)p1->weights_bytes));
    /* the program first: the graph's constants stay readable */
    npu_program_free(p2);
    p2 = NULL;
    npu_graph_for_each_node (g2, n)
        for (int i = 0; i < n->nin; i++)
            if (n->in[i] && n->in[i]->kind == NPU_VALUE_CONST && n->in[i]->t.data) {
                volatile const uint8_t *d = n->in[i]->t.data;
                (void)d[0];
            }
out:
    npu_program_free(p1);
    npu_program_free(p2);
    npu_program_free(p3);
    npu_graph_free(g1);
    npu_graph_free(g2);
    npu_graph_free(g3);
}

static struct npu_graph *
make_mm(const void *arg)
{
    return tu_matmul_graph(arg);
}

static struct npu_graph *
make_conv(const void *arg)
{
    struct npu_graph *g = tu_conv_graph(arg);
    if (g)
        npu_graph_for_each_node (g, n)
            npu_infer_node(g, n);
    return g;
}

int
main(void)
{
    const struct tu_mm mm[] = {
        {.rank = 2, .M = 16, .K = 96, .N = 80, .bias = true, .range = 4, .seed = 1},
        {.rank = 3, .b0 = 2, .M = 7, .K = 200, .N = 130, .range = 4, .seed = 2},
        {.rank = 2,
         .M = 4,
         .K = 64,
         .N = 48,
         .gemm = true,
         .trans_b = true,
         .alpha = 0.5f,
         .bias = true,
         .beta = 2.0f,
         .range = 3,
         .seed = 3},
    };
    for (size_t i = 0; i < sizeof(mm) / sizeof(mm[0]); i++)
        check_pair(make_mm, &mm[i], "matmul");
    const struct tu_conv cv[] = {
        {.C = 16,
         .H = 12,
         .W = 12,
         .K = 24,
         .kh = 3,
         .kw = 3,
         .sy = 1,
         .sx = 1,
         .pt = 1,
         .pl = 1,
         .pb = 1,
         .pr = 1,
         .group = 1,
         .bias = true,
         .range = 4,
         .seed = 4},
        {.C = 8,
         .H = 9,
         .W = 9,
         .K = 8,
         .kh = 3,
         .kw = 3,
         .sy = 2,
         .sx = 2,
         .group = 8,
         .range = 4,
         .seed = 5},
    };
    for (size_t i = 0; i < sizeof(cv) / sizeof(cv[0]); i++)
        check_pair(make_conv, &cv[i], "conv");

    /* the shared mapping's refusals */
    CHECK(npu_shared_mapping_new(0) == NULL);
    struct npu_shared_mapping *m = npu_shared_mapping_new(1 << 20);
    CHECK(m != NULL);
    if (m) {
        npu_shared_mapping_commit(m, 100, 5000);
        CHECK(((const uint8_t *)npu_shared_mapping_addr(m))[4000] == 0);
        struct npu_program *p = npu_program_new();
        CHECK_EQ_INT(NPU_OK, npu_program_hold_mapping(p, m));
        CHECK_EQ_INT(NPU_ERR_INVALID, npu_program_hold_mapping(p, m));
        npu_shared_mapping_put(m); /* the program's reference is the last */
        CHECK(((const uint8_t *)npu_shared_mapping_addr(m))[0] == 0);
        npu_program_free(p);
    }
    CHECK_EQ_INT(NPU_ERR_INVALID, npu_program_hold_mapping(NULL, NULL));
    return npu_test_done("weight-region");
}
