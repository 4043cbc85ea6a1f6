/* SPDX-License-Identifier: MIT */
/*
 * npu-cpu-gemm-neon.c: fp32 GEMM for aarch64 (the board's Cortex-A76 and A55) written with
 * arm_neon.h intrinsics; compiled only for aarch64. Called by the GEMM engine
 * (npu-cpu-gemm.c) for every fp32 product of more than a few rows that does not go to BLAS.
 *
 * Goto/BLIS structure: op(B) is packed into 12-column panels (KC x NC block), op(A) into 8-row
 * panels (MC x KC block, alpha folded in), and an 8x12 micro-kernel keeps the whole tile in 24
 * of the 32 q registers: per step of k it loads one 8-float column of A (2 q) and one
 * 12-float row of B (3 q) and issues 24 vfmaq_laneq_f32 (B vector times one lane of A), so
 * no broadcasts are needed and 5 loads feed 24 FMAs (the A76 has two 128-bit FMA pipes and two
 * load pipes; 24 independent accumulators cover the FMA latency of 4 cycles twice over).
 * Blocking for the A76: KC = 256 makes the B micro-panel 12 KB and the A micro-panel 8 KB
 * (L1D is 64 KB); MC = 192 makes the packed A block 192 KB (L2 is 512 KB per core); NC = 1008
 * keeps the packed B block at 1 MB (the shared L3 is 3 MB). Packing transposes 4x4 blocks in
 * registers (trn1/trn2) for the transposed operand. Tiles that are full are stored straight
 * to C with beta applied; edge tiles go through a small buffer.
 */
#include <arm_neon.h>

#include "npu-cpu-gemm-neon.h"
#include "npu-cpu-internal.h"

#define MR CPU_NEON_MR
#define NR CPU_NEON_NR
#define KC 256
#define MC 192  /* multiple of MR */
#define NC 1008 /* multiple of NR */

enum store_mode {
    ST_SET,  /* C = acc (beta 0 on the first K block) */
    ST_BETA, /* C = beta C + acc (first K block) */
    ST_ADD,  /* C += acc (later K blocks) */
};

/* one row of the tile (12 floats) into C */
static inline void
store_row(float *c, float32x4_t x0, float32x4_t x1, float32x4_t x2, enum store_mode mode,
          float beta)
{
    if (mode == ST_ADD) {
        x0 = vaddq_f32(vld1q_f32(c), x0);
        x1 = vaddq_f32(vld1q_f32(c + 4), x1);
        x2 = vaddq_f32(vld1q_f32(c + 8), x2);
    } else if (mode == ST_BETA) {
        x0 = vfmaq_n_f32(x0, vld1q_f32(c), beta);
        x1 = vfmaq_n_f32(x1, vld1q_f32(c + 4), beta);
        x2 = vfmaq_n_f32(x2, vld1q_f32(c + 8), beta);
    }
    vst1q_f32(c, x0);
    vst1q_f32(c + 4, x1);
    vst1q_f32(c + 8, x2);
}

/* row r of the tile (accumulators cR0..cR2) gets lane l of a: r = 4 * (which a) + l */
#define FMA_ROW(r, av, l)                                                                          \
    c##r##0 = vfmaq_laneq_f32(c##r##0, b0, av, l);                                                 \
    c##r##1 = vfmaq_laneq_f32(c##r##1, b1, av, l);                                                 \
    c##r##2 = vfmaq_laneq_f32(c##r##2, b2, av, l)
#define ZERO_ROW(r)                                                                                \
    float32x4_t c##r##0 = vdupq_n_f32(0), c##r##1 = vdupq_n_f32(0), c##r##2 = vdupq_n_f32(0)

/* tile[8][12] = Ap . Bp over kc (Ap: kc columns of 8, Bp: kc rows of 12), stored to c by mode */
CPU_HOT static void
ukernel_8x12(int64_t kc, const float *restrict ap, const float *restrict bp, float *c, int64_t ldc,
             enum store_mode mode, float beta)
{
    ZERO_ROW(0);
    ZERO_ROW(1);
    ZERO_ROW(2);
    ZERO_ROW(3);
    ZERO_ROW(4);
    ZERO_ROW(5);
    ZERO_ROW(6);
    ZERO_ROW(7);
    for (int64_t k = 0; k < kc; k++) {
        const float32x4_t a0 = vld1q_f32(ap), a1 = vld1q_f32(ap + 4);
        const float32x4_t b0 = vld1q_f32(bp), b1 = vld1q_f32(bp + 4), b2 = vld1q_f32(bp + 8);
        FMA_ROW(0, a0, 0);
        FMA_ROW(1, a0, 1);
        FMA_ROW(2, a0, 2);
        FMA_ROW(3, a0, 3);
        FMA_ROW(4, a1, 0);
        FMA_ROW(5, a1, 1);
        FMA_ROW(6, a1, 2);
        FMA_ROW(7, a1, 3);
        ap += MR;
        bp += NR;
    }
    store_row(c + 0 * ldc, c00, c01, c02, mode, beta);
    store_row(c + 1 * ldc, c10, c11, c12, mode, beta);
    store_row(c + 2 * ldc, c20, c21, c22, mode, beta);
    store_row(c + 3 * ldc, c30, c31, c32, mode, beta);
    store_row(c + 4 * ldc, c40, c41, c42, mode, beta);
    store_row(c + 5 * ldc, c50, c51, c52, mode, beta);
    store_row(c + 6 * ldc, c60, c61, c62, mode, beta);
    store_row(c + 7 * ldc, c70, c71, c72, mode, beta);
}

/* the mr x nr corner of a tile computed into a 12-wide buffer, merged into C by mode */
static void
edge_store(const float *tile, float *c, int64_t ldc, int mr, int nr, enum store_mode mode,
           float beta)
{
    for (int i = 0; i < mr; i++) {
        float *cr = c + i * ldc;
        const float *t = tile + i * NR;
        for (int j = 0; j < nr; j++)
            cr[j] = mode == ST_ADD ? cr[j] + t[j] : mode == ST_BETA ? beta * cr[j] + t[j] : t[j];
    }
}

/* 4x4 transpose in registers: rows r0..r3 in, columns out in place */
#define TRANSPOSE4(r0, r1, r2, r3)                                                                 \
    do {                                                                                           \
        float32x4_t t0_ = vtrn1q_f32(r0, r1), t1_ = vtrn2q_f32(r0, r1);                            \
        float32x4_t t2_ = vtrn1q_f32(r2, r3), t3_ = vtrn2q_f32(r2, r3);                            \
        r0 = vreinterpretq_f32_f64(                                                                \
            vtrn1q_f64(vreinterpretq_f64_f32(t0_), vreinterpretq_f64_f32(t2_)));                   \
        r1 = vreinterpretq_f32_f64(                                                                \
            vtrn1q_f64(vreinterpretq_f64_f32(t1_), vreinterpretq_f64_f32(t3_)));                   \
        r2 = vreinterpretq_f32_f64(                                                                \
            vtrn2q_f64(vreinterpretq_f64_f32(t0_), vreinterpretq_f64_f32(t2_)));                   \
        r3 = vreinterpretq_f32_f64(                                                                \
            vtrn2q_f64(vreinterpretq_f64_f32(t1_), vreinterpretq_f64_f32(t3_)));                   \
    } while (0)

/* Packs alpha * op(A)[ic:ic+mc, pc:pc+kc] into 8-row panels (k-major inside), zero padded. */
CPU_HOT static void
pack_a(bool ta, const float *A, int64_t lda, int64_t ic, int64_t mc, int64_t pc, int64_t kc,
       float alpha, float *restrict ap)
{
    const float32x4_t va = vdupq_n_f32(alpha);
    for (int64_t i0 = 0; i0 < mc; i0 += MR, ap += kc * MR) {
        int64_t mr = mc - i0 < MR ? mc - i0 : MR;
        int64_t k = 0;
        if (mr == MR && ta) {
            /* A^T stored [K, M]: the 8 rows of one k are contiguous */
            for (; k < kc; k++) {
                const float *s = A + (pc + k) * lda + ic + i0;
                vst1q_f32(ap + k * MR, vmulq_f32(vld1q_f32(s), va));
                vst1q_f32(ap + k * MR + 4, vmulq_f32(vld1q_f32(s + 4), va));
            }
        } else if (mr == MR) {
            /* A stored [M, K]: 4 k of 8 rows, two 4x4 transposes */
            const float *s = A + (ic + i0) * lda + pc;
            for (; k + 4 <= kc; k += 4) {
                float32x4_t r0 = vld1q_f32(s + 0 * lda + k), r1 = vld1q_f32(s + 1 * lda + k);
                float32x4_t r2 = vld1q_f32(s + 2 * lda + k), r3 = vld1q_f32(s + 3 * lda + k);
                float32x4_t r4 = vld1q_f32(s + 4 * lda + k), r5 = vld1q_f32(s + 5 * lda + k);
                float32x4_t r6 = vld1q_f32(s + 6 * lda + k), r7 = vld1q_f32(s + 7 * lda + k);
                TRANSPOSE4(r0, r1, r2, r3);
                TRANSPOSE4(r4, r5, r6, r7);
                float *d = ap + k * MR;
                vst1q_f32(d + 0, vmulq_f32(r0, va));
                vst1q_f32(d + 4, vmulq_f32(r4, va));
                vst1q_f32(d + 8, vmulq_f32(r1, va));
                vst1q_f32(d + 12, vmulq_f32(r5, va));
                vst1q_f32(d + 16, vmulq_f32(r2, va));
                vst1q_f32(d + 20, vmulq_f32(r6, va));
                vst1q_f32(d + 24, vmulq_f32(r3, va));
                vst1q_f32(d + 28, vmulq_f32(r7, va));
            }
        }
        /* what is left: the last k of a full panel, or a panel of fewer rows */
        for (; k < kc; k++) {
            float *d = ap + k * MR;
            int64_t i = 0;
            for (; i < mr; i++)
                d[i] = alpha *
                       (ta ? A[(pc + k) * lda + ic + i0 + i] : A[(ic + i0 + i) * lda + pc + k]);
            for (; i < MR; i++)
                d[i] = 0;
        }
    }
}

/* Packs op(B)[pc:pc+kc, jc:jc+nc] into 12-column panels (k-major inside), zero padded. */
CPU_HOT static void
pack_b(bool tb, const float *B, int64_t ldb, int64_t pc, int64_t kc, int64_t jc, int64_t nc,
       float *restrict bp)
{
    for (int64_t j0 = 0; j0 < nc; j0 += NR, bp += kc * NR) {
        int64_t nr = nc - j0 < NR ? nc - j0 : NR;
        int64_t k = 0;
        if (nr == NR && !tb) {
            /* B stored [K, N]: the 12 columns of one k are contiguous */
            for (; k < kc; k++) {
                const float *s = B + (pc + k) * ldb + jc + j0;
                vst1q_f32(bp + k * NR, vld1q_f32(s));
                vst1q_f32(bp + k * NR + 4, vld1q_f32(s + 4));
                vst1q_f32(bp + k * NR + 8, vld1q_f32(s + 8));
            }
        } else if (nr == NR) {
            /* B^T stored [N, K] (Linear's weights): 4 k of 12 columns, three 4x4 transposes */
            const float *s = B + (jc + j0) * ldb + pc;
            for (; k + 4 <= kc; k += 4) {
                float *d = bp + k * NR;
                for (int q = 0; q < 3; q++) {
                    const float *sq = s + 4 * q * ldb + k;
                    float32x4_t r0 = vld1q_f32(sq), r1 = vld1q_f32(sq + ldb);
                    float32x4_t r2 = vld1q_f32(sq + 2 * ldb), r3 = vld1q_f32(sq + 3 * ldb);
                    TRANSPOSE4(r0, r1, r2, r3);
                    vst1q_f32(d + 4 * q, r0);
                    vst1q_f32(d + NR + 4 * q, r1);
                    vst1q_f32(d + 2 * NR + 4 * q, r2);
                    vst1q_f32(d + 3 * NR + 4 * q, r3);
                }
            }
        }
        for (; k < kc; k++) {
            float *d = bp + k * NR;
            int64_t j = 0;
            for (; j < nr; j++)
                d[j] = tb ? B[(jc + j0 + j) * ldb + pc + k] : B[(pc + k) * ldb + jc + j0 + j];
            for (; j < NR; j++)
                d[j] = 0;
        }
    }
}

bool
cpu_sgemm_neon(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
               int64_t lda, const float *B, int64_t ldb, float beta, float *C, int64_t ldc)
{
    if (M <= 0 || N <= 0 || K <= 0)
        return false;
    float *bpack = cpu_gemm_pack_buffer(KC * NC + KC * MC);
    if (!bpack)
        return false;
    float *apack = bpack + KC * NC;
    float tile[MR * NR] __attribute__((aligned(16)));
    for (int64_t jc = 0; jc < N; jc += NC) {
        int64_t nc = N - jc < NC ? N - jc : NC;
        for (int64_t pc = 0; pc < K; pc += KC) {
            int64_t kc = K - pc < KC ? K - pc : KC;
            enum store_mode mode = pc > 0 ? ST_ADD : beta == 0.0f ? ST_SET : ST_BETA;
            pack_b(tb, B, ldb, pc, kc, jc, nc, bpack);
            for (int64_t ic = 0; ic < M; ic += MC) {
                int64_t mc = M - ic < MC ? M - ic : MC;
                pack_a(ta, A, lda, ic, mc, pc, kc, alpha, apack);
                /* the B micro-panel stays in L1 while the A block streams from L2 */
                for (int64_t j0 = 0; j0 < nc; j0 += NR) {
                    int nr = (int)(nc - j0 < NR ? nc - j0 : NR);
                    const float *bp = bpack + j0 * kc;
                    for (int64_t i0 = 0; i0 < mc; i0 += MR) {
                        int mr = (int)(mc - i0 < MR ? mc - i0 : MR);
                        float *c = C + (ic + i0) * ldc + jc + j0;
                        const float *ap = apack + i0 * kc;
                        if (mr == MR && nr == NR) {
                            ukernel_8x12(kc, ap, bp, c, ldc, mode, beta);
                        } else {
                            ukernel_8x12(kc, ap, bp, tile, NR, ST_SET, 0.0f);
                            edge_store(tile, c, ldc, mr, nr, mode, beta);
                        }
                    }
                }
            }
        }
    }
    return true;
}

/* ---- few rows against B^T: M <= 4, B stored [N, K] (Linear's weights, a decoder step) -------
 * Dot products of contiguous rows, 4 columns of B against all m rows of A at once, so every
 * row of B is read once whatever m is (16 q accumulators for m = 4: 4 B loads and m A loads
 * feed 4m FMAs per 4 of k). Each sum adds its 4 lanes in a fixed order, then the k tail. */
static inline __attribute__((always_inline)) void
small_nt(const int m, int64_t N, int64_t K, float alpha, const float *A, int64_t lda,
         const float *B, int64_t ldb, float beta, float *C, int64_t ldc)
{
    const int64_t K4 = K & ~(int64_t)3;
    int64_t j = 0;
    for (; j + 4 <= N; j += 4) {
        const float *b0 = B + j * ldb, *b1 = b0 + ldb, *b2 = b1 + ldb, *b3 = b2 + ldb;
        float32x4_t s[4][4];
#pragma GCC unroll 4
        for (int i = 0; i < m; i++)
#pragma GCC unroll 4
            for (int q = 0; q < 4; q++)
                s[i][q] = vdupq_n_f32(0);
        for (int64_t k = 0; k < K4; k += 4) {
            const float32x4_t x0 = vld1q_f32(b0 + k), x1 = vld1q_f32(b1 + k);
            const float32x4_t x2 = vld1q_f32(b2 + k), x3 = vld1q_f32(b3 + k);
#pragma GCC unroll 4
            for (int i = 0; i < m; i++) {
                const float32x4_t a = vld1q_f32(A + i * lda + k);
                s[i][0] = vfmaq_f32(s[i][0], a, x0);
                s[i][1] = vfmaq_f32(s[i][1], a, x1);
                s[i][2] = vfmaq_f32(s[i][2], a, x2);
                s[i][3] = vfmaq_f32(s[i][3], a, x3);
            }
        }
#pragma GCC unroll 4
        for (int i = 0; i < m; i++) {
            const float *a = A + i * lda;
            float r0 = vaddvq_f32(s[i][0]), r1 = vaddvq_f32(s[i][1]);
            float r2 = vaddvq_f32(s[i][2]), r3 = vaddvq_f32(s[i][3]);
            for (int64_t k = K4; k < K; k++) {
                r0 += a[k] * b0[k];
                r1 += a[k] * b1[k];
                r2 += a[k] * b2[k];
                r3 += a[k] * b3[k];
            }
            float *c = C + i * ldc + j;
            float32x4_t r = {r0, r1, r2, r3};
            r = vmulq_n_f32(r, alpha);
            if (beta != 0.0f)
                r = vfmaq_n_f32(r, vld1q_f32(c), beta);
            vst1q_f32(c, r);
        }
    }
    for (; j < N; j++) {
        const float *b = B + j * ldb;
        float32x4_t s[4];
#pragma GCC unroll 4
        for (int i = 0; i < m; i++)
            s[i] = vdupq_n_f32(0);
        for (int64_t k = 0; k < K4; k += 4) {
            const float32x4_t x = vld1q_f32(b + k);
#pragma GCC unroll 4
            for (int i = 0; i < m; i++)
                s[i] = vfmaq_f32(s[i], vld1q_f32(A + i * lda + k), x);
        }
#pragma GCC unroll 4
        for (int i = 0; i < m; i++) {
            const float *a = A + i * lda;
            float r = vaddvq_f32(s[i]);
            for (int64_t k = K4; k < K; k++)
                r += a[k] * b[k];
            float *c = C + i * ldc + j;
            *c = beta == 0.0f ? alpha * r : alpha * r + beta * *c;
        }
    }
}

void
cpu_sgemm_neon_small_nt(int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t lda,
                        const float *B, int64_t ldb, float beta, float *C, int64_t ldc)
{
    switch (M) {
    case 1: small_nt(1, N, K, alpha, A, lda, B, ldb, beta, C, ldc); break;
    case 2: small_nt(2, N, K, alpha, A, lda, B, ldb, beta, C, ldc); break;
    case 3: small_nt(3, N, K, alpha, A, lda, B, ldb, beta, C, ldc); break;
    case 4: small_nt(4, N, K, alpha, A, lda, B, ldb, beta, C, ldc); break;
    default:
        /* more rows: four at a time */
        for (int64_t i = 0; i < M; i += 4)
            cpu_sgemm_neon_small_nt(M - i < 4 ? M - i : 4, N, K, alpha, A + i * lda, lda, B, ldb,
                                    beta, C + i * ldc, ldc);
    }
}
