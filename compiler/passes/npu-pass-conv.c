/* SPDX-License-Identifier: MIT */
/*
 * npu-pass-conv.c: producer fusions for the NPU's convolution / matrix
 * pipelines (which apply bias and activation on the way out, facts: DPU).
 *
 *  - Conv -> BatchNormalization (constant f32 parameters): the BN is folded
 *    into new Conv weights and bias.
 *  - Conv / Gemm / MatMul -> Add(constant bias): the bias joins the producer
 *    (Conv: input B; Gemm: input C; MatMul: a third input, our extension).
 *  - Conv / Gemm / MatMul -> activation: recorded on the producer as
 *    npu_act = "<activation op name>" plus npu_act_alpha / npu_act_beta
 *    (docs/ir.md), so one node computes act(op(x) + bias).
 */
#include <math.h>
#include <stdlib.h>

#include "passes-priv.h"

static bool
const_f32(const struct npu_value *v)
{
    return v && v->kind == NPU_VALUE_CONST && v->t.dtype == NPU_DTYPE_FP32;
}

static bool
fold_bn(struct npu_graph *g, struct npu_node *bn, enum npu_status *st)
{
    struct npu_value *y = bn->in[0];
    struct npu_node *conv = producer_op(y, NPU_OP_CONV);
    /* training mode normalises with the batch's own statistics: nothing to fold */
    if (!conv || !single_use(y) || bn->nout != 1 || npu_node_attr(conv, "npu_act") ||
        npu_node_int(bn, "training_mode", 0))
        return false;
    struct npu_value *w = conv->in[1], *b = npu_node_in(conv, 2);
    if (!const_f32(w) || (b && !const_f32(b)))
        return false;
    for (int i = 1; i < 5; i++)
        if (!const_f32(npu_node_in(bn, i)))
            return false;
    int64_t m = w->t.dims[0];
    int64_t per = npu_value_numel(w) / (m ? m : 1);
    float eps = npu_node_float(bn, "epsilon", 1e-5f);
    /* fp32 constants may be unaligned (borrowed from the model file): memcpy loads */
    const void *gam = bn->in[1]->t.data, *bet = bn->in[2]->t.data, *mean = bn->in[3]->t.data,
               *var = bn->in[4]->t.data;
    for (int i = 1; i < 5; i++)
        if (npu_value_numel(bn->in[i]) != m)
            return false;
    struct npu_tensor wt = w->t, bt = {.dtype = NPU_DTYPE_FP32, .ndim = 1, .dims = {m}};
    wt.data = npu_graph_alloc(g, (size_t)npu_tensor_nbytes(&wt));
    bt.data = npu_graph_alloc(g, (size_t)m * 4);
    if (!wt.data || !bt.data) {
        *st = NPU_ERR_NOMEM;
        return false;
    }
    const void *w0 = w->t.data, *b0 = b ? b->t.data : NULL;
    float *w1 = wt.data, *b1 = bt.data;
    for (int64_t o = 0; o < m; o++) {
        /* computed in double, rounded once */
        double f = (double)npu_f32_at(gam, o) / sqrt((double)npu_f32_at(var, o) + (double)eps);
        for (int64_t i = 0; i < per; i++)
            w1[o * per + i] = (float)((double)npu_f32_at(w0, o * per + i) * f);
        b1[o] = (float)(((b0 ? (double)npu_f32_at(b0, o) : 0.0) - (double)npu_f32_at(mean, o)) * f +
                        (double)npu_f32_at(bet, o));
    }
    struct npu_value *nw = npu_graph_add_const_owned(g, w->name, &wt);
    struct npu_value *nb = npu_graph_add_const_owned(g, b ? b->name : "conv_bias", &bt);
    struct npu_value *ins[3] = {conv->in[0], nw, nb};
    struct npu_node *n = npu_node_new(g, NPU_OP_CONV, conv->name, ins, 3, 1, NULL);
    if (!nw || !nb || !n) {
        *st = NPU_ERR_NOMEM;
        return false;
    }
    for (int i = 0; i < conv->nattr; i++)
        if ((*st = npu_node_set_attr(g, n, &conv->attr[i])))
            return false;
    struct npu_node *mt[2] = {conv, bn};
    pass_replace(g, n, bn, bn->out[0], mt, 2);
    return true;
}

/* For a producer of output shape o, the bias (constant) shape it can absorb:
 * returns the per-channel count (Conv: dim 1; Gemm/MatMul: last dim) or -1. */
static int64_t
bias_channels(const struct npu_node *p, const struct npu_value *out, const struct npu_value *b)
{
    const struct npu_tensor *o = &out->t, *t = &b->t;
    if (t->ndim > o->ndim || b->t.dtype != o->dtype)
        return -1;
    int ch = p->op == NPU_OP_CONV ? 1 : o->ndim - 1;
    for (int i = 0; i < t->ndim; i++) {
        int oi = o->ndim - t->ndim + i;
        if (t->dims[i] != 1 && (oi != ch || t->dims[i] != o->dims[ch]))
            return -1;
    }
    return npu_value_numel(b) == o->dims[ch] ? o->dims[ch] : -1;
}

static bool
fuse_bias_add(struct npu_graph *g, struct npu_node *add, enum npu_status *st)
{
    for (int side = 0; side < 2; side++) {
        struct npu_value *y = add->in[side], *b = add->in[1 - side];
        struct npu_node *p = producer_op(y, NPU_OP_NONE);
        if (!p || !single_use(y) || !b || b->kind != NPU_VALUE_CONST || npu_node_attr(p, "npu_act"))
            continue;
        if (p->op != NPU_OP_CONV && p->op != NPU_OP_GEMM && p->op != NPU_OP_MATMUL)
            continue;
        if (!npu_dtype_is_float(y->t.dtype))
            continue;
        int64_t ch = bias_channels(p, y, b);
        if (ch < 0 || add->out[0]->t.ndim != y->t.ndim ||
            memcmp(add->out[0]->t.dims, y->t.dims, sizeof(int64_t) * (size_t)y->t.ndim))
            continue;
        int bi = 2; /* Conv's B, Gemm's C, MatMul's fused bias */
        struct npu_value *old = npu_node_in(p, bi);
        if (p->op == NPU_OP_GEMM && old)
            continue; /* Gemm with C already: leave it */
        if (old && (old->kind != NPU_VALUE_CONST || npu_value_numel(old) != ch))
            continue;
        struct npu_tensor t = {.dtype = y->t.dtype, .ndim = 1, .dims = {ch}};
        if (p->op == NPU_OP_GEMM) {
            float beta = npu_node_float(p, "beta", 1.0f);
            if (beta != 1.0f)
                continue;
        }
        t.data = npu_graph_alloc(g, (size_t)npu_tensor_nbytes(&t));
        if (!t.data) {
            *st = NPU_ERR_NOMEM;
            return false;
        }
        for (int64_t i = 0; i < ch; i++)
            ir_store_f64(t.dtype, t.data, i,
                         npu_value_get_f64(b, i) + (old ? npu_value_get_f64(old, i) : 0.0));
        struct npu_value *nb = npu_graph_add_const_owned(g, b->name, &t);
        struct npu_value *ins[16];
        int nin = NPU_MAX(p->nin, bi + 1);
        if (!nb || nin > 16) {
            *st = nb ? NPU_OK : NPU_ERR_NOMEM;
            return false;
        }
        for (int i = 0; i < nin; i++)
            ins[i] = i < p->nin ? p->in[i] : NULL;
        ins[bi] = nb;
        struct npu_node *n = npu_node_new(g, p->op, p->name, ins, nin, 1, NULL);
        if (!n) {
            *st = NPU_ERR_NOMEM;
            return false;
        }
        for (int i = 0; i < p->nattr; i++)
            if ((*st = npu_node_set_attr(g, n, &p->attr[i])))
                return false;
        struct npu_node *mt[2] = {p, add};
        pass_replace(g, n, add, add->out[0], mt, 2);
        return true;
    }
    return false;
}

/* The npu_act names (docs/ir.md; the CPU kernels read the same names). */
const char *
pass_act_name(enum npu_op op)
{
    switch (op) {
    case NPU_OP_RELU: return "relu";
    case NPU_OP_LEAKY_RELU: return "leaky_relu";
    case NPU_OP_CLIP: return "clip";
    case NPU_OP_SIGMOID: return "sigmoid";
    case NPU_OP_TANH: return "tanh";
    case NPU_OP_GELU: return "gelu";
    case NPU_OP_FUSED_GELU_TANH: return "gelu_tanh";
    case NPU_OP_FUSED_SILU: return "silu";
    case NPU_OP_HARD_SWISH: return "hard_swish";
    case NPU_OP_HARD_SIGMOID: return "hard_sigmoid";
    default: return NULL;
    }
}

/* Activation -> (npu_act name, alpha, beta); false if not fusable. */
static bool
act_params(struct npu_node *a, float *alpha, float *beta)
{
    *alpha = 0;
    *beta = 0;
    switch (a->op) {
    case NPU_OP_RELU:
    case NPU_OP_SIGMOID:
    case NPU_OP_TANH:
    case NPU_OP_FUSED_SILU:
    case NPU_OP_FUSED_GELU_TANH:
    case NPU_OP_HARD_SWISH: return a->nin == 1;
    case NPU_OP_GELU: return strcmp(npu_node_string(a, "approximate", "none"), "none") == 0;
    case NPU_OP_LEAKY_RELU: *alpha = npu_node_float(a, "alpha", 0.01f); return true;
    case NPU_OP_HARD_SIGMOID:
        *alpha = npu_node_float(a, "alpha", 0.2f);
        *beta = npu_node_float(a, "beta", 0.5f);
        return true;
    case NPU_OP_CLIP: {
        struct npu_value *lo = npu_node_in(a, 1), *hi = npu_node_in(a, 2);
        if ((lo && !is_const_scalar(lo)) || (hi && !is_const_scalar(hi)))
            return false;
        *alpha = lo ? (float)npu_value_get_f64(lo, 0) : -INFINITY;
        *beta = hi ? (float)npu_value_get_f64(hi, 0) : INFINITY;
        return true;
    }
    default: return false;
    }
}

static bool
fuse_act(struct npu_graph *g, struct npu_node *a, enum npu_status *st)
{
    struct npu_value *y = a->in[0];
    struct npu_node *p = producer_op(y, NPU_OP_NONE);
    if (!p || !single_use(y) || p->nout != 1)
        return false;
    /* Relu then Clip(lo >= 0, hi) is Clip(lo, hi) (torch's relu6 export). */
    const char *prev = npu_node_string(p, "npu_act", NULL);
    float alpha, beta;
    if (prev && !(a->op == NPU_OP_CLIP && !strcmp(prev, "relu") && act_params(a, &alpha, &beta) &&
                  alpha >= 0))
        return false;
    if (p->op != NPU_OP_CONV && p->op != NPU_OP_GEMM && p->op != NPU_OP_MATMUL)
        return false;
    if (!npu_dtype_is_float(y->t.dtype))
        return false;
    if (!act_params(a, &alpha, &beta))
        return false;
    struct npu_node *n = npu_node_new(g, p->op, p->name, p->in, p->nin, 1, NULL);
    if (!n) {
        *st = NPU_ERR_NOMEM;
        return false;
    }
    for (int i = 0; i < p->nattr; i++)
        if ((*st = npu_node_set_attr(g, n, &p->attr[i])))
            return false;
    if ((*st = npu_node_set_string(g, n, "npu_act", pass_act_name(a->op))))
        return false;
    if (a->op == NPU_OP_LEAKY_RELU || a->op == NPU_OP_HARD_SIGMOID || a->op == NPU_OP_CLIP)
        if ((*st = npu_node_set_float(g, n, "npu_act_alpha", alpha)))
            return false;
    if (a->op == NPU_OP_HARD_SIGMOID || a->op == NPU_OP_CLIP)
        if ((*st = npu_node_set_float(g, n, "npu_act_beta", beta)))
            return false;
    struct npu_node *mt[2] = {p, a};
    pass_replace(g, n, a, a->out[0], mt, 2);
    return true;
}

static enum npu_status
walk(struct npu_graph *g, bool (*match)(enum npu_op),
     bool (*fn)(struct npu_graph *, struct npu_node *, enum npu_status *))
{
    if (npu_graph_update_uses(g))
        return NPU_ERR_NOMEM;
    enum npu_status st = NPU_OK;
    for (struct npu_node *n = g->head, *next; n; n = next) {
        next = n->next;
        if (match(n->op) && n->nin >= 1 && n->in[0] && fn(g, n, &st))
            next = g->head;
        if (st)
            return st;
    }
    return NPU_OK;
}

static bool
is_bn(enum npu_op op)
{
    return op == NPU_OP_BATCH_NORMALIZATION;
}

static bool
is_add(enum npu_op op)
{
    return op == NPU_OP_ADD;
}

static bool
is_act(enum npu_op op)
{
    switch (op) {
    case NPU_OP_RELU:
    case NPU_OP_SIGMOID:
    case NPU_OP_TANH:
    case NPU_OP_FUSED_SILU:
    case NPU_OP_FUSED_GELU_TANH:
    case NPU_OP_GELU:
    case NPU_OP_LEAKY_RELU:
    case NPU_OP_HARD_SIGMOID:
    case NPU_OP_HARD_SWISH:
    case NPU_OP_CLIP: return true;
    default: return false;
    }
}

enum npu_status
npu_pass_fold_conv_bn(struct npu_graph *g)
{
    return walk(g, is_bn, fold_bn);
}

enum npu_status
npu_pass_fuse_bias(struct npu_graph *g)
{
    return walk(g, is_add, fuse_bias_add);
}

enum npu_status
npu_pass_fuse_activation(struct npu_graph *g)
{
    return walk(g, is_act, fuse_act);
}
