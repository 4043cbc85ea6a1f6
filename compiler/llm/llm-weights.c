// SPDX-License-Identifier: MIT
/*
 * llm-weights.c: from checkpoint tensor names to the weight set the graph
 * builder reads, as fp32 arrays laid out for x @ W ([in, out]):
 *
 *   GPT2LMHeadModel   [transformer.]wte, wpe, h.N.{ln_1, attn.c_attn, attn.c_proj, ln_2,
 *                     mlp.c_fc, mlp.c_proj}, ln_f; Conv1D weights are stored [in, out]
 *                     already; c_attn is split into q, k, v; the old checkpoints'
 *                     attn.bias / attn.masked_bias buffers (the causal mask) are accepted
 *                     and ignored; lm_head.weight, when present, must be the tied wte.
 *   Llama / Qwen2     model.embed_tokens, model.layers.N.{input_layernorm,
 *                     self_attn.{q,k,v,o}_proj, post_attention_layernorm,
 *                     mlp.{gate,up,down}_proj}, model.norm, lm_head (untied; a saved
 *                     lm_head of a tied model must be the embedding); nn.Linear
 *                     weights are [out, in] and are transposed here. Qwen2 has q/k/v biases.
 *
 * Every tensor's shape is checked against the config; a missing tensor and
 * every tensor nobody asked for (an unexpected one) are named.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "llm-priv.h"
#include "npu/npu-fp16.h"

#define DOM "llm"

struct wctx {
    struct llm_checkpoint *ck;
    const char *prefix; /* GPT-2: "" or "transformer." */
    bool check_only;    /* llm_weights_check: names and shapes only, nothing converted */
    bool failed;
    enum npu_status st;
};

static struct llm_st_tensor *
find(struct llm_checkpoint *ck, const char *name)
{
    return llm_checkpoint_find(ck, name);
}

static void
to_f32(const struct llm_st_tensor *t, float *dst, size_t n)
{
    const unsigned char *b = t->data;
    for (size_t i = 0; i < n; i++) {
        if (t->dt == LLM_ST_F32) {
            memcpy(&dst[i], b + 4 * i, 4);
        } else {
            uint16_t h;
            memcpy(&h, b + 2 * i, 2);
            if (t->dt == LLM_ST_F16) {
                dst[i] = npu_fp16_to_fp32(h);
            } else {
                uint32_t u = (uint32_t)h << 16;
                memcpy(&dst[i], &u, 4);
            }
        }
    }
}

/* The tensor's whole pages of the read-only file mapping leave the process once converted
 * (MADV_DONTNEED: they stay in the page cache, and a later read faults them in again from
 * the file): the mapping otherwise counts the checkpoint's bytes once more in the resident
 * set (TinyLlama: 2.2 GB) for the handle's life. */
static void
drop_pages(const struct llm_st_tensor *t)
{
    static size_t pg;
    if (!pg) {
        long p = sysconf(_SC_PAGESIZE);
        pg = p > 0 ? (size_t)p : 4096;
    }
    uintptr_t a = ((uintptr_t)t->data + pg - 1) / pg * pg,
              b = ((uintptr_t)t->data + t->nbytes) / pg * pg;
    if (b > a)
        (void)madvise((void *)a, b - a, MADV_DONTNEED);
}

/* Tensor name (printf-style) of shape {d0[, d1]}: fp32 copy, transposed when
 * transpose (a [d0, d1] tensor becomes [d1, d0]). NULL and ctx->failed on error. */
static float *get(struct wctx *x, bool transpose, int64_t d0, int64_t d1, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static float *
get(struct wctx *x, bool transpose, int64_t d0, int64_t d1, const char *fmt, ...)
{
    char name[256], full[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof(name), fmt, ap);
    va_end(ap);
    if (x->failed)
        return NULL;
    snprintf(full, sizeof(full), "%s%s", x->prefix, name);
    struct llm_st_tensor *t = find(x->ck, full);
    if (!t) {
        npu_err(DOM, "checkpoint: tensor '%s' is missing (%s)", full, x->ck->cfg.arch_name);
        x->failed = true;
        x->st = NPU_ERR_INVALID;
        return NULL;
    }
    int nd = d1 ? 2 : 1;
    if (t->ndim != nd || t->dims[0] != d0 || (d1 && t->dims[1] != d1)) {
        char got[128] = "";
        size_t o = 0;
        for (int i = 0; i < t->ndim && o < sizeof(got) - 24; i++)
            o += (size_t)snprintf(got + o, sizeof(got) - o, "%s%lld", i ? ", " : "",
                                  (long long)t->dims[i]);
        if (d1)
            npu_err(DOM, "checkpoint: tensor '%s' has shape [%s], the config says [%lld, %lld]",
                    full, got, (long long)d0, (long long)d1);
        else
            npu_err(DOM, "checkpoint: tensor '%s' has shape [%s], the config says [%lld]", full,
                    got, (long long)d0);
        x->failed = true;
        x->st = NPU_ERR_INVALID;
        return NULL;
    }
    if (t->dt == LLM_ST_OTHER) {
        npu_err(DOM, "checkpoint: tensor '%s' has dtype %s: not supported (F32, F16, BF16)", full,
                t->dtype);
        x->failed = true;
        x->st = NPU_ERR_UNSUPPORTED;
        return NULL;
    }
    t->used = true;
    if (x->check_only)
        return NULL;
    size_t n = (size_t)d0 * (size_t)(d1 ? d1 : 1);
    float *f = malloc(n * sizeof(float));
    if (!f) {
        x->failed = true;
        x->st = NPU_ERR_NOMEM;
        return NULL;
    }
    if (transpose && d1) {
        /* converted straight into the transposed place (no second full-size array: the LM
         * head's was 262 MB of TinyLlama's peak), a tile of TR source rows x TC columns at a
         * time, so that each destination row is written TR floats in a run (a source row at a
         * time wrote one float per cache line: every graph of an fp16 load converts again) */
        enum { TR = 32, TC = 256 };
        float tile[TR][TC];
        const size_t es = t->dt == LLM_ST_F32 ? 4 : 2;
        for (int64_t i0 = 0; i0 < d0; i0 += TR) {
            const int64_t ni = d0 - i0 < TR ? d0 - i0 : TR;
            for (int64_t j0 = 0; j0 < d1; j0 += TC) {
                const int64_t nj = d1 - j0 < TC ? d1 - j0 : TC;
                for (int64_t i = 0; i < ni; i++) {
                    struct llm_st_tensor part = *t;
                    part.data =
                        (const unsigned char *)t->data + ((size_t)((i0 + i) * d1 + j0)) * es;
                    to_f32(&part, tile[i], (size_t)nj);
                }
                for (int64_t j = 0; j < nj; j++) {
                    float *dst = f + (j0 + j) * d0 + i0;
                    for (int64_t i = 0; i < ni; i++)
                        dst[i] = tile[i][j];
                }
            }
        }
    } else {
        to_f32(t, f, n);
    }
    drop_pages(t);
    return f;
}

static float *
transpose_copy(const float *a, int64_t r, int64_t c)
{
    float *t = malloc((size_t)(r * c) * sizeof(float));
    if (t)
        for (int64_t i = 0; i < r; i++)
            for (int64_t j = 0; j < c; j++)
                t[j * r + i] = a[i * c + j];
    return t;
}

static bool
ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && !strcmp(s + n - k, suffix);
}

static bool
is_gpt2_buffer(const char *name)
{
    return ends_with(name, ".attn.bias") || ends_with(name, ".attn.masked_bias");
}

/* The head of a tied checkpoint: the embedding, transposed. A saved `lm_head.weight` (lh)
 * must be a copy of it: its shape checked, and its values when converting (not in
 * check_only, where nothing is converted). */
static void
tied_head(struct wctx *x, struct llm_weights *w, struct llm_st_tensor *lh, const char *embed)
{
    const struct llm_config *c = &x->ck->cfg;
    const int64_t D = c->hidden;
    x->prefix = "";
    if (lh) {
        float *h = get(x, false, c->vocab, D, "lm_head.weight");
        if (h && w->embed && memcmp(h, w->embed, (size_t)(c->vocab * D) * sizeof(float))) {
            npu_err(DOM,
                    "checkpoint: lm_head.weight differs from %s although the config ties them "
                    "(tie_word_embeddings)",
                    embed);
            x->failed = true;
            x->st = NPU_ERR_INVALID;
        }
        free(h);
    }
    if (!x->failed && !x->check_only && !(w->head = transpose_copy(w->embed, c->vocab, D))) {
        x->failed = true;
        x->st = NPU_ERR_NOMEM;
    }
}

static void
load_gpt2(struct wctx *x, struct llm_weights *w)
{
    const struct llm_config *c = &x->ck->cfg;
    const int64_t D = c->hidden, F = c->ffn;
    x->prefix = find(x->ck, "transformer.wte.weight") ? "transformer." : "";
    w->embed = get(x, false, c->vocab, D, "wte.weight");
    w->pos = get(x, false, c->max_pos, D, "wpe.weight");
    for (int l = 0; l < c->n_layers; l++) {
        struct llm_layer_w *L = &w->layers[l];
        L->ln1_w = get(x, false, D, 0, "h.%d.ln_1.weight", l);
        L->ln1_b = get(x, false, D, 0, "h.%d.ln_1.bias", l);
        float *ca = get(x, false, D, 3 * D, "h.%d.attn.c_attn.weight", l);
        float *cb = get(x, false, 3 * D, 0, "h.%d.attn.c_attn.bias", l);
        if (ca && cb) {
            float **ws[3] = {&L->wq, &L->wk, &L->wv}, **bs[3] = {&L->bq, &L->bk, &L->bv};
            for (int k = 0; k < 3; k++) {
                *ws[k] = malloc((size_t)(D * D) * sizeof(float));
                *bs[k] = malloc((size_t)D * sizeof(float));
                if (!*ws[k] || !*bs[k]) {
                    x->failed = true;
                    x->st = NPU_ERR_NOMEM;
                    break;
                }
                for (int64_t i = 0; i < D; i++)
                    memcpy(*ws[k] + i * D, ca + i * 3 * D + k * D, (size_t)D * sizeof(float));
                memcpy(*bs[k], cb + k * D, (size_t)D * sizeof(float));
            }
        }
        free(ca);
        free(cb);
        L->wo = get(x, false, D, D, "h.%d.attn.c_proj.weight", l);
        L->bo = get(x, false, D, 0, "h.%d.attn.c_proj.bias", l);
        L->ln2_w = get(x, false, D, 0, "h.%d.ln_2.weight", l);
        L->ln2_b = get(x, false, D, 0, "h.%d.ln_2.bias", l);
        L->w_up = get(x, false, D, F, "h.%d.mlp.c_fc.weight", l);
        L->b_up = get(x, false, F, 0, "h.%d.mlp.c_fc.bias", l);
        L->w_down = get(x, false, F, D, "h.%d.mlp.c_proj.weight", l);
        L->b_down = get(x, false, D, 0, "h.%d.mlp.c_proj.bias", l);
    }
    w->lnf_w = get(x, false, D, 0, "ln_f.weight");
    w->lnf_b = get(x, false, D, 0, "ln_f.bias");
    if (x->failed)
        return;
    /* the causal-mask buffers of old checkpoints: ours is built per step */
    for (int i = 0; i < x->ck->nt; i++)
        if (is_gpt2_buffer(x->ck->t[i].name))
            x->ck->t[i].used = true;
    struct llm_st_tensor *lh = find(x->ck, "lm_head.weight");
    if (lh && !c->tied) {
        x->prefix = "";
        float *h = get(x, true, c->vocab, D, "lm_head.weight");
        w->head = h;
        return;
    }
    tied_head(x, w, lh, "wte.weight");
}

static void
load_llama(struct wctx *x, struct llm_weights *w)
{
    const struct llm_config *c = &x->ck->cfg;
    const int64_t D = c->hidden, F = c->ffn, Q = (int64_t)c->n_heads * c->head_dim,
                  KV = (int64_t)c->n_kv_heads * c->head_dim;
    const bool qb = c->arch == LLM_ARCH_QWEN2;
    x->prefix = "model.";
    w->embed = get(x, false, c->vocab, D, "embed_tokens.weight");
    for (int l = 0; l < c->n_layers; l++) {
        struct llm_layer_w *L = &w->layers[l];
        L->ln1_w = get(x, false, D, 0, "layers.%d.input_layernorm.weight", l);
        L->wq = get(x, true, Q, D, "layers.%d.self_attn.q_proj.weight", l);
        L->wk = get(x, true, KV, D, "layers.%d.self_attn.k_proj.weight", l);
        L->wv = get(x, true, KV, D, "layers.%d.self_attn.v_proj.weight", l);
        if (qb) {
            L->bq = get(x, false, Q, 0, "layers.%d.self_attn.q_proj.bias", l);
            L->bk = get(x, false, KV, 0, "layers.%d.self_attn.k_proj.bias", l);
            L->bv = get(x, false, KV, 0, "layers.%d.self_attn.v_proj.bias", l);
        }
        L->wo = get(x, true, D, Q, "layers.%d.self_attn.o_proj.weight", l);
        L->ln2_w = get(x, false, D, 0, "layers.%d.post_attention_layernorm.weight", l);
        L->w_gate = get(x, true, F, D, "layers.%d.mlp.gate_proj.weight", l);
        L->w_up = get(x, true, F, D, "layers.%d.mlp.up_proj.weight", l);
        L->w_down = get(x, true, D, F, "layers.%d.mlp.down_proj.weight", l);
    }
    w->lnf_w = get(x, false, D, 0, "norm.weight");
    x->prefix = "";
    struct llm_st_tensor *lh = find(x->ck, "lm_head.weight");
    if (!c->tied) {
        w->head = get(x, true, c->vocab, D, "lm_head.weight");
    } else {
        tied_head(x, w, lh, "model.embed_tokens.weight");
    }
}

static enum npu_status load(struct llm_checkpoint *ck, struct llm_weights *w, bool check_only);

enum npu_status
llm_weights_load(struct llm_checkpoint *ck, struct llm_weights *w)
{
    return load(ck, w, false);
}

enum npu_status
llm_weights_check(struct llm_checkpoint *ck)
{
    struct llm_weights w;
    enum npu_status st = load(ck, &w, true);
    if (!st)
        llm_weights_free(&ck->cfg, &w);
    return st;
}

static enum npu_status
load(struct llm_checkpoint *ck, struct llm_weights *w, bool check_only)
{
    const struct llm_config *c = &ck->cfg;
    struct wctx x = {.ck = ck, .prefix = "", .check_only = check_only, .st = NPU_OK};
    memset(w, 0, sizeof(*w));
    if (!(w->layers = calloc((size_t)c->n_layers, sizeof(*w->layers))))
        return NPU_ERR_NOMEM;
    if (c->arch == LLM_ARCH_GPT2)
        load_gpt2(&x, w);
    else
        load_llama(&x, w);
    if (!x.failed) {
        int unexpected = 0;
        for (int i = 0; i < ck->nt; i++)
            if (!ck->t[i].used) {
                if (unexpected < 8)
                    npu_err(DOM, "checkpoint: unexpected tensor '%s' (not part of %s)",
                            ck->t[i].name, c->arch_name);
                unexpected++;
            }
        if (unexpected) {
            if (unexpected > 8)
                npu_err(DOM, "checkpoint: ... and %d more unexpected tensors", unexpected - 8);
            x.failed = true;
            x.st = NPU_ERR_INVALID;
        }
    }
    if (x.failed) {
        llm_weights_free(c, w);
        return x.st;
    }
    return NPU_OK;
}

/* fn on every array the weights own: the layers' and the top-level ones (NULL included) */
static void
each_array(const struct llm_config *c, struct llm_weights *w,
           void (*fn)(float *p, struct npu_graph *g), struct npu_graph *g)
{
    if (w->layers)
        for (int l = 0; l < c->n_layers; l++) {
            struct llm_layer_w *L = &w->layers[l];
            float *all[] = {L->ln1_w, L->ln1_b, L->ln2_w,  L->ln2_b,  L->wq,    L->wk,
                            L->wv,    L->wo,    L->bq,     L->bk,     L->bv,    L->bo,
                            L->w_up,  L->b_up,  L->w_gate, L->w_down, L->b_down};
            for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
                fn(all[i], g);
        }
    float *top[] = {w->embed, w->pos, w->lnf_w, w->lnf_b, w->head};
    for (size_t i = 0; i < sizeof(top) / sizeof(top[0]); i++)
        fn(top[i], g);
}

static void
drop_array(float *p, struct npu_graph *g)
{
    (void)g;
    free(p);
}

/* the graph takes the array (freed with it); freed here if it cannot */
static void
give_array(float *p, struct npu_graph *g)
{
    if (npu_graph_adopt_malloc(g, p))
        free(p);
}

void
llm_weights_free(const struct llm_config *c, struct llm_weights *w)
{
    each_array(c, w, drop_array, NULL);
    free(w->layers);
    memset(w, 0, sizeof(*w));
}

void
llm_weights_give(const struct llm_config *c, struct llm_weights *w, struct npu_graph *g)
{
    const struct llm_quant *q = w->quant;
    const int hs = w->head_split;
    each_array(c, w, give_array, g);
    free(w->layers);
    memset(w, 0, sizeof(*w));
    w->quant = q;
    w->head_split = hs;
}

uint64_t
llm_weights_release_layer(const struct llm_config *c, struct llm_weights *w, int l)
{
    if (c->arch == LLM_ARCH_GPT2 || !w->quant || !w->quant->cache || !w->layers || l < 0 ||
        l >= c->n_layers)
        return 0;
    const uint64_t D = (uint64_t)c->hidden, F = (uint64_t)c->ffn,
                   Q = (uint64_t)c->n_heads * (uint64_t)c->head_dim,
                   KV = (uint64_t)c->n_kv_heads * (uint64_t)c->head_dim;
    uint64_t freed = 0;
    struct llm_layer_w *L = &w->layers[l];
    float **all[] = {&L->wq, &L->wk, &L->wv, &L->wo, &L->w_gate, &L->w_up, &L->w_down};
    const uint64_t n[] = {D * Q, D * KV, D * KV, Q * D, D * F, D * F, F * D};
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
        if (*all[i]) {
            free(*all[i]);
            *all[i] = NULL;
            freed += n[i] * sizeof(float);
        }
    return freed;
}

uint64_t
llm_weights_release(const struct llm_config *c, struct llm_weights *w)
{
    if (c->arch == LLM_ARCH_GPT2 || !w->quant || !w->quant->cache || !w->layers)
        return 0;
    const uint64_t D = (uint64_t)c->hidden;
    uint64_t freed = 0;
    for (int l = 0; l < c->n_layers; l++)
        freed += llm_weights_release_layer(c, w, l);
    if (w->head) {
        free(w->head);
        w->head = NULL;
        freed += D * (uint64_t)c->vocab * sizeof(float);
    }
    return freed;
}
