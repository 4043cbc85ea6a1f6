/* SPDX-License-Identifier: MIT */
/*
 * npu-conv-emit.c: rk.Conv, a convolution or matrix product as CNA + CORE +
 * DPU tasks: the attribute schema (decode / inference), the register program
 * of one task, and its modeled time (timing model v1).
 *
 * Register order and values follow RKNN's single-core conv tasks (golden
 * ab-conv*: the 4-qword prefix of NOTES S9, then DPU S_POINTER, CNA, CORE,
 * DPU; 108 qwords), or MTX's Appendix A.1 matmul with style "mtx". Rules and
 * where they come from:
 *   strides LINE = 4W, SURF = W(H-4) of the whole map (facts §2.10, NOTES S12)
 *   DATA_ENTRIES = ceil(row bytes / 64); DATA_BANK + WEIGHT_BANK = 12 (§2.10,
 *     §2.11, NOTES S14); the bank split itself is chosen by the tiler
 *   DATAIN_CHANNEL = C padded to 8 (fp16) / 16 (int8) (NOTES S13), REAL =
 *     (C - 1) mod 64 (RKNN, NOTES S5) or C - 1 (MTX)
 *   WEIGHT_SIZE0/1/2 from the packed layout (§2.10, npu-layout.h)
 *   SIZE_E = kernel group x output bytes / 16 - 1 (32-channel groups for
 *     depthwise), SURFACE_ADD = DST_SURF_STRIDE x (SIZE_E + 1) (§2.10)
 *   DST_SURF_STRIDE = W x H of the whole output in every tile (NOTES S20)
 *   output channels padded to the kernel group (16 fp16, 32 int8) for CORE /
 *     DPU, ORIG_CHANNEL real (partial table; NOTES S20)
 *   DPU stages: bias = BS ALU add of a per-channel fp32/int32 array through
 *     BRDMA (facts §5.3, Mesa); ReLU / ReLU-X in BS; clip(lo, hi) as BS add
 *     (bias - lo), ReLU, ReLU-X (hi - lo), then BN ALU add lo; partial sums of
 *     channel-block accumulation = EW ALU add of a per-pixel operand through
 *     ERDMA (32-bit for fp32 partials), with the activation in the EW ReLU
 *     stage after it (facts §5.3 stage order BS -> BN -> EW).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npu-rk.h"

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

/* ---- geometry helpers -------------------------------------------------------- */

void
rk_tile_rows(const struct rk_conv_geom *g, uint32_t oy0, uint32_t oh, struct rk_rows *r)
{
    int64_t eff = (int64_t)(g->kh - 1) * g->dy + 1;
    int64_t a = (int64_t)oy0 * g->sy - g->pt;
    int64_t b = (int64_t)(oy0 + oh - 1) * g->sy - g->pt + eff; /* exclusive */
    int64_t a0 = a < 0 ? 0 : a, b0 = b > g->h ? g->h : b;
    if (b0 <= a0) { /* only padding: still read one row (never chosen by the tiler) */
        a0 = a < 0 ? 0 : (a >= g->h ? g->h - 1 : a);
        b0 = a0 + 1;
    }
    r->iy0 = (uint32_t)a0;
    r->ih = (uint32_t)(b0 - a0);
    r->pad_top = (uint32_t)(a0 - a);
}

uint64_t
rk_weight_set_bytes(const struct rk_conv_geom *g, uint32_t nk, uint32_t nc)
{
    uint64_t per = (uint64_t)g->kh * g->kw * rk_cpad(g, nc) * rk_esize(g->in_dt);
    return per * (g->depthwise ? 1 : nk);
}

uint64_t
rk_tile_data_bytes(const struct rk_conv_geom *g, uint32_t rows, uint32_t nc)
{
    /* small-channel mode: RKNN fills 11 banks with 50 rows of 224 pixels
     * (ARGB capture), i.e. 32 bytes of CBUF per pixel */
    if (g->argb)
        return (uint64_t)g->w * rows * 32;
    uint64_t row = (uint64_t)g->w * rk_cpad(g, nc) * rk_esize(g->in_dt);
    return (row + 63) / 64 * 64 * rows;
}

/* Output channels CORE and DPU carry: padded to the kernel group, 16 for
 * fp16 and 32 for int8 (the partial table: 24 -> 32, 72 -> 80, 273 -> 288,
 * 546 -> 560, 1001 -> 1008; NOTES S20's "padded to 8" only saw 1001). */
static uint32_t
kout_of(const struct rk_conv_geom *g, uint32_t nk, enum npu_dtype out)
{
    (void)out;
    /* depthwise: the channel block (32 fp16, 64 int8; c144 h56 dw: 16 -> 32) */
    uint32_t a = g->depthwise ? (g->in_dt == NPU_DTYPE_INT8 ? 64 : 32) : rk_kernel_group(g);
    return (nk + a - 1) / a * a;
}

static enum npu_dtype
tile_out_dt(const struct rk_conv_geom *g, const struct rk_tile *t)
{
    return t->dst > 0 ? g->part_dt : g->out_dt;
}

/* The residual is added by the first channel block's tasks (those without a partial
 * sum to add). */
static bool
res_here(const struct rk_conv_geom *g, const struct rk_tile *t)
{
    return g->residual && t->src < 0;
}

static bool
uses_rdma(const struct rk_conv_geom *g, const struct rk_tile *t)
{
    return (t->flags & RKT_F_BIAS) || t->src > 0 || g->q_per_channel || res_here(g, t);
}

uint32_t
rk_task_body_qwords(const struct rk_conv_geom *g, const struct rk_tile *t)
{
    /* prefix 4 (RKNN) + S_POINTER 1 + CNA 48 + CORE 5 + DPU 50; MTX: no prefix.
     * With DPU_RDMA: its S_POINTER and 17 registers. */
    uint32_t n = (g->mtx ? 0 : 4) + 1 + 48 + 5 + 50;
    if (uses_rdma(g, t))
        n += 1 + 17;
    return n;
}

/* ---- modeled time ------------------------------------------------------------------ */

double
rk_task_seconds(const struct rk_conv_geom *g, const struct rk_tile *t, uint64_t *dma_bytes,
                uint64_t *macs)
{
    struct rk_rows r;
    rk_tile_rows(g, t->oy0, t->oh, &r);
    const uint32_t es = rk_esize(g->in_dt), c2 = 16 / es;
    const uint32_t cpad = rk_cpad(g, t->nc);
    const struct npu_timing_model *tm = npu_timing_model();
    const uint32_t kg = g->in_dt == NPU_DTYPE_INT8 ? tm->kernel_group_int8 : tm->kernel_group_fp16;
    const uint32_t cg = tm->channel_group;
    const uint64_t hw = (uint64_t)t->oh * g->ow * g->kh * g->kw;
    uint64_t steps;
    if (g->depthwise)
        steps = (cpad + kg - 1) / kg * hw;
    else
        steps = (uint64_t)((t->nk + kg - 1) / kg) * ((cpad + cg - 1) / cg) * hw;
    double compute = (double)steps / tm->clock_hz;
    uint64_t bytes = 0;
    if (!(t->flags & RKT_F_DREUSE))
        bytes += g->argb ? (uint64_t)g->w * r.ih * g->argb * es
                         : (uint64_t)((cpad + c2 - 1) / c2) * g->w * r.ih * 16;
    if (!(t->flags & RKT_F_WREUSE))
        bytes += rk_weight_set_bytes(g, t->nk, t->nc);
    enum npu_dtype odt = tile_out_dt(g, t);
    uint32_t kout = kout_of(g, t->nk, odt);
    if (t->flags & RKT_F_BIAS)
        bytes += (uint64_t)kout * 4;
    if (g->q_per_channel)
        bytes += (uint64_t)kout * 4;
    if (t->src > 0) {
        /* the simulator charges the ERDMA extent (first to last byte) */
        uint32_t pes = rk_esize(g->part_dt), pc2 = 16 / pes;
        uint64_t c1 = (kout + pc2 - 1) / pc2;
        bytes += (c1 - 1) * (uint64_t)g->ow * g->oh * 16 +
                 ((uint64_t)(t->oh - 1) * g->ow + g->ow) * 16;
    }
    if (res_here(g, t)) {
        /* the residual through ERDMA, charged over its extent like the partial sums */
        uint32_t rc2 = 16 / rk_esize(g->res_dt);
        uint64_t c1 = (kout + rc2 - 1) / rc2;
        bytes += (c1 - 1) * (uint64_t)g->ow * g->oh * 16 +
                 ((uint64_t)(t->oh - 1) * g->ow + g->ow) * 16;
    }
    uint32_t oc2 = 16 / rk_esize(odt);
    bytes += (uint64_t)((kout + oc2 - 1) / oc2) * g->ow * t->oh * 16;
    uint32_t n = rk_task_body_qwords(g, t) + NPU_TASK_TAIL_QWORDS;
    bytes += 16ull * ((n + 1) / 2);
    if (dma_bytes)
        *dma_bytes = bytes;
    if (macs)
        *macs = (uint64_t)(g->depthwise ? t->nc : (uint64_t)t->nk * t->nc) * hw;
    double dma = (double)bytes / tm->dma_bytes_per_s_core;
    return (compute > dma ? compute : dma) + tm->task_overhead_s;
}

/* ---- attributes ------------------------------------------------------------------- */

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
    if (g->in_dt != NPU_DTYPE_FP16 && g->in_dt != NPU_DTYPE_INT8)
        return bad(n, "input must be f16 or i8 in NPU memory");
    if (w->kind != NPU_VALUE_CONST || w->t.dtype != NPU_DTYPE_UINT8 || w->t.ndim != 1)
        return bad(n, "input 1 must be a constant u8[] of packed weights");
    if (b && (b->kind != NPU_VALUE_CONST || b->t.ndim != 1 ||
              b->t.dtype != (g->in_dt == NPU_DTYPE_FP16 ? NPU_DTYPE_FP32 : NPU_DTYPE_INT32)))
        return bad(n, "bias must be a constant f32[] (fp16 pipeline) or i32[] (int8)");
    g->bias = b != NULL;
    if (b && npu_value_numel(b) < ((int64_t)g_k_of(n) + 63) / 64 * 64)
        return bad(n, "bias must hold K padded to 64 entries (BRDMA reads padded channels)");
    const char *dts = npu_node_string(n, "dtype", NULL);
    g->out_dt = dts ? npu_dtype_from_name(dts) : NPU_DTYPE_UNDEFINED;
    if (g->in_dt == NPU_DTYPE_FP16 ? (g->out_dt != NPU_DTYPE_FP16 && g->out_dt != NPU_DTYPE_FP32)
                                   : (g->out_dt != NPU_DTYPE_INT8 && g->out_dt != NPU_DTYPE_INT32))
        return bad(n, "dtype must be f16/f32 after an f16 input, i8/i32 after i8 (facts §2.9)");
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
            qc[1] > 62 || qc[2] < INT32_MIN || qc[2] > INT32_MAX || g->in_dt != NPU_DTYPE_INT8)
            return bad(n, "q_cvt must be [scale 1..32767, shift 0..62, offset] (int8 pipeline)");
        g->q_scale = (uint32_t)qc[0];
        g->q_shift = (uint32_t)qc[1];
        g->q_offset = (int32_t)qc[2];
    }
    if (qm) {
        int64_t sh = npu_node_int(n, "q_chshift", -1);
        if (qm->kind != NPU_VALUE_CONST || qm->t.dtype != NPU_DTYPE_INT32 ||
            npu_value_numel(qm) < (g_k_of(n) + 63) / 64 * 64 || sh < 0 || sh > 63 ||
            g->in_dt != NPU_DTYPE_INT8 || g->out_dt != NPU_DTYPE_INT8)
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
    g->part_dt = g->in_dt == NPU_DTYPE_INT8 ? NPU_DTYPE_INT32 : NPU_DTYPE_FP32;
    if (pdt) {
        g->part_dt = npu_dtype_from_name(pdt);
        if (g->in_dt == NPU_DTYPE_INT8 ? g->part_dt != NPU_DTYPE_INT32
                                       : (g->part_dt != NPU_DTYPE_FP32 &&
                                          g->part_dt != NPU_DTYPE_FP16))
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
        /* a function table of be-dpu: input scale exact in the fp16 BN MUL operand, no
         * input offset (BN would add it once per channel block) */
        const struct npu_dpu_lut *l =
            lid > 0 && lid < 0x10000 ? npu_dpu_lut_get((uint32_t)lid) : NULL;
        if (!l || l->in_offset != 0 || !npu_dpu_fp16_exact(l->in_scale) ||
            g->in_dt != NPU_DTYPE_FP16 || g->act != RK_ACT_NONE || g->mtx || g->residual)
            return bad(n, "lut must name a function table of the fp16 pipeline, without act, "
                          "residual or mtx style");
        g->lut_id = (uint32_t)lid;
    }
    /* inputs are read with packed surfaces; the result may have padded ones */
    if (!npu_rk_packed(x) || (g->residual && !npu_rk_packed(n->in[n->nin - 1])))
        return bad(n, "inputs must have packed surfaces");
    g->out_surf = g->ow * g->oh;
    int64_t osurf = npu_node_int(n, "surf", 0);
    if (osurf) {
        if (osurf < (int64_t)g->ow * g->oh || osurf > (int64_t)(g->oh + 32) * g->ow || g->mtx)
            return bad(n, "surf must be Wo x (Ho .. Ho + 32) atoms (not with mtx style)");
        g->out_surf = (uint32_t)osurf;
    }
    if (g->residual) {
        const struct npu_value *r = n->in[n->nin - 1];
        uint32_t rv[3];
        if (!npu_rk_value(r) || !npu_rk_view(r, rv) || rv[0] != g->k || rv[1] != g->oh ||
            rv[2] != g->ow || strcmp(npu_rk_layout(r), "nc1hwc2") ||
            (r->t.dtype != NPU_DTYPE_FP16 && r->t.dtype != NPU_DTYPE_FP32) ||
            g->in_dt != NPU_DTYPE_FP16 || g->mtx)
            return bad(n, "residual must be an NC1HWC2 f16 / f32 NPU value in the output's view "
                          "(fp16 pipeline)");
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
        if (!x1->oh || x1->oy0 + x1->oh > g->oh || !x1->nk || x1->k0 + x1->nk > g->k ||
            !x1->nc || x1->c0 + x1->nc > g->c || x1->bank < 1 || x1->bank > 11 ||
            x1->flags > 15 || x1->src == 0 || x1->src >= n->nout || x1->dst >= n->nout ||
            x1->src == x1->dst)
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
                       x1->src > 0 || uses_rdma(g, x1)))
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

/* ---- inference ----------------------------------------------------------------- */

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
    enum npu_dtype pd = pdt ? npu_dtype_from_name(pdt)
                            : (n->in[0] && n->in[0]->t.dtype == NPU_DTYPE_INT8 ? NPU_DTYPE_INT32
                                                                              : NPU_DTYPE_FP32);
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

/* ---- emission -------------------------------------------------------------------- */

static uint32_t
f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static uint32_t
cna_prec(enum npu_dtype dt)
{
    return dt == NPU_DTYPE_INT8 ? NPU_CNA_PRECISION_INT8 : NPU_CNA_PRECISION_FP16;
}

static uint32_t
dpu_prec(enum npu_dtype dt)
{
    switch (dt) {
    case NPU_DTYPE_INT8: return NPU_PRECISION_INT8;
    case NPU_DTYPE_INT32: return NPU_PRECISION_INT32;
    case NPU_DTYPE_FP32: return NPU_PRECISION_FP32;
    default: return NPU_PRECISION_FP16;
    }
}

void
rk_emit_task(struct npu_stream *s, const struct rk_conv_geom *g, const struct rk_tile *t,
             const struct rk_emit_addrs *a)
{
    const uint32_t es = rk_esize(g->in_dt), c2 = 16 / es;
    const uint32_t cp = cna_prec(g->in_dt);
    const uint32_t cpad = rk_cpad(g, t->nc);
    const enum npu_dtype odt = tile_out_dt(g, t);
    const uint32_t ob = rk_esize(odt), oc2 = 16 / ob;
    const uint32_t kout = kout_of(g, t->nk, odt);
    const uint32_t kg = rk_kernel_group(g);
    /* facts §2.10: SIZE_E = group x out bytes / 16 - 1; depthwise output
     * groups are the 32-channel (fp16) / 64-channel (int8) blocks */
    const uint32_t grp = g->depthwise ? (g->in_dt == NPU_DTYPE_INT8 ? 64 : 32) : kg;
    const uint32_t size_e = grp * ob / 16 - 1;
    const uint32_t surf = g->ow * g->oh; /* atoms, whole output (NOTES S20) */
    const bool rdma = uses_rdma(g, t);
    const bool fp = g->in_dt == NPU_DTYPE_FP16;
    const uint32_t mode = g->depthwise ? NPU_CONV_MODE_DEPTHWISE : NPU_CONV_MODE_DIRECT;
    struct rk_rows r;
    rk_tile_rows(g, t->oy0, t->oh, &r);

    const uint32_t per_kernel = g->kh * g->kw * cpad * es;
    /* DATA_ENTRIES: row bytes / 64; W x H_tile in small-channel mode (facts
     * §2.10, NOTES §2 ARGB case) */
    const uint32_t entries = g->argb ? g->w * r.ih
                                     : (uint32_t)(((uint64_t)g->w * cpad * es + 63) / 64);
    const uint32_t cbuf0 = CNA_CBUF_CON0_WEIGHT_REUSE((t->flags & RKT_F_WREUSE) ? 1 : 0) |
                           CNA_CBUF_CON0_DATA_REUSE((t->flags & RKT_F_DREUSE) ? 1 : 0) |
                           CNA_CBUF_CON0_WEIGHT_BANK(12 - t->bank) |
                           CNA_CBUF_CON0_DATA_BANK(t->bank);
    /* small-channel mode: NONALIGN_DMA | GROUP_LINE_OFF | ARGB_IN (7 + C) (facts
     * §2.10, RKNN's ARGB capture 0x6000a120) */
    const uint32_t con1 = CNA_CONV_CON1_PROC_PRECISION(cp) | CNA_CONV_CON1_IN_PRECISION(cp) |
                          CNA_CONV_CON1_CONV_MODE(mode) |
                          (g->argb ? CNA_CONV_CON1_NONALIGN_DMA(1) |
                                         CNA_CONV_CON1_GROUP_LINE_OFF(1) |
                                         CNA_CONV_CON1_ARGB_IN(NPU_ARGB_IN_1CH + g->argb - 1)
                                   : 0);
    /* REAL: MTX writes C - 1, RKNN (C - 1) mod 64 (errata S5) */
    const uint32_t real = g->mtx ? t->nc - 1 : (t->nc - 1) % 64;
    /* FEATURE_GRAINS is buffering only (NOTES S11): MTX M + 1; ARGB: the
     * tile's rows (RKNN); else the closest fit to RKNN's values: input rows
     * + kernel height */
    uint32_t grains = g->mtx ? r.ih + 1 : g->argb ? r.ih : r.ih + g->kh;
    if (grains > CNA_CONV_CON2_FEATURE_GRAINS__MAX)
        grains = CNA_CONV_CON2_FEATURE_GRAINS__MAX;
    const uint32_t s_ptr = DPU_S_POINTER_POINTER_PP_EN(1) | DPU_S_POINTER_EXECUTER_PP_EN(1) |
                           DPU_S_POINTER_POINTER_PP_MODE(1);

    npu_stream_begin_task(s);
    if (!g->mtx) {
        /* NOTES S9: every single-core RKNN conv task starts with these four */
        npu_emit(s, REG_CNA_CBUF_CON0, cbuf0);
        npu_emit(s, REG_CNA_DCOMP_REGNUM, 0);
        npu_emit(s, REG_CNA_DCOMP_CTRL, 0);
        npu_emit(s, REG_CNA_CONV_CON1, con1);
    }
    npu_emit(s, REG_DPU_S_POINTER, s_ptr);
    if (rdma)
        npu_emit(s, REG_DPU_RDMA_S_POINTER, s_ptr);
    npu_emit(s, REG_CNA_CONV_CON1, con1);
    npu_emit(s, REG_CNA_CONV_CON2, CNA_CONV_CON2_FEATURE_GRAINS(grains));
    npu_emit(s, REG_CNA_CONV_CON3,
             CNA_CONV_CON3_CONV_X_STRIDE(g->sx) | CNA_CONV_CON3_CONV_Y_STRIDE(g->sy));
    npu_emit(s, REG_CNA_DATA_SIZE0,
             CNA_DATA_SIZE0_DATAIN_WIDTH(g->w) | CNA_DATA_SIZE0_DATAIN_HEIGHT(r.ih));
    npu_emit(s, REG_CNA_DATA_SIZE1,
             CNA_DATA_SIZE1_DATAIN_CHANNEL_REAL(real) | CNA_DATA_SIZE1_DATAIN_CHANNEL(cpad));
    npu_emit(s, REG_CNA_DATA_SIZE2, CNA_DATA_SIZE2_DATAOUT_WIDTH(g->ow));
    npu_emit(s, REG_CNA_DATA_SIZE3, CNA_DATA_SIZE3_DATAOUT_ATOMICS(g->ow * t->oh));
    npu_emit(s, REG_CNA_WEIGHT_SIZE0,
             CNA_WEIGHT_SIZE0_WEIGHT_BYTES(per_kernel * (g->depthwise ? 1 : t->nk)));
    npu_emit(s, REG_CNA_WEIGHT_SIZE1, CNA_WEIGHT_SIZE1_WEIGHT_BYTES_PER_KERNEL(per_kernel));
    npu_emit(s, REG_CNA_WEIGHT_SIZE2,
             CNA_WEIGHT_SIZE2_WEIGHT_WIDTH(g->kw) | CNA_WEIGHT_SIZE2_WEIGHT_HEIGHT(g->kh) |
                 CNA_WEIGHT_SIZE2_WEIGHT_KERNELS(g->depthwise ? 1 : t->nk));
    npu_emit(s, REG_CNA_CBUF_CON0, cbuf0);
    npu_emit(s, REG_CNA_CBUF_CON1, CNA_CBUF_CON1_DATA_ENTRIES(entries));
    /* converter bypassed; RKNN writes 0xb, but only BYPASS in ARGB mode */
    npu_emit(s, REG_CNA_CVT_CON0,
             g->argb ? CNA_CVT_CON0_CVT_BYPASS(1)
                     : CNA_CVT_CON0_DATA_SIGN(1) |
                           CNA_CVT_CON0_CVT_TYPE(NPU_CVT_ORDER_ADD_FIRST) |
                           CNA_CVT_CON0_CVT_BYPASS(1));
    npu_emit(s, REG_CNA_CVT_CON1, CNA_CVT_CON1_CVT_SCALE0(1));
    npu_emit(s, REG_CNA_CVT_CON2, CNA_CVT_CON2_CVT_SCALE1(1));
    npu_emit(s, REG_CNA_CVT_CON3, CNA_CVT_CON3_CVT_SCALE2(1));
    npu_emit(s, REG_CNA_CVT_CON4, CNA_CVT_CON4_CVT_SCALE3(1));
    npu_emit(s, REG_CNA_FC_CON0, 0);
    npu_emit(s, REG_CNA_FC_CON1, 0);
    npu_emit(s, REG_CNA_PAD_CON0, CNA_PAD_CON0_PAD_LEFT(g->pl) | CNA_PAD_CON0_PAD_TOP(r.pad_top));
    /* the tile's first input row of its first channel surface (facts §2.10) */
    npu_emit_reloc(s, REG_CNA_FEATURE_DATA_ADDR, a->x.buffer,
                   g->argb ? a->x.offset + r.iy0 * g->w * g->argb * es
                           : a->x.offset + (t->c0 / c2) * g->w * g->h * 16 + r.iy0 * g->w * 16);
    npu_emit(s, REG_CNA_FC_CON2, 0);
    npu_emit(s, REG_CNA_DMA_CON0,
             CNA_DMA_CON0_WEIGHT_BURST_LEN(NPU_BURST_LEN_BURST16) |
                 CNA_DMA_CON0_DATA_BURST_LEN(NPU_BURST_LEN_BURST16));
    /* normal-mode strides of the whole stored map (facts §2.10, NOTES S12) */
    /* small-channel mode: LINE = W, SURF = W (H - 1) pixels (facts §2.10) */
    npu_emit(s, REG_CNA_DMA_CON1, CNA_DMA_CON1_LINE_STRIDE(g->argb ? g->w : 4 * g->w));
    npu_emit(s, REG_CNA_DMA_CON2,
             CNA_DMA_CON2_SURF_STRIDE((uint32_t)((int64_t)g->w *
                                                 ((int64_t)g->h - (g->argb ? 1 : 4)))));
    npu_emit(s, REG_CNA_FC_DATA_SIZE0,
             CNA_FC_DATA_SIZE0_DMA_WIDTH(g->w) | CNA_FC_DATA_SIZE0_DMA_HEIGHT(r.ih));
    npu_emit(s, REG_CNA_FC_DATA_SIZE1, CNA_FC_DATA_SIZE1_DMA_CHANNEL(cpad));
    npu_emit(s, REG_CNA_DCOMP_CTRL, 0);
    npu_emit(s, REG_CNA_DCOMP_REGNUM, 0);
    npu_emit_reloc(s, REG_CNA_DCOMP_ADDR0, a->w.buffer, a->w.offset + t->woff);
    for (unsigned i = 0; i < REG_CNA_DCOMP_AMOUNT__COUNT; i++)
        npu_emit(s, REG_CNA_DCOMP_AMOUNT(i), 0);
    /* PER_CHANNEL_CVT_EN: RKNN writes 0xfff with 3 channels (converter
     * bypassed, so without effect; 4 bits per channel is a guess) */
    npu_emit(s, REG_CNA_CVT_CON5,
             g->argb ? CNA_CVT_CON5_PER_CHANNEL_CVT_EN((1u << (4 * g->argb)) - 1) : 0);
    npu_emit(s, REG_CNA_PAD_CON1, CNA_PAD_CON1_PAD_VALUE((uint32_t)g->pad_value));

    /* QD_EN: MTX sets it in fp16 matmul, RKNN never (NOTES S15) */
    npu_emit(s, REG_CORE_MISC_CFG,
             CORE_MISC_CFG_PROC_PRECISION(cp) | CORE_MISC_CFG_DW_EN(g->depthwise ? 1 : 0) |
                 CORE_MISC_CFG_QD_EN(g->mtx && fp ? 1 : 0));
    npu_emit(s, REG_CORE_DATAOUT_SIZE_0,
             CORE_DATAOUT_SIZE_0_DATAOUT_HEIGHT(t->oh - 1) |
                 CORE_DATAOUT_SIZE_0_DATAOUT_WIDTH(g->ow - 1));
    npu_emit(s, REG_CORE_DATAOUT_SIZE_1, CORE_DATAOUT_SIZE_1_DATAOUT_CHANNEL(kout - 1));
    npu_emit(s, REG_CORE_CLIP_TRUNCATE, 0);
    npu_emit(s, REG_CORE_UNDOC_3030, 0);

    /* ---- DPU: stages */
    const bool act_here = (t->flags & RKT_F_ACT) && g->act != RK_ACT_NONE;
    const bool act_in_ew = act_here && t->src > 0;
    const bool act_in_bs = act_here && !act_in_ew;
    const bool bias_here = (t->flags & RKT_F_BIAS) != 0;
    const float lo = g->act == RK_ACT_CLIP ? g->act_lo : 0.0f;
    uint32_t bs_cfg = DPU_BS_CFG_BS_RELU_BYPASS(1) | DPU_BS_CFG_BS_MUL_BYPASS(1) |
                      DPU_BS_CFG_BS_ALU_BYPASS(1) | DPU_BS_CFG_BS_BYPASS(1);
    uint32_t bs_alu = 0, bs_relux = 0, bn_cfg = bs_cfg, bn_alu = 0;
    bool bs_alu_reg = act_in_bs && lo != 0.0f && !bias_here;
    if (bias_here || act_in_bs) {
        bs_cfg = DPU_BS_CFG_BS_MUL_BYPASS(1);
        if (bias_here)
            bs_cfg |= DPU_BS_CFG_BS_ALU_ALGO(NPU_ALU_ALGO_ADD) |
                      DPU_BS_CFG_BS_ALU_SRC(NPU_OPERAND_SRC_MEMORY);
        else if (bs_alu_reg) {
            bs_cfg |= DPU_BS_CFG_BS_ALU_ALGO(NPU_ALU_ALGO_ADD);
            bs_alu = f32_bits(-lo);
        } else
            bs_cfg |= DPU_BS_CFG_BS_ALU_BYPASS(1);
        if (!act_in_bs) {
            bs_cfg |= DPU_BS_CFG_BS_RELU_BYPASS(1);
        } else if (g->act == RK_ACT_CLIP) {
            bs_cfg |= DPU_BS_CFG_BS_RELUX_EN(1);
            bs_relux = f32_bits(g->act_hi - lo);
            if (lo != 0.0f) {
                bn_cfg = DPU_BS_CFG_BS_RELU_BYPASS(1) | DPU_BS_CFG_BS_MUL_BYPASS(1) |
                         DPU_BS_CFG_BS_ALU_ALGO(NPU_ALU_ALGO_ADD);
                bn_alu = f32_bits(lo);
            }
        }
    }
    uint32_t bn_mul = 0;
    const bool final_q = t->dst == 0 && g->in_dt == NPU_DTYPE_INT8 && g->out_dt == NPU_DTYPE_INT8;
    if (final_q && g->q_per_channel) {
        /* BN MUL then ALU (facts §5.3): x * m[c] >> shift, operand per channel
         * from NRDMA (one operand kind, facts §6.13) */
        bn_cfg = DPU_BS_CFG_BS_RELU_BYPASS(1) | DPU_BS_CFG_BS_ALU_BYPASS(1);
        bn_mul = DPU_BS_MUL_CFG_BS_MUL_SHIFT_VALUE(g->q_chshift) |
                 DPU_BS_MUL_CFG_BS_MUL_SRC(NPU_OPERAND_SRC_MEMORY);
    }
    uint32_t ew_cfg = DPU_EW_CFG_EW_RELU_BYPASS(1) | DPU_EW_CFG_EW_OP_CVT_BYPASS(1) |
                      DPU_EW_CFG_EW_LUT_BYPASS(1) | DPU_EW_CFG_EW_OP_BYPASS(1) |
                      DPU_EW_CFG_EW_BYPASS(1);
    uint32_t ew_relux = 0, esz_code = NPU_ELEM_SIZE_32BIT;
    if (t->src > 0) {
        uint32_t pes = rk_esize(g->part_dt);
        esz_code = pes == 4 ? NPU_ELEM_SIZE_32BIT : NPU_ELEM_SIZE_16BIT;
        ew_cfg = DPU_EW_CFG_EW_DATA_MODE(NPU_EW_DATA_MODE_PER_PIXEL) |
                 DPU_EW_CFG_EDATA_SIZE(esz_code) | DPU_EW_CFG_EW_ALU_ALGO(NPU_ALU_ALGO_ADD) |
                 DPU_EW_CFG_EW_OP_CVT_BYPASS(1) | DPU_EW_CFG_EW_LUT_BYPASS(1) |
                 DPU_EW_CFG_EW_OP_SRC(NPU_OPERAND_SRC_MEMORY);
        if (act_in_ew) {
            if (g->act == RK_ACT_CLIP) {
                ew_cfg |= DPU_EW_CFG_EW_RELUX_EN(1);
                ew_relux = f32_bits(g->act_hi);
            }
        } else {
            ew_cfg |= DPU_EW_CFG_EW_RELU_BYPASS(1);
        }
    } else if (res_here(g, t)) {
        /* the residual: EW ALU add of a per-pixel operand (ERDMA), as the partial sums */
        esz_code = rk_esize(g->res_dt) == 4 ? NPU_ELEM_SIZE_32BIT : NPU_ELEM_SIZE_16BIT;
        ew_cfg = DPU_EW_CFG_EW_DATA_MODE(NPU_EW_DATA_MODE_PER_PIXEL) |
                 DPU_EW_CFG_EDATA_SIZE(esz_code) | DPU_EW_CFG_EW_ALU_ALGO(NPU_ALU_ALGO_ADD) |
                 DPU_EW_CFG_EW_OP_CVT_BYPASS(1) | DPU_EW_CFG_EW_LUT_BYPASS(1) |
                 DPU_EW_CFG_EW_OP_SRC(NPU_OPERAND_SRC_MEMORY) | DPU_EW_CFG_EW_RELU_BYPASS(1);
    }
    /* LUT function (be-dpu's tables, NOTES S19 configuration): BN MUL scales every
     * block's contribution into the table's index domain (u = t * in_scale, exact power of
     * two); the last block looks up u after its partial-sum add. */
    const struct npu_dpu_lut *lut =
        g->lut_id && (t->flags & RKT_F_ACT) ? npu_dpu_lut_get(g->lut_id) : NULL;
    if (g->lut_id) {
        const struct npu_dpu_lut *l = npu_dpu_lut_get(g->lut_id);
        bn_cfg = DPU_BS_CFG_BS_RELU_BYPASS(1) | DPU_BS_CFG_BS_ALU_BYPASS(1);
        bn_mul = DPU_BS_MUL_CFG_BS_MUL_OPERAND(npu_fp32_to_fp16(l->in_scale));
    }
    if (lut) {
        ew_cfg &= ~(DPU_EW_CFG_EW_LUT_BYPASS(1) | DPU_EW_CFG_EW_BYPASS(1));
        if (t->src <= 0)
            /* RKNN's tanh: OP_BYPASS | OP_CVT_BYPASS | RELU_BYPASS (0x302, NOTES S19) */
            ew_cfg = DPU_EW_CFG_EW_RELU_BYPASS(1) | DPU_EW_CFG_EW_OP_CVT_BYPASS(1) |
                     DPU_EW_CFG_EW_OP_BYPASS(1);
    }

    /* the result may have padded surfaces (out_surf); partial sums are packed */
    const uint32_t dsurf = t->dst == 0 && g->out_surf ? g->out_surf : surf;
    const uint32_t out_off = (t->k0 / oc2) * dsurf * 16 + t->oy0 * g->ow * 16;
    const struct npu_ref_buf *dst = &a->out[t->dst];
    npu_emit(s, REG_DPU_FEATURE_MODE_CFG,
             DPU_FEATURE_MODE_CFG_BURST_LEN(NPU_BURST_LEN_BURST16) |
                 DPU_FEATURE_MODE_CFG_OUTPUT_MODE(NPU_DPU_OUTPUT_MODE_MEMORY) |
                 DPU_FEATURE_MODE_CFG_CONV_MODE(mode));
    npu_emit(s, REG_DPU_DATA_FORMAT,
             DPU_DATA_FORMAT_OUT_PRECISION(dpu_prec(odt)) |
                 DPU_DATA_FORMAT_IN_PRECISION(dpu_prec(g->in_dt)) |
                 DPU_DATA_FORMAT_BN_MUL_SHIFT_VALUE_NEG(
                     final_q && g->q_per_channel ? g->q_chshift : 0) |
                 DPU_DATA_FORMAT_PROC_PRECISION(dpu_prec(g->in_dt)));
    npu_emit(s, REG_DPU_OFFSET_PEND, 0);
    npu_emit_reloc(s, REG_DPU_DST_BASE_ADDR, dst->buffer, dst->offset + out_off);
    npu_emit(s, REG_DPU_DST_SURF_STRIDE, DPU_DST_SURF_STRIDE_DST_SURF_STRIDE(dsurf));
    npu_emit(s, REG_DPU_DATA_CUBE_WIDTH, DPU_DATA_CUBE_WIDTH_WIDTH(g->ow - 1));
    npu_emit(s, REG_DPU_DATA_CUBE_HEIGHT, DPU_DATA_CUBE_HEIGHT_HEIGHT(t->oh - 1));
    npu_emit(s, REG_DPU_DATA_CUBE_NOTCH_ADDR, 0);
    npu_emit(s, REG_DPU_DATA_CUBE_CHANNEL,
             DPU_DATA_CUBE_CHANNEL_ORIG_CHANNEL(t->nk - 1) |
                 DPU_DATA_CUBE_CHANNEL_CHANNEL(kout - 1));
    npu_emit(s, REG_DPU_BS_CFG, bs_cfg);
    npu_emit(s, REG_DPU_BS_ALU_CFG, bs_alu);
    npu_emit(s, REG_DPU_BS_MUL_CFG, 0);
    npu_emit(s, REG_DPU_BS_RELUX_CMP_VALUE, bs_relux);
    npu_emit(s, REG_DPU_BS_OW_CFG,
             DPU_BS_OW_CFG_SIZE_E_2(size_e) | DPU_BS_OW_CFG_SIZE_E_1(size_e) |
                 DPU_BS_OW_CFG_SIZE_E_0(size_e) | DPU_BS_OW_CFG_OD_BYPASS(1));
    npu_emit(s, REG_DPU_BS_OW_OP, 0);
    npu_emit(s, REG_DPU_WDMA_SIZE_0, DPU_WDMA_SIZE_0_CHANNEL_WDMA(kout - 1));
    npu_emit(s, REG_DPU_WDMA_SIZE_1,
             DPU_WDMA_SIZE_1_HEIGHT_WDMA(t->oh - 1) | DPU_WDMA_SIZE_1_WIDTH_WDMA(g->ow - 1));
    npu_emit(s, REG_DPU_BN_CFG, bn_cfg);
    npu_emit(s, REG_DPU_BN_ALU_CFG, bn_alu);
    npu_emit(s, REG_DPU_BN_MUL_CFG, bn_mul);
    npu_emit(s, REG_DPU_BN_RELUX_CMP_VALUE, 0);
    npu_emit(s, REG_DPU_EW_CFG, ew_cfg);
    npu_emit(s, REG_DPU_EW_CVT_OFFSET_VALUE, 0);
    npu_emit(s, REG_DPU_EW_CVT_SCALE_VALUE, DPU_EW_CVT_SCALE_VALUE_EW_OP_CVT_SCALE(1));
    npu_emit(s, REG_DPU_EW_RELUX_CMP_VALUE, ew_relux);
    /* OUT_CVT: identity, or the int8 requantisation (facts §5.3: multiply first,
     * shift with round half to even, then the offset = output zero point) */
    /* after a LUT: RKNN's tanh offset and MINUS_EXP (the table's output scale, S19) */
    npu_emit(s, REG_DPU_OUT_CVT_OFFSET,
             final_q ? (uint32_t)g->q_offset : lut ? (uint32_t)lut->out_offset : 0);
    npu_emit(s, REG_DPU_OUT_CVT_SCALE,
             DPU_OUT_CVT_SCALE_FP32TOFP16_EN(odt == NPU_DTYPE_FP16 ? 1 : 0) |
                 DPU_OUT_CVT_SCALE_OUT_CVT_SCALE(final_q ? g->q_scale : 1));
    npu_emit(s, REG_DPU_OUT_CVT_SHIFT,
             DPU_OUT_CVT_SHIFT_OUT_CVT_SHIFT(final_q ? g->q_shift : 0) |
                 (lut ? DPU_OUT_CVT_SHIFT_MINUS_EXP(lut->minus_exp) : 0));
    for (unsigned i = 0; i < REG_DPU_EW_OP_VALUE__COUNT; i++)
        npu_emit(s, REG_DPU_EW_OP_VALUE(i), 0);
    npu_emit(s, REG_DPU_SURFACE_ADD, DPU_SURFACE_ADD_SURF_ADD(dsurf * (size_e + 1)));
    npu_emit(s, REG_DPU_UNDOC_40C4, 0);
    npu_emit(s, REG_DPU_LUT_ACCESS_CFG, 0);
    npu_emit(s, REG_DPU_LUT_ACCESS_DATA, 0);
    npu_dpu_emit_lut_regs(s, lut); /* RKNN's LUT_CFG 0x68, the one strict mode accepts */

    if (rdma) {
        /* DPU_RDMA feeding BS (BRDMA) and EW (ERDMA) of a conv: not flying,
         * MRDMA off; the operand cubes match the DPU cube (facts §2.6). */
        const uint32_t pes = rk_esize(g->part_dt);
        npu_emit(s, REG_DPU_RDMA_DATA_CUBE_WIDTH, DPU_RDMA_DATA_CUBE_WIDTH_WIDTH(g->ow - 1));
        npu_emit(s, REG_DPU_RDMA_DATA_CUBE_HEIGHT, DPU_RDMA_DATA_CUBE_HEIGHT_HEIGHT(t->oh - 1));
        npu_emit(s, REG_DPU_RDMA_DATA_CUBE_CHANNEL, DPU_RDMA_DATA_CUBE_CHANNEL_CHANNEL(kout - 1));
        npu_emit(s, REG_DPU_RDMA_SRC_BASE_ADDR, 0);
        if (bias_here) {
            npu_emit(s, REG_DPU_RDMA_BRDMA_CFG, DPU_RDMA_BRDMA_CFG_BRDMA_DATA_USE(1));
            npu_emit_reloc(s, REG_DPU_RDMA_BS_BASE_ADDR, a->bias.buffer,
                           a->bias.offset + t->k0 * 4);
        } else {
            npu_emit(s, REG_DPU_RDMA_BRDMA_CFG, 0);
            npu_emit(s, REG_DPU_RDMA_BS_BASE_ADDR, 0);
        }
        if (final_q && g->q_per_channel) {
            /* DATA_USE bit 2: MUL operand (facts §2.6) */
            npu_emit(s, REG_DPU_RDMA_NRDMA_CFG, DPU_RDMA_NRDMA_CFG_NRDMA_DATA_USE(4));
            npu_emit_reloc(s, REG_DPU_RDMA_BN_BASE_ADDR, a->qmul.buffer,
                           a->qmul.offset + t->k0 * 4);
        } else {
            npu_emit(s, REG_DPU_RDMA_NRDMA_CFG, 0);
            npu_emit(s, REG_DPU_RDMA_BN_BASE_ADDR, 0);
        }
        if (t->src < 0 && res_here(g, t)) {
            npu_emit(s, REG_DPU_RDMA_ERDMA_CFG,
                     DPU_RDMA_ERDMA_CFG_ERDMA_DATA_MODE(NPU_EW_DATA_MODE_PER_PIXEL) |
                         DPU_RDMA_ERDMA_CFG_ERDMA_DATA_SIZE(esz_code));
            npu_emit_reloc(s, REG_DPU_RDMA_EW_BASE_ADDR, a->res.buffer,
                           a->res.offset + (t->k0 / (16 / rk_esize(g->res_dt))) * surf * 16 +
                               t->oy0 * g->ow * 16);
            npu_emit(s, REG_DPU_RDMA_EW_SURF_STRIDE, DPU_RDMA_EW_SURF_STRIDE_EW_SURF_STRIDE(surf));
        } else if (t->src > 0) {
            const struct npu_ref_buf *src = &a->out[t->src];
            npu_emit(s, REG_DPU_RDMA_ERDMA_CFG,
                     DPU_RDMA_ERDMA_CFG_ERDMA_DATA_MODE(NPU_EW_DATA_MODE_PER_PIXEL) |
                         DPU_RDMA_ERDMA_CFG_ERDMA_DATA_SIZE(esz_code));
            npu_emit_reloc(s, REG_DPU_RDMA_EW_BASE_ADDR, src->buffer,
                           src->offset + (t->k0 / (16 / pes)) * surf * 16 + t->oy0 * g->ow * 16);
            npu_emit(s, REG_DPU_RDMA_EW_SURF_STRIDE, DPU_RDMA_EW_SURF_STRIDE_EW_SURF_STRIDE(surf));
        } else {
            npu_emit(s, REG_DPU_RDMA_ERDMA_CFG, DPU_RDMA_ERDMA_CFG_ERDMA_DISABLE(1));
            npu_emit(s, REG_DPU_RDMA_EW_BASE_ADDR, 0);
            npu_emit(s, REG_DPU_RDMA_EW_SURF_STRIDE, 0);
        }
        npu_emit(s, REG_DPU_RDMA_FEATURE_MODE_CFG,
                 DPU_RDMA_FEATURE_MODE_CFG_IN_PRECISION(dpu_prec(g->in_dt)) |
                     DPU_RDMA_FEATURE_MODE_CFG_BURST_LEN(NPU_BURST_LEN_BURST16) |
                     DPU_RDMA_FEATURE_MODE_CFG_PROC_PRECISION(dpu_prec(g->in_dt)) |
                     DPU_RDMA_FEATURE_MODE_CFG_MRDMA_DISABLE(1));
        npu_emit(s, REG_DPU_RDMA_SRC_DMA_CFG, 0);
        npu_emit(s, REG_DPU_RDMA_SURF_NOTCH, 0);
        npu_emit(s, REG_DPU_RDMA_PAD_CFG, 0);
        npu_emit(s, REG_DPU_RDMA_WEIGHT,
                 DPU_RDMA_WEIGHT_E_WEIGHT(1) | DPU_RDMA_WEIGHT_N_WEIGHT(1) |
                     DPU_RDMA_WEIGHT_B_WEIGHT(1) | DPU_RDMA_WEIGHT_M_WEIGHT(1));
        npu_emit(s, REG_DPU_RDMA_EW_SURF_NOTCH, 0);
    }
    npu_stream_end_task(s, NPU_OP_EN_CNA | NPU_OP_EN_CORE | NPU_OP_EN_DPU |
                               (rdma ? NPU_OP_EN_DPU_RDMA : 0));
}

enum npu_status
npu_rk_conv_emit(struct npu_cg *cg, const struct npu_node *n)
{
    struct rk_conv_geom g;
    struct rk_tile *t = NULL;
    uint32_t nt = 0;
    enum npu_status st = rk_conv_decode(n, &g, &t, &nt);
    if (st)
        return st;
    struct rk_emit_addrs a;
    memset(&a, 0, sizeof(a));
    if ((st = npu_cg_addr(cg, n->in[0], &a.x)) || (st = npu_cg_addr(cg, n->in[1], &a.w)) ||
        (g.bias && (st = npu_cg_addr(cg, n->in[2], &a.bias))) ||
        (g.q_per_channel && (st = npu_cg_addr(cg, n->in[3], &a.qmul))))
        goto out;
    if (g.residual && (st = npu_cg_addr(cg, n->in[n->nin - 1], &a.res)))
        goto out;
    for (int i = 0; i < n->nout; i++)
        if ((st = npu_cg_addr(cg, n->out[i], &a.out[i])))
            goto out;
    struct npu_stream *s = npu_cg_stream(cg);
    if (g.lut_id && (st = rk_emit_lut_prologue(s, &g, &a))) {
        npu_err(NPU_BE_DOM, "node '%s' (rk.Conv) LUT upload: %s", n->name, npu_stream_error(s));
        goto out;
    }
    for (uint32_t i = 0; i < nt; i++) {
        uint32_t before = s->n_tasks;
        rk_emit_task(s, &g, &t[i], &a);
        if ((st = npu_stream_status(s))) {
            npu_err(NPU_BE_DOM, "node '%s' (rk.Conv) task %u: %s", n->name, i,
                    npu_stream_error(s));
            goto out;
        }
        if (s->tasks[before].n_body != rk_task_body_qwords(&g, &t[i]))
            npu_die("rk.Conv task body %u qwords, expected %u", s->tasks[before].n_body,
                    rk_task_body_qwords(&g, &t[i]));
    }
out:
    free(t);
    return st;
}

double
rk_conv_modeled(const struct npu_node *n)
{
    struct rk_conv_geom g;
    struct rk_tile *t = NULL;
    uint32_t nt = 0;
    if (rk_conv_decode(n, &g, &t, &nt))
        return -1;
    double sec = g.lut_id ? rk_lut_prologue_seconds() : 0;
    for (uint32_t i = 0; i < nt; i++)
        sec += rk_task_seconds(&g, &t[i], NULL, NULL);
    free(t);
    return sec;
}

enum npu_status
rk_emit_lut_prologue(struct npu_stream *s, const struct rk_conv_geom *g,
                     const struct rk_emit_addrs *a)
{
    /* The LUT rule (docs/npu-dpu-ops.md §2): the previous task may read the tables, so a
     * guard task goes before the upload (NOTES S19: the upload is a task of its own). The
     * 1x1x16 int8 copies use the first 32 bytes of the result, which the conv overwrites. */
    const struct npu_dpu_lut *l = npu_dpu_lut_get(g->lut_id);
    struct npu_dpu_ref scratch = {a->out[0].buffer, a->out[0].offset};
    enum npu_status st;
    if (!l)
        return NPU_ERR_INVALID;
    if ((st = npu_dpu_emit_guard(s, scratch, NULL)))
        return st;
    return npu_dpu_emit_lut_upload(s, l, scratch, NULL);
}

double
rk_lut_prologue_seconds(void)
{
    /* every table uploads the same number of words: price it once with a dummy address */
    static double sec = -1;
    if (sec < 0) {
        struct npu_stream s;
        struct npu_dpu_cost c = {0};
        npu_stream_init(&s);
        struct npu_dpu_ref scratch = {NPU_BUF_ACT, 0};
        if (!npu_dpu_emit_guard(&s, scratch, &c))
            npu_dpu_emit_lut_upload(&s, npu_dpu_lut_get(npu_dpu_lut_fn_id(NPU_DPU_FN_TANH)),
                                    scratch, &c);
        npu_stream_fini(&s);
        sec = c.s;
    }
    return sec;
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
