/* SPDX-License-Identifier: MIT */
/*
 * npu-cpu-gemm-neon.h: the aarch64 fp32 GEMM of core/cpu/npu-cpu-gemm-neon.c (arm_neon.h
 * intrinsics, 8x12 micro-kernel), called by the GEMM engine in npu-cpu-gemm.c. The file is
 * compiled only for aarch64 (meson defines NPU_CPU_NEON_GEMM there).
 */
#ifndef NPU_CPU_GEMM_NEON_H
#define NPU_CPU_GEMM_NEON_H

#include <stdbool.h>
#include <stdint.h>

#define CPU_NEON_MR 8  /* rows of the micro-tile */
#define CPU_NEON_NR 12 /* columns of the micro-tile */

/* C[M,N] = alpha op(A) op(B) + beta C, row-major, op = transpose when ta/tb; beta 0 ignores C
 * (a NaN there is not kept). K >= 1, M, N >= 1. Returns false (C untouched) only when the
 * per-thread packing buffers cannot be allocated; the caller then takes another path. */
bool cpu_sgemm_neon(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                    int64_t lda, const float *B, int64_t ldb, float beta, float *C, int64_t ldc);

/* The same product for few rows (M <= 4, more are done 4 at a time) with B transposed (stored
 * [N, K]) and A not: dot products, each row of B read once. Any K >= 0. */
void cpu_sgemm_neon_small_nt(int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                             int64_t lda, const float *B, int64_t ldb, float beta, float *C,
                             int64_t ldc);

#endif /* NPU_CPU_GEMM_NEON_H */
