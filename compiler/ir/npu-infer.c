/* SPDX-License-Identifier: MIT */
/*
 * npu-infer.c: dtype and shape inference for every op of npu-ops.h, in the
 * newest ONNX form (the importer upgrades older forms first). Value-dependent
 * shapes (Reshape, Expand, Tile, Slice, Pad, Range, ConstantOfShape, Resize,
 * Split, Squeeze/Unsqueeze axes, Reduce axes) need their operand's contents:
 * a constant, or a value that inference itself computed (`known`) because it
 * is small and derived from shapes, which is how the Shape/Gather/Concat
 * chains that exporters emit resolve once the input shapes are concrete.
 */
#include "infer-priv.h"

/* Outputs up to this many elements get their contents computed at compile
 * time when every input is known (shape arithmetic, masks, small tables). */
#define KNOWN_MAX_ELEMS (1 << 16)

/* The back end's inference of rk.* ops (npu_ir_register_rk_infer). */
static npu_ext_infer_fn rk_infer;

void
npu_ir_register_rk_infer(npu_ext_infer_fn fn)
{
    __atomic_store_n(&rk_infer, fn, __ATOMIC_RELEASE);
}

static int64_t
prod(const int64_t *d, int a, int b)
{
    int64_t p = 1;
    for (int i = a; i < b; i++)
        p *= d[i];
    return p;
}

/* ---- per-op groups ---------------------------------------------------------- */

static enum npu_status
infer_broadcast_n(struct npu_node *n, int first, int count, enum npu_dtype out_dt, bool same_dt)
{
    struct npu_tensor acc = {0};
    for (int i = first; i < first + count; i++) {
        NEED_IN(i);
        const struct npu_tensor *t = ir_T(n, i);
        if (same_dt && t->dtype != ir_T(n, first)->dtype)
            FAIL("input dtypes differ (%s vs %s)", npu_dtype_name(ir_T(n, first)->dtype),
                 npu_dtype_name(t->dtype));
        if (i == first) {
            acc = *t;
        } else if (!ir_broadcast(&acc, t, &acc)) {
            FAIL("input shapes cannot be broadcast together (input %d '%s')", i, n->in[i]->name);
        }
    }
    return ir_set_out(n, 0, out_dt ? out_dt : ir_T(n, first)->dtype, acc.ndim, acc.dims);
}

static enum npu_status
matmul_shape(struct npu_node *n, const struct npu_tensor *a, const struct npu_tensor *b,
             enum npu_dtype dt, int out)
{
    if (a->ndim < 1 || b->ndim < 1)
        FAIL("MatMul operands must have rank >= 1");
    struct npu_tensor A = *a, B = *b;
    bool va = A.ndim == 1, vb = B.ndim == 1;
    if (va) {
        A.ndim = 2;
        A.dims[1] = A.dims[0];
        A.dims[0] = 1;
    }
    if (vb) {
        B.ndim = 2;
        B.dims[1] = 1;
    }
    int64_t M = A.dims[A.ndim - 2], K = A.dims[A.ndim - 1], K2 = B.dims[B.ndim - 2],
            N = B.dims[B.ndim - 1];
    if (K != K2)
        FAIL("inner dimensions differ (%lld vs %lld)", (long long)K, (long long)K2);
    struct npu_tensor ba = {.ndim = A.ndim - 2}, bb = {.ndim = B.ndim - 2}, bo;
    for (int i = 0; i < ba.ndim; i++)
        ba.dims[i] = A.dims[i];
    for (int i = 0; i < bb.ndim; i++)
        bb.dims[i] = B.dims[i];
    if (!ir_broadcast(&ba, &bb, &bo))
        FAIL("batch dimensions cannot be broadcast");
    int64_t d[NPU_MAX_DIMS + 2];
    int r = 0;
    for (int i = 0; i < bo.ndim; i++)
        d[r++] = bo.dims[i];
    if (!va)
        d[r++] = M;
    if (!vb)
        d[r++] = N;
    return ir_set_out(n, out, dt, r, d);
}

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
            FAIL("kernel (%lld) larger than padded input (%lld) on spatial dim %d",
                 (long long)ek, (long long)(in_sp[i] + pads[i] + pads[i + ns]), i);
        int64_t o = (ceil_mode ? (span + s[i] - 1) / s[i] : span / s[i]) + 1;
        /* The last window must start inside the input or left padding. */
        if (ceil_mode && (o - 1) * s[i] >= in_sp[i] + pads[i])
            o--;
        out_sp[i] = o;
    }
    return NPU_OK;
}

static enum npu_status
infer_conv(struct npu_node *n, int xi, int wi, enum npu_dtype dt, bool transposed)
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
            FAIL("input has %lld channels, weight expects %lld x group %lld",
                 (long long)x->dims[1], (long long)w->dims[1], (long long)group);
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

static enum npu_status
infer_pool(struct npu_node *n)
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

static enum npu_status
infer_reduce(struct npu_node *n)
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

static enum npu_status
infer_argminmax(struct npu_node *n)
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
static enum npu_status
infer_rnn(struct npu_node *n)
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

static enum npu_status
infer_resize(struct npu_node *n)
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
static enum npu_status
infer_einsum(struct npu_node *n)
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
    for (; *p && !(p[0] == '-' && p[1] == '>'); opi++) {
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

static enum npu_status
infer_attention(struct npu_node *n)
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

static enum npu_status
infer_shape(struct npu_graph *g, struct npu_node *n, bool eval)
{
    const struct npu_tensor *x = ir_T(n, 0);
    enum npu_dtype dt;
    switch (n->op) {
    case NPU_OP_ADD: case NPU_OP_SUB: case NPU_OP_MUL: case NPU_OP_DIV: case NPU_OP_MOD:
        return infer_broadcast_n(n, 0, 2, 0, true);
    case NPU_OP_POW:
        return infer_broadcast_n(n, 0, 2, 0, false);
    case NPU_OP_PRELU: {
        enum npu_status st = infer_broadcast_n(n, 0, 2, 0, true);
        if (!st && (n->out[0]->t.ndim != x->ndim ||
                    memcmp(n->out[0]->t.dims, x->dims, sizeof(int64_t) * (size_t)x->ndim)))
            FAIL("slope must broadcast to the input shape");
        return st;
    }
    case NPU_OP_MAX: case NPU_OP_MIN: case NPU_OP_SUM: case NPU_OP_MEAN:
        if (n->nin < 1)
            FAIL("no inputs");
        return infer_broadcast_n(n, 0, n->nin, 0, true);
    case NPU_OP_EQUAL: case NPU_OP_LESS: case NPU_OP_GREATER: case NPU_OP_LESS_OR_EQUAL:
    case NPU_OP_GREATER_OR_EQUAL:
        return infer_broadcast_n(n, 0, 2, NPU_DTYPE_BOOL, true);
    case NPU_OP_AND: case NPU_OP_OR: case NPU_OP_XOR:
        NEED_IN(0);
        if (x->dtype != NPU_DTYPE_BOOL)
            FAIL("inputs must be bool");
        return infer_broadcast_n(n, 0, 2, NPU_DTYPE_BOOL, true);
    case NPU_OP_WHERE: {
        NEED_IN(0);
        if (x->dtype != NPU_DTYPE_BOOL)
            FAIL("condition must be bool, not %s", npu_dtype_name(x->dtype));
        NEED_IN(1);
        NEED_IN(2);
        if (ir_T(n, 1)->dtype != ir_T(n, 2)->dtype)
            FAIL("X and Y dtypes differ (%s vs %s)", npu_dtype_name(ir_T(n, 1)->dtype),
                 npu_dtype_name(ir_T(n, 2)->dtype));
        return infer_broadcast_n(n, 0, 3, ir_T(n, 1)->dtype, false);
    }
    case NPU_OP_NOT:
        NEED_IN(0);
        if (x->dtype != NPU_DTYPE_BOOL)
            FAIL("input must be bool");
        return ir_same_as(n, 0, 0);
    case NPU_OP_SQRT: case NPU_OP_EXP: case NPU_OP_LOG: case NPU_OP_RECIPROCAL:
    case NPU_OP_SIGMOID: case NPU_OP_TANH: case NPU_OP_HARD_SIGMOID: case NPU_OP_HARD_SWISH:
    case NPU_OP_ELU: case NPU_OP_SELU: case NPU_OP_GELU: case NPU_OP_SOFTPLUS: case NPU_OP_ERF:
    case NPU_OP_FLOOR: case NPU_OP_CEIL: case NPU_OP_ROUND: case NPU_OP_SIN: case NPU_OP_COS:
    case NPU_OP_FUSED_SILU: case NPU_OP_FUSED_GELU_TANH:
        NEED_IN(0);
        if (!npu_dtype_is_float(x->dtype))
            FAIL("input must be a float tensor, not %s", npu_dtype_name(x->dtype));
        return ir_same_as(n, 0, 0);
    case NPU_OP_ABS: case NPU_OP_NEG: case NPU_OP_RELU: case NPU_OP_LEAKY_RELU:
    case NPU_OP_SIGN: case NPU_OP_IDENTITY: case NPU_OP_CLIP: case NPU_OP_TRILU:
    case NPU_OP_CUMSUM:
        NEED_IN(0);
        return ir_same_as(n, 0, 0);
    case NPU_OP_DROPOUT: {
        NEED_IN(0);
        enum npu_status st = ir_same_as(n, 0, 0);
        if (!st && n->nout > 1)
            st = ir_set_out(n, 1, NPU_DTYPE_BOOL, x->ndim, x->dims);
        return st;
    }
    case NPU_OP_CAST:
        NEED_IN(0);
        dt = npu_dtype_from_onnx(npu_node_int(n, "to", 0));
        if (!dt)
            FAIL("unsupported target type %lld", (long long)npu_node_int(n, "to", 0));
        return ir_set_out(n, 0, dt, x->ndim, x->dims);
    case NPU_OP_CAST_LIKE:
        NEED_IN(0);
        NEED_IN(1);
        return ir_set_out(n, 0, ir_T(n, 1)->dtype, x->ndim, x->dims);
    case NPU_OP_MATMUL:
        NEED_IN(0);
        NEED_IN(1);
        if (x->dtype != ir_T(n, 1)->dtype)
            FAIL("operand dtypes differ (%s vs %s)", npu_dtype_name(x->dtype),
                 npu_dtype_name(ir_T(n, 1)->dtype));
        if (ir_T(n, 2)) { /* our fused bias (docs/ir.md): one value per output column */
            enum npu_status st = matmul_shape(n, x, ir_T(n, 1), x->dtype, 0);
            const struct npu_tensor *o = &n->out[0]->t;
            if (!st && (o->ndim < 1 || ir_T(n, 2)->dtype != x->dtype ||
                        npu_tensor_numel(ir_T(n, 2)) != o->dims[o->ndim - 1]))
                FAIL("fused bias must have one %s per output column", npu_dtype_name(x->dtype));
            return st;
        }
        return matmul_shape(n, x, ir_T(n, 1), x->dtype, 0);
    case NPU_OP_MATMUL_INTEGER:
        NEED_IN(0);
        NEED_IN(1);
        return matmul_shape(n, x, ir_T(n, 1), NPU_DTYPE_INT32, 0);
    case NPU_OP_QLINEAR_MATMUL:
        NEED_IN(0);
        NEED_IN(3);
        NEED_IN(7);
        return matmul_shape(n, x, ir_T(n, 3), ir_T(n, 7)->dtype, 0);
    case NPU_OP_GEMM: {
        NEED_IN(0);
        NEED_IN(1);
        const struct npu_tensor *b = ir_T(n, 1);
        if (x->ndim != 2 || b->ndim != 2)
            FAIL("A and B must be matrices (ranks %d, %d)", x->ndim, b->ndim);
        bool ta = npu_node_int(n, "transA", 0), tb = npu_node_int(n, "transB", 0);
        int64_t M = x->dims[ta ? 1 : 0], K = x->dims[ta ? 0 : 1];
        int64_t K2 = b->dims[tb ? 1 : 0], N = b->dims[tb ? 0 : 1];
        if (K != K2)
            FAIL("inner dimensions differ (%lld vs %lld)", (long long)K, (long long)K2);
        int64_t d[2] = {M, N};
        if (ir_T(n, 2)) {
            struct npu_tensor o, mn = {.ndim = 2, .dims = {M, N}};
            if (!ir_broadcast(&mn, ir_T(n, 2), &o) || o.dims[0] != M || o.dims[1] != N ||
                o.ndim != 2)
                FAIL("C does not broadcast to [%lld,%lld]", (long long)M, (long long)N);
        }
        return ir_set_out(n, 0, x->dtype, 2, d);
    }
    case NPU_OP_CONV:
        return infer_conv(n, 0, 1, x ? x->dtype : 0, false);
    case NPU_OP_CONV_TRANSPOSE:
        return infer_conv(n, 0, 1, x ? x->dtype : 0, true);
    case NPU_OP_CONV_INTEGER:
        return infer_conv(n, 0, 1, NPU_DTYPE_INT32, false);
    case NPU_OP_QLINEAR_CONV:
        NEED_IN(7);
        return infer_conv(n, 0, 3, ir_T(n, 7)->dtype, false);
    case NPU_OP_EINSUM:
        return infer_einsum(n);
    case NPU_OP_MAX_POOL: case NPU_OP_AVERAGE_POOL:
        return infer_pool(n);
    case NPU_OP_GLOBAL_AVERAGE_POOL: case NPU_OP_GLOBAL_MAX_POOL: {
        NEED_IN(0);
        if (x->ndim < 3)
            FAIL("needs rank >= 3");
        int64_t d[NPU_MAX_DIMS];
        for (int i = 0; i < x->ndim; i++)
            d[i] = i < 2 ? x->dims[i] : 1;
        return ir_set_out(n, 0, x->dtype, x->ndim, d);
    }
    case NPU_OP_BATCH_NORMALIZATION: case NPU_OP_INSTANCE_NORMALIZATION: {
        NEED_IN(0);
        if (x->ndim < 2)
            FAIL("needs rank >= 2");
        int np = n->op == NPU_OP_BATCH_NORMALIZATION ? 5 : 3;
        for (int i = 1; i < np; i++) {
            NEED_IN(i);
            if (npu_value_numel(n->in[i]) != x->dims[1])
                FAIL("parameter %d ('%s') must have %lld elements", i, n->in[i]->name,
                     (long long)x->dims[1]);
        }
        enum npu_status st = ir_same_as(n, 0, 0);
        for (int i = 1; !st && i < n->nout; i++)
            st = ir_set_out(n, i, x->dtype, 1, &x->dims[1]);
        return st;
    }
    case NPU_OP_LAYER_NORMALIZATION: {
        NEED_IN(0);
        NEED_IN(1);
        int64_t a;
        if (!ir_norm_axis(npu_node_int(n, "axis", -1), x->ndim, &a))
            FAIL("axis out of range");
        struct npu_tensor ns = {.ndim = x->ndim - (int)a}, o;
        for (int i = 0; i < ns.ndim; i++)
            ns.dims[i] = x->dims[a + i];
        for (int i = 1; i < 3; i++)
            if (ir_T(n, i) && (!ir_broadcast(&ns, ir_T(n, i), &o) || o.ndim != ns.ndim ||
                               memcmp(o.dims, ns.dims, sizeof(int64_t) * (size_t)ns.ndim)))
                FAIL("%s does not broadcast to the normalized shape", i == 1 ? "scale" : "bias");
        enum npu_status st = ir_same_as(n, 0, 0);
        int64_t d[NPU_MAX_DIMS];
        for (int i = 0; i < x->ndim; i++)
            d[i] = i < a ? x->dims[i] : 1;
        dt = npu_dtype_from_onnx(npu_node_int(n, "stash_type", 1));
        for (int i = 1; !st && i < n->nout; i++)
            st = ir_set_out(n, i, dt ? dt : NPU_DTYPE_FP32, x->ndim, d);
        return st;
    }
    case NPU_OP_SOFTMAX: case NPU_OP_LOG_SOFTMAX: {
        NEED_IN(0);
        int64_t a;
        if (!ir_norm_axis(npu_node_int(n, "axis", -1), x->ndim, &a))
            FAIL("axis out of range");
        return ir_same_as(n, 0, 0);
    }
    case NPU_OP_REDUCE_MEAN: case NPU_OP_REDUCE_SUM: case NPU_OP_REDUCE_MAX:
    case NPU_OP_REDUCE_MIN: case NPU_OP_REDUCE_PROD: case NPU_OP_REDUCE_L2:
    case NPU_OP_REDUCE_SUM_SQUARE: case NPU_OP_REDUCE_L1: case NPU_OP_REDUCE_LOG_SUM:
    case NPU_OP_REDUCE_LOG_SUM_EXP:
        return infer_reduce(n);
    case NPU_OP_IS_NAN: case NPU_OP_IS_INF:
        NEED_IN(0);
        if (!npu_dtype_is_float(x->dtype))
            FAIL("input must be a float tensor, not %s", npu_dtype_name(x->dtype));
        return ir_set_out(n, 0, NPU_DTYPE_BOOL, x->ndim, x->dims);
    case NPU_OP_CELU:
        NEED_IN(0);
        if (x->dtype != NPU_DTYPE_FP32 && x->dtype != NPU_DTYPE_FP16)
            FAIL("input must be fp32 or fp16, not %s", npu_dtype_name(x->dtype));
        return ir_same_as(n, 0, 0);
    case NPU_OP_ONE_HOT:
        return ir_infer_one_hot(n);
    case NPU_OP_GATHER_ND:
        return ir_infer_gather_nd(n);
    case NPU_OP_GRID_SAMPLE: {
        NEED_IN(0);
        NEED_IN(1);
        const struct npu_tensor *gr = ir_T(n, 1);
        if (!npu_dtype_is_float(x->dtype) || gr->dtype != x->dtype)
            FAIL("X and grid must be float tensors of one dtype");
        if (x->ndim != 4)
            FAIL("rank-%d input (4-d [N, C, H, W] is supported)", x->ndim);
        if (gr->ndim != 4 || gr->dims[0] != x->dims[0] || gr->dims[3] != 2)
            FAIL("grid must be [N, Ho, Wo, 2] with N = %lld", (long long)x->dims[0]);
        int64_t d[4] = {x->dims[0], x->dims[1], gr->dims[1], gr->dims[2]};
        return ir_set_out(n, 0, x->dtype, 4, d);
    }
    case NPU_OP_ARGMAX: case NPU_OP_ARGMIN:
        return infer_argminmax(n);
    case NPU_OP_RESHAPE:
        return ir_infer_reshape(n);
    case NPU_OP_FLATTEN: {
        NEED_IN(0);
        int64_t a = npu_node_int(n, "axis", 1);
        if (a < 0)
            a += x->ndim;
        if (a < 0 || a > x->ndim)
            FAIL("axis out of range");
        int64_t d[2] = {prod(x->dims, 0, (int)a), prod(x->dims, (int)a, x->ndim)};
        return ir_set_out(n, 0, x->dtype, 2, d);
    }
    case NPU_OP_TRANSPOSE: {
        NEED_IN(0);
        size_t cnt;
        const int64_t *perm = npu_node_ints(n, "perm", &cnt);
        int64_t d[NPU_MAX_DIMS];
        bool seen[NPU_MAX_DIMS] = {0};
        if (perm && (int)cnt != x->ndim)
            FAIL("perm has %zu entries for rank %d", cnt, x->ndim);
        for (int i = 0; i < x->ndim; i++) {
            int64_t p = perm ? perm[i] : x->ndim - 1 - i;
            if (p < 0 || p >= x->ndim || seen[p])
                FAIL("perm is not a permutation");
            seen[p] = true;
            d[i] = x->dims[p];
        }
        return ir_set_out(n, 0, x->dtype, x->ndim, d);
    }
    case NPU_OP_SQUEEZE:
        return ir_infer_squeeze(n, false);
    case NPU_OP_UNSQUEEZE:
        return ir_infer_squeeze(n, true);
    case NPU_OP_CONCAT:
        return ir_infer_concat(n);
    case NPU_OP_SPLIT:
        return ir_infer_split(n);
    case NPU_OP_SLICE:
        return ir_infer_slice(n);
    case NPU_OP_GATHER: case NPU_OP_GATHER_ELEMENTS:
        return ir_infer_gather(n);
    case NPU_OP_PAD:
        return ir_infer_pad(n);
    case NPU_OP_EXPAND:
        return ir_infer_expand(n);
    case NPU_OP_TILE:
        return ir_infer_tile(n);
    case NPU_OP_SHAPE: case NPU_OP_SIZE:
        return ir_infer_shape_ops(g, n, eval);
    case NPU_OP_CONSTANT: {
        const struct npu_tensor *t = npu_attrs_tensor(&(struct npu_attrs){n->attr, (size_t)n->nattr},
                                                      "value");
        if (!t)
            FAIL("Constant without a tensor value");
        enum npu_status st = ir_set_out(n, 0, t->dtype, t->ndim, t->dims);
        if (!st && eval)
            n->out[0]->known = t->data;
        return st;
    }
    case NPU_OP_CONSTANT_OF_SHAPE: {
        NEED_DATA(0, "shape");
        int64_t d[NPU_MAX_DIMS];
        int r = ir_read_ints(n->in[0], d, NPU_MAX_DIMS);
        if (r < 0)
            FAIL("shape must be an integer vector of at most %d entries", NPU_MAX_DIMS);
        const struct npu_attr *v = npu_node_attr(n, "value");
        dt = NPU_DTYPE_FP32;
        if (v) {
            if (v->type != NPU_ATTR_TENSOR || npu_tensor_numel(v->t) != 1)
                FAIL("value must be a one-element tensor");
            dt = v->t->dtype;
        }
        return ir_set_out(n, 0, dt, r, d);
    }
    case NPU_OP_RANGE:
        return ir_infer_range(n);
    case NPU_OP_RESIZE:
        return infer_resize(n);
    case NPU_OP_DEPTH_TO_SPACE: case NPU_OP_SPACE_TO_DEPTH:
        return ir_infer_depth_space(n);
    case NPU_OP_SCATTER_ND: case NPU_OP_SCATTER_ELEMENTS:
        return ir_infer_scatter(n);
    case NPU_OP_TOP_K:
        return ir_infer_topk(n);
    case NPU_OP_RNN: case NPU_OP_GRU: case NPU_OP_LSTM:
        return infer_rnn(n);
    case NPU_OP_QUANTIZE_LINEAR:
        NEED_IN(0);
        NEED_IN(1);
        dt = ir_T(n, 2) ? ir_T(n, 2)->dtype : NPU_DTYPE_UINT8;
        if (npu_node_int(n, "output_dtype", 0))
            dt = npu_dtype_from_onnx(npu_node_int(n, "output_dtype", 0));
        if (dt != NPU_DTYPE_UINT8 && dt != NPU_DTYPE_INT8 && dt != NPU_DTYPE_INT16 &&
            dt != NPU_DTYPE_UINT16 && dt != NPU_DTYPE_INT32)
            FAIL("unsupported quantised type %s", npu_dtype_name(dt));
        return ir_set_out(n, 0, dt, x->ndim, x->dims);
    case NPU_OP_DEQUANTIZE_LINEAR:
        NEED_IN(0);
        NEED_IN(1);
        return ir_set_out(n, 0, ir_T(n, 1)->dtype, x->ndim, x->dims);
    case NPU_OP_FUSED_ATTENTION:
        return infer_attention(n);
    case NPU_OP_NONE: case NPU_OP_COUNT:
        break;
    default:
        /* the NPU back end's lowered rk.* ops, through the hook it registers */
        if (npu_op_is_rk(n->op)) {
            npu_ext_infer_fn fn = __atomic_load_n(&rk_infer, __ATOMIC_ACQUIRE);
            if (fn)
                return fn(g, n);
            FAIL("an NPU back-end op, but no back end is registered to infer it");
        }
        break;
    }
    FAIL("no shape inference for this op");
}

/* Ops whose contents the small evaluator (npu-eval.c) can compute. */
static bool
evaluable(enum npu_op op)
{
    switch (op) {
    case NPU_OP_SHAPE: case NPU_OP_SIZE: case NPU_OP_CONSTANT:
        return false; /* handled above */
    default:
        return !npu_op_is_rk(op); /* NPU programs are not evaluated */
    }
}

static enum npu_status
infer_known(struct npu_graph *g, struct npu_node *n)
{
    if (!evaluable(n->op))
        return NPU_OK;
    for (int i = 0; i < n->nin; i++)
        if (n->in[i] && !npu_value_data(n->in[i]))
            return NPU_OK;
    if (n->nin == 0 && n->op != NPU_OP_CONSTANT)
        return NPU_OK;
    for (int i = 0; i < n->nout; i++)
        if (npu_value_numel(n->out[i]) > KNOWN_MAX_ELEMS)
            return NPU_OK;
    const struct npu_tensor *in[64];
    struct npu_tensor tin[64], *out[64], tout[64];
    if (n->nin > 64 || n->nout > 64)
        return NPU_OK;
    for (int i = 0; i < n->nin; i++) {
        if (n->in[i]) {
            tin[i] = n->in[i]->t;
            tin[i].data = (void *)npu_value_data(n->in[i]);
            in[i] = &tin[i];
        } else {
            in[i] = NULL;
        }
    }
    for (int i = 0; i < n->nout; i++) {
        tout[i] = n->out[i]->t;
        tout[i].data = npu_graph_alloc(g, (size_t)npu_tensor_nbytes(&tout[i]));
        if (!tout[i].data)
            return NPU_ERR_NOMEM;
        out[i] = &tout[i];
    }
    if (npu_eval_node(n, in, out) != NPU_OK)
        return NPU_OK; /* not evaluable here: stays unknown */
    for (int i = 0; i < n->nout; i++)
        n->out[i]->known = tout[i].data;
    return NPU_OK;
}

enum npu_status
ir_infer_node(struct npu_graph *g, struct npu_node *n, bool eval)
{
    for (int i = 0; i < n->nin; i++) {
        const struct npu_value *v = n->in[i];
        if (v && (v->t.dtype == NPU_DTYPE_UNDEFINED || npu_tensor_nbytes(&v->t) < 0))
            FAIL("input %d ('%s') has no type", i, v->name);
    }
    int maxout = 1;
    switch (n->op) {
    case NPU_OP_SPLIT: maxout = 64; break;
    case NPU_OP_DROPOUT: case NPU_OP_MAX_POOL: case NPU_OP_TOP_K: maxout = 2; break;
    case NPU_OP_LAYER_NORMALIZATION: case NPU_OP_LSTM: maxout = 3; break;
    case NPU_OP_RNN: case NPU_OP_GRU: maxout = 2; break;
    case NPU_OP_BATCH_NORMALIZATION: maxout = 5; break;
    default: maxout = npu_op_is_rk(n->op) ? 8 : 1; break;
    }
    if (n->nout < 1 || n->nout > maxout)
        FAIL("has %d outputs; the op defines %s%d", n->nout, maxout > 1 ? "1 to " : "", maxout);
    if (eval)
        for (int i = 0; i < n->nout; i++)
            n->out[i]->known = NULL;
    enum npu_status st = infer_shape(g, n, eval);
    if (st || !eval)
        return st;
    return infer_known(g, n);
}

enum npu_status
npu_infer_node(struct npu_graph *g, struct npu_node *n)
{
    return ir_infer_node(g, n, true);
}

enum npu_status
npu_graph_infer(struct npu_graph *g)
{
    npu_graph_for_each_node(g, n) {
        enum npu_status st = npu_infer_node(g, n);
        if (st)
            return st;
    }
    return NPU_OK;
}
