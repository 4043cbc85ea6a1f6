/* SPDX-License-Identifier: MIT */
/*
 * npu-cpu-pool.c: window geometry shared with Conv (auto_pad NOTSET /
 * SAME_UPPER / SAME_LOWER / VALID, dilations, ceil_mode) and the pools:
 * MaxPool (with the optional Indices output, row- or column-major),
 * AveragePool (count_include_pad), GlobalAveragePool and GlobalMaxPool, over
 * any number of spatial dims, with a direct 2-D fp32 path.
 *
 * ceil_mode follows ONNX (opset 19+) and PyTorch: out = ceil((in + pads -
 * window) / stride) + 1, minus one if the last window would start beyond the
 * input and its start padding. AveragePool with count_include_pad divides by
 * the window clipped to the padded extent [-pad_begin, in + pad_end).
 */
#include "npu-cpu-internal.h"

enum npu_status
cpu_win_setup(struct npu_cpu_ctx *ctx, const struct npu_attrs *attrs, int nsp, const int64_t *in_sp,
              const int64_t *kernel, bool ceil_mode, struct cpu_win *w)
{
    memset(w, 0, sizeof(*w));
    if (nsp < 1 || nsp > CPU_MAX_SP)
        return KINVAL("%d spatial dims (1 to %d supported)", nsp, CPU_MAX_SP);
    w->nsp = nsp;
    size_t n;
    const int64_t *st = npu_attrs_ints(attrs, "strides", &n);
    if (st && (int)n != nsp)
        return KINVAL("strides has %zu entries for %d spatial dims", n, nsp);
    const int64_t *dl = npu_attrs_ints(attrs, "dilations", &n);
    if (dl && (int)n != nsp)
        return KINVAL("dilations has %zu entries for %d spatial dims", n, nsp);
    const int64_t *pads = npu_attrs_ints(attrs, "pads", &n);
    if (pads && (int)n != 2 * nsp)
        return KINVAL("pads has %zu entries for %d spatial dims", n, nsp);
    const char *ap = npu_attrs_string(attrs, "auto_pad", "NOTSET");
    bool same_u = !strcmp(ap, "SAME_UPPER"), same_l = !strcmp(ap, "SAME_LOWER");
    bool valid = !strcmp(ap, "VALID");
    if (!same_u && !same_l && !valid && strcmp(ap, "NOTSET") && *ap)
        return KINVAL("auto_pad \"%s\" is not valid", ap);
    for (int i = 0; i < nsp; i++) {
        w->in[i] = in_sp[i];
        w->k[i] = kernel[i];
        w->s[i] = st ? st[i] : 1;
        w->d[i] = dl ? dl[i] : 1;
        if (w->k[i] < 1 || w->s[i] < 1 || w->d[i] < 1)
            return KINVAL("kernel, strides and dilations must be >= 1");
        /* attribute values are untrusted: keep every product below 2^62 */
        if (w->k[i] > CPU_MAX_ATTR || w->d[i] > CPU_MAX_ATTR || w->s[i] > CPU_MAX_ATTR)
            return KINVAL("kernel, stride or dilation too large");
        int64_t ext = (w->k[i] - 1) * w->d[i] + 1;
        if (same_u || same_l) {
            w->out[i] = NPU_DIV_ROUND_UP(w->in[i], w->s[i]);
            int64_t total = NPU_MAX((int64_t)0, (w->out[i] - 1) * w->s[i] + ext - w->in[i]);
            w->pb[i] = same_u ? total / 2 : total - total / 2;
            w->pe[i] = total - w->pb[i];
            continue;
        }
        if (!valid && pads) {
            w->pb[i] = pads[i];
            w->pe[i] = pads[nsp + i];
            if (w->pb[i] < 0 || w->pe[i] < 0 || w->pb[i] > CPU_MAX_ATTR || w->pe[i] > CPU_MAX_ATTR)
                return KINVAL("pads out of range");
        }
        int64_t span = w->in[i] + w->pb[i] + w->pe[i] - ext;
        if (span < 0)
            return KINVAL("window (%lld) larger than the padded input (%lld) in dim %d",
                          (long long)ext, (long long)(w->in[i] + w->pb[i] + w->pe[i]), i);
        if (ceil_mode) {
            w->out[i] = NPU_DIV_ROUND_UP(span, w->s[i]) + 1;
            if ((w->out[i] - 1) * w->s[i] >= w->in[i] + w->pb[i])
                w->out[i]--;
        } else {
            w->out[i] = span / w->s[i] + 1;
        }
    }
    return NPU_OK;
}

/* kernel_shape attribute of the pools */
static enum npu_status
pool_setup(struct npu_cpu_ctx *ctx, const struct npu_attrs *attrs, const struct npu_tensor *x,
           struct cpu_win *w)
{
    if (x->ndim < 3)
        return KINVAL("input must be [N, C, spatial...]");
    size_t n;
    const int64_t *ks = npu_attrs_ints(attrs, "kernel_shape", &n);
    if (!ks || (int)n != x->ndim - 2)
        return KINVAL("kernel_shape must have one entry per spatial dim");
    bool ceil_mode = npu_attrs_int(attrs, "ceil_mode", 0) != 0;
    return cpu_win_setup(ctx, attrs, x->ndim - 2, x->dims + 2, ks, ceil_mode, w);
}

static enum npu_status
pool_check_out(struct npu_cpu_ctx *ctx, const struct npu_tensor *x, const struct npu_tensor *y,
               enum npu_dtype dt, const struct cpu_win *w)
{
    int64_t od[NPU_MAX_DIMS] = {x->dims[0], x->dims[1]};
    for (int i = 0; i < w->nsp; i++)
        od[2 + i] = w->out[i];
    return cpu_check_out(ctx, y, dt, x->ndim, od);
}

struct pool_job {
    const struct cpu_win *w;
    const struct npu_tensor *x;
    struct npu_tensor *y, *ind;
    bool is_max, include_pad, col_major;
    bool sep; /* fp32 2-D max, dilation 1: maxpool2d_f32_sep with a thread's scratch row block */
    struct npu_cpu_ctx *ctx;
    int64_t in_plane, out_plane;
};

static inline double
ldd(const struct npu_tensor *t, int64_t i)
{
    if (t->dtype == NPU_DTYPE_FP32)
        return ((const float *)t->data)[i];
    return cpu_scalar_f64(t, i);
}

/* fp32 2-D window loop, no indices (the common MaxPool/AveragePool case) */
static void
pool2d_f32(const struct pool_job *j, const float *x, float *y)
{
    const struct cpu_win *w = j->w;
    int64_t H = w->in[0], W = w->in[1];
    for (int64_t oh = 0; oh < w->out[0]; oh++) {
        int64_t h0 = oh * w->s[0] - w->pb[0];
        for (int64_t ow = 0; ow < w->out[1]; ow++) {
            int64_t w0 = ow * w->s[1] - w->pb[1];
            float acc = j->is_max ? -INFINITY : 0.0f;
            int64_t cnt = 0, cnt_pad = 0;
            for (int64_t kh = 0; kh < w->k[0]; kh++) {
                int64_t h = h0 + kh * w->d[0];
                if (h >= H + w->pe[0])
                    break;
                bool hin = h >= 0 && h < H;
                for (int64_t kw = 0; kw < w->k[1]; kw++) {
                    int64_t ww = w0 + kw * w->d[1];
                    if (ww >= W + w->pe[1])
                        break;
                    cnt_pad++;
                    if (!hin || ww < 0 || ww >= W)
                        continue;
                    float v = x[h * W + ww];
                    cnt++;
                    if (j->is_max)
                        acc = (v != v || v > acc) && acc == acc ? v : acc;
                    else
                        acc += v;
                }
            }
            if (!j->is_max)
                acc = (j->include_pad ? cnt_pad : cnt)
                          ? acc / (float)(j->include_pad ? cnt_pad : cnt)
                          : 0.0f;
            y[oh * w->out[1] + ow] = acc;
        }
    }
}

/* fp32 1-D windows without indices: pool_generic's arithmetic (sums in double, one rounding
 * to float; max by the same first-NaN / first-of-equals rule), without its per-tap index
 * vectors and per-output conversion call */
static void
pool1d_f32(const struct pool_job *j, const float *x, float *y)
{
    const struct cpu_win *w = j->w;
    const int64_t L = w->in[0], k = w->k[0], s = w->s[0], d = w->d[0], pb = w->pb[0];
    const int64_t lim = L + w->pe[0];
    for (int64_t o = 0; o < w->out[0]; o++) {
        const int64_t p0 = o * s - pb;
        int64_t cnt = 0, cnt_pad = 0;
        if (j->is_max) {
            float acc = -INFINITY;
            for (int64_t t = 0; t < k; t++) {
                int64_t p = p0 + t * d;
                if (p >= 0 && p < L) {
                    float v = x[p];
                    acc = (v != v || v > acc) && acc == acc ? v : acc;
                }
            }
            y[o] = acc;
            continue;
        }
        double acc = 0.0;
        for (int64_t t = 0; t < k; t++) {
            int64_t p = p0 + t * d;
            cnt_pad += p < lim;
            if (p >= 0 && p < L) {
                acc += (double)x[p];
                cnt++;
            }
        }
        int64_t div = j->include_pad ? cnt_pad : cnt;
        y[o] = (float)(div ? acc / (double)div : 0.0);
    }
}

/* any rank, any dtype (through double), with indices */
static void
pool_generic(const struct pool_job *j, int64_t plane)
{
    const struct cpu_win *w = j->w;
    int nsp = w->nsp;
    int64_t ist[CPU_MAX_SP];
    cpu_row_strides(w->in, nsp, ist);
    int64_t opos[CPU_MAX_SP] = {0};
    int64_t xbase = plane * j->in_plane, ybase = plane * j->out_plane;
    for (int64_t o = 0; o < j->out_plane; o++) {
        double acc = j->is_max ? -INFINITY : 0.0;
        int64_t best = -1, cnt = 0, cnt_pad = 0;
        int64_t kpos[CPU_MAX_SP] = {0};
        for (;;) {
            bool inside = true, in_pad = true;
            int64_t off = 0, ipos[CPU_MAX_SP];
            for (int i = 0; i < nsp; i++) {
                int64_t p = opos[i] * w->s[i] - w->pb[i] + kpos[i] * w->d[i];
                ipos[i] = p;
                if (p < 0 || p >= w->in[i])
                    inside = false;
                if (p >= w->in[i] + w->pe[i])
                    in_pad = false;
                off += p * ist[i];
            }
            if (in_pad)
                cnt_pad++;
            if (inside) {
                double v = ldd(j->x, xbase + off);
                cnt++;
                if (j->is_max) {
                    if (best < 0 || ((v != v || v > acc) && acc == acc)) {
                        acc = v;
                        if (j->col_major) {
                            /* column-major index inside the plane: first spatial dim fastest */
                            int64_t ci = 0, m = 1;
                            for (int i = 0; i < nsp; i++) {
                                ci += ipos[i] * m;
                                m *= w->in[i];
                            }
                            best = ci;
                        } else {
                            best = off;
                        }
                    }
                } else {
                    acc += v;
                }
            }
            if (!cpu_index_next(kpos, w->k, nsp))
                break;
        }
        if (!j->is_max) {
            int64_t div = j->include_pad ? cnt_pad : cnt;
            acc = div ? acc / (double)div : 0.0;
        }
        cpu_convert(&acc, NPU_DTYPE_FP64,
                    (char *)j->y->data + (size_t)(ybase + o) * cpu_esize(j->y), j->y->dtype, 1);
        if (j->ind)
            ((int64_t *)j->ind->data)[ybase + o] = best < 0 ? -1 : xbase + best;
        cpu_index_next(opos, w->out, nsp);
    }
}

/* fp32 2-D max pool, row at a time: for each tap in (kh, kw) order, the update of
 * pool2d_f32 over the output columns whose input is inside the image (no test per element),
 * so every output sees the same taps in the same order (NaN propagates, -0/+0 ties keep the
 * first) and the loops vectorise. */
CPU_HOT static void
maxpool2d_f32(const struct cpu_win *w, const float *x, float *y)
{
    const int64_t H = w->in[0], W = w->in[1], OW = w->out[1], s1 = w->s[1];
    for (int64_t oh = 0; oh < w->out[0]; oh++) {
        float *yr = y + oh * OW;
        for (int64_t ow = 0; ow < OW; ow++)
            yr[ow] = -INFINITY;
        for (int64_t kh = 0; kh < w->k[0]; kh++) {
            int64_t h = oh * w->s[0] - w->pb[0] + kh * w->d[0];
            if (h < 0 || h >= H)
                continue;
            const float *xr = x + h * W;
            for (int64_t kw = 0; kw < w->k[1]; kw++) {
                const int64_t off = kw * w->d[1] - w->pb[1];
                int64_t lo = 0, hi = OW;
                while (lo < OW && lo * s1 + off < 0)
                    lo++;
                while (hi > lo && (hi - 1) * s1 + off >= W)
                    hi--;
                if (s1 == 1) {
                    for (int64_t ow = lo; ow < hi; ow++) {
                        float v = xr[ow + off], a = yr[ow];
                        yr[ow] = (v != v || v > a) && a == a ? v : a;
                    }
                } else {
                    for (int64_t ow = lo; ow < hi; ow++) {
                        float v = xr[ow * s1 + off], a = yr[ow];
                        yr[ow] = (v != v || v > a) && a == a ? v : a;
                    }
                }
            }
        }
    }
}

/* max(a, v) as the tap-by-tap scan takes it: a NaN tap wins and then stays; of equal values
 * (+0 and -0) the first one stays */
static inline float
max_tap(float a, float v)
{
    return (v != v || v > a) && a == a ? v : a;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define MP_X86 1
/* hr[ow] = max_tap(hr[ow], xr[2 ow + off]) for ow in [lo, hi) (every tap inside the row),
 * 16 outputs per AVX-512 step, the last 1-15 with masked loads and stores. max_tap's rule in
 * vectors: max(v, a) keeps a on equal values and when either is NaN; a NaN v over a non-NaN a
 * is taken. (ResNet's 3x3 stride-2 MaxPool: the strided scalar loop, a branch per tap, was
 * 3 % of a ResNet-18 run.) */
__attribute__((target("avx512f"))) static void
maxpool_row_s2_avx512(const float *xr, float *hr, int64_t lo, int64_t hi, int64_t off)
{
    const __m512i even =
        _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    for (int64_t ow = lo; ow < hi; ow += 16) {
        const int n = (int)NPU_MIN((int64_t)16, hi - ow), nin = 2 * n - 1; /* floats read */
        const __mmask16 m0 = (__mmask16)(nin >= 16 ? 0xFFFFu : (1u << nin) - 1);
        const __mmask16 m1 = (__mmask16)(nin >= 32  ? 0xFFFFu
                                         : nin > 16 ? (1u << (nin - 16)) - 1
                                                    : 0);
        const __mmask16 mo = (__mmask16)(n == 16 ? 0xFFFFu : (1u << n) - 1);
        const float *s = xr + 2 * ow + off;
        __m512 v = _mm512_permutex2var_ps(_mm512_maskz_loadu_ps(m0, s), even,
                                          _mm512_maskz_loadu_ps(m1, s + 16));
        __m512 a = _mm512_maskz_loadu_ps(mo, hr + ow);
        __m512 r = _mm512_max_ps(v, a);
        __mmask16 take =
            _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q) & _mm512_cmp_ps_mask(a, a, _CMP_ORD_Q);
        _mm512_mask_storeu_ps(hr + ow, mo, _mm512_mask_mov_ps(r, take, v));
    }
}
static bool mp_avx512;
static pthread_once_t mp_once = PTHREAD_ONCE_INIT;
static void
mp_pick(void)
{
    __builtin_cpu_init();
    mp_avx512 = __builtin_cpu_supports("avx512f");
}
#endif

/* fp32 2-D MaxPool without dilation, separably: each input row's maxima over the column taps
 * (kw in order) into hm [H, OW], then each output row as the maximum of its rows of hm (kh in
 * order). Taking a row's maximum first and then the rows in order gives the value the row-major
 * scan of maxpool2d_f32 gives, bit for bit (the first NaN, the first of equal zeros); the
 * bounds are worked out once per plane instead of once per output row and tap. */
CPU_HOT static void
maxpool2d_f32_sep(const struct cpu_win *w, const float *x, float *y, float *hm)
{
    const int64_t H = w->in[0], W = w->in[1], OH = w->out[0], OW = w->out[1];
    const int64_t s0 = w->s[0], s1 = w->s[1], k0 = w->k[0], k1 = w->k[1];
#ifdef MP_X86
    pthread_once(&mp_once, mp_pick);
#endif
    for (int64_t h = 0; h < H; h++) {
        const float *xr = x + h * W;
        float *hr = hm + h * OW;
        const int64_t off0 = -w->pb[1];
        if (k1 == 2 && s1 == 2 && off0 == 0 && 2 * OW <= W) {
            /* 2 wide, stride 2, both taps inside: one interleaved pair per output */
            for (int64_t ow = 0; ow < OW; ow++)
                hr[ow] = max_tap(xr[2 * ow], xr[2 * ow + 1]);
            continue;
        }
        for (int64_t ow = 0; ow < OW; ow++)
            hr[ow] = -INFINITY;
        for (int64_t kw = 0; kw < k1; kw++) {
            const int64_t off = kw - w->pb[1];
            /* outputs whose tap kw lies inside the row: lo <= ow < hi */
            int64_t lo = off >= 0 ? 0 : (-off + s1 - 1) / s1;
            int64_t hi = W - off <= 0 ? 0 : (W - off + s1 - 1) / s1;
            hi = hi > OW ? OW : hi;
            if (s1 == 1) {
                for (int64_t ow = lo; ow < hi; ow++)
                    hr[ow] = max_tap(hr[ow], xr[ow + off]);
            } else if (s1 == 2) {
#ifdef MP_X86
                if (mp_avx512) {
                    maxpool_row_s2_avx512(xr, hr, lo, hi, off);
                    continue;
                }
#endif
                for (int64_t ow = lo; ow < hi; ow++)
                    hr[ow] = max_tap(hr[ow], xr[2 * ow + off]);
            } else {
                for (int64_t ow = lo; ow < hi; ow++)
                    hr[ow] = max_tap(hr[ow], xr[ow * s1 + off]);
            }
        }
    }
    for (int64_t oh = 0; oh < OH; oh++) {
        float *yr = y + oh * OW;
        for (int64_t ow = 0; ow < OW; ow++)
            yr[ow] = -INFINITY;
        for (int64_t kh = 0; kh < k0; kh++) {
            int64_t h = oh * s0 - w->pb[0] + kh;
            if (h < 0 || h >= H)
                continue;
            const float *hr = hm + h * OW;
            for (int64_t ow = 0; ow < OW; ow++)
                yr[ow] = max_tap(yr[ow], hr[ow]);
        }
    }
}

static void
pool_task(void *arg, int64_t begin, int64_t end, int tid)
{
    const struct pool_job *j = arg;
    for (int64_t p = begin; p < end; p++) {
        if (j->sep)
            maxpool2d_f32_sep(j->w, (const float *)j->x->data + p * j->in_plane,
                              (float *)j->y->data + p * j->out_plane, cpu_scratch(j->ctx, tid));
        else if (j->w->nsp == 2 && !j->ind && j->x->dtype == NPU_DTYPE_FP32 && j->is_max)
            maxpool2d_f32(j->w, (const float *)j->x->data + p * j->in_plane,
                          (float *)j->y->data + p * j->out_plane);
        else if (j->w->nsp == 2 && !j->ind && j->x->dtype == NPU_DTYPE_FP32)
            pool2d_f32(j, (const float *)j->x->data + p * j->in_plane,
                       (float *)j->y->data + p * j->out_plane);
        else if (j->w->nsp == 1 && !j->ind && j->x->dtype == NPU_DTYPE_FP32)
            pool1d_f32(j, (const float *)j->x->data + p * j->in_plane,
                       (float *)j->y->data + p * j->out_plane);
        else
            pool_generic(j, p);
    }
}

static enum npu_status
pool_common(struct npu_cpu_ctx *ctx, const struct npu_attrs *attrs, const struct npu_tensor *x,
            struct npu_tensor *y, struct npu_tensor *ind, bool is_max)
{
    switch (x->dtype) {
    case NPU_DTYPE_FP32:
    case NPU_DTYPE_FP64: break;
    case NPU_DTYPE_INT8:
    case NPU_DTYPE_UINT8:
        if (is_max)
            break;
        /* fall through */
    default: return KUNSUP("dtype %s is not supported", npu_dtype_name(x->dtype));
    }
    struct cpu_win w;
    CPU_TRY(pool_setup(ctx, attrs, x, &w));
    CPU_TRY(pool_check_out(ctx, x, y, x->dtype, &w));
    if (ind)
        CPU_TRY(pool_check_out(ctx, x, ind, NPU_DTYPE_INT64, &w));
    struct pool_job j = {
        .w = &w,
        .x = x,
        .y = y,
        .ind = ind,
        .is_max = is_max,
        .include_pad = npu_attrs_int(attrs, "count_include_pad", 0) != 0,
        .col_major = npu_attrs_int(attrs, "storage_order", 0) != 0,
        .in_plane = cpu_dims_prod(x->dims, 2, x->ndim),
        .out_plane = cpu_dims_prod(w.out, 0, w.nsp),
    };
    int64_t kn = cpu_dims_prod(w.k, 0, w.nsp);
    if (j.out_plane == 0)
        return NPU_OK;
    if (w.nsp == 2 && !ind && x->dtype == NPU_DTYPE_FP32 && is_max && w.d[0] == 1 && w.d[1] == 1) {
        CPU_TRY(cpu_scratch_reserve(ctx, sizeof(float) * (size_t)(w.in[0] * w.out[1])));
        j.sep = true;
        j.ctx = ctx;
    }
    cpu_parallel_for(ctx, x->dims[0] * x->dims[1],
                     NPU_MAX((int64_t)1, 65536 / NPU_MAX(j.out_plane * kn, (int64_t)1)), pool_task,
                     &j);
    return NPU_OK;
}

enum npu_status
cpu_k_max_pool(CPU_KERNEL_ARGS)
{
    return pool_common(ctx, attrs, in[0], out[0], nout > 1 ? out[1] : NULL, true);
}

enum npu_status
cpu_k_average_pool(CPU_KERNEL_ARGS)
{
    return pool_common(ctx, attrs, in[0], out[0], NULL, false);
}

/* ---- global pools --------------------------------------------------------------------------- */

struct gpool_job {
    const struct npu_tensor *x;
    struct npu_tensor *y;
    int64_t hw;
    bool is_max;
};

CPU_HOT static void
gpool_task(void *arg, int64_t begin, int64_t end, int tid)
{
    const struct gpool_job *j = arg;
    for (int64_t p = begin; p < end; p++) {
        double acc = j->is_max ? -INFINITY : 0.0;
        if (j->x->dtype == NPU_DTYPE_FP32) {
            const float *x = (const float *)j->x->data + p * j->hw;
            if (j->is_max) {
                float m = cpu_vmax(x, j->hw);
                for (int64_t i = 0; i < j->hw; i++)
                    if (x[i] != x[i])
                        m = x[i];
                acc = m;
            } else {
                double a8[8] = {0};
                int64_t i = 0;
                for (; i + 8 <= j->hw; i += 8)
                    for (int k = 0; k < 8; k++)
                        a8[k] += x[i + k];
                for (int k = 0; i < j->hw; i++, k++)
                    a8[k] += x[i];
                acc = ((a8[0] + a8[1]) + (a8[2] + a8[3])) + ((a8[4] + a8[5]) + (a8[6] + a8[7]));
            }
        } else {
            for (int64_t i = 0; i < j->hw; i++) {
                double v = ldd(j->x, p * j->hw + i);
                if (j->is_max)
                    acc = (v != v || v > acc) && acc == acc ? v : acc;
                else
                    acc += v;
            }
        }
        if (!j->is_max)
            acc = j->hw ? acc / (double)j->hw : NAN;
        if (j->y->dtype == NPU_DTYPE_FP32)
            ((float *)j->y->data)[p] = (float)acc; /* as cpu_convert rounds */
        else
            cpu_convert(&acc, NPU_DTYPE_FP64, (char *)j->y->data + (size_t)p * cpu_esize(j->y),
                        j->y->dtype, 1);
    }
}

static enum npu_status
gpool_common(struct npu_cpu_ctx *ctx, const struct npu_tensor *x, struct npu_tensor *y, bool is_max)
{
    if (x->dtype != NPU_DTYPE_FP32 && x->dtype != NPU_DTYPE_FP64)
        return KUNSUP("dtype %s is not supported", npu_dtype_name(x->dtype));
    if (x->ndim < 2)
        return KINVAL("input must be [N, C, ...]");
    int64_t od[NPU_MAX_DIMS] = {x->dims[0], x->dims[1]};
    for (int d = 2; d < x->ndim; d++)
        od[d] = 1;
    CPU_TRY(cpu_check_out(ctx, y, x->dtype, x->ndim, od));
    struct gpool_job j = {x, y, cpu_dims_prod(x->dims, 2, x->ndim), is_max};
    cpu_parallel_for(ctx, x->dims[0] * x->dims[1],
                     NPU_MAX((int64_t)1, 32768 / NPU_MAX(j.hw, (int64_t)1)), gpool_task, &j);
    return NPU_OK;
}

enum npu_status
cpu_k_global_average_pool(CPU_KERNEL_ARGS)
{
    return gpool_common(ctx, in[0], out[0], false);
}

enum npu_status
cpu_k_global_max_pool(CPU_KERNEL_ARGS)
{
    return gpool_common(ctx, in[0], out[0], true);
}
