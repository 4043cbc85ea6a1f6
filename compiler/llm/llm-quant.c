// SPDX-License-Identifier: MIT
/*
 * llm-quant.c: w8a8 decoder programs (npu_llm_options.weights = "w8a8"): the
 * projections (q, k, v, o, the MLP's, the LM head) as int8 products, the rest (norms,
 * RoPE, attention, embeddings) as in the fp16 programs.
 *
 * What w8a8 means here (as Rockchip's RKLLM w8a8): weights int8 symmetric with one
 * scale per output channel (max |w| / 127 of the column), quantised from the
 * checkpoint's fp32 view when a graph is built; activations int8 symmetric with one
 * scale per tensor, static: calibrated at load by running the fp32 decoder on the CPU
 * executor, one layer at a time, over a calibration sequence (the caller's ids, then a fixed
 * pseudo-random sequence) and taking each projection's largest |input| and |result| times a margin
 * (LLM_QUANT_MARGIN_X, _Y: tokens after the calibration may go beyond what it saw; past the
 * range values saturate). Static because the NPU's QuantizeLinear takes its scale from
 * registers: a per-step (dynamic) scale would need a host round trip per product.
 *
 * The graph: x -> QuantizeLinear (per tensor, zero point 0; q, k and v share one) ->
 * QLinearMatMul (int32 sums; requantised with x_scale * w_scale[k] / y_scale in the
 * DPU) -> DequantizeLinear -> fp16 as before (a bias, as Qwen2's, is added after it in
 * float). On the NPU these are the back end's int8 CNA/DPU pipeline and its DPU Q / DQ
 * passes (docs/quantisation.md); on the cpu backend the CPU executor's exact integer
 * kernels.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llm-priv.h"
#include "npu/npu-build.h"
#include "npu/npu-exec.h"
#include "npu/npu-model.h"

#define DOM "llm"
/* activation ranges: the calibrated largest |value| times these, for a product's input and
 * its result. On the test checkpoints (tests/llm, teacher-forced logits against fp32, cpu)
 * inputs saturating past the calibration cost most: x 1.0 / y 1.0 gave cosine min 0.981,
 * 1.25 / 1.25 0.991, 1.5 / 1.25 0.995, 1.5 / 2.0 0.992 (y's int8 steps too coarse). */
#define LLM_QUANT_MARGIN_X 1.5f
#define LLM_QUANT_MARGIN_Y 1.25f
/* the fixed part of the calibration sequence */
#define LLM_QUANT_FIXED_TOKENS 32

typedef struct npu_value V;

static const struct llm_qrange *
find(const struct llm_quant *q, const char *key)
{
    for (int i = 0; q && i < q->n; i++)
        if (!strcmp(q->r[i].key, key))
            return &q->r[i];
    return NULL;
}

static V *
scalar(struct npu_graph *g, const char *name, enum npu_dtype dt, const void *v)
{
    struct npu_tensor t = {.dtype = dt, .ndim = 0, .data = (void *)v};
    return npu_graph_add_const(g, name, &t);
}

static float
act_scale(float absmax, float margin)
{
    return absmax > 0 ? absmax * margin / 127.0f : 1.0f;
}

/* The QuantizeLinear of x at scale s another product made already (q, k, v), or NULL. */
static V *
shared_quantize(struct npu_graph *g, V *x, float s)
{
    for (struct npu_node *n = g->tail; n; n = n->prev)
        if (n->op == NPU_OP_QUANTIZE_LINEAR && n->in[0] == x &&
            *(const float *)n->in[1]->t.data == s)
            return n->out[0];
    return NULL;
}

static V *
append(struct npu_graph *g, enum npu_op o, const char *name, V **in, int nin)
{
    struct npu_node *n = npu_node_new(g, o, name, in, nin, 1, NULL);
    if (!n)
        return NULL;
    /* The int8 product on the NPU, not by cost: the partition's cost model compares one
     * NPU core (an int8 product of one row streams its weights at 11 GB/s, timing model v2)
     * with the RK3588 CPU model v1, which streams int8 weights about as fast, so by cost
     * every product of the decode step went to the CPU (TinyLlama: 0 NPU jobs); it does not
     * see the split over three cores, nor that the host has other work. Its Quantize /
     * DequantizeLinear are left to the cost (pinned too, the output projection's
     * QuantizeLinear wrote the head merge's view, which the product cannot read, and the
     * product went back to the CPU). NPU_PARTITION=supported / cpu decide as they say. */
    if (o == NPU_OP_QLINEAR_MATMUL && npu_build_partition_mode(NULL) == NPU_PARTITION_COST)
        n->device = NPU_DEVICE_NPU;
    npu_graph_append(g, n);
    if (npu_infer_node(g, n))
        return NULL;
    return n->out[0];
}

/* W [in, out] row-major as int8 per output column: scale max |w| / 127 of the column. */
static void
quantize_weight(const float *w, int64_t in, int64_t out, int8_t *wq, float *ws)
{
    for (int64_t k = 0; k < out; k++)
        ws[k] = 0;
    for (int64_t i = 0; i < in; i++)
        for (int64_t k = 0; k < out; k++)
            ws[k] = fmaxf(ws[k], fabsf(w[i * out + k]));
    for (int64_t k = 0; k < out; k++)
        ws[k] = ws[k] > 0 ? ws[k] / 127.0f : 1.0f;
    for (int64_t i = 0; i < in; i++)
        for (int64_t k = 0; k < out; k++)
            wq[i * out + k] = (int8_t)fmaxf(-127.0f, fminf(127.0f, rintf(w[i * out + k] / ws[k])));
}

/* The cache's int8 copy of the weight `name` ([in, out]) in *wq / *ws, made from w when the
 * cache lacks it and w is given; both NULL without a cache (or w and no copy). Nonzero on
 * error (logged): no memory, or a copy of another shape under the name. */
static int
cached_weight(struct llm_qcache *c, const char *name, int64_t in, int64_t out, const float *w,
              int8_t **wq, float **ws)
{
    *wq = NULL;
    *ws = NULL;
    if (!c)
        return 0;
    for (int i = 0; i < c->n; i++) {
        struct llm_qweight *e = &c->w[i];
        if (strcmp(e->name, name))
            continue;
        if (e->in != in || e->out != out) {
            npu_err(DOM, "w8a8: the int8 copy of '%s' is [%lld, %lld], the graph asks [%lld, %lld]",
                    name, (long long)e->in, (long long)e->out, (long long)in, (long long)out);
            return -1;
        }
        *wq = e->q;
        *ws = e->scale;
        return 0;
    }
    if (!w)
        return 0;
    if (strlen(name) >= sizeof(c->w->name)) {
        npu_err(DOM, "w8a8: weight name '%s' is too long", name);
        return -1;
    }
    if (c->n == c->cap) {
        int nc = c->cap ? 2 * c->cap : 64;
        struct llm_qweight *nw = realloc(c->w, (size_t)nc * sizeof(*nw));
        if (!nw)
            return -1;
        c->w = nw;
        c->cap = nc;
    }
    struct llm_qweight *e = &c->w[c->n];
    memset(e, 0, sizeof(*e));
    snprintf(e->name, sizeof(e->name), "%s", name);
    e->in = in;
    e->out = out;
    e->q = malloc((size_t)(in * out));
    e->scale = malloc((size_t)out * sizeof(float));
    if (!e->q || !e->scale) {
        free(e->q);
        free(e->scale);
        npu_err(DOM, "w8a8: no memory for the int8 copy of '%s'", name);
        return -1;
    }
    quantize_weight(w, in, out, e->q, e->scale);
    c->n++;
    c->bytes += (uint64_t)(in * out) + (uint64_t)out * sizeof(float);
    *wq = e->q;
    *ws = e->scale;
    return 0;
}

V *
llm_quant_matmul(struct npu_graph *g, V *x, const float *w, int64_t in, int64_t out,
                 const char *name, const char *key, const struct llm_quant *q)
{
    const struct llm_qrange *r = find(q, key);
    if (!r) {
        npu_err(DOM, "w8a8: no calibrated range for the projection '%s'", key);
        return NULL;
    }
    const float sx = act_scale(r->x, LLM_QUANT_MARGIN_X), sy = act_scale(r->y, LLM_QUANT_MARGIN_Y);
    const int8_t zero = 0;
    int8_t *wq = NULL;
    float *ws = NULL;
    if (cached_weight(q->cache, name, in, out, w, &wq, &ws))
        return NULL;
    if (!wq && !w) {
        npu_err(DOM,
                "w8a8: the projection '%s' has no int8 copy and its fp32 weights were released",
                name);
        return NULL;
    }
    int8_t *wz = npu_graph_alloc(g, (size_t)out);
    if (!wz)
        return NULL;
    for (int64_t k = 0; k < out; k++)
        wz[k] = 0;
    if (!wq) {
        if (!(wq = npu_graph_alloc(g, (size_t)(in * out))) ||
            !(ws = npu_graph_alloc(g, (size_t)out * sizeof(float))))
            return NULL;
        quantize_weight(w, in, out, wq, ws);
    }
    char nm[128];
    int64_t wd[2] = {in, out};
    struct npu_tensor tw = {.dtype = NPU_DTYPE_INT8, .ndim = 2, .dims = {in, out}, .data = wq};
    struct npu_tensor tws = {.dtype = NPU_DTYPE_FP32, .ndim = 1, .dims = {out}, .data = ws};
    struct npu_tensor twz = {.dtype = NPU_DTYPE_INT8, .ndim = 1, .dims = {out}, .data = wz};
    (void)wd;
    snprintf(nm, sizeof(nm), "%s.wq", name);
    V *wv = npu_graph_add_const_owned(g, nm, &tw);
    snprintf(nm, sizeof(nm), "%s.w_scale", name);
    V *wsv = npu_graph_add_const_owned(g, nm, &tws);
    snprintf(nm, sizeof(nm), "%s.w_zp", name);
    V *wzv = npu_graph_add_const_owned(g, nm, &twz);
    snprintf(nm, sizeof(nm), "%s.x_scale", name);
    V *xs = scalar(g, nm, NPU_DTYPE_FP32, &sx);
    snprintf(nm, sizeof(nm), "%s.x_zp", name);
    V *xz = scalar(g, nm, NPU_DTYPE_INT8, &zero);
    snprintf(nm, sizeof(nm), "%s.y_scale", name);
    V *ys = scalar(g, nm, NPU_DTYPE_FP32, &sy);
    snprintf(nm, sizeof(nm), "%s.y_zp", name);
    V *yz = scalar(g, nm, NPU_DTYPE_INT8, &zero);
    if (!wv || !wsv || !wzv || !xs || !xz || !ys || !yz)
        return NULL;
    V *xq = shared_quantize(g, x, sx);
    if (!xq) {
        snprintf(nm, sizeof(nm), "%s.quantize", name);
        V *qin[3] = {x, xs, xz};
        if (!(xq = append(g, NPU_OP_QUANTIZE_LINEAR, nm, qin, 3)))
            return NULL;
    }
    snprintf(nm, sizeof(nm), "%s.qmatmul", name);
    V *min[8] = {xq, xs, xz, wv, wsv, wzv, ys, yz};
    V *yq = append(g, NPU_OP_QLINEAR_MATMUL, nm, min, 8);
    if (!yq)
        return NULL;
    snprintf(nm, sizeof(nm), "%s.dequantize", name);
    V *din[3] = {yq, ys, yz};
    return append(g, NPU_OP_DEQUANTIZE_LINEAR, nm, din, 3);
}

static bool
reads(const struct npu_node *n, const V *v)
{
    for (int i = 0; i < n->nin; i++)
        if (n->in[i] == v)
            return true;
    return false;
}

void
llm_quant_sink(struct npu_graph *g)
{
    /* each DequantizeLinear just before the first node that reads its result: the int8
     * results of products side by side (q, k, v; a projection's column blocks) then live at
     * the same time, so the activation planner gives each its own buffer and the products
     * stay independent (with a DequantizeLinear after each product, the next product wrote
     * into the buffer the previous one's had just freed, and the layer split found no
     * independent tasks: TinyLlama's widths, 2 layers, 0 of 119 tasks in multi-core submits) */
    for (struct npu_node *n = g->head, *next; n; n = next) {
        next = n->next;
        if (n->op != NPU_OP_DEQUANTIZE_LINEAR || n->pass_data)
            continue;
        struct npu_node *u = n->next;
        while (u && !reads(u, n->out[0]))
            u = u->next;
        n->pass_data = n; /* moved once */
        if (u == n->next)
            continue;
        npu_graph_remove(g, n);
        n->out[0]->producer = n;
        n->out[0]->producer_idx = 0;
        npu_graph_insert_before(g, u, n);
    }
    for (struct npu_node *n = g->head; n; n = n->next)
        if (n->op == NPU_OP_DEQUANTIZE_LINEAR)
            n->pass_data = NULL;
}

static enum npu_status
observe_one(struct npu_graph *g, V *v, const char *what, const char *key)
{
    char nm[64]; /* unique: a split projection observes each of its blocks */
    snprintf(nm, sizeof(nm), "calib.%s.%s@%d", what, key, g->nvalues);
    V *o = npu_value_new_exact(g, nm);
    struct npu_node *n = o ? npu_node_new_v(g, NPU_OP_IDENTITY, nm, &v, 1, &o, 1) : NULL;
    if (!n)
        return NPU_ERR_NOMEM;
    npu_graph_append(g, n);
    if (npu_infer_node(g, n) || npu_graph_add_output(g, o))
        return NPU_ERR_INTERNAL;
    return NPU_OK;
}

enum npu_status
llm_quant_observe(struct npu_graph *g, V *x, V *y, const char *key)
{
    enum npu_status st;
    if (strlen(key) >= sizeof(((struct llm_qrange *)0)->key)) {
        npu_err(DOM, "w8a8: projection name '%s' is too long", key);
        return NPU_ERR_INTERNAL;
    }
    if ((st = observe_one(g, x, "x", key)))
        return st;
    return observe_one(g, y, "y", key);
}

void
llm_quant_free(struct llm_quant *q)
{
    if (!q)
        return;
    free(q->r);
    q->r = NULL;
    q->n = q->cap = 0;
    if (q->cache) {
        for (int i = 0; i < q->cache->n; i++) {
            free(q->cache->w[i].q);
            free(q->cache->w[i].scale);
        }
        free(q->cache->w);
        free(q->cache);
        q->cache = NULL;
    }
}

uint64_t
llm_quant_hash(const struct llm_quant *q, uint64_t h)
{
    /* the w8a8 graph's version: bump when what llm_quant_matmul builds changes */
    static const char version[] = "w8a8-7";
    for (size_t j = 0; j < sizeof(version); j++)
        h = (h ^ (unsigned char)version[j]) * 0x100000001b3ull;
    for (int i = 0; q && i < q->n; i++) {
        const unsigned char *p = (const unsigned char *)&q->r[i];
        for (size_t j = 0; j < sizeof(q->r[i]); j++)
            h = (h ^ p[j]) * 0x100000001b3ull;
    }
    return h;
}

static float
absmax(const struct npu_tensor *t)
{
    float m = 0;
    const float *d = t->data;
    for (int64_t i = 0, n = npu_tensor_numel(t); i < n; i++)
        m = fmaxf(m, fabsf(d[i]));
    return m;
}

static enum npu_status
record(struct llm_quant *q, const char *what, const char *key, float v)
{
    struct llm_qrange *r = (struct llm_qrange *)find(q, key);
    if (!r) {
        if (q->n == q->cap) {
            int nc = q->cap ? 2 * q->cap : 64;
            struct llm_qrange *nr = realloc(q->r, (size_t)nc * sizeof(*nr));
            if (!nr)
                return NPU_ERR_NOMEM;
            q->r = nr;
            q->cap = nc;
        }
        r = &q->r[q->n++];
        memset(r, 0, sizeof(*r));
        snprintf(r->key, sizeof(r->key), "%s", key);
    }
    if (what[0] == 'x')
        r->x = fmaxf(r->x, v);
    else
        r->y = fmaxf(r->y, v);
    return NPU_OK;
}

/* splitmix64 */
static uint64_t
mix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* key (or weight name) of the one-layer stage graph, whose layer is l0, as layer l's: "l0.q"
 * -> "l5.q"; others ("lm_head") as they are. Nonzero when it does not fit. */
static int
relabel(char *dst, size_t n, const char *src, int l)
{
    int r = strncmp(src, "l0.", 3) ? snprintf(dst, n, "%s", src)
                                   : snprintf(dst, n, "l%d.%s", l, src + 3);
    if (r < 0 || (size_t)r >= n) {
        npu_err(DOM, "w8a8 calibration: the name '%s' of layer %d is too long", src, l);
        return -1;
    }
    return 0;
}

/* Layer l's projections quantised into q->cache from the ranges its stage recorded (st, keys
 * of layer 0): a one-layer graph built with a cache of its own on (the graph builder names the
 * weights, as the decode step's), its entries renamed to layer l's and moved. */
static enum npu_status
quantise_layer(const struct llm_config *c1, const struct llm_weights *w1,
               const struct llm_quant *st, int l, struct llm_quant *q)
{
    struct llm_qcache tc = {0};
    struct llm_quant tq = {
        .n = st->n, .r = st->r, .cache = &tc, .hidden_in = true, .hidden_out = true};
    struct llm_weights wq = *w1;
    struct npu_graph *g = NULL;
    wq.quant = &tq;
    enum npu_status rc = llm_build_graph(c1, &wq, 1, 0, &g);
    npu_graph_free(g);
    struct llm_qcache *d = q->cache;
    for (int i = 0; i < tc.n; i++) {
        struct llm_qweight *e = &tc.w[i];
        if (!rc && d->n == d->cap) {
            int nc = d->cap ? 2 * d->cap : 64;
            struct llm_qweight *nw = realloc(d->w, (size_t)nc * sizeof(*nw));
            if (!nw)
                rc = NPU_ERR_NOMEM;
            else {
                d->w = nw;
                d->cap = nc;
            }
        }
        struct llm_qweight *o = rc ? NULL : &d->w[d->n];
        if (o && relabel(o->name, sizeof(o->name), e->name, l))
            rc = NPU_ERR_INTERNAL;
        if (rc) {
            free(e->q);
            free(e->scale);
            continue;
        }
        o->in = e->in;
        o->out = e->out;
        o->q = e->q;
        o->scale = e->scale;
        d->n++;
        d->bytes += (uint64_t)(e->in * e->out) + (uint64_t)e->out * sizeof(float);
    }
    free(tc.w);
    return rc;
}

/* One stage of the calibration: layer l as a one-layer model (c1, w1) over the calibration
 * sequence, its input the ids (layer 0) or the hidden states h [s, hidden] the previous stage
 * left, its projections' ranges recorded into st (keys of layer 0), and (but in the last
 * stage, which runs the final norm and the LM head) the hidden states after it into h. */
static enum npu_status
run_stage(const struct llm_config *c1, const struct llm_weights *w1, bool first, bool last,
          struct npu_tensor *in, int nin, float *h, int s, int cpu_threads, struct llm_quant *st)
{
    enum npu_status rc;
    struct npu_graph *g = NULL;
    struct npu_model *mo = NULL;
    struct npu_session *se = NULL;
    struct npu_tensor *outs = NULL;
    struct llm_weights wo = *w1;
    st->observe = true;
    st->hidden_in = !first;
    st->hidden_out = !last;
    wo.quant = st;
    if ((rc = llm_build_graph(c1, &wo, s, 0, &g)))
        goto out;
    struct npu_model_options mopt = {.backend = "cpu", .cpu_threads = cpu_threads};
    rc = npu_model_load_graph(g, "w8a8 calibration", &mopt, &mo);
    g = NULL; /* taken */
    if (rc || (rc = npu_session_create(mo, 0, &se)))
        goto out;
    int nout = npu_model_num_outputs(mo);
    if (!(outs = calloc((size_t)nout, sizeof(*outs)))) {
        rc = NPU_ERR_NOMEM;
        goto out;
    }
    if ((rc = npu_session_run(se, in, nin, outs, nout, NULL)))
        goto out;
    for (int i = 0; i < nout && !rc; i++) {
        const char *nm = npu_model_output(mo, i)->name;
        if (!strcmp(nm, "hidden_out")) {
            if (outs[i].dtype != NPU_DTYPE_FP32 ||
                npu_tensor_numel(&outs[i]) != (int64_t)s * c1->hidden) {
                npu_err(DOM, "w8a8 calibration: the hidden states are not fp32 [%d, %d]", s,
                        c1->hidden);
                rc = NPU_ERR_INTERNAL;
                break;
            }
            memcpy(h, outs[i].data, (size_t)s * c1->hidden * sizeof(float));
            continue;
        }
        if (strncmp(nm, "calib.", 6) || strlen(nm) < 9)
            continue;
        if (outs[i].dtype != NPU_DTYPE_FP32) {
            npu_err(DOM, "w8a8 calibration: %s is not fp32", nm);
            rc = NPU_ERR_INTERNAL;
            break;
        }
        char key[sizeof(st->r->key)];
        snprintf(key, sizeof(key), "%.*s", (int)strcspn(nm + 8, "@"), nm + 8);
        rc = record(st, nm + 6, key, absmax(&outs[i]));
    }
out:
    free(outs);
    npu_session_destroy(se);
    npu_model_free(mo);
    npu_graph_free(g);
    return rc;
}

enum npu_status
llm_quant_calibrate(const struct llm_config *c, struct llm_weights *w, const int32_t *ids, int n,
                    int cpu_threads, bool quantise, struct llm_quant *q)
{
    enum npu_status st;
    int64_t *tok = NULL, *pos = NULL;
    float *cs = NULL, *sn = NULL, *mask = NULL, *h = NULL;
    struct llm_quant sq = {0};
    llm_quant_free(q);
    quantise = quantise && c->arch != LLM_ARCH_GPT2;
    /* the caller's ids, then the fixed sequence; as many as GPT-2's positions allow */
    int s = n + LLM_QUANT_FIXED_TOKENS;
    if (c->arch == LLM_ARCH_GPT2 && s > c->max_pos)
        s = c->max_pos;
    const int hd = c->head_dim, G = c->n_heads / c->n_kv_heads;
    tok = malloc((size_t)s * sizeof(*tok));
    pos = malloc((size_t)s * sizeof(*pos));
    cs = malloc((size_t)s * hd * sizeof(float));
    sn = malloc((size_t)s * hd * sizeof(float));
    mask = malloc((size_t)G * s * s * sizeof(float));
    h = malloc((size_t)s * c->hidden * sizeof(float));
    if (!tok || !pos || !cs || !sn || !mask || !h ||
        (quantise && !(q->cache = calloc(1, sizeof(*q->cache))))) {
        st = NPU_ERR_NOMEM;
        goto out;
    }
    uint64_t rng = 0x6c6c6d2d77386138ull; /* fixed: the same ranges for the same weights */
    for (int i = 0; i < s; i++) {
        if (i < n && (ids[i] < 0 || ids[i] >= c->vocab)) {
            npu_err(DOM, "w8a8 calibration: token id %d is outside the vocabulary (0..%d)", ids[i],
                    c->vocab - 1);
            st = NPU_ERR_INVALID;
            goto out;
        }
        tok[i] = i < n ? ids[i] : (int64_t)(mix(&rng) % (uint64_t)c->vocab);
        pos[i] = i;
        for (int j = 0; j < hd / 2; j++) {
            double f = llm_rope_angle(c, i, j);
            cs[i * hd + j] = cs[i * hd + j + hd / 2] = (float)cos(f);
            sn[i * hd + j] = sn[i * hd + j + hd / 2] = (float)sin(f);
        }
    }
    for (int r = 0; r < G * s; r++)
        for (int t = 0; t < s; t++)
            mask[(size_t)r * s + t] = t <= r % s ? 0.0f : -10000.0f;
    /* A layer at a time: the fp32 graph of one layer (with the projections' inputs and results
     * as extra outputs) on the CPU executor, its hidden states the next stage's input; the
     * executor's copies of a layer (packed weights) freed before the next, and with quantise
     * the layer's fp32 projections too. The same operations on the same values as the whole
     * model's graph, so the same ranges (the ranges recorded in the same order). */
    struct llm_config c1 = *c;
    c1.n_layers = 1;
    for (int l = 0; l < c->n_layers; l++) {
        const bool first = l == 0, last = l == c->n_layers - 1;
        struct llm_weights w1 = *w;
        w1.layers = &w->layers[l];
        struct npu_tensor in[4];
        int k = 0;
        if (first) {
            in[k++] = (struct npu_tensor){
                .dtype = NPU_DTYPE_INT64, .ndim = 2, .dims = {1, s}, .data = tok};
            if (c->arch == LLM_ARCH_GPT2)
                in[k++] = (struct npu_tensor){
                    .dtype = NPU_DTYPE_INT64, .ndim = 2, .dims = {1, s}, .data = pos};
        } else {
            in[k++] = (struct npu_tensor){
                .dtype = NPU_DTYPE_FP32, .ndim = 3, .dims = {1, s, c->hidden}, .data = h};
        }
        if (c->arch != LLM_ARCH_GPT2) {
            in[k++] = (struct npu_tensor){
                .dtype = NPU_DTYPE_FP32, .ndim = 4, .dims = {1, 1, s, hd}, .data = cs};
            in[k++] = (struct npu_tensor){
                .dtype = NPU_DTYPE_FP32, .ndim = 4, .dims = {1, 1, s, hd}, .data = sn};
        }
        in[k++] = (struct npu_tensor){
            .dtype = NPU_DTYPE_FP32, .ndim = 4, .dims = {1, 1, G * s, s}, .data = mask};
        llm_quant_free(&sq);
        if ((st = run_stage(&c1, &w1, first, last, in, k, h, s, cpu_threads, &sq)))
            goto out;
        for (int i = 0; i < sq.n && !st; i++) {
            char key[sizeof(q->r->key)];
            if (relabel(key, sizeof(key), sq.r[i].key, l))
                st = NPU_ERR_INTERNAL;
            else if (!(st = record(q, "x", key, sq.r[i].x)))
                st = record(q, "y", key, sq.r[i].y);
        }
        if (!st && quantise && !(st = quantise_layer(&c1, &w1, &sq, l, q)))
            llm_weights_release_layer(c, w, l);
        if (st)
            goto out;
    }
    q->calib_tokens = s;
    if (!q->n) {
        npu_err(DOM, "w8a8 calibration: the graph has no projections to observe");
        st = NPU_ERR_INTERNAL;
    }
out:
    if (st)
        llm_quant_free(q);
    llm_quant_free(&sq);
    free(tok);
    free(pos);
    free(cs);
    free(sn);
    free(mask);
    free(h);
    return st;
}
