/* SPDX-License-Identifier: MIT */
/*
 * infer-util.c: the helpers under shape/dtype inference, most of them shared
 * with the rest of the IR: the node diagnostic, the ONNX dtype codes,
 * broadcasting and strides, and the checks every per-op inference makes
 * (operand tensors, output types, axes, integer vector operands).
 */
#include <stdarg.h>
#include <stdio.h>

#include "infer-priv.h"

#define DOM "ir"

void
ir_node_log(enum npu_log_level lvl, const struct npu_node *n, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    npu_log(lvl, DOM, "node '%s' (%s): %s", n->name && *n->name ? n->name : "<unnamed>",
            npu_op_name(n->op), msg);
}

static const struct {
    int code;
    enum npu_dtype dt;
} onnx_types[] = {
    {1, NPU_DTYPE_FP32},  {2, NPU_DTYPE_UINT8}, {3, NPU_DTYPE_INT8},    {4, NPU_DTYPE_UINT16},
    {5, NPU_DTYPE_INT16}, {6, NPU_DTYPE_INT32}, {7, NPU_DTYPE_INT64},   {9, NPU_DTYPE_BOOL},
    {10, NPU_DTYPE_FP16}, {11, NPU_DTYPE_FP64}, {12, NPU_DTYPE_UINT32}, {13, NPU_DTYPE_UINT64},
};

enum npu_dtype
npu_dtype_from_onnx(int64_t code)
{
    for (size_t i = 0; i < NPU_ARRAY_SIZE(onnx_types); i++)
        if (onnx_types[i].code == code)
            return onnx_types[i].dt;
    return NPU_DTYPE_UNDEFINED;
}

int
npu_dtype_to_onnx(enum npu_dtype t)
{
    for (size_t i = 0; i < NPU_ARRAY_SIZE(onnx_types); i++)
        if (onnx_types[i].dt == t)
            return onnx_types[i].code;
    return 0;
}

/* ---- shape helpers --------------------------------------------------------- */

void
ir_strides(const struct npu_tensor *t, int64_t *st)
{
    int64_t s = 1;
    for (int i = t->ndim - 1; i >= 0; i--) {
        st[i] = s;
        s *= t->dims[i];
    }
}

bool
ir_broadcast(const struct npu_tensor *a, const struct npu_tensor *b, struct npu_tensor *out)
{
    int r = NPU_MAX(a->ndim, b->ndim);
    int64_t d[NPU_MAX_DIMS];
    for (int i = 0; i < r; i++) {
        int ia = i - (r - a->ndim), ib = i - (r - b->ndim);
        int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
        if (da == db || db == 1)
            d[i] = da;
        else if (da == 1)
            d[i] = db;
        else
            return false;
    }
    out->ndim = r;
    for (int i = 0; i < r; i++)
        out->dims[i] = d[i];
    return true;
}

int64_t
ir_bcast_offset(const struct npu_tensor *t, const int64_t *idx, int ond)
{
    int64_t off = 0, s = 1;
    for (int i = t->ndim - 1; i >= 0; i--) {
        int oi = i + (ond - t->ndim);
        if (t->dims[i] != 1)
            off += idx[oi] * s;
        s *= t->dims[i];
    }
    return off;
}

const struct npu_tensor *
ir_T(const struct npu_node *n, int i)
{
    return i < n->nin && n->in[i] ? &n->in[i]->t : NULL;
}

enum npu_status
ir_set_out(const struct npu_node *n, int i, enum npu_dtype dt, int ndim, const int64_t *dims)
{
    if (i >= n->nout)
        return NPU_OK;
    if (ndim < 0 || ndim > NPU_MAX_DIMS)
        FAIL("output rank %d exceeds the supported %d", ndim, NPU_MAX_DIMS);
    struct npu_tensor *t = &n->out[i]->t;
    t->dtype = dt;
    t->ndim = ndim;
    for (int k = 0; k < ndim; k++) {
        if (dims[k] < 0)
            FAIL("output dim %d is negative (%lld)", k, (long long)dims[k]);
        t->dims[k] = dims[k];
    }
    if (npu_tensor_nbytes(t) < 0)
        FAIL("output size overflows");
    /* An absurd output (over 64 GiB) is a corrupt model, not a big one. */
    if (npu_tensor_nbytes(t) > ((int64_t)1 << 36))
        FAIL("output of %lld bytes is absurdly large", (long long)npu_tensor_nbytes(t));
    return NPU_OK;
}

enum npu_status
ir_same_as(const struct npu_node *n, int o, int i)
{
    const struct npu_tensor *t = ir_T(n, i);
    return ir_set_out(n, o, t->dtype, t->ndim, t->dims);
}

bool
ir_norm_axis(int64_t a, int rank, int64_t *out)
{
    if (a < -rank || a >= rank)
        return false;
    *out = a < 0 ? a + rank : a;
    return true;
}

/* Reads up to max entries of an integer vector input with data. */
int
ir_read_ints(const struct npu_value *v, int64_t *buf, int max)
{
    int64_t cnt = npu_value_numel(v);
    if (cnt < 0 || cnt > max || !npu_dtype_is_int(v->t.dtype))
        return -1;
    for (int64_t i = 0; i < cnt; i++)
        buf[i] = npu_value_get_i64(v, i);
    return (int)cnt;
}
