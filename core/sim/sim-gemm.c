/* SPDX-License-Identifier: MIT */
/*
 * sim-gemm.c: the matrix products behind the simulated MAC array.
 *
 * Float: C[M][N] = A[M][K] * B[K][N] in binary32. The simulator feeds it fp16
 * values widened to fp32 (exact), so every product is exact in fp32 (11-bit
 * by 11-bit significands need 22 bits <= 24); only the order of the fp32
 * additions is implementation-defined (OpenBLAS blocks and uses FMA, which
 * with exact products equals a separate add). The hardware's reduction order
 * is not documented either; results agree with any order within fp32
 * rounding, and exactly whenever the partial sums are representable (the
 * integer-valued case MTX observed on hardware, facts Appendix A.1).
 *
 * Integer: C[M][N] = sum of int32 products, exact in 64 bits. With BLAS it
 * runs as dgemm: int8 and int16 products (< 2^31) summed over fewer than 2^22
 * terms stay below 2^53, so binary64 is exact.
 */
#include "sim-gemm.h"

#include <stdlib.h>
#include <string.h>

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

void
sim_sgemm(size_t M, size_t N, size_t K, const float *A, const float *B, float *C)
{
#ifdef SIM_HAVE_CBLAS
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)M, (int)N, (int)K, 1.0f, A, (int)K,
                B, (int)N, 0.0f, C, (int)N);
#else
    /* Blocked so that a row block of C and a panel of B stay in cache; the
     * innermost loop runs over contiguous N and vectorises. Each C element
     * sums its K products in increasing k order. */
    const size_t NB = 512, KB = 128;
    for (size_t i = 0; i < M; i++)
        memset(C + i * N, 0, N * sizeof(float));
    for (size_t n0 = 0; n0 < N; n0 += NB) {
        size_t n1 = n0 + NB < N ? n0 + NB : N;
        for (size_t k0 = 0; k0 < K; k0 += KB) {
            size_t k1 = k0 + KB < K ? k0 + KB : K;
            for (size_t i = 0; i < M; i++) {
                float *restrict c = C + i * N;
                const float *a = A + i * K;
                for (size_t k = k0; k < k1; k++) {
                    float av = a[k];
                    const float *restrict b = B + k * N;
                    for (size_t n = n0; n < n1; n++)
                        c[n] += av * b[n];
                }
            }
        }
    }
#endif
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
