/* SPDX-License-Identifier: MIT */
/*
 * test-ops.c: the DPU elementwise, activation, pooling and data-movement lowerings through
 * the whole back end on the strict simulator, against the CPU executor on the same graph:
 * broadcast patterns (same shape, scalar, per channel, full constant, constant first),
 * odd channel counts and sizes that are not multiples of 8 or 16, rank 3 (row-major views)
 * and rank 4 (NCHW views).
 *
 * Tolerance: inputs are multiples of 1/16 (exact in fp16), so the NPU sees the CPU's
 * inputs; each op rounds once to fp16 on the NPU: relative 2^-11 (plus a tiny absolute
 * term for results near 0). Operations with fp16 constants get the fp16 rounding of the
 * constant on top (documented per case).
 */
#include "graph-case.h"

struct bin {
    enum npu_op op;
    int ndim;
    int64_t dims[4];
    int ndim_b; /* 0: second operand is an activation of the same shape */
    int64_t dims_b[4];
    bool b_const, b_first;
    int range;
    bool k_set; /* every constant element k (else seeded values) */
    float k;
};

static struct npu_graph *
build_bin(const void *vp)
{
    const struct bin *p = vp;
    struct npu_graph *g = npu_graph_new("bin");
    struct npu_value *x = gc_input(g, "x", p->ndim, p->dims), *y;
    if (p->b_const) {
        int64_t n = 1;
        for (int i = 0; i < p->ndim_b; i++)
            n *= p->dims_b[i];
        float *v = malloc((size_t)n * 4);
        uint32_t s = 99 + (uint32_t)p->op;
        for (int64_t i = 0; i < n; i++) {
            v[i] = p->k_set ? p->k : tu_val(&s, 24);
            if (p->op == NPU_OP_DIV && v[i] == 0)
                v[i] = 0.5f;
        }
        y = gc_const(g, "k", p->ndim_b, p->dims_b, v);
        free(v);
    } else {
        y = gc_input(g, "y", p->ndim, p->dims);
    }
    struct npu_value *in[2] = {p->b_first ? y : x, p->b_first ? x : y};
    struct npu_node *n = gc_node(g, p->op, "op", in, 2, 1);
    return gc_output(g, gc_done(g, n));
}

static void
test_binary(void)
{
    static const enum npu_op ops[] = {NPU_OP_ADD, NPU_OP_SUB, NPU_OP_MUL,
                                      NPU_OP_DIV, NPU_OP_MAX, NPU_OP_MIN};
    static const char *const names[] = {"Add", "Sub", "Mul", "Div", "Max", "Min"};
    struct bin shapes[] = {
        {.ndim = 3, .dims = {1, 5, 19}}, /* activations */
        {.ndim = 4, .dims = {1, 13, 7, 9}},
        {.ndim = 3, .dims = {1, 6, 20}, .b_const = true, .ndim_b = 0},                 /* scalar */
        {.ndim = 3, .dims = {1, 6, 20}, .b_const = true, .ndim_b = 1, .dims_b = {20}}, /* chan */
        {.ndim = 4, .dims = {1, 11, 3, 5}, .b_const = true, .ndim_b = 3, .dims_b = {11, 1, 1}},
        {.ndim = 3, .dims = {1, 4, 12}, .b_const = true, .ndim_b = 2, .dims_b = {4, 12}}, /* full */
        {.ndim = 3,
         .dims = {1, 6, 20},
         .b_const = true,
         .ndim_b = 1,
         .dims_b = {20},
         .b_first = true},
        {.ndim = 3,
         .dims = {1, 4, 12},
         .b_const = true,
         .ndim_b = 2,
         .dims_b = {4, 12},
         .b_first = true},
    };
    printf("binary elementwise (x OP y, y activation / scalar / per channel / full constant, "
           "constant first):\n");
    for (size_t s = 0; s < NPU_ARRAY_SIZE(shapes); s++)
        for (size_t k = 0; k < NPU_ARRAY_SIZE(ops); k++) {
            struct bin p = shapes[s];
            p.op = ops[k];
            char label[96];
            snprintf(label, sizeof(label), "%s %s%s [%lld..%lld]", names[k],
                     !p.b_const      ? "act"
                     : p.ndim_b == 0 ? "scalar"
                     : p.ndim_b == 1 ? "chan"
                                     : "const",
                     p.b_first ? " first" : "", (long long)p.dims[1],
                     (long long)p.dims[p.ndim - 1]);
            struct gcase c = {.label = label,
                              .build = build_bin,
                              .ctx = &p,
                              .nin = p.b_const ? 1 : 2,
                              .atol = 1e-6,
                              .rtol = ldexp(1, -11),
                              .expect_all_npu = true};
            gc_fill(&c.in[0], p.ndim, p.dims, 1 + (uint32_t)k, 40, 0);
            if (!p.b_const) {
                gc_fill(&c.in[1], p.ndim, p.dims, 2 + (uint32_t)k, 40, 0);
                if (p.op == NPU_OP_DIV) {
                    float *v = c.in[1].data;
                    for (int64_t i = 0; i < npu_tensor_numel(&c.in[1]); i++)
                        if (v[i] == 0)
                            v[i] = 0.25f;
                }
            }
            if (p.op == NPU_OP_DIV && p.b_first) {
                float *v = c.in[0].data;
                for (int64_t i = 0; i < npu_tensor_numel(&c.in[0]); i++)
                    if (v[i] == 0)
                        v[i] = -0.5f;
            }
            /* constants through fp16 (full constant maps) add their own rounding */
            if (p.b_const && p.ndim_b >= 2)
                c.rtol = ldexp(1, -10);
            /* x / c multiplies by the fp32 reciprocal: one more rounding */
            if (p.op == NPU_OP_DIV && p.b_const && p.ndim_b < 2 && !p.b_first)
                c.rtol = ldexp(1, -10);
            gc_run(&c);
            free(c.in[0].data);
            free(c.in[1].data);
        }
    /* Max / Min with a constant beyond fp16's range: the -inf that jnp.max(..., initial=-inf)
     * and softmax apply after their reduce (StableHLO from jax) was NaN through
     * relu(x - c) + c; huge finite constants lost x */
    static const struct {
        enum npu_op op;
        int ndim_b;
        float k;
        const char *label;
    } big[] = {
        {NPU_OP_MAX, 0, -INFINITY, "Max scalar -inf"},
        {NPU_OP_MIN, 0, INFINITY, "Min scalar +inf"},
        {NPU_OP_MAX, 0, -3.4e38f, "Max scalar -3.4e38"},
        {NPU_OP_MIN, 1, 1e30f, "Min chan 1e30"},
    };
    for (size_t k = 0; k < NPU_ARRAY_SIZE(big); k++) {
        struct bin p = {.op = big[k].op,
                        .ndim = 3,
                        .dims = {1, 6, 20},
                        .b_const = true,
                        .ndim_b = big[k].ndim_b,
                        .dims_b = {20},
                        .k_set = true,
                        .k = big[k].k};
        struct gcase c = {.label = big[k].label,
                          .build = build_bin,
                          .ctx = &p,
                          .nin = 1,
                          .atol = 1e-6,
                          .rtol = ldexp(1, -11),
                          .expect_all_npu = true};
        gc_fill(&c.in[0], p.ndim, p.dims, 7 + (uint32_t)k, 40, 0);
        gc_run(&c);
        free(c.in[0].data);
    }
}

/* ---- unary ----------------------------------------------------------------------------- */

struct un {
    enum npu_op op;
    int ndim;
    int64_t dims[4];
    float a, b;    /* attributes / clip bounds */
    int clip_mode; /* 0 both, 1 min only, 2 max only */
    bool prelu_mixed;
};

static struct npu_graph *
build_un(const void *vp)
{
    const struct un *p = vp;
    struct npu_graph *g = npu_graph_new("un");
    struct npu_value *x = gc_input(g, "x", p->ndim, p->dims);
    struct npu_value *in[3] = {x, NULL, NULL};
    int nin = 1;
    if (p->op == NPU_OP_CLIP) {
        if (p->clip_mode != 2)
            in[1] = gc_const(g, "lo", 0, NULL, &p->a);
        if (p->clip_mode != 1)
            in[2] = gc_const(g, "hi", 0, NULL, &p->b);
        nin = 3;
    }
    if (p->op == NPU_OP_PRELU) {
        int64_t c = p->dims[p->ndim - 1];
        float *s = malloc((size_t)c * 4);
        for (int64_t i = 0; i < c; i++)
            s[i] = p->prelu_mixed ? (i % 3 == 0 ? 1.5f : 0.25f - 0.0625f * (float)(i % 4)) : 0.125f;
        in[1] = gc_const(g, "slope", 1, &c, s);
        free(s);
        nin = 2;
    }
    struct npu_node *n = gc_node(g, p->op, "op", in, nin, 1);
    if (p->op == NPU_OP_LEAKY_RELU)
        npu_node_set_float(g, n, "alpha", p->a);
    if (p->op == NPU_OP_HARD_SIGMOID) {
        npu_node_set_float(g, n, "alpha", p->a);
        npu_node_set_float(g, n, "beta", p->b);
    }
    return gc_output(g, gc_done(g, n));
}

static void
test_unary(void)
{
    struct un cases[] = {
        {NPU_OP_RELU, 3, {1, 9, 13}},
        {NPU_OP_NEG, 4, {1, 10, 3, 7}},
        {NPU_OP_ABS, 3, {1, 9, 13}},
        {NPU_OP_LEAKY_RELU, 3, {1, 9, 13}, .a = 0.1f},
        {NPU_OP_LEAKY_RELU, 3, {1, 5, 8}, .a = 2.5f},
        {NPU_OP_PRELU, 3, {1, 7, 24}},
        {NPU_OP_PRELU, 3, {1, 7, 24}, .prelu_mixed = true},
        {NPU_OP_CLIP, 3, {1, 9, 13}, .a = -0.75f, .b = 1.25f},
        {NPU_OP_CLIP, 3, {1, 9, 13}, .a = 0.0f, .b = 6.0f},
        {NPU_OP_CLIP, 3, {1, 9, 13}, .a = -1.0f, .clip_mode = 1},
        {NPU_OP_CLIP, 3, {1, 9, 13}, .b = 0.5f, .clip_mode = 2},
        {NPU_OP_HARD_SIGMOID, 3, {1, 9, 13}, .a = 0.2f, .b = 0.5f},
        {NPU_OP_HARD_SWISH, 4, {1, 12, 5, 5}},
        {NPU_OP_IDENTITY, 3, {1, 3, 17}},
    };
    printf("unary (ReLU family, clips, hard sigmoid / swish):\n");
    for (size_t i = 0; i < NPU_ARRAY_SIZE(cases); i++) {
        char label[96];
        snprintf(label, sizeof(label), "%s%s %g %g", npu_op_name(cases[i].op),
                 cases[i].prelu_mixed ? " mixed" : "", cases[i].a, cases[i].b);
        struct gcase c = {.label = label,
                          .build = build_un,
                          .ctx = &cases[i],
                          .nin = 1,
                          .atol = 1e-6,
                          .rtol = ldexp(1, -11),
                          .expect_all_npu = true};
        gc_fill(&c.in[0], cases[i].ndim, cases[i].dims, 30 + (uint32_t)i, 48, 0);
        /* fp32 operands that are not fp16 (0.1, 0.2, 1/6): one more rounding */
        if (cases[i].op == NPU_OP_LEAKY_RELU || cases[i].op == NPU_OP_HARD_SIGMOID ||
            cases[i].op == NPU_OP_HARD_SWISH || cases[i].op == NPU_OP_PRELU)
            c.rtol = ldexp(1, -10);
        gc_run(&c);
        free(c.in[0].data);
    }
}

/* ---- data movement ----------------------------------------------------------------------- */

struct mv {
    int kind;
    int64_t dims[4];
    int ndim;
};

static struct npu_graph *
build_mv(const void *vp)
{
    const struct mv *p = vp;
    struct npu_graph *g = npu_graph_new("mv");
    struct npu_value *x = gc_input(g, "x", p->ndim, p->dims);
    /* a ReLU first, so that the data movement reads an NPU value */
    struct npu_node *r = gc_node(g, NPU_OP_RELU, "relu", &x, 1, 1);
    struct npu_value *v = gc_done(g, r), *o = NULL;
    struct npu_node *n = NULL;
    switch (p->kind) {
    case 0: { /* Transpose [1,C,H,W] -> reshape [1,C,HW] -> [1,HW,C] (patch embedding) */
        int64_t sh[3] = {1, p->dims[1], p->dims[2] * p->dims[3]};
        struct npu_value *in[2] = {v, gc_const_i64(g, "shape", sh, 3, false)};
        n = gc_node(g, NPU_OP_RESHAPE, "reshape", in, 2, 1);
        v = gc_done(g, n);
        n = gc_node(g, NPU_OP_TRANSPOSE, "tr", &v, 1, 1);
        int64_t perm[3] = {0, 2, 1};
        npu_node_set_ints(g, n, "perm", perm, 3);
        break;
    }
    case 1: { /* head split: [1,S,H*D] -> [1,S,H,D] -> [1,H,S,D] */
        int64_t sh[4] = {1, p->dims[1], 4, p->dims[2] / 4};
        struct npu_value *in[2] = {v, gc_const_i64(g, "shape", sh, 4, false)};
        n = gc_node(g, NPU_OP_RESHAPE, "reshape", in, 2, 1);
        v = gc_done(g, n);
        n = gc_node(g, NPU_OP_TRANSPOSE, "tr", &v, 1, 1);
        int64_t perm[4] = {0, 2, 1, 3};
        npu_node_set_ints(g, n, "perm", perm, 4);
        v = gc_done(g, n);
        /* and merge back: [1,H,S,D] -> [1,S,H,D] -> [1,S,H*D] */
        n = gc_node(g, NPU_OP_TRANSPOSE, "tr2", &v, 1, 1);
        npu_node_set_ints(g, n, "perm", perm, 4);
        v = gc_done(g, n);
        int64_t sh2[3] = {1, p->dims[1], p->dims[2]};
        struct npu_value *in2[2] = {v, gc_const_i64(g, "shape2", sh2, 3, false)};
        n = gc_node(g, NPU_OP_RESHAPE, "reshape2", in2, 2, 1);
        break;
    }
    case 2: { /* channel slice [.., 8:24] and row slice [1:4] */
        int64_t st[2] = {1, 8}, en[2] = {4, 24}, ax[2] = {1, 2};
        struct npu_value *in[4] = {v, gc_const_i64(g, "st", st, 2, false),
                                   gc_const_i64(g, "en", en, 2, false),
                                   gc_const_i64(g, "ax", ax, 2, false)};
        n = gc_node(g, NPU_OP_SLICE, "slice", in, 4, 1);
        break;
    }
    case 3: { /* concat along channels with a second branch */
        struct npu_node *s = gc_node(g, NPU_OP_NEG, "neg", &v, 1, 1);
        struct npu_value *w = gc_done(g, s);
        struct npu_value *in[2] = {v, w};
        n = gc_node(g, NPU_OP_CONCAT, "cat", in, 2, 1);
        npu_node_set_int(g, n, "axis", -1);
        break;
    }
    case 4: { /* Gather of row 2 along axis 1 */
        int64_t idx = 2;
        struct npu_value *in[2] = {v, gc_const_i64(g, "i", &idx, 1, true)};
        n = gc_node(g, NPU_OP_GATHER, "gather", in, 2, 1);
        npu_node_set_int(g, n, "axis", 1);
        break;
    }
    case 6:   /* concat along rows: [H, S, D] and its negation, or its first row's ([H, 1, D], a */
    case 7: { /* KV cache and the new row): the heads are blocks of rows (dpu-move.c) */
        struct npu_node *s = gc_node(g, NPU_OP_NEG, "neg", &v, 1, 1);
        struct npu_value *w = gc_done(g, s);
        if (p->kind == 7) {
            int64_t st = 0, en = 1, ax = 1;
            struct npu_value *in[4] = {w, gc_const_i64(g, "st", &st, 1, false),
                                       gc_const_i64(g, "en", &en, 1, false),
                                       gc_const_i64(g, "ax", &ax, 1, false)};
            w = gc_done(g, gc_node(g, NPU_OP_SLICE, "slice", in, 4, 1));
        }
        struct npu_value *in[2] = {v, w};
        n = gc_node(g, NPU_OP_CONCAT, "cat", in, 2, 1);
        npu_node_set_int(g, n, "axis", 1);
        break;
    }
    case 5: { /* Split into channel thirds of 16 */
        int64_t sp[3] = {16, 16, 16};
        struct npu_value *in[2] = {v, gc_const_i64(g, "sp", sp, 3, false)};
        n = gc_node(g, NPU_OP_SPLIT, "split", in, 2, 3);
        npu_node_set_int(g, n, "axis", -1);
        if (!gc_done(g, n))
            return NULL;
        /* add the parts so the test reads one output */
        struct npu_value *a2[2] = {n->out[0], n->out[2]};
        n = gc_node(g, NPU_OP_SUB, "sub", a2, 2, 1);
        break;
    }
    }
    o = gc_done(g, n);
    return gc_output(g, o);
}

static void
test_move(void)
{
    struct mv cases[] = {
        {0, {1, 24, 4, 5}, 4}, {1, {1, 10, 64}, 3}, {2, {1, 6, 40}, 3}, {3, {1, 5, 16}, 3},
        {4, {1, 6, 24}, 3},    {5, {1, 7, 48}, 3},  {6, {4, 9, 16}, 3}, {7, {4, 9, 16}, 3},
    };
    static const char *const names[] = {"reshape+transpose (same bytes)",
                                        "head split + merge",
                                        "slice (channels 8:24, rows 1:4)",
                                        "concat channels",
                                        "gather row",
                                        "split channels",
                                        "concat rows of every head [4, 9 + 9, 16]",
                                        "concat a row to every head [4, 9 + 1, 16]"};
    printf("data movement (a ReLU first, so the op reads an NPU value):\n");
    for (size_t i = 0; i < NPU_ARRAY_SIZE(cases); i++) {
        struct gcase c = {.label = names[i],
                          .build = build_mv,
                          .ctx = &cases[i],
                          .nin = 1,
                          .atol = 1e-9,
                          .rtol = 1e-9,
                          /* (7: the slice of one row per head is a CPU step) */
                          .expect_all_npu = cases[i].kind != 7};
        gc_fill(&c.in[0], cases[i].ndim, cases[i].dims, 50 + (uint32_t)i, 40, 0);
        gc_run(&c);
        free(c.in[0].data);
    }
}

/* ---- pooling ------------------------------------------------------------------------------ */

struct pl {
    enum npu_op op;
    int64_t dims[4];
    int k, s, pad;
    bool relu_first;
};

static struct npu_graph *
build_pool(const void *vp)
{
    const struct pl *p = vp;
    struct npu_graph *g = npu_graph_new("pool");
    struct npu_value *x = gc_input(g, "x", 4, p->dims);
    if (p->relu_first) {
        struct npu_node *r = gc_node(g, NPU_OP_RELU, "relu", &x, 1, 1);
        x = gc_done(g, r);
    }
    struct npu_node *n = gc_node(g, p->op, "pool", &x, 1, 1);
    if (p->op == NPU_OP_MAX_POOL || p->op == NPU_OP_AVERAGE_POOL) {
        int64_t k[2] = {p->k, p->k}, s[2] = {p->s, p->s},
                pads[4] = {p->pad, p->pad, p->pad, p->pad};
        npu_node_set_ints(g, n, "kernel_shape", k, 2);
        npu_node_set_ints(g, n, "strides", s, 2);
        npu_node_set_ints(g, n, "pads", pads, 4);
        if (p->op == NPU_OP_AVERAGE_POOL && p->pad)
            npu_node_set_int(g, n, "count_include_pad", 1);
    }
    return gc_output(g, gc_done(g, n));
}

static void
test_pool(void)
{
    struct pl cases[] = {
        {NPU_OP_MAX_POOL, {1, 19, 9, 13}, 3, 2, 1, true},
        {NPU_OP_MAX_POOL, {1, 8, 12, 12}, 2, 2, 0, false},
        {NPU_OP_AVERAGE_POOL, {1, 19, 9, 13}, 3, 2, 1, false},
        {NPU_OP_AVERAGE_POOL, {1, 16, 8, 8}, 2, 2, 0, false},
        {NPU_OP_GLOBAL_MAX_POOL, {1, 24, 7, 7}, 0, 0, 0, false},
        {NPU_OP_GLOBAL_MAX_POOL, {1, 8, 28, 20}, 0, 0, 0, false},
        {NPU_OP_GLOBAL_AVERAGE_POOL, {1, 40, 7, 7}, 0, 0, 0, false},
        {NPU_OP_GLOBAL_AVERAGE_POOL, {1, 16, 56, 56}, 0, 0, 0, false},
    };
    printf("pooling (max on the PPU, average as a depthwise conv):\n");
    for (size_t i = 0; i < NPU_ARRAY_SIZE(cases); i++) {
        char label[96];
        snprintf(label, sizeof(label), "%s k%d s%d p%d [%lld,%lld,%lld]", npu_op_name(cases[i].op),
                 cases[i].k, cases[i].s, cases[i].pad, (long long)cases[i].dims[1],
                 (long long)cases[i].dims[2], (long long)cases[i].dims[3]);
        bool avg = cases[i].op == NPU_OP_AVERAGE_POOL || cases[i].op == NPU_OP_GLOBAL_AVERAGE_POOL;
        /* average: fp32 sums of up to 3136 fp16-exact terms, then one fp16 rounding per
         * stage */
        struct gcase c = {.label = label,
                          .build = build_pool,
                          .ctx = &cases[i],
                          .nin = 1,
                          .atol = 1e-4,
                          .rtol = avg ? ldexp(1, -9) : 1e-9,
                          .expect_all_npu = true};
        gc_fill(&c.in[0], 4, cases[i].dims, 70 + (uint32_t)i, 48, 0);
        gc_run(&c);
        free(c.in[0].data);
    }
}

int
main(int argc, char **argv)
{
    gc_verbose = argc > 1 && !strcmp(argv[1], "-v");
    test_binary();
    test_unary();
    test_move();
    test_pool();
    return npu_test_done("dpu-ops");
}
