/* SPDX-License-Identifier: MIT */
/*
 * conv-fuse.c: what a conv's DPU stages take over from the ops after it: an activation
 * through a LUT (conv_lut_of_act), a residual Add whose other operand ERDMA reads
 * (conv_residual_add while lowering; conv_residual_reader and npu_conv_residual_likely
 * predict it for cost(), before partitioning), and, for an activation the stages cannot
 * apply, its split into a node of its own (conv_split_act).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "conv-priv.h"

extern int npu_dpu_gelu_two_pass; /* dpu-unary.c: x * f(x) activations as two passes */

/* Splits a non-fusable activation off into its own node after n: n now
 * defines a fresh value, the activation node the original output. */
enum npu_status
conv_split_act(struct npu_lower_ctx *cx, struct npu_node *n, const struct conv_src *s)
{
    struct npu_graph *g = cx->g;
    const char *a = s->act_name;
    enum npu_op op;
    if (!strcmp(a, "relu"))
        op = NPU_OP_RELU;
    else if (!strcmp(a, "leaky_relu"))
        op = NPU_OP_LEAKY_RELU;
    else if (!strcmp(a, "clip"))
        op = NPU_OP_CLIP;
    else if (!strcmp(a, "sigmoid"))
        op = NPU_OP_SIGMOID;
    else if (!strcmp(a, "tanh"))
        op = NPU_OP_TANH;
    else if (!strcmp(a, "gelu"))
        op = NPU_OP_GELU;
    else if (!strcmp(a, "gelu_tanh"))
        op = NPU_OP_FUSED_GELU_TANH;
    else if (!strcmp(a, "silu"))
        op = NPU_OP_FUSED_SILU;
    else if (!strcmp(a, "hard_swish"))
        op = NPU_OP_HARD_SWISH;
    else if (!strcmp(a, "hard_sigmoid"))
        op = NPU_OP_HARD_SIGMOID;
    else
        return npu_lower_refuse(n, "unknown npu_act '%s'", a);
    struct npu_value *y = n->out[0];
    struct npu_value *pre = npu_value_new(g, y->name);
    if (!pre)
        return NPU_ERR_NOMEM;
    pre->t = y->t;
    pre->t.data = NULL;
    struct npu_value *in[3] = {pre, NULL, NULL};
    int nin = 1;
    if (op == NPU_OP_CLIP) {
        float lo = s->act_alpha, hi = s->act_beta;
        char nm[96];
        snprintf(nm, sizeof(nm), "%.80s.min", y->name);
        in[1] = isinf(lo) && lo < 0 ? NULL : npu_graph_const_f32(g, nm, &lo, 1, true);
        snprintf(nm, sizeof(nm), "%.80s.max", y->name);
        in[2] = isinf(hi) && hi > 0 ? NULL : npu_graph_const_f32(g, nm, &hi, 1, true);
        nin = 3;
        if (y->t.dtype != NPU_DTYPE_FP32) {
            /* Clip bounds share the input dtype; keep fp32 models only */
            return npu_lower_refuse(n, "clip on %s", npu_dtype_name(y->t.dtype));
        }
    }
    struct npu_node *act = npu_node_new_v(g, op, n->name, in, nin, &y, 1);
    if (!act)
        return NPU_ERR_NOMEM;
    if (op == NPU_OP_LEAKY_RELU && npu_node_set_float(g, act, "alpha", s->act_alpha))
        return NPU_ERR_NOMEM;
    if (op == NPU_OP_HARD_SIGMOID && (npu_node_set_float(g, act, "alpha", s->act_alpha) ||
                                      npu_node_set_float(g, act, "beta", s->act_beta)))
        return NPU_ERR_NOMEM;
    /* insert after n */
    npu_graph_insert_before(g, n->next, act);
    n->out[0] = pre;
    pre->kind = NPU_VALUE_NODE;
    pre->producer = n;
    pre->producer_idx = 0;
    npu_node_del_attr(n, "npu_act");
    npu_node_del_attr(n, "npu_act_alpha");
    npu_node_del_attr(n, "npu_act_beta");
    act->device = NPU_DEVICE_ANY;
    return npu_infer_node(g, act);
}

/* The DPU LUT table that applies activation `a` in one lookup (0: none). x * f(x)
 * functions use their one-table form unless the DPU lowerings are set to two passes. */
uint32_t
conv_lut_of_act(const char *a)
{
    enum npu_dpu_fn fn;
    if (!a)
        return 0;
    if (!strcmp(a, "sigmoid"))
        fn = NPU_DPU_FN_SIGMOID;
    else if (!strcmp(a, "tanh"))
        fn = NPU_DPU_FN_TANH;
    else if (!strcmp(a, "gelu") && !npu_dpu_gelu_two_pass)
        fn = NPU_DPU_FN_GELU;
    else if (!strcmp(a, "gelu_tanh") && !npu_dpu_gelu_two_pass)
        fn = NPU_DPU_FN_GELU_TANH;
    else if (!strcmp(a, "silu") && !npu_dpu_gelu_two_pass)
        fn = NPU_DPU_FN_SILU;
    else
        return 0;
    const struct npu_dpu_lut *l = npu_dpu_lut_get(npu_dpu_lut_fn_id(fn));
    return l && l->in_offset == 0 ? l->id : 0;
}

/* Under layer_split, an Add whose other operand is another product's result stays an Add
 * of its own: folded, it would chain the two products (the second reading the first's
 * result), which the layer split could then not run side by side (GPT-2's c_proj in row
 * blocks, llm-graph.c). */
static bool
product_sum(const struct npu_backend_options *o, const struct npu_value *other)
{
    const struct npu_node *p = other ? other->producer : NULL;
    /* lowering: the operand may be a conversion's result (rk.ToHost of the product's) */
    if (p && p->op == NPU_OP_RK_TO_HOST && p->nin > 0 && p->in[0])
        p = p->in[0]->producer;
    return o && o->layer_split && p &&
           (p->op == NPU_OP_MATMUL || p->op == NPU_OP_GEMM || p->op == NPU_OP_QLINEAR_MATMUL ||
            p->op == NPU_OP_CONV || p->op == NPU_OP_RK_CONV); /* RK_CONV: lowered already */
}

/* A residual Add after n that n's DPU pass can do (EW add of a per-pixel operand): n's
 * result goes only to an Add on the NPU of the same shape, whose other operand is already
 * on the NPU in the result's view. Returns the Add and that operand's NPU value. */
struct npu_node *
conv_residual_add(struct npu_lower_ctx *cx, struct npu_node *n, const struct conv_src *s,
                  struct npu_value **res)
{
    /* an int8 product's DequantizeLinear folded into it: the residual joins its fp16 result */
    const struct npu_node *d = s->integer ? conv_deq_consumer(cx, n, s) : NULL;
    struct npu_value *y = d ? d->out[0] : n->out[0];
    /* (a fold that adds its lower bound in the EW stage has no operand left) */
    if (cx->o->no_ew_fusion || (s->integer && !d) || (d && conv_deq_lo_ew(s)) ||
        (!d && s->g.in_dt != NPU_DTYPE_FP16) || s->g.mtx || y->is_output || y->nusers != 1)
        return NULL;
    struct npu_node *a = y->users[0];
    if (a->op != NPU_OP_ADD || a->device != NPU_DEVICE_NPU || a->nin != 2 || a->nout != 1 ||
        !a->in[0] || !a->in[1] || (a->in[0] == y) == (a->in[1] == y) ||
        npu_node_int(a, "npu_dpu_done", 0))
        return NULL;
    struct npu_value *o = a->in[0] == y ? a->in[1] : a->in[0];
    if (product_sum(cx->o, o))
        return NULL;
    const struct npu_tensor *ot = &o->t, *at = &a->out[0]->t;
    if (ot->ndim != y->t.ndim || at->ndim != y->t.ndim || !npu_dtype_is_float(ot->dtype))
        return NULL;
    for (int i = 0; i < ot->ndim; i++)
        if (ot->dims[i] != y->t.dims[i] || at->dims[i] != y->t.dims[i])
            return NULL;
    struct npu_value *r = npu_lower_lookup(cx, o);
    /* a DPU lowering's view without tasks (rk.Dpu alias 1: the same bytes under another view) has
     * no bytes of its own: the EW operand reads its source's */
    while (r && r->producer && r->producer->op == NPU_OP_RK_DPU &&
           npu_node_int(r->producer, "alias", 0)) {
        if (npu_node_int(r->producer, "alias", 0) != 1 || r->producer->nin < 1)
            return NULL;
        r = r->producer->in[0];
    }
    uint32_t rv[3];
    if (!r || !npu_rk_view(r, rv) || rv[0] != s->out_view[0] || rv[1] != s->out_view[1] ||
        rv[2] != s->out_view[2] || strcmp(npu_rk_layout(r), "nc1hwc2") ||
        npu_rk_view_order(r) != npu_rk_order_of(&y->t, s->out_view) ||
        (r->t.dtype != NPU_DTYPE_FP16 && r->t.dtype != NPU_DTYPE_FP32))
        return NULL;
    *res = r;
    return a;
}

/* The reader of n's result when it is a residual Add that n's lowering will likely run in
 * its DPU (conv_residual_add() without the NPU values, which only exist while lowering): for
 * cost(), which runs before partitioning. */
const struct npu_node *
conv_residual_reader(const struct npu_node *n, const struct conv_src *s,
                     const struct npu_backend_options *o)
{
    const struct npu_node *d = s->integer ? conv_deq_reader(n, s, o) : NULL;
    if (d && d->device == NPU_DEVICE_CPU)
        return NULL;
    const struct npu_value *y = d ? d->out[0] : n->out[0];
    if (o->no_ew_fusion || (s->integer && !d) || (d && conv_deq_lo_ew(s)) ||
        (!d && s->g.in_dt != NPU_DTYPE_FP16) || s->g.mtx || y->is_output || y->nusers != 1 ||
        (s->act_name && conv_lut_of_act(s->act_name)))
        return NULL;
    const struct npu_node *a = y->users[0];
    if (a->op != NPU_OP_ADD || a->device == NPU_DEVICE_CPU || a->nin != 2 || a->nout != 1 ||
        !a->in[0] || !a->in[1] || (a->in[0] == y) == (a->in[1] == y))
        return NULL;
    const struct npu_value *ov = a->in[0] == y ? a->in[1] : a->in[0];
    if (product_sum(o, ov))
        return NULL;
    const struct npu_tensor *ot = &ov->t, *at = &a->out[0]->t;
    if (ov->kind != NPU_VALUE_NODE || !ov->producer || ot->ndim != y->t.ndim ||
        at->ndim != y->t.ndim || !npu_dtype_is_float(ot->dtype))
        return NULL;
    /* the lowering finds the other operand on the NPU only when its producer came first */
    const struct npu_node *q = n->prev;
    while (q && q != ov->producer)
        q = q->prev;
    if (!q || q->device == NPU_DEVICE_CPU)
        return NULL;
    for (int i = 0; i < ot->ndim; i++)
        if (ot->dims[i] != y->t.dims[i] || at->dims[i] != y->t.dims[i])
            return NULL;
    return a;
}

bool
npu_conv_residual_likely(const struct npu_graph *g, const struct npu_node *add,
                         const struct npu_backend_options *o)
{
    static const struct npu_backend_options defaults;
    if (!o)
        o = &defaults;
    if (add->op != NPU_OP_ADD || add->nin != 2)
        return false;
    for (int i = 0; i < 2; i++) {
        const struct npu_value *y = add->in[i];
        const struct npu_node *p = y && y->kind == NPU_VALUE_NODE ? y->producer : NULL;
        /* through a DequantizeLinear folded into its QLinear product */
        if (p && p->op == NPU_OP_DEQUANTIZE_LINEAR && p->nin > 0 && p->in[0] &&
            p->in[0]->kind == NPU_VALUE_NODE && p->in[0]->producer &&
            (p->in[0]->producer->op == NPU_OP_QLINEAR_MATMUL ||
             p->in[0]->producer->op == NPU_OP_QLINEAR_CONV))
            p = p->in[0]->producer;
        struct conv_src s;
        if (!p ||
            (p->op != NPU_OP_MATMUL && p->op != NPU_OP_GEMM && p->op != NPU_OP_QLINEAR_MATMUL &&
             p->op != NPU_OP_QLINEAR_CONV) ||
            p->device == NPU_DEVICE_CPU || !conv_read_src(g, p, &s, NULL, 0))
            continue;
        if (conv_residual_reader(p, &s, o) == add)
            return true;
    }
    return false;
}
