/* SPDX-License-Identifier: MIT */
/*
 * infer-nn.c: shape inference of the neural-network op families: the
 * convolution geometry (ir_conv_geometry, shared with the ONNX upgrader) and
 * Conv/ConvTranspose and the pools on it, the reductions and ArgMin/ArgMax,
 * RNN/GRU/LSTM, Resize, Einsum and our fused attention.
 */
#include "infer-priv.h"

/* Spatial output sizes shared by Conv, ConvTranspose and the pools. Fills
 * pads (2*ns: begins then ends) resolved from auto_pad. */
enum npu_status
ir_conv_geometry(const struct npu_node *n, int ns, const int64_t *in_sp, const int64_t *k,
                 bool transposed, bool pool, int64_t *pads, int64_t *out_sp)
{
    size_t cnt;
    int64_t s[NPU_MAX_DIMS], d[NPU_MAX_DIMS], op[NPU_MAX_DIMS];
    const int64_t *v;
    for (int i = 0; i < ns; i++) {
        s[i] = d[i] = 1;
        op[i] = 0;
        pads[i] = pads[i + ns] = 0;
    }
    if ((v = npu_node_ints(n, "strides", &cnt))) {
        if ((int)cnt != ns)
            FAIL("strides has %zu entries for %d spatial dims", cnt, ns);
        for (int i = 0; i < ns; i++)
            s[i] = v[i];
    }
    if ((v = npu_node_ints(n, "dilations", &cnt))) {
        if ((int)cnt != ns)
            FAIL("dilations has %zu entries for %d spatial dims", cnt, ns);
        for (int i = 0; i < ns; i++)
            d[i] = v[i];
    }
    if ((v = npu_node_ints(n, "pads", &cnt))) {
        if ((int)cnt != 2 * ns)
            FAIL("pads has %zu entries for %d spatial dims", cnt, ns);
        for (int i = 0; i < 2 * ns; i++)
            pads[i] = v[i];
    }
    if ((v = npu_node_ints(n, "output_padding", &cnt))) {
        if ((int)cnt != ns)
            FAIL("output_padding has %zu entries for %d spatial dims", cnt, ns);
        for (int i = 0; i < ns; i++)
            op[i] = v[i];
    }
    for (int i = 0; i < ns; i++) {
        if (s[i] < 1 || d[i] < 1 || k[i] < 1 || s[i] > (1 << 20) || d[i] > (1 << 20) ||
            k[i] > (1 << 20))
            FAIL("kernel %lld, stride %lld, dilation %lld out of range", (long long)k[i],
                 (long long)s[i], (long long)d[i]);
        if (pads[i] < 0 || pads[i + ns] < 0 || pads[i] > (1 << 24) || pads[i + ns] > (1 << 24))
            FAIL("pads out of range");
        if (op[i] < 0 || op[i] >= NPU_MAX(s[i], d[i]))
            FAIL("output_padding out of range");
    }
    const char *ap = npu_node_string(n, "auto_pad", "NOTSET");
    bool same_u = !strcmp(ap, "SAME_UPPER"), same_l = !strcmp(ap, "SAME_LOWER");
    bool valid = !strcmp(ap, "VALID");
    if (!same_u && !same_l && !valid && strcmp(ap, "NOTSET"))
        FAIL("unknown auto_pad '%s'", ap);
    bool ceil_mode = pool && npu_node_int(n, "ceil_mode", 0);
    size_t ocnt;
    const int64_t *oshape = transposed ? npu_node_ints(n, "output_shape", &ocnt) : NULL;
    if (oshape && (int)ocnt != ns) {
        /* output_shape may include N and C */
        if ((int)ocnt == ns + 2)
            oshape += 2;
        else
            FAIL("output_shape has %zu entries for %d spatial dims", ocnt, ns);
    }
    for (int i = 0; i < ns; i++) {
        int64_t ek = (k[i] - 1) * d[i] + 1;
        if (transposed) {
            int64_t o;
            if (oshape) {
                o = oshape[i];
                int64_t total = s[i] * (in_sp[i] - 1) + op[i] + ek - o;
                if (total < 0)
                    total = 0;
                if (same_l || same_u || !npu_node_attr(n, "pads")) {
                    pads[i] = same_u ? total / 2 : total - total / 2;
                    pads[i + ns] = total - pads[i];
                    if (!same_l && !same_u) { /* ONNX default: extra at the end */
                        pads[i] = total / 2;
                        pads[i + ns] = total - pads[i];
                    }
                }
            } else if (same_u || same_l) {
                o = in_sp[i] * s[i];
                int64_t total = s[i] * (in_sp[i] - 1) + op[i] + ek - o;
                if (total < 0)
                    total = 0;
                pads[i] = same_u ? total / 2 : total - total / 2;
                pads[i + ns] = total - pads[i];
            } else {
                if (valid)
                    pads[i] = pads[i + ns] = 0;
                o = s[i] * (in_sp[i] - 1) + op[i] + ek - pads[i] - pads[i + ns];
            }
            if (o < 1)
                FAIL("spatial dim %d of the output would be %lld", i, (long long)o);
            out_sp[i] = o;
            continue;
        }
        if (same_u || same_l) {
            int64_t o = (in_sp[i] + s[i] - 1) / s[i];
            int64_t total = (o - 1) * s[i] + ek - in_sp[i];
            if (total < 0)
                total = 0;
            pads[i] = same_u ? total / 2 : total - total / 2;
            pads[i + ns] = total - pads[i];
        } else if (valid) {
            pads[i] = pads[i + ns] = 0;
        }
        int64_t span = in_sp[i] + pads[i] + pads[i + ns] - ek;
        if (span < 0)
            FAIL("kernel (%lld) larger than padded input (%lld) on spatial dim %d", (long long)ek,
                 (long long)(in_sp[i] + pads[i] + pads[i + ns]), i);
        int64_t o = (ceil_mode ? (span + s[i] - 1) / s[i] : span / s[i]) + 1;
        /* The last window must start inside the input or left padding. */
        if (ceil_mode && (o - 1) * s[i] >= in_sp[i] + pads[i])
            o--;
        out_sp[i] = o;
    }
    return NPU_OK;
}

enum npu_status
ir_infer_conv(struct npu_node *n, int xi, int wi, enum npu_dtype dt, bool transposed)
{
    NEED_IN(xi);
    NEED_IN(wi);
    const struct npu_tensor *x = ir_T(n, xi), *w = ir_T(n, wi);
    if (x->ndim < 3 || w->ndim != x->ndim)
        FAIL("input rank %d and weight rank %d do not make a convolution", x->ndim, w->ndim);
    int ns = x->ndim - 2;
    int64_t group = npu_node_int(n, "group", 1);
    if (group < 1 || group > x->dims[1])
        FAIL("group %lld out of range", (long long)group);
    int64_t k[NPU_MAX_DIMS], pads[2 * NPU_MAX_DIMS], osp[NPU_MAX_DIMS];
    size_t cnt;
    const int64_t *ks = npu_node_ints(n, "kernel_shape", &cnt);
    for (int i = 0; i < ns; i++)
        k[i] = w->dims[2 + i];
    if (ks) {
        if ((int)cnt != ns)
            FAIL("kernel_shape has %zu entries for %d spatial dims", cnt, ns);
        for (int i = 0; i < ns; i++)
            if (ks[i] != k[i])
                FAIL("kernel_shape disagrees with the weight shape");
    }
    int64_t m;
    if (!transposed) {
        if (x->dims[1] != w->dims[1] * group)
            FAIL("input has %lld channels, weight expects %lld x group %lld", (long long)x->dims[1],
                 (long long)w->dims[1], (long long)group);
        if (w->dims[0] % group)
            FAIL("output channels %lld not divisible by group %lld", (long long)w->dims[0],
                 (long long)group);
        m = w->dims[0];
    } else {
        if (x->dims[1] != w->dims[0])
            FAIL("input has %lld channels, weight expects %lld", (long long)x->dims[1],
                 (long long)w->dims[0]);
        m = w->dims[1] * group;
    }
    enum npu_status st = ir_conv_geometry(n, ns, x->dims + 2, k, transposed, false, pads, osp);
    if (st)
        return st;
    int64_t d[NPU_MAX_DIMS] = {x->dims[0], m};
    for (int i = 0; i < ns; i++)
        d[2 + i] = osp[i];
    const struct npu_tensor *b = NULL;
    if (n->op == NPU_OP_CONV || n->op == NPU_OP_CONV_TRANSPOSE)
        b = ir_T(n, 2);
    else if (n->op == NPU_OP_QLINEAR_CONV)
        b = ir_T(n, 8);
    if (b && (b->ndim != 1 || b->dims[0] != m))
        FAIL("bias must have shape [%lld]", (long long)m);
    return ir_set_out(n, 0, dt, x->ndim, d);
}

enum npu_status
ir_infer_pool(struct npu_node *n)
{
    NEED_IN(0);
    const struct npu_tensor *x = ir_T(n, 0);
    if (x->ndim < 3)
        FAIL("pooling needs rank >= 3, input has %d", x->ndim);
    int ns = x->ndim - 2;
    size_t cnt;
    const int64_t *ks = npu_node_ints(n, "kernel_shape", &cnt);
    if (!ks || (int)cnt != ns)
        FAIL("kernel_shape missing or of the wrong length");
    int64_t pads[2 * NPU_MAX_DIMS], osp[NPU_MAX_DIMS], d[NPU_MAX_DIMS];
    enum npu_status st = ir_conv_geometry(n, ns, x->dims + 2, ks, false, true, pads, osp);
    if (st)
        return st;
    d[0] = x->dims[0];
    d[1] = x->dims[1];
    for (int i = 0; i < ns; i++)
        d[2 + i] = osp[i];
    st = ir_set_out(n, 0, x->dtype, x->ndim, d);
    if (!st && n->nout > 1)
        st = ir_set_out(n, 1, NPU_DTYPE_INT64, x->ndim, d);
    return st;
}

enum npu_status
ir_infer_reduce(struct npu_node *n)
{
    NEED_IN(0);
    const struct npu_tensor *x = ir_T(n, 0);
    bool keep = npu_node_int(n, "keepdims", 1) != 0;
    bool noop = npu_node_int(n, "noop_with_empty_axes", 0) != 0;
    bool red[NPU_MAX_DIMS] = {0};
    int64_t ax[NPU_MAX_DIMS * 2];
    int na = 0;
    if (ir_T(n, 1)) {
        NEED_DATA(1, "axes");
        na = ir_read_ints(n->in[1], ax, NPU_MAX_DIMS * 2);
        if (na < 0)
            FAIL("axes must be an integer vector of at most %d entries", NPU_MAX_DIMS);
    } else {
        /* the opset < 18 form (an attribute), as the CPU kernel reads it too; the ONNX
         * importer moves it to the input, graphs built in memory or as text may not */
        size_t cnt = 0;
        const int64_t *a = npu_node_ints(n, "axes", &cnt);
        if (cnt > NPU_MAX_DIMS * 2)
            FAIL("axes must be an integer vector of at most %d entries", NPU_MAX_DIMS);
        for (size_t i = 0; i < cnt; i++)
            ax[na++] = a[i];
    }
    if (na == 0) {
        if (noop)
            return ir_same_as(n, 0, 0);
        for (int i = 0; i < x->ndim; i++)
            red[i] = true;
    }
    for (int i = 0; i < na; i++) {
        int64_t a;
        if (!ir_norm_axis(ax[i], x->ndim, &a))
            FAIL("axis %lld out of range for rank %d", (long long)ax[i], x->ndim);
        red[a] = true;
    }
    int64_t d[NPU_MAX_DIMS];
    int r = 0;
    for (int i = 0; i < x->ndim; i++) {
        if (!red[i])
            d[r++] = x->dims[i];
        else if (keep)
            d[r++] = 1;
    }
    return ir_set_out(n, 0, x->dtype, r, d);
}

enum npu_status
ir_infer_argminmax(struct npu_node *n)
{
    NEED_IN(0);
    const struct npu_tensor *x = ir_T(n, 0);
    int64_t a;
    if (!ir_norm_axis(npu_node_int(n, "axis", 0), x->ndim, &a))
        FAIL("axis out of range");
    bool keep = npu_node_int(n, "keepdims", 1) != 0;
    int64_t d[NPU_MAX_DIMS];
    int r = 0;
    for (int i = 0; i < x->ndim; i++) {
        if (i != a)
            d[r++] = x->dims[i];
        else if (keep)
            d[r++] = 1;
    }
    return ir_set_out(n, 0, NPU_DTYPE_INT64, r, d);
}

/* RNN / GRU / LSTM (npu-cpu-rnn.c has the shapes): Y [T, D, B, H], Y_h and Y_c
 * [D, B, H]; layout 1 puts the batch first in X and in every output. */
enum npu_status
ir_infer_rnn(struct npu_node *n)
{
    NEED_IN(0);
    NEED_IN(1);
    NEED_IN(2);
    const struct npu_tensor *x = ir_T(n, 0), *w = ir_T(n, 1), *r = ir_T(n, 2);
    int G = n->op == NPU_OP_LSTM ? 4 : n->op == NPU_OP_GRU ? 3 : 1;
    if (!npu_dtype_is_float(x->dtype))
        FAIL("X must be a float tensor, not %s", npu_dtype_name(x->dtype));
    if (x->ndim != 3 || w->ndim != 3 || r->ndim != 3)
        FAIL("X, W and R must have rank 3");
    const char *dir = npu_node_string(n, "direction", "forward");
    int64_t D = !strcmp(dir, "bidirectional") ? 2 : 1;
    if (D == 1 && strcmp(dir, "forward") && strcmp(dir, "reverse"))
        FAIL("direction '%s' is not forward, reverse or bidirectional", dir);
    int64_t layout = npu_node_int(n, "layout", 0);
    if (layout != 0 && layout != 1)
        FAIL("layout %lld is not 0 or 1", (long long)layout);
    int64_t H = npu_node_int(n, "hidden_size", w->dims[1] / G);
    int64_t Tn = x->dims[layout ? 1 : 0], B = x->dims[layout ? 0 : 1];
    if (H < 1 || w->dims[0] != D || w->dims[1] != G * H || w->dims[2] != x->dims[2])
        FAIL("W must be [%lld, %lld, %lld]", (long long)D, (long long)(G * H),
             (long long)x->dims[2]);
    if (r->dims[0] != D || r->dims[1] != G * H || r->dims[2] != H)
        FAIL("R must be [%lld, %lld, %lld]", (long long)D, (long long)(G * H), (long long)H);
    if (n->op != NPU_OP_LSTM && n->nout > 2)
        FAIL("has %d outputs; the op defines 1 to 2", n->nout);
    int64_t y[4] = {Tn, D, B, H}, hs[3] = {D, B, H};
    if (layout)
        y[0] = B, y[1] = Tn, y[2] = D, hs[0] = B, hs[1] = D;
    enum npu_status st = ir_set_out(n, 0, x->dtype, 4, y);
    for (int i = 1; !st && i < n->nout; i++)
        st = ir_set_out(n, i, x->dtype, 3, hs);
    return st;
}

enum npu_status
ir_infer_resize(struct npu_node *n)
{
    NEED_IN(0);
    const struct npu_tensor *x = ir_T(n, 0);
    int64_t ax[NPU_MAX_DIMS];
    size_t na;
    const int64_t *axv = npu_node_ints(n, "axes", &na);
    if (!axv)
        na = (size_t)x->ndim;
    if ((int)na > x->ndim)
        FAIL("too many axes");
    for (size_t i = 0; i < na; i++)
        if (!ir_norm_axis(axv ? axv[i] : (int64_t)i, x->ndim, &ax[i]))
            FAIL("axis out of range");
    int64_t d[NPU_MAX_DIMS];
    memcpy(d, x->dims, sizeof(d));
    if (ir_T(n, 3) && npu_value_numel(n->in[3]) > 0) {
        NEED_DATA(3, "sizes");
        int64_t sz[NPU_MAX_DIMS];
        if (ir_read_ints(n->in[3], sz, NPU_MAX_DIMS) != (int)na)
            FAIL("sizes must have one entry per resized axis");
        const char *pol = npu_node_string(n, "keep_aspect_ratio_policy", "stretch");
        if (!strcmp(pol, "stretch")) {
            for (size_t i = 0; i < na; i++)
                d[ax[i]] = sz[i];
        } else {
            bool larger = !strcmp(pol, "not_smaller");
            if (!larger && strcmp(pol, "not_larger"))
                FAIL("unknown keep_aspect_ratio_policy '%s'", pol);
            double sc = larger ? 0 : INFINITY;
            for (size_t i = 0; i < na; i++) {
                double s = x->dims[ax[i]] ? (double)sz[i] / (double)x->dims[ax[i]] : 1;
                sc = larger ? fmax(sc, s) : fmin(sc, s);
            }
            for (size_t i = 0; i < na; i++)
                d[ax[i]] = (int64_t)floor((double)x->dims[ax[i]] * sc + 0.5);
        }
    } else if (ir_T(n, 2) && npu_value_numel(n->in[2]) > 0) {
        NEED_DATA(2, "scales");
        if (npu_value_numel(n->in[2]) != (int64_t)na || !npu_dtype_is_float(ir_T(n, 2)->dtype))
            FAIL("scales must be a float vector with one entry per resized axis");
        for (size_t i = 0; i < na; i++) {
            double s = npu_value_get_f64(n->in[2], (int64_t)i);
            if (!(s > 0) || s > 1e6)
                FAIL("scale %g out of range", s);
            d[ax[i]] = (int64_t)floor((double)x->dims[ax[i]] * s);
        }
    } else {
        FAIL("neither scales nor sizes given");
    }
    for (int i = 0; i < x->ndim; i++)
        if (d[i] < 0 || d[i] > ((int64_t)1 << 32))
            FAIL("output dim out of range");
    return ir_set_out(n, 0, x->dtype, x->ndim, d);
}

/* Einsum: explicit or implicit output, ellipsis broadcast. */
enum npu_status
ir_infer_einsum(struct npu_node *n)
{
    const char *eq = npu_node_string(n, "equation", NULL);
    if (!eq)
        FAIL("missing equation");
    int64_t lab_dim[128];
    int lab_cnt[128] = {0};
    for (int i = 0; i < 128; i++)
        lab_dim[i] = -1;
    struct npu_tensor ell = {.ndim = 0};
    bool have_ell = false;
    const char *p = eq;
    int opi = 0;
    char lhs_labels[2048];
    size_t ll = 0;
    /* the first term may be empty: "->" sums a scalar (opset 12 test_einsum_scalar) */
    for (bool first = true; first || (*p && !(p[0] == '-' && p[1] == '>')); opi++, first = false) {
        if (opi >= n->nin)
            FAIL("equation has more operands than inputs");
        NEED_IN(opi);
        const struct npu_tensor *t = ir_T(n, opi);
        char labs[NPU_MAX_DIMS + 1];
        int nl = 0, ellpos = -1;
        while (*p && *p != ',' && !(p[0] == '-' && p[1] == '>')) {
            if (*p == ' ') {
                p++;
                continue;
            }
            if (p[0] == '.' && p[1] == '.' && p[2] == '.') {
                if (ellpos >= 0)
                    FAIL("two ellipses in one operand");
                ellpos = nl;
                p += 3;
                continue;
            }
            if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')) || nl >= NPU_MAX_DIMS)
                FAIL("bad equation '%s'", eq);
            labs[nl++] = *p++;
        }
        int ne = ellpos >= 0 ? t->ndim - nl : 0;
        if (ne < 0 || (ellpos < 0 && nl != t->ndim))
            FAIL("operand %d has rank %d, equation term has %d labels", opi, t->ndim, nl);
        if (ellpos >= 0) {
            struct npu_tensor e = {.ndim = ne};
            for (int i = 0; i < ne; i++)
                e.dims[i] = t->dims[ellpos + i];
            if (!have_ell) {
                ell = e;
                have_ell = true;
            } else if (!ir_broadcast(&ell, &e, &ell)) {
                FAIL("ellipsis dims cannot be broadcast");
            }
        }
        for (int i = 0; i < nl; i++) {
            int di = i < (ellpos >= 0 ? ellpos : nl) ? i : i + ne;
            int c = (unsigned char)labs[i];
            int64_t dim = t->dims[di];
            if (lab_dim[c] < 0 || lab_dim[c] == 1)
                lab_dim[c] = dim;
            else if (dim != lab_dim[c] && dim != 1)
                FAIL("label '%c' has sizes %lld and %lld", c, (long long)lab_dim[c],
                     (long long)dim);
            lab_cnt[c]++;
            if (ll < sizeof(lhs_labels) - 1)
                lhs_labels[ll++] = labs[i];
        }
        if (*p == ',')
            p++;
    }
    if (opi != n->nin)
        FAIL("equation has %d operands, node has %d inputs", opi, n->nin);
    int64_t d[NPU_MAX_DIMS];
    int r = 0;
    if (p[0] == '-') {
        p += 2;
        for (; *p; p++) {
            if (*p == ' ')
                continue;
            if (p[0] == '.' && p[1] == '.' && p[2] == '.') {
                for (int i = 0; i < ell.ndim && r < NPU_MAX_DIMS; i++)
                    d[r++] = ell.dims[i];
                p += 2;
                continue;
            }
            int c = (unsigned char)*p;
            if (c >= 128 || lab_dim[c] < 0 || r >= NPU_MAX_DIMS)
                FAIL("output label '%c' unknown", *p);
            d[r++] = lab_dim[c];
        }
    } else {
        for (int i = 0; i < ell.ndim; i++)
            d[r++] = ell.dims[i];
        for (int c = 'A'; c <= 'z'; c++)
            if (lab_cnt[c] == 1 && r < NPU_MAX_DIMS)
                d[r++] = lab_dim[c];
    }
    return ir_set_out(n, 0, ir_T(n, 0)->dtype, r, d);
}

enum npu_status
ir_infer_attention(struct npu_node *n)
{
    NEED_IN(0);
    NEED_IN(1);
    NEED_IN(2);
    const struct npu_tensor *q = ir_T(n, 0), *k = ir_T(n, 1), *v = ir_T(n, 2);
    if (q->ndim < 2 || k->ndim < 2 || v->ndim < 2)
        FAIL("Q, K, V need rank >= 2");
    if (q->dims[q->ndim - 1] != k->dims[k->ndim - 1])
        FAIL("Q and K head sizes differ");
    if (k->dims[k->ndim - 2] != v->dims[v->ndim - 2])
        FAIL("K and V sequence lengths differ");
    if (q->dtype != k->dtype || q->dtype != v->dtype)
        FAIL("Q, K, V dtypes differ");
    struct npu_tensor bq = {.ndim = q->ndim - 2}, bk = {.ndim = k->ndim - 2},
                      bv = {.ndim = v->ndim - 2}, b;
    memcpy(bq.dims, q->dims, sizeof(int64_t) * (size_t)bq.ndim);
    memcpy(bk.dims, k->dims, sizeof(int64_t) * (size_t)bk.ndim);
    memcpy(bv.dims, v->dims, sizeof(int64_t) * (size_t)bv.ndim);
    if (!ir_broadcast(&bq, &bk, &b) || !ir_broadcast(&b, &bv, &b))
        FAIL("batch dims of Q, K, V cannot be broadcast");
    if (ir_T(n, 3)) {
        struct npu_tensor s = b, o;
        s.dims[s.ndim++] = q->dims[q->ndim - 2];
        s.dims[s.ndim++] = k->dims[k->ndim - 2];
        if (!ir_broadcast(&s, ir_T(n, 3), &o) || o.ndim != s.ndim ||
            memcmp(o.dims, s.dims, sizeof(int64_t) * (size_t)s.ndim))
            FAIL("mask does not broadcast to the score shape");
    }
    int64_t d[NPU_MAX_DIMS];
    int r = 0;
    for (int i = 0; i < b.ndim; i++)
        d[r++] = b.dims[i];
    d[r++] = q->dims[q->ndim - 2];
    d[r++] = v->dims[v->ndim - 1];
    return ir_set_out(n, 0, q->dtype, r, d);
}
