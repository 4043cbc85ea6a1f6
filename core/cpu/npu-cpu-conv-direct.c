/* SPDX-License-Identifier: MIT */
/*
 * npu-cpu-conv-direct.c: the direct fp32 convolution for dense 2-D Convs (group 1, any
 * kernel, stride, dilation and padding) and the prepare step that packs a Conv's constant
 * weights once per model (npu_cpu_prepare, npu-cpu.h).
 *
 * Y[m][p] = sum over k = (c, kh, kw) of W[m][k] * X(c, tap (kh, kw) of output p).
 * The weights are packed in blocks of 8 output channels, k-major ([block][k][8]); the
 * input is read where it lies for a 1x1 / stride-1 / unpadded conv, otherwise from a
 * zero-padded copy of each channel split into its stride phases (padded row hq * s0 + r0,
 * column q * s1 + r1 is phase (r0, r1)'s element [hq][q], as the depthwise path does). The
 * outputs are numbered by their place in that copy, p = oh * Wq + ow, so that for every tap
 * 48 consecutive outputs read 48 consecutive floats: the micro-kernel computes 8 channels x
 * 48 outputs (24 AVX-512 accumulators, or four 4 x 24 AVX2 blocks) over all k with no im2col
 * and no per-element bounds test; the columns past OW (the padding) are computed and dropped.
 * Every output sums its k in ascending order from 0 in one fp32 FMA chain, then the bias is
 * added and the activation applied (ReLU in registers, the others on the finished row), so
 * the result does not depend on the thread count or the tiling, and differs from the
 * im2col + GEMM path only by fp32 rounding.
 * Chosen by cpuid (AVX-512F, else AVX2+FMA; otherwise the GEMM path runs) and by shape
 * (cpu_conv_direct_wanted).
 */
#include "npu-cpu-conv-direct.h"
#include "npu-cpu-gemm-packed.h"
#include "npu-cpu-qgemm.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define CD_MR 8
#define CD_NR 48
/* the packed weights are read once per panel group: fetched 64 k ahead (measured: the 7x7
 * layers of ResNet, 9 MB of weights each, went from 120 to 165 GFLOP/s on one core) */
#define CD_PF 512

#if defined(__x86_64__) && defined(__GNUC__)
#define CD_X86 1
#include <immintrin.h>
typedef float v16f __attribute__((vector_size(64), aligned(4)));
typedef int32_t v16i __attribute__((vector_size(64), aligned(4)));
#endif

/* ---- weight packing -------------------------------------------------------------------------- */

static void
cd_pack(const float *w, int64_t M, int64_t K, float *wp)
{
    int64_t nb = NPU_DIV_ROUND_UP(M, CD_MR);
    for (int64_t b = 0; b < nb; b++) {
        float *d = wp + b * K * CD_MR;
        for (int64_t r = 0; r < CD_MR; r++) {
            int64_t m = b * CD_MR + r;
            if (m < M) {
                const float *src = w + m * K;
                for (int64_t k = 0; k < K; k++)
                    d[k * CD_MR + r] = src[k];
            } else {
                for (int64_t k = 0; k < K; k++)
                    d[k * CD_MR + r] = 0.0f;
            }
        }
    }
}

/* Prepared weights (freed with free()). Those of the big layers are read from memory at every
 * run (a network's weights exceed the caches), in streams that the kernels prefetch: in 4 KiB
 * pages that is a TLB miss every 4 KiB (under a hypervisor a two-level walk), so from 2 MiB on
 * they are 2 MiB aligned and their whole 2 MiB pages marked for transparent huge pages
 * (MADV_HUGEPAGE: nothing where the kernel has THP off; the tail keeps small pages, so the
 * memory used is what is written). */
static void *
cd_walloc(size_t bytes)
{
    const size_t huge = (size_t)2 << 20;
    bytes = NPU_ALIGN(bytes, (size_t)64);
    if (bytes < huge)
        return aligned_alloc(64, bytes);
    void *p = NULL;
    if (posix_memalign(&p, huge, bytes))
        return NULL;
#ifdef MADV_HUGEPAGE
    (void)madvise(p, bytes / huge * huge, MADV_HUGEPAGE);
#endif
    return p;
}

static float *
cd_pack_new(const float *w, int64_t M, int64_t K)
{
    size_t n = (size_t)(NPU_DIV_ROUND_UP(M, CD_MR) * K * CD_MR);
    float *wp = cd_walloc(sizeof(float) * n);
    if (wp)
        cd_pack(w, M, K, wp);
    return wp;
}

/* ---- micro-kernels --------------------------------------------------------------------------- */

/* dst[r][0..48) = act(acc[r][..] + sum_k ap[k][r] * b[koff[k] + 0..48) + bias[r]) for r < mr
 * (acc: a previous chunk of k's sums, [8][48], or NULL for 0); relu: max(., 0) in registers
 * (other activations are the caller's). bias NULL: a partial sum, all 8 rows stored as they
 * are (no bias, no activation). */
typedef void (*cd_kernel_fn)(int64_t K, const float *ap, const float *b, const int64_t *koff,
                             const float *acc, const float *bias, bool relu, float *dst,
                             int64_t ldd, int mr);

#ifdef CD_X86
#define CD_ROW16(r)                                                                                \
    v16f c##r##0 = {0}, c##r##1 = {0}, c##r##2 = {0};                                              \
    if (acc) {                                                                                     \
        memcpy(&c##r##0, acc + r * CD_NR, sizeof(v16f));                                           \
        memcpy(&c##r##1, acc + r * CD_NR + 16, sizeof(v16f));                                      \
        memcpy(&c##r##2, acc + r * CD_NR + 32, sizeof(v16f));                                      \
    }
#define CD_FMA16(r)                                                                                \
    {                                                                                              \
        const float a = ap[r];                                                                     \
        c##r##0 += a * b0;                                                                         \
        c##r##1 += a * b1;                                                                         \
        c##r##2 += a * b2;                                                                         \
    }
#define CD_STORE16(r)                                                                              \
    if (!bias) {                                                                                   \
        memcpy(dst + r * ldd, &c##r##0, sizeof(v16f));                                             \
        memcpy(dst + r * ldd + 16, &c##r##1, sizeof(v16f));                                        \
        memcpy(dst + r * ldd + 32, &c##r##2, sizeof(v16f));                                        \
    } else if (r < mr) {                                                                           \
        const float bb = bias[r];                                                                  \
        v16f o0 = c##r##0 + bb, o1 = c##r##1 + bb, o2 = c##r##2 + bb;                              \
        if (relu) {                                                                                \
            RELU(o0);                                                                              \
            RELU(o1);                                                                              \
            RELU(o2);                                                                              \
        }                                                                                          \
        memcpy(dst + r * ldd, &o0, sizeof(o0));                                                    \
        memcpy(dst + r * ldd + 16, &o1, sizeof(o1));                                               \
        memcpy(dst + r * ldd + 32, &o2, sizeof(o2));                                               \
    }

__attribute__((target("avx512f"))) static void
cd_kernel_avx512(int64_t K, const float *ap, const float *b, const int64_t *koff, const float *acc,
                 const float *bias, bool relu, float *dst, int64_t ldd, int mr)
{
    CD_ROW16(0)
    CD_ROW16(1)
    CD_ROW16(2)
    CD_ROW16(3)
    CD_ROW16(4)
    CD_ROW16(5)
    CD_ROW16(6)
    CD_ROW16(7)
    for (int64_t k = 0; k < K; k++) {
        const float *bk = b + koff[k];
        v16f b0, b1, b2;
        memcpy(&b0, bk, sizeof(b0));
        memcpy(&b1, bk + 16, sizeof(b1));
        memcpy(&b2, bk + 32, sizeof(b2));
        __builtin_prefetch(ap + CD_PF);
        CD_FMA16(0)
        CD_FMA16(1)
        CD_FMA16(2)
        CD_FMA16(3)
        CD_FMA16(4)
        CD_FMA16(5)
        CD_FMA16(6)
        CD_FMA16(7)
        ap += CD_MR;
    }
#define RELU(v) v = (v16f)((v16i)(v) & (v > zero))
    const v16f zero = {0};
    CD_STORE16(0)
    CD_STORE16(1)
    CD_STORE16(2)
    CD_STORE16(3)
    CD_STORE16(4)
    CD_STORE16(5)
    CD_STORE16(6)
    CD_STORE16(7)
}

/* the same for a narrower last panel: 1 x 16 outputs */
__attribute__((target("avx512f"))) static void
cd_kernel_avx512_n1(int64_t K, const float *ap, const float *b, const int64_t *koff,
                    const float *acc, const float *bias, bool relu, float *dst, int64_t ldd, int mr)
{
    v16f c00 = {0}, c10 = {0}, c20 = {0}, c30 = {0}, c40 = {0}, c50 = {0}, c60 = {0}, c70 = {0};
    if (acc) {
        memcpy(&c00, acc + 0 * CD_NR + 0, sizeof(v16f));
        memcpy(&c10, acc + 1 * CD_NR + 0, sizeof(v16f));
        memcpy(&c20, acc + 2 * CD_NR + 0, sizeof(v16f));
        memcpy(&c30, acc + 3 * CD_NR + 0, sizeof(v16f));
        memcpy(&c40, acc + 4 * CD_NR + 0, sizeof(v16f));
        memcpy(&c50, acc + 5 * CD_NR + 0, sizeof(v16f));
        memcpy(&c60, acc + 6 * CD_NR + 0, sizeof(v16f));
        memcpy(&c70, acc + 7 * CD_NR + 0, sizeof(v16f));
    }
    for (int64_t k = 0; k < K; k++) {
        const float *bk = b + koff[k];
        v16f b0;
        memcpy(&b0, bk + 0, sizeof(b0));
        const float a0 = ap[0];
        c00 += a0 * b0;
        const float a1 = ap[1];
        c10 += a1 * b0;
        const float a2 = ap[2];
        c20 += a2 * b0;
        const float a3 = ap[3];
        c30 += a3 * b0;
        const float a4 = ap[4];
        c40 += a4 * b0;
        const float a5 = ap[5];
        c50 += a5 * b0;
        const float a6 = ap[6];
        c60 += a6 * b0;
        const float a7 = ap[7];
        c70 += a7 * b0;
        ap += CD_MR;
    }
    const v16f zero = {0};
    v16f o0;
    if (!bias) {
        memcpy(dst + 0 * ldd + 0, &c00, sizeof(v16f));
    } else if (0 < mr) {
        o0 = c00 + bias[0];
        if (relu)
            o0 = (v16f)((v16i)o0 & (o0 > zero));
        memcpy(dst + 0 * ldd + 0, &o0, sizeof(v16f));
    }
    if (!bias) {
        memcpy(dst + 1 * ldd + 0, &c10, sizeof(v16f));
    } else if (1 < mr) {
        o0 = c10 + bias[1];
        if (relu)
            o0 = (v16f)((v16i)o0 & (o0 > zero));
        memcpy(dst + 1 * ldd + 0, &o0, sizeof(v16f));
    }
    if (!bias) {
        memcpy(dst + 2 * ldd + 0, &c20, sizeof(v16f));
    } else if (2 < mr) {
        o0 = c20 + bias[2];
        if (relu)
            o0 = (v16f)((v16i)o0 & (o0 > zero));
        memcpy(dst + 2 * ldd + 0, &o0, sizeof(v16f));
    }
    if (!bias) {
        memcpy(dst + 3 * ldd + 0, &c30, sizeof(v16f));
    } else if (3 < mr) {
        o0 = c30 + bias[3];
        if (relu)
            o0 = (v16f)((v16i)o0 & (o0 > zero));
        memcpy(dst + 3 * ldd + 0, &o0, sizeof(v16f));
    }
    if (!bias) {
        memcpy(dst + 4 * ldd + 0, &c40, sizeof(v16f));
    } else if (4 < mr) {
        o0 = c40 + bias[4];
        if (relu)
            o0 = (v16f)((v16i)o0 & (o0 > zero));
        memcpy(dst + 4 * ldd + 0, &o0, sizeof(v16f));
    }
    if (!bias) {
        memcpy(dst + 5 * ldd + 0, &c50, sizeof(v16f));
    } else if (5 < mr) {
        o0 = c50 + bias[5];
        if (relu)
            o0 = (v16f)((v16i)o0 & (o0 > zero));
        memcpy(dst + 5 * ldd + 0, &o0, sizeof(v16f));
    }
    if (!bias) {
        memcpy(dst + 6 * ldd + 0, &c60, sizeof(v16f));
    } else if (6 < mr) {
        o0 = c60 + bias[6];
        if (relu)
            o0 = (v16f)((v16i)o0 & (o0 > zero));
        memcpy(dst + 6 * ldd + 0, &o0, sizeof(v16f));
    }
    if (!bias) {
        memcpy(dst + 7 * ldd + 0, &c70, sizeof(v16f));
    } else if (7 < mr) {
        o0 = c70 + bias[7];
        if (relu)
            o0 = (v16f)((v16i)o0 & (o0 > zero));
        memcpy(dst + 7 * ldd + 0, &o0, sizeof(v16f));
    }
}

/* the same for a narrower last panel: 2 x 16 outputs */
__attribute__((target("avx512f"))) static void
cd_kernel_avx512_n2(int64_t K, const float *ap, const float *b, const int64_t *koff,
                    const float *acc, const float *bias, bool relu, float *dst, int64_t ldd, int mr)
{
    v16f c00 = {0}, c01 = {0}, c10 = {0}, c11 = {0}, c20 = {0}, c21 = {0}, c30 = {0}, c31 = {0},
         c40 = {0}, c41 = {0}, c50 = {0}, c51 = {0}, c60 = {0}, c61 = {0}, c70 = {0}, c71 = {0};
    if (acc) {
        memcpy(&c00, acc + 0 * CD_NR + 0, sizeof(v16f));
        memcpy(&c01, acc + 0 * CD_NR + 16, sizeof(v16f));
        memcpy(&c10, acc + 1 * CD_NR + 0, sizeof(v16f));
        memcpy(&c11, acc + 1 * CD_NR + 16, sizeof(v16f));
        memcpy(&c20, acc + 2 * CD_NR + 0, sizeof(v16f));
        memcpy(&c21, acc + 2 * CD_NR + 16, sizeof(v16f));
        memcpy(&c30, acc + 3 * CD_NR + 0, sizeof(v16f));
        memcpy(&c31, acc + 3 * CD_NR + 16, sizeof(v16f));
        memcpy(&c40, acc + 4 * CD_NR + 0, sizeof(v16f));
        memcpy(&c41, acc + 4 * CD_NR + 16, sizeof(v16f));
        memcpy(&c50, acc + 5 * CD_NR + 0, sizeof(v16f));
        memcpy(&c51, acc + 5 * CD_NR + 16, sizeof(v16f));
        memcpy(&c60, acc + 6 * CD_NR + 0, sizeof(v16f));
        memcpy(&c61, acc + 6 * CD_NR + 16, sizeof(v16f));
        memcpy(&c70, acc + 7 * CD_NR + 0, sizeof(v16f));
        memcpy(&c71, acc + 7 * CD_NR + 16, sizeof(v16f));
    }
    for (int64_t k = 0; k < K; k++) {
        const float *bk = b + koff[k];
        v16f b0, b1;
        memcpy(&b0, bk + 0, sizeof(b0));
        memcpy(&b1, bk + 16, sizeof(b1));
        const float a0 = ap[0];
        c00 += a0 * b0;
        c01 += a0 * b1;
        const float a1 = ap[1];
        c10 += a1 * b0;
        c11 += a1 * b1;
        const float a2 = ap[2];
        c20 += a2 * b0;
        c21 += a2 * b1;
        const float a3 = ap[3];
        c30 += a3 * b0;
        c31 += a3 * b1;
        const float a4 = ap[4];
        c40 += a4 * b0;
        c41 += a4 * b1;
        const float a5 = ap[5];
        c50 += a5 * b0;
        c51 += a5 * b1;
        const float a6 = ap[6];
        c60 += a6 * b0;
        c61 += a6 * b1;
        const float a7 = ap[7];
        c70 += a7 * b0;
        c71 += a7 * b1;
        ap += CD_MR;
    }
    const v16f zero = {0};
    v16f o0, o1;
    if (!bias) {
        memcpy(dst + 0 * ldd + 0, &c00, sizeof(v16f));
        memcpy(dst + 0 * ldd + 16, &c01, sizeof(v16f));
    } else if (0 < mr) {
        o0 = c00 + bias[0];
        if (relu)
            o0 = (v16f)((v16i)o0 & (o0 > zero));
        memcpy(dst + 0 * ldd + 0, &o0, sizeof(v16f));
        o1 = c01 + bias[0];
        if (relu)
            o1 = (v16f)((v16i)o1 & (o1 > zero));
        memcpy(dst + 0 * ldd + 16, &o1, sizeof(v16f));
    }
    if (!bias) {
        memcpy(dst + 1 * ldd + 0, &c10, sizeof(v16f));
        memcpy(dst + 1 * ldd + 16, &c11, sizeof(v16f));
    } else if (1 < mr) {
        o0 = c10 + bias[1];
        if (relu)
            o0 = (v16f)((v16i)o0 & (o0 > zero));
        memcpy(dst + 1 * ldd + 0, &o0, sizeof(v16f));
        o1 = c11 + bias[1];
        if (relu)
            o1 = (v16f)((v16i)o1 & (o1 > zero));
        memcpy(dst + 1 * ldd + 16, &o1, sizeof(v16f));
    }
    if (!bias) {
        memcpy(dst + 2 * ldd + 0, &c20, sizeof(v16f));
        memcpy(dst + 2 * ldd + 16, &c21, sizeof(v16f));
    } else if (2 < mr) {
        o0 = c20 + bias[2];
        if (relu)
            o0 = (v16f)((v16i)o0 & (o0 > zero));
        memcpy(dst + 2 * ldd + 0, &o0, sizeof(v16f));
        o1 = c21 + bias[2];
        if (relu)
            o1 = (v16f)((v16i)o1 & (o1 > zero));
        memcpy(dst + 2 * ldd + 16, &o1, sizeof(v16f));
    }
    if (!bias) {
        memcpy(dst + 3 * ldd + 0, &c30, sizeof(v16f));
        memcpy(dst + 3 * ldd + 16, &c31, sizeof(v16f));
    } else if (3 < mr) {
        o0 = c30 + bias[3];
        if (relu)
            o0 = (v16f)((v16i)o0 & (o0 > zero));
        memcpy(dst + 3 * ldd + 0, &o0, sizeof(v16f));
        o1 = c31 + bias[3];
        if (relu)
            o1 = (v16f)((v16i)o1 & (o1 > zero));
        memcpy(dst + 3 * ldd + 16, &o1, sizeof(v16f));
    }
    if (!bias) {
        memcpy(dst + 4 * ldd + 0, &c40, sizeof(v16f));
        memcpy(dst + 4 * ldd + 16, &c41, sizeof(v16f));
    } else if (4 < mr) {
        o0 = c40 + bias[4];
        if (relu)
            o0 = (v16f)((v16i)o0 & (o0 > zero));
        memcpy(dst + 4 * ldd + 0, &o0, sizeof(v16f));
        o1 = c41 + bias[4];
        if (relu)
            o1 = (v16f)((v16i)o1 & (o1 > zero));
        memcpy(dst + 4 * ldd + 16, &o1, sizeof(v16f));
    }
    if (!bias) {
        memcpy(dst + 5 * ldd + 0, &c50, sizeof(v16f));
        memcpy(dst + 5 * ldd + 16, &c51, sizeof(v16f));
    } else if (5 < mr) {
        o0 = c50 + bias[5];
        if (relu)
            o0 = (v16f)((v16i)o0 & (o0 > zero));
        memcpy(dst + 5 * ldd + 0, &o0, sizeof(v16f));
        o1 = c51 + bias[5];
        if (relu)
            o1 = (v16f)((v16i)o1 & (o1 > zero));
        memcpy(dst + 5 * ldd + 16, &o1, sizeof(v16f));
    }
    if (!bias) {
        memcpy(dst + 6 * ldd + 0, &c60, sizeof(v16f));
        memcpy(dst + 6 * ldd + 16, &c61, sizeof(v16f));
    } else if (6 < mr) {
        o0 = c60 + bias[6];
        if (relu)
            o0 = (v16f)((v16i)o0 & (o0 > zero));
        memcpy(dst + 6 * ldd + 0, &o0, sizeof(v16f));
        o1 = c61 + bias[6];
        if (relu)
            o1 = (v16f)((v16i)o1 & (o1 > zero));
        memcpy(dst + 6 * ldd + 16, &o1, sizeof(v16f));
    }
    if (!bias) {
        memcpy(dst + 7 * ldd + 0, &c70, sizeof(v16f));
        memcpy(dst + 7 * ldd + 16, &c71, sizeof(v16f));
    } else if (7 < mr) {
        o0 = c70 + bias[7];
        if (relu)
            o0 = (v16f)((v16i)o0 & (o0 > zero));
        memcpy(dst + 7 * ldd + 0, &o0, sizeof(v16f));
        o1 = c71 + bias[7];
        if (relu)
            o1 = (v16f)((v16i)o1 & (o1 > zero));
        memcpy(dst + 7 * ldd + 16, &o1, sizeof(v16f));
    }
}

/* AVX2: 4 channels x 24 outputs (12 accumulators of 8), four per 8 x 48 tile */
#define CD_ROW8(r)                                                                                 \
    v8f c##r##0 = {0}, c##r##1 = {0}, c##r##2 = {0};                                               \
    if (acc) {                                                                                     \
        memcpy(&c##r##0, acc + r * CD_NR, sizeof(v8f));                                            \
        memcpy(&c##r##1, acc + r * CD_NR + 8, sizeof(v8f));                                        \
        memcpy(&c##r##2, acc + r * CD_NR + 16, sizeof(v8f));                                       \
    }
#define CD_FMA8(r)                                                                                 \
    {                                                                                              \
        const float a = ap[r];                                                                     \
        c##r##0 += a * b0;                                                                         \
        c##r##1 += a * b1;                                                                         \
        c##r##2 += a * b2;                                                                         \
    }
#define CD_STORE8(r)                                                                               \
    if (!bias) {                                                                                   \
        memcpy(dst + r * ldd, &c##r##0, sizeof(v8f));                                              \
        memcpy(dst + r * ldd + 8, &c##r##1, sizeof(v8f));                                          \
        memcpy(dst + r * ldd + 16, &c##r##2, sizeof(v8f));                                         \
    } else if (r < mr) {                                                                           \
        const float bb = bias[r];                                                                  \
        v8f o0 = c##r##0 + bb, o1 = c##r##1 + bb, o2 = c##r##2 + bb;                               \
        if (relu) {                                                                                \
            RELU(o0);                                                                              \
            RELU(o1);                                                                              \
            RELU(o2);                                                                              \
        }                                                                                          \
        memcpy(dst + r * ldd, &o0, sizeof(o0));                                                    \
        memcpy(dst + r * ldd + 8, &o1, sizeof(o1));                                                \
        memcpy(dst + r * ldd + 16, &o2, sizeof(o2));                                               \
    }

__attribute__((target("avx2,fma"))) static void
cd_kernel4x24_avx2(int64_t K, const float *ap, const float *b, const int64_t *koff,
                   const float *acc, const float *bias, bool relu, float *dst, int64_t ldd, int mr)
{
    CD_ROW8(0)
    CD_ROW8(1)
    CD_ROW8(2)
    CD_ROW8(3)
    for (int64_t k = 0; k < K; k++) {
        const float *bk = b + koff[k];
        v8f b0, b1, b2;
        memcpy(&b0, bk, sizeof(b0));
        memcpy(&b1, bk + 8, sizeof(b1));
        memcpy(&b2, bk + 16, sizeof(b2));
        __builtin_prefetch(ap + CD_PF);
        CD_FMA8(0)
        CD_FMA8(1)
        CD_FMA8(2)
        CD_FMA8(3)
        ap += CD_MR;
    }
#undef RELU
#define RELU(v) v = (v8f)((v8i)(v) & (v > zero))
    const v8f zero = {0};
    CD_STORE8(0)
    CD_STORE8(1)
    CD_STORE8(2)
    CD_STORE8(3)
}

__attribute__((target("avx2,fma"))) static void
cd_kernel_avx2(int64_t K, const float *ap, const float *b, const int64_t *koff, const float *acc,
               const float *bias, bool relu, float *dst, int64_t ldd, int mr)
{
    int rows = bias ? mr : CD_MR;
    for (int r0 = 0; r0 < rows; r0 += 4)
        for (int c0 = 0; c0 < CD_NR; c0 += 24)
            cd_kernel4x24_avx2(K, ap + r0, b + c0, koff, acc ? acc + r0 * CD_NR + c0 : NULL,
                               bias ? bias + r0 : NULL, relu, dst + r0 * ldd + c0, ldd,
                               NPU_MIN(rows - r0, 4));
}
#endif

static pthread_once_t cd_once = PTHREAD_ONCE_INIT;
/* ---- small planes: output channels in the vector ----------------------------------------------
 * On planes of a few hundred outputs (ResNet's 7x7 and 14x14 stages) the flat numbering above
 * computes the padding columns and rounds the plane up to whole panels: 96 or 64 outputs for
 * the 49 of a 7x7 plane. There the roles swap: 48 output channels are the three vectors of a
 * tile and up to 8 real output pixels its broadcast rows, each pixel read at its own place in
 * the same padded copy (tap k of pixel p at koff[k] + p's flat position), with the weights
 * packed once as [ceil(M / 48)][K][48] (npu_cpu_prepare). The pixels are cut into tiles of 7 or
 * 8, so nothing is computed twice; each output is still one fp32 FMA chain over ascending k
 * from 0, then the bias, the residual and the activation: the same bytes as the flat form's
 * 16-wide panels (not its cd_cols_avx512 plane ends, which sum in two interleaved chains). */
#define CDT_NB 48
/* tiles per task at most (their sums, [8][48] each, stay in L1 with a chunk of weights) */
#define CDT_GMAX 8

static void
cdt_pack(const float *w, int64_t M, int64_t K, float *wp)
{
    int64_t nb = NPU_DIV_ROUND_UP(M, (int64_t)CDT_NB);
    for (int64_t b = 0; b < nb; b++) {
        float *d = wp + b * K * CDT_NB;
        for (int64_t r = 0; r < CDT_NB; r++) {
            int64_t m = b * CDT_NB + r;
            for (int64_t k = 0; k < K; k++)
                d[k * CDT_NB + r] = m < M ? w[m * K + k] : 0.0f;
        }
    }
}

/* pixels x vectors of 16 channels: out[r][0 .. 16 * NV) = acc[r][..] (a previous chunk of k's
 * sums, or 0 for acc NULL) + the sum over these K, then + bias (then ReLU as the flat kernel's,
 * in registers, if relu) for the pixels read at px[r]; bias NULL: the partial sums as they are
 * (acc may be out). The npf lines (16 floats) from pf on are prefetched into L2 over the k
 * (pf NULL: none). */
typedef void (*cdt_kernel_fn)(int64_t K, const float *wk, const float *const *px,
                              const int64_t *koff, const float *acc, const float *bias, bool relu,
                              float *out, const float *pf, int64_t npf);

#ifdef CD_X86
#define CDT_UNROLL _Pragma("GCC unroll 8")
static inline __attribute__((always_inline, target("avx512f"))) void
cdt_body(int64_t K, const float *wk, const float *const *px, const int64_t *koff, const float *acc,
         const float *bias, bool relu, float *out, const float *pf, int64_t npf, const int NP,
         const int NV)
{
    v16f c[8][3];
    const float *p[8];
    CDT_UNROLL
    for (int r = 0; r < 8; r++) {
        p[r] = px[r < NP ? r : 0];
        CDT_UNROLL
        for (int v = 0; v < 3; v++)
            c[r][v] = (v16f){0};
    }
    if (acc) {
        CDT_UNROLL
        for (int r = 0; r < NP; r++) {
            CDT_UNROLL
            for (int v = 0; v < NV; v++)
                memcpy(&c[r][v], acc + r * CDT_NB + 16 * v, sizeof(v16f));
        }
    }
    /* the npf lines from pf on (the next chunk's weights) prefetched evenly over the k: line
     * (k * npf) / K at step k, in 16.16 fixed point (a line twice costs nothing; at 1-2 lines
     * per step, measured on ResNet-50's 7x7 layers with cold weights, 3-6 % faster than each
     * tile fetching its share in its first k) */
    const int64_t pstep = pf && npf > 0 ? (npf << 16) / K : 0;
#define CDT_KSTEP(k)                                                                               \
    {                                                                                              \
        const int64_t o = koff[k];                                                                 \
        v16f w[3];                                                                                 \
        CDT_UNROLL                                                                                 \
        for (int v = 0; v < NV; v++)                                                               \
            memcpy(&w[v], wk + (k)*CDT_NB + 16 * v, sizeof(v16f));                                 \
        CDT_UNROLL                                                                                 \
        for (int r = 0; r < NP; r++) {                                                             \
            const float a = p[r][o];                                                               \
            CDT_UNROLL                                                                             \
            for (int v = 0; v < NV; v++)                                                           \
                c[r][v] += a * w[v];                                                               \
        }                                                                                          \
    }
    /* (without lines to fetch, a loop without the prefetch: the weights in L2 anyway, and
     * the instruction cost the unchunked forms 3-5 %) */
    if (pstep > 0) {
        int64_t pacc = 0;
        for (int64_t k = 0; k < K; k++) {
            __builtin_prefetch(pf + 16 * (pacc >> 16), 0, 2);
            pacc += pstep;
            CDT_KSTEP(k)
        }
    } else {
        for (int64_t k = 0; k < K; k++)
            CDT_KSTEP(k)
    }
#undef CDT_KSTEP
    if (!bias) {
        CDT_UNROLL
        for (int r = 0; r < NP; r++) {
            CDT_UNROLL
            for (int v = 0; v < NV; v++)
                memcpy(out + r * CDT_NB + 16 * v, &c[r][v], sizeof(v16f));
        }
        return;
    }
    v16f bv[3];
    const v16f zero = {0};
    CDT_UNROLL
    for (int v = 0; v < NV; v++)
        memcpy(&bv[v], bias + 16 * v, sizeof(v16f));
    CDT_UNROLL
    for (int r = 0; r < NP; r++) {
        CDT_UNROLL
        for (int v = 0; v < NV; v++) {
            v16f o = c[r][v] + bv[v];
            if (relu)
                o = (v16f)((v16i)o & (o > zero));
            memcpy(out + r * CDT_NB + 16 * v, &o, sizeof(v16f));
        }
    }
}

#define CDT_FN(np, nv)                                                                             \
    __attribute__((target("avx512f"))) static void cdt_k##np##_##nv(                               \
        int64_t K, const float *wk, const float *const *px, const int64_t *koff, const float *acc, \
        const float *bias, bool relu, float *out, const float *pf, int64_t npf)                    \
    {                                                                                              \
        cdt_body(K, wk, px, koff, acc, bias, relu, out, pf, npf, np, nv);                          \
    }
#define CDT_FN3(np) CDT_FN(np, 1) CDT_FN(np, 2) CDT_FN(np, 3)
CDT_FN3(1)
CDT_FN3(2)
CDT_FN3(3)
CDT_FN3(4)
CDT_FN3(5)
CDT_FN3(6)
CDT_FN3(7)
CDT_FN3(8)
#define CDT_ROW(np)                                                                                \
    {                                                                                              \
        cdt_k##np##_1, cdt_k##np##_2, cdt_k##np##_3                                                \
    }
/* [pixels - 1][vectors - 1] */
static const cdt_kernel_fn cdt_fns[8][3] = {CDT_ROW(1), CDT_ROW(2), CDT_ROW(3), CDT_ROW(4),
                                            CDT_ROW(5), CDT_ROW(6), CDT_ROW(7), CDT_ROW(8)};
#endif

static cd_kernel_fn cd_fn;
#ifdef CD_X86
/* The last 1 or 2 outputs of a plane after its 48-wide panels (49 = 48 + 1 on 7x7 planes):
 * each column's 8 rows are the lanes of one vector, two k per 512-bit FMA and two independent
 * sums over k, instead of a 16-wide panel with 1 or 2 useful lanes (MobileNetV2's 7x7 1x1
 * layers 160 -> 180-200 GFLOP/s, one thread; with 3 or 4 columns, 14x14 planes, the 16-wide
 * panel stays faster). The contract of cd_kernel_fn for columns [0, ncols) of dst and acc; the
 * sources of the other columns of a 16-wide panel are not read. */
__attribute__((target("avx512f,fma"), always_inline)) static inline void
cd_cols_avx512(int64_t K, const float *ap, const float *b, const int64_t *koff, const float *acc,
               const float *bias, bool relu, float *dst, int64_t ldd, int mr, int ncols)
{
    for (int q = 0; q < ncols; q++) {
        const float *bq = b + q;
        __m512 s0 = _mm512_setzero_ps(), s1 = s0;
        int64_t k = 0;
        for (; k + 4 <= K; k += 4) {
            __m512 x0 = _mm512_mask_blend_ps(0xFF00, _mm512_set1_ps(bq[koff[k]]),
                                             _mm512_set1_ps(bq[koff[k + 1]]));
            __m512 x1 = _mm512_mask_blend_ps(0xFF00, _mm512_set1_ps(bq[koff[k + 2]]),
                                             _mm512_set1_ps(bq[koff[k + 3]]));
            s0 = _mm512_fmadd_ps(_mm512_loadu_ps(ap + k * CD_MR), x0, s0);
            s1 = _mm512_fmadd_ps(_mm512_loadu_ps(ap + k * CD_MR + 16), x1, s1);
        }
        s0 = _mm512_add_ps(s0, s1);
        __m256 c = _mm512_castps512_ps256(
            _mm512_add_ps(s0, _mm512_shuffle_f32x4(s0, s0, _MM_SHUFFLE(3, 2, 3, 2))));
        for (; k < K; k++)
            c = _mm256_fmadd_ps(_mm256_loadu_ps(ap + k * CD_MR), _mm256_set1_ps(bq[koff[k]]), c);
        float t[CD_MR];
        _mm256_storeu_ps(t, c);
        for (int r = 0; r < CD_MR; r++) {
            float v = t[r] + (acc ? acc[r * CD_NR + q] : 0.0f);
            if (!bias) {
                dst[r * ldd + q] = v;
            } else if (r < mr) {
                v += bias[r];
                dst[r * ldd + q] = relu ? (v > 0 ? v : 0.0f) : v;
            }
        }
    }
}

#define CD_COLS(n)                                                                                 \
    __attribute__((target("avx512f,fma"))) static void cd_cols##n##_avx512(                        \
        int64_t K, const float *ap, const float *b, const int64_t *koff, const float *acc,         \
        const float *bias, bool relu, float *dst, int64_t ldd, int mr)                             \
    {                                                                                              \
        cd_cols_avx512(K, ap, b, koff, acc, bias, relu, dst, ldd, mr, n);                          \
    }
CD_COLS(1)
CD_COLS(2)
#undef CD_COLS
static const cd_kernel_fn cd_cols_fn[3] = {NULL, cd_cols1_avx512, cd_cols2_avx512};
#endif

static cd_kernel_fn cd_fn_n[3]; /* a last panel of 16 or 32 outputs ([0] unused) */
static int cd_force;            /* NPU_CPU_CONV: 0 by shape, 1 direct, -1 gemm */
/* sums longer than this run in chunks of 256 k (NPU_CPU_CONV_KC, for the tests) */
static int64_t cd_kc_over = 1024;
/* large padded planes copied and computed band by band (NPU_CPU_CONV_BAND=0: whole plane) */
static bool cd_band_on = true;
/* the small-plane form (cdt_*): AVX-512 only; NPU_CPU_CONV_T=0 never, =1 on every plane */
static bool cdt_avail;
static int cdt_mode;
/* the small-plane form's k per chunk; NPU_CPU_CONV_TKC=n (for the tests): chunks of n on every
 * small plane, whatever the size of its weights */
static int64_t cdt_kc = 128;
static bool cdt_kc_forced;

static void
cd_pick(void)
{
#ifdef CD_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) {
        cd_fn = cd_kernel_avx512;
        cd_fn_n[1] = cd_kernel_avx512_n1;
        cd_fn_n[2] = cd_kernel_avx512_n2;
    } else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        cd_fn = cd_kernel_avx2;
    const char *e = getenv("NPU_CPU_CONV_ISA");
    if (e && !strcmp(e, "avx2") && __builtin_cpu_supports("avx2") &&
        __builtin_cpu_supports("fma")) {
        cd_fn = cd_kernel_avx2;
        cd_fn_n[1] = cd_fn_n[2] = NULL;
    }
#endif
    if (!cd_fn_n[1])
        cd_fn_n[1] = cd_fn_n[2] = cd_fn;
#ifdef CD_X86
    cdt_avail = cd_fn == cd_kernel_avx512;
#endif
    const char *tm = getenv("NPU_CPU_CONV_T");
    if (tm && !strcmp(tm, "0"))
        cdt_mode = -1;
    else if (tm && !strcmp(tm, "1"))
        cdt_mode = 1;
    const char *tkc = getenv("NPU_CPU_CONV_TKC");
    if (tkc && atoll(tkc) > 0) {
        cdt_kc = atoll(tkc);
        cdt_kc_forced = true;
    }
    const char *band = getenv("NPU_CPU_CONV_BAND");
    if (band && !strcmp(band, "0"))
        cd_band_on = false;
    const char *kc = getenv("NPU_CPU_CONV_KC");
    if (kc && atoll(kc) > 0)
        cd_kc_over = atoll(kc);
    const char *f = getenv("NPU_CPU_CONV");
    if (f && !strcmp(f, "direct"))
        cd_force = 1;
    else if (f && !strcmp(f, "gemm"))
        cd_force = -1;
}

static bool
cd_shape_ok(int64_t taps, int64_t C, int64_t M)
{
    if (cd_force > 0)
        return true;
    return !(taps == 1 && C < 8) && M >= 8;
}

bool
cpu_conv_direct_wanted(const struct cpu_win *w, int64_t C, int64_t M, int64_t G)
{
    pthread_once(&cd_once, cd_pick);
    if (!cd_fn || w->nsp != 2 || G != 1 || cd_force < 0)
        return false;
    if (w->k[0] * w->k[1] > 64 || w->s[0] > 4 || w->s[1] > 4)
        return false;
    /* measured on ResNet-18/50 and YOLOv8n (AVX-512, CPU time per layer): direct is faster on
     * every dense layer (1.1-3x, the 3-channel stems included); the 1x1 convs over 16-47
     * channels too (1.5-1.8x alone: 16x112x112 -> 96, 32x160x160 -> 32, 24x56x56 -> 72; 5-10 %
     * of the MobileNets' conv time in the models, YOLOv8n even), so only 1x1 convs over fewer
     * than 8 channels stay on GEMM */
    return cd_shape_ok(w->k[0] * w->k[1], C, M);
}

/* The small-plane form for a kernel of `taps` taps and an output plane of P pixels? Measured
 * (AVX-512, one thread, CPU time, best of 3 processes; flat -> small-plane GFLOP/s): 3x3 convs
 * 512 x 7x7 156 -> 183, 256 x 14x14 192 -> 208, 128 x 28x28 209 -> 219, 128 x 40x40 stride 2
 * 176 -> 195, but 64 x 40x40 208 -> 185 and 64 x 56x56 208 -> 186; 1x1 convs on 7x7 planes
 * (the flat form computes 64 of 49) 155 -> 177 (512 -> 2048) and 154 -> 203 (2048 -> 512),
 * but 1x1 on 14x14 (flat: 208 of 196) 215 -> 198 and on 20x20 (no waste) 224 -> 188; with
 * few output channels the tile's 16-channel vectors run short of FMAs per broadcast: 3x3
 * 16 x 32x32 179 -> 132, 64 x 16x16 197 -> 186 (yolo_tiny's shapes), 32 x 16x16 173 -> 177. */
static bool
cdt_wanted(int64_t taps, int64_t P, int64_t M, int64_t K)
{
    if (!cdt_avail || cdt_mode < 0)
        return false;
    if (cdt_mode > 0)
        return true;
    /* a 1x1 conv with a short sum on a plane that ends 1-2 outputs past its 48-wide panels (7x7)
     * stays flat, since its last columns run in cd_cols_avx512 (min of 3x300 calls, one thread,
     * CPU time, small-plane -> flat us: 96 -> 576 33 -> 25, 160 -> 960 80 -> 67, 160 -> 672
     * 56 -> 48, 320 -> 1280 183 -> 173; with longer sums the small-plane form stays ahead:
     * 576 -> 160 41 -> 42, 960 -> 320 126 -> 141, 2048 -> 512 426 -> 477) */
    if (taps == 1 && K < 400 && P % CD_NR <= 2)
        return false;
    /* outputs the flat form computes for an unpadded plane of P */
    int64_t flat = P / CD_NR * CD_NR + NPU_ALIGN(P % CD_NR, (int64_t)16);
    return P <= 1024 && M >= 96 && (taps > 1 || P * 100 < flat * 85);
}

/* ---- the convolution ------------------------------------------------------------------------- */

struct cd_job {
    const struct cpu_cd_args *a;
    int64_t K, L; /* sum length; outputs in the flat (oh * Wq + ow) numbering */
    int64_t Wq, OW, OH, out_plane;
    int64_t npanels, mblocks, mgroups, mper; /* m-blocks per group */
    bool mmajor;    /* cd_task's index runs over channel groups first, then panel groups */
    int64_t pg, kc; /* panels per group, k per chunk */
    const float *wp;
    const float *wt48;    /* the small-plane form's weights, or NULL (the flat form) */
    int64_t ntiles;       /* small-plane form: pixel tiles of 7-8 */
    int64_t tgroups, tkc; /* small-plane form: tile groups per channel block, k per chunk */
    const float *src;     /* this image's input (padded copy or X itself) */
    const int64_t *koff;  /* [K] offset of each k's run from src */
    const int64_t *koffp; /* [K] k * 48: a packed tail panel */
    bool in_place;        /* src is X: a tail panel is packed so as not to read past X */
    bool ph0;             /* 1x1 with a stride: only phase (0, 0) is read, so only it is copied */
    float *y;             /* this image's output */
    const float *res;     /* the fused residual (all images) or NULL */
    const float *res_img; /* this image's residual */
    const float *bias;
    bool relu;
    const struct cpu_act_spec *act;
    struct npu_cpu_ctx *ctx;
    /* copy into the padded buffer */
    const float *x;
    float *buf;
    int64_t H, W, s0, s1, pt, pl, phase, cstride, Hq;
    /* banded (large padded planes): each task copies the phase rows of ob output rows into
     * its own buffer of bhq rows per phase and computes them while they are in L2 */
    int64_t ob, bhq, nbands;
};

/* Input row xr (W floats) into padded row prow of phase (., 0); the column phases are
 * phase floats apart (with ph0 only column phase 0 is written). AVX2 where there is one: the
 * stride-2 split of YOLOv8n's 320x320 planes ran 8 % faster. */
static inline void
cd_copy_row(const struct cd_job *j, const float *xr, float *prow, int64_t phase)
{
    const int64_t W = j->W, s1 = j->s1, pl = j->pl;
    if (s1 == 1) {
        memcpy(prow + pl, xr, sizeof(float) * (size_t)W);
        return;
    }
    for (int64_t r = 0; r < (j->ph0 ? 1 : s1); r++) {
        /* padded column q * s1 + r is input column q * s1 + r - pl */
        float *d = prow + r * phase;
        int64_t q0 = pl >= r ? NPU_DIV_ROUND_UP(pl - r, s1) : 0;
        int64_t q1 = NPU_DIV_ROUND_UP(W - r + pl, s1);
        const float *xs = xr + r - pl;
        if (s1 == 2)
            for (int64_t q = q0; q < q1; q++)
                d[q] = xs[2 * q];
        else
            for (int64_t q = q0; q < q1; q++)
                d[q] = xs[q * s1];
    }
}

CPU_HOT static void
cd_copy_task(void *arg, int64_t begin, int64_t end, int tid)
{
    (void)tid;
    const struct cd_job *j = arg;
    const int64_t W = j->W, s0 = j->s0, s1 = j->s1;
    for (int64_t c = begin; c < end; c++) {
        const float *xc = j->x + c * j->H * W;
        float *dc = j->buf + c * j->cstride;
        memset(dc, 0, sizeof(float) * (size_t)j->cstride);
        for (int64_t h = 0; h < j->H; h++) {
            int64_t hp = h + j->pt;
            if (j->ph0 && hp % s0)
                continue;
            cd_copy_row(j, xc + h * W, dc + (hp % s0) * s1 * j->phase + (hp / s0) * j->Wq,
                        j->phase);
        }
    }
}

/* A band's copy: phase rows hq0 .. hq0 + bhq of every channel into dst, laid out as the
 * whole plane's copy but bhq rows per phase (rows outside the padded plane are zero). */
CPU_HOT static void
cd_copy_band(const struct cd_job *j, int64_t hq0, float *dst)
{
    const int64_t W = j->W, s0 = j->s0, s1 = j->s1, bphase = j->bhq * j->Wq;
    const int64_t bcstride = s0 * s1 * bphase;
    for (int64_t c = 0; c < j->a->C; c++) {
        const float *xc = j->x + c * j->H * W;
        float *dc = dst + c * bcstride;
        memset(dc, 0, sizeof(float) * (size_t)bcstride);
        for (int64_t lr = 0; lr < j->bhq; lr++)
            for (int64_t r0 = 0; r0 < s0; r0++) {
                int64_t h = (hq0 + lr) * s0 + r0 - j->pt;
                if (h < 0 || h >= j->H)
                    continue;
                cd_copy_row(j, xc + h * W, dc + r0 * s1 * bphase + lr * j->Wq, bphase);
            }
    }
    /* the last panel's reads past the last channel */
    memset(dst + j->a->C * bcstride, 0, sizeof(float) * (size_t)(j->Wq + 64));
}

#ifdef CD_X86
/* SiLU / Sigmoid of 16 floats from e = exp(-|x|), as the elementwise kernels (sigmoid =
 * 1 / (1 + e) for x >= 0, e / (1 + e) below; NaN in, NaN out), in AVX-512 intrinsics with
 * two shortcuts: the reciprocal is rcp14 and one Newton step (within 1-2 ulp of the division,
 * the division was a large part of it: YOLOv8n, 1 thread, 15.4 % -> 12.5 % of a run, see
 * docs/performance.md), and exp(-|x|) runs on one scale factor over [-87, 0] (cpu_expf's
 * steps and coefficients otherwise); below -87, where the result is under 2e-36 in
 * magnitude, SiLU gives -0 and Sigmoid +0. */
__attribute__((target("avx512f,fma"))) static inline void
cd_silu16(float *x, bool silu)
{
    const __m512 v = _mm512_loadu_ps(x);
    const __m512 magic = _mm512_set1_ps(12582912.0f);
    __m512 a = _mm512_castsi512_ps(
        _mm512_or_si512(_mm512_castps_si512(v), _mm512_set1_epi32((int)0x80000000u)));
    a = _mm512_max_ps(a, _mm512_set1_ps(-87.0f)); /* NaN -> -87; restored below */
    __m512 t = _mm512_fmadd_ps(a, _mm512_set1_ps(1.44269504088896341f), magic);
    __m512 fn = _mm512_sub_ps(t, magic);
    __m512i n = _mm512_sub_epi32(_mm512_castps_si512(t), _mm512_castps_si512(magic));
    __m512 r = _mm512_fnmadd_ps(fn, _mm512_set1_ps(0.693359375f), a);
    r = _mm512_fnmadd_ps(fn, _mm512_set1_ps(-2.12194440e-4f), r);
    __m512 p = _mm512_set1_ps(1.9875691500e-4f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
    p = _mm512_add_ps(_mm512_fmadd_ps(_mm512_mul_ps(p, r), r, r), _mm512_set1_ps(1.0f));
    __m512 e = _mm512_mul_ps(
        p, _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(n, _mm512_set1_epi32(127)), 23)));
    __m512 d = _mm512_add_ps(e, _mm512_set1_ps(1.0f));
    __m512 rc = _mm512_rcp14_ps(d);
    rc = _mm512_mul_ps(rc, _mm512_fnmadd_ps(d, rc, _mm512_set1_ps(2.0f)));
    const __m512 zero = _mm512_setzero_ps();
    __m512 sg = _mm512_mask_mul_ps(rc, _mm512_cmp_ps_mask(v, zero, _CMP_LT_OQ), e, rc);
    __m512 o = sg;
    const __mmask16 tiny = _mm512_cmp_ps_mask(v, _mm512_set1_ps(-87.0f), _CMP_LT_OQ);
    if (silu)
        o = _mm512_mask_mov_ps(_mm512_mul_ps(v, sg), tiny, _mm512_set1_ps(-0.0f));
    else
        o = _mm512_mask_mov_ps(o, tiny, zero);
    o = _mm512_mask_mov_ps(o, _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), v);
    _mm512_storeu_ps(x, o);
}

/* A row of n: 16 at a time, the last 1-15 in a zero-padded block of 16 too (the scalar code
 * for a row's tail took 40 % of YOLOv8n's SiLU time), so every element gets the same float
 * wherever a row is cut. */
__attribute__((target("avx512f,fma"))) static void
cd_silu_avx512(float *x, int64_t n, bool silu)
{
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        cd_silu16(x + i, silu);
    if (i < n) {
        float tail[16] = {0};
        memcpy(tail, x + i, sizeof(float) * (size_t)(n - i));
        cd_silu16(tail, silu);
        memcpy(x + i, tail, sizeof(float) * (size_t)(n - i));
    }
}
#endif

#ifdef CD_X86
/* Clip (MobileNetV2's ReLU6) on 16 floats at a time, in cpu_act_apply's order and operands
 * (x < lo ? lo : x, then > hi ? hi : ., NaN kept): the tiles' rows are 48 floats, for which
 * the call into cpu_act_apply (dispatch, peel, tail) cost more than the clamping itself. */
__attribute__((target("avx512f"))) static int64_t
cd_clip_avx512(float *x, int64_t n, float lo, float hi)
{
    const v16f vlo = (v16f){0} + lo, vhi = (v16f){0} + hi;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        v16f v;
        memcpy(&v, x + i, sizeof(v));
        v16i lt = v < vlo;
        v = (v16f)(((v16i)vlo & lt) | ((v16i)v & ~lt));
        v16i gt = v > vhi;
        v = (v16f)(((v16i)vhi & gt) | ((v16i)v & ~gt));
        memcpy(x + i, &v, sizeof(v));
    }
    return i;
}
#endif

static void
cd_act(const struct cpu_act_spec *act, float *x, int64_t n)
{
#ifdef CD_X86
    if (cd_fn == cd_kernel_avx512 && act->kind == CPU_ACT_CLIP) {
        int64_t i = cd_clip_avx512(x, n, act->alpha, act->beta);
        x += i;
        n -= i;
        if (n == 0)
            return;
    }
    if (cd_fn == cd_kernel_avx512 && (act->kind == CPU_ACT_SILU || act->kind == CPU_ACT_SIGMOID)) {
        cd_silu_avx512(x, n, act->kind == CPU_ACT_SILU);
        return;
    }
#endif
    cpu_act_apply(act, x, n);
}

void
cpu_cd_act(const struct cpu_act_spec *act, float *x, int64_t n)
{
    pthread_once(&cd_once, cd_pick);
    cd_act(act, x, n);
}

/* The fused residual of n outputs of one channel row, still in L1: y = act(y + res), the
 * Add and the activation of the unfused graph in their order (so the same floats). An AVX2
 * clone (CPU_HOT): 2 % of a ResNet-50 run in the baseline build's scalar loop. */
CPU_HOT static void
cd_residual(const struct cd_job *j, float *y, int64_t at, int64_t n)
{
    const float *r = j->res_img + at;
    if (j->act->kind == CPU_ACT_RELU) {
        for (int64_t i = 0; i < n; i++) {
            float v = y[i] + r[i];
            y[i] = v < 0 ? 0.0f : v;
        }
        return;
    }
    for (int64_t i = 0; i < n; i++)
        y[i] += r[i];
    if (j->act->kind != CPU_ACT_NONE)
        cd_act(j->act, y, n);
}

#ifdef CD_X86
/* Small-plane form, one task: channel block mb (48) x a group of up to CDT_GMAX pixel tiles,
 * all the group's tiles run over one chunk of k before the next (the same FMA chain per output
 * as one pass over K: the partial sums are stored and reloaded exactly). A tile's pixels are
 * consecutive in Y, so each channel's outputs are one run of Y. */
static void
cdt_task(void *arg, int64_t begin, int64_t end, int tid)
{
    const struct cd_job *j = arg;
    float *scr = cpu_scratch(j->ctx, tid);
    float *t = scr;                 /* [48][8] */
    float *accs = scr + 8 * CDT_NB; /* [tiles of the group][8][48] */
    const int64_t P = j->out_plane, nt = j->ntiles, M = j->a->M, K = j->K, ng = j->tgroups;
    const bool relu = j->act->kind == CPU_ACT_RELU;
    const bool other = j->act->kind != CPU_ACT_NONE && !relu;
    for (int64_t task = begin; task < end; task++) {
        const int64_t mb = task / ng, g = task % ng;
        const int64_t ti0 = g * nt / ng, ti1 = (g + 1) * nt / ng, ntg = ti1 - ti0;
        const int64_t m0 = mb * CDT_NB;
        const int mw = (int)NPU_MIN((int64_t)CDT_NB, M - m0);
        const float *wk = j->wt48 + mb * K * CDT_NB;
        const float *px[CDT_GMAX][8];
        int np[CDT_GMAX];
        for (int64_t i = 0; i < ntg; i++) {
            int64_t q0 = (ti0 + i) * P / nt, q1 = (ti0 + i + 1) * P / nt;
            np[i] = (int)(q1 - q0);
            for (int r = 0; r < np[i]; r++) {
                int64_t q = q0 + r;
                px[i][r] = j->src + (q / j->OW) * j->Wq + q % j->OW;
            }
        }
        float bias48[CDT_NB];
        for (int m = 0; m < CDT_NB; m++)
            bias48[m] = j->bias && m < mw ? j->bias[m0 + m] : 0.0f;
        /* k in chunks: a chunk of the block's weights is read from memory once and then from
         * L1 by every tile of the group, while the tiles' prefetches (spread over the group)
         * bring in the next chunk (the next block's first after the last) */
        const cdt_kernel_fn *fns = NULL;
        for (int64_t k0 = 0; k0 < K; k0 += j->tkc) {
            const int64_t kn = NPU_MIN(j->tkc, K - k0);
            const bool last = k0 + kn >= K;
            const float *next = !last ? wk + (k0 + kn) * CDT_NB : g + 1 < ng ? wk : wk + K * CDT_NB;
            const int64_t nlines =
                (last ? NPU_MIN(j->tkc, K) : NPU_MIN(j->tkc, K - k0 - kn)) * (CDT_NB / 16);
            if ((last && g + 1 >= ng && mb + 1 >= NPU_DIV_ROUND_UP(M, (int64_t)CDT_NB)) ||
                j->tkc >= K) /* unchunked: the weights stay in L2 */
                next = NULL;
            for (int64_t i = 0; i < ntg; i++) {
                fns = cdt_fns[np[i] - 1];
                int64_t l0 = i * nlines / ntg, l1 = (i + 1) * nlines / ntg;
                float *acc = accs + i * 8 * CDT_NB;
                /* the flat form's epilogue in its order: + bias, then ReLU in registers, or
                 * + the residual and then the activation (as cd_residual) */
                fns[(mw + 15) / 16 - 1](kn, wk + k0 * CDT_NB, px[i], j->koff + k0, k0 ? acc : NULL,
                                        last ? bias48 : NULL, relu && !j->res, acc,
                                        next ? next + 16 * l0 : NULL, next ? l1 - l0 : 0);
            }
        }
        /* straight into Y's rows unless an activation other than ReLU runs on the tile's
         * outputs as one array */
        for (int64_t i = 0; i < ntg; i++) {
            const int64_t q0 = (ti0 + i) * P / nt;
            const float *out = accs + i * 8 * CDT_NB;
            for (int m = 0; m < mw; m++) {
                float *ym = other ? t + m * np[i] : j->y + (m0 + m) * P + q0;
                const float *om = out + m;
                if (j->res) {
                    const float *rr = j->res_img + (m0 + m) * P + q0;
                    for (int r = 0; r < np[i]; r++) {
                        float v = om[r * CDT_NB] + rr[r];
                        uint32_t u;
                        memcpy(&u, &v, sizeof(u));
                        u &= ~(0u - (uint32_t)(relu && v < 0)); /* v < 0 ? +0 : v, no branch */
                        memcpy(ym + r, &u, sizeof(u));
                    }
                } else {
                    for (int r = 0; r < np[i]; r++)
                        ym[r] = om[r * CDT_NB];
                }
            }
            if (other) {
                cd_act(j->act, t, (int64_t)mw * np[i]);
                for (int m = 0; m < mw; m++)
                    for (int r = 0; r < np[i]; r++)
                        j->y[(m0 + m) * P + q0 + r] = t[m * np[i] + r];
            }
        }
    }
}
#endif

/* One 8-channel x 48-output tile over k in [k0, k0 + kn): a partial sum into acc, or (the
 * last chunk) the finished outputs with bias and activation into Y. */
static void
cd_tile(const struct cd_job *j, int64_t mb, int64_t panel, int64_t k0, int64_t kn, float *acc,
        const float *packed, float *tile)
{
    const int64_t K = j->K, p0 = panel * CD_NR, nv = NPU_MIN((int64_t)CD_NR, j->L - p0);
    const float *b = j->src + p0;
    const int64_t *koff = j->koff;
    if (j->in_place && nv < CD_NR) {
        b = packed;
        koff = j->koffp;
    }
    const int64_t m0 = mb * CD_MR;
    const int mr = (int)NPU_MIN((int64_t)CD_MR, j->a->M - m0);
    const float *ap = j->wp + (mb * K + k0) * CD_MR;
    const float *ain = k0 > 0 ? acc : NULL;
    cd_kernel_fn fn = nv <= 32 ? cd_fn_n[(nv + 15) / 16] : cd_fn;
#ifdef CD_X86
    if (nv <= 2 && cd_fn == cd_kernel_avx512)
        fn = cd_cols_fn[nv];
#endif
    if (k0 + kn < K) {
        fn(kn, ap, b, koff + k0, ain, NULL, false, acc, CD_NR, mr);
        return;
    }
    float *yb = j->y + m0 * j->out_plane;
    if (j->res) {
        /* the residual's 8 rows of this tile are 8 streams the hardware prefetcher does not
         * follow: fetched now, they arrive while the kernel sums (ResNet-50: without this the
         * fused epilogue cost twice the Add and Relu it replaces) */
        int64_t at = (p0 / j->Wq) * j->OW + NPU_MIN(p0 % j->Wq, j->OW - 1);
        for (int r = 0; r < mr; r++) {
            const char *rp = (const char *)(j->res_img + (m0 + r) * j->out_plane + at);
            for (int64_t o = 0; o < (int64_t)sizeof(float) * (CD_NR + 16); o += 64)
                __builtin_prefetch(rp + o);
        }
    }
    float bias8[CD_MR];
    for (int r = 0; r < CD_MR; r++)
        bias8[r] = j->bias && r < mr ? j->bias[m0 + r] : 0.0f;
    /* a residual is added to the finished sums (bias included), then the activation: the
     * ReLU cannot be applied in registers before it */
    const bool relu = j->relu && !j->res;
    /* straight into Y when the panel's 48 outputs are 48 consecutive ones of Y */
    if (j->Wq == j->OW && nv == CD_NR) {
        cd_fn(kn, ap, b, koff + k0, ain, bias8, relu, yb + p0, j->out_plane, mr);
        if (j->res)
            for (int r = 0; r < mr; r++)
                cd_residual(j, yb + r * j->out_plane + p0, (m0 + r) * j->out_plane + p0, CD_NR);
        else if (j->act->kind != CPU_ACT_NONE && !j->relu)
            for (int r = 0; r < mr; r++)
                cd_act(j->act, yb + r * j->out_plane + p0, CD_NR);
        return;
    }
    fn(kn, ap, b, koff + k0, ain, bias8, relu, tile, CD_NR, mr);
    /* the panel's outputs that are real (column < OW) are consecutive in Y */
    int64_t ystart = -1, yend = 0;
    for (int64_t q = 0; q < nv;) {
        int64_t p = p0 + q, oh = p / j->Wq, ow = p % j->Wq;
        int64_t run = NPU_MIN(j->Wq - ow, nv - q);
        if (ow < j->OW) {
            int64_t n = NPU_MIN(run, j->OW - ow), yo = oh * j->OW + ow;
            if (ystart < 0)
                ystart = yo;
            yend = yo + n;
            for (int r = 0; r < mr; r++)
                memcpy(yb + r * j->out_plane + yo, tile + r * CD_NR + q, sizeof(float) * (size_t)n);
        }
        q += run;
    }
    if (ystart >= 0 && j->res)
        for (int r = 0; r < mr; r++)
            cd_residual(j, yb + r * j->out_plane + ystart, (m0 + r) * j->out_plane + ystart,
                        yend - ystart);
    else if (ystart >= 0 && j->act->kind != CPU_ACT_NONE && !j->relu)
        for (int r = 0; r < mr; r++)
            cd_act(j->act, yb + r * j->out_plane + ystart, yend - ystart);
}

/* A task: a group of panels x a group of 8-channel blocks. k runs in chunks of kc when K is
 * long (small planes, many channels): each chunk of weights is then read once for all the
 * group's panels, and the group's input chunk stays in L2 for all its channel blocks. */
static void
cd_task(void *arg, int64_t begin, int64_t end, int tid)
{
    const struct cd_job *j = arg;
    const int64_t K = j->K;
    float *scr = cpu_scratch(j->ctx, tid);
    float *tile = scr; /* [8][48] */
    float *accb = scr + CD_MR * CD_NR;
    const float *packed = j->buf; /* in place: the tail panel, packed once per image */
    for (int64_t t = begin; t < end; t++) {
        const int64_t npg = NPU_DIV_ROUND_UP(j->npanels, j->pg);
        int64_t pgi = t / j->mgroups, mg = t % j->mgroups;
        if (j->mmajor) {
            pgi = t % npg;
            mg = t / npg;
        }
        int64_t pa = pgi * j->pg, pz = NPU_MIN(j->npanels, pa + j->pg);
        int64_t mb0 = mg * j->mper, mb1 = NPU_MIN(j->mblocks, mb0 + j->mper);
        if (j->kc >= K) {
            for (int64_t panel = pa; panel < pz; panel++)
                for (int64_t mb = mb0; mb < mb1; mb++)
                    cd_tile(j, mb, panel, 0, K, NULL, packed, tile);
            continue;
        }
        for (int64_t k0 = 0; k0 < K; k0 += j->kc) {
            int64_t kn = NPU_MIN(j->kc, K - k0);
            for (int64_t mb = mb0; mb < mb1; mb++)
                for (int64_t panel = pa; panel < pz; panel++)
                    cd_tile(j, mb, panel, k0, kn,
                            accb + ((mb - mb0) * j->pg + (panel - pa)) * CD_MR * CD_NR, packed,
                            tile);
        }
    }
}

/* A task of the banded form: band t's copy into this thread's buffer, then its panels for
 * every channel block. Each output's sum is the same FMA chain as in the whole-plane form. */
static void
cd_band_task(void *arg, int64_t begin, int64_t end, int tid)
{
    const struct cd_job *j = arg;
    float *scr = cpu_scratch(j->ctx, tid);
    float *tile = scr; /* [8][48] */
    float *band = scr + CD_MR * CD_NR;
    for (int64_t t = begin; t < end; t++) {
        int64_t oh0 = t * j->ob, oh1 = NPU_MIN(j->OH, oh0 + j->ob);
        cd_copy_band(j, oh0, band);
        struct cd_job b = *j;
        b.src = band;
        b.y = j->y + oh0 * j->OW;
        b.res_img = j->res_img ? j->res_img + oh0 * j->OW : NULL;
        b.OH = oh1 - oh0;
        b.L = (b.OH - 1) * j->Wq + j->OW;
        int64_t np = NPU_DIV_ROUND_UP(b.L, (int64_t)CD_NR);
        for (int64_t panel = 0; panel < np; panel++)
            for (int64_t mb = 0; mb < j->mblocks; mb++)
                cd_tile(&b, mb, panel, 0, j->K, NULL, NULL, tile);
    }
}

/* How the work is cut, by the shape alone (so any thread count gives the same result). */
static void
cd_split(struct cd_job *j)
{
    j->kc = j->K;
    j->pg = 1;
    if (j->K > cd_kc_over) {
        j->kc = 256;
        /* the group's chunk of input (pg panels x 256 k x 48 floats) within about 384 KB */
        j->pg = NPU_MAX((int64_t)1, NPU_MIN(j->npanels, (int64_t)8));
    }
    /* few panel groups (7x7, 14x14 planes): output channels are cut too so that two or more
     * threads have work */
    int64_t npg = NPU_DIV_ROUND_UP(j->npanels, j->pg);
    j->mgroups = 1;
    if (npg < 16)
        j->mgroups = NPU_MIN(j->mblocks, NPU_DIV_ROUND_UP((int64_t)16, npg));
    j->mper = NPU_DIV_ROUND_UP(j->mblocks, j->mgroups);
    if (j->kc < j->K)
        j->mper = NPU_MIN(j->mper, (int64_t)16);
    j->mgroups = NPU_DIV_ROUND_UP(j->mblocks, j->mper);
}

enum npu_status
cpu_conv_direct(struct npu_cpu_ctx *ctx, const struct cpu_cd_args *a)
{
    const struct cpu_win *w = a->w;
    const int64_t C = a->C, M = a->M, KH = w->k[0], KW = w->k[1], K = C * KH * KW;
    const int64_t H = w->in[0], W = w->in[1], OH = w->out[0], OW = w->out[1];
    const int64_t s0 = w->s[0], s1 = w->s[1];
    struct cd_job j = {.a = a,
                       .K = K,
                       .OW = OW,
                       .OH = OH,
                       .out_plane = OH * OW,
                       .bias = a->bias,
                       .relu = a->act->kind == CPU_ACT_RELU,
                       .res = a->res,
                       .act = a->act,
                       .ctx = ctx,
                       .H = H,
                       .W = W,
                       .s0 = s0,
                       .s1 = s1,
                       .pt = w->pb[0],
                       .pl = w->pb[1]};
    if (!cd_fn)
        return KUNSUP("no direct convolution kernel on this CPU");
    float *own = NULL;
    const struct npu_cpu_prep *pr = a->prep;
    const bool pr_ok = pr && pr->w_data == a->wt && pr->M == M && pr->K == K;
    /* 3x3 stride 1: Winograd, chosen by shape alone (the same bytes prepared or not) */
    if (cpu_conv_wino_wanted(KH, KW, s0, s1, w->d[0], w->d[1], C, M, OH, OW))
        return cpu_conv_wino(ctx, a, pr_ok ? pr->wu : NULL);
    /* without prepared weights a small plane packs the small-plane form for this call: the
     * two forms sum in different orders where the flat form ends a plane in cd_cols_avx512,
     * and a graph must give the same bytes with and without prepare */
    const bool tmode = cdt_wanted(KH * KW, OH * OW, M, K) && (pr_ok ? pr->wt48 != NULL : true) &&
                       NPU_DIV_ROUND_UP(M, (int64_t)CDT_NB) * K <= INT64_MAX / CDT_NB / 4;
    if (tmode) {
        if (pr_ok) {
            j.wt48 = pr->wt48;
        } else {
            own = aligned_alloc(
                64, NPU_ALIGN(sizeof(float) *
                                  (size_t)(NPU_DIV_ROUND_UP(M, (int64_t)CDT_NB) * K * CDT_NB),
                              (size_t)64));
            if (!own)
                return KNOMEM();
            cdt_pack(a->wt, M, K, own);
            j.wt48 = own;
        }
        j.ntiles = NPU_DIV_ROUND_UP(OH * OW, (int64_t)8);
        /* tasks: a channel block x a group of up to CDT_GMAX tiles, block-major, cut into one
         * contiguous part per thread (cpu_parallel_for_px): each thread streams the weights of
         * its own blocks. With few blocks for the threads (ResNet-50's 512-channel layers: 11)
         * a block's tiles form as many groups as threads, so that the parts are even and at
         * most one block is read by two threads (2 threads, weights not in cache: 2048 x 7x7
         * -> 512 392-409 -> 382-392 us, 3x3 stride 2 512 x 14x14 -> 512 935-960 -> 855-860 us
         * against groups for 12 tasks a thread on the shared counter). The tasks' sums do not
         * depend on the cut. */
        const int64_t nmb = NPU_DIV_ROUND_UP(M, (int64_t)CDT_NB), nth = ctx->nthreads;
        j.tgroups = NPU_DIV_ROUND_UP(j.ntiles, (int64_t)CDT_GMAX);
        if (nth > 1 && nmb < 8 * nth)
            j.tgroups = NPU_MIN(j.ntiles, NPU_MAX(j.tgroups, nth));
        /* k in chunks when the weights are read from memory at every call (over 1 MiB:
         * ResNet-50's 7x7 stage, 2-9 MB a layer, cold 104 -> 150 GFLOP/s); below that they
         * stay in L2, and a chunk's tiles read more input lines than L1 holds (128 x
         * 56x56 -> 28x28 stride 2: 170 -> 140 GFLOP/s in chunks of 128) */
        j.tkc = nmb * K * CDT_NB * (int64_t)sizeof(float) > (INT64_C(1) << 20) || cdt_kc_forced
                    ? cdt_kc
                    : K;
    } else if (pr_ok && pr->wp) {
        j.wp = pr->wp;
    } else {
        own = cd_pack_new(a->wt, M, K);
        if (!own)
            return KNOMEM();
        j.wp = own;
    }
    j.in_place = KH == 1 && KW == 1 && s0 == 1 && s1 == 1 && w->pb[0] == 0 && w->pb[1] == 0 &&
                 w->pe[0] == 0 && w->pe[1] == 0;
    size_t buf_floats = 0;
    if (j.in_place) {
        j.Wq = W;
        j.cstride = H * W;
        if ((H * W) % CD_NR && !tmode) /* the tail panel, packed: a run of 48 would read past X */
            buf_floats = (size_t)(K * CD_NR);
    } else {
        /* every tap of a real output lies inside the padded plane, and so inside its phase;
         * reads past a phase (by the columns past OW and the last panel) only feed outputs
         * that are dropped, and the margin below keeps the last channel's inside the buffer */
        j.Hq = NPU_DIV_ROUND_UP(H + w->pb[0] + NPU_MAX(w->pe[0], (int64_t)0), s0);
        j.Wq = NPU_DIV_ROUND_UP(W + w->pb[1] + NPU_MAX(w->pe[1], (int64_t)0), s1);
        j.phase = j.Hq * j.Wq;
        /* a 1x1 kernel with a stride (ResNet's downsampling convs) reads phase (0, 0) alone:
         * the other phases are not copied (3/4 of a stride-2 copy), channels a phase apart */
        j.ph0 = KH == 1 && KW == 1 && s0 * s1 > 1;
        j.cstride = j.ph0 ? j.phase : s0 * s1 * j.phase;
        /* a panel reads up to 47 floats past the last real output's run */
        buf_floats = (size_t)(C * j.cstride + j.Wq + 64);
        /* a copy larger than L2 is made band by band, each band computed while it is in L2:
         * over 3 MB (YOLOv8n's 640x640 stem and 320x320 stride-2 layer: 4.6 -> 2.9 ms and
         * 4.4-5.2 -> 3.2 ms, one thread, CPU time), or over 1 MB with few output channels
         * (16x160x160 -> 16: 3.3-3.6 -> 2.2-2.4 ms; with 64-80 channels the convs over 80x80
         * planes measured the same either way, so they keep the whole-plane copy). A band holds
         * ob output rows: the phase rows they read (the taps' row offsets, and more rows for
         * the column offsets and the panel's overrun) within about 256 KB */
        int64_t rowbytes = (int64_t)sizeof(float) * C * s0 * s1 * j.Wq;
        int64_t extra = ((KH - 1) * w->d[0]) / s0 + 2;
        int64_t copy_bytes = (int64_t)(buf_floats * sizeof(float));
        if ((copy_bytes > (INT64_C(3) << 20) || (copy_bytes > (INT64_C(1) << 20) && M <= 32)) &&
            K <= cd_kc_over && j.Wq >= 64 && cd_band_on && !j.ph0 && !tmode) {
            j.ob = NPU_MAX((int64_t)2, (INT64_C(256) << 10) / rowbytes - extra);
            if (j.ob * 2 <= OH) {
                j.bhq = j.ob + extra;
                j.nbands = NPU_DIV_ROUND_UP(OH, j.ob);
                j.phase = j.bhq * j.Wq;
                j.cstride = s0 * s1 * j.phase;
                buf_floats = 0;
            }
        }
    }
    j.L = (OH - 1) * j.Wq + OW;
    int64_t *koff = malloc(sizeof(int64_t) * (size_t)(2 * K));
    if (!koff) {
        free(own);
        return KNOMEM();
    }
    for (int64_t c = 0, k = 0; c < C; c++)
        for (int64_t kh = 0; kh < KH; kh++)
            for (int64_t kw = 0; kw < KW; kw++, k++) {
                int64_t rh = kh * w->d[0], cw = kw * w->d[1];
                koff[k] = j.in_place ? c * j.cstride
                                     : c * j.cstride + ((rh % s0) * s1 + cw % s1) * j.phase +
                                           (rh / s0) * j.Wq + cw / s1;
                koff[K + k] = k * CD_NR;
            }
    j.koff = koff;
    j.koffp = koff + K;
    j.npanels = NPU_DIV_ROUND_UP(j.L, (int64_t)CD_NR);
    j.mblocks = NPU_DIV_ROUND_UP(M, (int64_t)CD_MR);
    cd_split(&j);
    /* a 1x1 over a small plane (14x14: 5 panels) with more pixels than output channels, on two
     * or more threads with the pixel-range split on: cut by pixels only, two panels a thread or
     * more. Its input is then read by one core each (cut by channels, both cores read all of
     * it, half from the other core's cache: MobileNetV2's projections 384 x 14x14 -> 64, 2
     * threads, 52 -> 44 us), its weights by both (fewer bytes than the input when P > M; the
     * expands, M > P, keep the channel cut). Sums without k chunks: the same bits either way */
    if (j.in_place && !tmode && j.mgroups > 1 && j.kc >= K && ctx->affine_mode &&
        ctx->nthreads > 1 && j.npanels >= 2 * (int64_t)ctx->nthreads && OH * OW > M) {
        j.mgroups = 1;
        j.mper = j.mblocks;
    }
    /* cut by channels on two or more threads (more output channels than pixels: the expands
     * of 14x14 and 7x7 planes): channel-group-major tasks in the pixel-range split, so that
     * thread t writes the t-th range of channels, the range the depthwise that reads them next
     * gives the same thread */
    j.mmajor =
        j.in_place && !tmode && j.mgroups > 1 && j.kc >= K && ctx->affine_mode && ctx->nthreads > 1;
    enum npu_status st = cpu_scratch_reserve(
        ctx, sizeof(float) * (size_t)(NPU_MAX(CD_MR * CD_NR, (CDT_GMAX + 1) * 8 * CDT_NB) +
                                      (j.kc < K ? j.mper * j.pg * CD_MR * CD_NR : 0) +
                                      (j.nbands ? C * j.cstride + j.Wq + 64 : 0)));
    if (st == NPU_OK && buf_floats && ctx->conv_buf_size < buf_floats * sizeof(float)) {
        free(ctx->conv_buf);
        ctx->conv_buf_size = 0;
        ctx->conv_buf = aligned_alloc(64, NPU_ALIGN(buf_floats * sizeof(float), (size_t)64));
        if (!ctx->conv_buf)
            st = KNOMEM();
        else
            ctx->conv_buf_size = buf_floats * sizeof(float);
    }
    if (st != NPU_OK) {
        free(koff);
        free(own);
        return st;
    }
    j.buf = ctx->conv_buf;
    if (buf_floats && !j.in_place)
        memset(j.buf + C * j.cstride, 0, sizeof(float) * (size_t)(j.Wq + 64));
    for (int64_t n = 0; n < a->N; n++) {
        j.x = a->x + n * C * H * W;
        j.y = a->y + n * M * j.out_plane;
        j.res_img = a->res ? a->res + n * M * j.out_plane : NULL;
        if (j.in_place) {
            j.src = j.x;
            int64_t p0 = (j.npanels - 1) * CD_NR, nv = j.L - p0;
            if (nv < CD_NR && !tmode)
                for (int64_t k = 0; k < K; k++) {
                    float *d = j.buf + k * CD_NR;
                    memcpy(d, j.x + koff[k] + p0, sizeof(float) * (size_t)nv);
                    memset(d + nv, 0, sizeof(float) * (size_t)(CD_NR - nv));
                }
        } else if (j.nbands) {
            cpu_parallel_for_px(ctx, j.nbands, 1, cd_band_task, &j);
            continue;
        } else {
            cpu_parallel_for(ctx, C, 1, cd_copy_task, &j);
            j.src = j.buf;
        }
#ifdef CD_X86
        if (tmode) {
            cpu_parallel_for_px(ctx, NPU_DIV_ROUND_UP(M, (int64_t)CDT_NB) * j.tgroups, 1, cdt_task,
                                &j);
            continue;
        }
#endif
        /* panel-major tasks: with channels uncut (mgroups 1) a task is a pixel range */
        if (j.mgroups == 1 || j.mmajor)
            cpu_parallel_for_px(ctx, NPU_DIV_ROUND_UP(j.npanels, j.pg) * j.mgroups, 1, cd_task, &j);
        else
            cpu_parallel_for(ctx, NPU_DIV_ROUND_UP(j.npanels, j.pg) * j.mgroups, 1, cd_task, &j);
    }
    free(koff);
    free(own);
    return NPU_OK;
}

/* ---- the fused expand (npu-cpu-pwdw.c) ---------------------------------------------------------
 * A 1x1 conv over a range of positions of one image, on the calling thread: the expand of a
 * 1x1 -> depthwise pair run band by band. */

bool
cpu_cd_pw_usable(int64_t P, int64_t C, int64_t M)
{
    pthread_once(&cd_once, cd_pick);
    /* the shapes on which cpu_conv_direct takes the flat form in place with one chunk of k
     * and no cd_cols_avx512 tail, so that cpu_cd_pw_rows sums every output as it does */
    return cd_fn && cd_force >= 0 && cd_shape_ok(1, C, M) && C <= cd_kc_over && C <= 1024 &&
           !cdt_wanted(1, P, M, C) && (P % CD_NR == 0 || P % CD_NR > 2);
}

float *
cpu_cd_pw_pack(const struct npu_cpu_prep *pr, const float *w, int64_t M, int64_t K, float **own)
{
    *own = NULL;
    if (pr && pr->w_data == w && pr->M == M && pr->K == K && pr->wp)
        return pr->wp;
    *own = cd_pack_new(w, M, K);
    return *own;
}

size_t
cpu_cd_pw_scratch(int64_t K)
{
    return (size_t)(CD_MR * CD_NR + K * CD_NR);
}

void
cpu_cd_pw_rows(const float *wp, int64_t K, int64_t M, const float *x, int64_t cs, int64_t p0,
               int64_t L, int64_t m0, int64_t m1, const float *bias, const struct cpu_act_spec *act,
               float *t, int64_t ld, float *scr)
{
    float *tile = scr;                   /* [8][48] */
    float *packed = scr + CD_MR * CD_NR; /* [K][48]: a band's last, narrower panel */
    int64_t koff[1024 + 1], koffp[1024 + 1];
    for (int64_t k = 0; k < K; k++) {
        koff[k] = k * cs;
        koffp[k] = k * CD_NR;
    }
    const bool relu = act->kind == CPU_ACT_RELU;
    for (int64_t q0 = 0; q0 < L; q0 += CD_NR) {
        const int64_t nv = NPU_MIN((int64_t)CD_NR, L - q0);
        const float *b = x + p0 + q0;
        const int64_t *ko = koff;
        if (nv < CD_NR) {
            /* a run of 48 from the last positions could read past X: copied, zero-filled */
            for (int64_t k = 0; k < K; k++) {
                memcpy(packed + k * CD_NR, b + k * cs, sizeof(float) * (size_t)nv);
                memset(packed + k * CD_NR + nv, 0, sizeof(float) * (size_t)(CD_NR - nv));
            }
            b = packed;
            ko = koffp;
        }
        cd_kernel_fn fn = nv <= 32 ? cd_fn_n[(nv + 15) / 16] : cd_fn;
        for (int64_t mb = m0 / CD_MR; mb * CD_MR < m1; mb++) {
            const int64_t mm = mb * CD_MR;
            const int mr = (int)NPU_MIN((int64_t)CD_MR, M - mm);
            const float *ap = wp + mb * K * CD_MR;
            float bias8[CD_MR];
            for (int r = 0; r < CD_MR; r++)
                bias8[r] = bias && r < mr ? bias[mm + r] : 0.0f;
            float *dst = t + (mm - m0) * ld + q0;
            if (nv == CD_NR) {
                cd_fn(K, ap, b, ko, NULL, bias8, relu, dst, ld, mr);
            } else {
                fn(K, ap, b, ko, NULL, bias8, relu, tile, CD_NR, mr);
                for (int r = 0; r < mr; r++)
                    memcpy(dst + r * ld, tile + r * CD_NR, sizeof(float) * (size_t)nv);
            }
            if (act->kind != CPU_ACT_NONE && !relu)
                for (int r = 0; r < mr; r++)
                    cd_act(act, dst + r * ld, nv);
        }
    }
}

/* ---- prepare (npu-cpu.h) ------------------------------------------------------------------------
 */

struct npu_cpu_prep *
cpu_prep_new(enum npu_op op, const struct npu_tensor *w)
{
    struct npu_cpu_prep *p = calloc(1, sizeof(*p));
    if (!p) {
        npu_err(CPU_LOG_DOMAIN, "npu_cpu_prepare: out of memory");
        return NULL;
    }
    p->op = op;
    p->w_data = w->data;
    p->w_ndim = w->ndim;
    memcpy(p->w_dims, w->dims, sizeof(int64_t) * (size_t)w->ndim);
    return p;
}

enum npu_status
npu_cpu_prepare(enum npu_op op, const struct npu_attrs *attrs, const struct npu_tensor *const *in,
                int nin, struct npu_cpu_prep **out)
{
    if (!out) {
        npu_err(CPU_LOG_DOMAIN, "npu_cpu_prepare: no result pointer");
        return NPU_ERR_INVALID;
    }
    *out = NULL;
    if (nin < 0 || (nin > 0 && !in)) {
        npu_err(CPU_LOG_DOMAIN, "npu_cpu_prepare: bad operand array");
        return NPU_ERR_INVALID;
    }
    if (op == NPU_OP_MATMUL || op == NPU_OP_GEMM)
        return cpu_mm_prepare(op, attrs, in, nin, out);
    if (op == NPU_OP_MATMUL_INTEGER || op == NPU_OP_QLINEAR_MATMUL || op == NPU_OP_QLINEAR_CONV ||
        op == NPU_OP_CONV_INTEGER)
        return cpu_qgemm_prepare(op, attrs, in, nin, out);
    /* fp32 Conv with constant 4-D weights and group 1 packs them */
    if (op != NPU_OP_CONV || nin < 2 || !in[1] || !in[1]->data)
        return NPU_OK;
    const struct npu_tensor *wt = in[1];
    if (wt->dtype != NPU_DTYPE_FP32 || wt->ndim != 4 || npu_attrs_int(attrs, "group", 1) != 1)
        return NPU_OK;
    pthread_once(&cd_once, cd_pick);
    if (!cd_fn || cd_force < 0)
        return NPU_OK;
    int64_t M = wt->dims[0], K = wt->dims[1] * wt->dims[2] * wt->dims[3];
    if (M < 1 || K < 1 || !cd_shape_ok(wt->dims[2] * wt->dims[3], wt->dims[1], M))
        return NPU_OK;
    struct npu_cpu_prep *p = cpu_prep_new(op, wt);
    if (!p)
        return NPU_ERR_NOMEM;
    p->M = M;
    p->K = K;
    /* a small output plane (estimated from X's shape and the strides: exact for the usual
     * "same" padding) runs in the small-plane form, which has weights of its own; any other
     * packs the flat form's (a wrong guess only costs packing at every run) */
    const struct npu_tensor *x = in[0];
    if (x && x->ndim == 4 && x->dims[2] > 0 && x->dims[3] > 0) {
        size_t ns = 0;
        const int64_t *st = npu_attrs_ints(attrs, "strides", &ns);
        int64_t s0 = ns == 2 && st[0] > 0 ? st[0] : 1, s1 = ns == 2 && st[1] > 0 ? st[1] : 1;
        size_t nd = 0;
        const int64_t *dl = npu_attrs_ints(attrs, "dilations", &nd);
        int64_t d0 = nd == 2 ? dl[0] : 1, d1 = nd == 2 ? dl[1] : 1;
        /* 3x3 stride 1 (the usual padding keeps the plane): Winograd's weights only */
        if (cpu_conv_wino_wanted(wt->dims[2], wt->dims[3], s0, s1, d0, d1, wt->dims[1], M,
                                 x->dims[2], x->dims[3])) {
            p->wu = cd_walloc(sizeof(float) * cpu_conv_wino_wsize(wt->dims[1], M));
            if (p->wu) {
                cpu_conv_wino_pack(wt->data, wt->dims[1], M, p->wu);
                *out = p;
                return NPU_OK;
            }
        }
        if (cdt_wanted(wt->dims[2] * wt->dims[3],
                       NPU_DIV_ROUND_UP(x->dims[2], s0) * NPU_DIV_ROUND_UP(x->dims[3], s1), M, K) &&
            NPU_DIV_ROUND_UP(M, (int64_t)CDT_NB) * K <= INT64_MAX / CDT_NB / 4) {
            p->wt48 = cd_walloc(sizeof(float) *
                                (size_t)(NPU_DIV_ROUND_UP(M, (int64_t)CDT_NB) * K * CDT_NB));
            if (p->wt48) {
                cdt_pack(wt->data, M, K, p->wt48);
                *out = p;
                return NPU_OK;
            }
        }
    }
    p->wp = cd_pack_new(wt->data, M, K);
    if (!p->wp) {
        free(p);
        npu_err(CPU_LOG_DOMAIN, "npu_cpu_prepare: out of memory packing %lld x %lld weights",
                (long long)M, (long long)K);
        return NPU_ERR_NOMEM;
    }
    *out = p;
    return NPU_OK;
}

void
npu_cpu_prep_free(struct npu_cpu_prep *p)
{
    if (!p)
        return;
    free(p->wp);
    free(p->wt48);
    free(p->wu);
    cpu_mm_pack_free(p->mm);
    cpu_qpack_free(p->qp);
    cpu_qa_free(p->qa);
    free(p);
}
