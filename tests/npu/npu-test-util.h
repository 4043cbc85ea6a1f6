/* SPDX-License-Identifier: MIT */
/*
 * npu-test-util.h: graph builders and comparison helpers for the back end's
 * numerical tests: a MatMul / Gemm / Conv graph built twice from one seed
 * (once for the CPU executor, once for the NPU path), data that is exact in
 * fp16 so that the only rounding left is the fp32 summation order and the
 * final fp16 store, and the bound that justifies the tolerance.
 */
#ifndef NPU_TEST_UTIL_H
#define NPU_TEST_UTIL_H

#include <math.h>
#include <unistd.h>

#include "npu-test-file.h"
#include "npu-test.h"
#include "npu/npu-backend.h"
#include "npu/npu-exec.h"
#include "npu/npu-ir.h"
#include "npu/npu-model.h"
#include "npu/npu-passes.h"
#include "prog-run.h"

static inline uint32_t
tu_rand(uint32_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return *s;
}

/* Values k/16 with |k| <= 32: exact in fp16, products exact, sums of up to
 * 2^13 terms exact in fp32 when the magnitudes stay small. */
static inline float
tu_val(uint32_t *s, int range)
{
    return (float)((int)(tu_rand(s) % (2u * range + 1)) - range) / 16.0f;
}

static inline void
tu_fill(float *v, size_t n, uint32_t *s, int range)
{
    for (size_t i = 0; i < n; i++)
        v[i] = tu_val(s, range);
}

/* Random floats that are NOT exact in fp16 (uniform in [-1, 1)). */
static inline void
tu_fill_real(float *v, size_t n, uint32_t *s)
{
    for (size_t i = 0; i < n; i++)
        v[i] = (float)((double)tu_rand(s) / 4294967296.0 * 2.0 - 1.0);
}

struct tu_mm {
    int rank; /* rank of A: 1, 2 or 3 */
    int b0;   /* leading batch dim for rank 3 */
    int M, K, N;
    bool bias;
    const char *act; /* npu_act or NULL */
    float act_alpha, act_beta;
    bool gemm, trans_b;
    float alpha, beta;
    int range; /* tu_val range, 0 = real-valued data */
    uint32_t seed;
};

static inline struct npu_graph *
tu_matmul_graph(const struct tu_mm *p)
{
    struct npu_graph *g = npu_graph_new("mm");
    uint32_t s = p->seed;
    int64_t ad[3];
    int ar = p->rank;
    if (ar == 1)
        ad[0] = p->K;
    else if (ar == 2) {
        ad[0] = p->M;
        ad[1] = p->K;
    } else {
        ad[0] = p->b0;
        ad[1] = p->M;
        ad[2] = p->K;
    }
    struct npu_value *a = npu_graph_add_input(g, "a", NPU_DTYPE_FP32, ar, ad);
    size_t nb = (size_t)p->K * p->N;
    float *b = malloc(nb * 4);
    if (p->range)
        tu_fill(b, nb, &s, p->range);
    else
        tu_fill_real(b, nb, &s);
    int64_t bd[2] = {p->trans_b ? p->N : p->K, p->trans_b ? p->K : p->N};
    struct npu_tensor bt = {.dtype = NPU_DTYPE_FP32, .ndim = 2, .dims = {bd[0], bd[1]}, .data = b};
    struct npu_value *bv = npu_graph_add_const(g, "b", &bt);
    free(b);
    struct npu_value *in[3] = {a, bv, NULL};
    int nin = 2;
    if (p->bias) {
        float *c = malloc((size_t)p->N * 4);
        if (p->range)
            tu_fill(c, (size_t)p->N, &s, p->range);
        else
            tu_fill_real(c, (size_t)p->N, &s);
        in[2] = npu_graph_const_f32(g, "c", c, p->N, false);
        free(c);
        nin = 3;
    }
    struct npu_node *n = npu_node_new(g, p->gemm ? NPU_OP_GEMM : NPU_OP_MATMUL, "mm", in, nin, 1,
                                      (const char *[]){"y"});
    if (p->gemm) {
        if (p->trans_b)
            npu_node_set_int(g, n, "transB", 1);
        if (p->alpha != 0)
            npu_node_set_float(g, n, "alpha", p->alpha);
        if (p->beta != 0)
            npu_node_set_float(g, n, "beta", p->beta);
    }
    if (p->act) {
        npu_node_set_string(g, n, "npu_act", p->act);
        if (!strcmp(p->act, "clip") || !strcmp(p->act, "leaky_relu"))
            npu_node_set_float(g, n, "npu_act_alpha", p->act_alpha);
        if (!strcmp(p->act, "clip"))
            npu_node_set_float(g, n, "npu_act_beta", p->act_beta);
    }
    npu_graph_append(g, n);
    if (npu_infer_node(g, n) != NPU_OK) {
        npu_graph_free(g);
        return NULL;
    }
    npu_graph_add_output(g, n->out[0]);
    return g;
}

struct tu_conv {
    int C, H, W, K, kh, kw, sy, sx, pt, pl, pb, pr, group;
    int N;      /* images (0: 1) */
    bool one_d; /* Conv1d: input [N, C, W], kernel [K, C/g, kw]; sx, pl / pr, dx only */
    int dy, dx; /* dilation (0: 1) */
    bool bias;
    const char *act;
    float act_alpha, act_beta;
    int range;
    uint32_t seed;
};

static inline struct npu_graph *
tu_conv_graph(const struct tu_conv *p)
{
    struct npu_graph *g = npu_graph_new("conv");
    uint32_t s = p->seed;
    const int nd = p->one_d ? 3 : 4;
    int64_t xd[4] = {p->N ? p->N : 1, p->C, p->H, p->W};
    if (p->one_d)
        xd[2] = p->W;
    struct npu_value *x = npu_graph_add_input(g, "x", NPU_DTYPE_FP32, nd, xd);
    int grp = p->group ? p->group : 1;
    size_t nw = (size_t)p->K * (p->C / grp) * (p->one_d ? 1 : p->kh) * p->kw;
    float *w = malloc(nw * 4);
    if (p->range)
        tu_fill(w, nw, &s, p->range);
    else
        tu_fill_real(w, nw, &s);
    struct npu_tensor wt = {
        .dtype = NPU_DTYPE_FP32, .ndim = nd, .dims = {p->K, p->C / grp, p->kh, p->kw}, .data = w};
    if (p->one_d)
        wt.dims[2] = p->kw;
    struct npu_value *wv = npu_graph_add_const(g, "w", &wt);
    free(w);
    struct npu_value *in[3] = {x, wv, NULL};
    int nin = 2;
    if (p->bias) {
        float *c = malloc((size_t)p->K * 4);
        if (p->range)
            tu_fill(c, (size_t)p->K, &s, p->range);
        else
            tu_fill_real(c, (size_t)p->K, &s);
        in[2] = npu_graph_const_f32(g, "bias", c, p->K, false);
        free(c);
        nin = 3;
    }
    struct npu_node *n = npu_node_new(g, NPU_OP_CONV, "conv", in, nin, 1, (const char *[]){"y"});
    int64_t k2[2] = {p->kh, p->kw}, s2[2] = {p->sy ? p->sy : 1, p->sx ? p->sx : 1};
    int64_t pads[4] = {p->pt, p->pl, p->pb, p->pr};
    int64_t d2[2] = {p->dy ? p->dy : 1, p->dx ? p->dx : 1};
    if (p->one_d) {
        int64_t pads1[2] = {p->pl, p->pr};
        npu_node_set_ints(g, n, "kernel_shape", k2 + 1, 1);
        npu_node_set_ints(g, n, "strides", s2 + 1, 1);
        npu_node_set_ints(g, n, "pads", pads1, 2);
        if (p->dx)
            npu_node_set_ints(g, n, "dilations", d2 + 1, 1);
    } else {
        npu_node_set_ints(g, n, "kernel_shape", k2, 2);
        npu_node_set_ints(g, n, "strides", s2, 2);
        npu_node_set_ints(g, n, "pads", pads, 4);
        if (p->dy || p->dx)
            npu_node_set_ints(g, n, "dilations", d2, 2);
    }
    if (grp > 1)
        npu_node_set_int(g, n, "group", grp);
    if (p->act) {
        npu_node_set_string(g, n, "npu_act", p->act);
        if (!strcmp(p->act, "clip") || !strcmp(p->act, "leaky_relu"))
            npu_node_set_float(g, n, "npu_act_alpha", p->act_alpha);
        if (!strcmp(p->act, "clip"))
            npu_node_set_float(g, n, "npu_act_beta", p->act_beta);
    }
    npu_graph_append(g, n);
    if (npu_infer_node(g, n) != NPU_OK) {
        npu_graph_free(g);
        return NULL;
    }
    npu_graph_add_output(g, n->out[0]);
    return g;
}

/* Runs graph g (taken) on the CPU executor without passes; out[0 .. *nout) get
 * copies of its first outputs, at most max_out (<= 32; the caller frees each
 * out[k].data). */
static inline enum npu_status
tu_run_cpu_outputs(struct npu_graph *g, const struct npu_tensor *in, int nin,
                   struct npu_tensor *out, int max_out, int *nout)
{
    int n = g->noutputs < max_out ? g->noutputs : max_out;
    *nout = 0;
    if (n > 32) {
        npu_graph_free(g);
        return NPU_ERR_UNSUPPORTED;
    }
    struct npu_model *m = NULL;
    enum npu_status st = npu_model_from_graph(g, NULL, NPU_EXEC_NO_PASSES, &m);
    if (st)
        return st;
    struct npu_session *s = NULL;
    if ((st = npu_session_create(m, 0, &s))) {
        npu_model_free(m);
        return st;
    }
    struct npu_tensor o[32];
    st = npu_session_run(s, in, nin, o, n, NULL);
    for (int k = 0; !st && k < n; k++) {
        out[k] = o[k];
        size_t nb = (size_t)npu_tensor_nbytes(&o[k]);
        out[k].data = malloc(nb);
        memcpy(out[k].data, o[k].data, nb);
    }
    if (!st)
        *nout = n;
    npu_session_destroy(s);
    npu_model_free(m);
    return st;
}

/* The same for output 0 alone (caller frees out->data). */
static inline enum npu_status
tu_run_cpu(struct npu_graph *g, const struct npu_tensor *in, int nin, struct npu_tensor *out)
{
    int n;
    return tu_run_cpu_outputs(g, in, nin, out, 1, &n);
}

/* G as IR text (npu_ir_save through a temporary file), its blob sidecar in *side
 * (*side_len bytes); NULL (and *side NULL) when either cannot be written or read back.
 * The caller frees both. */
static inline char *
tu_ir_text(const struct npu_graph *g, char **side, size_t *side_len)
{
    char path[] = "/tmp/npu-test-ir-XXXXXX", sp[64];
    char *t = NULL;
    size_t n = 0;
    *side = NULL;
    int fd = mkstemp(path);
    if (fd < 0)
        return NULL;
    close(fd);
    snprintf(sp, sizeof(sp), "%s.bin", path);
    if (npu_ir_save(g, path) == NPU_OK && (t = npu_test_slurp(path, &n)) &&
        !(*side = npu_test_slurp(sp, side_len))) {
        free(t);
        t = NULL;
    }
    unlink(path);
    unlink(sp);
    return t;
}

struct tu_npu_result {
    double modeled_s;
    unsigned submits, tasks;
    uint64_t macs, dma_bytes;
    int n_rk;  /* rk.Conv nodes after lowering */
    int n_dpu; /* rk.Dpu nodes with tasks (not views) */
    int n_cpu; /* CPU steps */
};

/* Lowers g (taken), generates the program, runs it on the simulator (strict). */
static inline enum npu_status
tu_run_npu(struct npu_graph *g, const struct npu_backend_options *o, const struct npu_tensor *in,
           struct npu_tensor *out, struct tu_npu_result *res)
{
    struct npu_program *p = NULL;
    struct prun r;
    enum npu_status st = npu_lower_graph(g, o);
    if (!st)
        st = npu_graph_verify(g);
    if (st) {
        npu_graph_free(g);
        return st;
    }
    if (res) {
        memset(res, 0, sizeof(*res));
        npu_graph_for_each_node (g, n) {
            if (n->op == NPU_OP_RK_CONV)
                res->n_rk++;
            else if (n->op == NPU_OP_RK_DPU && !npu_node_int(n, "alias", 0))
                res->n_dpu++;
            else if (!npu_op_is_rk(n->op))
                res->n_cpu++;
        }
    }
    st = npu_codegen(g, o, &p);
    npu_graph_free(g);
    if (st)
        return st;
    if ((st = prun_open(&r, p)) == NPU_OK) {
        struct npu_tensor o1[4];
        st = prun_run(&r, in, o1);
        if (!st) {
            *out = o1[0];
            size_t nb = (size_t)npu_tensor_nbytes(&o1[0]);
            out->data = malloc(nb);
            memcpy(out->data, o1[0].data, nb);
            if (res) {
                res->modeled_s = r.modeled_s;
                res->submits = r.submits;
                res->tasks = r.tasks;
                res->macs = r.macs;
                res->dma_bytes = r.dma_bytes;
            }
        }
    }
    prun_close(&r);
    npu_program_free(p);
    return st;
}

/* Largest |a - b| / (tol_abs + tol_rel * |b|) over all elements (<= 1 passes). */
static inline double
tu_cmp(const struct npu_tensor *a, const struct npu_tensor *b, double tol_abs, double tol_rel,
       int64_t *worst)
{
    int64_t n = npu_tensor_numel(b);
    double w = 0;
    if (npu_tensor_numel(a) != n)
        return INFINITY;
    for (int64_t i = 0; i < n; i++) {
        double x = ((const float *)a->data)[i], y = ((const float *)b->data)[i];
        double e = fabs(x - y) / (tol_abs + tol_rel * fabs(y));
        if (!(e <= w)) {
            w = isnan(e) ? INFINITY : e;
            if (worst)
                *worst = i;
        }
    }
    return w;
}

/* Text for the robustness tests: IR text with 1 to 3 mutations, each inside the attribute
 * braces of a line whose op starts with `op` ("= rk.Dpu", "= rk."): a digit changed, a minus
 * sign, a big number or a character dropped (malloc'd). */
static inline char *
tu_mutate_ir(const char *text, const char *op, uint32_t *seed)
{
    size_t n = strlen(text);
    char *t = malloc(n + 64);
    memcpy(t, text, n + 1);
    int muts = 1 + (int)(tu_rand(seed) % 3);
    for (int k = 0; k < muts; k++) {
        size_t pos = tu_rand(seed) % n;
        const char *rk = strstr(t + pos, op);
        if (!rk)
            rk = strstr(t, op);
        if (!rk)
            break;
        const char *br = strchr(rk, '{');
        const char *end = br ? strchr(br, '}') : NULL;
        if (!br || !end)
            break;
        size_t a = (size_t)(br - t) + 1, b = (size_t)(end - t);
        if (b <= a)
            break;
        size_t at = a + tu_rand(seed) % (b - a);
        switch (tu_rand(seed) % 4) {
        case 0: /* another digit */
            if (t[at] >= '0' && t[at] <= '9')
                t[at] = (char)('0' + tu_rand(seed) % 10);
            break;
        case 1: /* a minus sign */
            if (t[at] >= '0' && t[at] <= '9')
                t[at] = '-';
            break;
        case 2: { /* a big number */
            static const char *big[] = {"4095", "65535", "2147483647", "99999999999", "0"};
            const char *v = big[tu_rand(seed) % 5];
            size_t lv = strlen(v);
            if (t[at] >= '0' && t[at] <= '9' && at + lv < b)
                memcpy(t + at, v, lv);
            break;
        }
        default: /* drop a character */
            memmove(t + at, t + at + 1, strlen(t + at + 1) + 1);
            n = strlen(t);
            break;
        }
    }
    return t;
}

#endif /* NPU_TEST_UTIL_H */
