/* SPDX-License-Identifier: MIT */
/*
 * npu-program-cpu.c: one CPU step of a compiled program. A CPU step is an IR
 * node as the passes left it (docs/ir.md), so it may carry the compiler's
 * fusion attributes: a fused bias (MatMul's third input) and `npu_act` on
 * Conv / Gemm / MatMul. core/cpu's kernels apply both themselves for fp32;
 * for other dtypes this file runs the base kernel without the npu_*
 * attributes, then adds the bias and applies the activation in place with
 * the unfused kernels (elementwise kernels read element i before writing it,
 * so out == in is safe) - the same epilogue as the CPU executor's. Steps
 * whose constant inputs core/cpu can prepare once (npu_cpu_prepare: a Conv's
 * packed weights) get that at session creation (prog_cpu_prepare).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "npu-program-priv.h"

static bool
kernel_takes_fusion(const struct npu_prog_step *st, const struct npu_tensor *const *in,
                    struct npu_tensor *const *out)
{
    if (st->op != NPU_OP_CONV && st->op != NPU_OP_GEMM && st->op != NPU_OP_MATMUL)
        return false;
    if (out[0]->dtype != NPU_DTYPE_FP32)
        return false;
    for (int i = 0; i < st->nin; i++)
        if (in[i] && in[i]->dtype != NPU_DTYPE_FP32)
            return false;
    return true;
}

static bool
has_fusion(const struct npu_attrs *a)
{
    for (size_t i = 0; i < a->n; i++)
        if (!strncmp(a->v[i].name, "npu_", 4))
            return true;
    return false;
}

static void
store_scalar(enum npu_dtype dt, void *buf, double v)
{
    switch (dt) {
    case NPU_DTYPE_FP32: *(float *)buf = (float)v; break;
    case NPU_DTYPE_FP64: *(double *)buf = v; break;
    case NPU_DTYPE_FP16: *(uint16_t *)buf = npu_fp32_to_fp16((float)v); break;
    case NPU_DTYPE_INT8: *(int8_t *)buf = (int8_t)v; break;
    case NPU_DTYPE_UINT8: *(uint8_t *)buf = (uint8_t)v; break;
    case NPU_DTYPE_INT16: *(int16_t *)buf = (int16_t)v; break;
    case NPU_DTYPE_INT32: *(int32_t *)buf = (int32_t)v; break;
    case NPU_DTYPE_INT64: *(int64_t *)buf = (int64_t)v; break;
    default: memset(buf, 0, 8); break;
    }
}

static enum npu_status
run1(struct npu_cpu_ctx *ctx, enum npu_op op, const struct npu_attrs *a, const struct npu_tensor *x,
     const struct npu_tensor *y, const struct npu_tensor *z, struct npu_tensor *o)
{
    const struct npu_tensor *in[3] = {x, y, z};
    struct npu_tensor *out[1] = {o};
    return npu_cpu_run(ctx, op, a, in, z ? 3 : y ? 2 : 1, out, 1);
}

static const struct {
    const char *name;
    enum npu_op op;
} acts[] = {
    {"relu", NPU_OP_RELU},
    {"leaky_relu", NPU_OP_LEAKY_RELU},
    {"clip", NPU_OP_CLIP},
    {"sigmoid", NPU_OP_SIGMOID},
    {"tanh", NPU_OP_TANH},
    {"gelu", NPU_OP_GELU},
    {"gelu_tanh", NPU_OP_FUSED_GELU_TANH},
    {"silu", NPU_OP_FUSED_SILU},
    {"hard_swish", NPU_OP_HARD_SWISH},
    {"hard_sigmoid", NPU_OP_HARD_SIGMOID},
};

static enum npu_status
epilogue(struct npu_cpu_ctx *ctx, const struct npu_prog_step *st, const struct npu_tensor *bias,
         struct npu_tensor *o)
{
    static const struct npu_attrs none = {NULL, 0};
    enum npu_status s;
    if (bias && (s = run1(ctx, NPU_OP_ADD, &none, o, bias, NULL, o)))
        return s;
    const char *act = npu_attrs_string(&st->attrs, "npu_act", NULL);
    if (!act)
        return NPU_OK;
    enum npu_op op = NPU_OP_NONE;
    for (size_t i = 0; i < NPU_ARRAY_SIZE(acts); i++)
        if (!strcmp(act, acts[i].name))
            op = acts[i].op;
    float alpha = npu_attrs_float(&st->attrs, "npu_act_alpha", 0);
    float beta = npu_attrs_float(&st->attrs, "npu_act_beta", 0);
    struct npu_attr v[2];
    struct npu_attrs aa = {v, 0};
    switch (op) {
    case NPU_OP_NONE:
        npu_err(PROG_DOM, "step '%s': unknown fused activation '%s'", st->name ? st->name : "",
                act);
        return NPU_ERR_UNSUPPORTED;
    case NPU_OP_LEAKY_RELU:
        v[0] = (struct npu_attr){.name = "alpha", .type = NPU_ATTR_FLOAT, .f = alpha};
        aa.n = 1;
        break;
    case NPU_OP_HARD_SIGMOID:
        v[0] = (struct npu_attr){.name = "alpha", .type = NPU_ATTR_FLOAT, .f = alpha};
        v[1] = (struct npu_attr){.name = "beta", .type = NPU_ATTR_FLOAT, .f = beta};
        aa.n = 2;
        break;
    case NPU_OP_CLIP: {
        uint64_t lo_b, hi_b;
        struct npu_tensor lo = {.dtype = o->dtype, .ndim = 0, .data = &lo_b};
        struct npu_tensor hi = {.dtype = o->dtype, .ndim = 0, .data = &hi_b};
        store_scalar(o->dtype, &lo_b, alpha);
        store_scalar(o->dtype, &hi_b, beta);
        return run1(ctx, NPU_OP_CLIP, &none, o, &lo, &hi, o);
    }
    default: break;
    }
    return run1(ctx, op, &aa, o, NULL, NULL, o);
}

enum npu_status
prog_cpu_prepare(const struct npu_program *p, const struct npu_prog_step *st,
                 const struct npu_tensor *views, struct npu_cpu_prep **out)
{
    *out = NULL;
    if (st->kind != NPU_STEP_CPU || st->nin > 64)
        return NPU_OK;
    const struct npu_tensor *in[64];
    struct npu_tensor rt[64]; /* inputs known only at run time: shape, no data */
    for (int k = 0; k < st->nin; k++) {
        in[k] = NULL;
        if (st->in[k] < 0)
            continue;
        const struct npu_prog_tensor *t = &p->tensors[st->in[k]];
        if (t->place == NPU_PLACE_HOST && t->t.data) {
            in[k] = &views[st->in[k]]; /* a constant of the program: the run sees this pointer */
        } else {
            rt[k] = views[st->in[k]];
            rt[k].data = NULL;
            in[k] = &rt[k];
        }
    }
    return npu_cpu_prepare(st->op, &st->attrs, in, st->nin, out);
}

enum npu_status
prog_cpu_step(struct npu_cpu_ctx *ctx, const struct npu_prog_step *st,
              const struct npu_cpu_prep *prep, const struct npu_tensor *const *in,
              struct npu_tensor *const *out)
{
    if (!has_fusion(&st->attrs) || kernel_takes_fusion(st, in, out))
        return npu_cpu_run_prep(ctx, prep, st->op, &st->attrs, in, st->nin, out, st->nout);
    /* Base kernel without the compiler's attributes, then the epilogue. */
    struct npu_attr local[32];
    struct npu_attr *stripped = local;
    if (st->attrs.n > NPU_ARRAY_SIZE(local) &&
        !(stripped = malloc(sizeof(*stripped) * st->attrs.n)))
        return NPU_ERR_NOMEM;
    struct npu_attrs a = {stripped, 0};
    for (size_t i = 0; i < st->attrs.n; i++)
        if (strncmp(st->attrs.v[i].name, "npu_", 4))
            stripped[a.n++] = st->attrs.v[i];
    int nin = st->nin;
    const struct npu_tensor *bias = NULL;
    if (st->op == NPU_OP_MATMUL && nin > 2) {
        bias = in[2];
        nin = 2;
    }
    enum npu_status s = npu_cpu_run_prep(ctx, prep, st->op, &a, in, nin, out, st->nout);
    if (stripped != local)
        free(stripped);
    if (s)
        return s;
    return epilogue(ctx, st, bias, out[0]);
}

/* ---- npu.Attention reading K and V where the NPU holds them ------------------------------- */

static const struct npu_prog_tensor *
step_tensor(const struct npu_program *p, const struct npu_prog_step *st, int k)
{
    return k < st->nin && st->in[k] >= 0 && st->in[k] < p->n_tensors ? &p->tensors[st->in[k]]
                                                                     : NULL;
}

static bool
is_host_f32(const struct npu_prog_tensor *t)
{
    return t && t->place == NPU_PLACE_HOST && t->t.dtype == NPU_DTYPE_FP32;
}

const char *
prog_cpu_in_place_why(const struct npu_program *p, const struct npu_prog_step *st, int k)
{
    if (st->op != NPU_OP_FUSED_ATTENTION || (k != 1 && k != 2))
        return "only K and V of npu.Attention are read in NPU memory";
    if (npu_attrs_int(&st->attrs, "is_causal", 0))
        return "a causal npu.Attention";
    const struct npu_prog_tensor *t = step_tensor(p, st, k), *q = step_tensor(p, st, 0),
                                 *m = step_tensor(p, st, 3),
                                 *y = st->nout == 1 && st->out[0] >= 0 && st->out[0] < p->n_tensors
                                          ? &p->tensors[st->out[0]]
                                          : NULL;
    if (!t || t->place != NPU_PLACE_NPU || t->layout != NPU_LAYOUT_NC1HWC2 ||
        t->mem_dtype != NPU_DTYPE_FP16 ||
        (t->t.dtype != NPU_DTYPE_FP32 && t->t.dtype != NPU_DTYPE_FP16) || t->t.ndim != 3 ||
        t->npu_order != NPU_VIEW_HWC || t->npu_offset)
        return "not fp32 [heads, slots, head_dim] held as fp16 NC1HWC2 rows";
    const int64_t H = t->t.dims[0], T = t->t.dims[1], D = t->t.dims[2];
    if (D <= 0 || D % 8 || H <= 0 || T <= 0 || t->npu_c != D || t->npu_w != 1 ||
        (int64_t)t->npu_h != H * T || t->bytes < (uint64_t)(D / 8) * (uint64_t)(H * T) * 16)
        return "its NPU view is not (head_dim, heads x slots, 1) with head_dim a multiple of 8";
    if (!is_host_f32(q) || q->t.ndim != 3 || q->t.dims[0] != H || q->t.dims[2] != D)
        return "Q is not a host fp32 [heads, rows, head_dim] of the same heads";
    const int64_t G = q->t.dims[1];
    if (!is_host_f32(m) || m->t.ndim < 1 || m->t.dims[m->t.ndim - 1] != T ||
        npu_tensor_numel(&m->t) != G * T)
        return "the mask is not a host fp32 of rows x slots";
    if (!is_host_f32(y) || y->t.ndim != 3 || y->t.dims[0] != H || y->t.dims[1] != G ||
        y->t.dims[2] != D)
        return "Y is not a host fp32 [heads, rows, head_dim]";
    const struct npu_prog_tensor *o = step_tensor(p, st, 3 - k); /* the other of K, V */
    if (!o || o->t.ndim != 3 || memcmp(o->t.dims, t->t.dims, sizeof(int64_t) * 3))
        return "K and V differ in shape";
    if (o->place != NPU_PLACE_NPU)
        return "K and V are not both in NPU memory";
    return NULL;
}

bool
prog_cpu_reads_npu(const struct npu_program *p, const struct npu_prog_step *st)
{
    for (int k = 0; k < st->nin; k++) {
        const struct npu_prog_tensor *t = step_tensor(p, st, k);
        if (t && t->place != NPU_PLACE_HOST)
            return true;
    }
    return false;
}

static struct npu_attn16_cache
cache_of(const struct npu_prog_tensor *t, const struct npu_tensor *view)
{
    if (t->place != NPU_PLACE_NPU)
        return (struct npu_attn16_cache){NULL, 0};
    /* packed NC1HWC2 (facts §2.10): one 8-channel surface = H x W atoms of 8 fp16 */
    return (struct npu_attn16_cache){view->data, (int64_t)t->npu_h * t->npu_w * 8};
}

enum npu_status
prog_cpu_attn_in_place(const struct npu_program *p, const struct npu_prog_step *st,
                       const struct npu_tensor *const *in, struct npu_tensor *const *out,
                       int64_t *slots)
{
    /* validated at load: K and V both in NPU memory (prog_cpu_in_place_why) */
    const struct npu_prog_tensor *kt = step_tensor(p, st, 1), *vt = step_tensor(p, st, 2);
    if (!kt || !vt || kt->place != NPU_PLACE_NPU || vt->place != NPU_PLACE_NPU)
        return NPU_ERR_INTERNAL;
    const struct npu_tensor *q = in[0];
    const int64_t D = kt->t.dims[2];
    struct npu_attn16_shape sh = {
        .kv_heads = kt->t.dims[0],
        .group = q->dims[1],
        .slots = kt->t.dims[1],
        .head_dim = D,
        .scale = npu_attrs_float(&st->attrs, "scale", 1.0f / sqrtf((float)D)),
    };
    struct npu_attn16_cache k = cache_of(kt, in[1]), v = cache_of(vt, in[2]);
    float *work = malloc(sizeof(float) * (size_t)sh.slots);
    if (!work)
        return NPU_ERR_NOMEM;
    /* *slots: the most slots a query row read, from the kernel's one scan of the mask */
    *slots = 0;
    enum npu_status s = npu_cpu_attn16_decode_read(&sh, q->data, in[3]->data, &k, &v, 0,
                                                   sh.kv_heads, work, out[0]->data, slots);
    free(work);
    return s;
}
