/* SPDX-License-Identifier: MIT */
/*
 * npu-pass-attention.c: scaled-dot-product attention fusion.
 *
 *   s = MatMul(Q, Kt)              Kt = Transpose(K, swap of the last two dims)
 *                                  or any [.., D, Sk] tensor
 *   s = Div(s, c) | Mul(s, c)      optional, c a scalar constant
 *   s = Add(s, mask)               optional, mask broadcast to s (either order)
 *   p = Softmax(s, axis = last)
 *   y = MatMul(p, V)
 *   -> y = npu.Attention(Q, K, V[, mask]) {scale}
 *
 * npu.Attention takes K as [.., Sk, D] (docs/ir.md); when the pattern's Kt is
 * not a Transpose of the last two dims, a Transpose is inserted to make K.
 * Every intermediate must have this pattern as its only user.
 */
#include "passes-priv.h"

static bool
swaps_last_two(const struct npu_node *t)
{
    size_t cnt;
    const int64_t *perm = npu_node_ints(t, "perm", &cnt);
    int r = t->in[0]->t.ndim;
    if (r < 2)
        return false;
    if (!perm)
        return r == 2;
    if ((int)cnt != r)
        return false;
    for (int i = 0; i < r - 2; i++)
        if (perm[i] != i)
            return false;
    return perm[r - 2] == r - 1 && perm[r - 1] == r - 2;
}

static bool
try_fuse(struct npu_graph *g, struct npu_node *sm, enum npu_status *st)
{
    struct npu_node *m[8];
    int nm = 0;
    struct npu_value *s = sm->in[0];
    int r = s->t.ndim;
    if (r < 2 || !npu_dtype_is_float(s->t.dtype))
        return false;
    int64_t axis = npu_node_int(sm, "axis", -1);
    if (axis != -1 && axis != r - 1)
        return false;
    struct npu_node *mm2 = sole_user(sm->out[0], NPU_OP_MATMUL);
    if (!mm2 || mm2->in[0] != sm->out[0] || mm2->nin != 2)
        return false;
    struct npu_value *v = mm2->in[1];
    struct npu_value *mask = NULL;
    struct npu_node *p = producer_op(s, NPU_OP_ADD);
    if (p && single_use(s)) {
        /* which operand is the scores? the one coming from the scale or MatMul */
        for (int i = 0; i < 2; i++) {
            struct npu_node *q = producer_op(p->in[i], NPU_OP_NONE);
            if (q && (q->op == NPU_OP_MATMUL || q->op == NPU_OP_DIV || q->op == NPU_OP_MUL) &&
                single_use(p->in[i])) {
                mask = p->in[1 - i];
                s = p->in[i];
                break;
            }
        }
        if (!mask || mask->t.dtype != s->t.dtype)
            return false;
        /* the mask must not enlarge the scores */
        struct npu_tensor o;
        if (!ir_broadcast(&s->t, &mask->t, &o) || o.ndim != s->t.ndim ||
            memcmp(o.dims, s->t.dims, sizeof(int64_t) * (size_t)o.ndim))
            return false;
        m[nm++] = p;
    }
    double scale = 1.0;
    p = producer_op(s, NPU_OP_NONE);
    if (p && single_use(s) && (p->op == NPU_OP_DIV || p->op == NPU_OP_MUL)) {
        struct npu_value *c = p->in[1], *a = p->in[0];
        if (p->op == NPU_OP_MUL && is_const_scalar(p->in[0]) && !is_const_scalar(p->in[1])) {
            c = p->in[0];
            a = p->in[1];
        }
        if (!is_const_scalar(c))
            return false;
        double cv = npu_value_get_f64(c, 0);
        if (!(cv > 0) || !isfinite(cv))
            return false;
        scale = p->op == NPU_OP_DIV ? 1.0 / cv : cv;
        m[nm++] = p;
        s = a;
    }
    struct npu_node *mm1 = producer_op(s, NPU_OP_MATMUL);
    if (!mm1 || !single_use(s) || mm1->nin != 2)
        return false;
    m[nm++] = mm1;
    struct npu_value *q = mm1->in[0], *kt = mm1->in[1], *k = NULL;
    if (q->t.ndim < 2 || kt->t.ndim < 2 || v->t.ndim < 2)
        return false;
    struct npu_node *tr = producer_op(kt, NPU_OP_TRANSPOSE);
    if (tr && single_use(kt) && swaps_last_two(tr)) {
        k = tr->in[0];
        m[nm++] = tr;
    }
    m[nm++] = sm;
    m[nm++] = mm2;
    if (!k) {
        /* K given already transposed: make [.., Sk, D] explicitly */
        int kr = kt->t.ndim;
        int64_t perm[NPU_MAX_DIMS];
        for (int i = 0; i < kr; i++)
            perm[i] = i;
        perm[kr - 2] = kr - 1;
        perm[kr - 1] = kr - 2;
        struct npu_node *t = npu_node_new(g, NPU_OP_TRANSPOSE, "attn_k", &kt, 1, 1, NULL);
        if (!t || npu_node_set_ints(g, t, "perm", perm, (size_t)kr)) {
            *st = NPU_ERR_NOMEM;
            return false;
        }
        npu_graph_insert_before(g, mm1, t);
        if ((*st = npu_infer_node(g, t)))
            return false;
        k = t->out[0];
    }
    struct npu_value *ins[4] = {q, k, v, mask};
    struct npu_node *n =
        npu_node_new(g, NPU_OP_FUSED_ATTENTION, mm2->name, ins, mask ? 4 : 3, 1, NULL);
    if (!n || npu_node_set_float(g, n, "scale", (float)scale)) {
        *st = NPU_ERR_NOMEM;
        return false;
    }
    /* The fused node must type-check like the pattern did. */
    struct npu_value *y = mm2->out[0];
    if (npu_infer_node(g, n) || n->out[0]->t.ndim != y->t.ndim ||
        memcmp(n->out[0]->t.dims, y->t.dims, sizeof(int64_t) * (size_t)y->t.ndim)) {
        return false;
    }
    pass_replace(g, n, mm2, y, m, nm);
    return true;
}

enum npu_status
npu_pass_fuse_attention(struct npu_graph *g)
{
    if (npu_graph_update_uses(g))
        return NPU_ERR_NOMEM;
    enum npu_status st = NPU_OK;
    for (struct npu_node *n = g->head, *next; n; n = next) {
        next = n->next;
        if (n->op != NPU_OP_SOFTMAX || !n->in[0])
            continue; /* the graph is unchanged: the uses are still current */
        if (try_fuse(g, n, &st))
            next = g->head;
        if (st)
            return st;
        npu_graph_update_uses(g);
    }
    return NPU_OK;
}
