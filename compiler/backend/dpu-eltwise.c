/* SPDX-License-Identifier: MIT */
/*
 * dpu-eltwise.c: the elementwise binary ops on the DPU (Add, Sub, Mul, Div, Max, Min, and
 * Pow with the exponent 2), one flying pass each: two activations through the EW stage
 * (the second read by ERDMA), or an activation and a constant through the BS / BN stages
 * (a scalar or per-channel constant) or as an EW operand map.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dpu-low.h"

static bool
same_shape(const struct npu_tensor *a, const struct npu_tensor *b)
{
    if (npu_tensor_numel(a) != npu_tensor_numel(b))
        return false;
    /* leading 1s do not change the layout */
    int ia = 0, ib = 0;
    while (ia < a->ndim && a->dims[ia] == 1 && a->ndim - ia > b->ndim - ib)
        ia++;
    while (ib < b->ndim && b->dims[ib] == 1 && b->ndim - ib > a->ndim - ia)
        ib++;
    if (a->ndim - ia != b->ndim - ib)
        return false;
    for (; ia < a->ndim; ia++, ib++)
        if (a->dims[ia] != b->dims[ib])
            return false;
    return true;
}

bool
dl_is_const(const struct npu_value *v)
{
    return v && v->kind == NPU_VALUE_CONST && npu_value_data(v);
}

static enum npu_dpu_ew_op
ew_of(enum npu_op op)
{
    switch (op) {
    case NPU_OP_ADD: return NPU_DPU_EW_ADD;
    case NPU_OP_SUB: return NPU_DPU_EW_SUB;
    case NPU_OP_MUL: return NPU_DPU_EW_MUL;
    case NPU_OP_DIV: return NPU_DPU_EW_DIV;
    case NPU_OP_MAX: return NPU_DPU_EW_MAX;
    case NPU_OP_MIN: return NPU_DPU_EW_MIN;
    default: return NPU_DPU_EW_NONE;
    }
}

/* x op c with c a scalar (kind 0) or per-channel (kind 1) constant: BS/BN stages. */
static void
const_stages(struct rkd *b, enum npu_op op, bool swapped, int kind, const float *chv, uint32_t C,
             struct npu_dpu_stages *st, bool *need_x_operand)
{
    float *tmp = malloc(C * sizeof(float));
    if (!tmp) {
        b->err = NPU_ERR_NOMEM;
        return;
    }
    *need_x_operand = false;
    struct npu_dpu_stage *bs = &st->bs, *bn = &st->bn;
    switch (op) {
    case NPU_OP_ADD:
    case NPU_OP_SUB:
        /* ALU operands are fp32 (register or BRDMA array): exact constants */
        if (kind == 0) {
            bs->alu = NPU_DPU_SRC_REG;
            bs->alu_value = chv[0];
        } else {
            bs->alu = NPU_DPU_SRC_MEM;
            bs->alu_mem = dl_chan_const(b, "alu", chv, C);
        }
        bs->alu_minus = op == NPU_OP_SUB;
        if (op == NPU_OP_SUB && swapped) { /* c - x = (x - c) * -1 */
            bs->mul = NPU_DPU_SRC_REG;
            bs->mul_value = -1.0f;
        }
        break;
    case NPU_OP_MUL:
    case NPU_OP_DIV:
        /* MUL through BRDMA: fp32 operands (the register operand is fp16) */
        for (uint32_t c = 0; c < C; c++)
            tmp[c] = op == NPU_OP_DIV ? (float)(1.0 / (double)chv[c]) : chv[c];
        bs->mul = NPU_DPU_SRC_MEM;
        bs->mul_mem = dl_chan_const(b, "mul", tmp, C);
        break;
    case NPU_OP_MAX:
    case NPU_OP_MIN: {
        /* max(x, c) = relu(x - c) + c;  min(x, c) = c - relu(c - x) */
        struct npu_dpu_ref cr = dl_chan_const(b, "c", chv, C);
        bs->alu = kind == 0 ? NPU_DPU_SRC_REG : NPU_DPU_SRC_MEM;
        bs->alu_value = chv[0];
        bs->alu_mem = cr;
        bs->alu_minus = true;
        bs->relu = true;
        if (op == NPU_OP_MIN) {
            bs->mul = NPU_DPU_SRC_REG;
            bs->mul_value = -1.0f;
            bn->mul = NPU_DPU_SRC_REG;
            bn->mul_value = -1.0f;
        }
        bn->alu = kind == 0 ? NPU_DPU_SRC_REG : NPU_DPU_SRC_MEM;
        bn->alu_value = chv[0];
        bn->alu_mem = cr;
        break;
    }
    default: break;
    }
    free(tmp);
}

enum npu_status
dl_lower_eltwise(struct rkd *b, struct npu_node *n, struct why *w)
{
    if (n->nin != 2 || !n->in[0] || !n->in[1] || n->nout != 1)
        return why_set(w, "needs exactly two inputs");
    struct npu_value *x = n->in[0], *y = n->in[1], *out = n->out[0];
    if (!npu_dtype_is_float(out->t.dtype) || !npu_dtype_is_float(x->t.dtype) ||
        !npu_dtype_is_float(y->t.dtype))
        return why_set(w, "only float tensors (fp16 on the NPU)");
    bool cx = dl_is_const(x), cy = dl_is_const(y);
    if (cx && cy)
        return why_set(w, "both operands are constants (folding's job)");
    enum npu_op op = n->op;
    struct vmap vm;
    struct npu_dpu_map xm, ym, zm;
    struct npu_dpu_pass p;
    memset(&p, 0, sizeof(p));

    if (op == NPU_OP_POW) {
        /* x^2 = x * x (EW MUL with the input as its own operand) */
        if (!cy || npu_value_numel(y) != 1 || npu_value_get_f64(y, 0) != 2.0 ||
            !same_shape(&x->t, &out->t))
            return why_set(w, "Pow only with the constant exponent 2");
        if (!dl_view(b, x, &vm) || !dl_input(b, x, &vm, &xm, w))
            return NPU_ERR_UNSUPPORTED;
        p.in = xm;
        p.out = dl_map(rkd_result(), &vm);
        p.st.ew.op = NPU_DPU_EW_MUL;
        p.st.ew.operand = xm;
        rkd_pass(b, &p);
        return dl_finish(b, 0, &vm);
    }
    enum npu_dpu_ew_op ew = ew_of(op);
    if (ew == NPU_DPU_EW_NONE)
        return why_set(w, "not an elementwise op of the DPU");

    if (!cx && !cy) {
        if (!same_shape(&x->t, &out->t) || !same_shape(&y->t, &out->t))
            return why_set(w, "broadcasting between two activations is not lowered");
        if (!dl_view(b, x, &vm))
            return why_set(w, "no NC1HWC2 view");
        if (!dl_input(b, x, &vm, &xm, w) || !dl_input(b, y, &vm, &ym, w))
            return NPU_ERR_UNSUPPORTED;
        p.in = xm;
        p.st.ew.op = ew;
        p.st.ew.operand = ym;
        p.out = dl_map(rkd_result(), &vm);
        rkd_pass(b, &p);
        return dl_finish(b, 0, &vm);
    }

    /* one constant operand */
    bool swapped = cx;
    struct npu_value *a = swapped ? y : x, *c = swapped ? x : y;
    if (!same_shape(&a->t, &out->t))
        return why_set(w, "the activation operand is broadcast (not lowered)");
    if (!dl_view(b, a, &vm) || !dl_input(b, a, &vm, &xm, w))
        return NPU_ERR_UNSUPPORTED;
    int64_t nel = npu_value_numel(out);
    float *full = dl_bcast_const(c, out->t.ndim, out->t.dims);
    if (!full)
        return why_set(w, "constant operand does not broadcast to the output");
    float *chv = malloc(vm.view[0] * sizeof(float));
    if (!chv) {
        free(full);
        return NPU_ERR_NOMEM;
    }
    int kind = dl_const_kind(full, nel, &vm, chv);
    zm = dl_map(rkd_result(), &vm);
    p.out = zm;
    p.in = xm;
    bool div_by_x = op == NPU_OP_DIV && swapped;
    for (uint32_t i = 0; kind < 2 && op == NPU_OP_DIV && !swapped && i < vm.view[0]; i++)
        if (chv[i] == 0)
            kind = 2; /* x / 0: let the DPU divide (inf / nan as the CPU gets them) */
    /* max(x, c) = relu(x - c) + c is NaN for an infinite c (the -inf of a reduce's init that
     * jnp.max(..., initial=-inf) applies again) and loses x when |c| dwarfs it: such constants
     * go as an fp16 map to EW MAX / MIN (beyond fp16's range they become +-inf, which orders
     * the same against every fp16 x) */
    for (uint32_t i = 0; kind < 2 && (op == NPU_OP_MAX || op == NPU_OP_MIN) && i < vm.view[0]; i++)
        if (!(fabsf(chv[i]) <= 65504.0f))
            kind = 2;
    if (kind < 2 && !div_by_x) {
        bool unused;
        const_stages(b, op, swapped, kind, chv, vm.view[0], &p.st, &unused);
    } else {
        /* a constant map in NPU_BUF_WEIGHTS (fp16): EW with the constant as operand, or as
         * the main input when the constant comes first (c - x, c / x) */
        struct npu_dpu_map cm = dl_map_const(b, "k", full, nel, &vm);
        if (swapped && (op == NPU_OP_SUB || op == NPU_OP_DIV)) {
            p.in = cm;
            p.st.ew.operand = xm;
        } else {
            p.st.ew.operand = cm;
        }
        p.st.ew.op = ew;
    }
    free(full);
    free(chv);
    rkd_pass(b, &p);
    return dl_finish(b, 0, &vm);
}
