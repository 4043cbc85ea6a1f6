/* SPDX-License-Identifier: MIT */
/*
 * npu-conv-rk.c: rk.Conv's attribute schema: decoding a node into the conv geometry and
 * its tiles (rk_conv_decode) with every check the emitter relies on (the text parser runs
 * it on untrusted input), the node's inference, and the number of tasks a node emits
 * (npu_backend_node_tasks).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "npu-conv-priv.h"

/* K of an rk.Conv from its view attribute (0 when absent). */
static int64_t
g_k_of(const struct npu_node *n)
{
    int64_t v[3];
    return npu_attr_ints_n(n, "view", v, 3) ? v[0] : 0;
}

static enum npu_status
bad(const struct npu_node *n, const char *what)
{
    npu_err(NPU_BE_DOM, "node '%s' (rk.Conv): %s", n->name, what);
    return NPU_ERR_INVALID;
}

static bool
get2(const struct npu_node *n, const char *name, uint32_t *a, uint32_t *b, uint32_t def)
{
    int64_t v[2];
    if (!npu_node_attr(n, name)) {
        *a = *b = def;
        return true;
    }
    if (!npu_attr_ints_n(n, name, v, 2) || v[0] < 0 || v[1] < 0 || v[0] > 65535 || v[1] > 65535)
        return false;
    *a = (uint32_t)v[0];
    *b = (uint32_t)v[1];
    return true;
}

enum npu_status
rk_conv_decode(const struct npu_node *n, struct rk_conv_geom *g, struct rk_tile **tiles,
               uint32_t *n_tiles)
{
    memset(g, 0, sizeof(*g));
    if (tiles)
        *tiles = NULL;
    g->residual = npu_node_int(n, "residual", 0) != 0;
    const int nin = n->nin - (g->residual ? 1 : 0);
    if (nin < 2 || nin > 4 || !n->in[0] || !n->in[1] || n->nout < 1 || n->nout > 3 ||
        (g->residual && !n->in[n->nin - 1]))
        return bad(n, "takes (x, packed weights[, bias[, multipliers]][, residual]) and has 1 to "
                      "3 outputs");
    const struct npu_value *x = n->in[0], *w = n->in[1];
    const struct npu_value *b = nin > 2 ? n->in[2] : NULL, *qm = nin > 3 ? n->in[3] : NULL;
    uint32_t iv[3], ov[3];
    if (!npu_rk_view(x, iv))
        return bad(n, "input has no NC1HWC2 view");
    g->c = iv[0];
    g->h = iv[1];
    g->w = iv[2];
    g->in_dt = x->t.dtype;
    if (g->in_dt != NPU_DTYPE_FP16 && g->in_dt != NPU_DTYPE_INT8 && g->in_dt != NPU_DTYPE_INT16)
        return bad(n, "input must be f16, i8 or i16 in NPU memory");
    const bool i16 = g->in_dt == NPU_DTYPE_INT16;
    if (w->kind != NPU_VALUE_CONST || w->t.dtype != NPU_DTYPE_UINT8 || w->t.ndim != 1)
        return bad(n, "input 1 must be a constant u8[] of packed weights");
    g->q_deq = npu_node_int(n, "q_deq", 0) != 0;
    if (g->q_deq && g->in_dt != NPU_DTYPE_INT8)
        return bad(n, "q_deq needs an int8 input");
    if (b &&
        (b->kind != NPU_VALUE_CONST || b->t.ndim != 1 ||
         b->t.dtype != (g->in_dt == NPU_DTYPE_FP16 || g->q_deq ? NPU_DTYPE_FP32 : NPU_DTYPE_INT32)))
        return bad(n, "bias must be a constant f32[] (fp16 pipeline, q_deq) or i32[] (int8)");
    g->bias = b != NULL;
    if (b && npu_value_numel(b) < ((int64_t)g_k_of(n) + 63) / 64 * 64)
        return bad(n, "bias must hold K padded to 64 entries (BRDMA reads padded channels)");
    const char *dts = npu_node_string(n, "dtype", NULL);
    g->out_dt = dts ? npu_dtype_from_name(dts) : NPU_DTYPE_UNDEFINED;
    if (g->q_deq                     ? g->out_dt != NPU_DTYPE_FP16
        : g->in_dt == NPU_DTYPE_FP16 ? (g->out_dt != NPU_DTYPE_FP16 && g->out_dt != NPU_DTYPE_FP32)
        : i16 ? (g->out_dt != NPU_DTYPE_INT16 && g->out_dt != NPU_DTYPE_INT32)
              : (g->out_dt != NPU_DTYPE_INT8 && g->out_dt != NPU_DTYPE_INT32))
        return bad(n, "dtype must be f16/f32 after an f16 input, i8/i32 after i8, i16/i32 after "
                      "i16 (facts §2.9), f16 with q_deq");
    int64_t view[3];
    if (!npu_attr_ints_n(n, "view", view, 3) || view[0] < 1 || view[1] < 1 || view[2] < 1 ||
        view[0] > 8192 || view[1] > 8192 || view[2] > 8192)
        return bad(n, "needs view=[K, Ho, Wo] (each 1..8192)");
    ov[0] = (uint32_t)view[0];
    ov[1] = (uint32_t)view[1];
    ov[2] = (uint32_t)view[2];
    g->k = ov[0];
    g->oh = ov[1];
    g->ow = ov[2];
    uint32_t pads[4];
    int64_t p4[4] = {0, 0, 0, 0};
    if (npu_node_attr(n, "pads") && !npu_attr_ints_n(n, "pads", p4, 4))
        return bad(n, "pads must have 4 entries [top, left, bottom, right]");
    for (int i = 0; i < 4; i++) {
        if (p4[i] < 0 || p4[i] > 15)
            return bad(n, "pads must be 0..15 (PAD_CON0 fields, facts §2.3)");
        pads[i] = (uint32_t)p4[i];
    }
    g->pt = pads[0];
    g->pl = pads[1];
    if (!get2(n, "kernel", &g->kh, &g->kw, 1) || !get2(n, "stride", &g->sy, &g->sx, 1) ||
        !get2(n, "dilation", &g->dy, &g->dx, 1))
        return bad(n, "kernel / stride / dilation must be [y, x] pairs");
    if (g->kh < 1 || g->kw < 1 || g->kh > 32 || g->kw > 32)
        return bad(n, "kernel sizes must be 1..32 (WEIGHT_SIZE2 fields)");
    if (g->sy < 1 || g->sx < 1 || g->sy > 7 || g->sx > 7)
        return bad(n, "strides must be 1..7 (CONV_CON3 fields)");
    if (g->dy != 1 || g->dx != 1)
        return bad(n, "dilation is unverified on the hardware (facts §6.14)");
    g->depthwise = npu_node_int(n, "depthwise", 0) != 0;
    if (!strcmp(npu_rk_layout(x), "small_c")) {
        /* facts §2.10 small-channel input: 1..4 fp16 channels, packed pixels */
        if (g->c < 1 || g->c > 4 || g->in_dt != NPU_DTYPE_FP16 || g->depthwise)
            return bad(n, "small-channel input needs 1..4 fp16 channels (not depthwise)");
        g->argb = g->c;
    }
    if (g->depthwise && g->k != g->c)
        return bad(n, "depthwise needs as many output as input channels");
    /* output size: (H + pt + pb - kh)/sy + 1 */
    int64_t eh = (int64_t)g->h + pads[0] + pads[2] - ((int64_t)(g->kh - 1) * g->dy + 1);
    int64_t ew = (int64_t)g->w + pads[1] + pads[3] - ((int64_t)(g->kw - 1) * g->dx + 1);
    if (eh < 0 || ew < 0 || eh / g->sy + 1 != g->oh || ew / g->sx + 1 != g->ow)
        return bad(n, "output view does not match input, kernel, stride and pads");
    const char *act = npu_node_string(n, "act", "none");
    if (!strcmp(act, "none"))
        g->act = RK_ACT_NONE;
    else if (!strcmp(act, "relu"))
        g->act = RK_ACT_RELU;
    else if (!strcmp(act, "clip"))
        g->act = RK_ACT_CLIP;
    else
        return bad(n, "act must be none, relu or clip");
    g->act_lo = npu_node_float(n, "act_min", 0.0f);
    g->act_hi = npu_node_float(n, "act_max", INFINITY);
    if (g->act == RK_ACT_CLIP && (!isfinite(g->act_lo) || isnan(g->act_hi) ||
                                  g->act_hi < g->act_lo || g->in_dt != NPU_DTYPE_FP16))
        return bad(n, "clip needs finite act_min <= act_max (fp16 pipeline)");
    const char *style = npu_node_string(n, "style", "rknn");
    if (!strcmp(style, "mtx"))
        g->mtx = true;
    else if (strcmp(style, "rknn"))
        return bad(n, "style must be rknn or mtx");
    int64_t qc[3];
    g->q_scale = 1;
    if (npu_node_attr(n, "q_cvt")) {
        if (!npu_attr_ints_n(n, "q_cvt", qc, 3) || qc[0] < 1 || qc[0] > 32767 || qc[1] < 0 ||
            qc[1] > 62 || qc[2] < INT32_MIN || qc[2] > INT32_MAX ||
            (g->in_dt != NPU_DTYPE_INT8 && !i16))
            return bad(n, "q_cvt must be [scale 1..32767, shift 0..62, offset] (int8 / int16 "
                          "pipeline)");
        g->q_scale = (uint32_t)qc[0];
        g->q_shift = (uint32_t)qc[1];
        g->q_offset = (int32_t)qc[2];
    }
    if (g->q_deq) {
        if (!qm || qm->kind != NPU_VALUE_CONST || qm->t.dtype != NPU_DTYPE_FP32 ||
            npu_value_numel(qm) < (g_k_of(n) + 63) / 64 * 64 || npu_node_attr(n, "q_cvt") ||
            g->act != RK_ACT_NONE || n->nout != 1)
            return bad(n, "q_deq needs per-channel scales (constant f32[K padded to 64]), no "
                          "q_cvt, act or partial sums");
        g->q_per_channel = true;
        g->q_lo = npu_node_float(n, "q_lo", 0.0f);
        g->q_hi = npu_node_float(n, "q_hi", INFINITY);
        g->q_bs_relux = npu_node_float(n, "q_bs_relux", 0.0f);
        g->q_lo_ew = npu_node_int(n, "q_lo_ew", 0) != 0;
        if (!b || !isfinite(g->q_lo) || !isfinite(g->q_hi) || g->q_lo > 0 || g->q_hi <= g->q_lo ||
            !isfinite(g->q_bs_relux) || g->q_bs_relux < 0 ||
            (g->q_lo != 0 && g->q_bs_relux == 0 && !g->q_lo_ew))
            return bad(n, "q_deq needs a bias, finite q_lo <= 0 < q_hi and q_bs_relux > 0 "
                          "(or q_lo_ew) when q_lo < 0");
        if (g->q_lo_ew &&
            (g->q_lo == 0 || g->q_bs_relux > 0 || !g->residual || npu_node_int(n, "surf", 0)))
            return bad(n, "q_lo_ew needs q_lo < 0, no q_bs_relux, the lower bound as the residual "
                          "operand and packed surfaces");
    } else if (qm) {
        int64_t sh = npu_node_int(n, "q_chshift", -1);
        if (qm->kind != NPU_VALUE_CONST || qm->t.dtype != NPU_DTYPE_INT32 ||
            npu_value_numel(qm) < (g_k_of(n) + 63) / 64 * 64 || sh < 0 || sh > 63 ||
            !(i16 ? g->out_dt == NPU_DTYPE_INT16
                  : g->in_dt == NPU_DTYPE_INT8 && g->out_dt == NPU_DTYPE_INT8))
            return bad(n, "per-channel multipliers: constant i32[K padded to 64], q_chshift "
                          "0..63, int8 result");
        g->q_per_channel = true;
        g->q_chshift = (uint32_t)sh;
    }
    int64_t pv = npu_node_int(n, "pad_value", 0);
    if (pv && (g->in_dt != NPU_DTYPE_INT8 || pv < -128 || pv > 127))
        return bad(n, "pad_value must be 0 (fp16: only 0 is verified, facts §5.2) or int8");
    g->pad_value = (int32_t)pv;
    const char *pdt = npu_node_string(n, "partial", NULL);
    g->part_dt = g->in_dt == NPU_DTYPE_INT8 || i16 ? NPU_DTYPE_INT32 : NPU_DTYPE_FP32;
    int64_t qclip = npu_node_int(n, "q_clip", 0);
    if (qclip < 0 || qclip > 31 || (qclip && !i16))
        return bad(n, "q_clip must be 0..31 (CORE CLIP_TRUNCATE), int16 pipeline only");
    g->q_clip = (uint32_t)qclip;
    if (pdt) {
        g->part_dt = npu_dtype_from_name(pdt);
        if (g->in_dt == NPU_DTYPE_INT8 || i16
                ? g->part_dt != NPU_DTYPE_INT32
                : (g->part_dt != NPU_DTYPE_FP32 && g->part_dt != NPU_DTYPE_FP16))
            return bad(n, "partial must be f32/f16 (fp16 pipeline) or i32 (int8)");
    }
    for (int i = 1; i < n->nout; i++) {
        const struct npu_tensor *t = &n->out[i]->t;
        if (t->dtype != g->part_dt || t->ndim != 4 || t->dims[0] != 1 || t->dims[1] != g->k ||
            t->dims[2] != g->oh || t->dims[3] != g->ow)
            return bad(n, "partial-sum outputs must be [1, K, Ho, Wo] of the partial dtype");
    }
    int64_t lid = npu_node_int(n, "lut", 0);
    if (lid) {
        /* a DPU LUT function table: input scale exact in the fp16 BN MUL operand, no
         * input offset (BN would add it once per channel block) */
        const struct npu_dpu_lut *l =
            lid > 0 && lid < 0x10000 ? npu_dpu_lut_get((uint32_t)lid) : NULL;
        if (!l || l->in_offset != 0 || !npu_dpu_fp16_exact(l->in_scale) ||
            (g->in_dt != NPU_DTYPE_FP16 && !g->q_deq) || g->act != RK_ACT_NONE || g->mtx ||
            (g->residual && !g->q_lo_ew))
            return bad(n, "lut must name a function table of the fp16 pipeline (or q_deq), "
                          "without act, residual or mtx style");
        g->lut_id = (uint32_t)lid;
    }
    /* inputs are read with packed surfaces; the result may have padded ones */
    if (!npu_rk_packed(x) || (g->residual && !g->q_lo_ew && !npu_rk_packed(n->in[n->nin - 1])))
        return bad(n, "inputs must have packed surfaces");
    g->out_surf = g->ow * g->oh;
    int64_t osurf = npu_node_int(n, "surf", 0);
    if (osurf) {
        if (osurf < (int64_t)g->ow * g->oh || osurf > (int64_t)(g->oh + 32) * g->ow || g->mtx)
            return bad(n, "surf must be Wo x (Ho .. Ho + 32) atoms (not with mtx style)");
        g->out_surf = (uint32_t)osurf;
    }
    if (g->q_lo_ew) {
        /* the lower bound: a constant f32 covering the result's NC1HWC2 bytes */
        const struct npu_value *r = n->in[n->nin - 1];
        const uint32_t rv[3] = {g->k, g->oh, g->ow};
        if (r->kind != NPU_VALUE_CONST || r->t.dtype != NPU_DTYPE_FP32 ||
            (uint64_t)npu_value_numel(r) * 4 < npu_rk_nc1hwc2_bytes(NPU_DTYPE_FP32, rv) || g->mtx)
            return bad(n, "q_lo_ew's operand must be a constant f32 of the result's NC1HWC2 "
                          "size");
        g->res_dt = NPU_DTYPE_FP32;
    } else if (g->residual) {
        const struct npu_value *r = n->in[n->nin - 1];
        uint32_t rv[3];
        if (!npu_rk_value(r) || !npu_rk_view(r, rv) || rv[0] != g->k || rv[1] != g->oh ||
            rv[2] != g->ow || strcmp(npu_rk_layout(r), "nc1hwc2") ||
            (r->t.dtype != NPU_DTYPE_FP16 && r->t.dtype != NPU_DTYPE_FP32) ||
            (g->in_dt != NPU_DTYPE_FP16 && !g->q_deq) || g->mtx)
            return bad(n, "residual must be an NC1HWC2 f16 / f32 NPU value in the output's view "
                          "(fp16 pipeline or q_deq)");
        g->res_dt = r->t.dtype;
    }

    /* ---- tiles */
    size_t cnt;
    const int64_t *tv = npu_node_ints(n, "tiles", &cnt);
    if (!tv || !cnt || cnt % RKT_FIELDS || cnt / RKT_FIELDS > 65535)
        return bad(n, "tiles must hold a multiple of 11 ints (docs/npu-backend.md)");
    uint32_t nt = (uint32_t)(cnt / RKT_FIELDS);
    if (!tiles)
        return NPU_OK;
    struct rk_tile *t = calloc(nt, sizeof(*t));
    if (!t)
        return NPU_ERR_NOMEM;
    const uint32_t es = rk_esize(g->in_dt), c2 = 16 / es, kg = rk_kernel_group(g);
    const uint64_t wbytes = (uint64_t)npu_value_numel(w);
    for (uint32_t i = 0; i < nt; i++) {
        const int64_t *f = tv + (size_t)i * RKT_FIELDS;
        for (int j = 0; j < RKT_FIELDS; j++)
            if (f[j] < (j == RKT_SRC ? -1 : 0) || f[j] > UINT32_MAX / 2)
                goto badtile;
        struct rk_tile *x1 = &t[i];
        x1->oy0 = (uint32_t)f[RKT_OY0];
        x1->oh = (uint32_t)f[RKT_OH];
        x1->k0 = (uint32_t)f[RKT_K0];
        x1->nk = (uint32_t)f[RKT_NK];
        x1->c0 = (uint32_t)f[RKT_C0];
        x1->nc = (uint32_t)f[RKT_NC];
        x1->bank = (uint32_t)f[RKT_BANK];
        x1->flags = (uint32_t)f[RKT_FLAGS];
        x1->woff = (uint32_t)f[RKT_WOFF];
        x1->src = (int32_t)f[RKT_SRC];
        x1->dst = (int32_t)f[RKT_DST];
        if (!x1->oh || x1->oy0 + x1->oh > g->oh || !x1->nk || x1->k0 + x1->nk > g->k || !x1->nc ||
            x1->c0 + x1->nc > g->c || x1->bank < 1 || x1->bank > 11 || x1->flags > 15 ||
            x1->src == 0 || x1->src >= n->nout || x1->dst >= n->nout || x1->src == x1->dst)
            goto badtile;
        /* channel windows start on atoms; kernel tiles on kernel groups so the
         * packed sets and output surfaces line up (facts §2.10) */
        if ((g->argb && (x1->c0 || x1->nc != g->c)) || x1->c0 % c2 ||
            (x1->k0 % kg && !g->depthwise) ||
            (g->depthwise && (x1->k0 != x1->c0 || x1->nk != x1->nc || x1->c0 % 32)))
            goto badtile;
        if (x1->woff % 16 || x1->woff + rk_weight_set_bytes(g, x1->nk, x1->nc) > wbytes)
            goto badtile;
        if ((x1->flags & RKT_F_BIAS) && !g->bias)
            goto badtile;
        if (g->q_per_channel && (x1->src > 0 || x1->dst > 0))
            goto badtile; /* BN (the multipliers) runs before the EW add */
        if (x1->src > 0 && (x1->flags & RKT_F_ACT) && g->act == RK_ACT_CLIP && g->act_lo != 0)
            goto badtile; /* after an EW add only ReLU / ReLU-X are left */
        if (g->mtx && (g->depthwise || g->kh != 1 || g->kw != 1 || g->w != 1 || nt != 1 ||
                       x1->src > 0 || conv_uses_rdma(g, x1)))
            goto badtile;
        /* the residual joins the first block, the activation runs after the last block's
         * add: only without an activation do they commute */
        if (g->residual && x1->dst > 0 && g->act != RK_ACT_NONE)
            goto badtile;
    }
    *tiles = t;
    *n_tiles = nt;
    return NPU_OK;
badtile:
    free(t);
    return bad(n, "a tile is out of range or misaligned (tiles attribute)");
}

enum npu_status
npu_rk_conv_infer(struct npu_graph *gr, struct npu_node *n)
{
    (void)gr;
    struct rk_conv_geom g;
    enum npu_status st;
    /* output 0 first: decode reads the partial outputs' types */
    size_t cnt;
    const int64_t *shape = npu_node_ints(n, "shape", &cnt);
    const char *dts = npu_node_string(n, "dtype", NULL);
    if (!shape || cnt < 1 || cnt > NPU_MAX_DIMS || !dts)
        return bad(n, "needs shape (logical output dims) and dtype");
    struct npu_tensor *y = &n->out[0]->t;
    y->dtype = npu_dtype_from_name(dts);
    y->ndim = (int)cnt;
    for (size_t i = 0; i < cnt; i++) {
        if (shape[i] < 1)
            return bad(n, "shape entries must be positive");
        y->dims[i] = shape[i];
    }
    int64_t view[3];
    if (!npu_attr_ints_n(n, "view", view, 3) || view[0] < 1 || view[1] < 1 || view[2] < 1)
        return bad(n, "needs view=[K, Ho, Wo]");
    if (npu_tensor_numel(y) != view[0] * view[1] * view[2])
        return bad(n, "shape and view hold different element counts");
    const char *pdt = npu_node_string(n, "partial", NULL);
    enum npu_dtype pd =
        pdt ? npu_dtype_from_name(pdt)
            : (n->in[0] && n->in[0]->t.dtype == NPU_DTYPE_INT8 ? NPU_DTYPE_INT32 : NPU_DTYPE_FP32);
    for (int i = 1; i < n->nout; i++) {
        struct npu_tensor *p = &n->out[i]->t;
        p->dtype = pd;
        p->ndim = 4;
        p->dims[0] = 1;
        p->dims[1] = view[0];
        p->dims[2] = view[1];
        p->dims[3] = view[2];
    }
    struct rk_tile *t = NULL;
    uint32_t nt = 0;
    if ((st = rk_conv_decode(n, &g, &t, &nt)))
        return st;
    free(t);
    return NPU_OK;
}

int
npu_backend_node_tasks(const struct npu_node *n)
{
    if (n->op == NPU_OP_RK_DPU)
        return npu_rk_dpu_task_count(n);
    if (n->op != NPU_OP_RK_CONV)
        return -1;
    struct rk_conv_geom g;
    uint32_t nt = 0;
    struct rk_tile *t = NULL;
    if (rk_conv_decode(n, &g, &t, &nt))
        return -1;
    free(t);
    return (int)nt + (g.lut_id ? 2 : 0); /* guard + upload (rk_emit_lut_prologue) */
}
