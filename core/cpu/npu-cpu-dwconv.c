/* SPDX-License-Identifier: MIT */
/*
 * npu-cpu-dwconv.c: two fp32 2-D Conv fast paths for x86-64 with AVX-512F or
 * AVX2+FMA, chosen at run time (cpuid), that npu-cpu-conv.c tries first:
 *
 *  - depthwise (one input channel per group), kernels up to 7x7, column
 *    stride 1 or 2 (any row stride, no dilation): the MobileNet layers. The
 *    input plane is read in place - no padded copy: every load is masked to
 *    the row, so the border columns need no separate code and nothing outside
 *    the row is read; rows outside the image are skipped. Stride-2 rows are
 *    deinterleaved in registers (two loads, one permute).
 *  - dense convs with few taps per output (C * KH * KW <= 32, C <= 4: the
 *    3-channel stem): the input vectors of a block of output columns are
 *    gathered once and every output channel is their weighted sum, instead of
 *    im2col + a GEMM with M = 16-32, K = 27.
 *
 * The loops are written once (npu-cpu-dwconv-body.h) and compiled per
 * instruction set. Elsewhere (other CPUs, aarch64), or with
 * NPU_CPU_DWCONV=off in the environment, both return false and
 * npu-cpu-conv.c runs its portable paths. Work is cut by channels and output
 * rows; a depthwise plane tall enough is cut into one band of rows per thread
 * (the pool's pixel-range split, so that the 1x1 that reads it finds its
 * pixels in its own core's cache). Every output is the same sum whichever
 * band or thread computes it, so any thread count gives the same bits.
 */
#include "npu-cpu-dwconv.h"
#include "npu-cpu-internal.h"

#define DW_MAXK 7      /* kernel rows and columns */
#define DW_PADMAX 1024 /* floats of a small plane's padded copy (dw_task) */
#define DW_BAND_MIN 16 /* output rows of a band per thread, at least (dw_band_task) */
#define SC_MAXT 32     /* taps per output of the small-channel path */
#define SC_MAXC 4

struct dw_geo {
    int64_t H, W, OH, OW, KH, KW, s0, s1, pt, pl;
};

#if defined(__x86_64__) && defined(__GNUC__) && !defined(NPU_CPU_NO_CLONES)
#define DW_X86 1
#include <immintrin.h>

/* ---- AVX-512F ---- */
__attribute__((target("avx512f"), always_inline)) static inline __mmask16
m16(int64_t c0, int64_t W)
{
    int64_t lo = c0 < 0 ? -c0 : 0, hi = W - c0 < 16 ? W - c0 : 16;
    if (hi <= lo)
        return 0;
    return (__mmask16)((((uint32_t)1 << hi) - 1) & ~(((uint32_t)1 << lo) - 1));
}

__attribute__((target("avx512f"), always_inline)) static inline __m512
even16(__m512 a, __m512 b)
{
    const __m512i ev = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    return _mm512_permutex2var_ps(a, ev, b);
}

__attribute__((target("avx512f"), always_inline)) static inline __m512
odd16(__m512 a, __m512 b)
{
    const __m512i od = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    return _mm512_permutex2var_ps(a, od, b);
}

__attribute__((target("avx512f"), always_inline)) static inline void
st16(float *p, __m512 v, int64_t n)
{
    if (n == 16)
        _mm512_storeu_ps(p, v);
    else
        _mm512_mask_storeu_ps(p, (__mmask16)(((uint32_t)1 << n) - 1), v);
}

/* the fused activations the plane kernels apply in registers (cpu_act_apply's operations, in
 * its operand order, so the bits match: max(a, x) is x < a ? a : x, NaN stays NaN) */
__attribute__((target("avx512f"), always_inline)) static inline __m512
act16(__m512 v, enum cpu_act kind, __m512 a, __m512 b)
{
    switch (kind) {
    case CPU_ACT_RELU: return _mm512_max_ps(_mm512_setzero_ps(), v);
    case CPU_ACT_CLIP: return _mm512_min_ps(b, _mm512_max_ps(a, v));
    case CPU_ACT_HARD_SIGMOID: {
        __m512 t = _mm512_max_ps(_mm512_setzero_ps(), _mm512_fmadd_ps(a, v, b));
        return _mm512_min_ps(_mm512_set1_ps(1.0f), t);
    }
    case CPU_ACT_HARD_SWISH: {
        __m512 t =
            _mm512_mul_ps(v, _mm512_fmadd_ps(v, _mm512_set1_ps(1.0f / 6.0f), _mm512_set1_ps(0.5f)));
        __mmask16 ge = _mm512_cmp_ps_mask(v, _mm512_set1_ps(3.0f), _CMP_GE_OQ);
        __mmask16 le = _mm512_cmp_ps_mask(v, _mm512_set1_ps(-3.0f), _CMP_LE_OQ);
        t = _mm512_mask_blend_ps(ge, t, v);
        return _mm512_mask_blend_ps(le, t, _mm512_mul_ps(_mm512_set1_ps(-0.0f), v));
    }
    default: return v;
    }
}

#define DW_SFX avx512
#define DW_TARGET __attribute__((target("avx512f")))
#define V __m512
#define VW 16
#define ZERO() _mm512_setzero_ps()
#define SET1(f) _mm512_set1_ps(f)
#define FMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define ADD(a, b) _mm512_add_ps(a, b)
#define MT __mmask16
#define MK(c0, W) m16(c0, W)
#define LDM(row, c0, m) _mm512_maskz_loadu_ps(m, (row) + (c0))
#define EVEN(a, b) even16(a, b)
#define ODD(a, b) odd16(a, b)
#define LDU(p) _mm512_loadu_ps(p)
#define STN(p, v, n) st16(p, v, n)
#define ACTV(v, kind, a, b) act16(v, kind, a, b)
#include "npu-cpu-dwconv-body.h"
#undef DW_SFX
#undef DW_TARGET
#undef V
#undef VW
#undef ZERO
#undef SET1
#undef FMA
#undef ADD
#undef MT
#undef MK
#undef LDM
#undef EVEN
#undef ODD
#undef LDU
#undef STN
#undef ACTV

/* ---- AVX2 + FMA ---- */
__attribute__((target("avx2,fma"), always_inline)) static inline __m256i
m8(int64_t lo, int64_t hi)
{
    const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    lo = lo < 0 ? 0 : lo > 8 ? 8 : lo;
    hi = hi < 0 ? 0 : hi > 8 ? 8 : hi;
    return _mm256_andnot_si256(_mm256_cmpgt_epi32(_mm256_set1_epi32((int)lo), idx),
                               _mm256_cmpgt_epi32(_mm256_set1_epi32((int)hi), idx));
}

__attribute__((target("avx2,fma"), always_inline)) static inline __m256
even8(__m256 a, __m256 b)
{
    /* [a0 a2 b0 b2 a4 a6 b4 b6], then the 64-bit pairs in order 0 2 1 3 */
    __m256 t = _mm256_shuffle_ps(a, b, 0x88);
    return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(t), 0xD8));
}

__attribute__((target("avx2,fma"), always_inline)) static inline __m256
odd8(__m256 a, __m256 b)
{
    __m256 t = _mm256_shuffle_ps(a, b, 0xDD);
    return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(t), 0xD8));
}

__attribute__((target("avx2,fma"), always_inline)) static inline void
st8(float *p, __m256 v, int64_t n)
{
    if (n == 8)
        _mm256_storeu_ps(p, v);
    else
        _mm256_maskstore_ps(p, m8(0, n), v);
}

__attribute__((target("avx2,fma"), always_inline)) static inline __m256
act8(__m256 v, enum cpu_act kind, __m256 a, __m256 b)
{
    switch (kind) {
    case CPU_ACT_RELU: return _mm256_max_ps(_mm256_setzero_ps(), v);
    case CPU_ACT_CLIP: return _mm256_min_ps(b, _mm256_max_ps(a, v));
    case CPU_ACT_HARD_SIGMOID: {
        __m256 t = _mm256_max_ps(_mm256_setzero_ps(), _mm256_fmadd_ps(a, v, b));
        return _mm256_min_ps(_mm256_set1_ps(1.0f), t);
    }
    case CPU_ACT_HARD_SWISH: {
        __m256 t =
            _mm256_mul_ps(v, _mm256_fmadd_ps(v, _mm256_set1_ps(1.0f / 6.0f), _mm256_set1_ps(0.5f)));
        __m256 ge = _mm256_cmp_ps(v, _mm256_set1_ps(3.0f), _CMP_GE_OQ);
        __m256 le = _mm256_cmp_ps(v, _mm256_set1_ps(-3.0f), _CMP_LE_OQ);
        t = _mm256_blendv_ps(t, v, ge);
        return _mm256_blendv_ps(t, _mm256_mul_ps(_mm256_set1_ps(-0.0f), v), le);
    }
    default: return v;
    }
}

#define DW_SFX avx2
#define DW_TARGET __attribute__((target("avx2,fma")))
#define V __m256
#define VW 8
#define ZERO() _mm256_setzero_ps()
#define SET1(f) _mm256_set1_ps(f)
#define FMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define ADD(a, b) _mm256_add_ps(a, b)
#define MT __m256i
#define MK(c0, W) m8(-(c0), (W) - (c0))
#define LDM(row, c0, m) _mm256_maskload_ps((row) + (c0), m)
#define EVEN(a, b) even8(a, b)
#define ODD(a, b) odd8(a, b)
#define LDU(p) _mm256_loadu_ps(p)
#define STN(p, v, n) st8(p, v, n)
#define ACTV(v, kind, a, b) act8(v, kind, a, b)
#include "npu-cpu-dwconv-body.h"
#undef DW_SFX
#undef DW_TARGET
#undef V
#undef VW
#undef ZERO
#undef SET1
#undef FMA
#undef ADD
#undef MT
#undef MK
#undef LDM
#undef EVEN
#undef ODD
#undef LDU
#undef STN
#undef ACTV
#endif /* DW_X86 */

/* ---- 1x1 conv over a 1x1 plane: matrix-vector (the SE blocks' small FCs) ------------------ */
#ifdef DW_X86

/* y[m] = bias[m] + W[m] . x for rows [m0, m1) of W [M][C], four rows at a time over
 * 16-float runs of C (a masked run for the tail), each row's 16 partial sums added at the
 * end. */
__attribute__((target("avx512f"))) static void
mv_rows_avx512(const float *w, const float *x, int64_t C, int64_t m0, int64_t m1, const float *bias,
               float *y)
{
    const int64_t tail = C % 16, cf = C - tail;
    const __mmask16 km = (__mmask16)(((uint32_t)1 << tail) - 1);
    int64_t m = m0;
    for (; m + 4 <= m1; m += 4) {
        const float *w0 = w + m * C, *w1 = w0 + C, *w2 = w1 + C, *w3 = w2 + C;
        __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
        for (int64_t c = 0; c < cf; c += 16) {
            const __m512 xv = _mm512_loadu_ps(x + c);
            a0 = _mm512_fmadd_ps(_mm512_loadu_ps(w0 + c), xv, a0);
            a1 = _mm512_fmadd_ps(_mm512_loadu_ps(w1 + c), xv, a1);
            a2 = _mm512_fmadd_ps(_mm512_loadu_ps(w2 + c), xv, a2);
            a3 = _mm512_fmadd_ps(_mm512_loadu_ps(w3 + c), xv, a3);
        }
        if (tail) {
            const __m512 xv = _mm512_maskz_loadu_ps(km, x + cf);
            a0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(km, w0 + cf), xv, a0);
            a1 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(km, w1 + cf), xv, a1);
            a2 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(km, w2 + cf), xv, a2);
            a3 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(km, w3 + cf), xv, a3);
        }
        y[m] = _mm512_reduce_add_ps(a0) + (bias ? bias[m] : 0.0f);
        y[m + 1] = _mm512_reduce_add_ps(a1) + (bias ? bias[m + 1] : 0.0f);
        y[m + 2] = _mm512_reduce_add_ps(a2) + (bias ? bias[m + 2] : 0.0f);
        y[m + 3] = _mm512_reduce_add_ps(a3) + (bias ? bias[m + 3] : 0.0f);
    }
    for (; m < m1; m++) {
        const float *w0 = w + m * C;
        __m512 a0 = _mm512_setzero_ps();
        for (int64_t c = 0; c < cf; c += 16)
            a0 = _mm512_fmadd_ps(_mm512_loadu_ps(w0 + c), _mm512_loadu_ps(x + c), a0);
        if (tail)
            a0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(km, w0 + cf),
                                 _mm512_maskz_loadu_ps(km, x + cf), a0);
        y[m] = _mm512_reduce_add_ps(a0) + (bias ? bias[m] : 0.0f);
    }
}

/* the same with 8-float runs (AVX2 + FMA); the tail of C one float at a time */
__attribute__((target("avx2,fma"))) static float
hsum8(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
    return _mm_cvtss_f32(s);
}

__attribute__((target("avx2,fma"))) static void
mv_rows_avx2(const float *w, const float *x, int64_t C, int64_t m0, int64_t m1, const float *bias,
             float *y)
{
    const int64_t cf = C - C % 8;
    for (int64_t m = m0; m < m1; m++) {
        const float *w0 = w + m * C;
        __m256 a0 = _mm256_setzero_ps(), a1 = a0;
        int64_t c = 0;
        for (; c + 16 <= cf; c += 16) {
            a0 = _mm256_fmadd_ps(_mm256_loadu_ps(w0 + c), _mm256_loadu_ps(x + c), a0);
            a1 = _mm256_fmadd_ps(_mm256_loadu_ps(w0 + c + 8), _mm256_loadu_ps(x + c + 8), a1);
        }
        if (c < cf)
            a0 = _mm256_fmadd_ps(_mm256_loadu_ps(w0 + c), _mm256_loadu_ps(x + c), a0);
        float t = hsum8(_mm256_add_ps(a0, a1));
        for (c = cf; c < C; c++)
            t += w0[c] * x[c];
        y[m] = t + (bias ? bias[m] : 0.0f);
    }
}
#endif /* DW_X86 */

/* ---- dispatch ------------------------------------------------------------------------------ */

typedef void (*dw_plane_fn)(const float *x, const float *k, const struct dw_geo *g, float bias,
                            const struct cpu_act_spec *act, float *y);
typedef void (*sc_row_fn)(const float *x, const float *w, const float *bias, const struct dw_geo *g,
                          int64_t C, int64_t M, int64_t oh, float *y);

static pthread_once_t isa_once = PTHREAD_ONCE_INIT;
static int isa_best; /* what the CPU has: 0 none, 2 AVX2+FMA, 3 AVX-512F */
static int isa_use;  /* what runs (tests may lower it) */

static void
isa_pick(void)
{
#ifdef DW_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        isa_best = 2;
    if (__builtin_cpu_supports("avx512f"))
        isa_best = 3;
#endif
    /* NPU_CPU_DWCONV=off: the portable paths (before/after comparisons) */
    const char *e = getenv("NPU_CPU_DWCONV");
    isa_use = e && (!strcmp(e, "off") || !strcmp(e, "0")) ? 0 : isa_best;
}

int
cpu_dwconv_isa(int want)
{
    pthread_once(&isa_once, isa_pick);
    if (want >= 0)
        isa_use = want == 0 ? 0 : want <= isa_best ? (want >= 3 ? 3 : 2) : isa_best;
    return isa_use;
}

static bool
kernels(dw_plane_fn *dw, sc_row_fn *sc)
{
    pthread_once(&isa_once, isa_pick);
#ifdef DW_X86
    if (isa_use == 3) {
        *dw = dw_plane_avx512;
        *sc = sc_row_avx512;
        return true;
    }
    if (isa_use == 2) {
        *dw = dw_plane_avx2;
        *sc = sc_row_avx2;
        return true;
    }
#endif
    (void)dw;
    (void)sc;
    return false;
}

static void
geo_from_win(const struct cpu_win *w, struct dw_geo *g)
{
    *g = (struct dw_geo){.H = w->in[0],
                         .W = w->in[1],
                         .OH = w->out[0],
                         .OW = w->out[1],
                         .KH = w->k[0],
                         .KW = w->k[1],
                         .s0 = w->s[0],
                         .s1 = w->s[1],
                         .pt = w->pb[0],
                         .pl = w->pb[1]};
}

/* the shapes both paths take: 2-D, no dilation, column stride 1 or 2, small kernels, sizes
 * whose lane arithmetic stays in int (the masks compare lane numbers as 32-bit ints) */
static bool
win_ok(const struct cpu_win *w)
{
    if (w->nsp != 2 || w->d[0] != 1 || w->d[1] != 1 || (w->s[1] != 1 && w->s[1] != 2))
        return false;
    if (w->k[0] > DW_MAXK || w->k[1] > DW_MAXK || w->s[0] > 16)
        return false;
    for (int i = 0; i < 2; i++)
        if (w->in[i] > (INT64_C(1) << 24) || w->out[i] > (INT64_C(1) << 24) ||
            w->pb[i] < -(INT64_C(1) << 20) || w->pb[i] > (INT64_C(1) << 20))
            return false;
    return true;
}

struct dw_job {
    struct dw_geo g;
    dw_plane_fn dw;
    sc_row_fn sc;
    int64_t C, M, Mg, in_plane, out_plane;
    const float *x, *w, *bias;
    const struct cpu_act_spec *act;
    float *y;
    int64_t hp;     /* rows of the padded copy of a small plane (dw_task), 0: none */
    int64_t nbands; /* dw_band_task: bands of output rows per plane */
};

/* whether the kernels apply act in registers; any other runs over the finished rows */
static bool
act_in_regs(const struct cpu_act_spec *act)
{
    const enum cpu_act ak = act->kind;
    return ak == CPU_ACT_NONE || ak == CPU_ACT_RELU || ak == CPU_ACT_CLIP ||
           ak == CPU_ACT_HARD_SWISH || ak == CPU_ACT_HARD_SIGMOID;
}

/* Output rows [oh0, oh1) of a plane of geometry img into yc (the plane's output) from its
 * input rows [h0, h0 + rows) at xb, as a plane of their own: output row i reads band row
 * i * s0 - pt + kh, which is image row (oh0 + i) * s0 - img->pt + kh; rows outside the band
 * are skipped, as the image's are (dw_band_task, cpu_dw_band). */
static void
dw_rows(dw_plane_fn dw, const struct dw_geo *img, const float *xb, int64_t h0, int64_t rows,
        int64_t oh0, int64_t oh1, const float *k, float bias, const struct cpu_act_spec *act,
        float *yc)
{
    struct dw_geo g = *img;
    g.H = rows;
    g.pt = img->pt - oh0 * g.s0 + h0;
    g.OH = oh1 - oh0;
    const bool in_regs = act_in_regs(act);
    const struct cpu_act_spec none = {.kind = CPU_ACT_NONE};
    float *y = yc + oh0 * g.OW;
    dw(xb, k, &g, bias, in_regs ? act : &none, y);
    if (!in_regs)
        cpu_act_apply(act, y, g.OH * g.OW);
}

static void
dw_task(void *arg, int64_t begin, int64_t end, int tid)
{
    (void)tid;
    const struct dw_job *j = arg;
    const int64_t kp = j->g.KH * j->g.KW;
    /* the activations the kernels apply in registers; any other goes over the finished plane */
    const bool in_regs = act_in_regs(j->act);
    const struct cpu_act_spec none = {.kind = CPU_ACT_NONE};
    /* small planes (j->hp rows with the padding, 0: not used) are read from a copy with zero
     * rows above and below, so that every output row has all its kernel rows and the loops
     * take four rows at a time from the first row to the last (a zero row adds 0 * k to a sum,
     * as a padded column does) */
    float pbuf[DW_PADMAX];
    struct dw_geo gp = j->g;
    const int64_t pt = j->g.pt, H = j->g.H, W = j->g.W;
    if (j->hp) {
        memset(pbuf, 0, sizeof(float) * (size_t)(pt * W));
        memset(pbuf + (pt + H) * W, 0, sizeof(float) * (size_t)((j->hp - pt - H) * W));
        gp.H = j->hp;
        gp.pt = 0;
    }
    for (int64_t t = begin; t < end; t++) {
        int64_t n = t / j->M, m = t % j->M, c = m / j->Mg;
        float *y = j->y + t * j->out_plane;
        const float *xc = j->x + (n * j->C + c) * j->in_plane;
        if (j->hp) {
            memcpy(pbuf + pt * W, xc, sizeof(float) * (size_t)(H * W));
            xc = pbuf;
        }
        j->dw(xc, j->w + m * kp, &gp, j->bias ? j->bias[m] : 0, in_regs ? j->act : &none, y);
        if (!in_regs)
            cpu_act_apply(j->act, y, j->out_plane);
    }
}

/* A task of the banded cut: band b of plane m of image n, task (n, b, m) in that order, so
 * that the pool's pixel-range split gives thread t band t of every plane. The band is a plane
 * of its own (as cpu_dw_band's): output rows [oh0, oh1) from the input rows they read, the
 * rows outside the image skipped as in the whole plane. Odd bands start halfway through the
 * channels, so that two threads do not write the line their bands share at the same moment. */
static void
dw_band_task(void *arg, int64_t begin, int64_t end, int tid)
{
    (void)tid;
    const struct dw_job *j = arg;
    const int64_t kp = j->g.KH * j->g.KW, OH = j->g.OH, nb = j->nbands, M = j->M;
    for (int64_t t = begin; t < end; t++) {
        int64_t n = t / (nb * M), r = t % (nb * M), band = r / M, m = r % M;
        if (band & 1)
            m = (m + M / 2) % M;
        const int64_t c = m / j->Mg;
        const int64_t oh0 = OH * band / nb, oh1 = OH * (band + 1) / nb;
        const int64_t h0 = NPU_MAX((int64_t)0, oh0 * j->g.s0 - j->g.pt);
        const int64_t h1 = NPU_MIN(j->g.H, (oh1 - 1) * j->g.s0 - j->g.pt + j->g.KH);
        dw_rows(j->dw, &j->g, j->x + (n * j->C + c) * j->in_plane + h0 * j->g.W, h0,
                NPU_MAX(h1 - h0, (int64_t)0), oh0, oh1, j->w + m * kp, j->bias ? j->bias[m] : 0,
                j->act, j->y + (n * M + m) * j->out_plane);
    }
}

bool
cpu_conv_dw_fast(struct npu_cpu_ctx *ctx, const struct cpu_win *w, int64_t N, int64_t C, int64_t M,
                 const float *x, const float *wt, const float *bias, const struct cpu_act_spec *act,
                 float *y)
{
    struct dw_job j = {
        .C = C, .M = M, .Mg = M / C, .x = x, .w = wt, .bias = bias, .act = act, .y = y};
    if (!win_ok(w) || C < 1 || M % C || !kernels(&j.dw, &j.sc))
        return false;
    geo_from_win(w, &j.g);
#ifdef DW_X86
    /* rows of 8 or fewer outputs (7x7 planes) fill 8 lanes better than 16 */
    if (j.dw == dw_plane_avx512 && j.g.OW <= 8)
        j.dw = dw_plane_avx2;
#endif
    j.in_plane = j.g.H * j.g.W;
    j.out_plane = j.g.OH * j.g.OW;
    /* planes of up to 16 rows where over a quarter of the output rows lack kernel rows (rows
     * [f0, f1) have all of theirs, as in dw_plane_k): padded copy. Measured (one thread, CPU
     * time, best of 3 x 300 calls, before -> after): 960 x 7x7 3x3 35 -> 32 us, 5x5 91 -> 63 us,
     * 672 x 14x14 5x5 stride 2 71 -> 59 us; 576 x 14x14 3x3 (2 rows of 14 lack one) 44 -> 50 us
     * with the copy, so it has none. */
    const int64_t hp = NPU_MAX(j.g.H + j.g.pt, (j.g.OH - 1) * j.g.s0 + j.g.KH);
    int64_t f0 = j.g.pt > 0 ? (j.g.pt + j.g.s0 - 1) / j.g.s0 : 0;
    int64_t f1 = j.g.H - j.g.KH + j.g.pt >= 0 ? (j.g.H - j.g.KH + j.g.pt) / j.g.s0 + 1 : 0;
    f0 = NPU_MIN(f0, j.g.OH);
    f1 = NPU_MIN(NPU_MAX(f1, f0), j.g.OH);
    const bool few = f1 - f0 < 4 || 4 * (f0 + j.g.OH - f1) > j.g.OH;
    if (j.g.H <= 16 && few && hp > j.g.H && hp * j.g.W <= DW_PADMAX)
        j.hp = hp;
    /* with the pool's pixel-range split on, planes of DW_BAND_MIN output rows a thread or more
     * (MobileNetV2's 112x112 after the stem) are cut into a band per thread: the 1x1 that reads
     * them next is cut by pixels, and read its input from the other core's cache when the
     * depthwise was cut by channels (MobileNetV2, 2 threads, the 1x1 32 x 112x112 -> 16: 72 ->
     * 56 us). Not smaller planes: a 14x14 plane in two bands costs the depthwise 1.8x (its
     * whole plane is ~65 ns of work, and a band call has most of a plane call's overhead) */
    if (ctx->affine_mode && ctx->nthreads > 1 && !j.hp &&
        j.g.OH >= DW_BAND_MIN * (int64_t)ctx->nthreads) {
        j.nbands = ctx->nthreads;
        cpu_parallel_for_px(ctx, N * j.nbands * M, 1, dw_band_task, &j);
        return true;
    }
    /* otherwise by planes, thread t starting on the t-th range of channels: the range the
     * direct path's channel-major 1x1 before it wrote on that thread */
    cpu_parallel_for_px(ctx, N * M, 1, dw_task, &j);
    return true;
}

static void
sc_task(void *arg, int64_t begin, int64_t end, int tid)
{
    (void)tid;
    const struct dw_job *j = arg;
    const int64_t OH = j->g.OH, OW = j->g.OW;
    for (int64_t t = begin; t < end; t++) {
        int64_t n = t / OH, oh = t % OH;
        float *y = j->y + n * j->M * j->out_plane;
        j->sc(j->x + n * j->C * j->in_plane, j->w, j->bias, &j->g, j->C, j->M, oh, y);
        if (j->act->kind != CPU_ACT_NONE)
            for (int64_t m = 0; m < j->M; m++)
                cpu_act_apply(j->act, y + m * j->out_plane + oh * OW, OW);
    }
}

bool
cpu_conv_small_c_fast(struct npu_cpu_ctx *ctx, const struct cpu_win *w, int64_t N, int64_t C,
                      int64_t M, const float *x, const float *wt, const float *bias,
                      const struct cpu_act_spec *act, float *y)
{
    struct dw_job j = {.C = C, .M = M, .x = x, .w = wt, .bias = bias, .act = act, .y = y};
    if (!win_ok(w) || C < 1 || C > SC_MAXC || C * w->k[0] * w->k[1] > SC_MAXT ||
        w->k[0] * w->k[1] < 2 || !kernels(&j.dw, &j.sc))
        return false;
    geo_from_win(w, &j.g);
    j.in_plane = j.g.H * j.g.W;
    j.out_plane = j.g.OH * j.g.OW;
    cpu_parallel_for(ctx, N * j.g.OH, 1, sc_task, &j);
    return true;
}

/* ---- one band of one depthwise plane (the fused 1x1 -> depthwise of npu-cpu-pwdw.c) ---------- */

bool
cpu_dw_band_usable(const struct cpu_win *w)
{
    dw_plane_fn dw;
    sc_row_fn sc;
    return win_ok(w) && kernels(&dw, &sc);
}

void
cpu_dw_band(const struct cpu_win *w, const float *xb, int64_t h0, int64_t rows, int64_t oh0,
            int64_t oh1, const float *k, float bias, const struct cpu_act_spec *act, float *yc)
{
    dw_plane_fn dw;
    sc_row_fn sc;
    if (!kernels(&dw, &sc))
        return;
    struct dw_geo g;
    geo_from_win(w, &g);
#ifdef DW_X86
    if (dw == dw_plane_avx512 && g.OW <= 8) /* as cpu_conv_dw_fast */
        dw = dw_plane_avx2;
#endif
    dw_rows(dw, &g, xb, h0, rows, oh0, oh1, k, bias, act, yc);
}

/* ---- 1x1 conv over a 1x1 plane -------------------------------------------------------------- */

#define MV_ROWS 16 /* rows of W per task */

typedef void (*mv_rows_fn)(const float *w, const float *x, int64_t C, int64_t m0, int64_t m1,
                           const float *bias, float *y);

struct mv_job {
    mv_rows_fn fn;
    int64_t C, M, nb;
    const float *x, *w, *bias;
    const struct cpu_act_spec *act;
    float *y;
};

static void
mv_task(void *arg, int64_t begin, int64_t end, int tid)
{
    (void)tid;
    const struct mv_job *j = arg;
    for (int64_t t = begin; t < end; t++) {
        int64_t n = t / j->nb, m0 = (t % j->nb) * MV_ROWS, m1 = NPU_MIN(m0 + MV_ROWS, j->M);
        float *y = j->y + n * j->M;
        j->fn(j->w, j->x + n * j->C, j->C, m0, m1, j->bias, y);
        cpu_act_apply(j->act, y + m0, m1 - m0);
    }
}

bool
cpu_conv_1x1_vec_fast(struct npu_cpu_ctx *ctx, int64_t N, int64_t C, int64_t M, const float *x,
                      const float *wt, const float *bias, const struct cpu_act_spec *act, float *y)
{
    dw_plane_fn dw;
    sc_row_fn sc;
    if (N < 1 || C < 1 || M < 1 || !x || !wt || !y || !kernels(&dw, &sc))
        return false;
    struct mv_job j = {.C = C, .M = M, .x = x, .w = wt, .bias = bias, .act = act, .y = y};
#ifdef DW_X86
    j.fn = isa_use == 3 ? mv_rows_avx512 : mv_rows_avx2;
#else
    return false;
#endif
    j.nb = NPU_DIV_ROUND_UP(M, (int64_t)MV_ROWS);
    /* a task is worth a thread's wake-up above ~32K multiply-adds; by shape only, and each
     * output is one row's dot product whichever thread runs it: any thread count, same bits */
    int64_t grain = NPU_MAX((int64_t)1, (INT64_C(1) << 15) / (MV_ROWS * C));
    cpu_parallel_for(ctx, N * j.nb, grain, mv_task, &j);
    return true;
}
