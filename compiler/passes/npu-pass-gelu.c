/* SPDX-License-Identifier: MIT */
/*
 * npu-pass-gelu.c: activation fusions.
 *
 * GELU, erf form (torch F.gelu, BERT):   x * 0.5 * (1 + Erf(x / sqrt(2)))
 *   (x / 1.41421356 may also be x * 0.70710678) -> Gelu(x)
 * GELU, tanh form (GPT-2 "gelu_new", F.gelu(approximate='tanh')):
 *   0.5 * x * (1 + Tanh(0.79788456 * (x + 0.044715 * x^3)))  -> npu.GeluTanh(x)
 *   (x^3 as Pow(x, 3), Mul(x, Mul(x, x)) or Mul(Mul(x, x), x))
 * SiLU / Swish:  x * Sigmoid(x) -> npu.SiLU(x)
 * Hard swish:    x * HardSigmoid(x; alpha 1/6, beta 0.5) -> HardSwish(x) (torch's
 *   export below opset 14, MobileNetV3); fuse_activation then folds it into
 *   the Conv before it, whose epilogue applies it (the NPU's DPU and the CPU
 *   kernels both have hard_swish).
 *
 * The final "x * 0.5 * (...)" may be associated any way exporters write it:
 * Mul(Mul(x, t), 0.5), Mul(Mul(t, 0.5), x) or Mul(Mul(x, 0.5), t). Every
 * constant is compared with the mathematical value within the precision it is
 * stored in; anything else (another constant, another x) does not fuse.
 */
#include <math.h>

#include "passes-priv.h"

/* Matches the product x * t * 0.5 starting from t (the "1 + erf/tanh" value).
 * Appends matched nodes to m and returns the node computing the product. */
static struct npu_node *
match_half_x(struct npu_value *t, struct npu_value *x, struct npu_node **m, int *nm)
{
    struct npu_node *m1 = sole_user(t, NPU_OP_MUL);
    if (!m1)
        return NULL;
    struct npu_value *o = other_operand(m1, t);
    if (!o)
        return NULL;
    if (o == x || is_const_val(o, 0.5)) {
        struct npu_node *m2 = sole_user(m1->out[0], NPU_OP_MUL);
        struct npu_value *o2 = m2 ? other_operand(m2, m1->out[0]) : NULL;
        if (!o2 || (o == x ? !is_const_val(o2, 0.5) : o2 != x))
            return NULL;
        m[(*nm)++] = m1;
        m[(*nm)++] = m2;
        return m2;
    }
    struct npu_node *hx = producer_op(o, NPU_OP_MUL);
    if (!hx || !single_use(o))
        return NULL;
    struct npu_value *h = other_operand(hx, x);
    if (!h || !is_const_val(h, 0.5))
        return NULL;
    m[(*nm)++] = hx;
    m[(*nm)++] = m1;
    return m1;
}

/* 1 + t -> Add node (either operand order). */
static struct npu_node *
match_one_plus(struct npu_value *t)
{
    struct npu_node *a = sole_user(t, NPU_OP_ADD);
    return a && is_const_val(other_operand(a, t), 1.0) ? a : NULL;
}

/* The tail both GELU forms share: core (Erf or Tanh) is followed by 1 + core, then by
 * 0.5 * x * that, of x's shape. Replaces the matched nodes m[0..nm) and the tail by one node
 * op(x); m must have room for the tail's nodes. */
static bool
fuse_tail(struct npu_graph *g, struct npu_node *core, struct npu_value *x, enum npu_op op,
          struct npu_node **m, int nm, enum npu_status *st)
{
    struct npu_node *add = match_one_plus(core->out[0]);
    if (!add)
        return false;
    m[nm++] = add;
    struct npu_node *last = match_half_x(add->out[0], x, m, &nm);
    if (!last || last->out[0]->t.ndim != x->t.ndim ||
        memcmp(last->out[0]->t.dims, x->t.dims, sizeof(int64_t) * (size_t)x->t.ndim))
        return false;
    struct npu_node *n = npu_node_new(g, op, last->name, &x, 1, 1, NULL);
    if (!n) {
        *st = NPU_ERR_NOMEM;
        return false;
    }
    pass_replace(g, n, last, last->out[0], m, nm);
    return true;
}

static bool
fuse_erf(struct npu_graph *g, struct npu_node *erf, enum npu_status *st)
{
    struct npu_node *m[8];
    int nm = 0;
    struct npu_value *a = erf->in[0];
    struct npu_node *sc = producer_op(a, NPU_OP_NONE);
    if (!sc || !single_use(a) || sc->nin != 2)
        return false;
    struct npu_value *x = sc->in[0];
    if (sc->op == NPU_OP_DIV) {
        if (!is_const_val(sc->in[1], sqrt(2.0)))
            return false;
    } else if (sc->op == NPU_OP_MUL) {
        x = NULL;
        for (int i = 0; i < 2; i++)
            if (is_const_val(sc->in[1 - i], sqrt(0.5)))
                x = sc->in[i];
        if (!x)
            return false;
    } else {
        return false;
    }
    if (!npu_dtype_is_float(x->t.dtype))
        return false;
    m[nm++] = sc;
    m[nm++] = erf;
    return fuse_tail(g, erf, x, NPU_OP_GELU, m, nm, st);
}

/* x^3 written as Pow(x, 3) or two Muls; returns x and appends nodes. */
static struct npu_value *
match_cube(struct npu_value *c, struct npu_node **m, int *nm)
{
    struct npu_node *p = producer_op(c, NPU_OP_NONE);
    if (!p || !single_use(c))
        return NULL;
    if (p->op == NPU_OP_POW && is_const_val(p->in[1], 3.0)) {
        m[(*nm)++] = p;
        return p->in[0];
    }
    if (p->op != NPU_OP_MUL)
        return NULL;
    for (int i = 0; i < 2; i++) {
        struct npu_value *x = p->in[i], *sq = p->in[1 - i];
        struct npu_node *q = producer_op(sq, NPU_OP_MUL);
        if (q && single_use(sq) && q->in[0] == x && q->in[1] == x) {
            m[(*nm)++] = q;
            m[(*nm)++] = p;
            return x;
        }
    }
    return NULL;
}

static bool
fuse_tanh(struct npu_graph *g, struct npu_node *th, enum npu_status *st)
{
    struct npu_node *m[12];
    int nm = 0;
    struct npu_value *a = th->in[0];
    struct npu_node *sc = producer_op(a, NPU_OP_MUL);
    if (!sc || !single_use(a))
        return false;
    struct npu_value *inner = NULL;
    for (int i = 0; i < 2; i++)
        if (is_const_val(sc->in[1 - i], sqrt(2.0 / M_PI)))
            inner = sc->in[i];
    struct npu_node *ad = producer_op(inner, NPU_OP_ADD);
    if (!ad || !single_use(inner))
        return false;
    /* inner = x + 0.044715 * x^3 */
    struct npu_value *x = NULL;
    for (int i = 0; i < 2 && !x; i++) {
        struct npu_value *cand = ad->in[i], *term = ad->in[1 - i];
        struct npu_node *k = producer_op(term, NPU_OP_MUL);
        if (!k || !single_use(term))
            continue;
        for (int j = 0; j < 2; j++) {
            if (!is_const_val(k->in[1 - j], 0.044715))
                continue;
            int save = nm;
            struct npu_value *cx = match_cube(k->in[j], m, &nm);
            if (cx == cand) {
                m[nm++] = k;
                x = cand;
                break;
            }
            nm = save;
        }
    }
    if (!x || !npu_dtype_is_float(x->t.dtype))
        return false;
    m[nm++] = ad;
    m[nm++] = sc;
    m[nm++] = th;
    return fuse_tail(g, th, x, NPU_OP_FUSED_GELU_TANH, m, nm, st);
}

static bool
fuse_silu(struct npu_graph *g, struct npu_node *sg, enum npu_status *st)
{
    struct npu_value *x = sg->in[0];
    struct npu_node *mul = sole_user(sg->out[0], NPU_OP_MUL);
    if (!mul || other_operand(mul, sg->out[0]) != x)
        return false;
    struct npu_node *n = npu_node_new(g, NPU_OP_FUSED_SILU, mul->name, &x, 1, 1, NULL);
    if (!n) {
        *st = NPU_ERR_NOMEM;
        return false;
    }
    struct npu_node *m[2] = {sg, mul};
    pass_replace(g, n, mul, mul->out[0], m, 2);
    return true;
}

static bool
fuse_hard_swish(struct npu_graph *g, struct npu_node *hs, enum npu_status *st)
{
    struct npu_value *x = hs->in[0];
    /* alpha as torch stores 1/6 in a float attribute; beta exactly 0.5 */
    float alpha = npu_node_float(hs, "alpha", 0.2f), beta = npu_node_float(hs, "beta", 0.5f);
    if (hs->nin != 1 || fabsf(alpha - 1.0f / 6.0f) > 1e-7f || beta != 0.5f)
        return false;
    struct npu_node *mul = sole_user(hs->out[0], NPU_OP_MUL);
    if (!mul || other_operand(mul, hs->out[0]) != x || !npu_dtype_is_float(x->t.dtype))
        return false;
    struct npu_node *n = npu_node_new(g, NPU_OP_HARD_SWISH, mul->name, &x, 1, 1, NULL);
    if (!n) {
        *st = NPU_ERR_NOMEM;
        return false;
    }
    struct npu_node *m[2] = {hs, mul};
    pass_replace(g, n, mul, mul->out[0], m, 2);
    return true;
}

static enum npu_status
walk(struct npu_graph *g, enum npu_op anchor,
     bool (*fn)(struct npu_graph *, struct npu_node *, enum npu_status *))
{
    if (npu_graph_update_uses(g))
        return NPU_ERR_NOMEM;
    enum npu_status st = NPU_OK;
    for (struct npu_node *n = g->head, *next; n; n = next) {
        next = n->next;
        if (n->op == anchor && n->nin >= 1 && n->in[0] && fn(g, n, &st))
            next = g->head;
        if (st)
            return st;
    }
    return NPU_OK;
}

enum npu_status
npu_pass_fuse_gelu(struct npu_graph *g)
{
    enum npu_status st = walk(g, NPU_OP_ERF, fuse_erf);
    return st ? st : walk(g, NPU_OP_TANH, fuse_tanh);
}

enum npu_status
npu_pass_fuse_silu(struct npu_graph *g)
{
    enum npu_status st = walk(g, NPU_OP_SIGMOID, fuse_silu);
    return st ? st : walk(g, NPU_OP_HARD_SIGMOID, fuse_hard_swish);
}
