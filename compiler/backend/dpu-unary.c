/* SPDX-License-Identifier: MIT */
/*
 * dpu-unary.c: the unary ops on the DPU, a flying pass each (two for PRelu with mixed
 * slopes and for the two-pass GELU / SiLU): ReLU, LeakyRelu, PRelu, Clip, Neg, Abs,
 * HardSigmoid, HardSwish and Identity / Dropout through the BS / BN / EW stages; Sigmoid,
 * Tanh, Erf, GELU and SiLU through LUT tables.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dpu-low.h"

/* Two-pass x * g(x) form of GELU / SiLU (g from a bounded table; no saturation at large x).
 * Off by default: the one-table form costs no extra pass (docs/npu-dpu-ops.md). */
int npu_dpu_gelu_two_pass = 0;

static bool
const_scalar(const struct npu_value *v, double *out)
{
    if (!dl_is_const(v) || npu_value_numel(v) != 1)
        return false;
    *out = npu_value_get_f64(v, 0);
    return true;
}

enum npu_status
dl_lower_unary(struct rkd *b, struct npu_node *n, struct why *w)
{
    if (n->nin < 1 || !n->in[0] || n->nout != 1)
        return why_set(w, "needs one input");
    struct npu_value *x = n->in[0], *out = n->out[0];
    if (!npu_dtype_is_float(x->t.dtype) || !npu_dtype_is_float(out->t.dtype))
        return why_set(w, "only float tensors (fp16 on the NPU)");
    struct vmap vm;
    struct npu_dpu_map xm;
    if (!dl_view(b, x, &vm))
        return why_set(w, "no NC1HWC2 view");
    if (!dl_input(b, x, &vm, &xm, w))
        return NPU_ERR_UNSUPPORTED;
    struct npu_dpu_map zm = dl_map(rkd_result(), &vm);
    struct npu_dpu_pass p;
    memset(&p, 0, sizeof(p));
    p.in = xm;
    p.out = zm;
    uint32_t C = vm.view[0];
    float one = 1.0f;
    (void)one;

    switch (n->op) {
    case NPU_OP_IDENTITY:
    case NPU_OP_DROPOUT: break;
    case NPU_OP_RELU:
        p.st.bs.relu = true;
        b->nonneg = true;
        break;
    case NPU_OP_NEG:
        p.st.bs.mul = NPU_DPU_SRC_REG;
        p.st.bs.mul_value = -1.0f;
        break;
    case NPU_OP_ABS: /* max(-x, x) */
        b->nonneg = true;
        p.st.bs.mul = NPU_DPU_SRC_REG;
        p.st.bs.mul_value = -1.0f;
        p.st.ew.op = NPU_DPU_EW_MAX;
        p.st.ew.operand = xm;
        break;
    case NPU_OP_LEAKY_RELU: {
        /* max(a x, x) for a <= 1, min(a x, x) for a > 1; a in fp32 through BRDMA */
        float a = npu_node_float(n, "alpha", 0.01f);
        float *av = malloc(C * sizeof(float));
        if (!av)
            return NPU_ERR_NOMEM;
        for (uint32_t c = 0; c < C; c++)
            av[c] = a;
        p.st.bs.mul = NPU_DPU_SRC_MEM;
        p.st.bs.mul_mem = dl_chan_const(b, "alpha", av, C);
        free(av);
        p.st.ew.op = a <= 1 ? NPU_DPU_EW_MAX : NPU_DPU_EW_MIN;
        p.st.ew.operand = xm;
        break;
    }
    case NPU_OP_PRELU: {
        struct npu_value *sl = n->nin > 1 ? n->in[1] : NULL;
        float *full = sl ? dl_bcast_const(sl, out->t.ndim, out->t.dims) : NULL;
        float *chv = malloc(C * sizeof(float));
        if (!full || !chv) {
            free(full);
            free(chv);
            return why_set(w, "PRelu needs a constant slope that broadcasts");
        }
        int kind = dl_const_kind(full, npu_value_numel(out), &vm, chv);
        free(full);
        if (kind == 2) {
            free(chv);
            return why_set(w, "PRelu slope varies over pixels (not lowered)");
        }
        bool all_le1 = true, all_ge1 = true;
        for (uint32_t c = 0; c < C; c++) {
            all_le1 &= chv[c] <= 1;
            all_ge1 &= chv[c] >= 1;
        }
        struct npu_dpu_ref sr = dl_chan_const(b, "slope", chv, C);
        free(chv);
        if (all_le1 || all_ge1) {
            p.st.bs.mul = NPU_DPU_SRC_MEM;
            p.st.bs.mul_mem = sr;
            p.st.ew.op = all_le1 ? NPU_DPU_EW_MAX : NPU_DPU_EW_MIN;
            p.st.ew.operand = xm;
            break;
        }
        /* mixed slopes: t = s * relu(-x); y = relu(x) - t (two passes) */
        struct npu_dpu_map t = dl_map(rkd_temp(b, npu_dpu_map_extent(&xm)), &vm);
        struct npu_dpu_pass p1 = {.in = xm, .out = t};
        p1.st.bs.mul = NPU_DPU_SRC_REG;
        p1.st.bs.mul_value = -1.0f;
        p1.st.bs.relu = true;
        p1.st.bn.mul = NPU_DPU_SRC_MEM;
        p1.st.bn.mul_mem = sr;
        rkd_pass(b, &p1);
        p.st.bs.relu = true;
        p.st.ew.op = NPU_DPU_EW_SUB;
        p.st.ew.operand = t;
        break;
    }
    case NPU_OP_CLIP: {
        double lo = -INFINITY, hi = INFINITY, v;
        if (n->nin > 1 && n->in[1]) {
            if (!const_scalar(n->in[1], &v))
                return why_set(w, "Clip bounds must be constants");
            lo = v;
        }
        if (n->nin > 2 && n->in[2]) {
            if (!const_scalar(n->in[2], &v))
                return why_set(w, "Clip bounds must be constants");
            hi = v;
        }
        if (n->nin == 1) {
            lo = npu_node_float(n, "min", -INFINITY);
            hi = npu_node_float(n, "max", INFINITY);
        }
        if (!(lo <= hi))
            return why_set(w, "Clip with min > max");
        b->nonneg = lo >= 0;
        if (isfinite(lo)) {
            /* clamp(x - lo, 0, hi - lo) + lo */
            p.st.bs.alu = NPU_DPU_SRC_REG;
            p.st.bs.alu_minus = true;
            p.st.bs.alu_value = (float)lo;
            p.st.bs.relu = true;
            if (isfinite(hi)) {
                p.st.bs.relux = true;
                p.st.bs.relux_value = (float)(hi - lo);
            }
            p.st.bn.alu = NPU_DPU_SRC_REG;
            p.st.bn.alu_value = (float)lo;
        } else if (isfinite(hi)) {
            /* hi - relu(hi - x) */
            p.st.bs.alu = NPU_DPU_SRC_REG;
            p.st.bs.alu_minus = true;
            p.st.bs.alu_value = (float)hi;
            p.st.bs.mul = NPU_DPU_SRC_REG;
            p.st.bs.mul_value = -1.0f;
            p.st.bs.relu = true;
            p.st.bn.mul = NPU_DPU_SRC_REG;
            p.st.bn.mul_value = -1.0f;
            p.st.bn.alu = NPU_DPU_SRC_REG;
            p.st.bn.alu_value = (float)hi;
        }
        break;
    }
    case NPU_OP_HARD_SIGMOID:
    case NPU_OP_HARD_SWISH: {
        /* BN: alpha x + beta (alpha fp32 via NRDMA), ReLU, ReLU-X at 1; HardSwish then
         * multiplies by x in EW */
        float a = n->op == NPU_OP_HARD_SWISH ? 1.0f / 6.0f : npu_node_float(n, "alpha", 0.2f);
        float be = n->op == NPU_OP_HARD_SWISH ? 0.5f : npu_node_float(n, "beta", 0.5f);
        float *av = malloc(C * sizeof(float));
        if (!av)
            return NPU_ERR_NOMEM;
        for (uint32_t c = 0; c < C; c++)
            av[c] = a;
        p.st.bn.mul = NPU_DPU_SRC_MEM;
        p.st.bn.mul_mem = dl_chan_const(b, "alpha", av, C);
        free(av);
        p.st.bn.alu = NPU_DPU_SRC_REG;
        p.st.bn.alu_value = be;
        p.st.bn.relu = true;
        p.st.bn.relux = true;
        p.st.bn.relux_value = 1.0f;
        b->nonneg = n->op == NPU_OP_HARD_SIGMOID;
        if (n->op == NPU_OP_HARD_SWISH) {
            p.st.ew.op = NPU_DPU_EW_MUL;
            p.st.ew.operand = xm;
        }
        break;
    }
    case NPU_OP_SIGMOID:
    case NPU_OP_TANH:
    case NPU_OP_ERF:
    case NPU_OP_GELU:
    case NPU_OP_FUSED_GELU_TANH:
    case NPU_OP_FUSED_SILU: {
        enum npu_dpu_fn fn, g;
        switch (n->op) {
        case NPU_OP_SIGMOID: fn = NPU_DPU_FN_SIGMOID; break;
        case NPU_OP_TANH: fn = NPU_DPU_FN_TANH; break;
        case NPU_OP_ERF: fn = NPU_DPU_FN_ERF; break;
        case NPU_OP_GELU: {
            const char *ap = npu_node_string(n, "approximate", "none");
            fn = !strcmp(ap, "tanh") ? NPU_DPU_FN_GELU_TANH : NPU_DPU_FN_GELU;
            break;
        }
        case NPU_OP_FUSED_GELU_TANH: fn = NPU_DPU_FN_GELU_TANH; break;
        default: fn = NPU_DPU_FN_SILU; break;
        }
        bool xg = fn == NPU_DPU_FN_GELU || fn == NPU_DPU_FN_GELU_TANH || fn == NPU_DPU_FN_SILU;
        b->nonneg = fn == NPU_DPU_FN_SIGMOID;
        if (!xg || !npu_dpu_gelu_two_pass) {
            dl_lut_pass(b, fn, &xm, &zm);
            return dl_finish(b, 0, &vm);
        }
        g = fn == NPU_DPU_FN_GELU        ? NPU_DPU_FN_PHI
            : fn == NPU_DPU_FN_GELU_TANH ? NPU_DPU_FN_PHI_TANH
                                         : NPU_DPU_FN_SIGMOID;
        struct npu_dpu_map t = dl_map(rkd_temp(b, npu_dpu_map_extent(&xm)), &vm);
        dl_lut_pass(b, g, &xm, &t);
        p.in = t;
        p.st.ew.op = NPU_DPU_EW_MUL;
        p.st.ew.operand = xm;
        break;
    }
    default: return why_set(w, "no DPU lowering for %s", npu_op_name(n->op));
    }
    rkd_pass(b, &p);
    return dl_finish(b, 0, &vm);
}
