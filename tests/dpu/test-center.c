/* SPDX-License-Identifier: MIT */
/*
 * test-center.c: layer-norm centring folded into residual streams (compiler/backend/
 * dpu-center.c, docs/npu-dpu-ops.md §3.6).
 *
 *  1. The rewrite itself, on the CPU executor: a pre-LN residual block stack (patch-style
 *     conv + reshape + transpose + position constant, then per layer LN -> MatMul + bias ->
 *     residual Add, LN -> MatMul -> residual Add, final LN) gives the same outputs before and
 *     after npu_dpu_center_streams (fp32, relative 1e-5), and the layer norms are marked.
 *  2. Streams with a reader that is not shift invariant (a graph output, a Relu, a MatMul
 *     with a fused activation as an addend) are left alone.
 *  3. The whole back end on the strict simulator against the CPU executor, with the
 *     centring on and off (the centred layer norms skip two passes).
 *  4. A MatMul on the NPU gets its B's rows centred by its packer (NPU_CENTRE_ROWS_ATTR):
 *     after the rewrite its B is still the original bytes and the node is marked, and the
 *     lowered graph (every packed weight's bytes, by their hashes in the IR text) is the
 *     same as when every marked B is first centred in place (npu_dpu_centre_pending).
 */
#include "graph-case.h"
#include "npu-dpu-ops.h"

struct blk {
    int tokens, width, layers;
    bool conv_embed; /* the stream starts with conv -> reshape -> transpose + const */
    int spoil;       /* 0 none, 1 stream value also a graph output, 2 a Relu reads it,
                        3 an addend MatMul has a fused activation */
};

static struct npu_value *
rand_const(struct npu_graph *g, const char *name, int nd, const int64_t *d, uint32_t seed,
           float amp)
{
    int64_t n = 1;
    for (int i = 0; i < nd; i++)
        n *= d[i];
    float *v = malloc((size_t)n * 4);
    uint32_t s = seed * 2654435761u + 1;
    for (int64_t i = 0; i < n; i++)
        v[i] = amp * (float)((double)tu_rand(&s) / 4294967296.0 * 2.0 - 1.0) + 0.1f * amp;
    struct npu_value *c = gc_const(g, name, nd, d, v);
    free(v);
    return c;
}

static struct npu_value *
ln(struct npu_graph *g, struct npu_value *x, int C, uint32_t seed)
{
    int64_t c = C;
    char nm[32];
    snprintf(nm, sizeof(nm), "ln%u", seed);
    struct npu_value *in[3] = {x, rand_const(g, "gamma", 1, &c, seed, 0.2f),
                               rand_const(g, "beta", 1, &c, seed + 1, 0.1f)};
    /* gamma around 1 */
    float *gv = (float *)in[1]->t.data;
    for (int i = 0; i < C; i++)
        gv[i] += 1.0f;
    struct npu_node *n = gc_node(g, NPU_OP_LAYER_NORMALIZATION, nm, in, 3, 1);
    npu_node_set_int(g, n, "axis", -1);
    npu_node_set_float(g, n, "epsilon", 1e-6f);
    return gc_done(g, n);
}

static struct npu_value *
matmul(struct npu_graph *g, struct npu_value *x, int K, int N, uint32_t seed, const char *act)
{
    int64_t wd[2] = {K, N}, bd = N;
    struct npu_value *in[3] = {x, rand_const(g, "w", 2, wd, seed, 1.5f / sqrtf((float)K)),
                               rand_const(g, "b", 1, &bd, seed + 7, 0.2f)};
    char nm[32];
    snprintf(nm, sizeof(nm), "mm%u", seed);
    struct npu_node *n = gc_node(g, NPU_OP_MATMUL, nm, in, 3, 1);
    if (act)
        npu_node_set_string(g, n, "npu_act", act);
    return gc_done(g, n);
}

static struct npu_value *
add(struct npu_graph *g, struct npu_value *a, struct npu_value *b, const char *nm)
{
    struct npu_value *in[2] = {a, b};
    return gc_done(g, gc_node(g, NPU_OP_ADD, nm, in, 2, 1));
}

static struct npu_graph *
build(const void *vp)
{
    const struct blk *p = vp;
    struct npu_graph *g = npu_graph_new("blocks");
    int T = p->tokens, C = p->width;
    struct npu_value *x;
    if (p->conv_embed) {
        /* image [1, 3, 2, 2T] -> conv 2x2 / 2 -> [1, C, 1, T] -> reshape [1, C, T] ->
         * transpose [1, T, C] + position constant [1, T, C] */
        int64_t xd[4] = {1, 3, 2, 2 * T}, wd[4] = {C, 3, 2, 2}, bd = C;
        struct npu_value *img = gc_input(g, "img", 4, xd);
        struct npu_value *in[3] = {img, rand_const(g, "cw", 4, wd, 11, 0.4f),
                                   rand_const(g, "cb", 1, &bd, 12, 0.3f)};
        struct npu_node *cv = gc_node(g, NPU_OP_CONV, "conv", in, 3, 1);
        int64_t ks[2] = {2, 2};
        npu_node_set_ints(g, cv, "kernel_shape", ks, 2);
        npu_node_set_ints(g, cv, "strides", ks, 2);
        struct npu_value *y = gc_done(g, cv);
        int64_t rs[3] = {1, C, T};
        struct npu_value *rin[2] = {y, gc_const_i64(g, "shape", rs, 3, false)};
        y = gc_done(g, gc_node(g, NPU_OP_RESHAPE, "reshape", rin, 2, 1));
        struct npu_node *tr = gc_node(g, NPU_OP_TRANSPOSE, "transpose", &y, 1, 1);
        int64_t perm[3] = {0, 2, 1};
        npu_node_set_ints(g, tr, "perm", perm, 3);
        y = gc_done(g, tr);
        int64_t pd[3] = {1, T, C};
        x = add(g, y, rand_const(g, "pos", 3, pd, 13, 0.5f), "add_pos");
    } else {
        int64_t xd[3] = {1, T, C};
        struct npu_value *in0 = gc_input(g, "x", 3, xd);
        x = add(g, matmul(g, in0, C, C, 14, NULL), rand_const(g, "pos", 3, xd, 13, 0.5f),
                "add_pos");
    }
    for (int l = 0; l < p->layers; l++) {
        uint32_t s = 100 + 10 * (uint32_t)l;
        struct npu_value *h = matmul(g, ln(g, x, C, s), C, C, s + 1, NULL);
        x = add(g, x, h, "res1");
        if (p->spoil == 1 && l == 0)
            npu_graph_add_output(g, x);
        if (p->spoil == 2 && l == 0) {
            struct npu_value *r = gc_done(g, gc_node(g, NPU_OP_RELU, "relu", &x, 1, 1));
            npu_graph_add_output(g, r);
        }
        h = matmul(g, ln(g, x, C, s + 2), C, 2 * C, s + 3, "gelu_tanh");
        h = matmul(g, h, 2 * C, C, s + 4, p->spoil == 3 ? "relu" : NULL);
        x = add(g, h, x, "res2");
    }
    struct npu_value *o = ln(g, x, C, 999);
    if (!o)
        return NULL;
    npu_graph_add_output(g, o);
    if (npu_graph_infer(g)) {
        npu_graph_free(g);
        return NULL;
    }
    return g;
}

static int
marked(struct npu_graph *g)
{
    int k = 0;
    npu_graph_for_each_node (g, n)
        k += n->op == NPU_OP_LAYER_NORMALIZATION && npu_node_int(n, "npu_centered", 0);
    return k;
}

/* The rewrite on the CPU executor: same outputs before and after. */
static void
rewrite_case(const struct blk *p, int expect_marked, const char *label)
{
    struct npu_graph *g1 = build(p), *g2 = build(p);
    CHECK(g1 && g2);
    if (!g1 || !g2)
        return;
    npu_graph_for_each_node (g2, n)
        n->device = NPU_DEVICE_NPU;
    char *before = npu_ir_print_str(g2, NULL);
    CHECK_EQ_INT(NPU_OK, npu_dpu_center_streams(g2));
    /* the CPU reads the B the NPU's packer would centre: written centred first */
    npu_graph_for_each_node (g2, n)
        CHECK_EQ_INT(NPU_OK, npu_dpu_centre_pending(g2, n));
    int m = marked(g2);
    CHECK_EQ_INT(expect_marked, m);
    npu_graph_for_each_node (g2, n)
        n->device = NPU_DEVICE_ANY;
    if (!expect_marked) {
        /* left alone: the graph is unchanged */
        npu_graph_for_each_node (g2, n)
            n->device = NPU_DEVICE_NPU;
        char *after = npu_ir_print_str(g2, NULL);
        CHECK(before && after && !strcmp(before, after));
        printf("  %-44s unchanged\n", label);
        free(before);
        free(after);
        npu_graph_free(g1);
        npu_graph_free(g2);
        return;
    }
    free(before);
    struct npu_tensor in;
    gc_fill(&in, g1->inputs[0]->t.ndim, g1->inputs[0]->t.dims, 3, 0, 1.0f);
    struct npu_tensor a = {0}, b = {0};
    CHECK_EQ_INT(NPU_OK, tu_run_cpu(g1, &in, 1, &a));
    CHECK_EQ_INT(NPU_OK, tu_run_cpu(g2, &in, 1, &b));
    double e = a.data && b.data ? tu_cmp(&b, &a, 1e-5, 1e-5, NULL) : INFINITY;
    CHECK(e <= 1);
    printf("  %-44s %d layer norms centred, CPU before/after err/tol %.2f\n", label, m, e);
    free(in.data);
    free(a.data);
    free(b.data);
}

static void
npu_case(const struct blk *p, bool off, const char *label)
{
    struct gcase c = {
        .label = label, .build = build, .ctx = p, .nin = 1, .atol = 2e-2, .rtol = 2e-2};
    struct npu_graph *g = build(p);
    gc_fill(&c.in[0], g->inputs[0]->t.ndim, g->inputs[0]->t.dims, 4, 0, 1.0f);
    npu_graph_free(g);
    /* gc_run lowers with default options; the "off" run goes through tu_run_npu itself */
    if (!off) {
        struct gresult r = gc_run(&c);
        printf("  %-44s tasks %4u  modeled %8.1f us  max|err| %.3g\n", label, r.tasks,
               r.modeled_s * 1e6, r.max_abs);
    } else {
        struct npu_graph *g1 = build(p), *g2 = build(p);
        struct npu_tensor want = {0}, got = {0};
        struct tu_npu_result res;
        struct npu_backend_options o = {.no_center_fold = true};
        CHECK_EQ_INT(NPU_OK, tu_run_cpu(g1, c.in, 1, &want));
        CHECK_EQ_INT(NPU_OK, tu_run_npu(g2, &o, c.in, &got, &res));
        double e = got.data ? tu_cmp(&got, &want, c.atol, c.rtol, NULL) : INFINITY;
        CHECK(e <= 1);
        printf("  %-44s tasks %4u  modeled %8.1f us  err/tol %.2f\n", label, res.tasks,
               res.modeled_s * 1e6, e);
        free(want.data);
        free(got.data);
    }
    free(c.in[0].data);
}

/* cost() of a layer norm whose stream will be centred prices the centred lowering: the
 * partitioner sees what the lowering then emits. */
static void
cost_case(const struct blk *p)
{
    struct npu_graph *g = build(p);
    CHECK(g != NULL);
    if (!g)
        return;
    npu_graph_update_uses(g);
    double want[16];
    const char *names[16];
    int k = 0;
    npu_graph_for_each_node (g, n)
        if (n->op == NPU_OP_LAYER_NORMALIZATION && k < 16) {
            names[k] = n->name;
            want[k++] = npu_backend_cost(g, n, NULL);
        }
    CHECK_EQ_INT(NPU_OK, npu_lower_graph(g, NULL));
    int matched = 0;
    for (int i = 0; i < k; i++)
        npu_graph_for_each_node (g, n)
            if (n->op == NPU_OP_RK_DPU && !strcmp(n->name, names[i])) {
                double got = npu_node_float(n, "modeled_us", 0) * 1e-6;
                if (!(fabs(got - want[i]) < 1e-9 + 1e-6 * got))
                    printf("    %s: cost %.3f us, lowered %.3f us\n", names[i], want[i] * 1e6,
                           got * 1e6);
                CHECK(fabs(got - want[i]) < 1e-9 + 1e-6 * got);
                matched++;
            }
    CHECK_EQ_INT(k, matched);
    printf("  cost() of %d layer norms = their centred lowerings' modeled time\n", matched);
    npu_graph_free(g);
}

/* The back end's passes (partition: every supported node), the marked B centred first when
 * `first`; the lowered graph's IR text, or NULL. *pending: marked MatMuls after the
 * rewrite, *kept: those whose B still holds the bytes of `orig` (built alike, untouched). */
static char *
lowered(const struct blk *p, bool first, int *pending, int *kept)
{
    struct npu_graph *g = build(p), *orig = build(p);
    char *txt = NULL;
    if (!g || !orig)
        goto out;
    *pending = *kept = 0;
    if (npu_partition_supported(g, NULL) || npu_be_pass_center_streams(g, NULL))
        goto out;
    npu_graph_for_each_node (g, n) {
        if (!npu_node_int(n, NPU_CENTRE_ROWS_ATTR, 0))
            continue;
        (*pending)++;
        /* the constant of the same name in the untouched graph */
        const struct npu_value *w = n->in[1];
        char nm[160];
        snprintf(nm, sizeof(nm), "%s", w->name);
        char *dot = strrchr(nm, '.');
        if (dot)
            *dot = 0;
        npu_graph_for_each_node (orig, m)
            if (m->op == NPU_OP_MATMUL && !strcmp(m->name, n->name) &&
                !strcmp(m->in[1]->name, nm) &&
                !memcmp(m->in[1]->t.data, w->t.data, (size_t)npu_value_numel(w) * 4))
                (*kept)++;
        if (first && npu_dpu_centre_pending(g, n))
            goto out;
    }
    if (npu_be_pass_lower(g, NULL) || npu_be_pass_prune_boundaries(g) ||
        npu_be_pass_widen_outputs(g))
        goto out;
    txt = npu_ir_print_str(g, NULL);
out:
    npu_graph_free(g);
    npu_graph_free(orig);
    return txt;
}

static void
pack_case(const struct blk *p, int expect, const char *label)
{
    int pend = -1, kept = -1, pend2 = -1, kept2 = -1;
    char *a = lowered(p, false, &pend, &kept), *b = lowered(p, true, &pend2, &kept2);
    CHECK(a && b && !strcmp(a, b));
    CHECK(strstr(a ? a : "", ".centred.wpack") != NULL);
    CHECK_EQ_INT(expect, pend);
    CHECK_EQ_INT(expect, kept);
    printf("  %-44s %d MatMuls centred by the packer, IR %s\n", label, pend,
           a && b && !strcmp(a, b) ? "identical" : "DIFFERS");
    free(a);
    free(b);
}

int
main(void)
{
    printf("centring folded into residual streams:\n");
    struct blk b1 = {.tokens = 16, .width = 64, .layers = 2, .conv_embed = true};
    rewrite_case(&b1, 5, "conv embedding, 2 layers");
    struct blk b2 = {.tokens = 10, .width = 40, .layers = 3};
    rewrite_case(&b2, 7, "matmul embedding, 3 layers");
    struct blk s1 = b1, s2 = b1, s3 = b1;
    s1.spoil = 1;
    s2.spoil = 2;
    s3.spoil = 3;
    rewrite_case(&s1, 0, "stream value is a graph output (kept)");
    rewrite_case(&s2, 0, "stream value read by a Relu (kept)");
    rewrite_case(&s3, 0, "addend with a fused activation (kept)");
    cost_case(&b1);
    pack_case(&b1, 4, "packer centring, conv embedding, 2 layers");
    pack_case(&b2, 7, "packer centring, matmul embedding, 3 layers");
    struct blk big = {.tokens = 196, .width = 768, .layers = 1, .conv_embed = true};
    npu_case(&b1, false, "NPU: conv embedding, 2 layers");
    npu_case(&b1, true, "NPU: same, centring off");
    npu_case(&b2, false, "NPU: matmul embedding, 3 layers");
    npu_case(&big, false, "NPU: 196 x 768, 1 layer");
    npu_case(&big, true, "NPU: 196 x 768, 1 layer, centring off");
    return npu_test_done("dpu-center");
}
