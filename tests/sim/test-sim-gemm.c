/* SPDX-License-Identifier: MIT */
/*
 * test-sim-gemm.c: the simulator's fp32 GEMM has one summation order
 * (core/sim/sim-gemm.c, docs/simulator.md "Summation order"): every output
 * from +0.0f, fmaf per product in ascending k. Each kernel the host has (plain
 * C, AVX2+FMA, AVX-512F), forced in turn, must equal an independent scalar
 * loop in that order bit for bit, over edge shapes (M not a multiple of the
 * 6-row panel, N not a multiple of the 16/32-column panel, K = 1 and odd K)
 * and over inputs where order and fusing both matter: general fp32 values of
 * mixed magnitude, plus fp16-valued ones (what the simulator feeds it) where
 * a reordered sum still shows. The test also checks that it would notice a
 * different order (descending k gives other bits on the same data).
 */
#include <math.h>

#include "npu-test.h"
#include "sim-gemm.h"

static uint32_t
xs(uint32_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return *s;
}

static float
rnd(uint32_t *s, bool f16)
{
    int v = (int)(xs(s) % 2001) - 1000;
    if (f16) /* 1/1024 steps in [-1, 1]: exactly representable in fp16 */
        return (float)v / 1024.0f;
    /* mixed magnitudes so that rounding in the sums depends on their order */
    return (float)v / 997.0f * powf(2.0f, (float)(int)(xs(s) % 17) - 8);
}

static void
reference(size_t M, size_t N, size_t K, const float *A, const float *B, float *C, bool desc)
{
    for (size_t i = 0; i < M; i++)
        for (size_t n = 0; n < N; n++) {
            float c = 0.0f;
            for (size_t j = 0; j < K; j++) {
                size_t k = desc ? K - 1 - j : j;
                c = fmaf(A[i * K + k], B[k * N + n], c);
            }
            C[i * N + n] = c;
        }
}

int
main(void)
{
    static const size_t shapes[][3] = {
        {1, 1, 1},      {6, 16, 8},    {7, 17, 33},  {13, 45, 100}, {64, 33, 1},  {5, 3, 257},
        {12, 64, 768},  {1, 97, 64},   {19, 32, 31}, {13, 36, 40},  {7, 196, 96}, {6, 48, 5},
        {8, 1000, 200}, {13, 20, 300}, {7, 40, 129}, {25, 196, 130}};
    enum sim_gemm_path best = sim_sgemm_path(-1);
    printf("host's best path: %s\n", sim_sgemm_path_name(best));
    uint32_t seed = 7;
    int paths_run = 0;
    bool order_seen = false;
    for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++)
        for (int f16 = 0; f16 < 2; f16++) {
            size_t M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
            float *A = malloc(M * K * sizeof(float)), *B = malloc(K * N * sizeof(float));
            float *want = malloc(M * N * sizeof(float)), *got = malloc(M * N * sizeof(float));
            float *desc = malloc(M * N * sizeof(float));
            CHECK(A && B && want && got && desc);
            for (size_t i = 0; i < M * K; i++)
                A[i] = rnd(&seed, f16);
            for (size_t i = 0; i < K * N; i++)
                B[i] = rnd(&seed, f16);
            reference(M, N, K, A, B, want, false);
            reference(M, N, K, A, B, desc, true);
            if (memcmp(want, desc, M * N * sizeof(float)))
                order_seen = true;
            for (int p = SIM_GEMM_C; p <= (int)best; p++) {
                CHECK_EQ_INT(p, (int)sim_sgemm_path(p));
                memset(got, 0xff, M * N * sizeof(float)); /* NaN: every output must be written */
                CHECK(sim_sgemm(M, N, K, A, B, got));
                if (memcmp(want, got, M * N * sizeof(float))) {
                    size_t bad = 0;
                    while (!memcmp(want + bad, got + bad, sizeof(float)))
                        bad++;
                    fprintf(stderr,
                            "%s, M=%zu N=%zu K=%zu %s: output %zu is %a, ascending-k fmaf "
                            "gives %a\n",
                            sim_sgemm_path_name((enum sim_gemm_path)p), M, N, K,
                            f16 ? "fp16 values" : "fp32 values", bad, got[bad], want[bad]);
                    CHECK(0);
                }
                paths_run++;
            }
            sim_sgemm_path((int)best);
            free(A);
            free(B);
            free(want);
            free(got);
            free(desc);
        }
    /* the data is such that another order would be caught */
    CHECK(order_seen);
    printf("%d shape x input x path runs equal the ascending-k fmaf reference bit for bit\n",
           paths_run);
    /* empty products: nothing written, no failure */
    CHECK(sim_sgemm(0, 4, 4, NULL, NULL, NULL));
    return npu_test_done("test-sim-gemm");
}
