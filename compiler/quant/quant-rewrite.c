// SPDX-License-Identifier: MIT
/*
 * quant-rewrite.c: the graph edits of the quantiser.
 *
 * prepare: makes every quantisable product a bare product whose output the
 * calibration can observe: a Gemm with constant B becomes MatMul (alpha and
 * transB folded into B) + Add(beta C); a MatMul's fused bias and a product's
 * fused activation become nodes of their own, except ReLU and Clip(lo <= 0 <=
 * hi) after a Conv, which the int8 result applies by saturation (the output
 * range, observed after the activation, starts at 0, or lies inside the clip).
 *
 * rewrite: Conv / MatMul with constant fp32 weights -> QuantizeLinear(x) ->
 * QLinearConv / QLinearMatMul -> DequantizeLinear(y), when the NPU's handler
 * accepts the QLinear node (else the layer stays float, with the handler's
 * reason). A layer whose input another quantised layer made reads that int8
 * tensor directly (same value, same statistics, so the same parameters), so a
 * chain stays int8; the DequantizeLinear nobody reads goes with DCE.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "npu/npu-backend.h"
#include "npu/npu-passes.h"
#include "quant-rewrite.h"

static bool
const_f32(const struct npu_value *v)
{
    return v && v->kind == NPU_VALUE_CONST && v->t.dtype == NPU_DTYPE_FP32 && v->t.data;
}

static bool
saturating_act(const struct npu_node *n)
{
    const char *a = npu_node_string(n, "npu_act", NULL);
    if (!a)
        return true;
    if (n->op != NPU_OP_CONV)
        return false;
    if (!strcmp(a, "relu"))
        return true;
    if (!strcmp(a, "clip"))
        return npu_node_float(n, "npu_act_alpha", -INFINITY) <= 0 &&
               npu_node_float(n, "npu_act_beta", INFINITY) >= 0;
    return false;
}

static enum npu_op
act_op(const char *a)
{
    static const struct {
        const char *name;
        enum npu_op op;
    } m[] = {{"relu", NPU_OP_RELU},
             {"leaky_relu", NPU_OP_LEAKY_RELU},
             {"clip", NPU_OP_CLIP},
             {"sigmoid", NPU_OP_SIGMOID},
             {"tanh", NPU_OP_TANH},
             {"gelu", NPU_OP_GELU},
             {"gelu_tanh", NPU_OP_FUSED_GELU_TANH},
             {"silu", NPU_OP_FUSED_SILU},
             {"hard_swish", NPU_OP_HARD_SWISH},
             {"hard_sigmoid", NPU_OP_HARD_SIGMOID}};
    for (size_t i = 0; i < NPU_ARRAY_SIZE(m); i++)
        if (!strcmp(a, m[i].name))
            return m[i].op;
    return NPU_OP_NONE;
}

static struct npu_value *
scalar_f32(struct npu_graph *g, const char *name, float v)
{
    return npu_graph_const_f32(g, name, &v, 1, true);
}

/* A copy of n without its fused activation (and, with drop_bias, without
 * input 2), defining a new value named after y. */
struct npu_node *
quant_bare_copy(struct npu_graph *g, struct npu_node *n, int nin, enum npu_op op)
{
    char name[256];
    snprintf(name, sizeof(name), "%s_pre", n->out[0]->name);
    const char *names[1] = {name};
    struct npu_node *c = npu_node_new(g, op, n->name, n->in, nin, 1, names);
    if (!c)
        return NULL;
    for (int i = 0; i < n->nattr; i++)
        if (strncmp(n->attr[i].name, "npu_act", 7) && npu_node_set_attr(g, c, &n->attr[i]))
            return NULL;
    return c;
}

/* The activation node of n's npu_act reading x and defining y. */
struct npu_node *
quant_act_node(struct npu_graph *g, struct npu_node *n, struct npu_value *x, struct npu_value *y)
{
    const char *a = npu_node_string(n, "npu_act", NULL);
    enum npu_op op = act_op(a);
    char name[256];
    snprintf(name, sizeof(name), "%s_act", n->name);
    struct npu_value *in[3] = {x, NULL, NULL};
    int nin = 1;
    if (op == NPU_OP_CLIP) {
        char b[280];
        snprintf(b, sizeof(b), "%s_lo", name);
        in[1] = scalar_f32(g, b, npu_node_float(n, "npu_act_alpha", -INFINITY));
        snprintf(b, sizeof(b), "%s_hi", name);
        in[2] = scalar_f32(g, b, npu_node_float(n, "npu_act_beta", INFINITY));
        if (!in[1] || !in[2])
            return NULL;
        nin = 3;
    }
    struct npu_node *m = npu_node_new_v(g, op, name, in, nin, &y, 1);
    if (!m)
        return NULL;
    if (op == NPU_OP_LEAKY_RELU &&
        npu_node_set_float(g, m, "alpha", npu_node_float(n, "npu_act_alpha", 0.01f)))
        return NULL;
    if (op == NPU_OP_HARD_SIGMOID &&
        (npu_node_set_float(g, m, "alpha", npu_node_float(n, "npu_act_alpha", 0.2f)) ||
         npu_node_set_float(g, m, "beta", npu_node_float(n, "npu_act_beta", 0.5f))))
        return NULL;
    return m;
}

/* A MatMul bias the QLinearMatMul can carry as int32: a float constant of one value per
 * column of the constant 2-D B. */
static bool
mm_bias_ok(const struct npu_value *c, const struct npu_value *b)
{
    return const_f32(c) && b && b->t.ndim == 2 && npu_value_numel(c) == b->t.dims[1] &&
           (c->t.ndim == 0 || c->t.dims[c->t.ndim - 1] == b->t.dims[1]);
}

/* Gemm(A, B const 2-D, C) with transA = 0 -> MatMul(A, alpha op(B)) (+ beta C). */
static struct npu_node *
gemm_as_matmul(struct npu_graph *g, struct npu_node *n, struct npu_value **bias, bool symmetric)
{
    struct npu_value *a = n->in[0], *b = n->in[1], *c = npu_node_in(n, 2);
    *bias = NULL;
    if (npu_node_int(n, "transA", 0) || a->t.ndim != 2 || !const_f32(b) || b->t.ndim != 2)
        return NULL;
    float alpha = npu_node_float(n, "alpha", 1), beta = npu_node_float(n, "beta", 1);
    if (c && !(const_f32(c) || beta == 1.0f))
        return NULL;
    bool tb = npu_node_int(n, "transB", 0) != 0;
    int64_t K = tb ? b->t.dims[1] : b->t.dims[0], N = tb ? b->t.dims[0] : b->t.dims[1];
    struct npu_tensor t = {.dtype = NPU_DTYPE_FP32, .ndim = 2, .dims = {K, N}};
    float *w = npu_graph_alloc(g, sizeof(float) * (size_t)(K * N));
    if (!w)
        return NULL;
    const float *src = b->t.data;
    for (int64_t k = 0; k < K; k++)
        for (int64_t j = 0; j < N; j++)
            w[k * N + j] = alpha * (tb ? src[j * K + k] : src[k * N + j]);
    t.data = w;
    char name[256];
    snprintf(name, sizeof(name), "%s_B", n->name);
    struct npu_value *bv = npu_graph_add_const_owned(g, name, &t);
    if (!bv)
        return NULL;
    if (c && beta != 1.0f) {
        struct npu_tensor ct = c->t;
        float *cd = npu_graph_alloc(g, (size_t)npu_tensor_nbytes(&ct));
        if (!cd)
            return NULL;
        for (int64_t i = 0; i < npu_tensor_numel(&ct); i++)
            cd[i] = beta * ((const float *)c->t.data)[i];
        ct.data = cd;
        snprintf(name, sizeof(name), "%s_C", n->name);
        if (!(c = npu_graph_add_const_owned(g, name, &ct)))
            return NULL;
    }
    *bias = c;
    snprintf(name, sizeof(name), "%s_pre", n->out[0]->name);
    const char *names[1] = {name};
    struct npu_value *in[3] = {a, bv, c};
    /* a per-column bias stays the MatMul's (the QLinearMatMul carries it as int32) */
    bool keep = !symmetric && c && mm_bias_ok(c, bv); /* int8 only (w16a16i adds it after) */
    if (keep)
        *bias = NULL;
    return npu_node_new(g, NPU_OP_MATMUL, n->name, in, keep ? 3 : 2, 1, names);
}

enum npu_status
quant_prepare(struct npu_graph *g, bool symmetric)
{
    enum npu_status st = NPU_OK;
    npu_graph_for_each_node_safe (g, n, tmp) {
        bool conv =
            n->op == NPU_OP_CONV && n->nin >= 2 && const_f32(n->in[1]) && n->in[1]->t.ndim == 4;
        bool mm =
            n->op == NPU_OP_MATMUL && n->nin >= 2 && const_f32(n->in[1]) && n->in[1]->t.ndim == 2;
        bool gemm = n->op == NPU_OP_GEMM && n->nin >= 2;
        if (!(conv || mm || gemm) || n->nout != 1 || n->out[0]->t.dtype != NPU_DTYPE_FP32)
            continue;
        /* a MatMul keeps a per-column constant bias: the QLinearMatMul adds it to its
         * int32 sums (input 8), so the calibration observes the product with it (int8
         * only: the int16 path adds it after the DequantizeLinear) */
        bool keep_bias = !symmetric && mm && n->nin > 2 && mm_bias_ok(n->in[2], n->in[1]);
        struct npu_value *bias = mm && n->nin > 2 && !keep_bias ? n->in[2] : NULL;
        /* symmetric results (w16a16i, zero point 0) have no saturation at 0: every
         * activation becomes a node of its own */
        bool split_act = symmetric ? npu_node_attr(n, "npu_act") != NULL : !saturating_act(n);
        if (conv && !split_act)
            continue;
        if (mm && !bias && !split_act)
            continue;
        struct npu_node *core = NULL;
        if (gemm) {
            if (!(core = gemm_as_matmul(g, n, &bias, symmetric)))
                continue;
        } else if (!(core = quant_bare_copy(g, n, mm && !keep_bias ? 2 : n->nin, n->op))) {
            return NPU_ERR_NOMEM;
        }
        struct npu_node *nodes[3] = {core};
        int k = 1;
        struct npu_value *y = n->out[0], *cur = core->out[0];
        npu_graph_insert_before(g, n, core);
        if ((st = npu_infer_node(g, core)))
            return st;
        npu_graph_remove(g, n); /* y loses its producer; the last new node defines it */
        bool act = npu_node_attr(n, "npu_act") != NULL;
        if (bias) {
            char name[256];
            snprintf(name, sizeof(name), "%s_bias", n->name);
            struct npu_value *in[2] = {cur, bias};
            struct npu_node *add;
            if (act) {
                const char *names[1] = {name};
                add = npu_node_new(g, NPU_OP_ADD, name, in, 2, 1, names);
            } else {
                add = npu_node_new_v(g, NPU_OP_ADD, name, in, 2, &y, 1);
            }
            if (!add)
                return NPU_ERR_NOMEM;
            nodes[k++] = add;
            cur = add->out[0];
        }
        if (act) {
            struct npu_node *a = quant_act_node(g, n, cur, y);
            if (!a)
                return NPU_ERR_INVALID;
            nodes[k++] = a;
        }
        if (k == 1) /* a Gemm without bias or activation: the MatMul defines y */
            npu_node_set_output(core, 0, y);
        struct npu_node *pos = tmp;
        for (int i = 1; i < k; i++) {
            if (pos)
                npu_graph_insert_before(g, pos, nodes[i]);
            else
                npu_graph_append(g, nodes[i]);
            if ((st = npu_infer_node(g, nodes[i])))
                return st;
        }
    }
    return npu_graph_update_uses(g);
}

/* ---- the rewrite ----------------------------------------------------------------- */

static bool
listed(const char *list, const char *name)
{
    if (!list || !name || !name[0])
        return false;
    size_t l = strlen(name);
    for (const char *p = list; *p;) {
        const char *e = strchr(p, ',');
        size_t k = e ? (size_t)(e - p) : strlen(p);
        if (k == l && !strncmp(p, name, l))
            return true;
        if (!e)
            break;
        p = e + 1;
    }
    return false;
}

static struct npu_value *
const_of(struct npu_graph *g, const char *base, const char *suf, enum npu_dtype dt, int ndim,
         const int64_t *dims, const void *data)
{
    char name[300];
    snprintf(name, sizeof(name), "%s%s", base, suf);
    struct npu_tensor t = {.dtype = dt, .ndim = ndim};
    for (int i = 0; i < ndim; i++)
        t.dims[i] = dims[i];
    t.data = (void *)data;
    return npu_graph_add_const(g, name, &t);
}

/* w16a16i: the symmetric int16 scale of [lo, hi] (zero point 0): max(|lo|, |hi|) / 32767. */
static void
quant_params16(float lo, float hi, float *scale)
{
    float m = fmaxf(fabsf(lo), fabsf(hi));
    float s = m / 32767.0f;
    *scale = s > 1e-30f && isfinite(s) ? s : 1.0f / 32767.0f;
}

/* The int8 source of x made by an earlier layer, or NULL. */
static struct npu_value *
int8_source(const struct quant_layers *L, const struct npu_value *x)
{
    for (int i = 0; i < L->n; i++)
        if (L->l[i].quantised && L->l[i].y == x && !L->l[i].post_bias)
            return L->l[i].yq; /* not when its bias comes after the DequantizeLinear */
    return NULL;
}

/* The int8 x an earlier layer's QuantizeLinear made with the same parameters (layers
 * reading one float value, e.g. the q / k / v projections, share one QuantizeLinear), or
 * NULL. */
static struct npu_value *
shared_quantize(const struct quant_layers *L, const struct npu_value *x,
                const struct quant_layer_rec *r)
{
    for (int i = 0; i < L->n; i++) {
        const struct quant_layer_rec *p = &L->l[i];
        if (p != r && p->quantised && p->xq && p->ql && p->ql->in[0] == p->xq && p->xq->producer &&
            p->xq->producer->op == NPU_OP_QUANTIZE_LINEAR && p->xq->producer->in[0] == x &&
            p->sx == r->sx && p->zx == r->zx)
            return p->xq;
    }
    return NULL;
}

/* Quantises one layer; false (with why) leaves it float. */
static bool
rewrite_one(struct npu_graph *g, struct npu_node *n, const struct quant_stats *st,
            const struct npu_quant_options *o, struct quant_layers *L, struct quant_layer_rec *r)
{
    struct npu_value *x = n->in[0], *w = n->in[1], *y = n->out[0];
    struct npu_value *b = npu_node_in(n, 2);
    const struct quant_stat *sx = quant_stat_find(st, x->name), *sy = quant_stat_find(st, y->name);
    struct npu_node *qn = NULL, *ql = NULL;
    if (!sx || !sy) {
        snprintf(r->why, sizeof(r->why), "no calibration statistics for its input or output");
        return false;
    }
    bool conv = n->op == NPU_OP_CONV;
    if (b && (!const_f32(b) || npu_value_numel(b) != w->t.dims[conv ? 0 : 1])) {
        snprintf(r->why, sizeof(r->why), "bias is not a per-kernel float constant");
        return false;
    }
    /* w16a16i: int16 symmetric activations (zero point 0) and weights */
    const bool w16 = o->mode == NPU_QUANT_W16A16I;
    const float qmax = w16 ? 32767.0f : 127.0f;
    const enum npu_dtype qdt = w16 ? NPU_DTYPE_INT16 : NPU_DTYPE_INT8;
    const size_t qes = w16 ? 2 : 1;
    if (w16) {
        quant_params16(sx->clo, sx->chi, &r->sx);
        quant_params16(sy->clo, sy->chi, &r->sy);
        r->zx = r->zy = 0;
    } else {
        quant_params(sx->clo, sx->chi, &r->sx, &r->zx);
        quant_params(sy->clo, sy->chi, &r->sy, &r->zy);
    }
    int16_t zx16 = r->zx, zy16 = r->zy;
    int64_t K = conv ? w->t.dims[0] : w->t.dims[1];
    int64_t per = npu_value_numel(w) / K;
    int64_t ns = K;
    const float *wd = w->t.data;
    float *ws = calloc((size_t)K, sizeof(float));
    void *wq = malloc((size_t)npu_value_numel(w) * qes), *wz = calloc((size_t)ns, qes);
    int32_t *bq = conv || b ? calloc((size_t)K, sizeof(int32_t)) : NULL;
    bool bias_after = false;
    bool ok = false;
    if (!ws || !wq || !wz || ((conv || b) && !bq)) {
        snprintf(r->why, sizeof(r->why), "out of memory");
        goto out;
    }
    /* element e of kernel k: conv [K, per] rows, matmul [per, K] columns */
#define WIDX(k, e) (conv ? (k)*per + (e) : (e)*K + (k))
    for (int64_t k = 0; k < K; k++) {
        float m = 0;
        for (int64_t e = 0; e < per; e++)
            m = fmaxf(m, fabsf(wd[WIDX(k, e)]));
        ws[k] = m;
    }
    /* per tensor when asked, or (default) when one scale adds little noise: the rounding
     * noise of scale s is s^2 / 12 per weight, so one scale (the largest channel's) against
     * one per channel costs K max(m)^2 / sum(m_k^2) times the noise */
    bool one_scale = o->per_layer;
    /* (int8 only: int16's rounding noise is 2^16 times smaller, and its default stays
     * per channel) */
    if (!one_scale && !o->per_channel && !w16) {
        double sum = 0, mx = 0;
        for (int64_t k = 0; k < K; k++) {
            sum += (double)ws[k] * ws[k];
            mx = fmax(mx, ws[k]);
        }
        one_scale = sum > 0 && (double)K * mx * mx <= NPU_QUANT_TENSOR_NOISE * sum;
    }
    if (one_scale) {
        for (int64_t k = 1; k < K; k++)
            ws[0] = fmaxf(ws[0], ws[k]);
        ns = 1;
    }
    for (int64_t i = 0; i < ns; i++)
        ws[i] = ws[i] > 0 ? ws[i] / qmax : 1.0f;
    for (int64_t k = 0; k < K; k++) {
        float s = ws[one_scale ? 0 : k];
        for (int64_t e = 0; e < per; e++) {
            float q = fmaxf(-qmax, fminf(qmax, rintf(wd[WIDX(k, e)] / s)));
            if (w16)
                ((int16_t *)wq)[WIDX(k, e)] = (int16_t)q;
            else
                ((int8_t *)wq)[WIDX(k, e)] = (int8_t)q;
        }
        if (bq) {
            double v = b ? rint((double)((const float *)b->t.data)[k] / ((double)r->sx * s)) : 0;
            if (fabs(v) > 2147483647.0 && w16) {
                bias_after = true; /* int16 scales are 2^16 finer: see below */
            } else if (fabs(v) > 2147483647.0) {
                snprintf(r->why, sizeof(r->why), "bias out of int32 range at this input scale");
                goto out;
            } else {
                bq[k] = (int32_t)v;
            }
        }
    }
#undef WIDX
    /* w16a16i: a bias that int32 cannot hold at sx * sw (int16 scales) is added after the
     * DequantizeLinear, in float, as a MatMul's; the product's own range is then y's
     * widened by max |b| */
    float bmax = 0;
    if (bias_after) {
        for (int64_t k = 0; k < K; k++)
            bmax = fmaxf(bmax, fabsf(((const float *)b->t.data)[k]));
        quant_params16(sy->clo - bmax, sy->chi + bmax, &r->sy);
        free(bq);
        bq = NULL;
    }
    const char *base = n->name && n->name[0] ? n->name : y->name;
    int64_t one = 1;
    struct npu_value *xs = const_of(g, base, "_x_scale", NPU_DTYPE_FP32, 0, &one, &r->sx);
    struct npu_value *xz =
        const_of(g, base, "_x_zp", qdt, 0, &one, w16 ? (void *)&zx16 : (void *)&r->zx);
    struct npu_value *wv = const_of(g, base, "_wq", qdt, w->t.ndim, w->t.dims, wq);
    struct npu_value *wsv =
        const_of(g, base, "_w_scale", NPU_DTYPE_FP32, one_scale ? 0 : 1, &ns, ws);
    struct npu_value *wzv = const_of(g, base, "_w_zp", qdt, one_scale ? 0 : 1, &ns, wz);
    struct npu_value *ysv = const_of(g, base, "_y_scale", NPU_DTYPE_FP32, 0, &one, &r->sy);
    struct npu_value *yzv =
        const_of(g, base, "_y_zp", qdt, 0, &one, w16 ? (void *)&zy16 : (void *)&r->zy);
    struct npu_value *bv = bq ? const_of(g, base, "_bq", NPU_DTYPE_INT32, 1, &K, bq) : NULL;
    if (!xs || !xz || !wv || !wsv || !wzv || !ysv || !yzv || (bq && !bv)) {
        snprintf(r->why, sizeof(r->why), "out of memory");
        goto out;
    }
    struct npu_value *xq = int8_source(L, x);
    if (!xq)
        xq = shared_quantize(L, x, r);
    if (!xq) {
        char nm[300];
        snprintf(nm, sizeof(nm), "%s_quantize", base);
        struct npu_value *in[3] = {x, xs, xz};
        if (!(qn = npu_node_new(g, NPU_OP_QUANTIZE_LINEAR, nm, in, 3, 1, NULL)))
            goto out;
        npu_graph_insert_before(g, n, qn);
        if (npu_infer_node(g, qn))
            goto undo;
        xq = qn->out[0];
    }
    char nm[300];
    snprintf(nm, sizeof(nm), "%s_q", y->name);
    const char *names[1] = {nm};
    struct npu_value *in[9] = {xq, xs, xz, wv, wsv, wzv, ysv, yzv, bv};
    ql = npu_node_new(g, conv ? NPU_OP_QLINEAR_CONV : NPU_OP_QLINEAR_MATMUL, n->name, in,
                      bv ? 9 : 8, 1, names);
    if (!ql)
        goto undo;
    if (conv)
        for (int i = 0; i < n->nattr; i++)
            if (strncmp(n->attr[i].name, "npu_", 4) && npu_node_set_attr(g, ql, &n->attr[i]))
                goto undo;
    npu_graph_insert_before(g, n, ql);
    if (npu_infer_node(g, ql)) {
        snprintf(r->why, sizeof(r->why), "the quantised node does not infer");
        goto undo;
    }
    if (!npu_backend_supports(g, ql, NULL, r->why, sizeof(r->why)))
        goto undo;
    /* y is now DequantizeLinear(y_q) */
    struct npu_node *next = n->next;
    npu_graph_remove(g, n);
    snprintf(nm, sizeof(nm), "%s_dequantize", base);
    struct npu_value *din[3] = {ql->out[0], ysv, yzv};
    struct npu_node *dq = bias_after
                              ? npu_node_new(g, NPU_OP_DEQUANTIZE_LINEAR, nm, din, 3, 1, NULL)
                              : npu_node_new_v(g, NPU_OP_DEQUANTIZE_LINEAR, nm, din, 3, &y, 1);
    if (!dq)
        goto out;
    if (next)
        npu_graph_insert_before(g, next, dq);
    else
        npu_graph_append(g, dq);
    if (npu_infer_node(g, dq))
        goto out;
    if (bias_after) {
        /* y = DequantizeLinear(y_q) + b as [K, 1, 1] (NCHW) */
        int64_t bd[3] = {K, 1, 1};
        struct npu_value *bk = const_of(g, base, "_bias_after", NPU_DTYPE_FP32, 3, bd, b->t.data);
        snprintf(nm, sizeof(nm), "%s_bias", base);
        struct npu_value *ain[2] = {dq->out[0], bk};
        struct npu_node *add = bk ? npu_node_new_v(g, NPU_OP_ADD, nm, ain, 2, &y, 1) : NULL;
        if (!add)
            goto out;
        if (next)
            npu_graph_insert_before(g, next, add);
        else
            npu_graph_append(g, add);
        if (npu_infer_node(g, add))
            goto out;
        r->post_bias = bk;
    }
    r->ql = ql;
    r->y = y;
    r->yq = ql->out[0];
    r->xq = xq;
    r->quantised = true;
    ok = true;
    goto out;
undo:
    if (ql && ql->attached)
        npu_graph_remove(g, ql);
    if (qn && qn->attached)
        npu_graph_remove(g, qn);
out:
    free(ws);
    free(wq);
    free(wz);
    free(bq);
    return ok;
}

bool
quant_candidate(const struct npu_node *n)
{
    if (n->nout != 1 || n->nin < 2 || !n->in[0] || n->in[0]->t.dtype != NPU_DTYPE_FP32 ||
        n->out[0]->t.dtype != NPU_DTYPE_FP32 || !const_f32(n->in[1]))
        return false;
    if (n->op == NPU_OP_CONV)
        return n->in[1]->t.ndim == 4 && saturating_act(n);
    if (n->op == NPU_OP_MATMUL)
        return n->in[1]->t.ndim == 2 &&
               (n->nin == 2 || (n->nin == 3 && mm_bias_ok(n->in[2], n->in[1]))) &&
               !npu_node_attr(n, "npu_act");
    return false;
}

enum npu_status
quant_rewrite(struct npu_graph *g, const struct quant_stats *st, const struct npu_quant_options *o,
              const char *exclude, const struct quant_layers *hybrid_out, struct quant_layers *L)
{
    memset(L, 0, sizeof(*L));
    int cap = 0;
    npu_graph_for_each_node_safe (g, n, tmp) {
        if (!quant_candidate(n))
            continue;
        if (L->n == cap) {
            cap = cap ? 2 * cap : 64;
            struct quant_layer_rec *nl = realloc(L->l, sizeof(*nl) * (size_t)cap);
            if (!nl)
                return NPU_ERR_NOMEM;
            L->l = nl;
        }
        struct quant_layer_rec *r = &L->l[L->n++];
        memset(r, 0, sizeof(*r));
        snprintf(r->name, sizeof(r->name), "%s", n->name ? n->name : "");
        snprintf(r->op, sizeof(r->op), "%s", npu_op_name(n->op));
        snprintf(r->x_name, sizeof(r->x_name), "%s", n->in[0]->name);
        snprintf(r->y_name, sizeof(r->y_name), "%s", n->out[0]->name);
        r->y = n->out[0];
        if (listed(exclude, n->name) || listed(exclude, n->out[0]->name)) {
            snprintf(r->why, sizeof(r->why), "named by --keep-float");
            continue;
        }
        if (hybrid_out) {
            const struct quant_layer_rec *h = NULL;
            for (int i = 0; i < hybrid_out->n; i++)
                if (!strcmp(hybrid_out->l[i].y_name, r->y_name))
                    h = &hybrid_out->l[i];
            if (h && h->quantised && h->single_cos < o->hybrid_threshold) {
                snprintf(r->why, sizeof(r->why), "hybrid: single-layer cosine %.5f < %.5f",
                         h->single_cos, o->hybrid_threshold);
                continue;
            }
        }
        if (rewrite_one(g, n, st, o, L, r))
            continue;
        if (!strcmp(r->why, "out of memory"))
            return NPU_ERR_NOMEM;
    }
    enum npu_status s;
    if ((s = npu_graph_update_uses(g)) || (s = npu_pass_dce(g)))
        return s;
    /* the float layers get their bias and activation fused again */
    if ((s = npu_pass_fuse_bias(g)) || (s = npu_pass_fuse_activation(g)) || (s = npu_pass_dce(g)))
        return s;
    for (int i = 0; i < L->n; i++)
        L->nquantised += L->l[i].quantised;
    return npu_graph_update_uses(g);
}
