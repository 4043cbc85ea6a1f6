/* SPDX-License-Identifier: MIT */
/*
 * dpu-pool.c: pooling.
 *
 * Max pooling runs on the PPU fed by PPU_RDMA (facts §5.4; kernel and stride up to 16, pads
 * up to 7). Strict mode accepts only a zero pad value for fp16 (the fp pad-value format is
 * open), which is max pooling's -inf padding only when the input is known to be >= 0 (a
 * ReLU / clip(>= 0) / sigmoid producer); otherwise padded max pooling stays on the CPU.
 * Global max pooling of maps larger than 16 x 16 runs in stages whose kernels divide the map.
 *
 * Average pooling cannot use the PPU in strict mode (fp16 RECIP_KERNEL format, facts §6.6):
 * it runs as a depthwise convolution with ones weights and the 1/(kh kw) scale applied in
 * fp32 by the BS MUL stage (BRDMA operand), which is exact for count_include_pad = 1 (or no
 * padding). Global average pooling is the same with the kernel over the whole map (kernels
 * up to 31 x 31 in one task, larger maps in stages).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dpu-low.h"

/* Whether v is known to be >= 0 (for zero padding of max pooling). */
static bool
nonneg(const struct npu_value *v)
{
    const struct npu_node *p = v ? v->producer : NULL;
    if (!p)
        return false;
    if (p->op == NPU_OP_RK_TO_HOST && p->in[0])
        return nonneg(p->in[0]);
    switch (p->op) {
    case NPU_OP_RELU:
    case NPU_OP_SIGMOID:
    case NPU_OP_ABS:
    case NPU_OP_HARD_SIGMOID: return true;
    case NPU_OP_RK_DPU: return npu_node_int(p, "nonneg", 0) != 0;
    case NPU_OP_MAX_POOL: return p->in[0] && nonneg(p->in[0]);
    case NPU_OP_CLIP:
        return p->nin > 1 && p->in[1] && npu_value_data(p->in[1]) &&
               npu_value_get_f64(p->in[1], 0) >= 0;
    default: break;
    }
    const char *act = npu_node_string(p, p->op == NPU_OP_RK_CONV ? "act" : "npu_act", NULL);
    if (!act)
        return false;
    if (!strcmp(act, "relu") || !strcmp(act, "sigmoid"))
        return true;
    if (!strcmp(act, "clip"))
        return p->op == NPU_OP_RK_CONV ? npu_node_float(p, "act_min", -1) >= 0
                                       : npu_node_float(p, "npu_act_alpha", -1) >= 0;
    return false;
}

/* Largest divisor of n that is <= cap (1 if none bigger). */
static uint32_t
divisor(uint32_t n, uint32_t cap)
{
    for (uint32_t k = NPU_MIN(n, cap); k > 1; k--)
        if (n % k == 0)
            return k;
    return 1;
}

static enum npu_status
global_max(struct rkd *b, const struct npu_dpu_map *x, const struct vmap *vo, struct why *w)
{
    struct npu_dpu_map cur = *x;
    for (int stage = 0; stage < 4; stage++) {
        uint32_t kh = cur.h <= 16 ? cur.h : divisor(cur.h, 16);
        uint32_t kw = cur.w <= 16 ? cur.w : divisor(cur.w, 16);
        if ((cur.h > 16 && kh == 1) || (cur.w > 16 && kw == 1))
            return why_set(w, "global max pooling of %ux%u: no kernel up to 16 divides the map",
                           cur.h, cur.w);
        uint32_t oh = cur.h / kh, ow = cur.w / kw;
        struct npu_dpu_map o;
        if (oh == 1 && ow == 1)
            o = dl_map(rkd_result(), vo);
        else
            o = npu_dpu_map_packed(rkd_temp(b, (uint64_t)NPU_DIV_ROUND_UP(cur.c, 8) * oh * ow * 16),
                                   NPU_DPU_FP16, cur.c, oh, ow);
        struct npu_dpu_pool p = {
            .op = NPU_DPU_POOL_MAX, .in = cur, .kh = kh, .kw = kw, .sy = kh, .sx = kw, .out = o};
        rkd_pool(b, &p);
        if (oh == 1 && ow == 1)
            return dl_finish(b, 0, vo);
        cur = o;
    }
    return why_set(w, "global max pooling needs too many stages");
}

/* Depthwise sum over kh x kw windows (stride s) scaled by `scale` (fp32 BS MUL). */
static void
dw_avg(struct rkd *b, const struct npu_dpu_map *x, uint32_t kh, uint32_t kw, uint32_t sy,
       uint32_t sx, uint32_t pt, uint32_t pl, float scale, const struct npu_dpu_map *out)
{
    uint32_t C = x->c;
    uint32_t n = C * kh * kw;
    float *ones = malloc(n * sizeof(float)), *sc = malloc(C * sizeof(float));
    if (!ones || !sc) {
        free(ones);
        free(sc);
        b->err = NPU_ERR_NOMEM;
        return;
    }
    for (uint32_t i = 0; i < n; i++)
        ones[i] = 1.0f;
    for (uint32_t c = 0; c < C; c++)
        sc[c] = scale;
    struct npu_weight_layout wl;
    if (npu_weight_layout_init(&wl, 2, C, C, kh, kw, true)) {
        free(ones);
        free(sc);
        b->err = NPU_ERR_UNSUPPORTED;
        return;
    }
    uint16_t *h = malloc(n * 2);
    uint8_t *pk = malloc(wl.total_bytes);
    if (!h || !pk) {
        free(ones), free(sc), free(h), free(pk);
        b->err = NPU_ERR_NOMEM;
        return;
    }
    for (uint32_t i = 0; i < n; i++)
        h[i] = npu_fp32_to_fp16(ones[i]);
    npu_weight_pack(&wl, pk, wl.total_bytes, h, 0);
    struct npu_dpu_conv cv = {.in = *x,
                              .kernels = C,
                              .kh = kh,
                              .kw = kw,
                              .sy = sy,
                              .sx = sx,
                              .pad_top = pt,
                              .pad_left = pl,
                              .depthwise = true,
                              .out = *out};
    cv.weights = rkd_const(b, "ones", pk, wl.total_bytes);
    cv.st.bs.mul = NPU_DPU_SRC_MEM;
    cv.st.bs.mul_mem = dl_chan_const(b, "recip", sc, C);
    rkd_conv(b, &cv);
    free(ones), free(sc), free(h), free(pk);
}

enum npu_status
dl_lower_pool(struct rkd *b, struct npu_node *n, struct why *w)
{
    struct npu_value *x = n->in[0], *out = n->out[0];
    if (!x || n->nout < 1 || x->t.ndim != 4 || x->t.dims[0] != 1 || out->t.ndim != 4)
        return why_set(w, "pooling of a [1, C, H, W] map only");
    /* a used indices output (MaxPool's output 1) is refused by dl_lower_any (dpu-ops.c) */
    if (!npu_dtype_is_float(x->t.dtype))
        return why_set(w, "only float tensors (fp16 on the NPU)");
    struct vmap vin = {
        .view = {(uint32_t)x->t.dims[1], (uint32_t)x->t.dims[2], (uint32_t)x->t.dims[3]},
        .order = NPU_VIEW_NCHW};
    struct vmap vo = {
        .view = {(uint32_t)out->t.dims[1], (uint32_t)out->t.dims[2], (uint32_t)out->t.dims[3]},
        .order = NPU_VIEW_NCHW};
    struct npu_dpu_map xm;
    if (!dl_input(b, x, &vin, &xm, w))
        return NPU_ERR_UNSUPPORTED;
    bool global = n->op == NPU_OP_GLOBAL_MAX_POOL || n->op == NPU_OP_GLOBAL_AVERAGE_POOL;
    bool avg = n->op == NPU_OP_AVERAGE_POOL || n->op == NPU_OP_GLOBAL_AVERAGE_POOL;
    if (global) {
        if (!avg)
            return global_max(b, &xm, &vo, w);
        /* stages: windows of up to 7 x 7 with stride = window (the conv stride field is 3
         * bits) while the map exceeds 31 x 31, then one window over the rest (stride 1,
         * one output pixel); each stage averages its own window in fp32 */
        struct npu_dpu_map cur = xm;
        for (int stage = 0; stage < 6; stage++) {
            bool last = cur.h <= 31 && cur.w <= 31;
            uint32_t kh = last ? cur.h : cur.h <= 31 ? 1 : divisor(cur.h, 7);
            uint32_t kw = last ? cur.w : cur.w <= 31 ? 1 : divisor(cur.w, 7);
            if (!last && ((cur.h > 31 && kh == 1) || (cur.w > 31 && kw == 1)))
                return why_set(w,
                               "global average pooling of %ux%u: no window up to 7 divides "
                               "the map",
                               cur.h, cur.w);
            uint32_t oh = last ? 1 : cur.h / kh, ow = last ? 1 : cur.w / kw;
            struct npu_dpu_map o =
                last ? dl_map(rkd_result(), &vo)
                     : npu_dpu_map_packed(
                           rkd_temp(b, (uint64_t)NPU_DIV_ROUND_UP(cur.c, 8) * oh * ow * 16),
                           NPU_DPU_FP16, cur.c, oh, ow);
            dw_avg(b, &cur, kh, kw, last ? 1 : kh, last ? 1 : kw, 0, 0,
                   (float)(1.0 / ((double)kh * kw)), &o);
            if (last)
                return dl_finish(b, 0, &vo);
            cur = o;
        }
        return why_set(w, "global average pooling needs too many stages");
    }
    size_t nk = 0, ns = 0, np = 0, nd = 0;
    const int64_t *k = npu_node_ints(n, "kernel_shape", &nk);
    const int64_t *s = npu_node_ints(n, "strides", &ns);
    const int64_t *p = npu_node_ints(n, "pads", &np);
    const int64_t *dil = npu_node_ints(n, "dilations", &nd);
    const char *ap = npu_node_string(n, "auto_pad", "NOTSET");
    if (!k || nk != 2 || (s && ns != 2) || (p && np != 4))
        return why_set(w, "2-D pooling attributes");
    if (strcmp(ap, "NOTSET") && strcmp(ap, "VALID"))
        return why_set(w, "auto_pad %s is not lowered", ap);
    if (npu_node_int(n, "ceil_mode", 0))
        return why_set(w, "ceil_mode is not lowered");
    if (dil)
        for (size_t i = 0; i < nd; i++)
            if (dil[i] != 1)
                return why_set(w, "dilated pooling is not lowered");
    uint32_t kh = (uint32_t)k[0], kw = (uint32_t)k[1];
    uint32_t sy = s ? (uint32_t)s[0] : 1, sx = s ? (uint32_t)s[1] : 1;
    uint32_t pt = p ? (uint32_t)p[0] : 0, pl = p ? (uint32_t)p[1] : 0;
    uint32_t pb = p ? (uint32_t)p[2] : 0, pr = p ? (uint32_t)p[3] : 0;
    bool padded = pt || pl || pb || pr;
    struct npu_dpu_map om = dl_map(rkd_result(), &vo);
    if (!avg) {
        if (padded && !nonneg(x))
            return why_set(w, "padded max pooling needs an input known to be >= 0 (strict mode "
                              "accepts only a zero fp16 pad value)");
        struct npu_dpu_pool pp = {.op = NPU_DPU_POOL_MAX,
                                  .in = xm,
                                  .kh = kh,
                                  .kw = kw,
                                  .sy = sy,
                                  .sx = sx,
                                  .pad_top = pt,
                                  .pad_left = pl,
                                  .pad_bottom = pb,
                                  .pad_right = pr,
                                  .out = om};
        rkd_pool(b, &pp);
        return dl_finish(b, 0, &vo);
    }
    if (padded && !npu_node_int(n, "count_include_pad", 0))
        return why_set(w, "padded average pooling with count_include_pad = 0 varies its divisor "
                          "per position (not lowered)");
    if (sy > 7 || sx > 7 || kh > 31 || kw > 31 || pt > 15 || pl > 15)
        return why_set(w, "average pooling kernel / stride / pads beyond the conv fields");
    dw_avg(b, &xm, kh, kw, sy, sx, pt, pl, (float)(1.0 / ((double)kh * kw)), &om);
    return dl_finish(b, 0, &vo);
}
