/* SPDX-License-Identifier: MIT */
/*
 * sim-gemm.c: the matrix products behind the simulated MAC array.
 *
 * Float: C[M][N] = A[M][K] * B[K][N] in binary32, in one fixed order that does
 * not depend on the host (docs/simulator.md, "Summation order"): every output
 * starts at +0.0f and takes its K products in ascending k, one fused
 * multiply-add per product, c = fmaf(a[i][k], b[k][n], c). Nothing is split
 * over K, so no thread count, CPU model or library changes a bit. The
 * AVX-512F and AVX2+FMA kernels (x86-64, chosen at run time) only vectorise
 * across output columns and rows: each lane runs the same scalar recurrence,
 * and IEEE fma is exactly specified, so they equal the plain C kernel (fmaf)
 * bit for bit; sim_sgemm_path() forces one path so tests can check that. The
 * simulator feeds fp16 values widened to fp32 (exact), so every product is
 * exact in fp32 (11-bit by 11-bit significands need 22 bits <= 24) and the
 * fused step equals a separate multiply and add; only the order of the fp32
 * additions matters, and it is the one above. The hardware's own reduction
 * order is not documented (facts: fp16 accumulates wide and is delivered as
 * fp32): ours is a choice, equal to the hardware's exactly whenever the
 * partial sums are representable (the integer-valued case MTX observed on
 * hardware, facts Appendix A.1) and within fp32 rounding otherwise.
 *
 * Integer: C[M][N] = sum of int32 products, exact in 64 bits. With BLAS it
 * runs as dgemm: int8 and int16 products (< 2^31) summed over fewer than 2^22
 * terms stay below 2^53, so binary64 is exact in any order and the result
 * does not depend on BLAS's blocking or threads.
 */
#include "sim-gemm.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define SIM_GEMM_X86 1
#include <immintrin.h>
#endif

#ifdef SIM_HAVE_CBLAS
#include <cblas.h>
#endif

bool
sim_gemm_has_blas(void)
{
#ifdef SIM_HAVE_CBLAS
    return true;
#else
    return false;
#endif
}

/* ---- the fp32 GEMM: one fixed summation order ----------------------------------------------
 * B is packed per panel of NR columns into [K][NR] (zero-padded on the right; on AVX-512 a
 * last panel of at most 16 columns is packed 16 wide for a one-vector-per-row kernel), a
 * group of panels of about 512 KiB at a time. Within a group, k runs in blocks of KC: for
 * each panel's [KC][NR] block, every row block of A goes by (MR rows read in place, row
 * stride lda; the last partial row block is copied into a zero-padded MR-row buffer); the
 * kernel keeps an MR x NR tile of sums in registers, starting from +0 on the first k block
 * and from the sums it stored in C on the later ones, so each output still takes its
 * products in ascending k. Padding only feeds lanes that are never stored. */

enum { MR = 6 };

typedef void (*sim_kernel_fn)(size_t K, const float *a, size_t lda, const float *bp, float *C,
                              size_t ldc, size_t rows, size_t cols, bool acc);

/* A kernel's tile starts from +0, or (acc: a later block of k) from the sums it stored in C. */
static void
tile_load(float *tile, size_t nr, const float *C, size_t ldc, size_t rows, size_t cols, bool acc)
{
    for (size_t r = 0; r < MR; r++)
        for (size_t n = 0; n < nr; n++)
            tile[r * nr + n] = acc && r < rows && n < cols ? C[r * ldc + n] : 0.0f;
}

/* The rows x cols corner of a kernel's MR x nr tile into C. */
static void
tile_store(const float *tile, size_t nr, float *C, size_t ldc, size_t rows, size_t cols)
{
    for (size_t r = 0; r < rows; r++)
        for (size_t n = 0; n < cols; n++)
            C[r * ldc + n] = tile[r * nr + n];
}

/* The reference: each of the MR x nr sums in ascending k, fmaf per product. */
static void
kernel_c(size_t K, const float *a, size_t lda, const float *bp, float *tile, size_t nr)
{
    for (size_t k = 0; k < K; k++) {
        const float *b = bp + k * nr;
        for (size_t r = 0; r < MR; r++) {
            float *restrict t = tile + r * nr;
            float av = a[r * lda + k];
            for (size_t n = 0; n < nr; n++)
                t[n] = fmaf(av, b[n], t[n]);
        }
    }
}

static void
kernel_c16(size_t K, const float *a, size_t lda, const float *bp, float *C, size_t ldc, size_t rows,
           size_t cols, bool acc)
{
    float tile[MR * 16];
    tile_load(tile, 16, C, ldc, rows, cols, acc);
    kernel_c(K, a, lda, bp, tile, 16);
    tile_store(tile, 16, C, ldc, rows, cols);
}

#ifdef SIM_GEMM_X86
__attribute__((target("avx2,fma"))) static void
kernel_avx2(size_t K, const float *a, size_t lda, const float *bp, float *C, size_t ldc,
            size_t rows, size_t cols, bool acc)
{
    float tile[MR * 16];
    tile_load(tile, 16, C, ldc, rows, cols, acc);
    __m256 c[MR][2];
    for (int r = 0; r < MR; r++) {
        c[r][0] = _mm256_loadu_ps(tile + r * 16);
        c[r][1] = _mm256_loadu_ps(tile + r * 16 + 8);
    }
    for (size_t k = 0; k < K; k++) {
        __m256 b0 = _mm256_loadu_ps(bp + k * 16), b1 = _mm256_loadu_ps(bp + k * 16 + 8);
        for (int r = 0; r < MR; r++) {
            __m256 av = _mm256_broadcast_ss(a + r * lda + k);
            c[r][0] = _mm256_fmadd_ps(av, b0, c[r][0]);
            c[r][1] = _mm256_fmadd_ps(av, b1, c[r][1]);
        }
    }
    for (int r = 0; r < MR; r++) {
        _mm256_storeu_ps(tile + r * 16, c[r][0]);
        _mm256_storeu_ps(tile + r * 16 + 8, c[r][1]);
    }
    tile_store(tile, 16, C, ldc, rows, cols);
}

/* The AVX-512 kernels store the rows x cols corner of their tile straight into C (row stride
 * ldc) with masked stores: no tile copy. */
__attribute__((target("avx512f"))) static void
kernel_avx512(size_t K, const float *a, size_t lda, const float *bp, float *C, size_t ldc,
              size_t rows, size_t cols, bool acc)
{
    __mmask16 m0 = cols >= 16 ? 0xffff : (__mmask16)((1u << cols) - 1);
    __mmask16 m1 = cols >= 32 ? 0xffff : cols > 16 ? (__mmask16)((1u << (cols - 16)) - 1) : 0;
    __m512 c[MR][2];
    for (size_t r = 0; r < MR; r++) {
        bool on = acc && r < rows;
        c[r][0] = on ? _mm512_maskz_loadu_ps(m0, C + r * ldc) : _mm512_setzero_ps();
        c[r][1] = on ? _mm512_maskz_loadu_ps(m1, C + r * ldc + 16) : _mm512_setzero_ps();
    }
    for (size_t k = 0; k < K; k++) {
        __m512 b0 = _mm512_loadu_ps(bp + k * 32), b1 = _mm512_loadu_ps(bp + k * 32 + 16);
        for (int r = 0; r < MR; r++) {
            __m512 av = _mm512_set1_ps(a[r * lda + k]);
            c[r][0] = _mm512_fmadd_ps(av, b0, c[r][0]);
            c[r][1] = _mm512_fmadd_ps(av, b1, c[r][1]);
        }
    }
    for (size_t r = 0; r < rows; r++) {
        _mm512_mask_storeu_ps(C + r * ldc, m0, c[r][0]);
        _mm512_mask_storeu_ps(C + r * ldc + 16, m1, c[r][1]);
    }
}

/* The last panel when it is at most 16 columns wide (N = 196: 4 columns): one vector per row,
 * half the work of a zero-padded 32-wide panel, the same recurrence per lane. */
__attribute__((target("avx512f"))) static void
kernel_avx512_16(size_t K, const float *a, size_t lda, const float *bp, float *C, size_t ldc,
                 size_t rows, size_t cols, bool acc)
{
    __mmask16 m0 = cols >= 16 ? 0xffff : (__mmask16)((1u << cols) - 1);
    __m512 c[MR];
    for (size_t r = 0; r < MR; r++)
        c[r] = acc && r < rows ? _mm512_maskz_loadu_ps(m0, C + r * ldc) : _mm512_setzero_ps();
    for (size_t k = 0; k < K; k++) {
        __m512 b0 = _mm512_loadu_ps(bp + k * 16);
        for (int r = 0; r < MR; r++)
            c[r] = _mm512_fmadd_ps(_mm512_set1_ps(a[r * lda + k]), b0, c[r]);
    }
    for (size_t r = 0; r < rows; r++)
        _mm512_mask_storeu_ps(C + r * ldc, m0, c[r]);
}

/* One panel of B, columns n0 .. n0 + nn - 1, packed as [K][w] (zero-padded on the right). */
__attribute__((target("avx512f"))) static void
pack_avx512(float *dst, const float *B, size_t N, size_t K, size_t n0, size_t nn, size_t w)
{
    __mmask16 m0 = nn >= 16 ? 0xffff : (__mmask16)((1u << nn) - 1);
    __mmask16 m1 = nn >= 32 ? 0xffff : nn > 16 ? (__mmask16)((1u << (nn - 16)) - 1) : 0;
    for (size_t k = 0; k < K; k++) {
        const float *src = B + k * N + n0;
        _mm512_storeu_ps(dst + k * w, _mm512_maskz_loadu_ps(m0, src));
        if (w == 32)
            _mm512_storeu_ps(dst + k * w + 16, _mm512_maskz_loadu_ps(m1, src + 16));
    }
}
#endif

static enum sim_gemm_path
path_detect(void)
{
#ifdef SIM_GEMM_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f"))
        return SIM_GEMM_AVX512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return SIM_GEMM_AVX2;
#endif
    return SIM_GEMM_C;
}

static int path_forced = -1; /* -1: the best the CPU has */

enum sim_gemm_path
sim_sgemm_path(int force)
{
    if (force >= 0) {
        enum sim_gemm_path best = path_detect();
        if ((enum sim_gemm_path)force > best)
            force = best;
        __atomic_store_n(&path_forced, force, __ATOMIC_RELAXED);
    }
    int f = __atomic_load_n(&path_forced, __ATOMIC_RELAXED);
    return f >= 0 ? (enum sim_gemm_path)f : path_detect();
}

const char *
sim_sgemm_path_name(enum sim_gemm_path p)
{
    switch (p) {
    case SIM_GEMM_AVX512: return "AVX-512F (6x32 fma, ascending k)";
    case SIM_GEMM_AVX2: return "AVX2+FMA (6x16 fma, ascending k)";
    case SIM_GEMM_C: break;
    }
    return "C (fmaf, ascending k)";
}

/* Packed B panels per group: about 512 KiB, so that a group stays in the L2 cache while the
 * row blocks of A go by (each block of MR rows is then read from L1 once per panel instead of
 * A being streamed again for every panel). */
enum { GROUP_BYTES = 512 << 10, KC = 128 };

static size_t
zmin(size_t a, size_t b)
{
    return a < b ? a : b;
}

static size_t
zmax(size_t a, size_t b)
{
    return a > b ? a : b;
}

bool
sim_sgemm(size_t M, size_t N, size_t K, const float *A, const float *B, float *C)
{
    enum sim_gemm_path path = sim_sgemm_path(-1);
    sim_kernel_fn kern = kernel_c16, kern_tail = NULL;
    size_t nr = 16;
#ifdef SIM_GEMM_X86
    if (path == SIM_GEMM_AVX512) {
        kern = kernel_avx512;
        kern_tail = kernel_avx512_16;
        nr = 32;
    } else if (path == SIM_GEMM_AVX2) {
        kern = kernel_avx2;
    }
#else
    (void)path;
#endif
    if (!M || !N)
        return true;
    size_t mfull = M / MR * MR, mrest = M - mfull;
    size_t panels = (N + nr - 1) / nr;
    size_t last_w = N - (panels - 1) * nr; /* the last panel's columns */
    if (last_w > 16)
        kern_tail = NULL;
    size_t per_group = zmax((size_t)GROUP_BYTES / (nr * K * sizeof(float) + 1), (size_t)1);
    per_group = zmin(per_group, panels);
    float *bp = malloc((per_group * nr * K + 1) * sizeof(float));
    float *ar = malloc((MR * K + 1) * sizeof(float)); /* the last rows, zero-padded */
    if (!bp || !ar) {
        free(bp);
        free(ar);
        return false;
    }
    if (mrest) {
        memcpy(ar, A + mfull * K, mrest * K * sizeof(float));
        memset(ar + mrest * K, 0, (MR - mrest) * K * sizeof(float));
    }
    for (size_t g0 = 0; g0 < panels; g0 += per_group) {
        size_t gn = zmin(per_group, panels - g0);
        /* pack the group's panels: panel q at bp + q * nr * K, [K][w] with w = nr, or 16 for
         * a narrow last panel on the 16-wide kernel; zero-padded on the right */
        for (size_t q = 0; q < gn; q++) {
            size_t n0 = (g0 + q) * nr, nn = zmin(N - n0, nr);
            size_t w = (g0 + q == panels - 1 && kern_tail) ? 16 : nr;
            float *dst = bp + q * nr * K;
#ifdef SIM_GEMM_X86
            if (path == SIM_GEMM_AVX512) {
                pack_avx512(dst, B, N, K, n0, nn, w);
                continue;
            }
#endif
            for (size_t k = 0; k < K; k++) {
                memcpy(dst + k * w, B + k * N + n0, nn * sizeof(float));
                for (size_t n = nn; n < w; n++)
                    dst[k * w + n] = 0.0f;
            }
        }
        /* k in blocks of KC: a block of a panel ([KC][w], 16 KiB) stays in L1 while the row
         * blocks go by; each sum goes on from where the previous block stored it, so every
         * output still takes its products in ascending k from +0 */
        for (size_t k0 = 0; k0 < K; k0 += KC) {
            size_t kc = zmin((size_t)KC, K - k0);
            for (size_t q = 0; q < gn; q++) {
                size_t n0 = (g0 + q) * nr, nn = zmin(N - n0, nr);
                bool narrow = g0 + q == panels - 1 && kern_tail;
                size_t w = narrow ? 16 : nr;
                const float *b = bp + q * nr * K + k0 * w;
                for (size_t i = 0; i < M; i += MR) {
                    const float *a = (i < mfull ? A + i * K : ar) + k0;
                    size_t rows = zmin((size_t)MR, M - i);
                    (narrow ? kern_tail : kern)(kc, a, K, b, C + i * N + n0, N, rows, nn, k0 > 0);
                }
            }
        }
    }
    free(bp);
    free(ar);
    return true;
}

bool
sim_igemm(size_t M, size_t N, size_t K, const int32_t *A, const int32_t *B, int64_t *C)
{
#ifdef SIM_HAVE_CBLAS
    double *a = malloc(M * K * sizeof(double));
    double *b = malloc(K * N * sizeof(double));
    double *c = malloc(M * N * sizeof(double));
    if (!a || !b || !c) {
        free(a);
        free(b);
        free(c);
        return false;
    }
    for (size_t i = 0; i < M * K; i++)
        a[i] = A[i];
    for (size_t i = 0; i < K * N; i++)
        b[i] = B[i];
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)M, (int)N, (int)K, 1.0, a, (int)K,
                b, (int)N, 0.0, c, (int)N);
    for (size_t i = 0; i < M * N; i++)
        C[i] = (int64_t)c[i];
    free(a);
    free(b);
    free(c);
    return true;
#else
    for (size_t i = 0; i < M; i++) {
        int64_t *restrict c = C + i * N;
        memset(c, 0, N * sizeof(*c));
        const int32_t *a = A + i * K;
        for (size_t k = 0; k < K; k++) {
            int64_t av = a[k];
            if (!av)
                continue;
            const int32_t *restrict b = B + k * N;
            for (size_t n = 0; n < N; n++)
                c[n] += av * b[n];
        }
    }
    return true;
#endif
}
