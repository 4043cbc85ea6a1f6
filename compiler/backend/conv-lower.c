/* SPDX-License-Identifier: MIT */
/*
 * conv-lower.c: the lowering of a MatMul / Gemm / Conv to one rk.Conv node: it chooses
 * the tiling, settles what is fused (activation, LUT, residual Add), brings the input to
 * the NPU (through a host space-to-depth for patchified convs, in the small-channel layout
 * for 1..4-channel images), makes the packed weights, bias and requantisation constants,
 * and writes the node's attributes (tiles, activation, quantisation, modeled time).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "conv-priv.h"
#include "npu-dpu-ops.h"

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

enum npu_status
npu_conv_lower(struct npu_lower_ctx *cx, struct npu_node *n)
{
    char why[256];
    struct conv_src s;
    enum npu_status st;
    if (!conv_read_src(cx->g, n, &s, why, sizeof(why)))
        return npu_lower_refuse(n, "%s", why);
    s.g.mtx = cx->o->mtx_style != 0;
    /* a DequantizeLinear after a QLinear product: the product's DPU writes the
     * dequantised fp16 result and the DequantizeLinear has nothing left to do */
    struct npu_node *dq = conv_deq_consumer(cx, n, &s);
    /* the int8 result's range, kept: [lo, hi] = (-128 - zp, 127 - zp) x y_scale */
    float q_lo = (float)((-128.0 - s.y_zp) * s.sy), q_hi = (float)((127.0 - s.y_zp) * s.sy);
    float q_bs_relux = 0;
    /* and an activation after it, applied as a LUT in the EW stage */
    struct npu_node *dact = NULL;
    if (dq) {
        const char *an = s.act_name ? NULL : conv_deq_act(dq, cx->o, &dact);
        if (an)
            s.act_name = an;
        conv_deq_geom(&s);
        if (npu_value_numel(s.ws) == 1)
            q_bs_relux =
                (float)(((double)q_hi - q_lo) / ((double)s.sx * npu_value_get_f64(s.ws, 0)));
    }
    if (cx->o->fp16_partials)
        s.g.part_dt = NPU_DTYPE_FP16;
    struct plan p;
    bool planned = conv_plan_conv(&s.g, s.groups, cx->o, &p);
    if (!planned && s.g.mtx) {
        s.g.mtx = false; /* A.1 does not fit: the general style */
        planned = conv_plan_conv(&s.g, s.groups, cx->o, &p);
    }
    if (!planned)
        return npu_lower_refuse(n, "no tiling fits the CBUF");
    if (s.g.mtx && (p.n != 1 || s.g.bias || dq || s.act_name || s.kind == SRC_CONV || s.g.c % 32 ||
                    s.g.k % 16 || (s.g.h != 1 && s.g.h % 4))) {
        /* MTX's template covers one plain task (facts A.1 constraints) */
        s.g.mtx = false;
        conv_plan_free(&p);
        if (!conv_plan_conv(&s.g, s.groups, cx->o, &p))
            return npu_lower_refuse(n, "no tiling fits the CBUF");
    }
    /* LUT functions run in the EW stage of the last block (the DPU LUT tables) */
    uint32_t lut = cx->o->no_act_fusion || s.g.mtx ? 0 : conv_lut_of_act(s.act_name);
    if (lut) {
        s.g.lut_id = lut;
        s.act_name = NULL;
        p.seconds += rk_lut_prologue_seconds();
    } else if (dact) {
        dact = NULL; /* (mtx style or no LUT): the activation stays a pass */
        s.act_name = NULL;
    }
    /* activations the DPU stages cannot apply here run as their own node */
    bool accum = p.parts > 0;
    if (s.act_name && (!s.act_fused || cx->o->no_act_fusion ||
                       (accum && s.g.act == RK_ACT_CLIP && s.g.act_lo != 0))) {
        if ((st = conv_split_act(cx, n, &s))) {
            conv_plan_free(&p);
            return st;
        }
        s.act_name = NULL;
        s.g.act = RK_ACT_NONE;
        conv_plan_free(&p);
        if (!conv_plan_conv(&s.g, s.groups, cx->o, &p))
            return npu_lower_refuse(n, "no tiling fits the CBUF");
    }
    /* a residual Add after the product: its EW stage adds the other operand */
    struct npu_value *res = NULL;
    struct npu_node *radd = lut ? NULL : conv_residual_add(cx, n, &s, &res);
    if (radd) {
        struct plan pr;
        s.g.residual = true;
        s.g.res_dt = res->t.dtype;
        /* with channel blocks the residual joins the first block, before the activation
         * of the last one: only without an activation */
        if (conv_plan_conv(&s.g, s.groups, cx->o, &pr) && !(pr.parts && s.g.act != RK_ACT_NONE)) {
            conv_plan_free(&p);
            p = pr;
        } else {
            if (pr.t)
                conv_plan_free(&pr);
            s.g.residual = false;
            radd = NULL;
            res = NULL;
        }
    }
    /* per-channel scales, lower bound below 0: the EW stage adds it back (conv_deq_lo_ew),
     * from a constant operand read as the residual is */
    const bool lo_ew = dq && conv_deq_lo_ew(&s);
    if (lo_ew) {
        struct plan pr;
        s.g.residual = true;
        s.g.res_dt = NPU_DTYPE_FP32;
        if (!conv_plan_conv(&s.g, s.groups, cx->o, &pr)) {
            conv_plan_free(&p);
            return npu_lower_refuse(n, "no tiling fits the CBUF");
        }
        conv_plan_free(&p);
        p = pr;
        if (lut)
            p.seconds += rk_lut_prologue_seconds();
    }
    bool need_bias = s.g.bias;
    uint32_t q_clip = 0; /* int16: CORE CLIP_TRUNCATE (conv-int16.c) */
    if (s.integer) {
        /* the weights must stay int8 after the zero point moved into them */
        float *wd = conv_dense_weights(&s);
        if (!wd) {
            conv_plan_free(&p);
            return NPU_ERR_NOMEM;
        }
        /* conv_dense_weights: one channel per kernel when depthwise */
        size_t nw = (size_t)s.g.k * (s.g.depthwise ? 1 : s.g.c) * s.g.kh * s.g.kw;
        const bool i16 = s.g.in_dt == NPU_DTYPE_INT16;
        for (size_t i = 0; i < nw; i++)
            if (i16 ? (wd[i] < -32768 || wd[i] > 32767) : (wd[i] < -128 || wd[i] > 127)) {
                free(wd);
                conv_plan_free(&p);
                return npu_lower_refuse(n, "weight minus its zero point leaves int8");
            }
        if (i16 && !conv_int16_clip(&s, wd, &q_clip)) {
            free(wd);
            conv_plan_free(&p);
            return npu_lower_refuse(n, "int16 sums may pass the 48-bit accumulator");
        }
        free(wd);
    }

    /* ---- operands */
    if (s.patchify && (st = space_to_depth(cx, n, &s))) {
        conv_plan_free(&p);
        return st;
    }
    struct npu_value *x =
        s.g.argb ? small_c_input(cx, n, s.x) : npu_lower_input(cx, n, s.x, s.in_view, s.g.in_dt);
    if (!x) {
        conv_plan_free(&p);
        return npu_lower_refuse(n, "input '%s' cannot be read in the NC1HWC2 view %ux%ux%u",
                                s.x->name, s.in_view[0], s.in_view[1], s.in_view[2]);
    }
    if ((s.images > 1 || s.one_d) && s.in_view[1] * s.in_view[2] > 1 &&
        npu_rk_view_order(x) != NPU_VIEW_NCHW) {
        conv_plan_free(&p);
        return npu_lower_refuse(n, "input '%s' is on the NPU as rows, not as a map", s.x->name);
    }
    char name[160];
    snprintf(name, sizeof(name), "%.100s.wpack", s.w->name);
    struct npu_value *wv = NULL;
    /* B's rows centred for a residual stream (dpu-center.c): while packing from the fp32
     * source, else written centred first */
    if (npu_node_int(n, NPU_CENTRE_ROWS_ATTR, 0)) {
        if (n->op == NPU_OP_MATMUL && s.w == n->in[1] && s.w_trans && s.w->t.ndim == 2 &&
            conv_pack_direct(&s, &p))
            s.centre_rows = true;
        else if ((st = npu_dpu_centre_pending(cx->g, n))) {
            conv_plan_free(&p);
            return st;
        }
    }
    if ((st = conv_pack_weights_const(cx, &s, &p, name, &wv))) {
        conv_plan_free(&p);
        return st;
    }
    struct npu_value *bv = NULL;
    if (need_bias) {
        uint32_t blen;
        void *b;
        if (s.integer) {
            float *wf = conv_dense_weights(&s);
            b = wf ? conv_bias_array_int(&s, wf, &blen) : NULL;
            free(wf);
            if (b && q_clip)
                conv_int16_shift_bias(b, blen, q_clip);
            if (b && dq) {
                /* the fp16 pipeline adds it as f32, less the lower bound in the sums'
                 * domain (BS ReLU then clamps at it) */
                int32_t *bi = b;
                float *bf = b;
                int64_t nws = npu_value_numel(s.ws);
                for (uint32_t i = 0; i < blen; i++) {
                    double sc = i < s.g.k
                                    ? (double)(float)((double)s.sx *
                                                      npu_value_get_f64(s.ws, nws == 1 ? 0 : i))
                                    : 1.0;
                    bf[i] = (float)((double)bi[i] - (i < s.g.k ? q_lo / sc : 0.0));
                }
            }
        } else {
            b = conv_bias_array(&s, &blen);
        }
        if (!b) {
            conv_plan_free(&p);
            return NPU_ERR_NOMEM;
        }
        snprintf(name, sizeof(name), "%.100s.bias", n->out[0]->name);
        int64_t bd = blen;
        bv = npu_lower_const(cx, name, s.integer && !dq ? NPU_DTYPE_INT32 : NPU_DTYPE_FP32, 1, &bd,
                             b);
        free(b);
    }
    if (!wv || (need_bias && !bv)) {
        conv_plan_free(&p);
        return NPU_ERR_NOMEM;
    }

    /* ---- int8 requantisation: y = round(acc * sx * sw[k] / sy) + zy */
    int64_t qcvt[3] = {1, 0, 0};
    uint32_t chshift = 0;
    struct npu_value *qv = NULL;
    if (dq) {
        /* dequantised: (acc + bias) * x_scale * w_scale[k] */
        /* with a LUT, BN's multiply also brings the result into the table's index domain */
        double mul = lut ? (double)npu_dpu_lut_get(lut)->in_scale : 1.0;
        if (!(qv = conv_deq_scales(cx, n, &s, mul))) {
            conv_plan_free(&p);
            return NPU_ERR_NOMEM;
        }
    } else if (s.qlinear) {
        /* uint8 results are held as y - 128 (the host conversion adds 128) */
        int32_t off = s.y_zp - (s.y_dt == NPU_DTYPE_UINT8 ? 128 : 0);
        qcvt[2] = off;
        /* int16: the sums arrive shifted right by q_clip */
        const double qf = ldexp(1.0, (int)q_clip);
        int64_t nws = npu_value_numel(s.ws);
        if (nws == 1) {
            uint32_t m, sh;
            if (!conv_dyadic(qf * s.sx * npu_value_get_f64(s.ws, 0) / s.sy, 62, &m, &sh)) {
                conv_plan_free(&p);
                return npu_lower_refuse(n, "requantisation scale out of the OUT_CVT range");
            }
            qcvt[0] = m;
            qcvt[1] = sh;
        } else {
            /* one shift for every channel: the smallest of their own */
            uint32_t kpad = (s.g.k + 63) / 64 * 64, m, sh, smin = 63;
            for (int64_t k = 0; k < nws; k++) {
                if (!conv_dyadic(qf * s.sx * npu_value_get_f64(s.ws, k) / s.sy, 63, &m, &sh)) {
                    conv_plan_free(&p);
                    return npu_lower_refuse(n, "requantisation scale out of range");
                }
                smin = sh < smin ? sh : smin;
            }
            int32_t *mul = calloc(kpad, sizeof(int32_t));
            if (!mul) {
                conv_plan_free(&p);
                return NPU_ERR_NOMEM;
            }
            for (int64_t k = 0; k < nws; k++)
                mul[k] =
                    (int32_t)rint(ldexp(qf * s.sx * npu_value_get_f64(s.ws, k) / s.sy, (int)smin));
            chshift = smin;
            snprintf(name, sizeof(name), "%.100s.qmul", n->out[0]->name);
            int64_t qd = kpad;
            qv = npu_lower_const(cx, name, NPU_DTYPE_INT32, 1, &qd, mul);
            free(mul);
            if (!qv) {
                conv_plan_free(&p);
                return NPU_ERR_NOMEM;
            }
        }
    }

    if (lo_ew) {
        /* the lower bound (times a LUT's input scale), one f32 per element of the result's
         * NC1HWC2 bytes: every element the same, so any layout reads it */
        uint64_t nb = npu_rk_nc1hwc2_bytes(NPU_DTYPE_FP32, s.out_view);
        int64_t ne = (int64_t)(nb / sizeof(float));
        float *lov = malloc((size_t)nb);
        if (!lov) {
            conv_plan_free(&p);
            return NPU_ERR_NOMEM;
        }
        const float lin = lut ? npu_dpu_lut_get(lut)->in_scale : 1.0f;
        for (int64_t i = 0; i < ne; i++)
            lov[i] = q_lo * lin;
        snprintf(name, sizeof(name), "%.100s.dqlo", n->out[0]->name);
        res = npu_lower_const(cx, name, NPU_DTYPE_FP32, 1, &ne, lov);
        free(lov);
        if (!res) {
            conv_plan_free(&p);
            return NPU_ERR_NOMEM;
        }
    }

    /* ---- the node */
    struct npu_value *in[5] = {x, wv, bv, qv, NULL};
    int nin = qv ? 4 : need_bias ? 3 : 2;
    if (res)
        in[nin++] = res;
    struct npu_node *r = npu_lower_new(cx, n, NPU_OP_RK_CONV, n->name, in, nin, 1 + (int)p.parts);
    if (!r) {
        conv_plan_free(&p);
        return NPU_ERR_NOMEM;
    }
    struct npu_graph *g = cx->g;
    int64_t kern[2] = {s.g.kh, s.g.kw}, strd[2] = {s.g.sy, s.g.sx};
    int64_t pads[4] = {s.pads[0], s.pads[1], s.pads[2], s.pads[3]};
    int64_t view[3] = {s.out_view[0], s.out_view[1], s.out_view[2]};
    int64_t *tv = malloc(sizeof(int64_t) * RKT_FIELDS * p.n);
    if (!tv) {
        conv_plan_free(&p);
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
    if (!st && s.qlinear && !dq)
        st = npu_node_set_ints(g, r, "q_cvt", qcvt, 3);
    if (!st && q_clip)
        st = npu_node_set_int(g, r, "q_clip", q_clip);
    if (!st && dq)
        st = npu_node_set_int(g, r, "q_deq", 1);
    if (!st && dq)
        st = npu_node_set_float(g, r, "q_lo", q_lo);
    if (!st && dq)
        st = npu_node_set_float(g, r, "q_hi", q_hi);
    if (!st && lo_ew)
        st = npu_node_set_int(g, r, "q_lo_ew", 1);
    if (!st && dq && q_bs_relux > 0)
        st = npu_node_set_float(g, r, "q_bs_relux", q_bs_relux);
    else if (!st && qv)
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
    conv_plan_free(&p);
    if (!st)
        st = npu_lower_done(cx, r);
    if (!st && dq) {
        st = npu_node_set_int(g, dq, "npu_dpu_done", 1);
        if (!st && dact) {
            /* the activation is computed here too: its result is ours */
            st = npu_node_set_int(g, dact, "npu_dpu_done", 1);
            if (!st)
                st = npu_lower_result(cx, dact, 0, r->out[0]);
            return st;
        }
        if (!st && !radd)
            st = npu_lower_result(cx, dq, 0, r->out[0]);
        if (!radd)
            return st;
    }
    if (!st && radd) {
        /* the Add is computed here: it has nothing left to do (the DPU handler sees the
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
