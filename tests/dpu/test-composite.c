/* SPDX-License-Identifier: MIT */

/*
 * test-composite.c: LayerNormalization, Softmax and npu.Attention lowered to NPU task lists,
 * run on the strict simulator and compared with the CPU executor (fp32) at small shapes,
 * odd sizes and SigLIP-B/16-like shapes (196 tokens, width 768, 12 heads of 64), printing the
 * modeled time (timing model v1) and task count of each.
 *
 * Tolerances: inputs are real-valued (rounded to fp16 on the way to the NPU), results are
 * fp16; layer norm's output is O(1): 4e-3 absolute + 4e-3 relative covers the fp16 input
 * and output roundings and the 1/sqrt error (< 1e-4 after the Newton step); softmax and
 * attention probabilities carry the exp table's 2^-16 absolute error and fp16 roundings.
 * Each case also reports max |err| for the documentation.
 */
#include "graph-case.h"

static bool long_run;

struct ln {
    int64_t dims[3];
    float eps;
    bool beta;
    float amp, offset;
};

static struct npu_graph *
build_ln(const void *vp)
{
    const struct ln *p = vp;
    struct npu_graph *g = npu_graph_new("ln");
    struct npu_value *x = gc_input(g, "x", 3, p->dims);
    int64_t c = p->dims[2];
    float *gm = malloc((size_t)c * 4), *bt = malloc((size_t)c * 4);
    uint32_t s = 5;
    for (int64_t i = 0; i < c; i++) {
        gm[i] = 1.0f + 0.25f * (float)((double)tu_rand(&s) / 4294967296.0 - 0.5);
        bt[i] = p->beta ? 0.5f * (float)((double)tu_rand(&s) / 4294967296.0 - 0.5) : 0.0f;
    }
    struct npu_value *in[3] = {x, gc_const(g, "g", 1, &c, gm), gc_const(g, "b", 1, &c, bt)};
    free(gm);
    free(bt);
    struct npu_node *n = gc_node(g, NPU_OP_LAYER_NORMALIZATION, "ln", in, 3, 1);
    npu_node_set_int(g, n, "axis", -1);
    npu_node_set_float(g, n, "epsilon", p->eps);
    struct npu_value *o = gc_done(g, n);
    if (!o)
        return NULL;
    npu_graph_add_output(g, o);
    return g;
}

static void
test_layernorm(void)
{
    struct ln cases[] = {
        {{1, 16, 64}, 1e-6f, true, 2.0f, 0.0f},
        {{1, 7, 40}, 1e-5f, false, 1.0f, 3.0f},  /* mean far from 0 */
        {{1, 5, 36}, 1e-5f, true, 0.05f, 0.0f},  /* small variance, C not a multiple of 8 */
        {{1, 9, 24}, 1e-5f, true, 300.0f, 0.0f}, /* large variance */
        {{1, 196, 768}, 1e-6f, true, 4.0f, 0.5f},
    };
    printf("LayerNormalization:\n");
    for (size_t i = 0; i < NPU_ARRAY_SIZE(cases); i++) {
        char label[96];
        snprintf(label, sizeof(label), "LN [%lld,%lld] amp %g off %g", (long long)cases[i].dims[1],
                 (long long)cases[i].dims[2], cases[i].amp, cases[i].offset);
        struct gcase c = {.label = label,
                          .build = build_ln,
                          .ctx = &cases[i],
                          .nin = 1,
                          .atol = 4e-3,
                          .rtol = 4e-3,
                          .expect_all_npu = true};
        gc_fill(&c.in[0], 3, cases[i].dims, 40 + (uint32_t)i, 0, cases[i].amp);
        float *v = c.in[0].data;
        for (int64_t k = 0; k < npu_tensor_numel(&c.in[0]); k++)
            v[k] += cases[i].offset;
        gc_run(&c);
        free(c.in[0].data);
    }
}

struct sm {
    int64_t dims[3];
    float amp;
    bool masked; /* every third score is -inf (GPT-2's Where with finfo.min, in fp16) */
};

static struct npu_graph *
build_sm(const void *vp)
{
    const struct sm *p = vp;
    struct npu_graph *g = npu_graph_new("sm");
    struct npu_value *x = gc_input(g, "x", 3, p->dims);
    struct npu_node *n = gc_node(g, NPU_OP_SOFTMAX, "sm", &x, 1, 1);
    npu_node_set_int(g, n, "axis", -1);
    struct npu_value *o = gc_done(g, n);
    if (!o)
        return NULL;
    npu_graph_add_output(g, o);
    return g;
}

static void
test_softmax(void)
{
    struct sm cases[] = {
        {{1, 16, 64}, 4.0f},   {{2, 5, 19}, 8.0f},     {{1, 3, 5}, 2.0f},
        {{1, 12, 200}, 30.0f}, {{1, 196, 196}, 10.0f}, {{1, 8, 24}, 4.0f, true},
    };
    printf("Softmax (last axis):\n");
    for (size_t i = 0; i < NPU_ARRAY_SIZE(cases); i++) {
        char label[96];
        snprintf(label, sizeof(label), "Softmax [%lld,%lld,%lld] amp %g%s",
                 (long long)cases[i].dims[0], (long long)cases[i].dims[1],
                 (long long)cases[i].dims[2], cases[i].amp, cases[i].masked ? " masked" : "");
        struct gcase c = {.label = label,
                          .build = build_sm,
                          .ctx = &cases[i],
                          .nin = 1,
                          .atol = 2e-4,
                          .rtol = 4e-3,
                          .expect_all_npu = true};
        /* inputs exact in fp16 (multiples of 1/16): the NPU sees the CPU's scores */
        gc_fill(&c.in[0], 3, cases[i].dims, 60 + (uint32_t)i, (int)(16 * cases[i].amp), 0);
        if (cases[i].masked) {
            float *v = c.in[0].data;
            for (int64_t k = 0; k < npu_tensor_numel(&c.in[0]); k += 3)
                v[k] = -3.4e38f;
        }
        gc_run(&c);
        free(c.in[0].data);
    }
}

struct at {
    int64_t b, h, sq, sk, d, dv;
    bool mask;
    float amp;
};

static struct npu_graph *
build_at(const void *vp)
{
    const struct at *p = vp;
    struct npu_graph *g = npu_graph_new("attn");
    int64_t qd[4] = {p->b, p->h, p->sq, p->d}, kd[4] = {p->b, p->h, p->sk, p->d};
    int64_t vd[4] = {p->b, p->h, p->sk, p->dv};
    struct npu_value *in[4] = {gc_input(g, "q", 4, qd), gc_input(g, "k", 4, kd),
                               gc_input(g, "v", 4, vd), NULL};
    int nin = 3;
    if (p->mask) {
        /* causal-style additive mask [sq, sk]: -inf above the diagonal */
        float *m = malloc((size_t)(p->sq * p->sk) * 4);
        for (int64_t i = 0; i < p->sq; i++)
            for (int64_t j = 0; j < p->sk; j++)
                m[i * p->sk + j] = j > i + (p->sk - p->sq) ? -INFINITY : 0.0f;
        int64_t md[2] = {p->sq, p->sk};
        in[3] = gc_const(g, "mask", 2, md, m);
        free(m);
        nin = 4;
    }
    struct npu_node *n = gc_node(g, NPU_OP_FUSED_ATTENTION, "attn", in, nin, 1);
    npu_node_set_float(g, n, "scale", (float)(1.0 / sqrt((double)p->d)));
    struct npu_value *o = gc_done(g, n);
    if (!o)
        return NULL;
    npu_graph_add_output(g, o);
    return g;
}

static void
test_attention(void)
{
    struct at cases[] = {
        {1, 4, 16, 16, 16, 16, false, 2.0f},    /* tiny SigLIP */
        {1, 2, 10, 13, 8, 16, false, 3.0f},     /* odd sequence lengths */
        {1, 4, 16, 16, 16, 16, true, 2.0f},     /* causal mask */
        {1, 3, 20, 40, 64, 32, false, 1.5f},    /* key padding 40 -> 64 */
        {1, 12, 196, 196, 64, 64, false, 1.5f}, /* SigLIP-B/16 */
    };
    printf("npu.Attention (all heads in one job):\n");
    for (size_t i = 0; i < NPU_ARRAY_SIZE(cases); i++) {
        if (i == 4 && !long_run)
            continue;
        char label[96];
        snprintf(label, sizeof(label), "Attention %lldx%lld Sq %lld Sk %lld D %lld%s",
                 (long long)cases[i].b, (long long)cases[i].h, (long long)cases[i].sq,
                 (long long)cases[i].sk, (long long)cases[i].d, cases[i].mask ? " mask" : "");
        struct gcase c = {.label = label,
                          .build = build_at,
                          .ctx = &cases[i],
                          .nin = 3,
                          .atol = 4e-3,
                          .rtol = 1e-2,
                          .expect_all_npu = true};
        int64_t qd[4] = {cases[i].b, cases[i].h, cases[i].sq, cases[i].d};
        int64_t kd[4] = {cases[i].b, cases[i].h, cases[i].sk, cases[i].d};
        int64_t vd[4] = {cases[i].b, cases[i].h, cases[i].sk, cases[i].dv};
        gc_fill(&c.in[0], 4, qd, 80 + (uint32_t)i, (int)(16 * cases[i].amp), 0);
        gc_fill(&c.in[1], 4, kd, 90 + (uint32_t)i, (int)(16 * cases[i].amp), 0);
        gc_fill(&c.in[2], 4, vd, 100 + (uint32_t)i, 16, 0);
        gc_run(&c);
        for (int k = 0; k < 3; k++)
            free(c.in[k].data);
    }
}

int
main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-v"))
            gc_verbose = 1;
        if (!strcmp(argv[i], "--long"))
            long_run = true;
    }
    gc_verbose = 1;
    test_layernorm();
    test_softmax();
    test_attention();
    return npu_test_done("dpu-composite");
}
