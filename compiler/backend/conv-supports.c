/* SPDX-License-Identifier: MIT */
/*
 * conv-supports.c: whether the NPU runs a MatMul, Gemm, Conv or ConvTranspose (and their
 * integer / QLinear forms) and at what modeled cost: the node is read into a conv
 * description (struct conv_src), refusing what the register fields or the lowering cannot
 * hold, then tiled; the conv/matmul handler's supports() and cost().
 *
 * A matrix product is a 1x1 convolution (facts §2.10): A[M][K] is a feature
 * map of M one-pixel rows with K channels, B[K][N] N kernels of 1x1xK,
 * packed at compile time. Conv maps directly; depthwise is CONV_MODE 3;
 * grouped convs run one task set per group when the groups line up with
 * atoms and kernel groups, else as a dense conv with block-diagonal weights.
 */
#include <math.h>
#include <string.h>

#include "conv-priv.h"

static bool
const_float(const struct npu_value *v)
{
    return v && v->kind == NPU_VALUE_CONST &&
           (v->t.dtype == NPU_DTYPE_FP32 || v->t.dtype == NPU_DTYPE_FP16);
}

/* Activation of the node, and whether the conv's DPU stages can apply it. */
static void
read_act(const struct npu_node *n, struct conv_src *s)
{
    s->act_name = npu_node_string(n, "npu_act", NULL);
    if (s->act_name && !strcmp(s->act_name, "none"))
        s->act_name = NULL;
    s->g.act = RK_ACT_NONE;
    s->act_fused = true;
    if (!s->act_name)
        return;
    if (!strcmp(s->act_name, "relu")) {
        s->g.act = RK_ACT_RELU;
    } else if (!strcmp(s->act_name, "clip")) {
        float lo = npu_node_float(n, "npu_act_alpha", -INFINITY);
        float hi = npu_node_float(n, "npu_act_beta", INFINITY);
        s->act_alpha = lo;
        s->act_beta = hi;
        /* BS ReLU-X clamps at one bound after ReLU; the lower bound is moved
         * to 0 by subtracting it first, so it must be finite. */
        if (isfinite(lo) && !isnan(hi) && hi >= lo) {
            s->g.act = RK_ACT_CLIP;
            s->g.act_lo = lo;
            s->g.act_hi = hi;
        } else {
            s->act_fused = false;
        }
    } else {
        /* leaky_relu needs BS PReLU (unverified, facts §5.3); LUT activations
         * are the DPU lowerings': all run as a separate node after the conv */
        s->act_fused = false;
        s->act_alpha = npu_node_float(n, "npu_act_alpha", 0);
        s->act_beta = npu_node_float(n, "npu_act_beta", 0);
    }
}

static bool
read_matmul(const struct npu_graph *gr, const struct npu_node *n, struct conv_src *s, char *why,
            size_t wl)
{
    (void)gr;
    struct npu_value *a = npu_node_in(n, s->xi), *b = npu_node_in(n, s->wi);
    if (!a || !b)
        return npu_be_refuse(why, wl, "missing operand");
    if (s->kind == SRC_GEMM) {
        if (npu_node_int(n, "transA", 0))
            return npu_be_refuse(why, wl, "Gemm with transA=1");
        s->w_trans = npu_node_int(n, "transB", 0) == 0;
        s->alpha = npu_node_float(n, "alpha", 1.0f);
        s->beta = npu_node_float(n, "beta", 1.0f);
        if (a->t.ndim != 2)
            return npu_be_refuse(why, wl, "Gemm A must be 2-D");
    } else {
        s->w_trans = true;
        s->alpha = 1.0f;
        s->beta = 1.0f;
    }
    if (s->integer) {
        if (!conv_int8_operand(a))
            return npu_be_refuse(why, wl, "integer product of %s (int8 / uint8 only)",
                                 npu_dtype_name(a->t.dtype));
        if (b->kind != NPU_VALUE_CONST || !conv_int8_operand(b))
            return npu_be_refuse(why, wl, "integer product: B must be an int8 / uint8 constant");
    } else {
        if (!npu_dtype_is_float(a->t.dtype) || a->t.dtype == NPU_DTYPE_FP64)
            return npu_be_refuse(why, wl, "activation dtype %s (fp32/fp16 only)",
                                 npu_dtype_name(a->t.dtype));
        if (!const_float(b))
            return npu_be_refuse(why, wl,
                                 "B is not a float constant (activation x activation "
                                 "products go through the DPU attention lowering)");
    }
    if (b->t.ndim != 2)
        return npu_be_refuse(why, wl, "B must be 2-D");
    if (a->t.ndim < 1 || a->t.ndim > 4)
        return npu_be_refuse(why, wl, "A must have rank 1 to 4");
    uint32_t K = (uint32_t)a->t.dims[a->t.ndim - 1];
    uint32_t N = (uint32_t)(s->w_trans ? b->t.dims[1] : b->t.dims[0]);
    if ((s->w_trans ? b->t.dims[0] : b->t.dims[1]) != K)
        return npu_be_refuse(why, wl, "inner dims disagree");
    uint64_t M = 1;
    for (int i = 0; i < a->t.ndim - 1; i++)
        M *= (uint64_t)a->t.dims[i];
    if (M > 8192 || K > 8192 || N > 8192)
        return npu_be_refuse(why, wl, "M %llu, K %u, N %u: the NPU views hold at most 8192",
                             (unsigned long long)M, K, N);
    s->x = a;
    s->in_view[0] = K;
    s->in_view[1] = (uint32_t)M;
    s->in_view[2] = 1;
    s->out_view[0] = N;
    s->out_view[1] = (uint32_t)M;
    s->out_view[2] = 1;
    const struct npu_tensor *y = &n->out[0]->t;
    s->out_ndim = y->ndim;
    memcpy(s->out_dims, y->dims, sizeof(int64_t) * (size_t)y->ndim);
    s->w = b;
    struct npu_value *c = s->integer ? NULL : npu_node_in(n, 2);
    if (s->integer && !conv_read_zero_points(n, s, N, why, wl))
        return false;
    if (s->qlinear && !conv_read_qparams(n, s, N, why, wl))
        return false;
    if (s->qlinear && npu_node_in(n, 8)) {
        /* OpenNPU's int32 bias per column (the quantiser's MatMul bias) */
        const struct npu_value *qb = npu_node_in(n, 8);
        if (qb->kind != NPU_VALUE_CONST || qb->t.dtype != NPU_DTYPE_INT32 ||
            npu_value_numel(qb) != N)
            return npu_be_refuse(why, wl,
                                 "QLinearMatMul bias must be an int32 constant per "
                                 "column");
        s->qb = qb;
    }
    if (c) {
        if (!const_float(c))
            return npu_be_refuse(why, wl, "bias is not a float constant");
        int64_t nb = npu_value_numel(c);
        if (nb != 1 && nb != N)
            return npu_be_refuse(why, wl, "bias must be per output column (%u values) or a scalar",
                                 N);
        if (nb == N && c->t.ndim > 0 && c->t.dims[c->t.ndim - 1] != N)
            return npu_be_refuse(why, wl, "bias does not broadcast per column");
        s->b = c;
    }
    struct rk_conv_geom *g = &s->g;
    g->c = K;
    g->h = (uint32_t)M;
    g->w = 1;
    g->k = N;
    g->oh = (uint32_t)M;
    g->ow = 1;
    g->kh = g->kw = g->sy = g->sx = g->dy = g->dx = 1;
    g->bias = s->b != NULL || (s->integer && (s->x_zp || s->qb));
    return true;
}

static bool
read_conv(const struct npu_graph *gr, const struct npu_node *n, struct conv_src *s, char *why,
          size_t wl)
{
    (void)gr;
    struct npu_value *x = npu_node_in(n, s->xi), *w = npu_node_in(n, s->wi);
    struct npu_value *b = npu_node_in(n, 2);
    if (!x || !w)
        return npu_be_refuse(why, wl, "missing operand");
    /* 2-D ([N, C, H, W]) and 1-D ([N, C, L], run as H = 1) convs */
    const bool one_d = x->t.ndim == 3 && !s->transposed;
    if ((x->t.ndim != 4 && !one_d) || x->t.dims[0] < 1)
        return npu_be_refuse(why, wl,
                             "only 1-D and 2-D convolutions (input [N, C, L] or "
                             "[N, C, H, W])");
    const uint32_t wnd = one_d ? 3 : 4;
    if (x->t.dims[0] > 1 && (s->transposed || s->integer))
        return npu_be_refuse(why, wl, "batch %lld of a %s (one image only)",
                             (long long)x->t.dims[0],
                             s->transposed ? "ConvTranspose" : "integer conv");
    if (x->t.dims[0] > 8192)
        return npu_be_refuse(why, wl, "batch %lld", (long long)x->t.dims[0]);
    s->images = (uint32_t)x->t.dims[0];
    s->one_d = one_d;
    if (s->integer) {
        b = NULL;
        if (!conv_int8_operand(x))
            return npu_be_refuse(why, wl, "integer conv of %s (int8 / uint8 only)",
                                 npu_dtype_name(x->t.dtype));
        if (w->kind != NPU_VALUE_CONST || !conv_int8_operand(w) || w->t.ndim != (int)wnd)
            return npu_be_refuse(why, wl,
                                 "integer conv: weights must be a 4-D int8 / uint8 constant");
        if (s->qlinear && npu_node_in(n, 8)) {
            const struct npu_value *qb = npu_node_in(n, 8);
            if (qb->kind != NPU_VALUE_CONST || qb->t.dtype != NPU_DTYPE_INT32 ||
                npu_value_numel(qb) != w->t.dims[0])
                return npu_be_refuse(why, wl, "QLinearConv B must be an int32 constant per kernel");
            s->qb = qb;
        }
    } else {
        if (!npu_dtype_is_float(x->t.dtype) || x->t.dtype == NPU_DTYPE_FP64)
            return npu_be_refuse(why, wl, "activation dtype %s (fp32/fp16 only)",
                                 npu_dtype_name(x->t.dtype));
        if (!const_float(w) || w->t.ndim != (int)wnd)
            return npu_be_refuse(why, wl, "weights are not a %u-D float constant", wnd);
    }
    if (b &&
        (!const_float(b) || npu_value_numel(b) != (s->transposed ? w->t.dims[1] : w->t.dims[0])))
        return npu_be_refuse(why, wl, "bias is not a per-kernel float constant");
    const char *ap = npu_node_string(n, "auto_pad", "NOTSET");
    size_t cnt;
    const int64_t *v;
    if (x->t.dims[1] > 8192 || x->t.dims[2] > 8192 || x->t.dims[wnd - 1] > 8192 ||
        w->t.dims[0] > 8192 || w->t.dims[2] > 8192 || w->t.dims[wnd - 1] > 8192)
        return npu_be_refuse(why, wl, "dims over 8192");
    uint32_t C = (uint32_t)x->t.dims[1], H = one_d ? 1 : (uint32_t)x->t.dims[2];
    uint32_t W = (uint32_t)x->t.dims[wnd - 1];
    uint32_t K = (uint32_t)w->t.dims[0];
    uint32_t kh = one_d ? 1 : (uint32_t)w->t.dims[2], kw = (uint32_t)w->t.dims[wnd - 1];
    int64_t grp = npu_node_int(n, "group", 1);
    if (s->transposed) {
        /* ConvTranspose weights are [C, K/group, kh, kw] */
        if (grp != 1)
            return npu_be_refuse(why, wl, "grouped ConvTranspose");
        if (strcmp(ap, "NOTSET") || npu_node_attr(n, "output_shape"))
            return npu_be_refuse(why, wl, "ConvTranspose with auto_pad / output_shape");
        if ((v = npu_node_ints(n, "strides", &cnt)))
            for (size_t i = 0; i < cnt; i++)
                if (v[i] != 1)
                    return npu_be_refuse(why, wl,
                                         "ConvTranspose with stride > 1 (no NPU lowering: "
                                         "outputs would interleave phases; CPU)");
        if ((v = npu_node_ints(n, "dilations", &cnt)))
            for (size_t i = 0; i < cnt; i++)
                if (v[i] != 1)
                    return npu_be_refuse(why, wl, "dilated ConvTranspose");
        int64_t p4[4] = {0, 0, 0, 0};
        if ((v = npu_node_ints(n, "pads", &cnt)) && cnt == 4)
            memcpy(p4, v, sizeof(p4));
        const struct npu_tensor *y = &n->out[0]->t;
        K = (uint32_t)w->t.dims[1];
        int64_t pt = (int64_t)kh - 1 - p4[0], pl = (int64_t)kw - 1 - p4[1];
        int64_t pb = y->dims[2] - H - pt + kh - 1, pr = y->dims[3] - W - pl + kw - 1;
        if (pt < 0 || pl < 0 || pb < 0 || pr < 0 || pt > 15 || pl > 15 || pb > 15 || pr > 15)
            return npu_be_refuse(why, wl,
                                 "ConvTranspose padding beyond the kernel (PAD_CON0 0..15)");
        s->x = x;
        s->w = w;
        s->b = b;
        s->alpha = s->beta = 1.0f;
        s->groups = 1;
        s->pads[0] = (uint32_t)pt;
        s->pads[1] = (uint32_t)pl;
        s->pads[2] = (uint32_t)pb;
        s->pads[3] = (uint32_t)pr;
        if (C > 8192 || K > 8192 || H > 8192 || y->dims[2] > 8192 || W > MAX_WIDTH ||
            y->dims[3] > MAX_WIDTH || kh > 32 || kw > 32)
            return npu_be_refuse(why, wl, "ConvTranspose sizes past the register fields");
        s->in_view[0] = C;
        s->in_view[1] = H;
        s->in_view[2] = W;
        s->out_view[0] = K;
        s->out_view[1] = (uint32_t)y->dims[2];
        s->out_view[2] = (uint32_t)y->dims[3];
        s->out_ndim = y->ndim;
        memcpy(s->out_dims, y->dims, sizeof(int64_t) * (size_t)y->ndim);
        struct rk_conv_geom *g = &s->g;
        g->c = C;
        g->h = H;
        g->w = W;
        g->k = K;
        g->oh = (uint32_t)y->dims[2];
        g->ow = (uint32_t)y->dims[3];
        g->kh = kh;
        g->kw = kw;
        g->sy = g->sx = g->dy = g->dx = 1;
        g->pt = (uint32_t)pt;
        g->pl = (uint32_t)pl;
        g->bias = b != NULL;
        return true;
    }
    uint32_t st[2] = {1, 1}, dil[2] = {1, 1};
    int64_t pads[4] = {0, 0, 0, 0};
    /* 1-D: stride / dilation on W only, pads [b, e] -> [0, b, 0, e] */
    const size_t nsp = one_d ? 1 : 2;
    if ((v = npu_node_ints(n, "strides", &cnt)) && cnt == nsp) {
        for (size_t i = 0; i < nsp; i++)
            if (v[i] < 1 || v[i] > 64)
                return npu_be_refuse(why, wl, "stride %lld", (long long)v[i]);
        st[0] = one_d ? 1 : (uint32_t)v[0];
        st[1] = (uint32_t)v[nsp - 1];
    }
    if ((v = npu_node_ints(n, "dilations", &cnt)) && cnt == nsp) {
        for (size_t i = 0; i < nsp; i++)
            if (v[i] < 1 || v[i] > 32)
                return npu_be_refuse(why, wl, "dilation %lld", (long long)v[i]);
        dil[0] = one_d ? 1 : (uint32_t)v[0];
        dil[1] = (uint32_t)v[nsp - 1];
    }
    s->skh = kh;
    s->skw = kw;
    s->dly = dil[0];
    s->dlx = dil[1];
    if (dil[0] != 1 || dil[1] != 1) {
        /* the ATROUS encoding is untested (facts §6.14) and the simulator refuses it in
         * strict mode: the dilated kernel runs as a dense one with zero taps between the
         * source's, (k - 1) * d + 1 taps (WEIGHT_SIZE2 holds 32) */
        if (s->integer)
            return npu_be_refuse(why, wl, "dilated integer conv");
        kh = (kh - 1) * dil[0] + 1;
        kw = (kw - 1) * dil[1] + 1;
        if (kh > 32 || kw > 32)
            return npu_be_refuse(why, wl,
                                 "dilated kernel %ux%u (WEIGHT_SIZE2 holds 1..32 "
                                 "taps; the ATROUS fields are unverified, facts "
                                 "§6.14)",
                                 kh, kw);
    }
    bool patch = grp == 1 && st[0] == kh && st[1] == kw && (kh > 1 || kw > 1) && !s->integer &&
                 H % kh == 0 && W % kw == 0 && s->images == 1 && !one_d && dil[0] == 1 &&
                 dil[1] == 1;
    /* only a host value can be rearranged on the way in */
    bool host_in = !(x->kind == NPU_VALUE_NODE && (!x->producer || npu_op_is_rk(x->producer->op) ||
                                                   x->producer->device == NPU_DEVICE_NPU));
    if (patch) {
        const int64_t *pp = npu_node_ints(n, "pads", &cnt);
        for (size_t i = 0; pp && i < cnt; i++)
            if (pp[i])
                patch = false;
        if (strcmp(ap, "NOTSET") && strcmp(ap, "VALID"))
            patch = false;
        /* only a host value can be rearranged on the way in */
        if (x->kind == NPU_VALUE_NODE && (!x->producer || npu_op_is_rk(x->producer->op) ||
                                          x->producer->device == NPU_DEVICE_NPU))
            patch = false;
        if ((uint64_t)C * kh * kw > 8192)
            patch = false;
    }
    if (patch && (st[0] > 7 || st[1] > 7 || C * kh * kw >= 32)) {
        /* the equivalent 1x1 conv (facts: the MAC array reduces 32 channels
         * per step, so C x kh x kw channels fill it where C alone would not) */
        s->patchify = true;
        s->pk[0] = kh;
        s->pk[1] = kw;
        C = C * kh * kw;
        H /= kh;
        W /= kw;
        kh = kw = 1;
        s->skh = s->skw = 1; /* the flattened OIHW weights are the 1x1 kernels */
        st[0] = st[1] = 1;
        ap = "VALID";
    }
    if (st[0] < 1 || st[1] < 1 || st[0] > 7 || st[1] > 7)
        return npu_be_refuse(why, wl, "stride %ux%u (CONV_CON3 holds 1..7)", st[0], st[1]);
    if (kh < 1 || kw < 1 || kh > 32 || kw > 32)
        return npu_be_refuse(why, wl, "kernel %ux%u (WEIGHT_SIZE2 holds 1..32)", kh, kw);
    if (!strcmp(ap, "NOTSET")) {
        if (!one_d && (v = npu_node_ints(n, "pads", &cnt)) && cnt == 4) {
            pads[0] = v[0]; /* top */
            pads[1] = v[1]; /* left */
            pads[2] = v[2]; /* bottom */
            pads[3] = v[3]; /* right */
        } else if (one_d && (v = npu_node_ints(n, "pads", &cnt)) && cnt == 2) {
            pads[1] = v[0]; /* begin */
            pads[3] = v[1]; /* end */
        }
    } else if (!strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER")) {
        for (int d = 0; d < 2; d++) {
            int64_t in = d ? W : H, k = d ? kw : kh, s1 = st[d];
            int64_t out = (in + s1 - 1) / s1;
            int64_t tot = (out - 1) * s1 + k - in;
            if (tot < 0)
                tot = 0;
            int64_t small = tot / 2, big = tot - small;
            bool upper = !strcmp(ap, "SAME_UPPER");
            pads[d] = upper ? small : big;
            pads[2 + d] = upper ? big : small;
        }
    } else if (strcmp(ap, "VALID")) {
        return npu_be_refuse(why, wl, "auto_pad %s", ap);
    }
    for (int i = 0; i < 4; i++)
        if (pads[i] < 0 || pads[i] > 15)
            return npu_be_refuse(why, wl, "padding %lld (PAD_CON0 holds 0..15)",
                                 (long long)pads[i]);
    if (grp < 1 || grp > 8192 || C % grp || K % grp ||
        w->t.dims[1] * (s->patchify ? (int64_t)s->pk[0] * s->pk[1] : 1) != C / grp)
        return npu_be_refuse(why, wl, "inconsistent group %lld", (long long)grp);
    int64_t oh = (H + pads[0] + pads[2] - kh) / st[0] + 1;
    int64_t ow = (W + pads[1] + pads[3] - kw) / st[1] + 1;
    if (H + pads[0] + pads[2] < kh || W + pads[1] + pads[3] < kw || oh < 1 || ow < 1)
        return npu_be_refuse(why, wl, "empty output");
    /* 1..4 channels of a host image: small-channel input mode (facts §2.10,
     * RKNN's ARGB capture): packed pixels instead of 16-byte atoms */
    if (!s->patchify && !s->integer && grp == 1 && C <= 4 && host_in && s->images == 1 && !one_d)
        s->g.argb = C;
    /* the images as channel blocks, the groups repeated per image */
    s->k_src = K;
    s->c_src = C / (uint32_t)grp;
    if (s->images > 1) {
        if ((uint64_t)C * s->images > 8192 || (uint64_t)K * s->images > 8192)
            return npu_be_refuse(why, wl, "batch %u x %u channels over 8192 (DPU cube fields)",
                                 s->images, C > K ? C : K);
        C *= s->images;
        K *= s->images;
        grp *= s->images;
    }
    if (C > 8192 || K > 8192 || H > 8192 || oh > 8192)
        return npu_be_refuse(why, wl, "channel or height over 8192 (DPU cube fields)");
    if (W > MAX_WIDTH || ow > MAX_WIDTH)
        return npu_be_refuse(why, wl, "width over %u (CNA DATAIN_WIDTH)", MAX_WIDTH);
    /* a 1-D map (N * C, 1, L) reads as NCHW unless N * C == L (npu_rk_order_of) */
    if (one_d && ((C == W && W > 1) || (K == ow && ow > 1)))
        return npu_be_refuse(why, wl,
                             "1-D conv whose length equals its batch x channels "
                             "(the NPU view would read as rows)");
    s->x = x;
    s->in_view[0] = C;
    s->in_view[1] = H;
    s->in_view[2] = W;
    s->out_view[0] = K;
    s->out_view[1] = (uint32_t)oh;
    s->out_view[2] = (uint32_t)ow;
    const struct npu_tensor *y = &n->out[0]->t;
    s->out_ndim = y->ndim;
    memcpy(s->out_dims, y->dims, sizeof(int64_t) * (size_t)y->ndim);
    s->w = w;
    s->b = b;
    s->alpha = s->beta = 1.0f;
    if (s->integer && !conv_read_zero_points(n, s, K, why, wl))
        return false;
    if (s->qlinear && !conv_read_qparams(n, s, K, why, wl))
        return false;
    for (int i = 0; i < 4; i++)
        s->pads[i] = (uint32_t)pads[i];
    struct rk_conv_geom *g = &s->g;
    g->c = C;
    g->h = H;
    g->w = W;
    g->k = K;
    g->oh = (uint32_t)oh;
    g->ow = (uint32_t)ow;
    g->kh = kh;
    g->kw = kw;
    g->sy = st[0];
    g->sx = st[1];
    g->dy = g->dx = 1;
    g->pt = (uint32_t)pads[0];
    g->pl = (uint32_t)pads[1];
    g->bias = b != NULL || (s->integer && (s->x_zp || s->qb));
    /* integer: depthwise only (CORE DW_EN, Mesa's int8 depthwise conv, facts §2.10:
     * 64-channel output groups for int8); other groups stay refused */
    if (grp > 1 && s->integer && !(grp == C && K == C && s->images == 1))
        return npu_be_refuse(why, wl, "grouped ConvInteger");
    if (grp > 1) {
        uint32_t cg = C / (uint32_t)grp, kgp = K / (uint32_t)grp;
        if (grp == C && K == C) {
            g->depthwise = true;
        } else if (cg % 8 == 0 && kgp % 16 == 0) {
            s->groups = (uint32_t)grp; /* per-group tasks: windows on atoms and kernel groups */
        } else if ((uint64_t)K * C * kh * kw <= (64u << 20)) {
            s->block_diag = true; /* dense conv, zero weights off the diagonal blocks */
        } else {
            return npu_be_refuse(why, wl, "group %lld with %u/%u channels per group",
                                 (long long)grp, cg, kgp);
        }
    }
    return true;
}

bool
conv_read_src(const struct npu_graph *g, const struct npu_node *n, struct conv_src *s, char *why,
              size_t wl)
{
    memset(s, 0, sizeof(*s));
    s->groups = 1;
    s->transposed = n->op == NPU_OP_CONV_TRANSPOSE;
    s->kind = (n->op == NPU_OP_CONV || n->op == NPU_OP_CONV_INTEGER || s->transposed) ? SRC_CONV
              : n->op == NPU_OP_GEMM                                                  ? SRC_GEMM
                                                                                      : SRC_MATMUL;
    s->qlinear = n->op == NPU_OP_QLINEAR_MATMUL || n->op == NPU_OP_QLINEAR_CONV;
    s->integer = s->qlinear || n->op == NPU_OP_MATMUL_INTEGER || n->op == NPU_OP_CONV_INTEGER;
    if (n->op == NPU_OP_QLINEAR_CONV || n->op == NPU_OP_QLINEAR_MATMUL)
        s->kind = n->op == NPU_OP_QLINEAR_CONV ? SRC_CONV : SRC_MATMUL;
    s->xi = 0;
    s->wi = s->qlinear ? 3 : 1;
    s->xzi = 2;
    s->wzi = s->qlinear ? 5 : 3;
    if (n->nout != 1)
        return npu_be_refuse(why, wl, "extra outputs");
    if (s->qlinear   ? !conv_int8_operand(n->out[0])
        : s->integer ? n->out[0]->t.dtype != NPU_DTYPE_INT32
                     : !npu_dtype_is_float(n->out[0]->t.dtype))
        return npu_be_refuse(why, wl, "result dtype %s", npu_dtype_name(n->out[0]->t.dtype));
    bool ok = s->kind == SRC_CONV ? read_conv(g, n, s, why, wl) : read_matmul(g, n, s, why, wl);
    if (!ok)
        return false;
    if (s->integer) {
        /* facts §2.9: int8 in / proc, int32 out (MTX matmul_int8) */
        s->g.in_dt = NPU_DTYPE_INT8;
        s->g.out_dt = s->qlinear ? NPU_DTYPE_INT8 : NPU_DTYPE_INT32;
        s->g.part_dt = NPU_DTYPE_INT32;
        s->g.act = RK_ACT_NONE;
        if (s->qlinear && s->ws && npu_value_numel(s->ws) > 1)
            s->g.q_per_channel = true;
        return conv_int16_check(n, s, why, wl);
    }
    s->g.in_dt = NPU_DTYPE_FP16;
    s->g.out_dt = NPU_DTYPE_FP16;
    s->g.part_dt = NPU_DTYPE_FP32;
    read_act(n, s);
    return true;
}

bool
npu_conv_supports(const struct npu_graph *g, const struct npu_node *n,
                  const struct npu_backend_options *o, char *why, size_t why_len)
{
    struct conv_src s;
    bool integer = n->op == NPU_OP_MATMUL_INTEGER || n->op == NPU_OP_CONV_INTEGER ||
                   n->op == NPU_OP_QLINEAR_MATMUL || n->op == NPU_OP_QLINEAR_CONV;
    if (!npu_be_common_ok(g, n, integer, why, why_len))
        return false;
    if (!conv_read_src(g, n, &s, why, why_len))
        return false;
    s.g.mtx = false;
    struct plan p;
    if (!conv_plan_conv(&s.g, s.groups, o, &p))
        return npu_be_refuse(why, why_len, "no tiling fits the CBUF within %u tasks",
                             o->max_tasks ? o->max_tasks : 4095);
    conv_plan_free(&p);
    return true;
}

double
npu_conv_cost(const struct npu_graph *g, const struct npu_node *n,
              const struct npu_backend_options *o)
{
    struct conv_src s;
    if (!conv_read_src(g, n, &s, NULL, 0))
        return -1;
    /* what the lowering will emit: the LUT activation and a residual Add in the DPU */
    uint32_t lut = o->no_act_fusion ? 0 : conv_lut_of_act(s.act_name);
    const struct npu_node *dq = conv_deq_reader(n, &s, o);
    if (dq) {
        struct npu_node *act;
        conv_deq_geom(&s);
        if (dq->device != NPU_DEVICE_CPU && conv_deq_act(dq, o, &act)) {
            lut = 1; /* only whether there is one matters here */
        }
    }
    if (conv_residual_reader(n, &s, o)) {
        s.g.residual = true;
        s.g.res_dt = NPU_DTYPE_FP16;
    } else if (dq && conv_deq_lo_ew(&s)) {
        /* the lower bound's f32 operand, read as a residual */
        s.g.residual = true;
        s.g.res_dt = NPU_DTYPE_FP32;
    }
    struct plan p;
    if (!conv_plan_conv(&s.g, s.groups, o, &p))
        return -1;
    double t = p.seconds + (lut ? rk_lut_prologue_seconds() : 0);
    conv_plan_free(&p);
    /* conversions when the neighbours stay on the host: input fp32 -> fp16
     * and result back are CPU work (not NPU time); nothing added here */
    return t;
}
