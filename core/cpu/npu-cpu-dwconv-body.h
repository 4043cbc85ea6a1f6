/* SPDX-License-Identifier: MIT */
/*
 * npu-cpu-dwconv-body.h: the depthwise and small-channel convolution loops of
 * npu-cpu-dwconv.c, written once over a vector of VW floats and included there
 * once per instruction set (AVX-512F, AVX2+FMA). The includer defines
 *   DW_SFX     the function name suffix,
 *   DW_TARGET  the target attribute,
 *   V, VW      the vector type and its width,
 *   ZERO() SET1(f) FMA(a, b, c) ADD(a, b)
 *   MT, MK(c0, W)     a load mask type, and the mask of the columns c0 .. c0+VW-1 of a
 *                     row of W floats that are inside [0, W),
 *   LDM(row, c0, m)   those columns with mask m, 0 in the masked lanes (nothing outside
 *                     the row is read),
 *   LDU(p)            VW floats from p (unaligned),
 *   EVEN(a, b)        the even lanes of a then of b (stride-2 deinterleave),
 *   ODD(a, b)         the odd lanes of a then of b,
 *   STN(p, v, n)      the first n lanes of v to p,
 *   ACTV(v, kind, a, b)  the fused activation `kind` (CPU_ACT_NONE, RELU, CLIP, HARD_SWISH or
 *                     HARD_SIGMOID, alpha a, beta b as vectors) on v, lane by lane, with the
 *                     same operations as cpu_act_apply (so the same bits).
 * Every output sums its taps from 0 in (c, kh, kw) order, skipping rows outside the image
 * (a tap on a padded column adds 0 * k), then adds the bias: as the other Conv paths do.
 */

#define DW_CAT2(a, b) a##_##b
#define DW_CAT(a, b) DW_CAT2(a, b)
#define DW_NAME(f) DW_CAT(f, DW_SFX)

/* One depthwise plane: x [H][W] with kernel k [KH][KW] to y [OH][OW] (+ bias). Rows of four
 * or more blocks of VW outputs go row by row (the KH input rows stay in L1), the inner blocks
 * of a row whose taps are all inside the image four at a time with plain loads (four
 * independent sums hide the FMA latency), the border blocks and the border rows one block at
 * a time over their valid taps with masked loads. Narrower planes (small enough to stay in
 * cache) go one column block at a time down the rows, four full rows at a time. KH and KW are
 * compile-time constants in the common instances (3x3, 5x5), so the taps unroll. */
DW_TARGET static inline __attribute__((always_inline)) void
DW_NAME(dw_plane_k)(const float *x, const float *k, const struct dw_geo *g, float bias, float *y,
                    const struct cpu_act_spec *act, const int64_t KH, const int64_t KW,
                    const int s1)
{
    const enum cpu_act ak = act->kind;
    const V aa = SET1(act->alpha), ab = SET1(act->beta);
    const int64_t H = g->H, W = g->W, OH = g->OH, OW = g->OW;
    const int64_t s0 = g->s0, pt = g->pt, pl = g->pl;
    const int64_t nb = (OW + VW - 1) / VW;
    const V bv = SET1(bias);
    /* rows [f0, f1) read only rows inside the image */
    int64_t f0 = pt > 0 ? (pt + s0 - 1) / s0 : 0;
    int64_t f1 = H - KH + pt >= 0 ? (H - KH + pt) / s0 + 1 : 0;
    f0 = f0 < OH ? f0 : OH;
    f1 = f1 < f0 ? f0 : f1 > OH ? OH : f1;
    MT m0[DW_MAXK], m1[DW_MAXK];
#define DW_MASKS(c0)                                                                               \
    for (int64_t kw = 0; kw < KW; kw++) {                                                          \
        m0[kw] = MK((c0) + kw, W);                                                                 \
        if (s1 == 2)                                                                               \
            m1[kw] = MK((c0) + kw + VW, W);                                                        \
    }
#define DW_LOAD(row, c0, kw)                                                                       \
    (s1 == 1 ? LDM(row, (c0) + (kw), m0[kw])                                                       \
             : EVEN(LDM(row, (c0) + (kw), m0[kw]), LDM(row, (c0) + (kw) + VW, m1[kw])))
#define DW_FULL(row, c0, kw)                                                                       \
    (s1 == 1 ? LDU((row) + (c0) + (kw))                                                            \
             : EVEN(LDU((row) + (c0) + (kw)), LDU((row) + (c0) + (kw) + VW)))
    if (nb >= 6) {
        /* blocks [b0, b1) are whole and read inside the row */
        int64_t b0 = 0, b1 = nb;
        while (b0 < nb && b0 * VW * s1 - pl < 0)
            b0++;
        while (b1 > b0 && ((b1 - 1) * VW + VW > OW ||
                           (b1 - 1) * VW * s1 - pl + KW - 1 + (int64_t)s1 * VW - 1 >= W))
            b1--;
        /* the blocks a full row leaves to masked loads (the borders, an odd one out of the
         * interior groups): up to four go as one group of independent sums, each block with its
         * own masks, instead of one dependent FMA chain each */
        int64_t lb[4], lc[4], nl = 0;
        bool lgrp = true;
        MT lm0[4][DW_MAXK], lm1[4][DW_MAXK];
        {
            int64_t b = b0;
            while (b + 4 <= b1)
                b += 4;
            while (b + 2 <= b1)
                b += 2;
            for (int64_t i = 0; i < nb && lgrp; i++) {
                if (i >= b0 && i < b)
                    continue;
                if (nl == 4) {
                    lgrp = false;
                    break;
                }
                lb[nl] = i;
                lc[nl] = i * VW * s1 - pl;
                for (int64_t kw = 0; kw < KW; kw++) {
                    lm0[nl][kw] = MK(lc[nl] + kw, W);
                    if (s1 == 2)
                        lm1[nl][kw] = MK(lc[nl] + kw + VW, W);
                }
                nl++;
            }
            for (int64_t i = nl; i < 4 && nl > 0; i++) {
                lb[i] = lb[nl - 1];
                lc[i] = lc[nl - 1];
                for (int64_t kw = 0; kw < KW; kw++) {
                    lm0[i][kw] = lm0[nl - 1][kw];
                    lm1[i][kw] = lm1[nl - 1][kw];
                }
            }
        }
#define DW_GLD(i, row, kw)                                                                         \
    (s1 == 1 ? LDM(row, lc[i] + (kw), lm0[i][kw])                                                  \
             : EVEN(LDM(row, lc[i] + (kw), lm0[i][kw]), LDM(row, lc[i] + (kw) + VW, lm1[i][kw])))
        for (int64_t oh = 0; oh < OH; oh++) {
            const int64_t r = oh * s0 - pt;
            const int64_t lo = r < 0 ? -r : 0, hi = H - r < KH ? H - r : KH;
            const bool full = oh >= f0 && oh < f1;
            float *yr = y + oh * OW;
            if (full && lgrp && nl > 0) {
                V g0 = ZERO(), g1 = ZERO(), g2 = ZERO(), g3 = ZERO();
                for (int64_t kh = 0; kh < KH; kh++) {
                    const float *row = x + (r + kh) * W;
                    for (int64_t kw = 0; kw < KW; kw++) {
                        const V kk = SET1(k[kh * KW + kw]);
                        g0 = FMA(DW_GLD(0, row, kw), kk, g0);
                        g1 = FMA(DW_GLD(1, row, kw), kk, g1);
                        g2 = FMA(DW_GLD(2, row, kw), kk, g2);
                        g3 = FMA(DW_GLD(3, row, kw), kk, g3);
                    }
                }
                const V gv[4] = {g0, g1, g2, g3};
                for (int64_t i = 0; i < nl; i++) {
                    const int64_t o = lb[i] * VW;
                    STN(yr + o, ACTV(ADD(gv[i], bv), ak, aa, ab), OW - o < VW ? OW - o : VW);
                }
            }
            for (int64_t b = 0; b < nb; b++) {
                const int64_t o = b * VW, c0 = o * s1 - pl;
                if (full && b >= b0 && b + 4 <= b1) {
                    const int64_t d = VW * s1;
                    V a0 = ZERO(), a1 = ZERO(), a2 = ZERO(), a3 = ZERO();
                    for (int64_t kh = 0; kh < KH; kh++) {
                        const float *row = x + (r + kh) * W;
                        for (int64_t kw = 0; kw < KW; kw++) {
                            const V kk = SET1(k[kh * KW + kw]);
                            a0 = FMA(DW_FULL(row, c0, kw), kk, a0);
                            a1 = FMA(DW_FULL(row, c0 + d, kw), kk, a1);
                            a2 = FMA(DW_FULL(row, c0 + 2 * d, kw), kk, a2);
                            a3 = FMA(DW_FULL(row, c0 + 3 * d, kw), kk, a3);
                        }
                    }
                    STN(yr + o, ACTV(ADD(a0, bv), ak, aa, ab), VW);
                    STN(yr + o + VW, ACTV(ADD(a1, bv), ak, aa, ab), VW);
                    STN(yr + o + 2 * VW, ACTV(ADD(a2, bv), ak, aa, ab), VW);
                    STN(yr + o + 3 * VW, ACTV(ADD(a3, bv), ak, aa, ab), VW);
                    b += 3;
                    continue;
                }
                if (full && b >= b0 && b + 2 <= b1) {
                    const int64_t d = VW * s1;
                    V a0 = ZERO(), a1 = ZERO();
                    for (int64_t kh = 0; kh < KH; kh++) {
                        const float *row = x + (r + kh) * W;
                        for (int64_t kw = 0; kw < KW; kw++) {
                            const V kk = SET1(k[kh * KW + kw]);
                            a0 = FMA(DW_FULL(row, c0, kw), kk, a0);
                            a1 = FMA(DW_FULL(row, c0 + d, kw), kk, a1);
                        }
                    }
                    STN(yr + o, ACTV(ADD(a0, bv), ak, aa, ab), VW);
                    STN(yr + o + VW, ACTV(ADD(a1, bv), ak, aa, ab), VW);
                    b += 1;
                    continue;
                }
                if (full && lgrp)
                    continue; /* done in the group above */
                DW_MASKS(c0)
                V a = ZERO();
                for (int64_t kh = lo; kh < hi; kh++) {
                    const float *row = x + (r + kh) * W;
                    for (int64_t kw = 0; kw < KW; kw++)
                        a = FMA(DW_LOAD(row, c0, kw), SET1(k[kh * KW + kw]), a);
                }
                STN(yr + o, ACTV(ADD(a, bv), ak, aa, ab), OW - o < VW ? OW - o : VW);
            }
        }
#undef DW_GLD
        return;
    }
    for (int64_t o = 0; o < OW; o += VW) {
        const int64_t c0 = o * s1 - pl, n = OW - o < VW ? OW - o : VW;
        DW_MASKS(c0)
        int64_t oh = 0;
        for (; oh < OH; oh++) {
            if (oh >= f0 && oh < f1 && f1 - f0 >= 4) {
                /* four full rows; the last one to three full rows as the last four (the rows
                 * computed twice are stored twice, with the same bits) */
                if (oh + 4 > f1)
                    oh = f1 - 4;
                const float *xr = x + (oh * s0 - pt) * W;
                const int64_t rs = s0 * W;
                V a0 = ZERO(), a1 = ZERO(), a2 = ZERO(), a3 = ZERO();
                if (s0 == s1 && (VW == 16 || KH <= 3)) {
                    /* the 3 * s0 + KH input rows of the four output rows once each: every
                     * vector loaded (and deinterleaved) goes to each output row that uses it.
                     * Output row i takes input row j as its kernel row j - i * s0, so each
                     * sum still adds its taps in (kh, kw) order. Not with 8 lanes and taller
                     * kernels (the 7x7 planes' 5x5): 16 registers hold too few of the taps,
                     * measured 5 % slower there. */
#define DW_ROW4(v, kw)                                                                             \
    do {                                                                                           \
        if (j < KH)                                                                                \
            a0 = FMA(v, SET1(k[j * KW + (kw)]), a0);                                               \
        if (j >= s1 && j - s1 < KH)                                                                \
            a1 = FMA(v, SET1(k[(j - s1) * KW + (kw)]), a1);                                        \
        if (j >= 2 * s1 && j - 2 * s1 < KH)                                                        \
            a2 = FMA(v, SET1(k[(j - 2 * s1) * KW + (kw)]), a2);                                    \
        if (j >= 3 * s1)                                                                           \
            a3 = FMA(v, SET1(k[(j - 3 * s1) * KW + (kw)]), a3);                                    \
    } while (0)
#pragma GCC unroll 16
                    for (int64_t j = 0; j < 3 * s1 + KH; j++) {
                        const float *rj = xr + j * W;
                        if (s1 == 2) {
#pragma GCC unroll 8
                            for (int64_t kw = 0; kw < KW; kw += 2) {
                                const V p = LDM(rj, c0 + kw, m0[kw]);
                                const V q = LDM(rj, c0 + kw + VW, m1[kw]);
                                const V e = EVEN(p, q);
                                DW_ROW4(e, kw);
                                if (kw + 1 < KW) {
                                    const V od = ODD(p, q);
                                    DW_ROW4(od, kw + 1);
                                }
                            }
                        } else {
#pragma GCC unroll 8
                            for (int64_t kw = 0; kw < KW; kw++) {
                                const V v = LDM(rj, c0 + kw, m0[kw]);
                                DW_ROW4(v, kw);
                            }
                        }
                    }
#undef DW_ROW4
                } else if (s1 == 2) {
                    /* taps kw and kw + 1 from the same two loads: the even lanes, then the odd
                     * (the masks are by column, so the odd lanes are masked right too) */
                    for (int64_t kh = 0; kh < KH; kh++) {
                        const float *r0 = xr + kh * W;
                        for (int64_t kw = 0; kw < KW; kw += 2) {
                            const V p0 = LDM(r0, c0 + kw, m0[kw]);
                            const V q0 = LDM(r0, c0 + kw + VW, m1[kw]);
                            const V p1 = LDM(r0 + rs, c0 + kw, m0[kw]);
                            const V q1 = LDM(r0 + rs, c0 + kw + VW, m1[kw]);
                            const V p2 = LDM(r0 + 2 * rs, c0 + kw, m0[kw]);
                            const V q2 = LDM(r0 + 2 * rs, c0 + kw + VW, m1[kw]);
                            const V p3 = LDM(r0 + 3 * rs, c0 + kw, m0[kw]);
                            const V q3 = LDM(r0 + 3 * rs, c0 + kw + VW, m1[kw]);
                            const V kk = SET1(k[kh * KW + kw]);
                            a0 = FMA(EVEN(p0, q0), kk, a0);
                            a1 = FMA(EVEN(p1, q1), kk, a1);
                            a2 = FMA(EVEN(p2, q2), kk, a2);
                            a3 = FMA(EVEN(p3, q3), kk, a3);
                            if (kw + 1 < KW) {
                                const V k1 = SET1(k[kh * KW + kw + 1]);
                                a0 = FMA(ODD(p0, q0), k1, a0);
                                a1 = FMA(ODD(p1, q1), k1, a1);
                                a2 = FMA(ODD(p2, q2), k1, a2);
                                a3 = FMA(ODD(p3, q3), k1, a3);
                            }
                        }
                    }
                } else {
                    for (int64_t kh = 0; kh < KH; kh++) {
                        const float *r0 = xr + kh * W;
                        for (int64_t kw = 0; kw < KW; kw++) {
                            const V kk = SET1(k[kh * KW + kw]);
                            a0 = FMA(DW_LOAD(r0, c0, kw), kk, a0);
                            a1 = FMA(DW_LOAD(r0 + rs, c0, kw), kk, a1);
                            a2 = FMA(DW_LOAD(r0 + 2 * rs, c0, kw), kk, a2);
                            a3 = FMA(DW_LOAD(r0 + 3 * rs, c0, kw), kk, a3);
                        }
                    }
                }
                float *yr = y + oh * OW + o;
                STN(yr, ACTV(ADD(a0, bv), ak, aa, ab), n);
                STN(yr + OW, ACTV(ADD(a1, bv), ak, aa, ab), n);
                STN(yr + 2 * OW, ACTV(ADD(a2, bv), ak, aa, ab), n);
                STN(yr + 3 * OW, ACTV(ADD(a3, bv), ak, aa, ab), n);
                oh += 3;
                continue;
            }
            const int64_t r = oh * s0 - pt;
            const int64_t lo = r < 0 ? -r : 0, hi = H - r < KH ? H - r : KH;
            V a = ZERO();
            for (int64_t kh = lo; kh < hi; kh++) {
                const float *row = x + (r + kh) * W;
                for (int64_t kw = 0; kw < KW; kw++)
                    a = FMA(DW_LOAD(row, c0, kw), SET1(k[kh * KW + kw]), a);
            }
            STN(y + oh * OW + o, ACTV(ADD(a, bv), ak, aa, ab), n);
        }
    }
#undef DW_MASKS
#undef DW_LOAD
#undef DW_FULL
}

DW_TARGET static void
DW_NAME(dw_plane)(const float *x, const float *k, const struct dw_geo *g, float bias,
                  const struct cpu_act_spec *act, float *y)
{
    if (g->KH == 3 && g->KW == 3)
        g->s1 == 1 ? DW_NAME(dw_plane_k)(x, k, g, bias, y, act, 3, 3, 1)
                   : DW_NAME(dw_plane_k)(x, k, g, bias, y, act, 3, 3, 2);
    else if (g->KH == 5 && g->KW == 5)
        g->s1 == 1 ? DW_NAME(dw_plane_k)(x, k, g, bias, y, act, 5, 5, 1)
                   : DW_NAME(dw_plane_k)(x, k, g, bias, y, act, 5, 5, 2);
    else
        g->s1 == 1 ? DW_NAME(dw_plane_k)(x, k, g, bias, y, act, g->KH, g->KW, 1)
                   : DW_NAME(dw_plane_k)(x, k, g, bias, y, act, g->KH, g->KW, 2);
}

/* One output row (all M channels) of a dense conv with few input taps per output
 * (T = C * KH * KW <= SC_MAXT, the 3-channel stem): for each block of VW columns the T input
 * vectors are gathered once, then every output channel is their weighted sum, eight channels
 * at a time. x [C][H][W], w [M][T], y [M][OH][OW]. */
DW_TARGET static inline __attribute__((always_inline)) void
DW_NAME(sc_row_s)(const float *x, const float *w, const float *bias, const struct dw_geo *g,
                  int64_t C, int64_t M, int64_t oh, float *y, const int s1)
{
    const int64_t H = g->H, W = g->W, OW = g->OW, KH = g->KH, KW = g->KW;
    const int64_t T = C * KH * KW, plane = g->OH * OW, r0 = oh * g->s0 - g->pt;
    V in[SC_MAXT];
    MT m0[DW_MAXK], m1[DW_MAXK];
    for (int64_t o = 0; o < OW; o += VW) {
        const int64_t c0 = o * s1 - g->pl, n = OW - o < VW ? OW - o : VW;
        for (int64_t kw = 0; kw < KW; kw++) {
            m0[kw] = MK(c0 + kw, W);
            if (s1 == 2)
                m1[kw] = MK(c0 + kw + VW, W);
        }
        for (int64_t c = 0, t = 0; c < C; c++)
            for (int64_t kh = 0; kh < KH; kh++) {
                const int64_t h = r0 + kh;
                const float *row = x + (c * H + (h >= 0 && h < H ? h : 0)) * W;
                for (int64_t kw = 0; kw < KW; kw++, t++)
                    in[t] = h < 0 || h >= H ? ZERO()
                            : s1 == 1
                                ? LDM(row, c0 + kw, m0[kw])
                                : EVEN(LDM(row, c0 + kw, m0[kw]), LDM(row, c0 + kw + VW, m1[kw]));
            }
        float *yo = y + oh * OW + o;
        int64_t m = 0;
        for (; m + 8 <= M; m += 8) {
            const float *wm = w + m * T;
            V a0 = ZERO(), a1 = ZERO(), a2 = ZERO(), a3 = ZERO();
            V a4 = ZERO(), a5 = ZERO(), a6 = ZERO(), a7 = ZERO();
            for (int64_t t = 0; t < T; t++) {
                const V v = in[t];
                a0 = FMA(v, SET1(wm[t]), a0);
                a1 = FMA(v, SET1(wm[T + t]), a1);
                a2 = FMA(v, SET1(wm[2 * T + t]), a2);
                a3 = FMA(v, SET1(wm[3 * T + t]), a3);
                a4 = FMA(v, SET1(wm[4 * T + t]), a4);
                a5 = FMA(v, SET1(wm[5 * T + t]), a5);
                a6 = FMA(v, SET1(wm[6 * T + t]), a6);
                a7 = FMA(v, SET1(wm[7 * T + t]), a7);
            }
            V acc[8] = {a0, a1, a2, a3, a4, a5, a6, a7};
            for (int i = 0; i < 8; i++) {
                V b = bias ? ADD(acc[i], SET1(bias[m + i])) : acc[i];
                STN(yo + (m + i) * plane, b, n);
            }
        }
        for (; m < M; m++) {
            const float *wm = w + m * T;
            V a = ZERO();
            for (int64_t t = 0; t < T; t++)
                a = FMA(in[t], SET1(wm[t]), a);
            if (bias)
                a = ADD(a, SET1(bias[m]));
            STN(yo + m * plane, a, n);
        }
    }
}

DW_TARGET static void
DW_NAME(sc_row)(const float *x, const float *w, const float *bias, const struct dw_geo *g,
                int64_t C, int64_t M, int64_t oh, float *y)
{
    if (g->s1 == 1)
        DW_NAME(sc_row_s)(x, w, bias, g, C, M, oh, y, 1);
    else
        DW_NAME(sc_row_s)(x, w, bias, g, C, M, oh, y, 2);
}

#undef DW_NAME
#undef DW_CAT
#undef DW_CAT2
