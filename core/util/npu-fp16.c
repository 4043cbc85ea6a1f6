/* SPDX-License-Identifier: MIT */
/*
 * npu-fp16.c: the out-of-line half of npu-fp16.h: the array conversions (the header's inline
 * kernels in plain loops, which this file's build flags let GCC vectorise) and fp64 -> fp16.
 */
#include <math.h>

#include "npu/npu-fp16.h"

uint16_t
npu_fp64_to_fp16(double d)
{
    uint64_t x;

    memcpy(&x, &d, sizeof(x));
    uint16_t sign = (uint16_t)((x >> 48) & 0x8000);
    uint64_t ax = x & 0x7fffffffffffffffull;
    if (ax >= 0x7ff0000000000000ull)
        return sign | 0x7c00 | (ax > 0x7ff0000000000000ull ? 0x200 : 0);
    double a;
    memcpy(&a, &ax, sizeof(a));
    if (a >= 65520.0)
        return sign | 0x7c00;
    if (a < 6.103515625e-05) {
        /* subnormal half: a * 2^24 rounded to an integer, ties to even (rint does RNE) */
        return sign | (uint16_t)rint(a * 16777216.0);
    }
    /* normal: 10 mantissa bits out of 52; round to nearest even on the dropped 42 bits */
    int e = (int)((ax >> 52) & 0x7ff) - 1023; /* -14 .. 15 */
    uint64_t man = ax & 0xfffffffffffffull;
    uint64_t keep = man >> 42, rest = man & ((1ull << 42) - 1), half = 1ull << 41;
    if (rest > half || (rest == half && (keep & 1)))
        keep++;
    uint32_t h = ((uint32_t)(e + 15) << 10) + (uint32_t)keep; /* carry into exponent is fine */
    return sign | (uint16_t)h;
}

static void
fp32_to_fp16_portable(uint16_t *restrict dst, const float *restrict src, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = npu_fp32_to_fp16(src[i]);
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <immintrin.h>

/* x86's F16C conversion (VCVTPS2PH, round to nearest even) gives the same bits as
 * npu_fp32_to_fp16 for every input: overflow to inf, subnormal results rounded (not
 * flushed: VCVTPS2PH ignores MXCSR.FTZ), NaN quieted with the top ten payload bits kept
 * (test-fp16 compares the two over a sweep of all exponents and the special values). */
__attribute__((target("avx,f16c"))) static void
fp32_to_fp16_f16c(uint16_t *restrict dst, const float *restrict src, size_t n)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m128i a = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT);
        __m128i b = _mm256_cvtps_ph(_mm256_loadu_ps(src + i + 8), _MM_FROUND_TO_NEAREST_INT);
        _mm_storeu_si128((__m128i *)(dst + i), a);
        _mm_storeu_si128((__m128i *)(dst + i + 8), b);
    }
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(dst + i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
    fp32_to_fp16_portable(dst + i, src + i, n - i);
}

static int
have_f16c(void)
{
    static int have = -1; /* benign race: every thread computes the same answer */
    if (have < 0) {
        __builtin_cpu_init();
        /* F16C from CPUID leaf 1 (clang 14's __builtin_cpu_supports does not know "f16c");
         * "avx" also says the OS saves the AVX state */
        unsigned a, b, c = 0, d;
        have = __builtin_cpu_supports("avx") && __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C);
    }
    return have;
}
#endif

void
npu_fp32_to_fp16_n(uint16_t *restrict dst, const float *restrict src, size_t n)
{
#if defined(__x86_64__) && defined(__GNUC__)
    if (n >= 8 && have_f16c()) {
        fp32_to_fp16_f16c(dst, src, n);
        return;
    }
#endif
    fp32_to_fp16_portable(dst, src, n);
}

void
npu_fp16_to_fp32_n(float *restrict dst, const uint16_t *restrict src, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = npu_fp16_to_fp32(src[i]);
}
