/* SPDX-License-Identifier: MIT */
/*
 * dpu-qdq.c: QuantizeLinear (float -> int8) and DequantizeLinear (int8 -> float) with a
 * per-tensor scale and zero point on the DPU, one flying pass each, so that a quantised
 * chain (QuantizeLinear -> QLinearConv / QLinearMatMul -> DequantizeLinear -> float ops)
 * stays in one NPU job instead of crossing to the CPU around every int8 product.
 *
 *   quantise:   fp16 in, BN: x * (1 / scale) (fp32 per-channel operand) + zero point,
 *               int8 out (rounded half to even, saturated);
 *   dequantise: int8 in, BS: x - zero point, BN: * scale (fp32 per-channel operand),
 *               fp16 out.
 * Both precision combinations are TRM-inferred (facts §2.9; evidence level T,
 * docs/npu-dpu-ops.md). int8 values are NC1HWC2 with 16 channels per atom, the layout the
 * int8 convolution reads and writes. uint8, per-axis scales and blocked quantisation stay
 * on the CPU.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dpu-low.h"
#include "npu-be.h"

/* Off: Q / DQ are refused (the chain runs as before), for the tests' before / after. */
int npu_dpu_qdq = 1;

/* Input v (int8, on the NPU or a host value) in view vm as an int8 map. */
static bool
int8_input(struct rkd *b, struct npu_value *v, const struct vmap *vm, struct npu_dpu_map *m,
           struct why *w)
{
    struct npu_value *nv = NULL;
    if (b->cx && !(nv = dl_lower_input(b, v, vm, NPU_DTYPE_INT8, " as int8", w)))
        return false;
    *m = npu_dpu_map_packed(rkd_input(b, nv), NPU_DPU_INT8, vm->view[0], vm->view[1], vm->view[2]);
    if (nv && !npu_rk_packed(nv))
        m->surf = npu_rk_surf(nv);
    return true;
}

static bool
scalar_const(const struct npu_value *v)
{
    return dl_is_const(v) && npu_value_numel(v) == 1;
}

enum npu_status
dl_lower_qdq(struct rkd *b, struct npu_node *n, struct why *w)
{
    bool q = n->op == NPU_OP_QUANTIZE_LINEAR;
    const char *op = npu_op_name(n->op);
    if (!npu_dpu_qdq)
        return why_set(w, "%s on the NPU is switched off (npu_dpu_qdq = 0)", op);
    if (n->nin < 2 || !n->in[0] || !n->in[1] || n->nout != 1)
        return why_set(w, "%s needs an input and a scale", op);
    struct npu_value *x = n->in[0], *sc = n->in[1], *zp = n->nin > 2 ? n->in[2] : NULL;
    struct npu_value *y = n->out[0];
    if (npu_node_int(n, "block_size", 0))
        return why_set(w, "%s with block_size (blocked quantisation) runs on the CPU", op);
    /* 4-bit results (ONNX INT4/UINT4, held one a byte: the importer's qbits = 4) saturate
     * to [-8, 7]; the DPU's int8 output converter saturates to the int8 range only */
    if (npu_node_int(n, "qbits", 8) != 8)
        return why_set(w, "%s to %d bits runs on the CPU (the NPU path saturates to int8)", op,
                       (int)npu_node_int(n, "qbits", 8));
    if (!scalar_const(sc))
        return why_set(w,
                       "%s scale '%s' is not a scalar constant: the NPU path takes "
                       "per-tensor quantisation only",
                       op, sc->name);
    double s = npu_value_get_f64(sc, 0);
    if (!(s > 0) || !isfinite(s) || !isfinite(1.0 / s) || !isfinite((float)(1.0 / s)))
        return why_set(w, "%s scale %g is not a positive finite float with a finite inverse", op,
                       s);
    const struct npu_value *iv = q ? y : x, *fv = q ? x : y;
    if (iv->t.dtype != NPU_DTYPE_INT8)
        return why_set(w, "%s of %s: the NPU path handles int8 only", op,
                       npu_dtype_name(iv->t.dtype));
    if (fv->t.dtype != NPU_DTYPE_FP32 && fv->t.dtype != NPU_DTYPE_FP16)
        return why_set(w, "%s of %s: fp32 / fp16 float side only", op, npu_dtype_name(fv->t.dtype));
    double z = 0;
    if (zp) {
        if (!scalar_const(zp) || zp->t.dtype != NPU_DTYPE_INT8)
            return why_set(w, "%s zero point '%s' is not a scalar int8 constant", op, zp->name);
        z = npu_value_get_f64(zp, 0);
    }
    struct vmap vm;
    if (!dl_view(b, x, &vm))
        return why_set(w, "no NC1HWC2 view");
    struct npu_dpu_map xm;
    if (q ? !dl_input(b, x, &vm, &xm, w) : !int8_input(b, x, &vm, &xm, w))
        return NPU_ERR_UNSUPPORTED;
    uint32_t C = vm.view[0];
    struct npu_dpu_pass p;
    memset(&p, 0, sizeof(p));
    p.in = xm;
    p.out = npu_dpu_map_packed(rkd_result(), q ? NPU_DPU_INT8 : NPU_DPU_FP16, C, vm.view[1],
                               vm.view[2]);
    float *cv = malloc(sizeof(float) * C);
    if (!cv)
        return NPU_ERR_NOMEM;
    for (uint32_t c = 0; c < C; c++)
        cv[c] = (float)(q ? 1.0 / s : s);
    p.st.bn.mul = NPU_DPU_SRC_MEM;
    p.st.bn.mul_mem = dl_chan_const(b, q ? "inv_scale" : "scale", cv, C);
    free(cv);
    if (z != 0) {
        if (q) {
            /* round(x / s) + z = round(x / s + z) for an integer z */
            p.st.bn.alu = NPU_DPU_SRC_REG;
            p.st.bn.alu_value = (float)z;
        } else {
            p.st.bs.alu = NPU_DPU_SRC_REG;
            p.st.bs.alu_minus = true;
            p.st.bs.alu_value = (float)z;
        }
    }
    rkd_pass(b, &p);
    if (!q)
        return dl_finish(b, 0, &vm);
    memcpy(b->result_view, &vm, sizeof(vm));
    b->have_result = true;
    return rkd_finish(b, 0, NPU_DTYPE_INT8, y->t.ndim, y->t.dims, vm.view, vm.order);
}
