/* SPDX-License-Identifier: MIT */
/*
 * conv-quant.c: the integer pipeline of the conv/matmul lowering (MatMulInteger,
 * ConvInteger, QLinearMatMul, QLinearConv): the zero points and QLinear scales read from
 * the node, the int32 bias that carries the input zero point, and the dyadic scale
 * (multiplier and shift) the requantisation uses.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conv-priv.h"

/* Zero points of the integer ops: the input's becomes a bias (-x_zp x the
 * kernel's weight sum) and the pad value; the weights' is subtracted at
 * compile time (the result must stay int8). uint8 operands are held as
 * value - 128 on the NPU (facts §5.2: Mesa's uint8 convention), so a uint8
 * zero point moves by 128 too. */
bool
conv_read_zero_points(const struct npu_node *n, struct conv_src *s, uint32_t kernels, char *why,
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
bool
conv_read_qparams(const struct npu_node *n, struct conv_src *s, uint32_t kernels, char *why,
                  size_t wl)
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
    if (s->y_dt != NPU_DTYPE_INT8 && s->y_dt != NPU_DTYPE_UINT8 && s->y_dt != NPU_DTYPE_INT16)
        return npu_be_refuse(why, wl, "result type %s (int8 / uint8 / int16)",
                             npu_dtype_name(s->y_dt));
    s->y_zp = 0;
    if (yz) {
        if (yz->kind != NPU_VALUE_CONST || npu_value_numel(yz) != 1 || yz->t.dtype != s->y_dt)
            return npu_be_refuse(why, wl,
                                 "y zero point must be a scalar constant of the result type");
        s->y_zp = (int32_t)npu_value_get_i64(yz, 0);
    }
    return true;
}

bool
conv_int8_operand(const struct npu_value *v)
{
    return v && (v->t.dtype == NPU_DTYPE_INT8 || v->t.dtype == NPU_DTYPE_UINT8 ||
                 v->t.dtype == NPU_DTYPE_INT16); /* int16: conv-int16.c checks the rest */
}

/* Integer kinds: -x_zp x (weight sum of the kernel), int32 per channel. */
int32_t *
conv_bias_array_int(const struct conv_src *s, const float *w, uint32_t *len)
{
    const struct rk_conv_geom *g = &s->g;
    uint32_t n = (g->k + 63) / 64 * 64; /* BRDMA reads the padded channels */
    uint64_t per = (uint64_t)(g->depthwise ? 1 : g->c) * g->kh * g->kw; /* dense weights */
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

/* x * m / 2^shift approximates f with m <= 32767 (16-bit OUT_CVT_SCALE and
 * MUL operands, kept positive), the largest shift <= max_shift that allows
 * it (facts §5.3: Mesa derives a 15-bit scale and a shift the same way).
 * Exact whenever f is such a dyadic fraction. */
bool
conv_dyadic(double f, unsigned max_shift, uint32_t *m, uint32_t *shift)
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

/* Switch for the tests' before / after: 0 leaves a DequantizeLinear after a QLinear
 * product to its own DPU pass. */
int npu_conv_deq_fusion = 1;

/* The DequantizeLinear that is the only reader of QLinear product n's result, with the
 * result's own scale and zero point (per tensor, int8), so that its output is
 * (acc + bias) * x_scale * w_scale[k] within the int8 range; NULL when there is none or
 * its parameters differ. Placement is not looked at (cost() asks before partitioning). */
struct npu_node *
conv_deq_reader(const struct npu_node *n, const struct conv_src *s,
                const struct npu_backend_options *o)
{
    struct npu_value *y = n->out[0];
    if (!npu_conv_deq_fusion || !s->qlinear || s->y_dt != NPU_DTYPE_INT8 || y->is_output ||
        y->nusers != 1 || (o && o->mtx_style))
        return NULL;
    struct npu_node *d = y->users[0];
    if (d->op != NPU_OP_DEQUANTIZE_LINEAR || d->nin < 2 || d->in[0] != y || d->nout != 1 ||
        npu_node_int(d, "npu_dpu_done", 0) || npu_node_int(d, "block_size", 0))
        return NULL;
    const struct npu_value *sc = d->in[1], *zp = d->nin > 2 ? d->in[2] : NULL;
    if (!scalar_f32(sc) || (float)npu_value_get_f64(sc, 0) != s->sy)
        return NULL;
    int64_t z = 0;
    if (zp) {
        if (zp->kind != NPU_VALUE_CONST || npu_value_numel(zp) != 1 ||
            zp->t.dtype != NPU_DTYPE_INT8)
            return NULL;
        z = npu_value_get_i64(zp, 0);
    }
    enum npu_dtype od = d->out[0]->t.dtype;
    if (z != s->y_zp || (od != NPU_DTYPE_FP32 && od != NPU_DTYPE_FP16))
        return NULL;
    /* the int8 saturation is kept exactly with one weight scale (BS ReLU-X in the sums'
     * domain), a lower bound of 0 (BN ReLU-X after the scale) or, per-channel scales with
     * a lower bound below 0, the bound added back by the EW stage (conv_deq_lo_ew) */
    if (npu_value_numel(s->ws) != 1 && s->y_zp != -128 && !conv_deq_lo_ew(s))
        return NULL;
    return d;
}

/* Switch for the tests' and benchmarks' before / after: 0 leaves a DequantizeLinear with
 * per-channel weight scales and a zero point other than -128 to its own DPU pass. */
int npu_conv_deq_lo_ew = 1;

/* The largest lower-bound operand (bytes) a fold through the EW stage may add: the
 * operand is the result's size (decode's one-row products: a few KB; a 128-row prefill's
 * would be MBs of constants, those keep their pass). */
#define CONV_DEQ_LO_EW_MAX_BYTES (64u << 10)

/* Whether a DequantizeLinear folded into product s keeps its int8 range as
 * [lo, hi] = lo + clamp(y - lo, 0, hi - lo) with the final "+ lo" in the EW stage: per-channel
 * weight scales (one BS ReLU-X bound does not fit every channel) and lo != 0 (zp != -128).
 * BS adds bias - lo / s[k] and applies ReLU (y >= lo), BN multiplies by s[k] and applies
 * ReLU-X hi - lo (one bound for all channels after the scale), EW adds lo per pixel from a
 * constant operand through ERDMA (the residual add's path: no proven EW register operand,
 * docs/quantisation.md). Evidence: each stage setting is one the other folds use (BS/BN
 * per-channel operands, BN ReLU-X, EW per-pixel add); the combination with the int8 -> fp16
 * DATA_FORMAT is TRM-inferred only (ledger level T), not tested on hardware. Not with a
 * residual Add (the EW operand is taken) and only when the operand is small. */
bool
conv_deq_lo_ew(const struct conv_src *s)
{
    if (!npu_conv_deq_lo_ew || !s->ws || npu_value_numel(s->ws) == 1 || s->y_zp == -128 ||
        s->y_dt != NPU_DTYPE_INT8)
        return false;
    uint64_t b = npu_rk_nc1hwc2_bytes(NPU_DTYPE_FP32, s->out_view);
    return b && b <= CONV_DEQ_LO_EW_MAX_BYTES;
}

struct npu_node *
conv_deq_consumer(struct npu_lower_ctx *cx, struct npu_node *n, const struct conv_src *s)
{
    struct npu_node *d = conv_deq_reader(n, s, cx->o);
    return d && d->device == NPU_DEVICE_NPU ? d : NULL;
}

/* Whether DequantizeLinear dq will be computed by the QLinear product before it. */
bool
npu_conv_deq_likely(const struct npu_graph *g, const struct npu_node *dq,
                    const struct npu_backend_options *o)
{
    const struct npu_value *y = dq->nin > 0 ? dq->in[0] : NULL;
    const struct npu_node *p = y && y->kind == NPU_VALUE_NODE ? y->producer : NULL;
    struct conv_src s;
    if (!p || (p->op != NPU_OP_QLINEAR_MATMUL && p->op != NPU_OP_QLINEAR_CONV) ||
        p->device == NPU_DEVICE_CPU || !conv_read_src(g, p, &s, NULL, 0))
        return false;
    return conv_deq_reader(p, &s, o) == dq;
}

/* What the lowering does with a fused DequantizeLinear: fp16 result, per-channel scales,
 * always a bias (it carries the lower bound). */
void
conv_deq_geom(struct conv_src *s)
{
    s->g.out_dt = NPU_DTYPE_FP16;
    s->g.q_per_channel = true;
    s->g.q_deq = true;
    s->g.bias = true;
}

/* The per-channel dequantisation scales x_scale * w_scale[k] of a fused product, f32
 * padded to 64 channels (NRDMA reads the padded channels). */
struct npu_value *
conv_deq_scales(struct npu_lower_ctx *cx, const struct npu_node *n, const struct conv_src *s,
                double mul)
{
    uint32_t kpad = (s->g.k + 63) / 64 * 64;
    int64_t nws = npu_value_numel(s->ws);
    float *v = calloc(kpad, sizeof(float));
    if (!v)
        return NULL;
    for (uint32_t k = 0; k < s->g.k; k++)
        v[k] = (float)((double)(float)((double)s->sx * npu_value_get_f64(s->ws, nws == 1 ? 0 : k)) *
                       mul);
    char name[160];
    snprintf(name, sizeof(name), "%.100s.dqscale", n->out[0]->name);
    int64_t d = kpad;
    struct npu_value *r = npu_lower_const(cx, name, NPU_DTYPE_FP32, 1, &d, v);
    free(v);
    return r;
}

/* The activation a folded DequantizeLinear's result goes to, as the conv lowering's
 * activation name, when the product's EW stage can apply it as one DPU LUT (its only
 * reader, not on the CPU, not a graph output); NULL otherwise. */
const char *
conv_deq_act(const struct npu_node *dq, const struct npu_backend_options *o, struct npu_node **act)
{
    const struct npu_value *y = dq->out[0];
    *act = NULL;
    if (!npu_conv_deq_fusion || (o && o->no_act_fusion) || y->is_output || y->nusers != 1)
        return NULL;
    struct npu_node *a = y->users[0];
    if (a->nin != 1 || a->nout != 1 || a->in[0] != y || a->device == NPU_DEVICE_CPU ||
        npu_node_int(a, "npu_dpu_done", 0) || a->out[0]->t.dtype != y->t.dtype)
        return NULL;
    const char *name;
    switch (a->op) {
    case NPU_OP_SIGMOID: name = "sigmoid"; break;
    case NPU_OP_TANH: name = "tanh"; break;
    case NPU_OP_GELU:
        name = strcmp(npu_node_string(a, "approximate", "none"), "tanh") ? "gelu" : "gelu_tanh";
        break;
    case NPU_OP_FUSED_GELU_TANH: name = "gelu_tanh"; break;
    case NPU_OP_FUSED_SILU: name = "silu"; break;
    default: return NULL;
    }
    if (!conv_lut_of_act(name))
        return NULL;
    *act = a;
    return name;
}

/* Whether activation node a will be applied by the QLinear product whose DequantizeLinear
 * it reads (priced there). */
bool
npu_conv_deq_act_likely(const struct npu_graph *g, const struct npu_node *a,
                        const struct npu_backend_options *o)
{
    const struct npu_value *v = a->nin == 1 ? a->in[0] : NULL;
    const struct npu_node *dq = v && v->kind == NPU_VALUE_NODE ? v->producer : NULL;
    struct npu_node *got;
    if (!dq || dq->op != NPU_OP_DEQUANTIZE_LINEAR || dq->device == NPU_DEVICE_CPU ||
        !npu_conv_deq_likely(g, dq, o) || !conv_deq_act(dq, o, &got))
        return false;
    return got == a;
}
