/* SPDX-License-Identifier: MIT */
/*
 * conv-call.c: npu_conv_emit_call, conv tasks for the composite lowerings: a conv given
 * by struct npu_conv_call (npu-be.h), tiled by the conv tiler and emitted as CNA + CORE +
 * DPU tasks straight into a stream, without an rk.Conv node.
 */
#include <math.h>
#include <string.h>

#include "conv-priv.h"

enum npu_status
npu_conv_emit_call(struct npu_stream *s, const struct npu_conv_call *c, double *modeled_s)
{
    static const struct npu_backend_options defaults;
    struct rk_conv_geom g;
    memset(&g, 0, sizeof(g));
    if (!c->c || !c->h || !c->w_px || !c->k || !c->kh || !c->kw || !c->sy || !c->sx || c->kh > 32 ||
        c->kw > 32 || c->sy > 7 || c->sx > 7 || c->pad_top > 15 || c->pad_left > 15 ||
        c->pad_bottom > 15 || c->pad_right > 15 || c->c > 8192 || c->k > 8192 || c->h > 8192 ||
        c->w_px > MAX_WIDTH || (c->out_dt != NPU_DTYPE_FP16 && c->out_dt != NPU_DTYPE_FP32) ||
        c->act < 0 || c->act > 2 || (c->w.offset & 15) || (c->y.offset & 15)) {
        npu_err(NPU_BE_DOM, "npu_conv_emit_call: geometry outside the hardware fields");
        return NPU_ERR_INVALID;
    }
    g.c = c->c;
    g.h = c->h;
    g.w = c->w_px;
    g.k = c->k;
    g.kh = c->kh;
    g.kw = c->kw;
    g.sy = c->sy;
    g.sx = c->sx;
    g.dy = g.dx = 1;
    g.pt = c->pad_top;
    g.pl = c->pad_left;
    int64_t eh = (int64_t)c->h + c->pad_top + c->pad_bottom - c->kh;
    int64_t ew = (int64_t)c->w_px + c->pad_left + c->pad_right - c->kw;
    if (eh < 0 || ew < 0 || eh / c->sy + 1 > 8192 || ew / c->sx + 1 > MAX_WIDTH)
        return NPU_ERR_INVALID;
    g.oh = (uint32_t)(eh / c->sy + 1);
    g.ow = (uint32_t)(ew / c->sx + 1);
    g.in_dt = NPU_DTYPE_FP16;
    g.out_dt = c->out_dt;
    g.part_dt = NPU_DTYPE_FP32;
    g.bias = c->has_bias;
    g.act = c->act == 1 ? RK_ACT_RELU : c->act == 2 ? RK_ACT_CLIP : RK_ACT_NONE;
    g.act_lo = c->act_min;
    g.act_hi = c->act_max;
    if (g.act == RK_ACT_CLIP && (!isfinite(g.act_lo) || !(g.act_hi >= g.act_lo)))
        return NPU_ERR_INVALID;
    if (g.act == RK_ACT_CLIP && g.act_lo != 0 && c->has_bias) {
        npu_err(NPU_BE_DOM, "npu_conv_emit_call: clip with a non-zero minimum and a bias needs "
                            "the bias array shifted by -act_min (rk.Conv does it; pass "
                            "bias - act_min)");
    }
    struct plan p;
    if (!conv_plan_conv1(&g, 1, &defaults, true, &p)) {
        npu_err(NPU_BE_DOM, "npu_conv_emit_call: no tiling of %ux%ux%u -> %u fits the CBUF", c->c,
                c->h, c->w_px, c->k);
        return NPU_ERR_UNSUPPORTED;
    }
    /* kernel tiles: their slice of the one packed set (kernel groups are
     * contiguous, facts §2.10) */
    uint64_t per = rk_weight_set_bytes(&g, 1, g.c);
    struct rk_emit_addrs a;
    memset(&a, 0, sizeof(a));
    a.x = c->x;
    a.w = c->w;
    a.bias = c->bias;
    a.out[0] = c->y;
    double sec = 0;
    enum npu_status st = NPU_OK;
    for (uint32_t i = 0; i < p.n && !st; i++) {
        p.t[i].woff = (uint32_t)(p.t[i].k0 * per);
        rk_emit_task(s, &g, &p.t[i], &a);
        sec += rk_task_seconds(&g, &p.t[i], NULL, NULL);
        st = npu_stream_status(s);
    }
    conv_plan_free(&p);
    if (modeled_s)
        *modeled_s = sec;
    return st;
}
