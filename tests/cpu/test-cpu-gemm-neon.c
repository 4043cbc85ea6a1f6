// SPDX-License-Identifier: MIT
/*
 * test-cpu-gemm-neon.c: the fp32 GEMM micro-kernels of our own path (BLAS switched off)
 * against a double-precision loop, over odd M/N/K that leave partial 8x12 tiles, K across the
 * 256-deep K block, M across the 192-row A block, N across the 1008-column B block, all four
 * transposes, M <= 4 (the few-rows paths), alpha, beta 0 (C full of NaN, which must not
 * survive), 1 and 0.25, padded leading dimensions, and the bias/activation epilogue through
 * the batched driver. On aarch64 (the CI's qemu stage) it runs the NEON kernels
 * (core/cpu/npu-cpu-gemm-neon.c) and then the portable 6x16 one; elsewhere the kernels the CPU
 * has. Also checks the aarch64 rule that judges OpenBLAS's core set (cpu_openblas_arm_misfit),
 * which is pure and runs anywhere.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/cpu/npu-cpu-internal.h"
#include "cpu-test-util.h"
#include "npu-test.h"

static int cases_run;

static void
fill(float *p, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        p[i] = (float)tt_uniform(-1, 1);
}

/* one C = alpha op(A) op(B) + beta C, checked element by element against double */
static void
check_one(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, float beta)
{
    int64_t lda = (ta ? M : K) + 3, ldb = (tb ? K : N) + 1, ldc = N + 5;
    int64_t arows = ta ? K : M, brows = tb ? N : K;
    float *A = malloc(sizeof(float) * (size_t)(arows * lda));
    float *B = malloc(sizeof(float) * (size_t)(brows * ldb));
    float *C = malloc(sizeof(float) * (size_t)(M * ldc));
    float *C0 = malloc(sizeof(float) * (size_t)(M * ldc));
    if (!A || !B || !C || !C0) {
        CHECK(!"out of memory");
        goto out;
    }
    fill(A, arows * lda);
    fill(B, brows * ldb);
    fill(C0, M * ldc);
    if (beta == 0.0f)
        for (int64_t i = 0; i < M * ldc; i++)
            C0[i] = NAN; /* beta 0 ignores C, NaN included */
    memcpy(C, C0, sizeof(float) * (size_t)(M * ldc));
    cpu_sgemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    int bad = 0;
    for (int64_t i = 0; i < M; i++) {
        for (int64_t j = 0; j < N; j++) {
            double acc = 0, mag = 0;
            for (int64_t k = 0; k < K; k++) {
                double p = (double)(ta ? A[k * lda + i] : A[i * lda + k]) *
                           (double)(tb ? B[j * ldb + k] : B[k * ldb + j]);
                acc += p;
                mag += fabs(p);
            }
            double c0 = beta == 0.0f ? 0.0 : (double)C0[i * ldc + j];
            double want = alpha * acc + beta * c0;
            double tol = 4e-6 * (fabs(alpha) * mag + fabs(beta * c0)) + 1e-6;
            double got = C[i * ldc + j];
            if (!(fabs(got - want) <= tol) && bad++ < 3)
                printf("  ta=%d tb=%d %lldx%lldx%lld alpha=%g beta=%g: C[%lld,%lld] = %.7g, "
                       "expected %.7g\n",
                       ta, tb, (long long)M, (long long)N, (long long)K, alpha, beta, (long long)i,
                       (long long)j, got, want);
        }
        /* the padding between rows is never written */
        for (int64_t j = N; j < ldc; j++)
            if (memcmp(&C[i * ldc + j], &C0[i * ldc + j], sizeof(float)) && bad++ < 3)
                printf("  C padding [%lld,%lld] was written\n", (long long)i, (long long)j);
    }
    CHECK_EQ_INT(0, bad);
    cases_run++;
out:
    free(A), free(B), free(C), free(C0);
}

static void
test_shapes(void)
{
    static const int64_t shapes[][3] = {
        {5, 1, 1},
        {8, 12, 1},
        {9, 13, 7},
        {8, 24, 4},
        {17, 25, 33},
        {16, 36, 256},
        {33, 47, 257},
        {24, 12, 515},
        {200, 30, 20},
        {7, 1013, 5},
        {64, 96, 128},
        {3, 29, 31},
        /* few rows (M <= 4, A not transposed: dot products when B is transposed) */
        {1, 1, 1},
        {1, 37, 19},
        {2, 5, 64},
        {4, 9, 3},
        {4, 8, 8},
        {1, 300, 129},
    };
    for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++)
        for (int t = 0; t < 4; t++) {
            const int64_t M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
            check_one(t & 1, t & 2, M, N, K, 1.0f, 0.0f);
            /* the other alphas and betas on a subset of shapes, to stay fast under qemu */
            if (s % 3 == 0 || t == 3) {
                check_one(t & 1, t & 2, M, N, K, -0.5f, 1.0f);
                check_one(t & 1, t & 2, M, N, K, 1.5f, 0.25f);
            }
        }
}

/* the bias/activation epilogue through the batched driver, on a shape the kernel tiles */
static void
test_epilogue(void)
{
    const int64_t M = 37, N = 29, K = 45, batch = 2;
    float *A = malloc(sizeof(float) * (size_t)(batch * M * K));
    float *B = malloc(sizeof(float) * (size_t)(K * N));
    float *C = malloc(sizeof(float) * (size_t)(batch * M * N));
    float bc[29], br[37];
    int64_t a_off[2] = {0, M * K}, c_off[2] = {0, M * N};
    if (!A || !B || !C) {
        CHECK(!"out of memory");
        goto out;
    }
    fill(A, batch * M * K);
    fill(B, K * N);
    fill(bc, N);
    fill(br, M);
    struct cpu_act_spec act = {CPU_ACT_RELU, 0, 0};
    struct cpu_gemm_batch g = {
        .M = M,
        .N = N,
        .K = K,
        .alpha = 1.0f,
        .beta = 0.0f,
        .A = A,
        .B = B,
        .C = C,
        .lda = K,
        .ldb = N,
        .ldc = N,
        .a_off = a_off,
        .c_off = c_off,
        .batch = batch,
        .bias_col = bc,
        .bias_row = br,
        .act = &act,
    };
    cpu_gemm_batched(tctxn, &g);
    int bad = 0, zeros = 0;
    for (int64_t b = 0; b < batch; b++)
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                double acc = 0;
                for (int64_t k = 0; k < K; k++)
                    acc += (double)A[b * M * K + i * K + k] * (double)B[k * N + j];
                acc += bc[j] + br[i];
                double want = acc > 0 ? acc : 0;
                zeros += want == 0;
                bad += !(fabs(C[b * M * N + i * N + j] - want) <= 1e-4);
            }
    CHECK_EQ_INT(0, bad);
    CHECK(zeros > 0 && zeros < batch * M * N); /* the ReLU did something, not everything */
    cases_run++;
out:
    free(A), free(B), free(C);
}

static void
test_arm_rule(void)
{
    char why[256];
    /* OpenBLAS 0.3.21 on a Cortex-A76 (part 0xd0b, not in its table): generic fallback */
    CHECK(cpu_openblas_arm_misfit("armv8", 0xd0b, why, sizeof(why)));
    CHECK(strstr(why, "armv8") && strstr(why, "Cortex-A76"));
    CHECK(cpu_openblas_arm_misfit("armv8", -1, why, sizeof(why)));
    /* loaded on an RK3588 A55: little-core kernels, but the CPU has A76s */
    CHECK(cpu_openblas_arm_misfit("cortexa55", 0xd0b, why, sizeof(why)));
    CHECK(strstr(why, "cortexa55") != NULL);
    /* an all-A55 CPU, or one whose cores are unknown: the little-core set is right / trusted */
    CHECK(!cpu_openblas_arm_misfit("cortexa55", 0xd05, why, sizeof(why)));
    CHECK(!cpu_openblas_arm_misfit("cortexa53", -1, why, sizeof(why)));
    /* a set made for the CPU: trusted */
    CHECK(!cpu_openblas_arm_misfit("neoversen1", 0xd0c, why, sizeof(why)));
    CHECK(!cpu_openblas_arm_misfit("cortexa72", 0xd08, why, sizeof(why)));
    CHECK(!cpu_openblas_arm_misfit(NULL, -1, why, sizeof(why)));
    CHECK(why[0] != 0);
}

int
main(void)
{
    tctx_init();
    test_arm_rule();
    const char *why = NULL;
    const char *path = npu_cpu_gemm_path(&why);
    printf("fp32 GEMM path: %s (%s)\n", path, why ? why : "?");
    cpu_gemm_use_blas(false);
    int widths[3], nw = 0;
    widths[nw++] = cpu_gemm_kernel_width(0);
#if defined(__aarch64__)
    /* the NEON 8x12 kernel is the default on aarch64; then the portable 6x16 one */
    CHECK_EQ_INT(12, widths[0]);
    widths[nw++] = 16;
#else
    if (widths[0] == 32)
        widths[nw++] = 16;
#endif
    for (int w = 0; w < nw; w++) {
        int got = cpu_gemm_kernel_width(widths[w]);
        CHECK_EQ_INT(widths[w], got);
        printf("own kernel, %d columns wide\n", got);
        int before = cases_run;
        test_shapes();
        test_epilogue();
        printf("  %d products checked\n", cases_run - before);
    }
    cpu_gemm_kernel_width(widths[0]);
    cpu_gemm_use_blas(true);
    CHECK_EQ_INT(0, t_thread_mismatches);
    tctx_fini();
    return npu_test_done("test-cpu-gemm-neon");
}
