// SPDX-License-Identifier: MIT
/*
 * conv-int16.c: the int16 pipeline of the conv/matmul lowering (w16a16i, issue 13):
 * QLinearConv / QLinearMatMul with int16 activations, weights and result, symmetric
 * (every zero point 0). On the NPU (facts §2.9, §3):
 *
 *   CNA / CORE IN = PROC = int16 (precision 1), kernel groups of 16, DATAIN_CHANNEL
 *     padded to 8; products summed in the 48-bit accumulator;
 *   CORE CLIP_TRUNCATE = c: the sums shifted right by c (ROUND_TYPE 0) and saturated to
 *     int32 before the DPU, c the least shift for which the worst case of the layer's
 *     weights (sum |w| x 32768) fits int32;
 *   DPU IN = PROC = OUT = int16: BS adds the int32 bias (round(b / 2^c)), then the int8
 *     path's requantisation with the scale x_scale x w_scale / y_scale x 2^c (OUT_CVT
 *     multiplier and shift, BN per-channel multiplier), saturated to int16.
 *
 * Evidence: int16 x int16 -> int32 GEMM is hardware-tested ([AB] gemm_int16.py, facts
 * §2.9); CLIP_TRUNCATE != 0 and the int16 -> int16 requantisation are TRM-inferred only
 * (ledger level T).
 */
#include <math.h>

#include "conv-priv.h"

bool
conv_int16_check(const struct npu_node *n, struct conv_src *s, char *why, size_t wl)
{
    const struct npu_value *x = npu_node_in(n, s->xi), *w = npu_node_in(n, s->wi);
    bool x16 = x && x->t.dtype == NPU_DTYPE_INT16, w16 = w && w->t.dtype == NPU_DTYPE_INT16;
    bool y16 = n->out[0]->t.dtype == NPU_DTYPE_INT16;
    if (!x16 && !w16 && !y16)
        return true;
    if (!s->qlinear || !x16 || !w16 || !y16)
        return npu_be_refuse(why, wl,
                             "int16 needs QLinearConv / QLinearMatMul with int16 input, weights "
                             "and result");
    if (s->x_zp || s->y_zp)
        return npu_be_refuse(why, wl, "int16 zero points must be 0 (symmetric w16a16i)");
    if (s->w_zp)
        for (int64_t i = 0; i < npu_value_numel(s->w_zp); i++)
            if (npu_value_get_i64(s->w_zp, i))
                return npu_be_refuse(why, wl, "int16 weight zero points must be 0");
    s->g.in_dt = NPU_DTYPE_INT16;
    s->g.out_dt = NPU_DTYPE_INT16;
    s->g.part_dt = NPU_DTYPE_INT32;
    return true;
}

bool
conv_int16_clip(const struct conv_src *s, const float *wd, uint32_t *clip)
{
    uint64_t per = (uint64_t)(s->g.depthwise ? 1 : s->g.c) * s->g.kh * s->g.kw;
    double worst = 0;
    for (uint32_t k = 0; k < s->g.k; k++) {
        double sum = 0;
        for (uint64_t i = 0; i < per; i++)
            sum += fabs((double)wd[k * per + i]);
        worst = fmax(worst, sum * 32768.0);
    }
    /* facts §3: the int16 accumulator holds 48 bits */
    if (worst >= ldexp(1.0, 47))
        return false;
    uint32_t c = 0;
    while (worst / ldexp(1.0, (int)c) > 2147483647.0 - 1)
        c++;
    *clip = c;
    return true;
}

void
conv_int16_shift_bias(int32_t *b, uint32_t n, uint32_t clip)
{
    if (!clip)
        return;
    for (uint32_t i = 0; i < n; i++) {
        /* round half to even, as the accumulator's shift (ROUND_TYPE 0) */
        double q = rint(ldexp((double)b[i], -(int)clip));
        b[i] = (int32_t)q;
    }
}
