/* SPDX-License-Identifier: MIT */
/*
 * npu-fp16.c: binary16 <-> binary32 conversion (see npu-fp16.h for the contract).
 *
 * Both directions are written as straight-line integer/float arithmetic with selects, so one
 * inline kernel serves the scalar calls and the vectorised array loops. The subnormal
 * cases use the FPU to do the rounding: adding 0.5f to |x| < 2^-14 leaves a float whose ulp is
 * 2^-24 (the fp16 subnormal step), so the hardware's round-to-nearest-even rounds exactly as
 * binary16 needs; multiplying the shifted fp16 bits by 2^112 rescales the exponent bias
 * (15 -> 127) exactly, subnormals included.
 */
#include <string.h>

#include "npu-fp16.h"

static inline uint32_t
f2u(float f)
{
    uint32_t u;

    memcpy(&u, &f, sizeof(u));
    return u;
}

static inline float
u2f(uint32_t u)
{
    float f;

    memcpy(&f, &u, sizeof(f));
    return f;
}

/* Branch-free select: c ? a : b for c in {0, 1}; keeps the array loops free of control flow. */
static inline uint32_t
sel(uint32_t c, uint32_t a, uint32_t b)
{
    uint32_t m = 0u - c;

    return (a & m) | (b & ~m);
}

static inline uint16_t
to_half(uint32_t x)
{
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t ax = x & 0x7fffffffu;
    /* Normal range: rebias (127 -> 15), then round the 13 dropped bits to nearest even. */
    uint32_t norm = (ax - 0x38000000u + 0xfffu + ((ax >> 13) & 1u)) >> 13;
    /* Below 2^-14: let the FPU round at 2^-24 granularity (see the file comment). */
    uint32_t sub = f2u(u2f(ax) + 0.5f) - 0x3f000000u;
    /* NaN: quiet bit set, top 10 payload bits kept. */
    uint32_t nan = 0x7e00u | ((ax >> 13) & 0x3ffu);
    uint32_t h;

    h = sel(ax < 0x38800000u, sub, norm);
    h = sel(ax >= 0x47800000u, 0x7c00u, h); /* >= 65536 and inf; 65520.. rounds up by itself */
    h = sel(ax > 0x7f800000u, nan, h);
    return (uint16_t)(h | sign);
}

static inline uint32_t
to_single(uint16_t hv)
{
    uint32_t h = hv;
    uint32_t sign = (h & 0x8000u) << 16;
    uint32_t em = h & 0x7fffu;
    /* Finite values (normal and subnormal): exact power-of-two rescale. */
    uint32_t fin = f2u(u2f(em << 13) * 0x1p112f);
    /* inf and NaN: all-ones exponent, payload kept, NaN quieted. */
    uint32_t spec = 0x7f800000u | (em << 13) | ((uint32_t)(em > 0x7c00u) << 22);

    return sel(em >= 0x7c00u, spec, fin) | sign;
}

uint16_t
npu_fp32_bits_to_fp16(uint32_t bits)
{
    return to_half(bits);
}

uint32_t
npu_fp16_to_fp32_bits(uint16_t h)
{
    return to_single(h);
}

uint16_t
npu_fp32_to_fp16(float f)
{
    return to_half(f2u(f));
}

float
npu_fp16_to_fp32(uint16_t h)
{
    return u2f(to_single(h));
}

void
npu_fp32_to_fp16_n(uint16_t *restrict dst, const float *restrict src, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = to_half(f2u(src[i]));
}

void
npu_fp16_to_fp32_n(float *restrict dst, const uint16_t *restrict src, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = u2f(to_single(src[i]));
}
