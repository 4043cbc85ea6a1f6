/* SPDX-License-Identifier: MIT */
/*
 * npu-pass-layernorm.c: LayerNorm fusion. Exporters before opset 17 (and
 * torch at any opset below 17) write nn.LayerNorm as
 *
 *   m = ReduceMean(x, axes=tail, keepdims=1); d = Sub(x, m)
 *   v = ReduceMean(Pow(d, 2) | Mul(d, d), same axes, keepdims=1)
 *   y = Div(d, Sqrt(Add(v, eps)))      or   Mul(d, Reciprocal(Sqrt(Add(v, eps))))
 *   [y = Mul(y, gamma)] [y = Add(y, beta)]
 *
 * Everything is checked exactly: the reduced axes must be the trailing ones
 * (both ReduceMeans the same), the exponent 2, eps a scalar constant, gamma
 * and beta constants of the normalised shape, each intermediate used once.
 */
#include <stdlib.h>

#include "passes-priv.h"

/* gamma/beta must cover exactly the normalised dims (leading 1s allowed). */
static bool
affine_ok(const struct npu_value *c, const struct npu_value *x, int axis)
{
    if (!c || c->kind != NPU_VALUE_CONST || c->t.dtype != x->t.dtype)
        return false;
    if (c->t.ndim > x->t.ndim)
        return false;
    for (int i = 0; i < c->t.ndim; i++) {
        int xi = x->t.ndim - c->t.ndim + i;
        int64_t want = xi >= axis ? x->t.dims[xi] : 1;
        if (c->t.dims[i] != want)
            return false;
    }
    int64_t n = 1;
    for (int i = axis; i < x->t.ndim; i++)
        n *= x->t.dims[i];
    return npu_value_numel(c) == n;
}

static enum npu_status
try_fuse(struct npu_graph *g, struct npu_node *mean1, bool *fused)
{
    struct npu_node *m[12];
    int nm = 0;
    struct npu_value *x = mean1->in[0];
    if (!x || !npu_dtype_is_float(x->t.dtype) || npu_node_int(mean1, "keepdims", 1) != 1)
        return NPU_OK;
    int r = x->t.ndim;
    int64_t ax1[NPU_MAX_DIMS], ax2[NPU_MAX_DIMS];
    int na = pass_reduce_axes(mean1, r, ax1);
    if (na < 1)
        return NPU_OK;
    for (int i = 0; i < na; i++) /* trailing and contiguous */
        if (ax1[i] != r - na + i)
            return NPU_OK;
    int axis = r - na;
    m[nm++] = mean1;
    struct npu_node *sub = sole_user(mean1->out[0], NPU_OP_SUB);
    if (!sub || sub->in[0] != x || sub->in[1] != mean1->out[0])
        return NPU_OK;
    m[nm++] = sub;
    struct npu_value *d = sub->out[0];
    /* d feeds the square and the final division (Mul(d, d) counts twice). */
    struct npu_node *sq = NULL, *div = NULL;
    if (d->is_output || d->nusers < 2 || d->nusers > 3)
        return NPU_OK;
    for (int i = 0; i < d->nusers; i++) {
        struct npu_node *u = d->users[i];
        if ((u->op == NPU_OP_POW || (u->op == NPU_OP_MUL && u->in[0] == d && u->in[1] == d)) &&
            (!sq || sq == u))
            sq = u;
        else if ((u->op == NPU_OP_DIV || u->op == NPU_OP_MUL) && !div)
            div = u;
        else
            return NPU_OK;
    }
    if (!sq || !div || d->nusers != (sq->op == NPU_OP_MUL ? 3 : 2))
        return NPU_OK;
    if (sq->op == NPU_OP_POW && (sq->in[0] != d || !is_const_val(sq->in[1], 2.0)))
        return NPU_OK;
    m[nm++] = sq;
    struct npu_node *mean2 = sole_user(sq->out[0], NPU_OP_REDUCE_MEAN);
    if (!mean2 || npu_node_int(mean2, "keepdims", 1) != 1 ||
        pass_reduce_axes(mean2, r, ax2) != na || memcmp(ax1, ax2, sizeof(int64_t) * (size_t)na))
        return NPU_OK;
    m[nm++] = mean2;
    struct npu_node *add = sole_user(mean2->out[0], NPU_OP_ADD);
    struct npu_value *eps = add ? other_operand(add, mean2->out[0]) : NULL;
    if (!eps || !is_const_scalar(eps) || !npu_dtype_is_float(eps->t.dtype))
        return NPU_OK;
    double epsv = npu_value_get_f64(eps, 0);
    if (!(epsv >= 0 && epsv < 1))
        return NPU_OK;
    m[nm++] = add;
    struct npu_node *sqrt_ = sole_user(add->out[0], NPU_OP_SQRT);
    if (!sqrt_)
        return NPU_OK;
    m[nm++] = sqrt_;
    struct npu_value *denom = sqrt_->out[0];
    if (div->op == NPU_OP_MUL) { /* d * Reciprocal(sqrt) */
        struct npu_node *rc = sole_user(denom, NPU_OP_RECIPROCAL);
        if (!rc || other_operand(div, d) != rc->out[0])
            return NPU_OK;
        m[nm++] = rc;
    } else if (div->in[0] != d || div->in[1] != denom || !single_use(denom)) {
        return NPU_OK;
    }
    m[nm++] = div;
    struct npu_value *y = div->out[0], *gamma = NULL, *beta = NULL;
    struct npu_node *last = div;
    struct npu_node *mul = sole_user(y, NPU_OP_MUL);
    if (mul && affine_ok(other_operand(mul, y), x, axis)) {
        gamma = other_operand(mul, y);
        m[nm++] = mul;
        y = mul->out[0];
        last = mul;
        struct npu_node *badd = sole_user(y, NPU_OP_ADD);
        if (badd && affine_ok(other_operand(badd, y), x, axis)) {
            beta = other_operand(badd, y);
            m[nm++] = badd;
            y = badd->out[0];
            last = badd;
        }
    }
    /* Build LayerNormalization(x, scale, bias) with scale/bias of the
     * normalised shape. */
    int64_t nd[NPU_MAX_DIMS];
    for (int i = axis; i < r; i++)
        nd[i - axis] = x->t.dims[i];
    struct npu_value *scale;
    if (gamma) {
        scale = pass_const_reshaped(g, gamma, na, nd);
    } else {
        struct npu_tensor t = x->t;
        t.ndim = na;
        memcpy(t.dims, nd, sizeof(int64_t) * (size_t)na);
        int64_t cnt = npu_tensor_numel(&t);
        t.data = npu_graph_alloc(g, (size_t)npu_tensor_nbytes(&t));
        if (!t.data)
            return NPU_ERR_NOMEM;
        for (int64_t i = 0; i < cnt; i++)
            ir_store_f64(t.dtype, t.data, i, 1.0);
        scale = npu_graph_add_const_owned(g, "ln_scale", &t);
    }
    struct npu_value *bias = beta ? pass_const_reshaped(g, beta, na, nd) : NULL;
    if (!scale || (beta && !bias))
        return NPU_ERR_NOMEM;
    struct npu_value *ins[3] = {x, scale, bias};
    struct npu_node *ln =
        npu_node_new(g, NPU_OP_LAYER_NORMALIZATION, last->name, ins, bias ? 3 : 2, 1, NULL);
    if (!ln || npu_node_set_int(g, ln, "axis", axis) ||
        npu_node_set_float(g, ln, "epsilon", (float)epsv))
        return NPU_ERR_NOMEM;
    pass_replace(g, ln, last, y, m, nm);
    *fused = true;
    return NPU_OK;
}

enum npu_status
npu_pass_fuse_layernorm(struct npu_graph *g)
{
    if (npu_graph_update_uses(g))
        return NPU_ERR_NOMEM;
    for (struct npu_node *n = g->head, *next; n; n = next) {
        next = n->next;
        if (n->op != NPU_OP_REDUCE_MEAN)
            continue;
        bool fused = false;
        enum npu_status st = try_fuse(g, n, &fused);
        if (st)
            return st;
        if (fused) {
            /* the walk restarts: `next` may have been removed */
            next = g->head;
        }
    }
    return NPU_OK;
}
