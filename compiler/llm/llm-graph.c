// SPDX-License-Identifier: MIT
/*
 * llm-graph.c: the decoder as an IR graph, for s new tokens after `past`
 * cache slots. One builder makes both programs: the prefill (s = prompt
 * length, past = 0) and the decode step (s = 1, past = the maximum context,
 * of which a mask leaves only the valid length). Shapes are static; what
 * changes per step (token, position, RoPE angles, the mask, the cache)
 * comes in as inputs.
 *
 * Attention with grouped-query heads, without repeating K and V: the query
 * heads of one key/value head are consecutive (HF repeat_kv: head h reads kv
 * head h / g), so Q [1, H, s, hd] reshapes to [1, Hkv, g*s, hd] and meets
 * K [1, Hkv, past+s, hd] in one MatMul; the mask input is [1, 1, g*s, past+s]
 * (the host repeats the s rows g times). RoPE (rotate_half, as HF LLaMA):
 * x*cos + rotate_half(x)*sin, rotate_half as a MatMul with a constant
 * [hd, hd] signed permutation; cos and sin are inputs the host computes from
 * the positions and rope_theta. RMSNorm is x * 1/sqrt(mean(x^2) + eps) * w.
 * GPT-2 uses LayerNormalization and npu.GeluTanh (gelu_new). Logits are the
 * last token's only ([1, 1, vocab]).
 *
 * Weights are borrowed (npu_graph_add_const_owned with the caller's arrays):
 * the llm_weights outlive every graph and model made from them.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llm-priv.h"

#define DOM "llm"

struct gb {
    struct npu_graph *g;
    bool failed;
    int seq;
};

typedef struct npu_value V;

static V *
cst(struct gb *b, const char *name, const float *data, int ndim, const int64_t *dims)
{
    if (b->failed)
        return NULL;
    struct npu_tensor t = {.dtype = NPU_DTYPE_FP32, .ndim = ndim, .data = (void *)data};
    memcpy(t.dims, dims, (size_t)ndim * sizeof(int64_t));
    V *v = npu_graph_add_const_owned(b->g, name, &t);
    if (!v)
        b->failed = true;
    return v;
}

static V *
cst_copy(struct gb *b, const char *name, const float *data, int ndim, const int64_t *dims)
{
    if (b->failed)
        return NULL;
    struct npu_tensor t = {.dtype = NPU_DTYPE_FP32, .ndim = ndim, .data = (void *)data};
    memcpy(t.dims, dims, (size_t)ndim * sizeof(int64_t));
    V *v = npu_graph_add_const(b->g, name, &t);
    if (!v)
        b->failed = true;
    return v;
}

static V *
op(struct gb *b, enum npu_op o, V *x0, V *x1, V *x2)
{
    if (b->failed)
        return NULL;
    V *in[3] = {x0, x1, x2};
    int nin = x2 ? 3 : x1 ? 2 : 1;
    char name[48];
    snprintf(name, sizeof(name), "%s_%d", npu_op_name(o), b->seq++);
    struct npu_node *n = npu_node_new(b->g, o, name, in, nin, 1, NULL);
    if (!n) {
        b->failed = true;
        return NULL;
    }
    npu_graph_append(b->g, n);
    return n->out[0];
}

/* infers the last node (after its attributes were set) */
static V *
done(struct gb *b, V *v)
{
    if (b->failed || !v)
        return NULL;
    if (npu_infer_node(b->g, v->producer)) {
        b->failed = true;
        return NULL;
    }
    return v;
}

static V *
op2(struct gb *b, enum npu_op o, V *x0, V *x1)
{
    return done(b, op(b, o, x0, x1, NULL));
}

static V *
reshape(struct gb *b, V *x, int nd, const int64_t *dims)
{
    if (b->failed)
        return NULL;
    char name[32];
    snprintf(name, sizeof(name), "shape_%d", b->seq);
    V *s = npu_graph_const_i64(b->g, name, dims, nd, false);
    if (!s) {
        b->failed = true;
        return NULL;
    }
    return op2(b, NPU_OP_RESHAPE, x, s);
}

static V *
transpose(struct gb *b, V *x, int nd, const int64_t *perm)
{
    V *y = op(b, NPU_OP_TRANSPOSE, x, NULL, NULL);
    if (y && npu_node_set_ints(b->g, y->producer, "perm", perm, (size_t)nd))
        b->failed = true;
    return done(b, y);
}

static V *
linear(struct gb *b, V *x, const float *w, const float *bias, int64_t in, int64_t out,
       const char *name)
{
    char nm[96];
    snprintf(nm, sizeof(nm), "%s.weight", name);
    int64_t wd[2] = {in, out};
    V *y = op2(b, NPU_OP_MATMUL, x, cst(b, nm, w, 2, wd));
    if (bias) {
        snprintf(nm, sizeof(nm), "%s.bias", name);
        y = op2(b, NPU_OP_ADD, y, cst(b, nm, bias, 1, &out));
    }
    return y;
}

/* The LM head, [D, vocab], in slices of at most HEAD_CHUNK columns (an NPU
 * matmul's output view holds at most 8192 channels), joined by a Concat.
 * The slices are copies (the head is [D, vocab] row-major). */
#define HEAD_CHUNK 8192
static V *
lm_head(struct gb *b, V *x, const float *w, int64_t D, int64_t Vn)
{
    if (Vn <= HEAD_CHUNK)
        return linear(b, x, w, NULL, D, Vn, "lm_head");
    int nc = (int)((Vn + HEAD_CHUNK - 1) / HEAD_CHUNK);
    V **parts = calloc((size_t)nc, sizeof(V *));
    float *tmp = malloc((size_t)(D * HEAD_CHUNK) * sizeof(float));
    V *y = NULL;
    if (!parts || !tmp)
        b->failed = true;
    for (int c = 0; c < nc && !b->failed; c++) {
        int64_t c0 = (int64_t)c * HEAD_CHUNK, n = Vn - c0 < HEAD_CHUNK ? Vn - c0 : HEAD_CHUNK;
        for (int64_t i = 0; i < D; i++)
            memcpy(tmp + i * n, w + i * Vn + c0, (size_t)n * sizeof(float));
        char nm[48];
        snprintf(nm, sizeof(nm), "lm_head.%d.weight", c);
        int64_t wd[2] = {D, n};
        parts[c] = op2(b, NPU_OP_MATMUL, x, cst_copy(b, nm, tmp, 2, wd));
    }
    if (!b->failed) {
        struct npu_node *n = npu_node_new(b->g, NPU_OP_CONCAT, "lm_head", parts, nc, 1, NULL);
        if (!n || npu_node_set_int(b->g, n, "axis", -1)) {
            b->failed = true;
        } else {
            npu_graph_append(b->g, n);
            y = done(b, n->out[0]);
        }
    }
    free(parts);
    free(tmp);
    return y;
}

static V *
layernorm(struct gb *b, V *x, const float *w, const float *bias, int64_t d, float eps,
          const char *name)
{
    char nm[96];
    snprintf(nm, sizeof(nm), "%s.weight", name);
    V *wv = cst(b, nm, w, 1, &d);
    snprintf(nm, sizeof(nm), "%s.bias", name);
    V *bv = cst(b, nm, bias, 1, &d);
    V *y = op(b, NPU_OP_LAYER_NORMALIZATION, x, wv, bv);
    if (y && (npu_node_set_int(b->g, y->producer, "axis", -1) ||
              npu_node_set_float(b->g, y->producer, "epsilon", eps)))
        b->failed = true;
    return done(b, y);
}

static V *
rmsnorm(struct gb *b, V *x, const float *w, int64_t d, float eps, const char *name)
{
    char nm[96];
    V *sq = op2(b, NPU_OP_MUL, x, x);
    int64_t ax = -1;
    snprintf(nm, sizeof(nm), "%s.axes", name);
    V *axv = b->failed ? NULL : npu_graph_const_i64(b->g, nm, &ax, 1, false);
    if (!axv)
        b->failed = true;
    V *m = op(b, NPU_OP_REDUCE_MEAN, sq, axv, NULL);
    if (m && npu_node_set_int(b->g, m->producer, "keepdims", 1))
        b->failed = true;
    m = done(b, m);
    snprintf(nm, sizeof(nm), "%s.eps", name);
    V *e = b->failed ? NULL : npu_graph_const_f32(b->g, nm, &eps, 1, true);
    if (!e)
        b->failed = true;
    V *r = op2(b, NPU_OP_RECIPROCAL, op2(b, NPU_OP_SQRT, op2(b, NPU_OP_ADD, m, e), NULL), NULL);
    snprintf(nm, sizeof(nm), "%s.weight", name);
    return op2(b, NPU_OP_MUL, op2(b, NPU_OP_MUL, x, r), cst(b, nm, w, 1, &d));
}

static V *
input(struct gb *b, const char *name, enum npu_dtype dt, int nd, const int64_t *dims)
{
    if (b->failed)
        return NULL;
    V *v = npu_graph_add_input(b->g, name, dt, nd, dims);
    if (!v)
        b->failed = true;
    return v;
}

static void
output(struct gb *b, V *v, const char *name)
{
    if (b->failed || !v)
        return;
    /* the graph's outputs carry stable names (for messages and dumps) */
    V *o = npu_value_new_exact(b->g, name);
    struct npu_node *n = o ? npu_node_new_v(b->g, NPU_OP_IDENTITY, name, &v, 1, &o, 1) : NULL;
    if (!n) {
        b->failed = true;
        return;
    }
    npu_graph_append(b->g, n);
    if (!done(b, o) || npu_graph_add_output(b->g, o))
        b->failed = true;
}

enum npu_status
llm_build_graph(const struct llm_config *c, const struct llm_weights *w, int s, int past,
                struct npu_graph **out)
{
    const int64_t D = c->hidden, H = c->n_heads, KVH = c->n_kv_heads, hd = c->head_dim, G = H / KVH,
                  T = past + s, Vn = c->vocab;
    const bool gpt2 = c->arch == LLM_ARCH_GPT2;
    struct gb b = {.g = npu_graph_new(gpt2 ? "gpt2" : "llama")};
    float *rot = NULL;
    *out = NULL;
    if (!b.g)
        return NPU_ERR_NOMEM;
    b.g->opset = 18; /* ReduceMean's axes as an input */
    int64_t ids_d[2] = {1, s}, mask_d[4] = {1, 1, G * s, T}, cs_d[4] = {1, 1, s, hd};
    V *ids = input(&b, "ids", NPU_DTYPE_INT64, 2, ids_d);
    V *pos = gpt2 ? input(&b, "pos", NPU_DTYPE_INT64, 2, ids_d) : NULL;
    V *cosv = gpt2 ? NULL : input(&b, "cos", NPU_DTYPE_FP32, 4, cs_d);
    V *sinv = gpt2 ? NULL : input(&b, "sin", NPU_DTYPE_FP32, 4, cs_d);
    V *mask = input(&b, "mask", NPU_DTYPE_FP32, 4, mask_d);
    V **pk = calloc((size_t)c->n_layers * 2 + 1, sizeof(V *));
    if (!pk) {
        npu_graph_free(b.g);
        return NPU_ERR_NOMEM;
    }
    if (past > 0) {
        int64_t pd[4] = {1, KVH, past, hd};
        for (int l = 0; l < c->n_layers; l++) {
            char nm[32];
            snprintf(nm, sizeof(nm), "past_k.%d", l);
            pk[2 * l] = input(&b, nm, NPU_DTYPE_FP32, 4, pd);
            snprintf(nm, sizeof(nm), "past_v.%d", l);
            pk[2 * l + 1] = input(&b, nm, NPU_DTYPE_FP32, 4, pd);
        }
    }
    int64_t ed[2] = {Vn, D};
    V *x = op2(&b, NPU_OP_GATHER, cst(&b, "embed", w->embed, 2, ed), ids);
    if (gpt2) {
        int64_t pdm[2] = {c->max_pos, D};
        x = op2(&b, NPU_OP_ADD, x, op2(&b, NPU_OP_GATHER, cst(&b, "wpe", w->pos, 2, pdm), pos));
    }
    V *rotv = NULL;
    if (!gpt2) {
        /* rotate_half(x) = cat(-x2, x1) = x @ R */
        rot = calloc((size_t)(hd * hd), sizeof(float));
        if (!rot)
            b.failed = true;
        else
            for (int64_t j = 0; j < hd / 2; j++) {
                rot[(j + hd / 2) * hd + j] = -1.0f; /* out[j] = -x[j + hd/2] */
                rot[j * hd + j + hd / 2] = 1.0f;    /* out[j + hd/2] = x[j] */
            }
        int64_t rd[2] = {hd, hd};
        rotv = cst_copy(&b, "rotate_half", rot, 2, rd);
    }
    const float scale = 1.0f / sqrtf((float)hd);
    V *scv = b.failed ? NULL : npu_graph_const_f32(b.g, "attn_scale", &scale, 1, true);
    static const int64_t p0213[4] = {0, 2, 1, 3}, p0132[4] = {0, 1, 3, 2};
    for (int l = 0; l < c->n_layers && !b.failed; l++) {
        const struct llm_layer_w *L = &w->layers[l];
        char nm[64];
        snprintf(nm, sizeof(nm), "l%d.ln1", l);
        V *a = gpt2 ? layernorm(&b, x, L->ln1_w, L->ln1_b, D, c->eps, nm)
                    : rmsnorm(&b, x, L->ln1_w, D, c->eps, nm);
        snprintf(nm, sizeof(nm), "l%d.q", l);
        V *q = linear(&b, a, L->wq, L->bq, D, H * hd, nm);
        snprintf(nm, sizeof(nm), "l%d.k", l);
        V *k = linear(&b, a, L->wk, L->bk, D, KVH * hd, nm);
        snprintf(nm, sizeof(nm), "l%d.v", l);
        V *v = linear(&b, a, L->wv, L->bv, D, KVH * hd, nm);
        int64_t qd[4] = {1, s, H, hd}, kd[4] = {1, s, KVH, hd};
        /* [1, H, s, hd]; for one token the transpose is a reshape */
        int64_t q1[4] = {1, H, 1, hd}, k1[4] = {1, KVH, 1, hd};
        q = s == 1 ? reshape(&b, q, 4, q1) : transpose(&b, reshape(&b, q, 4, qd), 4, p0213);
        k = s == 1 ? reshape(&b, k, 4, k1) : transpose(&b, reshape(&b, k, 4, kd), 4, p0213);
        v = s == 1 ? reshape(&b, v, 4, k1) : transpose(&b, reshape(&b, v, 4, kd), 4, p0213);
        if (!gpt2) {
            q = op2(&b, NPU_OP_ADD, op2(&b, NPU_OP_MUL, q, cosv),
                    op2(&b, NPU_OP_MUL, op2(&b, NPU_OP_MATMUL, q, rotv), sinv));
            k = op2(&b, NPU_OP_ADD, op2(&b, NPU_OP_MUL, k, cosv),
                    op2(&b, NPU_OP_MUL, op2(&b, NPU_OP_MATMUL, k, rotv), sinv));
        }
        snprintf(nm, sizeof(nm), "k.%d", l);
        output(&b, k, nm);
        snprintf(nm, sizeof(nm), "v.%d", l);
        output(&b, v, nm);
        V *ka = k, *va = v;
        if (past > 0) {
            ka = op(&b, NPU_OP_CONCAT, pk[2 * l], k, NULL);
            if (ka && npu_node_set_int(b.g, ka->producer, "axis", 2))
                b.failed = true;
            ka = done(&b, ka);
            va = op(&b, NPU_OP_CONCAT, pk[2 * l + 1], v, NULL);
            if (va && npu_node_set_int(b.g, va->producer, "axis", 2))
                b.failed = true;
            va = done(&b, va);
        }
        int64_t gd[4] = {1, KVH, G * s, hd};
        V *qg = G > 1 ? reshape(&b, q, 4, gd) : q;
        V *sc = op2(&b, NPU_OP_MATMUL, qg, transpose(&b, ka, 4, p0132));
        sc = op2(&b, NPU_OP_ADD, op2(&b, NPU_OP_MUL, sc, scv), mask);
        V *p = op(&b, NPU_OP_SOFTMAX, sc, NULL, NULL);
        if (p && npu_node_set_int(b.g, p->producer, "axis", -1))
            b.failed = true;
        p = done(&b, p);
        V *y = op2(&b, NPU_OP_MATMUL, p, va); /* [1, KVH, G*s, hd] */
        int64_t hd4[4] = {1, H, s, hd}, flat[3] = {1, s, H * hd};
        if (s == 1) {
            y = reshape(&b, y, 3, flat);
        } else {
            if (G > 1)
                y = reshape(&b, y, 4, hd4);
            y = reshape(&b, transpose(&b, y, 4, p0213), 3, flat);
        }
        snprintf(nm, sizeof(nm), "l%d.o", l);
        x = op2(&b, NPU_OP_ADD, x, linear(&b, y, L->wo, L->bo, H * hd, D, nm));
        snprintf(nm, sizeof(nm), "l%d.ln2", l);
        a = gpt2 ? layernorm(&b, x, L->ln2_w, L->ln2_b, D, c->eps, nm)
                 : rmsnorm(&b, x, L->ln2_w, D, c->eps, nm);
        V *m;
        if (gpt2) {
            snprintf(nm, sizeof(nm), "l%d.fc", l);
            m = op2(&b, NPU_OP_FUSED_GELU_TANH, linear(&b, a, L->w_up, L->b_up, D, c->ffn, nm),
                    NULL);
        } else {
            snprintf(nm, sizeof(nm), "l%d.gate", l);
            V *gt = linear(&b, a, L->w_gate, NULL, D, c->ffn, nm);
            snprintf(nm, sizeof(nm), "l%d.up", l);
            V *up = linear(&b, a, L->w_up, NULL, D, c->ffn, nm);
            m = op2(&b, NPU_OP_MUL, op2(&b, NPU_OP_MUL, gt, op2(&b, NPU_OP_SIGMOID, gt, NULL)), up);
        }
        snprintf(nm, sizeof(nm), "l%d.down", l);
        x = op2(&b, NPU_OP_ADD, x, linear(&b, m, L->w_down, L->b_down, c->ffn, D, nm));
    }
    if (s > 1 && !b.failed) {
        /* the last token only */
        int64_t last = s - 1;
        V *ix = npu_graph_const_i64(b.g, "last", &last, 1, false);
        if (!ix)
            b.failed = true;
        x = op(&b, NPU_OP_GATHER, x, ix, NULL);
        if (x && npu_node_set_int(b.g, x->producer, "axis", 1))
            b.failed = true;
        x = done(&b, x);
    }
    x = gpt2 ? layernorm(&b, x, w->lnf_w, w->lnf_b, D, c->eps, "ln_f")
             : rmsnorm(&b, x, w->lnf_w, D, c->eps, "norm");
    V *logits = lm_head(&b, x, w->head, D, Vn);
    /* logits first, then k.L, v.L: the outputs were added in layer order, so
     * move logits to the front */
    output(&b, logits, "logits");
    free(pk);
    free(rot);
    if (b.failed) {
        npu_err(DOM, "cannot build the decoder graph (s=%d, past=%d)", s, past);
        npu_graph_free(b.g);
        return NPU_ERR_INTERNAL;
    }
    V *lo = b.g->outputs[b.g->noutputs - 1];
    memmove(b.g->outputs + 1, b.g->outputs, (size_t)(b.g->noutputs - 1) * sizeof(V *));
    b.g->outputs[0] = lo;
    *out = b.g;
    return NPU_OK;
}
