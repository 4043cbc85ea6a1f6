/* SPDX-License-Identifier: MIT */
/*
 * exec-graph.h: in-memory graph builders shared by the CPU executor's plan tests
 * (exec_residual_test.c, exec_concat_test.c, exec_pwdw_test.c): seeded random constants, a
 * "same"-padded Conv (grouped or not) with bias and optional fused Relu, a one- or two-operand
 * node whose output takes the larger operand's shape, and the runs that compare a plan with
 * its kernel fusions against one without. Static functions: include it in one test file each.
 */
#ifndef NPU_TEST_EXEC_GRAPH_H
#define NPU_TEST_EXEC_GRAPH_H

#include <stdlib.h>
#include <string.h>

#include "npu-test.h"
#include "npu/npu-exec.h"
#include "npu/npu-ir.h"
#include "npu/npu-model.h"

static uint32_t rng = 12345;

static float
frand(void)
{
    rng = rng * 1664525u + 1013904223u;
    return (float)((rng >> 8) & 0xffff) / 32768.0f - 1.0f;
}

static struct npu_value *
const_rand(struct npu_graph *g, const char *name, int ndim, const int64_t *dims)
{
    struct npu_tensor t = {.dtype = NPU_DTYPE_FP32, .ndim = ndim};
    memcpy(t.dims, dims, sizeof(int64_t) * (size_t)ndim);
    int64_t n = npu_tensor_numel(&t);
    float *d = malloc(sizeof(float) * (size_t)n);
    for (int64_t i = 0; d && i < n; i++)
        d[i] = frand() * 0.3f;
    t.data = d;
    struct npu_value *v = d ? npu_graph_add_const(g, name, &t) : NULL;
    free(d);
    return v;
}

/* y = Conv(x) with k x k weights, stride s, "same" padding, M output channels in `group`
 * groups (1: a plain Conv, no group attribute; M == C == group: a depthwise one), bias. */
static struct npu_value *
conv(struct npu_graph *g, struct npu_value *x, int64_t M, int64_t k, int64_t s, int64_t group,
     bool relu)
{
    static int id;
    char nm[32];
    int64_t C = x->t.dims[1], wd[4] = {M, C / group, k, k}, bd[1] = {M};
    snprintf(nm, sizeof(nm), "w%d", id);
    struct npu_value *w = const_rand(g, nm, 4, wd);
    snprintf(nm, sizeof(nm), "b%d", id);
    struct npu_value *b = const_rand(g, nm, 1, bd);
    snprintf(nm, sizeof(nm), "conv%d", id++);
    struct npu_value *in[3] = {x, w, b};
    struct npu_node *n = npu_node_new(g, NPU_OP_CONV, nm, in, 3, 1, NULL);
    if (!n)
        return NULL;
    int64_t p = k / 2, pads[4] = {p, p, p, p}, st[2] = {s, s}, ks[2] = {k, k};
    npu_node_set_attr(g, n, &(struct npu_attr){"pads", NPU_ATTR_INTS, .ints = pads, .n = 4});
    npu_node_set_attr(g, n, &(struct npu_attr){"strides", NPU_ATTR_INTS, .ints = st, .n = 2});
    npu_node_set_attr(g, n, &(struct npu_attr){"kernel_shape", NPU_ATTR_INTS, .ints = ks, .n = 2});
    if (group != 1)
        npu_node_set_attr(g, n, &(struct npu_attr){"group", NPU_ATTR_INT, .i = group});
    if (relu)
        npu_node_set_attr(g, n, &(struct npu_attr){"npu_act", NPU_ATTR_STRING, .s = "relu"});
    struct npu_value *y = n->out[0];
    y->t.dtype = NPU_DTYPE_FP32;
    y->t.ndim = 4;
    y->t.dims[0] = x->t.dims[0];
    y->t.dims[1] = M;
    y->t.dims[2] = (x->t.dims[2] + 2 * p - k) / s + 1;
    y->t.dims[3] = (x->t.dims[3] + 2 * p - k) / s + 1;
    npu_graph_append(g, n);
    return y;
}

static struct npu_value *
unary(struct npu_graph *g, enum npu_op op, struct npu_value *a, struct npu_value *b)
{
    struct npu_value *in[2] = {a, b};
    struct npu_node *n = npu_node_new(g, op, "", in, b ? 2 : 1, 1, NULL);
    if (!n)
        return NULL;
    n->out[0]->t = a->t;
    n->out[0]->t.data = NULL;
    if (b && b->t.ndim == a->t.ndim && b->t.dims[3] > a->t.dims[3])
        n->out[0]->t = b->t;
    npu_graph_append(g, n);
    return n->out[0];
}

/* Runs model m once on a seeded [N, C, H, W] input, copies its (at most 2) outputs into
 * out[] (malloc'd, n[] elements each, *nout of them) and frees m; returns the plan's
 * activation bytes (0 when m is NULL). */
static size_t
exec_run_model(struct npu_model *m, int64_t N, int64_t C, int64_t H, int64_t W, float **out,
               int64_t *n, int *nout)
{
    *nout = 0;
    if (!m)
        return 0;
    size_t bytes = npu_model_activation_bytes(m);
    struct npu_session *s = NULL;
    CHECK_EQ_INT(NPU_OK, npu_session_create(m, 0, &s));
    struct npu_tensor x = {.dtype = NPU_DTYPE_FP32, .ndim = 4};
    int64_t xd[4] = {N, C, H, W};
    memcpy(x.dims, xd, sizeof(xd));
    int64_t nx = npu_tensor_numel(&x);
    float *xv = malloc(sizeof(float) * (size_t)nx);
    uint32_t r = 777;
    for (int64_t i = 0; xv && i < nx; i++) {
        r = r * 1664525u + 1013904223u;
        xv[i] = (float)((r >> 8) & 0xffff) / 32768.0f - 1.0f;
    }
    x.data = xv;
    *nout = npu_model_num_outputs(m);
    struct npu_tensor o_t[2];
    CHECK_EQ_INT(NPU_OK, npu_session_run(s, &x, 1, o_t, *nout, NULL));
    for (int k = 0; k < *nout; k++) {
        n[k] = npu_tensor_numel(&o_t[k]);
        out[k] = malloc(sizeof(float) * (size_t)n[k]);
        memcpy(out[k], o_t[k].data, sizeof(float) * (size_t)n[k]);
    }
    free(xv);
    npu_session_destroy(s);
    npu_model_free(m);
    return bytes;
}

/* The graph build(arg) makes (rng restored after each build: every run gets the same
 * constants), run three times on a seeded [N, C, H, W] input: without kernel fusion
 * (NPU_EXEC_NO_KERNEL_FUSION) on one thread, the reference, then with it on 1 and on 3
 * threads. Checked: each run has nout outputs, each the same bytes in all three (a differing
 * one is printed after `what`). *b_ref, *b_got: the reference's and the fused one-thread
 * plan's activation bytes. */
static inline void
exec_fused_vs_unfused(struct npu_graph *(*build)(const void *arg), const void *arg, int nout,
                      int64_t N, int64_t C, int64_t H, int64_t W, const char *what, size_t *b_ref,
                      size_t *b_got)
{
    static const unsigned flags[3] = {NPU_EXEC_NO_KERNEL_FUSION, 0, 0};
    static const int threads[3] = {1, 1, 3};
    float *out[3][2] = {{NULL}};
    int64_t n[3][2] = {{0}};
    size_t bytes[3] = {0};
    for (int r = 0; r < 3; r++) {
        uint32_t seed = rng;
        struct npu_graph *g = build(arg);
        rng = seed;
        struct npu_model_options o = {.cpu_threads = threads[r]};
        struct npu_model *m = NULL;
        CHECK_EQ_INT(NPU_OK, npu_model_from_graph(g, &o, flags[r] | NPU_EXEC_NO_PASSES, &m));
        int got = 0;
        bytes[r] = exec_run_model(m, N, C, H, W, out[r], n[r], &got);
        CHECK_EQ_INT(nout, got);
    }
    for (int k = 0; k < nout && k < 2; k++) {
        CHECK(n[0][k] > 0 && n[0][k] == n[1][k] && n[0][k] == n[2][k]);
        bool same = out[0][k] && out[1][k] && out[2][k] && n[0][k] == n[1][k] &&
                    n[0][k] == n[2][k] &&
                    !memcmp(out[0][k], out[1][k], sizeof(float) * (size_t)n[0][k]) &&
                    !memcmp(out[0][k], out[2][k], sizeof(float) * (size_t)n[0][k]);
        if (!same)
            fprintf(stderr, "%s output %d: fused != unfused\n", what, k);
        CHECK(same);
    }
    for (int r = 0; r < 3; r++)
        for (int k = 0; k < 2; k++)
            free(out[r][k]);
    *b_ref = bytes[0];
    *b_got = bytes[1];
}

#endif
