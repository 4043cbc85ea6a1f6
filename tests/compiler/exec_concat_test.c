/* SPDX-License-Identifier: MIT */
/*
 * exec_concat_test.c: the CPU executor's Concat without a copy (compiler/exec/npu-exec.c,
 * plan_concat_views): the parts of a Concat along an axis with only 1s before it are written
 * straight into the whole. Graphs built in memory (a YOLOv8 C2f-like block whose first part
 * is read again after the Concat, the whole as a graph output, and the cases that must stay
 * copies: batch 2, a part that is a graph input, the same part twice, a part that is a graph
 * output) run with and without it (NPU_EXEC_CONCAT=0): the same bytes, with 1 and 3 threads;
 * where it applies the plan must hold less activation memory (no separate parts).
 */
#include <stdlib.h>

#include "npu-test.h"
#include "npu/npu-exec.h"
#include "npu/npu-ir.h"
#include "npu/npu-model.h"

#include "exec-graph.h"

static struct npu_value *
concat(struct npu_graph *g, struct npu_value **parts, int n)
{
    struct npu_node *c = npu_node_new(g, NPU_OP_CONCAT, "cat", parts, n, 1, NULL);
    if (!c)
        return NULL;
    npu_node_set_attr(g, c, &(struct npu_attr){"axis", NPU_ATTR_INT, .i = 1});
    struct npu_value *y = c->out[0];
    y->t = parts[0]->t;
    y->t.data = NULL;
    y->t.dims[1] = 0;
    for (int i = 0; i < n; i++)
        y->t.dims[1] += parts[i]->t.dims[1];
    npu_graph_append(g, c);
    return y;
}

enum shape {
    C2F,        /* cat(a, conv(a), conv(conv(a))) -> conv; a read again after the Concat */
    WHOLE_OUT,  /* the whole is a graph output */
    BATCH2,     /* batch 2: the parts are not contiguous in the whole (a copy) */
    INPUT_PART, /* a part is the graph input (a copy) */
    TWICE,      /* the same part twice (a copy) */
    PART_OUT,   /* a part is a graph output (a copy) */
};

static struct npu_graph *
build(enum shape sh, int64_t C, int64_t H, int64_t W)
{
    struct npu_graph *g = npu_graph_new("concat");
    int64_t xd[4] = {sh == BATCH2 ? 2 : 1, C, H, W};
    struct npu_value *x = npu_graph_add_input(g, "x", NPU_DTYPE_FP32, 4, xd);
    struct npu_value *a = conv(g, x, C + 3, 1, 1, 1, true);
    struct npu_value *b = conv(g, a, C, 3, 1, 1, true);
    struct npu_value *c = conv(g, b, C, 3, 1, 1, false);
    struct npu_value *p3[3] = {sh == INPUT_PART ? x : a, b, sh == TWICE ? b : c};
    struct npu_value *cat = concat(g, p3, 3);
    if (sh == WHOLE_OUT) {
        npu_graph_add_output(g, cat);
        return g;
    }
    struct npu_value *y = conv(g, cat, 2, 1, 1, 1, false);
    npu_graph_add_output(g, y);
    if (sh == PART_OUT)
        npu_graph_add_output(g, b);
    else
        npu_graph_add_output(g, unary(g, NPU_OP_RELU, sh == INPUT_PART ? b : a, NULL));
    return g;
}

static size_t
run(enum shape sh, int64_t C, int64_t H, int64_t W, bool in_place, int threads, float **out,
    int64_t *n, int *nout)
{
    uint32_t seed = rng;
    struct npu_graph *g = build(sh, C, H, W);
    rng = seed;
    if (in_place)
        unsetenv("NPU_EXEC_CONCAT");
    else
        setenv("NPU_EXEC_CONCAT", "0", 1);
    struct npu_model_options o = {.cpu_threads = threads};
    struct npu_model *m = NULL;
    CHECK_EQ_INT(NPU_OK, npu_model_from_graph(g, &o, NPU_EXEC_NO_PASSES, &m));
    unsetenv("NPU_EXEC_CONCAT");
    return exec_run_model(m, sh == BATCH2 ? 2 : 1, C, H, W, out, n, nout);
}

int
main(void)
{
    static const struct {
        enum shape sh;
        bool in_place;
    } shapes[] = {{C2F, true},         {WHOLE_OUT, true}, {BATCH2, false},
                  {INPUT_PART, false}, {TWICE, false},    {PART_OUT, false}};
    for (int rep = 0; rep < 2; rep++)
        for (size_t i = 0; i < NPU_ARRAY_SIZE(shapes); i++) {
            int64_t C = 3 + (int64_t)(rng % 13), H = 9 + (int64_t)((rng >> 5) % 14),
                    W = 10 + (int64_t)((rng >> 10) % 17);
            rng = rng * 1664525u + 1013904223u;
            float *ref[2] = {0}, *got[2] = {0}, *got3[2] = {0};
            int64_t nr[2] = {0}, ng[2] = {0}, n3[2] = {0};
            int no = 0;
            size_t b_ref = run(shapes[i].sh, C, H, W, false, 1, ref, nr, &no);
            size_t b_got = run(shapes[i].sh, C, H, W, true, 1, got, ng, &no);
            run(shapes[i].sh, C, H, W, true, 3, got3, n3, &no);
            for (int k = 0; k < no; k++) {
                bool same = ref[k] && got[k] && got3[k] && nr[k] > 0 && nr[k] == ng[k] &&
                            nr[k] == n3[k] &&
                            !memcmp(ref[k], got[k], sizeof(float) * (size_t)nr[k]) &&
                            !memcmp(ref[k], got3[k], sizeof(float) * (size_t)nr[k]);
                if (!same)
                    fprintf(stderr, "shape %d C%lld %lldx%lld output %d: in place != copy\n",
                            (int)shapes[i].sh, (long long)C, (long long)H, (long long)W, k);
                CHECK(same);
                free(ref[k]);
                free(got[k]);
                free(got3[k]);
            }
            if (shapes[i].in_place)
                CHECK(b_got < b_ref);
            else
                CHECK(b_got == b_ref);
            printf("shape %d C%-3lld %3lldx%-3lld activations %zu B in place, %zu B copied\n",
                   (int)shapes[i].sh, (long long)C, (long long)H, (long long)W, b_got, b_ref);
        }
    return npu_test_done("exec_concat_test");
}
