/* SPDX-License-Identifier: MIT */
/*
 * graph-case.h: one-op (or few-op) graphs run through the whole back end (lowering,
 * memory plan, codegen, the simulator in strict mode) and through the CPU executor, and
 * compared. A case is a builder function called twice (each run consumes its graph) with
 * deterministic data, so both sides see identical graphs.
 */
#ifndef GRAPH_CASE_H
#define GRAPH_CASE_H

#include "npu-test-util.h"

/* ---- graph building ------------------------------------------------------------------ */

static inline struct npu_value *
gc_input(struct npu_graph *g, const char *name, int ndim, const int64_t *dims)
{
    return npu_graph_add_input(g, name, NPU_DTYPE_FP32, ndim, dims);
}

static inline struct npu_value *
gc_const(struct npu_graph *g, const char *name, int ndim, const int64_t *dims, const float *v)
{
    struct npu_tensor t = {.dtype = NPU_DTYPE_FP32, .ndim = ndim, .data = (void *)v};
    for (int i = 0; i < ndim; i++)
        t.dims[i] = dims[i];
    return npu_graph_add_const(g, name, &t);
}

static inline struct npu_value *
gc_const_i64(struct npu_graph *g, const char *name, const int64_t *v, int n, bool scalar)
{
    return npu_graph_const_i64(g, name, v, n, scalar);
}

/* Appends op(in...) with one output; attributes are set by the caller on *node (optional)
 * before gc_done. */
static inline struct npu_node *
gc_node(struct npu_graph *g, enum npu_op op, const char *name, struct npu_value **in, int nin,
        int nout)
{
    const char *names[8];
    char buf[8][64];
    for (int i = 0; i < nout; i++) {
        snprintf(buf[i], sizeof(buf[i]), "%s_out%d", name, i);
        names[i] = buf[i];
    }
    struct npu_node *n = npu_node_new(g, op, name, in, nin, nout, names);
    npu_graph_append(g, n);
    return n;
}

/* Runs inference on n; returns its output 0 (NULL on failure). */
static inline struct npu_value *
gc_done(struct npu_graph *g, struct npu_node *n)
{
    if (npu_infer_node(g, n) != NPU_OK)
        return NULL;
    return n->out[0];
}

/* The end of a case's build(): o made the graph's output, g returned; NULL when o is
 * (inference failed). */
static inline struct npu_graph *
gc_output(struct npu_graph *g, struct npu_value *o)
{
    if (!o)
        return NULL;
    npu_graph_add_output(g, o);
    return g;
}

/* ---- running ------------------------------------------------------------------------- */

struct gcase {
    const char *label;
    struct npu_graph *(*build)(const void *ctx);
    const void *ctx;
    int nin;
    struct npu_tensor in[4]; /* data filled by the caller */
    double atol, rtol;
    bool expect_all_npu;                    /* every node lowered (no CPU step) */
    const struct npu_backend_options *opts; /* lowering options (NULL: defaults) */
};

struct gresult {
    double err; /* max |npu - cpu| / (atol + rtol |cpu|) */
    double max_abs, max_rel;
    double modeled_s;
    unsigned tasks, submits;
    int n_cpu;
    enum npu_status st;
};

static int gc_verbose;

static inline struct gresult
gc_run(const struct gcase *c)
{
    struct gresult r;
    memset(&r, 0, sizeof(r));
    struct npu_tensor want = {0}, got = {0};
    struct tu_npu_result res;
    struct npu_graph *g1 = c->build(c->ctx), *g2 = c->build(c->ctx);
    if (!g1 || !g2) {
        fprintf(stderr, "%s: graph build failed\n", c->label);
        r.st = NPU_ERR_INVALID;
        npu_test_checks++, npu_test_failures++;
        return r;
    }
    r.st = tu_run_cpu(g1, c->in, c->nin, &want);
    CHECK_EQ_INT(NPU_OK, r.st);
    if (r.st) {
        npu_graph_free(g2);
        return r;
    }
    r.st = tu_run_npu(g2, c->opts, c->in, &got, &res);
    CHECK_EQ_INT(NPU_OK, r.st);
    if (!r.st) {
        int64_t worst = 0, n = npu_tensor_numel(&want);
        r.err = tu_cmp(&got, &want, c->atol, c->rtol, &worst);
        const float *a = got.data, *b = want.data;
        for (int64_t i = 0; i < n; i++) {
            double d = fabs((double)a[i] - b[i]);
            if (!(d <= r.max_abs))
                r.max_abs = d;
            if (fabs(b[i]) > 1e-3 && !(d / fabs(b[i]) <= r.max_rel))
                r.max_rel = d / fabs(b[i]);
        }
        r.modeled_s = res.modeled_s;
        r.tasks = res.tasks;
        r.submits = res.submits;
        r.n_cpu = res.n_cpu;
        if (r.err > 1)
            fprintf(stderr, "%s: element %lld: npu %.9g cpu %.9g (err %.3g of tolerance)\n",
                    c->label, (long long)worst, a[worst], b[worst], r.err);
        CHECK(r.err <= 1);
        if (c->expect_all_npu) {
            CHECK_EQ_INT(0, r.n_cpu);
            CHECK_EQ_INT(1, r.submits);
        }
        if (gc_verbose || r.err > 1)
            printf("  %-44s tasks %4u  modeled %9.1f us  max|err| %.3g  err/tol %.2f\n", c->label,
                   r.tasks, r.modeled_s * 1e6, r.max_abs, r.err);
    }
    free(want.data);
    free(got.data);
    return r;
}

/* Fills an fp32 input tensor of dims with data exact in fp16 (multiples of 1/16 up to
 * +-range/16) or real-valued (range 0: uniform in [-amp, amp]). */
static inline void
gc_fill(struct npu_tensor *t, int ndim, const int64_t *dims, uint32_t seed, int range, float amp)
{
    memset(t, 0, sizeof(*t));
    t->dtype = NPU_DTYPE_FP32;
    t->ndim = ndim;
    int64_t n = 1;
    for (int i = 0; i < ndim; i++)
        n *= (t->dims[i] = dims[i]);
    float *v = malloc((size_t)n * 4);
    uint32_t s = seed * 2654435761u + 7;
    for (int64_t i = 0; i < n; i++)
        v[i] = range ? tu_val(&s, range)
                     : amp * (float)((double)tu_rand(&s) / 4294967296.0 * 2.0 - 1.0);
    t->data = v;
}

/* A constant of dims filled like gc_fill's real-valued data (uniform in [-a, a]). */
static inline struct npu_value *
gc_rconst(struct npu_graph *g, const char *name, int nd, const int64_t *d, uint32_t seed, float a)
{
    struct npu_tensor t;
    gc_fill(&t, nd, d, seed, 0, a);
    struct npu_value *c = gc_const(g, name, nd, d, t.data);
    free(t.data);
    return c;
}

/* Reshape of x to d (a constant shape input) */
static inline struct npu_value *
gc_reshape(struct npu_graph *g, struct npu_value *x, const char *nm, int nd, const int64_t *d)
{
    struct npu_value *in[2] = {x, gc_const_i64(g, "shape", d, nd, false)};
    return gc_done(g, gc_node(g, NPU_OP_RESHAPE, nm, in, 2, 1));
}

/* Transpose of x by the permutation p */
static inline struct npu_value *
gc_transpose(struct npu_graph *g, struct npu_value *x, const char *nm, int nd, const int64_t *p)
{
    struct npu_node *n = gc_node(g, NPU_OP_TRANSPOSE, nm, &x, 1, 1);
    npu_node_set_ints(g, n, "perm", p, (size_t)nd);
    return gc_done(g, n);
}

#endif /* GRAPH_CASE_H */
