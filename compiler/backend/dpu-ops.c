/* SPDX-License-Identifier: MIT */
/*
 * dpu-ops.c: the op handlers of the DPU lowerings (supports / cost / lower,
 * docs/npu-dpu-ops.md): the refusals they all share and the dispatch to each family's
 * lowering (dpu-eltwise.c, dpu-unary.c, dpu-pool.c, dpu-move.c, dpu-norm.c, dpu-attn.c,
 * dpu-qdq.c).
 *
 * One lowering function per family serves all three handler entry points: it runs on a
 * dry rk.Dpu builder for supports() (does the emitter accept every task?) and cost() (the
 * tasks' modeled time, timing model v1), and on a real one for lower(). Values are fp16
 * NC1HWC2 on the NPU (docs/npu-backend.md §2); every lowering keeps the view of its
 * activation input, so results stay readable by the next NPU op without relayout.
 */
#include <stdio.h>

#include "dpu-low.h"

/* Dropout is the identity only in inference mode (ONNX Dropout-12/13: training_mode absent or
 * false; ratio then does not matter) and without its mask output: training mode draws a
 * random mask and scales by 1 / (1 - ratio), which the NPU path does not do. */
static bool
dropout_ok(const struct npu_node *n, struct why *w)
{
    const struct npu_value *tm = n->nin > 2 ? n->in[2] : NULL;
    if (tm) {
        if (tm->kind != NPU_VALUE_CONST || !npu_value_data(tm) || npu_value_numel(tm) != 1) {
            why_set(w,
                    "Dropout's training_mode '%s' is not a constant: training mode (a random "
                    "mask) is not computed on the NPU",
                    tm->name);
            return false;
        }
        if (npu_value_get_f64(tm, 0) != 0) {
            why_set(w, "Dropout in training mode (a random mask) is not computed on the NPU");
            return false;
        }
    }
    if (n->nout > 1 && n->out[1] && (n->out[1]->nusers || n->out[1]->is_output)) {
        why_set(w, "Dropout's mask output is used: the NPU path does not produce it");
        return false;
    }
    return true;
}

enum npu_status
dl_lower_any(struct rkd *b, struct npu_node *n, struct why *w)
{
    /* computed by an earlier lowering (the head merge written by attention) */
    if (npu_node_int(n, "npu_dpu_done", 0))
        return NPU_OK;
    /* Dropout's and MaxPool's own (their extra outputs would otherwise be refused for
     * their type), then the refusals common to every handler (float64, output types,
     * quantisation parameters) */
    if (n->op == NPU_OP_DROPOUT && !dropout_ok(n, w))
        return NPU_ERR_UNSUPPORTED;
    /* a graph output counts as used too: nothing else would write it */
    if (n->op == NPU_OP_MAX_POOL && n->nout > 1 && n->out[1] &&
        (n->out[1]->nusers || n->out[1]->is_output))
        return why_set(w, "MaxPool's indices output (output 1) is used: the PPU does not "
                          "produce indices");
    /* QuantizeLinear's int8 result is checked by its lowering (dpu-qdq.c) */
    bool int_out = n->op == NPU_OP_QUANTIZE_LINEAR;
    if (!npu_be_common_ok(b->cx ? b->cx->g : NULL, n, int_out, w ? w->s : NULL, w ? w->len : 0))
        return NPU_ERR_UNSUPPORTED;
    switch (n->op) {
    case NPU_OP_ADD:
    case NPU_OP_SUB:
    case NPU_OP_MUL:
    case NPU_OP_DIV:
    case NPU_OP_MAX:
    case NPU_OP_MIN:
    case NPU_OP_POW: return dl_lower_eltwise(b, n, w);
    case NPU_OP_RELU:
    case NPU_OP_LEAKY_RELU:
    case NPU_OP_PRELU:
    case NPU_OP_CLIP:
    case NPU_OP_SIGMOID:
    case NPU_OP_TANH:
    case NPU_OP_ERF:
    case NPU_OP_GELU:
    case NPU_OP_FUSED_GELU_TANH:
    case NPU_OP_FUSED_SILU:
    case NPU_OP_HARD_SIGMOID:
    case NPU_OP_HARD_SWISH:
    case NPU_OP_NEG:
    case NPU_OP_ABS:
    case NPU_OP_IDENTITY:
    case NPU_OP_DROPOUT: return dl_lower_unary(b, n, w);
    case NPU_OP_MAX_POOL:
    case NPU_OP_GLOBAL_MAX_POOL:
    case NPU_OP_AVERAGE_POOL:
    case NPU_OP_GLOBAL_AVERAGE_POOL: return dl_lower_pool(b, n, w);
    case NPU_OP_RESHAPE:
    case NPU_OP_FLATTEN:
    case NPU_OP_SQUEEZE:
    case NPU_OP_UNSQUEEZE:
    case NPU_OP_TRANSPOSE:
    case NPU_OP_SLICE:
    case NPU_OP_CONCAT:
    case NPU_OP_SPLIT:
    case NPU_OP_GATHER: return dl_lower_move(b, n, w);
    case NPU_OP_LAYER_NORMALIZATION: return dl_lower_layernorm(b, n, w);
    case NPU_OP_RMS_NORMALIZATION: return dl_lower_rmsnorm(b, n, w);
    case NPU_OP_SOFTMAX: return dl_lower_softmax(b, n, w);
    case NPU_OP_FUSED_ATTENTION: return dl_lower_attention(b, n, w);
    case NPU_OP_STATE_WRITE: return dl_lower_state_write(b, n, w);
    case NPU_OP_QUANTIZE_LINEAR:
    case NPU_OP_DEQUANTIZE_LINEAR: return dl_lower_qdq(b, n, w);
    default: return why_set(w, "no DPU lowering for %s", npu_op_name(n->op));
    }
}

/* Dry runs take the node as const: the lowering only reads it (cx == NULL). Inside an
 * npu_backend_dry_scope the answer (and its reason, up to 256 bytes) is remembered. */
bool
npu_dpu_supports(const struct npu_graph *g, const struct npu_node *n,
                 const struct npu_backend_options *o, char *why, size_t why_len)
{
    (void)g;
    bool nc = o && o->no_center_fold, ok;
    if (why && why_len)
        why[0] = 0;
    if (dl_supports_memo(n, nc, &ok, why, why_len))
        return ok;
    /* the reason goes to a buffer of our own when it is to be remembered */
    char own[256];
    bool keep = !why || !why_len || why_len <= sizeof(own);
    char *ws = keep ? own : why;
    size_t wl = keep ? sizeof(own) : why_len;
    ws[0] = 0;
    struct rkd b;
    struct why w = {ws, wl};
    rkd_init(&b, NULL, (struct npu_node *)n);
    b.no_center = nc;
    enum npu_status st = dl_lower_any(&b, (struct npu_node *)n, &w);
    if (st == NPU_OK && b.err)
        st = b.err;
    if (st && !ws[0])
        snprintf(ws, wl, "a DPU task of the lowering was refused (%s)",
                 npu_stream_error(&b.dry)[0] ? npu_stream_error(&b.dry) : npu_status_str(st));
    rkd_fini(&b);
    ok = st == NPU_OK;
    if (keep) {
        dl_supports_remember(n, nc, ok, ws);
        if (why && why_len)
            snprintf(why, why_len, "%s", ws);
    }
    return ok;
}

double
npu_dpu_cost(const struct npu_graph *g, const struct npu_node *n,
             const struct npu_backend_options *o)
{
    /* a residual Add the producing MatMul will compute in its DPU (priced there) */
    if (n->op == NPU_OP_ADD && npu_conv_residual_likely(g, n, o))
        return 0;
    /* a DequantizeLinear the QLinear product before it writes (priced there) */
    if (n->op == NPU_OP_DEQUANTIZE_LINEAR && npu_conv_deq_likely(g, n, o))
        return 0;
    /* an activation that product applies as a LUT after it (priced there) */
    if (n->nin == 1 && npu_conv_deq_act_likely(g, n, o))
        return 0;
    /* a head merge the attention before it writes directly (priced there) */
    if ((n->op == NPU_OP_TRANSPOSE || n->op == NPU_OP_RESHAPE || n->op == NPU_OP_FLATTEN) &&
        dl_attn_merged(g, n, o))
        return 0;
    struct rkd b;
    rkd_init(&b, NULL, (struct npu_node *)n);
    b.no_center = o && o->no_center_fold;
    b.g = g; /* views: predict alias or copy as the lowering will (dl_alias_ok) */
    b.o = o;
    enum npu_status st = dl_lower_any(&b, (struct npu_node *)n, NULL);
    double s = st == NPU_OK && !b.err ? rkd_seconds(&b) : -1.0;
    rkd_fini(&b);
    return s;
}

enum npu_status
npu_dpu_lower(struct npu_lower_ctx *cx, struct npu_node *n)
{
    struct rkd b;
    char why[200] = "";
    struct why w = {why, sizeof(why)};
    rkd_init(&b, cx, n);
    enum npu_status st = dl_lower_any(&b, n, &w);
    if (st == NPU_OK && b.err)
        st = b.err;
    if (st == NPU_OK && !npu_node_int(n, "npu_dpu_done", 0) && !b.finished)
        st = npu_lower_refuse(n, "internal: the lowering declared no result");
    if (st == NPU_ERR_UNSUPPORTED || (st && !why[0] && st != NPU_ERR_NOMEM)) {
        rkd_fini(&b);
        return npu_lower_refuse(n, "%s", why[0] ? why : npu_status_str(st));
    }
    rkd_fini(&b);
    return st;
}
