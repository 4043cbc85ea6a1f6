/* SPDX-License-Identifier: MIT */
/*
 * npu-test-matmul.h: the operands of an fp16 x fp16 -> fp32 matmul laid out
 * for the reference matmul program (npu_ref_matmul, NPU_REF_MATMUL_FP16_FP32)
 * as the device tests and the simulator's benchmark build them: A [M][K] as
 * the NC1HWC2 map of its transpose (C = K, H = M, W = 1), B [K][N] packed as
 * matmul weights, room for C [N][M] (fp32, NC1HWC2), all filled from one
 * trand() stream. Header-only, like npu-handprog.h it goes with.
 */
#ifndef NPU_TEST_MATMUL_H
#define NPU_TEST_MATMUL_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "npu-handprog.h"
#include "npu-layout.h"
#include "npu-refprog.h"
#include "npu-test.h"
#include "npu/npu-fp16.h"

/* the buffers' indices in npu_test_mm.bo (and the program's buffer ids) */
enum { NPU_TEST_MM_A, NPU_TEST_MM_B, NPU_TEST_MM_C, NPU_TEST_MM_NBUF };

struct npu_test_mm {
    uint32_t M, K, N;
    struct npu_weight_layout wl;
    size_t a_bytes, c_bytes;
    struct npu_bo *bo[NPU_TEST_MM_NBUF];
    uint16_t *a, *b; /* the host's fp16 A [M][K] and B [K][N] */
    /* made by the first npu_test_mm_worst(), kept for the next runs on the same operands:
     * the exact sum of the products and the sum of their magnitudes, [M][N] */
    double *ref, *mag;
};

/*
 * Creates the three buffers on DEV (BO_FLAGS) and fills A and B with fp16
 * values (trand(&seed) % 2001 - 1000) / SCALE, A's first. Failures are
 * counted as failed checks; free with npu_test_mm_free() either way.
 */
static inline void
npu_test_mm_operands(struct npu_device *dev, uint32_t M, uint32_t K, uint32_t N, uint32_t bo_flags,
                     uint32_t seed, float scale, struct npu_test_mm *t)
{
    memset(t, 0, sizeof(*t));
    t->M = M;
    t->K = K;
    t->N = N;
    CHECK_EQ_INT(NPU_OK, npu_weight_layout_init(&t->wl, 2, N, K, 1, 1, false));
    t->a_bytes = npu_nc1hwc2_bytes(2, K, M, 1);
    t->c_bytes = npu_nc1hwc2_bytes(4, N, M, 1);
    CHECK_EQ_INT(NPU_OK, npu_bo_create(dev, t->a_bytes, bo_flags, &t->bo[NPU_TEST_MM_A]));
    CHECK_EQ_INT(NPU_OK, npu_bo_create(dev, t->wl.total_bytes, bo_flags, &t->bo[NPU_TEST_MM_B]));
    CHECK_EQ_INT(NPU_OK, npu_bo_create(dev, t->c_bytes, bo_flags, &t->bo[NPU_TEST_MM_C]));
    t->a = malloc(2ull * M * K);
    t->b = malloc(2ull * K * N);
    uint16_t *at = malloc(2ull * M * K);
    if (!t->a || !t->b || !at || !t->bo[NPU_TEST_MM_A] || !t->bo[NPU_TEST_MM_B] ||
        !t->bo[NPU_TEST_MM_C]) {
        CHECK(!"npu_test_mm_operands: out of memory");
        free(at);
        return;
    }
    for (size_t i = 0; i < (size_t)M * K; i++)
        t->a[i] = npu_fp32_to_fp16(((int)(trand(&seed) % 2001) - 1000) / scale);
    for (size_t i = 0; i < (size_t)K * N; i++)
        t->b[i] = npu_fp32_to_fp16(((int)(trand(&seed) % 2001) - 1000) / scale);
    for (uint32_t m = 0; m < M; m++)
        for (uint32_t k = 0; k < K; k++)
            at[(size_t)k * M + m] = t->a[(size_t)m * K + k];
    CHECK_EQ_INT(NPU_OK, npu_nchw_to_nc1hwc2(npu_bo_map(t->bo[NPU_TEST_MM_A]), t->a_bytes, at, 2, 1,
                                             K, M, 1, 0));
    CHECK_EQ_INT(NPU_OK, npu_weight_pack_matmul(&t->wl, npu_bo_map(t->bo[NPU_TEST_MM_B]),
                                                t->wl.total_bytes, t->b, 0));
    free(at);
}

/* The reference matmul program of KIND (A.1 for fp16) over the three
 * buffers, appended to S. */
static inline enum npu_status
npu_test_mm_emit(struct npu_stream *s, enum npu_ref_matmul_kind kind, uint32_t M, uint32_t K,
                 uint32_t N)
{
    struct npu_ref_matmul p = {.kind = kind,
                               .m = M,
                               .k = K,
                               .n = N,
                               .input = {NPU_TEST_MM_A, 0},
                               .weight = {NPU_TEST_MM_B, 0},
                               .output = {NPU_TEST_MM_C, 0}};
    return npu_ref_matmul_emit(s, &p);
}

/*
 * The worst error of C (fp32 [N][M], the output's NCHW with W = 1) against
 * the exact sum of A's and B's fp16 products, in units of 1e-6 of the sum of
 * the products' magnitudes: at most K where C is within K fp32 roundings.
 * The sums are made once per operands (k ascending, in double: exact) and
 * kept, so that the runs of several programs on them compare for the price
 * of one reference.
 */
static inline double
npu_test_mm_worst(struct npu_test_mm *t, const float *c)
{
    uint32_t M = t->M, K = t->K, N = t->N;
    if (!t->ref) {
        t->ref = calloc((size_t)M * N, sizeof(double));
        t->mag = calloc((size_t)M * N, sizeof(double));
        double *bd = malloc(sizeof(double) * K * N);
        if (!t->ref || !t->mag || !bd) {
            CHECK(!"npu_test_mm_worst: out of memory");
            free(bd);
            return INFINITY;
        }
        for (size_t i = 0; i < (size_t)K * N; i++)
            bd[i] = npu_fp16_to_fp32(t->b[i]);
        /* row by row of B, so that the inner loop streams */
        for (uint32_t m = 0; m < M; m++) {
            double *r = t->ref + (size_t)m * N, *g = t->mag + (size_t)m * N;
            for (uint32_t k = 0; k < K; k++) {
                double a = npu_fp16_to_fp32(t->a[(size_t)m * K + k]);
                const double *b = bd + (size_t)k * N;
                for (uint32_t n = 0; n < N; n++) {
                    double p = a * b[n];
                    r[n] += p;
                    g[n] += fabs(p);
                }
            }
        }
        free(bd);
    }
    double worst = 0;
    for (uint32_t m = 0; m < M; m++) {
        for (uint32_t n = 0; n < N; n++) {
            size_t i = (size_t)m * N + n;
            double err = fabs(c[(size_t)n * M + m] - t->ref[i]) / (t->mag[i] * 1e-6 + 1e-30);
            if (err > worst)
                worst = err;
        }
    }
    return worst;
}

static inline void
npu_test_mm_free(struct npu_test_mm *t)
{
    for (int i = 0; i < NPU_TEST_MM_NBUF; i++)
        npu_bo_destroy(t->bo[i]);
    free(t->a);
    free(t->b);
    free(t->ref);
    free(t->mag);
    memset(t, 0, sizeof(*t));
}

#endif /* NPU_TEST_MATMUL_H */
