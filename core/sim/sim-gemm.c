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
 * B is packed per panel of NR columns into [K][NR] (zero-padded on the right); the kernel
 * reads MR rows of A in place (row stride lda; the last partial row block is copied into a
 * zero-padded MR-row buffer), keeps an MR x NR tile of sums in registers and runs
 * k = 0 .. K-1 once. Padding only feeds lanes that are never stored. */

enum { MR = 6, NR_MAX = 32 };

typedef void (*sim_kernel_fn)(size_t K, const float *a, size_t lda, const float *bp, float *tile);

/* The reference: each of the MR x nr sums in ascending k, fmaf per product. */
static void
kernel_c(size_t K, const float *a, size_t lda, const float *bp, float *tile, size_t nr)
{
    for (size_t j = 0; j < (size_t)MR * nr; j++)
        tile[j] = 0.0f;
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
kernel_c16(size_t K, const float *a, size_t lda, const float *bp, float *tile)
{
    kernel_c(K, a, lda, bp, tile, 16);
}

#ifdef SIM_GEMM_X86
__attribute__((target("avx2,fma"))) static void
kernel_avx2(size_t K, const float *a, size_t lda, const float *bp, float *tile)
{
    __m256 c[MR][2];
    for (int r = 0; r < MR; r++)
        c[r][0] = c[r][1] = _mm256_setzero_ps();
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
}

__attribute__((target("avx512f"))) static void
kernel_avx512(size_t K, const float *a, size_t lda, const float *bp, float *tile)
{
    __m512 c[MR][2];
    for (int r = 0; r < MR; r++)
        c[r][0] = c[r][1] = _mm512_setzero_ps();
    for (size_t k = 0; k < K; k++) {
        __m512 b0 = _mm512_loadu_ps(bp + k * 32), b1 = _mm512_loadu_ps(bp + k * 32 + 16);
        for (int r = 0; r < MR; r++) {
            __m512 av = _mm512_set1_ps(a[r * lda + k]);
            c[r][0] = _mm512_fmadd_ps(av, b0, c[r][0]);
            c[r][1] = _mm512_fmadd_ps(av, b1, c[r][1]);
        }
    }
    for (int r = 0; r < MR; r++) {
        _mm512_storeu_ps(tile + r * 32, c[r][0]);
        _mm512_storeu_ps(tile + r * 32 + 16, c[r][1]);
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

bool
sim_sgemm(size_t M, size_t N, size_t K, const float *A, const float *B, float *C)
{
    enum sim_gemm_path path = sim_sgemm_path(-1);
    sim_kernel_fn kern = kernel_c16;
    size_t nr = 16;
#ifdef SIM_GEMM_X86
    if (path == SIM_GEMM_AVX512) {
        kern = kernel_avx512;
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
    float *bp = malloc((nr * K + 1) * sizeof(float));
    float *ar = malloc((MR * K + 1) * sizeof(float)); /* the last rows, zero-padded */
    float tile[MR * NR_MAX];
    if (!bp || !ar) {
        free(bp);
        free(ar);
        return false;
    }
    if (mrest) {
        memcpy(ar, A + mfull * K, mrest * K * sizeof(float));
        memset(ar + mrest * K, 0, (MR - mrest) * K * sizeof(float));
    }
    for (size_t n0 = 0; n0 < N; n0 += nr) {
        size_t nn = N - n0 < nr ? N - n0 : nr;
        for (size_t k = 0; k < K; k++) {
            memcpy(bp + k * nr, B + k * N + n0, nn * sizeof(float));
            for (size_t n = nn; n < nr; n++)
                bp[k * nr + n] = 0.0f;
        }
        for (size_t i = 0; i < M; i += MR) {
            kern(K, i < mfull ? A + i * K : ar, K, bp, tile);
            for (size_t r = 0; r < MR && i + r < M; r++)
                memcpy(C + (i + r) * N + n0, tile + r * nr, nn * sizeof(float));
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
