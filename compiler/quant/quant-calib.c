// SPDX-License-Identifier: MIT
/*
 * quant-calib.c: calibration. The fp32 graph (a copy) runs on the CPU
 * executor with every value kept alive, sample by sample; each float value's
 * range is observed (pass 1) and, for the histogram algorithms, its values are
 * counted into 2048 bins over that range (pass 2). The range an int8 tensor
 * gets is then the observed one (minmax), the 0.01 % / 99.99 % percentiles
 * (percentile), the symmetric shrink of least expected squared error (mse), or
 * the clip of least KL divergence between the |x| histogram and its 128-level
 * quantisation (kl, the entropy calibration of TensorRT and of Rockchip's
 * kl_divergence). Also the graph copy the runs use.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quant-priv.h"
#include "quant-rewrite.h"

/* ---- graph copy ------------------------------------------------------------------ */

struct npu_graph *
quant_graph_clone(const struct npu_graph *g)
{
    struct npu_graph *c = npu_graph_new(g->name);
    int maxid = 0;
    for (int i = 0; i < g->nvalues; i++)
        maxid = NPU_MAX(maxid, g->values[i]->id + 1);
    struct npu_value **map = calloc((size_t)maxid + 1, sizeof(*map));
    if (!c || !map)
        goto err;
    c->opset = g->opset;
    for (int i = 0; i < g->ninputs; i++) {
        const struct npu_value *v = g->inputs[i];
        if (!(map[v->id] = npu_graph_add_input(c, v->name, v->t.dtype, v->t.ndim, v->t.dims)))
            goto err;
    }
    for (int i = 0; i < g->nvalues; i++) {
        const struct npu_value *v = g->values[i];
        if (v->kind == NPU_VALUE_CONST && !(map[v->id] = npu_graph_add_const(c, v->name, &v->t)))
            goto err;
    }
    npu_graph_for_each_node (g, n) {
        struct npu_value *in[64];
        const char *names[64];
        if (n->nin > 64 || n->nout > 64)
            goto err;
        for (int i = 0; i < n->nin; i++)
            in[i] = n->in[i] ? map[n->in[i]->id] : NULL;
        for (int i = 0; i < n->nout; i++)
            names[i] = n->out[i]->name;
        struct npu_node *m = npu_node_new(c, n->op, n->name, in, n->nin, n->nout, names);
        if (!m)
            goto err;
        m->device = n->device;
        for (int i = 0; i < n->nattr; i++)
            if (npu_node_set_attr(c, m, &n->attr[i]))
                goto err;
        for (int i = 0; i < n->nout; i++) {
            m->out[i]->t = n->out[i]->t;
            m->out[i]->t.data = NULL;
            m->out[i]->known = n->out[i]->known;
            map[n->out[i]->id] = m->out[i];
        }
        npu_graph_append(c, m);
    }
    for (int i = 0; i < g->noutputs; i++)
        if (!map[g->outputs[i]->id] || npu_graph_add_output(c, map[g->outputs[i]->id]))
            goto err;
    free(map);
    return c;
err:
    npu_err(QDOM, "cannot copy the graph");
    free(map);
    npu_graph_free(c);
    return NULL;
}

/* ---- the observing run --------------------------------------------------------------- */

static enum npu_status
keep_value(struct npu_graph *g, struct npu_value *v)
{
    if (!v || v->is_output || v->kind != NPU_VALUE_NODE)
        return NPU_OK;
    return npu_graph_add_output(g, v);
}

enum npu_status
quant_run_init(struct quant_run *r, struct npu_graph *g, bool layers_only)
{
    memset(r, 0, sizeof(*r));
    enum npu_status st = NPU_OK;
    /* the values read afterwards are outputs, so the executor keeps them to the end */
    npu_graph_for_each_node (g, n) {
        if (layers_only) {
            if (quant_candidate(n) && !(st = keep_value(g, n->in[0])))
                st = keep_value(g, n->out[0]);
        } else {
            for (int i = 0; i < n->nout && !st; i++)
                st = keep_value(g, n->out[i]);
        }
        if (st) {
            npu_graph_free(g);
            return st;
        }
    }
    if ((st = exec_plan_build(g, 0, &r->plan))) {
        npu_graph_free(g);
        return st;
    }
    r->arena = malloc(r->plan->arena_bytes + 64);
    r->scratch = malloc(r->plan->scratch_bytes + 64);
    if (!r->arena || !r->scratch) {
        quant_run_fini(r);
        return NPU_ERR_NOMEM;
    }
    return NPU_OK;
}

enum npu_status
quant_run_sample(struct quant_run *r, struct npu_cpu_ctx *ctx, const struct npu_tensor *inputs)
{
    r->inputs = inputs;
    return exec_run(r->plan, ctx, r->arena, r->scratch, inputs, NULL);
}

static const struct npu_tensor *
slot_value(struct quant_run *r, int i, struct npu_tensor *tmp)
{
    const struct exec_slot *s = &r->plan->slots[i];
    *tmp = s->t;
    if (s->kind == SLOT_ARENA)
        tmp->data = s->offset >= 0 ? (char *)r->arena + s->offset : NULL;
    else if (s->kind == SLOT_INPUT)
        tmp->data = r->inputs[s->input].data;
    return tmp->data ? tmp : NULL;
}

const struct npu_tensor *
quant_run_value(struct quant_run *r, const char *name, struct npu_tensor *tmp)
{
    const struct npu_graph *g = r->plan->g;
    const struct npu_value *v = npu_graph_find_value(g, name);
    if (!v || v->t.dtype != NPU_DTYPE_FP32)
        return NULL;
    for (int i = 0; i < g->nvalues; i++)
        if (g->values[i] == v)
            return slot_value(r, i, tmp);
    return NULL;
}

void
quant_run_fini(struct quant_run *r)
{
    exec_plan_free(r->plan);
    free(r->arena);
    free(r->scratch);
    memset(r, 0, sizeof(*r));
}

/* ---- statistics -------------------------------------------------------------------- */

void
quant_params(float lo, float hi, float *scale, int8_t *zp)
{
    lo = fminf(lo, 0);
    hi = fmaxf(hi, 0);
    float s = (hi - lo) / 255.0f;
    if (!(s > 1e-12f) || !isfinite(s))
        s = 1.0f / 255.0f; /* an all-zero tensor: any scale holds it */
    float z = roundf(-128.0f - lo / s);
    *scale = s;
    *zp = (int8_t)fminf(127.0f, fmaxf(-128.0f, z));
}

const struct quant_stat *
quant_stat_find(const struct quant_stats *st, const char *name)
{
    for (int i = 0; i < st->n; i++)
        if (st->s[i].seen && !strcmp(st->s[i].name, name))
            return &st->s[i];
    return NULL;
}

void
quant_stats_free(struct quant_stats *st)
{
    for (int i = 0; i < st->n; i++)
        free(st->s[i].hist);
    free(st->s);
    st->s = NULL;
    st->n = 0;
}

/* Expected squared error of quantising the histogram into [a, b]. */
static double
hist_mse(const struct quant_stat *s, float a, float b)
{
    double w = ((double)s->hi - s->lo) / QUANT_BINS, step = ((double)b - a) / 255.0, e = 0, tot = 0;
    for (int i = 0; i < QUANT_BINS; i++) {
        double h = s->hist[i];
        if (!h)
            continue;
        double c = s->lo + (i + 0.5) * w, d = c < a ? a - c : c > b ? c - b : 0;
        e += h * (d > 0 ? d * d : step * step / 12.0);
        tot += h;
    }
    return tot ? e / tot : 0;
}

/* KL(P || Q) of TensorRT's entropy calibration over the |x| histogram h[0..n). */
static double
kl_at(const double *h, int n, int levels)
{
    double *p = malloc(sizeof(double) * (size_t)n), *q = calloc((size_t)n, sizeof(double));
    double kl = INFINITY;
    if (!p || !q)
        goto out;
    double outl = 0;
    for (int i = 0; i < QUANT_BINS; i++)
        if (i >= n)
            outl += h[i];
    for (int i = 0; i < n; i++)
        p[i] = h[i];
    p[n - 1] += outl;
    /* Q: h[0..n) merged into `levels` buckets, spread evenly over each
     * bucket's non-empty bins */
    for (int j = 0; j < levels; j++) {
        int b0 = (int)((long long)j * n / levels), b1 = (int)((long long)(j + 1) * n / levels);
        double sum = 0;
        int nz = 0;
        for (int i = b0; i < b1; i++) {
            sum += h[i];
            nz += h[i] != 0;
        }
        for (int i = b0; i < b1; i++)
            q[i] = h[i] != 0 ? sum / nz : 0;
    }
    double sp = 0, sq = 0;
    for (int i = 0; i < n; i++) {
        sp += p[i];
        sq += q[i];
    }
    if (!(sp > 0) || !(sq > 0))
        goto out;
    kl = 0;
    for (int i = 0; i < n; i++) {
        if (!p[i])
            continue;
        double pp = p[i] / sp, qq = q[i] / sq;
        kl += qq > 0 ? pp * log(pp / qq) : pp * 20.0; /* an empty Q bucket: heavy penalty */
    }
out:
    free(p);
    free(q);
    return kl;
}

static void
choose_range(struct quant_stat *s, enum npu_quant_algo algo)
{
    s->clo = fminf(s->lo, 0);
    s->chi = fmaxf(s->hi, 0);
    if (algo == NPU_QUANT_MINMAX || !s->hist || !(s->hi > s->lo))
        return;
    double w = ((double)s->hi - s->lo) / QUANT_BINS, tot = 0;
    for (int i = 0; i < QUANT_BINS; i++)
        tot += s->hist[i];
    if (!(tot > 0))
        return;
    if (algo == NPU_QUANT_PERCENTILE) {
        double acc = 0, plo = tot * 1e-4, phi = tot * (1 - 1e-4);
        int ilo = 0, ihi = QUANT_BINS - 1;
        for (int i = 0; i < QUANT_BINS; i++) {
            acc += s->hist[i];
            if (acc <= plo)
                ilo = i + 1;
            if (acc < phi)
                ihi = i + 1;
        }
        ihi = NPU_MIN(ihi, QUANT_BINS - 1);
        s->clo = fminf(0, (float)(s->lo + ilo * w));
        s->chi = fmaxf(0, (float)(s->lo + (ihi + 1) * w));
    } else if (algo == NPU_QUANT_MSE) {
        double best = INFINITY;
        for (int k = 0; k <= 40; k++) {
            float f = 1.0f - 0.02f * (float)k;
            float a = fminf(s->lo, 0) * f, b = fmaxf(s->hi, 0) * f;
            double e = hist_mse(s, a, b);
            if (e < best) {
                best = e;
                s->clo = a;
                s->chi = b;
            }
        }
    } else { /* KL over |x| */
        double m = fmax(fabs(s->lo), fabs(s->hi)), aw = m / QUANT_BINS;
        double *h = calloc(QUANT_BINS, sizeof(double));
        if (!h)
            return;
        for (int i = 0; i < QUANT_BINS; i++) {
            double c = fabs(s->lo + (i + 0.5) * w);
            int b = (int)(c / aw);
            h[NPU_MIN(b, QUANT_BINS - 1)] += s->hist[i];
        }
        /* int8 levels over [0, T]: 128 per side when both signs occur, the
         * whole 256 when the tensor is one-sided (after a ReLU) */
        int levels = s->lo >= 0 || s->hi <= 0 ? 256 : 128;
        double best = INFINITY;
        int bi = QUANT_BINS;
        for (int n = levels; n <= QUANT_BINS; n += 16) {
            double kl = kl_at(h, n, levels);
            if (kl < best) {
                best = kl;
                bi = n;
            }
        }
        free(h);
        float t = (float)(bi * aw);
        s->clo = fminf(0, fmaxf(s->lo, -t));
        s->chi = fmaxf(0, fminf(s->hi, t));
    }
}

/* The finite range of x[0..n) (lo > hi when nothing is finite): a loop the compiler
 * vectorises (NaN fails both comparisons), rescanned only when an infinity shows. */
static void
range_of(const float *x, int64_t n, float *lo, float *hi)
{
    float a[8], b[8];
    for (int k = 0; k < 8; k++) {
        a[k] = FLT_MAX;
        b[k] = -FLT_MAX;
    }
    int64_t j = 0;
    for (; j + 8 <= n; j += 8)
        for (int k = 0; k < 8; k++) {
            float v = x[j + k];
            a[k] = v < a[k] ? v : a[k];
            b[k] = v > b[k] ? v : b[k];
        }
    for (; j < n; j++) {
        a[0] = x[j] < a[0] ? x[j] : a[0];
        b[0] = x[j] > b[0] ? x[j] : b[0];
    }
    float l = a[0], h = b[0];
    for (int k = 1; k < 8; k++) {
        l = a[k] < l ? a[k] : l;
        h = b[k] > h ? b[k] : h;
    }
    if (isinf(l) || isinf(h)) {
        l = FLT_MAX;
        h = -FLT_MAX;
        for (j = 0; j < n; j++)
            if (isfinite(x[j])) {
                l = fminf(l, x[j]);
                h = fmaxf(h, x[j]);
            }
    }
    *lo = l;
    *hi = h;
}

enum npu_status
quant_calibrate(struct quant_run *r, struct npu_cpu_ctx *ctx, const struct npu_quant_options *o,
                struct quant_stats *st)
{
    const struct npu_graph *g = r->plan->g;
    const struct npu_quant_dataset *d = o->data;
    enum npu_status s;
    st->s = calloc((size_t)g->nvalues + 1, sizeof(*st->s));
    if (!st->s)
        return NPU_ERR_NOMEM;
    st->n = g->nvalues;
    for (int i = 0; i < g->nvalues; i++) {
        st->s[i].name = g->values[i]->name;
        st->s[i].lo = FLT_MAX;
        st->s[i].hi = -FLT_MAX;
    }
    bool hist = o->algo != NPU_QUANT_MINMAX;
    for (int pass = 0; pass < (hist ? 2 : 1); pass++) {
        if (pass == 1)
            for (int i = 0; i < g->nvalues; i++)
                if (st->s[i].seen && !(st->s[i].hist = calloc(QUANT_BINS, sizeof(double))))
                    return NPU_ERR_NOMEM;
        for (int k = 0; k < d->nsamples; k++) {
            if ((s = quant_run_sample(r, ctx, &d->t[(size_t)k * (size_t)d->ninputs]))) {
                npu_err(QDOM, "calibration sample %d: the fp32 graph failed to run", k + 1);
                return s;
            }
            for (int i = 0; i < g->nvalues; i++) {
                const struct npu_value *v = g->values[i];
                struct quant_stat *q = &st->s[i];
                struct npu_tensor tmp;
                /* only the kept values (graph inputs and outputs) hold this sample's data */
                if (v->kind == NPU_VALUE_CONST || v->t.dtype != NPU_DTYPE_FP32 ||
                    !(v->is_output || v->kind == NPU_VALUE_INPUT))
                    continue;
                const struct npu_tensor *t = slot_value(r, i, &tmp);
                if (!t)
                    continue;
                const float *x = t->data;
                int64_t ne = npu_tensor_numel(t);
                if (pass == 0) {
                    float lo, hi;
                    range_of(x, ne, &lo, &hi);
                    q->lo = fminf(q->lo, lo);
                    q->hi = fmaxf(q->hi, hi);
                    q->seen = true;
                } else if (q->hist && q->hi > q->lo) {
                    double inv = QUANT_BINS / ((double)q->hi - q->lo);
                    for (int64_t j = 0; j < ne; j++) {
                        if (!isfinite(x[j]))
                            continue;
                        int b = (int)((x[j] - q->lo) * inv);
                        q->hist[b < 0 ? 0 : b >= QUANT_BINS ? QUANT_BINS - 1 : b] += 1;
                    }
                }
            }
        }
    }
    for (int i = 0; i < g->nvalues; i++)
        if (st->s[i].seen) {
            if (st->s[i].lo > st->s[i].hi) /* nothing finite */
                st->s[i].lo = st->s[i].hi = 0;
            choose_range(&st->s[i], o->algo);
        }
    return NPU_OK;
}
