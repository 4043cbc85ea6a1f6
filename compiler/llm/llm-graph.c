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
 * One token with RoPE (the LLaMA / Qwen2 decode step): the heads are rows of 3-D
 * tensors, Q [H, 1, hd], K and V [KVH, 1, hd] (the projection's row reshaped: for one
 * token the same order as the head split's [1, H, 1, hd]), and the angles come per
 * head (cos, sin [H, 1, hd]; cos_k, sin_k [KVH, 1, hd]; mask [1, G, T]), so that no
 * elementwise op broadcasts an activation and the RoPE'd query is in the layout the NPU
 * attention reads, head dims as channels and the heads' rows one after another
 * (view hd x H x 1): Q reshapes to [KVH, G, hd] without moving data and the cache
 * [1, KVH, past, hd] to [KVH, past, hd]. The k.L, v.L outputs stay [1, KVH, 1, hd].
 * When q is cut into column blocks of whole heads (several cores), each block is RoPE'd
 * before q's join and cos / sin are one block's [hb, 1, hd] (llm_rope_block_heads).
 * GPT-2's decode step takes the same rows form (without RoPE; mask [1, 1, T]) and, like
 * LLaMA's, writes its new k / v rows into the [H, slots, hd] cache with npu.StateWrite and
 * attends over the whole cache (kv_inplace; with --host-kv-cache it appends by a Concat of
 * the [H, past, hd] inputs and the new row instead).
 *
 * Weights are borrowed (npu_graph_add_const_owned with the caller's arrays):
 * the llm_weights outlive every graph and model made from them.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llm-priv.h"
#include "npu/npu-build.h"
#include "npu/npu-timing.h"

#define DOM "llm"

struct gb {
    struct npu_graph *g;
    bool failed;
    int seq;
    const struct llm_quant *q; /* w8a8 (llm-quant.c) or NULL */
    bool cpu_joins;            /* the decode step's joins of column-block chains on the CPU */
    bool cpu_norms;            /* RMSNorm as one RMSNormalization node (a CPU step) */
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

/* The join of chains the layer split runs on different cores (q's RoPE'd blocks, the MLP's
 * partial products) placed on the CPU in the decode step under the cost partition. On the
 * NPU a join waits for every core's chain, so the runtime's split plan (plan_job) gives it
 * a submit of its own on one core: 25 us of submit overhead (timing model v2) plus its
 * copies or adds, for a few KiB of work. The partition prices a join as one more node of
 * the same NPU run (no submit), so by cost it kept both joins on the NPU: two one-core
 * submits a layer. On the CPU a join costs its inputs' conversions and an Add or a Concat
 * (RK3588 CPU model v1: a few us), and the values go to the host anyway (the attention and
 * the residual stream are CPU steps by cost). NPU_PARTITION=supported / cpu decide as they
 * say. */
static V *
cpu_join(struct gb *b, V *v)
{
    if (v && b->cpu_joins)
        v->producer->device = NPU_DEVICE_CPU;
    return v;
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

static V *concat_last(struct gb *b, V **parts, int n, const char *name);

/* x @ W [in, out] named wname; w8a8: int8 over the projection key's ranges (llm-quant.c) */
static V *
matmul(struct gb *b, V *x, const float *w, int64_t in, int64_t out, const char *wname,
       const char *key, bool copy)
{
    if (b->failed)
        return NULL;
    if (b->q && !b->q->observe) {
        V *y = llm_quant_matmul(b->g, x, w, in, out, wname, key, b->q);
        if (!y)
            b->failed = true;
        return y;
    }
    int64_t wd[2] = {in, out};
    V *y = op2(b, NPU_OP_MATMUL, x, copy ? cst_copy(b, wname, w, 2, wd) : cst(b, wname, w, 2, wd));
    if (y && b->q && llm_quant_observe(b->g, x, y, key))
        b->failed = true;
    return y;
}

/* x @ W (+ bias) */
static V *
linear(struct gb *b, V *x, const float *w, const float *bias, int64_t in, int64_t out,
       const char *name)
{
    char nm[96];
    snprintf(nm, sizeof(nm), "%s.weight", name);
    V *y = matmul(b, x, w, in, out, nm, name, false);
    if (bias) {
        snprintf(nm, sizeof(nm), "%s.bias", name);
        y = op2(b, NPU_OP_ADD, y, cst(b, nm, bias, 1, &out));
    }
    return y;
}

/* w + off, NULL for released weights (w8a8 takes their int8 copies by name) */
static const float *
wat(const float *w, int64_t off)
{
    return w ? w + off : NULL;
}

/* x @ W[:, block k] (+ bias[block k]) of llm_weights_split's column blocks sp, named
 * "<name>.<k>.weight" (its quantisation key is name) */
static V *
block_product(struct gb *b, V *x, const float *w, const float *bias, int64_t in,
              const struct llm_split *sp, int k, const char *name)
{
    int64_t c0 = 0;
    for (int i = 0; i < k; i++)
        c0 += sp->cols[i];
    char nm[96];
    snprintf(nm, sizeof(nm), "%s.%d.weight", name, k);
    V *y = matmul(b, x, wat(w, c0 * in), in, sp->cols[k], nm, name, false);
    if (bias) {
        snprintf(nm, sizeof(nm), "%s.%d.bias", name, k);
        y = op2(b, NPU_OP_ADD, y, cst(b, nm, bias + c0, 1, &sp->cols[k]));
    }
    return y;
}

/* x @ W (+ bias) as the column blocks of llm_weights_split, one MatMul per block into
 * parts; returns their number (1: W whole). */
static int
linear_blocks(struct gb *b, V *x, const float *w, const float *bias, int64_t in, int64_t out,
              const struct llm_split *sp, const char *name, V **parts)
{
    if (!sp || sp->n <= 1) {
        parts[0] = linear(b, x, w, bias, in, out, name);
        return 1;
    }
    for (int k = 0; k < sp->n; k++)
        parts[k] = block_product(b, x, w, bias, in, sp, k, name);
    return sp->n;
}

/* x @ W (+ bias); W split into column blocks (llm_weights_split): one MatMul per block,
 * joined by a Concat on the last axis. */
static V *
linear_split(struct gb *b, V *x, const float *w, const float *bias, int64_t in, int64_t out,
             const struct llm_split *sp, const char *name)
{
    V *parts[LLM_MAX_SPLIT];
    int n = linear_blocks(b, x, w, bias, in, out, sp, name, parts);
    return n == 1 ? parts[0] : concat_last(b, parts, n, name);
}

static V *
concat_axis(struct gb *b, V **parts, int n, const char *name, int64_t axis)
{
    if (b->failed)
        return NULL;
    char nm[96];
    snprintf(nm, sizeof(nm), "%s.concat", name);
    struct npu_node *c = npu_node_new(b->g, NPU_OP_CONCAT, nm, parts, n, 1, NULL);
    if (!c || npu_node_set_int(b->g, c, "axis", axis)) {
        b->failed = true;
        return NULL;
    }
    npu_graph_append(b->g, c);
    return done(b, c->out[0]);
}

static V *
concat_last(struct gb *b, V **parts, int n, const char *name)
{
    return concat_axis(b, parts, n, name, -1);
}

/* The LM head, [D, vocab], in slices of at most HEAD_CHUNK columns (an NPU
 * matmul's output view holds at most 8192 channels): the slices' products are the graph's
 * outputs logits.0 .. logits.N-1 in vocabulary order (*parts, *np = N; npu-llm.c puts them
 * side by side in its logits row as it copies them out), one output "logits" when the head is
 * one product. No join: a Concat of the slices was a CPU copy of the whole row behind their
 * conversions (34.5 us a token for GPT-2 small's 50,257 logits, RK3588 CPU model v1), and the
 * host copies the row out of the session anyway. The slices are copies (the head is
 * [D, vocab] row-major). */
#define HEAD_CHUNK 8192
static void
lm_head(struct gb *b, V *x, const float *w, int64_t D, int64_t Vn, int split, V ***parts_out,
        int *np)
{
    *parts_out = NULL;
    *np = 0;
    int nc = (int)((Vn + HEAD_CHUNK - 1) / HEAD_CHUNK);
    if (split > 1) /* a multiple of the cores, slices of 32 columns */
        nc = (nc + split - 1) / split * split;
    if (nc <= 1) {
        V *y = linear(b, x, w, NULL, D, Vn, "lm_head");
        if ((*parts_out = calloc(1, sizeof(V *))))
            (*parts_out)[(*np)++] = y;
        else
            b->failed = true;
        return;
    }
    int64_t width = ((Vn + nc - 1) / nc + 31) / 32 * 32;
    if (width > HEAD_CHUNK)
        width = HEAD_CHUNK;
    V **parts = calloc((size_t)nc, sizeof(V *));
    float *tmp = malloc((size_t)(D * width) * sizeof(float));
    if (!parts || !tmp)
        b->failed = true;
    for (int c = 0; c < nc && !b->failed; c++) {
        int64_t c0 = (int64_t)c * width, n = Vn - c0 < width ? Vn - c0 : width;
        if (n <= 0) {
            nc = c;
            break;
        }
        for (int64_t i = 0; w && i < D; i++) /* w NULL: released, w8a8 has int8 copies */
            memcpy(tmp + i * n, w + i * Vn + c0, (size_t)n * sizeof(float));
        char nm[48];
        snprintf(nm, sizeof(nm), "lm_head.%d.weight", c);
        parts[c] = matmul(b, x, w ? tmp : NULL, D, n, nm, "lm_head", true);
    }
    free(tmp);
    *parts_out = parts;
    *np = parts ? nc : 0;
}

/* The head split of a projection's output x [1, s, heads * hd]: [1, heads, s, hd] as a
 * Transpose also for one token (where it moves no data), the form the NPU's attention reads
 * in place (a heads view); rows (one token): [heads, 1, hd] (see the top), through
 * the Transpose the NPU lowers as a head split (one strided copy). */
static V *
heads(struct gb *b, V *x, bool rows, const int64_t *d4, const int64_t *d3)
{
    static const int64_t p0213[4] = {0, 2, 1, 3};
    V *y = transpose(b, reshape(b, x, 4, d4), 4, p0213);
    return rows ? reshape(b, y, 3, d3) : y;
}

/* S' = npu.StateWrite(S, ROW, POS){axis} */
static V *
state_write(struct gb *b, V *st, V *row, V *pos, int64_t axis)
{
    V *y = op(b, NPU_OP_STATE_WRITE, st, row, pos);
    if (y && npu_node_set_int(b->g, y->producer, "axis", axis))
        b->failed = true;
    return done(b, y);
}

/* RoPE (rotate_half, as HF LLaMA): x * cos + (x @ R) * sin, computed as
 * x * cos + (x * sin) @ R. The two are equal because R only moves each element to the other
 * half (out[j] = -x[j + hd/2], out[j + hd/2] = x[j]) and the angles repeat over the halves
 * (HF's cat(freqs, freqs); the host and the calibration fill cos and sin so). In this order
 * the product's result goes to an Add whose other operand was made before it, which the
 * NPU lowering runs in the product's own DPU pass (conv_residual_add): three tasks, not
 * four. */
static V *
rope(struct gb *b, V *x, V *cosv, V *sinv, V *rotv)
{
    V *xc = op2(b, NPU_OP_MUL, x, cosv);
    return op2(b, NPU_OP_ADD, xc, op2(b, NPU_OP_MATMUL, op2(b, NPU_OP_MUL, x, sinv), rotv));
}

/* The decode step's q blocks RoPE'd each on its own: when q is cut into column blocks
 * (llm_weights_split) of whole heads in every layer, all of one size or (q balanced against
 * k and v, q_balanced_heads) all of one size but the last, which has as many heads as k and
 * v, each block is projected, split into heads and RoPE'd as one chain (a core of its own
 * under the layer split, beside k's and v's chains) and the blocks' heads are joined after
 * that. The rows-form angle inputs `cos` / `sin` are then one block's [hb, 1, hd] (one
 * token's angles are the same for every head, so one block's rows serve every block of hb
 * heads; a last block of KVH heads reads k's `cos_k` / `sin_k`). Returns hb, or 0 (q whole,
 * or blocks of another form: the angles are [H, 1, hd] and q is RoPE'd after the join). */
int
llm_rope_block_heads(const struct llm_config *c, const struct llm_weights *w)
{
    if (c->arch == LLM_ARCH_GPT2 || !w->layers || c->n_layers < 1 || c->head_dim < 1)
        return 0;
    const struct llm_split *s0 = &w->layers[0].sq;
    if (s0->n <= 1 || s0->cols[0] % c->head_dim)
        return 0;
    const int64_t kvw = (int64_t)c->n_kv_heads * c->head_dim;
    for (int l = 0; l < c->n_layers; l++) {
        const struct llm_split *sp = &w->layers[l].sq;
        if (sp->n != s0->n)
            return 0;
        for (int k = 0; k < sp->n; k++)
            if (sp->cols[k] != s0->cols[0] && (k + 1 < sp->n || sp->cols[k] != kvw))
                return 0;
    }
    return (int)(s0->cols[0] / c->head_dim);
}

/* The heads of q's block k (llm_rope_block_heads' forms) */
static int64_t
q_block_heads(const struct llm_split *sq, int k, int64_t hd)
{
    return sq->cols[k] / hd;
}

/* x + (parts[0] + ... + parts[n-1]): the residual stream plus a projection's partial
 * products (the chains of one row-split product). In the decode step under the cost
 * partition one n-ary Sum on the CPU (cpu_joins): one kernel dispatch and one pass that
 * reads every operand once, where the Add chain was n CPU steps (GPT-2 small: three Adds of
 * 768 floats a layer, 5.3 us, against 2.3 us for the Sum; RK3588 CPU model v1), each with its
 * own array. The operands are in the chain's order, the residual last, so the sums round as
 * the chain's did: ((p0 + p1) + p2) + x. Elsewhere (prefill, NPU_PARTITION=supported) the
 * Adds, which the NPU takes. */
static V *
residual_sum(struct gb *b, V *x, V **parts, int n)
{
    if (b->failed)
        return NULL;
    if (b->cpu_joins && n > 1 && n < LLM_MAX_SPLIT + 1) {
        V *in[LLM_MAX_SPLIT + 1];
        memcpy(in, parts, (size_t)n * sizeof(V *));
        in[n] = x;
        char name[48];
        snprintf(name, sizeof(name), "Sum_%d", b->seq++);
        struct npu_node *nd = npu_node_new(b->g, NPU_OP_SUM, name, in, n + 1, 1, NULL);
        if (!nd) {
            b->failed = true;
            return NULL;
        }
        npu_graph_append(b->g, nd);
        return cpu_join(b, done(b, nd->out[0]));
    }
    V *sum = parts[0];
    for (int k = 1; k < n; k++)
        sum = cpu_join(b, op2(b, NPU_OP_ADD, sum, parts[k]));
    return op2(b, NPU_OP_ADD, x, sum);
}

/* GPT-2's MLP with c_fc cut into column blocks (llm_weights_split) and c_proj whole: per
 * block k, gelu(a @ W_fc[:, block k] + b_fc[block k]) @ W_proj[rows of block k], the
 * partial products summed after all blocks (in the decode step on the CPU, cpu_join: on the
 * NPU the sum waited for every core's chain, a one-core submit of 33 us a layer, GPT-2
 * small, timing model v2), b_proj added to the last one's product (a
 * bias of that product on the NPU; added to the sum it was a CPU Add of its own per layer
 * in the decode step, behind the sum's conversion). Each block is a chain of its own
 * (product, GELU with its LUT, product) that the layer split runs on one core beside the
 * others: no Concat, and the GELU stays next to its product. */
static V *
mlp_blocks(struct gb *b, V *x, V *a, const struct llm_layer_w *L, int64_t D, const char *name)
{
    V *part[LLM_MAX_SPLIT] = {NULL};
    int64_t c0 = 0;
    for (int k = 0; k < L->sup.n; k++) {
        const int64_t n = L->sup.cols[k];
        char nm[96];
        snprintf(nm, sizeof(nm), "%s.fc.%d.weight", name, k);
        int64_t wd[2] = {D, n}, pd[2] = {n, D};
        V *y = op2(b, NPU_OP_MATMUL, a, cst(b, nm, L->w_up + c0 * D, 2, wd));
        snprintf(nm, sizeof(nm), "%s.fc.%d.bias", name, k);
        y = op2(b, NPU_OP_ADD, y, cst(b, nm, L->b_up + c0, 1, &n));
        y = op2(b, NPU_OP_FUSED_GELU_TANH, y, NULL);
        snprintf(nm, sizeof(nm), "%s.down.%d.weight", name, k);
        part[k] = op2(b, NPU_OP_MATMUL, y, cst(b, nm, L->w_down + c0 * D, 2, pd));
        if (k + 1 == L->sup.n) { /* b_proj with the last block's product (its bias there) */
            snprintf(nm, sizeof(nm), "%s.down.bias", name);
            part[k] = op2(b, NPU_OP_ADD, part[k], cst(b, nm, L->b_down, 1, &D));
        }
        c0 += n;
    }
    return residual_sum(b, x, part, L->sup.n);
}

/* LLaMA's SwiGLU with gate and up cut into the same column blocks (llm_weights_split): per
 * block k, m_k = silu(a @ W_gate[:, k]) * (a @ W_up[:, k]); with down whole (w8a8 on several
 * cores) m_k @ W_down[rows of block k], the partial products summed (as GPT-2's mlp_blocks),
 * else the m_k joined by one Concat (the same values as joining gate and up first). Each
 * block is a chain of its own (gate product with its SiLU, up product, their Mul, the
 * down product) that the layer split runs on one core beside the others (plan_job merges the
 * two products' groups at the Mul): no SiLU on one core after gate's join, no joins.
 * w8a8: each block's down product has its own calibrated ranges (key l<i>.down.<k>: the
 * calibration graph is built split too), so its int8 result's steps fit the partial sum. */
static V *
swiglu_blocks(struct gb *b, V *x, V *a, const struct llm_layer_w *L, int64_t D, int l)
{
    V *parts[LLM_MAX_SPLIT];
    int64_t c0 = 0;
    const bool rows = L->sdown.n <= 1;
    for (int k = 0; k < L->sgate.n; k++) {
        const int64_t n = L->sgate.cols[k];
        char nm[96], key[48];
        snprintf(key, sizeof(key), "l%d.gate", l);
        snprintf(nm, sizeof(nm), "%s.%d.weight", key, k);
        V *gt = matmul(b, a, wat(L->w_gate, c0 * D), D, n, nm, key, false);
        snprintf(key, sizeof(key), "l%d.up", l);
        snprintf(nm, sizeof(nm), "%s.%d.weight", key, k);
        V *up = matmul(b, a, wat(L->w_up, c0 * D), D, n, nm, key, false);
        parts[k] = op2(b, NPU_OP_MUL, op2(b, NPU_OP_MUL, gt, op2(b, NPU_OP_SIGMOID, gt, NULL)), up);
        if (rows) {
            snprintf(key, sizeof(key), "l%d.down.%d", l, k);
            snprintf(nm, sizeof(nm), "%s.weight", key);
            parts[k] = matmul(b, parts[k], wat(L->w_down, c0 * D), n, D, nm, key, false);
        }
        c0 += n;
    }
    if (rows) /* x + the partial products */
        return residual_sum(b, x, parts, L->sgate.n);
    char nm[48];
    snprintf(nm, sizeof(nm), "l%d.mlp", l);
    return concat_last(b, parts, L->sgate.n, nm);
}

static bool
same_split(const struct llm_split *a, const struct llm_split *b)
{
    if (a->n != b->n)
        return false;
    for (int k = 0; k < a->n; k++)
        if (a->cols[k] != b->cols[k])
            return false;
    return true;
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
    if (b->cpu_norms) {
        /* the decode step's norms of one row are CPU steps by cost (the NPU has no one-row
         * reduction that pays): one RMSNormalization kernel pass (npu-cpu-opset18.c, sums in
         * double) instead of seven CPU ops, each with its dispatch and its own array. The
         * prefill's too: one node the cost partition places (dpu-norm.c lowers it to the NPU,
         * safe over fp16's range; the seven ops over [s, hidden] would be CPU steps, about
         * 530 us against the one pass's 176 at TinyLlama's [128, 2048], RK3588 CPU model v1) */
        snprintf(nm, sizeof(nm), "%s.weight", name);
        V *y = op(b, NPU_OP_RMS_NORMALIZATION, x, cst(b, nm, w, 1, &d), NULL);
        if (y && (npu_node_set_int(b->g, y->producer, "axis", -1) ||
                  npu_node_set_float(b->g, y->producer, "epsilon", eps)))
            b->failed = true;
        return done(b, y);
    }
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
    if (v->producer && !strcmp(v->name, name)) { /* named so by its producer */
        if (npu_graph_add_output(b->g, v))
            b->failed = true;
        return;
    }
    /* the graph's outputs carry stable names (for messages and dumps): the value itself
     * renamed where it is a node's result (no copy: an Identity was a CPU step of its own,
     * 34.5 us for GPT-2 small's logits and 1.5 us for each new k / v row on the board
     * model), else an Identity */
    if (v->kind == NPU_VALUE_NODE && v->producer && !v->is_output &&
        !npu_graph_find_value(b->g, name)) {
        if (npu_value_rename(b->g, v, name) || npu_graph_add_output(b->g, v))
            b->failed = true;
        return;
    }
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
    return llm_build_graph_ex(c, w, s, past, false, false, false, out);
}

enum npu_status
llm_build_graph_ex(const struct llm_config *c, const struct llm_weights *w, int s, int past,
                   bool kv_inplace, bool v_slots, bool no_kv_out, struct npu_graph **out)
{
    const bool gpt2 = c->arch == LLM_ARCH_GPT2;
    /* the cache updated in place (the decode step of LLaMA / Qwen2 and GPT-2): keys = the
     * cache's slots */
    const bool inplace = kv_inplace && s == 1 && past > 0;
    /* the k.L, v.L outputs (the host's copy of the cache): left out on request where the
     * step writes the cache itself */
    const bool kv_out = !(inplace && no_kv_out);
    const int64_t D = c->hidden, H = c->n_heads, KVH = c->n_kv_heads, hd = c->head_dim, G = H / KVH,
                  T = inplace ? past : past + s, Vn = c->vocab;
    struct gb b = {.g = npu_graph_new(gpt2 ? "gpt2" : "llama"),
                   .q = w->quant,
                   .cpu_joins = s == 1 && npu_build_partition_mode(NULL) == NPU_PARTITION_COST};
    /* (w8a8's graphs too since branch prefnorm, the norm on the NPU: tinyllama-2l's 4th w8a8
     * id changed, a tie there (top-1 margin 0.000), its logits as close to the CPU backend's
     * as before, docs/llm.md) */
    b.cpu_norms = b.cpu_joins || npu_build_partition_mode(NULL) == NPU_PARTITION_COST;
    float *rot = NULL;
    *out = NULL;
    if (!b.g)
        return NPU_ERR_NOMEM;
    b.g->opset = 18; /* ReduceMean's axes as an input */
    /* rows: one token, heads as the rows of 3-D tensors (see the top; GPT-2's decode step
     * too, without RoPE: its cache inputs then reach the attention as LLaMA's do) */
    const bool rows = s == 1;
    const bool rope_rows = rows && !gpt2;
    int64_t ids_d[2] = {1, s}, mask_d[4] = {1, 1, G * s, T}, cs_d[4] = {1, 1, s, hd};
    /* q's blocks RoPE'd each on its own (decode step): the angles are one block's rows */
    const int64_t qbh = rope_rows ? llm_rope_block_heads(c, w) : 0;
    int64_t mask3[3] = {1, G, T}, csq[3] = {H, 1, hd}, csk[3] = {KVH, 1, hd}, csb[3] = {qbh, 1, hd};
    /* a stage of the w8a8 calibration a layer at a time (llm-quant.c): the hidden states in
     * place of the ids (and positions), and / or out in place of the logits */
    const bool hin = b.q && b.q->hidden_in, hout = b.q && b.q->hidden_out;
    const int64_t hid_d[3] = {1, s, D};
    V *ids = hin ? input(&b, "hidden", NPU_DTYPE_FP32, 3, hid_d)
                 : input(&b, "ids", NPU_DTYPE_INT64, 2, ids_d);
    V *pos = gpt2 && !hin ? input(&b, "pos", NPU_DTYPE_INT64, 2, ids_d) : NULL;
    /* the prefill (positions 0 .. s - 1, an empty context): the angles are constants of the
     * program (the host's values: llm_rope_tables), which the NPU multiplies by (a constant
     * broadcast over the heads); as inputs they were activations the DPU does not broadcast,
     * which left RoPE, and the attention behind it, on the CPU. The w8a8 calibration's
     * graphs keep them as inputs (llm-quant.c feeds them). */
    const bool ang_const = !gpt2 && !rows && past == 0 && !(b.q && b.q->observe);
    V *cosv = NULL, *sinv = NULL;
    if (ang_const) {
        float *ct = malloc((size_t)(2 * s * hd) * sizeof(float));
        if (!ct)
            b.failed = true;
        else
            llm_rope_tables(c, 0, s, ct, ct + (size_t)s * hd);
        cosv = ct ? cst_copy(&b, "rope_cos", ct, 4, cs_d) : NULL;
        sinv = ct ? cst_copy(&b, "rope_sin", ct + (size_t)s * hd, 4, cs_d) : NULL;
        free(ct);
    } else if (!gpt2) {
        cosv = rows ? input(&b, "cos", NPU_DTYPE_FP32, 3, qbh ? csb : csq)
                    : input(&b, "cos", NPU_DTYPE_FP32, 4, cs_d);
        sinv = rows ? input(&b, "sin", NPU_DTYPE_FP32, 3, qbh ? csb : csq)
                    : input(&b, "sin", NPU_DTYPE_FP32, 4, cs_d);
    }
    V *coskv = rope_rows ? input(&b, "cos_k", NPU_DTYPE_FP32, 3, csk) : cosv;
    V *sinkv = rope_rows ? input(&b, "sin_k", NPU_DTYPE_FP32, 3, csk) : sinv;
    V *mask = rows ? input(&b, "mask", NPU_DTYPE_FP32, 3, mask3)
                   : input(&b, "mask", NPU_DTYPE_FP32, 4, mask_d);
    const int64_t one = 1;
    V *kvpos = inplace ? input(&b, "kv_pos", NPU_DTYPE_INT64, 1, &one) : NULL;
    V **pk = calloc((size_t)c->n_layers * 2 + 1, sizeof(V *));
    if (!pk) {
        npu_graph_free(b.g);
        return NPU_ERR_NOMEM;
    }
    /* GPT-2's decode step takes its cache as [H, past, hd]: the rows its
     * attention reads, (hd, H x past, 1) under the canonical view, so the state input is
     * held in that layout (no padding of the heads to a channel atom) and the Concat with
     * the new row is one strided DPU copy per input (dpu-move.c) */
    const bool cache3 = gpt2 && rows;
    /* v_slots (in place): V's cache is [slots, KVH x hd]: the new row is the v projection's
     * row as it is, and the attention reads the cache as a head split of it (Reshape +
     * Transpose (1, 0, 2), which the NPU takes as a view), the layout its weight-layout
     * transpose reads where it is (dpu-attn.c): no copy of V per step. K stays [KVH, slots,
     * hd]. (An attention on the CPU would transpose the whole V each step: npu-llm.c then
     * builds the step without it.) */
    const bool vslots = inplace && v_slots;
    if (past > 0) {
        int64_t pd[4] = {1, KVH, past, hd};
        for (int l = 0; l < c->n_layers; l++) {
            char nm[32];
            snprintf(nm, sizeof(nm), "past_k.%d", l);
            pk[2 * l] = input(&b, nm, NPU_DTYPE_FP32, inplace || cache3 ? 3 : 4,
                              inplace || cache3 ? pd + 1 : pd);
            snprintf(nm, sizeof(nm), "past_v.%d", l);
            const int64_t vsd[2] = {past, KVH * hd};
            pk[2 * l + 1] = vslots ? input(&b, nm, NPU_DTYPE_FP32, 2, vsd)
                                   : input(&b, nm, NPU_DTYPE_FP32, inplace || cache3 ? 3 : 4,
                                           inplace || cache3 ? pd + 1 : pd);
        }
    }
    int64_t ed[2] = {Vn, D};
    V *x = hin ? ids : op2(&b, NPU_OP_GATHER, cst(&b, "embed", w->embed, 2, ed), ids);
    if (gpt2 && !hin) {
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
    static const int64_t p0213[4] = {0, 2, 1, 3}, p0132[4] = {0, 1, 3, 2}, p021[3] = {0, 2, 1},
                         p102[3] = {1, 0, 2};
    for (int l = 0; l < c->n_layers && !b.failed; l++) {
        const struct llm_layer_w *L = &w->layers[l];
        char nm[64];
        snprintf(nm, sizeof(nm), "l%d.ln1", l);
        V *a = gpt2 ? layernorm(&b, x, L->ln1_w, L->ln1_b, D, c->eps, nm)
                    : rmsnorm(&b, x, L->ln1_w, D, c->eps, nm);
        int64_t qd[4] = {1, s, H, hd}, kd[4] = {1, s, KVH, hd};
        /* each projection right before its head split and its RoPE (k: and its cache
         * write), so that on the NPU a projection and what follows it are a chain the layer
         * split runs on one core, beside the others' */
        /* q cut into column blocks (w8a8): its join after k and v, so that q's blocks and the
         * k and v chains run side by side; in the decode step, blocks of whole heads are
         * RoPE'd each on its own before the join (llm_rope_block_heads) */
        V *qp[LLM_MAX_SPLIT], *q = NULL;
        snprintf(nm, sizeof(nm), "l%d.q", l);
        int nq;
        if (qbh) {
            int64_t bd[4] = {1, 1, qbh, hd}, bd3[3] = {qbh, 1, hd};
            nq = L->sq.n;
            for (int k = 0; k < nq && !b.failed; k++) {
                /* a last block of KVH heads (q_balanced_heads) takes k's angles */
                const int64_t hk = q_block_heads(&L->sq, k, hd);
                bd[2] = bd3[0] = hk;
                qp[k] = rope(
                    &b,
                    heads(&b, block_product(&b, a, L->wq, L->bq, D, &L->sq, k, nm), rows, bd, bd3),
                    hk == qbh ? cosv : coskv, hk == qbh ? sinv : sinkv, rotv);
            }
        } else {
            nq = linear_blocks(&b, a, L->wq, L->bq, D, H * hd, &L->sq, nm, qp);
            if (nq == 1) {
                q = heads(&b, qp[0], rows, qd, csq);
                if (!gpt2)
                    q = rope(&b, q, cosv, sinv, rotv);
            }
        }
        snprintf(nm, sizeof(nm), "l%d.k", l);
        V *k = heads(&b, linear_split(&b, a, L->wk, L->bk, D, KVH * hd, &L->sk, nm), rows, kd, csk);
        if (!gpt2)
            k = rope(&b, k, coskv, sinkv, rotv);
        int64_t kv4[4] = {1, KVH, s, hd}, vr2[2] = {1, KVH * hd}, vs3[3] = {past, KVH, hd};
        /* LLaMA / Qwen2: k's output copy and cache write right after its RoPE, v's after its
         * product (chains of their own); GPT-2 keeps its order, all after q's join (there the
         * early form cost a job a layer: 12.65 against 11.33 ms/token modeled, GPT-2 small,
         * 3 cores, its attention on the CPU by cost) */
        const bool early = !gpt2;
        char kn[32], vn[32];
        snprintf(kn, sizeof(kn), "k.%d", l);
        snprintf(vn, sizeof(vn), "v.%d", l);
        V *ka = k, *va = NULL;
        /* GPT-2's in-place writes right after their row's product too (each write in its
         * projection's chain, so that the layer split runs q, k + write and v + write as
         * three chains of one submit), its output copies still after q's join (a CPU copy
         * between the chains would cut the job) */
        const bool early_write = early || (gpt2 && inplace);
        /* one token: the RoPE'd rows [KVH, 1, hd] are the output as they are (the host reads
         * KVH x hd floats; a Reshape to [1, KVH, 1, hd] was a DPU copy of its own on the core
         * that runs k's and v's chains, the q / k / v submit's longest) */
        if (early && kv_out)
            output(&b, k, kn);
        if (early_write && inplace) /* the new rows written into the cache at kv_pos */
            ka = state_write(&b, pk[2 * l], k, kvpos, 1);
        snprintf(nm, sizeof(nm), "l%d.v", l);
        V *vrow = linear_split(&b, a, L->wv, L->bv, D, KVH * hd, &L->sv, nm);
        /* LLaMA / Qwen2, one token: v's rows [KVH, 1, hd] are a Reshape of its projection's
         * row (the same order; one DPU copy, the head split) and both the output and the cache
         * write's row. Through heads() and a Reshape to [1, KVH, 1, hd] for the output they
         * were two copies on the core of k's and v's chains, the q / k / v submit's longest.
         * GPT-2 keeps its head split. */
        V *v = vslots          ? NULL
               : rows && early ? reshape(&b, vrow, 3, csk)
                               : heads(&b, vrow, rows, kd, csk);
        va = v;
        if (early && kv_out)
            output(&b, vslots ? reshape(&b, vrow, 4, kv4) : v, vn);
        if (early_write && inplace) {
            va = state_write(&b, pk[2 * l + 1], vslots ? reshape(&b, vrow, 2, vr2) : v, kvpos,
                             vslots ? 0 : 1);
            if (vslots) /* the attention reads the cache as its head split */
                va = transpose(&b, reshape(&b, va, 3, vs3), 3, p102);
        }
        if (qbh) {
            /* the RoPE'd blocks' heads, rows one after another */
            snprintf(nm, sizeof(nm), "l%d.q", l);
            q = cpu_join(&b, concat_axis(&b, qp, nq, nm, 0));
        } else if (nq > 1) {
            snprintf(nm, sizeof(nm), "l%d.q", l);
            /* GPT-2: its attention is a CPU step by cost, so q's join is one too (on the
             * NPU it waited for every core's block: a one-core submit a layer) */
            V *qj = concat_last(&b, qp, nq, nm);
            q = heads(&b, gpt2 ? cpu_join(&b, qj) : qj, rows, qd, csq);
            if (!gpt2)
                q = rope(&b, q, cosv, sinv, rotv);
        }
        if (!early) {
            /* GPT-2: the rows as the heads split them, [KVH, 1, hd] in the decode step (the
             * host reads KVH x hd floats; a Reshape to [1, KVH, 1, hd] was a CPU copy of its
             * own behind the row's conversion) */
            if (kv_out) {
                output(&b, k, kn);
                output(&b, vslots ? reshape(&b, vrow, 4, kv4) : v, vn);
            }
            if (inplace && !early_write) { /* the keys and values are the whole cache */
                ka = state_write(&b, pk[2 * l], k, kvpos, 1);
                va = state_write(&b, pk[2 * l + 1], vslots ? reshape(&b, vrow, 2, vr2) : v, kvpos,
                                 vslots ? 0 : 1);
                if (vslots)
                    va = transpose(&b, reshape(&b, va, 3, vs3), 3, p102);
            }
        }
        const int cat = rows ? 1 : 2; /* the keys' axis */
        if (!inplace && past > 0) {
            int64_t pd3[3] = {KVH, past, hd};
            V *pkl = rows && !cache3 ? reshape(&b, pk[2 * l], 3, pd3) : pk[2 * l];
            V *pvl = rows && !cache3 ? reshape(&b, pk[2 * l + 1], 3, pd3) : pk[2 * l + 1];
            ka = op(&b, NPU_OP_CONCAT, pkl, k, NULL);
            if (ka && npu_node_set_int(b.g, ka->producer, "axis", cat))
                b.failed = true;
            ka = done(&b, ka);
            va = op(&b, NPU_OP_CONCAT, pvl, v, NULL);
            if (va && npu_node_set_int(b.g, va->producer, "axis", cat))
                b.failed = true;
            va = done(&b, va);
        }
        int64_t gd[4] = {1, KVH, G * s, hd}, gd3[3] = {KVH, G, hd};
        V *qg = G == 1 ? q : rows ? reshape(&b, q, 3, gd3) : reshape(&b, q, 4, gd);
        V *sc = op2(&b, NPU_OP_MATMUL, qg,
                    rows ? transpose(&b, ka, 3, p021) : transpose(&b, ka, 4, p0132));
        sc = op2(&b, NPU_OP_ADD, op2(&b, NPU_OP_MUL, sc, scv), mask);
        V *p = op(&b, NPU_OP_SOFTMAX, sc, NULL, NULL);
        if (p && npu_node_set_int(b.g, p->producer, "axis", -1))
            b.failed = true;
        p = done(&b, p);
        V *y = op2(&b, NPU_OP_MATMUL, p, va); /* [1, KVH, G*s, hd] */
        int64_t hd4[4] = {1, H, s, hd}, flat[3] = {1, s, H * hd};
        if (s == 1) {
            /* one token: the head merge moves no data. (As a Transpose, the form an NPU
             * attention writes merged, the cost partition put the output projection on the
             * CPU behind a CPU attention: 12 CPU matmuls in GPT-2 small, 66 in TinyLlama.) */
            y = reshape(&b, y, 3, flat);
        } else {
            if (G > 1)
                y = reshape(&b, y, 4, hd4);
            y = reshape(&b, transpose(&b, y, 4, p0213), 3, flat);
        }
        snprintf(nm, sizeof(nm), "l%d.o", l);
        x = op2(&b, NPU_OP_ADD, x, linear_split(&b, y, L->wo, L->bo, H * hd, D, &L->so, nm));
        snprintf(nm, sizeof(nm), "l%d.ln2", l);
        a = gpt2 ? layernorm(&b, x, L->ln2_w, L->ln2_b, D, c->eps, nm)
                 : rmsnorm(&b, x, L->ln2_w, D, c->eps, nm);
        V *m;
        if (gpt2 && L->sup.n > 1 && L->sdown.n <= 1) {
            snprintf(nm, sizeof(nm), "l%d", l);
            x = mlp_blocks(&b, x, a, L, D, nm); /* x + the MLP */
            continue;
        }
        if (gpt2) {
            snprintf(nm, sizeof(nm), "l%d.fc", l);
            m = op2(&b, NPU_OP_FUSED_GELU_TANH,
                    linear_split(&b, a, L->w_up, L->b_up, D, c->ffn, &L->sup, nm), NULL);
        } else if (L->sgate.n > 1 && same_split(&L->sgate, &L->sup) && !L->b_up && !L->b_down) {
            /* one chain per block (fp16 too: its gate and up were two three-core submits,
             * then their joins and the SiLU on one core, then down's) */
            m = swiglu_blocks(&b, x, a, L, D, l);
            if (L->sdown.n <= 1) { /* x + down's partial products */
                x = m;
                continue;
            }
        } else {
            snprintf(nm, sizeof(nm), "l%d.gate", l);
            V *gt = linear_split(&b, a, L->w_gate, NULL, D, c->ffn, &L->sgate, nm);
            snprintf(nm, sizeof(nm), "l%d.up", l);
            V *up = linear_split(&b, a, L->w_up, NULL, D, c->ffn, &L->sup, nm);
            m = op2(&b, NPU_OP_MUL, op2(&b, NPU_OP_MUL, gt, op2(&b, NPU_OP_SIGMOID, gt, NULL)), up);
        }
        snprintf(nm, sizeof(nm), "l%d.down", l);
        x = op2(&b, NPU_OP_ADD, x,
                linear_split(&b, m, L->w_down, L->b_down, c->ffn, D, &L->sdown, nm));
    }
    if (s > 1 && !b.failed && !hout) {
        /* the last token only */
        int64_t last = s - 1;
        /* a Slice, which the NPU takes (a strided DPU copy: dpu-move.c lowers a Gather only
         * with a scalar index), so that one row crosses to the host instead of the whole [s, D]
         * hidden state (GPT-2 small, 128 tokens: 393 us of conversion on the board model for
         * 3 us; TinyLlama's [128, 2048]: 1048.6 us) */
        const int64_t end = s, axis = 1;
        V *sl[4] = {x, npu_graph_const_i64(b.g, "last", &last, 1, false),
                    npu_graph_const_i64(b.g, "last_end", &end, 1, false),
                    npu_graph_const_i64(b.g, "last_axis", &axis, 1, false)};
        struct npu_node *n = sl[1] && sl[2] && sl[3]
                                 ? npu_node_new(b.g, NPU_OP_SLICE, "last_token", sl, 4, 1, NULL)
                                 : NULL;
        if (!n) {
            b.failed = true;
            x = NULL;
        } else {
            npu_graph_append(b.g, n);
            x = done(&b, n->out[0]);
        }
    }
    if (!hout)
        x = gpt2 ? layernorm(&b, x, w->lnf_w, w->lnf_b, D, c->eps, "ln_f")
                 : rmsnorm(&b, x, w->lnf_w, D, c->eps, "norm");
    V **logits = NULL;
    int nlog = 0;
    if (hout)
        output(&b, x, "hidden_out");
    else
        lm_head(&b, x, w->head, D, Vn, w->head_split, &logits, &nlog);
    /* the logits (or the hidden states) first, then k.L, v.L: the outputs were added in layer
     * order, so the logits' outputs move to the front */
    for (int k = 0; k < nlog; k++) {
        char nm[32];
        if (nlog > 1)
            snprintf(nm, sizeof(nm), "logits.%d", k);
        output(&b, logits[k], nlog > 1 ? nm : "logits");
    }
    free(logits);
    nlog = hout ? 1 : nlog;
    free(pk);
    free(rot);
    if (b.failed) {
        npu_err(DOM, "cannot build the decoder graph (s=%d, past=%d)", s, past);
        npu_graph_free(b.g);
        return NPU_ERR_INTERNAL;
    }
    if (b.q && !b.q->observe)
        llm_quant_sink(b.g);
    V **lo = malloc((size_t)nlog * sizeof(V *));
    if (!lo) {
        npu_graph_free(b.g);
        return NPU_ERR_NOMEM;
    }
    memcpy(lo, b.g->outputs + b.g->noutputs - nlog, (size_t)nlog * sizeof(V *));
    memmove(b.g->outputs + nlog, b.g->outputs, (size_t)(b.g->noutputs - nlog) * sizeof(V *));
    memcpy(b.g->outputs, lo, (size_t)nlog * sizeof(V *));
    free(lo);
    *out = b.g;
    return NPU_OK;
}

/* Test knob (the runtime's, npu-program-exec.c): NPU_SPLIT_FORCE=1 cuts every projection
 * llm_weights_split may cut, gain or not, so that tiny test models take the split graph. */
bool
llm_split_forced(void)
{
    const char *f = getenv("NPU_SPLIT_FORCE");
    return f && !strcmp(f, "1");
}

/* W [in, out] row-major -> column blocks of sp's widths (sp->n of them), each [in, cols]
 * row-major, one after another in W's memory. */
static enum npu_status
split_cols(float *w, int64_t in, int64_t out, const struct llm_split *sp)
{
    float *tmp = malloc((size_t)(in * out) * sizeof(float));
    if (!tmp)
        return NPU_ERR_NOMEM;
    float *dst = tmp;
    int64_t c0 = 0;
    for (int k = 0; k < sp->n; k++) {
        for (int64_t i = 0; i < in; i++)
            memcpy(dst + i * sp->cols[k], w + i * out + c0, (size_t)sp->cols[k] * sizeof(float));
        dst += in * sp->cols[k];
        c0 += sp->cols[k];
    }
    memcpy(w, tmp, (size_t)(in * out) * sizeof(float));
    free(tmp);
    return NPU_OK;
}

/* Whether cutting W [in, out] over `cores` pays: its weight-streaming time on one core, less
 * its time at the chip's shared bandwidth, beats two submits (the join's copies and the extra
 * submit of the split; GPT-2 small's o [768 x 768] saves 65 us, 12.10 instead of 13.69
 * ms/token modeled on three cores, where four submits left it whole). NPU_SPLIT_FORCE=1:
 * always. */
static bool
split_pays(int64_t in, int64_t out, int cores)
{
    const struct npu_timing_model *tm = npu_timing_model();
    double bytes = 2.0 * (double)in * (double)out; /* fp16 on the NPU */
    double one = bytes / (tm->dma_bytes_per_s_core * tm->dma_eff_weight);
    double all = bytes / fmin(cores * tm->dma_bytes_per_s_core * tm->dma_eff_weight,
                              tm->dma_bytes_per_s_total);
    return cores > 1 && (one - all > 2 * tm->submit_overhead_s || llm_split_forced());
}

/* W [in, out] row-major -> column blocks of sp's widths, each [in, cols] row-major. */
static enum npu_status
split_one(float *w, int64_t in, int64_t out, int cores, struct llm_split *sp)
{
    sp->n = 1;
    sp->cols[0] = out;
    if (cores <= 1 || !w || !split_pays(in, out, cores))
        return NPU_OK;
    /* widths: multiples of 32 channels, the last takes the rest */
    int64_t width = ((out + cores - 1) / cores + 31) / 32 * 32;
    int n = 0;
    for (int64_t c0 = 0; c0 < out && n < LLM_MAX_SPLIT; c0 += width)
        sp->cols[n++] = out - c0 < width ? out - c0 : width;
    if (n < 2) {
        sp->cols[0] = out;
        return NPU_OK;
    }
    sp->n = n;
    return split_cols(w, in, out, sp);
}

/* q balanced against k and v on three cores (LLaMA / Qwen2 with whole-head blocks): q in
 * three column blocks, two of hb = (H - KVH) / 2 heads and a last one of KVH heads, which
 * the layer split runs beside k's and v's chains (KVH heads each): per core hb, hb and
 * 3 KVH heads' rows of weights, against q's two halves (H / 2 heads each) and k + v
 * (2 KVH) on the third core. TinyLlama (32 heads, 4 kv): 14 / 14 / 4 + 4 + 4 instead of
 * 16 / 16 / 4 + 4. The last block has k's head count so that it RoPEs with k's angles
 * (llm_rope_block_heads; no other input). Taken only when it lowers the largest core's
 * share of the q / k / v weights (the core with k and v also runs their RoPE, output copies
 * and cache writes: a tie stays with the halves), when both widths are multiples of 32
 * channels, and when the halves would have been whole heads. Returns hb, or 0. */
static int64_t
q_balanced_heads(const struct llm_config *c, int cores)
{
    const int64_t H = c->n_heads, KVH = c->n_kv_heads, hd = c->head_dim;
    if (cores != 3 || c->arch == LLM_ARCH_GPT2 || H <= KVH || (H - KVH) % 2 || H % 2)
        return 0;
    const int64_t hb = (H - KVH) / 2;
    const int64_t halves = H / 2; /* heads per core of q's two halves */
    if ((hb * hd) % 32 || (KVH * hd) % 32 || (halves * hd) % 32)
        return 0;
    const int64_t now = halves > 2 * KVH ? halves : 2 * KVH;
    const int64_t bal = hb > 3 * KVH ? hb : 3 * KVH;
    return bal < now ? hb : 0;
}

enum npu_status
llm_weights_split(const struct llm_config *c, struct llm_weights *w, int cores)
{
    const int64_t D = c->hidden, Q = (int64_t)c->n_heads * c->head_dim,
                  KV = (int64_t)c->n_kv_heads * c->head_dim, F = c->ffn;
    if (cores > LLM_MAX_SPLIT)
        cores = LLM_MAX_SPLIT;
    /* GPT-2's c_proj stays whole: its rows follow c_fc's column blocks (mlp_blocks); so does
     * w8a8 LLaMA's down (swiglu_blocks) */
    const bool gpt2 = c->arch == LLM_ARCH_GPT2;
    w->head_split = cores > 1 ? cores : 1;
    enum npu_status st = NPU_OK;
    for (int l = 0; l < c->n_layers && !st; l++) {
        struct llm_layer_w *L = &w->layers[l];
        if (L->sq.n) /* split already */
            continue;
        /* q, k and v are three independent products already (the layer split runs them side
         * by side) */
        /* w8a8, and LLaMA / Qwen2 in fp16: q is cut too (4x k's bytes: side by side with k
         * and v it streamed alone; GPT-2's fp16 q stays whole, as measured for its targets) */
        /* (in two blocks on three cores: k and v, a quarter of q's bytes each, share the
         * third core) */
        const int64_t qbal = L->wq && split_pays(D, Q, 2) ? q_balanced_heads(c, cores) : 0;
        if (qbal) {
            L->sq.n = 3;
            L->sq.cols[0] = L->sq.cols[1] = qbal * c->head_dim;
            L->sq.cols[2] = KV;
            st = split_cols(L->wq, D, Q, &L->sq);
        }
        if (st ||
            (!qbal && (st = split_one(L->wq, D, Q, w->quant || !gpt2 ? (cores == 3 ? 2 : cores) : 1,
                                      &L->sq))) ||
            (st = split_one(L->wk, D, KV, 1, &L->sk)) ||
            (st = split_one(L->wv, D, KV, 1, &L->sv)) ||
            (st = split_one(L->wo, Q, D, cores, &L->so)) ||
            (st = split_one(L->w_up, D, F, cores, &L->sup)) ||
            (st = split_one(L->w_gate, D, F, cores, &L->sgate)) ||
            /* down whole (its rows follow the SwiGLU chains) where swiglu_blocks takes the
             * MLP: no biases on up / down */
            (st = split_one(L->w_down, F, D,
                            gpt2 || w->quant || (!L->b_up && !L->b_down) ? 1 : cores, &L->sdown)))
            break;
    }
    return st;
}
