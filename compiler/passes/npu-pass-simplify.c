/* SPDX-License-Identifier: MIT */
/*
 * npu-pass-simplify.c: shape-arithmetic simplification. With concrete input
 * shapes, the Shape -> Gather -> Unsqueeze -> Concat -> Reshape chains that
 * exporters emit are fully known to inference (npu_value.known); this pass
 * turns every such node into a constant, then removes nodes that do nothing
 * (Identity, Dropout, Reshape/Expand/Squeeze to the same shape, Cast to the
 * same type, full Slices, zero Pads, identity Transposes, one-input Concat),
 * collapses chains of Reshape-like nodes into one Reshape and drops lossless
 * Cast round trips (f32 -> f64 -> f32).
 */
#include "passes-priv.h"

static bool
same_type(const struct npu_tensor *a, const struct npu_tensor *b)
{
    return a->dtype == b->dtype && a->ndim == b->ndim &&
           !memcmp(a->dims, b->dims, sizeof(int64_t) * (size_t)a->ndim);
}

static bool
reshape_like(enum npu_op op)
{
    return op == NPU_OP_RESHAPE || op == NPU_OP_FLATTEN || op == NPU_OP_SQUEEZE ||
           op == NPU_OP_UNSQUEEZE;
}

/* Every value of `from` is exactly representable in `to`. */
static bool
lossless(enum npu_dtype from, enum npu_dtype to)
{
    if (from == to)
        return true;
    switch (from) {
    case NPU_DTYPE_BOOL: return to != NPU_DTYPE_UNDEFINED;
    case NPU_DTYPE_FP16: return to == NPU_DTYPE_FP32 || to == NPU_DTYPE_FP64;
    case NPU_DTYPE_FP32: return to == NPU_DTYPE_FP64;
    case NPU_DTYPE_INT8:
        return to == NPU_DTYPE_INT16 || to == NPU_DTYPE_INT32 || to == NPU_DTYPE_INT64 ||
               to == NPU_DTYPE_FP16 || to == NPU_DTYPE_FP32 || to == NPU_DTYPE_FP64;
    case NPU_DTYPE_UINT8:
        return to == NPU_DTYPE_INT16 || to == NPU_DTYPE_UINT16 || to == NPU_DTYPE_INT32 ||
               to == NPU_DTYPE_UINT32 || to == NPU_DTYPE_INT64 || to == NPU_DTYPE_UINT64 ||
               to == NPU_DTYPE_FP16 || to == NPU_DTYPE_FP32 || to == NPU_DTYPE_FP64;
    case NPU_DTYPE_INT16:
        return to == NPU_DTYPE_INT32 || to == NPU_DTYPE_INT64 || to == NPU_DTYPE_FP32 ||
               to == NPU_DTYPE_FP64;
    case NPU_DTYPE_UINT16:
        return to == NPU_DTYPE_INT32 || to == NPU_DTYPE_UINT32 || to == NPU_DTYPE_INT64 ||
               to == NPU_DTYPE_UINT64 || to == NPU_DTYPE_FP32 || to == NPU_DTYPE_FP64;
    case NPU_DTYPE_INT32: return to == NPU_DTYPE_INT64 || to == NPU_DTYPE_FP64;
    case NPU_DTYPE_UINT32:
        return to == NPU_DTYPE_INT64 || to == NPU_DTYPE_UINT64 || to == NPU_DTYPE_FP64;
    default: return false;
    }
}

/* Output 0 equals input 0 (same dtype, shape and contents). */
static bool
is_noop(const struct npu_node *n)
{
    if (n->nin < 1 || !n->in[0] || n->nout < 1 || !same_type(&n->in[0]->t, &n->out[0]->t))
        return false;
    switch (n->op) {
    case NPU_OP_IDENTITY:
    case NPU_OP_CAST:
    case NPU_OP_CAST_LIKE:
    case NPU_OP_RESHAPE:
    case NPU_OP_FLATTEN:
    case NPU_OP_SQUEEZE:
    case NPU_OP_UNSQUEEZE:
    case NPU_OP_EXPAND:
    case NPU_OP_TILE:
    case NPU_OP_CONCAT: return n->op != NPU_OP_CONCAT || n->nin == 1;
    case NPU_OP_DROPOUT: {
        /* the identity only in inference mode: training_mode absent or a constant false
         * (training mode draws a random mask, ONNX Dropout-12/13) */
        struct npu_value *tm = npu_node_in(n, 2);
        if (tm &&
            (!npu_value_data(tm) || npu_value_numel(tm) != 1 || npu_value_get_i64(tm, 0) != 0))
            return false;
        return n->nout == 1 || (n->out[1]->nusers == 0 && !n->out[1]->is_output);
    }
    case NPU_OP_SLICE: {
        struct npu_value *steps = npu_node_in(n, 4);
        if (!steps)
            return true; /* same shape and step 1: starts must be 0 */
        if (!npu_value_data(steps))
            return false;
        for (int64_t i = 0; i < npu_value_numel(steps); i++)
            if (npu_value_get_i64(steps, i) != 1)
                return false;
        return true;
    }
    case NPU_OP_PAD: {
        struct npu_value *p = npu_node_in(n, 1);
        if (!p || !npu_value_data(p))
            return false;
        for (int64_t i = 0; i < npu_value_numel(p); i++)
            if (npu_value_get_i64(p, i) != 0)
                return false;
        return true;
    }
    case NPU_OP_TRANSPOSE: {
        size_t cnt;
        const int64_t *perm = npu_node_ints(n, "perm", &cnt);
        int nontrivial = 0;
        for (int i = 0; i < n->in[0]->t.ndim; i++)
            if (n->in[0]->t.dims[i] != 1)
                nontrivial++;
        if (!perm)
            return nontrivial <= 1;
        /* Moving only size-1 dims around keeps memory order. */
        int64_t last = -1;
        for (size_t i = 0; i < cnt; i++) {
            if (n->in[0]->t.dims[perm[i]] == 1)
                continue;
            if (perm[i] < last)
                return false;
            last = perm[i];
        }
        return true;
    }
    default: return false;
    }
}

static bool
fold_known(struct npu_graph *g, struct npu_node *n)
{
    if (n->nout < 1)
        return false;
    for (int i = 0; i < n->nout; i++)
        if (!n->out[i]->known)
            return false;
    for (int i = 0; i < n->nout; i++)
        npu_value_make_const(n->out[i], (void *)n->out[i]->known);
    npu_graph_remove(g, n);
    return true;
}

enum npu_status
npu_pass_simplify_shapes(struct npu_graph *g)
{
    bool changed = true;
    for (int round = 0; changed && round < 1000; round++) {
        changed = false;
        if (npu_graph_update_uses(g))
            return NPU_ERR_NOMEM;
        npu_graph_for_each_node_safe (g, n, tmp) {
            if (fold_known(g, n)) {
                changed = true;
                continue;
            }
            struct npu_value *x = npu_node_in(n, 0);
            struct npu_value *y = n->nout ? n->out[0] : NULL;
            if (is_noop(n) && !y->is_output) {
                npu_graph_replace_uses(g, y, x);
                npu_graph_remove(g, n);
                changed = true;
                if (npu_graph_update_uses(g))
                    return NPU_ERR_NOMEM;
                continue;
            }
            /* Reshape-like(Reshape-like(x)) -> Reshape(x, final shape) */
            struct npu_node *p = producer_op(x, NPU_OP_NONE);
            if (reshape_like(n->op) && p && reshape_like(p->op) && p->in[0]) {
                struct npu_value *shape =
                    npu_graph_const_i64(g, "shape", y->t.dims, y->t.ndim, false);
                if (!shape)
                    return NPU_ERR_NOMEM;
                struct npu_value *ins[2] = {p->in[0], shape};
                struct npu_node *r = npu_node_new(g, NPU_OP_RESHAPE, n->name, ins, 2, 1, NULL);
                if (!r)
                    return NPU_ERR_NOMEM;
                /* a 0 in the shape means "zero", not "copy the input dim" */
                for (int i = 0; i < y->t.ndim; i++)
                    if (!y->t.dims[i] && npu_node_set_int(g, r, "allowzero", 1))
                        return NPU_ERR_NOMEM;
                npu_graph_insert_before(g, n, r);
                npu_node_set_output(r, 0, y);
                npu_graph_remove(g, n);
                changed = true;
                if (npu_graph_update_uses(g))
                    return NPU_ERR_NOMEM;
                continue;
            }
            /* Transpose(Transpose(x)) -> one Transpose with the composed perm */
            if (n->op == NPU_OP_TRANSPOSE && p && p->op == NPU_OP_TRANSPOSE && p->in[0]) {
                int r = y->t.ndim;
                size_t c1, c2;
                const int64_t *p1 = npu_node_ints(p, "perm", &c1),
                              *p2 = npu_node_ints(n, "perm", &c2);
                int64_t perm[NPU_MAX_DIMS];
                for (int i = 0; i < r; i++) {
                    int64_t j = p2 ? p2[i] : r - 1 - i;
                    perm[i] = p1 ? p1[j] : r - 1 - j;
                }
                struct npu_node *t =
                    npu_node_new(g, NPU_OP_TRANSPOSE, n->name, &p->in[0], 1, 1, NULL);
                if (!t || npu_node_set_ints(g, t, "perm", perm, (size_t)r))
                    return NPU_ERR_NOMEM;
                npu_graph_insert_before(g, n, t);
                npu_node_set_output(t, 0, y);
                npu_graph_remove(g, n);
                changed = true;
                if (npu_graph_update_uses(g))
                    return NPU_ERR_NOMEM;
                continue;
            }
            /* Cast(Cast(x)) back to x's type through a lossless middle type */
            if (n->op == NPU_OP_CAST && p && p->op == NPU_OP_CAST && p->in[0] &&
                p->in[0]->t.dtype == y->t.dtype &&
                lossless(p->in[0]->t.dtype, p->out[0]->t.dtype) && !y->is_output) {
                npu_graph_replace_uses(g, y, p->in[0]);
                npu_graph_remove(g, n);
                changed = true;
                if (npu_graph_update_uses(g))
                    return NPU_ERR_NOMEM;
                continue;
            }
        }
    }
    npu_graph_gc_values(g);
    return NPU_OK;
}
