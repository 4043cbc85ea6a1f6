/* SPDX-License-Identifier: MIT */
/*
 * sim-gemm.h: row-major matrix products for the simulated MAC array
 * (sim-gemm.c explains the precision argument).
 */
#ifndef SIM_GEMM_H
#define SIM_GEMM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* C[M][N] = A[M][K] * B[K][N], binary32 accumulation. */
void sim_sgemm(size_t M, size_t N, size_t K, const float *A, const float *B, float *C);
/* C[M][N] = A[M][K] * B[K][N], exact; false only when out of memory. */
bool sim_igemm(size_t M, size_t N, size_t K, const int32_t *A, const int32_t *B, int64_t *C);
bool sim_gemm_has_blas(void);

#endif /* SIM_GEMM_H */
