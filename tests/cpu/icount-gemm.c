// SPDX-License-Identifier: MIT
/*
 * icount-gemm.c: the probe of scripts/icount-gemm-aarch64.py. One single-threaded fp32
 * cpu_sgemm call of M x N x K on a chosen path, so that qemu-aarch64 can count the guest
 * instructions it executes (an instruction count, never a speed measure: docs/performance.md,
 * "NEON fp32 GEMM on aarch64"). Built for aarch64 only.
 *
 *   icount-gemm M N K PATH [t]   PATH: own (the default kernel), blas, portable, none (no
 *                                call: the baseline); t: B stored transposed [N, K]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/cpu/npu-cpu-internal.h"

int
main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: icount-gemm M N K own|blas|portable|none [t]\n");
        return 2;
    }
    int64_t M = atoll(argv[1]), N = atoll(argv[2]), K = atoll(argv[3]);
    const char *path = argv[4];
    bool tb = argc > 5 && !strcmp(argv[5], "t");
    if (M <= 0 || N <= 0 || K <= 0 || M * K > (1 << 26) || K * N > (1 << 26) || M * N > (1 << 26)) {
        fprintf(stderr, "icount-gemm: sizes must be positive and at most 2^26 per operand\n");
        return 2;
    }
    float *A = malloc(sizeof(float) * (size_t)(M * K));
    float *B = malloc(sizeof(float) * (size_t)(K * N));
    float *C = malloc(sizeof(float) * (size_t)(M * N));
    if (!A || !B || !C) {
        fprintf(stderr, "icount-gemm: out of memory\n");
        free(A), free(B), free(C);
        return 1;
    }
    for (int64_t i = 0; i < M * K; i++)
        A[i] = (float)(i % 7) - 3;
    for (int64_t i = 0; i < K * N; i++)
        B[i] = (float)(i % 5) - 2;
    memset(C, 0, sizeof(float) * (size_t)(M * N));
    cpu_gemm_use_blas(!strcmp(path, "blas"));
    if (!strcmp(path, "portable"))
        cpu_gemm_kernel_width(16);
    if (strcmp(path, "none"))
        cpu_sgemm(false, tb, M, N, K, 1.0f, A, K, B, tb ? K : N, 0.0f, C, N);
    printf("%g\n", (double)C[M * N - 1]);
    free(A), free(B), free(C);
    return 0;
}
