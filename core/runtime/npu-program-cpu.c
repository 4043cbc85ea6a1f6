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
