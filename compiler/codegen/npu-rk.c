/* SPDX-License-Identifier: MIT */
/*
 * npu-rk.c: what every rk.* value shares: its 3-D NC1HWC2 view, its size in
 * NPU memory, and the inference of the boundary ops rk.ToNpu / rk.ToHost.
 * The IR's inference (npu_infer_node) reaches rk.* ops through
 * npu_rk_infer_node, which dispatches on the rk.* op.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "npu-rk.h"

/* DPU cube and CNA sizes are 13-bit minus-one fields (facts §2.5), so no
 * NPU view dimension may exceed 8192. */
#define VIEW_MAX 8192u

bool
npu_rk_canonical_view(const struct npu_tensor *t, uint32_t view[3])
{
    uint64_t c, h, w;
    if (t->ndim < 0 || t->ndim > NPU_MAX_DIMS)
        return false;
    for (int i = 0; i < t->ndim; i++)
        if (t->dims[i] < 1)
            return false;
    if (t->ndim == 4) {
        if (t->dims[0] != 1)
            return false;
        c = (uint64_t)t->dims[1];
        h = (uint64_t)t->dims[2];
        w = (uint64_t)t->dims[3];
    } else if (t->ndim == 0) {
        c = h = w = 1;
    } else {
        c = (uint64_t)t->dims[t->ndim - 1];
        h = 1;
        for (int i = 0; i < t->ndim - 1; i++) {
            h *= (uint64_t)t->dims[i];
            if (h > VIEW_MAX)
                return false;
        }
        w = 1;
    }
    if (c > VIEW_MAX || h > VIEW_MAX || w > VIEW_MAX)
        return false;
    view[0] = (uint32_t)c;
    view[1] = (uint32_t)h;
    view[2] = (uint32_t)w;
    return true;
}

bool
npu_attr_ints_n(const struct npu_node *n, const char *name, int64_t *out, size_t cnt)
{
    size_t k;
    const int64_t *v = npu_node_ints(n, name, &k);
    if (!v || k != cnt)
        return false;
    memcpy(out, v, cnt * sizeof(*out));
    return true;
}

bool
npu_rk_value(const struct npu_value *v)
{
    return v && v->kind == NPU_VALUE_NODE && v->producer && npu_op_is_rk(v->producer->op) &&
           v->producer->op != NPU_OP_RK_TO_HOST;
}

bool
npu_rk_view(const struct npu_value *v, uint32_t view[3])
{
    if (!v)
        return false;
    if (v->producer && v->producer_idx == 0) {
        int64_t a[3];
        if (npu_attr_ints_n(v->producer, "view", a, 3)) {
            for (int i = 0; i < 3; i++)
                if (a[i] < 1 || a[i] > VIEW_MAX)
                    return false;
            /* the view must hold exactly the logical elements */
            if (a[0] * a[1] * a[2] != npu_value_numel(v))
                return false;
            for (int i = 0; i < 3; i++)
                view[i] = (uint32_t)a[i];
            return true;
        }
    }
    return npu_rk_canonical_view(&v->t, view);
}

uint32_t
npu_rk_order_of(const struct npu_tensor *t, const uint32_t view[3])
{
    /* [N, C, H, W] as (N * C, H, W): images back to back are channel blocks of one map
     * (the conv/matmul lowering's batched convs, docs/npu-backend.md) */
    if (t->ndim == 4 && t->dims[0] * t->dims[1] == view[0] && t->dims[2] == view[1] &&
        t->dims[3] == view[2])
        return NPU_VIEW_NCHW;
    /* [N, C, L] as (N * C, 1, L): a 1-D conv's map (the conv/matmul lowering); L == N * C keeps the
     * row reading (HWC), which a 1-D conv then refuses */
    if (t->ndim == 3 && t->dims[0] * t->dims[1] == view[0] && view[1] == 1 &&
        t->dims[2] == view[2] && view[2] > 1 && view[0] != view[2])
        return NPU_VIEW_NCHW;
    return NPU_VIEW_HWC;
}

uint32_t
npu_rk_view_order(const struct npu_value *v)
{
    uint32_t view[3];
    if (v->producer && v->producer_idx == 0) {
        const char *o = npu_node_string(v->producer, "order", NULL);
        if (o)
            return !strcmp(o, "nchw") ? NPU_VIEW_NCHW : NPU_VIEW_HWC;
    }
    if (!npu_rk_view(v, view))
        return NPU_VIEW_HWC;
    return npu_rk_order_of(&v->t, view);
}

const char *
npu_rk_layout(const struct npu_value *v)
{
    if (v && v->producer && v->producer_idx == 0)
        return npu_node_string(v->producer, "layout", "nc1hwc2");
    return "nc1hwc2";
}

uint64_t
npu_rk_nc1hwc2_bytes(enum npu_dtype dt, const uint32_t view[3])
{
    size_t es = npu_dtype_size(dt);
    if (es != 1 && es != 2 && es != 4)
        return 0;
    uint64_t c2 = 16 / es;
    /* A conv's DPU writes output channels padded to its kernel group (16
     * fp16, 32 int8) or depthwise block (32 fp16, 64 int8): size every NPU
     * tensor for 64 channels' worth of surfaces so any producer's padding
     * lands inside it. */
    uint64_t c = (view[0] + 63) / 64 * 64;
    return (c + c2 - 1) / c2 * (uint64_t)view[1] * view[2] * 16;
}

uint32_t
npu_rk_surf(const struct npu_value *v)
{
    uint32_t view[3];
    if (!npu_rk_view(v, view))
        return 0;
    uint64_t packed = (uint64_t)view[1] * view[2];
    if (v->producer && v->producer_idx == 0) {
        /* rows padded by at most 32 (attention's keys: a multiple of 16 or 32) */
        int64_t s = npu_node_int(v->producer, "surf", 0);
        if (s > 0 && (uint64_t)s >= packed && (uint64_t)s <= packed + 32ull * view[2])
            return (uint32_t)s;
    }
    return (uint32_t)packed;
}

bool
npu_rk_packed(const struct npu_value *v)
{
    uint32_t view[3];
    return npu_rk_view(v, view) && npu_rk_surf(v) == view[1] * view[2];
}

uint64_t
npu_rk_value_bytes(const struct npu_value *v)
{
    uint32_t view[3];
    if (!npu_rk_view(v, view))
        return 0;
    if (!strcmp(npu_rk_layout(v), "nc1hwc2")) {
        uint64_t b = npu_rk_nc1hwc2_bytes(v->t.dtype, view);
        uint64_t packed = (uint64_t)view[1] * view[2];
        /* padded surfaces (npu_rk_surf) */
        return packed ? b / packed * npu_rk_surf(v) : b;
    }
    /* Other layouts are sized by their producer's "bytes" attribute. */
    if (v->producer)
        return (uint64_t)npu_node_int(v->producer, "bytes", 0);
    return 0;
}

/* ---- inference ------------------------------------------------------------- */

static enum npu_status
rk_fail(const struct npu_node *n, const char *fmt, ...)
{
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    npu_err(NPU_BE_DOM, "node '%s' (%s): %s", n->name, npu_op_name(n->op), buf);
    return NPU_ERR_INVALID;
}

static enum npu_status
set_out(struct npu_node *n, int i, enum npu_dtype dt, int ndim, const int64_t *dims)
{
    struct npu_tensor *t = &n->out[i]->t;
    t->dtype = dt;
    t->ndim = ndim;
    for (int k = 0; k < ndim; k++)
        t->dims[k] = dims[k];
    return NPU_OK;
}

static enum npu_dtype
attr_dtype(const struct npu_node *n, enum npu_dtype def)
{
    const char *s = npu_node_string(n, "dtype", NULL);
    return s ? npu_dtype_from_name(s) : def;
}

/* rk.ToNpu(x) {dtype, view, dims}: the NPU copy of a host value; dims kept, or the optional
 * `dims` when given (a Reshape of x folded into the conversion, fold-conversions.c: the same
 * elements in logical row-major order, which is the order the conversion moves them in). */
enum npu_status
npu_rk_infer_to_npu(struct npu_graph *g, struct npu_node *n)
{
    (void)g;
    if (n->nin != 1 || !n->in[0] || n->nout != 1)
        return rk_fail(n, "takes one input and has one output");
    const struct npu_tensor *x = &n->in[0]->t;
    enum npu_dtype dt = attr_dtype(n, NPU_DTYPE_FP16);
    size_t es = npu_dtype_size(dt);
    if (es != 1 && es != 2 && es != 4)
        return rk_fail(n, "NPU element type '%s' is not 1, 2 or 4 bytes wide",
                       npu_node_string(n, "dtype", "?"));
    size_t nd = 0;
    const int64_t *dims = npu_node_ints(n, "dims", &nd);
    if (dims) {
        struct npu_tensor r = {.dtype = dt, .ndim = (int)nd};
        if (nd < 1 || nd > NPU_MAX_DIMS)
            return rk_fail(n, "'dims' of %zu dims", nd);
        memcpy(r.dims, dims, nd * sizeof(int64_t));
        if (npu_tensor_numel(&r) != npu_tensor_numel(x))
            return rk_fail(n, "'dims' hold another number of elements than %s", n->in[0]->name);
        set_out(n, 0, dt, (int)nd, dims);
    } else {
        set_out(n, 0, dt, x->ndim, x->dims);
    }
    uint32_t view[3];
    if (!npu_rk_view(n->out[0], view))
        return rk_fail(n, "no NC1HWC2 view of %s (dims or 'view' attribute)", n->in[0]->name);
    const char *lay = npu_node_string(n, "layout", "nc1hwc2");
    if (!strcmp(lay, "small_c")) {
        /* packed pixels of 1..4 fp16 channels (facts §2.10) */
        int64_t b = npu_node_int(n, "bytes", 0);
        if (dt != NPU_DTYPE_FP16 || view[0] > 4 || b < (int64_t)view[0] * view[1] * view[2] * 2 ||
            b > ((int64_t)1 << 32))
            return rk_fail(n, "small_c needs f16, 1..4 channels and bytes >= C*H*W*2");
    } else if (strcmp(lay, "nc1hwc2")) {
        return rk_fail(n, "layout '%s' (nc1hwc2 or small_c)", lay);
    }
    return NPU_OK;
}

/* rk.ToHost(y) {dtype}: the host copy of an NPU value. */
enum npu_status
npu_rk_infer_to_host(struct npu_graph *g, struct npu_node *n)
{
    (void)g;
    if (n->nin != 1 || !n->in[0] || n->nout != 1)
        return rk_fail(n, "takes one input and has one output");
    const struct npu_tensor *y = &n->in[0]->t;
    enum npu_dtype dt = attr_dtype(n, NPU_DTYPE_FP32);
    if (dt == NPU_DTYPE_UNDEFINED)
        return rk_fail(n, "unknown host dtype '%s'", npu_node_string(n, "dtype", "?"));
    return set_out(n, 0, dt, y->ndim, y->dims);
}

enum npu_status
npu_rk_infer_node(struct npu_graph *g, struct npu_node *n)
{
    enum npu_status (*infer)(struct npu_graph *, struct npu_node *) = NULL;
    switch (n->op) {
    case NPU_OP_RK_TO_NPU: infer = npu_rk_infer_to_npu; break;
    case NPU_OP_RK_TO_HOST: infer = npu_rk_infer_to_host; break;
    case NPU_OP_RK_CONV: infer = npu_rk_conv_infer; break;
    case NPU_OP_RK_DPU: infer = npu_rk_dpu_infer; break;
    default: return rk_fail(n, "no inference for this rk op");
    }
    /* Every non-constant input of an rk op other than rk.ToNpu must itself
     * live on the NPU. */
    if (n->op != NPU_OP_RK_TO_NPU)
        for (int i = 0; i < n->nin; i++) {
            const struct npu_value *v = n->in[i];
            if (v && v->kind != NPU_VALUE_CONST && !npu_rk_value(v))
                return rk_fail(n, "input %d ('%s') is not an NPU value (use rk.ToNpu)", i, v->name);
        }
    return infer(g, n);
}

npu_rk_emit_fn
npu_rk_emitter(enum npu_op op)
{
    switch (op) {
    case NPU_OP_RK_CONV: return npu_rk_conv_emit;
    case NPU_OP_RK_DPU: return npu_rk_dpu_emit;
    default: return NULL; /* rk.ToNpu / rk.ToHost are conversion steps, not tasks */
    }
}
