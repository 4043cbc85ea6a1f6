/* SPDX-License-Identifier: MIT */
/*
 * npu-eval.c: the compiler's own small evaluator. Inference uses it to compute
 * the contents of small values at compile time (the Shape -> Gather -> Concat
 * -> Reshape chains exporters emit, causal masks, position ids), and constant
 * folding falls back on it when a CPU kernel is missing. It favours being
 * obviously right over being fast: integers are computed in int64, floats in
 * double, one element at a time. It is not a kernel library: big tensors go to
 * the CPU kernels.
 */
#include <stdlib.h>

#include "ir-priv.h"

static int64_t
numel(const struct npu_tensor *t)
{
    return npu_tensor_numel(t);
}

static void
unravel(int64_t i, const struct npu_tensor *t, int64_t *idx)
{
    for (int d = t->ndim - 1; d >= 0; d--) {
        int64_t dim = t->dims[d] ? t->dims[d] : 1;
        idx[d] = i % dim;
        i /= dim;
    }
}

static int64_t
idiv(int64_t a, int64_t b)
{
    if (b == 0)
        return 0;
    if (a == INT64_MIN && b == -1)
        return INT64_MIN;
    return a / b;
}

static int64_t
imod(int64_t a, int64_t b, bool fmod_)
{
    if (b == 0 || (a == INT64_MIN && b == -1))
        return 0;
    int64_t r = a % b;
    if (!fmod_ && r != 0 && ((r < 0) != (b < 0)))
        r += b;
    return r;
}

static int64_t
ipow(int64_t b, int64_t e)
{
    if (e < 0)
        return b == 1 ? 1 : (b == -1 ? (e & 1 ? -1 : 1) : 0);
    uint64_t r = 1, x = (uint64_t)b;
    while (e) {
        if (e & 1)
            r *= x;
        x *= x;
        e >>= 1;
    }
    return (int64_t)r;
}

static int64_t
iwrap_add(int64_t a, int64_t b)
{
    return (int64_t)((uint64_t)a + (uint64_t)b);
}

static int64_t
iwrap_mul(int64_t a, int64_t b)
{
    return (int64_t)((uint64_t)a * (uint64_t)b);
}

static enum npu_status
binary(const struct npu_node *n, const struct npu_tensor *a, const struct npu_tensor *b,
       struct npu_tensor *o)
{
    int64_t cnt = numel(o), idx[NPU_MAX_DIMS];
    bool isint = !npu_dtype_is_float(a->dtype);
    bool fm = npu_node_int(n, "fmod", 0) != 0;
    for (int64_t i = 0; i < cnt; i++) {
        unravel(i, o, idx);
        int64_t ia = ir_bcast_offset(a, idx, o->ndim), ib = ir_bcast_offset(b, idx, o->ndim);
        if (isint && n->op != NPU_OP_POW) {
            int64_t x = npu_dtype_load_i64(a->dtype, a->data, ia);
            int64_t y = npu_dtype_load_i64(b->dtype, b->data, ib);
            int64_t r;
            switch (n->op) {
            case NPU_OP_ADD:
            case NPU_OP_SUM: r = iwrap_add(x, y); break;
            case NPU_OP_SUB: r = iwrap_add(x, -(uint64_t)y); break;
            case NPU_OP_MUL: r = iwrap_mul(x, y); break;
            case NPU_OP_DIV: r = idiv(x, y); break;
            case NPU_OP_MOD: r = imod(x, y, fm); break;
            case NPU_OP_MAX: r = x > y ? x : y; break;
            case NPU_OP_MIN: r = x < y ? x : y; break;
            case NPU_OP_EQUAL: r = x == y; break;
            case NPU_OP_LESS: r = x < y; break;
            case NPU_OP_GREATER: r = x > y; break;
            case NPU_OP_LESS_OR_EQUAL: r = x <= y; break;
            case NPU_OP_GREATER_OR_EQUAL: r = x >= y; break;
            case NPU_OP_AND: r = x && y; break;
            case NPU_OP_OR: r = x || y; break;
            case NPU_OP_XOR: r = !x != !y; break;
            default: return NPU_ERR_UNSUPPORTED;
            }
            ir_store_i64(o->dtype, o->data, i, r);
        } else {
            double x = npu_dtype_load_f64(a->dtype, a->data, ia);
            double y = npu_dtype_load_f64(b->dtype, b->data, ib);
            double r;
            if (isint && n->op == NPU_OP_POW) {
                ir_store_i64(o->dtype, o->data, i,
                             ipow(npu_dtype_load_i64(a->dtype, a->data, ia), ir_f64_to_i64(y)));
                continue;
            }
            switch (n->op) {
            case NPU_OP_ADD:
            case NPU_OP_SUM: r = x + y; break;
            case NPU_OP_SUB: r = x - y; break;
            case NPU_OP_MUL: r = x * y; break;
            case NPU_OP_DIV: r = x / y; break;
            case NPU_OP_POW: r = pow(x, y); break;
            case NPU_OP_MOD: r = fm ? fmod(x, y) : x - floor(x / y) * y; break;
            case NPU_OP_MAX: r = (x != x || y != y) ? NAN : fmax(x, y); break;
            case NPU_OP_MIN: r = (x != x || y != y) ? NAN : fmin(x, y); break;
            case NPU_OP_EQUAL: r = x == y; break;
            case NPU_OP_LESS: r = x < y; break;
            case NPU_OP_GREATER: r = x > y; break;
            case NPU_OP_LESS_OR_EQUAL: r = x <= y; break;
            case NPU_OP_GREATER_OR_EQUAL: r = x >= y; break;
            default: return NPU_ERR_UNSUPPORTED;
            }
            ir_store_f64(o->dtype, o->data, i, r);
        }
    }
    return NPU_OK;
}

static enum npu_status
unary(const struct npu_node *n, const struct npu_tensor *a, struct npu_tensor *o)
{
    int64_t cnt = numel(o);
    bool isint = !npu_dtype_is_float(a->dtype);
    for (int64_t i = 0; i < cnt; i++) {
        if (n->op == NPU_OP_CAST || n->op == NPU_OP_CAST_LIKE) {
            if (npu_dtype_is_float(a->dtype) && !npu_dtype_is_float(o->dtype) &&
                o->dtype != NPU_DTYPE_BOOL) {
                double d = npu_dtype_load_f64(a->dtype, a->data, i);
                ir_store_i64(o->dtype, o->data, i, ir_f64_to_i64(trunc(d)));
            } else if (isint) {
                ir_store_i64(o->dtype, o->data, i, npu_dtype_load_i64(a->dtype, a->data, i));
            } else {
                ir_store_f64(o->dtype, o->data, i, npu_dtype_load_f64(a->dtype, a->data, i));
            }
            continue;
        }
        if (isint) {
            int64_t x = npu_dtype_load_i64(a->dtype, a->data, i), r;
            switch (n->op) {
            case NPU_OP_NEG: r = (int64_t) - (uint64_t)x; break;
            case NPU_OP_ABS: r = x < 0 ? (int64_t) - (uint64_t)x : x; break;
            case NPU_OP_RELU: r = x > 0 ? x : 0; break;
            case NPU_OP_SIGN: r = (x > 0) - (x < 0); break;
            case NPU_OP_NOT: r = !x; break;
            case NPU_OP_IDENTITY:
            case NPU_OP_DROPOUT: r = x; break;
            default: return NPU_ERR_UNSUPPORTED;
            }
            ir_store_i64(o->dtype, o->data, i, r);
        } else {
            double x = npu_dtype_load_f64(a->dtype, a->data, i), r;
            switch (n->op) {
            case NPU_OP_NEG: r = -x; break;
            case NPU_OP_ABS: r = fabs(x); break;
            case NPU_OP_RELU: r = x > 0 ? x : 0; break;
            case NPU_OP_SIGN: r = (x > 0) - (x < 0); break;
            case NPU_OP_IDENTITY:
            case NPU_OP_DROPOUT: r = x; break;
            case NPU_OP_SQRT: r = sqrt(x); break;
            case NPU_OP_EXP: r = exp(x); break;
            case NPU_OP_LOG: r = log(x); break;
            case NPU_OP_RECIPROCAL: r = 1.0 / x; break;
            case NPU_OP_FLOOR: r = floor(x); break;
            case NPU_OP_CEIL: r = ceil(x); break;
            case NPU_OP_ROUND: r = nearbyint(x); break;
            case NPU_OP_SIGMOID: r = 1.0 / (1.0 + exp(-x)); break;
            case NPU_OP_TANH: r = tanh(x); break;
            case NPU_OP_ERF: r = erf(x); break;
            case NPU_OP_SIN: r = sin(x); break;
            case NPU_OP_COS: r = cos(x); break;
            default: return NPU_ERR_UNSUPPORTED;
            }
            ir_store_f64(o->dtype, o->data, i, r);
        }
    }
    return NPU_OK;
}

static void
copy_elem(const struct npu_tensor *src, int64_t si, struct npu_tensor *dst, int64_t di)
{
    size_t es = npu_dtype_size(src->dtype);
    memcpy((char *)dst->data + di * (int64_t)es, (const char *)src->data + si * (int64_t)es, es);
}

static enum npu_status
eval_gather(const struct npu_node *n, const struct npu_tensor *x, const struct npu_tensor *ix,
            struct npu_tensor *o)
{
    int64_t a = npu_node_int(n, "axis", 0);
    if (a < 0)
        a += x->ndim;
    int64_t outer = 1, inner = 1, ni = numel(ix), dim = x->dims[a];
    for (int i = 0; i < a; i++)
        outer *= x->dims[i];
    for (int i = (int)a + 1; i < x->ndim; i++)
        inner *= x->dims[i];
    int64_t k = 0;
    for (int64_t p = 0; p < outer; p++)
        for (int64_t j = 0; j < ni; j++) {
            int64_t id = npu_dtype_load_i64(ix->dtype, ix->data, j);
            if (id < 0)
                id += dim;
            if (id < 0 || id >= dim)
                return NPU_ERR_INVALID;
            for (int64_t q = 0; q < inner; q++)
                copy_elem(x, (p * dim + id) * inner + q, o, k++);
        }
    return NPU_OK;
}

static enum npu_status
eval_concat(const struct npu_node *n, const struct npu_tensor *const *in, struct npu_tensor *o)
{
    int64_t a = npu_node_int(n, "axis", 0);
    if (a < 0)
        a += o->ndim;
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < a; i++)
        outer *= o->dims[i];
    for (int i = (int)a + 1; i < o->ndim; i++)
        inner *= o->dims[i];
    int64_t k = 0;
    for (int64_t p = 0; p < outer; p++)
        for (int j = 0; j < n->nin; j++) {
            int64_t blk = in[j]->dims[a] * inner;
            for (int64_t q = 0; q < blk; q++)
                copy_elem(in[j], p * blk + q, o, k++);
        }
    return NPU_OK;
}

/* Generic strided gather: out[idx] = in[start + idx*step] per axis. */
static void
strided_copy(const struct npu_tensor *x, const int64_t *start, const int64_t *step,
             struct npu_tensor *o)
{
    int64_t st[NPU_MAX_DIMS], idx[NPU_MAX_DIMS], cnt = numel(o);
    ir_strides(x, st);
    for (int64_t i = 0; i < cnt; i++) {
        unravel(i, o, idx);
        int64_t off = 0;
        for (int d = 0; d < x->ndim; d++)
            off += (start[d] + idx[d] * step[d]) * st[d];
        copy_elem(x, off, o, i);
    }
}

static enum npu_status
eval_slice(const struct npu_node *n, const struct npu_tensor *const *in, struct npu_tensor *o)
{
    const struct npu_tensor *x = in[0];
    int64_t start[NPU_MAX_DIMS] = {0}, step[NPU_MAX_DIMS];
    for (int d = 0; d < NPU_MAX_DIMS; d++)
        step[d] = 1;
    int64_t ns = numel(in[1]);
    for (int64_t i = 0; i < ns; i++) {
        int64_t a = n->nin > 3 && in[3] ? npu_dtype_load_i64(in[3]->dtype, in[3]->data, i) : i;
        if (a < 0)
            a += x->ndim;
        int64_t sp = n->nin > 4 && in[4] ? npu_dtype_load_i64(in[4]->dtype, in[4]->data, i) : 1;
        int64_t s = npu_dtype_load_i64(in[1]->dtype, in[1]->data, i), dim = x->dims[a];
        if (s < 0)
            s = s < -dim ? 0 : s + dim;
        s = sp > 0 ? NPU_MIN(s, dim) : NPU_MIN(s, dim - 1);
        start[a] = s;
        step[a] = sp;
    }
    strided_copy(x, start, step, o);
    return NPU_OK;
}

static enum npu_status
eval_transpose(const struct npu_node *n, const struct npu_tensor *x, struct npu_tensor *o)
{
    size_t cnt;
    const int64_t *perm = npu_node_ints(n, "perm", &cnt);
    int64_t st[NPU_MAX_DIMS], idx[NPU_MAX_DIMS], total = numel(o);
    ir_strides(x, st);
    for (int64_t i = 0; i < total; i++) {
        unravel(i, o, idx);
        int64_t off = 0;
        for (int d = 0; d < o->ndim; d++)
            off += idx[d] * st[perm ? perm[d] : o->ndim - 1 - d];
        copy_elem(x, off, o, i);
    }
    return NPU_OK;
}

static enum npu_status
eval_reduce(const struct npu_node *n, const struct npu_tensor *const *in, struct npu_tensor *o)
{
    const struct npu_tensor *x = in[0];
    bool red[NPU_MAX_DIMS] = {0};
    int64_t na = n->nin > 1 && in[1] ? numel(in[1]) : 0;
    size_t nattr = 0; /* the opset < 18 form: axes as an attribute (shape inference's rule) */
    const int64_t *attr = na ? NULL : npu_node_ints(n, "axes", &nattr);
    if (!na)
        na = (int64_t)nattr;
    if (na == 0 && npu_node_int(n, "noop_with_empty_axes", 0)) {
        memcpy(o->data, x->data, (size_t)npu_tensor_nbytes(x));
        return NPU_OK;
    }
    for (int d = 0; d < x->ndim; d++)
        red[d] = na == 0;
    for (int64_t i = 0; i < na; i++) {
        int64_t a = attr ? attr[i] : npu_dtype_load_i64(in[1]->dtype, in[1]->data, i);
        if (a < -x->ndim || a >= x->ndim)
            return NPU_ERR_INVALID; /* shape inference refused it already */
        red[a < 0 ? a + x->ndim : a] = true;
    }
    int64_t on = numel(o), xn = numel(x), idx[NPU_MAX_DIMS];
    double *acc = calloc((size_t)(on ? on : 1), sizeof(double));
    int64_t *cntv = calloc((size_t)(on ? on : 1), sizeof(int64_t));
    if (!acc || !cntv) {
        free(acc);
        free(cntv);
        return NPU_ERR_NOMEM;
    }
    for (int64_t i = 0; i < xn; i++) {
        unravel(i, x, idx);
        int64_t oi = 0;
        for (int d = 0; d < x->ndim; d++)
            oi = oi * (red[d] ? 1 : x->dims[d]) + (red[d] ? 0 : idx[d]);
        double v = npu_dtype_load_f64(x->dtype, x->data, i);
        switch (n->op) {
        case NPU_OP_REDUCE_PROD: acc[oi] = cntv[oi] ? acc[oi] * v : v; break;
        case NPU_OP_REDUCE_MAX: acc[oi] = cntv[oi] ? fmax(acc[oi], v) : v; break;
        case NPU_OP_REDUCE_MIN: acc[oi] = cntv[oi] ? fmin(acc[oi], v) : v; break;
        default: acc[oi] += v; break;
        }
        cntv[oi]++;
    }
    for (int64_t i = 0; i < on; i++) {
        double v = acc[i];
        if (n->op == NPU_OP_REDUCE_MEAN)
            v = cntv[i] ? v / (double)cntv[i] : NAN;
        else if (n->op == NPU_OP_REDUCE_PROD && !cntv[i])
            v = 1;
        if (npu_dtype_is_float(o->dtype))
            ir_store_f64(o->dtype, o->data, i, v);
        else
            ir_store_i64(o->dtype, o->data, i, ir_f64_to_i64(v));
    }
    free(acc);
    free(cntv);
    return NPU_OK;
}

enum npu_status
npu_eval_node(const struct npu_node *n, const struct npu_tensor *const *in,
              struct npu_tensor *const *out)
{
    struct npu_tensor *o = out[0];
    switch (n->op) {
    case NPU_OP_ADD:
    case NPU_OP_SUB:
    case NPU_OP_MUL:
    case NPU_OP_DIV:
    case NPU_OP_POW:
    case NPU_OP_MOD:
    case NPU_OP_EQUAL:
    case NPU_OP_LESS:
    case NPU_OP_GREATER:
    case NPU_OP_LESS_OR_EQUAL:
    case NPU_OP_GREATER_OR_EQUAL:
    case NPU_OP_AND:
    case NPU_OP_OR:
    case NPU_OP_XOR: return binary(n, in[0], in[1], o);
    case NPU_OP_MAX:
    case NPU_OP_MIN:
    case NPU_OP_SUM:
        if (n->nin == 1)
            break;
        if (n->nin != 2)
            return NPU_ERR_UNSUPPORTED;
        return binary(n, in[0], in[1], o);
    case NPU_OP_WHERE: {
        int64_t cnt = numel(o), idx[NPU_MAX_DIMS];
        for (int64_t i = 0; i < cnt; i++) {
            unravel(i, o, idx);
            int64_t c = ir_bcast_offset(in[0], idx, o->ndim);
            const struct npu_tensor *src = ((const uint8_t *)in[0]->data)[c] ? in[1] : in[2];
            copy_elem(src, ir_bcast_offset(src, idx, o->ndim), o, i);
        }
        return NPU_OK;
    }
    case NPU_OP_NEG:
    case NPU_OP_ABS:
    case NPU_OP_RELU:
    case NPU_OP_SIGN:
    case NPU_OP_NOT:
    case NPU_OP_SQRT:
    case NPU_OP_EXP:
    case NPU_OP_LOG:
    case NPU_OP_RECIPROCAL:
    case NPU_OP_FLOOR:
    case NPU_OP_CEIL:
    case NPU_OP_ROUND:
    case NPU_OP_SIGMOID:
    case NPU_OP_TANH:
    case NPU_OP_ERF:
    case NPU_OP_SIN:
    case NPU_OP_COS:
    case NPU_OP_CAST:
    case NPU_OP_CAST_LIKE: return unary(n, in[0], o);
    case NPU_OP_IDENTITY:
    case NPU_OP_DROPOUT:
    case NPU_OP_RESHAPE:
    case NPU_OP_FLATTEN:
    case NPU_OP_SQUEEZE:
    case NPU_OP_UNSQUEEZE:
        if (n->op == NPU_OP_DROPOUT && n->nout > 1)
            memset(out[1]->data, 1, (size_t)numel(out[1]));
        break;
    case NPU_OP_CONCAT: return eval_concat(n, in, o);
    case NPU_OP_GATHER: return eval_gather(n, in[0], in[1], o);
    case NPU_OP_SLICE: return eval_slice(n, in, o);
    case NPU_OP_TRANSPOSE: return eval_transpose(n, in[0], o);
    case NPU_OP_EXPAND:
    case NPU_OP_TILE: {
        int64_t cnt = numel(o), idx[NPU_MAX_DIMS];
        const struct npu_tensor *x = in[0];
        for (int64_t i = 0; i < cnt; i++) {
            unravel(i, o, idx);
            if (n->op == NPU_OP_TILE) {
                int64_t st[NPU_MAX_DIMS], off = 0;
                ir_strides(x, st);
                for (int d = 0; d < x->ndim; d++)
                    off += (idx[d] % x->dims[d]) * st[d];
                copy_elem(x, off, o, i);
            } else {
                copy_elem(x, ir_bcast_offset(x, idx, o->ndim), o, i);
            }
        }
        return NPU_OK;
    }
    case NPU_OP_CONSTANT_OF_SHAPE: {
        const struct npu_attr *v = npu_node_attr(n, "value");
        int64_t cnt = numel(o);
        size_t es = npu_dtype_size(o->dtype);
        for (int64_t i = 0; i < cnt; i++) {
            if (v)
                memcpy((char *)o->data + i * (int64_t)es, v->t->data, es);
            else
                memset((char *)o->data + i * (int64_t)es, 0, es);
        }
        return NPU_OK;
    }
    case NPU_OP_RANGE: {
        int64_t cnt = numel(o);
        if (npu_dtype_is_int(o->dtype)) {
            int64_t s = npu_dtype_load_i64(in[0]->dtype, in[0]->data, 0);
            int64_t d = npu_dtype_load_i64(in[2]->dtype, in[2]->data, 0);
            for (int64_t i = 0; i < cnt; i++)
                ir_store_i64(o->dtype, o->data, i, iwrap_add(s, iwrap_mul(i, d)));
        } else {
            double s = npu_dtype_load_f64(in[0]->dtype, in[0]->data, 0);
            double d = npu_dtype_load_f64(in[2]->dtype, in[2]->data, 0);
            for (int64_t i = 0; i < cnt; i++)
                ir_store_f64(o->dtype, o->data, i, s + (double)i * d);
        }
        return NPU_OK;
    }
    case NPU_OP_SPLIT: {
        int64_t a = npu_node_int(n, "axis", 0);
        const struct npu_tensor *x = in[0];
        if (a < 0)
            a += x->ndim;
        int64_t start[NPU_MAX_DIMS] = {0}, step[NPU_MAX_DIMS];
        for (int d = 0; d < NPU_MAX_DIMS; d++)
            step[d] = 1;
        for (int k = 0; k < n->nout; k++) {
            strided_copy(x, start, step, out[k]);
            start[a] += out[k]->dims[a];
        }
        return NPU_OK;
    }
    case NPU_OP_REDUCE_SUM:
    case NPU_OP_REDUCE_PROD:
    case NPU_OP_REDUCE_MAX:
    case NPU_OP_REDUCE_MIN:
    case NPU_OP_REDUCE_MEAN: return eval_reduce(n, in, o);
    default: return NPU_ERR_UNSUPPORTED;
    }
    /* Copy of input 0 (same element count) */
    if (in[0]->dtype != o->dtype)
        return NPU_ERR_UNSUPPORTED;
    memcpy(o->data, in[0]->data, (size_t)npu_tensor_nbytes(o));
    return NPU_OK;
}
