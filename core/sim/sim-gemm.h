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

/* The fp32 kernels; all give the same bits (sim-gemm.c). */
enum sim_gemm_path { SIM_GEMM_C = 0, SIM_GEMM_AVX2 = 1, SIM_GEMM_AVX512 = 2 };

/* C[M][N] = A[M][K] * B[K][N], binary32: each output from +0 by fmaf over
 * ascending k. False only when out of memory. */
bool sim_sgemm(size_t M, size_t N, size_t K, const float *A, const float *B, float *C);
/* The path sim_sgemm takes; force >= 0 selects that one (capped at what the
 * CPU has) for every later call, -1 only asks. For tests and benchmarks. */
enum sim_gemm_path sim_sgemm_path(int force);
const char *sim_sgemm_path_name(enum sim_gemm_path p);
/* C[M][N] = A[M][K] * B[K][N], exact; false only when out of memory. */
bool sim_igemm(size_t M, size_t N, size_t K, const int32_t *A, const int32_t *B, int64_t *C);
bool sim_gemm_has_blas(void);

#endif /* SIM_GEMM_H */
