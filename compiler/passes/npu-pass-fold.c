/* SPDX-License-Identifier: MIT */
/*
 * npu-pass-fold.c: constant folding and dead-code elimination. A node whose
 * inputs are all constants is evaluated at compile time with the CPU kernels
 * (the same code that would run it at inference time), or with the
 * compiler's evaluator for ops that have no kernel, and replaced by its
 * results. Folding never grows the model much: an output is only folded if it
 * is small or no bigger than the constants it replaces (an Expand of a scalar
 * to a big tensor stays an Expand).
 */
#include <stdlib.h>

#include "npu/npu-cpu.h"
#include "passes-priv.h"

#define FOLD_SMALL_BYTES ((int64_t)1 << 20)

static bool
all_const(const struct npu_node *n)
{
    if (n->nin == 0)
        return false;
    for (int i = 0; i < n->nin; i++)
        if (n->in[i] && n->in[i]->kind != NPU_VALUE_CONST)
            return false;
    return true;
}

static enum npu_status
fold_node(struct npu_graph *g, struct npu_cpu_ctx *ctx, struct npu_node *n)
{
    int64_t in_bytes = 0, out_bytes = 0;
    for (int i = 0; i < n->nin; i++)
        if (n->in[i])
            in_bytes += npu_tensor_nbytes(&n->in[i]->t);
    for (int i = 0; i < n->nout; i++)
        out_bytes += npu_tensor_nbytes(&n->out[i]->t);
    if (out_bytes > FOLD_SMALL_BYTES && out_bytes > in_bytes)
        return NPU_OK;
    if (n->nin > 64 || n->nout > 64)
        return NPU_OK;
    /* Fused attributes (npu_act...) are not the kernels' business. */
    for (int i = 0; i < n->nattr; i++)
        if (!strncmp(n->attr[i].name, "npu_", 4))
            return NPU_OK;
    const struct npu_tensor *in[64];
    struct npu_tensor tin[64], tout[64], *out[64];
    for (int i = 0; i < n->nin; i++) {
        in[i] = NULL;
        if (n->in[i]) {
            /* the kernels read typed pointers: an unaligned (borrowed) input is copied */
            if (!npu_value_data_aligned(n->in[i]) && !npu_value_aligned_data(g, n->in[i]))
                return NPU_ERR_NOMEM;
            tin[i] = n->in[i]->t;
            in[i] = &tin[i];
        }
    }
    bool known = true;
    for (int i = 0; i < n->nout; i++)
        known &= n->out[i]->known != NULL;
    if (!known) {
        for (int i = 0; i < n->nout; i++) {
            tout[i] = n->out[i]->t;
            tout[i].data = npu_graph_alloc(g, (size_t)npu_tensor_nbytes(&tout[i]));
            if (!tout[i].data)
                return NPU_ERR_NOMEM;
            out[i] = &tout[i];
        }
        struct npu_attrs a = npu_node_attrs(n);
        enum npu_status st = NPU_ERR_UNSUPPORTED;
        /* An extra MatMul bias input is ours, not ONNX's. */
        bool plain = !(n->op == NPU_OP_MATMUL && n->nin > 2);
        if (ctx && plain && npu_cpu_supports(n->op))
            st = npu_cpu_run(ctx, n->op, &a, in, n->nin, out, n->nout);
        if (st && plain)
            st = npu_eval_node(n, in, out);
        if (st)
            return NPU_OK; /* stays a node; it will run at inference time */
        for (int i = 0; i < n->nout; i++)
            npu_value_make_const(n->out[i], tout[i].data);
    } else {
        for (int i = 0; i < n->nout; i++)
            npu_value_make_const(n->out[i], (void *)n->out[i]->known);
    }
    npu_graph_remove(g, n);
    return NPU_OK;
}

enum npu_status
npu_pass_fold_constants(struct npu_graph *g)
{
    struct npu_cpu_ctx *ctx = npu_cpu_ctx_create(1);
    enum npu_status st = NPU_OK;
    npu_graph_for_each_node_safe (g, n, tmp) {
        if (!all_const(n))
            continue;
        if ((st = fold_node(g, ctx, n)))
            break;
    }
    npu_cpu_ctx_destroy(ctx);
    npu_graph_gc_values(g);
    return st;
}

enum npu_status
npu_pass_dce(struct npu_graph *g)
{
    if (npu_graph_update_uses(g))
        return NPU_ERR_NOMEM;
    /* Backwards, so a chain of dead nodes goes in one walk. */
    for (struct npu_node *n = g->tail, *prev; n; n = prev) {
        prev = n->prev;
        bool dead = true;
        for (int i = 0; i < n->nout; i++)
            if (n->out[i]->nusers || n->out[i]->is_output)
                dead = false;
        if (!dead)
            continue;
        for (int i = 0; i < n->nin; i++)
            if (n->in[i])
                n->in[i]->nusers--;
        npu_graph_remove(g, n);
    }
    npu_graph_gc_values(g);
    return NPU_OK;
}
