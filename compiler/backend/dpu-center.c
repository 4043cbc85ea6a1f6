/* SPDX-License-Identifier: MIT */
/*
 * dpu-center.c: layer-norm centring folded into the producers of a residual stream.
 *
 * A transformer's residual stream x_{l+1} = x_l + f_l(LN(x_l)) is read only by layer norms
 * and by the next residual Add. Layer norm is invariant to adding a constant to each row
 * (LN(x + c 1) = LN(x)), so the whole stream may be replaced by its row-centred version
 * x - mean(x) 1 without changing any layer norm's output, provided every addend of the
 * stream is centred: a product A B + b is centred by subtracting from each row of B its
 * mean over the output columns (and from b its mean), a convolution likewise over its
 * output channels, a constant by subtracting its mean along the last axis. The centred
 * stream then needs no mean in its layer norms: they are marked "npu_centered" and skip the
 * mean and centring passes (docs/npu-dpu-ops.md §3.6). The rewrite is exact in real
 * arithmetic; it only changes values nobody else reads, which is checked: every value of the
 * stream is read only by layer norms over the last axis and by Adds whose results belong to
 * the stream, and none is a graph output.
 *
 * The stream is found from each layer norm's input as the connected set of same-shape Add
 * nodes; its leaves (the Adds' other operands) are MatMul (constant 2-D B, optional constant
 * bias, no fused activation), Conv (constant weights, optional bias) reached through
 * Reshape / Transpose / Flatten / (Un)Squeeze nodes that keep the centred axis whole, or
 * constants. Anything else, or a leaf value with other readers, leaves the graph unchanged.
 */
#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#include <xmmintrin.h>
#endif

#include "dpu-low.h"

#define MAX_STREAM 512

struct leaf {
    struct npu_value *v; /* the value whose producer (or itself, for constants) is centred */
    int axis;            /* the centred axis of v */
};

struct stream {
    struct npu_value *vals[MAX_STREAM]; /* stream values (last axis centred) */
    int nv;
    struct leaf leaves[MAX_STREAM];
    int nl;
    struct npu_node *lns[MAX_STREAM];
    int nln;
    bool bad;
};

static bool
has_val(const struct stream *s, const struct npu_value *v)
{
    for (int i = 0; i < s->nv; i++)
        if (s->vals[i] == v)
            return true;
    return false;
}

static bool
last_axis_ln(const struct npu_node *n)
{
    if (n->op != NPU_OP_LAYER_NORMALIZATION || !n->in[0])
        return false;
    int64_t ax = npu_node_int(n, "axis", -1);
    if (ax < 0)
        ax += n->in[0]->t.ndim;
    for (int i = 1; i < n->nout; i++)
        if (n->out[i]->nusers || n->out[i]->is_output)
            return false;
    return ax == n->in[0]->t.ndim - 1;
}

static bool
same_dims(const struct npu_tensor *a, const struct npu_tensor *b)
{
    if (a->ndim != b->ndim)
        return false;
    for (int i = 0; i < a->ndim; i++)
        if (a->dims[i] != b->dims[i])
            return false;
    return true;
}

/* A stream Add: two float operands, each of the result's shape. */
static bool
stream_add(const struct npu_node *n)
{
    return n->op == NPU_OP_ADD && n->nin == 2 && n->nout == 1 && n->in[0] && n->in[1] &&
           npu_dtype_is_float(n->out[0]->t.dtype) && same_dims(&n->in[0]->t, &n->out[0]->t) &&
           same_dims(&n->in[1]->t, &n->out[0]->t);
}

static void
push_val(struct stream *s, struct npu_value *v)
{
    if (has_val(s, v))
        return;
    if (s->nv == MAX_STREAM) {
        s->bad = true;
        return;
    }
    s->vals[s->nv++] = v;
}

/* The input axis that a view op's output axis `axis` comes from (-1: not kept whole). */
static int
view_axis(const struct npu_node *n, int axis)
{
    const struct npu_tensor *o = &n->out[0]->t, *i = &n->in[0]->t;
    if (n->op == NPU_OP_TRANSPOSE) {
        size_t np = 0;
        const int64_t *perm = npu_node_ints(n, "perm", &np);
        if (!perm || (int)np != o->ndim)
            return -1;
        return (int)perm[axis];
    }
    /* reshape-like: the axis with the same dim and the same product of dims before it */
    int64_t pre = 1;
    for (int k = 0; k < axis; k++)
        pre *= o->dims[k];
    int64_t p = 1;
    for (int k = 0; k < i->ndim; k++) {
        if (p == pre && i->dims[k] == o->dims[axis])
            return k;
        p *= i->dims[k];
    }
    return -1;
}

/* Follows a leaf operand back through single-reader view ops to what gets centred. */
static void
add_leaf(struct stream *s, struct npu_value *v, int axis)
{
    for (int guard = 0; guard < 16; guard++) {
        if (v->is_output) {
            s->bad = true;
            return;
        }
        if (v->kind == NPU_VALUE_CONST) {
            /* f32 graphs only: the centred copies are f32 */
            if (v->t.dtype != NPU_DTYPE_FP32)
                s->bad = true;
            break;
        }
        struct npu_node *p = v->kind == NPU_VALUE_NODE ? v->producer : NULL;
        if (!p || v->nusers != 1 || p->nout != 1) {
            s->bad = true;
            return;
        }
        if (p->op == NPU_OP_RESHAPE || p->op == NPU_OP_TRANSPOSE || p->op == NPU_OP_FLATTEN ||
            p->op == NPU_OP_SQUEEZE || p->op == NPU_OP_UNSQUEEZE) {
            if (!p->in[0] || (axis = view_axis(p, axis)) < 0) {
                s->bad = true;
                return;
            }
            v = p->in[0];
            continue;
        }
        const struct npu_value *w = p->nin > 1 ? p->in[1] : NULL;
        const struct npu_value *b = p->nin > 2 ? p->in[2] : NULL;
        const char *act = npu_node_string(p, "npu_act", NULL);
        bool const_w = w && w->kind == NPU_VALUE_CONST && w->t.dtype == NPU_DTYPE_FP32;
        bool const_b = !b || (b->kind == NPU_VALUE_CONST && b->t.dtype == NPU_DTYPE_FP32);
        if ((act && strcmp(act, "none")) || !const_w || !const_b) {
            s->bad = true;
            return;
        }
        if (p->op == NPU_OP_MATMUL && p->nin <= 3 && w->t.ndim == 2 && axis == v->t.ndim - 1 &&
            (!b || npu_value_numel(b) == w->t.dims[1]))
            break;
        if (p->op == NPU_OP_CONV && p->nin <= 3 && v->t.ndim == 4 && axis == 1 &&
            npu_node_int(p, "group", 1) == 1 && (!b || npu_value_numel(b) == w->t.dims[0]))
            break;
        s->bad = true;
        return;
    }
    for (int i = 0; i < s->nl; i++)
        if (s->leaves[i].v == v)
            return;
    if (s->nl == MAX_STREAM) {
        s->bad = true;
        return;
    }
    s->leaves[s->nl].v = v;
    s->leaves[s->nl].axis = axis;
    s->nl++;
}

/* The connected stream around value x (an LN input). */
static void
collect(struct stream *s, struct npu_value *x)
{
    push_val(s, x);
    for (int k = 0; k < s->nv && !s->bad; k++) {
        struct npu_value *v = s->vals[k];
        if (v->is_output) {
            s->bad = true;
            return;
        }
        /* readers: layer norms (input 0) and stream Adds (whose results join) */
        for (int u = 0; u < v->nusers && !s->bad; u++) {
            struct npu_node *n = v->users[u];
            if (last_axis_ln(n) && n->in[0] == v && (n->nin < 2 || n->in[1] != v) &&
                (n->nin < 3 || n->in[2] != v)) {
                bool seen = false;
                for (int i = 0; i < s->nln; i++)
                    seen |= s->lns[i] == n;
                if (!seen && s->nln < MAX_STREAM)
                    s->lns[s->nln++] = n;
                else if (!seen)
                    s->bad = true;
            } else if (stream_add(n)) {
                push_val(s, n->out[0]);
                /* the other operand must be centred as well */
                struct npu_value *o = n->in[0] == v ? n->in[1] : n->in[0];
                if (o != v && !has_val(s, o)) {
                    struct npu_node *op = o->kind == NPU_VALUE_NODE ? o->producer : NULL;
                    if (op && stream_add(op))
                        push_val(s, o);
                    else
                        add_leaf(s, o, o->t.ndim - 1);
                }
            } else {
                s->bad = true;
            }
        }
        /* producer: a stream Add (both operands join) or a leaf */
        struct npu_node *p = v->kind == NPU_VALUE_NODE ? v->producer : NULL;
        if (p && stream_add(p)) {
            for (int i = 0; i < 2; i++) {
                struct npu_value *o = p->in[i];
                struct npu_node *op = o->kind == NPU_VALUE_NODE ? o->producer : NULL;
                if (op && stream_add(op))
                    push_val(s, o);
                else if (!has_val(s, o))
                    add_leaf(s, o, o->t.ndim - 1);
            }
        } else {
            add_leaf(s, v, v->t.ndim - 1);
        }
    }
}

/* The means of eight rows of d floats at b (row r at b + r * d), each summed in double in
 * the order of its columns: the sums run side by side, reading memory in order. b may be
 * unaligned (borrowed from the model file): unaligned vector loads, npu_f32_at. */
static void
row_means8(const float *b, int64_t d, double s8[8])
{
    for (int r = 0; r < 8; r++)
        s8[r] = 0;
    int64_t j = 0;
#if defined(__SSE2__)
    /* two rows' sums per register, four columns of eight rows transposed at a time: each
     * row's additions in the order of j, as below */
    __m128d a01 = _mm_setzero_pd(), a23 = a01, a45 = a01, a67 = a01;
    for (; j + 4 <= d; j += 4) {
        __m128 r0 = _mm_loadu_ps(b + j), r1 = _mm_loadu_ps(b + d + j),
               r2 = _mm_loadu_ps(b + 2 * d + j), r3 = _mm_loadu_ps(b + 3 * d + j);
        __m128 r4 = _mm_loadu_ps(b + 4 * d + j), r5 = _mm_loadu_ps(b + 5 * d + j),
               r6 = _mm_loadu_ps(b + 6 * d + j), r7 = _mm_loadu_ps(b + 7 * d + j);
        _MM_TRANSPOSE4_PS(r0, r1, r2, r3); /* r0: column j of rows 0-3 */
        _MM_TRANSPOSE4_PS(r4, r5, r6, r7);
#define CENTRE_ADD(lo, hi)                                                                         \
    do {                                                                                           \
        a01 = _mm_add_pd(a01, _mm_cvtps_pd(lo));                                                   \
        a23 = _mm_add_pd(a23, _mm_cvtps_pd(_mm_movehl_ps(lo, lo)));                                \
        a45 = _mm_add_pd(a45, _mm_cvtps_pd(hi));                                                   \
        a67 = _mm_add_pd(a67, _mm_cvtps_pd(_mm_movehl_ps(hi, hi)));                                \
    } while (0)
        CENTRE_ADD(r0, r4);
        CENTRE_ADD(r1, r5);
        CENTRE_ADD(r2, r6);
        CENTRE_ADD(r3, r7);
#undef CENTRE_ADD
    }
    _mm_storeu_pd(s8, a01);
    _mm_storeu_pd(s8 + 2, a23);
    _mm_storeu_pd(s8 + 4, a45);
    _mm_storeu_pd(s8 + 6, a67);
#endif
    for (; j < d; j++)
        for (int r = 0; r < 8; r++)
            s8[r] += npu_f32_at(b, r * d + j);
    for (int r = 0; r < 8; r++)
        s8[r] /= (double)d;
}

void
npu_dpu_row_means(const float *b, int64_t rows, int64_t d, double *m)
{
    int64_t o = 0;
    for (; o + 8 <= rows; o += 8)
        row_means8(b + o * d, d, m + o);
    for (; o < rows; o++) {
        double s = 0;
        for (int64_t j = 0; j < d; j++)
            s += npu_f32_at(b + o * d, j);
        m[o] = s / (double)d;
    }
}

/* v (n floats, possibly unaligned) minus its mean along an axis of d elements with `inner`
 * elements after it, in place. Each mean is summed in double in the order of the axis; the
 * sums of one outer index run side by side over the inner positions (the same additions in
 * the same order as one position at a time, but reading memory in order). */
static enum npu_status
centre_data(float *v, int64_t n, int64_t d, int64_t inner)
{
    double *m = malloc((size_t)(inner ? inner : 1) * sizeof(double));
    if (!m)
        return NPU_ERR_NOMEM;
    int64_t outer = d > 0 && inner > 0 ? n / (d * inner) : 0, o = 0;
    if (inner == 1) /* rows of B: eight rows' sums side by side (each its own chain) */
        for (; o + 8 <= outer; o += 8) {
            float *b = v + o * d;
            double s8[8];
            row_means8(b, d, s8);
            for (int r = 0; r < 8; r++) {
                float *br = b + r * d;
                int64_t j = 0;
#if defined(__SSE2__)
                /* the same double subtraction and rounding to float, four at a time */
                const __m128d m2 = _mm_set1_pd(s8[r]);
                for (; j + 4 <= d; j += 4) {
                    __m128 x = _mm_loadu_ps(br + j);
                    __m128 lo = _mm_cvtpd_ps(_mm_sub_pd(_mm_cvtps_pd(x), m2));
                    __m128 hi = _mm_cvtpd_ps(_mm_sub_pd(_mm_cvtps_pd(_mm_movehl_ps(x, x)), m2));
                    _mm_storeu_ps(br + j, _mm_movelh_ps(lo, hi));
                }
#endif
                for (; j < d; j++)
                    npu_f32_put(br, j, (float)(npu_f32_at(br, j) - s8[r]));
            }
        }
    for (; o < outer; o++) {
        float *b = v + o * d * inner;
        for (int64_t in = 0; in < inner; in++)
            m[in] = 0;
        for (int64_t j = 0; j < d; j++)
            for (int64_t in = 0; in < inner; in++)
                m[in] += npu_f32_at(b, j * inner + in);
        for (int64_t in = 0; in < inner; in++)
            m[in] /= (double)d;
        for (int64_t j = 0; j < d; j++)
            for (int64_t in = 0; in < inner; in++)
                npu_f32_put(b, j * inner + in, (float)(npu_f32_at(b, j * inner + in) - m[in]));
    }
    free(m);
    return NPU_OK;
}

/* A copy of constant c (as f32) minus its mean along `axis` (centre_data), in the graph's
 * arena directly. With `deferred` (a MatMul's B on the NPU), a constant centred in place
 * is left as it is and *deferred set: the packer subtracts the rows' means while it
 * converts (conv-weights.c), so the centred fp32 floats are never written (no
 * copy-on-write of the model file's pages); npu_dpu_centre_pending writes them for any
 * other reader. */
static struct npu_value *
centred_const(struct npu_graph *g, const struct npu_value *c, int axis, const char *suffix,
              bool in_place, bool *deferred)
{
    const struct npu_tensor *t = &c->t;
    int64_t n = npu_tensor_numel(t), d = t->dims[axis], inner = 1;
    for (int k = axis + 1; k < t->ndim; k++)
        inner *= t->dims[k];
    /* a constant only this producer reads, in memory the graph owns, is centred where it
     * lies (the same arithmetic on the same floats); any other is copied first. In place
     * it may be unaligned (borrowed from the model file's private mapping, npu-onnx.c):
     * every access is an unaligned vector load / store or npu_f32_at / _put */
    float *v = in_place && c->kind == NPU_VALUE_CONST && t->dtype == NPU_DTYPE_FP32 &&
                       c->nusers == 1 && !c->is_output &&
                       npu_graph_owns(g, t->data, (size_t)n * sizeof(float))
                   ? t->data
                   : NULL;
    const bool copy = !v;
    if (copy)
        v = npu_graph_alloc(g, (size_t)n * sizeof(float));
    if (!v)
        return NULL;
    if (copy && t->dtype == NPU_DTYPE_FP32)
        memcpy(v, npu_value_data(c), (size_t)n * sizeof(float));
    else if (copy)
        for (int64_t i = 0; i < n; i++)
            v[i] = (float)npu_value_get_f64(c, i);
    if (deferred)
        *deferred = !copy && t->ndim == 2 && axis == 1;
    if ((!deferred || !*deferred) && centre_data(v, n, d, inner))
        return NULL;
    struct npu_tensor nt = *t;
    nt.dtype = NPU_DTYPE_FP32;
    nt.data = v;
    char name[160];
    snprintf(name, sizeof(name), "%.140s.%s", c->name, suffix);
    return npu_graph_add_const_owned(g, name, &nt);
}

enum npu_status
npu_dpu_centre_pending(struct npu_graph *g, struct npu_node *p)
{
    (void)g;
    if (!npu_node_int(p, NPU_CENTRE_ROWS_ATTR, 0))
        return NPU_OK;
    struct npu_value *w = p->nin > 1 ? p->in[1] : NULL;
    if (!w || w->kind != NPU_VALUE_CONST || w->t.dtype != NPU_DTYPE_FP32 || w->t.ndim != 2) {
        npu_err("dpu", "'%s': rows to centre but B is not a 2-D fp32 constant", p->name);
        return NPU_ERR_INTERNAL;
    }
    enum npu_status st = centre_data(w->t.data, npu_value_numel(w), w->t.dims[1], 1);
    if (!st)
        npu_node_del_attr(p, NPU_CENTRE_ROWS_ATTR);
    return st;
}

static enum npu_status
centre_leaf(struct npu_graph *g, const struct stream *s, const struct leaf *l)
{
    struct npu_value *v = l->v;
    if (v->kind == NPU_VALUE_CONST) {
        /* a new centred copy for the stream's Adds (other readers keep the original) */
        struct npu_value *c = centred_const(g, v, l->axis, "centred", false, NULL);
        if (!c)
            return NPU_ERR_NOMEM;
        for (int k = 0; k < s->nv; k++) {
            struct npu_node *p = s->vals[k]->kind == NPU_VALUE_NODE ? s->vals[k]->producer : NULL;
            if (p && stream_add(p))
                for (int i = 0; i < p->nin; i++)
                    if (p->in[i] == v)
                        p->in[i] = c;
        }
        return NPU_OK;
    }
    struct npu_node *p = v->producer;
    /* MatMul B [K, N]: rows centred over N (axis 1); Conv W [O, C, kh, kw]: over O (axis 0).
     * A MatMul on the NPU whose B is centred in place gets it centred by its packer (the
     * mark NPU_CENTRE_ROWS_ATTR; npu_dpu_centre_pending for its other readers) */
    const bool mm = p->op == NPU_OP_MATMUL;
    bool deferred = false;
    struct npu_value *w = centred_const(g, p->in[1], mm ? 1 : 0, "centred", true,
                                        mm && p->device == NPU_DEVICE_NPU ? &deferred : NULL);
    if (!w)
        return NPU_ERR_NOMEM;
    p->in[1] = w;
    enum npu_status st = deferred ? npu_node_set_int(g, p, NPU_CENTRE_ROWS_ATTR, 1) : NPU_OK;
    if (st)
        return st;
    if (p->nin > 2 && p->in[2]) {
        struct npu_value *b =
            centred_const(g, p->in[2], p->in[2]->t.ndim - 1, "centred", true, NULL);
        if (!b)
            return NPU_ERR_NOMEM;
        p->in[2] = b;
    }
    return NPU_OK;
}

bool
dl_ln_centrable(const struct npu_node *ln)
{
    if (!last_axis_ln(ln))
        return false;
    struct stream *s = malloc(sizeof(*s));
    if (!s)
        return false;
    memset(s, 0, sizeof(*s));
    collect(s, ln->in[0]);
    bool ok = !s->bad && s->nl > 0;
    free(s);
    return ok;
}

enum npu_status
npu_dpu_center_streams(struct npu_graph *g)
{
    enum npu_status st = npu_graph_update_uses(g);
    if (st)
        return st;
    struct stream *s = malloc(sizeof(*s));
    if (!s)
        return NPU_ERR_NOMEM;
    bool changed = false;
    npu_graph_for_each_node (g, n) {
        if (!last_axis_ln(n) || n->device != NPU_DEVICE_NPU || npu_node_int(n, "npu_centered", 0))
            continue;
        memset(s, 0, sizeof(*s));
        collect(s, n->in[0]);
        if (s->bad || !s->nl)
            continue;
        for (int i = 0; i < s->nl && !st; i++)
            st = centre_leaf(g, s, &s->leaves[i]);
        for (int i = 0; i < s->nln && !st; i++)
            st = npu_node_set_int(g, s->lns[i], "npu_centered", 1);
        if (st)
            break;
        npu_dbg("dpu", "residual stream of '%s': %d values, %d producers centred, %d layer norms",
                n->name, s->nv, s->nl, s->nln);
        changed = true;
    }
    free(s);
    if (!st && changed)
        st = npu_graph_update_uses(g);
    return st;
}
