/* SPDX-License-Identifier: MIT */
/*
 * conv-weights.c: the constants an rk.Conv reads: the source weights as dense fp32
 * kernels (MatMul / Gemm B, transposed, grouped, dilated, batched and zero-point forms),
 * packed per tile into the NPU's weight layout (npu-layout.h), and the per-channel fp32
 * bias array of the BS stage.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__)
#include <xmmintrin.h>
#endif

#include "conv-priv.h"
#include "npu-dpu-ops.h"

static float
elem_f(const struct npu_value *v, int64_t i)
{
    return (float)npu_value_get_f64(v, i);
}

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
float *
conv_dense_weights(const struct conv_src *s)
{
    const struct rk_conv_geom *g = &s->g;
    uint32_t K = g->k, C = g->depthwise ? 1 : g->c, taps = g->kh * g->kw;
    size_t n = (size_t)K * C * taps;
    float *w = calloc(n ? n : 1, sizeof(float));
    if (!w)
        return NULL;
    /* the fp32 source, possibly unaligned (borrowed from the model file): npu_f32_at loads */
    const float *wf = s->w && s->w->t.dtype == NPU_DTYPE_FP32 ? npu_value_data(s->w) : NULL;
    if (s->kind != SRC_CONV && wf) {
        /* as below, reading the fp32 source directly (the same arithmetic per element); the
         * transposed form in 32 x 32 blocks */
        for (uint32_t o0 = 0; o0 < K; o0 += 32) {
            uint32_t o1 = NPU_MIN(K, o0 + 32);
            float zp[32];
            for (uint32_t o = o0; o < o1; o++)
                zp[o - o0] =
                    s->w_zp ? elem_f(s->w_zp, npu_value_numel(s->w_zp) == 1 ? 0 : o) : 0.0f;
            for (uint32_t c0 = 0; c0 < C; c0 += 32) {
                uint32_t c1 = NPU_MIN(C, c0 + 32);
                for (uint32_t o = o0; o < o1; o++) {
                    float *dst = w + (size_t)o * C;
                    const float z = zp[o - o0];
                    if (s->w_trans)
                        for (uint32_t c = c0; c < c1; c++)
                            dst[c] = s->alpha * npu_f32_at(wf, (int64_t)c * K + o) - z;
                    else
                        for (uint32_t c = c0; c < c1; c++)
                            dst[c] = s->alpha * npu_f32_at(wf, (int64_t)o * C + c) - z;
                }
            }
        }
        return w;
    }
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
        uint32_t skh = s->skh ? s->skh : g->kh, skw = s->skw ? s->skw : g->kw;
        uint32_t k_src = s->k_src ? s->k_src : g->k, c_src = s->c_src ? s->c_src : g->c;
        if (wf && (s->dly ? s->dly : 1) == 1 && (s->dlx ? s->dlx : 1) == 1 && skh == g->kh &&
            skw == g->kw && cg <= c_src) {
            /* undilated: kernel o's channels 0..cg are one run of the source (conv_w's
             * element, the same float through double) */
            for (uint32_t o = 0; o < K; o++) {
                float *dst = w + (size_t)o * cg * taps;
                const float *src = wf + (size_t)(o % k_src) * c_src * taps;
                for (size_t i = 0; i < (size_t)cg * taps; i++)
                    dst[i] = (float)(double)npu_f32_at(src, (int64_t)i);
            }
            return w;
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

/*
 * The fp16 packing npu_weight_pack does ([group][cblock][tap][kernel][channel], facts 2.10,
 * npu_weight_offset), straight from the fp32 weights: kernel k's weight of channel c, tap t
 * is src[k * kstride + c * taps + t]; each block's channel run is converted by one
 * npu_fp32_to_fp16_n call (the same rounding as npu_fp32_to_fp16). The padding channels
 * keep the zeros the caller cleared (npu_weight_pack's pad_bits 0). Same bytes as
 * converting to OIHW fp16 first and packing element by element.
 */
enum npu_status
npu_be_pack_fp16(const struct npu_weight_layout *l, uint8_t *dst, const float *src, size_t kstride,
                 uint32_t taps)
{
    float *row = taps > 1 ? malloc((size_t)l->channels * sizeof(float)) : NULL;
    if (taps > 1 && !row)
        return NPU_ERR_NOMEM;
    uint16_t *d = (uint16_t *)(void *)dst;
    const uint32_t kg = l->kernel_group, cb = l->channel_block;
    for (uint32_t k = 0; k < l->kernels; k++) {
        uint32_t grp = k / kg, kl = k - grp * kg, kg_n = NPU_MIN(kg, l->kernels - grp * kg);
        const float *sk = src + (size_t)k * kstride;
        for (uint32_t tap = 0; tap < taps; tap++) {
            const float *r = sk;
            if (taps > 1) {
                for (uint32_t c = 0; c < l->channels; c++)
                    row[c] = sk[(size_t)c * taps + tap];
                r = row;
            }
            for (uint32_t b = 0; b * cb < l->channels; b++) {
                uint32_t cb_n = NPU_MIN(cb, l->c_pad - b * cb);
                uint32_t n = NPU_MIN(cb, l->channels - b * cb);
                size_t e = (size_t)grp * kg * taps * l->c_pad + (size_t)b * cb * taps * kg_n +
                           ((size_t)tap * kg_n + kl) * cb_n;
                npu_fp32_to_fp16_n(d + e, r + (size_t)b * cb, n);
            }
        }
    }
    free(row);
    return NPU_OK;
}

/* Packs the weight set of every tile (deduplicated), 64-byte aligned. */
enum npu_status
conv_pack_weights(const struct conv_src *s, struct plan *p, uint8_t **out, uint64_t *out_bytes)
{
    const struct rk_conv_geom *g = &s->g;
    const uint32_t taps = g->kh * g->kw;
    const uint32_t cg = g->depthwise ? 1 : (s->groups > 1 ? g->c / s->groups : g->c);
    enum npu_status st = NPU_OK;
    float *w = conv_dense_weights(s);
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
        if (!g->depthwise && g->in_dt == NPU_DTYPE_FP16) { /* int8, int16: below */
            uint32_t c_local = s->groups > 1 ? t->c0 % cg : t->c0;
            st = npu_be_pack_fp16(&l, blob + off, w + ((size_t)t->k0 * cg + c_local) * taps,
                                  (size_t)cg * taps, taps);
            if (st)
                goto out;
            t->woff = (uint32_t)off;
            size = nsize;
            continue;
        }
        /* OIHW fp16 of the set: kernels t->k0.., channels t->c0.. (group-local) */
        uint32_t nk = g->depthwise ? 1 : t->nk;
        size_t sub = (size_t)(g->depthwise ? t->nc : nk) * (g->depthwise ? 1 : t->nc) * taps;
        const bool i8 = g->in_dt == NPU_DTYPE_INT8, i16 = g->in_dt == NPU_DTYPE_INT16;
        uint16_t *h = malloc(sub * 2);
        if (!h) {
            st = NPU_ERR_NOMEM;
            goto out;
        }
#define CV(f)                                                                                      \
    (i8    ? (uint16_t)(uint8_t)(int8_t)lrintf(f)                                                  \
     : i16 ? (uint16_t)(int16_t)lrintf(f)                                                          \
           : npu_fp32_to_fp16(f))
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
    uint64_t used = size;
    size = (size + 63) / 64 * 64;
    if (size) {
        uint8_t *nb = realloc(blob, size);
        if (!nb) {
            st = NPU_ERR_NOMEM;
            goto out;
        }
        blob = nb;
        /* the padding goes into the artifact: unzeroed, every compile wrote other heap bytes */
        memset(blob + used, 0, size - used);
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

/*
 * The fp16 sets of a MatMul / Gemm B read straight from its fp32 source: kernel (column) o,
 * channel (row) c is alpha * B[c][o] - zp[o] (B[o][c] when not transposed), the element
 * conv_dense_weights gives, converted into the tile's packed layout (npu_be_pack_fp16's
 * order and rounding) through a 16-kernel x channel-block scratch tile instead of a whole
 * transposed fp32 copy of B.
 */
/* x minus row c's mean (when m), rounded to float: dpu-center.c's centring */
static inline float
centre1(float x, const double *m, uint32_t c)
{
    return m ? (float)((double)x - m[c]) : x;
}

#if defined(__SSE2__)
/* four floats of one row minus its mean m in double, rounded to float: the centring's SSE
 * form (dpu-center.c centre_data) */
static inline __m128
centre4(__m128 x, double m)
{
    const __m128d m2 = _mm_set1_pd(m);
    __m128 lo = _mm_cvtpd_ps(_mm_sub_pd(_mm_cvtps_pd(x), m2));
    __m128 hi = _mm_cvtpd_ps(_mm_sub_pd(_mm_cvtps_pd(_mm_movehl_ps(x, x)), m2));
    return _mm_movelh_ps(lo, hi);
}
#endif

/* tmp[kl * cb + c] = alpha * src[c * ld + kl] - z[kl] for c < n, kl < nk: a transposing
 * gather, 4 x 4 blocks at a time with SSE (the same single-precision multiply and subtract
 * per element as the scalar tail). src may be unaligned (a constant borrowed from the model
 * file, npu-ir.h): unaligned vector loads, memcpy loads. */
/* With m (B's rows centred, dpu-center.c), row c's element is first (float)(x - m[c]) in
 * double, the centring's own arithmetic: the same floats as packing a centred copy. */
static void
gather_t(float *tmp, uint32_t cb, const float *src, size_t ld, uint32_t n, uint32_t nk, float alpha,
         const float *z, const double *m)
{
    uint32_t c = 0;
#if defined(__SSE2__)
    /* the callers walk B's rows left to right 16 columns at a time, 32 rows side by side:
     * more streams than the hardware prefetcher follows, so the lines four calls ahead are
     * asked for here (a prefetch never faults, past the end of B included) */
    for (uint32_t q = 0; q < n; q++)
        _mm_prefetch((const char *)(src + (size_t)q * ld + 64), _MM_HINT_T0);
    const __m128 a4 = _mm_set1_ps(alpha);
    for (; c + 4 <= n; c += 4) {
        const float *r = src + (size_t)c * ld;
        uint32_t kl = 0;
        for (; kl + 4 <= nk; kl += 4) {
            __m128 t0 = _mm_loadu_ps(r + kl), t1 = _mm_loadu_ps(r + ld + kl),
                   t2 = _mm_loadu_ps(r + 2 * ld + kl), t3 = _mm_loadu_ps(r + 3 * ld + kl);
            if (m) {
                t0 = centre4(t0, m[c]);
                t1 = centre4(t1, m[c + 1]);
                t2 = centre4(t2, m[c + 2]);
                t3 = centre4(t3, m[c + 3]);
            }
            _MM_TRANSPOSE4_PS(t0, t1, t2, t3);
            _mm_storeu_ps(tmp + (size_t)kl * cb + c,
                          _mm_sub_ps(_mm_mul_ps(a4, t0), _mm_set1_ps(z[kl])));
            _mm_storeu_ps(tmp + (size_t)(kl + 1) * cb + c,
                          _mm_sub_ps(_mm_mul_ps(a4, t1), _mm_set1_ps(z[kl + 1])));
            _mm_storeu_ps(tmp + (size_t)(kl + 2) * cb + c,
                          _mm_sub_ps(_mm_mul_ps(a4, t2), _mm_set1_ps(z[kl + 2])));
            _mm_storeu_ps(tmp + (size_t)(kl + 3) * cb + c,
                          _mm_sub_ps(_mm_mul_ps(a4, t3), _mm_set1_ps(z[kl + 3])));
        }
        for (; kl < nk; kl++)
            for (uint32_t q = 0; q < 4; q++)
                tmp[(size_t)kl * cb + c + q] =
                    alpha * centre1(npu_f32_at(r, q * ld + kl), m, c + q) - z[kl];
    }
#endif
    for (; c < n; c++) {
        const float *row = src + (size_t)c * ld;
        for (uint32_t kl = 0; kl < nk; kl++)
            tmp[(size_t)kl * cb + c] = alpha * centre1(npu_f32_at(row, kl), m, c) - z[kl];
    }
}

static enum npu_status
pack_fp16_matrix(const struct conv_src *s, const struct npu_weight_layout *l, uint16_t *d,
                 const float *wf, uint32_t k0, uint32_t c0, const double *means)
{
    const uint32_t K = s->g.k, C = s->g.c, kg = l->kernel_group, cb = l->channel_block;
    float *tmp = malloc((size_t)kg * cb * sizeof(float));
    float *zp = malloc((size_t)l->kernels * sizeof(float));
    if (!tmp || !zp) {
        free(tmp);
        free(zp);
        return NPU_ERR_NOMEM;
    }
    for (uint32_t k = 0; k < l->kernels; k++)
        zp[k] = s->w_zp ? elem_f(s->w_zp, npu_value_numel(s->w_zp) == 1 ? 0 : k0 + k) : 0.0f;
    /* channel blocks outermost: B [K][N] is read as cb whole rows at a time */
    for (uint32_t b = 0; b * cb < l->channels; b++) {
        const uint32_t cb_n = NPU_MIN(cb, l->c_pad - b * cb);
        const uint32_t n = NPU_MIN(cb, l->channels - b * cb), ca = c0 + b * cb;
        for (uint32_t grp = 0; grp * kg < l->kernels; grp++) {
            const uint32_t kg_n = NPU_MIN(kg, l->kernels - grp * kg), ka = k0 + grp * kg;
            const float *z = zp + (size_t)grp * kg;
            if (s->w_trans)
                gather_t(tmp, cb, wf + (size_t)ca * K + ka, K, n, kg_n, s->alpha, z,
                         means ? means + ca : NULL);
            else
                for (uint32_t kl = 0; kl < kg_n; kl++) {
                    const float *row = wf + (size_t)(ka + kl) * C + ca;
                    for (uint32_t c = 0; c < n; c++)
                        tmp[(size_t)kl * cb + c] = s->alpha * npu_f32_at(row, c) - z[kl];
                }
            for (uint32_t kl = 0; kl < kg_n; kl++) {
                size_t e = (size_t)grp * kg * l->c_pad + (size_t)b * cb * kg_n + (size_t)kl * cb_n;
                npu_fp32_to_fp16_n(d + e, tmp + (size_t)kl * cb, n);
            }
        }
    }
    free(tmp);
    free(zp);
    return NPU_OK;
}

bool
conv_pack_direct(const struct conv_src *s, const struct plan *p)
{
    const struct rk_conv_geom *g = &s->g;
    return s->kind != SRC_CONV && s->w && s->w->t.dtype == NPU_DTYPE_FP32 && npu_value_data(s->w) &&
           !g->depthwise && g->in_dt == NPU_DTYPE_FP16 && s->groups <= 1 && g->kh * g->kw == 1 &&
           p->n;
}

enum npu_status
conv_pack_weights_const(struct npu_lower_ctx *cx, const struct conv_src *s, struct plan *p,
                        const char *name, struct npu_value **out)
{
    const struct rk_conv_geom *g = &s->g;
    const float *wf = s->w && s->w->t.dtype == NPU_DTYPE_FP32 ? npu_value_data(s->w) : NULL;
    *out = NULL;
    if (s->centre_rows && (!conv_pack_direct(s, p) || !s->w_trans || s->w->t.ndim != 2)) {
        npu_err("conv", "'%s': B's rows to centre, but not packed from the fp32 source", name);
        return NPU_ERR_INTERNAL;
    }
    if (!conv_pack_direct(s, p)) {
        uint8_t *blob = NULL;
        uint64_t blob_bytes = 0;
        enum npu_status st = conv_pack_weights(s, p, &blob, &blob_bytes);
        if (st)
            return st;
        int64_t wd = (int64_t)blob_bytes;
        *out = npu_lower_const(cx, name, NPU_DTYPE_UINT8, 1, &wd, blob);
        free(blob);
        return NPU_OK; /* a NULL *out: the caller's out of memory */
    }
    /* the offsets conv_pack_weights gives (same sharing, same 64-byte alignment), then the
     * sets packed into the constant's zeroed arena bytes */
    bool *fresh = calloc(p->n, sizeof(bool));
    /* B's rows' means, for the rows centred while packing (B [K][N]: row c is channel c) */
    double *means =
        s->centre_rows ? malloc((size_t)NPU_MAX(s->w->t.dims[0], 1) * sizeof(double)) : NULL;
    if (!fresh || (s->centre_rows && !means)) {
        free(fresh);
        free(means);
        return NPU_ERR_NOMEM;
    }
    if (means)
        npu_dpu_row_means(wf, s->w->t.dims[0], s->w->t.dims[1], means);
    enum npu_status st = NPU_OK;
    uint64_t size = 0;
    const bool share = s->images > 1 && !s->block_diag;
    const uint32_t km = share ? s->k_src : UINT32_MAX, cm = share ? g->c : UINT32_MAX;
    for (uint32_t i = 0; i < p->n && !st; i++) {
        struct rk_tile *t = &p->t[i];
        bool found = false;
        for (uint32_t j = 0; j < i && !found; j++) {
            const struct rk_tile *q = &p->t[j];
            if (q->k0 % km == t->k0 % km && q->nk == t->nk && q->c0 % cm == t->c0 % cm &&
                q->nc == t->nc) {
                t->woff = q->woff;
                found = true;
            }
        }
        if (found)
            continue;
        struct npu_weight_layout l;
        if ((st = npu_weight_layout_init(&l, rk_esize(g->in_dt), t->nk, t->nc, 1, 1, false)))
            break;
        uint64_t off = (size + 63) / 64 * 64;
        size = off + l.total_bytes;
        if (size > 0xffffffffull)
            st = NPU_ERR_UNSUPPORTED;
        t->woff = (uint32_t)off;
        fresh[i] = true;
    }
    size = (size + 63) / 64 * 64;
    int64_t wd = (int64_t)size;
    struct npu_value *wv = st ? NULL : npu_lower_const(cx, name, NPU_DTYPE_UINT8, 1, &wd, NULL);
    for (uint32_t i = 0; i < p->n && wv && !st; i++) {
        const struct rk_tile *t = &p->t[i];
        struct npu_weight_layout l;
        if (!fresh[i] ||
            (st = npu_weight_layout_init(&l, rk_esize(g->in_dt), t->nk, t->nc, 1, 1, false)))
            continue;
        st = pack_fp16_matrix(s, &l, (uint16_t *)(void *)((uint8_t *)wv->t.data + t->woff), wf,
                              t->k0, t->c0, means);
    }
    free(fresh);
    free(means);
    if (!st)
        *out = wv;
    return st;
}

/* Per-channel BS operand: bias (times beta) minus the clip's lower bound,
 * padded to 16 channels (BRDMA reads the padded channel count, facts §2.6). */
float *
conv_bias_array(const struct conv_src *s, uint32_t *len)
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
