// SPDX-License-Identifier: MIT
/*
 * quant.c: the quantiser's entry point (npu_quantize, npu-quant.h) and its
 * accuracy analysis. The order: prepare the graph (quant-rewrite.c), run the
 * fp32 copy over the calibration samples (quant-calib.c), quantise a copy of
 * the graph and measure each layer "single" (its quantised arithmetic - the
 * CPU kernels of QuantizeLinear, QLinearConv / QLinearMatMul and
 * DequantizeLinear, the reference the NPU is checked against - on the fp32
 * input, against the fp32 output), drop the layers hybrid keeps float, then
 * quantise the graph itself and, when asked, run it through ("entire") next
 * to the fp32 graph. Also the report (table and JSON) and the option names.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "npu/npu-backend.h"
#include "quant-rewrite.h"

static double
now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---- names --------------------------------------------------------------------------- */

static const char *const algo_names[] = {"minmax", "percentile", "mse", "kl"};
static const char *const mode_names[] = {"w8a8", "hybrid", "w16a16i"};

enum npu_status
npu_quant_algo_parse(const char *s, enum npu_quant_algo *out)
{
    for (int i = 0; i < 4; i++)
        if (s && !strcmp(s, algo_names[i])) {
            *out = (enum npu_quant_algo)i;
            return NPU_OK;
        }
    return NPU_ERR_INVALID;
}

enum npu_status
npu_quant_mode_parse(const char *s, enum npu_quant_mode *out)
{
    for (int i = 0; i < 3; i++)
        if (s && !strcmp(s, mode_names[i])) {
            *out = (enum npu_quant_mode)i;
            return NPU_OK;
        }
    return NPU_ERR_INVALID;
}

const char *
npu_quant_algo_name(enum npu_quant_algo a)
{
    return (unsigned)a < 4 ? algo_names[a] : "?";
}

const char *
npu_quant_mode_name(enum npu_quant_mode m)
{
    return (unsigned)m < 3 ? mode_names[m] : "?";
}

/* The integer precision of the report's quantised layers. */
static const char *
qprec(const struct npu_quant_report *rep)
{
    return rep->mode && !strcmp(rep->mode, "w16a16i") ? "int16" : "int8";
}

/* ---- measuring ---------------------------------------------------------------------- */

static void
acc(double *xy, double *xx, double *yy, double *dd, const float *a, const float *b, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        double x = a[i], y = b[i];
        if (!isfinite(x) || !isfinite(y))
            continue;
        *xy += x * y;
        *xx += x * x;
        *yy += y * y;
        *dd += (x - y) * (x - y);
    }
}

static void
finish(double xy, double xx, double yy, double dd, double *cos, double *rel)
{
    *cos = xx > 0 && yy > 0 ? xy / sqrt(xx * yy) : (xx == 0 && yy == 0 ? 1.0 : 0.0);
    *rel = xx > 0 ? sqrt(dd / xx) : (dd > 0 ? INFINITY : 0.0);
}

/* Layer-norm centring (backend dpu-center.c) on the float graph, before calibration: the
 * residual streams' producers get row-centred weights and their layer norms the mark
 * "npu_centered" (no mean pass on the NPU). The back end does it on float products after
 * partitioning; quantised products are no longer float then, so it is done here, where
 * it changes no output of the fp32 graph. The int8 products keep the rows centred up to
 * their rounding, which the NPU's layer norm then leaves in (the CPU's computes the mean).
 * The streams' layer norms are taken as on the NPU for the check, as the partition will
 * put them. */
static enum npu_status
centre_streams(struct npu_graph *g)
{
    int n = 0, k = 0;
    npu_graph_for_each_node (g, x)
        n += x->op == NPU_OP_LAYER_NORMALIZATION && x->device == NPU_DEVICE_ANY;
    if (!n)
        return NPU_OK;
    struct npu_node **lns = calloc((size_t)n, sizeof(*lns));
    if (!lns)
        return NPU_ERR_NOMEM;
    npu_graph_for_each_node (g, x)
        if (x->op == NPU_OP_LAYER_NORMALIZATION && x->device == NPU_DEVICE_ANY) {
            x->device = NPU_DEVICE_NPU;
            lns[k++] = x;
        }
    enum npu_status st = npu_be_pass_center_streams(g, NULL);
    for (int i = 0; i < k; i++)
        lns[i]->device = NPU_DEVICE_ANY;
    free(lns);
    return st;
}

static bool
const_f32_of(const struct npu_value *v, int ndim, int64_t n)
{
    return v && v->kind == NPU_VALUE_CONST && v->t.dtype == NPU_DTYPE_FP32 && v->t.data &&
           (ndim < 0 || v->t.ndim == ndim) && (n < 0 || npu_value_numel(v) == n);
}

/* The beta of a layer norm whose every reader is a MatMul by constant B [C, N] with a
 * constant bias [N] moves into those biases (y B + b = y0 B + (b + beta B); the back end's
 * dpu-norm.c fold_beta, which cannot see through the QuantizeLinear the rewrite puts
 * between), so the NPU's layer norm skips its beta pass. Exact in real arithmetic; the
 * calibration then observes y0. */
static enum npu_status
fold_ln_beta(struct npu_graph *g)
{
    enum npu_status st = npu_graph_update_uses(g);
    if (st)
        return st;
    npu_graph_for_each_node (g, n) {
        if (n->op != NPU_OP_LAYER_NORMALIZATION || n->nin < 3 || n->nout < 1 ||
            n->out[0]->is_output || !n->out[0]->nusers || !n->in[0] || n->in[0]->t.ndim < 1)
            continue;
        const struct npu_value *be = n->in[2], *y = n->out[0];
        int64_t C = n->in[0]->t.dims[n->in[0]->t.ndim - 1];
        int64_t ax = npu_node_int(n, "axis", -1);
        if ((ax != -1 && ax != n->in[0]->t.ndim - 1) || !const_f32_of(be, -1, C) ||
            (n->nout > 1 &&
             ((n->out[1] && n->out[1]->nusers) || (n->nout > 2 && n->out[2] && n->out[2]->nusers))))
            continue;
        bool ok = true, zero = true;
        for (int64_t c = 0; c < C; c++)
            zero &= ((const float *)be->t.data)[c] == 0;
        for (int i = 0; i < y->nusers && ok; i++) {
            const struct npu_node *u = y->users[i];
            ok = u->op == NPU_OP_MATMUL && u->nin == 3 && u->in[0] == y && u->in[1] != y &&
                 const_f32_of(u->in[1], 2, -1) && u->in[1]->t.dims[0] == C &&
                 const_f32_of(u->in[2], -1, u->in[1]->t.dims[1]) && !npu_node_attr(u, "npu_act");
        }
        if (!ok || zero)
            continue;
        for (int i = 0; i < y->nusers; i++) {
            struct npu_node *u = y->users[i];
            int64_t N = u->in[1]->t.dims[1];
            struct npu_tensor t = u->in[2]->t;
            float *nb = npu_graph_alloc(g, sizeof(float) * (size_t)N);
            if (!nb)
                return NPU_ERR_NOMEM;
            const float *w = u->in[1]->t.data, *b0 = u->in[2]->t.data, *bv = be->t.data;
            for (int64_t j = 0; j < N; j++) {
                double acc = b0[j];
                for (int64_t c = 0; c < C; c++)
                    acc += (double)bv[c] * w[c * N + j];
                nb[j] = (float)acc;
            }
            t.data = nb;
            char name[300];
            snprintf(name, sizeof(name), "%s_bias_ln", u->name ? u->name : "matmul");
            struct npu_value *v = npu_graph_add_const_owned(g, name, &t);
            if (!v)
                return NPU_ERR_NOMEM;
            u->in[2] = v;
        }
        struct npu_tensor zt = be->t;
        float *z = npu_graph_alloc(g, sizeof(float) * (size_t)C);
        if (!z)
            return NPU_ERR_NOMEM;
        memset(z, 0, sizeof(float) * (size_t)C);
        zt.data = z;
        char name[300];
        snprintf(name, sizeof(name), "%s_beta0", n->name ? n->name : "ln");
        struct npu_value *zv = npu_graph_add_const_owned(g, name, &zt);
        if (!zv)
            return NPU_ERR_NOMEM;
        n->in[2] = zv;
    }
    return npu_graph_update_uses(g);
}

/* The layer's quantised arithmetic on fp32 input x, dequantised into y. */
static enum npu_status
run_layer(struct npu_cpu_ctx *ctx, const struct npu_node *ql, const struct npu_tensor *x, float *y)
{
    struct npu_attrs none = {NULL, 0}, qa = npu_node_attrs(ql);
    struct npu_tensor xq = *x, yq = ql->out[0]->t, yd = ql->out[0]->t;
    xq.dtype = ql->in[0]->t.dtype; /* int8, or int16 (w16a16i) */
    xq.data = malloc(2 * (size_t)npu_tensor_numel(x) + 1);
    yq.data = malloc(2 * (size_t)npu_tensor_numel(&yq) + 1);
    yd.dtype = NPU_DTYPE_FP32;
    yd.data = y;
    enum npu_status st = NPU_ERR_NOMEM;
    if (!xq.data || !yq.data)
        goto out;
    const struct npu_tensor *qin[3] = {x, &ql->in[1]->t, &ql->in[2]->t};
    struct npu_tensor *o1 = &xq;
    if ((st = npu_cpu_run(ctx, NPU_OP_QUANTIZE_LINEAR, &none, qin, 3, &o1, 1)))
        goto out;
    const struct npu_tensor *lin[9];
    for (int k = 0; k < ql->nin; k++)
        lin[k] = k == 0 ? &xq : ql->in[k] ? &ql->in[k]->t : NULL;
    struct npu_tensor *o2 = &yq;
    if ((st = npu_cpu_run(ctx, ql->op, &qa, lin, ql->nin, &o2, 1)))
        goto out;
    const struct npu_tensor *din[3] = {&yq, &ql->in[6]->t, &ql->in[7]->t};
    struct npu_tensor *o3 = &yd;
    st = npu_cpu_run(ctx, NPU_OP_DEQUANTIZE_LINEAR, &none, din, 3, &o3, 1);
out:
    free(xq.data);
    free(yq.data);
    return st;
}

static enum npu_status
measure_single(struct quant_run *fr, struct npu_cpu_ctx *ctx, const struct npu_quant_dataset *d,
               struct quant_layers *L)
{
    enum npu_status st = NPU_OK;
    for (int s = 0; s < d->nsamples && !st; s++) {
        if ((st = quant_run_sample(fr, ctx, &d->t[(size_t)s * (size_t)d->ninputs])))
            break;
        for (int i = 0; i < L->n && !st; i++) {
            struct quant_layer_rec *r = &L->l[i];
            struct npu_tensor tx, ty;
            const struct npu_tensor *x = quant_run_value(fr, r->x_name, &tx);
            const struct npu_tensor *y = quant_run_value(fr, r->y_name, &ty);
            if (!r->quantised || !x || !y)
                continue;
            int64_t n = npu_tensor_numel(y);
            float *q = malloc(sizeof(float) * (size_t)(n + 1));
            if (!q)
                return NPU_ERR_NOMEM;
            if (!(st = run_layer(ctx, r->ql, x, q))) {
                if (r->post_bias && y->ndim == 4) { /* w16a16i: its bias follows */
                    const float *bk = r->post_bias->t.data;
                    int64_t plane = y->dims[2] * y->dims[3], K = y->dims[1];
                    for (int64_t e = 0; plane > 0 && e < n; e++)
                        q[e] += bk[(e / plane) % K];
                }
                acc(&r->s_xy, &r->s_xx, &r->s_yy, &r->s_dd, y->data, q, n);
            }
            free(q);
        }
    }
    for (int i = 0; i < L->n; i++)
        finish(L->l[i].s_xy, L->l[i].s_xx, L->l[i].s_yy, L->l[i].s_dd, &L->l[i].single_cos,
               &L->l[i].single_rel);
    return st;
}

/* A value of the quantised run as floats: float values as they are, a layer's
 * int8 result (a chain dropped its DequantizeLinear) dequantised. */
static float *
quant_value_f32(struct quant_run *qr, const struct quant_layer_rec *r, int64_t n)
{
    struct npu_tensor tmp;
    const struct npu_tensor *t = quant_run_value(qr, r->y_name, &tmp);
    float *o = malloc(sizeof(float) * (size_t)(n + 1));
    if (!o)
        return NULL;
    if (t && npu_tensor_numel(t) == n) {
        memcpy(o, t->data, sizeof(float) * (size_t)n);
        return o;
    }
    char nm[300];
    snprintf(nm, sizeof(nm), "%s_q", r->y_name);
    const struct npu_graph *g = qr->plan->g;
    const struct npu_value *v = npu_graph_find_value(g, nm);
    for (int i = 0; v && i < g->nvalues; i++) {
        if (g->values[i] != v || (v->t.dtype != NPU_DTYPE_INT8 && v->t.dtype != NPU_DTYPE_INT16) ||
            npu_value_numel(v) != n)
            continue;
        const struct exec_slot *s = &qr->plan->slots[i];
        if (s->kind != SLOT_ARENA || s->offset < 0)
            break;
        const void *q = (char *)qr->arena + s->offset;
        for (int64_t k = 0; k < n; k++)
            o[k] = ((float)(v->t.dtype == NPU_DTYPE_INT16 ? ((const int16_t *)q)[k]
                                                          : ((const int8_t *)q)[k]) -
                    (float)r->zy) *
                   r->sy;
        return o;
    }
    free(o);
    return NULL;
}

static enum npu_status
measure_entire(const struct npu_graph *g, struct quant_run *fr, struct npu_cpu_ctx *ctx,
               const struct npu_quant_dataset *d, struct quant_layers *L,
               struct npu_quant_report *rep)
{
    struct npu_graph *qg = quant_graph_clone(g);
    struct quant_run qr;
    enum npu_status st;
    if (!qg)
        return NPU_ERR_NOMEM;
    if ((st = quant_run_init(&qr, qg, false)))
        return st;
    double oxy = 0, oxx = 0, oyy = 0, odd = 0;
    for (int s = 0; s < d->nsamples && !st; s++) {
        const struct npu_tensor *in = &d->t[(size_t)s * (size_t)d->ninputs];
        if ((st = quant_run_sample(fr, ctx, in)) || (st = quant_run_sample(&qr, ctx, in)))
            break;
        for (int i = 0; i < L->n; i++) {
            struct quant_layer_rec *r = &L->l[i];
            struct npu_tensor ty;
            const struct npu_tensor *y = quant_run_value(fr, r->y_name, &ty);
            if (!y)
                continue;
            int64_t n = npu_tensor_numel(y);
            float *q = quant_value_f32(&qr, r, n);
            if (!q)
                continue;
            acc(&r->e_xy, &r->e_xx, &r->e_yy, &r->e_dd, y->data, q, n);
            free(q);
        }
        for (int i = 0; i < g->noutputs; i++) {
            struct npu_tensor ta, tb;
            const struct npu_tensor *a = quant_run_value(fr, g->outputs[i]->name, &ta);
            const struct npu_tensor *b = quant_run_value(&qr, g->outputs[i]->name, &tb);
            if (a && b && npu_tensor_numel(a) == npu_tensor_numel(b))
                acc(&oxy, &oxx, &oyy, &odd, a->data, b->data, npu_tensor_numel(a));
        }
    }
    for (int i = 0; i < L->n; i++)
        finish(L->l[i].e_xy, L->l[i].e_xx, L->l[i].e_yy, L->l[i].e_dd, &L->l[i].entire_cos,
               &L->l[i].entire_rel);
    finish(oxy, oxx, oyy, odd, &rep->out_cos, &rep->out_rel);
    quant_run_fini(&qr);
    return st;
}

/* ---- the entry point ------------------------------------------------------------------ */

enum npu_status
npu_quantize(struct npu_graph *g, const struct npu_quant_options *o, struct npu_quant_report *rep)
{
    double t0 = now();
    struct npu_quant_report dummy;
    if (!rep)
        rep = &dummy;
    memset(rep, 0, sizeof(*rep));
    rep->out_cos = rep->out_rel = -2;
    const struct npu_quant_dataset *d = o->data;
    if (!d || d->nsamples < NPU_QUANT_MIN_SAMPLES) {
        npu_err(QDOM, "quantising needs a calibration set of at least %d samples (--dataset)",
                NPU_QUANT_MIN_SAMPLES);
        return NPU_ERR_INVALID;
    }
    if (d->ninputs != g->ninputs) {
        npu_err(QDOM, "the calibration set has %d inputs per sample, the model %d", d->ninputs,
                g->ninputs);
        return NPU_ERR_INVALID;
    }
    /* the rewrite reads weights and biases through float pointers: constants the importer
     * borrowed unaligned from the model file are copied aligned first */
    if (npu_graph_align_consts(g))
        return NPU_ERR_NOMEM;
    struct npu_quant_options opt = *o;
    if (!(opt.hybrid_threshold > 0))
        opt.hybrid_threshold = 0.999;
    rep->algo = npu_quant_algo_name(o->algo);
    rep->mode = npu_quant_mode_name(o->mode);
    struct quant_run fr = {0};
    struct quant_stats st = {0};
    struct quant_layers pre = {0}, L = {0};
    struct npu_graph *fp = NULL, *g2 = NULL;
    struct npu_cpu_ctx *ctx = npu_cpu_ctx_create(o->threads);
    enum npu_status s = NPU_ERR_NOMEM;
    if (!ctx)
        goto out;
    /* the beta fold gives MatMuls a bias that only the int8 QLinearMatMul carries (input 8) */
    const bool w16 = o->mode == NPU_QUANT_W16A16I;
    if ((s = quant_prepare(g, w16)) || (s = centre_streams(g)) || (!w16 && (s = fold_ln_beta(g))))
        goto out;
    s = NPU_ERR_NOMEM;
    if (!(fp = quant_graph_clone(g)))
        goto out;
    s = quant_run_init(&fr, fp, true); /* takes fp */
    fp = NULL;
    if (s)
        goto out;
    double c0 = now();
    if ((s = quant_calibrate(&fr, ctx, &opt, &st)))
        goto out;
    rep->calib_s = now() - c0;
    bool hybrid = o->mode == NPU_QUANT_HYBRID;
    if (hybrid || o->accuracy) {
        s = NPU_ERR_NOMEM;
        if (!(g2 = quant_graph_clone(g)))
            goto out;
        if ((s = quant_rewrite(g2, &st, &opt, o->keep_float, NULL, &pre)) ||
            (s = measure_single(&fr, ctx, d, &pre)))
            goto out;
    }
    if ((s = quant_rewrite(g, &st, &opt, o->keep_float, hybrid ? &pre : NULL, &L)))
        goto out;
    for (int i = 0; i < L.n; i++) {
        L.l[i].single_cos = L.l[i].single_rel = -2;
        L.l[i].entire_cos = L.l[i].entire_rel = -2;
        for (int k = 0; k < pre.n; k++)
            if (pre.l[k].quantised && !strcmp(pre.l[k].y_name, L.l[i].y_name)) {
                L.l[i].single_cos = pre.l[k].single_cos;
                L.l[i].single_rel = pre.l[k].single_rel;
            }
    }
    if (o->accuracy && (s = measure_entire(g, &fr, ctx, d, &L, rep)))
        goto out;
    s = NPU_ERR_NOMEM;
    rep->layers = calloc((size_t)L.n + 1, sizeof(*rep->layers));
    if (!rep->layers)
        goto out;
    rep->nlayers = L.n;
    rep->nquantised = L.nquantised;
    for (int i = 0; i < L.n; i++) {
        struct npu_quant_layer *y = &rep->layers[i];
        const struct quant_layer_rec *r = &L.l[i];
        snprintf(y->name, sizeof(y->name), "%.127s", r->name[0] ? r->name : r->y_name);
        snprintf(y->op, sizeof(y->op), "%s", r->op);
        snprintf(y->why, sizeof(y->why), "%s", r->quantised ? "" : r->why);
        y->quantised = r->quantised;
        y->single_cos = r->single_cos;
        y->single_rel = r->single_rel;
        y->entire_cos = o->accuracy ? r->entire_cos : -2;
        y->entire_rel = o->accuracy ? r->entire_rel : -2;
    }
    s = NPU_OK;
    if (o->quantised_outputs)
        s = quant_quantised_outputs(g, &rep->quantised_outputs);
out:
    if (s)
        npu_err(QDOM, "quantisation failed: %s", npu_status_str(s));
    rep->total_s = now() - t0;
    if (rep == &dummy)
        npu_quant_report_free(rep);
    free(pre.l);
    free(L.l);
    npu_graph_free(g2);
    npu_graph_free(fp);
    quant_stats_free(&st);
    if (fr.plan)
        quant_run_fini(&fr);
    npu_cpu_ctx_destroy(ctx);
    return s;
}

/* ---- the report ---------------------------------------------------------------------- */

void
npu_quant_report_free(struct npu_quant_report *rep)
{
    if (!rep)
        return;
    free(rep->layers);
    rep->layers = NULL;
    rep->nlayers = 0;
}

static double
sort_key(const struct npu_quant_layer *l)
{
    return l->entire_cos > -1.5 ? l->entire_cos : l->single_cos > -1.5 ? l->single_cos : 2;
}

static int
cmp_layer(const void *a, const void *b)
{
    double x = sort_key(a), y = sort_key(b);
    return x < y ? -1 : x > y ? 1 : 0;
}

static struct npu_quant_layer *
sorted(const struct npu_quant_report *rep)
{
    struct npu_quant_layer *s = malloc(sizeof(*s) * ((size_t)rep->nlayers + 1));
    if (!s)
        return NULL;
    memcpy(s, rep->layers, sizeof(*s) * (size_t)rep->nlayers);
    qsort(s, (size_t)rep->nlayers, sizeof(*s), cmp_layer);
    return s;
}

static void
fig(FILE *f, double v)
{
    if (v < -1.5)
        fprintf(f, " %10s", "-");
    else
        fprintf(f, " %10.6f", v);
}

void
npu_quant_report_print(const struct npu_quant_report *rep, FILE *f)
{
    struct npu_quant_layer *s = sorted(rep);
    if (!s)
        return;
    fprintf(f, "quantised %d of %d layers (%s, %s); worst first\n", rep->nquantised, rep->nlayers,
            rep->mode ? rep->mode : "?", rep->algo ? rep->algo : "?");
    fprintf(f, "%-32s %-14s %10s %10s %10s %10s  %s\n", "layer", "op", "entire cos", "entire rel",
            "single cos", "single rel", "precision");
    for (int i = 0; i < rep->nlayers; i++) {
        fprintf(f, "%-32.32s %-14.14s", s[i].name, s[i].op);
        fig(f, s[i].entire_cos);
        fig(f, s[i].entire_rel);
        fig(f, s[i].single_cos);
        fig(f, s[i].single_rel);
        fprintf(f, "  %s%s\n",
                s[i].quantised ? qprec(rep) : "float: ", s[i].quantised ? "" : s[i].why);
    }
    if (rep->out_cos > -1.5)
        fprintf(f, "outputs: cosine %.6f, relative error %.6f (entire, calibration set)\n",
                rep->out_cos, rep->out_rel);
    fprintf(f, "calibration %.3f s, quantiser %.3f s (wall time, this host)\n", rep->calib_s,
            rep->total_s);
    free(s);
}

static void
json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

static void
json_num(FILE *f, double v)
{
    if (v < -1.5 || !isfinite(v))
        fputs("null", f);
    else
        fprintf(f, "%.9g", v);
}

enum npu_status
npu_quant_report_write_json(const struct npu_quant_report *rep, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        npu_err(QDOM, "cannot write %s", path);
        return NPU_ERR_IO;
    }
    struct npu_quant_layer *s = sorted(rep);
    if (!s) {
        fclose(f);
        return NPU_ERR_NOMEM;
    }
    fprintf(f, "{\n  \"mode\": ");
    json_str(f, rep->mode ? rep->mode : "");
    fprintf(f, ",\n  \"algorithm\": ");
    json_str(f, rep->algo ? rep->algo : "");
    fprintf(f, ",\n  \"quantised\": %d,\n  \"layers_total\": %d,\n  \"outputs\": {\"cosine\": ",
            rep->nquantised, rep->nlayers);
    json_num(f, rep->out_cos);
    fprintf(f, ", \"relative_error\": ");
    json_num(f, rep->out_rel);
    fprintf(f, "},\n  \"calibration_s\": %.6f,\n  \"quantiser_s\": %.6f,\n  \"layers\": [",
            rep->calib_s, rep->total_s);
    for (int i = 0; i < rep->nlayers; i++) {
        fprintf(f, "%s\n    {\"name\": ", i ? "," : "");
        json_str(f, s[i].name);
        fprintf(f, ", \"op\": ");
        json_str(f, s[i].op);
        fprintf(f, ", \"precision\": \"%s\", \"why\": ", s[i].quantised ? qprec(rep) : "float");
        json_str(f, s[i].why);
        fprintf(f, ",\n     \"entire\": {\"cosine\": ");
        json_num(f, s[i].entire_cos);
        fprintf(f, ", \"relative_error\": ");
        json_num(f, s[i].entire_rel);
        fprintf(f, "}, \"single\": {\"cosine\": ");
        json_num(f, s[i].single_cos);
        fprintf(f, ", \"relative_error\": ");
        json_num(f, s[i].single_rel);
        fprintf(f, "}}");
    }
    fprintf(f, "\n  ]\n}\n");
    free(s);
    if (fclose(f)) {
        npu_err(QDOM, "cannot write %s", path);
        return NPU_ERR_IO;
    }
    return NPU_OK;
}
