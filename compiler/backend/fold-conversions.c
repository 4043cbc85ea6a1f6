/* SPDX-License-Identifier: MIT */
/*
 * fold-conversions.c: the back-end pass fold_conversions, which lets the host <-> NPU conversions
 * do the per-tensor quantisation next to them. After lowering, a w8a8 graph whose quantised
 * products run on the NPU and whose activations are CPU steps crosses the boundary as
 *   x (fp32, host) -> QuantizeLinear (CPU) -> rk.ToNpu (int8 -> int8, a layout pass)
 *   y (int8, NPU)  -> rk.ToHost (int8 -> int8, a layout pass) -> DequantizeLinear (CPU)
 * that is, two passes over the values on the host each way. The runtime's conversion step
 * (npu-program-convert.c) quantises and dequantises in its dtype pass when one side is an
 * 8-bit integer with a scale, so one pass does both: the QuantizeLinear goes and rk.ToNpu
 * reads x itself, its int8 result carrying the scale and zero point (npu_tensor qscale /
 * qzero, which the program's tensor records); the DequantizeLinear goes and rk.ToHost writes
 * its fp32 result from y, which carries them. Only one scale and zero point per tensor
 * (constants), int8 on both sides, and only where the quantised host value has no other
 * reader than conversions (or the dequantised input no other reader than the node): the
 * values are those of the CPU kernels (npu-cpu-quant.c; the conversion's fp32 -> int8 pass
 * does the same float operations). A state input or a constant is never the one read: a
 * state's held dtype is its session's contract (fold_quantize).
 *
 * A Reshape on the CPU whose result only rk.ToNpu reads goes too (a decoder's attention
 * output [kv heads, group, head_dim] -> [1, 1, heads x head_dim] before its output
 * projection): the CPU executor copies a Reshape's bytes (a step of its own), while the
 * conversion moves elements in logical row-major order whatever the dims, so it reads the
 * Reshape's input and gives its result the Reshape's dims (rk.ToNpu `dims`).
 */
#include <math.h>
#include <string.h>

#include "npu-be-priv.h"

/* the scalar constant of input k of n (absent: def), as a double; false when it is not one
 * element of a constant */
static bool
scalar_const(const struct npu_node *n, int k, enum npu_dtype dt, double def, double *out)
{
    const struct npu_value *v = k < n->nin ? n->in[k] : NULL;
    if (!v) {
        *out = def;
        return true;
    }
    if (v->kind != NPU_VALUE_CONST || !v->t.data || v->t.dtype != dt || npu_value_numel(v) != 1)
        return false;
    *out = npu_value_get_f64(v, 0);
    return true;
}

/* the per-tensor scale and zero point of a QuantizeLinear / DequantizeLinear n whose
 * integer side is int8 */
static bool
qdq_params(const struct npu_node *n, float *scale, int32_t *zero)
{
    double s, z;
    if (n->nin < 2 || n->nin > 3 || npu_node_int(n, "qbits", 0) ||
        !scalar_const(n, 1, NPU_DTYPE_FP32, 0, &s) || !scalar_const(n, 2, NPU_DTYPE_INT8, 0, &z) ||
        !isfinite(s) || s <= 0)
        return false;
    *scale = (float)s;
    *zero = (int32_t)z;
    return true;
}

/* QuantizeLinear(x) -> rk.ToNpu(int8) ... : the conversions read x */
static bool
fold_quantize(struct npu_graph *g, struct npu_node *q)
{
    float s;
    int32_t z;
    struct npu_value *x = q->in[0], *y = q->out[0];
    /* x made by a CPU step or a graph input: codegen puts the conversions it meets while a
     * job is open around that job (into it before, out of it after), so x coming from the
     * NPU (an rk.ToHost) with no CPU step left between would be converted back before the
     * job that makes it ran. Not a state input: its rk.ToNpu left its only reader, the
     * memory plan keeps it resident (npu-memplan.c), held as the conversion's int8 with this
     * scale, where the session's contract (npu_prog_session_write_state, routed copies, the
     * next run's read) is the state's own dtype held as fp16 / fp32. Not a constant either
     * (the constant folder's, as fold_reshape leaves it). */
    if (q->nout != 1 || !x || !y || y->is_output || !y->nusers || x->t.dtype != NPU_DTYPE_FP32 ||
        y->t.dtype != NPU_DTYPE_INT8 || x->kind == NPU_VALUE_CONST || x->is_state ||
        (x->producer && npu_op_is_rk(x->producer->op)) || !qdq_params(q, &s, &z))
        return false;
    for (int u = 0; u < y->nusers; u++) {
        const struct npu_node *t = y->users[u];
        const struct npu_tensor *tq = &t->out[0]->t;
        /* a result already annotated with another quantisation (scale or zero point, as
         * fold_dequantize checks) is left: relabelled, its readers would read other values */
        if (t->op != NPU_OP_RK_TO_NPU || t->nin != 1 || tq->dtype != NPU_DTYPE_INT8 ||
            (tq->qscale != 0 && (tq->qscale != s || tq->qzero != z)))
            return false;
    }
    for (int u = 0; u < y->nusers; u++) {
        struct npu_node *t = y->users[u];
        t->in[0] = x;
        t->out[0]->t.qscale = s;
        t->out[0]->t.qzero = z;
    }
    npu_graph_remove(g, q);
    return true;
}

/* x (host) -> Reshape -> rk.ToNpu ... : the conversions read x with the Reshape's dims */
static enum npu_status
fold_reshape(struct npu_graph *g, struct npu_node *r, bool *done)
{
    struct npu_value *x = r->in[0], *y = r->out[0];
    *done = false;
    /* x made by a CPU step or an input (see fold_quantize) */
    if (r->nout != 1 || !x || !y || y->is_output || !y->nusers || x->t.dtype != y->t.dtype ||
        x->kind == NPU_VALUE_CONST || x->is_state ||
        (x->producer && npu_op_is_rk(x->producer->op)) ||
        npu_value_numel(x) != npu_value_numel(y) || y->t.ndim < 1)
        return NPU_OK;
    for (int u = 0; u < y->nusers; u++) {
        const struct npu_node *t = y->users[u];
        if (t->op != NPU_OP_RK_TO_NPU || t->nin != 1 || npu_node_attr(t, "dims"))
            return NPU_OK;
    }
    enum npu_status st = NPU_OK;
    for (int u = 0; u < y->nusers && !st; u++) {
        struct npu_node *t = y->users[u];
        t->in[0] = x;
        st = npu_node_set_ints(g, t, "dims", y->t.dims, (size_t)y->t.ndim);
        if (!st)
            st = npu_infer_node(g, t);
    }
    if (!st) {
        npu_graph_remove(g, r);
        *done = true;
    }
    return st;
}

/* rk.ToHost(y int8) -> DequantizeLinear : the conversion writes the fp32 result */
static enum npu_status
fold_dequantize(struct npu_graph *g, struct npu_node *d, bool *done)
{
    float s;
    int32_t z;
    *done = false;
    struct npu_value *xh = d->in[0], *r = d->out[0];
    struct npu_node *h = xh ? xh->producer : NULL;
    if (d->nout != 1 || !r || !h || h->op != NPU_OP_RK_TO_HOST || xh->is_output ||
        xh->nusers != 1 || xh->t.dtype != NPU_DTYPE_INT8 || r->t.dtype != NPU_DTYPE_FP32 ||
        !qdq_params(d, &s, &z))
        return NPU_OK;
    struct npu_value *y = h->in[0];
    if (!y || y->t.dtype != NPU_DTYPE_INT8 ||
        (y->t.qscale != 0 && (y->t.qscale != s || y->t.qzero != z)))
        return NPU_OK;
    /* the result read by CPU steps only (or an output): a conversion back to the NPU right
     * behind the rk.ToHost would be put before the job that makes y (as above) */
    for (int u = 0; u < r->nusers; u++)
        if (npu_op_is_rk(r->users[u]->op))
            return NPU_OK;
    y->t.qscale = s;
    y->t.qzero = z;
    npu_node_set_output(h, 0, r);
    npu_graph_remove(g, d);
    enum npu_status st = npu_node_set_string(g, h, "dtype", npu_dtype_name(NPU_DTYPE_FP32));
    if (!st)
        st = npu_infer_node(g, h);
    *done = !st;
    return st;
}

/* one walk: the quantisation steps (pass 0), then the views, whose readers are conversions
 * only once the QuantizeLinear between went (pass 1) */
static enum npu_status
walk(struct npu_graph *g, int pass, bool *changed)
{
    enum npu_status st = npu_graph_update_uses(g);
    npu_graph_for_each_node_safe (g, n, tmp) {
        bool done = false;
        if (st)
            break;
        if (pass == 0 && n->op == NPU_OP_QUANTIZE_LINEAR)
            done = fold_quantize(g, n);
        else if (pass == 0 && n->op == NPU_OP_DEQUANTIZE_LINEAR)
            st = fold_dequantize(g, n, &done);
        else if (pass == 1 && n->op == NPU_OP_RESHAPE)
            st = fold_reshape(g, n, &done);
        *changed |= done;
    }
    return st;
}

enum npu_status
npu_be_pass_fold_conversions(struct npu_graph *g)
{
    bool changed = false;
    enum npu_status st = walk(g, 0, &changed);
    if (!st)
        st = walk(g, 1, &changed);
    if (st || !changed)
        return st;
    if ((st = npu_graph_update_uses(g)))
        return st;
    npu_graph_gc_values(g);
    return npu_graph_update_uses(g);
}
