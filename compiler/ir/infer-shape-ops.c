/* SPDX-License-Identifier: MIT */
/*
 * infer-shape-ops.c: shape inference of the data movement and indexing ops:
 * Reshape, Slice, Concat, Split, Squeeze/Unsqueeze, Gather, Pad, Expand,
 * DepthToSpace/SpaceToDepth, Scatter, TopK, OneHot, GatherND, Tile, Range, and
 * Shape/Size (whose contents inference computes). The operands that size the
 * output (shape, starts/ends, pads, repeats, K, depth, ...) must have contents:
 * constants, or values computed at compile time (npu-infer.c).
 */
#include "infer-priv.h"

enum npu_status
ir_infer_reshape(struct npu_node *n)
{
    NEED_IN(0);
    NEED_DATA(1, "shape");
    const struct npu_tensor *x = ir_T(n, 0);
    int64_t s[NPU_MAX_DIMS];
    int r = ir_read_ints(n->in[1], s, NPU_MAX_DIMS);
    if (r < 0 || n->in[1]->t.ndim != 1)
        FAIL("shape must be an integer vector of at most %d entries", NPU_MAX_DIMS);
    bool allowzero = npu_node_int(n, "allowzero", 0) != 0;
    int neg = -1;
    int64_t known = 1;
    for (int i = 0; i < r; i++) {
        if (s[i] == 0 && !allowzero) {
            if (i >= x->ndim)
                FAIL("shape[%d] = 0 copies a dim the input does not have", i);
            s[i] = x->dims[i];
        }
        if (s[i] == -1) {
            if (neg >= 0)
                FAIL("shape has more than one -1");
            neg = i;
        } else if (s[i] < 0) {
            FAIL("shape[%d] = %lld is invalid", i, (long long)s[i]);
        } else {
            if (s[i] && known > INT64_MAX / s[i])
                FAIL("shape overflows");
            known *= s[i];
        }
    }
    int64_t total = npu_tensor_numel(x);
    if (neg >= 0) {
        if (known == 0 || total % known)
            FAIL("cannot infer the -1 dim: %lld elements into blocks of %lld", (long long)total,
                 (long long)known);
        s[neg] = total / known;
    } else if (known != total) {
        FAIL("shape holds %lld elements, input has %lld", (long long)known, (long long)total);
    }
    return ir_set_out(n, 0, x->dtype, r, s);
}

enum npu_status
ir_infer_slice(struct npu_node *n)
{
    NEED_IN(0);
    NEED_DATA(1, "starts");
    NEED_DATA(2, "ends");
    const struct npu_tensor *x = ir_T(n, 0);
    int64_t st[NPU_MAX_DIMS], en[NPU_MAX_DIMS], ax[NPU_MAX_DIMS], sp[NPU_MAX_DIMS];
    int ns = ir_read_ints(n->in[1], st, NPU_MAX_DIMS),
        ne = ir_read_ints(n->in[2], en, NPU_MAX_DIMS);
    if (ns < 0 || ne != ns)
        FAIL("starts and ends must be integer vectors of equal length <= %d", NPU_MAX_DIMS);
    for (int i = 0; i < ns; i++) {
        ax[i] = i;
        sp[i] = 1;
    }
    if (ir_T(n, 3)) {
        NEED_DATA(3, "axes");
        if (ir_read_ints(n->in[3], ax, NPU_MAX_DIMS) != ns)
            FAIL("axes must have as many entries as starts");
    }
    if (ir_T(n, 4)) {
        NEED_DATA(4, "steps");
        if (ir_read_ints(n->in[4], sp, NPU_MAX_DIMS) != ns)
            FAIL("steps must have as many entries as starts");
    }
    int64_t d[NPU_MAX_DIMS];
    bool seen[NPU_MAX_DIMS] = {0};
    for (int i = 0; i < x->ndim; i++)
        d[i] = x->dims[i];
    for (int i = 0; i < ns; i++) {
        int64_t a;
        if (!ir_norm_axis(ax[i], x->ndim, &a) || seen[a])
            FAIL("axis %lld out of range or repeated", (long long)ax[i]);
        seen[a] = true;
        if (sp[i] == 0)
            FAIL("step 0 on axis %lld", (long long)a);
        int64_t dim = x->dims[a], s = st[i], e = en[i];
        if (s < 0)
            s = s < -dim ? 0 : s + dim;
        if (e < 0)
            e = e < -dim ? -1 : e + dim;
        if (sp[i] > 0) {
            s = NPU_MIN(s, dim);
            e = NPU_MIN(NPU_MAX(e, 0), dim);
            d[a] = e > s ? (e - s + sp[i] - 1) / sp[i] : 0;
        } else {
            s = NPU_MIN(s, dim - 1);
            e = NPU_MAX(e, -1);
            if (sp[i] == INT64_MIN)
                FAIL("step out of range");
            d[a] = s > e ? (s - e + (-sp[i]) - 1) / (-sp[i]) : 0;
        }
    }
    return ir_set_out(n, 0, x->dtype, x->ndim, d);
}

enum npu_status
ir_infer_concat(struct npu_node *n)
{
    if (n->nin < 1)
        FAIL("no inputs");
    NEED_IN(0);
    const struct npu_tensor *x = ir_T(n, 0);
    int64_t a;
    if (!ir_norm_axis(npu_node_int(n, "axis", 0), x->ndim, &a))
        FAIL("axis out of range for rank %d", x->ndim);
    int64_t d[NPU_MAX_DIMS];
    for (int i = 0; i < x->ndim; i++)
        d[i] = x->dims[i];
    for (int k = 1; k < n->nin; k++) {
        NEED_IN(k);
        const struct npu_tensor *t = ir_T(n, k);
        if (t->dtype != x->dtype || t->ndim != x->ndim)
            FAIL("input %d ('%s') differs in dtype or rank", k, n->in[k]->name);
        for (int i = 0; i < x->ndim; i++)
            if (i != a && t->dims[i] != x->dims[i])
                FAIL("input %d ('%s') differs in dim %d", k, n->in[k]->name, i);
        d[a] += t->dims[a];
    }
    return ir_set_out(n, 0, x->dtype, x->ndim, d);
}

enum npu_status
ir_infer_split(struct npu_node *n)
{
    NEED_IN(0);
    const struct npu_tensor *x = ir_T(n, 0);
    int64_t a;
    if (!ir_norm_axis(npu_node_int(n, "axis", 0), x->ndim, &a))
        FAIL("axis out of range");
    int64_t sz[64];
    int cnt;
    if (n->nout > 64)
        FAIL("more than 64 outputs");
    if (ir_T(n, 1)) {
        NEED_DATA(1, "split");
        cnt = ir_read_ints(n->in[1], sz, 64);
        if (cnt != n->nout)
            FAIL("split has %d entries for %d outputs", cnt, n->nout);
        int64_t tot = 0;
        for (int i = 0; i < cnt; i++) {
            if (sz[i] < 0)
                FAIL("negative split size");
            tot += sz[i];
        }
        if (tot != x->dims[a])
            FAIL("split sizes add up to %lld, dim is %lld", (long long)tot, (long long)x->dims[a]);
    } else {
        int64_t parts = npu_node_int(n, "num_outputs", n->nout);
        if (parts != n->nout || parts < 1)
            FAIL("num_outputs %lld does not match %d outputs", (long long)parts, n->nout);
        int64_t chunk = (x->dims[a] + parts - 1) / parts;
        for (int i = 0; i < n->nout; i++) {
            int64_t rem = x->dims[a] - chunk * i;
            sz[i] = rem < 0 ? 0 : NPU_MIN(chunk, rem);
        }
        if (chunk * (parts - 1) >= x->dims[a] && x->dims[a] > 0 && parts > 1)
            FAIL("cannot split %lld into %lld parts", (long long)x->dims[a], (long long)parts);
    }
    for (int i = 0; i < n->nout; i++) {
        int64_t d[NPU_MAX_DIMS];
        memcpy(d, x->dims, sizeof(d));
        d[a] = sz[i];
        enum npu_status st = ir_set_out(n, i, x->dtype, x->ndim, d);
        if (st)
            return st;
    }
    return NPU_OK;
}

enum npu_status
ir_infer_squeeze(struct npu_node *n, bool unsq)
{
    NEED_IN(0);
    const struct npu_tensor *x = ir_T(n, 0);
    int64_t ax[NPU_MAX_DIMS];
    int na = 0;
    if (ir_T(n, 1)) {
        NEED_DATA(1, "axes");
        na = ir_read_ints(n->in[1], ax, NPU_MAX_DIMS);
        if (na < 0)
            FAIL("axes must be an integer vector of at most %d entries", NPU_MAX_DIMS);
    } else if (unsq) {
        FAIL("axes input missing");
    }
    int64_t d[NPU_MAX_DIMS];
    int r = 0;
    if (unsq) {
        int orank = x->ndim + na;
        if (orank > NPU_MAX_DIMS)
            FAIL("output rank %d exceeds %d", orank, NPU_MAX_DIMS);
        bool ins[NPU_MAX_DIMS] = {0};
        for (int i = 0; i < na; i++) {
            int64_t a;
            if (!ir_norm_axis(ax[i], orank, &a) || ins[a])
                FAIL("axis %lld out of range or repeated", (long long)ax[i]);
            ins[a] = true;
        }
        int k = 0;
        for (int i = 0; i < orank; i++)
            d[r++] = ins[i] ? 1 : x->dims[k++];
        return ir_set_out(n, 0, x->dtype, r, d);
    }
    bool rm[NPU_MAX_DIMS] = {0};
    for (int i = 0; i < na; i++) {
        int64_t a;
        if (!ir_norm_axis(ax[i], x->ndim, &a))
            FAIL("axis %lld out of range", (long long)ax[i]);
        if (x->dims[a] != 1)
            FAIL("cannot squeeze dim %lld of size %lld", (long long)a, (long long)x->dims[a]);
        rm[a] = true;
    }
    for (int i = 0; i < x->ndim; i++)
        if (!(na ? rm[i] : x->dims[i] == 1))
            d[r++] = x->dims[i];
    return ir_set_out(n, 0, x->dtype, r, d);
}

enum npu_status
ir_infer_gather(struct npu_node *n)
{
    NEED_IN(0);
    NEED_IN(1);
    const struct npu_tensor *x = ir_T(n, 0), *idx = ir_T(n, 1);
    if (idx->dtype != NPU_DTYPE_INT64 && idx->dtype != NPU_DTYPE_INT32)
        FAIL("indices must be i32 or i64, not %s", npu_dtype_name(idx->dtype));
    int64_t a;
    if (!ir_norm_axis(npu_node_int(n, "axis", 0), x->ndim, &a))
        FAIL("axis out of range for rank %d", x->ndim);
    if (n->op == NPU_OP_GATHER_ELEMENTS) {
        if (idx->ndim != x->ndim)
            FAIL("indices rank differs from data rank");
        return ir_set_out(n, 0, x->dtype, idx->ndim, idx->dims);
    }
    int64_t d[NPU_MAX_DIMS * 2];
    int r = 0;
    for (int i = 0; i < a; i++)
        d[r++] = x->dims[i];
    for (int i = 0; i < idx->ndim; i++)
        d[r++] = idx->dims[i];
    for (int i = (int)a + 1; i < x->ndim; i++)
        d[r++] = x->dims[i];
    if (npu_value_data(n->in[1])) {
        int64_t cnt = npu_value_numel(n->in[1]);
        for (int64_t i = 0; i < cnt; i++) {
            int64_t v = npu_value_get_i64(n->in[1], i);
            if (v < -x->dims[a] || v >= x->dims[a])
                FAIL("index %lld out of range for dim of %lld", (long long)v,
                     (long long)x->dims[a]);
        }
    }
    return ir_set_out(n, 0, x->dtype, r, d);
}

enum npu_status
ir_infer_pad(struct npu_node *n)
{
    NEED_IN(0);
    NEED_DATA(1, "pads");
    const struct npu_tensor *x = ir_T(n, 0);
    int64_t p[2 * NPU_MAX_DIMS], ax[NPU_MAX_DIMS];
    int np = ir_read_ints(n->in[1], p, 2 * NPU_MAX_DIMS);
    int na = x->ndim;
    for (int i = 0; i < na; i++)
        ax[i] = i;
    if (ir_T(n, 3)) {
        NEED_DATA(3, "axes");
        na = ir_read_ints(n->in[3], ax, NPU_MAX_DIMS);
        if (na < 0)
            FAIL("bad axes");
    }
    if (np != 2 * na)
        FAIL("pads has %d entries, expected %d", np, 2 * na);
    int64_t d[NPU_MAX_DIMS];
    memcpy(d, x->dims, sizeof(d));
    for (int i = 0; i < na; i++) {
        int64_t a;
        if (!ir_norm_axis(ax[i], x->ndim, &a))
            FAIL("axis out of range");
        if (p[i] < -(1ll << 40) || p[i] > (1ll << 40) || p[i + na] < -(1ll << 40) ||
            p[i + na] > (1ll << 40))
            FAIL("pads out of range");
        d[a] += p[i] + p[i + na];
        if (d[a] < 0)
            FAIL("pads make dim %lld negative", (long long)a);
    }
    return ir_set_out(n, 0, x->dtype, x->ndim, d);
}

enum npu_status
ir_infer_expand(struct npu_node *n)
{
    NEED_IN(0);
    NEED_DATA(1, "shape");
    struct npu_tensor s = {.ndim = 0};
    int r = ir_read_ints(n->in[1], s.dims, NPU_MAX_DIMS);
    if (r < 0)
        FAIL("shape must be an integer vector of at most %d entries", NPU_MAX_DIMS);
    s.ndim = r;
    for (int i = 0; i < r; i++)
        if (s.dims[i] < 0)
            FAIL("negative dim in shape");
    struct npu_tensor o;
    if (!ir_broadcast(ir_T(n, 0), &s, &o))
        FAIL("input shape cannot be expanded to the given shape");
    return ir_set_out(n, 0, ir_T(n, 0)->dtype, o.ndim, o.dims);
}

/* DepthToSpace / SpaceToDepth: NCHW, blocksize b moves b*b channels per pixel. */
enum npu_status
ir_infer_depth_space(struct npu_node *n)
{
    NEED_IN(0);
    const struct npu_tensor *x = ir_T(n, 0);
    int64_t b = npu_node_int(n, "blocksize", 0);
    if (x->ndim != 4)
        FAIL("input must be NCHW (rank 4), not rank %d", x->ndim);
    if (b < 1 || b > 4096)
        FAIL("blocksize %lld must be in [1, 4096]", (long long)b);
    int64_t d[4] = {x->dims[0], x->dims[1], x->dims[2], x->dims[3]};
    if (n->op == NPU_OP_DEPTH_TO_SPACE) {
        const char *mode = npu_node_string(n, "mode", "DCR");
        if (strcmp(mode, "DCR") && strcmp(mode, "CRD"))
            FAIL("mode '%s' is neither DCR nor CRD", mode);
        if (d[1] % (b * b))
            FAIL("channels %lld are not a multiple of blocksize^2", (long long)d[1]);
        if (d[2] > INT64_MAX / b || d[3] > INT64_MAX / b)
            FAIL("output too large");
        d[1] /= b * b, d[2] *= b, d[3] *= b;
    } else {
        if (d[2] % b || d[3] % b)
            FAIL("height and width must be multiples of blocksize %lld", (long long)b);
        if (d[1] > INT64_MAX / (b * b))
            FAIL("output too large");
        d[1] *= b * b, d[2] /= b, d[3] /= b;
    }
    return ir_set_out(n, 0, x->dtype, 4, d);
}

/* ScatterND / ScatterElements: the output is the data; the operands must agree. */
enum npu_status
ir_infer_scatter(struct npu_node *n)
{
    NEED_IN(0);
    NEED_IN(1);
    NEED_IN(2);
    const struct npu_tensor *x = ir_T(n, 0), *idx = ir_T(n, 1), *u = ir_T(n, 2);
    if (idx->dtype != NPU_DTYPE_INT64 && idx->dtype != NPU_DTYPE_INT32)
        FAIL("indices must be i32 or i64, not %s", npu_dtype_name(idx->dtype));
    if (u->dtype != x->dtype)
        FAIL("updates are %s, data %s", npu_dtype_name(u->dtype), npu_dtype_name(x->dtype));
    const char *red = npu_node_string(n, "reduction", "none");
    if (strcmp(red, "none") && strcmp(red, "add") && strcmp(red, "mul") && strcmp(red, "max") &&
        strcmp(red, "min"))
        FAIL("unknown reduction '%s'", red);
    if (n->op == NPU_OP_SCATTER_ELEMENTS) {
        int64_t a;
        if (!ir_norm_axis(npu_node_int(n, "axis", 0), x->ndim, &a))
            FAIL("axis out of range for rank %d", x->ndim);
        if (idx->ndim != x->ndim || u->ndim != idx->ndim ||
            memcmp(u->dims, idx->dims, sizeof(int64_t) * (size_t)idx->ndim))
            FAIL("indices and updates must have one shape, of the data's rank");
        for (int i = 0; i < x->ndim; i++)
            if (i != a && idx->dims[i] > x->dims[i])
                FAIL("indices dim %d exceeds the data's", i);
    } else {
        if (idx->ndim < 1)
            FAIL("indices must have rank >= 1");
        int64_t k = idx->dims[idx->ndim - 1];
        if (k < 1 || k > x->ndim)
            FAIL("index tuples of %lld entries for data of rank %d", (long long)k, x->ndim);
        bool ok = u->ndim == idx->ndim - 1 + x->ndim - (int)k;
        for (int i = 0; ok && i < idx->ndim - 1; i++)
            ok = u->dims[i] == idx->dims[i];
        for (int i = 0; ok && i < x->ndim - (int)k; i++)
            ok = u->dims[idx->ndim - 1 + i] == x->dims[k + i];
        if (!ok)
            FAIL("updates shape is not indices.shape[:-1] + data.shape[%lld:]", (long long)k);
    }
    return ir_same_as(n, 0, 0);
}

/* TopK: K along axis (K must be known at compile time: it sizes the outputs). */
enum npu_status
ir_infer_topk(struct npu_node *n)
{
    NEED_IN(0);
    NEED_DATA(1, "K");
    const struct npu_tensor *x = ir_T(n, 0);
    int64_t a, k[2];
    if (!ir_norm_axis(npu_node_int(n, "axis", -1), x->ndim, &a))
        FAIL("axis out of range for rank %d", x->ndim);
    if (ir_read_ints(n->in[1], k, 2) != 1)
        FAIL("K must be a one-element integer tensor");
    if (k[0] < 0 || k[0] > x->dims[a])
        FAIL("K = %lld for an axis of %lld", (long long)k[0], (long long)x->dims[a]);
    int64_t d[NPU_MAX_DIMS];
    memcpy(d, x->dims, sizeof(d));
    d[a] = k[0];
    enum npu_status st = ir_set_out(n, 0, x->dtype, x->ndim, d);
    if (!st && n->nout > 1)
        st = ir_set_out(n, 1, NPU_DTYPE_INT64, x->ndim, d);
    return st;
}

/* OneHot: the depth must be known (it sizes the output). */
enum npu_status
ir_infer_one_hot(struct npu_node *n)
{
    NEED_IN(0);
    NEED_DATA(1, "depth");
    NEED_IN(2);
    const struct npu_tensor *x = ir_T(n, 0), *v = ir_T(n, 2);
    if (npu_value_numel(n->in[1]) != 1)
        FAIL("depth must have one element");
    double dd = npu_dtype_load_f64(ir_T(n, 1)->dtype, npu_value_data(n->in[1]), 0);
    if (!(dd >= 1) || dd > (double)(1 << 30))
        FAIL("depth %g out of range", dd);
    if (v->ndim != 1 || v->dims[0] != 2)
        FAIL("values must be [off, on]");
    if (x->ndim + 1 > NPU_MAX_DIMS)
        FAIL("indices rank too large");
    int64_t a;
    if (!ir_norm_axis(npu_node_int(n, "axis", -1), x->ndim + 1, &a))
        FAIL("axis out of range for rank %d", x->ndim + 1);
    int64_t d[NPU_MAX_DIMS];
    for (int i = 0, k = 0; i < x->ndim + 1; i++)
        d[i] = i == a ? (int64_t)dd : x->dims[k++];
    return ir_set_out(n, 0, v->dtype, x->ndim + 1, d);
}

/* GatherND: batch dims + indices.shape[b:-1] + data.shape[b+k:]. */
enum npu_status
ir_infer_gather_nd(struct npu_node *n)
{
    NEED_IN(0);
    NEED_IN(1);
    const struct npu_tensor *x = ir_T(n, 0), *idx = ir_T(n, 1);
    if (idx->dtype != NPU_DTYPE_INT64 && idx->dtype != NPU_DTYPE_INT32)
        FAIL("indices must be i32 or i64, not %s", npu_dtype_name(idx->dtype));
    int64_t bd = npu_node_int(n, "batch_dims", 0);
    if (idx->ndim < 1 || bd < 0 || bd >= idx->ndim || bd >= x->ndim)
        FAIL("batch_dims %lld does not fit ranks %d and %d", (long long)bd, x->ndim, idx->ndim);
    int64_t k = idx->dims[idx->ndim - 1];
    if (k < 1 || bd + k > x->ndim)
        FAIL("index tuples of %lld entries for data of rank %d", (long long)k, x->ndim);
    int64_t d[NPU_MAX_DIMS];
    int r = 0;
    for (int i = 0; i < bd; i++)
        if (idx->dims[i] != x->dims[i])
            FAIL("batch dim %d differs between data and indices", i);
    for (int i = 0; i < idx->ndim - 1; i++)
        d[r++] = idx->dims[i];
    for (int i = (int)(bd + k); i < x->ndim; i++) {
        if (r >= NPU_MAX_DIMS)
            FAIL("output rank too large");
        d[r++] = x->dims[i];
    }
    return ir_set_out(n, 0, x->dtype, r, d);
}

enum npu_status
ir_infer_tile(struct npu_node *n)
{
    NEED_IN(0);
    NEED_DATA(1, "repeats");
    const struct npu_tensor *x = ir_T(n, 0);
    int64_t rep[NPU_MAX_DIMS], d[NPU_MAX_DIMS];
    if (ir_read_ints(n->in[1], rep, NPU_MAX_DIMS) != x->ndim)
        FAIL("repeats must have one entry per input dim");
    for (int i = 0; i < x->ndim; i++) {
        if (rep[i] < 0 || (rep[i] && x->dims[i] > INT64_MAX / rep[i]))
            FAIL("repeats out of range");
        d[i] = x->dims[i] * rep[i];
    }
    return ir_set_out(n, 0, x->dtype, x->ndim, d);
}

enum npu_status
ir_infer_range(struct npu_node *n)
{
    NEED_DATA(0, "start");
    NEED_DATA(1, "limit");
    NEED_DATA(2, "delta");
    enum npu_dtype dt = ir_T(n, 0)->dtype;
    for (int i = 0; i < 3; i++)
        if (npu_value_numel(n->in[i]) != 1 || ir_T(n, i)->dtype != dt)
            FAIL("start, limit and delta must be scalars of one dtype");
    int64_t cnt;
    if (npu_dtype_is_int(dt)) {
        int64_t s = npu_value_get_i64(n->in[0], 0), l = npu_value_get_i64(n->in[1], 0),
                d = npu_value_get_i64(n->in[2], 0);
        if (d == 0)
            FAIL("delta is 0");
        double c = ceil(((double)l - (double)s) / (double)d);
        cnt = c > 0 ? (int64_t)c : 0;
    } else {
        double s = npu_value_get_f64(n->in[0], 0), l = npu_value_get_f64(n->in[1], 0),
               d = npu_value_get_f64(n->in[2], 0);
        if (d == 0 || !isfinite(s) || !isfinite(l) || !isfinite(d))
            FAIL("delta is 0 or a bound is not finite");
        double c = ceil((l - s) / d);
        if (c > 1e12)
            FAIL("range of %g elements is absurd", c);
        cnt = c > 0 ? (int64_t)c : 0;
    }
    if (cnt > ((int64_t)1 << 34))
        FAIL("range of %lld elements is absurd", (long long)cnt);
    return ir_set_out(n, 0, dt, 1, &cnt);
}

enum npu_status
ir_infer_shape_ops(struct npu_graph *g, struct npu_node *n, bool eval)
{
    NEED_IN(0);
    const struct npu_tensor *x = ir_T(n, 0);
    if (n->op == NPU_OP_SIZE) {
        enum npu_status st = ir_set_out(n, 0, NPU_DTYPE_INT64, 0, NULL);
        if (st || !eval)
            return st;
        int64_t *k = npu_graph_alloc(g, 8);
        if (!k)
            return NPU_ERR_NOMEM;
        *k = npu_tensor_numel(x);
        n->out[0]->known = k;
        return NPU_OK;
    }
    int64_t s = npu_node_int(n, "start", 0), e = npu_node_int(n, "end", x->ndim);
    if (s < 0)
        s += x->ndim;
    if (e < 0)
        e += x->ndim;
    s = NPU_MIN(NPU_MAX(s, 0), x->ndim);
    e = NPU_MIN(NPU_MAX(e, 0), x->ndim);
    int64_t len = e > s ? e - s : 0;
    enum npu_status st = ir_set_out(n, 0, NPU_DTYPE_INT64, 1, &len);
    if (st || !eval)
        return st;
    int64_t *k = npu_graph_alloc(g, sizeof(int64_t) * (size_t)(len ? len : 1));
    if (!k)
        return NPU_ERR_NOMEM;
    for (int64_t i = 0; i < len; i++)
        k[i] = x->dims[s + i];
    n->out[0]->known = k;
    return NPU_OK;
}

/* npu.StateWrite(S, ROW, POS){axis}: S with ROW written at run-time position POS along axis
 * (the output is the updated S). ROW has S's rank and dtype and S's dims except on the axis,
 * where it has n >= 1 entries (at most S's); POS is one int32 / int64. The position itself is
 * checked when it runs (the CPU kernel, the runtime's dynamic relocation). */
enum npu_status
ir_infer_state_write(struct npu_node *n)
{
    NEED_IN(0);
    NEED_IN(1);
    NEED_IN(2);
    const struct npu_tensor *s = ir_T(n, 0), *r = ir_T(n, 1), *p = ir_T(n, 2);
    int64_t a;
    if (s->ndim < 1 || !ir_norm_axis(npu_node_int(n, "axis", 0), s->ndim, &a))
        FAIL("axis %lld out of range for a state of rank %d", (long long)npu_node_int(n, "axis", 0),
             s->ndim);
    if (r->dtype != s->dtype)
        FAIL("the row is %s, the state %s", npu_dtype_name(r->dtype), npu_dtype_name(s->dtype));
    if (r->ndim != s->ndim)
        FAIL("the row has rank %d, the state %d", r->ndim, s->ndim);
    for (int i = 0; i < s->ndim; i++)
        if (i == a ? r->dims[i] < 1 || r->dims[i] > s->dims[i] : r->dims[i] != s->dims[i])
            FAIL("row dim %d is %lld, the state's %lld (the row may differ only on axis %lld, "
                 "1..%lld)",
                 i, (long long)r->dims[i], (long long)s->dims[i], (long long)a,
                 (long long)s->dims[a]);
    if ((p->dtype != NPU_DTYPE_INT64 && p->dtype != NPU_DTYPE_INT32) || npu_tensor_numel(p) != 1)
        FAIL("the position must be one int32 or int64, not %s with %lld elements",
             npu_dtype_name(p->dtype), (long long)npu_tensor_numel(p));
    return ir_same_as(n, 0, 0);
}
