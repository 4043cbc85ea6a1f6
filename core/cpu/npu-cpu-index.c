/* SPDX-License-Identifier: MIT */
/*
 * npu-cpu-index.c: data-movement ops that exporters emit for indexing code
 * that has no plainer ONNX form: DepthToSpace / SpaceToDepth (torch's
 * pixel_shuffle and space-to-depth stems), ScatterND (every `x[..., i] = v`
 * slice assignment torch exports), ScatterElements (`scatter_`) and TopK
 * (`torch.topk`, routers and detection heads). Semantics are ONNX's (opset
 * 13-21); indices may be negative (counted from the end) and are checked.
 */
#include <stdlib.h>
#include <string.h>

#include "npu-cpu-internal.h"

/* ---- DepthToSpace / SpaceToDepth ------------------------------------------------------------ */

/* Moves blocks between the channel dim and the spatial dims of an NCHW tensor.
 * depth_to_space: out[n, c, h*b+i, w*b+j] = in[n, src_c, h, w] with
 * src_c = (i*b + j)*C' + c (DCR) or c*b*b + i*b + j (CRD), C' = C/(b*b).
 * space_to_depth is its DCR inverse: out[n, (i*b+j)*C + c, h, w] = in[n, c, h*b+i, w*b+j]. */
static enum npu_status
depth_space(CPU_KERNEL_ARGS, bool to_space)
{
    (void)nin;
    (void)nout;
    const struct npu_tensor *x = in[0];
    if (x->ndim != 4)
        return KINVAL("input must be NCHW (rank 4), not rank %d", x->ndim);
    int64_t b = npu_attrs_int(attrs, "blocksize", 0);
    if (b < 1 || b > 4096)
        return KINVAL("blocksize %lld must be in [1, 4096]", (long long)b);
    const char *mode = npu_attrs_string(attrs, "mode", "DCR");
    bool crd = false;
    if (to_space) {
        if (!strcmp(mode, "CRD"))
            crd = true;
        else if (strcmp(mode, "DCR"))
            return KINVAL("mode '%s' is neither DCR nor CRD", mode);
    }
    int64_t N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3];
    int64_t od[4];
    if (to_space) {
        if (C % (b * b))
            return KINVAL("channels %lld are not a multiple of blocksize^2 (%lld)", (long long)C,
                          (long long)(b * b));
        od[0] = N, od[1] = C / (b * b), od[2] = H * b, od[3] = W * b;
    } else {
        if (H % b || W % b)
            return KINVAL("height %lld and width %lld must be multiples of blocksize %lld",
                          (long long)H, (long long)W, (long long)b);
        od[0] = N, od[1] = C * b * b, od[2] = H / b, od[3] = W / b;
    }
    CPU_TRY(cpu_check_out(ctx, out[0], x->dtype, 4, od));
    size_t es = cpu_esize(x);
    const char *src = x->data;
    char *dst = out[0]->data;
    /* Walk the space-side tensor (the output of DepthToSpace, the input of
     * SpaceToDepth): its position (n, c, y, xw) pairs with the depth-side
     * element (n, cd, y/b, xw/b). */
    const int64_t *sd = to_space ? od : x->dims; /* space-side dims */
    int64_t Cs = sd[1], Hs = sd[2], Ws = sd[3], Hd = Hs / b, Wd = Ws / b, Cd = Cs * b * b;
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < Cs; c++)
            for (int64_t y = 0; y < Hs; y++)
                for (int64_t xw = 0; xw < Ws; xw++) {
                    int64_t i = y % b, j = xw % b;
                    int64_t cd = crd ? (c * b + i) * b + j : (i * b + j) * Cs + c;
                    int64_t s = ((n * Cs + c) * Hs + y) * Ws + xw;
                    int64_t d = ((n * Cd + cd) * Hd + y / b) * Wd + xw / b;
                    if (to_space)
                        memcpy(dst + (size_t)s * es, src + (size_t)d * es, es);
                    else
                        memcpy(dst + (size_t)d * es, src + (size_t)s * es, es);
                }
    return NPU_OK;
}

enum npu_status
cpu_k_depth_to_space(CPU_KERNEL_ARGS)
{
    return depth_space(ctx, attrs, in, nin, out, nout, true);
}

enum npu_status
cpu_k_space_to_depth(CPU_KERNEL_ARGS)
{
    return depth_space(ctx, attrs, in, nin, out, nout, false);
}

/* ---- Scatter -------------------------------------------------------------------------------- */

enum scatter_red { RED_NONE, RED_ADD, RED_MUL, RED_MAX, RED_MIN };

static enum npu_status
scatter_reduction(struct npu_cpu_ctx *ctx, const struct npu_attrs *attrs, enum npu_dtype dt,
                  enum scatter_red *r)
{
    const char *s = npu_attrs_string(attrs, "reduction", "none");
    static const char *const names[] = {"none", "add", "mul", "max", "min"};
    for (int i = 0; i < 5; i++)
        if (!strcmp(s, names[i])) {
            *r = (enum scatter_red)i;
            if (*r != RED_NONE && dt != NPU_DTYPE_FP32 && dt != NPU_DTYPE_FP64 &&
                dt != NPU_DTYPE_INT32 && dt != NPU_DTYPE_INT64)
                return KUNSUP("reduction '%s' on %s data", s, npu_dtype_name(dt));
            return NPU_OK;
        }
    return KINVAL("unknown reduction '%s'", s);
}

#define RED_APPLY(T)                                                                               \
    do {                                                                                           \
        T *d_ = (T *)dst, u_ = *(const T *)upd;                                                    \
        switch (r) {                                                                               \
        case RED_ADD: *d_ += u_; break;                                                            \
        case RED_MUL: *d_ *= u_; break;                                                            \
        case RED_MAX: *d_ = *d_ > u_ ? *d_ : u_; break;                                            \
        case RED_MIN: *d_ = *d_ < u_ ? *d_ : u_; break;                                            \
        case RED_NONE: *d_ = u_; break;                                                            \
        }                                                                                          \
    } while (0)

/* Combines one element of updates into dst (any dtype for RED_NONE). */
static void
scatter_one(enum scatter_red r, enum npu_dtype dt, size_t es, void *dst, const void *upd)
{
    if (r == RED_NONE) {
        memcpy(dst, upd, es);
        return;
    }
    switch (dt) {
    case NPU_DTYPE_FP32: RED_APPLY(float); break;
    case NPU_DTYPE_FP64: RED_APPLY(double); break;
    case NPU_DTYPE_INT32: {
        /* wrap-around integer arithmetic, as ONNX Runtime computes it */
        int32_t *d = dst, u = *(const int32_t *)upd;
        if (r == RED_ADD)
            *d = (int32_t)((uint32_t)*d + (uint32_t)u);
        else if (r == RED_MUL)
            *d = (int32_t)((uint32_t)*d * (uint32_t)u);
        else
            *d = r == RED_MAX ? (*d > u ? *d : u) : (*d < u ? *d : u);
        break;
    }
    case NPU_DTYPE_INT64: {
        int64_t *d = dst, u = *(const int64_t *)upd;
        if (r == RED_ADD)
            *d = (int64_t)((uint64_t)*d + (uint64_t)u);
        else if (r == RED_MUL)
            *d = (int64_t)((uint64_t)*d * (uint64_t)u);
        else
            *d = r == RED_MAX ? (*d > u ? *d : u) : (*d < u ? *d : u);
        break;
    }
    default: break; /* refused by scatter_reduction */
    }
}

/* ScatterND(data, indices[..., k], updates): out = data; for each index tuple
 * t (indices without its last dim), the block out[t, ...] (data.dims[k:]) is
 * set to (or reduced with) updates[t', ...]. Later tuples win with "none". */
enum npu_status
cpu_k_scatter_nd(CPU_KERNEL_ARGS)
{
    (void)nin;
    (void)nout;
    const struct npu_tensor *x = in[0], *ind = in[1], *upd = in[2];
    if (ind->dtype != NPU_DTYPE_INT64 && ind->dtype != NPU_DTYPE_INT32)
        return KINVAL("indices must be int32 or int64, not %s", npu_dtype_name(ind->dtype));
    if (upd->dtype != x->dtype)
        return KINVAL("updates are %s, data %s", npu_dtype_name(upd->dtype),
                      npu_dtype_name(x->dtype));
    if (ind->ndim < 1)
        return KINVAL("indices must have rank >= 1");
    int64_t k = ind->dims[ind->ndim - 1];
    if (k < 1 || k > x->ndim)
        return KINVAL("index tuples of %lld entries for data of rank %d", (long long)k, x->ndim);
    /* updates.shape == indices.shape[:-1] + data.shape[k:] */
    int un = ind->ndim - 1 + x->ndim - (int)k;
    bool ok = upd->ndim == un;
    for (int i = 0; ok && i < ind->ndim - 1; i++)
        ok = upd->dims[i] == ind->dims[i];
    for (int i = 0; ok && i < x->ndim - (int)k; i++)
        ok = upd->dims[ind->ndim - 1 + i] == x->dims[k + i];
    if (!ok)
        return KINVAL("updates shape is not indices.shape[:-1] + data.shape[%lld:]", (long long)k);
    enum scatter_red r;
    CPU_TRY(scatter_reduction(ctx, attrs, x->dtype, &r));
    CPU_TRY(cpu_check_out(ctx, out[0], x->dtype, x->ndim, x->dims));
    size_t es = cpu_esize(x);
    memcpy(out[0]->data, x->data, (size_t)cpu_numel(x) * es);
    int64_t xs[NPU_MAX_DIMS];
    cpu_row_strides(x->dims, x->ndim, xs);
    int64_t block = cpu_dims_prod(x->dims, (int)k, x->ndim);
    int64_t tuples = cpu_dims_prod(ind->dims, 0, ind->ndim - 1);
    char *o = out[0]->data;
    const char *u = upd->data;
    for (int64_t t = 0; t < tuples; t++) {
        int64_t off = 0;
        for (int64_t a = 0; a < k; a++) {
            int64_t v = cpu_scalar_i64(ind, t * k + a), dim = x->dims[a];
            if (v < -dim || v >= dim)
                return KINVAL("index %lld out of range for dim %lld of size %lld", (long long)v,
                              (long long)a, (long long)dim);
            off += (v < 0 ? v + dim : v) * xs[a];
        }
        for (int64_t e = 0; e < block; e++)
            scatter_one(r, x->dtype, es, o + (size_t)(off + e) * es,
                        u + (size_t)(t * block + e) * es);
    }
    return NPU_OK;
}

/* ScatterElements(data, indices, updates, axis): out = data; for each position
 * p of indices, out[p with p[axis] = indices[p]] = updates[p] (or reduced). */
enum npu_status
cpu_k_scatter_elements(CPU_KERNEL_ARGS)
{
    (void)nin;
    (void)nout;
    const struct npu_tensor *x = in[0], *ind = in[1], *upd = in[2];
    int axis, rk = x->ndim;
    if (rk < 1)
        return KINVAL("data must have rank >= 1");
    CPU_TRY(cpu_axis(ctx, npu_attrs_int(attrs, "axis", 0), rk, &axis));
    if (ind->dtype != NPU_DTYPE_INT64 && ind->dtype != NPU_DTYPE_INT32)
        return KINVAL("indices must be int32 or int64, not %s", npu_dtype_name(ind->dtype));
    if (upd->dtype != x->dtype)
        return KINVAL("updates are %s, data %s", npu_dtype_name(upd->dtype),
                      npu_dtype_name(x->dtype));
    if (!cpu_same_dims(ind, upd) || ind->ndim != rk)
        return KINVAL("indices and updates must have one shape, of the data's rank");
    for (int d = 0; d < rk; d++)
        if (d != axis && ind->dims[d] > x->dims[d])
            return KINVAL("indices dim %d (%lld) exceeds data's (%lld)", d, (long long)ind->dims[d],
                          (long long)x->dims[d]);
    enum scatter_red r;
    CPU_TRY(scatter_reduction(ctx, attrs, x->dtype, &r));
    CPU_TRY(cpu_check_out(ctx, out[0], x->dtype, rk, x->dims));
    size_t es = cpu_esize(x);
    memcpy(out[0]->data, x->data, (size_t)cpu_numel(x) * es);
    int64_t xs[NPU_MAX_DIMS], pos[NPU_MAX_DIMS] = {0}, n = cpu_numel(ind);
    cpu_row_strides(x->dims, rk, xs);
    char *o = out[0]->data;
    const char *u = upd->data;
    for (int64_t e = 0; e < n; e++) {
        int64_t v = cpu_scalar_i64(ind, e), dim = x->dims[axis];
        if (v < -dim || v >= dim)
            return KINVAL("index %lld out of range for a dim of %lld", (long long)v,
                          (long long)dim);
        int64_t off = 0;
        for (int d = 0; d < rk; d++)
            off += (d == axis ? (v < 0 ? v + dim : v) : pos[d]) * xs[d];
        scatter_one(r, x->dtype, es, o + (size_t)off * es, u + (size_t)e * es);
        cpu_index_next(pos, ind->dims, rk);
    }
    return NPU_OK;
}

/* ---- TopK ----------------------------------------------------------------------------------- */

struct topk_item {
    double v;
    int64_t i;
};

/* Larger first; NaN counts as the largest (as NumPy and ONNX Runtime order it);
 * equal values keep the lower index first (ONNX: "lower index appears first"). */
static int
topk_cmp_largest(const void *pa, const void *pb)
{
    const struct topk_item *a = pa, *b = pb;
    bool na = a->v != a->v, nb = b->v != b->v;
    if (na != nb)
        return na ? -1 : 1;
    if (!na && a->v != b->v)
        return a->v > b->v ? -1 : 1;
    return a->i < b->i ? -1 : a->i > b->i;
}

static int
topk_cmp_smallest(const void *pa, const void *pb)
{
    const struct topk_item *a = pa, *b = pb;
    bool na = a->v != a->v, nb = b->v != b->v;
    if (na != nb)
        return na ? 1 : -1;
    if (!na && a->v != b->v)
        return a->v < b->v ? -1 : 1;
    return a->i < b->i ? -1 : a->i > b->i;
}

/* TopK(X, K) -> Values, Indices (int64) along axis: the K largest (or
 * smallest) in order. Output 0 keeps X's dtype (compared through double:
 * exact for every float and for integers below 2^53; copied unchanged). */
enum npu_status
cpu_k_topk(CPU_KERNEL_ARGS)
{
    (void)nin;
    const struct npu_tensor *x = in[0];
    int axis;
    if (x->ndim < 1)
        return KINVAL("input must have rank >= 1");
    CPU_TRY(cpu_axis(ctx, npu_attrs_int(attrs, "axis", -1), x->ndim, &axis));
    if (cpu_numel(in[1]) != 1 || !npu_dtype_is_int(in[1]->dtype))
        return KINVAL("K must be a one-element integer tensor");
    int64_t K = cpu_scalar_i64(in[1], 0), L = x->dims[axis];
    if (K < 0 || K > L)
        return KINVAL("K = %lld for an axis of %lld", (long long)K, (long long)L);
    /* every numeric type (opset 11+ lists the unsigned ones too); values are
     * compared through double, copied as they are */
    if (x->dtype != NPU_DTYPE_FP32 && x->dtype != NPU_DTYPE_FP64 && !npu_dtype_is_int(x->dtype))
        return KUNSUP("TopK of %s", npu_dtype_name(x->dtype));
    int64_t od[NPU_MAX_DIMS];
    memcpy(od, x->dims, sizeof(int64_t) * (size_t)x->ndim);
    od[axis] = K;
    CPU_TRY(cpu_check_out(ctx, out[0], x->dtype, x->ndim, od));
    if (nout > 1)
        CPU_TRY(cpu_check_out(ctx, out[1], NPU_DTYPE_INT64, x->ndim, od));
    bool largest = npu_attrs_int(attrs, "largest", 1) != 0;
    int64_t outer = cpu_dims_prod(x->dims, 0, axis),
            inner = cpu_dims_prod(x->dims, axis + 1, x->ndim);
    struct topk_item *it = malloc(sizeof(*it) * (size_t)(L ? L : 1));
    if (!it)
        return KNOMEM();
    for (int64_t a = 0; a < outer; a++)
        for (int64_t b = 0; b < inner; b++) {
            for (int64_t l = 0; l < L; l++) {
                it[l].v = cpu_scalar_f64(x, (a * L + l) * inner + b);
                it[l].i = l;
            }
            /* sorted=0 lets any order through; sorted order is one of them */
            qsort(it, (size_t)L, sizeof(*it), largest ? topk_cmp_largest : topk_cmp_smallest);
            for (int64_t k = 0; k < K; k++) {
                int64_t o = (a * K + k) * inner + b;
                int64_t src = (a * L + it[k].i) * inner + b;
                memcpy((char *)out[0]->data + (size_t)o * cpu_esize(x),
                       (const char *)x->data + (size_t)src * cpu_esize(x), cpu_esize(x));
                if (nout > 1)
                    ((int64_t *)out[1]->data)[o] = it[k].i;
            }
        }
    free(it);
    return NPU_OK;
}

/* ---- OneHot, GatherND ----------------------------------------------------------------------- */

/* OneHot(indices, depth, values[off, on], axis): out has a new dim of `depth`
 * at axis; indices in [-depth, depth) (negatives count from the end) get `on`,
 * everything else `off`; out-of-range indices give an all-`off` row (ONNX). */
enum npu_status
cpu_k_one_hot(CPU_KERNEL_ARGS)
{
    (void)nin;
    (void)nout;
    const struct npu_tensor *ind = in[0], *dep = in[1], *val = in[2];
    if (cpu_numel(dep) != 1)
        return KINVAL("depth must have one element");
    double dd = cpu_scalar_f64(dep, 0);
    if (!(dd >= 1) || dd > (double)(1 << 30))
        return KINVAL("depth %g out of range", dd);
    int64_t depth = (int64_t)dd;
    if (val->ndim != 1 || val->dims[0] != 2)
        return KINVAL("values must be [off, on]");
    if (ind->ndim + 1 > NPU_MAX_DIMS)
        return KINVAL("indices rank too large");
    int r = ind->ndim + 1, axis;
    CPU_TRY(cpu_axis(ctx, npu_attrs_int(attrs, "axis", -1), r, &axis));
    int64_t od[NPU_MAX_DIMS];
    for (int d = 0, k = 0; d < r; d++)
        od[d] = d == axis ? depth : ind->dims[k++];
    CPU_TRY(cpu_check_out(ctx, out[0], val->dtype, r, od));
    size_t es = cpu_esize(val);
    const char *off = val->data, *on = (const char *)val->data + es;
    int64_t outer = cpu_dims_prod(ind->dims, 0, axis),
            inner = cpu_dims_prod(ind->dims, axis, ind->ndim);
    char *o = out[0]->data;
    for (int64_t a = 0; a < outer; a++)
        for (int64_t d = 0; d < depth; d++)
            for (int64_t b = 0; b < inner; b++) {
                double iv = cpu_scalar_f64(ind, a * inner + b);
                int64_t k = (int64_t)iv;
                if (k < 0)
                    k += depth;
                bool hit = iv >= -dd && iv < dd && k == d;
                memcpy(o + (size_t)((a * depth + d) * inner + b) * es, hit ? on : off, es);
            }
    return NPU_OK;
}

/* GatherND(data, indices[..., k], batch_dims): for each index tuple the block
 * data[batch..., tuple, ...]; out = batch dims + indices.shape[b:-1] +
 * data.shape[b+k:]. */
enum npu_status
cpu_k_gather_nd(CPU_KERNEL_ARGS)
{
    (void)nin;
    (void)nout;
    const struct npu_tensor *x = in[0], *ind = in[1];
    if (ind->dtype != NPU_DTYPE_INT64 && ind->dtype != NPU_DTYPE_INT32)
        return KINVAL("indices must be int32 or int64, not %s", npu_dtype_name(ind->dtype));
    int64_t bd = npu_attrs_int(attrs, "batch_dims", 0);
    if (ind->ndim < 1 || bd < 0 || bd >= ind->ndim || bd >= x->ndim)
        return KINVAL("batch_dims %lld does not fit ranks %d and %d", (long long)bd, x->ndim,
                      ind->ndim);
    int64_t k = ind->dims[ind->ndim - 1];
    if (k < 1 || bd + k > x->ndim)
        return KINVAL("index tuples of %lld entries for data of rank %d", (long long)k, x->ndim);
    for (int i = 0; i < bd; i++)
        if (ind->dims[i] != x->dims[i])
            return KINVAL("batch dim %d differs between data and indices", i);
    int64_t od[NPU_MAX_DIMS];
    int r = 0;
    for (int i = 0; i < ind->ndim - 1; i++)
        od[r++] = ind->dims[i];
    for (int i = (int)(bd + k); i < x->ndim; i++) {
        if (r >= NPU_MAX_DIMS)
            return KINVAL("output rank too large");
        od[r++] = x->dims[i];
    }
    CPU_TRY(cpu_check_out(ctx, out[0], x->dtype, r, od));
    int64_t xs[NPU_MAX_DIMS];
    cpu_row_strides(x->dims, x->ndim, xs);
    int64_t batches = cpu_dims_prod(ind->dims, 0, (int)bd);
    int64_t per = cpu_dims_prod(ind->dims, (int)bd, ind->ndim - 1);
    int64_t block = cpu_dims_prod(x->dims, (int)(bd + k), x->ndim);
    size_t es = cpu_esize(x);
    char *o = out[0]->data;
    for (int64_t b = 0; b < batches; b++)
        for (int64_t t = 0; t < per; t++) {
            int64_t off = bd ? b * xs[bd - 1] : 0, tup = (b * per + t) * k;
            for (int64_t a = 0; a < k; a++) {
                int64_t v = cpu_scalar_i64(ind, tup + a), dim = x->dims[bd + a];
                if (v < -dim || v >= dim)
                    return KINVAL("index %lld out of range for dim %lld of size %lld", (long long)v,
                                  (long long)(bd + a), (long long)dim);
                off += (v < 0 ? v + dim : v) * xs[bd + a];
            }
            memcpy(o + (size_t)((b * per + t) * block) * es,
                   (const char *)x->data + (size_t)off * es, (size_t)block * es);
        }
    return NPU_OK;
}

/* npu.StateWrite(S, ROW, POS){axis}: out = S with ROW written at position POS (one int) along
 * axis; ROW spans n >= 1 entries of the axis, so POS must lie in 0 .. S.dims[axis] - n. */
enum npu_status
cpu_k_state_write(CPU_KERNEL_ARGS)
{
    (void)nin;
    (void)nout;
    const struct npu_tensor *s = in[0], *r = in[1], *p = in[2];
    int axis;
    CPU_TRY(cpu_axis(ctx, npu_attrs_int(attrs, "axis", 0), s->ndim, &axis));
    if (r->dtype != s->dtype || r->ndim != s->ndim)
        return KINVAL("the row (%s, rank %d) does not match the state (%s, rank %d)",
                      npu_dtype_name(r->dtype), r->ndim, npu_dtype_name(s->dtype), s->ndim);
    for (int i = 0; i < s->ndim; i++)
        if (i == axis ? r->dims[i] < 1 || r->dims[i] > s->dims[i] : r->dims[i] != s->dims[i])
            return KINVAL("row dim %d is %lld, the state's %lld", i, (long long)r->dims[i],
                          (long long)s->dims[i]);
    if ((p->dtype != NPU_DTYPE_INT64 && p->dtype != NPU_DTYPE_INT32) || cpu_numel(p) != 1)
        return KINVAL("the position must be one int32 or int64");
    int64_t pos = cpu_scalar_i64(p, 0), last = s->dims[axis] - r->dims[axis];
    if (pos < 0 || pos > last)
        return KINVAL("position %lld outside 0..%lld of axis %d (%lld entries, a row of %lld)",
                      (long long)pos, (long long)last, axis, (long long)s->dims[axis],
                      (long long)r->dims[axis]);
    CPU_TRY(cpu_check_out(ctx, out[0], s->dtype, s->ndim, s->dims));
    size_t es = cpu_esize(s);
    if (out[0]->data != s->data)
        memcpy(out[0]->data, s->data, (size_t)cpu_numel(s) * es);
    /* outer blocks (dims before the axis) of inner rows (the axis and after) */
    int64_t outer = cpu_dims_prod(s->dims, 0, axis),
            inner = cpu_dims_prod(s->dims, axis + 1, s->ndim);
    size_t sblk = (size_t)(s->dims[axis] * inner) * es, rblk = (size_t)(r->dims[axis] * inner) * es;
    char *o = out[0]->data;
    const char *u = r->data;
    for (int64_t b = 0; b < outer; b++)
        memcpy(o + (size_t)b * sblk + (size_t)(pos * inner) * es, u + (size_t)b * rblk, rblk);
    return NPU_OK;
}
