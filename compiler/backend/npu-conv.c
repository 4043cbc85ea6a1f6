/* SPDX-License-Identifier: MIT */
/*
 * npu-conv.c: MatMul, Gemm and Conv on the NPU: what is supported, the
 * tiler, the modeled cost, and the lowering to rk.Conv.
 *
 * A matrix product is a 1x1 convolution (facts §2.10): A[M][K] is a feature
 * map of M one-pixel rows with K channels, B[K][N] N kernels of 1x1xK,
 * packed at compile time. Conv maps directly; depthwise is CONV_MODE 3;
 * grouped convs run one task set per group when the groups line up with
 * atoms and kernel groups, else as a dense conv with block-diagonal weights.
 *
 * The tiler (plan()) splits a conv whose input and weights do not fit the
 * CBUF (12 banks of 32 KiB, facts §2.11):
 *   - output rows, each tile reading the input rows its kernel needs
 *     (overlap kh - stride rows), DATA_BANK = the banks the tile's rows fill
 *     (NOTES S14);
 *   - output kernels, in kernel groups (16 fp16 / 32 int8), either to keep
 *     a kernel tile's weights resident across row tiles (WEIGHT_REUSE) or
 *     with the input resident across kernel tiles (DATA_REUSE);
 *   - input-channel blocks, accumulated across tasks: block 0 writes a
 *     partial sum (fp32 by default), block j adds its conv to block j-1's
 *     partial with the DPU EW stage (ALU add, per-pixel operand read by
 *     ERDMA), the last block writes the result (facts §5.3).
 * Every candidate is priced with timing model v1 exactly as the simulator
 * accounts tasks (rk_task_seconds) and the cheapest wins; the RKNN rule
 * (NOTES S14) is one candidate and can be forced (rknn_tiling).
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npu-be-priv.h"
#include "npu-dpu-ops.h"

extern int npu_dpu_gelu_two_pass; /* dpu-ops.c: x * f(x) activations as two passes */

#define BANK_BYTES 32768u
#define CBUF_BANKS 12u
#define MAX_IN_ROWS 2047u /* CNA DATAIN_HEIGHT [10:0] */
#define MAX_WIDTH 2047u   /* CNA DATAIN_WIDTH / DATAOUT_WIDTH [10:0] */

enum src_kind { SRC_MATMUL, SRC_GEMM, SRC_CONV };

/* A source node read into one convolution description. */
struct conv_src {
    enum src_kind kind;
    bool integer; /* int8 pipeline: MatMulInteger / ConvInteger (-> int32),
                     QLinearMatMul / QLinearConv (-> int8 / uint8) */
    bool qlinear;
    int xi, wi, xzi, wzi; /* input indices of x, w and their zero points */
    int32_t x_zp;         /* input zero point (on the NPU's int8 scale) */
    bool x_u8;            /* uint8 input: the NPU holds x - 128 (facts §5.2, Mesa) */
    bool w_u8;
    /* QLinear requantisation: y = round(acc * sx * sw[k] / sy) + zy */
    float sx, sy;
    const struct npu_value *ws; /* weight scale(s) */
    int32_t y_zp;
    enum npu_dtype y_dt;          /* int8 / uint8 host result */
    const struct npu_value *qb;   /* QLinearConv B (int32) */
    const struct npu_value *w_zp; /* weight zero point(s) or NULL */
    /* kernel == stride, no padding: run as space-to-depth on the host (the
     * input is a host value) + 1x1 conv over C*kh*kw channels (CONV_CON3
     * holds strides up to 7 only; ViT patch embeddings use 14..32) */
    bool patchify;
    uint32_t pk[2]; /* the original kernel (= stride) */
    /* ConvTranspose with stride 1: the conv of x with the kernels flipped and
     * in/out swapped, padded by k - 1 - pad (output size (H-1) + k - pads) */
    bool transposed;
    struct npu_value *x; /* activation input */
    uint32_t in_view[3]; /* how x is viewed (C, H, W) */
    uint32_t out_view[3];
    int out_ndim;
    int64_t out_dims[NPU_MAX_DIMS];
    struct rk_conv_geom g;
    uint32_t pads[4];
    uint32_t groups; /* grouped conv run per group (1 = not) */
    /* batch and 1-D convs (docs/npu-backend.md "Batches and 1-D convs"): N images are N
     * channel blocks of one map, x viewed as (N * C, H, W) (NCHW order: image n's channel
     * c is map channel n * C + c), the conv as one of N * group groups whose weights
     * repeat per image; a 1-D conv is a 2-D one with H = 1 */
    uint32_t images;       /* N (1 = one image) */
    bool one_d;            /* [N, C, L] input */
    uint32_t k_src, c_src; /* kernels, channels per group of the source weights */
    /* dilation run as a dense kernel with zero taps between the source's (the ATROUS
     * fields are unverified, facts §6.14): source taps skh x skw, dilation dy x dx */
    uint32_t skh, skw, dly, dlx;
    bool block_diag;           /* grouped conv expanded to dense */
    const struct npu_value *w; /* weights constant */
    bool w_trans;              /* matmul/gemm: B is [K][N] (false: [N][K], Gemm transB) */
    float alpha;               /* Gemm alpha */
    const struct npu_value *b; /* bias constant (per output channel) or NULL */
    float beta;
    /* activation (npu_act) */
    const char *act_name;
    float act_alpha, act_beta;
    bool act_fused; /* expressible in the conv's DPU stages */
};

/* ---- reading the source node ---------------------------------------------------------- */

static bool
const_float(const struct npu_value *v)
{
    return v && v->kind == NPU_VALUE_CONST &&
           (v->t.dtype == NPU_DTYPE_FP32 || v->t.dtype == NPU_DTYPE_FP16);
}

static float
elem_f(const struct npu_value *v, int64_t i)
{
    return (float)npu_value_get_f64(v, i);
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
         * are be-dpu's: all run as a separate node after the conv */
        s->act_fused = false;
        s->act_alpha = npu_node_float(n, "npu_act_alpha", 0);
        s->act_beta = npu_node_float(n, "npu_act_beta", 0);
    }
}

/* Zero points of the integer ops: the input's becomes a bias (-x_zp x the
 * kernel's weight sum) and the pad value; the weights' is subtracted at
 * compile time (the result must stay int8). uint8 operands are held as
 * value - 128 on the NPU (facts §5.2: Mesa's uint8 convention), so a uint8
 * zero point moves by 128 too. */
static bool
read_zero_points(const struct npu_node *n, struct conv_src *s, uint32_t kernels, char *why,
                 size_t wl)
{
    const struct npu_value *x = npu_node_in(n, s->xi), *w = npu_node_in(n, s->wi);
    const struct npu_value *xz = npu_node_in(n, s->xzi), *wz = npu_node_in(n, s->wzi);
    s->x_u8 = x->t.dtype == NPU_DTYPE_UINT8;
    s->w_u8 = w->t.dtype == NPU_DTYPE_UINT8;
    s->x_zp = s->x_u8 ? -128 : 0;
    if (xz) {
        if (xz->kind != NPU_VALUE_CONST || npu_value_numel(xz) != 1 || xz->t.dtype != x->t.dtype)
            return npu_be_refuse(why, wl,
                                 "input zero point must be a scalar constant of the input's "
                                 "type");
        s->x_zp = (int32_t)npu_value_get_i64(xz, 0) - (s->x_u8 ? 128 : 0);
    }
    if (wz) {
        int64_t nz = npu_value_numel(wz);
        if (wz->kind != NPU_VALUE_CONST || wz->t.dtype != w->t.dtype || (nz != 1 && nz != kernels))
            return npu_be_refuse(why, wl,
                                 "weight zero point must be a constant of the weights' type, "
                                 "per tensor or per output channel");
        s->w_zp = wz;
    }
    return true;
}

static bool
scalar_f32(const struct npu_value *v)
{
    return v && v->kind == NPU_VALUE_CONST && v->t.dtype == NPU_DTYPE_FP32 &&
           npu_value_numel(v) == 1;
}

/* QLinear scales and the output zero point (inputs 1, 4, 6, 7). */
static bool
read_qparams(const struct npu_node *n, struct conv_src *s, uint32_t kernels, char *why, size_t wl)
{
    const struct npu_value *xs = npu_node_in(n, 1), *ws = npu_node_in(n, 4);
    const struct npu_value *ys = npu_node_in(n, 6), *yz = npu_node_in(n, 7);
    if (!scalar_f32(xs) || !scalar_f32(ys))
        return npu_be_refuse(why, wl, "x / y scales must be float scalar constants");
    int64_t nws = ws ? npu_value_numel(ws) : 0;
    if (!ws || ws->kind != NPU_VALUE_CONST || ws->t.dtype != NPU_DTYPE_FP32 ||
        (nws != 1 && nws != kernels))
        return npu_be_refuse(why, wl,
                             "weight scale must be a float constant per tensor or channel");
    s->sx = (float)npu_value_get_f64(xs, 0);
    s->sy = (float)npu_value_get_f64(ys, 0);
    if (!(s->sx > 0) || !(s->sy > 0) || !isfinite(s->sx) || !isfinite(s->sy))
        return npu_be_refuse(why, wl, "scales must be positive and finite");
    for (int64_t i = 0; i < nws; i++)
        if (!(npu_value_get_f64(ws, i) > 0) || !isfinite(npu_value_get_f64(ws, i)))
            return npu_be_refuse(why, wl, "weight scales must be positive and finite");
    s->ws = ws;
    s->y_dt = n->out[0]->t.dtype;
    if (s->y_dt != NPU_DTYPE_INT8 && s->y_dt != NPU_DTYPE_UINT8)
        return npu_be_refuse(why, wl, "result type %s (int8 / uint8)", npu_dtype_name(s->y_dt));
    s->y_zp = 0;
    if (yz) {
        if (yz->kind != NPU_VALUE_CONST || npu_value_numel(yz) != 1 || yz->t.dtype != s->y_dt)
            return npu_be_refuse(why, wl,
                                 "y zero point must be a scalar constant of the result type");
        s->y_zp = (int32_t)npu_value_get_i64(yz, 0);
    }
    return true;
}

static bool
int8_operand(const struct npu_value *v)
{
    return v && (v->t.dtype == NPU_DTYPE_INT8 || v->t.dtype == NPU_DTYPE_UINT8);
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
        if (!int8_operand(a))
            return npu_be_refuse(why, wl, "integer product of %s (int8 / uint8 only)",
                                 npu_dtype_name(a->t.dtype));
        if (b->kind != NPU_VALUE_CONST || !int8_operand(b))
            return npu_be_refuse(why, wl, "integer product: B must be an int8 / uint8 constant");
    } else {
        if (!npu_dtype_is_float(a->t.dtype) || a->t.dtype == NPU_DTYPE_FP64)
            return npu_be_refuse(why, wl, "activation dtype %s (fp32/fp16 only)",
                                 npu_dtype_name(a->t.dtype));
        if (!const_float(b))
            return npu_be_refuse(why, wl,
                                 "B is not a float constant (activation x activation "
                                 "products go through be-dpu's attention lowering)");
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
    if (s->integer && !read_zero_points(n, s, N, why, wl))
        return false;
    if (s->qlinear && !read_qparams(n, s, N, why, wl))
        return false;
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
    g->bias = s->b != NULL || (s->integer && s->x_zp);
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
        if (!int8_operand(x))
            return npu_be_refuse(why, wl, "integer conv of %s (int8 / uint8 only)",
                                 npu_dtype_name(x->t.dtype));
        if (w->kind != NPU_VALUE_CONST || !int8_operand(w) || w->t.ndim != (int)wnd)
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
    if (s->integer && !read_zero_points(n, s, K, why, wl))
        return false;
    if (s->qlinear && !read_qparams(n, s, K, why, wl))
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
    if (grp > 1 && s->integer)
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

static bool
read_src(const struct npu_graph *g, const struct npu_node *n, struct conv_src *s, char *why,
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
    if (s->qlinear   ? !int8_operand(n->out[0])
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
        return true;
    }
    s->g.in_dt = NPU_DTYPE_FP16;
    s->g.out_dt = NPU_DTYPE_FP16;
    s->g.part_dt = NPU_DTYPE_FP32;
    read_act(n, s);
    return true;
}

/* ---- the tiler --------------------------------------------------------------------- */

struct plan {
    struct rk_tile *t;
    uint32_t n, cap;
    uint32_t parts; /* partial-sum buffers (0 or 2) */
    double seconds; /* modeled, timing model v1, without the submit */
    uint64_t dma_bytes, macs;
};

static void
plan_free(struct plan *p)
{
    free(p->t);
    memset(p, 0, sizeof(*p));
}

static bool
plan_push(struct plan *p, const struct rk_tile *t)
{
    if (p->n == p->cap) {
        uint32_t cap = p->cap ? p->cap * 2 : 16;
        struct rk_tile *x = realloc(p->t, sizeof(*x) * cap);
        if (!x)
            return false;
        p->t = x;
        p->cap = cap;
    }
    p->t[p->n++] = *t;
    return true;
}

/* Parameters of one candidate. */
struct cand {
    uint32_t nc;     /* input channels per block (S = ceil(C / nc) blocks) */
    uint32_t bank;   /* DATA_BANK */
    uint32_t rows;   /* output rows per row tile */
    uint32_t nk;     /* kernels per kernel tile */
    bool kern_outer; /* loop kernels (then blocks) outside rows: weights stay, WEIGHT_REUSE */
};

/* Output rows a tile of `in_rows` input rows can produce. */
static uint32_t
rows_out_for(const struct rk_conv_geom *g, uint32_t in_rows)
{
    uint32_t eff = (g->kh - 1) * g->dy + 1;
    if (in_rows < eff)
        return 0;
    return (in_rows - eff) / g->sy + 1;
}

/* Largest number of output rows whose input fits `bank` data banks. The
 * tile's real input rows (padding and the map's edges cut them) are checked
 * by the caller through rk_tile_rows. */
static uint32_t
rows_fit(const struct rk_conv_geom *g, uint32_t nc, uint32_t bank)
{
    uint64_t row = rk_tile_data_bytes(g, 1, nc);
    uint64_t in_rows = (uint64_t)bank * BANK_BYTES / row;
    if (in_rows > MAX_IN_ROWS)
        in_rows = MAX_IN_ROWS;
    uint32_t r = rows_out_for(g, (uint32_t)in_rows);
    /* padding rows do not occupy the CBUF: a tile may cover up to pt more */
    return r > g->oh ? g->oh : r;
}

/* Whether a task's weights can flow through `wbanks` weight banks: resident,
 * or streamed with at least one kernel group fitting (facts §6.12; the
 * simulator refuses less). */
static bool
weights_ok(const struct rk_conv_geom *g, uint32_t nk, uint32_t nc, uint32_t wbanks, bool *resident)
{
    uint64_t cap = (uint64_t)wbanks * BANK_BYTES;
    uint64_t all = rk_weight_set_bytes(g, nk, nc);
    *resident = all <= cap;
    if (*resident)
        return true;
    uint32_t kg = g->depthwise ? 1 : NPU_MIN(nk, rk_kernel_group(g));
    return rk_weight_set_bytes(g, kg, nc) <= cap;
}

/* Builds the task list of a candidate; false when it breaks a constraint. */
static bool
build(const struct rk_conv_geom *g, const struct cand *c, uint32_t groups, uint32_t max_tasks,
      struct plan *p)
{
    const uint32_t C = groups > 1 ? g->c / groups : g->c;
    const uint32_t K = groups > 1 ? g->k / groups : g->k;
    const uint32_t S = g->depthwise ? 1 : (C + c->nc - 1) / c->nc;
    const uint32_t R = (g->oh + c->rows - 1) / c->rows;
    const uint32_t KT = (K + c->nk - 1) / c->nk;
    if ((uint64_t)R * KT * S * groups > max_tasks)
        return false;
    p->n = 0;
    p->parts = S > 1 ? 2 : 0;
    p->seconds = 0;
    p->dma_bytes = p->macs = 0;
    /* per-task weight set offsets are assigned later (packing) */
    for (uint32_t gi = 0; gi < groups; gi++) {
        uint32_t cb = gi * C, kb = gi * K;
        if (c->kern_outer) {
            for (uint32_t ki = 0; ki < KT; ki++)
                for (uint32_t s = 0; s < S; s++)
                    for (uint32_t ri = 0; ri < R; ri++) {
                        struct rk_tile t = {0};
                        t.oy0 = ri * c->rows;
                        t.oh = NPU_MIN(c->rows, g->oh - t.oy0);
                        t.k0 = kb + ki * c->nk;
                        t.nk = NPU_MIN(c->nk, K - ki * c->nk);
                        t.c0 = g->depthwise ? t.k0 : cb + s * c->nc;
                        t.nc = g->depthwise ? t.nk : NPU_MIN(c->nc, C - s * c->nc);
                        t.bank = c->bank;
                        t.src = s ? (int32_t)(1 + (s - 1) % 2) : -1;
                        t.dst = s + 1 < S ? (int32_t)(1 + s % 2) : 0;
                        if (!s && g->bias)
                            t.flags |= RKT_F_BIAS;
                        if (s + 1 == S)
                            t.flags |= RKT_F_ACT;
                        /* later row tiles of the same weight set: WEIGHT_REUSE
                         * when resident (checked below) */
                        if (ri > 0)
                            t.flags |= RKT_F_WREUSE;
                        if (!plan_push(p, &t))
                            return false;
                    }
        } else {
            for (uint32_t ri = 0; ri < R; ri++)
                for (uint32_t ki = 0; ki < KT; ki++)
                    for (uint32_t s = 0; s < S; s++) {
                        struct rk_tile t = {0};
                        t.oy0 = ri * c->rows;
                        t.oh = NPU_MIN(c->rows, g->oh - t.oy0);
                        t.k0 = kb + ki * c->nk;
                        t.nk = NPU_MIN(c->nk, K - ki * c->nk);
                        t.c0 = g->depthwise ? t.k0 : cb + s * c->nc;
                        t.nc = g->depthwise ? t.nk : NPU_MIN(c->nc, C - s * c->nc);
                        t.bank = c->bank;
                        t.src = s ? (int32_t)(1 + (s - 1) % 2) : -1;
                        t.dst = s + 1 < S ? (int32_t)(1 + s % 2) : 0;
                        if (!s && g->bias)
                            t.flags |= RKT_F_BIAS;
                        if (s + 1 == S)
                            t.flags |= RKT_F_ACT;
                        if (ki > 0 && S == 1 && !g->depthwise)
                            t.flags |= RKT_F_DREUSE;
                        if (!plan_push(p, &t))
                            return false;
                    }
        }
    }
    /* check every task against the CBUF and price it */
    for (uint32_t i = 0; i < p->n; i++) {
        struct rk_tile *t = &p->t[i];
        struct rk_rows r;
        rk_tile_rows(g, t->oy0, t->oh, &r);
        if (r.ih > MAX_IN_ROWS || r.pad_top > 15)
            return false;
        if (rk_tile_data_bytes(g, r.ih, t->nc) > (uint64_t)t->bank * BANK_BYTES)
            return false;
        bool res;
        if (!weights_ok(g, t->nk, t->nc, CBUF_BANKS - t->bank, &res))
            return false;
        {
            /* WEIGHT_REUSE whenever the last weight load (of this group of
             * tasks) was this very set and it stayed resident: RKNN does so on
             * later tiles (NOTES S14, partial table) */
            const struct rk_tile *q = NULL;
            for (uint32_t j = i; j-- > 0;)
                if (!(p->t[j].flags & RKT_F_WREUSE)) {
                    q = &p->t[j];
                    break;
                }
            if (res && q && q->k0 == t->k0 && q->nk == t->nk && q->c0 == t->c0 && q->nc == t->nc &&
                q->bank == t->bank)
                t->flags |= RKT_F_WREUSE;
            else
                t->flags &= ~RKT_F_WREUSE;
        }
        if (t->flags & RKT_F_DREUSE) {
            const struct rk_tile *q = i ? &p->t[i - 1] : NULL;
            struct rk_rows rq;
            if (q)
                rk_tile_rows(g, q->oy0, q->oh, &rq);
            if (!q || rq.iy0 != r.iy0 || rq.ih != r.ih || q->c0 != t->c0 || q->nc != t->nc ||
                q->bank != t->bank)
                t->flags &= ~RKT_F_DREUSE;
        }
        uint64_t b, m;
        p->seconds += rk_task_seconds(g, t, &b, &m);
        p->dma_bytes += b;
        p->macs += m;
    }
    return true;
}

/* RKNN's single-core rule (NOTES S14, derived from the ab-conv captures):
 * the whole input in as few banks as it needs when it fits next to one
 * weight bank; otherwise weight banks for all weights (if they fit) or two
 * kernel groups, the rest data banks filled with as many rows as fit, the
 * same split for every tile, WEIGHT_REUSE on later tiles when resident. */
static bool
rknn_cand(const struct rk_conv_geom *g, uint32_t C, uint32_t K, struct cand *c)
{
    memset(c, 0, sizeof(*c));
    c->nc = C;
    c->nk = K;
    c->kern_outer = true;
    if (g->depthwise) {
        /* depthwise (partial table: c768 h20 5x5 tiles 448 + 320; c128 h56
         * tiles of 32; c64 h112 / c96 h150 tiles of 32 x 50 / 37 input rows):
         * channel tiles, the most multiples of 32 whose whole map fits 11
         * banks, else 32 with as many rows as fit; rows outside channels */
        uint64_t cap = (uint64_t)(CBUF_BANKS - 1) * BANK_BYTES;
        uint32_t nc = 0;
        for (uint32_t t = 32; t < C + 32; t += 32) {
            uint32_t tc = NPU_MIN(t, C);
            if (rk_tile_data_bytes(g, g->h, tc) <= cap)
                nc = tc;
        }
        c->kern_outer = false;
        if (nc) {
            c->nc = c->nk = nc;
            uint64_t in = rk_tile_data_bytes(g, g->h, nc);
            c->bank = (uint32_t)((in + BANK_BYTES - 1) / BANK_BYTES);
            c->rows = g->oh;
            return true;
        }
        c->nc = c->nk = NPU_MIN(C, 32u);
        c->bank = CBUF_BANKS - 1;
        c->rows = rows_fit(g, c->nc, c->bank);
        return c->rows > 0;
    }
    uint64_t in = rk_tile_data_bytes(g, g->h, C);
    if (in <= (uint64_t)(CBUF_BANKS - 1) * BANK_BYTES) {
        c->bank = (uint32_t)((in + BANK_BYTES - 1) / BANK_BYTES);
        if (!c->bank)
            c->bank = 1;
        c->rows = g->oh;
        return true;
    }
    uint64_t all = rk_weight_set_bytes(g, K, C);
    uint64_t two = rk_weight_set_bytes(g, NPU_MIN(K, 2 * rk_kernel_group(g)), C);
    uint64_t wb = all <= (uint64_t)(CBUF_BANKS - 1) * BANK_BYTES ? all : two;
    uint32_t wbanks = (uint32_t)((wb + BANK_BYTES - 1) / BANK_BYTES);
    if (wbanks < 1)
        wbanks = 1;
    if (wbanks >= CBUF_BANKS)
        return false;
    c->bank = CBUF_BANKS - wbanks;
    c->rows = rows_fit(g, C, c->bank);
    return c->rows > 0;
}

/* Chooses the tiling of a conv (per group when groups > 1). */
static bool plan_conv1(const struct rk_conv_geom *g, uint32_t groups,
                       const struct npu_backend_options *o, bool one_set, struct plan *best);

static bool
plan_conv(const struct rk_conv_geom *g, uint32_t groups, const struct npu_backend_options *o,
          struct plan *best)
{
    return plan_conv1(g, groups, o, false, best);
}

/* one_set: the weights are one packed set (no channel blocks); kernel tiles
 * then take their kernels' slice of it. */
static bool
plan_conv1(const struct rk_conv_geom *g, uint32_t groups, const struct npu_backend_options *o,
           bool one_set, struct plan *best)
{
    const uint32_t C = groups > 1 ? g->c / groups : g->c;
    const uint32_t K = groups > 1 ? g->k / groups : g->k;
    const uint32_t kg = rk_kernel_group(g);
    uint32_t max_tasks = o->max_tasks ? o->max_tasks : 4095;
    struct plan p = {0};
    bool have = false;
    memset(best, 0, sizeof(*best));

    /* forced tiling (tests): candidates must match what is forced */
    const bool forced = o->force_rows || o->force_kernels || o->force_channels || o->force_order;
#define FORCED_OK(c_)                                                                              \
    ((!o->force_rows || (c_)->rows == NPU_MIN(o->force_rows, g->oh)) &&                            \
     (!o->force_kernels || (c_)->nk == NPU_MIN(o->force_kernels, K)) &&                            \
     (!o->force_channels || g->depthwise || (c_)->nc == NPU_MIN(o->force_channels, C)) &&          \
     (!o->force_order || (c_)->kern_outer == (o->force_order == 2)))
#define TRY(cand_)                                                                                 \
    do {                                                                                           \
        if (FORCED_OK(cand_) && build(g, (cand_), groups, max_tasks, &p) &&                        \
            (!have || p.seconds < best->seconds * (1 - 1e-9))) {                                   \
            struct plan t_ = *best;                                                                \
            *best = p;                                                                             \
            p = t_;                                                                                \
            have = true;                                                                           \
        }                                                                                          \
    } while (0)

    struct cand c;
    if (rknn_cand(g, C, K, &c)) {
        TRY(&c);
        if (have && (o->rknn_tiling || g->mtx)) {
            plan_free(&p);
            return true;
        }
    }
    if (forced && !g->mtx) {
        /* the forced sizes, every bank split that holds them */
        uint32_t nc = o->force_channels && !g->depthwise ? NPU_MIN(o->force_channels, C) : C;
        uint32_t nk = o->force_kernels ? NPU_MIN(o->force_kernels, K) : K;
        if (g->depthwise)
            nc = nk;
        for (uint32_t bank = 1; bank < CBUF_BANKS; bank++)
            for (int order = 0; order < 2; order++) {
                c.nc = nc;
                c.nk = nk;
                c.bank = bank;
                c.rows = o->force_rows ? NPU_MIN(o->force_rows, g->oh) : rows_fit(g, nc, bank);
                c.kern_outer = order == 1;
                if (c.rows)
                    TRY(&c);
            }
        plan_free(&p);
        return have;
    }
    if (g->mtx) {
        plan_free(&p);
        return false; /* MTX's A.1 is one task with the whole input resident */
    }
    if (g->depthwise) {
        /* channel tiles (32 channels = one depthwise weight block) */
        uint32_t nks[2] = {C, 32}, n_nk = C > 32 ? 2 : 1;
        for (uint32_t b = 0; b < n_nk; b++) {
            uint32_t last_rows = 0;
            for (uint32_t bank = 1; bank < CBUF_BANKS; bank++) {
                uint32_t rows = rows_fit(g, nks[b], bank);
                if (!rows || rows == last_rows)
                    continue;
                last_rows = rows;
                for (int order = 0; order < 2; order++) {
                    c.nc = nks[b];
                    c.nk = nks[b];
                    c.bank = bank;
                    c.rows = rows;
                    c.kern_outer = order == 1;
                    TRY(&c);
                }
            }
        }
        plan_free(&p);
        return have;
    }
    /* channel blocks: none, then multiples of 32 channels (one MAC pass each) */
    uint32_t ncs[40], n_nc = 0;
    ncs[n_nc++] = C;
    if (C > 32 && !(g->act == RK_ACT_CLIP && g->act_lo != 0) && !g->q_per_channel && !one_set) {
        /* (accumulation leaves only ReLU / ReLU-X for the last block) */
        for (uint32_t S = 2; S <= 64 && n_nc < NPU_ARRAY_SIZE(ncs); S++) {
            uint32_t nc = (C + S - 1) / S;
            nc = (nc + 31) / 32 * 32;
            if (nc >= C || nc == ncs[n_nc - 1])
                continue;
            ncs[n_nc++] = nc;
            if (nc == 32)
                break;
        }
    }
    for (uint32_t a = 0; a < n_nc; a++) {
        uint32_t nc = ncs[a];
        uint32_t last_rows = 0;
        for (uint32_t bank = 1; bank < CBUF_BANKS; bank++) {
            uint32_t rows = rows_fit(g, nc, bank);
            if (!rows || rows == last_rows)
                continue;
            last_rows = rows;
            uint32_t wb = CBUF_BANKS - bank;
            /* kernel tiles: all kernels, or the most whose weights stay resident */
            uint32_t nks[2], n_nk = 0;
            nks[n_nk++] = K;
            uint64_t per = rk_weight_set_bytes(g, 1, nc);
            uint64_t res = (uint64_t)wb * BANK_BYTES / per / kg * kg;
            if (res >= kg && res < K)
                nks[n_nk++] = (uint32_t)res;
            for (uint32_t b = 0; b < n_nk; b++) {
                for (int order = 0; order < 2; order++) {
                    c.nc = nc;
                    c.bank = bank;
                    c.rows = rows;
                    c.nk = nks[b];
                    c.kern_outer = order == 1;
                    TRY(&c);
                }
            }
        }
    }
#undef TRY
#undef FORCED_OK
    plan_free(&p);
    return have;
}

/* ---- weights, bias ----------------------------------------------------------------------- */

/* Source weight of kernel o (of the images' K' = N * K, repeating per image), group-local
 * channel c, tap (ky, kx) of the (dilation-expanded) kernel: zero between the source's
 * taps. */
static float
conv_w(const struct conv_src *s, uint32_t o, uint32_t c, uint32_t ky, uint32_t kx)
{
    uint32_t dy = s->dly ? s->dly : 1, dx = s->dlx ? s->dlx : 1;
    if (ky % dy || kx % dx)
        return 0.0f;
    uint32_t skh = s->skh ? s->skh : s->g.kh, skw = s->skw ? s->skw : s->g.kw;
    uint32_t k_src = s->k_src ? s->k_src : s->g.k;
    uint32_t c_src = s->c_src ? s->c_src : s->g.c;
    return elem_f(s->w, (((int64_t)(o % k_src) * c_src + c) * skh + ky / dy) * skw + kx / dx);
}

/* fp32 OIHW weights of the source, grouped convs expanded to dense when
 * block_diag; alpha applied. */
static float *
dense_weights(const struct conv_src *s)
{
    const struct rk_conv_geom *g = &s->g;
    uint32_t K = g->k, C = g->depthwise ? 1 : g->c, taps = g->kh * g->kw;
    size_t n = (size_t)K * C * taps;
    float *w = calloc(n ? n : 1, sizeof(float));
    if (!w)
        return NULL;
    if (s->kind != SRC_CONV) {
        /* B[K][N] (or [N][K]) -> kernel n, channel k */
        for (uint32_t o = 0; o < K; o++)
            for (uint32_t c = 0; c < C; c++)
                w[(size_t)o * C + c] =
                    s->alpha * elem_f(s->w, s->w_trans ? (int64_t)c * K + o : (int64_t)o * C + c) -
                    (s->w_zp ? elem_f(s->w_zp, npu_value_numel(s->w_zp) == 1 ? 0 : o) : 0.0f);
        return w;
    }
    if (s->transposed) {
        /* w'[k][c][ky][kx] = W[c][k][kh-1-ky][kw-1-kx] */
        for (uint32_t k = 0; k < K; k++)
            for (uint32_t c = 0; c < C; c++)
                for (uint32_t ky = 0; ky < g->kh; ky++)
                    for (uint32_t kx = 0; kx < g->kw; kx++)
                        w[(((size_t)k * C + c) * g->kh + ky) * g->kw + kx] =
                            elem_f(s->w, (((int64_t)c * K + k) * g->kh + (g->kh - 1 - ky)) * g->kw +
                                             (g->kw - 1 - kx));
        return w;
    }
    if (s->w_zp) {
        for (size_t i = 0; i < n; i++)
            w[i] = elem_f(s->w, (int64_t)i) -
                   elem_f(s->w_zp, npu_value_numel(s->w_zp) == 1 ? 0 : (int64_t)(i / (C * taps)));
        return w;
    }
    if (g->depthwise || !s->block_diag) {
        uint32_t cg = g->depthwise ? 1 : (s->groups > 1 ? g->c / s->groups : g->c);
        if (s->groups > 1) {
            /* keep per-group layout [K][C/g][kh][kw]; packed per group later */
            free(w);
            n = (size_t)K * cg * taps;
            w = calloc(n, sizeof(float));
            if (!w)
                return NULL;
        }
        for (uint32_t o = 0; o < K; o++)
            for (uint32_t c = 0; c < cg; c++)
                for (uint32_t t = 0; t < taps; t++)
                    w[((size_t)o * cg + c) * taps + t] = conv_w(s, o, c, t / g->kw, t % g->kw);
        return w;
    }
    /* block diagonal (the groups of every image) */
    uint32_t grp = (uint32_t)(g->c / (uint32_t)s->w->t.dims[1]);
    uint32_t cg = g->c / grp, kgp = K / grp;
    for (uint32_t o = 0; o < K; o++) {
        uint32_t gi = o / kgp;
        for (uint32_t c = 0; c < cg; c++)
            for (uint32_t t = 0; t < taps; t++)
                w[((size_t)o * g->c + gi * cg + c) * taps + t] =
                    conv_w(s, o, c, t / g->kw, t % g->kw);
    }
    return w;
}

/* Packs the weight set of every tile (deduplicated), 64-byte aligned. */
static enum npu_status
pack_weights(const struct conv_src *s, struct plan *p, uint8_t **out, uint64_t *out_bytes)
{
    const struct rk_conv_geom *g = &s->g;
    const uint32_t taps = g->kh * g->kw;
    const uint32_t cg = g->depthwise ? 1 : (s->groups > 1 ? g->c / s->groups : g->c);
    enum npu_status st = NPU_OK;
    float *w = dense_weights(s);
    uint8_t *blob = NULL;
    uint64_t size = 0;
    if (!w)
        return NPU_ERR_NOMEM;
    for (uint32_t i = 0; i < p->n; i++) {
        struct rk_tile *t = &p->t[i];
        /* same set as an earlier tile? The images of a batch share their weights: a
         * tile's set is that of the same kernels and channels of image 0 (per-group and
         * depthwise layouts; block-diagonal sets differ per image) */
        bool found = false;
        const bool share = s->images > 1 && !s->block_diag;
        const uint32_t km = share ? s->k_src : UINT32_MAX, cm = share ? cg : UINT32_MAX;
        for (uint32_t j = 0; j < i; j++) {
            const struct rk_tile *q = &p->t[j];
            if (q->k0 % km == t->k0 % km && q->nk == t->nk &&
                (g->depthwise ? q->c0 % km == t->c0 % km : q->c0 % cm == t->c0 % cm) &&
                q->nc == t->nc) {
                t->woff = q->woff;
                found = true;
                break;
            }
        }
        if (found)
            continue;
        struct npu_weight_layout l;
        st = npu_weight_layout_init(&l, rk_esize(g->in_dt), g->depthwise ? t->nc : t->nk, t->nc,
                                    g->kh, g->kw, g->depthwise);
        if (st)
            goto out;
        uint64_t off = (size + 63) / 64 * 64;
        uint64_t nsize = off + l.total_bytes;
        if (nsize > 0xffffffffull) {
            st = NPU_ERR_UNSUPPORTED;
            goto out;
        }
        uint8_t *nb = realloc(blob, nsize);
        if (!nb) {
            st = NPU_ERR_NOMEM;
            goto out;
        }
        blob = nb;
        memset(blob + size, 0, nsize - size);
        /* OIHW fp16 of the set: kernels t->k0.., channels t->c0.. (group-local) */
        uint32_t nk = g->depthwise ? 1 : t->nk;
        size_t sub = (size_t)(g->depthwise ? t->nc : nk) * (g->depthwise ? 1 : t->nc) * taps;
        const bool i8 = g->in_dt == NPU_DTYPE_INT8;
        uint16_t *h = malloc(sub * 2);
        if (!h) {
            st = NPU_ERR_NOMEM;
            goto out;
        }
#define CV(f) (i8 ? (uint16_t)(uint8_t)(int8_t)lrintf(f) : npu_fp32_to_fp16(f))
        uint32_t c_local0 = s->groups > 1 ? t->c0 % cg : t->c0;
        if (g->depthwise) {
            for (uint32_t c = 0; c < t->nc; c++)
                for (uint32_t k = 0; k < taps; k++)
                    h[(size_t)c * taps + k] = CV(w[(size_t)(t->c0 + c) * taps + k]);
        } else {
            for (uint32_t o = 0; o < nk; o++)
                for (uint32_t c = 0; c < t->nc; c++)
                    for (uint32_t k = 0; k < taps; k++)
                        h[((size_t)o * t->nc + c) * taps + k] =
                            CV(w[((size_t)(t->k0 + o) * cg + c_local0 + c) * taps + k]);
        }
#undef CV
        if (i8) { /* npu_weight_pack reads esize-byte elements */
            uint8_t *h8 = (uint8_t *)h;
            for (size_t q = 0; q < sub; q++)
                h8[q] = (uint8_t)h[q];
        }
        st = npu_weight_pack(&l, blob + off, l.total_bytes, h, 0);
        free(h);
        if (st)
            goto out;
        t->woff = (uint32_t)off;
        size = nsize;
    }
    size = (size + 63) / 64 * 64;
    if (size) {
        uint8_t *nb = realloc(blob, size);
        if (!nb) {
            st = NPU_ERR_NOMEM;
            goto out;
        }
        blob = nb;
    }
out:
    free(w);
    if (st) {
        free(blob);
        return st;
    }
    *out = blob;
    *out_bytes = size;
    return NPU_OK;
}

/* Integer kinds: -x_zp x (weight sum of the kernel), int32 per channel. */
static int32_t *
bias_array_int(const struct conv_src *s, const float *w, uint32_t *len)
{
    const struct rk_conv_geom *g = &s->g;
    uint32_t n = (g->k + 63) / 64 * 64; /* BRDMA reads the padded channels */
    uint64_t per = (uint64_t)g->c * g->kh * g->kw;
    int32_t *b = calloc(n, sizeof(int32_t));
    if (!b)
        return NULL;
    for (uint32_t k = 0; k < g->k; k++) {
        int64_t sum = 0;
        for (uint64_t i = 0; i < per; i++)
            sum += (int64_t)lrintf(w[k * per + i]);
        int64_t v = -(int64_t)s->x_zp * sum + (s->qb ? npu_value_get_i64(s->qb, k) : 0);
        if (v < INT32_MIN || v > INT32_MAX) {
            free(b);
            return NULL;
        }
        b[k] = (int32_t)v;
    }
    *len = n;
    return b;
}

/* Per-channel BS operand: bias (times beta) minus the clip's lower bound,
 * padded to 16 channels (BRDMA reads the padded channel count, facts §2.6). */
static float *
bias_array(const struct conv_src *s, uint32_t *len)
{
    const struct rk_conv_geom *g = &s->g;
    uint32_t n = (g->k + 63) / 64 * 64; /* BRDMA reads the padded channels */
    float *b = calloc(n, sizeof(float));
    if (!b)
        return NULL;
    float lo = g->act == RK_ACT_CLIP ? g->act_lo : 0.0f;
    for (uint32_t k = 0; k < g->k; k++) {
        float v = 0;
        if (s->b)
            v = s->beta * elem_f(s->b, npu_value_numel(s->b) == 1
                                           ? 0
                                           : (int64_t)(s->k_src ? k % s->k_src : k));
        b[k] = v - lo;
    }
    *len = n;
    return b;
}

/* ---- handlers -------------------------------------------------------------------------- */

static uint32_t lut_of_act(const char *a);
static const struct npu_node *residual_reader(const struct npu_node *n, const struct conv_src *s,
                                              const struct npu_backend_options *o);

bool
npu_conv_supports(const struct npu_graph *g, const struct npu_node *n,
                  const struct npu_backend_options *o, char *why, size_t why_len)
{
    struct conv_src s;
    bool integer = n->op == NPU_OP_MATMUL_INTEGER || n->op == NPU_OP_CONV_INTEGER ||
                   n->op == NPU_OP_QLINEAR_MATMUL || n->op == NPU_OP_QLINEAR_CONV;
    if (!npu_be_common_ok(g, n, integer, why, why_len))
        return false;
    if (!read_src(g, n, &s, why, why_len))
        return false;
    s.g.mtx = false;
    struct plan p;
    if (!plan_conv(&s.g, s.groups, o, &p))
        return npu_be_refuse(why, why_len, "no tiling fits the CBUF within %u tasks",
                             o->max_tasks ? o->max_tasks : 4095);
    plan_free(&p);
    return true;
}

double
npu_conv_cost(const struct npu_graph *g, const struct npu_node *n,
              const struct npu_backend_options *o)
{
    struct conv_src s;
    if (!read_src(g, n, &s, NULL, 0))
        return -1;
    /* what the lowering will emit: the LUT activation and a residual Add in the DPU */
    uint32_t lut = o->no_act_fusion ? 0 : lut_of_act(s.act_name);
    if (residual_reader(n, &s, o)) {
        s.g.residual = true;
        s.g.res_dt = NPU_DTYPE_FP16;
    }
    struct plan p;
    if (!plan_conv(&s.g, s.groups, o, &p))
        return -1;
    double t = p.seconds + (lut ? rk_lut_prologue_seconds() : 0);
    plan_free(&p);
    /* conversions when the neighbours stay on the host: input fp32 -> fp16
     * and result back are CPU work (not NPU time); nothing added here */
    return t;
}

/* Splits a non-fusable activation off into its own node after n: n now
 * defines a fresh value, the activation node the original output. */
static enum npu_status
split_act(struct npu_lower_ctx *cx, struct npu_node *n, const struct conv_src *s)
{
    struct npu_graph *g = cx->g;
    const char *a = s->act_name;
    enum npu_op op;
    if (!strcmp(a, "relu"))
        op = NPU_OP_RELU;
    else if (!strcmp(a, "leaky_relu"))
        op = NPU_OP_LEAKY_RELU;
    else if (!strcmp(a, "clip"))
        op = NPU_OP_CLIP;
    else if (!strcmp(a, "sigmoid"))
        op = NPU_OP_SIGMOID;
    else if (!strcmp(a, "tanh"))
        op = NPU_OP_TANH;
    else if (!strcmp(a, "gelu"))
        op = NPU_OP_GELU;
    else if (!strcmp(a, "gelu_tanh"))
        op = NPU_OP_FUSED_GELU_TANH;
    else if (!strcmp(a, "silu"))
        op = NPU_OP_FUSED_SILU;
    else if (!strcmp(a, "hard_swish"))
        op = NPU_OP_HARD_SWISH;
    else if (!strcmp(a, "hard_sigmoid"))
        op = NPU_OP_HARD_SIGMOID;
    else
        return npu_lower_refuse(n, "unknown npu_act '%s'", a);
    struct npu_value *y = n->out[0];
    struct npu_value *pre = npu_value_new(g, y->name);
    if (!pre)
        return NPU_ERR_NOMEM;
    pre->t = y->t;
    pre->t.data = NULL;
    struct npu_value *in[3] = {pre, NULL, NULL};
    int nin = 1;
    if (op == NPU_OP_CLIP) {
        float lo = s->act_alpha, hi = s->act_beta;
        char nm[96];
        snprintf(nm, sizeof(nm), "%.80s.min", y->name);
        in[1] = isinf(lo) && lo < 0 ? NULL : npu_graph_const_f32(g, nm, &lo, 1, true);
        snprintf(nm, sizeof(nm), "%.80s.max", y->name);
        in[2] = isinf(hi) && hi > 0 ? NULL : npu_graph_const_f32(g, nm, &hi, 1, true);
        nin = 3;
        if (y->t.dtype != NPU_DTYPE_FP32) {
            /* Clip bounds share the input dtype; keep fp32 models only */
            return npu_lower_refuse(n, "clip on %s", npu_dtype_name(y->t.dtype));
        }
    }
    struct npu_node *act = npu_node_new_v(g, op, n->name, in, nin, &y, 1);
    if (!act)
        return NPU_ERR_NOMEM;
    if (op == NPU_OP_LEAKY_RELU && npu_node_set_float(g, act, "alpha", s->act_alpha))
        return NPU_ERR_NOMEM;
    if (op == NPU_OP_HARD_SIGMOID && (npu_node_set_float(g, act, "alpha", s->act_alpha) ||
                                      npu_node_set_float(g, act, "beta", s->act_beta)))
        return NPU_ERR_NOMEM;
    /* insert after n */
    npu_graph_insert_before(g, n->next, act);
    n->out[0] = pre;
    pre->kind = NPU_VALUE_NODE;
    pre->producer = n;
    pre->producer_idx = 0;
    npu_node_del_attr(n, "npu_act");
    npu_node_del_attr(n, "npu_act_alpha");
    npu_node_del_attr(n, "npu_act_beta");
    act->device = NPU_DEVICE_ANY;
    return npu_infer_node(g, act);
}

/* x * m / 2^shift approximates f with m <= 32767 (16-bit OUT_CVT_SCALE and
 * MUL operands, kept positive), the largest shift <= max_shift that allows
 * it (facts §5.3: Mesa derives a 15-bit scale and a shift the same way).
 * Exact whenever f is such a dyadic fraction. */
static bool
dyadic(double f, unsigned max_shift, uint32_t *m, uint32_t *shift)
{
    if (!(f > 0) || f >= 32767.5)
        return false;
    int sh = 0;
    while (sh < (int)max_shift && ldexp(f, sh + 1) < 32767.5)
        sh++;
    double v = rint(ldexp(f, sh));
    if (v < 1)
        return false;
    *m = (uint32_t)v;
    *shift = (uint32_t)sh;
    return true;
}

/* The NPU copy of a 1..4-channel host image as packed fp16 pixels [H][W][C]
 * (layout "small_c", facts §2.10); not shared with NC1HWC2 copies. */
static struct npu_value *
small_c_input(struct npu_lower_ctx *cx, struct npu_node *n, struct npu_value *x)
{
    char name[128];
    snprintf(name, sizeof(name), "%.100s.to_npu_small_c", x->name);
    struct npu_node *t = npu_lower_new(cx, n, NPU_OP_RK_TO_NPU, name, &x, 1, 1);
    if (!t)
        return NULL;
    int64_t bytes = (npu_value_numel(x) * 2 + 15) / 16 * 16;
    if (npu_node_set_string(cx->g, t, "dtype", "f16") ||
        npu_node_set_string(cx->g, t, "layout", "small_c") ||
        npu_node_set_int(cx->g, t, "bytes", bytes) || npu_lower_done(cx, t))
        return NULL;
    return t->out[0];
}

/* Inserts the host-side space-to-depth of a patchified conv's input before
 * n: [1, C, Ho*kh, Wo*kw] -> Reshape [1, C, Ho, kh, Wo, kw] -> Transpose
 * [0,1,3,5,2,4] -> Reshape [1, C*kh*kw, Ho, Wo] (CPU nodes; channel c*kh*kw +
 * ky*kw + kx, the order of the flattened OIHW weights). */
static enum npu_status
space_to_depth(struct npu_lower_ctx *cx, struct npu_node *n, struct conv_src *s)
{
    struct npu_graph *g = cx->g;
    const struct npu_tensor *t = &s->x->t;
    int64_t C = t->dims[1], kh = s->pk[0], kw = s->pk[1];
    int64_t Ho = t->dims[2] / kh, Wo = t->dims[3] / kw;
    int64_t d6[6] = {1, C, Ho, kh, Wo, kw}, d4[4] = {1, C * kh * kw, Ho, Wo};
    int64_t perm[6] = {0, 1, 3, 5, 2, 4};
    char nm[128];
    snprintf(nm, sizeof(nm), "%.100s.s2d", n->name);
    struct npu_value *c6 = npu_graph_const_i64(g, nm, d6, 6, false);
    struct npu_value *c4 = npu_graph_const_i64(g, nm, d4, 4, false);
    if (!c6 || !c4)
        return NPU_ERR_NOMEM;
    struct npu_value *in1[2] = {s->x, c6};
    struct npu_node *r1 = npu_node_new(g, NPU_OP_RESHAPE, nm, in1, 2, 1, NULL);
    if (!r1)
        return NPU_ERR_NOMEM;
    r1->device = NPU_DEVICE_CPU;
    npu_graph_insert_before(g, n, r1);
    enum npu_status st = npu_infer_node(g, r1);
    if (st)
        return st;
    struct npu_node *tr = npu_node_new(g, NPU_OP_TRANSPOSE, nm, r1->out, 1, 1, NULL);
    if (!tr || npu_node_set_ints(g, tr, "perm", perm, 6))
        return NPU_ERR_NOMEM;
    tr->device = NPU_DEVICE_CPU;
    npu_graph_insert_before(g, n, tr);
    if ((st = npu_infer_node(g, tr)))
        return st;
    struct npu_value *in2[2] = {tr->out[0], c4};
    struct npu_node *r2 = npu_node_new(g, NPU_OP_RESHAPE, nm, in2, 2, 1, NULL);
    if (!r2)
        return NPU_ERR_NOMEM;
    r2->device = NPU_DEVICE_CPU;
    npu_graph_insert_before(g, n, r2);
    if ((st = npu_infer_node(g, r2)))
        return st;
    s->x = r2->out[0];
    return NPU_OK;
}

/* The be-dpu LUT table that applies activation `a` in one lookup (0: none). x * f(x)
 * functions use their one-table form unless be-dpu is set to two passes. */
static uint32_t
lut_of_act(const char *a)
{
    enum npu_dpu_fn fn;
    if (!a)
        return 0;
    if (!strcmp(a, "sigmoid"))
        fn = NPU_DPU_FN_SIGMOID;
    else if (!strcmp(a, "tanh"))
        fn = NPU_DPU_FN_TANH;
    else if (!strcmp(a, "gelu") && !npu_dpu_gelu_two_pass)
        fn = NPU_DPU_FN_GELU;
    else if (!strcmp(a, "gelu_tanh") && !npu_dpu_gelu_two_pass)
        fn = NPU_DPU_FN_GELU_TANH;
    else if (!strcmp(a, "silu") && !npu_dpu_gelu_two_pass)
        fn = NPU_DPU_FN_SILU;
    else
        return 0;
    const struct npu_dpu_lut *l = npu_dpu_lut_get(npu_dpu_lut_fn_id(fn));
    return l && l->in_offset == 0 ? l->id : 0;
}

/* A residual Add after n that n's DPU pass can do (EW add of a per-pixel operand): n's
 * result goes only to an Add on the NPU of the same shape, whose other operand is already
 * on the NPU in the result's view. Returns the Add and that operand's NPU value. */
static struct npu_node *
residual_add(struct npu_lower_ctx *cx, struct npu_node *n, const struct conv_src *s,
             struct npu_value **res)
{
    struct npu_value *y = n->out[0];
    if (cx->o->no_ew_fusion || s->integer || s->g.in_dt != NPU_DTYPE_FP16 || s->g.mtx ||
        y->is_output || y->nusers != 1)
        return NULL;
    struct npu_node *a = y->users[0];
    if (a->op != NPU_OP_ADD || a->device != NPU_DEVICE_NPU || a->nin != 2 || a->nout != 1 ||
        !a->in[0] || !a->in[1] || (a->in[0] == y) == (a->in[1] == y) ||
        npu_node_int(a, "npu_dpu_done", 0))
        return NULL;
    struct npu_value *o = a->in[0] == y ? a->in[1] : a->in[0];
    const struct npu_tensor *ot = &o->t, *at = &a->out[0]->t;
    if (ot->ndim != y->t.ndim || at->ndim != y->t.ndim || !npu_dtype_is_float(ot->dtype))
        return NULL;
    for (int i = 0; i < ot->ndim; i++)
        if (ot->dims[i] != y->t.dims[i] || at->dims[i] != y->t.dims[i])
            return NULL;
    struct npu_value *r = npu_lower_lookup(cx, o);
    /* a be-dpu view without tasks (rk.Dpu alias 1: the same bytes under another view) has
     * no bytes of its own: the EW operand reads its source's */
    while (r && r->producer && r->producer->op == NPU_OP_RK_DPU &&
           npu_node_int(r->producer, "alias", 0)) {
        if (npu_node_int(r->producer, "alias", 0) != 1 || r->producer->nin < 1)
            return NULL;
        r = r->producer->in[0];
    }
    uint32_t rv[3];
    if (!r || !npu_rk_view(r, rv) || rv[0] != s->out_view[0] || rv[1] != s->out_view[1] ||
        rv[2] != s->out_view[2] || strcmp(npu_rk_layout(r), "nc1hwc2") ||
        npu_rk_view_order(r) != npu_rk_order_of(&y->t, s->out_view) ||
        (r->t.dtype != NPU_DTYPE_FP16 && r->t.dtype != NPU_DTYPE_FP32))
        return NULL;
    *res = r;
    return a;
}

/* The reader of n's result when it is a residual Add that n's lowering will likely run in
 * its DPU (residual_add() without the NPU values, which only exist while lowering): for
 * cost(), which runs before partitioning. */
static const struct npu_node *
residual_reader(const struct npu_node *n, const struct conv_src *s,
                const struct npu_backend_options *o)
{
    const struct npu_value *y = n->out[0];
    if (o->no_ew_fusion || s->integer || s->g.in_dt != NPU_DTYPE_FP16 || s->g.mtx || y->is_output ||
        y->nusers != 1 || (s->act_name && lut_of_act(s->act_name)))
        return NULL;
    const struct npu_node *a = y->users[0];
    if (a->op != NPU_OP_ADD || a->device == NPU_DEVICE_CPU || a->nin != 2 || a->nout != 1 ||
        !a->in[0] || !a->in[1] || (a->in[0] == y) == (a->in[1] == y))
        return NULL;
    const struct npu_value *ov = a->in[0] == y ? a->in[1] : a->in[0];
    const struct npu_tensor *ot = &ov->t, *at = &a->out[0]->t;
    if (ov->kind != NPU_VALUE_NODE || !ov->producer || ot->ndim != y->t.ndim ||
        at->ndim != y->t.ndim || !npu_dtype_is_float(ot->dtype))
        return NULL;
    /* the lowering finds the other operand on the NPU only when its producer came first */
    const struct npu_node *q = n->prev;
    while (q && q != ov->producer)
        q = q->prev;
    if (!q || q->device == NPU_DEVICE_CPU)
        return NULL;
    for (int i = 0; i < ot->ndim; i++)
        if (ot->dims[i] != y->t.dims[i] || at->dims[i] != y->t.dims[i])
            return NULL;
    return a;
}

bool
npu_conv_residual_likely(const struct npu_graph *g, const struct npu_node *add,
                         const struct npu_backend_options *o)
{
    static const struct npu_backend_options defaults;
    if (!o)
        o = &defaults;
    if (add->op != NPU_OP_ADD || add->nin != 2)
        return false;
    for (int i = 0; i < 2; i++) {
        const struct npu_value *y = add->in[i];
        const struct npu_node *p = y && y->kind == NPU_VALUE_NODE ? y->producer : NULL;
        struct conv_src s;
        if (!p || (p->op != NPU_OP_MATMUL && p->op != NPU_OP_GEMM) || p->device == NPU_DEVICE_CPU ||
            !read_src(g, p, &s, NULL, 0))
            continue;
        if (residual_reader(p, &s, o) == add)
            return true;
    }
    return false;
}

enum npu_status
npu_conv_lower(struct npu_lower_ctx *cx, struct npu_node *n)
{
    char why[256];
    struct conv_src s;
    enum npu_status st;
    if (!read_src(cx->g, n, &s, why, sizeof(why)))
        return npu_lower_refuse(n, "%s", why);
    s.g.mtx = cx->o->mtx_style != 0;
    if (cx->o->fp16_partials)
        s.g.part_dt = NPU_DTYPE_FP16;
    struct plan p;
    bool planned = plan_conv(&s.g, s.groups, cx->o, &p);
    if (!planned && s.g.mtx) {
        s.g.mtx = false; /* A.1 does not fit: the general style */
        planned = plan_conv(&s.g, s.groups, cx->o, &p);
    }
    if (!planned)
        return npu_lower_refuse(n, "no tiling fits the CBUF");
    if (s.g.mtx && (p.n != 1 || s.g.bias || s.act_name || s.kind == SRC_CONV || s.g.c % 32 ||
                    s.g.k % 16 || (s.g.h != 1 && s.g.h % 4))) {
        /* MTX's template covers one plain task (facts A.1 constraints) */
        s.g.mtx = false;
        plan_free(&p);
        if (!plan_conv(&s.g, s.groups, cx->o, &p))
            return npu_lower_refuse(n, "no tiling fits the CBUF");
    }
    /* LUT functions run in the EW stage of the last block (be-dpu's tables) */
    uint32_t lut = cx->o->no_act_fusion || s.g.mtx ? 0 : lut_of_act(s.act_name);
    if (lut) {
        s.g.lut_id = lut;
        s.act_name = NULL;
        p.seconds += rk_lut_prologue_seconds();
    }
    /* activations the DPU stages cannot apply here run as their own node */
    bool accum = p.parts > 0;
    if (s.act_name && (!s.act_fused || cx->o->no_act_fusion ||
                       (accum && s.g.act == RK_ACT_CLIP && s.g.act_lo != 0))) {
        if ((st = split_act(cx, n, &s))) {
            plan_free(&p);
            return st;
        }
        s.act_name = NULL;
        s.g.act = RK_ACT_NONE;
        plan_free(&p);
        if (!plan_conv(&s.g, s.groups, cx->o, &p))
            return npu_lower_refuse(n, "no tiling fits the CBUF");
    }
    /* a residual Add after the product: its EW stage adds the other operand */
    struct npu_value *res = NULL;
    struct npu_node *radd = lut ? NULL : residual_add(cx, n, &s, &res);
    if (radd) {
        struct plan pr;
        s.g.residual = true;
        s.g.res_dt = res->t.dtype;
        /* with channel blocks the residual joins the first block, before the activation
         * of the last one: only without an activation */
        if (plan_conv(&s.g, s.groups, cx->o, &pr) && !(pr.parts && s.g.act != RK_ACT_NONE)) {
            plan_free(&p);
            p = pr;
        } else {
            if (pr.t)
                plan_free(&pr);
            s.g.residual = false;
            radd = NULL;
            res = NULL;
        }
    }
    bool need_bias = s.g.bias;
    if (s.integer) {
        /* the weights must stay int8 after the zero point moved into them */
        float *wd = dense_weights(&s);
        if (!wd) {
            plan_free(&p);
            return NPU_ERR_NOMEM;
        }
        size_t nw = (size_t)s.g.k * s.g.c * s.g.kh * s.g.kw;
        for (size_t i = 0; i < nw; i++)
            if (wd[i] < -128 || wd[i] > 127) {
                free(wd);
                plan_free(&p);
                return npu_lower_refuse(n, "weight minus its zero point leaves int8");
            }
        free(wd);
    }

    /* ---- operands */
    if (s.patchify && (st = space_to_depth(cx, n, &s))) {
        plan_free(&p);
        return st;
    }
    struct npu_value *x =
        s.g.argb ? small_c_input(cx, n, s.x) : npu_lower_input(cx, n, s.x, s.in_view, s.g.in_dt);
    if (!x) {
        plan_free(&p);
        return npu_lower_refuse(n, "input '%s' cannot be read in the NC1HWC2 view %ux%ux%u",
                                s.x->name, s.in_view[0], s.in_view[1], s.in_view[2]);
    }
    if ((s.images > 1 || s.one_d) && s.in_view[1] * s.in_view[2] > 1 &&
        npu_rk_view_order(x) != NPU_VIEW_NCHW) {
        plan_free(&p);
        return npu_lower_refuse(n, "input '%s' is on the NPU as rows, not as a map", s.x->name);
    }
    uint8_t *blob = NULL;
    uint64_t blob_bytes = 0;
    if ((st = pack_weights(&s, &p, &blob, &blob_bytes))) {
        plan_free(&p);
        return st;
    }
    char name[160];
    snprintf(name, sizeof(name), "%.100s.wpack", s.w->name);
    int64_t wd = (int64_t)blob_bytes;
    struct npu_value *wv = npu_lower_const(cx, name, NPU_DTYPE_UINT8, 1, &wd, blob);
    free(blob);
    struct npu_value *bv = NULL;
    if (need_bias) {
        uint32_t blen;
        void *b;
        if (s.integer) {
            float *wf = dense_weights(&s);
            b = wf ? bias_array_int(&s, wf, &blen) : NULL;
            free(wf);
        } else {
            b = bias_array(&s, &blen);
        }
        if (!b) {
            plan_free(&p);
            return NPU_ERR_NOMEM;
        }
        snprintf(name, sizeof(name), "%.100s.bias", n->out[0]->name);
        int64_t bd = blen;
        bv = npu_lower_const(cx, name, s.integer ? NPU_DTYPE_INT32 : NPU_DTYPE_FP32, 1, &bd, b);
        free(b);
    }
    if (!wv || (need_bias && !bv)) {
        plan_free(&p);
        return NPU_ERR_NOMEM;
    }

    /* ---- int8 requantisation: y = round(acc * sx * sw[k] / sy) + zy */
    int64_t qcvt[3] = {1, 0, 0};
    uint32_t chshift = 0;
    struct npu_value *qv = NULL;
    if (s.qlinear) {
        /* uint8 results are held as y - 128 (the host conversion adds 128) */
        int32_t off = s.y_zp - (s.y_dt == NPU_DTYPE_UINT8 ? 128 : 0);
        qcvt[2] = off;
        int64_t nws = npu_value_numel(s.ws);
        if (nws == 1) {
            uint32_t m, sh;
            if (!dyadic((double)s.sx * npu_value_get_f64(s.ws, 0) / s.sy, 62, &m, &sh)) {
                plan_free(&p);
                return npu_lower_refuse(n, "requantisation scale out of the OUT_CVT range");
            }
            qcvt[0] = m;
            qcvt[1] = sh;
        } else {
            /* one shift for every channel: the smallest of their own */
            uint32_t kpad = (s.g.k + 63) / 64 * 64, m, sh, smin = 63;
            for (int64_t k = 0; k < nws; k++) {
                if (!dyadic((double)s.sx * npu_value_get_f64(s.ws, k) / s.sy, 63, &m, &sh)) {
                    plan_free(&p);
                    return npu_lower_refuse(n, "requantisation scale out of range");
                }
                smin = sh < smin ? sh : smin;
            }
            int32_t *mul = calloc(kpad, sizeof(int32_t));
            if (!mul) {
                plan_free(&p);
                return NPU_ERR_NOMEM;
            }
            for (int64_t k = 0; k < nws; k++)
                mul[k] = (int32_t)rint(
                    ldexp((double)s.sx * npu_value_get_f64(s.ws, k) / s.sy, (int)smin));
            chshift = smin;
            snprintf(name, sizeof(name), "%.100s.qmul", n->out[0]->name);
            int64_t qd = kpad;
            qv = npu_lower_const(cx, name, NPU_DTYPE_INT32, 1, &qd, mul);
            free(mul);
            if (!qv) {
                plan_free(&p);
                return NPU_ERR_NOMEM;
            }
        }
    }

    /* ---- the node */
    struct npu_value *in[5] = {x, wv, bv, qv, NULL};
    int nin = qv ? 4 : need_bias ? 3 : 2;
    if (res)
        in[nin++] = res;
    struct npu_node *r = npu_lower_new(cx, n, NPU_OP_RK_CONV, n->name, in, nin, 1 + (int)p.parts);
    if (!r) {
        plan_free(&p);
        return NPU_ERR_NOMEM;
    }
    struct npu_graph *g = cx->g;
    int64_t kern[2] = {s.g.kh, s.g.kw}, strd[2] = {s.g.sy, s.g.sx};
    int64_t pads[4] = {s.pads[0], s.pads[1], s.pads[2], s.pads[3]};
    int64_t view[3] = {s.out_view[0], s.out_view[1], s.out_view[2]};
    int64_t *tv = malloc(sizeof(int64_t) * RKT_FIELDS * p.n);
    if (!tv) {
        plan_free(&p);
        return NPU_ERR_NOMEM;
    }
    for (uint32_t i = 0; i < p.n; i++) {
        const struct rk_tile *t = &p.t[i];
        int64_t *f = tv + (size_t)i * RKT_FIELDS;
        f[RKT_OY0] = t->oy0;
        f[RKT_OH] = t->oh;
        f[RKT_K0] = t->k0;
        f[RKT_NK] = t->nk;
        f[RKT_C0] = t->c0;
        f[RKT_NC] = t->nc;
        f[RKT_BANK] = t->bank;
        f[RKT_FLAGS] = t->flags;
        f[RKT_WOFF] = t->woff;
        f[RKT_SRC] = t->src;
        f[RKT_DST] = t->dst;
    }
    st = npu_node_set_ints(g, r, "shape", s.out_dims, (size_t)s.out_ndim);
    if (!st)
        st = npu_node_set_string(g, r, "dtype", npu_dtype_name(s.g.out_dt));
    if (!st)
        st = npu_node_set_ints(g, r, "view", view, 3);
    if (!st && (s.g.kh != 1 || s.g.kw != 1))
        st = npu_node_set_ints(g, r, "kernel", kern, 2);
    if (!st && (s.g.sy != 1 || s.g.sx != 1))
        st = npu_node_set_ints(g, r, "stride", strd, 2);
    if (!st && (pads[0] || pads[1] || pads[2] || pads[3]))
        st = npu_node_set_ints(g, r, "pads", pads, 4);
    if (!st && s.g.depthwise)
        st = npu_node_set_int(g, r, "depthwise", 1);
    if (!st && s.g.act != RK_ACT_NONE)
        st = npu_node_set_string(g, r, "act", s.g.act == RK_ACT_RELU ? "relu" : "clip");
    if (!st && s.g.act == RK_ACT_CLIP) {
        st = npu_node_set_float(g, r, "act_min", s.g.act_lo);
        if (!st)
            st = npu_node_set_float(g, r, "act_max", s.g.act_hi);
    }
    if (!st && s.g.mtx)
        st = npu_node_set_string(g, r, "style", "mtx");
    if (!st && s.integer && s.x_zp)
        st = npu_node_set_int(g, r, "pad_value", s.x_zp);
    if (!st && s.qlinear)
        st = npu_node_set_ints(g, r, "q_cvt", qcvt, 3);
    if (!st && qv)
        st = npu_node_set_int(g, r, "q_chshift", chshift);
    if (!st && p.parts && s.g.part_dt != NPU_DTYPE_FP32)
        st = npu_node_set_string(g, r, "partial", npu_dtype_name(s.g.part_dt));
    if (!st && lut)
        st = npu_node_set_int(g, r, "lut", lut);
    if (!st && res)
        st = npu_node_set_int(g, r, "residual", 1);
    if (!st)
        st = npu_node_set_ints(g, r, "tiles", tv, (size_t)RKT_FIELDS * p.n);
    if (!st)
        st = npu_node_set_float(g, r, "modeled_us", (float)(p.seconds * 1e6));
    free(tv);
    plan_free(&p);
    if (!st)
        st = npu_lower_done(cx, r);
    if (!st && radd) {
        /* the Add is computed here: it has nothing left to do (be-dpu's handler sees the
         * mark), and its result is ours */
        st = npu_node_set_int(g, radd, "npu_dpu_done", 1);
        if (!st)
            st = npu_lower_result(cx, radd, 0, r->out[0]);
        return st;
    }
    if (!st)
        st = npu_lower_result(cx, n, 0, r->out[0]);
    return st;
}

/* ---- conv tasks for composites ----------------------------------------------------- */

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
    if (!plan_conv1(&g, 1, &defaults, true, &p)) {
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
    plan_free(&p);
    if (modeled_s)
        *modeled_s = sec;
    return st;
}
