/* SPDX-License-Identifier: MIT */
/*
 * npu-cpu-conv-wino.c: 3x3 stride-1 fp32 convolutions by Winograd's minimal filtering
 * F(2x2, 3x3) (Lavin and Gray, "Fast Algorithms for Convolutional Neural Networks", 2015), on
 * AVX-512. Each 2x2 block of outputs (a tile) of one output channel is
 *   Y = A^T [ sum over c of (G g_c G^T) .* (B^T d_c B) ] A
 * where g_c is the 3x3 kernel of input channel c and d_c the 4x4 input patch under the tile:
 * 16 products per tile and channel instead of 36, so the sums over the channels, which are
 * the whole cost, shrink 2.25x. The 16 element positions xi of the transformed 4x4 blocks are
 * 16 independent products U[xi] (M x C) . V[xi] (C x tiles).
 *
 * Layout: the weights are transformed once (npu_cpu_prepare, or per call) into
 * U[xi][M / 64][C][64] (output channels in the vector, zero past M); the input is copied
 * zero-padded and channel-last (Xc[h][w][Cp], Cp = C rounded up to 16; 16 x 16 blocks
 * transposed in registers) so that the input transform is 16 channels per vector;
 * V[xi][tile][Cp]. The product's micro-kernel holds 6 tiles x 64 output channels in 24
 * AVX-512 accumulators (a broadcast of V per tile, four vector loads of U per channel),
 * writing Mo[xi][M / 64][tile][64]; the output transform adds the bias, transposes 16
 * channels x 16 outputs (8 tiles of a tile row) in registers and writes rows of Y with the
 * fused residual and the activation. Planes run band by band (6-12 tiles whose V and Mo stay
 * in L1, one band per task); when U is larger than L2 (256 channels and more) or the plane
 * small, in three parallel passes over the whole plane, so that U is read from memory once.
 *
 * Numerics: the transforms add and subtract (the weight transform's 1/2 is exact in fp32 up
 * to the rounding of G g G^T, computed in double and rounded once), so each output differs
 * from the direct sum by fp32 rounding of sums over 4x more terms of up to 4x the size; the
 * tests bound it as the direct path's (a few roundings of the sum of |products|). Every output
 * is computed by the same operations whatever the band, the thread count or whether the
 * weights were prepared, so results are bit-identical across those.
 */
#include "npu-cpu-conv-direct.h"

#include <stdlib.h>
#include <string.h>

#define CW_NB 64 /* output channels per block (four 16-float vectors) */
#define CW_NT 6  /* tiles per micro-kernel call */
#define CW_SEG 8 /* tiles per output run (two rows of 16 outputs) */

static pthread_once_t cw_once = PTHREAD_ONCE_INIT;
static bool cw_avail;
static int cw_mode; /* NPU_CPU_CONV_WINO: 0 by shape, 1 wherever it can, -1 never */
/* the whole-plane product's channels per chunk where U exceeds 1 MiB; NPU_CPU_CONV_WKC=n (for
 * the tests): chunks of n in every whole-plane product */
static int64_t cw_kc = 128;
static bool cw_kc_forced;

static void
cw_pick(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    cw_avail = __builtin_cpu_supports("avx512f");
    const char *isa = getenv("NPU_CPU_CONV_ISA");
    if (isa && !strcmp(isa, "avx2"))
        cw_avail = false;
#endif
    const char *kc = getenv("NPU_CPU_CONV_WKC");
    if (kc && atoll(kc) > 0) {
        cw_kc = atoll(kc);
        cw_kc_forced = true;
    }
    const char *e = getenv("NPU_CPU_CONV_WINO");
    if (e && !strcmp(e, "0"))
        cw_mode = -1;
    else if (e && !strcmp(e, "1"))
        cw_mode = 1;
}

bool
cpu_conv_wino_wanted(int64_t KH, int64_t KW, int64_t s0, int64_t s1, int64_t d0, int64_t d1,
                     int64_t C, int64_t M, int64_t OH, int64_t OW)
{
    pthread_once(&cw_once, cw_pick);
    if (!cw_avail || cw_mode < 0 || KH != 3 || KW != 3 || s0 != 1 || s1 != 1 || d0 != 1 ||
        d1 != 1 || OH < 1 || OW < 1 || C < 1 || M < 1 || C > (INT64_C(1) << 24) ||
        M > (INT64_C(1) << 24))
        return false;
    if (cw_mode > 0)
        return true;
    /* measured (one thread, effective GFLOP/s = the direct sum's FLOPs / time, direct ->
     * Winograd): 64 x 56x56 208 -> 307, 128 x 28x28 221 -> 361, 256 x 14x14 220 -> 421, 512 x
     * 7x7 196 -> 224, 64 x 80x80 208 -> 270, 80 x 80x80 210 -> 278, 32 x 80x80 203 -> 223; but
     * 32 x 160x160 200 -> 153 and 16 x 160x160 180 -> 131 (the transforms and the copy of a
     * large plane cost more than few channels save) */
    return C >= 32 && M >= 32 && OH >= 4 && OW >= 4 && (C >= 64 || OH * OW <= 80 * 80);
}

size_t
cpu_conv_wino_wsize(int64_t C, int64_t M)
{
    return (size_t)(16 * NPU_DIV_ROUND_UP(M, (int64_t)CW_NB) * C * CW_NB);
}

/* U[xi][mb][c][64] = (G g G^T)[xi] for output channel mb * 64 + lane, in double, rounded once */
void
cpu_conv_wino_pack(const float *w, int64_t C, int64_t M, float *u)
{
    const int64_t nmb = NPU_DIV_ROUND_UP(M, (int64_t)CW_NB);
    memset(u, 0, sizeof(float) * cpu_conv_wino_wsize(C, M));
    /* block by block, channel by channel: the 16 writes of each output channel's lane are
     * 16 runs of 64 floats (in M-major order they were 16 scattered streams: 8 % of a 40-run
     * ResNet-18 process) */
    for (int64_t mb = 0; mb < nmb; mb++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t m = mb * CW_NB; m < NPU_MIN(M, (mb + 1) * CW_NB); m++) {
                const float *g = w + (m * C + c) * 9;
                double t[4][3], r[4][4];
                for (int k = 0; k < 3; k++) {
                    double g0 = g[k], g1 = g[3 + k], g2 = g[6 + k];
                    t[0][k] = g0;
                    t[1][k] = 0.5 * (g0 + g1 + g2);
                    t[2][k] = 0.5 * (g0 - g1 + g2);
                    t[3][k] = g2;
                }
                for (int i = 0; i < 4; i++) {
                    r[i][0] = t[i][0];
                    r[i][1] = 0.5 * (t[i][0] + t[i][1] + t[i][2]);
                    r[i][2] = 0.5 * (t[i][0] - t[i][1] + t[i][2]);
                    r[i][3] = t[i][2];
                }
                for (int xi = 0; xi < 16; xi++)
                    u[((xi * nmb + mb) * C + c) * CW_NB + m % CW_NB] = (float)r[xi / 4][xi % 4];
            }
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
typedef float v16f __attribute__((vector_size(64), aligned(4)));
typedef int32_t v16i __attribute__((vector_size(64), aligned(4)));

struct cw_job {
    const struct cpu_cd_args *a;
    struct npu_cpu_ctx *ctx;
    int64_t C, Cp, M, nmb, H, W, OH, OW, TW, T, Wp, Hp, pt, pl;
    const float *u;
    const float *x; /* this image */
    float *xc;      /* [Hp][Wp][Cp] */
    float *y;       /* this image */
    const float *res_img;
    int64_t band, nbands;
    float *v, *mo; /* whole-plane mode: [16][T][Cp], [16][nmb][T][64] */
    int64_t kc;    /* whole-plane mode: channels per chunk of the product */
};

/* r[i][k] -> r[k][i] for 16 vectors of 16 floats */
__attribute__((target("avx512f"), always_inline)) static inline void
cw_tr16(__m512 r[16])
{
    __m512 a[16], b[16], c[16];
    for (int i = 0; i < 16; i += 2) {
        a[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        a[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 16; i += 4) {
        __m512d a0 = _mm512_castps_pd(a[i]), a1 = _mm512_castps_pd(a[i + 1]);
        __m512d a2 = _mm512_castps_pd(a[i + 2]), a3 = _mm512_castps_pd(a[i + 3]);
        b[i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a0, a2));
        b[i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a0, a2));
        b[i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(a1, a3));
        b[i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(a1, a3));
    }
    for (int i = 0; i < 16; i += 8)
        for (int k = 0; k < 4; k++) {
            c[i + k] = _mm512_shuffle_f32x4(b[i + k], b[i + 4 + k], 0x88);
            c[i + 4 + k] = _mm512_shuffle_f32x4(b[i + k], b[i + 4 + k], 0xdd);
        }
    for (int k = 0; k < 8; k++) {
        r[k] = _mm512_shuffle_f32x4(c[k], c[8 + k], 0x88);
        r[8 + k] = _mm512_shuffle_f32x4(c[k], c[8 + k], 0xdd);
    }
}

/* the padded channel-last copy, one padded row per task: blocks of 16 channels x 16 columns
 * transposed in registers */
__attribute__((target("avx512f"))) static void
cw_copy_task(void *arg, int64_t begin, int64_t end, int tid)
{
    (void)tid;
    const struct cw_job *j = arg;
    const int64_t Cp = j->Cp, C = j->C, W = j->W, H = j->H, pl = j->pl;
    for (int64_t hp = begin; hp < end; hp++) {
        float *d = j->xc + hp * j->Wp * Cp;
        int64_t h = hp - j->pt;
        /* columns [pl, pl + W) are written below; the rest is padding */
        if (h < 0 || h >= H || pl < 0 || pl + W > j->Wp) {
            memset(d, 0, sizeof(float) * (size_t)(j->Wp * Cp));
        } else {
            memset(d, 0, sizeof(float) * (size_t)(pl * Cp));
            memset(d + (pl + W) * Cp, 0, sizeof(float) * (size_t)((j->Wp - pl - W) * Cp));
        }
        if (h < 0 || h >= H)
            continue;
        const int64_t w0 = NPU_MAX((int64_t)0, -pl), w1 = NPU_MIN(W, j->Wp - pl);
        for (int64_t c0 = 0; c0 < C; c0 += 16) {
            const int nc = (int)NPU_MIN((int64_t)16, C - c0);
            for (int64_t wb = w0; wb < w1; wb += 16) {
                const int nw = (int)NPU_MIN((int64_t)16, w1 - wb);
                const __mmask16 mw = (__mmask16)((1u << nw) - 1);
                __m512 r[16];
                for (int i = 0; i < 16; i++) {
                    const float *src = j->x + ((c0 + i) * H + h) * W + wb;
                    /* 16 channel rows at once: more streams than the hardware prefetcher
                     * follows; fetched 4 blocks ahead (the next row's start at a row's end) */
                    if (i < nc)
                        __builtin_prefetch(src + 64);
                    r[i] = i < nc ? _mm512_maskz_loadu_ps(mw, src) : _mm512_setzero_ps();
                }
                cw_tr16(r);
                for (int i = 0; i < nw; i++)
                    _mm512_storeu_ps(d + (pl + wb + i) * Cp + c0, r[i]);
            }
        }
    }
}

/* B^T d B for tiles [t0, t1) into v[xi][t - t0][Cp] (ld: tiles per xi) */
__attribute__((target("avx512f"))) static void
cw_input(const struct cw_job *j, int64_t t0, int64_t t1, float *v, int64_t ld)
{
    const int64_t Cp = j->Cp, Wp = j->Wp, xs = ld * Cp;
    for (int64_t t = t0; t < t1; t++) {
        const float *base = j->xc + ((2 * (t / j->TW)) * Wp + 2 * (t % j->TW)) * Cp;
        float *vt = v + (t - t0) * Cp;
        for (int64_t c0 = 0; c0 < Cp; c0 += 16) {
            const float *b = base + c0;
            float *o = vt + c0;
            __m512 r[4][4];
#pragma GCC unroll 4
            for (int k = 0; k < 4; k++) {
                __m512 d0 = _mm512_loadu_ps(b + k * Cp);
                __m512 d1 = _mm512_loadu_ps(b + (Wp + k) * Cp);
                __m512 d2 = _mm512_loadu_ps(b + (2 * Wp + k) * Cp);
                __m512 d3 = _mm512_loadu_ps(b + (3 * Wp + k) * Cp);
                r[0][k] = _mm512_sub_ps(d0, d2);
                r[1][k] = _mm512_add_ps(d1, d2);
                r[2][k] = _mm512_sub_ps(d2, d1);
                r[3][k] = _mm512_sub_ps(d1, d3);
            }
#pragma GCC unroll 4
            for (int i = 0; i < 4; i++) {
                _mm512_storeu_ps(o + (4 * i + 0) * xs, _mm512_sub_ps(r[i][0], r[i][2]));
                _mm512_storeu_ps(o + (4 * i + 1) * xs, _mm512_add_ps(r[i][1], r[i][2]));
                _mm512_storeu_ps(o + (4 * i + 2) * xs, _mm512_sub_ps(r[i][2], r[i][1]));
                _mm512_storeu_ps(o + (4 * i + 3) * xs, _mm512_sub_ps(r[i][1], r[i][3]));
            }
        }
    }
}

/* out[r][0 .. 16 NV) = (accumulate ? out[r][..] : 0) + sum over k < K of v[r * ldv + k] *
 * wk[k][..] for r < NP; the npf lines (16 floats) from pf on (pf NULL: none) are prefetched
 * into L2, evenly over the k */
#define CW_UNROLL _Pragma("GCC unroll 8")
static inline __attribute__((always_inline, target("avx512f"))) void
cw_body(int64_t K, const float *wk, const float *v, int64_t ldv, float *out, bool accumulate,
        const float *pf, int64_t npf, const int NP, const int NV)
{
    v16f c[CW_NT][4];
    CW_UNROLL
    for (int r = 0; r < CW_NT; r++)
        CW_UNROLL
    for (int q = 0; q < 4; q++)
        c[r][q] = (v16f){0};
    if (accumulate)
        CW_UNROLL
    for (int r = 0; r < NP; r++)
        CW_UNROLL
    for (int q = 0; q < NV; q++)
        memcpy(&c[r][q], out + r * CW_NB + 16 * q, sizeof(v16f));
    const int64_t pstep = pf && npf > 0 ? (npf << 16) / K : 0;
#define CW_KSTEP(k)                                                                                \
    {                                                                                              \
        v16f w[4];                                                                                 \
        CW_UNROLL                                                                                  \
        for (int q = 0; q < NV; q++)                                                               \
            memcpy(&w[q], wk + (k)*CW_NB + 16 * q, sizeof(v16f));                                  \
        CW_UNROLL                                                                                  \
        for (int r = 0; r < NP; r++) {                                                             \
            const float a = v[r * ldv + (k)];                                                      \
            CW_UNROLL                                                                              \
            for (int q = 0; q < NV; q++)                                                           \
                c[r][q] += a * w[q];                                                               \
        }                                                                                          \
    }
    if (pstep > 0) {
        int64_t pacc = 0;
        for (int64_t k = 0; k < K; k++) {
            __builtin_prefetch(pf + 16 * (pacc >> 16), 0, 2);
            pacc += pstep;
            CW_KSTEP(k)
        }
    } else {
        for (int64_t k = 0; k < K; k++)
            CW_KSTEP(k)
    }
#undef CW_KSTEP
    CW_UNROLL
    for (int r = 0; r < NP; r++)
        CW_UNROLL
    for (int q = 0; q < NV; q++)
        memcpy(out + r * CW_NB + 16 * q, &c[r][q], sizeof(v16f));
}

typedef void (*cw_kernel_fn)(int64_t K, const float *wk, const float *v, int64_t ldv, float *out,
                             bool accumulate, const float *pf, int64_t npf);
#define CW_FN(np, nv)                                                                              \
    __attribute__((target("avx512f"))) static void cw_k##np##_##nv(                                \
        int64_t K, const float *wk, const float *v, int64_t ldv, float *out, bool accumulate,      \
        const float *pf, int64_t npf)                                                              \
    {                                                                                              \
        cw_body(K, wk, v, ldv, out, accumulate, pf, npf, np, nv);                                  \
    }
#define CW_FN4(np) CW_FN(np, 1) CW_FN(np, 2) CW_FN(np, 3) CW_FN(np, 4)
CW_FN4(1)
CW_FN4(2)
CW_FN4(3)
CW_FN4(4)
CW_FN4(5)
CW_FN4(6)
#define CW_ROW(np)                                                                                 \
    {                                                                                              \
        cw_k##np##_1, cw_k##np##_2, cw_k##np##_3, cw_k##np##_4                                     \
    }
static const cw_kernel_fn cw_fns[CW_NT][4] = {CW_ROW(1), CW_ROW(2), CW_ROW(3),
                                              CW_ROW(4), CW_ROW(5), CW_ROW(6)};

/* Mo[xi][mb][t][64] = U[xi][mb] . V[xi] for the n tiles of v (ld tiles per xi). The channels
 * run in chunks of kc (kc >= C: one pass): every group of 6 tiles sums a chunk before the next
 * chunk, so that the chunk of U (read from memory when U exceeds L2) is read once and then
 * from L1, while the groups prefetch the next chunk, or after the last the first of next (a
 * block of U, or NULL). Each output is the same FMA chain over ascending channels (the partial
 * sums are stored in Mo and reloaded exactly), whatever kc. */
static void
cw_product(const struct cw_job *j, int64_t xi, int64_t mb, const float *v, int64_t n, int64_t ld,
           float *mo, int64_t kc, const float *next)
{
    const int64_t C = j->C, Cp = j->Cp;
    const int mw = (int)NPU_MIN((int64_t)CW_NB, j->M - mb * CW_NB);
    const float *wk = j->u + (xi * j->nmb + mb) * C * CW_NB;
    const float *vx = v + xi * ld * Cp;
    float *o = mo + (xi * j->nmb + mb) * ld * CW_NB;
    const int64_t ng = NPU_DIV_ROUND_UP(n, (int64_t)CW_NT);
    for (int64_t k0 = 0; k0 < C; k0 += kc) {
        const int64_t kn = NPU_MIN(kc, C - k0);
        const float *pf = k0 + kn < C ? wk + (k0 + kn) * CW_NB : next;
        const int64_t nlines =
            (k0 + kn < C ? NPU_MIN(kc, C - k0 - kn) : NPU_MIN(kc, C)) * (CW_NB / 16);
        for (int64_t gi = 0; gi < ng; gi++) {
            const int64_t g = gi * CW_NT;
            int np = (int)NPU_MIN((int64_t)CW_NT, n - g);
            int64_t l0 = gi * nlines / ng, l1 = (gi + 1) * nlines / ng;
            cw_fns[np - 1][(mw + 15) / 16 - 1](kn, wk + k0 * CW_NB, vx + g * Cp + k0, Cp,
                                               o + g * CW_NB, k0 > 0, pf ? pf + 16 * l0 : NULL,
                                               pf ? l1 - l0 : 0);
        }
    }
}

/* A^T m A + bias, the residual, the activation: tiles [t0, t1) (mo's tile t - t0, ld tiles
 * per block), channel block mb, into Y. Runs of up to 8 tiles of one tile row: their two
 * output rows are 16 consecutive outputs each, so 16 channels x 16 outputs are transposed in
 * registers and stored as rows of Y. */
__attribute__((target("avx512f"))) static void
cw_output(const struct cw_job *j, int64_t mb, int64_t t0, int64_t t1, const float *mo, int64_t ld)
{
    const struct cpu_cd_args *a = j->a;
    const int64_t m0 = mb * CW_NB, P = j->OH * j->OW, OW = j->OW;
    const int mw = (int)NPU_MIN((int64_t)CW_NB, j->M - m0), nv = (mw + 15) / 16;
    const bool relu = a->act->kind == CPU_ACT_RELU;
    const bool other = a->act->kind != CPU_ACT_NONE && !relu;
    const bool res = j->res_img != NULL;
    float biasb[CW_NB];
    for (int m = 0; m < CW_NB; m++)
        biasb[m] = a->bias && m < mw ? a->bias[m0 + m] : 0.0f;
    const __m512 zero = _mm512_setzero_ps();
    float tb[16][16];
    for (int64_t t = t0; t < t1;) {
        const int64_t ty = t / j->TW, tx = t % j->TW;
        const int seg = (int)NPU_MIN(NPU_MIN((int64_t)CW_SEG, j->TW - tx), t1 - t);
        const int64_t oh = 2 * ty, ow = 2 * tx;
        const int ncols = (int)NPU_MIN((int64_t)(2 * seg), OW - ow);
        const int nrows = oh + 1 < j->OH ? 2 : 1;
        const __mmask16 cm = (__mmask16)((1u << ncols) - 1);
        for (int q = 0; q < nv; q++) {
            __m512 r0[16], r1[16];
            const __m512 bv = _mm512_loadu_ps(biasb + 16 * q);
            for (int r = 0; r < seg; r++) {
                __m512 m[16];
#pragma GCC unroll 16
                for (int xi = 0; xi < 16; xi++)
                    m[xi] = _mm512_loadu_ps(mo + ((xi * j->nmb + mb) * ld + (t - t0 + r)) * CW_NB +
                                            16 * q);
                __m512 s0[4], s1[4];
#pragma GCC unroll 4
                for (int k = 0; k < 4; k++) {
                    s0[k] = _mm512_add_ps(_mm512_add_ps(m[k], m[4 + k]), m[8 + k]);
                    s1[k] = _mm512_sub_ps(_mm512_sub_ps(m[4 + k], m[8 + k]), m[12 + k]);
                }
                r0[2 * r] = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(s0[0], s0[1]), s0[2]), bv);
                r0[2 * r + 1] =
                    _mm512_add_ps(_mm512_sub_ps(_mm512_sub_ps(s0[1], s0[2]), s0[3]), bv);
                r1[2 * r] = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(s1[0], s1[1]), s1[2]), bv);
                r1[2 * r + 1] =
                    _mm512_add_ps(_mm512_sub_ps(_mm512_sub_ps(s1[1], s1[2]), s1[3]), bv);
            }
            for (int i = 2 * seg; i < 16; i++)
                r0[i] = r1[i] = zero;
            const int nch = NPU_MIN(16, mw - 16 * q);
            for (int row = 0; row < nrows; row++) {
                __m512 *rr = row ? r1 : r0;
                cw_tr16(rr);
                float *yr = j->y + (m0 + 16 * q) * P + (oh + row) * OW + ow;
                const float *resr =
                    res ? j->res_img + (m0 + 16 * q) * P + (oh + row) * OW + ow : NULL;
                for (int c = 0; c < nch; c++) {
                    __m512 v = rr[c];
                    if (res) {
                        /* y = act(conv + B + R): the unfused Add's float, then the ReLU as
                         * the direct path's epilogue (v < 0 ? 0 : v) */
                        v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(cm, resr + c * P));
                        if (relu)
                            v = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, zero, _CMP_LT_OQ), v,
                                                     zero);
                    } else if (relu) {
                        v = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(v, zero, _CMP_GT_OQ), v);
                    }
                    if (other)
                        _mm512_storeu_ps(tb[c], v);
                    else
                        _mm512_mask_storeu_ps(yr + c * P, cm, v);
                }
                if (other) {
                    cpu_cd_act(a->act, tb[0], 16 * nch);
                    for (int c = 0; c < nch; c++)
                        _mm512_mask_storeu_ps(yr + c * P, cm, _mm512_loadu_ps(tb[c]));
                }
            }
        }
        t += seg;
    }
}

/* band mode: one band of tiles per task, all three passes in this thread's scratch */
static void
cw_band_task(void *arg, int64_t begin, int64_t end, int tid)
{
    const struct cw_job *j = arg;
    float *v = cpu_scratch(j->ctx, tid);
    float *mo = v + 16 * j->band * j->Cp;
    for (int64_t b = begin; b < end; b++) {
        int64_t t0 = b * j->band, t1 = NPU_MIN(j->T, t0 + j->band);
        cw_input(j, t0, t1, v, j->band);
        for (int64_t mb = 0; mb < j->nmb; mb++) {
            for (int64_t xi = 0; xi < 16; xi++)
                cw_product(j, xi, mb, v, t1 - t0, j->band, mo, j->C, NULL);
            cw_output(j, mb, t0, t1, mo, j->band);
        }
    }
}

/* whole-plane mode: the three passes, each split over the threads */
static void
cw_input_task(void *arg, int64_t begin, int64_t end, int tid)
{
    (void)tid;
    const struct cw_job *j = arg;
    cw_input(j, begin, end, j->v + begin * j->Cp, j->T);
}

static void
cw_product_task(void *arg, int64_t begin, int64_t end, int tid)
{
    (void)tid;
    const struct cw_job *j = arg;
    for (int64_t i = begin; i < end; i++) {
        const int64_t xi = i % 16, mb = i / 16;
        /* the next task's block of U: xi + 1 of the same channel block */
        const float *next = i + 1 < 16 * j->nmb
                                ? j->u + (((i + 1) % 16) * j->nmb + (i + 1) / 16) * j->C * CW_NB
                                : NULL;
        cw_product(j, xi, mb, j->v, j->T, j->T, j->mo, j->kc, next);
    }
}

static void
cw_output_task(void *arg, int64_t begin, int64_t end, int tid)
{
    (void)tid;
    const struct cw_job *j = arg;
    for (int64_t i = begin; i < end; i++) {
        int64_t mb = i % j->nmb, g = i / j->nmb;
        int64_t t0 = g * CW_SEG, t1 = NPU_MIN(j->T, t0 + CW_SEG);
        cw_output(j, mb, t0, t1, j->mo + t0 * CW_NB, j->T);
    }
}
#endif

enum npu_status
cpu_conv_wino(struct npu_cpu_ctx *ctx, const struct cpu_cd_args *a, const float *u)
{
#if defined(__x86_64__) && defined(__GNUC__)
    const struct cpu_win *w = a->w;
    struct cw_job j = {.a = a,
                       .ctx = ctx,
                       .C = a->C,
                       .Cp = NPU_ALIGN(a->C, (int64_t)16),
                       .M = a->M,
                       .nmb = NPU_DIV_ROUND_UP(a->M, (int64_t)CW_NB),
                       .H = w->in[0],
                       .W = w->in[1],
                       .OH = w->out[0],
                       .OW = w->out[1],
                       .pt = w->pb[0],
                       .pl = w->pb[1]};
    const int64_t TH = NPU_DIV_ROUND_UP(j.OH, (int64_t)2);
    j.TW = NPU_DIV_ROUND_UP(j.OW, (int64_t)2);
    j.T = TH * j.TW;
    j.Hp = 2 * TH + 2;
    j.Wp = 2 * j.TW + 2;
    float *own = NULL;
    if (!u) {
        own = aligned_alloc(64, NPU_ALIGN(sizeof(float) * cpu_conv_wino_wsize(j.C, j.M), 64));
        if (!own)
            return KNOMEM();
        cpu_conv_wino_pack(a->wt, j.C, j.M, own);
        u = own;
    }
    j.u = u;
    /* tiles per band: V and Mo of a band within about 96 KB (L1 and the nearest of L2: 12
     * tiles for 64 channels in and out, 6 from 128) */
    int64_t per_tile = 16 * (j.Cp + j.nmb * CW_NB);
    int64_t band = NPU_MAX((int64_t)CW_NT, (int64_t)(24 * 1024) / per_tile / CW_NT * CW_NT);
    j.band = band;
    j.nbands = NPU_DIV_ROUND_UP(j.T, band);
    /* few bands, or U beyond L2 (256 channels and more: each band would read all of U again
     * from memory): three passes over the whole plane instead (measured, one thread, 3x3
     * 256 x 14x14: 374 -> 421 effective GFLOP/s, 512 x 7x7 192 -> 228; but 128 x 28x28 347 ->
     * 186 and 64 x 20x20 319 -> 138, where V and Mo of the whole plane leave L2) */
    const bool whole = j.nbands < 4 || cpu_conv_wino_wsize(j.C, j.M) > (size_t)(512 << 10);
    /* U read from memory at every call (over 1 MiB): the product in chunks of channels, each
     * chunk of U read once for all the plane's tiles (one thread, CPU time, U not in cache:
     * ResNet-50's 512 x 7x7, 16 MB of U, 2.03-2.06 -> 1.25-1.54 ms; 256 x 14x14, 4 MB of U,
     * 0.93-0.99 -> 0.68-0.71 ms) */
    j.kc = (sizeof(float) * cpu_conv_wino_wsize(j.C, j.M) > ((size_t)1 << 20) || cw_kc_forced)
               ? cw_kc
               : j.C;
    size_t xc_floats = (size_t)(j.Hp * j.Wp * j.Cp);
    size_t whole_floats = whole ? (size_t)(16 * j.T * (j.Cp + j.nmb * CW_NB)) : 0;
    /* the context's conv buffer, kept between calls (a fresh 1-3 MB allocation per call cost
     * page faults: 3 % of a ResNet-50 run) */
    const size_t need = sizeof(float) * (xc_floats + whole_floats);
    enum npu_status st = NPU_OK;
    if (ctx->conv_buf_size < need) {
        free(ctx->conv_buf);
        ctx->conv_buf_size = 0;
        ctx->conv_buf = aligned_alloc(64, NPU_ALIGN(need, (size_t)64));
        if (!ctx->conv_buf)
            st = KNOMEM();
        else
            ctx->conv_buf_size = need;
    }
    if (st == NPU_OK && !whole)
        st = cpu_scratch_reserve(ctx, sizeof(float) * (size_t)(band * per_tile));
    if (st != NPU_OK) {
        free(own);
        return st;
    }
    float *buf = ctx->conv_buf;
    j.xc = buf;
    if (whole) {
        j.v = buf + xc_floats;
        j.mo = j.v + 16 * j.T * j.Cp;
    }
    const int64_t P = j.OH * j.OW;
    for (int64_t n = 0; n < a->N; n++) {
        j.x = a->x + n * j.C * j.H * j.W;
        j.y = a->y + n * j.M * P;
        j.res_img = a->res ? a->res + n * j.M * P : NULL;
        /* banded: the copy's rows and the bands in one contiguous part per thread (both in
         * plane order), so that a thread's bands read mostly the rows it copied (2 threads:
         * 64 x 56x56 392-397 -> 344-348 us, 128 x 28x28 360-366 -> 319 us, against both
         * jobs on the shared counter) */
        if (!whole) {
            cpu_parallel_for_px(ctx, j.Hp, 4, cw_copy_task, &j);
            cpu_parallel_for_px(ctx, j.nbands, 1, cw_band_task, &j);
            continue;
        }
        cpu_parallel_for(ctx, j.Hp, 4, cw_copy_task, &j);
        cpu_parallel_for(ctx, j.T, 8, cw_input_task, &j);
        cpu_parallel_for(ctx, 16 * j.nmb, 1, cw_product_task, &j);
        cpu_parallel_for(ctx, NPU_DIV_ROUND_UP(j.T, (int64_t)CW_SEG) * j.nmb, 1, cw_output_task,
                         &j);
    }
    free(own);
    return NPU_OK;
#else
    (void)a;
    (void)u;
    return KUNSUP("no Winograd convolution kernel on this CPU");
#endif
}
